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
#include "core/cost.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/precision.h"
#include "core/report.h"
#include "sim/sim.h"
#include "util.h"

#define REL(a, b)                                                              \
	(fabs((double)(a) - (double)(b)) / fmax(fabs((double)(b)), 1e-300))

/* tp_test_toy_type's round numbers with bf16 at `bf16` (0: no bf16). */
static struct tp_device_type toy_type(const char *name, double bf16)
{
	struct tp_device_type t = tp_test_toy_type(name);

	t.peak_flops[TP_DTYPE_BF16] = bf16;
	return t;
}

static void toy_cluster(struct tp_cluster *c, const struct tp_device_type *t,
			uint32_t gpus)
{
	struct tp_error err;
	uint32_t ty;

	tp_cluster_init(c);
	ck_assert_int_eq(tp_cluster_add_type(c, t, &ty, &err), TP_OK);
	ck_assert_int_eq(
	    tp_cluster_build_node(
		c,
		&(struct tp_node_build){"node0", ty, gpus, TP_LINK_NVSWITCH,
					100e9, 0, gpus, 10e9, 0, false},
		NULL, &err),
	    TP_OK);
	ck_assert_int_eq(tp_cluster_finalize(c, &err), TP_OK);
}

/* n matmuls in a chain: `flop` forward FLOP per sample (backward 2x),
 * `pbytes` parameter bytes each, 1 MB edges. */
static void chain_model(struct tp_model *m, enum tp_dtype dt, uint32_t n,
			double flop, double pbytes, int64_t batch)
{
	const struct tp_test_chain s = {
		.n = n, .dtype = dt, .flop = flop, .pbytes = pbytes,
		.saved = 1e6, .out = 1e6, .edge = 1e6, .batch = batch};
	tp_test_chain_model(m, &s);
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
	ck_assert_int_eq(tp_plan_add_group_degrees(
			     &p, ops, (uint32_t)m->ops.n, &dev, 1,
			     &(struct tp_plan_degrees){1, 1, 1}, NULL, NULL),
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

/* fp8: the linear layers' GEMMs at the FP8 peak, the attention core, the
 * router and the LM head at the bf16 peak (precision.h). */
START_TEST(test_fp8_kernel_peaks)
{
	struct tp_device_type h = toy_type("H100ish", 100e12);
	struct tp_cost_device d;
	struct tp_op op = tp_op_default();
	double f, b;

	h.peak_flops[TP_DTYPE_FP8] = 400e12;
	tp_cost_device_init(&d, &h, TP_DTYPE_FP8, 0);
	ck_assert(d.peak == 400e12);
	ck_assert(d.peak_hi == 100e12);
	/* 4e12 FLOP, flat curve (half point 1e-9): 0.01 s at fp8, 0.04 s at
	 * bf16, no bytes, no launch cost */
	ck_assert(REL(tp_cost_kernel_s(&d, TP_OP_MATMUL, 4e12, 0, 1), 0.01) <
		  1e-6);
	ck_assert(REL(tp_cost_kernel_s(&d, TP_OP_ATTENTION, 4e12, 0, 1),
		      0.04) < 1e-6);
	ck_assert(REL(tp_cost_kernel_s(&d, TP_OP_ROUTER, 4e12, 0, 1), 0.04) <
		  1e-6);
	/* the LM head (vocab split): forward 4e12 / 1e14 = 0.04 s, backward
	 * 8e12 / 1e14 = 0.08 s */
	op.kind = TP_OP_MATMUL;
	op.tp_split = TP_SPLIT_VOCAB;
	op.flop = 4e12;
	op.backward_flop = 8e12;
	tp_cost_op_s(&d, &op, 1, 1, 1, 2, &f, &b);
	ck_assert_msg(REL(f, 0.04) < 1e-6 && REL(b, 0.08) < 1e-6, "%g %g", f,
		      b);
	op.tp_split = TP_SPLIT_COLUMN;
	tp_cost_op_s(&d, &op, 1, 1, 1, 2, &f, &b);
	ck_assert(REL(f, 0.01) < 1e-6 && REL(b, 0.02) < 1e-6);
	/* a bf16 model on the same type: everything at the bf16 peak */
	tp_cost_device_init(&d, &h, TP_DTYPE_BF16, 0);
	ck_assert(d.peak == 100e12 && d.peak_hi == 100e12);
}
END_TEST

/* fp8 model state: bf16 mixed precision (2 + 2 + 12 with Adam) plus the
 * 2-byte FP8 weight cache in the weights; the step writes the cache. */
START_TEST(test_fp8_state)
{
	struct tp_cost_state s8, s16;

	tp_cost_state_init(&s8, TP_DTYPE_FP8, TP_OPT_ADAM);
	tp_cost_state_init(&s16, TP_DTYPE_BF16, TP_OPT_ADAM);
	ck_assert(s16.weights == 2 && s16.grads == 2 && s16.optim == 12);
	ck_assert(s8.weights == 4 && s8.grads == 2 && s8.optim == 12);
	ck_assert(s8.step == s16.step + 2);
	/* (4 + 2 + 12) / 2 bytes per fp8 (bf16-stored) parameter byte */
	ck_assert(tp_cost_state_factor(TP_DTYPE_FP8, TP_OPT_ADAM) == 9);
	ck_assert(tp_dtype_bytes(TP_DTYPE_FP8) == 2);
	ck_assert_int_eq(tp_dtype_parse("fp8"), TP_DTYPE_FP8);
	ck_assert_str_eq(tp_dtype_name(TP_DTYPE_FP8), "fp8");
}
END_TEST

/* A chain of matmuls simulated in fp8 against the hand figure, and its
 * weights' memory; refused on a type without FP8 units. */
START_TEST(test_fp8_simulated)
{
	struct tp_device_type h = toy_type("H100ish", 100e12);
	struct tp_sim_options o;
	struct tp_error err;
	struct tp_cluster c;
	struct tp_model m;
	struct tp_report r;
	double expect;

	h.peak_flops[TP_DTYPE_FP8] = 400e12;
	toy_cluster(&c, &h, 1);
	chain_model(&m, TP_DTYPE_FP8, 4, 1e12, 2e9, 8);
	run_single(&m, &c, &r);
	/* per op at 400 TFLOP/s: forward max(8e12/4e14, (8e6 + 2e9)/1e12)
	 * = 0.02 s, backward max(16e12/4e14, (2*8e6 + 4e9)/1e12) = 0.04 s;
	 * step 1e9 params * (28 + 2) B / 1e12 = 0.03 s; Transformer
	 * Engine's cast-transposes (sim/README section 2): forward twice
	 * the 8e6 input bytes of ops 1-3 (op 0 has no input), backward
	 * twice the 8e6 output-gradient bytes of all 4, at 1e12 B/s */
	expect = 4 * (0.02 + 0.04) + 4 * 0.03 + (3 + 4) * 2 * 8e6 / 1e12;
	ck_assert_msg(REL(r.iteration_time_s, expect) < 1e-9, "%.9g vs %.9g",
		      r.iteration_time_s, expect);
	/* weights 4e9 params * (2 bf16 + 2 FP8 cache) B */
	ck_assert_msg(REL(r.devices[0].memory.weights, 16e9) < 1e-9,
		      "%.9g", r.devices[0].memory.weights);
	ck_assert_msg(strstr(r.precision, "fp8 (Transformer Engine hybrid") !=
			      NULL,
		      "%s", r.precision);
	tp_report_release(&r);
	tp_cluster_release(&c);

	/* no FP8 units: refused, naming the type and the fix */
	h = toy_type("A100ish", 100e12);
	toy_cluster(&c, &h, 1);
	tp_sim_options_default(&o);
	ck_assert_ptr_null(tp_sim_new(&m, &c, &o, &err));
	ck_assert_int_eq(err.status, TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "A100ish") && strstr(err.msg,
							   "--dtype bf16"),
		      "%s", err.msg);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* A norm feeding an fp8 matmul (Transformer Engine's LayerNormLinear:
 * the norm writes E4M3 itself) leaves only the transpose of the input,
 * its bytes once instead of twice: 8 samples x 1e6 B at 1e12 B/s = 8e-6 s
 * less than after an elementwise op of the same (free) cost; bf16 has
 * no casts.  Failed with the norm's input cast counted twice. */
static double norm_then_matmul(enum tp_op_kind first, enum tp_dtype dt)
{
	struct tp_device_type h = toy_type("H100ish", 100e12);
	struct tp_cluster c;
	struct tp_model m;
	struct tp_report r;
	struct tp_error err;
	struct tp_op op = tp_op_default();
	uint32_t a, b;
	double t;

	h.peak_flops[TP_DTYPE_FP8] = 400e12;
	toy_cluster(&c, &h, 1);
	tp_model_init(&m);
	m.global_batch = 8;
	m.dtype = dt;
	m.optimizer = TP_OPT_ADAM;
	op.name = "ln";
	op.kind = first;
	op.layer = 0;
	op.out_bytes = 1e6;
	ck_assert_int_eq(tp_model_add_op(&m, &op, &a, &err), TP_OK);
	op = tp_op_default();
	op.name = "fc";
	op.kind = TP_OP_MATMUL;
	op.layer = 0;
	op.flop = 1e12;
	op.backward_flop = 2e12;
	op.param_bytes = 2e9;
	op.out_bytes = 1e6;
	ck_assert_int_eq(tp_model_add_op(&m, &op, &b, &err), TP_OK);
	ck_assert_int_eq(tp_model_add_edge(&m, a, b, 1e6, &err), TP_OK);
	ck_assert_int_eq(tp_model_finalize(&m, &err), TP_OK);
	run_single(&m, &c, &r);
	t = r.iteration_time_s;
	tp_report_release(&r);
	tp_model_release(&m);
	tp_cluster_release(&c);
	return t;
}

START_TEST(test_fp8_casts_after_norm)
{
	double ew = norm_then_matmul(TP_OP_ELEMENTWISE, TP_DTYPE_FP8);
	double ln = norm_then_matmul(TP_OP_NORM, TP_DTYPE_FP8);

	ck_assert_msg(REL(ew - ln, 8e-6) < 1e-6, "%.12g - %.12g", ew, ln);
	ck_assert_msg(REL(norm_then_matmul(TP_OP_ELEMENTWISE, TP_DTYPE_BF16),
			  norm_then_matmul(TP_OP_NORM, TP_DTYPE_BF16)) < 1e-12,
		      "bf16 differs");
}
END_TEST

/* From the command line: an fp8 Llama-2-7B on V100s exits 2 saying --dtype
 * bf16; on an H100 node the plan exports Megatron's FP8 flags and
 * TorchTitan's float8 converter. */
START_TEST(test_fp8_cli)
{
	char model[512], plan[512];
	const char *dir = tp_test_tmpdir();
	struct tp_run r;

	snprintf(model, sizeof(model), "%s/gpt-fp8.json", dir);
	snprintf(plan, sizeof(plan), "%s/gpt-fp8-plan.json", dir);
	{
		char hf[512];
		const char *argv[] = {"tagplan", "model",   hf,	    "--seq",
				      "512",	 "--batch", "32",   "--dtype",
				      "fp8",	 "-o",	    model, NULL};
		snprintf(hf, sizeof(hf), "hf:%s", tp_test_path("data/hf/llama-2-7b.json"));
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_msg(r.status == 0, "%s", r.err);
	tp_run_free(&r);
	{
		const char *argv[] = {
		    "tagplan", "simulate", "-m", model, "-t",
		    tp_data_file("topologies/dgx1-v100.json"), "-s", "dp=8",
		    NULL};
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_int_eq(r.status, 2);
	ck_assert_msg(strstr(r.err, "no FP8 units") &&
			      strstr(r.err, "--dtype bf16"),
		      "%s", r.err);
	ck_assert_str_eq(r.out, "");
	tp_run_free(&r);
	{
		const char *argv[] = {
		    "tagplan",	   "plan",
		    "-m",	   model,
		    "-t",	   tp_data_file("topologies/dgx-h100.json"),
		    "--playouts",  "20",
		    "--threads",   "1",
		    "--no-timing", "-o",
		    plan,	   NULL};
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_msg(strstr(r.err, "precision: fp8") != NULL, "%s", r.err);
	tp_run_free(&r);
	{
		const char *argv[] = {"tagplan", "export", "-p", plan, NULL};
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_msg(strstr(r.out, "--fp8-format hybrid") &&
			      strstr(r.out, "--fp8-amax-history-len 1024") &&
			      strstr(r.out, "--bf16"),
		      "%s", r.out);
	tp_run_free(&r);
	{
		const char *argv[] = {
		    "tagplan",	   "plan",
		    "-m",	   model,
		    "-t",	   tp_data_file("topologies/dgx-h100.json"),
		    "--runtime",   "fsdp2",
		    "--playouts",  "20",
		    "--threads",   "1",
		    "--no-timing", "-o",
		    plan,	   NULL};
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_msg(r.status == 0, "%s", r.err);
	tp_run_free(&r);
	{
		const char *argv[] = {"tagplan", "export", "-p", plan, NULL};
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_msg(strstr(r.out, "converters = [\"float8\"]") &&
			      strstr(r.out, "mixed_precision_param = "
					    "\"bfloat16\""),
		      "%s", r.out);
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
	tcase_add_test(tc, test_fp8_kernel_peaks);
	tcase_add_test(tc, test_fp8_state);
	tcase_add_test(tc, test_fp8_simulated);
	tcase_add_test(tc, test_fp8_casts_after_norm);
	tcase_add_test(tc, test_fp8_cli);
	suite_add_tcase(s, tc);
	return s;
}
