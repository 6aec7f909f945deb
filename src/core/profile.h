/*
 * profile.h - an op's measured profile as a table over (micro-batch, tp)
 * per device type, and its value at any point.
 *
 * The model keeps an op's points (struct tp_profile, core/model.h) in file
 * order.  tp_profile_table picks one device type's points and sorts them
 * by (tp, batch); tp_profile_eval reads the table at a micro-batch and a
 * tensor-parallel degree:
 *   - at a measured point: its figures (TP_PROFILE_MEASURED);
 *   - between measured points: linear in the batch within a tp row, and
 *     linear in 1/tp between the two rows around the degree
 *     (TP_PROFILE_INTERPOLATED);
 *   - beyond the table: the nearest point scaled as the roofline's
 *     compute-bound regime scales, linear in the batch and, for an op
 *     whose work tp divides, by tp_measured / tp (TP_PROFILE_EXTRAPOLATED).
 *     A measured tensor-parallel communication is not extrapolated in tp
 *     (the simulator's collective model takes over).
 * A table of one tp-1 point is the profile of old files: the time scaled
 * linearly in the batch and divided by tp, computed in the same order
 * (samples / batch / tp) so the figures are bit-identical.
 *
 * Scaling of the optional figures: tp communication and activation bytes
 * are per micro-batch (linear in the batch, like the times); the optimizer
 * step and the state bytes do not depend on the batch and are divided by
 * tp like the weights.
 *
 * Nothing here allocates; the caller gives room for op->n_prof indices.
 */
#ifndef TP_CORE_PROFILE_H
#define TP_CORE_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"

enum tp_profile_how {
	TP_PROFILE_NONE,         /* no profile: the roofline estimate */
	TP_PROFILE_MEASURED,     /* a measured point */
	TP_PROFILE_INTERPOLATED, /* between measured points */
	TP_PROFILE_EXTRAPOLATED, /* beyond the table */
	TP_PROFILE_HOW_COUNT
};

/* "roofline", "measured", "interpolated", "extrapolated". */
const char *tp_profile_how_name(enum tp_profile_how h);

/* A table's value at one point.  The optional figures count only where
 * their TP_PROFILE_HAS_* bit is set in has (every point the value was
 * made from had it). */
struct tp_profile_at {
	double forward_s, backward_s;
	unsigned has;
	double tp_comm_s, optimizer_s, activation_bytes, state_bytes;
	enum tp_profile_how how;
};

/* The points of op's profile for the device type named `type`, sorted by
 * (tp, batch), into idx (indices into m->profiles; room for op->n_prof);
 * of two points at the same (tp, batch) the later in the file is kept.
 * Returns the count (0: no profile for the type). */
uint32_t tp_profile_table(const struct tp_model *m, uint32_t op,
			  const char *type, uint32_t *idx);

/* The table idx[0..n) (as tp_profile_table made it, n > 0) at `samples`
 * samples and tensor-parallel degree tp; divides: the op's work is
 * divided among the tp ranks (a split op, or any op under sequence
 * parallelism).  Returns out->how. */
enum tp_profile_how tp_profile_eval(const struct tp_model *m,
				    const uint32_t *idx, uint32_t n,
				    double samples, uint32_t tp, bool divides,
				    struct tp_profile_at *out);

#endif
