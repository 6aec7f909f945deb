/*
 * joint.h - gradient compression inside the search's scoring: a plan
 * scored with its compression chosen (src/compress/sfb.h selects, the
 * simulator scores), and the search's evaluator that does so for every
 * plan it simulates.  Defined in simeval.c, beside the simulator's own
 * evaluator: both need the simulator and the selection, which is why
 * they live in the search (src/compress/ sits below the simulator and
 * knows neither it nor the search).
 */
#ifndef TP_SEARCH_JOINT_H
#define TP_SEARCH_JOINT_H

#include "compress/sfb.h"
#include "core/error.h"
#include "core/plan.h"
#include "core/report.h"
#include "search.h"
#include "sim/sim.h"

/*
 * Score a complete plan with compression chosen jointly: select (as
 * tp_sfb_select), simulate, and simulate again without compression when
 * anything was selected; keep whichever the simulator finds faster (ties
 * to no compression), so compression never makes a plan slower.  plan
 * and *report hold the kept variant.  stats may be NULL.
 */
enum tp_status tp_sfb_simulate(const struct tp_sfb *sfb,
			       const struct tp_sim *sim, struct tp_plan *plan,
			       struct tp_sfb_scratch *s,
			       struct tp_sim_scratch *ss,
			       struct tp_report *report,
			       struct tp_sfb_stats *stats,
			       struct tp_error *err);

/*
 * The search's evaluator (search.h) with compression chosen jointly:
 * every plan the search simulates gets its own selection (as
 * tp_sfb_select, per plan->compression) and is evaluated by inner
 * without compression and, when anything was selected, with it; the
 * compressed variant counts only when strictly better (ties: no
 * compression), so compression never makes a plan slower.
 *
 * How the two scores are used (steer):
 *   TP_SFB_STEER_PLAIN (tp_sfb_joint_evaluator, the default): run reports
 *     the plan WITHOUT compression, which steers the search; the better
 *     of the two is the plan's answer score (RUN's answer_report), and the
 *     search answers with the best plan by answer score among all it
 *     simulated.  The search visits exactly the plans the same search with
 *     --compression off visits when it is deterministic (one thread, a
 *     playout limit reached before any time limit or signal, same seed
 *     and options; with options.bound_sim the bounded runs go through
 *     inner's tp_sim_run_bounded, as for the search without compression).
 *     The plan that search answers with is among them, scored with
 *     exactly what tp_sfb_simulate (post-hoc, TAG-style) gives it, so the
 *     joint answer is never slower than the post-hoc one.
 *   TP_SFB_STEER_COMPRESSED: run reports the better of the two, which
 *     steers the search and chooses the answer.  It explores towards
 *     plans that compress well, often ends faster, but follows another
 *     trajectory than the uncompressed search, so it can end slower than
 *     post-hoc (no guarantee).  For measurements (bench_compress).
 * finalize applies the kept choice to the answer in place (recording it)
 * and re-scores it into report with the same sequence of evaluations as
 * run.  inner's FINALIZE is not asked.  j is caller-embedded storage; j,
 * sfb and inner must outlive ev.  The bounded run (BOUND_SIM, a RUN with
 * a cut) is offered only with PLAIN, and then bounds through inner's
 * (its BOUND_SIM names the simulator).
 */
enum tp_sfb_steer { TP_SFB_STEER_PLAIN, TP_SFB_STEER_COMPRESSED };

struct tp_sfb_joint {
	const struct tp_sfb *sfb;
	const struct tp_evaluator *inner;
	enum tp_sfb_steer steer;
};

void tp_sfb_joint_evaluator(struct tp_sfb_joint *j, const struct tp_sfb *sfb,
			    const struct tp_evaluator *inner,
			    struct tp_evaluator *ev);
void tp_sfb_joint_evaluator_steer(struct tp_sfb_joint *j,
				  const struct tp_sfb *sfb,
				  const struct tp_evaluator *inner,
				  enum tp_sfb_steer steer,
				  struct tp_evaluator *ev);

#endif
