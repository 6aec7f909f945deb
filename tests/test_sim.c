/*
 * test_sim.c - the simulator and the strategy strings: closed forms of
 * reference/formulas.md pinned against hand-computed values, schedules,
 * memory, errors, and the `simulate` command.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cluster.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/report.h"
#include "core/strategy.h"
#include "io/build.h"
#include "sim/sim.h"
#include "util.h"

#define REL(a, b) (fabs((a) - (b)) / fmax(fabs(b), 1e-300))

/* A device type with round numbers: 100 TFLOP/s, 1 TB/s, 80 GB. */
static struct tp_device_type toy_type(const char *name)
{
	struct tp_device_type t;

	memset(&t, 0, sizeof(t));
	t.name = name;
	t.peak_flops[TP_DTYPE_FP32] = 10e12;
	t.peak_flops[TP_DTYPE_FP16] = 100e12;
	t.peak_flops[TP_DTYPE_BF16] = 100e12;
	t.memory_bytes = 80e9;
	t.memory_bw_Bps = 1e12;
	t.gemm_efficiency = 1.0;
	t.gemm_half_flop = 1e-9; /* flat curve: exactly peak */
	t.memory_efficiency = 1.0;
	t.kernel_overhead_s = 0;
	t.reserved_bytes = 0;
	return t;
}

/* nodes x gpus devices: fabric fab_bw per device (0 = none), NICs of
 * nic_bw each, one per GPU, star network; latencies lat. */
static void toy_cluster(struct tp_cluster *c, uint32_t nodes, uint32_t gpus,
			double fab_bw, double nic_bw, double lat)
{
	struct tp_error err;
	struct tp_device_type t = toy_type("toy");
	uint32_t ty;

	tp_cluster_init(c);
	ck_assert_int_eq(tp_cluster_add_type(c, &t, &ty, &err), TP_OK);
	for (uint32_t n = 0; n < nodes; n++) {
		char name[32];
		snprintf(name, sizeof(name), "node%u", n);
		ck_assert_int_eq(tp_cluster_build_node(c, name, ty, gpus,
						       TP_LINK_NVSWITCH, fab_bw,
						       lat, gpus, nic_bw, lat,
						       NULL, &err),
				 TP_OK);
	}
	if (nodes > 1)
		ck_assert_int_eq(tp_cluster_connect_star(c, 1.0, NULL, &err),
				 TP_OK);
	ck_assert_int_eq(tp_cluster_finalize(c, &err), TP_OK);
}

/* A chain of n matmuls, one per layer, `flop` forward FLOP per sample
 * each (backward 2x), `pbytes` parameter bytes each, edges of `ebytes`
 * per sample. */
static void chain_model(struct tp_model *m, uint32_t n, double flop,
			double pbytes, double ebytes, int64_t batch)
{
	struct tp_error err;
	uint32_t prev = TP_NONE;

	tp_model_init(m);
	m->global_batch = batch;
	m->dtype = TP_DTYPE_FP16;
	m->optimizer = TP_OPT_ADAM;
	for (uint32_t i = 0; i < n; i++) {
		struct tp_op op = tp_op_default();
		char name[32];
		uint32_t idx;
		snprintf(name, sizeof(name), "op%u", i);
		op.name = name;
		op.kind = TP_OP_MATMUL;
		op.layer = (int32_t)i;
		op.flop = flop;
		op.backward_flop = 2 * flop;
		op.param_bytes = pbytes;
		op.out_bytes = ebytes;
		op.saved_bytes = ebytes;
		ck_assert_int_eq(tp_model_add_op(m, &op, &idx, &err), TP_OK);
		if (prev != TP_NONE)
			ck_assert_int_eq(
				tp_model_add_edge(m, prev, idx, ebytes, &err),
				TP_OK);
		prev = idx;
	}
	ck_assert_int_eq(tp_model_finalize(m, &err), TP_OK);
}

static struct tp_sim *new_sim(const struct tp_model *m,
			      const struct tp_cluster *c, bool overlap)
{
	struct tp_sim_options o;
	struct tp_error err;
	struct tp_sim *sim;

	tp_sim_options_default(&o);
	o.params.overlap_grad_sync = overlap;
	o.params.p2p_latency_s = 0;
	o.params.collective_latency_s = 0;
	o.params.link_eff_intra = 1;
	o.params.link_eff_network = 1;
	o.params.gemm_sustained = 1;
	sim = tp_sim_new(m, c, &o, &err);
	ck_assert_msg(sim != NULL, "%s", err.msg);
	return sim;
}

static void run(const struct tp_sim *sim, const struct tp_plan *p,
		struct tp_report *r)
{
	struct tp_sim_scratch *s = tp_sim_scratch_new(sim);
	struct tp_error err;
	enum tp_status st;

	ck_assert_ptr_nonnull(s);
	st = tp_sim_run(sim, p, s, r, NULL, &err);
	ck_assert_msg(st == TP_OK, "%s %s", err.path, err.msg);
	tp_sim_scratch_free(s);
}

/* Single device: forward + backward + optimizer step, by hand. */
START_TEST(test_single_device_roofline)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_plan p;
	struct tp_report r;
	struct tp_sim *sim;
	uint32_t ops[4] = {0, 1, 2, 3}, dev = 0;
	double flop = 1e12, pb = 2e9, expect;

	toy_cluster(&c, 1, 1, 0, 0, 0);
	chain_model(&m, 4, flop, pb, 1e6, 8);
	tp_plan_init(&p);
	p.global_batch = 8;
	p.micro_batches = 1;
	ck_assert_int_eq(tp_plan_add_group(&p, ops, 4, &dev, 1, 1, 1, NULL,
					   NULL, NULL),
			 TP_OK);
	sim = new_sim(&m, &c, false);
	tp_report_init(&r);
	run(sim, &p, &r);
	/* per op: forward max(8e12/1e14, (8e6 + 2e9)/1e12) = 0.08 s;
	 * backward max(16e12/1e14, (2*8e6 + 4e9)/1e12) = 0.16 s;
	 * step: 1e9 params * (2*12 + 2 + 2) bytes / 1e12 = 0.028 s */
	expect = 4 * (0.08 + 0.16) + 4 * 0.028;
	ck_assert_msg(REL(r.iteration_time_s, expect) < 1e-9, "%.9g vs %.9g",
		      r.iteration_time_s, expect);
	ck_assert(r.feasible);
	/* weights 2 + grads 2 + optimizer 12 bytes per parameter */
	ck_assert(REL(r.devices[0].memory.weights, 8e9) < 1e-12);
	ck_assert(REL(r.devices[0].memory.gradients, 8e9) < 1e-12);
	ck_assert(REL(r.devices[0].memory.optimizer, 48e9) < 1e-12);
	ck_assert(REL(r.model_flop_per_iteration, 8 * 4 * 3e12) < 1e-12);
	tp_report_release(&r);
	tp_sim_free(sim);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST


/* A plan with one group of all ops on devices [0, n) as dp x tp. */
static void plain_plan(struct tp_plan *p, const struct tp_model *m,
		       uint32_t dp, uint32_t tp, uint32_t micro,
		       enum tp_sync sync, uint32_t zero)
{
	uint32_t ops[64], devs[64];

	ck_assert_uint_le(m->ops.n, 64);
	for (uint32_t i = 0; i < m->ops.n; i++)
		ops[i] = i;
	for (uint32_t i = 0; i < dp * tp; i++)
		devs[i] = i;
	tp_plan_init(p);
	p->global_batch = m->global_batch;
	p->micro_batches = micro;
	p->zero = zero;
	ck_assert_int_eq(tp_plan_add_group(p, ops, (uint32_t)m->ops.n, devs,
					   dp * tp, dp, tp, NULL, NULL, NULL),
			 TP_OK);
	p->groups.v[0].sync = sync;
}

/* Ring all-reduce: 2(n-1)a + 2(n-1)/n S/b, exposed after the backward. */
START_TEST(test_ring_allreduce_time)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_plan p;
	struct tp_report r;
	struct tp_sim *sim;
	double a = 1e-6, bw = 100e9, S = 2e9, expect;

	toy_cluster(&c, 1, 4, bw, 0, a);
	chain_model(&m, 1, 1e12, S, 1e6, 4);
	plain_plan(&p, &m, 4, 1, 1, TP_SYNC_RING, 0);
	sim = new_sim(&m, &c, false);
	tp_report_init(&r);
	run(sim, &p, &r);
	/* forward 0.01 s, backward 0.02 s, step 1e9 * 28 / 1e12 */
	expect = 0.01 + 0.02 + (2 * 3 * a + 2 * 3.0 / 4 * S / bw) + 0.028;
	ck_assert_msg(REL(r.iteration_time_s, expect) < 1e-9, "%.12g vs %.12g",
		      r.iteration_time_s, expect);
	ck_assert(r.n_links > 0);
	tp_report_release(&r);
	tp_sim_free(sim);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* Hierarchical all-reduce over 2 nodes of 2: intra-node reduce-scatter,
 * inter-node all-reduce of S/2, intra-node all-gather. */
START_TEST(test_hierarchical_allreduce_time)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_plan p;
	struct tp_report r;
	struct tp_sim *sim;
	double a = 2e-6, bf = 200e9, bn = 25e9, S = 2e9, expect, sync;

	toy_cluster(&c, 2, 2, bf, bn, a);
	chain_model(&m, 1, 1e12, S, 1e6, 4);
	plain_plan(&p, &m, 4, 1, 1, TP_SYNC_HIERARCHICAL, 0);
	sim = new_sim(&m, &c, false);
	tp_report_init(&r);
	run(sim, &p, &r);
	sync = (a + S / 2 / bf) + (2 * a + (S / 2) / bn) + (a + S / 2 / bf);
	expect = 0.01 + 0.02 + sync + 0.028;
	ck_assert_msg(REL(r.iteration_time_s, expect) < 1e-9, "%.12g vs %.12g",
		      r.iteration_time_s, expect);
	tp_report_release(&r);
	tp_sim_free(sim);
	tp_plan_release(&p);
	/* flat ring over the 2 nodes: NCCL-style 2 rings, each leaving a
	 * node through its own NIC: 2(n-1)/n S / (2 bn) on the NICs */
	plain_plan(&p, &m, 4, 1, 1, TP_SYNC_RING, 0);
	sim = new_sim(&m, &c, false);
	tp_report_init(&r);
	run(sim, &p, &r);
	sync = 2 * 3 * a + 2 * 3.0 / 4 * (S / 2) / bn;
	expect = 0.01 + 0.02 + sync + 0.028;
	ck_assert_msg(REL(r.iteration_time_s, expect) < 1e-9, "%.12g vs %.12g",
		      r.iteration_time_s, expect);
	tp_report_release(&r);
	tp_sim_free(sim);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* Overlapped sync: only the last bucket is exposed when the backward is
 * longer than the rest of the all-reduce. */
START_TEST(test_sync_overlap)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_plan p;
	struct tp_report r;
	struct tp_sim *sim;
	struct tp_sim_options o;
	struct tp_sim_scratch *s;
	struct tp_error err;
	double a = 0, bw = 100e9, S = 2e9, bucket = 100e6, expect;

	toy_cluster(&c, 1, 4, bw, 0, a);
	chain_model(&m, 1, 1e13, S, 1e6, 4);
	plain_plan(&p, &m, 4, 1, 1, TP_SYNC_RING, 0);
	tp_sim_options_default(&o);
	o.params.collective_latency_s = 0;
	o.params.link_eff_intra = 1;
	o.params.gemm_sustained = 1;
	o.params.bucket_bytes = bucket;
	sim = tp_sim_new(&m, &c, &o, &err);
	ck_assert_ptr_nonnull(sim);
	s = tp_sim_scratch_new(sim);
	tp_report_init(&r);
	ck_assert_int_eq(tp_sim_run(sim, &p, s, &r, NULL, &err), TP_OK);
	/* backward 0.2 s > all-reduce of S - bucket (0.0285 s): the tail
	 * bucket follows the backward */
	expect = 0.1 + 0.2 + 1.5 * bucket / bw + 0.028;
	ck_assert_msg(REL(r.iteration_time_s, expect) < 1e-9, "%.12g vs %.12g",
		      r.iteration_time_s, expect);
	tp_report_release(&r);
	tp_sim_scratch_free(s);
	tp_sim_free(sim);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* p stages of one op each, m micro-batches, free transfers. */
static double pipeline_time(enum tp_schedule sched, uint32_t p, uint32_t V,
			    uint32_t mb, double *bubble)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_plan pl;
	struct tp_report r;
	struct tp_sim *sim;
	double t;

	toy_cluster(&c, 1, p, 1e15, 0, 0);
	chain_model(&m, p * V, 1e12, 0, 0, mb);
	tp_plan_init(&pl);
	pl.global_batch = mb;
	pl.micro_batches = mb;
	pl.schedule = sched;
	pl.virtual_stages = V;
	for (uint32_t k = 0; k < p * V; k++) {
		uint32_t dev = k % p;
		ck_assert_int_eq(tp_plan_add_group(&pl, &k, 1, &dev, 1, 1, 1,
						   NULL, NULL, NULL),
				 TP_OK);
	}
	sim = new_sim(&m, &c, false);
	tp_report_init(&r);
	run(sim, &pl, &r);
	t = r.iteration_time_s;
	*bubble = r.bubble_fraction;
	tp_report_release(&r);
	tp_sim_free(sim);
	tp_plan_release(&pl);
	tp_model_release(&m);
	tp_cluster_release(&c);
	return t;
}

/* Bubbles: GPipe and 1F1B (p-1)/m of the ideal time, interleaved
 * (p-1)/(v m).  One op: forward 0.01 s, backward 0.02 s per sample. */
START_TEST(test_pipeline_bubbles)
{
	double f = 0.01, b = 0.02, bub, t;
	uint32_t p = 4, mb = 8, V = 2;

	t = pipeline_time(TP_SCHEDULE_GPIPE, p, 1, mb, &bub);
	ck_assert_msg(REL(t, (mb + p - 1) * (f + b)) < 1e-9, "gpipe %.9g", t);
	ck_assert(REL(bub, (p - 1.0) / (mb + p - 1)) < 1e-9);
	/* (p-1)/m of the ideal time */
	ck_assert(REL((t - mb * (f + b)) / (mb * (f + b)), (p - 1.0) / mb) <
		  1e-9);
	t = pipeline_time(TP_SCHEDULE_1F1B, p, 1, mb, &bub);
	ck_assert_msg(REL(t, (mb + p - 1) * (f + b)) < 1e-9, "1f1b %.9g", t);
	ck_assert(REL(bub, (p - 1.0) / (mb + p - 1)) < 1e-9);
	t = pipeline_time(TP_SCHEDULE_INTERLEAVED, p, V, mb, &bub);
	/* chunks of half a stage: ideal m*V*(f+b), bubble (p-1)(f+b) */
	ck_assert_msg(REL(t, (mb * V + p - 1) * (f + b)) < 1e-9,
		      "interleaved %.9g vs %.9g", t, (mb * V + p - 1) * (f + b));
	ck_assert(REL((t - mb * V * (f + b)) / (mb * V * (f + b)),
		      (p - 1.0) / (V * mb)) < 1e-9);
}
END_TEST

/* ZeRO: 2 + 2 + 12 bytes per parameter, sharded over d = 4 replicas. */
START_TEST(test_zero_memory)
{
	struct tp_cluster c;
	struct tp_model m;
	double P = 1e9, d = 4;
	double expect[4][3] = {{2, 2, 12},
			       {2, 2, 12 / 4.0},
			       {2, 2 / 4.0, 12 / 4.0},
			       {2 / 4.0, 2 / 4.0, 12 / 4.0}};

	toy_cluster(&c, 1, 4, 100e9, 0, 0);
	chain_model(&m, 1, 1e9, 2 * P, 0, 4);
	for (uint32_t z = 0; z <= 3; z++) {
		struct tp_plan p;
		struct tp_report r;
		struct tp_sim *sim;
		plain_plan(&p, &m, (uint32_t)d, 1, 1, TP_SYNC_RING, z);
		sim = new_sim(&m, &c, true);
		tp_report_init(&r);
		run(sim, &p, &r);
		for (uint32_t k = 0; k < 4; k++) {
			const struct tp_memory_breakdown *b =
				&r.devices[k].memory;
			ck_assert(REL(b->weights, expect[z][0] * P) < 1e-12);
			ck_assert(REL(b->gradients, expect[z][1] * P) < 1e-12);
			ck_assert(REL(b->optimizer, expect[z][2] * P) < 1e-12);
		}
		tp_report_release(&r);
		tp_sim_free(sim);
		tp_plan_release(&p);
	}
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* Activation bytes of one GPT layer (difference of 2 and 1 layers) under
 * tp, sp and recomputation, against Korthikanti et al. */
static double layer_act(uint32_t tp, bool sp, enum tp_recompute rc,
			double s, double b, double h, double a)
{
	double act[2];
	for (int L = 1; L <= 2; L++) {
		struct tp_gpt_dims d;
		struct tp_model m;
		struct tp_cluster c;
		struct tp_plan p;
		struct tp_report r;
		struct tp_sim *sim;
		struct tp_error err;
		tp_gpt_dims_default(&d);
		d.hidden = (int64_t)h;
		d.heads = (int64_t)a;
		d.layers = L;
		d.seq = (int64_t)s;
		d.vocab = 1024;
		d.batch = (int64_t)b;
		d.dtype = TP_DTYPE_FP16;
		tp_model_init(&m);
		ck_assert_int_eq(tp_build_gpt(&d, &m, &err), TP_OK);
		toy_cluster(&c, 1, tp, 100e9, 0, 0);
		plain_plan(&p, &m, 1, tp, 1, TP_SYNC_RING, 0);
		p.groups.v[0].sp = sp;
		p.groups.v[0].recompute = rc;
		sim = new_sim(&m, &c, true);
		tp_report_init(&r);
		run(sim, &p, &r);
		act[L - 1] = r.devices[0].memory.activations;
		tp_report_release(&r);
		tp_sim_free(sim);
		tp_plan_release(&p);
		tp_cluster_release(&c);
		tp_model_release(&m);
	}
	return act[1] - act[0];
}

START_TEST(test_activation_bytes)
{
	double s = 512, b = 2, h = 256, a = 8, t = 4, x;

	x = layer_act(1, false, TP_RECOMPUTE_NONE, s, b, h, a);
	ck_assert_msg(REL(x, s * b * h * (34 + 5 * a * s / h)) < 1e-9, "%g", x);
	x = layer_act(4, false, TP_RECOMPUTE_NONE, s, b, h, a);
	ck_assert_msg(REL(x, s * b * h * (10 + 24 / t + 5 * a * s / (h * t))) <
			      1e-9,
		      "%g", x);
	x = layer_act(4, true, TP_RECOMPUTE_NONE, s, b, h, a);
	ck_assert_msg(REL(x, s * b * h / t * (34 + 5 * a * s / h)) < 1e-9, "%g",
		      x);
	x = layer_act(4, true, TP_RECOMPUTE_SELECTIVE, s, b, h, a);
	ck_assert_msg(REL(x, s * b * h / t * 34) < 1e-9, "%g", x);
	x = layer_act(1, false, TP_RECOMPUTE_FULL, s, b, h, a);
	ck_assert_msg(REL(x, 2 * s * b * h) < 1e-9, "%g", x);
}
END_TEST

Suite *suite_sim(void)
{
	Suite *s = suite_create("sim");
	TCase *tc = tcase_create("formulas");

	tcase_add_test(tc, test_single_device_roofline);
	tcase_add_test(tc, test_ring_allreduce_time);
	tcase_add_test(tc, test_hierarchical_allreduce_time);
	tcase_add_test(tc, test_sync_overlap);
	tcase_add_test(tc, test_pipeline_bubbles);
	tcase_add_test(tc, test_zero_memory);
	tcase_add_test(tc, test_activation_bytes);
	suite_add_tcase(s, tc);
	return s;
}
