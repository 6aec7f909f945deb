/*
 * inputs.h - load the (model, topology, plan) triple the output commands
 * (render, check, export) work on, and compare the plan's recorded input
 * digests with the files given.
 *
 * A plan names ops and devices; reading it needs the model and topology
 * it was made for.  A NULL model or topology path means the default of
 * `tagplan plan`: the shipped demo model (data/demo-model.json) and TAG
 * testbed (data/tag-testbed.json).  When the plan names another model or
 * topology ("model"/"topology" fields), that is TP_EUSAGE saying which to
 * pass; when it does not resolve against the defaults, the loader's error
 * says the defaults were used.
 *
 * Ownership: struct tp_inputs owns the three IRs; tp_inputs_release frees
 * them.  Errors are the loaders' (TP_EINPUT with file and JSON path,
 * TP_EIO).  Digest mismatches are warnings, one line each, appended to
 * the caller's strbuf.
 */
#ifndef TP_RENDER_INPUTS_H
#define TP_RENDER_INPUTS_H

#include <stdbool.h>

#include "../core/cluster.h"
#include "../core/error.h"
#include "../core/model.h"
#include "../core/plan.h"
#include "../core/report.h"
#include "../core/strbuf.h"

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
};

void tp_inputs_init(struct tp_inputs *in);
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

/* Load a second plan for the same model and topology (a baseline). */
enum tp_status tp_inputs_load_plan(const struct tp_inputs *in,
				   const char *plan_path, struct tp_plan *p,
				   struct tp_strbuf *warnings,
				   struct tp_error *err);

/*
 * The simulator on loaded inputs, for commands that re-simulate plans.
 * tp_inputs_sim_run has the shape of tp_explain_eval_fn (table.h) with
 * ctx = the struct tp_inputs_sim, so explanations can confirm changes.
 */
struct tp_inputs_sim {
	struct tp_sim *sim;
	struct tp_sim_scratch *scratch;
};

enum tp_status tp_inputs_sim_open(struct tp_inputs_sim *s,
				  const struct tp_inputs *in,
				  struct tp_error *err);
void tp_inputs_sim_close(struct tp_inputs_sim *s);
/* Simulate plan p; report must be tp_report_init'ed (it is refilled). */
enum tp_status tp_inputs_sim_run(void *ctx, const struct tp_plan *p,
				 struct tp_report *report,
				 struct tp_error *err);

#endif
