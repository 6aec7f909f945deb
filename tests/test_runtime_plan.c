/*
 * test_runtime_plan.c - plans that run: tp_runtime_plan_check names what a
 * plan needs and a runtime lacks, and a search under a runtime scores
 * only plans it executes (no simulation spent on the others) and answers
 * with one.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/runtime.h"
#include "core/strategy.h"
#include "io/build.h"
#include "io/io.h"
#include "search/actions.h"
#include "search/coarsen.h"
#include "search/planner.h"
#include "search/search.h"
#include "sim/sim.h"
#include "util.h"

static void use_data(void)
{
	setenv("TAGPLAN_DATA", tp_data_file(""), 1);
}

/* A 12-layer GPT (batch 64) and 2 DGX-A100 on HDR InfiniBand. */
static void gpt_on_dgx(struct tp_model *m, struct tp_cluster *c,
		       const char *node_spec)
{
	tp_test_gpt12(m, c, &node_spec, 1);
}

static void find(const char *name, struct tp_runtime *rt)
{
	struct tp_error err;

	ck_assert_msg(tp_runtime_find(name, rt, &err) == TP_OK, "%s: %s", name,
		      err.msg);
}

static void strategy(const char *s, const struct tp_model *m,
		     const struct tp_cluster *c, struct tp_plan *p)
{
	struct tp_strategy st;
	struct tp_error err;

	ck_assert_int_eq(tp_strategy_parse(s, &st, &err), TP_OK);
	ck_assert_msg(tp_strategy_to_plan(&st, m, c, p, &err) == TP_OK, "%s",
		      err.msg);
}

static uint32_t bit(enum tp_runtime_cap cap)
{
	return 1u << cap;
}

/* Each rule of tp_runtime_plan_check, on plans that break it alone. */
START_TEST(test_plan_check_rules)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_runtime mc, m22, ds, ddp, none;
	struct tp_plan_shape sh;
	char why[512];
	uint32_t k;

	gpt_on_dgx(&m, &c, "dgx-a100:2");
	find("megatron-core", &mc);
	find("megatron-lm-2022", &m22);
	find("deepspeed", &ds);
	find("ddp", &ddp);
	tp_runtime_none(&none);
	tp_plan_init(&p);

	/* a uniform 3D plan: megatron-core runs it */
	strategy("tp=2,pp=2,dp=4,mb=1,zero=1", &m, &c, &p);
	ck_assert_uint_eq(
	    tp_runtime_plan_check(&mc, &p, &m, &c, &sh, why, sizeof(why)), 0);
	ck_assert(sh.ok);
	ck_assert_uint_eq(sh.pp, 2);
	ck_assert_uint_eq(sh.chunks, 2);
	ck_assert_int_eq(sh.layers, 12);
	ck_assert_int_eq(sh.chunk_layers[0] + sh.chunk_layers[1], 12);
	ck_assert_uint_eq(sh.used, 16);
	/* stage 1 on devices 7..14, as listed and reversed: it shares device
	   7 with stage 0 (a merge of sorted lists; unsorted ones sorted) */
	{
		uint32_t *d1 = tp_plan_group_devs(&p, 1), keep[8];
		memcpy(keep, d1, sizeof(keep));
		for (int order = 0; order < 2; order++) {
			for (uint32_t i = 0; i < 8; i++)
				d1[i] = order ? 14 - i : 7 + i;
			k = tp_runtime_plan_check(&mc, &p, &m, &c, NULL, why,
						  sizeof(why));
			ck_assert_uint_eq(k, bit(TP_CAP_OVERLAPPING_GROUPS));
			ck_assert_ptr_nonnull(strstr(why, "shares devices"));
		}
		memcpy(d1, keep, sizeof(keep));
		ck_assert_uint_eq(p.groups.v[1].n_devices, 8);
	}
	/* ddp has no tensor or pipeline parallelism */
	k = tp_runtime_plan_check(&ddp, &p, &m, &c, NULL, why, sizeof(why));
	ck_assert(k & bit(TP_CAP_TENSOR_PARALLEL));
	ck_assert(k & bit(TP_CAP_PIPELINE_PARALLEL));
	ck_assert_ptr_nonnull(strstr(why, "ddp cannot"));

	/* ZeRO 2: not megatron-core's distributed optimizer */
	p.zero = 2;
	k = tp_runtime_plan_check(&mc, &p, &m, &c, NULL, why, sizeof(why));
	ck_assert_uint_eq(k, bit(TP_CAP_MAX_ZERO) |
				 bit(TP_CAP_MAX_ZERO_PIPELINED));
	ck_assert_uint_eq(
	    tp_runtime_plan_check(&none, &p, &m, &c, NULL, NULL, 0), 0);
	p.zero = 1;
	/* GPipe */
	p.schedule = TP_SCHEDULE_GPIPE;
	ck_assert_uint_eq(tp_runtime_plan_check(&mc, &p, &m, &c, NULL, NULL, 0),
			  bit(TP_CAP_SCHEDULES));
	p.schedule = TP_SCHEDULE_1F1B;
	/* a parameter server, uneven shares, per-group degrees */
	p.groups.v[0].sync = TP_SYNC_PS;
	k = tp_runtime_plan_check(&mc, &p, &m, &c, NULL, why, sizeof(why));
	ck_assert(k & bit(TP_CAP_SYNCS));
	ck_assert_ptr_nonnull(strstr(why, "ps"));
	p.groups.v[0].sync = p.groups.v[1].sync;
	tp_plan_group_shares(&p, 0)[0] += 0.25;
	tp_plan_group_shares(&p, 0)[1] -= 0.25;
	ck_assert_uint_eq(tp_runtime_plan_check(&mc, &p, &m, &c, NULL, NULL, 0),
			  bit(TP_CAP_UNEVEN_SHARES));
	tp_plan_group_shares(&p, 0)[0] -= 0.25;
	tp_plan_group_shares(&p, 0)[1] += 0.25;
	p.groups.v[1].recompute = TP_RECOMPUTE_FULL;
	ck_assert_uint_eq(tp_runtime_plan_check(&mc, &p, &m, &c, NULL, NULL, 0),
			  bit(TP_CAP_PER_GROUP_RECOMPUTE));
	p.groups.v[1].recompute = TP_RECOMPUTE_NONE;
	p.groups.v[1].sfb_first = 0;
	p.groups.v[1].n_sfb = 0;
	p.groups.v[1].lossy = TP_LOSSY_FP16;
	ck_assert_uint_eq(tp_runtime_plan_check(&mc, &p, &m, &c, NULL, NULL, 0),
			  bit(TP_CAP_LOSSY));
	p.groups.v[1].lossy = TP_LOSSY_NONE;
	ck_assert_uint_eq(tp_runtime_plan_check(&mc, &p, &m, &c, NULL, NULL, 0),
			  0);

	/* 12 layers on 3 stages of 4: even; 4 stages interleaved by 3: 12
	   chunks of 1 */
	strategy("tp=1,pp=4,dp=4,mb=1,schedule=interleaved:3", &m, &c, &p);
	ck_assert_uint_eq(tp_runtime_plan_check(&m22, &p, &m, &c, &sh, NULL, 0),
			  0);
	ck_assert_uint_eq(sh.chunks, 12);
	/* deepspeed: no interleaving */
	ck_assert(tp_runtime_plan_check(&ds, &p, &m, &c, NULL, NULL, 0) &
		  bit(TP_CAP_SCHEDULES));
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* Uneven layer counts: megatron-core ("any") runs them, megatron-lm-2022
 * ("even") does not; the layout is classified first-last when only the
 * ends differ. */
START_TEST(test_plan_check_layouts)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_runtime mc, m22, fl;
	struct tp_plan_shape sh;
	char why[512];
	uint32_t moved = 0, g1;

	gpt_on_dgx(&m, &c, "dgx-a100:2");
	find("megatron-core", &mc);
	find("megatron-lm-2022", &m22);
	fl = mc;
	fl.can.layout = TP_LAYOUT_FIRST_LAST;
	tp_plan_init(&p);
	strategy("tp=8,pp=2,dp=1,mb=1", &m, &c, &p);
	ck_assert_uint_eq(p.groups.n, 2);
	/* move the ops of layer 5 (the last of stage 0) to stage 1: 5 + 7 */
	g1 = 1;
	{
		struct tp_plan q;
		uint32_t *ops0 = tp_plan_group_ops(&p, 0);
		uint32_t n0 = p.groups.v[0].n_ops, keep = 0;
		uint32_t o0[4096], o1[4096], n1 = 0;
		tp_plan_init(&q);
		for (uint32_t i = 0; i < n0; i++)
			if (m.ops.v[ops0[i]].layer == 5)
				o1[n1++] = ops0[i], moved++;
			else
				o0[keep++] = ops0[i];
		for (uint32_t i = 0; i < p.groups.v[g1].n_ops; i++)
			o1[n1++] = tp_plan_group_ops(&p, g1)[i];
		q.global_batch = p.global_batch;
		q.micro_batches = p.micro_batches;
		q.schedule = p.schedule;
		q.virtual_stages = 1;
		ck_assert_int_eq(tp_plan_add_group_degrees(
				     &q, o0, keep, tp_plan_group_devs(&p, 0), 8,
				     &(struct tp_plan_degrees){1, 1, 8}, NULL,
				     NULL),
				 TP_OK);
		ck_assert_int_eq(tp_plan_add_group_degrees(
				     &q, o1, n1, tp_plan_group_devs(&p, 1), 8,
				     &(struct tp_plan_degrees){1, 1, 8}, NULL,
				     NULL),
				 TP_OK);
		ck_assert_int_eq(tp_plan_validate(&q, &m, &c, NULL), TP_OK);
		ck_assert_uint_gt(moved, 0);
		ck_assert_uint_eq(
		    tp_runtime_plan_check(&mc, &q, &m, &c, &sh, NULL, 0), 0);
		ck_assert_int_eq(sh.chunk_layers[0], 5);
		ck_assert_int_eq(sh.chunk_layers[1], 7);
		/* two stages of 5 and 7 layers: first-last */
		ck_assert_uint_eq(
		    tp_runtime_plan_check(&fl, &q, &m, &c, NULL, NULL, 0), 0);
		ck_assert_uint_eq(tp_runtime_plan_check(&m22, &q, &m, &c, NULL,
							why, sizeof(why)),
				  bit(TP_CAP_LAYOUT));
		ck_assert_ptr_nonnull(strstr(why, "first-last"));
		tp_plan_release(&q);
	}
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* An evaluator that counts the plans it is asked to score which the
 * runtime cannot execute, around the simulator's. */
struct spy {
	struct tp_search_simeval se;
	struct tp_evaluator inner;
	const struct tp_runtime *rt;
	const struct tp_model *m;
	const struct tp_cluster *c;
	_Atomic unsigned long scored, refused;
};

/* Every ask goes to the simulator's evaluator; the plans it scores are
 * counted. */
static enum tp_status spy_call(void *ctx, struct tp_eval_call *q,
			       struct tp_error *err)
{
	struct spy *s = ctx;

	if (q->ask == TP_EVAL_RUN || q->ask == TP_EVAL_FINALIZE) {
		s->scored++;
		if (tp_runtime_plan_check(s->rt, q->plan, s->m, s->c, NULL,
					  NULL, 0))
			s->refused++;
	}
	return s->inner.call(s->inner.ctx, q, err);
}

/* Under every shipped runtime that builds the model: the search hands
 * the simulator only plans the runtime executes (none refused by the
 * search's own check either), the answer is one, and baselines the
 * runtime cannot run are not reported. */
static void search_under(const char *model_kind)
{
	char names[32][64];
	size_t n;
	struct tp_model m;
	struct tp_cluster c;
	struct tp_error err;
	int searched = 0;

	use_data();
	n = tp_runtime_shipped(names, 32);
	ck_assert_uint_ge(n, 6);
	if (strcmp(model_kind, "gpt") == 0) {
		gpt_on_dgx(&m, &c, "dgx-a100:2");
	} else {
		const char *specs[] = {"v100-nvlink:1", "1080ti-pcie:2"};
		tp_model_init(&m);
		tp_cluster_init(&c);
		ck_assert_int_eq(tp_build_zoo("resnet50", 64, -1, &m, &err),
				 TP_OK);
		ck_assert_int_eq(
		    tp_build_topology(specs, 2, "25gbe", 1, &c, &err), TP_OK);
	}
	for (size_t i = 0; i < n; i++) {
		struct tp_runtime rt;
		struct tp_sim_options so;
		struct tp_sim *sim;
		struct spy spy;
		struct tp_evaluator ev;
		struct tp_search_options o;
		struct tp_search_result r;

		find(names[i], &rt);
		if (!tp_runtime_builds(&rt, &m, NULL, 0))
			continue;
		tp_sim_options_default(&so);
		tp_sim_params_runtime(&so.params, &rt);
		sim = tp_sim_new(&m, &c, &so, &err);
		ck_assert_ptr_nonnull(sim);
		memset(&spy, 0, sizeof(spy));
		tp_search_sim_evaluator(&spy.se, sim, NULL, &spy.inner);
		spy.rt = &rt;
		spy.m = &m;
		spy.c = &c;
		ev = spy.inner;
		ev.ctx = &spy;
		ev.call = spy_call;
		tp_search_options_default(&o);
		o.threads = 1;
		o.playouts = 300;
		o.time_limit_s = 0;
		o.compression = TP_COMPRESSION_OFF;
		o.runtime = &rt;
		o.bound_sim = sim;
		tp_search_result_init(&r);
		ck_assert_int_eq(tp_search_run(&m, &c, &ev, &o, &r, &err),
				 TP_OK);
		ck_assert(r.have_plan);
		ck_assert_uint_gt(spy.scored, 5);
		ck_assert_msg(spy.refused == 0,
			      "%s: %lu of %lu plans simulated it cannot run",
			      rt.name, (unsigned long)spy.refused,
			      (unsigned long)spy.scored);
		ck_assert_msg(r.runtime_rejects == 0, "%s: %llu rejects",
			      rt.name, (unsigned long long)r.runtime_rejects);
		ck_assert_uint_eq(
		    tp_runtime_plan_check(&rt, &r.plan, &m, &c, NULL, NULL, 0),
		    0);
		if (!rt.can.uneven_shares)
			ck_assert(
			    !r.baselines[TP_BASELINE_DP_HETERO].available);
		for (int b = 0; b < TP_BASELINE_COUNT; b++)
			if (r.baselines[b].available)
				ck_assert_uint_eq(tp_runtime_plan_check(
						      &rt, &r.baselines[b].plan,
						      &m, &c, NULL, NULL, 0),
						  0);
		searched++;
		tp_search_result_release(&r);
		tp_sim_free(sim);
	}
	ck_assert_int_ge(searched, strcmp(model_kind, "gpt") == 0 ? 5 : 1);
	tp_cluster_release(&c);
	tp_model_release(&m);
}

START_TEST(test_search_runs_only_runnable_gpt)
{
	search_under("gpt");
}
END_TEST

START_TEST(test_search_runs_only_runnable_cnn)
{
	search_under("cnn");
}
END_TEST

/* `tagplan plan` under the default runtime and under none, as a user
 * runs it: the plan records its runtime, check and export accept it, the
 * summary's claims hold (a runtime said to execute a plan of none
 * exports it; "no known runtime" ones export nowhere), and what a
 * runtime cannot do is a usage error. */
START_TEST(test_cmd_plan_runtimes)
{
	const char *dir = tp_test_tmpdir();
	char pm[600], pn[600], r50[600];
	const char *def[] = {"tagplan",	  "plan", "--playouts", "300",
			     "--threads", "1",	  "--no-gnn",	"-o",
			     pm,	  NULL};
	const char *none[] = {"tagplan",   "plan", "--playouts", "300",
			      "--threads", "1",	   "--no-gnn",	 "--runtime",
			      "none",	   "-o",   pn,		 NULL};
	const char *chk[] = {"tagplan", "check", "-p", pm, NULL};
	const char *exp[] = {"tagplan", "export", "-p", pm, NULL};
	const char *comp[] = {"tagplan",       "plan",	   "--playouts", "10",
			      "--compression", "lossless", NULL};
	const char *mkr50[] = {"tagplan", "model", "resnet50", "-o", r50, NULL};
	const char *titan[] = {
	    "tagplan",	 "plan",  "-m",
	    r50,	 "-t",	  tp_data_file("tag-testbed.json"),
	    "--runtime", "fsdp2", "--playouts",
	    "10",	 NULL};
	struct tp_run r;
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_error err;

	use_data();
	snprintf(pm, sizeof(pm), "%s/mc.json", dir);
	snprintf(pn, sizeof(pn), "%s/none.json", dir);
	snprintf(r50, sizeof(r50), "%s/r50.json", dir);
	tp_run_tagplan(&r, def, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.err, "runtime        megatron-core "
					    "(the default)"));
	tp_run_free(&r);
	tp_model_init(&m);
	tp_cluster_init(&c);
	ck_assert_int_eq(
	    tp_model_load_file(tp_data_file("demo-model.json"), NULL, &m, &err),
	    TP_OK);
	ck_assert_int_eq(tp_topology_load_file(tp_data_file("tag-testbed.json"),
					       NULL, &c, &err),
			 TP_OK);
	tp_plan_init(&p);
	ck_assert_int_eq(tp_plan_load_file(pm, &m, &c, NULL, &p, &err), TP_OK);
	ck_assert_str_eq(p.runtime, "megatron-core");
	if (p.summary.have_unconstrained) {
		struct tp_runtime mc;
		ck_assert(p.summary.unconstrained_time_s * 1.01 <
			  p.summary.iteration_time_s);
		ck_assert_uint_ne(p.summary.unconstrained_needs, 0);
		find("megatron-core", &mc);
		ck_assert_ptr_nonnull(strstr(p.summary.unconstrained_why,
					     "megatron-core cannot"));
	}
	tp_plan_release(&p);
	tp_run_tagplan(&r, chk, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	tp_run_free(&r);
	tp_run_tagplan(&r, exp, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "--tensor-model-parallel-size"));
	tp_run_free(&r);

	/* none: the note's claim */
	tp_run_tagplan(&r, none, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	tp_run_free(&r);
	tp_plan_init(&p);
	ck_assert_int_eq(tp_plan_load_file(pn, &m, &c, NULL, &p, &err), TP_OK);
	ck_assert_str_eq(p.runtime, "none");
	{
		bool nobody =
		    strcmp(p.summary.runtime_note,
			   "no known runtime executes this plan") == 0;
		const char *x[] = {"tagplan", "export",	  "-p", pn,
				   "--to",    "megatron", NULL};
		ck_assert(nobody || strstr(p.summary.runtime_note,
					   "can execute this plan"));
		tp_run_tagplan(&r, x, NULL);
		if (nobody || !strstr(p.summary.runtime_note, "megatron-core"))
			ck_assert_msg(r.status == 1, "%d %s", r.status, r.err);
		else
			ck_assert_msg(r.status == 0, "%s", r.err);
		tp_run_free(&r);
	}
	tp_plan_release(&p);
	/* the megatron baseline of none: a uniform plan the note says
	   megatron-core executes, and it exports */
	{
		const char *bl[] = {"tagplan", "plan",	     "--runtime",
				    "none",    "--baseline", "megatron",
				    "-o",      pn,	     NULL};
		const char *x[] = {"tagplan", "export",	  "-p", pn,
				   "--to",    "megatron", NULL};
		tp_run_tagplan(&r, bl, NULL);
		ck_assert_msg(r.status == 0, "%s", r.err);
		tp_run_free(&r);
		tp_plan_init(&p);
		ck_assert_int_eq(tp_plan_load_file(pn, &m, &c, NULL, &p, &err),
				 TP_OK);
		ck_assert_msg(strstr(p.summary.runtime_note, "megatron-core") !=
				  NULL,
			      "%s", p.summary.runtime_note);
		tp_plan_release(&p);
		tp_run_tagplan(&r, x, NULL);
		ck_assert_msg(r.status == 0, "%s", r.err);
		tp_run_free(&r);
		/* without --to: bad usage (exit 2) that names the fix,
		   nothing written */
		x[4] = NULL;
		tp_run_tagplan(&r, x, NULL);
		ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
		ck_assert_ptr_nonnull(strstr(r.err, "give --to TARGET"));
		ck_assert_str_eq(r.out, "");
		tp_run_free(&r);
	}
	tp_cluster_release(&c);
	tp_model_release(&m);

	/* what the runtime cannot do: exit 2 */
	tp_run_tagplan(&r, comp, NULL);
	ck_assert_int_eq(r.status, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "megatron-core does not compress"));
	tp_run_free(&r);
	tp_run_tagplan(&r, mkr50, NULL);
	ck_assert_int_eq(r.status, 0);
	tp_run_free(&r);
	tp_run_tagplan(&r, titan, NULL);
	ck_assert_int_eq(r.status, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "fsdp2 builds dense Llama-style"));
	tp_run_free(&r);
}
END_TEST

/* s with the first a replaced by b (malloc'd; a must occur). */
static char *replace1(const char *s, const char *a, const char *b)
{
	const char *at = strstr(s, a);
	size_t la = strlen(a), lb = strlen(b), n = strlen(s);
	char *out;

	ck_assert_ptr_nonnull(at);
	out = malloc(n - la + lb + 1);
	ck_assert_ptr_nonnull(out);
	memcpy(out, s, (size_t)(at - s));
	memcpy(out + (at - s), b, lb);
	memcpy(out + (at - s) + lb, at + la, n - (size_t)(at - s) - la + 1);
	return out;
}

/* A plan made with --runtime FILE records the file (path and SHA-256):
 * simulate and check of the plan use that profile, and refuse it when it
 * changed or went away (without the record they looked the profile's
 * name up among the shipped ones: unknown runtime "my-stack", exit 2). */
START_TEST(test_cmd_plan_runtime_file)
{
	const char *dir = tp_test_tmpdir();
	char rt[600], pl[600], *shipped, *text, *changed;
	size_t len;
	const char *plan[] = {"tagplan", "plan",      "--playouts", "30",
			      "--threads", "1",	      "--no-gnn",   "--runtime",
			      rt,	 "-o",	      pl,	    NULL};
	const char *sim[] = {"tagplan", "simulate", "-p", pl, "-q", NULL};
	const char *simrt[] = {"tagplan", "simulate", "-p",	 pl,
			       "-q",	  "--runtime", rt,	 NULL};
	const char *chk[] = {"tagplan", "check", "-p", pl, NULL};
	struct tp_run r, r2;

	use_data();
	snprintf(rt, sizeof(rt), "%s/my-stack.json", dir);
	snprintf(pl, sizeof(pl), "%s/plan.json", dir);
	shipped =
	    tp_test_read(tp_data_file("runtimes/megatron-core.json"), &len);
	ck_assert_ptr_nonnull(shipped);
	text = replace1(shipped, "\"name\": \"megatron-core\"",
			"\"name\": \"my-stack\"");
	ck_assert_int_eq(tp_test_write(rt, text, strlen(text)), 0);
	tp_run_tagplan(&r, plan, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	tp_run_free(&r);
	tp_run_tagplan(&r, sim, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	tp_run_tagplan(&r2, simrt, NULL);
	ck_assert_msg(r2.status == 0, "%s", r2.err);
	ck_assert_str_eq(r.out, r2.out);
	tp_run_free(&r);
	tp_run_free(&r2);
	tp_run_tagplan(&r, chk, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	tp_run_free(&r);
	/* changed: refused, with the fix */
	changed = replace1(text, "\"tp_overlap\": true",
			   "\"tp_overlap\": false");
	ck_assert_int_eq(tp_test_write(rt, changed, strlen(changed)), 0);
	tp_run_tagplan(&r, sim, NULL);
	ck_assert_int_eq(r.status, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "has changed since"));
	ck_assert_ptr_nonnull(strstr(r.err, "pass --runtime"));
	tp_run_free(&r);
	tp_run_tagplan(&r, chk, NULL);
	ck_assert_int_eq(r.status, 2);
	tp_run_free(&r);
	tp_run_tagplan(&r, simrt, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	tp_run_free(&r);
	/* gone */
	ck_assert_int_eq(remove(rt), 0);
	tp_run_tagplan(&r, sim, NULL);
	ck_assert_int_eq(r.status, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "is not there"));
	tp_run_free(&r);
	free(changed);
	free(text);
	free(shipped);
}
END_TEST

/* Where the figures come from: simulate's report and plan's summary name
 * the runtime and the constants (shipped, with their measured error on
 * data/validation, or a profile's calibration with its fit), in JSON and
 * in the human table.  Fails without the basis (no "basis" key, no
 * "figures:" line). */
START_TEST(test_cmd_figures_basis)
{
	const char *dir = tp_test_tmpdir();
	char rt[600], pl[600], *shipped, *text;
	size_t len;
	const char *sim[] = {"tagplan", "simulate", "-m", "gpt2", "-t",
			     "dgx-a100", "-s", "tp=1,pp=1,dp=8,mb=4",
			     "--runtime", "megatron-core", NULL};
	const char *simcal[] = {"tagplan", "simulate", "-m", "gpt2", "-t",
				"dgx-a100", "-s", "tp=1,pp=1,dp=8,mb=4",
				"--runtime", rt, NULL};
	const char *plan[] = {"tagplan", "plan",      "--playouts", "20",
			      "--threads", "1",	      "--no-gnn",   "--runtime",
			      rt,	 "-o",	      pl,	    NULL};
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_error err;
	struct tp_run r;

	use_data();
	tp_run_tagplan(&r, sim, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "\"basis\": {"));
	ck_assert_ptr_nonnull(strstr(r.out, "\"runtime\": \"megatron-core\""));
	ck_assert_ptr_nonnull(strstr(r.out, "\"constants\": \"shipped\""));
	ck_assert_ptr_nonnull(strstr(r.out, "\"validation_mean_abs_error\""));
	ck_assert_ptr_nonnull(strstr(r.err, "figures: runtime megatron-core, "
					    "shipped constants: mean |error|"));
	/* megatron-core has no published run: the figure over all runs */
	ck_assert_ptr_nonnull(strstr(r.err, "none under megatron-core"));
	ck_assert_ptr_nonnull(strstr(r.out, "\"validation_scope\": \"all\""));
	tp_run_free(&r);

	/* a profile's "validation": its own runs' error is quoted */
	snprintf(rt, sizeof(rt), "%s/val.json", dir);
	shipped =
	    tp_test_read(tp_data_file("runtimes/megatron-core.json"), &len);
	ck_assert_ptr_nonnull(shipped);
	text = replace1(shipped, "\"sources\": {",
			"\"validation\": {\"runs\": 7, \"mean_abs_error\": "
			"0.05, \"max_abs_error\": 0.09, \"measured_on\": "
			"\"mine\"},\n  \"sources\": {");
	ck_assert_int_eq(tp_test_write(rt, text, strlen(text)), 0);
	tp_run_tagplan(&r, simcal, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.err, "shipped constants: mean |error| "
					    "5.0%, max 9.0%"));
	ck_assert_ptr_nonnull(
	    strstr(r.err, "on the 7 published runs under megatron-core"));
	ck_assert_ptr_nonnull(strstr(r.out, "\"validation_runs\": 7"));
	ck_assert_ptr_nonnull(
	    strstr(r.out, "\"validation_scope\": \"runtime\""));
	tp_run_free(&r);
	free(text);
	/* max below mean: refused where it is */
	text = replace1(shipped, "\"sources\": {",
			"\"validation\": {\"runs\": 7, \"mean_abs_error\": "
			"0.05, \"max_abs_error\": 0.01, \"measured_on\": "
			"\"mine\"},\n  \"sources\": {");
	ck_assert_int_eq(tp_test_write(rt, text, strlen(text)), 0);
	tp_run_tagplan(&r, simcal, NULL);
	ck_assert_int_eq(r.status, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "validation.max_abs_error"));
	tp_run_free(&r);
	free(text);
	free(shipped);

	snprintf(rt, sizeof(rt), "%s/cal.json", dir);
	snprintf(pl, sizeof(pl), "%s/plan.json", dir);
	shipped =
	    tp_test_read(tp_data_file("runtimes/megatron-core.json"), &len);
	ck_assert_ptr_nonnull(shipped);
	text = replace1(shipped, "\"sources\": {",
			"\"calibration\": {\"gemm_sustained\": 0.75, "
			"\"link_eff_intra\": 0.95, \"link_eff_network\": 0.7, "
			"\"fitted_on\": \"mine.json\", \"runs\": 12, "
			"\"holdout_runs\": 3, \"fit_mean_abs_error\": 0.04, "
			"\"holdout_mean_abs_error\": 0.06},\n  \"sources\": {");
	ck_assert_int_eq(tp_test_write(rt, text, strlen(text)), 0);
	tp_run_tagplan(&r, simcal, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "\"constants\": \"calibrated\""));
	ck_assert_ptr_nonnull(strstr(r.out, "\"gemm_sustained\": 0.75"));
	ck_assert_ptr_nonnull(strstr(r.out, "\"fitted_on\": \"mine.json\""));
	/* the line wraps at 80 columns */
	ck_assert_ptr_nonnull(
	    strstr(r.err, "figures: runtime megatron-core, calibrated on "
			  "mine.json (12 runs, mean |error|"));
	ck_assert_ptr_nonnull(strstr(r.err, "4.0%; 3 held out, 6.0%)"));
	tp_run_free(&r);

	tp_run_tagplan(&r, plan, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.err, "figures: runtime megatron-core, "
					    "calibrated on mine.json"));
	tp_run_free(&r);
	tp_model_init(&m);
	tp_cluster_init(&c);
	tp_plan_init(&p);
	ck_assert_int_eq(
	    tp_model_load_file(tp_data_file("demo-model.json"), NULL, &m, &err),
	    TP_OK);
	ck_assert_int_eq(tp_topology_load_file(tp_data_file("tag-testbed.json"),
					       NULL, &c, &err),
			 TP_OK);
	ck_assert_int_eq(tp_plan_load_file(pl, &m, &c, NULL, &p, &err), TP_OK);
	ck_assert_str_eq(p.summary.basis.runtime, "megatron-core");
	ck_assert(p.summary.basis.calibrated);
	ck_assert_double_eq_tol(p.summary.basis.link_eff_network, 0.7, 1e-12);
	ck_assert_uint_eq(p.summary.basis.holdout_runs, 3);
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
	free(text);
	free(shipped);
}
END_TEST


/* tp_space_runnable of (gl, state) through scratch `memo` (asked twice:
 * the second answer from its memo) and through `plain` with a reason
 * (never memoised, the groups' facts from the space) must agree with
 * each other and with tp_runtime_plan_check of the materialised plan
 * (the facts read from the plan), reason and all.  Returns the answer. */
static bool runnable_agrees(const struct tp_space *sp,
			    const struct tp_globals *gl,
			    const struct tp_decision *state,
			    struct tp_space_scratch *memo,
			    struct tp_space_scratch *plain)
{
	char why[1024], why2[1024];
	bool fresh = tp_space_runnable(sp, gl, state, plain, why, sizeof(why));
	bool first = tp_space_runnable(sp, gl, state, memo, NULL, 0);
	bool again = tp_space_runnable(sp, gl, state, memo, NULL, 0);
	bool direct = false;
	struct tp_plan p;
	struct tp_error err;

	ck_assert_msg(first == fresh && again == fresh,
		      "%s: memo says %d then %d, the check %d (%s)",
		      sp->rt.name, first, again, fresh, why);
	tp_plan_init(&p);
	if (tp_space_materialize(sp, gl, state, TP_COMPRESSION_OFF, plain, &p,
				 &err))
		snprintf(why2, sizeof(why2), "%s", err.msg);
	else
		direct = tp_runtime_plan_check(&sp->rt, &p, sp->model,
					       sp->cluster, NULL, why2,
					       sizeof(why2)) == 0;
	ck_assert_msg(direct == fresh && strcmp(why, why2) == 0,
		      "%s: the search says %d (%s), the plan's check %d (%s)",
		      sp->rt.name, fresh, why, direct, why2);
	tp_plan_release(&p);
	return fresh;
}

/* The candidate states of a walk down the levels of sp from `start`
 * (NULL: data parallel), each level's state the previous with one of its
 * candidates applied when `move`, else `start` again: up to cap
 * (globals, decision vector) pairs into gls and decs (cap x K); returns
 * how many. */
static uint32_t memo_walk(const struct tp_space *sp, uint32_t K,
			  const struct tp_decision *start, bool move,
			  struct tp_globals *gls, struct tp_decision *decs,
			  uint32_t cap)
{
	struct tp_action acts[256];
	struct tp_decision *dec = calloc(K, sizeof(*dec));
	struct tp_globals gl;
	uint32_t count = 0;

	ck_assert_ptr_nonnull(dec);
	memset(&gl, 0, sizeof(gl));
	gl.micro_batches = 8;
	gl.schedule = TP_SCHEDULE_1F1B;
	tp_space_data_parallel(sp, dec);
	if (start)
		memcpy(dec, start, K * sizeof(*dec));
	for (uint32_t level = 0; level <= K; level++) {
		uint32_t n =
		    level == 0
			? tp_space_global_actions(sp, &gl, dec, acts, 256)
			: tp_space_group_actions(sp, level - 1, dec, &gl,
						 acts, 256);
		for (uint32_t i = 0; i < n && count < cap; i++, count++) {
			struct tp_decision *cand = decs + (size_t)count * K;
			gls[count] = level ? gl : acts[i].g;
			memcpy(cand, dec, K * sizeof(*dec));
			if (level)
				tp_space_apply(sp, level - 1, &acts[i], &gl,
					       cand);
		}
		/* go on from a candidate that changes something */
		if (n > 1 && level > 0 && move)
			tp_space_apply(sp, level - 1, &acts[1 + level % (n - 1)],
				       &gl, dec);
	}
	free(dec);
	return count;
}

/* runnable_agrees on each of the n states; how many are runnable. */
static uint32_t memo_ask(const struct tp_space *sp, uint32_t K,
			 const struct tp_globals *gls,
			 const struct tp_decision *decs, uint32_t n,
			 struct tp_space_scratch *memo,
			 struct tp_space_scratch *plain)
{
	uint32_t yes = 0;

	for (uint32_t i = 0; i < n; i++)
		yes += runnable_agrees(sp, &gls[i], decs + (size_t)i * K, memo,
				       plain);
	return yes;
}

/* The runtime check's memo and the groups' facts (actions.c, src/search/
 * README "The runtime check's memo") answer as the check of the plan
 * does: the candidate states of a walk under megatron-core on a 12-layer
 * GPT on a DGX-A100 and a DGX-1 (V100), runnable or not, asked through
 * the memo get the check's answers, first and again (the memo has seen
 * every state); after tp_space_set_runtime the same scratch gives the
 * new runtime's answers to the same states: megatron-core that does not
 * mix device types (fewer runnable), then ddp (no tensor or pipeline
 * parallelism, fewer still). */
START_TEST(test_runnable_memo)
{
	enum { CAP = 4096 };
	struct tp_model m;
	struct tp_cluster c;
	struct tp_groups g;
	struct tp_space sp;
	struct tp_runtime rt;
	struct tp_space_scratch *memo, *plain;
	struct tp_globals *gls = calloc(CAP, sizeof(*gls));
	struct tp_decision *decs;
	uint32_t n, yes;

	const char *specs[] = {"dgx-a100:1", "dgx1-v100:1"};
	uint32_t one_type;

	tp_test_gpt12(&m, &c, specs, 2);
	ck_assert_int_eq(tp_coarsen(&m, 0, &g, NULL), TP_OK);
	ck_assert_int_eq(tp_space_init(&sp, &m, &c, &g, NULL), TP_OK);
	find("megatron-core", &rt);
	ck_assert_int_eq(tp_space_set_runtime(&sp, &rt, NULL), TP_OK);
	decs = calloc((size_t)CAP * g.n, sizeof(*decs));
	ck_assert_ptr_nonnull(gls);
	ck_assert_ptr_nonnull(decs);
	memo = tp_space_scratch_new(&sp);
	plain = tp_space_scratch_new(&sp);
	ck_assert_ptr_nonnull(memo);
	ck_assert_ptr_nonnull(plain);
	/* from data parallelism, and from pipelines over the two nodes
	   (a half of the groups on each, a third on the first) */
	n = memo_walk(&sp, g.n, NULL, true, gls, decs, CAP);
	for (uint32_t cut = 2; cut <= 3; cut++) {
		struct tp_decision *pipe = calloc(g.n, sizeof(*pipe));
		uint32_t node[2], k = 0;
		/* the two nodes' sets: 8 devices each, disjoint */
		for (uint32_t i = 0; i < sp.sets.n && k < 2; i++)
			if (sp.sets.v[i].n == 8 &&
			    (k == 0 || tp_space_set_devs(&sp, i)[0] !=
					   tp_space_set_devs(&sp, node[0])[0]))
				node[k++] = i;
		ck_assert_uint_eq(k, 2);
		for (uint32_t q = 0; q < g.n; q++) {
			pipe[q].set = node[q >= g.n / cut];
			pipe[q].tp = 1;
			pipe[q].sync = (uint8_t)tp_space_default_sync(
			    &sp, pipe[q].set, 1);
		}
		ck_assert_uint_eq(tp_space_pipeline(&sp, pipe), 2);
		n += memo_walk(&sp, g.n, pipe, false, gls + n,
			       decs + (size_t)n * g.n, CAP - n);
		free(pipe);
	}
	yes = memo_ask(&sp, g.n, gls, decs, n, memo, plain);
	/* both answers occur: a memo that mixed states up would differ */
	ck_assert_msg(yes >= 10 && n - yes >= 10, "%u of %u runnable", yes, n);
	ck_assert_uint_eq(memo_ask(&sp, g.n, gls, decs, n, memo, plain), yes);
	ck_assert(rt.can.mixed_device_types);
	rt.can.mixed_device_types = false;
	ck_assert_int_eq(tp_space_set_runtime(&sp, &rt, NULL), TP_OK);
	one_type = memo_ask(&sp, g.n, gls, decs, n, memo, plain);
	ck_assert_msg(one_type < yes, "%u %u", one_type, yes);
	ck_assert_uint_gt(one_type, 0);
	find("ddp", &rt);
	ck_assert_int_eq(tp_space_set_runtime(&sp, &rt, NULL), TP_OK);
	ck_assert_uint_lt(memo_ask(&sp, g.n, gls, decs, n, memo, plain),
			  one_type);
	tp_space_scratch_free(memo);
	tp_space_scratch_free(plain);
	free(gls);
	free(decs);
	tp_space_release(&sp);
	tp_groups_release(&g);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* The groups' facts name device lists by set and give their ranges and
 * node runs (tp_runtime_group_facts list, dev_lo, dev_hi, dense, nodes):
 * on a cluster
 * whose A100 nodes sit on both sides of a DGX-1 (the A100 set's range
 * holds the V100s: not dense), random pipelines of 1 to 4 runs on
 * random sets under megatron-core get the answers and reasons of the
 * plan's check read from the plan (runnable_agrees); stages on equal
 * sets, on sets that share devices, on disjoint sets with meeting
 * ranges and stages returning to a node all occur. */
START_TEST(test_runnable_facts_sets)
{
	const char *specs[] = {"dgx-a100:1", "dgx1-v100:1", "dgx-a100:1"};
	struct tp_model m;
	struct tp_cluster c;
	struct tp_groups g;
	struct tp_space sp;
	struct tp_runtime rt;
	struct tp_space_scratch *memo, *plain;
	struct tp_decision *dec;
	struct tp_globals gl;
	struct tp_rng rng;
	uint32_t yes = 0, shared = 0, sparse = 0, apart = 0, returns = 0;

	tp_test_gpt12(&m, &c, specs, 3);
	ck_assert_int_eq(tp_coarsen(&m, 0, &g, NULL), TP_OK);
	ck_assert_int_eq(tp_space_init(&sp, &m, &c, &g, NULL), TP_OK);
	find("megatron-core", &rt);
	ck_assert_int_eq(tp_space_set_runtime(&sp, &rt, NULL), TP_OK);
	for (uint32_t i = 0; i < sp.sets.n; i++)
		sparse += !sp.sets.v[i].dense;
	ck_assert_uint_gt(sparse, 0);
	memo = tp_space_scratch_new(&sp);
	plain = tp_space_scratch_new(&sp);
	dec = calloc(g.n, sizeof(*dec));
	ck_assert_ptr_nonnull(memo);
	ck_assert_ptr_nonnull(plain);
	ck_assert_ptr_nonnull(dec);
	memset(&gl, 0, sizeof(gl));
	gl.micro_batches = 8;
	gl.schedule = TP_SCHEDULE_1F1B;
	gl.even = 1;
	tp_rng_seed(&rng, 3);
	for (uint32_t it = 0; it < 8000; it++) {
		uint32_t runs = 1 + (uint32_t)tp_rng_below(&rng, 4);
		uint32_t set[4], tp = 1u << tp_rng_below(&rng, 3);
		char why[512];
		for (uint32_t r = 0; r < runs; r++)
			set[r] = (uint32_t)tp_rng_below(&rng, sp.sets.n);
		for (uint32_t k = 0; k < g.n; k++) {
			uint32_t r = (uint32_t)((uint64_t)k * runs / g.n);
			dec[k].set = set[r];
			dec[k].tp = (uint16_t)tp;
			dec[k].sync = (uint8_t)tp_space_default_sync(
			    &sp, set[r], tp);
			dec[k].recompute = 0;
		}
		yes += runnable_agrees(&sp, &gl, dec, memo, plain);
		tp_space_runnable(&sp, &gl, dec, plain, why, sizeof(why));
		shared += strstr(why, "shares devices") != NULL;
		returns += strstr(why, "returns to node") != NULL;
		for (uint32_t r = 1; r < runs; r++) {
			const struct tp_devset *a = &sp.sets.v[set[r - 1]];
			const struct tp_devset *b = &sp.sets.v[set[r]];
			apart += !tp_space_sets_meet(&sp, set[r - 1], set[r]) &&
				 a->lo <= b->hi && b->lo <= a->hi;
		}
	}
	ck_assert_msg(yes >= 20 && shared >= 20 && apart >= 20 && returns >= 5,
		      "%u runnable, %u sharing, %u apart in one range, %u "
		      "returning to a node",
		      yes, shared, apart, returns);
	free(dec);
	tp_space_scratch_free(memo);
	tp_space_scratch_free(plain);
	tp_space_release(&sp);
	tp_groups_release(&g);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* The launcher's rank rule as it was written before check_ranks kept
 * the nodes it left sorted and read stages' node runs: the stages'
 * devices one after the other, a node left earlier (among the first 64
 * left) may not come back. */
static bool plain_ranks_ok(const struct tp_plan *p, const struct tp_cluster *c,
			   const struct tp_plan_shape *sh)
{
	uint32_t prev = TP_NONE, seen = 0, done[64];

	for (uint32_t s = 0; s < sh->pp; s++) {
		uint32_t g = sh->stage_group[s];
		const uint32_t *d = tp_plan_group_devs(p, g);
		for (uint32_t i = 0; i < p->groups.v[g].n_devices; i++) {
			uint32_t node = c->devices.v[d[i]].node;
			if (node == prev)
				continue;
			for (uint32_t k = 0; k < seen && k < 64; k++)
				if (done[k] == node)
					return false;
			if (prev != TP_NONE && seen < 64)
				done[seen++] = prev;
			prev = node;
		}
	}
	return true;
}

/* The rank rule of tp_runtime_plan_check, with the space's facts and
 * without, against the plain rule on 72 DGX-A100 (more nodes than the 64
 * the rule remembers): pipelines over the members of a family of
 * disjoint sets (parts of the device order, single devices) in random
 * order, one run per group; plans that keep and that break the rule both
 * occur. */
START_TEST(test_ranks_plain)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_groups g;
	struct tp_space sp;
	struct tp_runtime rt;
	struct tp_space_scratch *scr;
	struct tp_decision *dec;
	struct tp_globals gl;
	struct tp_rng rng;
	struct tp_plan p;
	struct tp_error err;
	uint32_t kept = 0, broke = 0, bit = 1u << TP_CAP_OVERLAPPING_GROUPS;

	gpt_on_dgx(&m, &c, "dgx-a100:72");
	ck_assert_int_eq(tp_coarsen(&m, 0, &g, NULL), TP_OK);
	ck_assert_int_eq(tp_space_init(&sp, &m, &c, &g, NULL), TP_OK);
	find("megatron-core", &rt);
	ck_assert_int_eq(tp_space_set_runtime(&sp, &rt, NULL), TP_OK);
	scr = tp_space_scratch_new(&sp);
	dec = calloc(g.n, sizeof(*dec));
	ck_assert_ptr_nonnull(scr);
	ck_assert_ptr_nonnull(dec);
	memset(&gl, 0, sizeof(gl));
	gl.micro_batches = 1;
	gl.schedule = TP_SCHEDULE_1F1B;
	gl.even = 1;
	tp_plan_init(&p);
	tp_rng_seed(&rng, 5);
	for (uint32_t it = 0; it < 400; it++) {
		const struct tp_family *fm =
		    &sp.families.v[tp_rng_below(&rng, sp.families.n)];
		const uint32_t *mem = sp.family_sets.v + fm->first;
		struct tp_plan_shape sh;
		uint32_t mask, base = (uint32_t)tp_rng_below(&rng, fm->n);
		char why[512];
		bool facts;
		if (fm->n < 2)
			continue;
		/* group k on member (base + k * step) mod n: distinct members
		   while k < n, a stride that jumps back and forth */
		for (uint32_t k = 0; k < g.n; k++) {
			uint32_t step = 1 + it % 5;
			dec[k].set = mem[(base + (uint64_t)k * step) % fm->n];
			dec[k].tp = 1;
			dec[k].sync = (uint8_t)tp_space_default_sync(
			    &sp, dec[k].set, 1);
			dec[k].recompute = 0;
		}
		facts = !tp_space_runnable(&sp, &gl, dec, scr, why,
					   sizeof(why)) &&
			strstr(why, "returns to node");
		if (tp_space_materialize(&sp, &gl, dec, TP_COMPRESSION_OFF,
					 scr, &p, &err))
			continue;
		mask = tp_runtime_plan_check(&rt, &p, &m, &c, &sh, NULL, 0);
		if (!sh.ok)
			continue;
		ck_assert_msg(!(mask & bit) == plain_ranks_ok(&p, &c, &sh),
			      "step %u: check %s, plain rule %s", it,
			      mask & bit ? "breaks" : "keeps",
			      plain_ranks_ok(&p, &c, &sh) ? "keeps" : "breaks");
		/* with the facts: the same reason when it is the first */
		if (facts)
			ck_assert(mask & bit);
		kept += !(mask & bit);
		broke += !!(mask & bit);
	}
	ck_assert_msg(kept >= 20 && broke >= 20, "%u kept, %u broke", kept,
		      broke);
	tp_plan_release(&p);
	free(dec);
	tp_space_scratch_free(scr);
	tp_space_release(&sp);
	tp_groups_release(&g);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

Suite *suite_runtime_plan(void)
{
	Suite *s = suite_create("runtime-plan");
	TCase *tc = tcase_create("check");
	TCase *ts = tcase_create("search");

	tcase_add_test(tc, test_plan_check_rules);
	tcase_add_test(tc, test_plan_check_layouts);
	tcase_add_test(tc, test_runnable_memo);
	tcase_add_test(tc, test_runnable_facts_sets);
	tcase_add_test(tc, test_ranks_plain);
	tcase_set_timeout(ts, 120);
	tcase_add_test(ts, test_search_runs_only_runnable_gpt);
	tcase_add_test(ts, test_search_runs_only_runnable_cnn);
	tcase_add_test(ts, test_cmd_plan_runtimes);
	tcase_add_test(ts, test_cmd_plan_runtime_file);
	tcase_add_test(ts, test_cmd_figures_basis);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, ts);
	return s;
}
