/*
 * lanes.c - what a plan means for the simulator, before any task exists:
 * the group graph (edges, topological order, stages, virtual depth), the
 * lanes (one data-parallel replica of one group, with its costs from
 * cost.c), the replica classes and the sim lanes that stand for them, and
 * the resources (device sets that always run the same tasks).
 * README sections 1 and 4.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

/* ------------------------------------------------------------------ */
/* Plan analysis: group graph, order, stages, virtual depth            */

/* The bytes per sample op o sends group gd: its out-edges e into gd
 * carry one tensor (an op's output read by several ops of a group, e.g.
 * the gpt builder's block output feeding both ln1 and the residual
 * drop1, crosses a boundary once), so the largest of them; 0 when an
 * earlier out-edge of o (before index e) already went to gd. */
static double op_to_group_bytes(const struct tp_model *m,
				const struct tp_sim_scratch *s, uint32_t o,
				uint32_t e, uint32_t gd)
{
	const uint32_t *out = tp_model_out_edges(m, o);
	double b = 0;

	for (uint32_t k = 0; k < e; k++)
		if (s->op_group[m->edges.v[out[k]].dst] == gd)
			return 0;
	for (uint32_t k = e; k < m->ops.v[o].n_out; k++) {
		const struct tp_edge *ed = &m->edges.v[out[k]];
		if (s->op_group[ed->dst] == gd && ed->bytes > b)
			b = ed->bytes;
	}
	return b;
}

/* s->op_group of every op, and the group edges merged per (src, dst)
 * with their bytes per sample (each op's tensor once per destination
 * group: op_to_group_bytes).  gmark and gidx: G entries each. */
static enum tp_status group_edges(const struct tp_sim *sim,
				  const struct tp_plan *plan,
				  struct tp_sim_scratch *s, uint32_t *gmark,
				  uint32_t *gidx, struct tp_error *err)
{
	const struct tp_model *m = sim->m;
	uint32_t G = (uint32_t)plan->groups.n;

	for (uint32_t g = 0; g < G; g++) {
		const uint32_t *ops = tp_plan_group_ops(plan, g);
		gmark[g] = TP_NONE;
		for (uint32_t k = 0; k < plan->groups.v[g].n_ops; k++)
			s->op_group[ops[k]] = g;
	}
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
				s->gedges.v[gidx[gd]].bytes +=
					op_to_group_bytes(m, s, o, e, gd);
			}
		}
	}
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/* Whether plan's groups hold the ops of partition pk, in the same
 * order. */
static bool same_partition(const struct tp_plan *plan,
			   const struct part_kept *pk)
{
	uint32_t G = (uint32_t)plan->groups.n;
	const uint32_t *at;

	/* (no pointer arithmetic on a key never filled: NULL + G) */
	if (!pk->ok || pk->key.n < G || !pk->key.v)
		return false;
	at = pk->key.v + G;
	for (uint32_t g = 0; g < G; g++)
		if (pk->key.v[g] != plan->groups.v[g].n_ops)
			return false;
	for (uint32_t g = 0; g < G; g++) {
		uint32_t n = plan->groups.v[g].n_ops;
		if ((size_t)(at - pk->key.v) + n > pk->key.n ||
		    (n && memcmp(at, tp_plan_group_ops(plan, g),
				 n * sizeof(uint32_t)) != 0))
			return false;
		at += n;
	}
	return (size_t)(at - pk->key.v) == pk->key.n;
}

/* Keep plan's partition and s->gedges in the next slot of s->parts. */
static void keep_partition(const struct tp_plan *plan,
			   struct tp_sim_scratch *s)
{
	struct part_kept *pk = &s->parts[s->part_next];
	uint32_t G = (uint32_t)plan->groups.n;
	size_t n = G;

	s->part_next = (s->part_next + 1) % SIM_PARTS;
	for (uint32_t g = 0; g < G; g++)
		n += plan->groups.v[g].n_ops;
	pk->ok = false;
	pk->key.n = pk->gedges.n = 0;
	if (tp_vec_reserve(&pk->key, n) ||
	    tp_vec_reserve(&pk->gedges, s->gedges.n))
		return; /* computed, just not kept */
	for (uint32_t g = 0; g < G; g++)
		pk->key.v[pk->key.n++] = plan->groups.v[g].n_ops;
	for (uint32_t g = 0; g < G; g++) {
		if (!plan->groups.v[g].n_ops)
			continue; /* memcpy takes no NULL, even for 0 bytes */
		memcpy(pk->key.v + pk->key.n, tp_plan_group_ops(plan, g),
		       plan->groups.v[g].n_ops * sizeof(uint32_t));
		pk->key.n += plan->groups.v[g].n_ops;
	}
	if (s->gedges.n)
		memcpy(pk->gedges.v, s->gedges.v,
		       s->gedges.n * sizeof(struct gedge));
	pk->gedges.n = s->gedges.n;
	pk->ok = true;
}

/* group_edges, or for a partition kept in s->parts its edges (op_group
 * filled from the plan, as group_edges fills it). */
static enum tp_status group_edges_kept(const struct tp_sim *sim,
				       const struct tp_plan *plan,
				       struct tp_sim_scratch *s,
				       uint32_t *gmark, uint32_t *gidx,
				       struct tp_error *err)
{
	enum tp_status st;

	for (int k = 0; k < SIM_PARTS && !s->reference; k++) {
		const struct part_kept *pk = &s->parts[k];
		if (!same_partition(plan, pk))
			continue;
		for (uint32_t g = 0; g < plan->groups.n; g++) {
			const uint32_t *ops = tp_plan_group_ops(plan, g);
			for (uint32_t j = 0; j < plan->groups.v[g].n_ops; j++)
				s->op_group[ops[j]] = g;
		}
		RESERVE(&s->gedges, pk->gedges.n);
		if (pk->gedges.n) /* memcpy takes no NULL, even for 0 */
			memcpy(s->gedges.v, pk->gedges.v,
			       pk->gedges.n * sizeof(struct gedge));
		s->gedges.n = pk->gedges.n;
		return TP_OK;
	}
	if ((st = group_edges(sim, plan, s, gmark, gidx, err)))
		return st;
	keep_partition(plan, s);
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/* The group edges in and out of every group, CSR (gin/gout). */
static enum tp_status group_csr(struct tp_sim_scratch *s, uint32_t G,
				uint32_t *gmark, struct tp_error *err)
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
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/* Kahn's order of the groups (s->gorder, ginfo.rank); a cycle means the
 * groups interleave in the model's graph (TP_EINPUT naming two). */
static enum tp_status group_order(struct tp_sim_scratch *s, uint32_t G,
				  uint32_t *gmark, struct tp_error *err)
{
	uint32_t head = 0;

	for (uint32_t g = 0; g < G; g++) {
		gmark[g] = s->gin_off.v[g + 1] - s->gin_off.v[g];
		if (gmark[g] == 0)
			s->gorder.v[s->gorder.n++] = g;
	}
	while (head < s->gorder.n) {
		uint32_t g = s->gorder.v[head++];
		for (uint32_t k = s->gout_off.v[g]; k < s->gout_off.v[g + 1];
		     k++) {
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
		for (uint32_t k = s->gin_off.v[a]; k < s->gin_off.v[a + 1];
		     k++) {
			uint32_t x = s->gedges.v[s->gin.v[k]].src;
			if (gmark[x]) {
				b = x;
				break;
			}
		}
		return tp_error_set_path(
			err, TP_EINPUT, "$.groups",
			"groups %u and %u depend on each other (the model's "
			"edges run both ways between them); every group must "
			"be a contiguous slice of the model's topological "
			"order",
			b == TP_NONE ? a : b, a);
	}
	for (uint32_t k = 0; k < G; k++)
		s->groups.v[s->gorder.v[k]].rank = k;
	return TP_OK;
}

/* Device sets (sorted, in s->sets) and their classes: ginfo.stage is the
 * first group with the same set. */
static enum tp_status group_stages(const struct tp_plan *plan,
				   struct tp_sim_scratch *s,
				   struct tp_error *err)
{
	uint32_t G = (uint32_t)plan->groups.n;

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
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/* Virtual depth: the longest path to a group, +1 whenever the device set
 * changes; *depth = the largest + 1. */
static void group_depths(struct tp_sim_scratch *s, uint32_t G,
			 uint32_t *depth)
{
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
}

enum tp_status tp_sim_analyse_groups(const struct tp_sim *sim,
				     const struct tp_plan *plan,
				     struct tp_sim_scratch *s, uint32_t *depth,
				     struct tp_error *err)
{
	uint32_t G = (uint32_t)plan->groups.n, *gmark, *gidx;
	enum tp_status st;

	s->groups.n = s->gedges.n = s->gorder.n = s->sets.n = 0;
	RESERVE(&s->groups, G);
	RESERVE(&s->gorder, G);
	s->tmp.n = 0;
	RESERVE(&s->tmp, 2 * (size_t)G + 2);
	gmark = s->tmp.v;
	gidx = s->tmp.v + G;
	memset(s->groups.v, 0, G * sizeof(*s->groups.v));
	s->groups.n = G;
	if ((st = group_edges_kept(sim, plan, s, gmark, gidx, err)) ||
	    (st = group_csr(s, G, gmark, err)) ||
	    (st = group_order(s, G, gmark, err)) ||
	    (st = group_stages(plan, s, err)))
		return st;
	group_depths(s, G, depth);
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

/* Whether the t devices are one NVLink SHARP domain: one node whose
 * fabric is an NVSwitch and whose types all have NVLS (data/devices.json
 * "nvls"). */
static bool nvls_domain(const struct tp_cluster *c, const uint32_t *devs,
			uint32_t t)
{
	const struct tp_node *nd = &c->nodes.v[c->devices.v[devs[0]].node];

	if (nd->fabric_kind != TP_LINK_NVSWITCH || nd->fabric_vertex == TP_NONE)
		return false;
	for (uint32_t k = 0; k < t; k++) {
		const struct tp_device *d = &c->devices.v[devs[k]];
		if (d->node != c->devices.v[devs[0]].node ||
		    !c->types.v[d->type].nvls)
			return false;
	}
	return true;
}

/* Whether devices devs[0..t) are all in one node. */
static bool one_node(const struct tp_cluster *c, const uint32_t *devs,
		     uint32_t t)
{
	for (uint32_t k = 1; k < t; k++)
		if (c->devices.v[devs[k]].node != c->devices.v[devs[0]].node)
			return false;
	return true;
}

/* The most a member of the one-node group devs[0..t) can send per second
 * to the others at once: the smallest over the members of the usable
 * bandwidth of its direct links to other members (NVLink), or of its
 * link into the node's fabric (PCIe, NVSwitch) when it has no such
 * link.  NCCL's channels inside a node run over these links, so several
 * rings at once carry at most this (README section 3). */
static double member_send_ceiling(const struct tp_sim *sim,
				  const uint32_t *devs, uint32_t t)
{
	const struct tp_cluster *c = sim->c;
	double lim = INFINITY;

	for (uint32_t i = 0; i < t; i++) {
		double direct = 0, fabric = 0;

		for (uint32_t k = 0; k < t; k++) {
			struct tp_route rt;
			const struct tp_link *lk;

			if (k == i)
				continue;
			tp_cluster_route(c, devs[i], devs[k], &rt);
			if (rt.n == 0)
				continue;
			lk = &c->links.v[rt.ch[0] / 2];
			if (rt.n == 1) /* a direct link (NVLink) */
				direct += sim->chan_bw[rt.ch[0]];
			else if (c->vertex_kind.v[lk->a] == TP_VERTEX_FABRIC ||
				 c->vertex_kind.v[lk->b] == TP_VERTEX_FABRIC)
				fabric = sim->chan_bw[rt.ch[0]];
		}
		if (direct > 0)
			fabric = direct;
		if (fabric > 0 && fabric < lim)
			lim = fabric;
	}
	return lim;
}

/* The lane's tensor-parallel collectives, alpha-beta over its measured
 * rings: a ring all-reduce takes tp_a + tp_k * bytes seconds, a
 * reduce-scatter or all-gather half that (README section 3); 0 when its
 * ranks exchange nothing.  The all-reduce (ar_a, ar_k) is NVLS when the
 * ranks are one NVLink SHARP domain and t > 2: each rank sends its
 * (t+1)/t S once into the switch and receives as much (reduce-scatter by
 * in-switch reduction, then a multicast all-gather), 2 steps, against
 * the ring's 2(t-1)/t S in 2(t-1) steps; otherwise the ring's.  A group
 * inside one node divides tp_k by the runtime's tp_node_rings (NCCL's
 * channels: that many rings at once over the node's links), as far as
 * a member's links carry them (member_send_ceiling; README section 3).
 * -1 on allocation failure. */
static int lane_tp_ring(const struct tp_sim *sim, const struct tp_plan *plan,
			struct tp_sim_scratch *s, struct lane *ln)
{
	const struct tp_sim_params *pa = &sim->o.params;
	const uint32_t *devs = plan->devs.v + ln->dev_first;
	uint32_t rings;
	double lat, rate;
	bool any;

	if (ln->tp < 2)
		return 0;
	if (tp_sim_ring_measure(s, devs, ln->tp, &any, &rings, &lat, &rate))
		return -1;
	if (any) {
		ln->tp_a = tp_cost_ring_steps(TP_COST_ALL_REDUCE, ln->tp) *
			   (lat + pa->collective_latency_s);
		ln->tp_k = tp_cost_ring_traffic(TP_COST_ALL_REDUCE, ln->tp) /
			   (rings * rate);
	}
	if (any && pa->tp_node_rings > 1 && one_node(sim->c, devs, ln->tp)) {
		/* the channels' rate, at most what a member's links carry */
		double ch = fmin(pa->tp_node_rings * rings * rate,
				 member_send_ceiling(sim, devs, ln->tp));
		if (ch > rings * rate)
			ln->tp_k *= rings * rate / ch;
	}
	ln->ar_a = ln->tp_a;
	ln->ar_k = ln->tp_k;
	if (any && ln->tp > 2 && nvls_domain(sim->c, devs, ln->tp)) {
		ln->ar_a = 2 * (lat + pa->collective_latency_s);
		ln->ar_k = (ln->tp + 1.0) / ln->tp / (rings * rate);
	}
	return 0;
}

/* Expected distinct nodes holding a token's top_k experts, the experts
 * spread evenly over the EP group's n nodes: n (1 - C(E - E/n, k) /
 * C(E, k)) under uniform routing, at most router_group_topk x
 * max(1, n / router_groups) under group-limited routing (DeepSeek-V3's
 * node-limited routing: 8 groups on 8 nodes, a token's experts in the
 * best 4; arXiv:2412.19437 section 2.1.2).  0 when the model records no
 * expert count or top-k. */
static double ep_token_nodes(const struct tp_model *m, uint32_t n)
{
	const struct tp_arch *a = &m->arch;
	double E = (double)a->experts, k = (double)a->top_k, miss = 1, d;

	if (a->experts < 1 || a->top_k < 1 || a->top_k > a->experts)
		return 0;
	for (int64_t i = 0; i < a->top_k; i++)
		miss *= fmax(0, (E - E / n - (double)i) / (E - (double)i));
	d = n * (1 - miss);
	if (a->router_groups > 0 && a->router_group_topk > 0 &&
	    a->router_group_topk < a->router_groups)
		d = fmin(d, (double)a->router_group_topk *
				fmax(1, (double)n / (double)a->router_groups));
	return fmin(d, k);
}

/* Add the flows of every EP group of the lane's plan group (members
 * q*ep .. q*ep+ep-1 of each, all tensor ranks: the replicas exchange in
 * lockstep, so they share the links they cross) and measure them
 * together: *rate per flow at the busiest channel, *lat the slowest
 * route; 0 flows leave *rate infinite.  Every pair of members, or with
 * node forwarding (g members per node) only the pairs across nodes at
 * the same place in their nodes (inter) or those inside a node (!inter).
 * -1 on allocation failure. */
static int ep_flows(const struct tp_sim *sim, const struct tp_plan *plan,
		    struct tp_sim_scratch *s, const struct lane *ln,
		    uint32_t g, bool inter, double *rate, double *lat)
{
	const struct tp_plan_group *gr = &plan->groups.v[ln->group];
	/* members at stride st (ep_stride: tp, or 1 under etp=1), st
	 * parallel EP groups per block of ep x st devices */
	uint32_t ep = gr->ep, st = ep_stride(gr), n = 0;
	uint32_t groups = gr->n_devices / (ep * st);
	const struct tp_device *dv = sim->c->devices.v;

	*rate = INFINITY;
	*lat = 0;
	s->tmp3.n = 0;
	if (tp_vec_reserve(&s->tmp3,
			   2 * (size_t)groups * st * ep * (ep - 1)))
		return -1;
	for (uint32_t q = 0; q < groups; q++)
		for (uint32_t j = 0; j < st; j++)
			for (uint32_t a = 0; a < ep; a++)
				for (uint32_t b = 0; b < ep; b++) {
					uint32_t base = gr->dev_first +
							q * ep * st + j;
					uint32_t da = plan->devs.v[base + a * st];
					uint32_t db = plan->devs.v[base + b * st];
					bool same = dv[da].node == dv[db].node;
					if (a == b)
						continue;
					if (g && (inter ? same || a % g != b % g
							: !same))
						continue;
					s->tmp3.v[n++] = da;
					s->tmp3.v[n++] = db;
				}
	if (!n)
		return 0;
	if (tp_sim_acc_pairs(s, s->tmp3.v, n / 2))
		return -1;
	tp_sim_acc_measure(s, rate, lat);
	return 0;
}

/* The nodes of the first EP group of the lane's plan group when every
 * node holds the same number g > 0 of its consecutive members (members
 * a*g .. a*g+g-1 on one node): their count, else 0. */
static uint32_t ep_even_nodes(const struct tp_sim *sim,
			      const struct tp_plan *plan,
			      const struct lane *ln, uint32_t *g)
{
	const struct tp_plan_group *gr = &plan->groups.v[ln->group];
	uint32_t ep = gr->ep, tp = ep_stride(gr), k;
	const uint32_t *d = plan->devs.v + gr->dev_first;
	const struct tp_device *dv = sim->c->devices.v;

	for (k = 1; k < ep && dv[d[k * tp]].node == dv[d[0]].node; k++)
		;
	if (ep % k)
		return 0;
	for (uint32_t a = 0; a < ep; a++)
		if (dv[d[a * tp]].node != dv[d[a / k * k * tp]].node ||
		    (a % k == 0 && a > 0 &&
		     dv[d[a * tp]].node == dv[d[(a - 1) * tp]].node))
			return 0;
	*g = k;
	return ep / k;
}

/* Expert parallelism of a lane: its degree, load factor and the
 * all-to-all over its EP group (replicas ep*floor(r/ep) .. +ep-1, the
 * same tensor rank).  Every EP group of the plan group exchanges at once
 * (the replicas run the same layer in lockstep), all tensor ranks too, so
 * the flows of all of them share the links they cross (a switch tier's
 * uplinks); the slowest share prices every lane of the group, measured
 * at replica 0 and copied by the others (prev: the group's previous lane
 * or NULL).  Megatron-Core's alltoall: every member sends V/ep of its V
 * dispatched bytes (every token once per expert) to each other member,
 * so the exchange takes one latency plus V/ep over the slowest flow's
 * share of its busiest channel.  Node forwarding (ep_node_forward, over
 * N > 1 nodes of g members each): a token crosses the network once per
 * remote node of its experts, D (N-1)/N copies (D = ep_token_nodes), to
 * the member at the sender's place in that node, while inside every node
 * the copies go on to their experts (of the k per token, (g-1)/g leave
 * the receiving GPU): the two stages pipeline, so per byte of V
 *     ep_k = max(D (N-1)/N / (k (N-1) r_net), 1 / (g r_node))
 * with r_net, r_node the per-flow rates of the network and node flows
 * (README section 3).  -1 on allocation failure. */
static int lane_ep(const struct tp_sim *sim, const struct tp_plan *plan,
		   struct tp_sim_scratch *s, struct lane *ln,
		   const struct lane *prev)
{
	const struct tp_plan_group *gr = &plan->groups.v[ln->group];
	uint32_t ep = gr->ep, N = 0, g = 0;
	double lat, rate, lf = tp_sim_expert_load(sim, plan), D = 0;

	ln->ep = ep > 1 ? ep : 1;
	ln->lf = ep > 1 ? lf : 1;
	if (ep <= 1)
		return 0;
	if (prev) {
		ln->ep_a = prev->ep_a;
		ln->ep_k = prev->ep_k;
		ln->ep_g = prev->ep_g;
		return 0;
	}
	if (sim->o.params.ep_node_forward)
		N = ep_even_nodes(sim, plan, ln, &g);
	if (N > 1)
		D = ep_token_nodes(sim->m, N);
	if (D > 0) {
		double r_net, l_net, r_node = INFINITY, l_node = 0, k;
		ln->ep_g = g;
		if (ep_flows(sim, plan, s, ln, g, true, &r_net, &l_net) ||
		    (g > 1 &&
		     ep_flows(sim, plan, s, ln, g, false, &r_node, &l_node)))
			return -1;
		k = (double)sim->m->arch.top_k;
		if (isfinite(r_net) && r_net > 0) {
			ln->ep_a = fmax(l_net, l_node) +
				   sim->o.params.collective_latency_s;
			ln->ep_k = fmax(D / N / (k * r_net),
					g > 1 ? 1 / (g * r_node) : 0);
		}
		return 0;
	}
	if (ep_flows(sim, plan, s, ln, 0, false, &rate, &lat))
		return -1;
	if (isfinite(rate) && rate > 0) {
		ln->ep_a = lat + sim->o.params.collective_latency_s;
		ln->ep_k = 1 / (ep * rate);
	}
	return 0;
}

/* One step of the lane's context-parallel ring: every rank of its
 * context group (the same tensor rank of the replica's cp context ranks)
 * sends the next one a block, all tp rings at once over their routes,
 * and the rings of every context group of the plan group at the same
 * time (the replicas run in lockstep), so they share the links they
 * cross; cp_lat = the slowest route's latency + p2p_latency_s, cp_rate =
 * the slowest per-flow share of those flows, measured at replica 0 and
 * copied by the group's other lanes (prev: the previous lane or NULL).
 * -1 on allocation failure. */
static int lane_cp_ring(const struct tp_sim *sim, const struct tp_plan *plan,
			struct tp_sim_scratch *s, struct lane *ln,
			const struct lane *prev)
{
	const struct tp_plan_group *gr = &plan->groups.v[ln->group];
	uint32_t cp = gr->cp, tp = gr->tp, n = 0, groups;
	double rate, lat;

	if (cp < 2)
		return 0;
	if (prev) {
		ln->cp_rate = prev->cp_rate;
		ln->cp_lat = prev->cp_lat;
		return 0;
	}
	groups = grp_reps(gr) / cp;
	s->tmp4.n = 0;
	if (tp_vec_reserve(&s->tmp4, 2 * (size_t)groups * cp * tp))
		return -1;
	for (uint32_t q = 0; q < groups; q++)
		for (uint32_t k = 0; k < tp; k++)
			for (uint32_t c = 0; c < cp; c++) {
				uint32_t base = gr->dev_first + q * cp * tp + k;
				s->tmp4.v[n++] = plan->devs.v[base + c * tp];
				s->tmp4.v[n++] =
					plan->devs.v[base +
						     ((c + 1) % cp) * tp];
			}
	if (tp_sim_acc_pairs(s, s->tmp4.v, n / 2))
		return -1;
	if (s->acc_oom) {
		tp_sim_acc_measure(s, &rate, &lat);
		return -1;
	}
	tp_sim_acc_measure(s, &rate, &lat);
	if (isfinite(rate) && rate > 0) {
		ln->cp_rate = rate;
		ln->cp_lat = lat + sim->o.params.p2p_latency_s;
	}
	return 0;
}

/* SAME_AS_PREV: whether replica r of group g (devices from
 * gr->dev_first + off) would be a copy of the group's previous lane prev
 * in make_lanes below, found without making it: the same degree, samples,
 * rank types and tensor-parallel ring (lane_tp_ring of its devices, the
 * only input of the comparison that differs between replicas: lane_ep
 * and lane_cp_ring copy prev's values to every replica after the first;
 * those are compared with themselves as the full comparison did, which
 * is false only for a NaN).  A plain data-parallel plan of 1,024 GPUs has
 * 50,000 lanes of 300 bytes, nearly all such copies: they were cleared,
 * filled, compared and copied over, two passes over 15 MB.  Allocation
 * failure answers false (make_lanes then fails on its own call). */
static bool same_as_prev(const struct tp_sim *sim, const struct tp_plan *plan,
			 struct tp_sim_scratch *s, const struct lane *prev,
			 uint32_t g, uint32_t r, uint32_t off, double mb)
{
	const struct tp_plan_group *gr = &plan->groups.v[g];
	const double *sh = tp_plan_group_shares(plan, g);
	struct lane q;

	q.tp = tp_plan_replica_tp(plan, g, r);
	q.dev_first = gr->dev_first + off;
	q.samples = gr->cp > 1 ? sh[r / gr->cp] * mb / gr->cp : sh[r] * mb;
	if (prev->tp != q.tp || prev->samples != q.samples ||
	    prev->ep_a != prev->ep_a || prev->ep_k != prev->ep_k ||
	    prev->cp_lat != prev->cp_lat || prev->cp_rate != prev->cp_rate ||
	    !same_types(sim, plan->devs.v + prev->dev_first,
			plan->devs.v + q.dev_first, q.tp))
		return false;
	q.tp_a = q.tp_k = q.ar_a = q.ar_k = 0;
	if (lane_tp_ring(sim, plan, s, &q))
		return false;
	return prev->tp_a == q.tp_a && prev->tp_k == q.tp_k &&
	       prev->ar_a == q.ar_a && prev->ar_k == q.ar_k;
}

/* Every group's lanes with their costs (a replica identical to the
 * previous one copies it), then the group's compression (sfb_hook.c). */
static enum tp_status make_lanes(const struct tp_sim *sim,
				 const struct tp_plan *plan,
				 struct tp_sim_scratch *s, struct tp_error *err)
{
	uint32_t G = (uint32_t)plan->groups.n;
	double mb = (double)plan->global_batch / plan->micro_batches;
	size_t total = 0;

	s->lanes.n = 0;
	for (uint32_t g = 0; g < G; g++)
		total += grp_reps(&plan->groups.v[g]);
	RESERVE(&s->lanes, total);
	for (uint32_t g = 0; g < G; g++) {
		const struct tp_plan_group *gr = &plan->groups.v[g];
		const double *sh = tp_plan_group_shares(plan, g);
		uint32_t off = 0, big;
		uint64_t ops_h = 0;
		bool have_ops_h = false;
		s->groups.v[g].lane_first = (uint32_t)s->lanes.n;
		for (uint32_t r = 0; r < grp_reps(gr); r++) {
			struct lane *ln = &s->lanes.v[s->lanes.n++];
			const struct lane *prev = r ? ln - 1 : NULL;
			struct lane nl;
			if (prev && same_as_prev(sim, plan, s, prev, g, r, off,
						 mb)) {
				*ln = *prev;
				ln->replica = r;
				ln->dev_first = gr->dev_first + off;
				ln->tp_bt = TP_NONE;
				off += ln->tp;
				continue;
			}
			/* LANE_LOCAL: a lane not copied is made in nl and
			   written to the array once */
			memset(&nl, 0, sizeof(nl));
			nl.group = g;
			nl.replica = r;
			/* a mixed group's replicas have their own degrees
			   (plan.h), each on its own run of devices */
			nl.tp = tp_plan_replica_tp(plan, g, r);
			nl.cp = gr->cp;
			nl.dev_first = gr->dev_first + off;
			off += nl.tp;
			/* a replica's context ranks share its samples */
			nl.samples = gr->cp > 1 ? sh[r / gr->cp] * mb / gr->cp
						: sh[r] * mb;
			nl.sim = TP_NONE;
			nl.tp_bt = TP_NONE; /* made for the report */
			if (lane_tp_ring(sim, plan, s, &nl) ||
			    lane_ep(sim, plan, s, &nl, prev) ||
			    lane_cp_ring(sim, plan, s, &nl, prev))
				goto nomem;
			*ln = nl;
			if (!have_ops_h) {
				ops_h = tp_sim_lane_ops_hash(plan, g);
				have_ops_h = true;
			}
			if (tp_sim_lane_costs(sim, plan, s, ln, ops_h))
				goto nomem;
		}
		/* the gradient shard of the finest sharding (a mixed
		   group's all-reduce runs over it; taskgraph.c) */
		big = s->groups.v[g].lane_first;
		for (uint32_t r = 1; r < grp_reps(gr); r++)
			if (s->lanes.v[s->groups.v[g].lane_first + r].tp >
			    s->lanes.v[big].tp)
				big = s->groups.v[g].lane_first + r;
		s->groups.v[g].param_bytes = s->lanes.v[big].params;
		s->groups.v[g].grad_bytes = s->groups.v[g].param_bytes;
		s->groups.v[g].expert_bytes =
			gr->ep > 1 || etp_whole(gr)
				? s->lanes.v[s->groups.v[g].lane_first]
					  .params_expert
				: 0;
		if (sim->o.params.grad_reduce_fp32 && !gr->n_sfb &&
		    gr->lossy == TP_LOSSY_NONE)
			/* fp32 gradient reduction (README section 3):
			 * parameters x 4 bytes on the wire */
			s->groups.v[g].grad_bytes *=
				4 / tp_dtype_bytes(sim->m->dtype);
		if (gr->n_sfb || gr->lossy != TP_LOSSY_NONE) {
			/* gradient compression: sfb_hook.c (its own wire
			 * formats, in the model dtype) */
			enum tp_status st =
				tp_sim_sfb_apply(sim, plan, s, g, err);
			if (st)
				return st;
		}
	}
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/* Mode A: every group has the same replicas (same dp, a device always in
 * the same replica, equal shares across group edges), so replica r of one
 * group feeds replica r of the next and identical replicas can be
 * simulated once. */
static bool mode_a_holds(const struct tp_plan *plan, struct tp_sim_scratch *s)
{
	uint32_t G = (uint32_t)plan->groups.n;
	bool mode_a = true;

	for (uint32_t g = 1; g < G && mode_a; g++)
		if (plan->groups.v[g].dp != plan->groups.v[0].dp ||
		    plan->groups.v[g].cp != plan->groups.v[0].cp)
			mode_a = false;
	if (mode_a) {
		for (size_t k = 0; k < plan->devs.n; k++)
			s->dev_mark[plan->devs.v[k]] = TP_NONE;
		for (size_t l = 0; l < s->lanes.n && mode_a; l++) {
			const struct lane *ln = &s->lanes.v[l];
			for (uint32_t k = 0; k < ln->tp; k++) {
				uint32_t d = plan->devs.v[ln->dev_first + k];
				if (s->dev_mark[d] == TP_NONE)
					s->dev_mark[d] = ln->replica;
				else if (s->dev_mark[d] != ln->replica)
					mode_a = false;
			}
		}
	}
	for (size_t e = 0; e < s->gedges.n && mode_a; e++) {
		uint32_t a = s->gedges.v[e].src, b = s->gedges.v[e].dst;
		const double *sa = tp_plan_group_shares(plan, a);
		const double *sb = tp_plan_group_shares(plan, b);
		for (uint32_t r = 0; r < plan->groups.v[a].dp; r++)
			if (sa[r] != sb[r]) {
				mode_a = false;
				break;
			}
	}
	return mode_a;
}

/* Do replicas r and q have the same times in every group? */
static bool same_replica(const struct tp_sim_scratch *s, uint32_t G,
			 uint32_t r, uint32_t q)
{
	bool same = true;

	for (uint32_t g = 0; g < G && same; g++) {
		const struct lane *a =
			&s->lanes.v[s->groups.v[g].lane_first + r];
		const struct lane *b =
			&s->lanes.v[s->groups.v[g].lane_first + q];
		same = a->f_comp == b->f_comp && a->f_comm == b->f_comm &&
		       a->b_comp == b->b_comp && a->b_comm == b->b_comm &&
		       a->opt_s == b->opt_s && a->samples == b->samples;
	}
	return same;
}

/* Mode A: replica classes (lane.cls = the class representative), their
 * members contiguous in class order, one sim lane per class and group. */
static enum tp_status class_lanes(const struct tp_plan *plan,
				  struct tp_sim_scratch *s,
				  struct tp_error *err)
{
	uint32_t G = (uint32_t)plan->groups.n;
	uint32_t dp = grp_reps(&plan->groups.v[0]), *rep, n_cls = 0;

	s->tmp2.n = 0;
	RESERVE(&s->tmp2, 2 * (size_t)dp + 2);
	rep = s->tmp2.v; /* class representatives */
	for (uint32_t r = 0; r < dp; r++) {
		uint32_t c = TP_NONE;
		for (uint32_t k = 0; k < n_cls && c == TP_NONE; k++)
			if (same_replica(s, G, r, rep[k]))
				c = k;
		if (c == TP_NONE) {
			c = n_cls;
			rep[n_cls++] = r;
		}
		for (uint32_t g = 0; g < G; g++)
			s->lanes.v[s->groups.v[g].lane_first + r].cls = rep[c];
	}
	RESERVE(&s->members, dp);
	RESERVE(&s->sims, (size_t)n_cls * G);
	for (uint32_t k = 0; k < n_cls; k++)
		for (uint32_t r = 0; r < dp; r++)
			if (s->lanes.v[s->groups.v[0].lane_first + r].cls ==
			    rep[k])
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
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/* Otherwise every lane is a sim lane of its own. */
static enum tp_status every_lane(const struct tp_plan *plan,
				 struct tp_sim_scratch *s,
				 struct tp_error *err)
{
	uint32_t G = (uint32_t)plan->groups.n;

	RESERVE(&s->members, s->lanes.n);
	RESERVE(&s->sims, s->lanes.n);
	for (uint32_t g = 0; g < G; g++) {
		const struct tp_plan_group *gr = &plan->groups.v[g];
		s->groups.v[g].sim_first = (uint32_t)s->sims.n;
		s->groups.v[g].n_sim = grp_reps(gr);
		for (uint32_t r = 0; r < grp_reps(gr); r++) {
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
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

enum tp_status tp_sim_build_lanes(const struct tp_sim *sim,
				  const struct tp_plan *plan,
				  struct tp_sim_scratch *s, bool *mode_a,
				  struct tp_error *err)
{
	enum tp_status st = make_lanes(sim, plan, s, err);

	if (st)
		return st;
	*mode_a = mode_a_holds(plan, s);
	s->sims.n = s->members.n = 0;
	return *mode_a ? class_lanes(plan, s, err) : every_lane(plan, s, err);
}
/* Resources: devices of sim lanes, merged when they belong to exactly the
 * same sim lanes (partition refinement). */
enum tp_status tp_sim_build_resources(const struct tp_sim *sim,
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
