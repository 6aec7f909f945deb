/*
 * route.c - routes between devices computed when asked, from the cluster's
 * hierarchy; nothing is stored per device pair.
 *
 * The graph splits into *domains* and a *network*.  A domain is a
 * connected set of devices and their intra-node vertices (fabric, NIC)
 * joined by links that are not network links (a link is a network link
 * when it is of kind TP_LINK_NETWORK or touches a switch).  A domain
 * joins the network at one vertex, its gateway (the NIC).  Because the
 * gateway is a cut vertex, the shortest path between two devices of
 * different domains is the shortest path from the source to its gateway,
 * then through the network, then from the target's gateway to the target;
 * each piece is what one Dijkstra over the whole graph finds (same
 * weights, same tie-breaking: lower vertex rank, then lower link index).
 *
 *   - Inside a domain: one Dijkstra per device of each domain *shape*.
 *     Domains built alike (every node of a preset, every replica of a
 *     file's node) share a shape, so the table is O(devices per node^2)
 *     per kind of node, not per node.
 *   - The network: when it is a forest (a star, switch tiers: every route
 *     unique) a route climbs parent pointers to the common ancestor,
 *     O(tiers).  Otherwise (explicit switches with cycles, parallel links)
 *     one Dijkstra per gateway over the network vertices only, refused
 *     above TP_ROUTE_NET_TABLE_MAX entries (use switch tiers instead).
 *   - The shapes' tables are bounded (TP_ROUTE_SHAPE_PAIRS_MAX pairs,
 *     TP_ROUTE_SHAPE_CHANS_MAX channels, routes of at most half of
 *     TP_ROUTE_MAX links), refused with TP_ELIMIT before they grow past.
 *
 * Rails: a rail-optimised node (tp_node.rails) is a domain with one
 * gateway per rail (its NICs, consecutive vertices); a route between two
 * domains leaves and enters by the cheapest of a few rails (rail_pick:
 * the source's, the target's, rail 0), each priced from the gateway
 * costs and the forest's links, so it is still O(tiers) and the same
 * path the whole-graph Dijkstra finds when a node's rails and a group's
 * leaves are alike (tests/test_route.c compares every channel).  Rails
 * need a forest (a star or tiers).  The extremes over all pairs are in
 * route_ext.c.
 *
 * Memory: O(vertices + links + shapes); time per route O(channels).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"

#include "route_int.h"

/* --- Dijkstra over a small graph in local numbering -------------------- */

struct heap_item {
	double cost;
	uint32_t v;
};

static void heap_push(struct heap_item *h, uint32_t *n, struct heap_item it)
{
	uint32_t i = (*n)++;

	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (h[p].cost < it.cost ||
		    (h[p].cost == it.cost && h[p].v <= it.v))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = it;
}

static struct heap_item heap_pop(struct heap_item *h, uint32_t *n)
{
	struct heap_item top = h[0], last = h[--(*n)];
	uint32_t i = 0;

	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		struct heap_item cur = last;
		if (l < *n && (h[l].cost < cur.cost ||
			       (h[l].cost == cur.cost && h[l].v < cur.v))) {
			m = l;
			cur = h[l];
		}
		if (r < *n && (h[r].cost < cur.cost ||
			       (h[r].cost == cur.cost && h[r].v < cur.v)))
			m = r;
		if (m == i)
			break;
		h[i] = h[m];
		i = m;
	}
	if (*n)
		h[i] = last;
	return top;
}

/* A graph in local numbering: links (a, b, weight) and CSR adjacency. */
struct lgraph {
	uint32_t nv, nl;
	const uint32_t *la, *lb; /* link ends, local */
	const double *w;	 /* link weight */
	uint32_t *adj_off, *adj; /* channels per vertex, link order */
	double *dist;
	uint32_t *prev; /* channel into the vertex */
	struct heap_item *heap;
};

static int lgraph_alloc(struct lgraph *g)
{
	g->adj_off = tp_calloc((size_t)g->nv + 1, sizeof(uint32_t));
	g->adj = tp_calloc((size_t)g->nl * 2 + 1, sizeof(uint32_t));
	g->dist = tp_calloc((size_t)g->nv + 1, sizeof(double));
	g->prev = tp_calloc((size_t)g->nv + 1, sizeof(uint32_t));
	g->heap = tp_calloc((size_t)g->nl * 2 + g->nv + 1, sizeof(*g->heap));
	if (!g->adj_off || !g->adj || !g->dist || !g->prev || !g->heap)
		return -1;
	for (uint32_t l = 0; l < g->nl; l++) {
		g->adj_off[g->la[l] + 1]++;
		g->adj_off[g->lb[l] + 1]++;
	}
	for (uint32_t v = 0; v < g->nv; v++)
		g->adj_off[v + 1] += g->adj_off[v];
	{
		uint32_t *fill = tp_calloc((size_t)g->nv + 1, sizeof(*fill));
		if (!fill)
			return -1;
		for (uint32_t l = 0; l < g->nl; l++) {
			uint32_t a = g->la[l], b = g->lb[l];
			g->adj[g->adj_off[a] + fill[a]++] = l * 2;
			g->adj[g->adj_off[b] + fill[b]++] = l * 2 + 1;
		}
		free(fill);
	}
	return 0;
}

static void lgraph_free(struct lgraph *g)
{
	free(g->adj_off);
	free(g->adj);
	free(g->dist);
	free(g->prev);
	free(g->heap);
}

/* Dijkstra from src with starting cost start: dist and prev. */
static void lgraph_run(struct lgraph *g, uint32_t src, double start)
{
	uint32_t hn = 0;

	for (uint32_t v = 0; v < g->nv; v++) {
		g->dist[v] = INFINITY;
		g->prev[v] = TP_NONE;
	}
	g->dist[src] = start;
	heap_push(g->heap, &hn, (struct heap_item){start, src});
	while (hn) {
		struct heap_item it = heap_pop(g->heap, &hn);
		if (it.cost > g->dist[it.v])
			continue;
		for (uint32_t k = g->adj_off[it.v]; k < g->adj_off[it.v + 1];
		     k++) {
			uint32_t ch = g->adj[k];
			uint32_t to =
			    (ch & 1) ? g->la[ch >> 1] : g->lb[ch >> 1];
			if (it.cost + g->w[ch >> 1] < g->dist[to]) {
				g->dist[to] = it.cost + g->w[ch >> 1];
				g->prev[to] = ch;
				heap_push(g->heap, &hn,
					  (struct heap_item){g->dist[to], to});
			}
		}
	}
}

/* The vertex a channel leaves from. */
static inline uint32_t ch_from(const uint32_t *la, const uint32_t *lb,
			       uint32_t ch)
{
	return (ch & 1) ? lb[ch >> 1] : la[ch >> 1];
}

/* --- build ------------------------------------------------------------- */

static uint32_t uf_find(uint32_t *p, uint32_t x)
{
	while (p[x] != x) {
		p[x] = p[p[x]];
		x = p[x];
	}
	return x;
}

/* Join; returns false when already joined.  The smaller index is root. */
static bool uf_union(uint32_t *p, uint32_t a, uint32_t b)
{
	a = uf_find(p, a);
	b = uf_find(p, b);
	if (a == b)
		return false;
	if (a < b)
		p[b] = a;
	else
		p[a] = b;
	return true;
}

/* Build scratch shared by the steps. */
struct build {
	struct tp_cluster *c;
	struct tp_routing *rt;
	struct tp_error *err;
	uint32_t *dom_of_vertex; /* domain of a non-network vertex */
	uint32_t *rank;		 /* vertex rank within its domain */
	uint32_t *vert_first;	 /* per domain, into verts */
	uint32_t *verts;	 /* vertices grouped by domain */
	uint32_t *link_count;
	uint32_t *dev_first, *devs; /* devices grouped by domain */
	uint32_t *nic_node; /* per vertex: the rail-optimised node of a NIC
			       vertex, else TP_NONE */
	TP_VEC(uint32_t) sig;	    /* signatures of the shapes */
};

static bool is_network_link(const struct tp_cluster *c, const struct tp_link *l)
{
	return l->kind == TP_LINK_NETWORK ||
	       c->vertex_kind.v[l->a] == TP_VERTEX_SWITCH ||
	       c->vertex_kind.v[l->b] == TP_VERTEX_SWITCH;
}

/* A link inside a device domain (both ends in one, by construction). */
static bool is_local_link(const struct build *b, const struct tp_link *l)
{
	return !is_network_link(b->c, l) && b->dom_of_vertex[l->a] != TP_NONE;
}

static double link_weight(const struct tp_link *l)
{
	return l->latency_s + ROUTE_PROBE_BYTES / l->bw_Bps;
}

void tp_routing_free(struct tp_routing *rt)
{
	if (!rt)
		return;
	for (uint32_t s = 0; s < rt->n_shapes; s++) {
		free(rt->shapes[s].gw_dist);
		free(rt->shapes[s].r);
		tp_vec_free(&rt->shapes[s].chans);
	}
	free(rt->shapes);
	free(rt->dev_domain);
	free(rt->dev_local);
	free(rt->domains);
	free(rt->dom_links);
	free(rt->net_vertex);
	free(rt->net_of);
	free(rt->up_ch);
	free(rt->depth);
	free(rt->parent);
	free(rt->prev);
	free(rt->gw_row);
	free(rt);
}

/* Signature of domain k: what decides its routes in local numbering. */
static int domain_signature(struct build *b, uint32_t k, uint32_t *first,
			    uint32_t *n, uint64_t *hash)
{
	const struct tp_cluster *c = b->c;
	struct tp_routing *rt = b->rt;
	uint32_t nv = b->vert_first[k + 1] - b->vert_first[k];
	uint32_t lf = rt->domains[k].link_first;
	uint32_t nl = b->link_count[k];
	uint32_t nd = 0;
	uint64_t h = 1469598103934665603ull;
	size_t start = b->sig.n;

	for (uint32_t i = 0; i < nv; i++) {
		uint32_t v = b->verts[b->vert_first[k] + i];
		if (c->vertex_kind.v[v] == TP_VERTEX_DEVICE)
			nd++;
	}
	if (tp_vec_reserve(&b->sig, 4 + (size_t)rt->domains[k].n_gw +
					(size_t)nd + (size_t)nl * 6))
		return -1;
	b->sig.v[b->sig.n++] = nv;
	b->sig.v[b->sig.n++] = nl;
	b->sig.v[b->sig.n++] = nd;
	b->sig.v[b->sig.n++] = rt->domains[k].n_gw;
	for (uint32_t g = 0; g < rt->domains[k].n_gw; g++)
		b->sig.v[b->sig.n++] = b->rank[rt->domains[k].gateway + g];
	/* devices in device order: their vertices' ranks */
	for (uint32_t i = b->dev_first[k]; i < b->dev_first[k + 1]; i++)
		b->sig.v[b->sig.n++] = b->rank[c->devices.v[b->devs[i]].vertex];
	for (uint32_t i = 0; i < nl; i++) {
		const struct tp_link *l = &c->links.v[rt->dom_links[lf + i]];
		uint32_t w[4];
		b->sig.v[b->sig.n++] = b->rank[l->a];
		b->sig.v[b->sig.n++] = b->rank[l->b];
		memcpy(w, &l->bw_Bps, 8);
		memcpy(w + 2, &l->latency_s, 8);
		for (int q = 0; q < 4; q++)
			b->sig.v[b->sig.n++] = w[q];
	}
	for (size_t i = start; i < b->sig.n; i++)
		h = (h ^ b->sig.v[i]) * 1099511628211ull;
	*first = (uint32_t)start;
	*n = (uint32_t)(b->sig.n - start);
	*hash = h;
	return 0;
}

/* The name of the node of domain k's first device (messages). */
static const char *domain_node(const struct build *b, uint32_t k)
{
	const struct tp_cluster *c = b->c;

	if (b->dev_first[k] == b->dev_first[k + 1])
		return "?";
	return c->nodes.v[c->devices.v[b->devs[b->dev_first[k]]].node].name;
}

/* A local route of more than half the links a route may cross fails
 * tp_routing_build's check whatever the network; say so at once (a
 * chain of 4096 devices would store 2e10 channels first). */
static enum tp_status long_local_route(struct build *b, uint32_t k)
{
	return tp_error_set_path(
	    b->err, TP_ELIMIT, "$.nodes",
	    "node \"%s\": a route between two of its devices (or to its "
	    "NIC) crosses more than %d links (a route crosses at most %d, "
	    "within the two nodes and the network); give the node a fabric, "
	    "or links that join its devices in fewer hops",
	    domain_node(b, k), TP_ROUTE_MAX / 2, TP_ROUTE_MAX);
}

/* Routes of a new shape from the signature (local numbering); dom is a
 * domain of the shape (messages), *chans the channels of the shapes
 * built so far (TP_ROUTE_SHAPE_CHANS_MAX). */
static enum tp_status shape_routes(struct build *b, struct shape *s,
				   uint32_t dom, size_t *chans)
{
	const uint32_t *sig = b->sig.v + s->sig_first;
	uint32_t nv = sig[0], nl = sig[1], nd = sig[2], n_gw = sig[3];
	const uint32_t *gw_rank = sig + 4, *dev_rank = sig + 4 + n_gw;
	const uint32_t *ls = dev_rank + nd;
	uint32_t ne = nd + (n_gw ? n_gw : 1), *la, *lb, *tmp;
	double *w;
	struct lgraph g;
	enum tp_status st = TP_ENOMEM;

	memset(&g, 0, sizeof(g));
	la = tp_calloc((size_t)nl + 1, sizeof(*la));
	lb = tp_calloc((size_t)nl + 1, sizeof(*lb));
	w = tp_calloc((size_t)nl + 1, sizeof(*w));
	tmp = tp_calloc((size_t)nv + 1, sizeof(*tmp));
	s->gw_dist = tp_calloc((size_t)nd * n_gw + 1, sizeof(double));
	s->r = tp_calloc((size_t)ne * ne, sizeof(*s->r));
	if (!la || !lb || !w || !tmp || !s->gw_dist || !s->r)
		goto out;
	for (uint32_t i = 0; i < nl; i++) {
		struct tp_link l;
		uint32_t q[4];
		la[i] = ls[i * 6];
		lb[i] = ls[i * 6 + 1];
		memcpy(q, ls + i * 6 + 2, sizeof(q));
		memcpy(&l.bw_Bps, q, 8);
		memcpy(&l.latency_s, q + 2, 8);
		w[i] = link_weight(&l);
	}
	g.nv = nv;
	g.nl = nl;
	g.la = la;
	g.lb = lb;
	g.w = w;
	if (lgraph_alloc(&g))
		goto out;
	s->n_dev = nd;
	s->n_vert = nv;
	s->n_link = nl;
	s->n_gw = n_gw;
	for (uint32_t a = 0; a < ne; a++) {
		uint32_t src = a < nd ? dev_rank[a]
			       : a - nd < n_gw ? gw_rank[a - nd] : TP_NONE;
		if (src == TP_NONE)
			continue;
		lgraph_run(&g, src, 0);
		for (uint32_t q = 0; a < nd && q < n_gw; q++)
			s->gw_dist[(size_t)a * n_gw + q] = g.dist[gw_rank[q]];
		for (uint32_t t = 0; t < ne; t++) {
			uint32_t v = t < nd ? dev_rank[t]
				     : t - nd < n_gw ? gw_rank[t - nd]
						     : TP_NONE,
				 n = 0;
			struct local_route *r = &s->r[(size_t)a * ne + t];
			if (v == TP_NONE || v == src || !isfinite(g.dist[v])) {
				r->first = (uint32_t)s->chans.n;
				r->n = 0;
				continue;
			}
			while (v != src) {
				uint32_t ch = g.prev[v];
				tmp[n++] = ch;
				v = ch_from(la, lb, ch);
			}
			if (n > TP_ROUTE_MAX / 2) {
				st = long_local_route(b, dom);
				goto out;
			}
			if (*chans + s->chans.n + n > TP_ROUTE_SHAPE_CHANS_MAX) {
				st = tp_error_set_path(
				    b->err, TP_ELIMIT, "$.nodes",
				    "node \"%s\": the routes within it and the "
				    "other kinds of node before it cross over "
				    "%zu links in all (the limit); give nodes of "
				    "one size identical fabrics, NICs and links, "
				    "or links that join devices in fewer hops",
				    domain_node(b, dom),
				    TP_ROUTE_SHAPE_CHANS_MAX);
				goto out;
			}
			if (tp_vec_reserve(&s->chans, n))
				goto out;
			r->first = (uint32_t)s->chans.n;
			r->n = n;
			for (uint32_t k = 0; k < n; k++)
				s->chans.v[s->chans.n++] = tmp[n - 1 - k];
			if (n > s->max_len)
				s->max_len = n;
		}
	}
	*chans += s->chans.n;
	st = TP_OK;
out:
	lgraph_free(&g);
	free(la);
	free(lb);
	free(w);
	free(tmp);
	if (st == TP_ENOMEM)
		return tp_error_set(b->err, TP_ENOMEM, "out of memory");
	return st;
}

/* The first gateway of the domain a gateway v belongs to (v itself, or
 * rail 0's NIC of v's rail-optimised node) and how many the domain has. */
static uint32_t rail_first(const struct build *b, uint32_t v)
{
	uint32_t n = b->nic_node[v];
	return n == TP_NONE ? v : b->c->nodes.v[n].nic_vertex;
}

static uint32_t rail_count(const struct build *b, uint32_t v)
{
	uint32_t n = b->nic_node[v];
	return n == TP_NONE ? 1 : b->c->nodes.v[n].rails;
}

/* Domains: components of the non-network links over non-switch vertices. */
static enum tp_status build_domains(struct build *b)
{
	struct tp_cluster *c = b->c;
	struct tp_routing *rt = b->rt;
	uint32_t nv = (uint32_t)c->vertex_kind.n, nl = (uint32_t)c->links.n;
	uint32_t *uf = tp_calloc((size_t)nv + 1, sizeof(*uf));
	uint32_t *root_dom = tp_calloc((size_t)nv + 1, sizeof(*root_dom));
	uint32_t nd = 0;
	enum tp_status st = TP_OK;

	b->dom_of_vertex = tp_calloc((size_t)nv + 1, sizeof(uint32_t));
	b->rank = tp_calloc((size_t)nv + 1, sizeof(uint32_t));
	b->nic_node = tp_calloc((size_t)nv + 1, sizeof(uint32_t));
	if (!uf || !root_dom || !b->dom_of_vertex || !b->rank ||
	    !b->nic_node) {
		st = tp_error_set(b->err, TP_ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t v = 0; v < nv; v++) {
		uf[v] = v;
		root_dom[v] = TP_NONE;
		b->dom_of_vertex[v] = TP_NONE;
		b->nic_node[v] = TP_NONE;
	}
	for (uint32_t n = 0; n < c->nodes.n; n++)
		for (uint32_t r = 0; r < c->nodes.v[n].rails; r++)
			b->nic_node[c->nodes.v[n].nic_vertex + r] = n;
	for (uint32_t l = 0; l < nl; l++)
		if (!is_network_link(c, &c->links.v[l]))
			uf_union(uf, c->links.v[l].a, c->links.v[l].b);
	/* a domain per component holding a device, numbered by its first
	 * device */
	for (uint32_t d = 0; d < c->devices.n; d++) {
		uint32_t r = uf_find(uf, c->devices.v[d].vertex);
		if (root_dom[r] == TP_NONE)
			root_dom[r] = nd++;
	}
	rt->n_domains = nd;
	rt->domains = tp_calloc((size_t)nd + 1, sizeof(*rt->domains));
	b->vert_first = tp_calloc((size_t)nd + 2, sizeof(uint32_t));
	b->link_count = tp_calloc((size_t)nd + 1, sizeof(uint32_t));
	b->verts = tp_calloc((size_t)nv + 1, sizeof(uint32_t));
	rt->dom_links = tp_calloc((size_t)nl + 1, sizeof(uint32_t));
	if (!rt->domains || !b->vert_first || !b->link_count || !b->verts ||
	    !rt->dom_links) {
		st = tp_error_set(b->err, TP_ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t k = 0; k < nd; k++) {
		rt->domains[k].gateway = rt->domains[k].gw_net = TP_NONE;
		rt->domains[k].n_gw = 0;
	}
	for (uint32_t v = 0; v < nv; v++) {
		uint32_t k = c->vertex_kind.v[v] == TP_VERTEX_SWITCH
				 ? TP_NONE
				 : root_dom[uf_find(uf, v)];
		b->dom_of_vertex[v] = k;
		if (k != TP_NONE)
			b->vert_first[k + 1]++;
	}
	for (uint32_t k = 0; k < nd; k++)
		b->vert_first[k + 1] += b->vert_first[k];
	{
		uint32_t *fill = root_dom; /* reuse: per domain fill count */
		memset(fill, 0, sizeof(uint32_t) * nd);
		for (uint32_t v = 0; v < nv; v++) {
			uint32_t k = b->dom_of_vertex[v];
			if (k == TP_NONE)
				continue;
			b->rank[v] = fill[k];
			b->verts[b->vert_first[k] + fill[k]++] = v;
		}
	}
	/* links per domain, in link order; gateways */
	for (uint32_t l = 0; l < nl; l++)
		if (is_local_link(b, &c->links.v[l]))
			b->link_count[b->dom_of_vertex[c->links.v[l].a]]++;
	{
		uint32_t acc = 0;
		for (uint32_t k = 0; k < nd; k++) {
			rt->domains[k].link_first = acc;
			acc += b->link_count[k];
			b->link_count[k] = 0;
		}
	}
	for (uint32_t l = 0; l < nl; l++) {
		const struct tp_link *lk = &c->links.v[l];
		if (is_local_link(b, lk)) {
			uint32_t k = b->dom_of_vertex[lk->a];
			rt->dom_links[rt->domains[k].link_first +
				      b->link_count[k]++] = l;
			continue;
		}
		for (int e = 0; e < 2; e++) {
			uint32_t v = e ? lk->b : lk->a, k = b->dom_of_vertex[v];
			if (k == TP_NONE)
				continue;
			if (rt->domains[k].gateway == TP_NONE) {
				rt->domains[k].gateway = rail_first(b, v);
				rt->domains[k].n_gw = rail_count(b, v);
				rt->rails |= rt->domains[k].n_gw > 1;
			} else if (!(v >= rt->domains[k].gateway &&
				     v < rt->domains[k].gateway +
					     rt->domains[k].n_gw)) {
				char path[64];
				uint32_t d0 = TP_NONE;
				for (uint32_t d = 0; d < c->devices.n; d++)
					if (b->dom_of_vertex[c->devices.v[d]
								 .vertex] ==
					    k) {
						d0 = d;
						break;
					}
				snprintf(path, sizeof(path), "$.nodes[%u]",
					 d0 != TP_NONE ? c->devices.v[d0].node
						       : 0);
				st = tp_error_set_path(
				    b->err, TP_EINPUT, path,
				    "the devices of node \"%s\" join the "
				    "network at two vertices; give the node "
				    "one \"nic\"",
				    d0 != TP_NONE
					? c->nodes.v[c->devices.v[d0].node].name
					: "?");
				goto out;
			}
		}
	}
out:
	free(uf);
	free(root_dom);
	return st;
}

/*
 * The shapes by signature hash, so that a domain finds the shape of its
 * signature in O(1) whatever the kinds of node (a scan over the shapes
 * before it was quadratic in them: a topology of 65,536 kinds of node
 * spent 1.9 of its 2.7 s of loading there).
 * Open addressing with linear probing, at most half full; a slot holds a
 * shape index or TP_NONE.  The shapes stay in first-seen order: the
 * table only finds them.
 */
struct shape_index {
	uint32_t *slot;
	size_t cap; /* a power of two, 0 before the first shape */
};

/* The first slot of hash h (the FNV hash's high bits mixed into the low
 * ones the mask keeps). */
static size_t shape_slot(uint64_t h, size_t cap)
{
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return (size_t)h & (cap - 1);
}

/* The shape whose signature is the sig_n words at b->sig.v + first (hash
 * h), or TP_NONE. */
static uint32_t shape_find(const struct build *b, const struct shape_index *ix,
			   const struct shape *shapes, uint64_t h,
			   uint32_t first, uint32_t sig_n)
{
	if (!ix->cap)
		return TP_NONE;
	for (size_t i = shape_slot(h, ix->cap);; i = (i + 1) & (ix->cap - 1)) {
		uint32_t s = ix->slot[i];
		if (s == TP_NONE)
			return TP_NONE;
		if (shapes[s].hash == h && shapes[s].sig_n == sig_n &&
		    !memcmp(b->sig.v + shapes[s].sig_first, b->sig.v + first,
			    sig_n * sizeof(uint32_t)))
			return s;
	}
}

static void shape_put(struct shape_index *ix, const struct shape *shapes,
		      uint32_t s)
{
	size_t i = shape_slot(shapes[s].hash, ix->cap);

	while (ix->slot[i] != TP_NONE)
		i = (i + 1) & (ix->cap - 1);
	ix->slot[i] = s;
}

/* Index shapes[s], the newest, doubling the table when it would be more
 * than half full; -1 when out of memory. */
static int shape_add(struct shape_index *ix, const struct shape *shapes,
		     uint32_t s)
{
	if (2 * ((size_t)s + 1) > ix->cap) {
		size_t cap = ix->cap ? 2 * ix->cap : 64;
		uint32_t *slot = malloc(cap * sizeof(uint32_t));

		if (!slot)
			return -1;
		memset(slot, 0xff, cap * sizeof(uint32_t)); /* TP_NONE */
		free(ix->slot);
		ix->slot = slot;
		ix->cap = cap;
		for (uint32_t t = 0; t < s; t++)
			shape_put(ix, shapes, t);
	}
	shape_put(ix, shapes, s);
	return 0;
}

/* The domains' shapes: every signature first, their table sizes counted
 * against TP_ROUTE_SHAPE_PAIRS_MAX, then the routes of each shape. */
static enum tp_status build_shapes(struct build *b)
{
	struct tp_cluster *c = b->c;
	struct tp_routing *rt = b->rt;
	TP_VEC(struct shape) shapes = {0};
	TP_VEC(uint32_t) first_dom = {0}; /* per shape: its first domain */
	struct shape_index ix = {NULL, 0};
	enum tp_status st = TP_OK;
	size_t pairs = 0, chans = 0;

	for (uint32_t k = 0; k < rt->n_domains; k++) {
		uint32_t first, n, found = TP_NONE;
		uint64_t h;
		if (domain_signature(b, k, &first, &n, &h))
			goto nomem;
		found = shape_find(b, &ix, shapes.v, h, first, n);
		if (found != TP_NONE) {
			b->sig.n = first; /* drop the duplicate */
		} else {
			struct shape sh;
			memset(&sh, 0, sizeof(sh));
			sh.sig_first = first;
			sh.sig_n = n;
			sh.hash = h;
			const uint32_t *sig = b->sig.v + first;
			size_t ne = (size_t)sig[2] + (sig[3] ? sig[3] : 1);
			if (tp_vec_push(&shapes, sh) ||
			    tp_vec_push(&first_dom, k))
				goto nomem;
			found = (uint32_t)shapes.n - 1;
			if (shape_add(&ix, shapes.v, found))
				goto nomem;
			pairs += ne * ne;
			if (pairs > TP_ROUTE_SHAPE_PAIRS_MAX) {
				st = tp_error_set_path(
				    b->err, TP_ELIMIT, "$.nodes",
				    "node \"%s\" (%u devices) differs from "
				    "the nodes before it (devices, fabric, NIC "
				    "or links, or their figures): the route "
				    "tables of these %zu kinds of node would "
				    "hold %zu device pairs, over the limit of "
				    "%zu; give nodes of one size identical "
				    "fabrics, NICs and links, or fewer devices "
				    "per node",
				    domain_node(b, k), sig[2], shapes.n, pairs,
				    TP_ROUTE_SHAPE_PAIRS_MAX);
				goto fail;
			}
		}
		rt->domains[k].shape = found;
	}
	for (size_t s = 0; s < shapes.n; s++)
		if ((st = shape_routes(b, &shapes.v[s], first_dom.v[s],
				       &chans)))
			goto fail;
	(void)c;
	free(ix.slot);
	tp_vec_free(&first_dom);
	rt->shapes = shapes.v;
	rt->n_shapes = (uint32_t)shapes.n;
	return st;
nomem:
	st = tp_error_set(b->err, TP_ENOMEM, "out of memory");
fail:
	for (size_t s = 0; s < shapes.n; s++) {
		free(shapes.v[s].gw_dist);
		free(shapes.v[s].r);
		tp_vec_free(&shapes.v[s].chans);
	}
	tp_vec_free(&shapes);
	tp_vec_free(&first_dom);
	free(ix.slot);
	return st;
}

/* The links of the network between its vertices (build_network): channel
 * 2l is la[l] -> lb[l], 2l + 1 back; lglob the cluster's link, w its
 * routing weight. */
struct netlinks {
	uint32_t n, n_nl;
	uint32_t *la, *lb, *lglob;
	double *w;
};

static void netlinks_graph(const struct netlinks *nl, struct lgraph *g)
{
	memset(g, 0, sizeof(*g));
	g->nv = nl->n;
	g->nl = nl->n_nl;
	g->la = nl->la;
	g->lb = nl->lb;
	g->w = nl->w;
}

/* A forest network: every tree rooted at its lowest vertex, breadth
 * first; up channels, depths and parents (uf: the union-find of the
 * trees). */
static enum tp_status route_forest(struct build *b, const struct netlinks *nl,
				   uint32_t *uf)
{
	struct tp_routing *rt = b->rt;
	uint32_t n = nl->n, *la = nl->la, *lb = nl->lb, *lglob = nl->lglob;
	struct lgraph g;
	uint32_t *queue = tp_calloc((size_t)n + 1, sizeof(uint32_t));

	netlinks_graph(nl, &g);
	rt->up_ch = tp_calloc((size_t)n + 1, sizeof(uint32_t));
	rt->depth = tp_calloc((size_t)n + 1, sizeof(uint32_t));
	rt->parent = tp_calloc((size_t)n + 1, sizeof(uint32_t));
	if (!queue || !rt->up_ch || !rt->depth || !rt->parent ||
	    lgraph_alloc(&g)) {
		free(queue);
		lgraph_free(&g);
		return tp_error_set(b->err, TP_ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < n; i++)
		rt->parent[i] = TP_NONE;
	for (uint32_t r = 0; r < n; r++) {
		uint32_t qh = 0, qt = 0;
		if (rt->parent[r] != TP_NONE || uf_find(uf, r) != r)
			continue;
		rt->parent[r] = r;
		rt->up_ch[r] = TP_NONE;
		rt->depth[r] = 0;
		queue[qt++] = r;
		while (qh < qt) {
			uint32_t u = queue[qh++];
			for (uint32_t k = g.adj_off[u]; k < g.adj_off[u + 1];
			     k++) {
				uint32_t ch = g.adj[k];
				uint32_t to =
				    (ch & 1) ? la[ch >> 1] : lb[ch >> 1];
				if (rt->parent[to] != TP_NONE)
					continue;
				rt->parent[to] = u;
				/* up: to -> u is the reverse channel,
				 * stored as a global channel */
				rt->up_ch[to] =
				    lglob[ch >> 1] * 2 + ((ch & 1) ^ 1);
				rt->depth[to] = rt->depth[u] + 1;
				if (rt->depth[to] * 2 > rt->max_net_len)
					rt->max_net_len = rt->depth[to] * 2;
				queue[qt++] = to;
			}
		}
	}
	free(queue);
	lgraph_free(&g);
	return TP_OK;
}

/* A network with cycles: per gateway the Dijkstra predecessor channel of
 * every vertex (rt->prev, a row per gateway of rt->gw_row). */
static enum tp_status route_cycles(struct build *b, const struct netlinks *nl)
{
	struct tp_routing *rt = b->rt;
	uint32_t n = nl->n, *la = nl->la, *lb = nl->lb, *lglob = nl->lglob;
	struct lgraph g;
	uint32_t n_gw = 0;
	size_t cells;

	for (uint32_t k = 0; k < rt->n_domains; k++)
		n_gw += rt->domains[k].gw_net != TP_NONE;
	if (tp_size_mul(n_gw, n, &cells) || cells > TP_ROUTE_NET_TABLE_MAX) {
		return tp_error_set_path(
		    b->err, TP_ELIMIT, "$.network.links",
		    "an explicit network with alternative paths "
		    "(cycles) between %u nodes is too large to route "
		    "(at most %zu node-vertex pairs); describe it "
		    "with \"tiers\" instead",
		    n_gw, TP_ROUTE_NET_TABLE_MAX);
	}
	netlinks_graph(nl, &g);
	rt->prev = tp_calloc(cells + 1, sizeof(uint32_t));
	rt->gw_row = tp_calloc((size_t)n + 1, sizeof(uint32_t));
	if (!rt->prev || !rt->gw_row || lgraph_alloc(&g)) {
		lgraph_free(&g);
		return tp_error_set(b->err, TP_ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < n; i++)
		rt->gw_row[i] = TP_NONE;
	n_gw = 0;
	for (uint32_t k = 0; k < rt->n_domains; k++) {
		uint32_t gnet = rt->domains[k].gw_net, *row;
		const struct shape *sh = &rt->shapes[rt->domains[k].shape];
		if (gnet == TP_NONE || rt->gw_row[gnet] != TP_NONE)
			continue;
		rt->gw_row[gnet] = n_gw;
		/* the cost at the gateway as the whole-graph
		 * Dijkstra from the domain's first device has it */
		lgraph_run(&g, gnet, sh->n_dev ? sh->gw_dist[0] : 0);
		row = rt->prev + (size_t)n_gw * n;
		for (uint32_t v = 0; v < n; v++) {
			uint32_t ch = g.prev[v], len = 0, u = v;
			row[v] = ch == TP_NONE ? TP_NONE
					       : lglob[ch >> 1] * 2 + (ch & 1);
			while (u != gnet && g.prev[u] != TP_NONE) {
				u = ch_from(la, lb, g.prev[u]);
				len++;
			}
			if (len > rt->max_net_len)
				rt->max_net_len = len;
		}
		n_gw++;
	}
	lgraph_free(&g);
	return TP_OK;
}

/* The network: switches, gateways and vertices of no device domain. */
static enum tp_status build_network(struct build *b)
{
	struct tp_cluster *c = b->c;
	struct tp_routing *rt = b->rt;
	uint32_t nv = (uint32_t)c->vertex_kind.n, nl = (uint32_t)c->links.n;
	uint32_t *net_of = tp_calloc((size_t)nv + 1, sizeof(uint32_t));
	uint32_t *uf = NULL, n = 0, n_nl = 0;
	uint32_t *la = NULL, *lb = NULL, *lglob = NULL;
	double *w = NULL;
	struct netlinks nlk;
	enum tp_status st = TP_OK;

	if (!net_of)
		return tp_error_set(b->err, TP_ENOMEM, "out of memory");
	for (uint32_t v = 0; v < nv; v++) {
		uint32_t k = b->dom_of_vertex[v];
		net_of[v] = TP_NONE;
		if (k == TP_NONE ||
		    (rt->domains[k].gateway != TP_NONE &&
		     v >= rt->domains[k].gateway &&
		     v < rt->domains[k].gateway + rt->domains[k].n_gw))
			net_of[v] = n++;
	}
	rt->n_net = n;
	rt->net_vertex = tp_calloc((size_t)n + 1, sizeof(uint32_t));
	uf = tp_calloc((size_t)n + 1, sizeof(uint32_t));
	la = tp_calloc((size_t)nl + 1, sizeof(uint32_t));
	lb = tp_calloc((size_t)nl + 1, sizeof(uint32_t));
	lglob = tp_calloc((size_t)nl + 1, sizeof(uint32_t));
	w = tp_calloc((size_t)nl + 1, sizeof(double));
	if (!rt->net_vertex || !uf || !la || !lb || !lglob || !w)
		goto nomem;
	for (uint32_t v = 0; v < nv; v++)
		if (net_of[v] != TP_NONE)
			rt->net_vertex[net_of[v]] = v;
	for (uint32_t k = 0; k < rt->n_domains; k++)
		if (rt->domains[k].gateway != TP_NONE)
			rt->domains[k].gw_net = net_of[rt->domains[k].gateway];
	for (uint32_t i = 0; i < n; i++)
		uf[i] = i;
	rt->forest = true;
	for (uint32_t l = 0; l < nl; l++) {
		const struct tp_link *lk = &c->links.v[l];
		if (is_local_link(b, lk))
			continue;
		la[n_nl] = net_of[lk->a];
		lb[n_nl] = net_of[lk->b];
		lglob[n_nl] = l;
		w[n_nl] = link_weight(lk);
		if (!uf_union(uf, la[n_nl], lb[n_nl]))
			rt->forest = false;
		n_nl++;
	}
	nlk = (struct netlinks){n, n_nl, la, lb, lglob, w};
	if (rt->rails && !rt->forest)
		st = tp_error_set_path(
		    b->err, TP_EINPUT, "$.network",
		    "rail-optimised nodes need a star or switch \"tiers\" "
		    "(a network without alternative paths); drop the "
		    "rails or describe the network with tiers");
	else if (rt->forest)
		st = route_forest(b, &nlk, uf);
	else
		st = route_cycles(b, &nlk);
out:
	rt->net_of = net_of;
	free(uf);
	free(la);
	free(lb);
	free(lglob);
	free(w);
	return st;
nomem:
	st = tp_error_set(b->err, TP_ENOMEM, "out of memory");
	goto out;
}

/* Every device reachable from device 0; else the error the all-pairs
 * table gave (first unreachable device, from device 0). */
static enum tp_status check_connected(struct build *b)
{
	struct tp_cluster *c = b->c;
	uint32_t nv = (uint32_t)c->vertex_kind.n;
	uint32_t *uf = tp_calloc((size_t)nv + 1, sizeof(uint32_t));
	enum tp_status st = TP_OK;
	uint32_t r0;

	if (!uf)
		return tp_error_set(b->err, TP_ENOMEM, "out of memory");
	for (uint32_t v = 0; v < nv; v++)
		uf[v] = v;
	for (uint32_t l = 0; l < c->links.n; l++)
		uf_union(uf, c->links.v[l].a, c->links.v[l].b);
	r0 = uf_find(uf, c->devices.v[0].vertex);
	for (uint32_t t = 1; t < c->devices.n; t++) {
		char path[64];
		if (uf_find(uf, c->devices.v[t].vertex) == r0)
			continue;
		snprintf(path, sizeof(path), "$.nodes[%u]",
			 c->devices.v[t].node);
		st = tp_error_set_path(b->err, TP_EINPUT, path,
				       "device \"%s\" cannot be reached from "
				       "device \"%s\": the topology is "
				       "disconnected (add a link or a network)",
				       c->devices.v[t].name,
				       c->devices.v[0].name);
		break;
	}
	free(uf);
	return st;
}

enum tp_status tp_routing_build(struct tp_cluster *c, struct tp_routing **out,
				struct tp_error *err)
{
	struct build b;
	struct tp_routing *rt;
	enum tp_status st;
	uint32_t nd = (uint32_t)c->devices.n;

	*out = NULL;
	memset(&b, 0, sizeof(b));
	if ((st = check_connected(&(struct build){.c = c, .err = err})))
		return st;
	rt = tp_calloc(1, sizeof(*rt));
	if (!rt)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	b.c = c;
	b.rt = rt;
	b.err = err;
	rt->dev_domain = tp_calloc((size_t)nd + 1, sizeof(uint32_t));
	rt->dev_local = tp_calloc((size_t)nd + 1, sizeof(uint32_t));
	if (!rt->dev_domain || !rt->dev_local) {
		st = tp_error_set(err, TP_ENOMEM, "out of memory");
		goto out;
	}
	if ((st = build_domains(&b)))
		goto out;
	{
		uint32_t *cnt =
		    tp_calloc((size_t)rt->n_domains + 1, sizeof(uint32_t));
		if (!cnt) {
			st = tp_error_set(err, TP_ENOMEM, "out of memory");
			goto out;
		}
		b.dev_first =
		    tp_calloc((size_t)rt->n_domains + 2, sizeof(uint32_t));
		b.devs = tp_calloc((size_t)nd + 1, sizeof(uint32_t));
		if (!b.dev_first || !b.devs) {
			free(cnt);
			st = tp_error_set(err, TP_ENOMEM, "out of memory");
			goto out;
		}
		for (uint32_t d = 0; d < nd; d++) {
			uint32_t k = b.dom_of_vertex[c->devices.v[d].vertex];
			rt->dev_domain[d] = k;
			rt->dev_local[d] = cnt[k]++;
			b.dev_first[k + 1]++;
		}
		for (uint32_t k = 0; k < rt->n_domains; k++)
			b.dev_first[k + 1] += b.dev_first[k];
		for (uint32_t d = 0; d < nd; d++) {
			uint32_t k = rt->dev_domain[d];
			b.devs[b.dev_first[k] + rt->dev_local[d]] = d;
		}
		free(cnt);
	}
	if ((st = build_shapes(&b)) || (st = build_network(&b)))
		goto out;
	{
		uint32_t longest = 0;
		for (uint32_t s = 0; s < rt->n_shapes; s++)
			if (rt->shapes[s].max_len > longest)
				longest = rt->shapes[s].max_len;
		if ((size_t)longest * 2 + rt->max_net_len > TP_ROUTE_MAX) {
			st = tp_error_set_path(
			    err, TP_ELIMIT, "$.network",
			    "a route crosses more than %d links (%u in a "
			    "node, %u in the network); join the switches in "
			    "fewer tiers",
			    TP_ROUTE_MAX, longest, rt->max_net_len);
			goto out;
		}
	}
out:
	free(b.dom_of_vertex);
	free(b.rank);
	free(b.nic_node);
	free(b.vert_first);
	free(b.verts);
	free(b.link_count);
	free(b.dev_first);
	free(b.devs);
	tp_vec_free(&b.sig);
	if (st) {
		tp_routing_free(rt);
		return st;
	}
	*out = rt;
	return TP_OK;
}

/* --- queries ----------------------------------------------------------- */


/* Routing weight (sum of link weights) of the forest route between
 * network vertices u and w; INFINITY when they are in different trees
 * (rails joined by no switch). */
static double net_weight(const struct tp_cluster *c,
			 const struct tp_routing *rt, uint32_t u, uint32_t w)
{
	double sum = 0;

	while (u != w) {
		uint32_t *x = rt->depth[u] >= rt->depth[w] ? &u : &w;
		if (rt->up_ch[*x] == TP_NONE)
			return INFINITY;
		sum += link_weight(&c->links.v[rt->up_ch[*x] >> 1]);
		*x = rt->parent[*x];
	}
	return sum;
}

/*
 * Rails: the gateways (rails) a route from device a (local la of domain
 * ka) to b leaves and enters by.  The cheaper, by the routing weight, of
 * the target's rail on both sides (NCCL's PXN: over NVLink to the GPU on
 * the destination's rail, then that rail's NIC; NCCL 2.12 release notes,
 * "PXN"), the source's rail on both sides (the hop inside the target's
 * node), and the two mixed (over the spine to the other rail), then rail
 * 0 on either side (a node without rails faces rail 0; a leaf with more
 * nodes on rail 0 has wider uplinks): another rail is never cheaper when
 * a node's rails and the leaves are alike.  Ties (within 1e-12) go to
 * that order.  A domain with one gateway has rail 0 only.
 */
static void rail_pick(const struct tp_cluster *c, const struct tp_routing *rt,
		      const uint32_t dev[4], uint32_t *gs, uint32_t *gt)
{
	const struct domain *da = &rt->domains[dev[0]],
			    *db = &rt->domains[dev[2]];
	const struct shape *sa = &rt->shapes[da->shape],
			   *sb = &rt->shapes[db->shape];
	uint32_t la = dev[1], lb = dev[3];
	uint32_t cand[9][2] = {{lb, lb}, {la, la}, {la, lb}, {lb, la}, {0, 0},
			       {la, 0},	 {0, lb},  {lb, 0},  {0, la}};
	double best = INFINITY;

	*gs = *gt = 0;
	for (int q = 0; q < 9; q++) {
		uint32_t s = sa->n_gw > 1 && cand[q][0] < sa->n_gw ? cand[q][0]
								   : 0;
		uint32_t t = sb->n_gw > 1 && cand[q][1] < sb->n_gw ? cand[q][1]
								   : 0;
		double cost = sa->gw_dist[(size_t)la * sa->n_gw + s] +
			      net_weight(c, rt, da->gw_net + s,
					 db->gw_net + t) +
			      sb->gw_dist[(size_t)lb * sb->n_gw + t];
		if (cost < best * (1 - 1e-12)) {
			best = cost;
			*gs = s;
			*gt = t;
		}
	}
}

/* Append domain k's local route from endpoint a to endpoint b. */
static void add_local(const struct tp_routing *rt, uint32_t k, uint32_t a,
		      uint32_t b, struct tp_route *out)
{
	const struct domain *dm = &rt->domains[k];
	const struct shape *sh = &rt->shapes[dm->shape];
	const struct local_route *lr = &sh->r[(size_t)a * shape_ne(sh) + b];

	for (uint32_t i = 0; i < lr->n; i++) {
		uint32_t lch = sh->chans.v[lr->first + i];
		out->ch[out->n++] =
		    rt->dom_links[dm->link_first + (lch >> 1)] * 2 + (lch & 1);
	}
}

void tp_route_add_network(const struct tp_cluster *c,
			  const struct tp_routing *rt, uint32_t u, uint32_t w,
			  struct tp_route *out)
{
	if (u == w)
		return;
	if (rt->forest) {
		uint32_t down[TP_ROUTE_MAX], nd = 0;
		while (rt->depth[u] > rt->depth[w]) {
			out->ch[out->n++] = rt->up_ch[u];
			u = rt->parent[u];
		}
		while (rt->depth[w] > rt->depth[u]) {
			down[nd++] = rt->up_ch[w] ^ 1;
			w = rt->parent[w];
		}
		while (u != w) {
			out->ch[out->n++] = rt->up_ch[u];
			u = rt->parent[u];
			down[nd++] = rt->up_ch[w] ^ 1;
			w = rt->parent[w];
		}
		while (nd)
			out->ch[out->n++] = down[--nd];
	} else {
		const uint32_t *row =
		    rt->prev + (size_t)rt->gw_row[u] * rt->n_net;
		uint32_t back[TP_ROUTE_MAX], nb = 0, v = w;
		while (v != u) {
			uint32_t ch = row[v];
			const struct tp_link *l = &c->links.v[ch >> 1];
			back[nb++] = ch;
			v = rt->net_of[(ch & 1) ? l->b : l->a];
		}
		while (nb)
			out->ch[out->n++] = back[--nb];
	}
}

void tp_cluster_route(const struct tp_cluster *c, uint32_t a, uint32_t b,
		      struct tp_route *out)
{
	const struct tp_routing *rt = c->routing;

	out->n = 0;
	out->bw_Bps = INFINITY;
	out->latency_s = 0;
	if (a == b)
		return;
	{
		uint32_t ka = rt->dev_domain[a], kb = rt->dev_domain[b];
		uint32_t la = rt->dev_local[a], lb = rt->dev_local[b];
		if (ka == kb) {
			add_local(rt, ka, la, lb, out);
		} else {
			const struct shape *sa =
			    &rt->shapes[rt->domains[ka].shape];
			const struct shape *sb =
			    &rt->shapes[rt->domains[kb].shape];
			uint32_t gs = 0, gt = 0;
			if (rt->rails)
				rail_pick(c, rt,
					  (const uint32_t[4]){ka, la, kb, lb},
					  &gs, &gt);
			add_local(rt, ka, la, sa->n_dev + gs, out);
			tp_route_add_network(c, rt,
					     rt->domains[ka].gw_net + gs,
					     rt->domains[kb].gw_net + gt, out);
			add_local(rt, kb, sb->n_dev + gt, lb, out);
		}
	}
	/* the old table's sums: latency from the target back */
	for (uint32_t i = out->n; i-- > 0;) {
		const struct tp_link *l = &c->links.v[out->ch[i] >> 1];
		if (l->bw_Bps < out->bw_Bps)
			out->bw_Bps = l->bw_Bps;
		out->latency_s += l->latency_s;
	}
}

double tp_cluster_route_bw(const struct tp_cluster *c, uint32_t a, uint32_t b)
{
	struct tp_route r;

	tp_cluster_route(c, a, b, &r);
	return r.bw_Bps;
}

