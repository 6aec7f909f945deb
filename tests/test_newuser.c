/*
 * test_newuser.c - suite "newuser": what a new user's first commands
 * meet: a mistyped command, an option before the command, outputs that
 * cannot be written, exports that build another model than the one
 * planned.  Each error names the fix, exits as tagplan(1) says and
 * writes nothing.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

/* Run argv; its exit status must be `status`, its stderr contain want
 * (and not unwanted), its stdout be empty. */
static void expect(const char *const *argv, int status, const char *want,
		   const char *unwanted)
{
	struct tp_run r;

	tp_run_tagplan(&r, argv, NULL);
	ck_assert_msg(r.status == status, "%s: exit %d, want %d: %s", argv[1],
		      r.status, status, r.err);
	ck_assert_msg(strstr(r.err, want), "want \"%s\" in: %s", want, r.err);
	ck_assert_msg(!unwanted || !strstr(r.err, unwanted), "%s", r.err);
	ck_assert_uint_eq(r.out_len, 0);
	tp_run_free(&r);
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

Suite *suite_newuser(void)
{
	Suite *s = suite_create("newuser");
	TCase *tc = tcase_create("commands");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_command_slips);
	suite_add_tcase(s, tc);
	return s;
}
