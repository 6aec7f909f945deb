/*
 * table.c - human summaries and infeasibility explanations (table.h).
 */
#include "table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/precision.h"
#include "core/runtime.h"
#include "render/render.h"
#include "render/scene.h"

static void si(char *buf, size_t size, double v, const char *unit)
{
	tp_render_fmt_si(buf, size, v, unit);
}

/* Width of the "on" column of the stage table. */
#define ON_WIDTH 30

/* Length of the run of decimal digits that ends s. */
static size_t digit_tail(const char *s)
{
	size_t n = strlen(s), k = 0;

	while (k < n && s[n - 1 - k] >= '0' && s[n - 1 - k] <= '9')
		k++;
	return k;
}

/*
 * The nodes marked in `mark` (one flag per node) as at most ON_WIDTH
 * characters: "node0", "node0, node1", "dgx-a100-0..15 (16 nodes)"
 * (names that differ only in a trailing number), "first .. last (N
 * nodes)", "first ... last" when not contiguous; the node count is never
 * cut off (a long first name is, with "...").
 */
/* `s` into `buf`, cut to fit (snprintf's "%s" would do, but GCC at -O1
 * warns that a 512-byte candidate may not fit a 256-byte label). */
static void put_label(char *buf, size_t size, const char *s)
{
	size_t n = strlen(s);

	if (n >= size)
		n = size - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
}

static void nodes_label(const struct tp_cluster *c, const bool *mark,
			char *buf, size_t size)
{
	uint32_t first = TP_NONE, last = TP_NONE, count = 0;
	const char *a, *b;
	char tail[48], cand[512];
	size_t pa, pb;

	for (uint32_t nd = 0; nd < c->nodes.n; nd++)
		if (mark[nd]) {
			if (first == TP_NONE)
				first = nd;
			last = nd;
			count++;
		}
	if (count == 0) {
		snprintf(buf, size, "-");
		return;
	}
	a = c->nodes.v[first].name;
	b = c->nodes.v[last].name;
	if (count == 1 && strlen(a) <= ON_WIDTH) {
		snprintf(buf, size, "%s", a);
		return;
	}
	/* all the names when they fit: "g12, g7, g8" */
	{
		size_t used = 0;
		bool fits = true;
		cand[0] = '\0';
		for (uint32_t nd = first; nd <= last && fits; nd++) {
			if (!mark[nd])
				continue;
			used += (used ? 2 : 0) + strlen(c->nodes.v[nd].name);
			fits = used <= ON_WIDTH;
			if (fits)
				snprintf(cand + strlen(cand),
					 sizeof(cand) - strlen(cand), "%s%s",
					 cand[0] ? ", " : "",
					 c->nodes.v[nd].name);
		}
		if (fits) {
			put_label(buf, size, cand);
			return;
		}
	}
	snprintf(tail, sizeof(tail), " (%u nodes)", count);
	{
		const char *dots = last - first + 1 == count ? ".." : "...";
		/* same prefix, ascending numbers at the end: "dgx-a100-0..15" */
		pa = strlen(a) - digit_tail(a);
		pb = strlen(b) - digit_tail(b);
		if (pa == pb && pa < strlen(a) && pb < strlen(b) &&
		    strncmp(a, b, pa) == 0 &&
		    strtoull(a + pa, NULL, 10) < strtoull(b + pb, NULL, 10))
			snprintf(cand, sizeof(cand), "%s%s%s%s", a, dots,
				 b + pb, tail);
		else
			snprintf(cand, sizeof(cand), "%s %s %s%s", a, dots, b,
				 tail);
	}
	if (strlen(cand) <= ON_WIDTH) {
		put_label(buf, size, cand);
		return;
	}
	/* the first name and how many more, the name cut when it must be
	 * ("v100-nvlink-0 and 2 more"; the cut "v100-nvlink-0 .. ... (3
	 * nodes)" read as nonsense) */
	{
		char more[32];
		int room;
		snprintf(more, sizeof(more), " and %u more", count - 1);
		room = ON_WIDTH - (int)strlen(more);
		if ((int)strlen(a) <= room)
			snprintf(buf, size, "%s%s", a, more);
		else
			snprintf(buf, size, "%.*s...%s", room - 3 > 1 ? room - 3 : 1,
				 a, more);
	}
}

/* The layers of the ops of groups grps[0..n) of p as ranges in order,
 * merged where contiguous, into buf of at most 7 characters: "4-7",
 * "0-1,8-9", else the first range and how many more ("0-3,+5", an
 * interleaved stage of six chunks; it printed the span "0-83"), else
 * "6 parts"; "-" without layers. */
static void layers_label(const struct tp_plan *p, const struct tp_model *m,
			 const uint32_t *grps, uint32_t n, char *buf,
			 size_t size)
{
	int32_t lo[64], hi[64];
	uint32_t nr = 0, total = 0;
	char cand[96];

	for (uint32_t i = 0; i < n; i++) {
		const struct tp_plan_group *gr = &p->groups.v[grps[i]];
		const uint32_t *ops = tp_plan_group_ops(p, grps[i]);
		int32_t a = -1, b = -1;
		for (uint32_t k = 0; k < gr->n_ops; k++) {
			int32_t l = m->ops.v[ops[k]].layer;
			if (l < 0)
				continue;
			if (a < 0 || l < a)
				a = l;
			if (l > b)
				b = l;
		}
		if (a < 0)
			continue;
		if (nr && a <= hi[nr - 1] + 1 && b >= lo[nr - 1] - 1) {
			if (a < lo[nr - 1])
				lo[nr - 1] = a;
			if (b > hi[nr - 1])
				hi[nr - 1] = b;
		} else if (nr < 64) {
			lo[nr] = a;
			hi[nr] = b;
			nr++;
		}
		total++;
	}
	(void)total;
	if (!nr) {
		snprintf(buf, size, "-");
		return;
	}
	cand[0] = '\0';
	for (uint32_t r = 0; r < nr; r++) {
		size_t u = strlen(cand);
		if (lo[r] == hi[r])
			snprintf(cand + u, sizeof(cand) - u, "%s%d",
				 r ? "," : "", lo[r]);
		else
			snprintf(cand + u, sizeof(cand) - u, "%s%d-%d",
				 r ? "," : "", lo[r], hi[r]);
	}
	if (strlen(cand) <= 7) {
		put_label(buf, size, cand);
		return;
	}
	if (lo[0] == hi[0])
		snprintf(cand, sizeof(cand), "%d,+%u", lo[0], nr - 1);
	else
		snprintf(cand, sizeof(cand), "%d-%d,+%u", lo[0], hi[0], nr - 1);
	if (strlen(cand) > 7)
		snprintf(cand, sizeof(cand), "%u parts", nr);
	put_label(buf, size, cand);
}

/* Peak FLOP/s of a device type for the model's dtype, as the simulator
 * takes it (sim.c: the dtype's, else fp32's, else 1e12). */
static double type_peak(const struct tp_cluster *c, uint32_t t,
			enum tp_dtype dt)
{
	double pk = tp_precision_gemm_peak(&c->types.v[t], dt);

	return pk > 0 ? pk : 1e12;
}


/* (table.h) */
void tp_cli_mem_percent(char *buf, size_t size, double pct)
{
	if (pct >= 99.5 && pct < 100)
		snprintf(buf, size, "%.1f%%", floor(pct * 10) / 10);
	else if (pct > 100 && pct < 100.5)
		snprintf(buf, size, "%.1f%%", ceil(pct * 10) / 10);
	else
		snprintf(buf, size, "%.0f%%", pct);
}
/* "v100-nvlink-0/gpu1", "node3/nic", "switch2": the readable name of a
 * link's end. */
static void end_name(const struct tp_cluster *c, uint32_t v, char *buf,
		     size_t size)
{
	uint32_t sw = 0;

	for (uint32_t d = 0; d < c->devices.n; d++)
		if (c->devices.v[d].vertex == v) {
			snprintf(buf, size, "%s", c->devices.v[d].name);
			return;
		}
	for (uint32_t k = 0; k < c->nodes.n; k++) {
		if (c->nodes.v[k].fabric_vertex == v) {
			snprintf(buf, size, "%s/fabric", c->nodes.v[k].name);
			return;
		}
		if (tp_node_is_nic(&c->nodes.v[k], v)) {
			tp_node_nic_name(&c->nodes.v[k], v, buf, size);
			return;
		}
	}
	for (uint32_t u = 0; u < v && u < c->vertex_kind.n; u++)
		sw += c->vertex_kind.v[u] == TP_VERTEX_SWITCH;
	snprintf(buf, size, "switch%u", sw);
}

static void pct_range(char *buf, size_t size, double lo, double hi)
{
	long a = lround(100 * lo), b = lround(100 * hi);
	if (a == b)
		snprintf(buf, size, "%ld%%", a);
	else
		snprintf(buf, size, "%ld-%ld%%", a, b);
}

/* Stage rows shown at most; more stages are merged (runs of the same
 * shape), then cut with a "... more" line. */
#define MAX_STAGE_ROWS 16

/* Same shape: device count and degrees (what a row shows). */
static bool same_shape(const struct tp_stage *x, const struct tp_stage *y)
{
	return x->n_devs == y->n_devs && x->dp == y->dp && x->tp == y->tp &&
	       x->mixed_degrees == y->mixed_degrees;
}

/* The stage (or placement) rows: runs of stages of one shape share a row
 * when there are many. */
static enum tp_status stage_rows(const struct tp_scene *s,
				 const struct tp_plan *p,
				 const struct tp_model *m,
				 const struct tp_cluster *c,
				 struct tp_strbuf *out, struct tp_error *err)
{
	char buf[256], a[64];
	bool *mark;
	bool merge = s->stages.n > MAX_STAGE_ROWS, placements = false;
	size_t rows = 0, k = 0, more_stages = 0;
	uint64_t more_devs = 0;
	const char *kind;

	mark = calloc(c->nodes.n ? c->nodes.n : 1, sizeof(*mark));
	if (!mark)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	/* device sets that overlap are placements, as the picture calls
	 * them (render.c), not pipeline stages */
	for (size_t d = 0; d < c->devices.n; d++)
		if (s->dev_stage_n[d] > 1)
			placements = true;
	kind = placements ? "placement" : "stage";

	/* per stage (runs of stages of one shape when there are many) */
	tp_strbuf_addf(out, "%-9s %5s %-*s %-9s %-7s %6s %s\n", kind,
		       "devices", ON_WIDTH, "on",
		       p->groups.n && p->groups.v[0].cp > 1 ? "dp x cp x tp"
							    : "dp x tp",
		       "layers", "FLOP", "busy");
	while (k < s->stages.n) {
		size_t k2 = k + 1;
		const struct tp_stage *stg = &s->stages.v[k];
		double lo = 1e300, hi = -1, flop = 0;
		int32_t llo = -1, lhi = -1;
		uint64_t ndev = 0;
		bool busy = true;
		char deg[24], lay[24], idx[48];

		while (merge && k2 < s->stages.n &&
		       same_shape(stg, &s->stages.v[k2]))
			k2++;
		if (rows == MAX_STAGE_ROWS - 1 && k2 < s->stages.n) {
			for (size_t q = k; q < s->stages.n; q++) {
				more_stages++;
				more_devs += s->stages.v[q].n_devs;
			}
			break;
		}
		memset(mark, 0, c->nodes.n * sizeof(*mark));
		for (size_t q = k; q < k2; q++) {
			const struct tp_stage *sq = &s->stages.v[q];
			const uint32_t *devs = s->stage_devs.v + sq->dev_first;
			for (uint32_t i = 0; i < sq->n_devs; i++) {
				const struct tp_dev_fig *f = &s->fig[devs[i]];
				mark[c->devices.v[devs[i]].node] = true;
				if (!f->has_busy)
					busy = false;
				lo = fmin(lo, f->busy);
				hi = fmax(hi, f->busy);
			}
			ndev += sq->n_devs;
			flop += sq->flop;
			if (sq->layer_lo >= 0) {
				if (llo < 0 || sq->layer_lo < llo)
					llo = sq->layer_lo;
				if (sq->layer_hi > lhi)
					lhi = sq->layer_hi;
			}
		}
		nodes_label(c, mark, buf, sizeof(buf));
		if (stg->mixed_degrees)
			snprintf(deg, sizeof(deg), "mixed");
		else if (p->groups.v[0].cp > 1)
			snprintf(deg, sizeof(deg), "%u x %u x %u", stg->dp,
				 p->groups.v[0].cp, stg->tp);
		else
			snprintf(deg, sizeof(deg), "%u x %u", stg->dp, stg->tp);
		if (k2 - k == 1)
			layers_label(p, m, s->stage_grps.v + stg->grp_first,
				     stg->n_grps, lay, sizeof(lay));
		else if (llo < 0)
			snprintf(lay, sizeof(lay), "-");
		else if (llo == lhi)
			snprintf(lay, sizeof(lay), "%d", llo);
		else
			snprintf(lay, sizeof(lay), "%d-%d", llo, lhi);
		if (busy && ndev)
			pct_range(a, sizeof(a), lo, hi);
		else
			snprintf(a, sizeof(a), "-");
		if (k2 - k > 1)
			snprintf(idx, sizeof(idx), "%zu-%zu", k, k2 - 1);
		else
			snprintf(idx, sizeof(idx), "%zu", k);
		tp_strbuf_addf(out, "%9s %5llu %-*s %-9s %-7s %5.1f%% %s\n", idx,
			       (unsigned long long)ndev, ON_WIDTH, buf, deg,
			       lay,
			       m->total_flop > 0 ? 100 * flop / m->total_flop
						 : 0.0,
			       a);
		rows++;
		k = k2;
	}
	if (more_stages)
		tp_strbuf_addf(out, "%9s ... %zu more %ss on %llu devices\n",
			       "", more_stages, kind,
			       (unsigned long long)more_devs);
	free(mark);

	return TP_OK;
}

/* One row per device type: count, busy range, the fullest device. */
static void type_rows(const struct tp_scene *s, const struct tp_cluster *c,
		      struct tp_strbuf *out)
{
	char buf[256], a[64], b[64];

	/* per device type */
	tp_strbuf_addf(out, "%-24s %7s %-9s %s\n", "device type", "count",
		       "busy", "peak memory / capacity");
	for (size_t t = 0; t < c->types.n; t++) {
		double blo = 1e300, bhi = -1, mhi = -1, cap = 0;
		uint32_t n = 0;
		bool has_b = true, has_m = true;

		for (size_t d = 0; d < c->devices.n; d++) {
			const struct tp_dev_fig *f = &s->fig[d];
			if (c->devices.v[d].type != t)
				continue;
			n++;
			has_b = has_b && f->has_busy;
			has_m = has_m && f->has_mem;
			blo = fmin(blo, f->busy);
			bhi = fmax(bhi, f->busy);
			if (f->mem > mhi) {
				mhi = f->mem;
				cap = f->cap;
			}
			if (mhi < 0 || cap == 0)
				cap = f->cap;
		}
		if (!n)
			continue;
		if (has_b)
			pct_range(a, sizeof(a), blo, bhi);
		else
			snprintf(a, sizeof(a), "-");
		si(b, sizeof(b), cap, "B");
		if (has_m) {
			char mm[32], pc[16];
			si(mm, sizeof(mm), mhi, "B");
			tp_cli_mem_percent(pc, sizeof(pc),
				    cap > 0 ? 100 * mhi / cap : 0);
			snprintf(buf, sizeof(buf), "%s / %s (%s)", mm, b, pc);
		} else {
			snprintf(buf, sizeof(buf), "- / %s", b);
		}
		tp_strbuf_addf(out, "%-24.24s %7u %-9s %s\n",
			       c->types.v[t].name, n, a, buf);
	}

}

/* The headline figures (iteration, throughput, TFLOP/s, MFU over the
 * devices used and the cluster, bubble) and the busiest device or link. */
static void headline(const struct tp_scene *s, const struct tp_plan *p,
		     const struct tp_model *m, const struct tp_cluster *c,
		     const struct tp_report *r, struct tp_strbuf *out)
{
	char a[64], b[64];
	double used_peak = 0, all_peak = 0;
	uint32_t n_used = 0;

	/* headline */
	if (r || p->summary.valid) {
		const struct tp_plan_summary *sm = &p->summary;
		double it = r ? r->iteration_time_s : sm->iteration_time_s;
		double th = r ? r->throughput_samples_per_s
			      : sm->throughput_samples_per_s;
		double tok = r ? r->tokens_per_s : sm->tokens_per_s;
		double tf = r ? r->tflops_per_device : sm->tflops_per_device;
		double mfu = r ? r->mfu : sm->mfu;
		struct tp_strbuf line;

		tp_strbuf_init(&line);
		si(a, sizeof(a), it, "s");
		si(b, sizeof(b), th, "samples/s");
		tp_strbuf_addf(out, "iteration %s, %s", a, b);
		if (tok > 0) {
			si(a, sizeof(a), tok, "tokens/s");
			tp_strbuf_addf(out, ", %s", a);
		}
		/* MFU over the devices the plan uses (the simulator's) and
		   over the whole cluster (64 idle GPUs showed the same MFU) */
		for (size_t d = 0; d < c->devices.n; d++) {
			double pk = type_peak(c, c->devices.v[d].type, m->dtype);
			all_peak += pk;
			if (s->dev_stage_n[d] > 0) {
				used_peak += pk;
				n_used++;
			}
		}
		tp_strbuf_addc(out, '\n');
		if (n_used < c->devices.n && all_peak > 0)
			tp_strbuf_addf(&line,
				       "%.1f TFLOP/s per device used, MFU "
				       "%.1f%% of the %u device%s used, %.1f%% "
				       "of all %zu",
				       tf, 100 * mfu, n_used,
				       n_used == 1 ? "" : "s",
				       100 * mfu *
					       (r && r->speed_all > 0
							? r->speed_used /
								  r->speed_all
							: used_peak / all_peak),
				       c->devices.n);
		else
			tp_strbuf_addf(&line,
				       "%.1f TFLOP/s per device, MFU %.1f%% "
				       "(all %zu device%s used)",
				       tf, 100 * mfu, c->devices.n,
				       c->devices.n == 1 ? "" : "s");
		if (r && r->bubble_fraction > 0)
			tp_strbuf_addf(&line, ", bubble %.0f%%",
				       100 * r->bubble_fraction);
		/* fewer micro-batches than stages, said with the batch
		   they come from: Llama-2-70B's 256 samples on 8,192 H100
		   left 4 micro-batches to 14 stages, bubble 75%, and
		   nothing said why */
		if (r && r->bubble_fraction >= 0.25 && s->stages.n > 1 &&
		    p->micro_batches < s->stages.n && p->global_batch > 0)
			tp_strbuf_addf(&line,
				       " (%u micro-batch%s for %zu pipeline "
				       "stages, from a global batch of %lld "
				       "samples)",
				       p->micro_batches,
				       p->micro_batches == 1 ? "" : "es",
				       s->stages.n,
				       (long long)p->global_batch);
		tp_strbuf_addc(&line, '\n');
		/* a precision fallback is never silent (core/precision.h) */
		if ((r ? r->precision : sm->precision)[0])
			tp_strbuf_addf(&line, "precision: %s\n",
				       r ? r->precision : sm->precision);
		/* where the figures come from (the uncertainty) */
		{
			char basis[512];
			tp_report_basis_describe(r ? &r->basis : &sm->basis,
						 basis, sizeof(basis));
			if (basis[0])
				tp_strbuf_addf(&line, "figures: %s\n", basis);
		}
		tp_render_wrap(out, tp_strbuf_cstr(&line), 80);
		tp_strbuf_release(&line);
	}
	if (s->bn_device != TP_NONE)
		tp_strbuf_addf(out, "busiest: device %s, computing %.0f%% of "
				    "the iteration\n",
			       c->devices.v[s->bn_device].name,
			       100 * s->bn_fraction);
	else if (s->bn_link != TP_NONE) {
		const struct tp_link *l = &c->links.v[s->bn_link];
		char ea[300], eb[300];
		si(a, sizeof(a), l->bw_Bps, "B/s");
		end_name(c, l->a, ea, sizeof(ea));
		end_name(c, l->b, eb, sizeof(eb));
		struct tp_strbuf line;
		tp_strbuf_init(&line);
		tp_strbuf_addf(&line, "busiest: link %s -- %s (%s, %s), busy "
				      "%.0f%% of the iteration\n",
			       ea, eb, tp_link_kind_name(l->kind), a,
			       100 * s->bn_fraction);
		tp_render_wrap(out, tp_strbuf_cstr(&line), 80);
		tp_strbuf_release(&line);
	}
}

enum tp_status tp_cli_table(const struct tp_plan *p,
			       const struct tp_model *m,
			       const struct tp_cluster *c,
			       const struct tp_report *r,
			       struct tp_strbuf *out, struct tp_error *err)
{
	struct tp_render_options o;
	struct tp_scene s;
	enum tp_status st;

	tp_render_options_default(&o);
	o.collapse = TP_COLLAPSE_NEVER;
	if ((st = tp_scene_build(&s, &(struct tp_render_input){p, m, c, r}, &o,
				     err)) != TP_OK)
		return st;
	st = stage_rows(&s, p, m, c, out, err);
	if (!st) {
		type_rows(&s, c, out);
		headline(&s, p, m, c, r, out);
	}
	tp_scene_release(&s);
	if (!st && out->failed)
		st = tp_error_set(err, TP_ENOMEM, "out of memory");
	return st;
}

/* ---- explanation ---- */

enum cand_kind {
	CAND_ZERO1,
	CAND_ZERO2,
	CAND_SELECTIVE,
	CAND_MICRO,
	CAND_FULL,
	CAND_ZERO3,
	CAND_DEVICES,
	CAND_COUNT
};

struct cand {
	bool applicable;
	double saves; /* bytes saved on the worst device: estimated, or
			 simulated when saves_simulated */
	bool simulated, fits, saves_simulated;
	bool refused; /* the runtime cannot run it: why says what */
	char why[160];
	double iter_s, worst_over;
	uint32_t worst_dev; /* where a simulated variant is still over */
	char what[160];
};

static const char *const term_names[] = {"weights",     "gradients",
					 "optimizer states",
					 "activations", "temporary buffers",
					 "runtime reserve"};

/* What recomputation drops on the worst device, as fractions of its
 * saved activations (the report's activations are those bytes for the
 * micro-batches it holds at its peak). */
struct recompute_share {
	double sel, full;           /* dropped by selective, by full */
	double work_sel, work_full; /* re-materialised at once during a
				       backward: the largest layer's dropped
				       bytes (for one micro-batch) */
	bool has_layers, has_sel;   /* ops in layers; ops selective
				       recomputation recomputes */
};

/* The activation bytes per sample op o keeps for its backward, as the
 * simulator counts them (src/sim/cost.c op_saved_bytes): none for an
 * attention core under fused attention (FlashAttention keeps only the
 * softmax statistics), so selective recomputation, which drops the
 * attention scores, drops nothing there. */
static double op_saved(const struct tp_op *op, bool fused_attention)
{
	return fused_attention && op->kind == TP_OP_ATTENTION
		       ? 0
		       : op->saved_bytes;
}

/* *sh for the ops of the worst device dev's groups, in the simulator's
 * accounting (src/sim/cost.c layer_op and lane_costs): full
 * recomputation keeps what enters each layer from outside it (each
 * producer's edge once) and what ops outside layers keep, and its
 * backward re-materialises the largest layer; selective keeps all but
 * the selective ops' bytes and re-materialises the largest layer's of
 * those.  Per-sample bytes, before tensor-parallel division (the
 * fractions are the same).  False when out of memory. */
static bool recompute_shares(const struct tp_plan *p, const struct tp_model *m,
			     uint32_t dev, bool fused_attention,
			     struct recompute_share *sh)
{
	double saved = 0, selb = 0, keep = 0, *lay_all, *lay_sel;
	size_t n_lay = 1;
	bool *counted;
	uint32_t *group_of; /* per op: its group + 1 (every op has one) */

	memset(sh, 0, sizeof(*sh));
	for (size_t i = 0; i < m->ops.n; i++)
		if (m->ops.v[i].layer >= 0 &&
		    (size_t)m->ops.v[i].layer + 1 > n_lay)
			n_lay = (size_t)m->ops.v[i].layer + 1;
	lay_all = calloc(2 * n_lay, sizeof(double));
	counted = calloc(m->ops.n ? m->ops.n : 1, sizeof(bool));
	group_of = calloc(m->ops.n ? m->ops.n : 1, sizeof(uint32_t));
	if (!lay_all || !counted || !group_of) {
		free(lay_all);
		free(counted);
		free(group_of);
		return false;
	}
	lay_sel = lay_all + n_lay;
	for (size_t g = 0; g < p->groups.n; g++) {
		const uint32_t *ops = tp_plan_group_ops(p, (uint32_t)g);

		for (uint32_t i = 0; i < p->groups.v[g].n_ops; i++)
			group_of[ops[i]] = (uint32_t)g + 1;
	}
	for (size_t g = 0; g < p->groups.n; g++) {
		const struct tp_plan_group *gr = &p->groups.v[g];
		const uint32_t *devs = tp_plan_group_devs(p, (uint32_t)g);
		const uint32_t *ops = tp_plan_group_ops(p, (uint32_t)g);
		bool on = false;

		for (uint32_t i = 0; i < gr->n_devices && !on; i++)
			on = devs[i] == dev;
		if (!on)
			continue;
		for (uint32_t i = 0; i < gr->n_ops; i++) {
			const struct tp_op *op = &m->ops.v[ops[i]];
			const uint32_t *in = tp_model_in_edges(m, ops[i]);
			double sb = op_saved(op, fused_attention);

			saved += sb;
			if (op->selective_recompute) {
				selb += sb;
				sh->has_sel = true;
			}
			if (op->layer < 0) {
				keep += sb;
				continue;
			}
			sh->has_layers = true;
			lay_all[op->layer] += sb;
			if (op->selective_recompute)
				lay_sel[op->layer] += sb;
			/* what enters the layer from another layer or
			   another group, once per producer */
			for (uint32_t e = 0; e < op->n_in; e++) {
				const struct tp_edge *ed = &m->edges.v[in[e]];
				bool same_group = group_of[ed->src] == g + 1;

				if ((m->ops.v[ed->src].layer == op->layer &&
				     same_group) ||
				    counted[ed->src])
					continue;
				counted[ed->src] = true;
				keep += ed->bytes;
			}
		}
	}
	for (size_t l = 0; l < n_lay && saved > 0; l++) {
		sh->work_full = fmax(sh->work_full, lay_all[l] / saved);
		sh->work_sel = fmax(sh->work_sel, lay_sel[l] / saved);
	}
	if (saved > 0) {
		sh->sel = selb / saved;
		sh->full = fmax(0, 1 - keep / saved);
	}
	free(lay_all);
	free(counted);
	free(group_of);
	return true;
}

/* The micro-batches whose activations the worst device w holds at its
 * peak, which the report's activations are: all of them under GPipe;
 * else one without a pipeline (every group on w), and under 1F1B (and,
 * approximately, interleaved and zero-bubble schedules) as many as the
 * pipeline has stages, which the first stage holds (the most; counted
 * as the groups, an upper bound). */
static double held_micro_batches(const struct tp_plan *p, uint32_t w)
{
	double groups = (double)p->groups.n, m = p->micro_batches;
	bool pipelined = false;

	if (p->schedule == TP_SCHEDULE_GPIPE)
		return m > 0 ? m : 1;
	for (size_t g = 0; g < p->groups.n && !pipelined; g++) {
		const uint32_t *devs = tp_plan_group_devs(p, (uint32_t)g);
		bool on = false;

		for (uint32_t i = 0; i < p->groups.v[g].n_devices && !on; i++)
			on = devs[i] == w;
		pipelined = !on;
	}
	if (!pipelined)
		return 1;
	return fmax(1, fmin(m, groups));
}

/* Whether device d is over its capacity in r (the worst device w is). */
static bool over_capacity(const struct tp_report *r, uint32_t w, uint32_t d)
{
	return d == w ||
	       (d < r->n_devices && r->devices[d].peak_memory_bytes >
					    r->devices[d].capacity_bytes);
}

/* Recomputation rc on every group with a device over its capacity in r
 * (the worst device w's and, with per-stage groups, the other stages
 * that do not fit either); groups that fit keep theirs. */
static void apply_recompute(struct tp_plan *v, const struct tp_report *r,
			    uint32_t w, enum tp_recompute rc)
{
	for (size_t g = 0; g < v->groups.n; g++) {
		const uint32_t *devs = tp_plan_group_devs(v, (uint32_t)g);
		for (uint32_t i = 0; i < v->groups.v[g].n_devices; i++)
			if (over_capacity(r, w, devs[i]) &&
			    v->groups.v[g].recompute < rc) {
				v->groups.v[g].recompute = rc;
				break;
			}
	}
}

/* A figure whose number and unit the wrapping keeps together: spaces
 * become NB (wrap_lines prints them as spaces). */
#define NB TP_RENDER_NB
static void si_nb(char *buf, size_t size, double v, const char *unit)
{
	tp_render_fmt_si(buf, size, v, unit);
	for (char *q = buf; *q; q++)
		if (*q == ' ')
			*q = NB;
}

/* What the explanation of a plan that does not fit works from: the worst
 * device's figures and the candidate changes. */
struct explain {
	const struct tp_plan *p;
	const struct tp_cluster *c;
	uint32_t w; /* the worst device */
	const struct tp_report *r;
	const struct tp_report_device *rd;
	const struct tp_memory_breakdown *bd;
	double terms[6], total, over;
	uint32_t dpw; /* the worst device's data-parallel degree */
	uint32_t cpw; /* its context-parallel degree: ZeRO shards over
			 dpw x cpw, the ranks that hold the same weights */
	enum tp_recompute cur_rc;
	bool fused_attention; /* the runtime's (tp_explain_sim) */
	struct cand cand[CAND_COUNT];
};

/* "does not fit: DEVICE (TYPE) needs X of Y, Z too much" and the memory
 * terms, the dominant one marked. */
static void explain_memory(struct explain *E, struct tp_strbuf *out)
{
	const struct tp_memory_breakdown *bd = E->bd;
	const struct tp_cluster *c = E->c;
	const char *sep = " ";
	uint32_t dom = 0;
	char a[48], b[48], cc[48];

	E->terms[0] = bd->weights;
	E->terms[1] = bd->gradients;
	E->terms[2] = bd->optimizer;
	E->terms[3] = bd->activations;
	E->terms[4] = bd->temporary;
	E->terms[5] = bd->reserved;
	for (int i = 0; i < 6; i++) {
		E->total += E->terms[i];
		if (E->terms[i] > E->terms[dom])
			dom = (uint32_t)i;
	}
	si_nb(a, sizeof(a), E->rd->peak_memory_bytes, "B");
	si_nb(b, sizeof(b), E->rd->capacity_bytes, "B");
	si_nb(cc, sizeof(cc), E->over, "B");
	tp_strbuf_addf(out, "does not fit: %s (%s) needs %s of %s, %s too "
			    "much\n",
		       c->devices.v[E->w].name,
		       c->types.v[c->devices.v[E->w].type].name, a, b, cc);
	tp_strbuf_adds(out, "  memory:");
	for (int i = 0; i < 6; i++) {
		if (E->terms[i] <= 0)
			continue;
		si_nb(a, sizeof(a), E->terms[i], "B");
		tp_strbuf_addf(out, "%s%s %s%s", sep, term_names[i], a,
			       (uint32_t)i == dom ? " (dominant)" : "");
		sep = ", ";
	}
	tp_strbuf_addc(out, '\n');
	/* the simulator's reason says the same (and is in the report) */
}

/* The ZeRO stages above the plan's, each sharding more over the ranks
 * that hold the worst device's weights: its data-parallel replicas and,
 * under context parallelism, their context ranks (dp x cp, as the
 * simulator shards: src/sim/README section 5). */
static void zero_candidates(struct explain *E)
{
	const struct tp_plan *p = E->p;
	const struct tp_memory_breakdown *bd = E->bd;
	struct cand *cand = E->cand;
	uint32_t n = E->dpw * E->cpw;
	double shard = n > 1 ? 1 - 1.0 / n : 0;
	char over[48];

	if (E->cpw > 1)
		snprintf(over, sizeof(over), "dp=%u x cp=%u", E->dpw, E->cpw);
	else
		snprintf(over, sizeof(over), "dp=%u", E->dpw);
	if (p->zero < 1 && n > 1) {
		cand[CAND_ZERO1].applicable = true;
		cand[CAND_ZERO1].saves = bd->optimizer * shard;
		snprintf(cand[CAND_ZERO1].what, sizeof(cand[0].what),
			 "ZeRO-1 (shard optimizer states over %s)", over);
	}
	if (p->zero < 2 && n > 1) {
		cand[CAND_ZERO2].applicable = true;
		cand[CAND_ZERO2].saves =
			(bd->gradients + (p->zero < 1 ? bd->optimizer : 0)) *
			shard;
		snprintf(cand[CAND_ZERO2].what, sizeof(cand[0].what),
			 "ZeRO-2 (shard optimizer states and gradients "
			 "over %s)",
			 over);
	}
	if (p->zero < 3 && n > 1) {
		cand[CAND_ZERO3].applicable = true;
		cand[CAND_ZERO3].saves =
			(bd->weights + (p->zero < 2 ? bd->gradients : 0) +
			 (p->zero < 1 ? bd->optimizer : 0)) *
			shard;
		snprintf(cand[CAND_ZERO3].what, sizeof(cand[0].what),
			 "ZeRO-3 (shard weights too over %s)", over);
	}
}

/* Every change considered, with the bytes it is estimated to save on the
 * worst device: ZeRO, recomputation, a smaller micro-batch, more
 * devices for the model states. */
static void list_candidates(struct explain *E, const struct tp_model *m)
{
	const struct tp_plan *p = E->p;
	const struct tp_memory_breakdown *bd = E->bd;
	struct cand *cand = E->cand;
	double states, rest, room, held;
	struct recompute_share sh;

	/* the worst device's data-parallel degree and recomputation */
	for (size_t g = 0; g < p->groups.n; g++) {
		const uint32_t *devs = tp_plan_group_devs(p, (uint32_t)g);
		for (uint32_t i = 0; i < p->groups.v[g].n_devices; i++)
			if (devs[i] == E->w) {
				if (p->groups.v[g].dp > E->dpw)
					E->dpw = p->groups.v[g].dp;
				if (p->groups.v[g].cp > E->cpw)
					E->cpw = p->groups.v[g].cp;
				if (p->groups.v[g].recompute > E->cur_rc)
					E->cur_rc = p->groups.v[g].recompute;
			}
	}
	/* out of memory: no recomputation candidates (sh stays zero) */
	if (!recompute_shares(p, m, E->w, E->fused_attention, &sh))
		memset(&sh, 0, sizeof(sh));
	held = held_micro_batches(p, E->w);
	memset(cand, 0, sizeof(E->cand));
	zero_candidates(E);
	/* the saving: the dropped share of the held micro-batches, less
	   the layer the backward re-materialises (one micro-batch's) on top
	   of what is kept.  Listed under fused attention too, saving
	   nothing: what users reach for first, and the line says it does
	   not help */
	if (E->cur_rc < TP_RECOMPUTE_SELECTIVE && sh.has_sel) {
		cand[CAND_SELECTIVE].applicable = true;
		cand[CAND_SELECTIVE].saves =
			fmax(0, bd->activations * (sh.sel - sh.work_sel / held));
		snprintf(cand[CAND_SELECTIVE].what, sizeof(cand[0].what),
			 "selective recomputation");
	}
	if (E->cur_rc < TP_RECOMPUTE_FULL && sh.has_layers && sh.full > 0) {
		cand[CAND_FULL].applicable = true;
		cand[CAND_FULL].saves = fmax(
			0, bd->activations * (sh.full - sh.work_full / held));
		snprintf(cand[CAND_FULL].what, sizeof(cand[0].what),
			 "full recomputation (keep only layer inputs)");
	}
	if (p->global_batch % (2 * (int64_t)p->micro_batches) == 0 &&
	    p->global_batch / (2 * (int64_t)p->micro_batches) >= E->dpw) {
		cand[CAND_MICRO].applicable = true;
		cand[CAND_MICRO].saves = bd->activations / 2;
		snprintf(cand[CAND_MICRO].what, sizeof(cand[0].what),
			 "half the micro-batch size (%u micro-batches "
			 "instead of %u)",
			 2 * p->micro_batches, p->micro_batches);
	}
	/* devices of this type needed if the model states were spread over
	 * more of them: ceil(states / (capacity - the rest)) */
	states = bd->weights + bd->gradients + bd->optimizer;
	rest = E->total - states;
	room = E->rd->capacity_bytes - rest;
	cand[CAND_DEVICES].applicable = states > 0;
	cand[CAND_DEVICES].saves = states / 2;
	if (room > 0 && states > 0) {
		double factor = ceil(states / room);
		if (factor < 2)
			factor = 2;
		cand[CAND_DEVICES].saves = states * (1 - 1 / factor);
		snprintf(cand[CAND_DEVICES].what, sizeof(cand[0].what),
			 "%.0fx the devices for the model states (more "
			 "pipeline stages or a higher tensor-parallel "
			 "degree)",
			 factor);
	} else {
		snprintf(cand[CAND_DEVICES].what, sizeof(cand[0].what),
			 "more devices (activations and buffers alone "
			 "exceed the capacity: lower the micro-batch "
			 "too)");
	}
}

/* The variant of the plan that candidate k describes. */
static void apply_candidate(struct tp_plan *v, int k,
			    const struct tp_report *r, uint32_t w)
{
	switch (k) {
	case CAND_ZERO1:
		v->zero = 1;
		break;
	case CAND_ZERO2:
		v->zero = 2;
		break;
	case CAND_ZERO3:
		v->zero = 3;
		break;
	case CAND_SELECTIVE:
		apply_recompute(v, r, w, TP_RECOMPUTE_SELECTIVE);
		break;
	case CAND_FULL:
		apply_recompute(v, r, w, TP_RECOMPUTE_FULL);
		break;
	case CAND_MICRO:
		v->micro_batches *= 2;
		break;
	default:
		break;
	}
}

/* Mark the candidates the runtime rt cannot run (tp_runtime_plan_check
 * of the variant: ZeRO-2 or -3 under megatron-core, whose distributed
 * optimizer is ZeRO-1).  Nothing when the plan itself is one rt cannot
 * run (every variant would be refused for that). */
static void refuse_candidates(struct explain *E, const struct tp_model *m,
			      const struct tp_runtime *rt)
{
	if (!rt ||
	    tp_runtime_plan_check(rt, E->p, m, E->c, NULL, NULL, 0) != 0)
		return;
	for (int k = 0; k < CAND_COUNT; k++) {
		struct cand *ck = &E->cand[k];
		struct tp_plan v;
		struct tp_error verr;

		if (!ck->applicable || k == CAND_DEVICES)
			continue;
		tp_plan_init(&v);
		if (tp_plan_copy(&v, E->p, &verr) == TP_OK) {
			apply_candidate(&v, k, E->r, E->w);
			ck->refused = tp_runtime_plan_check(rt, &v, m, E->c,
							    NULL, ck->why,
							    sizeof(ck->why)) !=
				      0;
		}
		tp_plan_release(&v);
	}
}

/* Confirm by simulation each candidate a variant plan can express: does
 * it fit, how fast, and where it is still over when not. */
static void simulate_candidates(struct explain *E,
				const struct tp_explain_sim *how)
{
	for (int k = 0; k < CAND_COUNT; k++) {
		struct cand *ck = &E->cand[k];
		struct tp_plan v;
		struct tp_report vr;
		struct tp_error verr;

		if (!ck->applicable || ck->refused || k == CAND_DEVICES)
			continue;
		tp_plan_init(&v);
		tp_report_init(&vr);
		if (tp_plan_copy(&v, E->p, &verr) != TP_OK) {
			tp_plan_release(&v);
			continue;
		}
		apply_candidate(&v, k, E->r, E->w);
		if (how->eval(how->ctx, &v, &vr, &verr) == TP_OK) {
			ck->simulated = true;
			ck->fits = vr.feasible;
			ck->iter_s = vr.iteration_time_s;
			/* the saving as the simulator prices it under the
			   plan's runtime (fused attention keeps no
			   quadratic activations for recomputation to
			   drop), on the same device as the estimate */
			if (vr.devices && E->w < vr.n_devices) {
				ck->saves = E->rd->peak_memory_bytes -
					    vr.devices[E->w].peak_memory_bytes;
				ck->saves_simulated = true;
			}
			/* where the variant is still over: its own worst
			   device (maybe another one) */
			ck->worst_dev = E->w;
			ck->worst_over = vr.over_bytes;
			if (vr.worst_device < vr.n_devices &&
			    vr.worst_device < E->c->devices.n)
				ck->worst_dev = vr.worst_device;
			if (!(ck->worst_over > 0) && vr.devices &&
			    ck->worst_dev < vr.n_devices) {
				const struct tp_report_device *x =
					&vr.devices[ck->worst_dev];
				ck->worst_over =
					x->peak_memory_bytes - x->capacity_bytes;
			}
		}
		tp_report_release(&vr);
		tp_plan_release(&v);
	}
}

/* The recommendation: the fastest simulated fit, or the first (in order
 * of expected cost) within 1% of it (ZeRO-2 before ZeRO-3 when both take
 * 6.88 s: the simulator's last digits are no reason for the larger
 * change); else the first whose estimate covers the excess; -1 when none
 * does.  Never one the runtime refuses. */
static int best_candidate(const struct explain *E)
{
	const struct cand *cand = E->cand;
	int best = -1;

	for (int k = 0; k < CAND_COUNT; k++)
		if (cand[k].applicable && cand[k].simulated && cand[k].fits &&
		    (best < 0 || cand[k].iter_s < cand[best].iter_s))
			best = k;
	for (int k = 0; best >= 0 && k < best; k++)
		if (cand[k].applicable && cand[k].simulated && cand[k].fits &&
		    cand[k].iter_s <= cand[best].iter_s * 1.01) {
			best = k;
			break;
		}
	if (best < 0)
		for (int k = 0; k < CAND_COUNT && best < 0; k++)
			if (cand[k].applicable && !cand[k].refused &&
			    !cand[k].simulated && cand[k].saves >= E->over)
				best = k;
	return best;
}

/* The recommendation and every change considered, one line each. */
static void print_candidates(const struct explain *E, int best,
			     struct tp_strbuf *out)
{
	const struct cand *cand = E->cand;
	const struct tp_cluster *c = E->c;
	char a[48], b[48], cc[48];

	if (best >= 0) {
		tp_strbuf_addf(out, "  smallest change that fits: %s", cand[best].what);
		if (cand[best].simulated) {
			si_nb(a, sizeof(a), cand[best].iter_s, "s");
			tp_strbuf_addf(out, " (simulated: fits, iteration %s)\n",
				       a);
		} else {
			si_nb(a, sizeof(a), cand[best].saves, "B");
			tp_strbuf_addf(out, " (estimate: saves about %s)\n", a);
		}
		tp_strbuf_adds(out, "  changes considered:\n");
	} else {
		tp_strbuf_adds(out, "  no single change fits on its own; "
				    "combine some of these:\n");
	}
	for (int k = 0; k < CAND_COUNT; k++) {
		bool elsewhere = cand[k].simulated && !cand[k].fits &&
				 cand[k].worst_dev != E->w &&
				 cand[k].worst_dev < c->devices.n;

		if (!cand[k].applicable)
			continue;
		if (cand[k].refused) {
			tp_strbuf_addf(out,
				       "    %-s: the runtime cannot run it: %s\n",
				       cand[k].what, cand[k].why);
			continue;
		}
		si_nb(a, sizeof(a), cand[k].saves, "B");
		/* a simulated saving replaces the estimate: two figures
		   that disagree (the estimate cannot know the runtime's
		   fused attention) only mislead */
		if (cand[k].saves_simulated)
			tp_strbuf_addf(out, "    %-s: simulated:", cand[k].what);
		else if (!(cand[k].saves > 0))
			tp_strbuf_addf(out, "    %-s: saves nothing%s%s",
				       cand[k].what,
				       k == CAND_SELECTIVE && E->fused_attention
					       ? " (fused attention keeps no "
						 "attention scores)"
					       : "",
				       cand[k].simulated ? "; simulated:" : "");
		else
			tp_strbuf_addf(out, "    %-s: saves about %s%s",
				       cand[k].what, a,
				       cand[k].simulated ? "; simulated:" : "");
		if (cand[k].simulated) {
			si_nb(b, sizeof(b), cand[k].iter_s, "s");
			if (cand[k].fits)
				tp_strbuf_addf(out, " fits, iteration %s", b);
			else {
				si_nb(cc, sizeof(cc), cand[k].worst_over, "B");
				tp_strbuf_addf(out, " still %s over", cc);
				if (elsewhere)
					tp_strbuf_addf(
						out, " on %s",
						c->devices.v[cand[k].worst_dev]
							.name);
			}
			if (cand[k].saves_simulated && cand[k].saves > 0)
				tp_strbuf_addf(out, ", saves %s%s%s", a,
					       elsewhere ? " on " : "",
					       elsewhere
						       ? c->devices.v[E->w].name
						       : "");
			else if (cand[k].saves_simulated)
				tp_strbuf_addf(out, ", saves nothing%s%s",
					       elsewhere ? " on " : "",
					       elsewhere
						       ? c->devices.v[E->w].name
						       : "");
		} else if (cand[k].saves > 0) {
			tp_strbuf_adds(out, cand[k].saves >= E->over
						    ? " (enough)"
						    : " (not enough alone)");
		}
		tp_strbuf_addc(out, '\n');
	}
}

/* The explanation, one logical line per line (wrapped by the caller). */
static enum tp_status explain_raw(const struct tp_plan *p,
				  const struct tp_model *m,
				  const struct tp_cluster *c,
				  const struct tp_report *r,
				  const struct tp_explain_sim *how,
				  struct tp_strbuf *out, struct tp_error *err)
{
	struct explain E;
	uint32_t w = r->worst_device;

	if (r->feasible)
		return TP_OK;
	if (w == UINT32_MAX || w >= c->devices.n || !r->devices ||
	    w >= r->n_devices) {
		tp_strbuf_adds(out, "does not fit");
		if (r->reason[0])
			tp_strbuf_addf(out, ": %s", r->reason);
		tp_strbuf_addc(out, '\n');
		return out->failed ? tp_error_set(err, TP_ENOMEM,
						  "out of memory")
				   : TP_OK;
	}
	memset(&E, 0, sizeof(E));
	E.p = p;
	E.c = c;
	E.w = w;
	E.r = r;
	E.rd = &r->devices[w];
	E.bd = &E.rd->memory;
	E.dpw = 1;
	E.cpw = 1;
	E.cur_rc = TP_RECOMPUTE_NONE;
	E.fused_attention = how && how->fused_attention;
	E.over = r->over_bytes > 0
			 ? r->over_bytes
			 : E.rd->peak_memory_bytes - E.rd->capacity_bytes;
	explain_memory(&E, out);
	list_candidates(&E, m);
	if (how && how->rt)
		refuse_candidates(&E, m, how->rt);
	if (how && how->eval)
		simulate_candidates(&E, how);
	print_candidates(&E, best_candidate(&E), out);
	if (out->failed)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	return TP_OK;
}

/* Append text to out with every line cut at spaces to at most `width`
 * columns; continuation lines hang under the text after a label ("  search
 * <spaces>text") or else two columns deeper than the line.  A label whose
 * text goes on as a list (the next line starts at its text column:
 * "  groups" and one line per group) hangs two columns deeper too, so
 * that a wrapped item does not read as the next one. */
static void wrap_lines(struct tp_strbuf *out, const char *text, int width)
{
	while (*text) {
		const char *nl = strchr(text, '\n');
		int len = nl ? (int)(nl - text) : (int)strlen(text);
		int indent = 0, col = 0, pos = 0, hang;

		while (indent < len && text[indent] == ' ')
			indent++;
		hang = indent + 2;
		for (int k = indent; k + 2 < len; k++)
			if (text[k] == ' ' && text[k + 1] == ' ') {
				int t = k;
				while (t < len && text[t] == ' ')
					t++;
				if (t < len && t < width / 2)
					hang = t;
				break;
			}
		if (nl && hang > indent + 2) {
			int next = (int)strspn(nl + 1, " ");
			if (next == hang && nl[1 + next] && nl[1 + next] != '\n')
				hang += 2;
		}
		while (pos < len) {
			int lim = width - col, cut = len - pos;
			if (cut > lim) {
				/* the last space that keeps the piece within
				   the width; a word longer than that stays
				   whole */
				int k = lim;
				while (k > 0 && text[pos + k] != ' ')
					k--;
				if (k == 0) {
					k = lim;
					while (pos + k < len &&
					       text[pos + k] != ' ')
						k++;
				}
				cut = k;
			}
			if (col)
				tp_strbuf_addf(out, "%*s", col, "");
			for (int q = 0; q < cut; q++)
				tp_strbuf_addc(out, text[pos + q] == NB
							    ? ' '
							    : text[pos + q]);
			tp_strbuf_addc(out, '\n');
			pos += cut;
			while (pos < len && text[pos] == ' ')
				pos++;
			col = hang;
		}
		if (len == 0)
			tp_strbuf_addc(out, '\n');
		text += len + (nl ? 1 : 0);
	}
}

enum tp_status tp_cli_explain(const struct tp_plan *p,
				 const struct tp_model *m,
				 const struct tp_cluster *c,
				 const struct tp_report *r,
				 const struct tp_explain_sim *how,
				 struct tp_strbuf *out, struct tp_error *err)
{
	struct tp_strbuf raw;
	enum tp_status st;

	tp_strbuf_init(&raw);
	st = explain_raw(p, m, c, r, how, &raw, err);
	if (st == TP_OK && raw.failed)
		st = tp_error_set(err, TP_ENOMEM, "out of memory");
	if (st == TP_OK) {
		wrap_lines(out, tp_strbuf_cstr(&raw), 80);
		if (out->failed)
			st = tp_error_set(err, TP_ENOMEM, "out of memory");
	}
	tp_strbuf_release(&raw);
	return st;
}

void tp_render_wrap(struct tp_strbuf *out, const char *text, int width)
{
	wrap_lines(out, text, width > 20 ? width : 20);
}

void tp_cli_plan_structure(const struct tp_plan *p, const struct tp_model *m,
			   const struct tp_cluster *c, struct tp_strbuf *out)
{
	uint32_t shown = 0;

	tp_strbuf_addf(
	    out, "  plan           %zu group%s, %u micro-batch%s, %s, ZeRO %u",
	    p->groups.n, p->groups.n == 1 ? "" : "s", p->micro_batches,
	    p->micro_batches == 1 ? "" : "es", tp_schedule_name(p->schedule),
	    p->zero);
	for (uint32_t g = 0; g < p->groups.n; g++)
		if (p->groups.v[g].dp > 1 && p->grad_bucket_bytes > 0) {
			tp_strbuf_addf(out, ", %.4g MB gradient buckets",
				       p->grad_bucket_bytes / 1e6);
			break;
		}
	tp_strbuf_addc(out, '\n');
	for (uint32_t g = 0; g < p->groups.n && shown < 8; g++) {
		const struct tp_plan_group *gr = &p->groups.v[g];
		const uint32_t *ops = tp_plan_group_ops(p, g);
		const uint32_t *d = tp_plan_group_devs(p, g);
		uint32_t types[8] = {0}, nt = 0, cnt[8] = {0};
		char devs[160] = "";
		size_t used = 0;
		for (uint32_t k = 0; k < gr->n_devices; k++) {
			uint32_t t = c->devices.v[d[k]].type, i;
			for (i = 0; i < nt; i++)
				if (types[i] == t)
					break;
			if (i == nt && nt < 8)
				types[nt++] = t;
			if (i < 8)
				cnt[i]++;
		}
		for (uint32_t i = 0; i < nt && used < sizeof(devs); i++) {
			int n = snprintf(devs + used, sizeof(devs) - used,
					 "%s%ux %s", i ? " + " : "", cnt[i],
					 c->types.v[types[i]].name);
			if (n > 0)
				used += (size_t)n;
		}
		if (gr->mixed) {
			char lab[128];
			tp_plan_degrees_label(p, g, lab, sizeof(lab));
			tp_strbuf_addf(
			    out, "  %-15s%s..%s on %s: dp=%u (%s) %s%s%s",
			    shown ? "" : "groups", m->ops.v[ops[0]].name,
			    m->ops.v[ops[gr->n_ops - 1]].name, devs, gr->dp,
			    lab, tp_sync_name(gr->sync),
			    gr->recompute ? ", recompute " : "",
			    gr->recompute ? tp_recompute_name(gr->recompute)
					  : "");
		} else {
			char deg[80];
			int n = gr->cp > 1 ? snprintf(deg, sizeof(deg),
						      "dp=%u cp=%u tp=%u",
						      gr->dp, gr->cp, gr->tp)
					   : snprintf(deg, sizeof(deg),
						      "dp=%u tp=%u", gr->dp,
						      gr->tp);
			/* experts spread over an EP group (plan.h) */
			if (gr->ep > 1 && n > 0 && (size_t)n < sizeof(deg))
				snprintf(deg + n, sizeof(deg) - (size_t)n,
					 gr->etp == 1 ? " ep=%u etp=1" : " ep=%u",
					 gr->ep);
			tp_strbuf_addf(
			    out, "  %-15s%s..%s on %s: %s %s%s%s",
			    shown ? "" : "groups", m->ops.v[ops[0]].name,
			    m->ops.v[ops[gr->n_ops - 1]].name, devs, deg,
			    tp_sync_name(gr->sync),
			    gr->recompute ? ", recompute " : "",
			    gr->recompute ? tp_recompute_name(gr->recompute)
					  : "");
		}
		/* gradient compression (sfb.h); lossy always marked */
		if (gr->n_sfb)
			tp_strbuf_addf(out, ", SFB on %u op%s", gr->n_sfb,
				       gr->n_sfb == 1 ? "" : "s");
		if (gr->lossy == TP_LOSSY_POWERSGD)
			tp_strbuf_addf(out,
				       ", LOSSY PowerSGD rank %u gradients",
				       gr->powersgd_rank);
		else if (gr->lossy != TP_LOSSY_NONE)
			tp_strbuf_addf(out, ", LOSSY %s gradients",
				       tp_lossy_name(gr->lossy));
		tp_strbuf_addc(out, '\n');
		shown++;
	}
	if (p->groups.n > shown)
		tp_strbuf_addf(out, "                 ... %zu more groups\n",
			       p->groups.n - shown);
	{
		uint32_t nsfb = 0, nlossy = 0;
		double saved = 0;
		for (uint32_t g = 0; g < p->groups.n; g++) {
			nsfb += p->groups.v[g].n_sfb;
			saved += p->groups.v[g].sfb_saved_bytes;
			nlossy += p->groups.v[g].lossy != TP_LOSSY_NONE;
		}
		tp_strbuf_addf(out, "  compression    %s",
			       tp_compression_name(p->compression));
		if (nsfb)
			tp_strbuf_addf(
			    out,
			    ": sufficient-factor broadcasting on %u op%s, "
			    "%.3g GB less traffic per iteration",
			    nsfb, nsfb == 1 ? "" : "s", saved / 1e9);
		else if (p->compression != TP_COMPRESSION_OFF && !nlossy)
			tp_strbuf_addf(out, ": none pays off for this plan");
		if (nlossy)
			tp_strbuf_addf(
			    out,
			    "%sLOSSY gradients in %u group%s (changes "
			    "the training numerics)",
			    nsfb ? "; " : ": ", nlossy, nlossy == 1 ? "" : "s");
		tp_strbuf_addc(out, '\n');
	}
}

void tp_render_caps(struct tp_strbuf *out, uint32_t mask)
{
	bool first = true;

	for (int c = 0; c < TP_CAP_COUNT; c++)
		if (mask & (1u << c)) {
			tp_strbuf_addf(out, "%s%s", first ? "" : ", ",
				       tp_runtime_cap_name(
					       (enum tp_runtime_cap)c));
			first = false;
		}
}
