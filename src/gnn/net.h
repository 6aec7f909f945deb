/*
 * net.h - the policy graph neural network (priors and gains).
 *
 * Input: a heterogeneous graph of op-group nodes and device nodes (built
 * by features.h from a model, a cluster and a partial plan) with five edge
 * types, plus a query: the group being decided and its candidate actions
 * (each a set of device nodes and a feature row describing the mode).
 *
 * Architecture (all sizes from struct tp_gnn_config):
 *   encoders   h = silu(LN(x W + b)) per node type;
 *   L layers   per edge type r (src -> dst): z = h_src W_r, attention
 *              logits leaky_relu(h_src A_r + h_dst B_r + x_e C_r) per head,
 *              softmax over each destination's incoming edges, message
 *              sum_k alpha z_src + (sum_k alpha x_e) U_r;
 *              per node type: u = h W_self + b + sum of its incoming
 *              messages, h <- h + silu(LN(u))  (residual);
 *   policy     per action: [weighted mean | max of its devices' h,
 *              h of the group, action features] -> 2 silu layers ->
 *              logit; softmax over the candidates;
 *   gains      per action, from the policy MLP's last hidden layer:
 *              tanh(h w + b), the predicted gain of the action over the
 *              state (see tp_gnn_gain_target in features.h).
 *   (No value head since weights version 3: it was trained but never
 *   used, and did not help the policy; src/gnn/README "Values".  The
 *   global features are computed and normalised but no layer reads
 *   them.)
 * Forward and backward are written by hand (ad.h) over sgemm.
 *
 * Input features are standardised with per-feature constants (mean, std)
 * that training measures on its corpus and the weights file stores.
 *
 * Ownership: tp_gnn_net_new / tp_gnn_net_free; the net owns its weights.
 * A net is read-only during forward passes: several threads may run
 * tp_gnn_infer at once, each with its own struct tp_ad workspace.
 * Errors: TP_EINPUT for an input whose widths do not match the net,
 * TP_ENOMEM.
 */
#ifndef TP_GNN_NET_H
#define TP_GNN_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/rng.h"
#include "ad.h"
#include "tensor.h"

enum tp_gnn_etype {
	TP_GNN_E_FLOW,  /* group -> group it feeds */
	TP_GNN_E_BACK,  /* group -> group feeding it */
	TP_GNN_E_LINK,  /* device -> device */
	TP_GNN_E_PLACE, /* group -> device */
	TP_GNN_E_SERVE, /* device -> group */
	TP_GNN_ETYPES
};

/* Source and destination node type of an edge type: 0 group, 1 device. */
int tp_gnn_etype_src(enum tp_gnn_etype t);
int tp_gnn_etype_dst(enum tp_gnn_etype t);
const char *tp_gnn_etype_name(enum tp_gnn_etype t);

struct tp_gnn_config {
	uint32_t hidden;      /* H, embedding width */
	uint32_t heads;       /* attention heads; divides hidden */
	uint32_t layers;      /* message-passing layers */
	uint32_t head_hidden; /* width of the policy MLP */
	uint32_t group_in, device_in, action_in, global_in;
	uint32_t edge_in[TP_GNN_ETYPES];
};

#define TP_GNN_MAX_HIDDEN 1024
#define TP_GNN_MAX_LAYERS 16
#define TP_GNN_MAX_FEATS 256

/* Per-feature standardisation x' = (x - mean) / std, one block per input
 * kind, in the order group, device, action, global, edge types. */
struct tp_gnn_norm {
	size_t n;     /* total features */
	float *mean;  /* n */
	float *std;   /* n, > 0 */
};

/* Where a network came from (stored in the weights file). */
struct tp_gnn_meta {
	uint64_t seed;
	uint32_t games, epochs, samples;
	float train_loss, heldout_loss;
	double train_seconds;
	char version[32]; /* tagplan version that trained it */
	char note[96];    /* free text, e.g. the training command; at most
			     63 bytes are written (weights.h) */
	char blas[32];    /* OpenBLAS kernel set that trained it ("" = not
			     recorded: a file written before 2026-12-07) */
	uint32_t corpus_gpus; /* the most devices (GPUs) of any cluster
				 it was trained on (0 = not recorded: a
				 file written before issue 27, or a
				 network that is still training) */
};

struct tp_gnn_ptab; /* parameter table (net.c) */

struct tp_gnn_net {
	struct tp_gnn_config cfg;
	size_t n_params;
	float *w; /* n_params weights */
	struct tp_gnn_norm norm;
	struct tp_gnn_meta meta;
	struct tp_gnn_ptab *tab;
};

/*
 * The graph and query the network reads.  Edge lists are sorted by
 * destination (struct tp_ad_edges); edge_x[t] has one row per edge.
 * With n_actions == 0 the heads compute nothing.
 */
struct tp_gnn_input {
	uint32_t n_groups, n_devices;
	struct tp_tensor group_x;  /* n_groups x group_in */
	struct tp_tensor device_x; /* n_devices x device_in */
	struct tp_ad_edges edges[TP_GNN_ETYPES];
	struct tp_tensor edge_x[TP_GNN_ETYPES]; /* edges[t].n x edge_in[t] */
	const float *global_x; /* global_in floats (read by no layer) */
	uint32_t group;        /* the group being decided, < n_groups */
	uint32_t n_actions;
	struct tp_ad_sets actions;  /* device nodes of each action */
	struct tp_tensor action_x;  /* n_actions x action_in */
};

/* A default configuration for given input widths (hidden 64, 2 heads,
 * 3 layers, head MLPs 64). */
void tp_gnn_config_default(struct tp_gnn_config *c, uint32_t group_in,
			   uint32_t device_in, uint32_t action_in,
			   uint32_t global_in,
			   const uint32_t edge_in[TP_GNN_ETYPES]);

/* TP_EINPUT (naming the field) when a configuration is out of range:
 * hidden 1..1024 divisible by heads, 1..16 layers, widths 1..256. */
enum tp_status tp_gnn_config_check(const struct tp_gnn_config *c,
				   struct tp_error *err);

/* A network with weights drawn from rng (scaled normal, LayerNorm gains
 * 1, biases 0) and identity normalisation; rng NULL leaves every weight
 * 0, for a caller that sets them all (the weights loader).  NULL on
 * allocation failure or a bad configuration (err says which). */
struct tp_gnn_net *tp_gnn_net_new(const struct tp_gnn_config *c,
				  struct tp_rng *rng, struct tp_error *err);
void tp_gnn_net_free(struct tp_gnn_net *net);

/* Number of weights a configuration has. */
size_t tp_gnn_config_params(const struct tp_gnn_config *c);

/* Check that an input matches the net's widths and is well formed
 * (indices in range, edges sorted).  TP_EINPUT naming what is wrong. */
enum tp_status tp_gnn_input_check(const struct tp_gnn_net *net,
				  const struct tp_gnn_input *in,
				  struct tp_error *err);

/*
 * Forward pass for search: prior[k] = softmax of the action logits
 * (n_actions floats, may be NULL when n_actions == 0).  ad is the
 * caller's per-thread workspace (reset here).  The input is not
 * re-checked (tp_gnn_input_check once per graph shape).
 */
enum tp_status tp_gnn_infer(const struct tp_gnn_net *net,
			    const struct tp_gnn_input *in, struct tp_ad *ad,
			    float *prior, struct tp_error *err);

/* The same, also filling gain[k] (n_actions floats, NULL = not wanted)
 * with the gain head's output in (-1, 1). */
enum tp_status tp_gnn_infer_gains(const struct tp_gnn_net *net,
				  const struct tp_gnn_input *in,
				  struct tp_ad *ad, float *prior, float *gain,
				  struct tp_error *err);

/*
 * A per-thread cache of the encoders' and message-passing layers' output
 * (the node states the heads read), keyed by a 64-bit hash of the node
 * and edge features and the edge lists.  States that differ only in the
 * query (the group being decided, its candidate actions, the global
 * features) share one pass through the body: the search asks about every
 * level of one incumbent in turn (the sweeps, the tree's level priors).
 * tp_gnn_infer_cached with bc == NULL is tp_gnn_infer_gains; with a
 * cache its outputs are the same to the bit (the heads read a copy of
 * the same floats).  The cache holds a few bodies (least recently used
 * replaced) of whichever net it was last used with; a net's weights must
 * not change while a cache holds its bodies (the provider's scratch
 * lives for one search, training's self-play scratch for one frozen
 * copy).  Not thread-safe: one per thread.
 */
struct tp_gnn_body_cache;
struct tp_gnn_body_cache *tp_gnn_body_cache_new(void);
void tp_gnn_body_cache_free(struct tp_gnn_body_cache *bc);
/* Passes that reused a body, and passes that computed one. */
void tp_gnn_body_cache_stats(const struct tp_gnn_body_cache *bc,
			     uint64_t *hits, uint64_t *misses);
enum tp_status tp_gnn_infer_cached(const struct tp_gnn_net *net,
				   const struct tp_gnn_input *in,
				   struct tp_ad *ad,
				   struct tp_gnn_body_cache *bc, float *prior,
				   float *gain, struct tp_error *err);

/*
 * One training example: loss = cross-entropy(pi, policy) (skipped when
 * pi is NULL) + sum_k gain_weight[k] (gain_k - gain[k])^2 (skipped when
 * gain or gain_weight is NULL; a weight of 0 masks an action whose gain
 * is unknown).  loss_out receives the two terms (policy, gain).
 * Gradients are *added* into grad (n_params floats); an example with no
 * actions, or with neither target, adds nothing (the losses are 0).
 */
struct tp_gnn_targets {
	const float *pi;          /* n_actions, a distribution, or NULL */
	const float *gain;        /* n_actions, in [-1, 1], or NULL */
	const float *gain_weight; /* n_actions, >= 0, or NULL */
};

enum tp_status tp_gnn_train_targets(const struct tp_gnn_net *net,
				    const struct tp_gnn_input *in,
				    const struct tp_gnn_targets *t,
				    struct tp_ad *ad, float *grad,
				    float loss_out[2], struct tp_error *err);

/* Name, shape and offset of parameter tensor i (i < count). */
size_t tp_gnn_net_tensor_count(const struct tp_gnn_net *net);
const char *tp_gnn_net_tensor(const struct tp_gnn_net *net, size_t i,
			      uint32_t *rows, uint32_t *cols, size_t *offset);

/* Adam with decoupled weight decay, over a flat parameter vector. */
struct tp_gnn_adam {
	size_t n;
	float *m, *v;
	uint64_t t;
	float lr, beta1, beta2, eps, weight_decay;
};

enum tp_status tp_gnn_adam_init(struct tp_gnn_adam *a, size_t n, float lr,
				struct tp_error *err);
void tp_gnn_adam_release(struct tp_gnn_adam *a);
/* w -= Adam step for gradient g (n floats). */
void tp_gnn_adam_step(struct tp_gnn_adam *a, float *w, const float *g);

/* Scale g so that its L2 norm is at most max_norm; returns the norm before
 * clipping. */
double tp_gnn_clip_grad(float *g, size_t n, double max_norm);

#endif
