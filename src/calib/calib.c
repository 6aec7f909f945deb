/*
 * calib.c - predict a measured run with the simulator (calib.h).
 */
#include "calib.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "core/plan.h"
#include "core/report.h"
#include "core/runtime.h"
#include "core/strategy.h"
#include "io/build.h"
#include "io/io.h"

static enum tp_status build_inputs(const struct tp_mrun *run,
				   struct tp_model *m, struct tp_cluster *c,
				   struct tp_error *err)
{
	struct tp_load_options lo;
	enum tp_status st;

	tp_load_options_default(&lo);
	if (run->zoo) {
		st = tp_build_zoo(run->zoo_name, run->batch, (int)run->dtype, m,
				  err);
	} else {
		struct tp_gpt_dims d;

		tp_gpt_dims_default(&d);
		d.hidden = run->hidden;
		d.layers = run->layers;
		d.heads = run->heads;
		d.seq = run->seq;
		d.vocab = run->vocab;
		d.batch = run->batch;
		d.ffn = run->ffn;
		d.kv_heads = run->kv_heads;
		d.dtype = run->dtype;
		st = tp_build_gpt(&d, m, err);
	}
	if (st)
		return st;
	if (run->topology[0])
		return tp_topology_load_file(run->topology, &lo, c, err);
	{
		const char *specs[1] = {run->topo_spec};
		return tp_build_topology(specs, 1, run->network, 1.0, c, err);
	}
}

/* One strategy string simulated; *t INFINITY when it does not apply. */
static enum tp_status sim_one(const struct tp_sim *sim,
			      struct tp_sim_scratch *s,
			      const struct tp_model *m,
			      const struct tp_cluster *c, const char *strategy,
			      struct tp_report *rep, struct tp_error *err)
{
	struct tp_strategy st;
	struct tp_plan p;
	enum tp_status rc;

	tp_plan_init(&p);
	rc = tp_strategy_parse(strategy, &st, err);
	if (!rc)
		rc = tp_strategy_to_plan(&st, m, c, &p, err);
	if (!rc)
		rc = tp_sim_run(sim, &p, s, rep, NULL, err);
	tp_plan_release(&p);
	return rc;
}

static void fill(struct tp_calib_result *res, const struct tp_report *rep,
		 const char *strategy)
{
	res->predicted_s = rep->iteration_time_s;
	res->feasible = rep->feasible;
	res->peak_bytes = 0;
	res->capacity_bytes = 0;
	for (uint32_t d = 0; d < rep->n_devices; d++)
		if (rep->devices[d].peak_memory_bytes > res->peak_bytes) {
			res->peak_bytes = rep->devices[d].peak_memory_bytes;
			res->capacity_bytes = rep->devices[d].capacity_bytes;
		}
	snprintf(res->strategy, sizeof(res->strategy), "%s", strategy);
}

/* The pipeline degree, layers per stage and micro-batches of a sweep. */
static uint32_t key_of(const char *strategy, const char *key)
{
	char pat[16];
	const char *p;

	snprintf(pat, sizeof(pat), "%s=", key);
	for (p = strstr(strategy, pat); p; p = strstr(p + 1, pat))
		if (p == strategy || p[-1] == ',')
			return (uint32_t)strtoul(p + strlen(pat), NULL, 10);
	return 0;
}

/*
 * Micro-batch size and interleaving "as Megatron's authors would": the
 * usual micro-batch sizes (1, 2, 4, 8, 16) and, with pipeline
 * parallelism, V model chunks per device (V dividing the layers per
 * stage, micro-batches a multiple of pp, as Megatron-LM requires); the
 * fastest configuration that fits (bench/bench_sim.c did this first).
 */
static enum tp_status sweep(const struct tp_mrun *run, const struct tp_sim *sim,
			    struct tp_sim_scratch *s, const struct tp_model *m,
			    const struct tp_cluster *c,
			    struct tp_calib_result *res, struct tp_error *err)
{
	uint32_t pp = key_of(run->strategy, "pp"),
		 dp = key_of(run->strategy, "dp");
	uint32_t per_stage = pp ? (uint32_t)(run->layers / pp) : 0;
	double best = INFINITY;
	bool best_fits = false;
	struct tp_report rep;
	enum tp_status rc = TP_OK;

	if (!pp)
		pp = 1;
	if (!dp)
		dp = 1;
	tp_report_init(&rep);
	for (uint32_t mb = 1; mb <= 16; mb *= 2) {
		if ((run->batch / dp) % mb)
			continue;
		for (uint32_t V = 1; V <= per_stage && V <= 8; V++) {
			uint32_t micro = (uint32_t)(run->batch / (dp * mb));
			char str[300];
			struct tp_error e;

			if (V > 1 && (pp < 2 || per_stage % V || micro % pp ||
				      run->layers % pp))
				continue;
			snprintf(str, sizeof(str), "%s,mb=%u,schedule=%s%.0u",
				 run->strategy, mb,
				 V > 1 ? "interleaved:" : "1f1b",
				 V > 1 ? V : 0);
			tp_error_clear(&e);
			if (sim_one(sim, s, m, c, str, &rep, &e) != TP_OK)
				continue;
			if ((rep.feasible && !best_fits) ||
			    (rep.feasible == best_fits &&
			     rep.iteration_time_s < best)) {
				best = rep.iteration_time_s;
				best_fits = rep.feasible;
				fill(res, &rep, str);
			}
		}
	}
	if (!isfinite(best))
		rc = tp_error_set(err, TP_EINPUT,
				  "run %s: no micro-batch size gives a plan "
				  "of strategy %s",
				  run->id, run->strategy);
	tp_report_release(&rep);
	return rc;
}

enum tp_status tp_calib_predict(const struct tp_mrun *run,
				const char *default_runtime,
				tp_calib_adjust_fn adjust, void *ctx,
				struct tp_calib_result *res,
				struct tp_error *err)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_runtime rt;
	struct tp_sim_options o;
	struct tp_sim *sim = NULL;
	struct tp_sim_scratch *s = NULL;
	const char *name = run->runtime[0]   ? run->runtime
			   : default_runtime ? default_runtime
					     : "none";
	enum tp_status st;

	memset(res, 0, sizeof(*res));
	tp_model_init(&m);
	tp_cluster_init(&c);
	st = tp_runtime_find(name, &rt, err);
	if (!st)
		st = build_inputs(run, &m, &c, err);
	if (!st) {
		snprintf(res->runtime, sizeof(res->runtime), "%s", rt.name);
		tp_sim_options_default(&o);
		tp_sim_params_runtime(&o.params, &rt);
		if (adjust)
			adjust(&o.params, &c, ctx);
		sim = tp_sim_new(&m, &c, &o, err);
		s = sim ? tp_sim_scratch_new(sim) : NULL;
		if (!s && !err->status)
			tp_error_set(err, TP_ENOMEM, "out of memory");
		if (!s)
			st = err->status;
	}
	if (!st && run->sweep) {
		st = sweep(run, sim, s, &m, &c, res, err);
	} else if (!st) {
		struct tp_report rep;

		tp_report_init(&rep);
		st = sim_one(sim, s, &m, &c, run->strategy, &rep, err);
		if (!st)
			fill(res, &rep, run->strategy);
		tp_report_release(&rep);
	}
	if (!st)
		res->error = res->predicted_s / run->measured_s - 1;
	else if (!strstr(err->msg, run->id)) {
		char msg[TP_ERROR_MSG_MAX + 128];

		snprintf(msg, sizeof(msg), "run %s: %s", run->id, err->msg);
		snprintf(err->msg, sizeof(err->msg), "%.*s",
			 (int)sizeof(err->msg) - 1, msg);
	}
	tp_sim_scratch_free(s);
	tp_sim_free(sim);
	tp_cluster_release(&c);
	tp_model_release(&m);
	return st;
}
