/*
 * graph.h - the storage behind a struct tp_gnn_input: node and edge
 * features, edge lists and candidate actions, built incrementally.
 *
 *   struct tp_gnn_graph g;
 *   tp_gnn_graph_init(&g, &widths);
 *   tp_gnn_graph_reset(&g, n_groups, n_devices);      zeroed features
 *   ... write g.group_x / g.device_x / g.global_x rows,
 *   tp_gnn_graph_add_edge(&g, type, src, dst, feats) (any order),
 *   tp_gnn_graph_add_action(&g, devs, weights, n, feats) ...
 *   tp_gnn_graph_finish(&g, &input);                  sorts, fills views
 *
 * After finish, edge features may still be edited in place through
 * tp_gnn_graph_edge_x (sorted order; tp_gnn_graph_edge_pos maps an
 * insertion index to it), which is how per-state features are refreshed
 * without rebuilding.  The input's views point into g and are valid until
 * the next reset, add or release.
 *
 * Ownership: the graph owns all its arrays (tp_gnn_graph_release).
 * Errors: TP_ENOMEM only; indices out of range are bugs (assert).
 */
#ifndef TP_GNN_GRAPH_H
#define TP_GNN_GRAPH_H

#include <stdint.h>

#include "core/error.h"
#include "core/rng.h"
#include "core/vec.h"
#include "net.h"

struct tp_gnn_widths {
	uint32_t group, device, action, global;
	uint32_t edge[TP_GNN_ETYPES];
};

struct tp_gnn_graph_edges {
	TP_VEC(uint32_t) src, dst; /* insertion order, then sorted */
	TP_VEC(float) x;
	TP_VEC(uint32_t) first; /* n_dst + 1, after finish */
	TP_VEC(uint32_t) pos;   /* insertion index -> sorted index */
	TP_VEC(uint32_t) tmp;
	TP_VEC(float) tmpx;
};

struct tp_gnn_graph {
	struct tp_gnn_widths w;
	uint32_t n_groups, n_devices;
	TP_VEC(float) group_x, device_x, global_x;
	struct tp_gnn_graph_edges e[TP_GNN_ETYPES];
	uint32_t group; /* the group being decided */
	TP_VEC(uint32_t) act_first, act_member;
	TP_VEC(float) act_weight, act_x;
	bool sorted;
};

void tp_gnn_graph_init(struct tp_gnn_graph *g, const struct tp_gnn_widths *w);
void tp_gnn_graph_release(struct tp_gnn_graph *g);

/* Size the node arrays (zeroed), drop all edges and actions. */
enum tp_status tp_gnn_graph_reset(struct tp_gnn_graph *g, uint32_t n_groups,
				  uint32_t n_devices, struct tp_error *err);

static inline float *tp_gnn_graph_group_row(struct tp_gnn_graph *g,
					    uint32_t i)
{
	return g->group_x.v + (size_t)i * g->w.group;
}
static inline float *tp_gnn_graph_device_row(struct tp_gnn_graph *g,
					     uint32_t i)
{
	return g->device_x.v + (size_t)i * g->w.device;
}

/* Append an edge with its feature row (w.edge[type] floats; NULL =
 * zeros).  Returns its insertion index, or UINT32_MAX on failure. */
uint32_t tp_gnn_graph_add_edge(struct tp_gnn_graph *g,
			       enum tp_gnn_etype type, uint32_t src,
			       uint32_t dst, const float *x);

/* Drop the candidate actions (keeps nodes and edges). */
void tp_gnn_graph_clear_actions(struct tp_gnn_graph *g);
/* Append an action over n device nodes (weights NULL = 1 each) with its
 * feature row (w.action floats). */
enum tp_status tp_gnn_graph_add_action(struct tp_gnn_graph *g,
				       const uint32_t *devs,
				       const float *weights, uint32_t n,
				       const float *x, struct tp_error *err);

/* Sort edges by destination (stable) once, and fill *in with views of the
 * graph.  May be called again after actions changed. */
enum tp_status tp_gnn_graph_finish(struct tp_gnn_graph *g,
				   struct tp_gnn_input *in,
				   struct tp_error *err);

/* Feature row of edge k (sorted index) of a type, after finish. */
static inline float *tp_gnn_graph_edge_x(struct tp_gnn_graph *g,
					 enum tp_gnn_etype t, uint32_t k)
{
	return g->e[t].x.v + (size_t)k * g->w.edge[t];
}

/* Sorted index of the edge inserted as number i, after finish. */
static inline uint32_t tp_gnn_graph_edge_pos(const struct tp_gnn_graph *g,
					     enum tp_gnn_etype t, uint32_t i)
{
	return g->e[t].pos.v[i];
}

/*
 * A synthetic graph for tests and benchmarks: n_groups groups in a chain
 * with random skip edges, n_devices devices, complete group-device and
 * device-device edges (with self-loops), n_actions random device subsets, features uniform
 * in [-1, 1].
 */
enum tp_status tp_gnn_graph_random(struct tp_gnn_graph *g, uint32_t n_groups,
				   uint32_t n_devices, uint32_t n_actions,
				   struct tp_rng *rng, struct tp_error *err);

#endif
