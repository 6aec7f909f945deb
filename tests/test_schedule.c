/*
 * test_schedule.c - pipeline schedules of modern training: zero bubble
 * ZB-H1 (the backward split into input- and weight-gradient passes) and
 * uneven first / last stages, each simulated figure against a hand
 * calculation; the strategy string, the runtime capability, the action
 * space and the exports.
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

#define REL(a, b)                                                              \
	(fabs((double)(a) - (double)(b)) / fmax(fabs((double)(b)), 1e-300))

/* A chain of n matmuls, one per layer: forward `flop` per sample
 * (backward 2x), `pbytes` of weights, `saved` bytes kept per sample for
 * the backward, `out` bytes of output per sample; no edge bytes (free
 * pipeline transfers). */
static void chain(struct tp_model *m, uint32_t n, double flop, double pbytes,
		  double saved, double out, int64_t batch)
{
	const struct tp_test_chain s = {
		.n = n, .dtype = TP_DTYPE_FP16, .flop = flop, .pbytes = pbytes,
		.saved = saved, .out = out, .edge = 0, .batch = batch};
	tp_test_chain_model(m, &s);
}

/* p stages of one op each on the toy node (1e14 FLOP/s, exactly),
 * m micro-batches of one sample, the given schedule; simulated without
 * latencies. */
static void pipeline(const struct tp_model *m, uint32_t p,
		     enum tp_schedule sched, struct tp_report *r)
{
	struct tp_device_type t = tp_test_toy_type("toy");
	struct tp_cluster c;
	struct tp_plan pl;
	struct tp_sim_options o;
	struct tp_sim *sim;
	struct tp_sim_scratch *s;
	struct tp_error err;

	tp_test_toy_node(&c, &t, p);
	tp_plan_init(&pl);
	pl.global_batch = m->global_batch;
	pl.micro_batches = (uint32_t)m->global_batch;
	pl.schedule = sched;
	for (uint32_t k = 0; k < p; k++)
		ck_assert_int_eq(tp_plan_add_group_degrees(
				     &pl, &k, 1, &k, 1,
				     &(struct tp_plan_degrees){1, 1, 1}, NULL,
				     NULL),
				 TP_OK);
	tp_sim_options_default(&o);
	o.params.p2p_latency_s = 0;
	o.params.collective_latency_s = 0;
	o.params.gemm_sustained = 1;
	sim = tp_sim_new(m, &c, &o, &err);
	ck_assert_msg(sim != NULL, "%s", err.msg);
	s = tp_sim_scratch_new(sim);
	ck_assert_ptr_nonnull(s);
	tp_report_init(r);
	ck_assert_msg(tp_sim_run(sim, &pl, s, r, NULL, &err) == TP_OK, "%s",
		      err.msg);
	/* the searches' lower bound never exceeds the simulated time */
	{
		double lb = 0;
		ck_assert_int_eq(tp_sim_lower_bound(sim, &pl, s, &lb, &err),
				 TP_OK);
		ck_assert_msg(lb > 0 && lb <= r->iteration_time_s * (1 + 1e-12),
			      "bound %.9g > %.9g", lb, r->iteration_time_s);
	}
	tp_sim_scratch_free(s);
	tp_sim_free(sim);
	tp_plan_release(&pl);
	tp_cluster_release(&c);
}

/*
 * ZB-H1 against the hand calculation of Qi et al. (ICLR 2024), p = 4
 * stages, m = 8 micro-batches, F = B = W = 0.01 s (a matmul of 1e12 FLOP
 * per sample at 1e14 FLOP/s; its 2e12 backward FLOP half input gradient,
 * half weight gradient).  1F1B: (m + p - 1)(F + B + W) = 11 x 0.03 =
 * 0.33 s.  ZB-H1: every stage busy m (F + B + W) = 0.24 s, bubble
 * (p - 1)(F + B - W) = 3 x 0.01 s: 0.27 s.  Both plus one optimizer step:
 * 1e3 parameter bytes = 500 fp16 parameters x 28 bytes / 1e12 B/s.  The
 * bubble fraction of ZB-H1: 1 - 0.24 / 0.27 = 1/9.
 */
START_TEST(test_zb_h1_bubble)
{
	struct tp_model m;
	struct tp_report r;
	double u = 0.01, opt = 500 * 28 / 1e12;
	uint32_t p = 4, mb = 8;

	chain(&m, p, 1e12, 1e3, 0, 0, mb);
	pipeline(&m, p, TP_SCHEDULE_1F1B, &r);
	ck_assert_msg(REL(r.iteration_time_s, (mb + p - 1) * 3 * u + opt) <
			      1e-9,
		      "1f1b %.12g", r.iteration_time_s);
	tp_report_release(&r);
	pipeline(&m, p, TP_SCHEDULE_ZB_H1, &r);
	ck_assert_msg(REL(r.iteration_time_s,
			  mb * 3 * u + (p - 1) * (u + u - u) + opt) < 1e-9,
		      "zb-h1 %.12g vs %.12g", r.iteration_time_s,
		      mb * 3 * u + (p - 1) * u + opt);
	ck_assert_msg(REL(r.bubble_fraction, 1.0 / 9) < 1e-9, "bubble %.12g",
		      r.bubble_fraction);
	/* every device computed all its F, B and W */
	ck_assert(REL(r.devices[0].compute_s, mb * 3 * u + opt) < 1e-9);
	tp_report_release(&r);
	tp_model_release(&m);
}
END_TEST

/*
 * Memory of ZB-H1 by hand: a stage keeps A = 10 MB saved per micro-batch
 * from its F until its B; its deferred W keeps the matmul's input (the
 * same A) and output gradient O = 1 MB until the W ends.  1F1B: stage s
 * holds p - s micro-batches, peak (p - s) A.  ZB-H1: stage s runs its
 * first W after its (s+1)-th B and one W after every B: just after a B
 * it holds p - s - 1 forwards and s + 1 deferred W, peak
 * (p - s - 1) A + (s + 1)(A + O) = p A + (s + 1) O.
 */
START_TEST(test_zb_h1_memory)
{
	struct tp_model m;
	struct tp_report r;
	double A = 10e6, O = 1e6;
	uint32_t p = 4, mb = 8;

	chain(&m, p, 1e12, 1e3, A, O, mb);
	pipeline(&m, p, TP_SCHEDULE_1F1B, &r);
	for (uint32_t s = 0; s < p; s++)
		ck_assert_msg(REL(r.devices[s].memory.activations, (p - s) * A) <
				      1e-9,
			      "1f1b stage %u: %.9g", s,
			      r.devices[s].memory.activations);
	tp_report_release(&r);
	pipeline(&m, p, TP_SCHEDULE_ZB_H1, &r);
	for (uint32_t s = 0; s < p; s++)
		ck_assert_msg(REL(r.devices[s].memory.activations,
				  p * A + (s + 1) * O) < 1e-9,
			      "zb-h1 stage %u: %.9g vs %.9g", s,
			      r.devices[s].memory.activations,
			      p * A + (s + 1) * O);
	tp_report_release(&r);
	tp_model_release(&m);
}
END_TEST

/* Four one-device nodes, "big" (200 GB) and "small" (48 GB) in turn, of
 * the toy's speed, on a star: the contiguous halves {big, small} are a
 * pipeline stage each. */
static void big_small_cluster(struct tp_cluster *c)
{
	struct tp_device_type big = tp_test_toy_type("big");
	struct tp_device_type small = tp_test_toy_type("small");
	struct tp_error err;
	uint32_t ty[2];

	big.memory_bytes = 200e9;
	small.memory_bytes = 48e9;
	tp_cluster_init(c);
	ck_assert_int_eq(tp_cluster_add_type(c, &big, &ty[0], &err), TP_OK);
	ck_assert_int_eq(tp_cluster_add_type(c, &small, &ty[1], &err), TP_OK);
	for (uint32_t k = 0; k < 4; k++) {
		char name[8];
		snprintf(name, sizeof(name), "n%u", k);
		ck_assert_int_eq(
			tp_cluster_build_node(c,
					      &(struct tp_node_build){
						  name, ty[k % 2], 1,
						  TP_LINK_NVSWITCH, 100e9, 0,
						  1, 25e9, 0, false},
					      NULL, &err),
			TP_OK);
	}
	ck_assert_int_eq(tp_cluster_connect_star(c, 1.0, NULL, &err), TP_OK);
	ck_assert_int_eq(tp_cluster_finalize(c, &err), TP_OK);
}

/* The set of exactly devices {a, a + 1}. */
static uint32_t pair_set(const struct tp_space *sp, uint32_t a)
{
	for (uint32_t k = 0; k < sp->sets.n; k++) {
		const uint32_t *d = tp_space_set_devs(sp, k);
		if (sp->sets.v[k].n == 2 && d[0] == a && d[1] == a + 1)
			return k;
	}
	ck_abort_msg("no set {%u, %u}", a, a + 1);
	return 0;
}

/* The search's space on big_small_cluster over a chain model, every
 * group at tp 1 on {0, 1} (the first `first` groups) or {2, 3}, and the
 * plan materialised from it (bs_fx_plan). */
struct bs_fx {
	struct tp_model m;
	struct tp_cluster c;
	struct tp_groups g;
	struct tp_space sp;
	struct tp_space_scratch *scr;
	struct tp_decision *dec;
	struct tp_plan p;
};

static void bs_fx_init(struct bs_fx *f, const struct tp_test_chain *ch,
		       uint32_t first)
{
	struct tp_error err;

	big_small_cluster(&f->c);
	tp_test_chain_model(&f->m, ch);
	ck_assert_int_eq(tp_coarsen(&f->m, 0, &f->g, NULL), TP_OK);
	ck_assert_uint_eq(f->g.n, ch->n);
	ck_assert_int_eq(tp_space_init(&f->sp, &f->m, &f->c, &f->g, &err),
			 TP_OK);
	f->scr = tp_space_scratch_new(&f->sp);
	ck_assert_ptr_nonnull(f->scr);
	f->dec = calloc(f->g.n, sizeof(*f->dec));
	ck_assert_ptr_nonnull(f->dec);
	for (uint32_t i = 0; i < f->g.n; i++) {
		f->dec[i].set = pair_set(&f->sp, i < first ? 0 : 2);
		f->dec[i].tp = 1;
	}
	tp_plan_init(&f->p);
}

static void bs_fx_release(struct bs_fx *f)
{
	tp_plan_release(&f->p);
	free(f->dec);
	tp_space_scratch_free(f->scr);
	tp_space_release(&f->sp);
	tp_groups_release(&f->g);
	tp_model_release(&f->m);
	tp_cluster_release(&f->c);
}

/* f->p from gl under runtime rt; the share of replica 1 (the small
 * device) of plan group grp. */
static double bs_fx_plan(struct bs_fx *f, const struct tp_runtime *rt,
			 const struct tp_globals *gl, uint32_t grp)
{
	struct tp_error err;

	ck_assert_int_eq(tp_space_set_runtime(&f->sp, rt, &err), TP_OK);
	ck_assert_msg(tp_space_materialize(&f->sp, gl, f->dec,
					   TP_COMPRESSION_OFF, f->scr, &f->p,
					   &err) == TP_OK,
		      "%s", err.msg);
	ck_assert_uint_gt(f->p.groups.n, grp);
	/* replica 0 on the big device, 1 on the small one */
	ck_assert_uint_eq(f->p.devs.v[f->p.groups.v[grp].dev_first + 1],
			  2 * grp + 1);
	return tp_plan_group_shares(&f->p, grp)[1];
}

/* Peak memory of device dev, f->p simulated under runtime rt. */
static double bs_fx_peak(const struct bs_fx *f, const struct tp_runtime *rt,
			 uint32_t dev)
{
	struct tp_report r;
	struct tp_sim_options o;
	struct tp_sim *sim;
	struct tp_sim_scratch *ss;
	struct tp_error err;
	double peak;

	tp_sim_options_default(&o);
	tp_sim_params_runtime(&o.params, rt);
	sim = tp_sim_new(&f->m, &f->c, &o, &err);
	ck_assert_msg(sim != NULL, "%s", err.msg);
	ss = tp_sim_scratch_new(sim);
	tp_report_init(&r);
	ck_assert_msg(tp_sim_run(sim, &f->p, ss, &r, NULL, &err) == TP_OK,
		      "%s", err.msg);
	peak = r.devices[dev].peak_memory_bytes;
	tp_report_release(&r);
	tp_sim_scratch_free(ss);
	tp_sim_free(sim);
	return peak;
}

/*
 * The search's memory pre-estimate (search/actions.c run_info) under
 * zb-h1: stage s keeps p - s - 1 forwards and s + 1 deferred W passes
 * (test_zb_h1_memory), p micro-batches' worth on every stage, where 1F1B
 * keeps p - s.  Two stages of 4 layers (A = 1 GB saved per sample each),
 * a big and a small device per stage, 4 micro-batches of 16 samples:
 * by speed each replica takes 8.  The last stage's small device holds
 * under 1F1B 1 x 8 x 4 GB = 32 GB (fits its 48 GB), under zb-h1
 * 2 x 32 = 64 GB: its share is capped to 6 samples or fewer, and the
 * simulator finds the plan within memory.  Failed with 1F1B's p - s for
 * zb-h1 (shares 0.5, the small device at 64 GB of 48).
 */
START_TEST(test_zb_h1_memory_estimate)
{
	const struct tp_test_chain ch = {.n = 8, .dtype = TP_DTYPE_FP16,
					 .flop = 1e12, .pbytes = 1e3,
					 .saved = 1e9, .batch = 64};
	const enum tp_schedule sched[] = {TP_SCHEDULE_1F1B, TP_SCHEDULE_ZB_H1};
	struct tp_runtime none;
	struct bs_fx f;

	tp_runtime_none(&none);
	bs_fx_init(&f, &ch, 4);
	for (int k = 0; k < 2; k++) {
		struct tp_globals gl;
		double sh, peak;

		memset(&gl, 0, sizeof(gl));
		gl.micro_batches = 4;
		gl.schedule = sched[k];
		sh = bs_fx_plan(&f, &none, &gl, 1);
		ck_assert_uint_eq(f.p.groups.n, 2);
		ck_assert_uint_eq(f.p.schedule, sched[k]);
		if (k == 0)
			ck_assert_double_eq_tol(sh, 0.5, 1e-12);
		else
			ck_assert_msg(sh <= 6.0 / 16 + 1e-12,
				      "zb-h1: the small device's share %.6g",
				      sh);
		peak = bs_fx_peak(&f, &none, 3);
		ck_assert_msg(peak <= 48e9, "%s: small device %.4g GB of 48",
			      tp_schedule_name(sched[k]), peak / 1e9);
	}
	bs_fx_release(&f);
}
END_TEST

/*
 * The search's memory pre-estimate counts the runtime's gradient buffers
 * as the simulator does (core/cost.h tp_cost_state_runtime): one stage
 * on {big, small}, 4 ops of 1 GB of fp16 parameters (2e9 parameters),
 * 0.4375 GB saved per op and sample, one micro-batch of 16 samples, 8
 * per replica by speed.  Adam's 16 bytes per parameter leave the small
 * device 16 of its 48 GB, enough for its 8 samples (14 GB); under a
 * runtime with Megatron-Core's fp32 gradient buffer (18 bytes) 12 GB,
 * under one with DDP's bucket copy reduced in fp32 (20 bytes) 8 GB: its
 * share is capped (6 and 4 samples) and the simulator, under the same
 * runtime, finds the plan within memory.  Failed with the estimate at 16
 * bytes under both (share 8, the small device at 50 and 54 GB of 48).
 */
START_TEST(test_grad_buffer_memory_estimate)
{
	const struct tp_test_chain ch = {.n = 4, .dtype = TP_DTYPE_FP16,
					 .flop = 1e12, .pbytes = 1e9,
					 .saved = 0.4375e9, .out = 1e3,
					 .batch = 16};
	const double most[] = {8, 6, 4};
	struct bs_fx f;

	bs_fx_init(&f, &ch, 4);
	for (int k = 0; k < 3; k++) {
		struct tp_runtime rt;
		struct tp_globals gl;
		double sh, peak;

		tp_runtime_none(&rt);
		if (k) {
			snprintf(rt.name, sizeof(rt.name), "custom");
			rt.behaviour.grad_buffer = TP_GRAD_REDUCE_FP32;
		}
		if (k == 2) {
			rt.behaviour.grad_buffer = TP_GRAD_REDUCE_MODEL;
			rt.behaviour.grad_bucket_copy = true;
			rt.behaviour.grad_reduce = TP_GRAD_REDUCE_FP32;
		}
		memset(&gl, 0, sizeof(gl));
		gl.micro_batches = 1;
		sh = bs_fx_plan(&f, &rt, &gl, 0);
		ck_assert_uint_eq(f.p.groups.n, 1);
		ck_assert_msg(sh * 16 <= most[k] + 1e-9,
			      "runtime %d: the small device takes %.6g "
			      "samples, at most %g fit",
			      k, sh * 16, most[k]);
		peak = bs_fx_peak(&f, &rt, 1);
		ck_assert_msg(peak <= 48e9,
			      "runtime %d: small device %.4g GB of 48", k,
			      peak / 1e9);
	}
	bs_fx_release(&f);
}
END_TEST

/* schedule=zb-h1 in the strategy string, the plan file and the runtime
 * check: fsdp2 (torch.distributed.pipelining) runs it, Megatron-Core does
 * not. */
START_TEST(test_zb_h1_strategy_runtime)
{
	struct tp_strategy st;
	struct tp_error err;
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_runtime rt;
	char buf[512], why[256];

	ck_assert_int_eq(tp_strategy_parse("pp=4,schedule=zb-h1", &st, &err),
			 TP_OK);
	ck_assert_int_eq(st.schedule, TP_SCHEDULE_ZB_H1);
	tp_strategy_format(&st, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, "schedule=zb-h1") != NULL, "%s", buf);
	ck_assert_int_eq(tp_strategy_parse("schedule=zb", &st, &err),
			 TP_EUSAGE);
	ck_assert_msg(strstr(err.msg, "zb-h1") != NULL, "%s", err.msg);
	ck_assert_str_eq(tp_schedule_name(TP_SCHEDULE_ZB_H1), "zb-h1");
	ck_assert_int_eq(tp_schedule_parse("zb-h1"), TP_SCHEDULE_ZB_H1);

	{
		struct tp_device_type t = tp_test_toy_type("toy");
		tp_test_toy_node(&c, &t, 4);
	}
	chain(&m, 8, 1e12, 1e3, 0, 0, 8);
	tp_plan_init(&p);
	ck_assert_int_eq(tp_strategy_parse("pp=4,schedule=zb-h1", &st, &err),
			 TP_OK);
	ck_assert_msg(tp_strategy_to_plan(&st, &m, &c, &p, &err) == TP_OK,
		      "%s", err.msg);
	ck_assert_int_eq(p.schedule, TP_SCHEDULE_ZB_H1);
	ck_assert_int_eq(tp_runtime_find("fsdp2", &rt, &err), TP_OK);
	ck_assert(rt.can.schedules & (1u << TP_SCHEDULE_ZB_H1));
	ck_assert_uint_eq(tp_runtime_plan_check(&rt, &p, &m, &c, NULL, why,
						sizeof(why)) &
				  (1u << TP_CAP_SCHEDULES),
			  0);
	ck_assert_int_eq(tp_runtime_find("megatron-core", &rt, &err), TP_OK);
	ck_assert_uint_ne(tp_runtime_plan_check(&rt, &p, &m, &c, NULL, why,
						sizeof(why)) &
				  (1u << TP_CAP_SCHEDULES),
			  0);
	ck_assert_msg(strstr(why, "zb-h1") != NULL, "%s", why);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* The search offers zb-h1 where the runtime runs it (fsdp2), not under
 * Megatron-Core, and not on an interleaved pipeline. */
START_TEST(test_zb_h1_actions)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_groups g;
	struct tp_space sp;
	struct tp_globals gl;
	struct tp_action acts[64];
	struct tp_decision *dec;
	struct tp_runtime rt;
	struct tp_error err;
	const char *names[] = {"fsdp2", "megatron-core"};

	{
		struct tp_device_type t = tp_test_toy_type("toy");
		tp_test_toy_node(&c, &t, 4);
	}
	chain(&m, 8, 1e12, 1e3, 0, 0, 8);
	ck_assert_int_eq(tp_coarsen(&m, 0, &g, NULL), TP_OK);
	for (int k = 0; k < 2; k++) {
		uint32_t n, zb = 0;
		ck_assert_int_eq(tp_space_init(&sp, &m, &c, &g, NULL), TP_OK);
		ck_assert_int_eq(tp_runtime_find(names[k], &rt, &err), TP_OK);
		ck_assert_int_eq(tp_space_set_runtime(&sp, &rt, &err), TP_OK);
		dec = calloc(g.n, sizeof(*dec));
		for (uint32_t i = 0; i < g.n; i++) {
			dec[i].set = TP_SPACE_SET_ALL;
			dec[i].tp = 1;
		}
		memset(&gl, 0, sizeof(gl));
		gl.micro_batches = 8;
		gl.schedule = TP_SCHEDULE_1F1B;
		n = tp_space_global_actions(&sp, &gl, dec, acts, 64);
		for (uint32_t i = 0; i < n; i++)
			zb += acts[i].g.schedule == TP_SCHEDULE_ZB_H1;
		ck_assert_uint_eq(zb, k == 0 ? 1 : 0);
		/* from zb-h1, back to 1f1b */
		if (k == 0) {
			uint32_t back = 0;
			gl.schedule = TP_SCHEDULE_ZB_H1;
			n = tp_space_global_actions(&sp, &gl, dec, acts, 64);
			for (uint32_t i = 0; i < n; i++)
				back += acts[i].g.schedule == TP_SCHEDULE_1F1B;
			ck_assert_uint_ge(back, 1);
		}
		free(dec);
		tp_space_release(&sp);
	}
	tp_groups_release(&g);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* The TorchTitan export names torch.distributed.pipelining's zero-bubble
 * schedule for a zb-h1 plan of fsdp2, and says what it runs. */
/* Llama-2-7B at 4,096 tokens, batch 64, on `spec` over NDR InfiniBand. */
static void llama_on(struct tp_model *m, struct tp_cluster *c,
		     const char *spec)
{
	struct tp_error err;

	tp_model_init(m);
	ck_assert_msg(tp_build_hf(tp_test_path("data/hf/llama-2-7b.json"), 4096,
				  64, -1, m, &err) == TP_OK,
		      "%s", err.msg);
	tp_cluster_init(c);
	ck_assert_msg(tp_build_topology(&spec, 1, "ib-ndr", 1, c, &err) ==
			      TP_OK,
		      "%s", err.msg);
}

START_TEST(test_zb_h1_export)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_strategy st;
	struct tp_runtime rt;
	struct tp_export_spec spec;
	struct tp_strbuf out, notes;
	struct tp_error err;

	llama_on(&m, &c, "dgx-h100:1");
	tp_plan_init(&p);
	ck_assert_int_eq(tp_strategy_parse("pp=4,zero=3,schedule=zb-h1", &st,
					   &err),
			 TP_OK);
	ck_assert_msg(tp_strategy_to_plan(&st, &m, &c, &p, &err) == TP_OK,
		      "%s", err.msg);
	ck_assert_int_eq(tp_runtime_find("fsdp2", &rt, &err), TP_OK);
	memset(&spec, 0, sizeof(spec));
	tp_strbuf_init(&out);
	tp_strbuf_init(&notes);
	ck_assert_msg(tp_export_analyze(&p, &m, &c, &rt, &spec, &err) == TP_OK,
		      "%s", err.msg);
	ck_assert_msg(tp_export_write(&spec, TP_EXPORT_TORCHTITAN, NULL, &out,
				      &notes, &err) == TP_OK,
		      "%s", err.msg);
	ck_assert_msg(strstr(out.buf, "pipeline_parallel_schedule = "
				      "\"InterleavedZeroBubble\"") != NULL,
		      "%s", out.buf);
	ck_assert_msg(strstr(notes.buf, "zb-h1") != NULL, "%s", notes.buf);
	tp_export_spec_release(&spec);
	tp_strbuf_release(&out);
	tp_strbuf_release(&notes);
	/* Megatron-Core has no zero-bubble schedule: refused */
	ck_assert_int_eq(tp_runtime_find("megatron-core", &rt, &err), TP_OK);
	memset(&spec, 0, sizeof(spec));
	ck_assert_int_eq(tp_export_analyze(&p, &m, &c, &rt, &spec, &err),
			 TP_EINFEASIBLE);
	ck_assert_msg(strstr(err.msg, "zb-h1") != NULL, "%s", err.msg);
	tp_export_spec_release(&spec);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* The layers of each pipeline chunk of plan p (the launcher's view). */
static void chunk_layers(const struct tp_plan *p, const struct tp_model *m,
			 const struct tp_cluster *c, int64_t *out, uint32_t n)
{
	struct tp_runtime rt;
	struct tp_plan_shape sh;
	struct tp_error err;

	tp_runtime_none(&rt);
	ck_assert_int_eq(tp_runtime_find("megatron-core", &rt, &err), TP_OK);
	tp_runtime_plan_check(&rt, p, m, c, &sh, NULL, 0);
	ck_assert(sh.ok);
	ck_assert_uint_eq(sh.chunks, n);
	memcpy(out, sh.chunk_layers, n * sizeof(*out));
}

/* The Megatron-LM arguments of plan p under megatron-core. */
static void megatron_args(const struct tp_plan *p, const struct tp_model *m,
			  const struct tp_cluster *c, struct tp_strbuf *out)
{
	struct tp_runtime rt;
	struct tp_export_spec spec;
	struct tp_error err;

	ck_assert_int_eq(tp_runtime_find("megatron-core", &rt, &err), TP_OK);
	memset(&spec, 0, sizeof(spec));
	ck_assert_msg(tp_export_analyze(p, m, c, &rt, &spec, &err) == TP_OK,
		      "%s", err.msg);
	ck_assert_msg(tp_export_write(&spec, TP_EXPORT_MEGATRON, NULL, out,
				      NULL, &err) == TP_OK,
		      "%s", err.msg);
	tp_export_spec_release(&spec);
}

/*
 * A pipeline deeper than the model names its layer count in the singular
 * for a one-layer model ("only 1 layer", not "1 layers"): a 1-layer GPT
 * on 16 GPUs with pp=2, and with pp=2 interleaved:2 (4 chunks).
 */
START_TEST(test_pipeline_one_layer_message)
{
	struct tp_gpt_dims d = {0};
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_strategy st;
	struct tp_error err;
	const char *spec = "dgx-h100:2";

	d.hidden = 256;
	d.layers = 1;
	d.heads = 4;
	d.seq = 128;
	d.vocab = 1000;
	d.batch = 16;
	tp_model_init(&m);
	ck_assert_msg(tp_build_gpt(&d, &m, &err) == TP_OK, "%s", err.msg);
	tp_cluster_init(&c);
	ck_assert_msg(tp_build_topology(&spec, 1, "ib-ndr", 1, &c, &err) ==
			      TP_OK,
		      "%s", err.msg);
	tp_plan_init(&p);
	ck_assert_int_eq(tp_strategy_parse("pp=2", &st, &err), TP_OK);
	ck_assert_int_eq(tp_strategy_to_plan(&st, &m, &c, &p, &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "has only 1 layer;") != NULL, "%s",
		      err.msg);
	ck_assert_int_eq(tp_strategy_parse("pp=2,schedule=interleaved:2", &st,
					   &err),
			 TP_OK);
	ck_assert_int_eq(tp_strategy_to_plan(&st, &m, &c, &p, &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "has only 1 layer;") != NULL, "%s",
		      err.msg);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/*
 * Uneven first / last stages (Megatron-Core's --decoder-first/last-
 * pipeline-num-layers) in the strategy string: Llama-2-7B's 32 layers on
 * 4 stages with first_layers=9, last_layers=5 are 9, 9, 9, 5 (the middle
 * stages share 32 - 14 = 18); interleaved:2 with 10 and 6: every stage's
 * layers halved over its two chunks, 5 4 4 3 | 5 4 4 3.  The Megatron
 * export writes the two flags for the first and the layout string for
 * the second; counts the other stages cannot share are refused.
 */
START_TEST(test_uneven_stages_strategy)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_strategy st;
	struct tp_strbuf out;
	struct tp_error err;
	const int64_t want1[] = {9, 9, 9, 5};
	const int64_t want2[] = {5, 4, 4, 3, 5, 4, 4, 3};
	int64_t got[8];
	char buf[512];

	llama_on(&m, &c, "dgx-h100:2");
	tp_plan_init(&p);
	ck_assert_int_eq(tp_strategy_parse("tp=2,pp=4,first_layers=9,"
					   "last_layers=5",
					   &st, &err),
			 TP_OK);
	tp_strategy_format(&st, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, ",first_layers=9,last_layers=5") != NULL,
		      "%s", buf);
	ck_assert_msg(tp_strategy_to_plan(&st, &m, &c, &p, &err) == TP_OK,
		      "%s", err.msg);
	chunk_layers(&p, &m, &c, got, 4);
	ck_assert_mem_eq(got, want1, sizeof(want1));
	tp_strbuf_init(&out);
	megatron_args(&p, &m, &c, &out);
	ck_assert_msg(strstr(out.buf, "--decoder-first-pipeline-num-layers 9") &&
			      strstr(out.buf,
				     "--decoder-last-pipeline-num-layers 5"),
		      "%s", out.buf);
	tp_strbuf_release(&out);

	ck_assert_int_eq(tp_strategy_parse("tp=2,pp=4,schedule=interleaved:2,"
					   "first_layers=10,last_layers=6",
					   &st, &err),
			 TP_OK);
	ck_assert_msg(tp_strategy_to_plan(&st, &m, &c, &p, &err) == TP_OK,
		      "%s", err.msg);
	chunk_layers(&p, &m, &c, got, 8);
	ck_assert_mem_eq(got, want2, sizeof(want2));
	tp_strbuf_init(&out);
	megatron_args(&p, &m, &c, &out);
	ck_assert_msg(strstr(out.buf, "--pipeline-model-parallel-layout "
				      "Ettttt|tttt|tttt|ttt|ttttt|tttt|tttt|"
				      "tttL") != NULL,
		      "%s", out.buf);
	tp_strbuf_release(&out);

	/* 26 layers for 3 stages; 9 layers over 2 chunks; no pipeline */
	ck_assert_int_eq(tp_strategy_parse("tp=2,pp=4,last_layers=6", &st,
					   &err),
			 TP_OK);
	ck_assert_int_eq(tp_strategy_to_plan(&st, &m, &c, &p, &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "26 of the model's 32 layers") != NULL,
		      "%s", err.msg);
	/* the nearest counts that work: 32 - 5 = 27 and 32 - 8 = 24 split
	   over 3 stages, 7 and 6 do not */
	ck_assert_msg(strstr(err.msg, "(with pp=4: last_layers=5 or 8)") !=
			      NULL,
		      "%s", err.msg);
	ck_assert_int_eq(tp_strategy_parse("tp=2,pp=4,first_layers=40", &st,
					   &err),
			 TP_OK);
	ck_assert_int_eq(tp_strategy_to_plan(&st, &m, &c, &p, &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "take 40 layers, more than the "
				      "model's 32") != NULL &&
			      strstr(err.msg, "first_layers=29)") != NULL,
		      "%s", err.msg);
	ck_assert_int_eq(tp_strategy_parse("tp=2,pp=4,schedule=interleaved:2,"
					   "last_layers=5",
					   &st, &err),
			 TP_OK);
	ck_assert_int_eq(tp_strategy_to_plan(&st, &m, &c, &p, &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "stage 0 gets 9 layers") != NULL, "%s",
		      err.msg);
	/* 2: 10 layers per middle stage; 8: 8 each; both even */
	ck_assert_msg(strstr(err.msg, "(with pp=4: last_layers=2 or 8)") !=
			      NULL,
		      "%s", err.msg);
	ck_assert_int_eq(tp_strategy_parse("tp=2,first_layers=4", &st, &err),
			 TP_OK);
	ck_assert_int_eq(tp_strategy_to_plan(&st, &m, &c, &p, &err),
			 TP_EINPUT);
	ck_assert_int_eq(tp_strategy_parse("first_layers=0", &st, &err),
			 TP_EUSAGE);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST


/*
 * Megatron-Core's account_for_embedding / loss_in_pipeline_split in the
 * strategy string (Llama 3's layout, arXiv:2407.21783 section 3.3.2):
 * Llama-2-7B's 32 layers + the embedding = 33 slots on 3 stages, 11
 * each: 10, 11, 11 layers (the Megatron export's first/last flags); on 3
 * stages x 11 chunks one slot each, the first chunk the embedding alone
 * (layout "E|t|t|..."); with the loss instead the last chunk holds only
 * final_norm, lm_head and loss ("...|t|L").  Slots the chunks cannot
 * share, and the mix with first_layers, are refused.  Failed without
 * the slots (32 layers do not split over 33 chunks) and with the ops
 * after the last layer left in the last layer's chunk.
 */
START_TEST(test_account_embedding_loss)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_strategy st;
	struct tp_strbuf out;
	struct tp_error err;
	const int64_t want1[] = {10, 11, 11};
	int64_t got[33];
	char buf[512];
	const uint32_t *ops;
	uint32_t last;

	llama_on(&m, &c, "dgx-h100:3");
	tp_plan_init(&p);
	ck_assert_int_eq(tp_strategy_parse("tp=2,pp=3,account_embedding=on",
					   &st, &err),
			 TP_OK);
	tp_strategy_format(&st, buf, sizeof(buf));
	ck_assert_msg(strstr(buf, ",account_embedding=on") != NULL &&
			      strstr(buf, "account_loss") == NULL,
		      "%s", buf);
	ck_assert_msg(tp_strategy_to_plan(&st, &m, &c, &p, &err) == TP_OK,
		      "%s", err.msg);
	chunk_layers(&p, &m, &c, got, 3);
	ck_assert_mem_eq(got, want1, sizeof(want1));
	tp_strbuf_init(&out);
	megatron_args(&p, &m, &c, &out);
	ck_assert_msg(strstr(out.buf,
			     "--decoder-first-pipeline-num-layers 10") != NULL,
		      "%s", out.buf);
	tp_strbuf_release(&out);

	ck_assert_int_eq(tp_strategy_parse("tp=8,pp=3,schedule=interleaved:11,"
					   "account_embedding=on",
					   &st, &err),
			 TP_OK);
	ck_assert_msg(tp_strategy_to_plan(&st, &m, &c, &p, &err) == TP_OK,
		      "%s", err.msg);
	chunk_layers(&p, &m, &c, got, 33);
	ck_assert_int_eq(got[0], 0);
	for (uint32_t k = 1; k < 33; k++)
		ck_assert_int_eq(got[k], 1);
	tp_strbuf_init(&out);
	megatron_args(&p, &m, &c, &out);
	ck_assert_msg(strstr(out.buf, "--pipeline-model-parallel-layout "
				      "E|t|t|") != NULL,
		      "%s", out.buf);
	tp_strbuf_release(&out);

	ck_assert_int_eq(tp_strategy_parse("tp=8,pp=3,schedule=interleaved:11,"
					   "account_loss=on",
					   &st, &err),
			 TP_OK);
	ck_assert_msg(tp_strategy_to_plan(&st, &m, &c, &p, &err) == TP_OK,
		      "%s", err.msg);
	last = (uint32_t)p.groups.n - 1;
	ops = tp_plan_group_ops(&p, last);
	ck_assert_uint_eq(p.groups.v[last].n_ops, 3);
	ck_assert_str_eq(m.ops.v[ops[0]].name, "final_norm");
	ck_assert_str_eq(m.ops.v[ops[2]].name, "loss");
	tp_strbuf_init(&out);
	megatron_args(&p, &m, &c, &out);
	ck_assert_msg(strstr(out.buf, "|t|L") != NULL, "%s", out.buf);
	tp_strbuf_release(&out);

	/* 34 slots over 3 chunks; with first_layers */
	ck_assert_int_eq(tp_strategy_parse("tp=2,pp=3,account_embedding=on,"
					   "account_loss=on",
					   &st, &err),
			 TP_OK);
	ck_assert_int_eq(tp_strategy_to_plan(&st, &m, &c, &p, &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "34 slots") != NULL, "%s", err.msg);
	ck_assert_int_eq(tp_strategy_parse("tp=2,pp=3,account_loss=on,"
					   "first_layers=10",
					   &st, &err),
			 TP_OK);
	ck_assert_int_eq(tp_strategy_to_plan(&st, &m, &c, &p, &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "give one of them") != NULL, "%s",
		      err.msg);
	ck_assert_int_eq(tp_strategy_parse("account_loss=maybe", &st, &err),
			 TP_EUSAGE);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST
/*
 * An uneven pipeline simulated, by hand: 8 equal layers (F 0.01 s, B
 * 0.02 s per micro-batch) on 4 stages as first_layers=3, last_layers=1
 * (3, 2, 2, 1 layers), GPipe, 8 micro-batches.  A flow shop of identical
 * jobs: the forwards end at sum F_s + (m - 1) max F_s = 0.08 + 7 x 0.03,
 * the backwards take sum B_s + (m - 1) max B_s = 0.16 + 7 x 0.06 after
 * that: 0.87 s, against 0.66 s for the even 2, 2, 2, 2; then stage 0's
 * optimizer step over its 3 layers (3 x 500 parameters x 28 bytes at
 * 1e12 B/s).
 */
START_TEST(test_uneven_stages_simulated)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_device_type t = tp_test_toy_type("toy");
	const char *strs[] = {"pp=4,schedule=gpipe",
			      "pp=4,schedule=gpipe,first_layers=3,"
			      "last_layers=1"};
	const double want[] = {0.22 + 0.44 + 2 * 500 * 28 / 1e12,
			       0.29 + 0.58 + 3 * 500 * 28 / 1e12};

	tp_test_toy_node(&c, &t, 4);
	chain(&m, 8, 1e12, 1e3, 0, 0, 8);
	for (int k = 0; k < 2; k++) {
		struct tp_strategy st;
		struct tp_plan p;
		struct tp_report r;
		struct tp_sim_options o;
		struct tp_sim *sim;
		struct tp_sim_scratch *s;
		struct tp_error err;
		tp_plan_init(&p);
		ck_assert_int_eq(tp_strategy_parse(strs[k], &st, &err), TP_OK);
		ck_assert_msg(tp_strategy_to_plan(&st, &m, &c, &p, &err) ==
				      TP_OK,
			      "%s", err.msg);
		tp_sim_options_default(&o);
		o.params.p2p_latency_s = 0;
		o.params.collective_latency_s = 0;
		o.params.gemm_sustained = 1;
		sim = tp_sim_new(&m, &c, &o, &err);
		ck_assert_ptr_nonnull(sim);
		s = tp_sim_scratch_new(sim);
		tp_report_init(&r);
		ck_assert_int_eq(tp_sim_run(sim, &p, s, &r, NULL, &err), TP_OK);
		ck_assert_msg(REL(r.iteration_time_s, want[k]) < 1e-9,
			      "%s: %.12g vs %.12g", strs[k], r.iteration_time_s,
			      want[k]);
		tp_report_release(&r);
		tp_sim_scratch_free(s);
		tp_sim_free(sim);
		tp_plan_release(&p);
	}
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* One group of 4 layers (matmuls of 1e12 FLOP per sample, 4e9 bytes of
 * weights each) on the toy node's 2 GPUs, dp 2, ZeRO-3, one micro-batch
 * of 2 samples, with the given prefetch depth and gradient overlap. */
static void zero3_run(int depth, bool overlap, struct tp_report *r)
{
	struct tp_device_type t = tp_test_toy_type("toy");
	struct tp_cluster c;
	struct tp_model m;
	struct tp_plan pl;
	struct tp_sim_options o;
	struct tp_sim *sim;
	struct tp_sim_scratch *s;
	struct tp_error err;
	uint32_t ops[4] = {0, 1, 2, 3}, devs[2] = {0, 1};

	tp_test_toy_node(&c, &t, 2);
	chain(&m, 4, 1e12, 4e9, 0, 0, 2);
	tp_plan_init(&pl);
	pl.global_batch = 2;
	pl.micro_batches = 1;
	pl.zero = 3;
	ck_assert_int_eq(tp_plan_add_group_degrees(
			     &pl, ops, 4, devs, 2,
			     &(struct tp_plan_degrees){2, 1, 1}, NULL, NULL),
			 TP_OK);
	tp_sim_options_default(&o);
	o.params.p2p_latency_s = 0;
	o.params.collective_latency_s = 0;
	o.params.gemm_sustained = 1;
	o.params.link_eff_intra = 1;
	o.params.overlap_grad_sync = overlap;
	o.params.prefetch_depth = depth;
	sim = tp_sim_new(&m, &c, &o, &err);
	ck_assert_msg(sim != NULL, "%s", err.msg);
	s = tp_sim_scratch_new(sim);
	tp_report_init(r);
	ck_assert_msg(tp_sim_run(sim, &pl, s, r, NULL, &err) == TP_OK, "%s",
		      err.msg);
	tp_sim_scratch_free(s);
	tp_sim_free(sim);
	tp_plan_release(&pl);
	tp_model_release(&m);
	tp_cluster_release(&c);
}

/*
 * FSDP-style per-layer gathers against the hand calculation.  Per pass
 * the weights' all-gather over the 2 GPUs is 0.5 x 16e9 B / 100 GB/s =
 * 0.08 s, a = 0.02 s per layer; compute per layer t = 0.01 s forward,
 * 0.02 s backward (U = 4 layers); the reduce-scatter of the 16e9 bytes of
 * gradients 0.08 s; the optimizer step over the 4e9 local parameters
 * 4e9 x 28 B / 1e12 B/s = 0.112 s.
 *  - depth 1 (FSDP2): forward a + max(U t, (U-1) a + t) = 0.02 + 0.07
 *    (ends 0.09), the backward's first layer gathered after the
 *    forward's last (0.08-0.10), backward 0.10-0.18 (0.02 + max(0.08,
 *    0.08)), reduce-scatter 0.18-0.26, step: 0.372 s;
 *  - depth 0: every gather after the previous task: 0.08 + 0.04 + 0.08 +
 *    0.08 + 0.08 + 0.112 = 0.472 s;
 *  - the whole-group model (-1): the backward's gather prefetched during
 *    the forward: 0.08 + 0.04 + 0.04 + 0.08 + 0.08 + 0.112 = 0.432 s.
 * With the gradients overlapped (depth 1), per-layer reduce-scatters:
 * 3/4 of it (0.06 s) from the backward's start at 0.10, sharing the
 * links with the backward's remaining gathers (0.06 s): both at half
 * rate until 0.22; the last layer's (0.02 s) after that, 0.24; the step
 * after the last layer's compute (0.24): 0.352 s.  Temporary memory: 1 +
 * depth layers of gathered weights, 2 x 4e9 bytes at depth 1, 3 x at 2.
 */
START_TEST(test_fsdp_prefetch)
{
	struct tp_report r;
	const int depth[] = {1, 0, -1, 2};
	const double want[] = {0.372, 0.472, 0.432, 0.372};

	for (int k = 0; k < 4; k++) {
		zero3_run(depth[k], false, &r);
		ck_assert_msg(REL(r.iteration_time_s, want[k]) < 1e-9,
			      "depth %d: %.12g vs %.12g", depth[k],
			      r.iteration_time_s, want[k]);
		if (depth[k] >= 0)
			ck_assert_msg(REL(r.devices[0].memory.temporary,
					  (1 + depth[k]) * 4e9) < 1e-9,
				      "depth %d: temporary %.9g", depth[k],
				      r.devices[0].memory.temporary);
		tp_report_release(&r);
	}
	zero3_run(1, true, &r);
	ck_assert_msg(REL(r.iteration_time_s, 0.352) < 1e-9,
		      "overlapped: %.12g", r.iteration_time_s);
	tp_report_release(&r);
}
END_TEST

/* The fsdp2 profile's prefetch depth reaches the simulator; profiles
 * without one keep the whole-group model; a depth out of range is
 * refused at its place. */
START_TEST(test_fsdp_prefetch_profile)
{
	size_t len;
	char *text = tp_test_read(tp_data_file("runtimes/fsdp2.json"), &len);
	char *at;
	struct tp_runtime rt;
	struct tp_load_options lo;
	struct tp_sim_params pa;
	struct tp_error err;

	ck_assert_int_eq(tp_runtime_find("fsdp2", &rt, &err), TP_OK);
	ck_assert_int_eq(rt.behaviour.prefetch_depth, 1);
	tp_sim_params_default(&pa);
	ck_assert_int_eq(pa.prefetch_depth, -1);
	tp_sim_params_runtime(&pa, &rt);
	ck_assert_int_eq(pa.prefetch_depth, 1);
	ck_assert_int_eq(tp_runtime_find("megatron-core", &rt, &err), TP_OK);
	ck_assert_int_eq(rt.behaviour.prefetch_depth, -1);
	tp_sim_params_default(&pa);
	tp_sim_params_runtime(&pa, &rt);
	ck_assert_int_eq(pa.prefetch_depth, -1);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "\"prefetch_depth\": 1");
	ck_assert_ptr_nonnull(at);
	at[strlen("\"prefetch_depth\": ")] = '9';
	tp_load_options_default(&lo);
	ck_assert_int_eq(tp_runtime_load("fsdp2.json", text, len, &lo, &rt,
					 &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.path, "behaviour.prefetch_depth") != NULL,
		      "%s: %s", err.path, err.msg);
	free(text);
}
END_TEST

Suite *suite_schedule(void)
{
	Suite *s = suite_create("schedule");
	TCase *tc = tcase_create("zero-bubble");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_zb_h1_bubble);
	tcase_add_test(tc, test_zb_h1_memory);
	tcase_add_test(tc, test_zb_h1_memory_estimate);
	tcase_add_test(tc, test_grad_buffer_memory_estimate);
	tcase_add_test(tc, test_zb_h1_strategy_runtime);
	tcase_add_test(tc, test_zb_h1_actions);
	tcase_add_test(tc, test_zb_h1_export);
	suite_add_tcase(s, tc);
	tc = tcase_create("uneven-stages");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_uneven_stages_strategy);
	tcase_add_test(tc, test_pipeline_one_layer_message);
	tcase_add_test(tc, test_uneven_stages_simulated);
	tcase_add_test(tc, test_account_embedding_loss);
	suite_add_tcase(s, tc);
	tc = tcase_create("fsdp-prefetch");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_fsdp_prefetch);
	tcase_add_test(tc, test_fsdp_prefetch_profile);
	suite_add_tcase(s, tc);
	return s;
}
