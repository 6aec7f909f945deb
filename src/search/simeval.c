/*
 * simeval.c - the simulator behind the search's evaluator interface, and
 * gradient compression (src/compress/sfb.h) inside that scoring: a plan
 * scored with its compression chosen (tp_sfb_simulate) and the joint
 * evaluator (joint.h).
 */
#include <stdlib.h>

#include "compress/sfb.h"
#include "joint.h"
#include "search.h"
#include "search_int.h"
#include "sim/sim.h"

struct scratch {
	struct tp_sim_scratch *sim;
	struct tp_sfb_scratch *sfb;
};

static void sim_scratch_free(void *ctx, void *p)
{
	struct scratch *s = p;

	(void)ctx;
	if (!s)
		return;
	tp_sim_scratch_free(s->sim);
	tp_sfb_scratch_free(s->sfb);
	free(s);
}

static void *sim_scratch_new(void *ctx)
{
	struct tp_search_simeval *se = ctx;
	struct scratch *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->sim = tp_sim_scratch_new(se->sim);
	if (se->sfb)
		s->sfb = tp_sfb_scratch_new(se->sfb);
	if (!s->sim || (se->sfb && !s->sfb)) {
		sim_scratch_free(ctx, s);
		return NULL;
	}
	return s;
}

static enum tp_status sim_run(void *ctx, void *scratch,
			      const struct tp_plan *plan,
			      struct tp_report *report, struct tp_error *err)
{
	struct tp_search_simeval *se = ctx;
	struct scratch *s = scratch;

	return tp_sim_run(se->sim, plan, s->sim, report, NULL, err);
}

static enum tp_status sim_finalize(void *ctx, void *scratch,
				   struct tp_plan *plan,
				   struct tp_report *report,
				   struct tp_error *err)
{
	struct tp_search_simeval *se = ctx;
	struct scratch *s = scratch;

	if (!se->sfb || plan->compression == TP_COMPRESSION_OFF)
		return tp_sim_run(se->sim, plan, s->sim, report, NULL, err);
	return tp_sfb_simulate(se->sfb, se->sim, plan, s->sfb, s->sim, report,
			       NULL, err);
}

void tp_search_sim_evaluator(struct tp_search_simeval *ctx,
			     const struct tp_sim *sim,
			     const struct tp_sfb *sfb,
			     struct tp_evaluator *ev)
{
	ctx->sim = sim;
	ctx->sfb = sfb;
	ev->ctx = ctx;
	ev->scratch_new = sim_scratch_new;
	ev->scratch_free = sim_scratch_free;
	ev->run = sim_run;
	ev->finalize = sim_finalize;
	ev->answer_report = NULL;
	/* the search recognises this evaluator (tp_search_simeval_of) */
	ev->bounded_sim = NULL;
	ev->run_bounded = NULL;
}

const struct tp_sim *tp_search_simeval_of(const struct tp_evaluator *ev)
{
	if (!ev || ev->run != sim_run || !ev->ctx)
		return NULL;
	return ((const struct tp_search_simeval *)ev->ctx)->sim;
}

enum tp_status tp_search_simeval_run_bounded(const struct tp_evaluator *ev,
					     void *scratch,
					     const struct tp_plan *plan,
					     double cutoff,
					     struct tp_report *report,
					     struct tp_sim_cut *cut,
					     struct tp_error *err)
{
	const struct tp_search_simeval *se = ev->ctx;
	struct scratch *s = scratch;

	return tp_sim_run_bounded(se->sim, plan, s->sim, cutoff, report, NULL,
				  cut, err);
}

/* --- compression inside the scoring (joint.h) ---------------------------- */

/* Is a better than b?  Feasible first, then strictly faster; two
 * infeasible reports compare by the memory excess. */
static bool better(const struct tp_report *a, const struct tp_report *b)
{
	if (a->feasible != b->feasible)
		return a->feasible;
	if (a->feasible)
		return a->iteration_time_s < b->iteration_time_s;
	return a->over_bytes < b->over_bytes;
}

static bool compressed(const struct tp_plan *plan)
{
	for (size_t g = 0; g < plan->groups.n; g++)
		if (plan->groups.v[g].n_sfb ||
		    plan->groups.v[g].lossy != TP_LOSSY_NONE)
			return true;
	return false;
}

enum tp_status tp_sfb_simulate(const struct tp_sfb *sfb,
			       const struct tp_sim *sim, struct tp_plan *plan,
			       struct tp_sfb_scratch *s,
			       struct tp_sim_scratch *ss,
			       struct tp_report *report,
			       struct tp_sfb_stats *stats,
			       struct tp_error *err)
{
	struct tp_plan alt;
	struct tp_report alt_report, tmp;
	enum tp_status st;

	st = tp_sfb_select(sfb, plan, s, stats, err);
	if (st)
		return st;
	st = tp_sim_run(sim, plan, ss, report, NULL, err);
	if (st || !compressed(plan))
		return st;
	/* the variant without compression: once per answer, not per
	   playout, so its storage is this call's */
	tp_plan_init(&alt);
	tp_report_init(&alt_report);
	st = tp_plan_copy(&alt, plan, err);
	if (st)
		goto out;
	tp_sfb_clear(&alt);
	st = tp_sim_run(sim, &alt, ss, &alt_report, NULL, err);
	if (st || better(report, &alt_report))
		goto out;
	/* no compression is at least as good: keep that */
	st = tp_plan_copy(plan, &alt, err);
	if (st)
		goto out;
	tmp = *report;
	*report = alt_report;
	alt_report = tmp;
	if (stats)
		stats->dropped = true;
out:
	tp_report_release(&alt_report);
	tp_plan_release(&alt);
	return st;
}

/* --- the joint evaluator ------------------------------------------------ */

struct joint_scratch {
	void *inner;
	struct tp_sfb_scratch *s;
	struct tp_plan work;
	struct tp_report comp; /* the compressed variant's report */
	bool have_comp;        /* ... and it beats the plan without */
};

static void joint_scratch_free(void *ctx, void *p)
{
	const struct tp_sfb_joint *j = ctx;
	struct joint_scratch *js = p;

	if (!js)
		return;
	if (js->inner && j->inner->scratch_free)
		j->inner->scratch_free(j->inner->ctx, js->inner);
	tp_sfb_scratch_free(js->s);
	tp_plan_release(&js->work);
	tp_report_release(&js->comp);
	free(js);
}

static void *joint_scratch_new(void *ctx)
{
	const struct tp_sfb_joint *j = ctx;
	struct joint_scratch *js = calloc(1, sizeof(*js));

	if (!js)
		return NULL;
	tp_plan_init(&js->work);
	tp_report_init(&js->comp);
	js->s = tp_sfb_scratch_new(j->sfb);
	if (j->inner->scratch_new) {
		js->inner = j->inner->scratch_new(j->inner->ctx);
		if (!js->inner) {
			joint_scratch_free(ctx, js);
			return NULL;
		}
	}
	if (!js->s) {
		joint_scratch_free(ctx, js);
		return NULL;
	}
	return js;
}

/*
 * Both variants of plan (in place): without compression into report
 * (first, with the cutoff through inner's bounded run when cut != NULL;
 * a bounded plan stops there), then with its selection into js->comp
 * when anything is selected.  On return plan holds the selection and
 * js->have_comp says whether it is strictly better (feasible first, then
 * faster; ties to no compression).  The same sequence for every caller,
 * so a plan scored twice gets the same figures.
 */
static enum tp_status both(const struct tp_sfb_joint *j,
			   struct joint_scratch *js, struct tp_plan *plan,
			   double cutoff, struct tp_sim_cut *cut,
			   struct tp_report *report, struct tp_error *err)
{
	const struct tp_evaluator *in = j->inner;
	enum tp_status st;

	js->have_comp = false;
	tp_sfb_clear(plan);
	if (cut)
		st = tp_search_simeval_run_bounded(in, js->inner, plan, cutoff,
						   report, cut, err);
	else
		st = in->run(in->ctx, js->inner, plan, report, err);
	if (st || (cut && cut->bounded))
		return st;
	st = tp_sfb_select(j->sfb, plan, js->s, NULL, err);
	if (st || !compressed(plan))
		return st;
	st = in->run(in->ctx, js->inner, plan, &js->comp, err);
	if (st)
		return st;
	js->have_comp = better(&js->comp, report);
	return TP_OK;
}

/* Keep the better variant in plan and report. */
static void keep_better(struct joint_scratch *js, struct tp_plan *plan,
			struct tp_report *report)
{
	struct tp_report tmp;

	if (!js->have_comp) {
		tp_sfb_clear(plan);
		return;
	}
	tmp = *report;
	*report = js->comp;
	js->comp = tmp;
	js->have_comp = false;
}

static enum tp_status joint_run(void *ctx, void *scratch,
				const struct tp_plan *plan,
				struct tp_report *report, struct tp_error *err)
{
	const struct tp_sfb_joint *j = ctx;
	struct joint_scratch *js = scratch;
	enum tp_status st;

	js->have_comp = false;
	st = tp_plan_copy(&js->work, plan, err);
	if (st)
		return st;
	st = both(j, js, &js->work, 0, NULL, report, err);
	if (st)
		return st;
	if (j->steer == TP_SFB_STEER_COMPRESSED)
		keep_better(js, &js->work, report);
	/* else report steers (no compression) and js->comp, when it is
	   better, is the answer score */
	return TP_OK;
}

static enum tp_status joint_run_bounded(void *ctx, void *scratch,
					const struct tp_plan *plan,
					double cutoff,
					struct tp_report *report,
					struct tp_sim_cut *cut,
					struct tp_error *err)
{
	const struct tp_sfb_joint *j = ctx;
	struct joint_scratch *js = scratch;
	enum tp_status st;

	js->have_comp = false;
	st = tp_plan_copy(&js->work, plan, err);
	if (st)
		return st;
	return both(j, js, &js->work, cutoff, cut, report, err);
}

static const struct tp_report *joint_answer(void *ctx, void *scratch)
{
	struct joint_scratch *js = scratch;

	(void)ctx;
	return js->have_comp ? &js->comp : NULL;
}

static enum tp_status joint_finalize(void *ctx, void *scratch,
				     struct tp_plan *plan,
				     struct tp_report *report,
				     struct tp_error *err)
{
	struct joint_scratch *js = scratch;
	enum tp_status st;

	st = both(ctx, js, plan, 0, NULL, report, err);
	if (st)
		return st;
	keep_better(js, plan, report);
	return TP_OK;
}

void tp_sfb_joint_evaluator_steer(struct tp_sfb_joint *j,
				  const struct tp_sfb *sfb,
				  const struct tp_evaluator *inner,
				  enum tp_sfb_steer steer,
				  struct tp_evaluator *ev)
{
	j->sfb = sfb;
	j->inner = inner;
	j->steer = steer;
	ev->ctx = j;
	ev->scratch_new = joint_scratch_new;
	ev->scratch_free = joint_scratch_free;
	ev->run = joint_run;
	ev->finalize = joint_finalize;
	ev->answer_report =
		steer == TP_SFB_STEER_PLAIN ? joint_answer : NULL;
	/* the bounded run needs the simulator's own evaluator inside, and
	   only matches the direct search without compression when it steers
	   by the plan without compression */
	ev->bounded_sim = steer == TP_SFB_STEER_PLAIN
				  ? tp_search_simeval_of(inner)
				  : NULL;
	ev->run_bounded = ev->bounded_sim ? joint_run_bounded : NULL;
}

void tp_sfb_joint_evaluator(struct tp_sfb_joint *j, const struct tp_sfb *sfb,
			    const struct tp_evaluator *inner,
			    struct tp_evaluator *ev)
{
	tp_sfb_joint_evaluator_steer(j, sfb, inner, TP_SFB_STEER_PLAIN, ev);
}
