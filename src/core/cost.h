/*
 * cost.h - the cost formulas every estimate uses: which ops are GEMMs,
 * the time of a kernel on a device (roofline with a GEMM efficiency
 * curve), the time of an op's forward and backward, ring and
 * hierarchical collectives, and the memory of the model state per
 * parameter and per ZeRO shard.
 *
 * The simulator (src/sim/), the quick estimate (estimate.h), gradient
 * compression (src/compress/), the GNN's features (src/gnn/) and the
 * action space (src/search/) all price work through these functions, so
 * a formula or a constant is written once.  Who adds what on top (the
 * simulator's calibrated gemm_sustained, link efficiencies and measured
 * routes; the estimate's nominal batch) is theirs.
 *
 * Constants: per device type in data/devices.json (struct tp_device_type,
 * cluster.h); those no device type gives in one table,
 * tp_cost_constants (cost.c, each with its source).  A device type's
 * cost fields that are unset take the table's figures
 * (tp_cost_type_defaults): the same figures a topology file's own type
 * gets when it leaves them out (src/io/README 2a).
 *
 * Pure functions of their arguments; no allocation, no errors.
 */
#ifndef TP_COST_H
#define TP_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "model.h"

/* The cost model's constants that no device type gives (cost.c). */
struct tp_cost_constants {
	/* figures of a device type that leaves them unset */
	double gemm_efficiency;   /* fraction of peak of a large GEMM */
	double gemm_half_flop;    /* FLOP per kernel at half that */
	double memory_efficiency; /* fraction of memory bandwidth reached */
	double kernel_overhead_s; /* per kernel launch */
	double reserved_bytes;    /* runtime reservation */
	double peak_flops;        /* a type without any peak FLOP/s */
	double fp8_weight_cache;  /* bytes per parameter TE adds under fp8 */
	double memory_bw_Bps;     /* a type without memory bandwidth */
	/* op costs */
	double backward_mem_factor; /* backward bytes / forward bytes */
	double gemm_k_half;  /* GEMM shape: the k at half efficiency */
	double gemm_split_k; /* k per split of a split-K GEMM */
	/* the quick estimate (estimate.h) */
	double estimate_vector_efficiency; /* non-GEMM work: this fraction of
					      the GEMM efficiency, at the
					      dtype's peak */
	double estimate_min_efficiency;    /* floor of an efficiency */
	double estimate_kernels;           /* kernels per op, fwd + bwd */
};

extern const struct tp_cost_constants tp_cost_constants;

/* Does an op of this kind run as GEMMs (matmul, convolution, attention,
 * the MoE router), i.e. on the tensor cores at the GEMM efficiency
 * curve?  Other kinds are vector work at the FP32 peak. */
bool tp_cost_gemm_like(enum tp_op_kind kind);

/* Fill the unset cost fields of t (efficiencies and gemm_half_flop
 * <= 0, kernel_overhead_s < 0 or not finite) from tp_cost_constants; a
 * reserved_bytes that is negative or not finite becomes 0. */
void tp_cost_type_defaults(struct tp_device_type *t);

/* A device type as the formulas see it. */
struct tp_cost_device {
	double peak;     /* FLOP/s for the model's dtype (FP32's if none) */
	double peak_vec; /* FLOP/s of vector work (the FP32 peak) */
	double peak_hi;  /* FLOP/s of GEMM-like work that stays in 16-bit
			    under fp8 (attention core, router, LM head:
			    precision.h); == peak for other dtypes */
	double mem_bw;   /* bytes/s */
	double gemm_eff; /* large-GEMM efficiency (x gemm_sustained) */
	double gemm_half_flop, mem_eff, kernel_s;
	double elem_bytes; /* bytes of the model's dtype (an op's shape) */
	double gemm_shape_half; /* > 0: matmuls at tp_cost_gemm_shape_eff
				   of their shape with this half point
				   (the runtime's gemm_shape_half; 0 as
				   tp_cost_device_init leaves it) */
	double half_peak; /* the peak gemm_half_flop is given at: the type's
			     16-bit peak, else its FP32 peak (devices.json:
			     about 10 us of a GEMM there); a kernel at
			     another peak scales it (tp_cost_kernel_s) */
};

/*
 * The figures of type t (its unset fields defaulted as
 * tp_cost_type_defaults does) for work in dtype; its GEMM efficiency
 * times gemm_sustained when that is > 0 (the simulator's calibration).
 */
void tp_cost_device_init(struct tp_cost_device *d,
			 const struct tp_device_type *t, enum tp_dtype dtype,
			 double gemm_sustained);

/* GEMM efficiency of a kernel of `flop` FLOP: eff * flop / (flop +
 * half), eff itself for flop <= 0. */
double tp_cost_gemm_eff(double eff, double half_flop, double flop);

/*
 * Seconds of `kernels` kernels of an op of this kind doing `flop` FLOP
 * and moving `bytes` bytes on d: matmuls and convolutions at d->peak,
 * attention and routers at d->peak_hi, times the
 * efficiency curve of flop / kernels, others at d->peak_vec; memory at
 * mem_bw * mem_eff; the roofline max of the two, except attention whose
 * unfused GEMMs and softmax passes run one after the other (sum); plus
 * kernels * kernel_s.
 */
double tp_cost_kernel_s(const struct tp_cost_device *d, enum tp_op_kind kind,
			double flop, double bytes, double kernels);

/*
 * The factor (<= 1) a GEMM's shape puts on its efficiency: a kernel of
 * m x n outputs over k inputs keeps the SMs busy in proportion to its
 * output tiles (NVIDIA's "Matrix Multiplication Background" user's
 * guide: tile and wave quantization), x / (x + half) with x = m n (times
 * k / gemm_split_k when k is larger: split-K), and spends a k-loop
 * prologue and epilogue, k / (k + gemm_k_half).  1 when half <= 0.
 */
double tp_cost_gemm_shape_eff(double m, double n, double k, double half);

/*
 * Forward and backward seconds of op for `samples` samples on d, FLOP
 * and activations divided by div (tensor parallelism, sequence
 * parallelism), weights by wdiv: the forward one kernel group over
 * flop and mem_bytes + weights, the backward over backward_flop and
 * bmf x the activation bytes plus twice the weights (read the weights,
 * write their gradients), twice the kernels for ops with weights.
 * Attention runs two kernels per pass.  0 for input ops.
 */
void tp_cost_op_s(const struct tp_cost_device *d, const struct tp_op *op,
		  double samples, double div, double wdiv, double bmf,
		  double *fwd, double *bwd);

/* Collectives over n participants of S bytes each, on NCCL-style rings
 * (README of src/sim, section 3). */
enum tp_cost_coll {
	TP_COST_ALL_REDUCE,     /* 2(n-1) steps, 2(n-1)/n S per participant */
	TP_COST_REDUCE_SCATTER, /* (n-1) steps, (n-1)/n S */
	TP_COST_ALL_GATHER      /* (n-1) steps, (n-1)/n S */
};

/* Latency steps of a ring collective over n participants. */
double tp_cost_ring_steps(enum tp_cost_coll k, double n);
/* Bytes each participant sends per byte of its message. */
double tp_cost_ring_traffic(enum tp_cost_coll k, double n);
/* Seconds of a ring collective of S bytes: steps x alpha (latency per
 * step) + traffic x S / beta (bytes/s of the slowest participant). */
double tp_cost_ring_s(enum tp_cost_coll k, double n, double S, double alpha,
		      double beta);
/* Hierarchical all-reduce over `nodes` nodes of `per_node` participants:
 * intra-node reduce-scatter, all-reduce of S / per_node across the
 * nodes, intra-node all-gather; (alpha, beta) inside and across. */
double tp_cost_hier_allreduce_s(double per_node, double nodes, double S,
				double alpha_in, double beta_in,
				double alpha_x, double beta_x);

/* Model state per parameter, bytes: mixed precision (fp16/bf16 weights)
 * 2 + 2 + (12 Adam | 8 momentum | 4 SGD), the optimizer part including
 * the fp32 master copy; fp32: 4 + 4 + (8 | 4 | 0); fp8 as bf16 plus
 * tp_cost_constants.fp8_weight_cache bytes in the weights (Transformer
 * Engine's FP8 copy of each weight and its transpose; an upper bound: it
 * is counted on every parameter, TE casts only the GEMM weights).  step: the optimizer
 * step's memory traffic per parameter (read and write the state and
 * master, read the gradient, write the weights - read them too without a
 * master copy). */
struct tp_cost_state {
	double weights, grads, optim, step;
};

void tp_cost_state_init(struct tp_cost_state *s, enum tp_dtype dtype,
			enum tp_optimizer opt);

/* What the runtime adds to s: a 16-bit model's gradients held in an
 * fp32 buffer (grad_buffer_fp32: Megatron-Core's main_grad, 4 bytes per
 * parameter, read by the optimizer step), and returns the bytes per
 * parameter of the gradients' copy in the all-reduce buckets
 * (bucket_copy: PyTorch DDP's gradient_as_bucket_view=False; in the
 * dtype they are reduced in, never sharded), else 0.  The simulator and
 * the search's memory estimate both count model state this way (src/sim
 * README section 5). */
double tp_cost_state_runtime(struct tp_cost_state *s, bool grad_buffer_fp32,
			     bool bucket_copy, bool reduce_fp32);

/* Bytes of weights, gradients and optimizer state per byte of
 * parameters (model dtype), unsharded. */
double tp_cost_state_factor(enum tp_dtype dtype, enum tp_optimizer opt);

/* What ZeRO shards over the data-parallel replicas. */
enum tp_cost_part {
	TP_COST_WEIGHTS,   /* stage 3 */
	TP_COST_GRADS,     /* stage >= 2 */
	TP_COST_OPTIMIZER  /* stage >= 1 */
};

/* The factor ZeRO stage `zero` divides a part of the model state by on
 * each of dp replicas: dp or 1. */
double tp_cost_zero_div(uint32_t zero, enum tp_cost_part part, double dp);

#endif
