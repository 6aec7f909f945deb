/*
 * profile.c - a profile table's value at a point (profile.h).
 */
#include "profile.h"

#include <string.h>

const char *tp_profile_how_name(enum tp_profile_how h)
{
	static const char *const names[TP_PROFILE_HOW_COUNT] = {
		"roofline", "measured", "interpolated", "extrapolated"};
	return (unsigned)h < TP_PROFILE_HOW_COUNT ? names[h] : "?";
}

static uint32_t pt_tp(const struct tp_profile *p)
{
	return p->tp ? p->tp : 1;
}

/* (tp, batch) order of two points. */
static int pt_cmp(const struct tp_profile *a, const struct tp_profile *b)
{
	if (pt_tp(a) != pt_tp(b))
		return pt_tp(a) < pt_tp(b) ? -1 : 1;
	if (a->batch != b->batch)
		return a->batch < b->batch ? -1 : 1;
	return 0;
}

uint32_t tp_profile_table(const struct tp_model *m, uint32_t op,
			  const char *type, uint32_t *idx)
{
	const struct tp_op *o = &m->ops.v[op];
	const struct tp_profile *v = m->profiles.v;
	uint32_t n = 0;

	for (uint32_t k = 0; k < o->n_prof; k++) {
		uint32_t q = o->prof_first + k, j;
		int c = 1;
		if (strcmp(v[q].device_type, type) != 0)
			continue;
		/* insertion: tables are a few dozen points */
		for (j = n; j > 0 && (c = pt_cmp(&v[idx[j - 1]], &v[q])) > 0;
		     j--)
			;
		if (j > 0 && c == 0) {
			idx[j - 1] = q; /* the later point replaces */
			continue;
		}
		memmove(idx + j + 1, idx + j, (n - j) * sizeof(*idx));
		idx[j] = q;
		n++;
	}
	return n;
}

/* The figures of a point: times, tp communication, activation (per
 * micro-batch: scale with the batch), optimizer, state (do not). */
enum { F_FWD, F_BWD, F_COMM, F_ACT, F_OPT, F_STATE, F_COUNT };
static const unsigned f_bit[F_COUNT] = {
	0, 0, TP_PROFILE_HAS_TP_COMM, TP_PROFILE_HAS_ACTIVATION,
	TP_PROFILE_HAS_OPTIMIZER, TP_PROFILE_HAS_STATE};
#define F_BATCH(f) ((f) <= F_ACT)

struct val {
	double f[F_COUNT];
	unsigned has;
	enum tp_profile_how how;
};

static void pt_val(const struct tp_profile *p, struct val *v)
{
	v->f[F_FWD] = p->forward_s;
	v->f[F_BWD] = p->backward_s;
	v->f[F_COMM] = p->tp_comm_s;
	v->f[F_ACT] = p->activation_bytes;
	v->f[F_OPT] = p->optimizer_s;
	v->f[F_STATE] = p->state_bytes;
	v->has = p->has;
	v->how = TP_PROFILE_MEASURED;
}

static void mix(const struct val *a, const struct val *b, double w,
		struct val *out)
{
	for (int f = 0; f < F_COUNT; f++)
		out->f[f] = (1 - w) * a->f[f] + w * b->f[f];
	out->has = a->has & b->has;
	out->how = a->how > b->how ? a->how : b->how;
	if (out->how < TP_PROFILE_INTERPOLATED)
		out->how = TP_PROFILE_INTERPOLATED;
}

/* Row p[0..n) (one tp, sorted by batch) at s samples, its figures
 * divided by tpdiv (the tp extrapolation; 1 inside the table). */
static void row_eval(const struct tp_profile *const *p, uint32_t n, double s,
		     double tpdiv, struct val *out)
{
	uint32_t i;

	for (i = 0; i < n && p[i]->batch < s; i++)
		;
	if ((i < n && p[i]->batch == s) || i == 0 || i == n) {
		bool exact = i < n && p[i]->batch == s;
		const struct tp_profile *e = p[exact || i == 0 ? i : n - 1];
		/* samples / batch / tp, the order old files were priced in */
		double scale = s / e->batch / tpdiv;
		pt_val(e, out);
		for (int f = 0; f < F_COUNT; f++)
			out->f[f] = F_BATCH(f) ? out->f[f] * scale
					       : out->f[f] / tpdiv;
		out->how = exact ? TP_PROFILE_MEASURED : TP_PROFILE_EXTRAPOLATED;
	} else {
		struct val a, b;
		pt_val(p[i - 1], &a);
		pt_val(p[i], &b);
		mix(&a, &b,
		    (s - p[i - 1]->batch) / (p[i]->batch - p[i - 1]->batch),
		    out);
		if (tpdiv != 1)
			for (int f = 0; f < F_COUNT; f++)
				out->f[f] /= tpdiv;
	}
}

enum tp_profile_how tp_profile_eval(const struct tp_model *m,
				    const uint32_t *idx, uint32_t n,
				    double samples, uint32_t tp, bool divides,
				    struct tp_profile_at *out)
{
	const struct tp_profile *pts[64], *const *p;
	uint32_t row[65], nr = 0, r;
	struct val v;

	/* tables beyond 64 points per type read their first 64 (a real
	 * table is 4 batches x 4 degrees) */
	if (n > 64)
		n = 64;
	for (uint32_t k = 0; k < n; k++) {
		pts[k] = &m->profiles.v[idx[k]];
		if (k == 0 || pt_tp(pts[k]) != pt_tp(pts[k - 1]))
			row[nr++] = k;
	}
	row[nr] = n;
	p = pts;
	if (tp == 0)
		tp = 1;
	for (r = 0; r < nr && pt_tp(p[row[r]]) < tp; r++)
		;
	if (r < nr && pt_tp(p[row[r]]) == tp) {
		row_eval(p + row[r], row[r + 1] - row[r], samples, 1, &v);
	} else if (r == 0 || r == nr) {
		uint32_t e = r == 0 ? 0 : nr - 1;
		double te = pt_tp(p[row[e]]);
		row_eval(p + row[e], row[e + 1] - row[e], samples,
			 divides ? tp / te : 1, &v);
		v.how = TP_PROFILE_EXTRAPOLATED;
		v.has &= ~(unsigned)TP_PROFILE_HAS_TP_COMM;
	} else {
		struct val a, b;
		double ua = 1.0 / pt_tp(p[row[r - 1]]),
		       ub = 1.0 / pt_tp(p[row[r]]);
		row_eval(p + row[r - 1], row[r] - row[r - 1], samples, 1, &a);
		row_eval(p + row[r], row[r + 1] - row[r], samples, 1, &b);
		mix(&a, &b, (ua - 1.0 / tp) / (ua - ub), &v);
	}
	memset(out, 0, sizeof(*out));
	out->forward_s = v.f[F_FWD];
	out->backward_s = v.f[F_BWD];
	out->has = v.has;
	for (int f = F_COMM; f < F_COUNT; f++)
		if (!(v.has & f_bit[f]))
			v.f[f] = 0;
	out->tp_comm_s = v.f[F_COMM];
	out->activation_bytes = v.f[F_ACT];
	out->optimizer_s = v.f[F_OPT];
	out->state_bytes = v.f[F_STATE];
	out->how = v.how;
	return v.how;
}
