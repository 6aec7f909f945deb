/*
 * test_profile.c - profile tables (core/profile.h) against hand values,
 * and their file form (io model_io.c): the new fields round-trip, bad
 * points are refused with their place, an old one-point file means what
 * it meant.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/profile.h"
#include "core/strbuf.h"
#include "io/io.h"
#include "io/json.h"
#include "search/planner.h"
#include "sim/sim.h"
#include "util.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-12)

/* One op "x" with the points pts[0..n) of type "A" (and one of "B"). */
static void table_model(struct tp_model *m, const struct tp_profile *pts,
			uint32_t n)
{
	struct tp_op op = tp_op_default();
	struct tp_error err;
	struct tp_profile other = {"B", 1, 9, 9, 0, 0, 0, 0, 0, 0};
	uint32_t idx;

	tp_model_init(m);
	m->global_batch = 8;
	op.name = "x";
	op.kind = TP_OP_MATMUL;
	op.tp_split = TP_SPLIT_COLUMN;
	op.flop = 1e9;
	ck_assert_int_eq(tp_model_add_op(m, &op, &idx, &err), TP_OK);
	ck_assert_int_eq(tp_model_add_profile(m, idx, &other, &err), TP_OK);
	for (uint32_t k = 0; k < n; k++)
		ck_assert_int_eq(tp_model_add_profile(m, idx, &pts[k], &err),
				 TP_OK);
	ck_assert_int_eq(tp_model_finalize(m, &err), TP_OK);
}

static enum tp_profile_how at(const struct tp_model *m, double b, uint32_t tp,
			      bool divides, struct tp_profile_at *pa)
{
	uint32_t idx[16], n = tp_profile_table(m, 0, "A", idx);

	ck_assert_uint_gt(n, 0);
	return tp_profile_eval(m, idx, n, b, tp, divides, pa);
}

/* A 2 x 3 table given out of order: measured, interpolated in the batch
 * and in 1/tp, extrapolated beyond, against values worked by hand. */
START_TEST(test_profile_table_hand)
{
	const unsigned O = TP_PROFILE_HAS_OPTIMIZER, C = TP_PROFILE_HAS_TP_COMM;
	const struct tp_profile pts[] = {
		{"A", 4, 0.9, 1.8, 4, 0, 0, 0, 0, 0},
		{"A", 4, 3, 6, 1, O, 0, 0.2, 0, 0},
		{"A", 1, 1, 2, 1, O, 0, 0.2, 0, 0},
		{"A", 1, 0.6, 1.2, 2, O | C, 0.05, 0.1, 0, 0},
		{"A", 4, 1.6, 3.2, 2, O | C, 0.2, 0.1, 0, 0},
		{"A", 1, 0.4, 0.8, 4, 0, 0, 0, 0, 0},
	};
	struct tp_model m;
	struct tp_profile_at pa;
	uint32_t idx[16], n;

	table_model(&m, pts, 6);
	n = tp_profile_table(&m, 0, "A", idx);
	ck_assert_uint_eq(n, 6);
	/* sorted by (tp, batch); "B"'s point is not in A's table */
	ck_assert(m.profiles.v[idx[0]].batch == 1 &&
		  m.profiles.v[idx[0]].tp == 1);
	ck_assert(m.profiles.v[idx[5]].batch == 4 &&
		  m.profiles.v[idx[5]].tp == 4);

	ck_assert_int_eq(at(&m, 1, 1, true, &pa), TP_PROFILE_MEASURED);
	ck_assert(pa.forward_s == 1 && pa.backward_s == 2);
	ck_assert(pa.has == O && pa.optimizer_s == 0.2);

	/* batch 2 between 1 and 4: a third of the way */
	ck_assert_int_eq(at(&m, 2, 1, true, &pa), TP_PROFILE_INTERPOLATED);
	ck_assert_msg(NEAR(pa.forward_s, 1 + (3 - 1) / 3.0), "%.17g",
		      pa.forward_s);
	ck_assert(NEAR(pa.backward_s, 2 + (6 - 2) / 3.0));
	ck_assert(NEAR(pa.optimizer_s, 0.2)); /* no batch dependence */
	ck_assert_int_eq(at(&m, 2, 2, true, &pa), TP_PROFILE_INTERPOLATED);
	ck_assert(NEAR(pa.forward_s, 0.6 + 1.0 / 3));
	ck_assert(pa.has == (O | C) && NEAR(pa.tp_comm_s, 0.05 + 0.15 / 3));

	/* tp 3 between 2 and 4, linear in 1/tp: w = (1/2 - 1/3) / (1/4) */
	ck_assert_int_eq(at(&m, 1, 3, true, &pa), TP_PROFILE_INTERPOLATED);
	ck_assert_msg(NEAR(pa.forward_s, 0.6 / 3 + 0.4 * 2 / 3), "%.17g",
		      pa.forward_s);
	ck_assert(pa.has == 0); /* tp 4 measured neither figure */

	/* beyond the batches: linear from the largest */
	ck_assert_int_eq(at(&m, 8, 1, true, &pa), TP_PROFILE_EXTRAPOLATED);
	ck_assert(NEAR(pa.forward_s, 6) && NEAR(pa.backward_s, 12));
	/* beyond the degrees: 1/tp from tp 4 when tp divides the op ... */
	ck_assert_int_eq(at(&m, 8, 8, true, &pa), TP_PROFILE_EXTRAPOLATED);
	ck_assert(NEAR(pa.forward_s, 0.9 * 8 / 4 / 2));
	/* ... and the tp-4 time when it does not */
	ck_assert_int_eq(at(&m, 1, 8, false, &pa), TP_PROFILE_EXTRAPOLATED);
	ck_assert(NEAR(pa.forward_s, 0.4));
	/* no tp communication is extrapolated in tp; the optimizer is /tp */
	ck_assert_int_eq(at(&m, 4, 1, true, &pa), TP_PROFILE_MEASURED);
	tp_model_release(&m);
}
END_TEST

/* One point of tp 1, the profile of old files: samples / batch / tp, to
 * the bit, wherever it is read. */
START_TEST(test_profile_one_point)
{
	const struct tp_profile pt = {"A", 3, 0.7, 1.3, 0, 0, 0, 0, 0, 0};
	const double b[] = {1, 3, 5, 7.5, 1024};
	const uint32_t tps[] = {1, 2, 3, 8};
	struct tp_model m;
	struct tp_profile_at pa;

	table_model(&m, &pt, 1);
	for (size_t i = 0; i < 5; i++)
		for (size_t k = 0; k < 4; k++) {
			double div = tps[k], scale = b[i] / 3 / div;
			at(&m, b[i], tps[k], true, &pa);
			ck_assert(pa.forward_s == 0.7 * scale);
			ck_assert(pa.backward_s == 1.3 * scale);
			at(&m, b[i], tps[k], false, &pa);
			ck_assert(pa.forward_s == 0.7 * (b[i] / 3 / 1));
		}
	ck_assert_int_eq(at(&m, 3, 1, true, &pa), TP_PROFILE_MEASURED);
	ck_assert_int_eq(at(&m, 3, 2, true, &pa), TP_PROFILE_EXTRAPOLATED);
	tp_model_release(&m);
}
END_TEST

static const char *model_text(const char *profile)
{
	static char buf[2048];

	snprintf(buf, sizeof(buf),
		 "{\"format\": \"tagplan-model/1\", \"name\": \"p\", "
		 "\"global_batch_size\": 8, \"dtype\": \"fp32\", \"optimizer\": \"adam\", \"ops\": [{\"name\": \"in\", "
		 "\"kind\": \"input\", \"forward_flop_per_sample\": 0, "
		 "\"parameter_bytes\": 0, \"output_bytes_per_sample\": 4}, "
		 "{\"name\": \"x\", \"kind\": \"matmul\", "
		 "\"forward_flop_per_sample\": 1e6, \"parameter_bytes\": 64, "
		 "\"output_bytes_per_sample\": 4, \"profile\": [%s]}], "
		 "\"edges\": [{\"from\": \"in\", \"to\": \"x\", "
		 "\"bytes_per_sample\": 4}]}",
		 profile);
	return buf;
}

/* The new fields load and write back unchanged. */
START_TEST(test_profile_file_roundtrip)
{
	const char *text = model_text(
	    "{\"device_type\": \"A\", \"batch\": 2, \"forward_s\": 0.1, "
	    "\"backward_s\": 0.2, \"tp\": 4, \"tp_comm_s\": 0.03, "
	    "\"optimizer_s\": 0.004, \"activation_bytes\": 5e6, "
	    "\"state_bytes\": 7e8}, {\"device_type\": \"A\", \"batch\": 2, "
	    "\"forward_s\": 0.3, \"backward_s\": 0.6}");
	struct tp_model a, b;
	struct tp_error err;
	struct tp_strbuf sb;
	const struct tp_profile *p;

	tp_model_init(&a);
	tp_model_init(&b);
	tp_error_clear(&err);
	ck_assert_msg(tp_model_load("p", text, strlen(text), NULL, &a, &err) ==
			      TP_OK,
		      "%s %s", err.path, err.msg);
	p = &a.profiles.v[0];
	ck_assert_uint_eq(a.profiles.n, 2);
	ck_assert(p->tp == 4 && p->tp_comm_s == 0.03 &&
		  p->optimizer_s == 0.004 && p->activation_bytes == 5e6 &&
		  p->state_bytes == 7e8);
	ck_assert_uint_eq(p->has, TP_PROFILE_HAS_TP_COMM |
				      TP_PROFILE_HAS_OPTIMIZER |
				      TP_PROFILE_HAS_ACTIVATION |
				      TP_PROFILE_HAS_STATE);
	ck_assert(a.profiles.v[1].tp == 1 && a.profiles.v[1].has == 0);
	tp_strbuf_init(&sb);
	tp_model_write(&a, &sb);
	ck_assert_msg(tp_model_load("p", sb.buf, sb.len, NULL, &b, &err) ==
			      TP_OK,
		      "%s %s", err.path, err.msg);
	for (size_t k = 0; k < 2; k++)
		ck_assert(memcmp(&a.profiles.v[k].batch, &b.profiles.v[k].batch,
				 sizeof(*p) - offsetof(struct tp_profile,
						       batch)) == 0);
	tp_strbuf_release(&sb);
	tp_model_release(&a);
	tp_model_release(&b);
}
END_TEST

/* Bad points: the error names the place and the fix. */
START_TEST(test_profile_file_errors)
{
	static const struct {
		const char *profile, *path, *msg;
	} cases[] = {
		{"{\"device_type\": \"A\", \"batch\": 2, \"forward_s\": 1, "
		 "\"backward_s\": 2, \"tp\": 2}, {\"device_type\": \"A\", "
		 "\"batch\": 2, \"forward_s\": 1, \"backward_s\": 2, \"tp\": 2}",
		 "$.ops[1].profile[1].batch", "give each (device_type, batch, tp)"},
		{"{\"device_type\": \"A\", \"batch\": 2, \"forward_s\": 1, "
		 "\"backward_s\": 2, \"tp\": 0}",
		 "$.ops[1].profile[0].tp", ""},
		{"{\"device_type\": \"A\", \"batch\": 2, \"forward_s\": 1, "
		 "\"backward_s\": 2, \"tp_comm_s\": -1}",
		 "$.ops[1].profile[0].tp_comm_s", ""},
		{"{\"device_type\": \"A\", \"batch\": 2, \"forward_s\": 1, "
		 "\"backward_s\": 2, \"state_bytes\": 1e300}",
		 "$.ops[1].profile[0].state_bytes", ""},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *text = model_text(cases[i].profile);
		struct tp_model m;
		struct tp_error err;

		tp_model_init(&m);
		tp_error_clear(&err);
		ck_assert_int_ne(tp_model_load("p", text, strlen(text), NULL,
					       &m, &err),
				 TP_OK);
		ck_assert_msg(strstr(err.path, cases[i].path) != NULL,
			      "case %zu: path %s, message %s", i, err.path,
			      err.msg);
		ck_assert_msg(strstr(err.msg, cases[i].msg) != NULL,
			      "case %zu: %s", i, err.msg);
		tp_model_release(&m);
	}
}
END_TEST


/* A chain of 4 column-split matmuls (1 TFLOP forward, 2 backward per
 * sample) profiled on A100-PCIe-80GB at batches 1 and 4, tp 1 and 2,
 * `speedup` times faster than the type's fp32 peak (peak FLOP/s). */
static void fast_model(struct tp_model *m, double peak, double speedup)
{
	struct tp_strbuf sb;
	struct tp_error err;

	tp_strbuf_init(&sb);
	tp_strbuf_adds(&sb, "{\"format\": \"tagplan-model/1\", \"name\": "
			    "\"fast\", \"global_batch_size\": 64, \"dtype\": "
			    "\"fp32\", \"optimizer\": \"adam\", \"ops\": "
			    "[{\"name\": \"in\", \"kind\": \"input\", "
			    "\"forward_flop_per_sample\": 0, "
			    "\"parameter_bytes\": 0, "
			    "\"output_bytes_per_sample\": 4096}");
	for (int i = 0; i < 4; i++) {
		tp_strbuf_addf(&sb,
			       ", {\"name\": \"x%d\", \"kind\": \"matmul\", "
			       "\"tp_split\": \"column\", \"layer\": %d, "
			       "\"forward_flop_per_sample\": 1e12, "
			       "\"backward_flop_per_sample\": 2e12, "
			       "\"parameter_bytes\": 1e8, "
			       "\"output_bytes_per_sample\": 4096, "
			       "\"profile\": [",
			       i, i);
		for (int b = 1, k = 0; b <= 4; b *= 4)
			for (int t = 1; t <= 2; t++, k++)
				tp_strbuf_addf(
				    &sb,
				    "%s{\"device_type\": \"A100-PCIe-80GB\", "
				    "\"batch\": %d, \"tp\": %d, \"forward_s\": "
				    "%.17g, \"backward_s\": %.17g}",
				    k ? ", " : "", b, t,
				    1e12 * b / t / (speedup * peak),
				    2e12 * b / t / (speedup * peak));
		tp_strbuf_adds(&sb, "]}");
	}
	tp_strbuf_adds(&sb, "], \"edges\": [");
	for (int i = 0; i < 4; i++) {
		char from[8];
		snprintf(from, sizeof(from), i ? "x%d" : "in", i - 1);
		tp_strbuf_addf(&sb,
			       "%s{\"from\": \"%s\", \"to\": \"x%d\", "
			       "\"bytes_per_sample\": 4096}",
			       i ? ", " : "", from, i);
	}
	tp_strbuf_adds(&sb, "]}");
	tp_model_init(m);
	tp_error_clear(&err);
	ck_assert_msg(tp_model_load("fast", sb.buf, sb.len, NULL, m, &err) ==
			      TP_OK,
		      "%s %s", err.path, err.msg);
	tp_strbuf_release(&sb);
}

/* Profiles 3x faster than the catalogue peak (Sailor's A100 layers beat
 * the fp32 peak): the plan's MFU stays at most 1, the lower bound at most
 * its iteration time, the type's speed is the profiled rate, and the
 * census counts every op.  Fails with MFU over the catalogue peak and
 * the catalogue bound (MFU 3.0, bound 4.9 s for a 1.6 s plan). */
START_TEST(test_profile_summary_honest)
{
	struct tp_cluster c;
	struct tp_model m;
	struct tp_error err;
	struct tp_planner_options po;
	struct tp_planner *pl;
	struct tp_search_options o;
	struct tp_search_result r;
	struct tp_sim_scratch *s;
	uint32_t n[TP_PROFILE_HOW_COUNT], sum = 0;
	double peak;
	bool prof;

	tp_cluster_init(&c);
	tp_error_clear(&err);
	ck_assert_int_eq(tp_topology_load_file(
				 tp_data_file("topologies/a100-pcie.json"),
				 NULL, &c, &err),
			 TP_OK);
	peak = c.types.v[c.devices.v[0].type].peak_flops[TP_DTYPE_FP32];
	ck_assert(peak > 0);
	fast_model(&m, peak, 3);
	tp_planner_options_default(&po);
	pl = tp_planner_new(&m, &c, &po, &err);
	ck_assert_ptr_nonnull(pl);
	ck_assert(NEAR(tp_sim_type_speed(tp_planner_sim(pl),
					 c.devices.v[0].type, &prof) /
			       (3 * peak),
		       1));
	ck_assert(prof);
	tp_search_options_default(&o);
	o.threads = 1;
	o.playouts = 200;
	o.time_limit_s = 0;
	tp_search_result_init(&r);
	ck_assert_int_eq(tp_planner_run(pl, &o, &r, &err), TP_OK);
	ck_assert(r.have_plan && r.report.feasible);
	ck_assert_msg(r.report.mfu <= 1 + 1e-12 && r.report.mfu > 0.2,
		      "MFU %g", r.report.mfu);
	ck_assert_msg(r.lower_bound_s <= r.report.iteration_time_s &&
			      r.lower_bound_s > 0,
		      "bound %g s, plan %g s", r.lower_bound_s,
		      r.report.iteration_time_s);
	s = tp_sim_scratch_new(tp_planner_sim(pl));
	ck_assert_int_eq(tp_sim_profile_census(tp_planner_sim(pl), &r.plan, s,
					       n, &err),
			 TP_OK);
	for (int h = 0; h < TP_PROFILE_HOW_COUNT; h++)
		sum += n[h];
	ck_assert_uint_eq(sum, 4);
	ck_assert_uint_eq(n[TP_PROFILE_NONE], 0);
	tp_sim_scratch_free(s);
	tp_search_result_release(&r);
	tp_planner_free(pl);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* Sailor's per-layer times (tests/data/sailor: made-up figures in its
 * layout) imported: at every measured (micro-batch, tp) point the ops of
 * each layer sum to the layer's forward, backward and optimizer times;
 * the GPU tagplan has no type for is dropped and said; an unknown model
 * names the ones there are.  Fails with the blocks shifted by one layer
 * in sailor.c's layer_map: layer 1's forward 3 ms against Sailor's 2. */
START_TEST(test_profile_sailor_import)
{
	const char *dir = tp_test_path("data/sailor");
	struct tp_model m;
	struct tp_strbuf notes;
	struct tp_error err;
	int32_t lay[1024];
	bool seen = false;
	char path[600];
	char *text;
	size_t len;
	struct tp_json_doc doc;

	tp_strbuf_init(&notes);
	tp_error_clear(&err);
	ck_assert_msg(tp_sailor_import_model(dir, "TINY", &m, &notes, &err) ==
			      TP_OK,
		      "%s", err.msg);
	ck_assert_msg(strstr(tp_strbuf_cstr(&notes), "GH-96 dropped") != NULL,
		      "%s", tp_strbuf_cstr(&notes));
	ck_assert_ptr_null(strstr(tp_strbuf_cstr(&notes), "cannot hold"));
	ck_assert_uint_lt(m.ops.n, 1024);
	for (size_t i = 0; i < m.ops.n; i++) {
		seen |= m.ops.v[i].layer >= 0;
		lay[i] = m.ops.v[i].layer >= 0 ? m.ops.v[i].layer + 1
			 : seen		       ? 3
						       : 0;
	}
	snprintf(path, sizeof(path), "%s/profiles/TINY/A100-40/profile.json",
		 dir);
	text = tp_test_read(path, &len);
	ck_assert_ptr_nonnull(text);
	memset(&doc, 0, sizeof(doc));
	ck_assert_int_eq(tp_json_parse(path, text, len, 0, 0, &doc, &err),
			 TP_OK);
	for (int mb = 1; mb <= 4; mb *= 2)
		for (uint32_t tp = 1; tp <= 2; tp++)
			for (int l = 0; l < 4; l++) {
				char k1[16], k2[16], k3[16];
				const struct tp_json *v;
				double sum[3] = {0, 0, 0};
				snprintf(k1, sizeof(k1), "%d", mb);
				snprintf(k2, sizeof(k2), "%u", tp);
				snprintf(k3, sizeof(k3), "%d", l);
				v = tp_json_get(
				    tp_json_get(tp_json_get(doc.root, k1), k2),
				    k3);
				for (uint32_t o = 0; o < m.ops.n; o++) {
					uint32_t idx[64], n;
					struct tp_profile_at pa;
					if (lay[o] != l ||
					    m.ops.v[o].kind == TP_OP_INPUT)
						continue;
					n = tp_profile_table(&m, o,
							     "A100-SXM4-40GB",
							     idx);
					ck_assert_uint_gt(n, 0);
					ck_assert_int_eq(
					    tp_profile_eval(
						&m, idx, n, mb, tp,
						m.ops.v[o].tp_split !=
						    TP_SPLIT_NONE,
						&pa),
					    TP_PROFILE_MEASURED);
					sum[0] += pa.forward_s;
					sum[1] += pa.backward_s;
					sum[2] += pa.optimizer_s;
				}
				for (int f = 0; f < 3; f++)
					ck_assert_msg(
					    fabs(sum[f] - v->items[f]->num) <=
						1e-12 * v->items[f]->num,
					    "mb %d tp %u layer %d figure %d: "
					    "%.9g, Sailor %.9g",
					    mb, tp, l, f, sum[f],
					    v->items[f]->num);
			}
	tp_json_doc_release(&doc);
	free(text);
	tp_model_release(&m);
	/* a head measured 1,000x faster than TINY's: noted (HEAD_CHECK in
	   io/sailor.c) */
	tp_strbuf_reset(&notes);
	ck_assert_int_eq(tp_sailor_import_model(dir, "TINYHEAD", &m, &notes,
						&err),
			 TP_OK);
	ck_assert_msg(strstr(tp_strbuf_cstr(&notes),
			     "TINYHEAD on A100-SXM4-40GB: the head") != NULL,
		      "%s", tp_strbuf_cstr(&notes));
	tp_model_release(&m);
	tp_strbuf_reset(&notes);
	ck_assert_int_eq(tp_sailor_import_model(dir, "OPT-350", &m, &notes,
						&err),
			 TP_EUSAGE);
	ck_assert_msg(strstr(err.msg, "TINY") != NULL, "%s", err.msg);
	tp_model_release(&m);
	tp_strbuf_release(&notes);
}
END_TEST

/* Sailor's cluster (tests/data/sailor: made-up figures in its layout):
 * row 0 of trace_tiny.csv, 6 A100-40 and 4 GH-96 in zone z1 with 4 GPUs
 * per node, is one node of 4 A100-SXM4-40GB and one of 2 (GH-96
 * dropped and said); inside a node the intra-node fit's maximum, 200
 * GB/s, latency 1 MB / 100 GB/s - 1 MB / 200 GB/s = 5 us; between nodes
 * 10 GB/s and 1 MB / 5 GB/s - 1 MB / 10 GB/s = 100 us.  A row over two
 * zones and a bad count are refused with their line and column, a
 * missing trace with its path and the traces the folder has.  Fails
 * with the NIC's latency halved (50 us between nodes). */
START_TEST(test_profile_sailor_cluster)
{
	const char *dir = tp_test_path("data/sailor");
	struct tp_cluster c;
	struct tp_strbuf notes;
	struct tp_error err;
	struct tp_route in, across;

	tp_strbuf_init(&notes);
	tp_error_clear(&err);
	tp_cluster_init(&c);
	ck_assert_msg(tp_sailor_import_cluster(dir, "tiny", 0, &c, &notes,
					       &err) == TP_OK,
		      "%s", err.msg);
	ck_assert_msg(strstr(tp_strbuf_cstr(&notes),
			     "GH-96_z1: 4 GPUs dropped") != NULL,
		      "%s", tp_strbuf_cstr(&notes));
	ck_assert_uint_eq(c.devices.n, 6);
	ck_assert_uint_eq(c.nodes.n, 2);
	for (uint32_t d = 0; d < 6; d++)
		ck_assert_str_eq(c.types.v[c.devices.v[d].type].name,
				 "A100-SXM4-40GB");
	tp_cluster_route(&c, 0, 1, &in);
	tp_cluster_route(&c, 0, 5, &across);
	ck_assert_double_eq_tol(in.bw_Bps, 200e9, 1);
	ck_assert_double_eq_tol(in.latency_s, 5e-6, 1e-12);
	ck_assert_double_eq_tol(across.bw_Bps, 10e9, 1);
	ck_assert_double_eq_tol(across.latency_s, 100e-6, 1e-12);
	tp_cluster_release(&c);
	tp_cluster_init(&c);
	ck_assert_int_eq(tp_sailor_import_cluster(dir, "tiny", 1, &c, &notes,
						  &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "zones z1 and z2") != NULL, "%s",
		      err.msg);
	tp_cluster_release(&c);
	tp_cluster_init(&c);
	ck_assert_int_eq(tp_sailor_import_cluster(dir, "tiny", 2, &c, &notes,
						  &err),
			 TP_EINPUT);
	ck_assert_int_eq(err.line, 4);
	ck_assert_int_eq(err.column, 9);
	ck_assert_msg(strstr(err.file, "trace_tiny.csv") != NULL, "%s",
		      err.file);
	tp_cluster_release(&c);
	/* a trace the folder does not have: the file, what it is and the
	   names it has (was "cannot open" alone, exit 3) */
	tp_error_clear(&err);
	tp_cluster_init(&c);
	ck_assert_int_eq(tp_sailor_import_cluster(dir, "huge", 0, &c, &notes,
						  &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.file, "configs/trace_huge.csv") != NULL,
		      "%s", err.file);
	ck_assert_msg(strstr(err.msg, "cluster trace") != NULL &&
			      strstr(err.msg, "(tiny)") != NULL,
		      "%s", err.msg);
	tp_cluster_release(&c);
	tp_strbuf_release(&notes);
}
END_TEST

Suite *suite_profile(void)
{
	Suite *s = suite_create("profile");
	TCase *tc = tcase_create("tables");

	tcase_add_test(tc, test_profile_table_hand);
	tcase_add_test(tc, test_profile_one_point);
	tcase_add_test(tc, test_profile_file_roundtrip);
	tcase_add_test(tc, test_profile_file_errors);
	tcase_add_test(tc, test_profile_summary_honest);
	tcase_add_test(tc, test_profile_sailor_import);
	tcase_add_test(tc, test_profile_sailor_cluster);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}
