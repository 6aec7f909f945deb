/* fuzz_runtime.c - libFuzzer target: fz_runtime_one (fuzz/harness.h) on the
 * fixture FZ_STRATEGY_MODEL / FZ_STRATEGY_TOPOLOGY. */
#include "driver.h"

FZ_FIXTURE_TARGET(fz_runtime_one, FZ_STRATEGY_MODEL, FZ_STRATEGY_TOPOLOGY)
