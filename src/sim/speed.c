/*
 * speed.c - the fastest FLOP rate each device type reaches in this
 * simulator, the iteration bound it implies, and which ops of a plan a
 * profile priced (sim.h).
 *
 * A profile may price an op faster than the catalogue peak (Sailor's
 * A100 layers run at about 30 TFLOP/s against the 19.5 TFLOP/s fp32
 * peak: TF32 tensor cores).  MFU and the lower bound divide by a rate no
 * op execution can beat, so neither can be beaten: a type's speed is the
 * larger of its cost-model peaks (the GEMM rate, the 16-bit rate) and the
 * fastest measured point of any op on it (core/profile.h).  Between and
 * beyond the points profile.c interpolates device-seconds per sample
 * convexly and extrapolates at a point's own rate, so no interpolated or
 * extrapolated figure is faster than the fastest measured one.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/profile.h"
#include "sim_int.h"

/* The FLOP rate of one measured point of op o: per device, the work
 * credited to a rank (divided by tp for an op tp splits) over the time,
 * forward and backward each; 0 for a point without time. */
static double point_rate(const struct tp_op *op, const struct tp_profile *p)
{
	double d = op->tp_split != TP_SPLIT_NONE && p->tp > 1 ? p->tp : 1;
	double r = 0;

	if (p->forward_s > 0 && op->flop > 0)
		r = op->flop * p->batch / d / p->forward_s;
	if (p->backward_s > 0 && op->backward_flop > 0 &&
	    op->backward_flop * p->batch / d / p->backward_s > r)
		r = op->backward_flop * p->batch / d / p->backward_s;
	return r;
}

void tp_sim_speed_init(struct tp_sim *sim)
{
	const struct tp_model *m = sim->m;

	for (uint32_t t = 0; t < sim->n_types; t++) {
		const struct tp_cost_device *d = &sim->dev[t];
		sim->speed[t] = d->peak > d->peak_hi ? d->peak : d->peak_hi;
	}
	for (uint32_t o = 0; o < sim->n_ops; o++) {
		const struct tp_op *op = &m->ops.v[o];
		for (uint32_t t = 0; t < sim->n_types; t++) {
			uint32_t n;
			const uint32_t *tab = TP_SIM_PROF(sim, o, t, &n);
			for (uint32_t k = 0; tab && k < n; k++) {
				double r =
				    point_rate(op, &m->profiles.v[tab[k]]);
				if (isfinite(r) && r > sim->speed[t]) {
					sim->speed[t] = r;
					sim->speed_profiled[t] = true;
				}
			}
		}
	}
}

double tp_sim_type_speed(const struct tp_sim *sim, uint32_t type,
			 bool *profiled)
{
	if (profiled)
		*profiled = sim->speed_profiled[type];
	return sim->speed[type];
}

double tp_sim_iteration_bound(const struct tp_sim *sim, double global_batch)
{
	double sum = 0;

	for (uint32_t d = 0; d < sim->n_dev; d++)
		sum += sim->speed[sim->c->devices.v[d].type];
	return sum > 0 ? global_batch * (sim->fwd_flop + sim->bwd_flop) / sum
		       : 0;
}

enum tp_status tp_sim_profile_census(const struct tp_sim *sim,
				     const struct tp_plan *plan,
				     struct tp_sim_scratch *s,
				     uint32_t counts[TP_PROFILE_HOW_COUNT],
				     struct tp_error *err)
{
	struct tp_report r;
	enum tp_status st;
	uint8_t *worst;

	memset(counts, 0, TP_PROFILE_HOW_COUNT * sizeof(*counts));
	tp_report_init(&r);
	st = tp_sim_run(sim, plan, s, &r, NULL, err);
	tp_report_release(&r);
	if (st)
		return st;
	worst = tp_calloc(sim->n_ops + 1, 1);
	if (!worst) {
		tp_error_set(err, TP_ENOMEM, "out of memory");
		return TP_ENOMEM;
	}
	/* an op's worst figure over its lanes and their rank types:
	   measured < interpolated < extrapolated < roofline (no profile) */
	static const uint8_t rank[TP_PROFILE_HOW_COUNT] = {
	    [TP_PROFILE_NONE] = 4,
	    [TP_PROFILE_MEASURED] = 1,
	    [TP_PROFILE_INTERPOLATED] = 2,
	    [TP_PROFILE_EXTRAPOLATED] = 3};
	static const enum tp_profile_how how_of[5] = {
	    TP_PROFILE_NONE, TP_PROFILE_MEASURED, TP_PROFILE_INTERPOLATED,
	    TP_PROFILE_EXTRAPOLATED, TP_PROFILE_NONE};
	for (size_t l = 0; l < s->lanes.n; l++) {
		const struct lane *ln = &s->lanes.v[l];
		const uint32_t *ops = tp_plan_group_ops(plan, ln->group);
		const struct tp_plan_group *gr = &plan->groups.v[ln->group];
		for (uint32_t k = 0; k < gr->n_ops; k++) {
			uint32_t o = ops[k];
			if (sim->m->ops.v[o].kind == TP_OP_INPUT)
				continue;
			for (uint32_t j = 0; j < ln->tp; j++) {
				uint32_t
				    ty = sim->c->devices
					     .v[plan->devs.v[ln->dev_first + j]]
					     .type,
				    n;
				const uint32_t *tab =
				    TP_SIM_PROF(sim, o, ty, &n);
				struct tp_profile_at pa;
				enum tp_profile_how h =
				    tab ? tp_profile_eval(sim->m, tab, n,
							  ln->samples, ln->tp,
							  false, &pa)
					: TP_PROFILE_NONE;
				if (rank[h] > worst[o])
					worst[o] = rank[h];
			}
		}
	}
	for (uint32_t o = 0; o < sim->n_ops; o++)
		if (worst[o])
			counts[how_of[worst[o]]]++;
	free(worst);
	return TP_OK;
}
