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
#include "core/sha256.h"
#include "core/strbuf.h"
#include "gnn/provider.h"
#include "io/io.h"
#include "inputs.h"
#include "render/render.h"
#include "table.h"
#include "search/search.h"
#include "search/planner.h"
#include "sim/sim.h"

static const char usage[] =
	"[-m MODEL -t TOPO] [-o PLAN] [--time-limit S]\n"
	"                    [--playouts N] [--threads N] [--seed N] [--no-gnn]\n"
	"                    [--weights F] [--baseline NAME] [--groups N]\n"
	"                    [--compression off|lossless|lossy] "
	"[--grad-bucket-mb MB]\n"
	"                    [--dot F] [--svg F] [-q]";

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
	"first; with\n"
	"--threads 1 and a playout limit reached before the time limit, the "
	"output is\n"
	"the same byte for byte from run to run (wall-clock figures only "
	"under\n"
	"summary.search.timing).  Ctrl-C writes the best plan so far and "
	"exits 130.\n"
	"--baseline NAME writes that baseline's plan instead of searching.  "
	"Exit 1\n"
	"when nothing fits in memory (the closest plan is written, with why).";

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* ------------------------------------------------------------------ */
/* progress bar (stderr, only on a terminal)                           */

struct bar {
	bool on;
	bool drawn;
	double dp_time;
};

static void draw_bar(void *ctx, const struct tp_search_progress *p)
{
	struct bar *b = ctx;
	double frac = 0, left = -1;
	char best[64] = "-";
	int width = 24, fill;

	if (!b->on)
		return;
	if (p->time_limit_s > 0) {
		frac = p->elapsed_s / p->time_limit_s;
		left = p->time_limit_s - p->elapsed_s;
	}
	if (p->playout_limit > 0) {
		double f = (double)p->playouts / (double)p->playout_limit;
		if (f > frac) {
			frac = f;
			if (p->elapsed_s > 0 && p->playouts > 0)
				left = p->elapsed_s * (1 - f) / f;
		}
	}
	if (frac > 1)
		frac = 1;
	fill = (int)(frac * width + 0.5);
	if (p->have_best)
		snprintf(best, sizeof(best), "%.4g s%s", p->best_time_s,
			 p->best_feasible ? "" : " (does not fit)");
	fprintf(stderr, "\r\033[K[%.*s%.*s] %3.0f%%  %-9s best %s",
		fill, "########################", width - fill,
		"........................", frac * 100,
		p->phase ? p->phase : "", best);
	if (p->have_best && p->best_feasible && b->dp_time > 0)
		fprintf(stderr, " (%.2fx dp)", b->dp_time / p->best_time_s);
	if (left >= 0)
		fprintf(stderr, "  %.0f s left", left);
	if (p->elapsed_s > 0.5)
		fprintf(stderr, "  %.0f playouts/s",
			(double)p->playouts / p->elapsed_s);
	fflush(stderr);
	b->drawn = true;
}

static void clear_bar(struct bar *b)
{
	if (b->on && b->drawn) {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
	}
	b->drawn = false;
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
	st = tp_file_read(path, 0, &data, &len, err);
	if (st) {
		tp_error_set_file(err, path);
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
/* summary                                                             */

static void fill_summary(struct tp_plan *plan, const struct tp_report *r,
			 const struct tp_search_result *res,
			 const struct tp_search_options *so, bool gnn,
			 const char *weights, const char *model_file,
			 const char *topo_file, const char *msha,
			 const char *tsha, const char *mpath_given,
			 const char *tpath_given, const struct tp_cluster *c)
{
	struct tp_plan_summary *s = &plan->summary;
	uint32_t nd = (uint32_t)c->devices.n;

	tp_plan_summary_release(s);
	s->valid = true;
	s->feasible = r->feasible;
	s->iteration_time_s = r->iteration_time_s;
	s->throughput_samples_per_s = r->throughput_samples_per_s;
	s->tokens_per_s = r->tokens_per_s;
	s->mfu = r->mfu;
	s->tflops_per_device = r->tflops_per_device;
	if (!r->feasible)
		snprintf(s->infeasible_reason, sizeof(s->infeasible_reason),
			 "%s", r->reason[0] ? r->reason : "out of memory");
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
	s->gnn = gnn;
	snprintf(s->weights, sizeof(s->weights), "%s", weights ? weights : "");
	s->search_seconds = res->seconds;
	s->playouts_per_s =
		res->seconds > 0 ? (double)res->playouts / res->seconds : 0;
	snprintf(s->version, sizeof(s->version), "%s", TP_VERSION);
	snprintf(s->model_file, sizeof(s->model_file), "%s", model_file);
	snprintf(s->topology_file, sizeof(s->topology_file), "%s", topo_file);
	snprintf(s->model_sha256, sizeof(s->model_sha256), "%s", msha);
	snprintf(s->topology_sha256, sizeof(s->topology_sha256), "%s", tsha);
	/* the paths as given, for render/check/export without -m/-t; a path
	   too long to keep whole is not recorded (those commands then ask
	   for -m/-t) */
	if (mpath_given && strlen(mpath_given) < sizeof(s->model_path))
		snprintf(s->model_path, sizeof(s->model_path), "%s",
			 mpath_given);
	if (tpath_given && strlen(tpath_given) < sizeof(s->topology_path))
		snprintf(s->topology_path, sizeof(s->topology_path), "%s",
			 tpath_given);
}

/* One line per op group (at most 8): its ops, devices, degrees, sync,
 * recomputation and compression; then the compression summary. */
static void print_structure(FILE *f, const struct tp_plan *p,
			    const struct tp_model *m, const struct tp_cluster *c)
{
	uint32_t shown = 0;

	fprintf(f, "  plan           %zu group%s, %u micro-batch%s, %s, ZeRO %u",
		p->groups.n, p->groups.n == 1 ? "" : "s", p->micro_batches,
		p->micro_batches == 1 ? "" : "es",
		tp_schedule_name(p->schedule), p->zero);
	for (uint32_t g = 0; g < p->groups.n; g++)
		if (p->groups.v[g].dp > 1 && p->grad_bucket_bytes > 0) {
			fprintf(f, ", %.4g MB gradient buckets",
				p->grad_bucket_bytes / 1e6);
			break;
		}
	fputc('\n', f);
	for (uint32_t g = 0; g < p->groups.n && shown < 8; g++) {
		const struct tp_plan_group *gr = &p->groups.v[g];
		const uint32_t *ops = tp_plan_group_ops(p, g);
		const uint32_t *d = tp_plan_group_devs(p, g);
		uint32_t types[8] = {0}, nt = 0, cnt[8] = {0};
		char devs[160] = "";
		size_t used = 0;
		for (uint32_t k = 0; k < gr->n_devices; k++) {
			uint32_t t = c->devices.v[d[k]].type, i;
			for (i = 0; i < nt; i++)
				if (types[i] == t)
					break;
			if (i == nt && nt < 8)
				types[nt++] = t;
			if (i < 8)
				cnt[i]++;
		}
		for (uint32_t i = 0; i < nt && used < sizeof(devs); i++) {
			int n = snprintf(devs + used, sizeof(devs) - used,
					 "%s%ux %s", i ? " + " : "", cnt[i],
					 c->types.v[types[i]].name);
			if (n > 0)
				used += (size_t)n;
		}
		fprintf(f, "  %-15s%s..%s on %s: dp=%u tp=%u %s%s%s",
			shown ? "" : "groups", m->ops.v[ops[0]].name,
			m->ops.v[ops[gr->n_ops - 1]].name, devs, gr->dp, gr->tp,
			tp_sync_name(gr->sync),
			gr->recompute ? ", recompute " : "",
			gr->recompute ? tp_recompute_name(gr->recompute) : "");
		/* gradient compression (sfb.h); lossy always marked */
		if (gr->n_sfb)
			fprintf(f, ", SFB on %u op%s", gr->n_sfb,
				gr->n_sfb == 1 ? "" : "s");
		if (gr->lossy == TP_LOSSY_POWERSGD)
			fprintf(f, ", LOSSY PowerSGD rank %u gradients",
				gr->powersgd_rank);
		else if (gr->lossy != TP_LOSSY_NONE)
			fprintf(f, ", LOSSY %s gradients",
				tp_lossy_name(gr->lossy));
		fputc('\n', f);
		shown++;
	}
	if (p->groups.n > shown)
		fprintf(f, "                 ... %zu more groups\n",
			p->groups.n - shown);
	{
		uint32_t nsfb = 0, nlossy = 0;
		double saved = 0;
		for (uint32_t g = 0; g < p->groups.n; g++) {
			nsfb += p->groups.v[g].n_sfb;
			saved += p->groups.v[g].sfb_saved_bytes;
			nlossy += p->groups.v[g].lossy != TP_LOSSY_NONE;
		}
		fprintf(f, "  compression    %s",
			tp_compression_name(p->compression));
		if (nsfb)
			fprintf(f,
				": sufficient-factor broadcasting on %u op%s, "
				"%.3g GB less traffic per iteration",
				nsfb, nsfb == 1 ? "" : "s", saved / 1e9);
		else if (p->compression != TP_COMPRESSION_OFF && !nlossy)
			fprintf(f, ": none pays off for this plan");
		if (nlossy)
			fprintf(f,
				"%sLOSSY gradients in %u group%s (changes "
				"the training numerics)",
				nsfb ? "; " : ": ", nlossy,
				nlossy == 1 ? "" : "s");
		fputc('\n', f);
	}
}

struct explain_ctx {
	const struct tp_sim *sim;
	struct tp_sim_scratch *scratch;
};

/* The simulator as the explanation's evaluator (table.h). */
static enum tp_status explain_eval(void *ctx, const struct tp_plan *variant,
				   struct tp_report *out, struct tp_error *err)
{
	struct explain_ctx *e = ctx;
	return tp_sim_run(e->sim, variant, e->scratch, out, NULL, err);
}

/*
 * The human summary on stderr: the header, the table of table.h
 * (stages, device types, headline figures), why nothing fits when so
 * (with the smallest change, confirmed by the simulator), then the
 * groups, compression, baselines and search statistics.
 */
static void print_human(const struct tp_search_result *res,
			const struct tp_plan *p, const struct tp_model *m,
			const struct tp_cluster *c, const struct tp_sim *sim,
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
		struct explain_ctx ec = {sim, sim ? tp_sim_scratch_new(sim)
						  : NULL};
		if (tp_cli_explain(p, m, c, r, ec.scratch ? explain_eval
							     : NULL,
				      &ec, &t, &err) == TP_OK)
			fputs(tp_strbuf_cstr(&t), stderr);
		else
			fprintf(stderr, "does not fit: %s\n",
				r->reason[0] ? r->reason : "out of memory");
		tp_sim_scratch_free(ec.scratch);
	}
	tp_strbuf_release(&t);
	/* the rest through a buffer, wrapped at 80 columns */
	{
		char *buf = NULL, skips[128] = "";
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		if (!f) {
			f = stderr;
		}
		print_structure(f, p, m, c);
		if (res->lower_bound_s > 0 && r->iteration_time_s > 0)
			fprintf(f,
				"  lower bound    %.4g s (all devices computing at "
				"peak): this plan is at %.0f%%\n",
				res->lower_bound_s,
				100 * res->lower_bound_s / r->iteration_time_s);
		fprintf(f, "  baselines      ");
		for (int b = 0, first = 1; b < TP_BASELINE_COUNT; b++) {
			const struct tp_baseline_result *br = &res->baselines[b];
			fprintf(f, "%s%s ", first ? "" : ", ",
				tp_baseline_name((enum tp_baseline)b));
			first = 0;
			if (!br->available)
				fprintf(f, "n/a");
			else if (!br->feasible)
				fprintf(f, "does not fit");
			else if (r->feasible && r->iteration_time_s > 0)
				fprintf(f, "%.4g s (%.2fx)", br->iteration_time_s,
					br->iteration_time_s / r->iteration_time_s);
			else
				fprintf(f, "%.4g s", br->iteration_time_s);
		}
		fputc('\n', f);
		if (res->gain_skips)
			snprintf(skips, sizeof(skips),
				 ", %llu single changes not simulated: the "
				 "GNN predicted them at least %.0f%% slower",
				 (unsigned long long)res->gain_skips,
				 100 * TP_SEARCH_GAIN_SKIP);
		fprintf(f,
			"  search         %llu playouts, %llu simulations (%llu more "
			"settled by a lower bound%s) in %.2f s "
			"(%.0f playouts/s), %u thread%s, seed %llu, %u op groups, %s\n",
			(unsigned long long)res->playouts,
			(unsigned long long)res->simulations,
			(unsigned long long)res->bounded, skips, res->seconds,
			res->seconds > 0 ? (double)res->playouts / res->seconds : 0,
			threads, threads == 1 ? "" : "s", (unsigned long long)seed,
			res->n_groups, priors);
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

static double monotonic_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int cmd_plan(int argc, char **argv)
{
	const char *model_path = NULL, *topo_path = NULL, *out = NULL;
	const char *baseline = NULL, *compression = "lossless";
	const char *weights = NULL, *dot = NULL, *svg = NULL;
	double time_limit = 60, bucket_mb = tp_cli_grad_bucket_mb_default();
	long long playouts = 5000, threads = 0, seed = 1, groups = 0;
	bool no_gnn = false, quiet = false;
	/* --time-limit counts from here: loading the inputs, building the
	 * simulator and the GNN come out of the search's share. */
	const double t_start = monotonic_s();
	struct tp_opt opts[] = {
		{"model", 'm', TP_OPT_STRING, &model_path, "MODEL",
		 "model file (tagplan-model/1) [the shipped demo model; give "
		 "both -m and -t or neither]",
		 0, 0, false},
		{"topology", 't', TP_OPT_STRING, &topo_path, "TOPO",
		 "topology file (tagplan-topology/1) [the shipped 16-GPU TAG "
		 "testbed]",
		 0, 0, false},
		{"output", 'o', TP_OPT_STRING, &out, "PLAN",
		 "plan file to write, atomically [stdout]", 0, 0, false},
		{"time-limit", 0, TP_OPT_DOUBLE, &time_limit, "S",
		 "stop searching after S seconds (0 = no limit)", 0, 1e7,
		 false},
		{"playouts", 0, TP_OPT_INT, &playouts, "N",
		 "stop after N tree-search playouts (0 = no limit)", 0, 1e15,
		 false},
		{"threads", 0, TP_OPT_INT, &threads, "N",
		 "search threads (0 = all cores; more than 1 makes the result "
		 "depend on timing)",
		 0, 1024, false},
		{"seed", 0, TP_OPT_INT, &seed, "N", "random seed", 0, 9e18,
		 false},
		{"no-gnn", 0, TP_OPT_FLAG, &no_gnn, NULL,
		 "uniform priors, no graph neural network", 0, 0, false},
		{"weights", 0, TP_OPT_STRING, &weights, "F",
		 "GNN weights file (from `tagplan train`), or F1,F2,... for "
		 "an ensemble [the shipped pair, data/tagplan.weights and "
		 "data/tagplan-2.weights]",
		 0, 0, false},
		{"baseline", 0, TP_OPT_STRING, &baseline, "NAME",
		 "write this baseline's plan instead of searching: dp, "
		 "dp-hetero, megatron or greedy",
		 0, 0, false},
		{"compression", 0, TP_OPT_STRING, &compression, "MODE",
		 "gradient compression: off, lossless (sufficient-factor "
		 "broadcasting where it pays) or lossy (also fp16/PowerSGD)",
		 0, 0, false},
		{"grad-bucket-mb", 0, TP_OPT_DOUBLE, &bucket_mb, "MB",
		 TP_CLI_GRAD_BUCKET_HELP, 1e-3, 1e6, false},
		{"dot", 0, TP_OPT_STRING, &dot, "F",
		 "also write the device mapping as Graphviz DOT (- = stdout, "
		 "with -o PLAN)",
		 0, 0, false},
		{"svg", 0, TP_OPT_STRING, &svg, "F",
		 "also write the device mapping as SVG (laid out in-process; "
		 "DOT next to it when Graphviz cannot)",
		 0, 0, false},
		{"groups", 0, TP_OPT_INT, &groups, "N",
		 "op groups to decide on (0 = chosen from the graph)", 0, 64,
		 false},
		{"quiet", 'q', TP_OPT_FLAG, &quiet, NULL,
		 "no human summary on stderr", 0, 0, false},
		{NULL, 0, TP_OPT_FLAG, NULL, NULL, NULL, 0, 0, false}};
	char mpath[4096], tpath[4096], msha[65], tsha[65];
	struct tp_model m;
	struct tp_cluster c;
	struct tp_planner *pl = NULL;
	struct tp_planner_options po;
	struct tp_search_options so;
	struct tp_search_result res;
	struct tp_strbuf warn, text;
	struct tp_error err;
	struct bar bar = {false, false, 0};
	struct sigaction sa, old_int, old_term;
	struct tp_prior_provider prior;
	struct tp_gnn_prior *gnn = NULL;
	struct tp_render_gvc *gvc = NULL;
	const char *gnn_note = "uniform priors";
	int code, bl = -1, comp;
	bool demo = false;
	enum tp_status st;

	if (tp_opts_parse("plan", usage, about, opts, argc, argv, NULL, NULL,
			  &code))
		return code;
	if (baseline && (bl = tp_baseline_parse(baseline)) < 0)
		return tp_cli_usage_error("plan",
					  "--baseline %s: expected dp, "
					  "dp-hetero, megatron or greedy",
					  baseline);
	if ((comp = tp_compression_parse(compression)) < 0)
		return tp_cli_usage_error("plan",
					  "--compression %s: expected off, "
					  "lossless or lossy",
					  compression);
	if (weights && no_gnn)
		return tp_cli_usage_error("plan",
					  "--weights and --no-gnn contradict "
					  "each other; give one");
	if (!time_limit && !playouts)
		return tp_cli_usage_error("plan",
					  "--time-limit 0 and --playouts 0: "
					  "the search needs one limit");
	if ((model_path != NULL) != (topo_path != NULL))
		return tp_cli_usage_error(
			"plan", "%s is missing: give both -m MODEL and -t TOPO, "
				"or neither to plan the shipped demo",
			model_path ? "-t TOPO" : "-m MODEL");
	if (dot && svg && strcmp(dot, svg) == 0)
		return tp_cli_usage_error("plan",
					  "--dot and --svg name the same file");
	if (svg && strcmp(svg, "-") == 0)
		return tp_cli_usage_error("plan",
					  "--svg -: give a file name (`tagplan "
					  "render -p PLAN -o -` writes DOT to "
					  "stdout)");
	if (dot && strcmp(dot, "-") == 0 && (!out || strcmp(out, "-") == 0))
		return tp_cli_usage_error("plan",
					  "--dot -: stdout carries the plan; "
					  "give -o PLAN to write the plan to a "
					  "file");
	if (out && ((dot && strcmp(out, dot) == 0) ||
		    (svg && strcmp(out, svg) == 0)))
		return tp_cli_usage_error("plan", "-o %s is also a picture "
						  "(--dot/--svg): give the "
						  "plan and the pictures "
						  "different names",
					  out);

	tp_error_clear(&err);
	if (!model_path) {
		if (tp_data_path("demo-model.json", mpath, sizeof(mpath),
				 &err) ||
		    tp_data_path("tag-testbed.json", tpath, sizeof(tpath),
				 &err))
			return tp_cli_fail(&err);
		model_path = mpath;
		topo_path = tpath;
		demo = true;
	}
	tp_model_init(&m);
	tp_cluster_init(&c);
	tp_strbuf_init(&warn);
	tp_strbuf_init(&text);
	tp_search_result_init(&res);
	if ((st = load_input(model_path, true, &m, NULL, msha, &warn, &err)) ||
	    (st = load_input(topo_path, false, NULL, &c, tsha, &warn, &err))) {
		tp_cli_print_warnings("plan", &warn);
		code = tp_cli_fail(&err);
		goto done;
	}
	tp_cli_print_warnings("plan", &warn);
	if (demo && !quiet)
		fprintf(stderr,
			"tagplan plan: no -m/-t given: planning the shipped "
			"demo model (%s) on the shipped %s topology (%zu "
			"devices)\n",
			m.name, c.name && *c.name ? c.name : "demo",
			c.devices.n);

	tp_planner_options_default(&po);
	po.sim.grad_bucket_bytes = bucket_mb * 1e6;
	pl = tp_planner_new(&m, &c, &po, &err);
	if (!pl) {
		code = tp_cli_fail(&err);
		goto done;
	}
	/* the GNN: --weights F, else the shipped default weights when there
	   are any, else uniform priors */
	if (!no_gnn) {
		struct tp_error gerr;
		tp_error_clear(&gerr);
		st = tp_gnn_prior_load_default(weights, &prior, &gnn, &gerr);
		if (st && weights) {
			code = tp_cli_fail(&gerr);
			goto done;
		}
		if (st == TP_EIO) {
			gnn_note = "no trained GNN weights shipped: uniform "
				   "priors";
		} else if (st) {
			char buf[1200];
			fprintf(stderr,
				"tagplan plan: warning: default GNN weights "
				"unusable (%s); searching with uniform "
				"priors\n",
				tp_error_format(&gerr, buf, sizeof(buf)));
			gnn_note = "default GNN weights unusable: uniform "
				   "priors";
		}
	} else {
		gnn_note = "--no-gnn: uniform priors";
	}

	tp_search_options_default(&so);
	so.seed = (uint64_t)seed;
	if (threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		threads = n > 0 ? n : 1;
	}
	so.threads = (uint32_t)threads;
	so.time_limit_s = time_limit;
	if (time_limit > 0) {
		/* what loading took; the search keeps at least a tenth */
		double spent = monotonic_s() - t_start;
		so.time_limit_s = fmax(time_limit - spent, 0.1 * time_limit);
	}
	so.playouts = (uint64_t)playouts;
	so.baseline = bl;
	so.compression = (enum tp_compression)comp;
	so.groups = (uint32_t)groups;
	so.prior = gnn ? &prior : NULL;
	so.stop = &stop_flag;
	bar.on = !quiet && isatty(STDERR_FILENO);
	so.progress = draw_bar;
	so.progress_ctx = &bar;

	stop_flag = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C kills */
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	st = tp_planner_run(pl, &so, &res, &err);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	clear_bar(&bar);
	if (st) {
		code = tp_cli_fail(&err);
		goto done;
	}
	if (res.baselines[TP_BASELINE_DP].feasible)
		bar.dp_time = res.baselines[TP_BASELINE_DP].iteration_time_s;

	fill_summary(&res.plan, &res.report, &res, &so, gnn != NULL,
		     gnn ? tp_gnn_prior_source(gnn) : NULL,
		     base_name(model_path), base_name(topo_path), msha, tsha,
		     demo ? NULL : model_path, demo ? NULL : topo_path, &c);
	tp_plan_write(&res.plan, &m, &c, &text);
	if (text.failed) {
		tp_error_set(&err, TP_ENOMEM, "out of memory writing the plan");
		code = tp_cli_fail(&err);
		goto done;
	}
	if (tp_file_write_atomic(out ? out : "-", text.buf, text.len, &err)) {
		code = tp_cli_fail(&err);
		goto done;
	}
	if (!quiet)
		print_human(&res, &res.plan, &m, &c, tp_planner_sim(pl),
			    gnn ? "GNN priors and gains" : gnn_note, so.threads,
			    so.seed);
	/* pictures of the device mapping, with one Graphviz context for
	   all of them (render.h: a second context after freeing the first
	   reads freed memory in Graphviz 2.43's pango plugin) */
	if (svg && !(gvc = tp_render_gvc_new())) {
		tp_error_set(&err, TP_ENOMEM, "out of memory");
		code = tp_cli_fail(&err);
		goto done;
	}
	for (int k = 0; k < 2; k++) {
		const char *path = k == 0 ? dot : svg;
		struct tp_render_options ro;
		char written[4096];
		if (!path)
			continue;
		tp_render_options_default(&ro);
		ro.gvc = gvc;
		written[0] = 0;
		if (tp_render_plan_file(&res.plan, &m, &c, &res.report, &ro,
					path,
					k == 0 ? TP_RENDER_DOT : TP_RENDER_SVG,
					written, sizeof(written), &warn,
					&err)) {
			tp_cli_print_warnings("plan", &warn);
			code = tp_cli_fail(&err);
			goto done;
		}
		tp_cli_print_warnings("plan", &warn);
		if (!quiet)
			fprintf(stderr, "tagplan plan: wrote %s\n", written);
	}
	if (!quiet && out)
		fprintf(stderr, "tagplan plan: wrote %s\n", out);
	if (res.interrupted) {
		fprintf(stderr, "tagplan plan: interrupted; wrote the best "
				"plan found so far\n");
		code = TP_EXIT_INTERRUPTED;
	} else if (!res.report.feasible) {
		fprintf(stderr,
			"tagplan plan: nothing fits: wrote the closest plan "
			"(%s)\n",
			quiet ? (res.report.reason[0] ? res.report.reason
						      : "out of memory")
			      : "why, and what would fit: above");
		code = TP_EXIT_CHECK;
	} else {
		code = TP_EXIT_OK;
	}
done:
	tp_render_gvc_free(gvc);
	tp_search_result_release(&res);
	tp_gnn_prior_free(gnn);
	tp_planner_free(pl);
	tp_strbuf_release(&warn);
	tp_strbuf_release(&text);
	tp_cluster_release(&c);
	tp_model_release(&m);
	return code;
}
