/* fuzz_devices.c - libFuzzer target: fz_devices_one (fuzz/harness.h). */
#include "driver.h"

FZ_TARGET(fz_devices_one)
