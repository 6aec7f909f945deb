/*
 * sfb_hook.c - gradient compression in the simulator (the selection is
 * src/compress/sfb.h's; kept apart from the rest of the
 * simulator).  sim.c calls these at five points: tp_sim_new / tp_sim_free,
 * tp_sim_scratch_new / _free, and tp_sim_sfb_apply for every group with
 * compression once its lanes are built.
 *
 * What a group with compression changes (tp_sfb_group_actions says it per
 * op):
 *  - its gradient synchronisation moves fewer bytes: nothing for the ops
 *    using sufficient-factor broadcasting (SFB), 16-bit or low-rank
 *    gradients for the others under a lossy format;
 *  - every replica's backward computes the weight gradients of its SFB ops
 *    over the samples of the other replicas too, and the forward of the
 *    producers that feed SFB readers by recomputation, at this simulator's
 *    own op costs (profiles when the model has them, else the roofline of
 *    cost.c with the sustained GEMM efficiency);
 *  - the factors (activations and output gradients listed by the actions)
 *    are all-gathered among the replicas during each micro-batch's
 *    backward, over NCCL-style rings on the group's devices as the
 *    gradient sync uses them; this time is added to the backward, not
 *    overlapped (conservative);
 *  - the gathered factors of one op are temporary memory;
 *  - PowerSGD's compression compute is added to the optimizer step.
 */
#include <math.h>
#include <stdlib.h>

#include "compress/sfb.h"
#include "sim_int.h"

/* This simulator's time of an op phase, for the selection's cost model:
 * the model's profile, else one kernel of core/cost.h at this
 * simulator's device figures (with gemm_sustained). */
static double compute(void *ctx, uint32_t op, enum tp_sfb_phase ph,
		      uint32_t d, double samples, double flop)
{
	const struct tp_sim *sim = ctx;
	uint32_t ty = sim->c->devices.v[d].type;
	const struct tp_op *o;
	double bytes;
	const uint32_t *tab;
	uint32_t n;

	if (ph == TP_SFB_DENSE_GEMM)
		return tp_cost_kernel_s(&sim->dev[ty], TP_OP_MATMUL, flop, 0, 1);
	if (!(samples > 0))
		return 0;
	o = &sim->m->ops.v[op];
	tab = TP_SIM_PROF(sim, op, ty, &n);
	if (tab) {
		struct tp_profile_at pa;
		tp_profile_eval(sim->m, tab, n, samples, 1, false, &pa);
		return ph == TP_SFB_FORWARD ? pa.forward_s : pa.backward_s / 2;
	}
	if (ph == TP_SFB_FORWARD) {
		flop = o->flop * samples;
		bytes = o->mem_bytes * samples + o->param_bytes;
	} else {
		flop = (o->backward_flop > 0 ? o->backward_flop / 2 : o->flop) *
		       samples;
		bytes = (sim->in_bytes[op] + o->out_bytes) * samples +
			o->param_bytes;
	}
	return tp_cost_kernel_s(&sim->dev[ty], o->kind, flop, bytes, 1);
}

int tp_sim_sfb_new(struct tp_sim *sim, struct tp_error *err)
{
	struct tp_sfb_options o;

	tp_sfb_options_default(&o);
	o.grad_elem_bytes = sim->state.grads;
	o.link_eff_intra = sim->o.params.link_eff_intra;
	o.link_eff_network = sim->o.params.link_eff_network;
	o.step_latency_s = sim->o.params.collective_latency_s;
	o.compute = compute;
	o.compute_ctx = sim;
	sim->sfb = tp_sfb_new(sim->m, sim->c, &o, err);
	return sim->sfb ? 0 : -1;
}

const struct tp_sfb *tp_sim_sfb(const struct tp_sim *sim)
{
	return sim->sfb;
}

void tp_sim_sfb_free(struct tp_sim *sim)
{
	tp_sfb_free(sim->sfb);
	sim->sfb = NULL;
}

int tp_sim_sfb_scratch_new(struct tp_sim_scratch *s)
{
	s->sfb_s = tp_sfb_scratch_new(s->sim->sfb);
	s->sfb_a = calloc(1, sizeof(*s->sfb_a));
	if (!s->sfb_s || !s->sfb_a)
		return -1;
	tp_sfb_actions_init(s->sfb_a);
	return 0;
}

void tp_sim_sfb_scratch_free(struct tp_sim_scratch *s)
{
	tp_sfb_scratch_free(s->sfb_s);
	if (s->sfb_a)
		tp_sfb_actions_release(s->sfb_a);
	free(s->sfb_a);
	s->sfb_s = NULL;
	s->sfb_a = NULL;
}

enum tp_status tp_sim_sfb_apply(const struct tp_sim *sim,
				const struct tp_plan *plan,
				struct tp_sim_scratch *s, uint32_t g,
				struct tp_error *err)
{
	const struct tp_plan_group *gr = &plan->groups.v[g];
	const double *sh = tp_plan_group_shares(plan, g);
	struct ginfo *gi = &s->groups.v[g];
	const struct tp_sfb_actions *acts = s->sfb_a;
	double mb = (double)plan->global_batch / plan->micro_batches;
	double plain = 0, sync = 0, gather = 0, temp = 0, cflop = 0;
	double t_gather = 0, max_share = 0;
	enum tp_status st;

	st = tp_sfb_group_actions(sim->sfb, plan, g, s->sfb_s, s->sfb_a, err);
	if (st)
		return st;
	for (size_t i = 0; i < acts->v.n; i++) {
		const struct tp_sfb_action *a = &acts->v.v[i];
		const struct tp_op *o = &sim->m->ops.v[a->op];

		if (o->param_bytes > 0 && o->kind != TP_OP_INPUT)
			plain += o->param_bytes / sim->dtype_bytes * sim->state.grads;
		sync += a->sync_bytes;
		gather += a->gather_act_bytes + a->gather_grad_bytes;
		cflop += a->compress_flop;
		if (a->sfb && (sim->in_bytes[a->op] + o->out_bytes) * mb > temp)
			temp = (sim->in_bytes[a->op] + o->out_bytes) * mb;
	}
	gi->grad_bytes -= plain - sync;
	if (gi->grad_bytes < 0)
		gi->grad_bytes = 0;
	for (uint32_t r = 0; r < gr->dp; r++)
		if (sh[r] > max_share)
			max_share = sh[r];
	if (gather > 0 && gr->dp > 1) {
		double rate, lat, n = gr->dp;
		uint32_t rings = 1;

		if (tp_sim_acc_ring(s, plan->devs.v + gr->dev_first, gr->dp,
				    &rings))
			return tp_error_set(err, TP_ENOMEM, "out of memory");
		tp_sim_acc_measure(s, &rate, &lat);
		t_gather = (n - 1) * (lat + sim->o.params.collective_latency_s) +
			   (n - 1) * max_share * gather * mb / (rings * rate);
	}
	for (uint32_t r = 0; r < gr->dp; r++) {
		struct lane *ln = &s->lanes.v[gi->lane_first + r];
		uint32_t dev = plan->devs.v[ln->dev_first];
		double others = mb - ln->samples, extra = 0;

		for (size_t i = 0; i < acts->v.n; i++) {
			const struct tp_sfb_action *a = &acts->v.v[i];

			if (a->sfb)
				extra += compute((void *)sim, a->op,
						 TP_SFB_WEIGHT_GRAD, dev, others,
						 0);
			if (a->forward_full)
				extra += compute((void *)sim, a->op,
						 TP_SFB_FORWARD, dev, others, 0);
		}
		ln->b_comp += extra;
		ln->b_comm += t_gather;
		if (temp > ln->temp)
			ln->temp = temp;
		if (cflop > 0)
			ln->opt_s += compute((void *)sim, 0, TP_SFB_DENSE_GEMM,
					     dev, 1, cflop);
	}
	return TP_OK;
}
