/*
 * test_route.c - routes computed on demand (src/core/route.c) against the
 * all-pairs table earlier versions stored (its Dijkstra, copied here as
 * the reference): the same channels, bandwidths and latencies, bit for
 * bit, on every shipped topology, the presets and hand-built graphs.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cluster.h"
#include "core/strategy.h"
#include "core/strbuf.h"
#include "io/build.h"
#include "io/io.h"
#include "sim/sim.h"
#include "util.h"

/* --- the reference: one Dijkstra per source device over the whole graph,
 * as tp_cluster_finalize did before routes were computed on demand ---- */

struct ref_item {
	double cost;
	uint32_t v;
};

static void ref_push(struct ref_item *h, uint32_t *n, struct ref_item it)
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

static struct ref_item ref_pop(struct ref_item *h, uint32_t *n)
{
	struct ref_item top = h[0], last = h[--(*n)];
	uint32_t i = 0;

	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		struct ref_item cur = last;
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

/* Compare every route of c (source s against all targets) with the
 * reference's; returns the number of differing routes. */
/* Rail-optimised nodes placed unlike others of their kind (a leaf group
 * mixing kinds): the largest latency is a lower bound (cluster.h). */
static bool rails_unlike;

/* tp_cluster_route_extremes against every pair's route, to the bit. */
static void check_extremes(const struct tp_cluster *c)
{
	double bw = INFINITY, lat = 0, xbw, xlat;

	for (uint32_t a = 0; a < c->devices.n; a++)
		for (uint32_t b = 0; b < c->devices.n; b++) {
			struct tp_route r;
			if (a == b)
				continue;
			tp_cluster_route(c, a, b, &r);
			bw = fmin(bw, r.bw_Bps);
			lat = fmax(lat, r.latency_s);
		}
	tp_cluster_route_extremes(c, &xbw, &xlat);
	ck_assert_msg(xbw == bw, "min bandwidth %.17g, all pairs %.17g", xbw,
		      bw);
	ck_assert_msg(xlat == lat || (rails_unlike && xlat <= lat &&
				      xlat > 0.8 * lat),
		      "max latency %.17g, all pairs %.17g", xlat, lat);
}

static uint32_t compare_all(const struct tp_cluster *c)
{
	uint32_t nv = (uint32_t)c->vertex_kind.n, nd = (uint32_t)c->devices.n;
	uint32_t nl = (uint32_t)c->links.n, bad = 0;
	uint32_t *adj_off = calloc(nv + 1, sizeof(uint32_t));
	uint32_t *adj = calloc(2 * (size_t)nl + 1, sizeof(uint32_t));
	uint32_t *fill = calloc(nv + 1, sizeof(uint32_t));
	uint32_t *prev = calloc(nv + 1, sizeof(uint32_t));
	uint32_t *tmp = calloc(nv + 1, sizeof(uint32_t));
	double *dist = calloc(nv + 1, sizeof(double));
	struct ref_item *heap = calloc(2 * (size_t)nl + nv + 1, sizeof(*heap));

	ck_assert(adj_off && adj && fill && prev && tmp && dist && heap);
	for (uint32_t l = 0; l < nl; l++) {
		adj_off[c->links.v[l].a + 1]++;
		adj_off[c->links.v[l].b + 1]++;
	}
	for (uint32_t v = 0; v < nv; v++)
		adj_off[v + 1] += adj_off[v];
	for (uint32_t l = 0; l < nl; l++) {
		uint32_t a = c->links.v[l].a, b = c->links.v[l].b;
		adj[adj_off[a] + fill[a]++] = l * 2;
		adj[adj_off[b] + fill[b]++] = l * 2 + 1;
	}
	check_extremes(c);
	for (uint32_t s = 0; s < nd; s++) {
		uint32_t src = c->devices.v[s].vertex, hn = 0;
		for (uint32_t v = 0; v < nv; v++) {
			dist[v] = INFINITY;
			prev[v] = UINT32_MAX;
		}
		dist[src] = 0;
		ref_push(heap, &hn, (struct ref_item){0, src});
		while (hn) {
			struct ref_item it = ref_pop(heap, &hn);
			if (it.cost > dist[it.v])
				continue;
			for (uint32_t k = adj_off[it.v]; k < adj_off[it.v + 1];
			     k++) {
				uint32_t ch = adj[k];
				const struct tp_link *l = &c->links.v[ch >> 1];
				uint32_t to = (ch & 1) ? l->a : l->b;
				double w = l->latency_s + 1e6 / l->bw_Bps;
				if (it.cost + w < dist[to]) {
					dist[to] = it.cost + w;
					prev[to] = ch;
					ref_push(
					    heap, &hn,
					    (struct ref_item){dist[to], to});
				}
			}
		}
		for (uint32_t t = 0; t < nd; t++) {
			uint32_t v = c->devices.v[t].vertex, n = 0;
			double bw = INFINITY, lat = 0;
			struct tp_route r;
			bool same;
			while (t != s && v != src) {
				uint32_t ch = prev[v];
				const struct tp_link *l = &c->links.v[ch >> 1];
				tmp[n++] = ch;
				if (l->bw_Bps < bw)
					bw = l->bw_Bps;
				lat += l->latency_s;
				v = (ch & 1) ? l->b : l->a;
			}
			tp_cluster_route(c, s, t, &r);
			same = r.n == n && r.bw_Bps == bw && r.latency_s == lat;
			for (uint32_t k = 0; same && k < n; k++)
				same = r.ch[k] == tmp[n - 1 - k];
			bad += !same;
		}
	}
	free(adj_off);
	free(adj);
	free(fill);
	free(prev);
	free(tmp);
	free(dist);
	free(heap);
	return bad;
}

static void check_file(const char *rel)
{
	struct tp_cluster c;
	struct tp_error err;

	tp_cluster_init(&c);
	ck_assert_msg(
	    tp_topology_load_file(tp_test_path(rel), NULL, &c, &err) == TP_OK,
	    "%s: %s", rel, err.msg);
	ck_assert_msg(compare_all(&c) == 0, "%s: routes differ", rel);
	tp_cluster_release(&c);
}

START_TEST(test_route_shipped_topologies)
{
	static const char *const files[] = {
	    "../data/topologies/1080ti-pcie.json",
	    "../data/topologies/a100-pcie.json",
	    "../data/topologies/dgx-a100-4.json",
	    "../data/topologies/dgx-a100.json",
	    "../data/topologies/dgx-h100.json",
	    "../data/topologies/dgx1-v100.json",
	    "../data/topologies/hgx-h200.json",
	    "../data/topologies/dgx-b200.json",
	    "../data/topologies/gb200-nvl72.json",
	    "../data/topologies/h100-pcie.json",
	    "../data/topologies/h100-nvl.json",
	    "../data/topologies/dgx-a100-40gb.json",
	    "../data/topologies/mi300x.json",
	    "../data/topologies/mi250x.json",
	    "../data/topologies/gaudi2.json",
	    "../data/topologies/gaudi3.json",
	    "../data/topologies/l4-pcie.json",
	    "../data/topologies/p100-pcie.json",
	    "../data/topologies/t4-pcie.json",
	    "../data/topologies/tag-testbed.json",
	    "../data/topologies/v100-nvlink.json",
	    "../data/tag-testbed.json",
	    "../data/dgx-a100x4.json",
	    "data/good/two-racks.json",
	    "data/good/old/tag-testbed.json",
	    "data/good/old/dgx-a100-4.json",
	};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		check_file(files[i]);
}
END_TEST

START_TEST(test_route_presets)
{
	static const char *const specs[][4] = {
	    {"dgx1-v100:3", NULL},
	    {"v100-nvlink:2", "1080ti-pcie:3"},
	    {"tag-testbed", NULL},
	    {"dgx-h100:5", "a100-pcie:2"},
	    {"mi300x:2", "h100-pcie:2", "gaudi3:1"},
	    {"gb200-nvl72:1", "mi250x:2", "h100-nvl:1"},
	};

	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		struct tp_cluster c;
		struct tp_error err;
		int n = 0;
		while (n < 4 && specs[i][n])
			n++;
		tp_cluster_init(&c);
		ck_assert_int_eq(
		    tp_build_topology(specs[i], n, NULL, 2.0, &c, &err), TP_OK);
		ck_assert_uint_eq(compare_all(&c), 0);
		tp_cluster_release(&c);
	}
}
END_TEST

/* A network with cycles (two spines, every leaf on both, a slower one
 * and a faster one) and nodes on PCIe whose NIC path beats the fabric. */
START_TEST(test_route_cyclic_network)
{
	struct tp_cluster c;
	struct tp_device_type t;
	struct tp_error err;
	uint32_t ti, sp[2], leaf[3];

	memset(&t, 0, sizeof(t));
	t.name = "X";
	t.peak_flops[TP_DTYPE_FP32] = 1e13;
	t.memory_bytes = 1e10;
	t.memory_bw_Bps = 1e12;
	tp_cluster_init(&c);
	ck_assert_int_eq(tp_cluster_add_type(&c, &t, &ti, &err), TP_OK);
	for (int k = 0; k < 2; k++)
		sp[k] = tp_cluster_add_vertex(&c, TP_VERTEX_SWITCH);
	for (int k = 0; k < 3; k++) {
		leaf[k] = tp_cluster_add_vertex(&c, TP_VERTEX_SWITCH);
		tp_cluster_add_link(&c, leaf[k], sp[0], 4e10, 1e-6,
				    TP_LINK_NETWORK, &err);
		tp_cluster_add_link(&c, leaf[k], sp[1], k == 1 ? 8e10 : 4e10,
				    1e-6, TP_LINK_NETWORK, &err);
	}
	for (int n = 0; n < 6; n++) {
		char name[16];
		uint32_t node;
		snprintf(name, sizeof(name), "n%d", n);
		/* PCIe 12 GB/s against a 25 GB/s NIC: the NIC path wins */
		ck_assert_int_eq(
		    tp_cluster_build_node(
			&c,
			&(struct tp_node_build){name, ti, 3, TP_LINK_PCIE, 12e9,
						2e-6, 1, 25e9, 1e-6, false},
			&node, &err),
		    TP_OK);
		ck_assert_int_eq(tp_cluster_add_link(&c,
						     c.nodes.v[node].nic_vertex,
						     leaf[n / 2], 5e10, 5e-7,
						     TP_LINK_NETWORK, &err),
				 TP_OK);
	}
	/* an NVLink pair in node 0 */
	tp_cluster_add_link(&c, c.devices.v[0].vertex, c.devices.v[2].vertex,
			    5e10, 3e-7, TP_LINK_NVLINK, &err);
	ck_assert_int_eq(tp_cluster_finalize(&c, &err), TP_OK);
	ck_assert_uint_eq(compare_all(&c), 0);
	tp_cluster_release(&c);
}
END_TEST

/* Switch tiers (network.tiers, --fabric clos:...): a tree, so routes
 * climb to the common ancestor; against the reference on partial groups,
 * given bandwidths, oversubscribed tiers, zones with WAN latency and
 * mixed nodes. */
START_TEST(test_route_tiers)
{
	static const char *const topo =
	    "{\"format\": \"tagplan-topology/1\", \"nodes\": ["
	    "{\"name\": \"a\", \"count\": 5, \"devices\": [{\"type\": "
	    "\"H100-SXM5-80GB\", \"count\": 4}], \"fabric\": {\"kind\": "
	    "\"nvswitch\", \"bandwidth_Bps\": 450e9, \"latency_s\": 3e-7}, "
	    "\"nic\": {\"count\": 4, \"bandwidth_Bps\": 50e9, \"latency_s\": "
	    "6e-7}},"
	    "{\"name\": \"b\", \"count\": 4, \"devices\": [{\"type\": "
	    "\"A100-SXM4-80GB\", \"count\": 2}, {\"type\": \"L4-24GB\"}], "
	    "\"fabric\": {\"kind\": \"pcie\", \"bandwidth_Bps\": 20e9, "
	    "\"latency_s\": 2e-6}, \"nic\": {\"bandwidth_Bps\": 25e9, "
	    "\"latency_s\": 1e-6}}],"
	    "\"network\": {\"tiers\": ["
	    "{\"name\": \"leaf\", \"group\": 2, \"oversubscription\": 1.5},"
	    "{\"name\": \"spine\", \"group\": 2, \"latency_s\": 4e-7, "
	    "\"oversubscription\": 3},"
	    "{\"name\": \"core\", \"group\": 2, \"latency_s\": 5e-7, "
	    "\"bandwidth_Bps\": 30e9},"
	    "{\"name\": \"zone\", \"latency_s\": 2e-3, \"bandwidth_Bps\": "
	    "12.5e9}]}}";
	static const char *const specs[][2] = {
	    {"dgx-h100:9", "clos:leaf=4"},
	    {"dgx-h100:11", "clos:leaf=2,spine=3,oversubscription=2"},
	    {"dgx1-v100:5", "clos:leaf=2,spine=2,latency=1e-6"},
	};
	struct tp_cluster c;
	struct tp_error err;
	struct tp_route r;

	tp_cluster_init(&c);
	ck_assert_msg(tp_topology_load("t.json", topo, strlen(topo), NULL, &c,
				       &err) == TP_OK,
		      "%s: %s", err.path, err.msg);
	ck_assert_uint_eq(c.tiers.n, 4);
	ck_assert_uint_eq(compare_all(&c), 0);
	/* a-0 to a-1 through one leaf: the NIC, the leaf, the NIC */
	tp_cluster_route(&c, 0, 4, &r);
	ck_assert_uint_eq(r.n, 4);
	ck_assert(r.bw_Bps == 50e9);
	ck_assert(r.latency_s == 6e-7);
	/* a-0 to the last b: leaf, spine, core, zone and back down */
	tp_cluster_route(&c, 0, (uint32_t)c.devices.n - 1, &r);
	ck_assert_uint_eq(r.n, 10);
	/* the last leaf holds one b node: 25 GB/s / 1.5, then / 3 up */
	ck_assert_msg(r.bw_Bps == 25e9 / 1.5 / 3, "%g", r.bw_Bps);
	ck_assert(fabs(r.latency_s - (6e-7 / 2 + 1e-6 / 2 + 4e-7 + 5e-7 +
				      2e-3)) < 1e-15);
	tp_cluster_release(&c);

	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		tp_cluster_init(&c);
		ck_assert_msg(tp_build_topology_fabric(&specs[i][0], 1, NULL,
						       1.0, specs[i][1], &c,
						       &err) == TP_OK,
			      "%s", err.msg);
		ck_assert_uint_eq(compare_all(&c), 0);
		tp_cluster_release(&c);
	}
}
END_TEST

/* Rail-optimised fabrics (nic.rails, --fabric rail:...): one NIC per GPU,
 * GPU i of every node of a leaf group on that group's leaf i.  Routes
 * against the reference (every channel) on presets, partial groups,
 * spines, a star of rails and rail nodes beside plain ones; and the
 * hand figures of a DGX H100 pair: same rail through the rail's leaf;
 * another rail in the same leaf group over NVLink to the target's rail
 * first (PXN); across leaf groups over the spine, no NVLink hop. */
START_TEST(test_route_rails)
{
	static const char *const topo =
	    "{\"format\": \"tagplan-topology/1\", \"nodes\": ["
	    "{\"name\": \"a\", \"count\": 5, \"devices\": [{\"type\": "
	    "\"H100-SXM5-80GB\", \"count\": 4}], \"fabric\": {\"kind\": "
	    "\"nvswitch\", \"bandwidth_Bps\": 450e9, \"latency_s\": 3e-7}, "
	    "\"nic\": {\"count\": 4, \"bandwidth_Bps\": 50e9, \"latency_s\": "
	    "6e-7, \"rails\": true}},"
	    "{\"name\": \"b\", \"count\": 3, \"devices\": [{\"type\": "
	    "\"A100-SXM4-80GB\", \"count\": 2}], "
	    "\"fabric\": {\"kind\": \"pcie\", \"bandwidth_Bps\": 20e9, "
	    "\"latency_s\": 2e-6}, \"nic\": {\"bandwidth_Bps\": 25e9, "
	    "\"latency_s\": 1e-6}}]%s}";
	static const char *const nets[] = {
	    "",
	    ", \"network\": {\"tiers\": ["
	    "{\"name\": \"leaf\", \"group\": 2, \"oversubscription\": 1.5},"
	    "{\"name\": \"spine\", \"group\": 4, \"latency_s\": 4e-7},"
	    "{\"name\": \"core\", \"latency_s\": 5e-7}]}"};
	static const char *const specs[][2] = {
	    {"dgx-h100:9", "rail:leaf=4"},
	    {"dgx-h100:11", "rail:leaf=2,spine=3,oversubscription=2"},
	    {"dgx-h100:3", "rail:leaf=1,latency=0"},
	};
	struct tp_cluster c;
	struct tp_error err;
	struct tp_route r;
	char text[2048];

	for (size_t i = 0; i < sizeof(nets) / sizeof(nets[0]); i++) {
		snprintf(text, sizeof(text), topo, nets[i]);
		tp_cluster_init(&c);
		ck_assert_msg(tp_topology_load("t.json", text, strlen(text),
					       NULL, &c, &err) == TP_OK,
			      "%s: %s", err.path, err.msg);
		ck_assert_uint_eq(c.nodes.v[0].rails, 4);
		ck_assert_uint_eq(c.nodes.v[5].rails, 0);
		rails_unlike = i > 0; /* a-4 and b-0 share a leaf group */
		ck_assert_uint_eq(compare_all(&c), 0);
		rails_unlike = false;
		tp_cluster_release(&c);
	}
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		tp_cluster_init(&c);
		ck_assert_msg(tp_build_topology_fabric(&specs[i][0], 1, NULL,
						       1.0, specs[i][1], &c,
						       &err) == TP_OK,
			      "%s", err.msg);
		ck_assert_uint_eq(compare_all(&c), 0);
		tp_cluster_release(&c);
	}
	tp_cluster_init(&c);
	ck_assert(tp_build_topology_fabric(&specs[0][0], 1, NULL, 1.0,
					   specs[0][1], &c, &err) == TP_OK);
	/* node 0 GPU 0 to node 1 GPU 0: NIC 0, leaf 0 of group 0, NIC 0 */
	tp_cluster_route(&c, 0, 8, &r);
	ck_assert_uint_eq(r.n, 4);
	ck_assert(r.bw_Bps == 50e9 && r.latency_s == 6e-7);
	/* to node 1 GPU 3: NVSwitch to GPU 3, its NIC, leaf 3, NIC 3 */
	tp_cluster_route(&c, 0, 11, &r);
	ck_assert_uint_eq(r.n, 6);
	ck_assert_msg(c.links.v[r.ch[0] >> 1].kind == TP_LINK_NVSWITCH &&
			  c.links.v[r.ch[2] >> 1].kind == TP_LINK_NIC,
		      "PXN: first hop over NVLink");
	ck_assert(r.bw_Bps == 50e9);
	ck_assert(fabs(r.latency_s - (3e-7 + 6e-7)) < 1e-18);
	/* to node 4 (next leaf group) GPU 3: NIC 0, leaf 0, spine, leaf 3
	 * of group 1, NIC 3: no NVLink hop */
	tp_cluster_route(&c, 0, 4 * 8 + 3, &r);
	ck_assert_uint_eq(r.n, 6);
	ck_assert(c.links.v[r.ch[0] >> 1].kind == TP_LINK_NIC);
	ck_assert(fabs(r.latency_s - (6e-7 + 5e-7)) < 1e-18);
	{
		/* written ("rails": true) and read back: the same file and
		 * the same routes */
		struct tp_strbuf a, b;
		struct tp_cluster back;
		tp_strbuf_init(&a);
		tp_strbuf_init(&b);
		tp_topology_write(&c, &a);
		ck_assert_ptr_nonnull(strstr(tp_strbuf_cstr(&a),
					     "\"rails\": true"));
		tp_cluster_init(&back);
		ck_assert_msg(tp_topology_load("w.json", tp_strbuf_cstr(&a),
					       a.len, NULL, &back,
					       &err) == TP_OK,
			      "%s: %s", err.path, err.msg);
		tp_topology_write(&back, &b);
		ck_assert_str_eq(tp_strbuf_cstr(&a), tp_strbuf_cstr(&b));
		ck_assert_uint_eq(compare_all(&back), 0);
		tp_cluster_release(&back);
		tp_strbuf_release(&a);
		tp_strbuf_release(&b);
	}
	tp_cluster_release(&c);
}
END_TEST

/* One tier joining all nodes, no latency, no oversubscription: the
 * star's routes exactly. */
START_TEST(test_route_one_tier_is_star)
{
	static const char *const spec[] = {"dgx-a100:3", "v100-nvlink:2"};
	struct tp_cluster star, tier;
	struct tp_error err;

	tp_cluster_init(&star);
	tp_cluster_init(&tier);
	ck_assert(tp_build_topology(spec, 2, NULL, 1.0, &star, &err) == TP_OK);
	ck_assert(tp_build_topology_fabric(spec, 2, NULL, 1.0,
					   "clos:leaf=5,latency=0", &tier,
					   &err) == TP_OK);
	for (uint32_t a = 0; a < star.devices.n; a++)
		for (uint32_t b = 0; b < star.devices.n; b++) {
			struct tp_route x, y;
			tp_cluster_route(&star, a, b, &x);
			tp_cluster_route(&tier, a, b, &y);
			/* the tier adds a spine above the one leaf */
			ck_assert(x.bw_Bps == y.bw_Bps &&
				  x.latency_s == y.latency_s && x.n == y.n);
		}
	tp_cluster_release(&star);
	tp_cluster_release(&tier);
}
END_TEST

/* More devices than the old table allowed: built in well under a second
 * and a route between far nodes crosses NIC, switch, NIC. */
START_TEST(test_route_large)
{
	struct tp_cluster c;
	struct tp_error err;
	const char *spec[] = {"dgx-h100:1280"};
	struct tp_route r;

	tp_cluster_init(&c);
	ck_assert_int_eq(tp_build_topology(spec, 1, NULL, 1.0, &c, &err),
			 TP_OK);
	ck_assert_uint_eq(c.devices.n, 10240);
	tp_cluster_route(&c, 0, 10239, &r);
	ck_assert_uint_eq(r.n, 4);
	ck_assert(r.bw_Bps == 50e9);
	tp_cluster_route(&c, 0, 7, &r);
	ck_assert_uint_eq(r.n, 2);
	ck_assert(r.bw_Bps == 450e9);
	tp_cluster_release(&c);
}
END_TEST

/* A topology of n_nodes nodes on a star network, node i of kind kind[i]:
 * dev devices (dev + kind % 3 with vary) on a fabric of 1e11 + kind x
 * 1e8 B/s, so that nodes of one kind are identical; a malloc'd text. */
static char *kinds_topology(const uint32_t *kind, uint32_t n_nodes,
			    uint32_t dev, bool vary)
{
	size_t size = 256 + (size_t)n_nodes * 320, len = 0;
	char *t = malloc(size);

	ck_assert_ptr_nonnull(t);
	len += (size_t)snprintf(t + len, size - len,
				"{\"format\": \"tagplan-topology/1\", "
				"\"name\": \"kinds\", \"nodes\": [");
	for (uint32_t i = 0; i < n_nodes; i++)
		len += (size_t)snprintf(
		    t + len, size - len,
		    "%s{\"name\": \"n%u\", \"devices\": [{\"type\": "
		    "\"A100-SXM4-80GB\", \"count\": %u}], \"fabric\": "
		    "{\"kind\": \"nvswitch\", \"bandwidth_Bps\": %.17g, "
		    "\"latency_s\": 1e-6}, \"nic\": {\"count\": 1, "
		    "\"bandwidth_Bps\": 2.5e10, \"latency_s\": 5e-6}}",
		    i ? ", " : "", i, dev + (vary ? kind[i] % 3 : 0),
		    1e11 + 1e8 * kind[i]);
	snprintf(t + len, size - len,
		 "], \"network\": {\"oversubscription\": 1}}");
	ck_assert(len < size);
	return t;
}

/* Identical nodes share one route table (a shape) however many kinds of
 * node come between them: many kinds with repeats scattered among them
 * (not next to each other) route as the whole-graph Dijkstra does, and
 * only the distinct kinds count, as the table-size limit's message
 * shows: 16 kinds of 2047-device node (2048^2 endpoint pairs each) are
 * the most that fit, and the node of a 17th kind, after repeats of
 * earlier ones, is the one refused.  route.c finds a node's kind by a
 * hash of its signature (a scan over the kinds before); both pass, a
 * lookup that misses repeats or returns another kind fails. */
START_TEST(test_route_many_kinds)
{
	uint32_t kind[400];
	struct tp_cluster c;
	struct tp_error err;
	char *t;

	/* 300 kinds of 2 to 4 devices, then 100 repeats of kinds 0, 4, 8,
	 * ... (0, 1 and 2 more devices) */
	for (uint32_t i = 0; i < 400; i++)
		kind[i] = i < 300 ? i : (i - 300) * 4;
	t = kinds_topology(kind, 400, 2, true);
	tp_cluster_init(&c);
	ck_assert_msg(tp_topology_load("kinds.json", t, strlen(t), NULL, &c,
				       &err) == TP_OK,
		      "%s", err.msg);
	ck_assert_uint_eq(compare_all(&c), 0);
	{
		/* a repeat routes inside itself as its kind's first node:
		 * node 330 is kind 120, 2 devices */
		uint32_t d = c.nodes.v[330].first_device;
		struct tp_route r;
		ck_assert_uint_eq(c.nodes.v[330].n_devices, 2);
		tp_cluster_route(&c, d, d + 1, &r);
		ck_assert(r.bw_Bps == 1e11 + 1e8 * 120);
	}
	tp_cluster_release(&c);
	free(t);

	/* kinds 0..15 with repeats between them, then kind 16 */
	{
		uint32_t n = 0;
		for (uint32_t k = 0; k < 16; k++) {
			kind[n++] = k;
			if (k >= 2)
				kind[n++] = k - 2;
		}
		kind[n++] = 16;
		t = kinds_topology(kind, n, 2047, false);
		tp_cluster_init(&c);
		tp_error_clear(&err);
		ck_assert_int_eq(tp_topology_load("kinds.json", t, strlen(t),
						  NULL, &c, &err),
				 TP_ELIMIT);
		ck_assert_msg(strstr(err.msg, "node \"n") &&
				  strstr(err.msg, "these 17 kinds of node "
						  "would hold 71303168 "
						  "device pairs"),
			      "%s", err.msg);
		{
			char want[32];
			snprintf(want, sizeof(want), "node \"n%u\"", n - 1);
			ck_assert_msg(strstr(err.msg, want), "%s", err.msg);
		}
		tp_cluster_release(&c);
		free(t);
	}
}
END_TEST

/* The report (tagplan-report/1 text) of strategy str for a chain of 8
 * matmuls on the topology file rel, into out. */
static void report_text(const char *rel, const char *str,
			struct tp_strbuf *out)
{
	const struct tp_test_chain ch = {8, TP_DTYPE_FP16, 1e11, 1e8, 1e7,
					 1e7, 1e7, 256};
	struct tp_cluster c;
	struct tp_model m;
	struct tp_strategy st;
	struct tp_plan p;
	struct tp_report r;
	struct tp_error err;
	struct tp_sim *sim;
	struct tp_sim_scratch *s;

	tp_cluster_init(&c);
	ck_assert_msg(
	    tp_topology_load_file(tp_test_path(rel), NULL, &c, &err) == TP_OK,
	    "%s: %s", rel, err.msg);
	tp_test_chain_model(&m, &ch);
	tp_strategy_default(&st);
	ck_assert_int_eq(tp_strategy_parse(str, &st, &err), TP_OK);
	tp_plan_init(&p);
	ck_assert_msg(tp_strategy_to_plan(&st, &m, &c, &p, &err) == TP_OK,
		      "%s %s: %s", rel, str, err.msg);
	sim = tp_sim_new(&m, &c, NULL, &err);
	ck_assert_msg(sim != NULL, "%s", err.msg);
	s = tp_sim_scratch_new(sim);
	ck_assert_ptr_nonnull(s);
	tp_report_init(&r);
	ck_assert_msg(tp_sim_run(sim, &p, s, &r, NULL, &err) == TP_OK, "%s",
		      err.msg);
	tp_report_write(&r, &c, out);
	ck_assert(!out->failed);
	tp_report_release(&r);
	tp_sim_scratch_free(s);
	tp_sim_free(sim);
	tp_plan_release(&p);
	tp_model_release(&m);
	tp_cluster_release(&c);
}

/* Old topology files give the same results: the files data/topologies
 * held before the writer grouped identical nodes with "count" (one object
 * per node, tests/data/good/old, as written by tagplan topo up to
 * 5e94a53) and today's files of the same clusters simulate to the same
 * report, byte for byte, under data-parallel and pipeline strategies
 * (their routes, identical to the all-pairs table of earlier versions, by
 * test_route_shipped_topologies). */
START_TEST(test_route_old_files_same_reports)
{
	static const char *const files[][2] = {
	    {"data/good/old/tag-testbed.json",
	     "../data/topologies/tag-testbed.json"},
	    {"data/good/old/dgx-a100-4.json",
	     "../data/topologies/dgx-a100-4.json"},
	};
	static const char *const strategies[] = {"mb=2", "pp=2,mb=4",
						 "pp=4,mb=8,sync=ring"};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		for (size_t k = 0; k < sizeof(strategies) / sizeof(*strategies);
		     k++) {
			struct tp_strbuf a, b;
			tp_strbuf_init(&a);
			tp_strbuf_init(&b);
			report_text(files[i][0], strategies[k], &a);
			report_text(files[i][1], strategies[k], &b);
			ck_assert_msg(a.len == b.len &&
					  memcmp(a.buf, b.buf, a.len) == 0,
				      "%s and %s, %s: reports differ",
				      files[i][0], files[i][1],
				      strategies[k]);
			tp_strbuf_release(&a);
			tp_strbuf_release(&b);
		}
}
END_TEST

Suite *suite_route(void)
{
	Suite *s = suite_create("route");
	TCase *tc = tcase_create("route");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_route_shipped_topologies);
	tcase_add_test(tc, test_route_presets);
	tcase_add_test(tc, test_route_cyclic_network);
	tcase_add_test(tc, test_route_tiers);
	tcase_add_test(tc, test_route_rails);
	tcase_add_test(tc, test_route_one_tier_is_star);
	tcase_add_test(tc, test_route_large);
	tcase_add_test(tc, test_route_many_kinds);
	tcase_add_test(tc, test_route_old_files_same_reports);
	suite_add_tcase(s, tc);
	return s;
}
