/*
 * scene.c - plan + cluster + report -> drawn items, classes, stages, edges
 * (see scene.h).  Collapsing: a device's role is (type, stages it serves);
 * a node's signature is its fabric/NIC set-up and the roles of its devices
 * in local order.  Nodes with equal signatures form one class; within a
 * class, devices with equal roles form one item.
 */
#include "scene.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/strbuf.h"
#include "core/strmap.h"

void tp_render_fmt_si(char *buf, size_t size, double v, const char *unit)
{
	static const char *const pre[] = {"n", "u", "m", "",  "k",
					  "M", "G", "T", "P", "E"};
	char num[32];
	int i = 3;
	double a = fabs(v);
	char *dot;

	/* three significant digits, trailing zeros dropped: 80 GB, 61.2 GB,
	 * 3.13 GB/s, 79.2 ms; seconds never scale up (3480 s, not 3.48 ks)
	 * and other units never down (0.441 samples/s, not 441 msamples/s) */
	bool time = strcmp(unit, "s") == 0;

	while (!time && a >= 999.5 && i < 9) {
		a /= 1000;
		v /= 1000;
		i++;
	}
	while (time && a > 0 && a < 0.9995 && i > 0) {
		a *= 1000;
		v *= 1000;
		i--;
	}
	if (a > 0 && a < 0.9995 && !time)
		snprintf(num, sizeof(num), "%.3g", v);
	else if (a == 0 || a >= 99.95)
		snprintf(num, sizeof(num), "%.0f", v);
	else if (a >= 9.995)
		snprintf(num, sizeof(num), "%.1f", v);
	else
		snprintf(num, sizeof(num), "%.2f", v);
	dot = strchr(num, '.');
	if (dot) {
		char *e = num + strlen(num) - 1;
		while (e > dot && *e == '0')
			*e-- = '\0';
		if (e == dot)
			*e = '\0';
	}
	snprintf(buf, size, "%s %s%s", num, pre[i], unit);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static enum tp_status nomem(struct tp_error *err)
{
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

void tp_scene_release(struct tp_scene *s)
{
	if (!s)
		return;
	free(s->fig);
	tp_vec_free(&s->stages);
	tp_vec_free(&s->stage_devs);
	tp_vec_free(&s->stage_grps);
	free(s->group_stage);
	free(s->dev_stage_first);
	free(s->dev_stage_n);
	tp_vec_free(&s->dev_stages);
	tp_vec_free(&s->items);
	tp_vec_free(&s->classes);
	tp_vec_free(&s->cls_nodes);
	free(s->vertex_item);
	tp_vec_free(&s->edges);
	free(s->link_bytes);
	free(s->link_busy);
	memset(s, 0, sizeof(*s));
}

static enum tp_status check_plan(const struct tp_plan *p,
				 const struct tp_model *m,
				 const struct tp_cluster *c,
				 struct tp_error *err)
{
	for (size_t g = 0; g < p->groups.n; g++) {
		const struct tp_plan_group *gr = &p->groups.v[g];
		const uint32_t *d = tp_plan_group_devs(p, (uint32_t)g);
		const uint32_t *o = tp_plan_group_ops(p, (uint32_t)g);
		char path[64];

		if (gr->n_devices == 0) {
			snprintf(path, sizeof(path), "$.groups[%zu].devices", g);
			return tp_error_set_path(err, TP_EINPUT, path,
						 "a group without devices");
		}
		for (uint32_t i = 0; i < gr->n_devices; i++)
			if (d[i] >= c->devices.n) {
				snprintf(path, sizeof(path),
					 "$.groups[%zu].devices[%u]", g, i);
				return tp_error_set_path(
					err, TP_EINPUT, path,
					"device %u is not in the topology (%zu "
					"devices); render the plan with the "
					"topology it was made for",
					d[i], c->devices.n);
			}
		for (uint32_t i = 0; i < gr->n_ops; i++)
			if (o[i] >= m->ops.n) {
				snprintf(path, sizeof(path),
					 "$.groups[%zu].ops[%u]", g, i);
				return tp_error_set_path(
					err, TP_EINPUT, path,
					"op %u is not in the model (%zu ops)",
					o[i], m->ops.n);
			}
	}
	if (p->summary.valid && p->summary.n_devices &&
	    p->summary.n_devices != c->devices.n)
		return tp_error_set_path(
			err, TP_EINPUT, "$.summary.devices",
			"the summary lists %u devices, the topology has %zu",
			p->summary.n_devices, c->devices.n);
	return TP_OK;
}

static void fill_figures(struct tp_scene *s)
{
	const struct tp_cluster *c = s->cluster;
	const struct tp_report *r = s->report;
	const struct tp_plan_summary *sm = &s->plan->summary;
	size_t nd = c->devices.n;

	if (r) {
		s->iter_s = r->iteration_time_s;
		s->feasible_known = true;
		s->feasible = r->feasible;
	} else if (sm->valid) {
		s->iter_s = sm->iteration_time_s;
		s->feasible_known = true;
		s->feasible = sm->feasible;
	}
	for (size_t d = 0; d < nd; d++) {
		struct tp_dev_fig *f = &s->fig[d];

		f->cap = c->types.v[c->devices.v[d].type].memory_bytes;
		if (r && r->devices && d < r->n_devices) {
			const struct tp_report_device *rd = &r->devices[d];
			f->mem = rd->peak_memory_bytes;
			f->has_mem = true;
			if (rd->capacity_bytes > 0)
				f->cap = rd->capacity_bytes;
			if (r->iteration_time_s > 0) {
				f->busy = rd->compute_s / r->iteration_time_s;
				f->has_busy = true;
			}
		} else if (sm->valid && d < sm->n_devices) {
			if (sm->peak_memory_bytes) {
				f->mem = sm->peak_memory_bytes[d];
				f->has_mem = true;
			}
			if (sm->busy_fraction) {
				f->busy = sm->busy_fraction[d];
				f->has_busy = true;
			}
		}
		f->oom = f->has_mem && f->cap > 0 && f->mem > f->cap;
	}
}

static enum tp_status build_stages(struct tp_scene *s, struct tp_error *err)
{
	const struct tp_plan *p = s->plan;
	const struct tp_model *m = s->model;
	size_t nd = s->cluster->devices.n, ng = p->groups.n;
	uint32_t *tmp = NULL;
	size_t maxn = 0;

	s->group_stage = tp_calloc(ng ? ng : 1, sizeof(uint32_t));
	for (size_t g = 0; g < ng; g++)
		if (p->groups.v[g].n_devices > maxn)
			maxn = p->groups.v[g].n_devices;
	tmp = tp_calloc(maxn ? maxn : 1, sizeof(uint32_t));
	if (!s->group_stage || !tmp)
		goto oom;
	for (size_t g = 0; g < ng; g++) {
		const struct tp_plan_group *gr = &p->groups.v[g];
		uint32_t st = TP_NONE;

		memcpy(tmp, tp_plan_group_devs(p, (uint32_t)g),
		       gr->n_devices * sizeof(uint32_t));
		qsort(tmp, gr->n_devices, sizeof(uint32_t), cmp_u32);
		for (size_t k = 0; k < s->stages.n; k++) {
			const struct tp_stage *sk = &s->stages.v[k];
			if (sk->n_devs == gr->n_devices &&
			    memcmp(s->stage_devs.v + sk->dev_first, tmp,
				   gr->n_devices * sizeof(uint32_t)) == 0) {
				st = (uint32_t)k;
				break;
			}
		}
		if (st == TP_NONE) {
			struct tp_stage ns;

			memset(&ns, 0, sizeof(ns));
			ns.dev_first = (uint32_t)s->stage_devs.n;
			ns.n_devs = gr->n_devices;
			ns.dp = gr->dp;
			ns.tp = gr->tp;
			ns.op_lo = UINT32_MAX;
			ns.layer_lo = ns.layer_hi = -1;
			if (tp_vec_reserve(&s->stage_devs, gr->n_devices) ||
			    tp_vec_push(&s->stages, ns))
				goto oom;
			memcpy(s->stage_devs.v + s->stage_devs.n, tmp,
			       gr->n_devices * sizeof(uint32_t));
			s->stage_devs.n += gr->n_devices;
			st = (uint32_t)s->stages.n - 1;
		}
		s->group_stage[g] = st;
		{
			struct tp_stage *sk = &s->stages.v[st];
			const uint32_t *ops = tp_plan_group_ops(p, (uint32_t)g);

			if (sk->dp != gr->dp || sk->tp != gr->tp || gr->mixed)
				sk->mixed_degrees = true;
			if (gr->mixed && !sk->replicas[0])
				tp_plan_degrees_label(p, (uint32_t)g,
						      sk->replicas,
						      sizeof(sk->replicas));
			for (uint32_t i = 0; i < gr->n_ops; i++) {
				const struct tp_op *op = &m->ops.v[ops[i]];
				uint32_t pos = m->topo_pos ? m->topo_pos[ops[i]]
							   : ops[i];
				if (pos < sk->op_lo)
					sk->op_lo = pos;
				if (pos > sk->op_hi)
					sk->op_hi = pos;
				if (op->layer >= 0) {
					if (sk->layer_lo < 0 ||
					    op->layer < sk->layer_lo)
						sk->layer_lo = op->layer;
					if (op->layer > sk->layer_hi)
						sk->layer_hi = op->layer;
				}
				sk->flop += op->flop;
			}
		}
	}
	/* groups per stage, in plan order */
	for (size_t k = 0; k < s->stages.n; k++) {
		s->stages.v[k].grp_first = (uint32_t)s->stage_grps.n;
		for (size_t g = 0; g < ng; g++)
			if (s->group_stage[g] == k) {
				if (tp_vec_push(&s->stage_grps, (uint32_t)g))
					goto oom;
				s->stages.v[k].n_grps++;
			}
	}
	/* stages per device (CSR) */
	s->dev_stage_first = tp_calloc(nd, sizeof(uint32_t));
	s->dev_stage_n = tp_calloc(nd, sizeof(uint32_t));
	if (!s->dev_stage_first || !s->dev_stage_n)
		goto oom;
	for (size_t k = 0; k < s->stages.n; k++)
		for (uint32_t i = 0; i < s->stages.v[k].n_devs; i++)
			s->dev_stage_n[s->stage_devs
					       .v[s->stages.v[k].dev_first + i]]++;
	{
		uint32_t acc = 0;
		for (size_t d = 0; d < nd; d++) {
			s->dev_stage_first[d] = acc;
			acc += s->dev_stage_n[d];
			s->dev_stage_n[d] = 0;
		}
		if (tp_vec_reserve(&s->dev_stages, acc))
			goto oom;
		s->dev_stages.n = acc;
	}
	for (size_t k = 0; k < s->stages.n; k++)
		for (uint32_t i = 0; i < s->stages.v[k].n_devs; i++) {
			uint32_t d = s->stage_devs.v[s->stages.v[k].dev_first + i];
			s->dev_stages.v[s->dev_stage_first[d] +
					s->dev_stage_n[d]++] = (uint32_t)k;
		}
	free(tmp);
	return TP_OK;
oom:
	free(tmp);
	return nomem(err);
}

/* The role signature of device d: its type and, unless roles are merged,
 * the stages it serves. */
static void role_key(const struct tp_scene *s, uint32_t d, bool merged,
		     struct tp_strbuf *sb)
{
	tp_strbuf_addf(sb, "t%u", s->cluster->devices.v[d].type);
	if (merged)
		return;
	for (uint32_t i = 0; i < s->dev_stage_n[d]; i++)
		tp_strbuf_addf(sb, ",%u",
			       s->dev_stages.v[s->dev_stage_first[d] + i]);
	/* an out-of-memory device never hides among fitting ones */
	if (s->fig[d].oom)
		tp_strbuf_adds(sb, "!");
}

static void node_key(const struct tp_scene *s, uint32_t n, bool merged,
		     struct tp_strbuf *sb)
{
	const struct tp_node *nd = &s->cluster->nodes.v[n];

	tp_strbuf_addf(sb, "n%u|f%d:%.6g:%d|nic%u:%.6g|", nd->n_devices,
		       (int)nd->fabric_kind, nd->fabric_bw_Bps,
		       nd->fabric_vertex != TP_NONE, nd->n_nics, nd->nic_bw_Bps);
	for (uint32_t i = 0; i < nd->n_devices; i++) {
		role_key(s, nd->first_device + i, merged, sb);
		tp_strbuf_addc(sb, ';');
	}
}

/* Assign nodes to classes.  Returns the number of classes, or -1 on
 * allocation failure.  cls_of has one entry per node. */
static long classify(struct tp_scene *s, bool collapse, bool merged,
		     uint32_t *cls_of)
{
	const struct tp_cluster *c = s->cluster;
	struct tp_arena arena;
	struct tp_strmap map;
	struct tp_strbuf sb;
	long n = 0;

	if (!collapse) {
		for (size_t i = 0; i < c->nodes.n; i++)
			cls_of[i] = (uint32_t)i;
		return (long)c->nodes.n;
	}
	tp_arena_init(&arena, 0);
	tp_strmap_init(&map);
	tp_strbuf_init(&sb);
	for (size_t i = 0; i < c->nodes.n; i++) {
		char *key;
		uint32_t old;
		int rc;

		tp_strbuf_reset(&sb);
		node_key(s, (uint32_t)i, merged, &sb);
		key = sb.failed ? NULL
				: tp_arena_strdup(&arena, tp_strbuf_cstr(&sb));
		if (!key) {
			n = -1;
			break;
		}
		rc = tp_strmap_put(&map, key, (uint32_t)n, &old);
		if (rc < 0) {
			n = -1;
			break;
		}
		cls_of[i] = rc == 1 ? old : (uint32_t)n++;
	}
	tp_strbuf_release(&sb);
	tp_strmap_release(&map);
	tp_arena_release(&arena);
	return n;
}

static void item_add_device(struct tp_scene *s, struct tp_item *it,
			    uint32_t d)
{
	const struct tp_dev_fig *f = &s->fig[d];
	uint32_t local = s->cluster->devices.v[d].local;

	if (it->count == 0) {
		it->mem_lo = it->mem_hi = f->mem;
		it->busy_lo = it->busy_hi = f->busy;
		it->cap = f->cap;
		it->local_lo = it->local_hi = local;
	} else {
		it->mem_lo = fmin(it->mem_lo, f->mem);
		it->mem_hi = fmax(it->mem_hi, f->mem);
		it->busy_lo = fmin(it->busy_lo, f->busy);
		it->busy_hi = fmax(it->busy_hi, f->busy);
		it->cap = fmin(it->cap, f->cap);
		if (local < it->local_lo)
			it->local_lo = local;
		if (local > it->local_hi)
			it->local_hi = local;
	}
	it->has_mem = f->has_mem;
	it->has_busy = f->has_busy;
	it->oom = it->oom || f->oom;
	it->count++;
}

static uint32_t new_item(struct tp_scene *s, enum tp_item_kind k, uint32_t cls,
			 uint32_t vertex)
{
	struct tp_item it;

	memset(&it, 0, sizeof(it));
	it.kind = k;
	it.cls = cls;
	it.vertex = vertex;
	it.device = TP_NONE;
	it.type = TP_NONE;
	it.stage_mark = TP_NONE;
	it.tier = TP_NONE;
	if (tp_vec_push(&s->items, it))
		return TP_NONE;
	return (uint32_t)s->items.n - 1;
}

/*
 * A collapsed picture of a tiered network draws each tier as one box
 * standing for its switches (count), so 100,000 GPUs in a Clos fabric are
 * a few boxes, not hundreds of switches.  A switch's tier is its distance
 * from the nodes: tier 0 joins a NIC, tier t + 1 a switch of tier t (the
 * tree tp_cluster_connect_tiers builds).  -1 when out of memory.
 */
static int collapse_tiers(struct tp_scene *s)
{
	const struct tp_cluster *c = s->cluster;
	size_t nv = c->vertex_kind.n;
	uint32_t *level = tp_calloc(nv ? nv : 1, sizeof(uint32_t));
	uint32_t n_tiers = (uint32_t)c->tiers.n, *tier_item;
	bool changed = true;

	tier_item = tp_calloc(n_tiers, sizeof(uint32_t));
	if (!level || !tier_item) {
		free(level);
		free(tier_item);
		return -1;
	}
	for (size_t v = 0; v < nv; v++)
		level[v] = TP_NONE;
	for (uint32_t t = 0; t < n_tiers; t++)
		tier_item[t] = TP_NONE;
	for (uint32_t t = 0; changed && t < n_tiers; t++) {
		changed = false;
		for (size_t l = 0; l < c->links.n; l++) {
			const struct tp_link *lk = &c->links.v[l];
			uint32_t e[2] = {lk->a, lk->b};
			for (int q = 0; q < 2; q++) {
				uint32_t sw = e[q], other = e[1 - q];
				bool below;
				if (c->vertex_kind.v[sw] != TP_VERTEX_SWITCH ||
				    level[sw] != TP_NONE)
					continue;
				below = t == 0 ? c->vertex_kind.v[other] !=
						     TP_VERTEX_SWITCH
					       : level[other] == t - 1;
				if (below) {
					level[sw] = t;
					changed = true;
				}
			}
		}
	}
	for (size_t v = 0; v < nv; v++) {
		uint32_t t = level[v];
		if (t == TP_NONE || s->vertex_item[v] != TP_NONE)
			continue;
		if (tier_item[t] == TP_NONE) {
			tier_item[t] = new_item(s, TP_ITEM_SWITCH, TP_NONE,
						(uint32_t)v);
			if (tier_item[t] == TP_NONE) {
				free(level);
				free(tier_item);
				return -1;
			}
			s->items.v[tier_item[t]].tier = t;
		}
		s->items.v[tier_item[t]].count++;
		s->vertex_item[v] = tier_item[t];
	}
	free(level);
	free(tier_item);
	return 0;
}

static enum tp_status build_items(struct tp_scene *s, const uint32_t *cls_of,
				  uint32_t n_cls, struct tp_error *err)
{
	const struct tp_cluster *c = s->cluster;
	size_t nv = c->vertex_kind.n;
	/* per class: first device item per role key; found by linear scan
	 * over the class's items (few per class). */
	uint32_t *cls_first_item = tp_calloc(n_cls ? n_cls : 1,
					     sizeof(uint32_t));
	uint32_t *cls_fabric = tp_calloc(n_cls ? n_cls : 1, sizeof(uint32_t));
	uint32_t *cls_nic = tp_calloc(n_cls ? n_cls : 1, sizeof(uint32_t));
	struct tp_strbuf ka, kb;
	enum tp_status st = TP_OK;

	tp_strbuf_init(&ka);
	tp_strbuf_init(&kb);
	s->vertex_item = tp_calloc(nv ? nv : 1, sizeof(uint32_t));
	if (!cls_first_item || !cls_fabric || !cls_nic || !s->vertex_item)
		goto oom;
	for (size_t v = 0; v < nv; v++)
		s->vertex_item[v] = TP_NONE;
	for (uint32_t k = 0; k < n_cls; k++) {
		struct tp_cls cl = {0, 0};
		cls_first_item[k] = cls_fabric[k] = cls_nic[k] = TP_NONE;
		if (tp_vec_push(&s->classes, cl))
			goto oom;
	}
	/* class member lists, in node order */
	for (uint32_t k = 0; k < n_cls; k++) {
		s->classes.v[k].node_first = (uint32_t)s->cls_nodes.n;
		for (size_t i = 0; i < c->nodes.n; i++)
			if (cls_of[i] == k) {
				if (tp_vec_push(&s->cls_nodes, (uint32_t)i))
					goto oom;
				s->classes.v[k].n_nodes++;
			}
	}
	for (size_t i = 0; i < c->nodes.n; i++) {
		const struct tp_node *nd = &c->nodes.v[i];
		uint32_t k = cls_of[i];

		for (uint32_t j = 0; j < nd->n_devices; j++) {
			uint32_t d = nd->first_device + j, it = TP_NONE;

			if (s->collapsed) {
				tp_strbuf_reset(&ka);
				role_key(s, d, s->roles_merged, &ka);
				for (uint32_t q = cls_first_item[k];
				     q != TP_NONE && q < s->items.n; q++) {
					const struct tp_item *x = &s->items.v[q];
					if (x->cls != k)
						continue;
					if (x->kind != TP_ITEM_DEVICE)
						continue;
					tp_strbuf_reset(&kb);
					role_key(s, x->device, s->roles_merged,
						 &kb);
					if (strcmp(tp_strbuf_cstr(&ka),
						   tp_strbuf_cstr(&kb)) == 0) {
						it = q;
						break;
					}
				}
			}
			if (it == TP_NONE) {
				it = new_item(s, TP_ITEM_DEVICE, k,
					      c->devices.v[d].vertex);
				if (it == TP_NONE)
					goto oom;
				s->items.v[it].device = d;
				s->items.v[it].type = c->devices.v[d].type;
				if (cls_first_item[k] == TP_NONE)
					cls_first_item[k] = it;
			}
			item_add_device(s, &s->items.v[it], d);
			s->vertex_item[c->devices.v[d].vertex] = it;
		}
		if (nd->fabric_vertex != TP_NONE) {
			if (cls_fabric[k] == TP_NONE) {
				cls_fabric[k] = new_item(s, TP_ITEM_FABRIC, k,
							 nd->fabric_vertex);
				if (cls_fabric[k] == TP_NONE)
					goto oom;
			}
			s->items.v[cls_fabric[k]].count++;
			s->vertex_item[nd->fabric_vertex] = cls_fabric[k];
		}
		if (nd->nic_vertex != TP_NONE) {
			if (cls_nic[k] == TP_NONE) {
				cls_nic[k] = new_item(s, TP_ITEM_NIC, k,
						      nd->nic_vertex);
				if (cls_nic[k] == TP_NONE)
					goto oom;
			}
			s->items.v[cls_nic[k]].count++;
			for (uint32_t r = 0; r < tp_node_nic_vertices(nd); r++)
				s->vertex_item[nd->nic_vertex + r] = cls_nic[k];
		}
	}
	if (s->collapsed && c->tiers.n > 0 && collapse_tiers(s) != 0)
		goto oom;
	for (size_t v = 0; v < nv; v++) {
		uint32_t it;

		if (s->vertex_item[v] != TP_NONE)
			continue;
		it = new_item(s,
			      c->vertex_kind.v[v] == TP_VERTEX_SWITCH
				      ? TP_ITEM_SWITCH
				      : TP_ITEM_OTHER,
			      TP_NONE, (uint32_t)v);
		if (it == TP_NONE)
			goto oom;
		s->items.v[it].count = 1;
		s->vertex_item[v] = it;
	}
	goto out;
oom:
	st = nomem(err);
out:
	tp_strbuf_release(&ka);
	tp_strbuf_release(&kb);
	free(cls_first_item);
	free(cls_fabric);
	free(cls_nic);
	return st;
}

struct link_key {
	uint64_t key;
	uint32_t link;
};

static int cmp_link_key(const void *a, const void *b)
{
	const struct link_key *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->link < y->link ? -1 : x->link > y->link;
}

static enum tp_status build_edges(struct tp_scene *s, struct tp_error *err)
{
	const struct tp_cluster *c = s->cluster;
	size_t nl = c->links.n, nk = 0;
	struct link_key *keys = tp_calloc(nl ? nl : 1, sizeof(*keys));

	if (!keys)
		return nomem(err);
	for (size_t l = 0; l < nl; l++) {
		const struct tp_link *lk = &c->links.v[l];
		uint32_t a = s->vertex_item[lk->a], b = s->vertex_item[lk->b];

		if (a == b) {
			s->items.v[a].n_internal++;
			s->items.v[a].internal_bw = lk->bw_Bps;
			continue;
		}
		if (a > b) {
			uint32_t t = a;
			a = b;
			b = t;
		}
		keys[nk].key = (uint64_t)a << 32 | b;
		keys[nk].link = (uint32_t)l;
		nk++;
	}
	qsort(keys, nk, sizeof(*keys), cmp_link_key);
	for (size_t i = 0; i < nk;) {
		struct tp_sedge e;
		size_t j = i;

		memset(&e, 0, sizeof(e));
		e.a = (uint32_t)(keys[i].key >> 32);
		e.b = (uint32_t)(keys[i].key & 0xffffffffu);
		e.link = keys[i].link;
		e.bw_lo = e.bw_hi = c->links.v[e.link].bw_Bps;
		e.bytes_hi = -1;
		e.busy_hi = -1;
		for (; j < nk && keys[j].key == keys[i].key; j++) {
			uint32_t l = keys[j].link;
			double bw = c->links.v[l].bw_Bps;

			e.count++;
			e.bw_lo = fmin(e.bw_lo, bw);
			e.bw_hi = fmax(e.bw_hi, bw);
			if (s->link_bytes[l] >= 0)
				e.bytes_hi = fmax(e.bytes_hi, s->link_bytes[l]);
			if (s->link_busy[l] >= 0)
				e.busy_hi = fmax(e.busy_hi, s->link_busy[l]);
			if (l == s->bn_link)
				e.bottleneck = true;
		}
		if (tp_vec_push(&s->edges, e)) {
			free(keys);
			return nomem(err);
		}
		i = j;
	}
	free(keys);
	/* device links into a fabric or NIC box: when they all carry about
	 * the same traffic, the box states it once */
	for (size_t i = 0; i < s->items.n; i++) {
		s->items.v[i].dev_bytes_lo = 1e300;
		s->items.v[i].dev_bytes_hi = -1;
		s->items.v[i].dev_busy_hi = -1;
	}
	for (size_t i = 0; i < s->edges.n; i++) {
		const struct tp_sedge *e = &s->edges.v[i];
		struct tp_item *ia = &s->items.v[e->a], *ib = &s->items.v[e->b];
		struct tp_item *box = ia->kind == TP_ITEM_DEVICE ? ib : ia;
		const struct tp_item *dev = ia->kind == TP_ITEM_DEVICE ? ia : ib;

		if (dev->kind != TP_ITEM_DEVICE ||
		    (box->kind != TP_ITEM_FABRIC && box->kind != TP_ITEM_NIC) ||
		    e->bytes_hi < 0)
			continue;
		box->n_dev_edges++;
		box->dev_bytes_lo = fmin(box->dev_bytes_lo, e->bytes_hi);
		box->dev_bytes_hi = fmax(box->dev_bytes_hi, e->bytes_hi);
		box->dev_busy_hi = fmax(box->dev_busy_hi, e->busy_hi);
	}
	for (size_t i = 0; i < s->items.n; i++) {
		struct tp_item *it = &s->items.v[i];
		it->even_traffic = it->n_dev_edges > 1 &&
				   it->dev_bytes_hi - it->dev_bytes_lo <=
					   0.05 * it->dev_bytes_hi;
	}
	return TP_OK;
}

static enum tp_status link_figures(struct tp_scene *s, struct tp_error *err)
{
	const struct tp_report *r = s->report;
	size_t nl = s->cluster->links.n;

	s->link_bytes = tp_calloc(nl ? nl : 1, sizeof(double));
	s->link_busy = tp_calloc(nl ? nl : 1, sizeof(double));
	if (!s->link_bytes || !s->link_busy)
		return nomem(err);
	for (size_t l = 0; l < nl; l++)
		s->link_bytes[l] = s->link_busy[l] = r ? 0 : -1;
	if (!r)
		return TP_OK;
	for (uint32_t i = 0; i < r->n_links; i++) {
		const struct tp_report_link *rl = &r->links[i];
		if (rl->link >= nl)
			return tp_error_set_path(
				err, TP_EINPUT, "$.links",
				"the report names link %u; the topology has "
				"%zu links",
				rl->link, nl);
		s->link_bytes[rl->link] += rl->bytes;
		if (r->iteration_time_s > 0)
			s->link_busy[rl->link] =
				fmax(s->link_busy[rl->link],
				     rl->busy_s / r->iteration_time_s);
		if (s->link_bytes[rl->link] > s->max_link_bytes)
			s->max_link_bytes = s->link_bytes[rl->link];
	}
	return TP_OK;
}

static void find_bottleneck(struct tp_scene *s)
{
	size_t nd = s->cluster->devices.n, nl = s->cluster->links.n;
	double best = -1;

	s->bn_device = s->bn_link = TP_NONE;
	for (size_t d = 0; d < nd; d++)
		if (s->fig[d].has_busy && s->fig[d].busy > best) {
			best = s->fig[d].busy;
			s->bn_device = (uint32_t)d;
		}
	for (size_t l = 0; l < nl; l++)
		if (s->link_busy[l] > best) {
			best = s->link_busy[l];
			s->bn_link = (uint32_t)l;
			s->bn_device = TP_NONE;
		}
	s->bn_fraction = best;
	s->bn_ties = 1;
	if (best <= 0)
		s->bn_device = s->bn_link = TP_NONE;
	if (s->bn_device != TP_NONE) {
		s->bn_ties = 0;
		for (size_t d = 0; d < nd; d++)
			if (s->fig[d].has_busy && s->fig[d].busy >= best - 0.01)
				s->bn_ties++;
	}
}

enum tp_status tp_scene_build(struct tp_scene *s,
			      const struct tp_render_input *in,
			      const struct tp_render_options *o,
			      struct tp_error *err)
{
	const struct tp_plan *p = in->plan;
	const struct tp_model *m = in->model;
	const struct tp_cluster *c = in->cluster;
	const struct tp_report *r = in->report;
	struct tp_render_options dflt;
	enum tp_status st;
	uint32_t *cls_of = NULL;
	long n_cls;
	bool collapse;

	memset(s, 0, sizeof(*s));
	if (!o) {
		tp_render_options_default(&dflt);
		o = &dflt;
	}
	s->plan = p;
	s->model = m;
	s->cluster = c;
	s->report = r;
	if (!c->finalized || !m->finalized)
		return tp_error_set(err, TP_EINTERNAL,
				    "render needs a finalized model and "
				    "cluster");
	if ((st = check_plan(p, m, c, err)) != TP_OK)
		return st;
	if (r && r->devices && r->n_devices != c->devices.n)
		return tp_error_set_path(err, TP_EINPUT, "$.devices",
					 "the report has %u devices, the "
					 "topology %zu",
					 r->n_devices, c->devices.n);
	s->fig = tp_calloc(c->devices.n, sizeof(*s->fig));
	if (!s->fig)
		goto oom;
	fill_figures(s);
	if ((st = link_figures(s, err)) != TP_OK)
		goto fail;
	find_bottleneck(s);
	if ((st = build_stages(s, err)) != TP_OK)
		goto fail;
	cls_of = tp_calloc(c->nodes.n ? c->nodes.n : 1, sizeof(uint32_t));
	if (!cls_of)
		goto oom;
	collapse = o->collapse == TP_COLLAPSE_ALWAYS ||
		   (o->collapse == TP_COLLAPSE_AUTO &&
		    c->devices.n > o->collapse_above);
	n_cls = classify(s, collapse, false, cls_of);
	if (n_cls >= 0 && collapse && (uint32_t)n_cls > o->max_classes) {
		s->roles_merged = true;
		n_cls = classify(s, collapse, true, cls_of);
	}
	if (n_cls < 0)
		goto oom;
	s->collapsed = collapse;
	if ((st = build_items(s, cls_of, (uint32_t)n_cls, err)) != TP_OK)
		goto fail;
	/* outline the busiest device only when it stands out */
	if (s->bn_device != TP_NONE && s->bn_ties == 1)
		s->items.v[s->vertex_item[c->devices.v[s->bn_device].vertex]]
			.bottleneck = true;
	if ((st = build_edges(s, err)) != TP_OK)
		goto fail;
	free(cls_of);
	return TP_OK;
oom:
	st = nomem(err);
fail:
	free(cls_of);
	tp_scene_release(s);
	return st;
}
