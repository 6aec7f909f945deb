/*
 * runtime.h - the runtime IR: what a training stack (Megatron-Core,
 * DeepSpeed, PyTorch FSDP2/TorchTitan, plain DDP, ...) does and what it
 * can run.
 *
 * A runtime profile says two things about one software stack:
 *  - how it behaves, for the simulator's cost model (struct
 *    tp_runtime_behaviour): which communication overlaps what, which
 *    kernels it uses, how it synchronises gradients;
 *  - what it can execute, for the search's action space, `check` and
 *    `export` (struct tp_runtime_can): which parallel degrees, layouts,
 *    schedules, ZeRO stages and synchronisation methods it has, and the
 *    launcher it is exported to.
 * Profiles are data files (tagplan-runtime/1, data/runtimes/NAME.json,
 * every figure with its source; tagplan-formats(5)); `--runtime NAME` on
 * plan, simulate and check picks one, and a plan records the name of the
 * runtime it was made for.  The name "none" is the unconstrained runtime:
 * every plan tagplan can express, with the simulator's own defaults, and
 * no runtime known to execute it.
 *
 * A struct tp_runtime is plain data (fixed-size strings, no pointers):
 * copy it freely; nothing to release.
 */
#ifndef TP_RUNTIME_H
#define TP_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"

#define TP_RUNTIME_NAME_MAX 64

/* How gradients travel in the data-parallel reduction. */
enum tp_grad_reduce {
	TP_GRAD_REDUCE_MODEL, /* in the model's dtype (fp16/bf16 DDP) */
	TP_GRAD_REDUCE_FP32,  /* in fp32 (Megatron's main grads with bf16,
				 --accumulate-allreduce-grads-in-fp32) */
	TP_GRAD_REDUCE_COUNT
};

/* The fused attention kernel a stack runs (the runtime's
 * "attention_kernel"; its efficiency by GPU generation: src/sim/README
 * section 2, sim.h TP_SIM_ATTN_*). */
enum tp_attn_kernel {
	TP_ATTN_KERNEL_GEMM,   /* not given: the GEMM efficiency curve */
	TP_ATTN_KERNEL_FA2,    /* FlashAttention-2 (Dao 2023; PyTorch
				  SDPA's flash backend) */
	TP_ATTN_KERNEL_FA3,    /* FlashAttention-3 class Hopper kernels
				  (Shah et al. 2024; cuDNN's through
				  Transformer Engine) */
	TP_ATTN_KERNEL_TRITON, /* FlashAttention in Triton (2022; MPT's
				  attn_impl triton) */
	TP_ATTN_KERNEL_COUNT
};

/* How uneven pipeline layer splits are written, if at all. */
enum tp_layer_layout {
	TP_LAYOUT_EVEN,       /* every stage (chunk) the same layers */
	TP_LAYOUT_FIRST_LAST, /* even, except the first and last stages
				 (Megatron --decoder-first/last-pipeline-
				 num-layers) */
	TP_LAYOUT_ANY,        /* any per-stage layer counts (Megatron
				 --pipeline-model-parallel-layout,
				 DeepSpeed partition_method, TorchTitan
				 pipeline split points) */
	TP_LAYOUT_COUNT
};

/* The launcher a plan for this runtime is exported to. */
enum tp_launcher {
	TP_LAUNCH_NONE,       /* no known runtime: nothing to export */
	TP_LAUNCH_MEGATRON,   /* Megatron-LM / Megatron-Core arguments */
	TP_LAUNCH_DEEPSPEED,  /* a DeepSpeed config (Megatron-DeepSpeed) */
	TP_LAUNCH_TORCHRUN,   /* a torchrun command line (DDP, FSDP) */
	TP_LAUNCH_TORCHTITAN, /* a TorchTitan job config (.toml) */
	TP_LAUNCH_COUNT
};

/* Which models the stack builds from its launch configuration. */
enum tp_runtime_models {
	TP_MODELS_ANY,          /* the user's own model code (DDP wraps any
				   torch module) */
	TP_MODELS_TRANSFORMERS, /* transformer stacks from flags (Megatron's
				   GPT, BERT and T5 models) */
	TP_MODELS_LLAMA,        /* Llama-style decoders of its registry
				   (TorchTitan: RMSNorm, SwiGLU, RoPE) */
	TP_MODELS_COUNT
};

/*
 * How the stack behaves (the simulator's cost model reads these; what
 * each does in the simulation: src/sim/README).
 */
struct tp_runtime_behaviour {
	bool dp_overlap;          /* gradient buckets reduced while the
				     backward runs (else after it) */
	bool dp_overlap_pipeline; /* ... also when the model is pipelined
				     (Megatron's 2021 local DDP reduced after
				     the pipeline flush) */
	double grad_bucket_bytes; /* its bucket (0 = the simulator's) */
	enum tp_grad_reduce grad_reduce;
	bool grad_bucket_copy;    /* the gradients are copied into the
				     all-reduce buckets (PyTorch DDP's
				     gradient_as_bucket_view=False):
				     a second copy in memory (optional;
				     absent: off) */
	bool conv_nchw;           /* convolutions in NCHW (PyTorch's default
				     memory format): tensor-core ones are
				     transposed to NHWC and back
				     ("memory_format": "nchw"; optional;
				     absent: nhwc, no transposes) */
	bool winograd;            /* cuDNN picks Winograd for stride-1 3x3
				     fp32 convolutions on CUDA cores
				     (optional; absent: off) */
	enum tp_grad_reduce grad_buffer; /* the dtype of the gradient buffer
				     held in memory (optional; absent: the
				     model's): Megatron-Core's fp32
				     main_grad */
	bool p2p_async;           /* pipeline sends do not block the sender */
	bool tp_overlap;          /* tensor-parallel collectives of the
				     backward overlap the weight-gradient
				     GEMMs */
	bool fused_attention;     /* FlashAttention-style fused kernels:
				     attention time and memory of the fused
				     kernel, no quadratic activations */
	bool tf32;                /* fp32 GEMMs on TF32 tensor cores where
				     the device has them */
	double gemm_shape_half;   /* matmuls at an efficiency by GEMM shape
				     (core/cost.h tp_cost_gemm_shape_eff):
				     the output elements at half (optional;
				     0 = by FLOP alone) */
	enum tp_attn_kernel attention_kernel; /* the fused attention's
				     kernel, whose published efficiency on
				     A100 and Hopper sets its time (optional;
				     absent: the GEMM curve) */
	double expert_imbalance;  /* MoE under expert parallelism: the
				     busiest rank's tokens over the mean as
				     measured on this stack (optional; 0 =
				     the simulator's default; a plan's own
				     expert_imbalance wins) */
	int32_t prefetch_depth;   /* sharded data parallelism (ZeRO-3, FSDP)
				     gathers and reduce-scatters per layer,
				     all-gathers issued this many layers
				     ahead of the compute (0: none ahead);
				     optional, -1 = not given: the
				     simulator's whole-group model */
	/* expert parallelism's token exchange (optional, all off when
	   absent: Megatron-Core's alltoall dispatcher; src/sim/README
	   section 3) */
	bool ep_node_forward;     /* a token crosses the network once per
				     destination node (to the GPU of the
				     sender's local index) and is forwarded
				     to its experts there over the node's
				     fabric, instead of once per expert */
	bool ep_dispatch_fp8;     /* fp8 models: the dispatch and the
				     backward's gradient towards the experts'
				     down-projections move FP8 with 1x128
				     scales, the combines BF16 */
	bool ep_overlap;          /* the dispatch/combine all-to-alls of one
				     micro-batch run while another's forward
				     or backward computes (DualPipe) */
	double comm_sm_share;     /* with ep_overlap: the share of a GPU's
				     SMs the communication kernels keep, so
				     compute runs at 1 - this (0 = none) */
	bool cp_all_gather;       /* context parallelism all-gathers K and V
				     before attention (exposed; "cp_comm":
				     "all_gather") instead of passing them
				     around a ring under the compute ("p2p",
				     the default when absent) */
	double nic_socket_Bps;    /* NCCL's socket transport (TCP through
				     host memory, no GPUDirect RDMA): a NIC
				     carries at most this many bytes per
				     second per direction, whatever its
				     line rate (optional; 0 = no cap) */
	double p2p_socket_Bps;    /* FITTED (data/validation): the bytes
				     of a pipeline send/recv message past
				     p2p_socket_eager_bytes, per flow, when
				     it crosses a NIC, move at most at this
				     many bytes per second (NCCL's socket
				     transport; optional; 0 = no cap) */
	double p2p_socket_eager_bytes; /* with p2p_socket_Bps: NCCL's
				     buffer per connection (NCCL_BUFFSIZE),
				     the bytes of a message that move at the
				     links' rate */
	double cuda_core_gemm_eff; /* FITTED (data/validation): the
				     efficiency of GEMM-like kernels on CUDA
				     cores (a dtype without tensor cores:
				     fp32 without TF32) in place of the
				     type's gemm_efficiency x gemm_sustained
				     (optional; 0 = none) */
	double hopper_gemm_scale; /* FITTED (data/validation): a Hopper
				     type's GEMM efficiency times this
				     under the stack (optional; 0 = none) */
	double tp_node_rings;     /* NCCL's channels: a tensor-parallel
				     group inside one node moves its
				     collectives at this multiple of the
				     one ring the simulator routes (several
				     rings over the node's links at once;
				     optional, at least 1; 0 = absent = 1) */
};

/* What the stack can execute.  A bitmask field has bit 1u << VALUE of
 * the enum it names. */
struct tp_runtime_can {
	enum tp_launcher launcher;
	bool tensor_parallel, pipeline_parallel, sequence_parallel;
	bool context_parallel;   /* cp > 1 (ring attention); optional in
				    a profile, false when absent */
	bool expert_parallel;    /* ep > 1 (routed experts spread, all-to-
				    all dispatch); optional, false when
				    absent */
	bool mixed_tp;           /* replicas of different tp in one
				    data-parallel group (plan.h mixed);
				    optional, false when absent: no
				    shipped runtime has it */
	bool per_stage_degrees;  /* stages may differ in tp and dp */
	bool uneven_shares;      /* replicas of a stage may take unequal
				    batch shares */
	bool mixed_device_types; /* one job over more than one GPU type */
	bool overlapping_groups; /* groups on overlapping device sets other
				    than plain data parallelism (TAG-style
				    placements) */
	enum tp_layer_layout layout;
	uint32_t schedules;   /* enum tp_schedule bits */
	uint32_t syncs;       /* enum tp_sync bits */
	uint32_t recomputes;  /* enum tp_recompute bits */
	uint32_t max_zero;    /* ZeRO / distributed-optimizer stage */
	uint32_t max_zero_pipelined; /* ... with pp > 1 */
	bool compression;     /* lossless SFB gradient compression */
	uint32_t lossy;       /* enum tp_lossy bits (comm hooks) */
	bool per_group_recompute; /* groups may recompute differently (else
				     one setting for every layer) */
	enum tp_runtime_models models;
};

/*
 * Cost-model constants fitted to measured runs (tagplan calibrate): when
 * present they replace the simulator's defaults of the same name
 * (sim.h struct tp_sim_params).  The profile's "calibration" object
 * (tagplan-formats(5)); the rest says what the fit was made on and how
 * well it did, for reports.
 */
struct tp_runtime_calibration {
	bool present;
	double gemm_sustained;   /* x every type's gemm_efficiency */
	double link_eff_intra;   /* NVLink/NVSwitch/PCIe fraction of peak */
	double link_eff_network; /* NIC/network fraction of peak */
	/* the behaviour's fitted constants, refitted (optional; > 0
	   replaces the behaviour's value of the same name) */
	double gemm_shape_half, nic_socket_Bps, tp_node_rings,
	    cuda_core_gemm_eff, hopper_gemm_scale, p2p_socket_Bps;
	char fitted_on[256];     /* the run files, by base name */
	uint32_t runs, holdout_runs;
	double fit_error;        /* mean |error| on the fitted runs */
	double holdout_error;    /* ... on the held-out runs (0 when none) */
	double prior_weight;     /* the fit's prior, in runs (tagplan
				    calibrate --prior-weight; 0 = none or
				    a profile written before the prior) */
};

/*
 * The simulator's measured error under this profile with the shipped
 * constants (the profile's optional "validation" object): the published
 * runs of data/validation that ran on this stack, as bench/bench_fidelity.c
 * measures them (it says when a profile's figures are stale).  Reports
 * quote it as the uncertainty of their figures.
 */
struct tp_runtime_validation {
	bool present;
	uint32_t runs;
	double mean_error, max_error; /* |predicted / measured - 1| */
	char measured_on[256];        /* which runs */
};

struct tp_runtime {
	char name[TP_RUNTIME_NAME_MAX]; /* "megatron-core", ..., "none" */
	char description[256];
	struct tp_runtime_behaviour behaviour;
	struct tp_runtime_can can;
	struct tp_runtime_calibration calibration;
	struct tp_runtime_validation validation;
};

/*
 * The unconstrained runtime "none": everything the plan IR can express,
 * the simulator's own defaults (all behaviour fields as the simulator
 * assumed before runtimes were an input).
 */
void tp_runtime_none(struct tp_runtime *rt);

/* Names <-> enums, for files and messages; parse returns -1 when
 * unknown. */
const char *tp_grad_reduce_name(enum tp_grad_reduce g);
int tp_grad_reduce_parse(const char *s);
const char *tp_attn_kernel_name(enum tp_attn_kernel k);
/* "fa2", "fa3", "triton_fa" (not "gemm": the absent field) -> the enum,
 * -1 otherwise. */
int tp_attn_kernel_parse(const char *s);
/* "nhwc" -> 0, "nchw" -> 1, -1 otherwise (behaviour.memory_format). */
int tp_memory_format_parse(const char *s);
const char *tp_layer_layout_name(enum tp_layer_layout l);
int tp_layer_layout_parse(const char *s);
const char *tp_launcher_name(enum tp_launcher l);
int tp_launcher_parse(const char *s);
const char *tp_runtime_models_name(enum tp_runtime_models m);
int tp_runtime_models_parse(const char *s);

/* Is rt the unconstrained runtime "none"? */
bool tp_runtime_is_none(const struct tp_runtime *rt);

/*
 * What a plan needs that a runtime lacks.  Each capability is named as
 * its field of the profile's "can" (tp_runtime_cap_name); a check returns
 * a bitmask of 1u << TP_CAP_*.
 */
enum tp_runtime_cap {
	TP_CAP_TENSOR_PARALLEL,
	TP_CAP_PIPELINE_PARALLEL,
	TP_CAP_SEQUENCE_PARALLEL,
	TP_CAP_PER_STAGE_DEGREES,
	TP_CAP_UNEVEN_SHARES,
	TP_CAP_MIXED_DEVICE_TYPES,
	TP_CAP_OVERLAPPING_GROUPS,
	TP_CAP_LAYOUT,
	TP_CAP_SCHEDULES,
	TP_CAP_SYNCS,
	TP_CAP_RECOMPUTE,
	TP_CAP_MAX_ZERO,
	TP_CAP_MAX_ZERO_PIPELINED,
	TP_CAP_COMPRESSION,
	TP_CAP_LOSSY,
	TP_CAP_PER_GROUP_RECOMPUTE,
	TP_CAP_CONTEXT_PARALLEL,
	TP_CAP_EXPERT_PARALLEL,
	TP_CAP_MIXED_TP,
	TP_CAP_COUNT
};

const char *tp_runtime_cap_name(enum tp_runtime_cap c);

/*
 * The pipeline structure of a plan as a launcher sees it: groups in model
 * order, consecutive groups on the same device list merged into chunks,
 * the stages the distinct device lists in order of first use.  Filled by
 * tp_runtime_plan_check (ok = false when the groups do not form such a
 * pipeline: overlapping device sets or chunks out of round-robin order).
 */
#define TP_RUNTIME_MAX_CHUNKS 256
struct tp_plan_shape {
	bool ok;
	uint32_t pp, chunks;   /* stages, chunks (pp x V when ok) */
	uint32_t stage_group[TP_RUNTIME_MAX_CHUNKS]; /* a group per stage */
	int64_t chunk_layers[TP_RUNTIME_MAX_CHUNKS]; /* whole layers, -1 when
							 a layer is split */
	int64_t layers;        /* of the model (arch.layers or labels) */
	uint32_t used;         /* devices holding a group */
};

/*
 * Can runtime rt execute plan p of model m on cluster c?  Returns 0 when
 * it can (always for "none"), else the bitmask of the capabilities the
 * plan needs and rt lacks; why (when non-NULL) gets the first one in a
 * sentence naming the group and figure, e.g. "group 3 synchronises
 * through a parameter server; megatron-core all-reduces (syncs)".
 * shape (when non-NULL) gets the pipeline structure.  Pure; no
 * allocation.
 */
uint32_t tp_runtime_plan_check(const struct tp_runtime *rt,
			       const struct tp_plan *p,
			       const struct tp_model *m,
			       const struct tp_cluster *c,
			       struct tp_plan_shape *shape, char *why,
			       size_t why_size);

/*
 * What tp_runtime_plan_check reads of each group's ops and devices,
 * for a caller that knows it without a pass over them (the search: its
 * groups are ranges of the model's topological order on device sets of
 * known type; src/search/README "The runtime check's memo"):
 *   first_pos  the least m->topo_pos of its ops (UINT32_MAX: none);
 *   layer_lo, layer_hi  the least and greatest layer label >= 0 of its
 *              ops, -1 and -1 when none is labelled;
 *   type       the device type of all its devices, TP_NONE when they are
 *              of more than one (every device index < c->devices.n);
 *   list       the caller's name for its device list: two groups whose
 *              lists are not TP_NONE have equal device lists (in order)
 *              just when their lists are equal; TP_NONE: compare them;
 *   dev_lo, dev_hi  its least and greatest device (dev_lo > dev_hi when
 *              it has none);
 *   dense      its devices are every device from dev_lo to dev_hi;
 *   nodes, n_nodes  the node of each run of consecutive devices of its
 *              list on one node, in list order (NULL: read the list).
 */
struct tp_runtime_group_facts {
	uint32_t first_pos;
	int32_t layer_lo, layer_hi;
	uint32_t type;
	uint32_t list;
	uint32_t dev_lo, dev_hi;
	bool dense;
	const uint32_t *nodes;
	uint32_t n_nodes;
};

/*
 * tp_runtime_plan_check with facts[g] for each group g of p (NULL: read
 * from the plan, the same answer): the same mask, why and shape when
 * the facts are those of p; the plan's ops and devices are then not
 * read but for the device lists of groups whose lists or ranges leave
 * open whether they are the same or share a device.  Pure; allocates
 * only to sort device lists that do not ascend (as
 * tp_runtime_plan_check).
 */
uint32_t tp_runtime_plan_check_facts(
    const struct tp_runtime *rt, const struct tp_plan *p,
    const struct tp_model *m, const struct tp_cluster *c,
    const struct tp_runtime_group_facts *facts, struct tp_plan_shape *shape,
    char *why, size_t why_size);

/*
 * Does rt build model m from its launch configuration (can.models)?
 * why gets the reason when not.
 */
bool tp_runtime_builds(const struct tp_runtime *rt, const struct tp_model *m,
		       char *why, size_t why_size);

/*
 * The runtime `tagplan plan` plans for when none is named: megatron-core
 * for transformers (it builds them from flags and runs every uniform 3D
 * plan, uneven layer layouts included), else ddp (it runs any model code,
 * data parallel).
 */
const char *tp_runtime_default_name(const struct tp_model *m);

/*
 * The gradient reduction a runtime's collectives (NCCL) use for a group
 * of n devices devs (in the group's order) with tensor degree tp, as
 * tagplan models NCCL's own choice: hierarchical (reduce-scatter inside
 * the nodes, all-reduce across, all-gather inside) when the replicas span
 * several nodes with several replicas per node, else ring.  A runtime
 * other than "none" cannot be told otherwise: the search gives its plans
 * this (tp_runtime_plan_check does not ask for it; export notes a plan
 * that differs).
 */
enum tp_sync tp_runtime_sync(const struct tp_cluster *c, const uint32_t *devs,
			     uint32_t n, uint32_t tp);

/* The transformer layers of m: arch.layers, else the ops' labels (0 when
 * none). */
int64_t tp_model_layer_count(const struct tp_model *m);

#endif
