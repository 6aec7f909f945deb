/*
 * planner.c - the planner facade (planner.h).
 */
#include "planner.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/vec.h"
#include "joint.h"

struct tp_planner {
	const struct tp_model *m;
	const struct tp_cluster *c;
	struct tp_planner_options o;
	struct tp_sim *sim;
	struct tp_search_simeval sectx;
	struct tp_evaluator plain; /* the simulator */
	struct tp_sfb_joint joint;
	struct tp_evaluator joint_ev; /* compression chosen in the scoring */
};

void tp_planner_options_default(struct tp_planner_options *o)
{
	tp_sim_params_default(&o->sim);
	tp_runtime_none(&o->runtime);
	o->grad_bucket_bytes = 0;
	o->bound = true;
}

struct tp_planner *tp_planner_new(const struct tp_model *m,
				  const struct tp_cluster *c,
				  const struct tp_planner_options *o,
				  struct tp_error *err)
{
	struct tp_planner *pl = tp_calloc(1, sizeof(*pl));
	struct tp_sim_options so;

	if (!pl) {
		tp_error_set(err, TP_ENOMEM, "out of memory");
		return NULL;
	}
	pl->m = m;
	pl->c = c;
	if (o)
		pl->o = *o;
	else
		tp_planner_options_default(&pl->o);
	tp_sim_options_default(&so);
	tp_sim_params_runtime(&pl->o.sim, &pl->o.runtime);
	if (pl->o.grad_bucket_bytes > 0)
		pl->o.sim.grad_bucket_bytes = pl->o.grad_bucket_bytes;
	so.params = pl->o.sim;
	pl->sim = tp_sim_new(m, c, &so, err);
	if (!pl->sim) {
		free(pl);
		return NULL;
	}
	/* the inner evaluator of the joint one chooses no compression of its
	   own: the joint evaluator's finalize decides the answer's */
	tp_search_sim_evaluator(&pl->sectx, pl->sim, NULL, &pl->plain);
	tp_sfb_joint_evaluator(&pl->joint, tp_sim_sfb(pl->sim), &pl->plain,
			       &pl->joint_ev);
	return pl;
}

void tp_planner_free(struct tp_planner *pl)
{
	if (!pl)
		return;
	tp_sim_free(pl->sim);
	free(pl);
}

enum tp_status tp_planner_run(struct tp_planner *pl,
			      const struct tp_search_options *o,
			      struct tp_search_result *res,
			      struct tp_error *err)
{
	struct tp_search_options so = *o;
	const struct tp_evaluator *ev = o->compression != TP_COMPRESSION_OFF
						? &pl->joint_ev
						: &pl->plain;
	enum tp_status st;

	so.bound_sim = pl->o.bound ? pl->sim : NULL;
	if (!tp_runtime_is_none(&pl->o.runtime) && !o->unconstrained) {
		so.runtime = &pl->o.runtime;
		/* a runtime without compression: plans without it */
		if (!pl->o.runtime.can.compression) {
			so.compression = TP_COMPRESSION_OFF;
			ev = &pl->plain;
		}
	} else {
		so.runtime = NULL;
		/* unconstrained: also the best plan the runtime runs */
		if (!tp_runtime_is_none(&pl->o.runtime))
			so.runnable_by = &pl->o.runtime;
	}
	st = tp_search_run(pl->m, pl->c, ev, &so, res, err);
	/* the bound at the speeds the plans were simulated with: a profile
	   or TF32 may beat the catalogue peak the search's bound divides by */
	if (st == TP_OK) {
		double lb = tp_sim_iteration_bound(pl->sim,
						   (double)pl->m->global_batch);
		if (lb < res->lower_bound_s)
			res->lower_bound_s = lb;
	}
	if (st == TP_OK && res->have_plan) {
		res->plan.grad_bucket_bytes = pl->o.sim.grad_bucket_bytes;
		snprintf(res->plan.runtime, sizeof(res->plan.runtime), "%s",
			 pl->o.runtime.name);
	}
	if (st == TP_OK && res->have_runnable) {
		/* a plan of that runtime: its settings */
		struct tp_plan *rp = &res->runnable_plan;
		rp->grad_bucket_bytes = pl->o.sim.grad_bucket_bytes;
		snprintf(rp->runtime, sizeof(rp->runtime), "%s",
			 pl->o.runtime.name);
		if (!pl->o.runtime.can.compression)
			rp->compression = TP_COMPRESSION_OFF;
	}
	return st;
}

const struct tp_sim *tp_planner_sim(const struct tp_planner *pl)
{
	return pl->sim;
}
