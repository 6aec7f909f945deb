/*
 * estimate.h - a quick per-op time estimate, without the simulator.
 *
 * The search (src/search/actions.c: group costs that split pipeline
 * stages and weight device sets) and the GNN's features (src/gnn/
 * features.c: group and placement features) both need "how long does this
 * op take on this device type" thousands of times, long before a plan
 * exists.  This is that estimate: the model's profile for the type when
 * it has one, else a roofline built from cost.h (the type's figures with
 * their defaults, the GEMM efficiency curve at a nominal per-device
 * batch, memory time) with the estimate's constants of
 * tp_cost_constants.  It is not the simulator's compute model (src/sim/,
 * calibrated, with the gemm_sustained factor, vector work at the FP32
 * peak and real micro-batch sizes); it only ranks and weighs.  The GNN's
 * shipped weights were trained on its values: a change here changes the
 * network's inputs (which is why it still prices the MoE router as
 * vector work and reads a kernel overhead of 0 as unset, estimate.c).
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
 * kernel overhead depend on it; > 0).  Unset type constants take the
 * defaults of tp_cost_constants, as in the simulator.  0 for input ops
 * without a profile.
 */
double tp_estimate_op_time(const struct tp_model *m,
			   const struct tp_cluster *c, uint32_t op, uint32_t t,
			   double batch_hint);

#endif
