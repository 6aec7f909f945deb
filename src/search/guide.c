/*
 * guide.c - asking the prior provider (prior.h) about a state of the
 * search: for the tree search's expansions (mcts.c) and for ordering and
 * cutting the sweeps' single changes (baselines.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search_int.h"

enum tp_status search_priors(struct worker *w,
			     const struct tp_prior_provider *pp,
			     uint32_t level,
			     const struct tp_action *acts, uint32_t n,
			     const struct tp_globals *gl,
			     const struct tp_decision *dec, bool fresh,
			     double ref, const struct search_prior_buf *b,
			     float *value, bool *has_value)
{
	struct sctx *s = w->s;
	struct tp_prior_state ps;
	double sum = 0;
	enum tp_status st;

	*has_value = false;
	if (b->gains)
		for (uint32_t i = 0; i < n; i++)
			b->gains[i] = NAN;
	if (!pp || !pp->evaluate || n < 2) {
		for (uint32_t i = 0; i < n; i++)
			b->priors[i] = 1.0f / (float)n;
		return TP_OK;
	}
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
	ps.reference_time_s = ref > 0 && isfinite(ref) ? ref : 0;
	ps.gains = b->gains;
	st = pp->evaluate(pp->ctx, w->prior_scratch, &ps, b->priors, value,
			  has_value, &w->err);
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
	if (*has_value && !(*value >= -1 && *value <= 1))
		*has_value = false;
	if (b->gains)
		for (uint32_t i = 0; i < n; i++)
			if (!isfinite(b->gains[i]))
				b->gains[i] = NAN;
	return TP_OK;
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
