/*
 * search.h - `tagplan plan`'s engine: baselines, structured seeds and a
 * Monte Carlo tree search over per-group decisions, every candidate scored
 * by an evaluator (the simulator).
 *
 * Flow of tp_search_run (details in src/search/README):
 *   1. cut the model into op groups (coarsen.h) and build the action space
 *      (actions.h);
 *   2. score the baselines dp, dp-hetero, megatron and greedy (each also
 *      kept as a candidate answer) and a few structured seeds (pipelines
 *      over device types, nodes and speed-balanced parts, tensor-parallel
 *      data parallelism with speed-proportional shares);
 *   3. MCTS in rounds: each round's tree decides the global settings, then
 *      one action per group in topological order; groups not yet decided
 *      keep the incumbent best plan's choice, so every state is a complete
 *      plan; leaves are scored by the evaluator (cached by plan hash);
 *      PUCT over priors from a tp_prior_provider (uniform without one);
 *      virtual loss with several threads; a round ends after a playout
 *      budget or soon after the incumbent improves, and the next tree
 *      starts from the new incumbent;
 *   4. the answer is the best plan ever scored (feasible first, then
 *      fastest; when nothing fits, the one closest to fitting), so it is
 *      never slower than the best baseline; with an evaluator's
 *      answer_report (gradient compression), the best plan by that
 *      score among all plans simulated, the search still steered by
 *      the run reports.
 *
 * Determinism: with threads == 1 and the search stopped by the playout
 * limit (not the clock or a signal), the result is a pure function of
 * (model, cluster, options): byte-identical run to run.
 *
 * Threads: tp_search_run starts options->threads worker threads (pthreads)
 * and joins them before returning.  The evaluator and the prior provider
 * are called concurrently, each thread with its own scratch.
 *
 * Ownership: the result is caller-embedded: tp_search_result_release
 * frees it (also after a failed run).  Model, cluster, evaluator and
 * provider are borrowed.
 */
#ifndef TP_SEARCH_H
#define TP_SEARCH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/report.h"
#include "core/prior.h"
#include "core/runtime.h"

struct tp_sim;
struct tp_sim_cut;
struct tp_globals;  /* actions.h */
struct tp_decision; /* actions.h */

/*
 * How plans are scored: an evaluator is one function and its context,
 * ev->call(ev->ctx, q, err), asked one thing per call (q->ask).  The
 * caller zeroes q and fills the inputs of the ask; the outputs an
 * evaluator does not set stay zero.  An evaluator with no use for an ask
 * (SCRATCH_*, BOUND_SIM) returns TP_OK and leaves q as it is; RUN and
 * FINALIZE it must answer.  Calls with distinct scratches run
 * concurrently (one per search thread).  An infeasible plan (out of
 * memory) is not an error: report->feasible = false with over_bytes and
 * worst_device set.  Callers use the tp_evaluator_* helpers below.
 */
enum tp_eval_ask {
	/* q->scratch = a new working memory for one thread (NULL: none
	   needed); TP_ENOMEM */
	TP_EVAL_SCRATCH_NEW,
	/* free q->scratch (NULL: nothing to free) */
	TP_EVAL_SCRATCH_FREE,
	/* score q->plan into q->report (tp_report_init'ed by the caller,
	   reused across calls).  With q->cut != NULL (asked only of an
	   evaluator that named a simulator through BOUND_SIM):
	   tp_sim_run_bounded semantics against q->cutoff seconds.  An
	   evaluator that knows a second score to choose the answer by
	   (the joint compression evaluator, joint.h: without and with
	   compression) sets q->has_answer, and q->answer_report to that
	   score held in scratch when it differs from report (NULL: the
	   same); the search then answers with the plan of the best answer
	   score among all it simulated, and FINALIZE must reproduce that
	   score for it. */
	TP_EVAL_RUN,
	/* called once on the answer, q->answer == q->plan: may add
	   per-group decisions the search does not make itself (gradient
	   compression) to it when they make it faster, and scores it into
	   q->report.  An evaluator that adds nothing scores it as RUN. */
	TP_EVAL_FINALIZE,
	/* q->sim = the simulator whose tp_sim_run_bounded a RUN with a
	   cut performs (NULL: none; the search then takes the lower bound
	   itself and runs what it does not settle) */
	TP_EVAL_BOUND_SIM
};

struct tp_eval_call {
	enum tp_eval_ask ask;
	void *scratch;              /* the thread's (SCRATCH_NEW: out) */
	const struct tp_plan *plan; /* RUN, FINALIZE */
	struct tp_plan *answer;     /* FINALIZE: the plan, to change */
	struct tp_report *report;   /* RUN, FINALIZE: out */
	double cutoff;              /* RUN with cut */
	struct tp_sim_cut *cut;     /* RUN: NULL = an unbounded run */
	bool has_answer;            /* RUN: out */
	const struct tp_report *answer_report; /* RUN: out */
	const struct tp_sim *sim;              /* BOUND_SIM: out */
};

struct tp_evaluator {
	void *ctx;
	enum tp_status (*call)(void *ctx, struct tp_eval_call *q,
			       struct tp_error *err);
};

/* The asks as calls.  scratch_new: *scratch = the thread's scratch
 * (maybe NULL), TP_ENOMEM into err.  run and finalize as RUN (unbounded)
 * and FINALIZE.  bound_sim: the evaluator's answer to BOUND_SIM. */
enum tp_status tp_evaluator_scratch_new(const struct tp_evaluator *ev,
					void **scratch, struct tp_error *err);
void tp_evaluator_scratch_free(const struct tp_evaluator *ev, void *scratch);
enum tp_status tp_evaluator_run(const struct tp_evaluator *ev, void *scratch,
				const struct tp_plan *plan,
				struct tp_report *report,
				struct tp_error *err);
enum tp_status tp_evaluator_finalize(const struct tp_evaluator *ev,
				     void *scratch, struct tp_plan *plan,
				     struct tp_report *report,
				     struct tp_error *err);
const struct tp_sim *tp_evaluator_bound_sim(const struct tp_evaluator *ev);

struct tp_sim;
struct tp_sfb;

/*
 * The simulator (src/sim/sim.h) as an evaluator: one simulator scratch per
 * search thread.  With sfb != NULL the answer's gradient compression is
 * chosen at the end (tp_sfb_simulate: selected, and kept only when the
 * simulator finds it faster).  ctx is caller-embedded storage for the
 * evaluator's context; sim, sfb and ctx must outlive the evaluator.
 */
struct tp_search_simeval {
	const struct tp_sim *sim;
	const struct tp_sfb *sfb;
};

void tp_search_sim_evaluator(struct tp_search_simeval *ctx,
			     const struct tp_sim *sim,
			     const struct tp_sfb *sfb,
			     struct tp_evaluator *ev);

enum tp_baseline {
	TP_BASELINE_DP,        /* all devices data parallel, even split */
	TP_BASELINE_DP_HETERO, /* ... with speed-proportional shares */
	TP_BASELINE_MEGATRON,  /* best uniform tp x pp x dp x micro-batch */
	TP_BASELINE_GREEDY,    /* list-scheduling placement (m-ETF) */
	TP_BASELINE_COUNT
};

const char *tp_baseline_name(enum tp_baseline b);
/* -1 for an unknown name. */
int tp_baseline_parse(const char *s);

struct tp_baseline_result {
	bool available;  /* false: no valid configuration (see why) */
	bool feasible;
	double iteration_time_s;
	double over_fraction; /* memory excess / capacity when infeasible */
	char config[160];     /* what was chosen, human-readable */
	char why[512];        /* when not available or infeasible */
	struct tp_plan plan;  /* the plan scored */
};

struct tp_search_progress {
	uint64_t playouts, simulations;
	double elapsed_s, time_limit_s; /* time_limit_s 0 = none */
	uint64_t playout_limit;         /* 0 = none */
	bool have_best, best_feasible;
	double best_time_s;
	double reference_time_s; /* best baseline */
	const char *phase;       /* "baselines", "seeds", "search", ... */
	bool cost; /* objective cost: best_time_s is the best plan's US
		      dollars per iteration, reference_time_s 0 */
};

/* The default options.gain_skip: a guided sweep does not simulate a
 * change the provider predicts at least 15% slower than the incumbent
 * (prior.h gains; src/gnn/README, "Gains").  bench_gnn, 10 cases x 3
 * seeds, the network of 2026-12-03: within 2% of the reference in 2.83x
 * fewer playouts than unguided at 0.10, against 2.02x without; 0.07 gave
 * 2.72x, 0.14 2.03x, 0.2 skips nothing.  0.10 until 2026-12-06: with
 * that evening's network it skipped, on GPT-3 175B on 256 mixed GPUs,
 * the change predicted 10.6% slower that is 4.1% faster (guided 216.4
 * s against 207.4 at 1,000 playouts, seeds 1-2); at 0.15 the
 * playouts-to-2% part is the same (seed 1, 4.86x, every plan) and so are
 * the other equal-playout plans of the equal-time table (seeds 1-2). */
#define TP_SEARCH_GAIN_SKIP 0.15

/*
 * What the search minimises.  THROUGHPUT: the iteration time (feasible
 * first, then fastest).  COST: the cost per iteration in US dollars (the
 * price_per_hour of the devices a plan uses, each once, times its
 * iteration time / 3600; every device type of the cluster must have a
 * price) of the plans whose iteration time is at most max_iter_time_s;
 * the model's global batch is the same in every plan, so this ranks as
 * the cost per token does.  A plan over the limit ranks below every plan
 * within it (among themselves: the closest to the limit first), a plan
 * that does not fit in memory below those.  Every score the search keeps
 * (cache, incumbent, elites, tree values, cutoffs) is then that cost: the
 * simulator's lower bound prunes in it (a bound in seconds times the
 * plan's price per hour), the guided sweeps' skips by predicted slowdown
 * (gain_skip) are off, and the best plan on all devices (result.all_*)
 * is not tracked.  The prior provider still ranks candidates by how fast
 * it predicts them (src/search/README, "Objective").
 */
enum tp_search_objective {
	TP_SEARCH_OBJECTIVE_THROUGHPUT = 0,
	TP_SEARCH_OBJECTIVE_COST
};

struct tp_search_options {
	uint64_t seed;
	uint32_t threads;      /* >= 1 */
	double time_limit_s;   /* 0 = no limit */
	uint64_t playouts;     /* 0 = no limit; at least one limit is set */
	int baseline;          /* -1: search; else answer this baseline */
	/* Answer this plan instead of searching (`plan -s STRATEGY`), the
	   baselines scored beside it as with `baseline`; given_source says
	   where it came from (the summary's "answer from").  NULL: search,
	   or answer `baseline`. */
	const struct tp_plan *given;
	const char *given_source;
	enum tp_compression compression;
	const struct tp_prior_provider *prior; /* NULL: uniform priors */
	bool prior_any_cluster; /* consult prior also on a cluster its
				   covers() rules out (prior.h); false:
				   search as without it there
				   (tp_search_prior_declined) */
	uint32_t groups;       /* 0 = automatic */
	size_t tree_bytes;     /* tree memory budget; 0 = 256 MiB */
	bool no_seeds;         /* skip the structured seeds (tests) */
	bool no_mixed;         /* the tree and sweeps without mixed
				  decisions (actions.h TP_DECISION_MIXED;
				  A/B measurements: bench_peers) */
	bool gain_stats;       /* measure the provider's gains (result
				  gain_*; benchmarks) */
	/* With gain_stats and no prior: a provider the sweeps ask only to
	   measure it on the unguided search's own states (no selection by
	   it); the search stays unguided.  Benchmarks. */
	const struct tp_prior_provider *stats_prior;
	bool no_plan_cache;    /* simulate every plan scored, also one of
				  the same content as a plan simulated
				  before (context.c run_eval's plan cache;
				  A/B measurements and tests) */
	bool node_priors;      /* the provider is asked about every tree
				  node and sweep state, as before issue 27:
				  no level priors (mcts.c), no answers
				  shared by local keys (guide.c); A/B
				  measurements */
	double gain_skip;      /* > 0: guided sweeps skip changes the
				  provider's gains predict at least this
				  much slower (0.1 = 10%); 0 = off;
				  default TP_SEARCH_GAIN_SKIP */
	volatile sig_atomic_t *stop; /* nonzero = stop soon (signals) */
	void (*progress)(void *ctx, const struct tp_search_progress *p);
	void *progress_ctx;
	double progress_interval_s; /* 0 = 0.2 s */
	/* The simulator behind the evaluator (same model, cluster and
	   options; compression on top is fine), or NULL.  When set, a plan
	   that cannot beat the plan it competes with (the best so far, or
	   the sweep's current point) by the simulator's lower bound
	   (tp_sim_lower_bound, a tenth of a simulation) is not simulated:
	   it is scored by its bound, which never changes the answer.  An
	   evaluator that names a simulator (BOUND_SIM) bounds its own RUNs
	   and it must be this one; otherwise the search takes the bound
	   itself before asking RUN. */
	const struct tp_sim *bound_sim;
	/* The runtime the answer must run on (core/runtime.h), or NULL for
	   "none": the action space, the baselines and the seeds hold only
	   plans it executes (actions.h tp_space_set_runtime); every plan
	   scored is checked again (result.runtime_rejects counts the ones
	   refused unsimulated: 0 but for stacked sweep changes). */
	const struct tp_runtime *runtime;
	/* tp_planner_run: search without the runtime's capability limits
	   (its behaviour still prices the plans): what the runtime costs */
	bool unconstrained;
	/* A runtime (or NULL) whose best executable plan the search keeps
	   besides its answer (result.runnable_plan): among the plans it
	   simulated, the fastest feasible one this runtime executes
	   (tp_runtime_plan_check).  tp_planner_run sets it to the planner's
	   runtime when unconstrained.  Like the answer it only improves
	   with the budget, so `plan` taking the faster of the runtime's
	   search and this keeps the anytime property. */
	const struct tp_runtime *runnable_by;
	/* what the search minimises (default THROUGHPUT), and under COST
	   the iteration time a plan must meet (> 0) */
	enum tp_search_objective objective;
	double max_iter_time_s;
	/* The clock time_limit_s is measured on, in seconds from any
	   origin (NULL: CLOCK_MONOTONIC).  Tests give one that advances
	   with the work done, so that a time limit bounds a count of
	   simulations rather than a wall time. */
	double (*clock)(void *ctx);
	void *clock_ctx;
};

void tp_search_options_default(struct tp_search_options *o);

struct tp_search_result {
	struct tp_plan plan;     /* the answer (summary not filled) */
	struct tp_report report; /* its evaluation */
	bool have_plan;
	bool interrupted;        /* stopped by options->stop */
	/* what ended the search: the playout limit, the time limit, a stop
	   request (interrupted), or none (a baseline answer, an error) */
	enum tp_search_stop {
		TP_SEARCH_STOP_NONE,
		TP_SEARCH_STOP_PLAYOUTS,
		TP_SEARCH_STOP_TIME,
		TP_SEARCH_STOP_INTERRUPT
	} stopped_by;
	char source[96];         /* where the answer came from */
	struct tp_baseline_result baselines[TP_BASELINE_COUNT];
	uint32_t n_groups;
	uint64_t playouts, simulations, cache_hits, evaluations;
	uint64_t tree_nodes, rounds, seeds;
	bool tree_full; /* the tree budget ran out (expansion stopped) */
	double seconds;
	double lower_bound_s; /* model FLOP / sum of catalogue peak FLOP/s
				 (tp_planner_run: the simulator's speeds) */
	uint64_t bounded; /* evaluations settled by the simulator's lower
			     bound instead of a simulation (bound_sim) */
	uint64_t replays; /* evaluations answered without a simulation by
			     the full run of a plan of the same content
			     (context.c run_eval's plan cache) */
	/* the prior provider: states it was asked about (its forward
	   passes), states answered from the workers' answer caches instead,
	   and the wall time spent in it */
	uint64_t prior_calls, prior_hits;
	double prior_seconds;
	/* options.prior was set but not consulted: its covers() ruled the
	   cluster out (tp_search_prior_declined); prior_declined_why says
	   why ("the GNN was trained on clusters of up to 216 GPUs, this
	   one has 1,024") */
	bool prior_declined;
	char prior_declined_why[160];
	uint64_t sweep_resumed; /* single changes a later stage did not score
				   again: it resumed the sweep pass an earlier
				   stage's budget cut short (baselines.c) */
	uint32_t kicks; /* sweeps started from a kick of the best plan
			   (iterated local search, baselines.c) */
	uint32_t completions; /* guided: stages that began with a pass over
				 the changes the prior cut skipped, at a
				 local optimum of the likely ones
				 (COMPLETION, baselines.c) */
	uint32_t by_time_passes, fitting_passes; /* guided, time limit alone:
				sweep passes the budget share cut short, taken
				in both orders and nothing cut (BY_TIME,
				sweep.c), and passes that fit it, which keep
				the prior's order and cut */
	uint32_t priced_passes; /* guided, time limit alone: sweep passes
				   taken in the unguided order because their
				   simulations would cost more than half the
				   time left (PRICED, sweep.c) */
	bool rollout_priced; /* guided, time limit alone: the rollout left
				out, its simulations too dear for the limit
				(ROLLOUT_PRICE, search.c) */
	uint32_t uniform_trees; /* guided, time limit alone: tree phases run
				   with uniform priors because the one before
				   found nothing (STALL_UNIFORM, mcts.c) */
	uint64_t gain_skips; /* single changes guided sweeps did not
				simulate because the provider's gains
				predicted them slow (options.gain_skip) */
	uint64_t runtime_rejects; /* plans refused unsimulated: the runtime
				     cannot execute them (options.runtime) */
	/* The best plan found that uses every device (have_all false when
	   the answer does, or none was scored): what the idle devices of
	   the answer would have cost (core/runtime.h, plan summary). */
	bool have_all;
	bool all_feasible;
	double all_time_s;
	struct tp_plan all_plan;
	/* With options.runnable_by: the fastest feasible plan simulated
	   that runtime executes, and its evaluation (RUN, without
	   FINALIZE's additions) */
	bool have_runnable;
	struct tp_plan runnable_plan;
	struct tp_report runnable_report;
	/* With options.gain_stats: the provider's predicted gains against
	   the sweeps' scored changes.  Signs: changes scored, those whose
	   predicted sign (faster or not) was right; better: changes that
	   beat the incumbent, and the sums over them of the share of the
	   same pass's other changes ranked below them by gain and by prior
	   (divided by gain_better: an AUC, 0.5 = chance); sums over the
	   simulated changes of x = predicted, y = actual ln(t_inc / t).
	   clear: the same for the changes at least 1% faster than the
	   incumbent (most of the better ones gain far less). */
	uint64_t gain_signs, gain_sign_ok, gain_better;
	double gain_better_rank, prior_better_rank;
	uint64_t gain_clear;
	double gain_clear_rank, prior_clear_rank;
	uint64_t gain_n;
	double gain_sx, gain_sy, gain_sxx, gain_syy, gain_sxy;
	/* The best decision vector the search scored: the incumbent its
	   tree refines (NULL when there is none, or the run answered a
	   baseline or a given plan).  best_gl is its global settings,
	   best_dec its decisions, one per group (n_groups), both in the
	   action space (actions.h) of the coarsening tp_coarsen(m,
	   options.groups) under options.runtime; best_dec_time_s and
	   best_dec_feasible its evaluation (a RUN report); best_dec_answer
	   when the answer is this vector's plan, false when it is a plan
	   scored as is (a baseline's, a mixed move's, a stacked sweep
	   change's) or chosen by the evaluator's answer score.  Owned by
	   the result (tp_search_result_release).  Self-play distillation
	   (src/train) maps it onto its decision levels. */
	struct tp_globals *best_gl;
	struct tp_decision *best_dec;
	bool best_dec_feasible, best_dec_answer;
	double best_dec_time_s;
};

void tp_search_result_init(struct tp_search_result *r);
void tp_search_result_release(struct tp_search_result *r);

/*
 * Whether a search with options o on cluster c leaves o->prior out: it
 * is set, has covers() (prior.h), covers() rules c out and
 * o->prior_any_cluster is false.  The reason goes to why (may be NULL).
 * tp_search_run decides by this: such a search runs exactly as with no
 * prior (uniform priors, no rollout, no provider calls) and says so in
 * its result (prior_declined); callers may ask first to tell the user.
 */
bool tp_search_prior_declined(const struct tp_search_options *o,
			      const struct tp_cluster *c, char *why,
			      size_t why_size);

/*
 * Plan model m on cluster c.  Returns TP_OK with res->have_plan (even
 * when nothing fits: res->report.feasible says so), TP_EINTERRUPTED
 * never (an interrupted search returns TP_OK with res->interrupted), or
 * an error (TP_ENOMEM, TP_EINPUT from the evaluator, TP_EINTERNAL).
 */
enum tp_status tp_search_run(const struct tp_model *m,
			     const struct tp_cluster *c,
			     const struct tp_evaluator *ev,
			     const struct tp_search_options *o,
			     struct tp_search_result *res,
			     struct tp_error *err);

/*
 * The search's value of an evaluation against reference time ref_s (see
 * prior.h): feasible: 0.25 + 0.75 tanh(2 ln(ref / t)); infeasible:
 * -1 + 0.4 exp(-3 over_fraction).  In [-1, 1].
 */
double tp_search_value(double ref_s, bool feasible, double time_s,
		       double over_fraction);

/* Memory excess of an infeasible report as a fraction of the worst
 * device's capacity (0 when feasible or unknown). */
double tp_search_over_fraction(const struct tp_report *r);

#endif
