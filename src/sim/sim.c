/*
 * sim.c - one training iteration of a plan on a cluster: plan analysis,
 * the task graph, the event-driven engine with max-min fair link sharing,
 * memory accounting and the report.  The model: src/sim/README.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

#define INF INFINITY
#define TIE_BITS 21
#define TIE_HALF (1u << 20)

void tp_sim_params_default(struct tp_sim_params *p)
{
	memset(p, 0, sizeof(*p));
	p->gemm_sustained = 0.806;
	p->link_eff_intra = 0.80;
	p->link_eff_network = 0.90;
	p->grad_bucket_bytes = TP_GRAD_BUCKET_DEFAULT_BYTES;
	p->overlap_grad_sync = true;
	p->backward_mem_factor = 2.0;
	p->p2p_latency_s = 20e-6;
	p->p2p_blocking = true;
	p->collective_latency_s = 6e-6;
}

void tp_sim_options_default(struct tp_sim_options *o)
{
	memset(o, 0, sizeof(*o));
	o->validate = true;
	tp_sim_params_default(&o->params);
}

/* Fallbacks for device types whose cost-model fields are unset (<= 0). */
static void fill_type_defaults(struct tp_device_type *t)
{
	if (!(t->gemm_efficiency > 0))
		t->gemm_efficiency = 0.80;
	if (!(t->gemm_half_flop > 0))
		t->gemm_half_flop = 2e9;
	if (!(t->memory_efficiency > 0))
		t->memory_efficiency = 0.80;
	if (!(t->kernel_overhead_s >= 0) || !isfinite(t->kernel_overhead_s))
		t->kernel_overhead_s = 5e-6;
	if (!(t->reserved_bytes >= 0) || !isfinite(t->reserved_bytes))
		t->reserved_bytes = 0;
}

void tp_sim_free(struct tp_sim *sim)
{
	if (!sim)
		return;
	free(sim->prof);
	free(sim->chan_bw);
	free(sim->in_bytes);
	free(sim->peak);
	free(sim->peak_vec);
	free(sim->mem_bw);
	free(sim->types);
	tp_sim_sfb_free(sim);
	free(sim);
}

struct tp_sim *tp_sim_new(const struct tp_model *m, const struct tp_cluster *c,
			  const struct tp_sim_options *o, struct tp_error *err)
{
	struct tp_sim *sim;
	uint32_t nl;

	if (!m->finalized || !c->finalized) {
		tp_error_set(err, TP_EINTERNAL,
			     "simulator: model and cluster must be finalized");
		return NULL;
	}
	sim = tp_calloc(1, sizeof(*sim));
	if (!sim)
		goto nomem;
	sim->m = m;
	sim->c = c;
	if (o)
		sim->o = *o;
	else
		tp_sim_options_default(&sim->o);
	sim->n_ops = (uint32_t)m->ops.n;
	sim->n_dev = (uint32_t)c->devices.n;
	sim->n_types = (uint32_t)c->types.n;
	nl = (uint32_t)c->links.n;
	sim->n_chan = 2 * nl;
	sim->dtype_bytes = tp_dtype_bytes(m->dtype);
	sim->prof = tp_calloc((size_t)sim->n_ops * (sim->n_types ? sim->n_types
								  : 1),
			      sizeof(*sim->prof));
	sim->chan_bw = tp_calloc(sim->n_chan + 1, sizeof(double));
	sim->in_bytes = tp_calloc(sim->n_ops + 1, sizeof(double));
	sim->peak = tp_calloc(sim->n_types + 1, sizeof(double));
	sim->peak_vec = tp_calloc(sim->n_types + 1, sizeof(double));
	sim->mem_bw = tp_calloc(sim->n_types + 1, sizeof(double));
	sim->types = tp_calloc(sim->n_types + 1, sizeof(*sim->types));
	if (!sim->prof || !sim->chan_bw || !sim->in_bytes || !sim->peak ||
	    !sim->peak_vec || !sim->mem_bw || !sim->types)
		goto nomem;
	for (size_t i = 0; i < (size_t)sim->n_ops * sim->n_types; i++)
		sim->prof[i] = -1;
	for (uint32_t i = 0; i < sim->n_ops; i++) {
		const struct tp_op *op = &m->ops.v[i];
		for (uint32_t k = 0; k < op->n_prof; k++) {
			const struct tp_profile *p =
				&m->profiles.v[op->prof_first + k];
			uint32_t ty = tp_cluster_find_type(c, p->device_type);
			if (ty != TP_NONE && ty < sim->n_types)
				sim->prof[(size_t)i * sim->n_types + ty] =
					(int32_t)(op->prof_first + k);
		}
		if (op->layer >= 0 && (uint32_t)op->layer + 1 > sim->n_layers)
			sim->n_layers = (uint32_t)op->layer + 1;
		sim->fwd_flop += op->flop;
		sim->bwd_flop += op->backward_flop;
	}
	for (size_t e = 0; e < m->edges.n; e++)
		sim->in_bytes[m->edges.v[e].dst] += m->edges.v[e].bytes;
	for (uint32_t l = 0; l < nl; l++) {
		const struct tp_link *lk = &c->links.v[l];
		double eff = (lk->kind == TP_LINK_NIC ||
			      lk->kind == TP_LINK_NETWORK)
				     ? sim->o.params.link_eff_network
				     : sim->o.params.link_eff_intra;
		sim->chan_bw[2 * l] = sim->chan_bw[2 * l + 1] = lk->bw_Bps * eff;
	}
	for (uint32_t t = 0; t < sim->n_types; t++) {
		struct tp_device_type *ty = &sim->types[t];
		*ty = c->types.v[t];
		fill_type_defaults(ty);
		if (sim->o.params.gemm_sustained > 0)
			ty->gemm_efficiency *= sim->o.params.gemm_sustained;
		sim->peak[t] = ty->peak_flops[m->dtype] > 0
				       ? ty->peak_flops[m->dtype]
				       : ty->peak_flops[TP_DTYPE_FP32];
		sim->peak_vec[t] = ty->peak_flops[TP_DTYPE_FP32] > 0
					   ? ty->peak_flops[TP_DTYPE_FP32]
					   : sim->peak[t];
		if (!(sim->peak[t] > 0))
			sim->peak[t] = sim->peak_vec[t] = 1e12;
		if (!(sim->peak_vec[t] > 0))
			sim->peak_vec[t] = sim->peak[t];
		sim->mem_bw[t] = ty->memory_bw_Bps > 0 ? ty->memory_bw_Bps
						       : 1e11;
	}
	/* bytes per parameter: weights, gradients, optimizer state */
	sim->mixed = m->dtype != TP_DTYPE_FP32;
	{
		double w = sim->dtype_bytes, st = 0;
		switch (m->optimizer) {
		case TP_OPT_ADAM:
			st = 8;
			break;
		case TP_OPT_MOMENTUM:
			st = 4;
			break;
		default:
			st = 0;
			break;
		}
		sim->w_pp = w;
		sim->g_pp = w;
		sim->o_pp = st + (sim->mixed ? 4 : 0); /* + fp32 master */
		/* step: read+write state (and master), read the gradient,
		 * write the weights (read them too without a master copy) */
		sim->step_bytes_pp = 2 * sim->o_pp + sim->g_pp +
				     (sim->mixed ? w : 2 * w);
	}
	if (tp_sim_sfb_new(sim, err)) {
		tp_sim_free(sim);
		return NULL;
	}
	return sim;
nomem:
	tp_error_set(err, TP_ENOMEM, "out of memory");
	tp_sim_free(sim);
	return NULL;
}

struct tp_sim_scratch *tp_sim_scratch_new(const struct tp_sim *sim)
{
	struct tp_sim_scratch *s = tp_calloc(1, sizeof(*s));
	size_t nc = sim->n_chan + 1;

	if (!s)
		return NULL;
	s->sim = sim;
	s->op_group = tp_calloc(sim->n_ops + 1, sizeof(uint32_t));
	s->op_mark = tp_calloc(sim->n_ops + 1, sizeof(uint32_t));
	s->lay_mark = tp_calloc(sim->n_layers + 1, sizeof(uint32_t));
	s->dev_res = tp_calloc(sim->n_dev + 1, sizeof(uint32_t));
	s->dev_rep = tp_calloc(sim->n_dev + 1, sizeof(uint32_t));
	s->dev_mark = tp_calloc(sim->n_dev + 1, sizeof(uint32_t));
	s->cap_rem = tp_calloc(nc, sizeof(double));
	s->weight = tp_calloc(nc, sizeof(double));
	s->cnt = tp_calloc(nc, sizeof(uint32_t));
	s->cmark = tp_calloc(nc, sizeof(uint32_t));
	s->chan_bytes = tp_calloc(nc, sizeof(double));
	s->chan_busy = tp_calloc(nc, sizeof(double));
	s->chash = tp_calloc(nc, sizeof(uint64_t));
	s->cstamp = tp_calloc(nc, sizeof(uint32_t));
	s->cnt2 = tp_calloc(nc, sizeof(uint32_t));
	if (!s->cnt2 || !s->op_group || !s->op_mark || !s->lay_mark || !s->dev_res ||
	    !s->dev_rep || !s->dev_mark || !s->cap_rem || !s->weight ||
	    !s->cnt || !s->cmark || !s->chan_bytes || !s->chan_busy ||
	    !s->chash || !s->cstamp ||
	    tp_sim_sfb_scratch_new(s)) {
		tp_sim_scratch_free(s);
		return NULL;
	}
	return s;
}

void tp_sim_scratch_free(struct tp_sim_scratch *s)
{
	if (!s)
		return;
	free(s->op_group);
	free(s->op_mark);
	free(s->lay_mark);
	free(s->dev_res);
	free(s->dev_rep);
	free(s->dev_mark);
	free(s->cap_rem);
	free(s->weight);
	free(s->cnt);
	free(s->cmark);
	free(s->chan_bytes);
	free(s->chan_busy);
	free(s->chash);
	free(s->cstamp);
	tp_vec_free(&s->cents);
	tp_vec_free(&s->ccap);
	tp_vec_free(&s->ccap_rem);
	tp_vec_free(&s->cweight);
	tp_vec_free(&s->cmark2);
	tp_vec_free(&s->cuse);
	tp_vec_free(&s->ctouched);
	tp_vec_free(&s->clast);
	tp_vec_free(&s->lc);
	tp_vec_free(&s->lc_ops);
	free(s->lc_tab);
	tp_vec_free(&s->rc);
	tp_vec_free(&s->rc_devs);
	free(s->rc_tab);
	free(s->cnt2);
	tp_vec_free(&s->touched2);
	tp_vec_free(&s->rg);
	tp_vec_free(&s->rg_devs);
	tp_vec_free(&s->rg_ents);
	free(s->rg_tab);
	tp_vec_free(&s->hkeys);
	tp_vec_free(&s->hvals);
	tp_vec_free(&s->bt_used);
	tp_sim_sfb_scratch_free(s);
	tp_vec_free(&s->touched);
	tp_vec_free(&s->groups);
	tp_vec_free(&s->gorder);
	tp_vec_free(&s->gedges);
	tp_vec_free(&s->gin);
	tp_vec_free(&s->gout);
	tp_vec_free(&s->gin_off);
	tp_vec_free(&s->gout_off);
	tp_vec_free(&s->sets);
	tp_vec_free(&s->lanes);
	tp_vec_free(&s->sims);
	tp_vec_free(&s->members);
	tp_vec_free(&s->lres);
	tp_vec_free(&s->res);
	tp_vec_free(&s->queue);
	tp_vec_free(&s->qtmp);
	tp_vec_free(&s->tasks);
	tp_vec_free(&s->edges);
	tp_vec_free(&s->succ);
	tp_vec_free(&s->btypes);
	tp_vec_free(&s->bents);
	tp_vec_free(&s->act);
	tp_vec_free(&s->p2p);
	tp_vec_free(&s->heap);
	tp_vec_free(&s->tmp);
	tp_vec_free(&s->tmp2);
	tp_vec_free(&s->tmp3);
	tp_vec_free(&s->tmp4);
	tp_vec_free(&s->dtmp);
	free(s);
}

uint64_t tp_sim_scratch_tasks(const struct tp_sim_scratch *s)
{
	return s ? s->tasks_total : 0;
}

#define RESERVE(vec, k)                                                       \
	do {                                                                  \
		if (tp_vec_reserve((vec), (k)))                               \
			goto nomem;                                           \
	} while (0)

/* ------------------------------------------------------------------ */
/* Plan analysis: group graph, order, stages, virtual depth            */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static enum tp_status analyse_groups(const struct tp_sim *sim,
				     const struct tp_plan *plan,
				     struct tp_sim_scratch *s, uint32_t *depth,
				     struct tp_error *err)
{
	const struct tp_model *m = sim->m;
	uint32_t G = (uint32_t)plan->groups.n, *gmark, *gidx;

	s->groups.n = s->gedges.n = s->gorder.n = s->sets.n = 0;
	RESERVE(&s->groups, G);
	RESERVE(&s->gorder, G);
	s->tmp.n = 0;
	RESERVE(&s->tmp, 2 * (size_t)G + 2);
	gmark = s->tmp.v;
	gidx = s->tmp.v + G;
	memset(s->groups.v, 0, G * sizeof(*s->groups.v));
	s->groups.n = G;
	for (uint32_t g = 0; g < G; g++) {
		const uint32_t *ops = tp_plan_group_ops(plan, g);
		gmark[g] = TP_NONE;
		for (uint32_t k = 0; k < plan->groups.v[g].n_ops; k++)
			s->op_group[ops[k]] = g;
	}
	/* group edges, merged per (src, dst) */
	for (uint32_t g = 0; g < G; g++) {
		const uint32_t *ops = tp_plan_group_ops(plan, g);
		for (uint32_t k = 0; k < plan->groups.v[g].n_ops; k++) {
			uint32_t o = ops[k];
			const uint32_t *out = tp_model_out_edges(m, o);
			for (uint32_t e = 0; e < m->ops.v[o].n_out; e++) {
				const struct tp_edge *ed = &m->edges.v[out[e]];
				uint32_t gd = s->op_group[ed->dst];
				if (gd == g)
					continue;
				if (gmark[gd] != g) {
					RESERVE(&s->gedges, 1);
					gmark[gd] = g;
					gidx[gd] = (uint32_t)s->gedges.n;
					s->gedges.v[s->gedges.n++] =
						(struct gedge){g, gd, 0};
				}
				s->gedges.v[gidx[gd]].bytes += ed->bytes;
			}
		}
	}
	/* CSR in/out */
	{
		uint32_t E = (uint32_t)s->gedges.n;
		s->gin_off.n = s->gout_off.n = s->gin.n = s->gout.n = 0;
		RESERVE(&s->gin_off, G + 1);
		RESERVE(&s->gout_off, G + 1);
		RESERVE(&s->gin, E + 1);
		RESERVE(&s->gout, E + 1);
		memset(s->gin_off.v, 0, (G + 1) * sizeof(uint32_t));
		memset(s->gout_off.v, 0, (G + 1) * sizeof(uint32_t));
		for (uint32_t e = 0; e < E; e++) {
			s->gout_off.v[s->gedges.v[e].src + 1]++;
			s->gin_off.v[s->gedges.v[e].dst + 1]++;
		}
		for (uint32_t g = 0; g < G; g++) {
			s->gout_off.v[g + 1] += s->gout_off.v[g];
			s->gin_off.v[g + 1] += s->gin_off.v[g];
		}
		for (uint32_t g = 0; g < G; g++)
			gmark[g] = 0;
		for (uint32_t e = 0; e < E; e++) {
			uint32_t a = s->gedges.v[e].src;
			s->gout.v[s->gout_off.v[a] + gmark[a]++] = e;
		}
		for (uint32_t g = 0; g < G; g++)
			gmark[g] = 0;
		for (uint32_t e = 0; e < E; e++) {
			uint32_t b = s->gedges.v[e].dst;
			s->gin.v[s->gin_off.v[b] + gmark[b]++] = e;
		}
	}
	/* Kahn's order; a cycle means the groups interleave in the graph */
	{
		uint32_t head = 0;
		for (uint32_t g = 0; g < G; g++) {
			gmark[g] = s->gin_off.v[g + 1] - s->gin_off.v[g];
			if (gmark[g] == 0)
				s->gorder.v[s->gorder.n++] = g;
		}
		while (head < s->gorder.n) {
			uint32_t g = s->gorder.v[head++];
			for (uint32_t k = s->gout_off.v[g];
			     k < s->gout_off.v[g + 1]; k++) {
				uint32_t d = s->gedges.v[s->gout.v[k]].dst;
				if (--gmark[d] == 0)
					s->gorder.v[s->gorder.n++] = d;
			}
		}
		if (s->gorder.n != G) {
			uint32_t a = TP_NONE, b = TP_NONE;
			for (uint32_t g = 0; g < G && a == TP_NONE; g++)
				if (gmark[g])
					a = g;
			for (uint32_t k = s->gin_off.v[a];
			     k < s->gin_off.v[a + 1]; k++) {
				uint32_t x = s->gedges.v[s->gin.v[k]].src;
				if (gmark[x]) {
					b = x;
					break;
				}
			}
			return tp_error_set_path(
				err, TP_EINPUT, "$.groups",
				"groups %u and %u depend on each other (the "
				"model's edges run both ways between them); "
				"every group must be a contiguous slice of the "
				"model's topological order",
				b == TP_NONE ? a : b, a);
		}
		for (uint32_t k = 0; k < G; k++)
			s->groups.v[s->gorder.v[k]].rank = k;
	}
	/* device sets and their classes (stages) */
	for (uint32_t g = 0; g < G; g++) {
		const struct tp_plan_group *gr = &plan->groups.v[g];
		struct ginfo *gi = &s->groups.v[g];
		RESERVE(&s->sets, gr->n_devices);
		gi->set_first = (uint32_t)s->sets.n;
		memcpy(s->sets.v + s->sets.n, tp_plan_group_devs(plan, g),
		       gr->n_devices * sizeof(uint32_t));
		if (!sorted_u32(s->sets.v + s->sets.n, gr->n_devices))
			qsort(s->sets.v + s->sets.n, gr->n_devices,
			      sizeof(uint32_t), cmp_u32);
		s->sets.n += gr->n_devices;
		gi->stage = TP_NONE;
		for (uint32_t h = 0; h < g; h++) {
			const struct ginfo *o = &s->groups.v[h];
			if (o->stage == TP_NONE || o->stage != h ||
			    plan->groups.v[h].n_devices != gr->n_devices)
				continue;
			if (memcmp(s->sets.v + o->set_first,
				   s->sets.v + gi->set_first,
				   gr->n_devices * sizeof(uint32_t)) == 0) {
				gi->stage = h;
				break;
			}
		}
		if (gi->stage == TP_NONE)
			gi->stage = g; /* class named by its first group */
	}
	/* virtual depth: +1 whenever the device set changes */
	*depth = 0;
	for (uint32_t k = 0; k < G; k++) {
		uint32_t g = s->gorder.v[k], vd = 0;
		for (uint32_t j = s->gin_off.v[g]; j < s->gin_off.v[g + 1];
		     j++) {
			uint32_t p = s->gedges.v[s->gin.v[j]].src;
			uint32_t x = s->groups.v[p].vd +
				     (s->groups.v[p].stage !=
						      s->groups.v[g].stage
					      ? 1
					      : 0);
			if (x > vd)
				vd = x;
		}
		s->groups.v[g].vd = vd;
		if (vd + 1 > *depth)
			*depth = vd + 1;
	}
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/* ------------------------------------------------------------------ */
/* Lanes, replica classes, resources                                    */

static bool same_types(const struct tp_sim *sim, const uint32_t *a,
		       const uint32_t *b, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		if (sim->c->devices.v[a[k]].type !=
		    sim->c->devices.v[b[k]].type)
			return false;
	return true;
}

static enum tp_status build_lanes(const struct tp_sim *sim,
				  const struct tp_plan *plan,
				  struct tp_sim_scratch *s, bool *mode_a,
				  struct tp_error *err)
{
	uint32_t G = (uint32_t)plan->groups.n;
	double mb = (double)plan->global_batch / plan->micro_batches;
	const struct tp_sim_params *pa = &sim->o.params;
	size_t total = 0;

	s->lanes.n = 0;
	for (uint32_t g = 0; g < G; g++)
		total += plan->groups.v[g].dp;
	RESERVE(&s->lanes, total);
	for (uint32_t g = 0; g < G; g++) {
		const struct tp_plan_group *gr = &plan->groups.v[g];
		const double *sh = tp_plan_group_shares(plan, g);
		s->groups.v[g].lane_first = (uint32_t)s->lanes.n;
		for (uint32_t r = 0; r < gr->dp; r++) {
			struct lane *ln = &s->lanes.v[s->lanes.n++];
			struct lane *prev = r ? ln - 1 : NULL;
			memset(ln, 0, sizeof(*ln));
			ln->group = g;
			ln->replica = r;
			ln->tp = gr->tp;
			ln->dev_first = gr->dev_first + r * gr->tp;
			ln->samples = sh[r] * mb;
			ln->sim = TP_NONE;
			ln->tp_bt = TP_NONE; /* made for the report */
			if (gr->tp > 1) {
				uint32_t rings;
				double lat, rate;
				bool any;
				if (tp_sim_ring_measure(
					    s, plan->devs.v + ln->dev_first,
					    gr->tp, &any, &rings, &lat, &rate))
					goto nomem;
				if (any) {
					double t = gr->tp;
					ln->tp_a = 2 * (t - 1) *
						   (lat +
						    pa->collective_latency_s);
					ln->tp_k = 2 * (t - 1) /
						   (t * rings * rate);
				}
			}
			if (prev && prev->samples == ln->samples &&
			    prev->tp_a == ln->tp_a && prev->tp_k == ln->tp_k &&
			    same_types(sim, plan->devs.v + prev->dev_first,
				       plan->devs.v + ln->dev_first, gr->tp)) {
				struct lane keep = *ln;
				*ln = *prev;
				ln->replica = keep.replica;
				ln->dev_first = keep.dev_first;
				ln->tp_bt = keep.tp_bt;
			} else if (tp_sim_lane_costs(sim, plan, s, ln)) {
				goto nomem;
			}
		}
		s->groups.v[g].param_bytes =
			s->lanes.v[s->groups.v[g].lane_first].params;
		s->groups.v[g].grad_bytes = s->groups.v[g].param_bytes;
		if (gr->n_sfb || gr->lossy != TP_LOSSY_NONE) {
			/* gradient compression: sfb_hook.c */
			enum tp_status st =
				tp_sim_sfb_apply(sim, plan, s, g, err);
			if (st)
				return st;
		}
	}
	/* Mode A: every group has the same replicas (same dp, a device
	 * always in the same replica, equal shares across group edges), so
	 * replica r of one group feeds replica r of the next and identical
	 * replicas can be simulated once. */
	*mode_a = true;
	for (uint32_t g = 1; g < G && *mode_a; g++)
		if (plan->groups.v[g].dp != plan->groups.v[0].dp)
			*mode_a = false;
	if (*mode_a) {
		for (size_t k = 0; k < plan->devs.n; k++)
			s->dev_mark[plan->devs.v[k]] = TP_NONE;
		for (size_t l = 0; l < s->lanes.n && *mode_a; l++) {
			const struct lane *ln = &s->lanes.v[l];
			for (uint32_t k = 0; k < ln->tp; k++) {
				uint32_t d = plan->devs.v[ln->dev_first + k];
				if (s->dev_mark[d] == TP_NONE)
					s->dev_mark[d] = ln->replica;
				else if (s->dev_mark[d] != ln->replica)
					*mode_a = false;
			}
		}
	}
	for (size_t e = 0; e < s->gedges.n && *mode_a; e++) {
		uint32_t a = s->gedges.v[e].src, b = s->gedges.v[e].dst;
		const double *sa = tp_plan_group_shares(plan, a);
		const double *sb = tp_plan_group_shares(plan, b);
		for (uint32_t r = 0; r < plan->groups.v[a].dp; r++)
			if (sa[r] != sb[r]) {
				*mode_a = false;
				break;
			}
	}
	/* classes and sim lanes */
	s->sims.n = s->members.n = 0;
	if (*mode_a) {
		uint32_t dp = plan->groups.v[0].dp, *rep, n_cls = 0;
		s->tmp2.n = 0;
		RESERVE(&s->tmp2, 2 * (size_t)dp + 2);
		rep = s->tmp2.v; /* class representatives */
		for (uint32_t r = 0; r < dp; r++) {
			uint32_t c = TP_NONE;
			for (uint32_t k = 0; k < n_cls && c == TP_NONE; k++) {
				bool same = true;
				for (uint32_t g = 0; g < G && same; g++) {
					const struct lane *a =
						&s->lanes.v[s->groups.v[g]
								    .lane_first +
							    r];
					const struct lane *b =
						&s->lanes.v[s->groups.v[g]
								    .lane_first +
							    rep[k]];
					same = a->f_comp == b->f_comp &&
					       a->f_comm == b->f_comm &&
					       a->b_comp == b->b_comp &&
					       a->b_comm == b->b_comm &&
					       a->opt_s == b->opt_s &&
					       a->samples == b->samples;
				}
				if (same)
					c = k;
			}
			if (c == TP_NONE) {
				c = n_cls;
				rep[n_cls++] = r;
			}
			for (uint32_t g = 0; g < G; g++)
				s->lanes.v[s->groups.v[g].lane_first + r].cls =
					rep[c];
		}
		/* members of each class, contiguous, classes in order */
		RESERVE(&s->members, dp);
		RESERVE(&s->sims, (size_t)n_cls * G);
		for (uint32_t k = 0; k < n_cls; k++)
			for (uint32_t r = 0; r < dp; r++)
				if (s->lanes.v[s->groups.v[0].lane_first + r]
					    .cls == rep[k])
					s->members.v[s->members.n++] = r;
		for (uint32_t g = 0; g < G; g++) {
			uint32_t mf = 0;
			s->groups.v[g].sim_first = (uint32_t)s->sims.n;
			s->groups.v[g].n_sim = n_cls;
			for (uint32_t k = 0; k < n_cls; k++) {
				struct simlane *sl = &s->sims.v[s->sims.n];
				uint32_t nm = 0;
				while (mf + nm < s->members.n &&
				       s->lanes.v[s->groups.v[0].lane_first +
						  s->members.v[mf + nm]]
						       .cls == rep[k])
					nm++;
				memset(sl, 0, sizeof(*sl));
				sl->lane = s->groups.v[g].lane_first + rep[k];
				sl->member_first = mf;
				sl->n_members = nm;
				s->lanes.v[sl->lane].sim = (uint32_t)s->sims.n;
				s->sims.n++;
				mf += nm;
			}
		}
	} else {
		RESERVE(&s->members, s->lanes.n);
		RESERVE(&s->sims, s->lanes.n);
		for (uint32_t g = 0; g < G; g++) {
			const struct tp_plan_group *gr = &plan->groups.v[g];
			s->groups.v[g].sim_first = (uint32_t)s->sims.n;
			s->groups.v[g].n_sim = gr->dp;
			for (uint32_t r = 0; r < gr->dp; r++) {
				struct simlane *sl = &s->sims.v[s->sims.n];
				struct lane *ln =
					&s->lanes.v[s->groups.v[g].lane_first + r];
				memset(sl, 0, sizeof(*sl));
				sl->lane = s->groups.v[g].lane_first + r;
				sl->member_first = (uint32_t)s->members.n;
				sl->n_members = 1;
				s->members.v[s->members.n++] = r;
				ln->cls = r;
				ln->sim = (uint32_t)s->sims.n;
				s->sims.n++;
			}
		}
	}
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/* Resources: devices of sim lanes, merged when they belong to exactly the
 * same sim lanes (partition refinement). */
static enum tp_status build_resources(const struct tp_sim *sim,
				      const struct tp_plan *plan,
				      struct tp_sim_scratch *s,
				      struct tp_error *err)
{
	size_t inc = 1;
	uint32_t next = 1, *rmap, *rstamp, *dense, n_res = 0;

	for (size_t L = 0; L < s->sims.n; L++)
		inc += s->lanes.v[s->sims.v[L].lane].tp;
	s->tmp.n = 0;
	RESERVE(&s->tmp, 3 * inc + 3);
	rmap = s->tmp.v;
	rstamp = rmap + inc + 1;
	dense = rstamp + inc + 1;
	for (size_t k = 0; k < 3 * inc + 3; k++)
		s->tmp.v[k] = TP_NONE;
	for (size_t k = 0; k < plan->devs.n; k++)
		s->dev_res[plan->devs.v[k]] = 0;
	for (uint32_t L = 0; L < s->sims.n; L++) {
		const struct lane *ln = &s->lanes.v[s->sims.v[L].lane];
		for (uint32_t k = 0; k < ln->tp; k++) {
			uint32_t d = plan->devs.v[ln->dev_first + k];
			uint32_t old = s->dev_res[d];
			if (rstamp[old] != L) {
				rstamp[old] = L;
				rmap[old] = next++;
			}
			s->dev_res[d] = rmap[old];
		}
	}
	s->res.n = s->lres.n = 0;
	for (uint32_t L = 0; L < s->sims.n; L++) {
		struct simlane *sl = &s->sims.v[L];
		const struct lane *ln = &s->lanes.v[sl->lane];
		RESERVE(&s->lres, ln->tp);
		sl->res_first = (uint32_t)s->lres.n;
		sl->n_res = 0;
		for (uint32_t k = 0; k < ln->tp; k++) {
			uint32_t d = plan->devs.v[ln->dev_first + k];
			uint32_t id = s->dev_res[d], j;
			if (dense[id] == TP_NONE) {
				RESERVE(&s->res, 1);
				memset(&s->res.v[s->res.n], 0,
				       sizeof(struct resource));
				dense[id] = n_res++;
				s->res.n++;
			}
			s->dev_mark[d] = dense[id];
			for (j = 0; j < sl->n_res; j++)
				if (s->lres.v[sl->res_first + j] == dense[id])
					break;
			if (j == sl->n_res) {
				s->lres.v[s->lres.n++] = dense[id];
				sl->n_res++;
			}
		}
	}
	/* dev_res: dense resource of every simulated device, else NONE */
	for (size_t k = 0; k < plan->devs.n; k++)
		s->dev_res[plan->devs.v[k]] = TP_NONE;
	for (uint32_t L = 0; L < s->sims.n; L++) {
		const struct lane *ln = &s->lanes.v[s->sims.v[L].lane];
		for (uint32_t k = 0; k < ln->tp; k++) {
			uint32_t d = plan->devs.v[ln->dev_first + k];
			s->dev_res[d] = s->dev_mark[d];
		}
	}
	(void)sim;
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/* ------------------------------------------------------------------ */
/* Task graph                                                          */

static inline uint32_t new_task(struct tp_sim_scratch *s,
				enum task_kind kind, enum comm_what what,
				double dur, uint32_t ref, uint32_t micro)
{
	struct task *t;

	if (s->tasks.n >= s->tasks.cap &&
	    (tp_vec_reserve(&s->tasks, 1) || s->tasks.n >= (1u << 30)))
		return TP_NONE;
	if (s->tasks.n >= (1u << 30))
		return TP_NONE;
	t = &s->tasks.v[s->tasks.n];
	memset(t, 0, sizeof(*t));
	t->kind = (uint8_t)kind;
	t->what = (uint8_t)what;
	t->dur = dur;
	t->ref = ref;
	t->micro = micro;
	t->start = t->end = -1;
	return (uint32_t)s->tasks.n++;
}

static inline int add_edge(struct tp_sim_scratch *s, uint32_t from,
			   uint32_t to, bool on_start)
{
	uint64_t e = ((uint64_t)from << 33) | ((uint64_t)to << 1) |
		     (on_start ? 1u : 0u);

	if (s->edges.n < s->edges.cap) {
		s->edges.v[s->edges.n++] = e;
		return 0;
	}
	return tp_vec_push(&s->edges, e);
}

#define TASK(var, ...)                                                        \
	do {                                                                  \
		(var) = new_task(s, __VA_ARGS__);                             \
		if ((var) == TP_NONE)                                         \
			goto nomem;                                           \
	} while (0)
#define EDGE(a, b, st)                                                        \
	do {                                                                  \
		if (add_edge(s, (a), (b), (st)))                              \
			goto nomem;                                           \
	} while (0)

static inline uint32_t f_task(const struct tp_sim_scratch *s, uint32_t L,
			      uint32_t i)
{
	return s->sims.v[L].task_first + 2 * i;
}
static inline uint32_t b_task(const struct tp_sim_scratch *s, uint32_t L,
			      uint32_t i)
{
	return s->sims.v[L].task_first + 2 * i + 1;
}

static inline uint32_t lane_dev(const struct tp_plan *plan,
				const struct tp_sim_scratch *s, uint32_t g,
				uint32_t r, uint32_t k)
{
	const struct lane *ln = &s->lanes.v[s->groups.v[g].lane_first + r];
	return plan->devs.v[ln->dev_first + k];
}

/* Pipeline transfers of one group edge between two sim lanes, for every
 * micro-batch, both directions.  Flows: tensor rank j of each member
 * replica's source lane to rank j of its destination lane (Megatron's
 * scatter/gather: each rank sends 1/min(t, t') of the activation). */
static enum tp_status p2p(const struct tp_plan *plan,
			  struct tp_sim_scratch *s, uint32_t e, uint32_t LS,
			  uint32_t LD, double samples, const uint32_t *rs,
			  const uint32_t *rd, uint32_t n_pairs,
			  struct tp_error *err)
{
	const struct gedge *ge = &s->gedges.v[e];
	const struct lane *ls = &s->lanes.v[s->sims.v[LS].lane];
	const struct lane *ld = &s->lanes.v[s->sims.v[LD].lane];
	uint32_t nf = ls->tp < ld->tp ? ls->tp : ld->tp, btf, btb;
	uint32_t m = plan->micro_batches;
	double bytes = ge->bytes * samples / nf;
	double lat = s->sim->o.params.p2p_latency_s;

	uint32_t *fp, nfp = 0;

	s->tmp4.n = 0;
	if (tp_vec_reserve(&s->tmp4, 2 * (size_t)n_pairs * nf + 2))
		goto nomem;
	fp = s->tmp4.v;
	for (uint32_t p = 0; p < n_pairs; p++)
		for (uint32_t j = 0; j < nf; j++) {
			fp[2 * nfp] = lane_dev(plan, s, ge->src, rs[p], j);
			fp[2 * nfp + 1] = lane_dev(plan, s, ge->dst, rd[p], j);
			nfp++;
		}
	if (tp_sim_acc_pairs(s, fp, nfp) || tp_sim_acc_emit(s, &btf))
		goto nomem;
	for (uint32_t k = 0; k < nfp; k++) {
		uint32_t x = fp[2 * k];
		fp[2 * k] = fp[2 * k + 1];
		fp[2 * k + 1] = x;
	}
	if (tp_sim_acc_pairs(s, fp, nfp) || tp_sim_acc_emit(s, &btb))
		goto nomem;
	/* the receiver's tensor ranks each got 1/nf of the activation and
	 * all-gather it over their fabric (Megatron's scatter/gather); under
	 * sequence parallelism the sharded activation is what they need */
	if (btf != TP_NONE)
		s->btypes.v[btf].latency +=
			lat + (ld->tp > 1 && !plan->groups.v[ge->dst].sp
				       ? (ld->tp_a + ld->tp_k * bytes * nf) / 2
				       : 0);
	if (btb != TP_NONE)
		s->btypes.v[btb].latency +=
			lat + (ls->tp > 1 && !plan->groups.v[ge->src].sp
				       ? (ls->tp_a + ls->tp_k * bytes * nf) / 2
				       : 0);
	for (uint32_t i = 0; i < m; i++) {
		uint32_t t;
		if (btf != TP_NONE && bytes > 0) {
			TASK(t, TK_COMM, CW_P2P_F, bytes, btf, i);
			EDGE(f_task(s, LS, i), t, false);
			EDGE(t, f_task(s, LD, i), false);
			if (tp_vec_push(&s->p2p, t) ||
			    tp_vec_push(&s->p2p, f_task(s, LS, i)))
				goto nomem;
		} else {
			EDGE(f_task(s, LS, i), f_task(s, LD, i), false);
		}
		if (btb != TP_NONE && bytes > 0) {
			TASK(t, TK_COMM, CW_P2P_B, bytes, btb, i);
			EDGE(b_task(s, LD, i), t, false);
			EDGE(t, b_task(s, LS, i), false);
			if (tp_vec_push(&s->p2p, t) ||
			    tp_vec_push(&s->p2p, b_task(s, LD, i)))
				goto nomem;
		} else {
			EDGE(b_task(s, LD, i), b_task(s, LS, i), false);
		}
	}
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/* One phase of a collective over the replicas of group g, all tensor
 * ranks at once: flows into the accumulator. */
enum coll_kind { CK_RING, CK_INTRA, CK_INTER, CK_PS_PUSH, CK_PS_PULL };

struct phase {
	uint32_t bt;
	double bytes; /* per flow */
};

/* Participants of rank j of group g, sorted by device (so by node). */
static uint32_t *participants(const struct tp_plan *plan,
			      struct tp_sim_scratch *s, uint32_t g,
			      uint32_t j)
{
	uint32_t dp = plan->groups.v[g].dp, *p;

	s->tmp2.n = 0;
	if (tp_vec_reserve(&s->tmp2, 2 * (size_t)dp + 2))
		return NULL;
	p = s->tmp2.v;
	for (uint32_t r = 0; r < dp; r++)
		p[r] = lane_dev(plan, s, g, r, j);
	if (!sorted_u32(p, dp))
		qsort(p, dp, sizeof(*p), cmp_u32);
	return p;
}

/* Node runs of a sorted participant list: fills starts (k+1 entries). */
static uint32_t node_runs(const struct tp_cluster *c, const uint32_t *p,
			  uint32_t n, uint32_t *starts, uint32_t *gmin,
			  uint32_t *gmax)
{
	uint32_t k = 0;

	*gmin = UINT32_MAX;
	*gmax = 0;
	for (uint32_t i = 0; i < n; i++)
		if (i == 0 ||
		    c->devices.v[p[i]].node != c->devices.v[p[i - 1]].node)
			starts[k++] = i;
	starts[k] = n;
	for (uint32_t q = 0; q < k; q++) {
		uint32_t l = starts[q + 1] - starts[q];
		if (l < *gmin)
			*gmin = l;
		if (l > *gmax)
			*gmax = l;
	}
	return k;
}

/*
 * Build the phases of the gradient synchronisation of group g (or, with
 * gather, the parameter all-gather of ZeRO): phases[] with per-flow bytes
 * for a message of S bytes per device.  Returns the phase count, -1 on
 * allocation failure.
 */
static int sync_phases(const struct tp_sim *sim, const struct tp_plan *plan,
		       struct tp_sim_scratch *s, uint32_t g, double S,
		       bool half, struct phase *ph)
{
	const struct tp_plan_group *gr = &plan->groups.v[g];
	const struct tp_sim_params *pa = &sim->o.params;
	uint32_t n = gr->dp, tp = gr->tp, rings = 1, np = 0;
	enum tp_sync method = gr->sync;
	double dn = n;

	if (half)
		method = TP_SYNC_RING; /* ZeRO: reduce-scatter / all-gather */
	if (method == TP_SYNC_RING) {
		uint32_t bt, r2 = 1;
		for (uint32_t j = 0; j < tp; j++) {
			uint32_t *p = participants(plan, s, g, j);
			if (!p || tp_sim_acc_ring(s, p, n, &r2))
				return -1;
			if (r2 > rings)
				rings = r2;
		}
		if (tp_sim_acc_emit(s, &bt))
			return -1;
		if (bt == TP_NONE)
			return 0;
		s->btypes.v[bt].latency =
			(half ? 1 : 2) * (dn - 1) *
			(s->btypes.v[bt].latency + pa->collective_latency_s);
		ph[np].bt = bt;
		ph[np].bytes = (half ? 1 : 2) * (dn - 1) / dn * S / rings;
		return (int)++np;
	}
	if (method == TP_SYNC_PS) {
		for (int dir = 0; dir < 2; dir++) {
			uint32_t bt;
			for (uint32_t j = 0; j < tp; j++)
				for (uint32_t r = 0; r < n; r++)
					for (uint32_t q = 0; q < n; q++) {
						uint32_t a = lane_dev(plan, s, g,
								      r, j);
						uint32_t b = lane_dev(plan, s, g,
								      q, j);
						if (q == r)
							continue;
						if (dir)
							tp_sim_acc_flow(s, b, a);
						else
							tp_sim_acc_flow(s, a, b);
					}
			if (tp_sim_acc_emit(s, &bt))
				return -1;
			if (bt == TP_NONE)
				continue;
			s->btypes.v[bt].latency += pa->collective_latency_s;
			ph[np].bt = bt;
			ph[np].bytes = S / dn;
			np++;
		}
		return (int)np;
	}
	/* hierarchical: intra-node reduce-scatter, inter-node all-reduce of
	 * S/g, intra-node all-gather */
	{
		uint32_t gmin = 1, gmax = 1, k = 1, bt1 = TP_NONE, bt2 = TP_NONE;
		uint32_t *starts;
		double lat1 = 0, lat2 = 0;
		s->dtmp.n = 0;
		/* intra-node rings */
		for (uint32_t j = 0; j < tp; j++) {
			uint32_t *p = participants(plan, s, g, j), r2;
			if (!p)
				return -1;
			starts = p + n;
			k = node_runs(sim->c, p, n, starts, &gmin, &gmax);
			for (uint32_t q = 0; q < k; q++)
				if (tp_sim_acc_ring(s, p + starts[q],
						    starts[q + 1] - starts[q],
						    &r2))
					return -1;
		}
		if (tp_sim_acc_emit(s, &bt1))
			return -1;
		if (bt1 != TP_NONE)
			lat1 = s->btypes.v[bt1].latency;
		for (uint32_t j = 0; j < tp; j++) {
			uint32_t *p = participants(plan, s, g, j);
			if (!p)
				return -1;
			starts = p + n;
			k = node_runs(sim->c, p, n, starts, &gmin, &gmax);
			if (k < 2)
				continue;
			/* ring of the x-th members, one per node */
			for (uint32_t x = 0; x < gmin; x++)
				for (uint32_t q = 0; q < k; q++)
					tp_sim_acc_flow(
						s, p[starts[q] + x],
						p[starts[(q + 1) % k] + x]);
		}
		if (tp_sim_acc_emit(s, &bt2))
			return -1;
		if (bt2 != TP_NONE)
			lat2 = s->btypes.v[bt2].latency;
		if (bt1 != TP_NONE) {
			s->btypes.v[bt1].latency =
				(gmax - 1) * (lat1 + pa->collective_latency_s);
			ph[np].bt = bt1;
			ph[np].bytes = (gmax - 1.0) / gmax * S;
			np++;
		}
		if (bt2 != TP_NONE) {
			s->btypes.v[bt2].latency =
				2 * (k - 1.0) * (lat2 + pa->collective_latency_s);
			ph[np].bt = bt2;
			ph[np].bytes = 2 * (k - 1.0) / k * S / gmin;
			np++;
		}
		if (bt1 != TP_NONE) {
			ph[np] = ph[0];
			np++;
		}
		return (int)np;
	}
}

/* Schedule order of a resource's tasks: a key per task (see README). */
struct sched {
	enum tp_schedule kind;
	uint32_t m, D, p, V;
};

static uint64_t task_key(const struct sched *sc, const struct ginfo *gi,
			 uint32_t i, int phase)
{
	uint64_t prim, tie;
	uint32_t m = sc->m, D = sc->D;

	if (phase == 2) {
		prim = (uint64_t)2 * m * (D + sc->V) + 2 * (uint64_t)D + 1;
		return (prim << TIE_BITS) | gi->rank;
	}
	tie = phase == 0 ? gi->rank : TIE_HALF + (TIE_HALF - 1 - gi->rank);
	switch (sc->kind) {
	case TP_SCHEDULE_GPIPE:
		prim = phase == 0 ? (uint64_t)gi->vd * m + i
				  : (uint64_t)D * m +
					    (uint64_t)(D - 1 - gi->vd) * m + i;
		break;
	case TP_SCHEDULE_INTERLEAVED: {
		uint32_t p = sc->p, V = sc->V, st = gi->vd % p, c = gi->vd / p;
		uint32_t block = i / p, r = i % p;
		uint32_t pb = m - block * p < p ? m - block * p : p;
		uint64_t mv = (uint64_t)m * V;
		uint64_t W = (uint64_t)2 * (p - st - 1) + (uint64_t)(V - 1) * p;
		uint64_t k;
		if (W > mv)
			W = mv;
		if (phase == 0) {
			k = (uint64_t)block * p * V + (uint64_t)c * pb + r;
			prim = k < W ? k : 2 * k - W;
		} else {
			k = (uint64_t)block * p * V +
			    (uint64_t)(V - 1 - c) * pb + r;
			prim = k < mv - W ? 2 * k + W + 1 : k + mv;
		}
		break;
	}
	default: /* 1F1B */
		prim = phase == 0 ? 2 * (uint64_t)i + gi->vd
				  : 2 * (uint64_t)i + 2 * (uint64_t)D -
					    gi->vd - 1;
		break;
	}
	return (prim << TIE_BITS) | tie;
}

static bool qless(const struct qitem *a, const struct qitem *b)
{
	return a->key < b->key || (a->key == b->key && a->task < b->task);
}

/* Sort q[0..n) by (key, task), a total order, merging its ascending runs
 * (natural merge sort); tmp holds n items. */
static void sort_runs(struct qitem *q, uint32_t n, struct qitem *tmp)
{
	struct qitem *src = q, *dst = tmp;
	uint32_t k = 1;

	while (k < n && !qless(&q[k], &q[k - 1]))
		k++;
	if (k >= n)
		return; /* already in order */
	for (;;) {
		uint32_t runs = 0, i = 0;
		while (i < n) {
			uint32_t a = i, b, c;
			while (i + 1 < n && !qless(&src[i + 1], &src[i]))
				i++;
			b = ++i;
			if (b < n) {
				while (i + 1 < n && !qless(&src[i + 1], &src[i]))
					i++;
				++i;
			}
			c = i;
			runs++;
			/* merge [a, b) and [b, c) into dst[a..c) */
			{
				uint32_t x = a, y = b, o = a;
				while (x < b && y < c)
					dst[o++] = qless(&src[y], &src[x])
							   ? src[y++]
							   : src[x++];
				while (x < b)
					dst[o++] = src[x++];
				while (y < c)
					dst[o++] = src[y++];
			}
		}
		{
			struct qitem *t = src;
			src = dst;
			dst = t;
		}
		if (runs <= 1)
			break;
	}
	if (src != q)
		memcpy(q, src, n * sizeof(*q));
}

static enum tp_status setup_schedule(const struct tp_plan *plan,
				     struct tp_sim_scratch *s, uint32_t depth,
				     struct sched *sc, struct tp_error *err)
{
	uint32_t G = (uint32_t)plan->groups.n, p = 0, vmax = 0;

	sc->kind = plan->schedule;
	sc->m = plan->micro_batches;
	sc->D = depth;
	sc->p = 1;
	sc->V = 1;
	if (G >= TIE_HALF)
		return tp_error_set_path(err, TP_ELIMIT, "$.groups",
					 "more than %u groups", TIE_HALF - 1);
	if (plan->schedule != TP_SCHEDULE_INTERLEAVED)
		return TP_OK;
	for (uint32_t g = 0; g < G; g++)
		if (s->groups.v[g].stage == g)
			p++;
	for (uint32_t g = 0; g < G; g++) {
		const struct ginfo *gi = &s->groups.v[g];
		const struct ginfo *rep = &s->groups.v[gi->stage];
		if (gi->vd % p != rep->vd % p)
			return tp_error_set_path(
				err, TP_EINPUT, "$.schedule",
				"the interleaved schedule needs chunk c of "
				"stage s at pipeline position c*p + s (p = %u "
				"device sets), but group %u sits at position "
				"%u on the devices of group %u (position %u); "
				"use 1f1b or reorder the groups",
				p, g, gi->vd, gi->stage, rep->vd);
		if (gi->vd / p + 1 > vmax)
			vmax = gi->vd / p + 1;
	}
	if (vmax < 2) {
		sc->kind = TP_SCHEDULE_1F1B;
		return TP_OK;
	}
	sc->p = p;
	sc->V = vmax;
	return TP_OK;
}

/* ------------------------------------------------------------------ */
/* The whole graph: compute, pipeline transfers, sync, optimizer        */

/* The gradient bucket of the overlapped sync: the plan's (tagplan plan
 * --grad-bucket-mb), else the simulator's. */
static double grad_bucket(const struct tp_sim *sim, const struct tp_plan *plan)
{
	return plan->grad_bucket_bytes > 0 ? plan->grad_bucket_bytes
					   : sim->o.params.grad_bucket_bytes;
}

static enum tp_status build_graph(const struct tp_sim *sim,
				  const struct tp_plan *plan,
				  struct tp_sim_scratch *s,
				  const struct sched *sc, bool mode_a,
				  struct tp_error *err)
{
	uint32_t G = (uint32_t)plan->groups.n, m = plan->micro_batches;
	const struct tp_sim_params *pa = &sim->o.params;
	const double bucket = grad_bucket(sim, plan);
	enum tp_status st;
	size_t nq = 0;

	s->tasks.n = s->edges.n = s->p2p.n = 0;
	/* compute tasks */
	for (uint32_t L = 0; L < s->sims.n; L++) {
		struct simlane *sl = &s->sims.v[L];
		const struct lane *ln = &s->lanes.v[sl->lane];
		RESERVE(&s->tasks, 2 * (size_t)m);
		RESERVE(&s->edges, m);
		sl->task_first = (uint32_t)s->tasks.n;
		for (uint32_t i = 0; i < m; i++) {
			uint32_t f, b;
			TASK(f, TK_F, 0, ln->f_comp + ln->f_comm, L, i);
			TASK(b, TK_B, 0, ln->b_comp + ln->b_comm, L, i);
			EDGE(f, b, false);
		}
	}
	/* pipeline transfers along group edges */
	for (uint32_t e = 0; e < s->gedges.n; e++) {
		const struct gedge *ge = &s->gedges.v[e];
		const struct ginfo *ga = &s->groups.v[ge->src];
		const struct ginfo *gb = &s->groups.v[ge->dst];
		if (mode_a) {
			for (uint32_t k = 0; k < ga->n_sim; k++) {
				uint32_t LS = ga->sim_first + k,
					 LD = gb->sim_first + k;
				const struct simlane *sl = &s->sims.v[LS];
				const uint32_t *mem =
					s->members.v + sl->member_first;
				st = p2p(plan, s, e, LS, LD,
					 s->lanes.v[sl->lane].samples, mem, mem,
					 sl->n_members, err);
				if (st)
					return st;
			}
		} else {
			const double *sa = tp_plan_group_shares(plan, ge->src);
			const double *sb = tp_plan_group_shares(plan, ge->dst);
			uint32_t na = plan->groups.v[ge->src].dp,
				 nb = plan->groups.v[ge->dst].dp;
			double a0 = 0, mbs = (double)plan->global_batch / m;
			for (uint32_t r = 0; r < na; r++) {
				double a1 = a0 + sa[r], b0 = 0;
				for (uint32_t q = 0; q < nb; q++) {
					double b1 = b0 + sb[q];
					double lo = a0 > b0 ? a0 : b0;
					double hi = a1 < b1 ? a1 : b1;
					if (hi - lo > 1e-12) {
						st = p2p(plan, s, e,
							 ga->sim_first + r,
							 gb->sim_first + q,
							 (hi - lo) * mbs, &r, &q,
							 1, err);
						if (st)
							return st;
					}
					b0 = b1;
				}
				a0 = a1;
			}
		}
	}
	/* gradient synchronisation per group */
	for (uint32_t g = 0; g < G; g++) {
		struct ginfo *gi = &s->groups.v[g];
		const struct tp_plan_group *gr = &plan->groups.v[g];
		struct phase ph[4];
		int np;
		double S = gi->grad_bytes, tail_frac = 0;
		uint32_t prev = TP_NONE;

		gi->first_sync = gi->last_sync = gi->tail_first = TP_NONE;
		gi->param_ag = TP_NONE;
		if (gr->dp < 2 || !(S > 0))
			continue;
		np = sync_phases(sim, plan, s, g, S, plan->zero >= 1, ph);
		if (np < 0)
			goto nomem;
		if (np == 0)
			continue;
		if (pa->overlap_grad_sync && bucket > 0)
			tail_frac = bucket >= S ? 1 : bucket / S;
		else
			tail_frac = -1; /* no overlap: one chain after B */
		/* main part: streams while the last backward runs */
		if (tail_frac >= 0 && tail_frac < 1) {
			for (int k = 0; k < np; k++) {
				uint32_t t;
				TASK(t, TK_COMM, CW_SYNC,
				     ph[k].bytes * (1 - tail_frac), ph[k].bt, g);
				if (gi->first_sync == TP_NONE)
					gi->first_sync = t;
				if (prev == TP_NONE) {
					for (uint32_t j = 0; j < gi->n_sim; j++)
						EDGE(b_task(s, gi->sim_first + j,
							    m - 1),
						     t, true);
				} else {
					EDGE(prev, t, false);
				}
				prev = t;
			}
		}
		/* tail (or everything): after the last backward */
		{
			double frac = tail_frac < 0 ? 1 : tail_frac;
			for (int k = 0; k < np; k++) {
				uint32_t t;
				TASK(t, TK_COMM,
				     tail_frac < 0 ? CW_SYNC : CW_SYNC_TAIL,
				     ph[k].bytes * frac, ph[k].bt, g);
				if (gi->first_sync == TP_NONE)
					gi->first_sync = t;
				if (k == 0) {
					gi->tail_first = t;
					for (uint32_t j = 0; j < gi->n_sim; j++)
						EDGE(b_task(s, gi->sim_first + j,
							    m - 1),
						     t, false);
				}
				if (prev != TP_NONE)
					EDGE(prev, t, false);
				prev = t;
			}
		}
		gi->last_sync = prev;
	}
	/* optimizer steps, then ZeRO-1/2 parameter all-gathers */
	for (uint32_t L = 0; L < s->sims.n; L++) {
		struct simlane *sl = &s->sims.v[L];
		const struct lane *ln = &s->lanes.v[sl->lane];
		const struct ginfo *gi = &s->groups.v[ln->group];
		uint32_t t;
		TASK(t, TK_OPT, 0, ln->opt_s, L, 0);
		sl->opt_task = t;
		if (gi->last_sync != TP_NONE)
			EDGE(gi->last_sync, t, false);
		EDGE(b_task(s, L, m - 1), t, false);
	}
	if (plan->zero == 1 || plan->zero == 2) {
		for (uint32_t g = 0; g < G; g++) {
			const struct ginfo *gi = &s->groups.v[g];
			struct phase ph[4];
			int np;
			uint32_t t;
			if (plan->groups.v[g].dp < 2 || !(gi->param_bytes > 0))
				continue;
			np = sync_phases(sim, plan, s, g, gi->param_bytes, true,
					 ph);
			if (np < 0)
				goto nomem;
			if (np == 0)
				continue;
			TASK(t, TK_COMM, CW_PARAM_AG, ph[0].bytes, ph[0].bt, g);
			s->groups.v[g].param_ag = t;
			for (uint32_t j = 0; j < gi->n_sim; j++)
				EDGE(s->sims.v[gi->sim_first + j].opt_task, t,
				     false);
		}
	}
	/* resource queues in schedule order */
	for (uint32_t x = 0; x < s->res.n; x++)
		s->res.v[x].q_n = 0;
	for (uint32_t L = 0; L < s->sims.n; L++) {
		const struct simlane *sl = &s->sims.v[L];
		for (uint32_t k = 0; k < sl->n_res; k++)
			s->res.v[s->lres.v[sl->res_first + k]].q_n += 2 * m + 1;
	}
	for (uint32_t x = 0; x < s->res.n; x++) {
		s->res.v[x].q_first = (uint32_t)nq;
		nq += s->res.v[x].q_n;
		s->res.v[x].q_n = 0;
		s->res.v[x].head = 0;
		s->res.v[x].busy = false;
	}
	s->queue.n = 0;
	RESERVE(&s->queue, nq);
	s->queue.n = nq;
	for (uint32_t L = 0; L < s->sims.n; L++) {
		const struct simlane *sl = &s->sims.v[L];
		const struct ginfo *gi =
			&s->groups.v[s->lanes.v[sl->lane].group];
		for (uint32_t k = 0; k < sl->n_res; k++) {
			struct resource *rs =
				&s->res.v[s->lres.v[sl->res_first + k]];
			struct qitem *q = s->queue.v + rs->q_first;
			/* three runs, each ascending in its key (the keys
			   grow with the micro-batch in every schedule) */
			for (uint32_t i = 0; i < m; i++)
				q[rs->q_n++] = (struct qitem){
					task_key(sc, gi, i, 0),
					f_task(s, L, i)};
			for (uint32_t i = 0; i < m; i++)
				q[rs->q_n++] = (struct qitem){
					task_key(sc, gi, i, 1),
					b_task(s, L, i)};
			q[rs->q_n++] = (struct qitem){task_key(sc, gi, 0, 2),
						      sl->opt_task};
		}
	}
	s->qtmp.n = 0;
	RESERVE(&s->qtmp, nq + 1);
	for (uint32_t x = 0; x < s->res.n; x++) {
		struct resource *rs = &s->res.v[x];
		sort_runs(s->queue.v + rs->q_first, rs->q_n, s->qtmp.v);
	}
	/* a task's position in the queue of its lane's first resource */
	for (uint32_t x = 0; x < s->res.n; x++) {
		const struct resource *rs = &s->res.v[x];
		for (uint32_t k = 0; k < rs->q_n; k++) {
			uint32_t t = s->queue.v[rs->q_first + k].task;
			const struct simlane *sl = &s->sims.v[s->tasks.v[t].ref];
			if (s->lres.v[sl->res_first] == x)
				s->tasks.v[t].qpos = k;
		}
	}
	/* blocking sends: the sender's next task waits for the transfer */
	if (pa->p2p_blocking) {
		for (size_t k = 0; k + 1 < s->p2p.n; k += 2) {
			uint32_t t = s->p2p.v[k], x = s->p2p.v[k + 1];
			const struct simlane *sl = &s->sims.v[s->tasks.v[x].ref];
			const struct resource *rs =
				&s->res.v[s->lres.v[sl->res_first]];
			uint32_t qp = s->tasks.v[x].qpos;
			if (qp + 1 < rs->q_n)
				EDGE(t, s->queue.v[rs->q_first + qp + 1].task,
				     false);
		}
	}
	/* ZeRO-3: gather a group's weights before every forward and
	 * backward, prefetched while the previous task runs */
	if (plan->zero == 3) {
		for (uint32_t g = 0; g < G; g++) {
			const struct ginfo *gi = &s->groups.v[g];
			struct phase ph[4];
			int np;
			if (plan->groups.v[g].dp < 2 || !(gi->param_bytes > 0))
				continue;
			np = sync_phases(sim, plan, s, g, gi->param_bytes, true,
					 ph);
			if (np < 0)
				goto nomem;
			if (np == 0)
				continue;
			for (uint32_t i = 0; i < m; i++)
				for (int phs = 0; phs < 2; phs++) {
					uint32_t t;
					TASK(t, TK_COMM, CW_ZERO_AG, ph[0].bytes,
					     ph[0].bt, i);
					for (uint32_t j = 0; j < gi->n_sim; j++) {
						uint32_t L = gi->sim_first + j;
						uint32_t x = phs ? b_task(s, L, i)
								 : f_task(s, L, i);
						const struct simlane *sl =
							&s->sims.v[L];
						const struct resource *rs =
							&s->res.v[s->lres.v
									  [sl->res_first]];
						uint32_t qp = s->tasks.v[x].qpos;
						EDGE(t, x, false);
						if (qp > 0)
							EDGE(s->queue
								     .v[rs->q_first +
									qp - 1]
								     .task,
							     t, true);
					}
				}
		}
	}
	/* successors, CSR */
	{
		size_t nt = s->tasks.n, ne = s->edges.n;
		for (size_t t = 0; t < nt; t++) {
			s->tasks.v[t].n_succ = 0;
			s->tasks.v[t].ndeps = 0;
		}
		for (size_t k = 0; k < ne; k++) {
			uint64_t e = s->edges.v[k];
			s->tasks.v[e >> 33].n_succ++;
			s->tasks.v[(e >> 1) & 0xffffffffu].ndeps++;
		}
		{
			uint32_t acc = 0;
			for (size_t t = 0; t < nt; t++) {
				s->tasks.v[t].succ_first = acc;
				acc += s->tasks.v[t].n_succ;
				s->tasks.v[t].n_succ = 0;
			}
		}
		s->succ.n = 0;
		RESERVE(&s->succ, ne);
		s->succ.n = ne;
		for (size_t k = 0; k < ne; k++) {
			uint64_t e = s->edges.v[k];
			struct task *a = &s->tasks.v[e >> 33];
			s->succ.v[a->succ_first + a->n_succ++] =
				(uint32_t)(e & 0x1ffffffffull);
		}
	}
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * Channel classes (see struct tp_sim_scratch): a channel's signature is
 * its bandwidth and the (bundle type, multiplicity) pairs crossing it, in
 * bundle-type order; each bundle type used by a task gets its entries
 * over the classes (cents), one per class it crosses.
 */
static int channel_classes(const struct tp_sim *sim, struct tp_sim_scratch *s)
{
	uint32_t stamp = ++s->cls_stamp, n_cls = 0;
	size_t nb = s->btypes.n, total = 0, cap = 16;

	s->cents.n = s->ccap.n = s->clast.n = 0;
	s->bt_used.n = 0;
	if (tp_vec_reserve(&s->bt_used, nb + 1))
		return -1;
	memset(s->bt_used.v, 0, nb + 1);
	for (size_t t = 0; t < s->tasks.n; t++)
		if (s->tasks.v[t].kind == TK_COMM)
			s->bt_used.v[s->tasks.v[t].ref] = 1;
	for (size_t b = 0; b < nb; b++) {
		const struct btype *bt = &s->btypes.v[b];
		if (!s->bt_used.v[b])
			continue;
		total += bt->n_ent;
		for (uint32_t j = 0; j < bt->n_ent; j++) {
			const struct bent *en = &s->bents.v[bt->ent_first + j];
			uint64_t bw;
			if (s->cstamp[en->chan] != stamp) {
				s->cstamp[en->chan] = stamp;
				memcpy(&bw, &sim->chan_bw[en->chan], sizeof(bw));
				s->chash[en->chan] = mix64(bw);
			}
			s->chash[en->chan] = mix64(s->chash[en->chan] ^
						   ((uint64_t)b << 32 |
						    en->count));
		}
	}
	while (cap < 2 * total + 2)
		cap *= 2;
	s->hkeys.n = s->hvals.n = 0;
	if (tp_vec_reserve(&s->hkeys, cap) || tp_vec_reserve(&s->hvals, cap) ||
	    tp_vec_reserve(&s->cents, total + 1))
		return -1;
	for (size_t k = 0; k < cap; k++)
		s->hvals.v[k] = TP_NONE;
	for (size_t b = 0; b < nb; b++) {
		struct btype *bt = &s->btypes.v[b];
		bt->cls_first = (uint32_t)s->cents.n;
		bt->n_cls = 0;
		if (!s->bt_used.v[b])
			continue;
		for (uint32_t j = 0; j < bt->n_ent; j++) {
			const struct bent *en = &s->bents.v[bt->ent_first + j];
			uint64_t h = s->chash[en->chan];
			size_t slot = (size_t)h & (cap - 1);
			uint32_t id;
			while (s->hvals.v[slot] != TP_NONE &&
			       s->hkeys.v[slot] != h)
				slot = (slot + 1) & (cap - 1);
			if (s->hvals.v[slot] == TP_NONE) {
				if (tp_vec_push(&s->ccap, sim->chan_bw[en->chan]) ||
				    tp_vec_push(&s->clast, 0))
					return -1;
				s->hkeys.v[slot] = h;
				s->hvals.v[slot] = n_cls++;
			}
			id = s->hvals.v[slot];
			/* one entry per class in this bundle (its channels
			 * of one class all have the same multiplicity) */
			if (s->clast.v[id] == b + 1)
				continue;
			s->clast.v[id] = (uint32_t)b + 1;
			s->cents.v[s->cents.n++] = (struct bent){id, en->count};
			bt->n_cls++;
		}
	}
	s->ccap_rem.n = s->cweight.n = s->cmark2.n = 0;
	s->cuse.n = 0;
	if (tp_vec_reserve(&s->ccap_rem, n_cls + 1) ||
	    tp_vec_reserve(&s->cweight, n_cls + 1) ||
	    tp_vec_reserve(&s->cmark2, n_cls + 1) ||
	    tp_vec_reserve(&s->cuse, n_cls + 1))
		return -1;
	memset(s->cmark2.v, 0, (n_cls + 1) * sizeof(uint32_t));
	memset(s->cuse.v, 0, (n_cls + 1) * sizeof(uint32_t));
	return 0;
}

/* ------------------------------------------------------------------ */
/* Engine                                                              */

struct eng {
	const struct tp_sim *sim;
	struct tp_sim_scratch *s;
	double now, tflow;
	bool rates_dirty;
	int oom;
};

static void heap_push(struct eng *E, double t, uint32_t task, uint32_t ev)
{
	struct tp_sim_scratch *s = E->s;
	struct heap_ev *h;
	size_t i;

	if (tp_vec_reserve(&s->heap, 1)) {
		E->oom = 1;
		return;
	}
	h = s->heap.v;
	i = s->heap.n++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (h[p].t < t || (h[p].t == t && h[p].task <= task))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = (struct heap_ev){t, task, ev};
}

static struct heap_ev heap_pop(struct eng *E)
{
	struct tp_sim_scratch *s = E->s;
	struct heap_ev *h = s->heap.v, top = h[0], last = h[--s->heap.n];
	size_t i = 0, n = s->heap.n;

	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		const struct heap_ev *cur = &last;
		if (l < n && (h[l].t < cur->t ||
			      (h[l].t == cur->t && h[l].task < cur->task))) {
			m = l;
			cur = &h[l];
		}
		if (r < n && (h[r].t < cur->t ||
			      (h[r].t == cur->t && h[r].task < cur->task)))
			m = r;
		if (m == i)
			break;
		h[i] = h[m];
		i = m;
	}
	if (n)
		h[i] = last;
	return top;
}

static void ready(struct eng *E, uint32_t id);

static void dec(struct eng *E, uint32_t id)
{
	if (--E->s->tasks.v[id].ndeps == 0)
		ready(E, id);
}

static void notify_start(struct eng *E, uint32_t id)
{
	struct tp_sim_scratch *s = E->s;
	const struct task *t = &s->tasks.v[id];

	for (uint32_t k = 0; k < t->n_succ; k++) {
		uint32_t x = s->succ.v[t->succ_first + k];
		if (x & 1)
			dec(E, x >> 1);
	}
}

static void try_start(struct eng *E, uint32_t id)
{
	struct tp_sim_scratch *s = E->s;
	struct task *t = &s->tasks.v[id];
	const struct simlane *sl = &s->sims.v[t->ref];

	if (t->started)
		return;
	for (uint32_t k = 0; k < sl->n_res; k++) {
		const struct resource *r = &s->res.v[s->lres.v[sl->res_first + k]];
		if (r->busy || r->head >= r->q_n ||
		    s->queue.v[r->q_first + r->head].task != id)
			return;
	}
	for (uint32_t k = 0; k < sl->n_res; k++)
		s->res.v[s->lres.v[sl->res_first + k]].busy = true;
	t->started = 1;
	t->start = E->now;
	heap_push(E, E->now + t->dur, id, 0);
	notify_start(E, id);
}

static void flow_begin(struct eng *E, uint32_t id);

static void ready(struct eng *E, uint32_t id)
{
	struct task *t = &E->s->tasks.v[id];

	switch (t->kind) {
	case TK_F:
	case TK_B:
	case TK_OPT:
		try_start(E, id);
		break;
	case TK_COMM: {
		const struct btype *bt = &E->s->btypes.v[t->ref];
		t->started = 1;
		t->start = E->now;
		notify_start(E, id);
		if (bt->latency > 0)
			heap_push(E, E->now + bt->latency, id, 1);
		else
			flow_begin(E, id);
		break;
	}
	default:
		t->started = 1;
		t->start = E->now;
		notify_start(E, id);
		heap_push(E, E->now + t->dur, id, 0);
		break;
	}
}

static void finish(struct eng *E, uint32_t id)
{
	struct tp_sim_scratch *s = E->s;
	struct task *t = &s->tasks.v[id];

	t->end = E->now;
	t->done = 1;
	if (t->kind == TK_F || t->kind == TK_B || t->kind == TK_OPT) {
		const struct simlane *sl = &s->sims.v[t->ref];
		for (uint32_t k = 0; k < sl->n_res; k++) {
			struct resource *r =
				&s->res.v[s->lres.v[sl->res_first + k]];
			r->busy = false;
			r->head++;
		}
	}
	for (uint32_t k = 0; k < t->n_succ; k++) {
		uint32_t x = s->succ.v[t->succ_first + k];
		if (!(x & 1))
			dec(E, x >> 1);
	}
	if (t->kind == TK_F || t->kind == TK_B || t->kind == TK_OPT) {
		const struct simlane *sl = &s->sims.v[t->ref];
		for (uint32_t k = 0; k < sl->n_res; k++) {
			struct resource *r =
				&s->res.v[s->lres.v[sl->res_first + k]];
			if (!r->busy && r->head < r->q_n) {
				uint32_t h = s->queue.v[r->q_first + r->head].task;
				if (s->tasks.v[h].ndeps == 0)
					try_start(E, h);
			}
		}
	}
}

/* Move every active bundle forward to time t. */
static void advance(struct eng *E, double t)
{
	struct tp_sim_scratch *s = E->s;
	double dt = t - E->tflow;

	if (dt > 0)
		for (size_t k = 0; k < s->act.n; k++)
			s->act.v[k].remaining -= s->act.v[k].rate * dt;
	E->tflow = t;
}

/*
 * Max-min fair rates of the active bundles (progressive filling; the
 * flows of one bundle move in lockstep).  Only needed when the set of
 * bundles sharing some channel class changed (class_use): a bundle alone
 * on its classes moves at its own slowest channel's rate, and bundles
 * that share nothing with a starting or ending one keep theirs.
 */
static void rates(struct eng *E)
{
	struct tp_sim_scratch *s = E->s;
	size_t na = s->act.n, left = na;
	uint32_t stamp = ++s->stamp;
	double *cap_rem = s->ccap_rem.v, *weight = s->cweight.v;
	const double *ccap = s->ccap.v;
	uint32_t *cmark = s->cmark2.v;
	const struct bent *cents = s->cents.v;
	struct active *act = s->act.v;

	E->rates_dirty = false;
	if (na == 0)
		return;
	if (na == 1) {
		/* alone: its slowest channel (progressive filling gives
		 * exactly this) */
		act[0].rate = s->btypes.v[s->tasks.v[act[0].task].ref].rate_alone;
		return;
	}
	s->ctouched.n = 0;
	if (tp_vec_reserve(&s->ctouched, s->ccap.n + 1)) {
		E->oom = 1;
		return;
	}
	for (size_t k = 0; k < na; k++) {
		struct active *a = &act[k];
		const struct bent *en = cents + a->cls_first;
		a->rate = 0;
		a->frozen = false;
		for (uint32_t j = 0; j < a->n_cls; j++) {
			uint32_t c = en[j].chan;
			if (cmark[c] != stamp) {
				cmark[c] = stamp;
				cap_rem[c] = ccap[c];
				weight[c] = 0;
				s->ctouched.v[s->ctouched.n++] = c;
			}
			weight[c] += en[j].count;
		}
	}
	while (left > 0) {
		double delta = INF;
		const uint32_t *tc = s->ctouched.v;
		size_t nt = s->ctouched.n;
		for (size_t k = 0; k < nt; k++) {
			uint32_t c = tc[k];
			if (weight[c] > 0) {
				double d = cap_rem[c] / weight[c];
				if (d < delta)
					delta = d;
			}
		}
		if (!(delta < INF))
			break;
		if (delta < 0)
			delta = 0;
		for (size_t k = 0; k < na; k++)
			if (!act[k].frozen)
				act[k].rate += delta;
		for (size_t k = 0; k < nt; k++) {
			uint32_t c = tc[k];
			if (weight[c] > 0)
				cap_rem[c] -= delta * weight[c];
		}
		for (size_t k = 0; k < na; k++) {
			struct active *a = &act[k];
			const struct bent *en = cents + a->cls_first;
			bool sat = false;
			if (a->frozen)
				continue;
			for (uint32_t j = 0; j < a->n_cls && !sat; j++) {
				uint32_t c = en[j].chan;
				if (cap_rem[c] <= 1e-9 * ccap[c])
					sat = true;
			}
			if (!sat)
				continue;
			a->frozen = true;
			left--;
			for (uint32_t j = 0; j < a->n_cls; j++)
				weight[en[j].chan] -= en[j].count;
		}
	}
}

/* Bundle type bt starts or stops crossing its classes: update their use
 * counts.  Returns whether it shares a class with another active bundle
 * (then the rates of the bundles sharing bandwidth with it change). */
static bool class_use(struct tp_sim_scratch *s, const struct btype *bt,
		      bool on)
{
	bool shared = false;
	const struct bent *en = s->cents.v + bt->cls_first;
	uint32_t *cuse = s->cuse.v;

	for (uint32_t j = 0; j < bt->n_cls; j++) {
		uint32_t c = en[j].chan;
		if (on) {
			if (cuse[c]++ > 0)
				shared = true;
		} else if (--cuse[c] > 0) {
			shared = true;
		}
	}
	return shared;
}

/* Link statistics per bundle type (O(1) per event); spread over the
 * channels in make_report. */
static void link_stats(struct eng *E, struct btype *bt, bool on,
		       double bytes)
{
	if (on) {
		if (bt->active++ == 0)
			bt->since = E->now;
	} else {
		bt->moved += bytes;
		if (--bt->active == 0)
			bt->busy += E->now - bt->since;
	}
}

static void flow_begin(struct eng *E, uint32_t id)
{
	struct tp_sim_scratch *s = E->s;
	struct task *t = &s->tasks.v[id];

	if (!(t->dur > 0)) {
		finish(E, id);
		return;
	}
	advance(E, E->now);
	if (tp_vec_push(&s->act,
			((struct active){id, s->btypes.v[t->ref].cls_first,
					 s->btypes.v[t->ref].n_cls, false,
					 t->dur, 0}))) {
		E->oom = 1;
		return;
	}
	link_stats(E, &s->btypes.v[t->ref], true, 0);
	if (class_use(s, &s->btypes.v[t->ref], true))
		E->rates_dirty = true;
	else
		s->act.v[s->act.n - 1].rate = s->btypes.v[t->ref].rate_alone;
}

static enum tp_status run_engine(const struct tp_sim *sim,
				 struct tp_sim_scratch *s, double *t_end,
				 struct tp_error *err)
{
	struct eng E = {sim, s, 0, 0, false, 0};
	size_t nt = s->tasks.n;

	s->heap.n = 0;
	s->act.n = 0;
	for (size_t k = 0; k < s->touched.n; k++)
		s->cnt[s->touched.v[k]] = 0;
	s->touched.n = 0;
	for (size_t t = 0; t < nt; t++)
		if (s->tasks.v[t].ndeps == 0)
			ready(&E, (uint32_t)t);
	for (;;) {
		double th = s->heap.n ? s->heap.v[0].t : INF, tc = INF;
		size_t kmin = 0;

		if (E.oom)
			break;
		if (E.rates_dirty)
			rates(&E);
		for (size_t k = 0; k < s->act.n; k++) {
			const struct active *a = &s->act.v[k];
			double tt = a->rate > 0 ? E.tflow + a->remaining / a->rate
						: INF;
			if (tt < tc) {
				tc = tt;
				kmin = k;
			}
		}
		if (th == INF && tc == INF)
			break;
		if (tc <= th) {
			size_t k = 0;
			if (tc < E.now)
				tc = E.now;
			E.now = tc;
			advance(&E, tc);
			s->act.v[kmin].remaining = 0;
			/* finish every bundle done by now (compact first:
			 * finish() may start new flows) */
			s->tmp3.n = 0;
			while (k < s->act.n) {
				struct active *a = &s->act.v[k];
				double tot = s->tasks.v[a->task].dur;
				if (a->remaining <= 1e-9 * tot + 1e-6) {
					if (tp_vec_push(&s->tmp3, a->task)) {
						E.oom = 1;
						break;
					}
					s->act.v[k] = s->act.v[--s->act.n];
				} else {
					k++;
				}
			}
			for (size_t j = 0; j < s->tmp3.n; j++) {
				uint32_t id = s->tmp3.v[j];
				if (class_use(s, &s->btypes.v[s->tasks.v[id].ref],
					      false))
					E.rates_dirty = true;
				link_stats(&E, &s->btypes.v[s->tasks.v[id].ref],
					   false, s->tasks.v[id].dur);
				finish(&E, id);
			}
		} else {
			struct heap_ev ev = heap_pop(&E);
			E.now = ev.t;
			if (ev.ev == 1)
				flow_begin(&E, ev.task);
			else
				finish(&E, ev.task);
		}
	}
	if (E.oom)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	*t_end = 0;
	for (size_t t = 0; t < nt; t++) {
		const struct task *x = &s->tasks.v[t];
		if (!x->done)
			return tp_error_set_path(
				err, TP_EINPUT, "$.schedule",
				"the plan's groups cannot run in the %s order "
				"(tasks wait for each other); use the 1f1b "
				"schedule or groups that form a pipeline",
				"chosen");
		if (x->end > *t_end)
			*t_end = x->end;
	}
	s->tasks_total += nt;
	return TP_OK;
}

/* ------------------------------------------------------------------ */
/* Memory and report                                                   */

static void memory_walk(const struct tp_plan *plan, struct tp_sim_scratch *s)
{
	(void)plan;
	for (uint32_t x = 0; x < s->res.n; x++) {
		struct resource *rs = &s->res.v[x];
		double cur = 0, peak = 0;
		for (uint32_t k = 0; k < rs->q_n; k++) {
			const struct task *t =
				&s->tasks.v[s->queue.v[rs->q_first + k].task];
			const struct lane *ln =
				&s->lanes.v[s->sims.v[t->ref].lane];
			if (t->kind == TK_F) {
				cur += ln->act;
				if (cur > peak)
					peak = cur;
			} else if (t->kind == TK_B) {
				if (cur + ln->work > peak)
					peak = cur + ln->work;
				cur -= ln->act;
			}
		}
		rs->peak_act = peak;
	}
}

static double gb(double x)
{
	return x / 1e9;
}

/* Per-device memory terms (all lanes), and which term dominates. */
struct devmem {
	double w0, g0, o0; /* unsharded by ZeRO */
	double act_full, act;
	uint32_t dp_min;
	bool any;
};

static void suggest(const struct tp_sim *sim, const struct tp_plan *plan,
		    const struct tp_report_device *rd, const struct devmem *dm,
		    char *buf, size_t size)
{
	double cap = rd->capacity_bytes, peak = rd->peak_memory_bytes;
	const struct tp_memory_breakdown *b = &rd->memory;
	double state = b->weights + b->gradients + b->optimizer;

	(void)sim;
	if (dm->dp_min >= 2 && plan->zero < 3) {
		for (uint32_t z = plan->zero + 1; z <= 3; z++) {
			double d = dm->dp_min;
			double ns = dm->w0 / (z >= 3 ? d : 1) +
				    dm->g0 / (z >= 2 ? d : 1) +
				    dm->o0 / (z >= 1 ? d : 1);
			if (peak - state + ns <= cap &&
			    state >= b->activations) {
				snprintf(buf, size,
					 "zero=%u (shards %s over the %u "
					 "data-parallel replicas)",
					 z,
					 z == 1   ? "the optimizer state"
					 : z == 2 ? "optimizer state and "
						    "gradients"
						  : "optimizer state, gradients "
						    "and weights",
					 dm->dp_min);
				return;
			}
		}
	}
	if (b->activations > 0 && dm->act > 0) {
		double full = b->activations * dm->act_full / dm->act;
		bool has_full = dm->act_full >= dm->act * 0.999;
		if (!has_full && peak - b->activations + full <= cap) {
			snprintf(buf, size,
				 "recompute=full (keeps only layer inputs: "
				 "activations %.1f GB instead of %.1f GB)",
				 gb(full), gb(b->activations));
			return;
		}
		if (peak - b->activations / 2 <= cap) {
			snprintf(buf, size,
				 "a micro-batch half as large (twice the "
				 "micro-batches: activations %.1f GB)",
				 gb(b->activations / 2));
			return;
		}
	}
	snprintf(buf, size,
		 "more devices for this work (raise tp or pp; it needs about "
		 "%.2fx its memory)",
		 peak / (cap > 0 ? cap : 1));
}

static enum tp_status make_report(const struct tp_sim *sim,
				  const struct tp_plan *plan,
				  struct tp_sim_scratch *s, double t_end,
				  uint32_t depth, struct tp_report *rep,
				  struct tp_error *err)
{
	const struct tp_model *m = sim->m;
	const struct tp_cluster *c = sim->c;
	uint32_t nd = sim->n_dev, mb = plan->micro_batches, n_used = 0;
	double used_peak = 0, worst = -INF, t_pipe = 0, busy_sum = 0;
	double B = (double)plan->global_batch, rec_flop = 0;
	struct devmem *dm;
	enum tp_status st;
	uint32_t n_links = 0;

	free(rep->links);
	rep->links = NULL;
	rep->n_links = 0;
	st = tp_report_alloc(rep, nd, err);
	if (st)
		return st;
	s->dtmp.n = 0;
	if (tp_vec_reserve(&s->dtmp, (sizeof(struct devmem) / sizeof(double) +
				      1) * (size_t)nd))
		goto nomem;
	dm = (struct devmem *)(void *)s->dtmp.v;
	memset(dm, 0, sizeof(*dm) * nd);
	rep->worst_device = UINT32_MAX;
	rep->over_bytes = 0;
	rep->reason[0] = '\0';
	/* representatives and activation peaks */
	for (uint32_t d = 0; d < nd; d++)
		s->dev_rep[d] = TP_NONE;
	for (size_t l = 0; l < s->lanes.n; l++) {
		const struct lane *ln = &s->lanes.v[l];
		const struct lane *rl =
			&s->lanes.v[s->groups.v[ln->group].lane_first +
				    ln->cls];
		const struct tp_plan_group *gr = &plan->groups.v[ln->group];
		for (uint32_t k = 0; k < ln->tp; k++) {
			uint32_t d = plan->devs.v[ln->dev_first + k];
			uint32_t rd = plan->devs.v[rl->dev_first + k];
			struct tp_report_device *x = &rep->devices[d];
			double n = ln->params / sim->dtype_bytes;
			if (s->dev_rep[d] == TP_NONE) {
				s->dev_rep[d] = rd;
				if (s->dev_res[rd] != TP_NONE)
					x->memory.activations =
						s->res.v[s->dev_res[rd]]
							.peak_act;
			}
			x->memory.weights += ln->weights;
			x->memory.gradients += ln->grads;
			x->memory.optimizer += ln->optim;
			if (ln->temp > x->memory.temporary)
				x->memory.temporary = ln->temp;
			dm[d].w0 += n * sim->w_pp;
			dm[d].g0 += n * sim->g_pp;
			dm[d].o0 += n * sim->o_pp;
			dm[d].act += ln->act;
			dm[d].act_full += ln->act_full;
			if (!dm[d].any || gr->dp < dm[d].dp_min)
				dm[d].dp_min = gr->dp;
			dm[d].any = true;
		}
	}
	/* timing per resource, walking its order: compute and the tensor-
	 * parallel time inside its tasks; before each optimizer step, the
	 * wait for its group's sync (waiting for other replicas to start it
	 * is idle); after the last task, a trailing ZeRO all-gather */
	for (uint32_t x = 0; x < s->res.n; x++) {
		struct resource *rs = &s->res.v[x];
		double prev_end = 0, trail = 0;
		rs->comp = rs->comm = 0;
		for (uint32_t k = 0; k < rs->q_n; k++) {
			const struct task *t =
				&s->tasks.v[s->queue.v[rs->q_first + k].task];
			const struct lane *ln =
				&s->lanes.v[s->sims.v[t->ref].lane];
			const struct ginfo *gi = &s->groups.v[ln->group];
			if (t->kind == TK_F) {
				rs->comp += ln->f_comp;
				rs->comm += ln->f_comm;
			} else if (t->kind == TK_B) {
				rs->comp += ln->b_comp;
				rs->comm += ln->b_comm;
			} else {
				double from = prev_end;
				rs->comp += ln->opt_s;
				if (gi->first_sync != TP_NONE &&
				    s->tasks.v[gi->first_sync].start > from)
					from = s->tasks.v[gi->first_sync].start;
				if (t->start > from)
					rs->comm += t->start - from;
				if (gi->param_ag != TP_NONE)
					if (s->tasks.v[gi->param_ag].end > trail)
						trail = s->tasks.v[gi->param_ag]
								.end;
			}
			prev_end = t->end;
		}
		if (trail > prev_end)
			rs->comm += trail - prev_end;
	}
	for (uint32_t L = 0; L < s->sims.n; L++) {
		const struct simlane *sl = &s->sims.v[L];
		const struct lane *ln = &s->lanes.v[sl->lane];
		double last_b = 0;
		for (uint32_t i = 0; i < mb; i++) {
			double e = s->tasks.v[b_task(s, L, i)].end;
			if (e > last_b)
				last_b = e;
		}
		if (last_b > t_pipe)
			t_pipe = last_b;
		for (uint32_t k = 0; k < ln->tp; k++) {
			uint32_t d = plan->devs.v[ln->dev_first + k];
			const struct resource *rs = &s->res.v[s->dev_res[d]];
			rep->devices[d].compute_s = rs->comp;
			rep->devices[d].communication_s = rs->comm;
		}
	}
	for (uint32_t x = 0; x < s->res.n; x++) {
		struct resource *rs = &s->res.v[x];
		rs->busy_pipe = 0;
		for (uint32_t k = 0; k < rs->q_n; k++) {
			const struct task *t =
				&s->tasks.v[s->queue.v[rs->q_first + k].task];
			if (t->kind == TK_F || t->kind == TK_B)
				rs->busy_pipe += t->dur;
		}
		busy_sum += rs->busy_pipe;
	}
	/* pipeline idle share: only with pipeline stages (depth > 1) */
	rep->bubble_fraction =
		(t_pipe > 0 && s->res.n && depth > 1)
			? 1 - busy_sum / s->res.n / t_pipe
			: 0;
	if (rep->bubble_fraction < 0)
		rep->bubble_fraction = 0;
	/* every device: mirror, memory totals, feasibility */
	rep->feasible = true;
	for (uint32_t d = 0; d < nd; d++) {
		struct tp_report_device *x = &rep->devices[d];
		const struct tp_device_type *ty =
			&sim->types[c->devices.v[d].type];
		x->capacity_bytes = ty->memory_bytes;
		if (s->dev_rep[d] == TP_NONE) {
			x->idle_s = t_end;
			continue;
		}
		if (s->dev_rep[d] != d) {
			x->compute_s = rep->devices[s->dev_rep[d]].compute_s;
			x->communication_s =
				rep->devices[s->dev_rep[d]].communication_s;
		}
		n_used++;
		used_peak += sim->peak[c->devices.v[d].type];
		x->memory.reserved = ty->reserved_bytes;
		x->peak_memory_bytes = x->memory.weights + x->memory.gradients +
				       x->memory.optimizer +
				       x->memory.activations +
				       x->memory.temporary + x->memory.reserved;
		x->idle_s = t_end - x->compute_s - x->communication_s;
		if (x->idle_s < 0)
			x->idle_s = 0;
		if (x->peak_memory_bytes > x->capacity_bytes) {
			rep->feasible = false;
			if (x->peak_memory_bytes - x->capacity_bytes > worst) {
				worst = x->peak_memory_bytes - x->capacity_bytes;
				rep->worst_device = d;
			}
		}
	}
	if (!rep->feasible) {
		uint32_t d = rep->worst_device;
		const struct tp_report_device *x = &rep->devices[d];
		const struct tp_memory_breakdown *b = &x->memory;
		const char *names[] = {"weights",     "gradients",
				       "optimizer state", "activations",
				       "temporary buffers", "reserved memory"};
		double vals[] = {b->weights,     b->gradients, b->optimizer,
				 b->activations, b->temporary, b->reserved};
		int best = 0;
		char sug[200];
		for (int k = 1; k < 6; k++)
			if (vals[k] > vals[best])
				best = k;
		rep->over_bytes = worst;
		suggest(sim, plan, x, &dm[d], sug, sizeof(sug));
		snprintf(rep->reason, sizeof(rep->reason),
			 "device %s (%s) needs %.2f GB but has %.2f GB (over by "
			 "%.2f GB); %s dominate (%.2f GB); smallest change: %s",
			 c->devices.v[d].name,
			 sim->types[c->devices.v[d].type].name,
			 gb(x->peak_memory_bytes), gb(x->capacity_bytes),
			 gb(worst), names[best], gb(vals[best]), sug);
	}
	/* FLOP and throughput */
	for (uint32_t g = 0; g < plan->groups.n; g++) {
		const struct tp_plan_group *gr = &plan->groups.v[g];
		const uint32_t *ops = tp_plan_group_ops(plan, g);
		if (gr->recompute == TP_RECOMPUTE_NONE)
			continue;
		for (uint32_t k = 0; k < gr->n_ops; k++) {
			const struct tp_op *op = &m->ops.v[ops[k]];
			if (gr->recompute == TP_RECOMPUTE_FULL
				    ? op->layer >= 0
				    : op->selective_recompute)
				rec_flop += op->flop;
		}
	}
	rep->iteration_time_s = t_end;
	rep->n_devices = nd;
	rep->model_flop_per_iteration = B * (sim->fwd_flop + sim->bwd_flop +
					     rec_flop);
	if (t_end > 0) {
		rep->throughput_samples_per_s = B / t_end;
		rep->tokens_per_s = m->seq_len > 0 ? B * m->seq_len / t_end : 0;
		rep->tflops_per_device = n_used ? rep->model_flop_per_iteration /
							  n_used / t_end / 1e12
						: 0;
		rep->mfu = used_peak > 0 ? B * (sim->fwd_flop + sim->bwd_flop) /
						   (t_end * used_peak)
					 : 0;
	}
	/* links: pipeline/sync bundles, plus tensor-parallel traffic */
	for (uint32_t ch = 0; ch < sim->n_chan; ch++)
		s->chan_bytes[ch] = s->chan_busy[ch] = 0;
	for (size_t k = 0; k < s->btypes.n; k++) {
		const struct btype *bt = &s->btypes.v[k];
		if (!(bt->moved > 0))
			continue;
		for (uint32_t j = 0; j < bt->n_ent; j++) {
			const struct bent *en = &s->bents.v[bt->ent_first + j];
			s->chan_bytes[en->chan] += bt->moved * en->count;
			s->chan_busy[en->chan] += bt->busy;
		}
	}
	for (size_t l = 0; l < s->lanes.n; l++) {
		struct lane *ln = &s->lanes.v[l];
		const struct btype *bt;
		double per_flow, busy;
		uint32_t rings;
		if (ln->tp < 2 || !(ln->tp_bytes_mb > 0))
			continue;
		/* the lane's tensor-parallel ring, for its channels */
		if (tp_sim_acc_ring(s, plan->devs.v + ln->dev_first, ln->tp,
				    &rings) ||
		    tp_sim_acc_emit(s, &ln->tp_bt))
			goto nomem;
		if (ln->tp_bt == TP_NONE)
			continue;
		bt = &s->btypes.v[ln->tp_bt];
		per_flow = mb * ln->tp_bytes_mb * ln->tp_k * bt->rate_alone;
		busy = mb * (ln->f_comm + ln->b_comm);
		for (uint32_t j = 0; j < bt->n_ent; j++) {
			const struct bent *en = &s->bents.v[bt->ent_first + j];
			s->chan_bytes[en->chan] += per_flow * en->count;
			s->chan_busy[en->chan] += busy;
		}
	}
	for (uint32_t l = 0; l < c->links.n; l++)
		if (s->chan_bytes[2 * l] + s->chan_bytes[2 * l + 1] > 0)
			n_links++;
	if (n_links) {
		uint32_t k = 0;
		rep->links = tp_calloc(n_links, sizeof(*rep->links));
		if (!rep->links)
			goto nomem;
		for (uint32_t l = 0; l < c->links.n; l++) {
			double b = s->chan_bytes[2 * l] +
				   s->chan_bytes[2 * l + 1];
			double busy = s->chan_busy[2 * l] > s->chan_busy[2 * l + 1]
					      ? s->chan_busy[2 * l]
					      : s->chan_busy[2 * l + 1];
			if (!(b > 0))
				continue;
			rep->links[k].link = l;
			rep->links[k].bytes = b;
			rep->links[k].busy_s = busy < t_end ? busy : t_end;
			k++;
		}
		rep->n_links = n_links;
	}
	snprintf(rep->approximations, sizeof(rep->approximations),
		 "roofline op times with a GEMM efficiency curve (or profiles); "
		 "tensor-parallel collectives are alpha-beta on an idle "
		 "fabric; pipeline and data-parallel flows share links "
		 "max-min fairly; gradient sync overlaps the last backward in "
		 "%.6g MB buckets; embedding weight tying, data loading and "
		 "kernel overlap inside an op are not modelled",
		 grad_bucket(sim, plan) / 1e6);
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/*
 * A lower bound of the iteration time from the lanes alone (before the
 * task graph): every resource runs its tasks one at a time; none of them
 * starts before the forward of micro-batch 0 has passed through the
 * groups upstream of its own (head), and after its last backward the
 * backwards of the upstream groups and its own optimizer steps still run
 * (tail).  Transfers, synchronisation and waiting count as zero.  0 when
 * memory runs out.
 */
static double lower_bound(const struct tp_plan *plan, struct tp_sim_scratch *s)
{
	uint32_t G = (uint32_t)s->groups.n, R = (uint32_t)s->res.n;
	double m = plan->micro_batches, lb = 0;
	double *head, *tail, *fmin, *bmin, *busy, *opt, *rh, *rt;

	s->dtmp.n = 0;
	if (tp_vec_reserve(&s->dtmp, 4 * ((size_t)G + R) + 8))
		return 0;
	head = s->dtmp.v;
	tail = head + G;
	fmin = tail + G;
	bmin = fmin + G;
	busy = bmin + G;
	opt = busy + R;
	rh = opt + R;
	rt = rh + R;
	for (uint32_t g = 0; g < G; g++) {
		const struct ginfo *gi = &s->groups.v[g];
		fmin[g] = bmin[g] = INF;
		for (uint32_t k = 0; k < gi->n_sim; k++) {
			const struct lane *ln =
				&s->lanes.v[s->sims.v[gi->sim_first + k].lane];
			double f = ln->f_comp + ln->f_comm;
			double b = ln->b_comp + ln->b_comm;
			if (f < fmin[g])
				fmin[g] = f;
			if (b < bmin[g])
				bmin[g] = b;
		}
		if (!(fmin[g] < INF))
			fmin[g] = 0;
		if (!(bmin[g] < INF))
			bmin[g] = 0;
	}
	for (uint32_t k = 0; k < G; k++) {
		uint32_t g = s->gorder.v[k];
		head[g] = tail[g] = 0;
		for (uint32_t j = s->gin_off.v[g]; j < s->gin_off.v[g + 1];
		     j++) {
			uint32_t p = s->gedges.v[s->gin.v[j]].src;
			if (head[p] + fmin[p] > head[g])
				head[g] = head[p] + fmin[p];
			if (tail[p] + bmin[p] > tail[g])
				tail[g] = tail[p] + bmin[p];
		}
	}
	for (uint32_t x = 0; x < R; x++) {
		busy[x] = opt[x] = 0;
		rh[x] = rt[x] = INF;
	}
	for (uint32_t L = 0; L < s->sims.n; L++) {
		const struct simlane *sl = &s->sims.v[L];
		const struct lane *ln = &s->lanes.v[sl->lane];
		double fb = m * ((ln->f_comp + ln->f_comm) +
				 (ln->b_comp + ln->b_comm));
		for (uint32_t k = 0; k < sl->n_res; k++) {
			uint32_t x = s->lres.v[sl->res_first + k];
			busy[x] += fb;
			opt[x] += ln->opt_s;
			if (head[ln->group] < rh[x])
				rh[x] = head[ln->group];
			if (tail[ln->group] < rt[x])
				rt[x] = tail[ln->group];
		}
	}
	for (uint32_t x = 0; x < R; x++) {
		double v;
		if (!(rh[x] < INF))
			continue;
		v = rh[x] + busy[x] + (opt[x] > rt[x] ? opt[x] : rt[x]);
		if (v > lb)
			lb = v;
	}
	return lb;
}

enum tp_status tp_sim_run(const struct tp_sim *sim, const struct tp_plan *plan,
			  struct tp_sim_scratch *s, struct tp_report *report,
			  struct tp_strbuf *trace, struct tp_error *err)
{
	struct tp_sim_cut cut;

	return tp_sim_run_bounded(sim, plan, s, 0, report, trace, &cut, err);
}

/*
 * Does every device's memory (as make_report will count it: model state,
 * activation peak of its task order, temporary buffers, reserved) fit?
 * Else *over = the worst excess / that device's capacity.  Needs
 * memory_walk.  The sums run in make_report's order, so the answer is
 * exactly its feasibility.
 */
static bool memory_fits(const struct tp_sim *sim, const struct tp_plan *plan,
			struct tp_sim_scratch *s, double *over)
{
	const struct tp_cluster *c = sim->c;
	uint32_t nd = sim->n_dev;
	double *w, *g, *o, *a, *t, worst = -INF, cap_w = 1;
	bool fits = true;

	s->dtmp.n = 0;
	if (tp_vec_reserve(&s->dtmp, 5 * (size_t)nd + 5))
		return true; /* cannot tell: simulate */
	w = s->dtmp.v;
	g = w + nd;
	o = g + nd;
	a = o + nd;
	t = a + nd;
	memset(w, 0, 5 * (size_t)nd * sizeof(double));
	for (uint32_t d = 0; d < nd; d++)
		s->dev_rep[d] = TP_NONE;
	for (size_t l = 0; l < s->lanes.n; l++) {
		const struct lane *ln = &s->lanes.v[l];
		const struct lane *rl =
			&s->lanes.v[s->groups.v[ln->group].lane_first +
				    ln->cls];
		for (uint32_t k = 0; k < ln->tp; k++) {
			uint32_t d = plan->devs.v[ln->dev_first + k];
			uint32_t rd = plan->devs.v[rl->dev_first + k];
			if (s->dev_rep[d] == TP_NONE) {
				s->dev_rep[d] = rd;
				if (s->dev_res[rd] != TP_NONE)
					a[d] = s->res.v[s->dev_res[rd]].peak_act;
			}
			w[d] += ln->weights;
			g[d] += ln->grads;
			o[d] += ln->optim;
			if (ln->temp > t[d])
				t[d] = ln->temp;
		}
	}
	for (uint32_t d = 0; d < nd; d++) {
		const struct tp_device_type *ty =
			&sim->types[c->devices.v[d].type];
		double peak;
		if (s->dev_rep[d] == TP_NONE)
			continue;
		peak = w[d] + g[d] + o[d] + a[d] + t[d] + ty->reserved_bytes;
		if (peak > ty->memory_bytes) {
			fits = false;
			if (peak - ty->memory_bytes > worst) {
				worst = peak - ty->memory_bytes;
				cap_w = ty->memory_bytes;
			}
		}
	}
	*over = fits ? 0 : cap_w > 0 ? worst / cap_w : 1;
	return fits;
}

/* Everything before the task graph: plan analysis, lanes, resources. */
static enum tp_status prepare(const struct tp_sim *sim,
			      const struct tp_plan *plan,
			      struct tp_sim_scratch *s, uint32_t *depth,
			      bool *mode_a, struct tp_error *err)
{
	enum tp_status st;

	if (sim->o.validate) {
		st = tp_plan_validate(plan, sim->m, sim->c, err);
		if (st)
			return st;
	} else if (plan->groups.n == 0 || plan->micro_batches == 0) {
		return tp_error_set_path(err, TP_EINPUT, "$.groups",
					 "the plan has no groups");
	}
	s->btypes.n = s->bents.n = 0;
	/* no flow accumulation left over from an earlier run */
	for (size_t k = 0; k < s->touched.n; k++)
		s->cnt[s->touched.v[k]] = 0;
	s->touched.n = 0;
	s->acc_flows = 0;
	s->acc_latency = 0;
	s->acc_oom = false;
	st = analyse_groups(sim, plan, s, depth, err);
	if (!st)
		st = build_lanes(sim, plan, s, mode_a, err);
	if (!st)
		st = build_resources(sim, plan, s, err);
	return st;
}

enum tp_status tp_sim_lower_bound(const struct tp_sim *sim,
				  const struct tp_plan *plan,
				  struct tp_sim_scratch *s,
				  double *lower_bound_s, struct tp_error *err)
{
	uint32_t depth = 1;
	bool mode_a = false;
	enum tp_status st = prepare(sim, plan, s, &depth, &mode_a, err);

	*lower_bound_s = st ? 0 : lower_bound(plan, s);
	return st;
}

enum tp_status tp_sim_run_bounded(const struct tp_sim *sim,
				  const struct tp_plan *plan,
				  struct tp_sim_scratch *s, double cutoff_s,
				  struct tp_report *report,
				  struct tp_strbuf *trace,
				  struct tp_sim_cut *cut, struct tp_error *err)
{
	enum tp_status st;
	uint32_t depth = 1;
	bool mode_a = false;
	struct sched sc;
	double t_end = 0;

	memset(cut, 0, sizeof(*cut));
	st = prepare(sim, plan, s, &depth, &mode_a, err);
	if (st)
		return st;
	cut->lower_bound_s = lower_bound(plan, s);
	if (cutoff_s > 0 && cut->lower_bound_s >= cutoff_s) {
		cut->bounded = true;
		return TP_OK;
	}
	st = setup_schedule(plan, s, depth, &sc, err);
	if (!st)
		st = build_graph(sim, plan, s, &sc, mode_a, err);
	if (st)
		return st;
	memory_walk(plan, s);
	if (cutoff_s > 0 && !memory_fits(sim, plan, s, &cut->over_fraction)) {
		cut->bounded = true;
		cut->out_of_memory = true;
		return TP_OK;
	}
	if (channel_classes(sim, s))
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	st = run_engine(sim, s, &t_end, err);
	if (st)
		return st;
	st = make_report(sim, plan, s, t_end, depth, report, err);
	if (st)
		return st;
	if (trace)
		tp_sim_trace_write(sim, plan, s, t_end, trace);
	return TP_OK;
}
