/*
 * mincut.h - maximum flow / minimum s-t cut, and exact minimisation of
 * pairwise submodular binary energies through a cut.
 *
 * struct tp_mincut is a flow network built edge by edge and solved by
 * push-relabel (highest-label selection, gap heuristic, periodic global
 * relabelling; Cherkassky & Goldberg, "On implementing push-relabel method
 * for the maximum flow problem", 1997).  Only the first phase runs: it
 * yields a maximum preflow, whose value is the minimum cut, and the cut's
 * source side is the set of vertices that cannot reach the sink in the
 * residual network.  Capacities are int64_t so the result is exact; the
 * storage is a compact CSR arc array rebuilt at each solve, and all buffers
 * are kept between solves (reset does not free).
 *
 * struct tp_energy minimises
 *     E(x) = constant + sum_v lin[v] * x_v
 *                     + sum_k c_k * [x_{u_k} = 1 and x_{v_k} = 0],  c_k >= 0
 * over x in {0,1}^n, which is every pairwise submodular binary energy
 * (tp_energy_add_pairwise decomposes any submodular 2x2 table into these
 * terms), with c_k = infinity expressing the implication x_u = 1 => x_v = 1.
 * Doubles are scaled to integers for the cut (see mincut.c for the
 * reduction and the rounding bound); the returned value is E evaluated in
 * double precision at the returned x.
 *
 * Ownership: both structs are embedded by the caller (_init / _release);
 * they own their buffers.  Errors: TP_ENOMEM; TP_EINPUT for a vertex out of
 * range, a negative capacity or a non-submodular pairwise table; TP_ELIMIT
 * when the capacity leaving the source exceeds TP_MINCUT_CAP_MAX.
 * Not thread-safe per object; use one object per thread.
 */
#ifndef TP_MINCUT_H
#define TP_MINCUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/vec.h"

/* An infinite capacity (never saturated by a finite flow). */
#define TP_MINCUT_INF ((int64_t)1 << 62)
/* Bound on the total capacity leaving the source, so sums cannot
 * overflow. */
#define TP_MINCUT_CAP_MAX ((int64_t)1 << 60)

struct tp_mincut_edge {
	uint32_t u, v;
	int64_t cap, rcap; /* u->v and v->u */
};

struct tp_mincut {
	uint32_t n; /* vertices */
	TP_VEC(struct tp_mincut_edge) edges;
	/* solver storage (sized at solve time, kept for reuse) */
	size_t cap_n, cap_m;
	uint32_t *first;  /* n + 1: arcs of v are [first[v], first[v+1]) */
	uint32_t *head;   /* per arc */
	uint32_t *rev;    /* per arc: the reverse arc */
	int64_t *res;     /* per arc: residual capacity */
	int64_t *excess;  /* per vertex */
	uint32_t *label;  /* per vertex; n = removed */
	uint32_t *cur;    /* per vertex: current arc */
	uint32_t *anext;  /* per vertex: next in its active bucket */
	uint32_t *lnext, *lprev; /* per vertex: its label bucket (gaps) */
	uint32_t *abucket, *lbucket; /* per label: list heads */
	uint32_t *queue;  /* BFS */
	/* statistics of the last solve */
	uint64_t pushes, relabels, global_updates;
};

void tp_mincut_init(struct tp_mincut *f);
void tp_mincut_release(struct tp_mincut *f);

/* Forget all edges and set the vertex count (buffers are kept). */
void tp_mincut_reset(struct tp_mincut *f, uint32_t n_vertices);

/*
 * Add an edge u->v of capacity cap and v->u of capacity rcap (both >= 0,
 * at most TP_MINCUT_INF).  Parallel edges add up; self-loops are ignored.
 */
enum tp_status tp_mincut_add_edge(struct tp_mincut *f, uint32_t u, uint32_t v,
				  int64_t cap, int64_t rcap,
				  struct tp_error *err);

/*
 * Compute a minimum s-t cut.  *value receives its capacity (the maximum
 * flow); source_side (n entries, may be NULL) receives 1 for the vertices
 * on the source side, 0 for the others.  The source side returned is the
 * largest minimum cut's (every vertex that cannot reach t in the residual
 * network).  TP_EINPUT if s == t or out of range.
 */
enum tp_status tp_mincut_solve(struct tp_mincut *f, uint32_t s, uint32_t t,
			       int64_t *value, uint8_t *source_side,
			       struct tp_error *err);

/* A pairwise term: c when x_u = 1 and x_v = 0. */
struct tp_energy_pair {
	uint32_t u, v;
	double c; /* >= 0, or INFINITY */
};

struct tp_energy {
	uint32_t n;
	double constant;
	TP_VEC(double) lin; /* n entries */
	TP_VEC(struct tp_energy_pair) pairs;
	struct tp_mincut cut;
	TP_VEC(uint8_t) side;
};

void tp_energy_init(struct tp_energy *e);
void tp_energy_release(struct tp_energy *e);

/* Start a new energy over n variables, all terms zero. */
enum tp_status tp_energy_reset(struct tp_energy *e, uint32_t n,
			       struct tp_error *err);

/* Add the constant c. */
void tp_energy_add_constant(struct tp_energy *e, double c);

/* Add e0 when x_v = 0 and e1 when x_v = 1 (finite). */
void tp_energy_add_unary(struct tp_energy *e, uint32_t v, double e0,
			 double e1);

/*
 * Add the term E(x_u, x_v) given by its table e00, e01, e10, e11 (first
 * index x_u), finite.  It must be submodular: e01 + e10 >= e00 + e11
 * (up to rounding), else TP_EINPUT.  u == v is TP_EINPUT.
 */
enum tp_status tp_energy_add_pairwise(struct tp_energy *e, uint32_t u,
				      uint32_t v, double e00, double e01,
				      double e10, double e11,
				      struct tp_error *err);

/* Add c >= 0 (or INFINITY) when x_u = 1 and x_v = 0. */
enum tp_status tp_energy_add_cut(struct tp_energy *e, uint32_t u, uint32_t v,
				 double c, struct tp_error *err);

/* Forbid x_u = 1 with x_v = 0 (x_u implies x_v). */
enum tp_status tp_energy_add_implies(struct tp_energy *e, uint32_t u,
				     uint32_t v, struct tp_error *err);

/* E(x) for an assignment (n entries of 0/1); INFINITY if it violates an
 * implication. */
double tp_energy_eval(const struct tp_energy *e, const uint8_t *x);

/*
 * Find an assignment minimising E and write it to x (n entries); *value
 * (may be NULL) receives E(x).  Among minimisers, x is the smallest (the
 * intersection of all of them): variables with nothing to gain stay 0.  The minimum is exact for the energy with
 * every coefficient rounded to a multiple of (sum of |coefficients|) / 2^56;
 * hence within about n_terms * 2^-57 * sum|coefficients| of the true one.
 */
enum tp_status tp_energy_minimize(struct tp_energy *e, uint8_t *x,
				  double *value, struct tp_error *err);

#endif
