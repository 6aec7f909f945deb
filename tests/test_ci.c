/*
 * test_ci.c - suite "ci": what .ci/run decides, run against stand-ins
 * for dpkg-query, apt-get, apt-cache, clang and make (shell scripts the
 * test writes first on PATH) that log what they were asked: which
 * package it installs for the clang found, that it fails rather than
 * skip a sanitizer build it cannot link, and that a failing check fails
 * it.  Nothing is installed or built.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "util.h"

/* The stand-ins.  STUB_MISSING: packages dpkg-query calls not
 * installed; STUB_ARCHIVE: those apt-cache knows; STUB_CLANG: clang's
 * major version; STUB_FAIL: the make target that fails.  clang links a
 * sanitized program once "$STUB_DIR/rt" exists (apt-get installing a
 * libclang-rt package makes it). */
static const char *const stubs[][2] = {
	{"dpkg-query", "for a; do p=$a; done\n"
		       "case \" $STUB_MISSING \" in *\" $p \"*) exit 1;; esac\n"
		       "printf 'install ok installed'\n"},
	{"apt-get", "echo \"apt-get $*\" >>\"$STUB_DIR/log\"\n"
		    "case \"$*\" in *libclang-rt-*) : >\"$STUB_DIR/rt\";; "
		    "esac\n"},
	{"apt-cache", "case \" $STUB_ARCHIVE \" in *\" $2 \"*) exit 0;; "
		      "esac\nexit 100\n"},
	{"clang", "if [ \"$1\" = --version ]; then\n"
		  "  echo \"Debian clang version $STUB_CLANG.0.6\"; exit 0\n"
		  "fi\n"
		  "[ -e \"$STUB_DIR/rt\" ] || { echo 'cannot find "
		  "libclang_rt.asan' >&2; exit 1; }\n"
		  "while [ $# -gt 0 ]; do\n"
		  "  if [ \"$1\" = -o ]; then printf '#!/bin/sh\\nexit 0\\n' "
		  ">\"$2\"; chmod +x \"$2\"; fi\n"
		  "  shift\ndone\n"},
	{"make", "echo \"make $*\" >>\"$STUB_DIR/log\"\n"
		 "case \" $* \" in *\" $STUB_FAIL \"*) exit 2;; esac\n"},
};

struct ci_run {
	int status;
	char *log, *out, *err; /* never NULL */
};

/* .ci/run with the stand-ins first on PATH and env (space-separated
 * NAME=VALUE words) set; rt: the runtime is there from the start. */
static void run_ci(struct ci_run *r, const char *env, int rt)
{
	const char *dir = tp_test_tmpdir();
	char path[1200], cmd[4096];
	int st;

	for (size_t i = 0; i < sizeof(stubs) / sizeof(stubs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, stubs[i][0]);
		snprintf(cmd, sizeof(cmd), "#!/bin/sh\n%s", stubs[i][1]);
		ck_assert_int_eq(tp_test_write(path, cmd, strlen(cmd)), 0);
		ck_assert_int_eq(chmod(path, 0755), 0);
	}
	snprintf(path, sizeof(path), "%s/rt", dir);
	if (rt)
		ck_assert_int_eq(tp_test_write(path, "", 0), 0);
	snprintf(path, sizeof(path), "%s/log", dir);
	ck_assert_int_eq(tp_test_write(path, "", 0), 0);
	snprintf(cmd, sizeof(cmd),
		 "env -i PATH='%s:/usr/bin:/bin' STUB_DIR='%s' STUB_CLANG=16 "
		 "%s sh '%s' >'%s/out' 2>'%s/err'",
		 dir, dir, env, tp_test_path("../.ci/run"), dir, dir);
	st = system(cmd);
	ck_assert(st != -1 && WIFEXITED(st));
	r->status = WEXITSTATUS(st);
	r->log = tp_test_read(path, NULL);
	snprintf(path, sizeof(path), "%s/out", dir);
	r->out = tp_test_read(path, NULL);
	snprintf(path, sizeof(path), "%s/err", dir);
	r->err = tp_test_read(path, NULL);
	ck_assert(r->log && r->out && r->err);
}

static void ci_free(struct ci_run *r)
{
	free(r->log);
	free(r->out);
	free(r->err);
}

/* The runtime package follows the installed clang (16 here), not
 * Debian 12's 14: it is installed only because a sanitized program does
 * not link, and then all three builds run. */
START_TEST(test_ci_clang_runtime_follows_clang)
{
	struct ci_run r;

	run_ci(&r,
	       "STUB_MISSING=libclang-rt-16-dev "
	       "STUB_ARCHIVE=libclang-rt-16-dev",
	       0);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.log, "apt-get install -y libclang-rt-16-dev"),
		      "%s", r.log);
	ck_assert_msg(!strstr(r.log, "libclang-rt-14"), "%s", r.log);
	ck_assert_msg(strstr(r.log, "make WERROR=1 -j"), "%s", r.log);
	ck_assert_msg(strstr(r.log, " asan-clang"), "%s", r.log);
	ci_free(&r);
	/* a clang whose runtime links already: nothing to install */
	run_ci(&r, "STUB_MISSING=libclang-rt-16-dev", 1);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(!strstr(r.log, "apt-get"), "%s", r.log);
	ck_assert_msg(strstr(r.log, " asan-clang"), "%s", r.log);
	ci_free(&r);
}
END_TEST

/* A runtime that cannot be had fails CI before any build, naming the
 * package and the way to skip on purpose; skipped on purpose, the other
 * builds run and the last line says what was skipped. */
START_TEST(test_ci_no_runtime_is_no_silent_skip)
{
	struct ci_run r;

	run_ci(&r, "STUB_MISSING=libclang-rt-16-dev STUB_ARCHIVE=none", 0);
	ck_assert_msg(r.status != 0, "exit 0 without clang's runtime: %s",
		      r.log);
	ck_assert_msg(strstr(r.err, "libclang-rt-16-dev"), "%s", r.err);
	ck_assert_msg(strstr(r.err, "CI_SKIP_ASAN_CLANG=1"), "%s", r.err);
	ck_assert_msg(!strstr(r.log, "make "), "built anyway: %s", r.log);
	ci_free(&r);
	run_ci(&r,
	       "STUB_MISSING=libclang-rt-16-dev STUB_ARCHIVE=none "
	       "CI_SKIP_ASAN_CLANG=1",
	       0);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(strstr(r.log, " check"), "%s", r.log);
	ck_assert_msg(strstr(r.log, " asan\n"), "%s", r.log);
	ck_assert_msg(!strstr(r.log, "asan-clang"), "%s", r.log);
	ck_assert_msg(strstr(r.out, "SKIPPED make asan-clang"), "%s", r.out);
	ci_free(&r);
}
END_TEST

/* A failing check fails CI, and nothing after it runs. */
START_TEST(test_ci_check_failure_fails)
{
	struct ci_run r;

	run_ci(&r, "STUB_FAIL=check", 1);
	ck_assert_msg(r.status != 0, "exit 0 after a failed check: %s", r.log);
	ck_assert_msg(!strstr(r.log, " asan"), "%s", r.log);
	ci_free(&r);
}
END_TEST

Suite *suite_ci(void)
{
	Suite *s = suite_create("ci");
	TCase *tc = tcase_create("run");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_ci_clang_runtime_follows_clang);
	tcase_add_test(tc, test_ci_no_runtime_is_no_silent_skip);
	tcase_add_test(tc, test_ci_check_failure_fails);
	suite_add_tcase(s, tc);
	return s;
}
