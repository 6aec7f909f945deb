/*
 * guide.c - asking the prior provider (prior.h) about a state of the
 * search: for the tree search's expansions (mcts.c) and for ordering and
 * cutting the sweeps' single changes (baselines.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search_int.h"

#define PCACHE_BITS 12
#define PCACHE_SLOTS (1u << PCACHE_BITS)

struct pcache_slot {
	uint64_t key; /* 0 = empty */
	uint32_t n;
	bool has_gains;
};

struct search_prior_cache {
	struct pcache_slot slot[PCACHE_SLOTS];
	float pri[PCACHE_SLOTS][SEARCH_MAX_ACTIONS];
	float gains[PCACHE_SLOTS][SEARCH_MAX_ACTIONS];
};

struct search_prior_cache *search_prior_cache_new(void)
{
	return tp_calloc(1, sizeof(struct search_prior_cache));
}

void search_prior_cache_free(struct search_prior_cache *c)
{
	free(c);
}

static uint64_t mix(uint64_t h, uint64_t x)
{
	h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 29);
}

/*
 * The cache key of a state's answer: the whole state, or (local) its
 * level, globals and candidate actions only.  Local keys (issue 27): the
 * guided sweeps and the tree's level priors (mcts.c) take a level's
 * answer from the cache when the level, the globals and the candidate
 * actions (which follow from the group's and its neighbours' decisions)
 * are those of a state already asked, whatever the other groups decide:
 * after a sweep moves one group, the other levels keep their answers
 * instead of a forward pass each.  Measured (src/gnn/README, "Equal
 * wall-clock time"): on seven of bench_gnn's equal-time cases x 3 seeds
 * the same plans at 200 and 1,000 playouts; provider calls at 1,000
 * playouts VGG-16 92 -> 67, Mistral-7B 130 -> 66, Qwen2-7B 122 -> 67,
 * Llama-3-8B 140 -> 75, GPT-3 13B 163-210 -> 122-132 (search CPU time
 * 0-30% less, medians of 3 seeds on a loaded machine).
 * options.node_priors turns them off with the level priors.
 */
static uint64_t pcache_key(const struct sctx *s, uint32_t level,
			   const struct tp_action *acts, uint32_t n,
			   const struct tp_globals *gl,
			   const struct tp_decision *dec, bool local)
{
	uint64_t h;

	if (local) {
		const unsigned char *b = (const unsigned char *)acts;
		h = 0x6c6f63616cull; /* "local" */
		h = mix(h, gl->micro_batches);
		h = mix(h, ((uint64_t)gl->schedule << 24) |
				   ((uint64_t)gl->zero << 16) |
				   ((uint64_t)gl->even << 8) | gl->shape);
		/* context and expert tensor parallelism, when set (keys
		   without them as before they existed) */
		if (gl->cp_log2 || gl->etp)
			h = mix(h, ((uint64_t)gl->etp << 8) | gl->cp_log2);
		for (size_t i = 0; i + 8 <= n * sizeof(*acts); i += 8) {
			uint64_t x;
			memcpy(&x, b + i, 8);
			h = mix(h, x);
		}
		if ((n * sizeof(*acts)) % 8) {
			uint64_t x = 0;
			size_t r = (n * sizeof(*acts)) % 8;
			memcpy(&x, b + n * sizeof(*acts) - r, r);
			h = mix(h, x);
		}
	} else {
		h = tp_space_hash(&s->space, gl, dec);
	}

	/* not the provider's address: a search asks one provider
	   (sctx_provider; the caches live and die with the search), and an
	   address moves from run to run (ASLR), and with it the slots, the
	   evictions and which state's answer a local key returns: guided
	   runs with --threads 1 differed (GPT-Neo-2.7B on 16 GPUs, 2,000
	   playouts: 976-981 simulations from run to run) */
	h = mix(h, ((uint64_t)level << 32) | n);
	return h | 1;
}

static void uniform_priors(const struct search_prior_buf *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		b->priors[i] = 1.0f / (float)n;
}

enum tp_status search_priors(struct worker *w,
			     const struct tp_prior_provider *pp,
			     const struct search_prior_ask *q,
			     const struct search_prior_buf *b)
{
	uint32_t level = q->level, n = q->n;
	const struct tp_action *acts = q->acts;
	const struct tp_globals *gl = q->gl;
	const struct tp_decision *dec = q->dec;
	bool fresh = q->fresh;
	struct sctx *s = w->s;
	struct search_prior_cache *pc = w->pcache;
	struct pcache_slot *slot = NULL;
	struct tp_prior_state ps;
	double sum = 0, t0;
	uint64_t key = 0;
	enum tp_status st;

	if (b->gains)
		for (uint32_t i = 0; i < n; i++)
			b->gains[i] = NAN;
	if (!pp || !pp->evaluate || n < 2) {
		uniform_priors(b, n);
		return TP_OK;
	}
	if (pc && n <= SEARCH_MAX_ACTIONS) {
		key = pcache_key(s, level, acts, n, gl, dec,
				 b->local && !s->o->node_priors);
		slot = &pc->slot[key & (PCACHE_SLOTS - 1)];
		if (slot->key == key && slot->n == n &&
		    (!b->gains || slot->has_gains)) {
			uint32_t i = (uint32_t)(slot - pc->slot);
			memcpy(b->priors, pc->pri[i], n * sizeof(*b->priors));
			if (b->gains)
				memcpy(b->gains, pc->gains[i],
				       n * sizeof(*b->gains));
			atomic_fetch_add(&s->prior_hits, 1);
			return TP_OK;
		}
	}
	t0 = sctx_now();
	if (!fresh) {
		st = tp_space_materialize(&s->space, gl, dec,
					  s->o->compression, w->sscr, &w->plan,
					  &w->err);
		if (st && st != TP_EINPUT)
			return st;
	}
	for (uint32_t g = 0; g < s->K; g++)
		b->decided[g] = level > 0 && g + 1 < level;
	for (uint32_t i = 0; i < n; i++)
		tp_space_prior_action(&s->space, level, &acts[i], i == 0,
				      &b->pacts[i]);
	memset(&ps, 0, sizeof(ps));
	ps.model = s->m;
	ps.cluster = s->c;
	ps.n_groups = s->K;
	ps.group_first = s->groups.first;
	ps.level = level;
	ps.decided = b->decided;
	ps.plan = &w->plan;
	ps.report = fresh ? &w->report : NULL;
	ps.n_actions = n;
	ps.actions = b->pacts;
	ps.gains = b->gains;
	st = pp->evaluate(pp->ctx, w->prior_scratch, &ps, b->priors, &w->err);
	atomic_fetch_add(&s->prior_calls, 1);
	atomic_fetch_add(&s->prior_ns, (uint64_t)((sctx_now() - t0) * 1e9));
	if (st)
		return st;
	for (uint32_t i = 0; i < n; i++) {
		if (!(b->priors[i] >= 0) || !isfinite(b->priors[i]))
			b->priors[i] = 0;
		sum += b->priors[i];
	}
	for (uint32_t i = 0; i < n; i++)
		b->priors[i] = sum > 0 ? (float)(b->priors[i] / sum)
				       : 1.0f / (float)n;
	if (b->gains)
		for (uint32_t i = 0; i < n; i++)
			if (!isfinite(b->gains[i]))
				b->gains[i] = NAN;
	if (slot) {
		uint32_t i = (uint32_t)(slot - pc->slot);
		slot->key = key;
		slot->n = n;
		slot->has_gains = b->gains != NULL;
		memcpy(pc->pri[i], b->priors, n * sizeof(*b->priors));
		if (b->gains)
			memcpy(pc->gains[i], b->gains, n * sizeof(*b->gains));
	}
	return TP_OK;
}

/* The provider's view of candidate a of level (actions.h). */
void tp_space_prior_action(const struct tp_space *sp, uint32_t level,
			   const struct tp_action *a, bool keeps_default,
			   struct tp_prior_action *pa)
{
	memset(pa, 0, sizeof(*pa));
	pa->keeps_default = keeps_default;
	pa->applies_to_rest = a->suffix != 0;
	if (level == 0) {
		pa->global = true;
		pa->micro_batches = a->g.micro_batches;
		pa->schedule = (enum tp_schedule)a->g.schedule;
		pa->zero = a->g.zero;
		pa->virtual_stages = tp_globals_interleave(&a->g);
		pa->sp = tp_globals_sp(&a->g);
		pa->even = a->g.even != 0;
		pa->ep = tp_globals_ep(&a->g);
		pa->cp = tp_globals_cp(&a->g);
		pa->etp = tp_globals_etp(&a->g);
		if (pa->virtual_stages >= 2)
			pa->schedule = TP_SCHEDULE_INTERLEAVED;
	} else {
		const struct tp_devset *ds = &sp->sets.v[a->d.set];
		pa->devices = tp_space_set_devs(sp, a->d.set);
		pa->n_devices = ds->n;
		pa->tp = a->d.tp;
		pa->dp = ds->n / a->d.tp;
		pa->sync = tp_decision_sync(&a->d);
		pa->recompute = (enum tp_recompute)a->d.recompute;
		if (tp_decision_mixed(&a->d)) {
			/* the fastest type at tp 1, the others at d.tp */
			uint32_t fast = tp_space_set_fast_type(sp, a->d.set);
			pa->tp = 1;
			pa->dp = ds->n;
			pa->mixed_tp = a->d.tp;
			for (uint32_t i = 0; i < ds->n; i++)
				pa->mixed_devices +=
					sp->cluster->devices.v[pa->devices[i]]
						.type != fast;
		}
	}
}

struct ranked {
	float p;
	uint32_t i;
};

static int cmp_ranked(const void *x, const void *y)
{
	const struct ranked *a = x, *b = y;

	if (a->p != b->p)
		return a->p > b->p ? -1 : 1;
	return a->i < b->i ? -1 : a->i > b->i;
}

uint32_t search_prior_cut(const float *priors, uint32_t n, double mass,
			  uint32_t min_keep, bool *keep)
{
	struct ranked r[SEARCH_MAX_ACTIONS];
	double total = 0, acc = 0;
	uint32_t m = 0, kept = 0;

	for (uint32_t i = 0; i < n; i++)
		keep[i] = false;
	for (uint32_t i = 1; i < n && m < SEARCH_MAX_ACTIONS; i++) {
		r[m].p = priors[i];
		r[m].i = i;
		total += priors[i];
		m++;
	}
	qsort(r, m, sizeof(*r), cmp_ranked);
	for (uint32_t k = 0; k < m; k++) {
		if (kept >= min_keep && total > 0 && acc >= mass * total)
			break;
		keep[r[k].i] = true;
		acc += r[k].p;
		kept++;
	}
	return kept;
}

void search_prior_rank(const float *priors, uint32_t n, uint32_t *rank)
{
	struct ranked r[SEARCH_MAX_ACTIONS];
	uint32_t m = 0;

	for (uint32_t i = 1; i < n && m < SEARCH_MAX_ACTIONS; i++) {
		r[m].p = priors ? priors[i] : 0;
		r[m].i = i;
		m++;
	}
	qsort(r, m, sizeof(*r), cmp_ranked);
	if (n)
		rank[0] = 0;
	for (uint32_t k = 0; k < m; k++)
		rank[r[k].i] = k;
}
