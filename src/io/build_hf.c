/*
 * build_hf.c - a training graph from a HuggingFace config.json, for the
 * model types llama, mistral, mixtral, qwen2, gpt2, bert and t5, through
 * the transformer builder of build_gpt.c.
 *
 * Fields a config leaves out take the defaults of the transformers
 * library's config class for that model type (listed in the tables
 * below); the size fields (hidden size, layers, heads) are essential: a
 * config without them is refused rather than silently becoming the
 * library's default model.  null counts as absent, as in transformers.
 * Every error names the field by its JSON path.
 */
#include "build.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "build_int.h"
#include "io.h"
#include "json.h"

static const char supported[] = "llama, mistral, mixtral, qwen2, gpt2, bert, t5";

/* Default global batch (sequences) and the cap on the default sequence
 * length of decoder-only models (documented in tagplan(1)). */
#define HF_DEFAULT_BATCH 256
#define HF_DEFAULT_SEQ_CAP 4096

struct hf {
	struct tp_jctx j;
	const struct tp_json *root;
	const char *type;
};

/* The value of key (or of its alias), NULL when absent or null. */
static const struct tp_json *field(struct hf *c, const char *key,
				   const char *alias, const char **used)
{
	const struct tp_json *v = tp_json_get(c->root, key);

	*used = key;
	if ((!v || v->type == TP_JSON_NULL) && alias) {
		v = tp_json_get(c->root, alias);
		if (v && v->type != TP_JSON_NULL)
			*used = alias;
	}
	return v && v->type != TP_JSON_NULL ? v : NULL;
}

static enum tp_status get_int(struct hf *c, const char *key, const char *alias,
			      bool essential, int64_t def, int64_t min,
			      int64_t max, int64_t *out)
{
	const char *used;
	const struct tp_json *v = field(c, key, alias, &used);

	if (!v) {
		if (essential)
			return tp_jctx_fail(
				&c->j, key,
				"missing essential field \"%s\" for model_type "
				"\"%s\" (the config must give the model's size)",
				key, c->type);
		*out = def;
		return TP_OK;
	}
	if (v->type != TP_JSON_NUMBER || v->num != floor(v->num))
		return tp_jctx_fail(&c->j, used,
				    "expected an integer from %lld to %lld, "
				    "got %s",
				    (long long)min, (long long)max,
				    tp_json_type_name(v->type));
	if (v->num < (double)min || v->num > (double)max)
		return tp_jctx_fail(&c->j, used,
				    "expected an integer from %lld to %lld, "
				    "got %.17g",
				    (long long)min, (long long)max, v->num);
	*out = (int64_t)v->num;
	return TP_OK;
}

static enum tp_status get_num(struct hf *c, const char *key, double def,
			      double *out)
{
	const char *used;
	const struct tp_json *v = field(c, key, NULL, &used);

	if (!v) {
		*out = def;
		return TP_OK;
	}
	if (v->type != TP_JSON_NUMBER || v->num < 0)
		return tp_jctx_fail(&c->j, used,
				    "expected a number >= 0, got %s",
				    tp_json_type_name(v->type));
	*out = v->num;
	return TP_OK;
}

static enum tp_status get_bool(struct hf *c, const char *key, bool def,
			       bool *out)
{
	const char *used;
	const struct tp_json *v = field(c, key, NULL, &used);

	if (!v) {
		*out = def;
		return TP_OK;
	}
	if (v->type != TP_JSON_BOOL)
		return tp_jctx_fail(&c->j, used, "expected true or false, got %s",
				    tp_json_type_name(v->type));
	*out = v->b;
	return TP_OK;
}

static enum tp_status get_str(struct hf *c, const char *key, const char *def,
			      const char **out)
{
	const char *used;
	const struct tp_json *v = field(c, key, NULL, &used);

	if (!v) {
		*out = def;
		return TP_OK;
	}
	if (v->type != TP_JSON_STRING)
		return tp_jctx_fail(&c->j, used, "expected a string, got %s",
				    tp_json_type_name(v->type));
	*out = v->str;
	return TP_OK;
}

/* Does "architectures" list name? */
static bool has_architecture(struct hf *c, const char *name)
{
	const struct tp_json *a = tp_json_get(c->root, "architectures");

	if (!a || a->type != TP_JSON_ARRAY)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->items[i]->type == TP_JSON_STRING &&
		    strcmp(a->items[i]->str, name) == 0)
			return true;
	return false;
}

/* MLP activation of the Llama family ("hidden_act"): gated. */
static enum tp_status gated_act(struct hf *c, const char *key,
				const char *def, enum tp_tf_mlp *out)
{
	const char *act;
	enum tp_status st = get_str(c, key, def, &act);

	if (st)
		return st;
	if (!strcmp(act, "silu") || !strcmp(act, "swish"))
		*out = TP_TF_MLP_SWIGLU;
	else if (!strncmp(act, "gelu", 4) || !strcmp(act, "relu"))
		*out = TP_TF_MLP_GEGLU; /* same cost as SwiGLU, to a FLOP */
	else
		return tp_jctx_fail(&c->j, key,
				    "unsupported activation \"%s\"; expected "
				    "silu, swish, relu or gelu*",
				    act);
	return TP_OK;
}

/* Activation of a plain two-GEMM MLP (GPT-2, BERT). */
static enum tp_status plain_act(struct hf *c, const char *key,
				const char *def, enum tp_tf_mlp *out)
{
	const char *act;
	enum tp_status st = get_str(c, key, def, &act);

	if (st)
		return st;
	if (!strcmp(act, "relu"))
		*out = TP_TF_MLP_RELU;
	else if (!strncmp(act, "gelu", 4) || !strcmp(act, "quick_gelu") ||
		 !strcmp(act, "silu") || !strcmp(act, "swish") ||
		 !strcmp(act, "tanh"))
		*out = TP_TF_MLP_GELU; /* a few FLOP per element */
	else
		return tp_jctx_fail(&c->j, key,
				    "unsupported activation \"%s\"; expected "
				    "relu, gelu*, silu, swish or tanh",
				    act);
	return TP_OK;
}

static int dtype_of(const char *s)
{
	if (!strcmp(s, "float16") || !strcmp(s, "fp16") || !strcmp(s, "half"))
		return TP_DTYPE_FP16;
	if (!strcmp(s, "float32") || !strcmp(s, "fp32") || !strcmp(s, "float"))
		return TP_DTYPE_FP32;
	return TP_DTYPE_BF16;
}

/* Per model type: the transformers defaults of the fields we read. */
struct hf_defaults {
	const char *type;
	int64_t vocab, ffn, max_pos;
	bool tie;
};

static const struct hf_defaults llama_like[] = {
	{"llama", 32000, 11008, 2048, false},
	{"mistral", 32000, 14336, 131072, false},
	{"mixtral", 32000, 14336, 131072, false},
	{"qwen2", 151936, 22016, 32768, false},
};

#define TRY(x)                                                                \
	do {                                                                  \
		if ((st = (x)))                                               \
			return st;                                            \
	} while (0)

static enum tp_status heads_divide(struct hf *c, const struct tp_tf *t,
				   const char *hidden_key, const char *heads_key,
				   const char *kv_key)
{
	if (t->head_dim == 0 && t->hidden % t->heads)
		return tp_jctx_fail(&c->j, heads_key,
				    "%s (%lld) must divide %s (%lld)", heads_key,
				    (long long)t->heads, hidden_key,
				    (long long)t->hidden);
	if (kv_key && t->kv_heads > 0 &&
	    (t->kv_heads > t->heads || t->heads % t->kv_heads))
		return tp_jctx_fail(&c->j, kv_key,
				    "%s (%lld) must divide %s (%lld)", kv_key,
				    (long long)t->kv_heads, heads_key,
				    (long long)t->heads);
	return TP_OK;
}

static enum tp_status read_llama(struct hf *c, const struct hf_defaults *d,
				 struct tp_tf *t, int64_t *max_pos)
{
	enum tp_status st;
	double drop;
	int64_t window = 0;

	t->family = d->type;
	t->rmsnorm = true;
	t->attn_bias = t->out_bias = t->mlp_bias = false;
	t->pos_embeddings = 0; /* rotary */
	TRY(get_int(c, "hidden_size", NULL, true, 0, 1, 1 << 20, &t->hidden));
	TRY(get_int(c, "num_hidden_layers", NULL, true, 0, 1, 1 << 16,
		    &t->layers));
	TRY(get_int(c, "num_attention_heads", NULL, true, 0, 1, 1 << 16,
		    &t->heads));
	TRY(get_int(c, "num_key_value_heads", NULL, false, t->heads, 1,
		    1 << 16, &t->kv_heads));
	TRY(get_int(c, "intermediate_size", NULL, false, d->ffn, 1, 1 << 24,
		    &t->ffn));
	TRY(get_int(c, "vocab_size", NULL, false, d->vocab, 1, 1 << 28,
		    &t->vocab));
	TRY(get_int(c, "max_position_embeddings", NULL, false, d->max_pos, 1,
		    1 << 26, max_pos));
	TRY(get_int(c, "head_dim", NULL, false, 0, 1, 1 << 16, &t->head_dim));
	if (t->head_dim * t->heads == t->hidden)
		t->head_dim = 0;
	TRY(get_bool(c, "tie_word_embeddings", d->tie, &t->tied_head));
	TRY(gated_act(c, "hidden_act", "silu", &t->mlp));
	TRY(get_num(c, "attention_dropout", 0, &drop));
	t->dropout = drop > 0;
	if (!strcmp(d->type, "qwen2")) {
		bool use_sw;
		t->attn_bias = true; /* Qwen2: biases on q, k, v */
		TRY(get_bool(c, "use_sliding_window", false, &use_sw));
		if (use_sw)
			TRY(get_int(c, "sliding_window", NULL, false, 4096, 1,
				    1 << 26, &window));
	} else {
		bool b;
		TRY(get_bool(c, "attention_bias", false, &b));
		t->attn_bias = t->out_bias = b;
		TRY(get_bool(c, "mlp_bias", false, &t->mlp_bias));
		TRY(get_int(c, "sliding_window", NULL, false,
			    !strcmp(d->type, "mistral") ? 4096 : 0, 0, 1 << 26,
			    &window));
	}
	t->window = window;
	if (!strcmp(d->type, "mixtral")) {
		TRY(get_int(c, "num_local_experts", NULL, false, 8, 1, 4096,
			    &t->experts));
		TRY(get_int(c, "num_experts_per_tok", NULL, false, 2, 1, 4096,
			    &t->top_k));
		if (t->top_k > t->experts)
			return tp_jctx_fail(&c->j, "num_experts_per_tok",
					    "num_experts_per_tok (%lld) must "
					    "not exceed num_local_experts "
					    "(%lld)",
					    (long long)t->top_k,
					    (long long)t->experts);
	}
	return heads_divide(c, t, "hidden_size", "num_attention_heads",
			    "num_key_value_heads");
}

static enum tp_status read_gpt2(struct hf *c, struct tp_tf *t,
				int64_t *max_pos)
{
	enum tp_status st;
	int64_t inner;
	double drop;

	t->family = "gpt2";
	TRY(get_int(c, "n_embd", "hidden_size", true, 0, 1, 1 << 20,
		    &t->hidden));
	TRY(get_int(c, "n_layer", "num_hidden_layers", true, 0, 1, 1 << 16,
		    &t->layers));
	TRY(get_int(c, "n_head", "num_attention_heads", true, 0, 1, 1 << 16,
		    &t->heads));
	TRY(get_int(c, "n_inner", NULL, false, 4 * t->hidden, 1, 1 << 24,
		    &inner));
	t->ffn = inner;
	TRY(get_int(c, "vocab_size", NULL, false, 50257, 1, 1 << 28,
		    &t->vocab));
	TRY(get_int(c, "n_positions", "max_position_embeddings", false, 1024,
		    1, 1 << 26, max_pos));
	t->pos_embeddings = *max_pos;
	TRY(get_bool(c, "tie_word_embeddings", true, &t->tied_head));
	TRY(plain_act(c, "activation_function", "gelu_new", &t->mlp));
	TRY(get_num(c, "resid_pdrop", 0.1, &drop));
	t->dropout = drop > 0;
	return heads_divide(c, t, "n_embd", "n_head", NULL);
}

static enum tp_status read_bert(struct hf *c, struct tp_tf *t,
				int64_t *max_pos)
{
	enum tp_status st;
	double drop;

	t->family = "bert";
	t->post_norm = true;
	t->embed_norm = true;
	t->final_norm = false;
	t->head = has_architecture(c, "BertForPreTraining")
			  ? TP_TF_HEAD_PRETRAIN
			  : TP_TF_HEAD_MLM;
	TRY(get_int(c, "hidden_size", NULL, true, 0, 1, 1 << 20, &t->hidden));
	TRY(get_int(c, "num_hidden_layers", NULL, true, 0, 1, 1 << 16,
		    &t->layers));
	TRY(get_int(c, "num_attention_heads", NULL, true, 0, 1, 1 << 16,
		    &t->heads));
	TRY(get_int(c, "intermediate_size", NULL, false, 3072, 1, 1 << 24,
		    &t->ffn));
	TRY(get_int(c, "vocab_size", NULL, false, 30522, 1, 1 << 28,
		    &t->vocab));
	TRY(get_int(c, "max_position_embeddings", NULL, false, 512, 1,
		    1 << 26, max_pos));
	t->pos_embeddings = *max_pos;
	TRY(get_int(c, "type_vocab_size", NULL, false, 2, 0, 1 << 20,
		    &t->type_vocab));
	TRY(get_bool(c, "tie_word_embeddings", true, &t->tied_head));
	TRY(plain_act(c, "hidden_act", "gelu", &t->mlp));
	TRY(get_num(c, "hidden_dropout_prob", 0.1, &drop));
	t->dropout = drop > 0;
	return heads_divide(c, t, "hidden_size", "num_attention_heads", NULL);
}

static enum tp_status read_t5(struct hf *c, struct tp_tf *t)
{
	enum tp_status st;
	const char *ff;
	double drop;

	t->family = "t5";
	t->rmsnorm = true; /* T5's LayerNorm: scale only, no mean */
	t->attn_bias = t->out_bias = t->mlp_bias = false;
	t->pos_embeddings = 0;
	TRY(get_int(c, "d_model", NULL, true, 0, 1, 1 << 20, &t->hidden));
	TRY(get_int(c, "num_layers", NULL, true, 0, 1, 1 << 16, &t->layers));
	TRY(get_int(c, "num_heads", NULL, true, 0, 1, 1 << 16, &t->heads));
	TRY(get_int(c, "d_kv", NULL, false, 64, 1, 1 << 16, &t->head_dim));
	TRY(get_int(c, "d_ff", NULL, false, 2048, 1, 1 << 24, &t->ffn));
	TRY(get_int(c, "num_decoder_layers", NULL, false, t->layers, 1,
		    1 << 16, &t->dec_layers));
	TRY(get_int(c, "vocab_size", NULL, false, 32128, 1, 1 << 28,
		    &t->vocab));
	TRY(get_int(c, "relative_attention_num_buckets", NULL, false, 32, 0,
		    1 << 16, &t->rel_buckets));
	TRY(get_bool(c, "tie_word_embeddings", true, &t->tied_head));
	TRY(get_str(c, "feed_forward_proj", "relu", &ff));
	if (!strcmp(ff, "relu"))
		t->mlp = TP_TF_MLP_RELU;
	else if (!strcmp(ff, "gelu") || !strcmp(ff, "gelu_new"))
		t->mlp = TP_TF_MLP_GELU;
	else if (!strcmp(ff, "gated-gelu") || !strcmp(ff, "gated-gelu_new") ||
		 !strcmp(ff, "gated-relu"))
		t->mlp = TP_TF_MLP_GEGLU;
	else if (!strcmp(ff, "gated-silu"))
		t->mlp = TP_TF_MLP_SWIGLU;
	else
		return tp_jctx_fail(&c->j, "feed_forward_proj",
				    "unsupported \"%s\"; expected relu, gelu, "
				    "gated-gelu, gated-relu or gated-silu",
				    ff);
	TRY(get_num(c, "dropout_rate", 0.1, &drop));
	t->dropout = drop > 0;
	return TP_OK;
}

/* Model name: "_name_or_path"'s last component, else the file name
 * without ".json" (the folder's name for ".../config.json"). */
static void model_name(struct hf *c, const char *file, char *buf,
		       size_t size)
{
	const struct tp_json *v = tp_json_get(c->root, "_name_or_path");
	const char *s = file, *slash = strrchr(file, '/');
	size_t n;

	if (v && v->type == TP_JSON_STRING && v->str[0]) {
		s = v->str;
		slash = strrchr(s, '/');
	} else if (slash && !strcmp(slash + 1, "config.json") &&
		   slash > file) {
		const char *p = slash;
		while (p > file && p[-1] != '/')
			p--;
		snprintf(buf, size, "%.*s", (int)(slash - p), p);
		return;
	}
	if (slash && slash[1])
		s = slash + 1;
	n = strlen(s);
	if (n > 5 && !strcmp(s + n - 5, ".json"))
		n -= 5;
	snprintf(buf, size, "%.*s", (int)n, s);
	if (!buf[0] || !strcmp(buf, "-"))
		snprintf(buf, size, "hf-model");
}

enum tp_status tp_build_hf_text(const char *name, const char *text,
				size_t len, int64_t seq, int64_t batch,
				int dtype, struct tp_model *m,
				struct tp_error *err)
{
	struct tp_json_doc doc;
	struct tp_load_options o;
	struct hf c;
	struct tp_tf t;
	enum tp_status st;
	const struct tp_json *mt;
	const char *torch_dtype;
	int64_t max_pos = 0;
	char mname[128];
	bool learned_pos;

	tp_load_options_default(&o);
	st = tp_json_parse(name, text, len, 0, 0, &doc, err);
	if (st)
		return st;
	memset(&c, 0, sizeof(c));
	tp_jctx_init(&c.j, name, &o, err);
	c.root = doc.root;
	c.type = "?";
	tp_tf_default(&t);
	if (doc.root->type != TP_JSON_OBJECT) {
		st = tp_jctx_fail(&c.j, NULL,
				  "expected a HuggingFace config object, got %s",
				  tp_json_type_name(doc.root->type));
		goto out;
	}
	mt = tp_json_get(doc.root, "model_type");
	if (!mt || mt->type != TP_JSON_STRING) {
		st = tp_jctx_fail(&c.j, "model_type",
				  "%s; expected a string naming one of the "
				  "supported model types: %s",
				  mt ? "not a string" : "missing", supported);
		goto out;
	}
	c.type = mt->str;
	for (size_t i = 0; i < sizeof(llama_like) / sizeof(llama_like[0]);
	     i++)
		if (!strcmp(c.type, llama_like[i].type)) {
			st = read_llama(&c, &llama_like[i], &t, &max_pos);
			goto read;
		}
	if (!strcmp(c.type, "gpt2"))
		st = read_gpt2(&c, &t, &max_pos);
	else if (!strcmp(c.type, "bert"))
		st = read_bert(&c, &t, &max_pos);
	else if (!strcmp(c.type, "t5"))
		st = read_t5(&c, &t);
	else
		st = tp_jctx_fail(&c.j, "model_type",
				  "unsupported model_type \"%s\"; supported: %s",
				  c.type, supported);
read:
	if (st)
		goto out;
	if ((st = get_str(&c, "torch_dtype", "bfloat16", &torch_dtype)))
		goto out;
	t.dtype = dtype >= 0 ? (enum tp_dtype)dtype
			     : (enum tp_dtype)dtype_of(torch_dtype);
	learned_pos = t.pos_embeddings > 0;
	if (!strcmp(c.type, "t5")) {
		t.seq = seq > 0 ? seq : 512;
		t.dec_seq = t.seq / 4 > 0 ? t.seq / 4 : 1;
	} else if (seq > 0) {
		t.seq = seq;
	} else {
		t.seq = max_pos < HF_DEFAULT_SEQ_CAP ? max_pos
						     : HF_DEFAULT_SEQ_CAP;
	}
	if (learned_pos && t.seq > max_pos) {
		st = tp_error_set(err, TP_EUSAGE,
				  "--seq %lld exceeds the %lld learned "
				  "positions of %s (n_positions / "
				  "max_position_embeddings)",
				  (long long)t.seq, (long long)max_pos, name);
		goto out;
	}
	t.batch = batch > 0 ? batch : HF_DEFAULT_BATCH;
	model_name(&c, name, mname, sizeof(mname));
	t.name = mname;
	st = tp_build_transformer(&t, m, err);
	if (st)
		tp_error_set_file(err, name);
out:
	tp_json_doc_release(&doc);
	return st;
}

enum tp_status tp_build_hf(const char *config_path, int64_t seq,
			   int64_t batch, int dtype, struct tp_model *m,
			   struct tp_error *err)
{
	char *text = NULL, *path = NULL;
	size_t len = 0;
	enum tp_status st;
	struct stat sb;

	/* a model folder: its config.json */
	if (stat(config_path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		len = strlen(config_path);
		path = malloc(len + sizeof("/config.json"));
		if (!path)
			return tp_error_set(err, TP_ENOMEM, "out of memory");
		snprintf(path, len + sizeof("/config.json"), "%s/config.json",
			 config_path);
		config_path = path;
	}
	st = tp_file_read(config_path, 0, &text, &len, err);
	if (!st)
		st = tp_build_hf_text(config_path, text, len, seq, batch,
				      dtype, m, err);
	free(text);
	free(path);
	return st;
}
