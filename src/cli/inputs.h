/*
 * inputs.h - load the (model, topology, plan) triple the output commands
 * (render, check, export) work on, and compare the plan's recorded input
 * digests with the files given.
 *
 * A plan names ops and devices; reading it needs the model and topology
 * it was made for.  A NULL model or topology path means "the one the plan
 * was made from":
 *   1. the path `tagplan plan` recorded (summary.provenance.model_path /
 *      topology_path, as given on its command line), looked for as
 *      written (relative to the working directory), then relative to the
 *      plan file's directory, then by base name in the plan's directory;
 *      a candidate whose SHA-256 matches the recorded one wins, else the
 *      first that exists (the digest warning then says it changed).  None
 *      there, or recorded as "-" (stdin): TP_EUSAGE naming the path and
 *      what to pass;
 *   2. no path recorded (a plan of the shipped demo, a hand-written plan,
 *      a plan from an older tagplan): the recorded base name in the plan's
 *      directory when its digest matches, else the default of `tagplan
 *      plan`: the shipped demo model (data/demo-model.json) and TAG testbed
 *      (data/tag-testbed.json).  When the plan names another model or
 *      topology ("model"/"topology" fields), that is TP_EUSAGE saying which
 *      to pass; when it does not resolve against the defaults, the loader's
 *      error says the defaults were used.
 * tp_inputs_describe says which files were used, for stderr.
 *
 * Common mistakes get the fix in the message (TP_EINPUT/TP_EUSAGE, exit
 * 2): a file of another kind given to -m/-t/-p (a topology as the model,
 * a model as the plan, ...), and a plan made for another model or topology
 * than the one given (its ops or devices do not resolve).
 *
 * Ownership: struct tp_inputs owns the three IRs; tp_inputs_release frees
 * them.  Errors are the loaders' (TP_EINPUT with file and JSON path,
 * TP_EIO).  Digest mismatches are warnings, one line each, appended to
 * the caller's strbuf.
 */
#ifndef TP_CLI_INPUTS_H
#define TP_CLI_INPUTS_H

#include <stdbool.h>

#include "core/cluster.h"
#include "core/error.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/report.h"
#include "core/runtime.h"
#include "core/strbuf.h"
#include "io/io.h"

struct tp_sim;
struct tp_sim_scratch;

struct tp_inputs {
	struct tp_model model;
	struct tp_cluster cluster;
	struct tp_plan plan;
	char model_path[1024], topology_path[1024]; /* the files used */
	bool model_changed, topology_changed; /* digest differs from the
						  plan's record */
	bool model_default, topology_default; /* the shipped demo files */
	bool loaded;
	/* found through the plan's provenance (see top) */
	bool model_recorded, topology_recorded;
	bool strict; /* set before loading: unknown fields are errors */
	/* set before tp_inputs_sim_open: the runtime given on the command
	   line (NULL: the plan's, tp_inputs_runtime) */
	const char *runtime;
	char plan_path[1024];
};

void tp_inputs_init(struct tp_inputs *in);

/*
 * The runtime profile to simulate the loaded plan under: given (a name or
 * a file, --runtime) when not NULL; else the file `plan --runtime FILE`
 * recorded (summary.provenance.runtime_path), looked for as written, then
 * relative to the plan's directory, then by base name next to the plan,
 * which must still have the recorded SHA-256; else the plan's runtime
 * name (data/runtimes; "none" when it names none).  A recorded file that
 * is missing or has changed is TP_EUSAGE naming the plan, the file and
 * the fix (--runtime FILE).
 */
struct tp_runtime;
enum tp_status tp_inputs_runtime(const struct tp_inputs *in,
				 const char *given, struct tp_runtime *rt,
				 struct tp_error *err);
/* The plan's own "runtime" named no runtime (tp_runtime_find's usage
 * error, e.g. a hand edit): the error becomes the plan file's, at
 * $.runtime, with the fix (TP_EINPUT); other errors unchanged. */
enum tp_status tp_inputs_blame_runtime(const char *plan_path,
				       struct tp_error *err);
void tp_inputs_release(struct tp_inputs *in);

/*
 * Load model_path, topology_path and plan_path ("-" = stdin for one of
 * them).  NULL model_path/topology_path: the defaults (see top).  Warnings from
 * the loaders and about changed inputs are appended to warnings (may be
 * NULL).
 */
enum tp_status tp_inputs_load(struct tp_inputs *in, const char *plan_path,
			      const char *model_path,
			      const char *topology_path,
			      struct tp_strbuf *warnings, struct tp_error *err);

/*
 * When a model or topology was not given (NULL path to tp_inputs_load),
 * append one line saying which file was used and why, e.g. "using model
 * gpt.json and topology topo.json, recorded in plan.json\n"; nothing when
 * both were given.
 */
void tp_inputs_describe(const struct tp_inputs *in, struct tp_strbuf *out);

/* The kind of tagplan file path holds (io's tp_format_sniff of its
 * "format"), read only when it is a regular file; TP_FORMAT_UNKNOWN
 * otherwise. */
enum tp_format_kind tp_inputs_file_kind(const char *path);

/*
 * After a failed load of `path` as `expected` (the kind's name: "model",
 * "topology" or "plan"), append to err's message which option the file
 * belongs to when it is a tagplan file of another kind, e.g. " (this is a
 * topology: give it with -t TOPO; -m takes a model)".  Nothing otherwise.
 */
void tp_inputs_hint_kind(const char *path, const char *expected,
			 struct tp_error *err);

/*
 * After a failed load of model_path as the model: when model_path is a
 * topology and topo_path a model (the two options swapped), replace
 * tp_inputs_hint_kind's note by " (-m and -t are swapped: T is a
 * topology and M a model; give -m M -t T)".  Nothing otherwise.
 */
void tp_inputs_hint_swap(const char *model_path, const char *topo_path,
			 struct tp_error *err);

/*
 * A -m/-t argument naming a shipped file: when arg is not "-", holds no
 * '/', is not an existing file and data/models/ARG.json (model) or
 * data/topologies/ARG.json (topology) ships, that path (in buf); else
 * arg itself.  tp_inputs_list_shipped appends the names ("llama-2-7b,
 * mistral-7b, ..."); tp_inputs_hint_shipped appends to an open failure
 * (TP_EIO) of such an argument where the shipped files are and their
 * names.  tp_inputs_load resolves its -m/-t this way.
 */
const char *tp_inputs_shipped(const char *arg, bool model, char *buf,
			      size_t size);
void tp_inputs_list_shipped(bool model, struct tp_strbuf *out);
void tp_inputs_hint_shipped(const char *arg, bool model,
			    struct tp_error *err);

struct tp_load_options; /* io/io.h */

/* Load the model (into m, c NULL) or topology (into c, m NULL) named by
 * *arg: a path or a shipped name (tp_inputs_shipped into buf, size bytes;
 * *arg becomes the path used), with lo.  A failure gets the hints of
 * tp_inputs_hint_kind and tp_inputs_hint_shipped.  `simulate -s`,
 * `export -s`. */
enum tp_status tp_inputs_load_named(const char **arg, char *buf, size_t size,
				    const struct tp_load_options *lo,
				    struct tp_model *m, struct tp_cluster *c,
				    struct tp_error *err);

/* The plan of a uniform strategy string on m and c (`simulate -s`,
 * `plan -s`).  A strategy is usage, not a file: a bad one fails with
 * TP_EUSAGE and no file named. */
enum tp_status tp_inputs_strategy_plan(const char *strategy,
				       const struct tp_model *m,
				       const struct tp_cluster *c,
				       struct tp_plan *p, struct tp_error *err);

/* Load a second plan for the same model and topology (a baseline). */
enum tp_status tp_inputs_load_plan(const struct tp_inputs *in,
				   const char *plan_path, struct tp_plan *p,
				   struct tp_strbuf *warnings,
				   struct tp_error *err);

/*
 * The simulator on loaded inputs, for commands that re-simulate plans,
 * under the runtime the plan records (none when it records none; an
 * unknown runtime is TP_EUSAGE naming the shipped ones).
 * tp_inputs_sim_run has the shape of tp_explain_eval_fn (table.h) with
 * ctx = the struct tp_inputs_sim, so explanations can confirm changes.
 */
struct tp_inputs_sim {
	struct tp_sim *sim;
	struct tp_sim_scratch *scratch;
	bool fused_attention; /* the runtime's, as sim runs it */
	struct tp_runtime rt; /* the runtime sim runs the plan under */
};

enum tp_status tp_inputs_sim_open(struct tp_inputs_sim *s,
				  const struct tp_inputs *in,
				  struct tp_error *err);
void tp_inputs_sim_close(struct tp_inputs_sim *s);
/* Simulate plan p; report must be tp_report_init'ed (it is refilled). */
enum tp_status tp_inputs_sim_run(void *ctx, const struct tp_plan *p,
				 struct tp_report *report,
				 struct tp_error *err);

/*
 * The shipped runtime profiles (data/runtimes) that execute plan p on
 * cluster c (tp_runtime_plan_check) and build model m (builds true) or
 * do not (builds false: they would run such a plan of another model;
 * tp_runtime_builds), but for the one named skip (NULL: none skipped),
 * into out as "a, b" ("" when none); returns how many.  Whether a
 * runtime executes a plan says nothing of its speed there: each prices
 * it by its own behaviour.
 */
size_t tp_inputs_runtimes_running(const struct tp_plan *p,
				  const struct tp_model *m,
				  const struct tp_cluster *c,
				  const char *skip, bool builds, char *out,
				  size_t size);

#endif
