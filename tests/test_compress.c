/*
 * test_compress.c - max-flow / min-cut, pairwise energies, and the exact
 * sufficient-factor-broadcasting selection (src/search/mincut.c, sfb.c).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "search/mincut.h"

/* --- max-flow against brute force ------------------------------------- */

struct bf_edge {
	uint32_t u, v;
	int64_t cap;
};

/* Capacity of the cut whose source side is `side` (bit v set). */
static int64_t cut_value(const struct bf_edge *e, int ne, uint32_t side)
{
	int64_t sum = 0;

	for (int k = 0; k < ne; k++)
		if ((side >> e[k].u & 1) && !(side >> e[k].v & 1)) {
			if (e[k].cap >= TP_MINCUT_INF)
				return TP_MINCUT_INF;
			sum += e[k].cap;
		}
	return sum;
}

START_TEST(test_mincut_brute_force)
{
	struct tp_mincut f;
	struct tp_rng rng;
	struct tp_error err;
	int checked = 0;

	tp_mincut_init(&f);
	for (uint64_t seed = 1; seed <= 400; seed++) {
		struct bf_edge e[64];
		int ne = 0;
		uint32_t n, s, t, side_bits = 0;
		int64_t value, best = INT64_MAX;
		uint8_t side[16];
		double density;

		tp_rng_seed(&rng, seed);
		n = 2 + (uint32_t)tp_rng_below(&rng, 10);
		density = 0.2 + 0.6 * tp_rng_uniform(&rng);
		s = (uint32_t)tp_rng_below(&rng, n);
		t = (uint32_t)tp_rng_below(&rng, n - 1);
		if (t >= s)
			t++;
		tp_mincut_reset(&f, n);
		for (uint32_t u = 0; u < n; u++) {
			for (uint32_t v = 0; v < n; v++) {
				int64_t c;

				if (u == v || ne == 64 ||
				    tp_rng_uniform(&rng) > density)
					continue;
				c = (int64_t)tp_rng_below(&rng, 20);
				/* some infinite arcs, never out of s */
				if (u != s && tp_rng_below(&rng, 12) == 0)
					c = TP_MINCUT_INF;
				e[ne].u = u;
				e[ne].v = v;
				e[ne].cap = c;
				ne++;
				ck_assert_int_eq(
					tp_mincut_add_edge(&f, u, v, c, 0, &err),
					TP_OK);
			}
		}
		ck_assert_int_eq(tp_mincut_solve(&f, s, t, &value, side, &err),
				 TP_OK);
		/* brute force over every s-t partition */
		for (uint32_t mask = 0; mask < (1u << n); mask++) {
			int64_t c;

			if (!(mask >> s & 1) || (mask >> t & 1))
				continue;
			c = cut_value(e, ne, mask);
			if (c < best)
				best = c;
		}
		for (uint32_t v = 0; v < n; v++)
			if (side[v])
				side_bits |= 1u << v;
		ck_assert_msg(value == best, "seed %llu: flow %lld, min cut %lld",
			      (unsigned long long)seed, (long long)value,
			      (long long)best);
		ck_assert(side_bits >> s & 1);
		ck_assert(!(side_bits >> t & 1));
		ck_assert_msg(cut_value(e, ne, side_bits) == best,
			      "seed %llu: returned partition cuts %lld, not %lld",
			      (unsigned long long)seed,
			      (long long)cut_value(e, ne, side_bits),
			      (long long)best);
		checked++;
	}
	ck_assert_int_eq(checked, 400);
	tp_mincut_release(&f);
}
END_TEST

/* Edmonds-Karp on an adjacency matrix: an independent maximum flow. */
static int64_t edmonds_karp(int64_t *cap, uint32_t n, uint32_t s, uint32_t t)
{
	int64_t flow = 0;
	uint32_t *prev = malloc(n * sizeof(*prev)), *q = malloc(n * sizeof(*q));

	for (;;) {
		uint32_t qh = 0, qt = 0;
		int64_t aug = INT64_MAX;

		for (uint32_t v = 0; v < n; v++)
			prev[v] = UINT32_MAX;
		prev[s] = s;
		q[qt++] = s;
		while (qh < qt && prev[t] == UINT32_MAX) {
			uint32_t u = q[qh++];
			for (uint32_t v = 0; v < n; v++)
				if (prev[v] == UINT32_MAX &&
				    cap[(size_t)u * n + v] > 0) {
					prev[v] = u;
					q[qt++] = v;
				}
		}
		if (prev[t] == UINT32_MAX)
			break;
		for (uint32_t v = t; v != s; v = prev[v])
			if (cap[(size_t)prev[v] * n + v] < aug)
				aug = cap[(size_t)prev[v] * n + v];
		for (uint32_t v = t; v != s; v = prev[v]) {
			cap[(size_t)prev[v] * n + v] -= aug;
			cap[(size_t)v * n + prev[v]] += aug;
		}
		flow += aug;
	}
	free(prev);
	free(q);
	return flow;
}

/* Larger random graphs, too big to enumerate: the value equals an
 * independent Edmonds-Karp maximum flow and the returned partition's
 * capacity. */
START_TEST(test_mincut_partition_consistent)
{
	struct tp_mincut f;
	struct tp_rng rng;
	struct tp_error err;

	tp_mincut_init(&f);
	for (uint64_t seed = 1; seed <= 30; seed++) {
		uint32_t n = 200, m = 1500;
		struct bf_edge *e = calloc(m, sizeof(*e));
		uint8_t *side = calloc(n, 1);
		int64_t value, sum = 0;

		ck_assert_ptr_nonnull(e);
		tp_rng_seed(&rng, seed * 7919);
		tp_mincut_reset(&f, n);
		for (uint32_t k = 0; k < m; k++) {
			e[k].u = (uint32_t)tp_rng_below(&rng, n);
			e[k].v = (uint32_t)tp_rng_below(&rng, n);
			e[k].cap = 1 + (int64_t)tp_rng_below(&rng, 1000);
			ck_assert_int_eq(tp_mincut_add_edge(&f, e[k].u, e[k].v,
							    e[k].cap, 0, &err),
					 TP_OK);
		}
		ck_assert_int_eq(tp_mincut_solve(&f, 0, 1, &value, side, &err),
				 TP_OK);
		for (uint32_t k = 0; k < m; k++)
			if (e[k].u != e[k].v && side[e[k].u] && !side[e[k].v])
				sum += e[k].cap;
		ck_assert_int_eq(sum, value);
		ck_assert(side[0] && !side[1]);
		{
			int64_t *cap = calloc((size_t)n * n, sizeof(*cap));
			ck_assert_ptr_nonnull(cap);
			for (uint32_t k = 0; k < m; k++)
				if (e[k].u != e[k].v)
					cap[(size_t)e[k].u * n + e[k].v] +=
						e[k].cap;
			ck_assert_int_eq(edmonds_karp(cap, n, 0, 1), value);
			free(cap);
		}
		free(e);
		free(side);
	}
	tp_mincut_release(&f);
}
END_TEST

START_TEST(test_mincut_bad_input)
{
	struct tp_mincut f;
	struct tp_error err;
	int64_t value;

	tp_mincut_init(&f);
	tp_mincut_reset(&f, 3);
	ck_assert_int_eq(tp_mincut_add_edge(&f, 0, 3, 1, 0, &err), TP_EINPUT);
	ck_assert_int_eq(tp_mincut_add_edge(&f, 0, 1, -1, 0, &err), TP_EINPUT);
	ck_assert_int_eq(tp_mincut_solve(&f, 1, 1, &value, NULL, &err),
			 TP_EINPUT);
	ck_assert_int_eq(tp_mincut_add_edge(&f, 0, 1, TP_MINCUT_INF, 0, &err),
			 TP_OK);
	ck_assert_int_eq(tp_mincut_solve(&f, 0, 2, &value, NULL, &err),
			 TP_ELIMIT);
	/* no path: zero flow, source side is everything but what reaches t */
	tp_mincut_reset(&f, 3);
	ck_assert_int_eq(tp_mincut_add_edge(&f, 1, 2, 5, 0, &err), TP_OK);
	ck_assert_int_eq(tp_mincut_solve(&f, 0, 2, &value, NULL, &err), TP_OK);
	ck_assert_int_eq(value, 0);
	tp_mincut_release(&f);
}
END_TEST

/* --- energies against brute force --------------------------------------- */

START_TEST(test_energy_brute_force)
{
	struct tp_energy e;
	struct tp_rng rng;
	struct tp_error err;

	tp_energy_init(&e);
	for (uint64_t seed = 1; seed <= 300; seed++) {
		uint32_t n;
		uint8_t x[14], y[14];
		double value, best = INFINITY, total = 0;
		int terms;

		tp_rng_seed(&rng, seed);
		n = 1 + (uint32_t)tp_rng_below(&rng, 12);
		ck_assert_int_eq(tp_energy_reset(&e, n, &err), TP_OK);
		for (uint32_t v = 0; v < n; v++) {
			double a = tp_rng_normal(&rng), b = tp_rng_normal(&rng);
			tp_energy_add_unary(&e, v, a, b);
			total += fabs(a) + fabs(b);
		}
		terms = (int)tp_rng_below(&rng, 3 * n + 1);
		for (int k = 0; k < terms; k++) {
			uint32_t u = (uint32_t)tp_rng_below(&rng, n);
			uint32_t v = (uint32_t)tp_rng_below(&rng, n);
			int kind = (int)tp_rng_below(&rng, 4);

			if (u == v)
				continue;
			if (kind == 0) {
				ck_assert_int_eq(
					tp_energy_add_implies(&e, u, v, &err),
					TP_OK);
			} else if (kind == 1) {
				double c = tp_rng_uniform(&rng) * 2;
				ck_assert_int_eq(
					tp_energy_add_cut(&e, u, v, c, &err),
					TP_OK);
				total += c;
			} else {
				/* random submodular table: e01 + e10 >= e00 +
				 * e11 (sometimes with equality) */
				double a = tp_rng_normal(&rng);
				double b = tp_rng_normal(&rng);
				double c = tp_rng_normal(&rng);
				double d = kind == 2 ? b + c - a
						     : b + c - a -
							       tp_rng_uniform(&rng);
				ck_assert_int_eq(tp_energy_add_pairwise(
							 &e, u, v, a, b, c, d,
							 &err),
						 TP_OK);
				total += fabs(a) + fabs(b) + fabs(c) + fabs(d);
			}
		}
		ck_assert_int_eq(tp_energy_minimize(&e, x, &value, &err), TP_OK);
		ck_assert(isfinite(value));
		ck_assert(fabs(tp_energy_eval(&e, x) - value) < 1e-12);
		for (uint32_t mask = 0; mask < (1u << n); mask++) {
			double v;
			for (uint32_t i = 0; i < n; i++)
				y[i] = mask >> i & 1;
			v = tp_energy_eval(&e, y);
			if (v < best)
				best = v;
		}
		ck_assert_msg(value <= best + 1e-9 * (1 + total),
			      "seed %llu: cut energy %.17g, brute force %.17g",
			      (unsigned long long)seed, value, best);
	}
	tp_energy_release(&e);
}
END_TEST

START_TEST(test_energy_rejects_supermodular)
{
	struct tp_energy e;
	struct tp_error err;
	uint8_t x[3];
	double v;

	tp_energy_init(&e);
	ck_assert_int_eq(tp_energy_reset(&e, 2, &err), TP_OK);
	/* E = x0 x1 rewarded: -1 at (1,1) is submodular, +1 is not */
	ck_assert_int_eq(tp_energy_add_pairwise(&e, 0, 1, 0, 0, 0, 1, &err),
			 TP_EINPUT);
	ck_assert_int_eq(tp_energy_add_pairwise(&e, 0, 1, 0, 0, 0, -1, &err),
			 TP_OK);
	tp_energy_add_unary(&e, 0, 0, 0.6);
	tp_energy_add_unary(&e, 1, 0, 0.6);
	ck_assert_int_eq(tp_energy_minimize(&e, x, &v, &err), TP_OK);
	/* 0.6 + 0.6 - 1 = 0.2 > 0: stay at zero */
	ck_assert_int_eq(x[0], 0);
	ck_assert_int_eq(x[1], 0);
	ck_assert(fabs(v) < 1e-15);
	tp_energy_add_unary(&e, 1, 0.3, 0);
	ck_assert_int_eq(tp_energy_minimize(&e, x, &v, &err), TP_OK);
	ck_assert_int_eq(x[0], 1);
	ck_assert_int_eq(x[1], 1);
	/* 0.6 + 0.6 - 1 = 0.2 beats 0.3 for (0, 0) */
	ck_assert(fabs(v - 0.2) < 1e-12);
	/* ties resolve to 0 (the smallest minimiser) */
	ck_assert_int_eq(tp_energy_reset(&e, 3, &err), TP_OK);
	tp_energy_add_unary(&e, 2, 1, 1);
	ck_assert_int_eq(tp_energy_minimize(&e, x, &v, &err), TP_OK);
	ck_assert_int_eq(x[0] + x[1] + x[2], 0);
	tp_energy_release(&e);
}
END_TEST

Suite *suite_compress(void)
{
	Suite *s = suite_create("compress");
	TCase *tc = tcase_create("mincut");

	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_mincut_brute_force);
	tcase_add_test(tc, test_mincut_partition_consistent);
	tcase_add_test(tc, test_mincut_bad_input);
	tcase_add_test(tc, test_energy_brute_force);
	tcase_add_test(tc, test_energy_rejects_supermodular);
	suite_add_tcase(s, tc);
	return s;
}
