/*
 * plan.c - `tagplan plan`: search the fastest plan for a model on a
 * cluster, write it (tagplan-plan/1) with its summary, and tell the user
 * on stderr what was found and how.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "core/cluster.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/report.h"
#include "core/runtime.h"
#include "core/sha256.h"
#include "core/strbuf.h"
#include "gnn/provider.h"
#include "io/io.h"
#include "inputs.h"
#include "progress.h"
#include "render/render.h"
#include "render/scene.h"
#include "table.h"
#include "search/search.h"
#include "search/planner.h"
#include "sim/sim.h"

static const char usage[] =
	"[-m MODEL -t TOPO] [-o PLAN] [--time-limit S]\n"
	"                    [--playouts N] [--threads N] [--seed N] [--no-gnn]\n"
	"                    [--weights F] [--baseline NAME | -s STRATEGY]\n"
	"                    [--groups N] [--compression off|lossless|lossy]\n"
	"                    [--grad-bucket-mb MB] [--runtime NAME] [--dot F]\n"
	"                    [--svg F] [--gnn-any-size] [-q]";

static const char about[] =
	"Search how to run one training iteration of MODEL fastest on TOPO: "
	"op groups\n"
	"on device sets, data/tensor/pipeline parallel degrees, batch shares "
	"by device\n"
	"speed, gradient synchronisation, recomputation, micro-batches, ZeRO "
	"and\n"
	"gradient compression.  Baselines (dp, dp-hetero, megatron, greedy) "
	"and a Monte\n"
	"Carlo tree search are scored by the simulator; the answer is the "
	"best plan\n"
	"found, never slower than the best baseline.  The plan (with a "
	"summary:\n"
	"iteration time, throughput, MFU, baselines, search statistics, "
	"provenance)\n"
	"goes to PLAN or stdout.  The plan records the paths of MODEL and TOPO "
	"as given\n"
	"(and their SHA-256): render, check, export and simulate -p find them "
	"there.\n"
	"Without -m/-t the shipped demo model is planned on the 16-GPU TAG "
	"testbed.\n\n"
	"On stderr: a table per pipeline stage (devices, nodes, dp x tp, "
	"layers,\n"
	"share of the FLOP, busy %) and per device type (busy %, peak memory "
	"against\n"
	"capacity), the headline figures, the op groups, the baselines and "
	"the search\n"
	"statistics; when nothing fits, which device, what fills its memory "
	"and the\n"
	"smallest change that fits (re-simulated).\n\n"
	"The search stops at --time-limit or --playouts, whichever comes "
	"first (the\n"
	"summary says which); --time-limit alone means no playout limit.  "
	"With\n"
	"--threads 1 a larger limit of the same kind passes through the same "
	"states as\n"
	"a smaller one and goes on from there, so its plan is at least as "
	"fast.  With\n"
	"--threads 1 and a playout limit reached before the time limit, the "
	"output is\n"
	"the same byte for byte from run to run but for the wall-clock "
	"figures of\n"
	"summary.search.timing (search_seconds, playouts_per_s), which "
	"--no-timing\n"
	"leaves out.  The time limit covers loading too.  Ctrl-C writes the "
	"best plan\n"
	"so far and exits 130.\n"
	"--baseline NAME writes that baseline's plan instead of searching; "
	"-s STRATEGY\n"
	"writes the plan of a uniform strategy (tagplan simulate's "
	"STRATEGY), scored\n"
	"beside the baselines, for export, check and render.  Exit 1\n"
	"when nothing fits in memory (the closest plan is written, with why).";

/* The share of the budget the search without the runtime's limits gets
 * (COMPARE_SHARE of --playouts and --time-limit; the runtime's search
 * the rest; plan --no-compare gives it all to the runtime's). */
#define COMPARE_SHARE 0.2
/* ... not run at all when less than this share of --time-limit is left
 * after the runtime's search (the summary says so) */
#define COMPARE_MIN 0.02

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* ------------------------------------------------------------------ */
/* inputs                                                              */

/* Read a file once, hash it and load it as a model or a topology. */
static enum tp_status load_input(const char *path, bool model,
				 struct tp_model *m, struct tp_cluster *c,
				 char sha[65], struct tp_strbuf *warn,
				 struct tp_error *err)
{
	struct tp_load_options lo;
	char *data = NULL;
	size_t len = 0;
	enum tp_status st;

	tp_load_options_default(&lo);
	lo.warnings = warn;
	st = tp_file_read_text(path, 0, &data, &len, err);
	if (st) {
		tp_error_set_file(err, path);
		tp_inputs_hint_shipped(path, model, err);
		return st;
	}
	tp_sha256_hex(data, len, sha);
	if (model)
		st = tp_model_load(path, data, len, &lo, m, err);
	else
		st = tp_topology_load(path, data, len, &lo, c, err);
	free(data);
	if (st)
		tp_error_set_file(err, path);
	if (st == TP_EINPUT) /* a file of another kind: say where it goes */
		tp_inputs_hint_kind(path, model ? "model" : "topology", err);
	return st;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* ------------------------------------------------------------------ */
/* the command's state                                                 */

/* The options as given. */
struct plan_args {
	const char *model_path, *topo_path, *out;
	const char *baseline, *compression, *weights, *dot, *svg, *runtime;
	const char *price; /* --price TYPE=USD[,TYPE=USD...] */
	const char *objective; /* --objective throughput|cost */
	const char *strategy; /* -s: this strategy's plan, no search */
	double time_limit, bucket_mb, max_iter_time; /* 0: not given */
	long long playouts, threads, seed, groups;
	bool no_gnn, quiet, no_timing, no_compare, gnn_any_size;
	bool bucket_given; /* --grad-bucket-mb given (else the runtime's) */
	bool comp_given;   /* --compression given (else lossless where the
			      runtime has it) */
	int bl, comp; /* --baseline (-1 = search), --compression parsed */
	int obj;      /* --objective parsed (enum tp_search_objective) */
};

/* One run of the command, from the inputs to the written plan. */
struct plan_run {
	struct plan_args a;
	double t_start; /* --time-limit counts from here */
	bool demo;      /* no -m/-t: the shipped demo */
	char mpath[4096], tpath[4096], msha[65], tsha[65];
	char rtsha[65]; /* --runtime FILE's SHA-256 ("": a shipped name) */
	struct tp_model m;
	struct tp_cluster c;
	struct tp_planner *pl;
	struct tp_prior_provider prior;
	struct tp_gnn_prior *gnn;
	const char *gnn_note;
	struct tp_search_options so;
	struct tp_search_result res;
	struct tp_runtime rt;   /* the runtime planned for */
	bool compare;           /* also search without its limits */
	bool compare_skipped;   /* ... not run: the time limit was spent */
	struct tp_search_result free_res; /* ... that search's answer */
	bool free_runs; /* its answer ran: free_res is the runtime's own */
	struct tp_plan given; /* -s STRATEGY's plan */
	char given_source[96];
	struct tp_strbuf warn, text;
	struct tp_error err;
	char wrote[2][4096]; /* the pictures written (--dot, --svg) */
};

/* ------------------------------------------------------------------ */
/* summary                                                             */

/* "none": which shipped runtimes execute the plan, or the note that no
 * known runtime does. */
static void note_runnable(const struct plan_run *R,
			  struct tp_plan_summary *s)
{
	char able[160];

	if (tp_inputs_runtimes_running(&R->res.plan, &R->m, &R->c, NULL, true,
				       able, sizeof(able)))
		snprintf(s->runtime_note, sizeof(s->runtime_note),
			 "planned for no runtime (the simulator's defaults); "
			 "%.160s can execute this plan",
			 able);
	else
		snprintf(s->runtime_note, sizeof(s->runtime_note),
			 "no known runtime executes this plan");
}

/* Idle devices of the answer, by type, into s (0 when none). */
static void note_idle(const struct plan_run *R, struct tp_plan_summary *s)
{
	const struct tp_plan *p = &R->res.plan;
	const struct tp_cluster *c = &R->c;
	uint32_t nd = (uint32_t)c->devices.n, idle = 0;
	uint32_t *count = calloc(c->types.n + 1, sizeof(uint32_t));
	uint8_t *used = calloc(nd + 1, 1);
	size_t len = 0;

	if (!count || !used)
		goto out;
	for (size_t i = 0; i < p->devs.n; i++)
		if (p->devs.v[i] < nd)
			used[p->devs.v[i]] = 1;
	for (uint32_t d = 0; d < nd; d++)
		if (!used[d]) {
			idle++;
			count[c->devices.v[d].type]++;
		}
	s->idle_devices = idle;
	for (size_t t = 0; idle && t < c->types.n; t++)
		if (count[t] && len < sizeof(s->idle_types))
			len += (size_t)snprintf(s->idle_types + len,
						sizeof(s->idle_types) - len,
						"%s%u x %s", len ? ", " : "",
						count[t], c->types.v[t].name);
out:
	free(count);
	free(used);
}

/* Why the best plan on every device was slower: it re-simulated, the
 * share of the iteration each device type computes. */
static void note_all_devices(const struct plan_run *R,
			     struct tp_plan_summary *s)
{
	const struct tp_sim *sim = tp_planner_sim(R->pl);
	struct tp_sim_scratch *scr;
	struct tp_report rep;
	struct tp_error e;
	const struct tp_cluster *c = &R->c;
	size_t len = 0;

	if (!R->res.have_all || !s->idle_devices)
		return;
	if (!(scr = tp_sim_scratch_new(sim)))
		return;
	tp_report_init(&rep);
	tp_error_clear(&e);
	if (tp_sim_run(sim, &R->res.all_plan, scr, &rep, NULL, &e) == TP_OK) {
		s->have_all_devices = rep.feasible;
		s->all_devices_time_s = rep.iteration_time_s;
		if (!rep.feasible) {
			snprintf(s->idle_why, sizeof(s->idle_why),
				 "the best plan found on all %zu devices does "
				 "not fit in memory",
				 c->devices.n);
		} else {
			len = (size_t)snprintf(
				s->idle_why, sizeof(s->idle_why),
				"the best plan found on all %zu devices "
				"(re-simulated) takes %.4g s, %.2fx this "
				"plan; in it the devices compute:",
				c->devices.n, rep.iteration_time_s,
				R->res.report.iteration_time_s > 0
					? rep.iteration_time_s /
						  R->res.report.iteration_time_s
					: 0);
			for (size_t t = 0, shown = 0;
			     t < c->types.n && rep.devices &&
			     len < sizeof(s->idle_why);
			     t++) {
				double busy = 0;
				uint32_t k = 0;
				for (uint32_t d = 0; d < rep.n_devices; d++)
					if (c->devices.v[d].type == t) {
						busy += rep.devices[d].compute_s;
						k++;
					}
				if (!k || !(rep.iteration_time_s > 0))
					continue;
				len += (size_t)snprintf(
					s->idle_why + len,
					sizeof(s->idle_why) - len,
					"%s %s %.0f%%", shown++ ? "," : "",
					c->types.v[t].name,
					100 * busy / k / rep.iteration_time_s);
			}
			if (len < sizeof(s->idle_why))
				snprintf(s->idle_why + len,
					 sizeof(s->idle_why) - len,
					 " of the iteration");
		}
	}
	tp_report_release(&rep);
	tp_sim_scratch_free(scr);
}

/* The runtime's view of the answer (summary."runtime_fit"). */
static void fit_summary(const struct plan_run *R, struct tp_plan_summary *s)
{
	const struct tp_search_result *fr = &R->free_res;

	if (tp_runtime_is_none(&R->rt))
		note_runnable(R, s);
	if (R->compare && fr->have_plan && fr->report.feasible &&
	    (!R->res.report.feasible ||
	     fr->report.iteration_time_s * 1.01 <
		     R->res.report.iteration_time_s)) {
		s->have_unconstrained = true;
		s->unconstrained_time_s = fr->report.iteration_time_s;
		s->unconstrained_needs = tp_runtime_plan_check(
			&R->rt, &fr->plan, &R->m, &R->c, NULL,
			s->unconstrained_why, sizeof(s->unconstrained_why));
		tp_inputs_runtimes_running(
		    &fr->plan, &R->m, &R->c, R->rt.name, true,
		    s->unconstrained_runtimes,
		    sizeof(s->unconstrained_runtimes));
	}
	note_idle(R, s);
	note_all_devices(R, s);
}

/* The plan's summary: the answer's figures, the baselines, the search
 * statistics and where the inputs came from. */
static void fill_summary(struct plan_run *R)
{
	struct tp_plan *plan = &R->res.plan;
	const struct tp_report *r = &R->res.report;
	const struct tp_search_result *res = &R->res;
	const struct tp_search_options *so = &R->so;
	const char *weights = R->gnn ? tp_gnn_prior_source(R->gnn) : NULL;
	const char *mpath_given = R->demo ? NULL : R->a.model_path;
	const char *tpath_given = R->demo ? NULL : R->a.topo_path;
	struct tp_plan_summary *s = &plan->summary;
	uint32_t nd = (uint32_t)R->c.devices.n;

	tp_plan_summary_release(s);
	s->valid = true;
	s->feasible = r->feasible;
	s->iteration_time_s = r->iteration_time_s;
	s->throughput_samples_per_s = r->throughput_samples_per_s;
	s->tokens_per_s = r->tokens_per_s;
	s->mfu = r->mfu;
	s->tflops_per_device = r->tflops_per_device;
	tp_cli_plan_cost(&R->res.plan, &R->c, s);
	s->objective_cost = R->a.obj == TP_SEARCH_OBJECTIVE_COST;
	s->max_iter_time_s = s->objective_cost ? R->a.max_iter_time : 0;
	if (!r->feasible)
		snprintf(s->infeasible_reason, sizeof(s->infeasible_reason),
			 "%s", r->reason[0] ? r->reason : "out of memory");
	snprintf(s->precision, sizeof(s->precision), "%s", r->precision);
	s->basis = r->basis;
	if (r->devices && r->n_devices == nd) {
		s->peak_memory_bytes = calloc(nd, sizeof(double));
		s->busy_fraction = calloc(nd, sizeof(double));
		if (s->peak_memory_bytes && s->busy_fraction) {
			s->n_devices = nd;
			for (uint32_t d = 0; d < nd; d++) {
				double b = r->iteration_time_s > 0
						   ? r->devices[d].compute_s /
							     r->iteration_time_s
						   : 0;
				s->peak_memory_bytes[d] =
					r->devices[d].peak_memory_bytes;
				s->busy_fraction[d] = b < 0 ? 0 : b > 1 ? 1 : b;
			}
		} else {
			free(s->peak_memory_bytes);
			free(s->busy_fraction);
			s->peak_memory_bytes = s->busy_fraction = NULL;
		}
	}
	for (int b = 0; b < TP_BASELINE_COUNT &&
			s->n_baselines < TP_PLAN_MAX_BASELINES;
	     b++) {
		const struct tp_baseline_result *br = &res->baselines[b];
		struct tp_plan_baseline *pb = &s->baselines[s->n_baselines];
		if (!br->available)
			continue;
		snprintf(pb->name, sizeof(pb->name), "%s",
			 tp_baseline_name((enum tp_baseline)b));
		pb->feasible = br->feasible;
		pb->iteration_time_s = br->iteration_time_s;
		s->n_baselines++;
	}
	s->playouts = res->playouts;
	s->simulations = res->simulations;
	s->seed = so->seed;
	s->threads = so->threads;
	s->gnn = R->gnn != NULL && !res->prior_declined;
	snprintf(s->weights, sizeof(s->weights), "%s", weights ? weights : "");
	snprintf(s->gnn_declined, sizeof(s->gnn_declined), "%s",
		 R->gnn && res->prior_declined ? res->prior_declined_why : "");
	s->no_timing = R->a.no_timing;
	s->search_seconds = res->seconds;
	s->playouts_per_s =
		res->seconds > 0 ? (double)res->playouts / res->seconds : 0;
	snprintf(s->version, sizeof(s->version), "%s", TP_VERSION);
	snprintf(s->model_file, sizeof(s->model_file), "%s",
		 base_name(R->a.model_path));
	snprintf(s->topology_file, sizeof(s->topology_file), "%s",
		 base_name(R->a.topo_path));
	snprintf(s->model_sha256, sizeof(s->model_sha256), "%s", R->msha);
	snprintf(s->topology_sha256, sizeof(s->topology_sha256), "%s",
		 R->tsha);
	/* the paths as given, for render/check/export without -m/-t; a path
	   too long to keep whole is not recorded (those commands then ask
	   for -m/-t) */
	if (mpath_given && strlen(mpath_given) < sizeof(s->model_path))
		snprintf(s->model_path, sizeof(s->model_path), "%s",
			 mpath_given);
	if (tpath_given && strlen(tpath_given) < sizeof(s->topology_path))
		snprintf(s->topology_path, sizeof(s->topology_path), "%s",
			 tpath_given);
	/* a profile given as a file: simulate and check read it again */
	if (R->rtsha[0] && strlen(R->a.runtime) < sizeof(s->runtime_path)) {
		snprintf(s->runtime_path, sizeof(s->runtime_path), "%s",
			 R->a.runtime);
		snprintf(s->runtime_sha256, sizeof(s->runtime_sha256), "%s",
			 R->rtsha);
	}
	fit_summary(R, s);
}

struct explain_ctx {
	const struct tp_sim *sim;
	struct tp_sim_scratch *scratch;
	bool fused_attention; /* the runtime's, as the planner's sim runs it */
	const struct tp_runtime *rt; /* the runtime planned for */
};

/* The simulator as the explanation's evaluator (table.h). */
static enum tp_status explain_eval(void *ctx, const struct tp_plan *variant,
				   struct tp_report *out, struct tp_error *err)
{
	struct explain_ctx *e = ctx;
	return tp_sim_run(e->sim, variant, e->scratch, out, NULL, err);
}

/* The baselines' line: each "name figure" kept on one line by the
 * wrapping (it cut "greedy | n/a" apart), f being the buffer that
 * tp_render_wrap reads (stderr when there is none: plain spaces). */
static void print_baselines(FILE *f, const struct tp_search_result *res,
			    const struct tp_report *r)
{
	for (int b = 0; b < TP_BASELINE_COUNT; b++) {
		const struct tp_baseline_result *br = &res->baselines[b];
		char e[96], tb[32];

		tp_render_fmt_si(tb, sizeof(tb), br->iteration_time_s, "s");
		if (!br->available)
			snprintf(e, sizeof(e), "n/a");
		else if (!br->feasible)
			snprintf(e, sizeof(e), "does not fit");
		else if (r->feasible && r->iteration_time_s > 0)
			snprintf(e, sizeof(e), "%s (%.2fx)", tb,
				 br->iteration_time_s / r->iteration_time_s);
		else
			snprintf(e, sizeof(e), "%s", tb);
		for (char *q = e; *q && f != stderr; q++)
			if (*q == ' ')
				*q = TP_RENDER_NB;
		fprintf(f, "%s%s%c%s", b ? ", " : "  baselines      ",
			tp_baseline_name((enum tp_baseline)b),
			f != stderr ? TP_RENDER_NB : ' ', e);
	}
	fputc('\n', f);
}

/* Which limit ended the search. */
static void print_stop(FILE *f, const struct tp_search_result *res)
{
	const char *what = NULL;

	switch (res->stopped_by) {
	case TP_SEARCH_STOP_PLAYOUTS:
		what = "the playout limit (--playouts), before the time limit";
		break;
	case TP_SEARCH_STOP_TIME:
		what = "the time limit (--time-limit), before any playout "
		       "limit";
		break;
	case TP_SEARCH_STOP_INTERRUPT:
		what = "an interrupt (the best plan so far)";
		break;
	case TP_SEARCH_STOP_NONE:
		break;
	}
	if (what)
		fprintf(f, "  stopped by     %s\n", what);
}

/*
 * The human summary on stderr: the header, the table of table.h
 * (stages, device types, headline figures), why nothing fits when so
 * (with the smallest change, confirmed by the simulator), then the
 * groups, compression, baselines and search statistics.
 */
static void print_human(const struct tp_search_result *res,
			const struct tp_plan *p, const struct tp_model *m,
			const struct tp_cluster *c, const struct explain_ctx *x,
			const char *priors, uint32_t threads, uint64_t seed)
{
	const struct tp_report *r = &res->report;
	struct tp_strbuf t;
	struct tp_error err;

	fprintf(stderr, "tagplan plan: %s on %s (%zu devices)\n", m->name,
		c->name && *c->name ? c->name : "the topology", c->devices.n);
	tp_strbuf_init(&t);
	tp_error_clear(&err);
	if (tp_cli_table(p, m, c, r, &t, &err) == TP_OK) {
		fputs(tp_strbuf_cstr(&t), stderr);
	} else {
		fprintf(stderr,
			"  iteration      %.4g s, %.4g samples/s, MFU %.1f%%\n",
			r->iteration_time_s, r->throughput_samples_per_s,
			100 * r->mfu);
	}
	tp_strbuf_reset(&t);
	if (!r->feasible) {
		const struct tp_sim *sim = x->sim;
		struct explain_ctx ec = {sim,
					 sim ? tp_sim_scratch_new(sim) : NULL,
					 x->fused_attention, x->rt};
		if (tp_cli_explain(p, m, c, r,
				   &(struct tp_explain_sim){
					   ec.scratch ? explain_eval : NULL, &ec,
					   ec.fused_attention, ec.rt},
				   &t, &err) == TP_OK)
			fputs(tp_strbuf_cstr(&t), stderr);
		else
			fprintf(stderr, "does not fit: %s\n",
				r->reason[0] ? r->reason : "out of memory");
		tp_sim_scratch_free(ec.scratch);
	}
	tp_strbuf_release(&t);
	/* the rest through a buffer, wrapped at 80 columns */
	{
		char *buf = NULL, skips[160] = "", replays[96] = "", tb[32];
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		if (!f) {
			f = stderr;
		}
		{
			struct tp_strbuf sb;
			tp_strbuf_init(&sb);
			tp_cli_plan_structure(p, m, c, &sb);
			fputs(tp_strbuf_cstr(&sb), f);
			tp_strbuf_release(&sb);
		}
		/* times with an SI prefix, as the table above ("143 ms"; it
		   mixed "0.1435 s" with "143 ms") */
		if (res->lower_bound_s > 0 && r->iteration_time_s > 0) {
			tp_render_fmt_si(tb, sizeof(tb), res->lower_bound_s,
					 "s");
			fprintf(f,
				"  lower bound    %s (all devices computing at "
				"%s): this plan is at %.0f%%\n",
				tb,
				m->profiles.n ? "their fastest profiled or "
						"peak speed"
					      : "peak",
				100 * res->lower_bound_s / r->iteration_time_s);
		}
		tp_cli_profile_note(x->sim, p, m, c, f);
		print_baselines(f, res, r);
		if (res->gain_skips)
			snprintf(skips, sizeof(skips),
				 ", %llu single change%s not simulated: the "
				 "GNN predicted %s at least %.0f%% slower",
				 (unsigned long long)res->gain_skips,
				 res->gain_skips == 1 ? "" : "s",
				 res->gain_skips == 1 ? "it" : "them",
				 100 * TP_SEARCH_GAIN_SKIP);
		if (res->replays)
			snprintf(replays, sizeof(replays),
				 ", %llu answered by an earlier simulation "
				 "of the same plan",
				 (unsigned long long)res->replays);
		tp_render_fmt_si(tb, sizeof(tb), res->seconds, "s");
		fprintf(f,
			"  search         %llu playout%s, %llu simulation%s (%llu "
			"more settled by a lower bound%s%s) in %s (%.0f "
			"playouts/s), %u thread%s, seed %llu, %u op group%s, "
			"%s\n",
			(unsigned long long)res->playouts,
			res->playouts == 1 ? "" : "s",
			(unsigned long long)res->simulations,
			res->simulations == 1 ? "" : "s",
			(unsigned long long)res->bounded, replays, skips, tb,
			res->seconds > 0 ? (double)res->playouts / res->seconds : 0,
			threads, threads == 1 ? "" : "s", (unsigned long long)seed,
			res->n_groups, res->n_groups == 1 ? "" : "s", priors);
		print_stop(f, res);
		fprintf(f, "  answer from    %s%s\n", res->source,
			res->interrupted ? " (interrupted: best so far)" : "");

		if (f != stderr) {
			struct tp_strbuf w;
			fclose(f);
			tp_strbuf_init(&w);
			tp_render_wrap(&w, buf ? buf : "", 80);
			fputs(w.failed ? (buf ? buf : "") : tp_strbuf_cstr(&w),
			      stderr);
			tp_strbuf_release(&w);
			free(buf);
		}
	}
}

/* ------------------------------------------------------------------ */

/* The usage errors that need no input (exit 2 before any work), and the
 * parsed --baseline/--compression.  Returns 0 or the exit code. */
static int check_args(struct plan_args *a)
{
	if (a->baseline && a->strategy)
		return tp_cli_usage_error("plan",
					  "--baseline and -s both name the "
					  "plan to write; give one");
	if (a->baseline && (a->bl = tp_baseline_parse(a->baseline)) < 0) {
		const char *names[TP_BASELINE_COUNT];
		for (int i = 0; i < TP_BASELINE_COUNT; i++)
			names[i] = tp_baseline_name((enum tp_baseline)i);
		return tp_cli_bad_choice("plan", "--baseline", a->baseline,
					 names, TP_BASELINE_COUNT);
	}
	if ((a->comp = tp_compression_parse(a->compression)) < 0) {
		const char *names[TP_COMPRESSION_COUNT];
		for (int i = 0; i < TP_COMPRESSION_COUNT; i++)
			names[i] = tp_compression_name((enum tp_compression)i);
		return tp_cli_bad_choice("plan", "--compression",
					 a->compression, names,
					 TP_COMPRESSION_COUNT);
	}
	if ((a->obj = tp_cli_objective_args(a->objective,
					    a->max_iter_time)) < 0)
		return TP_EXIT_USAGE;
	if (a->weights && a->no_gnn)
		return tp_cli_usage_error("plan",
					  "--weights and --no-gnn contradict "
					  "each other; give one");
	if (!a->time_limit && !a->playouts)
		/* --time-limit alone takes the playout limit away */
		return tp_cli_usage_error("plan",
					  "--time-limit 0 is no time limit, and "
					  "there is no playout limit (--playouts "
					  "0, or --time-limit given without "
					  "--playouts): the search needs one; "
					  "give --playouts N, or --time-limit "
					  "S above 0");
	if ((a->model_path != NULL) != (a->topo_path != NULL))
		return tp_cli_usage_error(
			"plan", "%s is missing: give both -m MODEL and -t TOPO, "
				"or neither to plan the shipped demo",
			a->model_path ? "-t TOPO" : "-m MODEL");
	if (a->model_path && a->topo_path && !strcmp(a->model_path, "-") &&
	    !strcmp(a->topo_path, "-"))
		return tp_cli_usage_error("plan",
					  "-m - -t -: only one input can come "
					  "from stdin; give the other as a "
					  "file");
	if (a->dot && a->svg && strcmp(a->dot, a->svg) == 0)
		return tp_cli_usage_error("plan",
					  "--dot and --svg name the same file");
	if (a->svg && strcmp(a->svg, "-") == 0)
		return tp_cli_usage_error("plan",
					  "--svg -: give a file name (`tagplan "
					  "render -p PLAN -o -` writes DOT to "
					  "stdout)");
	if (a->dot && strcmp(a->dot, "-") == 0 &&
	    (!a->out || strcmp(a->out, "-") == 0))
		return tp_cli_usage_error("plan",
					  "--dot -: stdout carries the plan; "
					  "give -o PLAN to write the plan to a "
					  "file");
	if (a->out && ((a->dot && strcmp(a->out, a->dot) == 0) ||
		       (a->svg && strcmp(a->out, a->svg) == 0)))
		return tp_cli_usage_error("plan", "-o %s is also a picture "
						  "(--dot/--svg): give the "
						  "plan and the pictures "
						  "different names",
					  a->out);
	if (tp_cli_json_output("plan", "-o", a->out, "the plan",
			       "draw the picture with --svg FILE.svg or --dot "
			       "FILE.dot (tagplan render -p PLAN -o FILE.png "
			       "or .pdf), and give -o a .json name"))
		return TP_EXIT_USAGE;
	{
		const struct tp_cli_file ins[] = {{"-m", a->model_path},
						  {"-t", a->topo_path},
						  {"--weights", a->weights},
						  {NULL, NULL}};
		const struct tp_cli_file outs[] = {{"-o",
						    a->out ? a->out
							   : tp_cli_default_stdout},
						   {"--dot", a->dot},
						   {"--svg", a->svg},
						   {NULL, NULL}};
		int code = tp_cli_check_outputs("plan", ins, outs);
		if (code)
			return code;
	}
	return 0;
}

/* Model and topology (the shipped demo without -m/-t).  Returns 0 or
 * the exit code. */
static int load_inputs(struct plan_run *R)
{
	enum tp_status st;

	if (!R->a.model_path) {
		if (tp_data_path("demo-model.json", R->mpath,
				 sizeof(R->mpath), &R->err) ||
		    tp_data_path("tag-testbed.json", R->tpath,
				 sizeof(R->tpath), &R->err))
			return tp_cli_fail(&R->err);
		R->a.model_path = R->mpath;
		R->a.topo_path = R->tpath;
		R->demo = true;
	} else {
		/* -m llama-2-7b: the shipped data/models/llama-2-7b.json */
		R->a.model_path = tp_inputs_shipped(R->a.model_path, true,
						    R->mpath, sizeof(R->mpath));
		R->a.topo_path = tp_inputs_shipped(R->a.topo_path, false,
						   R->tpath, sizeof(R->tpath));
	}
	if ((st = load_input(R->a.model_path, true, &R->m, NULL, R->msha,
			     &R->warn, &R->err)))
		tp_inputs_hint_swap(R->a.model_path, R->a.topo_path, &R->err);
	if (st || (st = load_input(R->a.topo_path, false, NULL, &R->c,
				   R->tsha, &R->warn, &R->err))) {
		tp_cli_print_warnings("plan", &R->warn);
		return tp_cli_fail(&R->err);
	}
	tp_cli_print_warnings("plan", &R->warn);
	if (R->demo && !R->a.quiet)
		fprintf(stderr,
			"tagplan plan: no -m/-t given: planning the shipped "
			"demo model (%s) on the shipped %s topology (%zu "
			"devices)\n",
			R->m.name,
			R->c.name && *R->c.name ? R->c.name : "demo",
			R->c.devices.n);
	return 0;
}

/* The GNN: --weights F, else the shipped default weights when there are
 * any, else uniform priors (said in R->gnn_note).  Returns 0 or the exit
 * code (bad --weights). */
static int load_priors(struct plan_run *R)
{
	struct tp_error gerr;
	enum tp_status st;

	if (R->a.no_gnn) {
		R->gnn_note = "--no-gnn: uniform priors";
		return 0;
	}
	tp_error_clear(&gerr);
	st = tp_gnn_prior_load_default(R->a.weights, &R->prior, &R->gnn,
				       &gerr);
	if (st && R->a.weights)
		return tp_cli_fail(&gerr);
	if (st == TP_EIO) {
		R->gnn_note = "no trained GNN weights shipped: uniform priors";
	} else if (st) {
		char buf[1200];
		fprintf(stderr,
			"tagplan plan: warning: default GNN weights unusable "
			"(%s); searching with uniform priors\n",
			tp_error_format(&gerr, buf, sizeof(buf)));
		R->gnn_note = "default GNN weights unusable: uniform priors";
	}
	return 0;
}

/* The search options from the arguments; --time-limit covers the whole
 * run: what loading took comes out of it.  When nothing is left the
 * search still answers (it scores baselines until it has a plan, then
 * stops), so the run ends shortly after loading. */
static void search_options(struct plan_run *R, struct tp_cli_bar *bar)
{
	struct tp_search_options *so = &R->so;
	long long threads = R->a.threads;

	tp_search_options_default(so);
	so->seed = (uint64_t)R->a.seed;
	if (threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		threads = n > 0 ? n : 1;
	}
	so->threads = (uint32_t)threads;
	so->time_limit_s = R->a.time_limit;
	if (R->a.time_limit > 0) {
		double spent = tp_cli_monotonic_s() - R->t_start;
		so->time_limit_s = fmax(R->a.time_limit - spent, 1e-3);
	}
	so->playouts = (uint64_t)R->a.playouts;
	if (R->compare && R->a.bl < 0) {
		/* the rest goes to the search without the runtime's limits */
		so->playouts = R->a.playouts
				       ? (uint64_t)R->a.playouts -
						 (uint64_t)fmax(1, floor(
							R->a.playouts *
							COMPARE_SHARE))
				       : 0;
		if (so->time_limit_s > 0)
			so->time_limit_s *= 1 - COMPARE_SHARE;
		if (R->a.playouts == 1)
			so->playouts = 1;
	}
	so->baseline = R->a.bl;
	so->objective = (enum tp_search_objective)R->a.obj;
	so->max_iter_time_s = R->a.obj ? R->a.max_iter_time : 0;
	so->given = R->a.strategy ? &R->given : NULL;
	so->given_source = R->given_source;
	so->compression = (enum tp_compression)R->a.comp;
	so->groups = (uint32_t)R->a.groups;
	so->prior = R->gnn ? &R->prior : NULL;
	so->prior_any_cluster = R->a.gnn_any_size;
	so->stop = &stop_flag;
	bar->on = !R->a.quiet && isatty(STDERR_FILENO);
	so->progress = tp_cli_bar_draw;
	so->progress_ctx = bar;
}

/* The priors when the search leaves the GNN out (search.h
 * tp_search_prior_declined: a cluster larger than any it was trained on,
 * without --gnn-any-size), why being its reason: the note on stderr
 * before a search and the summary's priors after it. */
static const char *declined(const char *why, char *buf, size_t size)
{
	snprintf(buf, size, "uniform priors: %s (--gnn-any-size uses it)", why);
	return buf;
}

/* The search (SIGINT/SIGTERM set stop_flag, which it polls). */
static enum tp_status search(struct plan_run *R, struct tp_cli_bar *bar)
{
	enum tp_status st = tp_planner_run(R->pl, &R->so, &R->res, &R->err);

	tp_cli_bar_clear(bar);
	return st;
}

/* Ctrl-C or SIGTERM before the search started: nothing to write. */
static int interrupted_early(const char *phase)
{
	fprintf(stderr,
		"tagplan plan: interrupted while %s, before any plan: nothing "
		"written\n",
		phase);
	return TP_EXIT_INTERRUPTED;
}

/* The plan text and the pictures of the device mapping (--dot, --svg),
 * rendered with one Graphviz context for all of them (render.h: a second
 * context after freeing the first reads freed memory in Graphviz 2.43's
 * pango plugin), then written together or not at all.  Returns 0 or the
 * exit code. */
static int write_files(struct plan_run *R)
{
	struct tp_render_gvc *gvc = NULL;
	struct tp_render_file pic[2];
	struct tp_output outs[3];
	size_t n = 0;
	int code = 0;

	tp_render_file_init(&pic[0], R->a.dot, TP_RENDER_DOT);
	tp_render_file_init(&pic[1], R->a.svg, TP_RENDER_SVG);
	outs[n++] = (struct tp_output){R->a.out ? R->a.out : "-", R->text.buf,
				       R->text.len};
	if (R->a.svg && !(gvc = tp_render_gvc_new())) {
		tp_error_set(&R->err, TP_ENOMEM, "out of memory");
		code = tp_cli_fail(&R->err);
		goto out;
	}
	for (int k = 0; k < 2; k++) {
		struct tp_render_options ro;
		if (!pic[k].path)
			continue;
		tp_render_options_default(&ro);
		ro.gvc = gvc;
		struct tp_render_input in = {&R->res.plan, &R->m, &R->c,
					     &R->res.report};
		if (tp_render_plan_prepare(&in, &ro, &pic[k], &R->warn,
					   &R->err)) {
			tp_cli_print_warnings("plan", &R->warn);
			code = tp_cli_fail(&R->err);
			goto out;
		}
		tp_cli_print_warnings("plan", &R->warn);
		outs[n++] = (struct tp_output){
			pic[k].target, pic[k].data.buf ? pic[k].data.buf : "",
			pic[k].data.len};
	}
	if (tp_file_write_set(outs, n, &R->err)) {
		code = tp_cli_fail(&R->err);
		goto out;
	}
	for (int k = 0; k < 2 && !R->a.quiet; k++)
		if (pic[k].path)
			snprintf(R->wrote[k], sizeof(R->wrote[k]), "%s",
				 pic[k].target);
out:
	tp_render_file_release(&pic[0]);
	tp_render_file_release(&pic[1]);
	tp_render_gvc_free(gvc);
	return code;
}

/* The runtime lines of the human summary: what the plan runs on, what
 * the unconstrained plan would gain, the idle devices. */
static void print_fit(const struct plan_run *R)
{
	const struct tp_plan_summary *s = &R->res.plan.summary;
	struct tp_strbuf t, w;
	char others[160];

	tp_strbuf_init(&t);
	tp_strbuf_init(&w);
	if (tp_runtime_is_none(&R->rt))
		tp_strbuf_addf(&t, "  runtime        none: %s\n",
			       s->runtime_note);
	else if (R->rt.can.launcher == TP_LAUNCH_NONE)
		tp_strbuf_addf(&t, "  runtime        %s: the search kept to "
				   "what it executes (no export: it has no "
				   "public launch configuration)\n",
			       R->rt.name);
	else
		tp_strbuf_addf(&t, "  runtime        %s%s: the search kept to "
				   "what it executes (tagplan export --to %s)\n",
			       R->rt.name, R->a.runtime ? "" : " (the default)",
			       tp_launcher_name(R->rt.can.launcher));
	if (s->have_unconstrained) {
		tp_strbuf_addf(&t,
			       "  unconstrained  %.4g s, %.2fx faster, needs ",
			       s->unconstrained_time_s,
			       s->iteration_time_s / s->unconstrained_time_s);
		tp_render_caps(&t, s->unconstrained_needs);
		tp_strbuf_addf(&t, ": %s; ", s->unconstrained_why);
		if (s->unconstrained_runtimes[0])
			tp_strbuf_addf(&t, "%s can run it (tagplan plan "
					   "--runtime NAME searches under its "
					   "costs)\n",
				       s->unconstrained_runtimes);
		else if (tp_inputs_runtimes_running(&R->free_res.plan, &R->m,
						    &R->c, R->rt.name, false,
						    others, sizeof(others)))
			tp_strbuf_addf(&t, "no shipped runtime runs it (%s "
					   "would, but does not build this "
					   "model)\n",
				       others);
		else
			tp_strbuf_addf(&t, "no shipped runtime runs it\n");
	} else if (R->compare && R->compare_skipped) {
		tp_strbuf_addf(&t, "  unconstrained  not searched: the runtime's "
				   "search took the time limit\n");
	} else if (R->compare && R->free_res.have_plan &&
		   !R->free_res.report.feasible) {
		/* its time is of a plan that does not fit: no comparison */
		tp_strbuf_addf(&t,
			       "  unconstrained  nothing fits without %s's "
			       "limits either\n",
			       R->rt.name);
	} else if (R->free_runs) {
		tp_strbuf_addf(&t,
			       "  unconstrained  found this plan, which %s "
			       "runs (%s's own search: %.4g s)\n",
			       R->rt.name, R->rt.name,
			       R->free_res.report.iteration_time_s);
	} else if (R->compare && R->free_res.have_plan &&
		   R->free_res.report.iteration_time_s <
			   R->res.report.iteration_time_s) { /* by < 1% */
		tp_strbuf_addf(&t,
			       "  unconstrained  %.4g s without %s's limits, "
			       "within 1%% of this plan\n",
			       R->free_res.report.iteration_time_s,
			       R->rt.name);
	} else if (R->compare && R->free_res.have_plan) {
		tp_strbuf_addf(&t,
			       "  unconstrained  no faster plan found without "
			       "%s's limits (%.4g s)\n",
			       R->rt.name,
			       R->free_res.report.iteration_time_s);
	}
	if (s->idle_devices)
		tp_strbuf_addf(&t, "  idle devices   %u (%s): %s\n",
			       s->idle_devices, s->idle_types,
			       s->idle_why[0] ? s->idle_why
					      : "no plan on every device was "
						"simulated");
	tp_render_wrap(&w, tp_strbuf_cstr(&t), 80);
	fputs(w.failed ? tp_strbuf_cstr(&t) : tp_strbuf_cstr(&w), stderr);
	tp_strbuf_release(&t);
	tp_strbuf_release(&w);
}

/* The plan file (or stdout) and the pictures, then the human summary.
 * Returns 0 or the exit code. */
static int write_outputs(struct plan_run *R)
{
	int code;

	fill_summary(R);
	tp_plan_write(&R->res.plan, &R->m, &R->c, &R->text);
	if (R->text.failed) {
		tp_error_set(&R->err, TP_ENOMEM,
			     "out of memory writing the plan");
		return tp_cli_fail(&R->err);
	}
	if ((code = write_files(R)))
		return code;
	if (!R->a.quiet) {
		/* the planner's simulator params: its defaults under the
		   runtime planned for (search/planner.c) */
		struct tp_sim_params sp;
		struct explain_ctx x = {tp_planner_sim(R->pl), NULL, false,
					&R->rt};

		tp_sim_params_default(&sp);
		tp_sim_params_runtime(&sp, &R->rt);
		x.fused_attention = sp.fused_attention;
		char pl[256];

		print_human(&R->res, &R->res.plan, &R->m, &R->c, &x,
			    !R->gnn ? R->gnn_note
			    : R->res.prior_declined
				    ? declined(R->res.prior_declined_why, pl,
					       sizeof(pl))
				    : "GNN priors and gains",
			    R->so.threads, R->so.seed);
	}
	if (!R->a.quiet)
		print_fit(R);
	if (!R->a.quiet && R->res.plan.summary.cost_per_iteration > 0) {
		const struct tp_plan_summary *s = &R->res.plan.summary;
		fprintf(stderr, "cost: $%.4g per iteration", s->cost_per_iteration);
		if (s->cost_per_million_tokens > 0)
			fprintf(stderr, ", $%.4g per million tokens",
				s->cost_per_million_tokens);
		fprintf(stderr, " (the devices the plan uses at their "
				"user-supplied prices per hour)%s\n",
			R->a.obj ? "; objective: the cheapest plan found "
				   "within --max-iter-time"
				 : "");
	}
	for (int k = 0; k < 2 && !R->a.quiet; k++)
		if (R->wrote[k][0])
			fprintf(stderr, "tagplan plan: wrote %s\n", R->wrote[k]);
	if (!R->a.quiet && R->a.out)
		fprintf(stderr, "tagplan plan: wrote %s\n", R->a.out);
	return 0;
}

/* The exit code of a written answer: interrupted, nothing fits, done. */
static int answer_code(const struct plan_run *R)
{
	const struct tp_report *r = &R->res.report;

	if (R->res.interrupted) {
		fprintf(stderr, "tagplan plan: interrupted; wrote the best "
				"plan found so far\n");
		return TP_EXIT_INTERRUPTED;
	}
	if (!r->feasible) {
		fprintf(stderr,
			"tagplan plan: nothing fits: wrote the closest plan "
			"(%s)\n",
			R->a.quiet ? (r->reason[0] ? r->reason
						   : "out of memory")
				   : "why, and what would fit: above");
		return TP_EXIT_CHECK;
	}
	if (R->a.obj && r->iteration_time_s > R->a.max_iter_time) {
		fprintf(stderr, "tagplan plan: no plan found meets "
				"--max-iter-time %g s: wrote the fastest one "
				"found (%.4g s); a longer limit or more "
				"devices\n", R->a.max_iter_time,
			r->iteration_time_s);
		return TP_EXIT_CHECK;
	}
	return TP_EXIT_OK;
}

/* The runtime: --runtime, else tp_runtime_default_name of the model;
 * one that cannot build the model, or compression asked of one without
 * it, is a usage error.  Returns 0 or the exit code. */
static int choose_runtime(struct plan_run *R, struct tp_planner_options *po)
{
	const char *name = R->a.runtime ? R->a.runtime
					: tp_runtime_default_name(&R->m);
	char why[400];

	if (tp_runtime_find_file(name, &po->runtime, R->rtsha, &R->err))
		return tp_cli_fail(&R->err);
	R->rt = po->runtime;
	if (!tp_runtime_builds(&R->rt, &R->m, why, sizeof(why)))
		return tp_cli_usage_error("plan",
					  "--runtime %s: %s; name one that "
					  "does (ddp runs any model) or "
					  "--runtime none",
					  R->rt.name, why);
	if (!tp_runtime_is_none(&R->rt) && !R->rt.can.compression &&
	    R->a.comp_given && R->a.comp != TP_COMPRESSION_OFF)
		return tp_cli_usage_error("plan",
					  "--compression %s: %s does not "
					  "compress gradients; give "
					  "--compression off or --runtime none",
					  R->a.compression, R->rt.name);
	/* not under the cost objective: the comparison is by time */
	R->compare = !tp_runtime_is_none(&R->rt) && !R->a.no_compare &&
		     !R->a.obj && !R->a.strategy;
	return 0;
}

/* -s STRATEGY: its plan on the inputs, one the runtime executes (a
 * strategy is usage: exit 2).  Returns 0 or the exit code. */
static int given_plan(struct plan_run *R)
{
	char why[400];

	if (tp_inputs_strategy_plan(R->a.strategy, &R->m, &R->c, &R->given,
				    &R->err))
		return tp_cli_fail(&R->err);
	snprintf(R->given_source, sizeof(R->given_source), "strategy %.86s",
		 R->a.strategy);
	if (!tp_runtime_is_none(&R->rt) &&
	    tp_runtime_plan_check(&R->rt, &R->given, &R->m, &R->c, NULL, why,
				  sizeof(why)))
		return tp_cli_usage_error("plan",
					  "-s %s: runtime %s cannot execute "
					  "it: %s; change the strategy, or "
					  "give --runtime none",
					  R->a.strategy, R->rt.name, why);
	return 0;
}

/* The same search without the runtime's capability limits (its
 * behaviour still prices the plans): what a runtime that could would
 * gain.  A faster plan the runtime executes after all becomes the
 * answer.  Returns the status. */
static enum tp_status compare(struct plan_run *R, struct tp_cli_bar *bar)
{
	struct tp_search_options so = R->so;
	struct tp_search_result *fr = &R->free_res;
	enum tp_status st;
	bool runs;

	so.unconstrained = true;
	so.compression = (enum tp_compression)R->a.comp;
	so.playouts = R->a.playouts
			      ? (uint64_t)fmax(1, floor(R->a.playouts *
							COMPARE_SHARE))
			      : 0;
	so.time_limit_s = 0;
	if (R->a.time_limit > 0) {
		/* its share, or what the runtime's search left of the
		   limit: --time-limit bounds the whole command */
		double left = R->a.time_limit -
			      (tp_cli_monotonic_s() - R->t_start);
		if (left < COMPARE_MIN * R->a.time_limit) {
			R->compare_skipped = true;
			return TP_OK;
		}
		so.time_limit_s =
			fmin(R->a.time_limit * COMPARE_SHARE, left);
	}
	tp_search_result_init(fr);
	stop_flag = 0;
	st = tp_planner_run(R->pl, &so, fr, &R->err);
	tp_cli_bar_clear(bar);
	if (st)
		return st;
	runs = fr->have_plan && fr->report.feasible &&
	       !tp_runtime_plan_check(&R->rt, &fr->plan, &R->m, &R->c, NULL,
				      NULL, 0);
	if (!runs && fr->have_runnable && fr->runnable_report.feasible &&
	    (!R->res.report.feasible ||
	     fr->runnable_report.iteration_time_s <
		     R->res.report.iteration_time_s)) {
		/* the fastest plan of that search the runtime runs: it only
		   improves with the budget, as the runtime's own answer, so
		   the faster of the two does too (the anytime property
		   across both searches); that search's own answer stays
		   in free_res for the summary's unconstrained line */
		struct tp_plan p = R->res.plan;
		struct tp_report r = R->res.report;
		R->res.plan = fr->runnable_plan;
		R->res.report = fr->runnable_report;
		fr->runnable_plan = p;
		fr->runnable_report = r;
		snprintf(R->res.source, sizeof(R->res.source), "%.60s",
			 "the search without the runtime's limits");
	}
	if (runs && (!R->res.report.feasible ||
		     fr->report.iteration_time_s <
			     R->res.report.iteration_time_s)) {
		/* the runtime runs it: the answer */
		struct tp_search_result tmp = R->res;
		struct tp_baseline_result bl[TP_BASELINE_COUNT];
		snprintf(fr->source, sizeof(fr->source), "%.40s",
			 "the search without the runtime's limits");
		fr->playouts += tmp.playouts;
		fr->simulations += tmp.simulations;
		fr->replays += tmp.replays;
		/* the runtime's baselines stay with the answer */
		memcpy(bl, fr->baselines, sizeof(bl));
		memcpy(fr->baselines, tmp.baselines, sizeof(bl));
		memcpy(tmp.baselines, bl, sizeof(bl));
		R->res = *fr;
		*fr = tmp;
		R->free_runs = true;
		return TP_OK;
	}
	R->res.playouts += fr->playouts;
	R->res.simulations += fr->simulations;
	R->res.replays += fr->replays;
	return TP_OK;
}

/* Plan the search's inputs: load, search, write.  Returns the exit
 * code. */
static int plan_steps(struct plan_run *R)
{
	struct tp_planner_options po;
	struct tp_cli_bar bar = {false, false};
	char why[160], note[256];
	int code;

	tp_error_clear(&R->err);
	/* an output that cannot be written fails now, not after the search */
	{
		const char *const outs[] = {R->a.out, R->a.dot, R->a.svg};
		for (int k = 0; k < 3; k++)
			if (outs[k] && tp_file_check_output(outs[k], &R->err))
				return tp_cli_fail(&R->err);
	}
	/* the values the options name (--runtime, --weights) before the
	   inputs: a bad one is refused before any work */
	tp_planner_options_default(&po);
	if (R->a.runtime && tp_runtime_find(R->a.runtime, &po.runtime,
					    &R->err))
		return tp_cli_fail(&R->err);
	if ((code = load_priors(R)))
		return code;
	if (stop_flag)
		return interrupted_early("loading the GNN");
	if ((code = load_inputs(R)) ||
	    (code = tp_cli_apply_prices("plan", R->a.price, &R->c)) ||
	    (R->a.obj && (code = tp_cli_check_prices("plan", &R->c))))
		return code;
	if (stop_flag)
		return interrupted_early("loading the inputs");
	/* the default runtime and what it builds depend on the model */
	if ((code = choose_runtime(R, &po)) ||
	    (R->a.strategy && (code = given_plan(R))))
		return code;
	if (R->a.bucket_given)
		po.grad_bucket_bytes = R->a.bucket_mb * 1e6;
	R->pl = tp_planner_new(&R->m, &R->c, &po, &R->err);
	if (!R->pl)
		return tp_cli_fail(&R->err);
	search_options(R, &bar);
	if (!R->a.quiet && R->a.bl < 0 && !R->a.strategy &&
	    tp_search_prior_declined(&R->so, &R->c, why, sizeof(why)))
		fprintf(stderr, "tagplan plan: %s\n",
			declined(why, note, sizeof(note)));
	if (search(R, &bar))
		return tp_cli_fail(&R->err);
	if (R->compare && !R->res.interrupted && R->a.bl < 0 &&
	    compare(R, &bar))
		return tp_cli_fail(&R->err);
	if ((code = write_outputs(R)))
		return code;
	return answer_code(R);
}

/* The whole run under SIGINT/SIGTERM handlers that ask it to stop (every
 * phase looks at stop_flag; a second Ctrl-C kills). */
static int plan_run(struct plan_run *R)
{
	struct sigaction sa, old_int, old_term;
	int code;

	stop_flag = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESETHAND;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	code = plan_steps(R);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return code;
}

int cmd_plan(int argc, char **argv)
{
	struct plan_run R;
	struct plan_args *a = &R.a;
	struct tp_opt opts[] = {
		{"model", 'm', TP_OPT_STRING, &a->model_path, "MODEL",
		 "model file (tagplan-model/1) [the shipped demo model; give "
		 "both -m and -t or neither]",
		 0, 0, false},
		{"topology", 't', TP_OPT_STRING, &a->topo_path, "TOPO",
		 "topology file (tagplan-topology/1) [the shipped 16-GPU TAG "
		 "testbed]",
		 0, 0, false},
		{"output", 'o', TP_OPT_STRING, &a->out, "PLAN",
		 "plan file to write, atomically [stdout]", 0, 0, false},
		{"time-limit", 0, TP_OPT_DOUBLE, &a->time_limit, "S",
		 "stop searching after S seconds (0 = no limit; given "
		 "without --playouts: no playout limit)",
		 0, 1e7, false},
		{"playouts", 0, TP_OPT_INT, &a->playouts, "N",
		 "stop after N playouts (0 = no limit) [5000; none when "
		 "only --time-limit is given]",
		 0, 1e15, false},
		{"threads", 0, TP_OPT_INT, &a->threads, "N",
		 "search threads (0 = all cores; more than 1 makes the result "
		 "depend on timing)",
		 0, 1024, false},
		{"seed", 0, TP_OPT_INT, &a->seed, "N", "random seed", 0, 9e18,
		 false},
		{"no-gnn", 0, TP_OPT_FLAG, &a->no_gnn, NULL,
		 "uniform priors, no graph neural network", 0, 0, false},
		{"weights", 0, TP_OPT_STRING, &a->weights, "F",
		 "GNN weights file (from `tagplan train`), or F1,F2,... for "
		 "an ensemble [the shipped network, data/tagplan.weights]",
		 0, 0, false},
		{"gnn-any-size", 0, TP_OPT_FLAG, &a->gnn_any_size, NULL,
		 "use the GNN also on clusters larger than any it was trained "
		 "on [uniform priors there]", 0, 0, false},
		{"strategy", 's', TP_OPT_STRING, &a->strategy, "STRATEGY",
		 "write this uniform strategy's plan instead of searching "
		 "(key=value pairs as in tagplan simulate -s, e.g. "
		 "tp=8,pp=2,mb=1)",
		 0, 0, false},
		{"baseline", 0, TP_OPT_STRING, &a->baseline, "NAME",
		 "write this baseline's plan instead of searching: dp, "
		 "dp-hetero, megatron or greedy",
		 0, 0, false},
		{"compression", 0, TP_OPT_STRING, &a->compression, "MODE",
		 "gradient compression: off, lossless (sufficient-factor "
		 "broadcasting where it pays) or lossy (also fp16/PowerSGD)",
		 0, 0, false},
		{"grad-bucket-mb", 0, TP_OPT_DOUBLE, &a->bucket_mb, "MB",
		 TP_CLI_GRAD_BUCKET_HELP, 1e-3, 1e6, false},
		{"runtime", 0, TP_OPT_STRING, &a->runtime, "NAME",
		 TP_CLI_RUNTIME_HELP, 0, 0, false},
		{"dot", 0, TP_OPT_STRING, &a->dot, "F",
		 "also write the device mapping as Graphviz DOT (- = stdout, "
		 "with -o PLAN)",
		 0, 0, false},
		{"svg", 0, TP_OPT_STRING, &a->svg, "F",
		 "also write the device mapping as SVG (laid out in-process; "
		 "DOT next to it when Graphviz cannot)",
		 0, 0, false},
		{"groups", 0, TP_OPT_INT, &a->groups, "N",
		 "op groups to decide on (0 = chosen from the graph)", 0, 64,
		 false},
		{"price", 0, TP_OPT_STRING, &a->price, "TYPE=USD[,...]",
		 "price per device-hour in US dollars of device types "
		 "(user-supplied; also a topology type's price_per_hour): "
		 "the summary's cost per iteration and per million tokens",
		 0, 0, false},
		{"objective", 0, TP_OPT_STRING, &a->objective, "NAME",
		 "throughput: the fastest plan; cost: the cheapest per "
		 "iteration (prices: --price) among the plans within "
		 "--max-iter-time [throughput]",
		 0, 0, false},
		{"max-iter-time", 0, TP_OPT_DOUBLE, &a->max_iter_time, "S",
		 "with --objective cost: the iteration time in seconds a "
		 "plan must meet [none]",
		 0, 0, false},
		{"no-compare", 0, TP_OPT_FLAG, &a->no_compare, NULL,
		 "under a runtime, do not also search without its limits "
		 "(that search takes a fifth of --playouts and --time-limit "
		 "and says what the runtime costs)",
		 0, 0, false},
		{"quiet", 'q', TP_OPT_FLAG, &a->quiet, NULL,
		 "no progress line or summary on stderr (warnings and errors "
		 "still print)",
		 0, 0, false},
		{"no-timing", 0, TP_OPT_FLAG, &a->no_timing, NULL,
		 "leave the wall-clock figures (summary.search.timing) out of "
		 "the plan, so that runs with --threads 1 and a playout limit "
		 "are identical byte for byte",
		 0, 0, false},
		{NULL, 0, TP_OPT_FLAG, NULL, NULL, NULL, 0, 0, false}};
	int code;

	memset(&R, 0, sizeof(R));
	/* --time-limit counts from here: loading the inputs, building the
	 * simulator and the GNN come out of the search's share */
	R.t_start = tp_cli_monotonic_s();
	a->compression = "lossless";
	a->runtime = NULL;
	a->time_limit = 60;
	a->bucket_mb = tp_cli_grad_bucket_mb_default();
	a->playouts = 5000;
	a->seed = 1;
	a->bl = -1;
	a->max_iter_time = NAN; /* not given */
	R.gnn_note = "uniform priors";
	if (tp_opts_parse(&(struct tp_cli_doc){"plan", usage, about}, opts,
			  argc, argv, NULL, NULL, &code))
		return code;
	{
		/* --time-limit alone: that time, no playout limit */
		bool tl = false, po = false;
		for (const struct tp_opt *op = opts; op->name; op++) {
			tl |= strcmp(op->name, "time-limit") == 0 && op->seen;
			po |= strcmp(op->name, "playouts") == 0 && op->seen;
			a->bucket_given |=
				!strcmp(op->name, "grad-bucket-mb") && op->seen;
			a->comp_given |=
				!strcmp(op->name, "compression") && op->seen;
		}
		if (tl && !po)
			a->playouts = 0;
	}
	if ((code = check_args(a)))
		return code;
	tp_model_init(&R.m);
	tp_cluster_init(&R.c);
	tp_strbuf_init(&R.warn);
	tp_strbuf_init(&R.text);
	tp_search_result_init(&R.res);
	tp_search_result_init(&R.free_res);
	tp_plan_init(&R.given);
	R.given_source[0] = '\0';
	code = plan_run(&R);
	tp_plan_release(&R.given);
	tp_search_result_release(&R.res);
	tp_search_result_release(&R.free_res);
	tp_gnn_prior_free(R.gnn);
	tp_planner_free(R.pl);
	tp_strbuf_release(&R.warn);
	tp_strbuf_release(&R.text);
	tp_cluster_release(&R.c);
	tp_model_release(&R.m);
	return code;
}
