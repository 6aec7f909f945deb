/* fuzz_runs.c - libFuzzer target: fz_runs_one (fuzz/harness.h). */
#include "driver.h"

FZ_TARGET(fz_runs_one)
