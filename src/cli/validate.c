/*
 * validate.c - `tagplan validate FILE...`: check files against the formats.
 *
 * The kind of each file comes from its "format".  A plan needs a model
 * and a topology to resolve its names: with -m and -t it is validated
 * fully, without them against the files it records when they are there
 * unchanged, else only its structure.  Stops at the first bad file
 * (exit 2, the error on stderr); prints "FILE: ok (KIND)" for each good
 * one on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calib.h"
#include "cli.h"
#include "core/runtime.h"
#include "io/io.h"
#include "io/runs.h"
#include "inputs.h"

struct context {
	const char *model_path, *topo_path;
	bool loaded;
	struct tp_model m;
	struct tp_cluster c;
};

static enum tp_status load_context(struct context *cx,
				   const struct tp_load_options *o,
				   struct tp_error *err)
{
	enum tp_status st;

	if (cx->loaded)
		return TP_OK;
	if ((st = tp_model_load_file(cx->model_path, o, &cx->m, err))) {
		if (st == TP_EINPUT)
			tp_inputs_hint_kind(cx->model_path, "model", err);
		return st;
	}
	if ((st = tp_topology_load_file(cx->topo_path, o, &cx->c, err))) {
		if (st == TP_EINPUT)
			tp_inputs_hint_kind(cx->topo_path, "topology", err);
		return st;
	}
	cx->loaded = true;
	return TP_OK;
}

/* A plan given alone is resolved against the model and topology it
 * records when both are there unchanged (their SHA-256 as recorded), as
 * check and render find them: *resolved, with detail saying so; a plan
 * that does not resolve against them (a hand edit: an unknown op or
 * device) is its error.  Anything else (a file moved or changed, a plan
 * read from stdin, a plan of the demo) leaves the structure check and its
 * hint (TP_OK, !*resolved). */
static enum tp_status recorded_inputs(const char *path,
				      const struct tp_load_options *o,
				      char *detail, size_t dsize,
				      bool *resolved, struct tp_error *err)
{
	struct tp_inputs in;
	struct tp_error e;
	enum tp_status st;
	bool exact;

	*resolved = false;
	if (!strcmp(path, "-"))
		return TP_OK;
	tp_inputs_init(&in);
	in.strict = o->strict;
	tp_error_clear(&e);
	st = tp_inputs_load(&in, path, NULL, NULL, NULL, &e);
	exact = in.model_recorded && in.topology_recorded &&
		!in.model_changed && !in.topology_changed;
	if (st == TP_OK && exact) {
		*resolved = true;
		snprintf(detail, dsize,
			 "plan, resolved against %.450s and %.450s, recorded "
			 "in it",
			 in.model_path, in.topology_path);
	}
	tp_inputs_release(&in);
	if (st == TP_EINPUT && exact) {
		*err = e;
		return st;
	}
	return TP_OK;
}

/* A list of measured runs (calibrate's input, no "format"): read as
 * calibrate reads it, and each run checked as calibrate would simulate
 * it (its runtime, model, topology file and strategy), without
 * simulating. */
static enum tp_status validate_runs(const char *path, const char *text,
				    size_t len,
				    const struct tp_load_options *o,
				    char *detail, size_t dsize,
				    struct tp_error *err)
{
	const char *slash = strrchr(path, '/');
	char dir[1024];
	struct tp_mruns runs;
	enum tp_status st;

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1,
		 slash ? path : ".");
	tp_mruns_init(&runs);
	st = tp_mruns_load(path, dir, text, len, o, &runs, err);
	for (size_t i = 0; !st && i < runs.rows.n; i++)
		st = tp_calib_check(&runs.rows.v[i], NULL, err);
	if (st)
		tp_error_set_file(err, path);
	snprintf(detail, dsize, "measured runs, %zu: calibrate's input",
		 runs.rows.n);
	tp_mruns_release(&runs);
	return st;
}

static enum tp_status validate_one(const char *path, struct context *cx,
				   const struct tp_load_options *o,
				   char *detail, size_t dsize,
				   struct tp_error *err)
{
	char *text;
	size_t len;
	enum tp_format_kind kind;
	enum tp_status st;

	detail[0] = '\0';
	if ((st = tp_file_read_text(path, o->max_bytes, &text, &len, err)))
		return st;
	/* one strict parse: the loader of the sniffed kind does it */
	kind = tp_format_sniff(text, len);
	if (kind == TP_FORMAT_UNKNOWN && tp_mruns_is_list(text, len)) {
		st = validate_runs(path, text, len, o, detail, dsize, err);
		goto out;
	}
	if (kind == TP_FORMAT_UNKNOWN &&
	    (st = tp_format_detect(path, text, len, o, &kind, err)))
		goto out;
	switch (kind) {
	case TP_FORMAT_MODEL: {
		struct tp_model m;
		tp_model_init(&m);
		st = tp_model_load(path, text, len, o, &m, err);
		tp_model_release(&m);
		snprintf(detail, dsize, "model");
		break;
	}
	case TP_FORMAT_TOPOLOGY: {
		struct tp_cluster c;
		tp_cluster_init(&c);
		st = tp_topology_load(path, text, len, o, &c, err);
		tp_cluster_release(&c);
		snprintf(detail, dsize, "topology");
		break;
	}
	case TP_FORMAT_PLAN:
		if (cx->model_path) {
			struct tp_plan p;
			if ((st = load_context(cx, o, err)))
				break;
			tp_plan_init(&p);
			st = tp_plan_load(path, text, len, &cx->m, &cx->c, o,
					  &p, err);
			tp_plan_release(&p);
			snprintf(detail, dsize, "plan");
		} else {
			bool resolved = false;

			st = tp_plan_check(path, text, len, o, NULL, err);
			if (!st)
				st = recorded_inputs(path, o, detail, dsize,
						     &resolved, err);
			if (st || resolved)
				break;
			snprintf(
			    detail, dsize,
			    "plan, structure only: give -m MODEL -t TOPO to "
			    "resolve its ops and devices");
		}
		break;
	case TP_FORMAT_REPORT: {
		struct tp_report r;
		tp_report_init(&r);
		st = tp_report_load(path, text, len, o, &r, err);
		tp_report_release(&r);
		snprintf(detail, dsize, "report");
		break;
	}
	case TP_FORMAT_DEVICES: {
		struct tp_cluster c;
		tp_cluster_init(&c);
		st = tp_devices_load(path, text, len, o, &c, err);
		tp_cluster_release(&c);
		snprintf(detail, dsize, "devices");
		break;
	}
	case TP_FORMAT_RUNTIME: {
		struct tp_runtime rt;
		st = tp_runtime_load(path, text, len, o, &rt, err);
		snprintf(detail, dsize, "runtime");
		break;
	}
	case TP_FORMAT_UNKNOWN:
		st = tp_error_set(err, TP_EINTERNAL, "unknown format");
		break;
	}
out:
	free(text);
	return st;
}

int cmd_validate(int argc, char **argv)
{
	const char *model = NULL, *topo = NULL;
	bool strict = false, quiet = false;
	long long max_bytes = (long long)TP_IO_DEFAULT_MAX_BYTES;
	long long max_depth = TP_IO_DEFAULT_MAX_DEPTH;
	struct tp_opt opts[] = {
	    {"model", 'm', TP_OPT_STRING, &model, "MODEL",
	     "model to resolve plans against (with -t)", 0, 0, false},
	    {"topology", 't', TP_OPT_STRING, &topo, "TOPO",
	     "topology to resolve plans against (with -m)", 0, 0, false},
	    {"strict", 0, TP_OPT_FLAG, &strict, NULL,
	     "unknown fields are errors, not warnings", 0, 0, false},
	    {"max-bytes", 0, TP_OPT_INT, &max_bytes, "N",
	     "refuse files larger than N bytes", 1, 4.6e18, false},
	    {"max-depth", 0, TP_OPT_INT, &max_depth, "N",
	     "refuse JSON nested deeper than N levels", 1, 1000, false},
	    {"quiet", 'q', TP_OPT_FLAG, &quiet, NULL,
	     "no \"FILE: ok\" lines: only the exit code and the errors", 0,
	     0, false},
	    {NULL, 0, 0, NULL, NULL, NULL, 0, 0, false}};
	static const char about[] =
	    "Check tagplan files against the formats of tagplan-formats(5): "
	    "strict JSON\n(line:column for syntax errors), then the "
	    "fields, their types and ranges,\nand the semantics (unique "
	    "names, edges to known ops, no cycles, a connected\ntopology, "
	    "known device types).  The kind of each file comes from its\n"
	    "\"format\" field (model, topology, plan, report, devices, or "
	    "a runtime\nprofile as --runtime FILE takes); a list of "
	    "measured runs (calibrate's\ninput, which has none) is read as "
	    "calibrate reads it, each run's model,\ntopology and strategy "
	    "built without simulating.  A plan is resolved\nagainst -m "
	    "MODEL -t TOPO when given, else against the model and "
	    "topology it\nrecords when they are there unchanged (as check "
	    "finds them), else only its\nstructure is checked.\n\n"
	    "Prints \"FILE: ok (KIND)\" per good file on stdout (-q: "
	    "none); stops at\nthe first bad file with its error on stderr "
	    "and exit code 2 (3 when a\nfile cannot be read).  Unknown "
	    "fields are warnings (errors under --strict).\n\n"
	    "example:\n  tagplan validate data/demo-model.json "
	    "data/tag-testbed.json\n  tagplan validate -m model.json -t "
	    "topo.json plan.json";
	char **pos = NULL;
	int npos = 0, code;
	struct tp_load_options o;
	struct tp_strbuf warnings;
	struct context cx;
	int rc = TP_EXIT_OK;

	if (tp_opts_parse(&(struct tp_cli_doc){"validate", "[OPTIONS] FILE...",
					       about},
			  opts, argc, argv, &pos, &npos, &code))
		return code;
	if (npos == 0) {
		free(pos);
		return tp_cli_usage_error("validate",
					  "missing FILE: the files to check "
					  "(models, topologies, plans, ...)");
	}
	if ((model == NULL) != (topo == NULL)) {
		free(pos);
		return tp_cli_usage_error("validate",
					  "-m MODEL and -t TOPO go together");
	}
	{
		/* stdin can be read once: a second "-" read it empty */
		int stdin_uses = (model && !strcmp(model, "-")) +
				 (topo && !strcmp(topo, "-"));
		for (int i = 0; i < npos; i++)
			stdin_uses += !strcmp(pos[i], "-");
		if (stdin_uses > 1) {
			free(pos);
			return tp_cli_usage_error(
				"validate", "only one input can come from stdin "
					    "(- is given %d times)",
				stdin_uses);
		}
	}
	tp_load_options_default(&o);
	o.strict = strict;
	o.max_bytes = (size_t)max_bytes;
	o.max_depth = (int)max_depth;
	tp_strbuf_init(&warnings);
	o.warnings = &warnings;
	memset(&cx, 0, sizeof(cx));
	cx.model_path = model;
	cx.topo_path = topo;
	tp_model_init(&cx.m);
	tp_cluster_init(&cx.c);
	for (int i = 0; i < npos; i++) {
		struct tp_error err;
		char detail[1024];
		enum tp_status st;

		tp_error_clear(&err);
		st =
		    validate_one(pos[i], &cx, &o, detail, sizeof(detail), &err);
		tp_cli_print_warnings("validate", &warnings);
		if (st) {
			rc = tp_cli_fail(&err);
			break;
		}
		if (quiet)
			continue;
		tp_cli_escape(stdout, pos[i], strlen(pos[i]), false);
		printf(": ok (%s)\n", detail);
	}
	/* the "ok" lines on a full disk or a closed pipe: exit 3, with the
	 * errno, which a second flush (main's) would no longer have */
	if (!rc) {
		struct tp_error err;
		tp_error_clear(&err);
		if (tp_file_flush_stdout(&err))
			rc = tp_cli_fail(&err);
	}
	tp_model_release(&cx.m);
	tp_cluster_release(&cx.c);
	tp_strbuf_release(&warnings);
	free(pos);
	return rc;
}
