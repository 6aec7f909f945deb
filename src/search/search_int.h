/*
 * search_int.h - internals shared by search.c (driver, evaluation cache,
 * incumbent), baselines.c (baselines and structured seeds) and mcts.c
 * (the tree search).  Not for use outside src/search/.
 */
#ifndef TP_SEARCH_INT_H
#define TP_SEARCH_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "core/rng.h"
#include "sim/sim.h"
#include "actions.h"
#include "coarsen.h"
#include "search.h"

/* One scored candidate: a decision vector or a plan given as is. */
struct sctx_best {
	bool have, feasible;
	double time, over;
	bool raw;              /* the plan below, not decisions */
	struct tp_plan raw_plan;
	struct tp_globals gl;
	struct tp_decision *dec; /* groups->n */
	char source[96];
};

struct cache_entry {
	uint64_t key; /* 0 = empty */
	float time;   /* the lower bound when bounded */
	float over;
	float secs; /* the iteration time (evalres.secs) */
	uint8_t feasible, ok;
	uint8_t bounded; /* only a lower bound of the time is known */
	uint8_t fits;    /* evalres.fits */
};

/*
 * The evaluator's answer for one plan content (context.c run_eval, the
 * plan cache): different decision vectors materialise to the same plan
 * (a suffix decision and the same decisions one by one, a sync method
 * on one replica, ...), and the plans of the mixed moves and sweeps are
 * scored as plans, outside the decision cache.  The simulator answers a
 * plan the same way every time, but for the cutoff: it settles a plan
 * unsimulated when its lower bound reaches the cutoff, or when memory
 * does not fit and there is a cutoff, else runs it in full.  An entry
 * keeps what is known of the three (lb_known, mem, full), and run_eval
 * replays an answer only when these say exactly what the simulator
 * would answer for this cutoff.
 */
/* What run_eval reads of an evaluator's answer that ran in full. */
struct full_answer {
	double time, over;         /* the full run's report */
	double ans_time, ans_over; /* the evaluator's answer (ans_report) */
	bool feasible, has_answer, ans_report, ans_feasible;
};

struct sim_entry {
	uint64_t key;    /* tp_plan_content_hash | 1; 0 = empty */
	double lb;       /* the simulator's lower bound (lb_known) */
	double oom_over; /* the memory check's over fraction (mem 2) */
	struct full_answer fa; /* the full run's (full) */
	uint8_t lb_known;
	uint8_t mem; /* 0 unknown, 1 fits, 2 does not (the cut's check) */
	uint8_t full;
};

#define SCTX_POOL 8

/* Objects of workers that ended, kept for the next ones (struct sctx's
 * pools; the caller holds s->lock). */
struct sctx_pool {
	void *v[SCTX_POOL];
	uint32_t n;
};

/* The last object put, NULL when there is none. */
static inline void *pool_take(struct sctx_pool *p)
{
	return p->n ? p->v[--p->n] : NULL;
}

/* Keep x (not NULL) if there is room: true when kept, and the caller
   lets go of it. */
static inline bool pool_put(struct sctx_pool *p, void *x)
{
	if (!x || p->n >= SCTX_POOL)
		return false;
	p->v[p->n++] = x;
	return true;
}

struct sctx {
	const struct tp_model *m;
	const struct tp_cluster *c;
	const struct tp_evaluator *ev;
	/* the caller's options (o points at opts): a search limited by
	   time alone has opts.playouts = UINT64_MAX, so that it follows the
	   trajectory of a playout-limited search step for step (search.c,
	   STAGE_FIRST) and only its end differs; o_playouts is the caller's
	   playout limit (0 = none) */
	const struct tp_search_options *o;
	struct tp_search_options opts;
	uint64_t o_playouts;
	struct tp_search_result *res;
	struct tp_groups groups;
	struct tp_space space;
	uint32_t K;

	pthread_mutex_t lock; /* cache, incumbent, counters */
	bool have_lock;
	struct cache_entry *cache;
	size_t cache_cap, cache_n;
	struct sctx_best best;    /* overall (may be a plan given as is) */
	struct sctx_best bestdec; /* best decision vector: the incumbent
				     the tree search refines */
	uint64_t improvements; /* times best improved */
	/* the best few distinct decision vectors (start points of the
	   sweeps), best first */
#define SCTX_ELITES 4
	struct sctx_best elite[SCTX_ELITES];
	uint64_t elite_key[SCTX_ELITES];
	uint32_t n_elite;
	/* the baselines' decision vectors (have = false when none) */
	struct sctx_best base_dec[TP_BASELINE_COUNT];

	_Atomic uint64_t simulations, cache_hits, evaluations, playouts;
	_Atomic uint64_t bounded; /* settled by the lower bound */
	/* the provider: answers computed (forward passes), answers from the
	   workers' caches, wall time inside it */
	_Atomic uint64_t prior_calls, prior_hits, prior_ns;
	_Atomic uint64_t runtime_rejects; /* plans the runtime cannot run */
	/* the plan cache (struct sim_entry), under lock; simc NULL = off
	   (options.node_priors with a provider: its priors read the report
	   of a state simulated just now, which a replay has not) */
	struct sim_entry *simc;
	size_t simc_cap, simc_n;
	_Atomic uint64_t sim_replays; /* full runs replayed */
	/* the first plan the evaluator refused: why (under lock; "" =
	   none), said when no candidate could be evaluated */
	char first_refusal[1024];
	/* the best plan using every device (result.all_plan), under lock */
	bool have_all, all_feasible;
	double all_time, all_over;
	/* the all-device plan with the lowest lower bound among those the
	   bound settled (simulated at the end, search.c all_devices) */
	struct sctx_best all_bound;
	/* A search runs in stages of doubling budgets (search.c,
	   STAGE_FIRST): sweeps, then the tree, up to stage_end playouts
	   (64, 128, 256, ... whatever the limits); the next stage starts at
	   stage_start = the last end.  The limits only cut a stage short.
	   stage_end 0 before the first stage. */
	uint64_t stage_start, stage_end;
	/* decision vectors the sweeps left at a local optimum (a ring) */
#define SCTX_POLISHED 8
	struct sctx_keys {
		uint64_t key[SCTX_POLISHED];
		uint32_t n; /* keys added; the last SCTX_POLISHED kept */
	} polished,
		/* of those, the ones a guided search also completed: a pass
		   over the changes the guided passes skipped found nothing
		   either */
		completed;
	/* a sweep pass the stage's budget cut short without finding an
	   improvement (baselines.c): the next stage resumes it at pos
	   when it starts from the same incumbent (key) with the same
	   number of changes (n) instead of scoring its first part again */
	struct {
		bool have;
		uint64_t key;
		uint32_t n, pos;
	} sweep_resume;
	uint64_t sweep_resumed; /* result.sweep_resumed */
	uint32_t kicks;         /* result.kicks */
	/* STALL_UNIFORM (mcts.c): the last tree phase found nothing
	   better than the plan it started from; result.uniform_trees */
	bool tree_stalled;
	uint32_t uniform_trees;
	uint32_t completions;   /* result.completions */
	uint64_t gain_skips;    /* result.gain_skips */
	uint32_t by_time_passes, fitting_passes; /* result.by_time_passes ... */
	uint32_t priced_passes; /* result.priced_passes (sweep.c PRICED) */
	bool rollout_priced;    /* result.rollout_priced (ROLLOUT_PRICE) */
	double run_time; /* result.runnable_plan's time, under lock */
	_Atomic uint64_t sim_ns; /* time inside the evaluator (o->clock) */
	_Atomic int stop;      /* limits reached or error */
	double t0;             /* start (sctx_clock) */
	double last_progress;
	const char *phase;
	enum tp_status error;  /* first error of a worker */
	struct tp_error err;
	double ref_time;       /* best baseline's time (progress) */
	bool cost;             /* o->objective is COST */
	bool direct; /* o->bound_sim and ev bounds its RUNs (BOUND_SIM) */
	/* ev's answer scores (has_answer): the best plan by them (the answer),
	   while best, bestdec and the elites steer by the run reports */
	struct sctx_best ans;
	/* the provider scratch and answer cache of workers that ended,
	   handed to the next ones of this search (worker_init; under lock):
	   the GNN's static features, its body cache and the answers outlive
	   a stage's workers (issue 27) */
	struct sctx_pool prior_pool, pcache_pool;
	/* EVAL_POOL: the same for their evaluator and bound scratches (the
	   simulator's caches are exact: a scratch reused gives what a fresh
	   one gives, tests/test_sim.c) */
	struct sctx_pool ev_pool, bscr_pool;
};

/* A thread's working set. */
struct worker {
	struct sctx *s;
	uint32_t id;
	void *ev_scratch;
	void *prior_scratch;
	struct tp_space_scratch *sscr;
	struct tp_plan plan;
	struct tp_report report;
	struct tp_sim_scratch *bscr; /* for o->bound_sim */
	struct tp_decision *dec; /* K, the state being built */
	uint8_t *mark; /* per device, for counting the devices a plan uses */
	struct tp_rng rng;
	struct tp_error err;
	struct search_prior_cache *pcache; /* guide.c; NULL: no provider */
};

/* Result of scoring one decision vector. */
struct evalres {
	bool ok;        /* materialised and simulated */
	bool feasible;
	double time, over;
	bool fresh;     /* simulated now (report valid) rather than cached */
	bool bounded;   /* not simulated, cannot beat the cutoff it was asked
			   for: feasible = true and time a lower bound (at
			   least the cutoff; memory not checked), or
			   feasible = false (out of memory), time INFINITY */
	/* the score above is the objective's (options.objective: time is
	   the iteration time or the cost per iteration, feasible also says
	   the time limit is met); the iteration time in seconds (a lower
	   bound when bounded) and whether the plan fits in memory */
	double secs;
	bool fits;
	/* fresh with ev's answer score (has_answer): that score */
	bool ans;
	bool ans_feasible;
	double ans_time, ans_over;
};

/* CLOCK_MONOTONIC in seconds (wall-time statistics). */
double sctx_now(void);
/* The search's clock (options.clock, else sctx_now); the time limit,
 * the reserve and elapsed time are measured on it. */
double sctx_clock(const struct sctx *s);
double sctx_elapsed(const struct sctx *s);
/* Out of time with a plan in hand: the time limit (or a stop request)
 * is reached and some plan was scored.  Baselines and seeds score
 * nothing more then (until the search has a plan they go on, so that
 * it always answers). */
bool sctx_out_of_time(struct sctx *s);
/* Limited by time alone (a time limit, no playout limit): the phases
 * may then run in another order than in a playout-limited search
 * (search.c SEEDS_FIRST, baselines.c PROBE_MEMORY); playout-limited
 * searches, self-play training's among them, are unchanged. */
bool sctx_time_only(const struct sctx *s);
/* Seconds kept at the end of the time limit for scoring the answer. */
double sctx_reserve(struct sctx *s);
/* The mean seconds of one simulation so far (options.clock; 0 before
 * the first): what sctx_reserve and the priced steps (search.c
 * ROLLOUT_PRICE, sweep.c PRICED) expect the next ones to cost. */
double sctx_mean_sim(const struct sctx *s);
/* Seconds left before the time limit less the reserve (HUGE_VAL
 * without a time limit). */
double sctx_time_left(struct sctx *s);
/* Limits (time, playouts) or a stop request reached? */
bool sctx_should_stop(struct sctx *s);
/* ... and not only the current stage's playouts (the search ends). */
bool sctx_stopped_for_good(struct sctx *s);
void sctx_progress(struct sctx *s, bool force);

/* The context of one tp_search_run: groups, action space, cache, the
 * incumbent slots (sctx_init fills everything tp_search_run's arguments
 * give; TP_ENOMEM or the coarsening's/action space's errors into
 * s->err).  sctx_release frees it all, also after a failed init. */
enum tp_status sctx_init(struct sctx *s, const struct tp_model *m,
			 const struct tp_cluster *c,
			 const struct tp_evaluator *ev,
			 const struct tp_search_options *o,
			 struct tp_search_result *res);
void sctx_release(struct sctx *s);

enum tp_status worker_init(struct worker *w, struct sctx *s, uint32_t id);
void worker_release(struct worker *w);
/* w's provider, evaluator and bound scratches into s's pools (each kept
 * by w when its pool is full); s->lock held.  worker_release and the
 * tree's LEND_SCRATCH (search.c). */
void worker_put_warm(struct sctx *s, struct worker *w);

/*
 * Score (gl, dec): from the cache or by materialising and evaluating;
 * updates the incumbent (source names the candidate when it wins).
 * cutoff > 0: the caller only needs to know whether the plan is faster
 * than cutoff seconds; with o->bound_sim a plan whose lower bound is at
 * least cutoff is not simulated (out->bounded, out->time = the bound).
 * Returns an error only for evaluator failures other than bad plans.
 */
enum tp_status sctx_eval(struct worker *w, const struct tp_globals *gl,
			 const struct tp_decision *dec, const char *source,
			 double cutoff, struct evalres *out);
/* The cutoff for candidates of the overall best (0 while nothing
 * feasible is known). */
double sctx_best_cutoff(struct sctx *s);
/* The cutoff of a candidate that counts only if it fits (PROBE_MEMORY,
 * MEMORY_CUT): in a search limited by time alone that has a plan that
 * fits, HUGE_VAL, a time no plan beats, so the simulator settles a plan
 * out of memory by its memory check and simulates the others in full;
 * else 0 (every plan simulated in full). */
double sctx_memory_cutoff(struct sctx *s);
/* Score a ready plan (not cached); may become the incumbent.  cutoff as
 * for sctx_eval. */
enum tp_status sctx_eval_plan(struct worker *w, const struct tp_plan *plan,
			      const char *source, double cutoff,
			      struct evalres *out);

/* The memory excess fraction of a result (0 when it fits), whatever
 * the objective. */
double sctx_mem_over(const struct sctx *s, const struct evalres *r);

/* Is (feasible, time, over) a better candidate than the incumbent? */
bool sctx_better(bool f1, double t1, double o1, bool f2, double t2,
		 double o2);

/* Baselines into s->res->baselines; their decision vectors (when they
 * have one) are offered as candidates.  Then the structured seeds. */
enum tp_status search_first_fit(struct worker *w);
/* The provider's greedy rollout, simulated once (baselines.c). */
enum tp_status search_rollout(struct worker *w);
enum tp_status search_baselines(struct worker *w);
enum tp_status search_seeds(struct worker *w);
/* The cost objective's seeds: plans on one set of each family and type
 * (baselines.c). */
enum tp_status search_seeds_cost(struct worker *w);
/* Seeds of mixed tensor-parallel replicas (mixed.c): raw plans, where
 * the runtime runs them. */
enum tp_status search_seeds_mixed(struct worker *w);
/* The fastest device type the cluster's devices have (space->type_speed)
 * and how many types they have (cluster->types is the catalogue). */
uint32_t search_mixed_fast_type(const struct tp_space *sp,
				uint32_t *n_present);
/* w->plan cleared to the header of a mixed seed: the model's batch in
 * mb micro-batches, 1F1B, no interleaving, ZeRO 0 (mixed groups take
 * none), the search's compression. */
void search_mixed_plan_start(struct worker *w, uint32_t mb);
/* SAILOR-shaped pipelines of mixed stages and the moves that change
 * them (mixed_pipe.c), where the runtime runs them. */
enum tp_status search_mixed_pipelines(struct worker *w);
/* sweep.c: coordinate descent on the incumbent (single and stacked
 * changes, RELAX, RUN, kicks). */
enum tp_status search_polish(struct worker *w);

/* guide.c: the prior provider's view of a state.  Buffers for n actions
 * (pacts, priors) and K groups (decided). */
struct search_prior_buf {
	struct tp_prior_action *pacts;
	bool *decided;
	float *priors;
	float *gains; /* n: the provider's gains (prior.h), NAN = unknown;
			 NULL = not asked */
	bool local;   /* the answer may come from another state with the
			 same level, globals and candidate actions
			 (guide.c pcache_key) */
};
/* The provider the workers ask: the prior, else options.stats_prior
 * (measured, not followed; search.h). */
static inline const struct tp_prior_provider *
sctx_provider(const struct sctx *s)
{
	if (s->o->prior)
		return s->o->prior;
	return s->o->gain_stats ? s->o->stats_prior : NULL;
}

/* The largest action list a level has (MCTS children, sweep moves). */
#define SEARCH_MAX_ACTIONS 64
/*
 * The answer cache of a worker (guide.c): the provider's normalised
 * priors (and gains, when they were asked) of the states it was asked
 * about, by (level, state, number of actions; the search's one
 * provider, never its address, which varies from run to run), direct-mapped
 * (a new answer replaces an older one in its slot).  A state the tree
 * expands again (every round restarts the tree from the new incumbent,
 * so the states near the root come back round after round) and a
 * sweep pass at an incumbent already swept cost no forward pass.  The first answer
 * for a state is the one kept: asked after the state's simulation, it
 * read the simulated load; a later ask, from the evaluation cache, would
 * have read estimates.
 */
struct search_prior_cache;
struct search_prior_cache *search_prior_cache_new(void);
void search_prior_cache_free(struct search_prior_cache *c);
/* The candidate actions acts[0 .. n) at `level` of the state (gl, dec)
 * that search_priors asks about.  fresh: w->plan and w->report hold the
 * state's plan and its simulation; otherwise the plan is materialised
 * into w->plan. */
struct search_prior_ask {
	uint32_t level;
	const struct tp_action *acts;
	uint32_t n;
	const struct tp_globals *gl;
	const struct tp_decision *dec;
	bool fresh;
};
/*
 * Priors from provider pp (normalised; uniform when pp is NULL) of the
 * candidates of q; the tree passes options.prior, the sweeps
 * sctx_provider.  q->acts[0] keeps the default.
 */
enum tp_status search_priors(struct worker *w,
			     const struct tp_prior_provider *pp,
			     const struct search_prior_ask *q,
			     const struct search_prior_buf *b);
/*
 * Which of the changes 1 .. n-1 (0 keeps the default and is never kept)
 * to try, by prior: the most likely ones until they hold `mass` of the
 * changes' prior, at least min_keep of them.  Fills keep[0 .. n); returns
 * how many are kept.  Deterministic (ties by position).
 */
uint32_t search_prior_cut(const float *priors, uint32_t n, double mass,
			  uint32_t min_keep, bool *keep);
/* rank[i] of the changes 1 .. n-1: 0 = the likeliest by prior (priors
 * NULL: candidate order); ties by position. */
void search_prior_rank(const float *priors, uint32_t n, uint32_t *rank);

/* The tree search until a limit; returns the first worker error. */
enum tp_status search_mcts(struct sctx *s);

/* Assign groups [0, K) to n stages contiguously, minimising the largest
 * stage cost where stage j's cost is sum(weight[g]) / speed[j]; writes
 * stage_of[K].  Deterministic. */
void search_split_stages(const double *weight, uint32_t K,
			 const double *speed, uint32_t n, uint32_t *stage_of);

#endif
