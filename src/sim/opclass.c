/*
 * opclass.c - op cost classes (sim->op_cls): ops whose every input of
 * cost.c's op_lane (op_cost and the op's bytes) is equal, so that a
 * lane prices each class once (cost.c op_lane_memo; README, Speed).
 */
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

/* The inputs cost.c's op_lane (and op_cost) reads of op o.  Doubles compare bit for
 * bit, so ops of one class compute the same bits. */

struct opkey {
	enum tp_op_kind kind;
	enum tp_tp_split split;
	double flop, bflop, param, out, mem, in, saved;
	bool norm_fed; /* a norm feeds it (fp8_casts) */
	bool expert;   /* a routed expert's (lane_costs' ep branch) */
};

static struct opkey op_key(const struct tp_sim *sim, uint32_t o)
{
	const struct tp_model *m = sim->m;
	const struct tp_op *op = &m->ops.v[o];
	const uint32_t *in = tp_model_in_edges(m, o);
	struct opkey k;

	memset(&k, 0, sizeof(k));
	k.kind = op->kind;
	k.split = op->tp_split;
	k.flop = op->flop;
	k.bflop = op->backward_flop;
	k.param = op->param_bytes;
	k.out = op->out_bytes;
	k.mem = op->mem_bytes;
	k.saved = op->saved_bytes;
	k.in = sim->in_bytes[o];
	for (uint32_t e = 0; e < op->n_in; e++)
		if (m->ops.v[m->edges.v[in[e]].src].kind == TP_OP_NORM)
			k.norm_fed = true;
	k.expert = sim->expert[o] >= 0;
	return k;
}

static bool op_key_same(const struct opkey *a, const struct opkey *b)
{
	return a->kind == b->kind && a->split == b->split &&
	       dbl_bits(a->flop) == dbl_bits(b->flop) &&
	       dbl_bits(a->bflop) == dbl_bits(b->bflop) &&
	       dbl_bits(a->param) == dbl_bits(b->param) &&
	       dbl_bits(a->out) == dbl_bits(b->out) &&
	       dbl_bits(a->mem) == dbl_bits(b->mem) &&
	       dbl_bits(a->saved) == dbl_bits(b->saved) &&
	       dbl_bits(a->in) == dbl_bits(b->in) && a->norm_fed == b->norm_fed &&
	       a->expert == b->expert;
}

static uint64_t op_key_hash(const struct opkey *k)
{
	uint64_t h = 0x13198a2e03707344ull;

	h = hash_mix(h, ((uint64_t)k->kind << 8) | (uint64_t)k->split);
	h = hash_mix(h, dbl_bits(k->flop));
	h = hash_mix(h, dbl_bits(k->bflop));
	h = hash_mix(h, dbl_bits(k->param));
	h = hash_mix(h, dbl_bits(k->out));
	h = hash_mix(h, dbl_bits(k->mem));
	h = hash_mix(h, dbl_bits(k->saved));
	h = hash_mix(h, dbl_bits(k->in));
	return hash_mix(h, ((uint64_t)k->norm_fed << 1) | k->expert);
}

int tp_sim_op_classes(struct tp_sim *sim)
{
	uint32_t n = sim->n_ops, cap = 2, *tab, *rep;
	struct opkey *keys;

	while (cap < 2 * n)
		cap *= 2;
	sim->op_cls = tp_calloc((size_t)n + 1, sizeof(*sim->op_cls));
	tab = malloc((size_t)cap * sizeof(*tab));
	rep = tp_calloc((size_t)n + 1, sizeof(*rep));
	keys = tp_calloc((size_t)n + 1, sizeof(*keys));
	if (!sim->op_cls || !tab || !rep || !keys) {
		free(tab);
		free(rep);
		free(keys);
		return -1;
	}
	for (uint32_t i = 0; i < cap; i++)
		tab[i] = TP_NONE;
	sim->n_cls = 0;
	for (uint32_t o = 0; o < n; o++) {
		uint32_t slot;
		uint64_t h;

		if (sim->m->ops.v[o].n_prof) {
			/* profiled: its own tables (TP_SIM_PROF) */
			sim->op_cls[o] = sim->n_cls++;
			continue;
		}
		keys[o] = op_key(sim, o);
		h = op_key_hash(&keys[o]);
		for (slot = (uint32_t)(h ^ (h >> 32)) & (cap - 1);
		     tab[slot] != TP_NONE; slot = (slot + 1) & (cap - 1))
			if (op_key_same(&keys[rep[tab[slot]]], &keys[o]))
				break;
		if (tab[slot] == TP_NONE) {
			tab[slot] = sim->n_cls;
			rep[sim->n_cls++] = o;
		}
		sim->op_cls[o] = tab[slot];
	}
	free(tab);
	free(rep);
	free(keys);
	return 0;
}

void tp_sim_op_classes_next(const struct tp_sim *sim,
			    struct tp_sim_scratch *s)
{
	if (!s->oc_memo)
		return;
	if (++s->oc_gen == 0) {
		memset(s->oc_seen, 0, (size_t)sim->n_cls * sizeof(*s->oc_seen));
		s->oc_gen = 1;
	}
}
