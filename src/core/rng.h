/*
 * rng.h - explicit, seeded random numbers (xoshiro256** seeded by
 * splitmix64).  No global state: every user owns a struct tp_rng, seeded
 * from --seed; the same seed gives the same sequence on every platform.
 */
#ifndef TP_RNG_H
#define TP_RNG_H

#include <stdint.h>

struct tp_rng {
	uint64_t s[4];
};

void tp_rng_seed(struct tp_rng *rng, uint64_t seed);
uint64_t tp_rng_next(struct tp_rng *rng);
/* Uniform in [0, 1). */
double tp_rng_uniform(struct tp_rng *rng);
/* Uniform integer in [0, n); n > 0. Unbiased. */
uint64_t tp_rng_below(struct tp_rng *rng, uint64_t n);
/* Standard normal (Box-Muller). */
double tp_rng_normal(struct tp_rng *rng);
/* A new independent stream derived from rng (for per-thread RNGs). */
void tp_rng_split(struct tp_rng *rng, struct tp_rng *child);

#endif
