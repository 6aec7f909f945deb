/*
 * bench_gnn.c - does the GNN make the search find good plans in fewer
 * playouts, on models and clusters training never saw?  And how fast is
 * one forward pass?
 *
 * Cases: Llama-2-7B and BERT-large (from data/models, built from the
 * HuggingFace configs) on three random heterogeneous clusters larger than
 * any of the training corpus (training stops at 32 GPUs), and the TAG
 * testbed (16 GPUs: V100, 1080 Ti, P100) with models the corpus never
 * contains (torchvision ResNet-50, VGG-19, Inception-v3, BERT-large).
 *
 * For each case, with one search thread and a fixed seed (deterministic):
 *   (a) the best iteration time the search finds within 50, 200 and 1,000
 *       playouts, guided (data/tagplan.weights) and unguided (uniform
 *       priors); and within 5,000, tagplan plan's default (printed, not
 *       part of the target);
 *   (b) the playouts each needs to come within 2% of the best plan a
 *       20,000-playout unguided search finds (1 when the baselines and
 *       seeds, which cost no playouts, already get there: the first
 *       progress report comes after the first playout; counted up to
 *       20,000).
 * Targets (issue 5): guided at least as good at every budget on >= 80%
 * of the cases; >= 5x fewer playouts in (b), geometric mean over the
 * cases where the search is needed (either side above 1; the mean over
 * all cases is printed too); forward pass <= 2 ms for 64 groups x 64
 * devices on one core.
 *
 * Also printed: simulator calls at 1,000 playouts both ways, and how the
 * gain head's predictions (src/gnn/README, "Gains") and the priors match
 * the changes the guided sweeps scored at 1,000 playouts, and the changes
 * the unguided sweeps scored (the network asked only to be measured,
 * search.h stats_prior: states it did not choose).
 *
 * Every case runs with search seeds 1, 2 and 3 (the reference search
 * too), and every (case, seed) pair counts as a case in the summary: which
 * local optimum one search ends in is close to a lottery, and a variant
 * ranked on 10 single runs was mostly ranked by it.
 *
 * TAGPLAN_BENCH_QUICK=1 runs two cases with a 2,000-playout reference and
 * one seed; TAGPLAN_BENCH_GNN_SEEDS=n runs seeds 1 .. n
 * (TAGPLAN_BENCH_GNN_FIRST_SEED=f: f .. f + n - 1);
 * TAGPLAN_BENCH_GNN_CASE=text runs the cases whose name contains text,
 * TAGPLAN_BENCH_GNN_TRACE=1 prints each new best of the runs of (b);
 * TAGPLAN_BENCH_GNN_GAINS=0.03 lets the guided sweeps skip the changes
 * the gains predict at least 3% slower (search.h gain_skip; default
 * TP_SEARCH_GAIN_SKIP, 10%; 0 = no gain cut).
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cluster.h"
#include "core/model.h"
#include "core/rng.h"
#include "gnn/features.h"
#include "gnn/graph.h"
#include "gnn/net.h"
#include "gnn/provider.h"
#include "gnn/tensor.h"
#include "io/io.h"
#include "search/planner.h"
#include "search/search.h"
#include "sim/sim.h"
#include "train/train.h"

static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double wall_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* forward pass */

/* CPU seconds of one forward pass of net on in: best of 10 rounds of
 * reps (the machine may be shared). */
static double best_pass(const struct tp_gnn_net *net,
			const struct tp_gnn_input *in, struct tp_ad *ad,
			int reps)
{
	struct tp_error err;
	float pri[128], v;
	double best = INFINITY;

	for (int i = 0; i < 20; i++)
		tp_gnn_infer(net, in, ad, pri, &v, &err);
	for (int r = 0; r < 10; r++) {
		double t0 = cpu_now(), dt;
		for (int i = 0; i < reps; i++)
			tp_gnn_infer(net, in, ad, pri, &v, &err);
		dt = (cpu_now() - t0) / reps;
		if (dt < best)
			best = dt;
	}
	return best;
}

/* The forward pass of the shipped network (random weights without one);
 * with an ensemble, every member's pass, which a state costs together. */
static void bench_forward(const struct tp_gnn_prior *gp)
{
	struct tp_gnn_widths w;
	struct tp_gnn_config cfg;
	struct tp_gnn_net *net = NULL;
	const struct tp_gnn_net *use = gp ? tp_gnn_prior_net(gp) : NULL;
	const uint32_t members = gp ? tp_gnn_prior_members(gp) : 1;
	struct tp_gnn_graph g;
	struct tp_gnn_input in;
	struct tp_ad ad;
	struct tp_rng rng;
	struct tp_error err;
	double best, state;
	const int reps = 100;

	tp_gnn_feature_widths(&w);
	if (!use) {
		tp_gnn_config_default(&cfg, w.group, w.device, w.action,
				      w.global, w.edge);
		tp_rng_seed(&rng, 1);
		net = tp_gnn_net_new(&cfg, &rng, &err);
		use = net;
	}
	tp_rng_seed(&rng, 2);
	tp_gnn_graph_init(&g, &w);
	if (tp_gnn_graph_random(&g, 64, 64, 64, &rng, &err) ||
	    tp_gnn_graph_finish(&g, &in, &err)) {
		printf("forward pass: %s\n", err.msg);
		goto out;
	}
	tp_ad_init(&ad);
	best = state = best_pass(use, &in, &ad, reps);
	printf("forward pass, 64 groups x 64 devices, 64 candidate actions, "
	       "hidden %u, %u layers, %u heads, %zu weights%s:\n"
	       "  %.3f ms per pass on one core (CPU time, best of 10 x %d)   "
	       "target <= 2 ms: %s\n",
	       use->cfg.hidden, use->cfg.layers, use->cfg.heads, use->n_params,
	       gp ? "" : " (random weights: no shipped file)",
	       best * 1e3, reps, best * 1e3 <= 2.0 ? "met" : "MISSED");
	for (uint32_t k = 1; k < members; k++)
		state += best_pass(tp_gnn_prior_member(gp, k), &in, &ad, reps);
	if (members > 1)
		printf("  the shipped ensemble, one pass of each of its %u "
		       "networks per state: %.3f ms per state\n",
		       members, state * 1e3);
	printf("\n");
	tp_ad_release(&ad);
out:
	tp_gnn_graph_release(&g);
	tp_gnn_net_free(net);
}

/* ------------------------------------------------------------------ */
/* guided vs unguided */

struct watch {
	double target;      /* within 2% of this */
	uint64_t reached;   /* playouts when first reached, UINT64_MAX = not */
	volatile sig_atomic_t stop;
	bool stop_when_reached;
	bool trace;         /* print every new best (TAGPLAN_BENCH_GNN_TRACE) */
	double last;        /* the best so far, for trace */
	const char *label;
};

static void on_progress(void *ctx, const struct tp_search_progress *p)
{
	struct watch *w = ctx;
	if (w->trace && p->have_best && p->best_feasible &&
	    p->best_time_s < w->last) {
		w->last = p->best_time_s;
		printf("    %s: %llu playouts, %s, %.5g s\n", w->label,
		       (unsigned long long)p->playouts, p->phase,
		       p->best_time_s);
	}
	if (w->reached == UINT64_MAX && p->have_best && p->best_feasible &&
	    p->best_time_s <= w->target * 1.02) {
		w->reached = p->playouts;
		if (w->stop_when_reached)
			w->stop = 1;
	}
}

/* Best iteration time after `playouts` playouts (INFINITY when nothing
 * fits); with w, also when it came within 2% of w->target. */
/* The gain head against the sweeps' scored changes (search.h gain_*),
 * summed over the runs that ask for it. */
struct gains {
	uint64_t signs, sign_ok, better, n;
	double gain_rank, prior_rank;
	uint64_t clear;
	double clear_gain_rank, clear_prior_rank;
	double sx, sy, sxx, syy, sxy;
};

static void gains_merge(struct gains *g, const struct gains *h)
{
	g->signs += h->signs;
	g->sign_ok += h->sign_ok;
	g->better += h->better;
	g->gain_rank += h->gain_rank;
	g->prior_rank += h->prior_rank;
	g->clear += h->clear;
	g->clear_gain_rank += h->clear_gain_rank;
	g->clear_prior_rank += h->clear_prior_rank;
	g->n += h->n;
	g->sx += h->sx;
	g->sy += h->sy;
	g->sxx += h->sxx;
	g->syy += h->syy;
	g->sxy += h->sxy;
}

static void gains_add(struct gains *g, const struct tp_search_result *r)
{
	struct gains h = {.signs = r->gain_signs,
			  .sign_ok = r->gain_sign_ok,
			  .better = r->gain_better,
			  .n = r->gain_n,
			  .gain_rank = r->gain_better_rank,
			  .prior_rank = r->prior_better_rank,
			  .clear = r->gain_clear,
			  .clear_gain_rank = r->gain_clear_rank,
			  .clear_prior_rank = r->prior_clear_rank,
			  .sx = r->gain_sx,
			  .sy = r->gain_sy,
			  .sxx = r->gain_sxx,
			  .syy = r->gain_syy,
			  .sxy = r->gain_sxy};

	gains_merge(g, &h);
}

static double gains_corr(const struct gains *g)
{
	double n = (double)g->n, vx, vy;

	if (g->n < 2)
		return NAN;
	vx = g->sxx - g->sx * g->sx / n;
	vy = g->syy - g->sy * g->sy / n;
	return vx > 0 && vy > 0 ? (g->sxy - g->sx * g->sy / n) / sqrt(vx * vy)
				: NAN;
}

static void gains_print(const char *label, const struct gains *g)
{
	printf("%s%llu scored changes, sign right %.0f%%, correlation over "
	       "%llu simulated %.2f; %llu beat the incumbent, ranked above "
	       "the others of their pass by gain %.2f, by prior %.2f (AUC); "
	       "%llu by at least 1%%: by gain %.2f, by prior %.2f\n",
	       label, (unsigned long long)g->signs,
	       g->signs ? 100.0 * (double)g->sign_ok / (double)g->signs : 0,
	       (unsigned long long)g->n, gains_corr(g),
	       (unsigned long long)g->better,
	       g->better ? g->gain_rank / (double)g->better : NAN,
	       g->better ? g->prior_rank / (double)g->better : NAN,
	       (unsigned long long)g->clear,
	       g->clear ? g->clear_gain_rank / (double)g->clear : NAN,
	       g->clear ? g->clear_prior_rank / (double)g->clear : NAN);
}

/* The search seed of the runs of one case (TAGPLAN_BENCH_GNN_SEEDS). */
static uint64_t bench_seed = 1;

/* What a search cost: simulations, and the changes its guided sweeps did
 * not simulate because the gains predicted them slow. */
struct counts {
	uint64_t sims, gain_skips;
};

static enum tp_status run_search(struct tp_planner *pl,
				 const struct tp_prior_provider *pp,
				 const struct tp_prior_provider *stats_pp,
				 uint64_t playouts, struct watch *w,
				 double *best, double *secs,
				 struct counts *cnt, struct gains *gs,
				 struct tp_error *err)
{
	struct tp_search_options o;
	struct tp_search_result r;
	double t0 = wall_now();
	enum tp_status st;

	tp_search_options_default(&o);
	o.seed = bench_seed;
	o.threads = 1;
	o.playouts = playouts;
	o.time_limit_s = 0;
	o.prior = pp;
	o.compression = TP_COMPRESSION_OFF;
	o.gain_stats = gs != NULL;
	o.stats_prior = stats_pp;
	if (pp && getenv("TAGPLAN_BENCH_GNN_GAINS"))
		o.gain_skip = atof(getenv("TAGPLAN_BENCH_GNN_GAINS"));
	if (w) {
		w->last = INFINITY;
		w->reached = UINT64_MAX;
		w->stop = 0;
		o.progress = on_progress;
		o.progress_ctx = w;
		o.progress_interval_s = 1e-12; /* every playout */
		o.stop = &w->stop;
	}
	tp_search_result_init(&r);
	st = tp_planner_run(pl, &o, &r, err);
	*best = st == TP_OK && r.have_plan && r.report.feasible
			? r.report.iteration_time_s
			: INFINITY;
	*secs = wall_now() - t0;
	if (cnt) {
		cnt->sims = r.simulations;
		cnt->gain_skips = r.gain_skips;
	}
	if (gs && st == TP_OK)
		gains_add(gs, &r);
	tp_search_result_release(&r);
	return st;
}

struct kase {
	char name[256];
	struct tp_model m;
	struct tp_cluster c;
	bool ok;
};

static bool load_model(const char *rel, struct tp_model *m)
{
	char path[4096];
	struct tp_error err;
	struct tp_load_options lo;

	tp_load_options_default(&lo);
	tp_model_init(m);
	if (tp_data_path(rel, path, sizeof(path), &err) ||
	    tp_model_load_file(path, &lo, m, &err)) {
		printf("  cannot load %s: %s\n", rel, err.msg);
		return false;
	}
	return true;
}

static bool load_topo(const char *rel, struct tp_cluster *c)
{
	char path[4096];
	struct tp_error err;
	struct tp_load_options lo;

	tp_load_options_default(&lo);
	tp_cluster_init(c);
	if (tp_data_path(rel, path, sizeof(path), &err) ||
	    tp_topology_load_file(path, &lo, c, &err)) {
		printf("  cannot load %s: %s\n", rel, err.msg);
		return false;
	}
	return true;
}

/* The i-th random heterogeneous cluster of the benchmark: larger than the
 * training corpus allows (> 32 GPUs) and with at least two GPU types. */
static bool bench_cluster(uint32_t i, struct tp_cluster *c, char *desc,
			  size_t size)
{
	struct tp_rng rng;
	struct tp_error err;

	tp_rng_seed(&rng, 0xBE7C4000u + i);
	for (int a = 0; a < 1000; a++) {
		tp_cluster_init(c);
		if (tp_train_random_cluster(&rng, 64, c, desc, size, &err)) {
			printf("  cluster: %s\n", err.msg);
			return false;
		}
		{
			uint32_t types = 0;
			for (size_t t = 0; t < c->types.n; t++)
				types += c->type_count[t] > 0;
			if (c->devices.n > 32 && types >= 2)
				return true;
		}
		tp_cluster_release(c);
	}
	return false;
}

int main(void)
{
	static const char *const models_rnd[] = {"models/llama-2-7b.json",
						 "models/bert-large-uncased.json"};
	static const char *const models_tag[] = {
		"models/resnet50.json", "models/vgg19.json",
		"models/inception-v3.json", "models/bert-large-uncased.json"};
	/* the budgets, then tagplan plan's default (not counted in
	   the target) */
	static const uint64_t budgets[] = {50, 200, 1000, 5000};
	bool quick = getenv("TAGPLAN_BENCH_QUICK") != NULL;
	uint64_t ref_playouts = quick ? 2000 : 20000;
	/* every case with several search seeds (the reference too): one
	   seed's result is a lottery between local optima */
	uint32_t n_seeds = quick ? 1 : 3;
	if (getenv("TAGPLAN_BENCH_GNN_SEEDS"))
		n_seeds = (uint32_t)atoi(getenv("TAGPLAN_BENCH_GNN_SEEDS"));
	if (n_seeds < 1 || n_seeds > 100)
		n_seeds = 1;
	/* the first seed: seeds first .. first + n_seeds - 1 (a variant
	   chosen on seeds 1-3 checked on others) */
	uint32_t first_seed = 1;
	if (getenv("TAGPLAN_BENCH_GNN_FIRST_SEED"))
		first_seed = (uint32_t)atoi(
			getenv("TAGPLAN_BENCH_GNN_FIRST_SEED"));
	if (first_seed < 1 || first_seed > 1000000)
		first_seed = 1;
	struct kase cases[16];
	uint32_t nc = 0, wins = 0, counted = 0;
	struct tp_gnn_prior *gp = NULL;
	struct tp_prior_provider pp;
	struct tp_error err;
	double logsum = 0, logall = 0, simlog = 0, log5000 = 0;
	uint32_t nlog = 0, nall = 0;
	struct gains gall, uall;

	memset(&gall, 0, sizeof(gall));
	memset(&uall, 0, sizeof(uall));

	tp_tensor_set_blas_threads(1);
	setvbuf(stdout, NULL, _IOLBF, 0); /* progress through pipes */
	printf("GNN guidance (issue 5)\n\n");
	if (tp_gnn_prior_load_default(NULL, &pp, &gp, &err)) {
		char buf[1200];
		printf("no shipped weights: %s\n(run `make weights`); only the "
		       "forward pass is measured\n\n",
		       tp_error_format(&err, buf, sizeof(buf)));
		gp = NULL;
	}
	bench_forward(gp);
	if (!gp)
		return 0;
	printf("gain cut: guided sweeps skip changes predicted %.1f%% "
	       "slower%s\n\n",
	       100 * (getenv("TAGPLAN_BENCH_GNN_GAINS")
			      ? atof(getenv("TAGPLAN_BENCH_GNN_GAINS"))
			      : TP_SEARCH_GAIN_SKIP),
	       getenv("TAGPLAN_BENCH_GNN_GAINS") ? " (TAGPLAN_BENCH_GNN_GAINS)"
						 : " (the default)");
	printf("weights: %s\n", tp_gnn_prior_source(gp));
	for (uint32_t k = 0; k < tp_gnn_prior_members(gp); k++) {
		const struct tp_gnn_meta *mt =
			&tp_gnn_prior_member(gp, k)->meta;
		printf("  network %u: trained %u epochs on %u games, seed "
		       "%llu, %.0f s\n",
		       k + 1, mt->epochs, mt->games,
		       (unsigned long long)mt->seed, mt->train_seconds);
	}
	printf("\n");
	/* the cases: each owns its model and cluster */
	for (uint32_t k = 0; k < 3; k++) {
		for (int i = 0; i < 2 && nc < 16; i++) {
			struct kase *ks = &cases[nc];
			char desc[160];
			if (quick && nc >= 1)
				break;
			memset(ks, 0, sizeof(*ks));
			if (!load_model(models_rnd[i], &ks->m))
				continue;
			if (!bench_cluster(k, &ks->c, desc, sizeof(desc))) {
				tp_model_release(&ks->m);
				continue;
			}
			snprintf(ks->name, sizeof(ks->name), "%s on %s (%zu GPUs)",
				 i ? "BERT-large" : "Llama-2-7B", desc,
				 ks->c.devices.n);
			ks->ok = true;
			nc++;
		}
	}
	for (int i = 0; i < 4 && nc < 16; i++) {
		struct kase *ks = &cases[nc];
		if (quick && i >= 1)
			break;
		memset(ks, 0, sizeof(*ks));
		if (!load_model(models_tag[i], &ks->m))
			continue;
		if (!load_topo("topologies/tag-testbed.json", &ks->c)) {
			tp_model_release(&ks->m);
			continue;
		}
		snprintf(ks->name, sizeof(ks->name), "%s on the TAG testbed",
			 ks->m.name ? ks->m.name : models_tag[i]);
		ks->ok = true;
		nc++;
	}
	printf("%-58s %9s | %-22s | %-22s | %-22s | %-22s | %s\n", "case",
	       "ref (s)", "50: guided/unguided", "200: guided/unguided",
	       "1000: guided/unguided", "5000: guided/unguided",
	       "playouts to 2%: guided/unguided");
	for (uint32_t i = 0; i < nc; i++) {
		struct kase *ks = &cases[i];
		const char *only = getenv("TAGPLAN_BENCH_GNN_CASE");
		struct tp_planner *pl;
		struct tp_planner_options po;
		struct watch wu, wg;
		double ref, secs, tg[4], tu[4], s_ref, s_g = 0;
		struct counts cnt_g = {0, 0}, cnt_u = {0, 0};
		struct gains gcase, ucase;
		bool all_ok = true;

		if (only && !strstr(ks->name, only))
			continue;
		for (uint32_t sd = first_seed; sd < first_seed + n_seeds;
		     sd++) {
			char name[300];
			bench_seed = sd;
			memset(&gcase, 0, sizeof(gcase));
			memset(&ucase, 0, sizeof(ucase));
			if (n_seeds > 1 || first_seed > 1)
				snprintf(name, sizeof(name), "%.250s, seed %u",
					 ks->name, sd);
			else
				snprintf(name, sizeof(name), "%.250s",
					 ks->name);

			/* no lower-bound settling: the figures of the README
			   and src/gnn/README were measured so */
			tp_planner_options_default(&po);
			po.bound = false;
			pl = tp_planner_new(&ks->m, &ks->c, &po, &err);
			if (!pl) {
				printf("%-58s simulator: %s\n", name, err.msg);
				continue;
			}
			/* the reference: a long unguided search */
			memset(&wu, 0, sizeof(wu));
			wu.target = 0;
			if (run_search(pl, NULL, NULL,
				       ref_playouts, NULL, &ref, &s_ref, NULL,
				       NULL, &err)) {
				printf("%-58s search: %s\n", name, err.msg);
				tp_planner_free(pl);
				continue;
			}
			for (int b = 0; b < 4; b++) {
				if (run_search(pl, &pp, NULL,
					       budgets[b], NULL, &tg[b], &secs,
					       b == 2 ? &cnt_g : NULL,
					       b == 2 ? &gcase : NULL, &err) ||
				    run_search(pl, NULL, &pp,
					       budgets[b], NULL, &tu[b], &secs,
					       b == 2 ? &cnt_u : NULL,
					       b == 2 ? &ucase : NULL, &err)) {
					printf("%-58s search: %s\n", name,
					       err.msg);
					all_ok = false;
					break;
				}
				if (b == 2)
					s_g = secs;
			}
			if (!all_ok) {
				tp_planner_free(pl);
				continue;
			}
			/* playouts to within 2% of ref: the unguided count from
			 * a run as long as the reference, the guided one until
			 * reached */
			wu.target = ref;
			wu.stop_when_reached = true;
			wu.trace = getenv("TAGPLAN_BENCH_GNN_TRACE") != NULL;
			wg = wu;
			wu.label = "unguided";
			wg.label = "guided";
			run_search(pl, NULL, NULL,
				   ref_playouts, &wu, &secs, &secs, NULL, NULL,
				   &err);
			run_search(pl, &pp, NULL, ref_playouts,
				   &wg, &secs, &secs, NULL, NULL, &err);
			{
				bool win = true;
				char cell[4][32], plc[64];
				for (int b = 0; b < 4; b++) {
					if (b < 3 && tg[b] > tu[b] * (1 + 1e-9))
						win = false;
					snprintf(
					    cell[b], sizeof(cell[b]),
					    "%8.4g/%-8.4g %s", tg[b], tu[b],
					    tg[b] < tu[b] * (1 - 1e-9)	 ? "+"
					    : tg[b] > tu[b] * (1 + 1e-9) ? "-"
									 : "=");
				}
				wins += win;
				log5000 += log(tu[3] / tg[3]);
				counted++;
				if (wg.reached == UINT64_MAX)
					snprintf(
					    plc, sizeof(plc), ">%llu",
					    (unsigned long long)ref_playouts);
				else
					snprintf(
					    plc, sizeof(plc), "%llu",
					    (unsigned long long)wg.reached);
				{
					size_t l = strlen(plc);
					if (wu.reached == UINT64_MAX)
						snprintf(plc + l, sizeof(plc) - l,
							 " / >%llu",
							 (unsigned long long)
							     ref_playouts);
					else
						snprintf(plc + l, sizeof(plc) - l,
							 " / %llu",
							 (unsigned long long)
							     wu.reached);
				}
				{
					double a = wg.reached == UINT64_MAX
						       ? (double)ref_playouts
						       : (double)wg.reached;
					double b = wu.reached == UINT64_MAX
						       ? (double)ref_playouts
						       : (double)wu.reached;
					double l = log(fmax(b, 1) / fmax(a, 1));
					/* all cases; and those where the search
					   had something to find (1 = the first
					   progress report, already there before
					   the search) */
					logall += l;
					nall++;
					if (a > 1 || b > 1) {
						logsum += l;
						nlog++;
					}
				}
				printf("%-58.58s %9.4g | %-22s | %-22s | %-22s "
				       "| %-22s "
				       "| %s\n",
				       name, ref, cell[0], cell[1], cell[2],
				       cell[3], plc);
				printf("%-58s %9s   (reference search %.1f s; "
				       "guided "
				       "1000 playouts %.1f s; simulations at "
				       "1000: "
				       "guided %llu, unguided %llu; changes "
				       "the guided sweeps' gain cut left "
				       "unsimulated: %llu)\n",
				       "", "", s_ref, s_g,
				       (unsigned long long)cnt_g.sims,
				       (unsigned long long)cnt_u.sims,
				       (unsigned long long)cnt_g.gain_skips);
				gains_print(
				    "                                          "
				    "                   gains at 1000: ",
				    &gcase);
				gains_print(
				    "                                          "
				    "                   unguided sweeps, the "
				    "same network asked: ",
				    &ucase);
				gains_merge(&gall, &gcase);
				gains_merge(&uall, &ucase);
				simlog += log(fmax((double)cnt_u.sims, 1) /
					      fmax((double)cnt_g.sims, 1));
			}
			tp_planner_free(pl);
		}
	}
	printf("\nguided at least as good at every budget: %u of %u cases "
	       "(%.0f%%)   target >= 80%%: %s\n",
	       wins, counted, counted ? 100.0 * wins / counted : 0,
	       counted && wins * 5 >= counted * 4 ? "met" : "MISSED");
	if (nlog)
		printf("playouts to within 2%% of the reference: unguided / "
		       "guided = %.2fx (geometric mean over the %u cases where "
		       "the search is needed)   target >= 5x: %s\n"
		       "  over all %u cases (those already there count 1x): "
		       "%.2fx\n",
		       exp(logsum / nlog), nlog,
		       exp(logsum / nlog) >= 5 ? "met" : "MISSED", nall,
		       exp(logall / nall));
	else
		printf("playouts to within 2%%: every case was there before "
		       "the tree search (0 playouts both ways)\n");
	if (counted)
		printf("at 5000 playouts (tagplan plan's default): unguided / "
		       "guided iteration time = %.3fx (geometric mean)\n",
		       exp(log5000 / counted));
	if (nall)
		printf("simulator calls at 1000 playouts: unguided / guided = "
		       "%.2fx (geometric mean)\n",
		       exp(simlog / nall));
	gains_print("gain head, all cases at 1000 playouts: ", &gall);
	gains_print("the same on the unguided search's sweeps (the network "
		    "asked, not followed): ",
		    &uall);
	for (uint32_t i = 0; i < nc; i++) {
		tp_model_release(&cases[i].m);
		tp_cluster_release(&cases[i].c);
	}
	tp_gnn_prior_free(gp);
	return 0;
}
