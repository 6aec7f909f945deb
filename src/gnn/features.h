/*
 * features.h - from (model, cluster, op groups, partial plan, candidate
 * actions) to the GNN's input graph.
 *
 * The graph has one node per op group and one node per device (or per
 * device equivalence class on large clusters, see below), and five edge
 * types (net.h): flow/back between groups that exchange tensors, link
 * between every pair of device nodes (self-loops included), place/serve
 * between every group and every device node.  Every feature is
 * normalised so that one network serves any model and cluster size: sizes
 * are divided by the graph's maximum (or total) and/or log-scaled onto
 * [0, 1]; times are relative to the fastest device for that group.  The
 * full list is in src/gnn/README ("Features"); the widths are the
 * TP_GNN_F_* constants and a weights file whose widths differ is refused.
 *
 * Fixes over TAG: group-to-group edges carry the tensor bytes (TAG's were
 * always 0), devices are GPUs, not machines, and utilisation is a
 * floating-point fraction (TAG's integer division gave 0).
 *
 * Equivalence classes: a cluster with more than `pool_above` devices
 * (default 64) is pooled: devices with the same type, the same kind of
 * node (device count, fabric and NIC bandwidth) and the same position in
 * their node share one device node, weighted by the number of devices it
 * stands for.  A DGX cluster of 128 nodes x 8 GPUs becomes 8 device nodes.
 * Actions then name classes with weights (how many of their devices are
 * in the class).  Link features of a class pair are those of the route
 * between representatives on different nodes where possible.
 *
 * Usage: tp_gnn_features_new once per (model, cluster, groups) - it
 * computes the static features - then tp_gnn_features_state for every
 * state, which refreshes the dynamic features (decisions, loads, memory)
 * in place and lists the actions.  A struct tp_gnn_features is not
 * thread-safe: one per thread.
 *
 * Ownership: the features object borrows model and cluster (they must
 * outlive it) and copies the group boundaries.  The struct tp_gnn_input
 * filled by tp_gnn_features_state points into the object and is valid
 * until the next call.
 * Errors: TP_EINPUT when the groups do not cover the model or a state
 * does not match (wrong group count, device out of range), TP_ENOMEM.
 */
#ifndef TP_GNN_FEATURES_H
#define TP_GNN_FEATURES_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"
#include "core/model.h"
#include "core/prior.h"
#include "graph.h"
#include "net.h"

/*
 * Feature widths (documented in src/gnn/README).  A weights file records
 * them and is refused when they differ, but for action and global
 * features appended after the last slot of their kind: those weights are
 * read zero-padded (weights.c), so they compute what they did and ignore
 * the new features until `make weights` retrains them.  New action and
 * global features therefore go at the end of their layout, never between
 * slots.
 */
#define TP_GNN_F_GROUP 24
#define TP_GNN_F_DEVICE 13
#define TP_GNN_F_ACTION 35
#define TP_GNN_F_GLOBAL 25
#define TP_GNN_F_FLOW 3
#define TP_GNN_F_LINK 5
#define TP_GNN_F_PLACE 4

/*
 * The layout: every feature's slot by name, in order, one-hot blocks as
 * wide as the enum they encode (plan.h's *_COUNT).  features.c checks at
 * compile time that each layout ends exactly at its width above, so a
 * new value of an encoded enum (a fourth schedule) or a new feature stops
 * the build instead of shifting or dropping features silently.
 */

/* ZeRO stages 0..3 (tp_plan_validate rejects more). */
#define TP_GNN_ZERO_STAGES 4

/* Group node. */
enum tp_gnn_group_slot {
	TP_GNN_GROUP_FLOP,        /* lin(FLOP) */
	TP_GNN_GROUP_FLOP_LOG,    /* log(FLOP, 4) */
	TP_GNN_GROUP_PARAM,       /* lin(param bytes) */
	TP_GNN_GROUP_PARAM_LOG,   /* log(param bytes, 4) */
	TP_GNN_GROUP_SAVED,       /* lin(saved activation bytes) */
	TP_GNN_GROUP_SAVED_LOG,   /* log(saved bytes, 4) */
	TP_GNN_GROUP_FLOP_SHARE,  /* share of the model's FLOP */
	TP_GNN_GROUP_PARAM_SHARE, /* share of the model's parameters */
	TP_GNN_GROUP_POSITION,    /* position in the order */
	TP_GNN_GROUP_HETERO,      /* slowest / fastest type time, sensitivity */
	TP_GNN_GROUP_INTENSITY,   /* arithmetic intensity */
	TP_GNN_GROUP_SPLITS,      /* splits under tensor parallelism */
	TP_GNN_GROUP_TP_UNITS,    /* log2(tp units) / 7 */
	/* the partial plan (refreshed per state) */
	/* DECIDED and CURRENT (decided in the state; the group being
	   decided) are 0 since 2026-12-06, slots kept: the node and edge
	   features are then the plan's alone, so the states of one plan at
	   different levels share a pass through the network's encoders and
	   layers (net.h body cache); the policy head still reads the
	   decided group's node */
	TP_GNN_GROUP_DECIDED,
	TP_GNN_GROUP_CURRENT,
	TP_GNN_GROUP_DEVICES,     /* devices / all devices */
	TP_GNN_GROUP_DP,          /* log2(dp) / log2(devices) */
	TP_GNN_GROUP_TP,          /* log2(tp) / 3 */
	TP_GNN_GROUP_SYNC,        /* one-hot, TP_SYNC_COUNT */
	TP_GNN_GROUP_RECOMPUTE = TP_GNN_GROUP_SYNC + TP_SYNC_COUNT,
	TP_GNN_GROUP_END = TP_GNN_GROUP_RECOMPUTE + TP_RECOMPUTE_COUNT
};

/* Device node (or device class). */
enum tp_gnn_device_slot {
	TP_GNN_DEVICE_PEAK,      /* lin(peak FLOP/s) */
	TP_GNN_DEVICE_PEAK_LOG,  /* log(peak, 2) */
	TP_GNN_DEVICE_MEMORY,    /* lin(memory) */
	TP_GNN_DEVICE_MEMORY_BW, /* lin(memory bandwidth) */
	TP_GNN_DEVICE_NODE_SIZE, /* devices in its node / all */
	TP_GNN_DEVICE_FABRIC,    /* lin(node fabric bandwidth) */
	TP_GNN_DEVICE_NIC,       /* lin(NIC bandwidth) */
	TP_GNN_DEVICE_WEIGHT,    /* devices it stands for / all */
	/* the partial plan (refreshed per state, mean over a class) */
	TP_GNN_DEVICE_BUSY,      /* compute busy fraction */
	TP_GNN_DEVICE_MEMORY_USE, /* peak memory / capacity / 2 */
	TP_GNN_DEVICE_COMM,      /* exposed communication (simulated) */
	TP_GNN_DEVICE_SIMULATED, /* 1 simulated, 0 estimated */
	TP_GNN_DEVICE_GROUPS,    /* groups on it / groups */
	TP_GNN_DEVICE_END
};

/* The schedules the one-hot tells apart: gpipe, 1f1b, interleaved, the
 * three of the weights trained before zb-h1.  zb-h1 (1F1B's order with
 * the weight gradients deferred) sets 1f1b's slot here, and the action
 * slot TP_GNN_ACTION_ZB_H1 (appended, so that weights trained before it
 * keep reading this block as they were trained) tells the two apart. */
#define TP_GNN_SCHEDULES 3

/* The global settings (micro-batches, schedule, ZeRO): a block shared by
 * the global node and the global actions. */
enum tp_gnn_globals_slot {
	TP_GNN_GLOBALS_MICRO,    /* log2(micro-batches) / log2(batch) */
	TP_GNN_GLOBALS_SCHEDULE, /* one-hot, TP_GNN_SCHEDULES */
	TP_GNN_GLOBALS_ZERO = TP_GNN_GLOBALS_SCHEDULE + TP_GNN_SCHEDULES,
	TP_GNN_GLOBALS_END = TP_GNN_GLOBALS_ZERO + TP_GNN_ZERO_STAGES
};

/* Candidate action. */
enum tp_gnn_action_slot {
	TP_GNN_ACTION_GLOBAL,   /* a global action (level 0) */
	/* group actions */
	TP_GNN_ACTION_DEVICES,  /* devices / all */
	TP_GNN_ACTION_DP,       /* log2(dp) / log2(devices) */
	TP_GNN_ACTION_TP,       /* log2(tp) / 3 */
	TP_GNN_ACTION_SYNC,     /* one-hot, TP_SYNC_COUNT */
	TP_GNN_ACTION_RECOMPUTE = TP_GNN_ACTION_SYNC + TP_SYNC_COUNT,
	TP_GNN_ACTION_KEEPS = TP_GNN_ACTION_RECOMPUTE + TP_RECOMPUTE_COUNT,
	TP_GNN_ACTION_PEAK,     /* share of the cluster's peak FLOP/s */
	TP_GNN_ACTION_NODES,    /* nodes spanned / nodes */
	TP_GNN_ACTION_SLOWDOWN, /* compute slowdown vs. the whole cluster */
	TP_GNN_ACTION_MEMORY,   /* memory pressure */
	TP_GNN_ACTION_SYNC_RING, /* gradient all-reduce vs. compute, ring */
	/* global actions: the globals block */
	TP_GNN_ACTION_GLOBALS,
	/* group actions again: the sync estimate with the action's method */
	TP_GNN_ACTION_SYNC_OWN = TP_GNN_ACTION_GLOBALS + TP_GNN_GLOBALS_END,
	/* the plan's expert and context parallelism after the action (a
	   global action's own, else the state's; appended 2026-12, zero
	   weights in the weights trained before) */
	TP_GNN_ACTION_EP, /* log2(ep) / 7 */
	TP_GNN_ACTION_CP, /* log2(cp) / 6 */
	/* mixed tensor-parallel replicas (core/plan.h "mixed"; appended
	   2026-12, zero weights in the weights trained before): a group
	   action's own (prior.h mixed_tp, mixed_devices), a global action
	   the state's (the global slots below) */
	TP_GNN_ACTION_MIXED_TP,    /* log2(slower types' degree / tp) / 3 */
	TP_GNN_ACTION_MIXED_SHARE, /* devices at that degree / the set's */
	/* expert tensor parallelism 1 (core/plan.h etp; appended 2026-12-06,
	   zero weights in the weights trained before): a global action's
	   own (prior.h etp), a group action the state's (the global slot
	   below) */
	TP_GNN_ACTION_ETP, /* 1 = experts whole on their ranks, 0 = split */
	/* appended 2026-12-06 (zero weights in the weights trained before),
	   the fields of prior.h's action that no slot above told apart:
	   the schedule zb-h1 (the globals block's one-hot, three wide,
	   counts it as 1f1b), the interleaving degree (the one-hot says
	   only "interleaved"), sequence parallelism, even shares, and a
	   group action that also decides every later group.  A global
	   action's own; a group action the state's (even: 0) */
	TP_GNN_ACTION_ZB_H1,      /* 1 = schedule zb-h1 */
	TP_GNN_ACTION_INTERLEAVE, /* log2(virtual stages) / 4, 0 = none */
	TP_GNN_ACTION_SP,         /* 1 = sequence parallelism */
	TP_GNN_ACTION_EVEN,       /* 1 = every replica the same share */
	TP_GNN_ACTION_REST,       /* 1 = applies_to_rest (group actions) */
	TP_GNN_ACTION_END
};

/* The global features.  Since weights version 3 (the value head, their
 * only reader, dropped) no layer of the network reads them; they are
 * still built, because group actions copy their MIXED_* and ETP slots,
 * and kept in the weights file's widths and normalisation (removing
 * them is a layout change of its own). */
enum tp_gnn_global_slot {
	TP_GNN_GLOBAL_LEVEL,     /* level / groups */
	TP_GNN_GLOBAL_GROUPS,    /* groups / 64 */
	TP_GNN_GLOBAL_DEVICES,   /* log2(devices) / 10 */
	TP_GNN_GLOBAL_NODES,     /* nodes / devices */
	TP_GNN_GLOBAL_TYPES,     /* (device types - 1) / 3 */
	TP_GNN_GLOBAL_STATE,     /* model state / cluster memory / 2 */
	TP_GNN_GLOBAL_SYNC,      /* gradient all-reduce vs. the lower bound */
	TP_GNN_GLOBAL_GLOBALS,   /* the globals block */
	TP_GNN_GLOBAL_SIMULATED = TP_GNN_GLOBAL_GLOBALS + TP_GNN_GLOBALS_END,
	TP_GNN_GLOBAL_FITS,
	TP_GNN_GLOBAL_EFFICIENCY, /* sqrt(lower bound / iteration time) */
	/* appended 2026-12 (zero weights in the weights trained before) */
	TP_GNN_GLOBAL_EXPERTS,   /* log2(routed experts per MoE layer) / 8 */
	TP_GNN_GLOBAL_SEQ,       /* log2(sequence length) / 17 */
	TP_GNN_GLOBAL_EP,        /* the state's largest ep, log2(ep) / 7 */
	TP_GNN_GLOBAL_CP,        /* the state's cp, log2(cp) / 6 */
	/* appended 2026-12: the state's mixed groups (core/plan.h) */
	TP_GNN_GLOBAL_MIXED_TP,  /* largest log2(max / min replica tp) / 3 */
	TP_GNN_GLOBAL_MIXED_SHARE, /* largest share of a group's devices in
				      replicas above its smallest degree */
	/* appended 2026-12-06: 1 when a group of the state runs its experts
	   whole (etp 1), else 0 */
	TP_GNN_GLOBAL_ETP,
	TP_GNN_GLOBAL_END
};

/* Edges: flow/back between groups, link between device nodes,
 * place/serve between groups and device nodes. */
enum tp_gnn_flow_slot {
	TP_GNN_FLOW_BYTES,     /* lin(bytes per sample between the groups) */
	TP_GNN_FLOW_BYTES_LOG, /* log(bytes, 4) */
	TP_GNN_FLOW_SAME_SET,  /* both groups on the same devices now */
	TP_GNN_FLOW_END
};
enum tp_gnn_link_slot {
	TP_GNN_LINK_BW,      /* lin(route bandwidth) */
	TP_GNN_LINK_BW_LOG,  /* log(bandwidth, 3) */
	TP_GNN_LINK_LATENCY, /* lin(route latency) */
	TP_GNN_LINK_SAME_NODE,
	TP_GNN_LINK_SELF,
	TP_GNN_LINK_END
};
enum tp_gnn_place_slot {
	TP_GNN_PLACE_SLOWDOWN, /* log10(time here / fastest) / 2 */
	TP_GNN_PLACE_SHARE,    /* the group's share of the model's time here */
	TP_GNN_PLACE_STATE,    /* group state bytes / device memory */
	TP_GNN_PLACE_PLACED,   /* placed here now (fraction of a class) */
	TP_GNN_PLACE_END
};

/* The widths above as a struct (for graphs and network configs). */
void tp_gnn_feature_widths(struct tp_gnn_widths *w);

struct tp_gnn_features;

/* Pool devices into classes above this many devices (0 = default 64). */
struct tp_gnn_feat_options {
	uint32_t pool_above;
};

/*
 * Static features of model m (finalized), cluster c (finalized) cut into
 * n_groups groups: group g holds m->topo[group_first[g] ..
 * group_first[g + 1]).  opt may be NULL.
 */
struct tp_gnn_features *
tp_gnn_features_new(const struct tp_model *m, const struct tp_cluster *c,
		    uint32_t n_groups, const uint32_t *group_first,
		    const struct tp_gnn_feat_options *opt,
		    struct tp_error *err);
void tp_gnn_features_free(struct tp_gnn_features *f);

/* Was f built for exactly (m, c, n_groups, group_first)? */
bool tp_gnn_features_match(const struct tp_gnn_features *f,
			   const struct tp_model *m, const struct tp_cluster *c,
			   uint32_t n_groups, const uint32_t *group_first);

/* Device nodes of the graph (classes when pooled) and whether pooled. */
uint32_t tp_gnn_features_device_nodes(const struct tp_gnn_features *f);
bool tp_gnn_features_pooled(const struct tp_gnn_features *f);

/*
 * Refresh the dynamic features for state st (same model, cluster and
 * groups as f) and fill *in with the graph and its candidate actions.
 */
enum tp_status tp_gnn_features_state(struct tp_gnn_features *f,
				     const struct tp_prior_state *st,
				     struct tp_gnn_input *in,
				     struct tp_error *err);

/*
 * The lower bound on the iteration time (global features SYNC and
 * EFFICIENCY):
 * model FLOP of one iteration (forward + backward, global batch) over the
 * sum of the devices' peak FLOP/s.
 */
double tp_gnn_features_lower_bound(const struct tp_gnn_features *f);

/*
 * Gain-head target and its inverse.  The gain of a candidate action is
 * how much faster the state's plan gets with that one decision changed:
 * g = tanh(TP_GNN_GAIN_SCALE * ln(t_state / t_child)), 0 for no change,
 * > 0 faster, -1 for a child that does not fit when the state does, +1
 * for a child that fits when the state does not.  It is relative, so it
 * means the same on any model and cluster (the absolute efficiency a
 * value head learnt did not transfer; README "Values").  *weight is 0 when the gain is
 * unknown (the child was not scored, or neither fits).
 * tp_gnn_gain_log_ratio turns a gain back into ln(t_state / t_child),
 * clamped to +-atanh(0.999) / scale (a factor of 1.6 either way).
 */
#define TP_GNN_GAIN_SCALE 8.0
void tp_gnn_gain_target(bool state_fits, double state_time_s, bool scored,
			bool child_fits, double child_time_s, float *target,
			float *weight);
double tp_gnn_gain_log_ratio(float g);

#endif
