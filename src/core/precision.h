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
 * fp8 is Transformer Engine's hybrid recipe (E4M3 forward, E5M2
 * gradients, per-tensor delayed scaling): the linear layers' GEMMs run at
 * the type's FP8 peak; the attention core (flash attention in bf16),
 * the MoE router and the LM head (Megatron's output layer is not a TE
 * module) at the bf16 peak; tensors between ops, gradients and
 * communication in bf16 (2 bytes).  There is no fallback: an fp8 model on
 * a type without FP8 units (peak_flops.fp8 = 0) is refused
 * (tp_precision_check) with the fix, --dtype bf16.
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

/* Peak FLOP/s of the GEMM-like work that does not run in fp8 (attention
 * core, router, LM head): for an fp8 model the bf16 rate (as
 * tp_precision_gemm_peak of a bf16 model), else the same as
 * tp_precision_gemm_peak. */
double tp_precision_hi_peak(const struct tp_device_type *t,
			    enum tp_dtype model);

/* Whether a model of dtype `model` can run on every device of c: TP_OK,
 * or TP_EINPUT naming the first device type without FP8 units for an
 * fp8 model and the fix (--dtype bf16).  Other dtypes always pass (their
 * fallbacks are explicit, tp_precision_job). */
enum tp_status tp_precision_check(const struct tp_cluster *c,
				  enum tp_dtype model, struct tp_error *err);

/*
 * The precision the job runs in on devices devs[0..n) of c (every device
 * when devs is NULL) and, when that is not the model's dtype, one
 * sentence saying so into buf ("" otherwise; buf may be NULL): "bf16
 * model, but V100-SXM2-16GB has no bf16 units: simulated as fp16
 * (125 TFLOP/s tensor cores) with loss scaling; export writes --fp16".
 * For an fp8 model the job runs fp8 and buf gets the sentence of what
 * that prices (FP8 GEMMs and their casts, bf16 attention, the weight cache), with the
 * first device's FP8 peak.
 * The job's dtype is the lowest fallback of any device (one run has one
 * precision); devices that have the model's dtype also have the
 * fallback's rate in every table entry (A100, H100: fp16 = bf16), so
 * pricing each device at its own run dtype agrees with it.
 */
enum tp_dtype tp_precision_job(const struct tp_cluster *c, const uint32_t *devs,
			       size_t n, enum tp_dtype model, char *buf,
			       size_t size);

#endif
