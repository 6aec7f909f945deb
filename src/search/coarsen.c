#include "coarsen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/vec.h"

/* A cut inside a layer costs as much as this much squared imbalance (in
 * units of the mean group weight). */
#define INSIDE_LAYER_PENALTY 1.0
/* Layers per group are chosen so that at most this many layer groups
 * remain (leaving room for the ops outside layers). */
#define MAX_LAYER_GROUPS 48

double tp_coarsen_op_weight(const struct tp_op *op)
{
	return op->flop + op->backward_flop + 100.0 * 3.0 * op->mem_bytes +
	       1e5;
}

static uint32_t count_layers(const struct tp_model *m)
{
	/* layers are small integers in practice; count distinct values */
	int32_t maxl = -1;
	uint32_t n = 0;
	uint8_t *seen;

	for (size_t i = 0; i < m->ops.n; i++)
		if (m->ops.v[i].layer > maxl)
			maxl = m->ops.v[i].layer;
	if (maxl < 0)
		return 0;
	seen = calloc((size_t)maxl + 1, 1);
	if (!seen)
		return 0;
	for (size_t i = 0; i < m->ops.n; i++) {
		int32_t l = m->ops.v[i].layer;
		if (l >= 0 && !seen[l]) {
			seen[l] = 1;
			n++;
		}
	}
	free(seen);
	return n;
}

uint32_t tp_coarsen_auto_count(const struct tp_model *m)
{
	uint32_t nops = (uint32_t)m->ops.n, layers = count_layers(m), k;

	if (layers >= 8) {
		uint32_t per = (layers + MAX_LAYER_GROUPS - 1) / MAX_LAYER_GROUPS;
		k = (layers + per - 1) / per + 2;
	} else {
		double s = 2.0 * sqrt((double)nops);
		k = (uint32_t)lround(s);
		if (k < 16)
			k = 16;
		if (k > 48)
			k = 48;
	}
	if (k > TP_COARSEN_MAX_GROUPS)
		k = TP_COARSEN_MAX_GROUPS;
	if (k > nops)
		k = nops;
	if (k == 0)
		k = 1;
	return k;
}

void tp_groups_release(struct tp_groups *g)
{
	if (!g)
		return;
	free(g->first);
	free(g->group_of);
	free(g->weight);
	free(g->flop);
	free(g->param_bytes);
	free(g->saved_bytes);
	free(g->selective_bytes);
	free(g->in_bytes);
	free(g->tp_units);
	free(g->splittable);
	memset(g, 0, sizeof(*g));
}

static uint32_t gcd32(uint32_t a, uint32_t b)
{
	while (b) {
		uint32_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/*
 * Optimal segmentation of w[0..n) into k segments minimising
 * sum (seg / mean)^2 + penalty * (cuts where inside[i]).  cut[j] = 1 when a
 * cut before position j (1 <= j < n) lies inside a layer.  Segments are
 * bounded by `limit` weight (but always allowed one element) to keep the
 * dynamic programme near-linear; returns -2 when that makes it infeasible
 * (the caller retries without a limit) or the costs overflow, -1 when
 * memory runs out.
 */
static int segment(const double *pre, const uint8_t *inside, uint32_t n,
		   uint32_t k, double mean, double limit, uint32_t *first)
{
	double *f = NULL;
	uint32_t *arg = NULL;
	size_t cells;
	int rc = -1;

	if (tp_size_mul((size_t)k + 1, (size_t)n + 1, &cells))
		return -1;
	f = malloc(cells * sizeof(*f));
	arg = malloc(cells * sizeof(*arg));
	if (!f || !arg)
		goto out;
	for (size_t i = 0; i < cells; i++)
		f[i] = INFINITY;
	f[0] = 0;
#define F(s, i) f[(size_t)(s) * (n + 1) + (i)]
#define A(s, i) arg[(size_t)(s) * (n + 1) + (i)]
	for (uint32_t s = 1; s <= k; s++) {
		/* the first i elements in s segments: i >= s, and the rest
		   (n - i) must still hold k - s segments */
		for (uint32_t i = s; i + (k - s) <= n; i++) {
			double best = INFINITY;
			uint32_t barg = 0;
			for (uint32_t j = i; j-- > s - 1;) {
				double seg = pre[i] - pre[j], c, x;
				if (j + 1 < i && seg > limit)
					break;
				if (!isfinite(F(s - 1, j)))
					continue;
				x = seg / mean;
				c = F(s - 1, j) + x * x;
				if (j > 0 && inside[j])
					c += INSIDE_LAYER_PENALTY;
				/* ties: prefer the later cut for determinism
				   (strict comparison keeps the first found,
				   which is the latest j) */
				if (c < best) {
					best = c;
					barg = j;
				}
			}
			F(s, i) = best;
			A(s, i) = barg;
		}
	}
	if (!isfinite(F(k, n))) {
		rc = -2; /* feasible under the limit only: no finite cost */
		goto out;
	}
	first[k] = n;
	for (uint32_t s = k, i = n; s > 0; s--) {
		i = A(s, i);
		first[s - 1] = i;
	}
	rc = 0;
#undef F
#undef A
out:
	free(f);
	free(arg);
	return rc;
}

/* Above this many ops the exact programme of segment() takes seconds to
 * minutes (its inner loop spans about 4 n / k positions: 100,000 ops in
 * 48 groups, 78 s, ignoring --time-limit and Ctrl-C): segment_dc solves
 * the same problem without the segment limit in O(k n log n) (0.1 s
 * there).  The largest real models have some 10^4 ops (256 experts x 61
 * layers), planned by segment() as before. */
#ifndef DC_ABOVE_OPS
#define DC_ABOVE_OPS 10000u
#endif

/* Cost of the segment (j, i]: its squared imbalance and the cut before j. */
static double seg_cost(const double *pre, const uint8_t *inside, double mean,
		       uint32_t j, uint32_t i)
{
	double x = (pre[i] - pre[j]) / mean;

	return x * x + (j > 0 && inside[j] ? INSIDE_LAYER_PENALTY : 0);
}

struct dc {
	const double *pre, *prev;
	const uint8_t *inside;
	double mean, *cur;
	uint32_t *arg;
};

/* cur[i] for i in [lo, hi] from prev[j], j in [jlo, jhi] (and j < i): the
 * best j is monotone in i since the cost has the quadrangle inequality
 * (a convex function of pre[i] - pre[j], plus a term of j alone). */
static void dc_fill(struct dc *d, uint32_t lo, uint32_t hi, uint32_t jlo,
		    uint32_t jhi)
{
	while (lo <= hi) {
		uint32_t mid = lo + (hi - lo) / 2, best_j = jlo;
		double best = INFINITY;
		uint32_t top = jhi < mid ? jhi : mid - 1;
		/* ties: the later cut, as segment() */
		for (uint32_t j = jlo; j <= top; j++) {
			double c;
			if (!isfinite(d->prev[j]))
				continue;
			c = d->prev[j] +
			    seg_cost(d->pre, d->inside, d->mean, j, mid);
			if (c <= best) {
				best = c;
				best_j = j;
			}
		}
		d->cur[mid] = best;
		d->arg[mid] = best_j;
		if (mid > lo)
			dc_fill(d, lo, mid - 1, jlo, best_j);
		/* the right half iteratively: recursion depth log n */
		lo = mid + 1;
		jlo = best_j;
	}
}

/* segment() without the limit, by divide and conquer (see DC_ABOVE_OPS). */
static int segment_dc(const double *pre, const uint8_t *inside, uint32_t n,
		      uint32_t k, double mean, uint32_t *first)
{
	double *rows = malloc(2 * ((size_t)n + 1) * sizeof(double));
	uint32_t *arg = NULL;
	size_t cells;
	struct dc d;
	int rc = -1;

	if (!rows || tp_size_mul((size_t)k + 1, (size_t)n + 1, &cells) ||
	    !(arg = malloc(cells * sizeof(*arg))))
		goto out;
	d.pre = pre;
	d.inside = inside;
	d.mean = mean;
	for (uint32_t i = 0; i <= n; i++)
		rows[i] = i == 0 ? 0 : INFINITY;
	for (uint32_t s = 1; s <= k; s++) {
		double *prev = rows + (size_t)((s - 1) & 1) * (n + 1);
		double *cur = rows + (size_t)(s & 1) * (n + 1);
		for (uint32_t i = 0; i <= n; i++)
			cur[i] = INFINITY;
		d.prev = prev;
		d.cur = cur;
		d.arg = arg + (size_t)s * (n + 1);
		/* i >= s, and n - i elements left for k - s segments */
		dc_fill(&d, s, n - (k - s), s - 1, n - (k - s) - 1);
	}
	if (!isfinite(rows[(size_t)(k & 1) * (n + 1) + n])) {
		rc = -2; /* the costs overflow */
		goto out;
	}
	first[k] = n;
	for (uint32_t s = k, i = n; s > 0; s--) {
		i = arg[(size_t)s * (n + 1) + i];
		first[s - 1] = i;
	}
	rc = 0;
out:
	free(rows);
	free(arg);
	return rc;
}

enum tp_status tp_coarsen(const struct tp_model *m, uint32_t n_groups,
			  struct tp_groups *g, struct tp_error *err)
{
	uint32_t n = (uint32_t)m->ops.n, k;
	double *pre = NULL, maxw = 0, mean;
	uint8_t *inside = NULL;

	memset(g, 0, sizeof(*g));
	if (!m->finalized)
		return tp_error_set(err, TP_EINPUT,
				    "the model is not finalized");
	k = n_groups ? n_groups : tp_coarsen_auto_count(m);
	if (k > TP_COARSEN_MAX_GROUPS)
		k = TP_COARSEN_MAX_GROUPS;
	if (k > n)
		k = n;
	pre = calloc((size_t)n + 1, sizeof(*pre));
	inside = calloc((size_t)n + 1, 1);
	g->first = calloc((size_t)k + 1, sizeof(*g->first));
	g->group_of = calloc(n, sizeof(*g->group_of));
	g->weight = calloc(k, sizeof(double));
	g->flop = calloc(k, sizeof(double));
	g->param_bytes = calloc(k, sizeof(double));
	g->saved_bytes = calloc(k, sizeof(double));
	g->selective_bytes = calloc(k, sizeof(double));
	g->in_bytes = calloc(k, sizeof(double));
	g->tp_units = calloc(k, sizeof(uint32_t));
	g->splittable = calloc(k, 1);
	if (!pre || !inside || !g->first || !g->group_of || !g->weight ||
	    !g->flop || !g->param_bytes || !g->saved_bytes ||
	    !g->selective_bytes || !g->in_bytes || !g->tp_units ||
	    !g->splittable)
		goto nomem;
	g->n = k;
	for (uint32_t i = 0; i < n; i++) {
		const struct tp_op *op = &m->ops.v[m->topo[i]];
		double w = tp_coarsen_op_weight(op);
		pre[i + 1] = pre[i] + w;
		if (w > maxw)
			maxw = w;
		if (i > 0) {
			int32_t a = m->ops.v[m->topo[i - 1]].layer;
			inside[i] = a >= 0 && a == op->layer;
		}
	}
	mean = pre[n] / k;
	if (!(mean > 0))
		mean = 1;
	{
		int rc = n > DC_ABOVE_OPS
				 ? segment_dc(pre, inside, n, k, mean, g->first)
				 : segment(pre, inside, n, k, mean,
					   4 * mean + maxw, g->first);
		if (rc == -2 && n <= DC_ABOVE_OPS)
			rc = segment(pre, inside, n, k, mean, INFINITY,
				     g->first);
		if (rc == -2) {
			/* not memory: the figures (said so; it read "out of
			   memory while grouping ops") */
			double total = pre[n];
			free(pre);
			free(inside);
			tp_groups_release(g);
			return tp_error_set(
				err, TP_EINPUT,
				"the ops' costs overflow when grouped (%u ops, "
				"%.6g FLOP-equivalents per sample in all); "
				"check the model's figures",
				n, total);
		}
		if (rc)
			goto nomem;
	}
	for (uint32_t s = 0; s < k; s++) {
		uint32_t units = 0;
		if (g->first[s] > 0 && inside[g->first[s]])
			g->cuts_inside_layers++;
		for (uint32_t i = g->first[s]; i < g->first[s + 1]; i++) {
			uint32_t o = m->topo[i];
			const struct tp_op *op = &m->ops.v[o];
			g->group_of[o] = s;
			g->weight[s] += tp_coarsen_op_weight(op);
			g->flop[s] += op->flop + op->backward_flop;
			g->param_bytes[s] += op->param_bytes;
			g->saved_bytes[s] += op->saved_bytes;
			if (op->selective_recompute)
				g->selective_bytes[s] += op->saved_bytes;
			if (op->tp_units)
				units = gcd32(units, op->tp_units);
			if (op->tp_split != TP_SPLIT_NONE)
				g->splittable[s] = 1;
		}
		g->tp_units[s] = units;
	}
	for (size_t e = 0; e < m->edges.n; e++) {
		const struct tp_edge *ed = &m->edges.v[e];
		uint32_t a = g->group_of[ed->src], b = g->group_of[ed->dst];
		if (a != b)
			g->in_bytes[b] += ed->bytes;
	}
	free(pre);
	free(inside);
	return TP_OK;
nomem:
	free(pre);
	free(inside);
	tp_groups_release(g);
	return tp_error_set(err, TP_ENOMEM, "out of memory while grouping ops");
}
