/*
 * precision.c - the precision a device computes a model in (precision.h).
 */
#include "precision.h"

#include <stdio.h>

#include "cost.h"

enum tp_dtype tp_precision_run_dtype(const struct tp_device_type *t,
				     enum tp_dtype model)
{
	if (model != TP_DTYPE_BF16 || t->peak_flops[TP_DTYPE_BF16] > 0)
		return model;
	/* No bf16 units: V100/T4 tensor cores run fp16 (8x their fp32
	 * rate), P100 runs packed fp16 (2x); Megatron-LM trains those in
	 * --fp16 with dynamic loss scaling. */
	return t->peak_flops[TP_DTYPE_FP16] > 0 ? TP_DTYPE_FP16 : TP_DTYPE_FP32;
}

double tp_precision_hi_peak(const struct tp_device_type *t,
			    enum tp_dtype model)
{
	return tp_precision_gemm_peak(t, model == TP_DTYPE_FP8 ? TP_DTYPE_BF16
							       : model);
}

enum tp_status tp_precision_check(const struct tp_cluster *c,
				  enum tp_dtype model, struct tp_error *err)
{
	if (model != TP_DTYPE_FP8)
		return TP_OK;
	for (size_t d = 0; d < c->devices.n; d++) {
		const struct tp_device_type *t =
			&c->types.v[c->devices.v[d].type];

		if (t->peak_flops[TP_DTYPE_FP8] > 0)
			continue;
		return tp_error_set(
			err, TP_EINPUT,
			"fp8 model, but device %s is a %s, which has no FP8 "
			"units (its peak_flops.fp8 is 0): build the model with "
			"--dtype bf16, or plan it on FP8 GPUs (H100, H200, L4, "
			"MI300X)",
			c->devices.v[d].name, t->name);
	}
	return TP_OK;
}

double tp_precision_gemm_peak(const struct tp_device_type *t,
			      enum tp_dtype model)
{
	enum tp_dtype run = tp_precision_run_dtype(t, model);

	return t->peak_flops[run] > 0 ? t->peak_flops[run]
				      : t->peak_flops[TP_DTYPE_FP32];
}

/* Rank of a fallback: the job runs the lowest of its devices'. */
static int rank_of(enum tp_dtype model, enum tp_dtype run)
{
	if (run == model)
		return 2;
	return run == TP_DTYPE_FP16 ? 1 : 0;
}

enum tp_dtype tp_precision_job(const struct tp_cluster *c, const uint32_t *devs,
			       size_t n, enum tp_dtype model, char *buf,
			       size_t size)
{
	enum tp_dtype job = model;
	const struct tp_device_type *why = NULL;
	size_t count = devs ? n : c->devices.n;

	if (buf && size)
		buf[0] = '\0';
	if (model == TP_DTYPE_FP8) {
		/* no fallback (tp_precision_check refuses it); the sentence
		 * says what the simulator priced */
		const struct tp_device_type *t =
			count && (devs ? devs[0] : 0) < c->devices.n
				? &c->types.v[c->devices.v[devs ? devs[0] : 0]
						      .type]
				: NULL;
		if (t && buf && size)
			snprintf(buf, size,
				 "fp8 (Transformer Engine hybrid: E4M3 forward, "
				 "E5M2 gradients): linear-layer GEMMs at the FP8 "
				 "peak (%.4g TFLOP/s on %s) + casts, attention, "
				 "router and LM head in bf16; +%.3g B/param FP8 "
				 "weight cache (an upper bound)",
				 t->peak_flops[TP_DTYPE_FP8] / 1e12, t->name,
				 tp_cost_constants.fp8_weight_cache);
		return model;
	}
	for (size_t i = 0; i < count; i++) {
		uint32_t d = devs ? devs[i] : (uint32_t)i;
		const struct tp_device_type *t;
		enum tp_dtype run;

		if (d >= c->devices.n)
			continue;
		t = &c->types.v[c->devices.v[d].type];
		run = tp_precision_run_dtype(t, model);
		if (rank_of(model, run) < rank_of(model, job)) {
			job = run;
			why = t;
		}
	}
	if (!why || !buf || !size)
		return job;
	if (job == TP_DTYPE_FP16)
		snprintf(buf, size,
			 "%s model, but %s has no %s units: simulated as fp16 "
			 "(%.4g TFLOP/s) with loss scaling; export writes "
			 "--fp16",
			 tp_dtype_name(model), why->name, tp_dtype_name(model),
			 why->peak_flops[TP_DTYPE_FP16] / 1e12);
	else
		snprintf(buf, size,
			 "%s model, but %s has neither %s nor fp16 units: "
			 "simulated as fp32 (%.4g TFLOP/s); export writes no "
			 "mixed-precision flag",
			 tp_dtype_name(model), why->name, tp_dtype_name(model),
			 why->peak_flops[TP_DTYPE_FP32] / 1e12);
	return job;
}
