/* fuzz_pipeline.c - libFuzzer target: fz_pipeline_one (fuzz/harness.h):
 * a fuzzed model and topology loaded, simulated and planned; the fixture
 * FZ_PLAN_MODEL / FZ_PLAN_TOPOLOGY stands in for an empty part. */
#include "driver.h"

FZ_FIXTURE_TARGET(fz_pipeline_one, FZ_PLAN_MODEL, FZ_PLAN_TOPOLOGY)
