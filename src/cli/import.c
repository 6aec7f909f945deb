/*
 * import.c - `tagplan import`: another planner's inputs as tagplan files
 * (io.h).  Only Sailor's so far: sailor:DIR --model NAME writes the model
 * with its measured per-layer profiles (io/sailor.c says how they are
 * split over ops and what is dropped; the notes on stderr say it for the
 * run).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "core/strbuf.h"
#include "io/io.h"

static const char usage[] =
    "sailor:DIR (--model NAME | --cluster TRACE [--row N] |\n"
    "       --plan RESULTS [--entry N] -m MODEL -t TOPO) [-o FILE]";
static const char about[] =
    "Import a peer planner's inputs.  sailor:DIR is a folder in the "
    "layout of\nSailor (eth-easl/sailor): configs/training_config_*.json, "
    "profiles/MODEL/GPU/\nprofile.json, llm_info.json.  The model NAME "
    "(its config's \"model\", e.g.\nOPT-350) is written as tagplan's GPT "
    "in fp32 with Sailor's measured per-layer\ntimes split over each "
    "layer's ops (they sum to Sailor's time at every measured\n(micro-"
    "batch, tp) point); stderr says which GPUs were used, which were "
    "dropped\n(no tagplan device type) and what else was left out.\n"
    "--cluster TRACE writes row N of Sailor's cluster trace (configs/"
    "trace_TRACE.csv,\nor a CSV path: GPUs per type and zone) as a "
    "topology: nodes of the GPUs per\nnode of configs/"
    "basic_cluster_config.json, the maxima of the bandwidth fits\nof "
    "providers/ inside a node and between nodes, latencies from the fits "
    "at 1 MB,\none switch; stderr says what was dropped.  One zone.\n"
    "--plan RESULTS writes entry N of Sailor's results\n(results/CASE/"
    "PLANNER_MODEL.json, as given or under DIR: SAILOR's plan or its\n"
    "ports of Metis and AMP) as a plan of MODEL (from --model) on TOPO "
    "(from\n--cluster): a group per stage, each replica on tp free GPUs "
    "of its type on one\nnode, replicas of different tp as one mixed "
    "group, Sailor's micro-batch size\nper replica.";

/* The file written (sb, or out of memory) to out, atomically ("-" or
 * NULL: stdout). */
static enum tp_status put(const struct tp_strbuf *sb, const char *out,
			  struct tp_error *err)
{
	if (sb->failed)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	return tp_file_write_atomic(out ? out : "-", sb->buf, sb->len, err);
}

/* The notes on stderr, one "tagplan import: " line each. */
static void print_notes(const struct tp_strbuf *notes)
{
	const char *p = tp_strbuf_cstr(notes), *nl;

	while (*p && (nl = strchr(p, '\n')) != NULL) {
		fprintf(stderr, "tagplan import: %.*s\n", (int)(nl - p), p);
		p = nl + 1;
	}
}

/* --plan: a Sailor result as a plan of MODEL on TOPO.  Returns the exit
 * code. */
static int import_plan(const char *dir, const char *results, long long entry,
		       const char *const in[2], const char *out, bool quiet)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_strbuf notes, sb;
	struct tp_error err;
	char path[4096];
	int code = 0;

	snprintf(path, sizeof(path), "%s", results);
	if (results[0] != '/' && access(results, R_OK) != 0)
		snprintf(path, sizeof(path), "%s/%s", dir, results);
	tp_strbuf_init(&notes);
	tp_strbuf_init(&sb);
	tp_error_clear(&err);
	tp_model_init(&m);
	tp_cluster_init(&c);
	tp_plan_init(&p);
	if (tp_model_load_file(in[0], NULL, &m, &err) ||
	    tp_topology_load_file(in[1], NULL, &c, &err) ||
	    tp_sailor_import_plan(path,
				  &(struct tp_sailor_plan_opts){
					  (unsigned)entry, 0},
				  &m, &c, &p, &notes, &err) ||
	    (tp_plan_write(&p, &m, &c, &sb),
	     put(&sb, out, &err))) {
		code = tp_cli_fail(&err);
	} else if (!quiet) {
		print_notes(&notes);
		fprintf(stderr, "tagplan import: %zu groups%s%s\n",
			p.groups.n, out ? " -> " : "", out ? out : "");
	}
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
	tp_strbuf_release(&notes);
	tp_strbuf_release(&sb);
	return code;
}

/* --cluster: the topology of a trace row.  Returns the exit code. */
static int import_cluster(const char *dir, const char *trace, long long row,
			  const char *out, bool quiet)
{
	struct tp_cluster c;
	struct tp_strbuf notes, sb;
	struct tp_error err;
	int code = 0;

	tp_strbuf_init(&notes);
	tp_strbuf_init(&sb);
	tp_error_clear(&err);
	tp_cluster_init(&c);
	if (tp_sailor_import_cluster(dir, trace, (unsigned)row, &c, &notes,
				     &err) ||
	    (tp_topology_write(&c, &sb),
	     put(&sb, out, &err))) {
		code = tp_cli_fail(&err);
	} else if (!quiet) {
		print_notes(&notes);
		fprintf(stderr,
			"tagplan import: %zu devices in %zu nodes%s%s\n",
			c.devices.n, c.nodes.n, out ? " -> " : "",
			out ? out : "");
	}
	tp_cluster_release(&c);
	tp_strbuf_release(&notes);
	tp_strbuf_release(&sb);
	return code;
}

int cmd_import(int argc, char **argv)
{
	const char *model = NULL, *out = NULL, *cluster = NULL;
	const char *plan = NULL, *in[2] = {NULL, NULL};
	long long row = 0, entry = 0;
	bool quiet = false;
	struct tp_opt opts[] = {
	    {"model", 0, TP_OPT_STRING, &model, "NAME",
	     "the model's name in Sailor's configs (e.g. OPT-350)", 0, 0,
	     false},
	    {"cluster", 0, TP_OPT_STRING, &cluster, "TRACE",
	     "write a topology instead: Sailor's configs/trace_TRACE.csv "
	     "(e.g. a100x8_v100x8) or a trace CSV path",
	     0, 0, false},
	    {"row", 0, TP_OPT_INT, &row, "N",
	     "the trace's row (its first column) [0]", 0, 1e9, false},
	    {"plan", 0, TP_OPT_STRING, &plan, "RESULTS",
	     "write a plan instead: a Sailor results file (e.g. "
	     "results/fig8b/SAILOR_OPT-350.json)",
	     0, 0, false},
	    {"entry", 0, TP_OPT_INT, &entry, "N",
	     "the results file's entry [0]", 0, 1e6, false},
	    {"model-file", 'm', TP_OPT_STRING, &in[0], "MODEL",
	     "with --plan: the model (tagplan import --model)", 0, 0, false},
	    {"topology", 't', TP_OPT_STRING, &in[1], "TOPO",
	     "with --plan: the cluster (tagplan import --cluster)", 0, 0,
	     false},
	    {"output", 'o', TP_OPT_STRING, &out, "FILE",
	     "model or topology file to write, atomically [stdout]", 0, 0,
	     false},
	    {"quiet", 'q', TP_OPT_FLAG, &quiet, NULL, TP_CLI_QUIET_HELP, 0, 0,
	     false},
	    {NULL, 0, TP_OPT_FLAG, NULL, NULL, NULL, 0, 0, false}};
	char **pos = NULL;
	int npos = 0, code;
	struct stat st;
	struct tp_model m;
	struct tp_strbuf notes, sb;
	struct tp_error err;

	if (tp_opts_parse(&(struct tp_cli_doc){"import", usage, about}, opts,
			  argc, argv, &pos, &npos, &code))
		return code;
	if (npos == 1 && strncmp(pos[0], "sailor:", 7) != 0 &&
	    stat(pos[0], &st) == 0 && S_ISDIR(st.st_mode)) {
		/* the folder without its prefix */
		code = tp_cli_usage_error("import",
					  "%s: name the source's layout: "
					  "sailor:%s",
					  pos[0], pos[0]);
		free(pos);
		return code;
	}
	if (npos != 1 || strncmp(pos[0], "sailor:", 7) != 0 || !pos[0][7]) {
		code = tp_cli_usage_error("import",
					  "expected one source, sailor:DIR "
					  "(a folder in Sailor's layout)");
		free(pos);
		return code;
	}
	if ((model != NULL) + (cluster != NULL) + (plan != NULL) != 1 ||
	    (plan && (!in[0] || !in[1]))) {
		free(pos);
		return tp_cli_usage_error("import",
					  "give one of --model NAME (the "
					  "model of Sailor's configs, e.g. "
					  "OPT-350), --cluster TRACE (a "
					  "cluster trace, e.g. a100x8_v100x8) "
					  "and --plan RESULTS -m MODEL -t "
					  "TOPO (a Sailor result)");
	}
	{
		/* the files read that -o could name: as given, and the
		   trace or results file under DIR */
		const char *dir = pos[0] + 7;
		char trace[4200], results[4200];
		struct tp_cli_file ins[] = {
		    {"--cluster", cluster},
		    {"--cluster", cluster ? trace : NULL},
		    {"--plan", plan},
		    {"--plan", plan ? results : NULL},
		    {"-m", in[0]},
		    {"-t", in[1]},
		    {NULL, NULL}},
				   outs[] = {{"-o", out}, {NULL, NULL}};

		snprintf(trace, sizeof(trace), "%s/configs/trace_%s.csv", dir,
			 cluster ? cluster : "");
		snprintf(results, sizeof(results), "%s/%s", dir,
			 plan ? plan : "");
		if ((code = tp_cli_check_outputs("import", ins, outs))) {
			free(pos);
			return code;
		}
	}
	if (plan) {
		code = import_plan(pos[0] + 7, plan, entry, in, out, quiet);
		free(pos);
		return code;
	}
	if (cluster) {
		code = import_cluster(pos[0] + 7, cluster, row, out, quiet);
		free(pos);
		return code;
	}
	tp_strbuf_init(&notes);
	tp_strbuf_init(&sb);
	tp_error_clear(&err);
	tp_model_init(&m);
	if (tp_sailor_import_model(pos[0] + 7, model, &m, &notes, &err) ||
	    (tp_model_write(&m, &sb),
	     put(&sb, out, &err))) {
		code = tp_cli_fail(&err);
	} else {
		if (!quiet) {
			print_notes(&notes);
			fprintf(stderr,
				"tagplan import: %s: %zu ops, %zu profile "
				"points%s%s\n",
				m.name, m.ops.n, m.profiles.n,
				out ? " -> " : "", out ? out : "");
		}
		code = 0;
	}
	tp_model_release(&m);
	tp_strbuf_release(&notes);
	tp_strbuf_release(&sb);
	free(pos);
	return code;
}
