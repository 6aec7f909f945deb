/*
 * main.c - the test runner: runs every suite found in the tests folder (the
 * Makefile collects each `Suite *suite_NAME(void)` into suites.h).
 */
#include <check.h>
#include <stdlib.h>

#define TP_SUITE(fn) Suite *fn(void);
#include "suites.h"
#undef TP_SUITE

int main(void)
{
	SRunner *sr = srunner_create(NULL);
	int failed;

#define TP_SUITE(fn) srunner_add_suite(sr, fn());
#include "suites.h"
#undef TP_SUITE
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
