/*
 * train.c - self-play games, the replay buffer, optimisation, held-out
 * evaluation and checkpoints (see train.h).
 */
#include "train.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/report.h"
#include "core/vec.h"
#include "gnn/features.h"
#include "gnn/provider.h"
#include "gnn/weights.h"
#include "io/io.h"
#include "search/actions.h"
#include "search/coarsen.h"
#include "search/search.h"
#include "sim/sim.h"

#define MAX_ACTIONS 64      /* as the search's MAX_CHILDREN */
#define CPUCT 1.5
#define FPU_REDUCTION 0.05
#define SAMPLE_LEVELS_FRAC 0.5 /* sample moves in the first half */
#define NORM_SAMPLES 800
#define VALUE_TAU 0.02 /* temperature of value-based policy targets, in
			  search-value units (~1.3% of iteration time) */
#define CKPT_MAGIC "TPGNNCK\n"
#define CKPT_VERSION 1

void tp_train_options_default(struct tp_train_options *o)
{
	memset(o, 0, sizeof(*o));
	o->seed = 1;
	o->games = 120;
	o->epochs = 8;
	o->threads = 1;
	o->playouts = 48;
	o->batch = 32;
	o->heldout = 0.15;
	o->lr = 1e-3f;
	o->clip = 1.0f;
	o->value_weight = 1.0f;
	o->gain_weight = 1.0f;
	o->weight_decay = 1e-2f;
	o->max_devices = 32;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void logf_(const struct tp_train_options *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void logf_(const struct tp_train_options *o, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!o->log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	o->log(o->log_ctx, line);
}

/* ------------------------------------------------------------------ */
/* games */

struct game {
	uint64_t seed;
	enum tp_train_family fam;
	char desc[200];
	bool heldout;
	struct tp_model m;
	struct tp_cluster c;
	struct tp_groups g;
	struct tp_space sp;
	struct tp_sim *sim;
	double lb;
	/* the starting incumbent: data parallel */
	struct tp_globals gl0;
	struct tp_decision *dec0;
	double ref;
};

static void game_release(struct game *g)
{
	tp_sim_free(g->sim);
	tp_space_release(&g->sp);
	tp_groups_release(&g->g);
	tp_cluster_release(&g->c);
	tp_model_release(&g->m);
	free(g->dec0);
}

/* ------------------------------------------------------------------ */
/* samples */

struct sample {
	uint32_t game, level, n_act;
	struct tp_globals gl;
	size_t dec_off, act_off, pi_off, rep_off; /* rep_off SIZE_MAX: none */
	float z;
	float rep_time;
	uint8_t rep_feasible;
};

struct samples {
	TP_VEC(struct sample) s;
	TP_VEC(struct tp_decision) dec;
	TP_VEC(struct tp_action) act;
	TP_VEC(float) pi;
	TP_VEC(float) gain, gain_w; /* parallel to pi (gain head targets) */
	TP_VEC(float) rep; /* 3 per device: compute, comm, peak memory */
};

static void samples_free(struct samples *S)
{
	tp_vec_free(&S->s);
	tp_vec_free(&S->dec);
	tp_vec_free(&S->act);
	tp_vec_free(&S->pi);
	tp_vec_free(&S->gain);
	tp_vec_free(&S->gain_w);
	tp_vec_free(&S->rep);
}

/* Append all of B to A (B's offsets rebased). */
static int samples_append(struct samples *A, const struct samples *B)
{
	size_t d0 = A->dec.n, a0 = A->act.n, p0 = A->pi.n, r0 = A->rep.n;

	if (tp_vec_reserve(&A->s, B->s.n) || tp_vec_reserve(&A->dec, B->dec.n) ||
	    tp_vec_reserve(&A->act, B->act.n) ||
	    tp_vec_reserve(&A->pi, B->pi.n) ||
	    tp_vec_reserve(&A->gain, B->gain.n) ||
	    tp_vec_reserve(&A->gain_w, B->gain_w.n) ||
	    tp_vec_reserve(&A->rep, B->rep.n))
		return -1;
	for (size_t i = 0; i < B->s.n; i++) {
		struct sample x = B->s.v[i];
		x.dec_off += d0;
		x.act_off += a0;
		x.pi_off += p0;
		if (x.rep_off != SIZE_MAX)
			x.rep_off += r0;
		A->s.v[A->s.n++] = x;
	}
	if (B->dec.n)
		memcpy(A->dec.v + d0, B->dec.v, B->dec.n * sizeof(*B->dec.v));
	if (B->act.n)
		memcpy(A->act.v + a0, B->act.v, B->act.n * sizeof(*B->act.v));
	if (B->pi.n) {
		memcpy(A->pi.v + p0, B->pi.v, B->pi.n * sizeof(*B->pi.v));
		memcpy(A->gain.v + p0, B->gain.v, B->pi.n * sizeof(float));
		memcpy(A->gain_w.v + p0, B->gain_w.v, B->pi.n * sizeof(float));
	}
	if (B->rep.n)
		memcpy(A->rep.v + r0, B->rep.v, B->rep.n * sizeof(*B->rep.v));
	A->dec.n += B->dec.n;
	A->act.n += B->act.n;
	A->pi.n += B->pi.n;
	A->gain.n = A->gain_w.n = A->pi.n;
	A->rep.n += B->rep.n;
	return 0;
}

/* ------------------------------------------------------------------ */
/* per-thread context */

struct cache_ent {
	uint64_t key; /* 0 = empty */
	float time, over;
	uint8_t feasible, ok;
};

struct tctx {
	const struct tp_train_options *o;
	struct tp_gnn_prior *gp; /* NULL: uniform priors */
	void *gscratch;
	/* the game this context is set up for, and what it keeps per game
	 * (built on first use, indexed by game) */
	struct game *game;
	struct game *games;
	uint32_t n_games;
	struct tp_space_scratch *sscr, **sscr_of;
	struct tp_sim_scratch *simscr, **simscr_of;
	struct tp_gnn_features *feat, **feat_of;
	struct tp_plan plan;
	struct tp_report rep;
	struct cache_ent *cache;
	size_t cache_cap, cache_n;
	/* MCTS */
	TP_VEC(struct snode) nodes;
	struct tp_decision *dec;
	bool *decided;
	struct tp_prior_action pacts[MAX_ACTIONS];
	struct tp_action acts[MAX_ACTIONS];
	float priors[MAX_ACTIONS];
	uint32_t *path;
	struct tp_rng rng;
	uint64_t playouts, sims;
	/* training */
	struct tp_ad ad;
	float *grad;
	double loss_p, loss_v, loss_g;
	uint32_t n_loss;
	struct tp_error err;
	enum tp_status st;
};

struct snode {
	uint32_t first_child, n_children;
	uint32_t visits;
	double wsum;
	float prior;
	float best; /* best value target found below (efficiency scale) */
	float vmax; /* best search value found below */
	float v0;   /* search value of the node's own state */
	float t0;   /* its iteration time (INFINITY: not scored) */
	uint8_t fit0; /* it fits */
	float fpu;
	uint8_t expanded, terminal;
	struct tp_action action;
};

static void tctx_unbind(struct tctx *t)
{
	for (uint32_t i = 0; i < t->n_games; i++) {
		if (t->sscr_of)
			tp_space_scratch_free(t->sscr_of[i]);
		if (t->simscr_of)
			tp_sim_scratch_free(t->simscr_of[i]);
		if (t->feat_of)
			tp_gnn_features_free(t->feat_of[i]);
	}
	free(t->sscr_of);
	free(t->simscr_of);
	free(t->feat_of);
	t->sscr_of = NULL;
	t->simscr_of = NULL;
	t->feat_of = NULL;
	free(t->dec);
	free(t->decided);
	free(t->path);
	t->sscr = NULL;
	t->simscr = NULL;
	t->feat = NULL;
	t->dec = NULL;
	t->decided = NULL;
	t->path = NULL;
	t->game = NULL;
}

static void tctx_release(struct tctx *t)
{
	tctx_unbind(t);
	tp_plan_release(&t->plan);
	tp_report_release(&t->rep);
	free(t->cache);
	tp_vec_free(&t->nodes);
	tp_ad_release(&t->ad);
	free(t->grad);
	if (t->gp && t->gscratch) {
		struct tp_prior_provider pp;
		tp_gnn_prior_provider(t->gp, &pp);
		pp.scratch_free(pp.ctx, t->gscratch);
	}
	t->gscratch = NULL;
}

/* Make g the current game; sim says whether a simulator scratch is
 * needed (self-play) or only the features (training). */
static enum tp_status tctx_bind(struct tctx *t, struct game *g, bool sim)
{
	uint32_t gi = (uint32_t)(g - t->games), K = g->g.n;

	if (!t->sscr_of) {
		t->sscr_of = tp_calloc(t->n_games, sizeof(*t->sscr_of));
		t->simscr_of = tp_calloc(t->n_games, sizeof(*t->simscr_of));
		t->feat_of = tp_calloc(t->n_games, sizeof(*t->feat_of));
		t->dec = tp_calloc(TP_COARSEN_MAX_GROUPS, sizeof(*t->dec));
		t->decided = tp_calloc(TP_COARSEN_MAX_GROUPS, sizeof(bool));
		t->path = tp_calloc(TP_COARSEN_MAX_GROUPS + 3, sizeof(uint32_t));
		if (!t->sscr_of || !t->simscr_of || !t->feat_of || !t->dec ||
		    !t->decided || !t->path)
			return tp_error_set(&t->err, TP_ENOMEM,
					    "out of memory");
	}
	if (gi >= t->n_games || K > TP_COARSEN_MAX_GROUPS)
		return tp_error_set(&t->err, TP_EINTERNAL, "bad game index");
	if (!t->sscr_of[gi] &&
	    !(t->sscr_of[gi] = tp_space_scratch_new(&g->sp)))
		return tp_error_set(&t->err, TP_ENOMEM, "out of memory");
	if (sim && !t->simscr_of[gi] &&
	    !(t->simscr_of[gi] = tp_sim_scratch_new(g->sim)))
		return tp_error_set(&t->err, TP_ENOMEM, "out of memory");
	if (!t->feat_of[gi]) {
		t->feat_of[gi] = tp_gnn_features_new(&g->m, &g->c, K,
						     g->g.first, NULL, &t->err);
		if (!t->feat_of[gi])
			return t->err.status;
	}
	t->sscr = t->sscr_of[gi];
	t->simscr = t->simscr_of[gi];
	t->feat = t->feat_of[gi];
	if (t->game != g) {
		if (t->rep.n_devices != g->c.devices.n &&
		    tp_report_alloc(&t->rep, (uint32_t)g->c.devices.n, &t->err))
			return t->err.status;
		t->game = g;
		t->cache_n = 0;
		if (t->cache)
			memset(t->cache, 0, t->cache_cap * sizeof(*t->cache));
	}
	return TP_OK;
}

/* ------------------------------------------------------------------ */
/* evaluation with a cache */

struct evalr {
	bool ok, feasible, fresh;
	double time, over;
};

static struct cache_ent *cache_find(struct tctx *t, uint64_t key)
{
	size_t i;

	if (!key)
		key = 1;
	if (t->cache_n * 2 >= t->cache_cap) {
		size_t cap = t->cache_cap ? t->cache_cap * 2 : 4096;
		struct cache_ent *nc = tp_calloc(cap, sizeof(*nc));
		if (!nc)
			return NULL;
		for (size_t j = 0; j < t->cache_cap; j++) {
			if (!t->cache[j].key)
				continue;
			i = t->cache[j].key & (cap - 1);
			while (nc[i].key)
				i = (i + 1) & (cap - 1);
			nc[i] = t->cache[j];
		}
		free(t->cache);
		t->cache = nc;
		t->cache_cap = cap;
	}
	i = key & (t->cache_cap - 1);
	while (t->cache[i].key && t->cache[i].key != key)
		i = (i + 1) & (t->cache_cap - 1);
	if (!t->cache[i].key) {
		t->cache[i].key = key;
		t->cache[i].ok = 2; /* new */
		t->cache_n++;
	}
	return &t->cache[i];
}

/* Materialise and simulate (gl, dec) of the bound game; with force, run
 * the simulator even on a cache hit (so t->rep is the state's report). */
static enum tp_status eval_state(struct tctx *t, const struct tp_globals *gl,
				 const struct tp_decision *dec, bool force,
				 struct evalr *r)
{
	struct game *g = t->game;
	uint64_t key = tp_space_hash(&g->sp, gl, dec);
	struct cache_ent *ce = cache_find(t, key);
	enum tp_status st;

	if (!ce)
		return tp_error_set(&t->err, TP_ENOMEM, "out of memory");
	memset(r, 0, sizeof(*r));
	if (ce->ok != 2 && !force) {
		r->ok = ce->ok;
		r->feasible = ce->feasible;
		r->time = ce->time;
		r->over = ce->over;
		return TP_OK;
	}
	st = tp_space_materialize(&g->sp, gl, dec, TP_COMPRESSION_OFF,
				  t->sscr, &t->plan, &t->err);
	if (st == TP_EINPUT) {
		ce->ok = 0;
		return TP_OK;
	}
	if (st)
		return st;
	st = tp_sim_run(g->sim, &t->plan, t->simscr, &t->rep, NULL, &t->err);
	if (st == TP_EINPUT) {
		ce->ok = 0;
		return TP_OK;
	}
	if (st)
		return st;
	t->sims++;
	r->fresh = true;
	r->ok = isfinite(t->rep.iteration_time_s) &&
		t->rep.iteration_time_s > 0;
	r->feasible = r->ok && t->rep.feasible;
	r->time = r->ok ? t->rep.iteration_time_s : INFINITY;
	r->over = tp_search_over_fraction(&t->rep);
	ce->ok = r->ok;
	ce->feasible = r->feasible;
	ce->time = (float)r->time;
	ce->over = (float)r->over;
	return TP_OK;
}

/* ------------------------------------------------------------------ */
/* state description for the GNN */

/* Fill t->pacts / decided and a prior state for (level, acts) on the
 * plan in t->plan (already materialised). */
static void prior_state(struct tctx *t, uint32_t level, uint32_t n,
			const struct tp_action *acts,
			const struct tp_report *rep,
			struct tp_prior_state *ps)
{
	struct game *g = t->game;
	uint32_t K = g->g.n;

	for (uint32_t k = 0; k < K; k++)
		t->decided[k] = level > 0 && k + 1 < level;
	for (uint32_t i = 0; i < n; i++)
		tp_space_prior_action(&g->sp, level, &acts[i], i == 0,
				      &t->pacts[i]);
	memset(ps, 0, sizeof(*ps));
	ps->model = &g->m;
	ps->cluster = &g->c;
	ps->n_groups = K;
	ps->group_first = g->g.first;
	ps->level = level;
	ps->decided = t->decided;
	ps->plan = &t->plan;
	ps->report = rep;
	ps->n_actions = n;
	ps->actions = t->pacts;
}

/* ------------------------------------------------------------------ */
/* self-play MCTS */

static void apply(uint32_t level, const struct tp_action *a,
		  struct tp_globals *gl, struct tp_decision *dec, uint32_t K)
{
	if (level == 0)
		*gl = a->g;
	else if (level <= K)
		dec[level - 1] = a->d;
}

static uint32_t new_node(struct tctx *t)
{
	struct snode n;
	memset(&n, 0, sizeof(n));
	n.first_child = UINT32_MAX;
	n.best = -1.0f;
	n.vmax = -2.0f;
	n.fpu = NAN;
	if (tp_vec_push(&t->nodes, n))
		return UINT32_MAX;
	return (uint32_t)t->nodes.n - 1;
}

static uint32_t select_child(struct tctx *t, uint32_t p)
{
	struct snode *nd = &t->nodes.v[p];
	double parent_q = nd->visits ? nd->wsum / nd->visits : 0;
	double fpu = isnan(nd->fpu) ? parent_q - FPU_REDUCTION : nd->fpu;
	double c = CPUCT * sqrt(nd->n_children / 10.0 + 0.5);
	double sq = sqrt((double)nd->visits + 1), best = -INFINITY;
	uint32_t pick = nd->first_child;

	for (uint32_t i = 0; i < nd->n_children; i++) {
		struct snode *ch = &t->nodes.v[nd->first_child + i];
		double q = ch->visits ? ch->wsum / ch->visits : fpu;
		double u = q + c * ch->prior * sq / (1 + ch->visits) +
			   1e-9 * tp_rng_uniform(&t->rng);
		if (u > best) {
			best = u;
			pick = nd->first_child + i;
		}
	}
	return pick;
}

/* Priors for the n actions of a state whose plan is in t->plan. */
static enum tp_status get_priors(struct tctx *t, uint32_t level, uint32_t n,
				 const struct tp_action *acts,
				 const struct tp_report *rep)
{
	struct tp_prior_state ps;
	float raw;
	enum tp_status st;

	if (!t->gp || n < 2) {
		for (uint32_t i = 0; i < n; i++)
			t->priors[i] = 1.0f / (float)n;
		return TP_OK;
	}
	prior_state(t, level, n, acts, rep, &ps);
	st = tp_gnn_prior_eval(t->gp, t->gscratch, &ps, t->priors, &raw,
			       &t->err);
	return st;
}

/* One playout from node root whose state is (gl0, dec0) at level L0;
 * force < n_children makes it take root's child force first. */
static enum tp_status playout(struct tctx *t, uint32_t root, uint32_t L0,
			      const struct tp_globals *gl0,
			      const struct tp_decision *dec0, uint32_t force)
{
	struct game *g = t->game;
	uint32_t K = g->g.n, level = L0, depth = 0, cur = root, n;
	struct tp_globals gl = *gl0;
	struct evalr r;
	double v;
	float e;
	enum tp_status st;

	memcpy(t->dec, dec0, K * sizeof(*t->dec));
	t->path[depth++] = cur;
	while (t->nodes.v[cur].expanded && t->nodes.v[cur].n_children) {
		if (depth == 1 && force < t->nodes.v[cur].n_children)
			cur = t->nodes.v[cur].first_child + force;
		else
			cur = select_child(t, cur);
		apply(level, &t->nodes.v[cur].action, &gl, t->dec, K);
		level++;
		t->path[depth++] = cur;
	}
	if ((st = eval_state(t, &gl, t->dec, false, &r)))
		return st;
	v = r.ok ? tp_search_value(g->ref, r.feasible, r.time, r.over) : -1;
	e = tp_gnn_value_target(g->lb, r.ok && r.feasible, r.time);
	if (!t->nodes.v[cur].expanded && level <= K) {
		n = tp_space_level_actions(&g->sp, level, &gl, t->dec,
					   t->acts, MAX_ACTIONS);
		if (n && t->gp && !r.fresh) {
			st = tp_space_materialize(&g->sp, &gl, t->dec,
						  TP_COMPRESSION_OFF, t->sscr,
						  &t->plan, &t->err);
			if (st && st != TP_EINPUT)
				return st;
			if (st == TP_EINPUT)
				n = 0;
		}
		if (n && (st = get_priors(t, level, n, t->acts,
					  r.fresh ? &t->rep : NULL)))
			return st;
		if (n) {
			uint32_t first = (uint32_t)t->nodes.n;
			for (uint32_t i = 0; i < n; i++) {
				uint32_t c = new_node(t);
				if (c == UINT32_MAX)
					return tp_error_set(&t->err, TP_ENOMEM,
							    "out of memory");
				t->nodes.v[c].action = t->acts[i];
				t->nodes.v[c].prior = t->priors[i];
			}
			t->nodes.v[cur].first_child = first;
			t->nodes.v[cur].n_children = n;
		}
		t->nodes.v[cur].expanded = 1;
	}
	if (!t->nodes.v[cur].visits) {
		t->nodes.v[cur].v0 = (float)v;
		t->nodes.v[cur].t0 = r.ok ? (float)r.time : INFINITY;
		t->nodes.v[cur].fit0 = r.ok && r.feasible;
	}
	for (uint32_t i = 0; i < depth; i++) {
		struct snode *nd = &t->nodes.v[t->path[i]];
		nd->visits++;
		nd->wsum += v;
		if (e > nd->best)
			nd->best = e;
		if (v > nd->vmax)
			nd->vmax = (float)v;
	}
	t->playouts++;
	return TP_OK;
}

/* The data-parallel incumbent of a game: all devices, tp 1, the fewest
 * micro-batches that fit. */
static enum tp_status game_incumbent(struct tctx *t)
{
	struct game *g = t->game;
	const struct tp_space *sp = &g->sp;
	uint32_t K = g->g.n;
	bool have = false;

	for (uint32_t k = 0; k < K; k++) {
		g->dec0[k].set = TP_SPACE_SET_ALL;
		g->dec0[k].tp = 1;
		g->dec0[k].sync =
			(uint8_t)tp_space_default_sync(sp, TP_SPACE_SET_ALL, 1);
		g->dec0[k].recompute = TP_RECOMPUTE_NONE;
	}
	g->ref = 0;
	for (uint32_t i = 0; i < sp->n_mb && i < 12; i++) {
		struct tp_globals gl = {sp->mb_counts[i], TP_SCHEDULE_1F1B, 0,
					0, 0};
		struct evalr r;
		enum tp_status st;
		if (!tp_space_state_ok(sp, &gl, g->dec0))
			break;
		if ((st = eval_state(t, &gl, g->dec0, false, &r)))
			return st;
		if (!have) {
			g->gl0 = gl;
			have = true;
		}
		if (r.ok && r.feasible) {
			g->gl0 = gl;
			g->ref = r.time;
			break;
		}
	}
	if (!have)
		return tp_error_set(&t->err, TP_EINPUT,
				    "no data-parallel start for %s",
				    g->desc);
	if (!(g->ref > 0))
		g->ref = 20 * g->lb; /* nothing fits: an arbitrary scale */
	return TP_OK;
}

/* Record the state (gl, dec) at level with node nd's children. */
static enum tp_status record(struct tctx *t, struct samples *S,
			     uint32_t game, uint32_t level,
			     const struct tp_globals *gl,
			     const struct tp_decision *dec, uint32_t nd)
{
	struct snode *p = &t->nodes.v[nd];
	uint32_t K = t->game->g.n, ND = (uint32_t)t->game->c.devices.n;
	struct sample s;
	double tot = 0;

	if (!p->n_children)
		return TP_OK;
	memset(&s, 0, sizeof(s));
	s.game = game;
	s.level = level;
	s.n_act = p->n_children;
	s.gl = *gl;
	s.dec_off = S->dec.n;
	s.act_off = S->act.n;
	s.pi_off = S->pi.n;
	s.rep_off = SIZE_MAX;
	s.z = p->best;
	if (tp_vec_reserve(&S->dec, K) || tp_vec_reserve(&S->act, s.n_act) ||
	    tp_vec_reserve(&S->pi, s.n_act) ||
	    tp_vec_reserve(&S->gain, s.n_act) ||
	    tp_vec_reserve(&S->gain_w, s.n_act) ||
	    tp_vec_reserve(&S->rep, 3 * ND))
		goto nomem;
	/* gain targets: each action's own plan against the state's */
	for (uint32_t i = 0; i < s.n_act; i++) {
		const struct snode *c = &t->nodes.v[p->first_child + i];
		tp_gnn_gain_target(p->fit0, p->t0, p->visits && c->visits,
				   c->fit0, c->t0, S->gain.v + S->pi.n + i,
				   S->gain_w.v + S->pi.n + i);
	}
	S->gain.n = S->gain_w.n = S->pi.n + s.n_act;
	memcpy(S->dec.v + S->dec.n, dec, K * sizeof(*dec));
	S->dec.n += K;
	if (t->o->visit_targets) {
		for (uint32_t i = 0; i < s.n_act; i++)
			tot += t->nodes.v[p->first_child + i].visits;
		for (uint32_t i = 0; i < s.n_act; i++) {
			const struct snode *c = &t->nodes.v[p->first_child + i];
			S->act.v[S->act.n++] = c->action;
			S->pi.v[S->pi.n++] = tot > 0 ? (float)(c->visits / tot)
						     : 1.0f / (float)s.n_act;
		}
	} else {
		/* softmax of each action's own value: the plan with just that
		 * decision changed, as scored when the action was first tried
		 * (not the best value found below it, which grows with the
		 * visits the prior sends there) */
		double vm = -INFINITY;
		for (uint32_t i = 0; i < s.n_act; i++) {
			const struct snode *c = &t->nodes.v[p->first_child + i];
			if (c->visits && c->v0 > vm)
				vm = c->v0;
		}
		for (uint32_t i = 0; i < s.n_act; i++) {
			const struct snode *c = &t->nodes.v[p->first_child + i];
			double x = c->visits ? exp((c->v0 - vm) / VALUE_TAU)
					     : 0;
			S->pi.v[S->pi.n + i] = (float)x;
			tot += x;
		}
		for (uint32_t i = 0; i < s.n_act; i++) {
			const struct snode *c = &t->nodes.v[p->first_child + i];
			S->act.v[S->act.n++] = c->action;
			S->pi.v[S->pi.n] = tot > 0 ? (float)(S->pi.v[S->pi.n] /
							     tot)
						   : 1.0f / (float)s.n_act;
			S->pi.n++;
		}
	}
	/* half of the samples carry the state's simulation, as the search's
	 * freshly simulated leaves do */
	if (tp_rng_below(&t->rng, 2)) {
		struct evalr r;
		enum tp_status st = eval_state(t, gl, dec, true, &r);
		if (st)
			return st;
		if (r.fresh) {
			s.rep_off = S->rep.n;
			for (uint32_t d = 0; d < ND; d++) {
				S->rep.v[S->rep.n++] =
					(float)t->rep.devices[d].compute_s;
				S->rep.v[S->rep.n++] =
					(float)t->rep.devices[d].communication_s;
				S->rep.v[S->rep.n++] =
					(float)t->rep.devices[d]
						.peak_memory_bytes;
			}
			s.rep_time = (float)t->rep.iteration_time_s;
			s.rep_feasible = t->rep.feasible;
		}
	}
	if (tp_vec_push(&S->s, s))
		goto nomem;
	return TP_OK;
nomem:
	return tp_error_set(&t->err, TP_ENOMEM, "out of memory");
}

/*
 * One self-play game: from the data-parallel incumbent, at every level run
 * `playouts` playouts from the current node, record it, move on (sampled
 * from the visits in the first levels when explore, else the most
 * visited).  Value targets: the best outcome found below each recorded
 * state.
 */
static enum tp_status play_game(struct tctx *t, uint32_t gi, struct game *g,
				uint32_t playouts, bool explore,
				struct samples *S)
{
	uint32_t K, root, level;
	struct tp_globals gl;
	struct tp_decision *dec;
	size_t first_sample = S->s.n;
	enum tp_status st;

	if ((st = tctx_bind(t, g, true)))
		return st;
	K = g->g.n;
	if ((st = game_incumbent(t)))
		return st;
	dec = tp_calloc(K, sizeof(*dec));
	if (!dec)
		return tp_error_set(&t->err, TP_ENOMEM, "out of memory");
	memcpy(dec, g->dec0, K * sizeof(*dec));
	gl = g->gl0;
	t->nodes.n = 0;
	root = new_node(t);
	if (root == UINT32_MAX) {
		free(dec);
		return tp_error_set(&t->err, TP_ENOMEM, "out of memory");
	}
	for (level = 0; level <= K; level++) {
		struct snode *p;
		uint32_t pick;
		size_t si;
		if (!t->nodes.v[root].expanded &&
		    (st = playout(t, root, level, &gl, dec, UINT32_MAX)))
			goto out;
		/* every candidate once, so each has a value */
		for (uint32_t i = 0; i < t->nodes.v[root].n_children; i++)
			if (!t->nodes.v[t->nodes.v[root].first_child + i].visits &&
			    (st = playout(t, root, level, &gl, dec, i)))
				goto out;
		for (uint32_t i = 0; i < playouts; i++)
			if ((st = playout(t, root, level, &gl, dec, UINT32_MAX)))
				goto out;
		si = S->s.n;
		if ((st = record(t, S, gi, level, &gl, dec, root)))
			goto out;
		p = &t->nodes.v[root];
		if (!p->n_children || S->s.n == si)
			break;
		/* move: sampled from the target early on when exploring,
		 * else its most likely action */
		{
			const float *pi = S->pi.v + S->s.v[si].pi_off;
			uint32_t best = 0;
			for (uint32_t i = 1; i < p->n_children; i++)
				if (pi[i] > pi[best])
					best = i;
			pick = best;
			if (explore && level < SAMPLE_LEVELS_FRAC * (K + 1)) {
				double r = tp_rng_uniform(&t->rng);
				for (uint32_t i = 0; i < p->n_children; i++) {
					if (r < pi[i]) {
						pick = i;
						break;
					}
					r -= pi[i];
				}
			}
			pick += p->first_child;
		}
		apply(level, &t->nodes.v[pick].action, &gl, dec, K);
		root = pick;
	}
	/* a state's outcome includes what the game found after it */
	for (size_t i = S->s.n; i-- > first_sample + 1;)
		if (S->s.v[i].z > S->s.v[i - 1].z)
			S->s.v[i - 1].z = S->s.v[i].z;
out:
	free(dec);
	return st;
}

/* ------------------------------------------------------------------ */
/* features of a stored sample */

static enum tp_status sample_input(struct tctx *t, struct game *g,
				   const struct samples *S,
				   const struct sample *s,
				   struct tp_gnn_input *in)
{
	struct tp_prior_state ps;
	const struct tp_report *rep = NULL;
	enum tp_status st;

	if ((st = tctx_bind(t, g, false)))
		return st;
	st = tp_space_materialize(&g->sp, &s->gl, S->dec.v + s->dec_off,
				  TP_COMPRESSION_OFF, t->sscr, &t->plan,
				  &t->err);
	if (st)
		return st;
	if (s->rep_off != SIZE_MAX) {
		const float *r = S->rep.v + s->rep_off;
		for (uint32_t d = 0; d < t->rep.n_devices; d++) {
			t->rep.devices[d].compute_s = r[3 * d];
			t->rep.devices[d].communication_s = r[3 * d + 1];
			t->rep.devices[d].peak_memory_bytes = r[3 * d + 2];
		}
		t->rep.iteration_time_s = s->rep_time;
		t->rep.feasible = s->rep_feasible;
		rep = &t->rep;
	}
	prior_state(t, s->level, s->n_act, S->act.v + s->act_off, rep, &ps);
	return tp_gnn_features_state(t->feat, &ps, in, &t->err);
}

/* ------------------------------------------------------------------ */
/* the run */

struct run {
	const struct tp_train_options *o;
	struct game *games;
	uint32_t n_games;
	struct tctx *tc;
	uint32_t nt;
	struct tp_gnn_net *net;
	struct tp_gnn_prior *gp; /* wraps a copy for self-play */
	struct samples cur, prev, held;
	uint32_t epoch;
	/* parallel jobs */
	uint32_t next;
	pthread_mutex_t lock;
	struct samples *per_game;
	uint32_t playouts;
	bool explore, held_phase;
	/* training step */
	const uint32_t *batch_idx;
	uint32_t batch_n;
	const struct samples *batch_set;
};

static enum tp_status build_game(struct run *R, uint32_t i,
				 struct tp_error *err)
{
	struct game *g = &R->games[i];
	struct tp_rng rng;
	char cdesc[160];
	enum tp_status st;
	struct tp_sim_options so;

	tp_rng_seed(&rng, R->o->seed * 1000003u + i);
	g->seed = R->o->seed * 1000003u + i;
	tp_model_init(&g->m);
	tp_cluster_init(&g->c);
	if ((st = tp_train_random_cluster(&rng, R->o->max_devices, &g->c,
					  cdesc, sizeof(cdesc), err)))
		return st;
	g->fam = (enum tp_train_family)(i % TP_TRAIN_FAMILY_COUNT);
	if ((st = tp_train_random_model(&rng, g->fam,
					2 * (int64_t)g->c.devices.n, &g->m,
					err)))
		return st;
	snprintf(g->desc, sizeof(g->desc), "%s (%zu ops) on %s (%zu GPUs)",
		 tp_train_family_name(g->fam), g->m.ops.n, cdesc,
		 g->c.devices.n);
	if ((st = tp_coarsen(&g->m, 0, &g->g, err)) ||
	    (st = tp_space_init(&g->sp, &g->m, &g->c, &g->g, err)))
		return st;
	tp_sim_options_default(&so);
	if (R->o->grad_bucket_bytes > 0)
		so.params.grad_bucket_bytes = R->o->grad_bucket_bytes;
	g->sim = tp_sim_new(&g->m, &g->c, &so, err);
	if (!g->sim)
		return err->status ? err->status : TP_ENOMEM;
	g->dec0 = tp_calloc(g->g.n, sizeof(*g->dec0));
	if (!g->dec0)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	{
		double fl = 0, peak = 0;
		for (size_t k = 0; k < g->m.ops.n; k++)
			fl += g->m.ops.v[k].flop + g->m.ops.v[k].backward_flop;
		for (uint32_t d = 0; d < g->c.devices.n; d++)
			peak += tp_device_peak_flops(&g->c, d, g->m.dtype);
		g->lb = peak > 0 ? fl * (double)g->m.global_batch / peak : 0;
	}
	return TP_OK;
}

struct job {
	struct run *R;
	struct tctx *t;
};

static void *play_thread(void *arg)
{
	struct job *j = arg;
	struct run *R = j->R;
	struct tctx *t = j->t;

	for (;;) {
		uint32_t i;
		pthread_mutex_lock(&R->lock);
		i = R->next++;
		pthread_mutex_unlock(&R->lock);
		if (i >= R->n_games || t->st)
			break;
		if (R->games[i].heldout != R->held_phase)
			continue;
		if (R->o->stop && *R->o->stop)
			break;
		tp_rng_seed(&t->rng, R->games[i].seed ^
					     (0x9E3779B97F4A7C15ull *
					      (R->epoch + 1)));
		t->st = play_game(t, i, &R->games[i], R->playouts, R->explore,
				  &R->per_game[i]);
	}
	return NULL;
}

static enum tp_status run_parallel(struct run *R, void *(*fn)(void *),
				   struct tp_error *err)
{
	struct job jobs[64];
	pthread_t th[64];
	uint32_t nt = R->nt;

	R->next = 0;
	for (uint32_t i = 0; i < nt; i++) {
		jobs[i].R = R;
		jobs[i].t = &R->tc[i];
		R->tc[i].st = TP_OK;
	}
	if (nt == 1) {
		fn(&jobs[0]);
	} else {
		for (uint32_t i = 0; i < nt; i++)
			if (pthread_create(&th[i], NULL, fn, &jobs[i])) {
				for (uint32_t k = 0; k < i; k++)
					pthread_join(th[k], NULL);
				return tp_error_set(err, TP_EINTERNAL,
						    "cannot start a thread");
			}
		for (uint32_t i = 0; i < nt; i++)
			pthread_join(th[i], NULL);
	}
	for (uint32_t i = 0; i < nt; i++)
		if (R->tc[i].st) {
			*err = R->tc[i].err;
			return R->tc[i].st;
		}
	return TP_OK;
}

/* Self-play of the training games (held == false) or of the held-out
 * games (true) into *out, in game order. */
static enum tp_status selfplay(struct run *R, bool held, uint32_t playouts,
			       bool explore, struct samples *out,
			       struct tp_error *err)
{
	enum tp_status st;

	R->per_game = calloc(R->n_games, sizeof(*R->per_game));
	if (!R->per_game)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	R->held_phase = held;
	R->playouts = playouts;
	R->explore = explore;
	st = run_parallel(R, play_thread, err);
	for (uint32_t i = 0; i < R->n_games; i++) {
		if (!st && samples_append(out, &R->per_game[i]))
			st = tp_error_set(err, TP_ENOMEM, "out of memory");
		samples_free(&R->per_game[i]);
	}
	free(R->per_game);
	R->per_game = NULL;
	return st;
}

/* ------------------------------------------------------------------ */
/* optimisation */

static void *grad_thread(void *arg)
{
	struct job *j = arg;
	struct run *R = j->R;
	struct tctx *t = j->t;
	uint32_t id = (uint32_t)(t - R->tc);
	uint32_t lo = R->batch_n * id / R->nt, hi = R->batch_n * (id + 1) / R->nt;

	memset(t->grad, 0, R->net->n_params * sizeof(float));
	t->loss_p = t->loss_v = t->loss_g = 0;
	t->n_loss = 0;
	for (uint32_t k = lo; k < hi && !t->st; k++) {
		const struct samples *S = R->batch_set;
		const struct sample *s = &S->s.v[R->batch_idx[k]];
		struct tp_gnn_input in;
		struct tp_gnn_targets tg;
		float l[3], gw[MAX_ACTIONS];
		double nw = 0;
		t->st = sample_input(t, &R->games[s->game], S, s, &in);
		if (t->st)
			break;
		/* the gain loss is a mean over the scored actions */
		for (uint32_t i = 0; i < s->n_act; i++)
			nw += S->gain_w.v[s->pi_off + i];
		for (uint32_t i = 0; i < s->n_act; i++)
			gw[i] = nw > 0 ? (float)(R->o->gain_weight *
						 S->gain_w.v[s->pi_off + i] /
						 nw)
				       : 0.0f;
		tg.pi = S->pi.v + s->pi_off;
		tg.value = s->z;
		tg.value_weight = R->o->value_weight;
		tg.gain = S->gain.v + s->pi_off;
		tg.gain_weight = gw;
		t->st = tp_gnn_train_targets(R->net, &in, &tg, &t->ad, t->grad,
					     l, &t->err);
		t->loss_p += l[0];
		t->loss_v += l[1];
		t->loss_g += R->o->gain_weight > 0 ? l[2] / R->o->gain_weight
						   : 0;
		t->n_loss++;
	}
	return NULL;
}

static enum tp_status grad_step(struct run *R, struct tp_gnn_adam *adam,
				const struct samples *S, const uint32_t *idx,
				uint32_t n, double *lp, double *lv, double *lg,
				struct tp_error *err)
{
	enum tp_status st;
	float *g0 = R->tc[0].grad;
	size_t np = R->net->n_params;
	uint32_t cnt = 0;

	R->batch_set = S;
	R->batch_idx = idx;
	R->batch_n = n;
	if ((st = run_parallel(R, grad_thread, err)))
		return st;
	*lp = *lv = *lg = 0;
	for (uint32_t i = 0; i < R->nt; i++) {
		*lp += R->tc[i].loss_p;
		*lv += R->tc[i].loss_v;
		*lg += R->tc[i].loss_g;
		cnt += R->tc[i].n_loss;
		if (i)
			for (size_t k = 0; k < np; k++)
				g0[k] += R->tc[i].grad[k];
	}
	if (cnt) {
		*lp /= cnt;
		*lv /= cnt;
		*lg /= cnt;
		for (size_t k = 0; k < np; k++)
			g0[k] /= (float)cnt;
	}
	tp_gnn_clip_grad(g0, np, R->o->clip);
	tp_gnn_adam_step(adam, R->net->w, g0);
	return TP_OK;
}

/* Held-out metrics of the current network. */
static enum tp_status evaluate(struct run *R, struct tp_train_epoch *ep,
			       struct tp_error *err)
{
	struct tctx *t = &R->tc[0];
	double ce = 0, cu = 0, mse = 0, top = 0;
	double gm = 0, gx = 0, gy = 0, gxx = 0, gyy = 0, gxy = 0, gs = 0;
	double gn = 0, gsn = 0;
	float pri[MAX_ACTIONS], q[MAX_ACTIONS], v;
	uint32_t n = 0;

	for (size_t i = 0; i < R->held.s.n; i++) {
		const struct sample *s = &R->held.s.v[i];
		const float *pi = R->held.pi.v + s->pi_off;
		struct tp_gnn_input in;
		enum tp_status st;
		uint32_t am = 0, at = 0;
		if ((st = sample_input(t, &R->games[s->game], &R->held, s, &in)))
			goto fail;
		if ((st = tp_gnn_infer_gains(R->net, &in, &t->ad, pri, q, &v,
					      &t->err)))
			goto fail;
		for (uint32_t k = 0; k < s->n_act; k++) {
			float y = R->held.gain.v[s->pi_off + k];
			if (!(R->held.gain_w.v[s->pi_off + k] > 0))
				continue;
			gm += (q[k] - y) * (q[k] - y);
			gx += q[k];
			gy += y;
			gxx += (double)q[k] * q[k];
			gyy += (double)y * y;
			gxy += (double)q[k] * y;
			gn++;
			/* better or worse than the state by over 1% */
			if (fabs(y) > tanh(TP_GNN_GAIN_SCALE * 0.01)) {
				gs += (q[k] > 0) == (y > 0);
				gsn++;
			}
		}
		for (uint32_t k = 0; k < s->n_act; k++) {
			if (pi[k] > 0) {
				ce -= pi[k] * log(fmax(pri[k], 1e-12));
				cu -= pi[k] * log(1.0 / s->n_act);
			}
			if (pri[k] > pri[am])
				am = k;
			if (pi[k] > pi[at])
				at = k;
		}
		top += am == at;
		mse += (v - s->z) * (v - s->z);
		n++;
		continue;
	fail:
		*err = t->err;
		return st;
	}
	ep->heldout_policy = n ? ce / n : 0;
	ep->heldout_uniform = n ? cu / n : 0;
	ep->heldout_value = n ? mse / n : 0;
	ep->heldout_top1 = n ? top / n : 0;
	ep->heldout_gain = gn ? gm / gn : 0;
	ep->heldout_gain_sign = gsn ? gs / gsn : 0;
	if (gn > 1) {
		double vx = gxx - gx * gx / gn, vy = gyy - gy * gy / gn;
		ep->heldout_gain_corr = vx > 0 && vy > 0
						? (gxy - gx * gy / gn) /
							  sqrt(vx * vy)
						: 0;
	}
	return TP_OK;
}

/* Per-feature mean and std over up to NORM_SAMPLES samples. */
static enum tp_status measure_norm(struct run *R, const struct samples *S,
				   struct tp_error *err)
{
	struct tp_gnn_net *net = R->net;
	const struct tp_gnn_config *c = &net->cfg;
	size_t nf = net->norm.n;
	double *sum = tp_calloc(nf, sizeof(double));
	double *sq = tp_calloc(nf, sizeof(double));
	double *cnt = tp_calloc(nf, sizeof(double));
	struct tctx *t = &R->tc[0];
	size_t step = S->s.n > NORM_SAMPLES ? S->s.n / NORM_SAMPLES : 1;
	enum tp_status st = TP_OK;

	if (!sum || !sq || !cnt) {
		st = tp_error_set(err, TP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < S->s.n; i += step) {
		struct tp_gnn_input in;
		const struct tp_tensor *blocks[4];
		size_t off = 0;
		if ((st = sample_input(t, &R->games[S->s.v[i].game], S,
				       &S->s.v[i], &in))) {
			*err = t->err;
			goto out;
		}
		{
			struct tp_tensor gx = tp_tensor_view(
				(float *)in.global_x, 1, c->global_in);
			blocks[0] = &in.group_x;
			blocks[1] = &in.device_x;
			blocks[2] = &in.action_x;
			blocks[3] = &gx;
			for (int b = 0; b < 4; b++) {
				const struct tp_tensor *x = blocks[b];
				for (uint32_t r = 0; r < x->rows; r++)
					for (uint32_t j = 0; j < x->cols; j++) {
						double v = *tp_tensor_at(x, r, j);
						sum[off + j] += v;
						sq[off + j] += v * v;
						cnt[off + j] += 1;
					}
				off += x->cols;
			}
			for (int e = 0; e < TP_GNN_ETYPES; e++) {
				const struct tp_tensor *x = &in.edge_x[e];
				for (uint32_t r = 0; r < x->rows; r++)
					for (uint32_t j = 0; j < x->cols; j++) {
						double v = *tp_tensor_at(x, r, j);
						sum[off + j] += v;
						sq[off + j] += v * v;
						cnt[off + j] += 1;
					}
				off += x->cols;
			}
		}
	}
	for (size_t j = 0; j < nf; j++) {
		double m = cnt[j] ? sum[j] / cnt[j] : 0;
		double var = cnt[j] ? sq[j] / cnt[j] - m * m : 1;
		double sd = var > 1e-6 ? sqrt(var) : 1.0;
		net->norm.mean[j] = (float)m;
		net->norm.std[j] = (float)sd;
	}
out:
	free(sum);
	free(sq);
	free(cnt);
	return st;
}

/* ------------------------------------------------------------------ */
/* checkpoints: magic, version, epochs done, Adam step, weights file
 * (length-prefixed), Adam m and v, CRC-32 */

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *p)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}
static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static enum tp_status ckpt_save(const char *path, const struct tp_gnn_net *net,
				const struct tp_gnn_adam *a, uint32_t epochs,
				struct tp_error *err)
{
	unsigned char *w, *b, *p;
	size_t wl, total;
	enum tp_status st = tp_gnn_weights_encode(net, &w, &wl, err);

	if (st)
		return st;
	total = 8 + 4 + 4 + 8 + 8 + wl + 8 * a->n + 4;
	b = malloc(total);
	if (!b) {
		free(w);
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	}
	memcpy(b, CKPT_MAGIC, 8);
	put32(b + 8, CKPT_VERSION);
	put32(b + 12, epochs);
	put64(b + 16, a->t);
	put64(b + 24, wl);
	memcpy(b + 32, w, wl);
	p = b + 32 + wl;
	for (size_t i = 0; i < a->n; i++, p += 4) {
		uint32_t u;
		memcpy(&u, &a->m[i], 4);
		put32(p, u);
	}
	for (size_t i = 0; i < a->n; i++, p += 4) {
		uint32_t u;
		memcpy(&u, &a->v[i], 4);
		put32(p, u);
	}
	put32(p, tp_gnn_crc32(b, total - 4));
	st = tp_file_write_atomic(path, (const char *)b, total, err);
	free(w);
	free(b);
	return st;
}

static enum tp_status ckpt_load(const char *path, struct tp_gnn_net **net,
				struct tp_gnn_adam *a, uint32_t *epochs,
				float lr, struct tp_error *err)
{
	char *data;
	const unsigned char *b;
	size_t len, wl;
	struct tp_gnn_widths w;
	enum tp_status st;

	if ((st = tp_file_read(path, (size_t)1 << 30, &data, &len, err)))
		return st;
	b = (const unsigned char *)data;
	tp_gnn_feature_widths(&w);
	if (len < 36 || memcmp(b, CKPT_MAGIC, 8) != 0) {
		st = tp_error_set(err, TP_EINPUT,
				  "not a tagplan training checkpoint (bad "
				  "magic or too short)");
		goto out;
	}
	if (get32(b + 8) != CKPT_VERSION) {
		st = tp_error_set(err, TP_EINPUT,
				  "checkpoint version %u; this tagplan reads %d",
				  get32(b + 8), CKPT_VERSION);
		goto out;
	}
	if (tp_gnn_crc32(b, len - 4) != get32(b + len - 4)) {
		st = tp_error_set(err, TP_EINPUT,
				  "checksum mismatch: the checkpoint is "
				  "corrupted");
		goto out;
	}
	wl = get64(b + 24);
	if (wl > len - 36) {
		st = tp_error_set(err, TP_EINPUT, "truncated checkpoint");
		goto out;
	}
	*net = tp_gnn_weights_decode(path, b + 32, wl, &w, err);
	if (!*net) {
		st = err->status;
		goto out;
	}
	if (len != 36 + wl + 8 * (*net)->n_params) {
		tp_gnn_net_free(*net);
		*net = NULL;
		st = tp_error_set(err, TP_EINPUT,
				  "checkpoint size does not match its network");
		goto out;
	}
	if ((st = tp_gnn_adam_init(a, (*net)->n_params, lr, err)))
		goto out;
	a->t = get64(b + 16);
	for (size_t i = 0; i < a->n; i++) {
		uint32_t u = get32(b + 32 + wl + 4 * i);
		memcpy(&a->m[i], &u, 4);
		u = get32(b + 32 + wl + 4 * (a->n + i));
		memcpy(&a->v[i], &u, 4);
	}
	*epochs = get32(b + 12);
out:
	if (st)
		tp_error_set_file(err, path);
	free(data);
	return st;
}

/* ------------------------------------------------------------------ */

static enum tp_status refresh_prior(struct run *R, struct tp_error *err)
{
	struct tp_gnn_net *copy;
	unsigned char *buf;
	size_t len;
	struct tp_gnn_widths w;
	enum tp_status st;

	/* self-play threads read a frozen copy of the network */
	for (uint32_t i = 0; i < R->nt; i++) {
		struct tctx *t = &R->tc[i];
		if (t->gp && t->gscratch) {
			struct tp_prior_provider pp;
			tp_gnn_prior_provider(t->gp, &pp);
			pp.scratch_free(pp.ctx, t->gscratch);
		}
		t->gscratch = NULL;
		t->gp = NULL;
	}
	tp_gnn_prior_free(R->gp);
	R->gp = NULL;
	if ((st = tp_gnn_weights_encode(R->net, &buf, &len, err)))
		return st;
	tp_gnn_feature_widths(&w);
	copy = tp_gnn_weights_decode("(training network)", buf, len, &w, err);
	free(buf);
	if (!copy)
		return err->status;
	R->gp = tp_gnn_prior_new(copy, "(training network)");
	if (!R->gp)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < R->nt; i++) {
		struct tp_prior_provider pp;
		tp_gnn_prior_provider(R->gp, &pp);
		R->tc[i].gp = R->gp;
		R->tc[i].gscratch = pp.scratch_new(pp.ctx);
		if (!R->tc[i].gscratch)
			return tp_error_set(err, TP_ENOMEM, "out of memory");
	}
	return TP_OK;
}

enum tp_status tp_train_run(const struct tp_train_options *o,
			    struct tp_train_result *res, struct tp_error *err)
{
	struct run R;
	struct tp_gnn_adam adam;
	struct tp_gnn_widths w;
	struct tp_gnn_config cfg;
	struct tp_rng rng;
	uint32_t start_epoch = 0, *idx = NULL;
	double t0 = now_s();
	enum tp_status st = TP_OK;

	memset(res, 0, sizeof(*res));
	memset(&R, 0, sizeof(R));
	memset(&adam, 0, sizeof(adam));
	if (o->games < 2 || o->threads < 1 || o->threads > 64 ||
	    o->epochs > TP_TRAIN_MAX_EPOCHS || o->batch < 1 ||
	    o->playouts < 2 || !(o->heldout >= 0 && o->heldout <= 0.5))
		return tp_error_set(err, TP_EUSAGE,
				    "training options out of range: games >= "
				    "2, 1..64 threads, epochs <= %d, batch >= "
				    "1, playouts >= 2, held-out 0..0.5",
				    TP_TRAIN_MAX_EPOCHS);
	R.o = o;
	R.nt = o->threads;
	R.n_games = o->games;
	pthread_mutex_init(&R.lock, NULL);
	R.games = calloc(o->games, sizeof(*R.games));
	R.tc = calloc(R.nt, sizeof(*R.tc));
	if (!R.games || !R.tc) {
		st = tp_error_set(err, TP_ENOMEM, "out of memory");
		goto out;
	}
	tp_gnn_feature_widths(&w);
	/* the network: fresh or from the checkpoint */
	if (o->resume) {
		if ((st = ckpt_load(o->resume, &R.net, &adam, &start_epoch, o->lr,
				    err)))
			goto out;
		logf_(o, "resumed from %s after %u epochs", o->resume,
		      start_epoch);
	} else {
		tp_gnn_config_default(&cfg, w.group, w.device, w.action,
				      w.global, w.edge);
		if (o->hidden)
			cfg.hidden = o->hidden;
		if (o->layers)
			cfg.layers = o->layers;
		cfg.head_hidden = cfg.hidden;
		tp_rng_seed(&rng, o->seed);
		R.net = tp_gnn_net_new(&cfg, &rng, err);
		if (!R.net) {
			st = err->status;
			goto out;
		}
		if ((st = tp_gnn_adam_init(&adam, R.net->n_params, o->lr, err)))
			goto out;
	}
	adam.lr = o->lr;
	adam.weight_decay = o->weight_decay;
	for (uint32_t i = 0; i < R.nt; i++) {
		struct tctx *t = &R.tc[i];
		t->o = o;
		t->games = R.games;
		t->n_games = o->games;
		tp_plan_init(&t->plan);
		tp_report_init(&t->rep);
		tp_ad_init(&t->ad);
		t->grad = tp_calloc(R.net->n_params, sizeof(float));
		if (!t->grad) {
			st = tp_error_set(err, TP_ENOMEM, "out of memory");
			goto out;
		}
	}
	/* the corpus; held-out games are every k-th */
	for (uint32_t i = 0; i < o->games; i++) {
		if ((st = build_game(&R, i, err))) {
			tp_error_set_file(err, "");
			goto out;
		}
		R.games[i].heldout =
			o->heldout > 0 &&
			(i % (uint32_t)(1.0 / o->heldout + 0.5)) ==
				(uint32_t)(1.0 / o->heldout + 0.5) - 1;
	}
	{
		uint32_t nh = 0;
		struct tp_sim_params pa;
		tp_sim_params_default(&pa);
		for (uint32_t i = 0; i < o->games; i++)
			nh += R.games[i].heldout;
		logf_(o, "corpus: %u games (%u held out), e.g. %s; gradient "
			 "buckets of %.6g MB",
		      o->games, nh, R.games[0].desc,
		      (o->grad_bucket_bytes > 0 ? o->grad_bucket_bytes
						: pa.grad_bucket_bytes) / 1e6);
	}
	/* held-out targets: a stronger uniform search (2x playouts) */
	R.epoch = 0;
	if ((st = selfplay(&R, true, 2 * o->playouts, false, &R.held, err)))
		goto out;
	for (uint32_t e = start_epoch; e < o->epochs; e++) {
		struct tp_train_epoch *ep = &res->epoch[res->epochs_done];
		double te = now_s(), lp = 0, lv = 0, lg = 0;
		uint32_t steps, nbuf;
		const struct samples *buf;
		struct samples all;

		memset(ep, 0, sizeof(*ep));
		ep->epoch = e;
		R.epoch = e + 1;
		if (e > 0 && (st = refresh_prior(&R, err)))
			goto out;
		samples_free(&R.prev);
		R.prev = R.cur;
		memset(&R.cur, 0, sizeof(R.cur));
		if ((st = selfplay(&R, false, o->playouts, true, &R.cur, err)))
			goto out;
		if (e == 0 && !o->resume &&
		    (st = measure_norm(&R, &R.cur, err)))
			goto out;
		/* the buffer: this epoch's and the previous epoch's games */
		memset(&all, 0, sizeof(all));
		if (samples_append(&all, &R.prev) ||
		    samples_append(&all, &R.cur)) {
			samples_free(&all);
			st = tp_error_set(err, TP_ENOMEM, "out of memory");
			goto out;
		}
		buf = &all;
		nbuf = (uint32_t)buf->s.n;
		steps = o->steps ? o->steps
				 : (uint32_t)(2 * (size_t)R.cur.s.n / o->batch + 1);
		free(idx);
		idx = tp_calloc(nbuf ? nbuf : 1, sizeof(uint32_t));
		if (!idx) {
			samples_free(&all);
			st = tp_error_set(err, TP_ENOMEM, "out of memory");
			goto out;
		}
		tp_rng_seed(&rng, o->seed ^ (0xA5A5A5A5ull + e));
		for (uint32_t i = 0; i < nbuf; i++)
			idx[i] = i;
		for (uint32_t s = 0, pos = nbuf; s < steps && nbuf; s++) {
			uint32_t n = o->batch < nbuf ? o->batch : nbuf;
			double a, b, c;
			if (pos + n > nbuf) { /* reshuffle */
				for (uint32_t i = nbuf - 1; i > 0; i--) {
					uint32_t j = (uint32_t)tp_rng_below(
						&rng, i + 1);
					uint32_t x = idx[i];
					idx[i] = idx[j];
					idx[j] = x;
				}
				pos = 0;
			}
			if ((st = grad_step(&R, &adam, buf, idx + pos, n, &a, &b,
					    &c, err))) {
				samples_free(&all);
				goto out;
			}
			pos += n;
			/* report the mean over the last quarter of the steps */
			if (4 * s >= 3 * steps) {
				lp += a;
				lv += b;
				lg += c;
				ep->samples++;
			}
		}
		if (ep->samples) {
			ep->train_policy = lp / ep->samples;
			ep->train_value = lv / ep->samples;
			ep->train_gain = lg / ep->samples;
		}
		ep->samples = (uint32_t)R.cur.s.n;
		samples_free(&all);
		if ((st = evaluate(&R, ep, err)))
			goto out;
		ep->seconds = now_s() - te;
		res->epochs_done++;
		logf_(o,
		      "epoch %u/%u: %u samples, %u steps; train policy %.3f "
		      "value %.4f gain %.4f; held-out policy %.3f (uniform "
		      "%.3f) top-1 %.0f%% value %.4f gain %.4f (corr %.2f, "
		      "signs %.0f%%); %.0f s",
		      e + 1, o->epochs, ep->samples, steps, ep->train_policy,
		      ep->train_value, ep->train_gain, ep->heldout_policy,
		      ep->heldout_uniform, 100 * ep->heldout_top1,
		      ep->heldout_value, ep->heldout_gain,
		      ep->heldout_gain_corr, 100 * ep->heldout_gain_sign,
		      ep->seconds);
		R.net->meta.epochs = e + 1;
		if (o->checkpoint &&
		    (st = ckpt_save(o->checkpoint, R.net, &adam, e + 1, err)))
			goto out;
		if (o->stop && *o->stop) {
			res->interrupted = true;
			break;
		}
	}
	res->seconds = now_s() - t0;
	for (uint32_t i = 0; i < R.nt; i++) {
		res->playouts += R.tc[i].playouts;
		res->simulations += R.tc[i].sims;
	}
	if (o->out) {
		struct tp_gnn_meta *m = &R.net->meta;
		const struct tp_train_epoch *last =
			res->epochs_done ? &res->epoch[res->epochs_done - 1]
					 : NULL;
		m->seed = o->seed;
		m->games = o->games;
		m->samples = last ? last->samples : 0;
		m->train_loss = last ? (float)last->train_policy : 0;
		m->heldout_loss = last ? (float)last->heldout_policy : 0;
		m->train_seconds = res->seconds;
		snprintf(m->version, sizeof(m->version), "%s", TP_VERSION);
		snprintf(m->note, sizeof(m->note), "%s", o->note ? o->note : "");
		if ((st = tp_gnn_weights_save(R.net, o->out, err)))
			goto out;
	}
out:
	free(idx);
	for (uint32_t i = 0; R.tc && i < R.nt; i++)
		tctx_release(&R.tc[i]);
	tp_gnn_prior_free(R.gp);
	for (uint32_t i = 0; R.games && i < o->games; i++)
		game_release(&R.games[i]);
	samples_free(&R.cur);
	samples_free(&R.prev);
	samples_free(&R.held);
	tp_gnn_adam_release(&adam);
	tp_gnn_net_free(R.net);
	free(R.games);
	free(R.tc);
	pthread_mutex_destroy(&R.lock);
	return st;
}
