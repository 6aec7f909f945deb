/*
 * context.c - the search's shared context (search_int.h): the clock and
 * the stop conditions, progress reports, workers, the evaluation cache,
 * the incumbent and elites, and every evaluation the baselines, sweeps
 * and tree search ask for (sctx_eval: the plan of a decision vector,
 * bounded by the simulator's lower bound against the competing plan);
 * the search's value scale.  The driver (search.c) sets it up with
 * sctx_init and runs the phases over it; baselines.c, sweep.c and mcts.c
 * use it and nothing of each other's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search.h"
#include "search_int.h"
#include "sim/sim.h"

double tp_search_value(double ref_s, bool feasible, double time_s,
		       double over_fraction)
{
	if (!feasible || !(time_s > 0)) {
		double o = over_fraction > 0 ? over_fraction : 0;
		return -1 + 0.4 * exp(-3 * o);
	}
	if (!(ref_s > 0))
		return 0.25;
	return 0.25 + 0.75 * tanh(2 * log(ref_s / time_s));
}

double tp_search_over_fraction(const struct tp_report *r)
{
	double cap = 0;

	if (r->feasible)
		return 0;
	if (r->worst_device < r->n_devices && r->devices)
		cap = r->devices[r->worst_device].capacity_bytes;
	if (!(cap > 0) && r->devices)
		for (uint32_t i = 0; i < r->n_devices; i++)
			if (r->devices[i].capacity_bytes > cap)
				cap = r->devices[i].capacity_bytes;
	if (!(cap > 0) || !(r->over_bytes > 0))
		return r->over_bytes > 0 ? 1 : 0;
	return r->over_bytes / cap;
}

/* ------------------------------------------------------------------ */

double sctx_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double sctx_clock(const struct sctx *s)
{
	return s->o->clock ? s->o->clock(s->o->clock_ctx) : sctx_now();
}

double sctx_elapsed(const struct sctx *s)
{
	return sctx_clock(s) - s->t0;
}

double sctx_mean_sim(const struct sctx *s)
{
	uint64_t n = atomic_load(&s->simulations);

	return n ? (double)atomic_load(&s->sim_ns) * 1e-9 / (double)n : 0;
}

double sctx_time_left(struct sctx *s)
{
	if (!(s->o->time_limit_s > 0))
		return HUGE_VAL;
	return s->o->time_limit_s - sctx_reserve(s) - sctx_elapsed(s);
}

double sctx_reserve(struct sctx *s)
{
	double avg = sctx_mean_sim(s);

	/* playouts in flight finish after the limit, and the answer is
	   scored once more with compression chosen (a few simulations) */
	return (6 + 2 * s->o->threads) * avg + 0.05 +
	       0.05 * s->o->time_limit_s;
}

/* Stopped by an error, the caller or the time limit: everything but the
 * playout limit (of the search or of its stage). */
bool sctx_stopped_for_good(struct sctx *s)
{
	const struct tp_search_options *o = s->o;

	if (atomic_load(&s->stop))
		return true;
	if (o->stop && *o->stop) {
		s->res->interrupted = true;
		atomic_store(&s->stop, 1);
		return true;
	}
	return o->time_limit_s > 0 &&
	       sctx_elapsed(s) >= o->time_limit_s - sctx_reserve(s);
}

bool sctx_out_of_time(struct sctx *s)
{
	bool have;

	if (!sctx_stopped_for_good(s))
		return false;
	pthread_mutex_lock(&s->lock);
	have = s->best.have;
	pthread_mutex_unlock(&s->lock);
	return have;
}

bool sctx_time_only(const struct sctx *s)
{
	return s->o_playouts == 0 && s->o->time_limit_s > 0;
}

bool sctx_should_stop(struct sctx *s)
{
	const struct tp_search_options *o = s->o;

	if (sctx_stopped_for_good(s))
		return true;
	return atomic_load(&s->playouts) >=
	       (s->stage_end && s->stage_end < o->playouts ? s->stage_end
							   : o->playouts);
}

void sctx_progress(struct sctx *s, bool force)
{
	const struct tp_search_options *o = s->o;
	struct tp_search_progress p;
	double now = sctx_elapsed(s);
	double iv = o->progress_interval_s > 0 ? o->progress_interval_s : 0.2;

	if (!o->progress || (!force && now - s->last_progress < iv))
		return;
	s->last_progress = now;
	memset(&p, 0, sizeof(p));
	p.playouts = atomic_load(&s->playouts);
	p.simulations = atomic_load(&s->simulations);
	p.elapsed_s = now;
	p.time_limit_s = o->time_limit_s;
	p.playout_limit = s->o_playouts;
	pthread_mutex_lock(&s->lock);
	p.have_best = s->best.have;
	p.best_feasible = s->best.feasible;
	p.best_time_s = s->best.time;
	if (s->ans.have) { /* what the answer will be */
		p.best_feasible = s->ans.feasible;
		p.best_time_s = s->ans.time;
	}
	pthread_mutex_unlock(&s->lock);
	p.reference_time_s = s->cost ? 0 : s->ref_time;
	p.cost = s->cost;
	p.phase = s->phase;
	o->progress(o->progress_ctx, &p);
}

enum tp_status worker_init(struct worker *w, struct sctx *s, uint32_t id)
{
	const struct tp_prior_provider *pp = sctx_provider(s);

	memset(w, 0, sizeof(*w));
	w->s = s;
	w->id = id;
	tp_plan_init(&w->plan);
	tp_report_init(&w->report);
	w->dec = tp_calloc(s->K, sizeof(*w->dec));
	w->mark = tp_calloc(s->c->devices.n + 1, 1);
	w->sscr = tp_space_scratch_new(&s->space);
	if (!w->dec || !w->sscr || !w->mark)
		goto nomem;
	if (s->have_lock) {
		pthread_mutex_lock(&s->lock);
		/* EVAL_POOL: warm scratches of the workers before (a fresh
		   one starts with every cache cold, every array to grow) */
		w->ev_scratch = pool_take(&s->ev_pool);
		if (s->o->bound_sim)
			w->bscr = pool_take(&s->bscr_pool);
		pthread_mutex_unlock(&s->lock);
	}
	if (s->o->bound_sim && !w->bscr) {
		w->bscr = tp_sim_scratch_new(s->o->bound_sim);
		if (!w->bscr)
			goto nomem;
	}
	if (!w->ev_scratch &&
	    tp_evaluator_scratch_new(s->ev, &w->ev_scratch, NULL))
		goto nomem;
	if (s->have_lock) {
		pthread_mutex_lock(&s->lock);
		if (pp && pp->scratch_new)
			w->prior_scratch = pool_take(&s->prior_pool);
		if (s->o->prior || pp)
			w->pcache = pool_take(&s->pcache_pool);
		pthread_mutex_unlock(&s->lock);
	}
	if (pp && pp->scratch_new && !w->prior_scratch) {
		w->prior_scratch = pp->scratch_new(pp->ctx);
		if (!w->prior_scratch)
			goto nomem;
	}
	if ((s->o->prior || pp) && !w->pcache) {
		w->pcache = search_prior_cache_new();
		if (!w->pcache)
			goto nomem;
	}
	tp_rng_seed(&w->rng, s->o->seed * 0x9e3779b97f4a7c15ull + id + 1);
	return TP_OK;
nomem:
	worker_release(w);
	return TP_ENOMEM;
}

void worker_put_warm(struct sctx *s, struct worker *w)
{
	if (pool_put(&s->prior_pool, w->prior_scratch))
		w->prior_scratch = NULL;
	if (pool_put(&s->ev_pool, w->ev_scratch))
		w->ev_scratch = NULL;
	if (pool_put(&s->bscr_pool, w->bscr))
		w->bscr = NULL;
}

void worker_release(struct worker *w)
{
	struct sctx *s = w->s;

	if (!s)
		return;
	if (s->have_lock) { /* keep them for the next worker */
		pthread_mutex_lock(&s->lock);
		worker_put_warm(s, w);
		if (pool_put(&s->pcache_pool, w->pcache))
			w->pcache = NULL;
		pthread_mutex_unlock(&s->lock);
	}
	if (w->prior_scratch && sctx_provider(s)->scratch_free)
		sctx_provider(s)->scratch_free(sctx_provider(s)->ctx,
					       w->prior_scratch);
	search_prior_cache_free(w->pcache);
	tp_evaluator_scratch_free(s->ev, w->ev_scratch);
	tp_space_scratch_free(w->sscr);
	tp_sim_scratch_free(w->bscr);
	tp_plan_release(&w->plan);
	tp_report_release(&w->report);
	free(w->dec);
	free(w->mark);
	memset(w, 0, sizeof(*w));
}

bool sctx_better(bool f1, double t1, double o1, bool f2, double t2,
		 double o2)
{
	if (f1 != f2)
		return f1;
	if (f1)
		return t1 < t2;
	if (o1 != o2)
		return o1 < o2;
	return t1 < t2;
}

/* cache: open addressing on the 64-bit plan hash, under s->lock */
static struct cache_entry *cache_find(struct sctx *s, uint64_t key)
{
	size_t mask = s->cache_cap - 1, i = (size_t)(key ^ (key >> 32)) & mask;

	for (;;) {
		struct cache_entry *e = &s->cache[i];
		if (e->key == key || e->key == 0)
			return e;
		i = (i + 1) & mask;
	}
}

static void cache_grow(struct sctx *s)
{
	size_t ncap = s->cache_cap * 2;
	struct cache_entry *old = s->cache, *nc;

	if (ncap > ((size_t)1 << 24))
		return;
	nc = tp_calloc(ncap, sizeof(*nc));
	if (!nc)
		return;
	s->cache = nc;
	s->cache_cap = ncap;
	for (size_t i = 0; i < ncap / 2; i++)
		if (old[i].key)
			*cache_find(s, old[i].key) = old[i];
	free(old);
}

static bool offer_one(struct sctx_best *b, uint32_t K,
		      const struct tp_globals *gl,
		      const struct tp_decision *dec,
		      const struct tp_plan *raw, const char *source,
		      const struct evalres *r)
{
	if (b->have && !sctx_better(r->feasible, r->time, r->over, b->feasible,
				    b->time, b->over))
		return false;
	if (raw) {
		if (tp_plan_copy(&b->raw_plan, raw, NULL))
			return false;
		b->raw = true;
	} else {
		b->raw = false;
		b->gl = *gl;
		memcpy(b->dec, dec, K * sizeof(*dec));
	}
	b->have = true;
	b->feasible = r->feasible;
	b->time = r->time;
	b->over = r->over;
	snprintf(b->source, sizeof(b->source), "%s", source ? source : "");
	return true;
}

/* Keep (gl, dec) among the elites when it is better than one of them. */
static void offer_elite(struct sctx *s, uint64_t key,
			const struct tp_globals *gl,
			const struct tp_decision *dec, const char *source,
			const struct evalres *r)
{
	uint32_t pos = s->n_elite;
	struct sctx_best tmp;
	uint64_t tk;

	for (uint32_t i = 0; i < s->n_elite; i++)
		if (s->elite_key[i] == key)
			return;
	while (pos > 0 &&
	       sctx_better(r->feasible, r->time, r->over,
			   s->elite[pos - 1].feasible, s->elite[pos - 1].time,
			   s->elite[pos - 1].over))
		pos--;
	if (pos >= SCTX_ELITES)
		return;
	/* the last slot takes the new entry, then moves up to pos */
	if (s->n_elite < SCTX_ELITES)
		s->n_elite++;
	s->elite[s->n_elite - 1].have = false;
	offer_one(&s->elite[s->n_elite - 1], s->K, gl, dec, NULL, source, r);
	s->elite_key[s->n_elite - 1] = key;
	for (uint32_t i = s->n_elite - 1; i > pos; i--) {
		tmp = s->elite[i];
		s->elite[i] = s->elite[i - 1];
		s->elite[i - 1] = tmp;
		tk = s->elite_key[i];
		s->elite_key[i] = s->elite_key[i - 1];
		s->elite_key[i - 1] = tk;
	}
}

/* Does plan use every device of the cluster?  mark: n zeroed bytes,
 * left zeroed. */
static bool uses_all(const struct tp_plan *p, uint32_t n, uint8_t *mark)
{
	uint32_t used = 0;

	for (size_t i = 0; i < p->devs.n; i++)
		if (p->devs.v[i] < n && !mark[p->devs.v[i]]) {
			mark[p->devs.v[i]] = 1;
			used++;
		}
	for (size_t i = 0; i < p->devs.n; i++)
		if (p->devs.v[i] < n)
			mark[p->devs.v[i]] = 0;
	return used == n;
}

/* The fastest feasible simulated plan options.runnable_by executes
 * (result.runnable_plan); under the lock.  The runtime is checked only
 * for a plan faster than the one kept. */
static void offer_runnable(struct sctx *s, const struct tp_plan *plan,
			   const struct evalres *r)
{
	const struct tp_runtime *rt = s->o->runnable_by;

	if (!rt || !r->ok || r->bounded || !r->feasible ||
	    (s->res->have_runnable && !(r->time < s->run_time)) ||
	    tp_runtime_plan_check(rt, plan, s->m, s->c, NULL, NULL, 0) ||
	    tp_plan_copy(&s->res->runnable_plan, plan, NULL))
		return;
	s->res->have_runnable = true;
	s->run_time = r->time;
}

/* The best simulated plan on every device (result.all_plan); under the
 * lock. */
static void offer_all(struct worker *w, const struct tp_plan *plan,
		      const struct evalres *r)
{
	struct sctx *s = w->s;

	/* the fastest plan on every device: a throughput figure */
	if (s->cost || !r->ok || r->bounded ||
	    (s->have_all && !sctx_better(r->feasible, r->time, r->over,
					 s->all_feasible, s->all_time,
					 s->all_over)) ||
	    !uses_all(plan, (uint32_t)s->c->devices.n, w->mark))
		return;
	if (tp_plan_copy(&s->res->all_plan, plan, NULL))
		return;
	s->have_all = true;
	s->all_feasible = r->feasible;
	s->all_time = r->time;
	s->all_over = r->over;
}

static void offer_locked(struct sctx *s, uint64_t key,
			 const struct tp_globals *gl,
			 const struct tp_decision *dec,
			 const struct tp_plan *raw, const char *source,
			 const struct evalres *r)
{
	if (offer_one(&s->best, s->K, gl, dec, raw, source, r))
		s->improvements++;
	if (r->ans) {
		/* the answer's tracker, by the answer score */
		struct evalres a = *r;
		a.feasible = r->ans_feasible;
		a.time = r->ans_time;
		a.over = r->ans_over;
		offer_one(&s->ans, s->K, gl, dec, raw, source, &a);
	}
	if (!raw) {
		offer_one(&s->bestdec, s->K, gl, dec, NULL, source, r);
		offer_elite(s, key, gl, dec, source, r);
	}
}

/* Under the cost objective a memory excess ranks below every excess of
 * the time limit (search.h): its over is this plus the excess, a time
 * excess's below it. */
#define COST_OVER_MEMORY 1.0

double sctx_mem_over(const struct sctx *s, const struct evalres *r)
{
	if (r->fits)
		return 0;
	return s->cost && r->ok ? r->over - COST_OVER_MEMORY : r->over;
}

/* The cost objective's score of one evaluation (search.h), in place:
 * the time t becomes the cost per iteration at rate US dollars per hour;
 * over the time limit L the plan is not feasible, over = 1 - L / t (in
 * (0, 1): the faster, the closer to the limit, whatever the limit); out
 * of memory, over = COST_OVER_MEMORY + the memory excess. */
static void cost_score(const struct sctx *s, double rate, bool *feasible,
		       double *time, double *over)
{
	double t = *time, lim = s->o->max_iter_time_s;

	*time = rate * t / 3600;
	if (!*feasible)
		*over = COST_OVER_MEMORY + *over;
	else if (t > lim) {
		*feasible = false;
		*over = 1 - lim / t;
	}
}

/* out's score from its time and memory (out->time, out->feasible, out->
 * over as the simulator gave them): the objective's (search.h). */
static void score(const struct sctx *s, double rate, struct evalres *out)
{
	out->secs = out->time;
	out->fits = out->feasible;
	if (s->cost && out->ok)
		cost_score(s, rate, &out->feasible, &out->time, &out->over);
}

/*
 * Evaluate plan (cutoff > 0 with o->bound_sim: unless its lower bound is
 * at least cutoff, then out->bounded).  The simulator's own evaluator
 * computes the bound on the way (one analysis of the plan); any other
 * evaluator (compression on top, tests' toys) runs after the bound.
 */
/* The plan cache (search_int.h struct sim_entry): open addressing on the
 * content hash, under s->lock, as the decision cache. */
static struct sim_entry *simc_find(struct sctx *s, uint64_t key)
{
	size_t mask = s->simc_cap - 1, i = (size_t)(key ^ (key >> 32)) & mask;

	for (;;) {
		struct sim_entry *e = &s->simc[i];
		if (e->key == key || e->key == 0)
			return e;
		i = (i + 1) & mask;
	}
}

/* At most 2^20 entries (72 bytes each, 75 MB); a full table keeps what
 * it has. */
static void simc_grow(struct sctx *s)
{
	size_t ncap = s->simc_cap * 2;
	struct sim_entry *old = s->simc, *nc;

	if (ncap > ((size_t)1 << 20))
		return;
	nc = tp_calloc(ncap, sizeof(*nc));
	if (!nc)
		return;
	s->simc = nc;
	s->simc_cap = ncap;
	for (size_t i = 0; i < ncap / 2; i++)
		if (old[i].key)
			*simc_find(s, old[i].key) = old[i];
	free(old);
}

/*
 * The answer the evaluator gave for a plan of this content, if the entry
 * says exactly what it would answer now (cut: the simulator's cut at
 * cutoff, as q.cut; NULL: no cut): true with *cut (bounded) or *fa (a
 * full run) filled.  The simulator's order: the lower bound at or above
 * the cutoff, then memory (with a cutoff), then the full run.
 */
static bool simc_replay(struct sctx *s, uint64_t key, double cutoff,
			struct tp_sim_cut *cut, struct full_answer *fa)
{
	const struct sim_entry *e;
	bool hit = false;

	pthread_mutex_lock(&s->lock);
	e = simc_find(s, key);
	if (e->key != key) {
		/* unknown */
	} else if (cut && e->lb_known && e->lb >= cutoff) {
		cut->lower_bound_s = e->lb;
		cut->bounded = true;
		hit = true;
	} else if (cut && e->lb_known && e->mem == 2) {
		cut->lower_bound_s = e->lb;
		cut->bounded = true;
		cut->out_of_memory = true;
		cut->over_fraction = e->oom_over;
		hit = true;
	} else if (e->full && (!cut || (e->lb_known && e->mem == 1))) {
		if (cut)
			cut->lower_bound_s = e->lb;
		*fa = e->fa;
		hit = true;
	}
	pthread_mutex_unlock(&s->lock);
	return hit;
}

/* Keep what the evaluator answered (cut as given to it, NULL: none; fa
 * when it ran in full). */
static void simc_store(struct sctx *s, uint64_t key,
		       const struct tp_sim_cut *cut,
		       const struct full_answer *fa)
{
	struct sim_entry *e;

	pthread_mutex_lock(&s->lock);
	e = simc_find(s, key);
	if (e->key != key) {
		if (s->simc_n * 10 >= s->simc_cap * 7) {
			pthread_mutex_unlock(&s->lock);
			return;
		}
		memset(e, 0, sizeof(*e));
		e->key = key;
		s->simc_n++;
	}
	if (cut) {
		e->lb_known = 1;
		e->lb = cut->lower_bound_s;
		if (cut->out_of_memory) {
			e->mem = 2;
			e->oom_over = cut->over_fraction;
		} else if (!cut->bounded) {
			e->mem = 1;
		}
	}
	if (fa) {
		e->full = 1;
		e->fa = *fa;
	}
	if (s->simc_n * 10 >= s->simc_cap * 6)
		simc_grow(s);
	pthread_mutex_unlock(&s->lock);
}

static enum tp_status run_eval(struct worker *w, const struct tp_plan *plan,
			       double cutoff, struct evalres *out)
{
	struct sctx *s = w->s;
	enum tp_status st;
	struct tp_sim_cut cut;
	struct tp_eval_call q;
	struct full_answer fa;
	double t0, rate = 0;
	uint64_t pkey = 0;
	bool replay = false;

	memset(&cut, 0, sizeof(cut));
	memset(&q, 0, sizeof(q));
	memset(&fa, 0, sizeof(fa));
	if (s->cost) {
		/* a cutoff in dollars per iteration is one in seconds for
		   this plan's devices */
		rate = tp_plan_price_per_hour(plan, s->c, w->mark);
		cutoff = rate > 0 ? cutoff * 3600 / rate : 0;
	}
	if (cutoff > 0 && !s->direct) {
		st = tp_sim_lower_bound(s->o->bound_sim, plan, w->bscr,
					&cut.lower_bound_s, &w->err);
		if (st && st != TP_EINPUT)
			return st;
		cut.bounded = !st && cut.lower_bound_s >= cutoff;
	}
	t0 = sctx_clock(s);
	q.ask = TP_EVAL_RUN;
	q.scratch = w->ev_scratch;
	q.plan = plan;
	q.report = &w->report;
	if (cutoff > 0 && s->direct) {
		q.cutoff = cutoff;
		q.cut = &cut;
	}
	if (cut.bounded) {
		st = TP_OK;
	} else if (s->simc &&
		   simc_replay(s, pkey = tp_plan_content_hash(plan) | 1,
			       cutoff, q.cut, &fa)) {
		st = TP_OK;
		replay = true;
	} else {
		st = s->ev->call(s->ev->ctx, &q, &w->err);
		if (!st && !cut.bounded) {
			const struct tp_report *a = q.answer_report;
			fa.feasible = w->report.feasible;
			fa.time = w->report.iteration_time_s;
			fa.over = tp_search_over_fraction(&w->report);
			fa.has_answer = q.has_answer;
			fa.ans_report = a != NULL;
			if (a) {
				fa.ans_feasible = a->feasible;
				fa.ans_time = a->iteration_time_s;
				fa.ans_over = tp_search_over_fraction(a);
			}
		}
		if (!st && pkey)
			simc_store(s, pkey, q.cut, cut.bounded ? NULL : &fa);
	}
	if (!st && cut.bounded) {
		/* cannot beat the cutoff: settled without a simulation */
		out->ok = true;
		out->bounded = true;
		out->feasible = !cut.out_of_memory;
		out->time = cut.out_of_memory ? INFINITY : cut.lower_bound_s;
		out->over = cut.out_of_memory ? cut.over_fraction : 0;
		score(s, rate, out);
		atomic_fetch_add(&s->bounded, 1);
		return TP_OK;
	}
	if (replay) {
		atomic_fetch_add(&s->sim_replays, 1);
	} else {
		atomic_fetch_add(&s->sim_ns,
				 (uint64_t)((sctx_clock(s) - t0) * 1e9));
		atomic_fetch_add(&s->simulations, 1);
	}
	if (st == TP_EINPUT) {
		/* a plan the evaluator refuses scores as the worst */
		pthread_mutex_lock(&s->lock);
		if (!s->first_refusal[0])
			snprintf(s->first_refusal, sizeof(s->first_refusal),
				 "%s", w->err.msg);
		pthread_mutex_unlock(&s->lock);
		out->ok = false;
		out->feasible = false;
		out->time = out->secs = INFINITY;
		out->over = INFINITY;
		return TP_OK;
	}
	if (st)
		return st;
	out->ok = true;
	/* a replay leaves w->report as it was: not this plan's */
	out->fresh = !replay;
	out->feasible = fa.feasible;
	out->time = fa.time;
	out->over = fa.over;
	/* a plan of nothing to compute takes 0 s (a model of one input op):
	   a valid score, not a failure (it made plan answer "no candidate
	   plan could be evaluated") */
	if (!(out->time >= 0) || !isfinite(out->time)) {
		out->ok = false;
		out->feasible = false;
		out->time = INFINITY;
	}
	score(s, rate, out);
	if (out->ok && fa.has_answer) {
		out->ans = true;
		out->ans_feasible = out->feasible;
		out->ans_time = out->time;
		out->ans_over = out->over;
		if (fa.ans_report && fa.ans_time > 0 &&
		    isfinite(fa.ans_time)) {
			out->ans_feasible = fa.ans_feasible;
			out->ans_time = fa.ans_time;
			out->ans_over = fa.ans_over;
			if (s->cost)
				cost_score(s, rate, &out->ans_feasible,
					   &out->ans_time, &out->ans_over);
		}
	}
	return TP_OK;
}

/* Can the search's runtime execute plan?  A plan it cannot is refused
 * unsimulated (result.runtime_rejects): the action space should not
 * have produced it. */
static bool runnable(struct worker *w, const struct tp_plan *plan)
{
	struct sctx *s = w->s;

	if (!s->space.constrained ||
	    !tp_runtime_plan_check(&s->space.rt, plan, s->m, s->c, NULL, NULL,
				   0))
		return true;
	atomic_fetch_add(&s->runtime_rejects, 1);
	return false;
}

double sctx_best_cutoff(struct sctx *s)
{
	double c = 0;

	pthread_mutex_lock(&s->lock);
	if (s->best.have && s->best.feasible && isfinite(s->best.time))
		c = s->best.time;
	pthread_mutex_unlock(&s->lock);
	return c;
}

double sctx_memory_cutoff(struct sctx *s)
{
	return sctx_time_only(s) && sctx_best_cutoff(s) > 0 ? HUGE_VAL : 0;
}

enum tp_status sctx_eval(struct worker *w, const struct tp_globals *gl,
			 const struct tp_decision *dec, const char *source,
			 double cutoff, struct evalres *out)
{
	struct sctx *s = w->s;
	uint64_t key = tp_space_hash(&s->space, gl, dec) | 1;
	struct cache_entry *e;
	enum tp_status st;

	memset(out, 0, sizeof(*out));
	atomic_fetch_add(&s->evaluations, 1);
	if (!s->o->bound_sim)
		cutoff = 0;
	pthread_mutex_lock(&s->lock);
	e = cache_find(s, key);
	if (e->key == key && (!e->bounded ||
			      (cutoff > 0 && (double)e->time >= cutoff))) {
		out->ok = e->ok;
		out->feasible = e->feasible;
		out->fits = e->fits;
		out->bounded = e->bounded;
		out->time = e->ok ? e->time : INFINITY;
		out->over = e->ok ? e->over : INFINITY;
		out->secs = e->ok ? e->secs : INFINITY;
		pthread_mutex_unlock(&s->lock);
		atomic_fetch_add(&s->cache_hits, 1);
		return TP_OK;
	}
	pthread_mutex_unlock(&s->lock);

	st = tp_space_materialize(&s->space, gl, dec, s->o->compression,
				  w->sscr, &w->plan, &w->err);
	if (st == TP_EINPUT || (!st && !runnable(w, &w->plan))) {
		out->ok = false;
		out->time = out->over = out->secs = INFINITY;
	} else if (st) {
		return st;
	} else {
		st = run_eval(w, &w->plan, cutoff, out);
		if (st)
			return st;
	}
	pthread_mutex_lock(&s->lock);
	e = cache_find(s, key);
	if (e->key == key && e->bounded && !out->bounded) {
		/* the exact score replaces a bound */
		e->bounded = 0;
		e->ok = out->ok;
		e->feasible = out->feasible;
		e->time = (float)out->time;
		e->over = (float)out->over;
		e->secs = (float)out->secs;
		e->fits = out->fits;
	} else if (e->key != key && s->cache_n * 10 < s->cache_cap * 7) {
		e->key = key;
		e->ok = out->ok;
		e->feasible = out->feasible;
		e->bounded = out->bounded;
		e->time = (float)out->time;
		e->over = (float)out->over;
		e->secs = (float)out->secs;
		e->fits = out->fits;
		if (out->bounded && (double)e->time > out->time)
			e->time = nextafterf(e->time, 0); /* still a bound */
		s->cache_n++;
		if (s->cache_n * 10 >= s->cache_cap * 6)
			cache_grow(s);
	}
	if (out->ok && !out->bounded) {
		offer_locked(s, key, gl, dec, NULL, source, out);
		offer_all(w, &w->plan, out);
		offer_runnable(s, &w->plan, out);
	} else if (!s->cost && out->ok && out->bounded && out->feasible &&
		   (!s->all_bound.have || out->time < s->all_bound.time) &&
		   uses_all(&w->plan, (uint32_t)s->c->devices.n, w->mark)) {
		offer_one(&s->all_bound, s->K, gl, dec, NULL, source, out);
	}
	pthread_mutex_unlock(&s->lock);
	return TP_OK;
}

enum tp_status sctx_eval_plan(struct worker *w, const struct tp_plan *plan,
			      const char *source, double cutoff,
			      struct evalres *out)
{
	struct sctx *s = w->s;
	enum tp_status st;

	memset(out, 0, sizeof(*out));
	atomic_fetch_add(&s->evaluations, 1);
	if (!s->o->bound_sim)
		cutoff = 0;
	if (!runnable(w, plan)) {
		out->ok = false;
		out->time = out->over = out->secs = INFINITY;
		return TP_OK;
	}
	st = run_eval(w, plan, cutoff, out);
	if (st)
		return st;
	if (out->ok && !out->bounded) {
		pthread_mutex_lock(&s->lock);
		offer_locked(s, 0, NULL, NULL, plan, source, out);
		offer_all(w, plan, out);
		offer_runnable(s, plan, out);
		pthread_mutex_unlock(&s->lock);
	}
	return TP_OK;
}

void search_split_stages(const double *weight, uint32_t K,
			 const double *speed, uint32_t n, uint32_t *stage_of)
{
	/* f[j][g]: best largest stage cost of groups [0, g) on stages
	   [0, j), every stage non-empty; exact dynamic programme (K, n <= 64
	   in practice).  Ties keep the earliest split. */
	double *f, *pre;
	uint32_t *arg;
	size_t cells = ((size_t)n + 1) * ((size_t)K + 1);

	if (n == 0)
		return;
	if (n > K) {
		for (uint32_t g = 0; g < K; g++)
			stage_of[g] = g;
		return;
	}
	f = malloc(cells * sizeof(*f));
	arg = malloc(cells * sizeof(*arg));
	pre = malloc(((size_t)K + 1) * sizeof(*pre));
	if (!f || !arg || !pre) {
		/* out of memory: even split by count */
		for (uint32_t g = 0; g < K; g++)
			stage_of[g] = (uint32_t)((uint64_t)g * n / K);
		free(f);
		free(arg);
		free(pre);
		return;
	}
	pre[0] = 0;
	for (uint32_t g = 0; g < K; g++)
		pre[g + 1] = pre[g] + weight[g];
#define F(j, g) f[(size_t)(j) * (K + 1) + (g)]
#define A(j, g) arg[(size_t)(j) * (K + 1) + (g)]
	for (size_t i = 0; i < cells; i++)
		f[i] = INFINITY;
	F(0, 0) = 0;
	for (uint32_t j = 1; j <= n; j++)
		for (uint32_t g = j; g + (n - j) <= K; g++)
			for (uint32_t i = j - 1; i < g; i++) {
				double sp = speed[j - 1] > 0 ? speed[j - 1]
							     : 1e-12;
				double c = (pre[g] - pre[i]) / sp;
				double v = F(j - 1, i) > c ? F(j - 1, i) : c;
				if (v < F(j, g)) {
					F(j, g) = v;
					A(j, g) = i;
				}
			}
	for (uint32_t j = n, g = K; j > 0; j--) {
		uint32_t i = A(j, g);
		for (uint32_t k = i; k < g; k++)
			stage_of[k] = j - 1;
		g = i;
	}
#undef F
#undef A
	free(f);
	free(arg);
	free(pre);
}

static void best_release(struct sctx_best *b)
{
	tp_plan_release(&b->raw_plan);
	free(b->dec);
	memset(b, 0, sizeof(*b));
}

static enum tp_status best_init(struct sctx_best *b, uint32_t K)
{
	memset(b, 0, sizeof(*b));
	tp_plan_init(&b->raw_plan);
	b->dec = tp_calloc(K, sizeof(*b->dec));
	return b->dec ? TP_OK : TP_ENOMEM;
}

/* The cost objective (search.h): a time limit and a price for every
 * device type the cluster has; the guided sweeps' skips by predicted
 * slowdown off (a slower plan may be cheaper). */
static enum tp_status cost_init(struct sctx *s)
{
	char missing[256];

	if (!(s->o->max_iter_time_s > 0) || !isfinite(s->o->max_iter_time_s))
		return tp_error_set(&s->err, TP_EINPUT,
				    "the cost objective needs a time limit "
				    "per iteration above 0 s");
	if (tp_cluster_unpriced_types(s->c, missing, sizeof(missing)))
		return tp_error_set(&s->err, TP_EINPUT,
				    "the cost objective needs a price per "
				    "hour for every device type; none for "
				    "%s",
				    missing);
	s->cost = true;
	s->opts.gain_skip = 0;
	return TP_OK;
}

enum tp_status sctx_init(struct sctx *s, const struct tp_model *m,
			 const struct tp_cluster *c,
			 const struct tp_evaluator *ev,
			 const struct tp_search_options *o,
			 struct tp_search_result *res)
{
	enum tp_status st;

	memset(s, 0, sizeof(*s));
	s->m = m;
	s->c = c;
	s->ev = ev;
	s->opts = *o;
	s->o_playouts = o->playouts;
	if (!s->opts.playouts)
		s->opts.playouts = UINT64_MAX;
	s->o = o = &s->opts;
	s->res = res;
	s->t0 = sctx_clock(s);
	s->phase = "baselines";
	st = tp_coarsen(m, o->groups, &s->groups, &s->err);
	if (st)
		return st;
	s->K = s->groups.n;
	res->n_groups = s->K;
	st = tp_space_init(&s->space, m, c, &s->groups, &s->err);
	if (st)
		return st;
	if (o->runtime &&
	    (st = tp_space_set_runtime(&s->space, o->runtime, &s->err)))
		return st;
	s->space.no_mixed = o->no_mixed;
	if (o->objective == TP_SEARCH_OBJECTIVE_COST &&
	    (st = cost_init(s)))
		return st;
	s->direct = o->bound_sim && tp_evaluator_bound_sim(ev);
	s->cache_cap = (size_t)1 << 14;
	s->cache = tp_calloc(s->cache_cap, sizeof(*s->cache));
	/* the plan cache for the simulator's evaluators (answers that are
	   the plan's alone), unless turned off or the tree's priors read
	   each state's fresh report (options.node_priors) */
	if (tp_evaluator_bound_sim(ev) && !o->no_plan_cache &&
	    !(o->node_priors && o->prior)) {
		s->simc_cap = (size_t)1 << 12;
		s->simc = tp_calloc(s->simc_cap, sizeof(*s->simc));
		if (!s->simc)
			return tp_error_set(&s->err, TP_ENOMEM,
					    "out of memory");
	}
	for (int i = 0; i < TP_BASELINE_COUNT; i++)
		if (best_init(&s->base_dec[i], s->K))
			return tp_error_set(&s->err, TP_ENOMEM,
					    "out of memory");
	for (int i = 0; i < SCTX_ELITES; i++)
		if (best_init(&s->elite[i], s->K))
			return tp_error_set(&s->err, TP_ENOMEM,
					    "out of memory");
	if (!s->cache || best_init(&s->best, s->K) ||
	    best_init(&s->all_bound, s->K) ||
	    best_init(&s->bestdec, s->K) ||
	    best_init(&s->ans, s->K))
		return tp_error_set(&s->err, TP_ENOMEM, "out of memory");
	if (pthread_mutex_init(&s->lock, NULL))
		return tp_error_set(&s->err, TP_ENOMEM,
				    "cannot create a mutex");
	s->have_lock = true;
	return TP_OK;
}

void sctx_release(struct sctx *s)
{
	for (uint32_t i = 0; i < s->prior_pool.n; i++) {
		const struct tp_prior_provider *pp = sctx_provider(s);
		if (pp && pp->scratch_free)
			pp->scratch_free(pp->ctx, s->prior_pool.v[i]);
	}
	for (uint32_t i = 0; i < s->pcache_pool.n; i++)
		search_prior_cache_free(s->pcache_pool.v[i]);
	s->prior_pool.n = s->pcache_pool.n = 0;
	for (uint32_t i = 0; i < s->ev_pool.n; i++)
		tp_evaluator_scratch_free(s->ev, s->ev_pool.v[i]);
	for (uint32_t i = 0; i < s->bscr_pool.n; i++)
		tp_sim_scratch_free(s->bscr_pool.v[i]);
	s->ev_pool.n = s->bscr_pool.n = 0;
	if (s->have_lock)
		pthread_mutex_destroy(&s->lock);
	best_release(&s->best);
	best_release(&s->bestdec);
	best_release(&s->ans);
	best_release(&s->all_bound);
	for (int i = 0; i < SCTX_ELITES; i++)
		best_release(&s->elite[i]);
	for (int i = 0; i < TP_BASELINE_COUNT; i++)
		best_release(&s->base_dec[i]);
	free(s->cache);
	free(s->simc);
	tp_space_release(&s->space);
	tp_groups_release(&s->groups);
}
