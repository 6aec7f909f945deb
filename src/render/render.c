/*
 * render.c - scene -> cgraph graph -> DOT text, or SVG/PNG/PDF through
 * gvc (see render.h).
 */
#include "render.h"

#include <ctype.h>
#include <gvc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/precision.h"
#include "core/vec.h"
#include "scene.h"

/* cgraph's API takes char * for strings it only reads: the one cast. */
static char *cs(const char *s)
{
	return (char *)s;
}

static void set(void *obj, const char *name, const char *value)
{
	agsafeset(obj, cs(name), cs(value), cs(""));
}

/* Fill colours per device type (ColorBrewer Set3, light enough for black
 * text) and line colours per stage (ColorBrewer Dark2 and Set1). */
static const char *const type_colors[] = {
	"#8dd3c7", "#ffffb3", "#bebada", "#80b1d3", "#fdb462",
	"#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5"};
static const char *const stage_colors[] = {
	"#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02",
	"#a6761d", "#377eb8", "#984ea3", "#4daf4a", "#666666", "#a65628"};
#define N_TYPE_COLORS (sizeof(type_colors) / sizeof(type_colors[0]))
#define N_STAGE_COLORS (sizeof(stage_colors) / sizeof(stage_colors[0]))

/* Stage edges drawn at most; above this, device labels name their stages
 * and the stage boxes stand alone (the picture stays readable). */
#define MAX_STAGE_EDGES 64

struct tp_render_gvc {
	GVC_t *gvc;
};

struct tp_render_gvc *tp_render_gvc_new(void)
{
	struct tp_render_gvc *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->gvc = gvContext();
	if (!g->gvc) {
		free(g);
		return NULL;
	}
	return g;
}

void tp_render_gvc_free(struct tp_render_gvc *g)
{
	if (!g)
		return;
	gvFreeContext(g->gvc);
	free(g);
}

void tp_render_options_default(struct tp_render_options *o)
{
	memset(o, 0, sizeof(*o));
	o->collapse = TP_COLLAPSE_AUTO;
	o->collapse_above = 64;
	o->max_classes = 24;
}

static const char *const format_names[TP_RENDER_FORMAT_COUNT] = {
	"dot", "svg", "png", "pdf"};

const char *tp_render_format_name(enum tp_render_format f)
{
	return (unsigned)f < TP_RENDER_FORMAT_COUNT ? format_names[f] : "?";
}

int tp_render_format_parse(const char *name)
{
	for (int i = 0; i < TP_RENDER_FORMAT_COUNT; i++)
		if (strcmp(name, format_names[i]) == 0)
			return i;
	if (strcmp(name, "gv") == 0)
		return TP_RENDER_DOT;
	return -1;
}

int tp_render_format_from_path(const char *fname)
{
	const char *dot = strrchr(fname, '.'), *slash = strrchr(fname, '/');
	char ext[8];
	size_t n;

	if (!dot || (slash && dot < slash))
		return -1;
	n = strlen(dot + 1);
	if (n == 0 || n >= sizeof(ext))
		return -1;
	for (size_t i = 0; i <= n; i++)
		ext[i] = (char)tolower((unsigned char)dot[1 + i]);
	return tp_render_format_parse(ext);
}

/* Label text: Graphviz reads backslash escapes in labels (\n, \l), so a
 * literal backslash in a name is doubled. */
static void add_text(struct tp_strbuf *sb, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			tp_strbuf_addc(sb, '\\');
		tp_strbuf_addc(sb, *s);
	}
}

static void add_si(struct tp_strbuf *sb, double v, const char *unit)
{
	char buf[48];
	tp_render_fmt_si(buf, sizeof(buf), v, unit);
	tp_strbuf_adds(sb, buf);
}

static void add_pct(struct tp_strbuf *sb, double f)
{
	tp_strbuf_addf(sb, "%.0f%%", 100 * f);
}

static void vertex_name(const struct tp_cluster *c, uint32_t v, char *buf,
			size_t size)
{
	for (size_t d = 0; d < c->devices.n; d++)
		if (c->devices.v[d].vertex == v) {
			snprintf(buf, size, "%s", c->devices.v[d].name);
			return;
		}
	for (size_t n = 0; n < c->nodes.n; n++) {
		if (c->nodes.v[n].fabric_vertex == v) {
			snprintf(buf, size, "%s/%s", c->nodes.v[n].name,
				 tp_link_kind_name(c->nodes.v[n].fabric_kind));
			return;
		}
		if (tp_node_is_nic(&c->nodes.v[n], v)) {
			tp_node_nic_name(&c->nodes.v[n], v, buf, size);
			return;
		}
	}
	snprintf(buf, size, "%s%u",
		 c->vertex_kind.v[v] == TP_VERTEX_SWITCH ? "switch" : "vertex",
		 v);
}

/* Build the graph's title lines. */
static void title(const struct tp_scene *s, const struct tp_render_options *o,
		  struct tp_strbuf *sb)
{
	const struct tp_plan *p = s->plan;
	const struct tp_cluster *c = s->cluster;
	const struct tp_report *r = s->report;
	const struct tp_plan_summary *sm = &p->summary;

	if (o->title)
		add_text(sb, o->title);
	else {
		add_text(sb, s->model->name && *s->model->name ? s->model->name
							     : "model");
		tp_strbuf_adds(sb, " on ");
		add_text(sb, c->name && *c->name ? c->name : "cluster");
	}
	tp_strbuf_addf(sb, " (%zu devices, %zu nodes)\\n", c->devices.n,
		       c->nodes.n);
	if (r || sm->valid) {
		double it = r ? r->iteration_time_s : sm->iteration_time_s;
		double th = r ? r->throughput_samples_per_s
			      : sm->throughput_samples_per_s;
		double mfu = r ? r->mfu : sm->mfu;

		tp_strbuf_adds(sb, "iteration ");
		add_si(sb, it, "s");
		tp_strbuf_adds(sb, ", ");
		add_si(sb, th, "samples/s");
		tp_strbuf_adds(sb, ", MFU ");
		tp_strbuf_addf(sb, "%.1f%%", 100 * mfu);
		tp_strbuf_adds(sb, r ? " (simulated)\\n" : " (plan summary)\\n");
	} else {
		tp_strbuf_adds(sb, "no figures: the plan has no summary "
				   "(render with -m and -t to simulate)\\n");
	}
	tp_strbuf_addf(sb, "batch %lld in %u micro-batch%s, %s",
		       (long long)p->global_batch, p->micro_batches,
		       p->micro_batches == 1 ? "" : "es",
		       tp_schedule_name(p->schedule));
	if (p->schedule == TP_SCHEDULE_INTERLEAVED)
		tp_strbuf_addf(sb, ":%u", p->virtual_stages);
	tp_strbuf_addf(sb, ", ZeRO %u, compression %s\\n", p->zero,
		       tp_compression_name(p->compression));
	if (s->feasible_known && !s->feasible) {
		const char *why = r ? r->reason : sm->infeasible_reason;
		tp_strbuf_adds(sb, "DOES NOT FIT");
		if (why && *why) {
			tp_strbuf_adds(sb, ": ");
			add_text(sb, why);
		}
		tp_strbuf_adds(sb, "\\n");
	}
	if (s->bn_device != TP_NONE && s->bn_ties > 1) {
		tp_strbuf_addf(sb, "busiest: %u devices computing about ",
			       s->bn_ties);
		add_pct(sb, s->bn_fraction);
		tp_strbuf_adds(sb, " of the iteration (no single bottleneck)"
				   "\\n");
	} else if (s->bn_device != TP_NONE) {
		tp_strbuf_adds(sb, "bottleneck (red): device ");
		add_text(sb, c->devices.v[s->bn_device].name);
		tp_strbuf_adds(sb, " computing ");
		add_pct(sb, s->bn_fraction);
		tp_strbuf_adds(sb, " of the iteration\\n");
	} else if (s->bn_link != TP_NONE) {
		char a[300], b[300];
		const struct tp_link *l = &c->links.v[s->bn_link];

		vertex_name(c, l->a, a, sizeof(a));
		vertex_name(c, l->b, b, sizeof(b));
		tp_strbuf_adds(sb, "bottleneck (red): link ");
		add_text(sb, a);
		tp_strbuf_adds(sb, " - ");
		add_text(sb, b);
		tp_strbuf_adds(sb, " busy ");
		add_pct(sb, s->bn_fraction);
		tp_strbuf_adds(sb, " of the iteration\\n");
	}
	if (s->collapsed)
		tp_strbuf_adds(sb, s->roles_merged
					   ? "identical nodes and devices drawn "
					     "once with a count (roles merged: "
					     "device labels list their stages)\\n"
					   : "identical nodes and devices drawn "
					     "once with a count; figures are "
					     "ranges over them\\n");
}

/* "a" or "a-b" for a range of figures. */
static void add_range(struct tp_strbuf *sb, double lo, double hi,
		      const char *unit)
{
	char a[48], b[48];

	tp_render_fmt_si(a, sizeof(a), lo, unit);
	tp_render_fmt_si(b, sizeof(b), hi, unit);
	if (strcmp(a, b) == 0) {
		tp_strbuf_adds(sb, a);
		return;
	}
	/* "61.2-61.9 GB": drop the unit of the low end when it is the same */
	tp_render_fmt_si(a, sizeof(a), lo, "");
	{
		const char *ua = strrchr(a, ' ');
		const char *ub = strrchr(b, ' ');
		char la[48];
		size_t n = ua ? (size_t)(ua - a) : strlen(a);

		if (n >= sizeof(la))
			n = sizeof(la) - 1;
		memcpy(la, a, n);
		la[n] = '\0';
		if (ua && ub && strncmp(ua + 1, ub + 1, 1) == 0 &&
		    strlen(ua + 1) <= 1) {
			tp_strbuf_addf(sb, "%s-%s", la, b);
			return;
		}
		tp_render_fmt_si(a, sizeof(a), lo, unit);
		tp_strbuf_addf(sb, "%s - %s", a, b);
	}
}

static void add_pct_range(struct tp_strbuf *sb, double lo, double hi)
{
	long a = lround(100 * lo), b = lround(100 * hi);
	if (a == b)
		tp_strbuf_addf(sb, "%ld%%", a);
	else
		tp_strbuf_addf(sb, "%ld-%ld%%", a, b);
}

/* Stage ids per item (sorted unique pairs item<<32|stage). */
struct item_stages {
	uint64_t *v;
	size_t n;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int item_stages_build(const struct tp_scene *s, struct item_stages *is)
{
	const struct tp_cluster *c = s->cluster;
	size_t n = 0, k = 0;

	is->v = tp_calloc(s->dev_stages.n ? s->dev_stages.n : 1,
			  sizeof(uint64_t));
	if (!is->v)
		return -1;
	for (size_t d = 0; d < c->devices.n; d++) {
		uint64_t it = s->vertex_item[c->devices.v[d].vertex];
		for (uint32_t i = 0; i < s->dev_stage_n[d]; i++)
			is->v[n++] = it << 32 |
				     s->dev_stages.v[s->dev_stage_first[d] + i];
	}
	qsort(is->v, n, sizeof(uint64_t), cmp_u64);
	for (size_t i = 0; i < n; i++)
		if (k == 0 || is->v[k - 1] != is->v[i])
			is->v[k++] = is->v[i];
	is->n = k;
	return 0;
}

static void add_item_stages(struct tp_strbuf *sb, const struct item_stages *is,
			    uint32_t item, bool placements)
{
	size_t lo = 0, hi = is->n, cnt = 0, first;

	while (lo < hi) { /* first pair of this item */
		size_t mid = (lo + hi) / 2;
		if ((is->v[mid] >> 32) < item)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	while (first + cnt < is->n && (is->v[first + cnt] >> 32) == item)
		cnt++;
	if (cnt == 0) {
		tp_strbuf_adds(sb, "\\nidle (no group)");
		return;
	}
	tp_strbuf_addf(sb, "\\n%s%s ", placements ? "placement" : "stage",
		       cnt > 1 ? "s" : "");
	for (size_t i = 0; i < cnt && i < 6; i++)
		tp_strbuf_addf(sb, "%s%u", i ? ", " : "",
			       (uint32_t)(is->v[first + i] & 0xffffffffu));
	if (cnt > 6)
		tp_strbuf_addf(sb, ", ... (%zu)", cnt);
}

static void device_label(const struct tp_scene *s, const struct tp_item *it,
			 const struct item_stages *is, uint32_t item,
			 bool placements, struct tp_strbuf *sb)
{
	const struct tp_cluster *c = s->cluster;
	const char *type = c->types.v[it->type].name;

	if (it->count == 1) {
		add_text(sb, c->devices.v[it->device].name);
		tp_strbuf_adds(sb, "\\n");
		add_text(sb, type);
	} else {
		tp_strbuf_addf(sb, "%u x ", it->count);
		add_text(sb, type);
		if (s->classes.v[it->cls].n_nodes > 1)
			tp_strbuf_addf(sb, "\\nper node: %u, local %u-%u",
				       it->count /
					       s->classes.v[it->cls].n_nodes,
				       it->local_lo, it->local_hi);
		else
			tp_strbuf_addf(sb, "\\nlocal %u-%u", it->local_lo,
				       it->local_hi);
	}
	if (it->has_mem) {
		tp_strbuf_adds(sb, "\\nmem ");
		add_range(sb, it->mem_lo, it->mem_hi, "B");
		tp_strbuf_adds(sb, " / ");
	} else {
		tp_strbuf_adds(sb, "\\nmemory ");
	}
	add_si(sb, it->cap, "B");
	if (it->has_busy) {
		tp_strbuf_adds(sb, "\\nbusy ");
		add_pct_range(sb, it->busy_lo, it->busy_hi);
	}
	add_item_stages(sb, is, item, placements);
	if (it->n_internal)
		tp_strbuf_addf(sb, "\\n+%u links among them", it->n_internal);
	if (it->oom)
		tp_strbuf_adds(sb, "\\nOUT OF MEMORY");
}

static void other_label(const struct tp_scene *s, const struct tp_item *it,
			struct tp_strbuf *sb)
{
	const struct tp_cluster *c = s->cluster;
	const struct tp_node *nd = NULL;

	if (it->cls != TP_NONE)
		nd = &c->nodes.v[s->cls_nodes.v[s->classes.v[it->cls].node_first]];
	switch (it->kind) {
	case TP_ITEM_FABRIC:
		add_text(sb, tp_link_kind_name(nd->fabric_kind));
		tp_strbuf_adds(sb, " fabric\\n");
		add_si(sb, nd->fabric_bw_Bps, "B/s");
		tp_strbuf_adds(sb, " per device");
		break;
	case TP_ITEM_NIC:
		tp_strbuf_addf(sb, "NIC x%u\\n", nd->n_nics);
		add_si(sb, nd->nic_bw_Bps, "B/s");
		tp_strbuf_adds(sb, " each");
		break;
	case TP_ITEM_SWITCH:
		if (it->tier == TP_NONE) {
			tp_strbuf_adds(sb, "network switch");
			break;
		}
		/* a collapsed tier: "391 leaf switches\n32 nodes each" */
		{
			const struct tp_tier *t = &c->tiers.v[it->tier];
			tp_strbuf_addf(sb, "%u ", it->count);
			add_text(sb, t->name);
			tp_strbuf_addf(sb, " switch%s",
				       it->count == 1 ? "" : "es");
			if (t->group > 0 && it->tier == 0)
				tp_strbuf_addf(sb, "\\n%u nodes each",
					       t->group);
			else if (t->group > 0) {
				tp_strbuf_addf(sb, "\\n%u ", t->group);
				add_text(sb, c->tiers.v[it->tier - 1].name);
				tp_strbuf_adds(sb, " switches each");
			}
		}
		break;
	default: {
		char b[300];
		vertex_name(c, it->vertex, b, sizeof(b));
		add_text(sb, b);
		break;
	}
	}
	if ((it->kind == TP_ITEM_FABRIC || it->kind == TP_ITEM_NIC) &&
	    it->even_traffic && it->dev_bytes_hi > 0) {
		tp_strbuf_adds(sb, "\\n");
		add_si(sb, it->dev_bytes_hi, "B");
		tp_strbuf_adds(sb, "/iter per device link");
		if (it->dev_busy_hi > 0.005) {
			tp_strbuf_adds(sb, ", busy ");
			add_pct(sb, it->dev_busy_hi);
		}
	}
	if (it->n_internal)
		tp_strbuf_addf(sb, "\\n+%u internal links", it->n_internal);
}

/* A link between two device boxes of the same node class. */
static bool mesh_edge(const struct tp_scene *s, const struct tp_sedge *e)
{
	const struct tp_item *a = &s->items.v[e->a], *b = &s->items.v[e->b];
	return a->kind == TP_ITEM_DEVICE && b->kind == TP_ITEM_DEVICE &&
	       a->cls == b->cls;
}

static void class_label(const struct tp_scene *s, uint32_t k,
			struct tp_strbuf *sb)
{
	const struct tp_cluster *c = s->cluster;
	const struct tp_cls *cl = &s->classes.v[k];
	const uint32_t *nodes = s->cls_nodes.v + cl->node_first;

	uint32_t n_mesh = 0;
	double bw_lo = 0, bw_hi = 0, bytes_hi = -1, busy_hi = -1;
	enum tp_link_kind kind = TP_LINK_NVLINK;

	if (cl->n_nodes == 1) {
		add_text(sb, c->nodes.v[nodes[0]].name);
	} else {
		tp_strbuf_addf(sb, "%u identical nodes: ", cl->n_nodes);
		for (uint32_t i = 0; i < cl->n_nodes && i < 3; i++) {
			if (i)
				tp_strbuf_adds(sb, ", ");
			add_text(sb, c->nodes.v[nodes[i]].name);
		}
		if (cl->n_nodes > 4)
			tp_strbuf_adds(sb, ", ...");
		if (cl->n_nodes > 3) {
			tp_strbuf_adds(sb, ", ");
			add_text(sb, c->nodes.v[nodes[cl->n_nodes - 1]].name);
		}
	}
	/* device-to-device links inside the node (NVLink meshes) are drawn
	 * unlabelled; their figures go here */
	for (size_t i = 0; i < s->edges.n; i++) {
		const struct tp_sedge *e = &s->edges.v[i];
		if (!mesh_edge(s, e) || s->items.v[e->a].cls != k)
			continue;
		if (n_mesh == 0) {
			bw_lo = e->bw_lo;
			bw_hi = e->bw_hi;
			kind = c->links.v[e->link].kind;
		}
		n_mesh += e->count;
		bw_lo = fmin(bw_lo, e->bw_lo);
		bw_hi = fmax(bw_hi, e->bw_hi);
		bytes_hi = fmax(bytes_hi, e->bytes_hi);
		busy_hi = fmax(busy_hi, e->busy_hi);
	}
	if (n_mesh) {
		tp_strbuf_addf(sb, "\\n%u %s links between its devices, ",
			       cl->n_nodes > 1 ? n_mesh / cl->n_nodes : n_mesh,
			       tp_link_kind_name(kind));
		add_range(sb, bw_lo, bw_hi, "B/s");
		if (bytes_hi > 0) {
			tp_strbuf_adds(sb, ", up to ");
			add_si(sb, bytes_hi, "B");
			tp_strbuf_adds(sb, "/iter");
			if (busy_hi > 0.005) {
				tp_strbuf_adds(sb, ", busy ");
				add_pct(sb, busy_hi);
			}
		}
	}
}

static void stage_label(const struct tp_scene *s, uint32_t k, bool placements,
			struct tp_strbuf *sb)
{
	const struct tp_stage *st = &s->stages.v[k];
	const struct tp_plan *p = s->plan;
	const struct tp_model *m = s->model;
	const struct tp_plan_group *g0 =
		&p->groups.v[s->stage_grps.v[st->grp_first]];
	uint32_t n_sfb = 0;

	tp_strbuf_addf(sb, "%s %u: ", placements ? "placement" : "stage", k);
	if (st->n_grps == 1)
		tp_strbuf_addf(sb, "group %u",
			       s->stage_grps.v[st->grp_first]);
	else
		tp_strbuf_addf(sb, "%u groups", st->n_grps);
	if (p->schedule == TP_SCHEDULE_INTERLEAVED && st->n_grps > 1)
		tp_strbuf_addf(sb, " (%u chunks)", st->n_grps);
	tp_strbuf_adds(sb, "\\nops ");
	add_text(sb, m->ops.v[m->topo[st->op_lo]].name);
	if (st->op_hi != st->op_lo) {
		tp_strbuf_adds(sb, " .. ");
		add_text(sb, m->ops.v[m->topo[st->op_hi]].name);
	}
	if (st->layer_lo >= 0) {
		if (st->layer_lo == st->layer_hi)
			tp_strbuf_addf(sb, "\\nlayer %d", st->layer_lo);
		else
			tp_strbuf_addf(sb, "\\nlayers %d-%d", st->layer_lo,
				       st->layer_hi);
	}
	if (st->replicas[0])
		tp_strbuf_addf(sb, "\\n%u devices: %s", st->n_devs,
			       st->replicas);
	else if (st->mixed_degrees)
		tp_strbuf_addf(sb, "\\n%u devices, mixed dp x tp", st->n_devs);
	else
		tp_strbuf_addf(sb, "\\ndp %u x tp %u = %u devices", st->dp,
			       st->tp, st->n_devs);
	if (m->total_flop > 0)
		tp_strbuf_addf(sb, "\\n%.1f%% of the model FLOP",
			       100 * st->flop / m->total_flop);
	{
		bool seen[TP_SYNC_COUNT] = {false};
		const char *sep = "\\nsync ";
		for (uint32_t i = 0; i < st->n_grps; i++)
			seen[p->groups.v[s->stage_grps.v[st->grp_first + i]]
				     .sync] = true;
		for (int y = 0; y < TP_SYNC_COUNT; y++)
			if (seen[y]) {
				tp_strbuf_addf(sb, "%s%s", sep,
					       tp_sync_name((enum tp_sync)y));
				sep = "/";
			}
	}
	if (g0->recompute != TP_RECOMPUTE_NONE)
		tp_strbuf_addf(sb, ", recompute %s",
			       tp_recompute_name(g0->recompute));
	if (g0->sp)
		tp_strbuf_adds(sb, ", seq-par");
	for (uint32_t i = 0; i < st->n_grps; i++)
		n_sfb += p->groups.v[s->stage_grps.v[st->grp_first + i]].n_sfb;
	if (n_sfb)
		tp_strbuf_addf(sb, "\\n%u ops with SFB compression", n_sfb);
	{
		bool uneven = false;
		for (uint32_t i = 0; i < st->n_grps && !uneven; i++) {
			uint32_t g = s->stage_grps.v[st->grp_first + i];
			const double *sh = tp_plan_group_shares(p, g);
			for (uint32_t r = 1; r < p->groups.v[g].dp; r++)
				if (fabs(sh[r] - sh[0]) > 1e-9)
					uneven = true;
		}
		if (uneven)
			tp_strbuf_adds(sb, "\\nuneven batch shares");
	}
}

static int item_rank(enum tp_item_kind k)
{
	switch (k) {
	case TP_ITEM_DEVICE:
		return 1;
	case TP_ITEM_FABRIC:
	case TP_ITEM_NIC:
		return 2;
	default:
		return 3;
	}
}

static void edge_label(const struct tp_scene *s, const struct tp_sedge *e,
		       struct tp_strbuf *sb)
{
	const struct tp_link *l = &s->cluster->links.v[e->link];
	enum tp_item_kind ka = s->items.v[e->a].kind, kb = s->items.v[e->b].kind;
	/* a device's link to its node's fabric or NIC: the fabric/NIC box
	 * states the bandwidth once; the edge carries only the traffic */
	bool local = (ka == TP_ITEM_DEVICE) != (kb == TP_ITEM_DEVICE) &&
		     (ka == TP_ITEM_FABRIC || ka == TP_ITEM_NIC ||
		      kb == TP_ITEM_FABRIC || kb == TP_ITEM_NIC);
	const struct tp_item *bx =
		ka == TP_ITEM_DEVICE ? &s->items.v[e->b] : &s->items.v[e->a];

	/* the box already says what every device link carries */
	if (local && bx->even_traffic && !e->bottleneck)
		return;

	if (!local) {
		if (e->count > 1)
			tp_strbuf_addf(sb, "%u x ", e->count);
		add_text(sb, tp_link_kind_name(l->kind));
		tp_strbuf_adds(sb, " ");
		add_range(sb, e->bw_lo, e->bw_hi, "B/s");
	}
	if (e->bytes_hi > 0 || (e->bytes_hi == 0 && !local)) {
		if (!local)
			tp_strbuf_adds(sb, "\\n");
		if (e->count > 1)
			tp_strbuf_adds(sb, "up to ");
		add_si(sb, e->bytes_hi, "B");
		tp_strbuf_adds(sb, "/iter");
		if (e->busy_hi > 0.005) {
			tp_strbuf_adds(sb, ", busy ");
			add_pct(sb, e->busy_hi);
		}
	}
}

/* What build_graph's pieces share: the graph, the label being written, the
 * cgraph node of each scene item, stage and node class, and the scene's
 * (item, stage) pairs. */
struct gbuild {
	const struct tp_scene *s;
	Agraph_t *g;
	struct tp_strbuf sb;
	Agraph_t **sub;          /* per node class: its cluster subgraph */
	Agnode_t **nodes;        /* per scene item */
	Agnode_t **stage_nodes;  /* per stage */
	struct item_stages is;
	bool placements;         /* some device holds more than one stage */
	char name[64];
};

static char *label_of(struct gbuild *b)
{
	return b->sb.failed ? cs("") : b->sb.buf ? b->sb.buf : cs("");
}

static void graph_defaults(Agraph_t *g)
{
	agattr(g, AGRAPH, cs("fontname"), cs("Helvetica"));
	agattr(g, AGRAPH, cs("fontsize"), cs("14"));
	agattr(g, AGRAPH, cs("labelloc"), cs("t"));
	agattr(g, AGRAPH, cs("labeljust"), cs("l"));
	agattr(g, AGRAPH, cs("rankdir"), cs("TB"));
	agattr(g, AGRAPH, cs("nodesep"), cs("0.25"));
	agattr(g, AGRAPH, cs("ranksep"), cs("0.6"));
	agattr(g, AGRAPH, cs("newrank"), cs("true"));
	agattr(g, AGNODE, cs("shape"), cs("box"));
	agattr(g, AGNODE, cs("style"), cs("rounded,filled"));
	agattr(g, AGNODE, cs("fillcolor"), cs("white"));
	agattr(g, AGNODE, cs("fontname"), cs("Helvetica"));
	agattr(g, AGNODE, cs("fontsize"), cs("10"));
	agattr(g, AGEDGE, cs("fontname"), cs("Helvetica"));
	agattr(g, AGEDGE, cs("fontsize"), cs("9"));
	agattr(g, AGEDGE, cs("color"), cs("#555555"));
}

/* Stage boxes per row: more stages wrap into rows of this many. */
#define STAGE_ROW 10

/* The stage boxes on top, in order left to right: one row, or rows of
 * STAGE_ROW (each a rank of its own, every stage above the one a row
 * later, the topology below the last row), so 50 stages of a
 * 100,000-GPU plan are not one strip 14,000 px wide. */
static void add_stages(struct gbuild *b)
{
	const struct tp_scene *s = b->s;
	Agraph_t *sg = NULL;
	bool wrap = s->stages.n > STAGE_ROW;

	if (!s->stages.n)
		return;
	for (size_t k = 0; k < s->stages.n; k++) {
		const char *col = stage_colors[k % N_STAGE_COLORS];
		Agnode_t *n;

		if (k == 0 || (wrap && k % STAGE_ROW == 0)) {
			if (wrap)
				snprintf(b->name, sizeof(b->name),
					 "stages_row%zu", k / STAGE_ROW);
			else
				snprintf(b->name, sizeof(b->name), "stages");
			sg = agsubg(b->g, b->name, 1);
			set(sg, "rank", k == 0 ? "min" : "same");
		}
		snprintf(b->name, sizeof(b->name), "stage%zu", k);
		n = agnode(sg, b->name, 1);
		b->stage_nodes[k] = n;
		tp_strbuf_reset(&b->sb);
		stage_label(s, (uint32_t)k, b->placements, &b->sb);
		set(n, "label", label_of(b));
		set(n, "color", col);
		set(n, "penwidth", "2");
		set(n, "fillcolor", "#fbfbfb");
	}
	for (size_t k = 0; k + 1 < s->stages.n; k++) {
		/* along a row */
		if (wrap && (k + 1) % STAGE_ROW == 0)
			continue;
		if (wrap) {
			snprintf(b->name, sizeof(b->name), "stages_row%zu",
				 k / STAGE_ROW);
			sg = agsubg(b->g, b->name, 0);
		}
		set(agedge(sg, b->stage_nodes[k], b->stage_nodes[k + 1], NULL,
			   1),
		    "style", "invis");
	}
	/* from row to row, each stage above the one a row later (columns) */
	for (size_t k = 0; wrap && k + STAGE_ROW < s->stages.n; k++)
		set(agedge(b->g, b->stage_nodes[k],
			   b->stage_nodes[k + STAGE_ROW], NULL, 1),
		    "style", "invis");
}

/* Wrapped stage rows: the topology below the last row (its first stage
 * above every node box's first item). */
static void stages_above(struct gbuild *b)
{
	const struct tp_scene *s = b->s;
	size_t last = s->stages.n ? (s->stages.n - 1) / STAGE_ROW * STAGE_ROW
				  : 0;

	for (size_t c = 0; s->stages.n > STAGE_ROW && c < s->classes.n; c++)
		for (size_t i = 0; i < s->items.n; i++)
			if (s->items.v[i].cls == c) {
				set(agedge(b->g, b->stage_nodes[last],
					   b->nodes[i], NULL, 1),
				    "style", "invis");
				break;
			}
}

/* One cluster subgraph per node class. */
static void add_node_clusters(struct gbuild *b)
{
	const struct tp_scene *s = b->s;

	for (size_t k = 0; k < s->classes.n; k++) {
		Agraph_t *sub;

		snprintf(b->name, sizeof(b->name), "cluster_node%zu", k);
		sub = b->sub[k] = agsubg(b->g, b->name, 1);
		tp_strbuf_reset(&b->sb);
		class_label(s, (uint32_t)k, &b->sb);
		set(sub, "label", label_of(b));
		set(sub, "style", s->classes.v[k].n_nodes > 1 ? "rounded,bold"
							      : "rounded");
		set(sub, "color", "#888888");
		set(sub, "fontsize", "11");
		if (s->classes.v[k].n_nodes > 1)
			set(sub, "peripheries", "1");
	}
}

/* One box per scene item (device, fabric, NIC, switch) in its node's
 * cluster or, for switches, at the top level. */
static void add_items(struct gbuild *b)
{
	const struct tp_scene *s = b->s;

	for (size_t i = 0; i < s->items.n; i++) {
		const struct tp_item *it = &s->items.v[i];
		Agraph_t *parent = it->cls != TP_NONE ? b->sub[it->cls] : b->g;
		Agnode_t *n;

		snprintf(b->name, sizeof(b->name), "%s%zu",
			 it->kind == TP_ITEM_DEVICE ? "dev" : "v", i);
		n = agnode(parent, b->name, 1);
		b->nodes[i] = n;
		tp_strbuf_reset(&b->sb);
		if (it->kind == TP_ITEM_DEVICE) {
			device_label(s, it, &b->is, (uint32_t)i, b->placements,
				     &b->sb);
			set(n, "fillcolor",
			    it->oom ? "#ff8a80"
				    : type_colors[it->type % N_TYPE_COLORS]);
			if (it->count > 1)
				set(n, "peripheries", "2");
		} else {
			other_label(s, it, &b->sb);
			set(n, "fillcolor", it->kind == TP_ITEM_NIC ? "#dfe9f3"
								    : "#eeeeee");
			set(n, "shape", it->kind == TP_ITEM_SWITCH ? "ellipse"
								   : "box");
			set(n, "style", "filled");
			set(n, "fontsize", "9");
		}
		set(n, "label", label_of(b));
		if (it->bottleneck || it->oom) {
			set(n, "color", "red");
			set(n, "penwidth", "3");
		}
	}
}

/* Nodes with many device boxes: stack them in rows of at most 4
 * (invisible edges rank row r+1 below row r) so a node is not one long
 * line. */
static void stack_device_rows(struct gbuild *b)
{
	const struct tp_scene *s = b->s;

	for (size_t k = 0; k < s->classes.n; k++) {
		uint32_t n = 0, cols, row[64];

		for (size_t i = 0; i < s->items.n && n < 64; i++)
			if (s->items.v[i].cls == k &&
			    s->items.v[i].kind == TP_ITEM_DEVICE)
				row[n++] = (uint32_t)i;
		if (n <= 4)
			continue;
		cols = n <= 8 ? (n + 1) / 2 : 4;
		for (uint32_t i = 0; i + cols < n; i++) {
			Agedge_t *e = agedge(b->g, b->nodes[row[i]],
					     b->nodes[row[i + cols]], NULL, 1);
			set(e, "style", "invis");
		}
	}
}

/* Many node boxes: wrap them into rows (an invisible edge from the bottom
 * of box i to the top of box i + cols) so the picture is not one long
 * strip. */
static void wrap_node_rows(struct gbuild *b)
{
	const struct tp_scene *s = b->s;
	size_t nc = s->classes.n, cols;

	if (nc <= 4)
		return;
	cols = (size_t)ceil(sqrt((double)nc * 2));
	for (size_t k = 0; k + cols < nc; k++) {
		uint32_t bottom = TP_NONE, top = TP_NONE;
		for (size_t i = 0; i < s->items.n; i++) {
			const struct tp_item *it = &s->items.v[i];
			if (it->cls == k && it->kind != TP_ITEM_DEVICE)
				bottom = (uint32_t)i;
			if (it->cls == k + cols && it->kind == TP_ITEM_DEVICE &&
			    top == TP_NONE)
				top = (uint32_t)i;
		}
		if (bottom == TP_NONE || top == TP_NONE)
			continue;
		set(agedge(b->g, b->nodes[bottom], b->nodes[top], NULL, 1),
		    "style", "invis");
	}
}

/* Dashed stage -> device edges, up to MAX_STAGE_EDGES of them. */
static void add_stage_edges(struct gbuild *b)
{
	if (b->is.n > MAX_STAGE_EDGES)
		return;
	for (size_t i = 0; i < b->is.n; i++) {
		uint32_t item = (uint32_t)(b->is.v[i] >> 32);
		uint32_t k = (uint32_t)(b->is.v[i] & 0xffffffffu);
		Agedge_t *e = agedge(b->g, b->stage_nodes[k], b->nodes[item],
				     NULL, 1);
		set(e, "style", "dashed");
		set(e, "color", stage_colors[k % N_STAGE_COLORS]);
		set(e, "penwidth", "1.5");
	}
}

/* The links, labelled with bandwidth and traffic, wider as they carry
 * more, the bottleneck in red. */
static void add_links(struct gbuild *b)
{
	const struct tp_scene *s = b->s;

	for (size_t i = 0; i < s->edges.n; i++) {
		const struct tp_sedge *se = &s->edges.v[i];
		uint32_t a = se->a, bb = se->b;
		Agedge_t *e;
		char w[32];

		if (item_rank(s->items.v[a].kind) >
		    item_rank(s->items.v[bb].kind)) {
			uint32_t t = a;
			a = bb;
			bb = t;
		}
		e = agedge(b->g, b->nodes[a], b->nodes[bb], NULL, 1);
		tp_strbuf_reset(&b->sb);
		if (!mesh_edge(s, se) || se->bottleneck)
			edge_label(s, se, &b->sb);
		if (item_rank(s->items.v[a].kind) ==
		    item_rank(s->items.v[bb].kind)) {
			/* a link between peers (NVLink between GPUs, switch
			 * to switch) must not push one below the other; its
			 * text is an xlabel because Graphviz 2.43 frees a
			 * labelled flat edge twice in gvFreeLayout */
			set(e, "constraint", "false");
			set(e, "xlabel", label_of(b));
		} else {
			set(e, "label", label_of(b));
		}
		if (se->bytes_hi > 0 && s->max_link_bytes > 0) {
			snprintf(w, sizeof(w), "%.2f",
				 1 + 3 * se->bytes_hi / s->max_link_bytes);
			set(e, "penwidth", w);
		}
		if (se->bottleneck) {
			set(e, "color", "red");
			set(e, "fontcolor", "red");
			set(e, "penwidth", "4");
		}
	}
}

/* The legend: one box per device type present. */
static void add_legend(struct gbuild *b)
{
	const struct tp_scene *s = b->s;
	const struct tp_cluster *c = s->cluster;
	Agraph_t *lg = agsubg(b->g, cs("cluster_legend"), 1);

	set(lg, "label", "device types");
	set(lg, "style", "dashed");
	set(lg, "color", "#aaaaaa");
	set(lg, "fontsize", "10");
	for (size_t t = 0; t < c->types.n; t++) {
		const struct tp_device_type *ty = &c->types.v[t];
		uint32_t cnt = c->type_count ? c->type_count[t] : 0;
		Agnode_t *n;

		if (!cnt)
			continue;
		snprintf(b->name, sizeof(b->name), "type%zu", t);
		n = agnode(lg, b->name, 1);
		tp_strbuf_reset(&b->sb);
		add_text(&b->sb, ty->name);
		tp_strbuf_addf(&b->sb, "\\n%u devices, ", cnt);
		add_si(&b->sb, ty->memory_bytes, "B");
		tp_strbuf_adds(&b->sb, ", ");
		add_si(&b->sb, tp_precision_gemm_peak(ty, s->model->dtype),
		       "FLOP/s");
		tp_strbuf_addf(&b->sb, " %s",
			       tp_dtype_name(
				   tp_precision_run_dtype(ty, s->model->dtype)));
		set(n, "label", label_of(b));
		set(n, "fillcolor", type_colors[t % N_TYPE_COLORS]);
	}
}

static void gbuild_release(struct gbuild *b)
{
	tp_strbuf_release(&b->sb);
	free(b->sub);
	free(b->nodes);
	free(b->stage_nodes);
	free(b->is.v);
}

/* The scene as a cgraph graph, in the order its DOT text lists it: title,
 * stages, node clusters and their items, layout hints, stage edges, links,
 * legend (the order is part of the byte-identical output). */
static Agraph_t *build_graph(const struct tp_scene *s,
			     const struct tp_render_options *o,
			     Agdisc_t *disc, struct tp_error *err)
{
	struct gbuild b;

	memset(&b, 0, sizeof(b));
	b.s = s;
	b.g = agopen(cs("tagplan"), Agundirected, disc);
	if (!b.g) {
		tp_error_set(err, TP_ENOMEM, "out of memory (cgraph)");
		return NULL;
	}
	tp_strbuf_init(&b.sb);
	b.sub = tp_calloc(s->classes.n ? s->classes.n : 1, sizeof(*b.sub));
	b.nodes = tp_calloc(s->items.n ? s->items.n : 1, sizeof(*b.nodes));
	b.stage_nodes = tp_calloc(s->stages.n ? s->stages.n : 1,
				  sizeof(*b.stage_nodes));
	if (!b.sub || !b.nodes || !b.stage_nodes || item_stages_build(s, &b.is))
		goto oom;
	for (size_t d = 0; d < s->cluster->devices.n; d++)
		if (s->dev_stage_n[d] > 1)
			b.placements = true;

	graph_defaults(b.g);
	tp_strbuf_reset(&b.sb);
	title(s, o, &b.sb);
	set(b.g, "label", label_of(&b));
	add_stages(&b);
	add_node_clusters(&b);
	add_items(&b);
	stages_above(&b);
	stack_device_rows(&b);
	wrap_node_rows(&b);
	add_stage_edges(&b);
	add_links(&b);
	add_legend(&b);
	if (b.sb.failed)
		goto oom;
	gbuild_release(&b);
	return b.g;
oom:
	gbuild_release(&b);
	agclose(b.g);
	tp_error_set(err, TP_ENOMEM, "out of memory");
	return NULL;
}

/* agwrite through a discipline that appends to a strbuf. */
static int sb_putstr(void *chan, const char *str)
{
	tp_strbuf_adds(chan, str);
	return 0;
}

static int sb_flush(void *chan)
{
	(void)chan;
	return 0;
}

/*
 * Object ids handed out in creation order.  cgraph's default discipline
 * (AgIdDisc) makes a named object's id the address of its interned name,
 * and agwrite lists subgraphs by id, so the clusters came out in heap
 * order: the same plan gave other bytes when its inputs had taken more or
 * less memory before.  Here every id is the next number of a counter per
 * graph; a name keeps the id it got first, in a table of our own (an open
 * hash from name to id and a vector from id to name) that print() reads
 * back.  The table is ours, not cgraph's internal name map: Graphviz 2.42
 * closes that map without freeing its entries, which leaked.  The names
 * themselves are the graph's reference-counted strings (agstrdup), as
 * AgIdDisc's are: agwrite asks whether a name is HTML-like from the
 * refstr header, and agclose frees them with the string dictionary.
 */
struct seq_ids {
	Agraph_t *g;	   /* the root graph, owner of the names' refstrs */
	IDTYPE next;
	char **names;	   /* by id; NULL for anonymous ids */
	int *types;	   /* by id: the object type of the name */
	size_t names_cap;
	IDTYPE *slots;	   /* open hash of named ids, 0 = empty */
	size_t slots_cap;  /* power of two */
	size_t named;
	bool failed;
};

static size_t seq_hash(const char *s)
{
	size_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/*
 * The slot holding name str of objects of type objtype, or the empty slot
 * where it would go.  A stored name is one byte of object type (as cgraph
 * keeps a name space per type) and then the name.
 */
static size_t seq_slot(const struct seq_ids *st, int objtype,
		       const char *str)
{
	size_t mask = st->slots_cap - 1;
	size_t k = (seq_hash(str) + (size_t)objtype * 40503u) & mask;

	for (; st->slots[k]; k = (k + 1) & mask) {
		IDTYPE id = st->slots[k];

		if (st->types[id] == objtype && !strcmp(st->names[id], str))
			break;
	}
	return k;
}

static bool seq_grow(struct seq_ids *st)
{
	size_t cap = st->slots_cap ? st->slots_cap * 2 : 64;
	IDTYPE *old = st->slots;
	size_t old_cap = st->slots_cap;

	st->slots = calloc(cap, sizeof(*st->slots));
	if (!st->slots) {
		st->slots = old;
		return false;
	}
	st->slots_cap = cap;
	for (size_t k = 0; k < old_cap; k++)
		if (old[k])
			st->slots[seq_slot(st, st->types[old[k]],
					   st->names[old[k]])] = old[k];
	free(old);
	return true;
}

/* Record name for the id about to be handed out (st->next). */
static bool seq_name(struct seq_ids *st, int objtype, char *str)
{
	IDTYPE id = st->next;

	if (id >= st->names_cap) {
		size_t cap = st->names_cap ? st->names_cap * 2 : 64;
		char **n;
		int *t;

		while (cap <= id)
			cap *= 2;
		n = realloc(st->names, cap * sizeof(*n));
		if (!n)
			return false;
		st->names = n;
		t = realloc(st->types, cap * sizeof(*t));
		if (!t)
			return false;
		st->types = t;
		memset(n + st->names_cap, 0,
		       (cap - st->names_cap) * sizeof(*n));
		memset(t + st->names_cap, 0,
		       (cap - st->names_cap) * sizeof(*t));
		st->names_cap = cap;
	}
	if (2 * (st->named + 1) > st->slots_cap && !seq_grow(st))
		return false;
	st->names[id] = agstrdup(st->g, str);
	if (!st->names[id])
		return false;
	st->types[id] = objtype;
	st->slots[seq_slot(st, objtype, str)] = id;
	st->named++;
	return true;
}

static void *seq_open(Agraph_t *g, Agdisc_t *disc)
{
	struct seq_ids *st = calloc(1, sizeof(*st));

	(void)disc;
	if (st) {
		st->g = g;
		st->next = 1;
	}
	return st;
}

static long seq_map(void *state, int objtype, char *str, IDTYPE *id,
		    int createflag)
{
	struct seq_ids *st = state;

	if (!st || st->failed)
		return 0;
	if (str && st->slots_cap) {
		IDTYPE found = st->slots[seq_slot(st, objtype, str)];

		if (found) {
			*id = found;
			return 1;
		}
	}
	if (!createflag) {
		*id = 0; /* as AgIdDisc: an unknown name maps to no object */
		return 1;
	}
	if (str && !seq_name(st, objtype, str)) {
		st->failed = true;
		return 0;
	}
	*id = st->next++;
	return 1;
}

static long seq_alloc(void *state, int objtype, IDTYPE request)
{
	(void)state;
	(void)objtype;
	(void)request;
	return 0;
}

static void seq_free(void *state, int objtype, IDTYPE id)
{
	(void)state;
	(void)objtype;
	(void)id;
}

static char *seq_print(void *state, int objtype, IDTYPE id)
{
	struct seq_ids *st = state;

	(void)objtype;
	if (st && id < st->names_cap && st->names[id])
		return st->names[id];
	return NULL;
}

static void seq_close(void *state)
{
	struct seq_ids *st = state;

	if (!st)
		return;
	/* the names go with the graph's string dictionary */
	free(st->names);
	free(st->types);
	free(st->slots);
	free(st);
}

static void seq_register(void *state, int objtype, void *obj)
{
	(void)state;
	(void)objtype;
	(void)obj;
}

static Agiddisc_t seq_id_disc = {seq_open,  seq_map,   seq_alloc,
				 seq_free,  seq_print, seq_close,
				 seq_register};

static void make_disc(Agdisc_t *disc, Agiodisc_t *io)
{
	*io = AgIoDisc;
	io->putstr = sb_putstr;
	io->flush = sb_flush;
	disc->mem = &AgMemDisc;
	disc->id = &seq_id_disc;
	disc->io = io;
}

static Agraph_t *scene_graph(const struct tp_render_input *in,
			     const struct tp_render_options *o, Agdisc_t *disc,
			     struct tp_error *err)
{
	struct tp_render_options dflt;
	struct tp_scene s;
	Agraph_t *g;

	if (!o) {
		tp_render_options_default(&dflt);
		o = &dflt;
	}
	if (tp_scene_build(&s, in, o, err) != TP_OK)
		return NULL;
	g = build_graph(&s, o, disc, err);
	tp_scene_release(&s);
	return g;
}

enum tp_status tp_render_dot(const struct tp_render_input *in,
			     const struct tp_render_options *o,
			     struct tp_strbuf *out, struct tp_error *err)
{
	Agdisc_t disc;
	Agiodisc_t io;
	Agraph_t *g;
	int rc;

	make_disc(&disc, &io);
	g = scene_graph(in, o, &disc, err);
	if (!g)
		return err ? err->status : TP_EINTERNAL;
	rc = agwrite(g, out);
	agclose(g);
	if (rc != 0)
		return tp_error_set(err, TP_EINTERNAL,
				    "Graphviz could not write DOT");
	if (out->failed)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	return TP_OK;
}

enum tp_status tp_render_plan(const struct tp_render_input *in,
			      const struct tp_render_options *o,
			      enum tp_render_format format,
			      struct tp_strbuf *out,
			      enum tp_render_format *produced,
			      struct tp_strbuf *warning, struct tp_error *err)
{
	Agdisc_t disc;
	Agiodisc_t io;
	Agraph_t *g;
	GVC_t *gvc;
	char *data = NULL;
	unsigned int len = 0;
	const char *why = NULL;

	if (produced)
		*produced = TP_RENDER_DOT;
	if (format == TP_RENDER_DOT)
		return tp_render_dot(in, o, out, err);
	if ((unsigned)format >= TP_RENDER_FORMAT_COUNT)
		return tp_error_set(err, TP_EUSAGE, "unknown picture format %d",
				    (int)format);
	make_disc(&disc, &io);
	g = scene_graph(in, o, &disc, err);
	if (!g)
		return err ? err->status : TP_EINTERNAL;
	gvc = o && o->gvc ? o->gvc->gvc : gvContext();
	if (!gvc) {
		why = "Graphviz could not start (gvContext failed)";
	} else if (gvLayout(gvc, g, "dot") != 0) {
		why = "Graphviz has no 'dot' layout engine (its plugin "
		      "configuration is missing or stale: run 'dot -c' as "
		      "root)";
	} else {
		if (gvRenderData(gvc, g, format_names[format], &data, &len) !=
			    0 ||
		    !data)
			why = format == TP_RENDER_SVG
				      ? "Graphviz has no SVG renderer (run 'dot "
					"-c' as root)"
				      : "Graphviz has no cairo renderer for "
					"this format (install graphviz's "
					"libgvplugin-pango / run 'dot -c')";
		else
			tp_strbuf_add(out, data, len);
		if (data)
			gvFreeRenderData(data);
		gvFreeLayout(gvc, g);
	}
	if (gvc && !(o && o->gvc))
		gvFreeContext(gvc);
	if (why) {
		int rc;

		if (warning) {
			tp_strbuf_adds(warning, why);
			tp_strbuf_addf(warning, "; writing DOT instead of %s",
				       format_names[format]);
		}
		rc = agwrite(g, out);
		agclose(g);
		if (rc != 0)
			return tp_error_set(err, TP_EINTERNAL,
					    "Graphviz could not write DOT");
	} else {
		agclose(g);
		if (produced)
			*produced = format;
	}
	if (out->failed)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	return TP_OK;
}
