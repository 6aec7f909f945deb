/*
 * test_runtime.c - runtime profiles (core/runtime.h, io runtime_io.c):
 * the shipped profiles load and say what their sources say, "none" is
 * the unconstrained runtime, and bad profiles are refused with a JSON
 * path.
 */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/runtime.h"
#include "io/io.h"
#include "util.h"

static void use_data(void)
{
	setenv("TAGPLAN_DATA", tp_data_file(""), 1);
}

/* Every data/runtimes/NAME.json loads by its name and is called NAME. */
START_TEST(test_runtime_shipped_load)
{
	DIR *d = opendir(tp_data_file("runtimes"));
	struct dirent *de;
	int n = 0;

	use_data();
	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL) {
		char name[128];
		size_t l = strlen(de->d_name);
		struct tp_runtime rt;
		struct tp_error err;
		if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(l - 5), de->d_name);
		tp_error_clear(&err);
		ck_assert_msg(tp_runtime_find(name, &rt, &err) == TP_OK, "%s: %s",
			      name, err.msg);
		ck_assert_str_eq(rt.name, name);
		/* every shipped stack exports, but hai-llm (DeepSeek's
		   framework is not public) */
		ck_assert(rt.can.launcher != TP_LAUNCH_NONE ||
			  !strcmp(name, "hai-llm"));
		ck_assert(!(rt.can.syncs & (1u << TP_SYNC_PS)));
		n++;
	}
	closedir(d);
	ck_assert_int_ge(n, 6);
}
END_TEST

/* What the profiles claim, against their sources (spot checks). */
START_TEST(test_runtime_shipped_figures)
{
	struct tp_runtime rt;
	struct tp_error err;

	use_data();
	ck_assert_int_eq(tp_runtime_find("megatron-core", &rt, &err), TP_OK);
	ck_assert(rt.behaviour.dp_overlap && rt.behaviour.p2p_async);
	ck_assert_int_eq(rt.behaviour.grad_reduce, TP_GRAD_REDUCE_FP32);
	ck_assert(rt.behaviour.grad_bucket_bytes == 160e6);
	ck_assert_int_eq(rt.can.max_zero, 1);
	ck_assert(!(rt.can.schedules & (1u << TP_SCHEDULE_GPIPE)));
	ck_assert(rt.can.schedules & (1u << TP_SCHEDULE_INTERLEAVED));
	ck_assert_int_eq(rt.can.launcher, TP_LAUNCH_MEGATRON);
	ck_assert_int_eq(tp_runtime_find("deepspeed", &rt, &err), TP_OK);
	ck_assert_int_eq(rt.can.max_zero, 3);
	ck_assert_int_eq(rt.can.max_zero_pipelined, 1);
	ck_assert(!(rt.can.schedules & (1u << TP_SCHEDULE_INTERLEAVED)));
	ck_assert_int_eq(tp_runtime_find("ddp", &rt, &err), TP_OK);
	ck_assert(!rt.can.tensor_parallel && !rt.can.pipeline_parallel);
	ck_assert(rt.can.lossy & (1u << TP_LOSSY_POWERSGD));
	ck_assert(rt.behaviour.grad_bucket_bytes == 25.0 * 1048576);
}
END_TEST

START_TEST(test_runtime_none_and_unknown)
{
	struct tp_runtime rt;
	struct tp_error err;

	use_data();
	ck_assert_int_eq(tp_runtime_find("none", &rt, &err), TP_OK);
	ck_assert_str_eq(rt.name, "none");
	ck_assert_int_eq(rt.can.launcher, TP_LAUNCH_NONE);
	ck_assert(rt.can.syncs & (1u << TP_SYNC_PS));
	ck_assert_int_eq(rt.can.max_zero, 3);
	ck_assert(rt.behaviour.dp_overlap && !rt.behaviour.p2p_async);
	tp_error_clear(&err);
	ck_assert_int_eq(tp_runtime_find("megatron-cor", &rt, &err),
			 TP_EUSAGE);
	ck_assert_msg(strstr(err.msg, "unknown runtime \"megatron-cor\"") &&
			      strstr(err.msg, "megatron-core") &&
			      strstr(err.msg, "none"),
		      "%s", err.msg);
}
END_TEST

/* A profile edited from a shipped one: s/from/to/ applied once. */
static const char *edited(const char *from, const char *to)
{
	static char path[4096];
	size_t len;
	char *text = tp_test_read(tp_data_file("runtimes/ddp.json"), &len);
	char *at, *out;

	ck_assert_ptr_nonnull(text);
	at = strstr(text, from);
	ck_assert_msg(at != NULL, "%s", from);
	out = malloc(len + strlen(to) + 1);
	memcpy(out, text, (size_t)(at - text));
	strcpy(out + (at - text), to);
	strcat(out, at + strlen(from));
	snprintf(path, sizeof(path), "%s/edited.json", tp_test_tmpdir());
	ck_assert_int_eq(tp_test_write(path, out, strlen(out)), 0);
	free(out);
	free(text);
	return path;
}

static void expect_bad(const char *from, const char *to, const char *jpath,
		       const char *msg)
{
	struct tp_runtime rt;
	struct tp_error err;
	const char *p = edited(from, to);

	tp_error_clear(&err);
	ck_assert_int_eq(tp_runtime_find(p, &rt, &err), TP_EINPUT);
	ck_assert_msg(strcmp(err.path, jpath) == 0, "%s: %s", err.path,
		      err.msg);
	ck_assert_msg(strstr(err.msg, msg), "%s", err.msg);
	ck_assert_msg(strstr(err.file, "edited.json"), "%s", err.file);
}

START_TEST(test_runtime_bad_profiles)
{
	struct tp_runtime rt;
	struct tp_error err;

	use_data();
	/* the unedited copy loads through its path */
	ck_assert_int_eq(tp_runtime_find(edited("\"ddp\"", "\"ddp\""), &rt,
					 &err),
			 TP_OK);
	expect_bad("\"grad_reduce\": \"fp32\"", "\"grad_reduce\": \"fp64\"",
		   "$.behaviour.grad_reduce", "fp32");
	expect_bad("\"tf32\": \"torch", "\"tf33\": \"torch", "$.sources.tf32",
		   "say where");
	expect_bad("\"max_zero\": 1", "\"max_zero\": 4", "$.can.max_zero",
		   "0");
	expect_bad("\"lossy\": [\"none\", \"fp16\"",
		   "\"lossy\": [\"none\", \"none\"", "$.can.lossy[1]", "twice");
	expect_bad("\"launcher\": \"torchrun\"", "\"launcher\": \"slurm\"",
		   "$.can.launcher", "torchtitan");
	expect_bad("\"name\": \"ddp\"", "\"name\": \"none\"", "$.name",
		   "unconstrained");
	expect_bad("\"schedules\": [\"1f1b\"]", "\"schedules\": []",
		   "$.can.schedules", "at least one");
	/* the optional attention kernel: one of the named ones, with its
	 * source, and only for a fused attention */
	expect_bad("\"tf32\": true\n",
		   "\"tf32\": true, \"attention_kernel\": \"fa4\"\n",
		   "$.behaviour.attention_kernel", "fa2 | fa3 | triton_fa");
	expect_bad("\"tf32\": true\n",
		   "\"tf32\": true, \"attention_kernel\": \"gemm\"\n",
		   "$.behaviour.attention_kernel", "fa2 | fa3 | triton_fa");
	expect_bad("\"tf32\": true\n",
		   "\"tf32\": true, \"attention_kernel\": \"fa2\"\n",
		   "$.sources.attention_kernel", "say where");
	expect_bad("\"fused_attention\": true",
		   "\"fused_attention\": false, \"attention_kernel\": \"fa2\"",
		   "$.behaviour.attention_kernel", "fused_attention is off");
	/* the gradient buffer's dtype: model | fp32, with its source */
	expect_bad("\"tf32\": true\n",
		   "\"tf32\": true, \"grad_buffer\": \"fp64\"\n",
		   "$.behaviour.grad_buffer", "model | fp32");
	expect_bad("\"tf32\": true\n",
		   "\"tf32\": true, \"grad_buffer\": \"fp32\"\n",
		   "$.sources.grad_buffer", "say where");
	/* the GEMM shape curve's half point: positive, with its source */
	expect_bad("\"gemm_shape_half\": 2600000,",
		   "\"gemm_shape_half\": 0,", "$.behaviour.gemm_shape_half",
		   "0");
	expect_bad("\"gemm_shape_half\": \"cuBLAS",
		   "\"gemm_shape_hal\": \"cuBLAS",
		   "$.sources.gemm_shape_half", "say where");
	/* the NIC cap of NCCL's socket transport: positive, with a source */
	expect_bad("\"tf32\": true\n",
		   "\"tf32\": true, \"nic_socket_Bps\": 0\n",
		   "$.behaviour.nic_socket_Bps", "0");
	expect_bad("\"tf32\": true\n",
		   "\"tf32\": true, \"nic_socket_Bps\": 1.5e9\n",
		   "$.sources.nic_socket_Bps", "say where");
	/* the message cap past NCCL's socket buffer: positive, both
	 * fields together, with a source */
	expect_bad("\"tf32\": true\n",
		   "\"tf32\": true, \"p2p_socket_Bps\": 0\n",
		   "$.behaviour.p2p_socket_Bps", "0");
	expect_bad("\"tf32\": true\n",
		   "\"tf32\": true, \"p2p_socket_Bps\": 1.3e8\n",
		   "$.behaviour.p2p_socket_Bps", "go together");
	expect_bad("\"tf32\": true\n",
		   "\"tf32\": true, \"p2p_socket_eager_bytes\": 4194304\n",
		   "$.behaviour.p2p_socket_eager_bytes", "NCCL_BUFFSIZE");
	expect_bad("\"tf32\": true\n",
		   "\"tf32\": true, \"p2p_socket_Bps\": 1.3e8, "
		   "\"p2p_socket_eager_bytes\": 4194304\n",
		   "$.sources.p2p_socket_Bps", "say where");
	/* the fitted GEMM efficiencies: fractions (0, 1], with a source */
	expect_bad("\"cuda_core_gemm_eff\": 0.83,",
		   "\"cuda_core_gemm_eff\": 1.2,",
		   "$.behaviour.cuda_core_gemm_eff", "1");
	expect_bad("\"cuda_core_gemm_eff\": \"FITTED",
		   "\"cuda_core_gemm_ef\": \"FITTED",
		   "$.sources.cuda_core_gemm_eff", "say where");
	expect_bad("\"tf32\": true\n",
		   "\"tf32\": true, \"hopper_gemm_scale\": 0\n",
		   "$.behaviour.hopper_gemm_scale", "0");
	expect_bad("\"tf32\": true\n",
		   "\"tf32\": true, \"hopper_gemm_scale\": 0.8\n",
		   "$.sources.hopper_gemm_scale", "say where");
	/* NCCL's channels inside a node: 1 to 4 rings, with a source */
	expect_bad("\"tf32\": true\n",
		   "\"tf32\": true, \"tp_node_rings\": 0.5\n",
		   "$.behaviour.tp_node_rings", "expected 1 to 4");
	expect_bad("\"tf32\": true\n",
		   "\"tf32\": true, \"tp_node_rings\": 2\n",
		   "$.sources.tp_node_rings", "say where");
	/* the MoE exchange's: SMs kept for an overlap that is off; a source */
	expect_bad("\"tf32\": true\n",
		   "\"tf32\": true, \"comm_sm_share\": 0.2\n",
		   "$.behaviour.comm_sm_share", "ep_overlap");
	expect_bad("\"tf32\": true\n", "\"tf32\": true, \"ep_overlap\": true\n",
		   "$.sources.ep_overlap", "say where");
	expect_bad("\"tf32\": true\n", "\"tf32\": true, \"cp_comm\": \"ring\"\n",
		   "$.behaviour.cp_comm", "all_gather");
}
END_TEST

/* A plan made for a runtime without a launcher (hai-llm) says so and
 * export refuses it with the way out. */
START_TEST(test_runtime_no_launcher_export)
{
	char plan[512];
	const char *m = tp_data_file("models/gpt3-1.3b.json");
	const char *t = tp_data_file("tag-testbed.json");
	struct tp_run r;

	snprintf(plan, sizeof(plan), "%s/ph.json", tp_test_tmpdir());
	{
		const char *argv[] = {"tagplan", "plan", "-m", m, "-t", t,
				      "--playouts", "10", "--threads", "1",
				      "--runtime", "hai-llm", "-o", plan,
				      NULL};
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0, "%s", r.err);
		ck_assert_msg(strstr(r.err, "no public launch configuration"),
			      "%s", r.err);
		tp_run_free(&r);
	}
	{
		const char *argv[] = {"tagplan", "export", "-p", plan, NULL};
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_int_eq(r.status, 1);
		ck_assert_uint_eq(r.out_len, 0);
		ck_assert_msg(strstr(r.err, "made for hai-llm, which has no "
					    "launch configuration"),
			      "%s", r.err);
		tp_run_free(&r);
	}
}
END_TEST


static double iter_time(const char *json)
{
	const char *p = strstr(json, "\"iteration_time_s\": ");
	return p ? atof(p + strlen("\"iteration_time_s\": ")) : -1;
}

/* plan --runtime records the runtime and its bucket; simulate -p uses the
 * plan's runtime, --runtime another; check too; a bad name is exit 2. */
START_TEST(test_runtime_commands)
{
	char plan[512];
	const char *m = tp_data_file("models/gpt3-1.3b.json");
	const char *t = tp_data_file("tag-testbed.json");
	struct tp_run r;
	double tp, tnone;
	char *text;

	snprintf(plan, sizeof(plan), "%s/pm.json", tp_test_tmpdir());
	{
		const char *argv[] = {"tagplan", "plan", "-m", m, "-t", t,
				      "--baseline", "megatron", "--runtime",
				      "megatron-core", "-q", "-o", plan, NULL};
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0, "%s", r.err);
		tp_run_free(&r);
	}
	text = tp_test_read(plan, NULL);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strstr(text, "\"runtime\": \"megatron-core\""), "%s",
		      text);
	ck_assert(strstr(text, "\"grad_bucket_bytes\": 160000000,"));
	/* a schedule megatron-core runs (no GPipe); the baseline picked
	   interleaved until megatron-core's fp32 gradient buffer (2 more
	   bytes per parameter on the testbed's 11-16 GB cards), now 1f1b */
	ck_assert(strstr(text, "\"schedule\": \"interleaved\"") ||
		  strstr(text, "\"schedule\": \"1f1b\""));
	ck_assert(!strstr(text, "\"schedule\": \"gpipe\""));
	tp = iter_time(strstr(text, "\"summary\""));
	free(text);
	{
		const char *argv[] = {"tagplan", "simulate", "-p", plan, "-q",
				      NULL};
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0, "%s", r.err);
		ck_assert_msg(iter_time(r.out) == tp, "%g vs %g",
			      iter_time(r.out), tp);
		tp_run_free(&r);
	}
	{
		/* another runtime prices the plan otherwise (none:
		   blocking pipeline sends, the model's gradient dtype,
		   GEMMs by FLOP alone): on the interleaved plan the
		   baseline picked before the fp32 gradient buffer none
		   was slower, on the 1f1b plan it picks now none is 0.4%
		   faster (megatron-core prices GEMMs by shape); without
		   fused attention
		   its quadratic activations may not fit (exit 1, the
		   report still written) */
		const char *argv[] = {"tagplan", "simulate", "-p", plan, "-q",
				      "--runtime", "none", NULL};
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0 || r.status == 1, "%s", r.err);
		tnone = iter_time(r.out);
		ck_assert_msg(fabs(tnone / tp - 1) > 1e-3, "%g vs %g", tnone, tp);
		tp_run_free(&r);
	}
	{
		const char *argv[] = {"tagplan", "check", "-p", plan, "--json",
				      NULL};
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0, "%s", r.err);
		/* check simulates under the plan's runtime too */
		ck_assert_msg(fabs(iter_time(r.out) / tp - 1) < 1e-9, "%s",
			      r.out);
		tp_run_free(&r);
	}
	{
		const char *argv[] = {"tagplan", "plan", "-m", m, "-t", t,
				      "--runtime", "megatron-cor", NULL};
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_int_eq(r.status, 2);
		ck_assert_uint_eq(r.out_len, 0);
		ck_assert_msg(strstr(r.err, "unknown runtime \"megatron-cor\" "
					    "(did you mean megatron-core?); "
					    "shipped: ddp, deepspeed, fsdp2, "
					    "hai-llm, megatron-core"),
			      "%s", r.err);
		tp_run_free(&r);
	}
}
END_TEST

Suite *suite_runtime(void)
{
	Suite *s = suite_create("runtime");
	TCase *tc = tcase_create("profiles");

	tcase_set_timeout(tc, 60);

	tcase_add_test(tc, test_runtime_shipped_load);
	tcase_add_test(tc, test_runtime_shipped_figures);
	tcase_add_test(tc, test_runtime_none_and_unknown);
	tcase_add_test(tc, test_runtime_bad_profiles);
	tcase_add_test(tc, test_runtime_commands);
	tcase_add_test(tc, test_runtime_no_launcher_export);
	suite_add_tcase(s, tc);
	return s;
}
