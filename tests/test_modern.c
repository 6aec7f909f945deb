/*
 * test_modern.c - precision (bf16 fallback, FP8) and the strategies of
 * modern training, each formula against a hand calculation.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cluster.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/precision.h"
#include "core/report.h"
#include "sim/sim.h"
#include "util.h"

#define REL(a, b)                                                              \
	(fabs((double)(a) - (double)(b)) / fmax(fabs((double)(b)), 1e-300))

/* Round numbers: fp32 10 TFLOP/s, fp16 100 TFLOP/s, bf16 `bf16`, 1 TB/s,
 * 80 GB, a flat GEMM curve at exactly peak. */
static struct tp_device_type toy_type(const char *name, double bf16)
{
	struct tp_device_type t;

	memset(&t, 0, sizeof(t));
	t.name = name;
	t.peak_flops[TP_DTYPE_FP32] = 10e12;
	t.peak_flops[TP_DTYPE_FP16] = 100e12;
	t.peak_flops[TP_DTYPE_BF16] = bf16;
	t.memory_bytes = 80e9;
	t.memory_bw_Bps = 1e12;
	t.gemm_efficiency = 1.0;
	t.gemm_half_flop = 1e-9;
	t.memory_efficiency = 1.0;
	t.kernel_overhead_s = 0;
	t.reserved_bytes = 0;
	return t;
}

static void toy_cluster(struct tp_cluster *c, const struct tp_device_type *t,
			uint32_t gpus)
{
	struct tp_error err;
	uint32_t ty;

	tp_cluster_init(c);
	ck_assert_int_eq(tp_cluster_add_type(c, t, &ty, &err), TP_OK);
	ck_assert_int_eq(tp_cluster_build_node(c, "node0", ty, gpus,
					       TP_LINK_NVSWITCH, 100e9, 0, gpus,
					       10e9, 0, NULL, &err),
			 TP_OK);
	ck_assert_int_eq(tp_cluster_finalize(c, &err), TP_OK);
}

/* n matmuls in a chain: `flop` forward FLOP per sample (backward 2x),
 * `pbytes` parameter bytes each, 1 MB edges. */
static void chain_model(struct tp_model *m, enum tp_dtype dt, uint32_t n,
			double flop, double pbytes, int64_t batch)
{
	struct tp_error err;
	uint32_t prev = TP_NONE;

	tp_model_init(m);
	m->global_batch = batch;
	m->dtype = dt;
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
		op.out_bytes = 1e6;
		op.saved_bytes = 1e6;
		ck_assert_int_eq(tp_model_add_op(m, &op, &idx, &err), TP_OK);
		if (prev != TP_NONE)
			ck_assert_int_eq(
			    tp_model_add_edge(m, prev, idx, 1e6, &err), TP_OK);
		prev = idx;
	}
	ck_assert_int_eq(tp_model_finalize(m, &err), TP_OK);
}

/* All ops on device 0, one micro-batch; simulated with the calibration
 * off (gemm_sustained 1) so the hand figures hold. */
static void run_single(const struct tp_model *m, const struct tp_cluster *c,
		       struct tp_report *r)
{
	struct tp_sim_options o;
	struct tp_error err;
	struct tp_sim *sim;
	struct tp_sim_scratch *s;
	struct tp_plan p;
	uint32_t ops[16], dev = 0;

	for (uint32_t i = 0; i < m->ops.n; i++)
		ops[i] = i;
	tp_plan_init(&p);
	p.global_batch = m->global_batch;
	p.micro_batches = 1;
	ck_assert_int_eq(tp_plan_add_group(&p, ops, (uint32_t)m->ops.n, &dev, 1,
					   1, 1, NULL, NULL, NULL),
			 TP_OK);
	tp_sim_options_default(&o);
	o.params.gemm_sustained = 1;
	o.params.overlap_grad_sync = false;
	sim = tp_sim_new(m, c, &o, &err);
	ck_assert_msg(sim != NULL, "%s", err.msg);
	s = tp_sim_scratch_new(sim);
	ck_assert_ptr_nonnull(s);
	tp_report_init(r);
	ck_assert_int_eq(tp_sim_run(sim, &p, s, r, NULL, &err), TP_OK);
	tp_sim_scratch_free(s);
	tp_sim_free(sim);
	tp_plan_release(&p);
}

/* bf16 on a type without bf16 units runs fp16, explicitly. */
START_TEST(test_precision_run_dtype)
{
	struct tp_device_type v100 = toy_type("V100ish", 0);
	struct tp_device_type a100 = toy_type("A100ish", 100e12);
	struct tp_device_type old = toy_type("Keplerish", 0);

	old.peak_flops[TP_DTYPE_FP16] = 0;
	ck_assert_int_eq(tp_precision_run_dtype(&v100, TP_DTYPE_BF16),
			 TP_DTYPE_FP16);
	ck_assert_int_eq(tp_precision_run_dtype(&a100, TP_DTYPE_BF16),
			 TP_DTYPE_BF16);
	ck_assert_int_eq(tp_precision_run_dtype(&old, TP_DTYPE_BF16),
			 TP_DTYPE_FP32);
	ck_assert_int_eq(tp_precision_run_dtype(&v100, TP_DTYPE_FP32),
			 TP_DTYPE_FP32);
	ck_assert(tp_precision_gemm_peak(&v100, TP_DTYPE_BF16) == 100e12);
	ck_assert(tp_precision_gemm_peak(&old, TP_DTYPE_BF16) == 10e12);
}
END_TEST

/* The simulator prices a bf16 model on a V100-like type at its fp16
 * rate, and the report says so; before, it ran at the fp32 rate (10x
 * slower here) without a word. */
START_TEST(test_precision_bf16_fallback_simulated)
{
	struct tp_device_type v100 = toy_type("V100ish", 0);
	struct tp_cluster c;
	struct tp_model m;
	struct tp_report r;
	double expect;

	toy_cluster(&c, &v100, 1);
	chain_model(&m, TP_DTYPE_BF16, 4, 1e12, 2e9, 8);
	run_single(&m, &c, &r);
	/* per op at the fp16 100 TFLOP/s: forward max(8e12/1e14,
	 * (8e6 + 2e9)/1e12) = 0.08 s, backward max(16e12/1e14,
	 * (2*8e6 + 4e9)/1e12) = 0.16 s; step 1e9 params * 28 B / 1e12 =
	 * 0.028 s.  At the fp32 rate the forward alone would be 0.8 s. */
	expect = 4 * (0.08 + 0.16) + 4 * 0.028;
	ck_assert_msg(REL(r.iteration_time_s, expect) < 1e-9, "%.9g vs %.9g",
		      r.iteration_time_s, expect);
	ck_assert_msg(strstr(r.precision, "simulated as fp16") != NULL, "%s",
		      r.precision);
	ck_assert_msg(strstr(r.precision, "V100ish") != NULL, "%s",
		      r.precision);
	/* MFU against the peak it runs at: 4 * 8 * 3e12 / (t * 1e14) */
	ck_assert(REL(r.mfu, 96e12 / (expect * 100e12)) < 1e-9);
	tp_report_release(&r);
	tp_model_release(&m);
	tp_cluster_release(&c);

	/* a type with bf16 units: no note */
	v100 = toy_type("A100ish", 100e12);
	toy_cluster(&c, &v100, 1);
	chain_model(&m, TP_DTYPE_BF16, 4, 1e12, 2e9, 8);
	run_single(&m, &c, &r);
	ck_assert_str_eq(r.precision, "");
	ck_assert(REL(r.iteration_time_s, expect) < 1e-9);
	tp_report_release(&r);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* What a user sees: plan the bf16 demo on a DGX-1 (V100): the table, the
 * plan's summary and export all state the fp16 fallback; export never
 * writes --bf16. */
START_TEST(test_precision_cli)
{
	char plan[512], *txt;
	const char *dir = tp_test_tmpdir();
	struct tp_run r;

	snprintf(plan, sizeof(plan), "%s/v100.json", dir);
	{
		const char *argv[] = {
		    "tagplan",	   "plan",
		    "-m",	   tp_data_file("demo-model.json"),
		    "-t",	   tp_data_file("topologies/dgx1-v100.json"),
		    "--playouts",  "20",
		    "--threads",   "1",
		    "--no-timing", "-o",
		    plan,	   NULL};
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_msg(strstr(r.err, "precision: bf16 model, but "
				    "V100-SXM2-16GB has no bf16 units") != NULL,
		      "%s", r.err);
	tp_run_free(&r);
	txt = tp_test_read(plan, NULL);
	ck_assert_ptr_nonnull(txt);
	ck_assert_msg(strstr(txt, "\"precision\": \"bf16 model, but "
				  "V100-SXM2-16GB") != NULL,
		      "%s", txt);
	free(txt);
	{
		const char *argv[] = {
		    "tagplan", "export",
		    "-p",      plan,
		    "-m",      tp_data_file("demo-model.json"),
		    "-t",      tp_data_file("topologies/dgx1-v100.json"),
		    NULL};
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert(strstr(r.out, "--fp16") != NULL);
	ck_assert(strstr(r.out, "--bf16") == NULL);
	ck_assert_msg(strstr(r.err, "simulated as fp16") != NULL, "%s", r.err);
	tp_run_free(&r);
}
END_TEST

Suite *suite_modern(void)
{
	Suite *s = suite_create("modern");
	TCase *tc = tcase_create("precision");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_precision_run_dtype);
	tcase_add_test(tc, test_precision_bf16_fallback_simulated);
	tcase_add_test(tc, test_precision_cli);
	suite_add_tcase(s, tc);
	return s;
}
