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
#include "io_int.h"
#include "json.h"

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

enum tp_tf_head {
	TP_TF_HEAD_LM,       /* final norm, lm_head, loss */
	TP_TF_HEAD_MLM,      /* BertForMaskedLM: transform, norm, decoder */
	TP_TF_HEAD_PRETRAIN, /* BertForPreTraining: pooler + MLM + NSP */
	TP_TF_HEAD_CLS       /* ViTForImageClassification: final norm, a
				classifier on the first (CLS) token, loss */
};

/*
 * A transformer, decoder-only, encoder-only or encoder-decoder.  Every
 * size is in elements/tokens; 0 where a field says so means "derive".
 * The builder records all of it in the model's arch (core/model.h);
 * `info` carries the descriptive figures that change no cost (RoPE base,
 * norm epsilon, router scoring, ...), copied as they are.
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
	enum tp_norm norm;       /* kind of every norm (params: tp_norm) */
	enum tp_norm_position norm_pos;
	enum tp_qk_norm qk_norm; /* weights and FLOP folded into qkv */
	bool attn_bias;          /* biases on Q, K, V */
	bool out_bias;           /* bias on the attention output projection */
	bool mlp_bias;
	bool dropout;            /* dropout after attention and MLP */
	bool no_attn_dropout;    /* with dropout: none on the attention
				    probabilities (OPT: attention_dropout
				    0.0, dropout 0.1) */
	bool embed_norm;         /* LayerNorm on the embeddings (BERT) */
	bool final_norm;
	bool tied_head;          /* LM head shares the embedding matrix */
	bool parallel_attn;      /* attention and MLP side by side (Falcon) */
	int64_t parallel_norms;  /* with parallel_attn: 1 shared input norm,
				    2 one each (Falcon's new architecture) */
	enum tp_act act;
	enum tp_tf_head head;
	int64_t window;          /* sliding-window attention (0 = none) */
	int64_t window_pattern;  /* every N-th layer global (tp_arch) */
	/* mixture of experts (experts 0 = dense MLP) */
	int64_t experts, top_k;
	int64_t moe_ffn;         /* per routed expert, 0 = ffn */
	int64_t shared_experts;  /* always-active experts, one fused MLP of
				    shared_experts x shared_ffn */
	int64_t shared_ffn;
	bool shared_gate;        /* sigmoid gate on the shared output (h
				    weights, in the router op) */
	bool router_bias;        /* a score bias per expert (in the router) */
	int64_t first_dense;     /* the first k blocks are dense (ffn) */
	/* multi-head latent attention: kv_lora > 0 */
	int64_t q_lora, kv_lora, qk_nope, qk_rope, v_dim;
	/* vision transformer: patch_size > 0 (seq = patches + 1) */
	int64_t image_size, patch_size, channels, classes;
	int64_t dec_layers;      /* > 0: encoder-decoder, decoder layers */
	int64_t dec_seq;         /* decoder tokens per sample */
	struct tp_arch info;
};

/* Defaults: GPT (Megatron) conventions, everything else off. */
void tp_tf_default(struct tp_tf *t);

/* The fix for "part must divide whole" as text into buf: the divisors of
 * whole nearest to part below and above it, and the multiples of part
 * nearest to whole ("use 10 or 20 heads, or a hidden size of 996 or
 * 1008").  part_name and
 * whole_name name the two figures ("heads", "a hidden size of"). */
void tp_tf_divide_hint(char *buf, size_t size, int64_t part, int64_t whole,
		       const char *part_name, const char *whole_name);

/* Build the training graph of t into the initialised model m and
 * finalize it.  TP_EINPUT naming the bad dimension (heads not dividing
 * hidden, ...); on failure m is released and re-initialised. */
enum tp_status tp_build_transformer(const struct tp_tf *t, struct tp_model *m,
				    struct tp_error *err);

/* ---- HuggingFace config readers (build_hf.c, build_hf_types.c) ------- */

/*
 * A config being read.  root is the object fields are looked up in (the
 * top level); type its model_type.  In probe mode (the nearest-family
 * search for an unsupported model_type) no getter fails: each records the
 * key it was asked for in seen[] and returns its default (clamped to the
 * range), so a reader run on any config lists the fields it reads.
 */
struct tp_hf {
	struct tp_jctx j;
	const struct tp_json *root; /* where fields are looked up */
	const struct tp_json *top;  /* the config's top level */
	const char *type;
	bool probe;
	const char *seen[96];
	int n_seen;
};

/* tp_hf_num's ranges: enum tp_hf_range (io_int.h). */

/* Getters: the value of key (or of its alias when key is absent or null;
 * null counts as absent, as in transformers), else def; essential fields
 * are an error when absent.  A value of the wrong type or out of
 * [min, max] (tp_hf_num: out of its range) is an error naming its JSON
 * path and the range expected.  Defaults are not checked. */
enum tp_status tp_hf_int(struct tp_hf *c, const char *key, const char *alias,
			 bool essential, int64_t def, int64_t min, int64_t max,
			 int64_t *out);
enum tp_status tp_hf_num(struct tp_hf *c, const char *key, double def,
			 enum tp_hf_range range, double *out);
enum tp_status tp_hf_bool(struct tp_hf *c, const char *key, bool def,
			  bool *out);
enum tp_status tp_hf_str(struct tp_hf *c, const char *key, const char *def,
			 const char **out);
/* A member object (NULL when absent or null); fields inside are read by
 * switching c->root to it and pushing its key onto c->j's path. */
enum tp_status tp_hf_obj(struct tp_hf *c, const char *key,
			 const struct tp_json **out);
/* A member array (NULL when absent or null). */
enum tp_status tp_hf_array(struct tp_hf *c, const char *key,
			   const struct tp_json **out);
/* Is key present and not null? (recorded like a read) */
bool tp_hf_has(struct tp_hf *c, const char *key);

/* Activations: a gated MLP's ("silu" -> swiglu, "gelu*" -> geglu, ...)
 * and a plain two-GEMM MLP's, from the string field key (def when
 * absent); an unknown name is an error listing the accepted ones. */
enum tp_status tp_hf_gated_act(struct tp_hf *c, const char *key,
			       const char *alias, const char *def,
			       enum tp_act *out);
enum tp_status tp_hf_plain_act(struct tp_hf *c, const char *key,
			       const char *def, enum tp_act *out);
/* rope_theta (def when absent) and rope_scaling's type and factor into
 * t->info. */
enum tp_status tp_hf_rope(struct tp_hf *c, double theta_def, struct tp_tf *t);
/* heads_key must divide hidden_key (unless head_dim is given) and kv_key
 * heads_key. */
enum tp_status tp_hf_heads_divide(struct tp_hf *c, const struct tp_tf *t,
				  const char *hidden_key, const char *heads_key,
				  const char *kv_key);

/* Readers of one model type each: fill t (tp_tf_default'ed) and the
 * config's context length (*max_pos; 0 = none).  build_hf_types.c. */
typedef enum tp_status (*tp_hf_reader)(struct tp_hf *c, struct tp_tf *t,
				       int64_t *max_pos);
struct tp_hf_type {
	const char *type;
	tp_hf_reader read;
};
/* The supported model types, NULL-terminated (build_hf_types.c). */
extern const struct tp_hf_type tp_hf_types[];

#define TP_HF_TRY(x)                                                          \
	do {                                                                  \
		if ((st = (x)))                                               \
			return st;                                            \
	} while (0)

#endif
