/*
 * test_compress.c - max-flow / min-cut, pairwise energies, and the exact
 * sufficient-factor-broadcasting selection (src/compress/mincut.c, sfb.c).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cluster.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/rng.h"
#include "core/report.h"
#include "io/build.h"
#include "io/io.h"
#include "compress/mincut.h"
#include "search/search.h"
#include "compress/sfb.h"
#include "search/joint.h"
#include "sim/sim.h"
#include "util.h"

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

/* --- SFB: fixtures ------------------------------------------------------- */

/* nodes x gpus devices of type A (or B for odd nodes when hetero), a
 * fabric of 1e11 B/s and 1 us per node, one NIC of nic_bw, latency lat. */
static void make_cluster(struct tp_cluster *c, uint32_t nodes, uint32_t gpus,
			 double nic_bw, double lat, bool hetero)
{
	struct tp_device_type t;
	struct tp_error err;
	uint32_t ta, tb, idx;

	tp_cluster_init(c);
	memset(&t, 0, sizeof(t));
	t.name = "A";
	t.peak_flops[TP_DTYPE_FP32] = 1.5e13;
	t.memory_bytes = 32e9;
	t.memory_bw_Bps = 9e11;
	t.gemm_efficiency = 0.8;
	t.gemm_half_flop = 1e9;
	t.memory_efficiency = 0.8;
	t.kernel_overhead_s = 5e-6;
	ck_assert_int_eq(tp_cluster_add_type(c, &t, &ta, &err), TP_OK);
	t.name = "B";
	t.peak_flops[TP_DTYPE_FP32] = 1.1e13;
	t.memory_bw_Bps = 4.8e11;
	ck_assert_int_eq(tp_cluster_add_type(c, &t, &tb, &err), TP_OK);
	for (uint32_t n = 0; n < nodes; n++) {
		char name[16];
		snprintf(name, sizeof(name), "n%u", n);
		ck_assert_int_eq(
		    tp_cluster_build_node(c,
					  &(struct tp_node_build){
					      name, hetero && (n & 1) ? tb : ta,
					      gpus, TP_LINK_PCIE, 1e11, 1e-6, 1,
					      nic_bw, lat, false},
					  &idx, &err),
		    TP_OK);
	}
	ck_assert_int_eq(tp_cluster_connect_star(c, 1, NULL, &err), TP_OK);
	ck_assert_int_eq(tp_cluster_finalize(c, &err), TP_OK);
}

static uint32_t add_op(struct tp_model *m, const char *name,
		       enum tp_op_kind kind, double params, double flop,
		       double out)
{
	struct tp_op op = tp_op_default();
	struct tp_error err;
	uint32_t i;

	op.name = name;
	op.kind = kind;
	op.param_bytes = params;
	op.flop = flop;
	op.backward_flop = 2 * flop;
	op.out_bytes = out;
	op.mem_bytes = out * 2;
	ck_assert_int_eq(tp_model_add_op(m, &op, &i, &err), TP_OK);
	return i;
}

static void edge(struct tp_model *m, uint32_t a, uint32_t b)
{
	struct tp_error err;

	ck_assert_int_eq(tp_model_add_edge(m, a, b, m->ops.v[a].out_bytes,
					   &err),
			 TP_OK);
}

/* input -> fc1 -> relu -> fc2 -> loss, fp32; fc1 has p1 bytes of weights
 * and reads a0 bytes per sample. */
static void mlp(struct tp_model *m, double p1, double a0, int64_t batch)
{
	struct tp_error err;
	uint32_t in, fc1, relu, fc2, loss;

	tp_model_init(m);
	m->global_batch = batch;
	m->dtype = TP_DTYPE_FP32;
	in = add_op(m, "in", TP_OP_INPUT, 0, 0, a0);
	fc1 = add_op(m, "fc1", TP_OP_MATMUL, p1, 2 * p1 / 4, 16384);
	relu = add_op(m, "relu", TP_OP_ELEMENTWISE, 0, 4096, 16384);
	fc2 = add_op(m, "fc2", TP_OP_MATMUL, 16e6, 8e6, 4000);
	loss = add_op(m, "loss", TP_OP_LOSS, 0, 1000, 4);
	edge(m, in, fc1);
	edge(m, fc1, relu);
	edge(m, relu, fc2);
	edge(m, fc2, loss);
	ck_assert_int_eq(tp_model_finalize(m, &err), TP_OK);
}

/* One group with every op on every device, data parallel. */
static void dp_plan(struct tp_plan *p, const struct tp_model *m,
		    const struct tp_cluster *c, enum tp_sync sync)
{
	uint32_t ops[64], devs[64], n = (uint32_t)c->devices.n, idx;
	struct tp_error err;

	tp_plan_init(p);
	p->global_batch = m->global_batch;
	for (uint32_t i = 0; i < m->ops.n; i++)
		ops[i] = i;
	for (uint32_t d = 0; d < n; d++)
		devs[d] = d;
	ck_assert_int_eq(tp_plan_add_group_degrees(
			     p, ops, (uint32_t)m->ops.n, devs, n,
			     &(struct tp_plan_degrees){n, 1, 1}, NULL, &err),
			 TP_OK);
	idx = (uint32_t)p->groups.n - 1;
	p->groups.v[idx].sync = sync;
}

/* --- SFB: the cost figures ------------------------------------------------ */

START_TEST(test_sfb_ring_and_hierarchical_costs)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_sfb *sfb;
	struct tp_sfb_scratch *s;
	struct tp_sfb_costs k;
	struct tp_error err;
	const double B = 1.25e9, L = 2e-5, P = 400e6;
	double S, want, g = 2, K = 2;

	mlp(&m, P, 1e5, 64);
	/* 2 nodes x 1 GPU: ring over the network */
	make_cluster(&c, 2, 1, B, L, false);
	dp_plan(&p, &m, &c, TP_SYNC_RING);
	sfb = tp_sfb_new(&m, &c, NULL, &err);
	ck_assert_ptr_nonnull(sfb);
	s = tp_sfb_scratch_new(sfb);
	tp_sfb_costs_init(&k);
	ck_assert_int_eq(tp_sfb_group_costs(sfb, &p, 0, TP_LOSSY_NONE, 0, s, &k,
					    &err),
			 TP_OK);
	ck_assert(k.eligible);
	ck_assert_uint_eq(k.cands.n, 2);
	ck_assert_uint_eq(k.cands.v[0].op, 1);
	/* ring all-reduce 2(n-1)(alpha + S/(n beta)) */
	S = P;
	want = 2 * 1 * (L + S / (2 * B));
	ck_assert_msg(fabs(k.cands.v[0].sync_s - want) < 1e-12 * want,
		      "sync %.9g want %.9g", k.cands.v[0].sync_s, want);
	ck_assert(fabs(k.cands.v[0].sync_bytes - 2 * S) < 1e-6);
	/* all-gather of fc1's output gradient: (n-1)(alpha + S/(n beta)) */
	S = 16384.0 * 64;
	want = 1 * (L + S / (2 * B));
	ck_assert(fabs(k.cands.v[0].grad_gather_s - want) < 1e-12 * want);
	/* activations: the input (read by fc1) and relu's (read by fc2) */
	ck_assert_uint_eq(k.tensors.n, 2);
	ck_assert_uint_eq(k.tensors.v[0].producer, 0);
	ck_assert_uint_eq(k.tensors.v[0].producer_cand, TP_NONE);
	ck_assert(k.tensors.v[0].sample_bytes == 1e5);
	ck_assert(k.cands.v[0].wgrad_s > 0);
	tp_sfb_scratch_free(s);
	tp_sfb_free(sfb);
	tp_plan_release(&p);
	tp_cluster_release(&c);

	/* 2 nodes x 2 GPUs, hierarchical: intra ring on the fabric, two
	 * inter-node rings sharing each node's network link */
	make_cluster(&c, 2, 2, B, L, false);
	dp_plan(&p, &m, &c, TP_SYNC_HIERARCHICAL);
	sfb = tp_sfb_new(&m, &c, NULL, &err);
	s = tp_sfb_scratch_new(sfb);
	ck_assert_int_eq(tp_sfb_group_costs(sfb, &p, 0, TP_LOSSY_NONE, 0, s, &k,
					    &err),
			 TP_OK);
	S = P;
	want = 2 * (g - 1) * (1e-6 + S / (g * 1e11)) +
	       2 * (K - 1) * (L + S / (g * K * (B / 2)));
	ck_assert_msg(fabs(k.cands.v[0].sync_s - want) < 1e-12 * want,
		      "hier sync %.9g want %.9g", k.cands.v[0].sync_s, want);
	/* the same group with a ring: the slowest hop is a network hop
	 * whose link carries one flow per direction */
	p.groups.v[0].sync = TP_SYNC_RING;
	ck_assert_int_eq(tp_sfb_group_costs(sfb, &p, 0, TP_LOSSY_NONE, 0, s, &k,
					    &err),
			 TP_OK);
	want = 2 * 3 * (L + S / (4 * B));
	ck_assert_msg(fabs(k.cands.v[0].sync_s - want) < 1e-12 * want,
		      "ring sync %.9g want %.9g", k.cands.v[0].sync_s, want);
	/* lossy formats */
	ck_assert_int_eq(tp_sfb_group_costs(sfb, &p, 0, TP_LOSSY_FP16, 0, s, &k,
					    &err),
			 TP_OK);
	want = 2 * 3 * (L + S / 2 / (4 * B));
	ck_assert(fabs(k.cands.v[0].sync_s - want) < 1e-12 * want);
	ck_assert_int_eq(tp_sfb_group_costs(sfb, &p, 0, TP_LOSSY_POWERSGD, 4, s,
					    &k, &err),
			 TP_OK);
	/* fc1: 100M parameters as 4096 x 24414: (m + n) r numbers */
	ck_assert(k.cands.v[0].sync_bytes < 2 * 3 * (4096 + 24415) * 4 * 4);
	ck_assert(k.cands.v[0].sync_s < want);
	tp_sfb_costs_release(&k);
	tp_sfb_scratch_free(s);
	tp_sfb_free(sfb);
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

START_TEST(test_sfb_selects_when_it_pays)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_sfb *sfb;
	struct tp_sfb_scratch *s;
	struct tp_sfb_stats st;
	struct tp_error err;

	/* 100M-parameter layer, small batch, 10 GbE: both matmuls pay */
	mlp(&m, 400e6, 1e5, 64);
	make_cluster(&c, 4, 1, 1.25e9, 2e-5, false);
	dp_plan(&p, &m, &c, TP_SYNC_RING);
	sfb = tp_sfb_new(&m, &c, NULL, &err);
	s = tp_sfb_scratch_new(sfb);
	ck_assert_int_eq(tp_sfb_select(sfb, &p, s, &st, &err), TP_OK);
	ck_assert_uint_eq(p.groups.v[0].n_sfb, 2);
	ck_assert_uint_eq(tp_plan_group_sfb(&p, 0)[0], 1);
	ck_assert_uint_eq(tp_plan_group_sfb(&p, 0)[1], 3);
	ck_assert(p.groups.v[0].sfb_saved_bytes > 1e9);
	ck_assert_int_eq(p.groups.v[0].lossy, TP_LOSSY_NONE);
	ck_assert_msg(st.saved_s > 0.45 && st.saved_s < st.sync_s, "saved %g sync %g", st.saved_s, st.sync_s);
	ck_assert_uint_eq(st.ops_selected, 2);
	ck_assert_int_eq(tp_plan_validate(&p, &m, &c, &err), TP_OK);
	/* off: nothing */
	p.compression = TP_COMPRESSION_OFF;
	ck_assert_int_eq(tp_sfb_select(sfb, &p, s, &st, &err), TP_OK);
	ck_assert_uint_eq(p.groups.v[0].n_sfb, 0);
	ck_assert_uint_eq(p.sfb.n, 0);
	ck_assert(p.groups.v[0].sfb_saved_bytes == 0);
	tp_sfb_scratch_free(s);
	tp_sfb_free(sfb);
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);

	/* small layer, large batch, fast network: nothing pays */
	mlp(&m, 1e6, 1e5, 4096);
	make_cluster(&c, 4, 1, 1e11, 2e-6, false);
	dp_plan(&p, &m, &c, TP_SYNC_RING);
	sfb = tp_sfb_new(&m, &c, NULL, &err);
	s = tp_sfb_scratch_new(sfb);
	ck_assert_int_eq(tp_sfb_select(sfb, &p, s, &st, &err), TP_OK);
	ck_assert_uint_eq(p.groups.v[0].n_sfb, 0);
	ck_assert(st.saved_s == 0);
	ck_assert_uint_eq(st.groups_eligible, 1);
	tp_sfb_scratch_free(s);
	tp_sfb_free(sfb);
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

START_TEST(test_sfb_eligibility)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_sfb *sfb;
	struct tp_sfb_scratch *s;
	struct tp_sfb_costs k;
	struct tp_error err;
	uint32_t ops[5] = {0, 1, 2, 3, 4}, devs[2] = {0, 1};

	mlp(&m, 400e6, 1e5, 64);
	make_cluster(&c, 2, 1, 1.25e9, 2e-5, false);
	sfb = tp_sfb_new(&m, &c, NULL, &err);
	s = tp_sfb_scratch_new(sfb);
	tp_sfb_costs_init(&k);
	for (int v = 0; v < 4; v++) {
		tp_plan_init(&p);
		p.global_batch = 64;
		if (v == 0) /* tp = 2 */
			ck_assert_int_eq(tp_plan_add_group_degrees(
					     &p, ops, 5, devs, 2,
					     &(struct tp_plan_degrees){1, 1, 2},
					     NULL, &err),
					 TP_OK);
		else if (v == 1) /* one device */
			ck_assert_int_eq(tp_plan_add_group_degrees(
					     &p, ops, 5, devs, 1,
					     &(struct tp_plan_degrees){1, 1, 1},
					     NULL, &err),
					 TP_OK);
		else
			ck_assert_int_eq(tp_plan_add_group_degrees(
					     &p, ops, 5, devs, 2,
					     &(struct tp_plan_degrees){2, 1, 1},
					     NULL, &err),
					 TP_OK);
		if (v == 2)
			p.groups.v[0].sync = TP_SYNC_PS;
		if (v == 3)
			p.zero = 1;
		ck_assert_int_eq(tp_sfb_group_costs(sfb, &p, 0, TP_LOSSY_NONE,
						    0, s, &k, &err),
				 TP_OK);
		ck_assert(!k.eligible);
		ck_assert(k.why[0] != 0);
		ck_assert_int_eq(tp_sfb_select(sfb, &p, s, NULL, &err), TP_OK);
		ck_assert_uint_eq(p.groups.v[0].n_sfb, 0);
		tp_plan_release(&p);
	}
	tp_sfb_costs_release(&k);
	tp_sfb_scratch_free(s);
	tp_sfb_free(sfb);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* Three projections read one normalised input: one gather serves all. */
START_TEST(test_sfb_shared_gather)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_sfb *sfb;
	struct tp_sfb_scratch *s;
	struct tp_sfb_costs k;
	struct tp_error err;
	uint32_t in, ln, q, kk, v, att, out, loss;
	uint8_t x1[4] = {1, 0, 0, 0}, x3[4] = {1, 1, 1, 0};
	double d;

	tp_model_init(&m);
	m.global_batch = 16;
	in = add_op(&m, "in", TP_OP_INPUT, 0, 0, 8192);
	ln = add_op(&m, "ln", TP_OP_NORM, 0, 1e4, 8192);
	q = add_op(&m, "q", TP_OP_MATMUL, 4e6, 2e6, 8192);
	kk = add_op(&m, "k", TP_OP_MATMUL, 4e6, 2e6, 8192);
	v = add_op(&m, "v", TP_OP_MATMUL, 4e6, 2e6, 8192);
	att = add_op(&m, "att", TP_OP_ATTENTION, 0, 1e6, 8192);
	out = add_op(&m, "out", TP_OP_MATMUL, 4e6, 2e6, 8192);
	loss = add_op(&m, "loss", TP_OP_LOSS, 0, 10, 4);
	edge(&m, in, ln);
	edge(&m, ln, q);
	edge(&m, ln, kk);
	edge(&m, ln, v);
	edge(&m, q, att);
	edge(&m, kk, att);
	edge(&m, v, att);
	edge(&m, att, out);
	edge(&m, out, loss);
	ck_assert_int_eq(tp_model_finalize(&m, &err), TP_OK);
	make_cluster(&c, 2, 1, 1.25e9, 2e-5, false);
	dp_plan(&p, &m, &c, TP_SYNC_RING);
	sfb = tp_sfb_new(&m, &c, NULL, &err);
	s = tp_sfb_scratch_new(sfb);
	tp_sfb_costs_init(&k);
	ck_assert_int_eq(tp_sfb_group_costs(sfb, &p, 0, TP_LOSSY_NONE, 0, s, &k,
					    &err),
			 TP_OK);
	ck_assert_uint_eq(k.cands.n, 4);
	ck_assert_uint_eq(k.tensors.n, 2);
	ck_assert_uint_eq(k.tensors.v[0].producer, ln);
	ck_assert_uint_eq(k.tensors.v[0].n, 3);
	ck_assert_uint_eq(k.tensors.v[1].producer, att);
	/* adding k and v adds only their own unary terms */
	d = tp_sfb_objective(&k, x3) - tp_sfb_objective(&k, x1);
	ck_assert(fabs(d - (k.cands.v[1].wgrad_s + k.cands.v[1].grad_gather_s -
			    k.cands.v[1].sync_s + k.cands.v[2].wgrad_s +
			    k.cands.v[2].grad_gather_s - k.cands.v[2].sync_s)) <
		  1e-12);
	tp_sfb_costs_release(&k);
	tp_sfb_scratch_free(s);
	tp_sfb_free(sfb);
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* fc1 -> fc2 directly: fc1, selected, recomputes its cheap forward over
 * the whole batch rather than gathering its large output. */
START_TEST(test_sfb_forward_recompute_and_actions)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_sfb *sfb;
	struct tp_sfb_scratch *s;
	struct tp_sfb_actions a;
	struct tp_error err;
	uint32_t in, fc1, fc2, loss;
	bool seen_fc1 = false, seen_in = false;

	tp_model_init(&m);
	m.global_batch = 32;
	in = add_op(&m, "in", TP_OP_INPUT, 0, 0, 4096);
	fc1 = add_op(&m, "fc1", TP_OP_MATMUL, 200e6, 1e8, 200000);
	fc2 = add_op(&m, "fc2", TP_OP_MATMUL, 200e6, 1e8, 4096);
	loss = add_op(&m, "loss", TP_OP_LOSS, 0, 10, 4);
	edge(&m, in, fc1);
	edge(&m, fc1, fc2);
	edge(&m, fc2, loss);
	ck_assert_int_eq(tp_model_finalize(&m, &err), TP_OK);
	make_cluster(&c, 2, 1, 1.25e9, 2e-5, false);
	dp_plan(&p, &m, &c, TP_SYNC_RING);
	sfb = tp_sfb_new(&m, &c, NULL, &err);
	s = tp_sfb_scratch_new(sfb);
	ck_assert_int_eq(tp_sfb_select(sfb, &p, s, NULL, &err), TP_OK);
	ck_assert_uint_eq(p.groups.v[0].n_sfb, 2);
	tp_sfb_actions_init(&a);
	ck_assert_int_eq(tp_sfb_group_actions(sfb, &p, 0, s, &a, &err), TP_OK);
	for (size_t i = 0; i < a.v.n; i++) {
		const struct tp_sfb_action *x = &a.v.v[i];
		if (x->op == fc1) {
			seen_fc1 = true;
			ck_assert(x->sfb && x->forward_full);
			ck_assert(x->gather_act_bytes == 0);
			ck_assert(x->gather_grad_bytes == 200000);
			ck_assert(x->sync_bytes == 0);
		} else if (x->op == in) {
			seen_in = true;
			ck_assert(x->gather_act_bytes == 4096);
			ck_assert(!x->sfb && !x->forward_full);
		} else if (x->op == fc2) {
			ck_assert(x->sfb && !x->forward_full);
		}
	}
	ck_assert(seen_fc1 && seen_in);
	{
		struct tp_sfb_effect fx;
		ck_assert_int_eq(tp_sfb_group_effect(sfb, &p, 0, s, &a, &fx,
						     &err),
				 TP_OK);
		ck_assert(fx.active);
		ck_assert(fx.sync_bytes == 0);
		ck_assert(fx.plain_sync_bytes == 400e6);
		/* the input, and both output gradients */
		ck_assert(fx.gather_bytes_per_sample == 4096 + 200000 + 4096);
		/* both weight gradients and fc1's forward */
		ck_assert(fx.extra_flop_per_sample == 1e8 + 1e8 + 1e8);
		ck_assert(fx.temp_bytes_per_sample == 200000 + 4096);
	}
	/* a hand-edited plan selecting a parameter-free op is rejected */
	p.sfb.v[p.groups.v[0].sfb_first] = loss;
	ck_assert_int_eq(tp_sfb_group_actions(sfb, &p, 0, s, &a, &err),
			 TP_EINPUT);
	ck_assert_ptr_nonnull(strstr(err.path, "compression.sfb_ops[0]"));
	/* without compression: plain entries with the gradient size */
	tp_sfb_clear(&p);
	ck_assert_int_eq(tp_sfb_group_actions(sfb, &p, 0, s, &a, &err), TP_OK);
	ck_assert_uint_eq(a.v.n, 2);
	ck_assert(a.v.v[0].sync_bytes == 200e6 && !a.v.v[0].sfb);
	tp_sfb_actions_release(&a);
	tp_sfb_scratch_free(s);
	tp_sfb_free(sfb);
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

START_TEST(test_sfb_lossy_opt_in)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_sfb *sfb;
	struct tp_sfb_scratch *s;
	struct tp_sfb_stats st;
	struct tp_error err;

	/* big batch: SFB does not pay, but lossy formats would */
	mlp(&m, 400e6, 1e6, 8192);
	make_cluster(&c, 4, 1, 1.25e9, 2e-5, false);
	dp_plan(&p, &m, &c, TP_SYNC_RING);
	sfb = tp_sfb_new(&m, &c, NULL, &err);
	s = tp_sfb_scratch_new(sfb);
	ck_assert_int_eq(p.compression, TP_COMPRESSION_LOSSLESS);
	ck_assert_int_eq(tp_sfb_select(sfb, &p, s, &st, &err), TP_OK);
	ck_assert_int_eq(p.groups.v[0].lossy, TP_LOSSY_NONE);
	ck_assert_uint_eq(st.groups_lossy, 0);
	p.compression = TP_COMPRESSION_LOSSY;
	ck_assert_int_eq(tp_sfb_select(sfb, &p, s, &st, &err), TP_OK);
	ck_assert_int_ne(p.groups.v[0].lossy, TP_LOSSY_NONE);
	ck_assert_uint_eq(st.groups_lossy, 1);
	ck_assert(st.saved_s > 0);
	if (p.groups.v[0].lossy == TP_LOSSY_POWERSGD)
		ck_assert_uint_eq(p.groups.v[0].powersgd_rank, 4);
	tp_sfb_scratch_free(s);
	tp_sfb_free(sfb);
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* --- SFB: the cut against enumeration of every selection ----------------- */

static void random_case(struct tp_rng *rng, struct tp_model *m,
			struct tp_cluster *c, struct tp_plan *p)
{
	static const enum tp_op_kind kinds[] = {
		TP_OP_MATMUL, TP_OP_CONV, TP_OP_ELEMENTWISE, TP_OP_NORM,
		TP_OP_EMBEDDING, TP_OP_MATMUL, TP_OP_ATTENTION};
	struct tp_error err;
	uint32_t n = 3 + (uint32_t)tp_rng_below(rng, 10), nd, cut;
	uint32_t ops[16], devs[16];
	char name[16];

	tp_model_init(m);
	m->global_batch = 8 << tp_rng_below(rng, 5);
	m->dtype = tp_rng_below(rng, 2) ? TP_DTYPE_FP32 : TP_DTYPE_BF16;
	for (uint32_t i = 0; i < n; i++) {
		enum tp_op_kind k = i == 0 ? TP_OP_INPUT
					   : kinds[tp_rng_below(rng, 7)];
		double params = tp_rng_below(rng, 3) == 0
					? 0
					: exp(tp_rng_uniform(rng) * 20);
		snprintf(name, sizeof(name), "op%u", i);
		add_op(m, name, k, i == 0 ? 0 : params,
		       exp(tp_rng_uniform(rng) * 22),
		       exp(2 + tp_rng_uniform(rng) * 14));
	}
	for (uint32_t i = 1; i < n; i++) {
		uint32_t a = (uint32_t)tp_rng_below(rng, i);
		edge(m, a, i);
		if (tp_rng_below(rng, 3) == 0) {
			uint32_t b = (uint32_t)tp_rng_below(rng, i);
			edge(m, b, i); /* maybe parallel to a -> i */
		}
	}
	ck_assert_int_eq(tp_model_finalize(m, &err), TP_OK);
	make_cluster(c, 1 + (uint32_t)tp_rng_below(rng, 3),
		     1 + (uint32_t)tp_rng_below(rng, 2),
		     exp(20 + tp_rng_uniform(rng) * 5), 1e-5, true);
	tp_plan_init(p);
	p->global_batch = m->global_batch;
	p->micro_batches = 1 + (uint32_t)tp_rng_below(rng, 2);
	nd = (uint32_t)c->devices.n;
	cut = 1 + (uint32_t)tp_rng_below(rng, n - 1);
	for (uint32_t i = 0; i < n; i++)
		ops[i] = i;
	for (uint32_t d = 0; d < nd; d++)
		devs[d] = d;
	for (int gi = 0; gi < 2; gi++) {
		uint32_t first = gi ? cut : 0, cnt = gi ? n - cut : cut;
		double sh[16], sum = 0;
		uint32_t idx;

		for (uint32_t r = 0; r < nd; r++)
			sum += sh[r] = 0.5 + tp_rng_uniform(rng);
		for (uint32_t r = 0; r < nd; r++)
			sh[r] /= sum;
		ck_assert_int_eq(tp_plan_add_group_degrees(
				     p, ops + first, cnt, devs, nd,
				     &(struct tp_plan_degrees){nd, 1, 1}, sh,
				     &err),
				 TP_OK);
		idx = (uint32_t)p->groups.n - 1;
		p->groups.v[idx].sync = tp_rng_below(rng, 2)
						? TP_SYNC_RING
						: TP_SYNC_HIERARCHICAL;
	}
}

START_TEST(test_sfb_brute_force)
{
	struct tp_rng rng;
	struct tp_error err;
	int compared = 0, nonempty = 0;

	for (uint64_t seed = 1; seed <= 250; seed++) {
		struct tp_model m;
		struct tp_cluster c;
		struct tp_plan p;
		struct tp_sfb *sfb;
		struct tp_sfb_scratch *s;
		struct tp_sfb_costs k;

		tp_rng_seed(&rng, seed);
		random_case(&rng, &m, &c, &p);
		sfb = tp_sfb_new(&m, &c, NULL, &err);
		ck_assert_ptr_nonnull(sfb);
		s = tp_sfb_scratch_new(sfb);
		ck_assert_ptr_nonnull(s);
		tp_sfb_costs_init(&k);
		for (uint32_t g = 0; g < p.groups.n; g++) {
			enum tp_lossy f = (enum tp_lossy)tp_rng_below(&rng, 3);
			uint8_t x[16], y[16];
			double value, best = INFINITY, scale = 0;
			uint32_t nc;

			ck_assert_int_eq(tp_sfb_group_costs(sfb, &p, g, f, 2, s,
							    &k, &err),
					 TP_OK);
			nc = (uint32_t)k.cands.n;
			if (!k.eligible || nc > 14)
				continue;
			ck_assert_int_eq(tp_sfb_solve(&k, s, x, &value, &err),
					 TP_OK);
			ck_assert(fabs(tp_sfb_objective(&k, x) - value) <=
				  1e-12 * (1 + fabs(value)));
			for (uint32_t i = 0; i < nc; i++)
				scale += k.cands.v[i].sync_s +
					 k.cands.v[i].wgrad_s +
					 k.cands.v[i].grad_gather_s;
			for (size_t t = 0; t < k.tensors.n; t++)
				scale += k.tensors.v[t].gather_s;
			for (uint32_t mask = 0; mask < (1u << nc); mask++) {
				double v;
				for (uint32_t i = 0; i < nc; i++)
					y[i] = mask >> i & 1;
				v = tp_sfb_objective(&k, y);
				if (v < best)
					best = v;
			}
			ck_assert_msg(value <= best + 1e-12 * (1 + scale),
				      "seed %llu group %u: cut %.17g, brute "
				      "force %.17g",
				      (unsigned long long)seed, g, value, best);
			ck_assert(value <= 0);
			compared++;
			for (uint32_t i = 0; i < nc; i++)
				if (x[i]) {
					nonempty++;
					break;
				}
		}
		tp_sfb_costs_release(&k);
		tp_sfb_scratch_free(s);
		tp_sfb_free(sfb);
		tp_plan_release(&p);
		tp_cluster_release(&c);
		tp_model_release(&m);
	}
	/* the instances exercise both outcomes */
	ck_assert_int_gt(compared, 150);
	ck_assert_int_gt(nonempty, 20);
	ck_assert_int_lt(nonempty, compared);
}
END_TEST

/* --- the joint evaluator, with a toy inner evaluator ---------------------- */

/* Iteration time 1 s, minus (or plus, when sign > 0) 0.1 s per op using
 * SFB; counts its calls. */
struct toy {
	double sign;
	int calls;
};

static enum tp_status toy_run(void *ctx, void *scratch,
			      const struct tp_plan *plan,
			      struct tp_report *report, struct tp_error *err)
{
	struct toy *t = ctx;

	(void)scratch;
	(void)err;
	t->calls++;
	report->feasible = true;
	report->iteration_time_s = 1 + t->sign * 0.1 * (double)plan->sfb.n;
	return TP_OK;
}

static enum tp_status toy_call(void *ctx, struct tp_eval_call *q,
			       struct tp_error *err)
{
	if (q->ask != TP_EVAL_RUN && q->ask != TP_EVAL_FINALIZE)
		return TP_OK; /* no scratch, no simulator */
	return toy_run(ctx, q->scratch, q->plan, q->report, err);
}

/* RUN of ev on p into r; q keeps the answer score. */
static enum tp_status ev_run(const struct tp_evaluator *ev, void *scr,
			     const struct tp_plan *p, struct tp_report *r,
			     struct tp_eval_call *q, struct tp_error *err)
{
	memset(q, 0, sizeof(*q));
	q->ask = TP_EVAL_RUN;
	q->scratch = scr;
	q->plan = p;
	q->report = r;
	return ev->call(ev->ctx, q, err);
}

START_TEST(test_sfb_joint_evaluator)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_sfb *sfb;
	struct tp_sfb_joint j;
	struct tp_evaluator inner, ev;
	struct toy toy = {-1, 0};
	struct tp_report r;
	struct tp_error err;
	struct tp_eval_call q;
	void *scr;

	mlp(&m, 400e6, 1e5, 64);
	make_cluster(&c, 4, 1, 1.25e9, 2e-5, false);
	dp_plan(&p, &m, &c, TP_SYNC_RING);
	sfb = tp_sfb_new(&m, &c, NULL, &err);
	memset(&inner, 0, sizeof(inner));
	inner.ctx = &toy;
	inner.call = toy_call;
	tp_sfb_joint_evaluator(&j, sfb, &inner, &ev);
	ck_assert_int_eq(tp_evaluator_scratch_new(&ev, &scr, &err), TP_OK);
	ck_assert_ptr_nonnull(scr);
	tp_report_init(&r);
	/* run steers by the plan without compression and scores the
	   selection as the answer score, without touching the plan */
	ck_assert(tp_evaluator_bound_sim(&ev) == NULL); /* the toy is none */
	ck_assert_int_eq(ev_run(&ev, scr, &p, &r, &q, &err), TP_OK);
	ck_assert(q.has_answer);
	ck_assert(r.iteration_time_s == 1);
	ck_assert_ptr_nonnull(q.answer_report);
	ck_assert(fabs(q.answer_report->iteration_time_s - 0.8) < 1e-12);
	ck_assert_int_eq(toy.calls, 2);
	ck_assert_uint_eq(p.sfb.n, 0);
	/* finalize records it */
	ck_assert_int_eq(tp_evaluator_finalize(&ev, scr, &p, &r, &err), TP_OK);
	ck_assert_uint_eq(p.groups.v[0].n_sfb, 2);
	ck_assert(fabs(r.iteration_time_s - 0.8) < 1e-12);
	/* an evaluator that finds compression slower: it is dropped */
	toy.sign = 1;
	ck_assert_int_eq(ev_run(&ev, scr, &p, &r, &q, &err), TP_OK);
	ck_assert(r.iteration_time_s == 1);
	ck_assert(q.has_answer);
	ck_assert_ptr_null(q.answer_report); /* = run's */
	ck_assert_int_eq(tp_evaluator_finalize(&ev, scr, &p, &r, &err), TP_OK);
	ck_assert_uint_eq(p.groups.v[0].n_sfb, 0);
	ck_assert_uint_eq(p.sfb.n, 0);
	ck_assert(r.iteration_time_s == 1);
	/* compression off: one evaluation, nothing selected */
	toy.sign = -1;
	toy.calls = 0;
	p.compression = TP_COMPRESSION_OFF;
	ck_assert_int_eq(tp_evaluator_run(&ev, scr, &p, &r, &err), TP_OK);
	ck_assert_int_eq(toy.calls, 1);
	ck_assert(r.iteration_time_s == 1);
	tp_evaluator_scratch_free(&ev, scr);
	/* steered by the compressed score: run reports the better */
	p.compression = TP_COMPRESSION_LOSSLESS;
	tp_sfb_joint_evaluator_steer(&j, sfb, &inner, TP_SFB_STEER_COMPRESSED,
				     &ev);
	ck_assert_int_eq(tp_evaluator_scratch_new(&ev, &scr, &err), TP_OK);
	ck_assert_ptr_nonnull(scr);
	ck_assert_int_eq(ev_run(&ev, scr, &p, &r, &q, &err), TP_OK);
	ck_assert(!q.has_answer); /* the report is the answer score */
	ck_assert(fabs(r.iteration_time_s - 0.8) < 1e-12);
	ck_assert_uint_eq(p.sfb.n, 0);
	tp_report_release(&r);
	tp_evaluator_scratch_free(&ev, scr);
	tp_sfb_free(sfb);
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* --- joint never worse than post-hoc (deterministic search) ------------- */

struct guar {
	double off, post, joint, finalized;
	bool same; /* the joint search visited what the search without did */
	uint32_t joint_sfb;
};

/*
 * One case as bench_compress runs it: the search without compression and
 * TAG-style post-hoc selection on its answer, against the joint search
 * (steer), same seed and playout limit, one thread.
 */
static void guarantee_case(const char *model, const char *const *specs,
			   int n_specs, const char *net, uint64_t seed,
			   bool bound, enum tp_sfb_steer steer, struct guar *g)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_error err;
	struct tp_sim_options so;
	struct tp_sim *sim;
	struct tp_sim_scratch *ss;
	struct tp_sfb_scratch *s;
	const struct tp_sfb *sfb;
	struct tp_search_simeval se;
	struct tp_sfb_joint j;
	struct tp_evaluator plain, jev;
	struct tp_search_options o;
	struct tp_search_result off, jt;
	struct tp_plan post;
	struct tp_report rpost, again;

	setenv("TAGPLAN_DATA", tp_data_file(""), 0);
	tp_model_init(&m);
	tp_cluster_init(&c);
	ck_assert_int_eq(tp_build_zoo(model, 0, -1, &m, &err), TP_OK);
	ck_assert_int_eq(tp_build_topology(specs, n_specs, net, 1, &c, &err), TP_OK);
	tp_sim_options_default(&so);
	sim = tp_sim_new(&m, &c, &so, &err);
	ck_assert_ptr_nonnull(sim);
	ss = tp_sim_scratch_new(sim);
	sfb = tp_sim_sfb(sim);
	s = tp_sfb_scratch_new(sfb);
	ck_assert(ss && s);
	tp_search_sim_evaluator(&se, sim, NULL, &plain);
	tp_sfb_joint_evaluator_steer(&j, sfb, &plain, steer, &jev);
	ck_assert(!bound || steer != TP_SFB_STEER_PLAIN ||
		  tp_evaluator_bound_sim(&jev) == sim);
	tp_search_options_default(&o);
	o.seed = seed;
	o.threads = 1;
	o.time_limit_s = 0;
	o.playouts = 150;
	o.bound_sim = bound ? sim : NULL;

	tp_search_result_init(&off);
	tp_search_result_init(&jt);
	tp_plan_init(&post);
	tp_report_init(&rpost);
	tp_report_init(&again);
	o.compression = TP_COMPRESSION_OFF;
	ck_assert_int_eq(tp_search_run(&m, &c, &plain, &o, &off, &err), TP_OK);
	ck_assert_int_eq(tp_plan_copy(&post, &off.plan, &err), TP_OK);
	post.compression = TP_COMPRESSION_LOSSLESS;
	ck_assert_int_eq(tp_sfb_simulate(sfb, sim, &post, s, ss, &rpost, NULL,
					 &err),
			 TP_OK);
	o.compression = TP_COMPRESSION_LOSSLESS;
	ck_assert_int_eq(tp_search_run(&m, &c, &jev, &o, &jt, &err), TP_OK);
	ck_assert(off.have_plan && jt.have_plan);
	ck_assert(off.report.feasible && rpost.feasible && jt.report.feasible);
	g->off = off.report.iteration_time_s;
	g->post = rpost.iteration_time_s;
	g->joint = jt.report.iteration_time_s;
	g->same = jt.playouts == off.playouts &&
		  jt.evaluations == off.evaluations &&
		  jt.simulations == off.simulations &&
		  jt.bounded == off.bounded;
	g->joint_sfb = (uint32_t)jt.plan.sfb.n;
	/* the answer as recorded simulates to its reported time */
	ck_assert_int_eq(tp_sim_run(sim, &jt.plan, ss, &again, NULL, &err),
			 TP_OK);
	g->finalized = again.iteration_time_s;
	tp_report_release(&again);
	tp_report_release(&rpost);
	tp_plan_release(&post);
	tp_search_result_release(&jt);
	tp_search_result_release(&off);
	tp_sfb_scratch_free(s);
	tp_sim_scratch_free(ss);
	tp_sim_free(sim);
	tp_cluster_release(&c);
	tp_model_release(&m);
}

/*
 * The guarantee of tp_sfb_joint_evaluator: with one thread and a playout
 * limit, the joint search follows the trajectory of the search without
 * compression and its answer is never slower than that search's answer
 * compressed post-hoc - exactly, not within a tolerance.  With
 * TP_SFB_STEER_COMPRESSED in place of PLAIN the search leaves that
 * trajectory (same is false) and, without the lower bound, ends slower
 * than post-hoc on VGG-19 over 25 GbE for some seeds (the cases below),
 * so this test catches a joint evaluator that steers by the compressed
 * score.
 */
START_TEST(test_sfb_joint_never_worse_than_post_hoc)
{
	static const struct {
		const char *model, *specs[2];
		int n_specs;
		const char *net;
	} cs[] = {
		{"vgg19", {"v100-nvlink:2", NULL}, 1, "25gbe"},
		{"vgg19", {"v100-nvlink:2", "1080ti-pcie:2"}, 2, "10gbe"},
	};
	int gains = 0;

	for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++)
		for (uint64_t seed = 1; seed <= 3; seed++)
			for (int bound = 0; bound < 2; bound++) {
				struct guar g;
				guarantee_case(cs[i].model, cs[i].specs,
					       cs[i].n_specs, cs[i].net, seed,
					       bound, TP_SFB_STEER_PLAIN, &g);
				ck_assert_msg(g.same,
					      "%s %s seed %llu bound %d: "
					      "another trajectory",
					      cs[i].model, cs[i].net,
					      (unsigned long long)seed, bound);
				ck_assert_msg(g.joint <= g.post &&
						      g.post <= g.off,
					      "%s %s seed %llu bound %d: off "
					      "%.9g post-hoc %.9g joint %.9g",
					      cs[i].model, cs[i].net,
					      (unsigned long long)seed, bound,
					      g.off, g.post, g.joint);
				ck_assert(g.finalized == g.joint);
				gains += g.joint < g.post;
			}
	/* and the joint answer is sometimes strictly better */
	ck_assert_int_gt(gains, 0);
}
END_TEST

/* --- the simulator's account of compression (src/sim/sfb_hook.c) ---------- */

START_TEST(test_sfb_in_simulator)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_sim *sim;
	struct tp_sim_scratch *ss;
	struct tp_sfb *sfb;
	struct tp_sfb_scratch *s;
	struct tp_sfb_stats st;
	struct tp_report r0, r1;
	struct tp_error err;
	double t0;

	/* a 400 MB layer on four 10 GbE machines: its all-reduce alone is
	 * 2 * 3/4 * 400 MB / 1.25 GB/s = 0.48 s */
	mlp(&m, 400e6, 1e5, 64);
	make_cluster(&c, 4, 1, 1.25e9, 2e-5, false);
	dp_plan(&p, &m, &c, TP_SYNC_RING);
	sim = tp_sim_new(&m, &c, NULL, &err);
	ck_assert_ptr_nonnull(sim);
	ss = tp_sim_scratch_new(sim);
	ck_assert_ptr_nonnull(ss);
	sfb = tp_sfb_new(&m, &c, NULL, &err);
	s = tp_sfb_scratch_new(sfb);
	tp_report_init(&r0);
	tp_report_init(&r1);
	ck_assert_int_eq(tp_sim_run(sim, &p, ss, &r0, NULL, &err), TP_OK);
	ck_assert(r0.feasible);
	ck_assert_int_eq(tp_sfb_select(sfb, &p, s, NULL, &err), TP_OK);
	ck_assert_uint_eq(p.groups.v[0].n_sfb, 2);
	ck_assert_int_eq(tp_sim_run(sim, &p, ss, &r1, NULL, &err), TP_OK);
	ck_assert_msg(r1.iteration_time_s < r0.iteration_time_s - 0.2,
		      "with SFB %.4f s, without %.4f s", r1.iteration_time_s,
		      r0.iteration_time_s);
	/* tp_sfb_simulate keeps it */
	t0 = r0.iteration_time_s;
	tp_sfb_clear(&p);
	ck_assert_int_eq(tp_sfb_simulate(sfb, sim, &p, s, ss, &r1, &st, &err),
			 TP_OK);
	ck_assert(!st.dropped);
	ck_assert_uint_eq(p.groups.v[0].n_sfb, 2);
	ck_assert(r1.iteration_time_s < t0 - 0.2);
	/* lossy formats shorten the sync too */
	p.compression = TP_COMPRESSION_LOSSY;
	tp_sfb_clear(&p);
	p.groups.v[0].lossy = TP_LOSSY_FP16;
	ck_assert_int_eq(tp_sim_run(sim, &p, ss, &r1, NULL, &err), TP_OK);
	ck_assert(r1.iteration_time_s < t0 - 0.1);
	/* a compression the group cannot use is bad input */
	p.compression = TP_COMPRESSION_LOSSLESS;
	p.groups.v[0].lossy = TP_LOSSY_NONE;
	p.groups.v[0].sync = TP_SYNC_PS;
	{
		uint32_t op = 1;
		ck_assert_int_eq(tp_vec_push(&p.sfb, op), 0);
		p.groups.v[0].sfb_first = 0;
		p.groups.v[0].n_sfb = 1;
	}
	ck_assert_int_eq(tp_sim_run(sim, &p, ss, &r1, NULL, &err), TP_EINPUT);
	ck_assert_ptr_nonnull(strstr(err.msg, "parameter server"));
	tp_report_release(&r0);
	tp_report_release(&r1);
	tp_sfb_scratch_free(s);
	tp_sfb_free(sfb);
	tp_sim_scratch_free(ss);
	tp_sim_free(sim);
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* --- tagplan plan --compression ------------------------------------------ */

struct planned {
	struct tp_plan p;
	double time_s;
	char *err;
};

/* Run tagplan plan on VGG-19 over two V100 servers on 10 GbE. */
static void plan_vgg(const char *dir, const char *mode, struct tp_model *m,
		     struct tp_cluster *c, struct planned *out)
{
	char mp[512], tpth[512], pp[512];
	const char *argv[] = {"tagplan", "plan", "-m", mp, "-t", tpth,
			      "--playouts", "200", "--threads", "1",
			      "--no-gnn", "--seed", "3", "-o", pp,
			      /* compression is the unconstrained runtime's
				 (ddp, VGG's default, has none) */
			      "--runtime", "none",
			      mode ? "--compression" : NULL, mode, NULL};
	struct tp_run r;
	struct tp_error err;

	snprintf(mp, sizeof(mp), "%s/vgg19.json", dir);
	snprintf(tpth, sizeof(tpth), "%s/topo.json", dir);
	snprintf(pp, sizeof(pp), "%s/plan-%s.json", dir, mode ? mode : "default");
	tp_run_tagplan(&r, argv, NULL);
	ck_assert_msg(r.status == 0, "plan %s: exit %d: %s", mode, r.status,
		      r.err);
	tp_plan_init(&out->p);
	if (tp_plan_load_file(pp, m, c, NULL, &out->p, &err))
		ck_abort_msg("%s: %s %s", pp, err.path, err.msg);
	ck_assert(out->p.summary.valid && out->p.summary.feasible);
	out->time_s = out->p.summary.iteration_time_s;
	out->err = r.err;
	r.err = NULL;
	tp_run_free(&r);
}

START_TEST(test_plan_compression_command)
{
	const char *dir = tp_test_tmpdir();
	char mp[512], tpth[512];
	const char *mk_model[] = {"tagplan", "model", "vgg19", "-o", mp, NULL};
	const char *mk_topo[] = {"tagplan", "topo", "v100-nvlink:2", "--net",
				 "10gbe", "-o", tpth, NULL};
	const char *bad[] = {"tagplan", "plan", "-m", mp, "-t", tpth,
			     "--compression", "zip", NULL};
	struct planned dflt, off, lossy;
	struct tp_model m;
	struct tp_cluster c;
	struct tp_error err;
	struct tp_run r;
	uint32_t nsfb = 0, nlossy = 0;

	snprintf(mp, sizeof(mp), "%s/vgg19.json", dir);
	snprintf(tpth, sizeof(tpth), "%s/topo.json", dir);
	tp_run_tagplan(&r, mk_model, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	tp_run_free(&r);
	tp_run_tagplan(&r, mk_topo, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	tp_run_free(&r);
	tp_model_init(&m);
	tp_cluster_init(&c);
	ck_assert_int_eq(tp_model_load_file(mp, NULL, &m, &err), TP_OK);
	ck_assert_int_eq(tp_topology_load_file(tpth, NULL, &c, &err), TP_OK);

	/* the default is lossless: the fully-connected layers use SFB */
	plan_vgg(dir, NULL, &m, &c, &dflt);
	ck_assert_int_eq(dflt.p.compression, TP_COMPRESSION_LOSSLESS);
	for (uint32_t g = 0; g < dflt.p.groups.n; g++) {
		const struct tp_plan_group *gr = &dflt.p.groups.v[g];
		nsfb += gr->n_sfb;
		ck_assert_int_eq(gr->lossy, TP_LOSSY_NONE);
		for (uint32_t k = 0; k < gr->n_sfb; k++) {
			uint32_t o = tp_plan_group_sfb(&dflt.p, g)[k];
			ck_assert_int_eq(m.ops.v[o].kind, TP_OP_MATMUL);
		}
		if (gr->n_sfb)
			ck_assert(gr->sfb_saved_bytes > 1e9);
	}
	ck_assert_uint_ge(nsfb, 1);
	ck_assert_ptr_nonnull(strstr(dflt.err, "sufficient-factor"));
	ck_assert_ptr_null(strstr(dflt.err, "LOSSY"));
	/* off: nothing, and slower */
	plan_vgg(dir, "off", &m, &c, &off);
	ck_assert_int_eq(off.p.compression, TP_COMPRESSION_OFF);
	ck_assert_uint_eq(off.p.sfb.n, 0);
	ck_assert_msg(dflt.time_s < off.time_s, "lossless %.4f s, off %.4f s",
		      dflt.time_s, off.time_s);
	ck_assert_ptr_nonnull(strstr(off.err, "compression    off"));
	/* lossy: opt-in, marked in the plan and the summary */
	plan_vgg(dir, "lossy", &m, &c, &lossy);
	ck_assert_int_eq(lossy.p.compression, TP_COMPRESSION_LOSSY);
	for (uint32_t g = 0; g < lossy.p.groups.n; g++)
		nlossy += lossy.p.groups.v[g].lossy != TP_LOSSY_NONE;
	/* low-rank gradients beat SFB here (fewer bytes, no factors) */
	ck_assert_uint_ge(nlossy, 1);
	ck_assert_ptr_nonnull(strstr(lossy.err, "LOSSY"));
	ck_assert(lossy.time_s <= dflt.time_s * 1.05);
	/* a bad mode */
	tp_run_tagplan(&r, bad, NULL);
	ck_assert_int_eq(r.status, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "--compression"));
	tp_run_free(&r);
	free(dflt.err);
	free(off.err);
	free(lossy.err);
	tp_plan_release(&dflt.p);
	tp_plan_release(&off.p);
	tp_plan_release(&lossy.p);
	tp_cluster_release(&c);
	tp_model_release(&m);
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
	tc = tcase_create("sfb");
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_sfb_ring_and_hierarchical_costs);
	tcase_add_test(tc, test_sfb_selects_when_it_pays);
	tcase_add_test(tc, test_sfb_eligibility);
	tcase_add_test(tc, test_sfb_shared_gather);
	tcase_add_test(tc, test_sfb_forward_recompute_and_actions);
	tcase_add_test(tc, test_sfb_lossy_opt_in);
	tcase_add_test(tc, test_sfb_brute_force);
	tcase_add_test(tc, test_sfb_joint_evaluator);
	tcase_add_test(tc, test_sfb_joint_never_worse_than_post_hoc);
	tcase_add_test(tc, test_sfb_in_simulator);
	suite_add_tcase(s, tc);
	tc = tcase_create("command");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_plan_compression_command);
	suite_add_tcase(s, tc);
	return s;
}
