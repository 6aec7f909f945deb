#include "rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void tp_rng_seed(struct tp_rng *rng, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		rng->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t tp_rng_next(struct tp_rng *rng)
{
	uint64_t *s = rng->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double tp_rng_uniform(struct tp_rng *rng)
{
	return (double)(tp_rng_next(rng) >> 11) * 0x1.0p-53;
}

uint64_t tp_rng_below(struct tp_rng *rng, uint64_t n)
{
	uint64_t limit = UINT64_MAX - UINT64_MAX % n, x;

	do
		x = tp_rng_next(rng);
	while (x >= limit);
	return x % n;
}

double tp_rng_normal(struct tp_rng *rng)
{
	double u1 = tp_rng_uniform(rng), u2 = tp_rng_uniform(rng);

	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void tp_rng_split(struct tp_rng *rng, struct tp_rng *child)
{
	tp_rng_seed(child, tp_rng_next(rng));
}
