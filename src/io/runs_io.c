/*
 * runs_io.c - measured training runs from JSON (runs.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/runtime.h"
#include "io_int.h"
#include "json.h"
#include "runs.h"

void tp_mruns_init(struct tp_mruns *r)
{
	memset(r, 0, sizeof(*r));
}

void tp_mruns_release(struct tp_mruns *r)
{
	if (r)
		tp_vec_free(&r->rows);
}

/* Megatron's FLOP per iteration with full recomputation (SC21, Table 1's
 * formula, as megatron_a100_table1.json's "common" states it). */
static double megatron_flop(double B, double s, double L, double h, double V)
{
	return 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h));
}

static void first_word(const char *s, char *out, size_t size)
{
	size_t n = strcspn(s, " \t(,;");

	if (n >= size)
		n = size - 1;
	memcpy(out, s, n);
	out[n] = '\0';
}

static const char *const table1_fields[] = {"params_billion",
					    "attention_heads",
					    "hidden_size",
					    "num_layers",
					    "tensor_parallel",
					    "pipeline_parallel",
					    "data_parallel_derived",
					    "num_gpus",
					    "global_batch_size",
					    "achieved_tflops_per_gpu",
					    "percent_of_peak",
					    "aggregate_pflops",
					    NULL};

static enum tp_status table1_row(struct tp_jctx *j, const struct tp_json *v,
				 size_t i, int64_t seq, int64_t vocab,
				 double peak, struct tp_mrun *run)
{
	int64_t tp, pp, dp;
	double tflops;
	enum tp_status st;

	if ((st = tp_jctx_object(j, v, "a Table 1 row", table1_fields)) ||
	    (st = tp_jget_int(j, v, "hidden_size", true, 1, 1 << 20, 0,
			      &run->hidden)) ||
	    (st = tp_jget_int(j, v, "num_layers", true, 1, 1 << 16, 0,
			      &run->layers)) ||
	    (st = tp_jget_int(j, v, "attention_heads", true, 1, 1 << 16, 0,
			      &run->heads)) ||
	    (st = tp_jget_int(j, v, "tensor_parallel", true, 1, 1 << 16, 0, &tp)) ||
	    (st = tp_jget_int(j, v, "pipeline_parallel", true, 1, 1 << 16, 0,
			      &pp)) ||
	    (st = tp_jget_int(j, v, "data_parallel_derived", true, 1, 1 << 20,
			      0, &dp)) ||
	    (st = tp_jget_int(j, v, "num_gpus", true, 1, 1 << 20, 0, &run->gpus)) ||
	    (st = tp_jget_int(j, v, "global_batch_size", true, 1, 1 << 28, 0,
			      &run->batch)) ||
	    (st = tp_io_get_quantity(j, v, "achieved_tflops_per_gpu", true,
				     TP_JNUM_POS, TP_IOQ_RUN_TFLOPS, 0,
				     &tflops)))
		return st;
	/* An achieved rate above the GPU's peak (common.peak_tflops, when
	 * the file gives it) is a typo or a unit slip, not a measurement:
	 * fitted, it would teach the simulator a GPU faster than the card. */
	if (peak > 0 && tflops > peak)
		return tp_jctx_fail(j, "achieved_tflops_per_gpu",
				    "%g TFLOP/s is above the GPU's peak, "
				    "common.peak_tflops %g: fix the row "
				    "(TFLOP/s per GPU) or the peak",
				    tflops, peak);
	if (tp * pp * dp != run->gpus || run->gpus % 8)
		return tp_jctx_fail(j, NULL,
				    "tensor x pipeline x data parallel (%lld) "
				    "must be num_gpus (%lld), a multiple of 8 "
				    "(DGX A100 nodes)",
				    (long long)(tp * pp * dp),
				    (long long)run->gpus);
	snprintf(run->id, sizeof(run->id), "megatron-sc21-%lldgpu",
		 (long long)run->gpus);
	snprintf(run->source, sizeof(run->source), "Narayanan-SC21");
	(void)i;
	run->seq = seq;
	run->vocab = vocab;
	run->dtype = TP_DTYPE_FP16;
	snprintf(run->topo_spec, sizeof(run->topo_spec), "dgx-a100:%lld",
		 (long long)(run->gpus / 8));
	snprintf(run->network, sizeof(run->network), "ib-hdr");
	snprintf(run->strategy, sizeof(run->strategy),
		 "tp=%lld,pp=%lld,dp=%lld,gbs=%lld,recompute=full",
		 (long long)tp, (long long)pp, (long long)dp,
		 (long long)run->batch);
	run->sweep = true;
	snprintf(run->runtime, sizeof(run->runtime), "megatron-lm-2021");
	run->measured_s =
	    megatron_flop((double)run->batch, (double)seq, (double)run->layers,
			  (double)run->hidden, (double)vocab) /
	    (tflops * 1e12 * (double)run->gpus);
	return TP_OK;
}

static enum tp_status load_table1(struct tp_jctx *j, const struct tp_json *root,
				  const struct tp_json *common,
				  struct tp_mruns *r)
{
	const struct tp_json *rows;
	int64_t seq, vocab;
	double peak = 0;
	enum tp_status st;
	size_t old;

	old = tp_jctx_push_key(j, "common");
	st = tp_jget_int(j, common, "seq_len", true, 1, 1 << 26, 0, &seq);
	if (!st)
		st = tp_jget_int(j, common, "vocab_size", true, 1, 1 << 30, 0,
				 &vocab);
	if (!st)
		st = tp_io_get_quantity(j, common, "peak_tflops", false,
					TP_JNUM_POS, TP_IOQ_RUN_TFLOPS, 0,
					&peak);
	tp_jctx_pop(j, old);
	if (st || (st = tp_jget_array(j, root, "rows", true, true, &rows)))
		return st;
	for (size_t i = 0; i < rows->n; i++) {
		struct tp_mrun run;

		memset(&run, 0, sizeof(run));
		old = tp_jctx_push_key(j, "rows");
		tp_jctx_push_index(j, i);
		st = table1_row(j, rows->items[i], i, seq, vocab, peak,
				&run);
		tp_jctx_pop(j, old);
		if (st)
			return st;
		if (tp_vec_push(&r->rows, run))
			return tp_error_set(j->err, TP_ENOMEM, "out of memory");
	}
	return TP_OK;
}

static const char *const row_fields[] = {"id",
					 "source",
					 "model",
					 "topology",
					 "strategy",
					 "runtime",
					 "attention_kernel",
					 "memory_format",
					 "measured_iteration_s",
					 "measured_samples_per_s",
					 "measured_peak_memory_bytes",
					 NULL};
static const char *const model_fields[] = {"zoo", "gpt", "batch", "dtype",
					   NULL};
static const char *const gpt_fields[] = {"hidden", "layers",   "heads",
					 "seq",	   "vocab",    "batch",
					 "ffn",	   "kv_heads", NULL};

static enum tp_status read_model(struct tp_jctx *j, const struct tp_json *m,
				 struct tp_mrun *run)
{
	const struct tp_json *g = NULL;
	const char *s;
	int dt;
	enum tp_status st;
	size_t old;

	if ((st = tp_jctx_object(j, m, "a model", model_fields)) ||
	    (st = tp_jget_enum(j, m, "dtype", true, tp_dtype_parse,
			       "fp32 | fp16 | bf16 | fp8", 0, &dt)))
		return st;
	run->dtype = (enum tp_dtype)dt;
	if ((st = tp_jget_object(j, m, "gpt", false, &g)))
		return st;
	if (!g) {
		if ((st = tp_jget_string(j, m, "zoo", true,
					 sizeof(run->zoo_name) - 1, true, NULL,
					 &s)) ||
		    (st = tp_jget_int(j, m, "batch", true, 1, 1 << 28, 0,
				      &run->batch)))
			return st;
		run->zoo = true;
		snprintf(run->zoo_name, sizeof(run->zoo_name), "%s", s);
		return TP_OK;
	}
	old = tp_jctx_push_key(j, "gpt");
	if (!(st = tp_jctx_object(j, g, "GPT dimensions", gpt_fields)) &&
	    !(st = tp_jget_int(j, g, "hidden", true, 1, 1 << 20, 0,
			       &run->hidden)) &&
	    !(st = tp_jget_int(j, g, "layers", true, 1, 1 << 16, 0,
			       &run->layers)) &&
	    !(st = tp_jget_int(j, g, "heads", true, 1, 1 << 16, 0, &run->heads)) &&
	    !(st = tp_jget_int(j, g, "seq", true, 1, 1 << 26, 0, &run->seq)) &&
	    !(st = tp_jget_int(j, g, "vocab", true, 1, 1 << 30, 0, &run->vocab)) &&
	    !(st = tp_jget_int(j, g, "batch", true, 1, 1 << 28, 0, &run->batch)) &&
	    !(st = tp_jget_int(j, g, "ffn", false, 0, 1 << 24, 0, &run->ffn)))
		st = tp_jget_int(j, g, "kv_heads", false, 0, 1 << 16, 0,
				 &run->kv_heads);
	tp_jctx_pop(j, old);
	return st;
}

static enum tp_status gbs_of(struct tp_jctx *j, const char *strategy,
			     int64_t batch, double *gbs)
{
	const char *p = strstr(strategy, "gbs=");

	*gbs = (double)batch;
	if (p && (p == strategy || p[-1] == ','))
		*gbs = strtod(p + 4, NULL);
	if (!(*gbs > 0))
		return tp_jctx_fail(j, "strategy",
				    "gbs must be a positive number of samples");
	return TP_OK;
}

static enum tp_status run_row(struct tp_jctx *j, const struct tp_json *v,
			      const char *dir, struct tp_mrun *run)
{
	const struct tp_json *m;
	const char *s;
	double t = 0, sps = 0, gbs;
	bool has_t, has_sps;
	enum tp_status st;
	size_t old;

	if ((st = tp_jctx_object(j, v, "a measured run", row_fields)) ||
	    (st = tp_jget_string(j, v, "id", true, sizeof(run->id) - 1, true,
				 NULL, &s)))
		return st;
	snprintf(run->id, sizeof(run->id), "%s", s);
	if ((st = tp_jget_string(j, v, "source", false, 0, false, "", &s)))
		return st;
	first_word(*s ? s : run->id, run->source, sizeof(run->source));
	if ((st = tp_jget_object(j, v, "model", true, &m)))
		return st;
	old = tp_jctx_push_key(j, "model");
	st = read_model(j, m, run);
	tp_jctx_pop(j, old);
	if (st ||
	    (st = tp_jget_string(j, v, "topology", true, 900, true, NULL, &s)))
		return st;
	/* relative to the list's folder, or its topologies/ folder (the
	 * layout of data/validation) */
	if (s[0] == '/' || !dir || !*dir) {
		snprintf(run->topology, sizeof(run->topology), "%s", s);
	} else {
		snprintf(run->topology, sizeof(run->topology), "%s/%s", dir, s);
		if (!tp_file_is_regular(run->topology))
			snprintf(run->topology, sizeof(run->topology),
				 "%s/topologies/%s", dir, s);
	}
	if ((st = tp_jget_string(j, v, "strategy", true,
				 sizeof(run->strategy) - 1, true, NULL, &s)))
		return st;
	snprintf(run->strategy, sizeof(run->strategy), "%s", s);
	if ((st = tp_jget_string(j, v, "runtime", false,
				 sizeof(run->runtime) - 1, false, "", &s)))
		return st;
	snprintf(run->runtime, sizeof(run->runtime), "%s", s);
	if ((st = tp_jget_enum(j, v, "attention_kernel", false,
			       tp_attn_kernel_parse, "fa2 | fa3 | triton_fa",
			       0, &run->attention_kernel)) ||
	    (st = tp_jget_enum(j, v, "memory_format", false,
			       tp_memory_format_parse, "nchw | nhwc", -1,
			       &run->memory_format)))
		return st;
	run->memory_format += 1;
	if ((st = tp_jget_number(j, v, "measured_iteration_s", false,
				 TP_JNUM_POS, 0, &t, &has_t)) ||
	    (has_t && (st = tp_io_check_quantity(j, "measured_iteration_s",
						 TP_IOQ_RUN_SECONDS, t))) ||
	    (st = tp_jget_number(j, v, "measured_samples_per_s", false,
				 TP_JNUM_POS, 0, &sps, &has_sps)) ||
	    (has_sps &&
	     (st = tp_io_check_quantity(j, "measured_samples_per_s",
					TP_IOQ_RUN_SAMPLES_PER_S, sps))) ||
	    (st = tp_io_get_quantity(j, v, "measured_peak_memory_bytes", false,
				     TP_JNUM_POS, TP_IOQ_DEVICE_MEMORY, 0,
				     &run->measured_peak_bytes)))
		return st;
	if (has_t == has_sps)
		return tp_jctx_fail(j, NULL,
				    "give exactly one of measured_iteration_s "
				    "and measured_samples_per_s");
	if (has_sps) {
		if ((st = gbs_of(j, run->strategy, run->batch, &gbs)))
			return st;
		t = gbs / sps;
	}
	run->measured_s = t;
	snprintf(run->file, sizeof(run->file), "%s", j->file ? j->file : "");
	snprintf(run->measured_path, sizeof(run->measured_path), "%.*s.%s",
		 (int)j->plen, j->path,
		 has_t ? "measured_iteration_s" : "measured_samples_per_s");
	return TP_OK;
}

static enum tp_status load_list(struct tp_jctx *j, const struct tp_json *root,
				const char *dir, struct tp_mruns *r)
{
	const struct tp_json *rows;
	enum tp_status st;

	if ((st = tp_jget_array(j, root, "rows", true, true, &rows)))
		return st;
	for (size_t i = 0; i < rows->n; i++) {
		struct tp_mrun run;
		size_t old;

		memset(&run, 0, sizeof(run));
		old = tp_jctx_push_key(j, "rows");
		tp_jctx_push_index(j, i);
		st = run_row(j, rows->items[i], dir, &run);
		tp_jctx_pop(j, old);
		if (st)
			return st;
		if (tp_vec_push(&r->rows, run))
			return tp_error_set(j->err, TP_ENOMEM, "out of memory");
	}
	return TP_OK;
}

static const char *const top_fields[] = {"rows", "common", "source", NULL};

enum tp_status tp_mruns_load(const char *name, const char *dir,
			     const char *text, size_t len,
			     const struct tp_load_options *o,
			     struct tp_mruns *r, struct tp_error *err)
{
	struct tp_json_doc doc;
	struct tp_jctx j;
	const struct tp_json *common;
	enum tp_status st;

	st = tp_json_parse(name, text, len, o ? o->max_bytes : 0,
			   o ? o->max_depth : 0, &doc, err);
	if (st)
		return st;
	tp_jctx_init(&j, name, o, err);
	snprintf(j.path, sizeof(j.path), "$");
	j.plen = 1;
	st =
	    tp_jctx_object(&j, doc.root, "a list of measured runs", top_fields);
	if (!st)
		common = tp_json_get(doc.root, "common");
	if (!st)
		st = common ? load_table1(&j, doc.root, common, r)
			    : load_list(&j, doc.root, dir, r);
	tp_json_doc_release(&doc);
	return st;
}

enum tp_status tp_mruns_load_file(const char *path,
				  const struct tp_load_options *o,
				  struct tp_mruns *r, struct tp_error *err)
{
	char *text = NULL, dir[1024];
	const char *slash = strrchr(path, '/');
	size_t len = 0;
	enum tp_status st;

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1,
		 slash ? path : ".");
	st = tp_file_read_text(path, 0, &text, &len, err);
	if (st)
		return st;
	st = tp_mruns_load(path, dir, text, len, o, r, err);
	free(text);
	return st;
}

bool tp_mruns_is_list(const char *text, size_t len)
{
	struct tp_json_doc doc;
	struct tp_error err;
	const struct tp_json *rows;
	bool yes;

	tp_error_clear(&err);
	if (tp_json_parse("", text, len, 0, 0, &doc, &err))
		return false;
	rows = doc.root->type == TP_JSON_OBJECT
		   ? tp_json_get(doc.root, "rows")
		   : NULL;
	yes = rows && rows->type == TP_JSON_ARRAY &&
	      !tp_json_get(doc.root, "format");
	tp_json_doc_release(&doc);
	return yes;
}
