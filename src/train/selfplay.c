/*
 * selfplay.c - self-play games: the generated (model, cluster) of each
 * game, the per-thread context, evaluation with a cache, the GNN's view
 * of a state, the self-play tree search that records training samples,
 * and the features of a stored sample (train_int.h).
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "train_int.h"

/* ------------------------------------------------------------------ */
/* games */


void game_release(struct game *g)
{
	tp_sim_free(g->sim);
	tp_space_release(&g->sp);
	tp_groups_release(&g->g);
	tp_cluster_release(&g->c);
	tp_model_release(&g->m);
	free(g->dec0);
	free(g->dist.dec);
}

/* ------------------------------------------------------------------ */
/* samples */



void samples_free(struct samples *S)
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
int samples_append(struct samples *A, const struct samples *B)
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

void tctx_release(struct tctx *t)
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
enum tp_status tctx_bind(struct tctx *t, struct game *g, bool sim)
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
	enum tp_status st;

	if (!t->gp || n < 2) {
		for (uint32_t i = 0; i < n; i++)
			t->priors[i] = 1.0f / (float)n;
		return TP_OK;
	}
	prior_state(t, level, n, acts, rep, &ps);
	st = tp_gnn_prior_eval(t->gp, t->gscratch, &ps, t->priors, &t->err);
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
	if (!t->nodes.v[cur].expanded && level <= K) {
		n = tp_space_level_actions(&g->sp, level, &gl, t->dec,
					   t->acts, MAX_ACTIONS, t->sscr);
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
		if (v > nd->vmax)
			nd->vmax = (float)v;
	}
	t->playouts++;
	return TP_OK;
}

/* The data-parallel incumbent of a game: all devices, tp 1, the fewest
 * micro-batches that fit; even shares (globals.even) under a runtime
 * that has no uneven ones, as the search's baselines
 * (search/baselines.c) start there. */
static enum tp_status game_incumbent(struct tctx *t)
{
	struct game *g = t->game;
	const struct tp_space *sp = &g->sp;
	bool have = false;

	tp_space_data_parallel(sp, g->dec0);
	g->ref = 0;
	for (uint32_t i = 0; i < sp->n_mb && i < 12; i++) {
		struct tp_globals gl = {
			.micro_batches = sp->mb_counts[i],
			.schedule = TP_SCHEDULE_1F1B,
			.even = tp_space_even_only(sp) ? 1 : 0};
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
 * visited; a distilled game toward its long search's decisions,
 * distil.c).
 */
enum tp_status play_game(struct tctx *t, uint32_t gi, struct game *g,
				uint32_t playouts, bool explore,
				struct samples *S)
{
	uint32_t K, root, level;
	struct tp_globals gl;
	struct tp_decision *dec;
	enum tp_status st;

	if ((st = tctx_bind(t, g, true)))
		return st;
	K = g->g.n;
	memset(g->dist.levels, 0, sizeof(g->dist.levels));
	g->dist.kept = 0;
	g->dist.target_pi = g->dist.own_pi = 0;
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
		/* a distilled game follows its long search's decisions
		 * (distil.c) where it can */
		if (g->dist.have) {
			uint32_t ch = 0;
			enum distil_move mv = distil_step(
				t, g, level, root, S->pi.v + S->s.v[si].pi_off,
				&gl, dec, &ch);
			if (mv == DISTIL_FOLLOW) {
				pick = p->first_child + ch;
				apply(level, &t->nodes.v[pick].action, &gl,
				      dec, K);
				root = pick;
				continue;
			}
			if (mv == DISTIL_JUMP) {
				/* off the tree: a new one from there */
				t->nodes.n = 0;
				root = new_node(t);
				if (root == UINT32_MAX) {
					st = tp_error_set(&t->err, TP_ENOMEM,
							  "out of memory");
					goto out;
				}
				continue;
			}
		}
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
out:
	free(dec);
	return st;
}

/* ------------------------------------------------------------------ */
/* features of a stored sample */

enum tp_status sample_input(struct tctx *t, struct game *g,
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
