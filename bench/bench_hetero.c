/*
 * bench_hetero.c - heterogeneous planning (issue 25), the anytime part:
 * on mixed clusters, for seeds 1..S and playout limits 100, 400, 1600
 * (one thread, guided by the shipped GNN as tagplan plan is), whether a
 * larger limit ever returned a slower plan (a violation of the anytime
 * property, search.c STAGE_FIRST), and how much doubling the default
 * 5,000-playout budget gains (seed 1; target: under 1%).
 *
 * Cases: GPT-3 1.3B and 13B (data/models) on dgx-a100:1 + v100-nvlink:4 +
 * l4-pcie:1 (25 GbE), GPT-2 XL (cases.h) on 2 DGX-1 + 4 GTX 1080 Ti
 * nodes (cases.h CL_MIX).  Runtime "none".  Environment:
 * TAGPLAN_BENCH_SEEDS (default 10), TAGPLAN_BENCH_FILTER (cases whose
 * name contains it), TAGPLAN_BENCH_NO_DOUBLE=1 skips the 5,000/10,000
 * runs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gnn/provider.h"
#include "io/build.h"
#include "io/io.h"
#include "search/planner.h"
#include "search/search.h"
#include "cases.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One search's answer time (INFINITY: nothing fits, NAN: error). */
static double search(struct tp_planner *pl, const struct tp_prior_provider *pp,
		     uint64_t seed, uint64_t playouts, double *secs)
{
	struct tp_search_options o;
	struct tp_search_result r;
	struct tp_error err;
	double t = NAN, t0 = now_s();

	tp_search_options_default(&o);
	o.threads = 1;
	o.seed = seed;
	o.prior = pp;
	o.playouts = playouts;
	o.time_limit_s = 0;
	tp_search_result_init(&r);
	if (tp_planner_run(pl, &o, &r, &err) == TP_OK && r.have_plan)
		t = r.report.feasible ? r.report.iteration_time_s : INFINITY;
	tp_search_result_release(&r);
	if (secs)
		*secs = now_s() - t0;
	return t;
}

struct hcase {
	const char *name, *model; /* model: data/models file or cases.h */
	int mix3;		  /* A100 + V100 + L4, else CL_MIX */
};

static const struct hcase cases[] = {
    {"gpt3-1.3b/a100+v100+l4", "models/gpt3-1.3b.json", 1},
    {"gpt3-13b/a100+v100+l4", "models/gpt3-13b.json", 1},
    {"gpt2-xl/v100+1080ti", "gpt2-xl", 0},
};

static enum tp_status load_case(const struct hcase *k, struct tp_model *m,
				struct tp_cluster *c, struct tp_error *err)
{
	static const char *const mix3[] = {"dgx-a100:1", "v100-nvlink:4",
					   "l4-pcie:1"};
	enum tp_status st;

	if (strncmp(k->model, "models/", 7) == 0) {
		char path[4096];
		tp_model_init(m);
		if ((st = tp_data_path(k->model, path, sizeof(path), err)) ||
		    (st = tp_model_load_file(path, NULL, m, err)))
			return st;
	} else if ((st = build_model(k->model, m, err))) {
		return st;
	}
	if (k->mix3) {
		tp_cluster_init(c);
		return tp_build_topology(mix3, 3, "25gbe", 1, c, err);
	}
	return build_cluster(CL_MIX, c, err);
}

int main(void)
{
	static const uint64_t budgets[] = {100, 400, 1600};
	const char *fs = getenv("TAGPLAN_BENCH_FILTER");
	const char *sv = getenv("TAGPLAN_BENCH_SEEDS");
	const char *nd = getenv("TAGPLAN_BENCH_NO_DOUBLE");
	int seeds = sv && *sv ? atoi(sv) : 10, total_viol = 0, runs = 0;
	struct tp_prior_provider pp;
	struct tp_gnn_prior *gp = NULL;
	struct tp_error err;

	if (tp_gnn_prior_load_default(NULL, &pp, &gp, &err)) {
		fprintf(stderr, "bench_hetero: %s\n", err.msg);
		return 1;
	}
	printf("anytime: %d seeds x playouts 100/400/1600, one thread, GNN; "
	       "violations = a larger limit returned a slower plan\n",
	       seeds);
	printf("%-26s %12s %12s %12s %6s | %12s %12s %8s %7s\n", "case",
	       "best@100", "best@400", "best@1600", "viol", "t@5000", "t@10000",
	       "gain", "s@5000");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct hcase *k = &cases[i];
		struct tp_model m;
		struct tp_cluster c;
		struct tp_planner *pl;
		double best[3] = {INFINITY, INFINITY, INFINITY};
		int viol = 0;

		if (fs && *fs && !strstr(k->name, fs))
			continue;
		if (load_case(k, &m, &c, &err) ||
		    !(pl = tp_planner_new(&m, &c, NULL, &err))) {
			printf("%-26s error: %s\n", k->name, err.msg);
			continue;
		}
		for (int s = 1; s <= seeds; s++) {
			double prev = INFINITY;
			for (int b = 0; b < 3; b++) {
				double t = search(pl, &pp, (uint64_t)s,
						  budgets[b], NULL);
				runs++;
				if (t < best[b])
					best[b] = t;
				if (!(t <= prev) && b > 0) {
					viol++;
					fprintf(stderr,
						"  %s seed %d: %llu playouts "
						"%.6g s > %.6g s\n",
						k->name, s,
						(unsigned long long)budgets[b],
						t, prev);
				}
				prev = t;
			}
		}
		total_viol += viol;
		printf("%-26s %12.6g %12.6g %12.6g %6d |", k->name, best[0],
		       best[1], best[2], viol);
		if (!(nd && *nd == '1')) {
			double s5, s10;
			double t5 = search(pl, &pp, 1, 5000, &s5);
			double t10 = search(pl, &pp, 1, 10000, &s10);
			printf(" %12.6g %12.6g %7.2f%% %6.1fs", t5, t10,
			       100 * (t5 - t10) / t5, s5);
		}
		printf("\n");
		fflush(stdout);
		tp_planner_free(pl);
		tp_cluster_release(&c);
		tp_model_release(&m);
	}
	printf("violations: %d of %d runs\n", total_viol, runs);
	tp_gnn_prior_free(gp);
	return 0;
}
