/*
 * cli.h - the command table, the option table and shared helpers of the
 * command line.  Only src/cli/ prints to stdout/stderr or exits.
 *
 * Each command lives in its own file (plan.c, simulate.c, ...) and exports
 *   int cmd_NAME(int argc, char **argv);
 * returning an exit code: 0 done, 1 a check failed, 2 bad usage or input,
 * 3 I/O or internal failure, 130 interrupted.
 *
 * Options are declared once, in a table of struct tp_opt that drives
 * parsing, defaults, range checks and --help (tp_opts_parse/tp_opts_help).
 */
#ifndef TP_CLI_H
#define TP_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"

enum {
	TP_EXIT_OK = 0,
	TP_EXIT_CHECK = 1,
	TP_EXIT_USAGE = 2,
	TP_EXIT_FAILURE = 3,
	TP_EXIT_INTERRUPTED = 130
};

/* --grad-bucket-mb of plan and train: the runtime's gradient bucket, MB
 * (10^6 bytes).  Its default is the simulator's (tp_sim_params.grad_bucket_bytes,
 * PyTorch DDP's bucket_cap_mb of 25 MiB), which --help prints. */
double tp_cli_grad_bucket_mb_default(void);

/* Seconds of CLOCK_MONOTONIC (plan's --time-limit accounting). */
double tp_cli_monotonic_s(void);
#define TP_CLI_GRAD_BUCKET_TEXT                                               \
	"gradient bucket of the overlapped data-parallel sync, in MB "        \
	"(10^6 bytes), as the training runtime sets it: PyTorch DDP "         \
	"bucket_cap_mb 25 MiB = 26.2144 MB, Megatron-core max(40M, 1M x dp) " \
	"fp32 gradients (160 MB)"
#define TP_CLI_GRAD_BUCKET_HELP                                               \
	TP_CLI_GRAD_BUCKET_TEXT " [the runtime's; 26.2144 with --runtime none]"
#define TP_CLI_RUNTIME_HELP                                                   \
	"the training runtime the plan is for: a profile of data/runtimes "   \
	"(megatron-core, megatron-lm-2022, megatron-lm-2021, deepspeed, "     \
	"fsdp2, ddp, hai-llm) or a tagplan-runtime/1 file; the search "       \
	"keeps to the plans it executes (the answer exports to it) and its "  \
	"behaviour sets the simulator's (gradient overlap and bucket, "       \
	"blocking pipeline sends); none = every plan tagplan can express, "   \
	"the simulator's defaults [megatron-core for transformers, else "     \
	"ddp]"

/* -q/--quiet of every command: the notes and the summary on stderr go,
 * warnings and errors stay (validate: no "FILE: ok" lines). */
#define TP_CLI_QUIET_HELP                                                     \
	"no notes or summary on stderr (warnings and errors still print)"

enum tp_opt_type {
	TP_OPT_FLAG,   /* bool, no argument */
	TP_OPT_STRING, /* const char * */
	TP_OPT_INT,    /* long long, range-checked */
	TP_OPT_DOUBLE, /* double, range-checked, finite */
	TP_OPT_LIST    /* repeatable string: appended to a tp_opt_list */
};

struct tp_opt_list {
	const char **v;
	int n, cap;
};

struct tp_opt {
	const char *name;  /* long name without "--" */
	char short_name;   /* 0 = none */
	enum tp_opt_type type;
	void *dest;        /* bool*, const char**, long long*, double*,
			      struct tp_opt_list* */
	const char *metavar; /* "S", "FILE", ... */
	const char *help;
	double min, max;   /* range for INT/DOUBLE (inclusive) */
	bool seen;         /* set by the parser */
};

struct tp_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary; /* one line for `tagplan --help` */
	bool available;      /* false: its logic comes in a later release */
};

extern const struct tp_command tp_commands[];

/* What a command's --help says above its option table: "usage: tagplan
 * CMD USAGE", then ABOUT. */
struct tp_cli_doc {
	const char *cmd;
	const char *usage;
	const char *about;
};

/*
 * Parse argv[1..] (argv[0] is the command name, doc->cmd) against opts.  Options may
 * be given as --name VALUE, --name=VALUE, -x VALUE.  Positional arguments
 * are collected into *pos (a NULL-terminated array the caller frees, whose
 * strings point into argv) and their count into *npos; with pos == NULL
 * any positional argument is an error.  "--help"/"-h" print help (usage line + option table)
 * to stdout and return -1 with *exit_code 0.  Errors print
 * "tagplan CMD: ..." to stderr and return -1 with *exit_code 2.
 * Returns 0 on success.
 */
int tp_opts_parse(const struct tp_cli_doc *doc, struct tp_opt *opts,
		  int argc, char **argv, char ***pos, int *npos,
		  int *exit_code);

/* Print the help of a command: usage, about text and the option table. */
void tp_opts_help(FILE *out, const struct tp_cli_doc *doc,
		  const struct tp_opt *opts);

void tp_opt_list_free(struct tp_opt_list *l);

/* Print err as "tagplan: <formatted error>" on stderr and return
 * tp_cli_exit_code(err). */
int tp_cli_fail(const struct tp_error *err);

/* The exit code of err: its status's (tp_status_exit_code), but 2 (bad
 * usage) for an I/O error on a path that does not exist (ENOENT, ENOTDIR,
 * ENAMETOOLONG: a mistyped input, or an output in a missing directory);
 * a read or write failing on a path that exists (permissions, a full
 * disk) stays 3. */
int tp_cli_exit_code(const struct tp_error *err);

/* Write n bytes of s to f with the characters that drive a terminal
 * escaped: C0 controls as \xHH (\n, \t by name), DEL, C1 controls
 * (U+0080..U+009F) as \uHHHH; newlines kept as they are with
 * keep_newlines.  Every message quoting a file's text or a user's
 * argument goes through it (names in files cannot hold controls). */
void tp_cli_escape(FILE *f, const char *s, size_t n, bool keep_newlines);

/* The name of names[0..n) a mistyped one most likely meant: one within
 * 1 edit ("dp-hetro"; two swapped letters count as one: "plna" -> plan,
 * "megatorn" -> megatron), else the longest name it begins with
 * ("topology", "megatron-lm"), the only name it begins ("sim") or shares
 * its first 6 letters with ("calibration"), else the nearest within 2
 * edits (1 up to 4 letters); NULL if none.  The "did you mean" of
 * commands and of options taking one of a few words. */
const char *tp_cli_near_name(const char *name, const char *const *names,
			     size_t n);

/* An option given none of its words: "tagplan CMD: OPT GIVEN: expected
 * A, B or C" (names[0..n)) and the one meant (tp_cli_near_name) on
 * stderr; returns 2 (usage). */
int tp_cli_bad_choice(const char *cmd, const char *opt, const char *given,
		      const char *const *names, size_t n);
/* The same with the word meant chosen by the caller (NULL: none), for an
 * option whose slips are known another way (export --to fsdp2: the
 * target of that runtime). */
int tp_cli_bad_choice_meant(const char *cmd, const char *opt,
			    const char *given, const char *const *names,
			    size_t n, const char *meant);

/* printf to stderr prefixed with "tagplan CMD: "; returns 2 (usage). */
int tp_cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* An option naming a file: "-o" and its path (NULL: not given). */
struct tp_cli_file {
	const char *opt;
	const char *path;
};

/* "-": the path of an output whose option was not given and which goes
 * to standard output by default (tp_cli_check_outputs's messages tell it
 * apart by its address). */
extern const char tp_cli_default_stdout[];

/* When an output is one of the inputs (the same existing file, through
 * links too), print "tagplan CMD: -o X is also the input -t Y ..." and
 * return 2 (usage), before anything is written; the same when two
 * outputs would be written to one place (a file, or standard output:
 * "-o - --trace -"; a NULL path is not checked, pass "-" for stdout);
 * when an output cannot be
 * written (a directory, a missing directory: 2; a read-only directory: 3;
 * tp_file_check_output), print why and return that exit code, before
 * any work; else 0.  Both arrays end with {NULL, NULL}. */
int tp_cli_check_outputs(const char *cmd, const struct tp_cli_file *inputs,
			 const struct tp_cli_file *outputs);

/* A JSON output named as a picture (.svg .png .pdf .dot .gv, any case:
 * "plan -o plan.svg" for --svg): print "tagplan CMD: OPT PATH: OPT is
 * WHAT, written as JSON, not a picture; FIX" (FIX NULL: "give it a .json
 * name") and return 2, before any work; else 0. */
int tp_cli_json_output(const char *cmd, const char *opt, const char *path,
		       const char *what, const char *fix);

/* Run the named command; `tagplan help CMD` and unknown commands. */
int tp_cli_dispatch(int argc, char **argv);

/* Commands */
int cmd_plan(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_topo(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_import(int argc, char **argv);

/* When the model has profiles: the summary lines saying how many of
 * plan's ops were priced measured, interpolated, extrapolated or by the
 * roofline (tp_sim_profile_census), and which device types a profile
 * makes faster than their catalogue peak (tp_sim_type_speed), to f.
 * Nothing without profiles or when the census fails. */
struct tp_sim;
struct tp_plan;
struct tp_model;
struct tp_cluster;
void tp_cli_profile_note(const struct tp_sim *sim, const struct tp_plan *p,
			 const struct tp_model *m, const struct tp_cluster *c,
			 FILE *f);

/* For commands whose logic comes later: says so, exits 3. */
int tp_cli_not_yet(const char *cmd, const char *issue);

/* Append one item of a --help list, "  NAME  text", indented by `indent`,
 * the name padded to name_width, the text wrapped at 79 columns under
 * itself (model's zoo names, topo's presets). */
struct tp_strbuf;
/* Print each line of w (the loaders' warnings) to stderr as "tagplan CMD:
 * warning: LINE", then empty w. */
void tp_cli_print_warnings(const char *cmd, struct tp_strbuf *w);
void tp_cli_help_item(struct tp_strbuf *sb, int indent, const char *name,
		      int name_width, const char *text);

struct tp_cluster;
struct tp_plan;
struct tp_plan_summary;

/* cost.c: the summary's cost per iteration and per million tokens of
 * plan p (its used devices' prices per hour; 0 when one has none), from
 * s's iteration time and tokens per second. */
void tp_cli_plan_cost(const struct tp_plan *p, const struct tp_cluster *c,
		      struct tp_plan_summary *s);
/* --price TYPE=USD[,TYPE=USD...] onto c's device types (NULL: nothing);
 * returns 0 or 2 after a usage error naming the entry. */
int tp_cli_apply_prices(const char *cmd, const char *spec,
			struct tp_cluster *c);
/* --objective NAME and --max-iter-time S (NAN: not given): the objective
 * (enum tp_search_objective), or -1 after a usage error (an unknown
 * name, a limit without the cost objective or not above 0, the cost
 * objective without a limit). */
int tp_cli_objective_args(const char *name, double max_iter_time);
/* The cost objective needs a price for every device type c's devices
 * have: 0, or 2 after a usage error naming the types without one and
 * how to give them. */
int tp_cli_check_prices(const char *cmd, const struct tp_cluster *c);

#endif
