#include "search.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search_int.h"

/* The search is anytime: it runs in stages of doubling budgets, STAGE_FIRST, 2
 * STAGE_FIRST, 4 STAGE_FIRST, ... playouts whatever the limits, each one the
 * sweeps (half the stage's new playouts at most; from the best plan only, or
 * from a kick of it when they already left it at a local optimum; resuming a
 * pass the last stage cut short: baselines.c) and then the tree search.  A
 * limit only cuts the current stage short, and a search limited by time alone
 * runs with an unbounded playout limit (context.c, sctx.opts) rather than a
 * trajectory of its own (but its phases before the stages run in another order,
 * SEEDS_FIRST below, its guided sweeps keep every change, in another order:
 * sweep.c BY_TIME, and its guided trees after one that found nothing take
 * uniform priors: mcts.c STALL_UNIFORM), so with one thread a search with a
 * larger limit of the same kind passes through every state of one with a
 * smaller limit and keeps the best plan: its answer is at least as fast
 * (between time limits only where a guided search's simulations are cheap
 * for the limit: where they are dear it leaves out the rollout and takes
 * sweep passes in the unguided order, ROLLOUT_PRICE below and sweep.c
 * PRICED, by the limit and measured times)
 * (tests/test_anytime.c, which also finds no search by time slower than the
 * playout-limited one it passed; bench_hetero).  Until 2026-12 the last stage
 * ended at the playout limit and a time-only search split sweeps and tree by
 * time and took lazy or uniform priors (guide.c PRIOR_SHARE, mcts.c lazy
 * priors: removed since): a 10 s search of GPT-3 13B on A100 + V100 + L4 nodes
 * returned 89.0 s after 45,146 playouts against 88.2 s for the 5,000-playout
 * default. */
#define STAGE_FIRST 64

void tp_search_options_default(struct tp_search_options *o)
{
	memset(o, 0, sizeof(*o));
	o->threads = 1;
	o->time_limit_s = 30;
	o->playouts = 0;
	o->baseline = -1;
	o->compression = TP_COMPRESSION_LOSSLESS;
	o->gain_skip = TP_SEARCH_GAIN_SKIP;
}

void tp_search_result_init(struct tp_search_result *r)
{
	memset(r, 0, sizeof(*r));
	tp_plan_init(&r->plan);
	tp_report_init(&r->report);
	tp_plan_init(&r->all_plan);
	tp_plan_init(&r->runnable_plan);
	tp_report_init(&r->runnable_report);
	for (int b = 0; b < TP_BASELINE_COUNT; b++)
		tp_plan_init(&r->baselines[b].plan);
}

void tp_search_result_release(struct tp_search_result *r)
{
	if (!r)
		return;
	tp_plan_release(&r->plan);
	tp_report_release(&r->report);
	tp_plan_release(&r->all_plan);
	tp_plan_release(&r->runnable_plan);
	tp_report_release(&r->runnable_report);
	for (int b = 0; b < TP_BASELINE_COUNT; b++)
		tp_plan_release(&r->baselines[b].plan);
	free(r->best_gl);
	free(r->best_dec);
	memset(r, 0, sizeof(*r));
}

/* ------------------------------------------------------------------ */
/* the driver                                                          */

/* Does the run search, or answer a baseline or a given plan? */
static bool searching(const struct tp_search_options *o)
{
	return o->baseline < 0 && !o->given;
}

/* The answer into res->plan and its evaluation into res->report. */
static enum tp_status answer(struct sctx *s, struct worker *w)
{
	struct tp_search_result *res = s->res;
	const struct tp_search_options *o = s->o;
	enum tp_status st;

	if (o->given) {
		st = tp_plan_copy(&res->plan, o->given, &s->err);
		snprintf(res->source, sizeof(res->source), "%s",
			 o->given_source ? o->given_source : "the plan given");
	} else if (o->baseline >= 0 && o->baseline < TP_BASELINE_COUNT) {
		struct tp_baseline_result *b = &res->baselines[o->baseline];
		if (!b->available || b->plan.groups.n == 0)
			return tp_error_set(&s->err, TP_EINFEASIBLE,
					    "the %s baseline has no plan on "
					    "this cluster: %s",
					    tp_baseline_name(
						    (enum tp_baseline)o->baseline),
					    b->why);
		st = tp_plan_copy(&res->plan, &b->plan, &s->err);
		snprintf(res->source, sizeof(res->source), "baseline %s",
			 tp_baseline_name((enum tp_baseline)o->baseline));
	} else if (!s->best.have && s->first_refusal[0]) {
		/* every candidate refused by the evaluator: its reason */
		return tp_error_set(&s->err, TP_EINFEASIBLE,
				    "no candidate plan could be simulated%s%s: "
				    "%s",
				    s->space.constrained ? " under runtime " : "",
				    s->space.constrained ? s->space.rt.name : "",
				    s->first_refusal);
	} else if (!s->best.have && s->space.constrained) {
		return tp_error_set(&s->err, TP_EINFEASIBLE,
				    "runtime %s executes no plan of this model "
				    "on this cluster that the search could "
				    "build (%llu refused); --runtime none "
				    "searches without its limits",
				    s->space.rt.name,
				    (unsigned long long)atomic_load(
					    &s->runtime_rejects));
	} else if (!s->best.have) {
		return tp_error_set(&s->err, TP_EINTERNAL,
				    "no candidate plan could be evaluated");
	} else {
		/* with an answer score (RUN's has_answer), the best plan by
		   it; else the best plan by the run reports */
		const struct sctx_best *b = s->ans.have ? &s->ans : &s->best;
		if (b->raw)
			st = tp_plan_copy(&res->plan, &b->raw_plan, &s->err);
		else
			st = tp_space_materialize(&s->space, &b->gl, b->dec,
						  o->compression, w->sscr,
						  &res->plan, &s->err);
		snprintf(res->source, sizeof(res->source), "%s", b->source);
	}
	if (st)
		return st;
	res->plan.summary.valid = false;
	if (searching(o))
		st = tp_evaluator_finalize(s->ev, w->ev_scratch, &res->plan,
					   &res->report, &s->err);
	else
		st = tp_evaluator_run(s->ev, w->ev_scratch, &res->plan,
				      &res->report, &s->err);
	if (st)
		return st;
	res->have_plan = true;
	return TP_OK;
}

/* The best decision vector into res->best_gl / best_dec (search.h);
 * after answer().  Nothing when the run did not search. */
static enum tp_status best_decisions(struct sctx *s)
{
	struct tp_search_result *res = s->res;
	const struct sctx_best *d = &s->bestdec;
	const struct sctx_best *a = s->ans.have ? &s->ans : &s->best;

	if (!searching(s->o) || !d->have || res->best_gl)
		return TP_OK;
	res->best_gl = malloc(sizeof(*res->best_gl));
	res->best_dec = tp_calloc(s->K ? s->K : 1, sizeof(*res->best_dec));
	if (!res->best_gl || !res->best_dec) {
		free(res->best_gl);
		free(res->best_dec);
		res->best_gl = NULL;
		res->best_dec = NULL;
		return tp_error_set(&s->err, TP_ENOMEM, "out of memory");
	}
	*res->best_gl = d->gl;
	if (s->K)
		memcpy(res->best_dec, d->dec, s->K * sizeof(*d->dec));
	res->best_dec_feasible = d->feasible;
	res->best_dec_time_s = d->time;
	res->best_dec_answer = !a->raw &&
			       !memcmp(&a->gl, &d->gl, sizeof(d->gl)) &&
			       (!s->K || !memcmp(a->dec, d->dec,
						 s->K * sizeof(*d->dec)));
	return TP_OK;
}

/* The best plan on every device (result.all_plan): the best one
 * simulated, or the one with the lowest lower bound among those the
 * bound settled, simulated now, when that is faster. */
static enum tp_status all_devices(struct sctx *s, struct worker *w)
{
	struct tp_search_result *res = s->res;
	const struct sctx_best *b = &s->all_bound;
	enum tp_status st;

	uint32_t nd = (uint32_t)s->c->devices.n, used = 0;

	if (!b->have || (s->have_all && s->all_feasible &&
			 s->all_time <= b->time))
		return TP_OK;
	/* only for an answer that leaves devices idle */
	for (size_t i = 0; i < res->plan.devs.n; i++)
		if (res->plan.devs.v[i] < nd && !w->mark[res->plan.devs.v[i]]) {
			w->mark[res->plan.devs.v[i]] = 1;
			used++;
		}
	for (size_t i = 0; i < res->plan.devs.n; i++)
		if (res->plan.devs.v[i] < nd)
			w->mark[res->plan.devs.v[i]] = 0;
	if (used == nd)
		return TP_OK;
	st = tp_space_materialize(&s->space, &b->gl, b->dec, s->o->compression,
				  w->sscr, &w->plan, &w->err);
	if (st)
		return st == TP_EINPUT ? TP_OK : st;
	st = tp_evaluator_run(s->ev, w->ev_scratch, &w->plan, &w->report,
			      &w->err);
	if (st)
		return st == TP_EINPUT ? TP_OK : st;
	if (w->report.feasible &&
	    (!s->have_all || !s->all_feasible ||
	     w->report.iteration_time_s < s->all_time) &&
	    tp_plan_copy(&res->all_plan, &w->plan, &s->err) == TP_OK) {
		s->have_all = true;
		s->all_feasible = true;
		s->all_time = w->report.iteration_time_s;
	}
	return TP_OK;
}

/* SEEDS_FIRST (issue 27).  A search limited by time alone (no playout
 * limit) runs the seeds right after the first fit, before the rollout
 * and the baselines; every other search runs them after the baselines,
 * as before, so playout-limited searches (self-play training, bench
 * columns by playouts) are unchanged byte for byte.  Why: on the largest
 * cases the megatron grid costs most of a short limit and its plans are
 * not the ones that count, while the first seeds are: GPT-3 175B on
 * bench_gnn's 1,024 mixed GPUs, the grid 190 simulations, 0.8 CPU s, for
 * 190.2 s, the first seeds 66.8 s within 4 simulations; on the 256
 * mixed GPUs the grid 480 simulations, 1.7 s, nothing that fits, the
 * seeds 0.4 s for 233.3 s.  Under a 1 s limit both searches reached the
 * seeds just before the clock stopped them, the guided one, 0.1 s later
 * for its rollout, too late on 2 seeds of 3 (190.2 s against 66.8 and
 * 71.9 s).  The rollout follows the seeds: a prior costs nothing to a
 * search that does not need it.  A time-only search thereby leaves the
 * trajectory of a playout-limited one (search.h's anytime property
 * between the two kinds holds where the seeds are not cut off by the
 * bound differently: tests/test_anytime.c). */
static bool seeds_first(const struct sctx *s)
{
	return sctx_time_only(s);
}

/* ROLLOUT_PRICE (issue 27).  A search limited by time alone whose seeds
 * already gave a plan that fits leaves the rollout out when the
 * rollout's simulations (one, two when its plan does not fit: baselines.c
 * search_rollout), at the mean cost of the simulations so far, would take
 * more than ROLLOUT_SHARE of the time limit.  The rule is in time, so it
 * scales with the case: on bench_gnn's small clusters a simulation costs
 * well under a millisecond and the rollout runs at every limit (it is
 * what wins VGG-16's 17% there); on GPT-3 175B on its 1,024 mixed GPUs
 * the rollout took 0.05 s of a 1 s limit (two simulations and 51 forward
 * passes) and its plan was never better than the seeds' (66.8 s).  The
 * estimate counts the simulations only, not the forward passes, so it
 * is a lower bound of the rollout's cost.  Playout-limited searches
 * (self-play training, --playouts) and searches whose seeds found
 * nothing that fits always run it (the first plan that fits is what it
 * is for); result.rollout_priced says it was left out. */
#define ROLLOUT_SHARE 0.02

static bool rollout_priced(struct sctx *s)
{
	bool fits;

	if (!sctx_time_only(s))
		return false;
	pthread_mutex_lock(&s->lock);
	fits = s->best.have && s->best.feasible;
	pthread_mutex_unlock(&s->lock);
	return fits &&
	       2 * sctx_mean_sim(s) > ROLLOUT_SHARE * s->o->time_limit_s;
}

/* The seeds (and the cost seeds). */
static enum tp_status run_seeds(struct sctx *s, struct worker *w0)
{
	const struct tp_search_options *o = s->o;
	enum tp_status st;

	s->phase = "seeds";
	sctx_progress(s, true);
	if (!o->no_seeds && !sctx_should_stop(s)) {
		st = search_seeds(w0);
		if (st)
			return st;
	}
	if (s->cost && !o->no_seeds && !sctx_should_stop(s)) {
		st = search_seeds_cost(w0);
		if (st)
			return st;
	}
	return TP_OK;
}

/* LEND_SCRATCH.  The tree's workers are made per tree phase and take
 * their provider scratch from s->prior_pool (context.c worker_init), where
 * the workers of the phase before left theirs; the first tree phase found
 * the pool empty and made a scratch from nothing: the network's static
 * features of the model and cluster, a tape grown pass by pass, no body
 * cached.  On bench_gnn's Mistral-7B case (seed 2, 200 playouts) that
 * first provider call of the tree took 6.3 ms of CPU against 0.6 ms for a
 * full pass and 0.12 ms for a heads-only one.  w0 holds a warm scratch
 * (the rollout's and the sweeps') and is idle while the tree runs, so it
 * lends it to the tree and takes one back after.  The provider's caches
 * are exact (features, bodies: net.h, features.h), so the answers and the
 * plans are the same; the search's answer cache (w->pcache), whose local
 * keys are not exact, is not lent. */
static void lend_scratch(struct sctx *s, struct worker *w0, bool lend)
{
	pthread_mutex_lock(&s->lock);
	/* EVAL_POOL: its evaluator and bound scratches too, warm from the
	   sweeps (the simulator's lane-cost, ring and flow caches, its
	   arrays grown); exact caches, so the same scores */
	if (lend) {
		worker_put_warm(s, w0);
	} else {
		if (!w0->prior_scratch)
			w0->prior_scratch = pool_take(&s->prior_pool);
		if (!w0->ev_scratch)
			w0->ev_scratch = pool_take(&s->ev_pool);
		if (!w0->bscr)
			w0->bscr = pool_take(&s->bscr_pool);
	}
	pthread_mutex_unlock(&s->lock);
}

/* The search proper after the baselines: the seeds (unless they came
 * first: SEEDS_FIRST), then stages of sweeps and tree search
 * (STAGE_FIRST) until a limit.  Worker errors are in w0->err. */
static enum tp_status search_phases(struct sctx *s, struct worker *w0)
{
	const struct tp_search_options *o = s->o;
	enum tp_status st;

	if (!seeds_first(s) && (st = run_seeds(s, w0)))
		return st;
	/* stages of doubling budgets, each sweeps then the tree
	   (STAGE_FIRST); the limits cut the last one short */
	s->stage_end = STAGE_FIRST;
	for (;;) {
		if (!sctx_should_stop(s)) {
			st = search_polish(w0);
			if (st)
				return st;
		}
		if (!sctx_should_stop(s)) {
			lend_scratch(s, w0, true);
			st = search_mcts(s);
			lend_scratch(s, w0, false);
			if (st) {
				if (s->error)
					w0->err = s->err;
				else
					tp_error_set(&w0->err, st,
						     "the search failed");
				return st;
			}
		}
		if (atomic_load(&s->playouts) >= o->playouts ||
		    s->stage_end >= o->playouts || sctx_stopped_for_good(s))
			return TP_OK;
		s->stage_start = atomic_load(&s->playouts);
		s->stage_end = s->stage_end <= UINT64_MAX / 2
				       ? 2 * s->stage_end
				       : UINT64_MAX;
	}
}

/* The counters of the run into the result. */
static void result_counters(struct sctx *s)
{
	struct tp_search_result *res = s->res;

	res->playouts = atomic_load(&s->playouts);
	res->simulations = atomic_load(&s->simulations);
	res->cache_hits = atomic_load(&s->cache_hits);
	res->bounded = atomic_load(&s->bounded);
	res->replays = atomic_load(&s->sim_replays);
	res->prior_calls = atomic_load(&s->prior_calls);
	res->prior_hits = atomic_load(&s->prior_hits);
	res->prior_seconds = 1e-9 * (double)atomic_load(&s->prior_ns);
	res->sweep_resumed = s->sweep_resumed;
	res->kicks = s->kicks;
	res->completions = s->completions;
	res->gain_skips = s->gain_skips;
	res->by_time_passes = s->by_time_passes;
	res->fitting_passes = s->fitting_passes;
	res->priced_passes = s->priced_passes;
	res->rollout_priced = s->rollout_priced;
	res->uniform_trees = s->uniform_trees;
	res->runtime_rejects = atomic_load(&s->runtime_rejects);
	res->have_all = s->have_all;
	res->all_feasible = s->all_feasible;
	res->all_time_s = s->all_time;
	res->evaluations = atomic_load(&s->evaluations);
	res->seconds = sctx_elapsed(s);
	if (s->o->stop && *s->o->stop)
		res->interrupted = true;
	if (!searching(s->o))
		res->stopped_by = TP_SEARCH_STOP_NONE;
	else if (res->interrupted)
		res->stopped_by = TP_SEARCH_STOP_INTERRUPT;
	else if (s->o_playouts && res->playouts >= s->o_playouts)
		res->stopped_by = TP_SEARCH_STOP_PLAYOUTS;
	else if (s->o->time_limit_s > 0)
		res->stopped_by = TP_SEARCH_STOP_TIME;
}

/* Model FLOP of the global batch over the cluster's summed peak. */
static double compute_lower_bound(const struct tp_model *m,
				  const struct tp_cluster *c)
{
	double flop = 0, peak;

	for (size_t i = 0; i < m->ops.n; i++)
		flop += m->ops.v[i].flop + m->ops.v[i].backward_flop;
	peak = tp_cluster_total_peak(c, m->dtype);
	return peak > 0 ? flop * (double)m->global_batch / peak : 0;
}

bool tp_search_prior_declined(const struct tp_search_options *o,
			      const struct tp_cluster *c, char *why,
			      size_t why_size)
{
	if (why && why_size)
		why[0] = '\0';
	return o->prior && o->prior->covers && !o->prior_any_cluster &&
	       !o->prior->covers(o->prior->ctx, c, why, why_size);
}

enum tp_status tp_search_run(const struct tp_model *m,
			     const struct tp_cluster *c,
			     const struct tp_evaluator *ev,
			     const struct tp_search_options *o,
			     struct tp_search_result *res,
			     struct tp_error *err)
{
	struct sctx s;
	struct worker w0;
	struct tp_search_options unguided;
	enum tp_status st;
	bool have_w0 = false;

	memset(&w0, 0, sizeof(w0));
	/* a provider outside what it knows: the search of no provider */
	res->prior_declined =
		tp_search_prior_declined(o, c, res->prior_declined_why,
					 sizeof(res->prior_declined_why));
	if (res->prior_declined) {
		unguided = *o;
		unguided.prior = NULL;
		o = &unguided;
	}
	st = sctx_init(&s, m, c, ev, o, res);
	if (st)
		goto out;
	st = worker_init(&w0, &s, 0);
	if (st) {
		tp_error_set(&s.err, st, "out of memory");
		goto out;
	}
	have_w0 = true;
	res->lower_bound_s = compute_lower_bound(m, c);

	sctx_progress(&s, true);
	if (searching(o)) {
		s.phase = "first fit";
		st = search_first_fit(&w0);
		if (st)
			goto fail_worker;
		sctx_progress(&s, true);
		if (seeds_first(&s)) {
			st = run_seeds(&s, &w0);
			if (st)
				goto fail_worker;
			sctx_progress(&s, true);
		}
		if (o->prior && rollout_priced(&s)) {
			s.rollout_priced = true;
		} else if (o->prior) {
			s.phase = "rollout";
			st = search_rollout(&w0);
			if (st)
				goto fail_worker;
			sctx_progress(&s, true);
		}
		s.phase = "baselines";
	}
	st = search_baselines(&w0);
	if (st)
		goto fail_worker;
	for (int b = 0; b < TP_BASELINE_COUNT; b++) {
		const struct tp_baseline_result *br = &res->baselines[b];
		if (br->available && br->feasible &&
		    (!(s.ref_time > 0) || br->iteration_time_s < s.ref_time))
			s.ref_time = br->iteration_time_s;
	}
	if (searching(o)) {
		st = search_phases(&s, &w0);
		if (st)
			goto fail_worker;
	}
	s.phase = "done";
	sctx_progress(&s, true);
	st = answer(&s, &w0);
	if (!st)
		st = best_decisions(&s);
	if (!st)
		st = all_devices(&s, &w0);
	if (!st && res->have_runnable) {
		/* its run report (the search compared plans by these) */
		res->runnable_plan.summary.valid = false;
		st = tp_evaluator_run(ev, w0.ev_scratch, &res->runnable_plan,
				      &res->runnable_report, &s.err);
		if (st == TP_EINPUT) {
			res->have_runnable = false;
			st = TP_OK;
		}
	}
	goto out;
fail_worker:
	s.err = w0.err;
	if (!s.err.msg[0])
		tp_error_set(&s.err, st, "the evaluator failed");
out:
	result_counters(&s);
	if (have_w0)
		worker_release(&w0);
	sctx_release(&s);
	if (st && err)
		*err = s.err;
	if (st && err && err->status == TP_OK)
		err->status = st;
	return st;
}
