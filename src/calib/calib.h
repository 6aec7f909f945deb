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
 * What tp_calib_predict checks before it simulates, without simulating
 * (tagplan validate of a run list): the run's runtime is known, its
 * model builds, its topology loads and its strategy parses and, unless
 * the run is a sweep, expands to a plan on them; and
 * tp_calib_check_rate.  Errors as
 * tp_calib_predict's ("run ID: ...").
 */
enum tp_status tp_calib_check(const struct tp_mrun *run,
			      const char *default_runtime,
			      struct tp_error *err);

/*
 * A run of the list form whose measured figure would make its GPUs
 * faster than they are (tagplan calibrate, validate): the model's forward
 * and backward FLOP per iteration (no recomputation: the least the
 * iteration did; the model's count, so approximate where a kernel skips
 * work, as causal attention may) at the strategy's global batch (else
 * the model's), over the measured iteration time, per GPU of the run's
 * topology, against the mean of those GPUs' peaks in the model's dtype
 * (the topology's device types: the GEMM peak the simulator uses; for
 * fp32 the type's fastest rate short of FP8, as TF32 tensor cores may
 * run fp32 GEMMs).  Above it: TP_EINPUT at the run's list and the JSON
 * path of its figure.  Table 1's rows (no measured_path) are not
 * checked here.  A model or topology that does not build is
 * tp_calib_predict's error ("run ID: ...").
 */
enum tp_status tp_calib_check_rate(const struct tp_mrun *run,
				   struct tp_error *err);

/*
 * The constants tagplan calibrate fits.  Global ones apply to every run:
 * gemm_sustained (x every type's gemm_efficiency), link_eff_intra and
 * link_eff_network (the fraction of NVLink/PCIe and of network peak
 * collectives reach); the runtime profiles' constants apply to a run
 * whose profile sets them (behaviour > 0; src/sim/README sections 2, 3,
 * 9) and replace the profile's value there: gemm_shape_half (every
 * shipped profile but "none"), nic_socket_Bps and tp_node_rings
 * (megatron-lm-2022), cuda_core_gemm_eff (ddp), hopper_gemm_scale
 * (fsdp2), p2p_socket_Bps (megatron-lm-2022).  A profile constant no fitted run's profile sets is not
 * fitted (used[] false) and keeps its start.
 */
enum tp_calib_const {
	TP_CALIB_GEMM_SUSTAINED,
	TP_CALIB_LINK_INTRA,
	TP_CALIB_LINK_NETWORK,
	TP_CALIB_GEMM_SHAPE_HALF,
	TP_CALIB_NIC_SOCKET,
	TP_CALIB_TP_NODE_RINGS,
	TP_CALIB_CUDA_CORE_EFF,
	TP_CALIB_HOPPER_SCALE,
	TP_CALIB_P2P_SOCKET,
	TP_CALIB_N
};

/* Their names (as the runtime profile's fields) and bounds. */
extern const char *const tp_calib_names[TP_CALIB_N];
extern const double tp_calib_lo[TP_CALIB_N], tp_calib_hi[TP_CALIB_N];

/*
 * tagplan calibrate's fit: the constants above chosen to minimise the
 * squared log errors, log(predicted / measured)^2, over the runs with
 * fit[i] set, each run under its own runtime profile's behaviour, plus
 * prior_weight times the squared log distance of each fitted constant
 * from its start (a Gaussian prior in log space centred on the shipped
 * constants, worth prior_weight runs; 0 = the plain least squares), the
 * sum divided by the fitted runs.  Bounded (tp_calib_lo/hi:
 * gemm_sustained 0.5..1.1, link efficiencies 0.3..1.0, gemm_shape_half
 * 1e5..1e7, nic_socket_Bps 2.5e8..1.25e10 B/s, tp_node_rings 1..4,
 * cuda_core_gemm_eff 0.3..1.0, hopper_gemm_scale 0.5..1.0,
 * p2p_socket_Bps 1e7..1.25e10 B/s), by coordinate descent: a
 * golden-section search per constant (14 steps; gemm_shape_half,
 * nic_socket_Bps and p2p_socket_Bps in log space), up to three rounds
 * (stopping when a round moves no constant by 1e-3 of its value), from
 * the start; a constant none of the runs depends on keeps its start.
 * The start (and the prior's centre) of each constant: o->start[c] when
 * o is given and o->start[c] > 0, else the shipped value (the
 * simulator's default for the global ones, the first fitted run's
 * profile's for a profile constant); o->fixed[c] keeps constant c at
 * its start (not fitted).  A sweep run is fitted with the
 * configuration its sweep picks under the shipped constants.  held[i]
 * marks the runs to report the fitted constants on without fitting to
 * them (NULL: none).
 */
struct tp_calib_fit {
	double k[TP_CALIB_N];  /* fitted (a constant not used: its start) */
	double k0[TP_CALIB_N]; /* the start and the prior's centre */
	bool used[TP_CALIB_N]; /* fitted: some fitted run depends on it
				  and it is not fixed */
	double prior_weight;   /* as asked */
	double fit_error;      /* mean |error| of the fitted runs, after */
	double fit_error0;     /* ... with the start constants, before */
	double holdout_error;  /* mean |error| of the held-out runs, after */
	double holdout_error0;
	uint32_t fit_runs, holdout_runs;
	uint32_t evaluations;  /* simulations of one run */
};

/* The shipped prior weight: the shipped constants count as the 10 runs
 * of Megatron-LM SC21 Table 1 that gemm_sustained was fitted on (the
 * link efficiencies come from NCCL benchmark figures, not runs; the
 * same weight for all).  Chosen before any held-out fold was looked at
 * (src/sim/README section 9). */
#define TP_CALIB_PRIOR_WEIGHT 10.0

struct tp_calib_opts {
	double start[TP_CALIB_N]; /* > 0: the start and prior centre */
	bool fixed[TP_CALIB_N];   /* not fitted */
	bool no_prior[TP_CALIB_N]; /* fitted without the prior (its
				     shipped value is no centre: it was
				     fitted on the runs held out) */
};

enum tp_status tp_calib_fit(const struct tp_mrun *runs, size_t n,
			    const bool *fit, const bool *held,
			    double prior_weight,
			    const struct tp_calib_opts *o,
			    struct tp_calib_fit *out, struct tp_error *err);

/*
 * Predict run with the constants of f (the adjust of tp_calib_predict
 * that tp_calib_fit uses): the global ones, and each profile constant
 * where the run's profile sets it; drop (NULL or a mask over
 * TP_CALIB_N) turns a profile constant's mechanism off on the run
 * instead (0: what the profile would say without its fitted value).
 */
enum tp_status tp_calib_predict_fitted(const struct tp_mrun *run,
				       const struct tp_calib_fit *f,
				       const bool *drop,
				       struct tp_calib_result *res,
				       struct tp_error *err);

/*
 * The shipped profiles' constants that were fitted on one source of
 * data/validation (src/sim/README section 9; each profile's "sources"),
 * for an honest leave-one-source-out: when that source is held out, the
 * constant must come from elsewhere.  source begins the runs' source
 * (io/runs.h: its first word); fallback > 0 is a value with
 * a cited source that replaces it as the fit's start (and prior centre),
 * 0 that none is known: a profile constant's mechanism is off on the
 * held-out runs, a global constant (every run depends on it) is fitted
 * on the other sources without the prior (tp_calib_opts no_prior).
 */
struct tp_calib_fitted_on {
	enum tp_calib_const c;
	const char *source;
	double fallback;
};
extern const struct tp_calib_fitted_on tp_calib_fitted_on[];
extern const size_t tp_calib_n_fitted_on;

/*
 * gemm_shape_half's sourced value: the half point of core/cost.h's GEMM
 * shape curve that fits Sailor's measured forward times of one
 * transformer block in fp32 on a V100 (eth-easl/sailor, SOSP 2025:
 * OPT-350M, GPT-Neo-2.7B and OPT-30B at every micro-batch size and
 * tensor parallelism it profiled, 33 times;
 * data/kernels/sailor-v100-fp32-blocks.json).  Each time is modelled
 * as core/cost.h's forward op times of one block (the simulator's
 * op_cost without sequence parallelism, fp32 on the V100's CUDA cores
 * at a GEMM efficiency E) plus, for tp > 1, c seconds per byte of the
 * block's two ring all-reduces (Sailor does not say whether its layer
 * times include them); E, the half point and c are fitted by least
 * squares on log time (grid: E 0.5 to 1 by 0.01 and the half point
 * 1e5 to 1e8 by 0.05 in log, c 0 to 4e-11 s/B by 0.05e-11, then
 * refined): 2.04e6 (E 0.936, c 1.07e-11 s/B; rms 4.4%), two significant
 * figures kept.  The rule was fixed before the fit and before the fold
 * was run (src/sim/README section 9).  Until 2026-12-07 it was
 * 655,360, the wave-quantization half point on the V100's 80 SMs
 * (NVIDIA "Matrix Multiplication Background": 80 x 128 x 128 / 2).
 * Not fitted on data/validation.
 */
#define TP_CALIB_GEMM_SHAPE_HALF_SOURCED 2.0e6

/*
 * cuda_core_gemm_eff's sourced value: the forward rate of a transformer
 * block in fp32 on a V100 (CUDA cores) over its fp32 peak, 15.7e12
 * FLOP/s, as Sailor measured it (eth-easl/sailor, SOSP 2025: one OPT-30B
 * block, hidden 7168, sequence 2048, at micro-batches 1 to 8 and tensor
 * parallelism 4 and 8; data/kernels/sailor-v100-fp32.json): the median
 * over its seven entries of 24 b s h^2 + 4 b s^2 h FLOP / tp per
 * forward second, 0.7716 (0.762 to 0.809).  A whole block (its
 * softmax, norms and GELU too), so a lower bound of its GEMMs' own
 * rate.  Replaces ddp's fitted 0.83 in the leave-one-source-out fold of
 * the run it was fitted on (DeepLearningExamples' ResNet-50 fp32 on one
 * V100).  Not fitted on data/validation.
 */
#define TP_CALIB_CUDA_CORE_EFF_SOURCED 0.77

#endif
