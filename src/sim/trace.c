/*
 * trace.c - Chrome trace-event JSON of a simulated iteration (opens in
 * Perfetto and chrome://tracing): process "devices" with one track per
 * device (forward, backward, optimizer slices; tensor-parallel time in the
 * slice's args),
 * process "links" with one slice per transfer or collective crossing a
 * link.  Transfers share a link concurrently; the trace-event format
 * forbids overlapping slices on one track (Perfetto draws them wrong), so
 * each link gets as many tracks as it has concurrent flows at its
 * busiest moment ("link 3 nic (0-12)", "... flow 2", ...), every slice on
 * the first track free at its start.
 *
 * Replicas simulated once (src/sim/README, "Symmetry") are written for
 * every member device (TP_SIM_TRACE_ALL), or only for the simulated
 * representatives, one replica of each kind per stage
 * (TP_SIM_TRACE_ONE); TP_SIM_TRACE_AUTO shows all while that takes at
 * most TP_SIM_TRACE_AUTO_SLICES device slices (about 17 MB; at 1,024 GPUs
 * every replica took 179 MB).  otherData.all_replicas_shown and a
 * metadata note say which, tp_sim_scratch_trace_all too.  Link slices are
 * cut at MAX_EVENTS, with a note.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

#include "core/jsonw.h"

#define MAX_EVENTS 1000000u

/* One link slice before its track is chosen. */
struct lslice {
	uint32_t link, task, track;
	double start, end;
};

static int by_link_start(const void *a, const void *b)
{
	const struct lslice *x = a, *y = b;

	if (x->link != y->link)
		return x->link < y->link ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->task < y->task ? -1 : x->task > y->task;
}

static void meta(struct tp_jw *jw, const char *what, uint32_t pid,
		 int64_t tid, const char *name)
{
	tp_jw_object_begin(jw);
	tp_jw_kv_string(jw, "name", what);
	tp_jw_kv_string(jw, "ph", "M");
	tp_jw_kv_int(jw, "pid", pid);
	if (tid >= 0)
		tp_jw_kv_int(jw, "tid", tid);
	tp_jw_key(jw, "args");
	tp_jw_object_begin(jw);
	tp_jw_kv_string(jw, "name", name);
	tp_jw_object_end(jw);
	tp_jw_object_end(jw);
}

static void slice(struct tp_jw *jw, const char *name, const char *cat,
		  uint32_t pid, uint32_t tid, double start, double end)
{
	double us = 1e6;

	tp_jw_object_begin(jw);
	tp_jw_kv_string(jw, "name", name);
	tp_jw_kv_string(jw, "cat", cat);
	tp_jw_kv_string(jw, "ph", "X");
	tp_jw_kv_number(jw, "ts", start * us);
	tp_jw_kv_number(jw, "dur", (end > start ? end - start : 0) * us);
	tp_jw_kv_int(jw, "pid", pid);
	tp_jw_kv_int(jw, "tid", tid);
}

static const char *comm_name(const struct task *t, char *buf, size_t n)
{
	switch (t->what) {
	case CW_P2P_F:
		snprintf(buf, n, "activation mb%u", t->micro);
		break;
	case CW_P2P_B:
		snprintf(buf, n, "gradient mb%u", t->micro);
		break;
	case CW_SYNC:
		snprintf(buf, n, "gradient sync g%u", t->micro);
		break;
	case CW_SYNC_TAIL:
		snprintf(buf, n, "gradient sync (last bucket) g%u", t->micro);
		break;
	case CW_ZERO_AG:
		snprintf(buf, n, "ZeRO-3 weight all-gather mb%u", t->micro);
		break;
	default:
		snprintf(buf, n, "weight all-gather g%u", t->micro);
		break;
	}
	return buf;
}

/* The link tracks: every (transfer, link) slice, on the first track of its
 * link free at its start (sorted by start, greedily: as few tracks as the
 * link's most concurrent flows). */
static void link_slices(const struct tp_sim *sim, struct tp_sim_scratch *s,
			const uint8_t *keep, struct tp_jw *jw)
{
	const struct tp_cluster *c = sim->c;
	/* per-channel marks, borrowed from the engine and cleared before
	 * and after (the engine's stamps must not collide) */
	uint32_t *seen = s->cmark;
	struct lslice *v = NULL;
	struct {
		double free_at;
		uint32_t tid;
	} *tr = NULL;
	size_t n = 0, cap = 0, ntr = 0, trcap = 0;
	uint32_t tid = 0;
	bool cut = false, nomem = false;
	char name[160];

	memset(seen, 0, (sim->n_chan + 1) * sizeof(*seen));
	for (size_t k = 0; k < s->tasks.n && !cut && !nomem; k++) {
		const struct task *t = &s->tasks.v[k];
		const struct btype *bt;
		if (t->kind != TK_COMM || !(t->end >= 0))
			continue;
		bt = &s->btypes.v[t->ref];
		for (uint32_t j = 0; j < bt->n_ent; j++) {
			uint32_t l = s->bents.v[bt->ent_first + j].chan / 2;
			if (seen[2 * l] == (uint32_t)k + 1)
				continue;
			seen[2 * l] = (uint32_t)k + 1;
			if (keep && !keep[c->links.v[l].a] &&
			    !keep[c->links.v[l].b])
				continue;
			if (n >= MAX_EVENTS) {
				cut = true;
				break;
			}
			if (n == cap) {
				size_t nc = cap ? 2 * cap : 1024;
				struct lslice *nv = realloc(v, nc * sizeof(*v));
				if (!nv) {
					nomem = true;
					break;
				}
				v = nv;
				cap = nc;
			}
			v[n].link = l;
			v[n].task = (uint32_t)k;
			v[n].track = 0;
			v[n].start = t->start;
			v[n].end = t->end > t->start ? t->end : t->start;
			n++;
		}
	}
	memset(seen, 0, (sim->n_chan + 1) * sizeof(*seen));
	if (n)
		qsort(v, n, sizeof(*v), by_link_start);
	/* tracks: ids in link order, named on first use */
	for (size_t i = 0; i < n && !nomem; i++) {
		const struct tp_link *lk = &c->links.v[v[i].link];
		size_t k;
		if (i == 0 || v[i].link != v[i - 1].link)
			ntr = 0;
		for (k = 0; k < ntr; k++)
			if (tr[k].free_at <= v[i].start)
				break;
		if (k == ntr) {
			if (ntr == trcap) {
				size_t nc = trcap ? 2 * trcap : 16;
				void *nt = realloc(tr, nc * sizeof(*tr));
				if (!nt) {
					nomem = true;
					break;
				}
				tr = nt;
				trcap = nc;
			}
			tr[k].tid = tid++;
			if (k == 0)
				snprintf(name, sizeof(name), "link %u %s (%u-%u)",
					 v[i].link, tp_link_kind_name(lk->kind),
					 lk->a, lk->b);
			else
				snprintf(name, sizeof(name),
					 "link %u %s (%u-%u) flow %zu",
					 v[i].link, tp_link_kind_name(lk->kind),
					 lk->a, lk->b, k + 1);
			meta(jw, "thread_name", 1, tr[k].tid, name);
			/* Perfetto orders tracks by this, not by name */
			tp_jw_object_begin(jw);
			tp_jw_kv_string(jw, "name", "thread_sort_index");
			tp_jw_kv_string(jw, "ph", "M");
			tp_jw_kv_int(jw, "pid", 1);
			tp_jw_kv_int(jw, "tid", tr[k].tid);
			tp_jw_key(jw, "args");
			tp_jw_object_begin(jw);
			tp_jw_kv_int(jw, "sort_index", tr[k].tid);
			tp_jw_object_end(jw);
			tp_jw_object_end(jw);
			ntr++;
		}
		tr[k].free_at = v[i].end;
		v[i].track = tr[k].tid;
	}
	for (size_t i = 0; i < n && !nomem; i++) {
		const struct task *t = &s->tasks.v[v[i].task];
		const struct btype *bt = &s->btypes.v[t->ref];
		comm_name(t, name, sizeof(name));
		slice(jw, name, "communication", 1, v[i].track, v[i].start,
		      v[i].end);
		tp_jw_key(jw, "args");
		tp_jw_object_begin(jw);
		tp_jw_kv_int(jw, "link", v[i].link);
		tp_jw_kv_number(jw, "bytes_per_flow", t->dur);
		tp_jw_kv_int(jw, "flows", bt->n_flows);
		tp_jw_object_end(jw);
		tp_jw_object_end(jw);
	}
	if (cut)
		meta(jw, "note", 1, -1,
		     "more link slices than the trace budget; the rest are left "
		     "out");
	if (nomem)
		meta(jw, "note", 1, -1,
		     "out of memory ordering the link slices; they are left out");
	free(v);
	free(tr);
}

void tp_sim_trace_write(const struct tp_sim *sim, const struct tp_plan *plan,
			struct tp_sim_scratch *s, double t_end,
			struct tp_strbuf *out)
{
	const struct tp_cluster *c = sim->c;
	struct tp_jw jw;
	uint64_t budget = MAX_EVENTS, per_copy = 0, copies = 0;
	bool mirror;
	char name[96];

	/* how many device slices mirroring every replica would take */
	for (size_t L = 0; L < s->sims.n; L++) {
		const struct simlane *sl = &s->sims.v[L];
		const struct lane *ln = &s->lanes.v[sl->lane];
		per_copy = (2 * (uint64_t)plan->micro_batches + 1) * ln->tp;
		copies += per_copy * sl->n_members;
	}
	switch (sim->o.trace_replicas) {
	case TP_SIM_TRACE_ALL:
		mirror = copies <= budget;
		break;
	case TP_SIM_TRACE_ONE:
		mirror = false;
		break;
	default:
		mirror = copies <= TP_SIM_TRACE_AUTO_SLICES;
		break;
	}
	s->trace_all = mirror;

	tp_jw_init(&jw, out, false);
	tp_jw_object_begin(&jw);
	tp_jw_kv_string(&jw, "displayTimeUnit", "ms");
	tp_jw_key(&jw, "otherData");
	tp_jw_object_begin(&jw);
	tp_jw_kv_string(&jw, "generator", "tagplan simulate");
	tp_jw_kv_number(&jw, "iteration_time_s", t_end);
	tp_jw_kv_bool(&jw, "all_replicas_shown", mirror);
	tp_jw_object_end(&jw);
	tp_jw_key(&jw, "traceEvents");
	tp_jw_array_begin(&jw);
	meta(&jw, "process_name", 0, -1, "devices");
	meta(&jw, "process_name", 1, -1, "links");
	for (uint32_t d = 0; d < c->devices.n; d++)
		meta(&jw, "thread_name", 0, d, c->devices.v[d].name);

	/* compute slices */
	for (size_t L = 0; L < s->sims.n; L++) {
		const struct simlane *sl = &s->sims.v[L];
		const struct lane *rl = &s->lanes.v[sl->lane];
		const struct ginfo *gi = &s->groups.v[rl->group];
		uint32_t nm = mirror ? sl->n_members : 1;
		for (uint32_t mi = 0; mi < nm; mi++) {
			uint32_t rep = mirror ? s->members.v[sl->member_first + mi]
					      : rl->replica;
			const struct lane *ln = &s->lanes.v[gi->lane_first + rep];
			for (uint32_t k = 0; k < ln->tp; k++) {
				uint32_t d = plan->devs.v[ln->dev_first + k];
				/* F and B of every micro-batch, then the W
				   passes under zb-h1 (taskgraph.c) */
				for (uint32_t i = 0;
				     i < (s->zb ? 3 : 2) * plan->micro_batches;
				     i++) {
					const struct task *t =
						&s->tasks.v[sl->task_first + i];
					bool f = t->kind == TK_F;
					bool w = t->kind == TK_W;
					const char *what =
						f   ? "forward"
						: w ? "weight-gradient"
						    : "backward";
					snprintf(name, sizeof(name), "%s mb%u g%u",
						 what, t->micro, rl->group);
					slice(&jw, name, what, 0, d, t->start,
					      t->end);
					tp_jw_key(&jw, "args");
					tp_jw_object_begin(&jw);
					tp_jw_kv_number(&jw, "compute_s",
							f   ? rl->f_comp
							: w ? rl->w_comp
							    : b_only(s, rl));
					tp_jw_kv_number(&jw,
							"tensor_parallel_s",
							f   ? rl->f_comm
							: w ? 0
							    : rl->b_comm);
					tp_jw_kv_number(&jw, "samples",
							rl->samples);
					tp_jw_object_end(&jw);
					tp_jw_object_end(&jw);
				}
				{
					const struct task *t =
						&s->tasks.v[sl->opt_task];
					snprintf(name, sizeof(name),
						 "optimizer g%u", rl->group);
					slice(&jw, name, "optimizer", 0, d,
					      t->start, t->end);
					tp_jw_object_end(&jw);
				}
			}
		}
	}
	if (!mirror)
		meta(&jw, "note", 0, -1,
		     "identical replicas were simulated once and only their "
		     "representative devices are shown");

	/* link slices: with one replica per stage, the links of the shown
	 * devices, their nodes' fabric and NIC, and the switches' */
	{
		uint8_t *keep = NULL;
		size_t nv = c->vertex_kind.n;
		if (!mirror && (keep = calloc(nv ? nv : 1, 1))) {
			for (size_t v = 0; v < nv; v++)
				keep[v] = c->vertex_kind.v[v] ==
					  TP_VERTEX_SWITCH;
			for (size_t L = 0; L < s->sims.n; L++) {
				const struct simlane *sl = &s->sims.v[L];
				const struct lane *ln = &s->lanes.v[sl->lane];
				for (uint32_t k = 0; k < ln->tp; k++) {
					uint32_t d =
						plan->devs.v[ln->dev_first + k];
					const struct tp_node *nd =
						&c->nodes.v[c->devices.v[d].node];
					keep[c->devices.v[d].vertex] = 1;
					if (nd->fabric_vertex < nv)
						keep[nd->fabric_vertex] = 1;
					for (uint32_t r = 0;
					     nd->nic_vertex < nv &&
					     r < tp_node_nic_vertices(nd);
					     r++)
						keep[nd->nic_vertex + r] = 1;
				}
			}
		}
		link_slices(sim, s, keep, &jw);
		if (!mirror)
			meta(&jw, "note", 1, -1,
			     "one replica of each kind per stage: only the links "
			     "of its devices, their nodes and the switches");
		free(keep);
	}
	tp_jw_array_end(&jw);
	tp_jw_object_end(&jw);
	tp_jw_finish(&jw);
}

bool tp_sim_scratch_trace_all(const struct tp_sim_scratch *s)
{
	return s && s->trace_all;
}
