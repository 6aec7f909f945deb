/*
 * ad.h - a tape of tensor operations with hand-written backward passes
 * (reverse-mode differentiation) for the GNN.
 *
 * A struct tp_ad is a per-thread workspace: a chunked float arena plus the
 * list of operations recorded since the last tp_ad_reset.  Forward
 * functions (tp_ad_matmul, tp_ad_silu, ...) compute their output at once
 * and record how to differentiate it; tp_ad_backward then walks the tape
 * in reverse and accumulates gradients.  Values are addressed by uint32_t
 * ids (tp_ad_val/tp_ad_grad give the tensors).
 *
 * Leaves: tp_ad_const (input features: no gradient) and tp_ad_param (a
 * weight whose gradient is *added* into caller storage, so a minibatch is
 * several forward/backward passes into the same gradient buffer).
 *
 * Ownership: the tape owns its arena; index arrays and edge lists passed
 * to the ops are borrowed and must stay alive until the next tp_ad_reset.
 * Memory failures are sticky: an op that cannot allocate returns
 * TP_AD_NONE, later ops propagate it, and tp_ad_failed reports it once.
 * Shape mismatches are bugs (assert).
 *
 * Threads: one struct tp_ad per thread; parameters are read-only during a
 * forward pass, so several tapes may share one network.
 */
#ifndef TP_GNN_AD_H
#define TP_GNN_AD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensor.h"

#define TP_AD_NONE UINT32_MAX

/*
 * A directed edge list between two node sets, sorted by destination:
 * the edges into destination v are [dst_first[v], dst_first[v + 1]).
 * dense: every destination has exactly n_src edges, from sources 0, 1,
 * ..., n_src - 1 in order (complete bipartite); aggregation then runs
 * as one sgemm per head.
 */
struct tp_ad_edges {
	uint32_t n_src, n_dst, n;
	const uint32_t *src;       /* n entries, < n_src */
	const uint32_t *dst;       /* n entries, < n_dst, non-decreasing */
	const uint32_t *dst_first; /* n_dst + 1 offsets */
	bool dense;
};

/* True when e is complete bipartite in the order `dense` requires. */
bool tp_ad_edges_is_dense(const struct tp_ad_edges *e);

/*
 * Sets of rows to pool (the devices of an action, all groups, ...):
 * set k has members member[first[k] .. first[k + 1]) with optional
 * positive weights (NULL = 1 each; a device equivalence class counts as
 * its number of devices).
 */
struct tp_ad_sets {
	uint32_t n;
	const uint32_t *first; /* n + 1 offsets */
	const uint32_t *member;
	const float *weight; /* NULL or one per member */
};

struct tp_ad_chunk;
struct tp_ad_node;
struct tp_ad_var;

struct tp_ad {
	/* arena: chunks in the order they were made, reused in that order
	   by every pass (ad.c alloc_raw); cur the one being filled */
	struct tp_ad_chunk *chunks, *cur;
	size_t chunk_used;
	struct tp_ad_var *vars;
	size_t n_vars, cap_vars;
	struct tp_ad_node *nodes;
	size_t n_nodes, cap_nodes;
	bool failed;
};

void tp_ad_init(struct tp_ad *ad);
void tp_ad_release(struct tp_ad *ad);
/* Forget every value and op; keeps the memory for the next pass. */
void tp_ad_reset(struct tp_ad *ad);
/* True when an allocation failed since the last reset. */
bool tp_ad_failed(const struct tp_ad *ad);

/* The value / gradient of a var (the gradient is all zero until
 * tp_ad_backward; NULL data for constants). */
struct tp_tensor tp_ad_val(const struct tp_ad *ad, uint32_t v);
struct tp_tensor tp_ad_grad(const struct tp_ad *ad, uint32_t v);

/* Scratch floats in the tape's arena (zeroed), valid until reset. */
float *tp_ad_alloc(struct tp_ad *ad, size_t n);
/* Scratch bytes (zeroed, 64-byte aligned) for index arrays and set lists
 * that ops borrow until reset. */
void *tp_ad_alloc_bytes(struct tp_ad *ad, size_t bytes);

/* A constant: copies t. */
uint32_t tp_ad_const(struct tp_ad *ad, const struct tp_tensor *t);
/* A constant that borrows t's data (no copy); must outlive the pass. */
uint32_t tp_ad_const_view(struct tp_ad *ad, const struct tp_tensor *t);
/* A parameter: value borrowed from w, gradient accumulated into g (same
 * shape, ld = cols; g == NULL: treated as a constant). */
uint32_t tp_ad_param(struct tp_ad *ad, float *w, float *g, uint32_t rows,
		     uint32_t cols);

/* a (n x k) times b (k x m). */
uint32_t tp_ad_matmul(struct tp_ad *ad, uint32_t a, uint32_t b);
/* x (n x m) plus a row vector b (1 x m) on every row. */
uint32_t tp_ad_add_bias(struct tp_ad *ad, uint32_t x, uint32_t b);
/* a + b, same shape. */
uint32_t tp_ad_add(struct tp_ad *ad, uint32_t a, uint32_t b);
/* s * a. */
uint32_t tp_ad_scale(struct tp_ad *ad, uint32_t a, float s);
/* Element-wise activations. */
uint32_t tp_ad_silu(struct tp_ad *ad, uint32_t x);
uint32_t tp_ad_tanh(struct tp_ad *ad, uint32_t x);
uint32_t tp_ad_relu(struct tp_ad *ad, uint32_t x);
/* Row-wise layer norm with gain g and bias b (1 x m each; eps 1e-5). */
uint32_t tp_ad_layernorm(struct tp_ad *ad, uint32_t x, uint32_t g,
			 uint32_t b);
/* Columns of up to 4 same-height inputs side by side (TP_AD_NONE ends
 * the list early). */
uint32_t tp_ad_concat(struct tp_ad *ad, uint32_t a, uint32_t b, uint32_t c,
		      uint32_t d);
/* Row idx[i] of x for i < n (indices borrowed). */
uint32_t tp_ad_gather(struct tp_ad *ad, uint32_t x, const uint32_t *idx,
		      uint32_t n);

/*
 * Graph attention pieces, for nh heads.  Per-edge tensors are head-major
 * (one row per head, one column per edge) so that a head's weights over a
 * dense edge list form a matrix:
 *  edge_logits:  e[h][k] = leaky_relu(s[src k][h] + t[dst k][h] + c[h][k]),
 *                slope 0.2; s is n_src x nh, t n_dst x nh, c nh x n or
 *                TP_AD_NONE;
 *  edge_softmax: a[h][k] = softmax of e[h][.] over the edges into dst k;
 *  edge_agg:     out[v][h*dh + j] = sum over edges k into v of
 *                a[h][k] * z[src k][h*dh + j]  (z is n_src x nh*dh);
 *                a destination without edges gets 0;
 *  edge_agg_feat: out[v][h*f + j] = sum_k a[h][k] * x[j][k] for a
 *                constant feature-major edge-feature matrix x (f x n).
 */
uint32_t tp_ad_edge_logits(struct tp_ad *ad, const struct tp_ad_edges *e,
			   uint32_t s, uint32_t t, uint32_t c);
uint32_t tp_ad_edge_softmax(struct tp_ad *ad, const struct tp_ad_edges *e,
			    uint32_t logits);
uint32_t tp_ad_edge_agg(struct tp_ad *ad, const struct tp_ad_edges *e,
			uint32_t alpha, uint32_t z);
uint32_t tp_ad_edge_agg_feat(struct tp_ad *ad, const struct tp_ad_edges *e,
			     uint32_t alpha, const struct tp_tensor *x);

/* Per set k: [weighted mean of its rows of x | element-wise max of its
 * rows] (n_sets x 2m).  An empty set gives zeros. */
uint32_t tp_ad_set_pool(struct tp_ad *ad, uint32_t x,
			const struct tp_ad_sets *sets);

/* Losses, 1 x 1:
 *  softmax_xent: -sum_k target[k] * log softmax(logits)[k], logits n x 1,
 *                target n floats (borrowed; a distribution);
 *  mse:          (x - target)^2 for a 1 x 1 x;
 *  wmse:         sum_i weight[i] (x[i] - target[i])^2 for an n x 1 x
 *                (target, weight: n floats, borrowed). */
uint32_t tp_ad_softmax_xent(struct tp_ad *ad, uint32_t logits,
			    const float *target);
uint32_t tp_ad_mse(struct tp_ad *ad, uint32_t x, float target);
uint32_t tp_ad_wmse(struct tp_ad *ad, uint32_t x, const float *target,
		    const float *weight);
/* sum_ij r[i * cols + j] * x[i][j] (r borrowed), 1 x 1: a linear probe
 * for gradient checks. */
uint32_t tp_ad_dot_const(struct tp_ad *ad, uint32_t x, const float *r);

/*
 * Reverse pass from the 1 x 1 var loss (seeded with 1).  Gradients of
 * parameters are added into their caller storage.  Returns false when
 * the tape failed (allocation).
 */
bool tp_ad_backward(struct tp_ad *ad, uint32_t loss);

#endif
