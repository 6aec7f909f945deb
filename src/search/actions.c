#include "actions.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cost.h"
#include "core/estimate.h"
#include "actions_int.h"

/* Samples per micro-batch assumed when estimating GEMM efficiency. */
#define BATCH_HINT 8.0

/* ------------------------------------------------------------------ */
/* cost estimates                                                      */

double tp_space_op_time(const struct tp_model *m, const struct tp_cluster *c,
			uint32_t op, uint32_t t)
{
	return tp_estimate_op_time(m, c, op, t, BATCH_HINT);
}

uint32_t tp_space_set_fast_type(const struct tp_space *s, uint32_t set)
{
	const uint32_t *d = tp_space_set_devs(s, set);
	uint32_t fast = TP_NONE;

	for (uint32_t i = 0; i < s->sets.v[set].n; i++) {
		uint32_t t = s->cluster->devices.v[d[i]].type;
		if (fast == TP_NONE || s->type_speed[t] > s->type_speed[fast])
			fast = t;
	}
	return fast;
}

double tp_space_state_factor(const struct tp_model *m)
{
	return tp_cost_state_factor(m->dtype, m->optimizer);
}

enum tp_status tp_space_init(struct tp_space *s, const struct tp_model *m,
			     const struct tp_cluster *c,
			     const struct tp_groups *g, struct tp_error *err)
{
	uint32_t K = g->n, T = (uint32_t)c->types.n, nd = (uint32_t)c->devices.n;
	double *tot = NULL, best = INFINITY;
	enum tp_status st;

	memset(s, 0, sizeof(*s));
	s->model = m;
	s->cluster = c;
	s->groups = g;
	s->n_types = T;
	s->time = tp_calloc((size_t)K * T, sizeof(double));
	s->type_speed = tp_calloc(T, sizeof(double));
	s->dev_speed = tp_calloc(nd, sizeof(double));
	s->mb_counts = tp_calloc(64, sizeof(uint32_t));
	tot = tp_calloc(T, sizeof(double));
	if (!s->time || !s->type_speed || !s->dev_speed || !s->mb_counts ||
	    !tot)
		goto nomem;
	for (uint32_t t = 0; t < T; t++) {
		for (uint32_t k = 0; k < K; k++) {
			double sum = 0;
			for (uint32_t i = g->first[k]; i < g->first[k + 1]; i++)
				sum += tp_space_op_time(m, c, m->topo[i], t);
			s->time[(size_t)k * T + t] = sum;
			tot[t] += sum;
		}
		if (c->type_count[t] && tot[t] < best)
			best = tot[t];
	}
	for (uint32_t t = 0; t < T; t++)
		s->type_speed[t] = tot[t] > 0 && isfinite(best) ? best / tot[t]
								: 1;
	for (uint32_t i = 0; i < nd; i++)
		s->dev_speed[i] = s->type_speed[c->devices.v[i].type];
	free(tot);
	tot = NULL;
	/* micro-batch counts: divisors of the batch, at most 64 of them, up
	 * to what a plan may have (a loop of global_batch steps over a
	 * batch of few divisors hung the search, ignoring every limit) */
	for (int64_t k = 1; k <= m->global_batch &&
			    k <= TP_PLAN_MAX_MICRO_BATCHES && s->n_mb < 64;
	     k++)
		if (m->global_batch % k == 0)
			s->mb_counts[s->n_mb++] = (uint32_t)k;
	st = tp_space_build_sets(s, err);
	if (st) {
		tp_space_release(s);
		return st;
	}
	return TP_OK;
nomem:
	free(tot);
	tp_space_release(s);
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

void tp_space_release(struct tp_space *s)
{
	if (!s)
		return;
	tp_vec_free(&s->sets);
	tp_vec_free(&s->devs);
	tp_vec_free(&s->set_nodes);
	tp_vec_free(&s->families);
	tp_vec_free(&s->family_sets);
	free(s->time);
	free(s->type_speed);
	free(s->dev_speed);
	free(s->mb_counts);
	free(s->layer_end);
	free(s->layer_lo);
	memset(s, 0, sizeof(*s));
}

enum tp_status tp_space_set_runtime(struct tp_space *s,
				    const struct tp_runtime *rt,
				    struct tp_error *err)
{
	const struct tp_groups *G = s->groups;
	const struct tp_model *m = s->model;

	s->rt = *rt;
	s->rt_gen++;
	s->constrained = !tp_runtime_is_none(rt);
	free(s->layer_end);
	free(s->layer_lo);
	s->layer_end = s->layer_lo = NULL;
	if (!s->constrained)
		return TP_OK;
	s->layer_end = tp_calloc(G->n + 1, sizeof(int32_t));
	s->layer_lo = tp_calloc(G->n + 1, sizeof(int32_t));
	if (!s->layer_end || !s->layer_lo)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	for (uint32_t k = 0; k < G->n; k++) {
		s->layer_lo[k] = -1;
		for (uint32_t i = G->first[k]; i < G->first[k + 1]; i++) {
			int32_t l = m->ops.v[m->topo[i]].layer;
			if (l + 1 > s->layer_end[k])
				s->layer_end[k] = l + 1;
			if (l >= 0 && (s->layer_lo[k] < 0 || l < s->layer_lo[k]))
				s->layer_lo[k] = l;
		}
	}
	return TP_OK;
}

struct tp_space_scratch *tp_space_scratch_new(const struct tp_space *s)
{
	struct tp_space_scratch *scr = calloc(1, sizeof(*scr));
	uint32_t nd = (uint32_t)s->cluster->devices.n, K = s->groups->n;
	uint32_t nr = s->max_group_devices ? s->max_group_devices : 1;

	if (!scr)
		return NULL;
	scr->n_dev = nd;
	scr->cap_rep = nr;
	scr->static_b = tp_calloc(nd, sizeof(double));
	scr->act_b = tp_calloc(nd, sizeof(double));
	scr->fit = tp_calloc(nd, sizeof(double));
	scr->stage = tp_calloc(K + 1, sizeof(uint32_t));
	scr->run_first = tp_calloc(K + 1, sizeof(uint32_t));
	scr->speed = tp_calloc(nr, sizeof(double));
	scr->cap = tp_calloc(nr, sizeof(double));
	scr->samples = tp_calloc(nr, sizeof(int64_t));
	scr->order = tp_calloc(nr, sizeof(uint32_t));
	scr->rem = tp_calloc(nr, sizeof(double));
	scr->idec = tp_calloc(K + 1, sizeof(*scr->idec));
	scr->chunk = tp_calloc(K + 1, sizeof(uint32_t));
	scr->stage_set = tp_calloc(K + 1, sizeof(uint32_t));
	scr->stage_dec = tp_calloc(K + 1, sizeof(*scr->stage_dec));
	scr->stage_w = tp_calloc(K + 1, sizeof(double));
	scr->cand = tp_calloc(K + 1, sizeof(*scr->cand));
	scr->facts = tp_calloc(K + 1, sizeof(*scr->facts));
	tp_plan_init(&scr->check);
	if (!scr->cand || !scr->facts || !scr->static_b || !scr->act_b ||
	    !scr->fit ||
	    !scr->stage || !scr->run_first || !scr->speed || !scr->cap ||
	    !scr->samples || !scr->order || !scr->rem || !scr->idec ||
	    !scr->chunk || !scr->stage_set || !scr->stage_dec ||
	    !scr->stage_w) {
		tp_space_scratch_free(scr);
		return NULL;
	}
	return scr;
}

void tp_space_scratch_free(struct tp_space_scratch *scr)
{
	if (!scr)
		return;
	free(scr->static_b);
	free(scr->act_b);
	free(scr->fit);
	free(scr->stage);
	free(scr->run_first);
	free(scr->speed);
	free(scr->cap);
	free(scr->samples);
	free(scr->order);
	free(scr->rem);
	free(scr->idec);
	free(scr->chunk);
	free(scr->stage_set);
	free(scr->stage_dec);
	free(scr->stage_w);
	free(scr->cand);
	free(scr->facts);
	space_memo_free(scr->memo);
	tp_plan_release(&scr->check);
	free(scr);
}

/* ------------------------------------------------------------------ */
/* validity                                                            */

int64_t tp_space_micro_batch(const struct tp_space *s,
			     const struct tp_globals *gl)
{
	uint32_t m = gl->micro_batches ? gl->micro_batches : 1;
	return s->model->global_batch / m;
}

/* Is q replicas' worth of samples more than a micro-batch under gl: q >
 * batch / m?  For a batch >= 0 that is q m > batch (the quotient is at
 * most q - 1 just when batch < q m), without the 64-bit division per
 * candidate that tp_space_tp_ok's callers paid (src/search/README, "The
 * runtime check's memo"). */
static bool over_micro_batch(const struct tp_space *s,
			     const struct tp_globals *gl, uint32_t q)
{
	uint32_t m = gl->micro_batches ? gl->micro_batches : 1;
	int64_t batch = s->model->global_batch;

	if (batch < 0)
		return (int64_t)q > batch / m;
	return (uint64_t)q * m > (uint64_t)batch;
}

bool tp_space_tp_ok(const struct tp_space *s, uint32_t g, uint32_t set,
		    uint32_t tp, const struct tp_globals *gl)
{
	const struct tp_devset *ds;
	uint32_t units, dp;

	if (set >= s->sets.n || tp == 0 || tp > TP_SPACE_MAX_TP)
		return false;
	ds = &s->sets.v[set];
	/* tp divides the set's device count and tp_max */
	if (!(ds->tp_divides >> (tp - 1) & 1))
		return false;
	if (tp > 1) {
		units = s->groups->tp_units[g];
		if (s->constrained && !s->rt.can.tensor_parallel)
			return false;
		/* one tp for the whole model: unsplit ops are replicated */
		if (!s->groups->splittable[g] &&
		    !(s->constrained && !s->rt.can.per_stage_degrees))
			return false;
		if (units && units % tp != 0)
			return false;
	}
	if (!gl)
		return true;
	/* dp = n / tp replicas, whole per context rank (cp = 2^cp_log2: a
	   mask and a shift), each with a sample of the micro-batch */
	dp = ds->n / tp;
	return !(dp & (tp_globals_cp(gl) - 1)) &&
	       !over_micro_batch(s, gl, dp >> gl->cp_log2);
}

enum tp_sync tp_space_default_sync(const struct tp_space *s, uint32_t set,
				   uint32_t tp)
{
	const struct tp_devset *ds = &s->sets.v[set];

	/* dp = n / tp > n_nodes, as n >= (n_nodes + 1) tp: no division */
	if (ds->n_nodes > 1 &&
	    ds->n >= (uint64_t)(ds->n_nodes + 1) * (tp ? tp : 1))
		return TP_SYNC_HIERARCHICAL;
	return TP_SYNC_RING;
}

/* Does some node hold tp devices of one of the set's slower types (a
 * replica of degree tp in a mixed decision)? */
static bool slow_run_fits(const struct tp_space *s, uint32_t set,
			  uint32_t tp)
{
	const struct tp_cluster *c = s->cluster;
	const uint32_t *d = tp_space_set_devs(s, set);
	uint32_t n = s->sets.v[set].n, fast = tp_space_set_fast_type(s, set);

	for (uint32_t i = 0; i < n;) {
		uint32_t node = c->devices.v[d[i]].node, j = i;
		while (j < n && c->devices.v[d[j]].node == node)
			j++;
		for (uint32_t a = i; a < j; a++) {
			uint32_t t = c->devices.v[d[a]].type, cnt = 0;
			if (t == fast)
				continue;
			for (uint32_t b = i; b < j; b++)
				cnt += c->devices.v[d[b]].type == t;
			if (cnt >= tp)
				return true;
		}
		i = j;
	}
	return false;
}

/* May group g run mixed replicas (TP_DECISION_MIXED) of degree tp on
 * set: a set of several types, ops that split into tp, no routed
 * experts, no context parallelism, no ZeRO (core/plan.h: the simulator
 * has no model of it over unequally sharded replicas), a runtime that
 * runs them, and a node with tp devices of a slower type? */
static bool mixed_ok(const struct tp_space *s, uint32_t g, uint32_t set,
		     uint32_t tp, const struct tp_globals *gl)
{
	uint32_t units;

	if (s->no_mixed || tp < 2 || tp > 8 || set >= s->sets.n ||
	    s->sets.v[set].type != TP_NONE || s->model->arch.experts > 1 ||
	    (s->constrained && !s->rt.can.mixed_tp) ||
	    (gl && (tp_globals_cp(gl) != 1 || gl->zero)) ||
	    !s->groups->splittable[g])
		return false;
	units = s->groups->tp_units[g];
	if (units && units % tp != 0)
		return false;
	return slow_run_fits(s, set, tp);
}

/* Is group g's decision d valid under gl (NULL: any)? */
static bool decision_ok(const struct tp_space *s, uint32_t g,
			const struct tp_decision *d,
			const struct tp_globals *gl)
{
	if (tp_decision_mixed(d))
		return mixed_ok(s, g, d->set, d->tp, gl);
	return tp_space_tp_ok(s, g, d->set, d->tp, gl);
}

bool tp_space_state_ok(const struct tp_space *s, const struct tp_globals *gl,
		       const struct tp_decision *state)
{
	if (gl->micro_batches > TP_PLAN_MAX_MICRO_BATCHES)
		return false;
	for (uint32_t g = 0; g < s->groups->n; g++)
		if (!decision_ok(s, g, &state[g], gl))
			return false;
	return true;
}

/* ------------------------------------------------------------------ */
/* candidates                                                          */


static bool same_decision(const struct tp_decision *a,
			  const struct tp_decision *b)
{
	return a->set == b->set && a->tp == b->tp && a->sync == b->sync &&
	       a->recompute == b->recompute;
}

struct alist {
	struct tp_action *v;
	uint32_t n, cap;
};

static void push_decision(struct alist *l, const struct tp_decision *d,
			  uint8_t suffix)
{
	struct tp_action a;

	if (l->n >= l->cap)
		return;
	for (uint32_t i = 0; i < l->n; i++)
		if (same_decision(&l->v[i].d, d) && l->v[i].suffix == suffix)
			return;
	memset(&a, 0, sizeof(a));
	a.d = *d;
	a.suffix = suffix;
	l->v[l->n++] = a;
}

/* The largest valid tp <= want on set for group g (1 if none). */
static uint32_t fit_tp(const struct tp_space *s, uint32_t g, uint32_t set,
		       uint32_t want, const struct tp_globals *gl)
{
	for (uint32_t tp = want; tp > 1; tp--)
		if (tp_space_tp_ok(s, g, set, tp, gl))
			return tp;
	return 1;
}

static void push_set(const struct tp_space *s, struct alist *l, uint32_t g,
		     uint32_t set, uint32_t tp, uint8_t recompute,
		     const struct tp_globals *gl, uint8_t suffix)
{
	struct tp_decision d;

	if (!tp_space_tp_ok(s, g, set, tp, gl))
		return;
	if (suffix && g + 1 >= s->groups->n)
		suffix = 0;
	d.set = set;
	d.tp = (uint16_t)tp;
	d.sync = (uint8_t)tp_space_default_sync(s, set, tp);
	d.recompute = recompute;
	push_decision(l, &d, suffix);
}

/* The runtime's uniform settings from decision d onto every group. */
static void project(const struct tp_space *s, const struct tp_decision *d,
		    struct tp_decision *state)
{
	/* copies: stores into state may alias s and d (reloads per group) */
	const bool one_set = !s->rt.can.pipeline_parallel;
	const bool one_tp = !s->rt.can.per_stage_degrees;
	const bool one_rc = !s->rt.can.per_group_recompute;
	const struct tp_decision dd = *d;
	uint32_t set = 0, tp = 0, K = s->groups->n;
	uint8_t sync = 0;

	for (uint32_t k = 0; k < K; k++) {
		if (one_set)
			state[k].set = dd.set;
		if (one_tp)
			state[k].tp = dd.tp;
		if (one_rc)
			state[k].recompute = dd.recompute;
		/* the runtime's collectives choose (tp_runtime_sync); runs
		   of groups share a set and tp, so their sync */
		if (k == 0 || state[k].set != set || state[k].tp != tp) {
			set = state[k].set;
			tp = state[k].tp;
			sync = (uint8_t)tp_space_default_sync(s, set, tp);
		}
		state[k].sync = sync;
	}
}

void tp_space_data_parallel(const struct tp_space *s,
			    struct tp_decision *state)
{
	for (uint32_t g = 0; g < s->groups->n; g++) {
		state[g].set = TP_SPACE_SET_ALL;
		state[g].tp = 1;
		state[g].sync =
			(uint8_t)tp_space_default_sync(s, TP_SPACE_SET_ALL, 1);
		state[g].recompute = TP_RECOMPUTE_NONE;
	}
}

void tp_space_apply(const struct tp_space *s, uint32_t g,
		    const struct tp_action *a, const struct tp_globals *gl,
		    struct tp_decision *state)
{
	state[g] = a->d;
	/* with a suffix, after it (it rewrites groups g + 1.. whole) */
	if (s->constrained && !a->suffix)
		project(s, &a->d, state);
	if (!a->suffix)
		return;
	for (uint32_t k = g + 1; k < s->groups->n; k++) {
		bool ok = decision_ok(s, k, &a->d, gl);
		uint32_t tp = ok ? a->d.tp : fit_tp(s, k, a->d.set, a->d.tp, gl);
		state[k].set = a->d.set;
		state[k].tp = (uint16_t)tp;
		state[k].sync = ok ? a->d.sync
				   : (uint8_t)tp_space_default_sync(s, a->d.set,
								    tp);
		state[k].recompute = a->d.recompute;
	}
	if (s->constrained)
		project(s, &a->d, state);
}

/* Every family member following prev_set: the next pipeline stage. */
static void push_next_sets(const struct tp_space *s, struct alist *l,
			   uint32_t g, uint32_t prev_set, uint32_t prev_tp,
			   uint8_t recompute, const struct tp_globals *gl,
			   uint8_t suffix)
{
	for (uint32_t f = 0; f < s->families.n; f++) {
		const struct tp_family *fm = &s->families.v[f];
		const uint32_t *mem = s->family_sets.v + fm->first;
		for (uint32_t k = 0; k + 1 < fm->n; k++)
			if (mem[k] == prev_set) {
				uint32_t nx = mem[k + 1];
				push_set(s, l, g, nx,
					 fit_tp(s, g, nx, prev_tp, gl),
					 recompute, gl, suffix);
			}
	}
}

/* Fixed sets: all devices, each type, halves..quarters, speed parts,
 * single GPUs of small clusters; tp 1 and the largest up to 8. */
static void push_fixed_sets(const struct tp_space *s, struct alist *l,
			    uint32_t g, uint8_t recompute,
			    const struct tp_globals *gl, uint8_t suffix)
{
	for (uint32_t f = 0; f <= s->families.n; f++) {
		const uint32_t all = TP_SPACE_SET_ALL;
		const uint32_t *mem = f == 0 ? &all
					     : s->family_sets.v +
						       s->families.v[f - 1].first;
		uint32_t nm = f == 0 ? 1 : s->families.v[f - 1].n;
		enum tp_devset_kind kind =
			f == 0 ? TP_DEVSET_ALL : s->families.v[f - 1].kind;
		if (kind == TP_DEVSET_NODE && nm > 4)
			continue;
		if ((kind == TP_DEVSET_PART || kind == TP_DEVSET_TIER) &&
		    nm > 4)
			continue;
		if (kind == TP_DEVSET_SINGLE && nm > 8)
			continue;
		for (uint32_t k = 0; k < nm; k++) {
			const struct tp_devset *ds = &s->sets.v[mem[k]];
			push_set(s, l, g, mem[k], 1, recompute, gl, suffix);
			push_set(s, l, g, mem[k],
				 fit_tp(s, g, mem[k],
					ds->tp_max < 8 ? ds->tp_max : 8, gl),
				 recompute, gl, suffix);
		}
	}
}

uint32_t tp_space_group_actions(const struct tp_space *s, uint32_t g,
				const struct tp_decision *state,
				const struct tp_globals *gl,
				struct tp_action *out, uint32_t cap)
{
	const struct tp_decision cur = state[g];
	const struct tp_devset *cs = &s->sets.v[cur.set];
	struct alist l = {out, 0, cap};
	uint32_t K = s->groups->n;
	uint32_t prev_set = g > 0 ? state[g - 1].set : cur.set;
	uint32_t prev_tp = g > 0 ? state[g - 1].tp : cur.tp;

	/* under a runtime with one setting for the model (project()), the
	   settings are varied at group 0 only (elsewhere the same plans) */
	const bool uni_deg = s->constrained && !s->rt.can.per_stage_degrees;
	const bool uni_rc = s->constrained && !s->rt.can.per_group_recompute;
	const bool one_set = s->constrained && !s->rt.can.pipeline_parallel;
	bool selective = s->groups->selective_bytes[g] > 0;

	if (uni_rc)
		for (uint32_t k = 0; k < K && !selective; k++)
			selective = s->groups->selective_bytes[k] > 0;
	push_decision(&l, &cur, 0);
	if (one_set && g > 0)
		return l.n;
	if (g > 0 && decision_ok(s, g, &state[g - 1], gl)) {
		/* extend the previous stage by one group, or to the end */
		push_decision(&l, &state[g - 1], 0);
		if (tp_decision_mixed(&state[g - 1]))
			push_decision(&l, &state[g - 1], g + 1 < K);
		else
			push_set(s, &l, g, state[g - 1].set, state[g - 1].tp,
				 state[g - 1].recompute, gl, 1);
	}
	if (g + 1 < K && decision_ok(s, g, &state[g + 1], gl))
		push_decision(&l, &state[g + 1], 0);
	/* a new pipeline stage from here on: the next disjoint set */
	push_next_sets(s, &l, g, prev_set, prev_tp, cur.recompute, gl, 1);
	/* variants of the current decision */
	for (uint32_t tp = 1; tp <= cs->tp_max && tp <= TP_SPACE_MAX_TP &&
			      (!uni_deg || g == 0);
	     tp++)
		if (tp != cur.tp || tp_decision_mixed(&cur))
			push_set(s, &l, g, cur.set, tp, cur.recompute, gl, 0);
	/* mixed replicas on the current set (TP_DECISION_MIXED): the
	   slower types at tp 2, 4, 8, for this group and for the rest */
	for (uint32_t tp = 2; tp <= 8 && (!uni_deg || g == 0); tp *= 2) {
		struct tp_decision d = cur;
		if (!mixed_ok(s, g, cur.set, tp, gl) ||
		    (tp == cur.tp && tp_decision_mixed(&cur)))
			continue;
		d.tp = (uint16_t)tp;
		d.sync = (uint8_t)(TP_SYNC_RING | TP_DECISION_MIXED);
		push_decision(&l, &d, g + 1 < K);
	}
	for (int r = 0; r < TP_RECOMPUTE_COUNT && (!uni_rc || g == 0); r++) {
		struct tp_decision d = cur;
		if (r == cur.recompute)
			continue;
		if (r == TP_RECOMPUTE_SELECTIVE && !selective)
			continue;
		d.recompute = (uint8_t)r;
		push_decision(&l, &d, 0);
		if (g + 1 < K)
			push_decision(&l, &d, 1);
	}
	for (int y = 0; y < TP_SYNC_COUNT && !s->constrained &&
			!tp_decision_mixed(&cur);
	     y++) {
		struct tp_decision d = cur;
		uint32_t dp = cs->n / (cur.tp ? cur.tp : 1);
		if (y == (int)tp_decision_sync(&cur) || dp < 2)
			continue;
		if (y == TP_SYNC_HIERARCHICAL && cs->n_nodes < 2)
			continue;
		d.sync = (uint8_t)y;
		push_decision(&l, &d, 0);
	}
	push_next_sets(s, &l, g, prev_set, prev_tp, cur.recompute, gl, 0);
	/* move the rest of the model, or this group alone */
	push_fixed_sets(s, &l, g, cur.recompute, gl, 1);
	push_fixed_sets(s, &l, g, cur.recompute, gl, 0);
	return l.n;
}

/* m x num / den when that is a micro-batch count of s (a divisor of the
 * batch), else m. */
static uint32_t scale_micro(const struct tp_space *s, uint32_t m,
			    uint32_t num, uint32_t den)
{
	uint64_t want = (uint64_t)m * num / den;

	if ((uint64_t)m * num % den != 0 || want > TP_PLAN_MAX_MICRO_BATCHES)
		return m;
	for (uint32_t k = 0; k < s->n_mb; k++)
		if (s->mb_counts[k] == want)
			return (uint32_t)want;
	return m;
}

/* Some group of the state is tensor parallel. */
static bool any_tp(const struct tp_space *s, const struct tp_decision *state)
{
	for (uint32_t g = 0; g < s->groups->n; g++)
		if (state[g].tp > 1)
			return true;
	return false;
}

/* Room for ep_candidates: ep 1, 2, ..., TP_GLOBALS_MAX_EP and etp. */
#define TP_EP_CANDIDATES 9

/* The level-0 moves of expert parallelism from cur into out (at most
 * TP_EP_CANDIDATES): the powers of two dividing the routed experts (and,
 * under a runtime, only where it spreads experts), and expert tensor
 * parallelism 1 or back to tp, where experts are spread and some group
 * is tensor parallel. */
static uint32_t ep_candidates(const struct tp_space *s,
			      const struct tp_globals *cur,
			      const struct tp_decision *state,
			      struct tp_globals *out)
{
	uint32_t n = 0, cur_ep = tp_globals_ep(cur);

	if (s->model->arch.experts <= 1 ||
	    (s->constrained && !s->rt.can.expert_parallel))
		return 0;
	for (uint32_t e = 1; e <= TP_GLOBALS_MAX_EP; e *= 2) {
		struct tp_globals gl = *cur;
		if (e == cur_ep || s->model->arch.experts % e != 0)
			continue;
		tp_globals_set_ep(&gl, e);
		if (e == 1)
			gl.etp = 0;
		out[n++] = gl;
	}
	if (cur_ep > 1 && (any_tp(s, state) || cur->etp)) {
		struct tp_globals gl = *cur;
		gl.etp = cur->etp ? 0 : 1;
		if (gl.etp)
			tp_globals_set_shape(&gl, tp_globals_interleave(cur),
					     true);
		out[n++] = gl;
	}
	return n;
}

uint32_t tp_space_global_actions(const struct tp_space *s,
				 const struct tp_globals *cur,
				 const struct tp_decision *state,
				 struct tp_action *out, uint32_t cap)
{
	uint32_t n = 0;
	const uint32_t m = cur->micro_batches;
	const uint64_t want[] = {(uint64_t)m * 2, m / 2 ? m / 2 : 1,
				 (uint64_t)m * 4, m / 4 ? m / 4 : 1,
				 (uint64_t)m * 8, 1};

#define PUSH(gl_)                                                             \
	do {                                                                  \
		struct tp_action a_;                                          \
		bool dup_ = false;                                            \
		memset(&a_, 0, sizeof(a_));                                   \
		a_.g = (gl_);                                                 \
		for (uint32_t i_ = 0; i_ < n; i_++)                           \
			if (memcmp(&out[i_].g, &a_.g, sizeof(a_.g)) == 0)     \
				dup_ = true;                                  \
		if (!dup_ && n < cap)                                         \
			out[n++] = a_;                                        \
	} while (0)

	bool any_mixed = false;
	for (uint32_t g = 0; g < s->groups->n; g++)
		any_mixed |= tp_decision_mixed(&state[g]);
	PUSH(*cur);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct tp_globals gl = *cur;
		uint32_t best = 0;
		/* the largest divisor of the batch not above want */
		for (uint32_t k = 0; k < s->n_mb; k++)
			if (s->mb_counts[k] <= want[i])
				best = s->mb_counts[k];
		if (!best || best == m)
			continue;
		gl.micro_batches = best;
		if (tp_space_state_ok(s, &gl, state))
			PUSH(gl);
	}
	if (cur->even && !tp_space_even_only(s)) {
		struct tp_globals gl = *cur;
		gl.even = 0;
		PUSH(gl);
	}
	{
		struct tp_globals gl = *cur;
		gl.schedule = cur->schedule == TP_SCHEDULE_GPIPE
				      ? TP_SCHEDULE_1F1B
				      : TP_SCHEDULE_GPIPE;
		if (!s->constrained ||
		    (s->rt.can.schedules & (1u << gl.schedule)))
			PUSH(gl);
	}
	/* zero bubble (ZB-H1) on plain pipelines, only under a runtime whose
	 * profile lists it (not under "none": its searches, and the
	 * unconstrained comparison of tagplan plan, stay as they were);
	 * back to 1F1B from it */
	if (s->constrained && tp_globals_interleave(cur) < 2 &&
	    (s->rt.can.schedules & (1u << TP_SCHEDULE_ZB_H1))) {
		struct tp_globals gl = *cur;
		gl.schedule = cur->schedule == TP_SCHEDULE_ZB_H1
				      ? TP_SCHEDULE_1F1B
				      : TP_SCHEDULE_ZB_H1;
		PUSH(gl);
	}
	for (uint8_t z = 0; z <= 3; z++) {
		struct tp_globals gl = *cur;
		if (z == cur->zero || (z && any_mixed)) /* mixed: no ZeRO */
			continue;
		gl.zero = z;
		PUSH(gl);
	}
	/* interleaving the pipeline (Megatron's virtual stages) */
	{
		uint32_t p = tp_space_pipeline(s, state);
		uint32_t V0 = tp_globals_interleave(cur);
		for (uint32_t V = 1; V <= 4; V++) {
			struct tp_globals gl = *cur;
			if (V == V0 || (V == 1 && V0 < 2) ||
			    (V >= 2 && (p < 2 || p * V > s->groups->n)))
				continue;
			tp_globals_set_shape(&gl, V, tp_globals_sp(cur));
			if (V >= 2)
				gl.schedule = TP_SCHEDULE_1F1B;
			PUSH(gl);
			/* and with ZeRO one stage higher, one move (the two
			 * single changes may not fit: src/search/README) */
			if (V >= 2 && gl.zero < 3 && !any_mixed) {
				gl.zero++;
				if (tp_space_state_ok(s, &gl, state))
					PUSH(gl);
			}
		}
	}
	/* expert parallelism and expert tensor parallelism */
	{
		struct tp_globals ec[TP_EP_CANDIDATES];
		uint32_t ne = ep_candidates(s, cur, state, ec);
		for (uint32_t i = 0; i < ne; i++)
			PUSH(ec[i]);
	}
	/* context parallelism: powers of two splitting the sequence into
	 * 2 cp chunks of at least TP_SPACE_CP_MIN_TOKENS / 2 tokens, valid
	 * for every group (cp divides its replicas) */
	if (s->model->seq_len >= 2 * TP_SPACE_CP_MIN_TOKENS &&
	    (!s->constrained || s->rt.can.context_parallel)) {
		uint32_t cur_cp = tp_globals_cp(cur);
		for (uint32_t k = 0; k <= TP_GLOBALS_MAX_CP_LOG2; k++) {
			struct tp_globals gl = *cur;
			uint32_t cp = 1u << k;
			if (cp == cur_cp ||
			    (cp > 1 &&
			     (s->model->seq_len % (2 * (int64_t)cp) != 0 ||
			      s->model->seq_len / cp < TP_SPACE_CP_MIN_TOKENS)))
				continue;
			tp_globals_set_cp(&gl, cp);
			if (tp_space_state_ok(s, &gl, state))
				PUSH(gl);
			/* and with the micro-batches scaled by the same
			 * factor, so that every replica keeps its samples
			 * per micro-batch: cp x more context ranks leave
			 * cp x fewer replicas, each of which would
			 * otherwise take cp x the samples at once (one
			 * move, where the two single changes do not fit) */
			gl.micro_batches = scale_micro(s, cur->micro_batches,
						       cp, cur_cp);
			if (gl.micro_batches != cur->micro_batches &&
			    tp_space_state_ok(s, &gl, state))
				PUSH(gl);
		}
	}
	/* sequence parallelism where tensor parallelism is used (off:
	   expert tensor parallelism back to tp, which needs it) */
	if (any_tp(s, state) || tp_globals_sp(cur)) {
		struct tp_globals gl = *cur;
		tp_globals_set_shape(&gl, tp_globals_interleave(cur),
				     !tp_globals_sp(cur));
		if (!tp_globals_sp(&gl))
			gl.etp = 0;
		PUSH(gl);
	}
#undef PUSH
	return n;
}

/* ------------------------------------------------------------------ */
/* materialising                                                       */

uint64_t tp_space_hash(const struct tp_space *s, const struct tp_globals *gl,
		       const struct tp_decision *state)
{
	uint64_t h = 1469598103934665603ull;
#define MIX(x)                                                                \
	do {                                                                  \
		h ^= (uint64_t)(x);                                           \
		h *= 1099511628211ull;                                        \
		h ^= h >> 29;                                                 \
	} while (0)
	MIX(gl->micro_batches);
	MIX(gl->schedule);
	MIX(gl->zero);
	MIX(gl->even);
	MIX(gl->shape);
	if (gl->cp_log2) /* plans without cp hash as before it existed */
		MIX(gl->cp_log2);
	if (gl->etp) /* and without etp */
		MIX(0x100u | gl->etp);
	for (uint32_t g = 0; g < s->groups->n; g++) {
		MIX(state[g].set);
		MIX(((uint32_t)state[g].tp << 16) |
		    ((uint32_t)state[g].sync << 8) | state[g].recompute);
	}
#undef MIX
	return h;
}

/* Bytes of activation kept per sample by coarse group k under rc. */
static double saved_bytes(const struct tp_groups *G, uint32_t k,
			  enum tp_recompute rc)
{
	switch (rc) {
	case TP_RECOMPUTE_SELECTIVE:
		return G->saved_bytes[k] - G->selective_bytes[k];
	case TP_RECOMPUTE_FULL:
		return G->in_bytes[k] < G->saved_bytes[k] ? G->in_bytes[k]
							  : G->saved_bytes[k];
	default:
		return G->saved_bytes[k];
	}
}

/* Per-sample numbers of one run of equal decisions. */
struct run_info {
	uint32_t a, b; /* coarse groups [a, b) */
	const struct tp_decision *dc;
	const struct tp_devset *ds;
	const uint32_t *d; /* replica r's context rank c's tensor rank k:
			      d[(r * cp + c) * tp + k] */
	uint32_t tp, cp, dp;
	double act, inflight; /* run_memory: only the estimate reads them */
};

static void run_info(const struct tp_space *s,
		     const struct tp_space_scratch *scr,
		     const struct tp_decision *state, const struct tp_globals *gl,
		     uint32_t r, struct run_info *ri)
{
	ri->a = scr->run_first[r];
	ri->b = scr->run_first[r + 1];
	ri->dc = &state[ri->a];
	ri->ds = &s->sets.v[ri->dc->set];
	ri->d = tp_space_set_devs(s, ri->dc->set);
	ri->tp = ri->dc->tp;
	ri->cp = tp_globals_cp(gl);
	ri->dp = ri->ds->n / (ri->tp * ri->cp);
	ri->act = ri->inflight = 0;
}

/* Run r's activation bytes per sample and micro-batches in flight (ri
 * from run_info), for the memory estimate (estimate_fit). */
static void run_memory(const struct tp_space *s,
		       const struct tp_space_scratch *scr,
		       const struct tp_globals *gl, uint32_t r, uint32_t stages,
		       struct run_info *ri)
{
	const struct tp_groups *G = s->groups;
	uint32_t mcount = gl->micro_batches ? gl->micro_batches : 1;

	ri->act = 0;
	for (uint32_t k = ri->a; k < ri->b; k++)
		ri->act += saved_bytes(G, k, (enum tp_recompute)ri->dc->recompute);
	if (scr->ip) {
		/* interleaved: stage s holds about (p - s) + (p - 1) / V
		   micro-batches of each of its chunks (Megatron) */
		uint32_t st = scr->stage[r] % scr->ip;
		ri->inflight = fmin(mcount, (double)(scr->ip - st) +
						    (double)(scr->ip - 1) /
							    scr->iv);
	} else if (gl->schedule == TP_SCHEDULE_ZB_H1) {
		/* zb-h1: after a B, stage s holds p - s - 1 forwards and
		   s + 1 deferred W passes (their inputs and output
		   gradients), about p micro-batches on every stage (the
		   simulator's accounting, sim/README section 5) */
		ri->inflight = fmin(mcount, stages);
	} else {
		ri->inflight = gl->schedule == TP_SCHEDULE_GPIPE
				       ? mcount
				       : fmin(mcount, stages - scr->stage[r]);
	}
}

/* Replica speeds of a run: 1 / the time per sample of its slowest
 * device. */
static void run_speeds(const struct tp_space *s, struct tp_space_scratch *scr,
		       const struct run_info *ri)
{
	const struct tp_cluster *c = s->cluster;
	uint32_t T = s->n_types;

	for (uint32_t rep = 0; rep < ri->dp; rep++) {
		double worst = 0;
		for (uint32_t k = 0; k < ri->cp * ri->tp; k++) {
			uint32_t t = c->devices.v[ri->d[rep * ri->cp * ri->tp + k]]
					     .type;
			double x = 0;
			for (uint32_t g = ri->a; g < ri->b; g++)
				x += s->time[(size_t)g * T + t];
			if (x > worst)
				worst = x;
		}
		scr->speed[rep] = worst > 0 ? 1 / worst : 1;
	}
}

static void run_shares(const struct tp_space *s, struct tp_space_scratch *scr,
		       const struct tp_globals *gl, const struct run_info *ri)
{
	if (gl->even)
		for (uint32_t rep = 0; rep < ri->dp; rep++)
			scr->speed[rep] = 1;
	else
		run_speeds(s, scr, ri);
}

/* The stages of a pipeline (see tp_space_pipeline): each new stage's
 * set disjoint from every earlier stage's, by set, not device by device:
 * beyond the range of all earlier stages (a pipeline along the device
 * order), else tp_space_sets_meet with each.  Fills stage_set (K
 * entries: the stages' sets) and, when not NULL, stage_dec / stage_of
 * (per group). */
static uint32_t pipeline_stages(const struct tp_space *s,
				const struct tp_decision *state,
				uint32_t *stage_set,
				struct tp_decision *stage_dec,
				uint32_t *stage_of)
{
	uint32_t K = s->groups->n, p = 0, cur = TP_NONE, lo = 0, hi = 0;

	for (uint32_t g = 0; g < K; g++) {
		uint32_t set = state[g].set;
		if (g == 0 || set != cur) {
			const struct tp_devset *ds = &s->sets.v[set];
			if (p > 0 && ds->hi >= lo && ds->lo <= hi)
				for (uint32_t j = 0; j < p; j++)
					if (tp_space_sets_meet(s, stage_set[j],
							       set))
						return 0;
			if (p == 0 || ds->lo < lo)
				lo = ds->lo;
			if (p == 0 || ds->hi > hi)
				hi = ds->hi;
			stage_set[p] = set;
			if (stage_dec)
				stage_dec[p] = state[g];
			cur = set;
			p++;
		}
		if (stage_of)
			stage_of[g] = p - 1;
	}
	return p >= 2 ? p : 0;
}

uint32_t tp_space_pipeline(const struct tp_space *s,
			   const struct tp_decision *state)
{
	uint32_t *sets = malloc((s->groups->n + 1) * sizeof(*sets));
	uint32_t p;

	if (!sets)
		return 0;
	p = pipeline_stages(s, state, sets, NULL, NULL);
	free(sets);
	return p;
}

/*
 * Interleave the pipeline of state by V into scr->idec (see
 * tp_space_materialize); returns false (scr->idec untouched) when state
 * is no pipeline or has too few groups.
 */
static bool interleave(const struct tp_space *s,
		       struct tp_space_scratch *scr,
		       const struct tp_decision *state,
		       const struct tp_globals *gl, uint32_t V)
{
	const struct tp_groups *G = s->groups;
	uint32_t K = G->n, p, n;
	double acc = 0, target;

	p = pipeline_stages(s, state, scr->stage_set, scr->stage_dec,
			    scr->chunk);
	if (p < 2 || (uint64_t)p * V > K)
		return false;
	n = p * V;
	for (uint32_t j = 0; j < p; j++)
		scr->stage_w[j] = 0;
	for (uint32_t g = 0; g < K; g++)
		scr->stage_w[scr->chunk[g]] += G->weight[g];
	/* chunk c takes stage (c mod p)'s weight / V: a group whose
	   midpoint passes the end of the current chunk starts the next one
	   (one chunk per group at most, so none is empty), and the last
	   groups are spread so that every chunk gets one */
	target = scr->stage_w[0] / V;
	bool by_layers = false;
	if (s->constrained && s->rt.can.layout != TP_LAYOUT_ANY) {
		/* the runtime's layout: chunk c holds layers [c L / n,
		   (c + 1) L / n) (groups without layers go with their
		   neighbours) */
		int32_t L = 0, le = 0;
		for (uint32_t g = 0; g < K; g++)
			if (s->layer_end[g] > L)
				L = s->layer_end[g];
		if (L > 0) {
			for (uint32_t g = 0; g < K; g++) {
				if (s->layer_end[g] > le)
					le = s->layer_end[g];
				scr->chunk[g] = le > 0 ? (uint32_t)(
					(int64_t)(le - 1) * n / L) : 0;
			}
			by_layers = true;
		}
	}
	for (uint32_t g = 0, c = 0; g < K && !by_layers; g++) {
		double mid = acc + G->weight[g] / 2;
		if (g > 0 && c + 1 < n &&
		    (mid >= target || n - 1 - c > K - 1 - g)) {
			c++;
			target += scr->stage_w[c % p] / V;
		}
		scr->chunk[g] = c;
		acc += G->weight[g];
	}
	for (uint32_t g = 0; g < K; g++) {
		uint32_t j = scr->chunk[g] % p, set = scr->stage_set[j];
		const struct tp_decision *sd = &scr->stage_dec[j];
		uint32_t tp = fit_tp(s, g, set, sd->tp, gl);
		scr->idec[g].set = set;
		scr->idec[g].tp = (uint16_t)tp;
		scr->idec[g].sync =
			tp == sd->tp ? sd->sync
				     : (uint8_t)tp_space_default_sync(s, set, tp);
		scr->idec[g].recompute = state[g].recompute;
	}
	scr->ip = p;
	scr->iv = V;
	return true;
}

static void reset_plan(struct tp_plan *plan, const struct tp_model *m,
		       const struct tp_globals *gl,
		       enum tp_compression compression)
{
	tp_plan_clear(plan);
	plan->global_batch = m->global_batch;
	plan->micro_batches = gl->micro_batches ? gl->micro_batches : 1;
	plan->schedule = (enum tp_schedule)gl->schedule;
	plan->virtual_stages = 1;
	plan->zero = gl->zero;
	plan->compression = compression;
}

/* What materialising one decision vector shares between its steps. */
struct mat {
	const struct tp_space *s;
	struct tp_space_scratch *scr;
	const struct tp_decision *state; /* after interleaving */
	const struct tp_globals *gl;
	int64_t mb;      /* samples per micro-batch */
	uint32_t nruns;  /* runs of equal decisions */
	uint32_t stages; /* pipeline stages */
};

/* Runs of equal decisions into scr->run_first (nruns + 1 entries) and
 * their stages into scr->stage: a run on a set disjoint from the
 * previous run's starts a new pipeline stage (tp_space_sets_meet: by
 * set, not device by device). */
static void mark_runs(struct mat *x)
{
	const struct tp_space *s = x->s;
	struct tp_space_scratch *scr = x->scr;
	const struct tp_decision *state = x->state;
	uint32_t K = s->groups->n, nruns = 0, stages = 1;

	for (uint32_t g = 0; g < K; g++) {
		if (g > 0 && same_decision(&state[g], &state[g - 1]))
			continue;
		scr->run_first[nruns] = g;
		if (nruns > 0 &&
		    !tp_space_sets_meet(s, state[scr->run_first[nruns - 1]].set,
					state[g].set))
			stages++;
		scr->stage[nruns] = stages - 1;
		nruns++;
	}
	scr->run_first[nruns] = K;
	x->nruns = nruns;
	x->stages = stages;
}

/* A run whose replicas do not fit in a micro-batch (estimate_fit,
 * even_fit): the state does not materialise. */
static enum tp_status no_fit(const struct run_info *ri, int64_t mb,
			     struct tp_error *err)
{
	return tp_error_set(err, TP_EINPUT,
			    "%u replicas do not fit in a micro-batch of %lld "
			    "samples",
			    ri->dp, (long long)mb);
}

/* Memory estimate per device, into scr->static_b and scr->act_b: model
 * state, then activations of the speed-proportional split; then into
 * scr->fit how much of its activations each device could hold.
 * TP_EINPUT when a run's replicas do not fit in a micro-batch. */
static enum tp_status estimate_fit(struct mat *x, struct tp_error *err)
{
	const struct tp_space *s = x->s;
	const struct tp_model *m = s->model;
	const struct tp_cluster *c = s->cluster;
	const struct tp_groups *G = s->groups;
	const struct tp_globals *gl = x->gl;
	struct tp_space_scratch *scr = x->scr;
	const struct tp_runtime_behaviour *b = &s->rt.behaviour;
	struct tp_cost_state cs;
	struct run_info ri;
	double copy = 0;

	tp_cost_state_init(&cs, m->dtype, m->optimizer);
	if (s->constrained)
		/* the runtime's gradient buffers, as the simulator counts
		   them (core/cost.h) */
		copy = tp_cost_state_runtime(
		    &cs, b->grad_buffer == TP_GRAD_REDUCE_FP32,
		    b->grad_bucket_copy, b->grad_reduce == TP_GRAD_REDUCE_FP32);
	memset(scr->static_b, 0, scr->n_dev * sizeof(double));
	memset(scr->act_b, 0, scr->n_dev * sizeof(double));
	for (uint32_t r = 0; r < x->nruns; r++) {
		double pb = tp_dtype_bytes(m->dtype), params = 0, w, gr, opt;
		run_info(s, scr, x->state, gl, r, &ri);
		if (tp_decision_mixed(ri.dc))
			continue; /* shares by speed alone (add_mixed_group) */
		run_memory(s, scr, gl, r, x->stages, &ri);
		for (uint32_t k = ri.a; k < ri.b; k++)
			params += G->param_bytes[k];
		/* model state per parameter byte, ZeRO-sharded over the
		   dp x cp ranks */
		uint32_t zdp = ri.dp * ri.cp, lanes = ri.cp * ri.tp;
		w = cs.weights / pb /
		    tp_cost_zero_div(gl->zero, TP_COST_WEIGHTS, zdp);
		gr = cs.grads / pb /
			     tp_cost_zero_div(gl->zero, TP_COST_GRADS, zdp) +
		     copy / pb; /* the bucket copy is never sharded */
		opt = cs.optim / pb /
		      tp_cost_zero_div(gl->zero, TP_COST_OPTIMIZER, zdp);
		run_shares(s, scr, gl, &ri);
		if (!tp_space_split_samples(x->mb, ri.dp, scr->speed, NULL,
					    scr->samples))
			return no_fit(&ri, x->mb, err);
		/* a context rank holds 1/cp of its replica's activations */
		for (uint32_t rep = 0; rep < ri.dp; rep++)
			for (uint32_t k = 0; k < lanes; k++) {
				uint32_t dv = ri.d[rep * lanes + k];
				scr->static_b[dv] +=
					params / ri.tp * (w + gr + opt);
				scr->act_b[dv] += ri.act / lanes * ri.inflight *
						  (double)scr->samples[rep];
			}
	}
	for (uint32_t i = 0; i < scr->n_dev; i++) {
		const struct tp_device_type *ty =
			&c->types.v[c->devices.v[i].type];
		double avail =
			ty->memory_bytes - ty->reserved_bytes - scr->static_b[i];
		if (scr->act_b[i] <= 0 || avail >= scr->act_b[i])
			scr->fit[i] = INFINITY;
		else
			scr->fit[i] = avail > 0 ? avail / scr->act_b[i] : 0;
	}
	return TP_OK;
}

/* estimate_fit for even shares (gl->even): the memory estimate only caps
 * shares, which even shares never are (run_capped_shares), so only its
 * check remains: every run's replicas fit in a micro-batch (the same
 * error as estimate_fit's; tp_space_split_samples of equal weights fails
 * just when there are more replicas than samples).  scr->fit is left
 * as it was (unread). */
static enum tp_status even_fit(struct mat *x, struct tp_error *err)
{
	struct run_info ri;

	for (uint32_t r = 0; r < x->nruns; r++) {
		run_info(x->s, x->scr, x->state, x->gl, r, &ri);
		if (tp_decision_mixed(ri.dc))
			continue;
		if (ri.dp == 0 || x->mb < (int64_t)ri.dp)
			return no_fit(&ri, x->mb, err);
	}
	return TP_OK;
}

/* Run r's replica shares into scr->rem (fractions of a micro-batch):
 * by speed, capped by what each replica's devices can hold (scr->fit);
 * even shares (gl->even) are never capped. */
static void run_capped_shares(struct mat *x, const struct run_info *ri)
{
	struct tp_space_scratch *scr = x->scr;
	bool capped = false;
	double q = 0;

	run_shares(x->s, scr, x->gl, ri);
	tp_space_split_samples(x->mb, ri->dp, scr->speed, NULL, scr->samples);
	for (uint32_t rep = 0; rep < ri->dp && !x->gl->even; rep++) {
		double f = INFINITY;
		for (uint32_t k = 0; k < ri->cp * ri->tp; k++) {
			uint32_t dv = ri->d[rep * ri->cp * ri->tp + k];
			if (scr->fit[dv] < f)
				f = scr->fit[dv];
		}
		scr->cap[rep] = INFINITY;
		if (isfinite(f)) {
			scr->cap[rep] = f * (double)scr->samples[rep];
			capped = true;
		}
	}
	if (capped && !x->gl->even)
		tp_space_split_samples(x->mb, ri->dp, scr->speed, scr->cap,
				       scr->samples);
	/* replicas' samples take few values (even shares two): a division
	   per change */
	for (uint32_t rep = 0; rep < ri->dp; rep++) {
		if (rep == 0 || scr->samples[rep] != scr->samples[rep - 1])
			q = (double)scr->samples[rep] / (double)x->mb;
		scr->rem[rep] = q;
	}
}

/* Mixed replicas of run ri (TP_DECISION_MIXED) into r: per node of the
 * set, per type, runs of tp devices (1 for the set's fastest type; what
 * is left of a type in a node at tp 1), each weighted by its degree over
 * its type's estimated time per sample on the run's groups. */
struct mixed_reps {
	uint32_t *devs, *rtp, n_dev, n_rep;
	double *w;
};

static void mixed_layout(const struct tp_space *s, const struct run_info *ri,
			 struct mixed_reps *r)
{
	const struct tp_cluster *c = s->cluster;
	uint32_t fast = tp_space_set_fast_type(s, ri->dc->set), n = ri->ds->n;

	r->n_dev = r->n_rep = 0;
	for (uint32_t i = 0; i < n;) {
		uint32_t node = c->devices.v[ri->d[i]].node, j = i;
		while (j < n && c->devices.v[ri->d[j]].node == node)
			j++;
		/* the node's devices [i, j) of the set, type by type */
		for (uint32_t a = i; a < j; a++) {
			uint32_t t = c->devices.v[ri->d[a]].type, cnt = 0;
			uint32_t run = t == fast ? 1 : ri->tp, k = 0;
			double x = 0;
			bool first = true;
			for (uint32_t b = i; b < a && first; b++)
				first = c->devices.v[ri->d[b]].type != t;
			if (!first)
				continue;
			for (uint32_t g = ri->a; g < ri->b; g++)
				x += s->time[(size_t)g * s->n_types + t];
			for (uint32_t b = a; b < j; b++)
				if (c->devices.v[ri->d[b]].type == t)
					r->devs[r->n_dev + cnt++] = ri->d[b];
			while (k < cnt) {
				uint32_t dg = cnt - k >= run ? run : 1;
				r->rtp[r->n_rep] = dg;
				r->w[r->n_rep] = x > 0 ? dg / x : dg;
				r->n_rep++;
				k += dg;
			}
			r->n_dev += cnt;
		}
		i = j;
	}
}

/* The plan group of a mixed run (no memory caps: the simulator says
 * whether it fits). */
static enum tp_status add_mixed_group(struct mat *x, const struct run_info *ri,
				      struct tp_plan *plan,
				      struct tp_error *err)
{
	const struct tp_space *s = x->s;
	const struct tp_groups *G = s->groups;
	uint32_t n = ri->ds->n;
	struct mixed_reps r = {tp_calloc(n, sizeof(uint32_t)),
			       tp_calloc(n, sizeof(uint32_t)), 0, 0,
			       tp_calloc(n, sizeof(double))};
	int64_t *samples = tp_calloc(n, sizeof(int64_t));
	double *shares = tp_calloc(n, sizeof(double));
	enum tp_status st;

	if (!r.devs || !r.rtp || !r.w || !samples || !shares) {
		st = tp_error_set(err, TP_ENOMEM, "out of memory");
		goto out;
	}
	mixed_layout(s, ri, &r);
	if (!tp_space_split_samples(x->mb, r.n_rep, r.w, NULL, samples)) {
		st = tp_error_set(err, TP_EINPUT,
				  "%u mixed replicas do not fit in a "
				  "micro-batch of %lld samples",
				  r.n_rep, (long long)x->mb);
		goto out;
	}
	for (uint32_t i = 0; i < r.n_rep; i++)
		shares[i] = (double)samples[i] / (double)x->mb;
	st = tp_plan_add_group_mixed(
		plan, s->model->topo + G->first[ri->a],
		G->first[ri->b] - G->first[ri->a], r.devs, r.n_dev,
		&(struct tp_plan_replicas){r.n_rep, r.rtp}, shares, err);
out:
	free(r.devs);
	free(r.rtp);
	free(r.w);
	free(samples);
	free(shares);
	return st;
}

/* What tp_runtime_plan_check_facts reads of run ri's plan group: its
 * ops are the model's topological order from G->first[ri->a] to
 * G->first[ri->b] (so the least topo_pos is the first), its layers those
 * of its coarse groups (s->layer_lo, s->layer_end), its devices the
 * set's (the set's type: TP_NONE when of several; sets are distinct
 * lists, so the set's index names its list). */
static void run_facts(const struct tp_space *s, const struct run_info *ri,
		      struct tp_runtime_group_facts *f)
{
	const struct tp_groups *G = s->groups;

	f->first_pos =
	    G->first[ri->b] > G->first[ri->a] ? G->first[ri->a] : UINT32_MAX;
	f->layer_lo = f->layer_hi = -1;
	for (uint32_t k = ri->a; k < ri->b; k++) {
		if (s->layer_lo[k] >= 0 &&
		    (f->layer_lo < 0 || s->layer_lo[k] < f->layer_lo))
			f->layer_lo = s->layer_lo[k];
		if (s->layer_end[k] - 1 > f->layer_hi)
			f->layer_hi = s->layer_end[k] - 1;
	}
	f->type = ri->ds->type;
	/* the set's list, unless mixed replicas reorder it (mixed_layout) */
	f->list = tp_decision_mixed(ri->dc) ? TP_NONE : ri->dc->set;
	f->dev_lo = ri->ds->lo;
	f->dev_hi = ri->ds->hi;
	f->dense = ri->ds->dense;
	f->nodes = tp_decision_mixed(ri->dc)
			   ? NULL
			   : s->set_nodes.v + ri->ds->nodes_first;
	f->n_nodes = ri->ds->n_nodes;
}

/* The plan group of run r, with memory-capped shares. */
static enum tp_status add_run_group(struct mat *x, uint32_t r,
				    struct tp_plan *plan, struct tp_error *err)
{
	const struct tp_space *s = x->s;
	const struct tp_model *m = s->model;
	const struct tp_groups *G = s->groups;
	const struct tp_globals *gl = x->gl;
	struct tp_plan_degrees deg;
	struct run_info ri;
	enum tp_status st;
	uint32_t idx;

	run_info(s, x->scr, x->state, gl, r, &ri);
	if (s->constrained)
		run_facts(s, &ri, &x->scr->facts[plan->groups.n]);
	if (tp_decision_mixed(ri.dc)) {
		if ((st = add_mixed_group(x, &ri, plan, err)))
			return st;
		idx = (uint32_t)plan->groups.n - 1;
		plan->groups.v[idx].sync = tp_decision_sync(ri.dc);
		plan->groups.v[idx].recompute =
			(enum tp_recompute)ri.dc->recompute;
		return TP_OK;
	}
	run_capped_shares(x, &ri);
	deg.dp = ri.dp;
	deg.cp = ri.cp;
	deg.tp = ri.tp;
	st = tp_plan_add_group_degrees(plan, m->topo + G->first[ri.a],
				       G->first[ri.b] - G->first[ri.a], ri.d,
				       ri.ds->n, &deg, x->scr->rem, err);
	if (st)
		return st;
	idx = (uint32_t)plan->groups.n - 1;
	plan->groups.v[idx].sync = tp_decision_sync(ri.dc);
	plan->groups.v[idx].recompute = (enum tp_recompute)ri.dc->recompute;
	plan->groups.v[idx].sp = tp_globals_sp(gl) && ri.tp > 1;
	/* etp 1 where it is valid: a tensor-parallel group with sequence
	   parallelism whose experts spread (ep > 1, which may then reach
	   past dp x cp into the tensor ranks) */
	if (tp_globals_etp(gl) == 1 && plan->groups.v[idx].sp)
		plan->groups.v[idx].etp = 1;
	for (uint32_t e = tp_globals_ep(gl); e > 1; e /= 2)
		if (tp_plan_ep_fits(plan, m, idx, e)) {
			plan->groups.v[idx].ep = e;
			break;
		}
	if (plan->groups.v[idx].ep < 2)
		plan->groups.v[idx].etp = 0;
	return TP_OK;
}

enum tp_status tp_space_materialize(const struct tp_space *s,
				    const struct tp_globals *gl,
				    const struct tp_decision *state,
				    enum tp_compression compression,
				    struct tp_space_scratch *scr,
				    struct tp_plan *plan, struct tp_error *err)
{
	const struct tp_model *m = s->model;
	uint32_t K = s->groups->n;
	uint32_t mcount = gl->micro_batches ? gl->micro_batches : 1;
	struct mat x = {s, scr, state, gl, tp_space_micro_batch(s, gl), 0, 1};
	enum tp_status st;

	reset_plan(plan, m, gl, compression);
	if (m->global_batch % mcount != 0)
		return tp_error_set(err, TP_EINPUT,
				    "%u micro-batches do not divide the batch",
				    mcount);
	scr->ip = scr->iv = 0;
	if (tp_globals_interleave(gl) >= 2 &&
	    interleave(s, scr, state, gl, tp_globals_interleave(gl))) {
		x.state = state = scr->idec;
		plan->schedule = TP_SCHEDULE_INTERLEAVED;
		plan->virtual_stages = tp_globals_interleave(gl);
	}
	for (uint32_t g = 0; g < K; g++)
		if (!decision_ok(s, g, &state[g], gl))
			return tp_error_set(
				err, TP_EINPUT,
				"group %u: tp=%u on set \"%s\" is not valid "
				"with %lld samples per micro-batch",
				g, state[g].tp,
				state[g].set < s->sets.n
					? s->sets.v[state[g].set].label
					: "?",
				(long long)x.mb);
	mark_runs(&x);
	st = gl->even ? even_fit(&x, err) : estimate_fit(&x, err);
	for (uint32_t r = 0; r < x.nruns && !st; r++)
		st = add_run_group(&x, r, plan, err);
	return st;
}
