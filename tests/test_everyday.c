/*
 * test_everyday.c - suite "everyday": what a user meets in daily use and
 * what scripts and viewers take as it is: conflicting flags, the shipped
 * files by name, check's comparison, the help agreeing with tagplan(1),
 * the progress bar's width, the Perfetto trace, byte-identical plans.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
	ck_assert_msg(r.status == 3, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.err, "shipped model file") &&
			      strstr(r.err, "llama-2-7b"),
		      "%s", r.err);
	tp_run_free(&r);
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
			    old, "--baseline", "dp", "-q", NULL};
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

Suite *suite_everyday(void)
{
	Suite *s = suite_create("everyday");
	TCase *tc = tcase_create("commands");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_render_format_conflict);
	tcase_add_test(tc, test_shipped_names);
	tcase_add_test(tc, test_check_prints_comparison);
	tcase_add_test(tc, test_model_dtype_documented);
	suite_add_tcase(s, tc);
	return s;
}
