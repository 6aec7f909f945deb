/*
 * train.c - `tagplan train`: train the GNN by self-play and write its
 * weights file.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "io/io.h"
#include "train/train.h"

static const char usage[] =
	"[-o WEIGHTS] [--games N] [--epochs N] [--seed N]\n"
	"                     [--threads N] [--playouts N] [--resume CHECKPOINT]\n"
	"                     [--checkpoint FILE] ...";

static const char about[] =
	"Train the policy network (priors and predicted gains of the "
	"search's changes)\n"
	"that guides `tagplan plan` by self-play (expert iteration): random "
	"models\n"
	"(transformers, CNNs, random DAGs) on random clusters (1-8 nodes of "
	"mixed GPU\n"
	"presets and networks) are planned by Monte Carlo tree search scored "
	"by the\n"
	"simulator; the simulated times of the candidate changes are the "
	"network's\n"
	"targets.  Epoch 0 searches with uniform priors, later epochs with "
	"the network\n"
	"being trained.  Every epoch logs its losses and the held-out metrics "
	"on stderr\n"
	"and, with --checkpoint, writes a checkpoint that --resume continues "
	"from.  The\n"
	"result is bit-identical for the same options (seed, threads) on the "
	"same\n"
	"OpenBLAS kernel set, which it prints and records in the file "
	"(OpenBLAS picks it\n"
	"by CPU; OPENBLAS_CORETYPE=NAME forces one).  `make weights` "
	"reproduces the\n"
	"shipped network, data/tagplan.weights (--games 240 --epochs 3 "
	"--large-devices\n"
	"256, OPENBLAS_CORETYPE=Haswell).  Ctrl-C finishes the current epoch "
	"and writes\n"
	"the weights so far (exit 130); a second Ctrl-C stops at once, "
	"writing\nnothing more.";

/* --large-devices (train.h TP_TRAIN_LARGE_EVERY, TP_TRAIN_HUGE_ABOVE) */
#define LARGE_DEVICES_HELP                                                  \
	"one game in eight: an HF model on a large cluster of up to N GPUs " \
	"(0 = none); above 256 one in four of those huge: 33 or more "       \
	"nodes, a dense model of 4-8 layers in 4 groups"

/* --distil-every (train.h distil_every, TP_TRAIN_DISTIL_*) */
#define DISTIL_EVERY_HELP                                                   \
	"game i with i % N == 0 (not held out; with --large-devices and N = " \
	"8 the large games, N = 32 the huge ones): planned once by plan's "   \
	"search, its self-play follows that plan's decisions (0 = off)"
#define DISTIL_WEIGHT_HELP                                                  \
	"the weight a distilled level's policy target puts on the long "      \
	"search's choice (the rest: the level's own target)"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* SIGINT/SIGTERM set stop_flag: the first finishes the epoch, which can
 * take minutes; the handler resets itself, so a second one kills, as
 * plan's does.  The flag is cleared before the handlers exist (a signal
 * in between would be lost). */
static void catch_signals(struct sigaction *old_int,
			  struct sigaction *old_term)
{
	struct sigaction sa;

	stop_flag = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESETHAND;
	sigaction(SIGINT, &sa, old_int);
	sigaction(SIGTERM, &sa, old_term);
}

static void log_line(void *ctx, const char *line)
{
	bool quiet = *(bool *)ctx;
	if (!quiet)
		fprintf(stderr, "tagplan train: %s\n", line);
}

/* The weights and checkpoints are binary: to standard output that is a
 * terminal they would garble it, after the whole training (render's
 * PNG is refused the same way).  The usage error's code, else 0. */
static int binary_on_terminal(const char *out, const char *checkpoint)
{
	const char *opt = out && tp_file_same_output(out, "-") ? "-o"
			  : checkpoint && tp_file_same_output(checkpoint, "-")
			      ? "--checkpoint"
			      : NULL;

	if (!opt || !isatty(STDOUT_FILENO))
		return 0;
	return tp_cli_usage_error("train",
				  "%s %s would write binary %s to the "
				  "terminal: redirect it (> net.%s), or give "
				  "%s FILE",
				  opt, opt[1] == 'o' ? out : checkpoint,
				  opt[1] == 'o' ? "weights" : "checkpoints",
				  opt[1] == 'o' ? "weights" : "ckpt", opt);
}

/* The closing line on stderr (unless quiet). */
static void say_done(const char *out, const struct tp_train_result *res,
		     bool quiet)
{
	if (quiet)
		return;
	fprintf(stderr,
		"tagplan train: wrote %s after %u epochs in %.0f s (%llu "
		"playouts, %llu simulations; OpenBLAS's %s kernels; trained "
		"on clusters of up to %u GPUs)%s\n",
		out, res->epochs_done, res->seconds,
		(unsigned long long)res->playouts,
		(unsigned long long)res->simulations, res->blas,
		res->corpus_gpus, res->interrupted ? "; interrupted" : "");
}

int cmd_train(int argc, char **argv)
{
	struct tp_train_options o;
	struct tp_train_result *res;
	struct tp_error err;
	const char *out = "tagplan.weights";
	long long games, epochs, seed, threads, playouts, steps, batch,
		hidden = 64, layers = 3, maxdev, largedev, rtevery,
		dsevery = 0, dsplayouts = TP_TRAIN_DISTIL_PLAYOUTS;
	double lr, heldout, bucket_mb = tp_cli_grad_bucket_mb_default(),
		dsweight = TP_TRAIN_DISTIL_WEIGHT;
	bool quiet = false;
	struct sigaction old_int, old_term;
	int code;
	enum tp_status st;

	tp_train_options_default(&o);
	games = o.games;
	epochs = o.epochs;
	seed = (long long)o.seed;
	threads = o.threads;
	playouts = o.playouts;
	steps = o.steps;
	batch = o.batch;
	maxdev = o.max_devices;
	largedev = o.large_devices;
	rtevery = o.runtime_every;
	lr = o.lr;
	heldout = o.heldout;
	{
		struct tp_opt opts[] = {
			{"output", 'o', TP_OPT_STRING, &out, "WEIGHTS",
			 "weights file to write", 0, 0, false},
			{"games", 0, TP_OPT_INT, &games, "N",
			 "corpus size: (model, cluster) pairs", 2, 100000,
			 false},
			{"epochs", 0, TP_OPT_INT, &epochs, "N",
			 "self-play + training rounds", 0, TP_TRAIN_MAX_EPOCHS,
			 false},
			{"seed", 0, TP_OPT_INT, &seed, "N",
			 "seed of the corpus, the searches and the network", 0,
			 9.2e18, false},
			{"threads", 0, TP_OPT_INT, &threads, "N",
			 "worker threads", 1, 64, false},
			{"playouts", 0, TP_OPT_INT, &playouts, "N",
			 "MCTS playouts per decision level in self-play", 2,
			 1e6, false},
			{"steps", 0, TP_OPT_INT, &steps, "N",
			 "optimiser steps per epoch (0 = two passes over the "
			 "epoch's samples)",
			 0, 1e9, false},
			{"batch", 0, TP_OPT_INT, &batch, "N",
			 "samples per optimiser step", 1, 4096, false},
			{"lr", 0, TP_OPT_DOUBLE, &lr, "X", "Adam learning rate",
			 1e-7, 1, false},
			{"hidden", 0, TP_OPT_INT, &hidden, "N",
			 "network width", 8, 256, false},
			{"layers", 0, TP_OPT_INT, &layers, "N",
			 "message-passing layers", 1, 16, false},
			{"heldout", 0, TP_OPT_DOUBLE, &heldout, "X",
			 "fraction of the corpus held out for evaluation", 0,
			 0.5, false},
			{"max-devices", 0, TP_OPT_INT, &maxdev, "N",
			 "largest cluster of the corpus, GPUs", 2, 1024, false},
			{"large-devices", 0, TP_OPT_INT, &largedev, "N",
			 LARGE_DEVICES_HELP,
			 0, 4096, false},
			{"runtime-every", 0, TP_OPT_INT, &rtevery, "N",
			 "one game in N under a runtime that builds its model "
			 "(megatron-core, fsdp2; 0 = none)", 0, 100000, false},
			{"grad-bucket-mb", 0, TP_OPT_DOUBLE, &bucket_mb, "MB",
			 "the self-play simulator's " TP_CLI_GRAD_BUCKET_TEXT,
			 1e-3, 1e6, false},
			{"distil-every", 0, TP_OPT_INT, &dsevery, "N",
			 DISTIL_EVERY_HELP, 0, 100000, false},
			{"distil-playouts", 0, TP_OPT_INT, &dsplayouts, "N",
			 "playouts of a distilled game's search", 1, 1e7, false},
			{"distil-weight", 0, TP_OPT_DOUBLE, &dsweight, "X",
			 DISTIL_WEIGHT_HELP, 0, 1, false},
			{"resume", 0, TP_OPT_STRING, &o.resume, "CHECKPOINT",
			 "continue from a checkpoint", 0, 0, false},
			{"checkpoint", 0, TP_OPT_STRING, &o.checkpoint, "FILE",
			 "write a checkpoint after every epoch", 0, 0, false},
			{"visit-targets", 0, TP_OPT_FLAG, &o.visit_targets,
			 NULL,
			 "policy targets from visit counts (AlphaZero) instead "
			 "of the actions' values",
			 0, 0, false},
			{"quiet", 'q', TP_OPT_FLAG, &quiet, NULL,
			 "no progress lines", 0, 0, false},
			{NULL, 0, 0, NULL, NULL, NULL, 0, 0, false}};

		if (tp_opts_parse(&(struct tp_cli_doc){"train", usage, about},
				  opts, argc, argv, NULL, NULL, &code))
			return code;
	}
	{
		const struct tp_cli_file ins[] = {{"--resume", o.resume},
						  {NULL, NULL}};
		const struct tp_cli_file outs[] = {{"-o", out}, {NULL, NULL}};
		if ((code = tp_cli_check_outputs("train", ins, outs)) ||
		    (code = binary_on_terminal(out, o.checkpoint)))
			return code;
	}
	o.out = out;
	o.games = (uint32_t)games;
	o.epochs = (uint32_t)epochs;
	o.seed = (uint64_t)seed;
	o.threads = (uint32_t)threads;
	o.playouts = (uint32_t)playouts;
	o.steps = (uint32_t)steps;
	o.batch = (uint32_t)batch;
	o.lr = (float)lr;
	o.hidden = (uint32_t)hidden;
	o.layers = (uint32_t)layers;
	o.heldout = heldout;
	o.max_devices = (uint32_t)maxdev;
	o.large_devices = (uint32_t)largedev;
	o.runtime_every = (uint32_t)rtevery;
	o.distil_every = (uint32_t)dsevery;
	o.distil_playouts = (uint32_t)dsplayouts;
	o.distil_weight = (float)dsweight;
	o.grad_bucket_bytes = bucket_mb * 1e6;
	o.note = "tagplan train";
	o.log = log_line;
	o.log_ctx = &quiet;
	o.stop = &stop_flag;

	catch_signals(&old_int, &old_term);
	res = calloc(1, sizeof(*res));
	if (!res) {
		fprintf(stderr, "tagplan train: out of memory\n");
		return TP_EXIT_FAILURE;
	}
	tp_error_clear(&err);
	st = tp_train_run(&o, res, &err);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (st) {
		free(res);
		return tp_cli_fail(&err);
	}
	say_done(out, res, quiet);
	code = res->interrupted ? TP_EXIT_INTERRUPTED : TP_EXIT_OK;
	free(res);
	return code;
}
