/* fuzz_report.c - libFuzzer target: fz_report_one (fuzz/harness.h). */
#include "driver.h"

FZ_TARGET(fz_report_one)
