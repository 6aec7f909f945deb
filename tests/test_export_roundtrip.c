/*
 * test_export_roundtrip.c - every export target, read back: the exported
 * arguments or config are parsed by the small parsers below (written from
 * the runtimes' documented names, not from export/), the strategy they
 * describe is rebuilt as a plan and simulated under the plan's runtime:
 * the same iteration time as the plan; and the parameters the runtime
 * would build from the exported flags are within 0.5% of the model's.
 *
 * Names and types parsed (unknown names fail the test):
 *  Megatron-LM with Megatron-Core, megatron/training/arguments.py,
 *  core_r0.9 .. core_r0.13 (N = integer, S = string, F = number, - = flag):
 *    --tensor-model-parallel-size N  --pipeline-model-parallel-size N
 *    --num-layers-per-virtual-pipeline-stage N
 *    --decoder-first-pipeline-num-layers N   (core_r0.9)
 *    --decoder-last-pipeline-num-layers N    (core_r0.9)
 *    --pipeline-model-parallel-layout S      (core_r0.13: '|' between
 *        stages, E embedding, t transformer layer, L loss)
 *    --micro-batch-size N  --global-batch-size N  --sequence-parallel -
 *    --recompute-granularity S  --recompute-method S
 *    --recompute-num-layers N  --use-distributed-optimizer -
 *    --overlap-grad-reduce -  --ddp-bucket-size N (elements)
 *    --accumulate-allreduce-grads-in-fp32 -  --bf16 -  --fp16 -
 *    --num-layers N  --hidden-size N  --ffn-hidden-size N
 *    --num-attention-heads N  --kv-channels N  --group-query-attention -
 *    --num-query-groups N  --seq-length N  --max-position-embeddings N
 *    --vocab-size N  --normalization S  --norm-epsilon F
 *    --position-embedding-type S  --rotary-base F  --swiglu -
 *    --openai-gelu -  --disable-bias-linear -  --add-qkv-bias -
 *    --untie-embeddings-and-output-weights -  --qk-layernorm -
 *    --num-experts N  --moe-router-topk N  --moe-ffn-hidden-size N
 *    --moe-token-dispatcher-type S (default allgather)
 *    --moe-expert-capacity-factor F
 *    --moe-shared-expert-intermediate-size N  --moe-layer-freq S
 *    --moe-router-score-function S  --moe-router-enable-expert-bias -
 *    (padded vocabulary: a multiple of --make-vocab-size-divisible-by,
 *    default 128, times tp)
 *  Megatron-DeepSpeed (main branch, 2023-24): the above plus
 *    --checkpoint-activations -  --num-key-value-heads N
 *    --use-rotary-position-embeddings -  --layernorm-epsilon F
 *    --deepspeed -  --deepspeed_config S
 *  DeepSpeed config (deepspeed/runtime/constants.py, zero/config.py,
 *  0.6 .. 0.16): train_batch_size N, train_micro_batch_size_per_gpu N,
 *    gradient_accumulation_steps N, zero_optimization.{stage N,
 *    overlap_comm bool, reduce_bucket_size N}, bf16.enabled, fp16.enabled,
 *    activation_checkpointing.{partition_activations,
 *    contiguous_memory_optimization, cpu_checkpointing}
 *  torchrun (torch.distributed.run, PyTorch 2.x): --nnodes N
 *    --nproc_per_node N --node_rank --master_addr --master_port
 *  TorchTitan job config (torchtitan/config/job_config.py, 2025):
 *    [model] name, flavor; [training] local_batch_size, global_batch_size,
 *    seq_len, mixed_precision_param, mixed_precision_reduce;
 *    [parallelism] data_parallel_replicate_degree,
 *    data_parallel_shard_degree, fsdp_reshard_after_forward,
 *    tensor_parallel_degree, enable_async_tensor_parallel,
 *    pipeline_parallel_degree, pipeline_parallel_schedule,
 *    pipeline_parallel_microbatch_size, pipeline_parallel_split_points,
 *    context_parallel_degree; [activation_checkpoint] mode,
 *    selective_ac_option; torchtitan/models/llama3 TransformerModelArgs
 *    (dim, n_layers, n_heads, n_kv_heads, vocab_size, multiple_of,
 *    ffn_dim_multiplier, norm_eps, rope_theta, max_seq_len) and its FFN
 *    rule (int(2 x 4 dim / 3), times the multiplier, rounded up to
 *    multiple_of).
 */
#include <check.h>
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/runtime.h"
#include "core/strategy.h"
#include "export/export.h"
#include "io/build.h"
#include "io/io.h"
#include "search/planner.h"
#include "search/search.h"
#include "sim/sim.h"
#include "util.h"

/* ---- what the runtime is told ---- */

#define MAX_ARGS   128
#define MAX_CHUNKS 256

/* The strategy and model read back from an export. */
struct readback {
	/* strategy */
	int64_t tp, pp, dp, mbs, gbs, zero, world;
	int64_t V; /* chunks per stage */
	int64_t chunk_layers[MAX_CHUNKS], n_chunks;
	enum tp_recompute recompute;
	bool sp, bf16, fp16;
	double bucket_bytes; /* 0: not said */
	/* ranks: rank -> device (-1: rank = device index) */
	int64_t rank_dev[4096];
	bool have_ranks;
	/* model */
	int64_t layers, hidden, ffn, heads, kv, kvc, seq, maxpos, vocab;
	int64_t experts, topk, moe_ffn, shared_ffn, dense_first;
	char dispatcher[16]; /* --moe-token-dispatcher-type ("": default) */
	bool rms, swiglu, learned, no_bias, qkv_bias, untied, qk_norm;
	int64_t pad_to; /* vocabulary padding unit (Megatron: 128 x tp) */
};

struct flag {
	const char *name;
	int kind; /* 0 flag, 1 integer, 2 string, 3 number */
};

static const struct flag megatron_flags[] = {
    {"--tensor-model-parallel-size", 1},
    {"--pipeline-model-parallel-size", 1},
    {"--num-layers-per-virtual-pipeline-stage", 1},
    {"--decoder-first-pipeline-num-layers", 1},
    {"--decoder-last-pipeline-num-layers", 1},
    {"--pipeline-model-parallel-layout", 2},
    {"--micro-batch-size", 1},
    {"--global-batch-size", 1},
    {"--sequence-parallel", 0},
    {"--recompute-granularity", 2},
    {"--recompute-method", 2},
    {"--recompute-num-layers", 1},
    {"--checkpoint-activations", 0},
    {"--use-distributed-optimizer", 0},
    {"--overlap-grad-reduce", 0},
    {"--ddp-bucket-size", 1},
    {"--accumulate-allreduce-grads-in-fp32", 0},
    {"--bf16", 0},
    {"--fp16", 0},
    {"--num-layers", 1},
    {"--hidden-size", 1},
    {"--ffn-hidden-size", 1},
    {"--num-attention-heads", 1},
    {"--kv-channels", 1},
    {"--group-query-attention", 0},
    {"--num-query-groups", 1},
    {"--num-key-value-heads", 1},
    {"--seq-length", 1},
    {"--max-position-embeddings", 1},
    {"--vocab-size", 1},
    {"--normalization", 2},
    {"--norm-epsilon", 3},
    {"--layernorm-epsilon", 3},
    {"--position-embedding-type", 2},
    {"--use-rotary-position-embeddings", 0},
    {"--rotary-base", 3},
    {"--swiglu", 0},
    {"--openai-gelu", 0},
    {"--disable-bias-linear", 0},
    {"--add-qkv-bias", 0},
    {"--untie-embeddings-and-output-weights", 0},
    {"--qk-layernorm", 0},
    {"--num-experts", 1},
    {"--moe-router-topk", 1},
    {"--moe-token-dispatcher-type", 2},
    {"--moe-expert-capacity-factor", 3},
    {"--moe-ffn-hidden-size", 1},
    {"--moe-shared-expert-intermediate-size", 1},
    {"--moe-layer-freq", 2},
    {"--moe-router-score-function", 2},
    {"--moe-router-enable-expert-bias", 0},
    {"--deepspeed", 0},
    {"--deepspeed_config", 2},
    {NULL, 0}};

static void rb_init(struct readback *rb)
{
	memset(rb, 0, sizeof(*rb));
	rb->tp = rb->pp = rb->V = 1;
	rb->learned = true; /* Megatron's default position embedding */
	for (size_t i = 0; i < sizeof(rb->rank_dev) / sizeof(rb->rank_dev[0]);
	     i++)
		rb->rank_dev[i] = -1;
}

/* "t" and "E"/"L" of a --pipeline-model-parallel-layout: layers per
 * stage (chunk). */
static void parse_layout(struct readback *rb, const char *s)
{
	rb->n_chunks = 1;
	rb->chunk_layers[0] = 0;
	for (; *s; s++) {
		if (*s == '|')
			rb->chunk_layers[rb->n_chunks++] = 0;
		else if (*s == 't')
			rb->chunk_layers[rb->n_chunks - 1]++;
		else
			ck_assert_msg(*s == 'E' || *s == 'L',
				      "layout character '%c'", *s);
	}
}

/* Megatron arguments from whitespace-separated words. */
static void parse_megatron(struct readback *rb, char *text)
{
	char *save = NULL, *w = strtok_r(text, " \t\n\\", &save);
	int64_t first = -1, last = -1, vpp = 0;

	while (w) {
		const struct flag *f = megatron_flags;
		const char *v = NULL;
		while (f->name && strcmp(f->name, w) != 0)
			f++;
		ck_assert_msg(f->name != NULL, "unknown Megatron argument %s",
			      w);
		if (f->kind) {
			v = strtok_r(NULL, " \t\n\\", &save);
			ck_assert_msg(v != NULL, "%s without a value", w);
		}
#define IS(n) (strcmp(w, n) == 0)
		if (IS("--tensor-model-parallel-size"))
			rb->tp = atoll(v);
		else if (IS("--pipeline-model-parallel-size"))
			rb->pp = atoll(v);
		else if (IS("--num-layers-per-virtual-pipeline-stage"))
			vpp = atoll(v);
		else if (IS("--decoder-first-pipeline-num-layers"))
			first = atoll(v);
		else if (IS("--decoder-last-pipeline-num-layers"))
			last = atoll(v);
		else if (IS("--pipeline-model-parallel-layout"))
			parse_layout(rb, v);
		else if (IS("--micro-batch-size"))
			rb->mbs = atoll(v);
		else if (IS("--global-batch-size"))
			rb->gbs = atoll(v);
		else if (IS("--sequence-parallel"))
			rb->sp = true;
		else if (IS("--recompute-granularity"))
			rb->recompute = strcmp(v, "full") == 0
					    ? TP_RECOMPUTE_FULL
					    : TP_RECOMPUTE_SELECTIVE;
		else if (IS("--checkpoint-activations"))
			rb->recompute = TP_RECOMPUTE_FULL;
		else if (IS("--use-distributed-optimizer"))
			rb->zero = 1;
		else if (IS("--ddp-bucket-size"))
			rb->bucket_bytes = 4.0 * (double)atoll(v);
		else if (IS("--bf16"))
			rb->bf16 = true;
		else if (IS("--fp16"))
			rb->fp16 = true;
		else if (IS("--num-layers"))
			rb->layers = atoll(v);
		else if (IS("--hidden-size"))
			rb->hidden = atoll(v);
		else if (IS("--ffn-hidden-size"))
			rb->ffn = atoll(v);
		else if (IS("--num-attention-heads"))
			rb->heads = atoll(v);
		else if (IS("--kv-channels"))
			rb->kvc = atoll(v);
		else if (IS("--num-query-groups") ||
			 IS("--num-key-value-heads"))
			rb->kv = atoll(v);
		else if (IS("--seq-length"))
			rb->seq = atoll(v);
		else if (IS("--max-position-embeddings"))
			rb->maxpos = atoll(v);
		else if (IS("--vocab-size"))
			rb->vocab = atoll(v);
		else if (IS("--normalization"))
			rb->rms = strcasecmp(v, "rmsnorm") == 0;
		else if (IS("--position-embedding-type"))
			rb->learned = strcmp(v, "learned_absolute") == 0;
		else if (IS("--use-rotary-position-embeddings"))
			rb->learned = false;
		else if (IS("--swiglu"))
			rb->swiglu = true;
		else if (IS("--disable-bias-linear"))
			rb->no_bias = true;
		else if (IS("--add-qkv-bias"))
			rb->qkv_bias = true;
		else if (IS("--untie-embeddings-and-output-weights"))
			rb->untied = true;
		else if (IS("--qk-layernorm"))
			rb->qk_norm = true;
		else if (IS("--num-experts"))
			rb->experts = atoll(v);
		else if (IS("--moe-router-topk"))
			rb->topk = atoll(v);
		else if (IS("--moe-token-dispatcher-type"))
			snprintf(rb->dispatcher, sizeof(rb->dispatcher), "%s",
				 v);
		else if (IS("--moe-ffn-hidden-size"))
			rb->moe_ffn = atoll(v);
		else if (IS("--moe-shared-expert-intermediate-size"))
			rb->shared_ffn = atoll(v);
		else if (IS("--moe-layer-freq"))
			ck_assert(sscanf(v, "([0]*%lld",
					 (long long *)&rb->dense_first) == 1);
#undef IS
		w = strtok_r(NULL, " \t\n\\", &save);
	}
	rb->pad_to = 128 * rb->tp;
	if (rb->n_chunks == 0) {
		/* even, first/last or interleaved by --num-layers-per-
		   virtual-pipeline-stage */
		int64_t per = vpp ? vpp : rb->layers / rb->pp;
		rb->V = vpp ? rb->layers / (vpp * rb->pp) : 1;
		rb->n_chunks = rb->pp * rb->V;
		for (int64_t k = 0; k < rb->n_chunks; k++)
			rb->chunk_layers[k] = per;
		if (first >= 0) {
			int64_t mid = rb->pp > 2 ? (rb->layers - first - last) /
						       (rb->pp - 2)
						 : 0;
			for (int64_t k = 0; k < rb->n_chunks; k++)
				rb->chunk_layers[k] = mid;
			rb->chunk_layers[0] = first;
			rb->chunk_layers[rb->n_chunks - 1] = last;
		}
	} else {
		rb->V = rb->n_chunks / rb->pp;
	}
}

/* "NODE_RANK=k: node NAME, ranks a..b, CUDA_VISIBLE_DEVICES=x,y" (the
 * notes) or "  k) export CUDA_VISIBLE_DEVICES=x,y; NPROC=n ;;  # NAME"
 * (torchrun's script): which device each rank is. */
static void parse_ranks(struct readback *rb, const char *text,
			const struct tp_cluster *c)
{
	const char *p = text;
	int64_t rank = 0;

	while ((p = strstr(p, "CUDA_VISIBLE_DEVICES=")) != NULL) {
		const char *line = p, *name;
		char nm[64];
		uint32_t node = TP_NONE;
		while (line > text && line[-1] != '\n')
			line--;
		name = strstr(line, "node ");
		if (strstr(line, "NODE_RANK=") && name &&
		    sscanf(name, "node %63[^,]", nm) == 1) {
			/* notes: ranks in the line */
		} else if ((name = strstr(p, "# ")) != NULL &&
			   sscanf(name, "# %63s", nm) == 1) {
			/* torchrun's case */
		} else {
			p++;
			continue;
		}
		for (size_t n = 0; n < c->nodes.n; n++)
			if (strcmp(c->nodes.v[n].name, nm) == 0)
				node = (uint32_t)n;
		ck_assert_msg(node != TP_NONE, "node %s", nm);
		p += strlen("CUDA_VISIBLE_DEVICES=");
		for (;;) {
			char *end;
			long local = strtol(p, &end, 10);
			if (end == p)
				break;
			rb->rank_dev[rank++] =
			    c->nodes.v[node].first_device + local;
			p = end;
			if (*p != ',')
				break;
			p++;
		}
		rb->have_ranks = true;
	}
}

/* ---- the parameters the runtime builds ---- */

static double megatron_parameters(const struct readback *rb)
{
	double h = (double)rb->hidden, L = (double)rb->layers;
	double kvc = rb->kvc ? (double)rb->kvc : h / (double)rb->heads;
	double kv = rb->kv ? (double)rb->kv : (double)rb->heads;
	double nrm = rb->rms ? h : 2 * h, bias = rb->no_bias ? 0 : 1;
	double qkv_b = (rb->no_bias && !rb->qkv_bias) ? 0 : 1;
	double V =
	    ceil((double)rb->vocab / (double)rb->pad_to) * (double)rb->pad_to;
	double gate = rb->swiglu ? 2 : 1;
	double attn = h * ((double)rb->heads * kvc + 2 * kv * kvc) +
		      qkv_b * ((double)rb->heads + 2 * kv) * kvc +
		      (double)rb->heads * kvc * h + bias * h;
	double mlp_of_ffn, dense, moe, total;

	if (rb->qk_norm)
		attn += 2 * (rb->rms ? kvc : 2 * kvc);
#define MLP(f) (h * (f)*gate + bias * (f)*gate + (f)*h + bias * h)
	mlp_of_ffn = (double)rb->ffn;
	dense = MLP(mlp_of_ffn);
	moe = dense;
	if (rb->experts) {
		double ef = rb->moe_ffn ? (double)rb->moe_ffn : mlp_of_ffn;
		moe = h * (double)rb->experts + (double)rb->experts * MLP(ef);
		if (rb->shared_ffn)
			moe += MLP((double)rb->shared_ffn);
	}
#undef MLP
	total = L * (attn + 2 * nrm) + (double)rb->dense_first * dense +
		(L - (double)rb->dense_first) * moe + nrm + V * h;
	if (rb->learned)
		total += (double)rb->maxpos * h;
	if (rb->untied)
		total += V * h;
	return total;
}

/* ---- rebuilding the plan ---- */

/* The plan the read-back strategy describes on c for m. */
static void rebuild(const struct readback *rb, const struct tp_model *m,
		    const struct tp_cluster *c, const char *runtime,
		    struct tp_plan *p)
{
	uint32_t *ops = malloc(m->ops.n * sizeof(uint32_t));
	int64_t per_stage = rb->tp * rb->dp, end = 0, chunk = 0;
	uint32_t *chunk_of = malloc(m->ops.n * sizeof(uint32_t));
	int64_t nops[MAX_CHUNKS] = {0};
	struct tp_error err;

	ck_assert(ops && chunk_of);
	ck_assert_int_eq(rb->n_chunks, rb->pp * rb->V);
	/* ops in model order; a chunk ends after its last layer */
	end = rb->chunk_layers[0];
	for (size_t k = 0; k < m->ops.n; k++) {
		uint32_t o = m->topo[k];
		int32_t l = m->ops.v[o].layer;
		while (l >= 0 && l >= end && chunk + 1 < rb->n_chunks)
			end += rb->chunk_layers[++chunk];
		chunk_of[o] = (uint32_t)chunk;
		nops[chunk]++;
	}
	tp_plan_init(p);
	p->global_batch = rb->gbs;
	p->micro_batches = (uint32_t)(rb->gbs / (rb->mbs * rb->dp));
	p->schedule = rb->V > 1 ? TP_SCHEDULE_INTERLEAVED : TP_SCHEDULE_1F1B;
	p->virtual_stages = (uint32_t)rb->V;
	p->zero = (uint32_t)rb->zero;
	p->grad_bucket_bytes = rb->bucket_bytes;
	snprintf(p->runtime, sizeof(p->runtime), "%s", runtime);
	for (int64_t ch = 0; ch < rb->n_chunks; ch++) {
		uint32_t devs[4096], n = 0, g;
		int64_t stage = ch % rb->pp;
		for (size_t k = 0; k < m->ops.n; k++)
			if (chunk_of[m->topo[k]] == (uint32_t)ch)
				ops[n++] = m->topo[k];
		ck_assert_int_gt(n, 0);
		for (int64_t i = 0; i < per_stage; i++) {
			int64_t r = stage * per_stage + i;
			devs[i] =
			    (uint32_t)(rb->rank_dev[r] >= 0 ? rb->rank_dev[r]
							    : r);
		}
		ck_assert_int_eq(tp_plan_add_group_degrees(
				     p, ops, n, devs, (uint32_t)per_stage,
				     &(struct tp_plan_degrees){
					 (uint32_t)rb->dp, 1, (uint32_t)rb->tp},
				     NULL, &err),
				 TP_OK);
		g = (uint32_t)p->groups.n - 1;
		p->groups.v[g].recompute = rb->recompute;
		p->groups.v[g].sp = rb->sp && rb->tp > 1;
		p->groups.v[g].sync = tp_runtime_sync(
		    c, devs, (uint32_t)per_stage, (uint32_t)rb->tp);
	}
	ck_assert_msg(tp_plan_validate(p, m, c, &err) == TP_OK, "%s %s",
		      err.path, err.msg);
	free(ops);
	free(chunk_of);
}

/* The iteration time of p under its runtime. */
static double simulate(const struct tp_plan *p, const struct tp_model *m,
		       const struct tp_cluster *c)
{
	struct tp_sim_options so;
	struct tp_runtime rt;
	struct tp_error err;
	struct tp_sim *sim;
	struct tp_sim_scratch *scr;
	struct tp_report r;
	double t;

	ck_assert_int_eq(tp_runtime_find(p->runtime, &rt, &err), TP_OK);
	tp_sim_options_default(&so);
	tp_sim_params_runtime(&so.params, &rt);
	sim = tp_sim_new(m, c, &so, &err);
	ck_assert_ptr_nonnull(sim);
	scr = tp_sim_scratch_new(sim);
	tp_report_init(&r);
	ck_assert_int_eq(tp_sim_run(sim, p, scr, &r, NULL, &err), TP_OK);
	t = r.iteration_time_s;
	tp_report_release(&r);
	tp_sim_scratch_free(scr);
	tp_sim_free(sim);
	return t;
}

/* ---- the cases ---- */

static void load_hf(const char *file, int64_t seq, int64_t batch,
		    struct tp_model *m)
{
	struct tp_error err;
	char rel[128];

	snprintf(rel, sizeof(rel), "data/hf/%s", file);
	tp_model_init(m);
	ck_assert_msg(tp_build_hf(tp_test_path(rel), seq, batch, -1, m, &err) ==
			  TP_OK,
		      "%s", err.msg);
}

static void gpt(struct tp_model *m, int64_t layers)
{
	struct tp_gpt_dims d;
	struct tp_error err;

	memset(&d, 0, sizeof(d));
	d.hidden = 1024;
	d.layers = layers;
	d.heads = 16;
	d.seq = 1024;
	d.vocab = 50257;
	d.batch = 64;
	d.dtype = TP_DTYPE_BF16;
	d.name = "gpt";
	tp_model_init(m);
	ck_assert_int_eq(tp_build_gpt(&d, m, &err), TP_OK);
}

static void topo(const char *spec, const char *spec2, struct tp_cluster *c)
{
	const char *specs[] = {spec, spec2};
	struct tp_error err;

	setenv("TAGPLAN_DATA", tp_data_file(""), 1);
	tp_cluster_init(c);
	ck_assert_msg(tp_build_topology(specs, spec2 ? 2 : 1, "ib-hdr", 1, c,
					&err) == TP_OK,
		      "%s", err.msg);
}

/* `tagplan plan --runtime rt` in-process; baseline >= 0 answers it. */
static void plan(const struct tp_model *m, const struct tp_cluster *c,
		 const char *rt, int baseline, struct tp_plan *out,
		 double *time_s)
{
	struct tp_planner_options po;
	struct tp_planner *pl;
	struct tp_search_options o;
	struct tp_search_result r;
	struct tp_error err;

	tp_planner_options_default(&po);
	ck_assert_int_eq(tp_runtime_find(rt, &po.runtime, &err), TP_OK);
	pl = tp_planner_new(m, c, &po, &err);
	ck_assert_ptr_nonnull(pl);
	tp_search_options_default(&o);
	o.threads = 1;
	o.playouts = 150;
	o.time_limit_s = 0;
	o.baseline = baseline;
	tp_search_result_init(&r);
	ck_assert_int_eq(tp_planner_run(pl, &o, &r, &err), TP_OK);
	tp_plan_init(out);
	ck_assert_int_eq(tp_plan_copy(out, &r.plan, &err), TP_OK);
	*time_s = r.report.iteration_time_s;
	tp_search_result_release(&r);
	tp_planner_free(pl);
}

/* Export p to t: the output and the notes. */
static void export_plan(const struct tp_plan *p, const struct tp_model *m,
			const struct tp_cluster *c, enum tp_export_target t,
			struct tp_strbuf *out, struct tp_strbuf *notes)
{
	struct tp_runtime rt;
	struct tp_export_spec spec;
	struct tp_error err;

	ck_assert_int_eq(tp_runtime_find(p->runtime, &rt, &err), TP_OK);
	tp_strbuf_init(out);
	tp_strbuf_init(notes);
	ck_assert_msg(tp_export_analyze(p, m, c, &rt, &spec, &err) == TP_OK,
		      "%s", err.msg);
	ck_assert_msg(tp_export_write(&spec, t, NULL, out, notes, &err) ==
			  TP_OK,
		      "%s", err.msg);
	tp_export_spec_release(&spec);
}

/* Rebuilt and simulated: the plan's time; the runtime's parameters: the
 * model's within 0.5%. */
static void check_back(struct readback *rb, const struct tp_plan *p,
		       double time_s, const struct tp_model *m,
		       const struct tp_cluster *c, double params)
{
	struct tp_plan q;
	double t, want = tp_model_parameters(m);

	if (!rb->dp)
		rb->dp = rb->gbs && rb->world ? rb->world / (rb->tp * rb->pp)
					      : (int64_t)p->groups.v[0].dp;
	rebuild(rb, m, c, p->runtime, &q);
	t = simulate(&q, m, c);
	ck_assert_msg(fabs(t - time_s) <= 1e-9 * time_s,
		      "rebuilt %.9g s, planned %.9g s", t, time_s);
	ck_assert_msg(fabs(params - want) <= 0.005 * want,
		      "%s builds %.6g parameters, the model has %.6g",
		      p->runtime, params, want);
	tp_plan_release(&q);
}

static void megatron_roundtrip(const struct tp_model *m,
			       const struct tp_cluster *c, const char *rt,
			       int baseline, enum tp_export_target t)
{
	struct tp_plan p;
	struct tp_strbuf out, notes;
	struct readback rb;
	double time_s;
	char *text, *args;

	plan(m, c, rt, baseline, &p, &time_s);
	export_plan(&p, m, c, t, &out, &notes);
	rb_init(&rb);
	text = strdup(tp_strbuf_cstr(&out));
	args = text;
	if (t == TP_EXPORT_TORCHRUN) {
		/* torchrun's own options, then the script's */
		char *at = strstr(text, "pretrain_gpt.py");
		ck_assert_ptr_nonnull(strstr(text, "torchrun"));
		ck_assert_ptr_nonnull(at);
		parse_ranks(&rb, text, c);
		args = at + strlen("pretrain_gpt.py");
	} else {
		parse_ranks(&rb, tp_strbuf_cstr(&notes), c);
	}
	parse_megatron(&rb, args);
	/* the simulator prices the alltoall dispatcher (src/sim/README
	   section 3); Megatron-Core's default is allgather */
	if (rb.experts)
		ck_assert_msg(!strcmp(rb.dispatcher, "alltoall"),
			      "MoE without --moe-token-dispatcher-type "
			      "alltoall (\"%s\")",
			      rb.dispatcher);
	rb.dp = (int64_t)p.groups.v[0].dp;
	{
		int64_t used = 0;
		for (size_t g = 0; g < p.groups.n; g++)
			used = used > p.groups.v[g].n_devices
				   ? used
				   : p.groups.v[g].n_devices;
		rb.dp = used / rb.tp;
	}
	check_back(&rb, &p, time_s, m, c, megatron_parameters(&rb));
	free(text);
	tp_strbuf_release(&out);
	tp_strbuf_release(&notes);
	tp_plan_release(&p);
}

START_TEST(test_roundtrip_megatron_llama)
{
	struct tp_model m;
	struct tp_cluster c;

	load_hf("llama-2-7b.json", 2048, 64, &m);
	topo("dgx-a100:2", NULL, &c);
	megatron_roundtrip(&m, &c, "megatron-core", -1, TP_EXPORT_MEGATRON);
	megatron_roundtrip(&m, &c, "megatron-core", -1, TP_EXPORT_TORCHRUN);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* Mixtral (experts, top-2) and Qwen2 (GQA, QKV biases, untied), as the
 * megatron baseline plans them. */
START_TEST(test_roundtrip_megatron_moe_gqa)
{
	struct tp_model m;
	struct tp_cluster c;

	topo("dgx-a100:4", NULL, &c);
	load_hf("mixtral-8x7b.json", 1024, 64, &m);
	megatron_roundtrip(&m, &c, "megatron-core", TP_BASELINE_MEGATRON,
			   TP_EXPORT_MEGATRON);
	tp_model_release(&m);
	load_hf("qwen2-7b.json", 1024, 64, &m);
	megatron_roundtrip(&m, &c, "megatron-core", TP_BASELINE_MEGATRON,
			   TP_EXPORT_MEGATRON);
	tp_model_release(&m);
	tp_cluster_release(&c);
}
END_TEST

/* Uneven layouts, written three ways: first/last stage layers, the
 * per-chunk layout string (interleaved), and back. */
START_TEST(test_roundtrip_megatron_layouts)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_strbuf out, notes;
	struct readback rb;
	struct tp_strategy st;
	struct tp_error err;
	const char *strategies[] = {
	    "tp=2,pp=2,dp=4,mb=1,zero=1",
	    "tp=1,pp=2,dp=8,mb=1,schedule=interleaved:2"};

	gpt(&m, 12);
	topo("dgx-a100:2", NULL, &c);
	for (int k = 0; k < 2; k++) {
		char *text;
		double t0;
		uint32_t moved = 0;
		ck_assert_int_eq(tp_strategy_parse(strategies[k], &st, &err),
				 TP_OK);
		tp_plan_init(&p);
		ck_assert_int_eq(tp_strategy_to_plan(&st, &m, &c, &p, &err),
				 TP_OK);
		snprintf(p.runtime, sizeof(p.runtime), "megatron-core");
		p.grad_bucket_bytes = 160e6;
		for (size_t g = 0; g < p.groups.n; g++)
			p.groups.v[g].sync = tp_runtime_sync(
			    &c, tp_plan_group_devs(&p, (uint32_t)g),
			    p.groups.v[g].n_devices, p.groups.v[g].tp);
		/* move the first chunk's last layer to the second chunk:
		   2 stages of 5 + 7 (first/last), or 4 chunks of 2 + 4 +
		   3 + 3 (interleaved: the layout string) */
		{
			uint32_t *o0 = tp_plan_group_ops(&p, 0);
			int32_t last = -1;
			for (uint32_t i = 0; i < p.groups.v[0].n_ops; i++)
				if (m.ops.v[o0[i]].layer > last)
					last = m.ops.v[o0[i]].layer;
			/* rebuild the two groups' op lists */
			struct tp_plan q;
			tp_plan_init(&q);
			q.global_batch = p.global_batch;
			q.micro_batches = p.micro_batches;
			q.schedule = p.schedule;
			q.virtual_stages = p.virtual_stages;
			q.zero = p.zero;
			q.grad_bucket_bytes = p.grad_bucket_bytes;
			snprintf(q.runtime, sizeof(q.runtime), "%s", p.runtime);
			for (uint32_t g = 0; g < p.groups.n; g++) {
				uint32_t ops[4096], n = 0, idx;
				const uint32_t *og = tp_plan_group_ops(&p, g);
				if (g == 1) {
					const uint32_t *o =
					    tp_plan_group_ops(&p, 0);
					for (uint32_t i = 0;
					     i < p.groups.v[0].n_ops; i++)
						if (m.ops.v[o[i]].layer == last)
							ops[n++] = o[i],
							moved++;
				}
				for (uint32_t i = 0; i < p.groups.v[g].n_ops;
				     i++)
					if (g != 0 ||
					    m.ops.v[og[i]].layer != last)
						ops[n++] = og[i];
				ck_assert_int_eq(tp_plan_add_group_degrees(
						     &q, ops, n,
						     tp_plan_group_devs(&p, g),
						     p.groups.v[g].n_devices,
						     &(struct tp_plan_degrees){
							 p.groups.v[g].dp, 1,
							 p.groups.v[g].tp},
						     NULL, &err),
						 TP_OK);
				idx = (uint32_t)q.groups.n - 1;
				q.groups.v[idx].sync = p.groups.v[g].sync;
				q.groups.v[idx].recompute =
				    p.groups.v[g].recompute;
			}
			tp_plan_release(&p);
			p = q;
		}
		ck_assert_uint_gt(moved, 0);
		ck_assert_int_eq(tp_plan_validate(&p, &m, &c, &err), TP_OK);
		t0 = simulate(&p, &m, &c);
		export_plan(&p, &m, &c, TP_EXPORT_MEGATRON, &out, &notes);
		ck_assert_ptr_nonnull(strstr(
		    tp_strbuf_cstr(&out), k == 0 ? "--decoder-first-pipeline-"
						   "num-layers 5\n"
						 : "--pipeline-model-"
						   "parallel-layout E"));
		rb_init(&rb);
		text = strdup(tp_strbuf_cstr(&out));
		parse_megatron(&rb, text);
		rb.dp = (int64_t)p.groups.v[0].dp;
		check_back(&rb, &p, t0, &m, &c, megatron_parameters(&rb));
		free(text);
		tp_strbuf_release(&out);
		tp_strbuf_release(&notes);
		tp_plan_release(&p);
	}
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* DeepSpeed: the config's keys, the launch line's Megatron-DeepSpeed
 * arguments. */
START_TEST(test_roundtrip_deepspeed)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_strbuf out, notes;
	struct readback rb;
	double time_s;
	cJSON *j, *z;
	char *line, *end;

	gpt(&m, 12);
	topo("dgx-a100:2", NULL, &c);
	plan(&m, &c, "deepspeed", -1, &p, &time_s);
	export_plan(&p, &m, &c, TP_EXPORT_DEEPSPEED, &out, &notes);
	rb_init(&rb);
	j = cJSON_Parse(tp_strbuf_cstr(&out));
	ck_assert_ptr_nonnull(j);
	for (cJSON *it = j->child; it; it = it->next)
		ck_assert_msg(
		    strcmp(it->string, "train_batch_size") == 0 ||
			strcmp(it->string, "train_micro_batch_size_per_gpu") ==
			    0 ||
			strcmp(it->string, "gradient_accumulation_steps") ==
			    0 ||
			strcmp(it->string, "zero_optimization") == 0 ||
			strcmp(it->string, "bf16") == 0 ||
			strcmp(it->string, "fp16") == 0 ||
			strcmp(it->string, "activation_checkpointing") == 0,
		    "a key the engine does not read: %s", it->string);
	rb.gbs =
	    (int64_t)cJSON_GetObjectItem(j, "train_batch_size")->valuedouble;
	rb.mbs =
	    (int64_t)cJSON_GetObjectItem(j, "train_micro_batch_size_per_gpu")
		->valuedouble;
	z = cJSON_GetObjectItem(j, "zero_optimization");
	rb.zero = (int64_t)cJSON_GetObjectItem(z, "stage")->valuedouble;
	/* bf16 reduce buckets: 2 bytes per element */
	rb.bucket_bytes =
	    2 * cJSON_GetObjectItem(z, "reduce_bucket_size")->valuedouble;
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(z, "overlap_comm")));
	ck_assert_int_eq(
	    (int64_t)cJSON_GetObjectItem(j, "gradient_accumulation_steps")
		->valuedouble,
	    p.micro_batches);
	if (cJSON_GetObjectItem(j, "activation_checkpointing"))
		rb.recompute = TP_RECOMPUTE_FULL;
	cJSON_Delete(j);
	line = strstr(notes.buf, "launch: deepspeed pretrain_gpt.py ");
	ck_assert_ptr_nonnull(line);
	line = strdup(line + strlen("launch: deepspeed pretrain_gpt.py "));
	end = strchr(line, '\n');
	*end = '\0';
	{
		int64_t gbs = rb.gbs, mbs = rb.mbs, zero = rb.zero;
		enum tp_recompute rc = rb.recompute;
		double b = rb.bucket_bytes;
		parse_megatron(&rb, line);
		ck_assert_int_eq(rb.gbs, gbs);
		ck_assert_int_eq(rb.mbs, mbs);
		ck_assert_int_eq(rb.recompute, rc);
		rb.zero = zero;
		rb.bucket_bytes = b;
	}
	parse_ranks(&rb, tp_strbuf_cstr(&notes), &c);
	rb.dp = (int64_t)p.groups.v[0].dp;
	check_back(&rb, &p, time_s, &m, &c, megatron_parameters(&rb));
	free(line);
	tp_strbuf_release(&out);
	tp_strbuf_release(&notes);
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

/* ---- TorchTitan: a small TOML reader ---- */

/* The value of key in [section] (a copy without quotes), or NULL. */
static char *toml_get(const char *text, const char *section, const char *key)
{
	char head[64];
	const char *s, *next, *p;
	size_t kl = strlen(key);

	snprintf(head, sizeof(head), "\n[%s]\n", section);
	s = strstr(text, head);
	if (!s)
		return NULL;
	s += strlen(head);
	next = strstr(s, "\n[");
	for (p = s; *p && (!next || p < next);) {
		const char *eol = strchr(p, '\n');
		size_t n = eol ? (size_t)(eol - p) : strlen(p);
		if (n > kl + 3 && strncmp(p, key, kl) == 0 &&
		    strncmp(p + kl, " = ", 3) == 0) {
			const char *v = p + kl + 3;
			size_t vn = n - kl - 3;
			char *out;
			if (vn >= 2 && v[0] == '"' && v[vn - 1] == '"') {
				v++;
				vn -= 2;
			}
			out = malloc(vn + 1);
			memcpy(out, v, vn);
			out[vn] = '\0';
			return out;
		}
		p += n + (eol ? 1 : 0);
	}
	return NULL;
}

static int64_t toml_int(const char *text, const char *section, const char *key)
{
	char *v = toml_get(text, section, key);
	int64_t x;

	ck_assert_msg(v != NULL, "[%s] %s missing", section, key);
	x = atoll(v);
	free(v);
	return x;
}

/* TorchTitan's llama3 parameters from the registered model arguments. */
static double titan_parameters(const char *text, struct readback *rb)
{
	const char *a = strstr(text, "TransformerModelArgs(");
	long long dim, nl, nh, nkv, voc, mo;
	char mult[64];
	double hid, d;

	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(
	    sscanf(a,
		   "TransformerModelArgs(dim=%lld, n_layers=%lld, "
		   "n_heads=%lld, n_kv_heads=%lld, vocab_size=%lld, "
		   "multiple_of=%lld, ffn_dim_multiplier=%63[^,]",
		   &dim, &nl, &nh, &nkv, &voc, &mo, mult),
	    7);
	rb->layers = nl;
	d = (double)dim;
	hid = floor(2.0 * (4.0 * d) / 3.0);
	if (strcmp(mult, "None") != 0)
		hid = floor(atof(mult) * hid);
	hid = (double)mo * ceil(hid / (double)mo);
	/* per layer: wq, wk, wv, wo; w1, w2, w3; two RMSNorms */
	return (double)nl * (d * d + 2 * d * ((double)nkv * d / (double)nh) +
			     d * d + 3 * d * hid + 2 * d) +
	       2 * (double)voc * d + d;
}

START_TEST(test_roundtrip_torchtitan)
{
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_strbuf out, notes;
	struct readback rb;
	double time_s, params;
	const char *t;
	char *v;
	int64_t shard, repl, local;

	load_hf("llama-2-7b.json", 2048, 64, &m);
	topo("dgx-a100:2", NULL, &c);
	plan(&m, &c, "fsdp2", -1, &p, &time_s);
	export_plan(&p, &m, &c, TP_EXPORT_TORCHTITAN, &out, &notes);
	t = tp_strbuf_cstr(&out);
	rb_init(&rb);
	params = titan_parameters(t, &rb);
	rb.tp = toml_int(t, "parallelism", "tensor_parallel_degree");
	rb.pp = toml_int(t, "parallelism", "pipeline_parallel_degree");
	shard = toml_int(t, "parallelism", "data_parallel_shard_degree");
	repl = toml_int(t, "parallelism", "data_parallel_replicate_degree");
	ck_assert_int_eq(toml_int(t, "parallelism", "context_parallel_degree"),
			 1);
	rb.dp = shard * repl;
	v = toml_get(t, "parallelism", "fsdp_reshard_after_forward");
	rb.zero = shard > 1 ? (strcmp(v, "never") == 0 ? 2 : 3) : 0;
	free(v);
	local = toml_int(t, "training", "local_batch_size");
	rb.gbs = toml_int(t, "training", "global_batch_size");
	rb.mbs = rb.pp > 1 ? toml_int(t, "parallelism",
				      "pipeline_parallel_microbatch_size")
			   : local;
	v = toml_get(t, "activation_checkpoint", "mode");
	rb.recompute = (enum tp_recompute)tp_recompute_parse(v);
	free(v);
	rb.sp = rb.tp > 1; /* TorchTitan's tensor parallelism always is */
	rb.n_chunks = 0;
	if (rb.pp > 1) {
		char *sp = toml_get(t, "parallelism",
				    "pipeline_parallel_split_points");
		int64_t prev = 0, at;
		const char *q = sp;
		ck_assert_ptr_nonnull(sp);
		while ((q = strstr(q, "\"layers.")) != NULL) {
			at = atoll(q + 8);
			rb.chunk_layers[rb.n_chunks++] = at - prev;
			prev = at;
			q += 8;
		}
		rb.chunk_layers[rb.n_chunks++] = rb.layers - prev;
		free(sp);
		rb.V = rb.n_chunks / rb.pp;
	} else {
		rb.n_chunks = 1;
		rb.chunk_layers[0] = rb.layers;
	}
	parse_ranks(&rb, tp_strbuf_cstr(&notes), &c);
	/* what the notes say TorchTitan does differently is what it runs:
	   ZeRO-1 as FSDP without resharding, sp with tp */
	if (p.zero == 1)
		p.zero = 2;
	for (size_t g = 0; g < p.groups.n; g++)
		p.groups.v[g].sp = p.groups.v[g].tp > 1;
	time_s = simulate(&p, &m, &c);
	check_back(&rb, &p, time_s, &m, &c, params);
	tp_strbuf_release(&out);
	tp_strbuf_release(&notes);
	tp_plan_release(&p);
	tp_cluster_release(&c);
	tp_model_release(&m);
}
END_TEST

Suite *suite_export_roundtrip(void)
{
	Suite *s = suite_create("export-roundtrip");
	TCase *tc = tcase_create("targets");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_roundtrip_megatron_llama);
	tcase_add_test(tc, test_roundtrip_megatron_moe_gqa);
	tcase_add_test(tc, test_roundtrip_megatron_layouts);
	tcase_add_test(tc, test_roundtrip_deepspeed);
	tcase_add_test(tc, test_roundtrip_torchtitan);
	suite_add_tcase(s, tc);
	return s;
}
