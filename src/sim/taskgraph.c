/*
 * taskgraph.c - the tasks of one iteration and their dependencies: per
 * sim lane a forward and a backward per micro-batch and an optimizer step;
 * pipeline transfers along group edges; the data-parallel gradient
 * synchronisation as bundles of flows (ring, hierarchical, parameter
 * server); ZeRO's all-gathers; blocking sends.  README sections 3 and 4.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

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

static inline uint32_t lane_dev(const struct tp_plan *plan,
				const struct tp_sim_scratch *s, uint32_t g,
				uint32_t r, uint32_t k)
{
	const struct lane *ln = &s->lanes.v[s->groups.v[g].lane_first + r];
	return plan->devs.v[ln->dev_first + k];
}

/* Who sends to whom along one group edge: sim lane LS to sim lane LD,
 * `samples` per micro-batch, replica rs[p] of the source group to replica
 * rd[p] of the destination group for each of the n pairs. */
struct pairing {
	uint32_t LS, LD;
	double samples;
	const uint32_t *rs, *rd;
	uint32_t n;
};

/* Does bundle type bt (TP_NONE: no) cross a NIC? */
static bool crosses_nic(const struct tp_sim_scratch *s, uint32_t bt)
{
	const struct tp_cluster *c = s->sim->c;
	const struct btype *b;

	if (bt == TP_NONE)
		return false;
	b = &s->btypes.v[bt];
	for (uint32_t k = 0; k < b->n_ent; k++)
		if (tp_sim_nic_link(
			c, &c->links.v[s->bents.v[b->ent_first + k].chan / 2]))
			return true;
	return false;
}

/* The bytes per flow past NCCL's socket buffer (the runtime's
 * p2p_socket_eager_bytes) of a pipeline message of `bytes` per flow
 * over bundle type bt, when the runtime sets p2p_socket_Bps and bt
 * crosses a NIC; else 0 (README section 3). */
static double split_bytes(const struct tp_sim_scratch *s, uint32_t bt,
			  double bytes)
{
	const struct tp_sim_params *p = &s->sim->o.params;

	if (!(p->p2p_cap_Bps > 0) || !(bytes > p->p2p_eager_bytes) ||
	    !crosses_nic(s, bt))
		return 0;
	return bytes - p->p2p_eager_bytes;
}

/* Bundle type bt (the part of pipeline messages past the socket buffer)
 * moves at most the runtime's p2p_socket_Bps per flow, after the part
 * before it (no latency of its own). */
static void p2p_cap(struct tp_sim_scratch *s, uint32_t bt)
{
	struct btype *b;
	double cap = s->sim->o.params.p2p_cap_Bps;

	if (bt == TP_NONE)
		return;
	b = &s->btypes.v[bt];
	b->rate_cap = cap;
	if (b->rate_alone > cap)
		b->rate_alone = cap;
	b->latency = 0;
	s->p2p_capped = true;
}

/* Swap the ends of the n (from, to) flows at fp: the other direction. */
static void reverse_pairs(uint32_t *fp, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		uint32_t x = fp[2 * k];
		fp[2 * k] = fp[2 * k + 1];
		fp[2 * k + 1] = x;
	}
}

/* Pipeline transfers of group edge e for a pairing, for every
 * micro-batch, both directions.  Flows: tensor rank j of each member
 * replica's source lane to rank j of its destination lane (Megatron's
 * scatter/gather: each rank sends 1/min(t, t') of the activation). */
static enum tp_status p2p(const struct tp_plan *plan,
			  struct tp_sim_scratch *s, uint32_t e,
			  const struct pairing *pr, struct tp_error *err)
{
	const struct gedge *ge = &s->gedges.v[e];
	uint32_t LS = pr->LS, LD = pr->LD, n_pairs = pr->n;
	const uint32_t *rs = pr->rs, *rd = pr->rd;
	const struct lane *ls = &s->lanes.v[s->sims.v[LS].lane];
	const struct lane *ld = &s->lanes.v[s->sims.v[LD].lane];
	uint32_t nf = ls->tp < ld->tp ? ls->tp : ld->tp, btf, btb;
	uint32_t btf2 = TP_NONE, btb2 = TP_NONE;
	uint32_t m = plan->micro_batches;
	double bytes = ge->bytes * pr->samples / nf, rest = 0;
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
	reverse_pairs(fp, nfp);
	if (tp_sim_acc_pairs(s, fp, nfp) || tp_sim_acc_emit(s, &btb))
		goto nomem;
	/* NCCL's socket transport (README section 3): past its buffer a
	 * message crossing a NIC moves at the runtime's p2p_socket_Bps per
	 * flow, as a second transfer over the same flows */
	rest = split_bytes(s, btf, bytes);
	if (rest > 0) {
		if (tp_sim_acc_pairs(s, fp, nfp) ||
		    tp_sim_acc_emit(s, &btb2))
			goto nomem;
		reverse_pairs(fp, nfp);
		if (tp_sim_acc_pairs(s, fp, nfp) ||
		    tp_sim_acc_emit(s, &btf2))
			goto nomem;
		p2p_cap(s, btf2);
		p2p_cap(s, btb2);
	}
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
			TASK(t, TK_COMM, CW_P2P_F, bytes - rest, btf, i);
			EDGE(f_task(s, LS, i), t, false);
			if (btf2 != TP_NONE) {
				uint32_t t2;
				TASK(t2, TK_COMM, CW_P2P_F, rest, btf2, i);
				EDGE(t, t2, false);
				t = t2;
			}
			EDGE(t, f_task(s, LD, i), false);
			if (tp_vec_push(&s->p2p, t) ||
			    tp_vec_push(&s->p2p, f_task(s, LS, i)))
				goto nomem;
		} else {
			EDGE(f_task(s, LS, i), f_task(s, LD, i), false);
		}
		if (btb != TP_NONE && bytes > 0) {
			TASK(t, TK_COMM, CW_P2P_B, bytes - rest, btb, i);
			EDGE(b_task(s, LD, i), t, false);
			if (btb2 != TP_NONE) {
				uint32_t t2;
				TASK(t2, TK_COMM, CW_P2P_B, rest, btb2, i);
				EDGE(t, t2, false);
				t = t2;
			}
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


/* One phase of a collective over the replicas of a group, all tensor
 * ranks at once: its bundle type and bytes per flow. */
struct phase {
	uint32_t bt;
	double bytes; /* per flow */
};

/* Participants of rank j of group g, sorted by device (so by node).  In
 * a mixed group (plan.h) rank j of the finest sharding is held by rank
 * j mod tp_r of replica r: a replica of a lower degree is in several
 * rings at once, with all of their traffic. */
static uint32_t *participants(const struct tp_plan *plan,
			      struct tp_sim_scratch *s, uint32_t g,
			      uint32_t j)
{
	uint32_t dp = grp_reps(&plan->groups.v[g]), *p;
	uint32_t l0 = s->groups.v[g].lane_first;

	s->tmp2.n = 0;
	if (tp_vec_reserve(&s->tmp2, 2 * (size_t)dp + 2))
		return NULL;
	p = s->tmp2.v;
	for (uint32_t r = 0; r < dp; r++)
		p[r] = lane_dev(plan, s, g, r, j % s->lanes.v[l0 + r].tp);
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

/* A collective: kind, participants, the nodes they span and the most in
 * one node (0 nodes: rings only), the parallel rings (channels), bytes
 * per device. */
struct coll {
	enum tp_cost_coll k;
	uint32_t n, nodes, per_node, rings;
	double S;
};

/*
 * Steps and traffic (per device, in units of S) of the algorithm for c on
 * bundle type b: the ring, or for an all-reduce across nodes the tree
 * when it takes less (NCCL's double binary tree between nodes, a chain
 * inside each: 2 (ceil(log2 nodes) + per_node - 1) steps, 2 S per device
 * each way), both priced as the phase is - one latency, all S bytes - at
 * the bundle's rate alone on the fabric.  (NCCL's tuner picks per call,
 * i.e. per gradient bucket, and pays the latency per call; a phase here
 * pays it once, so the choice is made on the phase, and it never makes
 * a phase slower than the ring.)
 */
static void pick_algo(const struct btype *b, double alpha,
		      const struct coll *c, double *steps, double *traffic)
{
	double rs = tp_cost_ring_steps(c->k, c->n);
	double rt = tp_cost_ring_traffic(c->k, c->n), ts, per;

	*steps = rs;
	*traffic = rt;
	if (c->k != TP_COST_ALL_REDUCE || c->nodes < 2 || !(b->rate_alone > 0))
		return;
	ts = 2 * (ceil(log2((double)c->nodes)) + c->per_node - 1);
	per = c->S / (c->rings * b->rate_alone);
	if (ts * alpha + 2 * per < rs * alpha + rt * per) {
		*steps = ts;
		*traffic = 2;
	}
}

/*
 * The one phase of a collective whose flows have been accumulated
 * (tp_sim_acc_ring): its bandwidth type, S bytes split over the parallel
 * rings, and the step latency of the algorithm (pick_algo).  Returns 1,
 * 0 when nothing moves, -1 on allocation failure.
 */
static int ring_phase(struct tp_sim_scratch *s, const struct tp_sim_params *pa,
		      const struct coll *c, struct phase *ph)
{
	struct btype *b;
	double alpha, steps, traffic;
	uint32_t bt;

	if (tp_sim_acc_emit(s, &bt))
		return -1;
	if (bt == TP_NONE)
		return 0;
	b = &s->btypes.v[bt];
	alpha = b->latency + pa->collective_latency_s;
	pick_algo(b, alpha, c, &steps, &traffic);
	b->latency = steps * alpha;
	ph[0].bt = bt;
	ph[0].bytes = traffic * c->S / c->rings;
	return 1;
}

/* Ring all-reduce (or, with half, a reduce-scatter or all-gather) of S
 * bytes per device over the replicas of group g: NCCL-style rings per
 * tensor rank, all at once, as one phase (a tree across nodes where NCCL
 * would pick it: pick_algo).  Returns the phase count. */
static int sync_ring(const struct tp_sim *sim, const struct tp_plan *plan,
		     struct tp_sim_scratch *s, uint32_t g, double S, bool half,
		     struct phase *ph)
{
	const struct tp_plan_group *gr = &plan->groups.v[g];
	struct coll c = {half ? TP_COST_REDUCE_SCATTER : TP_COST_ALL_REDUCE,
			 grp_reps(gr), 0, 1, 1, S};
	uint32_t r2 = 1;

	for (uint32_t j = 0; j < gr->tp; j++) {
		uint32_t *p = participants(plan, s, g, j), gmin, gmax, k;
		if (!p)
			return -1;
		k = node_runs(sim->c, p, c.n, p + c.n, &gmin, &gmax);
		if (k > c.nodes)
			c.nodes = k;
		if (gmax > c.per_node)
			c.per_node = gmax;
		if (tp_sim_acc_ring(s, p, c.n, &r2))
			return -1;
		if (r2 > c.rings)
			c.rings = r2;
	}
	return ring_phase(s, &sim->o.params, &c, ph);
}

/* Parameter server: every replica pushes S/n to each other replica, then
 * pulls; two phases. */
static int sync_ps(const struct tp_sim *sim, const struct tp_plan *plan,
		   struct tp_sim_scratch *s, uint32_t g, double S,
		   struct phase *ph)
{
	const struct tp_plan_group *gr = &plan->groups.v[g];
	const struct tp_sim_params *pa = &sim->o.params;
	uint32_t n = grp_reps(gr), tp = gr->tp, np = 0;
	double dn = n;

	for (int dir = 0; dir < 2; dir++) {
		uint32_t bt;
		for (uint32_t j = 0; j < tp; j++)
			for (uint32_t r = 0; r < n; r++)
				for (uint32_t q = 0; q < n; q++) {
					uint32_t a = lane_dev(plan, s, g, r, j);
					uint32_t b = lane_dev(plan, s, g, q, j);
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

/* Hierarchical all-reduce: intra-node reduce-scatter, inter-node ring
 * all-reduce of S/g among the participants with the same local index,
 * intra-node all-gather; up to three phases. */
static int sync_hier(const struct tp_sim *sim, const struct tp_plan *plan,
		     struct tp_sim_scratch *s, uint32_t g, double S,
		     struct phase *ph)
{
	const struct tp_plan_group *gr = &plan->groups.v[g];
	const struct tp_sim_params *pa = &sim->o.params;
	uint32_t n = grp_reps(gr), tp = gr->tp, np = 0;
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
					    starts[q + 1] - starts[q], &r2))
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
				tp_sim_acc_flow(s, p[starts[q] + x],
						p[starts[(q + 1) % k] + x]);
	}
	if (tp_sim_acc_emit(s, &bt2))
		return -1;
	if (bt2 != TP_NONE)
		lat2 = s->btypes.v[bt2].latency;
	if (bt1 != TP_NONE) {
		s->btypes.v[bt1].latency =
			tp_cost_ring_steps(TP_COST_REDUCE_SCATTER, gmax) *
			(lat1 + pa->collective_latency_s);
		ph[np].bt = bt1;
		ph[np].bytes =
			tp_cost_ring_traffic(TP_COST_REDUCE_SCATTER, gmax) * S;
		np++;
	}
	if (bt2 != TP_NONE) {
		struct coll c = {TP_COST_ALL_REDUCE, k, k, 1, 1, S / gmin};
		double alpha = lat2 + pa->collective_latency_s, steps, traffic;
		pick_algo(&s->btypes.v[bt2], alpha, &c, &steps, &traffic);
		s->btypes.v[bt2].latency = steps * alpha;
		ph[np].bt = bt2;
		ph[np].bytes = traffic * c.S;
		np++;
	}
	if (bt1 != TP_NONE) {
		ph[np] = ph[0];
		np++;
	}
	return (int)np;
}

/* The routed experts' share of a sync under expert parallelism: rings
 * (or, with half, reduce-scatters) over the expert-data-parallel replicas
 * e, e + ep, e + 2 ep, ... of each tensor rank, all at once (Megatron-
 * Core's expert-data-parallel groups, over the dp x cp lanes); 0
 * phases when dp x cp = ep. */
static int sync_expert(const struct tp_sim *sim, const struct tp_plan *plan,
		       struct tp_sim_scratch *s, uint32_t g, double S,
		       bool half, struct phase *ph)
{
	const struct tp_plan_group *gr = &plan->groups.v[g];
	/* members at stride st (ep_stride) in the group's order, tensor
	 * ranks fastest: x = (q ep + e) st + j, replica x / tp, rank x % tp */
	uint32_t ep = gr->ep, st = ep_stride(gr), tp = gr->tp, rings = 1, r2 = 1;
	uint32_t n = grp_reps(gr) * (tp / st) / ep;
	enum tp_cost_coll k = half ? TP_COST_REDUCE_SCATTER : TP_COST_ALL_REDUCE;
	struct coll c;

	if (n < 2)
		return 0;
	for (uint32_t j = 0; j < st; j++)
		for (uint32_t e = 0; e < ep; e++) {
			uint32_t *p;
			s->tmp2.n = 0;
			if (tp_vec_reserve(&s->tmp2, (size_t)n + 1))
				return -1;
			p = s->tmp2.v;
			for (uint32_t q = 0; q < n; q++) {
				uint32_t x = (q * ep + e) * st + j;
				p[q] = lane_dev(plan, s, g, x / tp, x % tp);
			}
			if (!sorted_u32(p, n))
				qsort(p, n, sizeof(*p), cmp_u32);
			if (tp_sim_acc_ring(s, p, n, &r2))
				return -1;
			if (r2 > rings)
				rings = r2;
		}
	/* rings only: nodes 0 */
	c = (struct coll){k, n, 0, 1, rings, S};
	return ring_phase(s, &sim->o.params, &c, ph);
}

/*
 * The phases of the gradient synchronisation of group g (or, with half,
 * the ZeRO reduce-scatter / parameter all-gather, always on rings):
 * ph[] (room for 4) with per-flow bytes for a message of S bytes per
 * device.  Returns the phase count, -1 on allocation failure.
 */
static int sync_phases(const struct tp_sim *sim, const struct tp_plan *plan,
		       struct tp_sim_scratch *s, uint32_t g, double S,
		       bool half, struct phase *ph)
{
	enum tp_sync method = plan->groups.v[g].sync;

	if (half)
		method = TP_SYNC_RING; /* ZeRO: reduce-scatter / all-gather */
	if (method == TP_SYNC_RING)
		return sync_ring(sim, plan, s, g, S, half, ph);
	if (method == TP_SYNC_PS)
		return sync_ps(sim, plan, s, g, S, ph);
	return sync_hier(sim, plan, s, g, S, ph);
}

/* The gradient sync of group g: sync_phases for the dense part and,
 * under expert parallelism, sync_expert for the routed experts' part
 * after it (room for 4 phases: hierarchical's 3 and the experts'). */
static int grad_sync_phases(const struct tp_sim *sim,
			    const struct tp_plan *plan,
			    struct tp_sim_scratch *s, uint32_t g, double S,
			    bool half, struct phase *ph)
{
	const struct ginfo *gi = &s->groups.v[g];
	double Se = 0;
	int np, ne;

	if ((plan->groups.v[g].ep > 1 || etp_whole(&plan->groups.v[g])) &&
	    gi->param_bytes > 0)
		Se = S * gi->expert_bytes / gi->param_bytes;
	if (!(Se > 0))
		return sync_phases(sim, plan, s, g, S, half, ph);
	np = sync_phases(sim, plan, s, g, S - Se, half, ph);
	if (np < 0 || np > 3)
		return np < 0 ? -1 : np;
	ne = sync_expert(sim, plan, s, g, Se, half, ph + np);
	return ne < 0 ? -1 : np + ne;
}

/* ------------------------------------------------------------------ */
/* The whole graph: compute, pipeline transfers, sync, optimizer        */

double tp_sim_grad_bucket(const struct tp_sim *sim, const struct tp_plan *plan)
{
	return plan->grad_bucket_bytes > 0 ? plan->grad_bucket_bytes
					   : sim->o.params.grad_bucket_bytes;
}

/* Forward and backward of every micro-batch on every sim lane:
 * F(i) = task_first + 2i, B(i) = F(i) + 1; under zb-h1 the backward
 * without its weight-gradient GEMMs, which follow as W(i) = w_first + i
 * after B(i). */
static enum tp_status compute_tasks(const struct tp_plan *plan,
				    struct tp_sim_scratch *s,
				    struct tp_error *err)
{
	uint32_t m = plan->micro_batches;

	for (uint32_t L = 0; L < s->sims.n; L++) {
		struct simlane *sl = &s->sims.v[L];
		const struct lane *ln = &s->lanes.v[sl->lane];
		RESERVE(&s->tasks, 3 * (size_t)m);
		RESERVE(&s->edges, 2 * (size_t)m);
		sl->task_first = (uint32_t)s->tasks.n;
		for (uint32_t i = 0; i < m; i++) {
			uint32_t f, b;
			TASK(f, TK_F, 0, ln->f_comp + ln->f_comm, L, i);
			TASK(b, TK_B, 0, b_only(s, ln) + ln->b_comm, L, i);
			EDGE(f, b, false);
		}
		sl->w_first = (uint32_t)s->tasks.n;
		for (uint32_t i = 0; i < m && s->zb; i++) {
			uint32_t w;
			TASK(w, TK_W, 0, ln->w_comp, L, i);
			EDGE(b_task(s, L, i), w, false);
		}
	}
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/* Pipeline transfers along group edges: replica r to replica r in mode
 * A, else between every pair of replicas whose sample ranges overlap
 * (re-sharding). */
static enum tp_status pipeline_transfers(const struct tp_plan *plan,
					 struct tp_sim_scratch *s, bool mode_a,
					 struct tp_error *err)
{
	uint32_t m = plan->micro_batches;
	enum tp_status st;

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
				struct pairing pr = {LS, LD,
						     s->lanes.v[sl->lane].samples,
						     mem, mem, sl->n_members};
				st = p2p(plan, s, e, &pr, err);
				if (st)
					return st;
			}
		} else {
			const double *sa = tp_plan_group_shares(plan, ge->src);
			const double *sb = tp_plan_group_shares(plan, ge->dst);
			uint32_t na = plan->groups.v[ge->src].dp,
				 nb = plan->groups.v[ge->dst].dp;
			/* context rank c of a replica sends context rank c
			   of the other (every group has the same cp) */
			uint32_t cp = plan->groups.v[ge->src].cp;
			double a0 = 0, mbs = (double)plan->global_batch / m / cp;
			for (uint32_t r = 0; r < na; r++) {
				double a1 = a0 + sa[r], b0 = 0;
				for (uint32_t q = 0; q < nb; q++) {
					double b1 = b0 + sb[q];
					double lo = a0 > b0 ? a0 : b0;
					double hi = a1 < b1 ? a1 : b1;
					for (uint32_t c = 0;
					     hi - lo > 1e-12 && c < cp; c++) {
						uint32_t vr = r * cp + c,
							 vq = q * cp + c;
						struct pairing pr = {
							ga->sim_first + vr,
							gb->sim_first + vq,
							(hi - lo) * mbs, &vr, &vq, 1};
						st = p2p(plan, s, e, &pr, err);
						if (st)
							return st;
					}
					b0 = b1;
				}
				a0 = a1;
			}
		}
	}
	return TP_OK;
}

/* Group g's gradient synchronisation: with overlap, everything but the
 * last bucket streams from the start of the last backward (the last W
 * under zb-h1: grad_task), the tail after its end; without, one chain
 * after it.  Sets first_sync, last_sync and
 * tail_first. */
static enum tp_status sync_tasks(const struct tp_sim *sim,
				 const struct tp_plan *plan,
				 struct tp_sim_scratch *s, uint32_t g,
				 double bucket, bool pipelined,
				 struct tp_error *err)
{
	uint32_t m = plan->micro_batches;
	struct ginfo *gi = &s->groups.v[g];
	const struct tp_plan_group *gr = &plan->groups.v[g];
	struct phase ph[4];
	int np;
	double S = gi->grad_bytes, tail_frac = 0, frac;
	uint32_t prev = TP_NONE;

	gi->first_sync = gi->last_sync = gi->tail_first = TP_NONE;
	gi->param_ag = TP_NONE;
	if (grp_reps(gr) < 2 || !(S > 0))
		return TP_OK;
	np = grad_sync_phases(sim, plan, s, g, S, plan->zero >= 1, ph);
	if (np < 0)
		goto nomem;
	if (np == 0)
		return TP_OK;
	if (sim->o.params.overlap_grad_sync && bucket > 0 &&
	    (!pipelined || sim->o.params.overlap_grad_sync_pipeline))
		tail_frac = bucket >= S ? 1 : bucket / S;
	else
		tail_frac = -1; /* no overlap: one chain after B */
	/* main part: streams while the last backward runs */
	if (tail_frac >= 0 && tail_frac < 1) {
		for (int k = 0; k < np; k++) {
			uint32_t t;
			TASK(t, TK_COMM, CW_SYNC, ph[k].bytes * (1 - tail_frac),
			     ph[k].bt, g);
			if (gi->first_sync == TP_NONE)
				gi->first_sync = t;
			if (prev == TP_NONE) {
				for (uint32_t j = 0; j < gi->n_sim; j++)
					EDGE(grad_task(s, gi->sim_first + j, m),
					     t, true);
			} else {
				EDGE(prev, t, false);
			}
			prev = t;
		}
	}
	/* tail (or everything): after the last backward */
	frac = tail_frac < 0 ? 1 : tail_frac;
	for (int k = 0; k < np; k++) {
		uint32_t t;
		TASK(t, TK_COMM, tail_frac < 0 ? CW_SYNC : CW_SYNC_TAIL,
		     ph[k].bytes * frac, ph[k].bt, g);
		if (gi->first_sync == TP_NONE)
			gi->first_sync = t;
		if (k == 0) {
			gi->tail_first = t;
			for (uint32_t j = 0; j < gi->n_sim; j++)
				EDGE(grad_task(s, gi->sim_first + j, m), t,
				     false);
		}
		if (prev != TP_NONE)
			EDGE(prev, t, false);
		prev = t;
	}
	gi->last_sync = prev;
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/* Optimizer steps (after the lane's last backward and its group's sync),
 * then the ZeRO-1/2 all-gathers of the updated weights. */
static enum tp_status optimizer_tasks(const struct tp_sim *sim,
				      const struct tp_plan *plan,
				      struct tp_sim_scratch *s,
				      struct tp_error *err)
{
	uint32_t G = (uint32_t)plan->groups.n, m = plan->micro_batches;

	for (uint32_t L = 0; L < s->sims.n; L++) {
		struct simlane *sl = &s->sims.v[L];
		const struct lane *ln = &s->lanes.v[sl->lane];
		const struct ginfo *gi = &s->groups.v[ln->group];
		uint32_t t;
		TASK(t, TK_OPT, 0, ln->opt_s, L, 0);
		sl->opt_task = t;
		if (gi->last_sync != TP_NONE)
			EDGE(gi->last_sync, t, false);
		EDGE(grad_task(s, L, m), t, false);
	}
	if (plan->zero != 1 && plan->zero != 2)
		return TP_OK;
	for (uint32_t g = 0; g < G; g++) {
		const struct ginfo *gi = &s->groups.v[g];
		struct phase ph[4];
		int np;
		uint32_t t;
		if (grp_reps(&plan->groups.v[g]) < 2 ||
		    !(gi->param_bytes > 0))
			continue;
		np = sync_phases(sim, plan, s, g, gi->param_bytes, true, ph);
		if (np < 0)
			goto nomem;
		if (np == 0)
			continue;
		TASK(t, TK_COMM, CW_PARAM_AG, ph[0].bytes, ph[0].bt, g);
		s->groups.v[g].param_ag = t;
		for (uint32_t j = 0; j < gi->n_sim; j++)
			EDGE(s->sims.v[gi->sim_first + j].opt_task, t, false);
	}
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/* Blocking sends: the sender's next task waits for the transfer. */
static enum tp_status blocking_sends(struct tp_sim_scratch *s,
				     struct tp_error *err)
{
	for (size_t k = 0; k + 1 < s->p2p.n; k += 2) {
		uint32_t t = s->p2p.v[k], x = s->p2p.v[k + 1];
		const struct simlane *sl = &s->sims.v[s->tasks.v[x].ref];
		const struct resource *rs = &s->res.v[s->lres.v[sl->res_first]];
		uint32_t qp = s->tasks.v[x].qpos;
		if (qp + 1 < rs->q_n)
			EDGE(t, s->queue.v[rs->q_first + qp + 1].task, false);
	}
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/* ZeRO-3's gathers of one task x (a forward or backward of sim lane L)
 * under FSDP-style per-layer gathering (prefetch_depth d >= 1, U layers):
 * the rest of the weights, (U-1)/U, stream from the start of x while it
 * computes, one layer ahead; the task's resource is free for its next
 * task only once the last layer, x's duration / U, has run on the last
 * gathered weights (a delay after the rest).  Pass time a + max(U t,
 * (U-1) a + t) for gathers a and compute t per layer. */
static enum tp_status zero3_rest(struct tp_sim_scratch *s, uint32_t rest,
				 uint32_t L, uint32_t x, uint32_t units,
				 struct tp_error *err)
{
	const struct simlane *sl = &s->sims.v[L];
	const struct resource *rs = &s->res.v[s->lres.v[sl->res_first]];
	uint32_t qp = s->tasks.v[x].qpos, dl;
	double dur = s->tasks.v[x].dur / units;

	EDGE(x, rest, true);
	TASK(dl, TK_DELAY, 0, dur, L, s->tasks.v[x].micro);
	EDGE(rest, dl, false);
	if (qp + 1 < rs->q_n)
		EDGE(dl, s->queue.v[rs->q_first + qp + 1].task, false);
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/* ZeRO-3: gather a group's weights before every forward and backward.
 * prefetch_depth < 0: whole, prefetched while the previous task on the
 * device runs; 0: whole, after it; d >= 1: per layer as FSDP2 does, the
 * first layer's prefetched while the previous task runs, the others
 * while the task computes (zero3_rest), the gathers of a group one after
 * the other (README section 3). */
static enum tp_status zero3_gathers(const struct tp_sim *sim,
				    const struct tp_plan *plan,
				    struct tp_sim_scratch *s,
				    struct tp_error *err)
{
	uint32_t G = (uint32_t)plan->groups.n, m = plan->micro_batches;
	int d = sim->o.params.prefetch_depth;
	enum tp_status st;

	for (uint32_t g = 0; g < G; g++) {
		const struct ginfo *gi = &s->groups.v[g];
		struct phase ph[4];
		int np;
		uint32_t units, prev = TP_NONE;
		double head;
		if (grp_reps(&plan->groups.v[g]) < 2 ||
		    !(gi->param_bytes > 0))
			continue;
		np = sync_phases(sim, plan, s, g, gi->param_bytes, true, ph);
		if (np < 0)
			goto nomem;
		if (np == 0)
			continue;
		units = s->lanes.v[s->sims.v[gi->sim_first].lane].units;
		if (d < 1)
			units = 1;
		head = 1.0 / units;
		for (uint32_t i = 0; i < m; i++)
			for (int phs = 0; phs < 2; phs++) {
				uint32_t t, r = TP_NONE;
				TASK(t, TK_COMM, CW_ZERO_AG, ph[0].bytes * head,
				     ph[0].bt, i);
				if (units > 1) {
					TASK(r, TK_COMM, CW_ZERO_AG,
					     ph[0].bytes * (1 - head), ph[0].bt,
					     i);
					EDGE(t, r, false);
					if (prev != TP_NONE)
						EDGE(prev, t, false);
					prev = r;
				}
				for (uint32_t j = 0; j < gi->n_sim; j++) {
					uint32_t L = gi->sim_first + j;
					uint32_t x = phs ? b_task(s, L, i)
							 : f_task(s, L, i);
					const struct simlane *sl = &s->sims.v[L];
					const struct resource *rs =
						&s->res.v[s->lres.v[sl->res_first]];
					uint32_t qp = s->tasks.v[x].qpos;
					EDGE(t, x, false);
					if (qp > 0)
						EDGE(s->queue.v[rs->q_first +
								qp - 1]
							     .task,
						     t, d != 0);
					if (units > 1 &&
					    (st = zero3_rest(s, r, L, x, units,
							     err)))
						return st;
				}
			}
	}
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/* Successor lists of the edges, CSR (s->nodes: succ_first, n_succ;
 * ndeps), and the nodes' engine state (kind, not started). */
static enum tp_status successors(struct tp_sim_scratch *s,
				 struct tp_error *err)
{
	size_t nt = s->tasks.n, ne = s->edges.n;
	uint32_t acc = 0;
	struct tnode *nd;

	s->nodes.n = 0;
	RESERVE(&s->nodes, nt + 1);
	s->nodes.n = nt;
	nd = s->nodes.v;
	for (size_t t = 0; t < nt; t++)
		nd[t] = (struct tnode){0, 0, 0, s->tasks.v[t].kind, 0, 0, 0};
	for (size_t k = 0; k < ne; k++) {
		uint64_t e = s->edges.v[k];
		nd[e >> 33].n_succ++;
		nd[(e >> 1) & 0xffffffffu].ndeps++;
	}
	for (size_t t = 0; t < nt; t++) {
		nd[t].succ_first = acc;
		acc += nd[t].n_succ;
		nd[t].n_succ = 0;
	}
	s->succ.n = 0;
	RESERVE(&s->succ, ne);
	s->succ.n = ne;
	for (size_t k = 0; k < ne; k++) {
		uint64_t e = s->edges.v[k];
		struct tnode *a = &nd[e >> 33];
		s->succ.v[a->succ_first + a->n_succ++] =
			(uint32_t)(e & 0x1ffffffffull);
	}
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

enum tp_status tp_sim_build_graph(const struct tp_sim *sim,
				  const struct tp_plan *plan,
				  struct tp_sim_scratch *s,
				  const struct sched *sc, bool mode_a,
				  struct tp_error *err)
{
	const double bucket = tp_sim_grad_bucket(sim, plan);
	enum tp_status st;

	s->tasks.n = s->edges.n = s->p2p.n = 0;
	if ((st = compute_tasks(plan, s, err)) ||
	    (st = pipeline_transfers(plan, s, mode_a, err)))
		return st;
	for (uint32_t g = 0; g < plan->groups.n; g++) {
		/* sharded per layer (prefetch_depth >= 0): a reduce-scatter
		   per layer, the last one's exposed (FSDP2's post-backward
		   reduce-scatter) */
		const struct ginfo *gi = &s->groups.v[g];
		double bk = bucket;
		if (sim->o.params.prefetch_depth >= 0 && plan->zero >= 1 &&
		    gi->n_sim > 0)
			bk = gi->grad_bytes /
			     s->lanes.v[s->sims.v[gi->sim_first].lane].units;
		if ((st = sync_tasks(sim, plan, s, g, bk, sc->D > 1, err)))
			return st;
	}
	if ((st = optimizer_tasks(sim, plan, s, err)) ||
	    (st = tp_sim_order_queues(plan, s, sc, err)))
		return st;
	if (sim->o.params.p2p_blocking && (st = blocking_sends(s, err)))
		return st;
	if (plan->zero == 3 && (st = zero3_gathers(sim, plan, s, err)))
		return st;
	return successors(s, err);
}
