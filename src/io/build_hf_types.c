/*
 * build_hf_types.c - the readers of each supported HuggingFace model_type:
 * the Llama family (one table-driven reader for llama, mistral, mixtral,
 * qwen2, qwen2_moe, qwen3, qwen3_moe, gemma, gemma2, gemma3_text, phi3,
 * olmo, olmo2), gpt2, bert, t5, falcon, deepseek_v2/v3, dbrx and vit.
 *
 * A reader fills a struct tp_tf from the config through the getters of
 * build_hf.c; what a config leaves out takes the default of that type's
 * config class in the transformers library (the tables below, from
 * transformers' configuration_<type>.py), except the sizes, which are
 * essential.  Readers also run in probe mode (build_hf.c) to list the
 * fields each type reads, so every field a reader looks at goes through
 * a getter.
 */
#include <stdio.h>
#include <string.h>

#include "build.h"
#include "build_int.h"

/* Per Llama-family type: the transformers defaults and what differs. */
enum {
	LL_QKV_BIAS = 1 << 0,    /* biases on q, k, v, no attention_bias
				    field (Qwen2) */
	LL_QWEN_WINDOW = 1 << 1, /* use_sliding_window + sliding_window */
	LL_WINDOW = 1 << 2,      /* sliding_window alone */
	LL_MLP_BIAS = 1 << 3,    /* an mlp_bias field */
	LL_NO_BIAS = 1 << 4,     /* no bias fields at all (Phi-3) */
	LL_MIXTRAL = 1 << 5,     /* num_local_experts, num_experts_per_tok */
	LL_QWEN_MOE = 1 << 6,    /* num_experts, moe_intermediate_size, ... */
	LL_SHARED = 1 << 7,      /* + a gated shared expert (Qwen2-MoE) */
	LL_QK_HEAD = 1 << 8,     /* RMSNorm of q and k per head */
	LL_QK_FULL = 1 << 9,     /* ... over the whole projection (OLMo 2) */
	LL_PRE_POST = 1 << 10,   /* norms before and after (Gemma 2, 3) */
	LL_SUBLAYER = 1 << 11,   /* norms after only (OLMo 2) */
	LL_NOAFFINE = 1 << 12,   /* LayerNorm without parameters (OLMo) */
	LL_GEMMA = 1 << 13,      /* hidden_activation, logit soft-capping */
	LL_GEMMA3 = 1 << 14      /* window pattern field, local RoPE base */
};

struct llama_like {
	const char *type;
	int64_t vocab, ffn, max_pos, head_dim, window, pattern;
	bool tie;
	double rope, eps;
	unsigned flags;
	/* MoE defaults: experts, per token, expert ffn, shared ffn */
	int64_t experts, top_k, moe_ffn, shared_ffn;
	double attn_cap, final_cap; /* Gemma 2's soft-capping defaults */
};

static const struct llama_like llama_like[] = {
	{"llama", 32000, 11008, 2048, 0, 0, 0, false, 10000, 1e-6,
	 LL_WINDOW | LL_MLP_BIAS, 0, 0, 0, 0, 0, 0},
	{"mistral", 32000, 14336, 131072, 0, 4096, 0, false, 10000, 1e-6,
	 LL_WINDOW | LL_MLP_BIAS, 0, 0, 0, 0, 0, 0},
	{"mixtral", 32000, 14336, 131072, 0, 0, 0, false, 1e6, 1e-5,
	 LL_WINDOW | LL_MLP_BIAS | LL_MIXTRAL, 8, 2, 0, 0, 0, 0},
	{"qwen2", 151936, 22016, 32768, 0, 4096, 0, false, 10000, 1e-6,
	 LL_QKV_BIAS | LL_QWEN_WINDOW, 0, 0, 0, 0, 0, 0},
	{"qwen2_moe", 151936, 5632, 32768, 0, 4096, 0, false, 10000, 1e-6,
	 LL_QKV_BIAS | LL_QWEN_WINDOW | LL_QWEN_MOE | LL_SHARED, 60, 4, 1408,
	 5632, 0, 0},
	{"qwen3", 151936, 22016, 32768, 128, 4096, 0, false, 10000, 1e-6,
	 LL_QWEN_WINDOW | LL_QK_HEAD, 0, 0, 0, 0, 0, 0},
	{"qwen3_moe", 151936, 6144, 32768, 128, 4096, 0, false, 10000, 1e-6,
	 LL_QWEN_WINDOW | LL_QK_HEAD | LL_QWEN_MOE, 128, 8, 768, 0, 0, 0},
	{"gemma", 256000, 24576, 8192, 256, 0, 0, true, 10000, 1e-6,
	 LL_GEMMA, 0, 0, 0, 0, 0, 0},
	{"gemma2", 256000, 9216, 8192, 256, 4096, 2, true, 10000, 1e-6,
	 LL_GEMMA | LL_PRE_POST | LL_WINDOW, 0, 0, 0, 0, 50, 30},
	{"gemma3_text", 262208, 9216, 131072, 256, 4096, 6, true, 1e6, 1e-6,
	 LL_GEMMA | LL_GEMMA3 | LL_PRE_POST | LL_WINDOW | LL_QK_HEAD, 0, 0, 0,
	 0, 0, 0},
	{"phi3", 32064, 8192, 4096, 0, 0, 0, false, 10000, 1e-5,
	 LL_WINDOW | LL_NO_BIAS, 0, 0, 0, 0, 0, 0},
	{"olmo", 50304, 11008, 2048, 0, 0, 0, false, 10000, 1e-5,
	 LL_NOAFFINE, 0, 0, 0, 0, 0, 0},
	{"olmo2", 50304, 11008, 2048, 0, 0, 0, false, 10000, 1e-5,
	 LL_SUBLAYER | LL_QK_FULL, 0, 0, 0, 0, 0, 0},
};

static const struct llama_like *llama_type(const char *type)
{
	for (size_t i = 0; i < sizeof(llama_like) / sizeof(llama_like[0]); i++)
		if (!strcmp(type, llama_like[i].type))
			return &llama_like[i];
	return NULL;
}

/* top_k must not exceed the experts. */
static enum tp_status check_top_k(struct tp_hf *c, const struct tp_tf *t,
				  const char *k_key, const char *e_key)
{
	if (c->probe || t->top_k <= t->experts)
		return TP_OK;
	return tp_jctx_fail(&c->j, k_key, "%s (%lld) must not exceed %s (%lld)",
			    k_key, (long long)t->top_k, e_key,
			    (long long)t->experts);
}

/* An integer field that tagplan supports only at one value. */
static enum tp_status only_value(struct tp_hf *c, const char *key,
				 int64_t def, int64_t want, const char *why)
{
	enum tp_status st;
	int64_t v;

	TP_HF_TRY(tp_hf_int(c, key, NULL, false, def, 0, 1 << 20, &v));
	if (v != want && !c->probe)
		return tp_jctx_fail(&c->j, key, "%lld is not supported: %s",
				    (long long)v, why);
	return TP_OK;
}

/* Qwen MoE: experts in every layer (decoder_sparse_step 1, no
 * mlp_only_layers), a softmax router, Qwen2-MoE's gated shared expert. */
static enum tp_status read_qwen_moe(struct tp_hf *c,
				    const struct llama_like *d, struct tp_tf *t)
{
	const struct tp_json *only;
	enum tp_status st;
	bool norm;

	TP_HF_TRY(tp_hf_int(c, "num_experts", NULL, false, d->experts, 1, 4096,
			    &t->experts));
	TP_HF_TRY(tp_hf_int(c, "num_experts_per_tok", NULL, false, d->top_k, 1,
			    4096, &t->top_k));
	TP_HF_TRY(check_top_k(c, t, "num_experts_per_tok", "num_experts"));
	TP_HF_TRY(tp_hf_int(c, "moe_intermediate_size", NULL, false,
			    d->moe_ffn, 1, 1 << 24, &t->moe_ffn));
	TP_HF_TRY(tp_hf_bool(c, "norm_topk_prob", false, &norm));
	t->info.router = TP_ROUTER_SOFTMAX;
	t->info.router_topk_norm = norm ? TP_TRI_YES : TP_TRI_NO;
	TP_HF_TRY(only_value(c, "decoder_sparse_step", 1, 1,
			     "tagplan builds an expert layer in every block"));
	TP_HF_TRY(tp_hf_array(c, "mlp_only_layers", &only));
	if (only && only->n > 0 && !c->probe)
		return tp_jctx_fail(&c->j, "mlp_only_layers",
				    "dense layers between expert layers are "
				    "not supported (tagplan builds an expert "
				    "layer in every block); expected []");
	if (d->flags & LL_SHARED) {
		TP_HF_TRY(tp_hf_int(c, "shared_expert_intermediate_size", NULL,
				    false, d->shared_ffn, 0, 1 << 24,
				    &t->shared_ffn));
		t->shared_experts = t->shared_ffn > 0;
		t->shared_gate = t->shared_ffn > 0;
	}
	return TP_OK;
}

/* Gemma 3's pattern of sliding-window and global layers: the
 * sliding_window_pattern field, or "layer_types" when the config lists
 * them (it must then be periodic: every N-th layer global). */
static enum tp_status read_window_pattern(struct tp_hf *c,
					  const struct llama_like *d,
					  struct tp_tf *t)
{
	const struct tp_json *lt;
	enum tp_status st;
	int64_t n = 0, full = 0;

	TP_HF_TRY(tp_hf_int(c, "sliding_window_pattern", NULL, false,
			    d->pattern, 1, 1 << 16, &t->window_pattern));
	TP_HF_TRY(tp_hf_array(c, "layer_types", &lt));
	if (!lt || c->probe)
		return TP_OK;
	for (size_t i = 0; i < lt->n; i++) {
		const struct tp_json *v = lt->items[i];
		bool global = v->type == TP_JSON_STRING &&
			      !strcmp(v->str, "full_attention");
		if (v->type != TP_JSON_STRING ||
		    (!global && strcmp(v->str, "sliding_attention")))
			return tp_jctx_fail(&c->j, "layer_types",
					    "entry %zu: expected "
					    "\"sliding_attention\" or "
					    "\"full_attention\"",
					    i);
		if (global && !full)
			n = (int64_t)i + 1;
		full += global;
	}
	for (size_t i = 0; n > 0 && i < lt->n; i++)
		if ((!strcmp(lt->items[i]->str, "full_attention")) !=
		    ((int64_t)(i + 1) % n == 0))
			return tp_jctx_fail(
				&c->j, "layer_types",
				"not periodic: tagplan models every N-th "
				"layer global and the others windowed (layer "
				"%zu breaks N = %lld)",
				i, (long long)n);
	if (full == (int64_t)lt->n)
		t->window = 0; /* all global */
	t->window_pattern = full ? n : 0;
	return TP_OK;
}

/* Sliding windows, biases and soft-capping: the fields that differ most
 * between the Llama-family types. */
static enum tp_status read_llama_variants(struct tp_hf *c,
					  const struct llama_like *d,
					  struct tp_tf *t)
{
	enum tp_status st;
	int64_t window = 0;
	bool b;

	if (d->flags & LL_QKV_BIAS) {
		t->attn_bias = true; /* Qwen2: biases on q, k, v */
	} else if (!(d->flags & LL_NO_BIAS)) {
		TP_HF_TRY(tp_hf_bool(c, "attention_bias", false, &b));
		t->attn_bias = t->out_bias = b;
	}
	if (d->flags & LL_MLP_BIAS)
		TP_HF_TRY(tp_hf_bool(c, "mlp_bias", false, &t->mlp_bias));
	if (d->flags & LL_QWEN_WINDOW) {
		bool use_sw;
		TP_HF_TRY(tp_hf_bool(c, "use_sliding_window", false, &use_sw));
		if (use_sw)
			TP_HF_TRY(tp_hf_int(c, "sliding_window", NULL, false,
					    d->window, 1, 1 << 26, &window));
	} else if (d->flags & LL_WINDOW) {
		TP_HF_TRY(tp_hf_int(c, "sliding_window", NULL, false,
				    d->window, 0, 1 << 26, &window));
	}
	t->window = window;
	t->window_pattern = d->pattern;
	if (d->flags & LL_GEMMA3) {
		TP_HF_TRY(read_window_pattern(c, d, t));
		TP_HF_TRY(tp_hf_num(c, "rope_local_base_freq", 10000,
				    TP_HF_ROPE_BASE,
				    &t->info.rope_local_theta));
	}
	if (d->flags & LL_GEMMA) {
		TP_HF_TRY(tp_hf_num(c, "attn_logit_softcapping", d->attn_cap,
				    TP_HF_SOFTCAP, &t->info.attn_softcap));
		TP_HF_TRY(tp_hf_num(c, "final_logit_softcapping", d->final_cap,
				    TP_HF_SOFTCAP, &t->info.logit_softcap));
	}
	return TP_OK;
}

static enum tp_status read_llama(struct tp_hf *c, struct tp_tf *t,
				 int64_t *max_pos)
{
	const struct llama_like *d = llama_type(c->type);
	enum tp_status st;
	double drop;

	t->family = d->type;
	t->norm = d->flags & LL_NOAFFINE ? TP_NORM_LAYERNORM_NOAFFINE
					 : TP_NORM_RMSNORM;
	t->norm_pos = d->flags & LL_PRE_POST   ? TP_NORMPOS_PRE_POST
		      : d->flags & LL_SUBLAYER ? TP_NORMPOS_SUBLAYER
					       : TP_NORMPOS_PRE;
	t->qk_norm = d->flags & LL_QK_HEAD   ? TP_QKNORM_HEAD
		     : d->flags & LL_QK_FULL ? TP_QKNORM_FULL
					     : TP_QKNORM_NONE;
	t->attn_bias = t->out_bias = t->mlp_bias = false;
	t->pos_embeddings = 0; /* rotary */
	t->info.position = TP_POS_ROPE;
	TP_HF_TRY(tp_hf_int(c, "hidden_size", NULL, true, 0, 1, 1 << 20,
			    &t->hidden));
	TP_HF_TRY(tp_hf_int(c, "num_hidden_layers", NULL, true, 0, 1, 1 << 16,
			    &t->layers));
	TP_HF_TRY(tp_hf_int(c, "num_attention_heads", NULL, true, 0, 1,
			    1 << 16, &t->heads));
	TP_HF_TRY(tp_hf_int(c, "num_key_value_heads", NULL, false, t->heads, 1,
			    1 << 16, &t->kv_heads));
	TP_HF_TRY(tp_hf_int(c, "intermediate_size", NULL, false, d->ffn, 1,
			    1 << 24, &t->ffn));
	TP_HF_TRY(tp_hf_int(c, "vocab_size", NULL, false, d->vocab, 1, 1 << 28,
			    &t->vocab));
	TP_HF_TRY(tp_hf_int(c, "max_position_embeddings", NULL, false,
			    d->max_pos, 1, 1 << 26, max_pos));
	TP_HF_TRY(tp_hf_int(c, "head_dim", NULL, false, d->head_dim, 1,
			    1 << 16, &t->head_dim));
	if (t->head_dim * t->heads == t->hidden)
		t->head_dim = 0;
	TP_HF_TRY(tp_hf_bool(c, "tie_word_embeddings", d->tie, &t->tied_head));
	if (d->flags & LL_GEMMA)
		TP_HF_TRY(tp_hf_gated_act(c, "hidden_activation", NULL,
					  "gelu_pytorch_tanh", &t->act));
	else
		TP_HF_TRY(tp_hf_gated_act(c, "hidden_act", NULL, "silu",
					  &t->act));
	TP_HF_TRY(tp_hf_num(c, "attention_dropout", 0, TP_HF_DROPOUT, &drop));
	t->dropout = drop > 0;
	if (d->flags & LL_NOAFFINE)
		t->info.norm_eps = 1e-5; /* OlmoLayerNorm's, fixed */
	else
		TP_HF_TRY(tp_hf_num(c, "rms_norm_eps", d->eps, TP_HF_EPS,
				    &t->info.norm_eps));
	TP_HF_TRY(tp_hf_rope(c, d->rope, t));
	TP_HF_TRY(read_llama_variants(c, d, t));
	if (d->flags & LL_MIXTRAL) {
		TP_HF_TRY(tp_hf_int(c, "num_local_experts", NULL, false,
				    d->experts, 1, 4096, &t->experts));
		TP_HF_TRY(tp_hf_int(c, "num_experts_per_tok", NULL, false,
				    d->top_k, 1, 4096, &t->top_k));
		TP_HF_TRY(check_top_k(c, t, "num_experts_per_tok",
				      "num_local_experts"));
		t->info.router = TP_ROUTER_SOFTMAX;
		t->info.router_topk_norm = TP_TRI_YES;
	}
	if (d->flags & LL_QWEN_MOE)
		TP_HF_TRY(read_qwen_moe(c, d, t));
	return tp_hf_heads_divide(c, t, "hidden_size", "num_attention_heads",
				  "num_key_value_heads");
}

static enum tp_status read_gpt2(struct tp_hf *c, struct tp_tf *t,
				int64_t *max_pos)
{
	enum tp_status st;
	int64_t inner;
	double drop;

	t->family = "gpt2";
	TP_HF_TRY(tp_hf_int(c, "n_embd", "hidden_size", true, 0, 1, 1 << 20,
			    &t->hidden));
	TP_HF_TRY(tp_hf_int(c, "n_layer", "num_hidden_layers", true, 0, 1,
			    1 << 16, &t->layers));
	TP_HF_TRY(tp_hf_int(c, "n_head", "num_attention_heads", true, 0, 1,
			    1 << 16, &t->heads));
	TP_HF_TRY(tp_hf_int(c, "n_inner", NULL, false, 4 * t->hidden, 1,
			    1 << 24, &inner));
	t->ffn = inner;
	TP_HF_TRY(tp_hf_int(c, "vocab_size", NULL, false, 50257, 1, 1 << 28,
			    &t->vocab));
	TP_HF_TRY(tp_hf_int(c, "n_positions", "max_position_embeddings", false,
			    1024, 1, 1 << 26, max_pos));
	t->pos_embeddings = *max_pos;
	TP_HF_TRY(tp_hf_bool(c, "tie_word_embeddings", true, &t->tied_head));
	TP_HF_TRY(tp_hf_plain_act(c, "activation_function", "gelu_new",
				  &t->act));
	TP_HF_TRY(tp_hf_num(c, "resid_pdrop", 0.1, TP_HF_DROPOUT, &drop));
	t->dropout = drop > 0;
	TP_HF_TRY(tp_hf_num(c, "layer_norm_epsilon", 1e-5, TP_HF_EPS,
			    &t->info.norm_eps));
	return tp_hf_heads_divide(c, t, "n_embd", "n_head", NULL);
}

/* Does "architectures" list name? */
static bool has_architecture(struct tp_hf *c, const char *name)
{
	const struct tp_json *a;

	if (tp_hf_array(c, "architectures", &a) || !a)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->items[i]->type == TP_JSON_STRING &&
		    strcmp(a->items[i]->str, name) == 0)
			return true;
	return false;
}

static enum tp_status read_bert(struct tp_hf *c, struct tp_tf *t,
				int64_t *max_pos)
{
	enum tp_status st;
	double drop;

	t->family = "bert";
	t->norm_pos = TP_NORMPOS_POST;
	t->embed_norm = true;
	t->final_norm = false;
	t->head = has_architecture(c, "BertForPreTraining")
			  ? TP_TF_HEAD_PRETRAIN
			  : TP_TF_HEAD_MLM;
	TP_HF_TRY(tp_hf_int(c, "hidden_size", NULL, true, 0, 1, 1 << 20,
			    &t->hidden));
	TP_HF_TRY(tp_hf_int(c, "num_hidden_layers", NULL, true, 0, 1, 1 << 16,
			    &t->layers));
	TP_HF_TRY(tp_hf_int(c, "num_attention_heads", NULL, true, 0, 1,
			    1 << 16, &t->heads));
	TP_HF_TRY(tp_hf_int(c, "intermediate_size", NULL, false, 3072, 1,
			    1 << 24, &t->ffn));
	TP_HF_TRY(tp_hf_int(c, "vocab_size", NULL, false, 30522, 1, 1 << 28,
			    &t->vocab));
	TP_HF_TRY(tp_hf_int(c, "max_position_embeddings", NULL, false, 512, 1,
			    1 << 26, max_pos));
	t->pos_embeddings = *max_pos;
	TP_HF_TRY(tp_hf_int(c, "type_vocab_size", NULL, false, 2, 0, 1 << 20,
			    &t->type_vocab));
	TP_HF_TRY(tp_hf_bool(c, "tie_word_embeddings", true, &t->tied_head));
	TP_HF_TRY(tp_hf_plain_act(c, "hidden_act", "gelu", &t->act));
	TP_HF_TRY(
	    tp_hf_num(c, "hidden_dropout_prob", 0.1, TP_HF_DROPOUT, &drop));
	t->dropout = drop > 0;
	TP_HF_TRY(tp_hf_num(c, "layer_norm_eps", 1e-12, TP_HF_EPS,
			    &t->info.norm_eps));
	return tp_hf_heads_divide(c, t, "hidden_size", "num_attention_heads",
				  NULL);
}

static enum tp_status read_t5(struct tp_hf *c, struct tp_tf *t,
			      int64_t *max_pos)
{
	static const struct {
		const char *name;
		enum tp_act act;
	} ffs[] = {{"relu", TP_ACT_RELU},
		   {"gelu", TP_ACT_GELU},
		   {"gelu_new", TP_ACT_GELU_TANH},
		   {"gated-gelu", TP_ACT_GEGLU_TANH}, /* T5 v1.1: gelu_new */
		   {"gated-gelu_new", TP_ACT_GEGLU_TANH},
		   {"gated-relu", TP_ACT_REGLU},
		   {"gated-silu", TP_ACT_SWIGLU}};
	enum tp_status st;
	const char *ff;
	double drop;
	size_t i;

	*max_pos = 0;
	t->family = "t5";
	t->norm = TP_NORM_RMSNORM; /* T5's LayerNorm: scale only, no mean */
	t->attn_bias = t->out_bias = t->mlp_bias = false;
	t->pos_embeddings = 0;
	TP_HF_TRY(tp_hf_int(c, "d_model", NULL, true, 0, 1, 1 << 20,
			    &t->hidden));
	TP_HF_TRY(tp_hf_int(c, "num_layers", NULL, true, 0, 1, 1 << 16,
			    &t->layers));
	TP_HF_TRY(tp_hf_int(c, "num_heads", NULL, true, 0, 1, 1 << 16,
			    &t->heads));
	TP_HF_TRY(tp_hf_int(c, "d_kv", NULL, false, 64, 1, 1 << 16,
			    &t->head_dim));
	TP_HF_TRY(tp_hf_int(c, "d_ff", NULL, false, 2048, 1, 1 << 24,
			    &t->ffn));
	TP_HF_TRY(tp_hf_int(c, "num_decoder_layers", NULL, false, t->layers, 1,
			    1 << 16, &t->dec_layers));
	TP_HF_TRY(tp_hf_int(c, "vocab_size", NULL, false, 32128, 1, 1 << 28,
			    &t->vocab));
	TP_HF_TRY(tp_hf_int(c, "relative_attention_num_buckets", NULL, false,
			    32, 0, 1 << 16, &t->rel_buckets));
	TP_HF_TRY(tp_hf_bool(c, "tie_word_embeddings", true, &t->tied_head));
	TP_HF_TRY(tp_hf_str(c, "feed_forward_proj", "relu", &ff));
	for (i = 0; i < sizeof(ffs) / sizeof(ffs[0]); i++)
		if (!strcmp(ff, ffs[i].name))
			break;
	if (i == sizeof(ffs) / sizeof(ffs[0]) && !c->probe)
		return tp_jctx_fail(&c->j, "feed_forward_proj",
				    "unsupported \"%s\"; expected relu, gelu, "
				    "gated-gelu, gated-relu or gated-silu",
				    ff);
	t->act = i < sizeof(ffs) / sizeof(ffs[0]) ? ffs[i].act : TP_ACT_RELU;
	TP_HF_TRY(tp_hf_num(c, "dropout_rate", 0.1, TP_HF_DROPOUT, &drop));
	t->dropout = drop > 0;
	TP_HF_TRY(tp_hf_num(c, "layer_norm_epsilon", 1e-6, TP_HF_EPS,
			    &t->info.norm_eps));
	return TP_OK;
}

/*
 * Falcon (FalconConfig): parallel attention and MLP off one LayerNorm
 * (two with new_decoder_architecture, or num_ln_in_parallel_attn),
 * multi-query attention unless the new architecture gives num_kv_heads,
 * rotary positions unless alibi, one bias switch for every linear layer.
 */
static enum tp_status read_falcon(struct tp_hf *c, struct tp_tf *t,
				  int64_t *max_pos)
{
	enum tp_status st;
	bool new_arch, mq, parallel, bias, alibi, post_ln;
	double drop;

	t->family = "falcon";
	t->info.position = TP_POS_ROPE;
	TP_HF_TRY(tp_hf_int(c, "hidden_size", "n_embed", true, 0, 1, 1 << 20,
			    &t->hidden));
	TP_HF_TRY(tp_hf_int(c, "num_hidden_layers", "n_layer", true, 0, 1,
			    1 << 16, &t->layers));
	TP_HF_TRY(tp_hf_int(c, "num_attention_heads", "n_head", true, 0, 1,
			    1 << 16, &t->heads));
	TP_HF_TRY(tp_hf_int(c, "vocab_size", NULL, false, 65024, 1, 1 << 28,
			    &t->vocab));
	TP_HF_TRY(tp_hf_bool(c, "new_decoder_architecture", false, &new_arch));
	TP_HF_TRY(tp_hf_bool(c, "multi_query", true, &mq));
	TP_HF_TRY(tp_hf_bool(c, "parallel_attn", true, &parallel));
	TP_HF_TRY(tp_hf_bool(c, "bias", false, &bias));
	TP_HF_TRY(tp_hf_bool(c, "alibi", false, &alibi));
	TP_HF_TRY(tp_hf_bool(c, "apply_residual_connection_post_layernorm",
			     false, &post_ln));
	if (post_ln && !c->probe)
		return tp_jctx_fail(&c->j,
				    "apply_residual_connection_post_layernorm",
				    "true is not supported (the residual "
				    "taken after the norm); expected false");
	if (new_arch) {
		TP_HF_TRY(tp_hf_int(c, "num_kv_heads", NULL, false, t->heads,
				    1, 1 << 16, &t->kv_heads));
		TP_HF_TRY(tp_hf_int(c, "num_ln_in_parallel_attn", NULL, false,
				    2, 1, 2, &t->parallel_norms));
		parallel = true;
	} else {
		t->kv_heads = mq ? 1 : t->heads;
	}
	t->parallel_attn = parallel;
	TP_HF_TRY(tp_hf_int(c, "ffn_hidden_size", NULL, false, 4 * t->hidden,
			    1, 1 << 24, &t->ffn));
	TP_HF_TRY(tp_hf_int(c, "max_position_embeddings", NULL, false, 2048,
			    1, 1 << 26, max_pos));
	TP_HF_TRY(tp_hf_bool(c, "tie_word_embeddings", true, &t->tied_head));
	TP_HF_TRY(tp_hf_plain_act(c, "activation", "gelu", &t->act));
	TP_HF_TRY(tp_hf_num(c, "hidden_dropout", 0, TP_HF_DROPOUT, &drop));
	t->dropout = drop > 0;
	TP_HF_TRY(tp_hf_num(c, "layer_norm_epsilon", 1e-5, TP_HF_EPS,
			    &t->info.norm_eps));
	if (alibi)
		t->info.position = TP_POS_ALIBI;
	else
		TP_HF_TRY(tp_hf_rope(c, 10000, t));
	t->attn_bias = t->out_bias = t->mlp_bias = bias;
	return tp_hf_heads_divide(c, t, "hidden_size", "num_attention_heads",
				  new_arch ? "num_kv_heads" : NULL);
}

/* DeepSeek's router: scoring function, grouping, the aux-free bias. */
static enum tp_status read_deepseek_router(struct tp_hf *c, bool v3,
					   struct tp_tf *t)
{
	enum tp_status st;
	const char *score, *method;
	bool norm;

	TP_HF_TRY(tp_hf_str(c, "scoring_func", v3 ? "sigmoid" : "softmax",
			    &score));
	if (!strcmp(score, "softmax"))
		t->info.router = TP_ROUTER_SOFTMAX;
	else if (!strcmp(score, "sigmoid"))
		t->info.router = TP_ROUTER_SIGMOID;
	else if (!c->probe)
		return tp_jctx_fail(&c->j, "scoring_func",
				    "unsupported \"%.40s\"; expected softmax or "
				    "sigmoid",
				    score);
	TP_HF_TRY(tp_hf_str(c, "topk_method", v3 ? "noaux_tc" : "greedy",
			    &method));
	if (strcmp(method, "greedy") && strcmp(method, "group_limited_greedy") &&
	    strcmp(method, "noaux_tc") && !c->probe)
		return tp_jctx_fail(&c->j, "topk_method",
				    "unsupported \"%.40s\"; expected greedy, "
				    "group_limited_greedy or noaux_tc",
				    method);
	/* noaux_tc: e_score_correction_bias, one per expert */
	t->router_bias = !strcmp(method, "noaux_tc");
	TP_HF_TRY(tp_hf_int(c, "n_group", NULL, false, v3 ? 8 : 0, 0, 4096,
			    &t->info.router_groups));
	TP_HF_TRY(tp_hf_int(c, "topk_group", NULL, false, v3 ? 4 : 0, 0, 4096,
			    &t->info.router_group_topk));
	TP_HF_TRY(tp_hf_bool(c, "norm_topk_prob", v3, &norm));
	t->info.router_topk_norm = norm ? TP_TRI_YES : TP_TRI_NO;
	return tp_hf_num(c, "routed_scaling_factor", v3 ? 2.5 : 1.0,
			 TP_HF_ROUTER_SCALE, &t->info.router_scale);
}

/* DeepSeek's experts: n_routed_experts (absent in a V2 config: dense),
 * n_shared_experts of moe_intermediate_size, the first
 * first_k_dense_replace layers dense, an expert layer in each after. */
static enum tp_status read_deepseek_moe(struct tp_hf *c, bool v3,
					struct tp_tf *t)
{
	enum tp_status st;

	TP_HF_TRY(tp_hf_int(c, "n_routed_experts", NULL, false, v3 ? 256 : 0,
			    0, 4096, &t->experts));
	TP_HF_TRY(tp_hf_int(c, "moe_intermediate_size", NULL, false,
			    v3 ? 2048 : 1407, 1, 1 << 24, &t->moe_ffn));
	if (t->experts == 0 && !c->probe)
		return TP_OK;
	TP_HF_TRY(tp_hf_int(c, "num_experts_per_tok", NULL, !v3, 8, 1, 4096,
			    &t->top_k));
	TP_HF_TRY(check_top_k(c, t, "num_experts_per_tok", "n_routed_experts"));
	TP_HF_TRY(tp_hf_int(c, "n_shared_experts", NULL, false, v3 ? 1 : 0, 0,
			    64, &t->shared_experts));
	t->shared_ffn = t->shared_experts > 0 ? t->moe_ffn : 0;
	TP_HF_TRY(tp_hf_int(c, "first_k_dense_replace", NULL, false, v3 ? 3 : 0,
			    0, t->layers, &t->first_dense));
	TP_HF_TRY(only_value(c, "moe_layer_freq", 1, 1,
			     "tagplan builds an expert layer in every block "
			     "after the first_k_dense_replace dense ones"));
	return read_deepseek_router(c, v3, t);
}

/*
 * DeepSeek-V2 and V3 (their configuration_deepseek.py): multi-head latent
 * attention and routed + shared experts after the first dense layers.
 * The multi-token prediction module of V3 (num_nextn_predict_layers) is
 * not built: the model is the 671 B main model.  q_lora_rank null (as
 * V2-Lite writes it) means a plain query projection, not the default.
 */
static enum tp_status read_deepseek(struct tp_hf *c, struct tp_tf *t,
				    int64_t *max_pos)
{
	bool v3 = !strcmp(c->type, "deepseek_v3");
	enum tp_status st;
	int64_t mtp;
	double drop;

	t->family = v3 ? "deepseek_v3" : "deepseek_v2";
	t->norm = TP_NORM_RMSNORM;
	t->mlp_bias = false;
	t->pos_embeddings = 0;
	t->info.position = TP_POS_ROPE;
	TP_HF_TRY(tp_hf_int(c, "hidden_size", NULL, true, 0, 1, 1 << 20,
			    &t->hidden));
	TP_HF_TRY(tp_hf_int(c, "num_hidden_layers", NULL, true, 0, 1, 1 << 16,
			    &t->layers));
	TP_HF_TRY(tp_hf_int(c, "num_attention_heads", NULL, true, 0, 1,
			    1 << 16, &t->heads));
	t->kv_heads = t->heads;
	TP_HF_TRY(tp_hf_int(c, "vocab_size", NULL, false, v3 ? 129280 : 102400,
			    1, 1 << 28, &t->vocab));
	TP_HF_TRY(tp_hf_int(c, "intermediate_size", NULL, false,
			    v3 ? 18432 : 11008, 1, 1 << 24, &t->ffn));
	TP_HF_TRY(tp_hf_int(c, "max_position_embeddings", NULL, false,
			    v3 ? 4096 : 2048, 1, 1 << 26, max_pos));
	TP_HF_TRY(tp_hf_int(c, "kv_lora_rank", NULL, false, 512, 1, 1 << 20,
			    &t->kv_lora));
	if (tp_hf_has(c, "q_lora_rank") || !tp_json_get(c->root, "q_lora_rank"))
		TP_HF_TRY(tp_hf_int(c, "q_lora_rank", NULL, false, 1536, 1,
				    1 << 20, &t->q_lora));
	else
		t->q_lora = 0; /* null: no query compression */
	TP_HF_TRY(tp_hf_int(c, "qk_nope_head_dim", NULL, false, 128, 0,
			    1 << 16, &t->qk_nope));
	TP_HF_TRY(tp_hf_int(c, "qk_rope_head_dim", NULL, false, 64, 1, 1 << 16,
			    &t->qk_rope));
	TP_HF_TRY(tp_hf_int(c, "v_head_dim", NULL, false, 128, 1, 1 << 16,
			    &t->v_dim));
	TP_HF_TRY(tp_hf_bool(c, "attention_bias", false, &t->attn_bias));
	t->out_bias = t->attn_bias;
	TP_HF_TRY(tp_hf_bool(c, "tie_word_embeddings", false, &t->tied_head));
	TP_HF_TRY(tp_hf_gated_act(c, "hidden_act", NULL, "silu", &t->act));
	TP_HF_TRY(tp_hf_num(c, "attention_dropout", 0, TP_HF_DROPOUT, &drop));
	t->dropout = drop > 0;
	TP_HF_TRY(
	    tp_hf_num(c, "rms_norm_eps", 1e-6, TP_HF_EPS, &t->info.norm_eps));
	TP_HF_TRY(tp_hf_rope(c, 10000, t));
	/* read so that the nearest-family search knows it; not built */
	TP_HF_TRY(tp_hf_int(c, "num_nextn_predict_layers", NULL, false, 0, 0,
			    1 << 16, &mtp));
	return read_deepseek_moe(c, v3, t);
}

/* Fields of a member object ($.key.field), read with c->root switched. */
struct sub {
	size_t old;
	const struct tp_json *saved;
};

static bool sub_enter(struct tp_hf *c, const char *key,
		      const struct tp_json *obj, struct sub *s)
{
	s->saved = c->root;
	if (!obj)
		return false;
	s->old = tp_jctx_push_key(&c->j, key);
	c->root = obj;
	return true;
}

static void sub_leave(struct tp_hf *c, struct sub *s)
{
	c->root = s->saved;
	tp_jctx_pop(&c->j, s->old);
}

/* DBRX's ffn_config: 16 experts of ffn_hidden_size, top-4, GLU. */
static enum tp_status read_dbrx_ffn(struct tp_hf *c, struct tp_tf *t)
{
	const struct tp_json *ffn, *act;
	enum tp_status st = TP_OK;
	struct sub s, s2;
	bool norm;

	t->ffn = 3584;
	t->experts = 4;
	t->top_k = 1;
	t->act = TP_ACT_SWIGLU;
	norm = true;
	TP_HF_TRY(tp_hf_obj(c, "ffn_config", &ffn));
	if (sub_enter(c, "ffn_config", ffn, &s)) {
		if (!st)
			st = tp_hf_int(c, "ffn_hidden_size", NULL, false, 3584,
				       1, 1 << 24, &t->ffn);
		if (!st)
			st = tp_hf_int(c, "moe_num_experts", NULL, false, 4, 1,
				       4096, &t->experts);
		if (!st)
			st = tp_hf_int(c, "moe_top_k", NULL, false, 1, 1, 4096,
				       &t->top_k);
		if (!st)
			st = check_top_k(c, t, "moe_top_k", "moe_num_experts");
		/* a p-norm of the top-k weights (default 1); null: none */
		if (!st)
			norm = tp_hf_has(c, "moe_normalize_expert_weights") ||
			       !tp_json_get(c->root,
					    "moe_normalize_expert_weights");
		if (!st)
			st = tp_hf_obj(c, "ffn_act_fn", &act);
		if (!st && sub_enter(c, "ffn_act_fn", act, &s2)) {
			st = tp_hf_gated_act(c, "name", NULL, "silu", &t->act);
			sub_leave(c, &s2);
		}
		sub_leave(c, &s);
	}
	t->info.router = TP_ROUTER_SOFTMAX;
	t->info.router_topk_norm = norm ? TP_TRI_YES : TP_TRI_NO;
	return st;
}

/*
 * DBRX (DbrxConfig, with its attn_config and ffn_config objects):
 * LayerNorm without bias, no biases, GQA with kv_n_heads, rotary, 16
 * experts of which 4 per token, all layers MoE.
 */
static enum tp_status read_dbrx(struct tp_hf *c, struct tp_tf *t,
				int64_t *max_pos)
{
	const struct tp_json *attn;
	enum tp_status st = TP_OK;
	struct sub s;
	double drop, theta = 10000;

	t->family = "dbrx";
	t->norm = TP_NORM_LAYERNORM_NOBIAS;
	t->attn_bias = t->out_bias = t->mlp_bias = false;
	t->info.position = TP_POS_ROPE;
	t->info.norm_eps = 1e-5; /* nn.LayerNorm's default, not configurable */
	TP_HF_TRY(tp_hf_int(c, "d_model", "hidden_size", true, 0, 1, 1 << 20,
			    &t->hidden));
	TP_HF_TRY(tp_hf_int(c, "n_layers", "num_hidden_layers", true, 0, 1,
			    1 << 16, &t->layers));
	TP_HF_TRY(tp_hf_int(c, "n_heads", "num_attention_heads", true, 0, 1,
			    1 << 16, &t->heads));
	TP_HF_TRY(tp_hf_int(c, "vocab_size", NULL, false, 32000, 1, 1 << 28,
			    &t->vocab));
	TP_HF_TRY(tp_hf_int(c, "max_seq_len", "max_position_embeddings", false,
			    2048, 1, 1 << 26, max_pos));
	TP_HF_TRY(tp_hf_bool(c, "tie_word_embeddings", false, &t->tied_head));
	TP_HF_TRY(tp_hf_num(c, "resid_pdrop", 0, TP_HF_DROPOUT, &drop));
	t->dropout = drop > 0;
	t->kv_heads = 1;
	TP_HF_TRY(tp_hf_obj(c, "attn_config", &attn));
	if (sub_enter(c, "attn_config", attn, &s)) {
		st = tp_hf_int(c, "kv_n_heads", NULL, false, 1, 1, 1 << 16,
			       &t->kv_heads);
		if (!st)
			st = tp_hf_num(c, "rope_theta", 10000, TP_HF_ROPE_BASE,
				       &theta);
		sub_leave(c, &s);
	}
	if (st)
		return st;
	t->info.rope_theta = theta;
	TP_HF_TRY(read_dbrx_ffn(c, t));
	return tp_hf_heads_divide(c, t, "d_model", "n_heads",
				  attn ? "attn_config.kv_n_heads" : NULL);
}

/*
 * ViT (ViTConfig, ViTForImageClassification): a pre-norm encoder over
 * the (image_size / patch_size)^2 patches and the CLS token, learned
 * positions, the classifier on the CLS token.  Its classes: num_labels,
 * else the number of id2label entries, else 2 (transformers' default).
 */
static enum tp_status read_vit(struct tp_hf *c, struct tp_tf *t,
			       int64_t *max_pos)
{
	const struct tp_json *labels;
	enum tp_status st;
	double drop;
	int64_t side;

	t->family = "vit";
	t->head = TP_TF_HEAD_CLS;
	t->vocab = 0;
	t->tied_head = false;
	t->info.position = TP_POS_LEARNED;
	TP_HF_TRY(tp_hf_int(c, "hidden_size", NULL, true, 0, 1, 1 << 20,
			    &t->hidden));
	TP_HF_TRY(tp_hf_int(c, "num_hidden_layers", NULL, true, 0, 1, 1 << 16,
			    &t->layers));
	TP_HF_TRY(tp_hf_int(c, "num_attention_heads", NULL, true, 0, 1,
			    1 << 16, &t->heads));
	TP_HF_TRY(tp_hf_int(c, "intermediate_size", NULL, false, 3072, 1,
			    1 << 24, &t->ffn));
	TP_HF_TRY(tp_hf_int(c, "image_size", NULL, false, 224, 1, 1 << 16,
			    &t->image_size));
	TP_HF_TRY(tp_hf_int(c, "patch_size", NULL, false, 16, 1, 1 << 16,
			    &t->patch_size));
	TP_HF_TRY(tp_hf_int(c, "num_channels", NULL, false, 3, 1, 4096,
			    &t->channels));
	TP_HF_TRY(tp_hf_bool(c, "qkv_bias", true, &t->attn_bias));
	TP_HF_TRY(tp_hf_plain_act(c, "hidden_act", "gelu", &t->act));
	TP_HF_TRY(tp_hf_num(c, "hidden_dropout_prob", 0, TP_HF_DROPOUT, &drop));
	t->dropout = drop > 0;
	TP_HF_TRY(tp_hf_num(c, "layer_norm_eps", 1e-12, TP_HF_EPS,
			    &t->info.norm_eps));
	TP_HF_TRY(tp_hf_obj(c, "id2label", &labels));
	TP_HF_TRY(tp_hf_int(c, "num_labels", NULL, false,
			    labels && labels->n ? (int64_t)labels->n : 2, 1,
			    1 << 24, &t->classes));
	if (t->image_size % t->patch_size && !c->probe)
		return tp_jctx_fail(&c->j, "patch_size",
				    "patch_size (%lld) must divide image_size "
				    "(%lld)",
				    (long long)t->patch_size,
				    (long long)t->image_size);
	side = t->image_size / t->patch_size;
	t->seq = side * side + 1;
	*max_pos = t->seq;
	t->info.max_positions = t->seq;
	return tp_hf_heads_divide(c, t, "hidden_size", "num_attention_heads",
				  NULL);
}

const struct tp_hf_type tp_hf_types[] = {
	{"llama", read_llama},	       {"mistral", read_llama},
	{"mixtral", read_llama},       {"qwen2", read_llama},
	{"qwen2_moe", read_llama},     {"qwen3", read_llama},
	{"qwen3_moe", read_llama},     {"gemma", read_llama},
	{"gemma2", read_llama},	       {"gemma3_text", read_llama},
	{"phi3", read_llama},	       {"olmo", read_llama},
	{"olmo2", read_llama},	       {"gpt2", read_gpt2},
	{"bert", read_bert},	       {"t5", read_t5},
	{"falcon", read_falcon},       {"deepseek_v2", read_deepseek},
	{"deepseek_v3", read_deepseek}, {"dbrx", read_dbrx},
	{"vit", read_vit},	       {NULL, NULL}};
