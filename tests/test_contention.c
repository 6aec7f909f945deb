/*
 * test_contention.c - collectives of several groups that cross the same
 * switch tier's uplinks share them (src/sim/README section 3, "Collectives
 * on the hierarchy"): hand figures on a two-leaf fabric whose leaf
 * uplinks are oversubscribed, with groups placed inside a leaf (nothing
 * shared) and across the leaves (every flow through the same uplink).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/sim.h"
#include "util.h"

#define REL(a, b)                                                             \
	(fabs((double)(a) - (double)(b)) / fmax(fabs((double)(b)), 1e-300))

/* NIC bandwidth per node, per direction. */
#define NIC_BW 1e10

/*
 * Four nodes of one toy device each (tests/util.c: 100 TFLOP/s fp16,
 * 1 TB/s), one NIC of NIC_BW, no latency; leaves of 2 nodes under one
 * core switch whose leaf uplinks are oversubscribed 2:1, so a leaf's
 * uplink carries 2 x NIC_BW / 2 = NIC_BW each way: one flow across the
 * leaves runs at NIC_BW, two share it.
 */
static void two_leaves(struct tp_cluster *c)
{
	struct tp_device_type t = tp_test_toy_type("toy");
	const struct tp_tier tiers[2] = {{"leaf", 2, 0, 0, 1},
					 {"core", 0, 0, 0, 2}};
	struct tp_error err;
	uint32_t ty;

	tp_cluster_init(c);
	ck_assert_int_eq(tp_cluster_add_type(c, &t, &ty, &err), TP_OK);
	for (uint32_t n = 0; n < 4; n++) {
		char name[16];
		snprintf(name, sizeof(name), "n%u", n);
		ck_assert_int_eq(
		    tp_cluster_build_node(
			c,
			&(struct tp_node_build){name, ty, 1, TP_LINK_OTHER, 0,
						0, 1, NIC_BW, 0, false},
			NULL, &err),
		    TP_OK);
	}
	ck_assert_int_eq(tp_cluster_connect_tiers(c, tiers, 2, &err), TP_OK);
	ck_assert_msg(tp_cluster_finalize(c, &err) == TP_OK, "%s", err.msg);
}

/* Two independent ops (two branches, no edge between them) of 1e12
 * forward FLOP per sample (backward 2x) and 1e9 parameter bytes (fp16:
 * 5e8 parameters), global batch 2. */
static void two_branches(struct tp_model *m)
{
	struct tp_error err;
	uint32_t idx;

	tp_model_init(m);
	m->global_batch = 2;
	m->dtype = TP_DTYPE_FP16;
	m->optimizer = TP_OPT_ADAM;
	for (int k = 0; k < 2; k++) {
		struct tp_op op = tp_op_default();
		op.name = k ? "b" : "a";
		op.kind = TP_OP_MATMUL;
		op.layer = k;
		op.flop = 1e12;
		op.backward_flop = 2e12;
		op.param_bytes = 1e9;
		op.out_bytes = 1e3;
		op.saved_bytes = 1e3;
		ck_assert_int_eq(tp_model_add_op(m, &op, &idx, &err), TP_OK);
	}
	ck_assert_int_eq(tp_model_finalize(m, &err), TP_OK);
}

/* The iteration time of plan p (released) of model m on cluster c, with
 * the calibration and the link efficiencies at 1, no software latency
 * and the gradient sync after the backward, so hand figures hold. */
static double sim_time(const struct tp_model *m, const struct tp_cluster *c,
		       struct tp_plan *p)
{
	struct tp_sim_options o;
	struct tp_error err;
	struct tp_report r;
	struct tp_sim *sim;
	struct tp_sim_scratch *s;
	double t;

	ck_assert_msg(tp_plan_validate(p, m, c, &err) == TP_OK, "%s %s",
		      err.path, err.msg);
	tp_sim_options_default(&o);
	o.params.overlap_grad_sync = false;
	o.params.p2p_latency_s = 0;
	o.params.collective_latency_s = 0;
	o.params.link_eff_intra = 1;
	o.params.link_eff_network = 1;
	o.params.gemm_sustained = 1;
	o.params.fused_attention = false;
	sim = tp_sim_new(m, c, &o, &err);
	ck_assert_msg(sim != NULL, "%s", err.msg);
	s = tp_sim_scratch_new(sim);
	ck_assert_ptr_nonnull(s);
	tp_report_init(&r);
	ck_assert_msg(tp_sim_run(sim, p, s, &r, NULL, &err) == TP_OK, "%s",
		      err.msg);
	t = r.iteration_time_s;
	tp_report_release(&r);
	tp_sim_scratch_free(s);
	tp_sim_free(sim);
	tp_plan_release(p);
	return t;
}

/* The iteration time of op a data-parallel on devices {a0, a1} and op b
 * on {b0, b1}, one micro-batch, the sync after the backward. */
static double dp_pairs(const struct tp_model *m, const struct tp_cluster *c,
		       const uint32_t devs[4])
{
	struct tp_error err;
	struct tp_plan p;

	tp_plan_init(&p);
	p.global_batch = m->global_batch;
	p.micro_batches = 1;
	p.compression = TP_COMPRESSION_OFF;
	for (uint32_t k = 0; k < 2; k++)
		ck_assert_int_eq(tp_plan_add_group_degrees(
				     &p, &k, 1, devs + 2 * k, 2,
				     &(struct tp_plan_degrees){2, 1, 1}, NULL,
				     &err),
				 TP_OK);
	return sim_time(m, c, &p);
}

/*
 * By hand: each replica computes one sample, 1e12 / 1e14 = 10 ms forward
 * and 20 ms backward; then each group all-reduces its 1e9 gradient bytes
 * over 2 (a ring of 2 sends S = 1e9 bytes per member each way), and
 * Adam's step reads and writes 28 bytes per parameter, 5e8 x 28 / 1e12 =
 * 14 ms.  Both groups inside a leaf ({n0, n1}, {n2, n3}): the rings meet
 * no shared link, 1e9 / 1e10 = 100 ms.  Across the leaves ({n0, n2},
 * {n1, n3}): the rings run at the same time and both cross leaf 0's and
 * leaf 1's uplinks, each direction carrying two flows at NIC_BW / 2:
 * 200 ms.
 */
START_TEST(test_dp_rings_share_uplinks)
{
	static const uint32_t inside[4] = {0, 1, 2, 3};
	static const uint32_t across[4] = {0, 2, 1, 3};
	struct tp_cluster c;
	struct tp_model m;
	double t;

	two_leaves(&c);
	two_branches(&m);
	t = dp_pairs(&m, &c, inside);
	ck_assert_msg(REL(t, 0.030 + 0.100 + 0.014) < 1e-9, "inside %.12g",
		      t);
	t = dp_pairs(&m, &c, across);
	ck_assert_msg(REL(t, 0.030 + 0.200 + 0.014) < 1e-9, "across %.12g",
		      t);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* The iteration time of every op of m on devices devs as one group of
 * degrees deg (devices = dp x cp x tp) with expert parallelism ep. */
static double group_run(const struct tp_model *m, const struct tp_cluster *c,
			const uint32_t *devs, const struct tp_plan_degrees *deg,
			uint32_t ep)
{
	struct tp_error err;
	struct tp_plan p;
	uint32_t ops[4] = {0, 1, 2, 3};

	tp_plan_init(&p);
	p.global_batch = m->global_batch;
	p.micro_batches = 1;
	p.compression = TP_COMPRESSION_OFF;
	p.expert_imbalance = 1;
	ck_assert_int_eq(tp_plan_add_group_degrees(&p, ops,
						   (uint32_t)m->ops.n, devs,
						   deg->dp * deg->cp * deg->tp,
						   deg, NULL, &err),
			 TP_OK);
	p.groups.v[0].ep = ep;
	return sim_time(m, c, &p);
}

/*
 * Expert all-to-alls of two EP groups at once.  One sample per replica:
 * each device dispatches and combines 2 experts x (1e8 + 1e8) bytes, V =
 * 4e8, and sends V / ep = 2e8 of it to the other member, once in the
 * forward and once in the backward.  One EP group across the leaves
 * ({n0, n2}, dp 2): one flow each way per uplink, 2e8 / 1e10 = 20 ms per
 * pass.  Two ({n0, n2} and {n1, n3}, dp 4): both exchange in the same
 * layer at the same time through the same uplinks, two flows at 5e9:
 * 40 ms per pass, 40 ms more per iteration (the compute, 1e11 FLOP per
 * sample per expert at 100 TFLOP/s, is the same: each device holds one
 * expert for two samples' tokens).  Priced on an idle fabric per EP
 * group, as before, both took the same time.
 */
START_TEST(test_ep_all_to_alls_share_uplinks)
{
	static const uint32_t one[2] = {0, 2}, two[4] = {0, 2, 1, 3};
	static const uint32_t inside[4] = {0, 1, 2, 3};
	const struct tp_plan_degrees d2 = {2, 1, 1}, d4 = {4, 1, 1};
	struct tp_cluster c;
	struct tp_model m1, m2;
	double t1, t2, t_in;

	two_leaves(&c);
	/* expert parameters negligible (1e3 bytes): no sync, no step */
	tp_test_moe_layer(&m1, 2, 2, 1e3);
	tp_test_moe_layer(&m2, 2, 4, 1e3);
	t1 = group_run(&m1, &c, one, &d2, 2);
	t2 = group_run(&m2, &c, two, &d4, 2);
	t_in = group_run(&m2, &c, inside, &d4, 2);
	ck_assert_msg(fabs(t2 - t1 - 0.040) < 1e-6,
		      "one EP group %.9g s, two %.9g s: +%.9g, by hand +0.040",
		      t1, t2, t2 - t1);
	/* inside the leaves nothing is shared: as one group alone */
	ck_assert_msg(fabs(t_in - t1) < 1e-6, "inside %.9g s, one %.9g s",
		      t_in, t1);
	tp_model_release(&m1);
	tp_model_release(&m2);
	tp_cluster_release(&c);
}
END_TEST

/*
 * Context-parallel rings of two replicas at once (tests/test_cp.c's
 * figures, src/sim/README).  cp 2 across the leaves, two samples per
 * replica, so each context rank computes 0.01 s of projection and of
 * attention forward, 0.02 s each backward.  Its K and V block, 2 GB, one
 * hop: alone on the uplinks ({n0, n2}, dp 1) at 1e10 B/s 0.2 s forward
 * against an attention step of 0.005 s, 0.195 s exposed, and K, V and
 * their gradients backward, 0.4 s against 0.01 s, 0.39 s: iteration
 * 0.02 + 0.195 + 0.04 + 0.39 = 0.645 s.  Two replicas' rings ({n0, n2},
 * {n1, n3}, dp 2) share the uplinks, 5e9 B/s each: 0.395 + 0.79,
 * iteration 1.245 s.
 */
START_TEST(test_cp_rings_share_uplinks)
{
	static const uint32_t one[2] = {0, 2}, two[4] = {0, 2, 1, 3};
	const struct tp_plan_degrees d1 = {1, 2, 1}, d2 = {2, 2, 1};
	struct tp_cluster c;
	struct tp_model m1, m2;
	double t1, t2;

	two_leaves(&c);
	tp_test_attn_model(&m1, 2, 0);
	tp_test_attn_model(&m2, 4, 0);
	t1 = group_run(&m1, &c, one, &d1, 1);
	t2 = group_run(&m2, &c, two, &d2, 1);
	ck_assert_msg(REL(t1, 0.645) < 1e-9, "one ring %.9g s", t1);
	ck_assert_msg(REL(t2, 1.245) < 1e-9, "two rings %.9g s", t2);
	tp_model_release(&m1);
	tp_model_release(&m2);
	tp_cluster_release(&c);
}
END_TEST

/*
 * Three nodes of two toy devices on a fabric of 1e11 B/s (no latency),
 * two NICs of NIC_BW each, rail-optimised (rails: NIC r on leaf r, a
 * spine above) or not (one NIC vertex, the node's 2 x NIC_BW uplink on
 * one leaf).  Devices: n0 0, 1; n1 2, 3; n2 4, 5.
 */
static void three_nodes(struct tp_cluster *c, bool rails)
{
	struct tp_device_type t = tp_test_toy_type("toy");
	const struct tp_tier tiers[2] = {{"leaf", 0, 0, 0, 1},
					 {"spine", 0, 0, 0, 1}};
	struct tp_error err;
	uint32_t ty;

	tp_cluster_init(c);
	ck_assert_int_eq(tp_cluster_add_type(c, &t, &ty, &err), TP_OK);
	for (uint32_t n = 0; n < 3; n++) {
		char name[16];
		snprintf(name, sizeof(name), "n%u", n);
		ck_assert_int_eq(
		    tp_cluster_build_node(
			c,
			&(struct tp_node_build){name, ty, 2, TP_LINK_NVSWITCH,
						1e11, 0, 2, NIC_BW, 0, rails},
			NULL, &err),
		    TP_OK);
	}
	ck_assert_int_eq(tp_cluster_connect_tiers(c, tiers, rails ? 2 : 1,
						  &err),
			 TP_OK);
	ck_assert_msg(tp_cluster_finalize(c, &err) == TP_OK, "%s", err.msg);
}

/*
 * Rails and PXN (NCCL 2.12): group a on {n0/gpu0, n1/gpu1} crosses rails,
 * group b on {n0/gpu1, n2/gpu1} stays on rail 1.  a's message from
 * n0/gpu0 goes over NVLink to n0/gpu1 and out of rail 1's NIC, the NIC
 * b's ring leaves by: that direction carries two flows at NIC_BW / 2, so
 * both rings take 2 x 100 ms (the rest as test_dp_rings_share_uplinks:
 * 30 ms compute, 14 ms step): 0.244 s.  Rail-aligned pairs ({n0/gpu0,
 * n1/gpu0} and {n0/gpu1, n2/gpu1}) share nothing: 0.144 s, and without
 * rails the node's one uplink of 2 x NIC_BW carries both: 0.144 s too.
 */
START_TEST(test_rails_pxn_shares_the_peer_nic)
{
	static const uint32_t crossed[4] = {0, 3, 1, 5};
	static const uint32_t aligned[4] = {0, 2, 1, 5};
	struct tp_cluster c;
	struct tp_model m;
	double t;

	two_branches(&m);
	three_nodes(&c, true);
	t = dp_pairs(&m, &c, crossed);
	ck_assert_msg(REL(t, 0.030 + 0.200 + 0.014) < 1e-9, "crossed %.12g",
		      t);
	t = dp_pairs(&m, &c, aligned);
	ck_assert_msg(REL(t, 0.030 + 0.100 + 0.014) < 1e-9, "aligned %.12g",
		      t);
	tp_cluster_release(&c);
	three_nodes(&c, false);
	t = dp_pairs(&m, &c, crossed);
	ck_assert_msg(REL(t, 0.030 + 0.100 + 0.014) < 1e-9,
		      "crossed, no rails %.12g", t);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

Suite *suite_contention(void)
{
	Suite *s = suite_create("contention");
	TCase *tc = tcase_create("uplinks");

	tcase_add_test(tc, test_dp_rings_share_uplinks);
	tcase_add_test(tc, test_ep_all_to_alls_share_uplinks);
	tcase_add_test(tc, test_cp_rings_share_uplinks);
	tcase_add_test(tc, test_rails_pxn_shares_the_peer_nic);
	suite_add_tcase(s, tc);
	return s;
}
