/*
 * main.c - tagplan's entry point and command table (git-style).
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "core/strmap.h"
#include "gnn/tensor.h"
#include "io/io.h"

const struct tp_command tp_commands[] = {
	{"plan", cmd_plan, "search the fastest plan for a model on a cluster",
	 true},
	{"simulate", cmd_simulate,
	 "simulate one training iteration of a plan or strategy", true},
	{"check", cmd_check,
	 "CI gate: does a committed plan still fit and stay fast?", true},
	{"render", cmd_render, "draw a plan's device mapping (DOT/SVG/PNG/PDF)",
	 true},
	{"model", cmd_model,
	 "build a model file (GPT dimensions, HF config, zoo)", true},
	{"topo", cmd_topo, "build a topology file from presets", true},
	{"inspect", cmd_inspect,
	 "summarise a model, topology, plan or report as JSON", true},
	{"validate", cmd_validate, "check files against the formats", true},
	{"export", cmd_export,
	 "a plan's launch config: Megatron, DeepSpeed, torchrun, TorchTitan",
	 true},
	{"calibrate", cmd_calibrate,
	 "fit the simulator to measured runs: a calibrated runtime profile",
	 true},
	{"import", cmd_import,
	 "Sailor's profiles, clusters and plans as tagplan files", true},
	{"train", cmd_train, "train the GNN by self-play", true},
	{NULL, NULL, NULL, false},
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tagplan COMMAND [OPTIONS]\n"
		"       tagplan help COMMAND | tagplan COMMAND --help\n"
		"       tagplan --version\n\n"
		"tagplan finds how to run one training step of a deep-learning "
		"model fastest\non a GPU cluster: which op groups go on which "
		"devices, with which data/\ntensor/pipeline parallel degrees, "
		"how gradients are synchronised and\ncompressed.  A graph neural "
		"network guides a Monte Carlo tree search whose\ncandidates are "
		"scored by a simulator of the training iteration.\n\n"
		"commands:\n");
	for (const struct tp_command *c = tp_commands; c->name; c++)
		fprintf(out, "  %-10s %s\n", c->name, c->summary);
	fprintf(out,
		"\nA first run:  tagplan plan          (plans the shipped demo "
		"model on the\n              shipped demo cluster)\n"
		"Typical:      tagplan model gpt --hidden 4096 --layers 32 "
		"--heads 32 \\\n                  --seq 2048 --vocab 51200 "
		"--batch 512 -o gpt.json\n"
		"              tagplan topo dgx-a100:4 --net ib-hdr -o topo.json\n"
		"              tagplan plan -m gpt.json -t topo.json -o plan.json "
		"--svg plan.svg\n\n"
		"exit codes: 0 done, 1 a check failed (plan does not fit or "
		"misses a\nthreshold), 2 bad usage or bad input, 3 I/O or "
		"internal failure,\n130 interrupted.\n"
		"Files are JSON: formats in tagplan-formats(5), commands in "
		"tagplan(1).\n");
}

/* The command a mistyped one most likely meant (tp_cli_near_name's
 * rule); NULL if none. */
static const char *near_command(const char *name)
{
	const char *names[sizeof(tp_commands) / sizeof(tp_commands[0])];
	size_t n = 0;

	for (const struct tp_command *c = tp_commands; c->name; c++)
		names[n++] = c->name;
	return tp_cli_near_name(name, names, n);
}

/* The command named name, or NULL. */
static const struct tp_command *find_command(const char *name)
{
	for (const struct tp_command *c = tp_commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

/* The command line with its command word moved first ("tagplan -q topo
 * x": "tagplan topo -q x") into buf; false when no argument is a
 * command or it does not fit. */
static bool command_first(int argc, char **argv, char *buf, size_t size)
{
	int k = 2, n;

	while (k < argc && !find_command(argv[k]))
		k++;
	if (k >= argc)
		return false;
	n = snprintf(buf, size, "tagplan %s", argv[k]);
	for (int i = 1; i < argc && n > 0 && (size_t)n < size; i++)
		if (i != k)
			n += snprintf(buf + n, size - (size_t)n, " %s",
				      argv[i]);
	return n > 0 && (size_t)n < size;
}

/* An unknown first word: an option before any command ("tagplan -m
 * x.json" forgot the command, "tagplan -q plan" put it second: the
 * command line meant; "--versoin"), else the command meant. */
static int no_command(const char *name, int argc, char **argv)
{
	const char *near;
	char fix[512];

	if (name[0] == '-' && name[1]) {
		const char *o = name + (name[1] == '-' ? 2 : 1);
		bool near_version =
		    strlen(o) >= 4 && (strncmp("version", o, strlen(o)) == 0 ||
				       tp_edit_distance(o, "version", 2) <= 2);

		/* -v and -V: the version in most tools */
		if (!strcmp(name, "-v") || !strcmp(name, "-V") || near_version)
			fprintf(stderr,
				"tagplan: unknown option \"%s\" (did you mean "
				"--version?)\n",
				name);
		else if (argc && command_first(argc, argv, fix, sizeof(fix)))
			fprintf(stderr,
				"tagplan: \"%s\" is an option, and the "
				"command comes first: %s\n",
				name, fix);
		else
			fprintf(stderr,
				"tagplan: \"%s\" is an option, and the "
				"command comes first: tagplan COMMAND "
				"[OPTIONS], e.g. tagplan plan -m MODEL -t "
				"TOPO; see 'tagplan --help'\n",
				name);
		return TP_EXIT_USAGE;
	}
	near = near_command(name);
	if (near)
		fprintf(stderr,
			"tagplan: no command \"%s\" (did you mean %s?); see "
			"'tagplan --help'\n",
			name, near);
	else
		fprintf(stderr,
			"tagplan: no command \"%s\"; see 'tagplan --help'\n",
			name);
	return TP_EXIT_USAGE;
}

/* $TAGPLAN_DATA naming no folder (a typo, a moved tree): the data is
 * looked up file by file from the next places (io/file.c tp_data_path),
 * so say which were not taken from it rather than nothing. */
static void check_data_env(void)
{
	const char *env = getenv("TAGPLAN_DATA");
	struct stat st;

	if (env && *env && (stat(env, &st) != 0 || !S_ISDIR(st.st_mode)))
		fprintf(stderr,
			"tagplan: warning: TAGPLAN_DATA=%s is not a folder: "
			"the data next to the binary or installed is used "
			"(unset it, or name the folder holding devices.json)\n",
			env);
}

int tp_cli_dispatch(int argc, char **argv)
{
	const char *name;

	if (argc < 2) {
		usage(stderr);
		return TP_EXIT_USAGE;
	}
	name = argv[1];
	/* "tagplan --help plan" is "tagplan help plan", as git has it */
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
		if (argc < 3) {
			usage(stdout);
			return TP_EXIT_OK;
		}
		name = "help";
	}
	if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
		printf("tagplan %s\n", TP_VERSION);
		return TP_EXIT_OK;
	}
	if (strcmp(name, "help") == 0) {
		char *hargv[3];
		if (argc < 3 || strcmp(argv[2], "help") == 0) {
			usage(stdout);
			return TP_EXIT_OK;
		}
		for (const struct tp_command *c = tp_commands; c->name; c++) {
			if (strcmp(c->name, argv[2]) == 0) {
				hargv[0] = argv[2];
				hargv[1] = (char *)"--help";
				hargv[2] = NULL;
				return c->fn(2, hargv);
			}
		}
		return no_command(argv[2], 0, NULL);
	}
	for (const struct tp_command *c = tp_commands; c->name; c++)
		if (strcmp(c->name, name) == 0) {
			check_data_env();
			return c->fn(argc - 1, argv + 1);
		}
	return no_command(name, argc, argv);
}

/* What the command printed through stdio (validate's lines, inspect,
 * --help) must have reached standard output: a full disk or a closed
 * pipe turns a success (0) or a failed check (1) into an I/O failure
 * (3), with the message that writing a file gets; other codes stay. */
static int finish_stdout(int code)
{
	struct tp_error err;

	tp_error_clear(&err);
	if (tp_file_flush_stdout(&err) == TP_OK ||
	    (code != TP_EXIT_OK && code != TP_EXIT_CHECK))
		return code;
	return tp_cli_fail(&err);
}

int main(int argc, char **argv)
{
	/* OpenBLAS starts its worker threads when it is loaded, before
	 * main; under a tight memory limit (ulimit -v) such a thread cannot
	 * get its buffer, spins, and the process never exits.  Its thread
	 * count can only be set before loading, through the environment:
	 * set it and run again (once; when exec fails, carry on). */
	if (!getenv("OPENBLAS_NUM_THREADS") &&
	    setenv("OPENBLAS_NUM_THREADS", "1", 1) == 0)
		execv("/proc/self/exe", argv);
	/* OpenBLAS runs single-threaded: search and training threads call it
	 * concurrently, one core each (STYLE.md). */
	tp_tensor_set_blas_threads(1);
	/* A pipe whose reader exited (tagplan plan | head -c 10) is a write
	 * error, EPIPE, reported with exit 3 as a full disk is, rather
	 * than a death by SIGPIPE with no word (the shell's status 141).
	 * After the exec above: the setting is inherited across exec. */
	signal(SIGPIPE, SIG_IGN);
	return finish_stdout(tp_cli_dispatch(argc, argv));
}
