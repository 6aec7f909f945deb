/* fuzz_hf.c - libFuzzer target: fz_hf_one (fuzz/harness.h). */
#include "driver.h"

FZ_TARGET(fz_hf_one)
