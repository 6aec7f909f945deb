/* fuzz_nvsmi.c - libFuzzer target: fz_nvsmi_one (fuzz/harness.h). */
#include "driver.h"

FZ_TARGET(fz_nvsmi_one)
