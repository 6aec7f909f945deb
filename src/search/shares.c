/*
 * shares.c - whole samples per replica, proportional to weights and
 * capped by memory (tp_space_split_samples, actions.h): the batch split
 * of materialised plans, apart from the action space itself.
 */
#include "actions.h"

#include <math.h>
#include <stdlib.h>

/* The score of replica i in the largest-remainder passes below: to get
 * one more sample (up) its remainder want - out, 1e9 less when one more
 * passes its cap (cap != NULL); to give one back (!up) out - want, and
 * -INFINITY when it has only 1 (never below 1). */
static inline double pick_score(const double *want, const double *cap,
				const int64_t *out, uint32_t i, bool up)
{
	double r;

	if (!up)
		return out[i] > 1 ? (double)out[i] - want[i] : -INFINITY;
	r = want[i] - (double)out[i];
	if (cap && (double)out[i] + 1 > (cap[i] > 1 ? floor(cap[i]) : 1))
		r -= 1e9;
	return r;
}

/* The replica the next step gives a sample to (up) or takes one from:
 * the highest score, the lowest index among equal ones (0 when none is
 * above -INFINITY). */
static uint32_t pick_scan(uint32_t n, const double *want, const double *cap,
			  const int64_t *out, bool up)
{
	uint32_t bi = 0;
	double bv = -INFINITY;

	for (uint32_t i = 0; i < n; i++) {
		double r = pick_score(want, cap, out, i, up);
		if (r > bv) {
			bv = r;
			bi = i;
		}
	}
	return bi;
}

struct pick {
	double r;
	uint32_t i;
};

static inline bool pick_before(struct pick a, struct pick b)
{
	return a.r > b.r || (a.r == b.r && a.i < b.i);
}

static void pick_down(struct pick *h, uint32_t n, uint32_t k)
{
	for (;;) {
		uint32_t c = 2 * k + 1, best = k;
		struct pick t;
		if (c < n && pick_before(h[c], h[best]))
			best = c;
		if (c + 1 < n && pick_before(h[c + 1], h[best]))
			best = c + 1;
		if (best == k)
			return;
		t = h[k];
		h[k] = h[best];
		h[best] = t;
		k = best;
	}
}

#define HEAP_MIN_REPLICAS 64
#define HEAP_MIN_STEPS 16

/* SPLIT_HEAP: `steps` steps of pick_scan (each giving its pick a sample
 * when up, else taking one), the scores in a binary heap: only the
 * picked replica's score changes between steps, so the same picks in
 * the same order in O(n + steps log n) instead of O(n steps) - a
 * megatron-grid point of 1,024 replicas needed up to a million score
 * evaluations per split (bench_gnn's GPT-3 175B on 1,024 GPUs: 5-8% of
 * the search's CPU before its first sweep).  The heap order is the
 * scan's (higher score, then lower index) when every score is a number
 * above -INFINITY; otherwise (a NaN, a replica that cannot move) it
 * does nothing and returns false, and the caller scans.  false also on
 * allocation failure. */
static bool pick_heap(int64_t steps, uint32_t n, const double *want,
		      const double *cap, int64_t *out, bool up)
{
	struct pick *h;
	uint32_t m = n;

	/* a few replicas or steps: the scan is cheaper than a heap's
	   allocation (the tree materialises thousands of small splits) */
	if (n < HEAP_MIN_REPLICAS || steps < HEAP_MIN_STEPS)
		return false;
	h = malloc((size_t)n * sizeof(*h));
	if (!h)
		return false;
	n = 0;
	for (uint32_t i = 0; i < m; i++) {
		double r = pick_score(want, cap, out, i, up);
		if (r != r) {
			free(h);
			return false;
		}
		/* -INFINITY: a replica the scan never picks while another
		   can move, and that cannot move again (only its count
		   changes its score, and only picks change the count) */
		if (r > -INFINITY)
			h[n++] = (struct pick){r, i};
	}
	for (uint32_t k = n / 2; k-- > 0;)
		pick_down(h, n, k);
	for (int64_t s = 0; s < steps; s++) {
		uint32_t i;
		if (!n) {
			/* none can move: the scan's pick is index 0 */
			out[0] += up ? 1 : -1;
			continue;
		}
		i = h[0].i;
		out[i] += up ? 1 : -1;
		h[0].r = pick_score(want, cap, out, i, up);
		if (!(h[0].r > -INFINITY))
			/* a replica down to 1 leaves the heap */
			h[0] = h[--n];
		pick_down(h, n, 0);
	}
	free(h);
	return true;
}

/* `steps` steps of pick_scan, each giving its pick a sample (up) or
 * taking one: by pick_heap where it applies, else scanning. */
static void pick_steps(int64_t steps, uint32_t n, const double *want,
		       const double *cap, int64_t *out, bool up)
{
	if (pick_heap(steps, n, want, cap, out, up))
		return;
	for (; steps > 0; steps--)
		out[pick_scan(n, want, cap, out, up)] += up ? 1 : -1;
}

bool tp_space_split_samples(int64_t samples, uint32_t n, const double *weight,
			    const double *cap, int64_t *out)
{
	double wsum = 0;
	int64_t given = 0;
	bool even = true;

	if (n == 0 || samples < (int64_t)n)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		wsum += weight[i] > 0 ? weight[i] : 0;
		if (weight[i] != weight[0] || (cap && cap[i] < (double)samples))
			even = false;
	}
	if (even || !(wsum > 0)) {
		for (uint32_t i = 0; i < n; i++)
			out[i] = samples / n + ((int64_t)i < samples % n);
		return true;
	}
	/* proportional, at least one each, capped when the caps leave
	   room; then largest remainders */
	{
		double capsum = 0, *want = malloc(n * sizeof(double));
		bool use_cap = cap != NULL;
		if (!want)
			return false;
		if (use_cap) {
			for (uint32_t i = 0; i < n; i++)
				capsum += cap[i] > 1 ? floor(cap[i]) : 1;
			if (capsum < (double)samples)
				use_cap = false;
		}
		for (uint32_t i = 0; i < n; i++)
			want[i] = (double)samples *
				  (weight[i] > 0 ? weight[i] : 0) / wsum;
		if (use_cap) {
			/* water-filling: capped replicas keep their cap,
			   the others share the rest by weight */
			bool changed = true;
			uint8_t *fixed = calloc(n, 1);
			if (!fixed) {
				free(want);
				return false;
			}
			while (changed) {
				double left = (double)samples, w = 0;
				changed = false;
				for (uint32_t i = 0; i < n; i++)
					if (fixed[i])
						left -= want[i];
					else
						w += weight[i] > 0 ? weight[i]
								   : 0;
				for (uint32_t i = 0; i < n; i++) {
					double cp = cap[i] > 1 ? floor(cap[i])
							       : 1;
					if (fixed[i])
						continue;
					want[i] = w > 0 ? left * weight[i] / w
							: 0;
					if (want[i] > cp) {
						want[i] = cp;
						fixed[i] = 1;
						changed = true;
					}
				}
			}
			free(fixed);
		}
		for (uint32_t i = 0; i < n; i++) {
			int64_t k = (int64_t)floor(want[i]);
			if (k < 1)
				k = 1;
			out[i] = k;
			given += k;
		}
		/* too many (the ones): take from the largest, never below 1;
		   too few: largest remainders first (ties: lower index) */
		if (given > samples)
			pick_steps(given - samples, n, want, NULL, out, false);
		else if (given < samples)
			pick_steps(samples - given, n, want,
				   use_cap ? cap : NULL, out, true);
		free(want);
	}
	return true;
}
