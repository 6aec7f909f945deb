/*
 * features.c - the GNN input graph of a (model, cluster, groups, state)
 * (see features.h; every feature is listed in src/gnn/README).
 */
#include "features.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/cost.h"
#include "core/estimate.h"

#define DEFAULT_POOL_ABOVE 64

/* The layouts of features.h end exactly at the widths a weights file
 * records. */
_Static_assert(TP_GNN_GROUP_END == TP_GNN_F_GROUP,
	       "group feature slots and TP_GNN_F_GROUP disagree");
_Static_assert(TP_GNN_DEVICE_END == TP_GNN_F_DEVICE,
	       "device feature slots and TP_GNN_F_DEVICE disagree");
_Static_assert(TP_GNN_ACTION_END == TP_GNN_F_ACTION,
	       "action feature slots and TP_GNN_F_ACTION disagree");
_Static_assert(TP_GNN_GLOBAL_END == TP_GNN_F_GLOBAL,
	       "global feature slots and TP_GNN_F_GLOBAL disagree");
_Static_assert(TP_GNN_FLOW_END == TP_GNN_F_FLOW,
	       "flow edge feature slots and TP_GNN_F_FLOW disagree");
_Static_assert(TP_GNN_LINK_END == TP_GNN_F_LINK,
	       "link edge feature slots and TP_GNN_F_LINK disagree");
_Static_assert(TP_GNN_PLACE_END == TP_GNN_F_PLACE,
	       "place edge feature slots and TP_GNN_F_PLACE disagree");

struct tp_gnn_features {
	const struct tp_model *m;
	const struct tp_cluster *c;
	uint32_t K, ND, NN, T;
	uint32_t *gfirst;   /* K + 1 */
	uint32_t *dev_node; /* ND: device -> device node */
	float *node_w;      /* NN: devices per node (class size) */
	uint32_t *node_rep; /* NN: a representative device */
	double *gtime;      /* K * T: s per sample, fwd + bwd */
	double *gtime_min;  /* K: fastest over the types present */
	double *gparam, *gsaved, *gflop; /* K */
	double state_factor; /* bytes of weights+grads+optimizer per param
				byte */
	double lower_bound;  /* s per iteration */
	double batch;
	double total_peak, min_bw;
	double *dev_peak;    /* ND */
	uint32_t n_nodes_phys;
	/* flow edges between groups: (src, dst, bytes) */
	uint32_t n_flow;
	uint32_t *flow_src, *flow_dst;
	uint32_t *flow_pos, *back_pos; /* sorted positions */
	uint32_t *place_pos;           /* K * NN: (g, n) -> sorted pos */
	uint32_t *serve_pos;           /* NN * K: (n, g) */
	struct tp_gnn_graph g;
	struct tp_gnn_input in;
	/* per-state scratch */
	TP_VEC(uint32_t) op_pg;    /* op -> plan group */
	TP_VEC(uint32_t) g_pg;     /* coarse group -> plan group */
	TP_VEC(float) pg_frac;     /* plan group x NN placement fraction */
	TP_VEC(uint32_t) act_nodes;
	TP_VEC(float) act_w;
	double *load, *mem, *comm; /* ND */
	uint32_t *ngroups_on;      /* ND */
	uint32_t *node_seen;       /* ND, stamps */
	uint32_t *node_slot;       /* ND: device node -> action slot */
	uint32_t *sync_devs;       /* ND: an action's replicas, sorted */
	uint32_t stamp;
	double inv_all;            /* the state's group: sum of 1 / time
				      over every device (group_action) */
	/* the route figures of device sets asked about before (struct
	   set_memo; a state's actions are mostly the same sets) */
	struct set_memo *memo;
	uint32_t memo_n;
	TP_VEC(uint32_t) memo_devs; /* the memoised sets' device lists */
};

/*
 * What group_action reads of the routes of an action's device list
 * (tp_cluster_route_bw, most of the features' time on large sets): the
 * slowest route of its ring and, once asked, the hierarchical sync's
 * (hier_params).  Keyed by the list itself (compared in full, so exact)
 * and tp; the same doubles as computing them again.
 */
struct hier_params {
	double bw_in, bw_x;         /* slowest route inside runs, across */
	uint32_t gmin, gmax, nodes; /* replicas per node run; runs */
};
struct set_memo {
	uint64_t key;     /* 0 = empty */
	uint32_t n, tp, off; /* devices, tp, first in memo_devs */
	bool have_hier;
	double bottleneck;
	struct hier_params hier;
};
#define SET_MEMO_SLOTS 1024u /* cleared when 70% full */
#define SET_MEMO_DEVS (1u << 22) /* cleared above this many devices */

void tp_gnn_feature_widths(struct tp_gnn_widths *w)
{
	w->group = TP_GNN_F_GROUP;
	w->device = TP_GNN_F_DEVICE;
	w->action = TP_GNN_F_ACTION;
	w->global = TP_GNN_F_GLOBAL;
	w->edge[TP_GNN_E_FLOW] = TP_GNN_F_FLOW;
	w->edge[TP_GNN_E_BACK] = TP_GNN_F_FLOW;
	w->edge[TP_GNN_E_LINK] = TP_GNN_F_LINK;
	w->edge[TP_GNN_E_PLACE] = TP_GNN_F_PLACE;
	w->edge[TP_GNN_E_SERVE] = TP_GNN_F_PLACE;
}

/* ------------------------------------------------------------------ */
/* helpers */

static float clampf(double x, double lo, double hi)
{
	if (!(x >= lo)) /* also NaN */
		return (float)lo;
	return (float)(x > hi ? hi : x);
}

/* x / max on a log scale: 1 at max, 0 at max / 10^decades or less. */
static float logn(double x, double max, double decades)
{
	if (!(x > 0) || !(max > 0))
		return 0.0f;
	return clampf(1.0 + log10(x / max) / decades, 0, 1);
}

static float ratio(double x, double max)
{
	return max > 0 ? clampf(x / max, 0, 1) : 0.0f;
}

static float log2n(double x, double max)
{
	if (!(x > 1) || !(max > 1))
		return 0.0f;
	return clampf(log2(x) / log2(max), 0, 1);
}


/* sqrt(lower bound / iteration time), in (0, 1] (an efficiency; sqrt
 * spreads the small ones): global feature 17 of a simulated plan that
 * fits. */
static float efficiency(double lower_bound_s, double iteration_time_s)
{
	double e = iteration_time_s > 0 ? lower_bound_s / iteration_time_s
					: 0;

	return e > 0 ? (float)sqrt(e > 1 ? 1 : e) : 0.0f;
}

void tp_gnn_gain_target(bool state_fits, double state_time_s, bool scored,
			bool child_fits, double child_time_s, float *target,
			float *weight)
{
	*target = 0;
	*weight = 0;
	if (!scored)
		return;
	if (state_fits && child_fits && state_time_s > 0 &&
	    child_time_s > 0 && isfinite(state_time_s) &&
	    isfinite(child_time_s)) {
		*target = (float)tanh(TP_GNN_GAIN_SCALE *
				      log(state_time_s / child_time_s));
		*weight = 1;
	} else if (state_fits != child_fits) {
		*target = child_fits ? 1.0f : -1.0f;
		*weight = 1;
	}
}

double tp_gnn_gain_log_ratio(float g)
{
	double x = g;

	if (!(x > -0.999))
		x = -0.999;
	if (x > 0.999)
		x = 0.999;
	return atanh(x) / TP_GNN_GAIN_SCALE;
}

/* ------------------------------------------------------------------ */
/* construction */

static bool node_kind_eq(const struct tp_node *a, const struct tp_node *b)
{
	return a->n_devices == b->n_devices &&
	       a->fabric_bw_Bps == b->fabric_bw_Bps &&
	       a->nic_bw_Bps * a->n_nics == b->nic_bw_Bps * b->n_nics;
}

static enum tp_status build_classes(struct tp_gnn_features *f,
				    uint32_t pool_above, struct tp_error *err)
{
	const struct tp_cluster *c = f->c;
	uint32_t nn = 0;

	f->dev_node = tp_calloc(f->ND, sizeof(uint32_t));
	f->node_w = tp_calloc(f->ND, sizeof(float));
	f->node_rep = tp_calloc(f->ND, sizeof(uint32_t));
	if (!f->dev_node || !f->node_w || !f->node_rep)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	for (uint32_t d = 0; d < f->ND; d++) {
		const struct tp_device *dv = &c->devices.v[d];
		uint32_t k = nn;
		if (f->ND > pool_above) {
			for (k = 0; k < nn; k++) {
				const struct tp_device *r =
					&c->devices.v[f->node_rep[k]];
				if (r->type == dv->type && r->local == dv->local &&
				    node_kind_eq(&c->nodes.v[r->node],
						 &c->nodes.v[dv->node]))
					break;
			}
		}
		if (k == nn) {
			f->node_rep[nn] = d;
			nn++;
		}
		f->dev_node[d] = k;
		f->node_w[k] += 1.0f;
	}
	f->NN = nn;
	return TP_OK;
}

/* x = 1 at k of a one-hot block of n slots (k < n: a value beyond the
 * block is a bug, not a row of zeros). */
static void one_hot(float *r, uint32_t n, uint32_t k)
{
	assert(k < n);
	for (uint32_t i = 0; i < n; i++)
		r[i] = i == k ? 1.0f : 0.0f;
}

/* Group nodes: the static slots (up to TP_GNN_GROUP_DECIDED). */
static void static_groups(struct tp_gnn_features *f)
{
	const struct tp_model *m = f->m;
	struct tp_gnn_graph *g = &f->g;
	uint32_t K = f->K, T = f->T;
	double gmax_flop = 0, gmax_param = 0, gmax_saved = 0, tot_flop = 0,
	       tot_param = 0;

	for (uint32_t k = 0; k < K; k++) {
		gmax_flop = fmax(gmax_flop, f->gflop[k]);
		gmax_param = fmax(gmax_param, f->gparam[k]);
		gmax_saved = fmax(gmax_saved, f->gsaved[k]);
		tot_flop += f->gflop[k];
		tot_param += f->gparam[k];
	}
	for (uint32_t k = 0; k < K; k++) {
		float *r = tp_gnn_graph_group_row(g, k);
		double tmax = 0, io = 0;
		uint32_t units = 0;
		bool split = false;
		for (uint32_t t = 0; t < T; t++)
			tmax = fmax(tmax, f->gtime[(size_t)k * T + t]);
		for (uint32_t i = f->gfirst[k]; i < f->gfirst[k + 1]; i++) {
			const struct tp_op *o = &m->ops.v[m->topo[i]];
			io += o->mem_bytes;
			if (o->tp_split != TP_SPLIT_NONE)
				split = true;
			if (o->tp_units && (!units || o->tp_units < units))
				units = o->tp_units;
		}
		r[TP_GNN_GROUP_FLOP] = ratio(f->gflop[k], gmax_flop);
		r[TP_GNN_GROUP_FLOP_LOG] = logn(f->gflop[k], gmax_flop, 4);
		r[TP_GNN_GROUP_PARAM] = ratio(f->gparam[k], gmax_param);
		r[TP_GNN_GROUP_PARAM_LOG] = logn(f->gparam[k], gmax_param, 4);
		r[TP_GNN_GROUP_SAVED] = ratio(f->gsaved[k], gmax_saved);
		r[TP_GNN_GROUP_SAVED_LOG] = logn(f->gsaved[k], gmax_saved, 4);
		r[TP_GNN_GROUP_FLOP_SHARE] = ratio(f->gflop[k], tot_flop);
		r[TP_GNN_GROUP_PARAM_SHARE] = ratio(f->gparam[k], tot_param);
		r[TP_GNN_GROUP_POSITION] =
			K > 1 ? (float)k / (float)(K - 1) : 0.0f;
		r[TP_GNN_GROUP_HETERO] =
			f->gtime_min[k] > 0
				? clampf(tmax / f->gtime_min[k] - 1, 0, 4) / 4
				: 0.0f;
		/* arithmetic intensity, FLOP per byte, on a log scale */
		r[TP_GNN_GROUP_INTENSITY] =
			io > 0 ? clampf(log10(f->gflop[k] / io + 1) / 3, 0, 1)
			       : 1.0f;
		r[TP_GNN_GROUP_SPLITS] = split ? 1.0f : 0.0f;
		r[TP_GNN_GROUP_TP_UNITS] =
			units ? clampf(log2(units) / 7, 0, 1) : 0.0f;
	}
}

/* Device nodes: the static slots (up to TP_GNN_DEVICE_BUSY), relative to
 * the cluster's largest. */
static void static_devices(struct tp_gnn_features *f)
{
	const struct tp_cluster *c = f->c;
	struct tp_gnn_graph *g = &f->g;
	double max_peak = 0, max_mem = 0, max_mbw = 0, max_fabric = 0,
	       max_nic = 0;

	for (uint32_t d = 0; d < f->ND; d++) {
		const struct tp_device *dv = &c->devices.v[d];
		const struct tp_node *nd = &c->nodes.v[dv->node];
		max_peak = fmax(max_peak, f->dev_peak[d]);
		max_mem = fmax(max_mem, c->types.v[dv->type].memory_bytes);
		max_mbw = fmax(max_mbw, c->types.v[dv->type].memory_bw_Bps);
		max_fabric = fmax(max_fabric, nd->fabric_bw_Bps);
		max_nic = fmax(max_nic, nd->nic_bw_Bps * nd->n_nics);
	}
	for (uint32_t n = 0; n < f->NN; n++) {
		uint32_t d = f->node_rep[n];
		const struct tp_device *dv = &c->devices.v[d];
		const struct tp_device_type *ty = &c->types.v[dv->type];
		const struct tp_node *nd = &c->nodes.v[dv->node];
		float *r = tp_gnn_graph_device_row(g, n);
		r[TP_GNN_DEVICE_PEAK] = ratio(f->dev_peak[d], max_peak);
		r[TP_GNN_DEVICE_PEAK_LOG] = logn(f->dev_peak[d], max_peak, 2);
		r[TP_GNN_DEVICE_MEMORY] = ratio(ty->memory_bytes, max_mem);
		r[TP_GNN_DEVICE_MEMORY_BW] = ratio(ty->memory_bw_Bps, max_mbw);
		r[TP_GNN_DEVICE_NODE_SIZE] = ratio(nd->n_devices, f->ND);
		r[TP_GNN_DEVICE_FABRIC] = ratio(nd->fabric_bw_Bps, max_fabric);
		r[TP_GNN_DEVICE_NIC] = ratio(nd->nic_bw_Bps * nd->n_nics, max_nic);
		r[TP_GNN_DEVICE_WEIGHT] = f->node_w[n] / (float)f->ND;
	}
}

/* Up to this many devices, the link features' scales are the largest
 * bandwidth and latency over every ordered pair of devices.  Above it
 * that is too slow (2.7e8 routes, about 8 s, at 16,384 GPUs, and the
 * search asks for features again after its time limit), so the scales
 * come from the hierarchy: the largest latency exact
 * (tp_cluster_route_extremes), the largest bandwidth over every node's
 * own pairs and between neighbouring nodes' first devices (an
 * approximation where a farther pair of nodes were better connected than
 * neighbours). */
#define LINK_ALL_PAIRS_MAX 4096

static void link_scales(const struct tp_cluster *c, uint32_t ND,
			double *max_bw, double *max_lat)
{
	struct tp_route r;

	*max_bw = 0;
	*max_lat = 0;
	if (ND <= LINK_ALL_PAIRS_MAX) {
		for (uint32_t a = 0; a < ND; a++)
			for (uint32_t b = 0; b < ND; b++) {
				if (a == b)
					continue;
				tp_cluster_route(c, a, b, &r);
				if (isfinite(r.bw_Bps))
					*max_bw = fmax(*max_bw, r.bw_Bps);
				*max_lat = fmax(*max_lat, r.latency_s);
			}
		return;
	}
	{
		double min_bw;
		tp_cluster_route_extremes(c, &min_bw, max_lat);
	}
	for (uint32_t n = 0; n < c->nodes.n; n++) {
		const struct tp_node *nd = &c->nodes.v[n];
		uint32_t d0 = nd->first_device, nd_n = nd->n_devices;
		for (uint32_t a = d0; a < d0 + nd_n; a++)
			for (uint32_t b = d0; b < d0 + nd_n; b++) {
				if (a == b)
					continue;
				tp_cluster_route(c, a, b, &r);
				if (isfinite(r.bw_Bps))
					*max_bw = fmax(*max_bw, r.bw_Bps);
			}
		if (n == 0 || !nd_n || !c->nodes.v[n - 1].n_devices)
			continue;
		for (int dir = 0; dir < 2; dir++) {
			uint32_t p = c->nodes.v[n - 1].first_device;
			tp_cluster_route(c, dir ? p : d0, dir ? d0 : p, &r);
			if (isfinite(r.bw_Bps))
				*max_bw = fmax(*max_bw, r.bw_Bps);
		}
	}
}

/* Link edges: every ordered pair of device nodes, self-loops too.  -1 on
 * allocation failure. */
static int link_edges(struct tp_gnn_features *f)
{
	const struct tp_cluster *c = f->c;
	uint32_t NN = f->NN;
	double max_bw, max_lat;
	float x[TP_GNN_LINK_END];

	link_scales(c, f->ND, &max_bw, &max_lat);
	if (!(max_bw > 0))
		max_bw = 1;
	for (uint32_t b = 0; b < NN; b++) {
		for (uint32_t a = 0; a < NN; a++) {
			uint32_t ra = f->node_rep[a], rb = f->node_rep[b];
			struct tp_route r;
			bool self = a == b;
			/* a representative of b on another node than ra (or
			 * another device of the same class) */
			if (NN < f->ND) {
				for (uint32_t d = 0; d < f->ND; d++) {
					if (f->dev_node[d] != b || d == ra)
						continue;
					rb = d;
					if (c->devices.v[d].node !=
					    c->devices.v[ra].node)
						break;
				}
			}
			if (ra == rb) {
				x[TP_GNN_LINK_BW] = 1.0f;
				x[TP_GNN_LINK_BW_LOG] = 1.0f;
				x[TP_GNN_LINK_LATENCY] = 0.0f;
				x[TP_GNN_LINK_SAME_NODE] = 1.0f;
			} else {
				tp_cluster_route(c, ra, rb, &r);
				x[TP_GNN_LINK_BW] = ratio(r.bw_Bps, max_bw);
				x[TP_GNN_LINK_BW_LOG] = logn(r.bw_Bps, max_bw, 3);
				x[TP_GNN_LINK_LATENCY] =
					ratio(r.latency_s, max_lat);
				x[TP_GNN_LINK_SAME_NODE] =
					c->devices.v[ra].node ==
							c->devices.v[rb].node
						? 1.0f
						: 0.0f;
			}
			x[TP_GNN_LINK_SELF] = self ? 1.0f : 0.0f;
			if (tp_gnn_graph_add_edge(&f->g, TP_GNN_E_LINK, a, b,
						  x) == UINT32_MAX)
				return -1;
		}
	}
	return 0;
}

/* Bytes per sample between every ordered pair of groups (K x K, summed
 * over the model's edges); NULL on allocation failure. */
static double *group_flow_bytes(const struct tp_gnn_features *f)
{
	const struct tp_model *m = f->m;
	uint32_t K = f->K;
	double *flow_bytes = tp_calloc((size_t)K * K, sizeof(double));
	uint32_t *gof = tp_calloc(m->ops.n, sizeof(uint32_t));

	if (!flow_bytes || !gof) {
		free(flow_bytes);
		free(gof);
		return NULL;
	}
	for (uint32_t k = 0; k < K; k++)
		for (uint32_t i = f->gfirst[k]; i < f->gfirst[k + 1]; i++)
			gof[m->topo[i]] = k;
	for (size_t e = 0; e < m->edges.n; e++) {
		uint32_t a = gof[m->edges.v[e].src];
		uint32_t b = gof[m->edges.v[e].dst];
		if (a != b)
			flow_bytes[(size_t)a * K + b] += m->edges.v[e].bytes;
	}
	free(gof);
	return flow_bytes;
}

/* Flow edges (and their back edges) between groups that exchange
 * tensors, and the arrays that find them again per state.  -1 on
 * allocation failure. */
static int flow_edges(struct tp_gnn_features *f, const double *flow_bytes)
{
	uint32_t K = f->K, NN = f->NN, i = 0;
	double max_flow = 0;
	float x[TP_GNN_FLOW_END];

	f->n_flow = 0;
	for (size_t j = 0; j < (size_t)K * K; j++)
		if (flow_bytes[j] > 0) {
			f->n_flow++;
			max_flow = fmax(max_flow, flow_bytes[j]);
		}
	f->flow_src = tp_calloc(f->n_flow + 1, sizeof(uint32_t));
	f->flow_dst = tp_calloc(f->n_flow + 1, sizeof(uint32_t));
	f->flow_pos = tp_calloc(f->n_flow + 1, sizeof(uint32_t));
	f->back_pos = tp_calloc(f->n_flow + 1, sizeof(uint32_t));
	f->place_pos = tp_calloc((size_t)K * NN, sizeof(uint32_t));
	f->serve_pos = tp_calloc((size_t)K * NN, sizeof(uint32_t));
	if (!f->flow_src || !f->flow_dst || !f->flow_pos || !f->back_pos ||
	    !f->place_pos || !f->serve_pos)
		return -1;
	for (uint32_t a = 0; a < K; a++)
		for (uint32_t b = 0; b < K; b++) {
			double by = flow_bytes[(size_t)a * K + b];
			if (!(by > 0))
				continue;
			x[TP_GNN_FLOW_BYTES] = ratio(by, max_flow);
			x[TP_GNN_FLOW_BYTES_LOG] = logn(by, max_flow, 4);
			x[TP_GNN_FLOW_SAME_SET] = 0.0f;
			f->flow_src[i] = a;
			f->flow_dst[i] = b;
			f->flow_pos[i] =
				tp_gnn_graph_add_edge(&f->g, TP_GNN_E_FLOW, a, b, x);
			f->back_pos[i] =
				tp_gnn_graph_add_edge(&f->g, TP_GNN_E_BACK, b, a, x);
			if (f->flow_pos[i] == UINT32_MAX ||
			    f->back_pos[i] == UINT32_MAX)
				return -1;
			i++;
		}
	return 0;
}

/* Place (group -> device node) and serve (back) edges.  -1 on allocation
 * failure. */
static int place_edges(struct tp_gnn_features *f)
{
	const struct tp_cluster *c = f->c;
	uint32_t K = f->K, NN = f->NN, T = f->T;
	float x[TP_GNN_PLACE_END];

	for (uint32_t n = 0; n < NN; n++) {
		uint32_t t = c->devices.v[f->node_rep[n]].type;
		double mem = c->types.v[t].memory_bytes;
		double tot = 0;
		for (uint32_t k = 0; k < K; k++)
			tot += f->gtime[(size_t)k * T + t];
		for (uint32_t k = 0; k < K; k++) {
			double tg = f->gtime[(size_t)k * T + t];
			x[TP_GNN_PLACE_SLOWDOWN] =
				f->gtime_min[k] > 0
					? clampf(log10(tg / f->gtime_min[k]) / 2,
						 0, 1)
					: 0.0f;
			x[TP_GNN_PLACE_SHARE] = ratio(tg, tot);
			x[TP_GNN_PLACE_STATE] =
				mem > 0 ? clampf(f->gparam[k] * f->state_factor /
							 mem,
						 0, 1)
					: 1.0f;
			x[TP_GNN_PLACE_PLACED] = 0.0f;
			f->place_pos[(size_t)k * NN + n] = tp_gnn_graph_add_edge(
				&f->g, TP_GNN_E_PLACE, k, n, x);
			f->serve_pos[(size_t)n * K + k] = tp_gnn_graph_add_edge(
				&f->g, TP_GNN_E_SERVE, n, k, x);
			if (f->place_pos[(size_t)k * NN + n] == UINT32_MAX ||
			    f->serve_pos[(size_t)n * K + k] == UINT32_MAX)
				return -1;
		}
	}
	return 0;
}

/* Everything that does not depend on the state: node features, edges,
 * then the positions of the per-state edge features after sorting. */
static enum tp_status fill_static(struct tp_gnn_features *f,
				  struct tp_error *err)
{
	struct tp_gnn_graph *g = &f->g;
	uint32_t K = f->K, NN = f->NN;
	double *flow_bytes;
	enum tp_status st;

	if ((st = tp_gnn_graph_reset(g, K, NN, err)))
		return st;
	static_groups(f);
	static_devices(f);
	if (link_edges(f))
		goto nomem;
	flow_bytes = group_flow_bytes(f);
	if (!flow_bytes)
		goto nomem;
	if (flow_edges(f, flow_bytes)) {
		free(flow_bytes);
		goto nomem;
	}
	free(flow_bytes);
	if (place_edges(f))
		goto nomem;
	if ((st = tp_gnn_graph_finish(g, &f->in, err)))
		return st;
	/* insertion indices -> sorted positions */
	for (uint32_t i = 0; i < f->n_flow; i++) {
		f->flow_pos[i] = tp_gnn_graph_edge_pos(g, TP_GNN_E_FLOW,
						       f->flow_pos[i]);
		f->back_pos[i] = tp_gnn_graph_edge_pos(g, TP_GNN_E_BACK,
						       f->back_pos[i]);
	}
	for (size_t i = 0; i < (size_t)K * NN; i++) {
		f->place_pos[i] = tp_gnn_graph_edge_pos(g, TP_GNN_E_PLACE,
							f->place_pos[i]);
		f->serve_pos[i] = tp_gnn_graph_edge_pos(g, TP_GNN_E_SERVE,
							f->serve_pos[i]);
	}
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory for GNN features");
}

struct tp_gnn_features *
tp_gnn_features_new(const struct tp_model *m, const struct tp_cluster *c,
		    uint32_t n_groups, const uint32_t *group_first,
		    const struct tp_gnn_feat_options *opt,
		    struct tp_error *err)
{
	struct tp_gnn_features *f;
	struct tp_gnn_widths w;
	uint32_t pool = opt && opt->pool_above ? opt->pool_above
					       : DEFAULT_POOL_ABOVE;
	double hint, fl = 0;

	if (!m->finalized || !c->finalized) {
		tp_error_set(err, TP_EINPUT,
			     "GNN features need a finalized model and cluster");
		return NULL;
	}
	if (n_groups == 0 || group_first[0] != 0 ||
	    group_first[n_groups] != m->ops.n) {
		tp_error_set(err, TP_EINPUT,
			     "GNN features: the %u groups do not cover the "
			     "model's %zu ops",
			     n_groups, m->ops.n);
		return NULL;
	}
	for (uint32_t k = 0; k < n_groups; k++)
		if (group_first[k + 1] <= group_first[k]) {
			tp_error_set(err, TP_EINPUT,
				     "GNN features: group %u is empty", k);
			return NULL;
		}
	f = calloc(1, sizeof(*f));
	if (!f) {
		tp_error_set(err, TP_ENOMEM, "out of memory");
		return NULL;
	}
	tp_gnn_feature_widths(&w);
	tp_gnn_graph_init(&f->g, &w);
	f->m = m;
	f->c = c;
	f->K = n_groups;
	f->ND = (uint32_t)c->devices.n;
	f->T = (uint32_t)c->types.n;
	f->batch = (double)m->global_batch;
	f->gfirst = tp_calloc(n_groups + 1, sizeof(uint32_t));
	f->gtime = tp_calloc((size_t)n_groups * f->T, sizeof(double));
	f->gtime_min = tp_calloc(n_groups, sizeof(double));
	f->gparam = tp_calloc(n_groups, sizeof(double));
	f->gsaved = tp_calloc(n_groups, sizeof(double));
	f->gflop = tp_calloc(n_groups, sizeof(double));
	f->dev_peak = tp_calloc(f->ND, sizeof(double));
	f->load = tp_calloc(f->ND, sizeof(double));
	f->mem = tp_calloc(f->ND, sizeof(double));
	f->comm = tp_calloc(f->ND, sizeof(double));
	f->ngroups_on = tp_calloc(f->ND, sizeof(uint32_t));
	f->node_seen = tp_calloc(f->ND, sizeof(uint32_t));
	f->node_slot = tp_calloc(f->ND, sizeof(uint32_t));
	f->sync_devs = tp_calloc(f->ND, sizeof(uint32_t));
	f->memo = tp_calloc(SET_MEMO_SLOTS, sizeof(*f->memo));
	if (!f->node_slot || !f->sync_devs || !f->memo ||
	    !f->gfirst || !f->gtime || !f->gtime_min || !f->gparam ||
	    !f->gsaved || !f->gflop || !f->dev_peak || !f->load || !f->mem ||
	    !f->comm || !f->ngroups_on || !f->node_seen) {
		tp_error_set(err, TP_ENOMEM, "out of memory");
		goto fail;
	}
	memcpy(f->gfirst, group_first, (n_groups + 1) * sizeof(uint32_t));
	if (build_classes(f, pool, err))
		goto fail;
	f->state_factor = tp_cost_state_factor(m->dtype, m->optimizer);
	hint = f->batch / f->ND;
	if (hint < 1)
		hint = 1;
	for (uint32_t d = 0; d < f->ND; d++) {
		f->dev_peak[d] = tp_device_peak_flops(c, d, m->dtype);
		f->total_peak += f->dev_peak[d];
	}
	for (uint32_t k = 0; k < n_groups; k++) {
		f->gtime_min[k] = INFINITY;
		for (uint32_t i = group_first[k]; i < group_first[k + 1]; i++) {
			const struct tp_op *o = &m->ops.v[m->topo[i]];
			f->gflop[k] += o->flop + o->backward_flop;
			f->gparam[k] += o->param_bytes;
			f->gsaved[k] += o->saved_bytes;
			for (uint32_t t = 0; t < f->T; t++)
				f->gtime[(size_t)k * f->T + t] +=
					tp_estimate_op_time(m, c, m->topo[i], t, hint);
		}
		for (uint32_t t = 0; t < f->T; t++)
			if (c->type_count[t])
				f->gtime_min[k] = fmin(
					f->gtime_min[k],
					f->gtime[(size_t)k * f->T + t]);
		if (!isfinite(f->gtime_min[k]))
			f->gtime_min[k] = 0;
		fl += f->gflop[k];
	}
	f->lower_bound = f->total_peak > 0 ? fl * f->batch / f->total_peak : 0;
	/* the smallest route bandwidth over all pairs, from the hierarchy
	   (exact; every ordered pair was 2.7e8 routes at 16,384 GPUs) */
	{
		double max_lat;
		tp_cluster_route_extremes(c, &f->min_bw, &max_lat);
	}
	for (uint32_t d = 0; d < f->ND; d++) {
		uint32_t nd = c->devices.v[d].node;
		if (nd + 1 > f->n_nodes_phys)
			f->n_nodes_phys = nd + 1;
	}
	if (fill_static(f, err))
		goto fail;
	return f;
fail:
	tp_gnn_features_free(f);
	return NULL;
}

void tp_gnn_features_free(struct tp_gnn_features *f)
{
	if (!f)
		return;
	free(f->gfirst);
	free(f->dev_node);
	free(f->node_w);
	free(f->node_rep);
	free(f->gtime);
	free(f->gtime_min);
	free(f->gparam);
	free(f->gsaved);
	free(f->gflop);
	free(f->dev_peak);
	free(f->flow_src);
	free(f->flow_dst);
	free(f->flow_pos);
	free(f->back_pos);
	free(f->place_pos);
	free(f->serve_pos);
	free(f->load);
	free(f->mem);
	free(f->comm);
	free(f->ngroups_on);
	free(f->node_seen);
	free(f->node_slot);
	free(f->sync_devs);
	tp_vec_free(&f->op_pg);
	tp_vec_free(&f->g_pg);
	tp_vec_free(&f->pg_frac);
	tp_vec_free(&f->act_nodes);
	tp_vec_free(&f->act_w);
	free(f->memo);
	tp_vec_free(&f->memo_devs);
	tp_gnn_graph_release(&f->g);
	free(f);
}

bool tp_gnn_features_match(const struct tp_gnn_features *f,
			   const struct tp_model *m, const struct tp_cluster *c,
			   uint32_t n_groups, const uint32_t *group_first)
{
	return f && f->m == m && f->c == c && f->K == n_groups &&
	       memcmp(f->gfirst, group_first,
		      (n_groups + 1) * sizeof(uint32_t)) == 0;
}

uint32_t tp_gnn_features_device_nodes(const struct tp_gnn_features *f)
{
	return f->NN;
}

bool tp_gnn_features_pooled(const struct tp_gnn_features *f)
{
	return f->NN < f->ND;
}

double tp_gnn_features_lower_bound(const struct tp_gnn_features *f)
{
	return f->lower_bound;
}

/* ------------------------------------------------------------------ */
/* per state */

static bool same_devices(const struct tp_plan *p, uint32_t a, uint32_t b)
{
	const struct tp_plan_group *ga = &p->groups.v[a], *gb = &p->groups.v[b];
	if (a == b)
		return true;
	if (ga->n_devices != gb->n_devices)
		return false;
	return memcmp(tp_plan_group_devs(p, a), tp_plan_group_devs(p, b),
		      ga->n_devices * sizeof(uint32_t)) == 0;
}

/* The devices of a set as (device node, weight) pairs in act_nodes /
 * act_w (cleared first); weights count devices, so a pooled class
 * contributes how many of its devices the set holds. */
static int set_nodes(struct tp_gnn_features *f, const uint32_t *devs,
		     uint32_t n)
{
	f->act_nodes.n = 0;
	f->act_w.n = 0;
	if (++f->stamp == 0) {
		memset(f->node_seen, 0, f->ND * sizeof(uint32_t));
		f->stamp = 1;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t nd = f->dev_node[devs[i]];
		if (f->node_seen[nd] != f->stamp) {
			f->node_seen[nd] = f->stamp;
			f->node_slot[nd] = (uint32_t)f->act_nodes.n;
			if (tp_vec_push(&f->act_nodes, nd) ||
			    tp_vec_push(&f->act_w, 0.0f))
				return -1;
		}
		f->act_w.v[f->node_slot[nd]] += 1.0f;
	}
	return 0;
}

static int cmp_dev(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

/*
 * Seconds to synchronise S bytes of gradients per replica the way the
 * simulator's hierarchical method does (src/sim/taskgraph.c, sync_hier):
 * the replicas (tensor rank 0 of each, sorted) in runs by node, a ring
 * inside every node (reduce-scatter and all-gather at the slowest route
 * inside a run), then per position one ring across the nodes carrying
 * S / (smallest run) at the slowest route between neighbouring runs.
 * An estimate: contention between the rings is left to the simulator.
 */
static void hier_params(struct tp_gnn_features *f,
			const struct tp_prior_action *ac,
			struct hier_params *h)
{
	const struct tp_cluster *c = f->c;
	uint32_t n = ac->dp, k = 0, gmin = UINT32_MAX, gmax = 0, run = 0;
	uint32_t *p = f->sync_devs;
	double bw_in = INFINITY, bw_x = INFINITY;
	uint32_t first = 0, prev_first = 0, first0 = 0;

	for (uint32_t r = 0; r < n; r++)
		p[r] = ac->devices[(size_t)r * ac->tp];
	qsort(p, n, sizeof(*p), cmp_dev);
	for (uint32_t i = 0; i <= n; i++) {
		bool new_run = i == n || i == 0 ||
			       c->devices.v[p[i]].node !=
				       c->devices.v[p[i - 1]].node;
		if (!new_run) {
			bw_in = fmin(bw_in,
				     tp_cluster_route_bw(c, p[i - 1], p[i]));
			run++;
			continue;
		}
		if (i > 0) {
			gmin = run < gmin ? run : gmin;
			gmax = run > gmax ? run : gmax;
		}
		if (i == n)
			break;
		first = p[i];
		if (k == 0)
			first0 = first;
		else
			bw_x = fmin(bw_x, tp_cluster_route_bw(c, prev_first, first));
		prev_first = first;
		k++;
		run = 1;
	}
	if (k > 2)
		bw_x = fmin(bw_x, tp_cluster_route_bw(c, prev_first, first0));
	h->bw_in = bw_in;
	h->bw_x = bw_x;
	h->gmin = gmin;
	h->gmax = gmax;
	h->nodes = k;
}

static double hier_sync_s(struct tp_gnn_features *f,
			  const struct tp_prior_action *ac,
			  struct set_memo *sm, double S)
{
	const struct hier_params *h = &sm->hier;
	double t = 0;

	if (ac->dp < 2 || ac->dp > f->ND)
		return 0;
	if (!sm->have_hier) {
		hier_params(f, ac, &sm->hier);
		sm->have_hier = true;
	}
	if (h->gmax > 1 && h->bw_in > 0 && isfinite(h->bw_in))
		t += tp_cost_ring_traffic(TP_COST_ALL_REDUCE, h->gmax) * S /
		     h->bw_in;
	if (h->nodes > 1 && h->bw_x > 0 && isfinite(h->bw_x))
		t += tp_cost_ring_traffic(TP_COST_ALL_REDUCE, h->nodes) * S /
		     h->gmin / h->bw_x;
	return t;
}

/* The memo of ac's device list and tp (struct set_memo): found, or
 * filled with the ring's slowest route; NULL when out of memory. */
static struct set_memo *set_memo(struct tp_gnn_features *f,
				 const struct tp_prior_action *ac)
{
	const uint32_t n = ac->n_devices, *d = ac->devices;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)n << 32 | ac->tp);
	struct set_memo *e;
	uint32_t i;

	for (uint32_t j = 0; j < n; j++) {
		h ^= d[j];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 29;
	}
	h |= 1;
	if (f->memo_n * 10 >= SET_MEMO_SLOTS * 7 ||
	    f->memo_devs.n + n > SET_MEMO_DEVS) {
		memset(f->memo, 0, SET_MEMO_SLOTS * sizeof(*f->memo));
		f->memo_n = 0;
		f->memo_devs.n = 0;
	}
	for (i = (uint32_t)(h ^ (h >> 32)) & (SET_MEMO_SLOTS - 1);;
	     i = (i + 1) & (SET_MEMO_SLOTS - 1)) {
		e = &f->memo[i];
		if (!e->key)
			break;
		if (e->key == h && e->n == n && e->tp == ac->tp &&
		    !memcmp(f->memo_devs.v + e->off, d, n * sizeof(*d)))
			return e;
	}
	if (tp_vec_reserve(&f->memo_devs, n))
		return NULL;
	memset(e, 0, sizeof(*e));
	e->key = h;
	e->n = n;
	e->tp = ac->tp;
	e->off = (uint32_t)f->memo_devs.n;
	memcpy(f->memo_devs.v + f->memo_devs.n, d, n * sizeof(*d));
	f->memo_devs.n += n;
	f->memo_n++;
	e->bottleneck = INFINITY;
	for (uint32_t j = 0; n > 1 && j < n; j++)
		e->bottleneck = fmin(e->bottleneck,
				     tp_cluster_route_bw(f->c, d[j],
							 d[(j + 1) % n]));
	return e;
}

/* 1 when a group of the plan runs its routed experts whole on their
 * ranks (etp 1, core/plan.h), else 0. */
static float plan_etp(const struct tp_plan *p)
{
	for (size_t g = 0; g < p->groups.n; g++)
		if (p->groups.v[g].etp == 1)
			return 1.0f;
	return 0.0f;
}

/* Some group of p runs sequence parallelism (1) or none (0). */
static float plan_sp(const struct tp_plan *p)
{
	for (size_t g = 0; g < p->groups.n; g++)
		if (p->groups.v[g].sp)
			return 1.0f;
	return 0.0f;
}

/* The slots of the schedule and shape fields (TP_GNN_ACTION_ZB_H1,
 * _INTERLEAVE, _SP) of schedule s with V virtual stages, sequence
 * parallelism sp. */
static void shape_features(float *x, enum tp_schedule s, uint32_t V,
			   float sp)
{
	x[TP_GNN_ACTION_ZB_H1] = s == TP_SCHEDULE_ZB_H1 ? 1.0f : 0.0f;
	x[TP_GNN_ACTION_INTERLEAVE] =
		V >= 2 ? clampf(log2(V) / 4, 0, 1) : 0.0f;
	x[TP_GNN_ACTION_SP] = sp;
}

/* The plan's largest expert-parallel degree and its context-parallel
 * one (1 when none). */
static void plan_ep_cp(const struct tp_plan *p, uint32_t *ep, uint32_t *cp)
{
	*ep = 1;
	*cp = p->groups.n && p->groups.v[0].cp > 1 ? p->groups.v[0].cp : 1;
	for (size_t g = 0; g < p->groups.n; g++)
		if (p->groups.v[g].ep > *ep)
			*ep = p->groups.v[g].ep;
}

/* The plan's mixed groups (core/plan.h): the largest log2 ratio of a
 * group's replica degrees and the largest share of a group's devices in
 * replicas above its smallest degree (0 and 0 when none is mixed). */
static void plan_mixed(const struct tp_plan *p, double *log_ratio,
		       double *share)
{
	*log_ratio = *share = 0;
	for (uint32_t g = 0; g < (uint32_t)p->groups.n; g++) {
		const struct tp_plan_group *gr = &p->groups.v[g];
		uint32_t lo = gr->tp, above = 0;
		if (!gr->mixed || gr->n_devices == 0)
			continue;
		for (uint32_t r = 0; r < gr->dp; r++)
			if (tp_plan_replica_tp(p, g, r) < lo)
				lo = tp_plan_replica_tp(p, g, r);
		for (uint32_t r = 0; r < gr->dp; r++)
			if (tp_plan_replica_tp(p, g, r) > lo)
				above += tp_plan_replica_tp(p, g, r);
		*log_ratio = fmax(*log_ratio, log2((double)gr->tp / lo));
		*share = fmax(*share, (double)above / gr->n_devices);
	}
}

/* The global settings of p as the globals block at r. */
static void globals_features(float *r, const struct tp_plan *p,
			     double batch)
{
	r[TP_GNN_GLOBALS_MICRO] = log2n(p->micro_batches, batch);
	one_hot(r + TP_GNN_GLOBALS_SCHEDULE, TP_GNN_SCHEDULES,
		p->schedule == TP_SCHEDULE_ZB_H1 ? TP_SCHEDULE_1F1B
						 : p->schedule);
	one_hot(r + TP_GNN_GLOBALS_ZERO, TP_GNN_ZERO_STAGES, p->zero);
}

/* The state's plan groups: op_pg (op -> plan group), g_pg (coarse group
 * -> plan group of its first op), pg_frac (plan group x device node:
 * fraction of the node's devices it holds).  TP_EINPUT for ops or devices
 * out of range. */
static enum tp_status state_groups(struct tp_gnn_features *f,
				   const struct tp_plan *p,
				   struct tp_error *err)
{
	const struct tp_model *m = f->m;
	uint32_t K = f->K, NN = f->NN, ND = f->ND;
	uint32_t npg = (uint32_t)p->groups.n;

	f->op_pg.n = 0;
	f->g_pg.n = 0;
	f->pg_frac.n = 0;
	if (tp_vec_reserve(&f->op_pg, m->ops.n) ||
	    tp_vec_reserve(&f->g_pg, K) ||
	    tp_vec_reserve(&f->pg_frac, (size_t)npg * NN + 1))
		return tp_error_set(err, TP_ENOMEM,
				    "out of memory for GNN features");
	for (size_t i = 0; i < m->ops.n; i++)
		f->op_pg.v[i] = 0;
	for (uint32_t q = 0; q < npg; q++) {
		const uint32_t *ops = tp_plan_group_ops(p, q);
		const uint32_t *devs = tp_plan_group_devs(p, q);
		float *fr = f->pg_frac.v + (size_t)q * NN;
		for (uint32_t i = 0; i < p->groups.v[q].n_ops; i++) {
			if (ops[i] >= m->ops.n)
				return tp_error_set(err, TP_EINPUT,
						    "GNN features: plan group "
						    "%u names op %u of %zu",
						    q, ops[i], m->ops.n);
			f->op_pg.v[ops[i]] = q;
		}
		memset(fr, 0, NN * sizeof(float));
		for (uint32_t i = 0; i < p->groups.v[q].n_devices; i++) {
			if (devs[i] >= ND)
				return tp_error_set(err, TP_EINPUT,
						    "GNN features: plan group "
						    "%u names device %u of %u",
						    q, devs[i], ND);
			fr[f->dev_node[devs[i]]] += 1.0f;
		}
		for (uint32_t n = 0; n < NN; n++)
			fr[n] /= f->node_w[n];
	}
	for (uint32_t k = 0; k < K; k++)
		f->g_pg.v[k] = f->op_pg.v[m->topo[f->gfirst[k]]];
	return TP_OK;
}

/* Estimated load (seconds), memory and group count per device from the
 * plan; returns the largest load. */
static double state_loads(struct tp_gnn_features *f, const struct tp_plan *p)
{
	const struct tp_cluster *c = f->c;
	uint32_t K = f->K, ND = f->ND, npg = (uint32_t)p->groups.n;
	double max_load = 0;

	memset(f->load, 0, ND * sizeof(double));
	memset(f->mem, 0, ND * sizeof(double));
	memset(f->comm, 0, ND * sizeof(double));
	memset(f->ngroups_on, 0, ND * sizeof(uint32_t));
	for (uint32_t k = 0; k < K && npg; k++) {
		uint32_t q = f->g_pg.v[k];
		const struct tp_plan_group *pg = &p->groups.v[q];
		const uint32_t *devs = tp_plan_group_devs(p, q);
		const double *sh = tp_plan_group_shares(p, q);
		double mb = p->micro_batches ? p->micro_batches : 1;
		/* replica r on devs[first, first + its degree): tp each
		   but in mixed groups */
		for (uint32_t r = 0, first = 0; r < pg->dp; r++) {
			uint32_t rt = tp_plan_replica_tp(p, q, r);
			for (uint32_t j = 0; j < rt; j++) {
				uint32_t d = devs[first + j];
				uint32_t t = c->devices.v[d].type;
				double samples = f->batch * sh[r];
				f->load[d] += f->gtime[(size_t)k * f->T + t] *
					      samples / rt;
				f->mem[d] += f->gparam[k] * f->state_factor /
						     rt +
					     f->gsaved[k] * samples / mb / rt;
				f->ngroups_on[d]++;
			}
			first += rt;
		}
	}
	for (uint32_t d = 0; d < ND; d++)
		max_load = fmax(max_load, f->load[d]);
	return max_load;
}

/* Group nodes: the partial plan's slots.  DECIDED and CURRENT stay 0
 * (features.h): the graph is the plan's alone, whatever the level, so
 * the states of one plan share a pass through the network's body. */
static void state_group_rows(struct tp_gnn_features *f,
			     const struct tp_plan *p)
{
	for (uint32_t k = 0; k < f->K; k++) {
		float *r = tp_gnn_graph_group_row(&f->g, k);
		r[TP_GNN_GROUP_DECIDED] = 0;
		r[TP_GNN_GROUP_CURRENT] = 0;
		if (p->groups.n) {
			const struct tp_plan_group *pg =
				&p->groups.v[f->g_pg.v[k]];
			r[TP_GNN_GROUP_DEVICES] = ratio(pg->n_devices, f->ND);
			r[TP_GNN_GROUP_DP] = log2n(pg->dp, f->ND);
			r[TP_GNN_GROUP_TP] = clampf(log2(pg->tp) / 3, 0, 1);
			one_hot(r + TP_GNN_GROUP_SYNC, TP_SYNC_COUNT, pg->sync);
			one_hot(r + TP_GNN_GROUP_RECOMPUTE, TP_RECOMPUTE_COUNT,
				pg->recompute);
		}
	}
}

/* Device nodes: the partial plan's slots, averaged over a class;
 * simulated figures when the state has a report, else the estimates.
 * Returns the cluster's memory. */
static double state_device_rows(struct tp_gnn_features *f,
				const struct tp_report *rep, double max_load)
{
	const struct tp_cluster *c = f->c;
	struct tp_gnn_graph *g = &f->g;
	double sum_mem = 0;

	for (uint32_t n = 0; n < f->NN; n++) {
		float *r = tp_gnn_graph_device_row(g, n);
		for (int j = TP_GNN_DEVICE_BUSY; j < TP_GNN_F_DEVICE; j++)
			r[j] = 0;
	}
	for (uint32_t d = 0; d < f->ND; d++) {
		uint32_t n = f->dev_node[d];
		float *r = tp_gnn_graph_device_row(g, n);
		float w = 1.0f / f->node_w[n];
		double cap = c->types.v[c->devices.v[d].type].memory_bytes;
		if (rep && rep->iteration_time_s > 0) {
			r[TP_GNN_DEVICE_BUSY] +=
				w * clampf(rep->devices[d].compute_s /
						   rep->iteration_time_s,
					   0, 1);
			r[TP_GNN_DEVICE_MEMORY_USE] +=
				w * clampf(rep->devices[d].peak_memory_bytes /
						   (cap > 0 ? cap : 1) / 2,
					   0, 1);
			r[TP_GNN_DEVICE_COMM] +=
				w * clampf(rep->devices[d].communication_s /
						   rep->iteration_time_s,
					   0, 1);
			r[TP_GNN_DEVICE_SIMULATED] += w;
		} else {
			r[TP_GNN_DEVICE_BUSY] += w * ratio(f->load[d], max_load);
			r[TP_GNN_DEVICE_MEMORY_USE] +=
				w * clampf(f->mem[d] / (cap > 0 ? cap : 1) / 2,
					   0, 1);
		}
		r[TP_GNN_DEVICE_GROUPS] += w * ratio(f->ngroups_on[d], f->K);
		sum_mem += cap;
	}
	return sum_mem;
}

/* Edges: place/serve get the placement fraction, flow/back whether both
 * groups are on the same devices. */
static void state_edges(struct tp_gnn_features *f, const struct tp_plan *p)
{
	struct tp_gnn_graph *g = &f->g;
	uint32_t K = f->K, NN = f->NN, npg = (uint32_t)p->groups.n;

	for (uint32_t k = 0; k < K; k++) {
		const float *fr = npg ? f->pg_frac.v + (size_t)f->g_pg.v[k] * NN
				      : NULL;
		for (uint32_t n = 0; n < NN; n++) {
			float v = fr ? fr[n] : 0.0f;
			tp_gnn_graph_edge_x(g, TP_GNN_E_PLACE,
					    f->place_pos[(size_t)k * NN + n])
				[TP_GNN_PLACE_PLACED] = v;
			tp_gnn_graph_edge_x(g, TP_GNN_E_SERVE,
					    f->serve_pos[(size_t)n * K + k])
				[TP_GNN_PLACE_PLACED] = v;
		}
	}
	for (uint32_t i = 0; i < f->n_flow && npg; i++) {
		float v = same_devices(p, f->g_pg.v[f->flow_src[i]],
				       f->g_pg.v[f->flow_dst[i]])
				  ? 1.0f
				  : 0.0f;
		tp_gnn_graph_edge_x(g, TP_GNN_E_FLOW,
				    f->flow_pos[i])[TP_GNN_FLOW_SAME_SET] = v;
		tp_gnn_graph_edge_x(g, TP_GNN_E_BACK,
				    f->back_pos[i])[TP_GNN_FLOW_SAME_SET] = v;
	}
}

/* The global node. */
static void state_global(struct tp_gnn_features *f,
			 const struct tp_prior_state *st,
			 const struct tp_plan *p, double sum_mem)
{
	float *r = f->g.global_x.v;
	uint32_t K = f->K, ND = f->ND, ep, cp;
	double tot_param = 0, mix_ratio, mix_share;

	for (uint32_t k = 0; k < K; k++)
		tot_param += f->gparam[k];
	memset(r, 0, TP_GNN_F_GLOBAL * sizeof(float));
	r[TP_GNN_GLOBAL_LEVEL] = ratio(st->level, K);
	r[TP_GNN_GLOBAL_GROUPS] = clampf(K / 64.0, 0, 1);
	r[TP_GNN_GLOBAL_DEVICES] = clampf(log2(ND) / 10, 0, 1);
	r[TP_GNN_GLOBAL_NODES] = ratio(f->n_nodes_phys, ND);
	r[TP_GNN_GLOBAL_TYPES] = clampf((f->T - 1) / 3.0, 0, 1);
	r[TP_GNN_GLOBAL_STATE] =
		sum_mem > 0
			? clampf(tot_param * f->state_factor / sum_mem / 2, 0,
				 1)
			: 1.0f;
	if (f->lower_bound > 0 && isfinite(f->min_bw) && f->min_bw > 0)
		r[TP_GNN_GLOBAL_SYNC] = clampf(
			log10(2 * tot_param / f->min_bw / f->lower_bound) / 6 +
				0.5,
			0, 1);
	globals_features(r + TP_GNN_GLOBAL_GLOBALS, p, f->batch);
	plan_ep_cp(p, &ep, &cp);
	r[TP_GNN_GLOBAL_EXPERTS] =
		f->m->arch.experts > 1
			? clampf(log2((double)f->m->arch.experts) / 8, 0, 1)
			: 0.0f;
	r[TP_GNN_GLOBAL_SEQ] =
		f->m->seq_len > 1
			? clampf(log2((double)f->m->seq_len) / 17, 0, 1)
			: 0.0f;
	r[TP_GNN_GLOBAL_EP] = clampf(log2(ep) / 7, 0, 1);
	r[TP_GNN_GLOBAL_CP] = clampf(log2(cp) / 6, 0, 1);
	plan_mixed(p, &mix_ratio, &mix_share);
	r[TP_GNN_GLOBAL_MIXED_TP] = clampf(mix_ratio / 3, 0, 1);
	r[TP_GNN_GLOBAL_MIXED_SHARE] = clampf(mix_share, 0, 1);
	r[TP_GNN_GLOBAL_ETP] = plan_etp(p);
	if (st->report) {
		r[TP_GNN_GLOBAL_SIMULATED] = 1;
		r[TP_GNN_GLOBAL_FITS] = st->report->feasible ? 1.0f : 0.0f;
		r[TP_GNN_GLOBAL_EFFICIENCY] =
			st->report->feasible
				? efficiency(f->lower_bound,
					     st->report->iteration_time_s)
				: 0.0f;
	}
}

/* A global action: the globals block; it spans every device node. */
static enum tp_status global_action(struct tp_gnn_features *f,
				    const struct tp_prior_action *ac, float *x,
				    struct tp_error *err)
{
	struct tp_plan tmp;

	/* the globals as a plan header, for the shared encoding */
	memset(&tmp, 0, sizeof(tmp));
	tmp.micro_batches = ac->micro_batches;
	tmp.schedule = ac->schedule;
	tmp.zero = ac->zero;
	x[TP_GNN_ACTION_GLOBAL] = 1.0f;
	globals_features(x + TP_GNN_ACTION_GLOBALS, &tmp, f->batch);
	x[TP_GNN_ACTION_EP] = clampf(log2(ac->ep > 1 ? ac->ep : 1) / 7, 0, 1);
	x[TP_GNN_ACTION_CP] = clampf(log2(ac->cp > 1 ? ac->cp : 1) / 6, 0, 1);
	/* the state's mixed groups (a global action keeps them) */
	x[TP_GNN_ACTION_MIXED_TP] = f->g.global_x.v[TP_GNN_GLOBAL_MIXED_TP];
	x[TP_GNN_ACTION_MIXED_SHARE] =
		f->g.global_x.v[TP_GNN_GLOBAL_MIXED_SHARE];
	x[TP_GNN_ACTION_ETP] = ac->etp == 1 ? 1.0f : 0.0f;
	shape_features(x, ac->schedule, ac->virtual_stages,
		       ac->sp ? 1.0f : 0.0f);
	x[TP_GNN_ACTION_EVEN] = ac->even ? 1.0f : 0.0f;
	f->act_nodes.n = f->act_w.n = 0;
	for (uint32_t n = 0; n < f->NN; n++)
		if (tp_vec_push(&f->act_nodes, n) ||
		    tp_vec_push(&f->act_w, f->node_w[n]))
			return tp_error_set(err, TP_ENOMEM,
					    "out of memory for GNN features");
	return TP_OK;
}

/* A group action (a device set with degrees, sync and recomputation for
 * the group being decided): its slots and its device nodes (act_nodes /
 * act_w).  TP_EINPUT for an inconsistent action. */
static enum tp_status group_action(struct tp_gnn_features *f,
				   const struct tp_prior_action *ac,
				   uint32_t a, const struct tp_plan *p,
				   float *x, struct tp_error *err)
{
	const struct tp_cluster *c = f->c;
	uint32_t k = f->g.group, nodes_seen = 0, ND = f->ND;
	double peak = 0, inv_t = 0, inv_all = f->inv_all, minmem = INFINITY;
	double bottleneck, comm, comp, memb;
	struct set_memo *sm;
	uint32_t ep, cp;

	if (ac->n_devices == 0 || ac->dp * ac->tp != ac->n_devices)
		return tp_error_set(err, TP_EINPUT,
				    "GNN features: action %u has %u devices, "
				    "dp %u, tp %u",
				    a, ac->n_devices, ac->dp, ac->tp);
	if (ac->mixed_tp > 1 &&
	    (ac->mixed_devices > ac->n_devices || ac->mixed_tp <= ac->tp))
		return tp_error_set(err, TP_EINPUT,
				    "GNN features: action %u has %u of %u "
				    "devices at mixed tp %u (tp %u)",
				    a, ac->mixed_devices, ac->n_devices,
				    ac->mixed_tp, ac->tp);
	for (uint32_t i = 0; i < ac->n_devices; i++)
		if (ac->devices[i] >= ND)
			return tp_error_set(err, TP_EINPUT,
					    "GNN features: action %u names "
					    "device %u of %u",
					    a, ac->devices[i], ND);
	if (set_nodes(f, ac->devices, ac->n_devices) ||
	    !(sm = set_memo(f, ac)))
		return tp_error_set(err, TP_ENOMEM,
				    "out of memory for GNN features");
	bottleneck = sm->bottleneck;
	/* physical nodes spanned: stamp by node index */
	if (++f->stamp == 0) {
		memset(f->node_seen, 0, ND * sizeof(uint32_t));
		f->stamp = 1;
	}
	for (uint32_t i = 0; i < ac->n_devices; i++) {
		uint32_t d = ac->devices[i];
		uint32_t t = c->devices.v[d].type;
		uint32_t pn = c->devices.v[d].node;
		double tg = f->gtime[(size_t)k * f->T + t];
		peak += f->dev_peak[d];
		if (tg > 0)
			inv_t += 1 / tg;
		minmem = fmin(minmem, c->types.v[t].memory_bytes);
		if (pn < ND && f->node_seen[pn] != f->stamp) {
			f->node_seen[pn] = f->stamp;
			nodes_seen++;
		}
	}
	x[TP_GNN_ACTION_DEVICES] = ratio(ac->n_devices, ND);
	x[TP_GNN_ACTION_DP] = log2n(ac->dp, ND);
	x[TP_GNN_ACTION_TP] = clampf(log2(ac->tp) / 3, 0, 1);
	one_hot(x + TP_GNN_ACTION_SYNC, TP_SYNC_COUNT, ac->sync);
	one_hot(x + TP_GNN_ACTION_RECOMPUTE, TP_RECOMPUTE_COUNT,
		ac->recompute);
	x[TP_GNN_ACTION_KEEPS] = ac->keeps_default ? 1.0f : 0.0f;
	x[TP_GNN_ACTION_PEAK] = ratio(peak, f->total_peak);
	x[TP_GNN_ACTION_NODES] = ratio(nodes_seen, f->n_nodes_phys);
	x[TP_GNN_ACTION_SLOWDOWN] =
		inv_t > 0 && inv_all > 0 && ND > 1
			? clampf(log(inv_all / inv_t) / log(ND), 0, 1)
			: 0.0f;
	memb = f->gparam[k] * f->state_factor / ac->tp +
	       f->gsaved[k] * f->batch /
		       (ac->dp * (p->micro_batches ? p->micro_batches : 1)) /
		       ac->tp;
	x[TP_GNN_ACTION_MEMORY] = minmem > 0 && isfinite(minmem)
					  ? clampf(memb / minmem / 2, 0, 1)
					  : 1.0f;
	comp = inv_t > 0 ? f->batch / inv_t : 0;
	comm = ac->dp > 1 && isfinite(bottleneck) && bottleneck > 0
		       ? tp_cost_ring_traffic(TP_COST_ALL_REDUCE, ac->dp) *
				 f->gparam[k] / ac->tp / bottleneck
		       : 0;
	x[TP_GNN_ACTION_SYNC_RING] =
		comp > 0 && comm > 0
			? clampf(log10(comm / comp) / 6 + 0.5, 0, 1)
			: 0.0f;
	/* the same with the action's own method (the parameter server
	   counted as the ring) */
	if (ac->sync == TP_SYNC_HIERARCHICAL && comm > 0)
		comm = hier_sync_s(f, ac, sm, f->gparam[k] / ac->tp);
	x[TP_GNN_ACTION_SYNC_OWN] =
		comp > 0 && comm > 0
			? clampf(log10(comm / comp) / 6 + 0.5, 0, 1)
			: 0.0f;
	plan_ep_cp(p, &ep, &cp);
	x[TP_GNN_ACTION_EP] = clampf(log2(ep) / 7, 0, 1);
	x[TP_GNN_ACTION_CP] = clampf(log2(cp) / 6, 0, 1);
	x[TP_GNN_ACTION_ETP] = plan_etp(p);
	shape_features(x, p->schedule, p->virtual_stages, plan_sp(p));
	x[TP_GNN_ACTION_REST] = ac->applies_to_rest ? 1.0f : 0.0f;
	if (ac->mixed_tp > 1) {
		x[TP_GNN_ACTION_MIXED_TP] = clampf(
			log2((double)ac->mixed_tp / ac->tp) / 3, 0, 1);
		x[TP_GNN_ACTION_MIXED_SHARE] =
			(float)ac->mixed_devices / (float)ac->n_devices;
	}
	return TP_OK;
}

enum tp_status tp_gnn_features_state(struct tp_gnn_features *f,
				     const struct tp_prior_state *st,
				     struct tp_gnn_input *in,
				     struct tp_error *err)
{
	const struct tp_plan *p = st->plan;
	const struct tp_report *rep = st->report;
	struct tp_gnn_graph *g = &f->g;
	uint32_t K = f->K;
	double max_load, sum_mem;
	float x[TP_GNN_F_ACTION];
	enum tp_status s;

	if (st->n_groups != K || !p)
		return tp_error_set(err, TP_EINPUT,
				    "GNN features: state has %u groups, the "
				    "features %u",
				    st->n_groups, K);
	if (rep && rep->n_devices != f->ND)
		rep = NULL;
	if ((s = state_groups(f, p, err)))
		return s;
	max_load = state_loads(f, p);
	state_group_rows(f, p);
	sum_mem = state_device_rows(f, rep, max_load);
	state_edges(f, p);
	state_global(f, st, p, sum_mem);
	/* actions */
	tp_gnn_graph_clear_actions(g);
	g->group = st->level > 0 && st->level <= K ? st->level - 1 : 0;
	/* every group action's share of the cluster's speed on this group
	   divides by the same sum */
	f->inv_all = 0;
	for (uint32_t d = 0; d < f->ND; d++) {
		double t = f->gtime[(size_t)g->group * f->T +
				    f->c->devices.v[d].type];
		if (t > 0)
			f->inv_all += 1 / t;
	}
	for (uint32_t a = 0; a < st->n_actions; a++) {
		const struct tp_prior_action *ac = &st->actions[a];
		memset(x, 0, sizeof(x));
		s = ac->global ? global_action(f, ac, x, err)
			       : group_action(f, ac, a, p, x, err);
		if (s)
			return s;
		if ((s = tp_gnn_graph_add_action(g, f->act_nodes.v,
						 f->act_w.v,
						 (uint32_t)f->act_nodes.n, x,
						 err)))
			return s;
	}
	if ((s = tp_gnn_graph_finish(g, &f->in, err)))
		return s;
	*in = f->in;
	return TP_OK;
}
