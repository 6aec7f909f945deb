/* fuzz_model.c - libFuzzer target: fz_model_one (fuzz/harness.h). */
#include "driver.h"

FZ_TARGET(fz_model_one)
