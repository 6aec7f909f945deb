/*
 * report.c - the report of a simulated iteration (README section 6):
 * time per device (compute, exposed communication, idle), the pipeline
 * bubble, memory totals and feasibility (terms from memory.c), FLOP,
 * throughput and MFU, bytes and busy time per link; and the lower bound
 * of the iteration time that bounded runs compare with their cutoff.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/precision.h"
#include "sim_int.h"

/* Compute and exposed communication per resource, walking its order:
 * compute and the tensor-parallel time inside its tasks; before each
 * optimizer step, the wait for its group's sync (waiting for other
 * replicas to start it is idle); after the last task, a trailing ZeRO
 * all-gather. */
static void resource_times(struct tp_sim_scratch *s)
{
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
				rs->comp += b_only(s, ln);
				rs->comm += ln->b_comm;
			} else if (t->kind == TK_W) {
				rs->comp += ln->w_comp;
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
}

/* The simulated devices' compute and communication from their resources;
 * returns when the last backward ended. */
static double device_times(const struct tp_plan *plan,
			   struct tp_sim_scratch *s, struct tp_report *rep)
{
	uint32_t mb = plan->micro_batches;
	double t_pipe = 0;

	for (uint32_t L = 0; L < s->sims.n; L++) {
		const struct simlane *sl = &s->sims.v[L];
		const struct lane *ln = &s->lanes.v[sl->lane];
		double last_b = 0;
		for (uint32_t i = 0; i < mb; i++) {
			double e = s->tasks.v[b_task(s, L, i)].end;
			if (e > last_b)
				last_b = e;
		}
		if (s->zb && s->tasks.v[grad_task(s, L, mb)].end > last_b)
			last_b = s->tasks.v[grad_task(s, L, mb)].end;
		if (last_b > t_pipe)
			t_pipe = last_b;
		for (uint32_t k = 0; k < ln->tp; k++) {
			uint32_t d = plan->devs.v[ln->dev_first + k];
			const struct resource *rs = &s->res.v[s->dev_res[d]];
			rep->devices[d].compute_s = rs->comp;
			rep->devices[d].communication_s = rs->comm;
		}
	}
	return t_pipe;
}

/* 1 - mean busy time of the resources / t_pipe, with pipeline stages
 * (depth > 1) only. */
static double bubble_fraction(struct tp_sim_scratch *s, double t_pipe,
			      uint32_t depth)
{
	double busy_sum = 0, bf;

	for (uint32_t x = 0; x < s->res.n; x++) {
		struct resource *rs = &s->res.v[x];
		rs->busy_pipe = 0;
		for (uint32_t k = 0; k < rs->q_n; k++) {
			const struct task *t =
				&s->tasks.v[s->queue.v[rs->q_first + k].task];
			if (t->kind == TK_F || t->kind == TK_B ||
			    t->kind == TK_W)
				rs->busy_pipe += t->dur;
		}
		busy_sum += rs->busy_pipe;
	}
	bf = (t_pipe > 0 && s->res.n && depth > 1)
		     ? 1 - busy_sum / s->res.n / t_pipe
		     : 0;
	return bf < 0 ? 0 : bf;
}

/* Every device: mirrors copy their representative's times, memory
 * totals, idle time, feasibility (the worst device and its excess in
 * *worst); *n_used and *used_peak over the devices the plan uses. */
static void device_totals(const struct tp_sim *sim, struct tp_sim_scratch *s,
			  double t_end, struct tp_report *rep,
			  uint32_t *n_used, double *used_peak, double *worst)
{
	const struct tp_cluster *c = sim->c;

	rep->feasible = true;
	for (uint32_t d = 0; d < sim->n_dev; d++) {
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
		(*n_used)++;
		*used_peak += sim->speed[c->devices.v[d].type];
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
			if (x->peak_memory_bytes - x->capacity_bytes > *worst) {
				*worst = x->peak_memory_bytes -
					 x->capacity_bytes;
				rep->worst_device = d;
			}
		}
	}
}

/* Model FLOP (with the recomputed forwards), throughput, TFLOP/s per
 * device and MFU (without recomputation). */
static void flop_figures(const struct tp_sim *sim, const struct tp_plan *plan,
			 double t_end, uint32_t n_used, double used_peak,
			 struct tp_report *rep)
{
	const struct tp_model *m = sim->m;
	double B = (double)plan->global_batch, rec_flop = 0;

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
	rep->n_devices = sim->n_dev;
	rep->speed_used = used_peak;
	rep->speed_all = 0;
	for (uint32_t d = 0; d < sim->n_dev; d++)
		rep->speed_all += sim->speed[sim->c->devices.v[d].type];
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
}

/* Bytes and busy time per link: the bundles' statistics spread over
 * their channels, plus every lane's tensor-parallel traffic. */
static enum tp_status link_figures(const struct tp_sim *sim,
				   const struct tp_plan *plan,
				   struct tp_sim_scratch *s, double t_end,
				   struct tp_report *rep, struct tp_error *err)
{
	const struct tp_cluster *c = sim->c;
	uint32_t mb = plan->micro_batches, n_links = 0;

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
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/* Append "; " and the printf of fmt to rep's approximations (cut at its
 * size). */
static void approx_add(struct tp_report *rep, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void approx_add(struct tp_report *rep, const char *fmt, ...)
{
	size_t n = strlen(rep->approximations);
	va_list ap;

	if (n + 2 >= sizeof(rep->approximations))
		return;
	memcpy(rep->approximations + n, "; ", 3);
	n += 2;
	va_start(ap, fmt);
	vsnprintf(rep->approximations + n, sizeof(rep->approximations) - n,
		  fmt, ap);
	va_end(ap);
}

/* What the estimate leaves out or takes from fitted constants. */
static void approximations(const struct tp_sim *sim,
			   const struct tp_plan *plan,
			   const struct tp_sim_scratch *s,
			   struct tp_report *rep)
{
	const struct tp_sim_params *p = &sim->o.params;

	snprintf(rep->approximations, sizeof(rep->approximations),
		 "roofline op times with a GEMM efficiency curve (or profiles); "
		 "tensor-parallel collectives are alpha-beta on an idle "
		 "fabric; pipeline and data-parallel flows share links "
		 "max-min fairly; gradient sync overlaps the last backward in "
		 "%.6g MB buckets; embedding weight tying, data loading and "
		 "kernel overlap inside an op are not modelled",
		 tp_sim_grad_bucket(sim, plan) / 1e6);
	if (p->fused_attention && p->attention_kernel != TP_ATTN_KERNEL_GEMM)
		approx_add(rep,
			   "fused attention (%s) at its published peak "
			   "efficiency on A100/Hopper, whatever the head "
			   "dimension and sequence length",
			   tp_attn_kernel_name(p->attention_kernel));
	if (sim->nic_capped)
		approx_add(rep,
			   "NICs at most %.3g GB/s per direction (the "
			   "runtime's nic_socket_Bps, fitted on NCCL over TCP "
			   "sockets)",
			   p->nic_cap_Bps / 1e9);
	if (s->p2p_capped)
		approx_add(rep,
			   "pipeline messages across a NIC past their first "
			   "%.3g MB per flow at most %.3g GB/s per flow (the "
			   "runtime's p2p_socket_Bps past NCCL's buffer, "
			   "fitted on NCCL over TCP sockets)",
			   p->p2p_eager_bytes / 1e6, p->p2p_cap_Bps / 1e9);
	if (sim->fitted_cuda_core)
		approx_add(rep,
			   "GEMMs and convolutions on CUDA cores at %.3g of "
			   "the fp32 peak (the runtime's cuda_core_gemm_eff, "
			   "fitted on data/validation)",
			   p->cuda_core_gemm_eff);
	if (sim->fitted_hopper)
		approx_add(rep,
			   "GEMMs on Hopper at %.3g of their efficiency (the "
			   "runtime's hopper_gemm_scale, fitted on "
			   "data/validation)",
			   p->hopper_gemm_scale);
	if (p->tp_node_rings > 1)
		approx_add(rep,
			   "tensor-parallel collectives inside a node at up to "
			   "%.3g times one ring's bandwidth, as far as each "
			   "member's links carry (the runtime's "
			   "tp_node_rings, fitted: NCCL's channels)",
			   p->tp_node_rings);
}

enum tp_status tp_sim_make_report(const struct tp_sim *sim,
				  const struct tp_plan *plan,
				  struct tp_sim_scratch *s, double t_end,
				  uint32_t depth, struct tp_report *rep,
				  struct tp_error *err)
{
	uint32_t n_used = 0;
	double used_peak = 0, worst = -INFINITY, t_pipe;
	struct devmem *dm;
	enum tp_status st;

	free(rep->links);
	rep->links = NULL;
	rep->n_links = 0;
	st = tp_report_alloc(rep, sim->n_dev, err);
	if (st)
		return st;
	dm = tp_sim_memory_terms(sim, plan, s, rep);
	if (!dm)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	rep->worst_device = UINT32_MAX;
	rep->over_bytes = 0;
	rep->reason[0] = '\0';
	resource_times(s);
	t_pipe = device_times(plan, s, rep);
	rep->bubble_fraction = bubble_fraction(s, t_pipe, depth);
	device_totals(sim, s, t_end, rep, &n_used, &used_peak, &worst);
	if (!rep->feasible)
		tp_sim_memory_reason(sim, plan, dm, worst, rep);
	flop_figures(sim, plan, t_end, n_used, used_peak, rep);
	if ((st = link_figures(sim, plan, s, t_end, rep, err)))
		return st;
	tp_precision_job(sim->c, plan->devs.v, plan->devs.n, sim->m->dtype,
			 rep->precision, sizeof(rep->precision));
	rep->basis = sim->o.params.basis;
	rep->basis.gemm_sustained = sim->o.params.gemm_sustained;
	rep->basis.link_eff_intra = sim->o.params.link_eff_intra;
	rep->basis.link_eff_network = sim->o.params.link_eff_network;
	approximations(sim, plan, s, rep);
	return TP_OK;
}

double tp_sim_lanes_bound(const struct tp_plan *plan, struct tp_sim_scratch *s)
{
	uint32_t G = (uint32_t)s->groups.n, R = (uint32_t)s->res.n;
	double m = plan->micro_batches, lb = 0;
	double *head, *tail, *fmin, *bmin, *busy, *opt, *rh, *rt, *wx;

	s->dtmp.n = 0;
	if (tp_vec_reserve(&s->dtmp, 4 * (size_t)G + 5 * (size_t)R + 8))
		return 0;
	head = s->dtmp.v;
	tail = head + G;
	fmin = tail + G;
	bmin = fmin + G;
	busy = bmin + G;
	opt = busy + R;
	rh = opt + R;
	rt = rh + R;
	wx = rt + R;
	for (uint32_t g = 0; g < G; g++) {
		const struct ginfo *gi = &s->groups.v[g];
		fmin[g] = bmin[g] = INFINITY;
		for (uint32_t k = 0; k < gi->n_sim; k++) {
			const struct lane *ln =
				&s->lanes.v[s->sims.v[gi->sim_first + k].lane];
			double f = ln->f_comp + ln->f_comm;
			double b = b_only(s, ln) + ln->b_comm;
			if (f < fmin[g])
				fmin[g] = f;
			if (b < bmin[g])
				bmin[g] = b;
		}
		if (!(fmin[g] < INFINITY))
			fmin[g] = 0;
		if (!(bmin[g] < INFINITY))
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
		busy[x] = opt[x] = wx[x] = 0;
		rh[x] = rt[x] = INFINITY;
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
			if (s->zb)
				wx[x] += m * ln->w_comp;
			if (head[ln->group] < rh[x])
				rh[x] = head[ln->group];
			if (tail[ln->group] < rt[x])
				rt[x] = tail[ln->group];
		}
	}
	for (uint32_t x = 0; x < R; x++) {
		double v;
		if (!(rh[x] < INFINITY))
			continue;
		/* under zb-h1 the upstream input-gradient passes may run
		 * beside the resource's trailing W passes (at most all of
		 * them) */
		v = rh[x] + busy[x] +
		    (opt[x] > rt[x] - wx[x] ? opt[x] : rt[x] - wx[x]);
		if (v > lb)
			lb = v;
	}
	return lb;
}

