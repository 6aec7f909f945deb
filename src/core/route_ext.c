/*
 * route_ext.c - the smallest bandwidth and the largest latency over the
 * routes of all pairs of devices, from the hierarchy (route.c's state,
 * route_int.h); see tp_cluster_route_extremes in cluster.h.
 */
#include <math.h>
#include <stdlib.h>

#include "route_int.h"

/* Bottleneck and latency of a local route of shape s (links of domain k),
 * latency summed from the target back as tp_cluster_route sums it. */
static void local_figures(const struct tp_cluster *c,
			  const struct tp_routing *rt, uint32_t k,
			  uint32_t a, uint32_t b, double *bw, double *lat)
{
	const struct domain *dm = &rt->domains[k];
	const struct shape *sh = &rt->shapes[dm->shape];
	const struct local_route *lr = &sh->r[(size_t)a * shape_ne(sh) + b];

	*bw = INFINITY;
	*lat = 0;
	for (uint32_t i = lr->n; i-- > 0;) {
		uint32_t lch = sh->chans.v[lr->first + i];
		const struct tp_link *l =
		    &c->links.v[rt->dom_links[dm->link_first + (lch >> 1)]];
		if (l->bw_Bps < *bw)
			*bw = l->bw_Bps;
		*lat += l->latency_s;
	}
}

/* Per shape: the extremes of its routes between devices (intra) and of
 * its devices' routes to (up) and from (down) the gateway. */
struct shape_ext {
	double in_bw, in_lat, up_bw, up_lat, down_bw, down_lat;
	bool seen;
	uint32_t up_dev, down_dev; /* local devices of up_lat, down_lat */
};

static void shape_extremes(const struct tp_cluster *c,
			   const struct tp_routing *rt, uint32_t k,
			   struct shape_ext *e)
{
	const struct shape *sh = &rt->shapes[rt->domains[k].shape];
	double bw, lat;

	*e = (struct shape_ext){INFINITY, 0, INFINITY, 0, INFINITY, 0,
				true,	  0,	    0};
	for (uint32_t a = 0; a < sh->n_dev; a++) {
		for (uint32_t b = 0; b < sh->n_dev; b++) {
			if (a == b)
				continue;
			local_figures(c, rt, k, a, b, &bw, &lat);
			e->in_bw = bw < e->in_bw ? bw : e->in_bw;
			e->in_lat = lat > e->in_lat ? lat : e->in_lat;
		}
		/* every rail's gateway (one without rails) */
		for (uint32_t g = 0; g < sh->n_gw; g++) {
			local_figures(c, rt, k, a, sh->n_dev + g, &bw, &lat);
			e->up_bw = bw < e->up_bw ? bw : e->up_bw;
			if (lat > e->up_lat) {
				e->up_lat = lat;
				e->up_dev = a;
			}
			local_figures(c, rt, k, sh->n_dev + g, a, &bw, &lat);
			e->down_bw = bw < e->down_bw ? bw : e->down_bw;
			if (lat > e->down_lat) {
				e->down_lat = lat;
				e->down_dev = a;
			}
		}
	}
}

/* Top two values of children, with the child they came from. */
struct top2 {
	double v[2];
	uint32_t from[2];
};

/* A pair of subtrees (children, or the vertex itself) and its value. */
struct pair_cand {
	uint32_t a, b;
	double val;
};

static void top2_add(struct top2 *t, double v, uint32_t from)
{
	if (v > t->v[0]) {
		t->v[1] = t->v[0];
		t->from[1] = t->from[0];
		t->v[0] = v;
		t->from[0] = from;
	} else if (v > t->v[1]) {
		t->v[1] = v;
		t->from[1] = from;
	}
}

/* The largest latency between two gateways of a forest network, the up
 * latency A of the source domain and the down latency B of the target's
 * added: max over k != l of A[k] + net(k, l) + B[l], with net(k, l) =
 * D(k) + D(l) - 2 D(lca) (D: latency up to the root).  One pass from the
 * deepest vertices up; O(network vertices).  Also the smallest bandwidth
 * of a tree link that some gateway pair crosses.  -1 when out of memory. */
static int forest_extremes(const struct tp_cluster *c,
			   const struct tp_routing *rt, const double *ga,
			   const double *gb, uint32_t *src, uint32_t *dst,
			   double *min_bw)
{
	double max_lat = -INFINITY;
	uint32_t n = rt->n_net, maxd = 0, total = 0;
	double *D = tp_calloc((size_t)n + 1, sizeof(double));
	double *bestA = tp_calloc((size_t)n + 1, sizeof(double));
	double *bestB = tp_calloc((size_t)n + 1, sizeof(double));
	uint32_t *argA = tp_calloc((size_t)n + 1, sizeof(uint32_t));
	uint32_t *argB = tp_calloc((size_t)n + 1, sizeof(uint32_t));
	uint32_t *cnt = tp_calloc((size_t)n + 1, sizeof(uint32_t));
	uint32_t *order = tp_calloc((size_t)n + 1, sizeof(uint32_t));
	uint32_t *dstart = NULL;
	struct top2 *ta = tp_calloc((size_t)n + 1, sizeof(*ta));
	struct top2 *tb = tp_calloc((size_t)n + 1, sizeof(*tb));
	int rc = -1;

	if (!D || !bestA || !bestB || !argA || !argB || !cnt || !order || !ta ||
	    !tb)
		goto out;
	for (uint32_t v = 0; v < n; v++)
		maxd = rt->depth[v] > maxd ? rt->depth[v] : maxd;
	dstart = tp_calloc((size_t)maxd + 2, sizeof(uint32_t));
	if (!dstart)
		goto out;
	/* vertices by depth (counting sort) */
	for (uint32_t v = 0; v < n; v++)
		dstart[rt->depth[v] + 1]++;
	for (uint32_t d = 0; d <= maxd; d++)
		dstart[d + 1] += dstart[d];
	for (uint32_t v = 0; v < n; v++)
		order[dstart[rt->depth[v]]++] = v;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t v = order[i];
		D[v] = rt->up_ch[v] == TP_NONE
			   ? 0
			   : D[rt->parent[v]] +
				 c->links.v[rt->up_ch[v] >> 1].latency_s;
		bestA[v] = isnan(ga[v]) ? -INFINITY : ga[v] + D[v];
		bestB[v] = isnan(gb[v]) ? -INFINITY : gb[v] + D[v];
		argA[v] = argB[v] = v;
		cnt[v] = !isnan(ga[v]);
		total += cnt[v];
		ta[v] = tb[v] = (struct top2){{-INFINITY, -INFINITY},
					      {TP_NONE, TP_NONE}};
	}
	*min_bw = INFINITY;
	*src = *dst = TP_NONE;
	for (uint32_t i = n; i-- > 0;) {
		uint32_t v = order[i], p = rt->parent[v];
		/* pairs whose lowest common vertex is v: two children, or v
		 * itself (a gateway) and a child; candidates (a, b, value) */
		struct pair_cand cand[4] = {
			{ta[v].from[0], tb[v].from[1], ta[v].v[0] + tb[v].v[1]},
			{ta[v].from[1], tb[v].from[0], ta[v].v[1] + tb[v].v[0]},
			{v, tb[v].from[0], ga[v] + D[v] + tb[v].v[0]},
			{ta[v].from[0], v, ta[v].v[0] + gb[v] + D[v]},
		};
		if (ta[v].from[0] != tb[v].from[0])
			cand[0] = (struct pair_cand){ta[v].from[0],
						     tb[v].from[0],
						     ta[v].v[0] + tb[v].v[0]};
		for (int q = 0; q < 4; q++) {
			double val = cand[q].val - 2 * D[v];
			if (q >= 2 && isnan(ga[v]))
				break;
			if (cand[q].a == TP_NONE || cand[q].b == TP_NONE ||
			    !(val > max_lat))
				continue;
			max_lat = val;
			*src = q == 2 ? v : argA[cand[q].a];
			*dst = q == 3 ? v : argB[cand[q].b];
		}
		if (rt->up_ch[v] == TP_NONE)
			continue;
		if (bestA[v] > bestA[p]) {
			bestA[p] = bestA[v];
			argA[p] = argA[v];
		}
		if (bestB[v] > bestB[p]) {
			bestB[p] = bestB[v];
			argB[p] = argB[v];
		}
		/* a child's subtree value excludes p itself */
		top2_add(&ta[p], bestA[v], v);
		top2_add(&tb[p], bestB[v], v);
		cnt[p] += cnt[v];
	}
	/* a tree link is crossed when gateways lie on both of its sides */
	for (uint32_t v = 0; v < n; v++)
		if (rt->up_ch[v] != TP_NONE && cnt[v] > 0 && cnt[v] < total &&
		    c->links.v[rt->up_ch[v] >> 1].bw_Bps < *min_bw)
			*min_bw = c->links.v[rt->up_ch[v] >> 1].bw_Bps;
	rc = 0;
out:
	free(D);
	free(bestA);
	free(bestB);
	free(argA);
	free(argB);
	free(cnt);
	free(order);
	free(dstart);
	free(ta);
	free(tb);
	return rc;
}

/* The device with local number a in domain k (a scan: asked twice). */
static uint32_t domain_device(const struct tp_cluster *c,
			      const struct tp_routing *rt, uint32_t k,
			      uint32_t a)
{
	for (uint32_t d = 0; d < c->devices.n; d++)
		if (rt->dev_domain[d] == k && rt->dev_local[d] == a)
			return d;
	return TP_NONE;
}

/* Rails: the largest latency of the routes between the devices of
 * domains ku and kw, every pair (a route's gateways depend on both
 * devices' rails). */
static double rail_far_latency(const struct tp_cluster *c,
			       const struct tp_routing *rt, uint32_t ku,
			       uint32_t kw)
{
	TP_VEC(uint32_t) du = {0}, dw = {0};
	double far = 0;

	for (uint32_t d = 0; d < c->devices.n; d++) {
		if (rt->dev_domain[d] == ku && tp_vec_push(&du, d))
			break;
		if (rt->dev_domain[d] == kw && tp_vec_push(&dw, d))
			break;
	}
	for (size_t i = 0; i < du.n; i++)
		for (size_t j = 0; j < dw.n; j++) {
			struct tp_route r;
			tp_cluster_route(c, du.v[i], dw.v[j], &r);
			far = fmax(far, r.latency_s);
		}
	tp_vec_free(&du);
	tp_vec_free(&dw);
	return far;
}

/* How many links the forest route between vertices u and w crosses, or
 * TP_NONE in different trees. */
static uint32_t net_hops(const struct tp_routing *rt, uint32_t u, uint32_t w)
{
	uint32_t hops = 0;

	while (u != w) {
		uint32_t *x = rt->depth[u] >= rt->depth[w] ? &u : &w;
		if (rt->up_ch[*x] == TP_NONE)
			return TP_NONE;
		*x = rt->parent[*x];
		hops++;
	}
	return hops;
}

/*
 * Rails: the largest latency over the routes between domains.  A route's
 * rails depend on both devices and on how high the two nodes meet (a PXN
 * hop inside a leaf group can outlast a spine crossing), so for each
 * kind of domain (shape) s, each kind t and each distance (links) between
 * their rail-0 NICs, the first such pair of domains, every device pair of
 * it routed.  Exact when domains of one kind sit alike in
 * the network (equal NIC latencies and tier figures); O(domains x tiers)
 * plus O(devices) per pair kept.
 */
static double rail_max_latency(const struct tp_cluster *c,
			       const struct tp_routing *rt)
{
	uint32_t ns = rt->n_shapes, nd = 0, *first_of, *seen;
	double far = 0;

	for (uint32_t v = 0; v < rt->n_net; v++)
		nd = 2 * rt->depth[v] + 1 > nd ? 2 * rt->depth[v] + 1 : nd;
	first_of = tp_calloc((size_t)ns + 1, sizeof(uint32_t));
	seen = tp_calloc((size_t)ns * ns * nd + 1, sizeof(uint32_t));
	if (!first_of || !seen) {
		free(first_of);
		free(seen);
		return INFINITY;
	}
	for (uint32_t s = 0; s < ns; s++)
		first_of[s] = TP_NONE;
	for (uint32_t k = 0; k < rt->n_domains; k++)
		if (rt->domains[k].gw_net != TP_NONE &&
		    first_of[rt->domains[k].shape] == TP_NONE)
			first_of[rt->domains[k].shape] = k;
	for (uint32_t s = 0; s < ns; s++) {
		uint32_t ks = first_of[s];
		for (uint32_t k = 0; ks != TP_NONE && k < rt->n_domains; k++) {
			uint32_t t = rt->domains[k].shape, d;
			size_t cell;
			if (k == ks || rt->domains[k].gw_net == TP_NONE)
				continue;
			d = net_hops(rt, rt->domains[ks].gw_net,
				     rt->domains[k].gw_net);
			cell = ((size_t)s * ns + t) * nd + (d < nd ? d : 0);
			if (d == TP_NONE || seen[cell])
				continue;
			seen[cell] = 1;
			far = fmax(far, rail_far_latency(c, rt, ks, k));
			far = fmax(far, rail_far_latency(c, rt, k, ks));
		}
	}
	free(first_of);
	free(seen);
	return far;
}

/* The latency of the route from the device of gateway u's domain farthest
 * from u to the device of w's domain farthest from w: the route itself,
 * so the figure is a real route's sum to the bit. */
static double far_latency(const struct tp_cluster *c,
			  const struct tp_routing *rt,
			  const struct shape_ext *se, const uint32_t *dom_of_gw,
			  uint32_t u, uint32_t w)
{
	uint32_t ku = dom_of_gw[u], kw = dom_of_gw[w];
	uint32_t a = se[rt->domains[ku].shape].up_dev;
	uint32_t b = se[rt->domains[kw].shape].down_dev;
	struct tp_route r;

	if (rt->rails)
		return rail_far_latency(c, rt, ku, kw);

	/* local device -> global device: the domain's a-th device */
	a = domain_device(c, rt, ku, a);
	b = domain_device(c, rt, kw, b);
	if (a == TP_NONE || b == TP_NONE)
		return 0;
	tp_cluster_route(c, a, b, &r);
	return r.latency_s;
}

void tp_cluster_route_extremes(const struct tp_cluster *c, double *min_bw,
			       double *max_lat)
{
	const struct tp_routing *rt = c->routing;
	struct shape_ext *se = tp_calloc((size_t)rt->n_shapes + 1, sizeof(*se));
	double *ga = tp_calloc((size_t)rt->n_net + 1, sizeof(double));
	double *gb = tp_calloc((size_t)rt->n_net + 1, sizeof(double));
	uint32_t *dom_of_gw = tp_calloc((size_t)rt->n_net + 1, sizeof(uint32_t));
	uint32_t n_gw = 0, fu = TP_NONE, fw = TP_NONE;
	double far = -INFINITY;

	*min_bw = INFINITY;
	*max_lat = 0;
	if (!se || !ga || !gb) {
		/* out of memory: every pair, the slow way */
		for (uint32_t a = 0; a < c->devices.n; a++)
			for (uint32_t b = 0; b < c->devices.n; b++) {
				struct tp_route r;
				if (a == b)
					continue;
				tp_cluster_route(c, a, b, &r);
				*min_bw = fmin(*min_bw, r.bw_Bps);
				*max_lat = fmax(*max_lat, r.latency_s);
			}
		goto out;
	}
	for (uint32_t v = 0; v < rt->n_net; v++)
		ga[v] = gb[v] = NAN;
	/* inside each kind of domain, once */
	for (uint32_t k = 0; k < rt->n_domains; k++) {
		struct shape_ext *e = &se[rt->domains[k].shape];
		if (!e->seen) {
			shape_extremes(c, rt, k, e);
			*min_bw = fmin(*min_bw, e->in_bw);
			*max_lat = fmax(*max_lat, e->in_lat);
		}
		if (rt->domains[k].gw_net != TP_NONE &&
		    rt->shapes[rt->domains[k].shape].n_dev > 0) {
			for (uint32_t g = 0; g < rt->domains[k].n_gw; g++) {
				ga[rt->domains[k].gw_net + g] = e->up_lat;
				gb[rt->domains[k].gw_net + g] = e->down_lat;
			}
			n_gw++;
		}
	}
	if (n_gw < 2)
		goto out;
	/* across domains: a device's way to its gateway, the network, and
	 * the way down (each domain has a partner in another) */
	for (uint32_t k = 0; k < rt->n_domains; k++)
		if (rt->domains[k].gw_net != TP_NONE &&
		    rt->shapes[rt->domains[k].shape].n_dev > 0) {
			const struct shape_ext *e = &se[rt->domains[k].shape];
			*min_bw = fmin(*min_bw, fmin(e->up_bw, e->down_bw));
		}
	if (!dom_of_gw)
		goto pairs;
	for (uint32_t k = 0; k < rt->n_domains; k++)
		for (uint32_t g = 0; rt->domains[k].gw_net != TP_NONE &&
				     g < rt->domains[k].n_gw;
		     g++)
			dom_of_gw[rt->domains[k].gw_net + g] = k;
	if (rt->forest) {
		double bw;
		uint32_t u, w;
		if (forest_extremes(c, rt, ga, gb, &u, &w, &bw) == 0) {
			*min_bw = fmin(*min_bw, bw);
			if (rt->rails) {
				*max_lat = fmax(*max_lat, rail_max_latency(c, rt));
				goto out;
			}
			*max_lat = fmax(*max_lat,
					far_latency(c, rt, se, dom_of_gw, u, w));
			goto out;
		}
	}
pairs:
	/* a cyclic network: every pair of gateways */
	for (uint32_t u = 0; u < rt->n_net; u++) {
		if (isnan(ga[u]))
			continue;
		for (uint32_t w = 0; w < rt->n_net; w++) {
			struct tp_route r;
			double lat = 0;
			if (w == u || isnan(gb[w]))
				continue;
			r.n = 0;
			tp_route_add_network(c, rt, u, w, &r);
			for (uint32_t i = r.n; i-- > 0;) {
				const struct tp_link *l = &c->links.v[r.ch[i] >> 1];
				*min_bw = fmin(*min_bw, l->bw_Bps);
				lat += l->latency_s;
			}
			if (gb[w] + lat + ga[u] > far) {
				far = gb[w] + lat + ga[u];
				fu = u;
				fw = w;
			}
		}
	}
	if (fu != TP_NONE)
		*max_lat = fmax(*max_lat, dom_of_gw ? far_latency(c, rt, se,
								  dom_of_gw,
								  fu, fw)
						    : far);
out:
	free(se);
	free(ga);
	free(gb);
	free(dom_of_gw);
}
