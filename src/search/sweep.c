/*
 * sweep.c - the steepest-descent sweeps that polish the incumbent between
 * tree-search rounds (search_polish): single changes per group and level,
 * stacked changes, RELAX (one rung less recomputation everywhere), RUN
 * (a change of every group of a run of equal decisions), kicks of the
 * best plan (iterated local search), guided passes that ask the
 * prior provider which changes to try, and the gain statistics of the
 * benchmarks.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search_int.h"

/* ------------------------------------------------------------------ */
/* sweeps                                                              */

/* Over budget for the sweep phase (a share of the playouts/time)? */
static bool sweep_budget_spent(struct sctx *s, double share)
{
	const struct tp_search_options *o = s->o;

	if (sctx_should_stop(s))
		return true;
	/* a share of the current stage (search.c), whatever the limits:
	   a limit only cuts the stage short, so a search with a larger one
	   passes through the same states */
	(void)o;
	return (double)atomic_load(&s->playouts) >=
	       (double)s->stage_start +
		       share * (double)(s->stage_end - s->stage_start);
}

/* Guided sweeps (a prior provider is given): a pass tries every global
 * change and, per group, the likeliest changes holding GUIDE_MASS of the
 * prior (at least GUIDE_MIN_KEEP); a pass that finds no improvement ends
 * the sweeps there (a local optimum of the likely changes; the tree
 * search, which sees every candidate, and later stages go on from it:
 * COMPLETION below).  Until 2026-12 such a pass was followed at once by
 * one over the changes it skipped; with resumed passes and kicks, dropping
 * it reached the 2% mark
 * of bench_gnn sooner (2.02x against 1.59x, 10 cases x 3 seeds) and left
 * the plans at 1,000 and 5,000 playouts as good (0.06% slower and 0.03%
 * faster, geometric means).  The constants were chosen on bench_gnn
 * (mass 0.5 and 0.6 with 2 kept, groups and globals alike, reached the 2%
 * mark later on the Llama-2-7B cases; re-measured with the code above,
 * mass 0.8 and 0.55 gave 1.85x and 1.99x against 0.7's 2.02x). */
#define GUIDE_MASS 0.7
#define GUIDE_MIN_KEEP 3
/* BY_TIME below: a mass above the whole keeps every change */
#define BY_TIME_MASS 1.01

/* BY_TIME (issue 27).  In a search limited by time alone (no playout limit:
 * sctx_time_only) a guided pass cuts nothing by the prior and scores each
 * group's changes in two orders taken in turn: the prior's likeliest, then the
 * first of the candidate order (the unguided search's) not taken yet, and so on
 * (interleave_rank); the gain cut stays.  Every other search (self-play
 * training, playout budgets) keeps the passes above.  Why, from a trace of
 * GPT-3 175B on bench_gnn's 1,024 mixed GPUs (50 groups, about 52 candidates
 * each): a pass has some 2,600 changes and a stage's sweeps get half its new
 * playouts (32 to 1,024 in the stages up to 4,096 playouts, about 5 s of CPU
 * there), so every pass is cut short and scores only the first few changes of
 * each group in its order.  Both searches reach 55.64 s in the tree (every
 * group on the A100s at tp 8); the candidate order's first changes are
 * structural (the previous or next group's decision, a new stage on the next
 * disjoint set, fixed sets as suffixes), and the unguided sweeps took single
 * groups and then the last five onto the V100s, 48.0 s at 10 s; the prior's
 * first changes were the A100 set's own tp, synchronisation and recomputation
 * variants (priors 0.03-0.05 of a flat 0.018-0.05; uniform 0.019), the V100
 * changes (0.022) fell under the prior cut, and the guided search reached them
 * only in the completing pass of the 4,096-playout stage: 51.37 s at 10 s on
 * every seed.  Ablations of the guided side (10 s, seeds 1 and 3; unguided 48.0
 * and 46.99 s): uniform tree priors 50.77/50.37, no prior cut 51.37/48.52,
 * candidate order alone 49.12/50.60, candidate order and no cut 48.25/47.41,
 * the two orders in turn and no cut (this) 48.25/47.16.  Sweeping wholly
 * unguided reached the same plans at 10 s but broke the anytime property
 * between the two kinds of limit (tests/test_anytime.c: by time, GPT-3 1.3B
 * 1.9% slower at 50 playouts than the playout-limited search), where the
 * prior's first picks count.  With nothing cut, a completing pass (COMPLETION)
 * finds nothing left to score, and the next stage kicks.  Only a pass the
 * stage's budget share will cut short (more changes than playouts left of the
 * share) is taken this way: one that fits reaches its end in either order and
 * keeps the prior's cut, leaving more of the budget to the tree (Llama-3-8B on
 * bench_gnn's 128 GPUs at 10 s: 4.900 s with the cut, 4.931 s without). */

/* PRICED (issue 27).  A guided pass the budget share will cut short (a
 * BY_TIME one) that would cost more than PRICE_SHARE of the time left
 * when each of its changes costs a simulation, at the mean cost of the
 * simulations so far (left x sctx_mean_sim against sctx_time_left), is
 * scored as the unguided search scores it: candidate order, nothing cut,
 * the provider not asked (result.priced_passes counts them).  The
 * prior's picks are changes near the incumbent that the decision cache
 * does not hold and the lower bound cannot settle, so nearly each costs
 * a simulation, while the candidate order's first changes are mostly
 * cache hits or bounded (src/gnn/README, "Cost of a state").  Where a
 * simulation is cheap for the limit this is never met; where it is dear
 * the prior's picks starve the tree of the stage and of later ones.
 * Measured on GPT-3 175B on bench_gnn's 1,024 mixed GPUs at 1 s of CPU
 * (seed 1, before this): the first guided pass scored 29 simulations in
 * 31 playouts (0.095 s), the unguided one 4 (0.012 s), for the same
 * 66.576 s plan; by the end the guided search had made 185 playouts
 * against 650 from about as many simulations (143 and 145), and the
 * unguided tree's 63.26 s came at playout 219.  The share is half: a
 * stage gives its sweeps half its playouts and its tree the rest, so a
 * pass that alone would take more than half of what is left leaves the
 * tree less than the sweeps.  Searches with a playout limit never take
 * a BY_TIME pass, so they are unchanged (self-play training too). */
#define PRICE_SHARE 0.5

/* COMPLETION.  A later stage whose best plan a guided pass left at a
 * local optimum of the likely changes first runs one pass over the
 * changes the prior cut skipped (less those the gain cut skips: below),
 * and kicks the plan (kick()) only once that pass too found nothing.
 * Deferred to a later stage so the tree search runs first; on bench_gnn
 * (10 cases x 3 seeds, seeds 1-3 and again 4-6) it left the 50- and
 * 200-playout results as they were and made the guided plans 0.11%
 * faster at 1,000 playouts (3 runs better, none worse; ResNet-50 1.1% on
 * seeds 4-6) and 0.10% at 5,000, with playouts to 2% at 2.83x (as
 * without) and 2.67x (against 2.71x).  Including the changes the gain
 * cut skips: 2.75x on seeds 1-3, plans as fast. */

/* One scored single change of the incumbent. */
struct move {
	uint32_t lv;
	struct tp_action a;
	double time, over;
	bool feasible;
	float gain;  /* the provider's predicted ln(t_inc / t), NAN = none */
	float prior; /* the provider's prior, NAN = none */
	uint32_t rank; /* among the level's changes (cmp_sweep_order) */
	bool relax;    /* RELAX: every group one rung less recomputation */
	uint32_t run;  /* RUN: a applied to groups lv - 1 .. lv + run - 2;
			  SLIDE: the run's length */
	int8_t slide;  /* SLIDE: the run at lv - 1 one group left (-1) or
			  right (+1) */
	uint8_t lean;  /* RUN: with this many ZeRO stages more (scored so) */
};

/* The kind of a change in the sweep order: RELAX, SLIDE, single, RUN. */
static int move_kind(const struct move *m)
{
	return m->relax ? 0 : m->slide ? 1 : m->run > 1 ? 3 : 2;
}

/* The order a pass scores its changes in: round robin over the levels,
 * the k-th change of every level before the (k+1)-th of any, likeliest
 * first by the prior when there is one (else in candidate order).  A
 * pass the budget cuts short (an early stage of an anytime search,
 * search.c) has then looked at every group, at its likeliest changes,
 * rather than at every change of the first few groups. */
static int cmp_sweep_order(const void *x, const void *y)
{
	const struct move *a = x, *b = y;

	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->lv != b->lv)
		return a->lv < b->lv ? -1 : 1;
	return move_kind(a) - move_kind(b);
}

static int cmp_move(const void *x, const void *y)
{
	const struct move *a = x, *b = y;

	if (sctx_better(a->feasible, a->time, a->over, b->feasible, b->time,
			b->over))
		return -1;
	if (sctx_better(b->feasible, b->time, b->over, a->feasible, a->time,
			a->over))
		return 1;
	/* ties: earlier level, then the kind (stable order) */
	if (a->lv != b->lv)
		return a->lv < b->lv ? -1 : 1;
	return move_kind(a) - move_kind(b);
}

/* RELAX, a compound change every sweep pass scores (first) and tries
 * again after applying its moves: every group one rung down the
 * recomputation ladder (full -> selective where that drops something,
 * else none; selective -> none), each keeping its devices, tp and
 * synchronisation.  A pipeline waits for its slowest stage, so one
 * group's own change buys almost nothing: Llama-2-7B on bench_gnn's l4:4
 * a100:2 cluster stopped at 17.6 s with selective recomputation on every
 * group (each group's change 0.1-0.4% faster), all at once 15.95 s.
 * Applies it to dec; false when no group recomputes. */
static bool relax_recompute(const struct tp_space *sp, struct tp_decision *dec)
{
	const struct tp_groups *G = sp->groups;
	bool any = false;

	if (sp->constrained && !sp->rt.can.per_group_recompute) {
		/* one setting for the model: every group the same rung, one
		   the runtime has */
		uint8_t r = dec[0].recompute, to = TP_RECOMPUTE_NONE;
		bool sel = false;
		for (uint32_t g = 0; g < G->n; g++)
			sel |= G->selective_bytes[g] > 0;
		if (r == TP_RECOMPUTE_NONE)
			return false;
		if (r == TP_RECOMPUTE_FULL && sel &&
		    (sp->rt.can.recomputes & (1u << TP_RECOMPUTE_SELECTIVE)))
			to = TP_RECOMPUTE_SELECTIVE;
		for (uint32_t g = 0; g < G->n; g++)
			dec[g].recompute = to;
		return true;
	}

	for (uint32_t g = 0; g < G->n; g++) {
		uint8_t r = dec[g].recompute;
		if (r == TP_RECOMPUTE_NONE)
			continue;
		any = true;
		dec[g].recompute = r == TP_RECOMPUTE_FULL &&
					   G->selective_bytes[g] > 0
				       ? TP_RECOMPUTE_SELECTIVE
				       : TP_RECOMPUTE_NONE;
	}
	return any;
}

/* RUN, compound changes every sweep pass scores beside the single ones
 * (not in a completing pass): a run is a maximal range of two or more
 * consecutive groups with equal decisions (one group of the plan, a
 * pipeline stage or part of one), and its RUN changes are its first
 * group's candidates (suffix actions aside: they already reach every
 * later group) applied to every group of the run, when valid for each.
 * Changing one group of a run alone breaks the run: the tensor-parallel
 * layout changes at both its ends (resharding) and the stage's pace is
 * its slowest part, so such a change rarely pays even where the whole
 * run's does.  A RUN change that does not fit is scored again with the
 * next ZeRO stages until one fits (lean, run_lean: kept with the change
 * then): a plan at the edge of memory often took its tensor parallelism
 * for memory, and ZeRO alone changes no time to make the sweep take it
 * first.  GPT-Neo-2.7B on 8 A100-80 + 8
 * V100-16 (bench_peers): the 5,000-playout plan kept tp 2 on layers
 * 5-14 (10 groups) and on the V100 stage, under ZeRO 1 at 99% of the
 * A100's memory; each group's tp 1 alone was 0.1% slower, the V100
 * stage's run 0.06% faster, both runs at tp 1 with ZeRO 2 6.7% faster
 * (133.3 -> 124.4 s), which the search without RUN reached only after
 * some 40,000 playouts. */
static void apply_run(const struct tp_space *sp, const struct move *mv,
		      const struct tp_globals *gl, struct tp_decision *dec)
{
	for (uint32_t g = mv->lv - 1; g < mv->lv - 1 + mv->run; g++)
		tp_space_apply(sp, g, &mv->a, gl, dec);
}

/* SLIDE, compound changes every sweep pass scores first (not in a
 * completing pass): a run of equal decisions between two others moves
 * by one group, keeping its length: left, the group before it takes
 * its decision and its last group the next run's; right, its first
 * group takes the previous run's decision and the group after it its
 * own.  A stage boundary with a boundary layer of its own (another tp)
 * moves in one step, where single changes would first remove that
 * layer: GPT-Neo-2.7B on 8 A100-80 + 8 V100-16 (bench_peers "neo",
 * threads 1) kept a tp 4 layer 16 before the V100 stage (layers 17-20)
 * at 5,000 and 10,000 playouts, 127.36 s, and reached layer 15 at tp 4
 * and layers 16-20 on the V100s only after 40,000, 123.15 s. */
static void apply_slide(const struct move *mv, struct tp_decision *dec)
{
	uint32_t g = mv->lv - 1, e = g + mv->run;

	if (mv->slide < 0) {
		const struct tp_decision y = dec[g], z = dec[e];
		dec[g - 1] = y;
		dec[e - 1] = z;
	} else {
		const struct tp_decision x = dec[g - 1], y = dec[g];
		dec[g] = x;
		dec[e] = y;
	}
}

static void apply_move(const struct tp_space *sp, const struct move *mv,
		       struct tp_globals *gl, struct tp_decision *dec)
{
	if (mv->relax)
		relax_recompute(sp, dec);
	else if (mv->slide)
		apply_slide(mv, dec);
	else if (mv->lv == 0)
		*gl = mv->a.g;
	else if (mv->run > 1)
		apply_run(sp, mv, gl, dec);
	else
		tp_space_apply(sp, mv->lv - 1, &mv->a, gl, dec);
	gl->zero = (uint8_t)(gl->zero + mv->lean);
}

/* A sweep's improvement: better by more than a relative SWEEP_EPS when
 * both plans fit.  Changes that do not alter the schedule (a global flag
 * that does not apply, say) can move the simulated time by rounding
 * alone, 1e-8 relative; without the margin such a change counted as an
 * improvement and kept a pass from ever ending in a local optimum. */
#define SWEEP_EPS 1e-6

static bool sweep_better(const struct evalres *x, const struct evalres *cur)
{
	if (x->feasible && cur->feasible)
		return x->time < cur->time * (1 - SWEEP_EPS);
	return sctx_better(x->feasible, x->time, x->over, cur->feasible,
			   cur->time, cur->over);
}

/* A change stacked on the incumbent (gl, inc) of a pass: score the
 * candidate (g2, cand), one playout, and take it when it improves on
 * *cur (*taken). */
static enum tp_status stack_try(struct worker *w, const struct tp_globals *g2,
				const struct tp_decision *cand,
				struct tp_globals *gl, struct tp_decision *inc,
				struct evalres *cur, bool *taken)
{
	struct evalres r;
	enum tp_status st;

	*taken = false;
	/* stacked changes may combine into a plan the runtime cannot run:
	   not scored, no playout */
	if (!tp_space_runnable(&w->s->space, g2, cand, w->sscr, NULL, 0))
		return TP_OK;
	st = sctx_eval(w, g2, cand, "search (sweep)",
		       cur->feasible ? cur->time : 0, &r);
	if (st)
		return st;
	atomic_fetch_add(&w->s->playouts, 1);
	if (r.ok && sweep_better(&r, cur)) {
		*gl = *g2;
		memcpy(inc, cand, w->s->K * sizeof(*inc));
		*cur = r;
		*taken = true;
	}
	return TP_OK;
}

/* The rings of decision vectors (search_int.h, sctx.polished). */
static bool keys_have(const struct sctx_keys *r, uint64_t key)
{
	uint32_t n = r->n < SCTX_POLISHED ? r->n : SCTX_POLISHED;

	for (uint32_t j = 0; j < n; j++)
		if (r->key[j] == key)
			return true;
	return false;
}

static void keys_add(struct sctx_keys *r, uint64_t key)
{
	r->key[r->n++ % SCTX_POLISHED] = key;
}

/* Iterated local search.  In a later stage of an anytime search
 * (search.c) whose best plan the sweeps already left at a local optimum,
 * they start from a "kick" of it instead of not running: KICK_CHANGES
 * single changes at random levels (uniform among the level's candidates,
 * suffix actions excluded), applied one after the other.  The sweep from
 * there ends in another local optimum, which becomes the best plan only
 * when it is faster.  On bench_gnn (10 cases x 3 seeds) 1 and 4 changes
 * reached the 2% mark later than 2 (1.08x and 1.65x against 2.02x) and
 * left the guided plans at 5,000 playouts 0.2% and 0.04% slower. */
#define KICK_CHANGES 2

static void kick(struct worker *w, struct tp_action *acts, uint32_t cap,
		 struct tp_globals *gl, struct tp_decision *dec)
{
	struct sctx *s = w->s;

	for (uint32_t k = 0; k < KICK_CHANGES; k++) {
		uint32_t lv = (uint32_t)tp_rng_below(&w->rng, s->K + 1);
		uint32_t n = tp_space_level_actions(&s->space, lv, gl, dec,
						    acts, cap, w->sscr);
		uint32_t m = 0, pick = 0;
		struct move mv;
		double x;

		for (uint32_t i = 1; i < n; i++)
			m += !acts[i].suffix;
		if (m == 0)
			continue;
		/* the non-suffix changes, uniformly */
		x = tp_rng_uniform(&w->rng) * m;
		for (uint32_t i = 1; i < n; i++) {
			if (acts[i].suffix)
				continue;
			pick = i;
			if (--x < 0)
				break;
		}
		memset(&mv, 0, sizeof(mv));
		mv.lv = lv;
		mv.a = acts[pick];
		apply_move(&s->space, &mv, gl, dec);
	}
}

/* Shared state of one parallel sweep pass. */
struct sweep_par {
	struct sctx *s;
	const struct tp_globals *gl;
	const struct tp_decision *inc;
	const struct move *all;
	struct evalres *res;
	uint8_t *scored; /* per slot: 1 once res[i] is filled */
	uint8_t *lean;   /* per slot: the ZeRO stages RUN's lean score adds */
	uint32_t n;
	double cut, lim;
	_Atomic uint32_t next;
	_Atomic int spent, failed;
	pthread_mutex_t mu;
	enum tp_status st;
	struct tp_error err;
};

struct sweep_thr {
	struct sweep_par *P;
	struct worker *w;
	struct tp_decision *cand;
	bool main;
	pthread_t th;
};

/* RUN's lean score: a RUN change of slot i that does not fit, scored
 * again with the next ZeRO stage, and the one after, up to ZeRO 3, until
 * it fits (a playout each; no mixed group; under a runtime, only stages
 * it runs); the first that fits is kept in the slot. */
static enum tp_status run_lean(struct worker *w, struct sweep_par *P,
			       uint32_t i, struct tp_globals *g2,
			       const struct tp_decision *cand)
{
	struct sctx *s = P->s;
	struct evalres r;
	enum tp_status st;

	P->lean[i] = 0;
	if (P->all[i].run < 2 || P->all[i].slide || !P->res[i].ok ||
	    P->res[i].feasible ||
	    !(P->cut > 0))
		return TP_OK;
	for (uint32_t g = 0; g < s->K; g++)
		if (tp_decision_mixed(&cand[g]))
			return TP_OK;
	while (g2->zero < 3) {
		g2->zero++;
		if (s->space.constrained &&
		    !tp_space_runnable(&s->space, g2, cand, w->sscr, NULL, 0))
			continue;
		st = sctx_eval(w, g2, cand, "search (sweep)", P->cut, &r);
		if (st)
			return st;
		atomic_fetch_add(&s->playouts, 1);
		if (r.ok && r.feasible) {
			P->res[i] = r;
			P->lean[i] = (uint8_t)(g2->zero - P->gl->zero);
			break;
		}
	}
	return TP_OK;
}

static void *sweep_thread(void *arg)
{
	struct sweep_thr *T = arg;
	struct sweep_par *P = T->P;
	struct sctx *s = P->s;

	for (;;) {
		uint32_t i;
		struct tp_globals g2 = *P->gl;
		enum tp_status st;
		if (atomic_load(&P->spent) || atomic_load(&P->failed))
			break;
		i = atomic_fetch_add(&P->next, 1);
		if (i >= P->n)
			break;
		if (sweep_budget_spent(s, P->lim)) {
			atomic_store(&P->spent, 1);
			break;
		}
		memcpy(T->cand, P->inc, s->K * sizeof(*T->cand));
		apply_move(&s->space, &P->all[i], &g2, T->cand);
		st = sctx_eval(T->w, &g2, T->cand, "search (sweep)", P->cut,
			       &P->res[i]);
		if (!st)
			st = run_lean(T->w, P, i, &g2, T->cand);
		if (st) {
			pthread_mutex_lock(&P->mu);
			if (!P->st) {
				P->st = st;
				P->err = T->w->err;
			}
			pthread_mutex_unlock(&P->mu);
			atomic_store(&P->failed, 1);
			break;
		}
		P->scored[i] = 1;
		atomic_fetch_add(&s->playouts, 1);
		if (T->main)
			sctx_progress(s, false);
	}
	return NULL;
}

/*
 * Score the single changes all[from .. n) of (gl, inc) into res[] with w
 * and the helper workers in parallel (each result in its own slot, so the
 * outcome does not depend on the thread count; scored[i] is set to 1 for
 * each slot filled).  The caller zeroes P and fills in its inputs (s, gl,
 * inc, all, res, scored, n, cut, lim).  *spent: the budget share lim ran
 * out before every change was scored.
 */
static enum tp_status sweep_parallel(struct worker *w, struct worker *helpers,
				     uint32_t n_helpers, struct sweep_par *P,
				     uint32_t from, bool *spent)
{
	struct sweep_thr T[64];
	uint32_t nt = 1, started = 1, n = P->n;

	atomic_store(&P->next, from);
	if (pthread_mutex_init(&P->mu, NULL))
		return TP_ENOMEM;
	/* helpers only when there is enough to share */
	if (n - from >= 8)
		nt = 1 + (n_helpers < 63 ? n_helpers : 63);
	for (uint32_t t = 0; t < nt; t++) {
		T[t].P = P;
		T[t].w = t == 0 ? w : &helpers[t - 1];
		T[t].cand = T[t].w->dec;
		T[t].main = t == 0;
	}
	for (uint32_t t = 1; t < nt; t++) {
		if (pthread_create(&T[t].th, NULL, sweep_thread, &T[t]))
			break;
		started++;
	}
	sweep_thread(&T[0]);
	for (uint32_t t = 1; t < started; t++)
		pthread_join(T[t].th, NULL);
	pthread_mutex_destroy(&P->mu);
	*spent = atomic_load(&P->spent) != 0;
	if (P->st) {
		w->err = P->err;
		return P->st;
	}
	return TP_OK;
}

/* With options->gain_skip > 0 and gains from the provider (prior.h), a
 * guided pass also skips the changes the prior cut kept but the provider
 * predicts at least gain_skip slower than the incumbent (search.h
 * TP_SEARCH_GAIN_SKIP; src/gnn/README, "Gains").  Returns how many. */
static uint32_t guide_gain_cut(const float *gains, uint32_t n, double skip,
			       bool *keep)
{
	uint32_t cut = 0;

	if (!(skip > 0))
		return 0;
	for (uint32_t i = 1; i < n; i++)
		if (keep[i] && !isnan(gains[i]) && gains[i] < -log1p(skip)) {
			keep[i] = false;
			cut++;
		}
	return cut;
}

/* Share of the changes of the same pass and group that did not beat the
 * incumbent whose gain (or prior) is below the one of change i (ties
 * half): 1 = ranked above all of them, 0.5 = chance. */
static double rank_above(const struct move *all, const struct evalres *res,
			 const bool *better, size_t na, size_t i, bool prior)
{
	double n = 0, below = 0;
	float xi = prior ? all[i].prior : all[i].gain;

	for (size_t j = 0; j < na; j++) {
		float xj = prior ? all[j].prior : all[j].gain;
		if (better[j] || !res[j].ok || isnan(xj) ||
		    all[j].lv != all[i].lv)
			continue;
		n++;
		below += xj < xi ? 1 : xj == xi ? 0.5 : 0;
	}
	return n > 0 ? below / n : 0.5;
}

/* How well the predicted gains (and the priors) match the scored changes
 * of a pass (search.h, gain_*). */
static void gain_stats(struct sctx *s, struct evalres cur,
		       const struct move *all, const struct evalres *res,
		       size_t na, bool *better)
{
	struct tp_search_result *r = s->res;

	if (!cur.feasible || !(cur.time > 0))
		return;
	for (size_t i = 0; i < na; i++)
		better[i] = res[i].ok && res[i].feasible && !res[i].bounded &&
			    res[i].time < cur.time;
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < na; i++) {
		const struct evalres *x = &res[i];
		double g = all[i].gain, y;
		if (isnan(g) || !x->ok)
			continue;
		r->gain_signs++;
		r->gain_sign_ok += (g > 0) == better[i];
		if (better[i]) {
			double rg = rank_above(all, res, better, na, i, false);
			double rp = rank_above(all, res, better, na, i, true);
			r->gain_better++;
			r->gain_better_rank += rg;
			r->prior_better_rank += rp;
			if (x->time * 1.01 <= cur.time) {
				r->gain_clear++;
				r->gain_clear_rank += rg;
				r->prior_clear_rank += rp;
			}
		}
		if (!x->feasible || x->bounded)
			continue;
		y = log(cur.time / x->time);
		r->gain_n++;
		r->gain_sx += g;
		r->gain_sy += y;
		r->gain_sxx += g * g;
		r->gain_syy += y * y;
		r->gain_sxy += g * y;
	}
	pthread_mutex_unlock(&s->lock);
}

/*
 * Steepest descent on the incumbent decision vector: every single change
 * (the global settings, or one candidate action of one group, suffix
 * actions included, so a stage boundary or "the rest of the model on this
 * set" is one step) is scored; the best is applied, then the next best
 * ones of other levels are stacked on it one at a time while they still
 * improve.  Repeats until no single change improves or the budget share
 * (half the playouts / time) is spent.  Each evaluation counts as a
 * playout.  With a prior provider, passes are guided (GUIDE_MASS above):
 * the provider is asked once per level and pass, at the incumbent, with
 * the earlier groups marked decided (the state the tree search would be
 * in there).  Deterministic.
 */
/* The working set of one search_polish. */
#define MAX_STARTS (SCTX_ELITES + 2)
struct polish {
	struct worker *w;
	struct sctx *s;
	const struct tp_space *sp;
	uint32_t K, cap;
	struct tp_action *acts;
	struct tp_decision *inc, *cand, *starts;
	struct move *moves, *all;
	struct evalres *allres;
	uint8_t *used, *scored, *lean;
	uint32_t n_helpers;
	struct worker *helpers;
	/* with a prior provider: its view of each level, and which changes
	   a guided pass tries */
	bool guide;
	/* guided in a time-only search: nothing cut by the prior, the
	   prior's and the candidate order in turn (BY_TIME) */
	bool by_time;
	/* unguided, asking options.stats_prior only to measure it */
	bool measure;
	struct tp_prior_action *pacts;
	float *pri, *gains;
	bool *decided, *keep, *better;
	uint32_t *rank;
	struct search_prior_buf pb;
	/* the start points */
	struct tp_globals gl, sgl[MAX_STARTS];
	struct evalres scur[MAX_STARTS];
	uint64_t skey[MAX_STARTS];
	uint32_t n_start;
	bool kicked;   /* the start is a kick of the best (kick()) */
	bool complete; /* first pass: the changes guided ones skip */
	double share;
};

static void polish_free(struct polish *P)
{
	for (uint32_t t = 0; t < P->n_helpers; t++)
		worker_release(&P->helpers[t]);
	free(P->helpers);
	free(P->all);
	free(P->allres);
	free(P->starts);
	free(P->acts);
	free(P->inc);
	free(P->cand);
	free(P->moves);
	free(P->used);
	free(P->pacts);
	free(P->pri);
	free(P->gains);
	free(P->decided);
	free(P->keep);
	free(P->better);
	free(P->rank);
	free(P->scored);
	free(P->lean);
}

static enum tp_status polish_init(struct polish *P, struct worker *w)
{
	struct sctx *s = w->s;
	uint32_t K = s->K, cap = SEARCH_MAX_ACTIONS;
	/* the single changes of every level, and as many RUN changes */
	size_t lv_cap = 2 * (size_t)(K + 1) * cap;

	memset(P, 0, sizeof(*P));
	P->w = w;
	P->s = s;
	P->sp = &s->space;
	P->K = K;
	P->cap = cap;
	P->share = 0.5;
	P->guide = s->o->prior && s->o->prior->evaluate;
	P->by_time = P->guide && sctx_time_only(s);
	P->measure = !P->guide && sctx_provider(s) &&
		     sctx_provider(s)->evaluate;
	P->acts = tp_calloc(cap, sizeof(*P->acts));
	P->inc = tp_calloc(K, sizeof(*P->inc));
	P->cand = tp_calloc(K, sizeof(*P->cand));
	P->moves = tp_calloc(lv_cap, sizeof(*P->moves));
	P->used = tp_calloc(K + 1, 1);
	P->starts = tp_calloc((size_t)MAX_STARTS * K, sizeof(*P->starts));
	P->all = tp_calloc(lv_cap, sizeof(*P->all));
	P->allres = tp_calloc(lv_cap, sizeof(*P->allres));
	P->pacts = tp_calloc(cap, sizeof(*P->pacts));
	P->pri = tp_calloc(cap, sizeof(*P->pri));
	P->gains = tp_calloc(cap, sizeof(*P->gains));
	P->decided = tp_calloc(K ? K : 1, sizeof(*P->decided));
	P->keep = tp_calloc(cap, sizeof(*P->keep));
	P->better = tp_calloc(lv_cap, sizeof(*P->better));
	P->rank = tp_calloc(cap, sizeof(*P->rank));
	P->scored = tp_calloc(lv_cap, 1);
	P->lean = tp_calloc(lv_cap, 1);
	P->pb = (struct search_prior_buf){P->pacts, P->decided, P->pri,
					  P->gains, P->guide};
	if (!P->acts || !P->inc || !P->cand || !P->moves || !P->used ||
	    !P->starts || !P->all || !P->allres || !P->pacts || !P->pri ||
	    !P->gains || !P->decided || !P->keep || !P->better || !P->rank ||
	    !P->scored || !P->lean)
		return TP_ENOMEM;
	/* helper workers for the other search threads */
	if (s->o->threads > 1) {
		P->helpers = tp_calloc(s->o->threads - 1, sizeof(*P->helpers));
		for (uint32_t t = 0; P->helpers && t + 1 < s->o->threads;
		     t++) {
			if (worker_init(&P->helpers[t], s, t + 1))
				break;
			P->n_helpers++;
		}
	}
	return TP_OK;
}

/* The start points: the best, the dp-hetero and megatron baselines, the
 * next elites; distinct.  In a later stage (search.c): the best, or a
 * kick of it when the sweeps already left it at a local optimum
 * (kick()). */
static void polish_starts(struct polish *P)
{
	struct sctx *s = P->s;
	uint32_t K = P->K;

	pthread_mutex_lock(&s->lock);
	P->n_start = 0;
	for (int pass = 0; pass < (s->stage_start ? 1 : 2); pass++) {
		uint32_t lo = pass == 0 ? 0 : pass == 1 ? 0 : 1;
		uint32_t hi = pass == 0 ? (s->n_elite ? 1 : 0)
			      : pass == 1 ? 2
					  : s->n_elite;
		for (uint32_t i = lo; i < hi && P->n_start < MAX_STARTS;
		     i++) {
			const struct sctx_best *b =
				pass == 1 ? &s->base_dec[i == 0
							 ? TP_BASELINE_DP_HETERO
							 : TP_BASELINE_MEGATRON]
					  : &s->elite[i];
			uint32_t n = P->n_start;
			uint64_t key;
			bool dup = false;
			if (!b->have)
				continue;
			key = tp_space_hash(P->sp, &b->gl, b->dec);
			for (uint32_t j = 0; j < n; j++)
				dup |= P->skey[j] == key;
			if (dup)
				continue;
			P->skey[n] = key;
			P->sgl[n] = b->gl;
			memcpy(P->starts + (size_t)n * K, b->dec,
			       K * sizeof(*P->starts));
			P->scur[n].feasible = b->feasible;
			P->scur[n].time = b->time;
			P->scur[n].over = b->over;
			P->n_start++;
		}
	}
	if (s->stage_start && P->n_start) {
		P->kicked = keys_have(&s->polished, P->skey[0]);
		/* guided: completed first (COMPLETION), kicked after */
		P->complete = P->kicked && P->guide &&
			      !keys_have(&s->completed, P->skey[0]);
		P->kicked = P->kicked && !P->complete;
		s->completions += P->complete;
	}
	pthread_mutex_unlock(&s->lock);
}

/* Is P->cand a valid state (and, under a runtime, one it runs)?  The
 * check of a compound change before it is scored. */
static bool cand_ok(struct polish *P)
{
	return tp_space_state_ok(P->sp, &P->gl, P->cand) &&
	       (!P->sp->constrained ||
		tp_space_runnable(P->sp, &P->gl, P->cand, P->w->sscr, NULL,
				  0));
}

/* The end of the run of equal decisions that starts at group g of inc:
 * the first group after it. */
static uint32_t run_end(const struct tp_decision *inc, uint32_t K,
			uint32_t g)
{
	uint32_t e = g + 1;

	while (e < K && memcmp(&inc[e], &inc[g], sizeof(*inc)) == 0)
		e++;
	return e;
}

/* The RUN changes (apply_run) of level lv's n candidates P->acts into
 * out when group lv - 1 starts a run: every candidate but keep and the
 * suffix actions, valid for each group of the run (and, under a
 * runtime, run by it), ranked as the candidate.  Returns how many. */
static uint32_t run_changes(struct polish *P, uint32_t lv, uint32_t n,
			    struct move *out)
{
	const struct tp_decision *inc = P->inc;
	uint32_t g = lv - 1, e, m = 0;

	if (g > 0 && memcmp(&inc[g - 1], &inc[g], sizeof(*inc)) == 0)
		return 0;
	e = run_end(inc, P->K, g);
	if (e - g < 2)
		return 0;
	for (uint32_t i = 1; i < n; i++) {
		struct move *mv = &out[m];
		if (P->acts[i].suffix)
			continue;
		memset(mv, 0, sizeof(*mv));
		mv->lv = lv;
		mv->a = P->acts[i];
		mv->run = e - g;
		mv->gain = NAN;
		mv->prior = NAN;
		mv->rank = P->rank[i];
		memcpy(P->cand, inc, P->K * sizeof(*P->cand));
		apply_run(P->sp, mv, &P->gl, P->cand);
		if (cand_ok(P))
			m++;
	}
	return m;
}

/* The SLIDE changes (apply_slide) of the incumbent into out, valid for
 * every group they change (and, under a runtime, run by it), ranked
 * first.  Returns how many. */
static uint32_t slide_changes(struct polish *P, struct move *out)
{
	const struct tp_decision *inc = P->inc;
	uint32_t m = 0, K = P->K;

	for (uint32_t g = 0, e; g < K; g = e) {
		e = run_end(inc, K, g);
		if (e >= K)
			break;
		if (g == 0)
			continue; /* no run before it */
		for (int dir = -1; dir <= 1; dir += 2) {
			struct move *mv = &out[m];
			memset(mv, 0, sizeof(*mv));
			mv->lv = g + 1;
			mv->run = e - g;
			mv->slide = (int8_t)dir;
			mv->gain = NAN;
			mv->prior = NAN;
			memcpy(P->cand, inc, K * sizeof(*P->cand));
			apply_slide(mv, P->cand);
			if (cand_ok(P))
				m++;
		}
	}
	return m;
}

/* VARIANTS (issue 27).  A guided pass also keeps, whatever their prior,
 * a group's variants: its own changes on the same device set at the same
 * tp (not suffixes), i.e. another synchronisation (or the mixed-replica
 * bit that lives in it) or another recomputation.  A handful per group,
 * and the changes a network trained on whole plans ranks lowest: on
 * bench_gnn's ResNet-101 on 2 L4 + 4 1080 Ti servers the priors put 0.77
 * of a group's mass on "all devices" (alone and as a suffix), and the
 * change that wins, ring instead of hierarchical synchronisation on group
 * 0 (seed 2; full recomputation of a 2-op group on seed 1), had 0.03: cut,
 * so the guided search stayed at 0.1365 s at 200 playouts on seeds 1-3
 * (unguided 0.1335/0.1324/0.1335 s) and 0.1338 s at 1,000.  Keeping the
 * variants: 0.1324 and 0.1323 s.  The prior cut alone off (mass 1.01)
 * found them too but lost VGG-16's win (0.2425 -> 0.2937 s at 3 s). */
static void keep_variants(struct polish *P, uint32_t lv, uint32_t n)
{
	const struct tp_decision *d = &P->inc[lv - 1];

	for (uint32_t i = 1; i < n; i++) {
		const struct tp_action *a = &P->acts[i];
		if (!a->suffix && a->d.set == d->set && a->d.tp == d->tp &&
		    (a->d.sync != d->sync || a->d.recompute != d->recompute))
			P->keep[i] = true;
	}
}

/* BY_TIME: the ranks rank[1 .. n) of a level's changes in the prior's
 * order turned into the two orders in turn: the prior's likeliest, the
 * first of the candidate order not taken yet, the prior's next, ... */
static void interleave_rank(uint32_t *rank, uint32_t n)
{
	uint32_t by_prior[SEARCH_MAX_ACTIONS], merged[SEARCH_MAX_ACTIONS];
	bool taken[SEARCH_MAX_ACTIONS];
	uint32_t p = 0, c = 1, pos = 0;

	if (n < 2 || n > SEARCH_MAX_ACTIONS)
		return;
	for (uint32_t i = 1; i < n; i++) {
		by_prior[rank[i]] = i;
		taken[i] = false;
	}
	while (pos < n - 1) {
		while (p < n - 1 && taken[by_prior[p]])
			p++;
		if (p < n - 1) {
			taken[by_prior[p]] = true;
			merged[by_prior[p]] = pos++;
		}
		while (c < n && taken[c])
			c++;
		if (c < n && pos < n - 1) {
			taken[c] = true;
			merged[c] = pos++;
		}
	}
	for (uint32_t i = 1; i < n; i++)
		rank[i] = merged[i];
}

/* The single changes of a pass at the incumbent into P->all (sorted in
 * sweep order), *na of them: every level's candidate actions (guided:
 * the likely ones; completing: those the prior cut skipped), then RELAX
 * unless completing. */
static enum tp_status polish_changes(struct polish *P, bool comp,
				     uint32_t *na)
{
	struct sctx *s = P->s;
	uint32_t K = P->K, n_all = 0;
	enum tp_status st;

	for (uint32_t lv = 0; lv <= K; lv++) {
		uint32_t n = tp_space_level_actions(P->sp, lv, &P->gl, P->inc,
						    P->acts, P->cap,
						    P->w->sscr);
		bool asked = (P->guide || P->measure) && n > 2 && lv > 0;
		if (comp && !asked)
			continue; /* all scored by the pass */
		if (asked) {
			struct search_prior_ask q = {lv,     P->acts, n,
						     &P->gl, P->inc, false};
			st = search_priors(P->w, sctx_provider(s), &q, &P->pb);
			if (st)
				return st;
		}
		if (asked && P->guide) {
			search_prior_cut(P->pri, n,
					 P->by_time ? BY_TIME_MASS : GUIDE_MASS,
					 GUIDE_MIN_KEEP, P->keep);
			keep_variants(P, lv, n);
			/* completing: the changes the prior cut skipped */
			for (uint32_t i = 1; comp && i < n; i++)
				P->keep[i] = !P->keep[i];
			s->gain_skips += guide_gain_cut(
				P->gains, n, s->o->gain_skip, P->keep);
		}
		search_prior_rank(asked && P->guide ? P->pri : NULL, n,
				  P->rank);
		if (asked && P->by_time)
			interleave_rank(P->rank, n);
		for (uint32_t i = 1; i < n; i++) {
			struct move *mv = &P->all[n_all];
			/* guided: the likely ones only (GUIDE_MASS) */
			if (P->guide && asked && !P->keep[i])
				continue;
			memset(mv, 0, sizeof(*mv));
			mv->lv = lv;
			mv->a = P->acts[i];
			mv->gain = asked ? P->gains[i] : NAN;
			mv->prior = asked ? P->pri[i] : NAN;
			mv->rank = P->rank[i];
			n_all++;
		}
		if (!comp && lv > 0)
			n_all += run_changes(P, lv, n, P->all + n_all);
	}
	/* SLIDE and RELAX, with the first changes (the completing pass
	   scored them already) */
	if (!comp)
		n_all += slide_changes(P, P->all + n_all);
	if (!comp) {
		memcpy(P->cand, P->inc, K * sizeof(*P->cand));
		if (relax_recompute(P->sp, P->cand)) {
			memset(&P->all[n_all], 0, sizeof(P->all[n_all]));
			P->all[n_all].relax = true;
			P->all[n_all].gain = NAN;
			P->all[n_all].prior = NAN;
			n_all++;
		}
	}
	qsort(P->all, n_all, sizeof(*P->all), cmp_sweep_order);
	*na = n_all;
	return TP_OK;
}

/*
 * Score every single change of a pass (in parallel, each result in its
 * slot: the same set and order with any thread count) and collect the
 * improving ones into P->moves (*nm).  resume: the incumbent is where a
 * former stage cut a pass short (with nothing found), which is resumed
 * where it stopped.  *spent: the budget ran out during the pass (where
 * it stopped is remembered when it found nothing).
 */
static enum tp_status polish_score(struct polish *P, bool comp, bool resume,
				   uint64_t ikey, const struct evalres *cur,
				   double lim, size_t *nm, bool *spent)
{
	struct sctx *s = P->s;
	struct sweep_par in;
	uint32_t na, from = 0;
	double left = 0;
	bool priced = false;
	enum tp_status st;

	*nm = 0;
	/* PRICED: a pass too dear in the prior's picks, the unguided
	   search's (the provider not asked); one whose changes fit the
	   share is not (BY_TIME's rule below: it keeps the prior's cut) */
	if (P->by_time) {
		left = (double)s->stage_start +
		       lim * (double)(s->stage_end - s->stage_start) -
		       (double)atomic_load(&s->playouts);
		if (left * sctx_mean_sim(s) >
		    PRICE_SHARE * sctx_time_left(s)) {
			P->guide = false;
			P->by_time = false;
			st = polish_changes(P, comp, &na);
			P->guide = true;
			P->by_time = true;
			if (st)
				return st;
			priced = (double)na > left;
		}
	}
	if (priced) {
		s->priced_passes++;
	} else {
		st = polish_changes(P, comp, &na);
		if (st)
			return st;
	}
	/* BY_TIME only for a pass the budget share will cut short: one that
	   fits keeps the prior's order and cut */
	if (P->by_time && !priced) {
		if ((double)na <= left) {
			P->by_time = false;
			st = polish_changes(P, comp, &na);
			P->by_time = true;
			if (st)
				return st;
			s->fitting_passes++;
		} else {
			s->by_time_passes++;
		}
	}
	/* resumed: all[0 .. from) were scored by the pass a former stage
	   cut short, and none improves */
	if (resume && s->sweep_resume.n == na) {
		from = s->sweep_resume.pos;
		s->sweep_resumed += from;
	}
	s->sweep_resume.have = false;
	memset(P->allres, 0, na * sizeof(*P->allres));
	memset(P->scored, 0, na);
	memset(P->lean, 0, na);
	memset(&in, 0, sizeof(in));
	in.s = s;
	in.gl = &P->gl;
	in.inc = P->inc;
	in.all = P->all;
	in.res = P->allres;
	in.scored = P->scored;
	in.lean = P->lean;
	in.n = na;
	in.cut = cur->feasible ? cur->time : 0;
	in.lim = lim;
	st = sweep_parallel(P->w, P->helpers, P->n_helpers, &in, from, spent);
	if (st)
		return st;
	if (s->o->gain_stats)
		gain_stats(s, *cur, P->all, P->allres, na, P->better);
	/* the improving changes (unscored slots are not ok) */
	for (uint32_t i = 0; i < na; i++) {
		struct move mv = P->all[i];
		const struct evalres *x = &P->allres[i];
		if (!x->ok || !sweep_better(x, cur))
			continue;
		mv.time = x->time;
		mv.over = x->over;
		mv.feasible = x->feasible;
		mv.lean = P->lean[i];
		P->moves[(*nm)++] = mv;
	}
	if (*spent && *nm == 0) {
		/* remember where the pass stopped, unless it found something
		   (the best changed then) */
		uint32_t pos = from;
		while (pos < na && P->scored[pos])
			pos++;
		s->sweep_resume.have = true;
		s->sweep_resume.key = ikey;
		s->sweep_resume.n = na;
		s->sweep_resume.pos = pos;
	}
	return TP_OK;
}

/* The levels a change sets, lo .. hi: its own; a RUN change's, its
 * groups; a SLIDE change's, its run and the groups before and after it
 * (a lean one also sets the global settings, level 0). */
static void move_levels(const struct move *mv, uint32_t *lo, uint32_t *hi)
{
	*lo = mv->slide ? mv->lv - 1 : mv->lv;
	*hi = mv->slide ? mv->lv + mv->run
			: mv->lv + (mv->run > 1 ? mv->run : 1) - 1;
}

static void mark_used(uint8_t *used, const struct move *mv)
{
	uint32_t lo, hi;

	move_levels(mv, &lo, &hi);
	memset(used + lo, 1, hi - lo + 1);
	if (mv->lean)
		used[0] = 1;
}

/* Does the change set a level an applied one set? */
static bool touches_used(const uint8_t *used, const struct move *mv)
{
	uint32_t lo, hi;

	move_levels(mv, &lo, &hi);
	for (uint32_t k = lo; k <= hi; k++)
		if (used[k])
			return true;
	return mv->lean && used[0];
}

/* Apply the pass's best move, then the next ones on untouched levels
 * while they still improve, then RELAX again on what the pass changed (a
 * ZeRO stage or more micro-batches can make room for it). */
static enum tp_status polish_apply(struct polish *P, size_t nm, double lim,
				   struct evalres *cur)
{
	struct sctx *s = P->s;
	const struct tp_space *sp = P->sp;
	uint32_t K = P->K;
	enum tp_status st;
	bool taken;

	qsort(P->moves, nm, sizeof(*P->moves), cmp_move);
	memset(P->used, 0, K + 1);
	apply_move(sp, &P->moves[0], &P->gl, P->inc);
	mark_used(P->used, &P->moves[0]);
	cur->feasible = P->moves[0].feasible;
	cur->time = P->moves[0].time;
	cur->over = P->moves[0].over;
	for (size_t k = 1; k < nm && k < 16; k++) {
		struct tp_globals g2 = P->gl;
		if (touches_used(P->used, &P->moves[k]) ||
		    P->moves[k].a.suffix || sweep_budget_spent(s, lim))
			continue;
		memcpy(P->cand, P->inc, K * sizeof(*P->cand));
		apply_move(sp, &P->moves[k], &g2, P->cand);
		st = stack_try(P->w, &g2, P->cand, &P->gl, P->inc, cur, &taken);
		if (st)
			return st;
		if (taken)
			mark_used(P->used, &P->moves[k]);
	}
	memcpy(P->cand, P->inc, K * sizeof(*P->cand));
	if (!P->moves[0].relax && !sweep_budget_spent(s, lim) &&
	    relax_recompute(sp, P->cand)) {
		const struct tp_globals g2 = P->gl;
		st = stack_try(P->w, &g2, P->cand, &P->gl, P->inc, cur, &taken);
		if (st)
			return st;
	}
	return TP_OK;
}

/* Steepest descent from start point si until a local optimum or the
 * budget. */
static enum tp_status polish_from(struct polish *P, uint32_t si)
{
	struct sctx *s = P->s;
	const struct tp_space *sp = P->sp;
	struct evalres cur = P->scur[si];
	double my_share = P->share * (si + 1) / P->n_start;
	enum tp_status st;

	P->gl = P->sgl[si];
	memcpy(P->inc, P->starts + (size_t)si * P->K, P->K * sizeof(*P->inc));
	if (!sweep_budget_spent(s, P->share) && (si > 0 || P->kicked)) {
		/* a start point may differ from its recorded score (even
		   split cleared): score it */
		struct evalres r0;
		st = sctx_eval(P->w, &P->gl, P->inc, "search (sweep)", 0, &r0);
		if (st)
			return st;
		if (r0.ok)
			cur = r0;
	}
	for (uint32_t pass = 0;; pass++) {
		const uint64_t ikey = tp_space_hash(sp, &P->gl, P->inc);
		const bool resume = pass == 0 && s->sweep_resume.have &&
				    s->sweep_resume.key == ikey;
		const bool comp = P->complete && pass == 0;
		/* the first pass of every start is complete (within the
		   overall share); later ones share what is left */
		double lim = pass == 0 ? P->share : my_share;
		size_t nm;
		bool spent;
		if (sweep_budget_spent(s, lim))
			return TP_OK;
		st = polish_score(P, comp, resume, ikey, &cur, lim, &nm,
				  &spent);
		if (st || spent)
			return st;
		if (nm == 0) {
			/* a local optimum (guided: of the likely changes;
			   the tree search sees the others): a later stage
			   kicks it rather than sweeping here again */
			pthread_mutex_lock(&s->lock);
			keys_add(&s->polished, ikey);
			if (comp)
				keys_add(&s->completed, ikey);
			pthread_mutex_unlock(&s->lock);
			return TP_OK;
		}
		st = polish_apply(P, nm, lim, &cur);
		if (st)
			return st;
	}
}

enum tp_status search_polish(struct worker *w)
{
	struct polish P;
	enum tp_status st;

	st = polish_init(&P, w);
	if (st)
		goto out;
	w->s->phase = "sweep";
	polish_starts(&P);
	if (P.kicked) {
		kick(w, P.acts, P.cap, &P.sgl[0], P.starts);
		w->s->kicks++;
	}
	for (uint32_t si = 0; si < P.n_start && !st; si++)
		st = polish_from(&P, si);
out:
	polish_free(&P);
	return st;
}
