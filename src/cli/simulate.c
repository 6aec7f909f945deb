/*
 * simulate.c - `tagplan simulate`: one training iteration of a plan (a
 * plan file or a strategy string) on a model and topology; the report as
 * JSON on stdout (or -o), a human summary on stderr, optionally a Chrome
 * trace.  Exit 0 when the plan fits, 1 when it does not (the report is
 * still written), 2 for bad input, 3 for I/O failures.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/report.h"
#include "core/runtime.h"
#include "core/strbuf.h"
#include "io/io.h"
#include "inputs.h"
#include "table.h"
#include "sim/sim.h"

static const char usage[] =
	"-m MODEL -t TOPO -s STRATEGY [-o REPORT] [--trace F]\n"
	"                        [--grad-bucket-mb MB] [--runtime NAME] [--strict] [-q]\n"
	"       tagplan simulate -p PLAN [-m MODEL] [-t TOPO] [-o REPORT] "
	"[--trace F]\n"
	"                        [--grad-bucket-mb MB] [--runtime NAME] [--strict] [-q]";

static const char about[] =
	"Simulate one training iteration and write a tagplan-report/1 (stdout\n"
	"without -o): feasible, iteration_time_s, throughput_samples_per_s,\n"
	"tokens_per_s, tflops_per_device, mfu, bubble_fraction, per device\n"
	"memory (with its breakdown) and compute/communication/idle time, and\n"
	"the links that carried traffic.  A summary goes to stderr: per stage\n"
	"devices, dp x tp, layers, share of the FLOP and busy %; per device type\n"
	"busy % and peak memory; and when the plan does not fit, the device, what\n"
	"fills its memory and the smallest change that fits (re-simulated).\n"
	"With -p and without -m/-t, the files `tagplan plan` recorded in the plan\n"
	"are used (stderr says which).\n"
	"\n"
	"STRATEGY is key=value pairs separated by commas (all optional):\n"
	"  tp, pp, dp   tensor/pipeline/data-parallel degrees [1, 1, devices/(tp*pp)]\n"
	"  mb           micro-batch size per replica, samples [1]\n"
	"  gbs          global batch [the model's]\n"
	"  schedule     gpipe | 1f1b | interleaved:V | zb-h1 [1f1b]\n"
	"  recompute    none | selective | full [none]\n"
	"  sp           sequence parallelism on | off [off]\n"
	"  zero         ZeRO stage 0..3 [0]\n"
	"  sync         ring | hierarchical | ps | auto [auto: hierarchical\n"
	"               when a replica set spans nodes]\n"
	"  first_layers, last_layers  layers of the first / last pipeline\n"
	"               stage [even]\n"
	"  more keys (tagplan(1), STRATEGIES): cp (context parallelism),\n"
	"               ep, etp, imbalance, capacity (mixture of experts),\n"
	"               account_embedding, account_loss (pipeline split)\n"
	"e.g. -s tp=8,pp=8,dp=16,mb=1,schedule=interleaved:3,recompute=selective\n"
	"\n"
	"--trace writes Chrome trace-event JSON (open it in Perfetto or\n"
	"chrome://tracing): one track per device, and per link one per\n"
	"concurrent flow (slices never overlap on a track); large traces keep\n"
	"one replica per stage (--trace-replicas).  Exit 0 when\n"
	"the plan fits, 1 when some device runs out of memory (the report says\n"
	"which and why), 2 for bad input.  The cost model and what it leaves\n"
	"out: the project's src/sim/README.";

struct eval_ctx {
	const struct tp_sim *sim;
	struct tp_sim_scratch *scratch;
};

static enum tp_status eval(void *ctx, const struct tp_plan *variant,
			   struct tp_report *out, struct tp_error *err)
{
	struct eval_ctx *e = ctx;
	return tp_sim_run(e->sim, variant, e->scratch, out, NULL, err);
}

/* The report and the trace, together or not at all. */
static enum tp_status write_outputs(const char *out,
				    const struct tp_strbuf *doc,
				    const char *trace_path,
				    const struct tp_strbuf *trace,
				    struct tp_error *err)
{
	const struct tp_output outs[] = {
		{out ? out : "-", doc->buf, doc->len},
		{trace_path, trace->buf ? trace->buf : "", trace->len}};

	return tp_file_write_set(outs, trace_path ? 2 : 1, err);
}

/* Say that the trace keeps one replica of each kind per stage. */
static void trace_note(const char *replicas)
{
	fprintf(stderr,
		"tagplan simulate: the trace shows one replica of each kind "
		"per stage (%s; --trace-replicas all shows every one)\n",
		strcmp(replicas, "one") ? "every replica would take over "
					  "100,000 slices"
					: "--trace-replicas one");
}

/* An output that is one of the inputs (recorded ones too): exit 2; one
 * that cannot be written: its exit code (tp_cli_check_outputs). */
static int check_io(const char *plan_path, const struct tp_inputs *in,
		    const char *model, const char *topo, const char *out,
		    const char *trace_path)
{
	const struct tp_cli_file ins[] = {
		{"-m", plan_path ? in->model_path : model},
		{"-t", plan_path ? in->topology_path : topo},
		{"-p", plan_path},
		{NULL, NULL}};
	const struct tp_cli_file outs[] = {
		{"-o", out ? out : tp_cli_default_stdout},
		{"--trace", trace_path},
		{NULL, NULL}};

	if (tp_cli_json_output("simulate", "-o", out, "the simulation report",
			       "a plan's picture comes from tagplan render -p "
			       "PLAN -o FILE.svg; give -o a .json name") ||
	    tp_cli_json_output("simulate", "--trace", trace_path,
			       "the Chrome/Perfetto trace",
			       "give it a .json name and open it in "
			       "ui.perfetto.dev"))
		return TP_EXIT_USAGE;
	return tp_cli_check_outputs("simulate", ins, outs);
}

/* What the command line asked for. */
struct sim_args {
	const char *model, *topo, *plan_path, *strategy, *out, *trace_path,
		*runtime, *replicas;
	bool strict, quiet;
	double bucket_mb;
};

/* One run of the command: its inputs, the simulator and its outputs. */
struct sim_run {
	struct sim_args a;
	struct tp_load_options lo;
	struct tp_runtime rt;
	struct tp_sim_options so;
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_inputs in;
	struct tp_model *mp;     /* &m, or in.model with -p */
	struct tp_cluster *cp;   /* &c, or in.cluster with -p */
	struct tp_plan *pp;      /* &p, or in.plan with -p */
	struct tp_report r;
	struct tp_strbuf warn, doc, trace, text;
	struct tp_error err;
	struct tp_sim *sim;
	struct tp_sim_scratch *scratch;
	char mship[2048], tship[2048];
};

/* The option table; nonzero (and *code) when the command ends here. */
/* --trace-replicas' default, told apart by address from a value given */
static const char replicas_default[] = "auto";

static int parse_args(struct sim_args *a, int argc, char **argv, int *code)
{
	struct tp_opt opts[] = {
		{"model", 'm', TP_OPT_STRING, &a->model, "MODEL",
		 "model file (tagplan-model/1); - reads stdin [with -p: the "
		 "one recorded in the plan]",
		 0, 0, false},
		{"topology", 't', TP_OPT_STRING, &a->topo, "TOPO",
		 "topology file (tagplan-topology/1) [with -p: the one "
		 "recorded in the plan]",
		 0, 0, false},
		{"plan", 'p', TP_OPT_STRING, &a->plan_path, "PLAN",
		 "plan file (tagplan-plan/1); - reads stdin", 0, 0, false},
		{"strategy", 's', TP_OPT_STRING, &a->strategy, "STRATEGY",
		 "uniform 3D strategy string (see above)", 0, 0, false},
		{"output", 'o', TP_OPT_STRING, &a->out, "REPORT",
		 "write the report here instead of stdout", 0, 0, false},
		{"trace", 0, TP_OPT_STRING, &a->trace_path, "F",
		 "write a Chrome trace-event JSON file", 0, 0, false},
		{"trace-replicas", 0, TP_OPT_STRING, &a->replicas, "WHICH",
		 "replicas of a stage the trace shows: all, one (of each "
		 "kind) or auto (all up to 100,000 device slices, about 17 MB, "
		 "else one; stderr says so) [auto]",
		 0, 0, false},
		{"grad-bucket-mb", 0, TP_OPT_DOUBLE, &a->bucket_mb, "MB",
		 "gradient bucket of the runtime's data-parallel sync, MB "
		 "(10^6 bytes), instead of the plan's [the plan's; with -s "
		 "the runtime's (none: 26.2144, PyTorch DDP's 25 MiB)]",
		 1e-3, 1e6, false},
		{"runtime", 0, TP_OPT_STRING, &a->runtime, "NAME",
		 "the training runtime to simulate under (a profile of "
		 "data/runtimes or a tagplan-runtime/1 file; none = the "
		 "simulator's defaults); with -p another runtime than the "
		 "plan's also takes that runtime's gradient bucket [the "
		 "plan's; with -s: plan's default, megatron-core for a "
		 "transformer, ddp for another model]",
		 0, 0, false},
		{"strict", 0, TP_OPT_FLAG, &a->strict, NULL,
		 "unknown fields in the input files are errors", 0, 0, false},
		{"quiet", 'q', TP_OPT_FLAG, &a->quiet, NULL, TP_CLI_QUIET_HELP,
		 0, 0, false},
		{NULL, 0, TP_OPT_FLAG, NULL, NULL, NULL, 0, 0, false}};

	memset(a, 0, sizeof(*a));
	a->replicas = replicas_default;
	return tp_opts_parse(&(struct tp_cli_doc){"simulate", usage, about},
			     opts, argc, argv, NULL, NULL, code);
}

/* Combinations the option table cannot refuse: exit 2 (or 0 if fine). */
static int check_args(const struct sim_args *a)
{
	static const char *const replicas[] = {"all", "one", "auto"};

	if (a->replicas != replicas_default && !a->trace_path)
		return tp_cli_usage_error("simulate",
					  "--trace-replicas %s shapes the trace: "
					  "give --trace F too, or leave it out",
					  a->replicas);
	if (strcmp(a->replicas, "auto") && strcmp(a->replicas, "all") &&
	    strcmp(a->replicas, "one"))
		return tp_cli_bad_choice("simulate", "--trace-replicas",
					 a->replicas, replicas, 3);
	if (!a->plan_path == !a->strategy)
		return tp_cli_usage_error("simulate",
					  "give exactly one of -p PLAN and -s "
					  "STRATEGY");
	if (a->strategy && (!a->model || !a->topo))
		return tp_cli_usage_error("simulate",
					  "-s STRATEGY needs -m MODEL and -t "
					  "TOPO (a plan file records its own "
					  "files; a strategy does not)");
	if ((a->model && !strcmp(a->model, "-")) +
		    (a->topo && !strcmp(a->topo, "-")) +
		    (a->plan_path && !strcmp(a->plan_path, "-")) >
	    1)
		return tp_cli_usage_error("simulate",
					  "only one input can come from stdin");
	return 0;
}

static void run_init(struct sim_run *R)
{
	tp_error_clear(&R->err);
	tp_load_options_default(&R->lo);
	R->lo.strict = R->a.strict;
	tp_strbuf_init(&R->warn);
	tp_strbuf_init(&R->doc);
	tp_strbuf_init(&R->trace);
	tp_strbuf_init(&R->text);
	R->lo.warnings = &R->warn;
	tp_model_init(&R->m);
	tp_cluster_init(&R->c);
	tp_plan_init(&R->p);
	tp_inputs_init(&R->in);
	tp_report_init(&R->r);
	R->mp = &R->m;
	R->cp = &R->c;
	R->pp = &R->p;
	R->sim = NULL;
	R->scratch = NULL;
}

static void run_release(struct sim_run *R)
{
	tp_sim_scratch_free(R->scratch);
	tp_sim_free(R->sim);
	tp_report_release(&R->r);
	tp_plan_release(&R->p);
	tp_cluster_release(&R->c);
	tp_model_release(&R->m);
	tp_inputs_release(&R->in);
	tp_strbuf_release(&R->warn);
	tp_strbuf_release(&R->doc);
	tp_strbuf_release(&R->trace);
	tp_strbuf_release(&R->text);
}

/* -p: the plan with its model and topology (recorded ones when -m/-t are
 * not given; kind mix-ups explained). */
static enum tp_status load_plan(struct sim_run *R)
{
	struct tp_strbuf used;

	R->in.strict = R->a.strict;
	if (tp_inputs_load(&R->in, R->a.plan_path, R->a.model, R->a.topo,
			   &R->warn, &R->err) != TP_OK)
		return R->err.status;
	R->mp = &R->in.model;
	R->cp = &R->in.cluster;
	R->pp = &R->in.plan;
	tp_strbuf_init(&used);
	tp_inputs_describe(&R->in, &used);
	if (used.len && !R->a.quiet)
		fprintf(stderr, "tagplan simulate: %s", tp_strbuf_cstr(&used));
	tp_strbuf_release(&used);
	return TP_OK;
}

/* -s: the model and topology files (shipped names too) and the plan of
 * the strategy string. */
static enum tp_status load_strategy(struct sim_run *R)
{
	struct sim_args *a = &R->a;
	struct tp_error *err = &R->err;

	/* -m llama-2-7b: the shipped data/models/llama-2-7b.json */
	if (tp_inputs_load_named(&a->model, R->mship, sizeof(R->mship),
				 &R->lo, &R->m, NULL, err) != TP_OK) {
		tp_inputs_hint_swap(a->model, a->topo, err);
		return err->status;
	}
	if (tp_inputs_load_named(&a->topo, R->tship, sizeof(R->tship), &R->lo,
				 NULL, &R->c, err) != TP_OK)
		return err->status;
	return tp_inputs_strategy_plan(a->strategy, &R->m, &R->c, &R->p, err);
}

/* The runtime (--runtime, else the plan's; with -s the one plan takes
 * for the model, core/runtime.h tp_runtime_default_name: megatron-core
 * for a transformer, ddp for another), the bucket and the simulator
 * with its scratch. */
static enum tp_status make_sim(struct sim_run *R)
{
	const struct sim_args *a = &R->a;
	const char *name = a->runtime ? a->runtime
				      : tp_runtime_default_name(R->mp);

	/* with -p: --runtime, else the plan's (its recorded file) */
	if ((a->plan_path ? tp_inputs_runtime(&R->in, a->runtime, &R->rt,
					      &R->err)
			  : tp_runtime_find(name, &R->rt, &R->err)) != TP_OK)
		return R->err.status;
	if ((a->runtime || !a->plan_path) &&
	    strcmp(R->pp->runtime, R->rt.name) != 0)
		R->pp->grad_bucket_bytes = 0; /* the runtime's */
	tp_sim_options_default(&R->so);
	tp_sim_params_runtime(&R->so.params, &R->rt);
	if (a->bucket_mb > 0)
		R->pp->grad_bucket_bytes = a->bucket_mb * 1e6;
	R->so.trace_replicas = !strcmp(a->replicas, "all") ? TP_SIM_TRACE_ALL
			       : !strcmp(a->replicas, "one")
				       ? TP_SIM_TRACE_ONE
				       : TP_SIM_TRACE_AUTO;
	R->sim = tp_sim_new(R->mp, R->cp, &R->so, &R->err);
	if (!R->sim)
		return R->err.status;
	R->scratch = tp_sim_scratch_new(R->sim);
	if (!R->scratch)
		return tp_error_set(&R->err, TP_ENOMEM, "out of memory");
	return TP_OK;
}

/* -s under a runtime: a strategy the runtime cannot execute is usage,
 * exit 2, as plan -s says (plan.c given_plan); --runtime none simulates
 * it under the simulator's defaults.  Returns 0 or the exit code. */
static int strategy_runs(struct sim_run *R)
{
	char why[400];

	if (!R->a.strategy || tp_runtime_is_none(&R->rt) ||
	    !tp_runtime_plan_check(&R->rt, R->pp, R->mp, R->cp, NULL, why,
				   sizeof(why)))
		return 0;
	return tp_cli_usage_error("simulate",
				  "-s %s: runtime %s cannot execute it: %s; "
				  "change the strategy, or give --runtime "
				  "none",
				  R->a.strategy, R->rt.name, why);
}

/* Simulate; write the report and the trace. */
static enum tp_status simulate_and_write(struct sim_run *R)
{
	const struct sim_args *a = &R->a;

	if (tp_sim_run(R->sim, R->pp, R->scratch, &R->r,
		       a->trace_path ? &R->trace : NULL, &R->err) != TP_OK) {
		if (a->plan_path)
			tp_error_set_file(&R->err, a->plan_path);
		return R->err.status;
	}
	tp_report_write(&R->r, R->cp, &R->doc);
	if (R->doc.failed || R->trace.failed)
		return tp_error_set(&R->err, TP_ENOMEM, "out of memory");
	if (write_outputs(a->out, &R->doc, a->trace_path, &R->trace,
			  &R->err) != TP_OK)
		return R->err.status;
	if (a->trace_path && !a->quiet &&
	    !tp_sim_scratch_trace_all(R->scratch))
		trace_note(a->replicas);
	return TP_OK;
}

/* What the model's measured profiles cover, wrapped at 80 columns as
 * plan's summary is. */
static void print_profile_note(struct sim_run *R)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return;
	tp_cli_profile_note(R->sim, R->pp, R->mp, R->cp, f);
	fclose(f);
	tp_strbuf_reset(&R->text);
	tp_render_wrap(&R->text, buf ? buf : "", 80);
	fputs(tp_strbuf_cstr(&R->text), stderr);
	free(buf);
}

/* The tables and, when the plan does not fit, why (on stderr); one line
 * when the tables cannot be made. */
static void print_summary(struct sim_run *R)
{
	struct eval_ctx ec = {R->sim, R->scratch};
	const struct tp_report *r = &R->r;

	if (tp_cli_table(R->pp, R->mp, R->cp, r, &R->text, &R->err) ==
		    TP_OK &&
	    tp_cli_explain(R->pp, R->mp, R->cp, r,
			   &(struct tp_explain_sim){
				   eval, &ec, R->so.params.fused_attention,
				   &R->rt},
			   &R->text, &R->err) == TP_OK)
		fputs(tp_strbuf_cstr(&R->text), stderr);
	else
		fprintf(stderr,
			"iteration %.4g s, %.4g samples/s, %.1f "
			"TFLOP/s per device, MFU %.1f%%, %s\n",
			r->iteration_time_s, r->throughput_samples_per_s,
			r->tflops_per_device, 100 * r->mfu,
			r->feasible ? "fits" : "does not fit");
	if (R->mp->profiles.n)
		print_profile_note(R);
}

int cmd_simulate(int argc, char **argv)
{
	struct sim_run *R;
	int code;

	R = calloc(1, sizeof(*R));
	if (!R) {
		fprintf(stderr, "tagplan simulate: out of memory\n");
		return TP_EXIT_FAILURE;
	}
	if (parse_args(&R->a, argc, argv, &code) ||
	    (code = check_args(&R->a)) != 0) {
		free(R);
		return code;
	}
	run_init(R);
	code = TP_EXIT_OK;
	if ((R->a.plan_path ? load_plan(R) : load_strategy(R)) != TP_OK)
		goto fail;
	tp_cli_print_warnings("simulate", &R->warn);
	if ((code = check_io(R->a.plan_path, &R->in, R->a.model, R->a.topo,
			     R->a.out, R->a.trace_path)))
		goto done;
	if (make_sim(R) != TP_OK)
		goto fail;
	if ((code = strategy_runs(R)))
		goto done;
	if (simulate_and_write(R) != TP_OK)
		goto fail;
	if (!R->a.quiet) {
		print_summary(R);
		/* as plan and render say what they wrote */
		if (R->a.out && strcmp(R->a.out, "-"))
			fprintf(stderr, "tagplan simulate: wrote %s\n",
				R->a.out);
		if (R->a.trace_path && strcmp(R->a.trace_path, "-"))
			fprintf(stderr, "tagplan simulate: wrote %s\n",
				R->a.trace_path);
	}
	code = R->r.feasible ? TP_EXIT_OK : TP_EXIT_CHECK;
	goto done;
fail:
	tp_cli_print_warnings("simulate", &R->warn);
	code = tp_cli_fail(&R->err);
done:
	run_release(R);
	free(R);
	return code;
}
