/*
 * mixed.c - seeds of mixed tensor-parallel replicas (core/plan.h
 * "mixed"): data parallelism over every device with the fastest device
 * type at tp 1 and each slower type at a higher tp inside its nodes, as
 * Sailor, HexiScale and FlashFlex plan heterogeneous clusters (the slow
 * type's replicas then keep up with the fast ones without giving them a
 * sliver of the batch).  For each degree 2, 4, 8 of the slower types (the
 * same for all of them; inside their nodes and dividing every op's
 * units), shares by estimated replica speed (the type's speed on the
 * model x its degree, tp_space type_speed) in whole samples, the largest
 * micro-batch counts that give every replica a sample, each with the least
 * recomputation that fits (none, selective, full).  On Sailor's Fig. 8b
 * case (OPT-350, 32 A100 + 96 V100) one is the answer (the A100s at tp
 * 1, the V100s at tp 2: 4.196 s, bench_peers).  They are raw plans
 * (sctx_eval_plan): the answer when fastest; the sweeps and the tree
 * reach such groups through their own mixed decisions (actions.h
 * TP_DECISION_MIXED; mixed_pipe.c's moves vary its own plans).  Only where
 * the runtime runs them (can.mixed_tp: none of the shipped profiles;
 * runtime none does) and for models without routed experts.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search_int.h"

/* At most this many micro-batch counts per degree (MIXED_COUNTS): the
 * largest that gives every replica a sample (least memory), and the next
 * smaller ones. */
#define MIXED_COUNTS 3

struct mix {
	uint32_t *devs, *rtp, n_dev, n_rep, *ops;
	double *w;
	int64_t *samples;
	double *shares;
};

/* Replicas for slow-type degree t into x: the fastest type's devices
 * at tp 1, every other type's in runs of t inside a node (the rest of a
 * node at tp 1).  False when no replica got t. */
static bool layout(const struct tp_space *sp, uint32_t fast, uint32_t t,
		   struct mix *x)
{
	const struct tp_cluster *c = sp->cluster;
	bool any = false;

	x->n_dev = x->n_rep = 0;
	for (size_t n = 0; n < c->nodes.n; n++) {
		const struct tp_node *nd = &c->nodes.v[n];
		for (uint32_t ty = 0; ty < sp->n_types; ty++) {
			uint32_t k = 0, run = ty == fast ? 1 : t;
			uint32_t local[1024], cnt = 0;
			for (uint32_t i = 0; i < nd->n_devices && cnt < 1024;
			     i++)
				if (c->devices.v[nd->first_device + i].type ==
				    ty)
					local[cnt++] = nd->first_device + i;
			while (k < cnt) {
				uint32_t d = cnt - k >= run ? run : 1;
				memcpy(x->devs + x->n_dev, local + k,
				       d * sizeof(uint32_t));
				x->rtp[x->n_rep] = d;
				x->w[x->n_rep] = d * sp->type_speed[ty];
				any |= d > 1;
				x->n_dev += d;
				x->n_rep++;
				k += d;
			}
		}
	}
	return any;
}

/* Does every op split into t ranks? */
static bool splits(const struct tp_model *m, uint32_t t)
{
	bool any = false;

	for (size_t o = 0; o < m->ops.n; o++) {
		const struct tp_op *op = &m->ops.v[o];
		if (op->tp_units && op->tp_units % t)
			return false;
		if (tp_model_op_expert(m, (uint32_t)o) >= 0)
			return false;
		any |= op->tp_split != TP_SPLIT_NONE;
	}
	return any;
}

void search_mixed_plan_start(struct worker *w, uint32_t mb)
{
	struct sctx *s = w->s;

	tp_plan_clear(&w->plan);
	w->plan.global_batch = s->m->global_batch;
	w->plan.micro_batches = mb;
	w->plan.schedule = TP_SCHEDULE_1F1B;
	w->plan.virtual_stages = 1;
	w->plan.zero = 0;
	w->plan.compression = s->o->compression;
}

/* Score the plan of x under micro-batch count mb with the least
 * recomputation that fits.  *fit: one fitted. */
static enum tp_status try_counts(struct worker *w, struct mix *x,
				 uint32_t mb, uint32_t t, bool *fit)
{
	struct sctx *s = w->s;
	const struct tp_model *m = s->m;
	int64_t S = m->global_batch / mb;
	struct tp_plan_replicas rep = {x->n_rep, x->rtp};
	char src[96];
	enum tp_status st;

	*fit = false;
	if (!tp_space_split_samples(S, x->n_rep, x->w, NULL, x->samples))
		return TP_OK;
	for (uint32_t r = 0; r < x->n_rep; r++)
		x->shares[r] = (double)x->samples[r] / (double)S;
	for (int rc = TP_RECOMPUTE_NONE; rc < TP_RECOMPUTE_COUNT && !*fit;
	     rc++) {
		struct evalres r;
		search_mixed_plan_start(w, mb);
		if ((st = tp_plan_add_group_mixed(&w->plan, x->ops,
						  (uint32_t)m->ops.n, x->devs,
						  x->n_dev, &rep, x->shares,
						  &w->err)))
			return st == TP_EINPUT ? TP_OK : st;
		w->plan.groups.v[0].recompute = (enum tp_recompute)rc;
		snprintf(src, sizeof(src),
			 "seed: mixed tp (slower types at tp %u), m=%u", t,
			 mb);
		if (sctx_out_of_time(s))
			return TP_OK;
		st = sctx_eval_plan(w, &w->plan, src, sctx_best_cutoff(s),
				    &r);
		if (st)
			return st;
		s->res->seeds++;
		*fit = r.ok && r.feasible;
	}
	return TP_OK;
}

uint32_t search_mixed_fast_type(const struct tp_space *sp, uint32_t *n_present)
{
	const struct tp_cluster *c = sp->cluster;
	uint32_t fast = UINT32_MAX, n = 0;

	/* c->types is the whole catalogue: the types of the devices */
	for (uint32_t ty = 0; ty < sp->n_types; ty++) {
		bool present = false;
		for (size_t d = 0; d < c->devices.n && !present; d++)
			present = c->devices.v[d].type == ty;
		if (!present)
			continue;
		n++;
		if (fast == UINT32_MAX ||
		    sp->type_speed[ty] > sp->type_speed[fast])
			fast = ty;
	}
	*n_present = n;
	return fast;
}

enum tp_status search_seeds_mixed(struct worker *w)
{
	struct sctx *s = w->s;
	const struct tp_space *sp = &s->space;
	const struct tp_model *m = s->m;
	uint32_t n = (uint32_t)s->c->devices.n, types;
	uint32_t fast = search_mixed_fast_type(sp, &types);
	struct mix x;
	enum tp_status st = TP_OK;

	if (types < 2 || (sp->constrained && !sp->rt.can.mixed_tp))
		return TP_OK;
	memset(&x, 0, sizeof(x));
	x.devs = tp_calloc(n, sizeof(uint32_t));
	x.rtp = tp_calloc(n, sizeof(uint32_t));
	x.w = tp_calloc(n, sizeof(double));
	x.samples = tp_calloc(n, sizeof(int64_t));
	x.shares = tp_calloc(n, sizeof(double));
	x.ops = tp_calloc(m->ops.n + 1, sizeof(uint32_t));
	if (!x.devs || !x.rtp || !x.w || !x.samples || !x.shares || !x.ops) {
		st = TP_ENOMEM;
		goto out;
	}
	for (uint32_t o = 0; o < m->ops.n; o++)
		x.ops[o] = o;
	for (uint32_t t = 2; t <= 8 && !st; t *= 2) {
		uint32_t tried = 0;
		if (!splits(m, t) || !layout(sp, fast, t, &x) ||
		    x.n_dev != n)
			continue;
		/* the most micro-batches that give every replica a sample,
		   then fewer (more samples each) */
		for (uint32_t k = sp->n_mb; k-- > 0 && tried < MIXED_COUNTS &&
					    !st;) {
			bool fit;
			if (m->global_batch / sp->mb_counts[k] < x.n_rep)
				continue;
			tried++;
			st = try_counts(w, &x, sp->mb_counts[k], t, &fit);
			if (sctx_should_stop(s))
				goto out;
		}
	}
out:
	free(x.devs);
	free(x.rtp);
	free(x.w);
	free(x.samples);
	free(x.shares);
	free(x.ops);
	return st;
}
