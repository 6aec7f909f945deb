/*
 * schedule.c - the order in which every resource runs its tasks: a key
 * per task for GPipe, 1F1B, Megatron's interleaved schedule and ZB-H1
 * (README section 4), the checks of the interleaved layout, and the
 * resource queues sorted by those keys.
 */
#include <string.h>

#include "sim_int.h"

/* A key is (primary order << TIE_BITS) | tie; ties order groups by their
 * rank (forwards) or reverse rank (backwards). */
#define TIE_BITS 21
#define TIE_HALF (1u << 20)

/*
 * ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024,
 * section 3.1; torch.distributed.pipelining's _get_1f1b_rank_ops with
 * enable_zero_bubble): 1F1B's forwards and input-gradient passes B, and
 * stage s runs its first weight-gradient pass W after its (s+1)-th B,
 * then one W after every B, the s left over after the last B.  In 1F1B's
 * slots doubled: F(i) at 4i + 2vd, B(i) at 4i + 4D - 2vd - 2, W(i) right
 * after B(i + vd) at 4i + 2vd + 4D - 1; optimizer after all.  Phase 3 is
 * W.
 */
static uint64_t zb_key(const struct sched *sc, uint32_t vd, uint32_t i,
		       int phase)
{
	uint64_t m = sc->m, D = sc->D;

	switch (phase) {
	case 0:
		return 4 * (uint64_t)i + 2 * (uint64_t)vd;
	case 1:
		return 4 * (uint64_t)i + 4 * D - 2 * (uint64_t)vd - 2;
	case 3:
		return 4 * (uint64_t)i + 2 * (uint64_t)vd + 4 * D - 1;
	default:
		return 4 * m + 6 * D;
	}
}

static uint64_t task_key(const struct sched *sc, const struct ginfo *gi,
			 uint32_t i, int phase)
{
	uint64_t prim, tie;
	uint32_t m = sc->m, D = sc->D;

	if (sc->kind == TP_SCHEDULE_ZB_H1) {
		tie = phase == 0 || phase == 2
			      ? gi->rank
			      : TIE_HALF + (TIE_HALF - 1 - gi->rank);
		return (zb_key(sc, gi->vd, i, phase) << TIE_BITS) | tie;
	}
	if (phase == 2) {
		prim = (uint64_t)2 * m * (D + sc->V) + 2 * (uint64_t)D + 1;
		return (prim << TIE_BITS) | gi->rank;
	}
	tie = phase == 0 ? gi->rank : TIE_HALF + (TIE_HALF - 1 - gi->rank);
	switch (sc->kind) {
	case TP_SCHEDULE_GPIPE:
		prim = phase == 0 ? (uint64_t)gi->vd * m + i
				  : (uint64_t)D * m +
					    (uint64_t)(D - 1 - gi->vd) * m + i;
		break;
	case TP_SCHEDULE_INTERLEAVED: {
		uint32_t p = sc->p, V = sc->V, st = gi->vd % p, c = gi->vd / p;
		uint32_t block = i / p, r = i % p;
		uint32_t pb = m - block * p < p ? m - block * p : p;
		uint64_t mv = (uint64_t)m * V;
		uint64_t W = (uint64_t)2 * (p - st - 1) + (uint64_t)(V - 1) * p;
		uint64_t k;
		if (W > mv)
			W = mv;
		if (phase == 0) {
			k = (uint64_t)block * p * V + (uint64_t)c * pb + r;
			prim = k < W ? k : 2 * k - W;
		} else {
			k = (uint64_t)block * p * V +
			    (uint64_t)(V - 1 - c) * pb + r;
			prim = k < mv - W ? 2 * k + W + 1 : k + mv;
		}
		break;
	}
	default: /* 1F1B */
		prim = phase == 0 ? 2 * (uint64_t)i + gi->vd
				  : 2 * (uint64_t)i + 2 * (uint64_t)D -
					    gi->vd - 1;
		break;
	}
	return (prim << TIE_BITS) | tie;
}

static bool qless(const struct qitem *a, const struct qitem *b)
{
	return a->key < b->key || (a->key == b->key && a->task < b->task);
}

/* Sort q[0..n) by (key, task), a total order, merging its ascending runs
 * (natural merge sort); tmp holds n items. */
static void sort_runs(struct qitem *q, uint32_t n, struct qitem *tmp)
{
	struct qitem *src = q, *dst = tmp;
	uint32_t k = 1;

	while (k < n && !qless(&q[k], &q[k - 1]))
		k++;
	if (k >= n)
		return; /* already in order */
	for (;;) {
		uint32_t runs = 0, i = 0;
		while (i < n) {
			uint32_t a = i, b, c;
			while (i + 1 < n && !qless(&src[i + 1], &src[i]))
				i++;
			b = ++i;
			if (b < n) {
				while (i + 1 < n && !qless(&src[i + 1], &src[i]))
					i++;
				++i;
			}
			c = i;
			runs++;
			/* merge [a, b) and [b, c) into dst[a..c) */
			{
				uint32_t x = a, y = b, o = a;
				while (x < b && y < c)
					dst[o++] = qless(&src[y], &src[x])
							   ? src[y++]
							   : src[x++];
				while (x < b)
					dst[o++] = src[x++];
				while (y < c)
					dst[o++] = src[y++];
			}
		}
		{
			struct qitem *t = src;
			src = dst;
			dst = t;
		}
		if (runs <= 1)
			break;
	}
	if (src != q)
		memcpy(q, src, n * sizeof(*q));
}

enum tp_status tp_sim_setup_schedule(const struct tp_plan *plan,
				     struct tp_sim_scratch *s, uint32_t depth,
				     struct sched *sc, struct tp_error *err)
{
	uint32_t G = (uint32_t)plan->groups.n, p = 0, vmax = 0;

	sc->kind = plan->schedule;
	sc->m = plan->micro_batches;
	sc->D = depth;
	sc->p = 1;
	sc->V = 1;
	if (G >= TIE_HALF)
		return tp_error_set_path(err, TP_ELIMIT, "$.groups",
					 "more than %u groups", TIE_HALF - 1);
	if (plan->schedule != TP_SCHEDULE_INTERLEAVED)
		return TP_OK;
	for (uint32_t g = 0; g < G; g++)
		if (s->groups.v[g].stage == g)
			p++;
	for (uint32_t g = 0; g < G; g++) {
		const struct ginfo *gi = &s->groups.v[g];
		const struct ginfo *rep = &s->groups.v[gi->stage];
		if (gi->vd % p != rep->vd % p)
			return tp_error_set_path(
				err, TP_EINPUT, "$.schedule",
				"the interleaved schedule needs chunk c of "
				"stage s at pipeline position c*p + s (p = %u "
				"device sets), but group %u sits at position "
				"%u on the devices of group %u (position %u); "
				"use 1f1b or reorder the groups",
				p, g, gi->vd, gi->stage, rep->vd);
		if (gi->vd / p + 1 > vmax)
			vmax = gi->vd / p + 1;
	}
	if (vmax < 2) {
		sc->kind = TP_SCHEDULE_1F1B;
		return TP_OK;
	}
	sc->p = p;
	sc->V = vmax;
	return TP_OK;
}


/* Every resource's queue: its sim lanes' forwards, backwards (and W
 * passes) and, with opt, optimizer steps, sorted by (key, task); the
 * task numbers are f_task's, b_task's, w_task's (sim lane task_first,
 * w_first) and opt_task. */
static enum tp_status fill_queues(const struct tp_plan *plan,
				  struct tp_sim_scratch *s,
				  const struct sched *sc, bool opt,
				  struct tp_error *err)
{
	uint32_t m = plan->micro_batches;
	size_t nq = 0;

	for (uint32_t x = 0; x < s->res.n; x++)
		s->res.v[x].q_n = 0;
	for (uint32_t L = 0; L < s->sims.n; L++) {
		const struct simlane *sl = &s->sims.v[L];
		for (uint32_t k = 0; k < sl->n_res; k++)
			s->res.v[s->lres.v[sl->res_first + k]].q_n +=
				(s->zb ? 3 : 2) * m + (opt ? 1 : 0);
	}
	for (uint32_t x = 0; x < s->res.n; x++) {
		s->res.v[x].q_first = (uint32_t)nq;
		nq += s->res.v[x].q_n;
		s->res.v[x].q_n = 0;
		s->res.v[x].head = 0;
		s->res.v[x].busy = false;
	}
	s->queue.n = 0;
	RESERVE(&s->queue, nq);
	s->queue.n = nq;
	for (uint32_t L = 0; L < s->sims.n; L++) {
		const struct simlane *sl = &s->sims.v[L];
		const struct ginfo *gi =
			&s->groups.v[s->lanes.v[sl->lane].group];
		for (uint32_t k = 0; k < sl->n_res; k++) {
			struct resource *rs =
				&s->res.v[s->lres.v[sl->res_first + k]];
			struct qitem *q = s->queue.v + rs->q_first;
			/* three runs (four under zb-h1), each ascending in
			   its key (the keys grow with the micro-batch in
			   every schedule) */
			for (uint32_t i = 0; i < m; i++)
				q[rs->q_n++] = (struct qitem){
					task_key(sc, gi, i, 0),
					f_task(s, L, i)};
			for (uint32_t i = 0; i < m; i++)
				q[rs->q_n++] = (struct qitem){
					task_key(sc, gi, i, 1),
					b_task(s, L, i)};
			for (uint32_t i = 0; i < m && s->zb; i++)
				q[rs->q_n++] = (struct qitem){
					task_key(sc, gi, i, 3),
					w_task(s, L, i)};
			if (opt)
				q[rs->q_n++] = (struct qitem){
					task_key(sc, gi, 0, 2), sl->opt_task};
		}
	}
	s->qtmp.n = 0;
	RESERVE(&s->qtmp, nq + 1);
	for (uint32_t x = 0; x < s->res.n; x++) {
		struct resource *rs = &s->res.v[x];
		sort_runs(s->queue.v + rs->q_first, rs->q_n, s->qtmp.v);
	}
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/* Every resource's queue: its sim lanes' forwards, backwards and
 * optimizer steps sorted by (key, task), and every task's position in the
 * queue of its lane's first resource (task.qpos). */
enum tp_status tp_sim_order_queues(const struct tp_plan *plan,
				   struct tp_sim_scratch *s,
				   const struct sched *sc, struct tp_error *err)
{
	enum tp_status st = fill_queues(plan, s, sc, true, err);

	if (st)
		return st;
	/* a task's position in the queue of its lane's first resource */
	for (uint32_t x = 0; x < s->res.n; x++) {
		const struct resource *rs = &s->res.v[x];
		for (uint32_t k = 0; k < rs->q_n; k++) {
			uint32_t t = s->queue.v[rs->q_first + k].task;
			const struct simlane *sl = &s->sims.v[s->tasks.v[t].ref];
			if (s->lres.v[sl->res_first] == x)
				s->tasks.v[t].qpos = k;
		}
	}
	return TP_OK;
}

/*
 * The queues of the compute tasks alone (no optimizer steps), before the
 * task graph exists, for tp_sim_memory_walk_early: the task numbers are
 * those taskgraph.c compute_tasks will give (the first tasks of the
 * graph, sim lane by sim lane, 2m each and m more W passes under
 * zb-h1), and sorting by (key, task) is a total order, so each queue is
 * the one tp_sim_order_queues makes less its optimizer steps.  *ok =
 * false (nothing done) when the numbers would not fit a graph (the
 * graph's own limit then speaks).
 */
enum tp_status tp_sim_order_compute(const struct tp_plan *plan,
				    struct tp_sim_scratch *s,
				    const struct sched *sc, bool *ok,
				    struct tp_error *err)
{
	uint32_t m = plan->micro_batches, per = (s->zb ? 3 : 2) * m;

	*ok = (uint64_t)s->sims.n * per < (1u << 30);
	if (!*ok)
		return TP_OK;
	for (uint32_t L = 0; L < s->sims.n; L++) {
		s->sims.v[L].task_first = L * per;
		s->sims.v[L].w_first = L * per + 2 * m;
	}
	return fill_queues(plan, s, sc, false, err);
}
