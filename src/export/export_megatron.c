/*
 * export_megatron.c - Megatron-LM arguments (and torchrun running them,
 * or a DDP script), built from the plan's strategy, the model's
 * architecture and the runtime's behaviour.
 *
 * Argument names, from the runtimes' argument parsers:
 *  Megatron-Core: megatron/training/arguments.py, core_r0.9 .. core_r0.13
 *    parallelism  --tensor-model-parallel-size N, --pipeline-model-
 *                 parallel-size N, --context-parallel-size N,
 *                 --expert-model-parallel-size N (the
 *                 expert tensor-parallel size defaults to the tensor
 *                 one), --sequence-parallel, --num-layers-per-
 *                 virtual-pipeline-stage N, --decoder-first-pipeline-num-
 *                 layers N and --decoder-last-pipeline-num-layers N
 *                 (core_r0.9), --pipeline-model-parallel-layout STR
 *                 (core_r0.13: stages split by '|', E embedding, t a
 *                 transformer layer, L the loss)
 *    batch        --micro-batch-size N, --global-batch-size N
 *    memory       --recompute-granularity full|selective, --recompute-
 *                 method uniform, --recompute-num-layers N, --use-
 *                 distributed-optimizer
 *    data parallel --overlap-grad-reduce, --ddp-bucket-size N (elements),
 *                 --accumulate-allreduce-grads-in-fp32
 *    precision    --bf16, --fp16
 *    model        --num-layers, --hidden-size, --ffn-hidden-size, --num-
 *                 attention-heads, --kv-channels, --group-query-attention,
 *                 --num-query-groups, --seq-length, --max-position-
 *                 embeddings, --position-embedding-type learned_absolute|
 *                 rope|none, --rotary-base, --normalization LayerNorm|
 *                 RMSNorm, --norm-epsilon, --swiglu, --openai-gelu,
 *                 --disable-bias-linear, --add-qkv-bias, --untie-
 *                 embeddings-and-output-weights, --qk-layernorm, --vocab-
 *                 size, --num-experts, --moe-router-topk, --moe-token-
 *                 dispatcher-type allgather|alltoall (default allgather),
 *                 --moe-expert-capacity-factor X, --moe-ffn-hidden-
 *                 size, --moe-shared-expert-intermediate-size, --moe-layer-
 *                 freq, --moe-router-score-function softmax|sigmoid, --moe-
 *                 router-enable-expert-bias, --moe-router-num-groups,
 *                 --moe-router-group-topk, --moe-router-topk-scaling-factor,
 *                 --multi-latent-attention, --q-lora-rank, --kv-lora-rank,
 *                 --qk-head-dim, --qk-pos-emb-head-dim, --v-head-dim
 *  Megatron-LM v3.0 (2022) and v2.x (2021): megatron/arguments.py: the
 *    same parallelism, batch and base model names; --DDP-impl local|torch;
 *    --checkpoint-activations (v2.x) for full recomputation
 *  Megatron-DeepSpeed, megatron/arguments.py of its main branch
 *    (2023-2024): --num-key-value-heads for grouped-query attention,
 *    --normalization layernorm|rmsnorm, --use-rotary-position-embeddings,
 *    --checkpoint-activations; --deepspeed --deepspeed_config FILE
 */
#include <stdio.h>
#include <string.h>

#include "export_int.h"

enum megatron_flavour tp_export_flavour(const struct tp_export_spec *s)
{
	if (s->rt.can.launcher == TP_LAUNCH_DEEPSPEED)
		return MEGATRON_DEEPSPEED;
	if (strncmp(s->rt.name, "megatron-lm-", 12) == 0)
		return MEGATRON_LEGACY;
	return MEGATRON_CORE;
}

#define ARG(...)                                                               \
	do {                                                                   \
		tp_strbuf_addf(out, __VA_ARGS__);                              \
		tp_strbuf_adds(out, sep);                                      \
	} while (0)

/* The pipeline layout: even (nothing more), first/last, or per chunk. */
static void layout_args(const struct tp_export_spec *s, enum megatron_flavour f,
			const char *sep, struct tp_strbuf *out)
{
	if (s->n_chunks < 2)
		return;
	if (s->layout == TP_LAYOUT_EVEN) {
		if (s->virtual_stages > 1)
			ARG("--num-layers-per-virtual-pipeline-stage %lld",
			    (long long)s->layers_per_chunk);
		return;
	}
	if (f != MEGATRON_CORE)
		return; /* the runtime check refused it already */
	if (s->layout == TP_LAYOUT_FIRST_LAST) {
		ARG("--decoder-first-pipeline-num-layers %lld",
		    (long long)s->chunk_layers[0]);
		ARG("--decoder-last-pipeline-num-layers %lld",
		    (long long)s->chunk_layers[s->n_chunks - 1]);
		return;
	}
	/* any: every chunk in model order (pp x V of them) */
	tp_strbuf_adds(out, "--pipeline-model-parallel-layout ");
	for (uint32_t k = 0; k < s->n_chunks; k++) {
		if (k)
			tp_strbuf_addc(out, '|');
		if (k == 0)
			tp_strbuf_addc(out, 'E');
		for (int64_t l = 0; l < s->chunk_layers[k]; l++)
			tp_strbuf_addc(out, 't');
		if (k + 1 == s->n_chunks)
			tp_strbuf_addc(out, 'L');
	}
	tp_strbuf_adds(out, sep);
}

static void parallel_args(const struct tp_export_spec *s,
			  enum megatron_flavour f, const char *sep,
			  struct tp_strbuf *out)
{
	ARG("--tensor-model-parallel-size %u", s->tp);
	ARG("--pipeline-model-parallel-size %u", s->pp);
	if (s->cp > 1)
		ARG("--context-parallel-size %u", s->cp);
	if (s->ep > 1 && f == MEGATRON_CORE)
		ARG("--expert-model-parallel-size %u", s->ep);
	if (s->etp == 1 && f == MEGATRON_CORE)
		ARG("--expert-tensor-parallel-size %u", 1u);
	layout_args(s, f, sep, out);
	ARG("--micro-batch-size %lld", (long long)s->micro_batch);
	ARG("--global-batch-size %lld", (long long)s->global_batch);
	if (s->sp)
		ARG("--sequence-parallel");
	if (s->recompute == TP_RECOMPUTE_SELECTIVE) {
		ARG("--recompute-granularity selective");
	} else if (s->recompute == TP_RECOMPUTE_FULL) {
		if (f == MEGATRON_DEEPSPEED ||
		    strcmp(s->rt.name, "megatron-lm-2021") == 0) {
			ARG("--checkpoint-activations");
		} else {
			ARG("--recompute-granularity full");
			ARG("--recompute-method uniform");
			ARG("--recompute-num-layers 1");
		}
	}
	if (s->zero == 1 && f != MEGATRON_DEEPSPEED)
		ARG("--use-distributed-optimizer");
}

/* The data-parallel reduction as simulated: overlap and bucket in the
 * runtime's unit, fp32 gradients where it reduces in fp32. */
static void ddp_args(const struct tp_export_spec *s, enum megatron_flavour f,
		     const char *sep, struct tp_strbuf *out)
{
	const struct tp_runtime_behaviour *b = &s->rt.behaviour;

	if (f == MEGATRON_DEEPSPEED)
		return; /* the engine's: zero_optimization in the config */
	if (f == MEGATRON_LEGACY) {
		bool torch =
		    b->dp_overlap && (s->pp == 1 || b->dp_overlap_pipeline);
		ARG("--DDP-impl %s", torch ? "torch" : "local");
	} else if (s->dp > 1) {
		if (b->dp_overlap)
			ARG("--overlap-grad-reduce");
		ARG("--ddp-bucket-size %.0f", tp_export_bucket_elements(s));
	}
	if (b->grad_reduce == TP_GRAD_REDUCE_FP32 &&
	    s->run_dtype != TP_DTYPE_FP32)
		ARG("--accumulate-allreduce-grads-in-fp32");
}

/* Sizes and shape of the transformer. */
static void size_args(const struct tp_export_spec *s, enum megatron_flavour f,
		      const char *sep, struct tp_strbuf *out)
{
	const struct tp_arch *a = &s->arch;
	int64_t maxpos =
	    a->max_positions > s->seq_len ? a->max_positions : s->seq_len;

	if (s->layers > 0)
		ARG("--num-layers %lld", (long long)s->layers);
	if (a->hidden > 0)
		ARG("--hidden-size %lld", (long long)a->hidden);
	if (a->ffn > 0)
		ARG("--ffn-hidden-size %lld", (long long)a->ffn);
	if (a->heads > 0)
		ARG("--num-attention-heads %lld", (long long)a->heads);
	if (a->head_dim > 0 && a->heads > 0 && a->hidden > 0 &&
	    a->head_dim * a->heads != a->hidden)
		ARG("--kv-channels %lld", (long long)a->head_dim);
	if (a->kv_heads > 0 && a->kv_heads != a->heads &&
	    a->kv_lora_rank == 0) {
		if (f == MEGATRON_DEEPSPEED) {
			ARG("--num-key-value-heads %lld",
			    (long long)a->kv_heads);
		} else {
			ARG("--group-query-attention");
			ARG("--num-query-groups %lld", (long long)a->kv_heads);
		}
	}
	if (s->seq_len > 0) {
		ARG("--seq-length %lld", (long long)s->seq_len);
		ARG("--max-position-embeddings %lld", (long long)maxpos);
	}
	if (a->vocab > 0)
		ARG("--vocab-size %lld", (long long)a->vocab);
}

/* Block structure: norms, positions, activation, biases, tying. */
static void block_args(const struct tp_export_spec *s, enum megatron_flavour f,
		       const char *sep, struct tp_strbuf *out)
{
	const struct tp_arch *a = &s->arch;

	if (a->norm == TP_NORM_RMSNORM)
		ARG("--normalization %s",
		    f == MEGATRON_DEEPSPEED ? "rmsnorm" : "RMSNorm");
	else if (a->norm == TP_NORM_LAYERNORM && f == MEGATRON_CORE)
		ARG("--normalization LayerNorm");
	if (a->norm_eps > 0)
		ARG("%s %.6g",
		    f == MEGATRON_CORE ? "--norm-epsilon"
				       : "--layernorm-epsilon",
		    a->norm_eps);
	if (a->position == TP_POS_ROPE) {
		if (f == MEGATRON_CORE)
			ARG("--position-embedding-type rope");
		else
			ARG("--use-rotary-position-embeddings");
		if (a->rope_theta > 0 && f == MEGATRON_CORE)
			ARG("--rotary-base %.10g", a->rope_theta);
	} else if (a->position == TP_POS_NONE && f == MEGATRON_CORE) {
		ARG("--position-embedding-type none");
	} else if (a->position == TP_POS_LEARNED && f == MEGATRON_CORE) {
		ARG("--position-embedding-type learned_absolute");
	}
	if (a->activation == TP_ACT_SWIGLU)
		ARG("--swiglu");
	else if (a->activation == TP_ACT_GELU_TANH)
		ARG("--openai-gelu");
	if (a->mlp_bias == TP_TRI_NO && a->out_bias == TP_TRI_NO) {
		ARG("--disable-bias-linear");
		if (a->qkv_bias == TP_TRI_YES)
			ARG("--add-qkv-bias");
	}
	if (a->tied_embeddings == TP_TRI_NO)
		ARG("--untie-embeddings-and-output-weights");
	if (a->qk_norm == TP_QKNORM_HEAD && f == MEGATRON_CORE)
		ARG("--qk-layernorm");
}

/* Mixture of experts and latent attention (Megatron-Core). */
static void moe_args(const struct tp_export_spec *s, enum megatron_flavour f,
		     const char *sep, struct tp_strbuf *out)
{
	const struct tp_arch *a = &s->arch;

	if (f != MEGATRON_CORE)
		return;
	if (a->experts > 0) {
		ARG("--num-experts %lld", (long long)a->experts);
		if (a->top_k > 0)
			ARG("--moe-router-topk %lld", (long long)a->top_k);
		/* the dispatcher the simulator prices (src/sim/README
		   section 3); Megatron-Core's default is allgather */
		ARG("--moe-token-dispatcher-type alltoall");
		if (s->capacity_factor > 0)
			ARG("--moe-expert-capacity-factor %.6g",
			    s->capacity_factor);
		if (a->moe_ffn > 0 && a->moe_ffn != a->ffn)
			ARG("--moe-ffn-hidden-size %lld",
			    (long long)a->moe_ffn);
		if (a->shared_experts > 0 && a->shared_ffn > 0)
			ARG("--moe-shared-expert-intermediate-size %lld",
			    (long long)(a->shared_experts * a->shared_ffn));
		if (a->first_dense_layers > 0 && s->layers > 0)
			ARG("--moe-layer-freq ([0]*%lld+[1]*%lld)",
			    (long long)a->first_dense_layers,
			    (long long)(s->layers - a->first_dense_layers));
		if (a->router == TP_ROUTER_SIGMOID)
			ARG("--moe-router-score-function sigmoid");
		if (a->router_expert_bias == TP_TRI_YES)
			ARG("--moe-router-enable-expert-bias");
		if (a->router_groups > 0) {
			ARG("--moe-router-num-groups %lld",
			    (long long)a->router_groups);
			ARG("--moe-router-group-topk %lld",
			    (long long)a->router_group_topk);
		}
		if (a->router_scale > 0 && a->router_scale != 1)
			ARG("--moe-router-topk-scaling-factor %.6g",
			    a->router_scale);
	}
	if (a->kv_lora_rank > 0) {
		ARG("--multi-latent-attention");
		if (a->q_lora_rank > 0)
			ARG("--q-lora-rank %lld", (long long)a->q_lora_rank);
		ARG("--kv-lora-rank %lld", (long long)a->kv_lora_rank);
		ARG("--qk-head-dim %lld", (long long)a->qk_nope_dim);
		ARG("--qk-pos-emb-head-dim %lld", (long long)a->qk_rope_dim);
		ARG("--v-head-dim %lld", (long long)a->v_head_dim);
	}
}

/* What the flags above do not say, for the notes. */
static void arch_notes(const struct tp_export_spec *s, enum megatron_flavour f,
		       struct tp_strbuf *notes)
{
	const struct tp_arch *a = &s->arch;
	const char *missing[12];
	int n = 0;

	if (!notes)
		return;
	if (a->hidden <= 0 || a->heads <= 0)
		tp_strbuf_adds(notes,
			       TP_EXPORT_WARNING "the model file gives no hidden size or head "
			       "count (\"arch\"): add --hidden-size and "
			       "--num-attention-heads yourself\n");
	if (a->activation == TP_ACT_GEGLU ||
	    a->activation == TP_ACT_GEGLU_TANH ||
	    a->activation == TP_ACT_REGLU ||
	    a->activation == TP_ACT_QUICK_GELU ||
	    a->activation == TP_ACT_RELU || a->activation == TP_ACT_SILU ||
	    a->activation == TP_ACT_TANH)
		missing[n++] = tp_act_name(a->activation);
	if (a->norm_position == TP_NORMPOS_PRE_POST ||
	    a->norm_position == TP_NORMPOS_SUBLAYER ||
	    a->norm_position == TP_NORMPOS_POST)
		missing[n++] = "the norms' place";
	if (a->norm == TP_NORM_LAYERNORM_NOBIAS ||
	    a->norm == TP_NORM_LAYERNORM_NOAFFINE)
		missing[n++] = tp_norm_name(a->norm);
	if (a->parallel_attn == TP_TRI_YES)
		missing[n++] = "parallel attention";
	if (a->window > 0)
		missing[n++] = "sliding-window attention";
	if (a->attn_softcap > 0 || a->logit_softcap > 0)
		missing[n++] = "soft-capping";
	if (a->position == TP_POS_ALIBI || a->position == TP_POS_SINUSOIDAL ||
	    a->position == TP_POS_RELATIVE)
		missing[n++] = tp_pos_name(a->position);
	if (a->rope_scaling[0])
		missing[n++] = "RoPE scaling";
	if (f != MEGATRON_CORE && (a->experts > 0 || a->kv_lora_rank > 0))
		missing[n++] = "experts and latent attention";
	if (a->stack == TP_STACK_ENCODER ||
	    a->stack == TP_STACK_ENCODER_DECODER)
		tp_strbuf_addf(notes,
			       TP_EXPORT_WARNING "the model is an %s: run pretrain_%s.py with "
			       "these arguments\n",
			       a->stack == TP_STACK_ENCODER ? "encoder"
							    : "encoder-decoder",
			       a->stack == TP_STACK_ENCODER ? "bert" : "t5");
	if (n) {
		tp_strbuf_addf(notes, TP_EXPORT_WARNING "%s has no flag for",
			       s->rt.name);
		for (int i = 0; i < n; i++)
			tp_strbuf_addf(notes, "%s %s", i ? "," : "",
				       missing[i]);
		tp_strbuf_adds(notes,
			       ": the model it builds differs from the one "
			       "simulated there\n");
	}
	/* RoPE's base: of these flavours only megatron-core's flag
	   (--rotary-base) is known here; Llama 3's 500000 went unsaid */
	if (f != MEGATRON_CORE && a->position == TP_POS_ROPE &&
	    a->rope_theta > 0 && a->rope_theta != 10000)
		tp_strbuf_addf(notes,
			       TP_EXPORT_WARNING "the model's RoPE base is "
			       "%.10g; %s's rotary embedding takes 10000 "
			       "unless told otherwise, and no flag for it is "
			       "known here: set it where your version reads "
			       "it\n",
			       a->rope_theta,
			       f == MEGATRON_DEEPSPEED ? "Megatron-DeepSpeed"
						      : s->rt.name);
	if (a->vocab > 0)
		tp_strbuf_adds(notes,
			       "--vocab-size is for --tokenizer-type "
			       "NullTokenizer; a real tokenizer brings its "
			       "own vocabulary (Megatron pads it to a "
			       "multiple of 128 x tp)\n");
}

void tp_export_megatron_args(const struct tp_export_spec *s,
			     enum megatron_flavour f, const char *sep,
			     struct tp_strbuf *out, struct tp_strbuf *notes)
{
	parallel_args(s, f, sep, out);
	ddp_args(s, f, sep, out);
	size_args(s, f, sep, out);
	block_args(s, f, sep, out);
	moe_args(s, f, sep, out);
	if (s->run_dtype == TP_DTYPE_FP8 && f == MEGATRON_CORE) {
		/* Transformer Engine's hybrid recipe with delayed scaling:
		 * Megatron-Core's defaults for the amax window are 1 and
		 * most_recent; TE's recipe and NVIDIA's recipes use 1024/max */
		ARG("--bf16");
		ARG("--fp8-format hybrid");
		ARG("--fp8-amax-history-len 1024");
		ARG("--fp8-amax-compute-algo max");
	} else if (s->run_dtype == TP_DTYPE_BF16 ||
		   s->run_dtype == TP_DTYPE_FP8)
		ARG("--bf16");
	else if (s->run_dtype == TP_DTYPE_FP16)
		ARG("--fp16");
	arch_notes(s, f, notes);
	if (notes && s->run_dtype == TP_DTYPE_FP8 && f != MEGATRON_CORE)
		tp_strbuf_adds(notes,
			       TP_EXPORT_WARNING "fp8: this Megatron has no --fp8-format (FP8 "
			       "GEMMs need Megatron-Core with Transformer "
			       "Engine): the job runs --bf16, slower than the "
			       "plan's fp8 GEMMs\n");
}

static enum tp_status write_megatron(const struct tp_export_spec *s,
				     struct tp_strbuf *out,
				     struct tp_strbuf *notes,
				     struct tp_error *err)
{
	enum tp_status st = tp_export_megatron_limits(s, err);

	if (st != TP_OK)
		return st;
	tp_export_megatron_args(s, tp_export_flavour(s), "\n", out, notes);
	tp_export_note_common(s, false, notes);
	return TP_OK;
}

/* torchrun's own lines; nproc_per_node per node when the nodes differ
 * (torchrun assigns global ranks node by node from each node's count). */
static void torchrun_head(const struct tp_export_spec *s, const char *script,
			  struct tp_strbuf *out)
{
	bool per_node = !s->natural_ranks || s->nproc_per_node == 0;

	if (per_node) {
		tp_strbuf_adds(out,
			       "# NODE_RANK -> CUDA_VISIBLE_DEVICES, nproc\n"
			       "case \"${NODE_RANK:?set NODE_RANK}\" in\n");
		for (uint32_t k = 0; k < s->nnodes; k++)
			tp_strbuf_addf(out,
				       "  %u) export CUDA_VISIBLE_DEVICES=%s; "
				       "NPROC=%u ;;  # %s\n",
				       k, s->nodes[k].visible,
				       s->nodes[k].n_ranks, s->nodes[k].name);
		tp_strbuf_adds(out, "esac\n");
	}
	tp_strbuf_addf(out,
		       "torchrun \\\n"
		       "  --nnodes=%u \\\n",
		       s->nnodes);
	if (!per_node)
		tp_strbuf_addf(out, "  --nproc_per_node=%u \\\n",
			       s->nproc_per_node);
	else
		tp_strbuf_adds(out, "  --nproc_per_node=\"$NPROC\" \\\n");
	tp_strbuf_addf(out,
		       "  --node_rank=\"${NODE_RANK:?set NODE_RANK to this "
		       "node's index, 0..%u}\" \\\n"
		       "  --master_addr=\"${MASTER_ADDR:?set MASTER_ADDR to "
		       "node 0's address}\" \\\n"
		       "  --master_port=\"${MASTER_PORT:-29500}\" \\\n"
		       "  ",
		       s->nnodes - 1);
	tp_strbuf_add_shell_word(out, script);
	tp_strbuf_adds(out, " \\\n  ");
}

/* A DDP job: the script is the user's; its arguments name what the plan
 * assumes. */
static void ddp_script_args(const struct tp_export_spec *s, const char *sep,
			    struct tp_strbuf *out, struct tp_strbuf *notes)
{
	ARG("--global-batch-size %lld", (long long)s->global_batch);
	ARG("--micro-batch-size %lld", (long long)s->micro_batch);
	ARG("--gradient-accumulation-steps %u", s->micro_batches);
	ARG("--bucket-cap-mb %.6g",
	    (s->grad_bucket_bytes > 0 ? s->grad_bucket_bytes
				      : TP_GRAD_BUCKET_DEFAULT_BYTES) /
		1048576.0);
	if (s->zero >= 1)
		ARG("--zero-redundancy-optimizer");
	if (s->recompute != TP_RECOMPUTE_NONE)
		ARG("--activation-checkpointing");
	ARG("--precision %s", tp_dtype_name(s->run_dtype));
	if (notes)
		tp_strbuf_adds(notes,
			       "the script is yours: wrap the model in "
			       "DistributedDataParallel(bucket_cap_mb=...) "
			       "with torch.autocast in --precision, "
			       "ZeroRedundancyOptimizer for "
			       "--zero-redundancy-optimizer, torch.utils."
			       "checkpoint for --activation-checkpointing, "
			       "and accumulate --gradient-accumulation-steps "
			       "micro-batches of --micro-batch-size per rank "
			       "(no_sync for all but the last)\n");
}

static enum tp_status write_torchrun(const struct tp_export_spec *s,
				     const char *script, struct tp_strbuf *out,
				     struct tp_strbuf *notes,
				     struct tp_error *err)
{
	bool ddp = s->rt.can.launcher == TP_LAUNCH_TORCHRUN;
	enum tp_status st;

	if (!ddp && (st = tp_export_megatron_limits(s, err)) != TP_OK)
		return st;
	torchrun_head(s,
		      script ? script
		      : ddp  ? "train.py"
			     : "pretrain_gpt.py",
		      out);
	if (ddp)
		ddp_script_args(s, " \\\n  ", out, notes);
	else
		tp_export_megatron_args(s, tp_export_flavour(s), " \\\n  ", out,
					notes);
	/* drop the continuation after the last argument */
	if (out->len >= 5 && strcmp(out->buf + out->len - 5, " \\\n  ") == 0) {
		out->len -= 5;
		out->buf[out->len] = '\0';
	}
	tp_strbuf_addc(out, '\n');
	tp_export_note_common(s, true, notes);
	if (notes && !ddp)
		tp_strbuf_adds(
		    notes, "add your data, tokenizer and optimizer arguments "
			   "to the script's line\n");
	return TP_OK;
}

enum tp_status tp_export_write(const struct tp_export_spec *s,
			       enum tp_export_target t, const char *script,
			       struct tp_strbuf *out, struct tp_strbuf *notes,
			       struct tp_error *err)
{
	enum tp_status st;

	if (!tp_export_target_fits(t, &s->rt))
		return tp_export_refuse(
		    err,
		    "the plan was made for %s, which %s does not launch; "
		    "export --to %s, or re-plan with --runtime %s",
		    s->rt.name, tp_export_target_name(t),
		    tp_export_target_name(tp_export_target_of(&s->rt)),
		    tp_export_target_runtime(t));
	switch (t) {
	case TP_EXPORT_MEGATRON:
		st = write_megatron(s, out, notes, err);
		break;
	case TP_EXPORT_DEEPSPEED:
		st = tp_export_write_deepspeed(s, out, notes, err);
		break;
	case TP_EXPORT_TORCHRUN:
		st = write_torchrun(s, script, out, notes, err);
		break;
	case TP_EXPORT_TORCHTITAN:
		st = tp_export_write_torchtitan(s, out, notes, err);
		break;
	default:
		return tp_error_set(err, TP_EUSAGE, "unknown export target");
	}
	if (st == TP_OK && (out->failed || (notes && notes->failed)))
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	return st;
}
