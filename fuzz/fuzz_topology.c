/* fuzz_topology.c - libFuzzer target: fz_topology_one (fuzz/harness.h). */
#include "driver.h"

FZ_TARGET(fz_topology_one)
