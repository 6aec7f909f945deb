/*
 * sfb_sim.c - tp_sfb_simulate: the compression selection checked by the
 * simulator.  Kept apart from sfb.c so that the selection links without
 * the simulator.
 */
#include "../sim/sim.h"
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
