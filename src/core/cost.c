/*
 * cost.c - the cost formulas (cost.h) and the one table of constants no
 * device type gives.
 */
#include "cost.h"

#include <math.h>

#include "precision.h"

/*
 * The constants, with their sources.  A figure used by several modules
 * is read from here, never written again.
 */
const struct tp_cost_constants tp_cost_constants = {
	/* A device type that leaves its cost fields out (a topology's own
	 * type without "base", or one built in code) gets these; they are
	 * the documented defaults of src/io/README 2a and the schemas.
	 * 0.8: between the benchmark GEMM efficiencies of data/devices.json
	 * (0.70 for GeForce cards, 0.87 for A100 SXM) and its memory
	 * efficiency of GPUs without STREAM-like figures (assumption).
	 * 1e9 FLOP: a GEMM at half its efficiency takes about 10 us on a
	 * 100 TFLOP/s GPU (devices.json's half points are 0.1e9-13e9 FLOP;
	 * assumption).  5 us per kernel launch (assumption, as every entry
	 * of devices.json).  1 GB reserved: CUDA context, NCCL buffers and
	 * allocator fragmentation (devices.json's figure for most GPUs). */
	.gemm_efficiency = 0.8,
	.gemm_half_flop = 1e9,
	.memory_efficiency = 0.8,
	.kernel_overhead_s = 5e-6,
	.reserved_bytes = 1e9,
	/* A type without peak FLOP/s or memory bandwidth cannot come from a
	 * file (the loaders require both); one built in code still gets
	 * finite times: 1 TFLOP/s, 100 GB/s (a guard, not a figure of any
	 * device). */
	.peak_flops = 1e12,
	/* Transformer Engine under fp8 keeps, beside the bf16 weight, an
	 * FP8 (E4M3) copy of each GEMM weight for the forward and its
	 * transpose for the backward's data-gradient GEMM (Hopper's FP8
	 * GEMMs take only the TN layout): 1 + 1 bytes per parameter.
	 * Counted on every parameter: an upper bound (norms, embeddings and
	 * the LM head are not cast). */
	.fp8_weight_cache = 2.0,
	.memory_bw_Bps = 1e11,
	/* Backward kernels read the forward's activations and write their
	 * gradients: twice the forward's bytes (src/sim/README section 2;
	 * the simulator's backward_mem_factor defaults to it). */
	.backward_mem_factor = 2.0,
	/* GEMM efficiency by shape (tp_cost_gemm_shape_eff, under a
	 * runtime's gemm_shape_half): the k-loop's prologue and epilogue
	 * (loading the first tiles, writing the output tile) cost about two
	 * iterations of a 32-deep main loop: k / (k + 64) (assumption,
	 * after NVIDIA's "Matrix Multiplication Background" user's guide,
	 * which explains the k dependence by arithmetic intensity); a
	 * GEMM whose m x n output leaves SMs idle splits its reduction
	 * (cuBLAS split-K) in chunks of 1024 of k (assumption). */
	.gemm_k_half = 64,
	.gemm_split_k = 1024,
	/* The quick estimate ranks device types and weighs groups at a
	 * nominal batch: vector work at a quarter of the GEMM efficiency
	 * of the dtype's peak (elementwise kernels reach a few percent of
	 * tensor-core peak, but are memory bound anyway: the max() with
	 * the memory time decides), efficiencies floored at 1e-3, three
	 * kernels per op (one forward, two backward).  The GNN's shipped
	 * weights were trained on these figures (estimate.h). */
	.estimate_vector_efficiency = 0.25,
	.estimate_min_efficiency = 1e-3,
	.estimate_kernels = 3,
};

bool tp_cost_gemm_like(enum tp_op_kind kind)
{
	return kind == TP_OP_MATMUL || kind == TP_OP_CONV ||
	       kind == TP_OP_ATTENTION || kind == TP_OP_ROUTER;
}

void tp_cost_type_defaults(struct tp_device_type *t)
{
	const struct tp_cost_constants *k = &tp_cost_constants;

	if (!(t->gemm_efficiency > 0))
		t->gemm_efficiency = k->gemm_efficiency;
	if (!(t->gemm_half_flop > 0))
		t->gemm_half_flop = k->gemm_half_flop;
	if (!(t->memory_efficiency > 0))
		t->memory_efficiency = k->memory_efficiency;
	if (!(t->kernel_overhead_s >= 0) || !isfinite(t->kernel_overhead_s))
		t->kernel_overhead_s = k->kernel_overhead_s;
	if (!(t->reserved_bytes >= 0) || !isfinite(t->reserved_bytes))
		t->reserved_bytes = 0;
}

void tp_cost_device_init(struct tp_cost_device *d,
			 const struct tp_device_type *type, enum tp_dtype dtype,
			 double gemm_sustained)
{
	struct tp_device_type t = *type;

	tp_cost_type_defaults(&t);
	d->gemm_eff = t.gemm_efficiency;
	if (gemm_sustained > 0)
		d->gemm_eff *= gemm_sustained;
	d->gemm_half_flop = t.gemm_half_flop;
	d->mem_eff = t.memory_efficiency;
	d->kernel_s = t.kernel_overhead_s;
	d->peak = tp_precision_gemm_peak(&t, dtype);
	d->elem_bytes = tp_dtype_bytes(dtype);
	d->gemm_shape_half = 0;
	d->peak_hi = tp_precision_hi_peak(&t, dtype);
	d->peak_vec = t.peak_flops[TP_DTYPE_FP32] > 0
			      ? t.peak_flops[TP_DTYPE_FP32]
			      : d->peak;
	if (!(d->peak > 0))
		d->peak = d->peak_vec = tp_cost_constants.peak_flops;
	if (!(d->peak_vec > 0))
		d->peak_vec = d->peak;
	if (!(d->peak_hi > 0))
		d->peak_hi = d->peak;
	d->mem_bw = t.memory_bw_Bps > 0 ? t.memory_bw_Bps
					: tp_cost_constants.memory_bw_Bps;
	d->half_peak = fmax(t.peak_flops[TP_DTYPE_BF16],
			    t.peak_flops[TP_DTYPE_FP16]);
	if (!(d->half_peak > 0))
		d->half_peak = d->peak_vec;
}

double tp_cost_gemm_eff(double eff, double half_flop, double flop)
{
	if (!(flop > 0))
		return eff;
	return eff * flop / (flop + half_flop);
}

/* tp_cost_kernel_s with the compute time of GEMM-like work divided by
 * shape (<= 1: tp_cost_gemm_shape_eff of the kernel's dimensions). */
static double kernel_shaped_s(const struct tp_cost_device *d,
			      enum tp_op_kind kind, double flop, double bytes,
			      double kernels, double shape)
{
	double comp, mem;

	if (tp_cost_gemm_like(kind)) {
		double per = kernels > 0 ? flop / kernels : flop;
		double pk = kind == TP_OP_ATTENTION || kind == TP_OP_ROUTER
				    ? d->peak_hi
				    : d->peak;
		/* the half point is a time (about 10 us of the kernel):
		 * FLOP at the kernel's own peak */
		double half = d->half_peak > 0
				      ? d->gemm_half_flop * pk / d->half_peak
				      : d->gemm_half_flop;
		double eff = tp_cost_gemm_eff(d->gemm_eff, half, per) * shape;
		comp = flop > 0 ? flop / (pk * eff) : 0;
	} else {
		comp = flop > 0 ? flop / d->peak_vec : 0;
	}
	mem = bytes > 0 ? bytes / (d->mem_bw * d->mem_eff) : 0;
	if (kind == TP_OP_ATTENTION)
		return comp + mem + kernels * d->kernel_s;
	return (comp > mem ? comp : mem) + kernels * d->kernel_s;
}

double tp_cost_kernel_s(const struct tp_cost_device *d, enum tp_op_kind kind,
			double flop, double bytes, double kernels)
{
	return kernel_shaped_s(d, kind, flop, bytes, kernels, 1);
}

double tp_cost_gemm_shape_eff(double m, double n, double k, double half)
{
	const struct tp_cost_constants *c = &tp_cost_constants;
	double x = m * n;

	if (!(half > 0) || !(m > 0 && n > 0 && k > 0))
		return 1;
	if (k > c->gemm_split_k)
		x *= k / c->gemm_split_k;
	return x / (x + half) * k / (k + c->gemm_k_half);
}

/* The shape factors of a matmul's GEMMs (d->gemm_shape_half > 0): per
 * kernel, for `samples` samples, activations divided by div and weights
 * by wdiv, m rows (tokens), n outputs, k inputs, derived from the op's
 * figures (tokens = flop / (2 params), n = outputs per token, k = params
 * / n; tensor parallelism divides n of a column- or vocabulary-split op,
 * k of a row-split one); the forward's factor *sf and the backward's *sb
 * (its data- and weight-gradient GEMMs, (m, k, n) and (k, n, m), at the
 * harmonic mean: they take equal FLOP).  1 for other ops:
 * convolutions (cuDNN's algorithms are not GEMMs of one shape),
 * attention, ops without weights. */
static void op_shape(const struct tp_cost_device *d, const struct tp_op *op,
		     double samples, double div, double wdiv, double *sf,
		     double *sb)
{
	double B = d->elem_bytes, P, tok, m, n, k, ed, ew;

	*sf = *sb = 1;
	if (op->kind != TP_OP_MATMUL || !(d->gemm_shape_half > 0) ||
	    !(op->param_bytes > 0) || !(op->flop > 0) ||
	    !(op->out_bytes > 0) || !(B > 0))
		return;
	P = op->param_bytes / B;
	tok = op->flop / (2 * P);
	n = op->out_bytes / B / tok;
	k = P / n;
	m = tok * samples * wdiv / div;
	if (op->tp_split == TP_SPLIT_ROW)
		k /= wdiv;
	else if (op->tp_split != TP_SPLIT_NONE)
		n /= wdiv;
	*sf = tp_cost_gemm_shape_eff(m, n, k, d->gemm_shape_half);
	ed = tp_cost_gemm_shape_eff(m, k, n, d->gemm_shape_half);
	ew = tp_cost_gemm_shape_eff(k, n, m, d->gemm_shape_half);
	*sb = 2 / (1 / ed + 1 / ew);
}

void tp_cost_op_s(const struct tp_cost_device *d, const struct tp_op *op,
		  double samples, double div, double wdiv, double bmf,
		  double *fwd, double *bwd)
{
	double f = op->flop * samples / div;
	double fb = op->backward_flop * samples / div;
	double act = op->mem_bytes * samples / div;
	double w = op->param_bytes / wdiv;
	double kf = op->kind == TP_OP_ATTENTION ? 2 : 1;
	double kb = (op->param_bytes > 0 || op->kind == TP_OP_ATTENTION)
			    ? 2 * kf
			    : 1;
	double sf, sb;

	struct tp_cost_device hi;

	if (op->kind == TP_OP_INPUT) {
		*fwd = *bwd = 0;
		return;
	}
	if (op->tp_split == TP_SPLIT_VOCAB && d->peak_hi != d->peak) {
		/* The LM head is Megatron's plain ColumnParallelLinear, not a
		 * TE module: bf16 under fp8. */
		hi = *d;
		hi.peak = hi.peak_hi;
		d = &hi;
	}
	op_shape(d, op, samples, div, wdiv, &sf, &sb);
	*fwd = kernel_shaped_s(d, op->kind, f, act + w, kf, sf);
	*bwd = kernel_shaped_s(d, op->kind, fb, bmf * act + 2 * w, kb, sb);
}

double tp_cost_ring_steps(enum tp_cost_coll k, double n)
{
	return (k == TP_COST_ALL_REDUCE ? 2 : 1) * (n - 1);
}

double tp_cost_ring_traffic(enum tp_cost_coll k, double n)
{
	return (k == TP_COST_ALL_REDUCE ? 2 : 1) * (n - 1) / n;
}

double tp_cost_ring_s(enum tp_cost_coll k, double n, double S, double alpha,
		      double beta)
{
	return tp_cost_ring_steps(k, n) * alpha +
	       tp_cost_ring_traffic(k, n) * S / beta;
}

double tp_cost_hier_allreduce_s(double per_node, double nodes, double S,
				double alpha_in, double beta_in,
				double alpha_x, double beta_x)
{
	return tp_cost_ring_s(TP_COST_REDUCE_SCATTER, per_node, S, alpha_in,
			      beta_in) +
	       tp_cost_ring_s(TP_COST_ALL_REDUCE, nodes, S / per_node, alpha_x,
			      beta_x) +
	       tp_cost_ring_s(TP_COST_ALL_GATHER, per_node, S, alpha_in,
			      beta_in);
}

void tp_cost_state_init(struct tp_cost_state *s, enum tp_dtype dtype,
			enum tp_optimizer opt)
{
	bool mixed = dtype != TP_DTYPE_FP32; /* fp32 master copy */
	double w = tp_dtype_bytes(dtype), st;

	switch (opt) {
	case TP_OPT_ADAM:
		st = 8; /* two fp32 moments */
		break;
	case TP_OPT_MOMENTUM:
		st = 4;
		break;
	default:
		st = 0;
		break;
	}
	s->weights = w;
	s->grads = w;
	s->optim = st + (mixed ? 4 : 0);
	s->step = 2 * s->optim + s->grads + (mixed ? w : 2 * w);
	if (dtype == TP_DTYPE_FP8) {
		/* the cache is rewritten from the updated weights each step */
		s->weights += tp_cost_constants.fp8_weight_cache;
		s->step += tp_cost_constants.fp8_weight_cache;
	}
}

double tp_cost_state_runtime(struct tp_cost_state *s, bool grad_buffer_fp32,
			     bool bucket_copy, bool reduce_fp32)
{
	if (grad_buffer_fp32 && s->grads < 4) {
		s->step += 4 - s->grads;
		s->grads = 4;
	}
	if (!bucket_copy)
		return 0;
	return reduce_fp32 ? 4 : s->grads;
}

double tp_cost_state_factor(enum tp_dtype dtype, enum tp_optimizer opt)
{
	struct tp_cost_state s;

	tp_cost_state_init(&s, dtype, opt);
	return (s.weights + s.grads + s.optim) / tp_dtype_bytes(dtype);
}

double tp_cost_zero_div(uint32_t zero, enum tp_cost_part part, double dp)
{
	uint32_t from = part == TP_COST_WEIGHTS ? 3
			: part == TP_COST_GRADS ? 2
						: 1;

	return zero >= from ? dp : 1;
}
