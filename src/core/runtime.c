/*
 * runtime.c - the unconstrained runtime and the names of runtime.h.
 */
#include "runtime.h"

#include <stdio.h>
#include <string.h>

static const char *const grad_reduce_names[TP_GRAD_REDUCE_COUNT] = {
	"model", "fp32"};
static const char *const attn_kernel_names[TP_ATTN_KERNEL_COUNT] = {
	"gemm", "fa2", "fa3", "triton_fa"};
static const char *const layout_names[TP_LAYOUT_COUNT] = {
	"even", "first-last", "any"};
static const char *const launcher_names[TP_LAUNCH_COUNT] = {
	"none", "megatron", "deepspeed", "torchrun", "torchtitan"};
static const char *const models_names[TP_MODELS_COUNT] = {
	"any", "transformers", "llama"};

static int parse_in(const char *const *names, int n, const char *s);

void tp_runtime_none(struct tp_runtime *rt)
{
	memset(rt, 0, sizeof(*rt));
	snprintf(rt->name, sizeof(rt->name), "none");
	snprintf(rt->description, sizeof(rt->description),
		 "no runtime: every plan tagplan can express, simulated "
		 "with the simulator's defaults");
	rt->behaviour.dp_overlap = true;
	rt->behaviour.dp_overlap_pipeline = true;
	rt->behaviour.grad_bucket_bytes = 0;
	rt->behaviour.grad_reduce = TP_GRAD_REDUCE_MODEL;
	rt->behaviour.p2p_async = false;
	rt->behaviour.prefetch_depth = -1;
	rt->can.launcher = TP_LAUNCH_NONE;
	rt->can.tensor_parallel = true;
	rt->can.pipeline_parallel = true;
	rt->can.sequence_parallel = true;
	rt->can.context_parallel = true;
	rt->can.expert_parallel = true;
	rt->can.mixed_tp = true;
	rt->can.per_stage_degrees = true;
	rt->can.uneven_shares = true;
	rt->can.mixed_device_types = true;
	rt->can.overlapping_groups = true;
	rt->can.layout = TP_LAYOUT_ANY;
	rt->can.schedules = (1u << TP_SCHEDULE_COUNT) - 1;
	rt->can.syncs = (1u << TP_SYNC_COUNT) - 1;
	rt->can.recomputes = (1u << TP_RECOMPUTE_COUNT) - 1;
	rt->can.max_zero = 3;
	rt->can.max_zero_pipelined = 3;
	rt->can.compression = true;
	rt->can.lossy = (1u << TP_LOSSY_COUNT) - 1;
	rt->can.per_group_recompute = true;
	rt->can.models = TP_MODELS_ANY;
}

bool tp_runtime_is_none(const struct tp_runtime *rt)
{
	return strcmp(rt->name, "none") == 0;
}

const char *tp_runtime_models_name(enum tp_runtime_models m)
{
	return (unsigned)m < TP_MODELS_COUNT ? models_names[m] : "?";
}

int tp_runtime_models_parse(const char *s)
{
	return parse_in(models_names, TP_MODELS_COUNT, s);
}

static int parse_in(const char *const *names, int n, const char *s)
{
	for (int i = 0; s && i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

const char *tp_grad_reduce_name(enum tp_grad_reduce g)
{
	return (unsigned)g < TP_GRAD_REDUCE_COUNT ? grad_reduce_names[g] : "?";
}

int tp_grad_reduce_parse(const char *s)
{
	return parse_in(grad_reduce_names, TP_GRAD_REDUCE_COUNT, s);
}

int tp_memory_format_parse(const char *s)
{
	return !strcmp(s, "nhwc") ? 0 : !strcmp(s, "nchw") ? 1 : -1;
}

const char *tp_attn_kernel_name(enum tp_attn_kernel k)
{
	return (unsigned)k < TP_ATTN_KERNEL_COUNT ? attn_kernel_names[k] : "?";
}

int tp_attn_kernel_parse(const char *s)
{
	int k = parse_in(attn_kernel_names, TP_ATTN_KERNEL_COUNT, s);

	return k == TP_ATTN_KERNEL_GEMM ? -1 : k;
}

const char *tp_layer_layout_name(enum tp_layer_layout l)
{
	return (unsigned)l < TP_LAYOUT_COUNT ? layout_names[l] : "?";
}

int tp_layer_layout_parse(const char *s)
{
	return parse_in(layout_names, TP_LAYOUT_COUNT, s);
}

const char *tp_launcher_name(enum tp_launcher l)
{
	return (unsigned)l < TP_LAUNCH_COUNT ? launcher_names[l] : "?";
}

int tp_launcher_parse(const char *s)
{
	return parse_in(launcher_names, TP_LAUNCH_COUNT, s);
}
