/*
 * estimate.c - the quick per-op time estimate (estimate.h).
 */
#include "estimate.h"

#include <math.h>
#include <string.h>

double tp_estimate_op_time(const struct tp_model *m,
			   const struct tp_cluster *c, uint32_t op, uint32_t t,
			   double batch_hint)
{
	const struct tp_op *o = &m->ops.v[op];
	const struct tp_device_type *ty = &c->types.v[t];
	double peak, eff, half, bw, meff, ovh, ce, f, fwd, bwd;

	for (uint32_t i = 0; i < o->n_prof; i++) {
		const struct tp_profile *p = &m->profiles.v[o->prof_first + i];
		if (p->batch > 0 && strcmp(p->device_type, ty->name) == 0)
			return (p->forward_s + p->backward_s) / p->batch;
	}
	if (o->kind == TP_OP_INPUT)
		return 0;
	peak = ty->peak_flops[m->dtype] > 0 ? ty->peak_flops[m->dtype]
					    : ty->peak_flops[TP_DTYPE_FP32];
	if (!(peak > 0))
		peak = 1e13;
	eff = ty->gemm_efficiency > 0 ? ty->gemm_efficiency : 0.6;
	half = ty->gemm_half_flop > 0 ? ty->gemm_half_flop : 1e9;
	bw = ty->memory_bw_Bps > 0 ? ty->memory_bw_Bps : 5e11;
	meff = ty->memory_efficiency > 0 ? ty->memory_efficiency : 0.7;
	ovh = ty->kernel_overhead_s > 0 ? ty->kernel_overhead_s : 5e-6;
	f = o->flop * batch_hint;
	if (o->kind == TP_OP_MATMUL || o->kind == TP_OP_CONV ||
	    o->kind == TP_OP_ATTENTION)
		ce = eff * f / (f + half);
	else
		ce = eff * 0.25;
	if (!(ce > 0))
		ce = 1e-3;
	fwd = fmax(o->flop / (peak * ce), o->mem_bytes / (bw * meff));
	bwd = fmax(o->backward_flop / (peak * ce),
		   2 * o->mem_bytes / (bw * meff));
	return fwd + bwd + 3 * ovh / batch_hint;
}
