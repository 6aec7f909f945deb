/*
 * test_everyday.c - suite "everyday": what a user meets in daily use and
 * what scripts and viewers take as it is: conflicting flags, the shipped
 * files by name, check's comparison, the help agreeing with tagplan(1),
 * the progress bar's width, the Perfetto trace, byte-identical plans.
 */
/* posix_openpt, grantpt, unlockpt, ptsname */
#define _XOPEN_SOURCE 700
#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/progress.h"
#include "io/json.h"
#include "util.h"

static char *path_in(const char *dir, const char *name)
{
	static char bufs[8][1024];
	static int k;
	char *b = bufs[k++ & 7];

	snprintf(b, 1024, "%s/%s", dir, name);
	return b;
}

/* A small plan of mlp on two-racks at path (5 playouts, 1 thread). */
static void make_plan(const char *path)
{
	const char *a[] = {"tagplan",
			   "plan",
			   "-m",
			   tp_test_path("data/good/mlp.json"),
			   "-t",
			   tp_test_path("data/good/two-racks.json"),
			   "-o",
			   path,
			   "--playouts",
			   "5",
			   "--threads",
			   "1",
			   "-q",
			   NULL};
	struct tp_run r;

	tp_run_tagplan(&r, a, NULL);
	ck_assert_msg(r.status == 0, "plan: exit %d: %s", r.status, r.err);
	tp_run_free(&r);
}

/* ---- 13. conflicting flags ---------------------------------------------- */

/* render -o x.svg --format png wrote PNG bytes into x.svg: the two
 * disagree, exit 2, nothing written. */
START_TEST(test_render_format_conflict)
{
	const char *dir = tp_test_tmpdir();
	char *p = path_in(dir, "p.json"), *svg = path_in(dir, "x.svg");
	const char *a[] = {"tagplan", "render", "-p", p,     "-o",
			   svg,       "--format", "png", NULL};
	struct tp_run r;
	struct stat st;

	make_plan(p);
	tp_run_tagplan(&r, a, NULL);
	ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "--format says png"), "%s", r.err);
	tp_run_free(&r);
	ck_assert_msg(stat(svg, &st) != 0, "x.svg was written");
}
END_TEST

/* plan -m - -t - said "-:1:1: empty input" for the second read: it says
 * that only one input can come from stdin, before reading either. */
START_TEST(test_plan_two_stdin)
{
	const char *a[] = {"tagplan", "plan", "-m", "-", "-t", "-", NULL};
	struct tp_run r;

	tp_run_tagplan(&r, a, "{}");
	ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "only one input can come from stdin"),
		      "%s", r.err);
	tp_run_free(&r);
}
END_TEST

/* ---- 7. errors that said something else ----------------------------------- */

/* A model of one op (an input) validates and simulates; plan exited 3
 * "no candidate plan could be evaluated" (an iteration of 0 s counted as
 * a failed evaluation): it plans it.  parameter_bytes 1e308 with -s dp=8
 * said "$.schedule ... use the 1f1b schedule" (the default already): it
 * says which field is out of range. */
START_TEST(test_misleading_errors)
{
	const char *dir = tp_test_tmpdir();
	char *one = path_in(dir, "one.json"), *p = path_in(dir, "p.json");
	static const char model[] =
		"{\"format\": \"tagplan-model/1\", \"name\": \"one\", "
		"\"global_batch_size\": 64, \"dtype\": \"fp32\", \"optimizer\": "
		"\"sgd\", \"ops\": [{\"name\": \"x\", \"kind\": \"input\", "
		"\"forward_flop_per_sample\": 0, \"parameter_bytes\": 0, "
		"\"output_bytes_per_sample\": 4000}]}\n";
	const char *a1[] = {"tagplan", "plan", "-m", one, "-t",
			    tp_test_path("data/good/two-racks.json"), "-o", p,
			    "--playouts", "20", "--threads", "1", "-q", NULL};
	const char *a2[] = {"tagplan", "check", "-p", p, NULL};
	const char *a3[] = {"tagplan", "simulate", "-m",
			    tp_test_path("data/bad/range-parameter-bytes.json"),
			    "-t", tp_data_file("tag-testbed.json"), "-s",
			    "dp=8,pp=2", "-q", NULL};
	struct tp_run r;

	ck_assert_int_eq(tp_test_write(one, model, strlen(model)), 0);
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0, "plan: exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	tp_run_tagplan(&r, a2, NULL);
	ck_assert_msg(r.status == 0, "check: exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	tp_run_tagplan(&r, a3, NULL);
	ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "parameter_bytes") &&
			      !strstr(r.err, "schedule"),
		      "%s", r.err);
	tp_run_free(&r);
}
END_TEST

/* ---- 14. the summary's wording -------------------------------------------- */

/* Run argv; stderr (a copy the caller frees), after asserting exit 0 or
 * 1 and that every line is at most 80 columns. */
static char *summary_of(const char *const *argv)
{
	struct tp_run r;
	char *err;

	tp_run_tagplan(&r, argv, NULL);
	ck_assert_msg(r.status == 0 || r.status == 1, "%s: exit %d: %s",
		      argv[1], r.status, r.err);
	for (const char *l = r.err; *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		ck_assert_msg(n <= 80, "a %zu-column line: %.*s", n, (int)n, l);
		l += n + (nl ? 1 : 0);
	}
	err = strdup(r.err);
	tp_run_free(&r);
	return err;
}

START_TEST(test_summary_wording)
{
	const char *dir = tp_test_tmpdir();
	char *g = path_in(dir, "g.json"), *slow = path_in(dir, "slow.json");
	char *mix = path_in(dir, "mix.json"), *names = path_in(dir, "n.json");
	char *e;
	struct tp_run r;
	static const char three[] =
		"{\"format\": \"tagplan-topology/1\", \"name\": \"four\", "
		"\"nodes\": ["
		"{\"name\": \"alpha-long-node-name-0\", \"devices\": [{\"type\": \"V100-SXM2-32GB\", \"count\": 2}], \"nic\": {\"bandwidth_Bps\": 1e10, \"latency_s\": 1e-5}}"
		", {\"name\": \"beta-other-name-1\", \"devices\": [{\"type\": \"V100-SXM2-32GB\", \"count\": 2}], \"nic\": {\"bandwidth_Bps\": 1e10, \"latency_s\": 1e-5}}"
		", {\"name\": \"gamma-2\", \"devices\": [{\"type\": \"V100-SXM2-32GB\", \"count\": 2}], \"nic\": {\"bandwidth_Bps\": 1e10, \"latency_s\": 1e-5}}"
		", {\"name\": \"delta-3\", \"devices\": [{\"type\": \"V100-SXM2-32GB\", \"count\": 2}], \"nic\": {\"bandwidth_Bps\": 1e10, \"latency_s\": 1e-5}}"
		"]}\n";
	{
		const char *a1[] = {"tagplan", "model", "gpt", "--hidden",
				    "2048", "--layers", "16", "--heads", "16",
				    "--seq", "256", "--vocab", "50000",
				    "--batch", "16", "-o", g, NULL};
		const char *a2[] = {"tagplan", "topo", "v100-nvlink:4", "--net",
				    "10gbe", "-o", slow, NULL};
		const char *a3[] = {"tagplan", "topo", "v100-nvlink:2",
				    "1080ti-pcie:1", "-o", mix, NULL};
		const char *const *mk[] = {a1, a2, a3};
		for (int k = 0; k < 3; k++) {
			tp_run_tagplan(&r, mk[k], NULL);
			ck_assert_msg(r.status == 0, "exit %d: %s", r.status,
				      r.err);
			/* plurals: "in 1 node", "in 5 nodes" */
			ck_assert_msg(!strstr(r.err, " 1 nodes"), "%s", r.err);
			tp_run_free(&r);
		}
		ck_assert_int_eq(tp_test_write(names, three, strlen(three)), 0);
	}
	{
		/* one stage: the header still says "stage"; a busy link is
		   named; MFU of one device type over the whole cluster */
		const char *a[] = {"tagplan", "simulate", "-m", g, "-t", slow,
				   "-s", "dp=16", NULL};
		e = summary_of(a);
		ck_assert_msg(!strncmp(e, "stage ", 6), "%s", e);
		ck_assert_msg(strstr(e, "busiest: link v100-nvlink-0/gpu0 -- "
					"v100-nvlink-0/nic (nic, 1.25 GB/s)"),
			      "%s", e);
		ck_assert_msg(strstr(e, "(all 16 devices used)"), "%s", e);
		free(e);
	}
	{
		/* interleaved: the stage's chunks, not the span of them */
		const char *a[] = {"tagplan", "simulate", "-m", g, "-t", slow,
				   "-s", "pp=2,dp=8,schedule=interleaved:4",
				   NULL};
		e = summary_of(a);
		ck_assert_msg(strstr(e, " 0-1,+3 "), "%s", e);
		ck_assert_msg(!strstr(e, " 0-13 "), "%s", e);
		free(e);
	}
	{
		/* devices left idle: MFU over the devices used and over the
		   cluster, labelled; times with one unit style */
		const char *a[] = {"tagplan", "plan", "-m",
				   tp_data_file("models/resnet50.json"), "-t",
				   mix, "--playouts", "50", "--threads", "1",
				   NULL};
		e = summary_of(a);
		ck_assert_msg(strstr(e, "MFU ") && strstr(e, "% of the 8 devices "
							     "used, ") &&
				      strstr(e, "% of all 10"),
			      "%s", e);
		ck_assert_msg(strstr(e, " ms (") && !strstr(e, "0 s ("), "%s",
			      e);
		free(e);
	}
	{
		/* four nodes whose names do not fit: the first and how many
		   more (it printed "alpha-long-... .. ... (4 nodes)") */
		const char *a[] = {"tagplan", "simulate", "-m", g, "-t", names,
				   "-s", "dp=8", NULL};
		e = summary_of(a);
		ck_assert_msg(strstr(e, " alpha-long-node-... and 3 more 8 x 1") &&
				      !strstr(e, ".. ..."),
			      "%s", e);
		free(e);
	}
}
END_TEST

/* Device sets that overlap are "placements" in the table as in the
 * picture (the table said "stage"); one op group is "1 op group". */
START_TEST(test_summary_placements)
{
	const char *dir = tp_test_tmpdir();
	char *p = path_in(dir, "p.json"), *q = path_in(dir, "q.json");
	char *text, *at, *e;
	size_t len;
	const char *mk[] = {"tagplan", "plan", "-m",
			    tp_test_path("data/good/mlp.json"), "-t",
			    tp_test_path("data/good/two-racks.json"), "-o", p,
			    "--baseline", "dp", "--runtime", "none", "-q",
			    NULL};
	struct tp_run r;

	tp_run_tagplan(&r, mk, NULL);
	ck_assert_int_eq(r.status, 0);
	tp_run_free(&r);
	text = tp_test_read(p, &len);
	ck_assert_ptr_nonnull(text);
	/* the dp plan is one group on all five devices; split its ops in
	 * two groups, the second on the first device only (overlapping) */
	at = strstr(text, "\"groups\": [");
	ck_assert_ptr_nonnull(at);
	{
		FILE *f = fopen(q, "w");
		ck_assert_ptr_nonnull(f);
		fprintf(f, "%.*s", (int)(at - text), text);
		fprintf(f,
			"\"groups\": [{\"ops\": [\"input\", \"fc1\", \"relu\"], "
			"\"devices\": [\"a/gpu0\", \"a/gpu1\"], \"dp\": 2}, "
			"{\"ops\": [\"fc2\", \"loss\"], \"devices\": "
			"[\"a/gpu0\"]}]}\n");
		ck_assert_int_eq(fclose(f), 0);
	}
	free(text);
	{
		const char *a[] = {"tagplan", "simulate", "-p", q, "-m",
				   tp_test_path("data/good/mlp.json"), "-t",
				   tp_test_path("data/good/two-racks.json"),
				   NULL};
		e = summary_of(a);
		ck_assert_msg(!strncmp(e, "placement ", 10) ||
				      strstr(e, "\nplacement "),
			      "%s", e);
		free(e);
	}
}
END_TEST

/* ---- 15. the shipped files by name; check's comparison; --dtype ---------- */

/* `tagplan model llama-2-7b` reads the shipped data/models/llama-2-7b.json
 * (with --batch applied); simulate takes -m/-t names of shipped files;
 * a name that is not there lists the shipped ones. */
START_TEST(test_shipped_names)
{
	const char *a1[] = {"tagplan", "model", "llama-2-7b", "--batch",
			    "64", NULL};
	const char *a2[] = {"tagplan", "simulate", "-m", "llama-2-7b", "-t",
			    "dgx-a100-4", "-s", "tp=8,dp=4", "-q", NULL};
	const char *a3[] = {"tagplan", "simulate", "-m", "llama-2-7", "-t",
			    "dgx-a100-4", "-s", "tp=8,dp=4", "-q", NULL};
	const char *a4[] = {"tagplan", "model", "llama-2-7", NULL};
	struct tp_run r;

	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.out, "\"tagplan-model/1\"") &&
			      strstr(r.out, "\"global_batch_size\": 64,"),
		      "%.300s", r.out);
	tp_run_free(&r);
	tp_run_tagplan(&r, a2, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.out, "\"tagplan-report/1\""), "%.200s", r.out);
	tp_run_free(&r);
	tp_run_tagplan(&r, a3, NULL);
	ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "shipped model file") &&
			      strstr(r.err, "llama-2-7b"),
		      "%s", r.err);
	tp_run_free(&r);
	{
		const char *a5[] = {"tagplan", "plan", "-m", "gpt2", "-t",
				    "dgx-a100", "--playouts", "5",
				    "--threads", "1", "-q", NULL};
		tp_run_tagplan(&r, a5, NULL);
		ck_assert_msg(r.status == 0, "plan: exit %d: %s", r.status,
			      r.err);
		ck_assert_msg(strstr(r.out, "\"model\": \"gpt2\""), "%.200s",
			      r.out);
		tp_run_free(&r);
	}
	tp_run_tagplan(&r, a4, NULL);
	ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "shipped model file") &&
			      strstr(r.err, "mistral-7b"),
		      "%s", r.err);
	tp_run_free(&r);
}
END_TEST

/* check --baseline-plan said only "ok" when it passed: it prints both
 * iteration times, the change and the limit. */
START_TEST(test_check_prints_comparison)
{
	const char *dir = tp_test_tmpdir();
	char *p = path_in(dir, "p.json"), *old = path_in(dir, "old.json");
	const char *mk[] = {"tagplan", "plan", "-m",
			    tp_test_path("data/good/mlp.json"), "-t",
			    tp_test_path("data/good/two-racks.json"), "-o",
			    old, "--baseline", "dp", "--runtime", "none",
			    "-q", NULL};
	const char *a[] = {"tagplan", "check", "-p", p, "--baseline-plan",
			   old, "--max-regression", "0.05", NULL};
	struct tp_run r;

	make_plan(p);
	tp_run_tagplan(&r, mk, NULL);
	ck_assert_int_eq(r.status, 0);
	tp_run_free(&r);
	tp_run_tagplan(&r, a, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "against the baseline plan") &&
			      strstr(r.err, ", was ") &&
			      strstr(r.err, "limit +5.0%"),
		      "%s", r.err);
	tp_run_free(&r);
}
END_TEST

/* The forms of `tagplan model` that take --dtype in its --help take it
 * in tagplan(1)'s synopsis too, and both say the defaults per source. */
START_TEST(test_model_dtype_documented)
{
	const char *a[] = {"tagplan", "model", "--help", NULL};
	char *man = tp_test_read(tp_test_path("../man/tagplan.1"), NULL);
	char *sec, *end;
	int help_forms = 0, man_forms = 0;
	struct tp_run r;

	tp_run_tagplan(&r, a, NULL);
	ck_assert_int_eq(r.status, 0);
	{
		const char *o = strstr(r.out, "      --dtype");
		ck_assert_msg(o && strstr(o, "torch_dtype") &&
				      strstr(o, "torch_dtype") <
					      strstr(o, "--name"),
			      "--help's --dtype does not say hf's default");
	}
	/* the usage lines, up to the first blank line */
	for (char *l = r.out; l && *l && *l != '\n';) {
		char *nl = strchr(l, '\n');
		if (nl)
			*nl = '\0';
		help_forms += strstr(l, "--dtype") != NULL;
		l = nl ? nl + 1 : NULL;
	}
	ck_assert_ptr_nonnull(man);
	sec = strstr(man, ".SS \"tagplan model\"");
	ck_assert_ptr_nonnull(sec);
	end = strstr(sec, ".fi");
	ck_assert_ptr_nonnull(end);
	for (char *q = sec; (q = strstr(q, "\\-\\-dtype")) && q < end; q++)
		man_forms++;
	ck_assert_msg(help_forms >= 3 && man_forms == help_forms,
		      "--dtype in %d forms of --help, %d of tagplan(1)",
		      help_forms, man_forms);
	end = strstr(sec, ".SS \"tagplan topo\"");
	ck_assert_ptr_nonnull(end);
	*end = '\0';
	ck_assert_msg(strstr(sec, "torch_dtype"),
		      "tagplan(1) does not say hf's --dtype default");
	free(man);
	tp_run_free(&r);
}
END_TEST

/* ---- 12. byte-identical plans --------------------------------------------- */

/* "Same byte for byte with --threads 1" held only without
 * summary.search.timing: with --no-timing two runs write identical files
 * (and a plan without timing reads and writes back without it). */
START_TEST(test_no_timing_identical)
{
	const char *dir = tp_test_tmpdir();
	char *p1 = path_in(dir, "a.json"), *p2 = path_in(dir, "b.json");
	char *back = path_in(dir, "back.json");
	const char *const outs[] = {p1, p2};
	size_t l1, l2;
	char *t1, *t2;
	struct tp_run r;

	for (int k = 0; k < 2; k++) {
		const char *a[] = {"tagplan", "plan", "--threads", "1",
				   "--playouts", "100", "--no-timing", "-q",
				   "-o", outs[k], NULL};
		tp_run_tagplan(&r, a, NULL);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		tp_run_free(&r);
	}
	t1 = tp_test_read(p1, &l1);
	t2 = tp_test_read(p2, &l2);
	ck_assert(t1 && t2);
	ck_assert_msg(l1 == l2 && !memcmp(t1, t2, l1),
		      "two runs with --no-timing differ");
	ck_assert_msg(!strstr(t1, "timing") && !strstr(t1, "search_seconds"),
		      "wall-clock figures left in");
	{
		/* a plan without timing is read as any other */
		const char *a[] = {"tagplan", "simulate", "-p", p1, "-q", "-o",
				   back, NULL};
		tp_run_tagplan(&r, a, NULL);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		tp_run_free(&r);
	}
	free(t1);
	free(t2);
}
END_TEST

/* ---- 10. the progress line ----------------------------------------------- */

/* Every form at every width from 10 to 200 columns stays within W - 1,
 * with the bar from 60 columns on and none below. */
START_TEST(test_progress_fits)
{
	struct tp_search_progress p;
	char line[512];

	memset(&p, 0, sizeof(p));
	p.playouts = 123456;
	p.playout_limit = 5000000;
	p.elapsed_s = 12345.6;
	p.time_limit_s = 99999;
	p.have_best = p.best_feasible = true;
	p.best_time_s = 0.123456789;
	p.reference_time_s = 0.2;
	p.phase = "baselines";
	for (int w = 10; w <= 200; w++) {
		tp_cli_progress_format(&p, w, line, sizeof(line));
		ck_assert_msg((int)strlen(line) <= w - 1,
			      "%d columns: %zu: %s", w, strlen(line), line);
		ck_assert_msg((w >= 60) == (line[0] == '['), "%d columns: %s",
			      w, line);
		ck_assert_msg(strstr(line, "%"), "%d columns: %s", w, line);
		if (w >= 30)
			ck_assert_msg(strstr(line, "0.1235 s"),
				      "%d columns: %s", w, line);
	}
	tp_cli_progress_format(&p, 120, line, sizeof(line));
	ck_assert_msg(strstr(line, "(1.62x)") && strstr(line, "s left") &&
			      strstr(line, "playouts/s"),
		      "%s", line);
}
END_TEST

/* Run plan for about two seconds with stderr on a pseudo-terminal of
 * cols columns; every redraw of the progress line ("\r\033[K" + text) is
 * at most cols - 1 wide (the bar was 82 wide in an 80-column terminal,
 * which scrolled a line per redraw).  Returns the number of redraws, -1
 * without pseudo-terminals. */
static int progress_redraws(int cols, bool *bar_seen)
{
	const char *bin = getenv("TAGPLAN_BIN");
	int master = posix_openpt(O_RDWR | O_NOCTTY), n = 0;
	char *seen = NULL, *q;
	size_t len = 0, cap = 0;
	struct winsize ws = {24, (unsigned short)cols, 0, 0};
	pid_t pid;
	int st;

	*bar_seen = false;
	if (master < 0 || grantpt(master) || unlockpt(master) ||
	    !ptsname(master) || access(ptsname(master), R_OK | W_OK)) {
		fprintf(stderr, "everyday: no pseudo-terminal: skipped\n");
		return -1;
	}
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
		int null = open("/dev/null", O_RDWR);
		if (slave < 0 || null < 0)
			_exit(126);
		ioctl(slave, TIOCSWINSZ, &ws);
		dup2(null, 0);
		dup2(null, 1);
		dup2(slave, 2);
		unsetenv("COLUMNS");
		execl(bin ? bin : "./tagplan", "tagplan", "plan", "--threads",
		      "1", "--time-limit", "2", "--playouts", "0", "-m",
		      tp_test_path("data/good/mlp.json"), "-t",
		      tp_test_path("data/good/two-racks.json"), (char *)NULL);
		_exit(127);
	}
	for (;;) {
		char buf[4096];
		struct pollfd pf = {master, POLLIN, 0};
		ssize_t k;
		if (poll(&pf, 1, 200) > 0) {
			k = read(master, buf, sizeof(buf));
			if (k <= 0)
				break;
			if (len + (size_t)k + 1 > cap) {
				cap = (len + (size_t)k + 1) * 2;
				seen = realloc(seen, cap);
				ck_assert_ptr_nonnull(seen);
			}
			memcpy(seen + len, buf, (size_t)k);
			len += (size_t)k;
			seen[len] = '\0';
		} else if (waitpid(pid, &st, WNOHANG) == pid) {
			pid = -1;
			break;
		}
	}
	if (pid > 0)
		waitpid(pid, &st, 0);
	close(master);
	ck_assert_ptr_nonnull(seen);
	for (q = seen; (q = strstr(q, "\r\033[K")); q += 4) {
		const char *t = q + 4, *end = t;
		while (*end && *end != '\r' && *end != '\n')
			end++;
		if (end == t)
			continue;
		ck_assert_msg(end - t <= cols - 1,
			      "%d columns: a %d-column line: %.*s", cols,
			      (int)(end - t), (int)(end - t), t);
		*bar_seen |= *t == '[';
		n++;
	}
	free(seen);
	return n;
}

START_TEST(test_progress_in_terminal)
{
	bool bar;
	int n = progress_redraws(80, &bar);

	if (n < 0)
		return;
	ck_assert_msg(n >= 3 && bar, "%d redraws at 80 columns", n);
	n = progress_redraws(50, &bar);
	ck_assert_msg(n >= 3 && !bar, "%d redraws at 50 columns", n);
}
END_TEST

/* ---- 11. the Perfetto trace ---------------------------------------------- */

struct xslice {
	double pid, tid, ts, end;
};

static int by_track(const void *a, const void *b)
{
	const struct xslice *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Parse the trace at path: its complete ("X") slices per pid, the number
 * of slices that overlap the previous one on their track, and whether
 * otherData says every replica is shown. */
static void trace_stats(const char *path, size_t *n_dev, size_t *n_link,
			size_t *overlaps, bool *all)
{
	size_t len, n = 0;
	char *text = tp_test_read(path, &len);
	struct tp_json_doc doc;
	struct tp_error err;
	const struct tp_json *ev, *od, *ar;
	struct xslice *v;

	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(tp_json_parse(path, text, len, 0, 0, &doc, &err),
			 TP_OK);
	ev = tp_json_get(doc.root, "traceEvents");
	od = tp_json_get(doc.root, "otherData");
	ck_assert(ev && od);
	ar = tp_json_get(od, "all_replicas_shown");
	ck_assert_ptr_nonnull(ar);
	*all = ar->b;
	v = calloc(ev->n + 1, sizeof(*v));
	ck_assert_ptr_nonnull(v);
	*n_dev = *n_link = *overlaps = 0;
	for (size_t k = 0; k < ev->n; k++) {
		const struct tp_json *e = ev->items[k];
		const struct tp_json *ph = tp_json_get(e, "ph");
		if (!ph || strcmp(ph->str, "X"))
			continue;
		v[n].pid = tp_json_get(e, "pid")->num;
		v[n].tid = tp_json_get(e, "tid")->num;
		v[n].ts = tp_json_get(e, "ts")->num;
		v[n].end = v[n].ts + tp_json_get(e, "dur")->num;
		if (v[n].pid == 0)
			(*n_dev)++;
		else
			(*n_link)++;
		n++;
	}
	qsort(v, n, sizeof(*v), by_track);
	for (size_t k = 1; k < n; k++)
		if (v[k].pid == v[k - 1].pid && v[k].tid == v[k - 1].tid &&
		    v[k].ts < v[k - 1].end - 1e-6 * (1 + v[k].ts))
			(*overlaps)++;
	free(v);
	tp_json_doc_release(&doc);
	free(text);
}

/* Concurrent flows on a link went to one track as overlapping slices
 * (132 in this pipeline's trace), which the trace-event format forbids:
 * no track has overlapping slices now. */
START_TEST(test_trace_no_overlaps)
{
	char *path = path_in(tp_test_tmpdir(), "trace.json");
	const char *a[] = {"tagplan", "simulate", "-q", "-m",
			   tp_data_file("demo-model.json"), "-t",
			   tp_data_file("tag-testbed.json"), "-p",
			   tp_test_path("data/sim/hetero-pipeline.plan.json"),
			   "--trace", path, NULL};
	size_t n_dev, n_link, over;
	bool all;
	struct tp_run r;

	tp_run_tagplan(&r, a, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	trace_stats(path, &n_dev, &n_link, &over, &all);
	ck_assert_uint_eq(n_dev, 12 * 9);
	ck_assert_uint_gt(n_link, 0);
	ck_assert_msg(over == 0, "%zu overlapping slices", over);
	ck_assert(all);
}
END_TEST

/* Every replica of 32-way data parallelism over 2048 micro-batches is
 * 131,104 device slices: by default the trace keeps one replica of each
 * kind per stage and stderr says so; --trace-replicas all keeps them all. */
START_TEST(test_trace_one_replica)
{
	const char *dir = tp_test_tmpdir();
	char *m = path_in(dir, "m.json"), *t = path_in(dir, "t.json");
	char *one = path_in(dir, "one.json"), *every = path_in(dir, "all.json");
	const char *mk1[] = {"tagplan", "model", "gpt", "--hidden", "256",
			     "--layers", "2", "--heads", "4", "--seq", "128",
			     "--vocab", "1000", "--batch", "65536", "-o", m,
			     NULL};
	const char *mk2[] = {"tagplan", "topo", "dgx-a100:4", "-o", t, NULL};
	const char *a1[] = {"tagplan", "simulate", "-m", m, "-t", t, "-s",
			    "dp=32", "--trace", one, NULL};
	const char *a2[] = {"tagplan", "simulate", "-m", m, "-t", t, "-s",
			    "dp=32", "--trace", every, "--trace-replicas",
			    "all", "-q", NULL};
	size_t n_dev, n_link, over, d_all, l_all;
	bool all;
	struct tp_run r;

	tp_run_tagplan(&r, mk1, NULL);
	ck_assert_int_eq(r.status, 0);
	tp_run_free(&r);
	tp_run_tagplan(&r, mk2, NULL);
	ck_assert_int_eq(r.status, 0);
	tp_run_free(&r);
	tp_run_tagplan(&r, a1, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "one replica of each kind per stage"),
		      "%s", r.err);
	tp_run_free(&r);
	tp_run_tagplan(&r, a2, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	tp_run_free(&r);
	trace_stats(one, &n_dev, &n_link, &over, &all);
	ck_assert(!all);
	ck_assert_uint_eq(n_dev, 4097);
	ck_assert_uint_eq(over, 0);
	trace_stats(every, &d_all, &l_all, &over, &all);
	ck_assert(all);
	ck_assert_uint_eq(d_all, 32 * 4097);
	ck_assert_uint_eq(over, 0);
	ck_assert_uint_lt(n_link, l_all);
}
END_TEST

/* ---- a new user's slips: the error names what was meant -------------- */

/* Run argv; assert exit 2, nothing on stdout, no file "out" in dir and
 * stderr holding want (and not unwanted, when given). */
static void slip(const char *const *argv, const char *dir, const char *want,
		 const char *unwanted)
{
	struct tp_run r;
	struct stat st;

	tp_run_tagplan(&r, argv, NULL);
	ck_assert_msg(r.status == 2, "%s: exit %d: %s", argv[1], r.status,
		      r.err);
	ck_assert_msg(strstr(r.err, want), "want \"%s\" in: %s", want, r.err);
	ck_assert_msg(!unwanted || !strstr(r.err, unwanted), "%s", r.err);
	ck_assert_uint_eq(r.out_len, 0);
	ck_assert(stat(path_in(dir, "out"), &st) != 0);
	tp_run_free(&r);
}

/* A misspelt option, a misspelt model, an HF config given without "hf:"
 * to tagplan model or as a model file to simulate: each error names what
 * was meant (the fix), exits 2 and writes nothing.  Before, the option
 * and model had no suggestion, "model gtp --hidden" blamed --hidden,
 * "model PATH/config.json" listed the zoo and "-m config.json" said to
 * add a "format" field. */
START_TEST(test_new_user_slips)
{
	const char *dir = tp_test_tmpdir();
	const char *out = path_in(dir, "out");
	const char *hf = tp_test_path("data/hf/gpt2.json");
	const char *topo = tp_data_file("tag-testbed.json");
	const char *demo = tp_data_file("demo-model.json");
	char hf_src[1100], want[1400];
	const char *a1[] = {"tagplan", "plan", "--playout", "10", "-o", out,
			    NULL};
	const char *a2[] = {"tagplan", "plan", "-seed", "2", "-o", out, NULL};
	const char *a3[] = {"tagplan", "plan", "--time", "1", "-o", out, NULL};
	const char *a3b[] = {"tagplan", "simulate", "--xyzzy", NULL};
	/* words abbreviated or spelt out: no edit distance finds them */
	const char *a3c[] = {"tagplan", "check", "--max-iteration-time", "4",
			     NULL};
	const char *a3d[] = {"tagplan", "check", "--max-mem-frac", "0.9",
			     NULL};
	const char *a4[] = {"tagplan", "model", "gtp", "--hidden", "64", "-o",
			    out, NULL};
	const char *a5[] = {"tagplan", "model", "resnet51", "-o", out, NULL};
	const char *a6[] = {"tagplan", "model", hf, "-o", out, NULL};
	const char *a7[] = {"tagplan", "model", demo, "-o", out, NULL};
	const char *a8[] = {"tagplan", "simulate", "-m", hf, "-t", topo,
			    "-s", "tp=1", "-o", out, NULL};
	const char *a9[] = {"tagplan", "validate", hf, NULL};

	snprintf(hf_src, sizeof(hf_src), "hf:%s", hf);
	slip(a1, dir, "unknown option \"--playout\" (did you mean --playouts?)",
	     NULL);
	slip(a2, dir, "unknown option \"-seed\" (did you mean --seed?)", NULL);
	/* the only option it begins; none near */
	slip(a3, dir, "unknown option \"--time\" (did you mean --time-limit?)",
	     NULL);
	slip(a3b, dir, "unknown option \"--xyzzy\"\n", NULL);
	slip(a3c, dir, "unknown option \"--max-iteration-time\" (did you mean "
		       "--max-iter-time?)",
	     NULL);
	slip(a3d, dir, "unknown option \"--max-mem-frac\" (did you mean "
		       "--max-memory-fraction?)",
	     NULL);
	slip(a4, dir, "unknown model \"gtp\" (did you mean gpt?)", "--hidden");
	slip(a5, dir, "unknown model \"resnet51\" (did you mean resnet50?)",
	     NULL);
	snprintf(want, sizeof(want), "is a file: for a HuggingFace config.json "
				     "write %s", hf_src);
	slip(a6, dir, want, "unknown model");
	slip(a7, dir, "is already a tagplan model file: give it to plan or "
		      "simulate with -m", NULL);
	snprintf(want, sizeof(want), "a HuggingFace config (\"model_type\": "
				     "\"gpt2\"), not a tagplan file; build a "
				     "model from it with `tagplan model %s",
		 hf_src);
	slip(a8, dir, want, "add \"format\"");
	slip(a9, dir, want, NULL);
}
END_TEST

/* The plan read from standard input is called so ("recorded in -"
 * before), and a node without "nic" in a topology of several nodes is
 * named with the field to add ("add a link or a network" before). */
START_TEST(test_stdin_plan_and_nic_wording)
{
	const char *dir = tp_test_tmpdir();
	char *p = path_in(dir, "p.json"), *plan;
	const char *a1[] = {"tagplan", "check", "-p", "-", NULL};
	const char *a2[] = {"tagplan", "simulate", "-m",
			    tp_test_path("data/good/mlp.json"), "-t",
			    path_in(dir, "t.json"), "-s", "dp=4", "-q", NULL};
	static const char topo[] =
		"{\"format\": \"tagplan-topology/1\", \"name\": \"no-nic\", "
		"\"nodes\": [{\"name\": \"a\", \"devices\": [{\"type\": "
		"\"V100-SXM2-32GB\", \"count\": 2}], \"nic\": {\"bandwidth_Bps\": "
		"1e10, \"latency_s\": 1e-5}}, {\"name\": \"b\", \"devices\": "
		"[{\"type\": \"V100-SXM2-32GB\", \"count\": 2}]}]}\n";
	struct tp_run r;

	make_plan(p);
	plan = tp_test_read(p, NULL);
	ck_assert_ptr_nonnull(plan);
	tp_run_tagplan(&r, a1, plan);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "recorded in the plan read from standard "
				    "input\n") &&
			      !strstr(r.err, "recorded in -"),
		      "%s", r.err);
	tp_run_free(&r);
	free(plan);
	ck_assert_int_eq(tp_test_write(path_in(dir, "t.json"), topo,
				       strlen(topo)),
			 0);
	tp_run_tagplan(&r, a2, NULL);
	ck_assert_msg(r.status == 2, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "t.json: $.nodes[1]: device \"b/gpu0\" "
				    "cannot be reached") &&
			      strstr(r.err, "node \"b\" has no \"nic\", so no "
					    "traffic leaves it (add \"nic\": "),
		      "%s", r.err);
	ck_assert_uint_eq(r.out_len, 0);
	tp_run_free(&r);
}
END_TEST

/* -q was taken by plan, simulate and train only: `tagplan topo ... -q`
 * in a script was a usage error, and render, export, check, inspect,
 * model, import and calibrate could not be silenced.  Every command takes
 * it now; with it a successful run prints nothing on stderr (validate:
 * no "FILE: ok" lines on stdout either), without it the same run says
 * something - so the flag is what silences it. */
START_TEST(test_quiet_everywhere)
{
	static const char *const cmds[] = {
		"plan",	    "simulate", "check",  "render",
		"export",   "model",    "topo",   "inspect",
		"validate", "train",    "import", "calibrate"};
	const char *dir = tp_test_tmpdir();
	char *p = path_in(dir, "q.json"), *dot = path_in(dir, "q.dot"),
	     *sh = path_in(dir, "q.sh"), *topo = path_in(dir, "t.json"),
	     *m = path_in(dir, "m.json"), *m2 = path_in(dir, "m2.json");
	char sailor[1100];
	const char *a_topo[] = {"tagplan", "topo", "dgx-a100:2", "-o", topo,
				NULL};
	const char *a_model[] = {"tagplan", "model", "gpt2", "-o", m, NULL};
	const char *a_render[] = {"tagplan", "render", "-p", p, "-o", dot,
				  NULL};
	const char *a_export[] = {"tagplan", "export", "-p",   p,
				  "--to",    "torchrun", "-o", sh,
				  NULL};
	const char *a_inspect[] = {"tagplan", "inspect", p, NULL};
	const char *a_check[] = {"tagplan", "check", "-p", p, NULL};
	const char *a_validate[] = {"tagplan", "validate", p, NULL};
	const char *a_import[] = {"tagplan", "import", sailor, "--model",
				  "TINY", "-o", m2, NULL};
	const char *const *runs[] = {a_topo,  a_model,	a_render,
				     a_export, a_inspect, a_check,
				     a_validate, a_import};

	snprintf(sailor, sizeof(sailor), "sailor:%s",
		 tp_test_path("data/sailor"));
	for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
		const char *argv[] = {"tagplan", cmds[k], "--help", NULL};
		struct tp_run r;

		tp_run_tagplan(&r, argv, NULL);
		ck_assert_int_eq(r.status, 0);
		ck_assert_msg(strstr(r.out, "-q, --quiet"),
			      "tagplan %s --help has no -q, --quiet", cmds[k]);
		tp_run_free(&r);
	}
	make_plan(p);
	for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
		const char *argv[16];
		size_t n = 0;
		bool is_validate = !strcmp(runs[k][1], "validate");
		struct tp_run r;

		while (runs[k][n]) {
			argv[n] = runs[k][n];
			n++;
		}
		argv[n] = NULL;
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0, "%s: exit %d: %s", argv[1],
			      r.status, r.err);
		ck_assert_msg(is_validate ? r.out_len > 0 : r.err_len > 0,
			      "%s says nothing without -q", argv[1]);
		tp_run_free(&r);
		argv[n++] = "-q";
		argv[n] = NULL;
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0, "%s -q: exit %d: %s", argv[1],
			      r.status, r.err);
		ck_assert_msg(r.err_len == 0, "%s -q said: %s", argv[1],
			      r.err);
		if (is_validate)
			ck_assert_msg(r.out_len == 0, "validate -q printed: %s",
				      r.out);
		tp_run_free(&r);
	}
}
END_TEST

/* export -q dropped every line of tp_export_write's notes, warnings
 * too: "megatron-core has no flag for sliding-window attention: the
 * model it builds differs from the one simulated" (mistral-7b) vanished
 * with the notes on what the output leaves to the model code.  -q means
 * no notes; a warning (the output will not run as simulated) stays,
 * labelled "warning:", and the notes keep their label without -q. */
START_TEST(test_export_quiet_keeps_warnings)
{
	const char *dir = tp_test_tmpdir();
	char *topo = path_in(dir, "w.json"), *out = path_in(dir, "w.txt"),
	     *toml = path_in(dir, "w.toml");
	const char *a_topo[] = {"tagplan", "topo", "dgx-a100:1", "-o", topo,
				"-q", NULL};
	const char *a_meg[] = {"tagplan", "export", "-s", "tp=2,dp=4",
			       "-m", "mistral-7b", "-t", topo, "-o", out,
			       "-q", NULL};
	const char *a_tt[] = {"tagplan", "export", "-s", "tp=2,dp=4",
			      "-m", "gpt2", "-t", topo, "--to", "torchtitan",
			      "-o", toml, "-q", NULL};
	const char *const *runs[] = {a_meg, a_tt};
	/* per run: a warning it must give, a note it gives without -q */
	static const char *const warn[] = {
	    "tagplan export: warning: megatron-core has no flag for "
	    "sliding-window attention: the model it builds differs",
	    "tagplan export: warning: TorchTitan's tensor parallelism shards "
	    "the norms along the sequence"};
	static const char *const note[] = {
	    "tagplan export: note: --vocab-size is for --tokenizer-type",
	    "tagplan export: note: register the flavor in "
	    "torchtitan/models/llama3"};
	struct tp_run r;

	tp_run_tagplan(&r, a_topo, NULL);
	ck_assert_msg(r.status == 0, "topo: %s", r.err);
	tp_run_free(&r);
	for (size_t k = 0; k < 2; k++) {
		const char *argv[16];
		size_t n = 0;

		while (runs[k][n] && strcmp(runs[k][n], "-q")) {
			argv[n] = runs[k][n];
			n++;
		}
		argv[n] = NULL;
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		ck_assert_msg(strstr(r.err, warn[k]), "no warning: %s", r.err);
		ck_assert_msg(strstr(r.err, note[k]), "no note: %s", r.err);
		tp_run_free(&r);
		tp_run_tagplan(&r, runs[k], NULL);
		ck_assert_msg(r.status == 0, "-q: exit %d: %s", r.status,
			      r.err);
		ck_assert_msg(strstr(r.err, warn[k]),
			      "-q dropped the warning: %s", r.err);
		ck_assert_msg(!strstr(r.err, "note:"), "-q printed a note: %s",
			      r.err);
		tp_run_free(&r);
	}
}
END_TEST

/* export --to deepspeed writes the config; the line that starts the run
 * (deepspeed pretrain_gpt.py ARGS --deepspeed_config FILE) was a note,
 * so -q, which a script passes, dropped the one line it needs to launch
 * the job.  It is a "launch:" line on stderr (stdout is the JSON config)
 * that -q keeps, naming the file -o wrote; the notes still go. */
START_TEST(test_export_quiet_keeps_launch)
{
	const char *dir = tp_test_tmpdir();
	char *topo = path_in(dir, "l.json"), *cfg = path_in(dir, "ds.json");
	const char *a_topo[] = {"tagplan", "topo", "dgx-a100:1", "-o", topo,
				"-q", NULL};
	const char *a_ds[] = {"tagplan", "export", "-s", "tp=2,dp=4", "-m",
			      "gpt2", "-t", topo, "--to", "deepspeed", "-o",
			      cfg, "-q", NULL};
	char want[1200];
	struct tp_run r;

	tp_run_tagplan(&r, a_topo, NULL);
	ck_assert_msg(r.status == 0, "topo: %s", r.err);
	tp_run_free(&r);
	snprintf(want, sizeof(want), " --deepspeed --deepspeed_config %s\n",
		 cfg);
	for (int quiet = 0; quiet < 2; quiet++) {
		const char *argv[16];
		size_t n = 0;
		const char *line;

		for (; a_ds[n] && (quiet || strcmp(a_ds[n], "-q")); n++)
			argv[n] = a_ds[n];
		argv[n] = NULL;
		tp_run_tagplan(&r, argv, NULL);
		ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
		line = strstr(r.err, "tagplan export: launch: deepspeed "
				     "pretrain_gpt.py --tensor-model-parallel-"
				     "size 2 ");
		ck_assert_msg(line, "-q %d: no launch line: %s", quiet, r.err);
		/* the line ends naming the config file */
		ck_assert_msg(strstr(line, want) &&
				  strstr(line, want) < strchr(line, '\n'),
			      "launch line does not name %s: %s", cfg, line);
		ck_assert_msg(!quiet || !strstr(r.err, "note:"),
			      "-q printed a note: %s", r.err);
		ck_assert_msg(quiet || strstr(r.err, "tagplan export: note: "),
			      "no notes without -q: %s", r.err);
		tp_run_free(&r);
	}
}
END_TEST

Suite *suite_everyday(void)
{
	Suite *s = suite_create("everyday");
	TCase *tc = tcase_create("commands");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_render_format_conflict);
	tcase_add_test(tc, test_plan_two_stdin);
	tcase_add_test(tc, test_misleading_errors);
	tcase_add_test(tc, test_summary_wording);
	tcase_add_test(tc, test_summary_placements);
	tcase_add_test(tc, test_shipped_names);
	tcase_add_test(tc, test_check_prints_comparison);
	tcase_add_test(tc, test_model_dtype_documented);
	tcase_add_test(tc, test_no_timing_identical);
	tcase_add_test(tc, test_new_user_slips);
	tcase_add_test(tc, test_stdin_plan_and_nic_wording);
	tcase_add_test(tc, test_quiet_everywhere);
	tcase_add_test(tc, test_export_quiet_keeps_warnings);
	tcase_add_test(tc, test_export_quiet_keeps_launch);
	suite_add_tcase(s, tc);

	tc = tcase_create("progress");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_progress_fits);
	tcase_add_test(tc, test_progress_in_terminal);
	suite_add_tcase(s, tc);

	tc = tcase_create("trace");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_trace_no_overlaps);
	tcase_add_test(tc, test_trace_one_replica);
	suite_add_tcase(s, tc);
	return s;
}
