/*
 * strategy.h - uniform 3D strategies written as strings, and their
 * expansion into a plan.
 *
 *   tp=8,pp=8,dp=16,mb=1,gbs=1536,schedule=interleaved:3,
 *   recompute=selective,sp=on,zero=1
 *
 * Keys (all optional; defaults in brackets): tp [1], pp [1],
 * cp context parallelism [1], dp [devices / (tp*cp*pp)], mb micro-batch size per replica in samples [1],
 * gbs global batch [the model's], schedule gpipe|1f1b|interleaved:V|
 * zb-h1 [1f1b], recompute none|selective|full [none], sp on|off [off],
 * zero 0..3 [0], sync ring|hierarchical|ps [hierarchical when a replica
 * set spans nodes, else ring], ep expert-parallel degree [1] (dividing
 * the routed experts and dp; groups without routed experts keep 1),
 * imbalance the busiest expert-parallel rank's load over the mean [the
 * simulator's, 1.25], capacity the expert capacity factor [dropless],
 * first_layers / last_layers the transformer layers of the first / last
 * pipeline stage [even] (Megatron-Core's --decoder-first/last-pipeline-
 * num-layers: the other stages share the rest equally, each stage's
 * layers split equally over its V chunks when interleaved).
 * dp=auto, gbs=model and sync=auto name the defaults (tp_strategy_format
 * writes them so; it writes ep, cp, imbalance, capacity, first_layers,
 * last_layers, account_embedding and account_loss only when not their
 * defaults, so strings of older plans
 * read as before).
 *
 * Expansion follows Megatron-Core's rank order (tensor fastest, then
 * context, then data, then pipeline): stage s uses devices
 * [s*n, (s+1)*n) in topology order, n = tp*cp*dp, context rank c of
 * replica r of it devices s*n + (r*cp + c)*tp + [0, tp).  Layers are
 * spread evenly over pp*V chunks (or stage by stage with first_layers /
 * last_layers, each stage's over its V chunks; or, with
 * account_embedding / account_loss, layers + 1 or 2 slots evenly, the
 * embedding and the loss a slot each), chunk c on stage c mod pp; ops
 * before the first layer go to the first chunk and ops after the last to
 * the last.
 */
#ifndef TP_STRATEGY_H
#define TP_STRATEGY_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "error.h"
#include "model.h"
#include "plan.h"

struct tp_strategy {
	uint32_t tp, pp, dp; /* dp 0 = derive from the device count */
	uint32_t cp;         /* context parallelism, >= 1 */
	uint32_t mb;
	int64_t gbs;         /* 0 = the model's */
	enum tp_schedule schedule;
	uint32_t virtual_stages;
	enum tp_recompute recompute;
	bool sp;
	uint32_t zero;
	int sync; /* enum tp_sync, or -1 = automatic */
	uint32_t ep; /* expert parallelism (plan.h), 1 = none */
	uint32_t etp; /* expert tensor parallelism (plan.h): 0 = tp
			 (Megatron-Core's default), 1 = every expert whole
			 on its rank */
	double imbalance, capacity; /* the plan's expert_imbalance and
				       expert_capacity_factor, 0 = default */
	uint32_t first_layers, last_layers; /* layers of the first / last
					       pipeline stage, 0 = even */
	/* Megatron-Core's --account-for-embedding-in-pipeline-split and
	   --account-for-loss-in-pipeline-split: the embedding (the output
	   layer and loss) counts as one more layer when the layers are
	   split over the pp x V chunks, so the first (last) chunk holds one
	   transformer layer fewer (Llama 3, arXiv:2407.21783 section
	   3.3.2: its first chunk only the embedding, its last only the
	   output and loss) */
	bool account_embedding, account_loss;
};

void tp_strategy_default(struct tp_strategy *s);

/* Parse a strategy string.  TP_EUSAGE naming the key and the expected
 * values for unknown keys (with the near one), bad numbers and duplicate
 * keys; items separated by spaces or semicolons ("tp=2 pp=4") and a key
 * without '=' ("tp 2", "tp:2") get the string as it should be written.
 * Spaces around commas and '=' are accepted. */
enum tp_status tp_strategy_parse(const char *text, struct tp_strategy *s,
				 struct tp_error *err);

/* name[0..len) is one of the string's keys (tp, pp, ..., account_loss). */
bool tp_strategy_is_key(const char *name, size_t len);

/* Write s as a canonical string into buf: every key of the first set,
 * ep only when > 1, etp only when given. */
void tp_strategy_format(const struct tp_strategy *s, char *buf, size_t size);

/*
 * Expand into a plan for model m on cluster c (plan initialised; cleared
 * first).  TP_EINPUT, naming the fix, when tp does not divide the heads,
 * tp*pp*dp differs from the device count, the batch is not divisible by
 * mb*dp, pp*V exceeds the layers, the schedule is inconsistent, cp
 * does not split the model's sequence (tp_plan_validate's rule), or
 * first_layers / last_layers leave the other stages (or a stage's V
 * chunks) no equal whole number of layers.
 */
enum tp_status tp_strategy_to_plan(const struct tp_strategy *s,
				   const struct tp_model *m,
				   const struct tp_cluster *c,
				   struct tp_plan *plan, struct tp_error *err);

#endif
