/*
 * ad.c - the operation tape and its backward passes (see ad.h).
 *
 * Each op computes its value at once; backward() dispatches on the op kind
 * and adds the op's contribution to the gradients of those inputs that
 * need one (parameters, or anything computed from a parameter).
 */
#include "ad.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_MIN_FLOATS ((size_t)1 << 18) /* 1 MiB */
#define ALIGN_FLOATS 16                    /* 64-byte alignment */

struct tp_ad_chunk {
	struct tp_ad_chunk *next;
	size_t cap; /* floats */
	float *data;
};

enum op {
	OP_MATMUL,
	OP_ADD_BIAS,
	OP_ADD,
	OP_SCALE,
	OP_SILU,
	OP_TANH,
	OP_RELU,
	OP_LAYERNORM,
	OP_CONCAT,
	OP_GATHER,
	OP_EDGE_LOGITS,
	OP_EDGE_SOFTMAX,
	OP_EDGE_AGG,
	OP_EDGE_AGG_FEAT,
	OP_SET_POOL,
	OP_SOFTMAX_XENT,
	OP_MSE,
	OP_WMSE,
	OP_DOT
};

struct tp_ad_var {
	struct tp_tensor val;
	float *grad;       /* ld = val.cols, or the parameter's storage */
	bool needs_grad;
	bool param;
};

struct tp_ad_node {
	enum op op;
	uint32_t out;
	uint32_t in[4];
	const void *aux;  /* edges, sets, index array, target */
	const void *aux2; /* weights (wmse) */
	struct tp_tensor feat; /* edge_agg_feat's x */
	float f;               /* scale, target */
	float *save;           /* per-op saved values */
	uint32_t *isave;
};

void tp_ad_init(struct tp_ad *ad)
{
	memset(ad, 0, sizeof(*ad));
}

static void free_chunks(struct tp_ad *ad)
{
	struct tp_ad_chunk *c = ad->chunks;
	while (c) {
		struct tp_ad_chunk *n = c->next;
		free(c->data);
		free(c);
		c = n;
	}
	ad->chunks = ad->cur = NULL;
	ad->chunk_used = 0;
}

void tp_ad_release(struct tp_ad *ad)
{
	if (!ad)
		return;
	free_chunks(ad);
	free(ad->vars);
	free(ad->nodes);
	memset(ad, 0, sizeof(*ad));
}

static struct tp_ad_chunk *chunk_new(size_t cap)
{
	struct tp_ad_chunk *c = malloc(sizeof(*c));
	if (!c)
		return NULL;
	c->next = NULL;
	c->cap = cap;
	c->data = aligned_alloc(64, cap * sizeof(float));
	if (!c->data) {
		free(c);
		return NULL;
	}
	return c;
}

/* The next pass fills the chunks again from the first, in the order
 * they were made, so the pages a pass touched stay mapped for the next
 * one.  (Until 2026-12-07 a pass that had needed several chunks had them
 * freed and replaced by one of their total size, whose pages the next
 * pass faulted in again: src/gnn/README, "Cost of a state".) */
void tp_ad_reset(struct tp_ad *ad)
{
	ad->cur = ad->chunks;
	ad->chunk_used = 0;
	ad->n_vars = 0;
	ad->n_nodes = 0;
	ad->failed = false;
}

bool tp_ad_failed(const struct tp_ad *ad)
{
	return ad->failed;
}

/* n floats, 64-byte aligned, not zeroed.  From the current chunk, else
 * the next one made before if it has room, else a new one (at least
 * twice the current one) linked in after the current one. */
static float *alloc_raw(struct tp_ad *ad, size_t n)
{
	size_t need = (n + ALIGN_FLOATS - 1) / ALIGN_FLOATS * ALIGN_FLOATS;
	struct tp_ad_chunk *c = ad->cur;
	float *p;

	if (ad->failed)
		return NULL;
	if (need == 0)
		need = ALIGN_FLOATS;
	if (!c || ad->chunk_used + need > c->cap) {
		if (c && c->next && c->next->cap >= need) {
			c = c->next;
		} else {
			struct tp_ad_chunk *nc;
			size_t cap = need > CHUNK_MIN_FLOATS ? need
							     : CHUNK_MIN_FLOATS;
			if (c && c->cap * 2 > cap)
				cap = c->cap * 2 > need ? c->cap * 2 : need;
			nc = chunk_new(cap);
			if (!nc) {
				ad->failed = true;
				return NULL;
			}
			if (c) {
				nc->next = c->next;
				c->next = nc;
			} else {
				nc->next = ad->chunks;
				ad->chunks = nc;
			}
			c = nc;
		}
		ad->cur = c;
		ad->chunk_used = 0;
	}
	p = c->data + ad->chunk_used;
	ad->chunk_used += need;
	return p;
}

float *tp_ad_alloc(struct tp_ad *ad, size_t n)
{
	float *p = alloc_raw(ad, n);
	if (p)
		memset(p, 0, n * sizeof(float));
	return p;
}

void *tp_ad_alloc_bytes(struct tp_ad *ad, size_t bytes)
{
	return tp_ad_alloc(ad, (bytes + sizeof(float) - 1) / sizeof(float));
}

static uint32_t new_var(struct tp_ad *ad, float *data, uint32_t rows,
			uint32_t cols, uint32_t ld)
{
	struct tp_ad_var *v;

	if (ad->failed)
		return TP_AD_NONE;
	if (ad->n_vars == ad->cap_vars) {
		size_t cap = ad->cap_vars ? ad->cap_vars * 2 : 128;
		struct tp_ad_var *nv = realloc(ad->vars, cap * sizeof(*nv));
		if (!nv) {
			ad->failed = true;
			return TP_AD_NONE;
		}
		ad->vars = nv;
		ad->cap_vars = cap;
	}
	v = &ad->vars[ad->n_vars];
	v->val.data = data;
	v->val.rows = rows;
	v->val.cols = cols;
	v->val.ld = ld;
	v->grad = NULL;
	v->needs_grad = false;
	v->param = false;
	return (uint32_t)ad->n_vars++;
}

/* A fresh output var of rows x cols (ld = cols), not zeroed. */
static uint32_t out_var(struct tp_ad *ad, uint32_t rows, uint32_t cols)
{
	float *d = alloc_raw(ad, (size_t)rows * cols);
	if (!d)
		return TP_AD_NONE;
	return new_var(ad, d, rows, cols, cols);
}

static struct tp_ad_node *new_node(struct tp_ad *ad, enum op op, uint32_t out,
				   uint32_t a, uint32_t b, uint32_t c,
				   uint32_t d)
{
	struct tp_ad_node *n;
	uint32_t ins[4] = {a, b, c, d};
	bool ng = false;

	if (ad->failed || out == TP_AD_NONE)
		return NULL;
	if (ad->n_nodes == ad->cap_nodes) {
		size_t cap = ad->cap_nodes ? ad->cap_nodes * 2 : 128;
		struct tp_ad_node *nn = realloc(ad->nodes, cap * sizeof(*nn));
		if (!nn) {
			ad->failed = true;
			return NULL;
		}
		ad->nodes = nn;
		ad->cap_nodes = cap;
	}
	n = &ad->nodes[ad->n_nodes++];
	memset(n, 0, sizeof(*n));
	n->op = op;
	n->out = out;
	for (int i = 0; i < 4; i++) {
		n->in[i] = ins[i];
		if (ins[i] != TP_AD_NONE && ad->vars[ins[i]].needs_grad)
			ng = true;
	}
	ad->vars[out].needs_grad = ng;
	return n;
}

struct tp_tensor tp_ad_val(const struct tp_ad *ad, uint32_t v)
{
	assert(v < ad->n_vars);
	return ad->vars[v].val;
}

struct tp_tensor tp_ad_grad(const struct tp_ad *ad, uint32_t v)
{
	struct tp_tensor t;
	assert(v < ad->n_vars);
	t.data = ad->vars[v].grad;
	t.rows = ad->vars[v].val.rows;
	t.cols = ad->vars[v].val.cols;
	t.ld = t.cols;
	return t;
}

static bool bad(const struct tp_ad *ad, uint32_t v)
{
	return ad->failed || v == TP_AD_NONE;
}

uint32_t tp_ad_const(struct tp_ad *ad, const struct tp_tensor *t)
{
	uint32_t v = out_var(ad, t->rows, t->cols);
	if (v == TP_AD_NONE)
		return v;
	for (uint32_t i = 0; i < t->rows; i++)
		memcpy(ad->vars[v].val.data + (size_t)i * t->cols,
		       tp_tensor_at(t, i, 0), t->cols * sizeof(float));
	return v;
}

uint32_t tp_ad_const_view(struct tp_ad *ad, const struct tp_tensor *t)
{
	return new_var(ad, t->data, t->rows, t->cols, t->ld);
}

uint32_t tp_ad_param(struct tp_ad *ad, float *w, float *g, uint32_t rows,
		     uint32_t cols)
{
	uint32_t v = new_var(ad, w, rows, cols, cols);
	if (v == TP_AD_NONE)
		return v;
	if (g) {
		ad->vars[v].grad = g;
		ad->vars[v].needs_grad = true;
		ad->vars[v].param = true;
	}
	return v;
}

/* ------------------------------------------------------------------ */
/* forward ops */

uint32_t tp_ad_matmul(struct tp_ad *ad, uint32_t a, uint32_t b)
{
	uint32_t o;
	struct tp_tensor ta, tb, to;

	if (bad(ad, a) || bad(ad, b))
		return TP_AD_NONE;
	ta = ad->vars[a].val;
	tb = ad->vars[b].val;
	assert(ta.cols == tb.rows);
	o = out_var(ad, ta.rows, tb.cols);
	if (!new_node(ad, OP_MATMUL, o, a, b, TP_AD_NONE, TP_AD_NONE))
		return TP_AD_NONE;
	to = ad->vars[o].val;
	tp_tensor_gemm(false, false, 1.0f, &ta, &tb, 0.0f, &to);
	return o;
}

uint32_t tp_ad_add_bias(struct tp_ad *ad, uint32_t x, uint32_t b)
{
	uint32_t o;
	struct tp_tensor tx, tb, to;

	if (bad(ad, x) || bad(ad, b))
		return TP_AD_NONE;
	tx = ad->vars[x].val;
	tb = ad->vars[b].val;
	assert(tb.rows == 1 && tb.cols == tx.cols);
	o = out_var(ad, tx.rows, tx.cols);
	if (!new_node(ad, OP_ADD_BIAS, o, x, b, TP_AD_NONE, TP_AD_NONE))
		return TP_AD_NONE;
	to = ad->vars[o].val;
	for (uint32_t i = 0; i < tx.rows; i++) {
		const float *xr = tp_tensor_at(&tx, i, 0);
		float *orow = tp_tensor_at(&to, i, 0);
		for (uint32_t j = 0; j < tx.cols; j++)
			orow[j] = xr[j] + tb.data[j];
	}
	return o;
}

uint32_t tp_ad_add(struct tp_ad *ad, uint32_t a, uint32_t b)
{
	uint32_t o;
	struct tp_tensor ta, tb, to;

	if (bad(ad, a) || bad(ad, b))
		return TP_AD_NONE;
	ta = ad->vars[a].val;
	tb = ad->vars[b].val;
	assert(ta.rows == tb.rows && ta.cols == tb.cols);
	o = out_var(ad, ta.rows, ta.cols);
	if (!new_node(ad, OP_ADD, o, a, b, TP_AD_NONE, TP_AD_NONE))
		return TP_AD_NONE;
	to = ad->vars[o].val;
	for (uint32_t i = 0; i < ta.rows; i++) {
		const float *ar = tp_tensor_at(&ta, i, 0);
		const float *br = tp_tensor_at(&tb, i, 0);
		float *orow = tp_tensor_at(&to, i, 0);
		for (uint32_t j = 0; j < ta.cols; j++)
			orow[j] = ar[j] + br[j];
	}
	return o;
}

uint32_t tp_ad_scale(struct tp_ad *ad, uint32_t a, float s)
{
	uint32_t o;
	struct tp_tensor ta, to;
	struct tp_ad_node *n;

	if (bad(ad, a))
		return TP_AD_NONE;
	ta = ad->vars[a].val;
	o = out_var(ad, ta.rows, ta.cols);
	n = new_node(ad, OP_SCALE, o, a, TP_AD_NONE, TP_AD_NONE, TP_AD_NONE);
	if (!n)
		return TP_AD_NONE;
	n->f = s;
	to = ad->vars[o].val;
	for (uint32_t i = 0; i < ta.rows; i++)
		for (uint32_t j = 0; j < ta.cols; j++)
			*tp_tensor_at(&to, i, j) = s * *tp_tensor_at(&ta, i, j);
	return o;
}

static uint32_t unary(struct tp_ad *ad, uint32_t x, enum op op)
{
	uint32_t o;
	struct tp_tensor tx, to;

	if (bad(ad, x))
		return TP_AD_NONE;
	tx = ad->vars[x].val;
	o = out_var(ad, tx.rows, tx.cols);
	if (!new_node(ad, op, o, x, TP_AD_NONE, TP_AD_NONE, TP_AD_NONE))
		return TP_AD_NONE;
	to = ad->vars[o].val;
	for (uint32_t i = 0; i < tx.rows; i++) {
		const float *xr = tp_tensor_at(&tx, i, 0);
		float *orow = tp_tensor_at(&to, i, 0);
		switch (op) {
		case OP_SILU:
			for (uint32_t j = 0; j < tx.cols; j++)
				orow[j] = xr[j] / (1.0f + expf(-xr[j]));
			break;
		case OP_TANH:
			for (uint32_t j = 0; j < tx.cols; j++)
				orow[j] = tanhf(xr[j]);
			break;
		default:
			for (uint32_t j = 0; j < tx.cols; j++)
				orow[j] = xr[j] > 0.0f ? xr[j] : 0.0f;
			break;
		}
	}
	return o;
}

uint32_t tp_ad_silu(struct tp_ad *ad, uint32_t x)
{
	return unary(ad, x, OP_SILU);
}

uint32_t tp_ad_tanh(struct tp_ad *ad, uint32_t x)
{
	return unary(ad, x, OP_TANH);
}

uint32_t tp_ad_relu(struct tp_ad *ad, uint32_t x)
{
	return unary(ad, x, OP_RELU);
}

#define LN_EPS 1e-5f

uint32_t tp_ad_layernorm(struct tp_ad *ad, uint32_t x, uint32_t g,
			 uint32_t b)
{
	uint32_t o;
	struct tp_tensor tx, tg, tb, to;
	struct tp_ad_node *n;
	float *save;

	if (bad(ad, x) || bad(ad, g) || bad(ad, b))
		return TP_AD_NONE;
	tx = ad->vars[x].val;
	tg = ad->vars[g].val;
	tb = ad->vars[b].val;
	assert(tg.cols == tx.cols && tb.cols == tx.cols && tx.cols > 0);
	o = out_var(ad, tx.rows, tx.cols);
	save = alloc_raw(ad, 2 * (size_t)tx.rows);
	n = new_node(ad, OP_LAYERNORM, o, x, g, b, TP_AD_NONE);
	if (!n || !save)
		return TP_AD_NONE;
	n->save = save;
	to = ad->vars[o].val;
	for (uint32_t i = 0; i < tx.rows; i++) {
		const float *xr = tp_tensor_at(&tx, i, 0);
		float *orow = tp_tensor_at(&to, i, 0);
		float mean = 0, var = 0, rstd;
		for (uint32_t j = 0; j < tx.cols; j++)
			mean += xr[j];
		mean /= (float)tx.cols;
		for (uint32_t j = 0; j < tx.cols; j++)
			var += (xr[j] - mean) * (xr[j] - mean);
		var /= (float)tx.cols;
		rstd = 1.0f / sqrtf(var + LN_EPS);
		save[2 * i] = mean;
		save[2 * i + 1] = rstd;
		for (uint32_t j = 0; j < tx.cols; j++)
			orow[j] = (xr[j] - mean) * rstd * tg.data[j] +
				  tb.data[j];
	}
	return o;
}

uint32_t tp_ad_concat(struct tp_ad *ad, uint32_t a, uint32_t b, uint32_t c,
		      uint32_t d)
{
	uint32_t ins[4] = {a, b, c, d}, cols = 0, rows, k, o, off = 0;
	struct tp_tensor to;

	for (k = 0; k < 4 && ins[k] != TP_AD_NONE; k++)
		;
	for (uint32_t i = k; i < 4; i++)
		ins[i] = TP_AD_NONE;
	if (ad->failed || k == 0)
		return TP_AD_NONE;
	rows = ad->vars[ins[0]].val.rows;
	for (uint32_t i = 0; i < k; i++) {
		assert(ad->vars[ins[i]].val.rows == rows);
		cols += ad->vars[ins[i]].val.cols;
	}
	o = out_var(ad, rows, cols);
	if (!new_node(ad, OP_CONCAT, o, ins[0], ins[1], ins[2], ins[3]))
		return TP_AD_NONE;
	to = ad->vars[o].val;
	for (uint32_t i = 0; i < k; i++) {
		struct tp_tensor t = ad->vars[ins[i]].val;
		for (uint32_t r = 0; r < rows; r++)
			memcpy(tp_tensor_at(&to, r, off), tp_tensor_at(&t, r, 0),
			       t.cols * sizeof(float));
		off += t.cols;
	}
	return o;
}

uint32_t tp_ad_gather(struct tp_ad *ad, uint32_t x, const uint32_t *idx,
		      uint32_t n)
{
	uint32_t o;
	struct tp_tensor tx, to;
	struct tp_ad_node *nd;

	if (bad(ad, x))
		return TP_AD_NONE;
	tx = ad->vars[x].val;
	o = out_var(ad, n, tx.cols);
	nd = new_node(ad, OP_GATHER, o, x, TP_AD_NONE, TP_AD_NONE,
		      TP_AD_NONE);
	if (!nd)
		return TP_AD_NONE;
	nd->aux = idx;
	to = ad->vars[o].val;
	for (uint32_t i = 0; i < n; i++) {
		assert(idx[i] < tx.rows);
		memcpy(tp_tensor_at(&to, i, 0), tp_tensor_at(&tx, idx[i], 0),
		       tx.cols * sizeof(float));
	}
	return o;
}

#define LEAKY 0.2f

/* Dot product with four independent partial sums, so the additions
 * pipeline (and the SLP vectoriser can pair them) at -O2. */
static float dot4(const float *restrict a, const float *restrict b,
		  uint32_t n)
{
	float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	uint32_t k = 0;

	for (; k + 4 <= n; k += 4) {
		s0 += a[k] * b[k];
		s1 += a[k + 1] * b[k + 1];
		s2 += a[k + 2] * b[k + 2];
		s3 += a[k + 3] * b[k + 3];
	}
	for (; k < n; k++)
		s0 += a[k] * b[k];
	return (s0 + s1) + (s2 + s3);
}

bool tp_ad_edges_is_dense(const struct tp_ad_edges *e)
{
	if ((size_t)e->n != (size_t)e->n_src * e->n_dst)
		return false;
	for (uint32_t v = 0; v < e->n_dst; v++) {
		if (e->dst_first[v] != v * e->n_src)
			return false;
		for (uint32_t u = 0; u < e->n_src; u++)
			if (e->src[v * e->n_src + u] != u ||
			    e->dst[v * e->n_src + u] != v)
				return false;
	}
	return true;
}

uint32_t tp_ad_edge_logits(struct tp_ad *ad, const struct tp_ad_edges *e,
			   uint32_t s, uint32_t t, uint32_t c)
{
	uint32_t o, nh;
	struct tp_tensor ts, tt, tc = {0}, to;
	struct tp_ad_node *n;
	float *st;

	if (bad(ad, s) || bad(ad, t))
		return TP_AD_NONE;
	ts = ad->vars[s].val;
	tt = ad->vars[t].val;
	nh = ts.cols;
	assert(tt.cols == nh && ts.rows == e->n_src && tt.rows == e->n_dst);
	if (c != TP_AD_NONE) {
		tc = ad->vars[c].val;
		assert(tc.rows == nh && tc.cols == e->n);
	}
	o = out_var(ad, nh, e->n);
	n = new_node(ad, OP_EDGE_LOGITS, o, s, t, c, TP_AD_NONE);
	if (!n)
		return TP_AD_NONE;
	n->aux = e;
	to = ad->vars[o].val;
	/* s transposed to head-major, so a dense edge list reads it
	 * contiguously */
	st = alloc_raw(ad, (size_t)nh * e->n_src);
	if (!st)
		return TP_AD_NONE;
	for (uint32_t u = 0; u < e->n_src; u++)
		for (uint32_t h = 0; h < nh; h++)
			st[(size_t)h * e->n_src + u] = *tp_tensor_at(&ts, u, h);
	for (uint32_t h = 0; h < nh; h++) {
		float *restrict orow = tp_tensor_at(&to, h, 0);
		const float *restrict sh = st + (size_t)h * e->n_src;
		const float *restrict crow =
			c != TP_AD_NONE ? tp_tensor_at(&tc, h, 0) : NULL;
		for (uint32_t v = 0; v < e->n_dst; v++) {
			float tv = *tp_tensor_at(&tt, v, h);
			uint32_t k0 = e->dst_first[v], k1 = e->dst_first[v + 1];
			if (e->dense) {
				float *restrict ov = orow + k0;
				for (uint32_t u = 0; u < e->n_src; u++)
					ov[u] = tv + sh[u];
			} else {
				for (uint32_t k = k0; k < k1; k++)
					orow[k] = tv + sh[e->src[k]];
			}
			if (crow)
				for (uint32_t k = k0; k < k1; k++)
					orow[k] += crow[k];
			/* leaky ReLU: max(p, 0.2 p), branch-free */
			for (uint32_t k = k0; k < k1; k++) {
				float p = orow[k], q = LEAKY * orow[k];
				orow[k] = p > q ? p : q;
			}
		}
	}
	return o;
}

uint32_t tp_ad_edge_softmax(struct tp_ad *ad, const struct tp_ad_edges *e,
			    uint32_t logits)
{
	uint32_t o, nh;
	struct tp_tensor tl, to;
	struct tp_ad_node *n;

	if (bad(ad, logits))
		return TP_AD_NONE;
	tl = ad->vars[logits].val;
	nh = tl.rows;
	assert(tl.cols == e->n);
	o = out_var(ad, nh, e->n);
	n = new_node(ad, OP_EDGE_SOFTMAX, o, logits, TP_AD_NONE, TP_AD_NONE,
		     TP_AD_NONE);
	if (!n)
		return TP_AD_NONE;
	n->aux = e;
	to = ad->vars[o].val;
	for (uint32_t h = 0; h < nh; h++) {
		const float *restrict lr = tp_tensor_at(&tl, h, 0);
		float *restrict orow = tp_tensor_at(&to, h, 0);
		for (uint32_t v = 0; v < e->n_dst; v++) {
			uint32_t k0 = e->dst_first[v], k1 = e->dst_first[v + 1];
			float mx = -INFINITY, s0 = 0, s1 = 0, inv;
			uint32_t k;
			for (k = k0; k < k1; k++)
				mx = lr[k] > mx ? lr[k] : mx;
			for (k = k0; k + 2 <= k1; k += 2) {
				orow[k] = expf(lr[k] - mx);
				orow[k + 1] = expf(lr[k + 1] - mx);
				s0 += orow[k];
				s1 += orow[k + 1];
			}
			for (; k < k1; k++) {
				orow[k] = expf(lr[k] - mx);
				s0 += orow[k];
			}
			inv = 1.0f / (s0 + s1);
			for (k = k0; k < k1; k++)
				orow[k] *= inv;
		}
	}
	return o;
}

/* Head h of a dense edge list as a matrix: row v holds the weights of
 * the edges into v, column u the source. */
static struct tp_tensor dense_head(const struct tp_tensor *a,
				   const struct tp_ad_edges *e, uint32_t h)
{
	struct tp_tensor m = {tp_tensor_at(a, h, 0), e->n_dst, e->n_src,
			      e->n_src};
	return m;
}

/* Columns [h * dh, (h + 1) * dh) of x. */
static struct tp_tensor col_block(const struct tp_tensor *x, uint32_t h,
				  uint32_t dh)
{
	struct tp_tensor m = {x->data + (size_t)h * dh, x->rows, dh, x->ld};
	return m;
}

uint32_t tp_ad_edge_agg(struct tp_ad *ad, const struct tp_ad_edges *e,
			uint32_t alpha, uint32_t z)
{
	uint32_t o, nh, dh;
	struct tp_tensor ta, tz, to;
	struct tp_ad_node *n;

	if (bad(ad, alpha) || bad(ad, z))
		return TP_AD_NONE;
	ta = ad->vars[alpha].val;
	tz = ad->vars[z].val;
	nh = ta.rows;
	assert(ta.cols == e->n && tz.rows == e->n_src && tz.cols % nh == 0);
	dh = tz.cols / nh;
	o = out_var(ad, e->n_dst, tz.cols);
	n = new_node(ad, OP_EDGE_AGG, o, alpha, z, TP_AD_NONE, TP_AD_NONE);
	if (!n)
		return TP_AD_NONE;
	n->aux = e;
	to = ad->vars[o].val;
	if (e->dense) {
		for (uint32_t h = 0; h < nh; h++) {
			struct tp_tensor ah = dense_head(&ta, e, h);
			struct tp_tensor zh = col_block(&tz, h, dh);
			struct tp_tensor oh = col_block(&to, h, dh);
			tp_tensor_gemm(false, false, 1.0f, &ah, &zh, 0.0f, &oh);
		}
		return o;
	}
	tp_tensor_fill(&to, 0.0f);
	for (uint32_t h = 0; h < nh; h++) {
		const float *ar = tp_tensor_at(&ta, h, 0);
		for (uint32_t v = 0; v < e->n_dst; v++) {
			float *restrict oh = tp_tensor_at(&to, v, h * dh);
			for (uint32_t k = e->dst_first[v];
			     k < e->dst_first[v + 1]; k++) {
				const float *restrict zh =
					tp_tensor_at(&tz, e->src[k], h * dh);
				float a = ar[k];
				for (uint32_t j = 0; j < dh; j++)
					oh[j] += a * zh[j];
			}
		}
	}
	return o;
}

uint32_t tp_ad_edge_agg_feat(struct tp_ad *ad, const struct tp_ad_edges *e,
			     uint32_t alpha, const struct tp_tensor *x)
{
	uint32_t o, nh, f;
	struct tp_tensor ta, to;
	struct tp_ad_node *n;

	if (bad(ad, alpha))
		return TP_AD_NONE;
	ta = ad->vars[alpha].val;
	nh = ta.rows;
	f = x->rows;
	assert(ta.cols == e->n && x->cols == e->n);
	o = out_var(ad, e->n_dst, nh * f);
	n = new_node(ad, OP_EDGE_AGG_FEAT, o, alpha, TP_AD_NONE, TP_AD_NONE,
		     TP_AD_NONE);
	if (!n)
		return TP_AD_NONE;
	n->aux = e;
	n->feat = *x;
	to = ad->vars[o].val;
	for (uint32_t v = 0; v < e->n_dst; v++) {
		uint32_t k0 = e->dst_first[v], k1 = e->dst_first[v + 1];
		float *orow = tp_tensor_at(&to, v, 0);
		for (uint32_t h = 0; h < nh; h++) {
			const float *ar = tp_tensor_at(&ta, h, 0);
			for (uint32_t j = 0; j < f; j++)
				orow[h * f + j] = dot4(ar + k0,
						       tp_tensor_at(x, j, k0),
						       k1 - k0);
		}
	}
	return o;
}

uint32_t tp_ad_set_pool(struct tp_ad *ad, uint32_t x,
			const struct tp_ad_sets *sets)
{
	uint32_t o, m;
	struct tp_tensor tx, to;
	struct tp_ad_node *n;
	uint32_t *amax = NULL;

	if (bad(ad, x))
		return TP_AD_NONE;
	tx = ad->vars[x].val;
	m = tx.cols;
	o = out_var(ad, sets->n, 2 * m);
	n = new_node(ad, OP_SET_POOL, o, x, TP_AD_NONE, TP_AD_NONE,
		     TP_AD_NONE);
	if (!n)
		return TP_AD_NONE;
	/* the arg-max is only needed to differentiate */
	if (ad->vars[x].needs_grad) {
		amax = (uint32_t *)alloc_raw(ad, (size_t)sets->n * m);
		if (!amax)
			return TP_AD_NONE;
	}
	n->aux = sets;
	n->isave = amax;
	to = ad->vars[o].val;
	for (uint32_t k = 0; k < sets->n; k++) {
		float *restrict mean = tp_tensor_at(&to, k, 0);
		float *restrict mx = mean + m;
		uint32_t *am = amax ? amax + (size_t)k * m : NULL;
		uint32_t i0 = sets->first[k], i1 = sets->first[k + 1];
		float wsum = 0;

		for (uint32_t j = 0; j < m; j++) {
			mean[j] = 0;
			mx[j] = i0 < i1 ? -INFINITY : 0.0f;
		}
		if (am)
			for (uint32_t j = 0; j < m; j++)
				am[j] = TP_AD_NONE;
		for (uint32_t i = i0; i < i1; i++) {
			float w = sets->weight ? sets->weight[i] : 1.0f;
			const float *restrict xr;
			assert(sets->member[i] < tx.rows);
			xr = tp_tensor_at(&tx, sets->member[i], 0);
			wsum += w;
			for (uint32_t j = 0; j < m; j++)
				mean[j] += w * xr[j];
			if (am) {
				for (uint32_t j = 0; j < m; j++) {
					if (xr[j] > mx[j]) {
						mx[j] = xr[j];
						am[j] = sets->member[i];
					}
				}
			} else {
				for (uint32_t j = 0; j < m; j++)
					mx[j] = xr[j] > mx[j] ? xr[j] : mx[j];
			}
		}
		if (wsum > 0) {
			float inv = 1.0f / wsum;
			for (uint32_t j = 0; j < m; j++)
				mean[j] *= inv;
		}
	}
	return o;
}

uint32_t tp_ad_softmax_xent(struct tp_ad *ad, uint32_t logits,
			    const float *target)
{
	uint32_t o, nl;
	struct tp_tensor tl;
	struct tp_ad_node *n;
	float *p, mx = -INFINITY;
	double sum = 0, loss = 0;

	if (bad(ad, logits))
		return TP_AD_NONE;
	tl = ad->vars[logits].val;
	assert(tl.cols == 1 && tl.rows > 0);
	nl = tl.rows;
	o = out_var(ad, 1, 1);
	p = alloc_raw(ad, nl);
	n = new_node(ad, OP_SOFTMAX_XENT, o, logits, TP_AD_NONE, TP_AD_NONE,
		     TP_AD_NONE);
	if (!n || !p)
		return TP_AD_NONE;
	n->aux = target;
	n->save = p;
	for (uint32_t k = 0; k < nl; k++)
		if (*tp_tensor_at(&tl, k, 0) > mx)
			mx = *tp_tensor_at(&tl, k, 0);
	for (uint32_t k = 0; k < nl; k++)
		sum += exp((double)*tp_tensor_at(&tl, k, 0) - mx);
	for (uint32_t k = 0; k < nl; k++) {
		double lp = (double)*tp_tensor_at(&tl, k, 0) - mx - log(sum);
		p[k] = (float)exp(lp);
		if (target[k] != 0.0f)
			loss -= target[k] * lp;
	}
	ad->vars[o].val.data[0] = (float)loss;
	return o;
}

uint32_t tp_ad_mse(struct tp_ad *ad, uint32_t x, float target)
{
	uint32_t o;
	struct tp_ad_node *n;
	float d;

	if (bad(ad, x))
		return TP_AD_NONE;
	assert(ad->vars[x].val.rows == 1 && ad->vars[x].val.cols == 1);
	o = out_var(ad, 1, 1);
	n = new_node(ad, OP_MSE, o, x, TP_AD_NONE, TP_AD_NONE, TP_AD_NONE);
	if (!n)
		return TP_AD_NONE;
	n->f = target;
	d = ad->vars[x].val.data[0] - target;
	ad->vars[o].val.data[0] = d * d;
	return o;
}

uint32_t tp_ad_wmse(struct tp_ad *ad, uint32_t x, const float *target,
		    const float *weight)
{
	uint32_t o;
	struct tp_tensor tx;
	struct tp_ad_node *n;
	double s = 0;

	if (bad(ad, x))
		return TP_AD_NONE;
	tx = ad->vars[x].val;
	assert(tx.cols == 1);
	o = out_var(ad, 1, 1);
	n = new_node(ad, OP_WMSE, o, x, TP_AD_NONE, TP_AD_NONE, TP_AD_NONE);
	if (!n)
		return TP_AD_NONE;
	n->aux = target;
	n->aux2 = weight;
	for (uint32_t i = 0; i < tx.rows; i++) {
		double d = (double)*tp_tensor_at(&tx, i, 0) - target[i];
		s += (double)weight[i] * d * d;
	}
	ad->vars[o].val.data[0] = (float)s;
	return o;
}

uint32_t tp_ad_dot_const(struct tp_ad *ad, uint32_t x, const float *r)
{
	uint32_t o;
	struct tp_tensor tx;
	struct tp_ad_node *n;
	double s = 0;

	if (bad(ad, x))
		return TP_AD_NONE;
	tx = ad->vars[x].val;
	o = out_var(ad, 1, 1);
	n = new_node(ad, OP_DOT, o, x, TP_AD_NONE, TP_AD_NONE, TP_AD_NONE);
	if (!n)
		return TP_AD_NONE;
	n->aux = r;
	for (uint32_t i = 0; i < tx.rows; i++)
		for (uint32_t j = 0; j < tx.cols; j++)
			s += (double)r[(size_t)i * tx.cols + j] *
			     *tp_tensor_at(&tx, i, j);
	ad->vars[o].val.data[0] = (float)s;
	return o;
}

/* ------------------------------------------------------------------ */
/* backward */

static bool ng(const struct tp_ad *ad, uint32_t v)
{
	return v != TP_AD_NONE && ad->vars[v].needs_grad;
}

/* C = A B: dA += dC B^T, dB += A^T dC. */
static void back_matmul(struct tp_ad *ad, const struct tp_ad_node *n)
{
	struct tp_tensor go = tp_ad_grad(ad, n->out);
	uint32_t a = n->in[0], b = n->in[1];
	struct tp_tensor va = ad->vars[a].val, vb = ad->vars[b].val;
	if (ng(ad, a)) {
		struct tp_tensor ga = tp_ad_grad(ad, a);
		tp_tensor_gemm(false, true, 1.0f, &go, &vb, 1.0f, &ga);
	}
	if (ng(ad, b)) {
		struct tp_tensor gb = tp_ad_grad(ad, b);
		tp_tensor_gemm(true, false, 1.0f, &va, &go, 1.0f, &gb);
	}
}

/* a + b (b a row bias broadcast over the rows for ADD_BIAS). */
static void back_add(struct tp_ad *ad, const struct tp_ad_node *n)
{
	struct tp_tensor go = tp_ad_grad(ad, n->out);
	uint32_t a = n->in[0], b = n->in[1];

	if (ng(ad, a)) {
		struct tp_tensor ga = tp_ad_grad(ad, a);
		tp_tensor_axpy(1.0f, &go, &ga);
	}
	if (ng(ad, b)) {
		struct tp_tensor gb = tp_ad_grad(ad, b);
		if (n->op == OP_ADD) {
			tp_tensor_axpy(1.0f, &go, &gb);
		} else {
			for (uint32_t i = 0; i < go.rows; i++)
				for (uint32_t j = 0; j < go.cols; j++)
					gb.data[j] +=
						*tp_tensor_at(&go, i, j);
		}
	}
}

/* f a. */
static void back_scale(struct tp_ad *ad, const struct tp_ad_node *n)
{
	struct tp_tensor go = tp_ad_grad(ad, n->out);
	uint32_t a = n->in[0];

	if (ng(ad, a)) {
		struct tp_tensor ga = tp_ad_grad(ad, a);
		tp_tensor_axpy(n->f, &go, &ga);
	}
}

/* SiLU, tanh, ReLU, element by element. */
static void back_pointwise(struct tp_ad *ad, const struct tp_ad_node *n)
{
	struct tp_tensor go = tp_ad_grad(ad, n->out);
	struct tp_tensor vo = ad->vars[n->out].val;
	uint32_t a = n->in[0];
	struct tp_tensor vx = ad->vars[a].val, gx;
	if (!ng(ad, a))
		return;
	gx = tp_ad_grad(ad, a);
	for (uint32_t i = 0; i < vx.rows; i++) {
		const float *xr = tp_tensor_at(&vx, i, 0);
		const float *yr = tp_tensor_at(&vo, i, 0);
		const float *gr = tp_tensor_at(&go, i, 0);
		float *gxr = tp_tensor_at(&gx, i, 0);
		for (uint32_t j = 0; j < vx.cols; j++) {
			float d;
			if (n->op == OP_SILU) {
				float s = 1.0f / (1.0f + expf(-xr[j]));
				d = s * (1.0f + xr[j] * (1.0f - s));
			} else if (n->op == OP_TANH) {
				d = 1.0f - yr[j] * yr[j];
			} else {
				d = xr[j] > 0.0f ? 1.0f : 0.0f;
			}
			gxr[j] += gr[j] * d;
		}
	}
}

/* Layer norm with gain b and bias c (mean and 1/std saved by the forward). */
static void back_layernorm(struct tp_ad *ad, const struct tp_ad_node *n)
{
	struct tp_tensor go = tp_ad_grad(ad, n->out);
	uint32_t a = n->in[0], b = n->in[1], c = n->in[2];
	struct tp_tensor vx = ad->vars[a].val, vg = ad->vars[b].val;
	struct tp_tensor gx = {0}, gg = {0}, gb = {0};
	uint32_t m = vx.cols;
	bool dx = ng(ad, a), dg = ng(ad, b), db = ng(ad, c);
	if (dx)
		gx = tp_ad_grad(ad, a);
	if (dg)
		gg = tp_ad_grad(ad, b);
	if (db)
		gb = tp_ad_grad(ad, c);
	for (uint32_t i = 0; i < vx.rows; i++) {
		const float *xr = tp_tensor_at(&vx, i, 0);
		const float *gr = tp_tensor_at(&go, i, 0);
		float mean = n->save[2 * i], rstd = n->save[2 * i + 1];
		float s1 = 0, s2 = 0;
		for (uint32_t j = 0; j < m; j++) {
			float xh = (xr[j] - mean) * rstd;
			float dxh = gr[j] * vg.data[j];
			if (dg)
				gg.data[j] += gr[j] * xh;
			if (db)
				gb.data[j] += gr[j];
			s1 += dxh;
			s2 += dxh * xh;
		}
		if (!dx)
			continue;
		s1 /= (float)m;
		s2 /= (float)m;
		for (uint32_t j = 0; j < m; j++) {
			float xh = (xr[j] - mean) * rstd;
			float dxh = gr[j] * vg.data[j];
			*tp_tensor_at(&gx, i, j) +=
				rstd * (dxh - s1 - xh * s2);
		}
	}
}

/* Column concatenation of up to four inputs. */
static void back_concat(struct tp_ad *ad, const struct tp_ad_node *n)
{
	struct tp_tensor go = tp_ad_grad(ad, n->out);
	uint32_t off = 0;
	for (int k = 0; k < 4 && n->in[k] != TP_AD_NONE; k++) {
		uint32_t v = n->in[k];
		uint32_t cols = ad->vars[v].val.cols;
		if (ng(ad, v)) {
			struct tp_tensor gv = tp_ad_grad(ad, v);
			for (uint32_t r = 0; r < go.rows; r++) {
				const float *s =
					tp_tensor_at(&go, r, off);
				float *d = tp_tensor_at(&gv, r, 0);
				for (uint32_t j = 0; j < cols; j++)
					d[j] += s[j];
			}
		}
		off += cols;
	}
}

/* Rows of a picked by index (scatter-add back). */
static void back_gather(struct tp_ad *ad, const struct tp_ad_node *n)
{
	struct tp_tensor go = tp_ad_grad(ad, n->out);
	uint32_t a = n->in[0];
	const uint32_t *idx = n->aux;
	struct tp_tensor gx;
	if (!ng(ad, a))
		return;
	gx = tp_ad_grad(ad, a);
	for (uint32_t i = 0; i < go.rows; i++) {
		const float *s = tp_tensor_at(&go, i, 0);
		float *d = tp_tensor_at(&gx, idx[i], 0);
		for (uint32_t j = 0; j < go.cols; j++)
			d[j] += s[j];
	}
}

/* Per-edge attention logits LeakyReLU(src + dst + edge term). */
static void back_edge_logits(struct tp_ad *ad, const struct tp_ad_node *n)
{
	struct tp_tensor go = tp_ad_grad(ad, n->out);
	struct tp_tensor vo = ad->vars[n->out].val;
	uint32_t a = n->in[0], b = n->in[1], c = n->in[2];
	const struct tp_ad_edges *e = n->aux;
	struct tp_tensor gs = {0}, gt = {0}, gc = {0};
	bool ds = ng(ad, a), dt = ng(ad, b), dc = ng(ad, c);
	if (ds)
		gs = tp_ad_grad(ad, a);
	if (dt)
		gt = tp_ad_grad(ad, b);
	if (dc)
		gc = tp_ad_grad(ad, c);
	for (uint32_t h = 0; h < vo.rows; h++) {
		const float *gr = tp_tensor_at(&go, h, 0);
		const float *yr = tp_tensor_at(&vo, h, 0);
		float *gcr = dc ? tp_tensor_at(&gc, h, 0) : NULL;
		for (uint32_t v = 0; v < e->n_dst; v++) {
			float st = 0;
			for (uint32_t k = e->dst_first[v];
			     k < e->dst_first[v + 1]; k++) {
				float d = gr[k] *
					  (yr[k] > 0.0f ? 1.0f : LEAKY);
				st += d;
				if (ds)
					*tp_tensor_at(&gs, e->src[k],
						      h) += d;
				if (gcr)
					gcr[k] += d;
			}
			if (dt)
				*tp_tensor_at(&gt, v, h) += st;
		}
	}
}

/* Softmax of the logits over each destination's edges. */
static void back_edge_softmax(struct tp_ad *ad, const struct tp_ad_node *n)
{
	struct tp_tensor go = tp_ad_grad(ad, n->out);
	struct tp_tensor vo = ad->vars[n->out].val;
	uint32_t a = n->in[0];
	const struct tp_ad_edges *e = n->aux;
	struct tp_tensor gl;
	if (!ng(ad, a))
		return;
	gl = tp_ad_grad(ad, a);
	for (uint32_t h = 0; h < vo.rows; h++) {
		const float *yr = tp_tensor_at(&vo, h, 0);
		const float *gr = tp_tensor_at(&go, h, 0);
		float *glr = tp_tensor_at(&gl, h, 0);
		for (uint32_t v = 0; v < e->n_dst; v++) {
			uint32_t k0 = e->dst_first[v],
				 k1 = e->dst_first[v + 1];
			float dot = dot4(yr + k0, gr + k0, k1 - k0);
			for (uint32_t k = k0; k < k1; k++)
				glr[k] += yr[k] * (gr[k] - dot);
		}
	}
}

/* Attention-weighted sum of source rows per destination (dense: GEMMs per head). */
static void back_edge_agg(struct tp_ad *ad, const struct tp_ad_node *n)
{
	struct tp_tensor go = tp_ad_grad(ad, n->out);
	uint32_t a = n->in[0], b = n->in[1];
	const struct tp_ad_edges *e = n->aux;
	struct tp_tensor va = ad->vars[a].val, vz = ad->vars[b].val;
	struct tp_tensor ga = {0}, gz = {0};
	bool da = ng(ad, a), dz = ng(ad, b);
	uint32_t nh = va.rows, dh = vz.cols / nh;
	if (da)
		ga = tp_ad_grad(ad, a);
	if (dz)
		gz = tp_ad_grad(ad, b);
	if (e->dense) {
		for (uint32_t h = 0; h < nh; h++) {
			struct tp_tensor goh = col_block(&go, h, dh);
			struct tp_tensor zh = col_block(&vz, h, dh);
			if (da) {
				struct tp_tensor gah =
					dense_head(&ga, e, h);
				tp_tensor_gemm(false, true, 1.0f, &goh,
					       &zh, 1.0f, &gah);
			}
			if (dz) {
				struct tp_tensor ah =
					dense_head(&va, e, h);
				struct tp_tensor gzh =
					col_block(&gz, h, dh);
				tp_tensor_gemm(true, false, 1.0f, &ah,
					       &goh, 1.0f, &gzh);
			}
		}
		return;
	}
	for (uint32_t h = 0; h < nh; h++) {
		const float *ar = tp_tensor_at(&va, h, 0);
		float *gar = da ? tp_tensor_at(&ga, h, 0) : NULL;
		for (uint32_t v = 0; v < e->n_dst; v++) {
			const float *gh = tp_tensor_at(&go, v, h * dh);
			for (uint32_t k = e->dst_first[v];
			     k < e->dst_first[v + 1]; k++) {
				uint32_t u = e->src[k];
				if (gar) {
					const float *zh = tp_tensor_at(
						&vz, u, h * dh);
					float dot = 0;
					for (uint32_t j = 0; j < dh; j++)
						dot += gh[j] * zh[j];
					gar[k] += dot;
				}
				if (dz) {
					float *gzh = tp_tensor_at(
						&gz, u, h * dh);
					for (uint32_t j = 0; j < dh; j++)
						gzh[j] += ar[k] * gh[j];
				}
			}
		}
	}
}

/* Attention-weighted sum of edge features per destination. */
static void back_edge_agg_feat(struct tp_ad *ad, const struct tp_ad_node *n)
{
	struct tp_tensor go = tp_ad_grad(ad, n->out);
	uint32_t a = n->in[0];
	const struct tp_ad_edges *e = n->aux;
	struct tp_tensor ga;
	uint32_t f = n->feat.rows, nh;
	if (!ng(ad, a))
		return;
	ga = tp_ad_grad(ad, a);
	nh = ga.rows;
	for (uint32_t v = 0; v < e->n_dst; v++) {
		const float *gr = tp_tensor_at(&go, v, 0);
		uint32_t k0 = e->dst_first[v], k1 = e->dst_first[v + 1];
		for (uint32_t h = 0; h < nh; h++) {
			float *gar = tp_tensor_at(&ga, h, 0);
			for (uint32_t j = 0; j < f; j++) {
				const float *xr =
					tp_tensor_at(&n->feat, j, 0);
				float gj = gr[h * f + j];
				for (uint32_t k = k0; k < k1; k++)
					gar[k] += gj * xr[k];
			}
		}
	}
}

/* Weighted mean and max pooling over sets (argmax saved by the forward). */
static void back_set_pool(struct tp_ad *ad, const struct tp_ad_node *n)
{
	struct tp_tensor go = tp_ad_grad(ad, n->out);
	uint32_t a = n->in[0];
	const struct tp_ad_sets *sets = n->aux;
	struct tp_tensor gx;
	uint32_t m;
	if (!ng(ad, a))
		return;
	gx = tp_ad_grad(ad, a);
	m = gx.cols;
	for (uint32_t k = 0; k < sets->n; k++) {
		const float *gm = tp_tensor_at(&go, k, 0);
		const uint32_t *am = n->isave + (size_t)k * m;
		uint32_t i0 = sets->first[k], i1 = sets->first[k + 1];
		float wsum = 0;
		for (uint32_t i = i0; i < i1; i++)
			wsum += sets->weight ? sets->weight[i] : 1.0f;
		for (uint32_t i = i0; i < i1 && wsum > 0; i++) {
			float w = (sets->weight ? sets->weight[i]
						: 1.0f) /
				  wsum;
			float *d = tp_tensor_at(&gx, sets->member[i], 0);
			for (uint32_t j = 0; j < m; j++)
				d[j] += w * gm[j];
		}
		for (uint32_t j = 0; j < m; j++)
			if (am[j] != TP_AD_NONE)
				*tp_tensor_at(&gx, am[j], j) +=
					gm[m + j];
	}
}

/* Cross-entropy of a softmax against (unnormalised) targets. */
static void back_softmax_xent(struct tp_ad *ad, const struct tp_ad_node *n)
{
	struct tp_tensor go = tp_ad_grad(ad, n->out);
	uint32_t a = n->in[0];
	const float *t = n->aux;
	struct tp_tensor gl;
	uint32_t nl;
	float tsum = 0;
	if (!ng(ad, a))
		return;
	gl = tp_ad_grad(ad, a);
	nl = gl.rows;
	for (uint32_t k = 0; k < nl; k++)
		tsum += t[k];
	for (uint32_t k = 0; k < nl; k++)
		*tp_tensor_at(&gl, k, 0) +=
			go.data[0] * (n->save[k] * tsum - t[k]);
}

/* (a - f)^2. */
static void back_mse(struct tp_ad *ad, const struct tp_ad_node *n)
{
	struct tp_tensor go = tp_ad_grad(ad, n->out);
	uint32_t a = n->in[0];

	if (ng(ad, a)) {
		struct tp_tensor gx = tp_ad_grad(ad, a);
		gx.data[0] += go.data[0] * 2.0f *
			      (ad->vars[a].val.data[0] - n->f);
	}
}

/* Weighted squared error against targets. */
static void back_wmse(struct tp_ad *ad, const struct tp_ad_node *n)
{
	struct tp_tensor go = tp_ad_grad(ad, n->out);
	uint32_t a = n->in[0];

	if (ng(ad, a)) {
		const float *t = n->aux, *wt = n->aux2;
		struct tp_tensor gx = tp_ad_grad(ad, a);
		struct tp_tensor vx = ad->vars[a].val;
		for (uint32_t i = 0; i < gx.rows; i++)
			*tp_tensor_at(&gx, i, 0) +=
				go.data[0] * 2.0f * wt[i] *
				(*tp_tensor_at(&vx, i, 0) - t[i]);
	}
}

/* <a, r> with a constant r. */
static void back_dot(struct tp_ad *ad, const struct tp_ad_node *n)
{
	struct tp_tensor go = tp_ad_grad(ad, n->out);
	uint32_t a = n->in[0];

	if (ng(ad, a)) {
		const float *r = n->aux;
		struct tp_tensor gx = tp_ad_grad(ad, a);
		for (uint32_t i = 0; i < gx.rows; i++)
			for (uint32_t j = 0; j < gx.cols; j++)
				*tp_tensor_at(&gx, i, j) +=
					go.data[0] *
					r[(size_t)i * gx.cols + j];
	}
}

/* One node's backward: add its contribution to its inputs' gradients. */
static void back_node(struct tp_ad *ad, const struct tp_ad_node *n)
{
	switch (n->op) {
	case OP_MATMUL:
		back_matmul(ad, n);
		break;
	case OP_ADD_BIAS:
	case OP_ADD:
		back_add(ad, n);
		break;
	case OP_SCALE:
		back_scale(ad, n);
		break;
	case OP_SILU:
	case OP_TANH:
	case OP_RELU:
		back_pointwise(ad, n);
		break;
	case OP_LAYERNORM:
		back_layernorm(ad, n);
		break;
	case OP_CONCAT:
		back_concat(ad, n);
		break;
	case OP_GATHER:
		back_gather(ad, n);
		break;
	case OP_EDGE_LOGITS:
		back_edge_logits(ad, n);
		break;
	case OP_EDGE_SOFTMAX:
		back_edge_softmax(ad, n);
		break;
	case OP_EDGE_AGG:
		back_edge_agg(ad, n);
		break;
	case OP_EDGE_AGG_FEAT:
		back_edge_agg_feat(ad, n);
		break;
	case OP_SET_POOL:
		back_set_pool(ad, n);
		break;
	case OP_SOFTMAX_XENT:
		back_softmax_xent(ad, n);
		break;
	case OP_MSE:
		back_mse(ad, n);
		break;
	case OP_WMSE:
		back_wmse(ad, n);
		break;
	case OP_DOT:
		back_dot(ad, n);
		break;
	}
}

bool tp_ad_backward(struct tp_ad *ad, uint32_t loss)
{
	if (ad->failed || loss == TP_AD_NONE)
		return false;
	assert(ad->vars[loss].val.rows == 1 && ad->vars[loss].val.cols == 1);
	if (!ad->vars[loss].needs_grad)
		return true;
	for (size_t i = 0; i < ad->n_vars; i++) {
		struct tp_ad_var *v = &ad->vars[i];
		if (v->needs_grad && !v->param) {
			v->grad = tp_ad_alloc(ad, (size_t)v->val.rows *
							  v->val.cols);
			if (!v->grad)
				return false;
		}
	}
	ad->vars[loss].grad[0] = 1.0f;
	for (size_t i = ad->n_nodes; i-- > 0;)
		if (ad->vars[ad->nodes[i].out].needs_grad)
			back_node(ad, &ad->nodes[i]);
	return true;
}
