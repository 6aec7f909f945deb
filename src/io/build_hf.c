/*
 * build_hf.c - a training graph from a HuggingFace config.json through the
 * transformer builder of build_gpt.c: the shared field getters, the
 * dispatch on model_type (the readers of each type are in
 * build_hf_types.c), the dtype, the sequence length and, for a model_type
 * that is not supported, the nearest one that is.
 *
 * Fields a config leaves out take the defaults of the transformers
 * library's config class for that model type; the size fields (hidden
 * size, layers, heads) are essential: a config without them is refused
 * rather than silently becoming the library's default model.  null counts
 * as absent, as in transformers.  Every error names the field by its JSON
 * path.
 */
#include "build.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "build_int.h"
#include "io_int.h"
#include "core/strbuf.h"
#include "io.h"
#include "json.h"

/* Default global batch (sequences) and the cap on the default sequence
 * length of decoder-only models (documented in tagplan(1)). */
#define HF_DEFAULT_BATCH 256
#define HF_DEFAULT_SEQ_CAP 4096

static bool generic_key(const char *k);

/* Record key as read (probe mode; top-level fields only, once; not the
 * generic ones). */
static void seen(struct tp_hf *c, const char *key)
{
	if (!c->probe || !key || c->root != c->top || generic_key(key))
		return;
	for (int i = 0; i < c->n_seen; i++)
		if (!strcmp(c->seen[i], key))
			return;
	if (c->n_seen < (int)(sizeof(c->seen) / sizeof(c->seen[0])))
		c->seen[c->n_seen++] = key;
}

/* The value of key (or of its alias), NULL when absent or null. */
static const struct tp_json *field(struct tp_hf *c, const char *key,
				   const char *alias, const char **used)
{
	const struct tp_json *v = tp_json_get(c->root, key);

	seen(c, key);
	if (alias && tp_json_get(c->root, alias))
		seen(c, alias);
	*used = key;
	if ((!v || v->type == TP_JSON_NULL) && alias) {
		v = tp_json_get(c->root, alias);
		if (v && v->type != TP_JSON_NULL)
			*used = alias;
	}
	return v && v->type != TP_JSON_NULL ? v : NULL;
}

bool tp_hf_has(struct tp_hf *c, const char *key)
{
	const char *used;

	return field(c, key, NULL, &used) != NULL;
}

enum tp_status tp_hf_int(struct tp_hf *c, const char *key, const char *alias,
			 bool essential, int64_t def, int64_t min, int64_t max,
			 int64_t *out)
{
	const char *used;
	const struct tp_json *v = field(c, key, alias, &used);

	if (c->probe) {
		*out = def < min ? min : def > max ? max : def;
		return TP_OK;
	}
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

/*
 * The ranges of tp_hf_range: generous bounds that only refuse what no
 * network could have (the values published configs give are far inside;
 * tests/data/hf spans them).  An open bound is one the value must not
 * reach.  `what` says what the field is and its usual values: the fix.
 */
static const struct {
	double lo, hi;
	bool lo_open, hi_open;
	const char *what;
} hf_ranges[TP_HF_RANGE_COUNT] = {
    /* torch.nn.Dropout refuses p outside [0, 1] */
    [TP_HF_DROPOUT] = {0, 1, false, false,
		       "a dropout probability, usually 0 or 0.1"},
    /* added to the variance under the square root: 0 divides by zero
     * on a constant row, 1 or more swamps unit-variance activations;
     * published: 1e-12 (BERT) to 1e-5 */
    [TP_HF_EPS] = {0, 1, true, true,
		   "the norms' epsilon, usually 1e-5 or 1e-6"},
    /* frequencies are base^(-2i/d): the base must be positive; published
     * bases run from 1e4 to 1e7 (Qwen2.5-1M), 1e12 leaves room */
    [TP_HF_ROPE_BASE] = {0, 1e12, true, false,
			 "RoPE's base frequency, usually 10000 to 1e7"},
    /* positions are divided by it; published: 2 to 40 (DeepSeek-V3's
     * YaRN) */
    [TP_HF_ROPE_FACTOR] = {0, 1e6, true, false,
			   "the RoPE scaling factor, usually 2 to 40"},
    /* cap * tanh(x / cap): 0 divides by zero; Gemma 2: 50 and 30 */
    [TP_HF_SOFTCAP] = {0, 1e6, true, false,
		       "a logit soft-cap, usually 30 or 50; null for "
		       "none"},
    /* 0 would zero the routed experts' output; DeepSeek-V2: 16, V3: 2.5 */
    [TP_HF_ROUTER_SCALE] = {0, 1e6, true, false,
			    "the routed experts' scale, usually 1 to 16"},
};

bool tp_hf_in_range(enum tp_hf_range r, double x)
{
	assert(r >= 0 && r < TP_HF_RANGE_COUNT);
	return x >= hf_ranges[r].lo && x <= hf_ranges[r].hi &&
	       !(hf_ranges[r].lo_open && x == hf_ranges[r].lo) &&
	       !(hf_ranges[r].hi_open && x == hf_ranges[r].hi);
}

void tp_hf_range_text(enum tp_hf_range r, char *buf, size_t size)
{
	double lo = hf_ranges[r].lo, hi = hf_ranges[r].hi;

	assert(r >= 0 && r < TP_HF_RANGE_COUNT);
	if (!hf_ranges[r].lo_open && !hf_ranges[r].hi_open)
		snprintf(buf, size, "a number from %g to %g (%s)", lo, hi,
			 hf_ranges[r].what);
	else
		snprintf(buf, size, "a number %s %g and %s %g (%s)",
			 hf_ranges[r].lo_open ? "above" : "at least", lo,
			 hf_ranges[r].hi_open ? "below" : "at most", hi,
			 hf_ranges[r].what);
}

enum tp_status tp_hf_num(struct tp_hf *c, const char *key, double def,
			 enum tp_hf_range range, double *out)
{
	const char *used;
	const struct tp_json *v = field(c, key, NULL, &used);
	char want[160];

	if (!v || c->probe) {
		*out = def;
		return TP_OK;
	}
	tp_hf_range_text(range, want, sizeof(want));
	if (v->type != TP_JSON_NUMBER)
		return tp_jctx_fail(&c->j, used, "expected %s, got %s", want,
				    tp_json_type_name(v->type));
	if (!tp_hf_in_range(range, v->num))
		return tp_jctx_fail(&c->j, used, "expected %s, got %.15g", want,
				    v->num);
	*out = v->num;
	return TP_OK;
}

enum tp_status tp_hf_bool(struct tp_hf *c, const char *key, bool def,
			  bool *out)
{
	const char *used;
	const struct tp_json *v = field(c, key, NULL, &used);

	if (!v || c->probe) {
		*out = def;
		return TP_OK;
	}
	if (v->type != TP_JSON_BOOL)
		return tp_jctx_fail(&c->j, used, "expected true or false, got %s",
				    tp_json_type_name(v->type));
	*out = v->b;
	return TP_OK;
}

enum tp_status tp_hf_str(struct tp_hf *c, const char *key, const char *def,
			 const char **out)
{
	const char *used;
	const struct tp_json *v = field(c, key, NULL, &used);

	if (!v || (c->probe && v->type != TP_JSON_STRING)) {
		*out = def;
		return TP_OK;
	}
	if (v->type != TP_JSON_STRING)
		return tp_jctx_fail(&c->j, used, "expected a string, got %s",
				    tp_json_type_name(v->type));
	*out = v->str;
	return TP_OK;
}

enum tp_status tp_hf_obj(struct tp_hf *c, const char *key,
			 const struct tp_json **out)
{
	const char *used;
	const struct tp_json *v = field(c, key, NULL, &used);

	*out = NULL;
	if (!v || (c->probe && v->type != TP_JSON_OBJECT))
		return TP_OK;
	if (v->type != TP_JSON_OBJECT)
		return tp_jctx_fail(&c->j, used, "expected an object, got %s",
				    tp_json_type_name(v->type));
	*out = v;
	return TP_OK;
}

enum tp_status tp_hf_array(struct tp_hf *c, const char *key,
			   const struct tp_json **out)
{
	const char *used;
	const struct tp_json *v = field(c, key, NULL, &used);

	*out = NULL;
	if (!v || (c->probe && v->type != TP_JSON_ARRAY))
		return TP_OK;
	if (v->type != TP_JSON_ARRAY)
		return tp_jctx_fail(&c->j, used, "expected an array, got %s",
				    tp_json_type_name(v->type));
	*out = v;
	return TP_OK;
}

/* HF activation names -> tp_act, plain (not gated). */
static int plain_act_of(const char *s)
{
	static const char *const tanh_forms[] = {
		"gelu_new", "gelu_fast", "gelu_pytorch_tanh", "gelu_accurate",
		NULL};

	for (int i = 0; tanh_forms[i]; i++)
		if (!strcmp(s, tanh_forms[i]))
			return TP_ACT_GELU_TANH;
	if (!strcmp(s, "quick_gelu"))
		return TP_ACT_QUICK_GELU;
	if (!strncmp(s, "gelu", 4))
		return TP_ACT_GELU;
	if (!strcmp(s, "relu"))
		return TP_ACT_RELU;
	if (!strcmp(s, "silu") || !strcmp(s, "swish"))
		return TP_ACT_SILU;
	if (!strcmp(s, "tanh"))
		return TP_ACT_TANH;
	return TP_ACT_UNKNOWN;
}

enum tp_status tp_hf_gated_act(struct tp_hf *c, const char *key,
			       const char *alias, const char *def,
			       enum tp_act *out)
{
	const char *act = def, *used;
	const struct tp_json *v = field(c, key, alias, &used);
	int a;

	if (v && v->type != TP_JSON_STRING && !c->probe)
		return tp_jctx_fail(&c->j, used, "expected a string, got %s",
				    tp_json_type_name(v->type));
	if (v && v->type == TP_JSON_STRING)
		act = v->str;
	switch (a = plain_act_of(act)) {
	case TP_ACT_SILU:
		*out = TP_ACT_SWIGLU;
		return TP_OK;
	case TP_ACT_RELU:
		*out = TP_ACT_REGLU;
		return TP_OK;
	case TP_ACT_GELU:
	case TP_ACT_GELU_TANH:
		*out = a == TP_ACT_GELU ? TP_ACT_GEGLU : TP_ACT_GEGLU_TANH;
		return TP_OK;
	default:
		if (c->probe) {
			*out = TP_ACT_SWIGLU;
			return TP_OK;
		}
		return tp_jctx_fail(&c->j, used,
				    "unsupported activation \"%s\"; expected "
				    "silu, swish, relu or gelu*",
				    act);
	}
}

enum tp_status tp_hf_plain_act(struct tp_hf *c, const char *key,
			       const char *def, enum tp_act *out)
{
	const char *act;
	enum tp_status st = tp_hf_str(c, key, def, &act);
	int a;

	if (st)
		return st;
	a = plain_act_of(act);
	if (a == TP_ACT_UNKNOWN && !c->probe)
		return tp_jctx_fail(&c->j, key,
				    "unsupported activation \"%s\"; expected "
				    "relu, gelu*, quick_gelu, silu, swish or "
				    "tanh",
				    act);
	*out = a == TP_ACT_UNKNOWN ? TP_ACT_GELU : (enum tp_act)a;
	return TP_OK;
}

enum tp_status tp_hf_rope(struct tp_hf *c, double theta_def, struct tp_tf *t)
{
	const struct tp_json *rs;
	const char *type = NULL;
	enum tp_status st;
	size_t old;

	TP_HF_TRY(tp_hf_num(c, "rope_theta", theta_def, TP_HF_ROPE_BASE,
			    &t->info.rope_theta));
	TP_HF_TRY(tp_hf_obj(c, "rope_scaling", &rs));
	if (!rs)
		return TP_OK;
	/* its members, at $.rope_scaling.KEY */
	old = tp_jctx_push_key(&c->j, "rope_scaling");
	c->root = rs;
	st = tp_hf_str(c, "rope_type", NULL, &type);
	if (!st && !type)
		st = tp_hf_str(c, "type", "", &type);
	if (!st)
		st = tp_hf_num(c, "factor", 0, TP_HF_ROPE_FACTOR,
			       &t->info.rope_scaling_factor);
	c->root = c->top;
	tp_jctx_pop(&c->j, old);
	if (st)
		return st;
	if (strlen(type) >= sizeof(t->info.rope_scaling))
		return tp_jctx_fail(&c->j, "rope_scaling",
				    "rope scaling type \"%.40s\" is longer "
				    "than %zu bytes",
				    type, sizeof(t->info.rope_scaling) - 1);
	snprintf(t->info.rope_scaling, sizeof(t->info.rope_scaling), "%s",
		 type);
	return TP_OK;
}

enum tp_status tp_hf_heads_divide(struct tp_hf *c, const struct tp_tf *t,
				  const char *hidden_key, const char *heads_key,
				  const char *kv_key)
{
	char hint[200];

	if (c->probe)
		return TP_OK;
	if (t->head_dim == 0 && t->hidden % t->heads) {
		tp_tf_divide_hint(hint, sizeof(hint), t->heads, t->hidden,
				  heads_key, hidden_key);
		return tp_jctx_fail(&c->j, heads_key,
				    "%s (%lld) must divide %s (%lld): %s",
				    heads_key, (long long)t->heads, hidden_key,
				    (long long)t->hidden, hint);
	}
	if (kv_key && t->kv_heads > 0 &&
	    (t->kv_heads > t->heads || t->heads % t->kv_heads)) {
		tp_tf_divide_hint(hint, sizeof(hint), t->kv_heads, t->heads,
				  kv_key, heads_key);
		return tp_jctx_fail(&c->j, kv_key,
				    "%s (%lld) must divide %s (%lld): %s",
				    kv_key, (long long)t->kv_heads, heads_key,
				    (long long)t->heads, hint);
	}
	return TP_OK;
}

/* "llama, mistral, ..." */
static void supported_list(char *buf, size_t size)
{
	size_t k = 0;

	buf[0] = '\0';
	for (int i = 0; tp_hf_types[i].type && k < size; i++) {
		int w = snprintf(buf + k, size - k, "%s%s", i ? ", " : "",
				 tp_hf_types[i].type);
		if (w < 0)
			break;
		k += (size_t)w;
	}
}

/* Fields every config may carry that say nothing about the network. */
static bool generic_key(const char *k)
{
	static const char *const generic[] = {
		"model_type",	    "architectures",	    "torch_dtype",
		"dtype",	    "transformers_version", "_name_or_path",
		"bos_token_id",	    "eos_token_id",	    "pad_token_id",
		"initializer_range", "use_cache",	    "auto_map",
		"id2label",	    "label2id",		    "tokenizer_class",
		"return_dict",	    "quantization_config", "note",
		NULL};

	for (int i = 0; generic[i]; i++)
		if (!strcmp(k, generic[i]))
			return true;
	return false;
}

static bool in_seen(const struct tp_hf *p, const char *k)
{
	for (int i = 0; i < p->n_seen; i++)
		if (!strcmp(p->seen[i], k))
			return true;
	return false;
}

/* Append up to 8 names to buf ("a, b, c and 3 more"). */
static void list_names(char *buf, size_t size, const char *const *names,
		       int n)
{
	size_t k = strlen(buf);

	for (int i = 0; i < n && i < 8 && k < size; i++) {
		int w = snprintf(buf + k, size - k, "%s%s", i ? ", " : "",
				 names[i]);
		if (w < 0)
			return;
		k += (size_t)w;
	}
	if (n > 8 && k < size)
		snprintf(buf + k, size - k, " and %d more", n - 8);
	if (n == 0 && k < size)
		snprintf(buf + k, size - k, "none");
}

/* Length of the common prefix of two model_type names. */
static size_t common_prefix(const char *a, const char *b)
{
	size_t n = 0;

	while (a[n] && a[n] == b[n])
		n++;
	return n;
}

/* Does the config's "architectures" name a causal LM (a decoder)? */
static bool causal_lm(const struct tp_json *root)
{
	const struct tp_json *a = tp_json_get(root, "architectures");

	for (size_t i = 0; a && a->type == TP_JSON_ARRAY && i < a->n; i++) {
		const char *s = a->items[i]->type == TP_JSON_STRING
					? a->items[i]->str
					: "";
		size_t n = strlen(s);
		if ((n > 11 && !strcmp(s + n - 11, "ForCausalLM")) ||
		    strstr(s, "LMHead"))
			return true;
	}
	return false;
}

/*
 * An unsupported model_type: run every reader in probe mode to learn the
 * fields it reads and take the one that reads most of the config's
 * fields (fewest it would miss breaking ties; a model_type sharing at
 * least 4 leading characters first; only decoders when "architectures"
 * names a causal LM); say which fields differ.
 */
static enum tp_status unsupported_type(struct tp_hf *c)
{
	const struct tp_json *root = c->top;
	const char *extra[96], *missing[96];
	int best = -1, n_extra = 0, n_missing = 0, n_cfg = 0;
	double best_score = -1;
	bool decoder = causal_lm(root);
	struct tp_hf p;
	char list[512], diff[768];

	for (size_t i = 0; i < root->n; i++)
		n_cfg += !generic_key(root->items[i]->key);
	for (int k = 0; tp_hf_types[k].type; k++) {
		struct tp_load_options o;
		struct tp_error scratch;
		struct tp_tf t;
		int64_t mp = 0;
		int inter = 0;
		double score;

		tp_load_options_default(&o);
		memset(&p, 0, sizeof(p));
		tp_jctx_init(&p.j, c->j.file, &o, &scratch);
		p.root = p.top = root;
		p.type = tp_hf_types[k].type;
		p.probe = true;
		tp_tf_default(&t);
		(void)tp_hf_types[k].read(&p, &t, &mp);
		if (decoder && (t.head != TP_TF_HEAD_LM || t.dec_layers > 0))
			continue;
		for (size_t i = 0; i < root->n; i++)
			inter += !generic_key(root->items[i]->key) &&
				 in_seen(&p, root->items[i]->key);
		score = (inter - 0.01 * (p.n_seen - inter)) /
			(n_cfg > 0 ? n_cfg : 1);
		if (common_prefix(c->type, p.type) >= 4)
			score += 1;
		if (score > best_score) {
			best_score = score;
			best = k;
			n_extra = n_missing = 0;
			for (size_t i = 0; i < root->n; i++) {
				const char *key = root->items[i]->key;
				if (!generic_key(key) && !in_seen(&p, key) &&
				    n_extra < 96)
					extra[n_extra++] = key;
			}
			for (int i = 0; i < p.n_seen; i++)
				if (!tp_json_get(root, p.seen[i]) &&
				    n_missing < 96)
					missing[n_missing++] = p.seen[i];
		}
	}
	assert(best >= 0);
	supported_list(list, sizeof(list));
	/* the nearest type cannot read the config (it lacks a size the
	   type needs: Mamba's attention heads): renaming model_type would
	   not build it, so say so instead of proposing it */
	{
		struct tp_load_options o;
		struct tp_error scratch;
		struct tp_tf t;
		int64_t mp = 0;
		const char *key;

		tp_load_options_default(&o);
		tp_error_clear(&scratch);
		memset(&p, 0, sizeof(p));
		tp_jctx_init(&p.j, c->j.file, &o, &scratch);
		p.root = p.top = root;
		p.type = tp_hf_types[best].type;
		tp_tf_default(&t);
		if (tp_hf_types[best].read(&p, &t, &mp) != TP_OK &&
		    strstr(scratch.msg, "missing essential field") &&
		    (key = strrchr(scratch.path, '.')) != NULL)
			return tp_jctx_fail(
			    &c->j, "model_type",
			    "unsupported model_type \"%.60s\": no supported "
			    "type reads this config (the nearest by its "
			    "fields, \"%s\", needs \"%s\", which it lacks: "
			    "tagplan builds attention transformers and the "
			    "zoo's CNNs); supported: %s",
			    c->type, tp_hf_types[best].type, key + 1, list);
	}
	snprintf(diff, sizeof(diff), "its fields that %s does not read: ",
		 tp_hf_types[best].type);
	list_names(diff, sizeof(diff), extra, n_extra);
	snprintf(diff + strlen(diff), sizeof(diff) - strlen(diff),
		 "; fields %s reads that it lacks: ", tp_hf_types[best].type);
	list_names(diff, sizeof(diff), missing, n_missing);
	return tp_jctx_fail(&c->j, "model_type",
			    "unsupported model_type \"%.60s\"; the nearest "
			    "supported is \"%s\" (%s); if the architecture "
			    "is the same, set \"model_type\": \"%s\"; "
			    "supported: %s",
			    c->type, tp_hf_types[best].type, diff,
			    tp_hf_types[best].type, list);
}

/* The training dtype from torch_dtype (or transformers' newer "dtype"):
 * the three tagplan models; anything else (int8, float8, ...) is an
 * error, since a quantised checkpoint says nothing of how it trains. */
static enum tp_status config_dtype(struct tp_hf *c, int *out)
{
	static const struct {
		const char *name;
		enum tp_dtype d;
	} names[] = {{"bfloat16", TP_DTYPE_BF16}, {"bf16", TP_DTYPE_BF16},
		     {"float16", TP_DTYPE_FP16},  {"fp16", TP_DTYPE_FP16},
		     {"half", TP_DTYPE_FP16},	  {"float32", TP_DTYPE_FP32},
		     {"fp32", TP_DTYPE_FP32},	  {"float", TP_DTYPE_FP32}};
	const char *used, *s;
	const struct tp_json *v = field(c, "torch_dtype", "dtype", &used);

	if (!v) {
		*out = TP_DTYPE_BF16;
		return TP_OK;
	}
	if (v->type != TP_JSON_STRING)
		return tp_jctx_fail(&c->j, used, "expected a string, got %s",
				    tp_json_type_name(v->type));
	s = v->str;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i].name)) {
			*out = (int)names[i].d;
			return TP_OK;
		}
	return tp_jctx_fail(&c->j, used,
			    "\"%.40s\" is not a dtype tagplan trains in "
			    "(bfloat16, float16 or float32); give the "
			    "training dtype with --dtype bf16|fp16|fp32|fp8",
			    s);
}

/* Model name: "_name_or_path"'s last component, else the file name
 * without ".json" (the folder's name for ".../config.json"). */
static void model_name(const struct tp_json *root, const char *file,
		       char *buf, size_t size)
{
	const struct tp_json *v = tp_json_get(root, "_name_or_path");
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

/* --seq beyond the context length of a model without a learned position
 * table (RoPE, ALiBi): legitimate (RoPE scaling, YaRN, long-context
 * fine-tuning), but positions the model was not trained for, so a warning
 * naming the config's field and its value.  A config with rope_scaling
 * gives its scaled length there (Llama 3.1 131072, DeepSeek-V3 163840 =
 * 40 x 4096), so the warning holds for it too. */
static void seq_beyond(struct tp_hf *c, const struct tp_tf *t,
		       int64_t max_pos, const char *name,
		       struct tp_strbuf *warnings)
{
	static const char *const keys[] = {"max_position_embeddings",
					   "n_positions", "max_seq_len",
					   "seq_length", NULL};
	const char *key = NULL;

	if (!warnings)
		return;
	for (int i = 0; keys[i] && !key; i++) {
		const struct tp_json *v = tp_json_get(c->root, keys[i]);
		if (!v && c->top != c->root)
			v = tp_json_get(c->top, keys[i]);
		if (v && v->type == TP_JSON_NUMBER && v->num == (double)max_pos)
			key = keys[i];
	}
	if (key)
		tp_strbuf_addf(warnings,
			       "--seq %lld is beyond %s %lld of %s, the "
			       "positions the model was trained for: "
			       "training there takes RoPE scaling or "
			       "long-context fine-tuning (the plan prices "
			       "the %lld tokens as given)\n",
			       (long long)t->seq, key, (long long)max_pos, name,
			       (long long)t->seq);
	else
		tp_strbuf_addf(warnings,
			       "--seq %lld is beyond %lld, the context length "
			       "the transformers library gives %s (it has no "
			       "max_position_embeddings): training there "
			       "takes RoPE scaling or long-context "
			       "fine-tuning (the plan prices the %lld tokens "
			       "as given)\n",
			       (long long)t->seq, (long long)max_pos, name,
			       (long long)t->seq);
}

/* The sequence: --seq, else the context length capped; T5 and vision
 * transformers have their own rules. */
static enum tp_status choose_seq(struct tp_hf *c, struct tp_tf *t, int64_t seq,
				 int64_t max_pos, const char *name,
				 struct tp_strbuf *warnings)
{
	if (t->patch_size > 0) {
		if (seq > 0)
			return tp_error_set(
				c->j.err, TP_EUSAGE,
				"--seq does not apply to the vision "
				"transformer %s: its sequence is the %lld "
				"patches of the image and the CLS token "
				"(image_size / patch_size squared, + 1)",
				name, (long long)(t->seq - 1));
		return TP_OK;
	}
	if (!strcmp(c->type, "t5")) {
		t->seq = seq > 0 ? seq : 512;
		t->dec_seq = t->seq / 4 > 0 ? t->seq / 4 : 1;
	} else if (seq > 0) {
		t->seq = seq;
	} else {
		t->seq = max_pos < HF_DEFAULT_SEQ_CAP ? max_pos
						      : HF_DEFAULT_SEQ_CAP;
	}
	if (t->pos_embeddings == 0 && seq > 0 && max_pos > 0 &&
	    t->seq > max_pos && strcmp(c->type, "t5") != 0)
		seq_beyond(c, t, max_pos, name, warnings);
	if (t->pos_embeddings > 0 && t->seq > max_pos)
		return tp_error_set(c->j.err, TP_EUSAGE,
				    "--seq %lld exceeds the %lld learned "
				    "positions of %s (n_positions / "
				    "max_position_embeddings): give --seq "
				    "%lld or less",
				    (long long)t->seq, (long long)max_pos, name,
				    (long long)max_pos);
	return TP_OK;
}

/* Find the reader of c->type and run it. */
static enum tp_status read_config(struct tp_hf *c, struct tp_tf *t,
				  int64_t *max_pos)
{
	if (!strcmp(c->type, "gemma3"))
		return tp_jctx_fail(
			&c->j, "model_type",
			"\"gemma3\" is the multimodal Gemma 3 (a SigLIP "
			"vision tower and a language model); tagplan builds "
			"the language model alone: write its \"text_config\" "
			"object as a config of its own with \"model_type\": "
			"\"gemma3_text\"");
	for (int i = 0; tp_hf_types[i].type; i++)
		if (!strcmp(c->type, tp_hf_types[i].type))
			return tp_hf_types[i].read(c, t, max_pos);
	return unsupported_type(c);
}

static enum tp_status build_text(const char *name, const char *text,
				 size_t len, const struct tp_hf_options *ho,
				 struct tp_model *m, struct tp_error *err)
{
	const int64_t seq = ho->seq, batch = ho->batch;
	const int dtype = ho->dtype;
	struct tp_json_doc doc;
	struct tp_load_options o;
	struct tp_hf c;
	struct tp_tf t;
	enum tp_status st;
	const struct tp_json *mt, *fmt;
	int64_t max_pos = 0;
	int cfg_dtype = TP_DTYPE_BF16;
	char mname[128], list[512];

	tp_load_options_default(&o);
	st = tp_json_parse(name, text, len, 0, 0, &doc, err);
	if (st)
		return st;
	memset(&c, 0, sizeof(c));
	tp_jctx_init(&c.j, name, &o, err);
	c.root = c.top = doc.root;
	c.type = "?";
	tp_tf_default(&t);
	if (doc.root->type != TP_JSON_OBJECT) {
		st = tp_jctx_fail(&c.j, NULL,
				  "expected a HuggingFace config object, got %s",
				  tp_json_type_name(doc.root->type));
		goto out;
	}
	mt = tp_json_get(doc.root, "model_type");
	fmt = tp_json_get(doc.root, "format");
	if (!mt && fmt && fmt->type == TP_JSON_STRING &&
	    !strncmp(fmt->str, "tagplan-", 8)) {
		/* a file of tagplan's own given as hf: */
		st = tp_jctx_fail(&c.j, "format",
				  "this is a tagplan file (\"%.40s\"), not a "
				  "HuggingFace config: %s",
				  fmt->str,
				  !strncmp(fmt->str, "tagplan-model/", 14)
				      ? "give it as it is to plan, simulate "
					"and export (-m FILE)"
				      : "give hf: a model's config.json");
		goto out;
	}
	if (!mt || mt->type != TP_JSON_STRING) {
		supported_list(list, sizeof(list));
		st = tp_jctx_fail(&c.j, "model_type",
				  "%s; expected a string naming one of the "
				  "supported model types: %s",
				  mt ? "not a string" : "missing", list);
		goto out;
	}
	c.type = mt->str;
	if ((st = read_config(&c, &t, &max_pos)))
		goto out;
	if (dtype < 0 && (st = config_dtype(&c, &cfg_dtype)))
		goto out;
	t.dtype = dtype >= 0 ? (enum tp_dtype)dtype : (enum tp_dtype)cfg_dtype;
	if (t.pos_embeddings == 0 && t.patch_size == 0)
		t.info.max_positions = max_pos;
	model_name(doc.root, name, mname, sizeof(mname));
	if ((st = choose_seq(&c, &t, seq, max_pos, name, ho->warnings)))
		goto out;
	t.batch = batch > 0 ? batch : HF_DEFAULT_BATCH;
	t.name = mname;
	st = tp_build_transformer(&t, m, err);
	if (st)
		tp_error_set_file(err, name);
out:
	tp_json_doc_release(&doc);
	return st;
}

enum tp_status tp_build_hf_text(const char *name, const char *text,
				size_t len, int64_t seq, int64_t batch,
				int dtype, struct tp_model *m,
				struct tp_error *err)
{
	struct tp_hf_options ho = {seq, batch, dtype, NULL};

	return build_text(name, text, len, &ho, m, err);
}

enum tp_status tp_build_hf(const char *config_path, int64_t seq,
			   int64_t batch, int dtype, struct tp_model *m,
			   struct tp_error *err)
{
	struct tp_hf_options ho = {seq, batch, dtype, NULL};

	return tp_build_hf_opts(config_path, &ho, m, err);
}

/* The length of path without its "/config.json". */
static size_t len_dir(const char *path)
{
	return strlen(path) - strlen("/config.json");
}

/* A folder (path is "DIR/config.json", dir_len long) without
 * config.json: TP_EUSAGE about the folder, naming what to give: its .json
 * files when it has some (a folder of configs saved under their model's
 * name), else a model's folder or its config file. */
static enum tp_status folder_without_config(const char *path, size_t dir_len,
					    struct tp_error *err)
{
	char dir[4096], names[400], first[128];
	int n;

	snprintf(dir, sizeof(dir), "%.*s", (int)dir_len, path);
	n = tp_io_json_names(dir, names, sizeof(names));
	snprintf(first, sizeof(first), "%.*s", (int)strcspn(names, ","),
		 names);
	if (n > 3)
		tp_error_set(err, TP_EUSAGE,
			     "the folder has no config.json; it holds %s and "
			     "%d more .json: give hf: one of them (hf:%s/%s) "
			     "or the folder of a HuggingFace model",
			     names, n - 3, dir, first);
	else if (n > 0)
		tp_error_set(err, TP_EUSAGE,
			     "the folder has no config.json; it holds %s: "
			     "give hf: one of them (hf:%s/%s) or the folder "
			     "of a HuggingFace model",
			     names, dir, first);
	else
		tp_error_set(err, TP_EUSAGE,
			     "the folder has no config.json: give hf: the "
			     "folder of a HuggingFace model, or the config "
			     "file itself (hf:PATH/NAME.json)");
	if (err) /* the folder, not the config.json it lacks */
		err->file[0] = '\0';
	tp_error_set_file(err, dir);
	return TP_EUSAGE;
}

enum tp_status tp_build_hf_opts(const char *config_path,
				const struct tp_hf_options *ho,
				struct tp_model *m, struct tp_error *err)
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
		/* "hf:DIR/" as "DIR/config.json", not "DIR//config.json" */
		while (len > 1 && config_path[len - 1] == '/')
			len--;
		snprintf(path, len + sizeof("/config.json"), "%.*s/config.json",
			 (int)len, config_path);
		config_path = path;
	}
	st = tp_file_read(config_path, 0, &text, &len, err);
	if (st == TP_EIO && path)
		st = folder_without_config(path, len_dir(path), err);
	if (!st)
		st = build_text(config_path, text, len, ho, m, err);
	free(text);
	free(path);
	return st;
}
