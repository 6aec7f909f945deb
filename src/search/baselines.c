/*
 * baselines.c - the baselines every plan is compared with, and the
 * structured seeds the tree search starts from.
 *
 *   dp         every device one data-parallel replica, even split of each
 *              micro-batch; gradient accumulation (more micro-batches)
 *              when one batch does not fit.
 *   dp-hetero  the same with shares proportional to each device's speed,
 *              capped by its memory.
 *   megatron   Megatron-LM as an expert configures it: the best point of
 *              a grid over tp x pp x dp, micro-batch size, 1F1B or
 *              interleaved:V, sequence parallelism, distributed
 *              optimizer, expert parallelism within a node (MoE), with
 *              the least recomputation that fits; each
 *              point as exactly its strategy string's plan (uniform layer
 *              split) and with stages balanced at group boundaries.
 *   greedy     list scheduling of the op groups onto single devices,
 *              earliest finish time first under memory limits (Baechi's
 *              m-ETF at group granularity), whole batch, no replication.
 *
 * First fit (search_first_fit, before the baselines): a few memory-lean
 * plans, stopping at the first that fits (the search's first plan on
 * models the baselines take seconds to fit).
 *
 * Seeds (not reported): pipelines over each family of disjoint device
 * sets (device types, nodes, contiguous and speed-balanced parts) with
 * stages balanced by estimated speed, and data parallelism with tensor
 * parallelism inside nodes and speed-proportional shares.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strategy.h"
#include "search_int.h"

static const enum tp_recompute rc_ladder[] = {
	TP_RECOMPUTE_NONE, TP_RECOMPUTE_SELECTIVE, TP_RECOMPUTE_FULL,
	TP_RECOMPUTE_FULL};

static void fill_all(struct tp_decision *dec, uint32_t K, uint32_t set,
		     uint32_t tp, enum tp_sync sync, enum tp_recompute rc)
{
	for (uint32_t g = 0; g < K; g++) {
		dec[g].set = set;
		dec[g].tp = (uint16_t)tp;
		dec[g].sync = (uint8_t)sync;
		dec[g].recompute = (uint8_t)rc;
	}
}

/* The time limit is spent and the search has a plan: baseline b scores
 * nothing more (TIME_BOUND: the megatron grid of GPT-3 175B on 16 H100,
 * where no point fits, ran 8 s of a 5 s limit).  Says so in its why when
 * it has no plan yet. */
static bool out_of_time(struct sctx *s, enum tp_baseline b)
{
	struct tp_baseline_result *br = &s->res->baselines[b];

	if (!sctx_out_of_time(s))
		return false;
	if (!br->available)
		snprintf(br->why, sizeof(br->why),
			 "not scored: the time limit was spent before it");
	return true;
}

/* (gl, dec) as the baseline's start point for the sweeps. */
static void set_start(struct worker *w, enum tp_baseline b,
		      const struct evalres *r, const struct tp_globals *gl,
		      const struct tp_decision *dec)
{
	struct sctx_best *bd = &w->s->base_dec[b];

	bd->have = true;
	bd->gl = *gl;
	/* a start point: shares by speed, where the runtime has them */
	bd->gl.even = tp_space_even_only(&w->s->space) ? 1 : 0;
	memcpy(bd->dec, dec, w->s->K * sizeof(*dec));
	bd->feasible = r->feasible;
	bd->time = r->time;
	bd->over = r->over;
}

static void set_baseline(struct worker *w, enum tp_baseline b,
			 const struct evalres *r, const struct tp_plan *plan,
			 const char *config, const struct tp_globals *gl,
			 const struct tp_decision *dec)
{
	struct tp_baseline_result *br = &w->s->res->baselines[b];

	if (gl && dec && r->ok)
		set_start(w, b, r, gl, dec);

	/* its time and memory whatever the objective (the baseline chosen
	   is the best by it) */
	br->available = true;
	br->feasible = r->ok && r->fits;
	br->iteration_time_s = r->ok ? r->secs : 0;
	br->over_fraction = r->ok ? sctx_mem_over(w->s, r) : 0;
	snprintf(br->config, sizeof(br->config), "%s", config);
	br->why[0] = 0;
	if (!br->feasible && r->ok)
		snprintf(br->why, sizeof(br->why),
			 "does not fit in memory (%.0f%% over on the worst "
			 "device)",
			 100 * br->over_fraction);
	else if (!r->ok)
		snprintf(br->why, sizeof(br->why),
			 "the plan could not be evaluated");
	tp_plan_copy(&br->plan, plan, NULL);
	br->plan.summary.valid = false;
}

/* Score (gl, dec) and keep its plan in w->plan (materialised again when
 * the score came from the cache). */
static enum tp_status score(struct worker *w, const struct tp_globals *gl,
			    const struct tp_decision *dec, const char *source,
			    struct evalres *r)
{
	struct sctx *s = w->s;
	enum tp_status st;

	if (!tp_space_runnable(&s->space, gl, dec, w->sscr, NULL, 0)) {
		memset(r, 0, sizeof(*r));
		r->time = r->over = INFINITY;
		return TP_OK;
	}
	st = sctx_eval(w, gl, dec, source, 0, r);

	if (st)
		return st;
	if (!r->fresh) {
		st = tp_space_materialize(&s->space, gl, dec,
					  s->o->compression, w->sscr, &w->plan,
					  &w->err);
		if (st && st != TP_EINPUT)
			return st;
	}
	return TP_OK;
}

/* Better of two results for reporting a baseline. */
static bool better_res(const struct evalres *a, const struct evalres *b)
{
	if (!b->ok)
		return a->ok;
	if (!a->ok)
		return false;
	return sctx_better(a->feasible, a->time, a->over, b->feasible, b->time,
			   b->over);
}

/* dp and dp-hetero: all devices, tp = 1; the fastest of the first few
 * micro-batch counts that fit (gradient accumulation). */
static enum tp_status baseline_dp(struct worker *w, bool even)
{
	struct sctx *s = w->s;
	const struct tp_space *sp = &s->space;
	enum tp_baseline b = even ? TP_BASELINE_DP : TP_BASELINE_DP_HETERO;
	struct tp_decision *dec = w->dec;
	struct evalres r, best;
	struct tp_plan keep;
	char config[160] = "";
	enum tp_status st = TP_OK;
	bool have = false;
	int after = 0;
	struct tp_globals best_gl;
	char rwhy[400] = "";

	if (!even && tp_space_even_only(sp)) {
		snprintf(s->res->baselines[b].why,
			 sizeof(s->res->baselines[b].why),
			 "%s gives every replica the same share of a "
			 "micro-batch (uneven_shares)",
			 sp->rt.name);
		return TP_OK;
	}
	tp_plan_init(&keep);
	fill_all(dec, s->K, TP_SPACE_SET_ALL, 1,
		 tp_space_default_sync(sp, TP_SPACE_SET_ALL, 1),
		 TP_RECOMPUTE_NONE);
	memset(&best, 0, sizeof(best));
	for (uint32_t i = 0; i < sp->n_mb && i < 12 && after < 3; i++) {
		struct tp_globals gl = {.micro_batches = sp->mb_counts[i],
					.schedule = TP_SCHEDULE_1F1B,
					.even = (uint8_t)even};
		if (out_of_time(s, b))
			break;
		if (!tp_space_state_ok(sp, &gl, dec))
			break;
		if (!tp_space_runnable(sp, &gl, dec, w->sscr, rwhy,
				       sizeof(rwhy)))
			continue;
		st = score(w, &gl, dec, tp_baseline_name(b), &r);
		if (st)
			goto out;
		if (best.ok && best.feasible)
			after++;
		if (!have || better_res(&r, &best)) {
			best = r;
			best_gl = gl;
			have = true;
			tp_plan_copy(&keep, &w->plan, NULL);
			snprintf(config, sizeof(config),
				 "dp=%u, %s split, %u micro-batch%s of %lld",
				 sp->sets.v[TP_SPACE_SET_ALL].n,
				 even ? "even" : "speed-proportional",
				 gl.micro_batches,
				 gl.micro_batches > 1 ? "es" : "",
				 (long long)tp_space_micro_batch(sp, &gl));
		}
		if (sctx_should_stop(s) && have)
			break;
	}
	if (have)
		set_baseline(w, b, &best, &keep, config, &best_gl, dec);
	else if (s->res->baselines[b].why[0])
		; /* out of time */
	else if (rwhy[0])
		snprintf(s->res->baselines[b].why,
			 sizeof(s->res->baselines[b].why), "%s", rwhy);
	else
		snprintf(s->res->baselines[b].why,
			 sizeof(s->res->baselines[b].why),
			 "the global batch of %lld is smaller than the %u "
			 "devices",
			 (long long)s->m->global_batch,
			 sp->sets.v[TP_SPACE_SET_ALL].n);
out:
	tp_plan_release(&keep);
	return st;
}

/* The PART family (or singles) with exactly p members, TP_NONE if none. */
static uint32_t part_family(const struct tp_space *sp, uint32_t p)
{
	for (uint32_t f = 0; f < sp->families.n; f++) {
		const struct tp_family *fm = &sp->families.v[f];
		if ((fm->kind == TP_DEVSET_PART ||
		     fm->kind == TP_DEVSET_SINGLE) &&
		    fm->n == p)
			return f;
	}
	return TP_NONE;
}

static uint32_t fit_tp(const struct tp_space *sp, uint32_t g, uint32_t set,
		       uint32_t want)
{
	for (uint32_t tp = want; tp > 1; tp--)
		if (tp_space_tp_ok(sp, g, set, tp, NULL))
			return tp;
	return 1;
}

struct bufs {
	uint32_t *stage_of, *members;
	double *weight, *speed;
};

static void bufs_free(struct bufs *b)
{
	free(b->stage_of);
	free(b->members);
	free(b->weight);
	free(b->speed);
	memset(b, 0, sizeof(*b));
}

/* The working memory, or -1 with nothing held (out of memory). */
static int bufs_init(struct bufs *b, uint32_t K, uint32_t n)
{
	b->stage_of = tp_calloc(K, sizeof(uint32_t));
	b->members = tp_calloc(n + 1, sizeof(uint32_t));
	b->weight = tp_calloc(K, sizeof(double));
	b->speed = tp_calloc(n + 1, sizeof(double));
	if (b->stage_of && b->members && b->weight && b->speed)
		return 0;
	bufs_free(b); /* what was allocated; freeing again is harmless */
	return -1;
}

/* Fill dec with a pipeline: stage j = family member j of bf->members
 * (n of them), groups split by stage speed (bf->stage_of, bf->weight and
 * bf->speed are working memory); tp per group as large as valid up to
 * want_tp. */
static void pipeline(const struct tp_space *sp, struct bufs *bf, uint32_t n,
		     uint32_t want_tp, enum tp_recompute rc, bool by_speed,
		     struct tp_decision *dec)
{
	uint32_t K = sp->groups->n, *stage_of = bf->stage_of;
	const uint32_t *members = bf->members;
	double *weight = bf->weight, *speed = bf->speed;

	for (uint32_t g = 0; g < K; g++)
		weight[g] = sp->groups->weight[g];
	for (uint32_t j = 0; j < n; j++)
		speed[j] = by_speed ? sp->sets.v[members[j]].speed
				    : sp->sets.v[members[j]].n;
	if (n == 1)
		for (uint32_t g = 0; g < K; g++)
			stage_of[g] = 0;
	else
		search_split_stages(weight, K, speed, n, stage_of);
	for (uint32_t g = 0; g < K; g++) {
		uint32_t set = members[stage_of[g]];
		uint32_t tp = fit_tp(sp, g, set, want_tp);
		dec[g].set = set;
		dec[g].tp = (uint16_t)tp;
		dec[g].sync = (uint8_t)tp_space_default_sync(sp, set, tp);
		dec[g].recompute = (uint8_t)rc;
	}
}

/* Number of transformer layers / blocks the model labels (0: none). */
static uint32_t model_layers(const struct tp_model *m)
{
	int32_t mx = -1;

	for (size_t i = 0; i < m->ops.n; i++)
		if (m->ops.v[i].layer > mx)
			mx = m->ops.v[i].layer;
	return (uint32_t)(mx + 1);
}

/* The megatron grid under the search's runtime (actions.h): only the
 * degrees, schedules and ZeRO stages it has (unconstrained: ZeRO 0 and
 * 1, 1F1B and interleaving, as Megatron-LM). */
static uint32_t grid_max_zero(const struct tp_space *sp, uint32_t pp)
{
	if (!sp->constrained)
		return 1;
	return pp > 1 ? sp->rt.can.max_zero_pipelined : sp->rt.can.max_zero;
}

static bool grid_point_ok(const struct tp_space *sp, uint32_t tp,
			  uint32_t pp, uint32_t V, bool spo)
{
	const struct tp_runtime_can *can = &sp->rt.can;

	if (!sp->constrained)
		return true;
	return (tp == 1 || can->tensor_parallel) &&
	       (pp == 1 || can->pipeline_parallel) &&
	       (V == 1 || (can->schedules & (1u << TP_SCHEDULE_INTERLEAVED))) &&
	       (!spo || can->sequence_parallel);
}

/* Context parallelism cp of the grid at tensor degree tp: 1, or as the
 * action space offers it (search/actions.c) where the runtime runs it:
 * every context rank keeps >= TP_SPACE_CP_MIN_TOKENS tokens, 2 cp
 * chunks divide the sequence, tp x cp divides the devices. */
static bool grid_cp_ok(const struct sctx *s, uint32_t tp, uint32_t cp)
{
	int64_t seq = s->m->seq_len;

	if (cp == 1)
		return true;
	if (s->space.constrained && !s->space.rt.can.context_parallel)
		return false;
	return seq >= 2 * TP_SPACE_CP_MIN_TOKENS &&
	       seq / cp >= TP_SPACE_CP_MIN_TOKENS && seq % (2 * cp) == 0 &&
	       s->c->devices.n % ((size_t)tp * cp) == 0;
}

/* The expert parallelism of the grid's MoE points at tensor degree tp
 * over `ranks` = dp x cp: the largest power of two whose ep x tp ranks
 * stay inside a node (the all-set's tp_max: the dispatch and combine
 * all-to-alls on NVLink rather than the network, as the best EP grid
 * points of Mixtral and DeepSeek-V3 in bench_moe have it),
 * dividing the routed experts and ranks (Megatron-Core's default expert
 * tensor parallelism, etp = tp, as tp_strategy_to_plan requires); 1 when
 * none is above 1, for models without routed experts and under runtimes
 * without expert parallelism.  Each grid point is scored with ep 1 and
 * with this ep; the sweeps move ep from there (the level-0 actions).
 * Every ep from 2 to 128 cost 5x the grid's time on DeepSeek-V3 on 256
 * H100 (103 s against 19 s) for the same best point.  Without EP points the
 * grid of DeepSeek-V3 on 1,024 H100 had none with experts spread and
 * the search at 200 playouts answered 28.9 s where the uniform grid
 * point tp 1 pp 8 ep 8 runs 26.3 s (bench_moe). */
static uint32_t grid_ep(const struct sctx *s, uint32_t tp, uint32_t ranks)
{
	const struct tp_space *sp = &s->space;
	uint32_t node = sp->sets.v[TP_SPACE_SET_ALL].tp_max, ep = 1;

	if (s->m->arch.experts <= 1 ||
	    (sp->constrained && !sp->rt.can.expert_parallel))
		return 1;
	for (uint32_t e = 2; e <= TP_GLOBALS_MAX_EP && (uint64_t)e * tp <= node;
	     e *= 2)
		if (s->m->arch.experts % e == 0 && ranks % e == 0)
			ep = e;
	return ep;
}

static enum tp_schedule grid_schedule(const struct tp_space *sp)
{
	if (sp->constrained &&
	    !(sp->rt.can.schedules & (1u << TP_SCHEDULE_1F1B)) &&
	    (sp->rt.can.schedules & (1u << TP_SCHEDULE_GPIPE)))
		return TP_SCHEDULE_GPIPE;
	return TP_SCHEDULE_1F1B;
}

/* Megatron's stages on contiguous parts of the device order, as a
 * decision vector: groups balanced by weight over the stages (group
 * boundaries; interleaved: over the p*V chunks), tp as configured.  False
 * when the grid point has no such vector (no family of pp parts, fewer
 * groups than chunks). */
static bool megatron_aligned(struct worker *w, const struct tp_strategy *cfg,
			     struct bufs *bf, struct tp_globals *gl)
{
	struct sctx *s = w->s;
	const struct tp_space *sp = &s->space;
	uint32_t n = (uint32_t)s->c->devices.n;
	uint32_t dp = n / (cfg->tp * cfg->pp);

	uint32_t V = cfg->schedule == TP_SCHEDULE_INTERLEAVED
			     ? cfg->virtual_stages
			     : 1;

	if (cfg->cp > 1) /* no group-aligned form with context ranks */
		return false;

	if (V > TP_GLOBALS_MAX_INTERLEAVE || (uint64_t)cfg->pp * V > s->K)
		return false;
	if (cfg->pp == 1) {
		bf->members[0] = TP_SPACE_SET_ALL;
	} else {
		uint32_t f = part_family(sp, cfg->pp);
		if (f == TP_NONE || cfg->pp > s->K)
			return false;
		memcpy(bf->members,
		       sp->family_sets.v + sp->families.v[f].first,
		       cfg->pp * sizeof(uint32_t));
	}
	memset(gl, 0, sizeof(*gl));
	gl->micro_batches =
		(uint32_t)(s->m->global_batch / ((int64_t)cfg->mb * dp));
	gl->schedule = cfg->schedule == TP_SCHEDULE_GPIPE ? TP_SCHEDULE_GPIPE
							  : TP_SCHEDULE_1F1B;
	gl->zero = (uint8_t)cfg->zero;
	gl->even = 1;
	tp_globals_set_shape(gl, V > 1 ? V : 0, cfg->sp);
	tp_globals_set_ep(gl, cfg->ep);
	pipeline(sp, bf, cfg->pp, cfg->tp, cfg->recompute, false, w->dec);
	for (uint32_t g = 0; g < s->K; g++)
		if (s->groups.splittable[g] && w->dec[g].tp != cfg->tp)
			return false;
	return tp_space_state_ok(sp, gl, w->dec) &&
	       tp_space_runnable(sp, gl, w->dec, w->sscr, NULL, 0);
}

/* The grid of baseline_megatron: working memory, the point scored last
 * (plan, gl, r) and the best one so far. */
struct mgrid {
	struct worker *w;
	struct bufs bf;
	struct tp_plan plan, keep; /* the last plan scored; the best one */
	struct tp_globals gl, best_gl;
	struct evalres r, best;
	struct tp_strategy best_cfg;
	struct tp_decision *best_dec; /* the best group-aligned decisions */
	uint32_t ep; /* the expert parallelism of the points scored now */
	bool have, best_aligned;
	bool stop; /* out of time: end the grid */
};

/* One grid point, in one of its two forms (the exact strategy plan, or
 * the group-aligned decision vector); the plan scored ends in x->plan,
 * its settings in x->gl, its result in x->r.  *valid = false when the
 * form does not exist for this point. */
static enum tp_status megatron_point(struct mgrid *x,
				     const struct tp_strategy *cfg,
				     bool aligned, double cutoff, bool *valid)
{
	struct worker *w = x->w;
	struct sctx *s = w->s;
	struct tp_plan *plan = &x->plan;
	struct tp_globals *gl = &x->gl;
	struct evalres *r = &x->r;
	uint32_t dp = (uint32_t)s->c->devices.n / (cfg->tp * cfg->pp * cfg->cp);
	char src[96], eps[16] = "";
	struct tp_error e;
	enum tp_status st;

	*valid = false;
	if (cfg->ep > 1)
		snprintf(eps, sizeof(eps), " ep=%u", cfg->ep);
	if (aligned) {
		if (!megatron_aligned(w, cfg, &x->bf, gl))
			return TP_OK;
		*valid = true;
		snprintf(src, sizeof(src),
			 "megatron tp=%u pp=%u dp=%u%s (group-aligned)",
			 cfg->tp, cfg->pp, dp, eps);
		st = sctx_eval(w, gl, w->dec, src, cutoff, r);
		if (st || (r->bounded && r->feasible) || !r->ok)
			return st;
		st = tp_space_materialize(&s->space, gl, w->dec,
					  s->o->compression, w->sscr, plan,
					  &w->err);
		return st == TP_EINPUT ? TP_OK : st;
	}
	if (tp_strategy_to_plan(cfg, s->m, s->c, plan, &e))
		return TP_OK;
	if (s->space.constrained) /* the collectives' own choice */
		for (uint32_t g = 0; g < plan->groups.n; g++)
			plan->groups.v[g].sync = tp_runtime_sync(
				s->c, tp_plan_group_devs(plan, g),
				plan->groups.v[g].n_devices,
				plan->groups.v[g].tp);
	if (s->space.constrained &&
	    tp_runtime_plan_check(&s->space.rt, plan, s->m, s->c, NULL, NULL,
				  0))
		return TP_OK;
	*valid = true;
	plan->compression = s->o->compression;
	if (cfg->cp > 1)
		snprintf(src, sizeof(src), "megatron tp=%u cp=%u pp=%u dp=%u%s",
			 cfg->tp, cfg->cp, cfg->pp, dp, eps);
	else
		snprintf(src, sizeof(src), "megatron tp=%u pp=%u dp=%u%s",
			 cfg->tp, cfg->pp, dp, eps);
	return sctx_eval_plan(w, plan, src, cutoff, r);
}

/*
 * Megatron-LM as an expert configures it: tp in {1, 2, 4, 8} inside nodes
 * (dividing the heads), context parallelism cp = 2, 4, ... on long
 * sequences (grid_cp_ok: the action space's rule; no group-aligned
 * form), every pp dividing devices / (tp cp), dp the rest,
 * micro-batch sizes 1, 2, 4, ... while they help, the 1F1B schedule and
 * the interleaved one with V = 2, 3, 4, 6 or 8 chunks per stage (layers
 * divisible by pp*V, micro-batches by pp, as Megatron requires), sequence
 * parallelism off and on (tp > 1), the distributed optimizer (ZeRO-1) off
 * and on (dp > 1), and the least recomputation (none, selective, full)
 * that fits.  Each point in two forms: exactly `tagplan simulate
 * --strategy`'s plan (tp_strategy_to_plan: the uniform layer split over
 * pp*V chunks, stages on consecutive devices, even split), and with the
 * stages' layers balanced by compute at group boundaries (what Megatron's
 * uneven first/last-stage options give an expert on models whose layers
 * differ).  Points whose simulator lower bound cannot beat the best point
 * so far are not simulated (they cannot be the answer).
 */
/* The point scored last (x->r, form aligned) as the grid's best when it
 * beats it. */
static void grid_keep(struct mgrid *x, const struct tp_strategy *cfg,
		      bool aligned)
{
	struct worker *w = x->w;

	if (x->have && !better_res(&x->r, &x->best))
		return;
	x->best = x->r;
	x->best_cfg = *cfg;
	x->best_aligned = aligned;
	x->best_gl = x->gl;
	if (aligned)
		memcpy(x->best_dec, w->dec, w->s->K * sizeof(*x->best_dec));
	x->have = true;
	tp_plan_copy(&x->keep, &x->plan, NULL);
}

/* PROBE (issue 27).  While no grid point fits, a point is first scored
 * with full recomputation, in both forms: when neither fits, less
 * recomputation fits even less, and the point is settled by two
 * simulations instead of six.  GPT-3 175B on bench_gnn's 256 mixed GPUs:
 * no point fits, and the grid took 1,414 simulations, 9.8 CPU s (the
 * 1 and 3 s searches of both sides answered the first fit's 302.4 s);
 * with the probe 481 and 1.9 s.  PROBE_MEMORY: in a search limited by
 * time alone (sctx_time_only) that has a plan that fits, the probe asks
 * the evaluator to beat an infinitely fast plan, so the simulator settles
 * a point out of memory by its memory check, before the event simulation
 * (sim.h tp_sim_run_bounded), and simulates every point that fits in
 * full: the same points fit, and the grid's best point, when none fits,
 * is simulated once at the end (megatron_finish) for the baseline's time.
 * On that case 480 simulations and 1.7 CPU s became 12-14 simulations and
 * 0.45 s (the search reaches its sweeps at 1.0-1.1 s instead of 2.1-2.6
 * s); on the 1,024 mixed GPUs the memory check costs nearly a simulation
 * (the task graph is most of it), and the grid about 10% less.  Not in
 * playout-limited searches (training): they are unchanged.  Returns
 * whether the point may fit (then the caller scores it as before); *st
 * an error. */
static bool grid_probe(struct mgrid *x, struct tp_strategy *cfg,
		       enum tp_status *st)
{
	struct sctx *s = x->w->s;
	const struct tp_space *sp = &s->space;
	bool any = false;
	double cut;

	*st = TP_OK;
	if ((x->have && x->best.feasible) ||
	    (sp->constrained &&
	     !(sp->rt.can.recomputes & (1u << TP_RECOMPUTE_FULL))))
		return true;
	/* PROBE_MEMORY: a cutoff no plan beats settles a point out of
	   memory by the simulator's memory check, before the event
	   simulation, and simulates the others in full */
	cut = sctx_memory_cutoff(s);
	cfg->recompute = TP_RECOMPUTE_FULL;
	for (int a = 0; a < 2; a++) {
		bool valid;
		if (out_of_time(s, TP_BASELINE_MEGATRON))
			return true; /* the caller stops */
		if ((*st = megatron_point(x, cfg, a == 1, cut, &valid)))
			return false;
		if (!valid)
			continue;
		any = true;
		if (x->r.ok && x->r.feasible)
			return true;
		grid_keep(x, cfg, a == 1);
	}
	return !any;
}

/* The least recomputation that fits at grid point cfg (recomputation
 * unset), each in both forms: *fit when one fits, *here its best time,
 * *pruned when every point the runtime allows was settled by the bound
 * (more recomputation only adds work, so the bound ends it).  The best
 * point goes to x; x->stop when out of time. */
static enum tp_status megatron_recompute(struct mgrid *x,
					 struct tp_strategy *cfg, bool *fit,
					 double *here, bool *pruned)
{
	static const enum tp_recompute rcs[] = {
		TP_RECOMPUTE_NONE, TP_RECOMPUTE_SELECTIVE, TP_RECOMPUTE_FULL};
	struct worker *w = x->w;
	struct sctx *s = w->s;
	const struct tp_space *sp = &s->space;
	const struct evalres *r = &x->r;
	enum tp_status st;

	if (!grid_probe(x, cfg, &st))
		return st;
	for (int k = 0; k < 3 && !*fit && !*pruned; k++) {
		bool any = false, all_bounded = true;
		cfg->recompute = rcs[k];
		if (sp->constrained &&
		    !(sp->rt.can.recomputes & (1u << rcs[k])))
			continue;
		for (int a = 0; a < 2; a++) {
			bool valid;
			double cut = x->have && x->best.feasible ? x->best.time
								 : 0;
			if (out_of_time(s, TP_BASELINE_MEGATRON)) {
				x->stop = true;
				return TP_OK;
			}
			if ((st = megatron_point(x, cfg, a == 1, cut, &valid)))
				return st;
			if (!valid)
				continue;
			any = true;
			/* out of memory (r->feasible false): more
			   recomputation may fit */
			if (r->bounded && r->feasible)
				continue;
			all_bounded = false;
			if (r->bounded)
				continue;
			if (r->ok && r->feasible) {
				*fit = true;
				if (r->time < *here)
					*here = r->time;
			}
			grid_keep(x, cfg, a == 1);
		}
		if (!any)
			break;
		*pruned = all_bounded;
	}
	return TP_OK;
}

/* The micro-batch sizes 1, 2, 4, ... of grid point (tp x cp, pp, V, sp,
 * z) while they help. */
static enum tp_status megatron_mbs(struct mgrid *x, uint32_t tp, uint32_t cp,
				   uint32_t pp, uint32_t V, bool spo, uint32_t z)
{
	struct sctx *s = x->w->s;
	const struct tp_space *sp = &s->space;
	uint32_t dp = (uint32_t)s->c->devices.n / (tp * cp * pp);
	int64_t B = s->m->global_batch;
	double prev = INFINITY;
	struct tp_strategy cfg;
	enum tp_status st;

	for (int64_t mbs = 1; mbs * dp <= B; mbs *= 2) {
		bool fit = false, pruned = false;
		double here = INFINITY;
		if (B % (mbs * dp) || (V > 1 && (B / (mbs * dp)) % pp))
			break;
		tp_strategy_default(&cfg);
		cfg.tp = tp;
		cfg.cp = cp;
		cfg.pp = pp;
		cfg.mb = (uint32_t)mbs;
		cfg.schedule =
			V > 1 ? TP_SCHEDULE_INTERLEAVED : grid_schedule(sp);
		cfg.virtual_stages = V;
		cfg.sp = spo;
		cfg.zero = z;
		cfg.ep = x->ep;
		if ((st = megatron_recompute(x, &cfg, &fit, &here, &pruned)) ||
		    x->stop)
			return st;
		/* larger micro-batches need more memory and stop helping
		   past the first slower one (a point settled by the bound
		   says nothing about the next) */
		if (pruned)
			continue;
		if (!fit || here > prev)
			break;
		prev = here;
		if (sctx_should_stop(s) && x->have) {
			x->stop = true;
			return TP_OK;
		}
	}
	return TP_OK;
}

/* The grid's answer: the best point as the baseline (and a start point
 * for the sweeps), or why there is none. */
static enum tp_status megatron_finish(struct mgrid *x)
{
	struct worker *w = x->w;
	struct sctx *s = w->s;
	char config[160] = "";
	enum tp_status st = TP_OK;

	if (x->have && x->best.bounded) {
		/* settled out of memory by PROBE_MEMORY: simulated now, for
		   the baseline's time and memory */
		bool valid;
		x->have = false;
		st = megatron_point(x, &x->best_cfg, x->best_aligned, 0,
				    &valid);
		if (st)
			return st;
		if (valid)
			grid_keep(x, &x->best_cfg, x->best_aligned);
	}
	if (x->have) {
		size_t len;
		tp_strategy_format(&x->best_cfg, config, sizeof(config));
		len = strlen(config);
		if (x->best_aligned)
			snprintf(config + len, sizeof(config) - len,
				 " (stages balanced by compute at group "
				 "boundaries)");
		set_baseline(w, TP_BASELINE_MEGATRON, &x->best, &x->keep,
			     config, x->best_aligned ? &x->best_gl : NULL,
			     x->best_aligned ? x->best_dec : NULL);
		if (!x->best_aligned) {
			/* a start point for the sweeps */
			bool valid;
			st = megatron_point(x, &x->best_cfg, true, 0, &valid);
			if (!st && valid && x->r.ok)
				set_start(w, TP_BASELINE_MEGATRON, &x->r,
					  &x->gl, w->dec);
		}
	} else if (!s->res->baselines[TP_BASELINE_MEGATRON].why[0]) {
		snprintf(s->res->baselines[TP_BASELINE_MEGATRON].why,
			 sizeof(s->res->baselines[0].why),
			 "no uniform tp x pp x dp grid point divides this "
			 "cluster and batch");
	}
	return st;
}

/* One pass of the grid: every point with ep 1 (spread false) or with
 * the experts spread by grid_ep (spread true; points where it is 1
 * skipped). */
static enum tp_status megatron_pass(struct mgrid *x, bool spread)
{
	struct sctx *s = x->w->s;
	const struct tp_space *sp = &s->space;
	const struct tp_model *m = s->m;
	uint32_t n = (uint32_t)s->c->devices.n, layers = model_layers(m);
	static const uint32_t Vs[] = {1, 2, 3, 4, 6, 8};
	enum tp_status st = TP_OK;

	for (uint32_t tp = 8; tp >= 1 && !st && !x->stop; tp /= 2) {
	for (uint32_t cp = 1; grid_cp_ok(s, tp, cp) && !st && !x->stop; cp *= 2) {
	for (uint32_t pp = 1; pp <= n / (tp * cp) && !st && !x->stop; pp++) {
	for (size_t vi = 0; vi < sizeof(Vs) / sizeof(Vs[0]) && !st && !x->stop;
	     vi++) {
	for (uint32_t spo = 0; spo <= (tp > 1) && !st && !x->stop; spo++) {
	for (uint32_t z = 0; z <= grid_max_zero(sp, pp) && !st && !x->stop;
	     z++) {
		uint32_t V = Vs[vi], dp;
		if (!grid_point_ok(sp, tp, pp, V, spo != 0))
			continue;
		/* (stages beyond the layers exist only group-aligned) */
		if (sp->sets.v[TP_SPACE_SET_ALL].tp_max % tp ||
		    (n / (tp * cp)) % pp ||
		    ((layers && pp > layers) && pp > s->K) || pp > m->ops.n)
			continue;
		dp = n / (tp * cp * pp);
		if ((V > 1 && (pp < 2 || !layers || layers % (pp * V))) ||
		    (z && dp * cp < 2))
			continue;
		x->ep = spread ? grid_ep(s, tp, dp * cp) : 1;
		if (!spread || x->ep > 1)
			st = megatron_mbs(x, tp, cp, pp, V, spo != 0, z);
	}
	}
	}
	}
	}
		if (tp == 1)
			break;
	}
	return st;
}

/* The grid: on models with routed experts (where the runtime spreads
 * them) the points with experts spread first, then those without; the
 * bound then settles most of the second pass (DeepSeek-V3 on 1,024
 * H100: the points without EP run 40 s and more, those with 26 s). */
static enum tp_status baseline_megatron(struct worker *w)
{
	struct sctx *s = w->s;
	uint32_t n = (uint32_t)s->c->devices.n;
	struct mgrid x;
	enum tp_status st = TP_OK;

	memset(&x, 0, sizeof(x));
	x.w = w;
	x.best_dec = tp_calloc(s->K, sizeof(*x.best_dec));
	tp_plan_init(&x.plan);
	tp_plan_init(&x.keep);
	tp_strategy_default(&x.best_cfg);
	if (bufs_init(&x.bf, s->K, n) || !x.best_dec) {
		st = TP_ENOMEM;
		goto out;
	}
	if (grid_ep(s, 1, n) > 1)
		st = megatron_pass(&x, true);
	if (!st && !x.stop)
		st = megatron_pass(&x, false);
	if (!st)
		st = megatron_finish(&x);
out:
	bufs_free(&x.bf);
	free(x.best_dec);
	tp_plan_release(&x.plan);
	tp_plan_release(&x.keep);
	return st;
}

/* Greedy list scheduling (m-ETF) of groups onto single devices. */
static enum tp_status baseline_greedy(struct worker *w)
{
	struct sctx *s = w->s;
	const struct tp_space *sp = &s->space;
	const struct tp_cluster *c = s->c;
	const struct tp_model *m = s->m;
	const struct tp_groups *G = &s->groups;
	uint32_t n = (uint32_t)c->devices.n, K = s->K, T = sp->n_types;
	double B = (double)m->global_batch, sf = tp_space_state_factor(m);
	double *bytes = tp_calloc((size_t)K * K, sizeof(double));
	double *ready = tp_calloc(n, sizeof(double));
	double *used = tp_calloc(n, sizeof(double));
	double *fin = tp_calloc(K, sizeof(double));
	uint32_t *dev = tp_calloc(K, sizeof(uint32_t));
	uint32_t *single = tp_calloc(n, sizeof(uint32_t));
	struct tp_decision *dec = w->dec;
	struct evalres r;
	struct tp_globals gl = {.micro_batches = 1,
				.schedule = TP_SCHEDULE_1F1B};
	enum tp_status st = TP_OK;
	uint32_t fam = TP_NONE, used_devs = 0;
	char config[160];

	if (!bytes || !ready || !used || !fin || !dev || !single) {
		st = TP_ENOMEM;
		goto out;
	}
	if (out_of_time(s, TP_BASELINE_GREEDY))
		goto out;
	if (n == 1) {
		single[0] = TP_SPACE_SET_ALL;
	} else {
		for (uint32_t f = 0; f < sp->families.n; f++)
			if (sp->families.v[f].kind == TP_DEVSET_SINGLE &&
			    sp->families.v[f].n == n)
				fam = f;
		if (fam == TP_NONE) {
			st = TP_EINTERNAL;
			goto out;
		}
		memcpy(single, sp->family_sets.v + sp->families.v[fam].first,
		       n * sizeof(uint32_t));
	}
	for (size_t e = 0; e < m->edges.n; e++) {
		uint32_t a = G->group_of[m->edges.v[e].src];
		uint32_t b = G->group_of[m->edges.v[e].dst];
		if (a != b)
			bytes[(size_t)a * K + b] += m->edges.v[e].bytes * B;
	}
	for (uint32_t g = 0; g < K; g++) {
		double need = G->param_bytes[g] * sf + G->saved_bytes[g] * B;
		double best_f = INFINITY, best_free = -INFINITY;
		uint32_t best_d = TP_NONE, roomiest = 0;
		for (uint32_t d = 0; d < n; d++) {
			const struct tp_device_type *ty =
				&c->types.v[c->devices.v[d].type];
			double cap = ty->memory_bytes - ty->reserved_bytes;
			double start = ready[d], f;
			for (uint32_t p = 0; p < g; p++) {
				double x = bytes[(size_t)p * K + g], arr;
				if (x <= 0)
					continue;
				arr = fin[p];
				if (dev[p] != d) {
					struct tp_route rt;
					tp_cluster_route(c, dev[p], d, &rt);
					arr += rt.latency_s +
					       (rt.bw_Bps > 0 ? x / rt.bw_Bps
							      : 0);
				}
				if (arr > start)
					start = arr;
			}
			f = start +
			    sp->time[(size_t)g * T + c->devices.v[d].type] * B;
			if (cap - used[d] > best_free) {
				best_free = cap - used[d];
				roomiest = d;
			}
			if (used[d] + need <= cap && f < best_f) {
				best_f = f;
				best_d = d;
			}
		}
		if (best_d == TP_NONE) {
			/* nothing fits: the device with the most room */
			best_d = roomiest;
			best_f = ready[best_d] +
				 sp->time[(size_t)g * T +
					  c->devices.v[best_d].type] *
					 B;
		}
		if (used[best_d] == 0)
			used_devs++;
		dev[g] = best_d;
		fin[g] = best_f;
		ready[best_d] = best_f;
		used[best_d] += need;
		dec[g].set = single[best_d];
		dec[g].tp = 1;
		dec[g].sync = TP_SYNC_RING;
		dec[g].recompute = TP_RECOMPUTE_NONE;
	}
	if (!tp_space_runnable(sp, &gl, dec, w->sscr,
			       s->res->baselines[TP_BASELINE_GREEDY].why,
			       sizeof(s->res->baselines[0].why)))
		goto out;
	st = score(w, &gl, dec, "greedy", &r);
	if (st)
		goto out;
	snprintf(config, sizeof(config),
		 "m-ETF list scheduling of %u groups onto %u single device%s, "
		 "whole batch",
		 K, used_devs, used_devs == 1 ? "" : "s");
	set_baseline(w, TP_BASELINE_GREEDY, &r, &w->plan, config, &gl, dec);
out:
	free(bytes);
	free(ready);
	free(used);
	free(fin);
	free(dev);
	free(single);
	return st;
}

/* The largest ZeRO stage the search's runtime runs (3 without one). */
static uint32_t lean_zero(const struct tp_space *sp, bool pipelined)
{
	if (!sp->constrained)
		return 3;
	return pipelined ? sp->rt.can.max_zero_pipelined : sp->rt.can.max_zero;
}

/* The most recomputation the search's runtime runs. */
static enum tp_recompute lean_recompute(const struct tp_space *sp)
{
	for (int k = 2; k > 0; k--)
		if (!sp->constrained ||
		    (sp->rt.can.recomputes & (1u << rc_ladder[k])))
			return rc_ladder[k];
	return TP_RECOMPUTE_NONE;
}

/* Score dec (a pipeline over bf->members[0 .. n)) with the most
 * micro-batches the state allows, ZeRO stage zero; *fits when it fits. */
static enum tp_status lean_try(struct worker *w, uint32_t zero,
			       const char *what, bool *fits)
{
	struct sctx *s = w->s;
	const struct tp_space *sp = &s->space;
	struct evalres r;
	enum tp_status st;

	*fits = false;
	if (sctx_stopped_for_good(s)) {
		/* out of time: go on only while nothing fits (a few plans) */
		bool fit;
		pthread_mutex_lock(&s->lock);
		fit = s->best.have && s->best.feasible;
		pthread_mutex_unlock(&s->lock);
		if (fit)
			return TP_OK;
	}
	for (uint32_t k = sp->n_mb; k-- > 0;) {
		struct tp_globals gl = {
			.micro_batches = sp->mb_counts[k],
			.schedule = TP_SCHEDULE_1F1B,
			.zero = (uint8_t)zero,
			.even = tp_space_even_only(sp) ? 1 : 0};
		if (!tp_space_state_ok(sp, &gl, w->dec))
			continue;
		if (!tp_space_runnable(sp, &gl, w->dec, w->sscr, NULL, 0))
			return TP_OK;
		st = sctx_eval(w, &gl, w->dec, what, 0, &r);
		*fits = !st && r.ok && r.feasible;
		return st;
	}
	return TP_OK;
}

/* Group-aligned plans on one device type's set alone: a pipeline over
 * its nodes (when the space has node sets), else, or when that does not
 * fit, all of its devices with ZeRO 3.  *fits when one fits. */
static enum tp_status type_alone(struct worker *w, struct bufs *bf,
				 uint32_t type_set, enum tp_recompute rc,
				 bool *fits)
{
	struct sctx *s = w->s;
	const struct tp_space *sp = &s->space;
	uint32_t stages = 0, type = sp->sets.v[type_set].type;
	char what[96];
	enum tp_status st;

	for (uint32_t g = 0; g < sp->families.n; g++) {
		const struct tp_family *nf = &sp->families.v[g];
		if (nf->kind != TP_DEVSET_NODE)
			continue;
		for (uint32_t k = 0; k < nf->n && stages < s->K; k++) {
			uint32_t set = sp->family_sets.v[nf->first + k];
			if (sp->sets.v[set].type == type)
				bf->members[stages++] = set;
		}
	}
	if (stages > 1) {
		pipeline(sp, bf, stages, 8, rc, false, w->dec);
		snprintf(what, sizeof(what),
			 "first fit: pipeline over the %s nodes",
			 sp->sets.v[type_set].label);
		st = lean_try(w, lean_zero(sp, true), what, fits);
		if (st || *fits)
			return st;
	}
	bf->members[0] = type_set;
	pipeline(sp, bf, 1, 8, rc, false, w->dec);
	snprintf(what, sizeof(what), "first fit: all on %s",
		 sp->sets.v[type_set].label);
	return lean_try(w, lean_zero(sp, false), what, fits);
}

/* One cost seed (search_seeds_cost): every group data parallel on set,
 * tp 1 or the largest valid up to 8, no recomputation, the fewest
 * micro-batches that fit (at most 4 counts tried), else the leanest
 * settings (lean_try). */
static enum tp_status cost_seed(struct worker *w, struct bufs *bf,
				uint32_t set)
{
	const struct tp_space *sp = &w->s->space;
	char what[96];
	enum tp_status st = TP_OK;
	bool fits = false;

	snprintf(what, sizeof(what), "cost seed: all on %s",
		 sp->sets.v[set].label);
	for (uint32_t want = 1; want <= 8 && !st && !fits; want += 7) {
		bool tp1 = true;
		bf->members[0] = set;
		pipeline(sp, bf, 1, want, TP_RECOMPUTE_NONE, false, w->dec);
		for (uint32_t g = 0; g < w->s->K; g++)
			tp1 &= w->dec[g].tp == 1;
		if (want > 1 && tp1)
			break;
		for (uint32_t k = 0, tries = 0;
		     k < sp->n_mb && tries < 4 && !st && !fits; k++) {
			struct tp_globals gl = {
			    .micro_batches = sp->mb_counts[k],
			    .schedule = TP_SCHEDULE_1F1B,
			    .even = tp_space_even_only(sp) ? 1 : 0};
			struct evalres r;
			if (!tp_space_state_ok(sp, &gl, w->dec))
				continue;
			if (!tp_space_runnable(sp, &gl, w->dec, w->sscr, NULL,
					       0))
				break;
			st = sctx_eval(w, &gl, w->dec, what, 0, &r);
			fits = r.ok && r.fits;
			tries++;
		}
	}
	if (st || fits)
		return st;
	pipeline(sp, bf, 1, 8, lean_recompute(sp), false, w->dec);
	return lean_try(w, lean_zero(sp, false), what, &fits);
}

/*
 * Seeds of the cost objective (search.h TP_SEARCH_OBJECTIVE_COST): the
 * cheapest plans often use few devices, which the baselines and the
 * seeds for speed never build.  For every family of alike disjoint sets
 * (nodes, parts, single devices, pods; actions.h), the first member of
 * each device type in it, all groups on it (cost_seed).  A few
 * simulations per family.
 */
enum tp_status search_seeds_cost(struct worker *w)
{
	struct sctx *s = w->s;
	const struct tp_space *sp = &s->space;
	struct bufs bf;
	enum tp_status st = TP_OK;

	if (bufs_init(&bf, s->K, (uint32_t)s->c->devices.n))
		return TP_ENOMEM;
	for (uint32_t f = 0; f < sp->families.n && !st; f++) {
		const struct tp_family *fm = &sp->families.v[f];
		for (uint32_t k = 0; k < fm->n && !st; k++) {
			uint32_t set = sp->family_sets.v[fm->first + k], j;
			if (sctx_out_of_time(s))
				break;
			for (j = 0; j < k; j++)
				if (sp->sets.v[sp->family_sets.v[fm->first + j]]
					    .type == sp->sets.v[set].type)
					break;
			if (j == k)
				st = cost_seed(w, &bf, set);
		}
	}
	bufs_free(&bf);
	return st;
}

/*
 * A first plan that fits, before the baselines (issue 27): on the largest
 * models the baselines take seconds to tens of seconds (the megatron
 * grid simulates hundreds of points on 1,024 GPUs, most out of memory)
 * before anything fits, whatever the time limit.  A few memory-lean
 * plans first, each simulated once, stopping at the first that fits:
 * Megatron's grid point with the least memory (the largest tp and pp,
 * full recomputation, ZeRO, one sample per micro-batch and replica),
 * then, on clusters of several device types, each type alone, the types
 * with the most memory per device first: a pipeline over its nodes, then
 * all of its devices with ZeRO 3.  The plan becomes the incumbent and is
 * reported (progress); the baselines and the search go on from there.
 */
enum tp_status search_first_fit(struct worker *w)
{
	struct sctx *s = w->s;
	const struct tp_space *sp = &s->space;
	uint32_t n = (uint32_t)s->c->devices.n, layers = model_layers(s->m);
	uint32_t tp = 8, pp;
	enum tp_recompute rc = lean_recompute(sp);
	struct bufs bf;
	enum tp_status st;
	bool fits = false;

	if (bufs_init(&bf, s->K, n))
		return TP_ENOMEM;
	/* Megatron's leanest point, group-aligned: the largest tp of the
	   grid, then the most stages */
	while (tp > 1 && sp->sets.v[TP_SPACE_SET_ALL].tp_max % tp)
		tp /= 2;
	for (pp = s->K < n / tp ? s->K : n / tp; pp > 1; pp--)
		if ((n / tp) % pp == 0 && part_family(sp, pp) != TP_NONE &&
		    (!layers || pp <= layers))
			break;
	if (pp > 1)
		memcpy(bf.members,
		       sp->family_sets.v +
			       sp->families.v[part_family(sp, pp)].first,
		       pp * sizeof(uint32_t));
	else
		bf.members[0] = TP_SPACE_SET_ALL;
	pipeline(sp, &bf, pp, tp, rc, false, w->dec);
	st = lean_try(w, lean_zero(sp, pp > 1),
		      "first fit: megatron's leanest point", &fits);
	/* each device type alone, the most memory per device first */
	for (uint32_t f = 0; f < sp->families.n && !fits && !st; f++) {
		const struct tp_family *fm = &sp->families.v[f];
		uint32_t done = 0;
		if (fm->kind != TP_DEVSET_TYPE)
			continue;
		for (uint32_t i = 0; i < fm->n && i < 32 && !fits && !st; i++) {
			uint32_t pick = TP_NONE;
			double best = 0;
			for (uint32_t k = 0; k < fm->n && k < 32; k++) {
				const struct tp_devset *d = &sp->sets.v
					[sp->family_sets.v[fm->first + k]];
				if (!(done & (1u << k)) &&
				    (pick == TP_NONE ||
				     d->memory / d->n > best)) {
					pick = k;
					best = d->memory / d->n;
				}
			}
			done |= 1u << pick;
			st = type_alone(w, &bf,
					sp->family_sets.v[fm->first + pick],
					rc, &fits);
		}
	}
	bufs_free(&bf);
	return st;
}

/*
 * A greedy policy rollout (issue 27, "a fast first plan"): from the
 * state self-play games start in (train/selfplay.c game_incumbent: every
 * group data parallel on all devices, tp 1, no recomputation, the fewest
 * micro-batches the state allows, 1F1B), every level in turn, the global
 * settings first, takes the provider's likeliest candidate, and the plan
 * at the end is simulated once; when it does not fit, once more with the
 * most recomputation and ZeRO the runtime runs (lean_try).  K + 1
 * forward passes and one or two simulations, before the baselines: on
 * the largest models the megatron grid alone takes seconds (src/search/
 * README, step 3).  Without a provider (--no-gnn) it does nothing.
 */
enum tp_status search_rollout(struct worker *w)
{
	struct sctx *s = w->s;
	const struct tp_space *sp = &s->space;
	const struct tp_prior_provider *pp = s->o->prior;
	uint32_t K = s->K, n_act = SEARCH_MAX_ACTIONS;
	struct tp_action *acts = NULL;
	struct tp_prior_action *pacts = NULL;
	bool *decided = NULL, fits = false;
	float *pri = NULL;
	struct tp_globals gl;
	struct evalres r;
	enum tp_status st = TP_OK;

	if (!pp || !pp->evaluate || K == 0)
		return TP_OK;
	acts = tp_calloc(n_act, sizeof(*acts));
	pacts = tp_calloc(n_act, sizeof(*pacts));
	pri = tp_calloc(n_act, sizeof(*pri));
	decided = tp_calloc(K, sizeof(*decided));
	if (!acts || !pacts || !pri || !decided) {
		st = TP_ENOMEM;
		goto out;
	}
	tp_space_data_parallel(sp, w->dec);
	memset(&gl, 0, sizeof(gl));
	gl.schedule = TP_SCHEDULE_1F1B;
	gl.even = tp_space_even_only(sp) ? 1 : 0;
	for (uint32_t k = 0; k < sp->n_mb; k++) {
		gl.micro_batches = sp->mb_counts[k];
		if (tp_space_state_ok(sp, &gl, w->dec))
			break;
	}
	if (!tp_space_state_ok(sp, &gl, w->dec))
		goto out;
	for (uint32_t level = 0; level <= K; level++) {
		struct search_prior_buf b = {pacts, decided, pri, NULL, false};
		struct search_prior_ask q;
		uint32_t n = tp_space_level_actions(sp, level, &gl, w->dec,
						    acts, n_act, w->sscr);
		uint32_t best = 0;
		if (n < 2)
			continue;
		q.level = level;
		q.acts = acts;
		q.n = n;
		q.gl = &gl;
		q.dec = w->dec;
		q.fresh = false;
		if ((st = search_priors(w, pp, &q, &b)))
			goto out;
		for (uint32_t i = 1; i < n; i++)
			if (pri[i] > pri[best])
				best = i;
		if (level == 0)
			gl = acts[best].g;
		else
			tp_space_apply(sp, level - 1, &acts[best], &gl, w->dec);
	}
	if (!tp_space_state_ok(sp, &gl, w->dec) ||
	    !tp_space_runnable(sp, &gl, w->dec, w->sscr, NULL, 0))
		goto out;
	if ((st = sctx_eval(w, &gl, w->dec,
			    "rollout: the network's likeliest action at every "
			    "level", 0, &r)))
		goto out;
	fits = r.ok && r.feasible;
	if (!fits) {
		enum tp_recompute rc = lean_recompute(sp);
		bool piped = false;
		for (uint32_t g = 0; g < K; g++) {
			w->dec[g].recompute = (uint8_t)rc;
			piped |= w->dec[g].set != w->dec[0].set;
		}
		st = lean_try(w, lean_zero(sp, piped),
			      "rollout: the network's likeliest actions, "
			      "leanest memory", &fits);
	}
out:
	free(acts);
	free(pacts);
	free(pri);
	free(decided);
	return st;
}

enum tp_status search_baselines(struct worker *w)
{
	enum tp_status st;

	if ((st = baseline_dp(w, true)) || (st = baseline_dp(w, false)) ||
	    (st = baseline_megatron(w)) || (st = baseline_greedy(w)))
		return st;
	return TP_OK;
}

static const char *const baseline_names[TP_BASELINE_COUNT] = {
	"dp", "dp-hetero", "megatron", "greedy"};

const char *tp_baseline_name(enum tp_baseline b)
{
	return (unsigned)b < TP_BASELINE_COUNT ? baseline_names[b] : "?";
}

int tp_baseline_parse(const char *s)
{
	for (int i = 0; i < TP_BASELINE_COUNT; i++)
		if (strcmp(s, baseline_names[i]) == 0)
			return i;
	return -1;
}

/* ------------------------------------------------------------------ */
/* seeds                                                               */

/* The memory ladder of a seed (seed_pipeline): path 0 the plain plan,
 * 1 a ZeRO stage, 2 recomputation, 3 both.  SEED_LADDER: before, the seeds
 * only escalated recomputation (ZeRO 0), so no seed put Llama-2-7B data
 * parallel on the A100s of bench_gnn's l4:3 a100:4 cluster (it needs
 * ZeRO and 8 micro-batches), the plan the guided search found only after
 * 1,000 playouts (9.285 s; the unguided search's best of 20,000 was
 * 10.44 s). */
struct seed_step {
	uint8_t rung, zero, path;
};
static const struct seed_step seed_ladder[] = {
	{0, 0, 0}, {0, 1, 1}, {0, 2, 1}, {1, 0, 2},
	{2, 0, 2}, {1, 2, 3}, {2, 2, 3}};
#define SEED_STEPS (sizeof(seed_ladder) / sizeof(seed_ladder[0]))

/* Try a pipeline over `members` with a few tp and micro-batch counts. */
static enum tp_status seed_pipeline(struct worker *w, struct bufs *bf,
				    uint32_t n, const char *what)
{
	struct sctx *s = w->s;
	const struct tp_space *sp = &s->space;
	int64_t B = s->m->global_batch;
	struct tp_decision *dec = w->dec;
	uint32_t tps[2] = {1, 8};
	char src[96];
	enum tp_status st;

	for (int ti = 0; ti < 2; ti++) {
		for (uint32_t mult = 1; mult <= 8; mult *= 2) {
			uint64_t want = (uint64_t)n * mult;
			uint32_t mcount = 0;
			struct evalres r;
			for (uint32_t k = 0; k < sp->n_mb; k++)
				if (sp->mb_counts[k] <= want)
					mcount = sp->mb_counts[k];
			if (!mcount || (int64_t)mcount > B)
				continue;
			/* rung 0 (no recomputation, no ZeRO) fits: that is
			   the seed; else the cheapest fit along two ladders,
			   a ZeRO stage (1, then 2) and recomputation
			   (selective, then full); only when neither fits, both
			   (SEED_LADDER) */
			bool done[4] = {false, false, false, false};
			for (uint32_t step = 0; step < SEED_STEPS; step++) {
				const struct seed_step *ls = &seed_ladder[step];
				struct tp_globals gl = {
					.micro_batches = mcount,
					.schedule = TP_SCHEDULE_1F1B,
					.zero = ls->zero,
					.even = tp_space_even_only(sp) ? 1 : 0};
				if (done[0] || done[ls->path] ||
				    (ls->path == 3 && (done[1] || done[2])))
					continue;
				if (sctx_out_of_time(s))
					return TP_OK;
				pipeline(sp, bf, n, tps[ti],
					 rc_ladder[ls->rung], true, dec);
				if (!tp_space_state_ok(sp, &gl, dec) ||
				    !tp_space_runnable(sp, &gl, dec, w->sscr,
						       NULL, 0))
					continue;
				snprintf(src, sizeof(src),
					 "seed: %s, %u stage%s, m=%u", what, n,
					 n == 1 ? "" : "s", mcount);
				st = sctx_eval(w, &gl, dec, src,
					       sctx_best_cutoff(s), &r);
				if (st)
					return st;
				s->res->seeds++;
				done[ls->path] |= r.ok && r.feasible;
			}
			if (sctx_should_stop(s))
				return TP_OK;
		}
		if (sp->sets.v[bf->members[0]].tp_max < 2)
			break;
	}
	return TP_OK;
}

enum tp_status search_seeds(struct worker *w)
{
	struct sctx *s = w->s;
	const struct tp_space *sp = &s->space;
	struct bufs bf;
	enum tp_status st = TP_OK;
	char what[64];

	if (bufs_init(&bf, s->K, (uint32_t)s->c->devices.n))
		return TP_ENOMEM;
	/* data parallel (plus tensor parallel) with proportional shares,
	   on all devices and on each set of a small family (a device type,
	   a node, half of the devices, ...) */
	bf.members[0] = TP_SPACE_SET_ALL;
	st = seed_pipeline(w, &bf, 1, "all devices");
	for (uint32_t f = 0; f < sp->families.n && !st; f++) {
		const struct tp_family *fm = &sp->families.v[f];
		if (fm->n > 8 || fm->kind == TP_DEVSET_SINGLE ||
		    sctx_should_stop(s))
			continue;
		for (uint32_t k = 0; k < fm->n && !st; k++) {
			uint32_t set = sp->family_sets.v[fm->first + k];
			bf.members[0] = set;
			snprintf(what, sizeof(what), "all on %s",
				 sp->sets.v[set].label);
			st = seed_pipeline(w, &bf, 1, what);
		}
	}
	for (uint32_t f = 0; f < sp->families.n && !st; f++) {
		const struct tp_family *fm = &sp->families.v[f];
		if (fm->n > s->K || fm->n > 16 || sctx_should_stop(s))
			continue;
		memcpy(bf.members, sp->family_sets.v + fm->first,
		       fm->n * sizeof(uint32_t));
		snprintf(what, sizeof(what), "pipeline over %s",
			 fm->kind == TP_DEVSET_TYPE   ? "device types"
			 : fm->kind == TP_DEVSET_NODE ? "nodes"
			 : fm->kind == TP_DEVSET_SPEED_PART
				 ? "speed-balanced parts"
			 : fm->kind == TP_DEVSET_SINGLE ? "single devices"
			 : fm->kind == TP_DEVSET_TIER	? "a switch tier's pods"
							: "contiguous parts");
		st = seed_pipeline(w, &bf, fm->n, what);
		/* device types in the other order (fast types first) */
		if (!st && fm->kind == TP_DEVSET_TYPE && fm->n == 2) {
			uint32_t t = bf.members[0];
			bf.members[0] = bf.members[1];
			bf.members[1] = t;
			st = seed_pipeline(w, &bf, 2, "pipeline over device "
						      "types, reversed");
		}
	}
	bufs_free(&bf);
	if (!st && !sctx_should_stop(s))
		st = search_seeds_mixed(w);
	if (!st && !sctx_should_stop(s))
		st = search_mixed_pipelines(w);
	return st;
}
