/*
 * plan.h - the plan IR: how one training iteration runs on a cluster.
 *
 * A plan partitions the model's ops into groups.  Each group runs on a
 * device set with a data-parallel degree dp, a context-parallel degree cp
 * and a tensor-parallel degree tp (dp * cp * tp == number of devices).
 * devices[(r * cp + c) * tp + k] is tensor rank k of context rank c of
 * replica r (Megatron-Core's rank order: tensor fastest, then context,
 * then data).  Replica r processes the fraction shares[r] of every
 * micro-batch (shares sum to 1; uneven on heterogeneous devices); its cp
 * context ranks each take 1/cp of every sequence (cp 1 = no context
 * parallelism).
 *
 * Groups whose device sets are disjoint and which follow each other in the
 * model form pipeline stages; a device may hold several non-adjacent groups
 * (interleaved virtual stages).  Globally, the global batch is cut into
 * micro_batches micro-batches run under `schedule`; zero is the ZeRO stage
 * applied within each group's data-parallel replicas.
 *
 * Storage: the per-group arrays live in shared pools indexed by offsets,
 * so a search can refill a plan (tp_plan_clear keeps capacity) without
 * allocating.  Use the accessors below.
 *
 * Ownership: tp_plan_init / tp_plan_release; the plan owns its pools and
 * summary.  A plan borrows nothing from the model or cluster: ops and
 * devices are indices, valid for the model/cluster it was made for.
 */
#ifndef TP_PLAN_H
#define TP_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "error.h"
#include "model.h"
#include "report.h"
#include "vec.h"

enum tp_sync {
	TP_SYNC_RING,         /* ring all-reduce over the replicas */
	TP_SYNC_HIERARCHICAL, /* intra-node reduce-scatter, inter-node
				 all-reduce, intra-node all-gather */
	TP_SYNC_PS,           /* parameter server: push to / pull from the
				 group's first device of each op, round robin */
	TP_SYNC_COUNT
};

enum tp_recompute {
	TP_RECOMPUTE_NONE,
	TP_RECOMPUTE_SELECTIVE, /* drop and recompute attention internals */
	TP_RECOMPUTE_FULL,      /* keep only layer inputs, recompute forward */
	TP_RECOMPUTE_COUNT
};

enum tp_schedule {
	TP_SCHEDULE_GPIPE,
	TP_SCHEDULE_1F1B,
	TP_SCHEDULE_INTERLEAVED, /* 1F1B with virtual_stages chunks/device */
	TP_SCHEDULE_ZB_H1,       /* zero bubble ZB-H1 (Qi et al., ICLR 2024):
				    1F1B's order with the backward split into
				    input-gradient (B) and deferred weight-
				    gradient (W) passes; no interleaving */
	TP_SCHEDULE_COUNT
};

enum tp_compression {
	TP_COMPRESSION_OFF,
	TP_COMPRESSION_LOSSLESS, /* sufficient-factor broadcasting where it
				    pays (exact) */
	TP_COMPRESSION_LOSSY,    /* plus opt-in lossy gradient formats */
	TP_COMPRESSION_COUNT
};

/* Lossy gradient communication of a group (only under
 * TP_COMPRESSION_LOSSY; never chosen by default). */
enum tp_lossy {
	TP_LOSSY_NONE,
	TP_LOSSY_FP16,     /* gradients communicated in 16 bits */
	TP_LOSSY_POWERSGD, /* low-rank (rank powersgd_rank) */
	TP_LOSSY_COUNT
};

/*
 * The gradient bucket of the overlapped data-parallel sync when nothing
 * says otherwise: PyTorch DDP's bucket_cap_mb default, 25 MiB.  One name
 * and one unit (bytes) for the figure everywhere: the simulator's
 * parameter, the plan's field and train's option are grad_bucket_bytes;
 * only the command line speaks MB (--grad-bucket-mb, 10^6 bytes).
 */
#define TP_GRAD_BUCKET_DEFAULT_BYTES (25.0 * 1048576)

struct tp_plan_group {
	uint32_t op_first, n_ops;     /* into plan->ops (op indices) */
	uint32_t dev_first, n_devices; /* into plan->devs (device indices) */
	uint32_t share_first;          /* dp entries in plan->shares */
	uint32_t dp, tp;
	uint32_t cp; /* context-parallel degree, >= 1: the sequence split
			over cp ranks with ring attention (src/sim/README) */
	enum tp_sync sync;
	enum tp_recompute recompute;
	bool sp; /* sequence parallelism (needs tp > 1) */
	/* expert parallelism (Megatron-Core's --expert-model-parallel-size):
	   the group's routed experts of each MoE layer are spread over ep
	   consecutive tensor-parallel blocks of the dp x cp ones (rank
	   order tp-cp-dp: with cp > 1 an EP group spans context ranks
	   first, as Megatron-Core's tp-ep-dp expert grid over the same
	   ranks does), each holding experts/ep of them, tokens dispatched
	   and combined by all-to-all; the expert tensor-parallel degree is
	   the group's tp (Megatron-Core's default
	   --expert-tensor-parallel-size); 1 = every replica holds every
	   expert.  ep divides dp x cp and each layer's routed experts in
	   the group. */
	uint32_t ep;
	/* expert tensor parallelism (Megatron-Core's --expert-tensor-
	   parallel-size): 0 = the group's tp (the default: each expert's
	   GEMMs split over the tensor ranks, EP groups of ep replicas at the
	   same tensor rank); 1 = every expert whole on its rank, the EP
	   groups ep consecutive ranks of the tp x cp x dp ones (rank order
	   etp-ep-dp), ep dividing tp x dp x cp, sequence parallelism on
	   (src/sim/README section 3).  Other degrees are not modelled. */
	uint32_t etp;
	/* gradient compression */
	uint32_t sfb_first, n_sfb; /* ops using sufficient-factor broadcasting,
				      into plan->sfb */
	double sfb_saved_bytes;    /* traffic saved per iteration, bytes */
	enum tp_lossy lossy;
	uint32_t powersgd_rank;
	/* Mixed tensor-parallel replicas (as Sailor, HexiScale and FlashFlex
	   plan heterogeneous clusters: the slow type at a higher tp, the
	   fast one at tp 1): when mixed, replica r has its own degree
	   plan->rtp.v[rtp_first + r] (tp_plan_replica_tp), its devices
	   consecutive replica by replica, the degrees summing to n_devices,
	   each dividing tp, which is then the largest.  Its gradient
	   all-reduce runs over the finest sharding (src/sim/README).  Only
	   with cp 1, ep 1, no sp, ring sync, ZeRO 0 and no compression. */
	bool mixed;
	uint32_t rtp_first;
};

struct tp_plan_baseline {
	char name[32];
	bool feasible;
	double iteration_time_s;
};

#define TP_PLAN_MAX_BASELINES 8

/* Micro-batches per iteration: the simulator runs each one, so a plan of
 * 2^31 of them would need tens of GB (16384 take 0.19 GB and 0.4 s on 32
 * stages, measured); Megatron's published runs use at most a few
 * hundred.  tp_plan_validate and the simulator refuse more. */
#define TP_PLAN_MAX_MICRO_BATCHES 16384

/*
 * What `plan` found and how: written under "summary" in the plan file.
 * valid == false means "no summary" (a hand-written plan).  Timing figures
 * (wall clock) are kept apart so the rest is deterministic.
 */
struct tp_plan_summary {
	bool valid;
	bool feasible;
	double iteration_time_s;
	double throughput_samples_per_s;
	double tokens_per_s; /* 0 when the model has no sequence length */
	double mfu;
	double tflops_per_device;
	/* US dollars (device types' price_per_hour over the devices the
	   plan uses), 0 = unknown: some used device has no price */
	double cost_per_iteration;
	double cost_per_million_tokens; /* 0 also without a sequence length */
	/* the search's objective: the cheapest plan within max_iter_time_s
	   seconds per iteration (search.h TP_SEARCH_OBJECTIVE_COST), else
	   the fastest */
	bool objective_cost;
	double max_iter_time_s;
	double *peak_memory_bytes; /* per device, n_devices entries, or NULL */
	double *busy_fraction;     /* per device, or NULL */
	uint32_t n_devices;
	char infeasible_reason[512];
	char precision[256]; /* the report's precision fallback, or "" */
	struct tp_report_basis basis; /* the report's: where the figures
					 come from */
	struct tp_plan_baseline baselines[TP_PLAN_MAX_BASELINES];
	uint32_t n_baselines;
	/* search statistics */
	uint64_t playouts;
	uint64_t simulations;
	uint64_t seed;
	uint32_t threads;
	bool gnn; /* the search consulted the GNN */
	char weights[1024]; /* comma-separated (an ensemble) */
	char gnn_declined[160]; /* "" or why the search left the GNN of
				   weights out (a cluster larger than it
				   was trained on: search.h
				   prior_declined) */
	double search_seconds;   /* timing */
	double playouts_per_s;   /* timing */
	bool no_timing; /* no "timing" object (plan --no-timing, or a file
			   without one): written without wall-clock figures */
	/* the runtime's view (summary."runtime_fit"; "" and 0 = not
	   recorded): a note (e.g. "no known runtime executes this plan");
	   the unconstrained plan when faster, with the capabilities it
	   needs (core/runtime.h TP_CAP_* bits) and why; idle devices and
	   the best plan found that uses every device */
	char runtime_note[256];
	bool have_unconstrained;
	double unconstrained_time_s;
	uint32_t unconstrained_needs;
	char unconstrained_why[512];
	/* the other shipped runtimes that execute the unconstrained plan,
	   "a, b" ("" when none does, or not recorded) */
	char unconstrained_runtimes[256];
	uint32_t idle_devices;
	char idle_types[256];  /* "64 x V100-SXM2-32GB, ..." */
	bool have_all_devices;
	double all_devices_time_s;
	char idle_why[512];
	/* provenance */
	char version[32];
	char model_sha256[65], topology_sha256[65];
	char model_file[256], topology_file[256];
	/* the input paths as given to `plan` ("" = not recorded: the shipped
	 * demo, or a plan from before they were recorded); render, check
	 * and export find the inputs through them (src/cli/inputs.h) */
	char model_path[1024], topology_path[1024];
	/* the runtime profile file given to `plan --runtime FILE` as given
	 * and the SHA-256 of its bytes ("" = a shipped profile or none);
	 * simulate and check of the plan read that file and refuse it when
	 * it is missing or changed (src/cli/inputs.h) */
	char runtime_path[1024], runtime_sha256[65];
};

struct tp_plan {
	TP_VEC(struct tp_plan_group) groups;
	TP_VEC(uint32_t) ops;
	TP_VEC(uint32_t) devs;
	TP_VEC(double) shares;
	TP_VEC(uint32_t) sfb;
	TP_VEC(uint32_t) rtp; /* mixed groups' replica degrees */
	int64_t global_batch;
	uint32_t micro_batches; /* 1 .. TP_PLAN_MAX_MICRO_BATCHES */
	enum tp_schedule schedule;
	uint32_t virtual_stages; /* >= 1; > 1 only with INTERLEAVED */
	uint32_t zero;           /* 0..3 */
	enum tp_compression compression;
	/* gradient bucket of the runtime's overlapped data-parallel sync,
	   bytes (PyTorch DDP's bucket_cap_mb); 0 = the simulator's default
	   (tp_sim_params.grad_bucket_bytes, TP_GRAD_BUCKET_DEFAULT_BYTES).
	   tagplan plan writes the value it planned with. */
	double grad_bucket_bytes;
	/* mixture of experts under expert parallelism (src/sim/README
	   section 3): the busiest expert-parallel rank's tokens over the
	   mean (0 = the simulator's default, tp_sim_params.expert_imbalance)
	   and the expert capacity factor (tokens beyond capacity x the mean
	   are dropped, Megatron-Core's --moe-expert-capacity-factor; 0 =
	   dropless, its default) */
	double expert_imbalance, expert_capacity_factor;
	/* the runtime profile the plan was made for (core/runtime.h; "" =
	   not recorded: a plan from before runtimes, or hand-written) */
	char runtime[64];
	struct tp_plan_summary summary;
};

void tp_plan_init(struct tp_plan *p);
void tp_plan_release(struct tp_plan *p);
/* Drop all groups and the summary; keep pool capacity. */
void tp_plan_clear(struct tp_plan *p);
/*
 * 64-bit hash of everything in p but the summary: the groups' fields and
 * the ops, devices, shares, compressed ops and replica degrees they name
 * (by content, not by offset into the pools), and the plan-wide settings.
 * Plans that hash alike are the same to the simulator (up to a 64-bit
 * collision); plan.c checks at compile time that the structs have the
 * size the hash was written for, so a new field stops the build until it
 * is hashed.
 */
uint64_t tp_plan_content_hash(const struct tp_plan *p);
/* Deep copy src into dst (dst initialised). */
enum tp_status tp_plan_copy(struct tp_plan *dst, const struct tp_plan *src,
			    struct tp_error *err);

/* A group's parallel degrees: devices = dp * cp * tp. */
struct tp_plan_degrees {
	uint32_t dp, cp, tp;
};

/*
 * Append a group.  ops/devs are copied; dp * cp * tp (deg) must equal
 * n_devs (devices in the order of the header comment); shares NULL for
 * an even split, else dp entries.  The new group is the plan's last
 * (p->groups.n - 1).
 */
enum tp_status tp_plan_add_group_degrees(struct tp_plan *p,
					 const uint32_t *ops, uint32_t n_ops,
					 const uint32_t *devs, uint32_t n_devs,
					 const struct tp_plan_degrees *deg,
					 const double *shares,
					 struct tp_error *err);

/*
 * tp_plan_add_group_degrees for mixed tensor-parallel replicas: replica r holds
 * rtp[r] consecutive devices of devs (sum = n_devs; each degree dividing
 * the largest), shares NULL (even) or n entries.  The new group is the
 * plan's last; its tp the largest degree; mixed only when the degrees
 * differ (else a plain group).
 */
struct tp_plan_replicas {
	uint32_t n;         /* replicas (dp) */
	const uint32_t *tp; /* n degrees */
};
enum tp_status tp_plan_add_group_mixed(struct tp_plan *p, const uint32_t *ops,
				       uint32_t n_ops, const uint32_t *devs,
				       uint32_t n_devs,
				       const struct tp_plan_replicas *rep,
				       const double *shares,
				       struct tp_error *err);

/* A mixed group's replicas by degree, "3 x tp 1 + 24 x tp 4" (degrees
 * ascending), into buf; "dp D x tp T" for a plain group. */
void tp_plan_degrees_label(const struct tp_plan *p, uint32_t g, char *buf,
			   size_t size);

/* Replica r's tensor-parallel degree in group g. */
static inline uint32_t tp_plan_replica_tp(const struct tp_plan *p, uint32_t g,
					  uint32_t r)
{
	const struct tp_plan_group *gr = &p->groups.v[g];
	return gr->mixed ? p->rtp.v[gr->rtp_first + r] : gr->tp;
}

static inline uint32_t *tp_plan_group_ops(const struct tp_plan *p, uint32_t g)
{
	return p->ops.v + p->groups.v[g].op_first;
}
static inline uint32_t *tp_plan_group_devs(const struct tp_plan *p, uint32_t g)
{
	return p->devs.v + p->groups.v[g].dev_first;
}
static inline double *tp_plan_group_shares(const struct tp_plan *p, uint32_t g)
{
	return p->shares.v + p->groups.v[g].share_first;
}
static inline uint32_t *tp_plan_group_sfb(const struct tp_plan *p, uint32_t g)
{
	return p->sfb.v + p->groups.v[g].sfb_first;
}

/*
 * Check the plan against its model and cluster: every op in exactly one
 * group, device and op indices in range, no device twice in a group,
 * dp * cp * tp == devices, cp the same in every group and, above 1,
 * dividing a sequence model's tokens in 2 * cp chunks, shares positive and summing to 1, tp dividing every
 * op's tp_units, sp only with tp > 1, micro-batches dividing the batch
 * into at least one sample per replica, schedule/virtual stages/ZeRO
 * consistent, ep dividing dp x cp and each layer's routed experts in the group
 * (and > 1 only for groups with routed experts).  TP_EINPUT with a JSON
 * path ("$.groups[2].tp") and the fix.
 */
enum tp_status tp_plan_validate(const struct tp_plan *p,
				const struct tp_model *m,
				const struct tp_cluster *c,
				struct tp_error *err);

/* Would group g (its ops valid for m) pass tp_plan_validate's expert-
 * parallelism rules with degree ep (ep dividing dp x cp and each layer's
 * routed experts in the group; ep 1 always)? */
bool tp_plan_ep_fits(const struct tp_plan *p, const struct tp_model *m,
		     uint32_t g, uint32_t ep);

void tp_plan_summary_release(struct tp_plan_summary *s);

/* What the devices plan p uses cost per hour: the sum of their device
 * types' price_per_hour on cluster c (each device once), 0 when one of
 * them has no price.  mark: c->devices.n zeroed bytes, left zeroed, or
 * NULL (allocated; 0 when that fails). */
double tp_plan_price_per_hour(const struct tp_plan *p,
			      const struct tp_cluster *c, uint8_t *mark);

const char *tp_sync_name(enum tp_sync s);
int tp_sync_parse(const char *s);
const char *tp_recompute_name(enum tp_recompute r);
int tp_recompute_parse(const char *s);
const char *tp_schedule_name(enum tp_schedule s);
int tp_schedule_parse(const char *s);
const char *tp_compression_name(enum tp_compression c);
int tp_compression_parse(const char *s);
const char *tp_lossy_name(enum tp_lossy l);
int tp_lossy_parse(const char *s);

#endif
