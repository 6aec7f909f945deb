/*
 * train_int.h - private to src/train/: the self-play games (selfplay.c),
 * the training run (train.c) and its checkpoints (checkpoint.c) share
 * these.
 *
 * A game is one generated (model, cluster) with its action space and
 * simulator; a tctx is one thread's working set (its self-play tree,
 * caches and scratches per game, its gradient buffers); samples are the
 * training targets self-play records.
 */
#ifndef TP_TRAIN_INT_H
#define TP_TRAIN_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/prior.h"
#include "core/report.h"
#include "core/rng.h"
#include "core/vec.h"
#include "gnn/ad.h"
#include "gnn/features.h"
#include "gnn/net.h"
#include "gnn/provider.h"
#include "search/actions.h"
#include "search/coarsen.h"
#include "sim/sim.h"
#include "search/search.h"
#include "train.h"

#define MAX_ACTIONS 64      /* as the search's MAX_CHILDREN */
#define CPUCT 1.5
#define FPU_REDUCTION 0.05
#define SAMPLE_LEVELS_FRAC 0.5 /* sample moves in the first half */
#define NORM_SAMPLES 800
#define VALUE_TAU 0.02 /* temperature of value-based policy targets, in
			  search-value units (~1.3% of iteration time) */
#define CKPT_MAGIC "TPGNNCK\n"
#define CKPT_VERSION 1

/* A game's long search (distil.c): its best decision vector when the
 * game's levels can follow it, and what the last self-play did with
 * it. */
struct distil_target {
	bool on;       /* chosen (options distil_every, not held out) */
	bool have;     /* gl, dec hold the search's best decision vector */
	bool answer;   /* ... which is also its answer */
	struct tp_globals gl;
	struct tp_decision *dec;
	double time;   /* its iteration time (INFINITY: does not fit) */
	double answer_time; /* the search's answer's (INFINITY: ...) */
	char source[96];    /* where the answer came from */
	double seconds;
	uint64_t sims;
	/* the last self-play: levels by kind ([0] globals, [1] groups) and
	   outcome, matched levels at the keep candidate, and the sums of
	   the target's and the level's own weight on the choice */
	uint32_t levels[2][TP_TRAIN_DISTIL_LEVELS];
	uint32_t kept;
	double target_pi, own_pi;
};

struct game {
	uint64_t seed;
	enum tp_train_family fam;
	char desc[320];
	bool heldout;
	enum tp_train_split split; /* of a held-out game */
	const struct tp_runtime *rt; /* its runtime (the run's
					TP_TRAIN_RUNTIME or _ZB profile), NULL:
					none */
	struct tp_model m;
	struct tp_cluster c;
	struct tp_groups g;
	struct tp_space sp;
	struct tp_sim *sim;
	double lb;
	/* the starting incumbent: data parallel */
	struct tp_globals gl0;
	struct tp_decision *dec0;
	double ref;
	uint32_t groups_asked; /* tp_coarsen's argument for g */
	struct distil_target dist;
};

struct sample {
	uint32_t game, level, n_act;
	struct tp_globals gl;
	size_t dec_off, act_off, pi_off, rep_off; /* rep_off SIZE_MAX: none */
	float rep_time;
	uint8_t rep_feasible;
};

struct samples {
	TP_VEC(struct sample) s;
	TP_VEC(struct tp_decision) dec;
	TP_VEC(struct tp_action) act;
	TP_VEC(float) pi;
	TP_VEC(float) gain, gain_w; /* parallel to pi (gain head targets) */
	TP_VEC(float) rep; /* 3 per device: compute, comm, peak memory */
};

struct cache_ent {
	uint64_t key; /* 0 = empty */
	float time, over;
	uint8_t feasible, ok;
};

struct snode {
	uint32_t first_child, n_children;
	uint32_t visits;
	double wsum;
	float prior;
	float vmax; /* best search value found below */
	float v0;   /* search value of the node's own state */
	float t0;   /* its iteration time (INFINITY: not scored) */
	uint8_t fit0; /* it fits */
	float fpu;
	uint8_t expanded, terminal;
	struct tp_action action;
};

struct tctx {
	const struct tp_train_options *o;
	struct tp_gnn_prior *gp; /* NULL: uniform priors */
	void *gscratch;
	/* the game this context is set up for, and what it keeps per game
	 * (built on first use, indexed by game) */
	struct game *game;
	struct game *games;
	uint32_t n_games;
	struct tp_space_scratch *sscr, **sscr_of;
	struct tp_sim_scratch *simscr, **simscr_of;
	struct tp_gnn_features *feat, **feat_of;
	struct tp_plan plan;
	struct tp_report rep;
	struct cache_ent *cache;
	size_t cache_cap, cache_n;
	/* MCTS */
	TP_VEC(struct snode) nodes;
	struct tp_decision *dec;
	bool *decided;
	struct tp_prior_action pacts[MAX_ACTIONS];
	struct tp_action acts[MAX_ACTIONS];
	float priors[MAX_ACTIONS];
	uint32_t *path;
	struct tp_rng rng;
	uint64_t playouts, sims;
	/* training */
	struct tp_ad ad;
	float *grad;
	double loss_p, loss_g;
	uint32_t n_loss;
	struct tp_error err;
	enum tp_status st;
};

double train_now(void);
void train_log(const struct tp_train_options *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* selfplay.c */
void game_release(struct game *g);
void samples_free(struct samples *S);
int samples_append(struct samples *A, const struct samples *B);
void tctx_release(struct tctx *t);
enum tp_status tctx_bind(struct tctx *t, struct game *g, bool sim);
enum tp_status play_game(struct tctx *t, uint32_t gi, struct game *g,
			 uint32_t playouts, bool explore, struct samples *S);
enum tp_status sample_input(struct tctx *t, struct game *g,
			    const struct samples *S, const struct sample *x,
			    struct tp_gnn_input *in);

/* distil.c: the long search of a chosen game (once; g->dist), and at
 * one level of its self-play (after record() wrote the sample of node
 * root, whose policy target is pi) the move toward its best decision vector: DISTIL_FOLLOW with
 * *child the root's child to take (the sample's target mixed),
 * DISTIL_JUMP with gl / dec moved to the vector's choice off the tree
 * (the caller starts a new tree), DISTIL_OWN for the game's own move. */
enum distil_move { DISTIL_FOLLOW, DISTIL_JUMP, DISTIL_OWN };
enum tp_status distil_search(struct tctx *t, struct game *g);
enum distil_move distil_step(struct tctx *t, struct game *g, uint32_t level,
			     uint32_t root, float *pi, struct tp_globals *gl,
			     struct tp_decision *dec, uint32_t *child);

/* checkpoint.c: the network, its Adam state and the epochs done; load
 * gives a new network (caller frees) and refills a (learning rate lr). */
enum tp_status ckpt_save(const char *path, const struct tp_gnn_net *net,
			 const struct tp_gnn_adam *a, uint32_t epochs,
			 struct tp_error *err);
enum tp_status ckpt_load(const char *path, struct tp_gnn_net **net,
			 struct tp_gnn_adam *a, uint32_t *epochs, float lr,
			 struct tp_error *err);

#endif
