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

#endif
