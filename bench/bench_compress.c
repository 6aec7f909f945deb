/*
 * bench_compress.c - gradient compression: the speed of the exact
 * selection (min cut at 10,000 ops; target under 10 ms) and, on
 * communication-bound cases, the iteration time with compression off,
 * selected after the search (TAG-style) and selected inside it - both
 * ways: steered by the plans without compression with the answer chosen
 * by the compressed score (tagplan's default, never worse than post-hoc
 * by construction) and steered by the compressed score (no guarantee).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cluster.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/report.h"
#include "io/build.h"
#include "compress/mincut.h"
#include "search/search.h"
#include "compress/sfb.h"
#include "search/joint.h"
#include "sim/sim.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int add(struct tp_model *m, const char *name, enum tp_op_kind kind,
	       double params, double flop, double out, uint32_t *idx)
{
	struct tp_op op = tp_op_default();
	struct tp_error err;

	op.name = name;
	op.kind = kind;
	op.param_bytes = params;
	op.flop = flop;
	op.backward_flop = 2 * flop;
	op.out_bytes = out;
	op.mem_bytes = 2 * out;
	if (tp_model_add_op(m, &op, idx, &err)) {
		fprintf(stderr, "bench_compress: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static int link_ops(struct tp_model *m, uint32_t a, uint32_t b)
{
	return tp_model_add_edge(m, a, b, m->ops.v[a].out_bytes, NULL) ? -1
									  : 0;
}

/*
 * A synthetic transformer of `blocks` blocks of 10 ops (ln, q, k, v,
 * attention, projection, residual add, ln, fc1+gelu, fc2) - hidden h,
 * sequence s, fp32 - plus an input and a loss: 10 * blocks + 2 ops.
 * Layer widths vary by block so that the selection is not all-or-nothing.
 */
static int synthetic(struct tp_model *m, uint32_t blocks, double h, double s)
{
	uint32_t in, prev, ln1, q, k, v, att, proj, add1, ln2, fc1, fc2, loss;
	struct tp_error err;
	char nm[64];

	tp_model_init(m);
	m->global_batch = 16;
	m->seq_len = (int64_t)s;
	m->dtype = TP_DTYPE_FP32;
	if (add(m, "in", TP_OP_INPUT, 0, 0, s * h * 4, &in))
		return -1;
	prev = in;
	for (uint32_t b = 0; b < blocks; b++) {
		double w = h * (1 + (b % 4)), act = s * h * 4;

#define OP(var, kind, params, flop, out)                                      \
	do {                                                                  \
		snprintf(nm, sizeof(nm), "b%u." #var, b);                     \
		if (add(m, nm, kind, params, flop, out, &var))                \
			return -1;                                            \
	} while (0)
		OP(ln1, TP_OP_NORM, 2 * h * 4, 5 * s * h, act);
		OP(q, TP_OP_MATMUL, h * h * 4, 2 * s * h * h, act);
		OP(k, TP_OP_MATMUL, h * h * 4, 2 * s * h * h, act);
		OP(v, TP_OP_MATMUL, h * h * 4, 2 * s * h * h, act);
		OP(att, TP_OP_ATTENTION, 0, 4 * s * s * h, act);
		OP(proj, TP_OP_MATMUL, h * h * 4, 2 * s * h * h, act);
		OP(add1, TP_OP_ELEMENTWISE, 0, s * h, act);
		OP(ln2, TP_OP_NORM, 2 * h * 4, 5 * s * h, act);
		OP(fc1, TP_OP_MATMUL, h * w * 4, 2 * s * h * w, s * w * 4);
		OP(fc2, TP_OP_MATMUL, h * w * 4, 2 * s * h * w, act);
#undef OP
		if (link_ops(m, prev, ln1) || link_ops(m, ln1, q) ||
		    link_ops(m, ln1, k) || link_ops(m, ln1, v) ||
		    link_ops(m, q, att) || link_ops(m, k, att) ||
		    link_ops(m, v, att) || link_ops(m, att, proj) ||
		    link_ops(m, proj, add1) || link_ops(m, prev, add1) ||
		    link_ops(m, add1, ln2) || link_ops(m, ln2, fc1) ||
		    link_ops(m, fc1, fc2))
			return -1;
		prev = fc2;
	}
	if (add(m, "loss", TP_OP_LOSS, 0, s * h, 4, &loss) ||
	    link_ops(m, prev, loss))
		return -1;
	if (tp_model_finalize(m, &err)) {
		fprintf(stderr, "bench_compress: %s\n", err.msg);
		return -1;
	}
	return 0;
}

/* nodes x 1 V100-like GPU on a network of nic_bw bytes/s. */
static int star(struct tp_cluster *c, uint32_t nodes, double nic_bw)
{
	struct tp_device_type t;
	struct tp_error err;
	uint32_t ti, idx;

	tp_cluster_init(c);
	memset(&t, 0, sizeof(t));
	t.name = "V100-like";
	t.peak_flops[TP_DTYPE_FP32] = 15.7e12;
	t.memory_bytes = 16e9;
	t.memory_bw_Bps = 9e11;
	t.gemm_efficiency = 0.8;
	t.gemm_half_flop = 2e9;
	t.memory_efficiency = 0.8;
	t.kernel_overhead_s = 5e-6;
	if (tp_cluster_add_type(c, &t, &ti, &err))
		goto fail;
	for (uint32_t n = 0; n < nodes; n++) {
		char name[16];
		snprintf(name, sizeof(name), "n%u", n);
		if (tp_cluster_build_node(c,
					  &(struct tp_node_build){
					      name, ti, 1, TP_LINK_PCIE, 1.2e10,
					      2e-6, 1, nic_bw, 2.5e-5, false},
					  &idx, &err))
			goto fail;
	}
	if (tp_cluster_connect_star(c, 1, NULL, &err) ||
	    tp_cluster_finalize(c, &err))
		goto fail;
	return 0;
fail:
	fprintf(stderr, "bench_compress: %s\n", err.msg);
	return -1;
}

/* The min cut on the selection problem of a 10,000-op model. */
static int bench_mincut(void)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_sfb *sfb;
	struct tp_sfb_scratch *s;
	struct tp_sfb_costs k;
	struct tp_error err;
	uint32_t *ops, devs[4] = {0, 1, 2, 3}, n;
	double cut[21], build[21], sel[21], cold = 0;
	uint8_t *x;
	int reps = 21, rc = -1;

	if (synthetic(&m, 1000, 512, 32) || star(&c, 4, 1.25e9))
		return -1;
	n = (uint32_t)m.ops.n;
	ops = calloc(n, sizeof(*ops));
	x = calloc(n, 1);
	tp_plan_init(&p);
	tp_sfb_costs_init(&k);
	p.global_batch = m.global_batch;
	for (uint32_t i = 0; i < n; i++)
		ops[i] = i;
	if (!ops || !x ||
	    tp_plan_add_group_degrees(&p, ops, n, devs, 4,
				      &(struct tp_plan_degrees){4, 1, 1}, NULL,
				      &err))
		goto out;
	sfb = tp_sfb_new(&m, &c, NULL, &err);
	s = sfb ? tp_sfb_scratch_new(sfb) : NULL;
	if (!s)
		goto out_sfb;
	for (int r = 0; r < reps; r++) {
		struct tp_sfb_stats st;
		double t0 = now_s(), t1, t2, v;

		if (tp_sfb_group_costs(sfb, &p, 0, TP_LOSSY_NONE, 0, s, &k,
				       &err))
			goto out_sfb;
		t1 = now_s();
		if (tp_sfb_solve(&k, s, x, &v, &err))
			goto out_sfb;
		t2 = now_s();
		build[r] = t1 - t0;
		cut[r] = t2 - t1;
		if (tp_sfb_select(sfb, &p, s, &st, &err))
			goto out_sfb;
		sel[r] = st.solve_s;
		if (r == 0) {
			uint32_t chosen = 0;
			for (size_t i = 0; i < k.cands.n; i++)
				chosen += x[i];
			printf("selection problem: %u ops, %zu candidates, "
			       "%zu activations, %zu reader arcs; %u "
			       "selected, proxy gain %.4f s of %.4f s sync\n",
			       n, k.cands.n, k.tensors.n, k.readers.n, chosen,
			       -v, k.sync_s);
		}
	}
	cold = cut[0];
	qsort(cut, (size_t)reps, sizeof(double), cmp_double);
	qsort(build, (size_t)reps, sizeof(double), cmp_double);
	qsort(sel, (size_t)reps, sizeof(double), cmp_double);
	printf("min cut, 10,000-op model: median %.2f ms, first (cold "
	       "buffers) %.2f ms, max %.2f ms (target < 10 ms) %s\n",
	       1e3 * cut[reps / 2], 1e3 * cold, 1e3 * cut[reps - 1],
	       cut[reps / 2] < 0.010 ? "ok" : "MISSED");
	printf("cost figures (routes, compute): median %.2f ms; whole "
	       "selection's cuts: median %.2f ms\n",
	       1e3 * build[reps / 2], 1e3 * sel[reps / 2]);
	printf("(the first solve touches its buffers for the first time: "
	       "about 1000 page faults, slow on some VMs; a search reuses "
	       "one scratch per thread)\n");
	rc = 0;
out_sfb:
	if (rc)
		fprintf(stderr, "bench_compress: %s\n", err.msg);
	tp_sfb_scratch_free(s);
	tp_sfb_free(sfb);
out:
	tp_sfb_costs_release(&k);
	tp_plan_release(&p);
	free(ops);
	free(x);
	tp_cluster_release(&c);
	tp_model_release(&m);
	return rc;
}

/* --- communication-bound cases ----------------------------------------- */

struct bcase {
	const char *model;
	const char *specs[2];
	int n_specs;
	const char *net;
	const char *label;
};

static const struct bcase cases[] = {
	{"vgg19", {"v100-nvlink:2"}, 1, "10gbe", "2 V100 servers"},
	{"vgg19", {"v100-nvlink:2"}, 1, "25gbe", "2 V100 servers"},
	{"vgg19", {"v100-nvlink:2", "1080ti-pcie:2"}, 2, "10gbe",
	 "2 V100 + 2 1080Ti servers"},
	{"vgg19", {"v100-nvlink:2", "1080ti-pcie:2"}, 2, "25gbe",
	 "2 V100 + 2 1080Ti servers"},
	{"transformer", {"v100-nvlink:2"}, 1, "10gbe", "2 V100 servers"},
	{"transformer", {"v100-nvlink:2"}, 1, "25gbe", "2 V100 servers"},
	{"transformer", {"v100-nvlink:2", "1080ti-pcie:2"}, 2, "10gbe",
	 "2 V100 + 2 1080Ti servers"},
	{"transformer", {"v100-nvlink:2", "1080ti-pcie:2"}, 2, "25gbe",
	 "2 V100 + 2 1080Ti servers"},
};

static uint32_t sfb_ops(const struct tp_plan *p)
{
	return (uint32_t)p->sfb.n;
}

static double report_time(const struct tp_report *r)
{
	return r->feasible ? r->iteration_time_s : INFINITY;
}

static uint64_t bench_seed = 1;
static bool bench_bound = true;

static int search(const struct tp_model *m, const struct tp_cluster *c,
		  const struct tp_sim *sim, const struct tp_evaluator *ev,
		  enum tp_compression comp, uint64_t playouts,
		  struct tp_search_result *res)
{
	struct tp_search_options o;
	struct tp_error err;

	tp_search_options_default(&o);
	o.seed = bench_seed;
	o.threads = 1;
	o.playouts = playouts;
	o.compression = comp;
	o.bound_sim = bench_bound ? sim : NULL; /* on in tagplan plan */
	tp_search_result_init(res);
	if (tp_search_run(m, c, ev, &o, res, &err) || !res->have_plan) {
		fprintf(stderr, "bench_compress: search: %s\n", err.msg);
		return -1;
	}
	return 0;
}

struct bres {
	double off, post, joint, steered;
	bool same; /* joint followed the trajectory of off */
};

/* exact comparisons: the guarantee is exact, not within a tolerance */
static bool target_met(const struct bres *r)
{
	return r->joint <= r->post && r->post <= r->off;
}

static int bench_case(const struct bcase *bc, uint64_t playouts, bool print,
		      struct bres *res)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_error err;
	struct tp_sim_options so;
	struct tp_sim *sim = NULL;
	struct tp_sim_scratch *ss = NULL;
	const struct tp_sfb *sfb = NULL;
	struct tp_sfb_scratch *s = NULL;
	struct tp_search_simeval se;
	struct tp_sfb_joint j, jc;
	struct tp_evaluator plain, jev, cev;
	struct tp_search_result off, jt, jct;
	struct tp_plan post;
	struct tp_report rpost;
	struct tp_sfb_stats st;
	double t_off, t_post, t_joint, t_steer, w0, w_off, w_joint;
	int rc = -1;

	tp_model_init(&m);
	tp_cluster_init(&c);
	tp_plan_init(&post);
	tp_report_init(&rpost);
	tp_search_result_init(&off);
	tp_search_result_init(&jt);
	tp_search_result_init(&jct);
	if (tp_build_zoo(bc->model, 0, -1, &m, &err) ||
	    tp_build_topology(bc->specs, bc->n_specs, bc->net, 1, &c, &err))
		goto fail;
	tp_sim_options_default(&so);
	sim = tp_sim_new(&m, &c, &so, &err);
	if (!sim)
		goto fail;
	ss = tp_sim_scratch_new(sim);
	if (!ss)
		goto fail;
	/* the simulator's own instance: its cost figures are the
	   simulator's */
	sfb = tp_sim_sfb(sim);
	s = tp_sfb_scratch_new(sfb);
	if (!s)
		goto fail;
	tp_search_sim_evaluator(&se, sim, NULL, &plain);
	tp_sfb_joint_evaluator(&j, sfb, &plain, &jev);
	tp_sfb_joint_evaluator_steer(&jc, sfb, &plain,
				     TP_SFB_STEER_COMPRESSED, &cev);

	/* off: the search without compression */
	w0 = now_s();
	if (search(&m, &c, sim, &plain, TP_COMPRESSION_OFF, playouts, &off))
		goto out;
	w_off = now_s() - w0;
	t_off = report_time(&off.report);
	/* post-hoc (TAG): that plan, then the selection */
	if (tp_plan_copy(&post, &off.plan, &err))
		goto fail;
	post.compression = TP_COMPRESSION_LOSSLESS;
	if (tp_sfb_simulate(sfb, sim, &post, s, ss, &rpost, &st, &err))
		goto fail;
	t_post = report_time(&rpost);
	/* joint: the selection inside the search's scoring, steered by the
	   plans without compression (tagplan's default) */
	w0 = now_s();
	if (search(&m, &c, sim, &jev, TP_COMPRESSION_LOSSLESS, playouts, &jt))
		goto out;
	w_joint = now_s() - w0;
	t_joint = report_time(&jt.report);
	/* ... and steered by the compressed score */
	if (search(&m, &c, sim, &cev, TP_COMPRESSION_LOSSLESS, playouts,
		   &jct))
		goto out;
	t_steer = report_time(&jct.report);
	/* the same trajectory as the search without compression: same
	   counters (each evaluation of the joint search simulates both
	   variants but counts once) */
	res->same = jt.playouts == off.playouts &&
		    jt.evaluations == off.evaluations &&
		    jt.simulations == off.simulations &&
		    jt.bounded == off.bounded && jt.rounds == off.rounds;
	res->off = t_off;
	res->post = t_post;
	res->joint = t_joint;
	res->steered = t_steer;
	if (print)
		printf("%-11s %-27s %-5s %8.4f %8.4f %8.4f %8.4f %5.3f %5.3f "
		       "%5.3f %3u/%-3u %3u %3u %5.1f %5.1f %s\n",
		       bc->model, bc->label, bc->net, t_off, t_post, t_joint,
		       t_steer, t_off / t_post, t_post / t_joint,
		       t_post / t_steer, sfb_ops(&post), st.ops_selected,
		       sfb_ops(&jt.plan), sfb_ops(&jct.plan), w_off, w_joint,
		       target_met(res) ? "ok" : "MISSED");
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "bench_compress: %s: %s\n", bc->model, err.msg);
out:
	tp_search_result_release(&off);
	tp_search_result_release(&jt);
	tp_search_result_release(&jct);
	tp_report_release(&rpost);
	tp_plan_release(&post);
	tp_sfb_scratch_free(s);
	tp_sim_scratch_free(ss);
	tp_sim_free(sim);
	tp_cluster_release(&c);
	tp_model_release(&m);
	return rc;
}

/* All cases over seeds 1..seeds; returns the runs where joint was slower
 * than post-hoc or post-hoc slower than off (-1: failure). */
static int run_all(uint64_t playouts, uint64_t seeds)
{
	enum { NC = sizeof(cases) / sizeof(cases[0]) };
	struct bres r;
	double lpj[NC] = {0}, lop[NC] = {0}, lps[NC] = {0}, worst[NC],
	       worst_s[NC], all_pj = 0, all_ps = 0, all_js = 0;
	int miss[NC] = {0}, miss_s[NC] = {0}, misses = 0, misses_s = 0,
	    runs = 0, same = 0, jbetter = 0, sbetter = 0;

	printf("\niteration time (s, simulated) with compression off, "
	       "selected after the search (TAG-style post-hoc) and inside "
	       "it:\n  joint   = steered by the plans without compression, "
	       "answer chosen by the compressed score (tagplan's default);\n"
	       "  steered = steered by the compressed score (no guarantee).\n"
	       "search: %llu playouts, 1 thread, the simulator's lower bound "
	       "%s; table: seed 1;\ntarget: joint <= "
	       "post-hoc <= off (exact comparison)\n",
	       (unsigned long long)playouts,
	       bench_bound ? "on (as tagplan plan)" : "off");
	printf("%-11s %-27s %-5s %8s %8s %8s %8s %5s %5s %5s %7s %3s %3s "
	       "%5s %5s\n",
	       "model", "cluster", "net", "off", "post-hoc", "joint",
	       "steered", "o/p", "p/j", "p/s", "#p/sel", "#j", "#s", "s-off",
	       "s-jnt");
	for (size_t i = 0; i < NC; i++)
		worst[i] = worst_s[i] = INFINITY;
	for (uint64_t sd = 1; sd <= seeds; sd++) {
		bench_seed = sd;
		for (size_t i = 0; i < NC; i++) {
			if (bench_case(&cases[i], playouts, sd == 1, &r))
				return -1;
			lop[i] += log(r.off / r.post);
			lpj[i] += log(r.post / r.joint);
			lps[i] += log(r.post / r.steered);
			all_pj += log(r.post / r.joint);
			all_ps += log(r.post / r.steered);
			all_js += log(r.joint / r.steered);
			jbetter += r.joint < r.steered;
			sbetter += r.steered < r.joint;
			if (r.post / r.joint < worst[i])
				worst[i] = r.post / r.joint;
			if (r.post / r.steered < worst_s[i])
				worst_s[i] = r.post / r.steered;
			if (!target_met(&r)) {
				miss[i]++;
				misses++;
			}
			if (!(r.steered <= r.post)) {
				miss_s[i]++;
				misses_s++;
			}
			same += r.same;
			runs++;
		}
		if (sd == 1)
			printf("(o/p = off / post-hoc, p/j = post-hoc / joint, "
			       "p/s = post-hoc / steered: speed-ups; #p, #j, "
			       "#s = ops using SFB in the answer, sel = chosen "
			       "by the cut before the simulator's check; s-* = "
			       "search wall seconds)\n");
	}
	printf("\nover seeds 1..%llu (geometric means of the speed-ups; "
	       "worst = the smallest; missed = slower than post-hoc):\n",
	       (unsigned long long)seeds);
	printf("%-11s %-27s %-5s %7s %7s %7s %7s %7s %7s %7s\n", "model",
	       "cluster", "net", "o/p", "p/j", "worst", "missed", "p/s",
	       "worst", "missed");
	for (size_t i = 0; i < NC; i++)
		printf("%-11s %-27s %-5s %7.3f %7.3f %7.4f %4d/%-2llu %7.3f "
		       "%7.4f %4d/%llu\n",
		       cases[i].model, cases[i].label, cases[i].net,
		       exp(lop[i] / (double)seeds), exp(lpj[i] / (double)seeds),
		       worst[i], miss[i], (unsigned long long)seeds,
		       exp(lps[i] / (double)seeds), worst_s[i], miss_s[i],
		       (unsigned long long)seeds);
	printf("post-hoc never worse than off: by construction (kept only "
	       "when the simulator agrees).\n"
	       "joint vs post-hoc: geometric mean speed-up %.3f over %d "
	       "runs; both targets met in %d of them; the joint search "
	       "followed the trajectory of the search without compression "
	       "in %d of %d.\n"
	       "  Guarantee: joint <= post-hoc exactly when the search is "
	       "deterministic (1 thread, stopped by the playout limit, same "
	       "seed and options):\n  it visits the same plans as the "
	       "search without compression and answers with the best of "
	       "them by compressed score.\n  With a time limit, a signal or "
	       "several threads the two searches visit different plans "
	       "and it is not guaranteed.\n"
	       "steered vs post-hoc: geometric mean speed-up %.3f, slower "
	       "than post-hoc in %d of %d runs (no guarantee);\n"
	       "  steered vs joint: geometric mean %.3f (steered faster in "
	       "%d runs, joint faster in %d).\n",
	       exp(all_pj / runs), runs, runs - misses, same, runs,
	       exp(all_ps / runs), misses_s, runs, exp(all_js / runs),
	       sbetter, jbetter);
	return misses;
}

int main(int argc, char **argv)
{
	uint64_t playouts = argc > 1 ? strtoull(argv[1], NULL, 10) : 300;
	uint64_t seeds = argc > 2 ? strtoull(argv[2], NULL, 10) : 5;
	int m1, m2;

	if (seeds < 1)
		seeds = 1;
	printf("bench_compress: gradient compression (SFB by min cut)\n");
	if (bench_mincut())
		return 1;
	bench_bound = true;
	m1 = run_all(playouts, seeds);
	bench_bound = false;
	m2 = run_all(playouts, seeds);
	return m1 || m2 ? 1 : 0;
}
