/*
 * export.c - uniform plans -> Megatron-LM / DeepSpeed / torchrun (see
 * export.h).
 */
#include "export.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonw.h"
#include "core/vec.h"

static const char *const target_names[TP_EXPORT_TARGET_COUNT] = {
	"megatron", "deepspeed", "torchrun"};

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

static enum tp_status refuse(struct tp_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static enum tp_status refuse(struct tp_error *err, const char *fmt, ...)
{
	char msg[TP_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return tp_error_set(err, TP_EINFEASIBLE, "%s", msg);
}

struct grp_order {
	uint32_t group, first_pos, chunk;
};

static int cmp_grp_order(const void *a, const void *b)
{
	const struct grp_order *x = a, *y = b;
	return x->first_pos < y->first_pos ? -1 : x->first_pos > y->first_pos;
}

static bool same_devs(const struct tp_plan *p, uint32_t a, uint32_t b)
{
	const struct tp_plan_group *ga = &p->groups.v[a], *gb = &p->groups.v[b];
	return ga->n_devices == gb->n_devices &&
	       memcmp(tp_plan_group_devs(p, a), tp_plan_group_devs(p, b),
		      ga->n_devices * sizeof(uint32_t)) == 0;
}

/* Uniform settings over all groups. */
static enum tp_status check_uniform(const struct tp_plan *p,
				    struct tp_error *err)
{
	const struct tp_plan_group *g0 = &p->groups.v[0];

	for (size_t g = 0; g < p->groups.n; g++) {
		const struct tp_plan_group *gr = &p->groups.v[g];
		const double *sh = tp_plan_group_shares(p, (uint32_t)g);

		if (gr->tp != g0->tp || gr->dp != g0->dp)
			return refuse(
				err,
				"mixed per-group degrees: group 0 runs dp %u x "
				"tp %u, group %zu dp %u x tp %u; Megatron-LM and "
				"DeepSpeed use one tensor- and data-parallel "
				"degree for the whole model",
				g0->dp, g0->tp, g, gr->dp, gr->tp);
		for (uint32_t r = 1; r < gr->dp; r++)
			if (fabs(sh[r] - sh[0]) > 1e-9)
				return refuse(
					err,
					"uneven batch shares: group %zu gives "
					"replica 0 %.3g and replica %u %.3g of "
					"each micro-batch; the frameworks split "
					"the batch evenly over replicas",
					g, sh[0], r, sh[r]);
		if (gr->recompute != g0->recompute)
			return refuse(err,
				      "mixed recomputation: group 0 uses %s, "
				      "group %zu %s; the frameworks apply one "
				      "setting to every layer",
				      tp_recompute_name(g0->recompute), g,
				      tp_recompute_name(gr->recompute));
		if (gr->sp != g0->sp)
			return refuse(err,
				      "sequence parallelism on in some groups "
				      "and off in others (group %zu); it is "
				      "one switch for the whole model",
				      g);
		if (gr->sync == TP_SYNC_PS)
			return refuse(err,
				      "group %zu synchronises gradients through "
				      "a parameter server; the frameworks "
				      "all-reduce (NCCL)",
				      g);
		if (gr->n_sfb)
			return refuse(err,
				      "group %zu compresses gradients of %u ops "
				      "by sufficient-factor broadcasting, which "
				      "the frameworks do not implement; re-plan "
				      "with --compression off",
				      g, gr->n_sfb);
		if (gr->lossy != TP_LOSSY_NONE)
			return refuse(err,
				      "group %zu uses lossy gradient "
				      "compression (%s), which has no launcher "
				      "flag here; re-plan with --compression "
				      "off",
				      g, tp_lossy_name(gr->lossy));
	}
	return TP_OK;
}

enum tp_status tp_export_analyze(const struct tp_plan *p,
				 const struct tp_model *m,
				 const struct tp_cluster *c,
				 struct tp_export_spec *spec,
				 struct tp_error *err)
{
	size_t ng = p->groups.n, nd = c->devices.n;
	struct grp_order *ord = NULL;
	uint32_t *chunk_group = NULL; /* first group of each chunk */
	uint32_t *stage_group = NULL; /* a group of each stage */
	uint32_t n_chunks = 0, pp = 0, tp, dp, V;
	int64_t *chunk_layers = NULL;
	enum tp_status st = TP_OK;

	memset(spec, 0, sizeof(*spec));
	if (ng == 0)
		return tp_error_set(err, TP_EINPUT, "the plan has no groups");
	if ((st = check_uniform(p, err)) != TP_OK)
		return st;
	tp = p->groups.v[0].tp;
	dp = p->groups.v[0].dp;
	ord = tp_calloc(ng, sizeof(*ord));
	chunk_group = tp_calloc(ng, sizeof(uint32_t));
	stage_group = tp_calloc(ng, sizeof(uint32_t));
	chunk_layers = tp_calloc(ng, sizeof(int64_t));
	if (!ord || !chunk_group || !stage_group || !chunk_layers) {
		st = tp_error_set(err, TP_ENOMEM, "out of memory");
		goto out;
	}
	/* groups in model order; consecutive groups on the same devices
	 * form one pipeline chunk */
	for (size_t g = 0; g < ng; g++) {
		const uint32_t *ops = tp_plan_group_ops(p, (uint32_t)g);
		uint32_t lo = UINT32_MAX;
		for (uint32_t i = 0; i < p->groups.v[g].n_ops; i++) {
			if (ops[i] >= m->ops.n) {
				st = tp_error_set(err, TP_EINPUT,
						  "group %zu names op %u; the "
						  "model has %zu ops",
						  g, ops[i], m->ops.n);
				goto out;
			}
			if (m->topo_pos[ops[i]] < lo)
				lo = m->topo_pos[ops[i]];
		}
		ord[g].group = (uint32_t)g;
		ord[g].first_pos = lo;
	}
	qsort(ord, ng, sizeof(*ord), cmp_grp_order);
	for (size_t i = 0; i < ng; i++) {
		uint32_t g = ord[i].group;
		if (n_chunks == 0 || !same_devs(p, chunk_group[n_chunks - 1], g))
			chunk_group[n_chunks++] = g;
		ord[i].chunk = n_chunks - 1;
	}
	/* stages: the distinct device sets, in order of first use */
	for (uint32_t k = 0; k < n_chunks; k++) {
		uint32_t g = chunk_group[k], s;
		for (s = 0; s < pp; s++)
			if (same_devs(p, stage_group[s], g))
				break;
		if (s == pp)
			stage_group[pp++] = g;
		if (s != k % pp && k >= pp) {
			st = refuse(err,
				    "pipeline chunks out of round-robin order: "
				    "chunk %u (group %u) runs on the devices of "
				    "stage %u, Megatron-LM would put it on stage "
				    "%u",
				    k, g, s, k % pp);
			goto out;
		}
	}
	V = n_chunks / pp;
	if (n_chunks % pp != 0 || (V > 1) != (p->schedule ==
					       TP_SCHEDULE_INTERLEAVED)) {
		st = refuse(err,
			    "%u pipeline chunks on %u stages with the %s "
			    "schedule; the frameworks need one chunk per stage "
			    "(or, interleaved, the same number V on each)",
			    n_chunks, pp, tp_schedule_name(p->schedule));
		goto out;
	}
	/* devices in Megatron's rank order, all devices used */
	if ((uint64_t)tp * dp * pp != nd) {
		st = refuse(err,
			    "the plan uses %llu of the %zu devices (tp %u x dp "
			    "%u x pp %u); a launcher starts one rank per GPU of "
			    "the topology",
			    (unsigned long long)tp * dp * pp, nd, tp, dp, pp);
		goto out;
	}
	for (uint32_t s = 0; s < pp; s++) {
		const uint32_t *d = tp_plan_group_devs(p, stage_group[s]);
		for (uint32_t i = 0; i < tp * dp; i++) {
			uint32_t want = s * tp * dp + i;
			if (d[i] != want) {
				st = refuse(
					err,
					"arbitrary placement: stage %u replica "
					"%u tensor rank %u is on %s (rank %u); "
					"Megatron's rank order (tensor fastest, "
					"then data, then pipeline) puts %s "
					"there",
					s, i / tp, i % tp,
					d[i] < nd ? c->devices.v[d[i]].name : "?",
					d[i], c->devices.v[want].name);
				goto out;
			}
		}
	}
	/* layers per chunk */
	{
		int64_t layers = 0;
		for (size_t o = 0; o < m->ops.n; o++)
			if (m->ops.v[o].layer + 1 > layers)
				layers = m->ops.v[o].layer + 1;
		if (m->arch.layers > 0)
			layers = m->arch.layers;
		spec->layers = layers;
		for (uint32_t k = 0; k < n_chunks; k++) {
			int32_t lo = -1, hi = -1;
			for (size_t i = 0; i < ng; i++) {
				uint32_t g = ord[i].group;
				const uint32_t *ops;
				if (ord[i].chunk != k)
					continue;
				ops = tp_plan_group_ops(p, g);
				for (uint32_t j = 0; j < p->groups.v[g].n_ops;
				     j++) {
					int32_t l = m->ops.v[ops[j]].layer;
					if (l < 0)
						continue;
					if (lo < 0 || l < lo)
						lo = l;
					if (l > hi)
						hi = l;
				}
			}
			chunk_layers[k] = lo < 0 ? 0 : hi - lo + 1;
		}
		if (pp * V > 1 && layers == 0) {
			st = refuse(err,
				    "the model has no layers (op \"layer\" "
				    "fields) to split into %u pipeline chunks; "
				    "the frameworks pipeline whole transformer "
				    "layers",
				    pp * V);
			goto out;
		}
		if (layers > 0) {
			int64_t sum = 0;
			for (uint32_t k = 0; k < n_chunks; k++) {
				sum += chunk_layers[k];
				if (chunk_layers[k] != chunk_layers[0]) {
					st = refuse(
						err,
						"uneven layer split: pipeline "
						"chunk 0 holds %lld layers, chunk "
						"%u holds %lld; the frameworks "
						"give every chunk num-layers / "
						"(pp x V) layers",
						(long long)chunk_layers[0], k,
						(long long)chunk_layers[k]);
					goto out;
				}
			}
			if (sum != layers) {
				st = refuse(err,
					    "pipeline chunks hold %lld layers "
					    "in all, the model has %lld (a "
					    "layer split across chunks)",
					    (long long)sum, (long long)layers);
				goto out;
			}
			spec->layers_per_chunk = chunk_layers[0];
		}
	}
	if (p->micro_batches == 0 ||
	    p->global_batch % ((int64_t)p->micro_batches * dp) != 0) {
		st = refuse(err,
			    "a global batch of %lld in %u micro-batches over "
			    "dp %u is not a whole micro-batch size",
			    (long long)p->global_batch, p->micro_batches, dp);
		goto out;
	}
	spec->tp = tp;
	spec->dp = dp;
	spec->pp = pp;
	spec->virtual_stages = V;
	spec->global_batch = p->global_batch;
	spec->micro_batches = p->micro_batches;
	spec->micro_batch = p->global_batch / ((int64_t)p->micro_batches * dp);
	spec->schedule = p->schedule;
	spec->recompute = p->groups.v[0].recompute;
	spec->sp = p->groups.v[0].sp;
	spec->zero = p->zero;
	spec->world = (uint32_t)nd;
	spec->nnodes = (uint32_t)c->nodes.n;
	spec->nproc_per_node = c->nodes.n ? c->nodes.v[0].n_devices : 0;
	for (size_t n = 1; n < c->nodes.n; n++)
		if (c->nodes.v[n].n_devices != spec->nproc_per_node)
			spec->nproc_per_node = 0;
	for (size_t d = 1; d < nd; d++)
		if (c->devices.v[d].type != c->devices.v[0].type)
			spec->mixed_types = true;
	spec->dtype = m->dtype;
	spec->arch = m->arch;
	spec->seq_len = m->seq_len;
	spec->grad_bucket_bytes = p->grad_bucket_bytes;
out:
	free(ord);
	free(chunk_group);
	free(stage_group);
	free(chunk_layers);
	return st;
}

/* Megatron-LM arguments, one per element; sep goes between them. */
static void megatron_args(const struct tp_export_spec *s, const char *sep,
			  struct tp_strbuf *out)
{
	const struct tp_arch *a = &s->arch;

	tp_strbuf_addf(out, "--tensor-model-parallel-size %u%s", s->tp, sep);
	tp_strbuf_addf(out, "--pipeline-model-parallel-size %u%s", s->pp, sep);
	if (s->virtual_stages > 1)
		tp_strbuf_addf(out, "--num-layers-per-virtual-pipeline-stage "
				    "%lld%s",
			       (long long)s->layers_per_chunk, sep);
	tp_strbuf_addf(out, "--micro-batch-size %lld%s",
		       (long long)s->micro_batch, sep);
	tp_strbuf_addf(out, "--global-batch-size %lld%s",
		       (long long)s->global_batch, sep);
	if (s->sp)
		tp_strbuf_addf(out, "--sequence-parallel%s", sep);
	if (s->recompute == TP_RECOMPUTE_SELECTIVE)
		tp_strbuf_addf(out, "--recompute-granularity selective%s", sep);
	else if (s->recompute == TP_RECOMPUTE_FULL)
		tp_strbuf_addf(out,
			       "--recompute-granularity full%s"
			       "--recompute-method uniform%s"
			       "--recompute-num-layers 1%s",
			       sep, sep, sep);
	if (s->zero == 1)
		tp_strbuf_addf(out, "--use-distributed-optimizer%s", sep);
	if (s->layers > 0)
		tp_strbuf_addf(out, "--num-layers %lld%s", (long long)s->layers,
			       sep);
	if (a->hidden > 0)
		tp_strbuf_addf(out, "--hidden-size %lld%s", (long long)a->hidden,
			       sep);
	if (a->ffn > 0)
		tp_strbuf_addf(out, "--ffn-hidden-size %lld%s",
			       (long long)a->ffn, sep);
	if (a->heads > 0)
		tp_strbuf_addf(out, "--num-attention-heads %lld%s",
			       (long long)a->heads, sep);
	if (a->kv_heads > 0 && a->kv_heads != a->heads)
		tp_strbuf_addf(out,
			       "--group-query-attention%s"
			       "--num-query-groups %lld%s",
			       sep, (long long)a->kv_heads, sep);
	if (s->seq_len > 0)
		tp_strbuf_addf(out,
			       "--seq-length %lld%s"
			       "--max-position-embeddings %lld%s",
			       (long long)s->seq_len, sep,
			       (long long)s->seq_len, sep);
	if (s->dtype == TP_DTYPE_BF16)
		tp_strbuf_addf(out, "--bf16%s", sep);
	else if (s->dtype == TP_DTYPE_FP16)
		tp_strbuf_addf(out, "--fp16%s", sep);
}

static enum tp_status megatron_limits(const struct tp_export_spec *s,
				      struct tp_error *err)
{
	if (s->zero >= 2)
		return refuse(err,
			      "ZeRO stage %u: Megatron-LM's distributed "
			      "optimizer is ZeRO-1 (optimizer states only); "
			      "export to deepspeed, or re-plan with ZeRO <= 1",
			      s->zero);
	if (s->pp > 1 && s->schedule == TP_SCHEDULE_GPIPE)
		return refuse(err,
			      "the GPipe schedule: Megatron-LM pipelines with "
			      "1F1B (or interleaved 1F1B); re-plan with "
			      "schedule 1f1b");
	if (s->layers == 0)
		return refuse(err,
			      "the model has no transformer layers; "
			      "Megatron-LM trains transformer models");
	return TP_OK;
}

static void note_common(const struct tp_export_spec *s,
			struct tp_strbuf *notes)
{
	if (!notes)
		return;
	tp_strbuf_addf(notes,
		       "data parallelism %u follows from %u GPUs / (tp %u x "
		       "pp %u)\n",
		       s->dp, s->world, s->tp, s->pp);
	if (s->mixed_types)
		tp_strbuf_adds(notes,
			       "the cluster mixes device types: the frameworks "
			       "give every GPU the same share, as this plan "
			       "does\n");
	if (s->dp > 1) {
		double b = s->grad_bucket_bytes > 0 ? s->grad_bucket_bytes
						     : TP_GRAD_BUCKET_DEFAULT_BYTES,
		       el;
		el = b / tp_dtype_bytes(s->dtype);
		tp_strbuf_addf(notes,
			       "the plan was simulated with gradient buckets "
			       "of %.6g MB: PyTorch DDP bucket_cap_mb=%.6g "
			       "(MiB); Megatron-LM --ddp-bucket-size and "
			       "DeepSpeed reduce_bucket_size count elements: "
			       "%.0f\n",
			       b / 1e6, b / 1048576.0, el);
	}
}

static enum tp_status write_megatron(const struct tp_export_spec *s,
				     struct tp_strbuf *out,
				     struct tp_strbuf *notes,
				     struct tp_error *err)
{
	enum tp_status st = megatron_limits(s, err);

	if (st != TP_OK)
		return st;
	megatron_args(s, "\n", out);
	note_common(s, notes);
	if (notes && (s->arch.hidden <= 0 || s->arch.heads <= 0))
		tp_strbuf_adds(notes,
			       "the model file gives no hidden size or head "
			       "count (\"arch\"): add --hidden-size and "
			       "--num-attention-heads yourself\n");
	return TP_OK;
}

static enum tp_status write_deepspeed(const struct tp_export_spec *s,
				      struct tp_strbuf *out,
				      struct tp_strbuf *notes,
				      struct tp_error *err)
{
	struct tp_jw jw;

	if (s->pp > 1 && s->schedule == TP_SCHEDULE_INTERLEAVED)
		return refuse(err,
			      "the interleaved schedule (%u chunks per stage): "
			      "DeepSpeed's pipeline engine runs one chunk per "
			      "stage; export to megatron or re-plan with 1f1b",
			      s->virtual_stages);
	if (s->pp > 1 && s->schedule == TP_SCHEDULE_GPIPE)
		return refuse(err,
			      "the GPipe schedule: DeepSpeed's pipeline engine "
			      "runs 1F1B; re-plan with schedule 1f1b");
	if (s->pp > 1 && s->zero >= 2)
		return refuse(err,
			      "ZeRO stage %u with %u pipeline stages: "
			      "DeepSpeed's pipeline engine supports ZeRO-1 at "
			      "most; re-plan with ZeRO <= 1 or no pipelining",
			      s->zero, s->pp);
	tp_jw_init(&jw, out, true);
	tp_jw_object_begin(&jw);
	tp_jw_kv_int(&jw, "train_batch_size", s->global_batch);
	tp_jw_kv_int(&jw, "train_micro_batch_size_per_gpu", s->micro_batch);
	tp_jw_kv_int(&jw, "gradient_accumulation_steps", s->micro_batches);
	tp_jw_key(&jw, "zero_optimization");
	tp_jw_object_begin(&jw);
	tp_jw_kv_int(&jw, "stage", s->zero);
	tp_jw_object_end(&jw);
	if (s->dtype == TP_DTYPE_BF16) {
		tp_jw_key(&jw, "bf16");
		tp_jw_object_begin(&jw);
		tp_jw_kv_bool(&jw, "enabled", true);
		tp_jw_object_end(&jw);
	} else if (s->dtype == TP_DTYPE_FP16) {
		tp_jw_key(&jw, "fp16");
		tp_jw_object_begin(&jw);
		tp_jw_kv_bool(&jw, "enabled", true);
		tp_jw_object_end(&jw);
	}
	if (s->pp > 1) {
		tp_jw_key(&jw, "pipeline");
		tp_jw_object_begin(&jw);
		tp_jw_kv_int(&jw, "stages", s->pp);
		tp_jw_kv_string(&jw, "partition", "uniform");
		tp_jw_kv_int(&jw, "activation_checkpoint_interval",
			     s->recompute == TP_RECOMPUTE_FULL ? 1 : 0);
		tp_jw_object_end(&jw);
	}
	if (s->recompute == TP_RECOMPUTE_FULL) {
		tp_jw_key(&jw, "activation_checkpointing");
		tp_jw_object_begin(&jw);
		tp_jw_kv_bool(&jw, "partition_activations", s->tp > 1);
		tp_jw_kv_bool(&jw, "contiguous_memory_optimization", false);
		tp_jw_kv_bool(&jw, "cpu_checkpointing", false);
		tp_jw_object_end(&jw);
	}
	tp_jw_object_end(&jw);
	tp_jw_finish(&jw);
	note_common(s, notes);
	if (notes) {
		if (s->pp > 1)
			tp_strbuf_addf(notes,
				       "build the model as deepspeed.pipe."
				       "PipelineModule(num_stages=%u, "
				       "partition_method=\"uniform\")\n",
				       s->pp);
		if (s->tp > 1 || s->sp || s->recompute ==
						   TP_RECOMPUTE_SELECTIVE) {
			struct tp_strbuf a;
			tp_strbuf_init(&a);
			megatron_args(s, " ", &a);
			if (a.len && a.buf[a.len - 1] == ' ')
				a.buf[--a.len] = '\0';
			tp_strbuf_addf(notes,
				       "tensor parallelism%s%s is the model "
				       "code's (Megatron-DeepSpeed: %s)\n",
				       s->sp ? ", sequence parallelism" : "",
				       s->recompute == TP_RECOMPUTE_SELECTIVE
					       ? ", selective recomputation"
					       : "",
				       tp_strbuf_cstr(&a));
			tp_strbuf_release(&a);
		}
	}
	return TP_OK;
}

static enum tp_status write_torchrun(const struct tp_export_spec *s,
				     const char *script, struct tp_strbuf *out,
				     struct tp_strbuf *notes,
				     struct tp_error *err)
{
	enum tp_status st;

	if (s->nproc_per_node == 0)
		return refuse(err,
			      "the nodes differ in GPU count; torchrun starts "
			      "the same number of processes (nproc_per_node) "
			      "on every node");
	if ((st = megatron_limits(s, err)) != TP_OK)
		return st;
	tp_strbuf_addf(out,
		       "torchrun \\\n"
		       "  --nnodes=%u \\\n"
		       "  --nproc_per_node=%u \\\n"
		       "  --node_rank=\"${NODE_RANK:?set NODE_RANK to this "
		       "node's index, 0..%u}\" \\\n"
		       "  --master_addr=\"${MASTER_ADDR:?set MASTER_ADDR to "
		       "node 0's address}\" \\\n"
		       "  --master_port=\"${MASTER_PORT:-29500}\" \\\n"
		       "  %s \\\n  ",
		       s->nnodes, s->nproc_per_node, s->nnodes - 1,
		       script ? script : "pretrain_gpt.py");
	megatron_args(s, " \\\n  ", out);
	/* drop the continuation after the last argument */
	if (out->len >= 5 && strcmp(out->buf + out->len - 5, " \\\n  ") == 0) {
		out->len -= 5;
		out->buf[out->len] = '\0';
	}
	tp_strbuf_addc(out, '\n');
	note_common(s, notes);
	if (notes)
		tp_strbuf_adds(notes,
			       "add your data, tokenizer and optimizer arguments "
			       "to the script's line\n");
	return TP_OK;
}

enum tp_status tp_export_write(const struct tp_export_spec *s,
			       enum tp_export_target t, const char *script,
			       struct tp_strbuf *out, struct tp_strbuf *notes,
			       struct tp_error *err)
{
	enum tp_status st;

	switch (t) {
	case TP_EXPORT_MEGATRON:
		st = write_megatron(s, out, notes, err);
		break;
	case TP_EXPORT_DEEPSPEED:
		st = write_deepspeed(s, out, notes, err);
		break;
	case TP_EXPORT_TORCHRUN:
		st = write_torchrun(s, script, out, notes, err);
		break;
	default:
		return tp_error_set(err, TP_EUSAGE, "unknown export target");
	}
	if (st == TP_OK && (out->failed || (notes && notes->failed)))
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	return st;
}
