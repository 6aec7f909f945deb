/*
 * route_int.h - route.c's state, shared with route_ext.c (the extremes
 * over all pairs); private to src/core.
 */
#ifndef TP_ROUTE_INT_H
#define TP_ROUTE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"

/* The probe message that ranks paths (the old all-pairs table's). */
#define ROUTE_PROBE_BYTES 1e6
/* Cyclic explicit networks: at most this many (gateway, network vertex)
 * entries of predecessor table (4 bytes each: 256 MB). */
#define TP_ROUTE_NET_TABLE_MAX ((size_t)1 << 26)
/* The route tables of the kinds of domain (shapes; identical domains
 * share one): at most this many endpoint pairs over all shapes (8 bytes
 * each, 512 MB: three kinds of 4096-device node, or 6,000 kinds of
 * 72-GPU rack), counted before any route is computed, and this many
 * channels (4 bytes each, 1 GB: a 4096-device 3D torus needs 2e8),
 * counted as they are.  A topology of a few kilobytes asked for tens of
 * gigabytes: 256 nodes of 4096 devices, each fabric a little different,
 * some 67 GB. */
#define TP_ROUTE_SHAPE_PAIRS_MAX ((size_t)1 << 26)
#define TP_ROUTE_SHAPE_CHANS_MAX ((size_t)1 << 28)

struct local_route {
	uint32_t first, n; /* local channels in shape->chans */
};

/* One kind of domain: its devices, gateway and the routes between them,
 * in local numbering (vertex ranks, link ranks within the domain). */
struct shape {
	uint32_t n_dev, n_vert, n_link;
	uint32_t n_gw;      /* gateways: local endpoints n_dev .. + n_gw - 1
			       (one, or one per rail; 0 without network) */
	uint32_t sig_first; /* signature in the build's signature pool */
	uint32_t sig_n;
	uint64_t hash;
	double *gw_dist;	/* [device * n_gw + g]: cost to gateway g */
	struct local_route *r;	/* ne^2, [a * ne + b], ne = n_dev + max(n_gw, 1) */
	TP_VEC(uint32_t) chans; /* local channel = link rank * 2 + dir */
	uint32_t max_len;	/* longest local route, channels */
};

struct domain {
	uint32_t shape;
	uint32_t link_first; /* its links (global indices) in rt->dom_links */
	uint32_t gateway;    /* global vertex, or TP_NONE (rails: rail 0's
				NIC; rail r's is gateway + r) */
	uint32_t n_gw;       /* 1, or the node's rails */
	uint32_t gw_net;     /* the gateway's network index, or TP_NONE
				(rail r: gw_net + r) */
};

struct tp_routing {
	uint32_t *dev_domain, *dev_local; /* per device */
	struct domain *domains;
	uint32_t n_domains;
	struct shape *shapes;
	uint32_t n_shapes;
	uint32_t *dom_links;

	/* the network: vertices numbered 0..n_net-1 */
	uint32_t n_net;
	uint32_t *net_vertex; /* network index -> global vertex */
	uint32_t *net_of;     /* global vertex -> network index or TP_NONE */
	bool forest;
	uint32_t *up_ch;  /* forest: channel to the parent, TP_NONE at roots */
	uint32_t *depth;  /* forest */
	uint32_t *parent; /* forest: network index of the parent */
	uint32_t *prev;	  /* cyclic: [gw * n_net + v] channel into v */
	uint32_t *gw_row; /* cyclic: network index -> row of prev */
	uint32_t max_net_len;
	bool rails; /* some domain has several gateways */
};

/* Endpoints of a shape's local route table: devices, then gateways. */
static inline uint32_t shape_ne(const struct shape *sh)
{
	return sh->n_dev + (sh->n_gw ? sh->n_gw : 1);
}

/* Append the network route between network vertices u and w. */
void tp_route_add_network(const struct tp_cluster *c,
			  const struct tp_routing *rt, uint32_t u, uint32_t w,
			  struct tp_route *out);

#endif
