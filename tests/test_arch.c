/*
 * test_arch.c - the model types of 2024-25 in `tagplan model hf:`
 * (gemma, gemma2, gemma3_text, phi3, qwen3, qwen3_moe, qwen2_moe,
 * deepseek_v2/v3, falcon, olmo, olmo2, dbrx, vit), the architecture the
 * model records (core/model.h struct tp_arch) and its round trip through
 * the model file; old model files keep loading and meaning the same.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model.h"
#include "core/strbuf.h"
#include "io/build.h"
#include "io/io.h"
#include "util.h"

#define REL_CLOSE(x, y, tol) (fabs((x) / (y) - 1.0) <= (tol))

static void build(const char *file, int64_t seq, struct tp_model *m)
{
	struct tp_error err;
	char rel[128];

	snprintf(rel, sizeof(rel), "data/hf/%s", file);
	tp_model_init(m);
	tp_error_clear(&err);
	ck_assert_msg(tp_build_hf(tp_test_path(rel), seq, 0, -1, m, &err) ==
			      TP_OK,
		      "%s: %s", rel, err.msg);
}

static const struct tp_op *op(const struct tp_model *m, const char *name)
{
	uint32_t i = tp_model_find_op(m, name);

	ck_assert_msg(i != TP_NONE, "no op %s in %s", name, m->name);
	return &m->ops.v[i];
}

static bool has_op(const struct tp_model *m, const char *name)
{
	return tp_model_find_op(m, name) != TP_NONE;
}

/* Parameters of op name, in elements. */
static double params(const struct tp_model *m, const char *name)
{
	return op(m, name)->param_bytes / tp_dtype_bytes(m->dtype);
}

/*
 * Published parameter counts, each with its source.  "total" is the
 * figure the test holds to 0.5%; "active" (MoE) is the published count of
 * parameters used per token, held to 2.5% (published active counts are
 * rounded to 2 digits and differ in whether the input embedding counts;
 * see active_minus below).
 *
 *  gemma-7b      Gemma Team 2024 ("Gemma: Open Models Based on Gemini
 *                Research and Technology"), Table 2: embedding 786,825,216
 *                + non-embedding 7,751,248,896 (the embedding row count
 *                is padded to 256,128; the config's vocab is 256,000).
 *  gemma-2-9b    Gemma Team 2024 ("Gemma 2: Improving Open Language Models
 *                at a Practical Size"), parameter table: embedding
 *                917,962,752 + non-embedding 8,324,201,984.
 *  gemma-3-12b   Gemma Team 2025 (Gemma 3 Technical Report), Table 1: 12B,
 *                embedding 1,012 M + non-embedding 10,759 M; the 417 M
 *                SigLIP vision encoder is not part of the text model.
 *  phi-3-mini    the Hub's count for microsoft/Phi-3-mini-4k-instruct,
 *                3.82 B (its model card: "3.8B parameters").
 *  qwen3-8b      Qwen/Qwen3-8B model card: 8.2 B, non-embedding 6.95 B.
 *  qwen3-30b-a3b Qwen/Qwen3-30B-A3B model card: 30.5 B total, 3.3 B
 *                activated, non-embedding 29.9 B.
 *  qwen1.5-moe   Qwen/Qwen1.5-MoE-A2.7B model card and the Qwen team's
 *                "Qwen1.5-MoE" post: 14.3 B total, 2.7 B activated.
 *  deepseek-v2-lite  DeepSeek-V2 paper (DeepSeek-AI 2024), appendix on
 *                V2-Lite: 15.7 B total, 2.4 B activated per token.
 *  deepseek-v3   DeepSeek-V3 Technical Report (2024) and its model card:
 *                671 B total, 37 B activated (the Hub's 685 B adds the 14 B
 *                multi-token-prediction module, which tagplan does not
 *                build).
 *  falcon-7b     the Hub's count for tiiuae/falcon-7b, 7.22 B: its
 *                checkpoint stores lm_head.weight, the tied copy of the
 *                word embeddings, as a tensor of its own, so the test
 *                adds vocab x hidden once more (model card: "7B").
 *  olmo-2-1124-7b  the Hub's count for allenai/OLMo-2-1124-7B, 7.30 B.
 *  olmo-7b-hf    the Hub's count for allenai/OLMo-7B-hf, 6.89 B.
 *  dbrx-base     databricks/dbrx-base model card: "132B total parameters
 *                of which 36B parameters are active on any input".
 *  vit-base      the Hub's count for google/vit-base-patch16-224, 86.6 M
 *                (Dosovitskiy et al. 2021, Table 1: ViT-Base 86 M, without
 *                the 1000-class head).
 *  vit-large     the Hub's count for google/vit-large-patch16-224, 304 M.
 */
static const struct {
	const char *file, *family;
	double total, active;
	int64_t layers;
	bool plus_tied_head; /* falcon: add the checkpoint's lm_head copy */
	bool active_minus;   /* DeepSeek's active count leaves out the input
				embedding (V2-Lite: 2.66 B with it, 2.45 B
				without, published 2.4 B) */
} published[] = {
	{"gemma-7b.json", "gemma", 8.538074112e9, 0, 28, false, false},
	{"gemma-2-9b.json", "gemma2", 9.242164736e9, 0, 42, false, false},
	{"gemma-3-12b.json", "gemma3_text", 11.771e9, 0, 48, false, false},
	{"phi-3-mini-4k-instruct.json", "phi3", 3.82e9, 0, 32, false, false},
	{"qwen3-8b.json", "qwen3", 8.2e9, 0, 36, false, false},
	{"qwen3-30b-a3b.json", "qwen3_moe", 30.5e9, 3.3e9, 48, false, false},
	{"qwen1.5-moe-a2.7b.json", "qwen2_moe", 14.3e9, 2.7e9, 24, false,
	 false},
	{"deepseek-v2-lite.json", "deepseek_v2", 15.7e9, 2.4e9, 27, false,
	 true},
	{"deepseek-v3.json", "deepseek_v3", 671e9, 37e9, 61, false, true},
	{"falcon-7b.json", "falcon", 7.22e9, 0, 32, true, false},
	{"olmo-2-1124-7b.json", "olmo2", 7.30e9, 0, 32, false, false},
	{"olmo-7b-hf.json", "olmo", 6.89e9, 0, 32, false, false},
	{"dbrx-base.json", "dbrx", 132e9, 36e9, 40, false, false},
	{"vit-base-patch16-224.json", "vit", 86.6e6, 0, 12, false, false},
	{"vit-large-patch16-224.json", "vit", 304e6, 0, 24, false, false},
	{"mixtral-8x7b.json", "mixtral", 46.7e9, 12.9e9, 32, false, false},
};

START_TEST(test_new_types_parameters)
{
	struct tp_model m;
	double got, active, emb;

	build(published[_i].file, 0, &m);
	got = tp_model_parameters(&m);
	emb = (double)m.arch.vocab * (double)m.arch.hidden;
	if (published[_i].plus_tied_head)
		got += emb;
	ck_assert_msg(REL_CLOSE(got, published[_i].total, 0.005),
		      "%s: %.0f parameters, published %.4g",
		      published[_i].file, got, published[_i].total);
	ck_assert_int_eq(m.arch.layers, published[_i].layers);
	ck_assert_str_eq(m.arch.family, published[_i].family);
	active = tp_model_active_parameters(&m);
	if (published[_i].active > 0) {
		if (published[_i].active_minus)
			active -= emb;
		ck_assert_msg(REL_CLOSE(active, published[_i].active, 0.025),
			      "%s: %.0f active, published %.4g",
			      published[_i].file, active,
			      published[_i].active);
	} else {
		ck_assert_msg(active < 0, "%s: dense, yet %.0f active",
			      published[_i].file, active);
	}
	tp_model_release(&m);
}
END_TEST

START_TEST(test_exact_published_splits)
{
	/* the papers that give counts to the parameter: non-embedding */
	struct tp_model m;

	build("gemma-7b.json", 0, &m);
	ck_assert(tp_model_parameters(&m) - 256000.0 * 3072 == 7751248896.0);
	tp_model_release(&m);
	build("gemma-2-9b.json", 0, &m);
	ck_assert(tp_model_parameters(&m) - 256000.0 * 3584 == 8324201984.0);
	tp_model_release(&m);
	build("gemma-3-12b.json", 0, &m);
	ck_assert(fabs(tp_model_parameters(&m) - 262208.0 * 3840 -
		       10759e6) < 0.5e6);
	tp_model_release(&m);
	/* Qwen3's non-embedding figures: 6.95 B and 29.9 B */
	build("qwen3-8b.json", 0, &m);
	ck_assert(REL_CLOSE(tp_model_parameters(&m) - 2 * 151936.0 * 4096,
			    6.95e9, 0.005));
	tp_model_release(&m);
	build("qwen3-30b-a3b.json", 0, &m);
	ck_assert(REL_CLOSE(tp_model_parameters(&m) - 2 * 151936.0 * 2048,
			    29.9e9, 0.005));
	tp_model_release(&m);
}
END_TEST

START_TEST(test_active_parameters_formula)
{
	/* Qwen1.5-MoE: every parameter but the routed experts', of which
	 * 4 / 60: 24 layers x 60 experts x 3 GEMMs of 2048 x 1408 routed */
	struct tp_model m;
	double routed = 24.0 * 60 * 3 * 2048 * 1408;

	build("qwen1.5-moe-a2.7b.json", 0, &m);
	ck_assert(tp_model_active_parameters(&m) ==
		  tp_model_parameters(&m) - routed + routed * 4 / 60);
	tp_model_release(&m);
}
END_TEST

/* Forward FLOP of the attention core of layer l. */
static double attn_flop(const struct tp_model *m, int l)
{
	char name[64];

	snprintf(name, sizeof(name), "layer%d.attn", l);
	return op(m, name)->flop;
}

START_TEST(test_gemma_windows_and_norms)
{
	struct tp_model m;
	double s = 8192, qd = 16 * 256, h = 3584;

	/* Gemma 2: even layers through the 4096-token window, odd ones
	 * global (transformers: layer_idx % 2 == 0 slides) */
	build("gemma-2-9b.json", 8192, &m);
	ck_assert(attn_flop(&m, 0) == 4 * s * 4096 * qd);
	ck_assert(attn_flop(&m, 1) == 4 * s * s * qd);
	ck_assert(attn_flop(&m, 40) == 4 * s * 4096 * qd);
	/* a norm before and after each sub-layer, each h weights */
	ck_assert(params(&m, "layer3.ln1") == h);
	ck_assert(params(&m, "layer3.post_ln1") == h);
	ck_assert(params(&m, "layer3.post_ln2") == h);
	ck_assert(has_op(&m, "layer3.geglu"));
	ck_assert_int_eq(m.arch.window, 4096);
	ck_assert_int_eq(m.arch.window_pattern, 2);
	ck_assert_int_eq(m.arch.norm_position, TP_NORMPOS_PRE_POST);
	ck_assert_int_eq(m.arch.activation, TP_ACT_GEGLU_TANH);
	ck_assert_int_eq(m.arch.head_dim, 256);
	ck_assert(m.arch.attn_softcap == 50 && m.arch.logit_softcap == 30);
	ck_assert_int_eq(m.arch.tied_embeddings, TP_TRI_YES);
	ck_assert_int_eq(m.dtype, TP_DTYPE_FP32); /* its torch_dtype */
	tp_model_release(&m);

	/* Gemma 3: 5 local layers of 1024 tokens, then a global one; per
	 * head query and key norms (2 x 256 weights) in qkv */
	build("gemma-3-12b.json", 4096, &m);
	s = 4096;
	qd = 16 * 256;
	for (int l = 0; l < 12; l++)
		ck_assert_msg(attn_flop(&m, l) ==
				      4 * s * ((l + 1) % 6 ? 1024 : s) * qd,
			      "layer %d", l);
	ck_assert(params(&m, "layer0.qkv") ==
		  3840.0 * (4096 + 2 * 2048) + 2 * 256);
	ck_assert_int_eq(m.arch.qk_norm, TP_QKNORM_HEAD);
	ck_assert_int_eq(m.arch.window_pattern, 6);
	ck_assert(m.arch.rope_theta == 1e6 && m.arch.rope_local_theta == 1e4);
	ck_assert_str_eq(m.arch.rope_scaling, "linear");
	ck_assert(m.arch.rope_scaling_factor == 8);
	tp_model_release(&m);
}
END_TEST

START_TEST(test_qwen_phi_olmo_details)
{
	struct tp_model m;

	/* Qwen3: per-head QK norm, no biases */
	build("qwen3-8b.json", 0, &m);
	ck_assert(params(&m, "layer0.qkv") ==
		  4096.0 * (4096 + 2 * 1024) + 2 * 128);
	ck_assert_int_eq(m.arch.qkv_bias, TP_TRI_NO);
	ck_assert(m.arch.rope_theta == 1e6);
	tp_model_release(&m);

	/* Phi-3: the 2047-token sliding window on every layer */
	build("phi-3-mini-4k-instruct.json", 0, &m);
	ck_assert(attn_flop(&m, 0) == 4.0 * 4096 * 2047 * 3072);
	ck_assert(attn_flop(&m, 31) == 4.0 * 4096 * 2047 * 3072);
	ck_assert_int_eq(m.arch.window_pattern, 0);
	tp_model_release(&m);

	/* OLMo 2: norms only on the sub-layers' outputs, QK norm over the
	 * whole projections (2 x 4096 weights) */
	build("olmo-2-1124-7b.json", 0, &m);
	ck_assert(!has_op(&m, "layer0.ln1") && !has_op(&m, "layer0.ln2"));
	ck_assert(params(&m, "layer0.post_ln1") == 4096);
	ck_assert(params(&m, "layer0.qkv") == 4096.0 * 3 * 4096 + 2 * 4096);
	ck_assert_int_eq(m.arch.norm_position, TP_NORMPOS_SUBLAYER);
	ck_assert_int_eq(m.arch.qk_norm, TP_QKNORM_FULL);
	ck_assert(m.arch.rope_theta == 500000);
	tp_model_release(&m);

	/* OLMo: LayerNorm without parameters */
	build("olmo-7b-hf.json", 0, &m);
	ck_assert(params(&m, "layer0.ln1") == 0);
	ck_assert(params(&m, "final_norm") == 0);
	ck_assert_int_eq(m.arch.norm, TP_NORM_LAYERNORM_NOAFFINE);
	tp_model_release(&m);
}
END_TEST

/* Is there an edge a -> b? */
static bool edge(const struct tp_model *m, const char *a, const char *b)
{
	uint32_t s = tp_model_find_op(m, a), d = tp_model_find_op(m, b);

	for (size_t k = 0; k < m->edges.n; k++)
		if (m->edges.v[k].src == s && m->edges.v[k].dst == d)
			return true;
	return false;
}

START_TEST(test_falcon_parallel_block)
{
	struct tp_model m;
	double h = 4544;

	/* attention and MLP off one LayerNorm, one residual of three:
	 * x + attn(ln(x)) + mlp(ln(x)); multi-query attention */
	build("falcon-7b.json", 0, &m);
	ck_assert(!has_op(&m, "layer0.ln2") && !has_op(&m, "layer0.res1"));
	ck_assert(edge(&m, "layer0.ln1", "layer0.qkv"));
	ck_assert(edge(&m, "layer0.ln1", "layer0.fc1"));
	ck_assert(edge(&m, "layer0.proj", "layer0.res2"));
	ck_assert(edge(&m, "layer0.fc2", "layer0.res2"));
	ck_assert(edge(&m, "layer0.res2", "layer1.ln1"));
	ck_assert(edge(&m, "layer0.res2", "layer1.res2"));
	ck_assert(params(&m, "layer0.qkv") == h * (h + 2 * 64));
	ck_assert(params(&m, "layer0.ln1") == 2 * h);
	ck_assert_uint_eq(op(&m, "layer0.qkv")->tp_units, 1);
	ck_assert_int_eq(m.arch.kv_heads, 1);
	ck_assert_int_eq(m.arch.parallel_attn, TP_TRI_YES);
	ck_assert_int_eq(m.arch.activation, TP_ACT_GELU);
	ck_assert_int_eq(m.arch.mlp_bias, TP_TRI_NO);
	ck_assert_int_eq(m.seq_len, 2048);
	tp_model_release(&m);
}
END_TEST

START_TEST(test_deepseek_mla_and_experts)
{
	struct tp_model m;
	double h = 7168, s = 4096, a = 128;

	build("deepseek-v3.json", 0, &m);
	/* the first 3 layers dense, then routed + shared experts */
	ck_assert(has_op(&m, "layer2.fc1") && !has_op(&m, "layer2.router"));
	ck_assert(has_op(&m, "layer3.router") && !has_op(&m, "layer3.fc1"));
	ck_assert(params(&m, "layer2.fc1") == h * 2 * 18432);
	ck_assert(params(&m, "layer3.expert255.fc1") == h * 2 * 2048);
	ck_assert(!has_op(&m, "layer3.expert256.fc1"));
	ck_assert(params(&m, "layer3.shared_expert.fc1") == h * 2 * 2048);
	ck_assert(edge(&m, "layer3.ln2", "layer3.shared_expert.fc1"));
	ck_assert(edge(&m, "layer3.shared_expert.fc2", "layer3.combine"));
	/* gate and the aux-free balancing bias */
	ck_assert(params(&m, "layer3.router") == h * 256 + 256);
	/* each routed expert sees s * 8 / 256 tokens */
	ck_assert(op(&m, "layer60.expert0.fc2")->flop ==
		  2 * (s * 8 / 256) * 2048 * h);
	/* multi-head latent attention */
	ck_assert(params(&m, "layer0.q_down") == h * 1536);
	ck_assert(params(&m, "layer0.q_norm") == 1536);
	ck_assert(params(&m, "layer0.q_up") == 1536 * a * 192);
	ck_assert(params(&m, "layer0.kv_down") == h * (512 + 64));
	ck_assert(params(&m, "layer0.kv_norm") == 512);
	ck_assert(params(&m, "layer0.kv_up") == 512 * a * 256);
	ck_assert(params(&m, "layer0.proj") == a * 128 * h);
	ck_assert(attn_flop(&m, 0) == 2 * s * s * a * 192 + 2 * s * s * a * 128);
	ck_assert_int_eq(op(&m, "layer0.kv_down")->tp_split, TP_SPLIT_NONE);
	ck_assert_int_eq(op(&m, "layer0.kv_up")->tp_split, TP_SPLIT_COLUMN);
	ck_assert_uint_eq(op(&m, "layer0.kv_up")->tp_units, 128);
	ck_assert(m.arch.kv_lora_rank == 512 && m.arch.q_lora_rank == 1536 &&
		  m.arch.qk_nope_dim == 128 && m.arch.qk_rope_dim == 64 &&
		  m.arch.v_head_dim == 128);
	ck_assert(m.arch.top_k == 8 && m.arch.moe_ffn == 2048 &&
		  m.arch.shared_experts == 1 && m.arch.shared_ffn == 2048 &&
		  m.arch.first_dense_layers == 3);
	ck_assert_int_eq(m.arch.router, TP_ROUTER_SIGMOID);
	ck_assert(m.arch.router_groups == 8 && m.arch.router_group_topk == 4);
	ck_assert_int_eq(m.arch.router_expert_bias, TP_TRI_YES);
	ck_assert_int_eq(m.arch.router_topk_norm, TP_TRI_YES);
	ck_assert(m.arch.router_scale == 2.5);
	ck_assert_str_eq(m.arch.rope_scaling, "yarn");
	tp_model_release(&m);

	/* V2-Lite: q_lora_rank null is a plain query projection; two shared
	 * experts fused into one MLP of 2 x 1408 */
	build("deepseek-v2-lite.json", 0, &m);
	ck_assert(has_op(&m, "layer0.q") && !has_op(&m, "layer0.q_down"));
	ck_assert(params(&m, "layer0.q") == 2048.0 * 16 * 192);
	ck_assert(params(&m, "layer1.shared_expert.fc2") == 2816.0 * 2048);
	ck_assert(params(&m, "layer1.router") == 2048.0 * 64);
	ck_assert_int_eq(m.arch.q_lora_rank, 0);
	ck_assert_int_eq(m.arch.router, TP_ROUTER_SOFTMAX);
	ck_assert_int_eq(m.arch.router_topk_norm, TP_TRI_NO);
	tp_model_release(&m);
}
END_TEST

START_TEST(test_qwen_moe_dbrx)
{
	struct tp_model m;

	/* Qwen2-MoE: a gated shared expert (its gate's 2048 weights in the
	 * router), biases on q, k, v */
	build("qwen1.5-moe-a2.7b.json", 0, &m);
	ck_assert(params(&m, "layer0.router") == 2048.0 * 60 + 2048);
	ck_assert(params(&m, "layer0.shared_expert.fc1") == 2048.0 * 2 * 5632);
	ck_assert(params(&m, "layer0.expert59.fc2") == 1408.0 * 2048);
	ck_assert(edge(&m, "layer0.router", "layer0.combine"));
	ck_assert(params(&m, "layer0.qkv") == 2048.0 * 3 * 2048 + 3 * 2048);
	ck_assert_int_eq(m.arch.shared_expert_gate, TP_TRI_YES);
	ck_assert_int_eq(m.arch.qkv_bias, TP_TRI_YES);
	ck_assert_int_eq(m.arch.out_bias, TP_TRI_NO);
	tp_model_release(&m);

	/* Qwen3-MoE: 128 experts of 768, top-8 renormalised */
	build("qwen3-30b-a3b.json", 0, &m);
	ck_assert(has_op(&m, "layer47.expert127.fc1"));
	ck_assert(!has_op(&m, "layer0.shared_expert.fc1"));
	ck_assert(m.arch.experts == 128 && m.arch.top_k == 8 &&
		  m.arch.moe_ffn == 768);
	ck_assert_int_eq(m.arch.router_topk_norm, TP_TRI_YES);
	ck_assert_int_eq(m.arch.shared_expert_gate, TP_TRI_UNKNOWN);
	tp_model_release(&m);

	/* DBRX: LayerNorm without bias, GQA of 8 from attn_config, 16
	 * experts of 10752 from ffn_config */
	build("dbrx-base.json", 0, &m);
	ck_assert(params(&m, "layer0.ln1") == 6144);
	ck_assert_uint_eq(op(&m, "layer0.qkv")->tp_units, 8);
	ck_assert(params(&m, "layer0.expert15.fc1") == 6144.0 * 2 * 10752);
	ck_assert(m.arch.experts == 16 && m.arch.top_k == 4);
	ck_assert(m.arch.rope_theta == 500000);
	ck_assert_int_eq(m.arch.norm, TP_NORM_LAYERNORM_NOBIAS);
	tp_model_release(&m);
}
END_TEST

START_TEST(test_vit)
{
	struct tp_model m;
	struct tp_error err;
	double h = 768;

	build("vit-base-patch16-224.json", 0, &m);
	/* 14 x 14 patches and the CLS token */
	ck_assert_int_eq(m.seq_len, 197);
	ck_assert(params(&m, "patch_embedding") ==
		  3 * 16 * 16 * h + h + h + 197 * h);
	ck_assert(op(&m, "patch_embedding")->flop ==
		  2.0 * 196 * 768 * h + 197 * h);
	ck_assert(params(&m, "classifier") == h * 1000 + 1000);
	ck_assert(params(&m, "layer0.qkv") == h * 3 * h + 3 * h);
	ck_assert(has_op(&m, "layer0.gelu") && has_op(&m, "final_norm"));
	ck_assert(!has_op(&m, "lm_head"));
	ck_assert_int_eq(m.arch.stack, TP_STACK_ENCODER);
	ck_assert(m.arch.image_size == 224 && m.arch.patch_size == 16 &&
		  m.arch.channels == 3 && m.arch.classes == 1000);
	ck_assert_int_eq(m.arch.position, TP_POS_LEARNED);
	ck_assert_int_eq(m.arch.tied_embeddings, TP_TRI_UNKNOWN);
	tp_model_release(&m);
	/* its sequence is the image's: --seq is a usage error */
	tp_model_init(&m);
	ck_assert_int_eq(
		tp_build_hf(tp_test_path("data/hf/vit-base-patch16-224.json"),
			    1024, 0, -1, &m, &err),
		TP_EUSAGE);
	ck_assert_ptr_nonnull(strstr(err.msg, "196 patches"));
	tp_model_release(&m);
}
END_TEST

START_TEST(test_existing_types_arch)
{
	/* the builders of the types that existed record their architecture
	 * too (what an export must rebuild) */
	struct tp_model m;
	struct tp_error err;

	build("llama-2-7b.json", 0, &m);
	ck_assert_int_eq(m.arch.activation, TP_ACT_SWIGLU);
	ck_assert_int_eq(m.arch.norm, TP_NORM_RMSNORM);
	ck_assert_int_eq(m.arch.position, TP_POS_ROPE);
	ck_assert_int_eq(m.arch.tied_embeddings, TP_TRI_NO);
	ck_assert_int_eq(m.arch.qkv_bias, TP_TRI_NO);
	ck_assert_int_eq(m.arch.mlp_bias, TP_TRI_NO);
	ck_assert_int_eq(m.arch.stack, TP_STACK_DECODER);
	ck_assert_int_eq(m.arch.max_positions, 4096);
	ck_assert(m.arch.norm_eps == 1e-5 && m.arch.rope_theta == 10000);
	tp_model_release(&m);
	build("qwen2-7b.json", 0, &m);
	ck_assert_int_eq(m.arch.qkv_bias, TP_TRI_YES);
	ck_assert_int_eq(m.arch.out_bias, TP_TRI_NO);
	tp_model_release(&m);
	build("gpt2.json", 0, &m);
	ck_assert_int_eq(m.arch.activation, TP_ACT_GELU_TANH);
	ck_assert_int_eq(m.arch.norm, TP_NORM_LAYERNORM);
	ck_assert_int_eq(m.arch.position, TP_POS_LEARNED);
	ck_assert_int_eq(m.arch.max_positions, 1024);
	ck_assert_int_eq(m.arch.tied_embeddings, TP_TRI_YES);
	ck_assert_int_eq(m.arch.mlp_bias, TP_TRI_YES);
	tp_model_release(&m);
	build("t5-base.json", 0, &m);
	ck_assert_int_eq(m.arch.stack, TP_STACK_ENCODER_DECODER);
	ck_assert_int_eq(m.arch.decoder_layers, 12);
	ck_assert_int_eq(m.arch.position, TP_POS_RELATIVE);
	tp_model_release(&m);
	build("bert-large-uncased.json", 0, &m);
	ck_assert_int_eq(m.arch.stack, TP_STACK_ENCODER);
	ck_assert_int_eq(m.arch.norm_position, TP_NORMPOS_POST);
	tp_model_release(&m);
	tp_model_init(&m);
	ck_assert_int_eq(tp_build_zoo("transformer", 0, -1, &m, &err), TP_OK);
	ck_assert_int_eq(m.arch.position, TP_POS_SINUSOIDAL);
	ck_assert_int_eq(m.arch.activation, TP_ACT_RELU);
	tp_model_release(&m);
	tp_model_init(&m);
	ck_assert_int_eq(tp_build_zoo("resnet50", 0, -1, &m, &err), TP_OK);
	ck_assert_int_eq(m.arch.activation, TP_ACT_UNKNOWN); /* a CNN */
	ck_assert(tp_model_active_parameters(&m) < 0);
	tp_model_release(&m);
}
END_TEST

/* Write m, load it back into m2, write again: the same bytes. */
static void roundtrip(const struct tp_model *m, struct tp_model *m2)
{
	struct tp_strbuf a, b;
	struct tp_error err;

	tp_strbuf_init(&a);
	tp_strbuf_init(&b);
	tp_model_write(m, &a);
	tp_model_init(m2);
	ck_assert_msg(tp_model_load("m.json", a.buf, a.len, NULL, m2, &err) ==
			      TP_OK,
		      "%s", err.msg);
	tp_model_write(m2, &b);
	ck_assert_uint_eq(a.len, b.len);
	ck_assert(memcmp(a.buf, b.buf, a.len) == 0);
	tp_strbuf_release(&a);
	tp_strbuf_release(&b);
}

START_TEST(test_arch_roundtrip)
{
	static const char *const files[] = {
		"gemma-2-9b.json", "gemma-3-12b.json", "deepseek-v2-lite.json",
		"falcon-7b.json",  "qwen1.5-moe-a2.7b.json",
		"vit-base-patch16-224.json", "t5-base.json"};
	struct tp_model m, m2;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		build(files[i], 0, &m);
		roundtrip(&m, &m2);
		ck_assert_msg(memcmp(&m.arch, &m2.arch, sizeof(m.arch)) == 0,
			      "%s: arch differs after the round trip",
			      files[i]);
		ck_assert(tp_model_active_parameters(&m) ==
			  tp_model_active_parameters(&m2));
		tp_model_release(&m);
		tp_model_release(&m2);
	}
}
END_TEST

/* A one-op model whose arch is the given members. */
static enum tp_status load_arch(const char *arch, struct tp_model *m,
				struct tp_error *err)
{
	char text[2048];

	snprintf(text, sizeof(text),
		 "{\"format\": \"tagplan-model/1\", \"name\": \"a\", "
		 "\"global_batch_size\": 1, \"dtype\": \"bf16\", "
		 "\"optimizer\": \"adam\", \"arch\": {%s}, \"ops\": "
		 "[{\"name\": \"x\", \"kind\": \"matmul\", "
		 "\"forward_flop_per_sample\": 1, \"parameter_bytes\": 2, "
		 "\"output_bytes_per_sample\": 2}]}",
		 arch);
	tp_model_init(m);
	tp_error_clear(err);
	return tp_model_load("a.json", text, strlen(text), NULL, m, err);
}

START_TEST(test_arch_file_fields)
{
	struct tp_model m;
	struct tp_error err;
	char buf[2048];
	static const struct {
		const char *arch, *path, *want;
	} bad[] = {
		{"\"norm\": \"batchnorm\"", "$.arch.norm", "rmsnorm"},
		{"\"activation\": \"unknown\"", "$.arch.activation", "swiglu"},
		{"\"tied_embeddings\": 1", "$.arch.tied_embeddings", "true"},
		{"\"top_k\": -1", "$.arch.top_k", ""},
		{"\"rope_theta\": \"1e4\"", "$.arch.rope_theta", ""},
		{"\"rope_scaling\": \"a-very-long-name\"", "$.arch.rope_scaling",
		 ""},
	};

	ck_assert_int_eq(
		load_arch("\"hidden\": 64, \"activation\": \"geglu_tanh\", "
			  "\"norm\": \"layernorm_nobias\", \"norm_position\": "
			  "\"pre_post\", \"position\": \"alibi\", "
			  "\"tied_embeddings\": false, \"qkv_bias\": true, "
			  "\"rope_theta\": 500000.5, \"rope_scaling\": "
			  "\"yarn\", \"router\": \"sigmoid\", \"window\": 7, "
			  "\"stack\": \"encoder_decoder\", \"qk_norm\": "
			  "\"full\"",
			  &m, &err),
		TP_OK);
	ck_assert_int_eq(m.arch.activation, TP_ACT_GEGLU_TANH);
	ck_assert_int_eq(m.arch.norm, TP_NORM_LAYERNORM_NOBIAS);
	ck_assert_int_eq(m.arch.norm_position, TP_NORMPOS_PRE_POST);
	ck_assert_int_eq(m.arch.position, TP_POS_ALIBI);
	ck_assert_int_eq(m.arch.tied_embeddings, TP_TRI_NO);
	ck_assert_int_eq(m.arch.qkv_bias, TP_TRI_YES);
	ck_assert_int_eq(m.arch.out_bias, TP_TRI_UNKNOWN);
	ck_assert(m.arch.rope_theta == 500000.5);
	ck_assert_str_eq(m.arch.rope_scaling, "yarn");
	ck_assert_int_eq(m.arch.router, TP_ROUTER_SIGMOID);
	ck_assert_int_eq(m.arch.window, 7);
	ck_assert_int_eq(m.arch.stack, TP_STACK_ENCODER_DECODER);
	ck_assert_int_eq(m.arch.qk_norm, TP_QKNORM_FULL);
	{
		struct tp_model m2;
		roundtrip(&m, &m2);
		ck_assert(memcmp(&m.arch, &m2.arch, sizeof(m.arch)) == 0);
		tp_model_release(&m2);
	}
	tp_model_release(&m);
	/* every enum names its values; "unknown" is how absence reads,
	 * never a value in a file */
	for (int v = 1; v < TP_ACT_COUNT; v++)
		ck_assert_int_eq(tp_act_parse(tp_act_name(v)), v);
	ck_assert_int_eq(tp_act_parse("unknown"), -1);
	ck_assert_int_eq(tp_norm_parse("unknown"), -1);
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		ck_assert_int_eq(load_arch(bad[k].arch, &m, &err), TP_EINPUT);
		tp_error_format(&err, buf, sizeof(buf));
		ck_assert_msg(strstr(buf, bad[k].path) &&
				      strstr(buf, bad[k].want),
			      "%s: %s", bad[k].arch, buf);
		tp_model_release(&m);
	}
}
END_TEST

/* A model file's arch numbers, which tagplan export writes as they are,
 * take the HF fields' physical ranges (or 0, unknown): rope_theta 1e300
 * used to reach Megatron's --rotary-base. */
START_TEST(test_arch_file_ranges)
{
	static const struct {
		const char *arch, *path, *want;
	} bad[] = {
	    {"\"rope_theta\": 1e300", "$.arch.rope_theta", "at most 1e+12"},
	    {"\"rope_local_theta\": 1e13", "$.arch.rope_local_theta",
	     "at most 1e+12"},
	    {"\"norm_eps\": 1", "$.arch.norm_eps", "below 1"},
	    {"\"rope_scaling_factor\": 1e7", "$.arch.rope_scaling_factor",
	     "at most 1e+06"},
	    {"\"attn_softcap\": 1e300", "$.arch.attn_softcap", "soft-cap"},
	    {"\"logit_softcap\": 2e6", "$.arch.logit_softcap", "soft-cap"},
	    {"\"router_scale\": 1e300", "$.arch.router_scale",
	     "expected 0 (unknown) or a number above 0"},
	};
	char buf[2048], path[512], model[1024];
	struct tp_model m;
	struct tp_error err;
	struct tp_run r;

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		ck_assert_int_eq(load_arch(bad[k].arch, &m, &err), TP_EINPUT);
		tp_error_format(&err, buf, sizeof(buf));
		ck_assert_msg(strstr(buf, bad[k].path) &&
				  strstr(buf, bad[k].want),
			      "%s: %s", bad[k].arch, buf);
		tp_model_release(&m);
	}
	/* 0 (unknown) and the bounds load */
	ck_assert_int_eq(load_arch("\"rope_theta\": 1e12, \"norm_eps\": 0, "
				   "\"rope_scaling_factor\": 1e6, "
				   "\"attn_softcap\": 0, \"logit_softcap\": "
				   "30, \"router_scale\": 2.5",
				   &m, &err),
			 TP_OK);
	ck_assert(m.arch.rope_theta == 1e12 && m.arch.norm_eps == 0);
	tp_model_release(&m);
	/* export: exit 2 at the field, no flags written */
	snprintf(path, sizeof(path), "%s/theta-model.json", tp_test_tmpdir());
	snprintf(model, sizeof(model),
		 "{\"format\": \"tagplan-model/1\", \"name\": \"a\", "
		 "\"global_batch_size\": 8, \"dtype\": \"bf16\", "
		 "\"optimizer\": \"adam\", \"arch\": {\"rope_theta\": 1e300}, "
		 "\"ops\": [{\"name\": \"x\", \"kind\": \"matmul\", "
		 "\"forward_flop_per_sample\": 1, \"parameter_bytes\": 2, "
		 "\"output_bytes_per_sample\": 2}]}");
	ck_assert_int_eq(tp_test_write(path, model, strlen(model)), 0);
	{
		const char *v[] = {"tagplan", "export",	  "-m", path,
				   "-t",      "dgx-a100", "-s", "dp=8",
				   "--to",    "megatron", NULL};
		tp_run_tagplan(&r, v, NULL);
	}
	ck_assert_int_eq(r.status, 2);
	ck_assert_msg(strstr(r.err, "theta-model.json: $.arch.rope_theta"),
		      "%s", r.err);
	ck_assert_ptr_null(strstr(r.out, "--rotary-base"));
	tp_run_free(&r);
}
END_TEST

START_TEST(test_old_model_files)
{
	/* a model file written before the architecture fields (gpt2 as
	 * data/models had it): loads, its new fields are unknown, and its
	 * graph is the one built now; every shipped and test model loads */
	static const char *const shipped[] = {
		"models/gpt2.json", "models/mixtral-8x7b.json",
		"models/resnet50.json", "models/t5-base.json",
		"demo-model.json"};
	struct tp_model old, now;
	struct tp_error err;

	tp_model_init(&old);
	ck_assert_msg(tp_model_load_file(
			      tp_test_path("data/good/gpt2-v1-arch.json"),
			      NULL, &old, &err) == TP_OK,
		      "%s", err.msg);
	ck_assert_int_eq(old.arch.hidden, 768);
	ck_assert_str_eq(old.arch.family, "gpt2");
	for (size_t k = 8; k < tp_arch_n_fields; k++)
		ck_assert_msg(!tp_arch_field_set(&old.arch, &tp_arch_fields[k]),
			      "%s set in an old file", tp_arch_fields[k].key);
	build("gpt2.json", 0, &now);
	ck_assert_uint_eq(old.ops.n, now.ops.n);
	ck_assert_uint_eq(old.edges.n, now.edges.n);
	for (size_t i = 0; i < now.ops.n; i++) {
		const struct tp_op *a = &old.ops.v[i], *b = &now.ops.v[i];
		ck_assert_str_eq(a->name, b->name);
		ck_assert(a->flop == b->flop &&
			  a->backward_flop == b->backward_flop &&
			  a->param_bytes == b->param_bytes &&
			  a->out_bytes == b->out_bytes &&
			  a->saved_bytes == b->saved_bytes &&
			  a->mem_bytes == b->mem_bytes &&
			  a->tp_split == b->tp_split &&
			  a->tp_units == b->tp_units && a->layer == b->layer);
	}
	ck_assert(memcmp(&old.arch, &now.arch, 8 * sizeof(int64_t)) == 0);
	tp_model_release(&old);
	tp_model_release(&now);
	for (size_t i = 0; i < sizeof(shipped) / sizeof(shipped[0]); i++) {
		tp_model_init(&old);
		ck_assert_msg(tp_model_load_file(tp_data_file(shipped[i]), NULL,
						 &old, &err) == TP_OK,
			      "%s: %s", shipped[i], err.msg);
		tp_model_release(&old);
	}
	tp_model_init(&old);
	ck_assert_int_eq(tp_model_load_file(tp_test_path("data/good/mlp.json"),
					    NULL, &old, &err),
			 TP_OK);
	ck_assert_int_eq(old.arch.activation, TP_ACT_UNKNOWN);
	ck_assert(tp_model_active_parameters(&old) < 0);
	tp_model_release(&old);
}
END_TEST

/* tp_build_hf_text of a config given inline; returns the status and the
 * formatted error in buf. */
static enum tp_status hf_text(const char *json, int64_t seq, int dtype,
			      char *buf, size_t size)
{
	struct tp_model m;
	struct tp_error err;
	enum tp_status st;

	tp_model_init(&m);
	tp_error_clear(&err);
	st = tp_build_hf_text("c.json", json, strlen(json), seq, 0, dtype, &m,
			      &err);
	tp_error_format(&err, buf, size);
	if (!st)
		ck_assert_uint_gt(m.ops.n, 0);
	else
		ck_assert_uint_eq(m.ops.n, 0);
	tp_model_release(&m);
	return st;
}

#define LLAMA_MINI                                                            \
	"\"hidden_size\": 64, \"num_hidden_layers\": 2, "                     \
	"\"num_attention_heads\": 4, \"vocab_size\": 100"

START_TEST(test_new_errors)
{
	static const struct {
		const char *json, *want1, *want2;
	} bad[] = {
		/* a quantised checkpoint's dtype is not a training dtype */
		{"{\"model_type\": \"llama\", " LLAMA_MINI
		 ", \"torch_dtype\": \"int8\"}",
		 "$.torch_dtype", "--dtype"},
		{"{\"model_type\": \"llama\", " LLAMA_MINI
		 ", \"dtype\": \"float8_e4m3fn\"}",
		 "$.dtype", "not a dtype tagplan trains in"},
		{"{\"model_type\": \"gemma3\", \"text_config\": {}}",
		 "$.model_type", "gemma3_text"},
		{"{\"model_type\": \"qwen3_moe\", " LLAMA_MINI
		 ", \"decoder_sparse_step\": 2}",
		 "$.decoder_sparse_step", "every block"},
		{"{\"model_type\": \"qwen2_moe\", " LLAMA_MINI
		 ", \"mlp_only_layers\": [0]}",
		 "$.mlp_only_layers", "expected []"},
		{"{\"model_type\": \"qwen3_moe\", " LLAMA_MINI
		 ", \"num_experts\": 4, \"num_experts_per_tok\": 5}",
		 "$.num_experts_per_tok", "must not exceed num_experts"},
		{"{\"model_type\": \"gemma3_text\", " LLAMA_MINI
		 ", \"layer_types\": [\"sliding_attention\", "
		 "\"full_attention\", \"full_attention\"]}",
		 "$.layer_types", "not periodic"},
		{"{\"model_type\": \"dbrx\", \"d_model\": 64, \"n_layers\": 2, "
		 "\"n_heads\": 4, \"attn_config\": {\"kv_n_heads\": \"8\"}}",
		 "$.attn_config.kv_n_heads", "integer"},
		{"{\"model_type\": \"dbrx\", \"d_model\": 64, \"n_layers\": 2, "
		 "\"n_heads\": 4, \"ffn_config\": {\"moe_num_experts\": 4, "
		 "\"ffn_act_fn\": {\"name\": \"mish\"}}}",
		 "$.ffn_config.ffn_act_fn.name", "mish"},
		{"{\"model_type\": \"deepseek_v3\", " LLAMA_MINI
		 ", \"scoring_func\": \"sparsemax\"}",
		 "$.scoring_func", "softmax or sigmoid"},
		{"{\"model_type\": \"deepseek_v2\", " LLAMA_MINI
		 ", \"n_routed_experts\": 8}",
		 "$.num_experts_per_tok", "missing essential"},
		{"{\"model_type\": \"deepseek_v3\", " LLAMA_MINI
		 ", \"moe_layer_freq\": 2}",
		 "$.moe_layer_freq", "not supported"},
		{"{\"model_type\": \"falcon\", " LLAMA_MINI
		 ", \"apply_residual_connection_post_layernorm\": true}",
		 "$.apply_residual_connection_post_layernorm", "not supported"},
		{"{\"model_type\": \"vit\", \"hidden_size\": 64, "
		 "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
		 "\"image_size\": 30, \"patch_size\": 16}",
		 "$.patch_size", "must divide image_size"},
		{"{\"model_type\": \"vit\", \"hidden_size\": 64, "
		 "\"num_hidden_layers\": 2, \"num_attention_heads\": 6}",
		 "$.num_attention_heads",
		 "use 4 or 8 num_attention_heads, or hidden_size 60 or 66"},
		{"{\"model_type\": \"phi3\", \"hidden_size\": 64}",
		 "$.num_hidden_layers", "missing essential"},
		{"{\"model_type\": \"qwen3\", " LLAMA_MINI
		 ", \"rope_scaling\": {\"factor\": \"2\"}}",
		 "$.rope_scaling.factor", "number"},
	};
	char buf[2048];

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		enum tp_status st = hf_text(bad[k].json, 0, -1, buf, sizeof(buf));
		ck_assert_msg(st == TP_EINPUT, "%s: status %d", bad[k].json,
			      st);
		ck_assert_msg(strstr(buf, bad[k].want1) &&
				      strstr(buf, bad[k].want2),
			      "%s: %s", bad[k].json, buf);
		ck_assert_msg(strstr(buf, "c.json"), "%s", buf);
	}
	/* int8 with the training dtype given is fine; so are the names of
	 * the three dtypes */
	ck_assert_int_eq(hf_text("{\"model_type\": \"llama\", " LLAMA_MINI
				 ", \"torch_dtype\": \"int8\"}",
				 0, TP_DTYPE_BF16, buf, sizeof(buf)),
			 TP_OK);
	ck_assert_int_eq(hf_text("{\"model_type\": \"llama\", " LLAMA_MINI
				 ", \"torch_dtype\": \"float16\"}",
				 0, -1, buf, sizeof(buf)),
			 TP_OK);
}
END_TEST

/* The descriptive fields tagplan records but does not price (and exports
 * as they are: Megatron's --rotary-base, --norm-epsilon) are refused out
 * of a physical range, naming the field; the bounds themselves load. */
START_TEST(test_recorded_field_ranges)
{
	static const struct {
		const char *json, *path, *want;
	} bad[] = {
		{"{\"model_type\": \"llama\", " LLAMA_MINI
		 ", \"rope_theta\": 1e300}",
		 "$.rope_theta", "above 0 and at most 1e+12"},
		{"{\"model_type\": \"llama\", " LLAMA_MINI ", \"rope_theta\": 0}",
		 "$.rope_theta", "got 0"},
		{"{\"model_type\": \"mistral\", " LLAMA_MINI
		 ", \"rope_theta\": -10000}",
		 "$.rope_theta", "got -10000"},
		{"{\"model_type\": \"llama\", " LLAMA_MINI
		 ", \"rms_norm_eps\": 1e300}",
		 "$.rms_norm_eps", "above 0 and below 1"},
		{"{\"model_type\": \"qwen2\", " LLAMA_MINI
		 ", \"rms_norm_eps\": 0}",
		 "$.rms_norm_eps", "norms' epsilon"},
		{"{\"model_type\": \"gpt2\", " LLAMA_MINI
		 ", \"layer_norm_epsilon\": 1}",
		 "$.layer_norm_epsilon", "below 1"},
		{"{\"model_type\": \"bert\", " LLAMA_MINI
		 ", \"layer_norm_eps\": -1e-12}",
		 "$.layer_norm_eps", "above 0"},
		{"{\"model_type\": \"falcon\", " LLAMA_MINI
		 ", \"layer_norm_epsilon\": 1e300}",
		 "$.layer_norm_epsilon", "below 1"},
		{"{\"model_type\": \"qwen3\", " LLAMA_MINI
		 ", \"rope_scaling\": {\"type\": \"linear\", \"factor\": 0}}",
		 "$.rope_scaling.factor", "above 0 and at most 1e+06"},
		{"{\"model_type\": \"llama\", " LLAMA_MINI
		 ", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": "
		 "1e300}}",
		 "$.rope_scaling.factor", "scaling factor"},
		{"{\"model_type\": \"gemma2\", " LLAMA_MINI
		 ", \"attn_logit_softcapping\": 0}",
		 "$.attn_logit_softcapping", "null for none"},
		{"{\"model_type\": \"gemma2\", " LLAMA_MINI
		 ", \"final_logit_softcapping\": 1e300}",
		 "$.final_logit_softcapping", "at most 1e+06"},
		{"{\"model_type\": \"gemma3_text\", " LLAMA_MINI
		 ", \"rope_local_base_freq\": 1e300}",
		 "$.rope_local_base_freq", "at most 1e+12"},
		{"{\"model_type\": \"deepseek_v3\", " LLAMA_MINI
		 ", \"routed_scaling_factor\": 0}",
		 "$.routed_scaling_factor", "routed experts' scale"},
		{"{\"model_type\": \"dbrx\", \"d_model\": 64, \"n_layers\": 2, "
		 "\"n_heads\": 4, \"attn_config\": {\"rope_theta\": 1e300}}",
		 "$.attn_config.rope_theta", "at most 1e+12"},
		{"{\"model_type\": \"t5\", \"d_model\": 64, \"num_layers\": 2, "
		 "\"num_heads\": 4, \"dropout_rate\": 1.5}",
		 "$.dropout_rate", "from 0 to 1"},
		{"{\"model_type\": \"vit\", " LLAMA_MINI
		 ", \"hidden_dropout_prob\": -0.1}",
		 "$.hidden_dropout_prob", "dropout probability"},
		{"{\"model_type\": \"llama\", " LLAMA_MINI
		 ", \"rope_theta\": \"1e4\"}",
		 "$.rope_theta", "got a string"},
	};
	/* the closed bounds, and values far outside what configs publish
	 * but inside the ranges, are taken as they are */
	static const char *const good[] = {
		"{\"model_type\": \"llama\", " LLAMA_MINI
		", \"rope_theta\": 1e12, \"rms_norm_eps\": 1e-30, "
		"\"attention_dropout\": 1, \"rope_scaling\": {\"rope_type\": "
		"\"llama3\", \"factor\": 1e6}}",
		"{\"model_type\": \"t5\", \"d_model\": 64, \"num_layers\": 2, "
		"\"num_heads\": 4, \"dropout_rate\": 0}",
		"{\"model_type\": \"gemma2\", " LLAMA_MINI
		", \"attn_logit_softcapping\": 1e6, \"final_logit_softcapping\": "
		"null}",
	};
	char buf[2048];

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		enum tp_status st = hf_text(bad[k].json, 0, -1, buf, sizeof(buf));
		ck_assert_msg(st == TP_EINPUT, "%s: status %d", bad[k].json,
			      st);
		ck_assert_msg(strstr(buf, bad[k].path) &&
				      strstr(buf, bad[k].want),
			      "%s: %s", bad[k].json, buf);
		ck_assert_msg(strstr(buf, "c.json"), "%s", buf);
	}
	for (size_t k = 0; k < sizeof(good) / sizeof(good[0]); k++)
		ck_assert_msg(hf_text(good[k], 0, -1, buf, sizeof(buf)) ==
				      TP_OK,
			      "%s: %s", good[k], buf);
}
END_TEST

/* ... and from the command line: exit 2, the file and the key named,
 * nothing written. */
START_TEST(test_cli_recorded_field_range)
{
	static const char cfg[] =
		"{\"model_type\": \"llama\", " LLAMA_MINI
		", \"rope_theta\": 1e300}\n";
	char in[512], arg[600], out[512];
	struct tp_run r;

	snprintf(in, sizeof(in), "%s/theta-config.json", tp_test_tmpdir());
	snprintf(out, sizeof(out), "%s/theta-model.json", tp_test_tmpdir());
	ck_assert_int_eq(tp_test_write(in, cfg, strlen(cfg)), 0);
	snprintf(arg, sizeof(arg), "hf:%s", in);
	{
		const char *v[] = {"tagplan", "model", arg, "-o", out, NULL};
		tp_run_tagplan(&r, v, NULL);
	}
	ck_assert_int_eq(r.status, 2);
	ck_assert_msg(strstr(r.err, "theta-config.json: $.rope_theta: "
				    "expected a number above 0 and at most "
				    "1e+12") &&
			      strstr(r.err, "got 1e+300"),
		      "%s", r.err);
	ck_assert_ptr_null(tp_test_read(out, NULL));
	tp_run_free(&r);
}
END_TEST

START_TEST(test_nearest_family)
{
	/* an unsupported model_type names the supported one whose reader
	 * knows most of its fields, and the fields that differ */
	static const struct {
		const char *json, *nearest, *diff;
	} cases[] = {
		/* MPT: d_model, n_heads, n_layers, attn_config: DBRX's
		 * names (DBRX grew out of MPT) */
		{"{\"model_type\": \"mpt\", \"d_model\": 2048, \"n_heads\": 16, "
		 "\"n_layers\": 24, \"max_seq_len\": 2048, \"vocab_size\": "
		 "50368, \"expansion_ratio\": 4, \"attn_config\": {}, "
		 "\"no_bias\": true}",
		 "\"dbrx\"", "expansion_ratio, no_bias"},
		/* a Qwen2 vision-language config: the name's prefix */
		{"{\"model_type\": \"qwen2_vl\", " LLAMA_MINI
		 ", \"vision_config\": {}, \"architectures\": "
		 "[\"Qwen2VLForConditionalGeneration\"]}",
		 "\"qwen2", "vision_config"},
		/* GPT-J: n_embd, n_layer, n_head like GPT-2 */
		{"{\"model_type\": \"gptj\", \"n_embd\": 4096, \"n_layer\": 28, "
		 "\"n_head\": 16, \"n_positions\": 2048, \"rotary_dim\": 64, "
		 "\"vocab_size\": 50400, \"architectures\": "
		 "[\"GPTJForCausalLM\"]}",
		 "\"gpt2\"", "rotary_dim"},
	};
	char buf[2048];

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		ck_assert_int_eq(hf_text(cases[k].json, 0, -1, buf, sizeof(buf)),
				 TP_EINPUT);
		ck_assert_msg(strstr(buf, "$.model_type") &&
				      strstr(buf, "nearest supported is") &&
				      strstr(buf, cases[k].nearest) &&
				      strstr(buf, cases[k].diff),
			      "%s", buf);
		ck_assert_msg(strstr(buf, "deepseek_v3, dbrx, vit"), "%s", buf);
	}
}
END_TEST

START_TEST(test_cli_inspect_active)
{
	struct tp_run r;
	char cfg[512], out[512];

	snprintf(cfg, sizeof(cfg), "hf:%s",
		 tp_test_path("data/hf/qwen1.5-moe-a2.7b.json"));
	snprintf(out, sizeof(out), "%s/moe.json", tp_test_tmpdir());
	{
		const char *v[] = {"tagplan", "model", cfg, "-o", out, NULL};
		tp_run_tagplan(&r, v, NULL);
	}
	ck_assert_int_eq(r.status, 0);
	ck_assert_msg(strstr(r.err, "14.32 B, 2.689 B active"), "%s", r.err);
	tp_run_free(&r);
	{
		const char *v[] = {"tagplan", "inspect", out, NULL};
		tp_run_tagplan(&r, v, NULL);
	}
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "\"parameters\": 14315784192"));
	ck_assert_ptr_nonnull(
		strstr(r.out, "\"active_parameters\": 2689173504"));
	ck_assert_ptr_nonnull(strstr(r.out, "\"shared_expert_gate\": true"));
	ck_assert_ptr_nonnull(strstr(r.out, "\"activation\": \"swiglu\""));
	tp_run_free(&r);
	/* a dense model has no active_parameters */
	{
		const char *v[] = {"tagplan", "inspect",
				   tp_data_file("models/llama-2-7b.json"), NULL};
		tp_run_tagplan(&r, v, NULL);
	}
	ck_assert_int_eq(r.status, 0);
	ck_assert_ptr_null(strstr(r.out, "active_parameters"));
	ck_assert_ptr_nonnull(strstr(r.out, "\"position\": \"rope\""));
	tp_run_free(&r);
	/* the int8 error from the command line: exit 2, nothing written */
	snprintf(out, sizeof(out), "%s/never.json", tp_test_tmpdir());
	snprintf(cfg, sizeof(cfg), "hf:%s",
		 tp_test_path("data/hf/bad/int8.json"));
	{
		const char *v[] = {"tagplan", "model", cfg, "-o", out, NULL};
		tp_run_tagplan(&r, v, NULL);
	}
	ck_assert_int_eq(r.status, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "$.torch_dtype"));
	ck_assert_ptr_null(tp_test_read(out, NULL));
	tp_run_free(&r);
}
END_TEST

Suite *suite_arch(void)
{
	Suite *s = suite_create("arch");
	TCase *tc = tcase_create("hf-2025");

	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_new_types_parameters, 0,
			    (int)(sizeof(published) / sizeof(published[0])));
	tcase_add_test(tc, test_exact_published_splits);
	tcase_add_test(tc, test_active_parameters_formula);
	tcase_add_test(tc, test_gemma_windows_and_norms);
	tcase_add_test(tc, test_qwen_phi_olmo_details);
	tcase_add_test(tc, test_falcon_parallel_block);
	tcase_add_test(tc, test_deepseek_mla_and_experts);
	tcase_add_test(tc, test_qwen_moe_dbrx);
	tcase_add_test(tc, test_vit);
	tcase_add_test(tc, test_new_errors);
	tcase_add_test(tc, test_recorded_field_ranges);
	tcase_add_test(tc, test_cli_recorded_field_range);
	tcase_add_test(tc, test_nearest_family);
	suite_add_tcase(s, tc);
	tc = tcase_create("arch-file");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_existing_types_arch);
	tcase_add_test(tc, test_arch_roundtrip);
	tcase_add_test(tc, test_arch_file_fields);
	tcase_add_test(tc, test_arch_file_ranges);
	tcase_add_test(tc, test_old_model_files);
	tcase_add_test(tc, test_cli_inspect_active);
	suite_add_tcase(s, tc);
	return s;
}
