/*
 * mincut.c - push-relabel maximum flow and pairwise energy minimisation.
 *
 * Push-relabel, first phase only (Goldberg & Tarjan 1988; the heuristics
 * of Cherkassky & Goldberg 1997):
 *  - labels d(v) are lower bounds on the residual distance to t; d(s) = n;
 *  - the active vertex (positive excess, d < n) with the highest label is
 *    discharged: excess is pushed along admissible arcs (residual > 0 and
 *    d(head) = d(v) - 1), and when none is left v is relabelled to
 *    1 + min d(head) over its residual arcs;
 *  - gap heuristic: when the last vertex with label k leaves it, every
 *    vertex with a label above k can no longer reach t; they get label n
 *    (removed);
 *  - global relabelling: now and then (after O(n + m) relabelling work) the
 *    labels are recomputed exactly by a backward breadth-first search from
 *    t in the residual network.
 * When no active vertex with d < n is left the preflow is maximum: the
 * vertices that cannot reach t in the residual network form the source
 * side of a minimum cut, and every arc leaving that side is saturated while
 * none entering it carries flow, so the cut's capacity equals the excess
 * gathered at t.  We stop there (the second phase, returning excess to s,
 * is only needed for the flow itself).
 */
#include "mincut.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX

void tp_mincut_init(struct tp_mincut *f)
{
	memset(f, 0, sizeof(*f));
}

static void free_storage(struct tp_mincut *f)
{
	free(f->first);
	free(f->head);
	free(f->rev);
	free(f->res);
	free(f->excess);
	free(f->label);
	free(f->cur);
	free(f->anext);
	free(f->lnext);
	free(f->lprev);
	free(f->abucket);
	free(f->lbucket);
	free(f->queue);
}

void tp_mincut_release(struct tp_mincut *f)
{
	if (!f)
		return;
	free_storage(f);
	tp_vec_free(&f->edges);
	memset(f, 0, sizeof(*f));
}

void tp_mincut_reset(struct tp_mincut *f, uint32_t n_vertices)
{
	f->n = n_vertices;
	f->edges.n = 0;
}

enum tp_status tp_mincut_add_edge(struct tp_mincut *f, uint32_t u, uint32_t v,
				  int64_t cap, int64_t rcap,
				  struct tp_error *err)
{
	struct tp_mincut_edge e;

	if (u >= f->n || v >= f->n)
		return tp_error_set(err, TP_EINPUT,
				    "edge %u->%u: vertex out of range (%u "
				    "vertices)",
				    u, v, f->n);
	if (cap < 0 || rcap < 0 || cap > TP_MINCUT_INF || rcap > TP_MINCUT_INF)
		return tp_error_set(err, TP_EINPUT,
				    "edge %u->%u: capacity out of range", u, v);
	if (u == v || (cap == 0 && rcap == 0))
		return TP_OK;
	e.u = u;
	e.v = v;
	e.cap = cap;
	e.rcap = rcap;
	if (tp_vec_push(&f->edges, e))
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	return TP_OK;
}

/* Make room for n vertices and m arcs. */
static int ensure(struct tp_mincut *f, size_t n, size_t m)
{
	if (n > f->cap_n) {
		free(f->first);
		free(f->excess);
		free(f->label);
		free(f->cur);
		free(f->anext);
		free(f->lnext);
		free(f->lprev);
		free(f->abucket);
		free(f->lbucket);
		free(f->queue);
		f->first = tp_calloc(n + 1, sizeof(*f->first));
		f->excess = tp_calloc(n, sizeof(*f->excess));
		f->label = tp_calloc(n, sizeof(*f->label));
		f->cur = tp_calloc(n, sizeof(*f->cur));
		f->anext = tp_calloc(n, sizeof(*f->anext));
		f->lnext = tp_calloc(n, sizeof(*f->lnext));
		f->lprev = tp_calloc(n, sizeof(*f->lprev));
		f->abucket = tp_calloc(n + 1, sizeof(*f->abucket));
		f->lbucket = tp_calloc(n + 1, sizeof(*f->lbucket));
		f->queue = tp_calloc(n, sizeof(*f->queue));
		f->cap_n = n;
		if (!f->first || !f->excess || !f->label || !f->cur ||
		    !f->anext || !f->lnext || !f->lprev || !f->abucket ||
		    !f->lbucket || !f->queue) {
			f->cap_n = 0;
			return -1;
		}
	}
	if (m > f->cap_m) {
		free(f->head);
		free(f->rev);
		free(f->res);
		f->head = tp_calloc(m, sizeof(*f->head));
		f->rev = tp_calloc(m, sizeof(*f->rev));
		f->res = tp_calloc(m, sizeof(*f->res));
		f->cap_m = m;
		if (!f->head || !f->rev || !f->res) {
			f->cap_m = 0;
			return -1;
		}
	}
	return 0;
}

/* Solver state that is not worth keeping in the struct. */
struct pr {
	struct tp_mincut *f;
	uint32_t n, s, t;
	uint32_t amax; /* no active vertex has a label above amax */
	uint32_t lmax; /* no labelled vertex (d < n) has a label above lmax */
	uint64_t work;
};

static void active_add(struct pr *p, uint32_t v)
{
	struct tp_mincut *f = p->f;
	uint32_t d = f->label[v];

	f->anext[v] = f->abucket[d];
	f->abucket[d] = v;
	if (d > p->amax)
		p->amax = d;
}

static void label_add(struct pr *p, uint32_t v)
{
	struct tp_mincut *f = p->f;
	uint32_t d = f->label[v], h = f->lbucket[d];

	f->lnext[v] = h;
	f->lprev[v] = NIL;
	if (h != NIL)
		f->lprev[h] = v;
	f->lbucket[d] = v;
	if (d > p->lmax)
		p->lmax = d;
}

static void label_remove(struct pr *p, uint32_t v)
{
	struct tp_mincut *f = p->f;
	uint32_t nx = f->lnext[v], pv = f->lprev[v];

	if (pv != NIL)
		f->lnext[pv] = nx;
	else
		f->lbucket[f->label[v]] = nx;
	if (nx != NIL)
		f->lprev[nx] = pv;
}

/* Exact labels by a backward BFS from t; rebuilds both bucket sets. */
static void global_relabel(struct pr *p)
{
	struct tp_mincut *f = p->f;
	uint32_t n = p->n, qh = 0, qt = 0;

	for (uint32_t v = 0; v < n; v++)
		f->label[v] = n;
	for (uint32_t d = 0; d <= n; d++)
		f->abucket[d] = f->lbucket[d] = NIL;
	p->amax = p->lmax = 0;
	f->label[p->t] = 0;
	f->queue[qt++] = p->t;
	while (qh < qt) {
		uint32_t v = f->queue[qh++];
		uint32_t dn = f->label[v] + 1;

		for (uint32_t a = f->first[v]; a < f->first[v + 1]; a++) {
			uint32_t w = f->head[a];

			if (f->label[w] == n && w != p->s &&
			    f->res[f->rev[a]] > 0) {
				f->label[w] = dn;
				f->queue[qt++] = w;
				f->cur[w] = f->first[w];
				label_add(p, w);
				if (f->excess[w] > 0)
					active_add(p, w);
			}
		}
	}
	f->global_updates++;
	p->work = 0;
}

/* Every vertex labelled above k loses its way to t: remove them. */
static void gap(struct pr *p, uint32_t k)
{
	struct tp_mincut *f = p->f;

	for (uint32_t d = k + 1; d <= p->lmax; d++) {
		for (uint32_t v = f->lbucket[d]; v != NIL; v = f->lnext[v])
			f->label[v] = p->n;
		f->lbucket[d] = NIL;
	}
	p->lmax = k;
}

/* Push from v until its excess is gone or its label reaches n. */
static void discharge(struct pr *p, uint32_t v)
{
	struct tp_mincut *f = p->f;
	uint32_t n = p->n, end = f->first[v + 1];

	for (;;) {
		uint32_t d = f->label[v], dm = d - 1;
		uint32_t newd = n, best = NIL, old;

		for (uint32_t a = f->cur[v]; a < end; a++) {
			uint32_t w;
			int64_t delta;

			if (f->res[a] <= 0)
				continue;
			w = f->head[a];
			if (f->label[w] != dm)
				continue;
			delta = f->excess[v] < f->res[a] ? f->excess[v]
							 : f->res[a];
			f->res[a] -= delta;
			f->res[f->rev[a]] += delta;
			if (f->excess[w] == 0 && w != p->t)
				active_add(p, w);
			f->excess[w] += delta;
			f->excess[v] -= delta;
			f->pushes++;
			if (f->excess[v] == 0) {
				f->cur[v] = a;
				return;
			}
		}
		/* relabel */
		f->relabels++;
		p->work += 12 + (end - f->first[v]);
		for (uint32_t a = f->first[v]; a < end; a++) {
			if (f->res[a] > 0 && f->label[f->head[a]] + 1 < newd) {
				newd = f->label[f->head[a]] + 1;
				best = a;
			}
		}
		old = d;
		label_remove(p, v);
		if (f->lbucket[old] == NIL) {
			/* v was the last with its label */
			gap(p, old);
			f->label[v] = n;
			return;
		}
		if (newd >= n) {
			f->label[v] = n;
			return;
		}
		f->label[v] = newd;
		f->cur[v] = best;
		label_add(p, v);
	}
}

enum tp_status tp_mincut_solve(struct tp_mincut *f, uint32_t s, uint32_t t,
			       int64_t *value, uint8_t *source_side,
			       struct tp_error *err)
{
	uint32_t n = f->n;
	struct pr p;
	int64_t out_s = 0;
	size_t m;

	if (s >= n || t >= n || s == t)
		return tp_error_set(err, TP_EINPUT,
				    "bad source %u / sink %u (%u vertices)", s,
				    t, n);
	if (tp_size_mul(f->edges.n, 2, &m) || m >= UINT32_MAX ||
	    n >= UINT32_MAX - 1)
		return tp_error_set(err, TP_ELIMIT, "flow network too large");
	if (ensure(f, n, m ? m : 1))
		return tp_error_set(err, TP_ENOMEM, "out of memory");

	/* CSR: count, prefix sums, place the two arcs of every edge */
	memset(f->first, 0, (n + 1) * sizeof(*f->first));
	for (size_t k = 0; k < f->edges.n; k++) {
		f->first[f->edges.v[k].u + 1]++;
		f->first[f->edges.v[k].v + 1]++;
	}
	for (uint32_t v = 0; v < n; v++)
		f->first[v + 1] += f->first[v];
	memcpy(f->cur, f->first, n * sizeof(*f->cur));
	for (size_t k = 0; k < f->edges.n; k++) {
		const struct tp_mincut_edge *e = &f->edges.v[k];
		uint32_t a = f->cur[e->u]++, b = f->cur[e->v]++;

		f->head[a] = e->v;
		f->res[a] = e->cap;
		f->rev[a] = b;
		f->head[b] = e->u;
		f->res[b] = e->rcap;
		f->rev[b] = a;
	}
	for (uint32_t a = f->first[s]; a < f->first[s + 1]; a++) {
		if (f->res[a] > TP_MINCUT_CAP_MAX - out_s)
			return tp_error_set(err, TP_ELIMIT,
					    "capacity leaving the source "
					    "exceeds 2^60");
		out_s += f->res[a];
	}

	memset(f->excess, 0, n * sizeof(*f->excess));
	f->pushes = f->relabels = f->global_updates = 0;
	p.f = f;
	p.n = n;
	p.s = s;
	p.t = t;
	p.work = 0;
	/* saturate the source's arcs */
	for (uint32_t a = f->first[s]; a < f->first[s + 1]; a++) {
		int64_t d = f->res[a];

		if (d > 0) {
			f->res[a] = 0;
			f->res[f->rev[a]] += d;
			f->excess[f->head[a]] += d;
			f->excess[s] -= d;
		}
	}
	global_relabel(&p);
	f->label[s] = n;
	for (;;) {
		uint32_t v;

		while (p.amax > 0 && f->abucket[p.amax] == NIL)
			p.amax--;
		v = f->abucket[p.amax];
		if (v == NIL)
			break;
		f->abucket[p.amax] = f->anext[v];
		if (f->label[v] >= n || f->excess[v] == 0)
			continue;
		discharge(&p, v);
		if (p.work > 6 * (uint64_t)n + m) {
			global_relabel(&p);
			f->label[s] = n;
		}
	}
	*value = f->excess[t];
	if (source_side) {
		/* vertices that reach t in the residual network: label < n
		 * after an exact relabelling */
		global_relabel(&p);
		for (uint32_t v = 0; v < n; v++)
			source_side[v] = f->label[v] >= n;
		source_side[s] = 1;
		source_side[t] = 0;
	}
	return TP_OK;
}

/* --- energies ---------------------------------------------------------- */

/*
 * The reduction.  Identify x_v = 1 with "v on the sink side" (x_v = 0 with
 * the source side).  An arc a->b of capacity c is cut exactly when a is on
 * the source side and b on the sink side, i.e. when x_a = 0 and x_b = 1, so
 * it contributes c * [x_a = 0, x_b = 1] to the cut:
 *  - a pairwise term c * [x_u = 1, x_v = 0] (c >= 0) is the arc v->u;
 *    c = infinity makes x_u = 1, x_v = 0 impossible (an implication);
 *  - a unary term a * x_v with a > 0 is the arc s->v of capacity a
 *    (cut when v is on the sink side, x_v = 1);
 *  - a * x_v with a < 0 equals a + |a| * (1 - x_v): the arc v->t of
 *    capacity |a| (cut when x_v = 0) plus the constant a;
 *  - a general table E(x_u, x_v) = (A, B, C, D) for (00, 01, 10, 11) is
 *        A + (C - A) x_u + (D - C) x_v + (B + C - A - D) (1 - x_u) x_v,
 *    which checks at the four corners; the last term is the pairwise term
 *    [x_v = 1, x_u = 0] with coefficient B + C - A - D, nonnegative
 *    exactly when E is submodular.
 * Every s-t cut is thus an assignment, and its capacity is E(x) minus a
 * constant (the sum of the constant terms and of the negative unary
 * coefficients): the minimum cut is the minimum energy.  Cuts through
 * infinite arcs are never minimal since x = 0 satisfies every implication
 * (each has x_u = 1 on its left), so the minimum is finite.  The solver
 * returns the largest source side among minimum cuts, so x is the smallest
 * minimiser (minimisers of a submodular function are closed under
 * intersection): variables that gain nothing stay 0.
 *
 * Integer capacities: every finite coefficient is multiplied by
 * 2^56 / T (T the sum of their absolute values) and rounded to the nearest
 * integer, which keeps the source's capacity under 2^60 and makes the cut
 * exact for the rounded energy; each term moves by at most T * 2^-57.
 */

void tp_energy_init(struct tp_energy *e)
{
	memset(e, 0, sizeof(*e));
	tp_mincut_init(&e->cut);
}

void tp_energy_release(struct tp_energy *e)
{
	if (!e)
		return;
	tp_vec_free(&e->lin);
	tp_vec_free(&e->pairs);
	tp_vec_free(&e->side);
	tp_mincut_release(&e->cut);
	memset(e, 0, sizeof(*e));
}

enum tp_status tp_energy_reset(struct tp_energy *e, uint32_t n,
			       struct tp_error *err)
{
	e->n = n;
	e->constant = 0;
	e->lin.n = 0;
	e->pairs.n = 0;
	if (tp_vec_reserve(&e->lin, n))
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	for (uint32_t v = 0; v < n; v++)
		e->lin.v[v] = 0;
	e->lin.n = n;
	return TP_OK;
}

void tp_energy_add_constant(struct tp_energy *e, double c)
{
	e->constant += c;
}

void tp_energy_add_unary(struct tp_energy *e, uint32_t v, double e0,
			 double e1)
{
	assert(v < e->n && isfinite(e0) && isfinite(e1));
	e->constant += e0;
	e->lin.v[v] += e1 - e0;
}

enum tp_status tp_energy_add_cut(struct tp_energy *e, uint32_t u, uint32_t v,
				 double c, struct tp_error *err)
{
	struct tp_energy_pair pr;

	if (u >= e->n || v >= e->n || u == v)
		return tp_error_set(err, TP_EINPUT,
				    "pairwise term on variables %u, %u (of %u)",
				    u, v, e->n);
	if (!(c >= 0))
		return tp_error_set(err, TP_EINPUT,
				    "negative or NaN cut coefficient %g", c);
	if (c == 0)
		return TP_OK;
	pr.u = u;
	pr.v = v;
	pr.c = c;
	if (tp_vec_push(&e->pairs, pr))
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	return TP_OK;
}

enum tp_status tp_energy_add_implies(struct tp_energy *e, uint32_t u,
				     uint32_t v, struct tp_error *err)
{
	return tp_energy_add_cut(e, u, v, INFINITY, err);
}

enum tp_status tp_energy_add_pairwise(struct tp_energy *e, uint32_t u,
				      uint32_t v, double e00, double e01,
				      double e10, double e11,
				      struct tp_error *err)
{
	double k = e01 + e10 - e00 - e11;
	double scale = fabs(e00) + fabs(e01) + fabs(e10) + fabs(e11);

	if (u >= e->n || v >= e->n || u == v)
		return tp_error_set(err, TP_EINPUT,
				    "pairwise term on variables %u, %u (of %u)",
				    u, v, e->n);
	if (!isfinite(scale))
		return tp_error_set(err, TP_EINPUT,
				    "pairwise term is not finite");
	if (k < 0) {
		if (k < -1e-12 * scale)
			return tp_error_set(
				err, TP_EINPUT,
				"pairwise term on %u, %u is not submodular "
				"(E01 + E10 < E00 + E11 by %g)",
				u, v, -k);
		k = 0;
	}
	e->constant += e00;
	e->lin.v[u] += e10 - e00;
	e->lin.v[v] += e11 - e10;
	return tp_energy_add_cut(e, v, u, k, err);
}

double tp_energy_eval(const struct tp_energy *e, const uint8_t *x)
{
	double sum = e->constant;

	for (uint32_t v = 0; v < e->n; v++)
		if (x[v])
			sum += e->lin.v[v];
	for (size_t k = 0; k < e->pairs.n; k++) {
		const struct tp_energy_pair *pr = &e->pairs.v[k];

		if (x[pr->u] && !x[pr->v])
			sum += pr->c;
	}
	return sum;
}

static int64_t scaled(double c, double scale)
{
	double q = nearbyint(c * scale);

	return (int64_t)q;
}

enum tp_status tp_energy_minimize(struct tp_energy *e, uint8_t *x,
				  double *value, struct tp_error *err)
{
	uint32_t n = e->n, s = n, t = n + 1;
	double total = 0, scale;
	enum tp_status st;
	int64_t cut;

	for (uint32_t v = 0; v < n; v++)
		total += fabs(e->lin.v[v]);
	for (size_t k = 0; k < e->pairs.n; k++)
		if (isfinite(e->pairs.v[k].c))
			total += e->pairs.v[k].c;
	if (!isfinite(total))
		return tp_error_set(err, TP_EINPUT, "energy is not finite");
	if (total == 0) {
		memset(x, 0, n);
		if (value)
			*value = tp_energy_eval(e, x);
		return TP_OK;
	}
	scale = (double)((int64_t)1 << 56) / total;
	tp_mincut_reset(&e->cut, n + 2);
	for (uint32_t v = 0; v < n; v++) {
		double a = e->lin.v[v];
		int64_t c = scaled(fabs(a), scale);

		if (c == 0)
			continue;
		st = a > 0 ? tp_mincut_add_edge(&e->cut, s, v, c, 0, err)
			   : tp_mincut_add_edge(&e->cut, v, t, c, 0, err);
		if (st)
			return st;
	}
	for (size_t k = 0; k < e->pairs.n; k++) {
		const struct tp_energy_pair *pr = &e->pairs.v[k];
		int64_t c = isfinite(pr->c) ? scaled(pr->c, scale)
					    : TP_MINCUT_INF;

		if (c == 0)
			continue;
		st = tp_mincut_add_edge(&e->cut, pr->v, pr->u, c, 0, err);
		if (st)
			return st;
	}
	e->side.n = 0;
	if (tp_vec_reserve(&e->side, n + 2))
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	st = tp_mincut_solve(&e->cut, s, t, &cut, e->side.v, err);
	if (st)
		return st;
	for (uint32_t v = 0; v < n; v++)
		x[v] = !e->side.v[v];
	if (value)
		*value = tp_energy_eval(e, x);
	return TP_OK;
}
