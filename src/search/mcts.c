/*
 * mcts.c - the tree search: PUCT over priors, expansion, evaluation by
 * the evaluator (cached), backup, virtual loss, worker threads, rounds.
 *
 * Level 0 of a tree decides the global settings, level g + 1 group g.
 * The state of a node is its path's decisions on top of the round's
 * incumbent (the best decision vector known when the round started), so
 * every node is a complete plan and its leaf is scored directly (no
 * rollout), as in TAG.  A round ends soon after the incumbent improves;
 * the next tree starts from the new incumbent, so the search keeps
 * refining the best plan.
 *
 * The tree lives in chunks of an arena (uint32_t node indices); when the
 * arena budget runs out, expansion stops and playouts keep scoring leaves.
 * One mutex guards the tree; evaluation runs outside it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "search_int.h"

#define CHUNK_BITS 10
#define CHUNK (1u << CHUNK_BITS)
#define MAX_CHILDREN SEARCH_MAX_ACTIONS
#define MAX_DEPTH (TP_COARSEN_MAX_GROUPS + 2)
#define FPU_REDUCTION 0.05
#define VIRTUAL_LOSS 1.0

struct node {
	uint32_t parent;
	uint32_t first_child; /* TP_NONE until expanded */
	uint16_t n_children;
	uint8_t expanding;
	uint8_t terminal;
	uint32_t visits;
	uint32_t vloss;
	float prior;
	double wsum;
	struct tp_action action;
};

struct tree {
	struct tp_arena arena;
	struct node **chunks;
	uint32_t max_chunks, n_chunks;
	uint32_t n_nodes;
	bool full;
};

struct mcts {
	struct sctx *s;
	pthread_mutex_t lock;
	struct tree tree;
	uint32_t round;
	uint64_t round_playouts;
	struct tp_globals inc_gl;
	struct tp_decision *inc_dec;
	bool inc_feasible;
	double inc_time, ref_time;
	double cpuct;
	uint32_t min_round;
	bool uniform; /* STALL_UNIFORM: this tree asks no provider */
	size_t budget;
};

/* The network's priors over one level's actions in the round's
 * incumbent (level_priors). */
struct level_prior {
	uint32_t n;     /* actions; 0 = not asked yet this round */
	struct tp_action acts[MAX_CHILDREN];
	float pri[MAX_CHILDREN];
};

struct pworker {
	struct worker w;
	struct mcts *M;
	struct tp_action *acts;
	struct tp_prior_action *pacts;
	float *priors;
	bool *decided;
	/* level_priors: the round they belong to, its incumbent, and one
	   entry per level (K + 1) */
	uint32_t lp_round;
	struct tp_globals lp_gl;
	struct tp_decision *lp_dec;
	struct level_prior *lp;
	uint32_t path[MAX_DEPTH + 1];
	pthread_t thread;
	enum tp_status st;
};

static inline struct node *N(struct tree *t, uint32_t i)
{
	return &t->chunks[i >> CHUNK_BITS][i & (CHUNK - 1)];
}

static void tree_reset(struct tree *t, size_t budget)
{
	tp_arena_release(&t->arena);
	tp_arena_init(&t->arena, budget);
	memset(t->chunks, 0, t->max_chunks * sizeof(*t->chunks));
	t->n_chunks = 0;
	t->n_nodes = 0;
	t->full = false;
}

/* cnt consecutive nodes (within one chunk); TP_NONE when the budget is
 * spent. */
static uint32_t tree_alloc(struct tree *t, uint32_t cnt)
{
	uint32_t first = t->n_nodes;

	if (cnt == 0 || cnt > CHUNK || t->full)
		return TP_NONE;
	if ((first & (CHUNK - 1)) + cnt > CHUNK)
		first = (first + CHUNK - 1) & ~(CHUNK - 1);
	if ((first >> CHUNK_BITS) >= t->n_chunks) {
		uint32_t c = first >> CHUNK_BITS;
		if (c >= t->max_chunks) {
			t->full = true;
			return TP_NONE;
		}
		t->chunks[c] = tp_arena_array(&t->arena, CHUNK,
					      sizeof(struct node));
		if (!t->chunks[c]) {
			t->full = true;
			return TP_NONE;
		}
		t->n_chunks = c + 1;
	}
	t->n_nodes = first + cnt;
	return first;
}

static void node_init(struct node *n, uint32_t parent)
{
	memset(n, 0, sizeof(*n));
	n->parent = parent;
	n->first_child = TP_NONE;
}

/* Start a round from the current best decision vector (M->lock held). */
static void round_start(struct mcts *M)
{
	struct sctx *s = M->s;
	uint32_t root;

	pthread_mutex_lock(&s->lock);
	M->inc_gl = s->bestdec.gl;
	memcpy(M->inc_dec, s->bestdec.dec, s->K * sizeof(*M->inc_dec));
	M->inc_feasible = s->bestdec.feasible;
	M->inc_time = s->bestdec.time;
	pthread_mutex_unlock(&s->lock);
	M->ref_time = M->inc_time;
	tree_reset(&M->tree, M->budget);
	root = tree_alloc(&M->tree, 1);
	if (root != TP_NONE)
		node_init(N(&M->tree, root), TP_NONE);
	M->round++;
	M->round_playouts = 0;
	s->res->rounds++;
}

static uint32_t select_child(struct mcts *M, struct node *nd,
			     struct tp_rng *rng)
{
	struct tree *t = &M->tree;
	double nsum = (double)nd->visits + nd->vloss;
	double parent_q = nd->visits ? nd->wsum / nd->visits : 0;
	double fpu = parent_q - FPU_REDUCTION;
	double c = M->cpuct * sqrt(nd->n_children / 10.0 + 0.5);
	double sq = sqrt(nsum + 1), best = -INFINITY;
	uint32_t pick = nd->first_child;

	for (uint32_t i = 0; i < nd->n_children; i++) {
		uint32_t ci = nd->first_child + i;
		struct node *ch = N(t, ci);
		double n = (double)ch->visits + ch->vloss, q, u;
		q = n > 0 ? (ch->wsum - VIRTUAL_LOSS * ch->vloss) / n : fpu;
		u = q + c * ch->prior * sq / (1 + n) +
		    1e-9 * tp_rng_uniform(rng);
		if (u > best) {
			best = u;
			pick = ci;
		}
	}
	return pick;
}

static void apply(struct sctx *s, uint32_t level, const struct tp_action *a,
		  struct tp_globals *gl, struct tp_decision *dec)
{
	if (level == 0)
		*gl = a->g;
	else if (level <= s->K)
		tp_space_apply(&s->space, level - 1, a, gl, dec);
}

/*
 * Level priors (issue 27): a node's priors are the provider's priors over
 * its level's actions in the round's incumbent (the state of the node
 * that keeps every decision above it), looked up action by action;
 * actions not in that list get the mean prior of those that are, and the
 * provider is asked about the node itself only when none is.  The tree's
 * nodes are the incumbent with a few decisions changed, so a level's
 * candidates are mostly the same: one forward pass per level and round
 * (often an answer the sweeps already cached, guide.c) instead of one per
 * expansion.  Measured (src/gnn/README, "Equal wall-clock time"): on
 * Llama-3-8B on 128 GPUs, 1,000 playouts, about 140 provider calls
 * instead of 540 and twice the playouts per second, the same plan; on
 * seven of bench_gnn's equal-time cases x 3 seeds the same plans as
 * asking every node on all 21 runs at 200 playouts and on 20 at 1,000
 * (GPT-3 13B seed 3: 2.391 s against 2.578 s).  Asking about the node
 * when fewer than half (a fifth) of its actions matched: the same plans,
 * twice the calls on VGG-16 (187 against 92).  options.node_priors asks
 * about every node as before.
 */
static enum tp_status level_priors(struct pworker *pw, uint32_t level,
				   uint32_t n, bool *done)
{
	struct worker *w = &pw->w;
	struct sctx *s = w->s;
	struct level_prior *L = &pw->lp[level];
	uint32_t matched = 0;
	double msum = 0, sum = 0;

	*done = false;
	if (!L->n) {
		struct search_prior_buf b = {pw->pacts, pw->decided, L->pri,
					     NULL, true};
		uint32_t m = tp_space_level_actions(&s->space, level,
						    &pw->lp_gl, pw->lp_dec,
						    L->acts, MAX_CHILDREN,
						    w->sscr);
		struct search_prior_ask q = {level, L->acts, m, &pw->lp_gl,
					     pw->lp_dec, false};
		enum tp_status st = search_priors(w, s->o->prior, &q, &b);
		if (st)
			return st;
		L->n = m ? m : TP_NONE; /* TP_NONE: asked, no actions */
	}
	for (uint32_t i = 0; i < n; i++) {
		pw->priors[i] = -1;
		for (uint32_t j = 0; L->n != TP_NONE && j < L->n; j++)
			if (!memcmp(&pw->acts[i], &L->acts[j],
				    sizeof(L->acts[j]))) {
				pw->priors[i] = L->pri[j];
				msum += L->pri[j];
				matched++;
				break;
			}
	}
	if (!matched || msum <= 0)
		return TP_OK;
	for (uint32_t i = 0; i < n; i++) {
		if (pw->priors[i] < 0)
			pw->priors[i] = (float)(msum / matched);
		sum += pw->priors[i];
	}
	for (uint32_t i = 0; i < n; i++)
		pw->priors[i] = (float)(pw->priors[i] / sum);
	*done = true;
	return TP_OK;
}

/* Priors of the candidate actions pw->acts[0 .. n) (guide.c); uniform at
 * level 0, the global settings (GLOBALS_UNIFORM): the provider's priors
 * there steered the tree away from settings the seeds and sweeps had not
 * tried.  On bench_gnn (10 cases x 3 seeds) asking it there reached the
 * 2% mark 2.43x sooner than the unguided search, uniform 3.63x (seeds
 * 4-6: 2.51x and 3.35x; Llama-2-7B on l4:4 a100:2 in 1,294 playouts
 * instead of >20,000); guided plans 0.1% slower at 50 playouts, 0.2%
 * faster at 200, as fast at 1,000, 0.3% faster at 5,000; (a) 23 of 30
 * either way.  The guided sweeps never asked it about global changes
 * (they score all of them). */
static enum tp_status priors(struct pworker *pw, uint32_t level, uint32_t n,
			     const struct tp_globals *gl, bool fresh)
{
	struct search_prior_buf b = {pw->pacts, pw->decided, pw->priors,
				     NULL, false};
	const struct tp_prior_provider *pp =
		level && !pw->M->uniform ? pw->w.s->o->prior : NULL;
	struct search_prior_ask q;

	if (!pw->w.s->o->node_priors && pp && pp->evaluate && n >= 2) {
		bool done;
		enum tp_status st = level_priors(pw, level, n, &done);
		if (st || done)
			return st;
		fresh = false; /* w->plan now holds the incumbent's state */
	}
	q.level = level;
	q.acts = pw->acts;
	q.n = n;
	q.gl = gl;
	q.dec = pw->w.dec;
	q.fresh = fresh;
	return search_priors(&pw->w, pp, &q, &b);
}

static enum tp_status playout(struct pworker *pw)
{
	struct mcts *M = pw->M;
	struct worker *w = &pw->w;
	struct sctx *s = w->s;
	struct tree *t = &M->tree;
	struct tp_globals gl;
	struct evalres er;
	uint32_t round, level = 0, depth = 0, cur, n = 0;
	bool claim = false, terminal = false;
	double v, ref;
	enum tp_status st;

	pthread_mutex_lock(&M->lock);
	round = M->round;
	ref = M->ref_time;
	gl = M->inc_gl;
	memcpy(w->dec, M->inc_dec, s->K * sizeof(*w->dec));
	if (pw->lp_round != round) {
		pw->lp_round = round;
		pw->lp_gl = gl;
		memcpy(pw->lp_dec, w->dec, s->K * sizeof(*w->dec));
		for (uint32_t l = 0; l <= s->K; l++)
			pw->lp[l].n = 0;
	}
	cur = 0;
	if (t->n_nodes == 0) {
		/* not even a root fits in the budget: score the incumbent */
		s->res->tree_full = true;
		pthread_mutex_unlock(&M->lock);
		st = sctx_eval(w, &gl, w->dec, "search", 0, &er);
		if (!st)
			atomic_fetch_add(&s->playouts, 1);
		return st;
	}
	pw->path[depth++] = cur;
	N(t, cur)->vloss++;
	while (N(t, cur)->first_child != TP_NONE && N(t, cur)->n_children) {
		cur = select_child(M, N(t, cur), &w->rng);
		apply(s, level, &N(t, cur)->action, &gl, w->dec);
		level++;
		pw->path[depth++] = cur;
		N(t, cur)->vloss++;
	}
	{
		struct node *nd = N(t, cur);
		terminal = level > s->K;
		if (terminal)
			nd->terminal = 1;
		if (nd->first_child == TP_NONE && !nd->expanding &&
		    !nd->terminal && !t->full) {
			nd->expanding = 1;
			claim = true;
		}
	}
	pthread_mutex_unlock(&M->lock);

	st = sctx_eval(w, &gl, w->dec, "search", sctx_best_cutoff(s), &er);
	if (st)
		goto fail;
	v = er.ok ? tp_search_value(ref, er.feasible, er.time, er.over) : -1;

	/* priors from the simulated state when there is one (the network
	   reads the simulated load and memory) */
	if (claim) {
		n = tp_space_level_actions(&s->space, level, &gl, w->dec,
					   pw->acts, MAX_CHILDREN, w->sscr);
		st = priors(pw, level, n, &gl, er.fresh);
		if (st)
			goto fail;
	}

	pthread_mutex_lock(&M->lock);
	if (round == M->round) {
		if (claim) {
			struct node *nd = N(t, cur);
			uint32_t first = n ? tree_alloc(t, n) : TP_NONE;
			nd = N(t, cur); /* chunks never move; for clarity */
			if (first != TP_NONE) {
				for (uint32_t i = 0; i < n; i++) {
					struct node *ch = N(t, first + i);
					node_init(ch, cur);
					ch->action = pw->acts[i];
					ch->prior = pw->priors[i];
				}
				nd->n_children = (uint16_t)n;
				nd->first_child = first;
			} else if (!n) {
				nd->terminal = 1;
			}
			nd->expanding = 0;
		}
		for (uint32_t i = 0; i < depth; i++) {
			struct node *nd = N(t, pw->path[i]);
			nd->visits++;
			nd->wsum += v;
			nd->vloss--;
		}
		M->round_playouts++;
		s->res->tree_nodes = t->n_nodes > s->res->tree_nodes
					     ? t->n_nodes
					     : s->res->tree_nodes;
		if (t->full)
			s->res->tree_full = true;
		/* a better incumbent: restart soon from it */
		if (M->round_playouts >= M->min_round) {
			bool better;
			pthread_mutex_lock(&s->lock);
			better = s->bestdec.have &&
				 sctx_better(s->bestdec.feasible,
					     s->bestdec.time, s->bestdec.over,
					     M->inc_feasible,
					     M->inc_time * (1 - 1e-3), 0);
			pthread_mutex_unlock(&s->lock);
			if (better)
				round_start(M);
		}
	}
	pthread_mutex_unlock(&M->lock);
	atomic_fetch_add(&s->playouts, 1);
	return TP_OK;
fail:
	pthread_mutex_lock(&M->lock);
	if (round == M->round) {
		N(t, cur)->expanding = 0;
		for (uint32_t i = 0; i < depth; i++)
			N(t, pw->path[i])->vloss--;
	}
	pthread_mutex_unlock(&M->lock);
	return st;
}

static void *thread_main(void *arg)
{
	struct pworker *pw = arg;
	struct sctx *s = pw->w.s;

	while (!sctx_should_stop(s)) {
		pw->st = playout(pw);
		if (pw->st) {
			pthread_mutex_lock(&s->lock);
			if (!s->error) {
				s->error = pw->st;
				s->err = pw->w.err;
			}
			pthread_mutex_unlock(&s->lock);
			atomic_store(&s->stop, 1);
			break;
		}
		if (pw->w.id == 0)
			sctx_progress(s, false);
	}
	return NULL;
}

static int pworker_init(struct pworker *pw, struct mcts *M, uint32_t id)
{
	struct sctx *s = M->s;

	memset(pw, 0, sizeof(*pw));
	pw->M = M;
	if (worker_init(&pw->w, s, id))
		return -1;
	pw->acts = tp_calloc(MAX_CHILDREN, sizeof(*pw->acts));
	pw->pacts = tp_calloc(MAX_CHILDREN, sizeof(*pw->pacts));
	pw->priors = tp_calloc(MAX_CHILDREN, sizeof(*pw->priors));
	pw->decided = tp_calloc(s->K, sizeof(*pw->decided));
	pw->lp_dec = tp_calloc(s->K, sizeof(*pw->lp_dec));
	pw->lp = tp_calloc(s->K + 1, sizeof(*pw->lp));
	return pw->acts && pw->pacts && pw->priors && pw->decided &&
			       pw->lp_dec && pw->lp
		       ? 0
		       : -1;
}

static void pworker_release(struct pworker *pw)
{
	worker_release(&pw->w);
	free(pw->acts);
	free(pw->pacts);
	free(pw->priors);
	free(pw->decided);
	free(pw->lp_dec);
	free(pw->lp);
}

/*
 * STALL_UNIFORM (issue 27).  In a guided search limited by time alone
 * (sctx_time_only), a tree phase (one per stage, search.c) that follows
 * one which found nothing better than the plan it started from (by the
 * round's 0.1%) runs with uniform priors and asks the provider nothing:
 * the unguided search's tree.  A tree phase that improves, with either
 * priors, lets the next one take the provider's again.  Every other
 * search (self-play training, playout budgets) is unchanged.
 * Why: on GPT-3 175B on bench_gnn's 1,024 mixed GPUs both searches reach
 * about 63 s by 1.5 s of CPU; from there the unguided tree found single
 * changes of the first groups worth 4-7 s within 50 playouts (62.73 ->
 * 55.64 s: the first group and all after it onto the 384 A100s at tp
 * 8; 58.89 s: the first group's recomputation alone), where the guided
 * tree, from the plan its sweeps had reached by then, found nothing in
 * every later stage and the guided search ended at 61-63 s on every
 * seed against 46.6-48.6 s (src/gnn/README, "Equal time").  Measured on
 * that case, seeds 1-3, 10 s of CPU, guided side: 61.0 / 62.56 / 61.08
 * s before; uniform tree priors in every time-only tree 50.91 / 47.75 /
 * 61.92 s (but tests/test_anytime.c: 6 of 6 searches by time slower than
 * the playout-limited one they passed, GPT-3 1.3B on 44 GPUs, where the
 * first trees' priors count); a quarter of uniform mixed into the
 * priors 61.0 / 62.56 / 61.08 s (no change); trees alternately uniform
 * and guided 48.98 / 48.2 / 47.1 s but 4 anytime violations; uniform
 * after a stalled tree (this) 49.53 / 49.11 / 47.13 s and no anytime
 * violation (the first trees there improve).  Switching to uniform
 * within a tree after 64 (128) playouts without improvement: 49.69
 * (49.04) s on seed 1, no better at 3 s.  bench_gnn's equal-time table,
 * nine cases x seeds 1-3 against main without it (src/gnn/README, "Equal
 * time"): 10 s 1.0072 -> 0.9803, 3 s unchanged against a common
 * unguided reference, 1 s 0.9788 -> 0.9793 (Llama-3-8B seed 1, 4.931
 * -> 4.98-5.00 s: a uniform tree within its first second).
 */
static bool stall_uniform(const struct sctx *s)
{
	return s->o->prior && sctx_time_only(s) && s->tree_stalled;
}

enum tp_status search_mcts(struct sctx *s)
{
	struct mcts M;
	struct pworker *pws = NULL;
	uint32_t nt = s->o->threads ? s->o->threads : 1, started = 0;
	enum tp_status st = TP_OK;
	bool start_feasible;
	double start_time;

	if (!s->bestdec.have)
		return TP_OK;
	memset(&M, 0, sizeof(M));
	M.s = s;
	M.cpuct = 0.5;
	M.min_round = 50 + 4 * s->K;
	M.budget = s->o->tree_bytes ? s->o->tree_bytes : (size_t)256 << 20;
	M.tree.max_chunks =
		(uint32_t)(M.budget / ((size_t)CHUNK * sizeof(struct node))) +
		1;
	M.tree.chunks = tp_calloc(M.tree.max_chunks, sizeof(*M.tree.chunks));
	M.inc_dec = tp_calloc(s->K, sizeof(*M.inc_dec));
	pws = tp_calloc(nt, sizeof(*pws));
	if (!M.tree.chunks || !M.inc_dec || !pws ||
	    pthread_mutex_init(&M.lock, NULL)) {
		free(M.tree.chunks);
		free(M.inc_dec);
		free(pws);
		return TP_ENOMEM;
	}
	tp_arena_init(&M.tree.arena, M.budget);
	M.uniform = stall_uniform(s);
	s->uniform_trees += M.uniform;
	pthread_mutex_lock(&M.lock);
	round_start(&M);
	pthread_mutex_unlock(&M.lock);
	/* the plan this tree phase starts from (STALL_UNIFORM) */
	start_feasible = M.inc_feasible;
	start_time = M.inc_time;
	s->phase = "search";
	for (uint32_t i = 0; i < nt; i++) {
		if (pworker_init(&pws[i], &M, i)) {
			pworker_release(&pws[i]);
			st = TP_ENOMEM;
			break;
		}
		started++;
	}
	if (!st) {
		for (uint32_t i = 1; i < started; i++)
			if (pthread_create(&pws[i].thread, NULL, thread_main,
					   &pws[i])) {
				/* run with the threads we have */
				for (uint32_t j = i; j < started; j++)
					pworker_release(&pws[j]);
				started = i;
				break;
			}
		thread_main(&pws[0]);
		for (uint32_t i = 1; i < started; i++)
			pthread_join(pws[i].thread, NULL);
	}
	for (uint32_t i = 0; i < started; i++)
		pworker_release(&pws[i]);
	pthread_mutex_lock(&s->lock);
	s->tree_stalled = !sctx_better(s->bestdec.feasible, s->bestdec.time,
				       s->bestdec.over, start_feasible,
				       start_time * (1 - 1e-3), 0);
	pthread_mutex_unlock(&s->lock);
	if (!st && s->error)
		st = s->error;
	pthread_mutex_destroy(&M.lock);
	tp_arena_release(&M.tree.arena);
	free(M.tree.chunks);
	free(M.inc_dec);
	free(pws);
	return st;
}
