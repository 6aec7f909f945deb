/*
 * cases.h - the models and clusters of the search benchmarks
 * (bench_search.c, bench_runtime.c): VGG-19, ResNet-50, Inception-v3,
 * Transformer (base), BERT-large (zoo builders), GPT-2 XL (GPT builder)
 * and Llama-2-7B (HF config builder) on the TAG testbed, 2 DGX-1 + 8
 * GTX 1080 Ti on 25 GbE, 4 and 128 DGX-A100 on HDR InfiniBand.
 */
#ifndef TP_BENCH_CASES_H
#define TP_BENCH_CASES_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cluster.h"
#include "core/model.h"
#include "io/build.h"
#include "io/io.h"

enum cl { CL_TAG, CL_MIX, CL_DGX, CL_DGX128 };

static const char *const cl_name[] = {"tag", "mix", "dgx", "dgx128"};

static const char llama2_7b[] =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": "
    "\"llama\", \"hidden_size\": 4096, \"intermediate_size\": 11008, "
    "\"num_attention_heads\": 32, \"num_hidden_layers\": 32, "
    "\"num_key_value_heads\": 32, \"vocab_size\": 32000, "
    "\"max_position_embeddings\": 4096, \"rms_norm_eps\": 1e-05, "
    "\"tie_word_embeddings\": false, \"torch_dtype\": \"float16\"}\n";

static enum tp_status build_model(const char *name, struct tp_model *m,
				  struct tp_error *err)
{
	tp_model_init(m);
	if (strcmp(name, "gpt2-xl") == 0) {
		struct tp_gpt_dims d;
		memset(&d, 0, sizeof(d));
		d.hidden = 1600;
		d.layers = 48;
		d.heads = 25;
		d.seq = 1024;
		d.vocab = 50257;
		d.batch = 512;
		d.dtype = TP_DTYPE_FP16;
		d.name = "gpt2-xl";
		return tp_build_gpt(&d, m, err);
	}
	if (strcmp(name, "llama-2-7b") == 0) {
		char path[] = "/tmp/tagplan-bench-llamaXXXXXX";
		int fd = mkstemp(path);
		enum tp_status st;
		if (fd < 0 || write(fd, llama2_7b, sizeof(llama2_7b) - 1) !=
				  (ssize_t)(sizeof(llama2_7b) - 1)) {
			if (fd >= 0)
				close(fd);
			return tp_error_set(err, TP_EIO, "cannot write %s",
					    path);
		}
		close(fd);
		st = tp_build_hf(path, 4096, 128, -1, m, err);
		unlink(path);
		return st;
	}
	return tp_build_zoo(name, 0, -1, m, err);
}

static enum tp_status build_cluster(enum cl k, struct tp_cluster *c,
				    struct tp_error *err)
{
	tp_cluster_init(c);
	switch (k) {
	case CL_TAG: {
		char path[4096];
		struct tp_load_options lo;
		enum tp_status st =
		    tp_data_path("tag-testbed.json", path, sizeof(path), err);
		if (st)
			return st;
		tp_load_options_default(&lo);
		return tp_topology_load_file(path, &lo, c, err);
	}
	case CL_MIX: {
		const char *specs[] = {"dgx1-v100:2", "1080ti-pcie:4"};
		return tp_build_topology(specs, 2, "25gbe", 1, c, err);
	}
	case CL_DGX: {
		const char *specs[] = {"dgx-a100:4"};
		return tp_build_topology(specs, 1, "ib-hdr", 1, c, err);
	}
	case CL_DGX128: {
		const char *specs[] = {"dgx-a100:128"};
		return tp_build_topology(specs, 1, "ib-hdr", 1, c, err);
	}
	}
	return TP_EINTERNAL;
}

#endif
