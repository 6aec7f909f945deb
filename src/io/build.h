/*
 * build.h - models and topologies built from compact descriptions:
 * GPT dimensions, HuggingFace config.json files, the model zoo, and
 * topology presets ("dgx-a100:4 --net ib-hdr") and nvidia-smi matrices.
 *
 * All builders fill caller-initialised IR (tp_model_init /
 * tp_cluster_init) and finalize it; on failure the IR is released and
 * re-initialised and err says which field or argument is wrong.
 * Granularity and FLOP/byte conventions: src/io/README.
 */
#ifndef TP_BUILD_H
#define TP_BUILD_H

#include <stdint.h>

#include "../core/cluster.h"
#include "../core/error.h"
#include "../core/model.h"

/* A GPT-style decoder (Megatron's GPT): embedding, L blocks, LM head. */
struct tp_gpt_dims {
	int64_t hidden, layers, heads, seq, vocab, batch;
	int64_t ffn;      /* 0 = 4 * hidden */
	int64_t kv_heads; /* 0 = heads (no grouped-query attention) */
	enum tp_dtype dtype; /* default bf16 */
	const char *name;    /* NULL = "gpt" */
};

enum tp_status tp_build_gpt(const struct tp_gpt_dims *d, struct tp_model *m,
			    struct tp_error *err);

/* HF config.json -> model.  seq 0 / batch 0 = defaults documented in
 * tagplan(1); dtype < 0 = from the config's torch_dtype (else bf16). */
enum tp_status tp_build_hf(const char *config_path, int64_t seq,
			   int64_t batch, int dtype, struct tp_model *m,
			   struct tp_error *err);

/* Zoo model by name ("resnet50", "vgg19", "gpt3-175b", ...); batch 0 =
 * the zoo default. */
enum tp_status tp_build_zoo(const char *name, int64_t batch, int dtype,
			    struct tp_model *m, struct tp_error *err);
/* Names of the zoo, NULL-terminated. */
extern const char *const tp_zoo_names[];

/* Topology from preset specs ("dgx-a100:4", "v100-nvlink:2", ...), a
 * network name ("ib-hdr", "25gbe", ...; NULL = the presets' default) and an
 * oversubscription factor (>= 1). */
enum tp_status tp_build_topology(const char *const *specs, int n_specs,
				 const char *network, double oversubscription,
				 struct tp_cluster *c, struct tp_error *err);
/* Names of the node presets and networks, NULL-terminated. */
extern const char *const tp_node_preset_names[];
extern const char *const tp_network_names[];

/* One-node topology from the matrix `nvidia-smi topo -m` prints, with all
 * GPUs of the given device type. */
enum tp_status tp_build_topology_nvidia_smi(const char *text, size_t len,
					    const char *file_name,
					    const char *gpu_type,
					    struct tp_cluster *c,
					    struct tp_error *err);

#endif
