/*
 * runtime_io.c - runtime profiles (tagplan-runtime/1, core/runtime.h):
 * the shipped ones in data/runtimes/NAME.json, or a user's file.
 *
 * Every behaviour and capability field is required, and so is a source
 * for each of them under "sources" (a profile is a claim about someone
 * else's software: it says where each claim comes from).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/jsonw.h"
#include "core/runtime.h"
#include "core/sha256.h"
#include "core/strmap.h"
#include "io_int.h"

static const char *const top_fields[] = {"format", "name", "description",
					 "version", "behaviour", "can",
					 "sources", "calibration", "validation",
					 NULL};
static const char *const validation_fields[] = {
	"runs", "mean_abs_error", "max_abs_error", "measured_on", NULL};
static const char *const calibration_fields[] = {
	"gemm_sustained", "link_eff_intra", "link_eff_network", "fitted_on",
	"runs", "holdout_runs", "fit_mean_abs_error",
	"holdout_mean_abs_error", "prior_weight", "gemm_shape_half",
	"nic_socket_Bps", "tp_node_rings", "cuda_core_gemm_eff",
	"hopper_gemm_scale", "p2p_socket_Bps", NULL};
static const char *const behaviour_fields[] = {
	"dp_overlap", "dp_overlap_pipeline", "grad_bucket_bytes",
	"grad_reduce", "p2p_async", "tp_overlap", "fused_attention", "tf32",
	"expert_imbalance", "attention_kernel", "prefetch_depth",
	"gemm_shape_half", "ep_node_forward", "ep_dispatch_fp8", "ep_overlap",
	"comm_sm_share", "cp_comm", "grad_buffer", "winograd", "memory_format",
	"grad_bucket_copy", "nic_socket_Bps", "p2p_socket_Bps",
	"p2p_socket_eager_bytes",
	"cuda_core_gemm_eff", "hopper_gemm_scale", "tp_node_rings", NULL};
static const char *const can_fields[] = {
	"launcher", "tensor_parallel", "pipeline_parallel",
	"sequence_parallel", "per_stage_degrees", "uneven_shares",
	"mixed_device_types", "overlapping_groups", "layout", "schedules",
	"syncs", "recompute", "max_zero", "max_zero_pipelined", "compression",
	"lossy", "per_group_recompute", "models", "context_parallel", "expert_parallel", "mixed_tp", NULL};

static int parse_grad_reduce(const char *s) { return tp_grad_reduce_parse(s); }
static int parse_layout(const char *s) { return tp_layer_layout_parse(s); }
static int parse_launcher(const char *s) { return tp_launcher_parse(s); }
static int parse_cp_comm(const char *s)
{
	return !strcmp(s, "p2p") ? 0 : !strcmp(s, "all_gather") ? 1 : -1;
}
static int parse_attn_kernel(const char *s) { return tp_attn_kernel_parse(s); }
static int parse_models(const char *s) { return tp_runtime_models_parse(s); }

/* A list of enum names into a bitmask (a name twice is an error). */
static enum tp_status get_set(struct tp_jctx *j, const struct tp_json *obj,
			      const char *key, int (*parse)(const char *),
			      const char *choices, uint32_t *out)
{
	const struct tp_json *arr;
	enum tp_status st;
	size_t old;

	*out = 0;
	if ((st = tp_jget_array(j, obj, key, true, false, &arr)))
		return st;
	old = tp_jctx_push_key(j, key);
	for (size_t i = 0; i < arr->n; i++) {
		const char *name;
		int v;
		size_t o2 = tp_jctx_push_index(j, i);
		if ((st = tp_jcheck_string(j, arr->items[i], 64, true, &name)))
			return st;
		v = parse(name);
		if (v < 0 || v >= 32)
			return tp_jctx_fail(j, NULL, "unknown value \"%s\"; "
						     "expected %s",
					    name, choices);
		if (*out & (1u << v))
			return tp_jctx_fail(j, NULL, "\"%s\" listed twice",
					    name);
		*out |= 1u << v;
		tp_jctx_pop(j, o2);
	}
	tp_jctx_pop(j, old);
	return TP_OK;
}

static enum tp_status get_flag(struct tp_jctx *j, const struct tp_json *obj,
			       const char *key, bool *out)
{
	return tp_jget_bool(j, obj, key, true, false, out);
}

static enum tp_status read_behaviour(struct tp_jctx *j,
				     const struct tp_json *v,
				     struct tp_runtime_behaviour *b)
{
	enum tp_status st;
	int gr, gb, cpc, ak, mf;
	int64_t pf;

	if ((st = tp_jctx_object(j, v, "the runtime's behaviour",
				 behaviour_fields)) ||
	    (st = get_flag(j, v, "dp_overlap", &b->dp_overlap)) ||
	    (st = get_flag(j, v, "dp_overlap_pipeline",
			   &b->dp_overlap_pipeline)) ||
	    (st = tp_jget_number(j, v, "grad_bucket_bytes", true,
				 TP_JNUM_NONNEG, 0, &b->grad_bucket_bytes,
				 NULL)) ||
	    (st = tp_jget_enum(j, v, "grad_reduce", true, parse_grad_reduce,
			       "model | fp32", 0, &gr)) ||
	    (st = get_flag(j, v, "p2p_async", &b->p2p_async)) ||
	    (st = get_flag(j, v, "tp_overlap", &b->tp_overlap)) ||
	    (st = get_flag(j, v, "fused_attention", &b->fused_attention)) ||
	    (st = get_flag(j, v, "tf32", &b->tf32)) ||
	    (st = tp_jget_number(j, v, "expert_imbalance", false,
				 TP_JNUM_POS, 0, &b->expert_imbalance,
				 NULL)) ||
	    (st = tp_jget_enum(j, v, "attention_kernel", false,
			       parse_attn_kernel, "fa2 | fa3 | triton_fa",
			       TP_ATTN_KERNEL_GEMM, &ak)) ||
	    (st = tp_jget_int(j, v, "prefetch_depth", false, 0, 8, -1, &pf)) ||
	    (st = tp_jget_number(j, v, "gemm_shape_half", false, TP_JNUM_POS,
				 0, &b->gemm_shape_half, NULL)) ||
	    (st = tp_jget_bool(j, v, "ep_node_forward", false, false,
			       &b->ep_node_forward)) ||
	    (st = tp_jget_bool(j, v, "ep_dispatch_fp8", false, false,
			       &b->ep_dispatch_fp8)) ||
	    (st = tp_jget_bool(j, v, "ep_overlap", false, false,
			       &b->ep_overlap)) ||
	    (st = tp_jget_number(j, v, "comm_sm_share", false,
				 TP_JNUM_NONNEG, 0, &b->comm_sm_share, NULL)) ||
	    (st = tp_jget_enum(j, v, "cp_comm", false, parse_cp_comm,
			       "p2p | all_gather", 0, &cpc)) ||
	    (st = tp_jget_enum(j, v, "grad_buffer", false, parse_grad_reduce,
			       "model | fp32", TP_GRAD_REDUCE_MODEL, &gb)) ||
	    (st = tp_jget_bool(j, v, "winograd", false, false, &b->winograd)) ||
	    (st = tp_jget_enum(j, v, "memory_format", false,
			       tp_memory_format_parse, "nchw | nhwc", 0, &mf)) ||
	    (st = tp_jget_bool(j, v, "grad_bucket_copy", false, false,
			       &b->grad_bucket_copy)) ||
	    (st = tp_jget_number(j, v, "nic_socket_Bps", false, TP_JNUM_POS,
				 0, &b->nic_socket_Bps, NULL)) ||
	    (st = tp_jget_number(j, v, "p2p_socket_Bps", false, TP_JNUM_POS,
				 0, &b->p2p_socket_Bps, NULL)) ||
	    (st = tp_jget_number(j, v, "p2p_socket_eager_bytes", false,
				 TP_JNUM_POS, 0, &b->p2p_socket_eager_bytes,
				 NULL)) ||
	    (st = tp_jget_number(j, v, "cuda_core_gemm_eff", false,
				 TP_JNUM_FRACTION, 0, &b->cuda_core_gemm_eff,
				 NULL)) ||
	    (st = tp_jget_number(j, v, "hopper_gemm_scale", false,
				 TP_JNUM_FRACTION, 0, &b->hopper_gemm_scale,
				 NULL)) ||
	    (st = tp_jget_number(j, v, "tp_node_rings", false, TP_JNUM_POS,
				 0, &b->tp_node_rings, NULL)))
		return st;
	if (b->tp_node_rings != 0 &&
	    !(b->tp_node_rings >= 1 && b->tp_node_rings <= 4))
		return tp_jctx_fail(j, "tp_node_rings",
				    "%g rings: expected 1 to 4 (the multiple "
				    "of one ring's bandwidth a node's "
				    "tensor-parallel collectives get)",
				    b->tp_node_rings);
	if ((b->p2p_socket_Bps > 0) != (b->p2p_socket_eager_bytes > 0))
		return tp_jctx_fail(
		    j, b->p2p_socket_Bps > 0 ? "p2p_socket_Bps"
					     : "p2p_socket_eager_bytes",
		    "p2p_socket_Bps and p2p_socket_eager_bytes go together: "
		    "add the other (the bytes of a message that move at the "
		    "links' rate, NCCL_BUFFSIZE: 4194304 by default) or drop "
		    "this one");
	b->conv_nchw = mf == 1;
	b->cp_all_gather = cpc == 1;
	b->grad_buffer = (enum tp_grad_reduce)gb;
	if (!(b->comm_sm_share < 0.9))
		return tp_jctx_fail(j, "comm_sm_share",
				    "a share of the SMs of %g: expected at "
				    "least 0 and below 0.9",
				    b->comm_sm_share);
	if (b->comm_sm_share > 0 && !b->ep_overlap)
		return tp_jctx_fail(j, "comm_sm_share",
				    "SMs kept for overlapped communication, "
				    "but ep_overlap is not on: set "
				    "\"ep_overlap\": true or drop the field");
	b->prefetch_depth = (int32_t)pf;
	b->attention_kernel = (enum tp_attn_kernel)ak;
	if (ak != TP_ATTN_KERNEL_GEMM && !b->fused_attention)
		return tp_jctx_fail(j, "attention_kernel",
				    "a fused attention kernel, but "
				    "fused_attention is off: set "
				    "\"fused_attention\": true or drop the "
				    "field");
	if (b->expert_imbalance != 0 &&
	    !(b->expert_imbalance >= 1 && b->expert_imbalance <= 64))
		return tp_jctx_fail(j, "expert_imbalance",
				    "an expert load imbalance of %g: expected "
				    "the busiest rank's tokens over the mean, "
				    "from 1 to 64",
				    b->expert_imbalance);
	if (b->grad_bucket_bytes > 1e12)
		return tp_jctx_fail(j, "grad_bucket_bytes",
				    "expected at most 1e12 bytes (0 = the "
				    "simulator's default), found %.6g",
				    b->grad_bucket_bytes);
	b->grad_reduce = (enum tp_grad_reduce)gr;
	return TP_OK;
}

/* The optional "calibration" object (tagplan calibrate writes it). */
static enum tp_status read_calibration(struct tp_jctx *j,
				       const struct tp_json *v,
				       struct tp_runtime_calibration *c)
{
	static const char *const k[3] = {"gemm_sustained", "link_eff_intra",
					 "link_eff_network"};
	double *dst[3] = {&c->gemm_sustained, &c->link_eff_intra,
			  &c->link_eff_network};
	double runs = 0, hold = 0;
	const char *s = "";
	enum tp_status st;

	if ((st = tp_jctx_object(j, v, "a calibration", calibration_fields)))
		return st;
	for (int i = 0; i < 3; i++) {
		if ((st = tp_jget_number(j, v, k[i], true, TP_JNUM_POS, 0,
					 dst[i], NULL)))
			return st;
		if (*dst[i] > 1.5)
			return tp_jctx_fail(j, k[i],
					    "expected a fraction of peak in "
					    "(0, 1.5], found %.6g",
					    *dst[i]);
	}
	if ((st = tp_jget_string(j, v, "fitted_on", false,
				 sizeof(c->fitted_on) - 1, false, "", &s)) ||
	    (st = tp_jget_number(j, v, "runs", false, TP_JNUM_NONNEG, 0,
				 &runs, NULL)) ||
	    (st = tp_jget_number(j, v, "holdout_runs", false, TP_JNUM_NONNEG,
				 0, &hold, NULL)) ||
	    (st = tp_jget_number(j, v, "fit_mean_abs_error", false,
				 TP_JNUM_NONNEG, 0, &c->fit_error, NULL)) ||
	    (st = tp_jget_number(j, v, "holdout_mean_abs_error", false,
				 TP_JNUM_NONNEG, 0, &c->holdout_error,
				 NULL)) ||
	    (st = tp_jget_number(j, v, "prior_weight", false, TP_JNUM_NONNEG,
				 0, &c->prior_weight, NULL)) ||
	    (st = tp_jget_number(j, v, "gemm_shape_half", false, TP_JNUM_POS,
				 0, &c->gemm_shape_half, NULL)) ||
	    (st = tp_jget_number(j, v, "nic_socket_Bps", false, TP_JNUM_POS,
				 0, &c->nic_socket_Bps, NULL)) ||
	    (st = tp_jget_number(j, v, "p2p_socket_Bps", false, TP_JNUM_POS,
				 0, &c->p2p_socket_Bps, NULL)) ||
	    (st = tp_jget_number(j, v, "cuda_core_gemm_eff", false,
				 TP_JNUM_FRACTION, 0, &c->cuda_core_gemm_eff,
				 NULL)) ||
	    (st = tp_jget_number(j, v, "hopper_gemm_scale", false,
				 TP_JNUM_FRACTION, 0, &c->hopper_gemm_scale,
				 NULL)) ||
	    (st = tp_jget_number(j, v, "tp_node_rings", false, TP_JNUM_POS,
				 0, &c->tp_node_rings, NULL)))
		return st;
	if (c->tp_node_rings != 0 &&
	    !(c->tp_node_rings >= 1 && c->tp_node_rings <= 4))
		return tp_jctx_fail(j, "tp_node_rings",
				    "%g rings: expected 1 to 4 (the multiple "
				    "of one ring's bandwidth a node's "
				    "tensor-parallel collectives get)",
				    c->tp_node_rings);
	snprintf(c->fitted_on, sizeof(c->fitted_on), "%s", s);
	c->runs = runs < 1e9 ? (uint32_t)runs : 0;
	c->holdout_runs = hold < 1e9 ? (uint32_t)hold : 0;
	c->present = true;
	return TP_OK;
}

/* The optional "validation" object (bench_fidelity's figures). */
static enum tp_status read_validation(struct tp_jctx *j,
				      const struct tp_json *v,
				      struct tp_runtime_validation *x)
{
	int64_t runs;
	const char *s;
	enum tp_status st;

	if ((st = tp_jctx_object(j, v, "a validation", validation_fields)) ||
	    (st = tp_jget_int(j, v, "runs", true, 1, 1000000, 0, &runs)) ||
	    (st = tp_jget_number(j, v, "mean_abs_error", true, TP_JNUM_NONNEG,
				 0, &x->mean_error, NULL)) ||
	    (st = tp_jget_number(j, v, "max_abs_error", true, TP_JNUM_NONNEG,
				 0, &x->max_error, NULL)) ||
	    (st = tp_jget_string(j, v, "measured_on", true,
				 sizeof(x->measured_on) - 1, true, NULL, &s)))
		return st;
	if (x->max_error < x->mean_error)
		return tp_jctx_fail(j, "max_abs_error",
				    "below mean_abs_error (%.6g < %.6g)",
				    x->max_error, x->mean_error);
	x->runs = (uint32_t)runs;
	snprintf(x->measured_on, sizeof(x->measured_on), "%s", s);
	x->present = true;
	return TP_OK;
}

static int parse_schedule_name(const char *s)
{
	/* "interleaved" alone: the strategy string's interleaved:V */
	return tp_schedule_parse(s);
}

static enum tp_status read_can(struct tp_jctx *j, const struct tp_json *v,
			       struct tp_runtime_can *c)
{
	enum tp_status st;
	int64_t z, zp;
	int l, lay, mod;

	if ((st = tp_jctx_object(j, v, "what the runtime can run",
				 can_fields)) ||
	    (st = tp_jget_enum(j, v, "launcher", true, parse_launcher,
			       "none | megatron | deepspeed | torchrun | "
			       "torchtitan",
			       0, &l)) ||
	    (st = get_flag(j, v, "tensor_parallel", &c->tensor_parallel)) ||
	    (st = get_flag(j, v, "pipeline_parallel", &c->pipeline_parallel)) ||
	    (st = get_flag(j, v, "sequence_parallel", &c->sequence_parallel)) ||
	    (st = tp_jget_bool(j, v, "context_parallel", false, false,
			       &c->context_parallel)) ||
	    (st = tp_jget_bool(j, v, "expert_parallel", false, false,
			       &c->expert_parallel)) ||
	    (st = tp_jget_bool(j, v, "mixed_tp", false, false,
			       &c->mixed_tp)) ||
	    (st = get_flag(j, v, "per_stage_degrees", &c->per_stage_degrees)) ||
	    (st = get_flag(j, v, "uneven_shares", &c->uneven_shares)) ||
	    (st = get_flag(j, v, "mixed_device_types",
			   &c->mixed_device_types)) ||
	    (st = get_flag(j, v, "overlapping_groups",
			   &c->overlapping_groups)) ||
	    (st = tp_jget_enum(j, v, "layout", true, parse_layout,
			       "even | first-last | any", 0, &lay)) ||
	    (st = get_set(j, v, "schedules", parse_schedule_name,
			  "gpipe | 1f1b | interleaved | zb-h1",
			  &c->schedules)) ||
	    (st = get_set(j, v, "syncs", tp_sync_parse,
			  "ring | hierarchical | ps", &c->syncs)) ||
	    (st = get_set(j, v, "recompute", tp_recompute_parse,
			  "none | selective | full", &c->recomputes)) ||
	    (st = tp_jget_int(j, v, "max_zero", true, 0, 3, 0, &z)) ||
	    (st = tp_jget_int(j, v, "max_zero_pipelined", true, 0, 3, 0, &zp)) ||
	    (st = get_flag(j, v, "compression", &c->compression)) ||
	    (st = get_set(j, v, "lossy", tp_lossy_parse,
			  "none | fp16 | powersgd", &c->lossy)) ||
	    (st = get_flag(j, v, "per_group_recompute",
			   &c->per_group_recompute)) ||
	    (st = tp_jget_enum(j, v, "models", true, parse_models,
			       "any | transformers | llama", 0, &mod)))
		return st;
	c->models = (enum tp_runtime_models)mod;
	c->launcher = (enum tp_launcher)l;
	c->layout = (enum tp_layer_layout)lay;
	c->max_zero = (uint32_t)z;
	c->max_zero_pipelined = (uint32_t)zp;
	if (zp > z)
		return tp_jctx_fail(j, "max_zero_pipelined",
				    "%lld is above max_zero %lld",
				    (long long)zp, (long long)z);
	if (!c->schedules)
		return tp_jctx_fail(j, "schedules",
				    "a runtime runs at least one schedule");
	if (!c->recomputes)
		return tp_jctx_fail(j, "recompute",
				    "list at least \"none\"");
	return TP_OK;
}

/* Every field of behaviour and can has its source under "sources"
 * (an optional field the profile leaves out, context_parallel,
 * expert_parallel or mixed_tp, needs none). */
static enum tp_status check_sources(struct tp_jctx *j,
				    const struct tp_json *root)
{
	const struct tp_json *can = tp_json_get(root, "can");
	static const char *const *const lists[] = {behaviour_fields,
						   can_fields};
	const struct tp_json *src;
	enum tp_status st;

	if ((st = tp_jget_object(j, root, "sources", true, &src)))
		return st;
	for (int k = 0; k < 2; k++)
		for (const char *const *f = lists[k]; *f; f++) {
			const char *text;
			size_t old;
			if (k == 1 && (!strcmp(*f, "context_parallel") ||
				       !strcmp(*f, "expert_parallel") ||
				       !strcmp(*f, "mixed_tp")) &&
			    !tp_json_get(can, *f))
				continue;
			if (k == 0 && (!strcmp(*f, "expert_imbalance") ||
				       !strcmp(*f, "attention_kernel") ||
				       !strcmp(*f, "prefetch_depth") ||
				       !strcmp(*f, "gemm_shape_half") ||
				       !strncmp(*f, "ep_", 3) ||
				       !strcmp(*f, "comm_sm_share") ||
				       !strcmp(*f, "cp_comm") ||
				       !strcmp(*f, "grad_buffer") ||
				       !strcmp(*f, "winograd") ||
				       !strcmp(*f, "memory_format") ||
				       !strcmp(*f, "grad_bucket_copy") ||
				       !strcmp(*f, "nic_socket_Bps") ||
				       !strcmp(*f, "p2p_socket_Bps") ||
				       !strcmp(*f, "p2p_socket_eager_bytes") ||
				       !strcmp(*f, "cuda_core_gemm_eff") ||
				       !strcmp(*f, "hopper_gemm_scale") ||
				       !strcmp(*f, "tp_node_rings")) &&
			    !tp_json_get(tp_json_get(root, "behaviour"), *f))
				continue;
			old = tp_jctx_push_key(j, "sources");
			if (!tp_json_get(src, *f))
				return tp_jctx_fail(
				    j, *f,
				    "missing: say where \"%s\" comes from "
				    "(documentation, code, paper)",
				    *f);
			if ((st = tp_jget_string(j, src, *f, true, 0, true,
						 NULL, &text)))
				return st;
			tp_jctx_pop(j, old);
		}
	return TP_OK;
}

enum tp_status tp_runtime_load(const char *name, const char *text, size_t len,
			       const struct tp_load_options *o,
			       struct tp_runtime *rt, struct tp_error *err)
{
	struct tp_json_doc doc;
	struct tp_jctx j;
	const struct tp_json *b, *c;
	const char *s;
	enum tp_status st;
	size_t old;

	memset(rt, 0, sizeof(*rt));
	st = tp_io_parse(name, text, len, o, "tagplan-runtime/1", &doc, &j,
			 err);
	if (st)
		return st;
	if ((st = tp_jctx_object(&j, doc.root, "a runtime profile",
				 top_fields)) ||
	    (st = tp_io_get_name(&j, doc.root, "name", true,
				 TP_RUNTIME_NAME_MAX - 1, NULL, &s)))
		goto out;
	snprintf(rt->name, sizeof(rt->name), "%s", s);
	if (strcmp(rt->name, "none") == 0) {
		st = tp_jctx_fail(&j, "name",
				  "\"none\" names the unconstrained runtime; "
				  "give the profile another name");
		goto out;
	}
	if ((st = tp_jget_string(&j, doc.root, "description", true,
				 sizeof(rt->description) - 1, true, NULL,
				 &s)))
		goto out;
	snprintf(rt->description, sizeof(rt->description), "%s", s);
	if ((st = tp_jget_string(&j, doc.root, "version", true, 255, true,
				 NULL, &s)) ||
	    (st = tp_jget_object(&j, doc.root, "behaviour", true, &b)) ||
	    (st = tp_jget_object(&j, doc.root, "can", true, &c)))
		goto out;
	old = tp_jctx_push_key(&j, "behaviour");
	if ((st = read_behaviour(&j, b, &rt->behaviour)))
		goto out;
	tp_jctx_pop(&j, old);
	old = tp_jctx_push_key(&j, "can");
	if ((st = read_can(&j, c, &rt->can)))
		goto out;
	tp_jctx_pop(&j, old);
	if ((b = tp_json_get(doc.root, "calibration")) != NULL) {
		old = tp_jctx_push_key(&j, "calibration");
		if ((st = read_calibration(&j, b, &rt->calibration)))
			goto out;
		tp_jctx_pop(&j, old);
	}
	if ((b = tp_json_get(doc.root, "validation")) != NULL) {
		old = tp_jctx_push_key(&j, "validation");
		if ((st = read_validation(&j, b, &rt->validation)))
			goto out;
		tp_jctx_pop(&j, old);
	}
	st = check_sources(&j, doc.root);
out:
	tp_json_doc_release(&doc);
	if (st)
		tp_error_set_file(err, name);
	return st;
}

enum tp_status tp_runtime_load_file(const char *path, struct tp_runtime *rt,
				    struct tp_error *err)
{
	struct tp_load_options o;
	char *text = NULL;
	size_t len;
	enum tp_status st;

	if ((st = tp_file_read(path, 0, &text, &len, err)))
		return st;
	tp_load_options_default(&o);
	o.strict = true;
	st = tp_runtime_load(path, text, len, &o, rt, err);
	free(text);
	return st;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

size_t tp_runtime_shipped(char (*names)[TP_RUNTIME_NAME_MAX], size_t max)
{
	char dir[4096], probe[4096];
	struct tp_error e;
	DIR *d;
	struct dirent *de;
	size_t k = 0;

	tp_error_clear(&e);
	/* data/runtimes/ is found as the folder of a file it holds */
	if (tp_data_path("runtimes/megatron-core.json", probe, sizeof(probe),
			 &e))
		return 0;
	snprintf(dir, sizeof(dir), "%s", probe);
	*strrchr(dir, '/') = '\0';
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d)) != NULL && k < max) {
		size_t l = strlen(de->d_name);
		if (l < 6 || l - 5 >= TP_RUNTIME_NAME_MAX ||
		    strcmp(de->d_name + l - 5, ".json") != 0)
			continue;
		snprintf(names[k++], TP_RUNTIME_NAME_MAX, "%.*s", (int)(l - 5),
			 de->d_name);
	}
	closedir(d);
	qsort(names, k, sizeof(names[0]), cmp_name);
	return k;
}

/* The shipped profiles' names, sorted and comma-separated, into buf. */
static void shipped_names(char *buf, size_t size)
{
	char names[32][TP_RUNTIME_NAME_MAX];
	size_t n = 0, k = tp_runtime_shipped(names, 32);

	buf[0] = '\0';
	for (size_t i = 0; i < k && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? ", " : "",
				      names[i]);
}

/* The shipped profiles an unknown name most likely meant, as " (did you
 * mean a, b?)" into buf (empty when none): the name in any case with
 * blanks as dashes ("DeepSpeed", "megatron core"), the profiles whose
 * name contains it or that it contains ("megatron", "fsdp"), else those
 * within 2 edits ("deepspeeed"). */
static void similar_runtimes(const char *name, char *buf, size_t size)
{
	char names[32][TP_RUNTIME_NAME_MAX], want[TP_RUNTIME_NAME_MAX];
	size_t k = tp_runtime_shipped(names, 32), len = strlen(name), n = 0;
	bool hit[32] = {false}, any = false;

	buf[0] = '\0';
	if (len == 0 || len >= sizeof(want) || size < 24)
		return;
	for (size_t i = 0; i <= len; i++)
		want[i] = name[i] == ' ' ? '-'
			  : name[i] >= 'A' && name[i] <= 'Z'
			      ? (char)(name[i] - 'A' + 'a')
			      : name[i];
	for (size_t i = 0; i < k; i++)
		any |= hit[i] = strstr(names[i], want) ||
				strstr(want, names[i]);
	for (size_t i = 0; i < k && !any; i++)
		any |= hit[i] = tp_edit_distance(want, names[i], 2) <= 2;
	for (size_t i = 0; i < k; i++) {
		int w;
		if (!hit[i])
			continue;
		/* room kept for the closing "?)" */
		w = snprintf(buf + n, size - n - 2, "%s%s",
			     n ? ", " : " (did you mean ", names[i]);
		if (w < 0 || (size_t)w >= size - n - 2) {
			buf[0] = '\0';
			return;
		}
		n += (size_t)w;
	}
	if (n)
		memcpy(buf + n, "?)", 3);
}

enum tp_status tp_runtime_path(const char *name, char *path, size_t size,
			       struct tp_error *err)
{
	char rel[TP_RUNTIME_NAME_MAX + 32], known[1024], near[256];
	struct tp_error e;
	struct stat st;
	bool plain = name && *name;

	for (const char *p = name; plain && *p; p++)
		plain = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
			*p == '-' || *p == '_' || *p == '.';
	if (!plain || strlen(name) >= TP_RUNTIME_NAME_MAX ||
	    strstr(name, ".json")) {
		snprintf(path, size, "%s", name ? name : "");
		/* a name in another case ("DeepSpeed") or with a blank
		 * that is no file: said as an unknown runtime, not as a
		 * file it cannot open */
		if (!name || !*name || strchr(name, '/') ||
		    strstr(name, ".json") || stat(name, &st) == 0)
			return TP_OK;
		similar_runtimes(name, near, sizeof(near));
		shipped_names(known, sizeof(known));
		return tp_error_set(err, TP_EUSAGE,
				    "unknown runtime \"%s\"%s; shipped: %s%snone "
				    "(or give the path of a tagplan-runtime/1 "
				    "file)",
				    name, near, known, *known ? ", " : "");
	}
	snprintf(rel, sizeof(rel), "runtimes/%s.json", name);
	tp_error_clear(&e);
	if (tp_data_path(rel, path, size, &e) == TP_OK)
		return TP_OK;
	shipped_names(known, sizeof(known));
	similar_runtimes(name, near, sizeof(near));
	return tp_error_set(err, TP_EUSAGE,
			    "unknown runtime \"%s\"%s; shipped: %s%snone (or "
			    "give the path of a tagplan-runtime/1 file)",
			    name, near, known, *known ? ", " : "");
}

enum tp_status tp_runtime_find(const char *name, struct tp_runtime *rt,
			       struct tp_error *err)
{
	char path[4096];
	enum tp_status st;

	if (name && strcmp(name, "none") == 0) {
		tp_runtime_none(rt);
		return TP_OK;
	}
	if ((st = tp_runtime_path(name, path, sizeof(path), err)))
		return st;
	return tp_runtime_load_file(path, rt, err);
}

enum tp_status tp_runtime_find_file(const char *name, struct tp_runtime *rt,
				    char sha[65], struct tp_error *err)
{
	struct tp_load_options o;
	char path[4096], *text = NULL;
	size_t len;
	enum tp_status st;

	sha[0] = '\0';
	if (name && strcmp(name, "none") == 0) {
		tp_runtime_none(rt);
		return TP_OK;
	}
	if ((st = tp_runtime_path(name, path, sizeof(path), err)))
		return st;
	if ((st = tp_file_read(path, 0, &text, &len, err)))
		return st;
	tp_load_options_default(&o);
	o.strict = true;
	st = tp_runtime_load(path, text, len, &o, rt, err);
	if (st == TP_OK && strcmp(path, name) == 0)
		tp_sha256_hex(text, len, sha);
	free(text);
	return st;
}

/* A JSON value of a parsed document, rewritten (its arrays of scalars
 * on one line, as the shipped profiles have them). */
static void write_value(struct tp_jw *jw, const struct tp_json *v)
{
	bool flat = true;

	switch (v->type) {
	case TP_JSON_NULL:
		tp_jw_null(jw);
		return;
	case TP_JSON_BOOL:
		tp_jw_bool(jw, v->b);
		return;
	case TP_JSON_NUMBER:
		tp_jw_number(jw, v->num);
		return;
	case TP_JSON_STRING:
		tp_jw_string(jw, v->str);
		return;
	case TP_JSON_ARRAY:
		for (size_t i = 0; i < v->n; i++)
			flat = flat && v->items[i]->type != TP_JSON_ARRAY &&
			       v->items[i]->type != TP_JSON_OBJECT;
		if (flat)
			tp_jw_array_begin_inline(jw);
		else
			tp_jw_array_begin(jw);
		for (size_t i = 0; i < v->n; i++)
			write_value(jw, v->items[i]);
		tp_jw_array_end(jw);
		return;
	case TP_JSON_OBJECT:
		tp_jw_object_begin(jw);
		for (size_t i = 0; i < v->n; i++) {
			tp_jw_key(jw, v->items[i]->key);
			write_value(jw, v->items[i]);
		}
		tp_jw_object_end(jw);
		return;
	}
}

static void write_calibration(struct tp_jw *jw,
			      const struct tp_runtime_calibration *c)
{
	tp_jw_key(jw, "calibration");
	tp_jw_object_begin(jw);
	tp_jw_kv_number(jw, "gemm_sustained", c->gemm_sustained);
	tp_jw_kv_number(jw, "link_eff_intra", c->link_eff_intra);
	tp_jw_kv_number(jw, "link_eff_network", c->link_eff_network);
	{
		const char *k[6] = {"gemm_shape_half", "nic_socket_Bps",
				    "tp_node_rings", "cuda_core_gemm_eff",
				    "hopper_gemm_scale", "p2p_socket_Bps"};
		const double v[6] = {c->gemm_shape_half, c->nic_socket_Bps,
				     c->tp_node_rings, c->cuda_core_gemm_eff,
				     c->hopper_gemm_scale, c->p2p_socket_Bps};
		for (int i = 0; i < 6; i++)
			if (v[i] > 0)
				tp_jw_kv_number(jw, k[i], v[i]);
	}
	tp_jw_kv_string(jw, "fitted_on", c->fitted_on);
	tp_jw_kv_int(jw, "runs", c->runs);
	tp_jw_kv_int(jw, "holdout_runs", c->holdout_runs);
	tp_jw_kv_number(jw, "fit_mean_abs_error", c->fit_error);
	tp_jw_kv_number(jw, "holdout_mean_abs_error", c->holdout_error);
	tp_jw_kv_number(jw, "prior_weight", c->prior_weight);
	tp_jw_object_end(jw);
}

enum tp_status tp_runtime_write_calibrated(const char *base_path,
					   const char *name,
					   const char *description,
					   const struct tp_runtime_calibration
						   *cal,
					   struct tp_strbuf *out,
					   struct tp_error *err)
{
	struct tp_json_doc doc;
	struct tp_jw jw;
	char *text = NULL;
	size_t len;
	enum tp_status st;

	if ((st = tp_file_read(base_path, 0, &text, &len, err)))
		return st;
	st = tp_json_parse(base_path, text, len, 0, 0, &doc, err);
	free(text);
	if (st)
		return st;
	tp_jw_init(&jw, out, true);
	tp_jw_object_begin(&jw);
	for (size_t i = 0; i < doc.root->n; i++) {
		const struct tp_json *v = doc.root->items[i];
		if (!strcmp(v->key, "calibration"))
			continue;
		if (!strcmp(v->key, "sources"))
			write_calibration(&jw, cal);
		tp_jw_key(&jw, v->key);
		if (!strcmp(v->key, "name"))
			tp_jw_string(&jw, name);
		else if (!strcmp(v->key, "description") && description)
			tp_jw_string(&jw, description);
		else
			write_value(&jw, v);
	}
	tp_jw_object_end(&jw);
	tp_jw_finish(&jw);
	tp_json_doc_release(&doc);
	return TP_OK;
}
