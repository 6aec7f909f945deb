/*
 * precision.h - the precision a device actually computes a model in.
 *
 * A model names one dtype (model.h); a device type has peak FLOP/s per
 * dtype (cluster.h, data/devices.json), 0 where it has no such units.
 * bf16 needs Ampere-class tensor cores (or CDNA 2+): on V100, P100,
 * GTX 1080 Ti and T4 a bf16 job cannot run bf16.  tagplan does not price
 * it at the fp32 rate silently: the job falls back explicitly to fp16
 * with loss scaling (Megatron-LM's --fp16, what those GPUs' tensor cores
 * run), or to fp32 where the type has no fp16 rate either, and the
 * simulator, the report, the plan's summary and export all say so.
 *
 * Pure functions of their arguments; no allocation.
 */
#ifndef TP_PRECISION_H
#define TP_PRECISION_H

#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "error.h"
#include "model.h"

/* The dtype a device of type t runs a model of dtype `model` in: the
 * model's own when t has units for it (peak > 0); bf16 without bf16
 * units falls back to fp16 when t has an fp16 rate, else fp32.  fp32 and
 * fp16 always run as themselves (fp16 at the fp32 rate where the table
 * has no fp16 figure, as before). */
enum tp_dtype tp_precision_run_dtype(const struct tp_device_type *t,
				     enum tp_dtype model);

/* Peak FLOP/s of GEMMs on t for a model of dtype `model`: the run
 * dtype's peak, else the fp32 peak (0 when t has neither). */
double tp_precision_gemm_peak(const struct tp_device_type *t,
			      enum tp_dtype model);

/*
 * The precision the job runs in on devices devs[0..n) of c (every device
 * when devs is NULL) and, when that is not the model's dtype, one
 * sentence saying so into buf ("" otherwise; buf may be NULL): "bf16
 * model, but V100-SXM2-16GB has no bf16 units: simulated as fp16
 * (125 TFLOP/s tensor cores) with loss scaling; export writes --fp16".
 * The job's dtype is the lowest fallback of any device (one run has one
 * precision); devices that have the model's dtype also have the
 * fallback's rate in every table entry (A100, H100: fp16 = bf16), so
 * pricing each device at its own run dtype agrees with it.
 */
enum tp_dtype tp_precision_job(const struct tp_cluster *c, const uint32_t *devs,
			       size_t n, enum tp_dtype model, char *buf,
			       size_t size);

#endif
