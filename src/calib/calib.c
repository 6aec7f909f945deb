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
		if (run->attention_kernel > 0)
			o.params.attention_kernel =
			    (enum tp_attn_kernel)run->attention_kernel;
		if (run->memory_format > 0)
			o.params.conv_nchw = run->memory_format == 2;
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

/* ------------------------------------------------------------------ */
/* The fit (tagplan calibrate)                                         */

struct consts {
	double v[3]; /* gemm_sustained, link_eff_intra, link_eff_network */
};

static const double lo_bound[3] = {0.5, 0.3, 0.3};
static const double hi_bound[3] = {1.1, 1.0, 1.0};

static void apply_consts(struct tp_sim_params *p, struct tp_cluster *c,
			 void *ctx)
{
	const struct consts *k = ctx;

	(void)c;
	p->gemm_sustained = k->v[0];
	p->link_eff_intra = k->v[1];
	p->link_eff_network = k->v[2];
}

enum tp_status tp_calib_predict_fitted(const struct tp_mrun *run,
				       const struct tp_calib_fit *f,
				       struct tp_calib_result *res,
				       struct tp_error *err)
{
	struct consts k = {{f->gemm_sustained, f->link_eff_intra,
			    f->link_eff_network}};

	return tp_calib_predict(run, NULL, apply_consts, &k, res, err);
}

/* The prior of the fit: weight w (runs' worth) toward the constants c0
 * in log space; w 0 = none. */
struct prior {
	double w;
	struct consts c0;
};

/* Mean squared log error over the runs of mask, plus the prior's
 * penalty (NULL: none) over the same count (and the runs' mean |error|
 * into *mae when non-NULL). */
static enum tp_status objective(const struct tp_mrun *runs, size_t n,
				const bool *mask, const struct consts *k,
				const struct prior *pr, double *f,
				double *mae, struct tp_error *err)
{
	double sq = 0, ab = 0;
	size_t m = 0;

	for (int c = 0; pr && pr->w > 0 && c < 3; c++) {
		double d = log(k->v[c] / pr->c0.v[c]);
		sq += pr->w * d * d;
	}

	for (size_t i = 0; i < n; i++) {
		struct tp_calib_result res;
		enum tp_status st;
		double l;

		if (!mask[i])
			continue;
		st = tp_calib_predict(&runs[i], NULL, apply_consts,
				      (void *)k, &res, err);
		if (st)
			return st;
		l = log(res.predicted_s / runs[i].measured_s);
		sq += l * l;
		ab += fabs(res.error);
		m++;
	}
	*f = m ? sq / (double)m : 0;
	if (mae)
		*mae = m ? ab / (double)m : 0;
	return TP_OK;
}

static enum tp_status fit_fixed(const struct tp_mrun *runs, size_t n,
				const bool *fit, const bool *held,
				double prior_weight, struct tp_calib_fit *out,
				struct tp_error *err);

/* A sweep run (micro-batch and interleaving not published) is fitted
 * with the configuration the sweep picks under the defaults: the
 * constants move every configuration alike, and one simulation per run
 * instead of up to 40 keeps the fit to seconds. */
enum tp_status tp_calib_fit(const struct tp_mrun *runs, size_t n,
			    const bool *fit, const bool *held,
			    double prior_weight, struct tp_calib_fit *out,
			    struct tp_error *err)
{
	struct tp_mrun *fixed = malloc((n ? n : 1) * sizeof(*fixed));
	enum tp_status st = TP_OK;

	if (!fixed)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	for (size_t i = 0; i < n && !st; i++) {
		struct tp_calib_result res;

		fixed[i] = runs[i];
		if (!runs[i].sweep || !(fit[i] || (held && held[i])))
			continue;
		st = tp_calib_predict(&runs[i], NULL, NULL, NULL, &res, err);
		if (!st) {
			snprintf(fixed[i].strategy, sizeof(fixed[i].strategy),
				 "%s", res.strategy);
			fixed[i].sweep = false;
		}
	}
	if (!st)
		st = fit_fixed(fixed, n, fit, held, prior_weight, out, err);
	free(fixed);
	return st;
}

static enum tp_status fit_fixed(const struct tp_mrun *runs, size_t n,
				const bool *fit, const bool *held,
				double prior_weight, struct tp_calib_fit *out,
				struct tp_error *err)
{
	const double g = (sqrt(5.0) - 1) / 2;
	struct tp_sim_params d;
	struct consts k;
	struct prior pr;
	double f0, best;
	enum tp_status st;

	memset(out, 0, sizeof(*out));
	tp_sim_params_default(&d);
	k.v[0] = d.gemm_sustained;
	k.v[1] = d.link_eff_intra;
	k.v[2] = d.link_eff_network;
	pr.w = prior_weight > 0 ? prior_weight : 0;
	pr.c0 = k;
	out->prior_weight = pr.w;
	for (size_t i = 0; i < n; i++) {
		out->fit_runs += fit[i];
		out->holdout_runs += held && held[i] && !fit[i];
	}
	if (!out->fit_runs)
		return tp_error_set(err, TP_EUSAGE,
				    "no runs to fit (every run is held out)");
	if ((st = objective(runs, n, fit, &k, &pr, &f0, &out->fit_error0,
			    err)))
		return st;
	out->evaluations = 1;
	best = f0;
	for (int round = 0; round < 3; round++) {
		struct consts was = k;
		bool moved = false;

		for (int c = 0; c < 3; c++) {
			double a = lo_bound[c], b = hi_bound[c];
			double x1 = b - g * (b - a), x2 = a + g * (b - a);
			double f1, f2, keep = k.v[c];
			struct consts t = k;

			t.v[c] = x1;
			if ((st = objective(runs, n, fit, &t, &pr, &f1, NULL,
					    err)))
				return st;
			t.v[c] = x2;
			if ((st = objective(runs, n, fit, &t, &pr, &f2, NULL,
					    err)))
				return st;
			out->evaluations += 2;
			for (int it = 0; it < 14; it++) {
				if (f1 <= f2) {
					b = x2;
					x2 = x1;
					f2 = f1;
					x1 = b - g * (b - a);
					t.v[c] = x1;
					st = objective(runs, n, fit, &t, &pr,
						       &f1, NULL, err);
				} else {
					a = x1;
					x1 = x2;
					f1 = f2;
					x2 = a + g * (b - a);
					t.v[c] = x2;
					st = objective(runs, n, fit, &t, &pr,
						       &f2, NULL, err);
				}
				if (st)
					return st;
				out->evaluations++;
			}
			/* a constant that changes nothing keeps its value:
			   only a strictly better point moves it */
			t.v[c] = f1 <= f2 ? x1 : x2;
			if ((f1 <= f2 ? f1 : f2) < best * (1 - 1e-9)) {
				best = f1 <= f2 ? f1 : f2;
				k.v[c] = t.v[c];
			} else {
				k.v[c] = keep;
			}
		}
		for (int c = 0; c < 3; c++)
			moved = moved || fabs(k.v[c] - was.v[c]) > 1e-3;
		if (!moved)
			break;
	}
	out->gemm_sustained = k.v[0];
	out->link_eff_intra = k.v[1];
	out->link_eff_network = k.v[2];
	if ((st = objective(runs, n, fit, &k, &pr, &best, &out->fit_error,
			    err)))
		return st;
	if (out->holdout_runs) {
		bool *h = calloc(n, sizeof(bool));
		double f;

		if (!h)
			return tp_error_set(err, TP_ENOMEM, "out of memory");
		for (size_t i = 0; i < n; i++)
			h[i] = held[i] && !fit[i];
		k.v[0] = d.gemm_sustained;
		k.v[1] = d.link_eff_intra;
		k.v[2] = d.link_eff_network;
		st = objective(runs, n, h, &k, NULL, &f,
			       &out->holdout_error0, err);
		k.v[0] = out->gemm_sustained;
		k.v[1] = out->link_eff_intra;
		k.v[2] = out->link_eff_network;
		if (!st)
			st = objective(runs, n, h, &k, NULL, &f,
				       &out->holdout_error, err);
		free(h);
		if (st)
			return st;
	}
	return TP_OK;
}
