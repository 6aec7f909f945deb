/*
 * planner.h - the planner: a model and a cluster bound to the simulator
 * and to the evaluator `tagplan plan` searches with.  The one place that
 * wires the simulator, gradient compression in the scoring (joint.h) and
 * the simulator's lower bound into the search, shared by the command line,
 * the benchmarks and the tests, so that they all measure the same thing.
 *
 *   struct tp_planner_options po;
 *   tp_planner_options_default(&po);          po.sim: the cost model
 *   struct tp_planner *pl = tp_planner_new(model, cluster, &po, &err);
 *   tp_planner_run(pl, &search_options, &result, &err);     any number
 *   tp_planner_free(pl);
 *
 * What tp_planner_run adds to the caller's search options: the evaluator
 * (the simulator; with search_options->compression other than off, the
 * joint evaluator, which chooses compression inside the scoring of every
 * complete plan with the simulator's own selection, tp_sim_sfb), and the
 * simulator as options.bound_sim (plans that cannot win are settled by
 * its lower bound) unless po.bound is false.  The answer records the
 * gradient bucket it was simulated with (plan.grad_bucket_bytes) and the
 * runtime it was made for (plan.runtime), so that simulate, check and
 * render of the written plan agree with the search.  Its lower_bound_s
 * is the simulator's (tp_sim_iteration_bound: the types' speeds, profiled
 * or TF32 rates counted) where that is the lower of the two, so no
 * simulated plan beats it.
 * The priors (options.prior, a core/prior.h provider such as the GNN's)
 * are the caller's: the search does not know who computes them.
 *
 * Who plans through it: `tagplan plan`, the benchmarks that measure plans
 * (search, gnn, moe, modern, runtime, hetero, peers) and the tests of
 * whole plans.  Two callers search without it on purpose: bench_compress
 * hands tp_search_run the evaluators it compares (compression off, after
 * the search, joint, steered), which the planner's one evaluator would
 * hide; and train's self-play is not a planning run (its own games over
 * the simulator record training samples; src/train/selfplay.c).
 *
 * Ownership: the planner borrows the model and cluster (finalized; they
 * must outlive it) and owns its simulator.  tp_planner_run may be called
 * from one thread at a time (the search starts its own threads); the
 * simulator it exposes (tp_planner_sim) is safe to use concurrently with
 * scratches of its own.  Errors: those of tp_sim_new and tp_search_run.
 */
#ifndef TP_SEARCH_PLANNER_H
#define TP_SEARCH_PLANNER_H

#include <stdbool.h>

#include "core/cluster.h"
#include "core/error.h"
#include "core/model.h"
#include "core/runtime.h"
#include "search.h"
#include "sim/sim.h"

struct tp_planner_options {
	struct tp_sim_params sim; /* the simulator's cost model, before the
				     runtime's behaviour is applied */
	struct tp_runtime runtime; /* what the plan is for (default "none");
				      its behaviour sets the simulator's
				      (tp_sim_params_runtime) and the answer
				      records its name */
	double grad_bucket_bytes; /* > 0: this bucket, whatever the runtime
				     says (tagplan plan --grad-bucket-mb) */
	bool bound; /* settle plans that cannot win by the simulator's lower
		       bound (default true: same answer, fewer simulations;
		       it changes which leaves the tree scores exactly, so a
		       benchmark measured without it turns it off) */
};

void tp_planner_options_default(struct tp_planner_options *o);

struct tp_planner;

struct tp_planner *tp_planner_new(const struct tp_model *m,
				  const struct tp_cluster *c,
				  const struct tp_planner_options *o,
				  struct tp_error *err);
void tp_planner_free(struct tp_planner *pl);

/*
 * Search a plan (tp_search_run with the evaluator and bound above; o's
 * evaluator-related fields bound_sim is overridden).  Under a runtime
 * other than "none" the search holds only plans it executes
 * (options.runtime is set to it, and compression is off when it has
 * none), unless o->unconstrained.  res is
 * caller-initialised (tp_search_result_init) and released by the caller.
 */
enum tp_status tp_planner_run(struct tp_planner *pl,
			      const struct tp_search_options *o,
			      struct tp_search_result *res,
			      struct tp_error *err);

/* The planner's simulator (for re-simulating variants of the answer). */
const struct tp_sim *tp_planner_sim(const struct tp_planner *pl);

#endif
