/*
 * simeval.c - the simulator behind the search's evaluator interface, and
 * gradient compression (src/compress/sfb.h) inside that scoring: a plan
 * scored with its compression chosen (tp_sfb_simulate) and the joint
 * evaluator (joint.h).
 */
#include <stdlib.h>
#include <string.h>

#include "compress/sfb.h"
#include "joint.h"
#include "search.h"
#include "search_int.h"
#include "sim/sim.h"

struct scratch {
	struct tp_sim_scratch *sim;
	struct tp_sfb_scratch *sfb;
};

static void sim_scratch_free(void *p)
{
	struct scratch *s = p;

	if (!s)
		return;
	tp_sim_scratch_free(s->sim);
	tp_sfb_scratch_free(s->sfb);
	free(s);
}

static void *sim_scratch_new(const struct tp_search_simeval *se)
{
	struct scratch *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->sim = tp_sim_scratch_new(se->sim);
	if (se->sfb)
		s->sfb = tp_sfb_scratch_new(se->sfb);
	if (!s->sim || (se->sfb && !s->sfb)) {
		sim_scratch_free(s);
		return NULL;
	}
	return s;
}

/* The answer: with se->sfb its compression chosen and kept only when
 * faster (tp_sfb_simulate). */
static enum tp_status sim_finalize(const struct tp_search_simeval *se,
				   struct scratch *s, struct tp_plan *plan,
				   struct tp_report *report,
				   struct tp_error *err)
{
	if (!se->sfb || plan->compression == TP_COMPRESSION_OFF)
		return tp_sim_run(se->sim, plan, s->sim, report, NULL, err);
	return tp_sfb_simulate(se->sfb, se->sim, plan, s->sfb, s->sim, report,
			       NULL, err);
}

static enum tp_status sim_call(void *ctx, struct tp_eval_call *q,
			       struct tp_error *err)
{
	const struct tp_search_simeval *se = ctx;
	struct scratch *s = q->scratch;

	switch (q->ask) {
	case TP_EVAL_SCRATCH_NEW:
		q->scratch = sim_scratch_new(se);
		return q->scratch
			   ? TP_OK
			   : tp_error_set(err, TP_ENOMEM, "out of memory");
	case TP_EVAL_SCRATCH_FREE:
		sim_scratch_free(s);
		return TP_OK;
	case TP_EVAL_RUN:
		if (q->cut)
			return tp_sim_run_bounded(se->sim, q->plan, s->sim,
						  q->cutoff, q->report, NULL,
						  q->cut, err);
		return tp_sim_run(se->sim, q->plan, s->sim, q->report, NULL,
				  err);
	case TP_EVAL_FINALIZE:
		return sim_finalize(se, s, q->answer, q->report, err);
	case TP_EVAL_BOUND_SIM:
		q->sim = se->sim;
		return TP_OK;
	}
	return TP_OK;
}

void tp_search_sim_evaluator(struct tp_search_simeval *ctx,
			     const struct tp_sim *sim, const struct tp_sfb *sfb,
			     struct tp_evaluator *ev)
{
	ctx->sim = sim;
	ctx->sfb = sfb;
	ev->ctx = ctx;
	ev->call = sim_call;
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
			       struct tp_sfb_stats *stats, struct tp_error *err)
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
	bool have_comp;	       /* ... and it beats the plan without */
};

static void joint_scratch_free(const struct tp_sfb_joint *j, void *p)
{
	struct joint_scratch *js = p;

	if (!js)
		return;
	tp_evaluator_scratch_free(j->inner, js->inner);
	tp_sfb_scratch_free(js->s);
	tp_plan_release(&js->work);
	tp_report_release(&js->comp);
	free(js);
}

static enum tp_status joint_scratch_new(const struct tp_sfb_joint *j,
					void **out, struct tp_error *err)
{
	struct joint_scratch *js = calloc(1, sizeof(*js));
	enum tp_status st;

	*out = NULL;
	if (!js)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	tp_plan_init(&js->work);
	tp_report_init(&js->comp);
	js->s = tp_sfb_scratch_new(j->sfb);
	st = tp_evaluator_scratch_new(j->inner, &js->inner, err);
	if (!st && !js->s)
		st = tp_error_set(err, TP_ENOMEM, "out of memory");
	if (st) {
		joint_scratch_free(j, js);
		return st;
	}
	*out = js;
	return TP_OK;
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
	struct tp_eval_call q;
	enum tp_status st;

	js->have_comp = false;
	tp_sfb_clear(plan);
	memset(&q, 0, sizeof(q));
	q.ask = TP_EVAL_RUN;
	q.scratch = js->inner;
	q.plan = plan;
	q.report = report;
	q.cutoff = cutoff;
	q.cut = cut;
	st = j->inner->call(j->inner->ctx, &q, err);
	if (st || (cut && cut->bounded))
		return st;
	st = tp_sfb_select(j->sfb, plan, js->s, NULL, err);
	if (st || !compressed(plan))
		return st;
	st = tp_evaluator_run(j->inner, js->inner, plan, &js->comp, err);
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

/* RUN: both variants of a copy of q->plan.  Steered by the plan without
 * compression (PLAIN), the compressed variant, when better, is the
 * answer score; steered by the compressed score, the better of the two
 * is the report.  A cut (PLAIN only: BOUND_SIM names no simulator
 * otherwise) bounds the run without compression. */
static enum tp_status joint_run(const struct tp_sfb_joint *j,
				struct joint_scratch *js,
				struct tp_eval_call *q, struct tp_error *err)
{
	enum tp_status st;

	js->have_comp = false;
	st = tp_plan_copy(&js->work, q->plan, err);
	if (st)
		return st;
	st = both(j, js, &js->work, q->cutoff, q->cut, q->report, err);
	if (st)
		return st;
	if (j->steer == TP_SFB_STEER_COMPRESSED) {
		keep_better(js, &js->work, q->report);
		return TP_OK;
	}
	q->has_answer = true;
	q->answer_report = js->have_comp ? &js->comp : NULL;
	return TP_OK;
}

static enum tp_status joint_call(void *ctx, struct tp_eval_call *q,
				 struct tp_error *err)
{
	const struct tp_sfb_joint *j = ctx;
	struct joint_scratch *js = q->scratch;
	enum tp_status st;

	switch (q->ask) {
	case TP_EVAL_SCRATCH_NEW:
		return joint_scratch_new(j, &q->scratch, err);
	case TP_EVAL_SCRATCH_FREE:
		joint_scratch_free(j, js);
		return TP_OK;
	case TP_EVAL_RUN:
		return joint_run(j, js, q, err);
	case TP_EVAL_FINALIZE:
		/* the kept choice applied to the answer in place, re-scored
		   with the same sequence of evaluations as RUN */
		st = both(j, js, q->answer, 0, NULL, q->report, err);
		if (st)
			return st;
		keep_better(js, q->answer, q->report);
		return TP_OK;
	case TP_EVAL_BOUND_SIM:
		/* the bounded run only matches the direct search without
		   compression when it steers by the plan without
		   compression */
		if (j->steer == TP_SFB_STEER_PLAIN)
			q->sim = tp_evaluator_bound_sim(j->inner);
		return TP_OK;
	}
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
	ev->call = joint_call;
}

void tp_sfb_joint_evaluator(struct tp_sfb_joint *j, const struct tp_sfb *sfb,
			    const struct tp_evaluator *inner,
			    struct tp_evaluator *ev)
{
	tp_sfb_joint_evaluator_steer(j, sfb, inner, TP_SFB_STEER_PLAIN, ev);
}
