/*
 * prior.h - the prior provider: how the search asks for action priors
 * without knowing who computes them.
 *
 * The MCTS of src/search/ expands a node by listing the candidate actions
 * of its state and asking a provider for a prior over them.  The GNN of src/gnn/
 * implements this interface; with no provider the priors are uniform.
 * This header is self-contained on purpose: a provider needs only the
 * core IR (model, cluster, plan, report) and the plain structs below, not
 * the search's internals.
 *
 * The state.  The model's ops are cut into n_groups op groups, contiguous
 * ranges of the model's topological order (model->topo): group g holds
 * topo[group_first[g] .. group_first[g + 1]).  The search decides, in this
 * order, first the global settings (level 0: micro-batches, schedule, ZeRO)
 * and then one action per group (level g + 1 decides group g).  A state is
 * the decisions taken so far; every group not yet decided takes a default
 * choice (the incumbent best plan's), so every state is a complete plan,
 * given in `plan` (with its simulation in `report` when one was run).
 *
 * The interface carries no state value: the search scores every leaf by
 * simulation.  (A value that cut simulations was tried and dropped: the
 * GNN's value head correlated at -0.38 with the simulated values on
 * bench_gnn's cases, src/gnn/README "Values".)
 * A provider may also predict each action's gain over the state
 * (tp_prior_state.gains): the guided sweeps (sweep.c) leave the
 * changes predicted at least 15% slower unsimulated (search.h
 * TP_SEARCH_GAIN_SKIP); the tree does not ask for gains.
 *
 * Threads: the search calls a provider from several threads at once, each
 * with its own scratch (scratch_new is called once per search thread).  A
 * provider must not modify anything it is given.
 *
 * Ownership: everything in struct tp_prior_state is borrowed for the
 * duration of the call.
 */
#ifndef TP_PRIOR_H
#define TP_PRIOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "error.h"
#include "model.h"
#include "plan.h"
#include "report.h"

/* One candidate action of a state. */
struct tp_prior_action {
	bool global; /* true at level 0 */
	/* group actions: the device set (devices[r * tp + k] is tensor rank
	   k of replica r), degrees, synchronisation and recomputation */
	const uint32_t *devices;
	uint32_t n_devices, dp, tp;
	enum tp_sync sync;
	enum tp_recompute recompute;
	bool keeps_default; /* the action equals the group's default */
	/* mixed tensor-parallel replicas (core/plan.h "mixed"): 0 = none;
	   else mixed_devices of the set run in replicas of degree mixed_tp
	   (the slower device types) and the rest at tp (dp counts the set
	   as if all ran at tp) */
	uint32_t mixed_tp, mixed_devices;
	bool applies_to_rest; /* also decides every later group (a new
				 pipeline stage, or moving the rest of the
				 model), each with the largest valid tp up
				 to this one */
	/* global actions */
	uint32_t micro_batches;
	enum tp_schedule schedule;
	uint32_t zero;
	uint32_t virtual_stages; /* >= 2: the pipeline runs interleaved with
				    this many chunks per stage; 0 or 1: no */
	bool sp; /* sequence parallelism where tp > 1 */
	bool even; /* every replica the same share (the baselines dp and
		      megatron start so; one global action turns it off) */
	uint32_t ep; /* expert parallelism (groups with routed experts take
			the largest power of two up to it they admit); 0 or
			1: none */
	uint32_t cp; /* context parallelism of every group; 0 or 1: none */
	uint32_t etp; /* expert tensor parallelism: 0 = each group's tp (the
			 experts' GEMMs split over the tensor ranks), 1 =
			 the experts whole on their ranks in the groups
			 with ep > 1, tp > 1 and sequence parallelism */
};

struct tp_prior_state {
	const struct tp_model *model;
	const struct tp_cluster *cluster;
	uint32_t n_groups;
	const uint32_t *group_first; /* n_groups + 1 positions in model->topo */
	uint32_t level;              /* 0 = globals, g + 1 = group g */
	const bool *decided;         /* per group: decided in this state */
	const struct tp_plan *plan;  /* the state as a complete plan */
	const struct tp_report *report; /* its simulation, or NULL */
	uint32_t n_actions;
	const struct tp_prior_action *actions;
	/* Out, optional (NULL = not wanted): gains[0 .. n_actions), filled
	   with NAN by the caller.  A provider that predicts how much each
	   action changes the state's iteration time writes
	   ln(t_state / t_child), the child being the state with that one
	   decision changed (> 0: faster; large negative: slower or does not
	   fit).  Entries left NAN are unknown.  Relative to the state, so
	   it needs no reference time. */
	float *gains;
};

struct tp_prior_provider {
	const char *name; /* "gnn", ... (for the plan's summary) */
	void *ctx;
	/* Per-thread scratch; NULL from scratch_new means out of memory.
	   Either function pointer may be NULL (no scratch). */
	void *(*scratch_new)(void *ctx);
	void (*scratch_free)(void *ctx, void *scratch);
	/*
	 * Fill priors[0 .. state->n_actions) with non-negative numbers (the
	 * search normalises them; all zero means uniform).  Returns TP_OK, or a status with err filled (the search then stops
	 * and reports the error).
	 */
	enum tp_status (*evaluate)(void *ctx, void *scratch,
				   const struct tp_prior_state *state,
				   float *priors, struct tp_error *err);
	/*
	 * Optional (NULL: every cluster).  Whether the provider's priors are
	 * meant for cluster c; false when c lies outside what it knows (the
	 * GNN: more devices than any cluster it was trained on), with the
	 * reason, a phrase such as "the GNN was trained on clusters of up to
	 * 256 GPUs, this one has 1,024", in why[0 .. why_size) (why may be
	 * NULL).  The search then runs as with no provider unless told
	 * otherwise (search.h prior_any_cluster).  Called once per search,
	 * before any scratch.
	 */
	bool (*covers)(void *ctx, const struct tp_cluster *c, char *why,
		       size_t why_size);
};

#endif
