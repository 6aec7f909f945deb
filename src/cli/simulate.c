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
#include "core/strategy.h"
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
	"  schedule     gpipe | 1f1b | interleaved:V [1f1b]\n"
	"  recompute    none | selective | full [none]\n"
	"  sp           sequence parallelism on | off [off]\n"
	"  zero         ZeRO stage 0..3 [0]\n"
	"  sync         ring | hierarchical | ps | auto [auto: hierarchical\n"
	"               when a replica set spans nodes]\n"
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

/* An output that is one of the inputs (recorded ones too): exit 2. */
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
		{"-o", out}, {"--trace", trace_path}, {NULL, NULL}};

	return tp_cli_check_outputs("simulate", ins, outs);
}

int cmd_simulate(int argc, char **argv)
{
	const char *model = NULL, *topo = NULL, *plan_path = NULL,
		   *strategy = NULL, *out = NULL, *trace_path = NULL,
		   *runtime = NULL, *replicas = "auto";
	bool strict = false, quiet = false;
	double bucket_mb = 0;
	struct tp_opt opts[] = {
		{"model", 'm', TP_OPT_STRING, &model, "MODEL",
		 "model file (tagplan-model/1); - reads stdin [with -p: the "
		 "one recorded in the plan]",
		 0, 0, false},
		{"topology", 't', TP_OPT_STRING, &topo, "TOPO",
		 "topology file (tagplan-topology/1) [with -p: the one "
		 "recorded in the plan]",
		 0, 0, false},
		{"plan", 'p', TP_OPT_STRING, &plan_path, "PLAN",
		 "plan file (tagplan-plan/1); - reads stdin", 0, 0, false},
		{"strategy", 's', TP_OPT_STRING, &strategy, "STRATEGY",
		 "uniform 3D strategy string (see above)", 0, 0, false},
		{"output", 'o', TP_OPT_STRING, &out, "REPORT",
		 "write the report here instead of stdout", 0, 0, false},
		{"trace", 0, TP_OPT_STRING, &trace_path, "F",
		 "write a Chrome trace-event JSON file", 0, 0, false},
		{"trace-replicas", 0, TP_OPT_STRING, &replicas, "WHICH",
		 "replicas of a stage the trace shows: all, one (of each "
		 "kind) or auto (all up to 100,000 device slices, about 17 MB, "
		 "else one; stderr says so) [auto]",
		 0, 0, false},
		{"grad-bucket-mb", 0, TP_OPT_DOUBLE, &bucket_mb, "MB",
		 "gradient bucket of the runtime's data-parallel sync, MB "
		 "(10^6 bytes), instead of the plan's [the plan's; with -s "
		 "26.2144, PyTorch DDP's 25 MiB]",
		 1e-3, 1e6, false},
		{"runtime", 0, TP_OPT_STRING, &runtime, "NAME",
		 "the training runtime to simulate under (a profile of "
		 "data/runtimes or a tagplan-runtime/1 file; none = the "
		 "simulator's defaults); with -p another runtime than the "
		 "plan's also takes that runtime's gradient bucket [the "
		 "plan's; with -s: none]",
		 0, 0, false},
		{"strict", 0, TP_OPT_FLAG, &strict, NULL,
		 "unknown fields in the input files are errors", 0, 0, false},
		{"quiet", 'q', TP_OPT_FLAG, &quiet, NULL,
		 "no summary on stderr", 0, 0, false},
		{NULL, 0, TP_OPT_FLAG, NULL, NULL, NULL, 0, 0, false}};
	struct tp_load_options lo;
	struct tp_runtime rt;
	struct tp_sim_options so;
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_inputs in;
	struct tp_model *mp = &m;
	struct tp_cluster *cp = &c;
	struct tp_plan *pp = &p;
	struct tp_report r;
	struct tp_strbuf warn, doc, trace, text;
	struct tp_error err;
	struct tp_sim *sim = NULL;
	struct tp_sim_scratch *scratch = NULL;
	char mship[2048], tship[2048];
	int code;

	if (tp_opts_parse("simulate", usage, about, opts, argc, argv, NULL,
			  NULL, &code))
		return code;
	if (strcmp(replicas, "auto") && strcmp(replicas, "all") &&
	    strcmp(replicas, "one"))
		return tp_cli_usage_error("simulate",
					  "--trace-replicas %s: expected all, "
					  "one or auto",
					  replicas);
	if (!plan_path == !strategy)
		return tp_cli_usage_error("simulate",
					  "give exactly one of -p PLAN and -s "
					  "STRATEGY");
	if (strategy && (!model || !topo))
		return tp_cli_usage_error("simulate",
					  "-s STRATEGY needs -m MODEL and -t "
					  "TOPO (a plan file records its own "
					  "files; a strategy does not)");
	if ((model && !strcmp(model, "-")) + (topo && !strcmp(topo, "-")) +
		    (plan_path && !strcmp(plan_path, "-")) >
	    1)
		return tp_cli_usage_error("simulate",
					  "only one input can come from stdin");

	tp_error_clear(&err);
	tp_load_options_default(&lo);
	lo.strict = strict;
	tp_strbuf_init(&warn);
	tp_strbuf_init(&doc);
	tp_strbuf_init(&trace);
	tp_strbuf_init(&text);
	lo.warnings = &warn;
	tp_model_init(&m);
	tp_cluster_init(&c);
	tp_plan_init(&p);
	tp_inputs_init(&in);
	tp_report_init(&r);
	code = TP_EXIT_OK;

	if (plan_path) {
		/* the plan with its model and topology (recorded ones when
		   -m/-t are not given; kind mix-ups explained) */
		struct tp_strbuf used;
		in.strict = strict;
		if (tp_inputs_load(&in, plan_path, model, topo, &warn, &err) !=
		    TP_OK)
			goto fail;
		mp = &in.model;
		cp = &in.cluster;
		pp = &in.plan;
		tp_strbuf_init(&used);
		tp_inputs_describe(&in, &used);
		if (used.len && !quiet)
			fprintf(stderr, "tagplan simulate: %s",
				tp_strbuf_cstr(&used));
		tp_strbuf_release(&used);
	} else {
		struct tp_strategy st;
		/* -m llama-2-7b: the shipped data/models/llama-2-7b.json */
		model = tp_inputs_shipped(model, true, mship, sizeof(mship));
		topo = tp_inputs_shipped(topo, false, tship, sizeof(tship));
		if (tp_model_load_file(model, &lo, &m, &err) != TP_OK) {
			if (err.status == TP_EINPUT)
				tp_inputs_hint_kind(model, "model", &err);
			tp_inputs_hint_shipped(model, true, &err);
			goto fail;
		}
		if (tp_topology_load_file(topo, &lo, &c, &err) != TP_OK) {
			if (err.status == TP_EINPUT)
				tp_inputs_hint_kind(topo, "topology", &err);
			tp_inputs_hint_shipped(topo, false, &err);
			goto fail;
		}
		if (tp_strategy_parse(strategy, &st, &err) != TP_OK ||
		    tp_strategy_to_plan(&st, &m, &c, &p, &err) != TP_OK) {
			/* a strategy is usage, not a file: no file name */
			err.file[0] = '\0';
			if (err.status == TP_EINPUT)
				err.status = TP_EUSAGE;
			goto fail;
		}
	}
	tp_cli_print_warnings("simulate", &warn);
	if (check_io(plan_path, &in, model, topo, out, trace_path)) {
		code = TP_EXIT_USAGE;
		goto done;
	}
	{
		/* with -p: --runtime, else the plan's (its recorded file) */
		if ((plan_path ? tp_inputs_runtime(&in, runtime, &rt, &err)
			       : tp_runtime_find(runtime ? runtime : "none",
						 &rt, &err)) != TP_OK)
			goto fail;
		if (runtime && strcmp(pp->runtime, rt.name) != 0)
			pp->grad_bucket_bytes = 0; /* the runtime's */
		tp_sim_options_default(&so);
		tp_sim_params_runtime(&so.params, &rt);
	}
	if (bucket_mb > 0)
		pp->grad_bucket_bytes = bucket_mb * 1e6;
	so.trace_replicas = !strcmp(replicas, "all")   ? TP_SIM_TRACE_ALL
			    : !strcmp(replicas, "one") ? TP_SIM_TRACE_ONE
						       : TP_SIM_TRACE_AUTO;
	sim = tp_sim_new(mp, cp, &so, &err);
	if (!sim)
		goto fail;
	scratch = tp_sim_scratch_new(sim);
	if (!scratch) {
		tp_error_set(&err, TP_ENOMEM, "out of memory");
		goto fail;
	}
	if (tp_sim_run(sim, pp, scratch, &r, trace_path ? &trace : NULL,
		       &err) != TP_OK) {
		if (plan_path)
			tp_error_set_file(&err, plan_path);
		goto fail;
	}
	tp_report_write(&r, cp, &doc);
	if (doc.failed || trace.failed) {
		tp_error_set(&err, TP_ENOMEM, "out of memory");
		goto fail;
	}
	if (write_outputs(out, &doc, trace_path, &trace, &err) != TP_OK)
		goto fail;
	if (trace_path && !quiet && !tp_sim_scratch_trace_all(scratch))
		trace_note(replicas);
	if (!quiet) {
		struct eval_ctx ec = {sim, scratch};
		if (tp_cli_table(pp, mp, cp, &r, &text, &err) == TP_OK &&
		    tp_cli_explain(pp, mp, cp, &r, eval, &ec, &text, &err) ==
			    TP_OK)
			fputs(tp_strbuf_cstr(&text), stderr);
		else
			fprintf(stderr,
				"iteration %.4g s, %.4g samples/s, %.1f "
				"TFLOP/s per device, MFU %.1f%%, %s\n",
				r.iteration_time_s, r.throughput_samples_per_s,
				r.tflops_per_device, 100 * r.mfu,
				r.feasible ? "fits" : "does not fit");
		if (mp->profiles.n) {
			/* wrapped at 80 columns as plan's summary is */
			char *buf = NULL;
			size_t len = 0;
			FILE *f = open_memstream(&buf, &len);
			if (f) {
				tp_cli_profile_note(sim, pp, mp, cp, f);
				fclose(f);
				tp_strbuf_reset(&text);
				tp_render_wrap(&text, buf ? buf : "", 80);
				fputs(tp_strbuf_cstr(&text), stderr);
				free(buf);
			}
		}
	}
	code = r.feasible ? TP_EXIT_OK : TP_EXIT_CHECK;
	goto done;
fail:
	tp_cli_print_warnings("simulate", &warn);
	code = tp_cli_fail(&err);
done:
	tp_sim_scratch_free(scratch);
	tp_sim_free(sim);
	tp_report_release(&r);
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
	tp_inputs_release(&in);
	tp_strbuf_release(&warn);
	tp_strbuf_release(&doc);
	tp_strbuf_release(&trace);
	tp_strbuf_release(&text);
	return code;
}
