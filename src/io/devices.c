/*
 * devices.c - device types: data/devices.json (the built-in presets) and
 * the inline "device_types" of topology files (README section 2a).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cost.h"
#include "io_int.h"

static const char *const type_fields[] = {"name",
					  "base",
					  "memory_bytes",
					  "memory_bandwidth_Bps",
					  "peak_flops",
					  "gemm_efficiency",
					  "gemm_half_flop",
					  "memory_efficiency",
					  "kernel_overhead_s",
					  "reserved_bytes",
					  "nvls",
					  "price_per_hour",
					  "source",
					  "sources",
					  NULL};
static const char *const flops_fields[] = {"fp32", "fp16", "bf16", "fp8",
					   NULL};

enum tp_status tp_io_read_device_type(struct tp_jctx *j,
				      const struct tp_json *v,
				      const struct tp_cluster *c,
				      bool inline_type,
				      struct tp_device_type *t)
{
	const struct tp_json *pf, *src;
	const char *base = NULL;
	bool has_base;
	enum tp_status st;
	size_t old;

	if ((st = tp_jctx_object(j, v, "a device type", type_fields)))
		return st;
	memset(t, 0, sizeof(*t));
	if ((st = tp_io_get_name(j, v, "name", true, TP_IO_NAME_MAX, NULL,
				 &t->name)))
		return st;
	if (inline_type) {
		if ((st = tp_jget_string(j, v, "base", false, TP_IO_NAME_MAX,
					 true, NULL, &base)))
			return st;
		if (tp_cluster_find_type(c, t->name) != TP_NONE &&
		    c->types.v[tp_cluster_find_type(c, t->name)].builtin)
			return tp_jctx_fail(
			    j, "name",
			    "\"%s\" is a built-in preset; give your type "
			    "another name (with \"base\": \"%s\" to start "
			    "from the preset's figures)",
			    t->name, t->name);
	} else if (tp_json_get(v, "base")) {
		return tp_jctx_fail(j, "base",
				    "\"base\" is only allowed in a topology's "
				    "own device types");
	}
	has_base = base != NULL;
	if (has_base) {
		uint32_t bi;
		const char *name = t->name;
		if ((st = tp_io_find_type(j, "base", c, base, &bi)))
			return st;
		*t = c->types.v[bi];
		t->name = name;
		t->source = NULL;
	} else {
		/* figures of an inline type without "base" (README 2a):
		 * the cost model's defaults (core/cost.h) */
		const struct tp_cost_constants *k = &tp_cost_constants;
		t->gemm_efficiency = k->gemm_efficiency;
		t->gemm_half_flop = k->gemm_half_flop;
		t->memory_efficiency = k->memory_efficiency;
		t->kernel_overhead_s = k->kernel_overhead_s;
		t->reserved_bytes = k->reserved_bytes;
	}
	t->builtin = !inline_type;
	if ((st = tp_io_get_quantity(j, v, "memory_bytes", !has_base, TP_JNUM_POS,
				 TP_IOQ_DEVICE_MEMORY, t->memory_bytes, &t->memory_bytes)) ||
	    (st = tp_io_get_quantity(j, v, "memory_bandwidth_Bps", !has_base,
				 TP_JNUM_POS, TP_IOQ_MEMORY_BANDWIDTH, t->memory_bw_Bps,
				 &t->memory_bw_Bps)) ||
	    (st = tp_jget_object(j, v, "peak_flops", !has_base, &pf)))
		return st;
	if (pf) {
		old = tp_jctx_push_key(j, "peak_flops");
		if ((st = tp_jctx_object(j, pf, "peak FLOP/s per dtype",
					 flops_fields)) ||
		    (st =
			 tp_io_get_quantity(j, pf, "fp32", !has_base, TP_JNUM_POS,
					TP_IOQ_DEVICE_FLOPS, t->peak_flops[TP_DTYPE_FP32],
					&t->peak_flops[TP_DTYPE_FP32])) ||
		    (st =
			 tp_io_get_quantity(j, pf, "fp16", false, TP_JNUM_NONNEG,
					TP_IOQ_DEVICE_FLOPS, t->peak_flops[TP_DTYPE_FP16],
					&t->peak_flops[TP_DTYPE_FP16])) ||
		    (st = tp_io_get_quantity(j, pf, "bf16", false, TP_JNUM_NONNEG,
					 TP_IOQ_DEVICE_FLOPS, t->peak_flops[TP_DTYPE_BF16],
					 &t->peak_flops[TP_DTYPE_BF16])) ||
		    (st = tp_io_get_quantity(j, pf, "fp8", false, TP_JNUM_NONNEG,
					 TP_IOQ_DEVICE_FLOPS, t->peak_flops[TP_DTYPE_FP8],
					 &t->peak_flops[TP_DTYPE_FP8])))
			return st;
		tp_jctx_pop(j, old);
	}
	if ((st = tp_jget_number(j, v, "gemm_efficiency", false,
				 TP_JNUM_FRACTION, t->gemm_efficiency,
				 &t->gemm_efficiency, NULL)) ||
	    (st =
		 tp_io_get_quantity(j, v, "gemm_half_flop", false, TP_JNUM_NONNEG,
				TP_IOQ_GEMM_HALF_FLOP, t->gemm_half_flop, &t->gemm_half_flop)) ||
	    (st = tp_jget_number(j, v, "memory_efficiency", false,
				 TP_JNUM_FRACTION, t->memory_efficiency,
				 &t->memory_efficiency, NULL)) ||
	    (st = tp_io_get_quantity(j, v, "kernel_overhead_s", false,
				 TP_JNUM_NONNEG, TP_IOQ_KERNEL_OVERHEAD, t->kernel_overhead_s,
				 &t->kernel_overhead_s)) ||
	    (st =
		 tp_io_get_quantity(j, v, "reserved_bytes", false, TP_JNUM_NONNEG,
				TP_IOQ_RESERVED_BYTES, t->reserved_bytes, &t->reserved_bytes)) ||
	    (st = tp_jget_bool(j, v, "nvls", false, t->nvls, &t->nvls)) ||
	    (st = tp_jget_number(j, v, "price_per_hour", false,
				 TP_JNUM_NONNEG, t->price_per_hour,
				 &t->price_per_hour, NULL)) ||
	    (st = tp_jget_string(j, v, "source", false, 0, false,
				 has_base ? NULL : "", &t->source)) ||
	    (st = tp_jget_object(j, v, "sources", false, &src)))
		return st;
	if (t->reserved_bytes >= t->memory_bytes)
		return tp_jctx_fail(j, "reserved_bytes",
				    "%.6g reserved bytes leave nothing of the "
				    "device's %.6g bytes of memory",
				    t->reserved_bytes, t->memory_bytes);
	return TP_OK;
}

enum tp_status tp_io_find_type(struct tp_jctx *j, const char *key,
			       const struct tp_cluster *c, const char *name,
			       uint32_t *index)
{
	struct tp_strbuf sug, known;
	const char **names;
	enum tp_status st;
	int n;

	*index = tp_cluster_find_type(c, name);
	if (*index != TP_NONE)
		return TP_OK;
	names = tp_calloc(c->types.n + 1, sizeof(*names));
	if (!names)
		return tp_error_set(j->err, TP_ENOMEM, "out of memory");
	tp_strbuf_init(&sug);
	tp_strbuf_init(&known);
	for (size_t k = 0; k < c->types.n; k++) {
		names[k] = c->types.v[k].name;
		tp_strbuf_addf(&known, "%s%s", k ? ", " : "", names[k]);
	}
	n = tp_io_suggest(name, names, c->types.n, 4, &sug);
	if (n)
		st = tp_jctx_fail(
		    j, key,
		    "unknown device type \"%.100s\" (did you mean "
		    "%s?); known: %s",
		    name, tp_strbuf_cstr(&sug), tp_strbuf_cstr(&known));
	else
		st = tp_jctx_fail(
		    j, key,
		    "unknown device type \"%.100s\"; known: %s (or "
		    "define it under \"device_types\")",
		    name, tp_strbuf_cstr(&known));
	tp_strbuf_release(&sug);
	tp_strbuf_release(&known);
	free(names);
	return st;
}

enum tp_status tp_devices_load(const char *name, const char *text, size_t len,
			       const struct tp_load_options *o,
			       struct tp_cluster *c, struct tp_error *err)
{
	struct tp_json_doc doc;
	struct tp_jctx j;
	const struct tp_json *arr;
	enum tp_status st;
	static const char *const top[] = {"format", "notes", "device_types",
					  NULL};

	st =
	    tp_io_parse(name, text, len, o, "tagplan-devices/1", &doc, &j, err);
	if (st)
		return st;
	if ((st = tp_jctx_object(&j, doc.root, "a device list", top)) ||
	    (st =
		 tp_jget_array(&j, doc.root, "device_types", true, true, &arr)))
		goto out;
	/* two passes, so that a bad entry leaves c unchanged */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t k = 0; k < arr->n; k++) {
			struct tp_device_type t;
			size_t old = tp_jctx_push_key(&j, "device_types");
			tp_jctx_push_index(&j, k);
			if ((st = tp_io_read_device_type(&j, arr->items[k], c,
							 false, &t)))
				goto out;
			if (pass == 0) {
				bool dup =
				    tp_cluster_find_type(c, t.name) != TP_NONE;
				for (size_t q = 0; q < k && !dup; q++) {
					const struct tp_json *nm =
					    tp_json_get(arr->items[q], "name");
					dup = strcmp(nm->str, t.name) == 0;
				}
				if (dup) {
					st = tp_jctx_fail(
					    &j, "name",
					    "duplicate device type \"%s\"",
					    t.name);
					goto out;
				}
			} else if ((st = tp_cluster_add_type(c, &t, NULL,
							     err))) {
				st = tp_io_wrap(&j, "name", st);
				goto out;
			}
			tp_jctx_pop(&j, old);
		}
	}
out:
	tp_json_doc_release(&doc);
	if (st)
		tp_error_set_file(err, name);
	return st;
}

enum tp_status tp_devices_load_builtin(struct tp_cluster *c,
				       struct tp_error *err)
{
	char path[4096];
	char *text = NULL;
	size_t len;
	struct tp_load_options o;
	enum tp_status st;

	for (size_t k = 0; k < c->types.n; k++)
		if (c->types.v[k].builtin)
			return TP_OK;
	if ((st = tp_data_path("devices.json", path, sizeof(path), err)))
		return st;
	if ((st = tp_file_read(path, 0, &text, &len, err)))
		return st;
	tp_load_options_default(&o);
	o.strict = true; /* our own file: keep it clean */
	st = tp_devices_load(path, text, len, &o, c, err);
	free(text);
	return st;
}
