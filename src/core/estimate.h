/*
 * estimate.h - a quick per-op time estimate, without the simulator.
 *
 * The search (src/search/actions.c: group costs that split pipeline
 * stages and weight device sets) and the GNN's features (src/gnn/
 * features.c: group and placement features) both need "how long does this
 * op take on this device type" thousands of times, long before a plan
 * exists.  This is that estimate: the model's profile for the type when
 * it has one, else a roofline with the type's efficiency constants
 * (src/core/cluster.h) at a nominal per-device batch.  It is not the
 * simulator's compute model (src/sim/, calibrated, with the
 * gemm_sustained factor and real micro-batch sizes); it only ranks and
 * weighs.  The GNN's shipped weights were trained on its values: a change
 * here changes the network's inputs.
 *
 * Pure functions; no allocation, no errors.
 */
#ifndef TP_ESTIMATE_H
#define TP_ESTIMATE_H

#include <stdint.h>

#include "cluster.h"
#include "model.h"

/*
 * Seconds per sample of op's forward plus backward on device type t,
 * with batch_hint samples per kernel (the GEMM efficiency curve and the
 * kernel overhead depend on it; > 0).  Missing type constants take
 * middle-of-the-road defaults (GEMM efficiency 0.6, memory bandwidth
 * 500 GB/s, ...).  0 for input ops without a profile.
 */
double tp_estimate_op_time(const struct tp_model *m,
			   const struct tp_cluster *c, uint32_t op, uint32_t t,
			   double batch_hint);

#endif
