/*
 * distil.c - distillation of long searches into self-play's policy
 * targets (train.h options distil_*; src/gnn/README, "Distillation").
 *
 * Self-play records targets from 8-odd playouts per level; nothing there
 * says where a long search ends.  A chosen game is planned once by the
 * search `tagplan plan` runs (tp_search_run: baselines, structured
 * seeds, sweeps, tree rounds; unguided, one thread, a playout budget, so
 * deterministic) on the game's own simulator, runtime and coarsening,
 * and its best decision vector (search.h best_gl, best_dec: the same
 * action space as the game's) is the path the game's self-play then
 * follows each epoch.  The answer itself may be a plan scored as is (a
 * baseline's, a mixed move's) that no decision vector describes; the
 * vector is the best one the search scored, and train.c logs both.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_int.h"

/* Candidates looked at to tell a choice past the tree's MAX_ACTIONS
 * from one that is no candidate at all (only on levels that missed). */
#define DISTIL_LOOK 1024

enum tp_status distil_search(struct tctx *t, struct game *g)
{
	struct distil_target *D = &g->dist;
	struct tp_search_simeval sev;
	struct tp_evaluator ev;
	struct tp_search_options so;
	struct tp_search_result res;
	double t0 = train_now();
	enum tp_status st;

	tp_search_sim_evaluator(&sev, g->sim, NULL, &ev);
	tp_search_options_default(&so);
	so.seed = g->seed;
	so.threads = 1;
	so.time_limit_s = 0;
	so.playouts = t->o->distil_playouts;
	so.compression = TP_COMPRESSION_OFF;
	so.groups = g->groups_asked;
	so.runtime = g->rt;
	so.bound_sim = g->sim;
	tp_search_result_init(&res);
	st = tp_search_run(&g->m, &g->c, &ev, &so, &res, &t->err);
	D->seconds = train_now() - t0;
	D->sims = res.simulations;
	if (st == TP_EINFEASIBLE) { /* nothing the runtime runs: no path */
		tp_error_clear(&t->err);
		st = TP_OK;
	}
	if (!st && res.have_plan) {
		D->answer_time = res.report.feasible
				     ? res.report.iteration_time_s
				     : INFINITY;
		snprintf(D->source, sizeof(D->source), "%s", res.source);
	}
	/* the same coarsening gives the same space (tp_space_init is a
	   function of model, cluster and groups): the vector is a state
	   of this game's levels */
	if (!st && res.best_gl && res.n_groups == g->g.n &&
	    tp_space_state_ok(&g->sp, res.best_gl, res.best_dec)) {
		D->dec = tp_calloc(g->g.n, sizeof(*D->dec));
		if (!D->dec)
			st = tp_error_set(&t->err, TP_ENOMEM, "out of memory");
		else {
			memcpy(D->dec, res.best_dec, g->g.n * sizeof(*D->dec));
			D->gl = *res.best_gl;
			D->have = true;
			D->answer = res.best_dec_answer;
			D->time = res.best_dec_feasible ? res.best_dec_time_s
							: INFINITY;
		}
	}
	tp_search_result_release(&res);
	return st;
}

/* Is candidate a of level the vector's choice? */
static bool is_target(const struct distil_target *D, uint32_t level,
		      const struct tp_action *a)
{
	if (level == 0)
		return !memcmp(&a->g, &D->gl, sizeof(D->gl));
	return !memcmp(&a->d, &D->dec[level - 1], sizeof(a->d));
}

/* Why the vector's choice is not a child of the level's node: a
 * candidate past the first MAX_ACTIONS, no candidate of the state, or
 * not valid in it (tp_space_state_ok, runnable under the runtime).
 * Uses t->dec (free between playouts). */
static enum tp_train_distil_level miss(struct tctx *t, struct game *g,
				       uint32_t level,
				       const struct tp_globals *gl,
				       const struct tp_decision *dec)
{
	const struct distil_target *D = &g->dist;
	const struct tp_globals *ngl = level == 0 ? &D->gl : gl;
	struct tp_action *look = malloc(DISTIL_LOOK * sizeof(*look));
	uint32_t n, K = g->g.n;
	bool ok;

	memcpy(t->dec, dec, K * sizeof(*dec));
	if (level > 0)
		t->dec[level - 1] = D->dec[level - 1];
	ok = tp_space_state_ok(&g->sp, ngl, t->dec) &&
	     tp_space_runnable(&g->sp, ngl, t->dec, t->sscr, NULL, 0);
	if (look) {
		n = tp_space_level_actions(&g->sp, level, gl, dec, look,
					   DISTIL_LOOK, t->sscr);
		for (uint32_t i = 0; i < n; i++)
			if (is_target(D, level, &look[i])) {
				free(look);
				return ok ? TP_TRAIN_DISTIL_BEYOND
					  : TP_TRAIN_DISTIL_INVALID;
			}
		free(look);
	}
	return ok ? TP_TRAIN_DISTIL_OUTSIDE : TP_TRAIN_DISTIL_INVALID;
}

enum distil_move distil_step(struct tctx *t, struct game *g, uint32_t level,
			     uint32_t root, float *pi, struct tp_globals *gl,
			     struct tp_decision *dec, uint32_t *child)
{
	struct distil_target *D = &g->dist;
	const struct snode *p = &t->nodes.v[root];
	const struct snode *c = &t->nodes.v[p->first_child];
	uint32_t kind = level > 0, nm = 0, best = UINT32_MAX;
	double w = t->o->distil_weight, own = 0, mixed = 0;
	enum tp_train_distil_level why;

	if (!D->have || level > g->g.n)
		return DISTIL_OWN;
	for (uint32_t i = 0; i < p->n_children; i++)
		nm += is_target(D, level, &c[i].action);
	if (nm) {
		/* the level's own target keeps 1 - w; w goes to the choice
		   (split between candidates that make the same change, as a
		   group decision and its suffix twin do here) */
		for (uint32_t i = 0; i < p->n_children; i++) {
			bool m = is_target(D, level, &c[i].action);
			if (pi) {
				own += m ? pi[i] : 0;
				pi[i] =
				    (float)((1 - w) * pi[i] + (m ? w / nm : 0));
				mixed += m ? pi[i] : 0;
			}
			if (m &&
			    (best == UINT32_MAX || (pi && pi[i] > pi[best])))
				best = i;
		}
		D->levels[kind][TP_TRAIN_DISTIL_MATCHED]++;
		D->kept += is_target(D, level, &c[0].action);
		D->target_pi += mixed;
		D->own_pi += own;
		*child = best;
		return DISTIL_FOLLOW;
	}
	why = miss(t, g, level, gl, dec);
	D->levels[kind][why]++;
	if (why == TP_TRAIN_DISTIL_INVALID)
		return DISTIL_OWN;
	if (level == 0)
		*gl = D->gl;
	else
		dec[level - 1] = D->dec[level - 1];
	return DISTIL_JUMP;
}
