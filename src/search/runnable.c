/*
 * runnable.c - which candidates a runtime executes: tp_space_runnable
 * (materialise, then the runtime's check with the groups' facts) through
 * the scratch's memo of earlier answers, and tp_space_level_actions,
 * the candidates of a level that pass it (src/search/README, "Runtimes"
 * and "The runtime check's memo").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions_int.h"

void space_memo_free(struct rmemo *r)
{
	if (!r)
		return;
	free(r->hash);
	free(r->ok);
	free(r->gl);
	free(r->dec);
	free(r);
}

/* The memo of scr for s as it is now, emptied when it was another's
 * (or s's under another runtime); NULL when out of memory (the caller
 * then checks without it). */
static struct rmemo *rmemo_get(const struct tp_space *s,
			       struct tp_space_scratch *scr)
{
	struct rmemo *r = scr->memo;
	uint32_t K = s->groups->n ? s->groups->n : 1, cap = RMEMO_SLOTS;

	while (cap > 64 && (size_t)cap * K * sizeof(struct tp_decision) >
				   RMEMO_BYTES)
		cap /= 2;
	if (r && (r->K != K || r->cap != cap)) {
		space_memo_free(r);
		r = scr->memo = NULL;
	}
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return NULL;
		r->cap = cap;
		r->K = K;
		r->hash = tp_calloc(cap, sizeof(*r->hash));
		r->ok = tp_calloc(cap, sizeof(*r->ok));
		r->gl = tp_calloc(cap, sizeof(*r->gl));
		r->dec = tp_calloc((size_t)cap * K, sizeof(*r->dec));
		if (!r->hash || !r->ok || !r->gl || !r->dec) {
			space_memo_free(r);
			return NULL;
		}
		scr->memo = r;
	} else if (r->space != s || r->rt_gen != s->rt_gen) {
		memset(r->ok, 0, r->cap * sizeof(*r->ok));
	}
	r->space = s;
	r->rt_gen = s->rt_gen;
	return r;
}

/* Raw candidates a level generates under a runtime before the ones it
 * cannot execute are dropped (tp_space_level_actions). */
#define RAW_ACTIONS 256

/* The runtime check itself: materialise, then tp_runtime_plan_check. */
static bool check_runnable(const struct tp_space *s,
			   const struct tp_globals *gl,
			   const struct tp_decision *state,
			   struct tp_space_scratch *scr, char *why,
			   size_t why_size)
{
	struct tp_error e;

	if (tp_space_materialize(s, gl, state, TP_COMPRESSION_OFF, scr,
				 &scr->check, &e)) {
		if (why && why_size)
			snprintf(why, why_size, "%s", e.msg);
		return false;
	}
	return tp_runtime_plan_check_facts(&s->rt, &scr->check, s->model,
					   s->cluster, scr->facts, NULL, why,
					   why_size) == 0;
}

/* tp_space_runnable of a constrained space without a reason, through
 * scr's memo; h = tp_space_hash(s, gl, state). */
static bool memo_runnable(const struct tp_space *s,
			  const struct tp_globals *gl,
			  const struct tp_decision *state,
			  struct tp_space_scratch *scr, uint64_t h)
{
	struct rmemo *r = rmemo_get(s, scr);
	uint32_t i, K = s->groups->n;
	bool ok;

	if (!r) /* out of memory: check without it */
		return check_runnable(s, gl, state, scr, NULL, 0);
	i = (uint32_t)(h ^ (h >> 32)) & (r->cap - 1);
	if (r->ok[i] && r->hash[i] == h &&
	    !memcmp(&r->gl[i], gl, sizeof(*gl)) &&
	    (!K || !memcmp(r->dec + (size_t)i * r->K, state,
			   K * sizeof(*state))))
		return r->ok[i] == 2;
	ok = check_runnable(s, gl, state, scr, NULL, 0);
	r->hash[i] = h;
	r->gl[i] = *gl;
	if (K)
		memcpy(r->dec + (size_t)i * r->K, state, K * sizeof(*state));
	r->ok[i] = ok ? 2 : 1;
	return ok;
}

bool tp_space_runnable(const struct tp_space *s, const struct tp_globals *gl,
		       const struct tp_decision *state,
		       struct tp_space_scratch *scr, char *why,
		       size_t why_size)
{
	if (why && why_size)
		why[0] = '\0';
	if (!s->constrained)
		return true;
	if (why && why_size) /* the memo keeps no reasons */
		return check_runnable(s, gl, state, scr, why, why_size);
	return memo_runnable(s, gl, state, scr, tp_space_hash(s, gl, state));
}

uint32_t tp_space_level_actions(const struct tp_space *s, uint32_t level,
				const struct tp_globals *gl,
				const struct tp_decision *state,
				struct tp_action *out, uint32_t cap,
				struct tp_space_scratch *scr)
{
	struct tp_action raw[RAW_ACTIONS];
	uint64_t keys[RAW_ACTIONS];
	uint32_t n, kept = 0, K = s->groups->n;

	if (!s->constrained) {
		if (level == 0)
			return tp_space_global_actions(s, gl, state, out, cap);
		return tp_space_group_actions(s, level - 1, state, gl, out,
					      cap);
	}
	n = level == 0 ? tp_space_global_actions(s, gl, state, raw,
						 RAW_ACTIONS)
		       : tp_space_group_actions(s, level - 1, state, gl, raw,
						RAW_ACTIONS);
	for (uint32_t i = 0; i < n && kept < cap; i++) {
		struct tp_globals g2 = *gl;
		uint64_t key;
		bool dup = false;
		memcpy(scr->cand, state, K * sizeof(*state));
		if (level == 0)
			g2 = raw[i].g;
		else
			tp_space_apply(s, level - 1, &raw[i], gl, scr->cand);
		key = tp_space_hash(s, &g2, scr->cand);
		for (uint32_t j = 0; j < kept && !dup; j++)
			dup = keys[j] == key;
		/* the first keeps the state: always a candidate */
		if (dup ||
		    (i > 0 && !memo_runnable(s, &g2, scr->cand, scr, key)))
			continue;
		keys[kept] = key;
		out[kept++] = raw[i];
	}
	return kept;
}
