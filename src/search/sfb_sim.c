/*
 * sfb_sim.c - the compression selection checked by the simulator
 * (tp_sfb_simulate) or by any evaluator of the search (the joint
 * evaluator).  Kept apart from sfb.c so that the selection links without
 * the simulator.
 */
#include <stdlib.h>

#include "../sim/sim.h"
#include "search.h"
#include "sfb_int.h"

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
	struct tp_report tmp;
	enum tp_status st;

	st = tp_sfb_select(sfb, plan, s, stats, err);
	if (st)
		return st;
	st = tp_sim_run(sim, plan, ss, report, NULL, err);
	if (st || !compressed(plan))
		return st;
	st = tp_plan_copy(&s->alt, plan, err);
	if (st)
		return st;
	tp_sfb_clear(&s->alt);
	st = tp_sim_run(sim, &s->alt, ss, &s->alt_report, NULL, err);
	if (st)
		return st;
	if (better(report, &s->alt_report))
		return TP_OK;
	/* no compression is at least as good: keep that */
	st = tp_plan_copy(plan, &s->alt, err);
	if (st)
		return st;
	tmp = *report;
	*report = s->alt_report;
	s->alt_report = tmp;
	if (stats)
		stats->dropped = true;
	return TP_OK;
}

/* --- the joint evaluator ------------------------------------------------ */

struct joint_scratch {
	void *inner;
	struct tp_sfb_scratch *s;
	struct tp_plan work;
};

static void joint_scratch_free(void *ctx, void *p)
{
	const struct tp_sfb_joint *j = ctx;
	struct joint_scratch *js = p;

	if (!js)
		return;
	if (j->inner->scratch_free)
		j->inner->scratch_free(j->inner->ctx, js->inner);
	tp_sfb_scratch_free(js->s);
	tp_plan_release(&js->work);
	free(js);
}

static void *joint_scratch_new(void *ctx)
{
	const struct tp_sfb_joint *j = ctx;
	struct joint_scratch *js = calloc(1, sizeof(*js));

	if (!js)
		return NULL;
	tp_plan_init(&js->work);
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

/* Select for plan (in place), evaluate with and without, keep the better
 * in plan and report. */
static enum tp_status joint(const struct tp_sfb_joint *j,
			    struct joint_scratch *js, struct tp_plan *plan,
			    struct tp_report *report, struct tp_error *err)
{
	const struct tp_evaluator *in = j->inner;
	struct tp_sfb_scratch *s = js->s;
	struct tp_report tmp;
	enum tp_status st;

	st = tp_sfb_select(j->sfb, plan, s, NULL, err);
	if (st)
		return st;
	st = in->run(in->ctx, js->inner, plan, report, err);
	if (st || !compressed(plan))
		return st;
	st = tp_plan_copy(&s->alt, plan, err);
	if (st)
		return st;
	tp_sfb_clear(&s->alt);
	st = in->run(in->ctx, js->inner, &s->alt, &s->alt_report, err);
	if (st)
		return st;
	if (better(report, &s->alt_report))
		return TP_OK;
	st = tp_plan_copy(plan, &s->alt, err);
	if (st)
		return st;
	tmp = *report;
	*report = s->alt_report;
	s->alt_report = tmp;
	return TP_OK;
}

static enum tp_status joint_run(void *ctx, void *scratch,
				const struct tp_plan *plan,
				struct tp_report *report, struct tp_error *err)
{
	struct joint_scratch *js = scratch;
	enum tp_status st;

	st = tp_plan_copy(&js->work, plan, err);
	if (st)
		return st;
	return joint(ctx, js, &js->work, report, err);
}

static enum tp_status joint_finalize(void *ctx, void *scratch,
				     struct tp_plan *plan,
				     struct tp_report *report,
				     struct tp_error *err)
{
	return joint(ctx, scratch, plan, report, err);
}

void tp_sfb_joint_evaluator(struct tp_sfb_joint *j, const struct tp_sfb *sfb,
			    const struct tp_evaluator *inner,
			    struct tp_evaluator *ev)
{
	j->sfb = sfb;
	j->inner = inner;
	ev->ctx = j;
	ev->scratch_new = joint_scratch_new;
	ev->scratch_free = joint_scratch_free;
	ev->run = joint_run;
	ev->finalize = joint_finalize;
}
