/*
 * test_mixed.c - mixed tensor-parallel replicas (core/plan.h "mixed"):
 * a data-parallel group whose replicas have different tp degrees,
 * simulated against a hand calculation, written and read back, refused
 * where it does not combine, and refused by every shipped runtime.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/runtime.h"
#include "core/strbuf.h"
#include "io/build.h"
#include "io/io.h"
#include "search/actions.h"
#include "search/coarsen.h"
#include "search/search.h"
#include "search/search_int.h"
#include "sim/sim.h"
#include "util.h"

#define REL(a, b)                                                             \
	(fabs((double)(a) - (double)(b)) / fmax(fabs((double)(b)), 1e-300))

/* One node of n toy devices (tests/util.c: 100 TFLOP/s fp16, 1 TB/s) on
 * a switch of bw per device and latency a. */
static void node_of(struct tp_cluster *c, uint32_t n, double bw, double a)
{
	struct tp_error err;
	struct tp_device_type t = tp_test_toy_type("toy");
	uint32_t ty;

	tp_cluster_init(c);
	ck_assert_int_eq(tp_cluster_add_type(c, &t, &ty, &err), TP_OK);
	ck_assert_int_eq(
	    tp_cluster_build_node(c,
				  &(struct tp_node_build){"node0", ty, n,
							  TP_LINK_NVSWITCH, bw,
							  a, 0, 0, 0, false},
				  NULL, &err),
	    TP_OK);
	ck_assert_int_eq(tp_cluster_finalize(c, &err), TP_OK);
}

/* One op of F forward FLOP per sample (backward 2F) and P parameter
 * bytes that tensor parallelism shards without a collective. */
static void one_op(struct tp_model *m, double F, double P, int64_t batch)
{
	struct tp_error err;
	struct tp_op op = tp_op_default();
	uint32_t idx;

	tp_model_init(m);
	m->global_batch = batch;
	m->dtype = TP_DTYPE_FP16;
	m->optimizer = TP_OPT_ADAM;
	op.name = "w";
	op.kind = TP_OP_MATMUL;
	op.layer = 0;
	op.flop = F;
	op.backward_flop = 2 * F;
	op.param_bytes = P;
	op.out_bytes = 1e3;
	op.saved_bytes = 1e3;
	op.tp_split = TP_SPLIT_SHARDED;
	ck_assert_int_eq(tp_model_add_op(m, &op, &idx, &err), TP_OK);
	ck_assert_int_eq(tp_model_finalize(m, &err), TP_OK);
}

/* Replica 0 on device 0 at tp 1 with a third of the batch, replica 1 on
 * devices 1-2 at tp 2 with two thirds. */
static void mixed_plan(struct tp_plan *p, const struct tp_model *m)
{
	static const uint32_t ops[1] = {0}, devs[3] = {0, 1, 2};
	static const uint32_t rtp[2] = {1, 2};
	const double sh[2] = {1.0 / 3, 2.0 / 3};
	struct tp_plan_replicas rep = {2, rtp};
	struct tp_error err;

	tp_plan_init(p);
	p->global_batch = m->global_batch;
	p->micro_batches = 1;
	p->compression = TP_COMPRESSION_OFF;
	ck_assert_int_eq(tp_plan_add_group_mixed(p, ops, 1, devs, 3, &rep, sh,
						 &err),
			 TP_OK);
}

/*
 * By hand: F = 1e12 FLOP per sample at 100 TFLOP/s, so each replica's
 * forward is 10 ms (replica 0: 1 sample on one device; replica 1: 2
 * samples over 2 ranks) and its backward 20 ms.  The gradient all-reduce
 * runs over the finest sharding, tp 2: two rings of the 2 replicas, each
 * of S = P / 2 = 1e9 bytes, {dev0, dev1} and {dev0, dev2}; a ring of 2
 * sends 2 (n - 1) / n S = S per member, and dev0 is in both, so its link
 * carries 2 S at bw = 100 GB/s: 20 ms, plus 2 (n - 1) = 2 latencies.
 * Then Adam's step, 28 bytes per parameter at 1 TB/s: dev0 holds all
 * 1e9 parameters, 28 ms (dev1, dev2 half).  Iteration 10 + 20 + 20 +
 * 0.002 + 28 ms.  Fails with the all-reduce's shard taken from replica
 * 0 (P bytes per ring: 98 ms) or with every replica at the group's tp 2
 * (lanes.c: 93 ms).
 */
START_TEST(test_mixed_tp_hand)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_plan p;
	struct tp_report r;
	struct tp_sim_options o;
	struct tp_sim *sim;
	struct tp_sim_scratch *s;
	struct tp_error err;
	double a = 1e-6, bw = 100e9, expect;

	node_of(&c, 3, bw, a);
	one_op(&m, 1e12, 2e9, 3);
	mixed_plan(&p, &m);
	ck_assert_msg(tp_plan_validate(&p, &m, &c, &err) == TP_OK, "%s %s",
		      err.path, err.msg);
	tp_sim_options_default(&o);
	o.params.overlap_grad_sync = false;
	o.params.p2p_latency_s = 0;
	o.params.collective_latency_s = 0;
	o.params.link_eff_intra = 1;
	o.params.link_eff_network = 1;
	o.params.gemm_sustained = 1;
	sim = tp_sim_new(&m, &c, &o, &err);
	ck_assert_ptr_nonnull(sim);
	s = tp_sim_scratch_new(sim);
	tp_report_init(&r);
	ck_assert_msg(tp_sim_run(sim, &p, s, &r, NULL, &err) == TP_OK, "%s",
		      err.msg);
	expect = 0.010 + 0.020 + (2 * a + 2 * 1e9 / bw) + 0.028;
	ck_assert_msg(REL(r.iteration_time_s, expect) < 1e-9,
		      "%.12g s, by hand %.12g s", r.iteration_time_s, expect);
	/* replica 1's ranks hold half the weights each */
	ck_assert(REL(r.devices[1].memory.weights,
		      r.devices[0].memory.weights / 2) < 1e-12);
	tp_report_release(&r);
	tp_sim_scratch_free(s);
	tp_sim_free(sim);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* The plan file: "replica_tp" written for a mixed group only, read back
 * to the same plan; bad degrees refused at their JSON path; no shipped
 * runtime runs it (export and check say mixed_tp), runtime none does. */
START_TEST(test_mixed_tp_file_and_runtimes)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_plan p, q;
	struct tp_strbuf sb, sb2;
	struct tp_runtime rt;
	struct tp_error err;
	char why[256];
	char *bad;

	node_of(&c, 3, 100e9, 1e-6);
	one_op(&m, 1e12, 2e9, 3);
	mixed_plan(&p, &m);
	tp_strbuf_init(&sb);
	tp_strbuf_init(&sb2);
	tp_plan_write(&p, &m, &c, &sb);
	ck_assert_ptr_nonnull(strstr(sb.buf, "\"replica_tp\": [1, 2]"));
	tp_plan_init(&q);
	ck_assert_msg(tp_plan_load("p.json", sb.buf, sb.len, &m, &c, NULL, &q,
				   &err) == TP_OK,
		      "%s %s", err.path, err.msg);
	ck_assert(q.groups.v[0].mixed && q.groups.v[0].tp == 2 &&
		  q.groups.v[0].dp == 2);
	tp_plan_write(&q, &m, &c, &sb2);
	ck_assert_str_eq(sb.buf, sb2.buf);
	tp_plan_release(&q);
	/* degrees that do not sum to the devices */
	bad = strstr(sb.buf, "[1, 2]");
	bad[1] = '2';
	tp_plan_init(&q);
	ck_assert_int_eq(tp_plan_load("p.json", sb.buf, sb.len, &m, &c, NULL,
				      &q, &err),
			 TP_EINPUT);
	ck_assert_str_eq(err.path, "$.groups[0].replica_tp");
	tp_plan_release(&q);
	/* runtimes */
	ck_assert_int_eq(tp_runtime_find("megatron-core", &rt, &err), TP_OK);
	ck_assert(tp_runtime_plan_check(&rt, &p, &m, &c, NULL, why,
					sizeof(why)) &
		  (1u << TP_CAP_MIXED_TP));
	ck_assert_ptr_nonnull(strstr(why, "tp 1 to 2"));
	tp_runtime_none(&rt);
	ck_assert_uint_eq(
	    tp_runtime_plan_check(&rt, &p, &m, &c, NULL, NULL, 0), 0);
	/* ZeRO does not combine with it */
	p.zero = 1;
	ck_assert_int_eq(tp_plan_validate(&p, &m, &c, &err), TP_EINPUT);
	ck_assert_str_eq(err.path, "$.groups[0].replica_tp");
	ck_assert_msg(strstr(err.msg, "set $.zero to 0"), "%s", err.msg);
	/* nor a sync other than the ring: the field and the fix named */
	p.zero = 0;
	p.groups.v[0].sync = TP_SYNC_HIERARCHICAL;
	ck_assert_int_eq(tp_plan_validate(&p, &m, &c, &err), TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "set $.groups[0].sync to \"ring\""),
		      "%s", err.msg);
	p.groups.v[0].sync = TP_SYNC_RING;
	tp_strbuf_release(&sb);
	tp_strbuf_release(&sb2);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* One fast device (toy type, 100 TFLOP/s, 80 GB) on a node of its own
 * and a node of 4 slow ones (25 TFLOP/s, 10 GB), joined by a star. */
static void fast_and_slow_node(struct tp_cluster *c)
{
	struct tp_device_type f = tp_test_toy_type("fast");
	struct tp_device_type sl = tp_test_toy_type("slow");
	struct tp_error err;
	uint32_t tf, ts;

	sl.peak_flops[TP_DTYPE_FP16] = 25e12;
	sl.memory_bytes = 10e9;
	tp_cluster_init(c);
	ck_assert_int_eq(tp_cluster_add_type(c, &f, &tf, &err), TP_OK);
	ck_assert_int_eq(tp_cluster_add_type(c, &sl, &ts, &err), TP_OK);
	ck_assert_int_eq(tp_cluster_build_node(c,
					       &(struct tp_node_build){
						   "f", tf, 1, TP_LINK_NVSWITCH,
						   100e9, 1e-6, 1, 25e9, 1e-6,
						   false},
					       NULL, &err),
			 TP_OK);
	ck_assert_int_eq(tp_cluster_build_node(c,
					       &(struct tp_node_build){
						   "s", ts, 4, TP_LINK_NVSWITCH,
						   100e9, 1e-6, 1, 25e9, 1e-6,
						   false},
					       NULL, &err),
			 TP_OK);
	ck_assert_int_eq(tp_cluster_connect_star(c, 1.0, NULL, &err), TP_OK);
	ck_assert_int_eq(tp_cluster_finalize(c, &err), TP_OK);
}

/* The search proposes mixed replicas (search/mixed.c): one fast device
 * (100 TFLOP/s, 80 GB) and a node of 4 slow ones (25 TFLOP/s, 10 GB) for
 * a model of 1e9 parameters (16 GB of fp16 Adam state: on a slow device
 * only at tp 4).  Plain groups use the fast device alone or the slow
 * node at tp 4 (each the speed of one fast device); the fast device at
 * tp 1 with the slow node at tp 4 as a second replica is about twice as
 * fast, and is the answer.  With the structured seeds off the tree and
 * the sweeps reach it themselves (actions.h TP_DECISION_MIXED).  Failed
 * without the mixed seeds (1.0x, before the mixed decisions); with the
 * seeds off it fails without the mixed decisions (a plain group,
 * 0.375 s). */
START_TEST(test_mixed_tp_search_proposes)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_sim *sim;
	struct tp_search_simeval se;
	struct tp_evaluator ev;
	struct tp_search_options o;
	struct tp_search_result r;
	struct tp_error err;

	fast_and_slow_node(&c);
	one_op(&m, 1e12, 2e9, 16);
	sim = tp_sim_new(&m, &c, NULL, &err);
	ck_assert_ptr_nonnull(sim);
	tp_search_sim_evaluator(&se, sim, NULL, &ev);
	for (int no_seeds = 0; no_seeds < 2; no_seeds++) {
		double best_base = INFINITY;
		tp_search_options_default(&o);
		o.threads = 1;
		o.playouts = 200;
		o.time_limit_s = 0;
		o.no_seeds = no_seeds;
		o.compression = TP_COMPRESSION_OFF;
		tp_search_result_init(&r);
		ck_assert_msg(tp_search_run(&m, &c, &ev, &o, &r, &err) == TP_OK,
			      "%s", err.msg);
		ck_assert(r.have_plan && r.report.feasible);
		for (int b = 0; b < TP_BASELINE_COUNT; b++)
			if (r.baselines[b].available &&
			    r.baselines[b].feasible &&
			    r.baselines[b].iteration_time_s < best_base)
				best_base = r.baselines[b].iteration_time_s;
		ck_assert_msg(r.plan.groups.n == 1 && r.plan.groups.v[0].mixed,
			      "seeds %s: answer from %s, %u groups, %.6g s",
			      no_seeds ? "off" : "on", r.source,
			      (unsigned)r.plan.groups.n,
			      r.report.iteration_time_s);
		if (!no_seeds)
			ck_assert_msg(r.report.iteration_time_s * 1.5 <
					      best_base,
				      "%.6g s against the best baseline's "
				      "%.6g s",
				      r.report.iteration_time_s, best_base);
		tp_search_result_release(&r);
	}
	tp_sim_free(sim);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* A mixed decision on the fast + slow cluster's set of all devices: the
 * group's candidates offer it at tp 2 and 4 (the slow node has 4); it
 * materialises as the fast device at tp 1 and the slow ones in runs of
 * the degree, shares by degree x speed (at tp 4: 1 x 4 = 4 x 1, half
 * each of 16 samples; at tp 2: 4 : 2 : 2, so 8, 4, 4); the GNN sees it
 * as tp 1 over 5 devices, 4 of them at mixed tp 4.  Fails without the
 * mixed candidates (none found) and with even shares by replica (0.375
 * where 0.5 at tp 2). */
START_TEST(test_mixed_tp_decision)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_groups g;
	struct tp_space sp;
	struct tp_space_scratch *scr;
	struct tp_action acts[64];
	struct tp_prior_action pa;
	struct tp_globals gl;
	struct tp_decision dec;
	struct tp_plan p;
	struct tp_error err;
	uint32_t n, found = 0;

	fast_and_slow_node(&c);
	one_op(&m, 1e12, 2e9, 16);
	memset(&g, 0, sizeof(g));
	ck_assert_int_eq(tp_coarsen(&m, 1, &g, &err), TP_OK);
	ck_assert_int_eq(tp_space_init(&sp, &m, &c, &g, &err), TP_OK);
	scr = tp_space_scratch_new(&sp);
	ck_assert_ptr_nonnull(scr);
	memset(&gl, 0, sizeof(gl));
	gl.micro_batches = 1;
	gl.schedule = TP_SCHEDULE_1F1B;
	memset(&dec, 0, sizeof(dec));
	dec.set = TP_SPACE_SET_ALL;
	dec.tp = 1;
	n = tp_space_group_actions(&sp, 0, &dec, &gl, acts, 64);
	for (uint32_t i = 0; i < n; i++)
		if (tp_decision_mixed(&acts[i].d) &&
		    acts[i].d.set == TP_SPACE_SET_ALL)
			found |= acts[i].d.tp;
	ck_assert_uint_eq(found, 2 | 4);
	tp_plan_init(&p);
	for (uint32_t t = 2; t <= 4; t *= 2) {
		const double *sh;
		dec.tp = (uint16_t)t;
		dec.sync = TP_SYNC_RING | TP_DECISION_MIXED;
		ck_assert_msg(tp_space_materialize(&sp, &gl, &dec,
						   TP_COMPRESSION_OFF, scr, &p,
						   &err) == TP_OK,
			      "%s", err.msg);
		ck_assert_uint_eq(p.groups.n, 1);
		ck_assert(p.groups.v[0].mixed);
		ck_assert_uint_eq(p.groups.v[0].dp, 1 + 4 / t);
		ck_assert_uint_eq(tp_plan_replica_tp(&p, 0, 0), 1);
		ck_assert_uint_eq(p.devs.v[p.groups.v[0].dev_first], 0);
		sh = tp_plan_group_shares(&p, 0);
		ck_assert_double_eq_tol(sh[0], 0.5, 1e-12);
		for (uint32_t r = 1; r <= 4 / t; r++) {
			ck_assert_uint_eq(tp_plan_replica_tp(&p, 0, r), t);
			ck_assert_double_eq_tol(sh[r], 0.5 * t / 4, 1e-12);
		}
		ck_assert_int_eq(tp_plan_validate(&p, &m, &c, &err), TP_OK);
	}
	tp_space_prior_action(&sp, 1, &(struct tp_action){dec, gl, 0, {0}},
			      false, &pa);
	ck_assert_uint_eq(pa.tp, 1);
	ck_assert_uint_eq(pa.dp, 5);
	ck_assert_uint_eq(pa.mixed_tp, 4);
	ck_assert_uint_eq(pa.mixed_devices, 4);
	ck_assert_int_eq(pa.sync, TP_SYNC_RING);
	ck_assert(!pa.even);
	/* a global action carries even shares (GNN action slot EVEN) */
	gl.even = 1;
	tp_space_prior_action(&sp, 0, &(struct tp_action){dec, gl, 0, {0}},
			      false, &pa);
	ck_assert(pa.global && pa.even);
	tp_plan_release(&p);
	tp_space_scratch_free(scr);
	tp_space_release(&sp);
	tp_groups_release(&g);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* The moves on mixed plans (search/mixed_pipe.c): one fast device (100
 * TFLOP/s, 80 GB) and a node of 4 slow ones (10 GB) for 1e9 parameters
 * (16 GB of state: a slow device holds them only at tp >= 2), 16
 * samples, measured per sample: fast 30 ms; slow 120, 105 and 90 ms at
 * tp 1, 2, 4 (poor tp scaling), under a runtime that runs mixed tp but
 * no ZeRO.  The seeds share by speed assuming linear scaling: fast 8,
 * each slow tp-2 replica 4 samples (4 x 105 = 420 ms compute); the moves
 * find more samples per micro-batch with the share tilted to the fast
 * device (10 / 3 / 3: 346 ms simulated).  Fails without the moves (the
 * answer the seed, 451 ms). */
START_TEST(test_mixed_tp_moves)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_sim *sim;
	struct tp_search_simeval se;
	struct tp_evaluator ev;
	struct tp_search_options o;
	struct tp_search_result r;
	struct tp_runtime rt;
	struct tp_error err;
	uint32_t idx = 0;

	fast_and_slow_node(&c);
	tp_model_init(&m);
	m.global_batch = 16;
	m.dtype = TP_DTYPE_FP16;
	m.optimizer = TP_OPT_ADAM;
	{
		struct tp_op op = tp_op_default();
		op.name = "w";
		op.kind = TP_OP_MATMUL;
		op.layer = 0;
		op.flop = 1e12;
		op.backward_flop = 2e12;
		op.param_bytes = 2e9;
		op.out_bytes = 1e3;
		op.saved_bytes = 1e3;
		op.tp_split = TP_SPLIT_SHARDED;
		ck_assert_int_eq(tp_model_add_op(&m, &op, &idx, &err), TP_OK);
	}
	for (int k = 0; k < 4; k++) {
		static const char *const ty[4] = {"fast", "slow", "slow",
						  "slow"};
		static const double fw[4] = {0.010, 0.040, 0.035, 0.030};
		static const uint32_t tps[4] = {1, 1, 2, 4};
		struct tp_profile pr = {ty[k], 1, fw[k], 2 * fw[k], tps[k],
					0, 0, 0, 0, 0};
		ck_assert_int_eq(tp_model_add_profile(&m, idx, &pr, &err),
				 TP_OK);
	}
	ck_assert_int_eq(tp_model_finalize(&m, &err), TP_OK);
	tp_runtime_none(&rt);
	snprintf(rt.name, sizeof(rt.name), "toy");
	rt.can.mixed_tp = true;
	rt.can.max_zero = rt.can.max_zero_pipelined = 0;
	sim = tp_sim_new(&m, &c, NULL, &err);
	ck_assert_ptr_nonnull(sim);
	tp_search_sim_evaluator(&se, sim, NULL, &ev);
	tp_search_options_default(&o);
	o.threads = 1;
	o.playouts = 200;
	o.time_limit_s = 0;
	o.compression = TP_COMPRESSION_OFF;
	o.runtime = &rt;
	tp_search_result_init(&r);
	ck_assert_msg(tp_search_run(&m, &c, &ev, &o, &r, &err) == TP_OK, "%s",
		      err.msg);
	ck_assert(r.have_plan && r.report.feasible);
	ck_assert_msg(strncmp(r.source, "mixed move", 10) == 0 &&
			      r.plan.groups.v[0].mixed,
		      "answer from %s, %.6g s", r.source,
		      r.report.iteration_time_s);
	ck_assert_msg(r.report.iteration_time_s < 0.36, "%.6g s",
		      r.report.iteration_time_s);
	tp_search_result_release(&r);
	tp_sim_free(sim);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* The mixed seeds' fastest type is the fastest of the cluster's devices:
 * cluster->types holds the whole catalogue, and the fastest of it (a
 * type no device has) made every present type "slower", the A100s too
 * (Sailor's Fig. 8b: 4.222 -> 4.196 s with the A100s at tp 1 and the
 * V100s at tp 2).  Fails with the catalogue's fastest (no A100, 29
 * types). */
START_TEST(test_mixed_fast_type_present)
{
	static const char *const mix[] = {"dgx-a100:1", "v100-nvlink:4"};
	struct tp_model m;
	struct tp_cluster c;
	struct tp_groups g;
	struct tp_space sp;
	struct tp_error err;
	uint32_t fast, n;

	tp_model_init(&m);
	tp_cluster_init(&c);
	memset(&g, 0, sizeof(g));
	ck_assert_int_eq(tp_model_load_file(tp_data_file("models/gpt2.json"),
					    NULL, &m, &err),
			 TP_OK);
	ck_assert_int_eq(tp_build_topology(mix, 2, "25gbe", 1, &c, &err),
			 TP_OK);
	ck_assert_int_eq(tp_coarsen(&m, 0, &g, &err), TP_OK);
	ck_assert_int_eq(tp_space_init(&sp, &m, &c, &g, &err), TP_OK);
	ck_assert_uint_gt(c.types.n, 2);
	fast = search_mixed_fast_type(&sp, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_msg(strstr(c.types.v[fast].name, "A100") != NULL, "%s",
		      c.types.v[fast].name);
	tp_space_release(&sp);
	tp_groups_release(&g);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

Suite *suite_mixed(void)
{
	Suite *s = suite_create("mixed");
	TCase *tc = tcase_create("replicas");

	tcase_add_test(tc, test_mixed_tp_hand);
	tcase_add_test(tc, test_mixed_tp_file_and_runtimes);
	tcase_add_test(tc, test_mixed_tp_search_proposes);
	tcase_add_test(tc, test_mixed_fast_type_present);
	tcase_add_test(tc, test_mixed_tp_moves);
	tcase_add_test(tc, test_mixed_tp_decision);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
