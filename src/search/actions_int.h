/*
 * actions_int.h - the action space's private parts shared by its files:
 * the per-thread scratch (actions.c materialises plans in it) and the
 * runtime check's memo kept in it (runnable.c).  Not for other modules.
 */
#ifndef TP_ACTIONS_INT_H
#define TP_ACTIONS_INT_H

#include "actions.h"

struct tp_space_scratch {
	uint32_t n_dev;
	double *static_b; /* per device: weights, gradients, optimizer */
	double *act_b;    /* per device: activation bytes at the first split */
	double *fit;      /* per device: scale factor that would fit */
	uint32_t *stage;  /* per run: pipeline stage */
	uint32_t *run_first; /* per run: first coarse group */
	double *speed;    /* per replica */
	double *cap;      /* per replica */
	int64_t *samples; /* per replica */
	uint32_t *order;  /* per replica, for largest remainders */
	double *rem;
	uint32_t cap_rep; /* capacity of the per-replica arrays */
	/* interleaving */
	struct tp_decision *idec; /* per group: the re-cut decisions */
	uint32_t *chunk;          /* per group: its chunk */
	uint32_t *stage_set;      /* per stage: its device set */
	struct tp_decision *stage_dec; /* per stage: its first decision */
	double *stage_w;          /* per stage: weight of its groups */
	uint32_t ip, iv;          /* stages and chunks per stage (0: none) */
	/* runtime checks (tp_space_runnable, tp_space_level_actions) */
	struct tp_plan check;
	struct tp_decision *cand; /* per group: a candidate's state */
	struct rmemo *memo;       /* their answers (NULL until needed) */
	/* per plan group of the last plan materialised in a constrained
	   space: what tp_runtime_plan_check_facts reads of its ops and
	   devices (a plan has at most K groups) */
	struct tp_runtime_group_facts *facts;
};

/*
 * The runtime check's answers by (globals, decision vector): a
 * direct-mapped table of RMEMO_SLOTS slots (fewer when K is large: at
 * most RMEMO_BYTES of keys), each the whole key (gl and the K
 * decisions, compared byte for byte: a hash alone could collide) and
 * whether the runtime executes its plan.  The answer is a function of
 * the key, the space and its runtime; the table is for one space and
 * one tp_space_set_runtime of it (space, rt_gen) and empties when
 * either changes.  A new key overwrites its slot.  Measured on
 * `tagplan plan` (megatron-core, --time-limit 3, 1 thread): 27-88% of
 * the checks repeat a key seen before (src/search/README, "The runtime
 * check's memo").
 */
#define RMEMO_SLOTS 4096u
#define RMEMO_BYTES ((size_t)2 << 20)
struct rmemo {
	const struct tp_space *space;
	uint32_t rt_gen, cap, K; /* cap: slots, a power of two */
	uint64_t *hash;
	uint8_t *ok;             /* 0 empty, 1 not runnable, 2 runnable */
	struct tp_globals *gl;
	struct tp_decision *dec; /* slot i: dec[i * K .. (i + 1) * K) */
};

/* Frees a memo (runnable.c); NULL is a no-op. */
void space_memo_free(struct rmemo *r);

#endif
