/*
 * export.h - a plan as training-launcher input: Megatron-LM arguments, a
 * DeepSpeed config, a torchrun command line.
 *
 * Only plans those frameworks can express are exported: one tensor- and
 * data-parallel degree for the whole model, even batch shares, pipeline
 * chunks holding equal numbers of layers in round-robin order, devices in
 * Megatron's rank order (tensor rank fastest, then data, then pipeline,
 * rank = device index in the topology), no parameter server and no
 * gradient compression.  tp_export_analyze checks all that and extracts
 * the uniform strategy; tp_export_write adds the target's own limits
 * (Megatron: ZeRO <= 1, no GPipe; DeepSpeed: no interleaving, ZeRO <= 1
 * with pipelining; torchrun: the same GPU count on every node).
 *
 * Errors: TP_EINFEASIBLE (exit 1) naming the part of the plan the target
 * cannot express (group, figure, what it would need); TP_EINPUT when the
 * plan does not match the model/cluster.  Nothing here prints.
 */
#ifndef TP_EXPORT_H
#define TP_EXPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/strbuf.h"

enum tp_export_target {
	TP_EXPORT_MEGATRON,
	TP_EXPORT_DEEPSPEED,
	TP_EXPORT_TORCHRUN,
	TP_EXPORT_TARGET_COUNT
};

/* "megatron", "deepspeed", "torchrun" -> target; -1 when unknown. */
int tp_export_target_parse(const char *name);
const char *tp_export_target_name(enum tp_export_target t);

/* The uniform strategy of a plan. */
struct tp_export_spec {
	uint32_t tp, pp, dp;
	uint32_t virtual_stages;   /* chunks per stage (1 unless interleaved) */
	int64_t layers;            /* transformer layers of the model, 0 none */
	int64_t layers_per_chunk;  /* 0 when the model has no layers */
	int64_t global_batch;
	uint32_t micro_batches;
	int64_t micro_batch;       /* samples per replica per micro-batch */
	enum tp_schedule schedule;
	enum tp_recompute recompute;
	bool sp;
	uint32_t zero;
	uint32_t world;            /* devices = tp * pp * dp */
	uint32_t nnodes;
	uint32_t nproc_per_node;   /* 0 when nodes differ in GPU count */
	bool mixed_types;          /* more than one device type */
	enum tp_dtype dtype;
	struct tp_arch arch;
	int64_t seq_len;
	double grad_bucket_bytes;  /* the plan's; 0 = the simulator's default */
};

/* Extract the uniform strategy of p, or say (TP_EINFEASIBLE) which part
 * no launcher can express. */
enum tp_status tp_export_analyze(const struct tp_plan *p,
				 const struct tp_model *m,
				 const struct tp_cluster *c,
				 struct tp_export_spec *spec,
				 struct tp_error *err);

/*
 * Append the target's output to out: Megatron-LM arguments, one
 * "--flag [value]" per line (word-splits cleanly in $(...)); a DeepSpeed
 * config as JSON; a torchrun command (backslash-continued) running
 * `script` (NULL: "pretrain_gpt.py") with the Megatron arguments.  Lines
 * for the user (what the output leaves to the model code) are appended
 * to notes when non-NULL.  TP_EINFEASIBLE for the target's own limits.
 */
enum tp_status tp_export_write(const struct tp_export_spec *s,
			       enum tp_export_target t, const char *script,
			       struct tp_strbuf *out, struct tp_strbuf *notes,
			       struct tp_error *err);

#endif
