/*
 * build.h - models and topologies built from compact descriptions:
 * GPT dimensions, HuggingFace config.json files, the model zoo, and
 * topology presets ("dgx-a100:4 --net ib-hdr") and nvidia-smi matrices.
 *
 * All builders fill caller-initialised IR (tp_model_init /
 * tp_cluster_init) and finalize it; on failure the IR is released and
 * re-initialised and err says which field or argument is wrong.
 *
 * Model conventions (all builders):
 *  - Costs are per sample (one sequence of seq tokens; one image).  FLOP
 *    counts a multiply-add as 2 FLOP (torchvision's and thop's "FLOPS"/
 *    "MACs" count it as 1: our CNN totals are 2 x theirs, plus the
 *    elementwise ops they leave out).  Backward FLOP = 2 x forward.
 *  - Transformers: one op per Megatron sub-layer: ln1, qkv (column, units
 *    = KV heads), attn (sharded, selective_recompute), proj (row), drop1
 *    (dropout + residual), ln2, fc1 (column), gelu/relu/swiglu/geglu
 *    (sharded), fc2 (row), drop2; "res1"/"res2" instead of drop1/drop2
 *    when the architecture has no dropout; encoder-decoder blocks add
 *    cross_ln, cross_q, cross_kv, cross_attn, cross_proj, cross_drop.  Op
 *    names are "layer<i>.<sub-layer>"; "layer" = block index (decoder
 *    blocks of encoder-decoder models continue after the encoder's), the
 *    embedding, final norm, LM head and loss have layer -1 (first/last
 *    pipeline stage by their position).  FLOP: QKV 2sh(h + 2kv*h/a),
 *    attention 4s^2 h (Megatron's count; causal masking is not halved),
 *    projection 2sh^2, MLP 2sh*ffn per GEMM, LM head 2shV; norms and
 *    elementwise ops a few FLOP per element (memory bound, their
 *    memory_bytes are the bytes read + written).  Saved activations follow
 *    Korthikanti et al. 2022: a GPT block saves 34sh + 5as^2 bytes in
 *    16-bit (ln1 4sh, qkv 6sh, attn 5as^2, proj 2sh, drop1 sh, ln2 4sh,
 *    fc1 8sh, gelu 8sh, drop2 sh), of which the ops with tp_split none
 *    (10sh) stay whole under tensor parallelism and the rest splits.  The
 *    LM head is tied to the embedding (counted once, in "embedding") for
 *    GPT; the loss keeps the fp32 softmax (4sV bytes).
 *  - Mixture of experts: per layer a "router" op, E experts as separate
 *    ops ("layer<i>.expert<j>.fc1/act/fc2", each on s*k/E tokens with
 *    balanced routing), the shared experts as one fused MLP
 *    ("layer<i>.shared_expert.fc1/act/fc2", all s tokens) and a "combine"
 *    op; the first arch.first_dense_layers blocks keep a dense MLP.  These
 *    names are how the expert structure is found (model.h,
 *    tp_model_active_parameters).
 *  - Variants of the block (src/io/README section 8): norms after the
 *    sub-layers ("post_ln1", "post_ln2"; Gemma 2/3 keep ln1/ln2 too, OLMo 2
 *    has only these), parallel attention and MLP (Falcon: one "res2" adds
 *    x, proj and fc2), multi-head latent attention (DeepSeek: q_down,
 *    q_norm, q_up, kv_down, kv_norm, kv_up, attn, proj), vision (ViT:
 *    "patch_embedding", the blocks, "final_norm", "classifier", "loss").
 *  - Every builder records the architecture in m->arch (core/model.h).
 *  - Parameters are counted as HuggingFace/torchvision count them
 *    (learnable weights; BatchNorm running statistics excluded).
 */
#ifndef TP_BUILD_H
#define TP_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"
#include "core/model.h"

/* A GPT-style decoder (Megatron's GPT): embedding, L blocks, LM head. */
struct tp_gpt_dims {
	int64_t hidden, layers, heads, seq, vocab, batch;
	int64_t ffn;      /* 0 = 4 * hidden */
	int64_t kv_heads; /* 0 = heads (no grouped-query attention) */
	enum tp_dtype dtype; /* default bf16 */
	const char *name;    /* NULL = "gpt" */
	/* dropout: 0 = Megatron's (after attention and MLP and on the
	   attention probabilities); TP_GPT_NO_ATTN_DROPOUT: none on the
	   attention probabilities (OPT); TP_GPT_NO_DROPOUT: none at all
	   (GPT-Neo, Llama) */
	int dropout;
};
#define TP_GPT_NO_ATTN_DROPOUT 1
#define TP_GPT_NO_DROPOUT 2

/* Zero everything and set dtype bf16. */
void tp_gpt_dims_default(struct tp_gpt_dims *d);

/* A GPT in m (initialised).  ffn 0 = 4 * hidden, kv_heads 0 = heads.
 * TP_EINPUT naming the dimension when one is out of range or heads do
 * not divide hidden or kv_heads does not divide heads; TP_ELIMIT when a
 * transformer would have more than 200000 ops (all builders). */
enum tp_status tp_build_gpt(const struct tp_gpt_dims *d, struct tp_model *m,
			    struct tp_error *err);

/* HF config.json -> model for model_type llama, mistral, mixtral, qwen2,
 * qwen2_moe, qwen3, qwen3_moe, gemma, gemma2, gemma3_text, phi3, olmo,
 * olmo2, gpt2, bert, t5, falcon, deepseek_v2, deepseek_v3, dbrx, vit.
 * seq 0 = the config's context length capped at 4096 (BERT/GPT-2: their
 * position table; T5: 512 encoder tokens, a T5 decoder gets seq / 4
 * tokens; ViT: its patches and CLS token, and seq > 0 is TP_EUSAGE);
 * batch 0 = 256 sequences; dtype < 0 = from the config's torch_dtype
 * (float16, bfloat16, float32; absent: bf16; any other value TP_EINPUT).
 * TP_EINPUT with the JSON path of the offending field for an unknown
 * model_type (naming the nearest supported type and the fields that
 * differ), a field of the wrong type or range, a missing essential field
 * (hidden size, layers, heads), a feature not modelled (an expert layer
 * not in every block, ...); TP_EUSAGE when seq exceeds a learned position
 * table; TP_EIO when the file cannot be read. */
enum tp_status tp_build_hf(const char *config_path, int64_t seq,
			   int64_t batch, int dtype, struct tp_model *m,
			   struct tp_error *err);

/* tp_build_hf with its arguments named, and warnings: NULL drops them,
 * else each is appended as one line ending in '\n' (as the loaders'
 * tp_load_options.warnings).  A --seq beyond the context length of a model
 * without a learned position table (RoPE, ALiBi: max_position_embeddings
 * or the type's default; not T5) is a warning naming the field and its
 * value, not an error: RoPE scaling and long-context fine-tuning train
 * there, and the model is built for the sequence given. */
struct tp_strbuf;
struct tp_hf_options {
	int64_t seq, batch; /* 0: the defaults of tp_build_hf */
	int dtype;          /* < 0: the config's torch_dtype */
	struct tp_strbuf *warnings;
};
enum tp_status tp_build_hf_opts(const char *config_path,
				const struct tp_hf_options *o,
				struct tp_model *m, struct tp_error *err);

/* The same from a config's text; name is the file name for messages
 * and the model's name. */
enum tp_status tp_build_hf_text(const char *name, const char *text,
				size_t len, int64_t seq, int64_t batch,
				int dtype, struct tp_model *m,
				struct tp_error *err);

/* Zoo model by name ("resnet50", "vgg19", "gpt3-175b", ...); batch 0 =
 * the zoo default. */
enum tp_status tp_build_zoo(const char *name, int64_t batch, int dtype,
			    struct tp_model *m, struct tp_error *err);
/* Names of the zoo, NULL-terminated. */
extern const char *const tp_zoo_names[];
/* One line about a zoo model (what, input, default batch and dtype), or
 * NULL for an unknown name. */
const char *tp_zoo_about(const char *name);

/* Topology from preset specs ("dgx-a100:4", "v100-nvlink:2", ...), a
 * network name ("ib-hdr", "25gbe", ...; NULL = the presets' default) and an
 * oversubscription factor (>= 1). */
enum tp_status tp_build_topology(const char *const *specs, int n_specs,
				 const char *network, double oversubscription,
				 struct tp_cluster *c, struct tp_error *err);
/* The same over a fabric: NULL = the star; "clos:leaf=N[,spine=M]
 * [,oversubscription=X][,latency=S]" = switch tiers (struct tp_tier):
 * leaves of N nodes (their uplinks divided by `oversubscription` as in
 * the star), spines of M leaves (all leaves when no spine=) and, with
 * spine=, one core switch above the spines; the leaf-to-spine uplinks
 * are divided by X (default 1); every spine and core switch crossed adds
 * S seconds (default 5e-7, ASSUMPTION).  TP_EUSAGE on a bad spec. */
enum tp_status tp_build_topology_fabric(const char *const *specs, int n_specs,
					const char *network,
					double oversubscription,
					const char *fabric,
					struct tp_cluster *c,
					struct tp_error *err);
/* The name of node preset i, in the presets table's order (the order of
 * `tagplan topo --help`), or NULL past the last one. */
const char *tp_node_preset_name(size_t i);
/* Names of the networks, NULL-terminated. */
extern const char *const tp_network_names[];
/* Named compositions usable as a spec ("tag-testbed"), NULL-terminated. */
extern const char *const tp_topology_composition_names[];
/* One line about a preset, composition or network (what it is, where its
 * figures come from), or NULL for an unknown name. */
const char *tp_node_preset_about(const char *name);
const char *tp_network_about(const char *name);
/* Node preset `name`'s device type, GPUs per node and PCIe rate per
 * direction (0 when its NICs sit on the accelerator, no PCIe between);
 * false for an unknown name. */
bool tp_node_preset_info(const char *name, const char **gpu, uint32_t *gpus,
			 double *pcie_Bps);
/* Device type `type`'s host bus (data/devices.json names, exactly): its
 * PCIe x16 rate and one NVLink's rate, bytes/s per direction (0: no
 * NVLink); false for a type the table does not list. */
bool tp_gpu_bus(const char *type, double *pcie_Bps, double *nvlink_Bps);

/* One-node topology from the matrix `nvidia-smi topo -m` prints, with all
 * GPUs of the given device type. */
enum tp_status tp_build_topology_nvidia_smi(const char *text, size_t len,
					    const char *file_name,
					    const char *gpu_type,
					    struct tp_cluster *c,
					    struct tp_error *err);

#endif
