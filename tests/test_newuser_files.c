/*
 * test_newuser_files.c - suite "newuser_files": the files a new user
 * gives and asks for: outputs that cannot be written (a directory, a
 * missing directory, a path under a file, one of the inputs, two outputs
 * on one stream), inputs that are not there or of another kind (a
 * directory, a `tagplan model` source or `tagplan topo` spec, a file of
 * tagplan's own output, a shipped name), standard input and binary output
 * on a terminal.  Each error names the fix, exits as tagplan(1) says and
 * writes nothing.
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

/* An output that is a directory is usage (exit 2, as tagplan(1) says:
 * "A directory ... is refused ...: exit 2, nothing written"; it was exit
 * 3) and says to name a file inside it; a missing directory names
 * itself and mkdir -p (exit 2, a path that does not exist; it was 3).
 * Every command finds both before any work: export printed its notes
 * before failing to write. */
START_TEST(test_output_directory)
{
	const char *dir = tp_test_tmpdir();
	char missing[1024], inside[1100], report[1100];
	const char *gpt2 = tp_data_file("models/gpt2.json");
	const char *dgx = tp_data_file("topologies/dgx-a100.json");
	const char *a1[] = {"tagplan", "topo", "dgx-a100:1", "-o", dir, NULL};
	const char *a2[] = {"tagplan", "export", "-s", "tp=1", "-m", gpt2,
			    "-t", dgx, "-o", dir, NULL};
	const char *a3[] = {"tagplan", "simulate", "-s", "tp=1", "-m", gpt2,
			    "-t", dgx, "-o", report, "--trace", dir, "-q",
			    NULL};
	const char *a4[] = {"tagplan", "export", "-s", "tp=1", "-m", gpt2,
			    "-t", dgx, "-o", inside, NULL};
	struct stat st;

	snprintf(missing, sizeof(missing), "%s/missing", dir);
	snprintf(inside, sizeof(inside), "%s/missing/x.args", dir);
	snprintf(report, sizeof(report), "%s/report.json", dir);
	expect(a1, 2, "is a directory, not a file: name a file inside it",
	       NULL);
	expect(a2, 2, "is a directory, not a file: name a file inside it",
	       "--vocab-size");
	expect(a3, 2, "is a directory, not a file", NULL);
	ck_assert_msg(stat(report, &st) != 0, "the report was written");
	expect(a4, 2, "does not exist (create it first, e.g. mkdir -p ",
	       "--vocab-size");
	ck_assert_msg(stat(missing, &st) != 0, "the directory was made");
}
END_TEST

/* Two outputs to one stream: simulate --trace - without -o wrote the
 * report and the trace one after the other on stdout (exit 0, two JSON
 * documents run together, which no reader takes), plan --dot /dev/stdout
 * the plan and the DOT; now a usage error naming the fix, nothing on
 * stdout. */
START_TEST(test_two_outputs_one_stream)
{
	const char *gpt2 = tp_data_file("models/gpt2.json");
	const char *dgx = tp_data_file("topologies/dgx-a100.json");
	const char *a1[] = {"tagplan", "simulate", "-s", "tp=1", "-m", gpt2,
			    "-t", dgx, "--trace", "-", "-q", NULL};
	const char *a2[] = {"tagplan", "simulate", "-s", "tp=1", "-m", gpt2,
			    "-t", dgx, "-o", "-", "--trace", "/dev/stdout",
			    "-q", NULL};
	const char *a3[] = {"tagplan", "plan", "-m", gpt2, "-t", dgx,
			    "--playouts", "5", "--threads", "1", "--dot",
			    "/dev/stdout", "-q", NULL};

	expect(a1, 2, "--trace - would be written to standard output, which "
		      "carries the command's output without -o: give --trace "
		      "a file name, or -o FILE",
	       NULL);
	expect(a2, 2, "-o - and --trace /dev/stdout would both be written to "
		      "standard output",
	       NULL);
	expect(a3, 2, "--dot /dev/stdout would be written to standard output",
	       NULL);
}
END_TEST

/* A runtime profile (tagplan-runtime/1, what --runtime FILE takes) is one
 * of tagplan's formats: validate and inspect said 'unknown format
 * "tagplan-runtime/1"; expected "tagplan-model/1", ...' even for the
 * shipped ones; now validate checks it (errors at their JSON path),
 * inspect summarises it, and given to -p it says to use --runtime. */
START_TEST(test_runtime_profile_files)
{
	const char *dir = tp_test_tmpdir();
	const char *mc = tp_data_file("runtimes/megatron-core.json");
	char bad[1100];
	const char *a1[] = {"tagplan", "validate", "--strict", mc, NULL};
	const char *a2[] = {"tagplan", "inspect", mc, NULL};
	const char *a3[] = {"tagplan", "validate", bad, NULL};
	const char *a4[] = {"tagplan", "simulate", "-p", mc, NULL};
	struct tp_run r;
	char *text, *at;

	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.out, "megatron-core.json: ok (runtime)\n"),
		      "%s", r.out);
	tp_run_free(&r);
	tp_run_tagplan(&r, a2, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.out, "\"kind\": \"runtime\"") &&
			      strstr(r.out, "\"name\": \"megatron-core\"") &&
			      strstr(r.out, "\"launcher\": \"megatron\""),
		      "%s", r.out);
	tp_run_free(&r);
	/* a profile with a wrong type: the error at its path */
	text = tp_test_read(mc, NULL);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "\"name\": \"megatron-core\"");
	ck_assert_ptr_nonnull(at);
	/* the same length: 23 bytes */
	memcpy(at, "\"name\": 123456789012345", 23);
	snprintf(bad, sizeof(bad), "%s/bad-runtime.json", dir);
	ck_assert_int_eq(tp_test_write(bad, text, strlen(text)), 0);
	free(text);
	expect(a3, 2, "bad-runtime.json: $.name: expected a string", NULL);
	expect(a4, 2, "this file is a runtime: give it with --runtime FILE; "
		      "-p takes a plan",
	       NULL);
}
END_TEST

/* tagplan's outputs that are not tagplan files, given back to it: a
 * trace (simulate --trace) or a DeepSpeed config (export) was told to
 * 'add "format": "tagplan-plan/1"', which would not make it a plan; now
 * the error says what the file is and where it goes.  A JSON object of
 * none of these kinds keeps the "add format" fix. */
START_TEST(test_own_outputs_given_back)
{
	const char *dir = tp_test_tmpdir();
	char trace[1100], ds[1100], other[1100];
	const char *a1[] = {"tagplan", "simulate", "-p", trace, NULL};
	const char *a2[] = {"tagplan", "validate", ds, NULL};
	const char *a3[] = {"tagplan", "simulate", "-p", other, NULL};
	static const char t[] = "{\"displayTimeUnit\": \"ms\", "
				"\"traceEvents\": []}\n";
	static const char d[] = "{\"train_batch_size\": 8, "
				"\"train_micro_batch_size_per_gpu\": 1}\n";
	static const char o[] = "{\"name\": \"x\"}\n";

	snprintf(trace, sizeof(trace), "%s/trace.json", dir);
	snprintf(ds, sizeof(ds), "%s/ds_config.json", dir);
	snprintf(other, sizeof(other), "%s/other.json", dir);
	ck_assert_int_eq(tp_test_write(trace, t, strlen(t)), 0);
	ck_assert_int_eq(tp_test_write(ds, d, strlen(d)), 0);
	ck_assert_int_eq(tp_test_write(other, o, strlen(o)), 0);
	expect(a1, 2, "this is a Chrome/Perfetto trace (\"traceEvents\", as "
		      "tagplan simulate --trace writes), not a tagplan file",
	       "add \"format\"");
	expect(a2, 2, "this is a DeepSpeed config (as tagplan export --to "
		      "deepspeed writes), not a tagplan file",
	       "add \"format\"");
	expect(a3, 2, "missing required field \"format\" (add \"format\": "
		      "\"tagplan-plan/1\")",
	       NULL);
}
END_TEST

/* export --to deepspeed -o ds.json wrote ds.json and a launch note
 * with "--deepspeed_config ds_config.json", a file that is not there;
 * now the launch line names the file -o wrote (one shell word), and
 * ds_config.json only when the config goes to stdout. */
START_TEST(test_deepspeed_launch_names_config)
{
	const char *dir = tp_test_tmpdir();
	char ds[1100], spaced[1100], want[1300];
	const char *a1[] = {"tagplan", "export", "-s", "tp=2,pp=2", "-m",
			    tp_data_file("models/gpt2.json"), "-t",
			    tp_data_file("topologies/dgx-a100.json"), "--to",
			    "deepspeed", "-o", ds, NULL};
	const char *a2[] = {"tagplan", "export", "-s", "tp=2,pp=2", "-m",
			    tp_data_file("models/gpt2.json"), "-t",
			    tp_data_file("topologies/dgx-a100.json"), "--to",
			    "deepspeed", "-o", spaced, NULL};
	const char *a3[] = {"tagplan", "export", "-s", "tp=2,pp=2", "-m",
			    tp_data_file("models/gpt2.json"), "-t",
			    tp_data_file("topologies/dgx-a100.json"), "--to",
			    "deepspeed", NULL};
	struct tp_run r;

	snprintf(ds, sizeof(ds), "%s/ds.json", dir);
	snprintf(spaced, sizeof(spaced), "%s/my ds.json", dir);
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	snprintf(want, sizeof(want), "--deepspeed_config %s\n", ds);
	ck_assert_msg(strstr(r.err, want), "want \"%s\" in: %s", want, r.err);
	tp_run_free(&r);
	tp_run_tagplan(&r, a2, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	snprintf(want, sizeof(want), "--deepspeed_config '%s'\n", spaced);
	ck_assert_msg(strstr(r.err, want), "want \"%s\" in: %s", want, r.err);
	tp_run_free(&r);
	tp_run_tagplan(&r, a3, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_msg(strstr(r.err, "--deepspeed_config ds_config.json\n"),
		      "%s", r.err);
	tp_run_free(&r);
}
END_TEST

/* validate - - (or -t - with a plan from -) read standard input twice:
 * the first file validated, the second "-:1:1: empty input" (exit 2
 * after printing an ok); now a usage error before reading, as simulate
 * and plan already said. */
START_TEST(test_stdin_once)
{
	const char *gpt2 = tp_data_file("models/gpt2.json");
	const char *a1[] = {"tagplan", "validate", "-", "-", NULL};
	const char *a2[] = {"tagplan", "inspect", "-m", gpt2, "-t", "-", "-",
			    NULL};
	char *text = tp_test_read(gpt2, NULL);
	struct tp_run r;

	ck_assert_ptr_nonnull(text);
	tp_run_tagplan(&r, a1, text);
	ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "only one input can come from stdin (- "
				    "is given 2 times)"),
		      "%s", r.err);
	ck_assert_uint_eq(r.out_len, 0);
	tp_run_free(&r);
	tp_run_tagplan(&r, a2, text);
	ck_assert_msg(r.status == 2 &&
			      strstr(r.err, "only one input can come from stdin"),
		      "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	free(text);
}
END_TEST

/* What tagplan model and tagplan topo take, given to -m or -t (hf:PATH,
 * "dgx-a100:4", "v100-nvlink:2 1080ti-pcie:2"): 'cannot open: No such
 * file or directory' (exit 3) with the shipped names; now usage (exit 2)
 * with the command that builds the file.  A missing file keeps the old
 * message (exit 2 too: a path that does not exist), a shipped name still
 * loads. */
START_TEST(test_source_given_as_file)
{
	const char *gpt2 = tp_data_file("models/gpt2.json");
	char hf[1100];
	const char *a1[] = {"tagplan", "simulate", "-m", gpt2, "-t",
			    "dgx-a100:4", "-s", "tp=1", NULL};
	const char *a2[] = {"tagplan", "simulate", "-m", gpt2, "-t",
			    "v100-nvlink:2 1080ti-pcie:2", "-s", "tp=1", NULL};
	const char *a3[] = {"tagplan", "simulate", "-m", hf, "-t", "dgx-a100",
			    "-s", "tp=1", NULL};
	const char *a4[] = {"tagplan", "simulate", "-m", gpt2, "-t",
			    "no-such-topology", "-s", "tp=1", NULL};

	snprintf(hf, sizeof(hf), "hf:%s", tp_test_path("data/hf/gpt2.json"));
	expect(a1, 2, "dgx-a100:4: a spec of `tagplan topo`, not a topology "
		      "file: build it with `tagplan topo dgx-a100:4 -o "
		      "topo.json` and give -t topo.json",
	       NULL);
	expect(a2, 2, "build it with `tagplan topo v100-nvlink:2 1080ti-pcie:2 "
		      "-o topo.json`",
	       NULL);
	expect(a3, 2, "a source of `tagplan model`, not a model file: build "
		      "the model with `tagplan model hf:",
	       NULL);
	expect(a4, 2, "cannot open", "a spec of");
}
END_TEST

/* A plan made with shipped names (-m gpt2 -t dgx-a100) records this
 * install's absolute paths; checked on another machine or prefix it said
 * 'was made from the topology file "/opt/.../dgx-a100.json", which is
 * not there' though the same file ships there: the shipped file of the
 * recorded name is used when its SHA-256 is the recorded one (only
 * then). */
START_TEST(test_recorded_shipped_elsewhere)
{
	const char *dir = tp_test_tmpdir();
	char plan[1100], moved[1100], badsha[1100], *text, *t2, *at;
	const char *mk[] = {"tagplan", "plan", "-m", "gpt2", "-t", "dgx-a100",
			    "-s", "tp=1", "-q", "-o", plan, NULL};
	const char *a1[] = {"tagplan", "check", "-p", moved, NULL};
	const char *a2[] = {"tagplan", "check", "-p", badsha, NULL};
	struct tp_run r;
	char *mp, *tpth;

	snprintf(plan, sizeof(plan), "%s/p.json", dir);
	snprintf(moved, sizeof(moved), "%s/moved.json", dir);
	snprintf(badsha, sizeof(badsha), "%s/badsha.json", dir);
	tp_run_tagplan(&r, mk, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	text = tp_test_read(plan, NULL);
	ck_assert_ptr_nonnull(text);
	/* the recorded paths as another install would have them */
	mp = strstr(text, "\"model_path\": \"");
	tpth = strstr(text, "\"topology_path\": \"");
	ck_assert_msg(mp && tpth, "%s", text);
	{
		struct tp_strbuf sb;
		const char *e1 = strchr(mp + 15, '"'),
			   *e2 = strchr(tpth + 18, '"');
		tp_strbuf_init(&sb);
		tp_strbuf_add(&sb, text, (size_t)(mp - text));
		tp_strbuf_adds(&sb, "\"model_path\": "
				    "\"/nonexistent/share/tagplan/models/"
				    "gpt2.json");
		tp_strbuf_add(&sb, e1, (size_t)(tpth - e1));
		tp_strbuf_adds(&sb, "\"topology_path\": "
				    "\"/nonexistent/share/tagplan/topologies/"
				    "dgx-a100.json");
		tp_strbuf_adds(&sb, e2);
		t2 = strdup(tp_strbuf_cstr(&sb));
		tp_strbuf_release(&sb);
	}
	ck_assert_int_eq(tp_test_write(moved, t2, strlen(t2)), 0);
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "models/gpt2.json and topology ") &&
			      strstr(r.err, "topologies/dgx-a100.json, recorded"),
		      "%s", r.err);
	tp_run_free(&r);
	/* another digest: not taken */
	at = strstr(t2, "\"topology_sha256\": \"");
	ck_assert_ptr_nonnull(at);
	memset(at + 20, '0', 64);
	ck_assert_int_eq(tp_test_write(badsha, t2, strlen(t2)), 0);
	expect(a2, 2, "which is not there", NULL);
	free(t2);
	free(text);
}
END_TEST

/* tagplan model hf:DIR/ of a folder without config.json said
 * "DIR//config.json: cannot open: No such file or directory" (exit 3);
 * now the folder and what to give (exit 2).  A folder of configs saved
 * under their models' names (as HF exports are often kept) said only
 * "give hf: the folder of a HuggingFace model": now it names its .json
 * files and the hf: of the first. */
START_TEST(test_hf_folder_without_config)
{
	const char *dir = tp_test_tmpdir();
	char src[1100], want[1400], cfg[1100];
	const char *a1[] = {"tagplan", "model", src, "-o", "/dev/null", NULL};

	snprintf(src, sizeof(src), "hf:%s/", dir);
	snprintf(want, sizeof(want), "%s: the folder has no config.json: give "
		 "hf: the folder of a HuggingFace model, or the config file "
		 "itself", dir);
	expect(a1, 2, want, "//config.json");
	snprintf(cfg, sizeof(cfg), "%s/gpt2.json", dir);
	ck_assert_int_eq(tp_test_write(cfg, "{}", 2), 0);
	snprintf(cfg, sizeof(cfg), "%s/bert.json", dir);
	ck_assert_int_eq(tp_test_write(cfg, "{}", 2), 0);
	snprintf(want, sizeof(want), "%s: the folder has no config.json; it "
		 "holds bert.json, gpt2.json: give hf: one of them (hf:%s/"
		 "bert.json) or the folder of a HuggingFace model", dir, dir);
	expect(a1, 2, want, NULL);
}
END_TEST

/* calibrate -o DIR/missing/p.json exits as every other command does for
 * an output whose directory is missing (tagplan(1) FILES: "fails before
 * any work"; exit 2 since a path that does not exist is usage, it was 3
 * for all and 2 for calibrate alone); the message is the same. */
START_TEST(test_calibrate_missing_directory)
{
	const char *dir = tp_test_tmpdir();
	char out[1100];
	const char *a1[] = {"tagplan", "calibrate",
			    tp_data_file("validation/measured_runs.json"),
			    "-o", out, NULL};
	const char *a2[] = {"tagplan", "topo", "dgx-a100:1", "-o", out, NULL};
	struct stat st;

	snprintf(out, sizeof(out), "%s/missing/p.json", dir);
	expect(a1, 2, "does not exist (create it first, e.g. mkdir -p ",
	       NULL);
	expect(a2, 2, "does not exist (create it first, e.g. mkdir -p ",
	       NULL);
	snprintf(out, sizeof(out), "%s/missing", dir);
	ck_assert_msg(stat(out, &st) != 0, "the directory was made");
}
END_TEST

/* An input that is a directory is a usage error (exit 2, as an output
 * that is one) naming its JSON files; it was exit 3, "is a directory,
 * not a file", without a fix. */
START_TEST(test_input_directory)
{
	const char *dir = tp_test_tmpdir();
	char sub[1100], f[1200];
	const char *a1[] = {"tagplan", "validate", sub, NULL};
	const char *a2[] = {"tagplan", "simulate", "-m", sub, "-t",
			    tp_data_file("topologies/dgx-a100.json"), "-s",
			    "tp=1", NULL};
	static const char *const names[] = {"d.json", "a.json", "c.json",
					    "b.json", ".e.json", "f.txt"};

	snprintf(sub, sizeof(sub), "%s/in", dir);
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	expect(a1, 2, "/in: is a directory, not a file: give a file (it "
		      "holds no .json file)",
	       NULL);
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		snprintf(f, sizeof(f), "%s/%s", sub, names[i]);
		ck_assert_int_eq(tp_test_write(f, "{}", 2), 0);
	}
	expect(a2, 2, "/in: is a directory, not a file: give one of its "
		      "files (a.json, b.json, c.json and 1 more .json)",
	       NULL);
}
END_TEST

/* A path that does not exist is usage (exit 2), as a directory given as
 * a file is: an input that is not there names the nearest file of its
 * folder or the folder that is missing; it was exit 3, "cannot open: No
 * such file or directory" alone.  A file that exists but cannot be read
 * stays I/O (exit 3): tp_cli_exit_code tells them apart by the errno. */
START_TEST(test_missing_input_exit)
{
	char near[1100], nofold[1100], out[1100];
	const char *a1[] = {"tagplan", "simulate", "-m", near, "-t",
			    tp_data_file("topologies/dgx-a100.json"), "-s",
			    "tp=1", "-o", out, NULL};
	const char *a2[] = {"tagplan", "validate", nofold, NULL};
	const char *a3[] = {"tagplan", "inspect", "/proc/self/mem", NULL};
	struct tp_error err;
	struct stat st;

	snprintf(near, sizeof(near), "%s",
		 tp_data_file("models/llama-3-8b.json"));
	/* "llama3-8b.json": one letter short */
	memmove(strstr(near, "llama-3") + 5, strstr(near, "llama-3") + 6,
		strlen(strstr(near, "llama-3") + 6) + 1);
	snprintf(out, sizeof(out), "%s/report.json", tp_test_tmpdir());
	expect(a1, 2, "llama3-8b.json: cannot open: No such file or directory "
		      "(did you mean ",
	       NULL);
	expect(a1, 2, "/llama-3-8b.json?)", NULL);
	ck_assert_msg(stat(out, &st) != 0, "the report was written");
	snprintf(nofold, sizeof(nofold), "%s/no-such-folder/m.json",
		 tp_test_tmpdir());
	expect(a2, 2, "/no-such-folder/m.json: cannot open: No such file or "
		      "directory (the folder ",
	       NULL);
	expect(a2, 2, "/no-such-folder does not exist)", NULL);
	/* exists, the read fails: I/O */
	expect(a3, 3, "/proc/self/mem: cannot read: ", NULL);
	/* the mapping itself */
	tp_error_clear(&err);
	tp_error_set(&err, TP_EIO, "x");
	ck_assert_int_eq(tp_cli_exit_code(&err), 3);
	err.sys_errno = ENOENT;
	ck_assert_int_eq(tp_cli_exit_code(&err), 2);
	err.sys_errno = ENOSPC;
	ck_assert_int_eq(tp_cli_exit_code(&err), 3);
	err.sys_errno = ENOENT;
	tp_error_set(&err, TP_EIO, "y"); /* a later error resets it */
	ck_assert_int_eq(tp_cli_exit_code(&err), 3);
}
END_TEST

/* The nearest file a missing input names is by stem and extension:
 * "deep.json" named rep.json (2 edits of 9 letters with ".json"); now
 * stems are compared (1 edit up to 4 letters), and an extension slip
 * ("gpt2.jsn") finds gpt2.json, which it did not. */
START_TEST(test_missing_input_near)
{
	const char *dir = tp_test_tmpdir();
	char f[1100], in[1100];
	const char *a1[] = {"tagplan", "inspect", in, NULL};
	static const char *const names[] = {"rep.json", "gpt2.json",
					    "llama-3-8b.json"};

	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		snprintf(f, sizeof(f), "%s/%s", dir, names[i]);
		ck_assert_int_eq(tp_test_write(f, "{}", 2), 0);
	}
	snprintf(in, sizeof(in), "%s/deep.json", dir);
	expect(a1, 2, "/deep.json: cannot open: No such file or directory",
	       "did you mean");
	snprintf(in, sizeof(in), "%s/gpt2.jsn", dir);
	expect(a1, 2, "/gpt2.jsn: cannot open: No such file or directory (did "
		      "you mean ",
	       NULL);
	expect(a1, 2, "/gpt2.json?)", NULL);
	snprintf(in, sizeof(in), "%s/llama3-8b.json", dir);
	expect(a1, 2, "/llama-3-8b.json?)", NULL);
}
END_TEST

/* data/devices.json given as -t (or -m, -p) said only "this is a
 * tagplan-devices/1 file, expected tagplan-topology/1"; now what the file
 * is and, for -t, how to build a topology. */
START_TEST(test_devices_file_as_input)
{
	const char *dev = tp_data_file("devices.json");
	const char *a1[] = {"tagplan", "simulate", "-m",
			    tp_data_file("models/gpt2.json"), "-t", dev, "-s",
			    "tp=1", NULL};
	const char *a2[] = {"tagplan", "check", "-p", dev, NULL};

	expect(a1, 2, "expected tagplan-topology/1 (this file is a catalogue "
		      "of device types, which tagplan reads from its data "
		      "folder, as data/devices.json; -t takes a topology: "
		      "build one from presets with `tagplan topo "
		      "PRESET:NODES -o topo.json`)",
	       NULL);
	expect(a2, 2, "as data/devices.json; -p takes a plan)", "tagplan topo");
}
END_TEST

/* plan -o plan.svg (meaning --svg) wrote the plan's JSON into
 * plan.svg, and simulate -o, --trace, model -o and topo -o the same for
 * any picture name; now a usage error naming the option that draws, before
 * any work, nothing written. */
START_TEST(test_json_output_picture_name)
{
	const char *dir = tp_test_tmpdir();
	char out[1100];
	const char *m = tp_data_file("models/gpt2.json");
	const char *t = tp_data_file("topologies/dgx-a100.json");
	const char *a1[] = {"tagplan", "plan", "-m", m, "-t", t, "--playouts",
			    "5", "-q", "-o", out, NULL};
	const char *a2[] = {"tagplan", "simulate", "-m", m, "-t", t, "-s",
			    "tp=1", "-q", "--trace", out, NULL};
	const char *a3[] = {"tagplan", "topo", "dgx-a100:1", "-o", out, NULL};
	struct stat st;

	snprintf(out, sizeof(out), "%s/plan.SVG", dir);
	expect(a1, 2, "plan.SVG: -o is the plan, written as JSON, not a "
		      "picture; draw the picture with --svg FILE.svg",
	       NULL);
	ck_assert_msg(stat(out, &st) != 0, "plan.SVG was written");
	snprintf(out, sizeof(out), "%s/trace.png", dir);
	expect(a2, 2, "--trace is the Chrome/Perfetto trace, written as JSON",
	       NULL);
	snprintf(out, sizeof(out), "%s/topo.dot", dir);
	expect(a3, 2, "-o is the topology file, written as JSON, not a "
		      "picture; give it a .json name",
	       NULL);
	ck_assert_msg(stat(out, &st) != 0, "topo.dot was written");
}
END_TEST

/* An empty file name ("tagplan validate "$PLAN"" with PLAN unset) said
 * "tagplan: cannot open: No such file or directory", naming no file; now
 * it says the name is empty and what likely emptied it (exit 2, nothing
 * written). */
START_TEST(test_empty_file_name)
{
	char out[1100];
	const char *a1[] = {"tagplan", "validate", "", NULL};
	const char *a2[] = {"tagplan", "inspect", "", NULL};
	const char *a3[] = {"tagplan", "calibrate", "", "-o", out, NULL};
	struct stat st;

	snprintf(out, sizeof(out), "%s/profile.json", tp_test_tmpdir());
	expect(a1, 2, "tagplan: an empty file name (\"\"): give the path of a "
		      "file (a shell variable that is not set?)",
	       "cannot open");
	expect(a2, 2, "an empty file name", "cannot open");
	expect(a3, 2, "an empty file name", "cannot open");
	ck_assert_msg(stat(out, &st) != 0, "the profile was written");
}
END_TEST

/* -m and -t swapped said only that -m is a topology ("give it with -t
 * TOPO"); fixed, the next run said -t is a model.  Now one message names
 * both and the command line to give, for simulate, plan, export and
 * check; -m a topology with -t a topology too keeps the note on -m. */
START_TEST(test_swapped_model_topology)
{
	const char *m = tp_test_path("data/good/mlp.json");
	const char *t = tp_test_path("data/good/two-racks.json");
	const char *a1[] = {"tagplan", "simulate", "-m", t, "-t", m, "-s",
			    "tp=1", NULL};
	const char *a2[] = {"tagplan", "plan", "-m", t, "-t", m, "--playouts",
			    "5", NULL};
	const char *a3[] = {"tagplan", "export", "-m", t, "-t", m, "-s",
			    "tp=1", NULL};
	const char *a4[] = {"tagplan", "simulate", "-m", t, "-t", t, "-s",
			    "tp=1", NULL};
	char want[3000];

	snprintf(want, sizeof(want),
		 "(-m and -t are swapped: %s is a topology and %s a model; "
		 "give -m %s -t %s)",
		 t, m, m, t);
	expect(a1, 2, want, "give it with -t TOPO");
	expect(a2, 2, want, "give it with -t TOPO");
	expect(a3, 2, want, "give it with -t TOPO");
	expect(a4, 2, "(this file is a topology: give it with -t TOPO; -m "
		      "takes a model)",
	       "swapped");
}
END_TEST

/* calibrate -o - (or /dev/stdout) wrote the profile after the table of
 * runs on standard output, one stream that is neither a table nor JSON,
 * and said "use --runtime /dev/stdout"; now a usage error, nothing run. */
START_TEST(test_calibrate_stdout)
{
	static const char *const outs[] = {"-", "/dev/stdout"};

	for (size_t i = 0; i < 2; i++) {
		const char *argv[] = {
		    "tagplan", "calibrate",
		    tp_data_file("validation/measured_runs.json"), "-o",
		    outs[i], NULL};
		expect(argv, 2,
		       "would be written to standard output, which carries "
		       "the table of runs: give -o a file name",
		       "fitting");
	}
}
END_TEST

/* An output under a file ("plan.json/x.json", a slip for "plan/x.json")
 * said "cannot write: Not a directory"; now it names the file that is
 * not a directory (exit 2, as for a missing directory). */
START_TEST(test_output_under_file)
{
	const char *dir = tp_test_tmpdir();
	char file[1100], out[1200];
	const char *a1[] = {"tagplan", "topo", "dgx-a100:1", "-o", out, NULL};

	snprintf(file, sizeof(file), "%s/plan.json", dir);
	ck_assert_int_eq(tp_test_write(file, "{}", 2), 0);
	snprintf(out, sizeof(out), "%s/sub/x.json", file);
	expect(a1, 2, "/plan.json is a file, not a directory (name the "
		      "output in a directory)",
	       NULL);
	snprintf(out, sizeof(out), "%s/x.json", file);
	expect(a1, 2, "/plan.json is a file, not a directory", NULL);
}
END_TEST

/* import checked its output only when writing: -o of its own input
 * (the trace CSV of --cluster, -m of --plan) replaced the input with the
 * result, and a missing directory said "cannot create a temporary file:
 * No such file or directory"; now as every command: refused before any
 * work, the input untouched. */
START_TEST(test_import_outputs)
{
	const char *dir = tp_test_tmpdir();
	char src[1100], csv[1100], model[1100], missing[1100], *before,
	    *after;
	const char *a1[] = {"tagplan", "import", src, "--cluster", csv, "-o",
			    csv, NULL};
	const char *a2[] = {"tagplan", "import", src, "--plan", "r.json",
			    "-m", model, "-t",
			    tp_data_file("topologies/dgx-a100.json"), "-o",
			    model, NULL};
	const char *a3[] = {"tagplan", "import", src, "--model", "TINY", "-o",
			    missing, NULL};
	const char *a4[] = {"tagplan", "import", src + 7, "--model", "TINY",
			    NULL};
	size_t n0, n1;

	snprintf(src, sizeof(src), "sailor:%s", tp_test_path("data/sailor"));
	snprintf(csv, sizeof(csv), "%s/t.csv", dir);
	snprintf(model, sizeof(model), "%s/m.json", dir);
	snprintf(missing, sizeof(missing), "%s/missing/m.json", dir);
	before = tp_test_read(
	    tp_test_path("data/sailor/configs/trace_tiny.csv"), &n0);
	ck_assert_ptr_nonnull(before);
	ck_assert_int_eq(tp_test_write(csv, before, n0), 0);
	ck_assert_int_eq(tp_test_write(model, "{}", 2), 0);
	expect(a1, 2, "t.csv is also the input --cluster ", NULL);
	after = tp_test_read(csv, &n1);
	ck_assert_msg(after && n1 == n0 && !memcmp(before, after, n0),
		      "the trace was overwritten");
	expect(a2, 2, "m.json is also the input -m ", NULL);
	expect(a3, 2, "does not exist (create it first, e.g. mkdir -p ",
	       NULL);
	/* the folder without "sailor:" said "expected one source,
	   sailor:DIR" */
	expect(a4, 2, "data/sailor: name the source's layout: sailor:", NULL);
	free(before);
	free(after);
}
END_TEST

/* hf: of one of tagplan's own files said "$.model_type: missing;
 * expected a string naming one of the supported model types: ..."; now
 * it says what the file is and what to do.  A quantised torch_dtype's
 * fix lists fp8 among --dtype's values (it accepts fp8). */
START_TEST(test_hf_tagplan_file)
{
	char m[1100], t[1100], q[1100];
	const char *a1[] = {"tagplan", "model", m, NULL};
	const char *a2[] = {"tagplan", "model", t, NULL};
	const char *a3[] = {"tagplan", "model", q, NULL};

	snprintf(m, sizeof(m), "hf:%s", tp_data_file("models/gpt2.json"));
	snprintf(t, sizeof(t), "hf:%s",
		 tp_data_file("topologies/dgx-a100.json"));
	snprintf(q, sizeof(q), "hf:%s", tp_test_path("data/hf/bad/int8.json"));
	expect(a1, 2, "gpt2.json: $.format: this is a tagplan file "
		      "(\"tagplan-model/1\"), not a HuggingFace config: "
		      "give it as it is to plan, simulate and export (-m "
		      "FILE)",
	       "model_type");
	expect(a2, 2, "(\"tagplan-topology/1\"), not a HuggingFace config: "
		      "give hf: a model's config.json",
	       NULL);
	expect(a3, 2, "--dtype bf16|fp16|fp32|fp8", NULL);
}
END_TEST

/* inspect of two files, or none, said "expected one FILE" either way. */
START_TEST(test_inspect_file_count)
{
	const char *gpt2 = tp_data_file("models/gpt2.json");
	const char *dgx = tp_data_file("topologies/dgx-a100.json");
	const char *a1[] = {"tagplan", "inspect", gpt2, dgx, NULL};
	const char *a2[] = {"tagplan", "inspect", NULL};
	const char *a3[] = {"tagplan", "validate", NULL};
	const char *a4[] = {"tagplan", "render", NULL};

	expect(a1, 2, "expected one FILE, got 2: inspect them one at a time "
		      "(tagplan validate checks several at once)",
	       NULL);
	expect(a2, 2, "missing FILE: a model, topology, plan or report", NULL);
	/* and the other commands' missing files say what is missing */
	expect(a3, 2, "missing FILE: the files to check", NULL);
	expect(a4, 2, "-p PLAN is required (the plan file to draw)", NULL);
}
END_TEST

/* validate of calibrate's input said 'missing required field "format"
 * (one of "tagplan-model/1", ... "tagplan-report/1")', a list without
 * devices and runtime files, which it validates; now a run list is
 * checked as calibrate reads and builds it, and a JSON Schema of
 * data/schema is named as such. */
START_TEST(test_validate_run_list)
{
	const char *dir = tp_test_tmpdir();
	char path[1100], topos[1100], *text, *at;
	const char *runs = tp_data_file("validation/measured_runs.json");
	const char *a1[] = {"tagplan", "validate", runs, NULL};
	const char *a2[] = {"tagplan", "validate", path, NULL};
	const char *a3[] = {"tagplan", "validate",
			    tp_data_file("schema/model.schema.json"), NULL};
	const char *a4[] = {"tagplan", "validate", "-", NULL};
	const char *a5[] = {"tagplan", "inspect", runs, NULL};
	struct tp_run r;

	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0 && strstr(r.out, "measured_runs.json: ok "
						     "(measured runs, "),
		      "exit %d: %s%s", r.status, r.out, r.err);
	tp_run_free(&r);
	/* a run whose strategy does not parse */
	text = tp_test_read(runs, NULL);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "\"strategy\": \"tp=1,pp=1,dp=1,");
	ck_assert_ptr_nonnull(at);
	at[17] = ' ';
	snprintf(path, sizeof(path), "%s/runs.json", dir);
	ck_assert_int_eq(tp_test_write(path, text, strlen(text)), 0);
	free(text);
	/* the topologies beside it, as in data/validation */
	snprintf(topos, sizeof(topos), "%s/topologies", dir);
	ck_assert_int_eq(
	    symlink(tp_data_file("validation/topologies"), topos), 0);
	expect(a2, 2, "runs.json: run rn50-a100-amp-1: strategy: \"tp=1 "
		      "pp=1\": items are separated by commas",
	       "missing required field");
	expect(a3, 2, "this is a JSON Schema", NULL);
	/* inspect (or -m) of a run list says what it is */
	expect(a5, 2, "this is a list of measured runs (calibrate's input, "
		      "tagplan-formats(5) MEASURED RUNS), not a tagplan file; "
		      "tagplan validate checks it",
	       NULL);
	tp_run_tagplan(&r, a4, "{\"rows\": 1}");
	ck_assert_msg(r.status == 2 && strstr(r.err, "\"tagplan-devices/1\", "
						     "\"tagplan-runtime/1\""),
		      "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
}
END_TEST

/* TAGPLAN_DATA naming no folder was ignored without a word (each data
 * file is then taken from beside the binary or the install); now a
 * warning says so.  Check runs each test in its own process, so the
 * environment set here is this test's. */
START_TEST(test_data_env_missing)
{
	const char *a1[] = {"tagplan", "topo", "dgx-a100:1", NULL};
	char *old = getenv("TAGPLAN_DATA") ? strdup(getenv("TAGPLAN_DATA"))
					   : NULL;
	struct tp_run r;

	setenv("TAGPLAN_DATA", "/nonexistent-tagplan-data", 1);
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0 &&
			  strstr(r.err, "warning: TAGPLAN_DATA=/nonexistent-"
					"tagplan-data is not a folder"),
		      "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	if (old)
		setenv("TAGPLAN_DATA", old, 1);
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0 && !strstr(r.err, "warning"), "%s", r.err);
	tp_run_free(&r);
	free(old);
}
END_TEST

/* Run argv with standard output on a new terminal (a pty) and standard
 * error captured into err (size bytes): the exit status. */
static int run_on_terminal(const char *const *argv, char *err, size_t size)
{
	const char *bin = getenv("TAGPLAN_BIN") ? getenv("TAGPLAN_BIN")
						: "./tagplan";
	int master, slave, ep[2], status;
	size_t n = 0;
	ssize_t k;
	pid_t pid;

	ck_assert_int_eq(openpty(&master, &slave, NULL, NULL, NULL), 0);
	ck_assert_int_eq(pipe(ep), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);
		dup2(nul, 0);
		dup2(slave, 1);
		dup2(ep[1], 2);
		close(master);
		close(ep[0]);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(slave);
	close(ep[1]);
	/* read both until standard error ends: what reaches the terminal is
	 * drained, so that the child never blocks on it */
	for (;;) {
		struct pollfd fds[2] = {{ep[0], POLLIN, 0},
					{master, POLLIN, 0}};
		char buf[4096];

		if (poll(fds, 2, 10000) <= 0)
			break;
		if (fds[1].revents & POLLIN)
			(void)!read(master, buf, sizeof(buf));
		if (fds[0].revents & (POLLIN | POLLHUP)) {
			k = read(ep[0], n + 1 < size ? err + n : buf,
				 n + 1 < size ? size - 1 - n : sizeof(buf));
			if (k <= 0)
				break;
			if (n + 1 < size)
				n += (size_t)k;
		}
	}
	err[n] = '\0';
	close(ep[0]);
	close(master);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* render --format png -o - on a terminal wrote the PNG's bytes there;
 * now a usage error that says to redirect (curl refuses the same).  A
 * pipe still gets the PNG. */
START_TEST(test_render_binary_terminal)
{
	const char *dir = tp_test_tmpdir();
	char plan[1100], err[4096];
	const char *a0[] = {"tagplan", "plan", "-m",
			    tp_data_file("models/gpt2.json"), "-t",
			    tp_data_file("topologies/dgx-a100.json"),
			    "--baseline", "dp", "-q", "-o", plan, NULL};
	const char *a1[] = {"tagplan", "render", "-p", plan, "--format", "png",
			    "-o", "-", NULL};
	struct tp_run r;
	int st;

	snprintf(plan, sizeof(plan), "%s/plan.json", dir);
	tp_run_tagplan(&r, a0, NULL);
	ck_assert_msg(r.status == 0, "plan: exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	st = run_on_terminal(a1, err, sizeof(err));
	ck_assert_msg(st == 2 && strstr(err, "--format png -o - would write "
					     "binary PNG to the terminal: "
					     "redirect it (> plan.png), or "
					     "give -o plan.png"),
		      "exit %d: %s", st, err);
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0 && r.out_len > 8 &&
			  !memcmp(r.out, "\x89PNG", 4),
		      "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
}
END_TEST

/* train -o - on a terminal wrote the binary weights there after the
 * whole training; now refused before it (a tiny training, should the
 * check be missing). */
START_TEST(test_train_binary_terminal)
{
	const char *bin = getenv("TAGPLAN_BIN") ? getenv("TAGPLAN_BIN")
						: "./tagplan";
	const char *a1[] = {bin,	    "train", "--games", "2", "--epochs",
			    "1",	    "--playouts", "2", "--max-devices",
			    "2",	    "-q",	  "-o", "-", NULL};
	char err[4096];
	int st = run_on_terminal(a1, err, sizeof(err));

	ck_assert_msg(st == 2 && strstr(err, "-o - would write binary weights "
					     "to the terminal: redirect it (> "
					     "net.weights), or give -o FILE"),
		      "exit %d: %s", st, err);
}
END_TEST

/* hf: of a Hub id, a URL or a shipped model's name said "cannot open:
 * No such file or directory" (exit 3); now that tagplan reads local
 * files, how to get the config, and the shipped model of that name. */
START_TEST(test_hf_not_local)
{
	static const char *const cases[][2] = {
	    {"hf:meta-llama/Llama-2-7b-hf",
	     "a HuggingFace Hub id? tagplan reads local files only: download "
	     "the config (huggingface-cli download meta-llama/Llama-2-7b-hf "
	     "config.json --local-dir DIR) and give hf:DIR/config.json; or "
	     "the shipped model: tagplan model llama-2-7b"},
	    {"hf:https://example.org/config.json",
	     "tagplan reads local files only: download the config (curl -L "
	     "-o config.json 'https://example.org/config.json')"},
	    {"hf:gpt2", "hf:gpt2: no such file; hf: takes a config.json path; "
			"or the shipped model: tagplan model gpt2"},
	};
	const char *a1[] = {"tagplan", "model", "hf:no/such.json", NULL};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"tagplan", "model", cases[i][0], NULL};
		expect(argv, 2, cases[i][1], NULL);
	}
	/* a path that is missing stays the reader's error */
	expect(a1, 2, "no/such.json: cannot open", "Hub");
}
END_TEST

/* "simulate -s tp=2 x.json" hinted "files are given with their option:
 * -p PLAN or ...", though -p and -s exclude each other. */
START_TEST(test_strategy_file_hint)
{
	const char *a1[] = {"tagplan", "simulate", "-s", "tp=2", "x.json",
			    NULL};
	const char *a2[] = {"tagplan", "simulate", "x.json", NULL};

	expect(a1, 2, "(files are given with their option: -m MODEL or -t "
		      "TOPO)",
	       "-p PLAN");
	expect(a2, 2, "-p PLAN or -m MODEL or -t TOPO", NULL);
}
END_TEST

/* check -p - of a plan whose recorded model is not in the working
 * directory said "- was made from the model file ..., which is not there
 * (looked for x.json)"; now it names the plan as read from standard input
 * and where it looked. */
START_TEST(test_plan_stdin_recorded)
{
	const char *dir = tp_test_tmpdir();
	char plan[1100], model[1100], *text, *at;
	const char *am[] = {"tagplan", "model", "gpt", "--hidden", "64",
			    "--layers", "2", "--heads", "2", "--seq", "8",
			    "--vocab", "10", "--batch", "8", "-o", model, NULL};
	const char *a0[] = {"tagplan", "plan", "-m", model, "-t",
			    tp_data_file("topologies/dgx-a100.json"),
			    "--baseline", "dp", "-q", "-o", plan, NULL};
	const char *a1[] = {"tagplan", "check", "-p", "-", NULL};
	static const char *const keys[] = {"\"model_path\": \"",
					   "\"model_file\": \""};
	struct tp_run r;

	snprintf(plan, sizeof(plan), "%s/plan.json", dir);
	snprintf(model, sizeof(model), "%s/tiny.json", dir);
	tp_run_tagplan(&r, am, NULL);
	ck_assert_msg(r.status == 0, "model: %s", r.err);
	tp_run_free(&r);
	tp_run_tagplan(&r, a0, NULL);
	ck_assert_msg(r.status == 0, "plan: %s", r.err);
	tp_run_free(&r);
	text = tp_test_read(plan, NULL);
	ck_assert_ptr_nonnull(text);
	/* room for the names to grow */
	text = realloc(text, strlen(text) + 64);
	ck_assert_ptr_nonnull(text);
	/* the recorded model as a relative name that is nowhere */
	for (int k = 0; k < 2; k++) {
		at = strstr(text, keys[k]);
		ck_assert_ptr_nonnull(at);
		at += strlen(keys[k]);
		memmove(at + strlen("nosuch-model.json"), strchr(at, '"'),
			strlen(strchr(at, '"')) + 1);
		memcpy(at, "nosuch-model.json", strlen("nosuch-model.json"));
	}
	tp_run_tagplan(&r, a1, text);
	ck_assert_msg(r.status == 2 &&
			  strstr(r.err, "the plan read from standard input was "
					"made from the model file "
					"\"nosuch-model.json\"") &&
			  strstr(r.err, "in the working directory"),
		      "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	free(text);
}
END_TEST

/* One of tagplan's own non-JSON files given where JSON goes (-p
 * launch.sh, -p plan.svg) said 'unknown word "torchrun"' or 'unexpected
 * character '<''; now what the file is and what to do with it.  JSON
 * with an error of its own keeps its syntax error. */
START_TEST(test_own_text_outputs)
{
	static const char *const cases[][2] = {
	    {"torchrun \\\n  --nnodes=4 \\\n", "this is a shell script "
						  "(tagplan export --to "
						  "torchrun writes one), not "
						  "JSON: run it with sh"},
	    {"--tensor-model-parallel-size 1\n", "this is command-line "
						  "arguments (tagplan export "
						  "--to megatron writes them)"},
	    {"# TorchTitan job config\n\n[job]\ndescription = \"x\"\n",
	     "this is TOML (tagplan export --to torchtitan writes a "
	     "TorchTitan job config), not JSON"},
	    {"<?xml version=\"1.0\"?>\n<svg>\n", "this is an SVG picture"},
	    {"graph tagplan {\n}\n", "this is Graphviz DOT"},
	    {"TPGNNW\r\n", "this is GNN weights (tagplan train), not JSON: "
			    "give them to plan --weights"},
	    {"\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV12\n",
	     "this is the output of nvidia-smi topo -m, not JSON: tagplan "
	     "topo --from-nvidia-smi FILE --gpu TYPE"},
	    /* JSON's own errors stay */
	    {"# a comment\n{\"a\": [\n1]}\n", "comments are not allowed in "
					     "JSON"},
	};
	const char *dir = tp_test_tmpdir();
	char path[1100];
	const char *argv[] = {"tagplan", "simulate", "-p", path, NULL};

	snprintf(path, sizeof(path), "%s/input", dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(tp_test_write(path, cases[i][0],
					       strlen(cases[i][0])),
				 0);
		expect(argv, 2, cases[i][1],
		       i + 1 < 8 ? "unknown word" : "this is");
	}
}
END_TEST

/* validate of a plan alone said "ok (plan, structure only: give -m MODEL
 * -t TOPO ...)" though the plan records its model and topology, which
 * check and render use: a hand edit naming no device passed.  Now it is
 * resolved against them when they are there unchanged. */
START_TEST(test_validate_plan_recorded)
{
	const char *dir = tp_test_tmpdir();
	char plan[1100], bad[1100], *text, *at;
	const char *a0[] = {"tagplan", "plan", "-m",
			    tp_data_file("models/gpt2.json"), "-t",
			    tp_data_file("topologies/dgx-a100.json"),
			    "--baseline", "dp", "-q", "-o", plan, NULL};
	const char *a1[] = {"tagplan", "validate", plan, NULL};
	const char *a2[] = {"tagplan", "validate", bad, NULL};
	const char *a3[] = {"tagplan", "inspect", plan, NULL};
	struct tp_run r;

	snprintf(plan, sizeof(plan), "%s/plan.json", dir);
	snprintf(bad, sizeof(bad), "%s/bad.json", dir);
	tp_run_tagplan(&r, a0, NULL);
	ck_assert_msg(r.status == 0, "plan: %s", r.err);
	tp_run_free(&r);
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0 && strstr(r.out, "ok (plan, resolved "
						     "against ") &&
			  strstr(r.out, "gpt2.json and "),
		      "exit %d: %s%s", r.status, r.out, r.err);
	tp_run_free(&r);
	text = tp_test_read(plan, NULL);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, "\"dgx-a100-0/gpu3\"");
	ck_assert_ptr_nonnull(at);
	at[15] = '9';
	ck_assert_int_eq(tp_test_write(bad, text, strlen(text)), 0);
	free(text);
	expect(a2, 2, "bad.json: $.groups[0].devices[3]: unknown device "
		      "\"dgx-a100-0/gpu9\"",
	       NULL);
	/* inspect too: it gave the outline as written ("resolved": false) */
	tp_run_tagplan(&r, a3, NULL);
	ck_assert_msg(r.status == 0 && !strstr(r.out, "\"resolved\": false") &&
			  strstr(r.out, "\"devices_total\"") &&
			  strstr(r.err, "tagplan inspect: using model "),
		      "exit %d: %s%s", r.status, r.out, r.err);
	tp_run_free(&r);
}
END_TEST

/* calibrate -o /dev/fd/3 with descriptor 3 on a file said "(use
 * --runtime /dev/fd/3)", a name that is gone with the process. */
START_TEST(test_calibrate_fd_hint)
{
	const char *dir = tp_test_tmpdir();
	const char *bin = getenv("TAGPLAN_BIN") ? getenv("TAGPLAN_BIN")
						: "./tagplan";
	char prof[1100], errf[1100], *err;
	pid_t pid;
	int status;

	snprintf(prof, sizeof(prof), "%s/p.json", dir);
	snprintf(errf, sizeof(errf), "%s/err.txt", dir);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd3 = open(prof, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int fe = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int nul = open("/dev/null", O_RDWR);
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(fe, 2);
		dup2(fd3, 3);
		execl(bin, bin, "calibrate",
		      tp_data_file("validation/measured_runs.json"), "-o",
		      "/dev/fd/3", "--fit", "gemm_sustained", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	err = tp_test_read(errf, NULL);
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
			  strstr(err, "-> /dev/fd/3") &&
			  !strstr(err, "use --runtime"),
		      "%s", err);
	free(err);
}
END_TEST

Suite *suite_newuser_files(void)
{
	Suite *s = suite_create("newuser_files");
	TCase *tc = tcase_create("commands");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_output_directory);
	tcase_add_test(tc, test_two_outputs_one_stream);
	tcase_add_test(tc, test_runtime_profile_files);
	tcase_add_test(tc, test_own_outputs_given_back);
	tcase_add_test(tc, test_deepspeed_launch_names_config);
	tcase_add_test(tc, test_stdin_once);
	tcase_add_test(tc, test_source_given_as_file);
	tcase_add_test(tc, test_recorded_shipped_elsewhere);
	tcase_add_test(tc, test_hf_folder_without_config);
	tcase_add_test(tc, test_calibrate_missing_directory);
	tcase_add_test(tc, test_input_directory);
	tcase_add_test(tc, test_missing_input_exit);
	tcase_add_test(tc, test_missing_input_near);
	tcase_add_test(tc, test_devices_file_as_input);
	tcase_add_test(tc, test_json_output_picture_name);
	tcase_add_test(tc, test_empty_file_name);
	tcase_add_test(tc, test_swapped_model_topology);
	tcase_add_test(tc, test_calibrate_stdout);
	tcase_add_test(tc, test_output_under_file);
	tcase_add_test(tc, test_import_outputs);
	tcase_add_test(tc, test_hf_tagplan_file);
	tcase_add_test(tc, test_inspect_file_count);
	tcase_add_test(tc, test_validate_run_list);
	tcase_add_test(tc, test_data_env_missing);
	tcase_add_test(tc, test_render_binary_terminal);
	tcase_add_test(tc, test_train_binary_terminal);
	tcase_add_test(tc, test_hf_not_local);
	tcase_add_test(tc, test_strategy_file_hint);
	tcase_add_test(tc, test_plan_stdin_recorded);
	tcase_add_test(tc, test_own_text_outputs);
	tcase_add_test(tc, test_validate_plan_recorded);
	tcase_add_test(tc, test_calibrate_fd_hint);
	suite_add_tcase(s, tc);
	return s;
}
