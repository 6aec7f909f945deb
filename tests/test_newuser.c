/*
 * test_newuser.c - suite "newuser": what a new user's first commands
 * meet at the command line: a mistyped command or option, an option
 * before the command, values given as a user would write them (percent
 * for a fraction, spaces in lists, plural and case slips in names),
 * --help and its width, the manual pages.  Each error names the fix,
 * exits as tagplan(1) says and writes nothing.  Files and outputs are in
 * test_newuser_files.c, what the answers say in test_newuser_results.c.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/table.h"
#include "core/strbuf.h"
#include "core/runtime.h"
#include "util.h"

/* tp_test_expect (util.h): run argv, its exit status, stderr holding
 * want (and not unwanted), stdout empty. */
static void expect(const char *const *argv, int status, const char *want,
		   const char *unwanted)
{
	tp_test_expect(argv, status, want, unwanted);
}

/* A mistyped command names the one meant (a swap, a prefix, a plural,
 * a near spelling); an option given before any command says the command
 * comes first; "tagplan help help" is the usage.  Before: 'no command
 * "plna"; see tagplan --help' for every one of them. */
START_TEST(test_command_slips)
{
	static const char *const cases[][2] = {
	    {"plna", "no command \"plna\" (did you mean plan?)"},
	    {"simulte", "(did you mean simulate?)"},
	    {"sim", "(did you mean simulate?)"},
	    {"topology", "(did you mean topo?)"},
	    {"models", "(did you mean model?)"},
	    {"calibration", "(did you mean calibrate?)"},
	    {"chekc", "(did you mean check?)"},
	    {"--versoin", "unknown option \"--versoin\" (did you mean "
			  "--version?)"},
	    {"-m", "\"-m\" is an option, and the command comes first"},
	};
	struct tp_run r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", cases[i][0], NULL};
		expect(argv, 2, cases[i][1], NULL);
	}
	{
		const char *argv[] = {"tagplan", "help", "plna", NULL};
		expect(argv, 2, "(did you mean plan?)", NULL);
	}
	{
		const char *argv[] = {"tagplan", "xyzzy", NULL};
		expect(argv, 2, "no command \"xyzzy\"; see", "did you mean");
	}
	{
		const char *argv[] = {"tagplan", "help", "help", NULL};
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		ck_assert_msg(strstr(r.out, "usage: tagplan COMMAND"), "%s",
			      r.out);
		tp_run_free(&r);
	}
}
END_TEST

/* A runtime named as its project writes it ("DeepSpeed", exit 3 'cannot
 * open' before: taken for a file), or short of its version ("megatron",
 * "fsdp": the list of shipped names without a hint before) names the
 * shipped profiles meant, exit 2, nothing written. */
START_TEST(test_runtime_slips)
{
	static const char *const cases[][2] = {
	    {"DeepSpeed", "unknown runtime \"DeepSpeed\" (did you mean "
			  "deepspeed?); shipped: "},
	    {"megatron", "(did you mean megatron-core, megatron-lm-2021, "
			 "megatron-lm-2022?)"},
	    {"fsdp", "(did you mean fsdp2?)"},
	    {"deepspeeed", "(did you mean deepspeed?)"},
	};
	const char *gpt2 = tp_data_file("models/gpt2.json");
	const char *dgx = tp_data_file("topologies/dgx-a100.json");

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", "simulate", "-s", "tp=1",
				      "-m", gpt2, "-t", dgx, "--runtime",
				      cases[i][0], "-q", NULL};
		expect(argv, 2, cases[i][1], NULL);
	}
}
END_TEST

/* tagplan --help's one-line summaries say what the commands do: export
 * writes TorchTitan configs too (the line listed Megatron, DeepSpeed and
 * torchrun only), import clusters and plans too ("as a model file"). */
START_TEST(test_help_summaries)
{
	const char *argv[] = {"tagplan", "--help", NULL};
	struct tp_run r;
	const char *line;

	tp_run_tagplan(&r, argv, NULL);
	ck_assert_int_eq(r.status, 0);
	line = strstr(r.out, "\n  export ");
	ck_assert_ptr_nonnull(line);
	ck_assert_msg(strstr(line, "TorchTitan") &&
			      strstr(line, "TorchTitan") < strchr(line + 1, '\n'),
		      "%s", r.out);
	line = strstr(r.out, "\n  import ");
	ck_assert_ptr_nonnull(line);
	ck_assert_msg(strstr(line, "clusters and plans") &&
			      strstr(line, "clusters and plans") <
				      strchr(line + 1, '\n'),
		      "%s", r.out);
	tp_run_free(&r);
}
END_TEST

/* check's fractions given as percentages, as --margin takes them ("10%")
 * and as MFU is quoted: the error names the fraction meant (it said only
 * "expects a number from 0 to 1"). */
START_TEST(test_fraction_as_percent)
{
	const char *a1[] = {"tagplan", "check", "-p", "plan.json", "--min-mfu",
			    "40%", NULL};
	const char *a2[] = {"tagplan", "check", "-p", "plan.json",
			    "--max-memory-fraction", "95", NULL};
	const char *a3[] = {"tagplan", "check", "-p", "plan.json", "--min-mfu",
			    "abc", NULL};

	expect(a1, 2, "--min-mfu expects a number from 0 to 1, not \"40%\" (a "
		      "fraction: 0.4 for 40%)",
	       NULL);
	expect(a2, 2, "not \"95\" (a fraction: 0.95 for 95%)", NULL);
	expect(a3, 2, "not \"abc\"", "a fraction");
}
END_TEST

/* A device type written short ("H100", "A100") names the types it
 * begins: the topology's error named the V100s (a prefix one edit away,
 * which come first in the catalogue) and not the A100s or H100s; topo
 * --from-nvidia-smi --gpu named none. */
START_TEST(test_device_type_slips)
{
	const char *dir = tp_test_tmpdir();
	char path[1100];
	const char *a1[] = {"tagplan", "validate", path, NULL};
	const char *a2[] = {"tagplan", "topo", "--from-nvidia-smi",
			    tp_test_path("data/nvidia-smi/dgx-a100.txt"),
			    "--gpu", "A100", NULL};
	static const char topo[] =
		"{\"format\": \"tagplan-topology/1\", \"name\": \"t\", "
		"\"nodes\": [{\"name\": \"n\", \"devices\": [{\"type\": "
		"\"H100\", \"count\": 2}], \"fabric\": {\"kind\": "
		"\"nvswitch\", \"bandwidth_Bps\": 4.5e11, \"latency_s\": "
		"1e-6}}]}\n";

	snprintf(path, sizeof(path), "%s/t.json", dir);
	ck_assert_int_eq(tp_test_write(path, topo, strlen(topo)), 0);
	expect(a1, 2, "unknown device type \"H100\" (did you mean "
		      "\"H100-SXM5-80GB\", \"H100-PCIe-80GB\", "
		      "\"H100-NVL-94GB\"?)",
	       NULL);
	expect(a2, 2, "--gpu: unknown device type \"A100\" (did you mean "
		      "\"A100-SXM4-40GB\", \"A100-SXM4-80GB\"",
	       NULL);
}
END_TEST

/* plan's "unconstrained" line lists what the runtime lacks with commas:
 * "needs uneven_shares compression: ..." read as one phrase. */
START_TEST(test_caps_list)
{
	struct tp_strbuf sb;

	tp_strbuf_init(&sb);
	tp_render_caps(&sb, (1u << TP_CAP_UNEVEN_SHARES) |
				    (1u << TP_CAP_COMPRESSION));
	ck_assert_str_eq(tp_strbuf_cstr(&sb), "uneven_shares, compression");
	tp_strbuf_reset(&sb);
	tp_render_caps(&sb, 1u << TP_CAP_COMPRESSION);
	ck_assert_str_eq(tp_strbuf_cstr(&sb), "compression");
	tp_strbuf_release(&sb);
}
END_TEST

/* A misspelt --net names the networks meant (it listed them all, with no
 * hint, as node presets and device types already had). */
START_TEST(test_network_slips)
{
	const char *a1[] = {"tagplan", "topo", "dgx-a100:2", "--net", "ib-hdx",
			    NULL};
	const char *a2[] = {"tagplan", "topo", "dgx-a100:2", "--net", "IB-HDR",
			    NULL};
	const char *a3[] = {"tagplan", "topo", "dgx-a100:2", "--net",
			    "infiniband", NULL};

	expect(a1, 2, "unknown network \"ib-hdx\" (did you mean \"ib-hdr\"",
	       NULL);
	expect(a2, 2, "(did you mean \"ib-hdr\"", NULL);
	expect(a3, 2, "unknown network \"infiniband\"; known: ", NULL);
}
END_TEST

/* Every line of out fits 80 columns; what names the help in the
 * message. */
static void expect_width(const char *what, const char *out)
{
	for (const char *line = out; *line;) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		ck_assert_msg(n <= 80, "%s: %zu columns: %.*s", what, n, (int)n,
			      line);
		line += n + (nl ? 1 : 0);
	}
}

/* Every --help fits an 80-column terminal, as the tables do (model, topo
 * and import had lines of 81-87 columns that wrapped mid-word; calibrate
 * two of 83 and 107).  The commands are the ones `tagplan --help` lists,
 * so that a command added later is checked too. */
START_TEST(test_help_width)
{
	const char *top[] = {"tagplan", "--help", NULL};
	struct tp_run list, r;
	int n = 0;

	tp_run_tagplan(&list, top, NULL);
	ck_assert_msg(list.status == 0, "--help: exit %d", list.status);
	expect_width("tagplan --help", list.out);
	for (const char *p = strstr(list.out, "\ncommands:\n"); p;
	     p = strchr(p + 1, '\n')) {
		char cmd[32], what[64];
		const char *argv[] = {"tagplan", cmd, "--help", NULL};

		/* a command's row: two spaces, its name, spaces, its line */
		if (strncmp(p, "\n  ", 3) || p[3] == ' ' ||
		    sscanf(p + 3, "%31[a-z] ", cmd) != 1)
			continue;
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0, "%s: exit %d", cmd, r.status);
		snprintf(what, sizeof(what), "%s --help", cmd);
		expect_width(what, r.out);
		tp_run_free(&r);
		n++;
	}
	/* the list was found: plan ... train, calibrate and import */
	ck_assert_msg(n >= 12, "%d commands in: %s", n, list.out);
	tp_run_free(&list);
}
END_TEST

/* tagplan model NAME --seq: the error said "--seq applies to 'tagplan
 * model gpt' only", though hf:PATH takes it too (tagplan(1), --help) and
 * is the way to another length of a shipped model. */
START_TEST(test_model_seq_hint)
{
	const char *a1[] = {"tagplan", "model", "gpt2", "--seq", "2048", "-o",
			    "/dev/null", NULL};
	char hf[1100];
	const char *a2[] = {"tagplan", "model", hf, "--seq", "100000", NULL};

	expect(a1, 2, "--seq applies to 'tagplan model gpt' and hf:PATH only, "
		      "not to gpt2 (a zoo model or shipped file keeps its own; "
		      "for another length build from an HF config: hf:PATH "
		      "--seq S)",
	       NULL);
	/* a length over a config's learned positions named no fix */
	snprintf(hf, sizeof(hf), "hf:%s", tp_test_path("data/hf/gpt2.json"));
	expect(a2, 2, "exceeds the 1024 learned positions of ", NULL);
	expect(a2, 2, "max_position_embeddings): give --seq 1024 or less",
	       NULL);
}
END_TEST

/* --seq beyond a RoPE model's max_position_embeddings is built (RoPE
 * scaling and long-context fine-tuning train there) with a one-line
 * warning naming the field and its value; at or under it, none.  Before:
 * accepted silently. */
START_TEST(test_model_seq_beyond_rope)
{
	char hf[1100], out[1100];
	const char *a1[] = {"tagplan", "model", hf, "--seq", "100000", "-o",
			    out, NULL};
	const char *a2[] = {"tagplan", "model", hf, "--seq", "8192", "-o",
			    out, NULL};
	struct tp_run r;

	snprintf(hf, sizeof(hf), "hf:%s",
		 tp_test_path("data/hf/llama-3-8b.json"));
	snprintf(out, sizeof(out), "%s/seq-beyond.json", tp_test_tmpdir());
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "tagplan model: warning: --seq 100000 is "
				    "beyond max_position_embeddings 8192 of ") &&
			      strstr(r.err, "RoPE scaling"),
		      "%s", r.err);
	ck_assert_ptr_null(strstr(strstr(r.err, "warning") + 1, "warning"));
	tp_run_free(&r);
	ck_assert_int_eq(access(out, F_OK), 0);
	tp_run_tagplan(&r, a2, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(!strstr(r.err, "warning"), "%s", r.err);
	tp_run_free(&r);
	/* a config without the field: the type's default, said so */
	snprintf(hf, sizeof(hf), "hf:%s",
		 tp_test_path("data/hf/falcon-7b.json"));
	a1[4] = "4096";
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "--seq 4096 is beyond 2048, the context "
				    "length the transformers library gives"),
		      "%s", r.err);
	tp_run_free(&r);
	unlink(out);
}
END_TEST

/* The manual pages hold no control characters but newlines and tabs:
 * tagplan-formats(5) had two form feeds where "\\fR" was meant (troff:
 * "can't find character with input code 12"; man printed a stray
 * character after replica_tp[r]). */
START_TEST(test_man_pages_clean)
{
	static const char *const pages[] = {"../man/tagplan.1",
					    "../man/tagplan-formats.5", NULL};

	for (int i = 0; pages[i]; i++) {
		size_t len = 0;
		char *text = tp_test_read(tp_test_path(pages[i]), &len);
		int line = 1;
		ck_assert_ptr_nonnull(text);
		for (size_t k = 0; k < len; k++) {
			unsigned char c = (unsigned char)text[k];
			ck_assert_msg(c >= 0x20 || c == '\n' || c == '\t',
				      "%s:%d: control character 0x%02x",
				      pages[i], line, c);
			line += c == '\n';
		}
		free(text);
	}
}
END_TEST

/* A model file's dtype error listed "fp32 | fp16 | bf16" though fp8 is a
 * model dtype (tagplan model --dtype fp8 writes it, the reader takes it),
 * and "fp9" was told to mean fp32. */
START_TEST(test_model_dtype_choices)
{
	const char *dir = tp_test_tmpdir();
	char path[1100], *text, *at;
	const char *a1[] = {"tagplan", "validate", path, NULL};

	text = tp_test_read(tp_data_file("models/gpt2.json"), NULL);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "\"dtype\": \"");
	ck_assert_ptr_nonnull(at);
	memcpy(at + 10, "fp9\"", 4);
	memmove(at + 14, strchr(at + 14, ','), strlen(strchr(at + 14, ',')) + 1);
	snprintf(path, sizeof(path), "%s/m.json", dir);
	ck_assert_int_eq(tp_test_write(path, text, strlen(text)), 0);
	free(text);
	expect(a1, 2, "$.dtype: unknown value \"fp9\" (did you mean \"fp8\"?); "
		      "expected one of fp32 | fp16 | bf16 | fp8",
	       NULL);
}
END_TEST

/* --help after other options printed their values as the defaults
 * ("check -p mine.json --help": "-p PLAN ... [mine.json]"; "plan --seed
 * 7 --help": "random seed [7]"); now the help is the same wherever
 * --help stands. */
START_TEST(test_help_after_options)
{
	const char *a0[] = {"tagplan", "plan", "--help", NULL};
	const char *a1[] = {"tagplan", "plan", "--seed", "7", "--time-limit",
			    "3", "--help", NULL};
	const char *a2[] = {"tagplan", "check", "-p", "mine.json", "--help",
			    NULL};
	struct tp_run r0, r1;

	tp_run_tagplan(&r0, a0, NULL);
	tp_run_tagplan(&r1, a1, NULL);
	ck_assert_int_eq(r0.status, 0);
	ck_assert_int_eq(r1.status, 0);
	/* (not ck_assert_str_eq: Check cannot print a message this long) */
	ck_assert_msg(strcmp(r1.out, r0.out) == 0,
		      "the help after --seed 7 --time-limit 3 differs");
	tp_run_free(&r0);
	tp_run_free(&r1);
	tp_run_tagplan(&r1, a2, NULL);
	ck_assert_int_eq(r1.status, 0);
	ck_assert_msg(!strstr(r1.out, "mine.json"), "%s", r1.out);
	tp_run_free(&r1);
}
END_TEST

/* A measured run's model dtype: fp8 is read (the model reader's
 * choices), but the error of a bad one listed "fp32 | fp16 | bf16" and
 * took "fp9" for "fp32". */
START_TEST(test_runs_dtype_choices)
{
	const char *dir = tp_test_tmpdir();
	char path[1100], out[1100], *text, *at;
	const char *a1[] = {"tagplan", "calibrate", path, "-o", out, NULL};
	struct stat st;

	text = tp_test_read(tp_data_file("validation/measured_runs.json"),
			    NULL);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "\"dtype\": \"fp16\"");
	ck_assert_ptr_nonnull(at);
	memcpy(at + 10, "fp9\"", 4);
	memmove(at + 14, at + 15, strlen(at + 15) + 1);
	snprintf(path, sizeof(path), "%s/runs.json", dir);
	snprintf(out, sizeof(out), "%s/p.json", dir);
	ck_assert_int_eq(tp_test_write(path, text, strlen(text)), 0);
	free(text);
	expect(a1, 2, "runs.json: $.rows[0].model.dtype: unknown value "
		      "\"fp9\" (did you mean \"fp8\"?); expected one of "
		      "fp32 | fp16 | bf16 | fp8",
	       NULL);
	ck_assert_msg(stat(out, &st) != 0, "the profile was written");
}
END_TEST

/* A strategy written with spaces or semicolons between its items, a key
 * without '=', a key in capitals, or split by the shell (unquoted): the
 * error gives the string as it should be written.  Before: "tp=2 pp=4:
 * expected a positive integer", "\"tp:2\" is not key=value (keys: ...)",
 * "unknown key \"TP\" (keys: ...)" and 'unexpected argument "pp=4"'.
 * Spaces after commas stay accepted. */
START_TEST(test_strategy_spaces)
{
	static const char *const cases[][2] = {
	    {"tp=2 pp=4", "strategy: \"tp=2 pp=4\": items are separated by "
			  "commas, not spaces or semicolons: write "
			  "\"tp=2,pp=4\""},
	    {"tp=2;pp=4", "write \"tp=2,pp=4\""},
	    {"tp=2,pp = 4 dp=1", "\"pp = 4 dp=1\": items are separated by "
				 "commas, not spaces or semicolons: write "
				 "\"tp=2,pp=4,dp=1\""},
	    {"tp:2", "strategy: \"tp:2\" is not key=value: write \"tp=2\""},
	    {"tp 2", "write \"tp=2\""},
	    {"pp16", "write \"pp=16\""},
	    {"schedule interleaved:2", "write \"schedule=interleaved:2\""},
	    {"TP=2", "unknown key \"TP\" (did you mean tp?)"},
	    /* "empty item between commas" for a leading comma too */
	    {",tp=2", "strategy: \",tp=2\" has an empty item (a comma too "
		      "many): write \"tp=2\""},
	    {"tp=2,,pp=4", "write \"tp=2,pp=4\""},
	};
	const char *gpt2 = tp_data_file("models/gpt2.json");
	const char *dgx = tp_data_file("topologies/dgx-a100.json");
	struct tp_run r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", "simulate", "-s", cases[i][0],
				      "-m", gpt2, "-t", dgx, "-q", NULL};
		expect(argv, 2, cases[i][1], NULL);
	}
	{
		const char *argv[] = {"tagplan", "export", "-s", "tp=2", "pp=4",
				      "dp=1", "-m", gpt2, "-t", dgx, NULL};
		expect(argv, 2, "unexpected argument \"pp=4\": a strategy is "
				"one argument, its items joined by commas: -s "
				"tp=2,pp=4,dp=1",
		       NULL);
	}
	{
		const char *argv[] = {"tagplan", "simulate", "-m", gpt2, "-t",
				      dgx, "tp=8", NULL};
		expect(argv, 2, "a strategy is given with -s: -s tp=8", NULL);
	}
	{
		const char *argv[] = {"tagplan", "simulate", "-s", "tp=2, pp=4",
				      "-m", gpt2, "-t", dgx, "-q", NULL};
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		tp_run_free(&r);
	}
}
END_TEST

/* "tagplan --help plan" printed the general help, not plan's (git's
 * "git --help commit" is commit's); "-v" said it "is an option, and the
 * command comes first", where most tools print their version. */
START_TEST(test_help_command_after)
{
	const char *a1[] = {"tagplan", "--help", "plan", NULL};
	const char *a2[] = {"tagplan", "-v", NULL};
	const char *a3[] = {"tagplan", "--help", "plna", NULL};
	struct tp_run r;

	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0 && !strncmp(r.out, "usage: tagplan plan ",
						20),
		      "exit %d: %s", r.status, r.out);
	tp_run_free(&r);
	expect(a2, 2, "unknown option \"-v\" (did you mean --version?)",
	       NULL);
	expect(a3, 2, "no command \"plna\" (did you mean plan?)", NULL);
}
END_TEST

/* A number with a unit, a decimal comma or an integer written 1e4 or
 * 10k said only 'expects a number from 0 to 1e+07, not "5s"'; now what
 * to write instead. */
START_TEST(test_number_slips)
{
	static const char *const cases[][3] = {
	    {"--time-limit", "5s", "not \"5s\" (a plain number, without the "
				   "unit \"s\": 'tagplan plan --help' gives "
				   "--time-limit's unit)"},
	    {"--time-limit", "1,5", "(a decimal point, not a comma: 1.5)"},
	    {"--playouts", "1e4", "(an integer in digits: 10000)"},
	    {"--playouts", "10k", "(an integer in digits: 10000)"},
	    {"--grad-bucket-mb", "25MB", "without the unit \"MB\""},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", "plan", cases[i][0],
				      cases[i][1], NULL};
		expect(argv, 2, cases[i][2], NULL);
	}
}
END_TEST

/* An option whose range its command checks itself (plan --max-iter-time)
 * said 'expects a number from 0 to 0, not "nan"', and an integer written
 * 1e30 was 'without the unit "e30"'. */
START_TEST(test_number_no_range)
{
	const char *a1[] = {"tagplan", "plan", "--max-iter-time", "nan",
			    NULL};
	const char *a2[] = {"tagplan", "plan", "--playouts", "1e30", NULL};

	expect(a1, 2, "--max-iter-time expects a finite number, not \"nan\"",
	       "from 0 to 0");
	expect(a2, 2,
	       "--playouts expects an integer from 0 to 1000000000000000, "
	       "not \"1e30\"",
	       "unit");
}
END_TEST

/* model --name of 300 bytes wrote a model file that validate and every
 * command refused ("string of 300 bytes is too long (at most 255)");
 * calibrate --name took a tab, which model --name refuses. */
START_TEST(test_name_limits)
{
	const char *dir = tp_test_tmpdir();
	char name[301], out[1100];
	const char *a1[] = {"tagplan", "model", "gpt", "--hidden", "64",
			    "--layers", "2", "--heads", "2", "--seq", "8",
			    "--vocab", "10", "--batch", "4", "--name", name,
			    "-o", out, NULL};
	const char *a2[] = {"tagplan", "calibrate",
			    tp_data_file("validation/measured_runs.json"),
			    "-o", out, "--name", "x\ty", NULL};
	struct stat st;

	memset(name, 'a', 300);
	name[300] = '\0';
	snprintf(out, sizeof(out), "%s/out.json", dir);
	expect(a1, 2, "--name: 300 bytes; a name has at most 255", NULL);
	expect(a2, 2, "--name: the name contains the control character "
		      "U+0009",
	       NULL);
	ck_assert_msg(stat(out, &st) != 0, "a file was written");
}
END_TEST

/* Short options as getopt takes them, joined with their value
 * ("-ox.json", "-o=x.json") or bundled ("-qp"), said only 'unknown
 * option "-ox.json"'; now how to give them.  A long name given with one
 * dash keeps its hint. */
START_TEST(test_short_options_joined)
{
	static const char *const cases[][3] = {
	    {"topo", "-ox.json", "unknown option \"-ox.json\" (the value goes "
				 "after a space: -o x.json)"},
	    {"topo", "-o=x.json", "(the value goes after a space: -o x.json)"},
	    {"simulate", "-qp", "unknown option \"-qp\" (give short options "
				"apart: -q -p)"},
	    {"plan", "-seed", "(did you mean --seed?)"},
	    {"plan", "-seeds", "(did you mean --seed?)"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", cases[i][0], cases[i][1],
				      NULL};
		expect(argv, 2, cases[i][2], NULL);
	}
}
END_TEST

/* topo --fabric "clos:leaf=4, spine=2" said 'unknown key " spine"' (a
 * strategy takes spaces after its commas) and "clos:leaf=4;spine=2" 'bad
 * value for leaf'; spaces are taken now (the same topology), semicolons
 * named. */
START_TEST(test_fabric_spaces)
{
	const char *a1[] = {"tagplan", "topo", "dgx-a100:8", "--fabric",
			    "clos: leaf = 4, spine=2", NULL};
	const char *a2[] = {"tagplan", "topo", "dgx-a100:8", "--fabric",
			    "clos:leaf=4,spine=2", NULL};
	const char *a3[] = {"tagplan", "topo", "dgx-a100:8", "--fabric",
			    "clos:leaf=4;spine=2", NULL};
	struct tp_run r1, r2;

	tp_run_tagplan(&r1, a1, NULL);
	tp_run_tagplan(&r2, a2, NULL);
	ck_assert_msg(r1.status == 0 && r2.status == 0, "exit %d: %s",
		      r1.status, r1.err);
	ck_assert_msg(r1.out_len == r2.out_len &&
			  !memcmp(r1.out, r2.out, r1.out_len),
		      "another topology: %s", r1.out);
	tp_run_free(&r1);
	tp_run_free(&r2);
	expect(a3, 2, "the keys are separated by commas, not semicolons",
	       NULL);
}
END_TEST

/* --price "A=2, B=3" and --fit "a, b" kept the space in the name
 * ('no device of type " H100-SXM5-80GB"', '" link_eff_intra" is not a
 * constant'); lists take spaces after their commas as a strategy does. */
START_TEST(test_list_spaces)
{
	const char *dir = tp_test_tmpdir();
	char plan[1100], prof[1100], *text;
	const char *a1[] = {"tagplan", "plan", "-m",
			    tp_data_file("models/gpt2.json"), "-t",
			    tp_data_file("topologies/dgx-a100.json"),
			    "--baseline", "dp", "-q", "-o", plan, "--price",
			    " A100-SXM4-80GB = 2 ,", NULL};
	const char *a2[] = {"tagplan", "calibrate",
			    tp_data_file("validation/measured_runs.json"),
			    "-o", prof, "--fit", "gemm_sustained, nosuch",
			    NULL};
	const char *a3[] = {"tagplan", "calibrate",
			    tp_data_file("validation/measured_runs.json"),
			    "-o", prof, "--fit", " ", NULL};
	struct tp_run r;

	snprintf(plan, sizeof(plan), "%s/plan.json", dir);
	snprintf(prof, sizeof(prof), "%s/p.json", dir);
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	text = tp_test_read(plan, NULL);
	ck_assert_msg(text && strstr(text, "\"cost_per_iteration_usd\""),
		      "no cost in the plan");
	free(text);
	expect(a2, 2, "\"nosuch\" is not a constant calibrate fits", NULL);
	expect(a3, 2, "--fit: an empty list", NULL);
}
END_TEST

/* A device type written as its maker's short name ("A100-80GB") was
 * taken for "A10-24GB" by the edit distance; the types holding every part
 * of it come first now. */
START_TEST(test_type_parts)
{
	const char *dir = tp_test_tmpdir();
	char path[1100], *text, *at;
	const char *a1[] = {"tagplan", "validate", path, NULL};
	const char *a2[] = {"tagplan", "topo", "--from-nvidia-smi",
			    tp_test_path("data/nvidia-smi/dgx-a100.txt"),
			    "--gpu", "H100-80GB", NULL};

	text = tp_test_read(tp_data_file("topologies/dgx-a100.json"), NULL);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "A100-SXM4-80GB");
	ck_assert_ptr_nonnull(at);
	memmove(at + 4, at + 9, strlen(at + 9) + 1); /* "A100-80GB" */
	snprintf(path, sizeof(path), "%s/t.json", dir);
	ck_assert_int_eq(tp_test_write(path, text, strlen(text)), 0);
	free(text);
	expect(a1, 2, "unknown device type \"A100-80GB\" (did you mean "
		      "\"A100-SXM4-80GB\", \"A100-PCIe-80GB\"?)",
	       "A10-24GB\"?");
	expect(a2, 2, "(did you mean \"H100-SXM5-80GB\", \"H100-PCIe-80GB\"?)",
	       NULL);
}
END_TEST

/* A hand-written model's op kind in another framework's words ("linear")
 * got 'unknown value "linear" (did you mean "input"?)'; now the kind
 * meant. */
START_TEST(test_op_kind_synonym)
{
	const char *dir = tp_test_tmpdir();
	char path[1100], *text, *at;
	const char *a1[] = {"tagplan", "validate", path, NULL};

	text = tp_test_read(tp_data_file("demo-model.json"), NULL);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "\"kind\": \"matmul\"");
	ck_assert_ptr_nonnull(at);
	memcpy(at + 9, "Linear", 6);
	snprintf(path, sizeof(path), "%s/m.json", dir);
	ck_assert_int_eq(tp_test_write(path, text, strlen(text)), 0);
	free(text);
	expect(a1, 2, ".kind: \"Linear\" is \"matmul\" in tagplan (its "
		      "kinds: input | embedding | matmul",
	       "did you mean");
}
END_TEST

/* Two node entries of one name with "count" (as `tagplan topo` writes
 * them) said 'duplicate node name "dgx-a100-0"', a name the file does not
 * hold; now how "count" names the nodes. */
START_TEST(test_node_count_names)
{
	const char *dir = tp_test_tmpdir();
	char path[1100], *text, *nodes, *entry, *end, *out;
	const char *a1[] = {"tagplan", "validate", path, NULL};
	size_t n;

	text = tp_test_read(tp_data_file("topologies/dgx-a100-4.json"), &n);
	ck_assert_ptr_nonnull(text);
	/* the one entry of 4 nodes twice */
	nodes = strstr(text, "\"nodes\": [");
	ck_assert_ptr_nonnull(nodes);
	entry = strchr(nodes, '{');
	end = strstr(entry, "\n    }");
	ck_assert_ptr_nonnull(end);
	end += strlen("\n    }");
	out = malloc(n + (size_t)(end - entry) + 8);
	ck_assert_ptr_nonnull(out);
	sprintf(out, "%.*s,\n    %.*s%s", (int)(end - text), text,
		(int)(end - entry), entry, end);
	snprintf(path, sizeof(path), "%s/t.json", dir);
	ck_assert_int_eq(tp_test_write(path, out, strlen(out)), 0);
	free(out);
	free(text);
	expect(a1, 2, "duplicate node name \"dgx-a100-0\" (with \"count\", "
		      "the nodes are named dgx-a100-0, dgx-a100-1, ...); node "
		      "names must be unique: give the entries different names",
	       NULL);
}
END_TEST

/* A preset written another common way named nothing or a list:
 * "dgx_a100:4" (no hint), "4xdgx-a100" and "dgx-a100x4" (none),
 * "DGX-A100:4" (two names).  Now the spec meant, count kept. */
START_TEST(test_topo_spec_forms)
{
	static const char *const cases[][2] = {
	    {"DGX-A100:4", "(did you mean dgx-a100:4?)"},
	    {"dgx_a100:4", "(did you mean dgx-a100:4?)"},
	    {"4xdgx-a100", "(did you mean dgx-a100:4?)"},
	    {"dgx-a100x4", "(did you mean dgx-a100:4?)"},
	    {"dgx-h100*16", "(did you mean dgx-h100:16?)"},
	    {"mi300x4", "(did you mean mi300x:4?)"},
	    {"4x1080ti-pcie", "(did you mean 1080ti-pcie:4?)"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", "topo", cases[i][0], NULL};
		expect(argv, 2, cases[i][1], NULL);
	}
}
END_TEST

/* model --dtype float16 (the torch_dtype of HF configs) said only
 * "--dtype expects bf16, fp16, fp32 or fp8"; now it names the one meant. */
START_TEST(test_model_dtype_torch_names)
{
	static const char *const cases[][2] = {
	    {"float16", "--dtype float16: expected bf16, fp16, fp32 or fp8 "
			"(did you mean fp16?)"},
	    {"torch.bfloat16", "(did you mean bf16?)"},
	    {"float32", "(did you mean fp32?)"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", "model", "gpt2", "--dtype",
				      cases[i][0], NULL};
		expect(argv, 2, cases[i][1], NULL);
	}
}
END_TEST

/* export --to megatorn listed the targets but named none; now the one
 * meant (a slip, a longer name, the runtime a target stands for), and
 * none for a name near no target.  Refused before the plan is read. */
START_TEST(test_export_target_slips)
{
	static const char *const cases[][2] = {
	    {"megatorn", "--to megatorn: expected megatron, deepspeed, "
			 "torchrun or torchtitan (did you mean megatron?)"},
	    {"megatron-lm", "(did you mean megatron?)"},
	    {"DeepSpeed", "(did you mean deepspeed?)"},
	    {"torchrnu", "(did you mean torchrun?)"},
	    {"fsdp2", "(did you mean torchtitan?)"},
	};
	const char *dir = tp_test_tmpdir();
	char out[1100];
	struct stat st;

	snprintf(out, sizeof(out), "%s/launch.txt", dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", "export", "-p", "plan.json",
				      "--to", cases[i][0], "-o", out, NULL};
		expect(argv, 2, cases[i][1], NULL);
		ck_assert_int_ne(stat(out, &st), 0);
	}
	{
		const char *argv[] = {"tagplan", "export", "-p", "plan.json",
				      "--to", "horovod", NULL};
		expect(argv, 2, "--to horovod: expected megatron",
		       "did you mean");
	}
}
END_TEST

/* "99999999999999999999xdgx-a100" hinted "dgx-a100:9223372036854775807"
 * (strtoll's saturation), a spec refused in turn; a count over what a
 * topology holds now says it is out of range and the most nodes. */
START_TEST(test_topo_spec_count_range)
{
	static const char *const cases[][2] = {
	    {"99999999999999999999xdgx-a100",
	     "(did you mean dgx-a100:N? 99999999999999999999 is out of "
	     "range: N is at most 131072, 1048576 devices)"},
	    {"dgx-a100x200000", "200000 is out of range: N is at most "
				"131072"},
	    {"2000000x1080ti-pcie", "N is at most 524288"},
	    {"131072xdgx-a100", "(did you mean dgx-a100:131072?)"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", "topo", cases[i][0], NULL};
		expect(argv, 2, cases[i][1], "922337");
	}
}
END_TEST

/* plan --baseline megatorn and --compression lossles listed the words
 * but named none; now the one meant, "dp-hetro" being dp-hetero (one
 * edit) and not dp (a name it begins with).  Refused before any input is
 * read, nothing written; a word near none keeps the plain list. */
START_TEST(test_plan_choice_slips)
{
	static const char *const cases[][3] = {
	    {"--baseline", "megatorn",
	     "--baseline megatorn: expected dp, dp-hetero, megatron or greedy "
	     "(did you mean megatron?)"},
	    {"--baseline", "dp-hetro", "(did you mean dp-hetero?)"},
	    {"--baseline", "greedy-x", "(did you mean greedy?)"},
	    {"--compression", "lossles",
	     "--compression lossles: expected off, lossless or lossy (did "
	     "you mean lossless?)"},
	};
	const char *dir = tp_test_tmpdir();
	char out[1100];
	struct stat st;

	snprintf(out, sizeof(out), "%s/plan.json", dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", "plan", cases[i][0],
				      cases[i][1], "-o", out, NULL};
		expect(argv, 2, cases[i][2], NULL);
		ck_assert_int_ne(stat(out, &st), 0);
	}
	{
		const char *argv[] = {"tagplan", "plan", "--compression",
				      "xyz", NULL};
		expect(argv, 2, "--compression xyz: expected off, lossless "
				"or lossy\n",
		       "did you mean");
	}
}
END_TEST

/* A node count written as a word of its own was taken for a preset:
 * `tagplan topo dgx-a100 4` said 'unknown node preset "4" ... (did you
 * mean t4-pcie, l4-pcie, dgx-a100-40gb?)', a quoted "dgx-a100 4" gave
 * back "tagplan topo dgx-a100 4" (refused again), "4:dgx-a100" named t4-
 * pcie too; "dgx-a100:200000" allowed up to 1048576 nodes (devices, not
 * nodes), and a sum over the limit did not say what the others held.
 * Now each names the spec meant and the range of this preset. */
START_TEST(test_topo_count_words)
{
	static const char *const cases[][5] = {
	    {"dgx-a100", "4", NULL, NULL,
	     "\"4\": a node count goes after its preset, joined by ':': "
	     "tagplan topo dgx-a100:4"},
	    {"dgx-a100 4", NULL, NULL, NULL, "tagplan topo dgx-a100:4\n"},
	    {"4", "dgx-a100", NULL, NULL, "tagplan topo dgx-a100:4\n"},
	    {"v100-nvlink", "2", "1080ti-pcie", "x2",
	     "tagplan topo v100-nvlink:2 1080ti-pcie:2\n"},
	    {"4:dgx-a100", NULL, NULL, NULL, "(did you mean dgx-a100:4?)"},
	    {"4", NULL, NULL, NULL,
	     "(a node count goes after its preset: PRESET:4, e.g. "
	     "dgx-a100:4)"},
	    {"dgx-a100:200000", NULL, NULL, NULL,
	     "more than 1048576 devices in the topology (the limit of this "
	     "version): dgx-a100 has 8 GPUs per node, so at most 131072 nodes "
	     "of it"},
	    {"dgx-a100:0", NULL, NULL, NULL,
	     "must be an integer from 1 to 131072 (dgx-a100 has 8 GPUs per "
	     "node; a topology holds at most 1048576 devices)"},
	    {"dgx-a100:131072", "dgx-a100:1", NULL, NULL,
	     "(the limit of this version; the presets before it hold "
	     "1048576)"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[7] = {"tagplan", "topo"};
		for (int k = 0; k < 4; k++)
			argv[k + 2] = cases[i][k];
		argv[6] = NULL;
		expect(argv, 2, cases[i][4], "did you mean t4-pcie");
	}
}
END_TEST

/* The line topo's count and joined-presets errors give was "tagplan topo
 * dgx-a100:4" alone: `tagplan topo dgx-a100 4 --net 25gbe -o t.json`
 * was told to run a command without its --net and -o (which writes the
 * topology to stdout on the default network).  It is the whole command
 * line meant, every other argument kept where it was (a file name with a
 * space quoted), nothing is written, and the line, run as given, writes
 * the topology. */
START_TEST(test_topo_hint_keeps_options)
{
	const char *dir = tp_test_tmpdir();
	char out[1024], spaced[1024], want[4][1400];
	const char *cases[4][12] = {
	    {"dgx-a100", "4", "--net", "25gbe", "-o", out, NULL},
	    {"-q", "v100-nvlink", "2", "--net", "25gbe", "1080ti-pcie", "x2",
	     "--oversubscription", "2", "-o", out, NULL},
	    {"dgx-a100:2,dgx-h100:2", "--fabric", "clos:leaf=2", "-o", out,
	     NULL},
	    {"4", "dgx-a100", "-o", spaced, NULL},
	};
	struct stat st;

	snprintf(out, sizeof(out), "%s/t.json", dir);
	snprintf(spaced, sizeof(spaced), "%s/my t.json", dir);
	snprintf(want[0], sizeof(want[0]),
		 "\"4\": a node count goes after its preset, joined by ':': "
		 "tagplan topo dgx-a100:4 --net 25gbe -o %s\n",
		 out);
	snprintf(want[1], sizeof(want[1]),
		 ": tagplan topo -q v100-nvlink:2 1080ti-pcie:2 --net 25gbe "
		 "--oversubscription 2 -o %s\n",
		 out);
	snprintf(want[2], sizeof(want[2]),
		 "one preset per argument: tagplan topo dgx-a100:2 dgx-h100:2 "
		 "--fabric clos:leaf=2 -o %s\n",
		 out);
	snprintf(want[3], sizeof(want[3]),
		 ": tagplan topo dgx-a100:4 -o '%s'\n", spaced);
	for (size_t i = 0; i < 4; i++) {
		const char *argv[16] = {"tagplan", "topo"};
		struct tp_run r;
		char *line, *word;
		int n = 0;

		for (int k = 0; cases[i][k]; k++)
			argv[k + 2] = cases[i][k];
		expect(argv, 2, want[i], NULL);
		ck_assert_msg(stat(out, &st) != 0 && stat(spaced, &st) != 0,
			      "case %zu wrote its output", i);
		if (i == 3)
			break;
		/* the line meant, as a shell splits it (no quotes in it) */
		line = strdup(strstr(want[i], "tagplan topo "));
		line[strcspn(line, "\n")] = '\0';
		for (word = strtok(line, " "); word && n < 15;
		     word = strtok(NULL, " "))
			argv[n++] = word;
		argv[n] = NULL;
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0 && stat(out, &st) == 0,
			      "the line meant, %s: exit %d: %s", want[i],
			      r.status, r.err);
		tp_run_free(&r);
		free(line);
		unlink(out);
	}
}
END_TEST

/* A file where -s wants a strategy string ("-s plan.json": the plan
 * goes with -p) was answered with the strategy's whole key list ('"plan.json"
 * is not key=value (keys: tp, pp, ...)'); now what the file is and the
 * option that takes it, exit 2, nothing written. */
START_TEST(test_strategy_is_a_file)
{
	const char *m = tp_test_path("data/good/mlp.json");
	const char *t = tp_test_path("data/good/two-racks.json");
	const char *p = tp_test_path("data/good/mlp-plan.json");
	const char *dir = tp_test_tmpdir();
	char want[3][600], out[1024];
	const char *cases[3][12] = {
	    {"simulate", "-m", m, "-t", t, "-s", p, "-o", out, NULL},
	    {"export", "-m", m, "-t", t, "-s", m, "-o", out, NULL},
	    {"plan", "-m", m, "-t", t, "-s", dir, "-o", out, NULL},
	};
	struct stat st;

	snprintf(out, sizeof(out), "%s/out.json", dir);
	snprintf(want[0], sizeof(want[0]),
		 "strategy: \"%s\" is a plan file, not a strategy string: "
		 "give it with -p %s (tagplan simulate, check, render and "
		 "export take a plan); -s takes key=value items joined by "
		 "commas, e.g. tp=8,pp=2,dp=4",
		 p, p);
	snprintf(want[1], sizeof(want[1]),
		 "strategy: \"%s\" is a model file, not a strategy string: "
		 "give it with -m %s;",
		 m, m);
	snprintf(want[2], sizeof(want[2]),
		 "strategy: \"%s\" is a folder, not a strategy string: -s "
		 "takes key=value items",
		 dir);
	for (int i = 0; i < 3; i++) {
		const char *argv[13] = {"tagplan"};

		for (int k = 0; cases[i][k]; k++)
			argv[k + 1] = cases[i][k];
		expect(argv, 2, want[i], "(keys: ");
		ck_assert_msg(stat(out, &st) != 0, "%s wrote %s", cases[i][0],
			      out);
	}
}
END_TEST

/* A file given to topo as a preset (`tagplan topo topo.json`, a shipped
 * data/topologies file, a plan, nvidia-smi's text) was 'unknown node
 * preset "topo.json" in "topo.json"; known: ...'; now what the file is
 * and what to do with it, exit 2, nothing written. */
START_TEST(test_topo_given_a_file)
{
	const char *t = tp_test_path("data/good/two-racks.json");
	const char *p = tp_test_path("data/good/mlp-plan.json");
	const char *dir = tp_test_tmpdir();
	char txt[1024], out[1024], want[4][2400];
	const char *files[4];
	struct stat st;

	snprintf(txt, sizeof(txt), "%s/topo.txt", dir);
	snprintf(out, sizeof(out), "%s/out.json", dir);
	ck_assert_int_eq(tp_test_write(txt, "GPU0\tX\n", 7), 0);
	files[0] = t;
	files[1] = p;
	files[2] = dir;
	files[3] = txt;
	snprintf(want[0], sizeof(want[0]),
		 "tagplan topo: \"%s\" is a topology file already: give it "
		 "to the other commands as it is (-t %s)",
		 t, t);
	snprintf(want[1], sizeof(want[1]),
		 "tagplan topo: \"%s\" is a plan file, not a node preset: "
		 "topo builds a topology from presets",
		 p);
	snprintf(want[2], sizeof(want[2]),
		 "tagplan topo: \"%s\" is a folder, not a node preset", dir);
	snprintf(want[3], sizeof(want[3]),
		 "tagplan topo: \"%s\" is a file, not a node preset: topo "
		 "builds a topology from presets (PRESET:NODES, e.g. "
		 "dgx-a100:4), or from `nvidia-smi topo -m` output with "
		 "--from-nvidia-smi %s --gpu TYPE",
		 txt, txt);
	for (int i = 0; i < 4; i++) {
		const char *argv[] = {"tagplan", "topo", "dgx-a100:1",
				      files[i], "-o", out, NULL};

		expect(argv, 2, want[i], "unknown node preset");
		ck_assert_msg(stat(out, &st) != 0, "case %d wrote %s", i, out);
	}
}
END_TEST

/* Words a new user reaches for in topo: "--inter-gbps 100" (the brief's
 * slip), "--network", "--bandwidth" for the network between nodes, and
 * "--nodes 4" or "--gpus 8" for the count; they were a bare 'unknown
 * option "--inter-gbps"' ("--gpus" even 'did you mean --gpu?', the
 * nvidia-smi device type).  Now the spelling topo takes. */
START_TEST(test_topo_option_words)
{
	static const char *const cases[][2] = {
	    {"--inter-gbps", "the network between nodes is --net NETWORK"},
	    {"--network", "the network between nodes is --net NETWORK"},
	    {"--bandwidth", "; switch tiers are --fabric)"},
	    {"--nodes", "the node count goes with its preset: PRESET:NODES, "
			"e.g. dgx-a100:4"},
	    {"--gpus", "the node count goes with its preset"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", "topo", "dgx-a100:4",
				      cases[i][0], "100", NULL};
		expect(argv, 2, cases[i][1], "did you mean");
	}
}
END_TEST

/* render --format, render --collapse, simulate --trace-replicas and
 * model --dtype listed their words but named none ("--collapse allways:
 * expected auto, always or never"); now the one meant, as plan's and
 * export's choices do (tp_cli_bad_choice), and the plain list for a word
 * near none.  Refused before any file is read. */
START_TEST(test_choice_slips_everywhere)
{
	static const char *const cases[][8] = {
	    {"render", "-p", "plan.json", "-o", "p.svg", "--format", "svgz",
	     "--format svgz: expected dot, svg, png or pdf (did you mean "
	     "svg?)"},
	    {"render", "-p", "plan.json", "-o", "p.svg", "--collapse",
	     "allways", "--collapse allways: expected auto, always or never "
	     "(did you mean always?)"},
	    {"simulate", "-p", "plan.json", "--trace", "t.json",
	     "--trace-replicas", "al", "--trace-replicas al: expected all, "
	     "one or auto (did you mean all?)"},
	    {"model", "gpt2", "-o", "m.json", "--dtype", "bf61", NULL,
	     "--dtype bf61: expected bf16, fp16, fp32 or fp8 (did you mean "
	     "bf16?)"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[9] = {"tagplan"};
		for (int k = 0; k < 7; k++)
			argv[k + 1] = cases[i][k];
		argv[8] = NULL;
		expect(argv, 2, cases[i][7], NULL);
	}
	{
		const char *argv[] = {"tagplan", "render", "-p", "plan.json",
				      "-o", "p.svg", "--format", "jpg", NULL};
		expect(argv, 2, "--format jpg: expected dot, svg, png or pdf\n",
		       "did you mean");
	}
}
END_TEST

/* plan -p PLAN (taking plan for simulate or check), check -s and render
 * -s (a strategy where a plan is read) said only 'unknown option "-p"';
 * now what to run instead; render --svg F (plan's picture option) how
 * render names its file.  Refused before any input is read. */
START_TEST(test_other_commands_options)
{
	static const char *const cases[][6] = {
	    {"plan", "-p", "plan.json", NULL, NULL,
	     "unknown option \"-p\" (plan searches a plan and writes it with "
	     "-o PLAN; to simulate or check one: tagplan simulate -p PLAN, "
	     "tagplan check -p PLAN)"},
	    {"plan", "--plan=plan.json", NULL, NULL, NULL,
	     "tagplan simulate -p PLAN, tagplan check -p PLAN)"},
	    {"check", "-s", "tp=2", NULL, NULL,
	     "unknown option \"-s\" (check reads a plan, -p PLAN: write one "
	     "from a strategy with tagplan plan -s STRATEGY -o PLAN, or "
	     "simulate it with tagplan simulate -s STRATEGY)"},
	    {"render", "--strategy", "tp=2", "-o", "x.svg",
	     "(render draws a plan, -p PLAN: write one from a strategy with "
	     "tagplan plan -s STRATEGY -o PLAN)"},
	    /* plan's picture options, given to render */
	    {"render", "-p", "plan.json", "--svg", "x.svg",
	     "unknown option \"--svg\" (render writes its picture with -o "
	     "FILE, the format from the extension: -o plan.svg (or .dot .png "
	     ".pdf), or --format)"},
	    {"render", "-p", "plan.json", "--png=x.png", NULL,
	     "unknown option \"--png=x.png\" (render writes its picture"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[7] = {"tagplan"};
		for (int k = 0; k < 5; k++)
			argv[k + 1] = cases[i][k];
		argv[6] = NULL;
		expect(argv, 2, cases[i][5], NULL);
	}
}
END_TEST

/* check --max-regression 5% (a share, "0.05 = 5%" in its help; check
 * --margin takes "10%") said only 'expects a number from 0 to 1e+06, not
 * "5%"'; now the fraction meant, as --min-mfu 40% already did.  An
 * option that is no share keeps no hint. */
START_TEST(test_percent_for_fraction)
{
	const char *a1[] = {"tagplan", "check", "-p", "plan.json",
			    "--baseline-plan", "old.json", "--max-regression",
			    "5%", NULL};
	const char *a2[] = {"tagplan", "check", "-p", "plan.json",
			    "--min-mfu", "40%", NULL};
	const char *a3[] = {"tagplan", "plan", "--time-limit", "5%", NULL};

	expect(a1, 2, "--max-regression expects a number from 0 to 1e+06, "
		      "not \"5%\" (a fraction: 0.05 for 5%)",
	       NULL);
	expect(a2, 2, "(a fraction: 0.4 for 40%)", NULL);
	expect(a3, 2, "not \"5%\"", "fraction");
}
END_TEST

/* plan --time-limit 0 (alone) said "--time-limit 0 and --playouts 0:
 * the search needs one limit" of a --playouts never given (--time-limit
 * alone takes the playout limit away); now it says so and what to give. */
START_TEST(test_plan_time_limit_zero)
{
	const char *a1[] = {"tagplan", "plan", "--time-limit", "0", NULL};
	const char *a2[] = {"tagplan", "plan", "--time-limit", "0",
			    "--playouts", "0", NULL};

	expect(a1, 2, "--time-limit 0 is no time limit, and there is no "
		      "playout limit (--playouts 0, or --time-limit given "
		      "without --playouts): the search needs one; give "
		      "--playouts N, or --time-limit S above 0",
	       NULL);
	expect(a2, 2, "give --playouts N, or --time-limit S above 0", NULL);
}
END_TEST

/* An option before the command ("tagplan -q topo dgx-a100:1", the flag
 * where some tools take global ones) said "the command comes first:
 * tagplan COMMAND [OPTIONS], e.g. tagplan plan -m MODEL -t TOPO"; now the
 * command line meant, when one of the words is a command. */
START_TEST(test_option_before_command)
{
	const char *a1[] = {"tagplan", "-q", "topo", "dgx-a100:1", NULL};
	const char *a2[] = {"tagplan", "-m", "gpt2", NULL};

	expect(a1, 2, "\"-q\" is an option, and the command comes first: "
		      "tagplan topo -q dgx-a100:1\n",
	       NULL);
	expect(a2, 2, "the command comes first: tagplan COMMAND [OPTIONS]",
	       NULL);
}
END_TEST

Suite *suite_newuser(void)
{
	Suite *s = suite_create("newuser");
	TCase *tc = tcase_create("commands");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_command_slips);
	tcase_add_test(tc, test_runtime_slips);
	tcase_add_test(tc, test_help_summaries);
	tcase_add_test(tc, test_fraction_as_percent);
	tcase_add_test(tc, test_device_type_slips);
	tcase_add_test(tc, test_caps_list);
	tcase_add_test(tc, test_network_slips);
	tcase_add_test(tc, test_help_width);
	tcase_add_test(tc, test_model_seq_hint);
	tcase_add_test(tc, test_model_seq_beyond_rope);
	tcase_add_test(tc, test_man_pages_clean);
	tcase_add_test(tc, test_model_dtype_choices);
	tcase_add_test(tc, test_help_after_options);
	tcase_add_test(tc, test_runs_dtype_choices);
	tcase_add_test(tc, test_strategy_spaces);
	tcase_add_test(tc, test_help_command_after);
	tcase_add_test(tc, test_number_slips);
	tcase_add_test(tc, test_number_no_range);
	tcase_add_test(tc, test_name_limits);
	tcase_add_test(tc, test_short_options_joined);
	tcase_add_test(tc, test_fabric_spaces);
	tcase_add_test(tc, test_list_spaces);
	tcase_add_test(tc, test_type_parts);
	tcase_add_test(tc, test_op_kind_synonym);
	tcase_add_test(tc, test_node_count_names);
	tcase_add_test(tc, test_topo_spec_forms);
	tcase_add_test(tc, test_model_dtype_torch_names);
	tcase_add_test(tc, test_export_target_slips);
	tcase_add_test(tc, test_topo_spec_count_range);
	tcase_add_test(tc, test_plan_choice_slips);
	tcase_add_test(tc, test_topo_count_words);
	tcase_add_test(tc, test_topo_hint_keeps_options);
	tcase_add_test(tc, test_strategy_is_a_file);
	tcase_add_test(tc, test_topo_given_a_file);
	tcase_add_test(tc, test_topo_option_words);
	tcase_add_test(tc, test_other_commands_options);
	tcase_add_test(tc, test_percent_for_fraction);
	tcase_add_test(tc, test_plan_time_limit_zero);
	tcase_add_test(tc, test_option_before_command);
	tcase_add_test(tc, test_choice_slips_everywhere);
	suite_add_tcase(s, tc);
	return s;
}
