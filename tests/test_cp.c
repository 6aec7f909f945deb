/*
 * test_cp.c - context parallelism (cp=C): the strategy key, the plan's
 * per-group field (read, written, validated), the export flags, the
 * simulator's ring attention against hand calculations, and cp in the
 * search's action space.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cluster.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/runtime.h"
#include "core/strategy.h"
#include "core/strbuf.h"
#include "export/export.h"
#include "io/build.h"
#include "io/io.h"
#include "search/actions.h"
#include "search/coarsen.h"
#include "sim/sim.h"
#include "util.h"

static void use_data(void)
{
	setenv("TAGPLAN_DATA", tp_data_file(""), 1);
}

/* A 4-layer GPT, sequence `seq`, batch 16, on `spec` over HDR IB. */
static void gpt_on(struct tp_model *m, struct tp_cluster *c, int64_t seq,
		   const char *spec)
{
	struct tp_gpt_dims d;
	struct tp_error err;
	const char *specs[] = {spec};

	use_data();
	tp_gpt_dims_default(&d);
	d.hidden = 1024;
	d.layers = 4;
	d.heads = 16;
	d.seq = seq;
	d.vocab = 32000;
	d.batch = 16;
	d.name = "gpt-4";
	tp_model_init(m);
	tp_cluster_init(c);
	ck_assert_int_eq(tp_build_gpt(&d, m, &err), TP_OK);
	ck_assert_msg(tp_build_topology(specs, 1, "ib-hdr", 1, c, &err) ==
			  TP_OK,
		      "%s", err.msg);
}

static enum tp_status to_plan(const char *text, const struct tp_model *m,
			      const struct tp_cluster *c, struct tp_plan *p,
			      struct tp_error *err)
{
	struct tp_strategy s;
	enum tp_status st = tp_strategy_parse(text, &s, err);

	return st ? st : tp_strategy_to_plan(&s, m, c, p, err);
}

/* cp in the strategy string: parsed, written only above 1, errors. */
START_TEST(test_cp_strategy_string)
{
	struct tp_strategy s;
	struct tp_error err;
	char buf[256];

	ck_assert_int_eq(tp_strategy_parse("tp=8,cp=16,pp=16,dp=8", &s, &err),
			 TP_OK);
	ck_assert_uint_eq(s.cp, 16);
	tp_strategy_format(&s, buf, sizeof(buf));
	ck_assert_msg(strncmp(buf, "tp=8,cp=16,pp=16,dp=8,", 22) == 0, "%s",
		      buf);
	ck_assert_int_eq(tp_strategy_parse(buf, &s, &err), TP_OK);
	ck_assert_uint_eq(s.cp, 16);
	ck_assert_int_eq(tp_strategy_parse("tp=2", &s, &err), TP_OK);
	ck_assert_uint_eq(s.cp, 1);
	tp_strategy_format(&s, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "cp=") == NULL, "%s", buf);
	ck_assert_int_eq(tp_strategy_parse("cp=0", &s, &err), TP_EUSAGE);
	ck_assert_msg(strstr(err.msg, "cp=0: expected a positive integer"),
		      "%s", err.msg);
	ck_assert_int_eq(tp_strategy_parse("cp=two", &s, &err), TP_EUSAGE);
	ck_assert_int_eq(tp_strategy_parse("cp=2,cp=2", &s, &err), TP_EUSAGE);
}
END_TEST

/* The expansion's rank order (tp fastest, then cp, then dp, then pp)
 * and its errors. */
START_TEST(test_cp_strategy_plan)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_error err;
	const struct tp_plan_group *g;

	gpt_on(&m, &c, 1024, "dgx-a100:2");
	tp_plan_init(&p);
	ck_assert_msg(to_plan("tp=2,cp=2,pp=2,mb=1", &m, &c, &p, &err) ==
			  TP_OK,
		      "%s", err.msg);
	ck_assert_uint_eq(p.groups.n, 2);
	g = &p.groups.v[1];
	ck_assert_uint_eq(g->cp, 2);
	ck_assert_uint_eq(g->tp, 2);
	ck_assert_uint_eq(g->dp, 2);
	ck_assert_uint_eq(g->n_devices, 8);
	/* stage 1 = devices 8..15; device (r*cp + c)*tp + k */
	for (uint32_t k = 0; k < 8; k++)
		ck_assert_uint_eq(tp_plan_group_devs(&p, 1)[k], 8 + k);
	ck_assert_uint_eq(p.micro_batches, 8); /* 16 / (mb 1 x dp 2) */
	ck_assert_int_eq(tp_plan_validate(&p, &m, &c, &err), TP_OK);
	/* 1024 tokens do not split into 2*3 chunks */
	ck_assert_int_eq(to_plan("tp=2,cp=3,dp=2", &m, &c, &p, &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "2*cp = 6 equal chunks"), "%s",
		      err.msg);
	/* tp*cp*pp*dp must be the device count */
	ck_assert_int_eq(to_plan("tp=2,cp=4,dp=4", &m, &c, &p, &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "tp*cp*pp*dp = 2*4*1*4 = 32"), "%s",
		      err.msg);
	ck_assert_int_eq(to_plan("tp=8,cp=4", &m, &c, &p, &err), TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "tp*cp*pp = 32 exceeds"), "%s",
		      err.msg);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* The plan file: cp written per group above 1, read back; validation
 * errors with their JSON path. */
START_TEST(test_cp_plan_file)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p, q;
	struct tp_strbuf out;
	struct tp_error err;
	char *txt, *at;

	gpt_on(&m, &c, 1024, "dgx-a100:2");
	tp_plan_init(&p);
	tp_plan_init(&q);
	ck_assert_int_eq(to_plan("tp=2,cp=4,pp=2", &m, &c, &p, &err), TP_OK);
	tp_strbuf_init(&out);
	tp_plan_write(&p, &m, &c, &out);
	ck_assert_msg(strstr(out.buf, "\"cp\": 4") != NULL, "%s", out.buf);
	ck_assert_int_eq(tp_plan_load("p.json", out.buf, out.len, &m, &c, NULL,
				      &q, &err),
			 TP_OK);
	ck_assert_uint_eq(q.groups.v[0].cp, 4);
	ck_assert_uint_eq(q.groups.v[1].cp, 4);
	ck_assert_uint_eq(q.groups.v[1].dp, 1);
	/* cp 4 -> 3: 8 devices are not dp x 3 x 2 */
	txt = strdup(out.buf);
	at = strstr(txt, "\"cp\": 4");
	at[6] = '3';
	ck_assert_int_eq(tp_plan_load("p.json", txt, strlen(txt), &m, &c,
				      NULL, &q, &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.path, "$.groups[0].cp") &&
			      strstr(err.msg, "does not divide the group's 8 "
					      "devices"),
		      "%s %s", err.path, err.msg);
	/* the second group with cp 2 (dp 2): the groups disagree */
	at[6] = '4';
	at = strstr(strstr(txt, "\"cp\": 4") + 1, "\"cp\": 4");
	ck_assert_ptr_nonnull(at);
	at[6] = '2';
	at = strstr(strstr(txt, "\"dp\": 1") + 1, "\"dp\": 1");
	ck_assert_ptr_nonnull(at);
	at[6] = '2';
	ck_assert_int_eq(tp_plan_load("p.json", txt, strlen(txt), &m, &c,
				      NULL, &q, &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.path, "$.groups[1].cp") &&
			      strstr(err.msg, "differs from the first group's "
					      "cp=4"),
		      "%s %s", err.path, err.msg);
	free(txt);
	/* a plan without context parallelism is written as before */
	ck_assert_int_eq(to_plan("tp=2,pp=2", &m, &c, &p, &err), TP_OK);
	tp_strbuf_release(&out);
	tp_strbuf_init(&out);
	tp_plan_write(&p, &m, &c, &out);
	ck_assert(strstr(out.buf, "\"cp\"") == NULL);
	tp_strbuf_release(&out);
	tp_plan_release(&p);
	tp_plan_release(&q);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* The sequence rule on a loaded plan: 2*cp must divide the tokens. */
START_TEST(test_cp_plan_sequence)
{
	struct tp_model m, m2;
	struct tp_cluster c, c2;
	struct tp_plan p;
	struct tp_error err;

	gpt_on(&m, &c, 1024, "dgx-a100:1");
	gpt_on(&m2, &c2, 1000, "dgx-a100:1");
	tp_plan_init(&p);
	ck_assert_int_eq(to_plan("cp=8", &m, &c, &p, &err), TP_OK);
	ck_assert_int_eq(tp_plan_validate(&p, &m, &c, &err), TP_OK);
	/* 1000 tokens: 16 chunks do not divide them */
	ck_assert_int_eq(tp_plan_validate(&p, &m2, &c2, &err), TP_EINPUT);
	ck_assert_msg(strstr(err.path, "$.groups[0].cp") &&
			      strstr(err.msg, "sequence of 1000 tokens"),
		      "%s %s", err.path, err.msg);
	/* no sequence at all */
	m2.seq_len = 0;
	ck_assert_int_eq(tp_plan_validate(&p, &m2, &c2, &err), TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "no sequence length"), "%s", err.msg);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
	tp_model_release(&m2);
	tp_cluster_release(&c2);
}
END_TEST

static void export_to(const struct tp_plan *p, const struct tp_model *m,
		      const struct tp_cluster *c, const char *runtime,
		      enum tp_export_target t, struct tp_strbuf *out,
		      enum tp_status want)
{
	struct tp_runtime rt;
	struct tp_export_spec spec;
	struct tp_error err;
	enum tp_status st;

	ck_assert_msg(tp_runtime_find(runtime, &rt, &err) == TP_OK, "%s",
		      err.msg);
	st = tp_export_analyze(p, m, c, &rt, &spec, &err);
	if (!st)
		st = tp_export_write(&spec, t, NULL, out, NULL, &err);
	ck_assert_msg(st == want, "%s: %d %s", runtime, st, err.msg);
	if (want == TP_EINFEASIBLE)
		ck_assert_msg(strstr(err.msg, "context parallel"), "%s",
			      err.msg);
	tp_export_spec_release(&spec);
}

/* Megatron-Core --context-parallel-size, TorchTitan's degree; runtimes
 * without context parallelism refuse the plan. */
START_TEST(test_cp_export)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_strbuf out;
	struct tp_error err;

	gpt_on(&m, &c, 1024, "dgx-a100:2");
	tp_plan_init(&p);
	ck_assert_int_eq(to_plan("tp=2,cp=4,pp=2", &m, &c, &p, &err), TP_OK);
	tp_strbuf_init(&out);
	export_to(&p, &m, &c, "megatron-core", TP_EXPORT_MEGATRON, &out,
		  TP_OK);
	ck_assert_msg(strstr(out.buf, "--context-parallel-size 4\n") &&
			      strstr(out.buf, "--tensor-model-parallel-size 2\n"),
		      "%s", out.buf);
	/* 16 ranks / (2 x 4 x 2): dp 1, so micro-batch 16 / (16 x 1) */
	ck_assert_msg(strstr(out.buf, "--micro-batch-size 1\n"), "%s", out.buf);
	tp_strbuf_reset(&out);
	export_to(&p, &m, &c, "fsdp2", TP_EXPORT_TORCHTITAN, &out, TP_OK);
	ck_assert_msg(strstr(out.buf, "context_parallel_degree = 4\n"), "%s",
		      out.buf);
	tp_strbuf_reset(&out);
	export_to(&p, &m, &c, "megatron-lm-2022", TP_EXPORT_MEGATRON, &out,
		  TP_EINFEASIBLE);
	export_to(&p, &m, &c, "deepspeed", TP_EXPORT_DEEPSPEED, &out,
		  TP_EINFEASIBLE);
	/* no cp: no flag */
	ck_assert_int_eq(to_plan("tp=2,pp=2", &m, &c, &p, &err), TP_OK);
	tp_strbuf_reset(&out);
	export_to(&p, &m, &c, "megatron-core", TP_EXPORT_MEGATRON, &out,
		  TP_OK);
	ck_assert(strstr(out.buf, "--context-parallel-size") == NULL);
	tp_strbuf_release(&out);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* The command line: a bad cp exits 2 naming the fix, writes nothing. */
START_TEST(test_cp_cli_errors)
{
	struct tp_run r;
	char model[512], report[512];
	const char *dir = tp_test_tmpdir();

	snprintf(model, sizeof(model), "%s/gpt.json", dir);
	snprintf(report, sizeof(report), "%s/report.json", dir);
	{
		const char *argv[] = {"tagplan", "model",  "gpt",    "--hidden",
				      "512",	 "--layers", "2",      "--heads",
				      "8",	 "--seq",    "1000",   "--vocab",
				      "1000",	 "--batch",  "8",      "-o",
				      model,	 NULL};
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_msg(r.status == 0, "%s", r.err);
	tp_run_free(&r);
	{
		const char *argv[] = {"tagplan", "simulate", "-m",    model,
				      "-t",	 "dgx-a100", "-s",  "cp=8",
				      "-o",	 report,     NULL};
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_msg(r.status == 2, "%d %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "cp=8") &&
			      strstr(r.err, "1000 tokens does not split"),
		      "%s", r.err);
	ck_assert_ptr_null(tp_test_read(report, NULL));
	tp_run_free(&r);
	{
		const char *argv[] = {"tagplan", "simulate", "-m",    model,
				      "-t",	 "dgx-a100", "-s",  "cp=0",
				      NULL};
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_msg(r.status == 2, "%d %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "cp=0"), "%s", r.err);
	tp_run_free(&r);
}
END_TEST

/* The megatron baseline grid has context parallelism on long sequences:
 * Llama-3-8B at 131,072 tokens, batch 16, on 16 H100 (megatron-core)
 * answers with cp > 1, faster than its best grid point without it (tp 4
 * dp 4, about 80 s; bench_modern). */
START_TEST(test_cp_megatron_grid)
{
	struct tp_run r;
	char model[512], plan[512], topo[512];
	const char *dir = tp_test_tmpdir();
	char *text, *at;

	snprintf(model, sizeof(model), "%s/l8.json", dir);
	snprintf(plan, sizeof(plan), "%s/l8p.json", dir);
	snprintf(topo, sizeof(topo), "%s/h2.json", dir);
	{
		const char *argv[] = {"tagplan", "topo", "dgx-h100:2", "-o",
				      topo,	 NULL};
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_msg(r.status == 0, "%s", r.err);
	tp_run_free(&r);
	{
		char src[600];
		snprintf(src, sizeof(src), "hf:%s",
			 tp_test_path("data/hf/llama-3-8b.json"));
		const char *argv[] = {"tagplan", "model", src,   "--seq",
				      "131072",	 "--batch", "16", "-o",
				      model,	 NULL};
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_msg(r.status == 0, "%s", r.err);
	tp_run_free(&r);
	{
		const char *argv[] = {"tagplan",    "plan",	 "-m",
				      model,	    "-t",	 topo,
				      "--baseline", "megatron", "--runtime",
				      "megatron-core", "-q",	 "-o",
				      plan,	    NULL};
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_msg(r.status == 0, "%s", r.err);
	tp_run_free(&r);
	text = tp_test_read(plan, NULL);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "\"cp\": ");
	ck_assert_msg(at && atoi(at + 6) > 1, "%s", text);
	free(text);
}
END_TEST

/* One node of `gpus` toy GPUs (tp_test_toy_type: bf16 100 TFLOP/s, a flat
 * GEMM curve, 1 TB/s memory, no launch cost), an NVSwitch of 100 GB/s per
 * GPU, no latency. */
static void toy_node(struct tp_cluster *c, uint32_t gpus)
{
	struct tp_device_type t = tp_test_toy_type("toy");

	tp_test_toy_node(c, &t, gpus);
}

/* Both ops on devices 0..n-1 as dp 1 x cp n, one micro-batch, the
 * calibration and link efficiencies at 1 and no software latency. */
static bool cp_all_gather; /* the runtime's cp_comm all_gather */

static void run_cp(const struct tp_model *m, const struct tp_cluster *c,
		   uint32_t cp, struct tp_report *r)
{
	struct tp_plan_degrees deg = {1, cp, 1};
	struct tp_sim_options o;
	struct tp_error err;
	struct tp_sim *sim;
	struct tp_sim_scratch *s;
	struct tp_plan p;
	uint32_t ops[2] = {0, 1}, devs[8] = {0, 1, 2, 3, 4, 5, 6, 7};

	tp_plan_init(&p);
	p.global_batch = m->global_batch;
	p.micro_batches = 1;
	ck_assert_int_eq(tp_plan_add_group_degrees(&p, ops, 2, devs, cp, &deg,
						   NULL, &err),
			 TP_OK);
	tp_sim_options_default(&o);
	o.params.gemm_sustained = 1;
	o.params.link_eff_intra = 1;
	o.params.p2p_latency_s = 0;
	o.params.collective_latency_s = 0;
	o.params.overlap_grad_sync = false;
	o.params.fused_attention = false;
	o.params.cp_all_gather = cp_all_gather;
	sim = tp_sim_new(m, c, &o, &err);
	ck_assert_msg(sim != NULL, "%s", err.msg);
	s = tp_sim_scratch_new(sim);
	ck_assert_ptr_nonnull(s);
	tp_report_init(r);
	ck_assert_msg(tp_sim_run(sim, &p, s, r, NULL, &err) == TP_OK, "%s",
		      err.msg);
	tp_sim_scratch_free(s);
	tp_sim_free(sim);
	tp_plan_release(&p);
}

#define REL(a, b)                                                              \
	(fabs((double)(a) - (double)(b)) / fmax(fabs((double)(b)), 1e-300))

/*
 * Ring attention against the hand calculation (src/sim/README, context
 * parallelism).  cp 2: each rank takes 1 of the 2 samples' tokens:
 * forward qkv 1e12 / 1e14 = 0.01 s, attention 0.01 s; backward 0.02 +
 * 0.02 s.  Its K and V block: 2/3 of the 3 GB input = 2 GB, one hop at
 * 100 GB/s = 0.02 s forward against a step of 0.01 / 2 = 0.005 s of
 * attention: 1 x (0.02 - 0.005) = 0.015 s exposed; backward K, V and
 * their gradients, 0.04 s against 0.01 s: 0.03 s.  Iteration 0.02 + 0.015
 * + 0.04 + 0.03 = 0.105 s; on one GPU without cp (both samples) 0.12 s.
 */
START_TEST(test_cp_ring_attention_formula)
{
	struct tp_cluster c1, c2;
	struct tp_model m;
	struct tp_report r1, r2;

	toy_node(&c1, 1);
	toy_node(&c2, 2);
	tp_test_attn_model(&m, 2, 0);
	run_cp(&m, &c1, 1, &r1);
	run_cp(&m, &c2, 2, &r2);
	ck_assert_msg(REL(r1.iteration_time_s, 0.12) < 1e-9, "%.9g",
		      r1.iteration_time_s);
	ck_assert_msg(REL(r2.iteration_time_s, 0.105) < 1e-9, "%.9g",
		      r2.iteration_time_s);
	for (uint32_t d = 0; d < 2; d++) {
		ck_assert_msg(REL(r2.devices[d].communication_s, 0.045) < 1e-9,
			      "%u: %.9g", d, r2.devices[d].communication_s);
		/* the sequence split: half the compute of one GPU */
		ck_assert_msg(REL(r2.devices[d].compute_s,
				  r1.devices[0].compute_s / 2) < 1e-9,
			      "%.9g %.9g", r2.devices[d].compute_s,
			      r1.devices[0].compute_s);
	}
	tp_report_release(&r1);
	tp_report_release(&r2);
	tp_model_release(&m);
	tp_cluster_release(&c1);
	tp_cluster_release(&c2);
}
END_TEST

/*
 * All-gather K and V (cp_comm all_gather; Llama 3, arXiv:2407.21783
 * section 3.3.2) by hand, 4 ranks of the toy node, each with half a
 * sample: compute forward 0.005 + 0.005 s, backward 0.01 + 0.01 s; its K
 * and V 2/3 x 3e9 x 0.5 = 1e9 B.  Forward: an all-gather ring of 3 steps
 * of 1e9 B at 100 GB/s = 0.03 s, exposed; backward: the gather again and
 * the gradients' reduce-scatter, 0.06 s.  Iteration 0.01 + 0.03 + 0.02 +
 * 0.06 = 0.12 s.  The ring instead hides a step's 0.00125 / 0.0025 s of
 * attention: 3 x (0.01 - 0.00125) + 3 x (0.02 - 0.0025) = 0.07875 s of
 * communication, 0.10875 s.
 */
START_TEST(test_cp_all_gather_formula)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_report r;

	toy_node(&c, 4);
	tp_test_attn_model(&m, 2, 0);
	m.seq_len = 8; /* 2 x cp chunks */
	cp_all_gather = true;
	run_cp(&m, &c, 4, &r);
	cp_all_gather = false;
	ck_assert_msg(REL(r.iteration_time_s, 0.12) < 1e-9, "%.9g",
		      r.iteration_time_s);
	ck_assert_msg(REL(r.devices[3].communication_s, 0.09) < 1e-9, "%.9g",
		      r.devices[3].communication_s);
	tp_report_release(&r);
	run_cp(&m, &c, 4, &r);
	ck_assert_msg(REL(r.iteration_time_s, 0.10875) < 1e-9, "%.9g",
		      r.iteration_time_s);
	tp_report_release(&r);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/*
 * All-gather KV keeps the whole sequence's K and V on every context rank
 * while the attention runs, and in the backward also their gradients
 * until the reduce-scatter (src/sim/README section 3, context
 * parallelism): temporary memory.  cp 4, 2 samples in one micro-batch:
 * a rank's K and V are 2/3 of the attention's 3 GB input per sample x
 * 0.5 samples = 1 GB, gathered 4 GB, with their gradients 8 GB, beside
 * the attention's output and gradient (2 x 1 GB x 0.5, its out_bytes set
 * to 1 GB here).  The p2p ring keeps two blocks in flight and stays at
 * the largest output and its gradient, 1 GB.
 */
START_TEST(test_cp_all_gather_memory)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_report r;

	toy_node(&c, 4);
	tp_test_attn_model(&m, 2, 0);
	m.seq_len = 8;
	m.ops.v[1].out_bytes = 1e9;
	cp_all_gather = true;
	run_cp(&m, &c, 4, &r);
	cp_all_gather = false;
	for (uint32_t d = 0; d < 4; d++)
		ck_assert_msg(REL(r.devices[d].memory.temporary, 9e9) < 1e-9,
			      "%u: %.9g", d, r.devices[d].memory.temporary);
	tp_report_release(&r);
	run_cp(&m, &c, 4, &r);
	for (uint32_t d = 0; d < 4; d++)
		ck_assert_msg(REL(r.devices[d].memory.temporary, 1e9) < 1e-9,
			      "%u: %.9g", d, r.devices[d].memory.temporary);
	tp_report_release(&r);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* The memory of a context-parallel shard: activations divided by cp,
 * weights, gradients and optimizer state whole on every rank (they are
 * replicas, reduced like data parallelism). */
START_TEST(test_cp_shard_memory)
{
	struct tp_cluster c1, c4;
	struct tp_model m;
	struct tp_report r1, r4;

	toy_node(&c1, 1);
	toy_node(&c4, 4);
	tp_test_attn_model(&m, 2, 2e9);
	m.seq_len = 8;
	run_cp(&m, &c1, 1, &r1);
	run_cp(&m, &c4, 4, &r4);
	/* 2 samples x (1 + 1) GB saved on one GPU, a quarter on each of 4 */
	ck_assert_msg(REL(r1.devices[0].memory.activations, 4e9) < 1e-9,
		      "%.9g", r1.devices[0].memory.activations);
	for (uint32_t d = 0; d < 4; d++) {
		ck_assert_msg(REL(r4.devices[d].memory.activations, 1e9) < 1e-9,
			      "%u: %.9g", d, r4.devices[d].memory.activations);
		ck_assert(r4.devices[d].memory.weights ==
			  r1.devices[0].memory.weights);
		ck_assert(r4.devices[d].memory.gradients ==
			  r1.devices[0].memory.gradients);
		ck_assert(r4.devices[d].memory.optimizer ==
			  r1.devices[0].memory.optimizer);
	}
	/* the weights' gradients are all-reduced over the 4 ranks */
	ck_assert(r4.n_links > 0);
	tp_report_release(&r1);
	tp_report_release(&r4);
	tp_model_release(&m);
	tp_cluster_release(&c1);
	tp_cluster_release(&c4);
}
END_TEST

/* Simulate strategy `str` of m on c under the megatron-core profile. */
static void run_megatron(const struct tp_model *m, const struct tp_cluster *c,
			 const char *str, struct tp_report *r)
{
	struct tp_runtime rt;
	struct tp_sim_options o;
	struct tp_error err;
	struct tp_sim *sim;
	struct tp_sim_scratch *s;
	struct tp_plan p;

	tp_plan_init(&p);
	ck_assert_msg(to_plan(str, m, c, &p, &err) == TP_OK, "%s: %s", str,
		      err.msg);
	ck_assert_int_eq(tp_runtime_find("megatron-core", &rt, &err), TP_OK);
	tp_sim_options_default(&o);
	tp_sim_params_runtime(&o.params, &rt);
	sim = tp_sim_new(m, c, &o, &err);
	ck_assert_msg(sim != NULL, "%s", err.msg);
	s = tp_sim_scratch_new(sim);
	ck_assert_ptr_nonnull(s);
	tp_report_init(r);
	ck_assert_msg(tp_sim_run(sim, &p, s, r, NULL, &err) == TP_OK, "%s",
		      err.msg);
	tp_sim_scratch_free(s);
	tp_sim_free(sim);
	tp_plan_release(&p);
}

/*
 * Llama 3 405B at 131,072 tokens on 16,384 H100 (2,048 DGX-H100, 400G
 * RoCE, pods of 384 nodes with 1:7 uplinks as Meta describes its
 * cluster) with the Llama 3 paper's strategy (arXiv:2407.21783, Table 4:
 * TP 8, CP 16, PP 16, DP 8, batch 16 sequences per DP rank): it fits with
 * full recomputation; without context parallelism (dp 128) and without
 * full recomputation one sequence per GPU group does not.
 */
START_TEST(test_cp_llama3_405b_fits)
{
	const char *specs[] = {"dgx-h100:2048"};
	struct tp_model m;
	struct tp_cluster c;
	struct tp_report r;
	struct tp_error err;

	use_data();
	tp_model_init(&m);
	tp_cluster_init(&c);
	ck_assert_msg(tp_build_hf(tp_test_path("data/hf/llama-3.1-405b.json"),
				  131072, 128, TP_DTYPE_BF16, &m, &err) == TP_OK,
		      "%s", err.msg);
	ck_assert_msg(tp_build_topology_fabric(specs, 1, "roce-400g", 1,
					       "clos:leaf=384,oversubscription=7",
					       &c, &err) == TP_OK,
		      "%s", err.msg);
	ck_assert_uint_eq(c.devices.n, 16384);
	run_megatron(&m, &c,
		     "tp=8,cp=16,pp=16,dp=8,mb=1,sp=on,zero=1,recompute=full,"
		     "schedule=interleaved:2",
		     &r);
	ck_assert_msg(r.feasible, "%s", r.reason);
	tp_report_release(&r);
	run_megatron(&m, &c,
		     "tp=8,pp=16,dp=128,mb=1,sp=on,zero=1,recompute=selective,"
		     "schedule=interleaved:2",
		     &r);
	ck_assert(!r.feasible);
	tp_report_release(&r);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/*
 * The memory of a context rank of Llama 3 405B at 131,072 tokens with the
 * Llama 3 paper's strategy (arXiv:2407.21783 Table 4: TP 8, CP 16, PP 16,
 * DP 8) and its layout (account_embedding, account_loss: one slot per
 * chunk at V 8), no recomputation, ZeRO 1 under megatron-core, each term
 * by hand on stage 1 (8 layers; src/sim/README section 10):
 *   weights      8 layers x (the split matrices / tp + both norms) x 2 B
 *   gradients    twice that (Megatron-Core's fp32 main_grad buffer)
 *   optimizer    6 x the weights' bytes (12 B per parameter) / (dp x cp)
 *                (the distributed optimizer shards over the data-
 *                parallel group with its context ranks)
 *   activations  all 16 micro-batches of its 8 layers (m = p: the
 *                interleaved warm-up (p-2)2 + 7p >= mV) x 31.75 s'bh/t
 *                bytes, s' = 131072 / cp: norm inputs and outputs 2 x 4,
 *                Q 2 and K, V 2 x 2 / 16 (8 of 128 heads), the attention
 *                output 2, the SwiGLU's two inputs 2 x 2 x 3.25 and its
 *                output 2 x 3.25 (ffn 53248 = 3.25 h; the fused kernel
 *                keeps no scores)
 * and it does not fit in 80e9 bytes (93.05 GB; 80.39 GB under ZeRO 2).
 */
START_TEST(test_cp_llama3_405b_memory_terms)
{
	const char *specs[] = {"dgx-h100:2048"};
	const double h = 16384, f = 53248, t = 8, cp = 16, dp = 8;
	const double sl = 131072 / cp, layers = 8;
	/* per layer: qkv (h x (h + 2 h/16)), proj (h x h), fc1 (h x 2f),
	   fc2 (f x h) split over t; two norms of h, replicated */
	double w = layers * 2 *
		   ((h * (h + h / 8) + h * h + h * 2 * f + f * h) / t + 2 * h);
	double act = 16 * layers * sl * h / t *
		     (4 + 2 + 2 * 2.0 / 16 + 2 + 4 + 2 * 2 * f / h + 2 * f / h);
	struct tp_model m;
	struct tp_cluster c;
	struct tp_report r;
	struct tp_error err;
	const struct tp_memory_breakdown *b;

	use_data();
	tp_model_init(&m);
	tp_cluster_init(&c);
	ck_assert_msg(tp_build_hf(tp_test_path("data/hf/llama-3.1-405b.json"),
				  131072, 128, TP_DTYPE_BF16, &m, &err) == TP_OK,
		      "%s", err.msg);
	ck_assert_msg(tp_build_topology_fabric(specs, 1, "roce-400g", 1,
					       "clos:leaf=384,oversubscription=7",
					       &c, &err) == TP_OK,
		      "%s", err.msg);
	run_megatron(&m, &c,
		     "tp=8,cp=16,pp=16,dp=8,mb=1,sp=on,zero=1,recompute=none,"
		     "schedule=interleaved:8,account_embedding=on,"
		     "account_loss=on",
		     &r);
	ck_assert(!r.feasible);
	/* device 1024: stage 1's first GPU */
	b = &r.devices[1024].memory;
	ck_assert_msg(REL(b->weights, w) < 1e-9, "%.9g / %.9g", b->weights,
		      w);
	ck_assert_msg(REL(b->gradients, 2 * w) < 1e-9, "%.9g", b->gradients);
	ck_assert_msg(REL(b->optimizer, 6 * w / (dp * cp)) < 1e-9, "%.9g",
		      b->optimizer);
	ck_assert_msg(REL(b->activations, act) < 1e-9, "%.9g / %.9g",
		      b->activations, act);
	tp_report_release(&r);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* The cp degrees the level-0 candidates of m on c offer from the state
 * "everything data parallel on all devices", as a bit set, under rt
 * (NULL: unconstrained); with `check`, the cp=4 plan materialises with cp
 * 4 in every group and validates. */
static uint32_t cp_offered(const struct tp_model *m,
			   const struct tp_cluster *c, const char *rt_name,
			   bool check)
{
	struct tp_groups g;
	struct tp_space sp;
	struct tp_globals gl;
	struct tp_action acts[64];
	struct tp_decision *dec;
	struct tp_runtime rt;
	struct tp_error err;
	uint32_t n, seen = 0;

	ck_assert_int_eq(tp_coarsen(m, 0, &g, NULL), TP_OK);
	ck_assert_int_eq(tp_space_init(&sp, m, c, &g, NULL), TP_OK);
	if (rt_name) {
		ck_assert_int_eq(tp_runtime_find(rt_name, &rt, &err), TP_OK);
		ck_assert_int_eq(tp_space_set_runtime(&sp, &rt, &err), TP_OK);
	}
	dec = calloc(g.n, sizeof(*dec));
	for (uint32_t k = 0; k < g.n; k++) {
		dec[k].set = TP_SPACE_SET_ALL;
		dec[k].tp = 1;
		dec[k].sync = (uint8_t)tp_space_default_sync(
			&sp, TP_SPACE_SET_ALL, 1);
	}
	memset(&gl, 0, sizeof(gl));
	gl.micro_batches = 1;
	gl.schedule = TP_SCHEDULE_1F1B;
	n = tp_space_global_actions(&sp, &gl, dec, acts, 64);
	for (uint32_t i = 0; i < n; i++)
		if (tp_globals_cp(&acts[i].g) > 1)
			seen |= tp_globals_cp(&acts[i].g);
	if (check) {
		struct tp_space_scratch *scr = tp_space_scratch_new(&sp);
		struct tp_plan p;
		uint32_t scaled = 0;
		/* each cp also with the micro-batches scaled by it (every
		 * replica keeps one sample per micro-batch) */
		for (uint32_t i = 0; i < n; i++)
			if (tp_globals_cp(&acts[i].g) > 1 &&
			    acts[i].g.micro_batches ==
				    tp_globals_cp(&acts[i].g))
				scaled |= tp_globals_cp(&acts[i].g);
		ck_assert_uint_eq(scaled, 2 | 4 | 8);
		tp_globals_set_cp(&gl, 4);
		ck_assert_uint_eq(tp_globals_cp(&gl), 4);
		/* the other settings' bytes are untouched */
		ck_assert_uint_eq(gl.shape, 0);
		tp_plan_init(&p);
		ck_assert_msg(tp_space_materialize(&sp, &gl, dec,
						   TP_COMPRESSION_OFF, scr, &p,
						   &err) == TP_OK,
			      "%s", err.msg);
		for (uint32_t k = 0; k < p.groups.n; k++) {
			ck_assert_uint_eq(p.groups.v[k].cp, 4);
			ck_assert_uint_eq(p.groups.v[k].dp * 4,
					  p.groups.v[k].n_devices);
		}
		ck_assert_msg(tp_plan_validate(&p, m, c, &err) == TP_OK, "%s",
			      err.msg);
		/* a cp that does not divide the replicas is no valid state */
		tp_globals_set_cp(&gl, 32);
		ck_assert(!tp_space_state_ok(&sp, &gl, dec));
		tp_plan_release(&p);
		tp_space_scratch_free(scr);
	}
	free(dec);
	tp_space_release(&sp);
	tp_groups_release(&g);
	return seen;
}

/* The search offers cp = 2, 4, 8 for 32K-token sequences on 16 GPUs
 * (each context rank keeps >= TP_SPACE_CP_MIN_TOKENS tokens: not 16),
 * each alone and with the micro-batches multiplied by cp,
 * under megatron-core as well, and none under DDP (no
 * context_parallel) or for 2,048-token sequences. */
START_TEST(test_cp_actions)
{
	struct tp_model m;
	struct tp_cluster c;

	gpt_on(&m, &c, 32768, "dgx-a100:2");
	ck_assert_uint_eq(c.devices.n, 16);
	ck_assert_uint_eq(cp_offered(&m, &c, NULL, true), 2 | 4 | 8);
	ck_assert_uint_eq(cp_offered(&m, &c, "megatron-core", false),
			  2 | 4 | 8);
	ck_assert_uint_eq(cp_offered(&m, &c, "ddp", false), 0);
	tp_model_release(&m);
	tp_cluster_release(&c);
	gpt_on(&m, &c, 2048, "dgx-a100:2");
	ck_assert_uint_eq(cp_offered(&m, &c, NULL, false), 0);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

Suite *suite_cp(void)
{
	Suite *s = suite_create("cp");
	TCase *tc = tcase_create("cp");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_cp_strategy_string);
	tcase_add_test(tc, test_cp_strategy_plan);
	tcase_add_test(tc, test_cp_plan_file);
	tcase_add_test(tc, test_cp_plan_sequence);
	tcase_add_test(tc, test_cp_export);
	tcase_add_test(tc, test_cp_cli_errors);
	tcase_add_test(tc, test_cp_ring_attention_formula);
	tcase_add_test(tc, test_cp_all_gather_formula);
	tcase_add_test(tc, test_cp_all_gather_memory);
	tcase_add_test(tc, test_cp_shard_memory);
	tcase_add_test(tc, test_cp_llama3_405b_fits);
	tcase_add_test(tc, test_cp_llama3_405b_memory_terms);
	tcase_add_test(tc, test_cp_actions);
	tcase_add_test(tc, test_cp_megatron_grid);
	suite_add_tcase(s, tc);
	return s;
}
