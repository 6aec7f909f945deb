/*
 * train.h - self-play training of the GNN (`tagplan train`).
 *
 * Expert iteration, as in AlphaZero and TAG: a corpus of models (HF
 * architectures with random realistic dimensions, GPT-style
 * transformers, ResNet-style CNNs, random DAGs and two zoo models, varied
 * sizes; train.c family_cycle) on random clusters (1-8 nodes of mixed
 * presets, mixed networks, at GPU granularity; with large_devices one
 * game in TP_TRAIN_LARGE_EVERY on 9 or more nodes, above
 * TP_TRAIN_HUGE_ABOVE one in four of those on 33 or more), with held-out
 * splits by model family and by node kind (enum tp_train_split), is
 * planned by Monte Carlo tree search over the
 * search's own action space (src/search/actions.h) with every state scored
 * by the simulator (src/sim/); one game in runtime_every under a runtime
 * profile, as `tagplan plan` searches (TP_TRAIN_RUNTIME below: the space
 * limited to what it executes, the simulator with its behaviour, half of
 * those games with 8K-32K-token sequences), the others under none.
 * At every decision level of a self-play game the search runs a fixed
 * number of playouts from the current state;
 * every candidate action is scored once (the plan with that decision
 * changed) and then the playouts search deeper; the policy target is a
 * softmax (temperature 0.02 on the search's value scale, about 1.3% of
 * iteration time) of the candidates' own values -- or, with
 * visit_targets, AlphaZero's visit distribution, which stays nearly flat
 * here because one group's decision moves the iteration time by a few
 * percent at most (and the best value found below an action is no better
 * a target: it grows with the visits the prior itself sends there, which
 * made the held-out loss rise from the second epoch on) -- the gain
 * targets are each action's
 * own plan against the state's (features.h tp_gnn_gain_target; a mean
 * squared error over the scored actions, weight gain_weight), and the
 * game moves on to the target's
 * most likely action (sampled from it in the first half of the levels).
 * Epoch 0 searches with uniform priors; later epochs with the network
 * being trained.  With distil_every (off by default), a share of the
 * games is planned once by `tagplan plan`'s own long search and their
 * self-play follows that plan, its targets leaning on the plan's
 * choices (distil.c, options below).
 * After each epoch's games the network is trained on the last two epochs'
 * samples (Adam, gradient clipping) and evaluated on a held-out split of
 * the corpus (games never trained on): policy cross-entropy, how often
 * its top action is the search's and the gain head's error and
 * correlation.  (No value target since weights version 3: the value head
 * was dropped, src/gnn/README "Values".)
 *
 * Reproducibility: everything derives from the seed; with the same seed,
 * thread count and options the result is bit-identical.  A checkpoint
 * (written after every epoch when a path is given) holds the network, the
 * optimiser state and the epoch count; resuming replays the next epoch's
 * games with the restored network (the replay buffer of the interrupted
 * epoch is not kept, so a resumed run differs from an uninterrupted one
 * from that epoch on).
 *
 * Logging: progress lines go to options->log (the CLI prints them on
 * stderr); the library itself never prints.
 *
 * Ownership: tp_train_run writes the weights file itself (atomically) and
 * owns every model, cluster and search structure it creates.
 */
#ifndef TP_TRAIN_H
#define TP_TRAIN_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"
#include "core/model.h"
#include "core/rng.h"

struct tp_train_options {
	uint64_t seed;
	uint32_t games;       /* corpus size (model, cluster pairs) */
	uint32_t epochs;
	uint32_t threads;     /* >= 1 */
	uint32_t playouts;    /* MCTS playouts per decision level */
	uint32_t steps;       /* optimiser steps per epoch (0 = automatic) */
	uint32_t batch;       /* samples per optimiser step */
	double heldout;       /* fraction of games held out, 0..0.5 */
	float lr;
	float clip;           /* gradient-norm clipping */
	float gain_weight;    /* gain loss weight (mean over actions) */
	float weight_decay;   /* AdamW decoupled decay (per step, x lr) */
	uint32_t hidden;      /* network width (0 = default 64) */
	uint32_t layers;      /* message-passing layers (0 = default 3) */
	uint32_t max_devices; /* cluster size cap of the corpus (0 = 32) */
	uint32_t large_devices; /* one game in TP_TRAIN_LARGE_EVERY on a
				   large cluster of up to this many GPUs
				   (0 = none, the default; corpus.c) */
	uint32_t runtime_every; /* one game in this many (game index i with
				   i % runtime_every == 1 % runtime_every)
				   under a runtime where one builds the
				   model (TP_TRAIN_RUNTIME below), the rest
				   under none (0 = every game; default 3) */
	double grad_bucket_bytes; /* gradient bucket the self-play simulator
				     gives the runtime (0 = the simulator's
				     default, tp_sim_params.grad_bucket_bytes) */
	const char *out;      /* weights file to write (NULL = none) */
	const char *checkpoint; /* written after every epoch (NULL = none) */
	const char *resume;     /* checkpoint to start from (NULL = none) */
	const char *note;       /* stored in the weights file */
	bool visit_targets;     /* policy target = visit counts (AlphaZero)
				   instead of the softmax of the actions'
				   best values (default) */
	/* Distillation of long searches (distil.c; 0 = off, the default):
	   game i with i % distil_every == 0, unless held out, is planned
	   once by `tagplan plan`'s search (tp_search_run, unguided, one
	   thread, no time limit, distil_playouts playouts) before epoch 1,
	   and every epoch its self-play game follows that search's best
	   decision vector: at each level whose candidates hold the
	   vector's choice, the sample's policy target is (1 -
	   distil_weight) x the level's own target + distil_weight on that
	   choice, and the game moves there (TP_TRAIN_DISTIL below). */
	uint32_t distil_every;
	uint32_t distil_playouts; /* >= 1 when distil_every > 0 */
	float distil_weight;      /* 0..1 */
	void (*log)(void *ctx, const char *line);
	void *log_ctx;
	volatile sig_atomic_t *stop; /* nonzero: finish the epoch and stop */
};

void tp_train_options_default(struct tp_train_options *o);

/* The held-out games cycle through three splits (train.c build_game):
 * games drawn like the training games, games of a model family that no
 * training game has (TP_TRAIN_HELD_FAMILY) and games on a cluster with a
 * node kind that no training game has (TP_TRAIN_HELD_PRESETS). */
enum tp_train_split {
	TP_TRAIN_SPLIT_SAME,
	TP_TRAIN_SPLIT_FAMILY,
	TP_TRAIN_SPLIT_CLUSTER,
	TP_TRAIN_SPLITS
};

const char *tp_train_split_name(enum tp_train_split s);

/* Held-out figures of one split. */
struct tp_train_split_figures {
	uint32_t states;
	double policy, uniform, top1, gain_corr, gain_sign;
};

struct tp_train_epoch {
	uint32_t epoch;
	uint32_t samples;
	double train_policy;                  /* mean loss, last steps */
	double heldout_policy;                /* held-out loss */
	double train_gain, heldout_gain;      /* gain head squared error */
	double heldout_gain_corr;             /* its correlation with the
						 targets */
	double heldout_gain_sign;             /* share of the actions over
						 1% better or worse whose
						 sign it gets right */
	double heldout_top1;                  /* argmax agreement */
	double heldout_uniform;               /* cross-entropy of uniform
						 priors on the held-out set */
	struct tp_train_split_figures split[TP_TRAIN_SPLITS];
	double seconds;
};

#define TP_TRAIN_MAX_EPOCHS 256

/* Distillation (options distil_*): the defaults of `tagplan train
 * --distil-every N`.  The weight: at 0.5 the long search's choice is
 * the target's most likely action (the others share at most the other
 * half), and the level's own ranking of the other candidates keeps half
 * the target (one plan's choice says nothing of them); src/gnn/README,
 * "Distillation". */
#define TP_TRAIN_DISTIL_PLAYOUTS 20000
#define TP_TRAIN_DISTIL_WEIGHT 0.5

/* Why a level of a distilled game did not take the long search's choice
 * (tp_train_distil.levels). */
enum tp_train_distil_level {
	TP_TRAIN_DISTIL_MATCHED,  /* a candidate: the target leans there */
	TP_TRAIN_DISTIL_BEYOND,   /* a candidate past the first 64 */
	TP_TRAIN_DISTIL_OUTSIDE,  /* not a candidate of the state (e.g.
				     global settings changed in several
				     ways at once): the game jumps there,
				     no target */
	TP_TRAIN_DISTIL_INVALID,  /* not valid in the state (e.g. under
				     the path's global settings): the game
				     takes its own move */
	TP_TRAIN_DISTIL_LEVELS
};

/* What distillation did, summed over the run's distilled games: the
 * long searches once, the levels over every epoch's self-play ([0] the
 * global-settings level, [1] the group levels). */
struct tp_train_distil {
	uint32_t games;       /* searched (distil_every, not held out) */
	uint32_t mapped;      /* whose best decision vector this game's
				 levels can follow (same groups) */
	uint32_t answers;     /* whose vector is the search's answer (not
				 a plan scored as is) */
	double search_seconds;
	uint64_t search_simulations;
	uint32_t levels[2][TP_TRAIN_DISTIL_LEVELS];
	uint32_t kept;        /* matched levels whose choice was the
				 candidate that keeps the state */
	double target_pi;     /* mean, over the matched levels' samples,
				 of the target's policy weight on the
				 search's choice */
	double own_pi;        /* ... of the level's own target there */
};

struct tp_train_result {
	uint32_t epochs_done;
	struct tp_train_epoch epoch[TP_TRAIN_MAX_EPOCHS];
	double seconds;
	uint64_t playouts, simulations;
	bool interrupted;
	char blas[32]; /* OpenBLAS kernel set it ran on (also in the
			  weights file: gnn/weights.h) */
	uint32_t corpus_gpus; /* with o->out: the most GPUs of a training
				 game (held-out ones aside), as the weights
				 file records it (gnn/net.h tp_gnn_meta) */
	struct tp_train_distil distil; /* with distil_every */
};

/*
 * Train and write o->out.  Returns TP_OK, TP_EUSAGE for inconsistent
 * options, TP_EINPUT for a bad checkpoint (naming it), TP_EIO, TP_ENOMEM.
 */
enum tp_status tp_train_run(const struct tp_train_options *o,
			    struct tp_train_result *res,
			    struct tp_error *err);

/* ------------------------------------------------------------------ */
/* the corpus (also used by the benchmarks and tests) */

enum tp_train_family {
	TP_TRAIN_TRANSFORMER, /* random GPT (io/build.h tp_build_gpt) */
	TP_TRAIN_CNN,         /* random ResNet-like */
	TP_TRAIN_DAG,         /* random DAG */
	TP_TRAIN_HF,          /* a HF architecture (llama, mistral, qwen2,
				 phi3, olmo, falcon, mixtral, qwen2_moe,
				 gpt2, bert, t5, vit) with random dimensions
				 of realistic width (tp_build_hf_text) */
	TP_TRAIN_ZOO,         /* a zoo model no benchmark plans
				 (mobilenet-v2, transformer), random batch */
	TP_TRAIN_FAMILY_COUNT
};

const char *tp_train_family_name(enum tp_train_family f);

/* The held-out model family (an HF architecture no training game has)
 * and node presets (no training cluster has them). */
#define TP_TRAIN_HELD_FAMILY "gemma"
#define TP_TRAIN_HELD_PRESETS "hgx-h200, dgx-b200"
/* The runtime profiles of the runtime_every games, so that self-play
 * meets what the searches of `tagplan plan` meet (it plans under a
 * runtime by default): the space limited to what the runtime executes
 * (even shares; search/actions.h tp_space_set_runtime), its actions and
 * the simulator pricing plans with its behaviour (sim.h
 * tp_sim_params_runtime).  Of those games (train.c build_game), the
 * even-numbered ones (i / runtime_every) draw long sequences (8,192 to
 * 32,768 tokens for HF decoders: context parallelism) and run under
 * TP_TRAIN_RUNTIME, the one plan takes for transformers
 * (core/runtime.h tp_runtime_default_name); the odd-numbered ones run
 * under TP_TRAIN_RUNTIME_ZB where it builds the model (Llama-style
 * decoders: the only shipped profile with zb-h1), else under
 * TP_TRAIN_RUNTIME.  Models no runtime of the two builds (CNNs, DAGs)
 * stay under none. */
#define TP_TRAIN_RUNTIME "megatron-core"
#define TP_TRAIN_RUNTIME_ZB "fsdp2"
/* One game in this many (an HF model: train.c family_cycle) is on a
 * large cluster when large_devices > 0: such a game costs about 20
 * small ones (src/gnn/README, Training). */
#define TP_TRAIN_LARGE_EVERY 8
/* With large_devices above TP_TRAIN_HUGE_ABOVE, one large game in
 * TP_TRAIN_HUGE_EVERY (game i with i % (TP_TRAIN_LARGE_EVERY x
 * TP_TRAIN_HUGE_EVERY) == 0) is huge: a cluster of TP_TRAIN_HUGE_ABOVE
 * / 8 + 1 to large_devices / 8 nodes (above TP_TRAIN_HUGE_ABOVE GPUs
 * where they are 8-GPU nodes), a dense HF model (no mixtral, qwen2_moe)
 * of 4-8 layers, cut into TP_TRAIN_HUGE_GROUPS groups; the other large
 * games draw what they draw with large_devices TP_TRAIN_HUGE_ABOVE, so
 * --large-devices 256 gives the corpus it gave before these games.  The
 * cost: a simulation's grows with GPUs and ops, and a game of 64 ops
 * in 16 groups cost 11 s of CPU on 280 GPUs, 75 s on 536 mixed ones
 * (src/gnn/README, "The corpus"). */
#define TP_TRAIN_HUGE_ABOVE 256
#define TP_TRAIN_HUGE_EVERY 4
#define TP_TRAIN_HUGE_GROUPS 4

/* What one game draws (tp_train_draw_model, tp_train_draw_cluster). */
struct tp_train_draw {
	enum tp_train_family fam;
	int64_t min_batch;     /* the model's global batch at least this */
	uint32_t max_devices;  /* small clusters: at most this many GPUs */
	uint32_t large;        /* > 0: a large cluster of up to this many
				  GPUs (8-GPU and PCIe server presets, 9 to
				  large / 8 nodes), and HF models of
				  hidden 4,096-8,192; above
				  TP_TRAIN_HUGE_ABOVE a huge game's (33 to
				  large / 8 nodes, 4-8 dense layers) */
	bool held_family;      /* an HF model of TP_TRAIN_HELD_FAMILY */
	bool held_cluster;     /* a node of TP_TRAIN_HELD_PRESETS */
	bool long_seq;         /* HF decoders (and gpt2) of 8,192-32,768
				  tokens, else 512-4,096 */
	bool llama;            /* HF models: a Llama-style decoder (llama,
				  mistral, qwen2), which TP_TRAIN_RUNTIME_ZB
				  builds */
};

enum tp_status tp_train_draw_model(struct tp_rng *rng,
				   const struct tp_train_draw *d,
				   struct tp_model *m, struct tp_error *err);
enum tp_status tp_train_draw_cluster(struct tp_rng *rng,
				     const struct tp_train_draw *d,
				     struct tp_cluster *c, char *desc,
				     size_t desc_size, struct tp_error *err);

/* A random model of a family in m (initialised; finalized on success).
 * The global batch is at least min_batch. */
enum tp_status tp_train_random_model(struct tp_rng *rng,
				     enum tp_train_family f, int64_t min_batch,
				     struct tp_model *m, struct tp_error *err);

/*
 * A random cluster in c (initialised; finalized): 1-8 nodes drawn from
 * mixed node presets (at most three kinds), one network, at most
 * max_devices GPUs.  Never the TAG testbed's composition.  desc (may be
 * NULL) receives the spec, e.g. "v100-nvlink:2 t4-pcie:1 --net 25gbe".
 */
enum tp_status tp_train_random_cluster(struct tp_rng *rng,
				       uint32_t max_devices,
				       struct tp_cluster *c, char *desc,
				       size_t desc_size, struct tp_error *err);

#endif
