/* fuzz_strategy.c - libFuzzer target: fz_strategy_one (fuzz/harness.h) on the
 * fixture FZ_STRATEGY_MODEL / FZ_STRATEGY_TOPOLOGY. */
#include "driver.h"

FZ_FIXTURE_TARGET(fz_strategy_one, FZ_STRATEGY_MODEL, FZ_STRATEGY_TOPOLOGY)
