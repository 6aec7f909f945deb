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
		ck_assert_int_eq(tp_plan_add_group(&q, a, n, devs, 8, 8, 1,
						   NULL, &g, &err),
				 TP_OK);
		q.groups.v[g].ep = 4;
		ck_assert_int_eq(tp_plan_add_group(&q, b, moved, devs, 8, 8, 1,
						   NULL, &g, &err),
				 TP_OK);
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
START_TEST(test_ep_plan_file)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p, q;
	struct tp_error err;
	struct tp_strbuf sb;
	struct tp_load_options lo;
	char *bad, *at;

	tp_load_options_default(&lo);
	load_hf("mixtral-8x7b.json", 512, 64, &m);
	load_topo("dgx-h100:1", &c);
	tp_plan_init(&p);
	ck_assert_msg(expand("dp=8,ep=4", &m, &c, &p, &err) == TP_OK, "%s",
		      err.msg);
	tp_strbuf_init(&sb);
	tp_plan_write(&p, &m, &c, &sb);
	ck_assert_msg(strstr(sb.buf, "\"ep\": 4") != NULL, "%s", sb.buf);
	tp_plan_init(&q);
	ck_assert_msg(tp_plan_load("plan.json", sb.buf, sb.len, &m, &c, &lo,
				   &q, &err) == TP_OK,
		      "%s", err.msg);
	ck_assert_uint_eq(q.groups.v[0].ep, 4);
	tp_plan_release(&q);
	/* ep 3 does not divide dp 8 */
	bad = strdup(sb.buf);
	at = strstr(bad, "\"ep\": 4");
	at[6] = '3';
	tp_plan_init(&q);
	ck_assert_int_eq(tp_plan_load("plan.json", bad, strlen(bad), &m, &c,
				      &lo, &q, &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "ep=3 does not divide dp=8") &&
			      strstr(err.path, "groups[0].ep"),
		      "%s at %s", err.msg, err.path);
	tp_plan_release(&q);
	free(bad);
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
			      strstr(out.buf, "--tensor-model-parallel-size 2\n"),
		      "%s", out.buf);
	tp_strbuf_release(&out);
	/* Megatron-LM of 2021 has no expert parallelism: refused */
	for (uint32_t g = 0; g < p.groups.n; g++)
		p.groups.v[g].sp = false;
	tp_strbuf_init(&out);
	export_args(&p, &m, &c, "megatron-lm-2021", TP_EINFEASIBLE, &out,
		    &err);
	ck_assert_msg(strstr(err.msg, "expert parallelism (ep=4)"), "%s",
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

Suite *suite_moe(void)
{
	Suite *s = suite_create("moe");
	TCase *tc = tcase_create("ep");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_ep_strategy);
	tcase_add_test(tc, test_ep_validate);
	tcase_add_test(tc, test_ep_plan_file);
	tcase_add_test(tc, test_ep_export);
	suite_add_tcase(s, tc);
	return s;
}
