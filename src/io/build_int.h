/*
 * build_int.h - internals shared by the model builders (build_gpt.c,
 * build_hf.c, build_zoo.c): a small graph-building context with a sticky
 * error, and the one transformer builder behind `model gpt`, `model hf:`
 * and the transformer entries of the zoo.
 *
 * Private to src/io/build_*.c.  Conventions (what an op's figures mean,
 * how activations are counted) are in build.h's header comment.
 */
#ifndef TP_BUILD_INT_H
#define TP_BUILD_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"
#include "core/model.h"

/*
 * Graph-building context.  The first failure is kept in st/err and every
 * later call is a no-op returning TP_NONE, so builders check once at the
 * end.  Op names are prefix + name ("layer3." + "qkv").
 */
struct tp_gb {
	struct tp_model *m;
	struct tp_error *err;
	enum tp_status st;
	double e; /* bytes per element of the model dtype */
};

void tp_gb_init(struct tp_gb *g, struct tp_model *m, struct tp_error *err);

/* Figures of one op; params in elements (converted to bytes with g->e). */
struct tp_gb_op {
	enum tp_op_kind kind;
	enum tp_tp_split split;
	uint32_t units;
	int32_t layer;
	double flop, params, out_bytes, saved_bytes, mem_bytes;
	double backward_flop; /* < 0: 2 x flop */
	bool selective;
};

/* Add an op named "<prefix><name>"; returns its index or TP_NONE. */
uint32_t tp_gb_op(struct tp_gb *g, const char *prefix, const char *name,
		  const struct tp_gb_op *o);
/* Add an edge (ignored when either end is TP_NONE after an error). */
void tp_gb_edge(struct tp_gb *g, uint32_t a, uint32_t b, double bytes);

/* Set the model's name (copied into its arena). */
void tp_gb_name(struct tp_gb *g, const char *name);

enum tp_tf_mlp {
	TP_TF_MLP_GELU,   /* fc1, gelu, fc2 (GPT, BERT) */
	TP_TF_MLP_RELU,   /* fc1, relu, fc2 (T5 v1.0, Transformer) */
	TP_TF_MLP_SWIGLU, /* gate+up, silu*up, down (Llama family) */
	TP_TF_MLP_GEGLU   /* gate+up, gelu*up, down (T5 v1.1) */
};

enum tp_tf_head {
	TP_TF_HEAD_LM,       /* final norm, lm_head, loss */
	TP_TF_HEAD_MLM,      /* BertForMaskedLM: transform, norm, decoder */
	TP_TF_HEAD_PRETRAIN  /* BertForPreTraining: pooler + MLM + NSP */
};

/*
 * A transformer, decoder-only, encoder-only or encoder-decoder.  Every
 * size is in elements/tokens; 0 where a field says so means "derive".
 */
struct tp_tf {
	const char *name;   /* model name */
	const char *family; /* arch.family */
	int64_t hidden, heads, kv_heads, head_dim, ffn, vocab, layers;
	int64_t seq;        /* tokens per sample (the encoder's) */
	int64_t batch;
	enum tp_dtype dtype;
	int64_t pos_embeddings;  /* learned absolute positions (rows), 0 none */
	int64_t type_vocab;      /* BERT token types, 0 none */
	int64_t rel_buckets;     /* T5 relative attention bias buckets */
	bool rmsnorm;            /* RMSNorm / T5 LayerNorm (no bias) */
	bool attn_bias;          /* biases on Q, K, V */
	bool out_bias;           /* bias on the attention output projection */
	bool mlp_bias;
	bool dropout;            /* dropout after attention and MLP */
	bool post_norm;          /* BERT / original Transformer */
	bool embed_norm;         /* LayerNorm on the embeddings (BERT) */
	bool final_norm;
	bool tied_head;          /* LM head shares the embedding matrix */
	enum tp_tf_mlp mlp;
	enum tp_tf_head head;
	int64_t window;          /* sliding-window attention (0 = none) */
	int64_t experts, top_k;  /* mixture of experts (0 = dense MLP) */
	int64_t dec_layers;      /* > 0: encoder-decoder, decoder layers */
	int64_t dec_seq;         /* decoder tokens per sample */
};

/* Defaults: GPT (Megatron) conventions, everything else off. */
void tp_tf_default(struct tp_tf *t);

/* Build the training graph of t into the initialised model m and
 * finalize it.  TP_EINPUT naming the bad dimension (heads not dividing
 * hidden, ...); on failure m is released and re-initialised. */
enum tp_status tp_build_transformer(const struct tp_tf *t, struct tp_model *m,
				    struct tp_error *err);

#endif
