/*
 * train.c - the training run (see train.h): self-play rounds over the
 * games (selfplay.c), the replay buffer, optimisation, held-out
 * evaluation, checkpoints (checkpoint.c).
 */
#include "train.h"
#include "train_int.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/report.h"
#include "core/vec.h"
#include "gnn/features.h"
#include "gnn/provider.h"
#include "gnn/tensor.h"
#include "gnn/weights.h"
#include "io/io.h"
#include "search/actions.h"
#include "search/coarsen.h"
#include "search/search.h"
#include "sim/sim.h"


void tp_train_options_default(struct tp_train_options *o)
{
	memset(o, 0, sizeof(*o));
	o->seed = 1;
	o->games = 120;
	o->epochs = 8;
	o->threads = 1;
	o->playouts = 48;
	o->batch = 32;
	o->heldout = 0.15;
	o->lr = 1e-3f;
	o->clip = 1.0f;
	o->gain_weight = 1.0f;
	o->weight_decay = 1e-2f;
	o->max_devices = 32;
	o->runtime_every = 3;
	o->distil_playouts = TP_TRAIN_DISTIL_PLAYOUTS;
	o->distil_weight = (float)TP_TRAIN_DISTIL_WEIGHT;
}

double train_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void train_log(const struct tp_train_options *o, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!o->log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	o->log(o->log_ctx, line);
}

/* ------------------------------------------------------------------ */
/* the run */

struct run {
	const struct tp_train_options *o;
	struct game *games;
	uint32_t n_games;
	struct tctx *tc;
	uint32_t nt;
	struct tp_gnn_net *net;
	struct tp_gnn_prior *gp; /* wraps a copy for self-play */
	struct tp_runtime rt[2]; /* TP_TRAIN_RUNTIME, TP_TRAIN_RUNTIME_ZB
				    (with runtime_every) */
	struct samples cur, prev, held;
	uint32_t epoch;
	/* parallel jobs */
	uint32_t next;
	pthread_mutex_t lock;
	struct samples *per_game;
	uint32_t playouts;
	bool explore, held_phase;
	struct tp_train_distil dist; /* summed as it goes */
	/* training step */
	const uint32_t *batch_idx;
	uint32_t batch_n;
	const struct samples *batch_set;
};

/* The model families of the corpus, cycled over the games: HF
 * architectures three in eight, random CNNs two, random GPTs, random
 * DAGs and zoo models one each. */
static const enum tp_train_family family_cycle[8] = {
	TP_TRAIN_HF,  TP_TRAIN_TRANSFORMER, TP_TRAIN_CNN, TP_TRAIN_HF,
	TP_TRAIN_DAG, TP_TRAIN_HF,          TP_TRAIN_ZOO, TP_TRAIN_CNN};

/* Every k-th game is held out (k = 1 / heldout, rounded); the held-out
 * games cycle through the splits (train.h enum tp_train_split). */
static uint32_t heldout_every(const struct tp_train_options *o)
{
	return o->heldout > 0 ? (uint32_t)(1.0 / o->heldout + 0.5) : 0;
}

static enum tp_status build_game(struct run *R, uint32_t i,
				 struct tp_error *err)
{
	struct game *g = &R->games[i];
	struct tp_rng rng;
	char cdesc[160];
	enum tp_status st;
	struct tp_sim_options so;
	uint32_t k = heldout_every(R->o), every = R->o->runtime_every;
	struct tp_train_draw d;
	/* one game in runtime_every under a runtime: in alternate blocks of
	   four games long sequences under TP_TRAIN_RUNTIME, and
	   TP_TRAIN_RUNTIME_ZB where it builds the model (train.h); with
	   runtime_every 3 each kind meets every family of family_cycle */
	bool rt_game = every && i % every == 1 % every;
	bool rt_zb = rt_game && (i / 4) % 2 == 1;

	tp_rng_seed(&rng, R->o->seed * 1000003u + i);
	g->seed = R->o->seed * 1000003u + i;
	g->heldout = k && i % k == k - 1;
	g->split = g->heldout ? (enum tp_train_split)((i / k) %
							TP_TRAIN_SPLITS)
			      : TP_TRAIN_SPLIT_SAME;
	g->fam = family_cycle[i % 8];
	memset(&d, 0, sizeof(d));
	d.fam = g->fam;
	d.max_devices = R->o->max_devices;
	/* family_cycle[0] is HF: large clusters get HF models; above
	   TP_TRAIN_HUGE_ABOVE one in TP_TRAIN_HUGE_EVERY of them huge, the
	   others as with that cap (train.h) */
	d.large = R->o->large_devices && i % TP_TRAIN_LARGE_EVERY == 0
			  ? R->o->large_devices
			  : 0;
	if (d.large > TP_TRAIN_HUGE_ABOVE &&
	    i % (TP_TRAIN_LARGE_EVERY * TP_TRAIN_HUGE_EVERY) != 0)
		d.large = TP_TRAIN_HUGE_ABOVE;
	d.held_family = g->split == TP_TRAIN_SPLIT_FAMILY;
	d.held_cluster = g->split == TP_TRAIN_SPLIT_CLUSTER;
	d.long_seq = rt_game && !rt_zb;
	d.llama = rt_zb;
	if (d.held_family)
		g->fam = TP_TRAIN_HF;
	tp_model_init(&g->m);
	tp_cluster_init(&g->c);
	if ((st = tp_train_draw_cluster(&rng, &d, &g->c, cdesc,
					sizeof(cdesc), err)))
		return st;
	d.min_batch = 2 * (int64_t)g->c.devices.n;
	if ((st = tp_train_draw_model(&rng, &d, &g->m, err)))
		return st;
	/* only where the runtime builds the model (megatron-core:
	   transformers; tagplan plan takes ddp for the others, whose only
	   plans are data parallel) */
	g->rt = NULL;
	if (rt_zb && tp_runtime_builds(&R->rt[1], &g->m, NULL, 0))
		g->rt = &R->rt[1];
	else if (rt_game && tp_runtime_builds(&R->rt[0], &g->m, NULL, 0))
		g->rt = &R->rt[0];
	/* a runtime without uneven shares runs the data-parallel start
	   only when the replicas divide the batch: a multiple of the
	   device count (as Megatron's micro-batch x dp x accumulation),
	   else no global candidate of the start would be runnable */
	if (g->rt && !g->rt->can.uneven_shares) {
		int64_t n = (int64_t)g->c.devices.n, b = g->m.global_batch,
			p = 1;
		while (n * p < b)
			p *= 2;
		g->m.global_batch = n * p;
	}
	snprintf(g->desc, sizeof(g->desc),
		 "%s (%zu ops, %lld tokens) on %s (%zu GPUs) under %s",
		 tp_train_family_name(g->fam), g->m.ops.n,
		 (long long)g->m.seq_len, cdesc, g->c.devices.n,
		 g->rt ? g->rt->name : "none");
	g->groups_asked =
		d.large > TP_TRAIN_HUGE_ABOVE ? TP_TRAIN_HUGE_GROUPS : 0;
	g->dist.on = R->o->distil_every && i % R->o->distil_every == 0 &&
		     !g->heldout;
	if ((st = tp_coarsen(&g->m, g->groups_asked, &g->g, err)) ||
	    (st = tp_space_init(&g->sp, &g->m, &g->c, &g->g, err)))
		return st;
	if (g->rt && (st = tp_space_set_runtime(&g->sp, g->rt, err)))
		return st;
	tp_sim_options_default(&so);
	if (g->rt)
		tp_sim_params_runtime(&so.params, g->rt);
	if (R->o->grad_bucket_bytes > 0)
		so.params.grad_bucket_bytes = R->o->grad_bucket_bytes;
	g->sim = tp_sim_new(&g->m, &g->c, &so, err);
	if (!g->sim)
		return err->status ? err->status : TP_ENOMEM;
	g->dec0 = tp_calloc(g->g.n, sizeof(*g->dec0));
	if (!g->dec0)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	{
		double fl = 0, peak = 0;
		for (size_t o = 0; o < g->m.ops.n; o++)
			fl += g->m.ops.v[o].flop + g->m.ops.v[o].backward_flop;
		for (uint32_t dv = 0; dv < g->c.devices.n; dv++)
			peak += tp_device_peak_flops(&g->c, dv, g->m.dtype);
		g->lb = peak > 0 ? fl * (double)g->m.global_batch / peak : 0;
	}
	return TP_OK;
}

struct job {
	struct run *R;
	struct tctx *t;
};

/* The next game a worker takes: the games in order, one each, those
 * `want` says no to skipped; false at the end, on the worker's error or
 * on a stop. */
static bool next_game(struct run *R, struct tctx *t,
		      bool (*want)(const struct run *R, uint32_t i),
		      uint32_t *out)
{
	for (;;) {
		uint32_t i;
		pthread_mutex_lock(&R->lock);
		i = R->next++;
		pthread_mutex_unlock(&R->lock);
		if (i >= R->n_games || t->st)
			return false;
		if (!want(R, i))
			continue;
		if (R->o->stop && *R->o->stop)
			return false;
		*out = i;
		return true;
	}
}

static bool in_phase(const struct run *R, uint32_t i)
{
	return R->games[i].heldout == R->held_phase;
}

static void *play_thread(void *arg)
{
	struct job *j = arg;
	struct run *R = j->R;
	struct tctx *t = j->t;
	uint32_t i;

	while (next_game(R, t, in_phase, &i)) {
		tp_rng_seed(&t->rng, R->games[i].seed ^
					     (0x9E3779B97F4A7C15ull *
					      (R->epoch + 1)));
		t->st = play_game(t, i, &R->games[i], R->playouts, R->explore,
				  &R->per_game[i]);
	}
	return NULL;
}

static enum tp_status run_parallel(struct run *R, void *(*fn)(void *),
				   struct tp_error *err);

static bool distilled(const struct run *R, uint32_t i)
{
	return R->games[i].dist.on;
}

/* The long searches of the distilled games (distil.c), in parallel. */
static void *distil_thread(void *arg)
{
	struct job *j = arg;
	struct run *R = j->R;
	struct tctx *t = j->t;
	uint32_t i;

	while (next_game(R, t, distilled, &i))
		t->st = distil_search(t, &R->games[i]);
	return NULL;
}

/* Search the distilled games once and say what each search found. */
static enum tp_status distil_games(struct run *R, struct tp_error *err)
{
	struct tp_train_distil *D = &R->dist;
	double t0 = train_now();
	enum tp_status st;

	if (!R->o->distil_every)
		return TP_OK;
	if ((st = run_parallel(R, distil_thread, err)))
		return st;
	for (uint32_t i = 0; i < R->n_games; i++) {
		const struct game *g = &R->games[i];
		if (!g->dist.on)
			continue;
		D->games++;
		D->mapped += g->dist.have;
		D->answers += g->dist.have && g->dist.answer;
		D->search_seconds += g->dist.seconds;
		D->search_simulations += g->dist.sims;
		train_log(R->o,
			  "distil: game %u, %s: %llu simulations, %.1f s; "
			  "answer %.6g s (%s); best decision vector %.6g s%s",
			  i, g->desc, (unsigned long long)g->dist.sims,
			  g->dist.seconds, g->dist.answer_time,
			  g->dist.source[0] ? g->dist.source : "none",
			  g->dist.time,
			  !g->dist.have     ? " (none this game can follow)"
			  : g->dist.answer  ? " (the answer)"
					    : "");
	}
	train_log(R->o,
		  "distil: %u games searched (%u playouts each) in %.0f s: "
		  "%u give a path, %u of them the answer's",
		  D->games, R->o->distil_playouts, train_now() - t0, D->mapped,
		  D->answers);
	return TP_OK;
}

/* One epoch's levels of the distilled games into R->dist, and its log
 * line. */
static void distil_epoch(struct run *R)
{
	struct tp_train_distil e;
	uint32_t m;

	if (!R->o->distil_every)
		return;
	memset(&e, 0, sizeof(e));
	for (uint32_t i = 0; i < R->n_games; i++) {
		const struct distil_target *d = &R->games[i].dist;
		if (!d->have)
			continue;
		for (int k = 0; k < 2; k++)
			for (int l = 0; l < TP_TRAIN_DISTIL_LEVELS; l++) {
				e.levels[k][l] += d->levels[k][l];
				R->dist.levels[k][l] += d->levels[k][l];
			}
		e.kept += d->kept;
		e.target_pi += d->target_pi;
		e.own_pi += d->own_pi;
	}
	R->dist.kept += e.kept;
	R->dist.target_pi += e.target_pi;
	R->dist.own_pi += e.own_pi;
	m = e.levels[0][0] + e.levels[1][0];
	train_log(R->o,
		  "  distil levels (globals / groups): %u / %u matched (%u at "
		  "the keep candidate; target weight on the choice %.2f, the "
		  "level's own %.2f), %u / %u past 64 candidates, %u / %u no "
		  "candidate (jumped), %u / %u not valid in the state",
		  e.levels[0][0], e.levels[1][0], e.kept,
		  m ? e.target_pi / m : 0, m ? e.own_pi / m : 0,
		  e.levels[0][1], e.levels[1][1], e.levels[0][2],
		  e.levels[1][2], e.levels[0][3], e.levels[1][3]);
}

static enum tp_status run_parallel(struct run *R, void *(*fn)(void *),
				   struct tp_error *err)
{
	struct job jobs[64];
	pthread_t th[64];
	uint32_t nt = R->nt;

	R->next = 0;
	for (uint32_t i = 0; i < nt; i++) {
		jobs[i].R = R;
		jobs[i].t = &R->tc[i];
		R->tc[i].st = TP_OK;
	}
	if (nt == 1) {
		fn(&jobs[0]);
	} else {
		for (uint32_t i = 0; i < nt; i++)
			if (pthread_create(&th[i], NULL, fn, &jobs[i])) {
				for (uint32_t k = 0; k < i; k++)
					pthread_join(th[k], NULL);
				return tp_error_set(err, TP_EINTERNAL,
						    "cannot start a thread");
			}
		for (uint32_t i = 0; i < nt; i++)
			pthread_join(th[i], NULL);
	}
	for (uint32_t i = 0; i < nt; i++)
		if (R->tc[i].st) {
			*err = R->tc[i].err;
			return R->tc[i].st;
		}
	return TP_OK;
}

/* Self-play of the training games (held == false) or of the held-out
 * games (true) into *out, in game order. */
static enum tp_status selfplay(struct run *R, bool held, uint32_t playouts,
			       bool explore, struct samples *out,
			       struct tp_error *err)
{
	enum tp_status st;

	R->per_game = calloc(R->n_games, sizeof(*R->per_game));
	if (!R->per_game)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	R->held_phase = held;
	R->playouts = playouts;
	R->explore = explore;
	st = run_parallel(R, play_thread, err);
	for (uint32_t i = 0; i < R->n_games; i++) {
		if (!st && samples_append(out, &R->per_game[i]))
			st = tp_error_set(err, TP_ENOMEM, "out of memory");
		samples_free(&R->per_game[i]);
	}
	free(R->per_game);
	R->per_game = NULL;
	return st;
}

/* ------------------------------------------------------------------ */
/* optimisation */

static void *grad_thread(void *arg)
{
	struct job *j = arg;
	struct run *R = j->R;
	struct tctx *t = j->t;
	uint32_t id = (uint32_t)(t - R->tc);
	uint32_t lo = R->batch_n * id / R->nt, hi = R->batch_n * (id + 1) / R->nt;

	memset(t->grad, 0, R->net->n_params * sizeof(float));
	t->loss_p = t->loss_g = 0;
	t->n_loss = 0;
	for (uint32_t k = lo; k < hi && !t->st; k++) {
		const struct samples *S = R->batch_set;
		const struct sample *s = &S->s.v[R->batch_idx[k]];
		struct tp_gnn_input in;
		struct tp_gnn_targets tg;
		float l[2], gw[MAX_ACTIONS];
		double nw = 0;
		t->st = sample_input(t, &R->games[s->game], S, s, &in);
		if (t->st)
			break;
		/* the gain loss is a mean over the scored actions */
		for (uint32_t i = 0; i < s->n_act; i++)
			nw += S->gain_w.v[s->pi_off + i];
		for (uint32_t i = 0; i < s->n_act; i++)
			gw[i] = nw > 0 ? (float)(R->o->gain_weight *
						 S->gain_w.v[s->pi_off + i] /
						 nw)
				       : 0.0f;
		tg.pi = S->pi.v + s->pi_off;
		tg.gain = S->gain.v + s->pi_off;
		tg.gain_weight = gw;
		t->st = tp_gnn_train_targets(R->net, &in, &tg, &t->ad, t->grad,
					     l, &t->err);
		t->loss_p += l[0];
		t->loss_g += R->o->gain_weight > 0 ? l[1] / R->o->gain_weight
						   : 0;
		t->n_loss++;
	}
	return NULL;
}

/* One Adam step on the samples idx[0 .. n) of S; their mean policy
 * and gain losses into loss[0 .. 1]. */
static enum tp_status grad_step(struct run *R, struct tp_gnn_adam *adam,
				const struct samples *S, const uint32_t *idx,
				uint32_t n, double loss[2], struct tp_error *err)
{
	double *lp = &loss[0], *lg = &loss[1];
	enum tp_status st;
	float *g0 = R->tc[0].grad;
	size_t np = R->net->n_params;
	uint32_t cnt = 0;

	R->batch_set = S;
	R->batch_idx = idx;
	R->batch_n = n;
	if ((st = run_parallel(R, grad_thread, err)))
		return st;
	*lp = *lg = 0;
	for (uint32_t i = 0; i < R->nt; i++) {
		*lp += R->tc[i].loss_p;
		*lg += R->tc[i].loss_g;
		cnt += R->tc[i].n_loss;
		if (i)
			for (size_t k = 0; k < np; k++)
				g0[k] += R->tc[i].grad[k];
	}
	if (cnt) {
		*lp /= cnt;
		*lg /= cnt;
		for (size_t k = 0; k < np; k++)
			g0[k] /= (float)cnt;
	}
	tp_gnn_clip_grad(g0, np, R->o->clip);
	tp_gnn_adam_step(adam, R->net->w, g0);
	return TP_OK;
}

/* Held-out sums of one split (evaluate). */
struct held_sums {
	double ce, cu, top, n;
	double gm, gx, gy, gxx, gyy, gxy, gs, gn, gsn;
};

static double sums_corr(const struct held_sums *h)
{
	double vx, vy;

	if (h->gn <= 1)
		return 0;
	vx = h->gxx - h->gx * h->gx / h->gn;
	vy = h->gyy - h->gy * h->gy / h->gn;
	return vx > 0 && vy > 0
		       ? (h->gxy - h->gx * h->gy / h->gn) / sqrt(vx * vy)
		       : 0;
}

/* One held-out state's figures into h (and into all). */
static void sums_add(struct held_sums *h, const struct samples *S,
		     const struct sample *s, const float *pri, const float *q)
{
	const float *pi = S->pi.v + s->pi_off;
	uint32_t am = 0, at = 0;

	for (uint32_t k = 0; k < s->n_act; k++) {
		float y = S->gain.v[s->pi_off + k];
		if (!(S->gain_w.v[s->pi_off + k] > 0))
			continue;
		h->gm += (q[k] - y) * (q[k] - y);
		h->gx += q[k];
		h->gy += y;
		h->gxx += (double)q[k] * q[k];
		h->gyy += (double)y * y;
		h->gxy += (double)q[k] * y;
		h->gn++;
		/* better or worse than the state by over 1% */
		if (fabs(y) > tanh(TP_GNN_GAIN_SCALE * 0.01)) {
			h->gs += (q[k] > 0) == (y > 0);
			h->gsn++;
		}
	}
	for (uint32_t k = 0; k < s->n_act; k++) {
		if (pi[k] > 0) {
			h->ce -= pi[k] * log(fmax(pri[k], 1e-12));
			h->cu -= pi[k] * log(1.0 / s->n_act);
		}
		if (pri[k] > pri[am])
			am = k;
		if (pi[k] > pi[at])
			at = k;
	}
	h->top += am == at;
	h->n++;
}

/* Held-out metrics of the current network, over all held-out games and
 * per split. */
static enum tp_status evaluate(struct run *R, struct tp_train_epoch *ep,
			       struct tp_error *err)
{
	struct tctx *t = &R->tc[0];
	struct held_sums all, sp[TP_TRAIN_SPLITS];
	float pri[MAX_ACTIONS], q[MAX_ACTIONS];

	memset(&all, 0, sizeof(all));
	memset(sp, 0, sizeof(sp));
	for (size_t i = 0; i < R->held.s.n; i++) {
		const struct sample *s = &R->held.s.v[i];
		const struct game *g = &R->games[s->game];
		struct tp_gnn_input in;
		enum tp_status st;
		if ((st = sample_input(t, &R->games[s->game], &R->held, s,
				       &in)) ||
		    (st = tp_gnn_infer_gains(R->net, &in, &t->ad, pri, q,
					     &t->err))) {
			*err = t->err;
			return st;
		}
		sums_add(&all, &R->held, s, pri, q);
		sums_add(&sp[g->split], &R->held, s, pri, q);
	}
	ep->heldout_policy = all.n ? all.ce / all.n : 0;
	ep->heldout_uniform = all.n ? all.cu / all.n : 0;
	ep->heldout_top1 = all.n ? all.top / all.n : 0;
	ep->heldout_gain = all.gn ? all.gm / all.gn : 0;
	ep->heldout_gain_sign = all.gsn ? all.gs / all.gsn : 0;
	ep->heldout_gain_corr = sums_corr(&all);
	for (int k = 0; k < TP_TRAIN_SPLITS; k++) {
		struct tp_train_split_figures *f = &ep->split[k];
		const struct held_sums *h = &sp[k];
		f->states = (uint32_t)h->n;
		f->policy = h->n ? h->ce / h->n : 0;
		f->uniform = h->n ? h->cu / h->n : 0;
		f->top1 = h->n ? h->top / h->n : 0;
		f->gain_corr = sums_corr(h);
		f->gain_sign = h->gsn ? h->gs / h->gsn : 0;
	}
	return TP_OK;
}

/*
 * The rows of policy.W1 met by an action feature that does not vary
 * over the norm samples (variance at most 1e-6) start at zero instead of
 * random values.  A feature that never varies in the corpus is 0 after
 * normalisation in every training input, so its rows get no gradient
 * and would keep their random initial values, which a search meeting
 * the feature set would add to the candidate's logit (interleaving and
 * sequence parallelism, which self-play never offers at level 0, its
 * only global decision; zb-h1 when the corpus has no game under a
 * runtime that runs it, runtime_every and train.h TP_TRAIN_RUNTIME_ZB).
 * Zero, they stay zero (no gradient, decoupled weight decay): the
 * network ignores such a feature as it ignores the slots a widened
 * weights file pads (src/gnn/README "Widths").  A
 * feature merely rare (constant in the NORM_SAMPLES subsample, set in
 * some later input) learns from zero.  sum, sq, cnt: measure_norm's,
 * per input.
 */
static void zero_constant_actions(struct tp_gnn_net *net, const double *sum,
				  const double *sq, const double *cnt)
{
	const struct tp_gnn_config *c = &net->cfg;
	size_t at = (size_t)c->group_in + c->device_in;

	for (size_t i = 0; i < tp_gnn_net_tensor_count(net); i++) {
		uint32_t rows, cols;
		size_t off;
		const char *name = tp_gnn_net_tensor(net, i, &rows, &cols, &off);
		if (strcmp(name, "policy.W1") != 0)
			continue;
		for (uint32_t j = 0; j < c->action_in; j++) {
			double m, var;
			if (!cnt[at + j])
				continue;
			m = sum[at + j] / cnt[at + j];
			var = sq[at + j] / cnt[at + j] - m * m;
			if (var <= 1e-6)
				memset(net->w + off +
					       (size_t)(3 * c->hidden + j) * cols,
				       0, cols * sizeof(float));
		}
	}
}

/* Per-feature mean and std over up to NORM_SAMPLES samples. */
static enum tp_status measure_norm(struct run *R, const struct samples *S,
				   struct tp_error *err)
{
	struct tp_gnn_net *net = R->net;
	const struct tp_gnn_config *c = &net->cfg;
	size_t nf = net->norm.n;
	double *sum = tp_calloc(nf, sizeof(double));
	double *sq = tp_calloc(nf, sizeof(double));
	double *cnt = tp_calloc(nf, sizeof(double));
	struct tctx *t = &R->tc[0];
	size_t step = S->s.n > NORM_SAMPLES ? S->s.n / NORM_SAMPLES : 1;
	enum tp_status st = TP_OK;

	if (!sum || !sq || !cnt) {
		st = tp_error_set(err, TP_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < S->s.n; i += step) {
		struct tp_gnn_input in;
		const struct tp_tensor *blocks[4];
		size_t off = 0;
		if ((st = sample_input(t, &R->games[S->s.v[i].game], S,
				       &S->s.v[i], &in))) {
			*err = t->err;
			goto out;
		}
		{
			struct tp_tensor gx = tp_tensor_view(
				(float *)in.global_x, 1, c->global_in);
			blocks[0] = &in.group_x;
			blocks[1] = &in.device_x;
			blocks[2] = &in.action_x;
			blocks[3] = &gx;
			for (int b = 0; b < 4; b++) {
				const struct tp_tensor *x = blocks[b];
				for (uint32_t r = 0; r < x->rows; r++)
					for (uint32_t j = 0; j < x->cols; j++) {
						double v = *tp_tensor_at(x, r, j);
						sum[off + j] += v;
						sq[off + j] += v * v;
						cnt[off + j] += 1;
					}
				off += x->cols;
			}
			for (int e = 0; e < TP_GNN_ETYPES; e++) {
				const struct tp_tensor *x = &in.edge_x[e];
				for (uint32_t r = 0; r < x->rows; r++)
					for (uint32_t j = 0; j < x->cols; j++) {
						double v = *tp_tensor_at(x, r, j);
						sum[off + j] += v;
						sq[off + j] += v * v;
						cnt[off + j] += 1;
					}
				off += x->cols;
			}
		}
	}
	for (size_t j = 0; j < nf; j++) {
		double m = cnt[j] ? sum[j] / cnt[j] : 0;
		double var = cnt[j] ? sq[j] / cnt[j] - m * m : 1;
		double sd = var > 1e-6 ? sqrt(var) : 1.0;
		net->norm.mean[j] = (float)m;
		net->norm.std[j] = (float)sd;
	}
	zero_constant_actions(net, sum, sq, cnt);
out:
	free(sum);
	free(sq);
	free(cnt);
	return st;
}

/* ------------------------------------------------------------------ */

static enum tp_status refresh_prior(struct run *R, struct tp_error *err)
{
	struct tp_gnn_net *copy;
	unsigned char *buf;
	size_t len;
	struct tp_gnn_widths w;
	enum tp_status st;

	/* self-play threads read a frozen copy of the network */
	for (uint32_t i = 0; i < R->nt; i++) {
		struct tctx *t = &R->tc[i];
		if (t->gp && t->gscratch) {
			struct tp_prior_provider pp;
			tp_gnn_prior_provider(t->gp, &pp);
			pp.scratch_free(pp.ctx, t->gscratch);
		}
		t->gscratch = NULL;
		t->gp = NULL;
	}
	tp_gnn_prior_free(R->gp);
	R->gp = NULL;
	if ((st = tp_gnn_weights_encode(R->net, &buf, &len, err)))
		return st;
	tp_gnn_feature_widths(&w);
	copy = tp_gnn_weights_decode("(training network)", buf, len, &w, err);
	free(buf);
	if (!copy)
		return err->status;
	R->gp = tp_gnn_prior_new(copy, "(training network)");
	if (!R->gp)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < R->nt; i++) {
		struct tp_prior_provider pp;
		tp_gnn_prior_provider(R->gp, &pp);
		R->tc[i].gp = R->gp;
		R->tc[i].gscratch = pp.scratch_new(pp.ctx);
		if (!R->tc[i].gscratch)
			return tp_error_set(err, TP_ENOMEM, "out of memory");
	}
	return TP_OK;
}

/* The network (fresh, or from the checkpoint: *start_epoch epochs done)
 * and its optimiser. */
static enum tp_status setup_network(struct run *R, struct tp_gnn_adam *adam,
				    uint32_t *start_epoch,
				    struct tp_error *err)
{
	const struct tp_train_options *o = R->o;
	struct tp_gnn_widths w;
	struct tp_gnn_config cfg;
	struct tp_rng rng;
	enum tp_status st;

	tp_gnn_feature_widths(&w);
	if (o->resume) {
		if ((st = ckpt_load(o->resume, &R->net, adam, start_epoch,
				    o->lr, err)))
			return st;
		train_log(o, "resumed from %s after %u epochs", o->resume,
			  *start_epoch);
	} else {
		tp_gnn_config_default(&cfg, w.group, w.device, w.action,
				      w.global, w.edge);
		if (o->hidden)
			cfg.hidden = o->hidden;
		if (o->layers)
			cfg.layers = o->layers;
		cfg.head_hidden = cfg.hidden;
		tp_rng_seed(&rng, o->seed);
		R->net = tp_gnn_net_new(&cfg, &rng, err);
		if (!R->net)
			return err->status;
		if ((st = tp_gnn_adam_init(adam, R->net->n_params, o->lr, err)))
			return st;
	}
	adam->lr = o->lr;
	adam->weight_decay = o->weight_decay;
	/* the kernel set goes into the checkpoints and the weights file */
	if (o->resume && R->net->meta.blas[0] &&
	    strcmp(R->net->meta.blas, tp_tensor_blas_core()) != 0)
		train_log(o,
			  "the checkpoint was trained on OpenBLAS's %s "
			  "kernels, this run uses %s: the weights will match "
			  "a run on either alone in neither",
			  R->net->meta.blas, tp_tensor_blas_core());
	snprintf(R->net->meta.blas, sizeof(R->net->meta.blas), "%s",
		 tp_tensor_blas_core());
	return TP_OK;
}

/* Every thread's context, with its gradient buffer. */
static enum tp_status setup_threads(struct run *R, struct tp_error *err)
{
	for (uint32_t i = 0; i < R->nt; i++) {
		struct tctx *t = &R->tc[i];
		t->o = R->o;
		t->games = R->games;
		t->n_games = R->o->games;
		tp_plan_init(&t->plan);
		tp_report_init(&t->rep);
		tp_ad_init(&t->ad);
		t->grad = tp_calloc(R->net->n_params, sizeof(float));
		if (!t->grad)
			return tp_error_set(err, TP_ENOMEM, "out of memory");
	}
	return TP_OK;
}

/* The corpus of games; the held-out ones are every k-th. */
static enum tp_status build_corpus(struct run *R, struct tp_error *err)
{
	const struct tp_train_options *o = R->o;
	struct tp_sim_params pa;
	uint32_t nh = 0;
	uint32_t nr[2] = {0, 0}, nl = 0;
	enum tp_status st;

	if (o->runtime_every &&
	    ((st = tp_runtime_find(TP_TRAIN_RUNTIME, &R->rt[0], err)) ||
	     (st = tp_runtime_find(TP_TRAIN_RUNTIME_ZB, &R->rt[1], err))))
		return st;
	for (uint32_t i = 0; i < o->games; i++) {
		if ((st = build_game(R, i, err))) {
			tp_error_set_file(err, "");
			return st;
		}
	}
	tp_sim_params_default(&pa);
	for (uint32_t i = 0; i < o->games; i++) {
		nh += R->games[i].heldout;
		if (R->games[i].rt)
			nr[R->games[i].rt != &R->rt[0]]++;
		nl += R->games[i].m.seq_len >= 2 * TP_SPACE_CP_MIN_TOKENS;
	}
	train_log(o,
		  "corpus: %u games (%u held out; %u under %s, %u under %s, "
		  "the others under none; %u of at least %d tokens), e.g. %s; "
		  "gradient buckets of %.6g MB",
		  o->games, nh, nr[0], TP_TRAIN_RUNTIME, nr[1],
		  TP_TRAIN_RUNTIME_ZB, nl, 2 * TP_SPACE_CP_MIN_TOKENS,
		  R->games[0].desc,
		  (o->grad_bucket_bytes > 0 ? o->grad_bucket_bytes
					    : pa.grad_bucket_bytes) /
			  1e6);
	return TP_OK;
}

/* The optimisation steps of epoch e over the buffer (this epoch's and
 * the previous epoch's samples), reshuffled each time it is used up; the
 * training losses are the mean over the last quarter of the steps. */
static enum tp_status optimise(struct run *R, struct tp_gnn_adam *adam,
			       uint32_t e, struct tp_train_epoch *ep,
			       uint32_t *steps_out, struct tp_error *err)
{
	const struct tp_train_options *o = R->o;
	struct samples all;
	struct tp_rng rng;
	uint32_t steps, nbuf, *idx = NULL;
	double lp = 0, lg = 0;
	enum tp_status st = TP_OK;

	memset(&all, 0, sizeof(all));
	if (samples_append(&all, &R->prev) || samples_append(&all, &R->cur)) {
		st = tp_error_set(err, TP_ENOMEM, "out of memory");
		goto out;
	}
	nbuf = (uint32_t)all.s.n;
	steps = o->steps ? o->steps
			 : (uint32_t)(2 * (size_t)R->cur.s.n / o->batch + 1);
	*steps_out = steps;
	idx = tp_calloc(nbuf ? nbuf : 1, sizeof(uint32_t));
	if (!idx) {
		st = tp_error_set(err, TP_ENOMEM, "out of memory");
		goto out;
	}
	tp_rng_seed(&rng, o->seed ^ (0xA5A5A5A5ull + e));
	for (uint32_t i = 0; i < nbuf; i++)
		idx[i] = i;
	for (uint32_t s = 0, pos = nbuf; s < steps && nbuf; s++) {
		uint32_t n = o->batch < nbuf ? o->batch : nbuf;
		double l[2];
		if (pos + n > nbuf) { /* reshuffle */
			for (uint32_t i = nbuf - 1; i > 0; i--) {
				uint32_t j = (uint32_t)tp_rng_below(&rng,
								    i + 1);
				uint32_t x = idx[i];
				idx[i] = idx[j];
				idx[j] = x;
			}
			pos = 0;
		}
		if ((st = grad_step(R, adam, &all, idx + pos, n, l, err)))
			goto out;
		pos += n;
		if (4 * s >= 3 * steps) {
			lp += l[0];
			lg += l[1];
			ep->samples++;
		}
	}
	if (ep->samples) {
		ep->train_policy = lp / ep->samples;
		ep->train_gain = lg / ep->samples;
	}
	ep->samples = (uint32_t)R->cur.s.n;
out:
	free(idx);
	samples_free(&all);
	return st;
}

/* One epoch: self-play with the current network, optimisation,
 * held-out evaluation, the log line and the checkpoint. */
static enum tp_status train_epoch(struct run *R, struct tp_gnn_adam *adam,
				  uint32_t e, struct tp_train_epoch *ep,
				  struct tp_error *err)
{
	const struct tp_train_options *o = R->o;
	double te = train_now();
	uint32_t steps = 0;
	enum tp_status st;

	memset(ep, 0, sizeof(*ep));
	ep->epoch = e;
	R->epoch = e + 1;
	if (e > 0 && (st = refresh_prior(R, err)))
		return st;
	samples_free(&R->prev);
	R->prev = R->cur;
	memset(&R->cur, 0, sizeof(R->cur));
	if ((st = selfplay(R, false, o->playouts, true, &R->cur, err)))
		return st;
	distil_epoch(R);
	if (e == 0 && !o->resume && (st = measure_norm(R, &R->cur, err)))
		return st;
	if ((st = optimise(R, adam, e, ep, &steps, err)))
		return st;
	if ((st = evaluate(R, ep, err)))
		return st;
	ep->seconds = train_now() - te;
	train_log(o,
		  "epoch %u/%u: %u samples, %u steps; train policy %.3f "
		  "gain %.4f; held-out policy %.3f (uniform %.3f) top-1 "
		  "%.0f%% gain %.4f (corr %.2f, signs %.0f%%); %.0f s",
		  e + 1, o->epochs, ep->samples, steps, ep->train_policy,
		  ep->train_gain, ep->heldout_policy, ep->heldout_uniform,
		  100 * ep->heldout_top1, ep->heldout_gain, ep->heldout_gain_corr,
		  100 * ep->heldout_gain_sign, ep->seconds);
	for (int k = 0; k < TP_TRAIN_SPLITS; k++)
		train_log(o,
			  "  held-out split %-7s %5u states: policy %.3f "
			  "(uniform %.3f) top-1 %.0f%% gain corr %.2f, signs "
			  "%.0f%%",
			  tp_train_split_name((enum tp_train_split)k),
			  ep->split[k].states, ep->split[k].policy,
			  ep->split[k].uniform, 100 * ep->split[k].top1,
			  ep->split[k].gain_corr, 100 * ep->split[k].gain_sign);
	R->net->meta.epochs = e + 1;
	if (o->checkpoint &&
	    (st = ckpt_save(o->checkpoint, R->net, adam, e + 1, err)))
		return st;
	return TP_OK;
}

/* The weights file, with what training it came from. */
static enum tp_status save_weights(struct run *R,
				   struct tp_train_result *res,
				   struct tp_error *err)
{
	const struct tp_train_options *o = R->o;
	struct tp_gnn_meta *m = &R->net->meta;
	const struct tp_train_epoch *last =
		res->epochs_done ? &res->epoch[res->epochs_done - 1] : NULL;

	m->seed = o->seed;
	m->games = o->games;
	m->samples = last ? last->samples : 0;
	m->train_loss = last ? (float)last->train_policy : 0;
	m->heldout_loss = last ? (float)last->heldout_policy : 0;
	m->train_seconds = res->seconds;
	/* the domain it was trained on (provider.h covers): the most GPUs
	   of a game it learnt from; the held-out games only measure it.
	   Set only here: the checkpoints keep 0, and a resumed run builds
	   the same corpus again */
	m->corpus_gpus = 0;
	for (uint32_t i = 0; i < R->n_games; i++)
		if (!R->games[i].heldout &&
		    R->games[i].c.devices.n > m->corpus_gpus)
			m->corpus_gpus = (uint32_t)R->games[i].c.devices.n;
	res->corpus_gpus = m->corpus_gpus;
	snprintf(m->version, sizeof(m->version), "%s", TP_VERSION);
	snprintf(m->note, sizeof(m->note), "%s", o->note ? o->note : "");
	return tp_gnn_weights_save(R->net, o->out, err);
}

enum tp_status tp_train_run(const struct tp_train_options *o,
			    struct tp_train_result *res, struct tp_error *err)
{
	struct run R;
	struct tp_gnn_adam adam;
	uint32_t start_epoch = 0;
	double t0 = train_now();
	enum tp_status st = TP_OK;

	memset(res, 0, sizeof(*res));
	memset(&R, 0, sizeof(R));
	memset(&adam, 0, sizeof(adam));
	if (o->games < 2 || o->threads < 1 || o->threads > 64 ||
	    o->epochs > TP_TRAIN_MAX_EPOCHS || o->batch < 1 ||
	    o->playouts < 2 || !(o->heldout >= 0 && o->heldout <= 0.5) ||
	    (o->distil_every &&
	     (o->distil_playouts < 1 ||
	      !(o->distil_weight >= 0 && o->distil_weight <= 1))))
		return tp_error_set(err, TP_EUSAGE,
				    "training options out of range: games >= "
				    "2, 1..64 threads, epochs <= %d, batch >= "
				    "1, playouts >= 2, held-out 0..0.5, "
				    "distillation playouts >= 1 and weight "
				    "0..1",
				    TP_TRAIN_MAX_EPOCHS);
	/* sgemm rounds differently per kernel set, and self-play follows
	   the priors: the weights are reproducible only on the same set */
	snprintf(res->blas, sizeof(res->blas), "%s", tp_tensor_blas_core());
	train_log(o,
		  "BLAS: OpenBLAS's %s kernels (%s); the weights depend on the "
		  "kernel set (OPENBLAS_CORETYPE chooses it)",
		  res->blas, tp_tensor_blas_config());
	R.o = o;
	R.nt = o->threads;
	R.n_games = o->games;
	pthread_mutex_init(&R.lock, NULL);
	R.games = calloc(o->games, sizeof(*R.games));
	R.tc = calloc(R.nt, sizeof(*R.tc));
	if (!R.games || !R.tc) {
		st = tp_error_set(err, TP_ENOMEM, "out of memory");
		goto out;
	}
	if ((st = setup_network(&R, &adam, &start_epoch, err)) ||
	    (st = setup_threads(&R, err)) || (st = build_corpus(&R, err)))
		goto out;
	/* held-out targets: a stronger uniform search (2x playouts) */
	R.epoch = 0;
	if ((st = selfplay(&R, true, 2 * o->playouts, false, &R.held, err)) ||
	    (st = distil_games(&R, err)))
		goto out;
	for (uint32_t e = start_epoch; e < o->epochs; e++) {
		if ((st = train_epoch(&R, &adam, e,
				      &res->epoch[res->epochs_done], err)))
			goto out;
		res->epochs_done++;
		if (o->stop && *o->stop) {
			res->interrupted = true;
			break;
		}
	}
	res->seconds = train_now() - t0;
	res->distil = R.dist;
	{
		uint32_t m = R.dist.levels[0][0] + R.dist.levels[1][0];
		res->distil.target_pi = m ? R.dist.target_pi / m : 0;
		res->distil.own_pi = m ? R.dist.own_pi / m : 0;
	}
	for (uint32_t i = 0; i < R.nt; i++) {
		res->playouts += R.tc[i].playouts;
		res->simulations += R.tc[i].sims;
	}
	if (o->out)
		st = save_weights(&R, res, err);
out:
	for (uint32_t i = 0; R.tc && i < R.nt; i++)
		tctx_release(&R.tc[i]);
	tp_gnn_prior_free(R.gp);
	for (uint32_t i = 0; R.games && i < o->games; i++)
		game_release(&R.games[i]);
	samples_free(&R.cur);
	samples_free(&R.prev);
	samples_free(&R.held);
	tp_gnn_adam_release(&adam);
	tp_gnn_net_free(R.net);
	free(R.games);
	free(R.tc);
	pthread_mutex_destroy(&R.lock);
	return st;
}
