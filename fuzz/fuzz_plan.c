/* fuzz_plan.c - libFuzzer target: fz_plan_one (fuzz/harness.h) on the
 * fixture FZ_PLAN_MODEL / FZ_PLAN_TOPOLOGY. */
#include "driver.h"

FZ_FIXTURE_TARGET(fz_plan_one, FZ_PLAN_MODEL, FZ_PLAN_TOPOLOGY)
