/*
 * sfb_int.h - private to src/compress/: the per-thread scratch of the
 * compression selection.
 */
#ifndef TP_SFB_INT_H
#define TP_SFB_INT_H

#include "core/plan.h"
#include "core/report.h"
#include "core/vec.h"
#include "mincut.h"
#include "sfb.h"

struct tp_sfb_pair {
	uint32_t tensor, cand;
	double bytes;
};

struct tp_sfb_scratch {
	struct tp_energy e;
	uint32_t *local;     /* per op: candidate index in the group, or NONE */
	uint32_t *tensor_of; /* per op: activation index, or NONE */
	uint32_t *entry;     /* per op: action index, or NONE */
	uint32_t *chan;      /* per channel: concurrent flows */
	uint32_t *flow_a, *flow_b; /* flows of a collective */
	size_t cap_flows;
	TP_VEC(struct tp_sfb_pair) pairs;
	TP_VEC(uint32_t) last_reader, last_pair;
	TP_VEC(uint32_t) count;
	TP_VEC(uint8_t) x, vars;
	TP_VEC(uint32_t) pool; /* new sfb pool */
	struct tp_sfb_costs k;
};

#endif
