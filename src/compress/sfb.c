/*
 * sfb.c - sufficient-factor broadcasting, selected exactly by a cut.
 *
 * The objective of sfb.h as a pairwise energy.  Variables: x_k for every
 * candidate k (its weight gradient from gathered factors) and t_j for every
 * activation j read by a candidate ("activation j is available over the
 * whole batch").  Terms:
 *   (a) unary on x_k: 0 when x_k = 0, W_k + G_k - A_k when x_k = 1;
 *   (b) unary on t_j: 0 / C_j;
 *   (c) x_k = 1 implies t_j for every activation j that k reads (infinite
 *       cost on x_k = 1, t_j = 0) - TAG's b >= x_reader - x_producer,
 *       with the broadcast variable shared by all readers of j;
 *   (d) when j's producer p is a candidate: -D_j when x_p = 1 and t_j = 1
 *       (the table (0, 0, 0, -D_j), submodular since D_j >= 0): the
 *       producer recomputes its forward (F_p) instead of the gather (C_j).
 * For fixed x, minimising over t gives t_j = [some reader selected]
 * (C_j - D_j x_p >= min(C_j, F_p) >= 0, so t_j = 0 is best when nothing
 * forces it), and the energy equals the objective; so min over (x, t) of
 * the energy is min over x of the objective, and its x is optimal.
 * mincut.c turns (a)-(d) into arcs: (a), (b) are arcs from the source
 * (positive coefficients) or to the sink (negative ones, plus a constant),
 * (c) an infinite arc t_j -> x_k, (d) a unary -D_j on x_p plus the arc
 * x_p -> t_j of capacity D_j (cut when x_p = 0 and t_j = 1).  Every cut is
 * an assignment, its capacity is the energy minus a constant, and the
 * minimum cut is the optimum.  Vertices: candidates + activations; arcs:
 * about two per variable plus one per (reader, activation) pair.
 */
#include "sfb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cost.h"
#include "mincut.h"
#include "sfb_int.h"

struct tp_sfb {
	const struct tp_model *m;
	const struct tp_cluster *c;
	struct tp_sfb_options o;
	double dtype_bytes;
	double grad_elem;    /* bytes per gradient element, uncompressed */
	/* per op */
	double *params;      /* parameter count */
	double *act_bytes;   /* output per sample (activation, its gradient) */
	double *in_bytes;    /* inputs per sample */
	double *wgrad_flop;  /* weight-gradient FLOP per sample */
	double *mat_m, *mat_n; /* gradient as an m x n matrix (PowerSGD) */
	uint8_t *candidate;  /* has parameters (and is not an input) */
	struct tp_cost_device *dev; /* per device type, for the built-in
				       compute times (core/cost.h) */
};

void tp_sfb_options_default(struct tp_sfb_options *o)
{
	memset(o, 0, sizeof(*o));
	o->powersgd_rank = 4;
	o->link_eff_intra = 1;
	o->link_eff_network = 1;
	o->step_latency_s = 0;
}

void tp_sfb_free(struct tp_sfb *sfb)
{
	if (!sfb)
		return;
	free(sfb->params);
	free(sfb->act_bytes);
	free(sfb->in_bytes);
	free(sfb->wgrad_flop);
	free(sfb->mat_m);
	free(sfb->mat_n);
	free(sfb->candidate);
	free(sfb->dev);
	free(sfb);
}

struct tp_sfb *tp_sfb_new(const struct tp_model *m, const struct tp_cluster *c,
			  const struct tp_sfb_options *o,
			  struct tp_error *err)
{
	struct tp_sfb *sfb;
	size_t n = m->ops.n;
	double seq;

	if (!m->finalized || !c->finalized) {
		tp_error_set(err, TP_EINTERNAL,
			     "model and cluster must be finalized");
		return NULL;
	}
	sfb = tp_calloc(1, sizeof(*sfb));
	if (!sfb)
		goto nomem;
	sfb->m = m;
	sfb->c = c;
	if (o)
		sfb->o = *o;
	else
		tp_sfb_options_default(&sfb->o);
	if (sfb->o.powersgd_rank == 0)
		sfb->o.powersgd_rank = 4;
	if (!(sfb->o.link_eff_intra > 0))
		sfb->o.link_eff_intra = 1;
	if (!(sfb->o.link_eff_network > 0))
		sfb->o.link_eff_network = 1;
	sfb->dtype_bytes = tp_dtype_bytes(m->dtype);
	sfb->grad_elem = sfb->o.grad_elem_bytes > 0 ? sfb->o.grad_elem_bytes
						    : sfb->dtype_bytes;
	sfb->params = tp_calloc(n, sizeof(double));
	sfb->act_bytes = tp_calloc(n, sizeof(double));
	sfb->in_bytes = tp_calloc(n, sizeof(double));
	sfb->wgrad_flop = tp_calloc(n, sizeof(double));
	sfb->mat_m = tp_calloc(n, sizeof(double));
	sfb->mat_n = tp_calloc(n, sizeof(double));
	sfb->candidate = tp_calloc(n, 1);
	sfb->dev = tp_calloc(c->types.n + 1, sizeof(*sfb->dev));
	if (!sfb->params || !sfb->act_bytes || !sfb->in_bytes ||
	    !sfb->wgrad_flop || !sfb->mat_m || !sfb->mat_n ||
	    !sfb->candidate || !sfb->dev)
		goto nomem;
	for (size_t t = 0; t < c->types.n; t++)
		tp_cost_device_init(&sfb->dev[t], &c->types.v[t], m->dtype, 0);
	seq = m->seq_len > 0 ? (double)m->seq_len : 1;
	for (size_t i = 0; i < n; i++) {
		const struct tp_op *op = &m->ops.v[i];
		const uint32_t *out = tp_model_out_edges(m, (uint32_t)i);
		const uint32_t *in = tp_model_in_edges(m, (uint32_t)i);
		double emax = 0, ins = 0, cols;

		for (uint32_t k = 0; k < op->n_out; k++)
			if (m->edges.v[out[k]].bytes > emax)
				emax = m->edges.v[out[k]].bytes;
		for (uint32_t k = 0; k < op->n_in; k++)
			ins += m->edges.v[in[k]].bytes;
		sfb->act_bytes[i] = op->out_bytes > 0 ? op->out_bytes : emax;
		sfb->in_bytes[i] = ins;
		sfb->params[i] = op->param_bytes / sfb->dtype_bytes;
		sfb->candidate[i] = op->param_bytes > 0 &&
				    op->kind != TP_OP_INPUT;
		/* backward = input gradient + weight gradient, equal halves
		 * for GEMMs; the forward FLOP when the model gives none */
		sfb->wgrad_flop[i] = op->backward_flop > 0
					     ? op->backward_flop / 2
					     : op->flop;
		/* gradient as a matrix: output features x input features
		 * for matmuls and embeddings (features from the per-token
		 * output), square otherwise */
		cols = sfb->act_bytes[i] / (sfb->dtype_bytes * seq);
		if ((op->kind == TP_OP_MATMUL || op->kind == TP_OP_EMBEDDING) &&
		    cols >= 1 && cols <= sfb->params[i]) {
			sfb->mat_n[i] = cols;
			sfb->mat_m[i] = sfb->params[i] / cols;
		} else {
			sfb->mat_n[i] = sfb->mat_m[i] = sqrt(sfb->params[i]);
		}
	}
	return sfb;
nomem:
	tp_sfb_free(sfb);
	tp_error_set(err, TP_ENOMEM, "out of memory");
	return NULL;
}

void tp_sfb_costs_init(struct tp_sfb_costs *k)
{
	memset(k, 0, sizeof(*k));
}

void tp_sfb_costs_release(struct tp_sfb_costs *k)
{
	if (!k)
		return;
	tp_vec_free(&k->cands);
	tp_vec_free(&k->tensors);
	tp_vec_free(&k->readers);
	memset(k, 0, sizeof(*k));
}

void tp_sfb_scratch_free(struct tp_sfb_scratch *s)
{
	if (!s)
		return;
	tp_energy_release(&s->e);
	free(s->local);
	free(s->tensor_of);
	free(s->entry);
	free(s->chan);
	free(s->flow_a);
	free(s->flow_b);
	tp_vec_free(&s->pairs);
	tp_vec_free(&s->last_reader);
	tp_vec_free(&s->last_pair);
	tp_vec_free(&s->count);
	tp_vec_free(&s->x);
	tp_vec_free(&s->vars);
	tp_vec_free(&s->pool);
	tp_sfb_costs_release(&s->k);
	free(s);
}

struct tp_sfb_scratch *tp_sfb_scratch_new(const struct tp_sfb *sfb)
{
	struct tp_sfb_scratch *s = tp_calloc(1, sizeof(*s));
	size_t n = sfb->m->ops.n, nch = 2 * sfb->c->links.n + 1;

	if (!s)
		return NULL;
	tp_energy_init(&s->e);
	tp_sfb_costs_init(&s->k);
	s->local = tp_calloc(n, sizeof(uint32_t));
	s->tensor_of = tp_calloc(n, sizeof(uint32_t));
	s->entry = tp_calloc(n, sizeof(uint32_t));
	s->chan = tp_calloc(nch, sizeof(uint32_t));
	if (!s->local || !s->tensor_of || !s->entry || !s->chan) {
		tp_sfb_scratch_free(s);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		s->local[i] = s->tensor_of[i] = s->entry[i] = TP_NONE;
	return s;
}

/* --- compute times ------------------------------------------------------ */

/* One kernel of an op of this kind doing `flop` FLOP and moving `bytes`
 * bytes on device d (core/cost.h, the device type's own figures). */
static double roofline(const struct tp_sfb *sfb, uint32_t d,
		       enum tp_op_kind kind, double flop, double bytes)
{
	const struct tp_cluster *c = sfb->c;

	return tp_cost_kernel_s(&sfb->dev[c->devices.v[d].type], kind, flop,
				bytes, 1);
}

/* Seconds of op's phase over `samples` samples on device d. */
static double compute_s(const struct tp_sfb *sfb, uint32_t op,
			enum tp_sfb_phase ph, uint32_t d, double samples,
			double flop)
{
	const struct tp_op *o;
	double bytes;

	if (samples <= 0 && ph != TP_SFB_DENSE_GEMM)
		return 0;
	if (sfb->o.compute)
		return sfb->o.compute(sfb->o.compute_ctx, op, ph, d, samples,
				      flop);
	if (ph == TP_SFB_DENSE_GEMM)
		return roofline(sfb, d, TP_OP_MATMUL, flop, 0);
	o = &sfb->m->ops.v[op];
	if (ph == TP_SFB_FORWARD) {
		bytes = o->mem_bytes * samples + o->param_bytes;
		return roofline(sfb, d, o->kind, o->flop * samples, bytes);
	}
	bytes = (sfb->in_bytes[op] + sfb->act_bytes[op]) * samples +
		o->param_bytes;
	return roofline(sfb, d, o->kind, sfb->wgrad_flop[op] * samples,
			bytes);
}

/* --- collectives on the plan's routes ----------------------------------- */

/* Per-step figures of a set of concurrent flows: the slowest flow's
 * bandwidth (each channel's bandwidth shared equally by the flows of the
 * set crossing it, times the link efficiency) and the largest latency. */
struct step {
	double bw, lat;
};

static struct step flows_step(const struct tp_sfb *sfb,
			      struct tp_sfb_scratch *s, uint32_t nf)
{
	const struct tp_cluster *c = sfb->c;
	struct step st = {INFINITY, 0};

	for (uint32_t f = 0; f < nf; f++) {
		struct tp_route rr, *r = &rr;
		const uint32_t *ch = rr.ch;

		tp_cluster_route(c, s->flow_a[f], s->flow_b[f], r);
		for (uint32_t k = 0; k < r->n; k++)
			s->chan[ch[k]]++;
	}
	for (uint32_t f = 0; f < nf; f++) {
		struct tp_route rr, *r = &rr;
		const uint32_t *ch = rr.ch;

		tp_cluster_route(c, s->flow_a[f], s->flow_b[f], r);
		for (uint32_t k = 0; k < r->n; k++) {
			const struct tp_link *l = &c->links.v[ch[k] / 2];
			bool net = l->kind == TP_LINK_NIC ||
				   l->kind == TP_LINK_NETWORK;
			double bw = l->bw_Bps *
				    (net ? sfb->o.link_eff_network
					 : sfb->o.link_eff_intra) /
				    s->chan[ch[k]];
			if (bw < st.bw)
				st.bw = bw;
		}
		if (r->latency_s > st.lat)
			st.lat = r->latency_s;
	}
	for (uint32_t f = 0; f < nf; f++) {
		struct tp_route rr, *r = &rr;
		const uint32_t *ch = rr.ch;

		tp_cluster_route(c, s->flow_a[f], s->flow_b[f], r);
		for (uint32_t k = 0; k < r->n; k++)
			s->chan[ch[k]] = 0;
	}
	st.lat += sfb->o.step_latency_s;
	return st;
}

/* The collectives of one group's replicas. */
struct coll {
	uint32_t n;        /* replicas */
	struct step ring;  /* ring over the replicas in order */
	bool hier;         /* hierarchical all-reduce possible */
	uint32_t nodes, per_node;
	struct step intra, inter;
	enum tp_sync sync;
	double max_share;
	double mb;         /* micro-batches */
};

static int ensure_flows(struct tp_sfb_scratch *s, size_t n)
{
	if (n <= s->cap_flows)
		return 0;
	free(s->flow_a);
	free(s->flow_b);
	s->flow_a = tp_calloc(n, sizeof(uint32_t));
	s->flow_b = tp_calloc(n, sizeof(uint32_t));
	s->cap_flows = s->flow_a && s->flow_b ? n : 0;
	return s->cap_flows ? 0 : -1;
}

static int group_coll(const struct tp_sfb *sfb, const struct tp_plan *plan,
		      uint32_t g, struct tp_sfb_scratch *s, struct coll *k)
{
	const struct tp_cluster *c = sfb->c;
	const struct tp_plan_group *gr = &plan->groups.v[g];
	const uint32_t *devs = tp_plan_group_devs(plan, g);
	const double *sh = tp_plan_group_shares(plan, g);
	uint32_t n = gr->dp, nf = 0;

	memset(k, 0, sizeof(*k));
	k->n = n;
	k->sync = gr->sync;
	k->mb = plan->micro_batches ? plan->micro_batches : 1;
	for (uint32_t r = 0; r < n; r++)
		if (sh[r] > k->max_share)
			k->max_share = sh[r];
	if (ensure_flows(s, n))
		return -1;
	for (uint32_t r = 0; r < n; r++) {
		s->flow_a[r] = devs[r * gr->tp];
		s->flow_b[r] = devs[((r + 1) % n) * gr->tp];
	}
	k->ring = flows_step(sfb, s, n);
	/* hierarchical: replicas grouped by node, in order, equal counts */
	if (gr->sync == TP_SYNC_HIERARCHICAL) {
		uint32_t first_node = c->devices.v[devs[0]].node, cnt = 0;
		uint32_t nodes = 0, per = 0;
		bool ok = true;

		for (uint32_t r = 0; r <= n && ok; r++) {
			uint32_t node = r < n ? c->devices.v[devs[r * gr->tp]].node
					      : TP_NONE;
			if (r < n && node == first_node) {
				cnt++;
				continue;
			}
			if (per == 0)
				per = cnt;
			else if (cnt != per)
				ok = false;
			nodes++;
			first_node = node;
			cnt = 1;
		}
		if (ok && nodes >= 2 && per >= 2) {
			k->hier = true;
			k->nodes = nodes;
			k->per_node = per;
			/* intra: a ring inside every node at once */
			nf = 0;
			for (uint32_t a = 0; a < nodes; a++)
				for (uint32_t l = 0; l < per; l++) {
					s->flow_a[nf] =
						devs[(a * per + l) * gr->tp];
					s->flow_b[nf] =
						devs[(a * per + (l + 1) % per) *
						     gr->tp];
					nf++;
				}
			k->intra = flows_step(sfb, s, nf);
			/* inter: one ring across nodes per local rank */
			nf = 0;
			for (uint32_t l = 0; l < per; l++)
				for (uint32_t a = 0; a < nodes; a++) {
					s->flow_a[nf] =
						devs[(a * per + l) * gr->tp];
					s->flow_b[nf] =
						devs[(((a + 1) % nodes) * per +
						      l) *
						     gr->tp];
					nf++;
				}
			k->inter = flows_step(sfb, s, nf);
		}
	}
	return 0;
}

/* All-reduce of S bytes (core/cost.h): time, and bytes sent by all
 * replicas. */
static double allreduce_s(const struct coll *k, double S, double *bytes)
{
	double n = k->n;

	if (k->hier) {
		double g = k->per_node, K = k->nodes;
		if (bytes)
			*bytes = n * (tp_cost_ring_traffic(TP_COST_ALL_REDUCE,
							   g) * S +
				      tp_cost_ring_traffic(TP_COST_ALL_REDUCE,
							   K) * S / g);
		return tp_cost_hier_allreduce_s(g, K, S, k->intra.lat,
						k->intra.bw, k->inter.lat,
						k->inter.bw);
	}
	if (bytes) /* every step, every replica sends S / n */
		*bytes = tp_cost_ring_steps(TP_COST_ALL_REDUCE, n) * S;
	return tp_cost_ring_s(TP_COST_ALL_REDUCE, n, S, k->ring.lat,
			      k->ring.bw);
}

/* All-gather, once per micro-batch, of a tensor of S bytes per iteration
 * sharded by the replicas' shares (ring; each step moves the largest
 * shard). */
static double allgather_s(const struct coll *k, double S, double *bytes)
{
	double n = k->n, steps = tp_cost_ring_steps(TP_COST_ALL_GATHER, n);

	if (bytes)
		*bytes = steps * S;
	return k->mb * steps * k->ring.lat +
	       steps * k->max_share * S / k->ring.bw;
}

/* --- per-group costs ---------------------------------------------------- */

static bool powersgd_applies(const struct tp_sfb *sfb, uint32_t op,
			     uint32_t rank)
{
	double mm = sfb->mat_m[op], nn = sfb->mat_n[op];

	return (tp_cost_gemm_like(sfb->m->ops.v[op].kind) ||
		sfb->m->ops.v[op].kind == TP_OP_EMBEDDING) &&
	       mm >= 2 && nn >= 2 && (mm + nn) * rank < mm * nn;
}

/* What the gradient sync of one op moves and computes. */
struct sync_fig {
	double traffic; /* bytes sent by all replicas */
	double message; /* bytes of each replica's message */
	double flop;    /* compression compute (PowerSGD) */
};

/* Gradient sync of op under a format: proxy seconds, and its figures. */
static double sync_cost(const struct tp_sfb *sfb, const struct coll *k,
			const struct tp_plan *plan, uint32_t g, uint32_t op,
			enum tp_lossy lossy, uint32_t rank,
			struct sync_fig *out)
{
	const uint32_t *devs = tp_plan_group_devs(plan, g);
	const struct tp_plan_group *gr = &plan->groups.v[g];
	double ge = sfb->grad_elem, t, b1, b2;
	double *traffic = &out->traffic, *message = &out->message;
	double *flop = &out->flop;

	*flop = 0;
	if (lossy == TP_LOSSY_FP16 && ge > 2)
		ge = 2;
	if (lossy == TP_LOSSY_POWERSGD && powersgd_applies(sfb, op, rank)) {
		double mm = sfb->mat_m[op], nn = sfb->mat_n[op], worst = 0;

		*flop = 4 * mm * nn * rank + 2 * mm * rank * rank;
		t = allreduce_s(k, mm * rank * ge, &b1) +
		    allreduce_s(k, nn * rank * ge, &b2);
		for (uint32_t r = 0; r < gr->dp; r++) {
			double c = compute_s(sfb, op, TP_SFB_DENSE_GEMM,
					     devs[r * gr->tp], 1, *flop);
			if (c > worst)
				worst = c;
		}
		*traffic = b1 + b2;
		*message = (mm + nn) * rank * ge;
		return t + worst;
	}
	*message = sfb->params[op] * ge;
	return allreduce_s(k, *message, traffic);
}

/* Extra seconds of op's phase when every replica covers the whole group
 * batch: the slowest replica's. */
static double extra_s(const struct tp_sfb *sfb, const struct tp_plan *plan,
		      uint32_t g, uint32_t op, enum tp_sfb_phase ph,
		      const struct coll *k)
{
	const struct tp_plan_group *gr = &plan->groups.v[g];
	const uint32_t *devs = tp_plan_group_devs(plan, g);
	const double *sh = tp_plan_group_shares(plan, g);
	double mbs = (double)plan->global_batch / k->mb, worst = 0;

	for (uint32_t r = 0; r < gr->dp; r++) {
		double t = k->mb * compute_s(sfb, op, ph, devs[r * gr->tp],
					     (1 - sh[r]) * mbs, 0);
		if (t > worst)
			worst = t;
	}
	return worst;
}

static const char *ineligible(const struct tp_plan *plan,
			      const struct tp_plan_group *gr)
{
	if (plan->compression == TP_COMPRESSION_OFF)
		return "compression off";
	if (gr->dp < 2)
		return "no data parallelism (dp < 2)";
	if (gr->tp != 1)
		return "tensor parallelism (tp > 1)";
	if (gr->sync != TP_SYNC_RING && gr->sync != TP_SYNC_HIERARCHICAL)
		return "parameter-server synchronisation";
	if (plan->zero != 0)
		return "ZeRO shards the gradients (zero > 0)";
	return NULL;
}

static enum tp_status nomem(struct tp_error *err)
{
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

enum tp_status tp_sfb_group_costs(const struct tp_sfb *sfb,
				  const struct tp_plan *plan, uint32_t g,
				  enum tp_lossy lossy, uint32_t rank,
				  struct tp_sfb_scratch *s,
				  struct tp_sfb_costs *k, struct tp_error *err)
{
	const struct tp_model *m = sfb->m;
	const struct tp_plan_group *gr;
	const uint32_t *ops;
	const char *why;
	struct coll cl;
	double GB;
	enum tp_status st = TP_OK;

	if (g >= plan->groups.n)
		return tp_error_set(err, TP_EINPUT, "no group %u in the plan",
				    g);
	gr = &plan->groups.v[g];
	ops = tp_plan_group_ops(plan, g);
	k->group = g;
	k->lossy = lossy;
	k->rank = lossy == TP_LOSSY_POWERSGD ? (rank ? rank : 4) : 0;
	k->cands.n = k->tensors.n = k->readers.n = 0;
	k->sync_s = k->sync_bytes = 0;
	k->why[0] = 0;
	why = ineligible(plan, gr);
	if (why) {
		k->eligible = false;
		snprintf(k->why, sizeof(k->why), "%s", why);
		return TP_OK;
	}
	k->eligible = true;
	for (uint32_t i = 0; i < gr->n_ops; i++)
		if (ops[i] >= m->ops.n)
			return tp_error_set(err, TP_EINPUT,
					    "group %u: op index %u out of range",
					    g, ops[i]);
	if (group_coll(sfb, plan, g, s, &cl))
		return nomem(err);
	GB = (double)plan->global_batch;

	/* candidates, in group order */
	for (uint32_t i = 0; i < gr->n_ops; i++) {
		uint32_t o = ops[i];
		struct tp_sfb_cand cd;
		struct sync_fig fig;

		if (!sfb->candidate[o])
			continue;
		memset(&cd, 0, sizeof(cd));
		cd.op = o;
		cd.sync_s = sync_cost(sfb, &cl, plan, g, o, lossy, k->rank,
				      &fig);
		cd.sync_bytes = fig.traffic;
		cd.wgrad_s = extra_s(sfb, plan, g, o, TP_SFB_WEIGHT_GRAD, &cl);
		cd.grad_gather_s = allgather_s(&cl, sfb->act_bytes[o] * GB,
					       &cd.grad_gather_bytes);
		s->local[o] = (uint32_t)k->cands.n;
		if (tp_vec_push(&k->cands, cd)) {
			st = nomem(err);
			goto out;
		}
		k->sync_s += cd.sync_s;
		k->sync_bytes += cd.sync_bytes;
	}

	/* activations read by candidates, one per producer; (activation,
	 * reader) pairs with the bytes the reader reads from it */
	s->pairs.n = 0;
	for (uint32_t ci = 0; ci < k->cands.n; ci++) {
		uint32_t o = k->cands.v[ci].op;
		const uint32_t *in = tp_model_in_edges(m, o);

		for (uint32_t e = 0; e < m->ops.v[o].n_in; e++) {
			const struct tp_edge *ed = &m->edges.v[in[e]];
			uint32_t p = ed->src, t = s->tensor_of[p];
			struct tp_sfb_pair pr;

			if (t == TP_NONE) {
				struct tp_sfb_tensor tn;

				memset(&tn, 0, sizeof(tn));
				tn.producer = p;
				tn.producer_cand = s->local[p];
				t = (uint32_t)k->tensors.n;
				s->tensor_of[p] = t;
				if (tp_vec_push(&k->tensors, tn) ||
				    tp_vec_push(&s->last_reader, TP_NONE) ||
				    tp_vec_push(&s->last_pair, 0)) {
					st = nomem(err);
					goto out;
				}
				s->last_reader.v[t] = TP_NONE;
			}
			if (s->last_reader.v[t] == ci) {
				s->pairs.v[s->last_pair.v[t]].bytes += ed->bytes;
				continue;
			}
			pr.tensor = t;
			pr.cand = ci;
			pr.bytes = ed->bytes;
			s->last_reader.v[t] = ci;
			s->last_pair.v[t] = (uint32_t)s->pairs.n;
			if (tp_vec_push(&s->pairs, pr)) {
				st = nomem(err);
				goto out;
			}
		}
	}
	/* readers grouped by activation (counting sort), sizes and costs */
	s->count.n = 0;
	if (tp_vec_reserve(&s->count, k->tensors.n + 1) ||
	    tp_vec_reserve(&k->readers, s->pairs.n)) {
		st = nomem(err);
		goto out;
	}
	memset(s->count.v, 0, (k->tensors.n + 1) * sizeof(uint32_t));
	for (size_t q = 0; q < s->pairs.n; q++) {
		struct tp_sfb_tensor *tn = &k->tensors.v[s->pairs.v[q].tensor];
		s->count.v[s->pairs.v[q].tensor + 1]++;
		if (s->pairs.v[q].bytes > tn->sample_bytes)
			tn->sample_bytes = s->pairs.v[q].bytes;
	}
	for (size_t t = 0; t < k->tensors.n; t++) {
		struct tp_sfb_tensor *tn = &k->tensors.v[t];

		s->count.v[t + 1] += s->count.v[t];
		tn->first = s->count.v[t];
		tn->n = 0;
		tn->gather_s = allgather_s(&cl, tn->sample_bytes * GB,
					   &tn->gather_bytes);
		tn->fwd_s = tn->producer_cand != TP_NONE
				    ? extra_s(sfb, plan, g, tn->producer,
					      TP_SFB_FORWARD, &cl)
				    : 0;
	}
	for (size_t q = 0; q < s->pairs.n; q++) {
		struct tp_sfb_tensor *tn = &k->tensors.v[s->pairs.v[q].tensor];
		k->readers.v[tn->first + tn->n++] = s->pairs.v[q].cand;
	}
	k->readers.n = s->pairs.n;
out:
	for (size_t t = 0; t < k->tensors.n; t++)
		s->tensor_of[k->tensors.v[t].producer] = TP_NONE;
	for (size_t ci = 0; ci < k->cands.n; ci++)
		s->local[k->cands.v[ci].op] = TP_NONE;
	s->last_reader.n = s->last_pair.n = 0;
	return st;
}

/* D_j: what a selected producer saves its readers by recomputing. */
static double discount(const struct tp_sfb_costs *k,
		       const struct tp_sfb_tensor *tn)
{
	(void)k;
	if (tn->producer_cand == TP_NONE || !(tn->fwd_s < tn->gather_s))
		return 0;
	return tn->gather_s - tn->fwd_s;
}

static bool tensor_needed(const struct tp_sfb_costs *k,
			  const struct tp_sfb_tensor *tn, const uint8_t *x)
{
	for (uint32_t r = 0; r < tn->n; r++)
		if (x[k->readers.v[tn->first + r]])
			return true;
	return false;
}

double tp_sfb_objective(const struct tp_sfb_costs *k, const uint8_t *x)
{
	double sum = 0;

	for (size_t i = 0; i < k->cands.n; i++)
		if (x[i])
			sum += k->cands.v[i].wgrad_s +
			       k->cands.v[i].grad_gather_s -
			       k->cands.v[i].sync_s;
	for (size_t t = 0; t < k->tensors.n; t++) {
		const struct tp_sfb_tensor *tn = &k->tensors.v[t];

		if (!tensor_needed(k, tn, x))
			continue;
		sum += tn->gather_s;
		if (tn->producer_cand != TP_NONE && x[tn->producer_cand])
			sum -= discount(k, tn);
	}
	return sum;
}

enum tp_status tp_sfb_solve(const struct tp_sfb_costs *k,
			    struct tp_sfb_scratch *s, uint8_t *x,
			    double *value, struct tp_error *err)
{
	uint32_t nc = (uint32_t)k->cands.n, nt = (uint32_t)k->tensors.n;
	enum tp_status st;

	if (!k->eligible || nc == 0) {
		if (value)
			*value = 0;
		return TP_OK;
	}
	st = tp_energy_reset(&s->e, nc + nt, err);
	if (st)
		return st;
	for (uint32_t i = 0; i < nc; i++) {
		const struct tp_sfb_cand *cd = &k->cands.v[i];
		tp_energy_add_unary(&s->e, i, 0,
				    cd->wgrad_s + cd->grad_gather_s -
					    cd->sync_s);
	}
	for (uint32_t t = 0; t < nt; t++) {
		const struct tp_sfb_tensor *tn = &k->tensors.v[t];
		uint32_t tv = nc + t;
		double d = discount(k, tn);

		tp_energy_add_unary(&s->e, tv, 0, tn->gather_s);
		for (uint32_t r = 0; r < tn->n; r++) {
			st = tp_energy_add_implies(
				&s->e, k->readers.v[tn->first + r], tv, err);
			if (st)
				return st;
		}
		if (d > 0) {
			st = tp_energy_add_pairwise(&s->e, tn->producer_cand,
						    tv, 0, 0, 0, -d, err);
			if (st)
				return st;
		}
	}
	s->vars.n = 0;
	if (tp_vec_reserve(&s->vars, nc + nt))
		return nomem(err);
	st = tp_energy_minimize(&s->e, s->vars.v, NULL, err);
	if (st)
		return st;
	memcpy(x, s->vars.v, nc);
	if (value)
		*value = tp_sfb_objective(k, x);
	return TP_OK;
}

/* Net traffic a selection saves (all replicas, per iteration). */
static double saved_bytes(const struct tp_sfb_costs *k, const uint8_t *x)
{
	double b = 0;

	for (size_t i = 0; i < k->cands.n; i++)
		if (x[i])
			b += k->cands.v[i].sync_bytes -
			     k->cands.v[i].grad_gather_bytes;
	for (size_t t = 0; t < k->tensors.n; t++) {
		const struct tp_sfb_tensor *tn = &k->tensors.v[t];

		if (!tensor_needed(k, tn, x))
			continue;
		if (tn->producer_cand != TP_NONE && x[tn->producer_cand] &&
		    discount(k, tn) > 0)
			continue; /* recomputed, not gathered */
		b -= tn->gather_bytes;
	}
	return b;
}

void tp_sfb_clear(struct tp_plan *plan)
{
	for (size_t g = 0; g < plan->groups.n; g++) {
		struct tp_plan_group *gr = &plan->groups.v[g];

		gr->sfb_first = 0;
		gr->n_sfb = 0;
		gr->sfb_saved_bytes = 0;
		gr->lossy = TP_LOSSY_NONE;
		gr->powersgd_rank = 0;
	}
	plan->sfb.n = 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum tp_status tp_sfb_select(const struct tp_sfb *sfb, struct tp_plan *plan,
			     struct tp_sfb_scratch *s,
			     struct tp_sfb_stats *stats, struct tp_error *err)
{
	struct tp_sfb_stats local_stats;
	struct tp_sfb_costs *k = &s->k;
	enum tp_status st;

	if (!stats)
		stats = &local_stats;
	memset(stats, 0, sizeof(*stats));
	s->pool.n = 0;
	for (uint32_t g = 0; g < plan->groups.n; g++) {
		struct tp_plan_group *gr = &plan->groups.v[g];
		enum tp_lossy fmts[3] = {TP_LOSSY_NONE, TP_LOSSY_NONE,
					 TP_LOSSY_NONE};
		int nf = 1;
		double best = INFINITY, base = 0, best_bytes = 0;
		enum tp_lossy best_fmt = TP_LOSSY_NONE;
		size_t first = s->pool.n;

		gr->lossy = TP_LOSSY_NONE;
		gr->powersgd_rank = 0;
		gr->sfb_saved_bytes = 0;
		if (plan->compression == TP_COMPRESSION_LOSSY) {
			if (sfb->grad_elem > 2)
				fmts[nf++] = TP_LOSSY_FP16;
			fmts[nf++] = TP_LOSSY_POWERSGD;
		}
		for (int f = 0; f < nf; f++) {
			double v, t0;

			st = tp_sfb_group_costs(sfb, plan, g, fmts[f],
						sfb->o.powersgd_rank, s, k,
						err);
			if (st)
				return st;
			if (!k->eligible || k->cands.n == 0)
				break;
			s->x.n = 0;
			if (tp_vec_reserve(&s->x, k->cands.n) ||
			    tp_vec_reserve(&s->pool, k->cands.n))
				return nomem(err);
			t0 = now_s();
			st = tp_sfb_solve(k, s, s->x.v, &v, err);
			stats->solve_s += now_s() - t0;
			if (st)
				return st;
			if (k->cands.n + k->tensors.n > stats->max_vars)
				stats->max_vars =
					(uint32_t)(k->cands.n + k->tensors.n);
			if (f == 0) {
				base = k->sync_s;
				stats->groups_eligible++;
				stats->ops_candidate += (uint32_t)k->cands.n;
				stats->sync_s += base;
			}
			/* strictly better than the formats before it */
			if (k->sync_s + v < best - 1e-12 * base) {
				best = k->sync_s + v;
				best_fmt = fmts[f];
				best_bytes = saved_bytes(k, s->x.v);
				s->pool.n = first;
				for (size_t i = 0; i < k->cands.n; i++)
					if (s->x.v[i])
						s->pool.v[s->pool.n++] =
							k->cands.v[i].op;
			}
		}
		gr->sfb_first = (uint32_t)first;
		gr->n_sfb = (uint32_t)(s->pool.n - first);
		if (isfinite(best)) {
			gr->lossy = best_fmt;
			gr->powersgd_rank = best_fmt == TP_LOSSY_POWERSGD
						    ? sfb->o.powersgd_rank
						    : 0;
			gr->sfb_saved_bytes = best_bytes;
			stats->saved_s += base - best;
			stats->saved_bytes += best_bytes;
			stats->ops_selected += gr->n_sfb;
			if (best_fmt != TP_LOSSY_NONE)
				stats->groups_lossy++;
		}
	}
	plan->sfb.n = 0;
	if (tp_vec_reserve(&plan->sfb, s->pool.n))
		return nomem(err);
	if (s->pool.n)
		memcpy(plan->sfb.v, s->pool.v, s->pool.n * sizeof(uint32_t));
	plan->sfb.n = s->pool.n;
	return TP_OK;
}

/* --- actions for the simulator ----------------------------------------- */

void tp_sfb_actions_init(struct tp_sfb_actions *a)
{
	memset(a, 0, sizeof(*a));
}

void tp_sfb_actions_release(struct tp_sfb_actions *a)
{
	if (!a)
		return;
	tp_vec_free(&a->v);
}

static struct tp_sfb_action *action_of(struct tp_sfb_scratch *s,
				       struct tp_sfb_actions *out, uint32_t op)
{
	struct tp_sfb_action a;

	if (s->entry[op] != TP_NONE)
		return &out->v.v[s->entry[op]];
	memset(&a, 0, sizeof(a));
	a.op = op;
	if (tp_vec_push(&out->v, a))
		return NULL;
	s->entry[op] = (uint32_t)out->v.n - 1;
	return &out->v.v[out->v.n - 1];
}

enum tp_status tp_sfb_group_actions(const struct tp_sfb *sfb,
				    const struct tp_plan *plan, uint32_t g,
				    struct tp_sfb_scratch *s,
				    struct tp_sfb_actions *out,
				    struct tp_error *err)
{
	const struct tp_plan_group *gr;
	struct tp_sfb_costs *k = &s->k;
	const uint32_t *ops;
	enum tp_status st = TP_OK;
	struct coll cl;
	uint32_t rank;

	out->v.n = 0;
	if (g >= plan->groups.n)
		return tp_error_set(err, TP_EINPUT, "no group %u in the plan",
				    g);
	gr = &plan->groups.v[g];
	ops = tp_plan_group_ops(plan, g);
	rank = gr->powersgd_rank ? gr->powersgd_rank : sfb->o.powersgd_rank;
	/* plain entries for the ops with parameters, in group order */
	for (uint32_t i = 0; i < gr->n_ops; i++) {
		uint32_t o = ops[i];
		struct tp_sfb_action *a;

		if (o >= sfb->m->ops.n) {
			st = tp_error_set(err, TP_EINPUT,
					  "group %u: op index %u out of range",
					  g, o);
			goto out;
		}
		if (!sfb->candidate[o])
			continue;
		a = action_of(s, out, o);
		if (!a) {
			st = nomem(err);
			goto out;
		}
		a->sync_bytes = sfb->params[o] * sfb->grad_elem;
	}
	if (gr->n_sfb == 0 && gr->lossy == TP_LOSSY_NONE)
		goto out;
	st = tp_sfb_group_costs(sfb, plan, g, gr->lossy, rank, s, k, err);
	if (st)
		goto out;
	if (!k->eligible) {
		st = tp_error_set_path(err, TP_EINPUT, "$.groups",
				       "group %u uses gradient compression "
				       "but cannot (%s)",
				       g, k->why);
		goto out;
	}
	/* x from the plan's list */
	s->x.n = 0;
	if (tp_vec_reserve(&s->x, k->cands.n)) {
		st = nomem(err);
		goto out;
	}
	memset(s->x.v, 0, k->cands.n);
	for (size_t i = 0; i < k->cands.n; i++)
		s->local[k->cands.v[i].op] = (uint32_t)i;
	for (uint32_t j = 0; j < gr->n_sfb; j++) {
		uint32_t o = tp_plan_group_sfb(plan, g)[j];

		if (o >= sfb->m->ops.n || s->local[o] == TP_NONE) {
			char path[64];

			snprintf(path, sizeof(path),
				 "$.groups[%u].compression.sfb_ops[%u]", g, j);
			st = tp_error_set_path(
				err, TP_EINPUT, path,
				"op cannot use sufficient-factor broadcasting "
				"(not a parameter op of this group)");
			break;
		}
		s->x.v[s->local[o]] = 1;
	}
	for (size_t i = 0; i < k->cands.n; i++)
		s->local[k->cands.v[i].op] = TP_NONE;
	if (st)
		goto out;
	if (group_coll(sfb, plan, g, s, &cl)) {
		st = nomem(err);
		goto out;
	}
	for (size_t i = 0; i < k->cands.n; i++) {
		const struct tp_sfb_cand *cd = &k->cands.v[i];
		struct tp_sfb_action *a = action_of(s, out, cd->op);
		struct sync_fig fig;

		if (!a) {
			st = nomem(err);
			goto out;
		}
		if (s->x.v[i]) {
			a->sfb = true;
			a->sync_bytes = 0;
			a->gather_grad_bytes = sfb->act_bytes[cd->op];
		} else {
			sync_cost(sfb, &cl, plan, g, cd->op, gr->lossy,
				  k->rank, &fig);
			a->sync_bytes = fig.message;
			a->compress_flop = fig.flop;
		}
	}
	for (size_t t = 0; t < k->tensors.n; t++) {
		const struct tp_sfb_tensor *tn = &k->tensors.v[t];
		struct tp_sfb_action *a;

		if (!tensor_needed(k, tn, s->x.v))
			continue;
		a = action_of(s, out, tn->producer);
		if (!a) {
			st = nomem(err);
			goto out;
		}
		if (tn->producer_cand != TP_NONE && s->x.v[tn->producer_cand] &&
		    discount(k, tn) > 0)
			a->forward_full = true;
		else
			a->gather_act_bytes = tn->sample_bytes;
	}
out:
	for (size_t i = 0; i < out->v.n; i++)
		s->entry[out->v.v[i].op] = TP_NONE;
	return st;
}

enum tp_status tp_sfb_group_effect(const struct tp_sfb *sfb,
				   const struct tp_plan *plan, uint32_t g,
				   struct tp_sfb_scratch *s,
				   struct tp_sfb_actions *tmp,
				   struct tp_sfb_effect *e,
				   struct tp_error *err)
{
	enum tp_status st;

	memset(e, 0, sizeof(*e));
	st = tp_sfb_group_actions(sfb, plan, g, s, tmp, err);
	if (st)
		return st;
	for (size_t i = 0; i < tmp->v.n; i++) {
		const struct tp_sfb_action *a = &tmp->v.v[i];
		const struct tp_op *o = &sfb->m->ops.v[a->op];
		double factors = 0;

		if (sfb->candidate[a->op])
			e->plain_sync_bytes += sfb->params[a->op] *
					       sfb->grad_elem;
		e->sync_bytes += a->sync_bytes;
		e->compress_flop += a->compress_flop;
		e->gather_bytes_per_sample +=
			a->gather_act_bytes + a->gather_grad_bytes;
		if (a->sfb) {
			e->extra_flop_per_sample += sfb->wgrad_flop[a->op];
			e->extra_bytes_per_sample +=
				sfb->in_bytes[a->op] + sfb->act_bytes[a->op];
			factors = sfb->in_bytes[a->op] + sfb->act_bytes[a->op];
		}
		if (a->forward_full) {
			e->extra_flop_per_sample += o->flop;
			e->extra_bytes_per_sample += o->mem_bytes;
		}
		if (factors > e->temp_bytes_per_sample)
			e->temp_bytes_per_sample = factors;
		if (a->sfb || a->forward_full || a->gather_act_bytes > 0 ||
		    a->compress_flop > 0 ||
		    plan->groups.v[g].lossy != TP_LOSSY_NONE)
			e->active = true;
	}
	return TP_OK;
}
