/*
 * report.h - the report IR: what one simulated iteration of a plan gives.
 *
 * Filled by the simulator (src/sim/), written as tagplan-report/1 by
 * src/io/, read back by `check`.  Per-device arrays have n_devices entries
 * and are owned by the report (tp_report_init / tp_report_release).
 */
#ifndef TP_REPORT_H
#define TP_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* What a device's peak memory is made of, bytes. */
struct tp_memory_breakdown {
	double weights, gradients, optimizer, activations, temporary, reserved;
};

struct tp_report_device {
	double peak_memory_bytes;
	double capacity_bytes;
	double compute_s;       /* busy computing */
	double communication_s; /* time its collectives/transfers were active
				   and not hidden behind compute */
	double idle_s;          /* iteration time - compute - exposed comm */
	struct tp_memory_breakdown memory;
};

struct tp_report_link {
	uint32_t link;      /* index into cluster->links */
	double bytes;       /* carried per iteration, both directions */
	double busy_s;      /* time with at least one flow */
};

/*
 * Where a report's figures come from (the report's and the plan
 * summary's "basis"): the runtime profile simulated under and the cost-
 * model constants used.  Either the shipped constants (src/sim/README
 * section 7), with their measured error on the published runs of
 * data/validation (bench/bench_fidelity.c; validation_* > 0), or a
 * profile's calibration (tagplan calibrate: the run files it was fitted
 * on, its error on them and on the held-out runs).
 */
struct tp_report_basis {
	char runtime[64]; /* the profile's name ("none"); "" = not recorded
			     (a report or plan from an older tagplan) */
	bool calibrated;  /* the profile's calibration replaced the shipped
			     constants */
	double gemm_sustained, link_eff_intra, link_eff_network;
	char fitted_on[256];
	uint32_t runs, holdout_runs;
	double fit_error, holdout_error; /* mean |error|, calibrated */
	double validation_mean_error, validation_max_error; /* shipped */
	uint32_t validation_runs;
	bool validation_runtime; /* the runs under this runtime (its
				    profile's "validation"), else all */
};

/* One line (no newline) saying where the figures come from:
 * "runtime ddp, shipped constants: mean |error| 25.9%, max 39.5% on the
 * 4 published runs under ddp (data/validation)" (or "on all 30 published
 * runs of data/validation, none under megatron-core") or "runtime mine,
 * calibrated on runs.json (23 runs, mean |error| 10.8%; 7 held out,
 * 13.9%)".  "" when b->runtime is "". */
void tp_report_basis_describe(const struct tp_report_basis *b, char *buf,
			      size_t size);

struct tp_report {
	bool feasible;
	double iteration_time_s;
	double throughput_samples_per_s;
	double tokens_per_s; /* 0 without a sequence length */
	double model_flop_per_iteration; /* model FLOP (fwd + bwd, counting
					    recomputation as Megatron does) */
	double tflops_per_device;        /* model FLOP / devices / time / 1e12 */
	double mfu;                      /* model FLOP / (time * sum of peaks),
					    recomputation not counted */
	double speed_used, speed_all;    /* the sums of peaks MFU divides by:
					    over the devices used and over all
					    (FLOP/s; the simulator's type
					    speeds, profiles counted) */
	double bubble_fraction;          /* pipeline idle share, 0 without pp */
	uint32_t n_devices;
	struct tp_report_device *devices;
	uint32_t n_links;
	struct tp_report_link *links; /* only links that carried traffic */
	/* when infeasible: the worst device and why */
	uint32_t worst_device;  /* device index, or UINT32_MAX */
	double over_bytes;      /* by how much it exceeds its capacity */
	char reason[512];       /* one sentence: device, figure, dominant term,
				   and the smallest change that would fit */
	char approximations[1024]; /* what this estimate leaves out */
	char precision[256];      /* the precision fallback the devices
				     were priced at (core/precision.h), or
				     "" when they run the model's dtype */
	struct tp_report_basis basis;
};

void tp_report_init(struct tp_report *r);
/* Allocate per-device storage (zeroed). */
enum tp_status tp_report_alloc(struct tp_report *r, uint32_t n_devices,
			       struct tp_error *err);
void tp_report_release(struct tp_report *r);

#endif
