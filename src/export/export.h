/*
 * export.h - a plan as the launch configuration of the runtime it was
 * made for: Megatron-LM arguments, a DeepSpeed config, a torchrun command
 * line, a TorchTitan job config (.toml).
 *
 * A plan is exported for one runtime profile (core/runtime.h): the one it
 * records, or, for a plan made without one, the profile a target stands
 * for (tp_export_target_runtime).  tp_export_analyze refuses what the
 * runtime cannot execute (tp_runtime_plan_check's sentence, the same the
 * search keeps to) and extracts the uniform strategy: degrees, layer
 * counts per pipeline chunk, batch sizes, the ranks' placement on nodes,
 * the precision the devices have.  tp_export_write writes the target's
 * output with the flags that build the model that was simulated (its
 * architecture, core/model.h tp_arch) and run it as simulated (the
 * runtime's gradient overlap and bucket, in its unit and dtype); what it
 * cannot say goes to the notes.
 *
 * Errors: TP_EINFEASIBLE (exit 1) naming the part of the plan the
 * runtime or target cannot express; TP_EINPUT when the plan does not
 * match the model/cluster.  Nothing here prints.
 *
 * Ownership: a spec is caller-embedded; tp_export_spec_release frees it
 * (also after a failed analyze).
 */
#ifndef TP_EXPORT_H
#define TP_EXPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/runtime.h"
#include "core/strbuf.h"

enum tp_export_target {
	TP_EXPORT_MEGATRON,
	TP_EXPORT_DEEPSPEED,
	TP_EXPORT_TORCHRUN,
	TP_EXPORT_TORCHTITAN,
	TP_EXPORT_TARGET_COUNT
};

/* "megatron", "deepspeed", "torchrun", "torchtitan" -> target; -1 when
 * unknown. */
int tp_export_target_parse(const char *name);
const char *tp_export_target_name(enum tp_export_target t);

/* The target a runtime's launcher writes (TP_EXPORT_TARGET_COUNT for
 * "none"). */
enum tp_export_target tp_export_target_of(const struct tp_runtime *rt);
/* The shipped profile a target stands for when the plan names no
 * runtime: megatron-core, deepspeed, megatron-core (torchrun runs
 * Megatron), fsdp2. */
const char *tp_export_target_runtime(enum tp_export_target t);
/* May target t launch plans made for rt?  Its own launcher, and torchrun
 * for a Megatron runtime (torchrun runs pretrain_gpt.py). */
bool tp_export_target_fits(enum tp_export_target t,
			   const struct tp_runtime *rt);

/* A node the job uses, in rank order. */
struct tp_export_node {
	uint32_t node;	     /* index into the cluster's nodes */
	char name[64];	     /* its name */
	uint32_t first_rank; /* its ranks: first_rank .. + n_ranks */
	uint32_t n_ranks;
	char visible[128]; /* CUDA_VISIBLE_DEVICES in local-rank order */
	bool whole;	   /* every GPU of the node, in order */
};

/* The uniform strategy of a plan. */
struct tp_export_spec {
	struct tp_runtime rt; /* the runtime it is exported for */
	uint32_t tp, pp, dp;
	uint32_t ep; /* expert parallelism of the groups with routed experts
			(1 = none); only Megatron-Core's targets write it */
	uint32_t etp; /* expert tensor parallelism: 1 when the groups with
			 routed experts run them whole (plan.h etp),
			 0 = tp (no flag) */
	double capacity_factor; /* the plan's expert_capacity_factor (0 =
				   dropless) */
	uint32_t cp;		  /* context parallelism (1 = none) */
	uint32_t virtual_stages;  /* chunks per stage (1 unless interleaved) */
	int64_t layers;		  /* transformer layers of the model, 0 none */
	int64_t layers_per_chunk; /* when every chunk holds the same, else 0 */
	uint32_t n_chunks;	  /* pp x V */
	int64_t *chunk_layers;	  /* per chunk, in model order */
	enum tp_layer_layout layout; /* the one the chunks need */
	int64_t global_batch;
	uint32_t micro_batches;
	int64_t micro_batch; /* samples per replica per micro-batch */
	enum tp_schedule schedule;
	enum tp_recompute recompute;
	enum tp_sync sync;
	bool sync_differs; /* a group's sync is not the runtime's
			      collectives' (tp_runtime_sync) */
	bool sp;
	uint32_t zero;
	uint32_t world;		 /* ranks = tp * cp * pp * dp */
	uint32_t idle;		 /* devices of the topology without a rank */
	uint32_t nnodes;	 /* nodes holding ranks */
	uint32_t nproc_per_node; /* 0 when they hold different counts */
	struct tp_export_node *nodes; /* nnodes, in rank order */
	bool natural_ranks;	 /* rank = device index, every device used */
	bool mixed_types;	 /* more than one device type */
	enum tp_dtype dtype;	 /* the model's */
	enum tp_dtype run_dtype; /* what the devices run: fp16 where the
				    model is bf16 and a device has none */
	char precision_note[256]; /* the fallback (core/precision.h), or "" */
	struct tp_arch arch;
	const char *model_name;
	int64_t seq_len;
	double grad_bucket_bytes; /* the plan's; 0 = the simulator's default */
	const char *config_path;  /* where the caller writes the DeepSpeed
				     config, for the launch line (borrowed;
				     set after tp_export_analyze); NULL:
				     ds_config.json */
};

/* Extract the uniform strategy of p for runtime rt, or say
 * (TP_EINFEASIBLE) what rt cannot execute. */
enum tp_status
tp_export_analyze(const struct tp_plan *p, const struct tp_model *m,
		  const struct tp_cluster *c, const struct tp_runtime *rt,
		  struct tp_export_spec *spec, struct tp_error *err);
void tp_export_spec_release(struct tp_export_spec *spec);

/* The mark that begins a warning's line in tp_export_write's notes. */
#define TP_EXPORT_WARNING "warning: "
/* The mark that begins the line saying how to start the run (DeepSpeed's
 * launch line, whose config alone does not start anything): output the
 * user needs, so it is neither a note nor a warning. */
#define TP_EXPORT_LAUNCH "launch: "

/*
 * Append the target's output to out: Megatron-LM arguments, one
 * "--flag [value]" per line (word-splits cleanly in $(...)); a DeepSpeed
 * config as JSON (its launch line with the Megatron-DeepSpeed arguments
 * in the notes); a torchrun command (backslash-continued) running
 * `script` (NULL: pretrain_gpt.py, or train.py for a DDP runtime); a
 * TorchTitan job config.  Lines for the user (what the output leaves to
 * the model code, what it cannot say) are appended to notes when
 * non-NULL, one per line; a line that begins with TP_EXPORT_WARNING is a
 * warning: the output will not run as simulated (the model it builds
 * differs, the job reduces or shards otherwise) unless the user acts
 * (adds flags, picks the script, starts the nodes as the lines say);
 * a line that begins with TP_EXPORT_LAUNCH is the command that starts
 * the run.  The rest are notes.  TP_EINFEASIBLE for the target's own limits.
 */
enum tp_status tp_export_write(const struct tp_export_spec *s,
			       enum tp_export_target t, const char *script,
			       struct tp_strbuf *out, struct tp_strbuf *notes,
			       struct tp_error *err);

/* The gradient bucket the plan was simulated with, in the elements of
 * the dtype the runtime reduces in (Megatron's --ddp-bucket-size,
 * DeepSpeed's reduce_bucket_size). */
double tp_export_bucket_elements(const struct tp_export_spec *s);

#endif
