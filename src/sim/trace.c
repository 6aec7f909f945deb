/*
 * trace.c - Chrome trace-event JSON of a simulated iteration (opens in
 * Perfetto and chrome://tracing): process "devices" with one track per
 * device (forward, backward, optimizer slices; tensor-parallel time in the
 * slice's args), process "links" with one track per link that carried
 * traffic (one slice per transfer or collective crossing it).
 *
 * Replicas simulated once (src/sim/README, "Symmetry") are written for
 * every member device as long as the document stays under
 * MAX_EVENTS; beyond that only the simulated devices get slices and a
 * metadata event says so.  Link slices have the same budget.
 */
#include <stdio.h>
#include <string.h>

#include "sim_int.h"

#include "core/jsonw.h"

#define MAX_EVENTS 1000000u

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
	mirror = copies <= budget;

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
				for (uint32_t i = 0; i < 2 * plan->micro_batches;
				     i++) {
					const struct task *t =
						&s->tasks.v[sl->task_first + i];
					bool f = t->kind == TK_F;
					snprintf(name, sizeof(name), "%s mb%u g%u",
						 f ? "forward" : "backward",
						 t->micro, rl->group);
					slice(&jw, name,
					      f ? "forward" : "backward", 0, d,
					      t->start, t->end);
					tp_jw_key(&jw, "args");
					tp_jw_object_begin(&jw);
					tp_jw_kv_number(&jw, "compute_s",
							f ? rl->f_comp
							  : rl->b_comp);
					tp_jw_kv_number(&jw,
							"tensor_parallel_s",
							f ? rl->f_comm
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

	/* link slices */
	{
		/* per-channel marks, borrowed from the engine and cleared
		 * before and after (the engine's stamps must not collide) */
		uint32_t *seen = s->cmark;
		uint64_t n_ev = 0;
		bool cut = false;
		memset(seen, 0, (sim->n_chan + 1) * sizeof(*seen));
		for (uint32_t l = 0; l < c->links.n; l++) {
			const struct tp_link *lk = &c->links.v[l];
			if (!(s->chan_bytes[2 * l] + s->chan_bytes[2 * l + 1] >
			      0))
				continue;
			snprintf(name, sizeof(name), "link %u %s (%u-%u)", l,
				 tp_link_kind_name(lk->kind), lk->a, lk->b);
			meta(&jw, "thread_name", 1, l, name);
		}
		for (size_t k = 0; k < s->tasks.n && !cut; k++) {
			const struct task *t = &s->tasks.v[k];
			const struct btype *bt;
			if (t->kind != TK_COMM || !(t->end >= 0))
				continue;
			bt = &s->btypes.v[t->ref];
			comm_name(t, name, sizeof(name));
			for (uint32_t j = 0; j < bt->n_ent; j++) {
				uint32_t l = s->bents.v[bt->ent_first + j].chan / 2;
				if (seen[2 * l] == (uint32_t)k + 1)
					continue;
				seen[2 * l] = (uint32_t)k + 1;
				if (++n_ev > budget) {
					cut = true;
					break;
				}
				slice(&jw, name, "communication", 1, l, t->start,
				      t->end);
				tp_jw_key(&jw, "args");
				tp_jw_object_begin(&jw);
				tp_jw_kv_number(&jw, "bytes_per_flow", t->dur);
				tp_jw_kv_int(&jw, "flows", bt->n_flows);
				tp_jw_object_end(&jw);
				tp_jw_object_end(&jw);
			}
		}
		memset(seen, 0, (sim->n_chan + 1) * sizeof(*seen));
		if (cut)
			meta(&jw, "note", 1, -1,
			     "more link slices than the trace budget; the rest "
			     "are left out");
	}
	tp_jw_array_end(&jw);
	tp_jw_object_end(&jw);
	tp_jw_finish(&jw);
}
