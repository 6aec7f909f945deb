/*
 * test_safety.c - suite "safety": what -o may write over (character
 * devices, FIFOs, symbolic links, /dev/stdout, the command's own inputs),
 * outputs written together or not at all, bad values refused before any
 * work, and inputs that never end.
 *
 * Devices are made by the test with mknod(2) in its own directory (the
 * tests run as root; without the permission those tests say so and pass
 * as skipped): a test never writes to the machine's /dev.
 */
#define _GNU_SOURCE /* mknod's makedev */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "io/io.h"
#include "util.h"

static void run(struct tp_run *r, const char *const *argv)
{
	tp_run_tagplan(r, argv, NULL);
}

static char *path_in(const char *dir, const char *name)
{
	static char bufs[8][1024];
	static int k;
	char *b = bufs[k++ & 7];

	snprintf(b, 1024, "%s/%s", dir, name);
	return b;
}

static void copy_file(const char *from, const char *to)
{
	size_t len;
	char *t = tp_test_read(from, &len);

	ck_assert_msg(t != NULL, "cannot read %s", from);
	ck_assert_int_eq(tp_test_write(to, t, len), 0);
	free(t);
}

/* A character device like the machine's (major, minor) at path; false
 * when this process may not make one. */
static bool make_chr(const char *path, unsigned major_n, unsigned minor_n)
{
	if (mknod(path, S_IFCHR | 0666, makedev(major_n, minor_n)) == 0)
		return true;
	fprintf(stderr, "safety: mknod %s: %s: test skipped\n", path,
		strerror(errno));
	return false;
}

static bool is_chr(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

/* ---- 1. what -o writes over ---------------------------------------------- */

/* -o onto a character device (a null device of the test's own) writes
 * through it: the device stays a device, the command succeeds; onto a
 * full device (like /dev/full) it fails with exit 3 and the device stays. */
START_TEST(test_output_char_device)
{
	const char *dir = tp_test_tmpdir();
	char *null = path_in(dir, "null"), *full = path_in(dir, "full");
	const char *topo[] = {"tagplan", "topo", "dgx-a100:1", "-o", null,
			      NULL};
	const char *sim[] = {"tagplan",
			     "simulate",
			     "-m",
			     tp_data_file("demo-model.json"),
			     "-t",
			     tp_data_file("tag-testbed.json"),
			     "-s",
			     "dp=16",
			     "-q",
			     "-o",
			     null,
			     "--trace",
			     null,
			     NULL};
	const char *to_full[] = {"tagplan", "topo", "dgx-a100:1", "-o", full,
				 NULL};
	struct tp_run r;

	if (!make_chr(null, 1, 3) || !make_chr(full, 1, 7))
		return;
	run(&r, topo);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	ck_assert_msg(is_chr(null), "-o onto a character device replaced it");
	run(&r, sim);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	ck_assert_msg(is_chr(null), "simulate -o/--trace replaced the device");
	run(&r, to_full);
	ck_assert_msg(r.status == 3, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "No space left"), "%s", r.err);
	/* and what to do about it */
	ck_assert_msg(strstr(r.err, "full: free some space, or write the "
				    "output elsewhere"),
		      "%s", r.err);
	tp_run_free(&r);
	ck_assert_msg(is_chr(full), "-o onto a full device replaced it");
}
END_TEST

/* -o onto a FIFO: its reader gets the whole document, and the FIFO stays. */
START_TEST(test_output_fifo)
{
	const char *dir = tp_test_tmpdir();
	char *fifo = path_in(dir, "fifo"), *got = path_in(dir, "got.json");
	const char *argv[] = {"tagplan", "topo", "dgx-a100:2", "-o", fifo,
			      NULL};
	struct tp_run r;
	struct stat st;
	pid_t reader;
	int status;
	char *text;

	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	reader = fork();
	ck_assert_int_ge(reader, 0);
	if (reader == 0) {
		/* copy the FIFO into got.json */
		char buf[4096];
		ssize_t k;
		int in = open(fifo, O_RDONLY),
		    out = open(got, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (in < 0 || out < 0)
			_exit(1);
		while ((k = read(in, buf, sizeof buf)) > 0)
			if (write(out, buf, (size_t)k) != k)
				_exit(1);
		_exit(close(out) ? 1 : 0);
	}
	run(&r, argv);
	ck_assert_int_eq(lstat(fifo, &st), 0);
	if (r.status != 0 || !S_ISFIFO(st.st_mode))
		kill(reader, SIGKILL); /* it would wait for a writer forever */
	ck_assert_int_eq(waitpid(reader, &status, 0), reader);
	ck_assert_msg(S_ISFIFO(st.st_mode), "-o replaced the FIFO");
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the reader failed");
	text = tp_test_read(got, NULL);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strstr(text, "\"tagplan-topology/1\"") &&
			      strstr(text, "\n}\n"),
		      "the reader got: %.200s", text);
	free(text);
}
END_TEST

/* -o onto a symbolic link writes the link's target (the link stays); a
 * dangling link creates its target. */
START_TEST(test_output_symlink)
{
	const char *dir = tp_test_tmpdir();
	char *target = path_in(dir, "real.json"), *link = path_in(dir, "l.json");
	char *dangling = path_in(dir, "d.json"), *sub = path_in(dir, "sub");
	char *created = path_in(dir, "sub/new.json");
	const char *argv[] = {"tagplan", "topo", "dgx-a100:1", "-o", link,
			      NULL};
	const char *argv2[] = {"tagplan", "topo", "dgx-a100:1", "-o", dangling,
			       NULL};
	struct tp_run r;
	struct stat st;
	char *text;

	ck_assert_int_eq(tp_test_write(target, "old\n", 4), 0);
	ck_assert_int_eq(symlink("real.json", link), 0);
	run(&r, argv);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	ck_assert_int_eq(lstat(link, &st), 0);
	ck_assert_msg(S_ISLNK(st.st_mode), "the link was replaced");
	text = tp_test_read(target, NULL);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strstr(text, "\"tagplan-topology/1\""),
		      "the target was not written: %.100s", text);
	free(text);

	ck_assert_int_eq(mkdir(sub, 0755), 0);
	ck_assert_int_eq(symlink("sub/new.json", dangling), 0);
	run(&r, argv2);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	ck_assert_int_eq(lstat(dangling, &st), 0);
	ck_assert_msg(S_ISLNK(st.st_mode), "the dangling link was replaced");
	text = tp_test_read(created, NULL);
	ck_assert_msg(text && strstr(text, "\"tagplan-topology/1\""),
		      "the link's target was not created");
	free(text);
}
END_TEST

/* -o /dev/stdout and -o /dev/fd/1 write to the standard output as it is
 * (here a pipe: replacing it is impossible and used to fail). */
START_TEST(test_output_dev_stdout)
{
	static const char *const names[] = {"/dev/stdout", "/dev/fd/1"};
	struct tp_run r;

	for (int i = 0; i < 2; i++) {
		const char *argv[] = {"tagplan", "topo", "dgx-a100:1", "-o",
				      names[i], NULL};
		run(&r, argv);
		ck_assert_msg(r.status == 0, "-o %s: exit %d: %s", names[i],
			      r.status, r.err);
		ck_assert_msg(strstr(r.out, "\"tagplan-topology/1\""),
			      "-o %s: stdout: %.100s", names[i], r.out);
		tp_run_free(&r);
	}
	{
		const char *argv[] = {"tagplan", "topo", "dgx-a100:1", "-o",
				      "/dev/fd/987", NULL};
		run(&r, argv);
		ck_assert_msg(r.status == 3 && strstr(r.err, "not open"),
			      "exit %d: %s", r.status, r.err);
		tp_run_free(&r);
	}
}
END_TEST

/* Run argv with its standard output a pipe whose reader has exited (as
 * after `| head -c 10`) and SIGPIPE at its default, as a shell leaves it;
 * stderr to errpath.  The exit code, or 128 + the signal. */
static int run_closed_pipe(const char *const *argv, const char *errpath)
{
	const char *bin = getenv("TAGPLAN_BIN");
	int p[2], st;
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		close(p[0]);
		if (fd < 0 || dup2(p[1], 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		signal(SIGPIPE, SIG_DFL);
		execv(bin ? bin : "./tagplan", (char *const *)argv);
		_exit(127);
	}
	close(p[0]);
	close(p[1]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Standard output a pipe whose reader exited: every way of writing it
 * (a whole document, validate's lines, --help) is an I/O failure, exit
 * 3, saying so and what to do - not a death by SIGPIPE (status 141)
 * without a word; the files of the same command are not written. */
START_TEST(test_output_closed_pipe)
{
	const char *dir = tp_test_tmpdir();
	char *errp = path_in(dir, "err.txt"), *trace = path_in(dir, "t.json");
	const char *sim[] = {"tagplan", "simulate", "-m",
			     tp_data_file("demo-model.json"), "-t",
			     tp_data_file("tag-testbed.json"), "-s", "dp=16",
			     "-q", "--trace", trace, NULL};
	const char *val[] = {"tagplan", "validate",
			     tp_data_file("demo-model.json"), NULL};
	const char *help[] = {"tagplan", "plan", "--help", NULL};
	const char *const *cases[] = {sim, val, help};
	struct stat st;

	for (int i = 0; i < 3; i++) {
		int code = run_closed_pipe(cases[i], errp);
		char *err = tp_test_read(errp, NULL);
		ck_assert_msg(code == 3, "%s: exit %d: %s", cases[i][1], code,
			      err ? err : "");
		ck_assert_msg(err && strstr(err, "<stdout>: cannot write: "
						 "Broken pipe (the program "
						 "reading the pipe exited"),
			      "%s: %s", cases[i][1], err ? err : "");
		free(err);
	}
	ck_assert_msg(stat(trace, &st) != 0,
		      "simulate wrote --trace though stdout failed");
}
END_TEST

/* Standard output on a full device: validate's "ok" lines and --help,
 * printed through stdio, fail as a document written whole does (exit 3,
 * "No space left"); validate exited 0 having printed nothing. */
START_TEST(test_output_full_stdout)
{
	const char *dir = tp_test_tmpdir();
	char *full = path_in(dir, "full");
	const char *val[] = {"tagplan", "validate",
			     tp_data_file("demo-model.json"), NULL};
	const char *help[] = {"tagplan", "--help", NULL};
	const char *const *cases[] = {val, help};
	const char *bin = getenv("TAGPLAN_BIN");

	if (!make_chr(full, 1, 7))
		return;
	for (int i = 0; i < 2; i++) {
		char *errp = path_in(dir, "err.txt");
		int st;
		pid_t pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			int o = open(full, O_WRONLY);
			int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
				_exit(126);
			execv(bin ? bin : "./tagplan", (char *const *)cases[i]);
			_exit(127);
		}
		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		{
			char *err = tp_test_read(errp, NULL);
			ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 3,
				      "%s: status %d: %s", cases[i][1], st,
				      err ? err : "");
			ck_assert_msg(err && strstr(err, "<stdout>: cannot "
							 "write: No space left"),
				      "%s: %s", cases[i][1], err ? err : "");
			free(err);
		}
	}
}
END_TEST

/* An output that is one of the command's inputs (by name, through a
 * link, or recorded in the plan) is refused with exit 2, and the input
 * stays as it was. */
START_TEST(test_output_is_input)
{
	const char *dir = tp_test_tmpdir();
	char *m = path_in(dir, "m.json"), *t = path_in(dir, "t.json");
	char *tl = path_in(dir, "tl.json"), *p = path_in(dir, "p.json");
	size_t tlen, tlen2, plen, plen2;
	char *before, *after, *pb, *pa;
	struct tp_run r;

	copy_file(tp_test_path("data/good/mlp.json"), m);
	copy_file(tp_test_path("data/good/two-racks.json"), t);
	ck_assert_int_eq(symlink("t.json", tl), 0);
	before = tp_test_read(t, &tlen);
	{
		const char *a1[] = {"tagplan", "plan",       "-m", m, "-t", t,
				    "-o",      t,            "--playouts", "5",
				    "--threads", "1",        NULL};
		const char *a2[] = {"tagplan", "plan",       "-m", m, "-t", t,
				    "--dot",   tl,           "--playouts", "5",
				    "--threads", "1",        NULL};
		const char *const *cases[] = {a1, a2};
		for (int i = 0; i < 2; i++) {
			run(&r, cases[i]);
			ck_assert_msg(r.status == 2, "exit %d: %s", r.status,
				      r.err);
			ck_assert_msg(strstr(r.err, "is also the input -t"),
				      "%s", r.err);
			ck_assert_uint_eq(r.out_len, 0);
			tp_run_free(&r);
		}
	}
	after = tp_test_read(t, &tlen2);
	ck_assert_uint_eq(tlen, tlen2);
	ck_assert_mem_eq(before, after, tlen);
	free(before);
	free(after);

	/* a plan that records m.json and t.json: simulate -o m.json, render
	 * -o p.json (the plan itself), export -o t.json */
	{
		const char *mk[] = {"tagplan", "plan", "-m", m, "-t", t, "-o", p,
				    "--playouts", "5", "--threads", "1", "-q",
				    NULL};
		run(&r, mk);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		tp_run_free(&r);
	}
	pb = tp_test_read(p, &plen);
	before = tp_test_read(m, &tlen);
	{
		const char *s1[] = {"tagplan", "simulate", "-p", p, "-o", m,
				    NULL};
		const char *s2[] = {"tagplan", "render", "-p", p, "-o", p,
				    "--format", "dot", NULL};
		const char *s3[] = {"tagplan", "export", "-p", p, "--to",
				    "torchrun", "-o", t, NULL};
		const char *s4[] = {"tagplan",  "simulate", "-p", p,
				    "--trace", tl,         NULL};
		const char *const *cases[] = {s1, s2, s3, s4};
		for (int i = 0; i < 4; i++) {
			run(&r, cases[i]);
			ck_assert_msg(r.status == 2, "%s: exit %d: %s",
				      cases[i][1], r.status, r.err);
			ck_assert_msg(strstr(r.err, "is also the input"),
				      "%s: %s", cases[i][1], r.err);
			tp_run_free(&r);
		}
	}
	pa = tp_test_read(p, &plen2);
	after = tp_test_read(m, &tlen2);
	ck_assert_uint_eq(plen, plen2);
	ck_assert_mem_eq(pb, pa, plen);
	ck_assert_uint_eq(tlen, tlen2);
	ck_assert_mem_eq(before, after, tlen);
	free(pa);
	free(pb);
	free(before);
	free(after);
}
END_TEST

/* -o '' (an unset variable in a script) is a usage error before any
 * work, not standard output. */
START_TEST(test_output_empty_name)
{
	const char *a1[] = {"tagplan", "topo", "dgx-a100:1", "-o", "", NULL};
	const char *a2[] = {"tagplan", "plan", "-o", "", "--playouts", "5",
			    NULL};
	const char *a3[] = {"tagplan", "plan", "--svg=", "--playouts", "5",
			    NULL};
	const char *const *cases[] = {a1, a2, a3};
	struct tp_run r;

	for (int i = 0; i < 3; i++) {
		run(&r, cases[i]);
		ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
		ck_assert_msg(strstr(r.err, "empty value"), "%s", r.err);
		ck_assert_uint_eq(r.out_len, 0);
		/* refused before any work: no summary, no search */
		ck_assert_msg(!strstr(r.err, "iteration"), "%s", r.err);
		tp_run_free(&r);
	}
}
END_TEST

/* A directory that exists and passes access(2) but takes no new files
 * (/proc): "cannot create a temporary file: No such file or directory"
 * (exit 2, as if a name were missing) came after the whole search; now
 * tp_file_check_output finds it before any work, and the message names
 * the output, the directory and what to do instead (exit 3, as for a
 * read-only directory). */
START_TEST(test_output_dir_takes_no_files)
{
	const char *out = "/proc/tagplan-test-output.json";
	const char *a1[] = {"tagplan", "topo", "dgx-a100:1", "-o", out, NULL};
	const char *a2[] = {"tagplan", "simulate", "-m",
			    tp_data_file("demo-model.json"), "-t",
			    tp_data_file("tag-testbed.json"), "-s", "dp=16",
			    "-q", "-o", out, NULL};
	const char *const *cases[] = {a1, a2};
	struct tp_error err;
	struct stat st;
	struct tp_run r;

	if (stat("/proc", &st) != 0 || !S_ISDIR(st.st_mode))
		return; /* not Linux's /proc */
	tp_error_clear(&err);
	ck_assert_int_eq(tp_file_check_output(out, &err), TP_EIO);
	ck_assert_msg(strstr(err.msg, "does not accept new files"), "%s",
		      err.msg);
	for (int i = 0; i < 2; i++) {
		run(&r, cases[i]);
		ck_assert_msg(r.status == 3, "exit %d: %s", r.status, r.err);
		ck_assert_msg(strstr(r.err, out), "%s", r.err);
		ck_assert_msg(strstr(r.err, "the directory /proc"), "%s",
			      r.err);
		ck_assert_msg(strstr(r.err, "write the output elsewhere, or "
					    "to standard output with -"),
			      "%s", r.err);
		ck_assert_uint_eq(r.out_len, 0);
		tp_run_free(&r);
	}
}
END_TEST

/* ---- 2. all outputs of a command, or none ------------------------------ */

/* plan -o p.json --svg /missing/p.svg exited 3 and left p.json; a full
 * device for the SVG (a /dev/full of the test's own) the same: now the
 * plan file is written only with its pictures, an existing one stays as
 * it was, and the missing directory is found before the search. */
START_TEST(test_outputs_together)
{
	const char *dir = tp_test_tmpdir();
	char *p = path_in(dir, "p.json"), *full = path_in(dir, "full");
	char *svg = path_in(dir, "missing/p.svg");
	const char *a1[] = {"tagplan", "plan", "-m",
			    tp_test_path("data/good/mlp.json"), "-t",
			    tp_test_path("data/good/two-racks.json"), "-o", p,
			    "--svg", svg, "--playouts", "5", "--threads", "1",
			    NULL};
	const char *a2[] = {"tagplan", "plan", "-m",
			    tp_test_path("data/good/mlp.json"), "-t",
			    tp_test_path("data/good/two-racks.json"), "-o", p,
			    "--dot", full, "--playouts", "5", "--threads", "1",
			    "-q", NULL};
	struct tp_run r;
	struct stat st;
	char *now;

	/* the missing directory: a path that does not exist, usage (2); the
	   full device below: I/O (3) */
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
	ck_assert_msg(!strstr(r.err, "iteration"),
		      "searched before failing: %s", r.err);
	tp_run_free(&r);
	ck_assert_msg(stat(p, &st) != 0, "p.json was written");
	if (!make_chr(full, 1, 7))
		return;
	ck_assert_int_eq(tp_test_write(p, "old\n", 4), 0);
	tp_run_tagplan(&r, a2, NULL);
	ck_assert_msg(r.status == 3, "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	now = tp_test_read(p, NULL);
	ck_assert_ptr_nonnull(now);
	ck_assert_str_eq(now, "old\n");
	free(now);
	ck_assert(is_chr(full));
}
END_TEST

/* ---- 4, 5. physical ranges and huge batches ---------------------------- */

/* Run argv; exit 2 with want in the message (not an abort, not a hang:
 * the caller's tcase timeout bounds it). */
static void expect_exit2(const char *const *argv, const char *want)
{
	struct tp_run r;

	run(&r, argv);
	ck_assert_msg(r.status == 2, "%s %s: exit %d, stderr: %s", argv[1],
		      argv[3] ? argv[3] : "", r.status, r.err);
	ck_assert_msg(strstr(r.err, want), "%s: stderr lacks \"%s\": %s",
		      argv[1], want, r.err);
	ck_assert_uint_eq(r.out_len, 0);
	tp_run_free(&r);
}

/* Finite but absurd figures that validate used to accept crashed
 * inspect, simulate, check and plan (the writer's isfinite assertion,
 * exit 134) or misled them; they are refused at load with the range. */
START_TEST(test_ranges_refused_everywhere)
{
	static const char *const models[] = {
		"data/bad/range-flop.json", "data/bad/range-output-bytes.json",
		"data/bad/range-parameter-bytes.json",
		"data/bad/range-global-batch.json"};
	const char *topo = tp_test_path("data/good/two-racks.json");

	for (int i = 0; i < 4; i++) {
		char m[1024];
		snprintf(m, sizeof m, "%s", tp_test_path(models[i]));
		const char *want =
			i == 3 ? "expected an integer from 1 to 268435456"
			       : "is outside the range tagplan accepts";
		const char *a1[] = {"tagplan", "inspect", m, NULL};
		const char *a2[] = {"tagplan", "simulate", "-m", m,
				    "-t",      topo,       "-s", "dp=5",
				    "-q",      NULL};
		const char *a3[] = {"tagplan", "plan",       "-m", m, "-t",
				    topo,      "--playouts", "5",  "-q", NULL};
		expect_exit2(a1, want);
		expect_exit2(a2, want);
		expect_exit2(a3, want);
	}
	{
		const char *bw = tp_test_path("data/bad/range-bandwidth.json");
		const char *a[] = {"tagplan", "plan",
				   "-m",      tp_test_path("data/good/mlp.json"),
				   "-t",      bw,
				   "--playouts", "5",
				   "-q",      NULL};
		expect_exit2(a, "1e-300 B/s is outside the range");
	}
}
END_TEST

/* The largest batch the formats accept (2^28): a strategy of 2^25
 * micro-batches is refused saying how large mb must be (it used to
 * allocate some 3 GB), and plan on a batch with few divisors (a prime)
 * ends within its time limit. */
START_TEST(test_huge_batch_bounded)
{
	const char *dir = tp_test_tmpdir();
	char *m = path_in(dir, "m.json"), *p = path_in(dir, "p.json");
	char *topo = path_in(dir, "t.json");
	char *text = tp_test_read(tp_test_path("data/good/mlp.json"), NULL);
	char *at;
	struct tp_run r;
	const char *mk[] = {"tagplan", "topo", "dgx-a100:1", "-o", topo, NULL};

	ck_assert_ptr_nonnull(text);
	run(&r, mk);
	ck_assert_int_eq(r.status, 0);
	tp_run_free(&r);
	at = strstr(text, "\"global_batch_size\": 64,");
	ck_assert_ptr_nonnull(at);
	{
		const size_t cap = 65536;
		char *b = malloc(cap);
		ck_assert_ptr_nonnull(b);
		snprintf(b, cap, "%.*s\"global_batch_size\": %s,%s",
			 (int)(at - text), text, "268435456",
			 at + strlen("\"global_batch_size\": 64,"));
		ck_assert_int_eq(tp_test_write(m, b, strlen(b)), 0);
		{
			const char *a[] = {"tagplan", "simulate", "-m", m,  "-t",
					   topo,      "-s",	"dp=8", "-q",
					   NULL};
			expect_exit2(a, "raise mb to at least 2048");
		}
		/* 268435399 is prime: one micro-batch count, 1 */
		snprintf(b, cap, "%.*s\"global_batch_size\": %s,%s",
			 (int)(at - text), text, "268435399",
			 at + strlen("\"global_batch_size\": 64,"));
		ck_assert_int_eq(tp_test_write(m, b, strlen(b)), 0);
		free(b);
	}
	{
		const char *a[] = {"tagplan",      "plan", "-m", m,    "-t",
				   topo,	   "-o",   p,	 "-q", "--threads",
				   "1",		   "--time-limit", "3",	 NULL};
		run(&r, a);
		ck_assert_msg(r.status == 0 || r.status == 1, "exit %d: %s",
			      r.status, r.err);
		tp_run_free(&r);
	}
	free(text);
}
END_TEST

/* ---- 8. inputs that never end, memory per input byte --------------------- */

/* User + system CPU time of the waited-for children so far. */
static double children_cpu(void)
{
	struct rusage ru;

	ck_assert_int_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* A device that never ends (a /dev/zero of the test's own) is refused at
 * its first byte, not read to the 1 GiB limit.  Bounded in the children's
 * CPU time, which a loaded machine cannot inflate (wall time failed at
 * load 14-21 under the sanitizers). */
START_TEST(test_input_endless_device)
{
	const char *dir = tp_test_tmpdir();
	char *zero = path_in(dir, "zero");
	const char *a1[] = {"tagplan", "validate", zero, NULL};
	const char *a2[] = {"tagplan", "simulate", "-m", zero, "-t",
			    tp_test_path("data/good/two-racks.json"), "-s",
			    "dp=5", NULL};
	double cpu0;

	if (!make_chr(zero, 1, 5))
		return;
	cpu0 = children_cpu();
	expect_exit2(a1, "NUL byte");
	expect_exit2(a2, "NUL byte");
	{
		const char *a3[] = {"tagplan", "plan", "-m", zero, "-t",
				    tp_test_path("data/good/two-racks.json"),
				    "--playouts", "5", NULL};
		expect_exit2(a3, "NUL byte");
	}
	ck_assert_msg(children_cpu() - cpu0 < 5, "took %.1f s of CPU",
		      children_cpu() - cpu0);
}
END_TEST

/* A plan made from a FIFO records it; check and render then say to pass
 * the model instead of waiting forever for a writer. */
START_TEST(test_recorded_fifo_not_reopened)
{
	const char *dir = tp_test_tmpdir();
	char *fifo = path_in(dir, "model.fifo"), *p = path_in(dir, "p.json");
	const char *mk[] = {"tagplan", "plan", "-m", fifo, "-t",
			    tp_test_path("data/good/two-racks.json"), "-o", p,
			    "--playouts", "5", "--threads", "1", "-q", NULL};
	const char *a1[] = {"tagplan", "check", "-p", p, NULL};
	const char *a2[] = {"tagplan", "render", "-p", p, "-o",
			    path_in(dir, "p.dot"), NULL};
	struct tp_run r;
	pid_t writer;

	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	writer = fork();
	ck_assert_int_ge(writer, 0);
	if (writer == 0) {
		size_t len;
		char *t = tp_test_read(tp_test_path("data/good/mlp.json"), &len);
		int fd = open(fifo, O_WRONLY);
		_exit(fd >= 0 && t && write(fd, t, len) == (ssize_t)len ? 0 : 1);
	}
	run(&r, mk);
	waitpid(writer, NULL, 0);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	/* a writer that would never come: the commands must not open it */
	alarm(30);
	expect_exit2(a1, "not a regular file");
	expect_exit2(a2, "not a regular file");
	alarm(0);
}
END_TEST

/* A document of tiny values (an array of 2 million numbers in an unknown
 * field) is refused by the reader's bound of one value per 5 bytes; it
 * took some 40 bytes of memory per byte (a 200 MB array: 9.8 GB). */
START_TEST(test_input_memory_per_byte)
{
	const char *dir = tp_test_tmpdir();
	char *m = path_in(dir, "arr.json");
	const size_t n = 2000000;
	char *text = malloc(2 * n + 256);
	size_t k;
	const char *a[] = {"tagplan", "validate", m, NULL};

	ck_assert_ptr_nonnull(text);
	k = (size_t)sprintf(text, "{\"format\": \"tagplan-model/1\", \"x\": [");
	for (size_t i = 0; i < n; i++) {
		text[k++] = '1';
		text[k++] = ',';
	}
	k += (size_t)sprintf(text + k, "1]}\n");
	ck_assert_int_eq(tp_test_write(m, text, k), 0);
	free(text);
	expect_exit2(a, "more than one value or key per 5 bytes");
}
END_TEST

/* ---- 3. what reaches the terminal --------------------------------------- */

static bool has_control(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c < 0x20 && c != '\n') || c == 0x7f)
			return true;
	}
	return false;
}

/* The mlp model with `from` replaced by `to` (first occurrence). */
static void write_variant(const char *path, const char *from, const char *to)
{
	char *t = tp_test_read(tp_test_path("data/good/mlp.json"), NULL);
	char *at, *out;

	ck_assert_ptr_nonnull(t);
	at = strstr(t, from);
	ck_assert_ptr_nonnull(at);
	out = malloc(strlen(t) + strlen(to) + 1);
	ck_assert_ptr_nonnull(out);
	sprintf(out, "%.*s%s%s", (int)(at - t), t, to, at + strlen(from));
	ck_assert_int_eq(tp_test_write(path, out, strlen(out)), 0);
	free(out);
	free(t);
}

/* Names with escape or newline characters are refused (they are shown in
 * tables); text quoted from a file or an argument in a message is
 * printed escaped: no raw control character reaches the terminal. */
START_TEST(test_names_escaped)
{
	const char *dir = tp_test_tmpdir();
	char *op = path_in(dir, "op.json"), *mname = path_in(dir, "name.json");
	char *field = path_in(dir, "field.json"), *ref = path_in(dir, "ref.json");
	char *odd = path_in(dir, "a\033[2Jb.json");
	struct tp_run r;

	write_variant(op, "\"fc1\"", "\"fc\\u001b]0;owned\\u00071\"");
	write_variant(mname, "\"mlp-small\"", "\"mlp\\nsmall\"");
	write_variant(field, "\"optimizer\": \"sgd\",",
		      "\"optimizer\": \"sgd\", \"x\\u001b[31my\": 1,");
	write_variant(ref, "\"to\": \"fc1\"", "\"to\": \"f\\u009b31mc1\"");
	{
		const char *a[] = {"tagplan", "validate", op, NULL};
		expect_exit2(a, "control character U+001B");
	}
	{
		const char *a[] = {"tagplan", "validate", mname, NULL};
		expect_exit2(a, "control character U+000A");
	}
	{
		const char *a[] = {"tagplan", "validate", field, NULL};
		run(&r, a);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		ck_assert_msg(strstr(r.err, "x\\x1b[31my"), "%s", r.err);
		ck_assert_msg(!has_control(r.err, r.err_len),
			      "raw control character on stderr: %s", r.err);
		tp_run_free(&r);
	}
	{
		const char *a[] = {"tagplan", "validate", ref, NULL};
		run(&r, a);
		ck_assert_int_eq(r.status, 2);
		ck_assert_msg(strstr(r.err, "f\\u009b31mc1"), "%s", r.err);
		ck_assert_msg(!strstr(r.err, "\xc2\x9b"),
			      "raw C1 control on stderr: %s", r.err);
		tp_run_free(&r);
	}
	{
		const char *a[] = {"tagplan", "validate", odd, NULL};
		copy_file(tp_test_path("data/good/mlp.json"), odd);
		run(&r, a);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		ck_assert_msg(!has_control(r.out, r.out_len),
			      "raw control character on stdout: %s", r.out);
		tp_run_free(&r);
	}
	{
		const char *a[] = {"tagplan", "model", "gpt", "--hidden", "64",
				   "--layers", "1", "--heads", "1", "--seq", "8",
				   "--vocab", "10", "--batch", "1", "--name",
				   "x\033[2Jy", NULL};
		expect_exit2(a, "control character U+001B");
	}
}
END_TEST

/* ---- 6. every phase under the clock and the signals ------------------ */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A chain of n ops, one per layer (the grouping's worst case). */
static void write_chain(const char *path, unsigned n)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "{\"format\": \"tagplan-model/1\", \"name\": \"chain\", "
		   "\"global_batch_size\": 64, \"dtype\": \"bf16\", "
		   "\"optimizer\": \"adam\", \"ops\": [");
	for (unsigned i = 0; i < n; i++)
		fprintf(f,
			"%s{\"name\": \"op%u\", \"kind\": \"%s\", "
			"\"forward_flop_per_sample\": 1e6, \"parameter_bytes\": "
			"1000, \"output_bytes_per_sample\": 1000}",
			i ? ", " : "", i, i ? "matmul" : "input");
	fprintf(f, "], \"edges\": [");
	for (unsigned i = 0; i + 1 < n; i++)
		fprintf(f,
			"%s{\"from\": \"op%u\", \"to\": \"op%u\", "
			"\"bytes_per_sample\": 1000}",
			i ? ", " : "", i, i + 1);
	fprintf(f, "]}\n");
	ck_assert_int_eq(fclose(f), 0);
}

/* Start tagplan argv with stdout and stderr to files of dir. */
static pid_t start_quiet(const char *dir, const char *const *argv)
{
	const char *bin = getenv("TAGPLAN_BIN");
	pid_t pid = fork();
	int n = 0;

	while (argv[n])
		n++;
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char **av = calloc((size_t)n + 1, sizeof(*av));
		int o = open(path_in(dir, "child.out"),
			     O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(path_in(dir, "child.err"),
			     O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (!av || o < 0 || e < 0)
			_exit(126);
		av[0] = (char *)(bin ? bin : "./tagplan");
		for (int i = 1; i < n; i++)
			av[i] = (char *)argv[i];
		dup2(o, 1);
		dup2(e, 2);
		execv(av[0], av);
		_exit(127);
	}
	return pid;
}

/* Wait at most timeout_s of wall time; the exit code (128 + signal), or
 * -1 after killing it.  *cpu_s gets the child's user + system CPU time. */
static int wait_at_most(pid_t pid, double timeout_s, double *cpu_s)
{
	double t0 = now_s();
	struct rusage ru;
	int st;

	while (now_s() - t0 < timeout_s) {
		if (wait4(pid, &st, WNOHANG, &ru) == pid) {
			*cpu_s = (double)ru.ru_utime.tv_sec +
				 ru.ru_utime.tv_usec / 1e6 +
				 (double)ru.ru_stime.tv_sec +
				 ru.ru_stime.tv_usec / 1e6;
			return WIFEXITED(st) ? WEXITSTATUS(st)
					     : 128 + WTERMSIG(st);
		}
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	*cpu_s = -1;
	return -1;
}

/* CPU time (user + system) a running child has used so far, from
 * /proc/PID/stat (fields 14 and 15, in clock ticks). */
static double cpu_so_far(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long ut = 0, stt = 0;
	FILE *f;
	char *q;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	q = strrchr(buf, ')'); /* the command name may hold spaces */
	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq(sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u "
				"%*u %*u %lu %lu", &ut, &stt), 2);
	return (double)(ut + stt) / (double)sysconf(_SC_CLK_TCK);
}

/* A 50,000-op chain: grouping it took 20 s, under neither --time-limit
 * nor Ctrl-C (100,000 ops: 78 s against --time-limit 5).  Now the run
 * keeps the limit (it covers loading too), and SIGINT during the early
 * phases ends it at once.  The bounds are on the child's CPU time, which
 * a loaded machine cannot inflate (the limit is wall time, so a starved
 * run uses less CPU, not more); the regressions used 20 s of it.  After
 * SIGINT the child may still be in an early phase that a starved run
 * reaches late (loading the 50,000 ops takes about 2 s of CPU under the
 * sanitizers), hence 5 s there. */
START_TEST(test_limit_covers_every_phase)
{
	const char *dir = tp_test_tmpdir();
	char *m = path_in(dir, "chain.json"), *p = path_in(dir, "p.json");
	const char *a[] = {"tagplan", "plan", "-m", m, "-t",
			   tp_data_file("tag-testbed.json"), "-o", p,
			   "--threads", "1", "-q", "--time-limit", "2",
			   "--runtime", "none", NULL};
	const char *b[] = {"tagplan", "plan", "-m", m, "-t",
			   tp_data_file("tag-testbed.json"), "-o", p,
			   "--threads", "1", "-q", "--time-limit", "60",
			   "--runtime", "none", NULL};
	double cpu, before;
	pid_t pid;
	int code;

	write_chain(m, 50000);
	pid = start_quiet(dir, a);
	code = wait_at_most(pid, 40, &cpu);
	ck_assert_msg(code == 0, "exit %d", code);
	ck_assert_msg(cpu < 2 + 4, "%.1f s of CPU for --time-limit 2", cpu);
	unlink(p);
	/* Ctrl-C after a second (loading, grouping, baselines) */
	pid = start_quiet(dir, b);
	usleep(1000000);
	before = cpu_so_far(pid);
	kill(pid, SIGINT);
	code = wait_at_most(pid, 40, &cpu);
	ck_assert_msg(code == 130, "exit %d after SIGINT", code);
	ck_assert_msg(cpu - before < 5, "%.1f s of CPU after SIGINT",
		      cpu - before);
}
END_TEST

Suite *suite_safety(void)
{
	Suite *s = suite_create("safety");
	TCase *tc = tcase_create("outputs");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_output_char_device);
	tcase_add_test(tc, test_output_fifo);
	tcase_add_test(tc, test_output_symlink);
	tcase_add_test(tc, test_output_dev_stdout);
	tcase_add_test(tc, test_output_closed_pipe);
	tcase_add_test(tc, test_output_full_stdout);
	tcase_add_test(tc, test_output_is_input);
	tcase_add_test(tc, test_output_empty_name);
	tcase_add_test(tc, test_output_dir_takes_no_files);
	tcase_add_test(tc, test_names_escaped);
	tcase_add_test(tc, test_outputs_together);
	suite_add_tcase(s, tc);

	tc = tcase_create("ranges");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_ranges_refused_everywhere);
	tcase_add_test(tc, test_huge_batch_bounded);
	suite_add_tcase(s, tc);

	tc = tcase_create("inputs");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_input_endless_device);
	tcase_add_test(tc, test_recorded_fifo_not_reopened);
	tcase_add_test(tc, test_input_memory_per_byte);
	suite_add_tcase(s, tc);

	tc = tcase_create("phases");
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_limit_covers_every_phase);
	suite_add_tcase(s, tc);
	return s;
}
