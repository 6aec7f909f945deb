/*
 * sim.c - the simulator's entry points: options, tp_sim_new (what depends
 * on the model and cluster alone), scratches, and a run in its steps:
 * plan analysis and lanes (lanes.c), the lower bound (report.c), the
 * schedule and task graph (schedule.c, taskgraph.c), memory (memory.c),
 * the event engine (engine.c), the report (report.c) and the trace
 * (trace.c).  The model: src/sim/README.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/precision.h"
#include "sim_int.h"

void tp_sim_params_default(struct tp_sim_params *p)
{
	memset(p, 0, sizeof(*p));
	p->gemm_sustained = 0.806;
	p->link_eff_intra = 0.80;
	p->link_eff_network = 0.90;
	p->grad_bucket_bytes = TP_GRAD_BUCKET_DEFAULT_BYTES;
	p->overlap_grad_sync = true;
	p->backward_mem_factor = tp_cost_constants.backward_mem_factor;
	p->p2p_latency_s = 20e-6;
	p->p2p_blocking = true;
	p->collective_latency_s = 6e-6;
	p->overlap_grad_sync_pipeline = true;
	p->expert_imbalance = TP_SIM_EXPERT_IMBALANCE;
	p->prefetch_depth = -1;
	snprintf(p->basis.runtime, sizeof(p->basis.runtime), "none");
	p->basis.validation_mean_error = TP_SIM_VALIDATION_MEAN_ERROR;
	p->basis.validation_max_error = TP_SIM_VALIDATION_MAX_ERROR;
	p->basis.validation_runs = TP_SIM_VALIDATION_RUNS;
}

void tp_sim_options_default(struct tp_sim_options *o)
{
	memset(o, 0, sizeof(*o));
	o->validate = true;
	tp_sim_params_default(&o->params);
}

void tp_sim_free(struct tp_sim *sim)
{
	if (!sim)
		return;
	free(sim->prof);
	free(sim->prof_n);
	free(sim->ptab);
	free(sim->chan_bw);
	free(sim->in_bytes);
	free(sim->expert);
	free(sim->op_cls);
	free(sim->ep_in);
	free(sim->ep_out);
	free(sim->dev);
	free(sim->types);
	free(sim->speed);
	free(sim->speed_profiled);
	tp_sim_sfb_free(sim);
	free(sim);
}

/* TF32 (tf32): an fp32 model's GEMMs on type t at half its bf16 tensor-
 * core rate, the dense TF32 rate of every NVIDIA type with bf16 units
 * (A100 156 of 312, H100 SXM 495 of 989, A10 62.5 of 125, L4 60 of 121,
 * RTX 3090 35.6 of 71 TFLOP/s: the vendors' datasheets).  AMD Instinct
 * types (names "MI...") keep their fp32 rate: MI250X has no TF32; so do
 * Intel Gaudi types (names "Gaudi..."): PyTorch's TF32 switch is CUDA's,
 * and the Gaudi white paper gives no TF32 rate. */
static void tf32_peak(struct tp_sim *sim, uint32_t t)
{
	const struct tp_device_type *ty = &sim->c->types.v[t];
	double r = ty->peak_flops[TP_DTYPE_BF16] / 2;

	if (!sim->o.params.tf32 || sim->m->dtype != TP_DTYPE_FP32 ||
	    strncmp(ty->name, "MI", 2) == 0 ||
	    strncmp(ty->name, "Gaudi", 5) == 0)
		return;
	if (r > sim->dev[t].peak)
		sim->dev[t].peak = sim->dev[t].peak_hi = r;
}

/* The runtime's fitted GEMM efficiencies on type t (README section 2,
 * both fitted on data/validation): cuda_core_gemm_eff in place of the
 * type's gemm_efficiency x gemm_sustained where the model's dtype runs
 * on CUDA cores (its GEMM rate is the vector rate: fp32 without TF32,
 * so after tf32_peak); hopper_gemm_scale times a Hopper type's.  The
 * fused attention's published efficiencies (cost.c) are not GEMMs'. */
static void fitted_gemm_eff(struct tp_sim *sim, uint32_t t)
{
	struct tp_cost_device *d = &sim->dev[t];
	const struct tp_sim_params *p = &sim->o.params;

	if (p->cuda_core_gemm_eff > 0 && !(d->peak > d->peak_vec)) {
		d->gemm_eff = p->cuda_core_gemm_eff;
		sim->fitted_cuda_core = true;
	}
	if (p->hopper_gemm_scale > 0 &&
	    tp_sim_hopper_type(sim->c->types.v[t].name)) {
		d->gemm_eff *= p->hopper_gemm_scale;
		sim->fitted_hopper = true;
	}
}

bool tp_sim_nic_link(const struct tp_cluster *c, const struct tp_link *lk)
{
	return lk->kind == TP_LINK_NIC ||
	       (lk->kind == TP_LINK_NETWORK &&
		(c->vertex_kind.v[lk->a] == TP_VERTEX_NIC ||
		 c->vertex_kind.v[lk->b] == TP_VERTEX_NIC));
}

/* Each op's routed expert and the bytes crossing that expert's boundary
 * (dispatch in, combine out), for expert parallelism. */
static void expert_ops(struct tp_sim *sim)
{
	const struct tp_model *m = sim->m;

	for (uint32_t i = 0; i < sim->n_ops; i++) {
		int64_t j = tp_model_op_expert(m, i);
		sim->expert[i] = j >= 0 && j < INT32_MAX ? (int32_t)j : -1;
	}
	for (size_t e = 0; e < m->edges.n; e++) {
		const struct tp_edge *ed = &m->edges.v[e];
		int32_t a = sim->expert[ed->src], b = sim->expert[ed->dst];
		bool same = a == b && m->ops.v[ed->src].layer ==
					      m->ops.v[ed->dst].layer;
		if (b >= 0 && !same)
			sim->ep_in[ed->dst] += ed->bytes;
		if (a >= 0 && !same)
			sim->ep_out[ed->src] += ed->bytes;
	}
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
	if (tp_precision_check(c, m->dtype, err))
		return NULL;
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
	sim->prof_n = tp_calloc((size_t)sim->n_ops * (sim->n_types ? sim->n_types
								    : 1),
				sizeof(*sim->prof_n));
	sim->ptab = tp_calloc(m->profiles.n + 1, sizeof(*sim->ptab));
	sim->chan_bw = tp_calloc(sim->n_chan + 1, sizeof(double));
	sim->in_bytes = tp_calloc(sim->n_ops + 1, sizeof(double));
	sim->expert = tp_calloc(sim->n_ops + 1, sizeof(*sim->expert));
	sim->ep_in = tp_calloc(sim->n_ops + 1, sizeof(double));
	sim->ep_out = tp_calloc(sim->n_ops + 1, sizeof(double));
	sim->dev = tp_calloc(sim->n_types + 1, sizeof(*sim->dev));
	sim->types = tp_calloc(sim->n_types + 1, sizeof(*sim->types));
	sim->speed = tp_calloc(sim->n_types + 1, sizeof(*sim->speed));
	sim->speed_profiled = tp_calloc(sim->n_types + 1,
					sizeof(*sim->speed_profiled));
	if (!sim->prof || !sim->prof_n || !sim->ptab || !sim->chan_bw ||
	    !sim->in_bytes || !sim->dev || !sim->types || !sim->speed ||
	    !sim->speed_profiled || !sim->expert || !sim->ep_in ||
	    !sim->ep_out)
		goto nomem;
	for (uint32_t i = 0, used = 0; i < sim->n_ops; i++) {
		const struct tp_op *op = &m->ops.v[i];
		for (uint32_t ty = 0; op->n_prof && ty < sim->n_types; ty++) {
			uint32_t n = tp_profile_table(m, i, c->types.v[ty].name,
						      sim->ptab + used);
			sim->prof[(size_t)i * sim->n_types + ty] = used;
			sim->prof_n[(size_t)i * sim->n_types + ty] = n;
			used += n;
		}
		if (op->layer >= 0 && (uint32_t)op->layer + 1 > sim->n_layers)
			sim->n_layers = (uint32_t)op->layer + 1;
		sim->fwd_flop += op->flop;
		sim->bwd_flop += op->backward_flop;
	}
	for (size_t e = 0; e < m->edges.n; e++)
		sim->in_bytes[m->edges.v[e].dst] += m->edges.v[e].bytes;
	expert_ops(sim);
	if (tp_sim_op_classes(sim))
		goto nomem;
	for (uint32_t l = 0; l < nl; l++) {
		const struct tp_link *lk = &c->links.v[l];
		double eff = (lk->kind == TP_LINK_NIC ||
			      lk->kind == TP_LINK_NETWORK)
				     ? sim->o.params.link_eff_network
				     : sim->o.params.link_eff_intra;
		double bw = lk->bw_Bps * eff, cap = sim->o.params.nic_cap_Bps;
		if (cap > 0 && bw > cap && tp_sim_nic_link(c, lk)) {
			bw = cap;
			sim->nic_capped = true;
		}
		sim->chan_bw[2 * l] = sim->chan_bw[2 * l + 1] = bw;
	}
	for (uint32_t t = 0; t < sim->n_types; t++) {
		sim->types[t] = c->types.v[t];
		tp_cost_type_defaults(&sim->types[t]);
		tp_cost_device_init(&sim->dev[t], &c->types.v[t], m->dtype,
				    sim->o.params.gemm_sustained);
		sim->dev[t].gemm_shape_half = sim->o.params.gemm_shape_half;
		tf32_peak(sim, t);
		fitted_gemm_eff(sim, t);
	}
	tp_sim_speed_init(sim);
	tp_cost_state_init(&sim->state, m->dtype, m->optimizer);
	/* Megatron-Core's fp32 main_grad buffer, PyTorch DDP's buckets
	   (README section 5) */
	sim->grad_copy = tp_cost_state_runtime(
	    &sim->state, sim->o.params.grad_buffer_fp32,
	    sim->o.params.grad_bucket_copy, sim->o.params.grad_reduce_fp32);
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
	s->oc_memo = tp_calloc((size_t)sim->n_cls + 1, sizeof(*s->oc_memo));
	s->oc_seen = tp_calloc((size_t)sim->n_cls + 1, sizeof(*s->oc_seen));
	if (!s->cnt2 || !s->op_group || !s->op_mark || !s->lay_mark || !s->dev_res ||
	    !s->dev_rep || !s->dev_mark || !s->cap_rem || !s->weight ||
	    !s->cnt || !s->cmark || !s->chan_bytes || !s->chan_busy ||
	    !s->chash || !s->cstamp || !s->oc_memo || !s->oc_seen ||
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
	free(s->oc_memo);
	free(s->oc_seen);
	tp_vec_free(&s->cents);
	tp_vec_free(&s->ccap);
	tp_vec_free(&s->ccap_rem);
	tp_vec_free(&s->cweight);
	tp_vec_free(&s->cmark2);
	tp_vec_free(&s->cuse);
	tp_vec_free(&s->ctouched);
	tp_vec_free(&s->rents);
	tp_vec_free(&s->live);
	tp_vec_free(&s->bcnt);
	tp_vec_free(&s->bstamp);
	tp_vec_free(&s->brate);
	tp_vec_free(&s->ments);
	tp_vec_free(&s->mitems);
	tp_vec_free(&s->mkeys);
	tp_vec_free(&s->mvals);
	tp_vec_free(&s->ckeys);
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
	for (int k = 0; k < SIM_PARTS; k++) {
		tp_vec_free(&s->parts[k].key);
		tp_vec_free(&s->parts[k].gedges);
	}
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
	tp_vec_free(&s->nodes);
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

void tp_sim_scratch_reference(struct tp_sim_scratch *s, bool on)
{
	s->reference = on;
}

enum tp_status tp_sim_run(const struct tp_sim *sim, const struct tp_plan *plan,
			  struct tp_sim_scratch *s, struct tp_report *report,
			  struct tp_strbuf *trace, struct tp_error *err)
{
	struct tp_sim_cut cut;

	return tp_sim_run_bounded(sim, plan, s, 0, report, trace, &cut, err);
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
	} else if (plan->micro_batches > TP_PLAN_MAX_MICRO_BATCHES) {
		return tp_error_set_path(
			err, TP_EINPUT, "$.micro_batches",
			"%u micro-batches: the simulator takes at most %u",
			plan->micro_batches, TP_PLAN_MAX_MICRO_BATCHES);
	}
	s->btypes.n = s->bents.n = 0;
	/* no flow accumulation left over from an earlier run */
	for (size_t k = 0; k < s->touched.n; k++)
		s->cnt[s->touched.v[k]] = 0;
	s->touched.n = 0;
	s->acc_flows = 0;
	s->acc_latency = 0;
	s->acc_oom = false;
	s->zb = plan->schedule == TP_SCHEDULE_ZB_H1;
	s->p2p_capped = false;
	st = tp_sim_analyse_groups(sim, plan, s, depth, err);
	if (!st)
		st = tp_sim_build_lanes(sim, plan, s, mode_a, err);
	if (!st)
		st = tp_sim_build_resources(sim, plan, s, err);
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

	*lower_bound_s = st ? 0 : tp_sim_lanes_bound(plan, s);
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
	cut->lower_bound_s = tp_sim_lanes_bound(plan, s);
	if (cutoff_s > 0 && cut->lower_bound_s >= cutoff_s) {
		cut->bounded = true;
		return TP_OK;
	}
	st = tp_sim_setup_schedule(plan, s, depth, &sc, err);
	/* out of memory: known from the compute tasks' order alone, so cut
	 * before the graph (a search meets far more such plans than it
	 * simulates; README "Searches") */
	if (!st && cutoff_s > 0 && !s->reference) {
		bool ok;
		st = tp_sim_order_compute(plan, s, &sc, &ok, err);
		if (!st && ok) {
			tp_sim_memory_walk_early(plan, s);
			if (!tp_sim_memory_fits(sim, plan, s,
						&cut->over_fraction)) {
				cut->bounded = true;
				cut->out_of_memory = true;
				return TP_OK;
			}
		}
	}
	if (!st)
		st = tp_sim_build_graph(sim, plan, s, &sc, mode_a, err);
	if (st)
		return st;
	tp_sim_memory_walk(plan, s);
	if (cutoff_s > 0 &&
	    !tp_sim_memory_fits(sim, plan, s, &cut->over_fraction)) {
		cut->bounded = true;
		cut->out_of_memory = true;
		return TP_OK;
	}
	if (tp_sim_channel_classes(sim, s))
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	st = tp_sim_run_engine(sim, s, &t_end, err);
	if (st)
		return st;
	st = tp_sim_make_report(sim, plan, s, t_end, depth, report, err);
	if (st)
		return st;
	if (trace)
		tp_sim_trace_write(sim, plan, s, t_end, trace);
	return TP_OK;
}
