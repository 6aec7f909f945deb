/*
 * build_gpt.c - the graph-building context and the one transformer builder
 * (decoder-only, encoder-only, encoder-decoder, dense or mixture of
 * experts) behind `tagplan model gpt`, `model hf:` and the zoo.
 *
 * Granularity: one op per Megatron sub-layer, so tensor parallelism can
 * split each op its own way and pipeline parallelism can cut between
 * blocks.  Costs per sample (one sequence); the activation bytes kept for
 * backward follow Korthikanti et al. (2022) so that a GPT block totals
 * 34*s*h + 5*a*s^2 bytes in 16-bit, 10*s*h of it replicated under tensor
 * parallelism and the rest split (see build.h).
 */
#include "build.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build_int.h"

void tp_gb_init(struct tp_gb *g, struct tp_model *m, struct tp_error *err)
{
	g->m = m;
	g->err = err;
	g->st = TP_OK;
	g->e = tp_dtype_bytes(m->dtype);
}

uint32_t tp_gb_op(struct tp_gb *g, const char *prefix, const char *name,
		  const struct tp_gb_op *o)
{
	struct tp_op op = tp_op_default();
	char buf[256];
	uint32_t idx;

	if (g->st)
		return TP_NONE;
	snprintf(buf, sizeof(buf), "%s%s", prefix ? prefix : "", name);
	op.name = buf;
	op.kind = o->kind;
	op.tp_split = o->split;
	op.tp_units = o->units;
	op.layer = o->layer;
	op.flop = o->flop;
	op.backward_flop = o->backward_flop < 0 ? 2 * o->flop : o->backward_flop;
	op.param_bytes = o->params * g->e;
	op.out_bytes = o->out_bytes;
	op.saved_bytes = o->saved_bytes;
	op.mem_bytes = o->mem_bytes;
	op.selective_recompute = o->selective;
	g->st = tp_model_add_op(g->m, &op, &idx, g->err);
	return g->st ? TP_NONE : idx;
}

void tp_gb_edge(struct tp_gb *g, uint32_t a, uint32_t b, double bytes)
{
	if (g->st || a == TP_NONE || b == TP_NONE)
		return;
	g->st = tp_model_add_edge(g->m, a, b, bytes, g->err);
}

void tp_gb_name(struct tp_gb *g, const char *name)
{
	const char *n;

	if (g->st)
		return;
	n = tp_arena_strdup(&g->m->arena, name);
	if (!n)
		g->st = tp_error_set(g->err, TP_ENOMEM, "out of memory");
	else
		g->m->name = n;
}

void tp_tf_default(struct tp_tf *t)
{
	memset(t, 0, sizeof(*t));
	t->name = "gpt";
	t->family = "gpt";
	t->dtype = TP_DTYPE_BF16;
	t->attn_bias = t->out_bias = t->mlp_bias = true;
	t->dropout = true;
	t->final_norm = true;
	t->tied_head = true;
	t->mlp = TP_TF_MLP_GELU;
	t->head = TP_TF_HEAD_LM;
}

/* An op template with every figure zero. */
static struct tp_gb_op opt(enum tp_op_kind kind, enum tp_tp_split split,
			   uint32_t units, int32_t layer)
{
	struct tp_gb_op o;

	memset(&o, 0, sizeof(o));
	o.kind = kind;
	o.split = split;
	o.units = units;
	o.layer = layer;
	o.backward_flop = -1;
	return o;
}

/* Everything a block builder needs besides the config. */
struct tf_ctx {
	const struct tp_tf *t;
	struct tp_gb g;
	double e;           /* bytes per element */
	double h, qd, kvd;  /* hidden, query width, key/value width */
	uint32_t head_units; /* tensor-parallel units of the head-split ops */
};

/* A LayerNorm/RMSNorm over s tokens: saves its input and its output
 * (the next GEMM's input): 2 * e * s * h. */
static uint32_t add_norm(struct tf_ctx *c, const char *pre, const char *name,
			 int32_t layer, double s, double extra_saved)
{
	struct tp_gb_op o = opt(TP_OP_NORM, TP_SPLIT_NONE, 0, layer);

	o.params = c->t->rmsnorm ? c->h : 2 * c->h;
	o.flop = (c->t->rmsnorm ? 4 : 5) * s * c->h;
	o.out_bytes = c->e * s * c->h;
	o.saved_bytes = 2 * c->e * s * c->h + extra_saved;
	o.mem_bytes = 2 * c->e * s * c->h;
	return tp_gb_op(&c->g, pre, name, &o);
}

/* Dropout (if any) and the residual add: keeps the 1-byte dropout mask. */
static uint32_t add_residual(struct tf_ctx *c, const char *pre,
			     const char *name, int32_t layer, double s)
{
	struct tp_gb_op o = opt(TP_OP_ELEMENTWISE, TP_SPLIT_NONE, 0, layer);
	double sh = s * c->h;

	o.flop = (c->t->dropout ? 2 : 1) * sh;
	o.out_bytes = c->e * sh;
	o.saved_bytes = c->t->dropout ? sh : 0;
	o.mem_bytes = 3 * c->e * sh + (c->t->dropout ? sh : 0);
	return tp_gb_op(&c->g, pre, name, &o);
}

/*
 * Attention: the Q(KV) projection, the core and the output projection.
 * sq query tokens attend to sk key tokens (sk = sq for self-attention).
 * When kv_src != TP_NONE (cross-attention) K and V are projected from
 * kv_src's output (sk tokens) by a separate op.  Returns the projection.
 */
static uint32_t add_attention(struct tf_ctx *c, const char *pre,
			      const char *tag, int32_t layer, double sq,
			      double sk, uint32_t q_src, uint32_t kv_src,
			      double rel_bias_params)
{
	const struct tp_tf *t = c->t;
	double e = c->e, h = c->h, qd = c->qd, kvd = c->kvd;
	double a = (double)t->heads, keys = sk;
	struct tp_gb_op o;
	uint32_t q, kv = TP_NONE, core, proj;
	char name[64];

	if (t->window > 0 && kv_src == TP_NONE && keys > (double)t->window)
		keys = (double)t->window;
	if (kv_src == TP_NONE) {
		/* fused QKV projection (column parallel) */
		double w = qd + 2 * kvd;
		o = opt(TP_OP_MATMUL, TP_SPLIT_COLUMN, c->head_units, layer);
		o.params = h * w + (t->attn_bias ? w : 0);
		o.flop = 2 * sq * h * w;
		o.out_bytes = e * sq * w;
		o.saved_bytes = e * sq * w; /* Q, K and V */
		o.mem_bytes = e * sq * (h + w);
		snprintf(name, sizeof(name), "%sqkv", tag);
		q = tp_gb_op(&c->g, pre, name, &o);
		tp_gb_edge(&c->g, q_src, q, e * sq * h);
	} else {
		o = opt(TP_OP_MATMUL, TP_SPLIT_COLUMN, c->head_units, layer);
		o.params = h * qd + (t->attn_bias ? qd : 0);
		o.flop = 2 * sq * h * qd;
		o.out_bytes = e * sq * qd;
		o.saved_bytes = e * sq * qd;
		o.mem_bytes = e * sq * (h + qd);
		snprintf(name, sizeof(name), "%sq", tag);
		q = tp_gb_op(&c->g, pre, name, &o);
		tp_gb_edge(&c->g, q_src, q, e * sq * h);
		o = opt(TP_OP_MATMUL, TP_SPLIT_COLUMN, c->head_units, layer);
		o.params = h * 2 * kvd + (t->attn_bias ? 2 * kvd : 0);
		o.flop = 2 * sk * h * 2 * kvd;
		o.out_bytes = e * sk * 2 * kvd;
		o.saved_bytes = e * sk * 2 * kvd;
		o.mem_bytes = e * sk * (h + 2 * kvd);
		snprintf(name, sizeof(name), "%skv", tag);
		kv = tp_gb_op(&c->g, pre, name, &o);
		tp_gb_edge(&c->g, kv_src, kv, e * sk * h);
	}
	/* core: QK^T, softmax, dropout, AV, split by heads */
	o = opt(TP_OP_ATTENTION, TP_SPLIT_SHARDED, c->head_units, layer);
	o.params = rel_bias_params;
	o.flop = 4 * sq * keys * qd;
	o.out_bytes = e * sq * qd;
	/* softmax output, dropout mask and dropout output (Korthikanti's
	 * 5as^2 in 16-bit); without dropout only the softmax output */
	o.saved_bytes = (t->dropout ? 2 * e + 1 : e) * a * sq * keys;
	o.mem_bytes = e * (sq * qd + 2 * sk * kvd) + e * sq * qd +
		      (4 * e + (t->dropout ? 2 * e + 1 : 0)) * a * sq * keys;
	o.selective = true;
	snprintf(name, sizeof(name), "%sattn", tag);
	core = tp_gb_op(&c->g, pre, name, &o);
	if (kv == TP_NONE) {
		tp_gb_edge(&c->g, q, core, e * sq * (qd + 2 * kvd));
	} else {
		tp_gb_edge(&c->g, q, core, e * sq * qd);
		tp_gb_edge(&c->g, kv, core, e * sk * 2 * kvd);
	}
	/* output projection (row parallel) */
	o = opt(TP_OP_MATMUL, TP_SPLIT_ROW, c->head_units, layer);
	o.params = qd * h + (t->out_bias ? h : 0);
	o.flop = 2 * sq * qd * h;
	o.out_bytes = e * sq * h;
	o.saved_bytes = e * sq * qd; /* its input */
	o.mem_bytes = e * sq * (qd + h);
	snprintf(name, sizeof(name), "%sproj", tag);
	proj = tp_gb_op(&c->g, pre, name, &o);
	tp_gb_edge(&c->g, core, proj, e * sq * qd);
	return proj;
}

static const char *act_name(enum tp_tf_mlp m)
{
	switch (m) {
	case TP_TF_MLP_RELU:
		return "relu";
	case TP_TF_MLP_SWIGLU:
		return "swiglu";
	case TP_TF_MLP_GEGLU:
		return "geglu";
	default:
		return "gelu";
	}
}

static double act_flop_per_elem(enum tp_tf_mlp m)
{
	switch (m) {
	case TP_TF_MLP_RELU:
		return 1;
	case TP_TF_MLP_SWIGLU:
		return 5;
	case TP_TF_MLP_GEGLU:
		return 9;
	default:
		return 8; /* tanh approximation */
	}
}

/*
 * fc1, activation, fc2 over `tokens` tokens; returns fc2.  extra_saved is
 * added to fc1 (the dispatched tokens of an expert).
 */
static uint32_t add_mlp(struct tf_ctx *c, const char *pre, const char *tag,
			int32_t layer, double tokens, uint32_t src,
			double extra_saved)
{
	const struct tp_tf *t = c->t;
	double e = c->e, h = c->h, f = (double)t->ffn;
	bool gated = t->mlp == TP_TF_MLP_SWIGLU || t->mlp == TP_TF_MLP_GEGLU;
	double w = gated ? 2 * f : f;
	uint32_t units = (uint32_t)t->ffn, fc1, act, fc2;
	struct tp_gb_op o;
	char name[64];

	if (t->ffn > (int64_t)UINT32_MAX)
		units = 0;
	o = opt(TP_OP_MATMUL, TP_SPLIT_COLUMN, units, layer);
	o.params = h * w + (t->mlp_bias ? w : 0);
	o.flop = 2 * tokens * h * w;
	o.out_bytes = e * tokens * w;
	o.saved_bytes = e * tokens * w + extra_saved; /* activation input */
	o.mem_bytes = e * tokens * (h + w);
	snprintf(name, sizeof(name), "%sfc1", tag);
	fc1 = tp_gb_op(&c->g, pre, name, &o);
	tp_gb_edge(&c->g, src, fc1, e * tokens * h);

	o = opt(TP_OP_ELEMENTWISE, TP_SPLIT_SHARDED, units, layer);
	o.flop = act_flop_per_elem(t->mlp) * tokens * f;
	o.out_bytes = e * tokens * f;
	o.saved_bytes = e * tokens * f; /* fc2's input */
	o.mem_bytes = e * tokens * (w + f);
	snprintf(name, sizeof(name), "%s%s", tag, act_name(t->mlp));
	act = tp_gb_op(&c->g, pre, name, &o);
	tp_gb_edge(&c->g, fc1, act, e * tokens * w);

	o = opt(TP_OP_MATMUL, TP_SPLIT_ROW, units, layer);
	o.params = f * h + (t->mlp_bias ? h : 0);
	o.flop = 2 * tokens * f * h;
	o.out_bytes = e * tokens * h;
	o.saved_bytes = 0; /* its input is the activation's output */
	o.mem_bytes = e * tokens * (f + h);
	snprintf(name, sizeof(name), "%sfc2", tag);
	fc2 = tp_gb_op(&c->g, pre, name, &o);
	tp_gb_edge(&c->g, act, fc2, e * tokens * f);
	return fc2;
}

/* Mixture of experts: router, E expert MLPs (separate ops, placeable on
 * different devices), and the weighted combine.  Returns the combine. */
static uint32_t add_moe(struct tf_ctx *c, const char *pre, int32_t layer,
			double s, uint32_t src)
{
	const struct tp_tf *t = c->t;
	double e = c->e, h = c->h, E = (double)t->experts, k = (double)t->top_k;
	double tokens = s * k / E; /* per expert, balanced routing */
	struct tp_gb_op o;
	uint32_t router, comb, *fc2;
	char tag[48];

	fc2 = tp_calloc((size_t)t->experts, sizeof(*fc2));
	if (!fc2) {
		if (!c->g.st)
			c->g.st = tp_error_set(c->g.err, TP_ENOMEM,
					       "out of memory");
		return TP_NONE;
	}

	o = opt(TP_OP_ROUTER, TP_SPLIT_NONE, 0, layer);
	o.params = h * E;
	o.flop = 2 * s * h * E + 5 * s * E; /* gate GEMM, softmax, top-k */
	o.out_bytes = e * s * k * h;        /* dispatched token copies */
	o.saved_bytes = 4 * s * E;          /* fp32 router probabilities */
	o.mem_bytes = e * s * h + e * s * k * h;
	router = tp_gb_op(&c->g, pre, "router", &o);
	tp_gb_edge(&c->g, src, router, e * s * h);

	for (int64_t j = 0; j < t->experts; j++) {
		snprintf(tag, sizeof(tag), "expert%lld.", (long long)j);
		fc2[j] = add_mlp(c, pre, tag, layer, tokens, router,
				 e * tokens * h);
	}
	o = opt(TP_OP_ELEMENTWISE, TP_SPLIT_NONE, 0, layer);
	o.flop = 2 * s * k * h;
	o.out_bytes = e * s * h;
	o.saved_bytes = 4 * s * k; /* routing weights */
	o.mem_bytes = e * s * k * h + e * s * h;
	comb = tp_gb_op(&c->g, pre, "combine", &o);
	for (int64_t j = 0; j < t->experts; j++)
		tp_gb_edge(&c->g, fc2[j], comb, e * tokens * h);
	free(fc2);
	return comb;
}

/*
 * One block.  x is the block input (output of the previous block or of
 * the embedding); enc is the encoder output for decoder blocks
 * (TP_NONE otherwise).  Returns the block output.
 */
static uint32_t add_block(struct tf_ctx *c, int32_t layer, double s,
			  uint32_t x, uint32_t enc, double se,
			  double rel_bias_params)
{
	const struct tp_tf *t = c->t;
	double e = c->e, sh = s * c->h;
	char pre[32];
	const char *r1 = t->dropout ? "drop1" : "res1";
	const char *r2 = t->dropout ? "drop2" : "res2";
	const char *rc = t->dropout ? "cross_drop" : "cross_res";
	uint32_t n1, proj, res1, n2, mlp, res2, cur;

	snprintf(pre, sizeof(pre), "layer%d.", layer);
	if (!t->post_norm) {
		n1 = add_norm(c, pre, "ln1", layer, s, 0);
		tp_gb_edge(&c->g, x, n1, e * sh);
		proj = add_attention(c, pre, "", layer, s, s, n1, TP_NONE,
				     rel_bias_params);
		res1 = add_residual(c, pre, r1, layer, s);
		tp_gb_edge(&c->g, proj, res1, e * sh);
		tp_gb_edge(&c->g, x, res1, e * sh);
		cur = res1;
		if (enc != TP_NONE) {
			uint32_t nc = add_norm(c, pre, "cross_ln", layer, s, 0);
			uint32_t cp, cr;
			tp_gb_edge(&c->g, cur, nc, e * sh);
			cp = add_attention(c, pre, "cross_", layer, s, se, nc,
					   enc, 0);
			cr = add_residual(c, pre, rc, layer, s);
			tp_gb_edge(&c->g, cp, cr, e * sh);
			tp_gb_edge(&c->g, cur, cr, e * sh);
			cur = cr;
		}
		n2 = add_norm(c, pre, "ln2", layer, s, 0);
		tp_gb_edge(&c->g, cur, n2, e * sh);
		if (t->experts > 0)
			mlp = add_moe(c, pre, layer, s, n2);
		else
			mlp = add_mlp(c, pre, "", layer, s, n2, 0);
		res2 = add_residual(c, pre, r2, layer, s);
		tp_gb_edge(&c->g, mlp, res2, e * sh);
		tp_gb_edge(&c->g, cur, res2, e * sh);
		return res2;
	}
	/* post-norm: sub-layer, dropout + residual, norm */
	proj = add_attention(c, pre, "", layer, s, s, x, TP_NONE,
			     rel_bias_params);
	res1 = add_residual(c, pre, r1, layer, s);
	tp_gb_edge(&c->g, proj, res1, e * sh);
	tp_gb_edge(&c->g, x, res1, e * sh);
	n1 = add_norm(c, pre, "ln1", layer, s, 0);
	tp_gb_edge(&c->g, res1, n1, e * sh);
	cur = n1;
	if (enc != TP_NONE) {
		uint32_t cp, cr, nc;
		cp = add_attention(c, pre, "cross_", layer, s, se, cur, enc, 0);
		cr = add_residual(c, pre, rc, layer, s);
		tp_gb_edge(&c->g, cp, cr, e * sh);
		tp_gb_edge(&c->g, cur, cr, e * sh);
		nc = add_norm(c, pre, "cross_ln", layer, s, 0);
		tp_gb_edge(&c->g, cr, nc, e * sh);
		cur = nc;
	}
	if (t->experts > 0)
		mlp = add_moe(c, pre, layer, s, cur);
	else
		mlp = add_mlp(c, pre, "", layer, s, cur, 0);
	res2 = add_residual(c, pre, r2, layer, s);
	tp_gb_edge(&c->g, mlp, res2, e * sh);
	tp_gb_edge(&c->g, cur, res2, e * sh);
	n2 = add_norm(c, pre, "ln2", layer, s, 0);
	tp_gb_edge(&c->g, res2, n2, e * sh);
	return n2;
}

/* Token (+ position, + type) embedding.  params: the vocabulary table
 * unless `shared` (a second lookup into a table counted elsewhere). */
static uint32_t add_embedding(struct tf_ctx *c, const char *name,
			      int32_t layer, double s, bool shared)
{
	const struct tp_tf *t = c->t;
	double e = c->e, sh = s * c->h, tables = 1;
	struct tp_gb_op o = opt(TP_OP_EMBEDDING, TP_SPLIT_VOCAB, 0, layer);

	o.params = shared ? 0 : (double)t->vocab * c->h;
	if (t->pos_embeddings > 0 && !shared) {
		o.params += (double)t->pos_embeddings * c->h;
		tables++;
	}
	if (t->type_vocab > 0 && !shared) {
		o.params += (double)t->type_vocab * c->h;
		tables++;
	}
	o.flop = (tables - 1) * sh;
	o.backward_flop = sh; /* scatter-add of the gradients */
	o.out_bytes = e * sh;
	/* the embedding dropout mask (GPT; BERT keeps it in embed_norm) */
	o.saved_bytes = t->dropout && !t->embed_norm ? sh : 0;
	o.mem_bytes = (tables + 1) * e * sh;
	return tp_gb_op(&c->g, NULL, name, &o);
}

/* LM head (vocabulary-parallel) and the softmax cross-entropy loss over s
 * tokens; x is the final hidden state. */
static void add_lm_head(struct tf_ctx *c, uint32_t x, double s, int32_t layer,
			double bias)
{
	const struct tp_tf *t = c->t;
	double e = c->e, h = c->h, V = (double)t->vocab;
	struct tp_gb_op o;
	uint32_t head, loss;

	o = opt(TP_OP_MATMUL, TP_SPLIT_VOCAB, 0, layer);
	o.params = (t->tied_head ? 0 : V * h) + bias;
	o.flop = 2 * s * h * V;
	o.out_bytes = e * s * V;
	o.saved_bytes = 0; /* its input is saved by the norm before it */
	o.mem_bytes = e * s * (h + V);
	head = tp_gb_op(&c->g, NULL, "lm_head", &o);
	tp_gb_edge(&c->g, x, head, e * s * h);

	o = opt(TP_OP_LOSS, TP_SPLIT_VOCAB, 0, layer);
	o.flop = 5 * s * V;
	o.out_bytes = 4;
	o.saved_bytes = 4 * s * V; /* fp32 softmax (Megatron's cross-entropy) */
	o.mem_bytes = e * s * V + 4 * s * V;
	loss = tp_gb_op(&c->g, NULL, "loss", &o);
	tp_gb_edge(&c->g, head, loss, e * s * V);
}

static enum tp_status check_dims(const struct tp_tf *t, struct tp_error *err)
{
	struct {
		const char *name;
		int64_t v, max;
	} pos[] = {{"hidden", t->hidden, 1 << 20},
		   {"heads", t->heads, 1 << 16},
		   {"layers", t->layers, 1 << 16},
		   {"seq", t->seq, 1 << 26},
		   {"vocab", t->vocab, 1 << 28},
		   {"batch", t->batch, (int64_t)1 << 40},
		   {"ffn", t->ffn, 1 << 24}};

	for (size_t i = 0; i < sizeof(pos) / sizeof(pos[0]); i++)
		if (pos[i].v <= 0 || pos[i].v > pos[i].max)
			return tp_error_set(err, TP_EINPUT,
					    "%s must be from 1 to %lld, not %lld",
					    pos[i].name, (long long)pos[i].max,
					    (long long)pos[i].v);
	if (t->head_dim == 0 && t->hidden % t->heads)
		return tp_error_set(err, TP_EINPUT,
				    "heads (%lld) must divide hidden (%lld)",
				    (long long)t->heads, (long long)t->hidden);
	if (t->head_dim < 0 || t->head_dim > (1 << 16))
		return tp_error_set(err, TP_EINPUT,
				    "head dimension must be from 1 to 65536, "
				    "not %lld",
				    (long long)t->head_dim);
	if (t->kv_heads < 0 || t->kv_heads > t->heads ||
	    (t->kv_heads > 0 && t->heads % t->kv_heads))
		return tp_error_set(err, TP_EINPUT,
				    "kv-heads (%lld) must divide heads (%lld)",
				    (long long)t->kv_heads, (long long)t->heads);
	if (t->experts < 0 || t->experts > 4096 ||
	    (t->experts > 0 && (t->top_k < 1 || t->top_k > t->experts)))
		return tp_error_set(err, TP_EINPUT,
				    "experts per token (%lld) must be from 1 to "
				    "the number of experts (%lld)",
				    (long long)t->top_k, (long long)t->experts);
	if (t->dec_layers < 0 || t->dec_layers > (1 << 16) ||
	    (t->dec_layers > 0 && (t->dec_seq <= 0 || t->dec_seq > (1 << 26))))
		return tp_error_set(err, TP_EINPUT,
				    "decoder layers and decoder sequence length "
				    "must be positive");
	/* the largest real models have some 10^4 ops (256 experts x 61
	 * layers); a limit keeps absurd configs from eating memory */
	if ((t->layers + t->dec_layers) * (14 + 3 * t->experts) > 200000)
		return tp_error_set(err, TP_ELIMIT,
				    "the model would have more than 200000 "
				    "ops (layers x (14 + 3 x experts)); fewer "
				    "layers or experts please");
	return TP_OK;
}

enum tp_status tp_build_transformer(const struct tp_tf *t, struct tp_model *m,
				    struct tp_error *err)
{
	struct tf_ctx c;
	enum tp_status st;
	int64_t kv, L = t->layers, Ld = t->dec_layers;
	double s = (double)t->seq, sd = (double)t->dec_seq;
	double rel = (double)t->rel_buckets * (double)t->heads;
	uint32_t x, enc = TP_NONE, last;
	bool encdec = Ld > 0;

	st = check_dims(t, err);
	if (st)
		return st;
	memset(&c, 0, sizeof(c));
	c.t = t;
	m->dtype = t->dtype;
	m->optimizer = TP_OPT_ADAM;
	m->global_batch = t->batch;
	m->seq_len = t->seq;
	tp_gb_init(&c.g, m, err);
	c.e = c.g.e;
	kv = t->kv_heads > 0 ? t->kv_heads : t->heads;
	c.h = (double)t->hidden;
	c.qd = (double)t->heads *
	       (double)(t->head_dim > 0 ? t->head_dim : t->hidden / t->heads);
	c.kvd = (double)kv *
		(double)(t->head_dim > 0 ? t->head_dim : t->hidden / t->heads);
	/* a tensor-parallel rank must hold whole KV groups: t | kv_heads
	 * (kv_heads divides heads) */
	c.head_units = (uint32_t)kv;
	tp_gb_name(&c.g, t->name ? t->name : "gpt");

	x = add_embedding(&c, "embedding", -1, s, false);
	if (t->embed_norm) {
		uint32_t n = add_norm(&c, NULL, "embed_norm", -1, s,
				      t->dropout ? s * c.h : 0);
		tp_gb_edge(&c.g, x, n, c.e * s * c.h);
		x = n;
	}
	for (int64_t i = 0; i < L; i++)
		x = add_block(&c, (int32_t)i, s, x, TP_NONE, 0,
			      i == 0 ? rel : 0);
	last = x;
	if (encdec) {
		uint32_t d;
		if (t->final_norm) {
			enc = add_norm(&c, NULL, "enc_final_norm",
				       (int32_t)(L - 1), s, 0);
			tp_gb_edge(&c.g, x, enc, c.e * s * c.h);
		} else {
			enc = x;
		}
		d = add_embedding(&c, "dec_embedding", (int32_t)L, sd, true);
		for (int64_t i = 0; i < Ld; i++)
			d = add_block(&c, (int32_t)(L + i), sd, d, enc, s,
				      i == 0 ? rel : 0);
		last = d;
		s = sd;
	}
	if (t->head == TP_TF_HEAD_LM) {
		if (t->final_norm) {
			uint32_t n = add_norm(&c, NULL, "final_norm", -1, s, 0);
			tp_gb_edge(&c.g, last, n, c.e * s * c.h);
			last = n;
		}
		add_lm_head(&c, last, s, -1, 0);
	} else {
		/* BERT: dense + gelu + LayerNorm transform, tied decoder with
		 * its own bias; BertForPreTraining adds the pooler and the
		 * next-sentence classifier */
		struct tp_gb_op o = opt(TP_OP_MATMUL, TP_SPLIT_NONE, 0, -1);
		uint32_t tr, n;
		double e = c.e, h = c.h;
		o.params = h * h + h;
		o.flop = 2 * s * h * h + 8 * s * h;
		o.out_bytes = e * s * h;
		o.saved_bytes = 2 * e * s * h;
		o.mem_bytes = 2 * e * s * h;
		tr = tp_gb_op(&c.g, NULL, "mlm_transform", &o);
		tp_gb_edge(&c.g, last, tr, e * s * h);
		n = add_norm(&c, NULL, "mlm_norm", -1, s, 0);
		tp_gb_edge(&c.g, tr, n, e * s * h);
		if (t->head == TP_TF_HEAD_PRETRAIN) {
			uint32_t pool, nsp;
			o = opt(TP_OP_MATMUL, TP_SPLIT_NONE, 0, -1);
			o.params = h * h + h;
			o.flop = 2 * h * h + 8 * h; /* first token only */
			o.out_bytes = e * h;
			o.saved_bytes = 2 * e * h;
			o.mem_bytes = 2 * e * h;
			pool = tp_gb_op(&c.g, NULL, "pooler", &o);
			tp_gb_edge(&c.g, last, pool, e * h);
			o = opt(TP_OP_LOSS, TP_SPLIT_NONE, 0, -1);
			o.params = 2 * h + 2;
			o.flop = 4 * h + 10;
			o.out_bytes = 4;
			o.saved_bytes = e * h;
			o.mem_bytes = e * h + 8;
			nsp = tp_gb_op(&c.g, NULL, "nsp_loss", &o);
			tp_gb_edge(&c.g, pool, nsp, e * h);
		}
		add_lm_head(&c, n, s, -1, (double)t->vocab);
	}
	if (!c.g.st) {
		struct tp_arch *a = &m->arch;
		memset(a, 0, sizeof(*a));
		a->hidden = t->hidden;
		a->heads = t->heads;
		a->kv_heads = kv;
		a->layers = L + Ld;
		a->vocab = t->vocab;
		a->ffn = t->ffn;
		a->experts = t->experts;
		snprintf(a->family, sizeof(a->family), "%s",
			 t->family ? t->family : "");
		c.g.st = tp_model_finalize(m, err);
	}
	if (c.g.st) {
		tp_model_release(m);
		tp_model_init(m);
	}
	return c.g.st;
}

enum tp_status tp_build_gpt(const struct tp_gpt_dims *d, struct tp_model *m,
			    struct tp_error *err)
{
	struct tp_tf t;

	if (d->ffn < 0)
		return tp_error_set(err, TP_EINPUT,
				    "ffn must be positive (0 = 4 x hidden)");
	tp_tf_default(&t);
	t.name = d->name ? d->name : "gpt";
	t.hidden = d->hidden;
	t.layers = d->layers;
	t.heads = d->heads;
	t.kv_heads = d->kv_heads;
	t.seq = d->seq;
	t.vocab = d->vocab;
	t.batch = d->batch;
	t.ffn = d->ffn > 0 ? d->ffn : 4 * d->hidden;
	t.dtype = (unsigned)d->dtype < TP_DTYPE_COUNT ? d->dtype
						       : TP_DTYPE_BF16;
	t.pos_embeddings = d->seq;
	return tp_build_transformer(&t, m, err);
}

void tp_gpt_dims_default(struct tp_gpt_dims *d)
{
	memset(d, 0, sizeof(*d));
	d->dtype = TP_DTYPE_BF16;
}
