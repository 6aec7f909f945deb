/*
 * render.h - a plan's device mapping as a Graphviz graph: DOT text, or
 * SVG/PNG/PDF laid out in-process with gvc.
 *
 * What is drawn (src/render/README has the details and a legend):
 *   - one cluster per node of the topology, holding its devices, its
 *     intra-node fabric (NVSwitch, PCIe bridge) and its NIC;
 *   - devices filled with one colour per device type and labelled with
 *     name, type, memory used / total and busy %;
 *   - one box per pipeline stage (a distinct device set of the plan's
 *     groups: its groups, op and layer range, dp x tp, chunks), joined to
 *     its devices by dashed edges in the stage's colour;
 *   - links labelled with bandwidth and, when a report is given, the bytes
 *     the plan moves over them per iteration (edge width grows with it);
 *   - the bottleneck (the busiest device or link) outlined in red and
 *     named in the title; devices over their memory filled red.
 * Figures come from the report when one is given, else from the plan's
 * summary (which has no per-link traffic); nothing is computed here that
 * the plan or report does not hold.
 *
 * Large clusters: nodes whose devices have the same types and roles
 * (same stages) are drawn once with a count, and identical devices within
 * a node likewise; figures become ranges over the members.
 * TP_COLLAPSE_AUTO does this above collapse_above devices.
 *
 * Ownership: all inputs are borrowed; output is appended to the caller's
 * strbuf.  Errors: TP_EINPUT when the plan does not match the cluster
 * (indices out of range), TP_ENOMEM, TP_EIO from writing files.  A
 * Graphviz installation that cannot lay out (its plugin configuration is
 * missing: `dot -c` writes it) is not an error: DOT is produced instead
 * and a warning says why.
 */
#ifndef TP_RENDER_H
#define TP_RENDER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cluster.h"
#include "core/error.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/report.h"
#include "core/strbuf.h"

enum tp_render_format {
	TP_RENDER_DOT,
	TP_RENDER_SVG,
	TP_RENDER_PNG,
	TP_RENDER_PDF,
	TP_RENDER_FORMAT_COUNT
};

enum tp_render_collapse {
	TP_COLLAPSE_AUTO,   /* collapse above collapse_above devices */
	TP_COLLAPSE_ALWAYS, /* collapse identical nodes/devices always */
	TP_COLLAPSE_NEVER   /* one box per device, whatever the size */
};

/*
 * A Graphviz context (GVC_t) for laying out several pictures in one
 * process.  Graphviz 2.43's pango plugin keeps a pointer into the font
 * table of the context it last measured text for, so creating a second
 * context after freeing the first reads freed memory: a process that
 * renders more than one picture should make one tp_render_gvc and pass
 * it in tp_render_options.gvc.  tp_render_gvc_free(NULL) is a no-op.
 */
struct tp_render_gvc;
struct tp_render_gvc *tp_render_gvc_new(void);
void tp_render_gvc_free(struct tp_render_gvc *g);

struct tp_render_options {
	enum tp_render_collapse collapse;
	uint32_t collapse_above; /* [64] devices */
	uint32_t max_classes;    /* collapsed node classes before roles are
				    merged too [24] */
	const char *title;       /* NULL: "<model> on <topology>" */
	struct tp_render_gvc *gvc; /* NULL: a context per call (fine for
				      one picture per process) */
};

void tp_render_options_default(struct tp_render_options *o);

/*
 * What a picture draws: plan for model on cluster and, when one is at
 * hand, the report of simulating it (NULL: the figures come from the
 * plan's summary when valid).  All borrowed; the functions below take it
 * with the options saying how to draw (NULL: tp_render_options_default).
 */
struct tp_render_input {
	const struct tp_plan *plan;
	const struct tp_model *model;
	const struct tp_cluster *cluster;
	const struct tp_report *report;
};

/* "dot", "svg", "png", "pdf" -> format; -1 when unknown. */
int tp_render_format_parse(const char *name);
/* Format from a file name's extension (case-insensitive); -1 when it has
 * none of the four. */
int tp_render_format_from_path(const char *path);
const char *tp_render_format_name(enum tp_render_format f);

/*
 * Append the DOT text of the picture of in to out.  Deterministic: the
 * same inputs give the same bytes, whatever else the process allocated
 * before (cgraph's object ids are handed out in creation order, not taken
 * from heap addresses).
 */
enum tp_status tp_render_dot(const struct tp_render_input *in,
			     const struct tp_render_options *o,
			     struct tp_strbuf *out, struct tp_error *err);

/*
 * Append the picture in `format` to out (binary for PNG and PDF).  For
 * SVG/PNG/PDF the graph is laid out with Graphviz's dot engine in-process.
 * When Graphviz cannot lay out or has no renderer for the format, out
 * receives DOT instead, *produced says TP_RENDER_DOT and a one-line reason
 * is appended to warning (when non-NULL).  *produced may be NULL.
 */
enum tp_status tp_render_plan(const struct tp_render_input *in,
			      const struct tp_render_options *o,
			      enum tp_render_format format,
			      struct tp_strbuf *out,
			      enum tp_render_format *produced,
			      struct tp_strbuf *warning, struct tp_error *err);

/*
 * Render into the file at path, written atomically (nothing is left on
 * failure); "-" writes DOT to stdout.  format < 0 takes it from path's
 * extension (TP_EUSAGE when it has none of .dot/.svg/.png/.pdf).  When
 * Graphviz cannot produce the format, DOT is written to path with its
 * extension replaced by ".dot", the name written is stored in written
 * (when non-NULL, size written_size) and warning says why.
 */
enum tp_status tp_render_plan_file(const struct tp_render_input *in,
				   const struct tp_render_options *o,
				   const char *path, int format,
				   char *written, size_t written_size,
				   struct tp_strbuf *warning,
				   struct tp_error *err);

/*
 * A picture rendered for a file but not written yet, so that a command
 * can write it together with its other outputs (io.h tp_file_write_set):
 * tp_render_file_init with the path ("-" = stdout) and format (< 0: from
 * the extension), tp_render_plan_prepare renders it into data and sets
 * target to the name to write it to (path, or path with ".dot" when
 * Graphviz could only give DOT, with the warning of tp_render_plan_file),
 * tp_render_file_release frees data.
 */
struct tp_render_file {
	const char *path;
	int format;
	struct tp_strbuf data;
	char target[4096];
};

void tp_render_file_init(struct tp_render_file *f, const char *path,
			 int format);
void tp_render_file_release(struct tp_render_file *f);
enum tp_status tp_render_plan_prepare(const struct tp_render_input *in,
				      const struct tp_render_options *o,
				      struct tp_render_file *f,
				      struct tp_strbuf *warning,
				      struct tp_error *err);

#endif
