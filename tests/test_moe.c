/*
 * test_moe.c - expert parallelism: the strategy key and the plan field
 * (parsing, validation, located errors), the plan file round trip and
 * the Megatron-Core export; each cost formula against a hand calculation.
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
#include "search/planner.h"
#include "sim/sim.h"
#include "util.h"

#define REL(a, b)                                                              \
	(fabs((double)(a) - (double)(b)) / fmax(fabs((double)(b)), 1e-300))

static void load_hf(const char *file, int64_t seq, int64_t batch,
		    struct tp_model *m)
{
	struct tp_error err;
	char rel[128];

	snprintf(rel, sizeof(rel), "data/hf/%s", file);
	tp_model_init(m);
	ck_assert_msg(tp_build_hf(tp_test_path(rel), seq, batch, -1, m, &err) ==
			      TP_OK,
		      "%s", err.msg);
}

static void load_topo(const char *spec, struct tp_cluster *c)
{
	struct tp_error err;
	const char *specs[] = {spec};

	tp_cluster_init(c);
	ck_assert_msg(tp_build_topology(specs, 1, "ib-ndr", 1, c, &err) ==
			      TP_OK,
		      "%s", err.msg);
}

/* A strategy string into a plan; the status, err filled. */
static enum tp_status expand(const char *text, const struct tp_model *m,
			     const struct tp_cluster *c, struct tp_plan *p,
			     struct tp_error *err)
{
	struct tp_strategy s;
	enum tp_status st = tp_strategy_parse(text, &s, err);

	if (st)
		return st;
	st = tp_strategy_to_plan(&s, m, c, p, err);
	if (st)
		return st;
	return tp_plan_validate(p, m, c, err);
}

START_TEST(test_ep_strategy)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_strategy s;
	struct tp_error err;
	char buf[256];

	load_hf("mixtral-8x7b.json", 512, 64, &m);
	load_topo("dgx-h100:2", &c);
	tp_plan_init(&p);
	/* parse and format: ep written only above 1 */
	ck_assert_int_eq(tp_strategy_parse("tp=2,ep=4", &s, &err), TP_OK);
	ck_assert_uint_eq(s.ep, 4);
	tp_strategy_format(&s, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, ",ep=4") != NULL, "%s", buf);
	ck_assert_int_eq(tp_strategy_parse("tp=2", &s, &err), TP_OK);
	tp_strategy_format(&s, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "ep=") == NULL, "%s", buf);
	ck_assert_int_eq(tp_strategy_parse("ep=0", &s, &err), TP_EUSAGE);
	ck_assert_msg(strstr(err.msg, "ep=0") != NULL, "%s", err.msg);

	/* 16 GPUs, tp 2 -> dp 8, ep 8: every group with experts gets it */
	ck_assert_msg(expand("tp=2,pp=2,ep=4,sp=on", &m, &c, &p, &err) ==
			      TP_OK,
		      "%s", err.msg);
	for (uint32_t g = 0; g < p.groups.n; g++)
		ck_assert_uint_eq(p.groups.v[g].ep, 4);
	/* errors name the fix */
	ck_assert_int_eq(expand("tp=2,ep=3", &m, &c, &p, &err), TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "8 routed experts") &&
			      strstr(err.msg, "divisor of 8"),
		      "%s", err.msg);
	ck_assert_int_eq(expand("tp=4,pp=2,ep=4", &m, &c, &p, &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "does not divide dp=2"), "%s", err.msg);
	tp_plan_release(&p);
	tp_model_release(&m);

	/* a dense model has no experts to spread */
	load_hf("llama-2-7b.json", 512, 64, &m);
	tp_plan_init(&p);
	ck_assert_int_eq(expand("ep=2", &m, &c, &p, &err), TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "no routed experts"), "%s", err.msg);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* tp_plan_validate on hand-edited groups: the JSON path and the fix. */
START_TEST(test_ep_validate)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_error err;

	load_hf("mixtral-8x7b.json", 512, 64, &m);
	load_topo("dgx-h100:1", &c);
	tp_plan_init(&p);
	ck_assert_msg(expand("dp=8,ep=8", &m, &c, &p, &err) == TP_OK, "%s",
		      err.msg);
	p.groups.v[0].ep = 0;
	ck_assert_int_eq(tp_plan_validate(&p, &m, &c, &err), TP_EINPUT);
	ck_assert_str_eq(err.path, "$.groups[0].ep");
	p.groups.v[0].ep = 16;
	ck_assert_int_eq(tp_plan_validate(&p, &m, &c, &err), TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "dp=8"), "%s", err.msg);
	/* ep divides dp but not each layer's experts: a group that holds
	 * only 6 of a layer's 8 experts (move two to a group of their own) */
	p.groups.v[0].ep = 2;
	ck_assert_int_eq(tp_plan_validate(&p, &m, &c, &err), TP_OK);
	{
		struct tp_plan q;
		uint32_t *ops = tp_plan_group_ops(&p, 0), n = 0, moved = 0;
		uint32_t *a = calloc(p.groups.v[0].n_ops, sizeof(*a));
		uint32_t *b = calloc(p.groups.v[0].n_ops, sizeof(*b));
		uint32_t devs[8], g;
		for (uint32_t k = 0; k < 8; k++)
			devs[k] = k;
		for (uint32_t k = 0; k < p.groups.v[0].n_ops; k++) {
			const char *name = m.ops.v[ops[k]].name;
			if (strncmp(name, "layer31.expert6.", 16) == 0 ||
			    strncmp(name, "layer31.expert7.", 16) == 0)
				b[moved++] = ops[k];
			else
				a[n++] = ops[k];
		}
		ck_assert_uint_eq(moved, 6);
		tp_plan_init(&q);
		q.global_batch = p.global_batch;
		q.micro_batches = p.micro_batches;
		ck_assert_int_eq(tp_plan_add_group_degrees(
				     &q, a, n, devs, 8,
				     &(struct tp_plan_degrees){8, 1, 1}, NULL,
				     &err),
				 TP_OK);
		g = (uint32_t)q.groups.n - 1;
		q.groups.v[g].ep = 4;
		ck_assert_int_eq(tp_plan_add_group_degrees(
				     &q, b, moved, devs, 8,
				     &(struct tp_plan_degrees){8, 1, 1}, NULL,
				     &err),
				 TP_OK);
		g = (uint32_t)q.groups.n - 1;
		ck_assert_int_eq(tp_plan_validate(&q, &m, &c, &err), TP_EINPUT);
		ck_assert_str_eq(err.path, "$.groups[0].ep");
		ck_assert_msg(strstr(err.msg, "6 routed experts of layer 31"),
			      "%s", err.msg);
		q.groups.v[0].ep = 2;
		q.groups.v[1].ep = 2;
		ck_assert_msg(tp_plan_validate(&q, &m, &c, &err) == TP_OK,
			      "%s", err.msg);
		tp_plan_release(&q);
		free(a);
		free(b);
	}
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* The plan file carries ep (written only above 1) and refuses a bad one
 * with its place. */
/* Load plan text into q (initialised here, released by the caller),
 * the last character of its first `key` replaced by `c` when key is
 * given. */
static enum tp_status load_text(const char *text, const char *key, char c,
				const struct tp_model *m,
				const struct tp_cluster *cl, struct tp_plan *q,
				struct tp_error *err)
{
	struct tp_load_options lo;
	char *t = strdup(text), *at;
	enum tp_status st;

	ck_assert_ptr_nonnull(t);
	tp_load_options_default(&lo);
	if (key && (at = strstr(t, key)) != NULL)
		at[strlen(key) - 1] = c;
	tp_plan_init(q);
	st = tp_plan_load("plan.json", t, strlen(t), m, cl, &lo, q, err);
	free(t);
	return st;
}

START_TEST(test_ep_plan_file)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p, q;
	struct tp_error err;
	struct tp_strbuf sb;

	load_hf("mixtral-8x7b.json", 512, 64, &m);
	load_topo("dgx-h100:1", &c);
	tp_plan_init(&p);
	ck_assert_msg(expand("dp=8,ep=4", &m, &c, &p, &err) == TP_OK, "%s",
		      err.msg);
	tp_strbuf_init(&sb);
	tp_plan_write(&p, &m, &c, &sb);
	ck_assert_msg(strstr(sb.buf, "\"ep\": 4") != NULL, "%s", sb.buf);
	ck_assert_msg(load_text(sb.buf, NULL, 0, &m, &c, &q, &err) == TP_OK,
		      "%s", err.msg);
	ck_assert_uint_eq(q.groups.v[0].ep, 4);
	tp_plan_release(&q);
	/* ep 3 does not divide dp 8 */
	ck_assert_int_eq(load_text(sb.buf, "\"ep\": 4", '3', &m, &c, &q, &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "ep=3 does not divide dp=8") &&
			      strstr(err.path, "groups[0].ep"),
		      "%s at %s", err.msg, err.path);
	tp_plan_release(&q);
	tp_strbuf_release(&sb);
	/* ep 1 is not written: plans without experts are unchanged */
	p.groups.v[0].ep = 1;
	tp_strbuf_init(&sb);
	tp_plan_write(&p, &m, &c, &sb);
	ck_assert_msg(strstr(sb.buf, "\"ep\"") == NULL, "%s", sb.buf);
	tp_strbuf_release(&sb);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

static void export_args(const struct tp_plan *p, const struct tp_model *m,
			const struct tp_cluster *c, const char *runtime,
			enum tp_status want, struct tp_strbuf *out,
			struct tp_error *err)
{
	struct tp_runtime rt;
	struct tp_export_spec spec;
	enum tp_status st;

	ck_assert_int_eq(tp_runtime_find(runtime, &rt, err), TP_OK);
	memset(&spec, 0, sizeof(spec));
	st = tp_export_analyze(p, m, c, &rt, &spec, err);
	if (st == TP_OK)
		st = tp_export_write(&spec, TP_EXPORT_MEGATRON, NULL, out,
				     NULL, err);
	ck_assert_msg(st == want, "%d: %s", st, err->msg);
	tp_export_spec_release(&spec);
}

START_TEST(test_ep_export)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_error err;
	struct tp_strbuf out;

	load_hf("mixtral-8x7b.json", 512, 64, &m);
	load_topo("dgx-h100:2", &c);
	tp_plan_init(&p);
	ck_assert_msg(expand("tp=2,pp=2,ep=4,sp=on", &m, &c, &p, &err) ==
			      TP_OK,
		      "%s", err.msg);
	tp_strbuf_init(&out);
	export_args(&p, &m, &c, "megatron-core", TP_OK, &out, &err);
	ck_assert_msg(strstr(out.buf, "--expert-model-parallel-size 4\n") &&
			      strstr(out.buf, "--num-experts 8\n") &&
			      strstr(out.buf, "--moe-router-topk 2\n") &&
			      strstr(out.buf, "--moe-token-dispatcher-type "
					      "alltoall\n") &&
			      !strstr(out.buf, "capacity") &&
			      strstr(out.buf, "--tensor-model-parallel-size 2\n"),
		      "%s", out.buf);
	tp_strbuf_release(&out);
	/* a capacity factor (dropping tokens) is the job's too */
	p.expert_capacity_factor = 1.25;
	tp_strbuf_init(&out);
	export_args(&p, &m, &c, "megatron-core", TP_OK, &out, &err);
	ck_assert_msg(strstr(out.buf, "--moe-expert-capacity-factor 1.25\n"),
		      "%s", out.buf);
	tp_strbuf_release(&out);
	p.expert_capacity_factor = 0;
	/* Megatron-LM of 2021 has no expert parallelism: refused */
	for (uint32_t g = 0; g < p.groups.n; g++)
		p.groups.v[g].sp = false;
	tp_strbuf_init(&out);
	export_args(&p, &m, &c, "megatron-lm-2021", TP_EINFEASIBLE, &out,
		    &err);
	ck_assert_msg(strstr(err.msg, "expert parallel (ep 4)"), "%s",
		      err.msg);
	tp_strbuf_release(&out);
	/* groups that disagree on ep: Megatron takes one */
	p.groups.v[1].ep = 2;
	tp_strbuf_init(&out);
	export_args(&p, &m, &c, "megatron-core", TP_EINFEASIBLE, &out, &err);
	ck_assert_msg(strstr(err.msg, "one --expert-model-parallel-size"), "%s",
		      err.msg);
	tp_strbuf_release(&out);
	/* ep 1: no flag */
	p.groups.v[0].ep = p.groups.v[1].ep = 1;
	tp_strbuf_init(&out);
	export_args(&p, &m, &c, "megatron-core", TP_OK, &out, &err);
	ck_assert_msg(!strstr(out.buf, "--expert-model-parallel-size"), "%s",
		      out.buf);
	tp_strbuf_release(&out);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST


/* From the command line, a strategy string exported without a plan
 * (tagplan export -s, e.g. a published run's degrees): Mixtral on a DGX
 * H100 at tp 2 ep 4 writes the EP and MoE flags and megatron-core's
 * gradient bucket (40M fp32 elements, not the 25 MiB of a strategy's
 * default plan); without -m/-t and with a strategy the model refuses:
 * exit 2 naming the fix.  Failed before -s existed (usage error). */
START_TEST(test_export_strategy_cli)
{
	char model[512], hf[512];
	const char *dir = tp_test_tmpdir();
	const char *topo = tp_data_file("topologies/dgx-h100.json");
	struct tp_run r;

	snprintf(model, sizeof(model), "%s/mixtral-export-s.json", dir);
	snprintf(hf, sizeof(hf), "hf:%s",
		 tp_test_path("data/hf/mixtral-8x7b.json"));
	{
		const char *argv[] = {"tagplan", "model", hf,	 "--seq",
				      "512",	 "--batch", "64", "-o",
				      model,	 NULL};
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_msg(r.status == 0, "%s", r.err);
	tp_run_free(&r);
	{
		const char *argv[] = {"tagplan", "export", "-s",
				      "tp=2,ep=4,sp=on", "-m", model, "-t",
				      topo, NULL};
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_msg(strstr(r.out, "--expert-model-parallel-size 4\n") &&
			      strstr(r.out, "--num-experts 8\n") &&
			      strstr(r.out, "--tensor-model-parallel-size 2\n") &&
			      strstr(r.out, "--ddp-bucket-size 40000000\n"),
		      "%s", r.out);
	tp_run_free(&r);
	{
		const char *argv[] = {"tagplan", "export", "-s", "tp=2", "-m",
				      model, NULL};
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_int_eq(r.status, 2);
	ck_assert_msg(strstr(r.err, "needs -m MODEL and -t TOPO"), "%s", r.err);
	tp_run_free(&r);
	{
		const char *argv[] = {"tagplan", "export", "-s", "tp=3", "-m",
				      model, "-t", topo, NULL};
		tp_run_tagplan(&r, argv, NULL);
	}
	ck_assert_int_eq(r.status, 2);
	ck_assert_msg(strstr(r.err, "tp=3 does not divide"), "%s", r.err);
	ck_assert_str_eq(r.out, "");
	tp_run_free(&r);
}
END_TEST
/* Expert with context parallelism and DeepSeek's MoE layout in one
 * Megatron-Core launch: DeepSeek-V2-Lite (64 routed experts, top-6, 2
 * shared experts of 1408, the first layer dense, latent attention) with
 * pp 2, cp 2, ep 8 on 16 GPUs (dp 4: ep divides dp x cp = 8, not dp). */
START_TEST(test_ep_cp_export_deepseek)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_error err;
	struct tp_strbuf out;
	static const char *const want[] = {
	    "--context-parallel-size 2\n",
	    "--expert-model-parallel-size 8\n",
	    "--pipeline-model-parallel-size 2\n",
	    "--num-experts 64\n",
	    "--moe-router-topk 6\n",
	    "--moe-ffn-hidden-size 1408\n",
	    "--moe-shared-expert-intermediate-size 2816\n",
	    "--moe-layer-freq ([0]*1+[1]*26)\n",
	    "--multi-latent-attention\n",
	    "--kv-lora-rank 512\n"};

	load_hf("deepseek-v2-lite.json", 512, 64, &m);
	load_topo("dgx-h100:2", &c);
	tp_plan_init(&p);
	ck_assert_msg(expand("pp=2,cp=2,ep=8,recompute=full", &m, &c, &p,
			     &err) == TP_OK,
		      "%s", err.msg);
	ck_assert_uint_eq(p.groups.v[0].dp, 4);
	ck_assert_msg(tp_plan_validate(&p, &m, &c, &err) == TP_OK, "%s",
		      err.msg);
	tp_strbuf_init(&out);
	export_args(&p, &m, &c, "megatron-core", TP_OK, &out, &err);
	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++)
		ck_assert_msg(strstr(out.buf, want[i]), "no %s in:\n%s",
			      want[i], out.buf);
	tp_strbuf_release(&out);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* Round numbers (tp_test_toy_type) with 1 TB of memory: bf16 100 TFLOP/s,
 * 1 TB/s, a flat GEMM curve at peak, no kernel overhead or reserve; one
 * NVSwitch node of `gpus` at 100 GB/s per GPU, no latency. */
static void toy_cluster(struct tp_cluster *c, uint32_t gpus)
{
	struct tp_device_type t = tp_test_toy_type("toy");

	t.memory_bytes = 1e12;
	tp_test_toy_node(c, &t, gpus);
}

/* Everything in one group of dp replicas, one micro-batch, expert
 * parallelism ep; calibration and latencies off so hand figures hold. */
static double toy_capacity; /* the plan's capacity factor (0 dropless) */
static uint32_t toy_cp = 1;  /* context ranks per replica (dp x cp GPUs) */
/* the token exchange's behaviour (sim.h; all off: Megatron-Core's) */
static struct {
	bool node_forward, fp8, overlap;
	double sm_share;
} toy_ex;

/* Calibration and latencies off so hand figures hold. */
static void toy_options(struct tp_sim_options *o)
{
	tp_sim_options_default(o);
	o->params.gemm_sustained = 1;
	o->params.overlap_grad_sync = false;
	o->params.link_eff_intra = 1;
	o->params.link_eff_network = 1;
	o->params.collective_latency_s = 0;
}

/* Simulate plan p of m on c with options o into r (initialised here). */
static void toy_simulate(const struct tp_model *m, const struct tp_cluster *c,
			 const struct tp_plan *p,
			 const struct tp_sim_options *o, struct tp_report *r)
{
	struct tp_error err;
	struct tp_sim *sim = tp_sim_new(m, c, o, &err);
	struct tp_sim_scratch *s;

	ck_assert_msg(sim != NULL, "%s", err.msg);
	s = tp_sim_scratch_new(sim);
	ck_assert_ptr_nonnull(s);
	tp_report_init(r);
	ck_assert_msg(tp_sim_run(sim, p, s, r, NULL, &err) == TP_OK, "%s",
		      err.msg);
	tp_sim_scratch_free(s);
	tp_sim_free(sim);
}

static void run_toy(const struct tp_model *m, const struct tp_cluster *c,
		    uint32_t dp, uint32_t ep, uint32_t zero, double imbalance,
		    struct tp_report *r)
{
	struct tp_sim_options o;
	struct tp_error err;
	struct tp_plan p;
	uint32_t ops[32], devs[32], g;

	for (uint32_t i = 0; i < m->ops.n; i++)
		ops[i] = i;
	struct tp_plan_degrees deg = {dp, toy_cp, 1};

	for (uint32_t d = 0; d < dp * toy_cp; d++)
		devs[d] = d;
	tp_plan_init(&p);
	p.global_batch = m->global_batch;
	p.micro_batches = 1;
	p.zero = zero;
	p.expert_imbalance = imbalance;
	p.expert_capacity_factor = toy_capacity;
	ck_assert_int_eq(tp_plan_add_group_degrees(&p, ops, (uint32_t)m->ops.n,
						   devs, dp * toy_cp, &deg,
						   NULL, &err),
			 TP_OK);
	g = (uint32_t)p.groups.n - 1;
	p.groups.v[g].ep = ep;
	ck_assert_msg(tp_plan_validate(&p, m, c, &err) == TP_OK, "%s",
		      err.msg);
	toy_options(&o);
	o.params.ep_node_forward = toy_ex.node_forward;
	o.params.ep_dispatch_fp8 = toy_ex.fp8;
	o.params.ep_overlap = toy_ex.overlap;
	o.params.comm_sm_share = toy_ex.sm_share;
	toy_simulate(m, c, &p, &o, r);
	tp_plan_release(&p);
}

/* Memory per EP rank: experts / ep of the weights, gradients and Adam
 * state, activations times the busiest rank's load; ZeRO shards the
 * experts' state over dp / ep replicas only. */
START_TEST(test_ep_memory_toy)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_report r;

	tp_test_moe_layer(&m, 4, 8, 1e8);
	toy_cluster(&c, 4);
	/* ep 1: 4 experts of 1e8 B (5e7 bf16 parameters) on every device */
	run_toy(&m, &c, 4, 1, 0, 1.5, &r);
	ck_assert_msg(REL(r.devices[0].memory.weights, 4e8) < 1e-9, "%.9g",
		      r.devices[0].memory.weights);
	ck_assert_msg(REL(r.devices[0].memory.optimizer, 4 * 5e7 * 12) < 1e-9,
		      "%.9g", r.devices[0].memory.optimizer);
	/* 2 samples x 4 experts x 1e7 saved bytes */
	ck_assert_msg(REL(r.devices[0].memory.activations, 8e7) < 1e-9,
		      "%.9g", r.devices[0].memory.activations);
	tp_report_release(&r);
	/* ep 4: one expert per device; the busiest rank keeps 1.5 x */
	run_toy(&m, &c, 4, 4, 0, 1.5, &r);
	ck_assert_msg(REL(r.devices[0].memory.weights, 1e8) < 1e-9, "%.9g",
		      r.devices[0].memory.weights);
	ck_assert_msg(REL(r.devices[0].memory.gradients, 1e8) < 1e-9, "%.9g",
		      r.devices[0].memory.gradients);
	ck_assert_msg(REL(r.devices[0].memory.optimizer, 5e7 * 12) < 1e-9,
		      "%.9g", r.devices[0].memory.optimizer);
	ck_assert_msg(REL(r.devices[0].memory.activations, 1.5 * 8e7) < 1e-9,
		      "%.9g", r.devices[0].memory.activations);
	tp_report_release(&r);
	tp_cluster_release(&c);
	/* 8 devices, ep 4, ZeRO-1: the experts' Adam state over dp/ep = 2 */
	toy_cluster(&c, 8);
	run_toy(&m, &c, 8, 4, 1, 1.5, &r);
	ck_assert_msg(REL(r.devices[0].memory.optimizer, 5e7 * 12 / 2) < 1e-9,
		      "%.9g", r.devices[0].memory.optimizer);
	tp_report_release(&r);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* The report of strategy `str` for HF config `file` (sequence 512,
 * batch 64, bf16) on one DGX-H100, after checking that the model has
 * `params` parameters. */
static void hf_report(const char *file, const char *str, double params,
		      struct tp_report *r)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_error err;
	struct tp_sim *sim;
	struct tp_sim_scratch *s;

	load_hf(file, 512, 64, &m);
	load_topo("dgx-h100:1", &c);
	ck_assert_msg(REL(m.total_param_bytes / 2, params) < 1e-9, "%.12g",
		      m.total_param_bytes / 2);
	tp_plan_init(&p);
	ck_assert_msg(expand(str, &m, &c, &p, &err) == TP_OK, "%s", err.msg);
	sim = tp_sim_new(&m, &c, NULL, &err);
	ck_assert_msg(sim != NULL, "%s", err.msg);
	s = tp_sim_scratch_new(sim);
	tp_report_init(r);
	ck_assert_msg(tp_sim_run(sim, &p, s, r, NULL, &err) == TP_OK, "%s",
		      err.msg);
	tp_sim_scratch_free(s);
	tp_sim_free(sim);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}

/* Mixtral-8x7B on one DGX-H100, dp 8: per device 1/8 of the routed
 * experts.  By hand: 32 layers x 8 experts x 3 x 4096 x 14336 =
 * 45,097,156,608 expert parameters of 46,702,792,704; so ep 8 leaves
 * 1,605,636,096 + 45,097,156,608 / 8 = 7,242,780,672 parameters per
 * device: 14.49 GB of bf16 weights, and under ZeRO-1 Adam's 12 B over 8
 * for the dense part but over dp/ep = 1 for the experts: 70.05 GB. */
START_TEST(test_ep_memory_mixtral)
{
	struct tp_report r;
	double dense = 1605636096.0, expert = 45097156608.0;

	hf_report("mixtral-8x7b.json", "dp=8,ep=8,zero=1,mb=1,recompute=full",
		  dense + expert, &r);
	ck_assert_msg(REL(r.devices[3].memory.weights,
			  2 * (dense + expert / 8)) < 1e-9,
		      "%.12g", r.devices[3].memory.weights);
	ck_assert_msg(REL(r.devices[3].memory.gradients,
			  2 * (dense + expert / 8)) < 1e-9,
		      "%.12g", r.devices[3].memory.gradients);
	ck_assert_msg(REL(r.devices[3].memory.optimizer,
			  12 * dense / 8 + 12 * expert / 8) < 1e-9,
		      "%.12g", r.devices[3].memory.optimizer);
	tp_report_release(&r);
}
END_TEST

/* DeepSeek's shared experts and dense first layers are not spread by ep.
 * DeepSeek-V2-Lite (27 layers, the first dense; 64 routed experts of
 * 3 x 2048 x 1408 parameters in each of the 26 MoE layers, 2 shared):
 * routed 26 x 64 x 8,650,752 = 14,394,851,328 of 15,706,484,224
 * parameters, so dp 8 with ep 8 leaves 1,311,632,896 + 14,394,851,328 / 8
 * = 3,110,989,312 parameters per device, 6.22 GB of bf16 weights: the
 * shared experts (26 x 2 x 8,650,752), layer 0's dense MLP and the
 * attention stay whole on every rank. */
START_TEST(test_ep_memory_deepseek_shared)
{
	struct tp_report r;
	double routed = 14394851328.0, total = 15706484224.0;

	hf_report("deepseek-v2-lite.json", "dp=8,ep=8,mb=1,recompute=full",
		  total, &r);
	ck_assert_msg(REL(r.devices[5].memory.weights,
			  2 * (total - routed + routed / 8)) < 1e-9,
		      "%.12g", r.devices[5].memory.weights);
	tp_report_release(&r);
}
END_TEST

/* Time per EP rank by hand (README section 3).  4 devices, batch 8 (2
 * samples per replica), one micro-batch:
 *  ep 1: experts 4 x 2 x 1e11 / 1e14 = 0.008 s forward, 0.016 backward;
 *        ring all-reduce of 4e8 B over 4: 2 x 3/4 x 4e8 / 1e11 = 0.006;
 *        Adam step 2e8 params x 28 B / 1e12 = 0.0056.
 *  ep 4, load 1.5: one expert on 2 x 4 x 1.5 = 12 samples: 0.012 s and
 *        0.024; all-to-all of 4 x (1e8 + 1e8) x 2 = 1.6e9 B dispatched
 *        and combined per device, 1/4 to each member, 3 flows per GPU
 *        link: 1.6e9 / 4 / (1e11 / 3) x 1.5 = 0.018 s per pass; no
 *        gradient sync (dp / ep = 1); step 5e7 x 28 / 1e12 = 0.0014.
 *  ep 4, load 1: 0.008 + 0.012 + 0.016 + 0.012 + 0.0014.
 *  8 devices (1 sample each), ep 4, load 1: 4 / 1e3 s and 8 / 1e3;
 *        all-to-all 8e8 / 4 / (1e11 / 3) = 0.006 per pass; the expert
 *        gradients all-reduced over dp / ep = 2: 2 x 1/2 x 1e8 / 1e11
 *        = 0.001; step 0.0014. */
START_TEST(test_ep_time_toy)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_report r;
	const struct {
		uint32_t gpus, ep;
		double load, expect;
	} cases[] = {
	    {4, 1, 1.5, 0.008 + 0.016 + 0.006 + 0.0056},
	    {4, 4, 1.5, 0.012 + 0.018 + 0.024 + 0.018 + 0.0014},
	    {4, 4, 1.0, 0.008 + 0.012 + 0.016 + 0.012 + 0.0014},
	    {8, 4, 1.0, 0.004 + 0.006 + 0.008 + 0.006 + 0.001 + 0.0014},
	};

	tp_test_moe_layer(&m, 4, 8, 1e8);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		toy_cluster(&c, cases[k].gpus);
		run_toy(&m, &c, cases[k].gpus, cases[k].ep, 0, cases[k].load,
			&r);
		ck_assert_msg(REL(r.iteration_time_s, cases[k].expect) < 1e-6,
			      "case %zu: %.9g vs %.9g", k, r.iteration_time_s,
			      cases[k].expect);
		tp_report_release(&r);
		tp_cluster_release(&c);
	}
	/* a capacity factor of 1.2 drops what exceeds 1.2 x the mean: the
	 * busiest rank's 1.5 becomes 1.2 (compute 0.0096 and 0.0192, the
	 * all-to-all 0.0144 per pass) */
	toy_capacity = 1.2;
	toy_cluster(&c, 4);
	run_toy(&m, &c, 4, 4, 0, 1.5, &r);
	toy_capacity = 0;
	ck_assert_msg(REL(r.iteration_time_s,
			  0.0096 + 0.0144 + 0.0192 + 0.0144 + 0.0014) < 1e-6,
		      "%.9g", r.iteration_time_s);
	tp_report_release(&r);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* Expert tensor parallelism (etp=1, Megatron-Core's
 * --expert-tensor-parallel-size 1): the strategy key, the group's field
 * in the plan file (read back), the export flag, and the errors: etp
 * between 1 and tp, etp=1 without sequence parallelism, ep that divides
 * tp x dp but not dp (allowed only under etp=1), a dense model. */
START_TEST(test_etp_strategy_plan)
{
	struct tp_model m, d;
	struct tp_cluster c;
	struct tp_plan p, q;
	struct tp_error err;
	struct tp_strbuf sb;
	struct tp_strategy st;
	char buf[256];
	bool any = false;

	load_hf("mixtral-8x7b.json", 512, 64, &m);
	load_topo("dgx-h100:2", &c);
	ck_assert_int_eq(tp_strategy_parse("tp=2,pp=2,ep=8,sp=on,etp=1", &st,
					   &err),
			 TP_OK);
	tp_strategy_format(&st, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, ",etp=1") != NULL, "%s", buf);
	tp_plan_init(&p);
	/* ep 8 divides tp x dp = 8, not dp = 4: only with etp=1 */
	ck_assert_msg(expand("tp=2,pp=2,ep=8,sp=on,etp=1", &m, &c, &p,
			     &err) == TP_OK,
		      "%s", err.msg);
	for (uint32_t g = 0; g < p.groups.n; g++) {
		ck_assert_uint_eq(p.groups.v[g].etp, p.groups.v[g].ep > 1);
		any |= p.groups.v[g].etp == 1;
	}
	ck_assert(any);
	tp_strbuf_init(&sb);
	tp_plan_write(&p, &m, &c, &sb);
	ck_assert_msg(strstr(sb.buf, "\"etp\": 1") != NULL, "%s", sb.buf);
	ck_assert_msg(load_text(sb.buf, NULL, 0, &m, &c, &q, &err) == TP_OK,
		      "%s", err.msg);
	ck_assert_uint_eq(q.groups.v[0].etp, 1);
	tp_plan_release(&q);
	ck_assert_int_eq(load_text(sb.buf, "\"etp\": 1", '3', &m, &c, &q,
				   &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "etp=3") && strstr(err.path, ".etp"),
		      "%s at %s", err.msg, err.path);
	tp_plan_release(&q);
	tp_strbuf_release(&sb);
	tp_strbuf_init(&sb);
	export_args(&p, &m, &c, "megatron-core", TP_OK, &sb, &err);
	ck_assert_msg(strstr(sb.buf, "--expert-tensor-parallel-size 1\n") &&
			      strstr(sb.buf, "--expert-model-parallel-size 8\n"),
		      "%s", sb.buf);
	tp_strbuf_release(&sb);
	tp_plan_release(&p);
	/* the default (etp = tp) writes neither field nor flag */
	tp_plan_init(&p);
	ck_assert_msg(expand("tp=2,pp=2,ep=4,sp=on", &m, &c, &p, &err) ==
			      TP_OK,
		      "%s", err.msg);
	tp_strbuf_init(&sb);
	tp_plan_write(&p, &m, &c, &sb);
	ck_assert(strstr(sb.buf, "\"etp\"") == NULL);
	tp_strbuf_release(&sb);
	tp_strbuf_init(&sb);
	export_args(&p, &m, &c, "megatron-core", TP_OK, &sb, &err);
	ck_assert(strstr(sb.buf, "--expert-tensor-parallel") == NULL);
	tp_strbuf_release(&sb);
	tp_plan_release(&p);
	/* the errors */
	tp_plan_init(&p);
	ck_assert_int_eq(expand("tp=2,pp=2,ep=8,sp=on", &m, &c, &p, &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "does not divide dp=4"), "%s", err.msg);
	tp_plan_release(&p);
	tp_plan_init(&p);
	ck_assert_int_eq(expand("tp=2,pp=2,ep=4,etp=1", &m, &c, &p, &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "sp=on"), "%s", err.msg);
	tp_plan_release(&p);
	tp_plan_init(&p);
	ck_assert_int_eq(expand("tp=4,ep=4,sp=on,etp=2", &m, &c, &p, &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "etp=2") && strstr(err.msg, "(=4"),
		      "%s", err.msg);
	tp_plan_release(&p);
	load_hf("llama-3-8b.json", 512, 64, &d);
	tp_plan_init(&p);
	ck_assert_int_eq(expand("tp=2,sp=on,etp=1", &d, &c, &p, &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "no routed experts"), "%s", err.msg);
	tp_plan_release(&p);
	tp_model_release(&d);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* etp=1 on the toy MoE layer (4 experts of 1e8 B, their GEMMs split by
 * columns) at tp 2, dp 4, ep 4, sequence parallel, 8 devices, load 1:
 * by hand, each expert's weights are whole on its rank: 4 x 1e8 / ep 4
 * = 1e8 B against 4 x 1e8 / (ep 4 x tp 2) = 5e7 under etp = tp, the same
 * for the gradients; Adam's 12 B per parameter, ZeRO-1 over the expert-
 * data-parallel ranks: tp x dp / ep = 2 under etp=1 (5e7 x 12 / 2 = 3e8
 * B), dp / ep = 1 under etp = tp (2.5e7 x 12 = 3e8 B).  Compute is the
 * same FLOP per rank (ep x the replica's 2 samples / tp whole, against
 * ep x 2 samples split over tp: 4e11 FLOP = 4 ms per expert op and pass
 * at 100 TFLOP/s, / ep), and the experts' tensor-parallel collectives
 * are gone. */
static void run_etp(uint32_t etp, struct tp_report *r)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_sim_options o;
	struct tp_error err;
	struct tp_plan p;
	struct tp_plan_degrees deg = {4, 1, 2};
	uint32_t ops[32], devs[8];

	tp_test_moe_layer(&m, 4, 8, 1e8);
	for (uint32_t i = 0; i < m.ops.n; i++) {
		ops[i] = i;
		if (strstr(m.ops.v[i].name, "expert"))
			m.ops.v[i].tp_split = TP_SPLIT_COLUMN;
	}
	for (uint32_t d = 0; d < 8; d++)
		devs[d] = d;
	toy_cluster(&c, 8);
	tp_plan_init(&p);
	p.global_batch = m.global_batch;
	p.micro_batches = 1;
	p.zero = 1;
	p.expert_imbalance = 1;
	ck_assert_int_eq(tp_plan_add_group_degrees(&p, ops, (uint32_t)m.ops.n,
						   devs, 8, &deg, NULL, &err),
			 TP_OK);
	p.groups.v[0].ep = 4;
	p.groups.v[0].etp = etp;
	p.groups.v[0].sp = true;
	ck_assert_msg(tp_plan_validate(&p, &m, &c, &err) == TP_OK, "%s",
		      err.msg);
	toy_options(&o);
	toy_simulate(&m, &c, &p, &o, r);
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
}

START_TEST(test_etp_toy)
{
	struct tp_report a, b;

	run_etp(0, &a);
	run_etp(1, &b);
	ck_assert_msg(REL(a.devices[0].memory.weights, 5e7) < 1e-9, "%.9g",
		      a.devices[0].memory.weights);
	ck_assert_msg(REL(b.devices[0].memory.weights, 1e8) < 1e-9, "%.9g",
		      b.devices[0].memory.weights);
	ck_assert_msg(REL(b.devices[0].memory.gradients, 1e8) < 1e-9, "%.9g",
		      b.devices[0].memory.gradients);
	ck_assert_msg(REL(a.devices[0].memory.optimizer, 3e8) < 1e-9, "%.9g",
		      a.devices[0].memory.optimizer);
	ck_assert_msg(REL(b.devices[0].memory.optimizer, 3e8) < 1e-9, "%.9g",
		      b.devices[0].memory.optimizer);
	/* the same compute: 4 experts x (4 + 8) ms / ep 4 = 12 ms, plus the
	 * router's and combine's kernels and the optimizer step (0.7 ms) */
	ck_assert_msg(REL(a.devices[0].compute_s, b.devices[0].compute_s) <
			      1e-12,
		      "%.12g vs %.12g", a.devices[0].compute_s,
		      b.devices[0].compute_s);
	ck_assert_msg(b.devices[0].compute_s > 0.012 &&
			      b.devices[0].compute_s < 0.0135,
		      "%.9g", b.devices[0].compute_s);
	ck_assert_msg(b.iteration_time_s < a.iteration_time_s, "%.9g vs %.9g",
		      b.iteration_time_s, a.iteration_time_s);
	tp_report_release(&a);
	tp_report_release(&b);
}
END_TEST

/* Expert with context parallelism (Megatron-Core: expert-data-parallel
 * groups over dp x cp).  The toy's sequence of 8 tokens split over cp 2
 * context ranks: each holds half of its replica's tokens, and the EP
 * group of 4 is 4 consecutive (replica, context rank) blocks, so dp 2 x
 * cp 2 with ep 4 is the dp 4 ep 4 case of test_ep_time_toy by hand
 * (0.012 + 0.018 + 0.024 + 0.018 + 0.0014 s), and dp 4 x cp 2 with ep 4
 * the 8-device one (expert gradients all-reduced over dp x cp / ep = 2:
 * + 0.001 s).  Memory: one expert of 1e8 B per rank, and ZeRO-1 shards
 * the experts' Adam state over dp x cp / ep = 2 (5e7 x 12 / 2 B).  An ep
 * not dividing dp x cp is refused naming dp x cp. */
START_TEST(test_ep_with_cp_toy)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_report r;
	struct tp_plan p;
	struct tp_error err;
	uint32_t ops[16], devs[2] = {0, 1};
	struct tp_plan_degrees deg = {1, 2, 1};

	tp_test_moe_layer(&m, 4, 8, 1e8);
	m.seq_len = 8;
	toy_cp = 2;
	toy_cluster(&c, 4);
	run_toy(&m, &c, 2, 4, 0, 1.5, &r);
	ck_assert_msg(REL(r.iteration_time_s,
			  0.012 + 0.018 + 0.024 + 0.018 + 0.0014) < 1e-6,
		      "%.9g", r.iteration_time_s);
	ck_assert_msg(REL(r.devices[0].memory.weights, 1e8) < 1e-9, "%.9g",
		      r.devices[0].memory.weights);
	tp_report_release(&r);
	tp_cluster_release(&c);
	toy_cluster(&c, 8);
	run_toy(&m, &c, 4, 4, 0, 1.0, &r);
	ck_assert_msg(REL(r.iteration_time_s, 0.004 + 0.006 + 0.008 + 0.006 +
						      0.001 + 0.0014) < 1e-6,
		      "%.9g", r.iteration_time_s);
	tp_report_release(&r);
	run_toy(&m, &c, 4, 4, 1, 1.0, &r);
	ck_assert_msg(REL(r.devices[0].memory.optimizer, 5e7 * 12 / 2) < 1e-9,
		      "%.9g", r.devices[0].memory.optimizer);
	tp_report_release(&r);
	toy_cp = 1;
	/* dp 1 x cp 2 cannot hold an EP group of 4 */
	for (uint32_t i = 0; i < m.ops.n; i++)
		ops[i] = i;
	tp_plan_init(&p);
	p.global_batch = m.global_batch;
	p.micro_batches = 1;
	ck_assert_int_eq(tp_plan_add_group_degrees(&p, ops, (uint32_t)m.ops.n,
						   devs, 2, &deg, NULL, &err),
			 TP_OK);
	p.groups.v[0].ep = 4;
	ck_assert_int_eq(tp_plan_validate(&p, &m, &c, &err), TP_EINPUT);
	ck_assert_str_eq(err.path, "$.groups[0].ep");
	ck_assert_msg(strstr(err.msg, "dp x cp = 2"), "%s", err.msg);
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* A model's search space on a cluster (the action tests), every group
 * on all devices at tensor-parallel degree tp. */
struct space_fx {
	struct tp_groups g;
	struct tp_space sp;
	struct tp_decision *dec;
};

static void space_fx_init(struct space_fx *f, struct tp_model *m,
			  struct tp_cluster *c, uint8_t tp)
{
	ck_assert_int_eq(tp_coarsen(m, 0, &f->g, NULL), TP_OK);
	ck_assert_int_eq(tp_space_init(&f->sp, m, c, &f->g, NULL), TP_OK);
	f->dec = calloc(f->g.n, sizeof(*f->dec));
	ck_assert_ptr_nonnull(f->dec);
	for (uint32_t k = 0; k < f->g.n; k++) {
		f->dec[k].set = TP_SPACE_SET_ALL;
		f->dec[k].tp = tp;
	}
}

static void space_fx_release(struct space_fx *f)
{
	free(f->dec);
	tp_space_release(&f->sp);
	tp_groups_release(&f->g);
}

/* Does group k of plan p hold a routed expert's op? */
static bool group_has_experts(const struct tp_plan *p,
			      const struct tp_model *m, uint32_t k)
{
	const uint32_t *ops = tp_plan_group_ops(p, k);

	for (uint32_t i = 0; i < p->groups.v[k].n_ops; i++)
		if (tp_op_expert_index(m->ops.v[ops[i]].name) >= 0)
			return true;
	return false;
}

/* Megatron's grid (the megatron baseline) scores MoE models with experts
 * spread too: each point also with the largest ep whose ep x tp ranks
 * stay in a node.  Mixtral-8x7B on 16 H100 under megatron-core: the
 * grid's answer spreads experts and is no slower than the uniform EP
 * points with the largest ep up to 8 / tp dividing dp (tp 1/2/4, pp
 * 1/2/4, mb 1, ZeRO-1, the least recomputation that fits) simulated
 * here; without EP points it answered tp 2 with
 * ep 1, 3.217 s, where tp 2 ep 4 runs 3.201 s. */
START_TEST(test_ep_megatron_grid)
{
	static const char *const rcs[] = {"none", "selective", "full"};
	struct tp_model m;
	struct tp_cluster c;
	struct tp_planner_options po;
	struct tp_planner *pl;
	struct tp_search_options o;
	struct tp_search_result r;
	const struct tp_baseline_result *mg;
	struct tp_sim_scratch *scr;
	struct tp_error err;
	uint32_t ep = 1, tried = 0;

	load_hf("mixtral-8x7b.json", 4096, 64, &m);
	load_topo("dgx-h100:2", &c);
	tp_planner_options_default(&po);
	ck_assert_int_eq(tp_runtime_find("megatron-core", &po.runtime, &err),
			 TP_OK);
	pl = tp_planner_new(&m, &c, &po, &err);
	ck_assert_msg(pl != NULL, "%s", err.msg);
	tp_search_options_default(&o);
	o.threads = 1;
	o.playouts = 10;
	o.time_limit_s = 0;
	o.baseline = TP_BASELINE_MEGATRON;
	tp_search_result_init(&r);
	ck_assert_int_eq(tp_planner_run(pl, &o, &r, &err), TP_OK);
	mg = &r.baselines[TP_BASELINE_MEGATRON];
	ck_assert(mg->available && mg->feasible);
	for (uint32_t k = 0; k < mg->plan.groups.n; k++)
		if (mg->plan.groups.v[k].ep > ep)
			ep = mg->plan.groups.v[k].ep;
	ck_assert_msg(ep > 1, "%s: %g s, experts not spread", mg->config,
		      mg->iteration_time_s);
	scr = tp_sim_scratch_new(tp_planner_sim(pl));
	ck_assert_ptr_nonnull(scr);
	for (uint32_t tp = 1; tp <= 4; tp *= 2)
		for (uint32_t pp = 1; pp <= 4; pp *= 2)
			for (int k = 0; k < 3; k++) {
				char str[96];
				struct tp_plan p;
				struct tp_report rep;
				uint32_t e = 8 / tp; /* dividing dp */
				bool fits;
				while ((16 / (tp * pp)) % e)
					e /= 2;
				snprintf(str, sizeof(str),
					 "tp=%u,pp=%u,ep=%u,mb=1,zero=1,"
					 "recompute=%s%s",
					 tp, pp, e, rcs[k],
					 tp > 1 ? ",sp=on" : "");
				tp_plan_init(&p);
				tp_report_init(&rep);
				ck_assert_msg(expand(str, &m, &c, &p, &err) ==
						      TP_OK,
					      "%s: %s", str, err.msg);
				ck_assert_int_eq(tp_sim_run(tp_planner_sim(pl),
							    &p, scr, &rep,
							    NULL, &err),
						 TP_OK);
				fits = rep.feasible;
				if (fits) {
					tried++;
					ck_assert_msg(mg->iteration_time_s <=
							      rep.iteration_time_s,
						      "%s: %g s, %s: %g s",
						      mg->config,
						      mg->iteration_time_s, str,
						      rep.iteration_time_s);
				}
				tp_report_release(&rep);
				tp_plan_release(&p);
				if (fits) /* the least recomputation that fits */
					break;
			}
	ck_assert_uint_ge(tried, 3);
	tp_sim_scratch_free(scr);
	tp_search_result_release(&r);
	tp_planner_free(pl);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* The search offers ep (powers of two dividing the experts) for an MoE
 * model only, and a materialised plan carries it in every group it fits;
 * under DDP (no expert parallelism) none is offered. */
START_TEST(test_ep_actions)
{
	struct tp_model m;
	struct tp_cluster c;
	struct space_fx f;
	struct tp_globals gl;
	struct tp_action acts[64];
	struct tp_space_scratch *scr;
	struct tp_plan p;
	struct tp_error err;
	struct tp_runtime rt;
	uint32_t n, seen = 0;

	load_hf("mixtral-8x7b.json", 512, 64, &m);
	load_topo("dgx-h100:1", &c);
	space_fx_init(&f, &m, &c, 1);
	memset(&gl, 0, sizeof(gl));
	gl.micro_batches = 8;
	gl.schedule = TP_SCHEDULE_1F1B;
	n = tp_space_global_actions(&f.sp, &gl, f.dec, acts, 64);
	for (uint32_t i = 0; i < n; i++)
		if (tp_globals_ep(&acts[i].g) > 1)
			seen |= tp_globals_ep(&acts[i].g);
	ck_assert_uint_eq(seen, 2 | 4 | 8);
	/* the shape's other bits survive */
	tp_globals_set_ep(&gl, 8);
	tp_globals_set_shape(&gl, 0, true);
	ck_assert_uint_eq(tp_globals_ep(&gl), 8);
	ck_assert(tp_globals_sp(&gl));
	tp_globals_set_shape(&gl, 0, false);
	scr = tp_space_scratch_new(&f.sp);
	tp_plan_init(&p);
	ck_assert_msg(tp_space_materialize(&f.sp, &gl, f.dec, TP_COMPRESSION_OFF,
					   scr, &p, &err) == TP_OK,
		      "%s", err.msg);
	for (uint32_t k = 0; k < p.groups.n; k++)
		ck_assert_uint_eq(p.groups.v[k].ep,
				  group_has_experts(&p, &m, k) ? 8 : 1);
	ck_assert_msg(tp_plan_validate(&p, &m, &c, &err) == TP_OK, "%s",
		      err.msg);
	/* DDP cannot spread experts: nothing offered */
	ck_assert_int_eq(tp_runtime_find("ddp", &rt, &err), TP_OK);
	ck_assert_int_eq(tp_space_set_runtime(&f.sp, &rt, &err), TP_OK);
	tp_globals_set_ep(&gl, 1);
	n = tp_space_global_actions(&f.sp, &gl, f.dec, acts, 64);
	for (uint32_t i = 0; i < n; i++)
		ck_assert_uint_eq(tp_globals_ep(&acts[i].g), 1);
	tp_plan_release(&p);
	tp_space_scratch_free(scr);
	space_fx_release(&f);
	tp_model_release(&m);

	/* a dense model: no ep actions */
	load_hf("llama-2-7b.json", 512, 64, &m);
	space_fx_init(&f, &m, &c, 1);
	tp_globals_set_ep(&gl, 1);
	n = tp_space_global_actions(&f.sp, &gl, f.dec, acts, 64);
	for (uint32_t i = 0; i < n; i++)
		ck_assert_uint_eq(tp_globals_ep(&acts[i].g), 1);
	space_fx_release(&f);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST


/* etp as a search action (actions.h tp_globals_etp): offered where the
 * experts spread (ep > 1) and some group is tensor parallel, on with
 * sequence parallelism; back to tp from it, and off with ep 1 or without
 * sequence parallelism.  Mixtral on one DGX H100 at tp 2 (dp 4): ep 8
 * materialises as ep 4 in the expert groups (dp 4), with etp 1 as ep 8
 * (tp x dp = 8) and etp 1; the prior action carries it.  Failed without
 * the action (none offered) and with materialize ignoring it (ep 4). */
START_TEST(test_etp_actions)
{
	struct tp_model m;
	struct tp_cluster c;
	struct space_fx f;
	struct tp_globals gl;
	struct tp_action acts[64];
	struct tp_space_scratch *scr;
	struct tp_prior_action pa;
	struct tp_plan p;
	struct tp_error err;
	uint32_t n, on = 0, at = 0;

	load_hf("mixtral-8x7b.json", 512, 64, &m);
	load_topo("dgx-h100:1", &c);
	space_fx_init(&f, &m, &c, 2);
	memset(&gl, 0, sizeof(gl));
	gl.micro_batches = 8;
	gl.schedule = TP_SCHEDULE_1F1B;
	/* ep 1: no etp */
	n = tp_space_global_actions(&f.sp, &gl, f.dec, acts, 64);
	for (uint32_t i = 0; i < n; i++)
		ck_assert_uint_eq(tp_globals_etp(&acts[i].g), 0);
	tp_globals_set_ep(&gl, 8);
	n = tp_space_global_actions(&f.sp, &gl, f.dec, acts, 64);
	for (uint32_t i = 0; i < n; i++)
		if (tp_globals_etp(&acts[i].g)) {
			on++;
			at = i;
			ck_assert(tp_globals_sp(&acts[i].g));
			ck_assert_uint_eq(tp_globals_ep(&acts[i].g), 8);
		}
	ck_assert_uint_eq(on, 1);
	tp_space_prior_action(&f.sp, 0, &acts[at], false, &pa);
	ck_assert_uint_eq(pa.etp, 1);
	ck_assert_uint_eq(pa.ep, 8);
	scr = tp_space_scratch_new(&f.sp);
	tp_plan_init(&p);
	for (int e = 0; e < 2; e++) {
		struct tp_globals g2 = e ? acts[at].g : gl;
		tp_globals_set_shape(&g2, 0, true);
		ck_assert_msg(tp_space_materialize(&f.sp, &g2, f.dec,
						   TP_COMPRESSION_OFF, scr, &p,
						   &err) == TP_OK,
			      "%s", err.msg);
		for (uint32_t k = 0; k < p.groups.n; k++) {
			bool experts = group_has_experts(&p, &m, k);
			ck_assert_uint_eq(p.groups.v[k].ep,
					  experts ? (e ? 8 : 4) : 1);
			ck_assert_uint_eq(p.groups.v[k].etp,
					  experts && e ? 1 : 0);
		}
		ck_assert_msg(tp_plan_validate(&p, &m, &c, &err) == TP_OK,
			      "%s", err.msg);
	}
	/* from etp 1: back to tp; ep 1 and sequence parallelism off
	   turn it off */
	gl = acts[at].g;
	n = tp_space_global_actions(&f.sp, &gl, f.dec, acts, 64);
	on = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (tp_globals_ep(&acts[i].g) == 1 || !tp_globals_sp(&acts[i].g))
			ck_assert_uint_eq(tp_globals_etp(&acts[i].g), 0);
		on += tp_globals_etp(&acts[i].g) == 0 &&
		      tp_globals_ep(&acts[i].g) == 8 &&
		      tp_globals_sp(&acts[i].g);
	}
	ck_assert_uint_eq(on, 1);
	/* no group tensor parallel: nothing to offer */
	gl.etp = 0;
	for (uint32_t k = 0; k < f.g.n; k++)
		f.dec[k].tp = 1;
	n = tp_space_global_actions(&f.sp, &gl, f.dec, acts, 64);
	for (uint32_t i = 0; i < n; i++)
		ck_assert_uint_eq(tp_globals_etp(&acts[i].g), 0);
	tp_plan_release(&p);
	tp_space_scratch_free(scr);
	space_fx_release(&f);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST
/* Two nodes of 4 toy GPUs (bf16 at `peak`, also its fp8 rate), NVSwitch
 * at 100 GB/s per GPU, 4 NICs of 10 GB/s (one 40 GB/s link per node to
 * a switch), no latencies. */
static void toy_two_nodes(struct tp_cluster *c, double peak)
{
	struct tp_device_type t = tp_test_toy_type("toy");
	struct tp_error err;
	uint32_t ty;

	t.memory_bytes = 1e12;
	t.peak_flops[TP_DTYPE_BF16] = peak;
	t.peak_flops[TP_DTYPE_FP8] = peak;
	tp_cluster_init(c);
	ck_assert_int_eq(tp_cluster_add_type(c, &t, &ty, &err), TP_OK);
	for (int k = 0; k < 2; k++)
		ck_assert_int_eq(
		    tp_cluster_build_node(
			c,
			&(struct tp_node_build){k ? "node1" : "node0", ty, 4,
						TP_LINK_NVSWITCH, 100e9, 0, 4,
						10e9, 0, false},
			NULL, &err),
		    TP_OK);
	ck_assert_int_eq(tp_cluster_connect_star(c, 1, NULL, &err), TP_OK);
	ck_assert_int_eq(tp_cluster_finalize(c, &err), TP_OK);
}

/*
 * The token exchange by hand (README section 3, expert parallelism): the
 * toy layer's 8 experts (top 2, 1e8 B per sample to and from each) over
 * ep 8 = dp 8 on two nodes of 4, one sample per GPU, load 1: per pass
 * V = 8e8 dispatched + 8e8 combined per GPU; compute 0.008 s forward,
 * 0.016 backward at 100 TFLOP/s (one expert on 8 samples); no expert
 * sync (dp / ep = 1); Adam step 5e7 x 28 / 1e12 = 0.0014 s.
 *  alltoall: V / 8 = 2e8 B to each member; a node's NIC link carries
 *        4 GPUs x 4 flows over 40 GB/s = 2.5 GB/s each: 0.08 s per pass.
 *  node forwarding, 2 groups of which a token takes 1 (one group per
 *        node): D = 1 node per token, remote half the time, so 0.5
 *        copies of a token's one-copy bytes (V / top-k = 8e8 B per
 *        direction) leave the node: 4e8 B per GPU over its one network
 *        flow (4 per 40 GB/s link: 10 GB/s) = 0.04 s; inside the node
 *        2 x 3/4 copies = 1.2e9 B, 4e8 on each of 3 flows of
 *        100/3 GB/s: 0.012 s; the larger: 0.04 s per pass.
 *  ungrouped: D = 2 (1 - (4/8)(3/7)) = 11/7 nodes: 11/7 x 0.04 s.
 *  fp8 dispatch: (1 + 4/128) / 2 of the dispatch (forward) and of the
 *        combine's gradient (backward): (0.515625 + 1) x 8e8 x 0.04 / 1.6e9
 *        = 0.0303125 s per pass instead of 0.04.
 *  overlap at 10 TFLOP/s (compute 0.08 + 0.16 s > 0.08 s of all-to-all):
 *        hidden: 0.24 + 0.0014; with 20% of the SMs kept for it, the
 *        compute at 0.8: 0.3 + 0.0014; at 100 TFLOP/s the pair's 0.08 s
 *        of all-to-all exceeds 0.01 + 0.02 s of compute (0.8 speed) by
 *        0.05: 0.03 + 0.05 + 0.0014.
 */
START_TEST(test_ep_node_forward_toy)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_report r;
	double t, t8;
	const struct {
		double peak;
		bool fwd, overlap;
		int64_t groups;
		double share, expect;
	} cases[] = {
	    {100e12, false, false, 2, 0, 0.008 + 0.08 + 0.016 + 0.08 + 0.0014},
	    {100e12, true, false, 2, 0, 0.008 + 0.04 + 0.016 + 0.04 + 0.0014},
	    {100e12, true, false, 0, 0,
	     0.008 + 0.016 + 2 * 11.0 / 7 * 0.04 + 0.0014},
	    {10e12, true, false, 2, 0, 0.08 + 0.04 + 0.16 + 0.04 + 0.0014},
	    {10e12, true, true, 2, 0, 0.24 + 0.0014},
	    {10e12, true, true, 2, 0.2, 0.3 + 0.0014},
	    {100e12, true, true, 2, 0.2, 0.03 + 0.05 + 0.0014},
	};

	tp_test_moe_layer(&m, 8, 8, 1e8);
	m.arch.router_group_topk = 1;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		toy_two_nodes(&c, cases[k].peak);
		m.arch.router_groups = cases[k].groups;
		toy_ex.node_forward = cases[k].fwd;
		toy_ex.overlap = cases[k].overlap;
		toy_ex.sm_share = cases[k].share;
		run_toy(&m, &c, 8, 8, 0, 1.0, &r);
		ck_assert_msg(REL(r.iteration_time_s, cases[k].expect) < 1e-6,
			      "case %zu: %.9g vs %.9g", k, r.iteration_time_s,
			      cases[k].expect);
		tp_report_release(&r);
		tp_cluster_release(&c);
	}
	/* fp8 dispatch: 2 x (0.04 - 0.0303125) s less on an fp8 model, and
	 * nothing on a bf16 one */
	m.arch.router_groups = 2;
	toy_ex.overlap = false;
	toy_ex.sm_share = 0;
	toy_two_nodes(&c, 100e12);
	for (int dt = 0; dt < 2; dt++) {
		m.dtype = dt ? TP_DTYPE_FP8 : TP_DTYPE_BF16;
		toy_ex.fp8 = false;
		run_toy(&m, &c, 8, 8, 0, 1.0, &r);
		t = r.iteration_time_s;
		tp_report_release(&r);
		toy_ex.fp8 = true;
		run_toy(&m, &c, 8, 8, 0, 1.0, &r);
		t8 = r.iteration_time_s;
		tp_report_release(&r);
		ck_assert_msg(fabs(t - t8 - (dt ? 2 * (0.04 - 0.0303125) : 0)) <
				  1e-9,
			      "dtype %d: %.9g - %.9g", dt, t, t8);
	}
	memset(&toy_ex, 0, sizeof(toy_ex));
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* hai-llm ships DeepSeek-V3's exchange; comm_sm_share without ep_overlap
 * is refused at its place. */
START_TEST(test_ep_hai_llm_profile)
{
	struct tp_runtime rt;
	struct tp_sim_params pa;
	struct tp_error err;
	struct tp_load_options lo;
	struct tp_strbuf sb;
	size_t len;
	char *text, *at;

	ck_assert_msg(tp_runtime_find("hai-llm", &rt, &err) == TP_OK, "%s",
		      err.msg);
	tp_sim_params_default(&pa);
	ck_assert(!pa.ep_node_forward && !pa.ep_dispatch_fp8 &&
		  !pa.ep_overlap && pa.comm_sm_share == 0);
	tp_sim_params_runtime(&pa, &rt);
	ck_assert(pa.ep_node_forward && pa.ep_dispatch_fp8 && pa.ep_overlap);
	ck_assert(fabs(pa.comm_sm_share - 20.0 / 132) < 1e-4);
	text = tp_test_read(tp_data_file("runtimes/hai-llm.json"), &len);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "\"ep_overlap\": true");
	ck_assert_ptr_nonnull(at);
	tp_strbuf_init(&sb);
	tp_strbuf_add(&sb, text, (size_t)(at - text));
	tp_strbuf_adds(&sb, "\"ep_overlap\": false");
	tp_strbuf_adds(&sb, at + strlen("\"ep_overlap\": true"));
	tp_load_options_default(&lo);
	ck_assert_int_eq(tp_runtime_load("rt.json", sb.buf, sb.len, &lo, &rt,
					 &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.path, "behaviour.comm_sm_share"), "%s",
		      err.path);
	tp_strbuf_release(&sb);
	free(text);
}
END_TEST

/* A runtime profile's measured imbalance replaces the default; a bad one
 * is refused at its place. */
START_TEST(test_ep_runtime_imbalance)
{
	size_t len;
	char *text = tp_test_read(tp_data_file("runtimes/megatron-core.json"),
				  &len);
	struct tp_strbuf sb;
	struct tp_runtime rt;
	struct tp_load_options lo;
	struct tp_sim_params pa;
	struct tp_error err;
	char *at;

	ck_assert_ptr_nonnull(text);
	at = strstr(text, "\"behaviour\": {");
	ck_assert_ptr_nonnull(at);
	at += strlen("\"behaviour\": {");
	tp_load_options_default(&lo);
	lo.strict = true;
	tp_strbuf_init(&sb);
	tp_strbuf_add(&sb, text, (size_t)(at - text));
	tp_strbuf_adds(&sb, "\"expert_imbalance\": 1.1,");
	tp_strbuf_adds(&sb, at);
	{
		/* a present field names its source */
		char *src = strstr(sb.buf, "\"sources\": {");
		size_t off;
		char *rest;
		ck_assert_ptr_nonnull(src);
		off = (size_t)(src - sb.buf) + strlen("\"sources\": {");
		rest = strdup(sb.buf + off);
		sb.len = off;
		sb.buf[off] = '\0';
		tp_strbuf_adds(&sb, "\"expert_imbalance\": \"a test\",");
		tp_strbuf_adds(&sb, rest);
		free(rest);
	}
	ck_assert_msg(tp_runtime_load("rt.json", sb.buf, sb.len, &lo, &rt,
				      &err) == TP_OK,
		      "%s", err.msg);
	tp_sim_params_default(&pa);
	ck_assert(pa.expert_imbalance == 1.25);
	tp_sim_params_runtime(&pa, &rt);
	ck_assert(pa.expert_imbalance == 1.1);
	tp_strbuf_reset(&sb);
	tp_strbuf_add(&sb, text, (size_t)(at - text));
	tp_strbuf_adds(&sb, "\"expert_imbalance\": 0.5,");
	tp_strbuf_adds(&sb, at);
	ck_assert_int_eq(tp_runtime_load("rt.json", sb.buf, sb.len, &lo, &rt,
					 &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.path, "behaviour.expert_imbalance"), "%s",
		      err.path);
	tp_strbuf_release(&sb);
	free(text);
}
END_TEST

Suite *suite_moe(void)
{
	Suite *s = suite_create("moe");
	TCase *tc = tcase_create("ep");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_ep_strategy);
	tcase_add_test(tc, test_ep_validate);
	tcase_add_test(tc, test_ep_plan_file);
	tcase_add_test(tc, test_ep_export);
	tcase_add_test(tc, test_export_strategy_cli);
	tcase_add_test(tc, test_ep_cp_export_deepseek);
	tcase_add_test(tc, test_ep_memory_toy);
	tcase_add_test(tc, test_ep_memory_mixtral);
	tcase_add_test(tc, test_ep_memory_deepseek_shared);
	tcase_add_test(tc, test_ep_time_toy);
	tcase_add_test(tc, test_ep_with_cp_toy);
	tcase_add_test(tc, test_ep_megatron_grid);
	tcase_add_test(tc, test_ep_actions);
	tcase_add_test(tc, test_etp_actions);
	tcase_add_test(tc, test_ep_runtime_imbalance);
	tcase_add_test(tc, test_ep_node_forward_toy);
	tcase_add_test(tc, test_ep_hai_llm_profile);
	tcase_add_test(tc, test_etp_strategy_plan);
	tcase_add_test(tc, test_etp_toy);
	suite_add_tcase(s, tc);
	return s;
}
