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
#include "io_int.h"

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
	if (!n) {
		g->st = tp_error_set(g->err, TP_ENOMEM, "out of memory");
	} else {
		/* a name from a config file: printable, as the loader wants */
		unsigned code;
		char *w = (char *)n;
		size_t at;
		while ((at = tp_io_name_bad_char(w, &code)) != 0) {
			w[at - 1] = '_';
			if (code >= 0x80)
				w[at] = '_'; /* both bytes of a C1 control */
		}
		g->m->name = n;
	}
}

void tp_tf_default(struct tp_tf *t)
{
	memset(t, 0, sizeof(*t));
	t->name = "gpt";
	t->family = "gpt";
	t->dtype = TP_DTYPE_BF16;
	t->norm = TP_NORM_LAYERNORM;
	t->norm_pos = TP_NORMPOS_PRE;
	t->qk_norm = TP_QKNORM_NONE;
	t->attn_bias = t->out_bias = t->mlp_bias = true;
	t->dropout = true;
	t->final_norm = true;
	t->tied_head = true;
	t->parallel_norms = 1;
	t->act = TP_ACT_GELU;
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
	double hd;          /* head dimension */
	uint32_t head_units; /* tensor-parallel units of the head-split ops */
};

static double norm_params(enum tp_norm n, double width)
{
	switch (n) {
	case TP_NORM_LAYERNORM:
		return 2 * width;
	case TP_NORM_LAYERNORM_NOAFFINE:
		return 0;
	default:
		return width; /* weight only */
	}
}

/* A norm over s tokens of `width` elements keeping `saved` bytes. */
static uint32_t add_norm_w(struct tf_ctx *c, const char *pre, const char *name,
			   int32_t layer, double s, double width, double saved)
{
	struct tp_gb_op o = opt(TP_OP_NORM, TP_SPLIT_NONE, 0, layer);

	o.params = norm_params(c->t->norm, width);
	o.flop = (c->t->norm == TP_NORM_RMSNORM ? 4 : 5) * s * width;
	o.out_bytes = c->e * s * width;
	o.saved_bytes = saved;
	o.mem_bytes = 2 * c->e * s * width;
	return tp_gb_op(&c->g, pre, name, &o);
}

/* A LayerNorm/RMSNorm over s tokens: saves its input and its output
 * (the next GEMM's input): 2 * e * s * h. */
static uint32_t add_norm(struct tf_ctx *c, const char *pre, const char *name,
			 int32_t layer, double s, double extra_saved)
{
	return add_norm_w(c, pre, name, layer, s, c->h,
			  2 * c->e * s * c->h + extra_saved);
}

/* Dropout (if any) and the residual add of `inputs` tensors (2; 3 for
 * a parallel block): keeps the 1-byte dropout mask. */
static uint32_t add_residual(struct tf_ctx *c, const char *pre,
			     const char *name, int32_t layer, double s,
			     int inputs)
{
	struct tp_gb_op o = opt(TP_OP_ELEMENTWISE, TP_SPLIT_NONE, 0, layer);
	double sh = s * c->h;

	o.flop = (c->t->dropout ? 2 : 1) * sh + (inputs - 2) * sh;
	o.out_bytes = c->e * sh;
	o.saved_bytes = c->t->dropout ? sh : 0;
	o.mem_bytes = (inputs + 1) * c->e * sh + (c->t->dropout ? sh : 0);
	return tp_gb_op(&c->g, pre, name, &o);
}

/* Does block `layer` attend through the sliding window? */
static bool windowed(const struct tp_tf *t, int32_t layer)
{
	if (t->window <= 0)
		return false;
	return t->window_pattern <= 0 || (layer + 1) % t->window_pattern != 0;
}

/* What attends to what: sq query tokens, the output of op q_src, attend
 * to sk key tokens, those of op kv_src (TP_NONE: self-attention, the keys
 * are the queries' tokens, sk = sq). */
struct attn_src {
	uint32_t q_src;
	double sq;
	uint32_t kv_src;
	double sk;
};

static struct attn_src self_attn(uint32_t src, double s)
{
	return (struct attn_src){src, s, TP_NONE, s};
}

static struct attn_src cross_attn(uint32_t q_src, double sq, uint32_t kv_src,
				  double sk)
{
	return (struct attn_src){q_src, sq, kv_src, sk};
}

/*
 * Attention: the Q(KV) projection, the core and the output projection.
 * For cross-attention (io.kv_src != TP_NONE) K and V are projected from
 * kv_src's output (sk tokens) by a separate op, and the ops' names start
 * with "cross_".  Returns the projection.
 */
static uint32_t add_attention(struct tf_ctx *c, const char *pre,
			      int32_t layer, struct attn_src io,
			      double rel_bias_params)
{
	const char *tag = io.kv_src == TP_NONE ? "" : "cross_";
	double sq = io.sq, sk = io.sk;
	uint32_t q_src = io.q_src, kv_src = io.kv_src;
	const struct tp_tf *t = c->t;
	double e = c->e, h = c->h, qd = c->qd, kvd = c->kvd;
	double a = (double)t->heads, keys = sk;
	bool attn_drop = t->dropout && !t->no_attn_dropout;
	struct tp_gb_op o;
	uint32_t q, kv = TP_NONE, core, proj;
	char name[64];

	if (kv_src == TP_NONE && windowed(t, layer) && keys > (double)t->window)
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
		if (t->qk_norm == TP_QKNORM_HEAD || t->qk_norm == TP_QKNORM_FULL) {
			/* the query and key norms: weights per head (or over
			 * the whole projection), their inputs kept */
			o.params += t->qk_norm == TP_QKNORM_HEAD
					    ? 2 * c->hd
					    : qd + kvd;
			o.flop += 4 * sq * (qd + kvd);
			o.saved_bytes += e * sq * (qd + kvd);
			o.mem_bytes += 2 * e * sq * (qd + kvd);
		}
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
	o.saved_bytes = (attn_drop ? 2 * e + 1 : e) * a * sq * keys;
	o.mem_bytes = e * (sq * qd + 2 * sk * kvd) + e * sq * qd +
		      (4 * e + (attn_drop ? 2 * e + 1 : 0)) * a * sq * keys;
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

/* The activation op's name and FLOP per element of its output. */
static const char *act_name(enum tp_act a)
{
	switch (a) {
	case TP_ACT_RELU:
		return "relu";
	case TP_ACT_SILU:
		return "silu";
	case TP_ACT_TANH:
		return "tanh";
	case TP_ACT_SWIGLU:
		return "swiglu";
	case TP_ACT_GEGLU:
	case TP_ACT_GEGLU_TANH:
		return "geglu";
	case TP_ACT_REGLU:
		return "reglu";
	default:
		return "gelu";
	}
}

static double act_flop_per_elem(enum tp_act a)
{
	switch (a) {
	case TP_ACT_RELU:
		return 1;
	case TP_ACT_SWIGLU:
		return 5;
	case TP_ACT_GEGLU:
	case TP_ACT_GEGLU_TANH:
	case TP_ACT_REGLU:
		return 9;
	default:
		return 8; /* tanh approximation */
	}
}

static bool act_gated(enum tp_act a)
{
	return a == TP_ACT_SWIGLU || a == TP_ACT_GEGLU ||
	       a == TP_ACT_GEGLU_TANH || a == TP_ACT_REGLU;
}

/*
 * fc1, activation, fc2 of width f over `tokens` tokens; returns fc2.
 * extra_saved is added to fc1 (the dispatched tokens of an expert).
 */
static uint32_t add_mlp(struct tf_ctx *c, const char *pre, const char *tag,
			int32_t layer, double tokens, int64_t ffn,
			uint32_t src, double extra_saved)
{
	const struct tp_tf *t = c->t;
	double e = c->e, h = c->h, f = (double)ffn;
	double w = act_gated(t->act) ? 2 * f : f;
	uint32_t units = (uint32_t)ffn, fc1, act, fc2;
	struct tp_gb_op o;
	char name[64];

	if (ffn > (int64_t)UINT32_MAX)
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
	o.flop = act_flop_per_elem(t->act) * tokens * f;
	o.out_bytes = e * tokens * f;
	o.saved_bytes = e * tokens * f; /* fc2's input */
	o.mem_bytes = e * tokens * (w + f);
	snprintf(name, sizeof(name), "%s%s", tag, act_name(t->act));
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

/*
 * Mixture of experts: router, E routed expert MLPs (separate ops,
 * placeable on different devices), the shared experts (one fused MLP fed
 * by the router's input, as every token uses them) and the weighted
 * combine.  Returns the combine.
 */
static uint32_t add_moe(struct tf_ctx *c, const char *pre, int32_t layer,
			double s, uint32_t src)
{
	const struct tp_tf *t = c->t;
	double e = c->e, h = c->h, E = (double)t->experts, k = (double)t->top_k;
	double tokens = s * k / E; /* per expert, balanced routing */
	int64_t f = t->moe_ffn > 0 ? t->moe_ffn : t->ffn;
	struct tp_gb_op o;
	uint32_t router, comb, shared = TP_NONE, *fc2;
	char tag[48];

	fc2 = tp_calloc((size_t)t->experts, sizeof(*fc2));
	if (!fc2) {
		if (!c->g.st)
			c->g.st = tp_error_set(c->g.err, TP_ENOMEM,
					       "out of memory");
		return TP_NONE;
	}

	o = opt(TP_OP_ROUTER, TP_SPLIT_NONE, 0, layer);
	o.params = h * E + (t->router_bias ? E : 0) +
		   (t->shared_gate ? h : 0);
	o.flop = 2 * s * h * E + 5 * s * E; /* gate GEMM, softmax, top-k */
	if (t->shared_gate)
		o.flop += 2 * s * h;
	o.out_bytes = e * s * k * h;        /* dispatched token copies */
	o.saved_bytes = 4 * s * E;          /* fp32 router probabilities */
	o.mem_bytes = e * s * h + e * s * k * h;
	router = tp_gb_op(&c->g, pre, "router", &o);
	tp_gb_edge(&c->g, src, router, e * s * h);

	for (int64_t j = 0; j < t->experts; j++) {
		snprintf(tag, sizeof(tag), "expert%lld.", (long long)j);
		fc2[j] = add_mlp(c, pre, tag, layer, tokens, f, router,
				 e * tokens * h);
	}
	if (t->shared_experts > 0)
		shared = add_mlp(c, pre, "shared_expert.", layer, s,
				 t->shared_experts * t->shared_ffn, src, 0);
	o = opt(TP_OP_ELEMENTWISE, TP_SPLIT_NONE, 0, layer);
	o.flop = 2 * s * k * h;
	o.out_bytes = e * s * h;
	o.saved_bytes = 4 * s * k; /* routing weights */
	o.mem_bytes = e * s * k * h + e * s * h;
	if (shared != TP_NONE) {
		o.flop += (t->shared_gate ? 2 : 1) * s * h;
		o.mem_bytes += e * s * h;
	}
	comb = tp_gb_op(&c->g, pre, "combine", &o);
	for (int64_t j = 0; j < t->experts; j++)
		tp_gb_edge(&c->g, fc2[j], comb, e * tokens * h);
	tp_gb_edge(&c->g, shared, comb, e * s * h);
	if (t->shared_gate)
		tp_gb_edge(&c->g, router, comb, 4 * s);
	free(fc2);
	return comb;
}

/* The MLP of block `layer`: routed experts, or dense (every block of a
 * dense model, the first_dense blocks of a MoE one). */
static uint32_t add_ffn(struct tf_ctx *c, const char *pre, int32_t layer,
			double s, uint32_t src)
{
	if (c->t->experts > 0 && layer >= c->t->first_dense)
		return add_moe(c, pre, layer, s, src);
	return add_mlp(c, pre, "", layer, s, c->t->ffn, src, 0);
}

/*
 * Multi-head latent attention (DeepSeek-V2/V3): queries through a
 * low-rank bottleneck (q_down, q_norm, q_up; one projection "q" when
 * q_lora is 0), keys and values from a compressed latent (kv_down to
 * kv_lora plus the RoPE key part shared by all heads, kv_norm, kv_up to
 * a*(qk_nope + v_dim)), the core over a*(qk_nope + qk_rope) wide queries
 * and keys and a*v_dim wide values, and the output projection.  The down
 * projections and their norms are replicated under tensor parallelism
 * (as Megatron-Core's MLA does); the up projections, the core and the
 * output projection split by heads.  Returns the projection.
 */
static uint32_t add_mla(struct tf_ctx *c, const char *pre, int32_t layer,
			double s, uint32_t src)
{
	const struct tp_tf *t = c->t;
	double e = c->e, h = c->h, a = (double)t->heads;
	double ql = (double)t->q_lora, kl = (double)t->kv_lora;
	double dr = (double)t->qk_rope, dv = (double)t->v_dim;
	double qw = a * (double)(t->qk_nope + t->qk_rope), vw = a * dv;
	double kvw = a * (double)(t->qk_nope + t->v_dim), keys = s;
	uint32_t units = c->head_units, q, qd, qn, kvd, kvn, kvu, core, proj;
	bool attn_drop = t->dropout && !t->no_attn_dropout;
	struct tp_gb_op o;

	if (windowed(t, layer) && keys > (double)t->window)
		keys = (double)t->window;
	if (t->q_lora > 0) {
		o = opt(TP_OP_MATMUL, TP_SPLIT_NONE, 0, layer);
		o.params = h * ql + (t->attn_bias ? ql : 0);
		o.flop = 2 * s * h * ql;
		o.out_bytes = e * s * ql;
		o.mem_bytes = e * s * (h + ql);
		qd = tp_gb_op(&c->g, pre, "q_down", &o);
		tp_gb_edge(&c->g, src, qd, e * s * h);
		qn = add_norm_w(c, pre, "q_norm", layer, s, ql, 2 * e * s * ql);
		tp_gb_edge(&c->g, qd, qn, e * s * ql);
		o = opt(TP_OP_MATMUL, TP_SPLIT_COLUMN, units, layer);
		o.params = ql * qw;
		o.flop = 2 * s * ql * qw;
		o.out_bytes = e * s * qw;
		o.saved_bytes = e * s * qw; /* the attention's queries */
		o.mem_bytes = e * s * (ql + qw);
		q = tp_gb_op(&c->g, pre, "q_up", &o);
		tp_gb_edge(&c->g, qn, q, e * s * ql);
	} else {
		o = opt(TP_OP_MATMUL, TP_SPLIT_COLUMN, units, layer);
		o.params = h * qw;
		o.flop = 2 * s * h * qw;
		o.out_bytes = e * s * qw;
		o.saved_bytes = e * s * qw;
		o.mem_bytes = e * s * (h + qw);
		q = tp_gb_op(&c->g, pre, "q", &o);
		tp_gb_edge(&c->g, src, q, e * s * h);
	}
	o = opt(TP_OP_MATMUL, TP_SPLIT_NONE, 0, layer);
	o.params = h * (kl + dr) + (t->attn_bias ? kl + dr : 0);
	o.flop = 2 * s * h * (kl + dr);
	o.out_bytes = e * s * (kl + dr);
	o.saved_bytes = e * s * dr; /* the RoPE keys */
	o.mem_bytes = e * s * (h + kl + dr);
	kvd = tp_gb_op(&c->g, pre, "kv_down", &o);
	tp_gb_edge(&c->g, src, kvd, e * s * h);
	kvn = add_norm_w(c, pre, "kv_norm", layer, s, kl, 2 * e * s * kl);
	tp_gb_edge(&c->g, kvd, kvn, e * s * kl);
	o = opt(TP_OP_MATMUL, TP_SPLIT_COLUMN, units, layer);
	o.params = kl * kvw;
	o.flop = 2 * s * kl * kvw;
	o.out_bytes = e * s * kvw;
	o.saved_bytes = e * s * kvw; /* keys (without RoPE) and values */
	o.mem_bytes = e * s * (kl + kvw);
	kvu = tp_gb_op(&c->g, pre, "kv_up", &o);
	tp_gb_edge(&c->g, kvn, kvu, e * s * kl);

	o = opt(TP_OP_ATTENTION, TP_SPLIT_SHARDED, units, layer);
	o.flop = 2 * s * keys * qw + 2 * s * keys * vw;
	o.out_bytes = e * s * vw;
	o.saved_bytes = (attn_drop ? 2 * e + 1 : e) * a * s * keys;
	o.mem_bytes = e * s * (qw + kvw + dr) + e * s * vw +
		      (4 * e + (attn_drop ? 2 * e + 1 : 0)) * a * s * keys;
	o.selective = true;
	core = tp_gb_op(&c->g, pre, "attn", &o);
	tp_gb_edge(&c->g, q, core, e * s * qw);
	tp_gb_edge(&c->g, kvu, core, e * s * kvw);
	tp_gb_edge(&c->g, kvd, core, e * s * dr);

	o = opt(TP_OP_MATMUL, TP_SPLIT_ROW, units, layer);
	o.params = vw * h + (t->out_bias ? h : 0);
	o.flop = 2 * s * vw * h;
	o.out_bytes = e * s * h;
	o.saved_bytes = e * s * vw;
	o.mem_bytes = e * s * (vw + h);
	proj = tp_gb_op(&c->g, pre, "proj", &o);
	tp_gb_edge(&c->g, core, proj, e * s * vw);
	return proj;
}

static uint32_t self_attention(struct tf_ctx *c, const char *pre,
			       int32_t layer, double s, uint32_t src,
			       double rel_bias_params)
{
	if (c->t->kv_lora > 0)
		return add_mla(c, pre, layer, s, src);
	return add_attention(c, pre, layer, self_attn(src, s),
			     rel_bias_params);
}

/* A norm on a sub-layer's output (Gemma's post norms, OLMo 2's only
 * norms): keeps its input; returns it, or f when the block has none. */
static uint32_t post_norm(struct tf_ctx *c, const char *pre, const char *name,
			  int32_t layer, double s, uint32_t f)
{
	uint32_t n;

	if (c->t->norm_pos != TP_NORMPOS_PRE_POST &&
	    c->t->norm_pos != TP_NORMPOS_SUBLAYER)
		return f;
	n = add_norm_w(c, pre, name, layer, s, c->h, c->e * s * c->h);
	tp_gb_edge(&c->g, f, n, c->e * s * c->h);
	return n;
}

/*
 * A block whose norms are not after the residual (pre, pre_post,
 * sublayer, parallel).  x is the block input; enc the encoder output for
 * decoder blocks (TP_NONE otherwise).  Returns the block output.
 */
static uint32_t add_block_pre(struct tf_ctx *c, const char *pre,
			      int32_t layer, double s, uint32_t x, uint32_t enc,
			      double se, double rel_bias_params)
{
	const struct tp_tf *t = c->t;
	double e = c->e, sh = s * c->h;
	const char *r1 = t->dropout ? "drop1" : "res1";
	const char *r2 = t->dropout ? "drop2" : "res2";
	const char *rc = t->dropout ? "cross_drop" : "cross_res";
	bool in_norm = t->norm_pos != TP_NORMPOS_SUBLAYER;
	uint32_t n1 = x, proj, res1, n2, mlp, res2, cur;

	if (in_norm) {
		n1 = add_norm(c, pre, "ln1", layer, s, 0);
		tp_gb_edge(&c->g, x, n1, e * sh);
	} else if (!c->g.st) {
		/* no norm keeps the attention's input: its producer does */
		c->g.m->ops.v[x].saved_bytes += e * sh;
	}
	proj = self_attention(c, pre, layer, s, n1, rel_bias_params);
	if (t->parallel_attn) {
		/* x + attn(ln1(x)) + mlp(ln1(x) or ln2(x)) */
		n2 = n1;
		if (t->parallel_norms > 1) {
			n2 = add_norm(c, pre, "ln2", layer, s, 0);
			tp_gb_edge(&c->g, x, n2, e * sh);
		}
		mlp = add_ffn(c, pre, layer, s, n2);
		res2 = add_residual(c, pre, r2, layer, s, 3);
		tp_gb_edge(&c->g, proj, res2, e * sh);
		tp_gb_edge(&c->g, mlp, res2, e * sh);
		tp_gb_edge(&c->g, x, res2, e * sh);
		return res2;
	}
	proj = post_norm(c, pre, "post_ln1", layer, s, proj);
	res1 = add_residual(c, pre, r1, layer, s, 2);
	tp_gb_edge(&c->g, proj, res1, e * sh);
	tp_gb_edge(&c->g, x, res1, e * sh);
	cur = res1;
	if (enc != TP_NONE) {
		uint32_t nc = add_norm(c, pre, "cross_ln", layer, s, 0);
		uint32_t cp, cr;
		tp_gb_edge(&c->g, cur, nc, e * sh);
		cp = add_attention(c, pre, layer, cross_attn(nc, s, enc, se),
				   0);
		cr = add_residual(c, pre, rc, layer, s, 2);
		tp_gb_edge(&c->g, cp, cr, e * sh);
		tp_gb_edge(&c->g, cur, cr, e * sh);
		cur = cr;
	}
	n2 = cur;
	if (in_norm) {
		n2 = add_norm(c, pre, "ln2", layer, s, 0);
		tp_gb_edge(&c->g, cur, n2, e * sh);
	} else if (!c->g.st) {
		/* no norm keeps the MLP's input: the residual does */
		c->g.m->ops.v[cur].saved_bytes += e * sh;
	}
	mlp = add_ffn(c, pre, layer, s, n2);
	mlp = post_norm(c, pre, "post_ln2", layer, s, mlp);
	res2 = add_residual(c, pre, r2, layer, s, 2);
	tp_gb_edge(&c->g, mlp, res2, e * sh);
	tp_gb_edge(&c->g, cur, res2, e * sh);
	return res2;
}

/* One block (see add_block_pre); post-norm blocks here. */
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
	if (t->norm_pos != TP_NORMPOS_POST)
		return add_block_pre(c, pre, layer, s, x, enc, se,
				     rel_bias_params);
	/* post-norm: sub-layer, dropout + residual, norm */
	proj = add_attention(c, pre, layer, self_attn(x, s),
			     rel_bias_params);
	res1 = add_residual(c, pre, r1, layer, s, 2);
	tp_gb_edge(&c->g, proj, res1, e * sh);
	tp_gb_edge(&c->g, x, res1, e * sh);
	n1 = add_norm(c, pre, "ln1", layer, s, 0);
	tp_gb_edge(&c->g, res1, n1, e * sh);
	cur = n1;
	if (enc != TP_NONE) {
		uint32_t cp, cr, nc;
		cp = add_attention(c, pre, layer, cross_attn(cur, s, enc, se),
				   0);
		cr = add_residual(c, pre, rc, layer, s, 2);
		tp_gb_edge(&c->g, cp, cr, e * sh);
		tp_gb_edge(&c->g, cur, cr, e * sh);
		nc = add_norm(c, pre, "cross_ln", layer, s, 0);
		tp_gb_edge(&c->g, cr, nc, e * sh);
		cur = nc;
	}
	mlp = add_ffn(c, pre, layer, s, cur);
	res2 = add_residual(c, pre, r2, layer, s, 2);
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

/* Vision: the patch embedding (a p x p convolution of stride p to h
 * channels, with bias), the CLS token and the learned positions; the
 * image is the input, so only the weight gradient is computed. */
static uint32_t add_patch_embedding(struct tf_ctx *c, double s)
{
	const struct tp_tf *t = c->t;
	double e = c->e, h = c->h, n = s - 1;
	double px = (double)t->channels * (double)t->patch_size *
		    (double)t->patch_size;
	struct tp_gb_op o = opt(TP_OP_CONV, TP_SPLIT_NONE, 0, -1);

	o.params = px * h + h + h + s * h; /* conv, bias, CLS, positions */
	o.flop = 2 * n * px * h + s * h;
	o.backward_flop = 2 * n * px * h;
	o.out_bytes = e * s * h;
	o.saved_bytes = e * n * px; /* the pixels, for the weight gradient */
	o.mem_bytes = e * (n * px + s * h);
	return tp_gb_op(&c->g, NULL, "patch_embedding", &o);
}

/* Vision: the classifier on the first (CLS) token and its loss. */
static void add_cls_head(struct tf_ctx *c, uint32_t x)
{
	double e = c->e, h = c->h, k = (double)c->t->classes;
	struct tp_gb_op o = opt(TP_OP_MATMUL, TP_SPLIT_NONE, 0, -1);
	uint32_t head, loss;

	o.params = h * k + k;
	o.flop = 2 * h * k;
	o.out_bytes = e * k;
	o.saved_bytes = e * h;
	o.mem_bytes = e * (h + k);
	head = tp_gb_op(&c->g, NULL, "classifier", &o);
	tp_gb_edge(&c->g, x, head, e * h);
	o = opt(TP_OP_LOSS, TP_SPLIT_NONE, 0, -1);
	o.flop = 5 * k;
	o.out_bytes = 4;
	o.saved_bytes = 4 * k;
	o.mem_bytes = e * k + 4 * k;
	loss = tp_gb_op(&c->g, NULL, "loss", &o);
	tp_gb_edge(&c->g, head, loss, e * k);
}

void tp_tf_divide_hint(char *buf, size_t size, int64_t part, int64_t whole,
		       const char *part_name, const char *whole_name)
{
	int64_t lo = part, hi = part, down = whole - whole % part;

	while (lo > 1 && whole % lo)
		lo--;
	while (hi < whole && whole % hi)
		hi++;
	if (lo == hi || hi > whole)
		snprintf(buf, size, "use %lld %s", (long long)lo, part_name);
	else
		snprintf(buf, size, "use %lld or %lld %s", (long long)lo,
			 (long long)hi, part_name);
	if (down > 0)
		snprintf(buf + strlen(buf), size - strlen(buf),
			 ", or %s %lld or %lld", whole_name,
			 (long long)down, (long long)(down + part));
	else
		snprintf(buf + strlen(buf), size - strlen(buf),
			 ", or %s %lld", whole_name, (long long)part);
}

static enum tp_status check_dims(const struct tp_tf *t, struct tp_error *err)
{
	char hint[160];

	struct {
		const char *name;
		int64_t v, max;
	} pos[] = {{"hidden", t->hidden, 1 << 20},
		   {"heads", t->heads, 1 << 16},
		   {"layers", t->layers, 1 << 16},
		   {"seq", t->seq, 1 << 26},
		   {"vocab", t->patch_size > 0 ? 1 : t->vocab, 1 << 28},
		   {"batch", t->batch, (int64_t)1 << 40},
		   {"ffn", t->ffn, 1 << 24}};

	for (size_t i = 0; i < sizeof(pos) / sizeof(pos[0]); i++)
		if (pos[i].v <= 0 || pos[i].v > pos[i].max)
			return tp_error_set(err, TP_EINPUT,
					    "%s must be from 1 to %lld, not %lld",
					    pos[i].name, (long long)pos[i].max,
					    (long long)pos[i].v);
	if (t->head_dim == 0 && t->hidden % t->heads) {
		tp_tf_divide_hint(hint, sizeof(hint), t->heads, t->hidden,
				  "heads", "a hidden size of");
		return tp_error_set(err, TP_EINPUT,
				    "heads (%lld) must divide hidden (%lld): "
				    "%s",
				    (long long)t->heads, (long long)t->hidden,
				    hint);
	}
	if (t->head_dim < 0 || t->head_dim > (1 << 16))
		return tp_error_set(err, TP_EINPUT,
				    "head dimension must be from 1 to 65536, "
				    "not %lld",
				    (long long)t->head_dim);
	if (t->kv_heads < 0 || t->kv_heads > t->heads ||
	    (t->kv_heads > 0 && t->heads % t->kv_heads)) {
		tp_tf_divide_hint(hint, sizeof(hint),
				  t->kv_heads, t->heads, "kv-heads",
				  "a head count of");
		return tp_error_set(err, TP_EINPUT,
				    "kv-heads (%lld) must divide heads (%lld): "
				    "%s",
				    (long long)t->kv_heads, (long long)t->heads,
				    hint);
	}
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
	if (t->moe_ffn < 0 || t->moe_ffn > (1 << 24) || t->shared_experts < 0 ||
	    t->shared_experts > 64 || t->shared_ffn < 0 ||
	    t->shared_ffn > (1 << 24) ||
	    (t->shared_experts > 0 && t->shared_ffn == 0) ||
	    t->first_dense < 0 || t->first_dense > t->layers)
		return tp_error_set(err, TP_EINPUT,
				    "expert sizes out of range: expert ffn "
				    "%lld, %lld shared experts of %lld, %lld "
				    "first dense layers of %lld",
				    (long long)t->moe_ffn,
				    (long long)t->shared_experts,
				    (long long)t->shared_ffn,
				    (long long)t->first_dense,
				    (long long)t->layers);
	if (t->kv_lora < 0 || t->kv_lora > (1 << 20) || t->q_lora < 0 ||
	    t->q_lora > (1 << 20) ||
	    (t->kv_lora > 0 &&
	     (t->qk_nope < 0 || t->qk_rope < 1 || t->v_dim < 1 ||
	      t->qk_nope > (1 << 16) || t->qk_rope > (1 << 16) ||
	      t->v_dim > (1 << 16))))
		return tp_error_set(err, TP_EINPUT,
				    "latent attention dimensions out of range "
				    "(kv rank %lld, q rank %lld, head dims "
				    "%lld + %lld, value %lld)",
				    (long long)t->kv_lora, (long long)t->q_lora,
				    (long long)t->qk_nope, (long long)t->qk_rope,
				    (long long)t->v_dim);
	if (t->window < 0 || t->window_pattern < 0)
		return tp_error_set(err, TP_EINPUT,
				    "sliding window and its pattern must be "
				    ">= 0");
	if (t->patch_size > 0 &&
	    (t->channels < 1 || t->channels > 4096 || t->classes < 1 ||
	     t->classes > (1 << 24) || t->patch_size > (1 << 16)))
		return tp_error_set(err, TP_EINPUT,
				    "vision transformer: channels (%lld) and "
				    "classes (%lld) must be positive",
				    (long long)t->channels,
				    (long long)t->classes);
	/* the largest real models have some 10^4 ops (256 experts x 61
	 * layers); a limit keeps absurd configs from eating memory */
	if ((t->layers + t->dec_layers) *
		    (20 + 3 * (t->experts + (t->shared_experts > 0))) >
	    200000)
		return tp_error_set(err, TP_ELIMIT,
				    "the model would have more than 200000 "
				    "ops (layers x (20 + 3 x experts)); fewer "
				    "layers or experts please");
	return TP_OK;
}

/* BERT: dense + gelu + LayerNorm transform, tied decoder with its own
 * bias; BertForPreTraining adds the pooler and the next-sentence
 * classifier.  last is the final hidden state of s tokens. */
static void add_bert_head(struct tf_ctx *c, uint32_t last, double s)
{
	struct tp_gb_op o = opt(TP_OP_MATMUL, TP_SPLIT_NONE, 0, -1);
	uint32_t tr, n;
	double e = c->e, h = c->h;

	o.params = h * h + h;
	o.flop = 2 * s * h * h + 8 * s * h;
	o.out_bytes = e * s * h;
	o.saved_bytes = 2 * e * s * h;
	o.mem_bytes = 2 * e * s * h;
	tr = tp_gb_op(&c->g, NULL, "mlm_transform", &o);
	tp_gb_edge(&c->g, last, tr, e * s * h);
	n = add_norm(c, NULL, "mlm_norm", -1, s, 0);
	tp_gb_edge(&c->g, tr, n, e * s * h);
	if (c->t->head == TP_TF_HEAD_PRETRAIN) {
		uint32_t pool, nsp;
		o = opt(TP_OP_MATMUL, TP_SPLIT_NONE, 0, -1);
		o.params = h * h + h;
		o.flop = 2 * h * h + 8 * h; /* first token only */
		o.out_bytes = e * h;
		o.saved_bytes = 2 * e * h;
		o.mem_bytes = 2 * e * h;
		pool = tp_gb_op(&c->g, NULL, "pooler", &o);
		tp_gb_edge(&c->g, last, pool, e * h);
		o = opt(TP_OP_LOSS, TP_SPLIT_NONE, 0, -1);
		o.params = 2 * h + 2;
		o.flop = 4 * h + 10;
		o.out_bytes = 4;
		o.saved_bytes = e * h;
		o.mem_bytes = e * h + 8;
		nsp = tp_gb_op(&c->g, NULL, "nsp_loss", &o);
		tp_gb_edge(&c->g, pool, nsp, e * h);
	}
	add_lm_head(c, n, s, -1, (double)c->t->vocab);
}

static enum tp_tri tri(bool b)
{
	return b ? TP_TRI_YES : TP_TRI_NO;
}

/* The model's architecture record: t->info's descriptive figures plus
 * everything the builder knows from t. */
static void fill_arch(const struct tp_tf *t, int64_t kv, struct tp_arch *a)
{
	*a = t->info;
	a->hidden = t->hidden;
	a->heads = t->heads;
	a->kv_heads = kv;
	a->layers = t->layers + t->dec_layers;
	a->vocab = t->vocab;
	a->ffn = t->ffn;
	a->experts = t->experts;
	snprintf(a->family, sizeof(a->family), "%s",
		 t->family ? t->family : "");
	a->stack = t->dec_layers > 0	       ? TP_STACK_ENCODER_DECODER
		   : t->head == TP_TF_HEAD_LM ? TP_STACK_DECODER
					      : TP_STACK_ENCODER;
	a->decoder_layers = t->dec_layers;
	a->head_dim = t->kv_lora > 0	? 0
		      : t->head_dim > 0 ? t->head_dim
					: t->hidden / t->heads;
	if (t->pos_embeddings > 0) {
		a->position = TP_POS_LEARNED;
		a->max_positions = t->pos_embeddings;
	} else if (t->rel_buckets > 0) {
		a->position = TP_POS_RELATIVE;
	}
	a->activation = t->act;
	a->norm = t->norm;
	a->norm_position = t->norm_pos;
	a->qk_norm = t->qk_norm;
	a->parallel_attn = tri(t->parallel_attn);
	if (t->vocab > 0)
		a->tied_embeddings = tri(t->tied_head);
	a->qkv_bias = tri(t->attn_bias);
	a->out_bias = tri(t->out_bias);
	a->mlp_bias = tri(t->mlp_bias);
	a->window = t->window;
	a->window_pattern = t->window > 0 ? t->window_pattern : 0;
	if (t->experts > 0) {
		a->top_k = t->top_k;
		a->moe_ffn = t->moe_ffn > 0 ? t->moe_ffn : t->ffn;
		a->shared_experts = t->shared_experts;
		a->shared_ffn = t->shared_ffn;
		if (t->shared_experts > 0)
			a->shared_expert_gate = tri(t->shared_gate);
		a->first_dense_layers = t->first_dense;
		a->router_expert_bias = tri(t->router_bias);
	}
	a->q_lora_rank = t->q_lora;
	a->kv_lora_rank = t->kv_lora;
	if (t->kv_lora > 0) {
		a->qk_nope_dim = t->qk_nope;
		a->qk_rope_dim = t->qk_rope;
		a->v_head_dim = t->v_dim;
	}
	if (t->patch_size > 0) {
		a->image_size = t->image_size;
		a->patch_size = t->patch_size;
		a->channels = t->channels;
		a->classes = t->classes;
	}
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
	kv = t->kv_lora > 0 ? t->heads : t->kv_heads > 0 ? t->kv_heads : t->heads;
	c.h = (double)t->hidden;
	c.hd = (double)(t->head_dim > 0 ? t->head_dim : t->hidden / t->heads);
	c.qd = (double)t->heads * c.hd;
	c.kvd = (double)kv * c.hd;
	/* a tensor-parallel rank must hold whole KV groups: t | kv_heads
	 * (kv_heads divides heads) */
	c.head_units = (uint32_t)kv;
	tp_gb_name(&c.g, t->name ? t->name : "gpt");

	if (t->patch_size > 0)
		x = add_patch_embedding(&c, s);
	else
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
	if (t->head == TP_TF_HEAD_LM || t->head == TP_TF_HEAD_CLS) {
		if (t->final_norm) {
			uint32_t n = add_norm(&c, NULL, "final_norm", -1, s, 0);
			tp_gb_edge(&c.g, last, n, c.e * s * c.h);
			last = n;
		}
		if (t->head == TP_TF_HEAD_CLS)
			add_cls_head(&c, last);
		else
			add_lm_head(&c, last, s, -1, 0);
	} else {
		add_bert_head(&c, last, s);
	}
	if (!c.g.st) {
		fill_arch(t, kv, &m->arch);
		c.g.st = tp_model_finalize(m, err);
		/* what the loader would refuse is not written */
		if (!c.g.st)
			c.g.st = tp_io_model_check_ranges(m, err);
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
	t.dropout = d->dropout != TP_GPT_NO_DROPOUT;
	t.no_attn_dropout = d->dropout == TP_GPT_NO_ATTN_DROPOUT;
	return tp_build_transformer(&t, m, err);
}

void tp_gpt_dims_default(struct tp_gpt_dims *d)
{
	memset(d, 0, sizeof(*d));
	d->dtype = TP_DTYPE_BF16;
}
