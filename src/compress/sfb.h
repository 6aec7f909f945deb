/*
 * sfb.h - gradient compression: lossless sufficient-factor broadcasting
 * (SFB) chosen exactly by a minimum cut, and the opt-in lossy formats.
 *
 * SFB (TAG section 7).  In a data-parallel group, the weight gradient of a
 * matmul-like op is the product of two factors every replica already
 * holds a shard of: its input activations X and its output gradient dY
 * (dW = X^T dY summed over samples).  Instead of all-reducing dW, every
 * replica can all-gather the factors of the whole group batch and compute
 * the full dW itself.  The math is unchanged (lossless); it pays when the
 * factors are smaller than the weights (large fully-connected layers,
 * small per-replica batches, slow networks).
 *
 * The decision, per group, op by op (x_i = 1: op i's weight gradient is
 * computed on every replica from the gathered factors, and not
 * synchronised):
 *
 *   minimise  sum_i x_i (W_i + G_i - A_i)
 *           + sum_p [some reader of p's output selected] * (x_p ? C_p - D_p : C_p)
 *
 *   W_i  extra compute: the weight gradient over the samples of the other
 *        replicas, on the slowest replica's device (real device speeds);
 *   G_i  all-gather of op i's output gradient dY_i among the replicas;
 *   A_i  the synchronisation of op i's gradient that is saved (ring or
 *        hierarchical all-reduce on the plan's real routes: bandwidth of
 *        the slowest ring hop with links shared by concurrent flows, plus
 *        per-step latency; in the group's gradient format);
 *   C_p  all-gather of the activation op p produces (an input factor of
 *        its selected readers, gathered once for all of them);
 *   D_p  = max(0, C_p - F_p) when p is itself a candidate of the group:
 *        a selected producer already has its own full inputs, so it can
 *        instead recompute its forward over the whole batch (F_p), which
 *        its readers then read locally.
 * The second sum is TAG's b_k >= x_j - x_i (a selected consumer reading a
 * non-selected producer pays for the broadcast), with the broadcast shared
 * by all readers of one tensor.  It is pairwise submodular; sfb.c writes
 * the reduction to an s-t cut down and solves it exactly with mincut.h,
 * no MILP solver.  All terms are per iteration, in seconds, additive: the
 * selection optimises this proxy, and the simulator then scores the plan
 * with its real overlap and contention (tp_sfb_simulate of
 * src/search/joint.h keeps the selection only when the simulator agrees
 * it helps).
 *
 * Eligible groups: plan compression not off, dp >= 2, tp = 1, ring or
 * hierarchical all-reduce, ZeRO stage 0.  Candidates: their ops with
 * parameters.  Others keep their plain synchronisation.
 *
 * Lossy (opt-in: only when plan->compression == TP_COMPRESSION_LOSSY,
 * never chosen otherwise): per group, gradients communicated in 16 bits
 * instead of the default gradient format (when that is wider), or
 * PowerSGD low rank r (matrix m x n sent as (m + n) r numbers in two
 * all-reduces, plus 4 m n r + 2 m r^2 FLOP on the slowest replica;
 * m x n from the op's activations for matmuls and embeddings, square for
 * others - an approximation).  The format with the lowest proxy time (SFB
 * chosen for each) wins, ties to lossless; it is recorded in the group's
 * lossy and powersgd_rank.
 *
 * What the simulator must do for a plan with SFB (tp_sfb_group_actions
 * lists it per op): skip the gradient synchronisation of every selected
 * op; run its weight gradient over the whole group batch on every
 * replica; all-gather among the replicas each listed activation (after its
 * producer's forward, before the readers' weight gradients) and output
 * gradient (before the op's weight gradient); run the forward of each
 * listed producer over the whole group batch (before its readers' weight
 * gradients); keep the gathered factors of one op at a time as temporary
 * memory.  With a lossy format, synchronise sync_bytes instead of the
 * gradient size and add compress_flop of compute.
 *
 * Ownership: struct tp_sfb borrows the model and cluster (finalized, must
 * outlive it) and is read-only after tp_sfb_new: share it between threads;
 * each thread needs its own struct tp_sfb_scratch.  Errors: TP_ENOMEM,
 * TP_EINPUT (plan inconsistent with the model or cluster).
 */
#ifndef TP_SFB_H
#define TP_SFB_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/report.h"
#include "core/vec.h"

/* Optional compute-time hook (the simulator's cost model); NULL = one
 * kernel of core/cost.h (tp_cost_kernel_s) at the device type's own
 * figures, without the simulator's gemm_sustained (sfb.c). */
enum tp_sfb_phase {
	TP_SFB_FORWARD,     /* the op's forward */
	TP_SFB_WEIGHT_GRAD, /* the weight-gradient part of its backward */
	TP_SFB_DENSE_GEMM   /* a plain GEMM of the given FLOP (PowerSGD) */
};
typedef double (*tp_sfb_compute_fn)(void *ctx, uint32_t op,
				    enum tp_sfb_phase phase, uint32_t device,
				    double samples, double flop);

struct tp_sfb_options {
	/* bytes per gradient element synchronised without lossy compression
	 * (0 = the model dtype's) */
	double grad_elem_bytes;
	uint32_t powersgd_rank;  /* >= 1 (default 4) */
	double link_eff_intra;   /* fraction of intra-node link peak reached
				    by collectives (default 1) */
	double link_eff_network; /* same for NIC and network links */
	double step_latency_s;   /* software cost per collective step */
	tp_sfb_compute_fn compute; /* NULL = core/cost.h's kernel time */
	void *compute_ctx;
};

void tp_sfb_options_default(struct tp_sfb_options *o);

struct tp_sfb;
struct tp_sfb_scratch;

struct tp_sfb *tp_sfb_new(const struct tp_model *m, const struct tp_cluster *c,
			  const struct tp_sfb_options *o,
			  struct tp_error *err);
void tp_sfb_free(struct tp_sfb *sfb);

struct tp_sfb_scratch *tp_sfb_scratch_new(const struct tp_sfb *sfb);
void tp_sfb_scratch_free(struct tp_sfb_scratch *s);

/* A candidate op of a group and its unary figures (seconds per
 * iteration; bytes sent by all replicas together per iteration). */
struct tp_sfb_cand {
	uint32_t op;
	double sync_s;        /* A_i */
	double wgrad_s;       /* W_i */
	double grad_gather_s; /* G_i */
	double sync_bytes, grad_gather_bytes;
};

/* An activation read by candidates: C_p, D_p and its readers. */
struct tp_sfb_tensor {
	uint32_t producer;      /* op index */
	uint32_t producer_cand; /* index into cands, or TP_NONE */
	double gather_s;        /* C_p */
	double fwd_s;           /* F_p (candidate producers only) */
	double sample_bytes;    /* per sample (the largest a reader reads) */
	double gather_bytes;    /* traffic of its all-gather */
	uint32_t first, n;      /* reader candidates: readers[first..) */
};

/* The figures of one group under one gradient format. */
struct tp_sfb_costs {
	uint32_t group;
	bool eligible;
	char why[96]; /* why not eligible */
	enum tp_lossy lossy;
	uint32_t rank;
	TP_VEC(struct tp_sfb_cand) cands;
	TP_VEC(struct tp_sfb_tensor) tensors;
	TP_VEC(uint32_t) readers;
	double sync_s;     /* sum of A_i: the group's gradient sync, proxy */
	double sync_bytes; /* and its traffic */
};

void tp_sfb_costs_init(struct tp_sfb_costs *k);
void tp_sfb_costs_release(struct tp_sfb_costs *k);

/*
 * Fill *k for group g of plan under gradient format (lossy, rank); the
 * group's current lossy fields and plan->compression are ignored except
 * for eligibility (compression off makes every group ineligible).
 */
enum tp_status tp_sfb_group_costs(const struct tp_sfb *sfb,
				  const struct tp_plan *plan, uint32_t g,
				  enum tp_lossy lossy, uint32_t rank,
				  struct tp_sfb_scratch *s,
				  struct tp_sfb_costs *k, struct tp_error *err);

/* The objective above for a selection x (one 0/1 per candidate),
 * evaluated directly from its definition. */
double tp_sfb_objective(const struct tp_sfb_costs *k, const uint8_t *x);

/*
 * Minimise the objective exactly by a minimum cut: x (k->cands.n entries)
 * receives the smallest optimal selection, *value (may be NULL) its
 * objective (<= 0; the empty selection scores 0).
 */
enum tp_status tp_sfb_solve(const struct tp_sfb_costs *k,
			    struct tp_sfb_scratch *s, uint8_t *x,
			    double *value, struct tp_error *err);

/* What a selection did over a whole plan (proxy figures). */
struct tp_sfb_stats {
	uint32_t groups_eligible, ops_candidate, ops_selected;
	uint32_t groups_lossy;
	double sync_s;       /* gradient sync of eligible groups before, proxy */
	double saved_s;      /* proxy time saved (SFB and lossy) */
	double saved_bytes;  /* net traffic saved by SFB */
	double solve_s;      /* wall clock in the min cuts (timing) */
	uint32_t max_vars;   /* largest cut problem, variables */
	bool dropped; /* tp_sfb_simulate: the simulator found the plan no
			 faster with compression, which was removed */
};

/*
 * Choose compression for every group of plan according to
 * plan->compression and record it: the groups' sfb lists (ops in group
 * order), sfb_saved_bytes (net traffic saved per iteration: gradient
 * synchronisation bytes avoided minus factor all-gather bytes added, all
 * replicas together), lossy and powersgd_rank.  OFF clears all of it.
 * The plan's summary is untouched.  stats may be NULL.
 */
enum tp_status tp_sfb_select(const struct tp_sfb *sfb, struct tp_plan *plan,
			     struct tp_sfb_scratch *s,
			     struct tp_sfb_stats *stats, struct tp_error *err);

/* Remove every compression decision from plan (the "off" plan). */
void tp_sfb_clear(struct tp_plan *plan);

/* What the simulator does differently for one op of a group. */
struct tp_sfb_action {
	uint32_t op;
	bool sfb;           /* weight gradient from gathered factors over the
			       whole group batch; no gradient sync */
	bool forward_full;  /* forward over the whole group batch (feeds
			       selected readers) */
	double gather_act_bytes;  /* per sample: all-gather its output
				     activation (0 = no) */
	double gather_grad_bytes; /* per sample: all-gather its output
				     gradient (0 = no) */
	double sync_bytes;    /* gradient bytes synchronised per iteration by
				 each replica's collective (0 with sfb); the
				 gradient size unless lossy */
	double compress_flop; /* PowerSGD compute per iteration, per replica */
};

struct tp_sfb_actions {
	TP_VEC(struct tp_sfb_action) v;
};

void tp_sfb_actions_init(struct tp_sfb_actions *a);
void tp_sfb_actions_release(struct tp_sfb_actions *a);

/*
 * The actions of group g implied by the plan's recorded compression (its
 * sfb list, lossy and powersgd_rank): one entry per op of the group that
 * has parameters or whose output is gathered or recomputed, in group
 * order.  Which producers recompute their forward rather than have their
 * output gathered follows the cost comparison of the selection (F_p <
 * C_p).  Plans without compression give plain entries.
 */
enum tp_status tp_sfb_group_actions(const struct tp_sfb *sfb,
				    const struct tp_plan *plan, uint32_t g,
				    struct tp_sfb_scratch *s,
				    struct tp_sfb_actions *out,
				    struct tp_error *err);

/*
 * The same at the granularity of a group (for a simulator that runs a
 * group's forward and backward as one task per micro-batch): with S the
 * group's samples per micro-batch and s_r those of replica r, replica r
 * adds extra_flop_per_sample * (S - s_r) FLOP moving
 * extra_bytes_per_sample * (S - s_r) bytes to each backward; the replicas
 * all-gather gather_bytes_per_sample * S bytes (shards s_r / S) during
 * each backward, and hold temp_bytes_per_sample * S bytes of gathered
 * factors while doing so; the gradient synchronisation moves sync_bytes
 * (instead of plain_sync_bytes) and the optimizer step adds
 * compress_flop.  All zero / equal for a group without compression.
 */
struct tp_sfb_effect {
	bool active;
	double plain_sync_bytes, sync_bytes;
	double compress_flop;
	double gather_bytes_per_sample;
	double extra_flop_per_sample, extra_bytes_per_sample;
	double temp_bytes_per_sample;
};

enum tp_status tp_sfb_group_effect(const struct tp_sfb *sfb,
				   const struct tp_plan *plan, uint32_t g,
				   struct tp_sfb_scratch *s,
				   struct tp_sfb_actions *tmp,
				   struct tp_sfb_effect *e,
				   struct tp_error *err);

#endif
