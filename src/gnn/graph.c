/*
 * graph.c - storage and incremental construction of GNN inputs
 * (see graph.h).
 */
#include "graph.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static const int node_src[TP_GNN_ETYPES] = {0, 0, 1, 0, 1};
static const int node_dst[TP_GNN_ETYPES] = {0, 0, 1, 1, 0};

void tp_gnn_graph_init(struct tp_gnn_graph *g, const struct tp_gnn_widths *w)
{
	memset(g, 0, sizeof(*g));
	g->w = *w;
}

static void edges_free(struct tp_gnn_graph_edges *e)
{
	tp_vec_free(&e->src);
	tp_vec_free(&e->dst);
	tp_vec_free(&e->x);
	tp_vec_free(&e->first);
	tp_vec_free(&e->pos);
	tp_vec_free(&e->tmp);
	tp_vec_free(&e->tmpx);
}

void tp_gnn_graph_release(struct tp_gnn_graph *g)
{
	if (!g)
		return;
	tp_vec_free(&g->group_x);
	tp_vec_free(&g->device_x);
	tp_vec_free(&g->global_x);
	for (int t = 0; t < TP_GNN_ETYPES; t++)
		edges_free(&g->e[t]);
	tp_vec_free(&g->act_first);
	tp_vec_free(&g->act_member);
	tp_vec_free(&g->act_weight);
	tp_vec_free(&g->act_x);
}

static int resize_f(void *vec, size_t n)
{
	TP_VEC(float) *v = vec;
	v->n = 0;
	if (tp_vec_reserve(v, n ? n : 1))
		return -1;
	v->n = n;
	memset(v->v, 0, n * sizeof(float));
	return 0;
}

enum tp_status tp_gnn_graph_reset(struct tp_gnn_graph *g, uint32_t n_groups,
				  uint32_t n_devices, struct tp_error *err)
{
	g->n_groups = n_groups;
	g->n_devices = n_devices;
	g->group = 0;
	g->sorted = false;
	if (resize_f(&g->group_x, (size_t)n_groups * g->w.group) ||
	    resize_f(&g->device_x, (size_t)n_devices * g->w.device) ||
	    resize_f(&g->global_x, g->w.global))
		return tp_error_set(err, TP_ENOMEM,
				    "out of memory for the GNN graph");
	for (int t = 0; t < TP_GNN_ETYPES; t++) {
		g->e[t].src.n = g->e[t].dst.n = g->e[t].x.n = 0;
		g->e[t].first.n = g->e[t].pos.n = 0;
	}
	tp_gnn_graph_clear_actions(g);
	return TP_OK;
}

uint32_t tp_gnn_graph_add_edge(struct tp_gnn_graph *g,
			       enum tp_gnn_etype type, uint32_t src,
			       uint32_t dst, const float *x)
{
	struct tp_gnn_graph_edges *e = &g->e[type];
	uint32_t fw = g->w.edge[type];
	uint32_t nn[2] = {g->n_groups, g->n_devices};

	assert(src < nn[node_src[type]] && dst < nn[node_dst[type]]);
	(void)nn;
	if (e->src.n >= UINT32_MAX - 1 || tp_vec_push(&e->src, src) ||
	    tp_vec_push(&e->dst, dst) || tp_vec_reserve(&e->x, fw)) {
		e->src.n = e->dst.n; /* keep the arrays consistent */
		return UINT32_MAX;
	}
	if (x)
		memcpy(e->x.v + e->x.n, x, fw * sizeof(float));
	else
		memset(e->x.v + e->x.n, 0, fw * sizeof(float));
	e->x.n += fw;
	g->sorted = false;
	return (uint32_t)(e->src.n - 1);
}

void tp_gnn_graph_clear_actions(struct tp_gnn_graph *g)
{
	g->act_first.n = 0;
	g->act_member.n = 0;
	g->act_weight.n = 0;
	g->act_x.n = 0;
}

enum tp_status tp_gnn_graph_add_action(struct tp_gnn_graph *g,
				       const uint32_t *devs,
				       const float *weights, uint32_t n,
				       const float *x, struct tp_error *err)
{
	if (g->act_first.n == 0 && tp_vec_push(&g->act_first, 0))
		goto nomem;
	if (tp_vec_reserve(&g->act_member, n) ||
	    tp_vec_reserve(&g->act_weight, n) ||
	    tp_vec_reserve(&g->act_x, g->w.action) ||
	    tp_vec_reserve(&g->act_first, 1))
		goto nomem;
	for (uint32_t i = 0; i < n; i++) {
		assert(devs[i] < g->n_devices);
		g->act_member.v[g->act_member.n++] = devs[i];
		g->act_weight.v[g->act_weight.n++] = weights ? weights[i]
							     : 1.0f;
	}
	memcpy(g->act_x.v + g->act_x.n, x, g->w.action * sizeof(float));
	g->act_x.n += g->w.action;
	g->act_first.v[g->act_first.n++] = (uint32_t)g->act_member.n;
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory for GNN actions");
}

/* Stable counting sort of one edge type by destination. */
static int sort_edges(struct tp_gnn_graph_edges *e, uint32_t n_dst,
		      uint32_t fw)
{
	size_t n = e->src.n;
	uint32_t *src2, *cursor;
	float *x2;

	e->first.n = 0;
	e->pos.n = 0;
	e->tmp.n = 0;
	e->tmpx.n = 0;
	if (tp_vec_reserve(&e->first, (size_t)n_dst + 1) ||
	    tp_vec_reserve(&e->pos, n + 1) ||
	    tp_vec_reserve(&e->tmp, n + (size_t)n_dst + 1) ||
	    tp_vec_reserve(&e->tmpx, n * fw + 1))
		return -1;
	src2 = e->tmp.v;
	cursor = e->tmp.v + n;
	x2 = e->tmpx.v;
	memset(e->first.v, 0, ((size_t)n_dst + 1) * sizeof(uint32_t));
	e->first.n = (size_t)n_dst + 1;
	for (size_t k = 0; k < n; k++)
		e->first.v[e->dst.v[k] + 1]++;
	for (uint32_t v = 0; v < n_dst; v++)
		e->first.v[v + 1] += e->first.v[v];
	memcpy(cursor, e->first.v, n_dst * sizeof(uint32_t));
	for (size_t k = 0; k < n; k++)
		e->pos.v[k] = cursor[e->dst.v[k]]++;
	e->pos.n = n;
	for (size_t k = 0; k < n; k++) {
		src2[e->pos.v[k]] = e->src.v[k];
		memcpy(x2 + (size_t)e->pos.v[k] * fw, e->x.v + k * fw,
		       fw * sizeof(float));
	}
	if (n) {
		memcpy(e->src.v, src2, n * sizeof(uint32_t));
		memcpy(e->x.v, x2, n * fw * sizeof(float));
	}
	for (uint32_t v = 0; v < n_dst; v++)
		for (uint32_t k = e->first.v[v]; k < e->first.v[v + 1]; k++)
			e->dst.v[k] = v;
	return 0;
}

enum tp_status tp_gnn_graph_finish(struct tp_gnn_graph *g,
				   struct tp_gnn_input *in,
				   struct tp_error *err)
{
	uint32_t nn[2] = {g->n_groups, g->n_devices};

	if (!g->sorted) {
		for (int t = 0; t < TP_GNN_ETYPES; t++)
			if (sort_edges(&g->e[t], nn[node_dst[t]],
				       g->w.edge[t]))
				return tp_error_set(err, TP_ENOMEM,
						    "out of memory sorting "
						    "GNN edges");
		g->sorted = true;
	}
	memset(in, 0, sizeof(*in));
	in->n_groups = g->n_groups;
	in->n_devices = g->n_devices;
	in->group_x = tp_tensor_view(g->group_x.v, g->n_groups, g->w.group);
	in->device_x = tp_tensor_view(g->device_x.v, g->n_devices,
				      g->w.device);
	for (int t = 0; t < TP_GNN_ETYPES; t++) {
		struct tp_gnn_graph_edges *e = &g->e[t];
		in->edges[t].n_src = nn[node_src[t]];
		in->edges[t].n_dst = nn[node_dst[t]];
		in->edges[t].n = (uint32_t)e->src.n;
		in->edges[t].src = e->src.v;
		in->edges[t].dst = e->dst.v;
		in->edges[t].dst_first = e->first.v;
		in->edge_x[t] = tp_tensor_view(e->x.v, (uint32_t)e->src.n,
					       g->w.edge[t]);
		in->edges[t].dense = tp_ad_edges_is_dense(&in->edges[t]);
	}
	in->global_x = g->global_x.v;
	in->group = g->group;
	in->n_actions = g->act_first.n ? (uint32_t)g->act_first.n - 1 : 0;
	in->actions.n = in->n_actions;
	in->actions.first = g->act_first.v;
	in->actions.member = g->act_member.v;
	in->actions.weight = g->act_weight.v;
	in->action_x = tp_tensor_view(g->act_x.v, in->n_actions, g->w.action);
	return TP_OK;
}

static float unif(struct tp_rng *rng)
{
	return (float)(2.0 * tp_rng_uniform(rng) - 1.0);
}

enum tp_status tp_gnn_graph_random(struct tp_gnn_graph *g, uint32_t n_groups,
				   uint32_t n_devices, uint32_t n_actions,
				   struct tp_rng *rng, struct tp_error *err)
{
	float x[TP_GNN_MAX_FEATS];
	uint32_t *devs;
	enum tp_status st;

	if ((st = tp_gnn_graph_reset(g, n_groups, n_devices, err)))
		return st;
	for (size_t i = 0; i < g->group_x.n; i++)
		g->group_x.v[i] = unif(rng);
	for (size_t i = 0; i < g->device_x.n; i++)
		g->device_x.v[i] = unif(rng);
	for (size_t i = 0; i < g->global_x.n; i++)
		g->global_x.v[i] = unif(rng);
#define EDGE(t, s, d)                                                         \
	do {                                                                  \
		for (uint32_t j_ = 0; j_ < g->w.edge[t]; j_++)                \
			x[j_] = unif(rng);                                    \
		if (tp_gnn_graph_add_edge(g, (t), (s), (d), x) == UINT32_MAX) \
			goto nomem;                                           \
	} while (0)
	for (uint32_t i = 0; i + 1 < n_groups; i++) {
		uint32_t j = i + 1 + (uint32_t)tp_rng_below(rng, 2);
		EDGE(TP_GNN_E_FLOW, i, i + 1);
		EDGE(TP_GNN_E_BACK, i + 1, i);
		if (j < n_groups) {
			EDGE(TP_GNN_E_FLOW, i, j);
			EDGE(TP_GNN_E_BACK, j, i);
		}
	}
	for (uint32_t d = 0; d < n_devices; d++)
		for (uint32_t e = 0; e < n_devices; e++)
			EDGE(TP_GNN_E_LINK, d, e);
	for (uint32_t i = 0; i < n_groups; i++)
		for (uint32_t d = 0; d < n_devices; d++) {
			EDGE(TP_GNN_E_PLACE, i, d);
			EDGE(TP_GNN_E_SERVE, d, i);
		}
#undef EDGE
	g->group = (uint32_t)tp_rng_below(rng, n_groups);
	devs = tp_calloc(n_devices, sizeof(uint32_t));
	if (!devs)
		goto nomem;
	for (uint32_t k = 0; k < n_actions; k++) {
		uint32_t n = 1 + (uint32_t)tp_rng_below(rng, n_devices);
		uint32_t first = (uint32_t)tp_rng_below(rng, n_devices);
		for (uint32_t i = 0; i < n; i++)
			devs[i] = (first + i) % n_devices;
		for (uint32_t j = 0; j < g->w.action; j++)
			x[j] = unif(rng);
		if ((st = tp_gnn_graph_add_action(g, devs, NULL, n, x, err))) {
			free(devs);
			return st;
		}
	}
	free(devs);
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory for the GNN graph");
}
