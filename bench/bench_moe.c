/*
 * bench_moe.c - expert parallelism: `tagplan plan`'s search against the
 * best uniform grid that has EP (issue: modern training), for Mixtral-8x7B
 * and a DeepSeek-V3-sized model.
 *
 * Mixtral-8x7B (46.7 B parameters, 12.9 B active), sequence 4096, on 64
 * H100 (8 DGX-H100 on NDR InfiniBand, global batch 512) and 256 (32
 * nodes, global batch 1024).  The grid: tp 1/2/4/8 (sp on above 1) x pp
 * 1/2/4/8 x ep 1/2/4/8 x micro-batch 1/2/4 x recomputation none/
 * selective/full x ZeRO 0/1, dp the rest, 1F1B, expert load imbalance
 * 1.25 (the simulator's default), dropless; every grid is simulated
 * under the megatron-core runtime profile, the one the plan is made for
 * (its behaviour: fused attention, overlapped gradient reduction, fp32
 * main grads, ...), and keeps only the points megatron-core can run
 * (tp_runtime_plan_check; the count left out is printed).  Until
 * 2026-12-06 the grids ran under runtime "none" (the simulator's
 * defaults) while the plan was priced under megatron-core, so the
 * speed-up mixed the two profiles.  The search: the planner `tagplan plan`
 * uses, for its default runtime (megatron-core), without the GNN (uniform
 * priors: deterministic and independent of the shipped weights), seed
 * 1, TAGPLAN_BENCH_PLAYOUTS playouts (default 1000), one thread.
 * Printed per cluster: both iteration times and strategies, the speed-up
 * of the plan over the grid's best, the search's seconds and
 * simulations (the megatron baseline's grid among them: its MoE points
 * with ep inside a node, src/search/README), and MFU on active
 * parameters (6 x active parameters x tokens, attention not counted,
 * over the devices' bf16 peak), beside the grid's best without EP and the EP grid's best
 * with perfectly balanced experts (imbalance=1: what the default 1.25
 * costs).
 *
 * DeepSeek-V3-sized (the real config, tests/data/hf/deepseek-v3.json:
 * 671 B parameters, 37.6 B active, 256 routed experts of which 8 per
 * token plus one shared, 3 dense first layers, latent attention; bf16)
 * on 256 H100 (gbs 1024) and 1,024 (gbs 4096): the grid tp 1/2/4/8 x pp
 * 4/8/16 x ep 8/16/32/64, micro-batch 1, ZeRO-1, selective or full
 * recomputation (beside it the same grid without EP), and the plan at
 * TAGPLAN_BENCH_MOE_LARGE_PLAYOUTS playouts (default 200: a simulation
 * of this model takes about 0.1 s on 256 GPUs).
 *
 * Published runs are checked in bench_modern (DeepSeek-V3's H800 run).
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
	int refused; /* grid points the runtime cannot run */
};

/* Iteration time of strategy `str` under runtime rt, INFINITY when it
 * does not expand, rt cannot run it (*refused is then incremented) or it
 * does not fit. */
static double sim_one(struct tp_sim *sim, struct tp_sim_scratch *s,
		      const struct tp_model *m, const struct tp_cluster *c,
		      const struct tp_runtime *rt, const char *str,
		      int *refused)
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
	if (tp_runtime_plan_check(rt, &p, m, c, NULL, NULL, 0)) {
		(*refused)++;
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

/* A uniform grid's axes: every combination is one strategy string (dp
 * the rest, sp on with tp > 1). */
struct axes {
	int tp[4], n_tp, pp[4], n_pp, ep[4], n_ep, mb[3], n_mb;
	const char *rc[3];
	int n_rc, z[2], n_z;
};

/* Mixtral: tp, pp, ep 1/2/4/8 x micro-batch 1/2/4 x every recomputation
 * x ZeRO 0/1. */
static const struct axes mixtral_axes = {
    {1, 2, 4, 8}, 4, {1, 2, 4, 8}, 4, {1, 2, 4, 8}, 4, {1, 2, 4}, 3,
    {"none", "selective", "full"}, 3, {0, 1}, 2};
/* DeepSeek-V3-sized: 61 layers whose state needs pipelining and experts
 * spread wide (8 to 64 of 256), micro-batch 1, ZeRO-1, selective or
 * full recomputation (the cheaper settings do not fit 80 GB). */
static const struct axes deepseek_axes = {
    {1, 2, 4, 8}, 4, {4, 8, 16, 0}, 3, {8, 16, 32, 64}, 4, {1}, 1,
    {"selective", "full"}, 2, {1}, 1};

/* The grid's best over axes a with ep up to max_ep (max_ep 1: the grid
 * without EP, ep = 1), simulated under runtime rt (its behaviour, as
 * tp_planner_run prices plans for it) among the points rt can run;
 * b.refused counts the others. */
static struct best grid(const struct tp_model *m, const struct tp_cluster *c,
			const struct tp_runtime *rt, const struct axes *a,
			int max_ep, const char *extra)
{
	struct best b = {INFINITY, "", 0};
	struct tp_error err;
	struct tp_sim_options o;
	struct tp_sim *sim;
	struct tp_sim_scratch *s;
	const int one = 1, *eps = max_ep > 1 ? a->ep : &one;
	int n_ep = max_ep > 1 ? a->n_ep : 1;
	char str[160];

	tp_sim_options_default(&o);
	tp_sim_params_runtime(&o.params, rt);
	sim = tp_sim_new(m, c, &o, &err);
	s = sim ? tp_sim_scratch_new(sim) : NULL;
	if (!s) {
		fprintf(stderr, "bench_moe: %s\n", sim ? "out of memory"
						       : err.msg);
		exit(1);
	}
	for (int tp = 0; tp < a->n_tp; tp++)
		for (int pp = 0; pp < a->n_pp; pp++)
			for (int ep = 0; ep < n_ep && eps[ep] <= max_ep; ep++)
				for (int mb = 0; mb < a->n_mb; mb++)
					for (int rc = 0; rc < a->n_rc; rc++)
						for (int z = 0; z < a->n_z;
						     z++) {
							double t;
							snprintf(
							    str, sizeof(str),
							    "tp=%d,pp=%d,ep=%d,"
							    "mb=%d,recompute=%s,"
							    "zero=%d%s%s",
							    a->tp[tp],
							    a->pp[pp], eps[ep],
							    a->mb[mb],
							    a->rc[rc], a->z[z],
							    a->tp[tp] > 1
								? ",sp=on"
								: "",
							    extra);
							t = sim_one(sim, s, m,
								    c, rt, str,
								    &b.refused);
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

/* One model on one cluster: the grids, the plan, the figures; the
 * plan's speed-up over the EP grid is added to *geo (and *n). */
struct run {
	const char *what; /* "mixtral" or "deepseek" */
	int nodes;
	int64_t gbs;
	const struct axes *axes;
	bool balanced; /* also the EP grid with imbalance=1 */
};

static int run_one(const struct run *ru, uint64_t playouts, double *geo,
		   int *n)
{
	struct tp_model m;
	struct tp_cluster c;
	char spec[32], desc[160];
	const char *specs[1] = {spec};
	struct best bg, b1, bi = {INFINITY, "-", 0}, be = {INFINITY, "-", 0};
	struct tp_planner_options po;
	struct tp_planner *pl;
	struct tp_search_options o;
	struct tp_search_result r;
	struct tp_error err;
	double active, tokens, peak, t;
	uint32_t ndev;
	enum tp_status st;

	tp_model_init(&m);
	tp_cluster_init(&c);
	snprintf(spec, sizeof(spec), "dgx-h100:%d", ru->nodes);
	st = strcmp(ru->what, "mixtral") == 0
		     ? tp_build_hf_text("mixtral-8x7b.json", mixtral,
					sizeof(mixtral) - 1, 4096, ru->gbs,
					TP_DTYPE_BF16, &m, &err)
		     : tp_build_hf("tests/data/hf/deepseek-v3.json", 4096,
				   ru->gbs, TP_DTYPE_BF16, &m, &err);
	if (st || tp_build_topology(specs, 1, "ib-ndr", 1, &c, &err)) {
		fprintf(stderr, "bench_moe: %s\n", err.msg);
		return 1;
	}
	ndev = (uint32_t)c.devices.n;
	tp_planner_options_default(&po);
	if (tp_runtime_find("megatron-core", &po.runtime, &err)) {
		fprintf(stderr, "bench_moe: %s\n", err.msg);
		return 1;
	}
	/* the grids under the runtime the plan is made for */
	bg = grid(&m, &c, &po.runtime, ru->axes, 64, "");
	b1 = grid(&m, &c, &po.runtime, ru->axes, 1, "");
	if (ru->balanced) {
		bi = grid(&m, &c, &po.runtime, ru->axes, 64, ",imbalance=1");
		be = grid(&m, &c, &po.runtime, ru->axes, 64, ",etp=1");
	}
	if (!(pl = tp_planner_new(&m, &c, &po, &err))) {
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
	tokens = (double)ru->gbs * 4096;
	peak = c.types.v[c.devices.v[0].type].peak_flops[TP_DTYPE_BF16] * ndev;
	printf("%s, %u H100, gbs %lld (%llu playouts):\n", m.name, ndev,
	       (long long)ru->gbs, (unsigned long long)playouts);
	printf("  grid, no EP  %8.3f s  MFU(active) %5.1f%%  %s\n", b1.t,
	       100 * 6 * active * tokens / (b1.t * peak), b1.s);
	printf("  grid with EP %8.3f s  MFU(active) %5.1f%%  %s (%d points "
	       "%s cannot run left out)\n",
	       bg.t, 100 * 6 * active * tokens / (bg.t * peak), bg.s,
	       bg.refused, po.runtime.name);
	if (ru->balanced)
		printf("  EP grid, balanced experts (imbalance=1) %.3f s  "
		       "MFU(active) %.1f%%  %s\n",
		       bi.t, 100 * 6 * active * tokens / (bi.t * peak), bi.s);
	if (ru->balanced)
		printf("  EP grid, experts whole (etp=1) %.3f s  MFU(active) "
		       "%.1f%%  %s (%.3fx the EP grid's time)\n",
		       be.t, 100 * 6 * active * tokens / (be.t * peak), be.s,
		       be.t / bg.t);
	printf("  plan         %8.3f s  MFU(active) %5.1f%%  %s (%s)\n", t,
	       100 * 6 * active * tokens / (t * peak), desc, r.source);
	printf("  plan speed-up over the EP grid %.3fx; the search %.1f s, "
	       "%llu simulations\n",
	       bg.t / t, r.seconds, (unsigned long long)r.simulations);
	if (isfinite(t) && isfinite(bg.t)) {
		*geo += log(bg.t / t);
		(*n)++;
	}
	tp_search_result_release(&r);
	tp_planner_free(pl);
	tp_model_release(&m);
	tp_cluster_release(&c);
	return 0;
}

int main(void)
{
	static const struct run runs[] = {
	    {"mixtral", 8, 512, &mixtral_axes, true},
	    {"mixtral", 32, 1024, &mixtral_axes, true},
	    {"deepseek", 32, 1024, &deepseek_axes, false},
	    {"deepseek", 128, 4096, &deepseek_axes, false}};
	const char *pe = getenv("TAGPLAN_BENCH_PLAYOUTS");
	const char *pd = getenv("TAGPLAN_BENCH_MOE_LARGE_PLAYOUTS");
	uint64_t playouts = pe && atoll(pe) > 0 ? (uint64_t)atoll(pe) : 1000;
	uint64_t large = pd && atoll(pd) > 0 ? (uint64_t)atoll(pd) : 200;
	double geo = 0;
	int n = 0;

	printf("MoE on H100 (NDR): tagplan plan (no GNN) against the best "
	       "uniform grid with EP, both simulated under megatron-core; "
	       "MFU on active parameters\n");
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++)
		if (run_one(&runs[i],
			    strcmp(runs[i].what, "mixtral") == 0 ? playouts
								 : large,
			    &geo, &n))
			return 1;
	if (n)
		printf("geometric mean speed-up of plan over the EP grid "
		       "%.3fx\n",
		       exp(geo / n));
	return 0;
}
