/* fuzz_weights.c - libFuzzer target: fz_weights_one (fuzz/harness.h). */
#include "driver.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fz_env();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tp_error err;

	fz_report(fz_weights_one(data, size, &err), &err);
	return 0;
}
