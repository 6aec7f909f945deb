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

/* TP_DTYPE_FP8 is Transformer Engine's hybrid FP8 recipe: GEMM inputs cast
 * to E4M3 in the forward and E5M2 for gradients, everything else (the
 * tensors between ops, the attention core, norms, communication) in bf16;
 * its tensors therefore take 2 bytes per element like bf16 (precision.h). */
enum tp_dtype {
	TP_DTYPE_FP32,
	TP_DTYPE_FP16,
	TP_DTYPE_BF16,
	TP_DTYPE_FP8,
	TP_DTYPE_COUNT
};

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

/* A measured point of an op on a device type: its times at a micro-batch
 * and a tensor-parallel degree.  An op's points of one device type form a
 * table over (batch, tp) that core/profile.h interpolates (linear in the
 * batch and in 1/tp) and extrapolates beyond (scaled as the roofline's
 * compute-bound regime: linear in the batch, 1/tp for ops tp divides);
 * the simulator prefers it to the roofline estimate.  A file of one point
 * per type (tp 1) means what it meant before tables: the time scaled
 * linearly in the batch and divided by tp.  The optional figures count
 * only when their TP_PROFILE_HAS_* bit is set in `has` (a zeroed struct is
 * a point of times only). */
enum {
	TP_PROFILE_HAS_TP_COMM = 1u << 0,
	TP_PROFILE_HAS_OPTIMIZER = 1u << 1,
	TP_PROFILE_HAS_ACTIVATION = 1u << 2,
	TP_PROFILE_HAS_STATE = 1u << 3
};
struct tp_profile {
	const char *device_type; /* name, as in the topology */
	double batch;            /* samples the times were measured at */
	double forward_s, backward_s;
	uint32_t tp;             /* tensor-parallel degree measured at (0 = 1) */
	unsigned has;            /* TP_PROFILE_HAS_* */
	double tp_comm_s;        /* tensor-parallel communication, forward +
				    backward, of this micro-batch */
	double optimizer_s;      /* optimizer step of the op's shard */
	double activation_bytes; /* saved for backward, this micro-batch, per
				    device */
	double state_bytes;      /* weights + gradients + optimizer state per
				    device (no ZeRO) */
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

/*
 * The architecture of the model as its source describes it: what an export
 * needs to rebuild the same network in a training framework (Megatron-LM's
 * --swiglu, --normalization, --position-embedding-type, ...), what
 * summaries print, and what checks tensor-parallel degrees.  The ops carry
 * the costs; these fields say what the ops are.  Everything is optional:
 * 0 / TP_*_UNKNOWN / TP_TRI_UNKNOWN / "" means "not recorded" (model files
 * written before a field existed, hand-made graphs, CNNs) and never a
 * default to assume.  The model file keeps them in "arch" (tagplan-
 * formats(5)); tp_arch_fields below lists them with their file names.
 */

/* A yes/no figure that may be unknown (absent from the file). */
enum tp_tri { TP_TRI_UNKNOWN, TP_TRI_NO, TP_TRI_YES };

/* What the blocks are: causal decoder, bidirectional encoder (BERT,
 * ViT), or encoder-decoder (T5: decoder_layers of the layers are the
 * decoder's). */
enum tp_stack {
	TP_STACK_UNKNOWN,
	TP_STACK_DECODER,
	TP_STACK_ENCODER,
	TP_STACK_ENCODER_DECODER,
	TP_STACK_COUNT
};

/* The MLP's nonlinearity.  The gated ones (swiglu, geglu, geglu_tanh,
 * reglu) multiply an "up" projection by act(gate projection): their first
 * GEMM is 2 x ffn wide and there are three weight matrices. */
enum tp_act {
	TP_ACT_UNKNOWN,
	TP_ACT_GELU,       /* erf GELU (BERT, ViT, Falcon, Megatron's GPT) */
	TP_ACT_GELU_TANH,  /* tanh approximation (GPT-2's gelu_new) */
	TP_ACT_QUICK_GELU, /* x * sigmoid(1.702 x) (CLIP) */
	TP_ACT_RELU,
	TP_ACT_SILU,       /* plain (not gated) SiLU / swish */
	TP_ACT_TANH,
	TP_ACT_SWIGLU,     /* SiLU-gated (Llama, Qwen, DeepSeek, DBRX, OLMo) */
	TP_ACT_GEGLU,      /* erf-GELU-gated (T5 v1.1 gated-gelu) */
	TP_ACT_GEGLU_TANH, /* tanh-GELU-gated (Gemma) */
	TP_ACT_REGLU,      /* ReLU-gated (T5 gated-relu) */
	TP_ACT_COUNT
};

/* The normalisation layers and their parameters. */
enum tp_norm {
	TP_NORM_UNKNOWN,
	TP_NORM_LAYERNORM,          /* weight and bias (2h) */
	TP_NORM_LAYERNORM_NOBIAS,   /* weight only (DBRX) */
	TP_NORM_LAYERNORM_NOAFFINE, /* no parameters (OLMo 1) */
	TP_NORM_RMSNORM,            /* weight only (Llama; T5's "LayerNorm") */
	TP_NORM_COUNT
};

/* Where the block's norms sit (x = the block input):
 *  PRE       x + f(norm(x)) for attention and MLP (GPT-2, Llama)
 *  POST      norm(x + f(x)) (BERT, the original Transformer)
 *  PRE_POST  x + norm'(f(norm(x))): a norm before and after each
 *            sub-layer (Gemma 2 and 3)
 *  SUBLAYER  x + norm(f(x)): only on the sub-layer's output (OLMo 2) */
enum tp_norm_position {
	TP_NORMPOS_UNKNOWN,
	TP_NORMPOS_PRE,
	TP_NORMPOS_POST,
	TP_NORMPOS_PRE_POST,
	TP_NORMPOS_SUBLAYER,
	TP_NORMPOS_COUNT
};

/* Normalisation of queries and keys before the dot product. */
enum tp_qk_norm {
	TP_QKNORM_UNKNOWN,
	TP_QKNORM_NONE,
	TP_QKNORM_HEAD, /* per head over head_dim (Qwen3, Gemma 3) */
	TP_QKNORM_FULL, /* over the whole projection (OLMo 2) */
	TP_QKNORM_COUNT
};

/* How positions enter. */
enum tp_pos {
	TP_POS_UNKNOWN,
	TP_POS_NONE,
	TP_POS_LEARNED,    /* learned absolute table, max_positions rows */
	TP_POS_SINUSOIDAL, /* fixed absolute (the original Transformer) */
	TP_POS_ROPE,       /* rotary, rope_theta */
	TP_POS_ALIBI,
	TP_POS_RELATIVE,   /* T5's bucketed relative attention bias */
	TP_POS_COUNT
};

/* The MoE router's score function over the routed experts. */
enum tp_router {
	TP_ROUTER_UNKNOWN,
	TP_ROUTER_SOFTMAX,
	TP_ROUTER_SIGMOID, /* DeepSeek-V3 */
	TP_ROUTER_COUNT
};

struct tp_arch {
	/* sizes (elements, tokens) */
	int64_t hidden;   /* model width h */
	int64_t heads;    /* attention (query) heads */
	int64_t kv_heads; /* key/value heads: = heads MHA, < heads GQA, 1 MQA;
			     = heads under latent attention (each head's
			     keys and values come from the shared latent) */
	int64_t layers;   /* all blocks, decoder ones included */
	int64_t vocab;    /* token vocabulary (0 for vision models) */
	int64_t ffn;      /* intermediate size of a dense MLP (for MoE models
			     the config's intermediate_size: the dense layers',
			     Mixtral's = the experts') */
	int64_t experts;  /* routed experts per MoE layer, 0 = dense */
	char family[32];  /* "gpt", "llama", "bert", "resnet", ... or "" */

	enum tp_stack stack;
	int64_t decoder_layers; /* encoder-decoder: of `layers`, the decoder's */
	int64_t head_dim;       /* per head; hidden / heads unless the source
				   gives another (Gemma: 256); 0 under latent
				   attention (the MLA dims below) */
	int64_t max_positions;  /* context length the model was made for
				   (max_position_embeddings): the learned
				   table's rows, RoPE's trained length */

	enum tp_act activation;
	enum tp_norm norm;
	enum tp_norm_position norm_position;
	double norm_eps;        /* epsilon of the norms, 0 = unknown */
	enum tp_qk_norm qk_norm;
	enum tp_tri parallel_attn; /* attention and MLP read the same input
				      and add to one residual (Falcon, GPT-J) */

	enum tp_pos position;
	double rope_theta;       /* RoPE base (global layers) */
	double rope_local_theta; /* RoPE base of sliding-window layers when
				    it differs (Gemma 3), 0 = the same */
	char rope_scaling[16];   /* "" none, "linear", "yarn", "llama3", ... */
	double rope_scaling_factor;

	enum tp_tri tied_embeddings; /* LM head = input embedding matrix */
	enum tp_tri qkv_bias;        /* biases on Q, K, V (Qwen2: yes) */
	enum tp_tri out_bias;        /* bias on the attention output proj. */
	enum tp_tri mlp_bias;        /* biases on the MLP / expert GEMMs */

	int64_t window;         /* sliding-window attention, keys per query;
				   0 = full attention everywhere */
	int64_t window_pattern; /* with window: every window_pattern-th layer
				   (layer i with (i + 1) % N == 0) attends
				   globally, the others through the window
				   (Gemma 2: 2, Gemma 3: 6); 0 = all windowed */
	double attn_softcap;    /* tanh soft-capping of attention logits */
	double logit_softcap;   /* ... of the final logits (Gemma 2) */

	/* mixture of experts */
	int64_t top_k;          /* routed experts per token */
	int64_t moe_ffn;        /* intermediate size of one routed expert */
	int64_t shared_experts; /* always-active experts per MoE layer */
	int64_t shared_ffn;     /* intermediate size of each shared expert */
	enum tp_tri shared_expert_gate; /* sigmoid gate on the shared
					   experts' output (Qwen2-MoE) */
	int64_t first_dense_layers; /* the first k blocks have a dense MLP of
				       ffn (DeepSeek first_k_dense_replace) */
	enum tp_router router;
	int64_t router_groups;     /* experts in n groups, tokens routed to */
	int64_t router_group_topk; /* ... the best router_group_topk groups */
	enum tp_tri router_topk_norm;   /* top-k weights renormalised to 1 */
	enum tp_tri router_expert_bias; /* aux-loss-free balancing bias on the
					   scores (DeepSeek-V3 noaux_tc) */
	double router_scale;       /* routed output scale, 0 = unknown */

	/* multi-head latent attention (DeepSeek-V2/V3): kv_lora_rank > 0 */
	int64_t q_lora_rank;  /* query compression, 0 = a plain q projection */
	int64_t kv_lora_rank; /* compressed key/value width */
	int64_t qk_nope_dim;  /* per head, query/key width without RoPE */
	int64_t qk_rope_dim;  /* per head, the decoupled RoPE part (keys:
				 one shared across heads) */
	int64_t v_head_dim;   /* per head, value width */

	/* vision transformers */
	int64_t image_size; /* pixels per side */
	int64_t patch_size; /* pixels per patch side */
	int64_t channels;   /* input channels */
	int64_t classes;    /* classifier outputs */
};

/* The fields of struct tp_arch, in file order, for readers, writers and
 * summaries: key is the model file's name, offset the member's. */
enum tp_arch_ftype {
	TP_ARCH_INT,  /* int64_t, >= 0 */
	TP_ARCH_NUM,  /* double, >= 0 */
	TP_ARCH_TRI,  /* enum tp_tri, a JSON boolean */
	TP_ARCH_ENUM, /* an enum, by name (name/parse below) */
	TP_ARCH_STR   /* char[size] */
};
struct tp_arch_field {
	const char *key;
	enum tp_arch_ftype type;
	size_t offset, size;
	const char *(*name)(int);      /* TP_ARCH_ENUM */
	int (*parse)(const char *);    /* TP_ARCH_ENUM: -1 unknown */
	const char *choices;           /* TP_ARCH_ENUM: "a | b | c" */
};
extern const struct tp_arch_field tp_arch_fields[];
extern const size_t tp_arch_n_fields;

/* Is field f of a recorded (nonzero, not unknown, not "")? */
bool tp_arch_field_set(const struct tp_arch *a,
		       const struct tp_arch_field *f);

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
	/* per op: tp_op_expert_index of its name (-1 for an op that is no
	 * routed expert's), parsed once here: the search and the plan
	 * checks ask it of every op of every candidate (DeepSeek-V3: 45,579
	 * ops); read it through tp_model_op_expert */
	int64_t *expert;
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
/* Names of the tp_arch enums ("unknown" is never written nor parsed). */
const char *tp_stack_name(int v);
int tp_stack_parse(const char *s);
const char *tp_act_name(int v);
int tp_act_parse(const char *s);
const char *tp_norm_name(int v);
int tp_norm_parse(const char *s);
const char *tp_norm_position_name(int v);
int tp_norm_position_parse(const char *s);
const char *tp_qk_norm_name(int v);
int tp_qk_norm_parse(const char *s);
const char *tp_pos_name(int v);
int tp_pos_parse(const char *s);
const char *tp_router_name(int v);
int tp_router_parse(const char *s);

/*
 * Parameters a token uses: for a mixture-of-experts model (arch.experts
 * and arch.top_k known) every op's parameters except the routed experts',
 * of which top_k / experts; routed-expert ops are those whose name has a
 * component "expert<j>." (the builders' "layer<i>.expert<j>.fc1", see
 * src/io/build.h).  -1 when the model is not a known MoE.
 */
double tp_model_active_parameters(const struct tp_model *m);

/* The routed expert an op belongs to: j for a name with a component
 * "expert<j>." (as tp_model_active_parameters reads them), else -1. */
int64_t tp_op_expert_index(const char *name);

/* tp_op_expert_index of op i's name: from the array tp_model_finalize
 * fills, or parsed when the model is not finalized. */
static inline int64_t tp_model_op_expert(const struct tp_model *m,
					 uint32_t i)
{
	return m->finalized && m->expert ? m->expert[i]
					 : tp_op_expert_index(m->ops.v[i].name);
}

#endif
