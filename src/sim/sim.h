/*
 * sim.h - the simulator: one training iteration of a plan on a cluster.
 *
 * Usage:
 *   struct tp_sim *sim = tp_sim_new(model, cluster, &opts, &err);
 *   struct tp_sim_scratch *s = tp_sim_scratch_new(sim);     one per thread
 *   tp_sim_run(sim, plan, s, &report, NULL, &err);           many times
 *   tp_sim_scratch_free(s); tp_sim_free(sim);
 *
 * tp_sim_new precomputes what does not depend on the plan (op times per
 * device type, ...).  tp_sim_run is a pure function of (model, cluster,
 * plan): it never modifies the sim, so several threads may run it at once,
 * each with its own scratch.  The model and cluster are borrowed and must
 * outlive the sim.
 *
 * Errors: TP_EINPUT (with a JSON path into the plan) when the plan is
 * inconsistent with the model or cluster (tp_plan_validate), when its
 * groups depend on each other both ways (each group must be a contiguous
 * slice of the model's topological order, so the group graph is a DAG),
 * and, for the interleaved schedule, when chunk c of a stage does not sit
 * at pipeline position c*p + s.  An infeasible plan (out of memory on
 * some device) is not an error: the report says feasible=false, names the
 * device, by how much, what dominates and the smallest change that fits.
 *
 * Speed: identical data-parallel replicas are simulated once (their flows
 * still load the links), tensor-parallel ranks as one task; GPT-3 175B on
 * 1024 GPUs takes about 0.5 ms once the scratch is warm.
 *
 * The cost model, its constants and what it leaves out: src/sim/README.
 */
#ifndef TP_SIM_H
#define TP_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/profile.h"
#include "core/report.h"
#include "core/runtime.h"
#include "core/strbuf.h"

struct tp_sim;
struct tp_sim_scratch;
struct tp_sfb;

/*
 * Cost-model constants that are not per device type (those live in
 * data/devices.json).  Defaults and their justification: src/sim/README.
 */
/*
 * The busiest expert-parallel rank's tokens over the mean when neither
 * the plan nor the strategy gives one: 1.25, the expert capacity factor
 * Switch Transformer trained its main models with (Fedus, Zoph and
 * Shazeer, JMLR 23(120), 2022, section 2.2 and Table 1: capacity factors
 * 1.0, 1.25 and 2.0 compared, 1.25 the lowest with few dropped tokens),
 * i.e. the load published training provisions an expert for.  It is a
 * provisioned figure, not a measured per-step imbalance: override it per
 * plan ("expert_imbalance", strategy key imbalance=X) or per runtime
 * profile (behaviour.expert_imbalance) with a measured one.
 */
#define TP_SIM_EXPERT_IMBALANCE 1.25

struct tp_sim_params {
	double gemm_sustained;   /* training sustains this fraction of a
				    device type's (benchmark) gemm_efficiency */
	double link_eff_intra;   /* fraction of NVLink/NVSwitch/PCIe peak
				    that collectives and copies reach */
	double link_eff_network; /* same for NIC and network links */
	double grad_bucket_bytes; /* gradient bucket of the overlapped data-
				    parallel sync (the last one is exposed) */
	bool overlap_grad_sync;  /* sync buckets during the last backward */
	double backward_mem_factor; /* backward bytes / forward bytes */
	double p2p_latency_s;    /* software cost per pipeline send/recv */
	bool p2p_blocking;       /* a stage waits for its own pipeline sends
				    (Megatron-LM, DeepSpeed) */
	double collective_latency_s; /* software cost per collective step */
	bool overlap_grad_sync_pipeline; /* overlap_grad_sync also when the
					    plan is pipelined (else the sync
					    follows the flush) */
	bool tp_overlap;         /* the backward's tensor-parallel collective
				    of an op with weights overlaps its weight-
				    gradient GEMM (half its backward) */
	bool fused_attention;    /* attention as one fused (FlashAttention)
				    kernel per pass: no quadratic score
				    traffic or saved activations, the
				    backward recomputes the scores */
	bool tf32;               /* fp32 GEMMs at the TF32 tensor-core rate
				    (half the bf16 rate) on types with bf16
				    units */
	double nic_cap_Bps;      /* > 0: a NIC's links (device to NIC, NIC
				    to network) carry at most this per
				    direction (the runtime's
				    nic_socket_Bps; README section 3) */
	double p2p_cap_Bps;      /* > 0: the bytes per flow past
				    p2p_eager_bytes of a pipeline transfer
				    whose flows cross a NIC move at most
				    this per flow (the runtime's
				    p2p_socket_Bps; README section 3) */
	double p2p_eager_bytes;  /* with p2p_cap_Bps: the runtime's
				    p2p_socket_eager_bytes */
	double cuda_core_gemm_eff; /* > 0: GEMM-like kernels on CUDA cores
				    (the dtype's rate is the vector rate)
				    at this efficiency, in place of the
				    type's gemm_efficiency x gemm_sustained
				    (the runtime's, fitted; README
				    section 2) */
	double hopper_gemm_scale; /* > 0: a Hopper type's GEMM efficiency
				    times this (the runtime's, fitted;
				    README section 2) */
	double tp_node_rings;    /* > 1: a tensor-parallel group inside one
				    node moves its collectives at this
				    multiple of its routed ring's bandwidth,
				    at most what each member's links to the
				    others carry (the runtime's
				    tp_node_rings, NCCL's channels; README
				    section 3) */
	double gemm_shape_half;  /* > 0: matmuls at an efficiency by GEMM
				    shape with this half point (core/cost.h
				    tp_cost_gemm_shape_eff; README section
				    2); 0: by FLOP per kernel alone */
	enum tp_attn_kernel attention_kernel; /* with fused_attention:
				    the kernel whose published efficiency
				    (TP_SIM_ATTN_*) sets its time on A100
				    and Hopper types; TP_ATTN_KERNEL_GEMM:
				    the GEMM curve (README section 2) */
	bool grad_reduce_fp32;   /* data-parallel gradients are reduced
				    in fp32 (4 bytes per parameter), not
				    in the model dtype */
	bool grad_bucket_copy;   /* the gradients once more in memory, in
				    the dtype they are reduced in: PyTorch
				    DDP's bucket copies (README section 5) */
	bool conv_nchw;          /* convolutions in NCHW: a tensor-core
				    one pays cuDNN's transposes of its input
				    and output to NHWC and back (README
				    section 2) */
	bool winograd;           /* stride-1 3x3 convolutions on CUDA cores
				    run cuDNN's Winograd algorithm: 1 /
				    TP_SIM_WINOGRAD_GAIN of their FLOP
				    (README section 2) */
	bool grad_buffer_fp32;   /* a 16-bit model's gradients are held in
				    an fp32 buffer (Megatron-Core's
				    main_grad): 4 bytes per parameter in
				    memory, read by the optimizer step */
	double expert_imbalance; /* under expert parallelism, the busiest
				    rank's tokens over the mean when the plan
				    gives none (README section 3) */
	int prefetch_depth;      /* ZeRO: -1 gathers and reduces a group's
				    weights whole (ZeRO-3's all-gather
				    prefetched during the previous task);
				    d >= 0 per layer as FSDP2 does, each
				    all-gather issued d layers ahead of the
				    compute (README section 3) */
	/* expert parallelism's token exchange (README section 3; the
	   runtime profile's behaviour, core/runtime.h) */
	bool ep_node_forward;    /* once per destination node over the
				    network, forwarded inside the node */
	bool ep_dispatch_fp8;    /* fp8 models: one of the two all-to-alls
				    of each pass moves FP8 */
	bool ep_overlap;         /* all-to-alls overlapped with another
				    micro-batch's compute (DualPipe) */
	double comm_sm_share;    /* with ep_overlap, the SMs communication
				    keeps: EP groups compute at 1 - this */
	bool cp_all_gather;      /* context parallelism all-gathers K and V
				    (exposed) instead of the overlapped ring
				    (README section 3) */
	/* where the figures come from, copied into the report's basis (the
	   constants there are the values above); not used by the cost
	   model.  tp_sim_params_default: runtime "none", the shipped
	   constants and their measured error; tp_sim_params_runtime: the
	   profile's name and calibration. */
	struct tp_report_basis basis;
};

/* Winograd F(2x2, 3x3): 16 multiplies per 2x2 output tile of a 3x3
 * filter where direct convolution takes 36 (Lavin and Gray, "Fast
 * Algorithms for Convolutional Neural Networks", CVPR 2016, section 4);
 * cuDNN's CUDNN_CONVOLUTION_*_ALGO_WINOGRAD[_NONFUSED] for 3x3 stride-1
 * filters, forward, backward data and backward filter. */
#define TP_SIM_WINOGRAD_GAIN 2.25

/*
 * Fused attention kernels (README section 2): the fraction of the
 * 16-bit dense peak each reaches at long sequences and head dimension
 * 128, as published (benchmark figures: the simulator multiplies them
 * by gemm_sustained, as it does a GEMM's benchmark efficiency).
 *   FlashAttention-2 on A100: up to 73% of the peak forward and 63%
 *   backward (Dao 2023, arXiv:2307.08691, section 4.1; abstract:
 *   "50-73% of the theoretical maximum FLOPs/s on A100").
 *   FlashAttention-2 on H100: 35% (Shah et al. 2024, FlashAttention-3,
 *   arXiv:2407.08608, abstract; FlashAttention-2 section 4.1: up to 335
 *   TFLOP/s of 989, forward + backward), one figure for both passes.
 *   FlashAttention-3 on H100: forward up to 75% (740 TFLOP/s, BF16/FP16,
 *   its abstract); backward 1.5-1.75x FlashAttention-2's (its section
 *   4.1), the middle 1.625 of that range.  On A100 it is not available:
 *   a stack with FlashAttention-3 runs FlashAttention-2 there.
 *   FlashAttention in Triton (2022): FlashAttention-2 is 1.3-2.5x
 *   faster (FlashAttention-2 section 4.1); the geometric middle 1.8 of
 *   that range divides FlashAttention-2's figures on both generations.
 * Causal masks: a kernel skips the key blocks above the diagonal and
 * computes the diagonal's blocks whole: (n + 1) / (2 n) of the full
 * FLOP for n = ceil(seq / TP_SIM_ATTN_TILE) key blocks (FlashAttention-2
 * section 3.1, "causal masking": block sizes 64 or 128, 128 taken).
 */
#define TP_SIM_ATTN_FA2_A100_FWD 0.73
#define TP_SIM_ATTN_FA2_A100_BWD 0.63
#define TP_SIM_ATTN_FA2_HOPPER 0.35
#define TP_SIM_ATTN_FA3_HOPPER_FWD 0.75
#define TP_SIM_ATTN_FA3_BWD_GAIN 1.625
#define TP_SIM_ATTN_TRITON_SLOWDOWN 1.8
#define TP_SIM_ATTN_TILE 128

/* The share of an attention op's FLOP a fused kernel computes: (n + 1) /
 * (2 n) for a causal decoder of n = ceil(seq / TP_SIM_ATTN_TILE) key
 * blocks (the blocks above the diagonal skipped, the diagonal's whole),
 * 1 for encoders, sliding windows and models that do not say (cost.c;
 * README section 2). */
double tp_sim_causal_share(const struct tp_model *m);

/*
 * The shipped constants' measured error: mean and max |error| of
 * bench/bench_fidelity.c over the published runs of data/validation,
 * each under its runtime profile (src/sim/README section 9).  Reports
 * quote them; bench_fidelity says when they no longer match what it
 * measures (then update them with the README).
 */
#define TP_SIM_VALIDATION_MEAN_ERROR 0.045
#define TP_SIM_VALIDATION_MAX_ERROR 0.141
#define TP_SIM_VALIDATION_RUNS 30

void tp_sim_params_default(struct tp_sim_params *p);

struct tp_runtime;
/*
 * Set what runtime profile rt's behaviour (core/runtime.h) decides: the
 * overlap of the gradient sync (dp_overlap, dp_overlap_pipeline),
 * blocking pipeline sends (p2p_async), the gradient bucket (when the
 * profile gives one), tensor-parallel overlap (tp_overlap), fused
 * attention, TF32 and the dtype of the gradient reduction
 * (grad_reduce).  The unconstrained runtime "none" leaves the defaults
 * as they are.
 */
void tp_sim_params_runtime(struct tp_sim_params *p,
			   const struct tp_runtime *rt);

/*
 * Drop the runtime profiles' constants that were fitted on one source of
 * data/validation each (README section 9): nic_socket_Bps,
 * tp_node_rings and p2p_socket_Bps (megatron-lm-2022, DS3Lab),
 * cuda_core_gemm_eff (ddp, DeepLearningExamples),
 * hopper_gemm_scale (fsdp2, llm-foundry).  Each binds only on its own
 * source's rows there: a constant fitted on a source is not available
 * when that source is held out (tests use this; bench_fidelity's
 * leave-one-source-out drops them through calib.h tp_calib_fitted_on,
 * which also gives gemm_shape_half, fitted on DS3Lab's rows, a sourced
 * value in DS3Lab's fold).
 */
void tp_sim_params_drop_fitted(struct tp_sim_params *p);

/* Which devices of replicas simulated once get slices in a trace. */
enum tp_sim_trace_replicas {
	TP_SIM_TRACE_AUTO, /* all while that is at most
			      TP_SIM_TRACE_AUTO_SLICES device slices, else
			      one */
	TP_SIM_TRACE_ALL,  /* every replica (up to a million slices) */
	TP_SIM_TRACE_ONE   /* the simulated ones: one replica of each kind
			      per stage */
};
/* Device slices of a trace with every replica shown, at most, under
 * TP_SIM_TRACE_AUTO: about 17 MB of JSON (a slice is some 170 bytes). */
#define TP_SIM_TRACE_AUTO_SLICES 100000u

struct tp_sim_options {
	bool validate; /* run tp_plan_validate first (default true) */
	struct tp_sim_params params;
	enum tp_sim_trace_replicas trace_replicas; /* default AUTO */
};

void tp_sim_options_default(struct tp_sim_options *o);

struct tp_sim *tp_sim_new(const struct tp_model *m, const struct tp_cluster *c,
			  const struct tp_sim_options *o,
			  struct tp_error *err);
void tp_sim_free(struct tp_sim *sim);

struct tp_sim_scratch *tp_sim_scratch_new(const struct tp_sim *sim);
void tp_sim_scratch_free(struct tp_sim_scratch *s);

/*
 * Simulate one iteration of plan.  report is (re)filled; it must have been
 * tp_report_init'ed.  When trace != NULL a Chrome trace-event JSON
 * document (one track per device and per link) is appended to it.
 */
enum tp_status tp_sim_run(const struct tp_sim *sim, const struct tp_plan *plan,
			  struct tp_sim_scratch *scratch,
			  struct tp_report *report, struct tp_strbuf *trace,
			  struct tp_error *err);

/* After a run with a trace: whether it showed every replica (false: one
 * of each kind per stage, TP_SIM_TRACE_ONE or AUTO above its size). */
bool tp_sim_scratch_trace_all(const struct tp_sim_scratch *s);

/* What tp_sim_run_bounded found before (or instead of) simulating. */
struct tp_sim_cut {
	bool bounded;       /* stopped early: the plan cannot beat the cutoff
			       (the report is left untouched) */
	bool out_of_memory; /* ... because some device is out of memory */
	double lower_bound_s; /* a lower bound of the iteration time */
	double over_fraction; /* out of memory: the worst device's excess /
				 its capacity */
};

/*
 * tp_sim_run with a cutoff, for searches that only need to know whether
 * a plan beats cutoff_s seconds.  cut->lower_bound_s gets a lower bound
 * of the plan's iteration time computed before the event simulation (per
 * device: its compute, the forward of micro-batch 0 through the groups
 * upstream of it before its first task, the upstream backwards and its
 * optimizer steps after its last backward; transfers and waiting count
 * zero; compression only adds compute, so it bounds compressed variants
 * of the plan too).  When cutoff_s > 0 and the bound is >= cutoff_s, or
 * some device is out of memory (an infeasible plan never beats a
 * feasible one; checked once the compute tasks' order is known, before
 * the task graph is built), the run stops there: cut->bounded = true and the report
 * is left untouched.  Otherwise the plan is simulated exactly as by
 * tp_sim_run.  Errors as tp_sim_run.
 */
enum tp_status tp_sim_run_bounded(const struct tp_sim *sim,
				  const struct tp_plan *plan,
				  struct tp_sim_scratch *scratch,
				  double cutoff_s, struct tp_report *report,
				  struct tp_strbuf *trace,
				  struct tp_sim_cut *cut, struct tp_error *err);

/* Only cut->lower_bound_s of tp_sim_run_bounded (about a tenth of a
 * simulation).  Errors as tp_sim_run. */
enum tp_status tp_sim_lower_bound(const struct tp_sim *sim,
				  const struct tp_plan *plan,
				  struct tp_sim_scratch *scratch,
				  double *lower_bound_s, struct tp_error *err);

/*
 * The fastest FLOP rate the simulator prices work at on device type
 * `type` (an index into the cluster's types): the larger of the cost
 * model's peaks (with TF32 when the runtime uses it) and the fastest
 * measured point of any op's profile on the type (per rank: an op tp
 * splits counts its work divided by the point's tp).  No op execution is
 * faster, so MFU (the report's, over this speed) never exceeds 1 and
 * tp_sim_iteration_bound never exceeds a simulated iteration.
 * *profiled (may be NULL): a profile set it above the peaks.
 */
double tp_sim_type_speed(const struct tp_sim *sim, uint32_t type,
			 bool *profiled);

/* The iteration time of global_batch samples were every device of the
 * cluster computing the model's FLOP at its type's speed: a lower bound
 * of every plan's simulated time. */
double tp_sim_iteration_bound(const struct tp_sim *sim, double global_batch);

/*
 * How the ops of plan were priced (simulates it once with scratch): per
 * op, its least exact figure over the plan's lanes and their ranks' types
 * (measured, interpolated, extrapolated, or TP_PROFILE_NONE: the roofline
 * for want of a profile), counted into counts[how].  Ops without time
 * (inputs) are not counted.  Errors as tp_sim_run.
 */
enum tp_status tp_sim_profile_census(const struct tp_sim *sim,
				     const struct tp_plan *plan,
				     struct tp_sim_scratch *s,
				     uint32_t counts[TP_PROFILE_HOW_COUNT],
				     struct tp_error *err);

/*
 * The gradient-compression selection (src/compress/sfb.h) the simulator
 * owns: its cost figures use the simulator's link efficiencies, collective
 * latency and op costs, so its selections agree best with what the
 * simulator then measures.  Owned by sim; valid while sim lives.
 */
const struct tp_sfb *tp_sim_sfb(const struct tp_sim *sim);

/* Simulated tasks processed by this scratch so far (for speed figures). */
uint64_t tp_sim_scratch_tasks(const struct tp_sim_scratch *s);

/* For tests: with on, runs of scratch s share bandwidth without the
 * engine's shortcuts (engine.c: the memo of fair shares, the private
 * classes skipped, the earliest bundle end kept between events), price
 * every op of a lane itself (no op cost classes: cost.c op_lane_memo),
 * keep no group graphs (lanes.c group_edges_kept) and check a bounded
 * run's memory only on the whole task graph (not from the compute
 * tasks' order before it: sim.c tp_sim_run_bounded), which must not
 * change any result; off (the default) uses them. */
void tp_sim_scratch_reference(struct tp_sim_scratch *s, bool on);

#endif
