/*
 * coarsen.h - cutting a model into the op groups the search decides on.
 *
 * Groups are contiguous ranges of the model's topological order
 * (model->topo), so every edge goes from a group to itself or a later one:
 * the group graph is a DAG and consecutive groups on disjoint devices are
 * well-defined pipeline stages.  The number of groups is bounded (at most
 * TP_COARSEN_MAX_GROUPS) and chosen from the graph: one group per layer
 * (or per few layers, for deep models) when the model says which op belongs
 * to which layer, else about 2 sqrt(ops), between 16 and 48.  Within that
 * count the cut points minimise the squared imbalance of the groups'
 * compute (so expensive ops end up spread over groups) plus a penalty for
 * every cut inside a layer (a transformer block or a ResNet stage stays in
 * one group when that does not unbalance the groups much).  The result is
 * a deterministic function of the model.
 *
 * Ownership: tp_coarsen fills a caller-embedded struct tp_groups (no init
 * needed); tp_groups_release frees it and is safe on a zeroed struct.
 */
#ifndef TP_COARSEN_H
#define TP_COARSEN_H

#include <stdint.h>

#include "core/error.h"
#include "core/model.h"

#define TP_COARSEN_MAX_GROUPS 64

struct tp_groups {
	uint32_t n;         /* number of groups, 1..TP_COARSEN_MAX_GROUPS */
	uint32_t *first;    /* n + 1 positions into model->topo */
	uint32_t *group_of; /* per op index: its group */
	/* per group */
	double *weight;      /* balancing weight (FLOP-equivalent, per sample) */
	double *flop;        /* forward + backward FLOP per sample */
	double *param_bytes; /* parameters, model dtype */
	double *saved_bytes; /* activation kept for backward, per sample */
	double *selective_bytes; /* of which dropped by selective recompute */
	double *in_bytes;    /* per sample, on edges from earlier groups */
	uint32_t *tp_units;  /* gcd of the ops' nonzero tp_units, 0 = any */
	uint8_t *splittable; /* 1 when some op splits under tensor parallelism */
	uint32_t cuts_inside_layers; /* how many cuts split a layer */
};

/*
 * The number of groups tp_coarsen chooses for m when asked for 0 (see the
 * header comment); never more than the number of ops.
 */
uint32_t tp_coarsen_auto_count(const struct tp_model *m);

/*
 * Cut finalized model m into n_groups groups (0 = tp_coarsen_auto_count;
 * more than the ops or than TP_COARSEN_MAX_GROUPS is clamped).  Returns
 * TP_OK, TP_EINPUT when m is not finalized, TP_ENOMEM.
 */
enum tp_status tp_coarsen(const struct tp_model *m, uint32_t n_groups,
			  struct tp_groups *g, struct tp_error *err);

void tp_groups_release(struct tp_groups *g);

/* The balancing weight of one op: forward + backward FLOP plus its memory
 * traffic at 100 FLOP per byte and a fixed cost per kernel. */
double tp_coarsen_op_weight(const struct tp_op *op);

#endif
