#include "cluster.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "precision.h"

void tp_cluster_init(struct tp_cluster *c)
{
	memset(c, 0, sizeof(*c));
	tp_arena_init(&c->arena, 0);
	tp_strmap_init(&c->type_by_name);
	tp_strmap_init(&c->device_by_name);
	tp_strmap_init(&c->node_by_name);
	c->name = "";
	c->oversubscription = 1.0;
}

void tp_cluster_release(struct tp_cluster *c)
{
	if (!c)
		return;
	tp_vec_free(&c->types);
	tp_vec_free(&c->devices);
	tp_vec_free(&c->nodes);
	tp_vec_free(&c->links);
	tp_vec_free(&c->vertex_kind);
	tp_vec_free(&c->tiers);
	tp_strmap_release(&c->type_by_name);
	tp_strmap_release(&c->device_by_name);
	tp_strmap_release(&c->node_by_name);
	tp_routing_free(c->routing);
	free(c->type_count);
	tp_arena_release(&c->arena);
	memset(c, 0, sizeof(*c));
}

enum tp_status tp_cluster_add_type(struct tp_cluster *c,
				   const struct tp_device_type *t,
				   uint32_t *index, struct tp_error *err)
{
	struct tp_device_type copy = *t;
	uint32_t idx = (uint32_t)c->types.n;
	int r;

	copy.name = tp_arena_strdup(&c->arena, t->name);
	copy.source = tp_arena_strdup(&c->arena, t->source ? t->source : "");
	if (!copy.name || !copy.source)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	r = tp_strmap_put(&c->type_by_name, copy.name, idx, NULL);
	if (r < 0)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	if (r > 0)
		return tp_error_set(err, TP_EINPUT,
				    "duplicate device type \"%s\"", t->name);
	if (tp_vec_push(&c->types, copy))
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	c->finalized = false;
	if (index)
		*index = idx;
	return TP_OK;
}

uint32_t tp_cluster_unpriced_types(const struct tp_cluster *c, char *buf,
				   size_t size)
{
	size_t len = 0;
	uint32_t n = 0;

	if (size)
		buf[0] = 0;
	for (size_t t = 0; t < c->types.n; t++) {
		if (!c->type_count[t] || c->types.v[t].price_per_hour > 0)
			continue;
		if (len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%s",
						n ? ", " : "",
						c->types.v[t].name);
		n++;
	}
	return n;
}

uint32_t tp_cluster_find_type(const struct tp_cluster *c, const char *name)
{
	return tp_strmap_get(&c->type_by_name, name);
}

uint32_t tp_cluster_find_device(const struct tp_cluster *c, const char *name)
{
	return tp_strmap_get(&c->device_by_name, name);
}

uint32_t tp_cluster_find_node(const struct tp_cluster *c, const char *name)
{
	return tp_strmap_get(&c->node_by_name, name);
}

uint32_t tp_cluster_add_vertex(struct tp_cluster *c, enum tp_vertex_kind k)
{
	if (c->vertex_kind.n >= TP_NONE - 1 ||
	    tp_vec_push(&c->vertex_kind, (uint8_t)k))
		return TP_NONE;
	c->finalized = false;
	return (uint32_t)(c->vertex_kind.n - 1);
}

enum tp_status tp_cluster_add_node(struct tp_cluster *c, const char *name,
				   uint32_t *index, struct tp_error *err)
{
	struct tp_node n;
	uint32_t idx = (uint32_t)c->nodes.n;
	int r;

	memset(&n, 0, sizeof(n));
	n.name = tp_arena_strdup(&c->arena, name);
	if (!n.name)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	n.first_device = (uint32_t)c->devices.n;
	n.fabric_vertex = TP_NONE;
	n.nic_vertex = TP_NONE;
	n.network_link = TP_NONE;
	r = tp_strmap_put(&c->node_by_name, n.name, idx, NULL);
	if (r < 0)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	if (r > 0)
		return tp_error_set(err, TP_EINPUT, "duplicate node name \"%s\"",
				    name);
	if (tp_vec_push(&c->nodes, n))
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	c->finalized = false;
	if (index)
		*index = idx;
	return TP_OK;
}

enum tp_status tp_cluster_add_device(struct tp_cluster *c, uint32_t node,
				     uint32_t type, const char *name,
				     uint32_t *index, struct tp_error *err)
{
	struct tp_device d;
	struct tp_node *n;
	char buf[512];
	uint32_t idx = (uint32_t)c->devices.n;
	int r;

	if (node + 1 != c->nodes.n || type >= c->types.n)
		return tp_error_set(err, TP_EINTERNAL,
				    "devices must be added to the last node");
	n = &c->nodes.v[node];
	if (!name) {
		snprintf(buf, sizeof(buf), "%s/gpu%u", n->name, n->n_devices);
		name = buf;
	}
	d.name = tp_arena_strdup(&c->arena, name);
	d.type = type;
	d.node = node;
	d.local = n->n_devices;
	d.vertex = tp_cluster_add_vertex(c, TP_VERTEX_DEVICE);
	if (!d.name || d.vertex == TP_NONE)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	r = tp_strmap_put(&c->device_by_name, d.name, idx, NULL);
	if (r < 0)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	if (r > 0)
		return tp_error_set(err, TP_EINPUT,
				    "duplicate device name \"%s\"", name);
	if (tp_vec_push(&c->devices, d))
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	n->n_devices++;
	if (index)
		*index = idx;
	return TP_OK;
}

enum tp_status tp_cluster_add_link(struct tp_cluster *c, uint32_t a,
				   uint32_t b, double bw_Bps, double latency_s,
				   enum tp_link_kind kind,
				   struct tp_error *err)
{
	struct tp_link l = {a, b, bw_Bps, latency_s, kind};

	if (a >= c->vertex_kind.n || b >= c->vertex_kind.n || a == b)
		return tp_error_set(err, TP_EINTERNAL, "bad link endpoints");
	if (!(bw_Bps > 0) || !isfinite(bw_Bps) || !(latency_s >= 0) ||
	    !isfinite(latency_s))
		return tp_error_set(err, TP_EINPUT,
				    "a link needs a positive bandwidth and a "
				    "non-negative latency");
	if (c->links.n >= TP_NONE / 2 - 1 || tp_vec_push(&c->links, l))
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	c->finalized = false;
	return TP_OK;
}

enum tp_status tp_cluster_finalize(struct tp_cluster *c, struct tp_error *err)
{
	uint32_t nd = (uint32_t)c->devices.n;
	enum tp_status st;

	if (c->finalized)
		return TP_OK;
	if (nd == 0)
		return tp_error_set_path(err, TP_EINPUT, "$.nodes",
					 "the topology has no devices");
	tp_routing_free(c->routing);
	c->routing = NULL;
	free(c->type_count);
	c->type_count = tp_calloc(c->types.n + 1, sizeof(*c->type_count));
	if (!c->type_count)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	for (uint32_t d = 0; d < nd; d++)
		c->type_count[c->devices.v[d].type]++;
	if ((st = tp_routing_build(c, &c->routing, err)))
		return st;
	c->finalized = true;
	return TP_OK;
}

double tp_device_peak_flops(const struct tp_cluster *c, uint32_t d,
			    enum tp_dtype dtype)
{
	return tp_precision_gemm_peak(&c->types.v[c->devices.v[d].type],
				      dtype);
}

double tp_cluster_total_peak(const struct tp_cluster *c, enum tp_dtype dtype)
{
	double s = 0;

	for (uint32_t d = 0; d < c->devices.n; d++)
		s += tp_device_peak_flops(c, d, dtype);
	return s;
}

static const char *const link_names[TP_LINK_KIND_COUNT] = {
	"nvlink", "nvswitch", "pcie", "nic", "network", "other"};

const char *tp_link_kind_name(enum tp_link_kind k)
{
	return (unsigned)k < TP_LINK_KIND_COUNT ? link_names[k] : "?";
}

void tp_node_nic_name(const struct tp_node *n, uint32_t v, char *buf,
		      size_t size)
{
	if (n->rails)
		snprintf(buf, size, "%s/nic%u", n->name, v - n->nic_vertex);
	else
		snprintf(buf, size, "%s/nic", n->name);
}

int tp_link_kind_parse(const char *s)
{
	for (int i = 0; i < TP_LINK_KIND_COUNT; i++)
		if (strcmp(link_names[i], s) == 0)
			return i;
	return -1;
}

enum tp_status tp_cluster_build_node(struct tp_cluster *c,
				     const struct tp_node_build *nb,
				     uint32_t *index, struct tp_error *err)
{
	const char *name = nb->name;
	uint32_t type = nb->type, count = nb->count, n_nics = nb->n_nics;
	enum tp_link_kind fabric_kind = nb->fabric_kind;
	double fabric_bw_Bps = nb->fabric_bw_Bps;
	double fabric_latency_s = nb->fabric_latency_s;
	double nic_bw_Bps = nb->nic_bw_Bps, nic_latency_s = nb->nic_latency_s;
	enum tp_status st;
	uint32_t node, d;
	struct tp_node *n;

	if (type >= c->types.n)
		return tp_error_set(err, TP_EINTERNAL, "unknown device type");
	if (nb->rails && (n_nics != count || !(nic_bw_Bps > 0)))
		return tp_error_set(err, TP_EINPUT,
				    "node \"%s\": rails need one NIC per "
				    "device (%u NICs for %u devices); set the "
				    "NIC count to %u or drop the rails",
				    name ? name : "", n_nics, count, count);
	st = tp_cluster_add_node(c, name, &node, err);
	if (st)
		return st;
	n = &c->nodes.v[node];
	n->fabric_kind = fabric_kind;
	n->fabric_bw_Bps = fabric_bw_Bps;
	n->fabric_latency_s = fabric_latency_s;
	n->n_nics = n_nics;
	n->nic_bw_Bps = nic_bw_Bps;
	n->nic_latency_s = nic_latency_s;
	n->network_link = TP_NONE;
	if (fabric_bw_Bps > 0) {
		n->fabric_vertex = tp_cluster_add_vertex(c, TP_VERTEX_FABRIC);
		if (n->fabric_vertex == TP_NONE)
			return tp_error_set(err, TP_ENOMEM, "out of memory");
	}
	if (n_nics > 0 && nic_bw_Bps > 0) {
		/* rails: NIC r is vertex nic_vertex + r */
		n->rails = nb->rails ? count : 0;
		for (uint32_t r = 0; r < (n->rails ? n->rails : 1); r++) {
			uint32_t v = tp_cluster_add_vertex(c, TP_VERTEX_NIC);
			if (v == TP_NONE)
				return tp_error_set(err, TP_ENOMEM,
						    "out of memory");
			if (r == 0)
				c->nodes.v[node].nic_vertex = v;
		}
		n = &c->nodes.v[node];
	}
	for (uint32_t k = 0; k < count; k++) {
		st = tp_cluster_add_device(c, node, type, NULL, &d, err);
		if (st)
			return st;
		n = &c->nodes.v[node];
		if (n->fabric_vertex != TP_NONE) {
			st = tp_cluster_add_link(c, c->devices.v[d].vertex,
						 n->fabric_vertex, fabric_bw_Bps,
						 fabric_latency_s / 2,
						 fabric_kind, err);
			if (st)
				return st;
		}
		if (n->nic_vertex != TP_NONE) {
			st = tp_cluster_add_link(c, c->devices.v[d].vertex,
						 n->nic_vertex +
							 (n->rails ? k : 0),
						 nic_bw_Bps, 0, TP_LINK_NIC,
						 err);
			if (st)
				return st;
		}
	}
	if (index)
		*index = node;
	return TP_OK;
}

enum tp_status tp_cluster_connect_star(struct tp_cluster *c,
				       double oversubscription, uint32_t *sw,
				       struct tp_error *err)
{
	uint32_t v;
	enum tp_status st;

	if (!(oversubscription >= 1) || !isfinite(oversubscription))
		return tp_error_set(err, TP_EINPUT,
				    "oversubscription must be at least 1");
	v = tp_cluster_add_vertex(c, TP_VERTEX_SWITCH);
	if (v == TP_NONE)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	c->oversubscription = oversubscription;
	for (uint32_t i = 0; i < c->nodes.n; i++) {
		struct tp_node *n = &c->nodes.v[i];
		uint32_t first = (uint32_t)c->links.n;
		if (n->nic_vertex == TP_NONE || n->network_link != TP_NONE)
			continue;
		for (uint32_t r = 0; r < (n->rails ? n->rails : 1); r++) {
			n = &c->nodes.v[i];
			st = tp_cluster_add_link(
				c, n->nic_vertex + r, v,
				(n->rails ? 1 : n->n_nics) * n->nic_bw_Bps /
					oversubscription,
				n->nic_latency_s / 2, TP_LINK_NETWORK, err);
			if (st)
				return st;
		}
		c->nodes.v[i].network_link = first;
	}
	if (sw)
		*sw = v;
	return TP_OK;
}

/* One level of the tree being built: its vertices (nodes at level 0) and
 * each one's downlink capacity. */
struct tier_level {
	TP_VEC(uint32_t) v;
	TP_VEC(double) cap;
	TP_VEC(uint32_t) unit; /* leaves: their group of nodes */
	size_t unit_next;
};

/* One switch of tier tr above the level's entries k..end-1 (switches). */
static enum tp_status switch_group(struct tp_cluster *c,
				   const struct tp_tier *tr,
				   const struct tier_level *cur, size_t k,
				   size_t end, struct tier_level *nx,
				   struct tp_error *err)
{
	uint32_t sw = tp_cluster_add_vertex(c, TP_VERTEX_SWITCH);
	double down = 0;
	enum tp_status st;

	if (sw == TP_NONE)
		return TP_ENOMEM;
	for (size_t m = k; m < end; m++) {
		double bw = tr->bw_Bps > 0
				? tr->bw_Bps
				: cur->cap.v[m] / tr->oversubscription;
		if ((st = tp_cluster_add_link(c, cur->v.v[m], sw, bw,
					      tr->latency_s / 2,
					      TP_LINK_NETWORK, err)))
			return st;
		down += bw;
	}
	if (tp_vec_push(&nx->v, sw) || tp_vec_push(&nx->cap, down))
		return TP_ENOMEM;
	return TP_OK;
}

/* The leaves of tier 0 above nodes k..end-1 of the level: one switch,
 * or one per rail when a node of the group has rails (leaf r joins NIC r
 * of each node with more than r rails, and a node without rails on leaf
 * 0).  Sets the nodes' network_link (rail 0's link). */
static enum tp_status leaf_group(struct tp_cluster *c, const struct tp_tier *tr,
				 const struct tier_level *cur, size_t k,
				 size_t end, struct tier_level *nx,
				 struct tp_error *err)
{
	uint32_t n_leaves = 1;
	enum tp_status st;

	for (size_t m = k; m < end; m++)
		if (c->nodes.v[cur->v.v[m]].rails > n_leaves)
			n_leaves = c->nodes.v[cur->v.v[m]].rails;
	for (uint32_t r = 0; r < n_leaves; r++) {
		uint32_t sw = tp_cluster_add_vertex(c, TP_VERTEX_SWITCH);
		double down = 0;
		if (sw == TP_NONE)
			return TP_ENOMEM;
		for (size_t m = k; m < end; m++) {
			struct tp_node *n = &c->nodes.v[cur->v.v[m]];
			double lat = tr->latency_s / 2 + n->nic_latency_s / 2;
			double bw = tr->bw_Bps > 0
					? tr->bw_Bps
					: (n->rails ? n->nic_bw_Bps
						    : cur->cap.v[m]) /
						  tr->oversubscription;
			if (r >= (n->rails ? n->rails : 1))
				continue;
			if ((st = tp_cluster_add_link(c, n->nic_vertex + r, sw,
						      bw, lat, TP_LINK_NETWORK,
						      err)))
				return st;
			if (r == 0)
				c->nodes.v[cur->v.v[m]].network_link =
					(uint32_t)c->links.n - 1;
			down += bw;
		}
		if (tp_vec_push(&nx->v, sw) || tp_vec_push(&nx->cap, down) ||
		    tp_vec_push(&nx->unit, (uint32_t)nx->unit_next))
			return TP_ENOMEM;
	}
	nx->unit_next++;
	return TP_OK;
}

/* The end of the run of tier 1 above entries from k: `group` groups of
 * nodes (a rail-optimised leaf group's leaves stay under one switch of
 * tier 1), or `group` switches when no node has rails. */
static size_t group_end(const struct tier_level *cur, size_t k, size_t group,
			bool by_unit)
{
	size_t end = k;

	if (!by_unit)
		return k + group < cur->v.n ? k + group : cur->v.n;
	while (end < cur->v.n && cur->unit.v[end] < cur->unit.v[k] + group)
		end++;
	return end;
}

enum tp_status tp_cluster_connect_tiers(struct tp_cluster *c,
					const struct tp_tier *tiers,
					uint32_t n_tiers, struct tp_error *err)
{
	struct tier_level lv[2], *cur = &lv[0], *nx = &lv[1], *tmp;
	enum tp_status st = TP_OK;
	bool rails = false;

	memset(lv, 0, sizeof(lv));
	if (n_tiers == 0)
		return tp_error_set(err, TP_EINPUT, "no switch tiers");
	for (uint32_t i = 0; i < c->nodes.n; i++) {
		const struct tp_node *n = &c->nodes.v[i];
		if (n->nic_vertex == TP_NONE || n->network_link != TP_NONE)
			continue;
		rails |= n->rails > 0;
		if (tp_vec_push(&cur->v, i) ||
		    tp_vec_push(&cur->cap, n->n_nics * n->nic_bw_Bps))
			goto nomem;
	}
	for (uint32_t t = 0; t < n_tiers; t++) {
		const struct tp_tier *tr = &tiers[t];
		struct tp_tier copy = *tr;
		size_t group = tr->group ? tr->group : cur->v.n;

		if (!(tr->oversubscription >= 1) ||
		    !isfinite(tr->oversubscription) || !(tr->bw_Bps >= 0) ||
		    !isfinite(tr->bw_Bps) || !(tr->latency_s >= 0) ||
		    !isfinite(tr->latency_s)) {
			st = tp_error_set(err, TP_EINPUT,
					  "tier %u: a bandwidth, latency or "
					  "oversubscription out of range",
					  t);
			goto out;
		}
		copy.name = tp_arena_strdup(&c->arena, tr->name ? tr->name : "");
		if (!copy.name || tp_vec_push(&c->tiers, copy))
			goto nomem;
		nx->v.n = nx->cap.n = nx->unit.n = nx->unit_next = 0;
		if (t == 1 && rails && !tr->group)
			group = cur->unit_next;
		for (size_t k = 0, end; k < cur->v.n; k = end) {
			end = group_end(cur, k, group, t == 1 && rails);
			if (t == 0)
				st = leaf_group(c, tr, cur, k, end, nx, err);
			else
				st = switch_group(c, tr, cur, k, end, nx, err);
			if (st == TP_ENOMEM)
				goto nomem;
			if (st)
				goto out;
		}
		tmp = cur, cur = nx, nx = tmp;
	}
	if (cur->v.n > 1)
		st = tp_error_set(err, TP_EINPUT,
				  "the last tier (\"%s\") leaves %zu switches "
				  "unjoined; omit its \"group\" (one switch "
				  "joins all) or add a tier above it",
				  tiers[n_tiers - 1].name
					  ? tiers[n_tiers - 1].name
					  : "",
				  cur->v.n);
	goto out;
nomem:
	st = tp_error_set(err, TP_ENOMEM, "out of memory");
out:
	for (int k = 0; k < 2; k++) {
		tp_vec_free(&lv[k].v);
		tp_vec_free(&lv[k].cap);
		tp_vec_free(&lv[k].unit);
	}
	return st;
}

static int cmp_dev(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	return (a > b) - (a < b);
}

static bool merge_meets(const uint32_t *a, uint32_t na, const uint32_t *b,
			uint32_t nb)
{
	uint32_t i = 0, j = 0;

	while (i < na && j < nb) {
		if (a[i] == b[j])
			return true;
		if (a[i] < b[j])
			i++;
		else
			j++;
	}
	return false;
}

bool tp_devs_meet(const uint32_t *a, uint32_t na, bool a_sorted,
		  const uint32_t *b, uint32_t nb, bool b_sorted)
{
	uint32_t *x;
	bool meet;

	if (a_sorted && b_sorted)
		return merge_meets(a, na, b, nb);
	x = malloc(((size_t)na + nb + 1) * sizeof(*x));
	if (!x) {
		for (uint32_t i = 0; i < na; i++)
			for (uint32_t j = 0; j < nb; j++)
				if (a[i] == b[j])
					return true;
		return false;
	}
	if (na)
		memcpy(x, a, na * sizeof(*x));
	if (nb)
		memcpy(x + na, b, nb * sizeof(*x));
	qsort(x, na, sizeof(*x), cmp_dev);
	qsort(x + na, nb, sizeof(*x), cmp_dev);
	meet = merge_meets(x, na, x + na, nb);
	free(x);
	return meet;
}
