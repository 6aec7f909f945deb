/*
 * shares.c - whole samples per replica, proportional to weights and
 * capped by memory (tp_space_split_samples, actions.h): the batch split
 * of materialised plans, apart from the action space itself.
 */
#include "actions.h"

#include <math.h>
#include <stdlib.h>

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
		/* too many (the ones): take from the largest, never below 1 */
		while (given > samples) {
			uint32_t bi = 0;
			double bv = -INFINITY;
			for (uint32_t i = 0; i < n; i++)
				if (out[i] > 1 &&
				    (double)out[i] - want[i] > bv) {
					bv = (double)out[i] - want[i];
					bi = i;
				}
			out[bi]--;
			given--;
		}
		/* too few: largest remainders first (ties: lower index) */
		while (given < samples) {
			uint32_t bi = 0;
			double bv = -INFINITY;
			for (uint32_t i = 0; i < n; i++) {
				double r = want[i] - (double)out[i];
				if (use_cap && (double)out[i] + 1 >
						       (cap[i] > 1 ? floor(cap[i])
								   : 1))
					r -= 1e9;
				if (r > bv) {
					bv = r;
					bi = i;
				}
			}
			out[bi]++;
			given++;
		}
		free(want);
	}
	return true;
}
