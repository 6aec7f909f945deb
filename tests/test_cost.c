/*
 * test_cost.c - the cost formulas of core/cost.h and that every user
 * prices work with them: one table of defaults (the simulator, the quick
 * estimate and a topology file's own device types agree), one list of
 * GEMM kinds, the collective and memory closed forms.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/cluster.h"
#include "core/cost.h"
#include "core/estimate.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/report.h"
#include "io/io.h"
#include "search/actions.h"
#include "sim/sim.h"
#include "util.h"

/* One device node of n GPUs of type t on a 100 GB/s fabric. */
static void one_node(struct tp_cluster *c, const struct tp_device_type *t,
		     uint32_t n)
{
	struct tp_error err;
	uint32_t ty;

	tp_cluster_init(c);
	ck_assert_int_eq(tp_cluster_add_type(c, t, &ty, &err), TP_OK);
	ck_assert_int_eq(
	    tp_cluster_build_node(
		c,
		&(struct tp_node_build){"node0", ty, n, TP_LINK_NVSWITCH, 1e11,
					1e-6, 1, 1e10, 1e-6, false},
		NULL, &err),
	    TP_OK);
	ck_assert_int_eq(tp_cluster_finalize(c, &err), TP_OK);
}

/* A type with figures but no cost fields (as code may build one). */
static struct tp_device_type bare_type(void)
{
	struct tp_device_type t;

	memset(&t, 0, sizeof(t));
	t.name = "bare";
	t.peak_flops[TP_DTYPE_FP32] = 20e12;
	t.peak_flops[TP_DTYPE_FP16] = 200e12;
	t.memory_bytes = 40e9;
	t.memory_bw_Bps = 1.5e12;
	return t;
}

/* A chain of three ops: a matmul, a norm, a router. */
static void small_model(struct tp_model *m, enum tp_op_kind last)
{
	static const enum tp_op_kind kinds[3] = {TP_OP_MATMUL, TP_OP_NORM,
						 TP_OP_ROUTER};
	struct tp_error err;
	uint32_t prev = TP_NONE;

	tp_model_init(m);
	m->global_batch = 16;
	m->dtype = TP_DTYPE_FP16;
	m->optimizer = TP_OPT_ADAM;
	for (uint32_t i = 0; i < 3; i++) {
		struct tp_op op = tp_op_default();
		char name[16];
		uint32_t idx;
		snprintf(name, sizeof(name), "op%u", i);
		op.name = name;
		op.kind = i == 2 ? last : kinds[i];
		op.layer = 0;
		op.flop = 3e9;
		op.backward_flop = 6e9;
		op.param_bytes = i == 1 ? 0 : 4e6;
		op.mem_bytes = 2e7;
		op.out_bytes = 1e6;
		op.saved_bytes = 1e6;
		ck_assert_int_eq(tp_model_add_op(m, &op, &idx, &err), TP_OK);
		if (prev != TP_NONE)
			ck_assert_int_eq(tp_model_add_edge(m, prev, idx, 1e6,
							   &err),
					 TP_OK);
		prev = idx;
	}
	ck_assert_int_eq(tp_model_finalize(m, &err), TP_OK);
}

/* The GEMM kinds: one list for the simulator, compression, the GNN and
 * the search. */
START_TEST(test_cost_gemm_kinds)
{
	for (int k = 0; k < TP_OP_KIND_COUNT; k++)
		ck_assert_int_eq(tp_cost_gemm_like((enum tp_op_kind)k),
				 k == TP_OP_MATMUL || k == TP_OP_CONV ||
					 k == TP_OP_ATTENTION ||
					 k == TP_OP_ROUTER);
}
END_TEST

/* Unset cost fields take the one table's figures, which are also what a
 * topology file's own type gets when it leaves them out. */
START_TEST(test_cost_defaults_one_table)
{
	const struct tp_cost_constants *k = &tp_cost_constants;
	static const char topo[] =
		"{\"format\": \"tagplan-topology/1\", \"name\": \"t\", "
		"\"device_types\": [{\"name\": \"mine\", \"memory_bytes\": "
		"4e10, \"memory_bandwidth_Bps\": 1.5e12, \"peak_flops\": "
		"{\"fp32\": 2e13}}], \"nodes\": [{\"name\": \"n\", "
		"\"devices\": [{\"type\": \"mine\", \"count\": 1}]}]}";
	struct tp_device_type t = bare_type();
	struct tp_load_options lo;
	struct tp_cluster c;
	struct tp_error err;
	uint32_t ti;

	t.kernel_overhead_s = -1; /* unset; 0 would be a value */
	t.reserved_bytes = NAN;
	tp_cost_type_defaults(&t);
	ck_assert(t.gemm_efficiency == k->gemm_efficiency);
	ck_assert(t.gemm_half_flop == k->gemm_half_flop);
	ck_assert(t.memory_efficiency == k->memory_efficiency);
	ck_assert(t.kernel_overhead_s == k->kernel_overhead_s);
	ck_assert(t.reserved_bytes == 0);
	t.kernel_overhead_s = 0;
	tp_cost_type_defaults(&t);
	ck_assert(t.kernel_overhead_s == 0);

	tp_load_options_default(&lo);
	tp_cluster_init(&c);
	ck_assert_msg(tp_topology_load("t.json", topo, sizeof(topo) - 1, &lo,
				       &c, &err) == TP_OK,
		      "%s: %s", err.path, err.msg);
	ti = tp_cluster_find_type(&c, "mine");
	ck_assert_uint_ne(ti, TP_NONE);
	ck_assert(c.types.v[ti].gemm_efficiency == k->gemm_efficiency);
	ck_assert(c.types.v[ti].gemm_half_flop == k->gemm_half_flop);
	ck_assert(c.types.v[ti].memory_efficiency == k->memory_efficiency);
	ck_assert(c.types.v[ti].kernel_overhead_s == k->kernel_overhead_s);
	ck_assert(c.types.v[ti].reserved_bytes == k->reserved_bytes);
	tp_cluster_release(&c);
}
END_TEST

/* The simulator and the quick estimate see a type with unset fields
 * exactly as the same type with the table's figures written in. */
START_TEST(test_cost_unset_fields_agree)
{
	struct tp_device_type bare = bare_type(), full = bare_type();
	struct tp_cluster cb, cf;
	struct tp_model m;
	struct tp_plan p;
	struct tp_report rb, rf;
	struct tp_error err;
	struct tp_sim *sb, *sf;
	struct tp_sim_scratch *xb, *xf;
	uint32_t ops[3] = {0, 1, 2}, devs[2] = {0, 1};

	full.gemm_efficiency = tp_cost_constants.gemm_efficiency;
	full.gemm_half_flop = tp_cost_constants.gemm_half_flop;
	full.memory_efficiency = tp_cost_constants.memory_efficiency;
	full.kernel_overhead_s = tp_cost_constants.kernel_overhead_s;
	bare.kernel_overhead_s = -1; /* unset */
	one_node(&cb, &bare, 2);
	one_node(&cf, &full, 2);
	small_model(&m, TP_OP_ROUTER);
	for (uint32_t o = 0; o < 3; o++)
		ck_assert(tp_estimate_op_time(&m, &cb, o, 0, 8) ==
			  tp_estimate_op_time(&m, &cf, o, 0, 8));
	tp_plan_init(&p);
	p.global_batch = m.global_batch;
	p.micro_batches = 2;
	ck_assert_int_eq(tp_plan_add_group_degrees(
			     &p, ops, 3, devs, 2,
			     &(struct tp_plan_degrees){2, 1, 1}, NULL, &err),
			 TP_OK);
	sb = tp_sim_new(&m, &cb, NULL, &err);
	sf = tp_sim_new(&m, &cf, NULL, &err);
	ck_assert_ptr_nonnull(sb);
	ck_assert_ptr_nonnull(sf);
	xb = tp_sim_scratch_new(sb);
	xf = tp_sim_scratch_new(sf);
	tp_report_init(&rb);
	tp_report_init(&rf);
	ck_assert_int_eq(tp_sim_run(sb, &p, xb, &rb, NULL, &err), TP_OK);
	ck_assert_int_eq(tp_sim_run(sf, &p, xf, &rf, NULL, &err), TP_OK);
	ck_assert(rb.iteration_time_s > 0);
	ck_assert(rb.iteration_time_s == rf.iteration_time_s);
	ck_assert(rb.devices[0].compute_s == rf.devices[0].compute_s);
	tp_report_release(&rb);
	tp_report_release(&rf);
	tp_sim_scratch_free(xb);
	tp_sim_scratch_free(xf);
	tp_sim_free(sb);
	tp_sim_free(sf);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&cb);
	tp_cluster_release(&cf);
}
END_TEST

/* The quick estimate keeps two choices the shipped GNN's features were
 * computed with (estimate.c): the MoE router costs what a norm with the
 * same figures costs, and a kernel overhead of 0 reads as the default. */
START_TEST(test_cost_estimate_kept_choices)
{
	struct tp_device_type t = bare_type(), t0 = bare_type();
	struct tp_cluster c, c0;
	struct tp_model mr, mn;

	t.kernel_overhead_s = tp_cost_constants.kernel_overhead_s;
	t0.kernel_overhead_s = 0;
	one_node(&c, &t, 1);
	one_node(&c0, &t0, 1);
	small_model(&mr, TP_OP_ROUTER);
	small_model(&mn, TP_OP_NORM);
	ck_assert(tp_estimate_op_time(&mr, &c, 2, 0, 8) ==
		  tp_estimate_op_time(&mn, &c, 2, 0, 8));
	ck_assert(tp_estimate_op_time(&mr, &c, 0, 0, 8) !=
		  tp_estimate_op_time(&mr, &c, 1, 0, 8));
	for (uint32_t o = 0; o < 3; o++)
		ck_assert(tp_estimate_op_time(&mr, &c, o, 0, 8) ==
			  tp_estimate_op_time(&mr, &c0, o, 0, 8));
	tp_model_release(&mr);
	tp_model_release(&mn);
	tp_cluster_release(&c);
	tp_cluster_release(&c0);
}
END_TEST

/* Kernel times: the roofline of GEMM and vector work, attention's sum,
 * the efficiency curve, kernel overheads. */
START_TEST(test_cost_kernel_times)
{
	struct tp_device_type t = bare_type();
	struct tp_cost_device d;
	double comp, mem;

	t.gemm_efficiency = 0.5;
	t.gemm_half_flop = 1e9;
	t.memory_efficiency = 1;
	t.kernel_overhead_s = 1e-6;
	tp_cost_device_init(&d, &t, TP_DTYPE_FP16, 0.8);
	ck_assert(d.peak == 200e12 && d.peak_vec == 20e12);
	ck_assert_double_eq_tol(d.gemm_eff, 0.4, 1e-15);
	/* no bf16 peak: bf16 falls back to the fp16 rate
	 * (core/precision.h), not to fp32's */
	tp_cost_device_init(&d, &t, TP_DTYPE_BF16, 0);
	ck_assert(d.peak == 200e12 && d.gemm_eff == 0.5);
	tp_cost_device_init(&d, &t, TP_DTYPE_FP16, 0);
	/* a 1e9-FLOP GEMM runs at half the efficiency */
	ck_assert_double_eq_tol(tp_cost_gemm_eff(0.5, 1e9, 1e9), 0.25,
				1e-15);
	ck_assert(tp_cost_gemm_eff(0.5, 1e9, 0) == 0.5);
	comp = 1e9 / (200e12 * 0.25);
	ck_assert_double_eq_tol(
		tp_cost_kernel_s(&d, TP_OP_MATMUL, 1e9, 0, 1), comp + 1e-6,
		1e-18);
	/* two kernels of half the FLOP each sit lower on the curve */
	ck_assert(tp_cost_kernel_s(&d, TP_OP_MATMUL, 1e9, 0, 2) >
		  tp_cost_kernel_s(&d, TP_OP_MATMUL, 1e9, 0, 1));
	/* vector work at the FP32 peak, memory bound when bytes dominate */
	ck_assert_double_eq_tol(tp_cost_kernel_s(&d, TP_OP_NORM, 2e10, 0, 1),
				1e-3 + 1e-6, 1e-15);
	mem = 1.5e9 / 1.5e12;
	ck_assert_double_eq_tol(
		tp_cost_kernel_s(&d, TP_OP_NORM, 2e9, 1.5e9, 1), mem + 1e-6,
		1e-15);
	/* attention: compute and memory add */
	ck_assert_double_eq_tol(
		tp_cost_kernel_s(&d, TP_OP_ATTENTION, 1e9, 1.5e9, 1),
		comp + mem + 1e-6, 1e-15);
}
END_TEST

/* Ring and hierarchical collectives: README section 3's closed forms. */
START_TEST(test_cost_collectives)
{
	double S = 8e9, a = 1e-5, b = 1e11;

	ck_assert(tp_cost_ring_steps(TP_COST_ALL_REDUCE, 8) == 14);
	ck_assert(tp_cost_ring_steps(TP_COST_REDUCE_SCATTER, 8) == 7);
	ck_assert(tp_cost_ring_steps(TP_COST_ALL_GATHER, 1) == 0);
	ck_assert(tp_cost_ring_traffic(TP_COST_ALL_REDUCE, 8) == 1.75);
	ck_assert(tp_cost_ring_traffic(TP_COST_ALL_GATHER, 4) == 0.75);
	ck_assert_double_eq_tol(tp_cost_ring_s(TP_COST_ALL_REDUCE, 8, S, a, b),
				14 * a + 1.75 * S / b, 1e-12);
	/* one participant per node: the all-reduce across the nodes */
	ck_assert_double_eq_tol(
		tp_cost_hier_allreduce_s(1, 4, S, 1, 1, a, b),
		tp_cost_ring_s(TP_COST_ALL_REDUCE, 4, S, a, b), 1e-12);
	/* one node: reduce-scatter plus all-gather = an all-reduce */
	ck_assert_double_eq_tol(
		tp_cost_hier_allreduce_s(8, 1, S, a, b, 1, 1),
		tp_cost_ring_s(TP_COST_ALL_REDUCE, 8, S, a, b), 1e-12);
	/* 4 nodes of 8: 2 x 7 steps inside, 2 x 3 across S / 8 */
	ck_assert_double_eq_tol(
		tp_cost_hier_allreduce_s(8, 4, S, a, b, 2 * a, b / 4),
		14 * a + 1.75 * S / b + 6 * 2 * a + 1.5 * S / 8 / (b / 4),
		1e-12);
}
END_TEST

/* Model state per parameter, its ZeRO shards, and the search's and the
 * GNN's state factor (README section 5). */
START_TEST(test_cost_state)
{
	struct tp_cost_state s;
	struct tp_model m;

	tp_cost_state_init(&s, TP_DTYPE_BF16, TP_OPT_ADAM);
	ck_assert(s.weights == 2 && s.grads == 2 && s.optim == 12);
	ck_assert(s.step == 28); /* 2 x 12 + 2 + 2 */
	tp_cost_state_init(&s, TP_DTYPE_FP32, TP_OPT_ADAM);
	ck_assert(s.weights == 4 && s.grads == 4 && s.optim == 8);
	ck_assert(s.step == 28); /* 2 x 8 + 4 + 2 x 4 */
	tp_cost_state_init(&s, TP_DTYPE_FP16, TP_OPT_MOMENTUM);
	ck_assert(s.optim == 8);
	tp_cost_state_init(&s, TP_DTYPE_FP16, TP_OPT_SGD);
	ck_assert(s.optim == 4);
	tp_cost_state_init(&s, TP_DTYPE_FP32, TP_OPT_SGD);
	ck_assert(s.optim == 0);
	ck_assert(tp_cost_state_factor(TP_DTYPE_FP16, TP_OPT_ADAM) == 8);
	ck_assert(tp_cost_state_factor(TP_DTYPE_FP32, TP_OPT_MOMENTUM) == 3);
	tp_model_init(&m);
	for (int dt = 0; dt < TP_DTYPE_COUNT; dt++)
		for (int o = 0; o < TP_OPT_COUNT; o++) {
			m.dtype = (enum tp_dtype)dt;
			m.optimizer = (enum tp_optimizer)o;
			ck_assert(tp_space_state_factor(&m) ==
				  tp_cost_state_factor(m.dtype, m.optimizer));
		}
	tp_model_release(&m);
	for (uint32_t z = 0; z <= 3; z++) {
		ck_assert(tp_cost_zero_div(z, TP_COST_OPTIMIZER, 8) ==
			  (z >= 1 ? 8 : 1));
		ck_assert(tp_cost_zero_div(z, TP_COST_GRADS, 8) ==
			  (z >= 2 ? 8 : 1));
		ck_assert(tp_cost_zero_div(z, TP_COST_WEIGHTS, 8) ==
			  (z >= 3 ? 8 : 1));
	}
}
END_TEST

Suite *suite_cost(void)
{
	Suite *s = suite_create("cost");
	TCase *tc = tcase_create("cost");

	tcase_add_test(tc, test_cost_gemm_kinds);
	tcase_add_test(tc, test_cost_defaults_one_table);
	tcase_add_test(tc, test_cost_unset_fields_agree);
	tcase_add_test(tc, test_cost_estimate_kept_choices);
	tcase_add_test(tc, test_cost_kernel_times);
	tcase_add_test(tc, test_cost_collectives);
	tcase_add_test(tc, test_cost_state);
	suite_add_tcase(s, tc);
	return s;
}
