/*
 * test_caches.c - what the planner computes once and keeps, against what
 * it would compute afresh: the model's per-op expert index, ep_check's
 * count of a group's experts, the simulator's op cost classes and its
 * group graph of the last partition, the action space's per-set tensor
 * degrees and its division-free validity and synchronisation rules, its
 * sets' ranges for which sets meet.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cluster.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/report.h"
#include "core/runtime.h"
#include "core/rng.h"
#include "core/strbuf.h"
#include "io/build.h"
#include "io/io.h"
#include "search/actions.h"
#include "search/coarsen.h"
#include "sim/sim.h"
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

/* The inputs of the simulator's op_lane (src/sim/opclass.c op_key): an op
 * of op_classes_model's pair v differs from its twin in that one. */
enum variant {
	V_FLOP,
	V_BFLOP,
	V_PARAM,
	V_OUT,
	V_MEM,
	V_SAVED,
	V_KIND,
	V_SPLIT,
	V_IN,       /* the bytes entering it */
	V_NORM_FED, /* a norm feeds it (fp8 casts) */
	V_EXPERT,   /* a routed expert's op */
	V_PROFILE,  /* measured times */
	V_COUNT
};

/* An fp8 model of one layer: for each variant v a pair of matmuls, the
 * second differing from the first in v alone, fed by a norm; two more
 * routed experts so that ep 2 divides the layer's. */
static void op_classes_model(struct tp_model *m)
{
	struct tp_error err;
	struct tp_op op = tp_op_default();
	uint32_t in, norm, act, idx;

	tp_model_init(m);
	m->name = "op-classes";
	m->global_batch = 16;
	m->dtype = TP_DTYPE_FP8;
	op.name = "input";
	op.kind = TP_OP_INPUT;
	op.out_bytes = 1e6;
	ck_assert_int_eq(tp_model_add_op(m, &op, &in, &err), TP_OK);
	op = tp_op_default();
	op.name = "layer0.norm";
	op.kind = TP_OP_NORM;
	op.layer = 0;
	op.flop = 1e6;
	op.mem_bytes = 2e6;
	op.out_bytes = 1e6;
	ck_assert_int_eq(tp_model_add_op(m, &op, &norm, &err), TP_OK);
	ck_assert_int_eq(tp_model_add_edge(m, in, norm, 1e6, &err), TP_OK);
	op.name = "layer0.act";
	op.kind = TP_OP_ELEMENTWISE;
	ck_assert_int_eq(tp_model_add_op(m, &op, &act, &err), TP_OK);
	ck_assert_int_eq(tp_model_add_edge(m, in, act, 1e6, &err), TP_OK);
	for (int v = 0; v < V_COUNT; v++)
		for (int twin = 0; twin < (v == V_EXPERT ? 3 : 2); twin++) {
			char name[64];
			bool b = twin == 1;
			uint32_t src = b && v == V_NORM_FED ? act : norm;
			op = tp_op_default();
			if (v == V_EXPERT)
				snprintf(name, sizeof(name),
					 b ? "layer0.dense%d" : "layer0.expert%d.fc",
					 twin);
			else
				snprintf(name, sizeof(name), "layer0.%c%d",
					 b ? 'b' : 'a', v);
			op.name = name;
			op.layer = 0;
			op.kind = b && v == V_KIND ? TP_OP_ELEMENTWISE
						   : TP_OP_MATMUL;
			op.tp_split = b && v == V_SPLIT ? TP_SPLIT_COLUMN
							: TP_SPLIT_ROW;
			op.flop = b && v == V_FLOP ? 3e10 : 1e10;
			op.backward_flop = b && v == V_BFLOP ? 6e10 : 2e10;
			/* memory-bound variants: enough bytes to decide */
			op.param_bytes = b && v == V_PARAM ? 4e10 : 1e7;
			op.out_bytes = b && v == V_OUT ? 5e6 : 1e6;
			op.mem_bytes = b && v == V_MEM ? 4e10 : 2e6;
			op.saved_bytes = b && v == V_SAVED ? 3e6 : 1e6;
			ck_assert_int_eq(tp_model_add_op(m, &op, &idx, &err),
					 TP_OK);
			ck_assert_int_eq(tp_model_add_edge(
						 m, src, idx,
						 b && v == V_IN ? 8e6 : 1e6,
						 &err),
					 TP_OK);
			if (b && v == V_PROFILE) {
				struct tp_profile pr = {
					"H100-SXM5-80GB", 1, 0.02, 0.05, 0,
					0, 0, 0, 0, 0};
				ck_assert_int_eq(tp_model_add_profile(
							 m, idx, &pr, &err),
						 TP_OK);
			}
		}
	ck_assert_int_eq(tp_model_finalize(m, &err), TP_OK);
}

/* A plan of every op of m in one group on devices 0..dp*tp-1. */
struct oc_plan {
	uint32_t dp, tp, ep, etp, mb;
	bool sp;
};

static void oc_plan_make(const struct tp_model *m, const struct oc_plan *q,
			 struct tp_plan *p)
{
	struct tp_error err;
	uint32_t *ops = calloc(m->ops.n, sizeof(*ops)), devs[8];

	ck_assert_ptr_nonnull(ops);
	for (uint32_t i = 0; i < m->ops.n; i++)
		ops[i] = i;
	for (uint32_t d = 0; d < 8; d++)
		devs[d] = d;
	tp_plan_init(p);
	p->global_batch = m->global_batch;
	p->micro_batches = q->mb;
	ck_assert_int_eq(tp_plan_add_group_degrees(
				 p, ops, (uint32_t)m->ops.n, devs,
				 q->dp * q->tp,
				 &(struct tp_plan_degrees){q->dp, 1, q->tp},
				 NULL, &err),
			 TP_OK);
	p->groups.v[0].ep = q->ep;
	p->groups.v[0].etp = q->etp;
	p->groups.v[0].sp = q->sp;
	free(ops);
}

/* tp_sim_run's report of p as JSON into j; sim and s given. */
static void oc_report(struct tp_sim *sim, struct tp_sim_scratch *s,
		      const struct tp_cluster *c, const struct tp_plan *p,
		      struct tp_strbuf *j)
{
	struct tp_error err;
	struct tp_report r;

	tp_report_init(&r);
	ck_assert_msg(tp_sim_run(sim, p, s, &r, NULL, &err) == TP_OK, "%s",
		      err.msg);
	tp_strbuf_reset(j);
	tp_report_write(&r, c, j);
	tp_report_release(&r);
}

/* The simulator prices ops of one cost class once per lane (cost.c
 * op_cost_memo).  Plans differing in tp, sp, ep, etp and micro-batches,
 * simulated one after the other on one simulator and scratch, twice
 * over, give byte for byte the reports of a fresh simulator and a
 * reference scratch (no memo) per plan, under runtime none and
 * megatron-core, on a model whose op pairs differ in one input of the
 * op cost each: a class key without that input would give the second
 * op of its pair the first's cost. */
START_TEST(test_op_classes)
{
	static const char *const specs[] = {"dgx-h100:1"};
	static const char *const rts[] = {"none", "megatron-core"};
	static const struct oc_plan plans[] = {
		{8, 1, 1, 0, 1, false}, {4, 2, 1, 0, 2, true},
		{8, 1, 2, 0, 1, false}, {4, 2, 2, 0, 1, true},
		{2, 4, 2, 1, 2, true},	{4, 2, 1, 0, 1, false},
	};
	const uint32_t n_plans = sizeof(plans) / sizeof(plans[0]);
	struct tp_cluster c;
	struct tp_model m;
	struct tp_error err;
	struct tp_strbuf j1, j2;

	tp_cluster_init(&c);
	ck_assert_int_eq(tp_build_topology(specs, 1, NULL, 1, &c, &err), TP_OK);
	op_classes_model(&m);
	tp_strbuf_init(&j1);
	tp_strbuf_init(&j2);
	for (int k = 0; k < 2; k++) {
		struct tp_sim_options o;
		struct tp_runtime rt;
		struct tp_sim *sim;
		struct tp_sim_scratch *s;

		tp_sim_options_default(&o);
		ck_assert_int_eq(tp_runtime_find(rts[k], &rt, &err), TP_OK);
		tp_sim_params_runtime(&o.params, &rt);
		sim = tp_sim_new(&m, &c, &o, &err);
		ck_assert_msg(sim != NULL, "%s", err.msg);
		s = tp_sim_scratch_new(sim);
		ck_assert_ptr_nonnull(s);
		for (uint32_t it = 0; it < 2 * n_plans; it++) {
			uint32_t i = it < n_plans ? it : 2 * n_plans - 1 - it;
			struct tp_sim *fresh = tp_sim_new(&m, &c, &o, &err);
			struct tp_sim_scratch *ref;
			struct tp_plan p;

			ck_assert_ptr_nonnull(fresh);
			ref = tp_sim_scratch_new(fresh);
			ck_assert_ptr_nonnull(ref);
			tp_sim_scratch_reference(ref, true);
			oc_plan_make(&m, &plans[i], &p);
			ck_assert_msg(tp_plan_validate(&p, &m, &c, &err) == TP_OK,
				      "plan %u: %s", i, err.msg);
			oc_report(sim, s, &c, &p, &j1);
			oc_report(fresh, ref, &c, &p, &j2);
			ck_assert_msg(j1.len == j2.len &&
					      memcmp(j1.buf, j2.buf, j1.len) ==
						      0,
				      "runtime %s, plan %u: the kept op costs "
				      "give another report than afresh",
				      rts[k], i);
			tp_plan_release(&p);
			tp_sim_scratch_free(ref);
			tp_sim_free(fresh);
		}
		tp_sim_scratch_free(s);
		tp_sim_free(sim);
	}
	tp_strbuf_release(&j1);
	tp_strbuf_release(&j2);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* in -> router -> four experts of different sizes -> combine. */
static void fanout_model(struct tp_model *m)
{
	static const char *const names[] = {"in",      "router",
					    "expert0", "expert1",
					    "expert2", "expert3",
					    "combine"};
	struct tp_error err;

	tp_model_init(m);
	m->name = "fanout";
	m->global_batch = 8;
	m->dtype = TP_DTYPE_BF16;
	for (uint32_t i = 0; i < 7; i++) {
		struct tp_op op = tp_op_default();
		op.name = names[i];
		op.kind = i == 0 ? TP_OP_INPUT : TP_OP_MATMUL;
		op.flop = i == 0 ? 0 : 1e9 * (double)i;
		op.backward_flop = 2 * op.flop;
		op.param_bytes = i == 0 ? 0 : 1e6 * (double)i;
		op.out_bytes = 1e6 * (double)(i + 1);
		op.saved_bytes = op.out_bytes;
		ck_assert_int_eq(tp_model_add_op(m, &op, NULL, &err), TP_OK);
	}
	ck_assert_int_eq(tp_model_add_edge(m, 0, 1, 1e6, &err), TP_OK);
	for (uint32_t j = 2; j < 6; j++) {
		ck_assert_int_eq(tp_model_add_edge(m, 1, j, 2e6, &err), TP_OK);
		ck_assert_int_eq(tp_model_add_edge(m, j, 6, 1e6 * j, &err),
				 TP_OK);
	}
	ck_assert_int_eq(tp_model_finalize(m, &err), TP_OK);
}

/* A plan of fanout_model: group 0 the ops a[0..na) on devices 0-1,
 * group 1 the others on devices 2-3 (na = 7: one group on all four),
 * mb micro-batches. */
static void fanout_plan(const struct tp_model *m, const uint32_t *a,
			uint32_t na, uint32_t mb, struct tp_plan *p)
{
	struct tp_error err;
	uint32_t b[7], nb = 0, devs[4] = {0, 1, 2, 3};

	for (uint32_t o = 0; o < 7; o++) {
		bool in_a = false;
		for (uint32_t k = 0; k < na; k++)
			in_a |= a[k] == o;
		if (!in_a)
			b[nb++] = o;
	}
	tp_plan_init(p);
	p->global_batch = m->global_batch;
	p->micro_batches = mb;
	p->schedule = TP_SCHEDULE_1F1B;
	p->virtual_stages = 1;
	ck_assert_int_eq(tp_plan_add_group_degrees(
				 p, a, na, devs, nb ? 2 : 4,
				 &(struct tp_plan_degrees){nb ? 2 : 4, 1, 1},
				 NULL, &err),
			 TP_OK);
	if (nb)
		ck_assert_int_eq(tp_plan_add_group_degrees(
					 p, b, nb, devs + 2, 2,
					 &(struct tp_plan_degrees){2, 1, 1},
					 NULL, &err),
				 TP_OK);
}

/* The simulator keeps the group graph of the last partition of the ops
 * into groups (lanes.c same_partition).  Plans of the same partition
 * with other micro-batches, partitions of the same group sizes holding
 * other ops, one group, in turn on one simulator and scratch, give byte
 * for byte the reports of a fresh simulator and reference scratch; the
 * two partitions of equal sizes give different reports (a key of the
 * group sizes alone would confuse them). */
START_TEST(test_partition_kept)
{
	static const uint32_t p1[] = {0, 1, 2, 3}, p2[] = {0, 1, 2, 4};
	static const uint32_t all[] = {0, 1, 2, 3, 4, 5, 6};
	static const struct {
		const uint32_t *a;
		uint32_t na, mb;
	} runs[] = {{p1, 4, 1}, {p1, 4, 2}, {p2, 4, 2}, {p2, 4, 1},
		    {p1, 4, 1}, {all, 7, 2}, {p2, 4, 2}, {p1, 4, 2}};
	struct tp_cluster c;
	struct tp_model m;
	struct tp_error err;
	struct tp_strbuf j1, j2, first[2];
	struct tp_sim *sim;
	struct tp_sim_scratch *s;

	toy_cluster(&c, 4);
	fanout_model(&m);
	tp_strbuf_init(&j1);
	tp_strbuf_init(&j2);
	tp_strbuf_init(&first[0]);
	tp_strbuf_init(&first[1]);
	sim = tp_sim_new(&m, &c, NULL, &err);
	ck_assert_msg(sim != NULL, "%s", err.msg);
	s = tp_sim_scratch_new(sim);
	ck_assert_ptr_nonnull(s);
	for (uint32_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		struct tp_sim *fresh = tp_sim_new(&m, &c, NULL, &err);
		struct tp_sim_scratch *ref;
		struct tp_plan p;

		ck_assert_ptr_nonnull(fresh);
		ref = tp_sim_scratch_new(fresh);
		ck_assert_ptr_nonnull(ref);
		tp_sim_scratch_reference(ref, true);
		fanout_plan(&m, runs[i].a, runs[i].na, runs[i].mb, &p);
		ck_assert_msg(tp_plan_validate(&p, &m, &c, &err) == TP_OK,
			      "run %u: %s", i, err.msg);
		oc_report(sim, s, &c, &p, &j1);
		oc_report(fresh, ref, &c, &p, &j2);
		ck_assert_msg(j1.len == j2.len &&
				      memcmp(j1.buf, j2.buf, j1.len) == 0,
			      "run %u: the kept group graph gives another "
			      "report than afresh",
			      i);
		if (i == 1 || i == 2)
			tp_strbuf_add(&first[i - 1], j2.buf, j2.len);
		tp_plan_release(&p);
		tp_sim_scratch_free(ref);
		tp_sim_free(fresh);
	}
	ck_assert(first[0].len != first[1].len ||
		  memcmp(first[0].buf, first[1].buf, first[0].len) != 0);
	tp_sim_scratch_free(s);
	tp_sim_free(sim);
	tp_strbuf_release(&j1);
	tp_strbuf_release(&j2);
	tp_strbuf_release(&first[0]);
	tp_strbuf_release(&first[1]);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* tp_space_tp_ok as it was written before the space kept each set's
 * tensor degrees (tp_devset.tp_divides) and compared products instead of
 * quotients: the plain rule, divisions and all. */
static bool plain_tp_ok(const struct tp_space *s, uint32_t g, uint32_t set,
			uint32_t tp, const struct tp_globals *gl)
{
	const struct tp_devset *ds;
	uint32_t units = s->groups->tp_units[g], cp, m;

	if (set >= s->sets.n || tp == 0 || tp > 64)
		return false;
	ds = &s->sets.v[set];
	if (ds->tp_max % tp != 0 || ds->n % tp != 0)
		return false;
	if (tp > 1) {
		if (s->constrained && !s->rt.can.tensor_parallel)
			return false;
		if (!s->groups->splittable[g] &&
		    !(s->constrained && !s->rt.can.per_stage_degrees))
			return false;
		if (units && units % tp != 0)
			return false;
	}
	if (!gl)
		return true;
	cp = 1u << gl->cp_log2;
	m = gl->micro_batches ? gl->micro_batches : 1;
	return ds->n / tp % cp == 0 &&
	       (int64_t)(ds->n / tp / cp) <= s->model->global_batch / m;
}

/* tp_space_default_sync's rule with its division. */
static enum tp_sync plain_sync(const struct tp_space *s, uint32_t set,
			       uint32_t tp)
{
	const struct tp_devset *ds = &s->sets.v[set];
	uint32_t dp = ds->n / (tp ? tp : 1);

	return ds->n_nodes > 1 && dp > ds->n_nodes ? TP_SYNC_HIERARCHICAL
						   : TP_SYNC_RING;
}

/* tp_space_tp_ok of (g, set, tp) under globals of several micro-batch
 * counts and context degrees, against the plain rule; counts the
 * answers. */
static void tp_ok_globals(const struct tp_space *sp, uint32_t g, uint32_t set,
			  uint32_t tp, uint64_t *yes, uint64_t *no)
{
	const uint32_t mbs[] = {0, 1, 2, 3, 5, 8, 64, 1000, 16384};

	for (uint32_t i = 0; i < sizeof(mbs) / sizeof(*mbs); i++)
		for (uint8_t cl = 0; cl < 4; cl++) {
			struct tp_globals gl;
			bool x;
			memset(&gl, 0, sizeof(gl));
			gl.micro_batches = mbs[i];
			gl.cp_log2 = cl;
			x = tp_space_tp_ok(sp, g, set, tp, &gl);
			/* ck_assert writes per call: assert only misses */
			if (x != plain_tp_ok(sp, g, set, tp, &gl))
				ck_abort_msg("g %u set %u tp %u m %u cp 2^%u "
					     "batch %lld",
					     g, set, tp, mbs[i], cl,
					     (long long)sp->model->global_batch);
			*yes += x;
			*no += !x;
		}
}

/* tp_space_tp_ok of every (group, set, tp) (a set and tps past the
 * ends too), without globals and with them, against the plain rule. */
static void tp_ok_all(const struct tp_space *sp, uint64_t *yes, uint64_t *no)
{
	for (uint32_t k = 0; k < sp->groups->n; k++)
		for (uint32_t set = 0; set <= sp->sets.n; set++)
			for (uint32_t tp = 0; tp <= 66; tp++) {
				bool a = tp_space_tp_ok(sp, k, set, tp, NULL);
				if (a != plain_tp_ok(sp, k, set, tp, NULL))
					ck_abort_msg("g %u set %u tp %u", k, set,
						     tp);
				if (a)
					tp_ok_globals(sp, k, set, tp, yes, no);
			}
}

/* Every (group, set, tp, globals) of a mixed cluster under no runtime,
 * megatron-core (one tp for all groups), ddp (no tp) and megatron-core
 * with per-stage degrees, at batches 64, 1, 7, 1536, 0 and -5: the
 * space's answers are the plain rule's; both answers occur.  Then
 * tp_space_apply's projection (runs of equal set and tp share one sync)
 * on random states: every group's sync is the plain rule's for its set
 * and tp. */
START_TEST(test_space_tp_rules)
{
	const char *specs[] = {"dgx-a100:2", "dgx1-v100:1", "l4-pcie:1",
			       "t4-pcie:2"};
	const int64_t batches[] = {64, 1, 7, 1536, 0, -5};
	struct tp_model m;
	struct tp_cluster c;
	struct tp_groups g;
	struct tp_space sp;
	struct tp_runtime rts[4];
	struct tp_error err;
	struct tp_rng rng;
	struct tp_decision *state;
	uint64_t yes = 0, no = 0, hier = 0;

	tp_test_gpt12(&m, &c, specs, 4);
	ck_assert_int_eq(tp_coarsen(&m, 0, &g, NULL), TP_OK);
	ck_assert_int_eq(tp_space_init(&sp, &m, &c, &g, NULL), TP_OK);
	ck_assert_int_eq(tp_runtime_find("none", &rts[0], &err), TP_OK);
	ck_assert_int_eq(tp_runtime_find("megatron-core", &rts[1], &err),
			 TP_OK);
	ck_assert_int_eq(tp_runtime_find("ddp", &rts[2], &err), TP_OK);
	rts[3] = rts[1];
	rts[3].can.per_stage_degrees = true;
	ck_assert(!rts[1].can.per_stage_degrees);
	for (uint32_t r = 0; r < 4; r++) {
		ck_assert_int_eq(tp_space_set_runtime(&sp, &rts[r], NULL),
				 TP_OK);
		for (uint32_t b = 0; b < sizeof(batches) / sizeof(*batches);
		     b++) {
			m.global_batch = batches[b];
			tp_ok_all(&sp, &yes, &no);
		}
	}
	m.global_batch = 64;
	ck_assert_msg(yes > 1000 && no > 1000, "%llu valid, %llu not",
		      (unsigned long long)yes, (unsigned long long)no);
	for (uint32_t set = 0; set < sp.sets.n; set++)
		for (uint32_t tp = 0; tp <= 66; tp++) {
			enum tp_sync x = tp_space_default_sync(&sp, set, tp);
			if (x != plain_sync(&sp, set, tp))
				ck_abort_msg("set %u tp %u", set, tp);
			hier += x == TP_SYNC_HIERARCHICAL;
		}
	ck_assert_uint_gt(hier, 0);
	/* the projection under per-stage degrees: random states, random
	   actions; runs of one set with different tps occur */
	ck_assert_int_eq(tp_space_set_runtime(&sp, &rts[3], NULL), TP_OK);
	state = calloc(g.n, sizeof(*state));
	ck_assert_ptr_nonnull(state);
	tp_rng_seed(&rng, 7);
	for (uint32_t it = 0; it < 4000; it++) {
		const uint16_t tps[] = {1, 2, 4, 8};
		struct tp_action a;
		uint32_t at = (uint32_t)tp_rng_below(&rng, g.n);
		uint32_t set = (uint32_t)tp_rng_below(&rng, sp.sets.n);
		for (uint32_t k = 0; k < g.n; k++) {
			if (k == 0 || tp_rng_below(&rng, 4) == 0)
				set = (uint32_t)tp_rng_below(&rng, sp.sets.n);
			state[k].set = set;
			state[k].tp = tps[tp_rng_below(&rng, 4)];
			state[k].sync = TP_SYNC_RING;
			state[k].recompute = 0;
		}
		memset(&a, 0, sizeof(a));
		a.d = state[tp_rng_below(&rng, g.n)];
		a.d.tp = tps[tp_rng_below(&rng, 4)];
		a.suffix = (uint8_t)tp_rng_below(&rng, 2);
		tp_space_apply(&sp, at, &a, NULL, state);
		for (uint32_t k = 0; k < g.n; k++)
			if (state[k].sync !=
			    plain_sync(&sp, state[k].set, state[k].tp))
				ck_abort_msg("step %u group %u", it, k);
	}
	free(state);
	tp_space_release(&sp);
	tp_groups_release(&g);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* tp_space_pipeline against its plain rule (a new stage on devices no
 * earlier stage marked) on random states of 1 to 5 runs on random sets
 * of sp; mark: zeroed, one byte per device; pipelines of 2 or more
 * stages and states that are none both occur. */
static void pipelines_plain(const struct tp_space *sp, uint8_t *mark)
{
	uint32_t K = sp->groups->n, nd = (uint32_t)sp->cluster->devices.n;
	struct tp_decision *dec = calloc(K, sizeof(*dec));
	struct tp_rng rng;
	uint32_t piped = 0, none = 0;

	ck_assert_ptr_nonnull(dec);
	tp_rng_seed(&rng, 11);
	for (uint32_t it = 0; it < 5000; it++) {
		uint32_t runs = 1 + (uint32_t)tp_rng_below(&rng, 5), set[5];
		uint32_t p = 0, cur = TP_NONE, want;
		bool ok = true;
		for (uint32_t r = 0; r < runs; r++)
			set[r] = (uint32_t)tp_rng_below(&rng, sp->sets.n);
		memset(mark, 0, nd);
		for (uint32_t k = 0; k < K; k++) {
			const uint32_t *d;
			dec[k].set = set[(uint64_t)k * runs / K];
			dec[k].tp = 1;
			if (k > 0 && dec[k].set == cur)
				continue;
			cur = dec[k].set;
			d = tp_space_set_devs(sp, cur);
			for (uint32_t i = 0; i < sp->sets.v[cur].n; i++)
				ok = ok && !mark[d[i]];
			for (uint32_t i = 0; i < sp->sets.v[cur].n; i++)
				mark[d[i]] = 1;
			p++;
		}
		want = ok && p >= 2 ? p : 0;
		if (tp_space_pipeline(sp, dec) != want)
			ck_abort_msg("step %u: %u stages, the plain rule %u",
				     it, tp_space_pipeline(sp, dec), want);
		piped += want > 0;
		none += want == 0 && p >= 2;
	}
	ck_assert_msg(piped > 100 && none > 100, "%u pipelines, %u not", piped,
		      none);
	memset(mark, 0, nd);
	free(dec);
}

/* tp_space_sets_meet (ranges, dense sets, merges) against marking one
 * set's devices and looking for the other's, for every pair of sets of
 * a cluster whose A100 nodes sit on both sides of a DGX-1 (sets that are
 * not dense, with meeting ranges); both answers occur, and disjoint
 * pairs with meeting ranges.  Then tp_space_pipeline, which asks it,
 * against marking devices (pipelines_plain). */
START_TEST(test_sets_meet)
{
	const char *specs[] = {"dgx-a100:1", "dgx1-v100:1", "dgx-a100:1"};
	struct tp_model m;
	struct tp_cluster c;
	struct tp_groups g;
	struct tp_space sp;
	struct tp_error err;
	uint8_t *mark;
	uint32_t meet = 0, apart = 0, hidden = 0;

	setenv("TAGPLAN_DATA", tp_data_file(""), 1);
	tp_model_init(&m);
	tp_cluster_init(&c);
	ck_assert_int_eq(tp_build_zoo("resnet50", 0, -1, &m, &err), TP_OK);
	ck_assert_msg(tp_build_topology(specs, 3, "ib-hdr", 1, &c, &err) ==
			  TP_OK,
		      "%s", err.msg);
	ck_assert_int_eq(tp_coarsen(&m, 0, &g, NULL), TP_OK);
	ck_assert_int_eq(tp_space_init(&sp, &m, &c, &g, NULL), TP_OK);
	mark = calloc(c.devices.n, 1);
	ck_assert_ptr_nonnull(mark);
	for (uint32_t a = 0; a < sp.sets.n; a++) {
		const uint32_t *da = tp_space_set_devs(&sp, a);
		for (uint32_t i = 0; i < sp.sets.v[a].n; i++)
			mark[da[i]] = 1;
		for (uint32_t b = 0; b < sp.sets.n; b++) {
			const uint32_t *db = tp_space_set_devs(&sp, b);
			const struct tp_devset *sa = &sp.sets.v[a],
					       *sb = &sp.sets.v[b];
			bool plain = false, x = tp_space_sets_meet(&sp, a, b);
			for (uint32_t i = 0; i < sb->n && !plain; i++)
				plain = mark[db[i]];
			if (x != plain)
				ck_abort_msg("sets %u (%s) and %u (%s)", a,
					     sa->label, b, sb->label);
			meet += x;
			apart += !x;
			hidden += !x && sa->lo <= sb->hi && sb->lo <= sa->hi;
		}
		for (uint32_t i = 0; i < sp.sets.v[a].n; i++)
			mark[da[i]] = 0;
	}
	ck_assert_msg(meet > 100 && apart > 100 && hidden > 10,
		      "%u meet, %u apart, %u apart in one range", meet, apart,
		      hidden);
	pipelines_plain(&sp, mark);
	free(mark);
	tp_space_release(&sp);
	tp_groups_release(&g);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

Suite *suite_caches(void)
{
	Suite *s = suite_create("caches");
	TCase *tc = tcase_create("caches");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_expert_index_cached);
	tcase_add_test(tc, test_op_classes);
	tcase_add_test(tc, test_partition_kept);
	tcase_add_test(tc, test_space_tp_rules);
	tcase_add_test(tc, test_sets_meet);
	suite_add_tcase(s, tc);
	return s;
}
