/*
 * test_core.c - the core IR and its helpers.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cluster.h"
#include "core/jsonw.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/rng.h"
#include "core/strbuf.h"
#include "core/strmap.h"
#include "core/vec.h"
#include "util.h"

START_TEST(test_vec_push_grows)
{
	TP_VEC(int) v = {0};

	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(tp_vec_push(&v, i), 0);
	ck_assert_uint_eq(v.n, 1000);
	ck_assert_int_eq(v.v[999], 999);
	tp_vec_free(&v);
	ck_assert_ptr_null(v.v);
}
END_TEST

START_TEST(test_rng_deterministic)
{
	struct tp_rng a, b;

	tp_rng_seed(&a, 42);
	tp_rng_seed(&b, 42);
	for (int i = 0; i < 100; i++)
		ck_assert_uint_eq(tp_rng_next(&a), tp_rng_next(&b));
	tp_rng_seed(&b, 43);
	ck_assert_uint_ne(tp_rng_next(&a), tp_rng_next(&b));
	for (int i = 0; i < 1000; i++) {
		double u = tp_rng_uniform(&a);
		ck_assert(u >= 0 && u < 1);
		ck_assert_uint_lt(tp_rng_below(&a, 7), 7);
	}
}
END_TEST

START_TEST(test_jsonw_roundtrip_numbers)
{
	struct tp_strbuf sb;
	struct tp_jw jw;
	const double xs[] = {0.1, 1.0 / 3, 1e-300, 123456789012.0, -2.5e17,
			     6.02214076e23};

	tp_strbuf_init(&sb);
	for (size_t i = 0; i < sizeof(xs) / sizeof(xs[0]); i++) {
		tp_strbuf_reset(&sb);
		tp_jw_format_number(&sb, xs[i]);
		ck_assert(strtod(tp_strbuf_cstr(&sb), NULL) == xs[i]);
	}
	tp_strbuf_reset(&sb);
	tp_jw_init(&jw, &sb, false);
	tp_jw_object_begin(&jw);
	tp_jw_kv_string(&jw, "a", "q\"\n");
	tp_jw_key(&jw, "b");
	tp_jw_array_begin(&jw);
	tp_jw_int(&jw, 1);
	tp_jw_number(&jw, 0.5);
	tp_jw_array_end(&jw);
	tp_jw_object_end(&jw);
	ck_assert_str_eq(tp_strbuf_cstr(&sb), "{\"a\":\"q\\\"\\n\",\"b\":[1,0.5]}");
	tp_strbuf_release(&sb);
}
END_TEST

START_TEST(test_strmap_and_distance)
{
	struct tp_strmap m;
	uint32_t old = 0;

	tp_strmap_init(&m);
	for (uint32_t i = 0; i < 100; i++) {
		char *k = malloc(16);
		snprintf(k, 16, "k%u", i);
		ck_assert_int_eq(tp_strmap_put(&m, k, i, NULL), 0);
	}
	ck_assert_uint_eq(tp_strmap_get(&m, "k57"), 57);
	ck_assert_uint_eq(tp_strmap_get(&m, "nope"), TP_STRMAP_NONE);
	ck_assert_int_eq(tp_strmap_put(&m, "k3", 9, &old), 1);
	ck_assert_uint_eq(old, 3);
	for (size_t i = 0; i < m.cap; i++)
		free((void *)m.keys[i]);
	tp_strmap_release(&m);
	ck_assert_uint_eq(tp_edit_distance("A100-SXM4-80GB", "A10O-SXM4-80GB", 3),
			  1);
}
END_TEST

static void chain_model(struct tp_model *m, int n, bool cycle)
{
	struct tp_op op = tp_op_default();
	char name[16];

	tp_model_init(m);
	m->global_batch = 8;
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "op%d", i);
		op.name = name;
		op.flop = 10;
		ck_assert_int_eq(tp_model_add_op(m, &op, NULL, NULL), TP_OK);
	}
	for (int i = 0; i + 1 < n; i++)
		ck_assert_int_eq(tp_model_add_edge(m, (uint32_t)i,
						   (uint32_t)i + 1, 4, NULL),
				 TP_OK);
	if (cycle)
		ck_assert_int_eq(tp_model_add_edge(m, (uint32_t)n - 1, 1, 4,
						   NULL),
				 TP_OK);
}

START_TEST(test_model_finalize_and_cycle)
{
	struct tp_model m;
	struct tp_error err;
	struct tp_op op = tp_op_default();

	chain_model(&m, 5, false);
	ck_assert_int_eq(tp_model_finalize(&m, &err), TP_OK);
	ck_assert_uint_eq(m.topo[0], 0);
	ck_assert_uint_eq(m.topo[4], 4);
	ck_assert(m.total_flop == 50);
	op.name = "op2";
	ck_assert_int_eq(tp_model_add_op(&m, &op, NULL, &err), TP_EINPUT);
	ck_assert_ptr_nonnull(strstr(err.msg, "duplicate op name \"op2\""));
	tp_model_release(&m);

	chain_model(&m, 5, true);
	ck_assert_int_eq(tp_model_finalize(&m, &err), TP_EINPUT);
	ck_assert_ptr_nonnull(strstr(err.msg, "cycle through op \"op"));
	tp_model_release(&m);
}
END_TEST

/* Two nodes of two devices on a fabric each, joined by a network switch. */
static void small_cluster(struct tp_cluster *c, bool connect)
{
	struct tp_device_type t;
	uint32_t ti, node, sw, fab, nic, d;

	memset(&t, 0, sizeof(t));
	t.name = "G";
	t.peak_flops[TP_DTYPE_FP32] = 1e13;
	t.memory_bytes = 16e9;
	t.memory_bw_Bps = 9e11;
	tp_cluster_init(c);
	ck_assert_int_eq(tp_cluster_add_type(c, &t, &ti, NULL), TP_OK);
	sw = tp_cluster_add_vertex(c, TP_VERTEX_SWITCH);
	for (int n = 0; n < 2; n++) {
		char name[16];
		snprintf(name, sizeof(name), "n%d", n);
		ck_assert_int_eq(tp_cluster_add_node(c, name, &node, NULL),
				 TP_OK);
		fab = tp_cluster_add_vertex(c, TP_VERTEX_FABRIC);
		nic = tp_cluster_add_vertex(c, TP_VERTEX_NIC);
		for (int k = 0; k < 2; k++) {
			ck_assert_int_eq(tp_cluster_add_device(c, node, ti, NULL,
							       &d, NULL),
					 TP_OK);
			tp_cluster_add_link(c, c->devices.v[d].vertex, fab, 1e11,
					    1e-6, TP_LINK_NVSWITCH, NULL);
			tp_cluster_add_link(c, c->devices.v[d].vertex, nic,
					    1.25e10, 0, TP_LINK_NIC, NULL);
		}
		if (connect || n == 0)
			tp_cluster_add_link(c, nic, sw, 2.5e10, 2e-6,
					    TP_LINK_NETWORK, NULL);
	}
}

START_TEST(test_cluster_routes)
{
	struct tp_cluster c;
	struct tp_error err;
	const struct tp_route *r;

	small_cluster(&c, true);
	ck_assert_int_eq(tp_cluster_finalize(&c, &err), TP_OK);
	r = tp_test_route(&c, 0, 1);
	ck_assert_uint_eq(r->n, 2);
	ck_assert(r->bw_Bps == 1e11);
	r = tp_test_route(&c, 0, 3);
	ck_assert_uint_eq(r->n, 4);
	ck_assert(r->bw_Bps == 1.25e10);
	ck_assert(fabs(r->latency_s - 4e-6) < 1e-12);
	ck_assert_ptr_nonnull(tp_cluster_find_device(&c, "n1/gpu1") == 3
				      ? "ok"
				      : NULL);
	tp_cluster_release(&c);

	small_cluster(&c, false);
	ck_assert_int_eq(tp_cluster_finalize(&c, &err), TP_EINPUT);
	ck_assert_ptr_nonnull(strstr(err.msg, "cannot be reached"));
	tp_cluster_release(&c);
}
END_TEST

START_TEST(test_plan_validate)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_error err;
	uint32_t ops[5] = {0, 1, 2, 3, 4}, devs[4] = {0, 1, 2, 3};
	double uneven[4] = {0.5, 0.25, 0.125, 0.125};

	chain_model(&m, 5, false);
	ck_assert_int_eq(tp_model_finalize(&m, NULL), TP_OK);
	small_cluster(&c, true);
	ck_assert_int_eq(tp_cluster_finalize(&c, NULL), TP_OK);
	tp_plan_init(&p);
	p.global_batch = 8;
	ck_assert_int_eq(tp_plan_add_group_degrees(
			     &p, ops, 5, devs, 4,
			     &(struct tp_plan_degrees){4, 1, 1}, uneven, &err),
			 TP_OK);
	ck_assert_int_eq(tp_plan_validate(&p, &m, &c, &err), TP_OK);
	p.micro_batches = 2; /* 4 samples per micro-batch: 0.5 sample */
	ck_assert_int_eq(tp_plan_validate(&p, &m, &c, &err), TP_EINPUT);
	ck_assert_str_eq(err.path, "$.groups[0].shares[2]");
	p.micro_batches = 1;
	tp_plan_clear(&p);
	ck_assert_int_eq(tp_plan_add_group_degrees(
			     &p, ops, 4, devs, 4,
			     &(struct tp_plan_degrees){4, 1, 1}, NULL, &err),
			 TP_OK);
	ck_assert_int_eq(tp_plan_validate(&p, &m, &c, &err), TP_EINPUT);
	ck_assert_ptr_nonnull(strstr(err.msg, "op \"op4\" is in no group"));
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* tp_plan_content_hash: equal for a copy and for the same groups built
 * into pools at other offsets, and whatever the summary says; different
 * when a share, a device, a degree or a plan-wide setting differs. */
START_TEST(test_plan_content_hash)
{
	struct tp_plan p, q;
	struct tp_error err;
	uint32_t ops[5] = {0, 1, 2, 3, 4}, devs[4] = {0, 1, 2, 3};
	double uneven[4] = {0.5, 0.25, 0.125, 0.125};
	uint64_t h;

	tp_plan_init(&p);
	tp_plan_init(&q);
	p.global_batch = 8;
	p.micro_batches = 1;
	ck_assert_int_eq(tp_plan_add_group_degrees(
			     &p, ops, 2, devs, 4,
			     &(struct tp_plan_degrees){4, 1, 1}, uneven, &err),
			 TP_OK);
	ck_assert_int_eq(tp_plan_add_group_degrees(
			     &p, ops + 2, 3, devs, 4,
			     &(struct tp_plan_degrees){2, 1, 2}, NULL, &err),
			 TP_OK);
	h = tp_plan_content_hash(&p);
	ck_assert_int_eq(tp_plan_copy(&q, &p, &err), TP_OK);
	ck_assert(tp_plan_content_hash(&q) == h);
	q.summary.valid = true;
	q.summary.iteration_time_s = 1;
	ck_assert(tp_plan_content_hash(&q) == h);
	/* the same groups at other pool offsets (a dropped group's
	   entries first) */
	tp_plan_clear(&q);
	ck_assert_int_eq(tp_plan_add_group_degrees(
			     &q, ops, 5, devs, 1,
			     &(struct tp_plan_degrees){1, 1, 1}, NULL, &err),
			 TP_OK);
	q.groups.n = 0;
	q.global_batch = 8;
	q.micro_batches = 1;
	ck_assert_int_eq(tp_plan_add_group_degrees(
			     &q, ops, 2, devs, 4,
			     &(struct tp_plan_degrees){4, 1, 1}, uneven, &err),
			 TP_OK);
	ck_assert_int_eq(tp_plan_add_group_degrees(
			     &q, ops + 2, 3, devs, 4,
			     &(struct tp_plan_degrees){2, 1, 2}, NULL, &err),
			 TP_OK);
	ck_assert_uint_gt(q.groups.v[0].op_first, 0);
	ck_assert(tp_plan_content_hash(&q) == h);
	q.shares.v[q.groups.v[0].share_first + 1] = 0.375;
	ck_assert(tp_plan_content_hash(&q) != h);
	q.shares.v[q.groups.v[0].share_first + 1] = 0.25;
	ck_assert(tp_plan_content_hash(&q) == h);
	q.devs.v[q.groups.v[1].dev_first] = 3;
	ck_assert(tp_plan_content_hash(&q) != h);
	q.devs.v[q.groups.v[1].dev_first] = 0;
	q.groups.v[1].sp = true;
	ck_assert(tp_plan_content_hash(&q) != h);
	q.groups.v[1].sp = false;
	q.micro_batches = 2;
	ck_assert(tp_plan_content_hash(&q) != h);
	q.micro_batches = 1;
	q.schedule = TP_SCHEDULE_ZB_H1;
	ck_assert(tp_plan_content_hash(&q) != h);
	q.schedule = p.schedule;
	ck_assert(tp_plan_content_hash(&q) == h);
	tp_plan_release(&p);
	tp_plan_release(&q);
}
END_TEST

START_TEST(test_cli_version_and_help)
{
	struct tp_run r;
	const char *v[] = {"tagplan", "--version", NULL};
	const char *h[] = {"tagplan", "--help", NULL};
	const char *bad[] = {"tagplan", "frobnicate", NULL};

	tp_run_tagplan(&r, v, NULL);
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "tagplan "));
	tp_run_free(&r);
	tp_run_tagplan(&r, h, NULL);
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "simulate"));
	ck_assert_ptr_nonnull(strstr(r.out, "exit codes"));
	tp_run_free(&r);
	tp_run_tagplan(&r, bad, NULL);
	ck_assert_int_eq(r.status, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "no command \"frobnicate\""));
	tp_run_free(&r);
}
END_TEST

Suite *suite_core(void)
{
	Suite *s = suite_create("core");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_vec_push_grows);
	tcase_add_test(tc, test_rng_deterministic);
	tcase_add_test(tc, test_jsonw_roundtrip_numbers);
	tcase_add_test(tc, test_strmap_and_distance);
	tcase_add_test(tc, test_model_finalize_and_cycle);
	tcase_add_test(tc, test_cluster_routes);
	tcase_add_test(tc, test_plan_validate);
	tcase_add_test(tc, test_plan_content_hash);
	tcase_add_test(tc, test_cli_version_and_help);
	suite_add_tcase(s, tc);
	return s;
}
