#include "model.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tp_model_init(struct tp_model *m)
{
	memset(m, 0, sizeof(*m));
	tp_arena_init(&m->arena, 0);
	tp_strmap_init(&m->by_name);
	m->name = "";
	m->dtype = TP_DTYPE_FP32;
	m->optimizer = TP_OPT_ADAM;
}

void tp_model_release(struct tp_model *m)
{
	if (!m)
		return;
	tp_vec_free(&m->ops);
	tp_vec_free(&m->edges);
	tp_vec_free(&m->profiles);
	tp_strmap_release(&m->by_name);
	free(m->adj);
	free(m->topo);
	free(m->topo_pos);
	free(m->expert);
	tp_arena_release(&m->arena);
	memset(m, 0, sizeof(*m));
}

struct tp_op tp_op_default(void)
{
	struct tp_op op;

	memset(&op, 0, sizeof(op));
	op.name = "";
	op.kind = TP_OP_OTHER;
	op.tp_split = TP_SPLIT_NONE;
	op.layer = -1;
	return op;
}

enum tp_status tp_model_add_op(struct tp_model *m, const struct tp_op *op,
			       uint32_t *index, struct tp_error *err)
{
	struct tp_op copy = *op;
	uint32_t idx, old;
	int r;

	if (m->ops.n >= TP_NONE - 1)
		return tp_error_set(err, TP_ELIMIT, "too many ops");
	idx = (uint32_t)m->ops.n;
	copy.name = tp_arena_strdup(&m->arena, op->name);
	if (!copy.name)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	copy.prof_first = 0;
	copy.n_prof = 0;
	copy.in_first = copy.n_in = copy.out_first = copy.n_out = 0;
	r = tp_strmap_put(&m->by_name, copy.name, idx, &old);
	if (r < 0)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	if (r > 0)
		return tp_error_set(err, TP_EINPUT,
				    "duplicate op name \"%s\" (first used by "
				    "op %u)",
				    copy.name, old);
	if (tp_vec_push(&m->ops, copy))
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	m->finalized = false;
	if (index)
		*index = idx;
	return TP_OK;
}

enum tp_status tp_model_add_edge(struct tp_model *m, uint32_t src,
				 uint32_t dst, double bytes,
				 struct tp_error *err)
{
	struct tp_edge e = {src, dst, bytes};

	if (src >= m->ops.n || dst >= m->ops.n)
		return tp_error_set(err, TP_EINPUT, "edge to an unknown op");
	if (src == dst)
		return tp_error_set(err, TP_EINPUT,
				    "edge from op \"%s\" to itself",
				    m->ops.v[src].name);
	if (m->edges.n >= TP_NONE / 2)
		return tp_error_set(err, TP_ELIMIT, "too many edges");
	if (tp_vec_push(&m->edges, e))
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	m->finalized = false;
	return TP_OK;
}

enum tp_status tp_model_add_profile(struct tp_model *m, uint32_t op,
				    const struct tp_profile *p,
				    struct tp_error *err)
{
	struct tp_profile copy = *p;
	struct tp_op *o;

	if (op >= m->ops.n)
		return tp_error_set(err, TP_EINPUT, "profile of an unknown op");
	o = &m->ops.v[op];
	if (o->n_prof && o->prof_first + o->n_prof != m->profiles.n)
		return tp_error_set(err, TP_EINTERNAL,
				    "profiles of op \"%s\" must be added "
				    "together",
				    o->name);
	copy.device_type = tp_arena_strdup(&m->arena, p->device_type);
	if (!copy.device_type || tp_vec_push(&m->profiles, copy))
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	if (!o->n_prof)
		o->prof_first = (uint32_t)(m->profiles.n - 1);
	o->n_prof++;
	return TP_OK;
}

uint32_t tp_model_find_op(const struct tp_model *m, const char *name)
{
	return tp_strmap_get(&m->by_name, name);
}

/* Name an op on a cycle: walk back along in-edges among the ops Kahn's
 * algorithm could not order until an op repeats. */
static uint32_t op_on_cycle(const struct tp_model *m, const uint32_t *indeg)
{
	uint32_t n = (uint32_t)m->ops.n, cur = TP_NONE;
	uint8_t *seen;

	for (uint32_t i = 0; i < n; i++)
		if (indeg[i]) {
			cur = i;
			break;
		}
	seen = calloc(n, 1);
	if (!seen)
		return cur;
	while (cur != TP_NONE && !seen[cur]) {
		const uint32_t *in = tp_model_in_edges(m, cur);
		uint32_t next = TP_NONE;
		seen[cur] = 1;
		for (uint32_t k = 0; k < m->ops.v[cur].n_in; k++) {
			uint32_t s = m->edges.v[in[k]].src;
			if (indeg[s]) {
				next = s;
				break;
			}
		}
		if (next == TP_NONE)
			break;
		cur = next;
	}
	free(seen);
	return cur;
}

enum tp_status tp_model_finalize(struct tp_model *m, struct tp_error *err)
{
	uint32_t n = (uint32_t)m->ops.n, e = (uint32_t)m->edges.n;
	uint32_t *indeg = NULL, *queue = NULL, head = 0, tail = 0;
	enum tp_status st = TP_OK;

	if (m->finalized)
		return TP_OK;
	if (n == 0)
		return tp_error_set_path(err, TP_EINPUT, "$.ops",
					 "the model has no ops");
	if (m->global_batch <= 0)
		return tp_error_set_path(err, TP_EINPUT, "$.global_batch_size",
					 "expected a positive batch size");
	free(m->adj);
	free(m->topo);
	free(m->topo_pos);
	free(m->expert);
	m->adj = tp_calloc((size_t)e * 2 + 1, sizeof(*m->adj));
	m->topo = tp_calloc(n, sizeof(*m->topo));
	m->topo_pos = tp_calloc(n, sizeof(*m->topo_pos));
	m->expert = tp_calloc(n, sizeof(*m->expert));
	indeg = tp_calloc(n, sizeof(*indeg));
	queue = m->topo;
	if (!m->adj || !m->topo || !m->topo_pos || !m->expert || !indeg) {
		st = tp_error_set(err, TP_ENOMEM, "out of memory");
		goto out;
	}
	/* CSR: in-edges occupy adj[0, e), out-edges adj[e, 2e). */
	for (uint32_t i = 0; i < n; i++)
		m->ops.v[i].n_in = m->ops.v[i].n_out = 0;
	for (uint32_t k = 0; k < e; k++) {
		m->ops.v[m->edges.v[k].dst].n_in++;
		m->ops.v[m->edges.v[k].src].n_out++;
	}
	{
		uint32_t in_off = 0, out_off = e;
		for (uint32_t i = 0; i < n; i++) {
			m->ops.v[i].in_first = in_off;
			m->ops.v[i].out_first = out_off;
			in_off += m->ops.v[i].n_in;
			out_off += m->ops.v[i].n_out;
			m->ops.v[i].n_in = m->ops.v[i].n_out = 0;
		}
	}
	for (uint32_t k = 0; k < e; k++) {
		struct tp_op *d = &m->ops.v[m->edges.v[k].dst];
		struct tp_op *s = &m->ops.v[m->edges.v[k].src];
		m->adj[d->in_first + d->n_in++] = k;
		m->adj[s->out_first + s->n_out++] = k;
	}
	/* Kahn's algorithm; a FIFO seeded in index order keeps file order
	 * among independent ops, so the order is deterministic. */
	for (uint32_t i = 0; i < n; i++) {
		indeg[i] = m->ops.v[i].n_in;
		if (!indeg[i])
			queue[tail++] = i;
	}
	while (head < tail) {
		uint32_t u = queue[head++];
		const uint32_t *out = tp_model_out_edges(m, u);
		for (uint32_t k = 0; k < m->ops.v[u].n_out; k++) {
			uint32_t v = m->edges.v[out[k]].dst;
			if (--indeg[v] == 0)
				queue[tail++] = v;
		}
	}
	if (tail < n) {
		uint32_t c = op_on_cycle(m, indeg);
		char path[64];
		snprintf(path, sizeof(path), "$.ops[%u]", c);
		st = tp_error_set_path(err, TP_EINPUT, path,
				       "the model graph has a cycle through "
				       "op \"%s\"",
				       c < n ? m->ops.v[c].name : "?");
		goto out;
	}
	m->total_flop = m->total_param_bytes = m->total_saved_bytes = 0;
	for (uint32_t i = 0; i < n; i++) {
		m->topo_pos[m->topo[i]] = i;
		m->total_flop += m->ops.v[i].flop;
		m->total_param_bytes += m->ops.v[i].param_bytes;
		m->total_saved_bytes += m->ops.v[i].saved_bytes;
		m->expert[i] = tp_op_expert_index(m->ops.v[i].name);
	}
	m->finalized = true;
out:
	free(indeg);
	return st;
}

double tp_dtype_bytes(enum tp_dtype d)
{
	return d == TP_DTYPE_FP32 ? 4.0 : 2.0;
}

double tp_model_parameters(const struct tp_model *m)
{
	double b = 0;

	if (m->finalized)
		return m->total_param_bytes / tp_dtype_bytes(m->dtype);
	for (size_t i = 0; i < m->ops.n; i++)
		b += m->ops.v[i].param_bytes;
	return b / tp_dtype_bytes(m->dtype);
}

static int parse_in(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

static const char *const dtype_names[TP_DTYPE_COUNT] = {"fp32", "fp16",
							 "bf16", "fp8"};
static const char *const opt_names[TP_OPT_COUNT] = {"sgd", "momentum",
						     "adam"};
static const char *const kind_names[TP_OP_KIND_COUNT] = {
	"input",   "embedding", "matmul", "conv", "attention", "norm",
	"elementwise", "softmax", "pool", "loss", "router",   "other"};
static const char *const split_names[TP_SPLIT_COUNT] = {
	"none", "column", "row", "sharded", "vocab"};

const char *tp_dtype_name(enum tp_dtype d)
{
	return (unsigned)d < TP_DTYPE_COUNT ? dtype_names[d] : "?";
}

int tp_dtype_parse(const char *s)
{
	return parse_in(dtype_names, TP_DTYPE_COUNT, s);
}

const char *tp_optimizer_name(enum tp_optimizer o)
{
	return (unsigned)o < TP_OPT_COUNT ? opt_names[o] : "?";
}

int tp_optimizer_parse(const char *s)
{
	if (strcmp(s, "adamw") == 0)
		return TP_OPT_ADAM;
	return parse_in(opt_names, TP_OPT_COUNT, s);
}

const char *tp_op_kind_name(enum tp_op_kind k)
{
	return (unsigned)k < TP_OP_KIND_COUNT ? kind_names[k] : "?";
}

int tp_op_kind_parse(const char *s)
{
	return parse_in(kind_names, TP_OP_KIND_COUNT, s);
}

const char *tp_tp_split_name(enum tp_tp_split s)
{
	return (unsigned)s < TP_SPLIT_COUNT ? split_names[s] : "?";
}

int tp_tp_split_parse(const char *s)
{
	return parse_in(split_names, TP_SPLIT_COUNT, s);
}

/* ---- architecture description (struct tp_arch) ------------------------ */

static const char *const stack_names[TP_STACK_COUNT] = {
	"unknown", "decoder", "encoder", "encoder_decoder"};
static const char *const act_names[TP_ACT_COUNT] = {
	"unknown", "gelu",   "gelu_tanh", "quick_gelu",
	"relu",    "silu",   "tanh",      "swiglu",
	"geglu",   "geglu_tanh", "reglu"};
static const char *const norm_names[TP_NORM_COUNT] = {
	"unknown", "layernorm", "layernorm_nobias", "layernorm_noaffine",
	"rmsnorm"};
static const char *const normpos_names[TP_NORMPOS_COUNT] = {
	"unknown", "pre", "post", "pre_post", "sublayer"};
static const char *const qknorm_names[TP_QKNORM_COUNT] = {"unknown", "none",
							  "head", "full"};
static const char *const pos_names[TP_POS_COUNT] = {
	"unknown", "none", "learned", "sinusoidal", "rope", "alibi",
	"relative"};
static const char *const router_names[TP_ROUTER_COUNT] = {
	"unknown", "softmax", "sigmoid"};

/* name/parse pairs over a table whose entry 0 is "unknown" (never parsed:
 * an absent field is how a file says unknown) */
#define TP_ARCH_ENUM_FUNCS(fn, table, count)                                  \
	const char *tp_##fn##_name(int v)                                     \
	{                                                                     \
		return v >= 0 && v < (count) ? table[v] : "?";                \
	}                                                                     \
	int tp_##fn##_parse(const char *s)                                    \
	{                                                                     \
		int i = parse_in(table, (count), s);                          \
		return i > 0 ? i : -1;                                        \
	}
TP_ARCH_ENUM_FUNCS(stack, stack_names, TP_STACK_COUNT)
TP_ARCH_ENUM_FUNCS(act, act_names, TP_ACT_COUNT)
TP_ARCH_ENUM_FUNCS(norm, norm_names, TP_NORM_COUNT)
TP_ARCH_ENUM_FUNCS(norm_position, normpos_names, TP_NORMPOS_COUNT)
TP_ARCH_ENUM_FUNCS(qk_norm, qknorm_names, TP_QKNORM_COUNT)
TP_ARCH_ENUM_FUNCS(pos, pos_names, TP_POS_COUNT)
TP_ARCH_ENUM_FUNCS(router, router_names, TP_ROUTER_COUNT)
#undef TP_ARCH_ENUM_FUNCS

#define AF_INT(k) {#k, TP_ARCH_INT, offsetof(struct tp_arch, k), 0, 0, 0, 0}
#define AF_NUM(k) {#k, TP_ARCH_NUM, offsetof(struct tp_arch, k), 0, 0, 0, 0}
#define AF_TRI(k) {#k, TP_ARCH_TRI, offsetof(struct tp_arch, k), 0, 0, 0, 0}
#define AF_STR(k)                                                             \
	{#k, TP_ARCH_STR, offsetof(struct tp_arch, k),                         \
	 sizeof(((struct tp_arch *)0)->k), 0, 0, 0}
#define AF_ENUM(k, fn, choices)                                               \
	{#k,	 TP_ARCH_ENUM,	  offsetof(struct tp_arch, k), 0, tp_##fn##_name, \
	 tp_##fn##_parse, choices}

/* File order: the seven sizes and family first, as tagplan-model/1 always
 * wrote them, then the rest. */
const struct tp_arch_field tp_arch_fields[] = {
	AF_INT(hidden),
	AF_INT(heads),
	AF_INT(kv_heads),
	AF_INT(layers),
	AF_INT(vocab),
	AF_INT(ffn),
	AF_INT(experts),
	AF_STR(family),
	AF_ENUM(stack, stack, "decoder | encoder | encoder_decoder"),
	AF_INT(decoder_layers),
	AF_INT(head_dim),
	AF_INT(max_positions),
	AF_ENUM(activation, act,
		"gelu | gelu_tanh | quick_gelu | relu | silu | tanh | swiglu "
		"| geglu | geglu_tanh | reglu"),
	AF_ENUM(norm, norm,
		"layernorm | layernorm_nobias | layernorm_noaffine | rmsnorm"),
	AF_ENUM(norm_position, norm_position,
		"pre | post | pre_post | sublayer"),
	AF_NUM(norm_eps),
	AF_ENUM(qk_norm, qk_norm, "none | head | full"),
	AF_TRI(parallel_attn),
	AF_ENUM(position, pos,
		"none | learned | sinusoidal | rope | alibi | relative"),
	AF_NUM(rope_theta),
	AF_NUM(rope_local_theta),
	AF_STR(rope_scaling),
	AF_NUM(rope_scaling_factor),
	AF_TRI(tied_embeddings),
	AF_TRI(qkv_bias),
	AF_TRI(out_bias),
	AF_TRI(mlp_bias),
	AF_INT(window),
	AF_INT(window_pattern),
	AF_NUM(attn_softcap),
	AF_NUM(logit_softcap),
	AF_INT(top_k),
	AF_INT(moe_ffn),
	AF_INT(shared_experts),
	AF_INT(shared_ffn),
	AF_TRI(shared_expert_gate),
	AF_INT(first_dense_layers),
	AF_ENUM(router, router, "softmax | sigmoid"),
	AF_INT(router_groups),
	AF_INT(router_group_topk),
	AF_TRI(router_topk_norm),
	AF_TRI(router_expert_bias),
	AF_NUM(router_scale),
	AF_INT(q_lora_rank),
	AF_INT(kv_lora_rank),
	AF_INT(qk_nope_dim),
	AF_INT(qk_rope_dim),
	AF_INT(v_head_dim),
	AF_INT(image_size),
	AF_INT(patch_size),
	AF_INT(channels),
	AF_INT(classes),
};
const size_t tp_arch_n_fields =
	sizeof(tp_arch_fields) / sizeof(tp_arch_fields[0]);

bool tp_arch_field_set(const struct tp_arch *a, const struct tp_arch_field *f)
{
	const char *p = (const char *)a + f->offset;

	switch (f->type) {
	case TP_ARCH_INT:
		return *(const int64_t *)(const void *)p != 0;
	case TP_ARCH_NUM:
		return *(const double *)(const void *)p != 0;
	case TP_ARCH_STR:
		return p[0] != '\0';
	case TP_ARCH_TRI:
		return *(const enum tp_tri *)(const void *)p != TP_TRI_UNKNOWN;
	default:
		return *(const int *)(const void *)p != 0;
	}
}

int64_t tp_op_expert_index(const char *name)
{
	for (const char *p = strstr(name, "expert"); p;
	     p = strstr(p + 1, "expert")) {
		const char *q = p + 6;
		int64_t j = 0;
		if (p != name && p[-1] != '.')
			continue;
		if (*q < '0' || *q > '9')
			continue;
		while (*q >= '0' && *q <= '9' && j < ((int64_t)1 << 40))
			j = 10 * j + (*q++ - '0');
		if (*q == '.')
			return j;
	}
	return -1;
}

double tp_model_active_parameters(const struct tp_model *m)
{
	double all = 0, routed = 0;
	const struct tp_arch *a = &m->arch;

	if (a->experts <= 0 || a->top_k <= 0 || a->top_k > a->experts)
		return -1;
	for (size_t i = 0; i < m->ops.n; i++) {
		all += m->ops.v[i].param_bytes;
		if (tp_model_op_expert(m, (uint32_t)i) >= 0)
			routed += m->ops.v[i].param_bytes;
	}
	return (all - routed + routed * (double)a->top_k / (double)a->experts) /
	       tp_dtype_bytes(m->dtype);
}
