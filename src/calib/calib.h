/*
 * calib.h - the simulator against measured runs: predict a run (io/runs.h)
 * under its runtime profile, and fit the cost model's exposed constants
 * to a set of runs (tagplan calibrate, bench/bench_fidelity.c).
 *
 * tp_calib_predict builds the run's model (zoo or GPT dimensions) and
 * cluster (its topology file or preset spec), takes its strategy and its
 * runtime profile (data/runtimes, or the caller's default), applies the
 * calibration constants when given, and simulates one iteration.  A run
 * whose micro-batch size is not published (sweep) is simulated with
 * every usual micro-batch size (1..16) and interleaving depth (1..8,
 * where Megatron allows it) and the fastest configuration that fits is
 * kept, as Megatron's authors chose theirs.
 *
 * Errors: the run's files or strategy are bad (TP_EINPUT / TP_EUSAGE /
 * TP_EIO with the run's id in the message).  No output is printed.
 */
#ifndef TP_CALIB_H
#define TP_CALIB_H

#include <stdbool.h>

#include "core/error.h"
#include "io/runs.h"
#include "sim/sim.h"

/* What a prediction came out as. */
struct tp_calib_result {
	double predicted_s;    /* simulated iteration time */
	double error;	       /* predicted / measured - 1 (time) */
	bool feasible;	       /* every device fits */
	double peak_bytes;     /* largest peak memory of a device */
	double capacity_bytes; /* that device's capacity */
	char strategy[256];    /* as simulated (the sweep's choice) */
	char runtime[64];      /* the profile simulated under */
};

/*
 * Predict run under its runtime (run->runtime, else default_runtime,
 * else "none").  adjust (may be NULL) is called on the simulator's
 * parameters after the runtime has set them, and on the run's own copy
 * of the cluster before the simulator is made (a calibration applies its
 * device and runtime constants there); ctx is passed through.
 */
typedef void (*tp_calib_adjust_fn)(struct tp_sim_params *p,
				   struct tp_cluster *c, void *ctx);
enum tp_status tp_calib_predict(const struct tp_mrun *run,
				const char *default_runtime,
				tp_calib_adjust_fn adjust, void *ctx,
				struct tp_calib_result *res,
				struct tp_error *err);

/*
 * tagplan calibrate's fit: the cost model's exposed constants
 * (gemm_sustained, link_eff_intra, link_eff_network; sim.h) chosen to
 * minimise the squared log errors, log(predicted / measured)^2, over
 * the runs with fit[i] set, each run under its own runtime profile's
 * behaviour, plus prior_weight times the squared log distance of each
 * constant from the simulator's default (a Gaussian prior in log space
 * centred on the shipped constants, worth prior_weight runs; 0 = the
 * plain least squares), the sum divided by the fitted runs.  Bounded (gemm_sustained 0.5..1.1, link efficiencies
 * 0.3..1.0), by coordinate descent: a golden-section search per constant
 * (14 steps), up to three rounds (stopping when a round moves no
 * constant by 1e-3), from the simulator's defaults; a constant none of
 * the runs depends on keeps its default.  A sweep run is fitted with
 * the configuration its sweep picks under the defaults.  held[i] marks the runs
 * to report the fitted constants on without fitting to them (NULL: none).
 */
struct tp_calib_fit {
	double gemm_sustained, link_eff_intra, link_eff_network;
	double prior_weight;  /* as asked */
	double fit_error;     /* mean |error| of the fitted runs, after */
	double fit_error0;    /* ... with the defaults, before */
	double holdout_error; /* mean |error| of the held-out runs, after */
	double holdout_error0;
	uint32_t fit_runs, holdout_runs;
	uint32_t evaluations; /* simulations of the whole set */
};

/* The shipped prior weight: the shipped constants count as the 10 runs
 * of Megatron-LM SC21 Table 1 that gemm_sustained was fitted on (the
 * link efficiencies come from NCCL benchmark figures, not runs; the
 * same weight for all three).  Chosen before any held-out fold was
 * looked at (src/sim/README section 9). */
#define TP_CALIB_PRIOR_WEIGHT 10.0

enum tp_status tp_calib_fit(const struct tp_mrun *runs, size_t n,
			    const bool *fit, const bool *held,
			    double prior_weight, struct tp_calib_fit *out,
			    struct tp_error *err);

/* Predict run with the constants of f (the adjust of tp_calib_predict
 * that tp_calib_fit uses). */
enum tp_status tp_calib_predict_fitted(const struct tp_mrun *run,
				       const struct tp_calib_fit *f,
				       struct tp_calib_result *res,
				       struct tp_error *err);

#endif
