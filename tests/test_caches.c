/*
 * test_caches.c - what the planner computes once and keeps, against what
 * it would compute afresh: the model's per-op expert index, ep_check's
 * count of a group's experts.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cluster.h"
#include "core/model.h"
#include "core/plan.h"
#include "util.h"

/* One node of gpus toy devices. */
static void toy_cluster(struct tp_cluster *c, uint32_t gpus)
{
	struct tp_device_type t = tp_test_toy_type("toy");

	tp_test_toy_node(c, &t, gpus);
}

/* A model of one op per name (names[i] in layer layers[i]), finalized. */
static void named_ops_model(struct tp_model *m, const char *const *names,
			    const int32_t *layers, uint32_t n)
{
	struct tp_error err;

	tp_model_init(m);
	m->global_batch = 8;
	m->dtype = TP_DTYPE_BF16;
	for (uint32_t i = 0; i < n; i++) {
		struct tp_op op = tp_op_default();
		op.name = names[i];
		op.kind = TP_OP_MATMUL;
		op.layer = layers[i];
		op.flop = 1e9;
		ck_assert_int_eq(tp_model_add_op(m, &op, NULL, &err), TP_OK);
	}
	ck_assert_int_eq(tp_model_finalize(m, &err), TP_OK);
}

/* tp_plan_validate of every op of m in one group of 4 replicas with
 * expert parallelism ep; the message into msg. */
static enum tp_status validate_ep_group(const struct tp_model *m,
					const struct tp_cluster *c,
					uint32_t ep, char *msg, size_t len)
{
	struct tp_error err;
	struct tp_plan p;
	uint32_t ops[16], devs[4] = {0, 1, 2, 3};
	enum tp_status st;

	for (uint32_t i = 0; i < m->ops.n; i++)
		ops[i] = i;
	tp_plan_init(&p);
	p.global_batch = m->global_batch;
	p.micro_batches = 1;
	ck_assert_int_eq(tp_plan_add_group_degrees(
				 &p, ops, (uint32_t)m->ops.n, devs, 4,
				 &(struct tp_plan_degrees){4, 1, 1}, NULL,
				 &err),
			 TP_OK);
	p.groups.v[0].ep = ep;
	st = tp_plan_validate(&p, m, c, &err);
	snprintf(msg, len, "%s", st ? err.msg : "");
	tp_plan_release(&p);
	return st;
}

/* The per-op expert index the model keeps (tp_model_finalize) answers
 * what parsing the name answers, also after ops are added and the model
 * finalized again; ep_check counts each layer's distinct experts in a
 * table for small expert indices and by sorting for large ones, with
 * the same verdict and message. */
START_TEST(test_expert_index_cached)
{
	struct tp_cluster c;
	struct tp_model m, big;
	struct tp_error err;
	char msg[1100], bigmsg[1100];
	/* layer 0: experts 0, 1, 2, 3 (expert 1 twice); layer 1: experts 5,
	 * 7 (twice), 9: three distinct */
	const char *small_names[] = {
		"layer0.router",	"layer0.expert1.fc1", "layer0.expert0.fc1",
		"layer0.expert1.fc2",	"layer0.expert2.fc1", "layer0.expert3.fc1",
		"layer1.expert7.fc1",	"layer1.expert5.fc1", "layer1.expert7.fc2",
		"layer1.expert9.fc1",	"layer1.shared_expert.fc1"};
	const char *big_names[] = {
		"layer0.router",
		"layer0.expert2000001.fc1",
		"layer0.expert2000000.fc1",
		"layer0.expert2000001.fc2",
		"layer0.expert2000002.fc1",
		"layer0.expert2000003.fc1",
		"layer1.expert2000007.fc1",
		"layer1.expert2000005.fc1",
		"layer1.expert2000007.fc2",
		"layer1.expert2000009.fc1",
		"layer1.shared_expert.fc1"};
	const int32_t layers[] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
	uint32_t n = 11;
	struct tp_op op = tp_op_default();

	toy_cluster(&c, 4);
	named_ops_model(&m, small_names, layers, n);
	named_ops_model(&big, big_names, layers, n);
	for (uint32_t i = 0; i < n; i++) {
		ck_assert_int_eq(tp_model_op_expert(&m, i),
				 tp_op_expert_index(small_names[i]));
		ck_assert_int_eq(tp_model_op_expert(&big, i),
				 tp_op_expert_index(big_names[i]));
	}
	ck_assert_int_eq(tp_model_op_expert(&m, 2), 0);
	ck_assert_int_eq(tp_model_op_expert(&big, 9), 2000009);
	ck_assert_int_eq(tp_model_op_expert(&m, 10), -1);
	/* ep 2 divides layer 0's 4 experts, not layer 1's 3 */
	ck_assert_int_eq(validate_ep_group(&m, &c, 2, msg, sizeof(msg)),
			 TP_EINPUT);
	ck_assert_msg(strstr(msg, "the 3 routed experts of layer 1 "), "%s",
		      msg);
	ck_assert_int_eq(validate_ep_group(&big, &c, 2, bigmsg,
					   sizeof(bigmsg)),
			 TP_EINPUT);
	ck_assert_str_eq(msg, bigmsg);
	/* ep 4: layer 0 (4 experts) passes, layer 1 fails first */
	ck_assert_int_eq(validate_ep_group(&m, &c, 4, msg, sizeof(msg)),
			 TP_EINPUT);
	ck_assert_int_eq(validate_ep_group(&big, &c, 4, bigmsg,
					   sizeof(bigmsg)),
			 TP_EINPUT);
	ck_assert_str_eq(msg, bigmsg);
	ck_assert_msg(strstr(msg, "the 3 routed experts of layer 1 "), "%s",
		      msg);
	/* a new op after finalize: the index follows the new name */
	op.name = "layer1.expert11.fc1";
	op.layer = 1;
	ck_assert_int_eq(tp_model_add_op(&m, &op, NULL, &err), TP_OK);
	ck_assert_int_eq(tp_model_op_expert(&m, n), 11);
	ck_assert_int_eq(tp_model_finalize(&m, &err), TP_OK);
	ck_assert_int_eq(tp_model_op_expert(&m, n), 11);
	/* now 4 experts in layer 1: ep 2 and 4 fit */
	ck_assert_msg(validate_ep_group(&m, &c, 4, msg, sizeof(msg)) == TP_OK,
		      "%s", msg);
	tp_model_release(&m);
	tp_model_release(&big);
	tp_cluster_release(&c);
}
END_TEST

Suite *suite_caches(void)
{
	Suite *s = suite_create("caches");
	TCase *tc = tcase_create("caches");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_expert_index_cached);
	suite_add_tcase(s, tc);
	return s;
}
