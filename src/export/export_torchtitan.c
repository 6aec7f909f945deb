/*
 * export_torchtitan.c - a TorchTitan job config (.toml) for an FSDP2
 * plan.
 *
 * Keys (torchtitan/config/job_config.py, TorchTitan of 2025):
 *   [job] description
 *   [model] name, flavor, converters (["float8"] for an fp8 plan: the
 *     float8 model converter, torchtitan/components/quantization)
 *   [float8] enable_fsdp_float8_all_gather (false: the plan priced the
 *     FSDP all-gathers in bf16)
 *   [training] local_batch_size (samples per data-parallel rank and
 *     step), global_batch_size (more than local x dp: gradient
 *     accumulation), seq_len, mixed_precision_param,
 *     mixed_precision_reduce ("bfloat16" | "float16" | "float32")
 *   [parallelism] data_parallel_replicate_degree,
 *     data_parallel_shard_degree, fsdp_reshard_after_forward ("default"
 *     | "always" | "never"), tensor_parallel_degree,
 *     enable_async_tensor_parallel, pipeline_parallel_degree,
 *     pipeline_parallel_schedule ("1F1B" | "Interleaved1F1B" | "GPipe"),
 *     pipeline_parallel_microbatch_size, pipeline_parallel_split_points
 *     (module names where a stage begins, "layers.N"),
 *     context_parallel_degree
 *   [activation_checkpoint] mode ("none" | "selective" | "full"),
 *     selective_ac_option ("op")
 * The model's dimensions are Python in TorchTitan (a flavor of
 * torchtitan/models/llama3: TransformerModelArgs(dim, n_layers, n_heads,
 * n_kv_heads, vocab_size, multiple_of, ffn_dim_multiplier, norm_eps,
 * rope_theta, max_seq_len)); the config names the flavor "tagplan" and
 * says in a comment (and the notes) what to register.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "export_int.h"

/* multiple_of and ffn_dim_multiplier (0 = None) giving the model's FFN
 * width by TorchTitan's rule: h = int(2 x 4 dim / 3); h = int(mult x h)
 * when a multiplier is given; h rounded up to a multiple of multiple_of. */
static void ffn_args(int64_t dim, int64_t ffn, int64_t *multiple_of,
		     double *mult)
{
	static const int64_t mos[] = {1024, 512, 256, 128, 64, 32,
				      16,   8,	 4,   2,   1};
	int64_t base = (int64_t)(2 * (4 * dim) / 3);

	for (size_t i = 0; i < sizeof(mos) / sizeof(mos[0]); i++) {
		int64_t mo = mos[i];
		double m;
		int64_t h;
		if (ffn % mo)
			continue;
		if ((base + mo - 1) / mo * mo == ffn) {
			*multiple_of = mo;
			*mult = 0;
			return;
		}
		m = (double)ffn / (double)base;
		h = (int64_t)(m * (double)base);
		if ((h + mo - 1) / mo * mo == ffn && h > 0) {
			*multiple_of = mo;
			*mult = m;
			return;
		}
	}
	*multiple_of = 1;
	*mult = (double)ffn / (double)base;
}

static const char *torch_dtype(enum tp_dtype d)
{
	/* fp8: FSDP keeps bf16 parameters; the float8 converter casts the
	 * linear layers' GEMM inputs */
	return d == TP_DTYPE_BF16 || d == TP_DTYPE_FP8 ? "bfloat16"
	       : d == TP_DTYPE_FP16 ? "float16"
				    : "float32";
}

/* The flavor to register, as one Python line. */
static void model_args(const struct tp_export_spec *s, struct tp_strbuf *out)
{
	const struct tp_arch *a = &s->arch;
	int64_t mo;
	double mult;

	ffn_args(a->hidden, a->ffn, &mo, &mult);
	tp_strbuf_addf(out,
		       "\"tagplan\": TransformerModelArgs(dim=%lld, "
		       "n_layers=%lld, n_heads=%lld, n_kv_heads=%lld, "
		       "vocab_size=%lld, multiple_of=%lld, ",
		       (long long)a->hidden, (long long)s->layers,
		       (long long)a->heads,
		       (long long)(a->kv_heads > 0 ? a->kv_heads : a->heads),
		       (long long)a->vocab, (long long)mo);
	if (mult > 0)
		tp_strbuf_addf(out, "ffn_dim_multiplier=%.17g, ", mult);
	else
		tp_strbuf_adds(out, "ffn_dim_multiplier=None, ");
	tp_strbuf_addf(
	    out, "norm_eps=%.6g, rope_theta=%.10g, max_seq_len=%lld)",
	    a->norm_eps > 0 ? a->norm_eps : 1e-5,
	    a->rope_theta > 0 ? a->rope_theta : 10000, (long long)s->seq_len);
}

/* What TorchTitan's llama3 model does not build of the model, for the
 * notes: it is a decoder of pre-norm RMSNorm blocks with RoPE, SwiGLU
 * MLPs, no biases, no QK norm, head size dim / n_heads and dense layers
 * (torchtitan/models/llama3/model/model.py), whatever the model file
 * says; its TransformerModelArgs have no field for anything else.  (The
 * tied embeddings have their own note.) */
static void arch_notes(const struct tp_export_spec *s, struct tp_strbuf *notes)
{
	const struct tp_arch *a = &s->arch;
	char what[12][64];
	int n = 0;

	if (a->stack == TP_STACK_ENCODER ||
	    a->stack == TP_STACK_ENCODER_DECODER)
		snprintf(what[n++], sizeof(what[0]), "%s",
			 a->stack == TP_STACK_ENCODER ? "encoder stack"
						      : "encoder-decoder stack");
	if (a->experts > 0)
		snprintf(what[n++], sizeof(what[0]),
			 "mixture-of-experts layers (%lld routed experts)",
			 (long long)a->experts);
	if (a->kv_lora_rank > 0)
		snprintf(what[n++], sizeof(what[0]), "latent attention");
	if (a->activation != TP_ACT_UNKNOWN && a->activation != TP_ACT_SWIGLU)
		snprintf(what[n++], sizeof(what[0]), "%s MLPs",
			 tp_act_name(a->activation));
	if (a->norm != TP_NORM_UNKNOWN && a->norm != TP_NORM_RMSNORM)
		snprintf(what[n++], sizeof(what[0]), "%s",
			 tp_norm_name(a->norm));
	if (a->norm_position != TP_NORMPOS_UNKNOWN &&
	    a->norm_position != TP_NORMPOS_PRE)
		snprintf(what[n++], sizeof(what[0]), "%s norms",
			 tp_norm_position_name(a->norm_position));
	if (a->position != TP_POS_UNKNOWN && a->position != TP_POS_ROPE)
		snprintf(what[n++], sizeof(what[0]), "%s positions",
			 tp_pos_name(a->position));
	if (a->qkv_bias == TP_TRI_YES || a->out_bias == TP_TRI_YES ||
	    a->mlp_bias == TP_TRI_YES)
		snprintf(what[n++], sizeof(what[0]), "biases");
	if (a->qk_norm == TP_QKNORM_HEAD || a->qk_norm == TP_QKNORM_FULL)
		snprintf(what[n++], sizeof(what[0]), "QK norm");
	if (a->parallel_attn == TP_TRI_YES)
		snprintf(what[n++], sizeof(what[0]), "parallel attention");
	if (a->window > 0)
		snprintf(what[n++], sizeof(what[0]), "sliding-window attention");
	if (a->head_dim > 0 && a->heads > 0 &&
	    a->head_dim * a->heads != a->hidden)
		snprintf(what[n++], sizeof(what[0]), "a head size of %lld",
			 (long long)a->head_dim);
	if (!n)
		return;
	tp_strbuf_adds(notes, TP_EXPORT_WARNING "TorchTitan's llama3 (pre-norm RMSNorm, RoPE, "
			      "SwiGLU, no biases, dense, decoder only) does "
			      "not build the model's");
	for (int i = 0; i < n; i++)
		tp_strbuf_addf(notes, "%s %s", i ? "," : "", what[i]);
	tp_strbuf_adds(notes, ": the model it builds differs from the one "
			      "simulated there\n");
}

static void parallelism(const struct tp_export_spec *s, struct tp_strbuf *out)
{
	uint32_t shard = s->zero >= 1 ? s->dp : 1;
	uint32_t repl = s->zero >= 1 ? 1 : s->dp;

	tp_strbuf_adds(out, "\n[parallelism]\n");
	tp_strbuf_addf(out, "data_parallel_replicate_degree = %u\n", repl);
	tp_strbuf_addf(out, "data_parallel_shard_degree = %u\n", shard);
	tp_strbuf_addf(out, "fsdp_reshard_after_forward = \"%s\"\n",
		       s->zero == 1 || s->zero == 2 ? "never" : "default");
	tp_strbuf_addf(out, "tensor_parallel_degree = %u\n", s->tp);
	tp_strbuf_addf(out, "enable_async_tensor_parallel = %s\n",
		       s->rt.behaviour.tp_overlap ? "true" : "false");
	tp_strbuf_addf(out, "pipeline_parallel_degree = %u\n", s->pp);
	if (s->pp > 1) {
		int64_t at = 0;
		tp_strbuf_addf(out, "pipeline_parallel_schedule = \"%s\"\n",
			       s->schedule == TP_SCHEDULE_INTERLEAVED
				   ? "Interleaved1F1B"
			       : s->schedule == TP_SCHEDULE_GPIPE ? "GPipe"
			       : s->schedule == TP_SCHEDULE_ZB_H1
				   ? "InterleavedZeroBubble"
				   : "1F1B");
		tp_strbuf_addf(out,
			       "pipeline_parallel_microbatch_size = %lld\n",
			       (long long)s->micro_batch);
		tp_strbuf_adds(out, "pipeline_parallel_split_points = [");
		for (uint32_t k = 0; k + 1 < s->n_chunks; k++) {
			at += s->chunk_layers[k];
			tp_strbuf_addf(out, "%s\"layers.%lld\"", k ? ", " : "",
				       (long long)at);
		}
		tp_strbuf_adds(out, "]\n");
	}
	tp_strbuf_addf(out, "context_parallel_degree = %u\n", s->cp);
}

enum tp_status tp_export_write_torchtitan(const struct tp_export_spec *s,
					  struct tp_strbuf *out,
					  struct tp_strbuf *notes,
					  struct tp_error *err)
{
	const struct tp_arch *a = &s->arch;
	/* per rank and step: the whole pipeline's micro-batches, or one
	   micro-batch per accumulation step without pipelining */
	int64_t local = s->pp > 1 ? s->global_batch / s->dp : s->micro_batch;

	if (a->hidden <= 0 || a->heads <= 0 || a->ffn <= 0 || a->vocab <= 0 ||
	    s->layers <= 0)
		return tp_export_refuse(
		    err, "the model file does not give its "
			 "dimensions (\"arch\": hidden, heads, "
			 "ffn, vocab, layers), which TorchTitan's "
			 "model arguments need");
	tp_strbuf_addf(out,
		       "# TorchTitan job config from tagplan: %s for runtime "
		       "%s\n"
		       "# register the model (torchtitan/models/llama3/"
		       "__init__.py, llama3_configs):\n#   ",
		       s->model_name ? s->model_name : "the model", s->rt.name);
	model_args(s, out);
	tp_strbuf_adds(out, "\n\n[job]\n");
	tp_strbuf_addf(out, "description = \"tagplan plan: %s\"\n",
		       s->model_name ? s->model_name : "model");
	tp_strbuf_adds(out,
		       "\n[model]\nname = \"llama3\"\nflavor = \"tagplan\"\n");
	if (s->run_dtype == TP_DTYPE_FP8)
		tp_strbuf_adds(out, "converters = [\"float8\"]\n");
	tp_strbuf_adds(out, "\n[training]\n");
	tp_strbuf_addf(out, "local_batch_size = %lld\n", (long long)local);
	tp_strbuf_addf(out, "global_batch_size = %lld\n",
		       (long long)s->global_batch);
	tp_strbuf_addf(out, "seq_len = %lld\n", (long long)s->seq_len);
	tp_strbuf_addf(out, "mixed_precision_param = \"%s\"\n",
		       torch_dtype(s->run_dtype));
	tp_strbuf_addf(out, "mixed_precision_reduce = \"%s\"\n",
		       s->rt.behaviour.grad_reduce == TP_GRAD_REDUCE_FP32
			   ? "float32"
			   : torch_dtype(s->run_dtype));
	if (s->run_dtype == TP_DTYPE_FP8)
		tp_strbuf_adds(out, "\n[float8]\n"
				    "enable_fsdp_float8_all_gather = false\n");
	parallelism(s, out);
	tp_strbuf_adds(out, "\n[activation_checkpoint]\n");
	tp_strbuf_addf(out, "mode = \"%s\"\n", tp_recompute_name(s->recompute));
	if (s->recompute == TP_RECOMPUTE_SELECTIVE)
		tp_strbuf_adds(out, "selective_ac_option = \"op\"\n");
	if (notes) {
		tp_strbuf_adds(notes, "register the flavor in "
				      "torchtitan/models/llama3/__init__.py: ");
		model_args(s, notes);
		tp_strbuf_addc(notes, '\n');
		if (s->zero == 1)
			tp_strbuf_adds(
			    notes, TP_EXPORT_WARNING "ZeRO-1 has no TorchTitan setting: FSDP "
				   "with fsdp_reshard_after_forward = "
				   "\"never\" keeps whole parameters like "
				   "ZeRO-1 and shards gradients too (ZeRO-2, "
				   "less memory than simulated)\n");
		if (s->tp > 1 && !s->sp)
			tp_strbuf_adds(notes,
				       TP_EXPORT_WARNING "TorchTitan's tensor parallelism shards "
				       "the norms along the sequence (sequence "
				       "parallelism), which the plan did not "
				       "simulate\n");
		if (s->run_dtype == TP_DTYPE_FP8)
			tp_strbuf_adds(
			    notes, "fp8: TorchTitan's float8 converter (torchao, "
				   "tensorwise dynamic scaling) swaps the "
				   "linear layers, not Transformer Engine's "
				   "delayed-scaling hybrid recipe; both run "
				   "the GEMMs in FP8 as simulated, the output "
				   "layer stays bf16\n");
		if (s->pp > 1 && s->schedule == TP_SCHEDULE_ZB_H1)
			tp_strbuf_adds(
			    notes, "zb-h1: InterleavedZeroBubble with one "
				   "stage per rank runs ZB-H1's order "
				   "(torch.distributed.pipelining, PyTorch "
				   "2.6+); a TorchTitan that asks multi-stage "
				   "schedules for two stages per rank refuses "
				   "it, and pipeline_parallel_schedule_csv "
				   "with the same order is the way there\n");
		arch_notes(s, notes);
		if (a->tied_embeddings == TP_TRI_YES)
			tp_strbuf_adds(notes,
				       TP_EXPORT_WARNING "the model ties its embeddings; "
				       "TorchTitan's llama3 keeps a separate "
				       "output layer\n");
	}
	tp_export_note_common(s, false, notes);
	return TP_OK;
}
