/*
 * topo_io.c - tagplan-topology/1 <-> struct tp_cluster (README section 2).
 *
 * Nodes are built exactly as tp_cluster_build_node does (fabric vertex,
 * NIC vertex, then per device: device vertex, fabric link, NIC link), but
 * with several device types per node; then the node's explicit links.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonw.h"
#include "io_int.h"

static const char *const topo_fields[] = {"format", "name",    "device_types",
					  "nodes",  "network", NULL};
static const char *const node_fields[] = {"name",  "count", "devices", "fabric",
					  "links", "nic",   NULL};
static const char *const dev_fields[] = {"type", "count", NULL};
static const char *const fabric_fields[] = {"kind", "bandwidth_Bps",
					    "latency_s", NULL};
static const char *const nlink_fields[] = {"a",		"b",	"bandwidth_Bps",
					   "latency_s", "kind", NULL};
static const char *const nic_fields[] = {"count", "bandwidth_Bps", "latency_s",
					 "rails", NULL};
static const char *const net_fields[] = {"oversubscription", "switches",
					 "links", "tiers", NULL};
static const char *const tier_fields[] = {"name",      "group",
					  "bandwidth_Bps", "latency_s",
					  "oversubscription", NULL};
static const char *const sw_fields[] = {"name", NULL};
static const char *const netlink_fields[] = {"a", "b", "bandwidth_Bps",
					     "latency_s", NULL};

static int parse_fabric_kind(const char *s)
{
	int k = tp_link_kind_parse(s);
	return k == TP_LINK_NIC || k == TP_LINK_NETWORK ? -1 : k;
}

struct dev_run {
	uint32_t type, count;
};

struct node_spec {
	const char *name;
	int64_t count; /* replicas, 0 = no "count" field */
	TP_VEC(struct dev_run) runs;
	uint32_t n_devices;
	bool fabric;
	int fabric_kind;
	double fabric_bw, fabric_lat;
	bool nic;
	int64_t n_nics;
	double nic_bw, nic_lat;
	bool rails; /* one NIC per device, each on its own rail */
	const struct tp_json *links;
};

static enum tp_status read_node(struct tp_jctx *j, const struct tp_json *v,
				const struct tp_cluster *c,
				struct node_spec *ns)
{
	const struct tp_json *devs, *fab, *nic;
	enum tp_status st;
	size_t old;

	if ((st = tp_jctx_object(j, v, "a node", node_fields)) ||
	    (st = tp_io_get_name(j, v, "name", true, TP_IO_NAME_MAX - 8, NULL,
				 &ns->name)) ||
	    (st = tp_jget_int(j, v, "count", false, 1, TP_IO_MAX_DEVICES, 1,
			      &ns->count)) ||
	    (st = tp_jget_array(j, v, "devices", true, true, &devs)) ||
	    (st = tp_jget_object(j, v, "fabric", false, &fab)) ||
	    (st = tp_jget_array(j, v, "links", false, false, &ns->links)) ||
	    (st = tp_jget_object(j, v, "nic", false, &nic)))
		return st;
	if (!tp_json_get(v, "count"))
		ns->count = 0;
	for (size_t k = 0; k < devs->n; k++) {
		const struct tp_json *d = devs->items[k];
		struct dev_run r;
		const char *type;
		int64_t cnt;

		old = tp_jctx_push_key(j, "devices");
		tp_jctx_push_index(j, k);
		if ((st = tp_jctx_object(j, d, "a device entry", dev_fields)) ||
		    (st = tp_jget_string(j, d, "type", true, TP_IO_NAME_MAX,
					 true, NULL, &type)) ||
		    (st = tp_io_find_type(j, "type", c, type, &r.type)) ||
		    (st = tp_jget_int(j, d, "count", false, 1,
				      TP_IO_MAX_NODE_DEVICES, 1, &cnt)))
			return st;
		r.count = (uint32_t)cnt;
		if (ns->n_devices + r.count > TP_IO_MAX_NODE_DEVICES)
			return tp_jctx_fail(j, "count",
					    "more than %d devices in one node",
					    TP_IO_MAX_NODE_DEVICES);
		ns->n_devices += r.count;
		if (tp_vec_push(&ns->runs, r))
			return tp_error_set(j->err, TP_ENOMEM, "out of memory");
		tp_jctx_pop(j, old);
	}
	if (fab) {
		old = tp_jctx_push_key(j, "fabric");
		if ((st = tp_jctx_object(j, fab, "a fabric", fabric_fields)) ||
		    (st = tp_jget_enum(j, fab, "kind", true, parse_fabric_kind,
				       "nvswitch | pcie | nvlink | other", 0,
				       &ns->fabric_kind)) ||
		    (st = tp_io_get_quantity(j, fab, "bandwidth_Bps", true,
					 TP_JNUM_POS, TP_IOQ_BANDWIDTH, 0, &ns->fabric_bw)) ||
		    (st = tp_io_get_quantity(j, fab, "latency_s", true,
					 TP_JNUM_NONNEG, TP_IOQ_LATENCY, 0, &ns->fabric_lat)))
			return st;
		ns->fabric = true;
		tp_jctx_pop(j, old);
	}
	if (nic) {
		old = tp_jctx_push_key(j, "nic");
		if ((st = tp_jctx_object(j, nic, "a NIC", nic_fields)) ||
		    (st = tp_jget_int(j, nic, "count", false, 1, 1024, 1,
				      &ns->n_nics)) ||
		    (st = tp_io_get_quantity(j, nic, "bandwidth_Bps", true,
					 TP_JNUM_POS, TP_IOQ_BANDWIDTH, 0, &ns->nic_bw)) ||
		    (st =
			 tp_io_get_quantity(j, nic, "latency_s", true,
					TP_JNUM_NONNEG, TP_IOQ_LATENCY, 0, &ns->nic_lat)) ||
		    (st = tp_jget_bool(j, nic, "rails", false, false,
				       &ns->rails)))
			return st;
		if (ns->rails && ns->n_nics != (int64_t)ns->n_devices)
			return tp_jctx_fail(
			    j, "rails",
			    "rails need one NIC per device: this node has %u "
			    "devices and %lld NICs; set \"count\": %u or "
			    "drop \"rails\"",
			    ns->n_devices, (long long)ns->n_nics,
			    ns->n_devices);
		ns->nic = true;
		tp_jctx_pop(j, old);
	}
	/* check the explicit links now (built per replica later) */
	for (size_t k = 0; ns->links && k < ns->links->n; k++) {
		const struct tp_json *l = ns->links->items[k];
		int64_t a, b;
		double bw, lat;
		int kind;

		old = tp_jctx_push_key(j, "links");
		tp_jctx_push_index(j, k);
		if ((st = tp_jctx_object(j, l, "a link", nlink_fields)) ||
		    (st = tp_jget_int(j, l, "a", true, 0,
				      (int64_t)ns->n_devices - 1, 0, &a)) ||
		    (st = tp_jget_int(j, l, "b", true, 0,
				      (int64_t)ns->n_devices - 1, 0, &b)) ||
		    (st = tp_io_get_quantity(j, l, "bandwidth_Bps", true,
					 TP_JNUM_POS, TP_IOQ_BANDWIDTH, 0, &bw)) ||
		    (st = tp_io_get_quantity(j, l, "latency_s", true,
					 TP_JNUM_NONNEG, TP_IOQ_LATENCY, 0, &lat)) ||
		    (st = tp_jget_enum(j, l, "kind", false, parse_fabric_kind,
				       "nvlink | pcie | nvswitch | other",
				       TP_LINK_NVLINK, &kind)))
			return st;
		if (a == b)
			return tp_jctx_fail(
			    j, "b",
			    "a link joins two different devices "
			    "(a and b are both %lld)",
			    (long long)a);
		tp_jctx_pop(j, old);
	}
	return TP_OK;
}

/* Build one replica of a node spec into c. */
static enum tp_status build_node(struct tp_jctx *j, struct tp_cluster *c,
				 const struct node_spec *ns, const char *name)
{
	uint32_t node, first;
	struct tp_node *n;
	enum tp_status st;

	if (tp_cluster_find_node(c, name) != TP_NONE && ns->count)
		/* "count" names its nodes NAME-0, NAME-1, ... */
		return tp_jctx_fail(j, "name",
				    "duplicate node name \"%s\" (with "
				    "\"count\", the nodes are named %s-0, "
				    "%s-1, ...); node names must be unique: "
				    "give the entries different names",
				    name, ns->name, ns->name);
	if (tp_cluster_find_node(c, name) != TP_NONE)
		return tp_jctx_fail(j, "name",
				    "duplicate node name \"%s\"; node names "
				    "must be unique",
				    name);
	if ((st = tp_cluster_add_node(c, name, &node, j->err)))
		return tp_io_wrap(j, "name", st);
	n = &c->nodes.v[node];
	if (ns->fabric) {
		n->fabric_kind = (enum tp_link_kind)ns->fabric_kind;
		n->fabric_bw_Bps = ns->fabric_bw;
		n->fabric_latency_s = ns->fabric_lat;
		n->fabric_vertex = tp_cluster_add_vertex(c, TP_VERTEX_FABRIC);
		if (n->fabric_vertex == TP_NONE)
			return tp_error_set(j->err, TP_ENOMEM, "out of memory");
	}
	if (ns->nic) {
		n->n_nics = (uint32_t)ns->n_nics;
		n->nic_bw_Bps = ns->nic_bw;
		n->nic_latency_s = ns->nic_lat;
		n->rails = ns->rails ? ns->n_devices : 0;
		/* rails: NIC k is vertex nic_vertex + k, device k's */
		for (uint32_t k = 0; k < (n->rails ? n->rails : 1); k++) {
			uint32_t v = tp_cluster_add_vertex(c, TP_VERTEX_NIC);
			if (v == TP_NONE)
				return tp_error_set(j->err, TP_ENOMEM,
						    "out of memory");
			if (k == 0)
				c->nodes.v[node].nic_vertex = v;
		}
	}
	first = (uint32_t)c->devices.n;
	for (size_t r = 0; r < ns->runs.n; r++) {
		for (uint32_t k = 0; k < ns->runs.v[r].count; k++) {
			uint32_t d;
			const struct tp_node *nn;
			if ((st = tp_cluster_add_device(c, node,
							ns->runs.v[r].type,
							NULL, &d, j->err)))
				return tp_io_wrap(j, "devices", st);
			nn = &c->nodes.v[node];
			if (nn->fabric_vertex != TP_NONE &&
			    (st = tp_cluster_add_link(
				 c, c->devices.v[d].vertex, nn->fabric_vertex,
				 nn->fabric_bw_Bps, nn->fabric_latency_s / 2,
				 nn->fabric_kind, j->err)))
				return tp_io_wrap(j, "fabric", st);
			if (nn->nic_vertex != TP_NONE &&
			    (st = tp_cluster_add_link(
				 c, c->devices.v[d].vertex,
				 nn->nic_vertex +
					 (nn->rails ? d - first : 0),
				 nn->nic_bw_Bps, 0, TP_LINK_NIC, j->err)))
				return tp_io_wrap(j, "nic", st);
		}
	}
	for (size_t k = 0; ns->links && k < ns->links->n; k++) {
		const struct tp_json *l = ns->links->items[k];
		const struct tp_json *kind = tp_json_get(l, "kind");
		uint32_t a = (uint32_t)tp_json_get(l, "a")->num;
		uint32_t b = (uint32_t)tp_json_get(l, "b")->num;
		enum tp_link_kind lk =
		    kind ? (enum tp_link_kind)tp_link_kind_parse(kind->str)
			 : TP_LINK_NVLINK;
		if ((st = tp_cluster_add_link(
			 c, c->devices.v[first + a].vertex,
			 c->devices.v[first + b].vertex,
			 tp_json_get(l, "bandwidth_Bps")->num,
			 tp_json_get(l, "latency_s")->num, lk, j->err)))
			return tp_io_wrap(j, "links", st);
	}
	return TP_OK;
}

/* The vertex a network link endpoint names: a node's NIC or a switch. */
static enum tp_status net_endpoint(struct tp_jctx *j, const char *key,
				   struct tp_cluster *c,
				   const struct tp_strmap *switches,
				   const char *name, uint32_t *v,
				   uint32_t *node)
{
	uint32_t n = tp_cluster_find_node(c, name);

	*node = TP_NONE;
	if (n != TP_NONE) {
		if (c->nodes.v[n].nic_vertex == TP_NONE)
			return tp_jctx_fail(
			    j, key,
			    "node \"%s\" has no \"nic\"; give it "
			    "one to join the network",
			    name);
		if (c->nodes.v[n].rails)
			return tp_jctx_fail(
			    j, key,
			    "node \"%s\" has \"rails\", which join a "
			    "star or \"tiers\", not explicit links; drop "
			    "\"rails\" or describe the network with tiers",
			    name);
		*v = c->nodes.v[n].nic_vertex;
		*node = n;
		return TP_OK;
	}
	*v = tp_strmap_get(switches, name);
	if (*v != TP_STRMAP_NONE)
		return TP_OK;
	return tp_jctx_fail(j, key,
			    "\"%.100s\" is neither a node nor a switch of "
			    "\"network\".\"switches\"",
			    name);
}

/* "network": {"tiers": [...]}: a tree of switch tiers (struct tp_tier). */
static enum tp_status read_tiers(struct tp_jctx *j, const struct tp_json *net,
				 double over, const struct tp_json *sws,
				 const struct tp_json *links,
				 struct tp_cluster *c)
{
	const struct tp_json *tiers;
	struct tp_tier tv[TP_IO_MAX_TIERS];
	enum tp_status st;
	size_t old;

	if ((st = tp_jget_array(j, net, "tiers", true, true, &tiers)))
		return st;
	if (sws || links)
		return tp_jctx_fail(j, sws ? "switches" : "links",
				    "\"tiers\" describe the whole network: "
				    "give either tiers or switches and links, "
				    "not both");
	if (over != 1)
		return tp_jctx_fail(j, "oversubscription",
				    "with \"tiers\", give each tier its own "
				    "\"oversubscription\" (the first tier's "
				    "divides the nodes' uplinks)");
	if (tiers->n > TP_IO_MAX_TIERS)
		return tp_jctx_fail(j, "tiers",
				    "%zu tiers; at most %d (leaf, spine, "
				    "core, zones: a route climbs each)",
				    tiers->n, TP_IO_MAX_TIERS);
	for (size_t k = 0; k < tiers->n; k++) {
		const struct tp_json *t = tiers->items[k];
		int64_t group;

		old = tp_jctx_push_key(j, "tiers");
		tp_jctx_push_index(j, k);
		if ((st = tp_jctx_object(j, t, "a tier", tier_fields)) ||
		    (st = tp_io_get_name(j, t, "name", true, TP_IO_NAME_MAX,
					 NULL, &tv[k].name)) ||
		    (st = tp_jget_int(j, t, "group", false, 1,
				      TP_IO_MAX_DEVICES, 0, &group)) ||
		    (st = tp_io_get_quantity(j, t, "bandwidth_Bps", false,
					     TP_JNUM_POS, TP_IOQ_BANDWIDTH, 0,
					     &tv[k].bw_Bps)) ||
		    (st = tp_io_get_quantity(j, t, "latency_s", false,
					     TP_JNUM_NONNEG, TP_IOQ_LATENCY, 0,
					     &tv[k].latency_s)) ||
		    (st = tp_io_get_quantity(j, t, "oversubscription", false,
					     TP_JNUM_GE1,
					     TP_IOQ_OVERSUBSCRIPTION, 1.0,
					     &tv[k].oversubscription)))
			return st;
		bool has_group = tp_json_get(t, "group") != NULL;

		tv[k].group = has_group ? (uint32_t)group : 0;
		if (!has_group && k + 1 < tiers->n)
			return tp_jctx_fail(
			    j, NULL,
			    "tier \"%s\" has no \"group\" (how many nodes "
			    "or switches below each of its switches); only "
			    "the last tier may omit it (one switch joins "
			    "all)",
			    tv[k].name);
		if (tv[k].bw_Bps > 0 && tv[k].oversubscription != 1)
			return tp_jctx_fail(
			    j, "oversubscription",
			    "give \"bandwidth_Bps\" (each uplink's) or "
			    "\"oversubscription\" (of the links below), "
			    "not both");
		tp_jctx_pop(j, old);
	}
	c->oversubscription = 1;
	old = tp_jctx_push_key(j, "tiers");
	st = tp_cluster_connect_tiers(c, tv, (uint32_t)tiers->n, j->err);
	if (st)
		return tp_io_wrap(j, NULL, st);
	tp_jctx_pop(j, old);
	return TP_OK;
}

static enum tp_status read_network(struct tp_jctx *j, const struct tp_json *net,
				   struct tp_cluster *c)
{
	const struct tp_json *sws = NULL, *links = NULL;
	double over = 1.0;
	struct tp_strmap swmap;
	enum tp_status st;
	size_t old = tp_jctx_push_key(j, "network");
	bool any_nic = false;

	tp_strmap_init(&swmap);
	if (net &&
	    ((st = tp_jctx_object(j, net, "the network", net_fields)) ||
	     (st = tp_io_get_quantity(j, net, "oversubscription", false,
				  TP_JNUM_GE1, TP_IOQ_OVERSUBSCRIPTION, 1.0, &over)) ||
	     (st = tp_jget_array(j, net, "switches", false, false, &sws)) ||
	     (st = tp_jget_array(j, net, "links", false, false, &links))))
		goto out;
	if (net && tp_json_get(net, "tiers")) {
		st = read_tiers(j, net, over, sws, links, c);
		goto out;
	}
	if (sws && sws->n && !(links && links->n)) {
		st = tp_jctx_fail(j, "switches",
				  "switches need \"links\" to join them to the "
				  "nodes");
		goto out;
	}
	if (!links || !links->n) {
		for (size_t k = 0; k < c->nodes.n; k++)
			any_nic |= c->nodes.v[k].nic_vertex != TP_NONE;
		c->oversubscription = over;
		if (any_nic &&
		    (st = tp_cluster_connect_star(c, over, NULL, j->err)))
			st = tp_io_wrap(j, "oversubscription", st);
		else
			st = TP_OK;
		goto out;
	}
	c->oversubscription = over;
	for (size_t k = 0; sws && k < sws->n; k++) {
		const char *name;
		uint32_t v;
		size_t o2 = tp_jctx_push_key(j, "switches");
		int r;

		tp_jctx_push_index(j, k);
		if ((st = tp_jctx_object(j, sws->items[k], "a switch",
					 sw_fields)) ||
		    (st = tp_io_get_name(j, sws->items[k], "name", true,
					 TP_IO_NAME_MAX, NULL, &name)))
			goto out;
		if (tp_cluster_find_node(c, name) != TP_NONE) {
			st = tp_jctx_fail(
			    j, "name", "\"%s\" is already a node name", name);
			goto out;
		}
		v = tp_cluster_add_vertex(c, TP_VERTEX_SWITCH);
		if (v == TP_NONE ||
		    (r = tp_strmap_put(&swmap, name, v, NULL)) < 0) {
			st = tp_error_set(j->err, TP_ENOMEM, "out of memory");
			goto out;
		}
		if (r > 0) {
			st = tp_jctx_fail(j, "name",
					  "duplicate switch name \"%s\"", name);
			goto out;
		}
		tp_jctx_pop(j, o2);
	}
	for (size_t k = 0; k < links->n; k++) {
		const struct tp_json *l = links->items[k];
		const char *a, *b;
		double bw, lat;
		uint32_t va, vb, na, nb;
		size_t o2 = tp_jctx_push_key(j, "links");

		tp_jctx_push_index(j, k);
		if ((st = tp_jctx_object(j, l, "a network link",
					 netlink_fields)) ||
		    (st = tp_jget_string(j, l, "a", true, TP_IO_NAME_MAX, true,
					 NULL, &a)) ||
		    (st = tp_jget_string(j, l, "b", true, TP_IO_NAME_MAX, true,
					 NULL, &b)) ||
		    (st = tp_io_get_quantity(j, l, "bandwidth_Bps", true,
					 TP_JNUM_POS, TP_IOQ_BANDWIDTH, 0, &bw)) ||
		    (st = tp_io_get_quantity(j, l, "latency_s", true,
					 TP_JNUM_NONNEG, TP_IOQ_LATENCY, 0, &lat)) ||
		    (st = net_endpoint(j, "a", c, &swmap, a, &va, &na)) ||
		    (st = net_endpoint(j, "b", c, &swmap, b, &vb, &nb)))
			goto out;
		if (va == vb) {
			st =
			    tp_jctx_fail(j, "b",
					 "a link joins two different endpoints "
					 "(both are \"%s\")",
					 a);
			goto out;
		}
		if ((st = tp_cluster_add_link(c, va, vb, bw, lat,
					      TP_LINK_NETWORK, j->err))) {
			st = tp_io_wrap(j, NULL, st);
			goto out;
		}
		if (na != TP_NONE && c->nodes.v[na].network_link == TP_NONE)
			c->nodes.v[na].network_link = (uint32_t)c->links.n - 1;
		if (nb != TP_NONE && c->nodes.v[nb].network_link == TP_NONE)
			c->nodes.v[nb].network_link = (uint32_t)c->links.n - 1;
		tp_jctx_pop(j, o2);
	}
	st = TP_OK;
out:
	tp_strmap_release(&swmap);
	if (!st)
		tp_jctx_pop(j, old);
	return st;
}

static enum tp_status read_topology(struct tp_jctx *j,
				    const struct tp_json *root,
				    struct tp_cluster *c, uint32_t **file_node)
{
	const struct tp_json *types, *nodes, *net;
	const char *name;
	struct node_spec ns;
	enum tp_status st;
	size_t total = 0;
	TP_VEC(uint32_t) origin = {0};

	memset(&ns, 0, sizeof(ns));
	if ((st = tp_jctx_object(j, root, "a topology", topo_fields)) ||
	    (st = tp_io_get_name(j, root, "name", false, TP_IO_NAME_MAX, "",
				 &name)) ||
	    (st = tp_jget_array(j, root, "device_types", false, false,
				&types)) ||
	    (st = tp_jget_array(j, root, "nodes", true, true, &nodes)) ||
	    (st = tp_jget_object(j, root, "network", false, &net)))
		return st;
	c->name = tp_arena_strdup(&c->arena, name);
	if (!c->name)
		return tp_error_set(j->err, TP_ENOMEM, "out of memory");
	if ((st = tp_devices_load_builtin(c, j->err)))
		return st;
	for (size_t k = 0; types && k < types->n; k++) {
		struct tp_device_type t;
		size_t old = tp_jctx_push_key(j, "device_types");

		tp_jctx_push_index(j, k);
		if ((st = tp_io_read_device_type(j, types->items[k], c, true,
						 &t)))
			return st;
		if (tp_cluster_find_type(c, t.name) != TP_NONE)
			return tp_jctx_fail(
			    j, "name", "duplicate device type \"%s\"", t.name);
		if ((st = tp_cluster_add_type(c, &t, NULL, j->err)))
			return tp_io_wrap(j, "name", st);
		tp_jctx_pop(j, old);
	}
	for (size_t k = 0; k < nodes->n; k++) {
		size_t old = tp_jctx_push_key(j, "nodes");
		int64_t reps;

		tp_jctx_push_index(j, k);
		ns.runs.n = 0;
		ns.n_devices = 0;
		ns.fabric = ns.nic = false;
		if ((st = read_node(j, nodes->items[k], c, &ns)))
			goto out;
		reps = ns.count ? ns.count : 1;
		total += (size_t)reps * ns.n_devices;
		if (total > TP_IO_MAX_DEVICES) {
			st = tp_jctx_fail(
			    j, NULL,
			    "the topology has more than %d devices "
			    "(the limit of this version)",
			    TP_IO_MAX_DEVICES);
			goto out;
		}
		for (int64_t r = 0; r < reps; r++) {
			char nm[TP_IO_NAME_MAX + 32];
			if (ns.count)
				snprintf(nm, sizeof(nm), "%s-%lld", ns.name,
					 (long long)r);
			else
				snprintf(nm, sizeof(nm), "%s", ns.name);
			if ((st = build_node(j, c, &ns, nm)))
				goto out;
			if (tp_vec_push(&origin, (uint32_t)k)) {
				st = tp_error_set(j->err, TP_ENOMEM,
						  "out of memory");
				goto out;
			}
		}
		tp_jctx_pop(j, old);
	}
	if ((st = read_network(j, net, c)))
		goto out;
	*file_node = origin.v;
	origin.v = NULL;
out:
	tp_vec_free(&ns.runs);
	tp_vec_free(&origin);
	return st;
}

/* A disconnected topology (finalize's error at IR node idx, another node
 * than device 0's) whose cut is a node without "nic": name that node and
 * the field to add, at its place in the file, instead of "add a link or
 * a network". */
static void nic_hint(const struct tp_cluster *c, unsigned idx,
		     const uint32_t *file_node, struct tp_error *err)
{
	static const char tail[] = " (add a link or a network)";
	char *at = strstr(err->msg, tail);
	uint32_t n0 = c->devices.n ? c->devices.v[0].node : 0;
	uint32_t cut;
	char head[TP_ERROR_MSG_MAX];

	if (!at || at[sizeof(tail) - 1] || idx >= c->nodes.n ||
	    n0 >= c->nodes.n || idx == n0)
		return;
	if (tp_node_nic_vertices(&c->nodes.v[idx]) == 0)
		cut = idx;
	else if (tp_node_nic_vertices(&c->nodes.v[n0]) == 0)
		cut = n0;
	else
		return;
	snprintf(head, sizeof(head), "%.*s", (int)(at - err->msg), err->msg);
	snprintf(err->msg, sizeof(err->msg),
		 "%.700s: node \"%.100s\" has no \"nic\", so no traffic leaves "
		 "it (add \"nic\": {\"bandwidth_Bps\": B, \"latency_s\": S} "
		 "to it, or a link)",
		 head, c->nodes.v[cut].name);
	snprintf(err->path, sizeof(err->path), "$.nodes[%u]", file_node[cut]);
}

enum tp_status tp_topology_load(const char *name, const char *text, size_t len,
				const struct tp_load_options *o,
				struct tp_cluster *c, struct tp_error *err)
{
	struct tp_json_doc doc;
	struct tp_jctx j;
	enum tp_status st;
	uint32_t *file_node = NULL;

	tp_cluster_release(c);
	tp_cluster_init(c);
	st = tp_io_parse(name, text, len, o, "tagplan-topology/1", &doc, &j,
			 err);
	if (st)
		return st;
	st = read_topology(&j, doc.root, c, &file_node);
	tp_json_doc_release(&doc);
	if (!st && (st = tp_cluster_finalize(c, err)) && err) {
		/* finalize names IR nodes; the file may replicate nodes */
		unsigned idx;
		if (sscanf(err->path, "$.nodes[%u]", &idx) == 1 &&
		    idx < c->nodes.n && file_node) {
			snprintf(err->path, sizeof(err->path), "$.nodes[%u]",
				 file_node[idx]);
			nic_hint(c, idx, file_node, err);
		}
	}
	free(file_node);
	if (st) {
		tp_error_set_file(err, name);
		tp_cluster_release(c);
		tp_cluster_init(c);
	}
	return st;
}

enum tp_status tp_topology_load_file(const char *path,
				     const struct tp_load_options *o,
				     struct tp_cluster *c, struct tp_error *err)
{
	char *text;
	size_t len;
	enum tp_status st;

	st = tp_file_read_text(path, o ? o->max_bytes : 0, &text, &len, err);
	if (st) {
		tp_cluster_release(c);
		tp_cluster_init(c);
		return st;
	}
	st = tp_topology_load(path, text, len, o, c, err);
	free(text);
	return st;
}

/* --- writer --------------------------------------------------------------- */

static void write_type(struct tp_jw *jw, const struct tp_device_type *t)
{
	tp_jw_object_begin(jw);
	tp_jw_kv_string(jw, "name", t->name);
	tp_jw_kv_number(jw, "memory_bytes", t->memory_bytes);
	tp_jw_kv_number(jw, "memory_bandwidth_Bps", t->memory_bw_Bps);
	tp_jw_key(jw, "peak_flops");
	tp_jw_object_begin(jw);
	tp_jw_kv_number(jw, "fp32", t->peak_flops[TP_DTYPE_FP32]);
	tp_jw_kv_number(jw, "fp16", t->peak_flops[TP_DTYPE_FP16]);
	tp_jw_kv_number(jw, "bf16", t->peak_flops[TP_DTYPE_BF16]);
	tp_jw_kv_number(jw, "fp8", t->peak_flops[TP_DTYPE_FP8]);
	tp_jw_object_end(jw);
	tp_jw_kv_number(jw, "gemm_efficiency", t->gemm_efficiency);
	tp_jw_kv_number(jw, "gemm_half_flop", t->gemm_half_flop);
	tp_jw_kv_number(jw, "memory_efficiency", t->memory_efficiency);
	tp_jw_kv_number(jw, "kernel_overhead_s", t->kernel_overhead_s);
	tp_jw_kv_number(jw, "reserved_bytes", t->reserved_bytes);
	if (t->nvls)
		tp_jw_kv_bool(jw, "nvls", true);
	if (t->price_per_hour > 0)
		tp_jw_kv_number(jw, "price_per_hour", t->price_per_hour);
	tp_jw_kv_string(jw, "source", t->source ? t->source : "");
	tp_jw_object_end(jw);
}

/* Node owning device vertex v, and the device's local index, or false. */
static bool device_of_vertex(const struct tp_cluster *c, uint32_t v,
			     const uint32_t *dev_of_vertex, uint32_t *node,
			     uint32_t *local)
{
	uint32_t d = dev_of_vertex[v];

	if (d == TP_NONE)
		return false;
	*node = c->devices.v[d].node;
	*local = c->devices.v[d].local;
	return true;
}

/* Is the network exactly the star the loader builds? */
static bool is_star(const struct tp_cluster *c, uint32_t *nic_owner)
{
	uint32_t sw = TP_NONE, n_sw = 0, n_net = 0, n_nic_nodes = 0;

	for (uint32_t v = 0; v < c->vertex_kind.n; v++)
		if (c->vertex_kind.v[v] == TP_VERTEX_SWITCH) {
			sw = v;
			n_sw++;
		}
	/* (a rail-optimised node joins with each of its rails) */
	for (uint32_t k = 0; k < c->nodes.n; k++)
		n_nic_nodes += c->nodes.v[k].nic_vertex == TP_NONE ? 0
			       : c->nodes.v[k].rails	   ? c->nodes.v[k].rails
							   : 1;
	if (n_nic_nodes == 0)
		return n_sw == 0;
	if (n_sw != 1)
		return false;
	for (uint32_t l = 0; l < c->links.n; l++) {
		const struct tp_link *lk = &c->links.v[l];
		uint32_t nic, node;
		const struct tp_node *n;
		if (lk->kind != TP_LINK_NETWORK)
			continue;
		n_net++;
		nic = lk->a == sw ? lk->b : lk->a;
		if ((lk->a != sw && lk->b != sw) || nic_owner[nic] == TP_NONE)
			return false;
		node = nic_owner[nic];
		n = &c->nodes.v[node];
		if (n->network_link + (nic - n->nic_vertex) != l ||
		    lk->bw_Bps != (n->rails ? 1 : n->n_nics) * n->nic_bw_Bps /
					  c->oversubscription ||
		    lk->latency_s != n->nic_latency_s / 2)
			return false;
	}
	return n_net == n_nic_nodes;
}

/* Explicit links inside each node (both ends devices of the node), in
 * link order: node k's are idx[off[k] .. off[k + 1]). */
struct node_links {
	uint32_t *off, *idx;
	const uint32_t *dev_of_vertex;
};

/* The local index of the device at vertex v. */
static uint32_t local_of(const struct tp_cluster *c,
			 const struct node_links *nl, uint32_t v)
{
	return c->devices.v[nl->dev_of_vertex[v]].local;
}

static int node_links_build(const struct tp_cluster *c,
			    const uint32_t *dev_of_vertex,
			    struct node_links *nl)
{
	uint32_t nn = (uint32_t)c->nodes.n, *fill;

	nl->dev_of_vertex = dev_of_vertex;
	nl->off = tp_calloc((size_t)nn + 1, sizeof(uint32_t));
	nl->idx = tp_calloc(c->links.n + 1, sizeof(uint32_t));
	fill = tp_calloc((size_t)nn + 1, sizeof(uint32_t));
	if (!nl->off || !nl->idx || !fill) {
		free(fill);
		return -1;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t l = 0; l < c->links.n; l++) {
			const struct tp_link *lk = &c->links.v[l];
			uint32_t na, nb, la, lb;
			if (!device_of_vertex(c, lk->a, dev_of_vertex, &na,
					      &la) ||
			    !device_of_vertex(c, lk->b, dev_of_vertex, &nb,
					      &lb) ||
			    na != nb)
				continue;
			if (pass == 0)
				nl->off[na + 1]++;
			else
				nl->idx[nl->off[na] + fill[na]++] = l;
		}
		for (uint32_t k = 0; pass == 0 && k < nn; k++)
			nl->off[k + 1] += nl->off[k];
	}
	free(fill);
	return 0;
}

/* Do nodes k and m read back alike: the same devices in order, fabric,
 * NIC and explicit links (by local index)?  Their network links are the
 * star's (equal for equal NICs) or written by name. */
static bool node_same(const struct tp_cluster *c, const struct node_links *nl,
		      uint32_t k, uint32_t m)
{
	const struct tp_node *a = &c->nodes.v[k], *b = &c->nodes.v[m];

	if (a->n_devices != b->n_devices ||
	    (a->fabric_vertex == TP_NONE) != (b->fabric_vertex == TP_NONE) ||
	    (a->nic_vertex == TP_NONE) != (b->nic_vertex == TP_NONE) ||
	    nl->off[k + 1] - nl->off[k] != nl->off[m + 1] - nl->off[m])
		return false;
	for (uint32_t d = 0; d < a->n_devices; d++)
		if (c->devices.v[a->first_device + d].type !=
		    c->devices.v[b->first_device + d].type)
			return false;
	if (a->fabric_vertex != TP_NONE &&
	    (a->fabric_kind != b->fabric_kind ||
	     a->fabric_bw_Bps != b->fabric_bw_Bps ||
	     a->fabric_latency_s != b->fabric_latency_s))
		return false;
	if (a->nic_vertex != TP_NONE &&
	    (a->n_nics != b->n_nics || a->nic_bw_Bps != b->nic_bw_Bps ||
	     a->nic_latency_s != b->nic_latency_s || a->rails != b->rails))
		return false;
	for (uint32_t i = 0; i < nl->off[k + 1] - nl->off[k]; i++) {
		const struct tp_link *x = &c->links.v[nl->idx[nl->off[k] + i]];
		const struct tp_link *y = &c->links.v[nl->idx[nl->off[m] + i]];
		if (local_of(c, nl, x->a) != local_of(c, nl, y->a) ||
		    local_of(c, nl, x->b) != local_of(c, nl, y->b) ||
		    x->bw_Bps != y->bw_Bps || x->latency_s != y->latency_s ||
		    x->kind != y->kind)
			return false;
	}
	return true;
}

/* Length of the base of a replica name "BASE-0" (the loader names the
 * replicas of a node with "count" BASE-0, BASE-1, ...), or 0 when name is
 * not "BASE-<r>" for r = replica. */
static size_t replica_base(const char *name, uint32_t replica)
{
	char suffix[16];
	size_t n = strlen(name), s;

	snprintf(suffix, sizeof(suffix), "-%u", replica);
	s = strlen(suffix);
	if (n <= s || strcmp(name + n - s, suffix) != 0)
		return 0;
	return n - s;
}

/* How many nodes from k on form one group of identical replicas named
 * BASE-0, BASE-1, ... (1 when node k starts none). */
static uint32_t group_length(const struct tp_cluster *c,
			     const struct node_links *nl, uint32_t k)
{
	const char *name = c->nodes.v[k].name;
	size_t base = replica_base(name, 0);
	uint32_t m = 1;

	if (!base)
		return 1;
	while (k + m < c->nodes.n) {
		const char *nm = c->nodes.v[k + m].name;
		if (replica_base(nm, m) != base || strncmp(nm, name, base) ||
		    !node_same(c, nl, k, k + m))
			break;
		m++;
	}
	return m;
}

static void write_node(struct tp_jw *jw, const struct tp_cluster *c,
		       const struct node_links *nl, uint32_t k, uint32_t reps)
{
	const struct tp_node *n = &c->nodes.v[k];

	tp_jw_object_begin(jw);
	if (reps > 1) {
		char base[TP_IO_NAME_MAX + 1];
		size_t len = replica_base(n->name, 0);
		snprintf(base, sizeof(base), "%.*s", (int)len, n->name);
		tp_jw_kv_string(jw, "name", base);
		tp_jw_kv_int(jw, "count", reps);
	} else {
		tp_jw_kv_string(jw, "name", n->name);
	}
	tp_jw_key(jw, "devices");
	tp_jw_array_begin(jw);
	for (uint32_t d = 0; d < n->n_devices;) {
		uint32_t t = c->devices.v[n->first_device + d].type, e = d;
		while (e < n->n_devices &&
		       c->devices.v[n->first_device + e].type == t)
			e++;
		tp_jw_object_begin(jw);
		tp_jw_kv_string(jw, "type", c->types.v[t].name);
		tp_jw_kv_int(jw, "count", e - d);
		tp_jw_object_end(jw);
		d = e;
	}
	tp_jw_array_end(jw);
	if (n->fabric_vertex != TP_NONE) {
		tp_jw_key(jw, "fabric");
		tp_jw_object_begin(jw);
		tp_jw_kv_string(jw, "kind", tp_link_kind_name(n->fabric_kind));
		tp_jw_kv_number(jw, "bandwidth_Bps", n->fabric_bw_Bps);
		tp_jw_kv_number(jw, "latency_s", n->fabric_latency_s);
		tp_jw_object_end(jw);
	}
	if (nl->off[k + 1] > nl->off[k]) {
		tp_jw_key(jw, "links");
		tp_jw_array_begin(jw);
		for (uint32_t i = nl->off[k]; i < nl->off[k + 1]; i++) {
			const struct tp_link *lk = &c->links.v[nl->idx[i]];
			tp_jw_object_begin(jw);
			tp_jw_kv_int(jw, "a", local_of(c, nl, lk->a));
			tp_jw_kv_int(jw, "b", local_of(c, nl, lk->b));
			tp_jw_kv_number(jw, "bandwidth_Bps", lk->bw_Bps);
			tp_jw_kv_number(jw, "latency_s", lk->latency_s);
			tp_jw_kv_string(jw, "kind",
					tp_link_kind_name(lk->kind));
			tp_jw_object_end(jw);
		}
		tp_jw_array_end(jw);
	}
	if (n->nic_vertex != TP_NONE) {
		tp_jw_key(jw, "nic");
		tp_jw_object_begin(jw);
		tp_jw_kv_int(jw, "count", n->n_nics);
		tp_jw_kv_number(jw, "bandwidth_Bps", n->nic_bw_Bps);
		tp_jw_kv_number(jw, "latency_s", n->nic_latency_s);
		if (n->rails)
			tp_jw_kv_bool(jw, "rails", true);
		tp_jw_object_end(jw);
	}
	tp_jw_object_end(jw);
}

void tp_topology_write(const struct tp_cluster *c, struct tp_strbuf *out)
{
	struct tp_jw jw;
	uint32_t nv = (uint32_t)c->vertex_kind.n;
	uint32_t *dev_of_vertex = tp_calloc(nv + 1, sizeof(uint32_t));
	uint32_t *nic_owner = tp_calloc(nv + 1, sizeof(uint32_t));
	struct node_links nl = {NULL, NULL, NULL};
	bool any_user = false;

	if (!dev_of_vertex || !nic_owner) {
		out->failed = true;
		free(dev_of_vertex);
		free(nic_owner);
		return;
	}
	for (uint32_t v = 0; v < nv; v++)
		dev_of_vertex[v] = nic_owner[v] = TP_NONE;
	for (uint32_t d = 0; d < c->devices.n; d++)
		dev_of_vertex[c->devices.v[d].vertex] = d;
	for (uint32_t k = 0; k < c->nodes.n; k++)
		for (uint32_t r = 0; c->nodes.v[k].nic_vertex != TP_NONE &&
				     r < (c->nodes.v[k].rails ? c->nodes.v[k].rails
							      : 1);
		     r++)
			nic_owner[c->nodes.v[k].nic_vertex + r] = k;
	if (node_links_build(c, dev_of_vertex, &nl)) {
		out->failed = true;
		free(nl.off);
		free(nl.idx);
		free(dev_of_vertex);
		free(nic_owner);
		return;
	}

	tp_jw_init(&jw, out, true);
	tp_jw_object_begin(&jw);
	tp_jw_kv_string(&jw, "format", "tagplan-topology/1");
	tp_jw_kv_string(&jw, "name", c->name ? c->name : "");
	for (size_t k = 0; k < c->types.n; k++)
		any_user |= !c->types.v[k].builtin;
	if (any_user) {
		tp_jw_key(&jw, "device_types");
		tp_jw_array_begin(&jw);
		for (size_t k = 0; k < c->types.n; k++)
			if (!c->types.v[k].builtin)
				write_type(&jw, &c->types.v[k]);
		tp_jw_array_end(&jw);
	}
	tp_jw_key(&jw, "nodes");
	tp_jw_array_begin(&jw);
	for (uint32_t k = 0; k < c->nodes.n;) {
		uint32_t reps = group_length(c, &nl, k);
		write_node(&jw, c, &nl, k, reps);
		k += reps;
	}
	tp_jw_array_end(&jw);
	tp_jw_key(&jw, "network");
	tp_jw_object_begin(&jw);
	tp_jw_kv_number(&jw, "oversubscription", c->oversubscription);
	if (c->tiers.n) {
		tp_jw_key(&jw, "tiers");
		tp_jw_array_begin(&jw);
		for (size_t t = 0; t < c->tiers.n; t++) {
			const struct tp_tier *tr = &c->tiers.v[t];
			tp_jw_object_begin(&jw);
			tp_jw_kv_string(&jw, "name", tr->name);
			if (tr->group)
				tp_jw_kv_int(&jw, "group", tr->group);
			if (tr->bw_Bps > 0)
				tp_jw_kv_number(&jw, "bandwidth_Bps",
						tr->bw_Bps);
			tp_jw_kv_number(&jw, "latency_s", tr->latency_s);
			if (tr->bw_Bps == 0)
				tp_jw_kv_number(&jw, "oversubscription",
						tr->oversubscription);
			tp_jw_object_end(&jw);
		}
		tp_jw_array_end(&jw);
	} else if (!is_star(c, nic_owner)) {
		uint32_t n_sw = 0;
		uint32_t *sw_index =
		    dev_of_vertex; /* reuse: vertex -> switch # */

		for (uint32_t v = 0; v < nv; v++)
			sw_index[v] = c->vertex_kind.v[v] == TP_VERTEX_SWITCH
					  ? n_sw++
					  : TP_NONE;
		tp_jw_key(&jw, "switches");
		tp_jw_array_begin(&jw);
		for (uint32_t s = 0; s < n_sw; s++) {
			char nm[32];
			snprintf(nm, sizeof(nm), "switch%u", s);
			tp_jw_object_begin(&jw);
			tp_jw_kv_string(&jw, "name", nm);
			tp_jw_object_end(&jw);
		}
		tp_jw_array_end(&jw);
		tp_jw_key(&jw, "links");
		tp_jw_array_begin(&jw);
		for (uint32_t l = 0; l < c->links.n; l++) {
			const struct tp_link *lk = &c->links.v[l];
			uint32_t ends[2] = {lk->a, lk->b};
			char names[2][TP_IO_NAME_MAX + 32];
			bool ok = true;
			for (int e = 0; e < 2; e++) {
				uint32_t v = ends[e];
				if (nic_owner[v] != TP_NONE)
					snprintf(names[e], sizeof(names[e]),
						 "%s",
						 c->nodes.v[nic_owner[v]].name);
				else if (sw_index[v] != TP_NONE)
					snprintf(names[e], sizeof(names[e]),
						 "switch%u", sw_index[v]);
				else
					ok = false;
			}
			if (!ok)
				continue;
			tp_jw_object_begin(&jw);
			tp_jw_kv_string(&jw, "a", names[0]);
			tp_jw_kv_string(&jw, "b", names[1]);
			tp_jw_kv_number(&jw, "bandwidth_Bps", lk->bw_Bps);
			tp_jw_kv_number(&jw, "latency_s", lk->latency_s);
			tp_jw_object_end(&jw);
		}
		tp_jw_array_end(&jw);
	}
	tp_jw_object_end(&jw);
	tp_jw_object_end(&jw);
	tp_jw_finish(&jw);
	free(nl.off);
	free(nl.idx);
	free(dev_of_vertex);
	free(nic_owner);
}
