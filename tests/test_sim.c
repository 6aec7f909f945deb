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

#include <pthread.h>

#include "core/cluster.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/report.h"
#include "core/rng.h"
#include "core/runtime.h"
#include "core/strategy.h"
#include "core/strbuf.h"
#include "io/build.h"
#include "io/io.h"
#include "io/json.h"
#include "sim/sim.h"
#include "util.h"

#define REL(a, b)                                                             \
	(fabs((double)(a) - (double)(b)) / fmax(fabs((double)(b)), 1e-300))


/* The name of toy_cluster's device type (the TF32 rule reads it). */
static const char *toy_name = "toy";

/* nodes x gpus devices: fabric fab_bw per device (0 = none), NICs of
 * nic_bw each, one per GPU, star network; latencies lat. */
static void toy_cluster(struct tp_cluster *c, uint32_t nodes, uint32_t gpus,
			double fab_bw, double nic_bw, double lat)
{
	struct tp_error err;
	struct tp_device_type t = tp_test_toy_type(toy_name);
	uint32_t ty;

	tp_cluster_init(c);
	ck_assert_int_eq(tp_cluster_add_type(c, &t, &ty, &err), TP_OK);
	for (uint32_t n = 0; n < nodes; n++) {
		char name[32];
		snprintf(name, sizeof(name), "node%u", n);
		ck_assert_int_eq(
		    tp_cluster_build_node(c,
					  &(struct tp_node_build){
					      name, ty, gpus, TP_LINK_NVSWITCH,
					      fab_bw, lat, gpus, nic_bw, lat,
					      false},
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
	const struct tp_test_chain s = {
		.n = n, .dtype = TP_DTYPE_FP16, .flop = flop, .pbytes = pbytes,
		.saved = ebytes, .out = ebytes, .edge = ebytes, .batch = batch};
	tp_test_chain_model(m, &s);
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
	ck_assert_int_eq(tp_plan_add_group_degrees(
			     &p, ops, 4, &dev, 1,
			     &(struct tp_plan_degrees){1, 1, 1}, NULL, NULL),
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
	ck_assert_int_eq(tp_plan_add_group_degrees(
			     p, ops, (uint32_t)m->ops.n, devs, dp * tp,
			     &(struct tp_plan_degrees){dp, 1, tp}, NULL, NULL),
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

/* NCCL's tree across nodes: 64 one-GPU nodes, a 1 MB gradient (one
 * call) and 100 us per hop, where the ring's 126 steps cost 12.6 ms and
 * the tree's 2 log2(64) = 12 steps 1.2 ms for 2 S against 2(63/64) S
 * over the NIC; with no latency the ring moves less and stays. */
START_TEST(test_tree_allreduce_across_nodes)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_plan p;
	struct tp_report r;
	struct tp_sim *sim;
	double bn = 25e9, S = 1e6, step = S / 2 * 28 / 1e12, expect;

	for (int lat = 1; lat >= 0; lat--) {
		double a = lat ? 1e-4 : 0;
		toy_cluster(&c, 64, 1, 0, bn, a);
		chain_model(&m, 1, 1e12, S, 1e6, 64);
		plain_plan(&p, &m, 64, 1, 1, TP_SYNC_RING, 0);
		sim = new_sim(&m, &c, false);
		tp_report_init(&r);
		run(sim, &p, &r);
		expect = 0.01 + 0.02 + step +
			 (lat ? 2 * 6 * a + 2 * S / bn
			      : 2 * 63.0 / 64 * S / bn);
		ck_assert_msg(REL(r.iteration_time_s, expect) < 1e-9,
			      "latency %g: %.12g vs %.12g", a,
			      r.iteration_time_s, expect);
		tp_report_release(&r);
		tp_sim_free(sim);
		tp_plan_release(&p);
		tp_model_release(&m);
		tp_cluster_release(&c);
	}
}
END_TEST

/* A small GPT (hidden 256, 8 heads, 4 layers, vocab 1000, batch 8) of
 * sequence seq in dtype dt, in m (initialised here). */
static void small_gpt(struct tp_model *m, int64_t seq, enum tp_dtype dt)
{
	struct tp_gpt_dims d;
	struct tp_error err;

	tp_gpt_dims_default(&d);
	d.hidden = 256;
	d.heads = 8;
	d.layers = 4;
	d.seq = seq;
	d.vocab = 1000;
	d.batch = 8;
	d.dtype = dt;
	tp_model_init(m);
	ck_assert_int_eq(tp_build_gpt(&d, m, &err), TP_OK);
}

/* The tensor-parallel collectives' time of device 0 for small_gpt (seq
 * 512) under strategy on one node of `gpus` toy devices on an NVSwitch
 * (100 GB/s, no latency) whose type has NVLS or not, dp = 1:
 * communication_s is the collectives alone. */
static double tp_comm_s(bool nvls, uint32_t gpus, const char *strategy)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_device_type t = tp_test_toy_type("toy");
	struct tp_strategy s;
	struct tp_plan p;
	struct tp_report r;
	struct tp_sim *sim;
	struct tp_error err;
	double comm;

	small_gpt(&m, 512, TP_DTYPE_BF16);
	t.nvls = nvls;
	tp_test_toy_node(&c, &t, gpus);
	tp_plan_init(&p);
	ck_assert_int_eq(tp_strategy_parse(strategy, &s, &err), TP_OK);
	ck_assert_int_eq(tp_strategy_to_plan(&s, &m, &c, &p, &err), TP_OK);
	sim = new_sim(&m, &c, false);
	tp_report_init(&r);
	run(sim, &p, &r);
	comm = r.devices[0].communication_s;
	tp_report_release(&r);
	tp_sim_free(sim);
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
	return comm;
}

/* NVLS inside an NVLink SHARP domain: a tp = 8 all-reduce moves (8+1)/8 S
 * per rank each way instead of the ring's 2(8-1)/8 S: 9/14 of the ring's
 * time without latency.  Reduce-scatter and all-gather (sequence
 * parallelism) and tp = 2 keep the ring. */
START_TEST(test_nvls_tp_allreduce)
{
	double ring = tp_comm_s(false, 8, "tp=8,dp=1,mb=1");
	double nvls = tp_comm_s(true, 8, "tp=8,dp=1,mb=1");

	ck_assert(ring > 0);
	ck_assert_msg(REL(nvls, ring * 9 / 14) < 1e-9, "nvls %.9g ring %.9g",
		      nvls, ring);
	ring = tp_comm_s(false, 8, "tp=8,dp=1,mb=1,sp=on");
	nvls = tp_comm_s(true, 8, "tp=8,dp=1,mb=1,sp=on");
	ck_assert(ring > 0);
	ck_assert_msg(REL(nvls, ring) < 1e-12, "sp: nvls %.9g ring %.9g", nvls,
		      ring);
	ring = tp_comm_s(false, 2, "tp=2,dp=1,mb=1");
	nvls = tp_comm_s(true, 2, "tp=2,dp=1,mb=1");
	ck_assert_msg(REL(nvls, ring) < 1e-12, "tp 2: nvls %.9g ring %.9g",
		      nvls, ring);
}
END_TEST

/* A replica is a copy of the one before it in its group (lanes.c
 * make_lanes, SAME_AS_PREV) only when its tensor-parallel ring is as fast
 * too: small_gpt at tp = 2, dp = 4 on two toy nodes of 4 GPUs (an
 * NVSwitch of 300 GB/s, one NIC of 10 GB/s per GPU), the same type and
 * the same samples everywhere, the ranks of replicas 1 and 3 in
 * different nodes.  Copied from replica 0, replica 1's collectives would
 * take replica 0's time; they take longer, and replica 2's (inside node
 * 1 again) do not. */
START_TEST(test_replica_copy_needs_same_ring)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_report r;
	struct tp_sim *sim;
	uint32_t ops[256], devs[8] = {0, 1, 3, 4, 5, 6, 2, 7};

	small_gpt(&m, 512, TP_DTYPE_BF16);
	ck_assert_uint_le(m.ops.n, 256);
	for (uint32_t i = 0; i < m.ops.n; i++)
		ops[i] = i;
	toy_cluster(&c, 2, 4, 300e9, 10e9, 0);
	tp_plan_init(&p);
	p.global_batch = m.global_batch;
	p.micro_batches = 1;
	ck_assert_int_eq(tp_plan_add_group_degrees(
			     &p, ops, (uint32_t)m.ops.n, devs, 8,
			     &(struct tp_plan_degrees){4, 1, 2}, NULL, NULL),
			 TP_OK);
	sim = new_sim(&m, &c, false);
	tp_report_init(&r);
	run(sim, &p, &r);
	ck_assert(r.devices[0].communication_s > 0);
	/* device 3 (node 0) and 4 (node 1) form replica 1 */
	ck_assert_msg(r.devices[3].communication_s >
			  1.5 * r.devices[0].communication_s,
		      "replica 1 %.9g s, replica 0 %.9g s",
		      r.devices[3].communication_s,
		      r.devices[0].communication_s);
	ck_assert(r.devices[4].communication_s >
		  1.5 * r.devices[0].communication_s);
	ck_assert_msg(r.devices[5].communication_s <
			  r.devices[3].communication_s / 1.5,
		      "replica 2 %.9g s, replica 1 %.9g s",
		      r.devices[5].communication_s,
		      r.devices[3].communication_s);
	tp_report_release(&r);
	tp_sim_free(sim);
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* Parameter server: every replica pushes S/n to each other replica, then
 * pulls: 2 (a + (n-1)/n S/b) on a switch where each device's link carries
 * its n-1 flows. */
START_TEST(test_parameter_server_time)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_plan p;
	struct tp_report r;
	struct tp_sim *sim;
	double a = 1e-6, bw = 100e9, S = 2e9, expect;

	toy_cluster(&c, 1, 4, bw, 0, a);
	chain_model(&m, 1, 1e12, S, 1e6, 4);
	plain_plan(&p, &m, 4, 1, 1, TP_SYNC_PS, 0);
	sim = new_sim(&m, &c, false);
	tp_report_init(&r);
	run(sim, &p, &r);
	expect = 0.01 + 0.02 + 2 * (a + 3.0 / 4 * S / bw) + 0.028;
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
	o.params.grad_bucket_bytes = bucket;
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
	/* the plan's bucket (tagplan plan --grad-bucket-mb) wins over the
	   simulator's: 4x the bucket, 4x the exposed tail */
	o.params.grad_bucket_bytes = 10 * bucket;
	p.grad_bucket_bytes = 4 * bucket;
	sim = tp_sim_new(&m, &c, &o, &err);
	ck_assert_ptr_nonnull(sim);
	s = tp_sim_scratch_new(sim);
	tp_report_init(&r);
	ck_assert_int_eq(tp_sim_run(sim, &p, s, &r, NULL, &err), TP_OK);
	expect = 0.1 + 0.2 + 1.5 * 4 * bucket / bw + 0.028;
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
		ck_assert_int_eq(tp_plan_add_group_degrees(
				     &pl, &k, 1, &dev, 1,
				     &(struct tp_plan_degrees){1, 1, 1}, NULL,
				     NULL),
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
	/* micro-batches not a multiple of p (Megatron refuses; the order
	 * generalises with a short last block): no deadlock, no better than
	 * the interleaved bound, within 5% of plain 1F1B on the same chunks */
	t = pipeline_time(TP_SCHEDULE_INTERLEAVED, p, V, 6, &bub);
	ck_assert_msg(t >= (6 * V + p - 1) * (f + b) * (1 - 1e-9) &&
			      t <= (6 + p - 1) * V * (f + b) * 1.05,
		      "interleaved m=6: %.9g", t);
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

/* In-flight activations per schedule: GPipe m, 1F1B p - s, interleaved
 * 2(p-1) + (V-1)p + 1 chunks = p(1 + (p-1)/(pV)) stages (formulas.md). */
static void inflight(enum tp_schedule sched, uint32_t p, uint32_t V,
		     uint32_t mb, double *first, double *last)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_plan pl;
	struct tp_report r;
	struct tp_sim *sim;

	toy_cluster(&c, 1, p, 1e15, 0, 0);
	chain_model(&m, p * V, 1e12, 0, 1e6, mb);
	tp_plan_init(&pl);
	pl.global_batch = mb;
	pl.micro_batches = mb;
	pl.schedule = sched;
	pl.virtual_stages = V;
	for (uint32_t k = 0; k < p * V; k++) {
		uint32_t dev = k % p;
		ck_assert_int_eq(tp_plan_add_group_degrees(
				     &pl, &k, 1, &dev, 1,
				     &(struct tp_plan_degrees){1, 1, 1}, NULL,
				     NULL),
				 TP_OK);
	}
	sim = new_sim(&m, &c, false);
	tp_report_init(&r);
	run(sim, &pl, &r);
	*first = r.devices[0].memory.activations / 1e6;
	*last = r.devices[p - 1].memory.activations / 1e6;
	tp_report_release(&r);
	tp_sim_free(sim);
	tp_plan_release(&pl);
	tp_model_release(&m);
	tp_cluster_release(&c);
}

START_TEST(test_inflight_activations)
{
	double a, b;

	inflight(TP_SCHEDULE_GPIPE, 4, 1, 8, &a, &b);
	ck_assert(REL(a, 8) < 1e-12 && REL(b, 8) < 1e-12);
	inflight(TP_SCHEDULE_1F1B, 4, 1, 8, &a, &b);
	ck_assert_msg(REL(a, 4) < 1e-12 && REL(b, 1) < 1e-12, "%g %g", a, b);
	inflight(TP_SCHEDULE_INTERLEAVED, 4, 2, 8, &a, &b);
	ck_assert_msg(REL(a, 2 * 3 + 4 + 1) < 1e-12, "%g", a);
	ck_assert(REL(a / 2, 4 * (1 + 3.0 / 8)) < 1e-12);
}
END_TEST

/* Two device types, even shares: the slow replica gates the all-reduce;
 * the fast one waits (idle), and shares 2:1 by speed balance them. */
START_TEST(test_heterogeneous_replicas)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_error err;
	struct tp_device_type fast = tp_test_toy_type("fast");
	struct tp_device_type slow = tp_test_toy_type("slow");
	uint32_t tf, ts, ops[1] = {0}, devs[2] = {0, 1};
	double shares[2] = {2.0 / 3, 1.0 / 3};
	struct tp_plan p;
	struct tp_report r;
	struct tp_sim *sim;
	double S = 2e9, bw = 100e9, sync, t_even;

	slow.peak_flops[TP_DTYPE_FP16] = 50e12;
	tp_cluster_init(&c);
	ck_assert_int_eq(tp_cluster_add_type(&c, &fast, &tf, &err), TP_OK);
	ck_assert_int_eq(tp_cluster_add_type(&c, &slow, &ts, &err), TP_OK);
	ck_assert_int_eq(tp_cluster_build_node(
			     &c,
			     &(struct tp_node_build){"a", tf, 1, TP_LINK_OTHER,
						     0, 0, 1, bw, 0, false},
			     NULL, &err),
			 TP_OK);
	ck_assert_int_eq(tp_cluster_build_node(
			     &c,
			     &(struct tp_node_build){"b", ts, 1, TP_LINK_OTHER,
						     0, 0, 1, bw, 0, false},
			     NULL, &err),
			 TP_OK);
	ck_assert_int_eq(tp_cluster_connect_star(&c, 1.0, NULL, &err), TP_OK);
	ck_assert_int_eq(tp_cluster_finalize(&c, &err), TP_OK);
	chain_model(&m, 1, 1e12, S, 1e6, 6);
	sync = 2 * 1.0 / 2 * S / bw; /* ring of 2 */
	plain_plan(&p, &m, 2, 1, 1, TP_SYNC_RING, 0);
	sim = new_sim(&m, &c, false);
	tp_report_init(&r);
	run(sim, &p, &r);
	/* slow replica: 3 samples, forward 3e12/5e13, backward twice */
	t_even = 3 * (0.02 + 0.04) + sync + 0.028;
	ck_assert_msg(REL(r.iteration_time_s, t_even) < 1e-9, "%.9g vs %.9g",
		      r.iteration_time_s, t_even);
	ck_assert(r.devices[0].idle_s > 0.08);
	ck_assert(r.devices[0].compute_s < r.devices[1].compute_s);
	tp_report_release(&r);
	tp_plan_release(&p);
	/* shares by speed: both replicas take 0.12 s */
	tp_plan_init(&p);
	p.global_batch = 6;
	p.micro_batches = 1;
	ck_assert_int_eq(tp_plan_add_group_degrees(
			     &p, ops, 1, devs, 2,
			     &(struct tp_plan_degrees){2, 1, 1}, shares, NULL),
			 TP_OK);
	tp_report_init(&r);
	run(sim, &p, &r);
	ck_assert(REL(r.iteration_time_s, 2 * (0.02 + 0.04) + sync + 0.028) <
		  1e-9);
	tp_report_release(&r);
	tp_sim_free(sim);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* Profiled times win over the roofline, scaled linearly in the batch. */
START_TEST(test_profile_wins)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_plan p;
	struct tp_report r;
	struct tp_sim *sim;
	struct tp_error err;
	struct tp_op op = tp_op_default();
	struct tp_profile pr = {"toy", 2, 0.5, 1.0, 0, 0, 0, 0, 0, 0};
	uint32_t idx;

	toy_cluster(&c, 1, 1, 0, 0, 0);
	tp_model_init(&m);
	m.global_batch = 8;
	m.dtype = TP_DTYPE_FP16;
	m.optimizer = TP_OPT_SGD;
	op.name = "x";
	op.kind = TP_OP_MATMUL;
	op.flop = 1e9;
	op.backward_flop = 2e9;
	ck_assert_int_eq(tp_model_add_op(&m, &op, &idx, &err), TP_OK);
	ck_assert_int_eq(tp_model_add_profile(&m, idx, &pr, &err), TP_OK);
	ck_assert_int_eq(tp_model_finalize(&m, &err), TP_OK);
	plain_plan(&p, &m, 1, 1, 2, TP_SYNC_RING, 0);
	sim = new_sim(&m, &c, false);
	tp_report_init(&r);
	run(sim, &p, &r);
	/* 2 micro-batches of 4 samples: (0.5 + 1.0) * 4 / 2 each */
	ck_assert_msg(REL(r.iteration_time_s, 2 * 3.0) < 1e-9, "%g",
		      r.iteration_time_s);
	tp_report_release(&r);
	tp_sim_free(sim);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* Over capacity: infeasible, the report names the device, the excess, the
 * dominant term and a change that fits (here a ZeRO stage). */
START_TEST(test_infeasible_reason)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_plan p;
	struct tp_report r;
	struct tp_sim *sim;

	toy_cluster(&c, 1, 8, 100e9, 0, 0);
	/* 6e9 parameters: 96 GB of state per replica, 16 bytes each */
	chain_model(&m, 1, 1e9, 1.2e10, 0, 8);
	plain_plan(&p, &m, 8, 1, 1, TP_SYNC_RING, 0);
	sim = new_sim(&m, &c, true);
	tp_report_init(&r);
	run(sim, &p, &r);
	ck_assert(!r.feasible);
	ck_assert_uint_lt(r.worst_device, 8);
	ck_assert(r.over_bytes > 0);
	ck_assert_msg(strstr(r.reason, "node0/gpu") &&
			      strstr(r.reason, "optimizer state") &&
			      strstr(r.reason, "zero=1"),
		      "%s", r.reason);
	tp_report_release(&r);
	p.zero = 1;
	tp_report_init(&r);
	run(sim, &p, &r);
	ck_assert(r.feasible);
	tp_report_release(&r);
	tp_sim_free(sim);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* ZeRO-3 gathers weights before every forward and backward: slower. */
START_TEST(test_zero3_costs_time)
{
	struct tp_cluster c;
	struct tp_model m;
	double t[4];

	toy_cluster(&c, 1, 4, 10e9, 0, 1e-6);
	chain_model(&m, 4, 1e11, 1e9, 1e6, 16);
	for (uint32_t z = 0; z <= 3; z++) {
		struct tp_plan p;
		struct tp_report r;
		struct tp_sim *sim;
		plain_plan(&p, &m, 4, 1, 4, TP_SYNC_RING, z);
		sim = new_sim(&m, &c, true);
		tp_report_init(&r);
		run(sim, &p, &r);
		t[z] = r.iteration_time_s;
		tp_report_release(&r);
		tp_sim_free(sim);
		tp_plan_release(&p);
	}
	ck_assert(t[3] > t[0] * 1.05);
	ck_assert(t[1] > 0 && t[2] > 0);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

struct thr {
	const struct tp_sim *sim;
	const struct tp_plan *plan;
	double t;
	int st;
};

static void *thr_run(void *arg)
{
	struct thr *x = arg;
	struct tp_sim_scratch *s = tp_sim_scratch_new(x->sim);
	struct tp_report r;
	struct tp_error err;

	tp_report_init(&r);
	x->st = s ? 0 : -1;
	for (int i = 0; i < 20 && !x->st; i++)
		x->st = tp_sim_run(x->sim, x->plan, s, &r, NULL, &err);
	x->t = r.iteration_time_s;
	tp_report_release(&r);
	tp_sim_scratch_free(s);
	return NULL;
}

/* tp_sim_run from several threads at once, each with its scratch. */
START_TEST(test_threads)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_plan p[2];
	struct tp_sim *sim;
	struct thr x[4];
	pthread_t th[4];
	double ref[2];

	toy_cluster(&c, 2, 4, 100e9, 25e9, 1e-6);
	chain_model(&m, 8, 1e11, 1e8, 1e7, 16);
	plain_plan(&p[0], &m, 8, 1, 2, TP_SYNC_HIERARCHICAL, 0);
	plain_plan(&p[1], &m, 4, 2, 4, TP_SYNC_RING, 1);
	sim = new_sim(&m, &c, true);
	for (int k = 0; k < 2; k++) {
		struct tp_report r;
		tp_report_init(&r);
		run(sim, &p[k], &r);
		ref[k] = r.iteration_time_s;
		tp_report_release(&r);
	}
	for (int k = 0; k < 4; k++) {
		x[k] = (struct thr){sim, &p[k % 2], 0, 0};
		ck_assert_int_eq(pthread_create(&th[k], NULL, thr_run, &x[k]),
				 0);
	}
	for (int k = 0; k < 4; k++) {
		pthread_join(th[k], NULL);
		ck_assert_int_eq(x[k].st, 0);
		ck_assert(x[k].t == ref[k % 2]);
	}
	tp_sim_free(sim);
	tp_plan_release(&p[0]);
	tp_plan_release(&p[1]);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

START_TEST(test_strategy_parse)
{
	struct tp_strategy s;
	struct tp_error err;
	char buf[256];

	ck_assert_int_eq(tp_strategy_parse("", &s, &err), TP_OK);
	ck_assert_uint_eq(s.tp, 1);
	ck_assert_uint_eq(s.pp, 1);
	ck_assert_uint_eq(s.dp, 0);
	ck_assert_uint_eq(s.mb, 1);
	ck_assert_int_eq(s.schedule, TP_SCHEDULE_1F1B);
	ck_assert_int_eq(s.sync, -1);
	ck_assert_int_eq(tp_strategy_parse("tp=8, pp=8,dp=16,mb=1,gbs=1536,"
					   "schedule=interleaved:3,"
					   "recompute=selective,sp=on,zero=1,"
					   "sync=hierarchical",
					   &s, &err),
			 TP_OK);
	ck_assert_uint_eq(s.tp, 8);
	ck_assert_uint_eq(s.dp, 16);
	ck_assert_int_eq(s.gbs, 1536);
	ck_assert_int_eq(s.schedule, TP_SCHEDULE_INTERLEAVED);
	ck_assert_uint_eq(s.virtual_stages, 3);
	ck_assert_int_eq(s.recompute, TP_RECOMPUTE_SELECTIVE);
	ck_assert(s.sp);
	ck_assert_uint_eq(s.zero, 1);
	ck_assert_int_eq(s.sync, TP_SYNC_HIERARCHICAL);
	tp_strategy_format(&s, buf, sizeof(buf));
	ck_assert_str_eq(buf, "tp=8,pp=8,dp=16,mb=1,gbs=1536,"
			      "schedule=interleaved:3,recompute=selective,"
			      "sp=on,zero=1,sync=hierarchical");
	{
		struct tp_strategy s2;
		ck_assert_int_eq(tp_strategy_parse(buf, &s2, &err), TP_OK);
		ck_assert(memcmp(&s, &s2, sizeof(s)) == 0);
	}
	/* the canonical form of the defaults reads back */
	tp_strategy_default(&s);
	tp_strategy_format(&s, buf, sizeof(buf));
	ck_assert_str_eq(buf, "tp=1,pp=1,dp=auto,mb=1,gbs=model,schedule=1f1b,"
			      "recompute=none,sp=off,zero=0,sync=auto");
	{
		struct tp_strategy s2, d;
		tp_strategy_default(&d);
		ck_assert_int_eq(tp_strategy_parse(buf, &s2, &err), TP_OK);
		ck_assert(memcmp(&d, &s2, sizeof(d)) == 0);
	}
	ck_assert_int_eq(tp_strategy_parse("tp=0", &s, &err), TP_EUSAGE);
	ck_assert_int_eq(tp_strategy_parse("tp=2,tp=4", &s, &err), TP_EUSAGE);
	ck_assert(strstr(err.msg, "twice"));
	ck_assert_int_eq(tp_strategy_parse("zero=4", &s, &err), TP_EUSAGE);
	ck_assert_int_eq(tp_strategy_parse("tp", &s, &err), TP_EUSAGE);
	ck_assert_int_eq(tp_strategy_parse("schedule=interleaved:1", &s, &err),
			 TP_EUSAGE);
	ck_assert_int_eq(tp_strategy_parse("bogus=1", &s, &err), TP_EUSAGE);
	ck_assert(strstr(err.msg, "unknown key \"bogus\""));
}
END_TEST

/* Expansion: Megatron rank order, chunk c on stage c mod pp. */
START_TEST(test_strategy_expand)
{
	struct tp_gpt_dims d;
	struct tp_model m;
	struct tp_cluster c;
	struct tp_strategy s;
	struct tp_plan p;
	struct tp_error err;

	tp_gpt_dims_default(&d);
	d.hidden = 256;
	d.heads = 8;
	d.layers = 8;
	d.seq = 128;
	d.vocab = 1000;
	d.batch = 16;
	tp_model_init(&m);
	ck_assert_int_eq(tp_build_gpt(&d, &m, &err), TP_OK);
	toy_cluster(&c, 2, 4, 100e9, 25e9, 1e-6);
	tp_plan_init(&p);
	ck_assert_int_eq(tp_strategy_parse("tp=2,pp=2,mb=2,"
					   "schedule=interleaved:2,"
					   "recompute=full",
					   &s, &err),
			 TP_OK);
	ck_assert_int_eq(tp_strategy_to_plan(&s, &m, &c, &p, &err), TP_OK);
	ck_assert_uint_eq(p.groups.n, 4);
	ck_assert_uint_eq(p.micro_batches, 16 / (2 * 2));
	ck_assert_uint_eq(p.virtual_stages, 2);
	for (uint32_t g = 0; g < 4; g++) {
		const struct tp_plan_group *gr = &p.groups.v[g];
		ck_assert_uint_eq(gr->dp, 2);
		ck_assert_uint_eq(gr->tp, 2);
		ck_assert_uint_eq(tp_plan_group_devs(&p, g)[0], (g % 2) * 4);
		ck_assert_int_eq(gr->recompute, TP_RECOMPUTE_FULL);
		ck_assert_int_eq(gr->sync, TP_SYNC_RING); /* within a node */
	}
	/* the embedding goes with the first chunk, the head with the last */
	ck_assert_uint_eq(tp_plan_group_ops(&p, 0)[0],
			  tp_model_find_op(&m, "embedding"));
	ck_assert_int_eq(tp_plan_validate(&p, &m, &c, &err), TP_OK);
	/* a replica set across nodes gets the hierarchical all-reduce */
	ck_assert_int_eq(tp_strategy_parse("tp=1,pp=1", &s, &err), TP_OK);
	ck_assert_int_eq(tp_strategy_to_plan(&s, &m, &c, &p, &err), TP_OK);
	ck_assert_int_eq(p.groups.v[0].sync, TP_SYNC_HIERARCHICAL);
	/* inconsistent strategies */
	ck_assert_int_eq(tp_strategy_parse("tp=3", &s, &err), TP_OK);
	ck_assert_int_eq(tp_strategy_to_plan(&s, &m, &c, &p, &err), TP_EINPUT);
	ck_assert(strstr(err.msg, "attention heads"));
	ck_assert_int_eq(tp_strategy_parse("tp=2,pp=2,dp=4", &s, &err), TP_OK);
	ck_assert_int_eq(tp_strategy_to_plan(&s, &m, &c, &p, &err), TP_EINPUT);
	ck_assert(strstr(err.msg, "tp*pp*dp"));
	ck_assert_int_eq(tp_strategy_parse("mb=3", &s, &err), TP_OK);
	ck_assert_int_eq(tp_strategy_to_plan(&s, &m, &c, &p, &err), TP_EINPUT);
	ck_assert(strstr(err.msg, "not divisible"));
	ck_assert_int_eq(tp_strategy_parse("pp=2,schedule=interleaved:8", &s,
					   &err),
			 TP_OK);
	ck_assert_int_eq(tp_strategy_to_plan(&s, &m, &c, &p, &err), TP_EINPUT);
	ck_assert(strstr(err.msg, "layers"));
	ck_assert_int_eq(tp_strategy_parse("tp=2,sp=on,zero=3", &s, &err),
			 TP_OK);
	ck_assert_int_eq(tp_strategy_to_plan(&s, &m, &c, &p, &err), TP_OK);
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* A stage boundary of a GPT carries each block's output once per
 * direction: the gpt builder feeds it to both the next block's ln1 and
 * its residual drop1 (two model edges, one tensor).  Two stages, one
 * replica (no gradient sync): the links carry, per sample, seq x hidden
 * bf16 values forward and as many gradients backward, on every channel
 * of the route.  (Twice that before the edges into a group were counted
 * once per source op.) */
START_TEST(test_stage_boundary_once)
{
	struct tp_gpt_dims d;
	struct tp_model m;
	struct tp_cluster c;
	struct tp_strategy s;
	struct tp_plan p;
	struct tp_report r;
	struct tp_sim *sim;
	struct tp_error err;
	double carried = 0, want;

	tp_gpt_dims_default(&d);
	d.hidden = 256;
	d.heads = 8;
	d.layers = 4;
	d.seq = 128;
	d.vocab = 1000;
	d.batch = 8;
	tp_model_init(&m);
	ck_assert_int_eq(tp_build_gpt(&d, &m, &err), TP_OK);
	toy_cluster(&c, 1, 2, 100e9, 25e9, 1e-6);
	tp_plan_init(&p);
	ck_assert_int_eq(tp_strategy_parse("pp=2,dp=1,mb=1", &s, &err), TP_OK);
	ck_assert_int_eq(tp_strategy_to_plan(&s, &m, &c, &p, &err), TP_OK);
	sim = new_sim(&m, &c, true);
	tp_report_init(&r);
	run(sim, &p, &r);
	for (uint32_t k = 0; k < r.n_links; k++)
		carried += r.links[k].bytes;
	want = 2.0 * (double)(d.batch * d.seq * d.hidden) * 2 *
	       tp_test_route(&c, 0, 1)->n;
	ck_assert_msg(fabs(carried / want - 1) < 1e-9, "carried %g, want %g",
		      carried, want);
	tp_report_release(&r);
	tp_sim_free(sim);
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* A small GPT (hidden 256, 8 heads, 4 layers, vocab 1000, batch 8) of
 * sequence seq in dtype dt, under strategy on nodes x gpus toy devices,
 * simulated with the options of new_sim plus the runtime behaviour
 * fields set in rt (a bit each: 1 tp_overlap, 2 fused_attention, 4 tf32,
 * 8 no overlap_grad_sync_pipeline), 64 kB gradient buckets; the
 * report's iteration time and
 * device 0's peak memory. */
static void gpt_rt_run(int64_t seq, enum tp_dtype dt, uint32_t nodes,
		       uint32_t gpus, const char *strategy, unsigned rt,
		       double *iter, double *peak)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_strategy s;
	struct tp_plan p;
	struct tp_report r;
	struct tp_sim_options o;
	struct tp_sim *sim;
	struct tp_error err;

	small_gpt(&m, seq, dt);
	toy_cluster(&c, nodes, gpus, 100e9, 25e9, 1e-6);
	tp_plan_init(&p);
	ck_assert_int_eq(tp_strategy_parse(strategy, &s, &err), TP_OK);
	ck_assert_int_eq(tp_strategy_to_plan(&s, &m, &c, &p, &err), TP_OK);
	tp_sim_options_default(&o);
	o.params.p2p_latency_s = 0;
	o.params.collective_latency_s = 0;
	o.params.gemm_sustained = 1;
	o.params.grad_bucket_bytes = 64e3; /* several buckets */
	o.params.tp_overlap = rt & 1;
	o.params.fused_attention = (rt & 2) != 0;
	o.params.tf32 = (rt & 4) != 0;
	o.params.overlap_grad_sync_pipeline = !(rt & 8);
	sim = tp_sim_new(&m, &c, &o, &err);
	ck_assert_msg(sim != NULL, "%s", err.msg);
	tp_report_init(&r);
	run(sim, &p, &r);
	*iter = r.iteration_time_s;
	*peak = r.devices[0].peak_memory_bytes;
	tp_report_release(&r);
	tp_sim_free(sim);
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
}

/* tf32: an fp32 GPT's GEMMs at half the bf16 rate (toy: 50 of 10 TFLOP/s
 * fp32): much faster; a bf16 job unchanged. */
START_TEST(test_runtime_tf32)
{
	double off, on, pk, b_off, b_on;

	gpt_rt_run(512, TP_DTYPE_FP32, 1, 1, "dp=1,mb=1", 0, &off, &pk);
	gpt_rt_run(512, TP_DTYPE_FP32, 1, 1, "dp=1,mb=1", 4, &on, &pk);
	ck_assert_msg(on < 0.5 * off, "tf32 %g s, fp32 %g s", on, off);
	gpt_rt_run(512, TP_DTYPE_BF16, 1, 1, "dp=1,mb=1", 0, &b_off, &pk);
	gpt_rt_run(512, TP_DTYPE_BF16, 1, 1, "dp=1,mb=1", 4, &b_on, &pk);
	ck_assert(b_on == b_off);
	/* Intel Gaudi and AMD Instinct: no TF32 figure, the fp32 rate */
	toy_name = "Gaudi3-toy";
	gpt_rt_run(512, TP_DTYPE_FP32, 1, 1, "dp=1,mb=1", 4, &on, &pk);
	ck_assert_msg(on == off, "Gaudi tf32 %g s, fp32 %g s", on, off);
	toy_name = "MI300X-toy";
	gpt_rt_run(512, TP_DTYPE_FP32, 1, 1, "dp=1,mb=1", 4, &on, &pk);
	toy_name = "toy";
	ck_assert_msg(on == off, "MI300X tf32 %g s, fp32 %g s", on, off);
}
END_TEST

/* fused_attention: no quadratic saved activations (softmax output,
 * dropout mask and output: (2e + 1) a s^2 per layer and sample), and a
 * faster attention. */
START_TEST(test_runtime_fused_attention)
{
	double off, on, pk_off, pk_on;
	double quad = (2 * 2 + 1) * 8.0 * 2048 * 2048 * 4; /* mb 1 */

	gpt_rt_run(2048, TP_DTYPE_BF16, 1, 1, "dp=1,mb=1,recompute=none", 0,
		   &off, &pk_off);
	gpt_rt_run(2048, TP_DTYPE_BF16, 1, 1, "dp=1,mb=1,recompute=none", 2,
		   &on, &pk_on);
	ck_assert_msg(pk_off - pk_on > 0.99 * quad, "peak %g -> %g (%g)",
		      pk_off, pk_on, quad);
	ck_assert_msg(on < off, "fused %g s, unfused %g s", on, off);
}
END_TEST

/* tp_overlap: tp=2, the backward's collectives hide behind the weight-
 * gradient GEMMs: a faster iteration. */
START_TEST(test_runtime_tp_overlap)
{
	double off, on, pk;

	gpt_rt_run(512, TP_DTYPE_BF16, 1, 2, "tp=2,dp=1,mb=1", 0, &off, &pk);
	gpt_rt_run(512, TP_DTYPE_BF16, 1, 2, "tp=2,dp=1,mb=1", 1, &on, &pk);
	ck_assert_msg(on < 0.99 * off, "overlap %g s, serial %g s", on, off);
}
END_TEST

/* overlap_grad_sync_pipeline off: a pipelined plan (pp=2, dp=2 over two
 * nodes) reduces its gradients after the flush: slower; an unpipelined
 * one (dp=4) keeps its overlap. */
START_TEST(test_runtime_dp_overlap_pipeline)
{
	double off, on, pk;

	gpt_rt_run(512, TP_DTYPE_BF16, 2, 2, "pp=2,dp=2,mb=1", 0, &on, &pk);
	gpt_rt_run(512, TP_DTYPE_BF16, 2, 2, "pp=2,dp=2,mb=1", 8, &off, &pk);
	ck_assert_msg(off > on, "after flush %g s, overlapped %g s", off, on);
	gpt_rt_run(512, TP_DTYPE_BF16, 2, 2, "dp=4,mb=1", 0, &on, &pk);
	gpt_rt_run(512, TP_DTYPE_BF16, 2, 2, "dp=4,mb=1", 8, &off, &pk);
	ck_assert(off == on);
}
END_TEST

/* Random plans: contiguous groups on random device subsets (overlapping
 * or not), random dp x tp, uneven shares, every schedule, recomputation
 * and ZeRO stage.  Every valid plan must simulate (no deadlock) with
 * times that add up: the iteration is at least every device's busy time,
 * and idle + compute + communication = iteration per device. */
START_TEST(test_random_plans)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_sim *sim;
	struct tp_sim_scratch *sc;
	struct tp_rng rng;
	struct tp_report r;
	uint32_t n_ok = 0, n_interleaved = 0;

	toy_cluster(&c, 2, 4, 100e9, 25e9, 2e-6);
	chain_model(&m, 12, 1e11, 1e8, 1e7, 48);
	sim = new_sim(&m, &c, true);
	sc = tp_sim_scratch_new(sim);
	tp_rng_seed(&rng, 7);
	tp_report_init(&r);
	for (int it = 0; it < 300; it++) {
		struct tp_plan p;
		struct tp_error err;
		uint32_t G = 1 + (uint32_t)tp_rng_below(&rng, 5), first = 0;
		static const uint32_t mbs[] = {1, 2, 3, 4, 6, 8};
		enum tp_status st;

		tp_plan_init(&p);
		p.global_batch = 48;
		p.micro_batches = mbs[tp_rng_below(&rng, 6)];
		p.schedule = (enum tp_schedule)tp_rng_below(&rng, 3);
		p.virtual_stages = p.schedule == TP_SCHEDULE_INTERLEAVED ? 2 : 1;
		p.zero = (uint32_t)tp_rng_below(&rng, 4);
		for (uint32_t g = 0; g < G; g++) {
			uint32_t n_ops = g + 1 == G ? 12 - first
						    : 1 + (uint32_t)tp_rng_below(
							      &rng, (12 - first) -
									    (G - g - 1));
			uint32_t ops[12], devs[8], perm[8], nd, tp, dp;
			double sh[8], sum = 0;
			static const uint32_t sizes[] = {1, 2, 4, 8};
			for (uint32_t k = 0; k < n_ops; k++)
				ops[k] = first + k;
			first += n_ops;
			nd = sizes[tp_rng_below(&rng, 4)];
			tp = 1u << tp_rng_below(&rng, 2);
			if (tp > nd)
				tp = nd;
			dp = nd / tp;
			for (uint32_t k = 0; k < 8; k++)
				perm[k] = k;
			for (uint32_t k = 0; k < 8; k++) {
				uint32_t j = k + (uint32_t)tp_rng_below(&rng,
									8 - k);
				uint32_t x = perm[k];
				perm[k] = perm[j];
				perm[j] = x;
			}
			for (uint32_t k = 0; k < nd; k++)
				devs[k] = perm[k];
			for (uint32_t k = 0; k < dp; k++)
				sum += (sh[k] = 1 + (double)tp_rng_below(&rng, 3));
			for (uint32_t k = 0; k < dp; k++)
				sh[k] /= sum;
			ck_assert_int_eq(
			    tp_plan_add_group_degrees(
				&p, ops, n_ops, devs, nd,
				&(struct tp_plan_degrees){dp, 1, tp}, sh, NULL),
			    TP_OK);
			p.groups.v[g].sync = (enum tp_sync)tp_rng_below(&rng, 3);
			p.groups.v[g].recompute =
				(enum tp_recompute)tp_rng_below(&rng, 3);
		}
		st = tp_sim_run(sim, &p, sc, &r, NULL, &err);
		if (st == TP_EINPUT) {
			/* uneven shares must give whole samples; an
			 * interleaved order needs a pipeline shape */
			ck_assert_msg(strstr(err.msg, "whole number") ||
					      strstr(err.path, "schedule"),
				      "%s %s", err.path, err.msg);
			tp_plan_release(&p);
			continue;
		}
		ck_assert_msg(st == TP_OK, "%d: %s %s", it, err.path, err.msg);
		n_ok++;
		if (p.schedule == TP_SCHEDULE_INTERLEAVED)
			n_interleaved++;
		ck_assert(isfinite(r.iteration_time_s) && r.iteration_time_s > 0);
		for (uint32_t d = 0; d < r.n_devices; d++) {
			const struct tp_report_device *x = &r.devices[d];
			ck_assert(x->compute_s >= 0 && x->communication_s >= 0 &&
				  x->idle_s >= 0);
			ck_assert_msg(x->compute_s + x->communication_s <=
					      r.iteration_time_s * (1 + 1e-9),
				      "%d dev %u: %g + %g > %g", it, d,
				      x->compute_s, x->communication_s,
				      r.iteration_time_s);
			ck_assert(REL(x->compute_s + x->communication_s +
					      x->idle_s,
				      r.iteration_time_s) < 1e-9);
		}
		tp_plan_release(&p);
	}
	ck_assert_uint_gt(n_ok, 60);
	ck_assert_uint_gt(n_interleaved, 0);
	tp_report_release(&r);
	tp_sim_scratch_free(sc);
	tp_sim_free(sim);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* A random valid-looking plan like test_random_plans's: G contiguous
 * groups over the 12 ops on random subsets of 8 devices. */
static void random_plan(struct tp_rng *rng, struct tp_plan *p)
{
	uint32_t G = 1 + (uint32_t)tp_rng_below(rng, 5), first = 0;
	static const uint32_t mbs[] = {1, 2, 3, 4, 6, 8};

	p->global_batch = 48;
	p->micro_batches = mbs[tp_rng_below(rng, 6)];
	p->schedule = (enum tp_schedule)tp_rng_below(rng, 3);
	p->virtual_stages = p->schedule == TP_SCHEDULE_INTERLEAVED ? 2 : 1;
	p->zero = (uint32_t)tp_rng_below(rng, 4);
	for (uint32_t g = 0; g < G; g++) {
		uint32_t n_ops = g + 1 == G ? 12 - first
					    : 1 + (uint32_t)tp_rng_below(
						      rng, (12 - first) -
								   (G - g - 1));
		uint32_t ops[12], devs[8], perm[8], nd, tp, dp;
		double sh[8], sum = 0;
		static const uint32_t sizes[] = {1, 2, 4, 8};
		for (uint32_t k = 0; k < n_ops; k++)
			ops[k] = first + k;
		first += n_ops;
		nd = sizes[tp_rng_below(rng, 4)];
		tp = 1u << tp_rng_below(rng, 2);
		if (tp > nd)
			tp = nd;
		dp = nd / tp;
		for (uint32_t k = 0; k < 8; k++)
			perm[k] = k;
		for (uint32_t k = 0; k < 8; k++) {
			uint32_t j = k + (uint32_t)tp_rng_below(rng, 8 - k);
			uint32_t x = perm[k];
			perm[k] = perm[j];
			perm[j] = x;
		}
		for (uint32_t k = 0; k < nd; k++)
			devs[k] = perm[k];
		for (uint32_t k = 0; k < dp; k++)
			sum += (sh[k] = 1 + (double)tp_rng_below(rng, 3));
		for (uint32_t k = 0; k < dp; k++)
			sh[k] /= sum;
		ck_assert_int_eq(tp_plan_add_group_degrees(
				     p, ops, n_ops, devs, nd,
				     &(struct tp_plan_degrees){dp, 1, tp}, sh,
				     NULL),
				 TP_OK);
		p->groups.v[g].sync = (enum tp_sync)tp_rng_below(rng, 3);
		p->groups.v[g].recompute = (enum tp_recompute)tp_rng_below(rng, 3);
	}
}

/* A scratch reused across many plans gives bit for bit what a fresh one
 * gives (nothing of an earlier run leaks into the next: flows, cached
 * lane costs); the lower bound never exceeds the iteration time; a run
 * with a cutoff stops exactly when the bound reaches it and otherwise
 * equals tp_sim_run. */
START_TEST(test_reuse_and_lower_bound)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_sim *sim;
	struct tp_sim_scratch *reused;
	struct tp_rng rng;
	struct tp_report r1, r2, r3;
	uint32_t n_ok = 0, n_tight = 0, n_oom = 0;

	toy_cluster(&c, 2, 4, 100e9, 25e9, 2e-6);
	chain_model(&m, 12, 1e11, 1e8, 1e7, 48);
	sim = new_sim(&m, &c, true);
	reused = tp_sim_scratch_new(sim);
	tp_rng_seed(&rng, 11);
	tp_report_init(&r1);
	tp_report_init(&r2);
	tp_report_init(&r3);
	for (int it = 0; it < 300; it++) {
		struct tp_plan p;
		struct tp_error err;
		struct tp_sim_scratch *fresh = tp_sim_scratch_new(sim);
		double lb = -1;
		struct tp_sim_cut cut;
		enum tp_status st;

		tp_plan_init(&p);
		random_plan(&rng, &p);
		st = tp_sim_run(sim, &p, reused, &r1, NULL, &err);
		if (st == TP_EINPUT) {
			tp_plan_release(&p);
			tp_sim_scratch_free(fresh);
			continue;
		}
		ck_assert_int_eq(st, TP_OK);
		n_ok++;
		ck_assert_int_eq(tp_sim_run(sim, &p, fresh, &r2, NULL, &err),
				 TP_OK);
		ck_assert_msg(r1.iteration_time_s == r2.iteration_time_s,
			      "plan %d: %.17g reused, %.17g fresh", it,
			      r1.iteration_time_s, r2.iteration_time_s);
		ck_assert(r1.feasible == r2.feasible);
		for (uint32_t d = 0; d < r1.n_devices; d++) {
			ck_assert(r1.devices[d].peak_memory_bytes ==
				  r2.devices[d].peak_memory_bytes);
			ck_assert(r1.devices[d].compute_s ==
				  r2.devices[d].compute_s);
		}
		ck_assert_int_eq(tp_sim_lower_bound(sim, &p, reused, &lb, &err),
				 TP_OK);
		ck_assert(lb > 0);
		ck_assert_msg(lb <= r1.iteration_time_s * (1 + 1e-12),
			      "plan %d: bound %g above %g", it, lb,
			      r1.iteration_time_s);
		if (lb >= 0.9 * r1.iteration_time_s)
			n_tight++;
		/* at the bound: stops; just above: simulates as usual, or
		   stops before the event simulation when a device is out of
		   memory (exactly when the report says infeasible) */
		ck_assert_int_eq(tp_sim_run_bounded(sim, &p, reused, lb, &r3,
						    NULL, &cut, &err),
				 TP_OK);
		ck_assert(cut.bounded && !cut.out_of_memory);
		ck_assert(cut.lower_bound_s == lb);
		ck_assert_int_eq(tp_sim_run_bounded(sim, &p, fresh,
						    nextafter(lb, INFINITY),
						    &r3, NULL, &cut, &err),
				 TP_OK);
		ck_assert(cut.bounded == !r1.feasible);
		ck_assert(cut.out_of_memory == !r1.feasible);
		if (r1.feasible) {
			ck_assert(r3.iteration_time_s == r1.iteration_time_s);
		} else {
			n_oom++;
			ck_assert(REL(cut.over_fraction,
				      r1.over_bytes /
					      r1.devices[r1.worst_device]
						      .capacity_bytes) < 1e-12);
		}
		tp_plan_release(&p);
		tp_sim_scratch_free(fresh);
	}
	ck_assert_uint_gt(n_ok, 60);
	/* not trivially loose: often within 10% */
	ck_assert_uint_gt(n_tight, n_ok / 4);
	(void)n_oom;
	tp_report_release(&r1);
	tp_report_release(&r2);
	tp_report_release(&r3);
	tp_sim_scratch_free(reused);
	tp_sim_free(sim);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST


/* A data-parallel group of ops [first, first + cnt) on up to nd of the
 * cluster's n_dev devices (fewer when the micro-batch has fewer samples),
 * from a random device by the given stride, with whole samples spread
 * unevenly over the replicas. */
static void add_random_dp_group(struct tp_rng *rng, const struct tp_model *m,
				struct tp_plan *p, uint32_t first, uint32_t cnt,
				uint32_t nd, uint32_t n_dev, uint32_t stride)
{
	uint32_t devs[64], start = (uint32_t)tp_rng_below(rng, n_dev);
	uint32_t mb = (uint32_t)m->global_batch / p->micro_batches;
	double sh[64];

	while (nd > mb)
		nd /= 2;
	for (uint32_t k = 0; k < nd; k++) {
		devs[k] = (start + stride * k) % n_dev;
		sh[k] = 1;
	}
	for (uint32_t k = nd; k < mb; k++)
		sh[tp_rng_below(rng, nd)] += 1;
	for (uint32_t k = 0; k < nd; k++)
		sh[k] /= mb;
	ck_assert_int_eq(tp_plan_add_group_degrees(
				 p, m->topo + first, cnt, devs, nd,
				 &(struct tp_plan_degrees){nd, 1, 1}, sh, NULL),
			 TP_OK);
}

/* GPT-3 13B (data/models) on 4 DGX-H100 + 4 DGX-A100 (64 GPUs, two
 * GPU types): the fixture of the tests comparing the fast scratch with
 * the reference one. */
static void gpt3_13b_mixed(struct tp_cluster *c, struct tp_model *m)
{
	static const char *const specs[] = {"dgx-h100:4", "dgx-a100:4"};
	struct tp_error err;

	tp_cluster_init(c);
	ck_assert_int_eq(tp_build_topology(specs, 2, NULL, 1, c, &err), TP_OK);
	tp_model_init(m);
	ck_assert_int_eq(tp_model_load_file(tp_data_file("models/gpt3-13b.json"),
					    NULL, m, &err),
			 TP_OK);
}

/* A random plan of min_groups to min_groups + 3 contiguous groups of
 * m's ops, 1F1B with 1, 2, 4 or 8 micro-batches, each group data
 * parallel over nd_base << (0 .. nd_shifts - 1) devices
 * (add_random_dp_group with n_dev, stride).  p is initialised. */
static void random_dp_plan(struct tp_rng *rng, const struct tp_model *m,
			   struct tp_plan *p, uint32_t min_groups,
			   uint32_t nd_base, uint32_t nd_shifts,
			   uint32_t n_dev, uint32_t stride)
{
	static const uint32_t mbs[] = {1, 2, 4, 8};
	uint32_t n = (uint32_t)m->ops.n, first = 0;
	uint32_t G = min_groups + (uint32_t)tp_rng_below(rng, 4);

	p->global_batch = m->global_batch;
	p->micro_batches = mbs[tp_rng_below(rng, 4)];
	p->schedule = TP_SCHEDULE_1F1B;
	p->virtual_stages = 1;
	for (uint32_t g = 0; g < G; g++) {
		uint32_t cnt = g + 1 == G
				       ? n - first
				       : 1 + (uint32_t)tp_rng_below(
						     rng, (n - first) - (G - g - 1));
		uint32_t nd = nd_base << tp_rng_below(rng, nd_shifts);
		add_random_dp_group(rng, m, p, first, cnt, nd, n_dev, stride);
		first += cnt;
	}
}

/* Random plans of VGG-19 on the TAG testbed (16 heterogeneous GPUs):
 * contiguous groups on random device subsets with uneven shares, so that
 * many transfers and collectives share links.  A scratch reused across
 * plans gives what a fresh one gives, and the bound holds. */
START_TEST(test_reuse_heterogeneous)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_error err;
	struct tp_sim *sim;
	struct tp_sim_scratch *reused;
	struct tp_sim_options o;
	struct tp_rng rng;
	struct tp_report r1, r2;
	uint32_t n_ok = 0, n_oom = 0;

	tp_cluster_init(&c);
	ck_assert_int_eq(tp_topology_load_file(tp_data_file("tag-testbed.json"),
					       NULL, &c, &err),
			 TP_OK);
	ck_assert_int_eq(tp_build_zoo("vgg19", 256, -1, &m, &err), TP_OK);
	tp_sim_options_default(&o);
	sim = tp_sim_new(&m, &c, &o, &err);
	ck_assert_ptr_nonnull(sim);
	reused = tp_sim_scratch_new(sim);
	tp_rng_seed(&rng, 3);
	tp_report_init(&r1);
	tp_report_init(&r2);
	for (int it = 0; it < 60; it++) {
		struct tp_plan p;
		struct tp_sim_scratch *fresh = tp_sim_scratch_new(sim);
		double lb = -1;
		struct tp_sim_cut cut;
		enum tp_status st;

		tp_plan_init(&p);
		random_dp_plan(&rng, &m, &p, 1, 1, 5, 16, 3);
		st = tp_sim_run(sim, &p, reused, &r1, NULL, &err);
		if (st == TP_EINPUT) {
			tp_plan_release(&p);
			tp_sim_scratch_free(fresh);
			continue;
		}
		ck_assert_msg(st == TP_OK, "%s", err.msg);
		n_ok++;
		ck_assert_int_eq(tp_sim_run(sim, &p, fresh, &r2, NULL, &err),
				 TP_OK);
		ck_assert_msg(r1.iteration_time_s == r2.iteration_time_s,
			      "plan %d: %.17g reused, %.17g fresh", it,
			      r1.iteration_time_s, r2.iteration_time_s);
		ck_assert_int_eq(tp_sim_lower_bound(sim, &p, reused, &lb, &err),
				 TP_OK);
		ck_assert(lb > 0 && lb <= r1.iteration_time_s * (1 + 1e-12));
		/* a cutoff above the bound: out of memory exactly when
		   infeasible */
		ck_assert_int_eq(tp_sim_run_bounded(sim, &p, fresh, 2 * lb, &r2,
						    NULL, &cut, &err),
				 TP_OK);
		ck_assert(cut.out_of_memory == !r1.feasible);
		if (!r1.feasible)
			n_oom++;
		tp_plan_release(&p);
		tp_sim_scratch_free(fresh);
	}
	ck_assert_uint_gt(n_ok, 50);
	ck_assert_uint_gt(n_oom, 0);
	tp_report_release(&r1);
	tp_report_release(&r2);
	tp_sim_scratch_free(reused);
	tp_sim_free(sim);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* The engine's shortcuts (the memo of fair shares, a bundle's private
 * classes skipped, the earliest bundle end kept between events) change
 * no result: random plans whose groups have different dp (every lane
 * simulated, a transfer per pair of overlapping replicas: tens of
 * bundles at once, the plans the search meets near its best ones) of
 * GPT-3 13B on 4 DGX-H100 and 4 DGX-A100 give the same report, byte
 * for byte, with and without them (tp_sim_scratch_reference), under
 * runtime none and under megatron-lm-2022 (per-flow caps on pipeline
 * transfers past the socket buffer). */
START_TEST(test_engine_shortcuts)
{
	static const char *const rts[] = {"none", "megatron-lm-2022"};
	struct tp_cluster c;
	struct tp_model m;
	struct tp_error err;
	struct tp_rng rng;
	struct tp_report r1, r2;
	struct tp_strbuf j1, j2;
	uint32_t n_ok = 0;

	gpt3_13b_mixed(&c, &m);
	tp_rng_seed(&rng, 7);
	tp_report_init(&r1);
	tp_report_init(&r2);
	tp_strbuf_init(&j1);
	tp_strbuf_init(&j2);
	for (int k = 0; k < 2; k++) {
		struct tp_sim_options o;
		struct tp_runtime rt;
		struct tp_sim *sim;
		struct tp_sim_scratch *fast, *ref;

		tp_sim_options_default(&o);
		ck_assert_int_eq(tp_runtime_find(rts[k], &rt, &err), TP_OK);
		tp_sim_params_runtime(&o.params, &rt);
		sim = tp_sim_new(&m, &c, &o, &err);
		ck_assert_ptr_nonnull(sim);
		fast = tp_sim_scratch_new(sim);
		ref = tp_sim_scratch_new(sim);
		tp_sim_scratch_reference(ref, true);
		for (int it = 0; it < 20; it++) {
			struct tp_plan p;
			enum tp_status st;

			tp_plan_init(&p);
			random_dp_plan(&rng, &m, &p, 2, 8, 4, 64, 5);
			st = tp_sim_run(sim, &p, fast, &r1, NULL, &err);
			if (st == TP_EINPUT) {
				tp_plan_release(&p);
				continue;
			}
			ck_assert_msg(st == TP_OK, "%s", err.msg);
			ck_assert_int_eq(tp_sim_run(sim, &p, ref, &r2, NULL, &err),
					 TP_OK);
			tp_strbuf_reset(&j1);
			tp_strbuf_reset(&j2);
			tp_report_write(&r1, &c, &j1);
			tp_report_write(&r2, &c, &j2);
			ck_assert_msg(j1.len == j2.len &&
					      memcmp(j1.buf, j2.buf, j1.len) == 0,
				      "%s plan %d: %.17g with the shortcuts, "
				      "%.17g without",
				      rts[k], it, r1.iteration_time_s,
				      r2.iteration_time_s);
			n_ok++;
			tp_plan_release(&p);
		}
		tp_sim_scratch_free(fast);
		tp_sim_scratch_free(ref);
		tp_sim_free(sim);
	}
	ck_assert_uint_gt(n_ok, 30);
	tp_strbuf_release(&j1);
	tp_strbuf_release(&j2);
	tp_report_release(&r1);
	tp_report_release(&r2);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* A bounded run knows a plan is out of memory from its compute tasks'
 * order alone and stops before building the task graph (sim.c
 * tp_sim_run_bounded, tp_sim_order_compute, tp_sim_memory_walk_early);
 * the reference scratch checks only on the whole graph.  Over plans of
 * every schedule (their W passes under zb-h1 and interleaved chunks
 * change the order the peaks are summed in) and random groups of
 * different dp, some fitting and some not, both give the same cut and
 * the same over_fraction, bit for bit, and the same report when they
 * simulate. */
START_TEST(test_memory_cut_early)
{
	static const char *const strats[] = {
		"tp=1,pp=1,dp=64",
		"tp=2,pp=4,dp=8,mb=1,schedule=gpipe",
		"tp=4,pp=4,dp=4,mb=1,schedule=gpipe",
		"tp=4,pp=4,dp=4,mb=1",
		"tp=2,pp=4,dp=8,mb=2",
		"tp=2,pp=8,dp=4,mb=1,schedule=interleaved:2",
		"tp=4,pp=8,dp=2,mb=1,schedule=interleaved:5",
		"tp=4,pp=4,dp=4,mb=1,schedule=zb-h1",
		"tp=1,pp=8,dp=8,mb=2,schedule=zb-h1",
		"tp=8,pp=2,dp=4,mb=4,schedule=zb-h1,recompute=full",
		"tp=8,pp=8,dp=1,mb=1,recompute=selective,zero=1"};
	const uint32_t n_strats = sizeof(strats) / sizeof(strats[0]);
	struct tp_cluster c;
	struct tp_model m;
	struct tp_error err;
	struct tp_rng rng;
	struct tp_report r1, r2;
	struct tp_strbuf j1, j2;
	struct tp_sim *sim;
	struct tp_sim_scratch *fast, *ref;
	uint32_t n_oom = 0, n_fit = 0;

	gpt3_13b_mixed(&c, &m);
	tp_rng_seed(&rng, 11);
	tp_report_init(&r1);
	tp_report_init(&r2);
	tp_strbuf_init(&j1);
	tp_strbuf_init(&j2);
	sim = tp_sim_new(&m, &c, NULL, &err);
	ck_assert_ptr_nonnull(sim);
	fast = tp_sim_scratch_new(sim);
	ref = tp_sim_scratch_new(sim);
	tp_sim_scratch_reference(ref, true);
	for (uint32_t it = 0; it < n_strats + 16; it++) {
		struct tp_plan p;
		struct tp_sim_cut c1, c2;
		enum tp_status st;

		tp_plan_init(&p);
		if (it < n_strats) {
			struct tp_strategy sg;
			tp_strategy_default(&sg);
			ck_assert_int_eq(tp_strategy_parse(strats[it], &sg, &err),
					 TP_OK);
			ck_assert_msg(tp_strategy_to_plan(&sg, &m, &c, &p,
							  &err) == TP_OK,
				      "%s: %s", strats[it], err.msg);
		} else {
			random_dp_plan(&rng, &m, &p, 2, 1, 5, 64, 1);
		}
		st = tp_sim_run_bounded(sim, &p, fast, 1e30, &r1, NULL, &c1,
					&err);
		if (st == TP_EINPUT) {
			tp_plan_release(&p);
			continue;
		}
		ck_assert_msg(st == TP_OK, "%s", err.msg);
		ck_assert_int_eq(tp_sim_run_bounded(sim, &p, ref, 1e30, &r2,
						    NULL, &c2, &err),
				 TP_OK);
		ck_assert_msg(c1.bounded == c2.bounded &&
				      c1.out_of_memory == c2.out_of_memory &&
				      memcmp(&c1.over_fraction,
					     &c2.over_fraction,
					     sizeof(double)) == 0 &&
				      memcmp(&c1.lower_bound_s,
					     &c2.lower_bound_s,
					     sizeof(double)) == 0,
			      "plan %u: cut %d, out of memory %d, over %.17g "
			      "before the graph; %d, %d, %.17g on it",
			      it, c1.bounded, c1.out_of_memory,
			      c1.over_fraction, c2.bounded, c2.out_of_memory,
			      c2.over_fraction);
		if (c1.out_of_memory) {
			n_oom++;
		} else {
			ck_assert(!c1.bounded);
			tp_strbuf_reset(&j1);
			tp_strbuf_reset(&j2);
			tp_report_write(&r1, &c, &j1);
			tp_report_write(&r2, &c, &j2);
			ck_assert_msg(j1.len == j2.len &&
					      memcmp(j1.buf, j2.buf, j1.len) == 0,
				      "plan %u: %.17g before the graph, %.17g on it",
				      it, r1.iteration_time_s,
				      r2.iteration_time_s);
			n_fit++;
		}
		tp_plan_release(&p);
	}
	ck_assert_uint_gt(n_oom, 4);
	ck_assert_uint_gt(n_fit, 4);
	tp_sim_scratch_free(fast);
	tp_sim_scratch_free(ref);
	tp_sim_free(sim);
	tp_strbuf_release(&j1);
	tp_strbuf_release(&j2);
	tp_report_release(&r1);
	tp_report_release(&r2);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* --- the command ------------------------------------------------------ */

static void report_of(const struct tp_run *r, struct tp_report *rep)
{
	struct tp_load_options lo;
	struct tp_error err;

	tp_load_options_default(&lo);
	tp_report_init(rep);
	ck_assert_msg(tp_report_load("stdout", r->out, r->out_len, &lo, rep,
				     &err) == TP_OK,
		      "%s: %s", err.path, err.msg);
}

START_TEST(test_cmd_strategy_shipped)
{
	const char *argv[] = {"tagplan", "simulate", "-m",
			      tp_data_file("models/gpt3-1.3b.json"), "-t",
			      tp_data_file("dgx-a100x4.json"), "-s",
			      "tp=2,pp=2,recompute=full,schedule=interleaved:2",
			      NULL};
	struct tp_run r;
	struct tp_report rep;

	tp_run_tagplan(&r, argv, NULL);
	ck_assert_msg(r.status == 0, "%d %s", r.status, r.err);
	report_of(&r, &rep);
	ck_assert(rep.feasible);
	ck_assert_uint_eq(rep.n_devices, 32);
	ck_assert(rep.iteration_time_s > 0);
	ck_assert(rep.tflops_per_device > 30 && rep.tflops_per_device < 250);
	ck_assert(rep.mfu > 0.05 && rep.mfu < 0.8);
	ck_assert(rep.bubble_fraction > 0 && rep.bubble_fraction < 0.5);
	ck_assert(rep.tokens_per_s > 0);
	ck_assert(rep.n_links > 0);
	ck_assert(strstr(r.err, "iteration"));
	tp_report_release(&rep);
	tp_run_free(&r);
}
END_TEST

static double sim_plan_file(const char *plan, struct tp_report *rep)
{
	const char *argv[] = {"tagplan", "simulate", "-q", "-m",
			      tp_data_file("demo-model.json"), "-t",
			      tp_data_file("tag-testbed.json"), "-p",
			      tp_test_path(plan), NULL};
	struct tp_run r;
	double t;

	tp_run_tagplan(&r, argv, NULL);
	ck_assert_msg(r.status == 0, "%s: %d %s", plan, r.status, r.err);
	ck_assert_msg(r.err_len == 0, "%s", r.err);
	report_of(&r, rep);
	t = rep->iteration_time_s;
	tp_run_free(&r);
	return t;
}

/* Heterogeneous data parallelism on the TAG testbed: shares by speed beat
 * even shares, where the fast V100s wait for the slow P100s. */
START_TEST(test_cmd_plan_heterogeneous)
{
	struct tp_report a, b;
	double ta = sim_plan_file("data/sim/hetero-dp.plan.json", &a);
	double tb = sim_plan_file("data/sim/hetero-dp-even.plan.json", &b);

	ck_assert(a.feasible && b.feasible);
	ck_assert_uint_eq(a.n_devices, 16);
	ck_assert_msg(ta < tb, "%g %g", ta, tb);
	/* even shares: a V100 (device 0) idles longer than a P100 (15) */
	ck_assert(b.devices[0].idle_s > b.devices[15].idle_s);
	ck_assert(b.devices[0].compute_s < b.devices[15].compute_s);
	tp_report_release(&a);
	tp_report_release(&b);
}
END_TEST

/* A two-stage pipeline with different dp per stage (re-sharded
 * activations): the unused P100s stay empty and idle. */
START_TEST(test_cmd_plan_pipeline)
{
	struct tp_report a;
	double t = sim_plan_file("data/sim/hetero-pipeline.plan.json", &a);

	ck_assert(t > 0 && a.feasible);
	ck_assert(a.bubble_fraction > 0);
	for (uint32_t d = 0; d < 12; d++)
		ck_assert(a.devices[d].compute_s > 0 &&
			  a.devices[d].peak_memory_bytes > 0);
	for (uint32_t d = 12; d < 16; d++)
		ck_assert(a.devices[d].compute_s == 0 &&
			  a.devices[d].peak_memory_bytes == 0 &&
			  REL(a.devices[d].idle_s, t) < 1e-12);
	tp_report_release(&a);
}
END_TEST

/* A plan file on the homogeneous DGX topology: two stages of 2 x 8 with
 * sequence parallelism and selective recomputation. */
START_TEST(test_cmd_plan_homogeneous)
{
	const char *argv[] = {"tagplan", "simulate", "-q", "-m",
			      tp_data_file("models/gpt3-1.3b.json"), "-t",
			      tp_data_file("dgx-a100x4.json"), "-p",
			      tp_test_path("data/sim/gpt-1.3b-2stage.plan.json"),
			      NULL};
	struct tp_run r;
	struct tp_report rep;

	tp_run_tagplan(&r, argv, NULL);
	ck_assert_msg(r.status == 0, "%d %s", r.status, r.err);
	report_of(&r, &rep);
	ck_assert(rep.feasible);
	ck_assert_uint_eq(rep.n_devices, 32);
	ck_assert(rep.bubble_fraction > 0);
	for (uint32_t d = 0; d < 32; d++) {
		ck_assert(rep.devices[d].compute_s > 0);
		ck_assert(rep.devices[d].communication_s > 0); /* tp=8 */
		ck_assert(rep.devices[d].memory.activations > 0);
	}
	/* replicas of a stage are identical */
	ck_assert(rep.devices[0].peak_memory_bytes ==
		  rep.devices[8].peak_memory_bytes);
	tp_report_release(&rep);
	tp_run_free(&r);
}
END_TEST

/* A strategy string on the heterogeneous testbed: replicas of different
 * GPU types run at their own speed (simulated as separate classes). */
START_TEST(test_cmd_strategy_heterogeneous)
{
	const char *argv[] = {"tagplan", "simulate", "-q", "-m",
			      tp_data_file("demo-model.json"), "-t",
			      tp_data_file("tag-testbed.json"), "-s", "pp=2",
			      NULL};
	struct tp_run r;
	struct tp_report rep;

	tp_run_tagplan(&r, argv, NULL);
	ck_assert_msg(r.status == 0, "%d %s", r.status, r.err);
	report_of(&r, &rep);
	ck_assert(rep.feasible);
	for (uint32_t d = 0; d < 16; d++)
		ck_assert(rep.devices[d].compute_s > 0);
	/* stage 1: the bf16 demo runs fp16 on these GPUs (no bf16 units):
	 * P100 (devices 12-15, 18.7 TFLOP/s fp16) are faster than GTX 1080
	 * Ti (8-11, 11.34) */
	ck_assert(rep.devices[8].compute_s > rep.devices[12].compute_s);
	/* stage 0: V100 (0-3) faster than GTX 1080 Ti (4-7) */
	ck_assert(rep.devices[4].compute_s > rep.devices[0].compute_s);
	tp_report_release(&rep);
	tp_run_free(&r);
}
END_TEST

START_TEST(test_cmd_strategy_errors)
{
	static const char *const cases[][2] = {
		{"tp=32", "does not divide the model's 16 attention heads"},
		{"tp=2,pp=2,dp=4", "tp*pp*dp = 2*2*4 = 16, but the topology "
				   "has 32 devices"},
		{"mb=3", "not divisible by mb*dp"},
		{"schedule=zigzag", "unknown schedule \"zigzag\""},
		{"pp=4,schedule=interleaved:16", "only 24 layers"},
		{"tp=2,colour=red", "unknown key \"colour\""},
		{"sp=on", "needs tp > 1"},
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const char *argv[] = {"tagplan", "simulate", "-m",
				      tp_data_file("models/gpt3-1.3b.json"),
				      "-t", tp_data_file("dgx-a100x4.json"),
				      "-s", cases[k][0], NULL};
		struct tp_run r;
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 2, "%s: %d", cases[k][0], r.status);
		ck_assert_msg(strstr(r.err, cases[k][1]), "%s: %s", cases[k][0],
			      r.err);
		ck_assert_uint_eq(r.out_len, 0);
		tp_run_free(&r);
	}
}
END_TEST

START_TEST(test_cmd_usage)
{
	const char *none[] = {"tagplan", "simulate", "-m",
			      tp_data_file("demo-model.json"), "-t",
			      tp_data_file("tag-testbed.json"), NULL};
	const char *both[] = {"tagplan", "simulate", "-m",
			      tp_data_file("demo-model.json"), "-t",
			      tp_data_file("tag-testbed.json"), "-s", "tp=1",
			      "-p", "x.json", NULL};
	struct tp_run r;

	tp_run_tagplan(&r, none, NULL);
	ck_assert_int_eq(r.status, 2);
	ck_assert(strstr(r.err, "exactly one of -p PLAN and -s STRATEGY"));
	tp_run_free(&r);
	tp_run_tagplan(&r, both, NULL);
	ck_assert_int_eq(r.status, 2);
	tp_run_free(&r);
}
END_TEST

/* GPT-3 175B does not fit on 32 A100s without ZeRO: exit 1, the report
 * is still written and says why. */
START_TEST(test_cmd_infeasible)
{
	const char *out = NULL;
	char path[512];
	const char *argv[] = {"tagplan", "simulate", "-m",
			      tp_data_file("models/gpt3-175b.json"), "-t",
			      tp_data_file("dgx-a100x4.json"), "-s",
			      "tp=8,pp=4,recompute=full", "-o", path, NULL};
	struct tp_run r;
	struct tp_report rep;
	struct tp_load_options lo;
	struct tp_error err;
	char *text;
	size_t len;

	snprintf(path, sizeof(path), "%s/report.json", tp_test_tmpdir());
	tp_run_tagplan(&r, argv, NULL);
	ck_assert_msg(r.status == 1, "%d %s", r.status, r.err);
	ck_assert(strstr(r.err, "does not fit") || strstr(r.err, "over"));
	text = tp_test_read(path, &len);
	ck_assert_ptr_nonnull(text);
	tp_load_options_default(&lo);
	tp_report_init(&rep);
	ck_assert_int_eq(tp_report_load(path, text, len, &lo, &rep, &err),
			 TP_OK);
	ck_assert(!rep.feasible);
	ck_assert(rep.over_bytes > 0);
	ck_assert_msg(strstr(rep.reason, "smallest change"), "%s", rep.reason);
	(void)out;
	free(text);
	tp_report_release(&rep);
	tp_run_free(&r);
}
END_TEST

/* --trace: Chrome trace-event JSON with device and link tracks. */
START_TEST(test_cmd_trace)
{
	char path[512];
	const char *argv[] = {"tagplan", "simulate", "-q", "-m",
			      tp_data_file("demo-model.json"), "-t",
			      tp_data_file("tag-testbed.json"), "-p",
			      tp_test_path("data/sim/hetero-pipeline.plan.json"),
			      "--trace", path, NULL};
	struct tp_run r;
	struct tp_json_doc doc;
	struct tp_error err;
	const struct tp_json *ev;
	size_t n_dev = 0, n_link = 0;
	char *text;
	size_t len;

	snprintf(path, sizeof(path), "%s/trace.json", tp_test_tmpdir());
	tp_run_tagplan(&r, argv, NULL);
	ck_assert_msg(r.status == 0, "%d %s", r.status, r.err);
	text = tp_test_read(path, &len);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(tp_json_parse(path, text, len, 0, 0, &doc, &err),
			 TP_OK);
	ev = tp_json_get(doc.root, "traceEvents");
	ck_assert_ptr_nonnull(ev);
	for (size_t k = 0; k < ev->n; k++) {
		const struct tp_json *ph = tp_json_get(ev->items[k], "ph");
		const struct tp_json *pid = tp_json_get(ev->items[k], "pid");
		if (!ph || strcmp(ph->str, "X"))
			continue;
		ck_assert(tp_json_get(ev->items[k], "ts")->num >= 0);
		if (pid->num == 0)
			n_dev++;
		else
			n_link++;
	}
	/* 12 devices x (4 micro-batches x 2 + optimizer) */
	ck_assert_uint_eq(n_dev, 12 * 9);
	ck_assert(n_link > 0);
	tp_json_doc_release(&doc);
	free(text);
	tp_run_free(&r);
}
END_TEST

Suite *suite_sim(void)
{
	Suite *s = suite_create("sim");
	TCase *tc = tcase_create("formulas");

	tcase_add_test(tc, test_single_device_roofline);
	tcase_add_test(tc, test_stage_boundary_once);
	tcase_add_test(tc, test_runtime_tf32);
	tcase_add_test(tc, test_runtime_fused_attention);
	tcase_add_test(tc, test_runtime_tp_overlap);
	tcase_add_test(tc, test_runtime_dp_overlap_pipeline);
	tcase_add_test(tc, test_ring_allreduce_time);
	tcase_add_test(tc, test_hierarchical_allreduce_time);
	tcase_add_test(tc, test_tree_allreduce_across_nodes);
	tcase_add_test(tc, test_nvls_tp_allreduce);
	tcase_add_test(tc, test_replica_copy_needs_same_ring);
	tcase_add_test(tc, test_parameter_server_time);
	tcase_add_test(tc, test_sync_overlap);
	tcase_add_test(tc, test_pipeline_bubbles);
	tcase_add_test(tc, test_zero_memory);
	tcase_add_test(tc, test_activation_bytes);
	tcase_add_test(tc, test_inflight_activations);
	suite_add_tcase(s, tc);
	tc = tcase_create("model");
	tcase_add_test(tc, test_heterogeneous_replicas);
	tcase_add_test(tc, test_profile_wins);
	tcase_add_test(tc, test_infeasible_reason);
	tcase_add_test(tc, test_zero3_costs_time);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_strategy_parse);
	tcase_add_test(tc, test_strategy_expand);
	tcase_add_test(tc, test_random_plans);
	tcase_add_test(tc, test_reuse_and_lower_bound);
	tcase_add_test(tc, test_reuse_heterogeneous);
	tcase_add_test(tc, test_engine_shortcuts);
	tcase_add_test(tc, test_memory_cut_early);
	suite_add_tcase(s, tc);
	tc = tcase_create("command");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_cmd_strategy_shipped);
	tcase_add_test(tc, test_cmd_plan_heterogeneous);
	tcase_add_test(tc, test_cmd_plan_pipeline);
	tcase_add_test(tc, test_cmd_plan_homogeneous);
	tcase_add_test(tc, test_cmd_strategy_heterogeneous);
	tcase_add_test(tc, test_cmd_strategy_errors);
	tcase_add_test(tc, test_cmd_usage);
	tcase_add_test(tc, test_cmd_infeasible);
	tcase_add_test(tc, test_cmd_trace);
	suite_add_tcase(s, tc);
	return s;
}
