/*
 * bench_moe.c - expert parallelism: `tagplan plan`'s search against the
 * best uniform grid that has EP (issue: modern training).
 *
 * Mixtral-8x7B (46.7 B parameters, 12.9 B active), sequence 4096, on 64
 * H100 (8 DGX-H100 on NDR InfiniBand, global batch 512) and 256 (32
 * nodes, global batch 1024).  The grid: tp 1/2/4/8 (sp on above 1) x pp
 * 1/2/4/8 x ep 1/2/4/8 x micro-batch 1/2/4 x recomputation none/
 * selective/full x ZeRO 0/1, dp the rest, 1F1B, the simulator's defaults (expert load
 * imbalance 1.25, dropless).  The search: the planner `tagplan plan`
 * uses, for its default runtime (megatron-core), without the GNN (uniform
 * priors: deterministic and independent of the shipped weights), seed
 * 1, TAGPLAN_BENCH_PLAYOUTS playouts (default 1000), one thread.
 * Printed per cluster: both iteration times and strategies, the speed-up
 * of the plan over the grid's best, and MFU on active parameters (6 x
 * active parameters x tokens, attention not counted, over the devices'
 * bf16 peak), beside the grid's best without EP and the EP grid's best
 * with perfectly balanced experts (imbalance=1: what the default 1.25
 * costs).
 *
 * Published runs: none simulated here.  No MoE run with its strategy and
 * throughput is in the project's data (shared/data has none), and this
 * bench does not quote tables from memory.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cluster.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/report.h"
#include "core/strategy.h"
#include "io/build.h"
#include "io/io.h"
#include "search/planner.h"
#include "sim/sim.h"

static const char mixtral[] =
    "{\"architectures\": [\"MixtralForCausalLM\"], \"model_type\": "
    "\"mixtral\", \"hidden_act\": \"silu\", \"hidden_size\": 4096, "
    "\"intermediate_size\": 14336, \"max_position_embeddings\": 32768, "
    "\"num_attention_heads\": 32, \"num_experts_per_tok\": 2, "
    "\"num_hidden_layers\": 32, \"num_key_value_heads\": 8, "
    "\"num_local_experts\": 8, \"rms_norm_eps\": 1e-05, \"rope_theta\": "
    "1000000.0, \"sliding_window\": null, \"tie_word_embeddings\": false, "
    "\"torch_dtype\": \"bfloat16\", \"vocab_size\": 32000}\n";

struct best {
	double t;
	char s[160];
};

/* Iteration time of strategy `str`, INFINITY when it does not expand or
 * fit. */
static double sim_one(struct tp_sim *sim, struct tp_sim_scratch *s,
		      const struct tp_model *m, const struct tp_cluster *c,
		      const char *str)
{
	struct tp_strategy st;
	struct tp_error err;
	struct tp_plan p;
	struct tp_report r;
	double t = INFINITY;

	tp_plan_init(&p);
	if (tp_strategy_parse(str, &st, &err) ||
	    tp_strategy_to_plan(&st, m, c, &p, &err)) {
		tp_plan_release(&p);
		return t;
	}
	tp_report_init(&r);
	if (tp_sim_run(sim, &p, s, &r, NULL, &err) == TP_OK && r.feasible)
		t = r.iteration_time_s;
	tp_report_release(&r);
	tp_plan_release(&p);
	return t;
}

/* The grid's best with ep up to max_ep. */
static struct best grid(const struct tp_model *m, const struct tp_cluster *c,
			int max_ep, const char *extra)
{
	static const int deg[] = {1, 2, 4, 8}, mbs[] = {1, 2, 4};
	static const char *const rcs[] = {"none", "selective", "full"};
	struct best b = {INFINITY, ""};
	struct tp_error err;
	struct tp_sim *sim = tp_sim_new(m, c, NULL, &err);
	struct tp_sim_scratch *s = sim ? tp_sim_scratch_new(sim) : NULL;
	char str[160];

	if (!s) {
		fprintf(stderr, "bench_moe: %s\n", sim ? "out of memory"
						       : err.msg);
		exit(1);
	}
	for (int tp = 0; tp < 4; tp++)
		for (int pp = 0; pp < 4; pp++)
			for (int ep = 0; ep < 4 && deg[ep] <= max_ep; ep++)
				for (int mb = 0; mb < 3; mb++)
					for (int rc = 0; rc < 3; rc++)
						for (int z = 0; z <= 1; z++) {
							double t;
							snprintf(
							    str, sizeof(str),
							    "tp=%d,pp=%d,ep=%d,"
							    "mb=%d,recompute=%s,"
							    "zero=%d%s%s",
							    deg[tp], deg[pp],
							    deg[ep], mbs[mb],
							    rcs[rc], z,
							    deg[tp] > 1
								? ",sp=on"
								: "",
							    extra);
							t = sim_one(sim, s, m,
								    c, str);
							if (t < b.t) {
								b.t = t;
								snprintf(
								    b.s,
								    sizeof(b.s),
								    "%s", str);
							}
						}
	tp_sim_scratch_free(s);
	tp_sim_free(sim);
	return b;
}

/* "tp=2,pp=4,dp=8,ep=8,..." of a plan's first group with experts. */
static void describe(const struct tp_plan *p, char *buf, size_t n)
{
	uint32_t stages = 0, ep = 1;
	const struct tp_plan_group *g0 = &p->groups.v[0];

	for (uint32_t g = 0; g < p->groups.n; g++) {
		if (p->groups.v[g].ep > ep)
			ep = p->groups.v[g].ep;
		if (g == 0 || p->groups.v[g].dev_first !=
				      p->groups.v[g - 1].dev_first)
			stages++;
	}
	snprintf(buf, n, "%u groups, tp=%u dp=%u ep=%u, %u micro-batches, "
		 "zero=%u, %s", (unsigned)p->groups.n, g0->tp, g0->dp, ep,
		 p->micro_batches, p->zero, tp_recompute_name(g0->recompute));
	(void)stages;
}

int main(void)
{
	static const struct {
		int nodes;
		int64_t gbs;
	} runs[] = {{8, 512}, {32, 1024}};
	const char *pe = getenv("TAGPLAN_BENCH_PLAYOUTS");
	uint64_t playouts = pe && atoll(pe) > 0 ? (uint64_t)atoll(pe) : 1000;
	struct tp_error err;
	double geo = 0;
	int n = 0;

	printf("Mixtral-8x7B seq 4096 on H100 (NDR): tagplan plan (%llu "
	       "playouts, no GNN, megatron-core) against the best uniform "
	       "grid with EP; MFU on active parameters\n",
	       (unsigned long long)playouts);
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		struct tp_model m;
		struct tp_cluster c;
		char spec[32], desc[160];
		const char *specs[1] = {spec};
		struct best bg, b1, bi;
		struct tp_planner_options po;
		struct tp_planner *pl;
		struct tp_search_options o;
		struct tp_search_result r;
		double active, tokens, peak, t;
		uint32_t ndev;

		tp_model_init(&m);
		tp_cluster_init(&c);
		snprintf(spec, sizeof(spec), "dgx-h100:%d", runs[i].nodes);
		if (tp_build_hf_text("mixtral-8x7b.json", mixtral,
				     sizeof(mixtral) - 1, 4096, runs[i].gbs,
				     TP_DTYPE_BF16, &m, &err) ||
		    tp_build_topology(specs, 1, "ib-ndr", 1, &c, &err)) {
			fprintf(stderr, "bench_moe: %s\n", err.msg);
			return 1;
		}
		ndev = (uint32_t)c.devices.n;
		bg = grid(&m, &c, 8, "");
		b1 = grid(&m, &c, 1, "");
		bi = grid(&m, &c, 8, ",imbalance=1");
		tp_planner_options_default(&po);
		if (tp_runtime_find("megatron-core", &po.runtime, &err) ||
		    !(pl = tp_planner_new(&m, &c, &po, &err))) {
			fprintf(stderr, "bench_moe: %s\n", err.msg);
			return 1;
		}
		tp_search_options_default(&o);
		o.threads = 1;
		o.seed = 1;
		o.playouts = playouts;
		o.time_limit_s = 0;
		tp_search_result_init(&r);
		if (tp_planner_run(pl, &o, &r, &err) || !r.have_plan) {
			fprintf(stderr, "bench_moe: %s\n", err.msg);
			return 1;
		}
		t = r.report.feasible ? r.report.iteration_time_s : INFINITY;
		describe(&r.plan, desc, sizeof(desc));
		active = tp_model_active_parameters(&m);
		tokens = (double)runs[i].gbs * 4096;
		peak = c.types.v[c.devices.v[0].type].peak_flops[TP_DTYPE_BF16] *
		       ndev;
		printf("%u H100, gbs %lld:\n", ndev, (long long)runs[i].gbs);
		printf("  grid, no EP  %8.3f s  MFU(active) %5.1f%%  %s\n",
		       b1.t, 100 * 6 * active * tokens / (b1.t * peak), b1.s);
		printf("  grid with EP %8.3f s  MFU(active) %5.1f%%  %s\n",
		       bg.t, 100 * 6 * active * tokens / (bg.t * peak), bg.s);
		printf("  EP grid, balanced experts (imbalance=1) %.3f s  "
		       "MFU(active) %.1f%%  %s\n",
		       bi.t, 100 * 6 * active * tokens / (bi.t * peak), bi.s);
		printf("  plan         %8.3f s  MFU(active) %5.1f%%  %s (%s)\n",
		       t, 100 * 6 * active * tokens / (t * peak), desc,
		       r.source);
		printf("  plan speed-up over the EP grid %.3fx\n", bg.t / t);
		if (isfinite(t) && isfinite(bg.t)) {
			geo += log(bg.t / t);
			n++;
		}
		tp_search_result_release(&r);
		tp_planner_free(pl);
		tp_model_release(&m);
		tp_cluster_release(&c);
	}
	if (n)
		printf("geometric mean speed-up of plan over the EP grid "
		       "%.3fx\n",
		       exp(geo / n));
	return 0;
}
