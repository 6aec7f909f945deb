/*
 * model.h - the model IR: a DAG of ops with per-sample costs.
 *
 * A struct tp_model is the training graph of one model, as read from a
 * tagplan-model/1 file or built by `tagplan model`.  Every cost is per
 * sample (for sequence models, per sequence of seq_len tokens) so the same
 * model serves any batch split; the global batch size is a model property.
 *
 * Units: FLOP, bytes, seconds.  Parameter and activation bytes are in the
 * model's dtype (fp16/bf16: 2 bytes per element).
 *
 * Building: tp_model_init, then tp_model_add_op / tp_model_add_edge /
 * tp_model_add_profile, then tp_model_finalize, which checks the graph
 * (duplicate names, dangling edges, cycles) and derives the adjacency,
 * a topological order and totals.  After finalize the model is immutable
 * and safe to share between threads.
 *
 * Ownership: the model owns everything it points to (names live in its
 * arena); tp_model_release frees it all.
 */
#ifndef TP_MODEL_H
#define TP_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "error.h"
#include "strmap.h"
#include "vec.h"

#define TP_NONE UINT32_MAX

enum tp_dtype { TP_DTYPE_FP32, TP_DTYPE_FP16, TP_DTYPE_BF16, TP_DTYPE_COUNT };

enum tp_optimizer {
	TP_OPT_SGD,      /* no state */
	TP_OPT_MOMENTUM, /* one fp32 buffer */
	TP_OPT_ADAM,     /* Adam/AdamW: two fp32 buffers */
	TP_OPT_COUNT
};

enum tp_op_kind {
	TP_OP_INPUT,       /* data loading/placeholder: no compute */
	TP_OP_EMBEDDING,   /* table lookup: memory bound */
	TP_OP_MATMUL,      /* GEMM (linear layer) */
	TP_OP_CONV,        /* convolution (implicit GEMM) */
	TP_OP_ATTENTION,   /* attention core: scores, softmax, context */
	TP_OP_NORM,        /* layer/batch/RMS norm */
	TP_OP_ELEMENTWISE, /* activation, residual add, dropout, ... */
	TP_OP_SOFTMAX,
	TP_OP_POOL,
	TP_OP_LOSS, /* softmax cross-entropy and friends */
	TP_OP_ROUTER, /* mixture-of-experts gate */
	TP_OP_OTHER,
	TP_OP_KIND_COUNT
};

/*
 * How tensor parallelism (degree t) may split an op, after Megatron-LM:
 *  NONE     replicated on every tensor-parallel rank (norms, residuals);
 *  COLUMN   weight split along its output dimension: input replicated,
 *           output sharded (QKV projection, first MLP GEMM);
 *  ROW      weight split along its input dimension: input sharded, output
 *           a partial sum that must be all-reduced (attention output
 *           projection, second MLP GEMM);
 *  SHARDED  no cross-rank reduction: input and output sharded (attention
 *           core split by heads, the activation between the MLP GEMMs);
 *  VOCAB    vocabulary-parallel embedding or LM head.
 * tp_units (when nonzero) is the number of indivisible units along the
 * split dimension (heads, channels): the degree must divide it.
 */
enum tp_tp_split {
	TP_SPLIT_NONE,
	TP_SPLIT_COLUMN,
	TP_SPLIT_ROW,
	TP_SPLIT_SHARDED,
	TP_SPLIT_VOCAB,
	TP_SPLIT_COUNT
};

/* A measured time of an op on a device type at some batch size; the
 * simulator scales it linearly in the batch and prefers it to the
 * roofline estimate. */
struct tp_profile {
	const char *device_type; /* name, as in the topology */
	double batch;            /* samples the times were measured at */
	double forward_s, backward_s;
};

struct tp_op {
	const char *name;
	enum tp_op_kind kind;
	enum tp_tp_split tp_split;
	uint32_t tp_units;  /* 0 = any degree */
	int32_t layer;      /* block index (transformer layer, ResNet stage) or -1 */
	double flop;        /* forward FLOP per sample */
	double backward_flop; /* backward FLOP per sample */
	double param_bytes;   /* parameters, in the model dtype */
	double out_bytes;     /* output activation per sample */
	double saved_bytes;   /* activation kept for backward, per sample */
	double mem_bytes;     /* bytes read+written per sample in forward
				 (activations; weights are added once per
				 micro-batch by the simulator) */
	bool selective_recompute; /* its saved bytes are dropped and its forward
				     recomputed under recompute=selective */
	uint32_t prof_first, n_prof; /* into model->profiles */
	/* filled by tp_model_finalize: edge ids in model->adj */
	uint32_t in_first, n_in, out_first, n_out;
};

struct tp_edge {
	uint32_t src, dst; /* op indices */
	double bytes;      /* per sample, in the model dtype */
};

/* Optional architecture figures (0 = unknown): used to validate tensor
 * parallel degrees, for tokens/s and for human summaries. */
struct tp_arch {
	int64_t hidden, heads, kv_heads, layers, vocab, ffn, experts;
	char family[32]; /* "gpt", "llama", "bert", "resnet", ... or "" */
};

struct tp_model {
	struct tp_arena arena; /* names and strings */
	const char *name;
	int64_t global_batch; /* samples per iteration */
	int64_t seq_len;      /* tokens per sample; 0 for non-sequence models */
	enum tp_dtype dtype;
	enum tp_optimizer optimizer;
	struct tp_arch arch;
	TP_VEC(struct tp_op) ops;
	TP_VEC(struct tp_edge) edges;
	TP_VEC(struct tp_profile) profiles;
	struct tp_strmap by_name; /* op name -> index (kept by add_op) */

	/* derived by tp_model_finalize */
	bool finalized;
	uint32_t *adj;  /* in-edge ids per op, then out-edge ids per op */
	uint32_t *topo; /* op indices in a topological order (stable: ties
			   keep file order) */
	uint32_t *topo_pos; /* inverse of topo */
	double total_flop;        /* forward FLOP per sample */
	double total_param_bytes;
	double total_saved_bytes; /* per sample */
};

void tp_model_init(struct tp_model *m);
void tp_model_release(struct tp_model *m);

/*
 * Add an op: a copy of *op with its name copied into the arena (op->name
 * may be temporary).  Fields prof_first/n_prof and the adjacency are
 * ignored.  Returns TP_OK and the new index in *index, TP_EINPUT for a
 * duplicate name (the message names it), TP_ENOMEM.
 */
enum tp_status tp_model_add_op(struct tp_model *m, const struct tp_op *op,
			       uint32_t *index, struct tp_error *err);

/* A template op with defaults: kind OTHER, split NONE, layer -1. */
struct tp_op tp_op_default(void);

/* Add an edge between existing op indices.  TP_EINPUT if out of range
 * or a self-loop. */
enum tp_status tp_model_add_edge(struct tp_model *m, uint32_t src,
				 uint32_t dst, double bytes,
				 struct tp_error *err);

/* Attach a profile to op (the last op added may receive several). */
enum tp_status tp_model_add_profile(struct tp_model *m, uint32_t op,
				    const struct tp_profile *p,
				    struct tp_error *err);

/* Index of the op called name, or TP_NONE. */
uint32_t tp_model_find_op(const struct tp_model *m, const char *name);

/*
 * Check and derive (see top).  TP_EINPUT with the JSON path of the
 * offending op for: no ops, a cycle (names an op on it), a nonpositive
 * batch.  Idempotent.
 */
enum tp_status tp_model_finalize(struct tp_model *m, struct tp_error *err);

/* Edge ids into / out of op (valid after finalize). */
static inline const uint32_t *tp_model_in_edges(const struct tp_model *m,
						uint32_t op)
{
	return m->adj + m->ops.v[op].in_first;
}
static inline const uint32_t *tp_model_out_edges(const struct tp_model *m,
						 uint32_t op)
{
	return m->adj + m->ops.v[op].out_first;
}

/* Bytes per element of a dtype (4 or 2). */
double tp_dtype_bytes(enum tp_dtype d);
/* Number of parameters (param bytes / dtype bytes). */
double tp_model_parameters(const struct tp_model *m);

/* Names <-> enums, for files and the command line.  The parse functions
 * return -1 for an unknown name. */
const char *tp_dtype_name(enum tp_dtype d);
int tp_dtype_parse(const char *s);
const char *tp_optimizer_name(enum tp_optimizer o);
int tp_optimizer_parse(const char *s);
const char *tp_op_kind_name(enum tp_op_kind k);
int tp_op_kind_parse(const char *s);
const char *tp_tp_split_name(enum tp_tp_split s);
int tp_tp_split_parse(const char *s);

#endif
