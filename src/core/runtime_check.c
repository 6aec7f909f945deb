/*
 * runtime_check.c - can a runtime execute a plan (runtime.h
 * tp_runtime_plan_check)?  The one definition the search's action space,
 * `check` and `export` share: the search generates only plans this
 * accepts, check and export refuse the others with its sentence.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

static const char *const cap_names[TP_CAP_COUNT] = {"tensor_parallel",
						    "pipeline_parallel",
						    "sequence_parallel",
						    "per_stage_degrees",
						    "uneven_shares",
						    "mixed_device_types",
						    "overlapping_groups",
						    "layout",
						    "schedules",
						    "syncs",
						    "recompute",
						    "max_zero",
						    "max_zero_pipelined",
						    "compression",
						    "lossy",
						    "per_group_recompute",
						    "context_parallel",
						    "expert_parallel",
						    "mixed_tp"};

const char *tp_runtime_cap_name(enum tp_runtime_cap c)
{
	return (unsigned)c < TP_CAP_COUNT ? cap_names[c] : "?";
}

int64_t tp_model_layer_count(const struct tp_model *m)
{
	int64_t layers = 0;

	if (m->arch.layers > 0)
		return m->arch.layers;
	for (size_t o = 0; o < m->ops.n; o++)
		if (m->ops.v[o].layer + 1 > layers)
			layers = m->ops.v[o].layer + 1;
	return layers;
}

/* The first need found writes why; every need sets its bit. */
struct needs {
	uint32_t mask;
	char *why;
	size_t size;
	const char *rt;
};

static void need(struct needs *n, enum tp_runtime_cap cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void need(struct needs *n, enum tp_runtime_cap cap, const char *fmt, ...)
{
	if (!n->mask && n->why && n->size) {
		va_list ap;
		int k;
		va_start(ap, fmt);
		k = vsnprintf(n->why, n->size, fmt, ap);
		va_end(ap);
		if (k >= 0 && (size_t)k < n->size)
			snprintf(n->why + k, n->size - (size_t)k,
				 "; %s cannot (%s)", n->rt, cap_names[cap]);
	}
	n->mask |= 1u << cap;
}

static bool same_devs(const struct tp_plan *p, uint32_t a, uint32_t b)
{
	const struct tp_plan_group *ga = &p->groups.v[a], *gb = &p->groups.v[b];
	return ga->n_devices == gb->n_devices &&
	       memcmp(tp_plan_group_devs(p, a), tp_plan_group_devs(p, b),
		      ga->n_devices * sizeof(uint32_t)) == 0;
}

static bool ascending(const uint32_t *d, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++)
		if (d[i] < d[i - 1])
			return false;
	return true;
}

/* Whether groups a and b share a device (tp_devs_meet). */
static bool share_devs(const struct tp_plan *p, uint32_t a, uint32_t b)
{
	const uint32_t *da = tp_plan_group_devs(p, a);
	const uint32_t *db = tp_plan_group_devs(p, b);
	uint32_t na = p->groups.v[a].n_devices, nb = p->groups.v[b].n_devices;

	return tp_devs_meet(da, na, ascending(da, na), db, nb,
			    ascending(db, nb));
}

enum tp_sync tp_runtime_sync(const struct tp_cluster *c, const uint32_t *devs,
			     uint32_t n, uint32_t tp)
{
	uint32_t nodes = 0, prev = TP_NONE, dp = n / (tp ? tp : 1);

	for (uint32_t i = 0; i < n; i++) {
		uint32_t node = devs[i] < c->devices.n
				    ? c->devices.v[devs[i]].node
				    : TP_NONE;
		if (node != prev)
			nodes++;
		prev = node;
	}
	return nodes > 1 && dp > nodes ? TP_SYNC_HIERARCHICAL : TP_SYNC_RING;
}

/* The lowest replica degree of mixed group g. */
static uint32_t mixed_lowest(const struct tp_plan *p, uint32_t g)
{
	uint32_t lo = p->groups.v[g].tp;

	for (uint32_t r = 0; r < p->groups.v[g].dp; r++)
		if (tp_plan_replica_tp(p, g, r) < lo)
			lo = tp_plan_replica_tp(p, g, r);
	return lo;
}

/* Per-group settings: syncs, recomputation, compression, sp, tp, shares. */
static void check_groups(const struct tp_runtime_can *can,
			 const struct tp_plan *p, struct needs *n)
{
	const struct tp_plan_group *g0 = &p->groups.v[0];

	for (uint32_t g = 0; g < p->groups.n; g++) {
		const struct tp_plan_group *gr = &p->groups.v[g];
		const double *sh = tp_plan_group_shares(p, g);

		if (gr->dp > 1 && !(can->syncs & (1u << gr->sync)))
			need(n, TP_CAP_SYNCS,
			     "group %u synchronises gradients by %s", g,
			     tp_sync_name(gr->sync));
		if (!(can->recomputes & (1u << gr->recompute)))
			need(n, TP_CAP_RECOMPUTE, "group %u recomputes %s", g,
			     tp_recompute_name(gr->recompute));
		if (!can->per_group_recompute && gr->recompute != g0->recompute)
			need(n, TP_CAP_PER_GROUP_RECOMPUTE,
			     "group 0 recomputes %s, group %u %s",
			     tp_recompute_name(g0->recompute), g,
			     tp_recompute_name(gr->recompute));
		if (gr->n_sfb && !can->compression)
			need(n, TP_CAP_COMPRESSION,
			     "group %u compresses the gradients of %u ops by "
			     "sufficient-factor broadcasting",
			     g, gr->n_sfb);
		if (!(can->lossy & (1u << gr->lossy)))
			need(n, TP_CAP_LOSSY, "group %u sends %s gradients", g,
			     tp_lossy_name(gr->lossy));
		if (gr->tp > 1 && !can->tensor_parallel)
			need(n, TP_CAP_TENSOR_PARALLEL,
			     "group %u is tensor parallel (tp %u)", g, gr->tp);
		if (gr->mixed && !can->mixed_tp)
			need(n, TP_CAP_MIXED_TP,
			     "group %u holds replicas of different tensor-"
			     "parallel degrees (tp %u to %u; no shipped "
			     "runtime profile runs them, Sailor's runtime "
			     "does: simulate such plans under --runtime "
			     "none)",
			     g, mixed_lowest(p, g), gr->tp);
		if (gr->cp > 1 && !can->context_parallel)
			need(n, TP_CAP_CONTEXT_PARALLEL,
			     "group %u is context parallel (cp %u)", g, gr->cp);
		if (gr->ep > 1 && !can->expert_parallel)
			need(n, TP_CAP_EXPERT_PARALLEL,
			     "group %u is expert parallel (ep %u)", g, gr->ep);
		if (gr->etp == 1 && gr->tp > 1 && !can->expert_parallel)
			need(n, TP_CAP_EXPERT_PARALLEL,
			     "group %u runs its experts whole (etp 1 under "
			     "tp %u)",
			     g, gr->tp);
		if (gr->sp && !can->sequence_parallel)
			need(n, TP_CAP_SEQUENCE_PARALLEL,
			     "group %u uses sequence parallelism", g);
		if (!can->per_stage_degrees &&
		    (gr->tp != g0->tp || gr->dp != g0->dp || gr->sp != g0->sp))
			need(n, TP_CAP_PER_STAGE_DEGREES,
			     "group 0 runs dp %u x tp %u%s, group %u dp %u x "
			     "tp %u%s",
			     g0->dp, g0->tp, g0->sp ? " with sp" : "", g,
			     gr->dp, gr->tp, gr->sp ? " with sp" : "");
		if (!can->uneven_shares) {
			for (uint32_t r = 1; r < gr->dp; r++)
				if (fabs(sh[r] - sh[0]) > 1e-9) {
					need(
					    n, TP_CAP_UNEVEN_SHARES,
					    "group %u gives replica 0 %.3g and "
					    "replica %u %.3g of each "
					    "micro-batch",
					    g, sh[0], r, sh[r]);
					break;
				}
			if (p->micro_batches &&
			    p->global_batch %
				((int64_t)p->micro_batches * gr->dp))
				need(n, TP_CAP_UNEVEN_SHARES,
				     "a micro-batch of %lld samples does not "
				     "split evenly over the %u replicas of "
				     "group %u",
				     (long long)(p->global_batch /
						 p->micro_batches),
				     gr->dp, g);
		}
	}
}

/* Do groups a and b run on the same device list?  From the facts'
 * names of the lists when both have one (tp_runtime_group_facts.list). */
static bool same_list(const struct tp_plan *p,
		      const struct tp_runtime_group_facts *facts, uint32_t a,
		      uint32_t b)
{
	if (facts && facts[a].list != TP_NONE && facts[b].list != TP_NONE)
		return facts[a].list == facts[b].list;
	return same_devs(p, a, b);
}

/* Do groups a and b share a device?  From the facts' ranges where they
 * decide: disjoint, or two dense ones that meet. */
static bool share_list(const struct tp_plan *p,
		       const struct tp_runtime_group_facts *facts, uint32_t a,
		       uint32_t b)
{
	if (facts) {
		const struct tp_runtime_group_facts *fa = &facts[a],
						    *fb = &facts[b];
		if (fa->dev_hi < fb->dev_lo || fb->dev_hi < fa->dev_lo)
			return false;
		if (fa->dense && fb->dense)
			return true;
	}
	return share_devs(p, a, b);
}

/* Groups in model order (by their first op's topological position) into
 * ord[]; false when there are more than TP_RUNTIME_MAX_CHUNKS. */
static bool model_order(const struct tp_plan *p, const struct tp_model *m,
			const struct tp_runtime_group_facts *facts,
			uint32_t *ord, uint32_t *first)
{
	uint32_t ng = (uint32_t)p->groups.n;

	if (ng > TP_RUNTIME_MAX_CHUNKS)
		return false;
	for (uint32_t g = 0; g < ng; g++) {
		const uint32_t *ops = tp_plan_group_ops(p, g);
		uint32_t lo = UINT32_MAX, k;
		if (facts)
			lo = facts[g].first_pos;
		else
			for (uint32_t i = 0; i < p->groups.v[g].n_ops; i++)
				if (ops[i] < m->ops.n &&
				    m->topo_pos[ops[i]] < lo)
					lo = m->topo_pos[ops[i]];
		/* insertion: few groups */
		for (k = g; k > 0 && first[k - 1] > lo; k--) {
			first[k] = first[k - 1];
			ord[k] = ord[k - 1];
		}
		first[k] = lo;
		ord[k] = g;
	}
	return true;
}

/* Chunks and stages (tp_plan_shape); overlapping placements are needs. */
static void check_shape(const struct tp_plan *p, const struct tp_model *m,
			const struct tp_runtime_group_facts *facts,
			struct tp_plan_shape *sh, struct needs *n)
{
	uint32_t ord[TP_RUNTIME_MAX_CHUNKS], first[TP_RUNTIME_MAX_CHUNKS];
	uint32_t chunk_group[TP_RUNTIME_MAX_CHUNKS];
	int32_t lo[TP_RUNTIME_MAX_CHUNKS], hi[TP_RUNTIME_MAX_CHUNKS];
	uint32_t ng = (uint32_t)p->groups.n;

	sh->ok = false;
	if (!model_order(p, m, facts, ord, first)) {
		need(n, TP_CAP_OVERLAPPING_GROUPS,
		     "the plan has %u groups, more than %d pipeline chunks", ng,
		     TP_RUNTIME_MAX_CHUNKS);
		return;
	}
	for (uint32_t i = 0; i < ng; i++) {
		uint32_t g = ord[i], k;
		const uint32_t *ops = tp_plan_group_ops(p, g);
		if (sh->chunks == 0 ||
		    !same_list(p, facts, chunk_group[sh->chunks - 1], g)) {
			k = sh->chunks++;
			chunk_group[k] = g;
			lo[k] = hi[k] = -1;
		}
		k = sh->chunks - 1;
		if (facts) {
			/* the same as the loop below over the group's ops */
			int32_t fl = facts[g].layer_lo, fh = facts[g].layer_hi;
			if (fl >= 0 && (lo[k] < 0 || fl < lo[k]))
				lo[k] = fl;
			if (fl >= 0 && fh > hi[k])
				hi[k] = fh;
			continue;
		}
		for (uint32_t j = 0; j < p->groups.v[g].n_ops; j++) {
			int32_t l =
			    ops[j] < m->ops.n ? m->ops.v[ops[j]].layer : -1;
			if (l < 0)
				continue;
			if (lo[k] < 0 || l < lo[k])
				lo[k] = l;
			if (l > hi[k])
				hi[k] = l;
		}
	}
	/* stages: distinct device lists in order of first use; any other
	   overlap is a placement no pipeline runtime has */
	for (uint32_t k = 0; k < sh->chunks; k++) {
		uint32_t g = chunk_group[k], s;
		for (s = 0; s < sh->pp; s++)
			if (same_list(p, facts, sh->stage_group[s], g))
				break;
		if (s == sh->pp) {
			for (uint32_t t = 0; t < sh->pp; t++)
				if (share_list(p, facts, sh->stage_group[t],
					       g)) {
					need(n, TP_CAP_OVERLAPPING_GROUPS,
					     "group %u shares devices with "
					     "group "
					     "%u on another device set",
					     g, sh->stage_group[t]);
					return;
				}
			sh->stage_group[sh->pp++] = g;
		}
		if (k >= sh->pp && s != k % sh->pp) {
			need(n, TP_CAP_OVERLAPPING_GROUPS,
			     "pipeline chunk %u (group %u) runs on stage %u, "
			     "out of round-robin order (stage %u)",
			     k, g, s, k % sh->pp);
			return;
		}
	}
	if (sh->chunks % sh->pp) {
		need(n, TP_CAP_OVERLAPPING_GROUPS,
		     "%u pipeline chunks on %u stages", sh->chunks, sh->pp);
		return;
	}
	sh->ok = true;
	sh->layers = tp_model_layer_count(m);
	for (uint32_t k = 0; k < sh->chunks; k++) {
		bool split = (k > 0 && lo[k] >= 0 && hi[k - 1] >= 0 &&
			      lo[k] <= hi[k - 1]) ||
			     (k + 1 < sh->chunks && hi[k] >= 0 &&
			      lo[k + 1] >= 0 && hi[k] >= lo[k + 1]);
		sh->chunk_layers[k] = split	  ? -1
				      : lo[k] < 0 ? 0
						  : hi[k] - lo[k] + 1;
	}
}

/* Layers per chunk against the runtime's layout. */
static void check_layout(const struct tp_runtime_can *can,
			 const struct tp_plan_shape *sh, struct needs *n)
{
	uint32_t nc = sh->chunks, V = sh->pp ? nc / sh->pp : 1;
	enum tp_layer_layout want;

	if (nc < 2)
		return;
	if (sh->layers <= 0) {
		need(n, TP_CAP_LAYOUT,
		     "the model labels no layers to split into %u pipeline "
		     "chunks",
		     nc);
		return;
	}
	for (uint32_t k = 0; k < nc; k++)
		if (sh->chunk_layers[k] < 0) {
			need(n, TP_CAP_LAYOUT,
			     "pipeline chunk %u begins or ends inside a layer",
			     k);
			return;
		}
	{
		bool equal = sh->chunk_layers[0] > 0, middle = true;
		for (uint32_t k = 1; k < nc; k++)
			equal &= sh->chunk_layers[k] == sh->chunk_layers[0];
		for (uint32_t k = 2; k + 1 < nc; k++)
			middle &= sh->chunk_layers[k] == sh->chunk_layers[1];
		if (equal)
			want = TP_LAYOUT_EVEN;
		else if (V == 1 && middle && sh->chunk_layers[0] > 0 &&
			 sh->chunk_layers[nc - 1] > 0 &&
			 (nc == 2 || sh->chunk_layers[1] > 0))
			want = TP_LAYOUT_FIRST_LAST;
		else
			want = TP_LAYOUT_ANY;
	}
	if (want > can->layout)
		need(n, TP_CAP_LAYOUT,
		     "pipeline chunks hold %lld, %lld, ... %lld layers (a %s "
		     "layout)",
		     (long long)sh->chunk_layers[0],
		     (long long)sh->chunk_layers[1],
		     (long long)sh->chunk_layers[nc - 1],
		     tp_layer_layout_name(want));
}

/* Nodes left so far by check_ranks (the first 64), kept ascending: a
 * binary search per node change instead of a pass over them. */
struct left_nodes {
	uint32_t v[64], n;
};

static bool left_has(const struct left_nodes *l, uint32_t node)
{
	uint32_t a = 0, b = l->n;

	while (a < b) {
		uint32_t mid = a + (b - a) / 2;
		if (l->v[mid] < node)
			a = mid + 1;
		else
			b = mid;
	}
	return a < l->n && l->v[a] == node;
}

static void left_add(struct left_nodes *l, uint32_t node)
{
	uint32_t k = l->n++;

	for (; k > 0 && l->v[k - 1] > node; k--)
		l->v[k] = l->v[k - 1];
	l->v[k] = node;
}

/* Ranks: the stages' device lists one after the other; a launcher starts
 * them node by node, so each node's devices must be one run of ranks.
 * The nodes of a stage's devices from the facts' runs when given. */
static void check_ranks(const struct tp_plan *p, const struct tp_cluster *c,
			const struct tp_runtime_group_facts *facts,
			const struct tp_plan_shape *sh, struct needs *n)
{
	uint32_t prev_node = TP_NONE;
	struct left_nodes done; /* nodes already left (the first 64) */

	done.n = 0;
	for (uint32_t s = 0; s < sh->pp; s++) {
		uint32_t g = sh->stage_group[s];
		const uint32_t *d = tp_plan_group_devs(p, g);
		const uint32_t *runs = facts ? facts[g].nodes : NULL;
		uint32_t count = runs ? facts[g].n_nodes
				      : p->groups.v[g].n_devices;
		for (uint32_t i = 0; i < count; i++) {
			uint32_t node = runs		   ? runs[i]
					: d[i] < c->devices.n ? c->devices.v[d[i]].node
							      : TP_NONE;
			if (node == prev_node)
				continue;
			if (left_has(&done, node)) {
				need(n, TP_CAP_OVERLAPPING_GROUPS,
				     "stage %u returns to node %s after "
				     "other nodes: a launcher starts a "
				     "node's ranks together",
				     s, c->nodes.v[node].name);
				return;
			}
			if (prev_node != TP_NONE && done.n < 64)
				left_add(&done, prev_node);
			prev_node = node;
		}
	}
}

uint32_t
tp_runtime_plan_check(const struct tp_runtime *rt, const struct tp_plan *p,
		      const struct tp_model *m, const struct tp_cluster *c,
		      struct tp_plan_shape *shape, char *why, size_t why_size)
{
	return tp_runtime_plan_check_facts(rt, p, m, c, NULL, shape, why,
					   why_size);
}

/* Is the plan on more than one device type?  From the facts when given
 * (a group of several types, or two groups of different ones), else
 * device by device (a device out of range counts as another type once
 * a type is seen). */
static bool mixed_types(const struct tp_plan *p, const struct tp_cluster *c,
			const struct tp_runtime_group_facts *facts)
{
	uint32_t type = TP_NONE;

	for (uint32_t g = 0; g < p->groups.n; g++) {
		const uint32_t *d = tp_plan_group_devs(p, g);
		if (facts) {
			if (!p->groups.v[g].n_devices)
				continue;
			if (facts[g].type == TP_NONE)
				return true;
			if (type == TP_NONE)
				type = facts[g].type;
			else if (facts[g].type != type)
				return true;
			continue;
		}
		for (uint32_t i = 0; i < p->groups.v[g].n_devices; i++) {
			uint32_t t = d[i] < c->devices.n
					 ? c->devices.v[d[i]].type
					 : TP_NONE;
			if (type == TP_NONE)
				type = t;
			else if (t != type)
				return true;
		}
	}
	return false;
}

uint32_t tp_runtime_plan_check_facts(
    const struct tp_runtime *rt, const struct tp_plan *p,
    const struct tp_model *m, const struct tp_cluster *c,
    const struct tp_runtime_group_facts *facts, struct tp_plan_shape *shape,
    char *why, size_t why_size)
{
	const struct tp_runtime_can *can = &rt->can;
	struct tp_plan_shape local;
	struct tp_plan_shape *sh = shape ? shape : &local;
	struct needs n = {0, why, why_size, rt->name};
	bool mixed;

	memset(sh, 0, sizeof(*sh));
	if (why && why_size)
		why[0] = '\0';
	if (p->groups.n == 0)
		return 0;
	check_shape(p, m, facts, sh, &n);
	mixed = mixed_types(p, c, facts);
	{
		/* devices holding a group (a device in several groups once) */
		uint32_t used = 0;
		for (uint32_t s = 0; sh->ok && s < sh->pp; s++)
			used += p->groups.v[sh->stage_group[s]].n_devices;
		sh->used = used;
	}
	if (tp_runtime_is_none(rt)) {
		if (why && why_size)
			why[0] = '\0';
		return 0;
	}
	check_groups(can, p, &n);
	if (sh->ok) {
		if (sh->pp > 1 && !can->pipeline_parallel)
			need(&n, TP_CAP_PIPELINE_PARALLEL,
			     "the plan pipelines over %u stages", sh->pp);
		if (sh->pp > 1 && !(can->schedules & (1u << p->schedule)))
			need(&n, TP_CAP_SCHEDULES,
			     "the plan runs the %s schedule",
			     tp_schedule_name(p->schedule));
		if (sh->chunks > sh->pp &&
		    !(can->schedules & (1u << TP_SCHEDULE_INTERLEAVED)))
			need(&n, TP_CAP_SCHEDULES,
			     "the plan interleaves %u chunks per stage",
			     sh->chunks / sh->pp);
		if (sh->pp > 1 && p->zero > can->max_zero_pipelined)
			need(&n, TP_CAP_MAX_ZERO_PIPELINED,
			     "ZeRO stage %u with %u pipeline stages", p->zero,
			     sh->pp);
		check_layout(can, sh, &n);
		check_ranks(p, c, facts, sh, &n);
	}
	if (p->zero > can->max_zero)
		need(&n, TP_CAP_MAX_ZERO, "ZeRO stage %u", p->zero);
	if (mixed && !can->mixed_device_types)
		need(&n, TP_CAP_MIXED_DEVICE_TYPES,
		     "the plan runs on more than one device type");
	return n.mask;
}

/* A transformer: labelled layers and attention. */
static bool is_transformer(const struct tp_model *m)
{
	bool attn = false;

	for (size_t o = 0; o < m->ops.n && !attn; o++)
		attn = m->ops.v[o].kind == TP_OP_ATTENTION;
	return attn && tp_model_layer_count(m) > 0;
}

bool tp_runtime_builds(const struct tp_runtime *rt, const struct tp_model *m,
		       char *why, size_t why_size)
{
	const struct tp_arch *a = &m->arch;

	if (why && why_size)
		why[0] = '\0';
	switch (rt->can.models) {
	case TP_MODELS_ANY:
		return true;
	case TP_MODELS_TRANSFORMERS:
		if (is_transformer(m))
			return true;
		if (why && why_size)
			snprintf(why, why_size,
				 "%s builds transformer models from its flags; "
				 "%s has no attention layers",
				 rt->name, m->name ? m->name : "the model");
		return false;
	case TP_MODELS_LLAMA:
		if (is_transformer(m) && a->experts == 0 &&
		    a->activation == TP_ACT_SWIGLU &&
		    a->norm == TP_NORM_RMSNORM && a->position == TP_POS_ROPE &&
		    a->stack != TP_STACK_ENCODER &&
		    a->stack != TP_STACK_ENCODER_DECODER)
			return true;
		if (why && why_size)
			snprintf(
			    why, why_size,
			    "%s builds dense Llama-style decoders (SwiGLU, "
			    "RMSNorm, RoPE); %s is %s%s%s%s%s",
			    rt->name, m->name ? m->name : "the model",
			    is_transformer(m) ? "a transformer with "
					      : "no transformer",
			    is_transformer(m) ? tp_act_name(a->activation) : "",
			    is_transformer(m) ? ", " : "",
			    is_transformer(m) ? tp_norm_name(a->norm) : "",
			    is_transformer(m)
				? (a->position == TP_POS_ROPE ? ", rope"
							      : ", no rope")
				: "");
		return false;
	default:
		return false;
	}
}

const char *tp_runtime_default_name(const struct tp_model *m)
{
	return is_transformer(m) ? "megatron-core" : "ddp";
}
