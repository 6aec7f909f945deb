/*
 * actions.h - the search's action space: device sets, per-group decisions,
 * global settings, candidate actions of a state, and turning a full
 * decision vector into a plan.
 *
 * Device sets.  Built once per cluster, at GPU granularity, from the
 * topology's hierarchy and device types: all devices; all devices of one
 * type; each node; contiguous parts (halves, thirds, quarters, ... of the
 * device order, for every divisor of the device count up to 64 parts);
 * parts of equal total speed (heterogeneous clusters); single GPUs (small
 * clusters).  Sets belong to *families* whose members are disjoint and
 * ordered (the nodes, the halves, ...): "the next disjoint set" of a set
 * is its successor in a family, which is how pipelines are built.  A set
 * lists its devices in topology order, so tensor-parallel blocks of tp
 * consecutive devices stay inside one node when tp divides the set's
 * device count on every node it touches.
 *
 * A decision for a group: a device set, a tensor-parallel degree tp (dp =
 * devices / tp), a gradient synchronisation method and a recomputation
 * mode.  Global settings: micro-batch count, schedule, ZeRO stage,
 * interleaving, sequence, expert and context parallelism (tp_globals_*).
 *
 * Materialising: consecutive groups with equal decisions become one plan
 * group; per-replica batch shares are computed, not searched: proportional
 * to the replica's estimated speed on that group (its slowest device),
 * capped by the memory its devices have left (an estimate; the simulator
 * has the last word), rounded to whole samples per micro-batch.
 *
 * Speeds here are estimates (roofline per op, or the model's profiles when
 * it has them for a device type) used only to split batches and to seed
 * heuristics; every plan is scored by the simulator.
 *
 * Ownership: tp_space_init / tp_space_release; the space borrows model,
 * cluster and groups, which must outlive it.  After init it is read-only
 * and may be shared between threads; materialising needs a per-thread
 * struct tp_space_scratch.
 */
#ifndef TP_ACTIONS_H
#define TP_ACTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/runtime.h"
#include "core/vec.h"
#include "coarsen.h"
#include "core/prior.h"

enum tp_devset_kind {
	TP_DEVSET_ALL,
	TP_DEVSET_TYPE,
	TP_DEVSET_NODE,
	TP_DEVSET_PART,       /* contiguous 1/p of the device order */
	TP_DEVSET_SPEED_PART, /* contiguous, about 1/p of the total speed */
	TP_DEVSET_SINGLE,
	TP_DEVSET_TIER,       /* the devices under one switch of a tier */
	TP_DEVSET_KIND_COUNT
};

struct tp_devset {
	uint32_t first, n; /* devices: space->devs.v[first .. first + n) */
	enum tp_devset_kind kind;
	uint32_t n_nodes;      /* nodes it touches: runs of its devices on
				  one node, their nodes in
				  space->set_nodes.v[nodes_first ..) */
	uint32_t nodes_first;
	uint32_t type;         /* device type when all alike, else TP_NONE */
	uint32_t tp_max;       /* largest tp whose blocks stay within nodes */
	uint64_t tp_divides;   /* bit tp - 1 (tp 1 .. TP_SPACE_MAX_TP): tp
				  divides n and tp_max (tp_space_tp_ok reads
				  it instead of dividing per candidate) */
	uint32_t lo, hi;       /* least and greatest device */
	bool dense;            /* its devices are all of lo .. hi */
	bool ascending;        /* its device list ascends */
	double speed;          /* sum of the devices' relative speeds */
	double memory;         /* sum of usable device memory, bytes */
	char label[24];        /* "all", "V100-SXM2-16GB", "node3", "2/4" */
};

/* Members of a family: space->family_sets.v[first .. first + n). */
struct tp_family {
	uint32_t first, n;
	enum tp_devset_kind kind;
};

struct tp_decision {
	uint32_t set;      /* index into space->sets */
	uint16_t tp;       /* tensor-parallel degree; dp = set size / tp */
	uint8_t sync;      /* enum tp_sync, | TP_DECISION_MIXED */
	uint8_t recompute; /* enum tp_recompute */
};

/*
 * Mixed tensor-parallel replicas (core/plan.h "mixed"), as Sailor,
 * HexiScale and FlashFlex plan heterogeneous clusters: a decision with
 * TP_DECISION_MIXED in sync runs its set's fastest device type at tp 1
 * and every slower type in replicas of tp devices inside a node (what a
 * node has left of a type at tp 1), batch shares by estimated replica
 * speed (degree x the type's speed on the run's groups).  Offered by
 * tp_space_group_actions (tp 2, 4, 8) on sets of two or more device
 * types, for models without routed experts, without context
 * parallelism, unconstrained or under a runtime that runs mixed tp; a
 * bit of sync, so that the decision keeps its size and plain decisions
 * hash as before.
 */
#define TP_DECISION_MIXED 0x80u
static inline bool tp_decision_mixed(const struct tp_decision *d)
{
	return (d->sync & TP_DECISION_MIXED) != 0;
}
static inline enum tp_sync tp_decision_sync(const struct tp_decision *d)
{
	return (enum tp_sync)(d->sync & (TP_DECISION_MIXED - 1));
}

struct tp_globals {
	uint32_t micro_batches;
	uint8_t schedule; /* enum tp_schedule: GPIPE or 1F1B */
	uint8_t zero;     /* 0..3 */
	uint8_t even;     /* 1: every replica gets the same share (the
			     baselines dp and megatron), no memory caps */
	uint8_t shape;    /* interleaving, sequence and expert parallelism,
			     through the accessors below; 0 = none */
	uint8_t cp_log2;  /* context parallelism 2^cp_log2 (tp_globals_cp) */
	uint8_t etp;      /* expert tensor parallelism (tp_globals_etp) */
	uint8_t pad[2];   /* zero: settings are compared with memcmp, so
			     the struct has no implicit padding */
};

/*
 * Interleaving V >= 2: the pipeline's groups are re-cut into p*V chunks,
 * chunk c on stage c mod p, run interleaved (Megatron's virtual stages);
 * 0 or 1: no.  Ignored when the decisions do not form a pipeline
 * (tp_space_pipeline).  Sequence parallelism: in every group with
 * tp > 1.  (Kept in one byte with expert parallelism below.)
 */
#define TP_GLOBALS_MAX_INTERLEAVE 15u
static inline uint32_t tp_globals_interleave(const struct tp_globals *g)
{
	return g->shape & 15u;
}
static inline bool tp_globals_sp(const struct tp_globals *g)
{
	return (g->shape & 16u) != 0;
}
static inline void tp_globals_set_shape(struct tp_globals *g, uint32_t V,
					bool sp)
{
	g->shape = (uint8_t)((g->shape & 0xe0u) |
			     (V > TP_GLOBALS_MAX_INTERLEAVE
				      ? TP_GLOBALS_MAX_INTERLEAVE
				      : V) |
			     (sp ? 16u : 0u));
}
/* Expert parallelism 2^k (k 0..7, bits 5-7 of shape): every group with
 * routed experts takes the largest power of two up to it that the group
 * admits (tp_plan_ep_fits); 1 = none. */
#define TP_GLOBALS_MAX_EP 128u
static inline uint32_t tp_globals_ep(const struct tp_globals *g)
{
	return 1u << ((g->shape >> 5) & 7u);
}
static inline void tp_globals_set_ep(struct tp_globals *g, uint32_t ep)
{
	uint32_t k = 0;

	while (k < 7 && (2u << k) <= ep)
		k++;
	g->shape = (uint8_t)((g->shape & 0x1fu) | (k << 5));
}

/* Context parallelism 2^k (k 0..TP_GLOBALS_MAX_CP_LOG2): every group
 * splits each sequence over cp context ranks, dp = devices / (tp cp)
 * (core/plan.h); 1 = none.  A byte of its own (shape had no free bits
 * left); 0 keeps the hash and searches of plans without it unchanged. */
#define TP_GLOBALS_MAX_CP_LOG2 6u
static inline uint32_t tp_globals_cp(const struct tp_globals *g)
{
	return 1u << g->cp_log2;
}
static inline void tp_globals_set_cp(struct tp_globals *g, uint32_t cp)
{
	uint32_t k = 0;

	while (k < TP_GLOBALS_MAX_CP_LOG2 && (2u << k) <= cp)
		k++;
	g->cp_log2 = (uint8_t)k;
}

/* Expert tensor parallelism (core/plan.h etp): 0 = every group's tp
 * (Megatron-Core's default --expert-tensor-parallel-size), 1 = the
 * experts whole on their ranks in every group that is tensor parallel
 * with sequence parallelism and admits ep > 1 (the others keep 0).
 * Offered (level 0) only with ep > 1 and some group at tp > 1; turning
 * it on turns on sequence parallelism (Megatron-LM needs it for MoE
 * under tp), turning ep or sequence parallelism off turns it off.  0
 * keeps the hash and searches of plans without it unchanged. */
static inline uint32_t tp_globals_etp(const struct tp_globals *g)
{
	return g->etp;
}

/* Context parallelism is offered (level 0) only while every context
 * rank keeps at least this many tokens of a sequence: CP pays where
 * attention's activations dominate, from 8K-token sequences on
 * (Megatron-Core's context-parallel guide and NeMo's performance tuning
 * guide recommend it for sequences of 8K tokens and more); shorter ones
 * keep the space, and the search, as they were. */
#define TP_SPACE_CP_MIN_TOKENS 4096

/* An action: a decision (group levels) or global settings (level 0).
 * A suffix action applies its decision to its group and every later one
 * (with the largest valid tp up to d.tp on each): one move that starts a
 * pipeline stage or moves the rest of the model. */
struct tp_action {
	struct tp_decision d;
	struct tp_globals g;
	uint8_t suffix;
	uint8_t pad[3];
};

struct tp_space {
	const struct tp_model *model;
	const struct tp_cluster *cluster;
	const struct tp_groups *groups;
	TP_VEC(struct tp_devset) sets;
	TP_VEC(uint32_t) devs;
	TP_VEC(uint32_t) set_nodes; /* per set: the node of each run of its
				       devices on one node (tp_devset) */
	TP_VEC(struct tp_family) families;
	TP_VEC(uint32_t) family_sets;
	uint32_t n_types;
	double *time;       /* [g * n_types + t]: estimated s per sample,
			       forward + backward, of group g on type t */
	double *type_speed; /* per type: relative speed on the whole model
			       (fastest = 1) */
	double *dev_speed;  /* per device: type_speed of its type */
	uint32_t *mb_counts; /* micro-batch counts worth trying: divisors of
				the global batch, ascending */
	uint32_t n_mb;
	uint32_t max_group_devices; /* largest set size */
	/* the runtime the plans must run on (tp_space_set_runtime);
	   constrained = false for "none" */
	bool constrained;
	struct tp_runtime rt;
	uint32_t rt_gen; /* tp_space_set_runtime calls so far (the runtime
			    check's memo in a scratch is for one of them) */
	bool no_mixed; /* no mixed decisions (search options.no_mixed) */
	int32_t *layer_end; /* per group: largest layer label + 1 of its
			       ops, 0 when none (the even re-cut) */
	int32_t *layer_lo;  /* per group: least layer label >= 0 of its ops,
			       -1 when none (tp_runtime_group_facts) */
	/* while the sets are built: open hash of set indices by device
	   list (TP_NONE = empty), set_cap slots, a power of two */
	uint32_t *set_tab, set_cap;
};

/* Per-thread working memory for materialising plans. */
struct tp_space_scratch;

/*
 * Build the action space of (m, c, g).  Returns TP_OK, TP_ENOMEM.
 */
enum tp_status tp_space_init(struct tp_space *s, const struct tp_model *m,
			     const struct tp_cluster *c,
			     const struct tp_groups *g, struct tp_error *err);
void tp_space_release(struct tp_space *s);

/* tp_space_init's device sets and families (devsets.c), in a fixed
 * order, from s's cluster, device types and dev_speed.  TP_ENOMEM. */
enum tp_status tp_space_build_sets(struct tp_space *s, struct tp_error *err);

/*
 * Limit the space to what runtime rt executes (core/runtime.h; "none"
 * leaves it unconstrained, as after init).  Under a runtime:
 *  - tp > 1 only with can.tensor_parallel; without per-stage degrees a
 *    group with no op that splits may take the model's tp (its ops are
 *    replicated on the tensor ranks, as in Megatron);
 *  - tp_space_apply projects a decision onto the runtime's uniform
 *    settings: without per_stage_degrees every group takes the action's
 *    tp, without per_group_recompute its recomputation, without
 *    pipeline_parallel its device set; every group the synchronisation
 *    the runtime's collectives use (core/runtime.h tp_runtime_sync, the
 *    same rule as tp_space_default_sync): no sync candidates;
 *  - tp_space_level_actions keeps only candidates whose plan the runtime
 *    executes (tp_space_runnable), each once;
 *  - interleaving re-cuts at equal layer counts when the runtime's layout
 *    is not "any".
 * TP_ENOMEM.
 */
enum tp_status tp_space_set_runtime(struct tp_space *s,
				    const struct tp_runtime *rt,
				    struct tp_error *err);

/* Every replica the same share (the runtime has no uneven shares)? */
static inline bool tp_space_even_only(const struct tp_space *s)
{
	return s->constrained && !s->rt.can.uneven_shares;
}

/* A scratch serves the space it was made for, and is released before
 * it: it keeps the answers of tp_space_runnable for that space and its
 * runtime (emptied by tp_space_set_runtime; src/search/README "The
 * runtime check's memo"). */
struct tp_space_scratch *tp_space_scratch_new(const struct tp_space *s);
void tp_space_scratch_free(struct tp_space_scratch *scr);

static inline const uint32_t *tp_space_set_devs(const struct tp_space *s,
						uint32_t set)
{
	return s->devs.v + s->sets.v[set].first;
}

/* Tensor-parallel degrees beyond this are not considered. */
#define TP_SPACE_MAX_TP 64u

/* Index of the set holding exactly all devices (always 0). */
#define TP_SPACE_SET_ALL 0u

/*
 * Do sets a and b (< s->sets.n) have a device in common?  From their
 * ranges where they decide (disjoint ranges, or two dense sets), else a
 * merge of the lists (sorted copies when a list does not ascend).  Pure.
 */
bool tp_space_sets_meet(const struct tp_space *s, uint32_t a, uint32_t b);

/*
 * May group g run on set with tensor-parallel degree tp?  tp must divide
 * the set's device count on every node it touches (tp blocks inside
 * nodes), divide the group's tp_units, and tp > 1 needs an op that
 * splits.  With gl != NULL, the replicas dp = n / (tp cp) must be whole
 * under gl's context parallelism cp and fit in a micro-batch (at least
 * one sample per replica).
 */
bool tp_space_tp_ok(const struct tp_space *s, uint32_t g, uint32_t set,
		    uint32_t tp, const struct tp_globals *gl);

/* The default synchronisation on a set: hierarchical when its replicas
 * span nodes with several replicas per node, else ring. */
enum tp_sync tp_space_default_sync(const struct tp_space *s, uint32_t set,
				   uint32_t tp);

/* Samples per micro-batch under gl. */
int64_t tp_space_micro_batch(const struct tp_space *s,
			     const struct tp_globals *gl);

/*
 * Candidate actions for group g (level g + 1), given the full decision
 * vector `state` (groups < g decided, the others at their defaults) and
 * the global settings.  The first candidate is always the group's current
 * (default) decision.  Writes at most cap actions into out (cap >= 1) and
 * returns how many.  Deterministic.
 */
uint32_t tp_space_group_actions(const struct tp_space *s, uint32_t g,
				const struct tp_decision *state,
				const struct tp_globals *gl,
				struct tp_action *out, uint32_t cap);

/*
 * state[0 .. groups->n): every group data parallel on all devices, tp 1,
 * the default synchronisation, no recomputation: where self-play games
 * start (train/selfplay.c) and so the search's rollout (baselines.c).
 */
void tp_space_data_parallel(const struct tp_space *s,
			    struct tp_decision *state);

/*
 * Apply group action a to group g of state (and, for a suffix action, to
 * every later group, each with the largest valid tp up to a->d.tp under gl
 * and the default synchronisation for it).
 */
void tp_space_apply(const struct tp_space *s, uint32_t g,
		    const struct tp_action *a, const struct tp_globals *gl,
		    struct tp_decision *state);

/*
 * Candidate global settings (level 0): the current ones first, then single
 * changes (micro-batches halved/doubled/..., the other schedule, other
 * ZeRO stages, interleaving by V = 1..4 when the decisions form a
 * pipeline, sequence parallelism on/off when some group has tp > 1,
 * expert parallelism for MoE models, context parallelism for long
 * sequences - alone and with the micro-batches scaled by the same
 * factor - each under a runtime that runs it) valid for every group
 * of `state`.
 */
uint32_t tp_space_global_actions(const struct tp_space *s,
				 const struct tp_globals *cur,
				 const struct tp_decision *state,
				 struct tp_action *out, uint32_t cap);

/* The candidates of `level` (0: the global settings, tp_space_global_
 * actions; g + 1: group g, tp_space_group_actions); under a runtime
 * (tp_space_set_runtime) only those whose plan it executes, each
 * resulting plan once, the first (keep) always.  scr may be NULL only
 * for an unconstrained space. */
uint32_t tp_space_level_actions(const struct tp_space *s, uint32_t level,
				const struct tp_globals *gl,
				const struct tp_decision *state,
				struct tp_action *out, uint32_t cap,
				struct tp_space_scratch *scr);

/*
 * Does the space's runtime execute the plan of (gl, state)?  Always for
 * an unconstrained space; else the plan is materialised in scr and
 * checked by tp_runtime_plan_check (why, when non-NULL, says what it
 * needs).  A state that does not materialise is not runnable.  Without
 * why the answer may come from scr's memo of earlier answers (the same
 * answer).
 */
bool tp_space_runnable(const struct tp_space *s, const struct tp_globals *gl,
		       const struct tp_decision *state,
		       struct tp_space_scratch *scr, char *why,
		       size_t why_size);

/*
 * The pipeline the decisions form, for interleaving: runs of equal
 * decisions, a new stage whenever a run's devices are disjoint from the
 * previous run's; it is a pipeline when there are at least two stages,
 * each on one device set, the sets pairwise disjoint.  Returns the
 * number of stages p (0 when not a pipeline); interleaving by V needs
 * p * V <= groups.
 */
uint32_t tp_space_pipeline(const struct tp_space *s,
			   const struct tp_decision *state);

/* Is every group's decision valid under gl (tp_space_tp_ok)? */
bool tp_space_state_ok(const struct tp_space *s, const struct tp_globals *gl,
		       const struct tp_decision *state);

/*
 * Turn a full decision vector (groups->n decisions) and global settings
 * into a plan (initialised; cleared first; summary untouched).  With
 * gl->interleave = V >= 2 and a pipeline of p stages (tp_space_pipeline,
 * p * V <= groups) the groups are re-cut into p * V contiguous chunks
 * whose weights keep each stage's share of the model, chunk c on stage
 * c mod p's devices (tensor degree and synchronisation of that stage,
 * each group's own recomputation), under the interleaved schedule.
 * compression is copied into the plan.  TP_EINPUT when a decision is
 * invalid (see tp_space_tp_ok), TP_ENOMEM.
 */
enum tp_status tp_space_materialize(const struct tp_space *s,
				    const struct tp_globals *gl,
				    const struct tp_decision *state,
				    enum tp_compression compression,
				    struct tp_space_scratch *scr,
				    struct tp_plan *plan, struct tp_error *err);

/* 64-bit hash of (gl, state): equal inputs give equal plans. */
uint64_t tp_space_hash(const struct tp_space *s, const struct tp_globals *gl,
		       const struct tp_decision *state);

/*
 * Split `samples` into n whole numbers >= 1 proportional to weight[]
 * (largest remainder; ties to the lower index), each at most cap[i] when
 * cap != NULL and the caps leave room (caps are relaxed otherwise).
 * Returns false when samples < n.
 */
bool tp_space_split_samples(int64_t samples, uint32_t n, const double *weight,
			    const double *cap, int64_t *out);

/*
 * The prior provider's view (prior.h) of candidate a at `level` (0: the
 * global settings, g + 1: group g); keeps_default for the candidate that
 * keeps the default (the first of a list).  pa->devices points into sp.
 * The search and the GNN's training both describe actions through this,
 * so the network sees in a search what it saw in training.
 */
void tp_space_prior_action(const struct tp_space *sp, uint32_t level,
			   const struct tp_action *a, bool keeps_default,
			   struct tp_prior_action *pa);

/* The fastest device type of a set (by type_speed; ties: the lower). */
uint32_t tp_space_set_fast_type(const struct tp_space *s, uint32_t set);

/* Estimated seconds per sample (forward + backward) of op on device type
 * t of cluster c: the model's profile for that type when present, else a
 * roofline estimate with the type's efficiency constants. */
double tp_space_op_time(const struct tp_model *m, const struct tp_cluster *c,
			uint32_t op, uint32_t t);

/* Estimated bytes per parameter byte held for weights + gradients +
 * optimizer state (mixed precision keeps fp32 master weights). */
double tp_space_state_factor(const struct tp_model *m);

#endif
