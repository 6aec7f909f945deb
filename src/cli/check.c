/*
 * check.c - `tagplan check`: the CI gate.  Re-simulates a committed plan
 * on the current model and topology files and checks it against limits.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/jsonw.h"
#include "core/runtime.h"
#include "io/io.h"
#include "core/report.h"
#include "core/strbuf.h"
#include "inputs.h"
#include "render/scene.h"
#include "table.h"

static const char usage[] =
	"-p PLAN [-m MODEL] [-t TOPO] [--max-iter-time S]\n"
	"                     [--min-mfu X] [--max-memory-fraction X] [--json]\n"
	"                     [--margin M] [--runtime NAME]\n"
	"                     [--baseline-plan OLD [--max-regression F]]";

static const char about[] =
	"Re-simulate PLAN on MODEL and TOPO and check it: it must fit in every\n"
	"device's memory, and meet each limit given.  Exit 0 when it does, 1\n"
	"otherwise with one line per violated check (what, device, figure,\n"
	"limit), 2 for bad input.  --baseline-plan compares with another plan\n"
	"(e.g. the previous commit's): the iteration may be at most\n"
	"--max-regression slower (a fraction: 0.05 = 5%; default 0, the\n"
	"simulator is deterministic).  --margin M allows for the simulator's\n"
	"error: the limits and the memory capacity must hold with the time\n"
	"and memory M worse (e.g. 10%; the report's \"basis\" says how far\n"
	"off the shipped constants were on published runs).  --json prints\n"
	"the verdict as JSON on stdout.  A warning says when the model or\n"
	"topology differs from the files the plan was made from (digests in\n"
	"the plan's summary).  Without -m/-t the files `tagplan plan`\n"
	"recorded in the plan are used (found as given, or next to the plan;\n"
	"the shipped demo model and TAG testbed for plans of the demo);\n"
	"stderr says which.  CI jobs should name the current files with\n"
	"-m/-t.";

/* Devices listed per violated memory check at most. */
#define MAX_DEVICE_LINES 8

struct violation {
	char check[32];
	char device[256]; /* "" when not about a device */
	double figure, limit;
	char msg[512];
};

struct verdict {
	struct violation *v;
	size_t n, cap;
	size_t more_memory; /* memory violations beyond the listed ones */
	size_t more_fraction;
};

static int add_violation(struct verdict *vd, const char *check,
			 const char *device, double figure, double limit,
			 const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static int add_violation(struct verdict *vd, const char *check,
			 const char *device, double figure, double limit,
			 const char *fmt, ...)
{
	struct violation *x;
	va_list ap;

	if (vd->n == vd->cap) {
		size_t nc = vd->cap ? vd->cap * 2 : 8;
		struct violation *nv = realloc(vd->v, nc * sizeof(*nv));
		if (!nv)
			return -1;
		vd->v = nv;
		vd->cap = nc;
	}
	x = &vd->v[vd->n++];
	snprintf(x->check, sizeof(x->check), "%s", check);
	snprintf(x->device, sizeof(x->device), "%s", device ? device : "");
	x->figure = figure;
	x->limit = limit;
	va_start(ap, fmt);
	vsnprintf(x->msg, sizeof(x->msg), fmt, ap);
	va_end(ap);
	return 0;
}

static void si(char *buf, size_t size, double v, const char *unit)
{
	tp_render_fmt_si(buf, size, v, unit);
}

/* ", 84 GB with the +10% margin": the figure a limit was held to under
 * --margin (fig, already formatted), "" without one; so that "needs
 * 76.5 GB, capacity 80 GB" does not read as a pass. */
static const char *with_margin(char *buf, size_t size, double margin,
			       const char *fig)
{
	buf[0] = '\0';
	if (margin > 0)
		snprintf(buf, size, ", %s with the +%.4g%% margin", fig,
			 100 * margin);
	return buf;
}

/* --margin: "10%" or "0.1" (a share, 0 to 1).  -1 when malformed. */
static int parse_margin(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s)
		return -1;
	if (*end == '%') {
		v /= 100;
		end++;
	}
	if (*end || !(v >= 0 && v <= 1))
		return -1;
	*out = v;
	return 0;
}

/* One run of `tagplan check`: the limits asked for, the inputs, the
 * reports of the plan and of the baseline plan, and the verdict. */
struct check_run {
	const char *base; /* --baseline-plan, or NULL */
	double max_iter, min_mfu, max_frac, max_reg;
	double margin; /* --margin: the simulator's error to allow for */
	bool has_iter, has_mfu, has_frac;
	bool quiet; /* -q: the report only when the check fails */
	struct tp_inputs in;
	struct tp_inputs_sim sim;
	struct tp_report r, br;
	struct tp_plan bplan;
	struct tp_strbuf warn, text; /* text: why the plan does not fit */
	struct tp_error err;
	struct verdict vd;
	double worst_frac, base_iter;
	uint32_t worst_frac_dev;
	bool base_feasible;
};

/* Memory: every device within its capacity (and --max-memory-fraction);
 * finds the fullest device.  -1 when out of memory. */
static int check_memory(struct check_run *C)
{
	const struct tp_report *r = &C->r;
	struct verdict *vd = &C->vd;
	char a[48], b[48], m[48], mt[96];

	for (uint32_t d = 0; d < r->n_devices; d++) {
		const struct tp_report_device *rd = &r->devices[d];
		double frac = rd->capacity_bytes > 0
				      ? rd->peak_memory_bytes / rd->capacity_bytes
				      : 0;
		const char *name = C->in.cluster.devices.v[d].name;

		if (frac > C->worst_frac || C->worst_frac_dev == UINT32_MAX) {
			C->worst_frac = frac;
			C->worst_frac_dev = d;
		}
		if (rd->peak_memory_bytes * (1 + C->margin) >
		    rd->capacity_bytes) {
			if (vd->n >= MAX_DEVICE_LINES) {
				vd->more_memory++;
				continue;
			}
			si(a, sizeof(a), rd->peak_memory_bytes, "B");
			si(b, sizeof(b), rd->capacity_bytes, "B");
			si(m, sizeof(m),
			   rd->peak_memory_bytes * (1 + C->margin), "B");
			if (add_violation(vd, "memory", name,
					  rd->peak_memory_bytes,
					  rd->capacity_bytes,
					  "memory: %s needs %s%s, capacity %s",
					  name, a,
					  with_margin(mt, sizeof(mt),
						      C->margin, m),
					  b))
				return -1;
		} else if (C->has_frac && frac * (1 + C->margin) > C->max_frac) {
			if (vd->n >= MAX_DEVICE_LINES) {
				vd->more_fraction++;
				continue;
			}
			si(a, sizeof(a), rd->peak_memory_bytes, "B");
			si(b, sizeof(b), rd->capacity_bytes, "B");
			snprintf(m, sizeof(m), "%.3f", frac * (1 + C->margin));
			if (add_violation(vd, "max-memory-fraction", name, frac,
					  C->max_frac,
					  "memory fraction: %s uses %.3f of its "
					  "memory (%s of %s)%s, limit %g",
					  name, frac, a, b,
					  with_margin(mt, sizeof(mt),
						      C->margin, m),
					  C->max_frac))
				return -1;
		}
	}
	return 0;
}

/* The checks after memory: fits at all, the plan's runtime executes it,
 * iteration time, MFU, regression against the baseline plan.  -1 when
 * out of memory, 1 with C->err set when the runtime is unknown. */
static int check_limits(struct check_run *C)
{
	const struct tp_report *r = &C->r;
	struct verdict *vd = &C->vd;
	char a[48], b[48], m[48], mt[96];

	if (!r->feasible && vd->n == 0 &&
	    add_violation(vd, "feasible", NULL, 0, 1, "does not fit: %s",
			  r->reason[0] ? r->reason : "(no reason given)"))
		return -1;
	/* the plan's runtime executes it (what `plan` and `export` keep
	   to; a plan edited by hand may not) */
	if (C->in.plan.runtime[0] && strcmp(C->in.plan.runtime, "none") != 0) {
		struct tp_runtime rt;
		char why[512];
		if (tp_inputs_runtime(&C->in, C->in.runtime, &rt, &C->err) !=
		    TP_OK)
			return 1;
		if (tp_runtime_plan_check(&rt, &C->in.plan, &C->in.model,
					  &C->in.cluster, NULL, why,
					  sizeof(why)) &&
		    add_violation(vd, "runtime", NULL, 0, 0,
				  "runtime: the plan's runtime cannot execute "
				  "it: %s",
				  why))
			return -1;
	}
	/* with a margin the figure may be that much worse: the time and
	   memory longer, the MFU (1 / time) lower */
	if (C->has_iter &&
	    r->iteration_time_s * (1 + C->margin) > C->max_iter) {
		si(a, sizeof(a), r->iteration_time_s, "s");
		si(m, sizeof(m), r->iteration_time_s * (1 + C->margin), "s");
		if (add_violation(vd, "max-iter-time", NULL,
				  r->iteration_time_s, C->max_iter,
				  "iteration time: %s (%.6g s)%s, limit %g s",
				  a, r->iteration_time_s,
				  with_margin(mt, sizeof(mt), C->margin, m),
				  C->max_iter))
			return -1;
	}
	snprintf(m, sizeof(m), "%.1f%%", 100 * r->mfu / (1 + C->margin));
	if (C->has_mfu && r->mfu / (1 + C->margin) < C->min_mfu &&
	    add_violation(vd, "min-mfu", NULL, r->mfu, C->min_mfu,
			  "MFU: %.4f (%.1f%%)%s, minimum %g", r->mfu,
			  100 * r->mfu,
			  with_margin(mt, sizeof(mt), C->margin, m),
			  C->min_mfu))
		return -1;
	if (C->base && C->base_feasible && C->base_iter > 0) {
		double reg = r->iteration_time_s / C->base_iter - 1;
		if (reg > C->max_reg + 1e-12) {
			si(a, sizeof(a), r->iteration_time_s, "s");
			si(b, sizeof(b), C->base_iter, "s");
			if (add_violation(vd, "max-regression", NULL, reg,
					  C->max_reg,
					  "regression: iteration %s against "
					  "%s for %s (%+.1f%%), limit %+.1f%%",
					  a, b, C->base, 100 * reg,
					  100 * C->max_reg))
				return -1;
		}
	} else if (C->base) {
		fprintf(stderr,
			"tagplan check: warning: the baseline plan %s does "
			"not fit on this topology; no regression check\n",
			C->base);
	}
	return 0;
}

/* A plan that fits as simulated failed the memory check through
 * --margin alone (its "fits" would read as a contradiction). */
static bool memory_by_margin(const struct check_run *C)
{
	if (!C->r.feasible || C->margin <= 0)
		return false;
	if (C->vd.more_memory)
		return true;
	for (size_t i = 0; i < C->vd.n; i++)
		if (!strcmp(C->vd.v[i].check, "memory"))
			return true;
	return false;
}

/* The human report on stderr: the violations, then why the plan does not
 * fit (re-simulated, into C->text for --json too) or the headline.
 * -1 with C->err set on failure. */
static int print_verdict(struct check_run *C)
{
	const struct tp_report *r = &C->r;
	const struct verdict *vd = &C->vd;
	const struct tp_cluster *c = &C->in.cluster;
	char a[48], b[48], c2[48];

	for (size_t i = 0; i < vd->n; i++)
		fprintf(stderr, "tagplan check: FAIL %s\n", vd->v[i].msg);
	if (vd->more_memory)
		fprintf(stderr,
			"tagplan check: FAIL memory: %zu more devices over "
			"capacity\n",
			vd->more_memory);
	if (vd->more_fraction)
		fprintf(stderr,
			"tagplan check: FAIL memory fraction: %zu more devices "
			"over %g\n",
			vd->more_fraction, C->max_frac);
	if (!r->feasible) {
		if (tp_cli_explain(&C->in.plan, &C->in.model, c, r,
				   &(struct tp_explain_sim){
					   tp_inputs_sim_run, &C->sim,
					   C->sim.fused_attention, &C->sim.rt},
				   &C->text, &C->err) != TP_OK)
			return -1;
		fputs(tp_strbuf_cstr(&C->text), stderr);
		return 0;
	}
	if (C->quiet && !vd->n && !vd->more_memory && !vd->more_fraction)
		return 0;
	si(a, sizeof(a), r->iteration_time_s, "s");
	si(c2, sizeof(c2),
	   c->devices.n ? r->devices[C->worst_frac_dev].peak_memory_bytes : 0,
	   "B");
	tp_cli_mem_percent(b, sizeof(b), 100 * C->worst_frac);
	fprintf(stderr,
		"tagplan check: %s: fits%s; iteration %s, MFU %.1f%%, "
		"fullest device %s at %s (%s)\n",
		vd->n ? "failed" : "ok",
		memory_by_margin(C) ? " as simulated, not with the margin" : "",
		a, 100 * r->mfu,
		C->worst_frac_dev < c->devices.n
			? c->devices.v[C->worst_frac_dev].name
			: "-",
		b, c2);
	{
		/* how far the simulator has been off: what --margin is for */
		char basis[512];
		tp_report_basis_describe(&r->basis, basis, sizeof(basis));
		if (basis[0])
			fprintf(stderr, "tagplan check: figures: %s\n", basis);
	}
	if (C->base && C->base_feasible && C->base_iter > 0) {
		/* the comparison, also when it passes */
		double reg = r->iteration_time_s / C->base_iter - 1;
		si(b, sizeof(b), C->base_iter, "s");
		fprintf(stderr,
			"tagplan check: against the baseline plan %s: "
			"iteration %s, was %s (%+.1f%%, %s); limit "
			"%+.1f%%\n",
			C->base, a, b, 100 * reg,
			reg > 1e-12	  ? "slower"
			: reg < -1e-12 ? "faster"
				       : "the same",
			100 * C->max_reg);
	}
	return 0;
}

/* --json: the verdict (tagplan-check/1) on stdout.  -1 when out of
 * memory. */
static int write_verdict_json(const struct check_run *C)
{
	const struct tp_report *r = &C->r;
	const struct verdict *vd = &C->vd;
	struct tp_strbuf js;
	struct tp_jw jw;

	tp_strbuf_init(&js);
	tp_jw_init(&jw, &js, true);
	tp_jw_object_begin(&jw);
	tp_jw_kv_string(&jw, "format", "tagplan-check/1");
	tp_jw_kv_bool(&jw, "ok", vd->n == 0);
	tp_jw_kv_bool(&jw, "feasible", r->feasible);
	tp_jw_kv_number(&jw, "iteration_time_s", r->iteration_time_s);
	tp_jw_kv_number(&jw, "mfu", r->mfu);
	tp_jw_kv_number(&jw, "max_memory_fraction", C->worst_frac);
	tp_jw_kv_number(&jw, "margin", C->margin);
	{
		char basis[512];
		tp_report_basis_describe(&r->basis, basis, sizeof(basis));
		if (basis[0])
			tp_jw_kv_string(&jw, "basis", basis);
	}
	if (C->worst_frac_dev < C->in.cluster.devices.n)
		tp_jw_kv_string(&jw, "fullest_device",
				C->in.cluster.devices.v[C->worst_frac_dev].name);
	if (C->base) {
		tp_jw_key(&jw, "baseline");
		tp_jw_object_begin(&jw);
		tp_jw_kv_string(&jw, "plan", C->base);
		tp_jw_kv_bool(&jw, "feasible", C->base_feasible);
		tp_jw_kv_number(&jw, "iteration_time_s",
				C->base_iter > 0 ? C->base_iter : 0);
		if (C->base_feasible && C->base_iter > 0)
			tp_jw_kv_number(&jw, "regression",
					r->iteration_time_s / C->base_iter - 1);
		tp_jw_object_end(&jw);
	}
	tp_jw_key(&jw, "inputs_changed");
	tp_jw_object_begin(&jw);
	tp_jw_kv_bool(&jw, "model", C->in.model_changed);
	tp_jw_kv_bool(&jw, "topology", C->in.topology_changed);
	tp_jw_object_end(&jw);
	tp_jw_key(&jw, "violations");
	tp_jw_array_begin(&jw);
	for (size_t i = 0; i < vd->n; i++) {
		tp_jw_object_begin(&jw);
		tp_jw_kv_string(&jw, "check", vd->v[i].check);
		if (vd->v[i].device[0])
			tp_jw_kv_string(&jw, "device", vd->v[i].device);
		tp_jw_kv_number(&jw, "figure", vd->v[i].figure);
		tp_jw_kv_number(&jw, "limit", vd->v[i].limit);
		tp_jw_kv_string(&jw, "message", vd->v[i].msg);
		tp_jw_object_end(&jw);
	}
	tp_jw_array_end(&jw);
	if (vd->more_memory || vd->more_fraction)
		tp_jw_kv_int(&jw, "more_devices",
			     (int64_t)(vd->more_memory + vd->more_fraction));
	if (!r->feasible)
		tp_jw_kv_string(&jw, "explanation", tp_strbuf_cstr(&C->text));
	tp_jw_object_end(&jw);
	tp_jw_finish(&jw);
	if (js.failed) {
		tp_strbuf_release(&js);
		return -1;
	}
	fputs(tp_strbuf_cstr(&js), stdout);
	tp_strbuf_release(&js);
	return 0;
}

/* Load the plan (and the baseline plan), say which inputs are used, and
 * simulate both.  -1 with C->err set on failure. */
static int load_and_simulate(struct check_run *C, const char *plan,
			     const char *model, const char *topo)
{
	struct tp_strbuf used;

	if (tp_inputs_load(&C->in, plan, model, topo, &C->warn, &C->err) !=
	    TP_OK)
		return -1;
	tp_strbuf_init(&used);
	tp_inputs_describe(&C->in, &used);
	if (used.len && !C->quiet)
		fprintf(stderr, "tagplan check: %s", tp_strbuf_cstr(&used));
	tp_strbuf_release(&used);
	if (C->base && tp_inputs_load_plan(&C->in, C->base, &C->bplan,
					   &C->warn, &C->err) != TP_OK)
		return -1;
	tp_cli_print_warnings("check", &C->warn);
	if (tp_inputs_sim_open(&C->sim, &C->in, &C->err) != TP_OK ||
	    tp_inputs_sim_run(&C->sim, &C->in.plan, &C->r, &C->err) != TP_OK)
		return -1;
	if (C->base) {
		if (tp_inputs_sim_run(&C->sim, &C->bplan, &C->br, &C->err) !=
		    TP_OK) {
			tp_error_set_file(&C->err, C->base);
			return -1;
		}
		C->base_feasible = C->br.feasible;
		C->base_iter = C->br.iteration_time_s;
	}
	return 0;
}

int cmd_check(int argc, char **argv)
{
	struct check_run C;
	const char *plan = NULL, *model = NULL, *topo = NULL, *runtime = NULL,
		   *margin = NULL;
	bool json = false;
	struct tp_opt opts[] = {
		{"model", 'm', TP_OPT_STRING, &model, "MODEL",
		 "model file, current version [the one recorded in the plan]",
		 0, 0, false},
		{"topology", 't', TP_OPT_STRING, &topo, "TOPO",
		 "topology file, current version [the one recorded in the "
		 "plan]",
		 0, 0, false},
		{"plan", 'p', TP_OPT_STRING, &plan, "PLAN",
		 "the plan to check; - reads stdin", 0, 0, false},
		{"max-iter-time", 0, TP_OPT_DOUBLE, &C.max_iter, "S",
		 "fail when one iteration takes longer than S seconds [no "
		 "limit]",
		 0, 1e9,
		 false},
		{"min-mfu", 0, TP_OPT_DOUBLE, &C.min_mfu, "X",
		 "fail when the model FLOP utilisation is below X (0..1) [no "
		 "limit]",
		 0, 1,
		 false},
		{"max-memory-fraction", 0, TP_OPT_DOUBLE, &C.max_frac, "X",
		 "fail when a device uses more than X of its memory (0..1) [no "
		 "limit: only its capacity]",
		 0, 1, false},
		{"baseline-plan", 0, TP_OPT_STRING, &C.base, "OLD",
		 "compare the iteration time with this plan's", 0, 0, false},
		{"max-regression", 0, TP_OPT_DOUBLE, &C.max_reg, "F",
		 "allowed slowdown against --baseline-plan (0.05 = 5%) [0]", 0,
		 1e6,
		 false},
		{"json", 0, TP_OPT_FLAG, &json, NULL,
		 "print the verdict as JSON on stdout", 0, 0, false},
		{"margin", 0, TP_OPT_STRING, &margin, "M",
		 "allow for the simulator's error: the limits and every "
		 "device's capacity must hold with the iteration time and "
		 "memory M worse (10% or 0.1; the report's basis says the "
		 "measured error) [0]",
		 0, 0, false},
		{"runtime", 0, TP_OPT_STRING, &runtime, "NAME",
		 "the training runtime to simulate under (a profile of "
		 "data/runtimes or a tagplan-runtime/1 file) [the plan's: "
		 "its name, or the file `plan --runtime FILE` recorded]",
		 0, 0, false},
		{"quiet", 'q', TP_OPT_FLAG, &C.quiet, NULL,
		 "nothing on stderr when the check passes (warnings and "
		 "errors still print; a failure says why)",
		 0, 0, false},
		{NULL, 0, TP_OPT_FLAG, NULL, NULL, NULL, 0, 0, false}};
	int code;

	memset(&C, 0, sizeof(C));
	C.worst_frac_dev = UINT32_MAX;
	C.base_iter = -1;
	if (tp_opts_parse(&(struct tp_cli_doc){"check", usage, about}, opts,
			  argc, argv, NULL, NULL, &code))
		return code;
	if (!plan)
		return tp_cli_usage_error("check", "-p PLAN is required (the "
						   "plan file to check)");
	if (opts[7].seen && !C.base)
		return tp_cli_usage_error("check",
					  "--max-regression needs "
					  "--baseline-plan OLD");
	if (margin && parse_margin(margin, &C.margin))
		return tp_cli_usage_error("check",
					  "--margin %s: expected a share of "
					  "the figures, 0 to 100%% (10%% or "
					  "0.1)",
					  margin);
	C.has_iter = opts[3].seen;
	C.has_mfu = opts[4].seen;
	C.has_frac = opts[5].seen;

	tp_error_clear(&C.err);
	tp_strbuf_init(&C.warn);
	tp_strbuf_init(&C.text);
	tp_inputs_init(&C.in);
	C.in.runtime = runtime;
	tp_report_init(&C.r);
	tp_report_init(&C.br);
	tp_plan_init(&C.bplan);
	if (load_and_simulate(&C, plan, model, topo))
		goto fail;
	if (check_memory(&C))
		goto nomem;
	switch (check_limits(&C)) {
	case -1:
		goto nomem;
	case 1:
		goto fail;
	}
	if (print_verdict(&C))
		goto fail;
	if (json && write_verdict_json(&C))
		goto nomem;
	code = C.vd.n || C.vd.more_memory || C.vd.more_fraction
		       ? TP_EXIT_CHECK
		       : TP_EXIT_OK;
	goto done;
nomem:
	tp_error_set(&C.err, TP_ENOMEM, "out of memory");
fail:
	tp_cli_print_warnings("check", &C.warn);
	code = tp_cli_fail(&C.err);
done:
	/* --json's verdict on a full disk or a closed pipe: an I/O failure
	 * (3), also when the check failed (1) */
	if (code == TP_EXIT_OK || code == TP_EXIT_CHECK) {
		struct tp_error werr;
		tp_error_clear(&werr);
		if (tp_file_flush_stdout(&werr))
			code = tp_cli_fail(&werr);
	}
	free(C.vd.v);
	tp_inputs_sim_close(&C.sim);
	tp_report_release(&C.r);
	tp_report_release(&C.br);
	tp_plan_release(&C.bplan);
	tp_inputs_release(&C.in);
	tp_strbuf_release(&C.warn);
	tp_strbuf_release(&C.text);
	return code;
}
