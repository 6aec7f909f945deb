/*
 * table.h - human summaries of a simulated plan, for stderr: a compact
 * table (per stage: devices, dp x tp, layers, share of the FLOP, busy %;
 * per device type: busy %, peak memory against capacity; the headline
 * figures), and, when the plan does not fit, why and the smallest changes
 * that would.
 *
 * Used by `plan`, `simulate` and `check`.  Plain text, at most 80 columns
 * wide for clusters of any size (stages are summarised, devices grouped
 * by type).  Nothing here prints: text is appended to the caller's strbuf.
 *
 * The explanation reads the report's worst_device, over_bytes, memory
 * breakdown and reason (filled by the simulator).  Each candidate change
 * (a ZeRO stage, recomputation, a smaller micro-batch, more devices) gets
 * an estimate of the memory it saves from the breakdown (from the model's
 * saved bytes: it does not know the runtime's fused attention); when the
 * caller gives an evaluator (e.g. the simulator), every candidate that
 * can be written as a plan is re-simulated and marked as fitting or not,
 * with its iteration time and, in place of the estimate, the memory the
 * simulation saves on the worst device; the recommendation is the
 * fastest that fits.
 */
#ifndef TP_CLI_TABLE_H
#define TP_CLI_TABLE_H

#include "core/cluster.h"
#include "core/error.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/report.h"
#include "core/runtime.h"
#include "core/strbuf.h"

/*
 * Append the summary table of plan p simulated as r (r may be NULL: the
 * plan's summary is used when valid, else only the structure is shown).
 * TP_EINPUT when p does not match c/m; TP_ENOMEM.
 */
enum tp_status tp_cli_table(const struct tp_plan *p,
			       const struct tp_model *m,
			       const struct tp_cluster *c,
			       const struct tp_report *r,
			       struct tp_strbuf *out, struct tp_error *err);

/*
 * Evaluate a variant plan (same model and cluster): fill *out (initialised
 * by the caller) and return TP_OK, or an error.  ctx is the caller's.
 */
typedef enum tp_status (*tp_explain_eval_fn)(void *ctx,
					      const struct tp_plan *variant,
					      struct tp_report *out,
					      struct tp_error *err);

/*
 * How the plan was simulated, for the explanation: whether the runtime
 * runs attention fused (tp_sim_params.fused_attention: FlashAttention
 * keeps no attention scores, and the estimates count none either), an
 * evaluator of variant plans (NULL: estimates only) and the runtime
 * (NULL: any change runs), whose refusals (tp_runtime_plan_check: ZeRO-2
 * under megatron-core) are listed as such and never recommended.
 */
struct tp_explain_sim {
	tp_explain_eval_fn eval;
	void *ctx;
	bool fused_attention;
	const struct tp_runtime *rt;
};

/*
 * When r says the plan does not fit, append why (device, peak against
 * capacity, what dominates its memory, the simulator's reason) and the
 * changes that would make it fit, smallest first.  how may be NULL
 * (estimates only, attention not fused).  Appends nothing when r is
 * feasible.
 */
enum tp_status tp_cli_explain(const struct tp_plan *p,
			      const struct tp_model *m,
			      const struct tp_cluster *c,
			      const struct tp_report *r,
			      const struct tp_explain_sim *how,
			      struct tp_strbuf *out, struct tp_error *err);

/* A device's peak memory as a percentage of its capacity (pct, 0-100+)
 * into buf: whole percent, but to a tenth near 100, rounded away from it
 * ("99.7%" for 79.8 of 80 GB, "100.2%" just over), so a device under its
 * capacity never reads "100%", nor one over it. */
void tp_cli_mem_percent(char *buf, size_t size, double pct);

/*
 * Append text to out with its lines cut at spaces to at most width
 * columns (a word longer than that stays whole): a line "  label   text"
 * continues under "text", other lines two columns deeper than their own
 * indent.  For human summaries on stderr.
 */
void tp_render_wrap(struct tp_strbuf *out, const char *text, int width);
/* In text for tp_render_wrap: a space that never breaks (printed as one),
 * to keep a figure with its unit, or a label with its value. */
#define TP_RENDER_NB '\x01'

/*
 * Append the names of the runtime capabilities set in mask (bit c is
 * enum tp_runtime_cap c, tp_runtime_cap_name), separated by ", ":
 * "uneven_shares, compression".
 */
void tp_render_caps(struct tp_strbuf *out, uint32_t mask);

/*
 * Append the plan's structure: one line for the whole plan (groups,
 * micro-batches, schedule, ZeRO, gradient buckets), one per op group (at
 * most 8: its ops, devices, degrees, sync, recomputation, compression),
 * then the compression summary.  `plan`'s human summary.
 */
void tp_cli_plan_structure(const struct tp_plan *p, const struct tp_model *m,
			   const struct tp_cluster *c, struct tp_strbuf *out);

#endif
