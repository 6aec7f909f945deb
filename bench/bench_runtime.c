/*
 * bench_runtime.c - what each runtime's limits cost (issue 23): for each
 * bench case (cases.h) and each shipped runtime that builds the model,
 * the best plan the search finds within the runtime's capabilities, the
 * best one without them (the same runtime's behaviour prices both: the
 * ratio is the capabilities' cost alone), and the unconstrained search of
 * runtime "none" (the simulator's defaults).
 *
 * Columns: per runtime, the constrained iteration time and, in
 * parentheses, constrained / unconstrained (1.00 = the limits cost
 * nothing; "-" = the runtime does not build the model, "OOM" = nothing it
 * runs fits).  Environment: TAGPLAN_BENCH_PLAYOUTS (per search, default
 * 1000; deterministic with one thread), TAGPLAN_BENCH_THREADS (default 1),
 * TAGPLAN_BENCH_FILTER (cases whose name contains it).  Uniform priors
 * (--no-gnn).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/runtime.h"
#include "io/io.h"
#include "search/planner.h"
#include "search/search.h"
#include "cases.h"

static double env_double(const char *name, double dflt)
{
	const char *v = getenv(name);
	return v && *v ? atof(v) : dflt;
}

/* One search: the answer's time (INFINITY when nothing fits, NAN on
 * error). */
static double search(const struct tp_model *m, const struct tp_cluster *c,
		     const struct tp_runtime *rt, bool unconstrained,
		     uint64_t playouts, uint32_t threads)
{
	struct tp_planner_options po;
	struct tp_planner *pl;
	struct tp_search_options o;
	struct tp_search_result r;
	struct tp_error err;
	double t = NAN;

	tp_planner_options_default(&po);
	po.runtime = *rt;
	pl = tp_planner_new(m, c, &po, &err);
	if (!pl)
		return NAN;
	tp_search_options_default(&o);
	o.threads = threads;
	o.seed = 1;
	o.playouts = playouts;
	o.time_limit_s = 0;
	o.unconstrained = unconstrained;
	tp_search_result_init(&r);
	if (tp_planner_run(pl, &o, &r, &err) == TP_OK && r.have_plan)
		t = r.report.feasible ? r.report.iteration_time_s : INFINITY;
	tp_search_result_release(&r);
	tp_planner_free(pl);
	return t;
}

int main(void)
{
	static const char *const models[] = {
	    "vgg19",	  "resnet50", "inception-v3", "transformer",
	    "bert-large", "gpt2-xl",  "llama-2-7b"};
	static const enum cl clusters[] = {CL_TAG, CL_MIX, CL_DGX};
	const char *filter = getenv("TAGPLAN_BENCH_FILTER");
	uint64_t playouts =
	    (uint64_t)env_double("TAGPLAN_BENCH_PLAYOUTS", 1000);
	uint32_t threads = (uint32_t)env_double("TAGPLAN_BENCH_THREADS", 1);
	char names[32][64];
	struct tp_runtime rts[32];
	size_t nr = tp_runtime_shipped(names, 32);
	double logsum[32] = {0};
	int count[32] = {0};
	struct tp_error err;

	for (size_t k = 0; k < nr; k++)
		if (tp_runtime_find(names[k], &rts[k], &err)) {
			fprintf(stderr, "bench_runtime: %s\n", err.msg);
			return 1;
		}
	printf("tagplan runtime benchmark: %llu playouts per search, %u "
	       "thread%s, uniform priors\n"
	       "per runtime: its best plan's iteration (s) and, in "
	       "parentheses, / the best plan without its limits under its "
	       "behaviour\n\n",
	       (unsigned long long)playouts, threads, threads == 1 ? "" : "s");
	printf("%-18s %9s", "case", "none");
	for (size_t k = 0; k < nr; k++)
		printf(" %18s", names[k]);
	printf("\n");
	for (size_t mi = 0; mi < sizeof(models) / sizeof(models[0]); mi++)
		for (size_t ci = 0; ci < sizeof(clusters) / sizeof(clusters[0]);
		     ci++) {
			struct tp_model m;
			struct tp_cluster c;
			struct tp_runtime none;
			char name[64];
			snprintf(name, sizeof(name), "%s/%s", models[mi],
				 cl_name[clusters[ci]]);
			if (filter && !strstr(name, filter))
				continue;
			tp_error_clear(&err);
			if (build_model(models[mi], &m, &err) ||
			    build_cluster(clusters[ci], &c, &err)) {
				printf("%-18s error: %s\n", name, err.msg);
				tp_model_release(&m);
				tp_cluster_release(&c);
				continue;
			}
			tp_runtime_none(&none);
			printf("%-18s %9.4g", name,
			       search(&m, &c, &none, false, playouts, threads));
			fflush(stdout);
			for (size_t k = 0; k < nr; k++) {
				double tc, tu;
				char cell[32];
				if (!tp_runtime_builds(&rts[k], &m, NULL, 0)) {
					printf(" %18s", "-");
					continue;
				}
				tc = search(&m, &c, &rts[k], false, playouts,
					    threads);
				tu = search(&m, &c, &rts[k], true, playouts,
					    threads);
				if (!isfinite(tc))
					snprintf(cell, sizeof(cell), "OOM");
				else if (isfinite(tu) && tu > 0) {
					snprintf(cell, sizeof(cell),
						 "%.4g (%.2f)", tc, tc / tu);
					logsum[k] += log(tc / tu);
					count[k]++;
				} else
					snprintf(cell, sizeof(cell), "%.4g",
						 tc);
				printf(" %18s", cell);
				fflush(stdout);
			}
			printf("\n");
			tp_model_release(&m);
			tp_cluster_release(&c);
		}
	printf("\ngeometric mean of constrained / unconstrained:\n");
	for (size_t k = 0; k < nr; k++)
		if (count[k])
			printf("  %-18s %.3f over %d cases\n", names[k],
			       exp(logsum[k] / count[k]), count[k]);
	return 0;
}
