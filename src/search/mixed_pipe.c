/*
 * mixed_pipe.c - SAILOR-shaped plans and the moves that change them
 * (issue 25): a pipeline of p = 1..4 stages over the coarse groups, each
 * stage a mixed group (core/plan.h "mixed") of the fastest type's
 * devices at tp 1 and the slower types' nodes at the stage's own degree
 * (1, 2, 4 or 8 inside the node), batch shares by the replicas'
 * estimated speed on the stage (tp_space time), tilted per stage.
 *
 * Seeds: for each p and each slower-type degree, two assignments of the
 * units (a fastest-type device, or a slower type's devices on one node)
 * to stages with speed proportional to the stage's weight: interleaved
 * (each unit to the stage furthest below its target) and types apart
 * (slower units first, filling stage 0, then 1, ..., as SAILOR's Fig. 8b
 * plan: the V100 nodes and 3 A100s in one stage, 27 A100s in the
 * other); the largest micro-batch count giving every replica a sample;
 * the least recomputation that fits.
 *
 * Moves (first improvement, from the best seed, at most MP_CLIMB
 * evaluations): a stage's slower-type degree, its share tilt (x 1.15 per
 * step on the slower replicas' weights), its recomputation, the
 * micro-batch count, a stage boundary by one group, one unit from a
 * stage to another.  These are the search's only moves on mixed plans:
 * the tree and the sweeps decide (set, tp) per group and cannot express
 * replicas of different tp (search README).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search_int.h"

#define MP_MAX_STAGES 4
/* evaluations of the moves after the seeds */
#define MP_CLIMB 160
#define MP_TILT_MAX 4
/* micro-batch counts per seed: the largest giving every replica a
 * sample, then smaller ones */
#define MP_COUNTS 3

/* A unit: n devices of one type on one node (udevs[first ..]); a
 * fastest-type device alone. */
struct mp_unit {
	uint32_t first, n, type;
	bool slow;
};

struct mp_state {
	uint32_t p, mb_k; /* stages; micro-batch count sp->mb_counts[mb_k] */
	uint32_t cut[MP_MAX_STAGES + 1]; /* group boundaries */
	uint32_t deg[MP_MAX_STAGES];     /* slower types' degree */
	int tilt[MP_MAX_STAGES];
	int rc[MP_MAX_STAGES];
	uint32_t *stage_of; /* per unit */
};

struct mp {
	struct worker *w;
	struct mp_unit *units;
	uint32_t n_units, *udevs, fast;
	/* materialising scratch */
	uint32_t *devs, *rtp, *ops;
	double *wt, *shares;
	int64_t *samples;
	/* per stage count p: the best state and its score (starts of the
	   moves); lb: the moves' current state */
	struct mp_state best[MP_MAX_STAGES], lb, cur;
	bool have[MP_MAX_STAGES];
	struct evalres br[MP_MAX_STAGES], lbr;
	uint32_t evals, max_slow; /* largest slower unit */
};

static void state_copy(struct mp_state *to, const struct mp_state *from,
		       uint32_t n_units)
{
	uint32_t *keep = to->stage_of;

	*to = *from;
	to->stage_of = keep;
	memcpy(to->stage_of, from->stage_of, n_units * sizeof(uint32_t));
}

/* Units of the cluster: per node and type, the fastest type's devices
 * one by one, a slower type's together. */
static void build_units(struct mp *x)
{
	const struct tp_space *sp = &x->w->s->space;
	const struct tp_cluster *c = sp->cluster;
	uint32_t used = 0;

	x->n_units = 0;
	for (size_t n = 0; n < c->nodes.n; n++) {
		const struct tp_node *nd = &c->nodes.v[n];
		for (uint32_t ty = 0; ty < sp->n_types; ty++) {
			uint32_t first = used;
			for (uint32_t i = 0; i < nd->n_devices; i++)
				if (c->devices.v[nd->first_device + i].type ==
				    ty)
					x->udevs[used++] = nd->first_device + i;
			if (used == first)
				continue;
			if (ty != x->fast) {
				x->units[x->n_units++] = (struct mp_unit){
					first, used - first, ty, true};
				if (used - first > x->max_slow)
					x->max_slow = used - first;
				continue;
			}
			for (uint32_t d = first; d < used; d++)
				x->units[x->n_units++] =
					(struct mp_unit){d, 1, ty, false};
		}
	}
}

/* Seconds per sample of type ty on groups [a, b). */
static double stage_time(const struct tp_space *sp, uint32_t a, uint32_t b,
			 uint32_t ty)
{
	double t = 0;

	for (uint32_t g = a; g < b; g++)
		t += sp->time[(size_t)g * sp->n_types + ty];
	return t;
}

/* Stage s's replicas into x->devs / rtp / wt; returns the replicas. */
static uint32_t stage_replicas(struct mp *x, const struct mp_state *st,
			       uint32_t s, uint32_t *n_dev)
{
	const struct tp_space *sp = &x->w->s->space;
	uint32_t nr = 0;

	*n_dev = 0;
	for (uint32_t u = 0; u < x->n_units; u++) {
		const struct mp_unit *un = &x->units[u];
		double t = stage_time(sp, st->cut[s], st->cut[s + 1], un->type);
		uint32_t k = 0, run = un->slow ? st->deg[s] : 1;
		if (st->stage_of[u] != s)
			continue;
		while (k < un->n) {
			uint32_t d = un->n - k >= run ? run : 1;
			memcpy(x->devs + *n_dev, x->udevs + un->first + k,
			       d * sizeof(uint32_t));
			x->rtp[nr] = d;
			x->wt[nr] = (t > 0 ? d / t : d) *
				    (un->slow ? pow(1.15, st->tilt[s]) : 1.0);
			*n_dev += d;
			k += d;
			nr++;
		}
	}
	return nr;
}

/* The plan of st into w->plan; false when it has none (a stage without
 * devices, fewer samples than replicas). */
static bool materialise(struct mp *x, const struct mp_state *st,
			enum tp_status *err_st)
{
	struct worker *w = x->w;
	struct sctx *s = w->s;
	const struct tp_model *m = s->m;
	uint32_t mb = s->space.mb_counts[st->mb_k];
	int64_t S = m->global_batch / mb;

	*err_st = TP_OK;
	search_mixed_plan_start(w, mb);
	for (uint32_t k = 0; k < st->p; k++) {
		uint32_t n_dev, nr = stage_replicas(x, st, k, &n_dev);
		uint32_t o0 = s->groups.first[st->cut[k]];
		uint32_t o1 = s->groups.first[st->cut[k + 1]];
		struct tp_plan_replicas rep = {nr, x->rtp};
		if (!nr || !tp_space_split_samples(S, nr, x->wt, NULL,
						   x->samples))
			return false;
		for (uint32_t r = 0; r < nr; r++)
			x->shares[r] = (double)x->samples[r] / (double)S;
		for (uint32_t o = o0; o < o1; o++)
			x->ops[o - o0] = m->topo[o];
		*err_st = tp_plan_add_group_mixed(&w->plan, x->ops, o1 - o0,
						  x->devs, n_dev, &rep,
						  x->shares, &w->err);
		if (*err_st) {
			if (*err_st == TP_EINPUT)
				*err_st = TP_OK;
			return false;
		}
		w->plan.groups.v[k].recompute = (enum tp_recompute)st->rc[k];
	}
	return true;
}

/* Is r better than (have, b)? */
static bool beats(const struct evalres *r, bool have, const struct evalres *b)
{
	return !have ||
	       sctx_better(r->feasible, r->time, r->over, b->feasible, b->time,
			   b->over);
}

/* Score st; it becomes the best of its stage count when better, and the
 * moves' state x->lb when better than it (*better). *fits: it fits. */
static enum tp_status score(struct mp *x, const struct mp_state *st,
			    const char *what, bool *better, bool *fits)
{
	struct sctx *s = x->w->s;
	struct evalres r;
	enum tp_status est = TP_OK;
	uint32_t k = st->p - 1;
	char src[128];

	*better = *fits = false;
	if (sctx_out_of_time(s) || !materialise(x, st, &est))
		return est;
	snprintf(src, sizeof(src), "mixed %s: %u stage%s, m=%u", what, st->p,
		 st->p > 1 ? "s" : "", s->space.mb_counts[st->mb_k]);
	est = sctx_eval_plan(x->w, &x->w->plan, src,
			     x->have[k] && x->br[k].feasible ? x->br[k].time
			     : sctx_memory_cutoff(s),
			     &r);
	if (est)
		return est;
	s->res->seeds++;
	x->evals++;
	if (!r.ok)
		return TP_OK;
	*fits = r.feasible;
	/* MEMORY_CUT (issue 27): in a search limited by time alone that
	   has a plan that fits, a candidate is asked to beat an infinitely
	   fast plan until its stage count has one that fits, so the
	   simulator settles it by its memory check when it does not fit
	   (sim.h tp_sim_run_bounded) and simulates it in full when it fits;
	   settled out of memory, it is ranked by its memory excess as a
	   simulated plan that does not fit is (the same excess: sim/
	   memory.c), so the climbs take the same steps.  GPT-3 175B on
	   bench_gnn's 1,024 mixed GPUs: these pipelines' plans, none of
	   which fits, were 159 full simulations, 1.0-1.4 CPU s of the first 3
	   of both searches; with the cut the seeds take 0.36-0.40 s and
	   the sweeps start at 1.34 s instead of 2.38 s (seed 2).  Playout-
	   limited searches are unchanged. */
	if (r.bounded && r.feasible)
		return TP_OK;
	if (beats(&r, x->have[k], &x->br[k])) {
		state_copy(&x->best[k], st, x->n_units);
		x->br[k] = r;
		x->have[k] = true;
	}
	*better = sctx_better(r.feasible, r.time, r.over, x->lbr.feasible,
			      x->lbr.time, x->lbr.over);
	if (*better) {
		state_copy(&x->lb, st, x->n_units);
		x->lbr = r;
	}
	return TP_OK;
}

/* Units to stages with speed proportional to the stages' weights:
 * interleaved (each, fastest first, to the stage furthest below its
 * target) or apart (slower units first, filling the stages in order). */
static void assign(struct mp *x, struct mp_state *st, bool apart)
{
	const struct tp_space *sp = &x->w->s->space;
	const struct tp_groups *g = &x->w->s->groups;
	double target[MP_MAX_STAGES], have[MP_MAX_STAGES] = {0}, W = 0;
	double total = 0;
	uint32_t s = 0;

	for (uint32_t u = 0; u < x->n_units; u++)
		total += x->units[u].n * sp->type_speed[x->units[u].type];
	for (uint32_t k = 0; k < st->p; k++) {
		target[k] = 0;
		for (uint32_t q = st->cut[k]; q < st->cut[k + 1]; q++)
			target[k] += g->weight[q];
		W += target[k];
	}
	for (uint32_t k = 0; k < st->p; k++)
		target[k] = W > 0 ? total * target[k] / W : total / st->p;
	/* slower units first (apart), or the larger first (interleaved:
	   a slower type's node before single fast devices) */
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t u = 0; u < x->n_units; u++) {
			const struct mp_unit *un = &x->units[u];
			double v = un->n * sp->type_speed[un->type];
			uint32_t to = 0;
			if (un->slow != (pass == 0))
				continue;
			if (apart) {
				while (s + 1 < st->p && have[s] >= target[s])
					s++;
				to = s;
			} else {
				for (uint32_t k = 1; k < st->p; k++)
					if (target[k] - have[k] >
					    target[to] - have[to])
						to = k;
			}
			st->stage_of[u] = to;
			have[to] += v;
		}
}

/* The largest micro-batch count giving every replica of every stage a
 * sample (and at least p micro-batches), as an index; false: none. */
static bool pick_mb(struct mp *x, struct mp_state *st)
{
	const struct tp_space *sp = &x->w->s->space;
	int64_t batch = x->w->s->m->global_batch;
	uint32_t most = 0;

	for (uint32_t k = 0; k < st->p; k++) {
		uint32_t n_dev, nr = stage_replicas(x, st, k, &n_dev);
		if (nr > most)
			most = nr;
	}
	for (uint32_t k = sp->n_mb; k-- > 0;)
		if (batch / sp->mb_counts[k] >= most &&
		    sp->mb_counts[k] >= st->p) {
			st->mb_k = k;
			return true;
		}
	return false;
}

/* Seeds for p stages and degree t: both assignments, the least
 * recomputation that fits. */
static enum tp_status seed(struct mp *x, uint32_t p, uint32_t t)
{
	struct sctx *s = x->w->s;
	struct mp_state *st = &x->cur;
	uint32_t stage_of[TP_COARSEN_MAX_GROUPS];
	double speed[MP_MAX_STAGES];
	enum tp_status e = TP_OK;

	for (uint32_t k = 0; k < p; k++)
		speed[k] = 1;
	st->p = p;
	search_split_stages(s->groups.weight, s->K, speed, p, stage_of);
	st->cut[0] = 0;
	for (uint32_t k = 0, q = 0; k < p; k++) {
		while (q < s->K && stage_of[q] == k)
			q++;
		st->cut[k + 1] = q;
		if (st->cut[k + 1] == st->cut[k])
			return TP_OK;
	}
	for (int apart = 0; apart < (p > 1 ? 2 : 1) && !e; apart++) {
		bool fits = false;
		for (uint32_t k = 0; k < p; k++) {
			st->deg[k] = t;
			st->tilt[k] = 0;
		}
		assign(x, st, apart);
		if (!pick_mb(x, st))
			continue;
		/* the largest count, then up to MP_COUNTS - 1 smaller */
		for (uint32_t top = st->mb_k, c = 0;
		     c < MP_COUNTS && c <= top && !e; c++) {
			st->mb_k = top - c;
			if (s->space.mb_counts[st->mb_k] < p)
				break;
			fits = false;
			for (int rc = TP_RECOMPUTE_NONE;
			     rc < TP_RECOMPUTE_COUNT && !fits && !e; rc++) {
				bool better;
				for (uint32_t k = 0; k < p; k++)
					st->rc[k] = rc;
				e = score(x, st,
					  apart ? "seed, types apart" : "seed",
					  &better, &fits);
				if (sctx_should_stop(s))
					return e;
			}
		}
	}
	return e;
}

/* Degrees a slower type's units admit: every op splits into t and t
 * divides the units' sizes (else their rest runs at tp 1). */
static bool degree_ok(const struct mp *x, uint32_t t)
{
	const struct tp_model *m = x->w->s->m;

	if (t == 1)
		return true;
	if (t > x->max_slow)
		return false;
	for (size_t o = 0; o < m->ops.n; o++) {
		const struct tp_op *op = &m->ops.v[o];
		if ((op->tp_units && op->tp_units % t) ||
		    tp_model_op_expert(m, (uint32_t)o) >= 0)
			return false;
	}
	return true;
}

/* Move i of the moves' state x->lb into x->cur; false when move i does
 * not apply (or is out of range: *more = false). */
static bool move(struct mp *x, uint32_t i, bool *more)
{
	struct mp_state *c = &x->cur;
	const struct tp_space *sp = &x->w->s->space;
	uint32_t p = x->lb.p, pairs = p * (p - 1);

	*more = true;
	state_copy(c, &x->lb, x->n_units);
	/* a stage's degree: 1, 2, 4, 8 */
	if (i < 4 * p) {
		uint32_t t = 1u << (i % 4), k = i / 4;
		if (t == c->deg[k] || !degree_ok(x, t))
			return false;
		c->deg[k] = t;
		return true;
	}
	i -= 4 * p;
	/* its tilt: each of -MP_TILT_MAX .. MP_TILT_MAX (one step moves
	   less than a sample where a micro-batch holds few) */
	if (i < (2 * MP_TILT_MAX + 1) * p) {
		uint32_t k = i / (2 * MP_TILT_MAX + 1);
		int v = (int)(i % (2 * MP_TILT_MAX + 1)) - MP_TILT_MAX;
		if (v == c->tilt[k])
			return false;
		c->tilt[k] = v;
		return true;
	}
	i -= (2 * MP_TILT_MAX + 1) * p;
	/* its recomputation, +-1 */
	if (i < 2 * p) {
		uint32_t k = i / 2;
		c->rc[k] += i % 2 ? 1 : -1;
		return c->rc[k] >= 0 && c->rc[k] < TP_RECOMPUTE_COUNT;
	}
	i -= 2 * p;
	/* the micro-batch count one or two steps either way, with every
	   stage's tilt set to each value (more samples per micro-batch let
	   a tilt move whole samples: neither change alone may help) */
	if (i < 4 * (2 * MP_TILT_MAX + 1)) {
		static const int step[4] = {-1, 1, -2, 2};
		int to = (int)c->mb_k + step[i / (2 * MP_TILT_MAX + 1)];
		int v = (int)(i % (2 * MP_TILT_MAX + 1)) - MP_TILT_MAX;
		if (to < 0 || to >= (int)sp->n_mb)
			return false;
		c->mb_k = (uint32_t)to;
		for (uint32_t k = 0; k < p; k++)
			c->tilt[k] = v;
		return true;
	}
	i -= 4 * (2 * MP_TILT_MAX + 1);
	/* a boundary by one group */
	if (i < 2 * (p - 1)) {
		uint32_t k = i / 2 + 1;
		if (i % 2 ? c->cut[k] + 1 >= c->cut[k + 1]
			  : c->cut[k] - 1 <= c->cut[k - 1])
			return false;
		c->cut[k] = i % 2 ? c->cut[k] + 1 : c->cut[k] - 1;
		return true;
	}
	i -= 2 * (p - 1);
	/* a unit (the last of its kind, slower or fastest) from stage a to
	   stage b */
	if (i < 2 * pairs) {
		uint32_t a = (i / 2) / (p - 1), b = (i / 2) % (p - 1);
		bool slow = i % 2;
		b += b >= a;
		for (uint32_t u = x->n_units; u-- > 0;)
			if (c->stage_of[u] == a && x->units[u].slow == slow) {
				c->stage_of[u] = b;
				return true;
			}
		return false;
	}
	*more = false;
	return false;
}

/* First-improvement moves from x->lb until none improves or MP_CLIMB
 * evaluations. */
static enum tp_status climb(struct mp *x)
{
	struct sctx *s = x->w->s;
	uint32_t start = x->evals;
	bool improved = true;
	enum tp_status e = TP_OK;

	while (improved && !e && x->evals - start < MP_CLIMB) {
		bool more = true;
		improved = false;
		for (uint32_t i = 0; more && !improved && !e &&
				     x->evals - start < MP_CLIMB;
		     i++) {
			bool fits;
			if (!move(x, i, &more))
				continue;
			e = score(x, &x->cur, "move", &improved, &fits);
			if (sctx_should_stop(s))
				return e;
		}
	}
	return e;
}

/* The moves from each stage count's best seed that fits, the fastest
 * first. */
static enum tp_status climb_all(struct mp *x)
{
	bool done[MP_MAX_STAGES] = {false};
	enum tp_status e = TP_OK;

	for (uint32_t n = 0; n < MP_MAX_STAGES && !e; n++) {
		uint32_t k = MP_MAX_STAGES;
		for (uint32_t q = 0; q < MP_MAX_STAGES; q++)
			if (x->have[q] && x->br[q].feasible && !done[q] &&
			    (k == MP_MAX_STAGES ||
			     x->br[q].time < x->br[k].time))
				k = q;
		if (k == MP_MAX_STAGES || sctx_should_stop(x->w->s))
			break;
		done[k] = true;
		state_copy(&x->lb, &x->best[k], x->n_units);
		x->lbr = x->br[k];
		e = climb(x);
	}
	return e;
}

enum tp_status search_mixed_pipelines(struct worker *w)
{
	struct sctx *s = w->s;
	const struct tp_space *sp = &s->space;
	uint32_t n = (uint32_t)s->c->devices.n, types;
	struct mp x;
	struct mp_state *all[MP_MAX_STAGES + 2];
	enum tp_status e = TP_OK;
	bool ok = true;

	memset(&x, 0, sizeof(x));
	x.w = w;
	x.fast = search_mixed_fast_type(sp, &types);
	if (types < 2 || (sp->constrained && !sp->rt.can.mixed_tp))
		return TP_OK;
	for (uint32_t k = 0; k < MP_MAX_STAGES; k++)
		all[k] = &x.best[k];
	all[MP_MAX_STAGES] = &x.lb;
	all[MP_MAX_STAGES + 1] = &x.cur;
	x.units = tp_calloc(n, sizeof(*x.units));
	x.udevs = tp_calloc(n, sizeof(uint32_t));
	x.devs = tp_calloc(n, sizeof(uint32_t));
	x.rtp = tp_calloc(n, sizeof(uint32_t));
	x.wt = tp_calloc(n, sizeof(double));
	x.shares = tp_calloc(n, sizeof(double));
	x.samples = tp_calloc(n, sizeof(int64_t));
	x.ops = tp_calloc(s->m->ops.n + 1, sizeof(uint32_t));
	for (uint32_t k = 0; k < MP_MAX_STAGES + 2; k++)
		ok &= (all[k]->stage_of = tp_calloc(n, sizeof(uint32_t))) !=
		      NULL;
	if (!ok || !x.units || !x.udevs || !x.devs || !x.rtp || !x.wt ||
	    !x.shares || !x.samples || !x.ops) {
		e = TP_ENOMEM;
		goto out;
	}
	build_units(&x);
	for (uint32_t p = 1; p <= MP_MAX_STAGES && p <= s->K && !e; p++)
		for (uint32_t t = 2; t <= 8 && !e; t *= 2)
			if (degree_ok(&x, t) && !sctx_should_stop(s))
				e = seed(&x, p, t);
	if (!e && !sctx_should_stop(s))
		e = climb_all(&x);
out:
	free(x.units);
	free(x.udevs);
	free(x.devs);
	free(x.rtp);
	free(x.wt);
	free(x.shares);
	free(x.samples);
	free(x.ops);
	for (uint32_t k = 0; k < MP_MAX_STAGES + 2; k++)
		free(all[k]->stage_of);
	return e;
}
