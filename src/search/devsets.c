/*
 * devsets.c - the action space's device sets (actions.h): all devices,
 * each device type, each node, contiguous parts of the device order,
 * single devices and parts of about equal speed, with their families,
 * built once per cluster by tp_space_init (tp_space_build_sets).
 */
#include "actions.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest number of parts of a contiguous-part family. */
#define MAX_PARTS 64

static uint32_t gcd32(uint32_t a, uint32_t b)
{
	while (b) {
		uint32_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* Largest tp such that the set's devices on every node form whole,
 * aligned blocks of tp. */
static uint32_t set_tp_max(const struct tp_cluster *c, const uint32_t *d,
			   uint32_t n)
{
	uint32_t g = 0, i = 0;

	while (i < n) {
		uint32_t node = c->devices.v[d[i]].node, j = i;
		while (j < n && c->devices.v[d[j]].node == node)
			j++;
		g = gcd32(g, j - i);
		/* alignment of the first local index */
		if (c->devices.v[d[i]].local)
			g = gcd32(g, c->devices.v[d[i]].local);
		i = j;
	}
	return g ? g : 1;
}

static uint64_t set_hash(const uint32_t *d, uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ n;

	for (uint32_t i = 0; i < n; i++)
		h = (h ^ d[i]) * 0x100000001b3ull;
	return h ^ (h >> 29);
}

/* The slot of set list (d, n) in s->set_tab: its set, or the empty slot
 * where it goes. */
static uint32_t *set_slot(struct tp_space *s, const uint32_t *d, uint32_t n)
{
	uint32_t mask = s->set_cap - 1, *x;

	for (uint32_t k = (uint32_t)set_hash(d, n) & mask;; k = (k + 1) & mask) {
		const struct tp_devset *o;
		x = &s->set_tab[k];
		if (*x == TP_NONE)
			return x;
		o = &s->sets.v[*x];
		if (o->n == n &&
		    memcmp(s->devs.v + o->first, d, n * sizeof(*d)) == 0)
			return x;
	}
}

/* Keep s->set_tab at most half full; -1 on allocation failure. */
static int set_tab_grow(struct tp_space *s)
{
	uint32_t cap = s->set_cap ? s->set_cap : 1024, *old = s->set_tab;

	if (s->set_tab && 2 * (s->sets.n + 1) <= s->set_cap)
		return 0;
	while (2 * (s->sets.n + 1) > cap)
		cap *= 2;
	s->set_tab = malloc(cap * sizeof(*s->set_tab));
	if (!s->set_tab) {
		s->set_tab = old;
		return -1;
	}
	s->set_cap = cap;
	for (uint32_t k = 0; k < cap; k++)
		s->set_tab[k] = TP_NONE;
	for (uint32_t i = 0; i < s->sets.n; i++)
		*set_slot(s, s->devs.v + s->sets.v[i].first, s->sets.v[i].n) =
			i;
	free(old);
	return 0;
}

/* Add a set (or find an identical one: a hash of the device lists, so
 * the 100,000 single devices of a large cluster cost O(n), not O(n^2));
 * returns its index or TP_NONE on allocation failure. */
static uint32_t add_set(struct tp_space *s, const uint32_t *d, uint32_t n,
			enum tp_devset_kind kind, const char *label)
{
	const struct tp_cluster *c = s->cluster;
	struct tp_devset set;
	uint32_t prev_node = TP_NONE, *slot;

	if (set_tab_grow(s))
		return TP_NONE;
	slot = set_slot(s, d, n);
	if (*slot != TP_NONE)
		return *slot;
	memset(&set, 0, sizeof(set));
	set.first = (uint32_t)s->devs.n;
	set.n = n;
	set.kind = kind;
	set.type = c->devices.v[d[0]].type;
	set.lo = set.hi = d[0];
	set.ascending = true;
	snprintf(set.label, sizeof(set.label), "%s", label);
	set.nodes_first = (uint32_t)s->set_nodes.n;
	for (uint32_t i = 0; i < n; i++) {
		const struct tp_device *dev = &c->devices.v[d[i]];
		const struct tp_device_type *ty = &c->types.v[dev->type];
		if (dev->node != prev_node) {
			set.n_nodes++;
			prev_node = dev->node;
			if (tp_vec_push(&s->set_nodes, prev_node))
				return TP_NONE;
		}
		if (dev->type != set.type)
			set.type = TP_NONE;
		if (d[i] < set.lo)
			set.lo = d[i];
		if (d[i] > set.hi)
			set.hi = d[i];
		if (i && d[i] <= d[i - 1])
			set.ascending = false;
		set.speed += s->dev_speed[d[i]];
		set.memory += ty->memory_bytes - ty->reserved_bytes;
	}
	/* a list of distinct devices: n of them from lo to hi are all */
	set.dense = set.hi - set.lo == n - 1;
	set.tp_max = set_tp_max(c, d, n);
	for (uint32_t tp = 1; tp <= TP_SPACE_MAX_TP; tp++)
		if (set.tp_max % tp == 0 && n % tp == 0)
			set.tp_divides |= (uint64_t)1 << (tp - 1);
	if (tp_vec_reserve(&s->devs, n) || tp_vec_push(&s->sets, set))
		return TP_NONE;
	memcpy(s->devs.v + s->devs.n, d, n * sizeof(*d));
	s->devs.n += n;
	*slot = (uint32_t)s->sets.n - 1;
	if (n > s->max_group_devices)
		s->max_group_devices = n;
	return (uint32_t)s->sets.n - 1;
}

bool tp_space_sets_meet(const struct tp_space *s, uint32_t a, uint32_t b)
{
	const struct tp_devset *sa = &s->sets.v[a], *sb = &s->sets.v[b];
	const uint32_t *da = tp_space_set_devs(s, a), *db = tp_space_set_devs(s, b);

	if (a == b)
		return sa->n > 0;
	if (sa->hi < sb->lo || sb->hi < sa->lo)
		return false;
	if (sa->dense && sb->dense)
		return true;
	return tp_devs_meet(da, sa->n, sa->ascending, db, sb->n,
			    sb->ascending);
}

static int add_family(struct tp_space *s, const uint32_t *members, uint32_t n,
		      enum tp_devset_kind kind)
{
	struct tp_family f = {(uint32_t)s->family_sets.n, n, kind};

	if (n < 2)
		return 0;
	if (tp_vec_reserve(&s->family_sets, n))
		return -1;
	memcpy(s->family_sets.v + s->family_sets.n, members,
	       n * sizeof(*members));
	s->family_sets.n += n;
	return tp_vec_push(&s->families, f);
}

/* Working memory of tp_space_build_sets: a device list d and a member
 * list mem, each of n + 1 entries, for the set being added and the
 * family being collected. */
struct set_build {
	struct tp_space *s;
	uint32_t n; /* devices of the cluster */
	uint32_t *d, *mem;
};

/* The sets of each device type, ordered by their first device, and
 * their family; -1 on allocation failure. */
static int add_type_sets(struct set_build *b)
{
	struct tp_space *s = b->s;
	const struct tp_cluster *c = s->cluster;
	uint32_t n = b->n, *d = b->d, *mem = b->mem, nm = 0;
	uint8_t *done = calloc(s->n_types, 1);

	if (!done)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t t = c->devices.v[i].type, k = 0, idx;
		if (done[t])
			continue;
		done[t] = 1;
		for (uint32_t j = 0; j < n; j++)
			if (c->devices.v[j].type == t)
				d[k++] = j;
		idx = add_set(s, d, k, TP_DEVSET_TYPE, c->types.v[t].name);
		if (idx == TP_NONE) {
			free(done);
			return -1;
		}
		mem[nm++] = idx;
	}
	free(done);
	return add_family(s, mem, nm, TP_DEVSET_TYPE);
}

/* The set of each node (with devices) and their family. */
static int add_node_sets(struct set_build *b)
{
	struct tp_space *s = b->s;
	const struct tp_cluster *c = s->cluster;
	uint32_t *d = b->d, *mem = b->mem, nm = 0;

	for (uint32_t k = 0; k < c->nodes.n; k++) {
		const struct tp_node *nd = &c->nodes.v[k];
		uint32_t idx;
		if (!nd->n_devices)
			continue;
		for (uint32_t j = 0; j < nd->n_devices; j++)
			d[j] = nd->first_device + j;
		idx = add_set(s, d, nd->n_devices, TP_DEVSET_NODE, nd->name);
		if (idx == TP_NONE)
			return -1;
		mem[nm++] = idx;
	}
	return add_family(s, mem, nm, TP_DEVSET_NODE);
}

/* Contiguous parts of the device order, a family for every divisor p of
 * the device count (p <= MAX_PARTS) with parts of two devices or more. */
static int add_part_sets(struct set_build *b)
{
	struct tp_space *s = b->s;
	const struct tp_cluster *c = s->cluster;
	uint32_t n = b->n, *d = b->d, *mem = b->mem;
	char label[32];

	for (uint32_t p = 2; p <= n && p <= MAX_PARTS; p++) {
		uint32_t size = n / p, nm = 0;
		enum tp_devset_kind kind =
			size == 1 ? TP_DEVSET_SINGLE : TP_DEVSET_PART;
		if (n % p || size == 1)
			continue; /* single devices come below */
		for (uint32_t k = 0; k < p; k++) {
			uint32_t idx;
			for (uint32_t j = 0; j < size; j++)
				d[j] = k * size + j;
			if (size == 1)
				snprintf(label, sizeof(label), "%s",
					 c->devices.v[k].name);
			else
				snprintf(label, sizeof(label), "%u/%u", k + 1,
					 p);
			idx = add_set(s, d, size, kind, label);
			if (idx == TP_NONE)
				return -1;
			mem[nm++] = idx;
		}
		if (add_family(s, mem, nm, kind))
			return -1;
	}
	return 0;
}

/* Every device alone, and their family (offered as candidates only on
 * small clusters; the greedy baseline places groups on them). */
static int add_single_sets(struct set_build *b)
{
	struct tp_space *s = b->s;
	const struct tp_cluster *c = s->cluster;
	uint32_t n = b->n, *d = b->d, *mem = b->mem;

	for (uint32_t k = 0; k < n; k++) {
		d[0] = k;
		mem[k] = add_set(s, d, 1, TP_DEVSET_SINGLE,
				 c->devices.v[k].name);
		if (mem[k] == TP_NONE)
			return -1;
	}
	return add_family(s, mem, n, TP_DEVSET_SINGLE);
}

/* Bounds b[0..p] of p contiguous parts of about equal total speed, from
 * the cumulative speeds cum[0..n]. */
static void speed_bounds(const double *cum, uint32_t n, uint32_t p,
			 uint32_t *b)
{
	double total = cum[n];

	b[0] = 0;
	b[p] = n;
	for (uint32_t k = 1; k < p; k++) {
		double want = total * k / p;
		uint32_t best = b[k - 1] + 1;
		for (uint32_t i = b[k - 1] + 1; i + (p - k) <= n; i++)
			if (fabs(cum[i] - want) < fabs(cum[best] - want))
				best = i;
		b[k] = best;
	}
}

/* Contiguous parts of about equal speed, p = 2, 3, 4 (heterogeneous
 * clusters), a family each. */
static int add_speed_sets(struct set_build *b)
{
	struct tp_space *s = b->s;
	uint32_t n = b->n, *d = b->d, *mem = b->mem;
	double *cum = malloc((n + 1) * sizeof(double));
	char label[32];
	int rc = 0;

	if (!cum)
		return -1;
	cum[0] = 0;
	for (uint32_t i = 0; i < n; i++)
		cum[i + 1] = cum[i] + s->dev_speed[i];
	for (uint32_t p = 2; p <= 4 && p <= n && !rc; p++) {
		uint32_t bd[5], nm = 0;
		speed_bounds(cum, n, p, bd);
		for (uint32_t k = 0; k < p && !rc; k++) {
			uint32_t idx, sz = bd[k + 1] - bd[k];
			for (uint32_t j = 0; j < sz; j++)
				d[j] = bd[k] + j;
			snprintf(label, sizeof(label), "speed %u/%u", k + 1,
				 p);
			idx = add_set(s, d, sz, TP_DEVSET_SPEED_PART, label);
			if (idx == TP_NONE)
				rc = -1;
			else
				mem[nm++] = idx;
		}
		if (!rc && add_family(s, mem, nm, TP_DEVSET_SPEED_PART))
			rc = -1;
	}
	free(cum);
	return rc;
}

/* Whether the space has a family of exactly these members already. */
static bool family_exists(const struct tp_space *s, const uint32_t *mem,
			  uint32_t n)
{
	for (size_t f = 0; f < s->families.n; f++) {
		const struct tp_family *fm = &s->families.v[f];
		if (fm->n == n && !memcmp(s->family_sets.v + fm->first, mem,
					  n * sizeof(*mem)))
			return true;
	}
	return false;
}

/* The sets of the n_sw switches of tier t, each joining span nodes with
 * a NIC (consecutive, in node order), into b->mem: the number of sets
 * made (fewer than n_sw when a switch has no devices under it), -1 on
 * allocation failure. */
static int pod_sets(struct set_build *b, size_t t, uint64_t span,
		    uint32_t n_sw)
{
	struct tp_space *s = b->s;
	const struct tp_cluster *c = s->cluster;
	uint32_t n = 0, ord = 0, sw = 0;
	int made = 0;
	char label[32];

	for (uint32_t k = 0; k <= c->nodes.n; k++) {
		const struct tp_node *nd = k < c->nodes.n ? &c->nodes.v[k]
							  : NULL;
		if (nd && nd->nic_vertex == TP_NONE)
			continue;
		if (n && (!nd || ord / span != sw)) {
			snprintf(label, sizeof(label), "%s %u/%u",
				 c->tiers.v[t].name, sw + 1, n_sw);
			b->mem[made] = add_set(s, b->d, n, TP_DEVSET_TIER,
					       label);
			if (b->mem[made++] == TP_NONE)
				return -1;
			n = 0;
		}
		if (!nd)
			break;
		sw = (uint32_t)(ord++ / span);
		for (uint32_t j = 0; j < nd->n_devices; j++)
			b->d[n++] = nd->first_device + j;
	}
	return made;
}

/* The pods of a tiered network (core/cluster.h, struct tp_tier): for
 * every tier below the one switch on top, the devices under each of its
 * switches (leaves, spines, zones), a family per tier of 2 to MAX_PARTS
 * switches unless those sets are a family already (the contiguous parts
 * of an evenly built cluster often are).  Added after every other
 * family: the sets and candidates of a cluster without such pods stay
 * as they were.  -1 on allocation failure. */
static int add_tier_sets(struct set_build *b)
{
	const struct tp_cluster *c = b->s->cluster;
	uint64_t span = 1;
	uint32_t n_nic = 0;

	for (uint32_t k = 0; k < c->nodes.n; k++)
		n_nic += c->nodes.v[k].nic_vertex != TP_NONE;
	for (size_t t = 0; t < c->tiers.n && c->tiers.v[t].group &&
			   span < n_nic;
	     t++) {
		uint64_t n_sw;
		int made;
		span *= c->tiers.v[t].group;
		n_sw = (n_nic + span - 1) / span;
		if (n_sw < 2 || n_sw > MAX_PARTS)
			continue;
		made = pod_sets(b, t, span, (uint32_t)n_sw);
		if (made < 0)
			return -1;
		if ((uint32_t)made == n_sw &&
		    !family_exists(b->s, b->mem, (uint32_t)n_sw) &&
		    add_family(b->s, b->mem, (uint32_t)n_sw, TP_DEVSET_TIER))
			return -1;
	}
	return 0;
}

/* The sets in their order: all, the types (when several), the nodes
 * (2 to MAX_PARTS of them), the contiguous parts, the single devices,
 * the parts of equal speed (when several types), the pods of a tiered
 * network. */
static int add_all_sets(struct set_build *b)
{
	struct tp_space *s = b->s;
	const struct tp_cluster *c = s->cluster;
	uint32_t n_types_present = 0;

	for (uint32_t i = 0; i < b->n; i++)
		b->d[i] = i;
	if (add_set(s, b->d, b->n, TP_DEVSET_ALL, "all") == TP_NONE)
		return -1;
	for (uint32_t t = 0; t < s->n_types; t++)
		if (c->type_count[t])
			n_types_present++;
	if (n_types_present > 1 && add_type_sets(b))
		return -1;
	if (c->nodes.n > 1 && c->nodes.n <= MAX_PARTS && add_node_sets(b))
		return -1;
	if (add_part_sets(b))
		return -1;
	if (b->n > 1 && add_single_sets(b))
		return -1;
	if (n_types_present > 1 && add_speed_sets(b))
		return -1;
	return add_tier_sets(b);
}

enum tp_status tp_space_build_sets(struct tp_space *s, struct tp_error *err)
{
	struct set_build b;
	int rc = -1;

	b.s = s;
	b.n = (uint32_t)s->cluster->devices.n;
	b.d = malloc(b.n * sizeof(*b.d));
	b.mem = malloc((b.n + 1) * sizeof(*b.mem));
	if (b.d && b.mem)
		rc = add_all_sets(&b);
	free(b.d);
	free(b.mem);
	free(s->set_tab);
	s->set_tab = NULL;
	s->set_cap = 0;
	if (rc)
		return tp_error_set(err, TP_ENOMEM,
				    "out of memory building device sets");
	return TP_OK;
}
