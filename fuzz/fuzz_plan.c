/* fuzz_plan.c - libFuzzer target: fz_plan_one (fuzz/harness.h) on the
 * fixture FZ_PLAN_MODEL / FZ_PLAN_TOPOLOGY. */
#include "driver.h"

static struct fz_fixture fixture;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_env();
	fz_fixture_or_exit(&fixture, FZ_PLAN_MODEL, FZ_PLAN_TOPOLOGY);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tp_error err;

	fz_report(fz_plan_one(&fixture, data, size, &err), &err);
	return 0;
}
