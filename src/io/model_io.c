/*
 * model_io.c - tagplan-model/1 <-> struct tp_model (README section 1).
 */
#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/jsonw.h"
#include "io_int.h"

static const char *const model_fields[] = {
    "format", "name",	   "global_batch_size",
    "dtype",  "optimizer", "sequence_length",
    "arch",   "ops",	   "edges",
    NULL};
static const char *const op_fields[] = {"name",
					"kind",
					"forward_flop_per_sample",
					"backward_flop_per_sample",
					"parameter_bytes",
					"output_bytes_per_sample",
					"saved_bytes_per_sample",
					"memory_bytes_per_sample",
					"tp_split",
					"tp_units",
					"layer",
					"selective_recompute",
					"profile",
					NULL};
static const char *const profile_fields[] = {
	"device_type", "batch",       "forward_s",        "backward_s",
	"tp",          "tp_comm_s",   "optimizer_s",      "activation_bytes",
	"state_bytes", NULL};
static const char *const edge_fields[] = {"from", "to", "bytes_per_sample",
					  NULL};

#define KINDS                                                                  \
	"input | embedding | matmul | conv | attention | norm | elementwise "  \
	"| softmax | pool | loss | router | other"

static int parse_kind(const char *s)
{
	return tp_op_kind_parse(s);
}
/* Other frameworks' names of tagplan's op kinds ("linear" is a matmul):
 * the kind meant, or NULL. */
static const char *kind_synonym(const char *s)
{
	static const char *const syn[][2] = {
	    {"linear", "matmul"},	{"dense", "matmul"},
	    {"fc", "matmul"},		{"gemm", "matmul"},
	    {"mm", "matmul"},		{"bmm", "matmul"},
	    {"addmm", "matmul"},	{"mlp", "matmul"},
	    {"layernorm", "norm"},	{"layer_norm", "norm"},
	    {"rmsnorm", "norm"},	{"batchnorm", "norm"},
	    {"batch_norm", "norm"},	{"groupnorm", "norm"},
	    {"relu", "elementwise"},	{"gelu", "elementwise"},
	    {"silu", "elementwise"},	{"swiglu", "elementwise"},
	    {"add", "elementwise"},	{"mul", "elementwise"},
	    {"dropout", "elementwise"}, {"activation", "elementwise"},
	    {"residual", "elementwise"}, {"conv2d", "conv"},
	    {"conv1d", "conv"},		{"conv3d", "conv"},
	    {"convolution", "conv"},	{"self_attention", "attention"},
	    {"mha", "attention"},	{"sdpa", "attention"},
	    {"flash_attention", "attention"},
	    {"maxpool", "pool"},	{"avgpool", "pool"},
	    {"pooling", "pool"},	{"embed", "embedding"},
	    {"embeddings", "embedding"}, {"cross_entropy", "loss"},
	    {"crossentropy", "loss"},	{"gate", "router"}};

	for (size_t i = 0; i < sizeof(syn) / sizeof(syn[0]); i++)
		if (!strcasecmp(s, syn[i][0]))
			return syn[i][1];
	return NULL;
}

static int parse_split(const char *s)
{
	return tp_tp_split_parse(s);
}
static int parse_dtype(const char *s)
{
	return tp_dtype_parse(s);
}
static int parse_opt(const char *s)
{
	return tp_optimizer_parse(s);
}

/* The range of a number of "arch" (0, unknown, is taken besides): the
 * HF config's field it records (io_int.h); -1 for none. */
static int arch_range(const char *key)
{
	static const struct {
		const char *key;
		enum tp_hf_range r;
	} map[] = {
	    {"norm_eps", TP_HF_EPS},
	    {"rope_theta", TP_HF_ROPE_BASE},
	    {"rope_local_theta", TP_HF_ROPE_BASE},
	    {"rope_scaling_factor", TP_HF_ROPE_FACTOR},
	    {"attn_softcap", TP_HF_SOFTCAP},
	    {"logit_softcap", TP_HF_SOFTCAP},
	    {"router_scale", TP_HF_ROUTER_SCALE},
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(map[i].key, key))
			return (int)map[i].r;
	return -1;
}

/* A number of "arch" out of its field's range (exported as it is). */
static enum tp_status arch_number(struct tp_jctx *j, const char *key, double v)
{
	int r = arch_range(key);
	char want[160];

	if (v == 0 || r < 0 || tp_hf_in_range((enum tp_hf_range)r, v))
		return TP_OK;
	tp_hf_range_text((enum tp_hf_range)r, want, sizeof(want));
	return tp_jctx_fail(j, key, "expected 0 (unknown) or %s, got %.15g",
			    want, v);
}

/* The "arch" object: every field of tp_arch_fields, optional; absent
 * fields stay unknown (0). */
static enum tp_status read_arch(struct tp_jctx *j, const struct tp_json *a,
				struct tp_arch *arch)
{
	const char *known[64];
	enum tp_status st;
	size_t old = tp_jctx_push_key(j, "arch");

	assert(tp_arch_n_fields < sizeof(known) / sizeof(known[0]));
	for (size_t k = 0; k < tp_arch_n_fields; k++)
		known[k] = tp_arch_fields[k].key;
	known[tp_arch_n_fields] = NULL;
	if ((st = tp_jctx_object(j, a, "\"arch\"", known)))
		return st;
	for (size_t k = 0; k < tp_arch_n_fields; k++) {
		const struct tp_arch_field *f = &tp_arch_fields[k];
		char *p = (char *)arch + f->offset;
		const char *s;
		bool b, present = tp_json_get(a, f->key) != NULL;
		int e;

		switch (f->type) {
		case TP_ARCH_INT:
			st = tp_jget_int(j, a, f->key, false, 0, INT64_MAX, 0,
					 (int64_t *)(void *)p);
			break;
		case TP_ARCH_NUM:
			st = tp_jget_number(j, a, f->key, false,
					    TP_JNUM_NONNEG, 0,
					    (double *)(void *)p, NULL);
			if (!st)
				st = arch_number(j, f->key,
						 *(double *)(void *)p);
			break;
		case TP_ARCH_TRI:
			st = tp_jget_bool(j, a, f->key, false, false, &b);
			if (!st && present)
				*(enum tp_tri *)(void *)p =
					b ? TP_TRI_YES : TP_TRI_NO;
			break;
		case TP_ARCH_ENUM:
			st = tp_jget_enum(j, a, f->key, false, f->parse,
					  f->choices, 0, &e);
			if (!st)
				*(int *)(void *)p = e;
			break;
		default:
			st = tp_jget_string(j, a, f->key, false, f->size - 1,
					    false, "", &s);
			if (!st)
				snprintf(p, f->size, "%s", s);
			break;
		}
		if (st)
			return st;
	}
	tp_jctx_pop(j, old);
	return TP_OK;
}

/* The recorded fields of a as the members of a JSON object. */
static void arch_write_fields(struct tp_jw *jw, const struct tp_arch *a)
{
	for (size_t k = 0; k < tp_arch_n_fields; k++) {
		const struct tp_arch_field *f = &tp_arch_fields[k];
		const char *p = (const char *)a + f->offset;

		if (!tp_arch_field_set(a, f))
			continue;
		switch (f->type) {
		case TP_ARCH_INT:
			tp_jw_kv_int(jw, f->key,
				     *(const int64_t *)(const void *)p);
			break;
		case TP_ARCH_NUM:
			tp_jw_kv_number(jw, f->key,
					*(const double *)(const void *)p);
			break;
		case TP_ARCH_TRI:
			tp_jw_kv_bool(jw, f->key,
				      *(const enum tp_tri *)(const void *)p ==
					      TP_TRI_YES);
			break;
		case TP_ARCH_ENUM:
			tp_jw_kv_string(jw, f->key,
					f->name(*(const int *)(const void *)p));
			break;
		default:
			tp_jw_kv_string(jw, f->key, p);
			break;
		}
	}
}

/* Suggest the op closest to name, for "unknown op" messages. */
static void op_hint(const struct tp_model *m, const char *name, char *buf,
		    size_t size)
{
	const char *best = NULL;
	size_t bd = (size_t)-1, cap = strlen(name) / 3 + 2;

	buf[0] = '\0';
	for (size_t k = 0; k < m->ops.n; k++) {
		size_t d = tp_edit_distance(name, m->ops.v[k].name, cap);
		if (d <= cap && d < bd) {
			bd = d;
			best = m->ops.v[k].name;
		}
	}
	if (best)
		snprintf(buf, size, " (did you mean \"%.100s\"?)", best);
}

enum tp_status tp_io_model_unknown_op(struct tp_jctx *j, const char *key,
				      const struct tp_model *m,
				      const char *name)
{
	char hint[160];

	op_hint(m, name, hint, sizeof(hint));
	return tp_jctx_fail(j, key,
			    "unknown op \"%.100s\"%s; the model \"%s\" "
			    "has no op of that name",
			    name, hint, m->name);
}

/* A profile point's tp degree and optional measured figures
 * (core/model.h struct tp_profile). */
static enum tp_status read_profile_extra(struct tp_jctx *j,
					 const struct tp_json *pv,
					 struct tp_profile *p)
{
	static const struct {
		const char *key;
		unsigned bit;
		enum tp_io_quantity q;
		size_t off;
	} opt[] = {
		{"tp_comm_s", TP_PROFILE_HAS_TP_COMM, TP_IOQ_OP_SECONDS,
		 offsetof(struct tp_profile, tp_comm_s)},
		{"optimizer_s", TP_PROFILE_HAS_OPTIMIZER, TP_IOQ_OP_SECONDS,
		 offsetof(struct tp_profile, optimizer_s)},
		{"activation_bytes", TP_PROFILE_HAS_ACTIVATION,
		 TP_IOQ_SAMPLE_BYTES,
		 offsetof(struct tp_profile, activation_bytes)},
		{"state_bytes", TP_PROFILE_HAS_STATE, TP_IOQ_OP_BYTES,
		 offsetof(struct tp_profile, state_bytes)},
	};
	int64_t tp;
	enum tp_status st;

	if ((st = tp_jget_int(j, pv, "tp", false, 1, 1 << 20, 1, &tp)))
		return st;
	p->tp = (uint32_t)tp;
	for (size_t k = 0; k < sizeof(opt) / sizeof(opt[0]); k++) {
		double *f = (double *)((char *)p + opt[k].off);
		if ((st = tp_io_get_quantity(j, pv, opt[k].key, false,
					     TP_JNUM_NONNEG, opt[k].q, 0, f)))
			return st;
		if (tp_json_get(pv, opt[k].key))
			p->has |= opt[k].bit;
	}
	return TP_OK;
}

static enum tp_status read_op(struct tp_jctx *j, const struct tp_json *v,
			      struct tp_model *m, bool *mem_given)
{
	struct tp_op op = tp_op_default();
	const struct tp_json *prof;
	int kind, split;
	int64_t units, layer;
	bool has_bwd, has_saved;
	enum tp_status st;
	uint32_t idx;

	if ((st = tp_jctx_object(j, v, "an op", op_fields)) ||
	    (st = tp_io_get_name(j, v, "name", true, TP_IO_NAME_MAX, NULL,
				 &op.name)))
		return st;
	{
		const struct tp_json *k = tp_json_get(v, "kind");
		const char *meant = k && k->type == TP_JSON_STRING &&
					    parse_kind(k->str) < 0
					? kind_synonym(k->str)
					: NULL;
		if (meant)
			return tp_jctx_fail(j, "kind",
					    "\"%.40s\" is \"%s\" in tagplan "
					    "(its kinds: %s)",
					    k->str, meant, KINDS);
	}
	if ((st = tp_jget_enum(j, v, "kind", true, parse_kind, KINDS, 0,
			       &kind)) ||
	    (st = tp_io_get_quantity(j, v, "forward_flop_per_sample", true,
				 TP_JNUM_NONNEG, TP_IOQ_FLOP_PER_SAMPLE, 0, &op.flop)) ||
	    (st = tp_io_get_quantity(j, v, "backward_flop_per_sample", false,
				 TP_JNUM_NONNEG, TP_IOQ_FLOP_PER_SAMPLE, 0, &op.backward_flop)) ||
	    (st = tp_io_get_quantity(j, v, "parameter_bytes", true,
				 TP_JNUM_NONNEG, TP_IOQ_OP_BYTES, 0, &op.param_bytes)) ||
	    (st = tp_io_get_quantity(j, v, "output_bytes_per_sample", true,
				 TP_JNUM_NONNEG, TP_IOQ_SAMPLE_BYTES, 0, &op.out_bytes)) ||
	    (st = tp_io_get_quantity(j, v, "saved_bytes_per_sample", false,
				 TP_JNUM_NONNEG, TP_IOQ_SAMPLE_BYTES, 0, &op.saved_bytes)) ||
	    (st =
		 tp_io_get_quantity(j, v, "memory_bytes_per_sample", false,
				TP_JNUM_NONNEG, TP_IOQ_SAMPLE_BYTES, 0, &op.mem_bytes)) ||
	    (st = tp_jget_enum(j, v, "tp_split", false, parse_split,
			       "none | column | row | sharded | vocab",
			       TP_SPLIT_NONE, &split)) ||
	    (st = tp_jget_int(j, v, "tp_units", false, 0, UINT32_MAX, 0, &units)) ||
	    (st = tp_jget_int(j, v, "layer", false, -1, INT32_MAX, -1, &layer)) ||
	    (st = tp_jget_bool(j, v, "selective_recompute", false, false,
			       &op.selective_recompute)) ||
	    (st = tp_jget_array(j, v, "profile", false, false, &prof)))
		return st;
	has_bwd = tp_json_get(v, "backward_flop_per_sample") != NULL;
	has_saved = tp_json_get(v, "saved_bytes_per_sample") != NULL;
	*mem_given = tp_json_get(v, "memory_bytes_per_sample") != NULL;
	op.kind = (enum tp_op_kind)kind;
	op.tp_split = (enum tp_tp_split)split;
	op.tp_units = (uint32_t)units;
	op.layer = (int32_t)layer;
	if (!has_bwd) {
		/* the format's default backward FLOP: twice the forward for
		 * ops whose backward computes an input and a weight (or
		 * score) gradient each as large as the forward, once for the
		 * others.  A FLOP count, not core/cost.h's
		 * tp_cost_gemm_like (which kinds run at GEMM efficiency):
		 * embeddings are lookups there, and the MoE router keeps the
		 * 1x it always had here (models written without
		 * backward_flop_per_sample load as before). */
		bool gemm = op.kind == TP_OP_MATMUL || op.kind == TP_OP_CONV ||
			    op.kind == TP_OP_EMBEDDING ||
			    op.kind == TP_OP_ATTENTION;
		op.backward_flop = gemm ? 2 * op.flop : op.flop;
	}
	if (!has_saved)
		op.saved_bytes = op.out_bytes;
	if (tp_model_find_op(m, op.name) != TP_NONE) {
		char first[64];
		snprintf(first, sizeof(first), "$.ops[%u]",
			 tp_model_find_op(m, op.name));
		return tp_jctx_fail(j, "name",
				    "duplicate op name \"%s\" (first used by "
				    "%s); op names must be unique",
				    op.name, first);
	}
	if ((st = tp_model_add_op(m, &op, &idx, j->err)))
		return tp_io_wrap(j, "name", st);
	for (size_t k = 0; prof && k < prof->n; k++) {
		const struct tp_json *pv = prof->items[k];
		struct tp_profile p;
		size_t old = tp_jctx_push_key(j, "profile");

		tp_jctx_push_index(j, k);
		memset(&p, 0, sizeof(p));
		if ((st = tp_jctx_object(j, pv, "a profile entry",
					 profile_fields)) ||
		    (st = tp_jget_string(j, pv, "device_type", true,
					 TP_IO_NAME_MAX, true, NULL,
					 &p.device_type)) ||
		    (st = tp_io_get_quantity(j, pv, "batch", true, TP_JNUM_POS,
					 TP_IOQ_PROFILE_BATCH, 0,
					 &p.batch)) ||
		    (st = tp_io_get_quantity(j, pv, "forward_s", true,
					 TP_JNUM_NONNEG, TP_IOQ_OP_SECONDS, 0, &p.forward_s)) ||
		    (st = tp_io_get_quantity(j, pv, "backward_s", true,
					 TP_JNUM_NONNEG, TP_IOQ_OP_SECONDS, 0, &p.backward_s)) ||
		    (st = read_profile_extra(j, pv, &p)))
			return st;
		for (size_t q = 0; q < k; q++) {
			const struct tp_profile *e =
			    &m->profiles.v[m->ops.v[idx].prof_first + q];
			if (strcmp(e->device_type, p.device_type) == 0 &&
			    e->batch == p.batch && e->tp == p.tp)
				return tp_jctx_fail(
				    j, "batch",
				    "a second point at batch %g, tp %u for "
				    "\"%s\" (the first is profile[%zu]); give "
				    "each (device_type, batch, tp) once",
				    p.batch, p.tp, p.device_type, q);
		}
		if ((st = tp_model_add_profile(m, idx, &p, j->err)))
			return tp_io_wrap(j, NULL, st);
		tp_jctx_pop(j, old);
	}
	return TP_OK;
}

static enum tp_status read_model(struct tp_jctx *j, const struct tp_json *root,
				 struct tp_model *m)
{
	const struct tp_json *arch, *ops, *edges;
	const char *name;
	int64_t gbs, seq;
	int dtype, opt;
	bool *mem_given = NULL;
	enum tp_status st;

	if ((st = tp_jctx_object(j, root, "a model", model_fields)) ||
	    (st = tp_io_get_name(j, root, "name", true, TP_IO_NAME_MAX, NULL,
				 &name)) ||
	    (st = tp_jget_int(j, root, "global_batch_size", true, 1,
			      TP_IO_MAX_GLOBAL_BATCH,
			      0, &gbs)) ||
	    (st = tp_jget_enum(j, root, "dtype", true, parse_dtype,
			       "fp32 | fp16 | bf16 | fp8", 0, &dtype)) ||
	    (st = tp_jget_enum(j, root, "optimizer", true, parse_opt,
			       "adam | adamw | sgd | momentum", 0, &opt)) ||
	    (st = tp_jget_int(j, root, "sequence_length", false, 0,
			      TP_IO_MAX_SEQUENCE,
			      0, &seq)) ||
	    (st = tp_jget_object(j, root, "arch", false, &arch)) ||
	    (st = tp_jget_array(j, root, "ops", true, true, &ops)) ||
	    (st = tp_jget_array(j, root, "edges", false, false, &edges)))
		return st;
	m->name = tp_arena_strdup(&m->arena, name);
	if (!m->name)
		return tp_error_set(j->err, TP_ENOMEM, "out of memory");
	m->global_batch = gbs;
	m->seq_len = seq;
	m->dtype = (enum tp_dtype)dtype;
	m->optimizer = (enum tp_optimizer)opt;
	if (arch && (st = read_arch(j, arch, &m->arch)))
		return st;
	mem_given = tp_calloc(ops->n, sizeof(*mem_given));
	if (!mem_given)
		return tp_error_set(j->err, TP_ENOMEM, "out of memory");
	for (size_t k = 0; k < ops->n; k++) {
		size_t old = tp_jctx_push_key(j, "ops");
		tp_jctx_push_index(j, k);
		if ((st = read_op(j, ops->items[k], m, &mem_given[k])))
			goto out;
		tp_jctx_pop(j, old);
	}
	for (size_t k = 0; edges && k < edges->n; k++) {
		const struct tp_json *e = edges->items[k];
		const char *from, *to;
		double bytes;
		uint32_t s, d;
		size_t old = tp_jctx_push_key(j, "edges");

		tp_jctx_push_index(j, k);
		if ((st = tp_jctx_object(j, e, "an edge", edge_fields)) ||
		    (st = tp_jget_string(j, e, "from", true, TP_IO_NAME_MAX,
					 true, NULL, &from)) ||
		    (st = tp_jget_string(j, e, "to", true, TP_IO_NAME_MAX, true,
					 NULL, &to)) ||
		    (st = tp_io_get_quantity(j, e, "bytes_per_sample", true,
					 TP_JNUM_NONNEG, TP_IOQ_SAMPLE_BYTES, 0, &bytes)))
			goto out;
		s = tp_model_find_op(m, from);
		d = tp_model_find_op(m, to);
		if (s == TP_NONE) {
			st = tp_io_model_unknown_op(j, "from", m, from);
			goto out;
		}
		if (d == TP_NONE) {
			st = tp_io_model_unknown_op(j, "to", m, to);
			goto out;
		}
		if (s == d) {
			st = tp_jctx_fail(
			    j, "to", "edge from op \"%s\" to itself", from);
			goto out;
		}
		if ((st = tp_model_add_edge(m, s, d, bytes, j->err))) {
			st = tp_io_wrap(j, NULL, st);
			goto out;
		}
		if (!mem_given[d])
			m->ops.v[d].mem_bytes += bytes;
		tp_jctx_pop(j, old);
	}
	for (size_t k = 0; k < ops->n; k++)
		if (!mem_given[k])
			m->ops.v[k].mem_bytes += m->ops.v[k].out_bytes;
	if ((st = tp_model_finalize(m, j->err)) ||
	    (st = tp_io_model_check_ranges(m, j->err)))
		tp_error_set_file(j->err, j->file);
out:
	free(mem_given);
	return st;
}

enum tp_status tp_model_load(const char *name, const char *text, size_t len,
			     const struct tp_load_options *o,
			     struct tp_model *m, struct tp_error *err)
{
	struct tp_json_doc doc;
	struct tp_jctx j;
	enum tp_status st;

	tp_model_release(m);
	tp_model_init(m);
	st = tp_io_parse(name, text, len, o, "tagplan-model/1", &doc, &j, err);
	if (st)
		return st;
	st = read_model(&j, doc.root, m);
	tp_json_doc_release(&doc);
	if (st) {
		tp_error_set_file(err, name);
		tp_model_release(m);
		tp_model_init(m);
	}
	return st;
}

enum tp_status tp_model_load_file(const char *path,
				  const struct tp_load_options *o,
				  struct tp_model *m, struct tp_error *err)
{
	char *text;
	size_t len;
	enum tp_status st;

	st = tp_file_read_text(path, o ? o->max_bytes : 0, &text, &len, err);
	if (st) {
		tp_model_release(m);
		tp_model_init(m);
		return st;
	}
	st = tp_model_load(path, text, len, o, m, err);
	free(text);
	return st;
}

void tp_model_write(const struct tp_model *m, struct tp_strbuf *out)
{
	struct tp_jw jw;
	const struct tp_arch *a = &m->arch;

	tp_jw_init(&jw, out, true);
	tp_jw_object_begin(&jw);
	tp_jw_kv_string(&jw, "format", "tagplan-model/1");
	tp_jw_kv_string(&jw, "name", m->name);
	tp_jw_kv_int(&jw, "global_batch_size", m->global_batch);
	tp_jw_kv_string(&jw, "dtype", tp_dtype_name(m->dtype));
	tp_jw_kv_string(&jw, "optimizer", tp_optimizer_name(m->optimizer));
	if (m->seq_len)
		tp_jw_kv_int(&jw, "sequence_length", m->seq_len);
	for (size_t k = 0; k < tp_arch_n_fields; k++)
		if (tp_arch_field_set(a, &tp_arch_fields[k])) {
			tp_jw_key(&jw, "arch");
			tp_jw_object_begin(&jw);
			arch_write_fields(&jw, a);
			tp_jw_object_end(&jw);
			break;
		}
	tp_jw_key(&jw, "ops");
	tp_jw_array_begin(&jw);
	for (size_t k = 0; k < m->ops.n; k++) {
		const struct tp_op *op = &m->ops.v[k];
		tp_jw_object_begin(&jw);
		tp_jw_kv_string(&jw, "name", op->name);
		tp_jw_kv_string(&jw, "kind", tp_op_kind_name(op->kind));
		tp_jw_kv_number(&jw, "forward_flop_per_sample", op->flop);
		tp_jw_kv_number(&jw, "backward_flop_per_sample",
				op->backward_flop);
		tp_jw_kv_number(&jw, "parameter_bytes", op->param_bytes);
		tp_jw_kv_number(&jw, "output_bytes_per_sample", op->out_bytes);
		tp_jw_kv_number(&jw, "saved_bytes_per_sample", op->saved_bytes);
		tp_jw_kv_number(&jw, "memory_bytes_per_sample", op->mem_bytes);
		if (op->tp_split != TP_SPLIT_NONE)
			tp_jw_kv_string(&jw, "tp_split",
					tp_tp_split_name(op->tp_split));
		if (op->tp_units)
			tp_jw_kv_int(&jw, "tp_units", op->tp_units);
		if (op->layer >= 0)
			tp_jw_kv_int(&jw, "layer", op->layer);
		if (op->selective_recompute)
			tp_jw_kv_bool(&jw, "selective_recompute", true);
		if (op->n_prof) {
			tp_jw_key(&jw, "profile");
			tp_jw_array_begin(&jw);
			for (uint32_t p = 0; p < op->n_prof; p++) {
				const struct tp_profile *pr =
				    &m->profiles.v[op->prof_first + p];
				tp_jw_object_begin(&jw);
				tp_jw_kv_string(&jw, "device_type",
						pr->device_type);
				tp_jw_kv_number(&jw, "batch", pr->batch);
				tp_jw_kv_number(&jw, "forward_s",
						pr->forward_s);
				tp_jw_kv_number(&jw, "backward_s",
						pr->backward_s);
				if (pr->tp > 1)
					tp_jw_kv_int(&jw, "tp", pr->tp);
				if (pr->has & TP_PROFILE_HAS_TP_COMM)
					tp_jw_kv_number(&jw, "tp_comm_s",
							pr->tp_comm_s);
				if (pr->has & TP_PROFILE_HAS_OPTIMIZER)
					tp_jw_kv_number(&jw, "optimizer_s",
							pr->optimizer_s);
				if (pr->has & TP_PROFILE_HAS_ACTIVATION)
					tp_jw_kv_number(&jw, "activation_bytes",
							pr->activation_bytes);
				if (pr->has & TP_PROFILE_HAS_STATE)
					tp_jw_kv_number(&jw, "state_bytes",
							pr->state_bytes);
				tp_jw_object_end(&jw);
			}
			tp_jw_array_end(&jw);
		}
		tp_jw_object_end(&jw);
	}
	tp_jw_array_end(&jw);
	tp_jw_key(&jw, "edges");
	tp_jw_array_begin(&jw);
	for (size_t k = 0; k < m->edges.n; k++) {
		const struct tp_edge *e = &m->edges.v[k];
		tp_jw_object_begin(&jw);
		tp_jw_kv_string(&jw, "from", m->ops.v[e->src].name);
		tp_jw_kv_string(&jw, "to", m->ops.v[e->dst].name);
		tp_jw_kv_number(&jw, "bytes_per_sample", e->bytes);
		tp_jw_object_end(&jw);
	}
	tp_jw_array_end(&jw);
	tp_jw_object_end(&jw);
	tp_jw_finish(&jw);
}
