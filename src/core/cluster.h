/*
 * cluster.h - the cluster IR: device types, devices, nodes, links, routes.
 *
 * The topology is a graph of vertices joined by full-duplex links.  Every
 * device is a vertex; a node usually adds a fabric vertex (NVSwitch, PCIe
 * host bridge) its devices hang off, and one NIC vertex that stands for all
 * of its network interfaces (device-to-NIC links carry one NIC's bandwidth,
 * the NIC-to-network link the node's aggregate, divided by the network's
 * oversubscription); the network between nodes is a core switch vertex by
 * default, or explicit switches and links.  Point-to-point links (NVLink
 * between two GPUs) join device vertices directly.
 *
 * A route between two devices is computed when asked (src/core/route.c),
 * from the hierarchy: devices and their intra-node vertices form
 * *domains* (a node, or a rack-scale NVLink domain) that join the network
 * at one vertex (the NIC); the network is a tree of switch tiers (or a
 * star) in which a route climbs to the common ancestor, or explicit
 * switches with cycles (routed by one Dijkstra per node at finalize).  The
 * route is the path minimising the time to move 1 MB (sum over its links
 * of latency + 1 MB / bandwidth), ties broken by vertex and link index,
 * as the all-pairs table of earlier versions had it; nothing is stored
 * per device pair.  A route lists directed *channels* (link index * 2 +
 * direction; direction 0 is a->b), so the two directions of a link are
 * separate resources for bandwidth sharing.
 *
 * Ownership: the cluster owns all its memory (names in its arena);
 * tp_cluster_release frees it.  After finalize it is immutable and may be
 * shared between threads.
 */
#ifndef TP_CLUSTER_H
#define TP_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "error.h"
#include "model.h"
#include "strmap.h"
#include "vec.h"

/*
 * A device type: vendor figures plus the cost-model constants the simulator
 * uses (documented with their sources in data/devices.json).
 */
struct tp_device_type {
	const char *name;
	double peak_flops[TP_DTYPE_COUNT]; /* dense FLOP/s per dtype; fp32 is
					      plain FP32, fp16/bf16 tensor
					      cores where present */
	double memory_bytes;
	double memory_bw_Bps;
	/* cost model (see src/sim/README) */
	double gemm_efficiency;   /* fraction of peak a large GEMM reaches */
	double gemm_half_flop;    /* GEMM FLOP at which it reaches half that */
	double memory_efficiency; /* fraction of memory bandwidth reached */
	double kernel_overhead_s; /* fixed cost per kernel launch */
	double reserved_bytes;    /* memory the runtime keeps (CUDA context,
				     allocator fragmentation) */
	const char *source;       /* where the figures come from */
	double price_per_hour;    /* US dollars per device-hour, 0 = none:
				     user-supplied (a topology's device type
				     or plan --price), never shipped */
	bool builtin;             /* from data/devices.json */
	bool nvls;                /* NVLink SHARP: on an NVSwitch fabric the
				     switch reduces and multicasts
				     (all-reduce, src/sim/README section 3) */
};

enum tp_vertex_kind {
	TP_VERTEX_DEVICE,
	TP_VERTEX_FABRIC, /* intra-node switch or host bridge */
	TP_VERTEX_NIC,    /* a node's network interfaces */
	TP_VERTEX_SWITCH  /* a network switch */
};

enum tp_link_kind {
	TP_LINK_NVLINK,
	TP_LINK_NVSWITCH,
	TP_LINK_PCIE,
	TP_LINK_NIC,     /* device to its NIC */
	TP_LINK_NETWORK, /* NIC or switch to switch */
	TP_LINK_OTHER,
	TP_LINK_KIND_COUNT
};

struct tp_device {
	const char *name; /* unique, e.g. "node0/gpu3" */
	uint32_t type;    /* index into cluster->types */
	uint32_t node;    /* index into cluster->nodes */
	uint32_t local;   /* index within its node */
	uint32_t vertex;
};

struct tp_node {
	const char *name;
	uint32_t first_device, n_devices; /* devices are contiguous */
	uint32_t fabric_vertex;           /* TP_NONE when none */
	enum tp_link_kind fabric_kind;    /* NVSWITCH, PCIE, ... */
	double fabric_bw_Bps;     /* per device, per direction */
	double fabric_latency_s;  /* device to device through the fabric */
	uint32_t nic_vertex;              /* TP_NONE when none */
	uint32_t n_nics;
	double nic_bw_Bps; /* per NIC, per direction */
	double nic_latency_s; /* device to network */
	uint32_t network_link;  /* link NIC -> network, TP_NONE when none
				   (rails: rail 0's) */
	/* Rail-optimised (rails = n_nics = n_devices > 0): one NIC vertex
	 * per device, nic_vertex + r for device r (local), each on its own
	 * rail: its own link into the network (in a tiered network, the
	 * leaf of rail r of its leaf group).  0: one NIC vertex stands for
	 * all n_nics, every device linked to it. */
	uint32_t rails;
};

/* How many NIC vertices node n has: nic_vertex .. + count - 1 (0, 1, or
 * one per rail). */
static inline uint32_t tp_node_nic_vertices(const struct tp_node *n)
{
	return n->nic_vertex == UINT32_MAX ? 0 : n->rails ? n->rails : 1;
}

/* The name of node n's NIC vertex v: "<node>/nic", or "<node>/nic<r>"
 * for rail r of a rail-optimised node (reports, tables, pictures). */
void tp_node_nic_name(const struct tp_node *n, uint32_t v, char *buf,
		      size_t size);

/* Is vertex v one of node n's NIC vertices? */
static inline bool tp_node_is_nic(const struct tp_node *n, uint32_t v)
{
	return v >= n->nic_vertex && v - n->nic_vertex < tp_node_nic_vertices(n);
}

struct tp_link {
	uint32_t a, b; /* vertices */
	double bw_Bps; /* per direction */
	double latency_s;
	enum tp_link_kind kind;
};

/* The most channels a route may have; finalize refuses deeper
 * hierarchies (TP_ELIMIT). */
#define TP_ROUTE_MAX 64

/* Devices per cluster (the loaders' and builders' limit): routes cost no
 * memory per pair across nodes, so this only bounds the per-device
 * arrays (within a node, route_int.h bounds the tables). */
#define TP_CLUSTER_MAX_DEVICES 1048576

struct tp_route {
	double bw_Bps;    /* bottleneck bandwidth; INFINITY from a device to
			     itself */
	double latency_s; /* sum of link latencies */
	uint32_t n;       /* channels */
	uint32_t ch[TP_ROUTE_MAX];
};

struct tp_routing; /* route.c's state: O(vertices + links) */

/*
 * A switch tier of a tiered network (tagplan-topology/1 "network".
 * "tiers", bottom first).  Tier 0's switches (leaves) each join `group`
 * consecutive nodes with a NIC, in node order; tier t's each join `group`
 * consecutive switches of tier t - 1; group 0 = one switch joins all.
 * The last tier must end with one switch.  A link from a child up into a
 * tier carries bw_Bps when > 0, else the child's downlink capacity (a
 * node: n_nics * nic_bw_Bps; a switch: the sum of its children's uplinks)
 * divided by oversubscription; its latency is latency_s / 2 (a message
 * crossing a switch of the tier pays latency_s), plus the node's
 * nic_latency_s / 2 on tier 0.  One tier of group 0, no latency and no
 * oversubscription is exactly the star.
 */
struct tp_tier {
	const char *name; /* "leaf", "spine", "core", "zone", ... (arena) */
	uint32_t group;
	double bw_Bps;
	double latency_s;
	double oversubscription; /* >= 1 */
};

struct tp_cluster {
	struct tp_arena arena;
	const char *name;
	TP_VEC(struct tp_device_type) types;
	TP_VEC(struct tp_device) devices;
	TP_VEC(struct tp_node) nodes;
	TP_VEC(struct tp_link) links;
	TP_VEC(uint8_t) vertex_kind; /* enum tp_vertex_kind per vertex */
	struct tp_strmap type_by_name, device_by_name, node_by_name;
	double oversubscription; /* >= 1; informational once links exist */
	TP_VEC(struct tp_tier) tiers; /* the tiered network, when it is one */

	/* derived by tp_cluster_finalize */
	bool finalized;
	struct tp_routing *routing; /* see route.c */
	uint32_t *type_count;     /* devices per type */
};

void tp_cluster_init(struct tp_cluster *c);
void tp_cluster_release(struct tp_cluster *c);

/* Add a device type (copied; strings into the arena).  TP_EINPUT on a
 * duplicate name. */
enum tp_status tp_cluster_add_type(struct tp_cluster *c,
				   const struct tp_device_type *t,
				   uint32_t *index, struct tp_error *err);
/* Index of a type by exact name, or TP_NONE. */
uint32_t tp_cluster_find_type(const struct tp_cluster *c, const char *name);
/* The device types c's devices have without a price_per_hour: their
 * names, ", "-separated, into buf (size bytes, cut when full); returns
 * how many there are. */
uint32_t tp_cluster_unpriced_types(const struct tp_cluster *c, char *buf,
				   size_t size);

/* Add a vertex of the given kind; returns its index or TP_NONE on
 * allocation failure. */
uint32_t tp_cluster_add_vertex(struct tp_cluster *c, enum tp_vertex_kind k);

/* Add a node (no devices yet).  TP_EINPUT on a duplicate name. */
enum tp_status tp_cluster_add_node(struct tp_cluster *c, const char *name,
				   uint32_t *index, struct tp_error *err);

/* Add a device of type `type` to node `node`, which must be the last node
 * added (devices of a node are contiguous).  Its name is
 * "<node name>/gpu<local index>" unless name != NULL. */
enum tp_status tp_cluster_add_device(struct tp_cluster *c, uint32_t node,
				     uint32_t type, const char *name,
				     uint32_t *index, struct tp_error *err);

/* Add a full-duplex link between two vertices. */
enum tp_status tp_cluster_add_link(struct tp_cluster *c, uint32_t a,
				   uint32_t b, double bw_Bps, double latency_s,
				   enum tp_link_kind kind,
				   struct tp_error *err);

/*
 * Convenience builders used by the topology loader and the presets.
 *
 * tp_cluster_build_node adds the node nb describes: named `name`, with
 * `count` devices of type `type`; when fabric_bw_Bps > 0 a fabric vertex
 * of fabric_kind joins
 * every device (each device-fabric link carries fabric_bw_Bps and half of
 * fabric_latency_s, so a device-to-device hop costs fabric_latency_s);
 * when n_nics > 0 a NIC vertex is added, each device linked to it with one
 * NIC's bandwidth (capped by the fabric when the NIC hangs off PCIe is the
 * caller's business) and no latency; with nb->rails, one NIC vertex per
 * device instead, device k linked to NIC k only (TP_EINPUT unless n_nics
 * equals count).  The node is not yet connected to any network.
 */
struct tp_node_build {
	const char *name;
	uint32_t type, count;
	enum tp_link_kind fabric_kind;
	double fabric_bw_Bps, fabric_latency_s;
	uint32_t n_nics;
	double nic_bw_Bps, nic_latency_s;
	bool rails; /* one NIC vertex per device (n_nics must equal count) */
};
enum tp_status tp_cluster_build_node(struct tp_cluster *c,
				     const struct tp_node_build *nb,
				     uint32_t *index, struct tp_error *err);

/*
 * Join every node that has a NIC vertex and no network link yet to a new
 * switch vertex: the NIC-switch link carries n_nics * nic_bw_Bps /
 * oversubscription and half the node's nic_latency_s, so between two
 * nodes of equal nic_latency_s a message pays exactly nic_latency_s one
 * way.  A rail-optimised node joins with each NIC (nic_bw_Bps /
 * oversubscription each).  Returns the switch vertex in *sw (may be NULL).
 */
enum tp_status tp_cluster_connect_star(struct tp_cluster *c,
				       double oversubscription, uint32_t *sw,
				       struct tp_error *err);

/*
 * Join every node that has a NIC vertex and no network link yet to a tree
 * of switch tiers (struct tp_tier, bottom first; copied into c->tiers).
 * In tier 0 a group of nodes with rails has one leaf per rail (leaf r
 * joins NIC r of each node of the group; nodes without rails join leaf
 * 0), and tier 1's group then counts groups of nodes (a switch of tier 1
 * joins every leaf of `group` leaf groups: the rails of a scalable unit
 * meet at its spine).
 * TP_EINPUT when a figure is out of range or the last tier leaves more
 * than one switch (the message names the tier); TP_ENOMEM.
 */
enum tp_status tp_cluster_connect_tiers(struct tp_cluster *c,
					const struct tp_tier *tiers,
					uint32_t n_tiers, struct tp_error *err);

/*
 * Check and derive routes.  TP_EINPUT when there are no devices or when a
 * device cannot reach another (the message names both; the path names the
 * unreachable device).  Idempotent.
 */
enum tp_status tp_cluster_finalize(struct tp_cluster *c, struct tp_error *err);

/*
 * The route from device a to device b of a finalized cluster into *out:
 * its channels in order from a, bottleneck bandwidth and latency.  From a
 * device to itself: no channels, infinite bandwidth, no latency.  O(number
 * of channels); thread-safe (reads the cluster only).
 */
void tp_cluster_route(const struct tp_cluster *c, uint32_t a, uint32_t b,
		      struct tp_route *out);

/*
 * The smallest bottleneck bandwidth and the largest latency over the
 * routes of all ordered pairs of distinct devices, exact, from the
 * hierarchy: each kind of node once (its devices' pairs and their ways to
 * and from the NIC), then one pass over the network when it is a forest
 * (the lowest common switch of the farthest gateways), every gateway pair
 * otherwise.  Latencies may differ from a route's own sum in the last
 * bit (summed in another order).  INFINITY and 0 below two devices.
 */
void tp_cluster_route_extremes(const struct tp_cluster *c, double *min_bw,
			       double *max_lat);

/* The bottleneck bandwidth of tp_cluster_route(c, a, b). */
double tp_cluster_route_bw(const struct tp_cluster *c, uint32_t a, uint32_t b);

/* route.c's lifecycle, called by tp_cluster_finalize / _release. */
enum tp_status tp_routing_build(struct tp_cluster *c, struct tp_routing **out,
				struct tp_error *err);
void tp_routing_free(struct tp_routing *rt);

uint32_t tp_cluster_find_device(const struct tp_cluster *c, const char *name);
/* Whether device lists a (na) and b (nb) have a device in common:
 * a merge when both are ascending (a_sorted, b_sorted: the caller knows
 * it), else of sorted copies, O(n log n) at worst, so that stages of
 * 25,000 devices each cost microseconds, not the 10^9 steps of comparing
 * every pair (pair by pair only when the copies cannot be allocated). */
bool tp_devs_meet(const uint32_t *a, uint32_t na, bool a_sorted,
		  const uint32_t *b, uint32_t nb, bool b_sorted);
uint32_t tp_cluster_find_node(const struct tp_cluster *c, const char *name);

/* Peak FLOP/s of device d for dtype (falls back to fp32 when the type has
 * no figure for it). */
double tp_device_peak_flops(const struct tp_cluster *c, uint32_t d,
			    enum tp_dtype dtype);

/* Sum of peak FLOP/s over all devices, for MFU and lower bounds. */
double tp_cluster_total_peak(const struct tp_cluster *c, enum tp_dtype dtype);

const char *tp_link_kind_name(enum tp_link_kind k);
int tp_link_kind_parse(const char *s);

#endif
