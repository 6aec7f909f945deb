/*
 * calib.c - predict a measured run with the simulator (calib.h).
 */
#include "calib.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "core/plan.h"
#include "core/precision.h"
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

/* The most FLOP/s a device of type t can do on a model in dtype: the
 * GEMM peak the simulator uses, for fp32 the fastest rate short of FP8
 * (TF32 tensor cores may run fp32 GEMMs at up to the half rate). */
static double rate_bound(const struct tp_device_type *t, enum tp_dtype dtype)
{
	double p = tp_precision_gemm_peak(t, dtype);

	if (dtype == TP_DTYPE_FP32) {
		p = fmax(p, t->peak_flops[TP_DTYPE_FP16]);
		p = fmax(p, t->peak_flops[TP_DTYPE_BF16]);
	}
	return p;
}

/* tp_calib_check_rate on the built model and cluster. */
static enum tp_status check_rate(const struct tp_mrun *run,
				 const struct tp_model *m,
				 const struct tp_cluster *c,
				 struct tp_error *err)
{
	struct tp_strategy sg;
	struct tp_error ignored;
	double flop = 0, peak = 0, batch, achieved;
	const char *topo;
	bool one_type = true, sps;
	size_t n = c->devices.n;

	/* a strategy that does not parse is tp_calib_predict's error */
	if (!run->measured_path[0] || !n || !(run->measured_s > 0) ||
	    tp_strategy_parse(run->strategy, &sg, &ignored))
		return TP_OK;
	batch = (double)(sg.gbs > 0 ? sg.gbs : m->global_batch);
	for (size_t k = 0; k < m->ops.n; k++)
		flop += m->ops.v[k].flop + m->ops.v[k].backward_flop;
	flop *= batch;
	for (size_t d = 0; d < n; d++) {
		peak += rate_bound(&c->types.v[c->devices.v[d].type], m->dtype);
		one_type &= c->devices.v[d].type == c->devices.v[0].type;
	}
	achieved = flop / run->measured_s / (double)n;
	if (achieved <= peak / (double)n)
		return TP_OK;
	topo = run->topology[0] ? run->topology : run->topo_spec;
	if (strrchr(topo, '/'))
		topo = strrchr(topo, '/') + 1;
	sps = strstr(run->measured_path, "samples") != NULL;
	tp_error_set_path(
	    err, TP_EINPUT, run->measured_path,
	    "run %s: %g %s implies %.4g TFLOP/s per GPU (%.4g FLOP of "
	    "forward and backward per iteration of %.0f samples over the %zu "
	    "GPU%s of %s), above %s%s, %.4g TFLOP/s in %s: fix the figure "
	    "(%s), or the run's model, batch or topology",
	    run->id, sps ? batch / run->measured_s : run->measured_s,
	    sps ? "samples/s" : "s per iteration", achieved / 1e12, flop, batch,
	    n, n > 1 ? "s" : "", topo,
	    one_type ? "the peak of " : "their mean peak",
	    one_type ? c->types.v[c->devices.v[0].type].name : "",
	    peak / (double)n / 1e12, tp_dtype_name(m->dtype),
	    sps ? "samples per second" : "seconds per iteration");
	tp_error_set_file(err, run->file);
	return TP_EINPUT;
}

enum tp_status tp_calib_check_rate(const struct tp_mrun *run,
				   struct tp_error *err)
{
	struct tp_model m;
	struct tp_cluster c;
	enum tp_status st;

	if (!run->measured_path[0])
		return TP_OK;
	tp_model_init(&m);
	tp_cluster_init(&c);
	st = build_inputs(run, &m, &c, err);
	if (!st)
		st = check_rate(run, &m, &c, err);
	else if (!strstr(err->msg, run->id)) {
		char msg[TP_ERROR_MSG_MAX + 128];

		snprintf(msg, sizeof(msg), "run %s: %s", run->id, err->msg);
		snprintf(err->msg, sizeof(err->msg), "%.*s",
			 (int)sizeof(err->msg) - 1, msg);
	}
	tp_cluster_release(&c);
	tp_model_release(&m);
	return st;
}

enum tp_status tp_calib_check(const struct tp_mrun *run,
			      const char *default_runtime,
			      struct tp_error *err)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_runtime rt;
	struct tp_strategy sg;
	struct tp_plan p;
	const char *name = run->runtime[0]   ? run->runtime
			   : default_runtime ? default_runtime
					     : "none";
	enum tp_status st;

	tp_model_init(&m);
	tp_cluster_init(&c);
	tp_plan_init(&p);
	st = tp_runtime_find(name, &rt, err);
	if (!st)
		st = build_inputs(run, &m, &c, err);
	if (!st)
		st = tp_strategy_parse(run->strategy, &sg, err);
	/* a sweep's strategy leaves mb open: the sweep picks it */
	if (!st && !run->sweep)
		st = tp_strategy_to_plan(&sg, &m, &c, &p, err);
	if (!st)
		st = check_rate(run, &m, &c, err);
	if (st && !strstr(err->msg, run->id)) {
		char msg[TP_ERROR_MSG_MAX + 128];

		snprintf(msg, sizeof(msg), "run %s: %s", run->id, err->msg);
		snprintf(err->msg, sizeof(err->msg), "%.*s",
			 (int)sizeof(err->msg) - 1, msg);
	}
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
	return st;
}

/* ------------------------------------------------------------------ */
/* The fit (tagplan calibrate)                                         */

const char *const tp_calib_names[TP_CALIB_N] = {
    "gemm_sustained",	  "link_eff_intra", "link_eff_network",
    "gemm_shape_half",	  "nic_socket_Bps", "tp_node_rings",
    "cuda_core_gemm_eff", "hopper_gemm_scale", "p2p_socket_Bps"};
const double tp_calib_lo[TP_CALIB_N] = {0.5, 0.3, 0.3, 1e5,
					2.5e8, 1, 0.3, 0.5, 1e7};
const double tp_calib_hi[TP_CALIB_N] = {1.1, 1.0, 1.0, 1e7,
					1.25e10, 4, 1.0, 1.0, 1.25e10};
/* searched in log space (ranges of two decades or more) */
static const bool log_space[TP_CALIB_N] = {false, false, false, true,
					  true,  false, false, false,
					  true};

/* Where the shipped profiles' fitted constants come from (calib.h;
 * src/sim/README sections 2, 3 and 9; the profiles' "sources"). */
const struct tp_calib_fitted_on tp_calib_fitted_on[] = {
    /* gemm_sustained 0.806: Megatron-LM SC21 Table 1 (src/sim/README
       section 7) */
    {TP_CALIB_GEMM_SUSTAINED, "Narayanan-SC21", 0},
    {TP_CALIB_GEMM_SHAPE_HALF, "DS3Lab/", TP_CALIB_GEMM_SHAPE_HALF_SOURCED},
    {TP_CALIB_NIC_SOCKET, "DS3Lab/", 0},
    {TP_CALIB_TP_NODE_RINGS, "DS3Lab/", 0},
    {TP_CALIB_CUDA_CORE_EFF, "NVIDIA/DeepLearningExamples",
     TP_CALIB_CUDA_CORE_EFF_SOURCED},
    {TP_CALIB_HOPPER_SCALE, "mosaicml/llm-foundry", 0},
    {TP_CALIB_P2P_SOCKET, "DS3Lab/", 0},
};
const size_t tp_calib_n_fitted_on =
    sizeof(tp_calib_fitted_on) / sizeof(tp_calib_fitted_on[0]);

/* The simulator's parameter of constant c (profile constants: > 0 when
 * the runtime sets it). */
static double *param_of(struct tp_sim_params *p, int c)
{
	switch (c) {
	case TP_CALIB_GEMM_SUSTAINED:
		return &p->gemm_sustained;
	case TP_CALIB_LINK_INTRA:
		return &p->link_eff_intra;
	case TP_CALIB_LINK_NETWORK:
		return &p->link_eff_network;
	case TP_CALIB_GEMM_SHAPE_HALF:
		return &p->gemm_shape_half;
	case TP_CALIB_NIC_SOCKET:
		return &p->nic_cap_Bps;
	case TP_CALIB_TP_NODE_RINGS:
		return &p->tp_node_rings;
	case TP_CALIB_CUDA_CORE_EFF:
		return &p->cuda_core_gemm_eff;
	case TP_CALIB_P2P_SOCKET:
		return &p->p2p_cap_Bps;
	default:
		return &p->hopper_gemm_scale;
	}
}

static bool is_global(int c)
{
	return c <= TP_CALIB_LINK_NETWORK;
}

/* The constants applied to a run, and the profile constants to drop. */
struct consts {
	double v[TP_CALIB_N];
	const bool *drop;
};

static void apply_consts(struct tp_sim_params *p, struct tp_cluster *c,
			 void *ctx)
{
	const struct consts *k = ctx;

	(void)c;
	for (int i = 0; i < TP_CALIB_N; i++) {
		double *x = param_of(p, i);

		if (!is_global(i) && k->drop && k->drop[i])
			*x = 0;
		else if (is_global(i) || *x > 0)
			*x = k->v[i];
	}
}

enum tp_status tp_calib_predict_fitted(const struct tp_mrun *run,
				       const struct tp_calib_fit *f,
				       const bool *drop,
				       struct tp_calib_result *res,
				       struct tp_error *err)
{
	struct consts k;

	memcpy(k.v, f->k, sizeof(k.v));
	k.drop = drop;
	return tp_calib_predict(run, NULL, apply_consts, &k, res, err);
}

/* The simulator's parameters of run under its runtime profile (no
 * calibration applied), as tp_calib_predict sets them. */
static enum tp_status run_params(const struct tp_mrun *run,
				 struct tp_sim_params *p,
				 struct tp_error *err)
{
	struct tp_runtime rt;
	enum tp_status st;

	st = tp_runtime_find(run->runtime[0] ? run->runtime : "none", &rt,
			     err);
	if (st)
		return st;
	tp_sim_params_default(p);
	tp_sim_params_runtime(p, &rt);
	return TP_OK;
}

/* The state of the coordinate descent: the runs (sweeps fixed), which
 * are fitted, which depend on which constant, the prior, and each
 * fitted run's squared log error at the current constants. */
struct fitstate {
	const struct tp_mrun *runs;
	size_t n;
	const bool *fit;
	bool *dep; /* n x TP_CALIB_N */
	double *sq;
	double w;
	double c0[TP_CALIB_N];
	bool no_prior[TP_CALIB_N];
	uint32_t evals;
};

static double prior_term(const struct fitstate *s, const struct consts *k)
{
	double sq = 0;

	for (int c = 0; s->w > 0 && c < TP_CALIB_N; c++) {
		double d = log(k->v[c] / s->c0[c]);
		if (!s->no_prior[c])
			sq += s->w * d * d;
	}
	return sq;
}

/* Squared log error of run i under k into *sq (and |error| into *ab). */
static enum tp_status run_sq(struct fitstate *s, size_t i,
			     const struct consts *k, double *sq, double *ab,
			     struct tp_error *err)
{
	struct tp_calib_result res;
	enum tp_status st;
	double l;

	st = tp_calib_predict(&s->runs[i], NULL, apply_consts, (void *)k,
			      &res, err);
	if (st)
		return st;
	s->evals++;
	l = log(res.predicted_s / s->runs[i].measured_s);
	*sq = l * l;
	if (ab)
		*ab = fabs(res.error);
	return TP_OK;
}

/* Mean over the fitted runs of the squared log errors plus the prior,
 * with constant c at k's value: the runs depending on c simulated, the
 * others at their current error (c < 0: every fitted run); update: the
 * simulated runs' errors become the current ones. */
static enum tp_status objective(struct fitstate *s, const struct consts *k,
				int c, bool update, double *f,
				struct tp_error *err)
{
	double sum = prior_term(s, k);
	size_t m = 0;
	enum tp_status st;

	for (size_t i = 0; i < s->n; i++) {
		double q;

		if (!s->fit[i])
			continue;
		m++;
		if (c >= 0 && !s->dep[i * TP_CALIB_N + c]) {
			sum += s->sq[i];
			continue;
		}
		if ((st = run_sq(s, i, k, &q, NULL, err)))
			return st;
		if (update)
			s->sq[i] = q;
		sum += q;
	}
	*f = m ? sum / (double)m : 0;
	return TP_OK;
}

/* Mean |error| over the runs of mask under k. */
static enum tp_status mean_abs(struct fitstate *s, const bool *mask,
			       const struct consts *k, double *mae,
			       struct tp_error *err)
{
	double sum = 0, q, ab;
	size_t m = 0;
	enum tp_status st;

	for (size_t i = 0; i < s->n; i++) {
		if (!mask[i])
			continue;
		if ((st = run_sq(s, i, k, &q, &ab, err)))
			return st;
		sum += ab;
		m++;
	}
	*mae = m ? sum / (double)m : 0;
	return TP_OK;
}

static double to_x(int c, double v)
{
	return log_space[c] ? log(v) : v;
}

static double from_x(int c, double x)
{
	return log_space[c] ? exp(x) : x;
}

/* One golden-section search of constant c over its bounds; moves it in
 * *k (and *best) only to a strictly better point. */
static enum tp_status search(struct fitstate *s, struct consts *k, int c,
			     double *best, struct tp_error *err)
{
	const double g = (sqrt(5.0) - 1) / 2;
	double a = to_x(c, tp_calib_lo[c]), b = to_x(c, tp_calib_hi[c]);
	double x1 = b - g * (b - a), x2 = a + g * (b - a);
	double f1, f2, keep = k->v[c];
	struct consts t = *k;
	enum tp_status st;

	t.v[c] = from_x(c, x1);
	if ((st = objective(s, &t, c, false, &f1, err)))
		return st;
	t.v[c] = from_x(c, x2);
	if ((st = objective(s, &t, c, false, &f2, err)))
		return st;
	for (int it = 0; it < 14; it++) {
		if (f1 <= f2) {
			b = x2;
			x2 = x1;
			f2 = f1;
			x1 = b - g * (b - a);
			t.v[c] = from_x(c, x1);
			st = objective(s, &t, c, false, &f1, err);
		} else {
			a = x1;
			x1 = x2;
			f1 = f2;
			x2 = a + g * (b - a);
			t.v[c] = from_x(c, x2);
			st = objective(s, &t, c, false, &f2, err);
		}
		if (st)
			return st;
	}
	/* a constant that changes nothing keeps its value: only a
	   strictly better point moves it */
	if ((f1 <= f2 ? f1 : f2) < *best * (1 - 1e-9)) {
		k->v[c] = from_x(c, f1 <= f2 ? x1 : x2);
		/* the current errors at the new value */
		if ((st = objective(s, k, c, true, best, err)))
			return st;
	} else {
		k->v[c] = keep;
	}
	return TP_OK;
}

static enum tp_status fit_fixed(struct fitstate *s, const bool *held,
				const struct tp_calib_opts *o,
				struct tp_calib_fit *out, struct tp_error *err);

/* A sweep run (micro-batch and interleaving not published) is fitted
 * with the configuration its sweep picks under the shipped constants:
 * the constants move every configuration alike, and one simulation per
 * run instead of up to 40 keeps the fit to seconds. */
enum tp_status tp_calib_fit(const struct tp_mrun *runs, size_t n,
			    const bool *fit, const bool *held,
			    double prior_weight,
			    const struct tp_calib_opts *o,
			    struct tp_calib_fit *out, struct tp_error *err)
{
	struct tp_mrun *fixed = malloc((n ? n : 1) * sizeof(*fixed));
	struct fitstate s;
	enum tp_status st = TP_OK;

	memset(&s, 0, sizeof(s));
	s.dep = calloc((n ? n : 1) * TP_CALIB_N, sizeof(bool));
	s.sq = calloc(n ? n : 1, sizeof(double));
	if (!fixed || !s.dep || !s.sq) {
		free(fixed);
		free(s.dep);
		free(s.sq);
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	}
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
	s.runs = fixed;
	s.n = n;
	s.fit = fit;
	s.w = prior_weight > 0 ? prior_weight : 0;
	if (!st)
		st = fit_fixed(&s, held, o, out, err);
	free(fixed);
	free(s.dep);
	free(s.sq);
	return st;
}

static enum tp_status fit_fixed(struct fitstate *s, const bool *held,
				const struct tp_calib_opts *o,
				struct tp_calib_fit *out, struct tp_error *err)
{
	struct tp_sim_params d;
	struct consts k;
	double best;
	bool seen[TP_CALIB_N] = {false};
	enum tp_status st;
	size_t n = s->n;

	memset(out, 0, sizeof(*out));
	memset(&k, 0, sizeof(k));
	tp_sim_params_default(&d);
	for (int c = 0; c < TP_CALIB_N; c++)
		k.v[c] = *param_of(&d, c);
	/* which run depends on which constant; a profile constant's
	   shipped value is the first fitted run's profile's */
	for (size_t i = 0; i < n; i++) {
		struct tp_sim_params p;

		if (!s->fit[i] && !(held && held[i]))
			continue;
		if ((st = run_params(&s->runs[i], &p, err)))
			return st;
		for (int c = 0; c < TP_CALIB_N; c++) {
			bool dep = is_global(c) || *param_of(&p, c) > 0;

			s->dep[i * TP_CALIB_N + c] = dep;
			if (!dep || is_global(c))
				continue;
			if (s->fit[i] && !out->used[c]) {
				out->used[c] = true;
				k.v[c] = *param_of(&p, c);
			} else if (!seen[c] && !out->used[c]) {
				k.v[c] = *param_of(&p, c);
			}
			seen[c] = true;
		}
	}
	for (int c = 0; c < TP_CALIB_N; c++) {
		if (is_global(c))
			out->used[c] = true;
		if (o && o->fixed[c])
			out->used[c] = false;
		if (o && o->start[c] > 0)
			k.v[c] = o->start[c];
		s->no_prior[c] = o && o->no_prior[c];
		if (!(k.v[c] > 0)) /* never applied; a centre for the log */
			k.v[c] = tp_calib_lo[c];
		s->c0[c] = k.v[c];
		out->k0[c] = k.v[c];
	}
	out->prior_weight = s->w;
	for (size_t i = 0; i < n; i++) {
		out->fit_runs += s->fit[i];
		out->holdout_runs += held && held[i] && !s->fit[i];
	}
	if (!out->fit_runs)
		return tp_error_set(err, TP_EUSAGE,
				    "no runs to fit (every run is held out)");
	if ((st = mean_abs(s, s->fit, &k, &out->fit_error0, err)) ||
	    (st = objective(s, &k, -1, true, &best, err)))
		return st;
	for (int round = 0; round < 3; round++) {
		struct consts was = k;
		bool moved = false;

		for (int c = 0; c < TP_CALIB_N; c++)
			if (out->used[c] && (st = search(s, &k, c, &best, err)))
				return st;
		for (int c = 0; c < TP_CALIB_N; c++)
			moved = moved ||
				fabs(k.v[c] / was.v[c] - 1) > 1e-3;
		if (!moved)
			break;
	}
	memcpy(out->k, k.v, sizeof(out->k));
	if ((st = mean_abs(s, s->fit, &k, &out->fit_error, err)))
		return st;
	if (out->holdout_runs) {
		bool *h = calloc(n, sizeof(bool));
		struct consts k0 = k;

		if (!h)
			return tp_error_set(err, TP_ENOMEM, "out of memory");
		for (size_t i = 0; i < n; i++)
			h[i] = held[i] && !s->fit[i];
		memcpy(k0.v, out->k0, sizeof(k0.v));
		st = mean_abs(s, h, &k0, &out->holdout_error0, err);
		if (!st)
			st = mean_abs(s, h, &k, &out->holdout_error, err);
		free(h);
		if (st)
			return st;
	}
	out->evaluations = s->evals;
	return TP_OK;
}
