/*
 * scene.h - what the picture shows, before it becomes a cgraph graph
 * (render's own, and read by the human tables of src/cli/table.c).  A scene is a list of drawn items (devices or
 * collapsed sets of devices, fabrics, NICs, switches), node classes (one
 * cluster box each: a node, or identical nodes collapsed), pipeline
 * stages, and aggregated edges.  Built from (plan, cluster, report) by
 * tp_scene_build, freed by tp_scene_release.  Keeping this separate from
 * cgraph lets the human tables (src/cli/table.c) share the per-device figures and
 * stage list.
 */
#ifndef TP_RENDER_SCENE_H
#define TP_RENDER_SCENE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/report.h"
#include "core/vec.h"
#include "render.h"

/* Per-device figures, from the report or else the plan's summary. */
struct tp_dev_fig {
	double mem, cap, busy; /* bytes, bytes, fraction of the iteration */
	bool has_mem, has_busy;
	bool oom;
};

/* A stage: a distinct device set used by one or more groups. */
struct tp_stage {
	uint32_t dev_first, n_devs; /* sorted, into scene->stage_devs */
	uint32_t grp_first, n_grps; /* into scene->stage_grps */
	uint32_t dp, tp;            /* of its first group */
	bool mixed_degrees;         /* groups disagree on dp/tp, or a group
				       has replicas of different tp */
	char replicas[96];          /* a mixed-tp group's replicas by
				       degree (plan.h tp_plan_degrees_label),
				       "" when none */
	uint32_t op_lo, op_hi;      /* topological positions of its ops */
	int32_t layer_lo, layer_hi; /* -1 when none */
	double flop;                /* forward FLOP per sample of its ops */
};

enum tp_item_kind {
	TP_ITEM_DEVICE,
	TP_ITEM_FABRIC,
	TP_ITEM_NIC,
	TP_ITEM_SWITCH,
	TP_ITEM_OTHER
};

struct tp_item {
	enum tp_item_kind kind;
	uint32_t cls;      /* node class, or TP_NONE outside nodes */
	uint32_t vertex;   /* representative vertex */
	uint32_t device;   /* representative device (DEVICE items) */
	uint32_t count;    /* devices/vertices it stands for */
	uint32_t local_lo, local_hi; /* local indices (DEVICE) in the node */
	uint32_t type;     /* device type (DEVICE) */
	double mem_lo, mem_hi, cap, busy_lo, busy_hi;
	bool has_mem, has_busy, oom;
	uint32_t n_internal;      /* links between its own members */
	double internal_bw;       /* bandwidth of one such link */
	uint32_t stage_mark;      /* scratch */
	bool bottleneck;
	/* FABRIC/NIC items: traffic of the device links to it, when even */
	bool even_traffic;
	double dev_bytes_lo, dev_bytes_hi, dev_busy_hi;
	uint32_t n_dev_edges;
	/* SWITCH items of a collapsed tiered network: the tier (index into
	 * cluster->tiers) whose `count` switches the item stands for, else
	 * TP_NONE */
	uint32_t tier;
};

struct tp_cls {
	uint32_t node_first, n_nodes; /* into scene->cls_nodes */
};

struct tp_sedge {
	uint32_t a, b;  /* items, a < b */
	uint32_t link;  /* representative link */
	uint32_t count; /* links it stands for */
	double bw_lo, bw_hi;
	double bytes_hi; /* per link, per iteration; < 0 unknown */
	double busy_hi;  /* fraction of the iteration; < 0 unknown */
	bool bottleneck;
};

struct tp_scene {
	const struct tp_plan *plan;
	const struct tp_model *model;
	const struct tp_cluster *cluster;
	const struct tp_report *report;
	bool collapsed;
	bool roles_merged; /* collapsed classes ignore stages */
	struct tp_dev_fig *fig;  /* per device */
	double iter_s;           /* 0 when unknown */
	bool feasible_known, feasible;
	TP_VEC(struct tp_stage) stages;
	TP_VEC(uint32_t) stage_devs;
	TP_VEC(uint32_t) stage_grps;
	uint32_t *group_stage;   /* per group */
	uint32_t *dev_stage_first, *dev_stage_n; /* per device, CSR */
	TP_VEC(uint32_t) dev_stages;
	TP_VEC(struct tp_item) items;
	TP_VEC(struct tp_cls) classes;
	TP_VEC(uint32_t) cls_nodes;
	uint32_t *vertex_item;   /* per vertex */
	TP_VEC(struct tp_sedge) edges;
	/* the bottleneck: a device or a link (the other is TP_NONE) */
	uint32_t bn_device, bn_link;
	double bn_fraction;
	uint32_t bn_ties; /* devices within 1% of the busiest one (>= 1) */
	double *link_bytes, *link_busy; /* per link, < 0 unknown */
	double max_link_bytes;
};

/* Build the scene; collapse per o.  TP_EINPUT when the plan refers to
 * devices or ops the cluster or model does not have. */
enum tp_status tp_scene_build(struct tp_scene *s,
			      const struct tp_render_input *in,
			      const struct tp_render_options *o,
			      struct tp_error *err);
void tp_scene_release(struct tp_scene *s);

/* Number formatting shared by the picture and the tables: value with an
 * SI prefix and unit, three significant digits ("61.2 GB", "300 GB/s",
 * "79.2 ms"). */
void tp_render_fmt_si(char *buf, size_t size, double v, const char *unit);

#endif
