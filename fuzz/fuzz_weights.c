/* fuzz_weights.c - libFuzzer target: fz_weights_one (fuzz/harness.h). */
#include "driver.h"

FZ_TARGET(fz_weights_one)
