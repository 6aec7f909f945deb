/*
 * export.c - a plan's uniform strategy for its runtime (export.h
 * tp_export_analyze), the targets' names and the notes they share; the
 * targets' writers are export_megatron.c (Megatron-LM, torchrun),
 * export_deepspeed.c and export_torchtitan.c.
 */
#include "export.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/precision.h"
#include "core/vec.h"
#include "export_int.h"

static const char *const target_names[TP_EXPORT_TARGET_COUNT] = {
    "megatron", "deepspeed", "torchrun", "torchtitan"};
static const char *const target_runtimes[TP_EXPORT_TARGET_COUNT] = {
    "megatron-core", "deepspeed", "megatron-core", "fsdp2"};

int tp_export_target_parse(const char *name)
{
	for (int i = 0; i < TP_EXPORT_TARGET_COUNT; i++)
		if (strcmp(name, target_names[i]) == 0)
			return i;
	return -1;
}

const char *tp_export_target_name(enum tp_export_target t)
{
	return (unsigned)t < TP_EXPORT_TARGET_COUNT ? target_names[t] : "?";
}

enum tp_export_target tp_export_target_of(const struct tp_runtime *rt)
{
	switch (rt->can.launcher) {
	case TP_LAUNCH_MEGATRON:
		return TP_EXPORT_MEGATRON;
	case TP_LAUNCH_DEEPSPEED:
		return TP_EXPORT_DEEPSPEED;
	case TP_LAUNCH_TORCHRUN:
		return TP_EXPORT_TORCHRUN;
	case TP_LAUNCH_TORCHTITAN:
		return TP_EXPORT_TORCHTITAN;
	default:
		return TP_EXPORT_TARGET_COUNT;
	}
}

const char *tp_export_target_runtime(enum tp_export_target t)
{
	return (unsigned)t < TP_EXPORT_TARGET_COUNT ? target_runtimes[t] : NULL;
}

bool tp_export_target_fits(enum tp_export_target t, const struct tp_runtime *rt)
{
	enum tp_export_target own = tp_export_target_of(rt);

	return t == own ||
	       (t == TP_EXPORT_TORCHRUN && own == TP_EXPORT_MEGATRON);
}

enum tp_status tp_export_refuse(struct tp_error *err, const char *fmt, ...)
{
	char msg[TP_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return tp_error_set(err, TP_EINFEASIBLE, "%s", msg);
}

void tp_export_spec_release(struct tp_export_spec *spec)
{
	if (!spec)
		return;
	free(spec->chunk_layers);
	free(spec->nodes);
	spec->chunk_layers = NULL;
	spec->nodes = NULL;
}

/* What any launcher needs beyond the runtime's own profile (a user's
 * profile may claim more than a launcher has flags for). */
static void launcher_can(struct tp_runtime *strict)
{
	struct tp_runtime_can *c = &strict->can;

	c->per_stage_degrees = false;
	c->uneven_shares = false;
	c->overlapping_groups = false;
	c->per_group_recompute = false;
	c->syncs &= ~(1u << TP_SYNC_PS);
	c->compression = false;
}

/* Layers per chunk and the layout they need. */
static void chunk_layout(struct tp_export_spec *s,
			 const struct tp_plan_shape *sh)
{
	bool equal = true, middle = true;
	uint32_t n = sh->chunks, V = sh->pp ? n / sh->pp : 1;

	for (uint32_t k = 0; k < n; k++) {
		s->chunk_layers[k] = sh->chunk_layers[k];
		equal &= sh->chunk_layers[k] == sh->chunk_layers[0];
	}
	for (uint32_t k = 2; k + 1 < n; k++)
		middle &= sh->chunk_layers[k] == sh->chunk_layers[1];
	s->layers_per_chunk = equal && n ? sh->chunk_layers[0] : 0;
	if (n < 2 || (equal && sh->chunk_layers[0] > 0))
		s->layout = TP_LAYOUT_EVEN;
	else if (V == 1 && middle && sh->chunk_layers[0] > 0 &&
		 sh->chunk_layers[n - 1] > 0 &&
		 (n == 2 || sh->chunk_layers[1] > 0))
		s->layout = TP_LAYOUT_FIRST_LAST;
	else
		s->layout = TP_LAYOUT_ANY;
}

/* Ranks: the stages' device lists one after the other; the nodes they
 * fill, in rank order. */
static enum tp_status place_ranks(struct tp_export_spec *s,
				  const struct tp_plan *p,
				  const struct tp_cluster *c,
				  const struct tp_plan_shape *sh,
				  struct tp_error *err)
{
	uint32_t rank = 0, prev = TP_NONE;
	uint32_t type0 = TP_NONE;

	s->nodes = tp_calloc(c->nodes.n + 1, sizeof(*s->nodes));
	if (!s->nodes)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	s->natural_ranks = true;
	for (uint32_t st = 0; st < sh->pp; st++) {
		uint32_t g = sh->stage_group[st];
		const uint32_t *d = tp_plan_group_devs(p, g);
		for (uint32_t i = 0; i < p->groups.v[g].n_devices;
		     i++, rank++) {
			const struct tp_device *dev = &c->devices.v[d[i]];
			struct tp_export_node *en;
			size_t len;
			if (d[i] != rank)
				s->natural_ranks = false;
			if (type0 == TP_NONE)
				type0 = dev->type;
			else if (dev->type != type0)
				s->mixed_types = true;
			if (dev->node != prev) {
				if (s->nnodes >= c->nodes.n)
					return tp_export_refuse(
					    err,
					    "the ranks visit node %s "
					    "twice",
					    c->nodes.v[dev->node].name);
				en = &s->nodes[s->nnodes++];
				en->node = dev->node;
				en->first_rank = rank;
				en->whole = true;
				snprintf(en->name, sizeof(en->name), "%s",
					 c->nodes.v[dev->node].name);
				prev = dev->node;
			}
			en = &s->nodes[s->nnodes - 1];
			len = strlen(en->visible);
			if (len + 12 < sizeof(en->visible))
				snprintf(en->visible + len,
					 sizeof(en->visible) - len, "%s%u",
					 len ? "," : "", dev->local);
			if (dev->local != en->n_ranks)
				en->whole = false;
			en->n_ranks++;
		}
	}
	s->world = rank;
	s->idle = (uint32_t)c->devices.n - rank;
	if (s->idle)
		s->natural_ranks = false;
	s->nproc_per_node = s->nnodes ? s->nodes[0].n_ranks : 0;
	for (uint32_t k = 0; k < s->nnodes; k++) {
		const struct tp_node *nd = &c->nodes.v[s->nodes[k].node];
		if (s->nodes[k].n_ranks != nd->n_devices)
			s->nodes[k].whole = false;
		if (s->nodes[k].n_ranks != s->nproc_per_node)
			s->nproc_per_node = 0;
	}
	return TP_OK;
}

/* bf16 needs tensor cores that have it (Ampere and later); where a used
 * device has none the job runs fp16, as the simulator priced it
 * (core/precision.h). */
static void precision(struct tp_export_spec *s, const struct tp_plan *p,
		      const struct tp_cluster *c)
{
	/* DeepSpeed and torchrun say nothing of fp8; the common note
	 * carries the sentence (precision_note) */
	s->run_dtype =
	    tp_precision_job(c, p->devs.v, p->devs.n, s->dtype,
			     s->precision_note, sizeof(s->precision_note));
}

/* The one expert-parallel degree Megatron-Core takes
 * (--expert-model-parallel-size): every group with ep > 1 the same, the
 * runtime Megatron-Core's. */
static enum tp_status expert_parallel(struct tp_export_spec *spec,
				      const struct tp_plan *p,
				      const struct tp_runtime *rt,
				      struct tp_error *err)
{
	bool split = false;

	spec->ep = 1;
	spec->etp = 0;
	spec->capacity_factor = p->expert_capacity_factor;
	for (uint32_t g = 0; g < p->groups.n; g++) {
		uint32_t ep = p->groups.v[g].ep;
		if (p->groups.v[g].etp == 1 && p->groups.v[g].tp > 1)
			spec->etp = 1;
		else if (ep > 1 && p->groups.v[g].tp > 1)
			split = true;
		if (ep <= 1)
			continue;
		if (spec->ep > 1 && ep != spec->ep)
			return tp_export_refuse(
			    err,
			    "groups with expert parallelism %u and %u: "
			    "Megatron-Core takes one "
			    "--expert-model-parallel-size; re-plan with one "
			    "ep",
			    spec->ep, ep);
		spec->ep = ep;
	}
	if (spec->ep > 1 && (rt->can.launcher != TP_LAUNCH_MEGATRON ||
			     strncmp(rt->name, "megatron-lm-", 12) == 0))
		return tp_export_refuse(
		    err,
		    "expert parallelism (ep=%u): only the Megatron-Core "
		    "export writes it (--expert-model-parallel-size); "
		    "re-plan with --runtime megatron-core, or with ep=1",
		    spec->ep);
	if (spec->etp == 1 && split)
		return tp_export_refuse(
		    err,
		    "groups whose experts run whole (etp=1) and groups whose "
		    "experts are split over tp: Megatron-Core takes one "
		    "--expert-tensor-parallel-size; re-plan with one etp");
	if (spec->etp == 1 && (rt->can.launcher != TP_LAUNCH_MEGATRON ||
			       strncmp(rt->name, "megatron-lm-", 12) == 0))
		return tp_export_refuse(
		    err,
		    "expert tensor parallelism 1 (etp=1): only the "
		    "Megatron-Core export writes it "
		    "(--expert-tensor-parallel-size); re-plan with --runtime "
		    "megatron-core, or without etp");
	return TP_OK;
}

enum tp_status
tp_export_analyze(const struct tp_plan *p, const struct tp_model *m,
		  const struct tp_cluster *c, const struct tp_runtime *rt,
		  struct tp_export_spec *spec, struct tp_error *err)
{
	struct tp_plan_shape sh;
	struct tp_runtime strict = *rt;
	char why[512];
	uint32_t V;
	enum tp_status st;

	memset(spec, 0, sizeof(*spec));
	spec->rt = *rt;
	if (p->groups.n == 0)
		return tp_error_set(err, TP_EINPUT, "the plan has no groups");
	for (size_t i = 0; i < p->ops.n; i++)
		if (p->ops.v[i] >= m->ops.n)
			return tp_error_set(err, TP_EINPUT,
					    "the plan names op %u; the model "
					    "has %zu ops",
					    p->ops.v[i], m->ops.n);
	for (size_t i = 0; i < p->devs.n; i++)
		if (p->devs.v[i] >= c->devices.n)
			return tp_error_set(err, TP_EINPUT,
					    "the plan names device %u; the "
					    "topology has %zu",
					    p->devs.v[i], c->devices.n);
	if ((st = tp_precision_check(c, m->dtype, err)))
		return st;
	if (tp_runtime_is_none(rt))
		return tp_export_refuse(err, "the plan was made for no "
					     "runtime; name one");
	launcher_can(&strict);
	if (tp_runtime_plan_check(&strict, p, m, c, &sh, why, sizeof(why)))
		return tp_export_refuse(err, "%s", why);
	V = sh.chunks / sh.pp;
	if ((V > 1) != (p->schedule == TP_SCHEDULE_INTERLEAVED))
		return tp_export_refuse(err,
					"%u pipeline chunks on %u stages with "
					"the %s schedule",
					sh.chunks, sh.pp,
					tp_schedule_name(p->schedule));
	if (p->micro_batches == 0 ||
	    p->global_batch % ((int64_t)p->micro_batches * p->groups.v[0].dp) !=
		0)
		return tp_export_refuse(err,
					"a global batch of %lld in %u "
					"micro-batches over dp %u is not a "
					"whole micro-batch size",
					(long long)p->global_batch,
					p->micro_batches, p->groups.v[0].dp);
	spec->chunk_layers = tp_calloc(sh.chunks + 1, sizeof(int64_t));
	if (!spec->chunk_layers)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	spec->tp = p->groups.v[0].tp;
	spec->dp = p->groups.v[0].dp;
	spec->cp = p->groups.v[0].cp;
	spec->pp = sh.pp;
	spec->virtual_stages = V;
	spec->n_chunks = sh.chunks;
	spec->layers = sh.layers;
	chunk_layout(spec, &sh);
	spec->global_batch = p->global_batch;
	spec->micro_batches = p->micro_batches;
	spec->micro_batch =
	    p->global_batch / ((int64_t)p->micro_batches * spec->dp);
	spec->schedule = p->schedule;
	spec->recompute = p->groups.v[0].recompute;
	spec->sync = p->groups.v[0].sync;
	spec->sp = p->groups.v[0].sp;
	if ((st = expert_parallel(spec, p, rt, err)))
		return st;
	spec->zero = p->zero;
	spec->dtype = m->dtype;
	spec->arch = m->arch;
	spec->model_name = m->name;
	spec->seq_len = m->seq_len;
	spec->grad_bucket_bytes = p->grad_bucket_bytes;
	if ((st = place_ranks(spec, p, c, &sh, err)))
		return st;
	for (uint32_t g = 0; g < p->groups.n; g++)
		if (p->groups.v[g].dp > 1 &&
		    p->groups.v[g].sync !=
			tp_runtime_sync(c, tp_plan_group_devs(p, g),
					p->groups.v[g].n_devices,
					p->groups.v[g].tp))
			spec->sync_differs = true;
	precision(spec, p, c);
	return TP_OK;
}

double tp_export_bucket_elements(const struct tp_export_spec *s)
{
	double b = s->grad_bucket_bytes > 0 ? s->grad_bucket_bytes
					    : TP_GRAD_BUCKET_DEFAULT_BYTES;
	double el = s->rt.behaviour.grad_reduce == TP_GRAD_REDUCE_FP32
			? 4
			: tp_dtype_bytes(s->run_dtype);
	return floor(b / el);
}

void tp_export_note_common(const struct tp_export_spec *s,
			   bool ranks_in_output, struct tp_strbuf *notes)
{
	const char *ranks = ranks_in_output ? "" : TP_EXPORT_WARNING;

	if (!notes)
		return;
	if (s->cp > 1)
		tp_strbuf_addf(notes,
			       "for runtime %s: data parallelism %u follows "
			       "from %u ranks / (tp %u x cp %u x pp %u)\n",
			       s->rt.name, s->dp, s->world, s->tp, s->cp,
			       s->pp);
	else
		tp_strbuf_addf(notes,
			       "for runtime %s: data parallelism %u follows "
			       "from %u ranks / (tp %u x pp %u)\n",
			       s->rt.name, s->dp, s->world, s->tp, s->pp);
	if (s->mixed_types)
		tp_strbuf_adds(
		    notes, "the ranks mix device types: every rank gets the "
			   "same share, as this plan does\n");
	if (s->precision_note[0])
		tp_strbuf_addf(notes, "precision: %s\n", s->precision_note);
	if (s->idle)
		tp_strbuf_addf(notes,
			       "%u device%s of the topology get no rank and "
			       "stay idle\n",
			       s->idle, s->idle == 1 ? "" : "s");
	if (!s->natural_ranks) {
		tp_strbuf_addf(notes,
			       "%sranks follow the plan's stages, not the "
			       "topology's device order: start %u node%s\n",
			       ranks, s->nnodes, s->nnodes == 1 ? "" : "s");
		for (uint32_t k = 0; k < s->nnodes; k++)
			tp_strbuf_addf(
			    notes,
			    "%s  NODE_RANK=%u: node %s, ranks %u..%u, "
			    "CUDA_VISIBLE_DEVICES=%s\n",
			    ranks, k, s->nodes[k].name, s->nodes[k].first_rank,
			    s->nodes[k].first_rank + s->nodes[k].n_ranks - 1,
			    s->nodes[k].visible);
	}
	if (s->sync_differs)
		tp_strbuf_addf(notes,
			       TP_EXPORT_WARNING "the plan synchronises gradients otherwise than "
			       "%s's collectives (NCCL) do: the job reduces as "
			       "tagplan's tp_runtime_sync rule says, not as "
			       "simulated\n",
			       s->rt.name);
	if (s->dp > 1) {
		double b = s->grad_bucket_bytes > 0
			       ? s->grad_bucket_bytes
			       : TP_GRAD_BUCKET_DEFAULT_BYTES;
		tp_strbuf_addf(notes,
			       "the plan was simulated with gradient buckets "
			       "of %.6g MB%s: %.0f %s elements (the dtype %s "
			       "reduces gradients in)\n",
			       b / 1e6,
			       s->rt.behaviour.dp_overlap
				   ? ", reduced while the backward runs"
				   : ", reduced after the backward",
			       tp_export_bucket_elements(s),
			       s->rt.behaviour.grad_reduce ==
				       TP_GRAD_REDUCE_FP32
				   ? "fp32"
				   : tp_dtype_name(s->run_dtype),
			       s->rt.name);
	}
}

enum tp_status tp_export_megatron_limits(const struct tp_export_spec *s,
					 struct tp_error *err)
{
	if (s->zero >= 2)
		return tp_export_refuse(
		    err,
		    "ZeRO stage %u: Megatron-LM's distributed optimizer is "
		    "ZeRO-1 (optimizer states only); re-plan with ZeRO <= 1",
		    s->zero);
	if (s->pp > 1 && s->schedule == TP_SCHEDULE_GPIPE)
		return tp_export_refuse(
		    err, "the GPipe schedule: Megatron-LM pipelines "
			 "with 1F1B (or interleaved 1F1B)");
	if (s->layers == 0)
		return tp_export_refuse(
		    err, "the model has no transformer layers; "
			 "Megatron-LM trains transformer models");
	return TP_OK;
}
