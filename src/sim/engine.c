/*
 * engine.c - the event-driven engine: tasks start when their inputs have
 * arrived and their devices are free in queue order; bundles of flows
 * share the links max-min fairly over channel classes (README section 3,
 * "Bundles and fair sharing").  Results are exact event times; the link
 * statistics are kept per bundle type and spread in report.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static int cmp_ckey(const void *a, const void *b)
{
	const struct ckey *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? -1 : 1;
	if (x->cap != y->cap)
		return x->cap < y->cap ? -1 : 1;
	return x->chan < y->chan ? -1 : x->chan > y->chan;
}

/* Does entry a come before entry b in sort_entries' order? */
static bool ent_before(const struct tp_sim_scratch *s, struct bent a,
		       struct bent b)
{
	double ca = s->ccap.v[a.chan], cb = s->ccap.v[b.chan];

	if (a.count != b.count)
		return a.count < b.count;
	if (ca != cb)
		return ca < cb;
	return a.chan < b.chan;
}

/* Sort bundle type bt's class entries by (count, bandwidth, class), so
 * that the private classes rates() keeps one of are adjacent (see
 * private_classes); done when rates() first meets the type.  The order
 * is otherwise irrelevant: fair sharing is a function of the set of
 * entries. */
static int sort_entries(struct tp_sim_scratch *s, struct btype *bt)
{
	struct bent *en = s->cents.v + bt->cls_first;
	uint32_t n = bt->n_cls;

	bt->cls_sorted = true;
	if (n <= 32) {
		for (uint32_t i = 1; i < n; i++) {
			struct bent x = en[i];
			uint32_t j = i;
			for (; j > 0 && ent_before(s, x, en[j - 1]); j--)
				en[j] = en[j - 1];
			en[j] = x;
		}
		return 0;
	}
	s->ckeys.n = 0;
	if (tp_vec_reserve(&s->ckeys, n))
		return -1;
	for (uint32_t j = 0; j < n; j++)
		s->ckeys.v[j] = (struct ckey){s->ccap.v[en[j].chan],
					      en[j].count, en[j].chan};
	qsort(s->ckeys.v, n, sizeof(struct ckey), cmp_ckey);
	for (uint32_t j = 0; j < n; j++)
		en[j] = (struct bent){s->ckeys.v[j].chan, s->ckeys.v[j].count};
	return 0;
}

/*
 * Channel classes (see struct tp_sim_scratch): a channel's signature is
 * its bandwidth and the (bundle type, multiplicity) pairs crossing it, in
 * bundle-type order; each bundle type used by a task gets its entries
 * over the classes (cents), one per class it crosses.
 */
int tp_sim_channel_classes(const struct tp_sim *sim, struct tp_sim_scratch *s)
{
	uint32_t stamp = ++s->cls_stamp, n_cls = 0;
	size_t nb = s->btypes.n, total = 0, cap = 16;

	s->cents.n = s->ccap.n = s->clast.n = 0;
	s->bt_used.n = 0;
	if (tp_vec_reserve(&s->bt_used, nb + 1))
		return -1;
	memset(s->bt_used.v, 0, nb + 1);
	for (size_t t = 0; t < s->tasks.n; t++)
		if (s->tasks.v[t].kind == TK_COMM)
			s->bt_used.v[s->tasks.v[t].ref] = 1;
	for (size_t b = 0; b < nb; b++) {
		const struct btype *bt = &s->btypes.v[b];
		if (!s->bt_used.v[b])
			continue;
		total += bt->n_ent;
		for (uint32_t j = 0; j < bt->n_ent; j++) {
			const struct bent *en = &s->bents.v[bt->ent_first + j];
			uint64_t bw;
			if (s->cstamp[en->chan] != stamp) {
				s->cstamp[en->chan] = stamp;
				memcpy(&bw, &sim->chan_bw[en->chan], sizeof(bw));
				s->chash[en->chan] = mix64(bw);
			}
			s->chash[en->chan] = mix64(s->chash[en->chan] ^
						   ((uint64_t)b << 32 |
						    en->count));
		}
	}
	while (cap < 2 * total + 2)
		cap *= 2;
	s->hkeys.n = s->hvals.n = 0;
	if (tp_vec_reserve(&s->hkeys, cap) || tp_vec_reserve(&s->hvals, cap) ||
	    tp_vec_reserve(&s->cents, total + 1))
		return -1;
	for (size_t k = 0; k < cap; k++)
		s->hvals.v[k] = TP_NONE;
	for (size_t b = 0; b < nb; b++) {
		struct btype *bt = &s->btypes.v[b];
		bt->cls_first = (uint32_t)s->cents.n;
		bt->n_cls = 0;
		bt->cls_sorted = false;
		if (!s->bt_used.v[b])
			continue;
		for (uint32_t j = 0; j < bt->n_ent; j++) {
			const struct bent *en = &s->bents.v[bt->ent_first + j];
			uint64_t h = s->chash[en->chan];
			size_t slot = (size_t)h & (cap - 1);
			uint32_t id;
			while (s->hvals.v[slot] != TP_NONE &&
			       s->hkeys.v[slot] != h)
				slot = (slot + 1) & (cap - 1);
			if (s->hvals.v[slot] == TP_NONE) {
				if (tp_vec_push(&s->ccap, sim->chan_bw[en->chan]) ||
				    tp_vec_push(&s->clast, 0))
					return -1;
				s->hkeys.v[slot] = h;
				s->hvals.v[slot] = n_cls++;
			}
			id = s->hvals.v[slot];
			/* one entry per class in this bundle (its channels
			 * of one class all have the same multiplicity) */
			if (s->clast.v[id] == b + 1)
				continue;
			s->clast.v[id] = (uint32_t)b + 1;
			s->cents.v[s->cents.n++] = (struct bent){id, en->count};
			bt->n_cls++;
		}
	}
	s->ccap_rem.n = s->cweight.n = s->cmark2.n = 0;
	s->cuse.n = 0;
	if (tp_vec_reserve(&s->ccap_rem, n_cls + 1) ||
	    tp_vec_reserve(&s->cweight, n_cls + 1) ||
	    tp_vec_reserve(&s->cmark2, n_cls + 1) ||
	    tp_vec_reserve(&s->cuse, n_cls + 1))
		return -1;
	memset(s->cmark2.v, 0, (n_cls + 1) * sizeof(uint32_t));
	memset(s->cuse.v, 0, (n_cls + 1) * sizeof(uint32_t));
	return 0;
}

/* ------------------------------------------------------------------ */
/* Engine                                                              */

struct eng {
	const struct tp_sim *sim;
	struct tp_sim_scratch *s;
	double now, tflow;
	bool rates_dirty;
	int oom;
	/* the earliest end of an active bundle (tc, its index kmin), valid
	 * while no bundle started, ended, moved or changed rate (tc_ok) */
	bool tc_ok;
	double tc;
	size_t kmin;
};

/* Does event a come before event b?  (t, task) is unique among the
 * events in the heap (a task is there at most once: its end, or its
 * flow's begin after the latency), so the order of the pops does not
 * depend on the heap's shape. */
static inline bool ev_before(const struct heap_ev *a, const struct heap_ev *b)
{
	/* no branch: which comes first is as good as random */
	return (a->t < b->t) | ((a->t == b->t) & (a->task < b->task));
}

/* Put x at the hole i of heap h, moving it up past later parents. */
static inline void sift_up(struct heap_ev *h, size_t i, struct heap_ev x)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!ev_before(&x, &h[p]))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = x;
}

static void heap_push(struct eng *E, double t, uint32_t task, uint32_t ev)
{
	struct tp_sim_scratch *s = E->s;

	if (tp_vec_reserve(&s->heap, 1)) {
		E->oom = 1;
		return;
	}
	sift_up(s->heap.v, s->heap.n++, (struct heap_ev){t, task, ev});
}

/* The earliest event, out of the heap.  Bottom-up: the hole at the root
 * goes down to a leaf along the earlier children (one comparison a
 * level, no branch on it), and the last event moves up from there (it
 * came from the bottom, so rarely far). */
static struct heap_ev heap_pop(struct eng *E)
{
	struct tp_sim_scratch *s = E->s;
	struct heap_ev *h = s->heap.v, top = h[0], last = h[--s->heap.n];
	size_t i = 0, n = s->heap.n;

	if (n == 0)
		return top;
	for (;;) {
		size_t l = 2 * i + 1, m;
		if (l >= n)
			break;
		m = l + (l + 1 < n && ev_before(&h[l + 1], &h[l]));
		h[i] = h[m];
		i = m;
	}
	sift_up(h, i, last);
	return top;
}

static void ready(struct eng *E, uint32_t id);

/*
 * Prefetch distances, in elements.  The engine walks each lane's tasks
 * (F(i), B(i) adjacent, micro-batch by micro-batch), each pipeline
 * transfer's tasks, their successor lists and each resource's queue as
 * separate streams, hundreds at once in a deep pipeline (GPT-3 175B at
 * pp 64 with 1,536 micro-batches: 390,000 tasks, 15 MB of them): too
 * many for the hardware's stream prefetchers, so without these nearly
 * every edge waited for memory (README, "Engine").  When the engine
 * touches element x of a stream it asks for x + distance, a few
 * micro-batches ahead (a lane's tasks advance 2 a micro-batch, its
 * successor entries about 2.5).  A prefetch never changes a result.
 */
enum {
	PF_NODES = 16, /* struct tnode, 16 bytes: 4 cache lines ahead */
	PF_TASKS = 8,  /* struct task, 40 bytes: 5 lines ahead */
	PF_SUCC = 32,  /* successor entries, 4 bytes: 2 lines ahead */
	PF_QUEUE = 8   /* struct qitem, 16 bytes: 2 lines ahead */
};

static void dec(struct eng *E, uint32_t id)
{
	struct tp_sim_scratch *s = E->s;

	if (id + PF_NODES < s->nodes.n)
		__builtin_prefetch(&s->nodes.v[id + PF_NODES], 1);
	if (id + PF_TASKS < s->tasks.n)
		__builtin_prefetch(&s->tasks.v[id + PF_TASKS], 1);
	if (--s->nodes.v[id].ndeps == 0) {
		size_t k = (size_t)s->nodes.v[id].succ_first + PF_SUCC;
		if (k < s->succ.n)
			__builtin_prefetch(&s->succ.v[k]);
		ready(E, id);
	}
}

static void notify_start(struct eng *E, uint32_t id)
{
	struct tp_sim_scratch *s = E->s;
	const struct tnode *t = &s->nodes.v[id];

	for (uint32_t k = 0; k < t->n_succ; k++) {
		uint32_t x = s->succ.v[t->succ_first + k];
		if (x & 1)
			dec(E, x >> 1);
	}
}

static void try_start(struct eng *E, uint32_t id)
{
	struct tp_sim_scratch *s = E->s;
	struct task *t = &s->tasks.v[id];
	const struct simlane *sl = &s->sims.v[t->ref];

	if (s->nodes.v[id].started)
		return;
	for (uint32_t k = 0; k < sl->n_res; k++) {
		const struct resource *r = &s->res.v[s->lres.v[sl->res_first + k]];
		if (r->busy || r->head >= r->q_n ||
		    s->queue.v[r->q_first + r->head].task != id)
			return;
	}
	for (uint32_t k = 0; k < sl->n_res; k++)
		s->res.v[s->lres.v[sl->res_first + k]].busy = true;
	s->nodes.v[id].started = 1;
	t->start = E->now;
	heap_push(E, E->now + t->dur, id, 0);
	notify_start(E, id);
}

static void flow_begin(struct eng *E, uint32_t id);

static void ready(struct eng *E, uint32_t id)
{
	struct tnode *nd = &E->s->nodes.v[id];
	struct task *t;

	switch (nd->kind) {
	case TK_F:
	case TK_B:
	case TK_W:
	case TK_OPT:
		try_start(E, id);
		break;
	case TK_COMM: {
		const struct btype *bt;
		t = &E->s->tasks.v[id];
		bt = &E->s->btypes.v[t->ref];
		nd->started = 1;
		t->start = E->now;
		notify_start(E, id);
		if (bt->latency > 0)
			heap_push(E, E->now + bt->latency, id, 1);
		else
			flow_begin(E, id);
		break;
	}
	default:
		t = &E->s->tasks.v[id];
		nd->started = 1;
		t->start = E->now;
		notify_start(E, id);
		heap_push(E, E->now + t->dur, id, 0);
		break;
	}
}

static void finish(struct eng *E, uint32_t id)
{
	struct tp_sim_scratch *s = E->s;
	struct task *t = &s->tasks.v[id];
	struct tnode *nd = &s->nodes.v[id];

	t->end = E->now;
	nd->done = 1;
	if (t->kind == TK_F || t->kind == TK_B || t->kind == TK_W ||
	    t->kind == TK_OPT) {
		const struct simlane *sl = &s->sims.v[t->ref];
		for (uint32_t k = 0; k < sl->n_res; k++) {
			struct resource *r =
				&s->res.v[s->lres.v[sl->res_first + k]];
			r->busy = false;
			r->head++;
			if (r->head + PF_QUEUE < r->q_n)
				__builtin_prefetch(
					&s->queue.v[r->q_first + r->head +
						    PF_QUEUE]);
		}
	}
	for (uint32_t k = 0; k < nd->n_succ; k++) {
		uint32_t x = s->succ.v[nd->succ_first + k];
		if (!(x & 1))
			dec(E, x >> 1);
	}
	if (t->kind == TK_F || t->kind == TK_B || t->kind == TK_W ||
	    t->kind == TK_OPT) {
		const struct simlane *sl = &s->sims.v[t->ref];
		for (uint32_t k = 0; k < sl->n_res; k++) {
			struct resource *r =
				&s->res.v[s->lres.v[sl->res_first + k]];
			if (!r->busy && r->head < r->q_n) {
				uint32_t h = s->queue.v[r->q_first + r->head].task;
				if (s->nodes.v[h].ndeps == 0)
					try_start(E, h);
			}
		}
	}
}

/* Move every active bundle forward to time t. */
static void advance(struct eng *E, double t)
{
	struct tp_sim_scratch *s = E->s;
	double dt = t - E->tflow;

	if (dt > 0)
		for (size_t k = 0; k < s->act.n; k++)
			s->act.v[k].remaining -= s->act.v[k].rate * dt;
	if (t != E->tflow)
		E->tc_ok = false;
	E->tflow = t;
}

/* ------------------------------------------------------------------ */
/* Memo                                                                */

/*
 * rates() is a function of the multiset of active bundle types alone: a
 * bundle's class entries, counts and cap are its type's, and the fair
 * shares do not depend on the order of s->act (every step is a minimum,
 * a per-class update or a per-bundle test; weights are sums of integers,
 * exact in any order).  A pipeline's steady state meets the same
 * multisets again and again (GPT-3 13B on 256 GPUs, plans of 4-5 groups
 * of different dp: 30-40% of the calls are new), so a run keeps the
 * shares of each multiset it computed and gives them again, bit for
 * bit, when it meets it again.  The key is mhash (a sum, kept as bundles
 * start and end); an entry is used only when its types' counts are the
 * active ones (bcnt), so a collision costs a computation, never a wrong
 * rate.  At most MEMO_ITEMS items (16 bytes each) per run.
 */
#define MEMO_ITEMS (1u << 18)

static uint64_t bt_hash(uint32_t bt)
{
	return mix64((uint64_t)bt + 1);
}

static int memo_reset(struct tp_sim_scratch *s)
{
	size_t nb = s->btypes.n + 1, size = s->mkeys.n ? s->mkeys.n : 256;

	s->mhash = 0;
	s->ments.n = s->mitems.n = 0;
	s->bcnt.n = s->bstamp.n = s->brate.n = s->mkeys.n = s->mvals.n = 0;
	if (tp_vec_reserve(&s->bcnt, nb) || tp_vec_reserve(&s->bstamp, nb) ||
	    tp_vec_reserve(&s->brate, nb) || tp_vec_reserve(&s->mkeys, size) ||
	    tp_vec_reserve(&s->mvals, size))
		return -1;
	memset(s->bcnt.v, 0, nb * sizeof(uint32_t));
	memset(s->bstamp.v, 0, nb * sizeof(uint32_t));
	s->mkeys.n = s->mvals.n = size;
	memset(s->mvals.v, 0xff, size * sizeof(uint32_t));
	return 0;
}

/* The table slot of key h: its entry's or the empty one that ends its
 * probe. */
static size_t memo_slot(const struct tp_sim_scratch *s, uint64_t h)
{
	size_t mask = s->mkeys.n - 1, slot = (size_t)h & mask;

	while (s->mvals.v[slot] != TP_NONE && s->mkeys.v[slot] != h)
		slot = (slot + 1) & mask;
	return slot;
}

/* Give the active bundles the memo's rates for their multiset; false
 * when it has none. */
static bool memo_get(struct tp_sim_scratch *s)
{
	uint32_t e = s->mvals.v[memo_slot(s, s->mhash)];
	const struct rmemo *m;
	const struct ritem *it;

	if (e == TP_NONE)
		return false;
	m = &s->ments.v[e];
	it = s->mitems.v + m->first;
	if (m->na != s->act.n)
		return false;
	for (uint32_t j = 0; j < m->n; j++)
		if (s->bcnt.v[it[j].bt] != it[j].mult)
			return false;
	for (uint32_t j = 0; j < m->n; j++)
		s->brate.v[it[j].bt] = it[j].rate;
	for (size_t k = 0; k < s->act.n; k++)
		s->act.v[k].rate = s->brate.v[s->act.v[k].bt];
	return true;
}

static int memo_grow(struct tp_sim_scratch *s)
{
	size_t size = 2 * s->mkeys.n;

	s->mkeys.n = s->mvals.n = 0;
	if (tp_vec_reserve(&s->mkeys, size) || tp_vec_reserve(&s->mvals, size))
		return -1;
	s->mkeys.n = s->mvals.n = size;
	memset(s->mvals.v, 0xff, size * sizeof(uint32_t));
	for (size_t e = 0; e < s->ments.n; e++) {
		const struct rmemo *m = &s->ments.v[e];
		const struct ritem *it = s->mitems.v + m->first;
		uint64_t h = 0;
		size_t slot;
		for (uint32_t j = 0; j < m->n; j++)
			h += it[j].mult * bt_hash(it[j].bt);
		slot = memo_slot(s, h);
		s->mkeys.v[slot] = h;
		s->mvals.v[slot] = (uint32_t)e;
	}
	return 0;
}

/* Remember the active bundles' rates for their multiset (quietly not
 * when the memo is full, its key taken by another multiset or memory
 * short: the memo only saves time). */
static void memo_put(struct tp_sim_scratch *s)
{
	uint32_t stamp = ++s->stamp, first = (uint32_t)s->mitems.n;
	size_t slot;

	if (s->mitems.n + s->act.n > MEMO_ITEMS)
		return;
	if (2 * (s->ments.n + 1) > s->mkeys.n && memo_grow(s))
		return;
	slot = memo_slot(s, s->mhash);
	if (s->mvals.v[slot] != TP_NONE ||
	    tp_vec_reserve(&s->mitems, s->act.n) ||
	    tp_vec_reserve(&s->ments, 1))
		return;
	for (size_t k = 0; k < s->act.n; k++) {
		uint32_t bt = s->act.v[k].bt;
		if (s->bstamp.v[bt] == stamp)
			continue;
		s->bstamp.v[bt] = stamp;
		s->mitems.v[s->mitems.n++] =
			(struct ritem){bt, s->bcnt.v[bt], s->act.v[k].rate};
	}
	s->ments.v[s->ments.n] = (struct rmemo){
		first, (uint32_t)s->mitems.n - first, (uint32_t)s->act.n};
	s->mkeys.v[slot] = s->mhash;
	s->mvals.v[slot] = (uint32_t)s->ments.n++;
}

/* Bundle type bt starts (on) or stops moving bytes: the memo's key and
 * counts follow. */
static void memo_track(struct tp_sim_scratch *s, uint32_t bt, bool on)
{
	if (on) {
		s->mhash += bt_hash(bt);
		s->bcnt.v[bt]++;
	} else {
		s->mhash -= bt_hash(bt);
		s->bcnt.v[bt]--;
	}
}

/*
 * private_classes: a class crossed by one active bundle alone (cuse 1) is
 * private to it; its weight is its entry's count until the bundle
 * freezes.  Private classes of a bundle with the same count and the same
 * bandwidth (adjacent in sort_entries' order) start from the same
 * capacity and have the same delta subtracted at every step, so they
 * move identically, bit for bit, and rates() keeps one of them.  A
 * transfer's path crosses several such channels (a GPU's NVLink or PCIe
 * and NIC links, one way and back: GPT-3 13B on 256 GPUs, plans of 4-5
 * groups of different dp, 351 classes touched per call, 111 kept).
 */

/*
 * Max-min fair rates of the active bundles (progressive filling; the
 * flows of one bundle move in lockstep).  Only needed when the set of
 * bundles sharing some channel class changed (class_use): a bundle alone
 * on its classes moves at its own slowest channel's rate, and bundles
 * that share nothing with a starting or ending one keep theirs.
 */
static void rates(struct eng *E)
{
	struct tp_sim_scratch *s = E->s;
	size_t na = s->act.n;
	uint32_t stamp = ++s->stamp;
	double r = 0;
	double *cap_rem = s->ccap_rem.v, *weight = s->cweight.v;
	const double *ccap = s->ccap.v;
	uint32_t *cmark = s->cmark2.v;
	const struct bent *cents = s->cents.v;
	struct active *act = s->act.v;
	bool capped = false;

	E->rates_dirty = false;
	if (na == 0)
		return;
	if (na == 1) {
		/* alone: its slowest channel (progressive filling gives
		 * exactly this) */
		act[0].rate = s->btypes.v[s->tasks.v[act[0].task].ref].rate_alone;
		return;
	}
	if (!s->reference && memo_get(s))
		return;
	s->ctouched.n = 0;
	if (tp_vec_reserve(&s->ctouched, s->ccap.n + 1)) {
		E->oom = 1;
		return;
	}
	s->rents.n = 0;
	for (size_t k = 0; k < na; k++) {
		struct active *a = &act[k];
		const struct bent *en = cents + a->cls_first;
		struct bent *re;
		uint32_t pcount = 0;
		double pcap = -1;
		a->rate = 0;
		if (a->cap < INFINITY)
			capped = true;
		if (tp_vec_reserve(&s->rents, a->n_cls)) {
			E->oom = 1;
			return;
		}
		if (!s->btypes.v[a->bt].cls_sorted &&
		    sort_entries(s, &s->btypes.v[a->bt])) {
			E->oom = 1;
			return;
		}
		a->r_first = (uint32_t)s->rents.n;
		re = s->rents.v + s->rents.n;
		for (uint32_t j = 0; j < a->n_cls; j++) {
			uint32_t c = en[j].chan;
			if (s->cuse.v[c] == 1 && !s->reference) {
				/* private: see private_classes */
				if (en[j].count == pcount && ccap[c] == pcap)
					continue;
				pcount = en[j].count;
				pcap = ccap[c];
			}
			if (cmark[c] != stamp) {
				cmark[c] = stamp;
				cap_rem[c] = ccap[c];
				weight[c] = 0;
				s->ctouched.v[s->ctouched.n++] = c;
			}
			weight[c] += en[j].count;
			*re++ = en[j];
		}
		a->r_n = (uint32_t)(re - s->rents.v) - a->r_first;
		s->rents.n += a->r_n;
	}
	/* every bundle not frozen has moved by the same deltas in the same
	 * order, so its rate is their running sum r; the live lists hold the
	 * bundles not frozen and the classes of positive weight */
	s->live.n = 0;
	if (tp_vec_reserve(&s->live, na)) {
		E->oom = 1;
		return;
	}
	for (size_t k = 0; k < na; k++)
		s->live.v[k] = (uint32_t)k;
	s->live.n = na;
	while (s->live.n > 0) {
		double delta = INFINITY;
		uint32_t *tc = s->ctouched.v, *lv = s->live.v;
		size_t nt = s->ctouched.n, nl = s->live.n, w = 0;
		for (size_t k = 0; k < nt; k++) {
			uint32_t c = tc[k];
			double d;
			if (!(weight[c] > 0))
				continue;
			tc[w++] = c;
			d = cap_rem[c] / weight[c];
			if (d < delta)
				delta = d;
		}
		nt = s->ctouched.n = w;
		w = 0;
		/* a bundle under a per-flow cap (p2p_socket_Bps) stops
		 * at it */
		for (size_t k = 0; capped && k < nl; k++)
			if (act[lv[k]].cap - r < delta)
				delta = act[lv[k]].cap - r;
		if (!(delta < INFINITY))
			break;
		if (delta < 0)
			delta = 0;
		r += delta;
		for (size_t k = 0; k < nt; k++) {
			uint32_t c = tc[k];
			cap_rem[c] -= delta * weight[c];
		}
		for (size_t k = 0; k < nl; k++) {
			struct active *a = &act[lv[k]];
			const struct bent *en = s->rents.v + a->r_first;
			bool sat = r >= a->cap * (1 - 1e-12);
			for (uint32_t j = 0; j < a->r_n && !sat; j++) {
				uint32_t c = en[j].chan;
				if (cap_rem[c] <= 1e-9 * ccap[c])
					sat = true;
			}
			if (!sat) {
				lv[w++] = lv[k];
				continue;
			}
			a->rate = r;
			for (uint32_t j = 0; j < a->r_n; j++)
				weight[en[j].chan] -= en[j].count;
		}
		s->live.n = w;
	}
	for (size_t k = 0; k < s->live.n; k++)
		act[s->live.v[k]].rate = r;
	if (!s->reference)
		memo_put(s);
}

/* Bundle type bt starts or stops crossing its classes: update their use
 * counts.  Returns whether it shares a class with another active bundle
 * (then the rates of the bundles sharing bandwidth with it change). */
static bool class_use(struct tp_sim_scratch *s, const struct btype *bt,
		      bool on)
{
	bool shared = false;
	const struct bent *en = s->cents.v + bt->cls_first;
	uint32_t *cuse = s->cuse.v;

	for (uint32_t j = 0; j < bt->n_cls; j++) {
		uint32_t c = en[j].chan;
		if (on) {
			if (cuse[c]++ > 0)
				shared = true;
		} else if (--cuse[c] > 0) {
			shared = true;
		}
	}
	return shared;
}

/* Link statistics per bundle type (O(1) per event); spread over the
 * channels in report.c. */
static void link_stats(struct eng *E, struct btype *bt, bool on,
		       double bytes)
{
	if (on) {
		if (bt->active++ == 0)
			bt->since = E->now;
	} else {
		bt->moved += bytes;
		if (--bt->active == 0)
			bt->busy += E->now - bt->since;
	}
}

static void flow_begin(struct eng *E, uint32_t id)
{
	struct tp_sim_scratch *s = E->s;
	struct task *t = &s->tasks.v[id];

	if (!(t->dur > 0)) {
		finish(E, id);
		return;
	}
	advance(E, E->now);
	if (tp_vec_push(&s->act,
			((struct active){id, t->ref,
					 s->btypes.v[t->ref].cls_first,
					 s->btypes.v[t->ref].n_cls, 0, 0,
					 t->dur, 0,
					 s->btypes.v[t->ref].rate_cap}))) {
		E->oom = 1;
		return;
	}
	E->tc_ok = false;
	memo_track(s, t->ref, true);
	link_stats(E, &s->btypes.v[t->ref], true, 0);
	if (class_use(s, &s->btypes.v[t->ref], true))
		E->rates_dirty = true;
	else
		s->act.v[s->act.n - 1].rate = s->btypes.v[t->ref].rate_alone;
}

enum tp_status tp_sim_run_engine(const struct tp_sim *sim,
				 struct tp_sim_scratch *s, double *t_end,
				 struct tp_error *err)
{
	struct eng E = {sim, s, 0, 0, false, 0, false, INFINITY, 0};
	size_t nt = s->tasks.n;
	double tmax;
	bool inf = false, stuck = false;

	s->heap.n = 0;
	s->act.n = 0;
	if (memo_reset(s))
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	for (size_t k = 0; k < s->touched.n; k++)
		s->cnt[s->touched.v[k]] = 0;
	s->touched.n = 0;
	for (size_t t = 0; t < nt; t++)
		if (s->nodes.v[t].ndeps == 0)
			ready(&E, (uint32_t)t);
	for (;;) {
		double th = s->heap.n ? s->heap.v[0].t : INFINITY, tc = INFINITY;
		size_t kmin = 0;

		if (E.oom)
			break;
		if (E.rates_dirty) {
			rates(&E);
			E.tc_ok = false;
		}
		if (E.tc_ok && !s->reference) {
			tc = E.tc;
			kmin = E.kmin;
		} else {
			for (size_t k = 0; k < s->act.n; k++) {
				const struct active *a = &s->act.v[k];
				double tt = a->rate > 0
						    ? E.tflow + a->remaining / a->rate
						    : INFINITY;
				if (tt < tc) {
					tc = tt;
					kmin = k;
				}
			}
			E.tc = tc;
			E.kmin = kmin;
			E.tc_ok = true;
		}
		if (th == INFINITY && tc == INFINITY)
			break;
		if (tc <= th) {
			size_t k = 0;
			if (tc < E.now)
				tc = E.now;
			E.now = tc;
			advance(&E, tc);
			E.tc_ok = false;
			s->act.v[kmin].remaining = 0;
			/* finish every bundle done by now (compact first:
			 * finish() may start new flows) */
			s->tmp3.n = 0;
			while (k < s->act.n) {
				struct active *a = &s->act.v[k];
				double tot = s->tasks.v[a->task].dur;
				if (a->remaining <= 1e-9 * tot + 1e-6) {
					if (tp_vec_push(&s->tmp3, a->task)) {
						E.oom = 1;
						break;
					}
					memo_track(s, a->bt, false);
					s->act.v[k] = s->act.v[--s->act.n];
				} else {
					k++;
				}
			}
			for (size_t j = 0; j < s->tmp3.n; j++) {
				uint32_t id = s->tmp3.v[j];
				if (class_use(s, &s->btypes.v[s->tasks.v[id].ref],
					      false))
					E.rates_dirty = true;
				link_stats(&E, &s->btypes.v[s->tasks.v[id].ref],
					   false, s->tasks.v[id].dur);
				finish(&E, id);
			}
		} else {
			struct heap_ev ev = heap_pop(&E);
			E.now = ev.t;
			if (ev.ev == 1)
				flow_begin(&E, ev.task);
			else
				finish(&E, ev.task);
		}
	}
	if (E.oom)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	/* one pass: a task of infinite length is reported before one not
	 * done, as the checks' order says */
	*t_end = 0;
	tmax = 0;
	for (size_t t = 0; t < nt; t++) {
		const struct task *x = &s->tasks.v[t];
		bool done = s->nodes.v[t].done;
		if (!isfinite(x->dur) || (done && !isfinite(x->end)))
			inf = true;
		if (!done)
			stuck = true;
		else if (x->end > tmax)
			tmax = x->end;
	}
	/* a task of infinite length is the figures', not the schedule's
	   (it read "use the 1f1b schedule" under 1f1b) */
	if (inf)
		return tp_error_set(
			err, TP_EINPUT,
			"a task of the plan takes forever: the model's "
			"or the topology's figures are too large (or a "
			"rate too small) to simulate");
	if (stuck)
		return tp_error_set_path(
			err, TP_EINPUT, "$.schedule",
			"the plan's groups cannot run in this order "
			"(tasks wait for each other); use groups that "
			"form a pipeline, on disjoint device sets in "
			"order");
	*t_end = tmax;
	s->tasks_total += nt;
	return TP_OK;
}

