/*
 * net.c - parameter layout, forward graph, losses and the optimiser of
 * the GNN (see net.h for the architecture).
 */
#include "net.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/vec.h"

enum { NT_GROUP, NT_DEVICE, NT_COUNT };

struct ptensor {
	char name[40];
	uint32_t rows, cols;
	size_t off;
};

struct layer_p {
	size_t W[TP_GNN_ETYPES], A[TP_GNN_ETYPES], B[TP_GNN_ETYPES],
		C[TP_GNN_ETYPES], U[TP_GNN_ETYPES];
	size_t self[NT_COUNT], bias[NT_COUNT], lng[NT_COUNT], lnb[NT_COUNT];
};

struct tp_gnn_ptab {
	struct ptensor *t;
	size_t n, cap, total;
	size_t enc[NT_COUNT], enc_b[NT_COUNT], enc_g[NT_COUNT],
		enc_lnb[NT_COUNT];
	struct layer_p layer[TP_GNN_MAX_LAYERS];
	size_t pw1, pb1, pw2, pb2, pw3, qw, qb;
	/* initialisation kind per tensor: 0 normal/sqrt(fan-in), 1 zeros,
	 * 2 ones (parallel to t) */
	uint8_t *init;
};

static const int etype_src[TP_GNN_ETYPES] = {NT_GROUP, NT_GROUP, NT_DEVICE,
					     NT_GROUP, NT_DEVICE};
static const int etype_dst[TP_GNN_ETYPES] = {NT_GROUP, NT_GROUP, NT_DEVICE,
					     NT_DEVICE, NT_GROUP};
static const char *const etype_names[TP_GNN_ETYPES] = {
	"flow", "back", "link", "place", "serve"};

int tp_gnn_etype_src(enum tp_gnn_etype t)
{
	return etype_src[t];
}

int tp_gnn_etype_dst(enum tp_gnn_etype t)
{
	return etype_dst[t];
}

const char *tp_gnn_etype_name(enum tp_gnn_etype t)
{
	return etype_names[t];
}

void tp_gnn_config_default(struct tp_gnn_config *c, uint32_t group_in,
			   uint32_t device_in, uint32_t action_in,
			   uint32_t global_in,
			   const uint32_t edge_in[TP_GNN_ETYPES])
{
	memset(c, 0, sizeof(*c));
	c->hidden = 64;
	c->heads = 2;
	c->layers = 3;
	c->head_hidden = 64;
	c->group_in = group_in;
	c->device_in = device_in;
	c->action_in = action_in;
	c->global_in = global_in;
	for (int t = 0; t < TP_GNN_ETYPES; t++)
		c->edge_in[t] = edge_in[t];
}

static enum tp_status width_ok(uint32_t v, const char *name,
			       struct tp_error *err)
{
	if (v < 1 || v > TP_GNN_MAX_FEATS)
		return tp_error_set(err, TP_EINPUT,
				    "network %s is %u; it must be 1 to %d",
				    name, v, TP_GNN_MAX_FEATS);
	return TP_OK;
}

enum tp_status tp_gnn_config_check(const struct tp_gnn_config *c,
				   struct tp_error *err)
{
	enum tp_status st;

	if (c->hidden < 1 || c->hidden > TP_GNN_MAX_HIDDEN)
		return tp_error_set(err, TP_EINPUT,
				    "network hidden size is %u; it must be 1 "
				    "to %d",
				    c->hidden, TP_GNN_MAX_HIDDEN);
	if (c->heads < 1 || c->hidden % c->heads)
		return tp_error_set(err, TP_EINPUT,
				    "network has %u attention heads, which "
				    "does not divide hidden size %u",
				    c->heads, c->hidden);
	if (c->layers < 1 || c->layers > TP_GNN_MAX_LAYERS)
		return tp_error_set(err, TP_EINPUT,
				    "network has %u layers; it must be 1 to %d",
				    c->layers, TP_GNN_MAX_LAYERS);
	if (c->head_hidden < 1 || c->head_hidden > TP_GNN_MAX_HIDDEN)
		return tp_error_set(err, TP_EINPUT,
				    "network head width is %u; it must be 1 "
				    "to %d",
				    c->head_hidden, TP_GNN_MAX_HIDDEN);
	if ((st = width_ok(c->group_in, "group feature count", err)) ||
	    (st = width_ok(c->device_in, "device feature count", err)) ||
	    (st = width_ok(c->action_in, "action feature count", err)) ||
	    (st = width_ok(c->global_in, "global feature count", err)))
		return st;
	for (int t = 0; t < TP_GNN_ETYPES; t++)
		if ((st = width_ok(c->edge_in[t], "edge feature count", err)))
			return st;
	return TP_OK;
}

/* ------------------------------------------------------------------ */
/* parameter table */

static size_t add_t(struct tp_gnn_ptab *p, uint32_t rows, uint32_t cols,
		    int init, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static size_t add_t(struct tp_gnn_ptab *p, uint32_t rows, uint32_t cols,
		    int init, const char *fmt, ...)
{
	va_list ap;
	struct ptensor *e;
	size_t off = p->total;

	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		struct ptensor *nt = realloc(p->t, cap * sizeof(*nt));
		uint8_t *ni;
		if (!nt)
			return SIZE_MAX;
		p->t = nt;
		ni = realloc(p->init, cap);
		if (!ni)
			return SIZE_MAX;
		p->init = ni;
		p->cap = cap;
	}
	e = &p->t[p->n];
	va_start(ap, fmt);
	vsnprintf(e->name, sizeof(e->name), fmt, ap);
	va_end(ap);
	e->rows = rows;
	e->cols = cols;
	e->off = off;
	p->init[p->n] = (uint8_t)init;
	p->n++;
	p->total += (size_t)rows * cols;
	return off;
}

static void ptab_free(struct tp_gnn_ptab *p)
{
	if (!p)
		return;
	free(p->t);
	free(p->init);
	free(p);
}

static struct tp_gnn_ptab *ptab_build(const struct tp_gnn_config *c)
{
	struct tp_gnn_ptab *p = calloc(1, sizeof(*p));
	const uint32_t H = c->hidden, nh = c->heads, hh = c->head_hidden;
	const uint32_t in[NT_COUNT] = {c->group_in, c->device_in};
	const char *nt[NT_COUNT] = {"group", "device"};
	bool fail = false;

#define ADD(var, ...)                                                         \
	do {                                                                  \
		(var) = add_t(p, __VA_ARGS__);                                \
		if ((var) == SIZE_MAX)                                        \
			fail = true;                                          \
	} while (0)

	if (!p)
		return NULL;
	for (int k = 0; k < NT_COUNT; k++) {
		ADD(p->enc[k], in[k], H, 0, "enc.%s.W", nt[k]);
		ADD(p->enc_b[k], 1, H, 1, "enc.%s.b", nt[k]);
		ADD(p->enc_g[k], 1, H, 2, "enc.%s.ln_g", nt[k]);
		ADD(p->enc_lnb[k], 1, H, 1, "enc.%s.ln_b", nt[k]);
	}
	for (uint32_t l = 0; l < c->layers; l++) {
		struct layer_p *L = &p->layer[l];
		for (int t = 0; t < TP_GNN_ETYPES; t++) {
			const char *en = etype_names[t];
			ADD(L->W[t], H, H, 0, "l%u.%s.W", l, en);
			ADD(L->A[t], H, nh, 0, "l%u.%s.att_src", l, en);
			ADD(L->B[t], H, nh, 0, "l%u.%s.att_dst", l, en);
			ADD(L->C[t], nh, c->edge_in[t], 0, "l%u.%s.att_edge",
			    l, en);
			ADD(L->U[t], nh * c->edge_in[t], H, 0, "l%u.%s.U", l,
			    en);
		}
		for (int k = 0; k < NT_COUNT; k++) {
			ADD(L->self[k], H, H, 0, "l%u.%s.self", l, nt[k]);
			ADD(L->bias[k], 1, H, 1, "l%u.%s.b", l, nt[k]);
			ADD(L->lng[k], 1, H, 2, "l%u.%s.ln_g", l, nt[k]);
			ADD(L->lnb[k], 1, H, 1, "l%u.%s.ln_b", l, nt[k]);
		}
	}
	ADD(p->pw1, 3 * H + c->action_in, hh, 0, "policy.W1");
	ADD(p->pb1, 1, hh, 1, "policy.b1");
	ADD(p->pw2, hh, hh, 0, "policy.W2");
	ADD(p->pb2, 1, hh, 1, "policy.b2");
	ADD(p->pw3, hh, 1, 0, "policy.W3");
	ADD(p->qw, hh, 1, 0, "gain.W");
	ADD(p->qb, 1, 1, 1, "gain.b");
#undef ADD
	if (fail) {
		ptab_free(p);
		return NULL;
	}
	return p;
}

size_t tp_gnn_config_params(const struct tp_gnn_config *c)
{
	struct tp_gnn_ptab *p = ptab_build(c);
	size_t n = p ? p->total : 0;
	ptab_free(p);
	return n;
}

static size_t norm_count(const struct tp_gnn_config *c)
{
	size_t n = (size_t)c->group_in + c->device_in + c->action_in +
		   c->global_in;
	for (int t = 0; t < TP_GNN_ETYPES; t++)
		n += c->edge_in[t];
	return n;
}

struct tp_gnn_net *tp_gnn_net_new(const struct tp_gnn_config *c,
				  struct tp_rng *rng, struct tp_error *err)
{
	struct tp_gnn_net *net;

	if (tp_gnn_config_check(c, err))
		return NULL;
	net = calloc(1, sizeof(*net));
	if (!net) {
		tp_error_set(err, TP_ENOMEM, "out of memory for the network");
		return NULL;
	}
	net->cfg = *c;
	net->tab = ptab_build(c);
	if (net->tab) {
		net->n_params = net->tab->total;
		net->w = tp_calloc(net->n_params, sizeof(float));
		net->norm.n = norm_count(c);
		net->norm.mean = tp_calloc(net->norm.n, sizeof(float));
		net->norm.std = tp_calloc(net->norm.n, sizeof(float));
	}
	if (!net->tab || !net->w || !net->norm.mean || !net->norm.std) {
		tp_gnn_net_free(net);
		tp_error_set(err, TP_ENOMEM, "out of memory for the network");
		return NULL;
	}
	for (size_t i = 0; i < net->norm.n; i++)
		net->norm.std[i] = 1.0f;
	for (size_t i = 0; rng && i < net->tab->n; i++) {
		const struct ptensor *t = &net->tab->t[i];
		float *w = net->w + t->off;
		size_t n = (size_t)t->rows * t->cols;
		double sd = 1.0 / sqrt((double)t->rows);
		for (size_t k = 0; k < n; k++) {
			switch (net->tab->init[i]) {
			case 0:
				w[k] = (float)(sd * tp_rng_normal(rng));
				break;
			case 1:
				w[k] = 0.0f;
				break;
			default:
				w[k] = 1.0f;
				break;
			}
		}
	}
	return net;
}

void tp_gnn_net_free(struct tp_gnn_net *net)
{
	if (!net)
		return;
	ptab_free(net->tab);
	free(net->w);
	free(net->norm.mean);
	free(net->norm.std);
	free(net);
}

size_t tp_gnn_net_tensor_count(const struct tp_gnn_net *net)
{
	return net->tab->n;
}

const char *tp_gnn_net_tensor(const struct tp_gnn_net *net, size_t i,
			      uint32_t *rows, uint32_t *cols, size_t *offset)
{
	const struct ptensor *t = &net->tab->t[i];
	if (rows)
		*rows = t->rows;
	if (cols)
		*cols = t->cols;
	if (offset)
		*offset = t->off;
	return t->name;
}

/* ------------------------------------------------------------------ */
/* input checks */

static enum tp_status check_edges(const struct tp_ad_edges *e,
				  const struct tp_tensor *x, uint32_t n_src,
				  uint32_t n_dst, uint32_t width,
				  const char *name, struct tp_error *err)
{
	if (e->n_src != n_src || e->n_dst != n_dst)
		return tp_error_set(err, TP_EINPUT,
				    "GNN input: %s edges join %u x %u nodes, "
				    "expected %u x %u",
				    name, e->n_src, e->n_dst, n_src, n_dst);
	if (x->rows != e->n || x->cols != width)
		return tp_error_set(err, TP_EINPUT,
				    "GNN input: %s edge features are %u x %u, "
				    "expected %u x %u",
				    name, x->rows, x->cols, e->n, width);
	if (e->dst_first[0] != 0 || e->dst_first[n_dst] != e->n)
		return tp_error_set(err, TP_EINPUT,
				    "GNN input: %s edge offsets do not cover "
				    "the %u edges",
				    name, e->n);
	for (uint32_t v = 0; v < n_dst; v++) {
		if (e->dst_first[v + 1] < e->dst_first[v])
			return tp_error_set(err, TP_EINPUT,
					    "GNN input: %s edge offsets "
					    "decrease at node %u",
					    name, v);
		for (uint32_t k = e->dst_first[v]; k < e->dst_first[v + 1];
		     k++)
			if (e->dst[k] != v || e->src[k] >= n_src)
				return tp_error_set(err, TP_EINPUT,
						    "GNN input: %s edge %u is "
						    "out of range or unsorted",
						    name, k);
	}
	return TP_OK;
}

enum tp_status tp_gnn_input_check(const struct tp_gnn_net *net,
				  const struct tp_gnn_input *in,
				  struct tp_error *err)
{
	const struct tp_gnn_config *c = &net->cfg;
	const uint32_t nn[NT_COUNT] = {in->n_groups, in->n_devices};
	enum tp_status st;

	if (in->n_groups == 0 || in->n_devices == 0)
		return tp_error_set(err, TP_EINPUT,
				    "GNN input has %u groups and %u devices; "
				    "both must be positive",
				    in->n_groups, in->n_devices);
	if (in->group_x.rows != in->n_groups || in->group_x.cols != c->group_in)
		return tp_error_set(err, TP_EINPUT,
				    "GNN input: group features are %u x %u, "
				    "the network reads %u x %u",
				    in->group_x.rows, in->group_x.cols,
				    in->n_groups, c->group_in);
	if (in->device_x.rows != in->n_devices ||
	    in->device_x.cols != c->device_in)
		return tp_error_set(err, TP_EINPUT,
				    "GNN input: device features are %u x %u, "
				    "the network reads %u x %u",
				    in->device_x.rows, in->device_x.cols,
				    in->n_devices, c->device_in);
	for (int t = 0; t < TP_GNN_ETYPES; t++)
		if ((st = check_edges(&in->edges[t], &in->edge_x[t],
				      nn[etype_src[t]], nn[etype_dst[t]],
				      c->edge_in[t], etype_names[t], err)))
			return st;
	if (in->group >= in->n_groups && in->n_actions)
		return tp_error_set(err, TP_EINPUT,
				    "GNN input: group %u out of range",
				    in->group);
	if (in->n_actions) {
		if (in->actions.n != in->n_actions ||
		    in->action_x.rows != in->n_actions ||
		    in->action_x.cols != c->action_in)
			return tp_error_set(err, TP_EINPUT,
					    "GNN input: %u actions but %u "
					    "device sets and %u x %u action "
					    "features (the network reads %u)",
					    in->n_actions, in->actions.n,
					    in->action_x.rows,
					    in->action_x.cols, c->action_in);
		for (uint32_t k = 0; k < in->n_actions; k++) {
			if (in->actions.first[k + 1] <= in->actions.first[k])
				return tp_error_set(err, TP_EINPUT,
						    "GNN input: action %u has "
						    "no devices",
						    k);
			for (uint32_t i = in->actions.first[k];
			     i < in->actions.first[k + 1]; i++)
				if (in->actions.member[i] >= in->n_devices)
					return tp_error_set(
						err, TP_EINPUT,
						"GNN input: action %u names "
						"device node %u of %u",
						k, in->actions.member[i],
						in->n_devices);
		}
	}
	return TP_OK;
}

/* ------------------------------------------------------------------ */
/* forward */

/* A standardised copy of x in the tape; block = offset into the norm. */
static uint32_t norm_const(struct tp_ad *ad, const struct tp_gnn_net *net,
			   const struct tp_tensor *x, size_t block)
{
	uint32_t v = tp_ad_const(ad, x);
	struct tp_tensor t;

	if (v == TP_AD_NONE)
		return v;
	t = tp_ad_val(ad, v);
	for (uint32_t i = 0; i < t.rows; i++) {
		float *r = tp_tensor_at(&t, i, 0);
		for (uint32_t j = 0; j < t.cols; j++)
			r[j] = (r[j] - net->norm.mean[block + j]) /
			       net->norm.std[block + j];
	}
	return v;
}

/* A standardised, transposed (feature-major) copy of edge features x. */
static uint32_t norm_const_t(struct tp_ad *ad, const struct tp_gnn_net *net,
			     const struct tp_tensor *x, size_t block)
{
	float *d = tp_ad_alloc(ad, (size_t)x->rows * x->cols);
	struct tp_tensor t;

	if (!d)
		return TP_AD_NONE;
	t = tp_tensor_view(d, x->cols, x->rows);
	for (uint32_t j = 0; j < x->cols; j++) {
		float m = net->norm.mean[block + j];
		float inv = 1.0f / net->norm.std[block + j];
		float *r = tp_tensor_at(&t, j, 0);
		for (uint32_t i = 0; i < x->rows; i++)
			r[i] = (*tp_tensor_at(x, i, j) - m) * inv;
	}
	return tp_ad_const_view(ad, &t);
}

struct fwd {
	uint32_t logits, gains;
};

static uint32_t *alloc_u32(struct tp_ad *ad, size_t n)
{
	return tp_ad_alloc_bytes(ad, n * sizeof(uint32_t));
}

/* What the stages of forward share: the network, its input and tape, the
 * gradient (NULL: inference), where each input's normalisation starts,
 * and the node states and edge features so far. */
struct fwd_ctx {
	const struct tp_gnn_net *net;
	const struct tp_gnn_input *in;
	struct tp_ad *ad;
	float *grad;
	size_t nb[NT_COUNT], nb_edge[TP_GNN_ETYPES], nb_action;
	uint32_t h[NT_COUNT], ex[TP_GNN_ETYPES];
	struct tp_tensor exv[TP_GNN_ETYPES];
};

/* A parameter block of the network at offset off (r x cc) on the tape;
 * needs net, grad and ad in scope. */
#define P(off, r, cc)                                                         \
	tp_ad_param(ad, net->w + (off), grad ? grad + (off) : NULL, (r), (cc))

/* The node encoders (normalised input, linear, layer norm, SiLU) and the
 * normalised edge features; false when the workspace is full. */
static bool fwd_encode(struct fwd_ctx *f)
{
	const struct tp_gnn_net *net = f->net;
	const struct tp_gnn_config *c = &net->cfg;
	const struct tp_gnn_ptab *p = net->tab;
	const struct tp_gnn_input *in = f->in;
	struct tp_ad *ad = f->ad;
	float *grad = f->grad;
	const struct tp_tensor *xs[NT_COUNT] = {&in->group_x, &in->device_x};

	for (int k = 0; k < NT_COUNT; k++) {
		uint32_t in_w = k == NT_GROUP ? c->group_in : c->device_in;
		uint32_t x, xin;
		xin = norm_const(ad, net, xs[k], f->nb[k]);
		x = tp_ad_matmul(ad, xin, P(p->enc[k], in_w, c->hidden));
		x = tp_ad_add_bias(ad, x, P(p->enc_b[k], 1, c->hidden));
		x = tp_ad_layernorm(ad, x, P(p->enc_g[k], 1, c->hidden),
				    P(p->enc_lnb[k], 1, c->hidden));
		f->h[k] = tp_ad_silu(ad, x);
	}
	for (int t = 0; t < TP_GNN_ETYPES; t++) {
		f->ex[t] = norm_const_t(ad, net, &in->edge_x[t], f->nb_edge[t]);
		if (f->ex[t] == TP_AD_NONE)
			return false;
		f->exv[t] = tp_ad_val(ad, f->ex[t]);
	}
	return true;
}

/* Message-passing layer l: per edge type attention over the sources
 * (with the edge features), then a residual update of every node. */
static void fwd_layer(struct fwd_ctx *f, uint32_t l)
{
	const struct tp_gnn_net *net = f->net;
	const struct tp_gnn_config *c = &net->cfg;
	const struct layer_p *L = &net->tab->layer[l];
	const struct tp_gnn_input *in = f->in;
	struct tp_ad *ad = f->ad;
	float *grad = f->grad;
	uint32_t *h = f->h, *ex = f->ex;
	uint32_t agg[NT_COUNT] = {TP_AD_NONE, TP_AD_NONE};

	for (int t = 0; t < TP_GNN_ETYPES; t++) {
		const struct tp_ad_edges *e = &in->edges[t];
		int s = etype_src[t], d = etype_dst[t];
		uint32_t z, sl, tl, cl, a, m, fe;
		if (e->n == 0)
			continue;
		z = tp_ad_matmul(ad, h[s], P(L->W[t], c->hidden, c->hidden));
		sl = tp_ad_matmul(ad, h[s], P(L->A[t], c->hidden, c->heads));
		tl = tp_ad_matmul(ad, h[d], P(L->B[t], c->hidden, c->heads));
		cl = tp_ad_matmul(ad, P(L->C[t], c->heads, c->edge_in[t]),
				  ex[t]);
		a = tp_ad_edge_logits(ad, e, sl, tl, cl);
		a = tp_ad_edge_softmax(ad, e, a);
		m = tp_ad_edge_agg(ad, e, a, z);
		fe = tp_ad_edge_agg_feat(ad, e, a, &f->exv[t]);
		fe = tp_ad_matmul(ad, fe,
				  P(L->U[t], c->heads * c->edge_in[t],
				    c->hidden));
		m = tp_ad_add(ad, m, fe);
		agg[d] = agg[d] == TP_AD_NONE ? m : tp_ad_add(ad, agg[d], m);
	}
	for (int k = 0; k < NT_COUNT; k++) {
		uint32_t u = tp_ad_matmul(ad, h[k],
					  P(L->self[k], c->hidden, c->hidden));
		u = tp_ad_add_bias(ad, u, P(L->bias[k], 1, c->hidden));
		if (agg[k] != TP_AD_NONE)
			u = tp_ad_add(ad, u, agg[k]);
		u = tp_ad_layernorm(ad, u, P(L->lng[k], 1, c->hidden),
				    P(L->lnb[k], 1, c->hidden));
		h[k] = tp_ad_add(ad, h[k], tp_ad_silu(ad, u));
	}
}

/* The policy and gain heads over the actions (pooled devices, the group,
 * the action's features); false when the workspace is full. */
static bool fwd_policy(struct fwd_ctx *f, struct fwd *out)
{
	const struct tp_gnn_net *net = f->net;
	const struct tp_gnn_config *c = &net->cfg;
	const struct tp_gnn_ptab *p = net->tab;
	const struct tp_gnn_input *in = f->in;
	struct tp_ad *ad = f->ad;
	float *grad = f->grad;
	uint32_t pooled, hg, xa, x, *idx;

	idx = alloc_u32(ad, in->n_actions);
	if (!idx)
		return false;
	for (uint32_t k = 0; k < in->n_actions; k++)
		idx[k] = in->group;
	pooled = tp_ad_set_pool(ad, f->h[NT_DEVICE], &in->actions);
	hg = tp_ad_gather(ad, f->h[NT_GROUP], idx, in->n_actions);
	xa = norm_const(ad, net, &in->action_x, f->nb_action);
	x = tp_ad_concat(ad, pooled, hg, xa, TP_AD_NONE);
	x = tp_ad_matmul(ad, x,
			 P(p->pw1, 3 * c->hidden + c->action_in,
			   c->head_hidden));
	x = tp_ad_silu(ad,
		       tp_ad_add_bias(ad, x, P(p->pb1, 1, c->head_hidden)));
	x = tp_ad_matmul(ad, x, P(p->pw2, c->head_hidden, c->head_hidden));
	x = tp_ad_silu(ad,
		       tp_ad_add_bias(ad, x, P(p->pb2, 1, c->head_hidden)));
	out->logits = tp_ad_matmul(ad, x, P(p->pw3, c->head_hidden, 1));
	out->gains = tp_ad_tanh(
		ad, tp_ad_add_bias(ad,
				   tp_ad_matmul(ad, x,
						P(p->qw, c->head_hidden, 1)),
				   P(p->qb, 1, 1)));
	return out->logits != TP_AD_NONE && out->gains != TP_AD_NONE;
}

#undef P

/* ------------------------------------------------------------------ */
/* the body cache */

/* 64-bit hash of n bytes, four independent lanes (cheap next to a pass:
 * about 300 KB for 64 groups x 64 devices). */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t l[4] = {h ^ 0x9e3779b97f4a7c15ull, h + 0xc2b2ae3d27d4eb4full,
			 h ^ 0x165667b19e3779f9ull, h + 0x27d4eb2f165667c5ull};
	const uint64_t m = 0xff51afd7ed558ccdull;
	size_t i = 0;

	for (; i + 32 <= n; i += 32)
		for (int k = 0; k < 4; k++) {
			uint64_t x;
			memcpy(&x, b + i + 8 * k, 8);
			l[k] = (l[k] ^ x) * m;
			l[k] ^= l[k] >> 29;
		}
	for (; i < n; i++)
		l[0] = (l[0] ^ b[i]) * m;
	h = l[0] ^ (l[1] * 3) ^ (l[2] * 5) ^ (l[3] * 7) ^ n;
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 29);
}

static uint64_t hash_tensor(uint64_t h, const struct tp_tensor *t)
{
	h = hash_bytes(h, &t->rows, sizeof(t->rows));
	h = hash_bytes(h, &t->cols, sizeof(t->cols));
	if (t->rows && t->ld == t->cols)
		return hash_bytes(h, t->data,
				  (size_t)t->rows * t->cols * sizeof(float));
	for (uint32_t i = 0; i < t->rows; i++)
		h = hash_bytes(h, tp_tensor_at(t, i, 0),
			       t->cols * sizeof(float));
	return h;
}

/* The key of what the encoders and message-passing layers read: the
 * node and edge features and the edge lists (not the query: the group
 * and the actions). */
static uint64_t body_key(const struct tp_gnn_input *in)
{
	uint64_t h = hash_bytes(0x626f6479u, &in->n_groups,
				sizeof(in->n_groups));
	h = hash_bytes(h, &in->n_devices, sizeof(in->n_devices));
	h = hash_tensor(h, &in->group_x);
	h = hash_tensor(h, &in->device_x);
	for (int t = 0; t < TP_GNN_ETYPES; t++) {
		const struct tp_ad_edges *e = &in->edges[t];
		uint32_t hd[4] = {e->n_src, e->n_dst, e->n, e->dense};
		h = hash_bytes(h, hd, sizeof(hd));
		if (e->n) {
			h = hash_bytes(h, e->src, e->n * sizeof(uint32_t));
			h = hash_bytes(h, e->dst, e->n * sizeof(uint32_t));
		}
		if (e->dst_first)
			h = hash_bytes(h, e->dst_first,
				       ((size_t)e->n_dst + 1) *
					   sizeof(uint32_t));
		h = hash_tensor(h, &in->edge_x[t]);
	}
	return h;
}

#define BODY_SLOTS 4

/* One cached body: the node states after the last layer. */
struct body_slot {
	uint64_t key, used; /* used 0 = empty */
	uint32_t rows[NT_COUNT];
	float *h[NT_COUNT];
	size_t cap[NT_COUNT];
};

struct tp_gnn_body_cache {
	const struct tp_gnn_net *net;
	struct body_slot s[BODY_SLOTS];
	uint64_t tick, hits, misses;
};

struct tp_gnn_body_cache *tp_gnn_body_cache_new(void)
{
	return calloc(1, sizeof(struct tp_gnn_body_cache));
}

void tp_gnn_body_cache_free(struct tp_gnn_body_cache *bc)
{
	if (!bc)
		return;
	for (int i = 0; i < BODY_SLOTS; i++)
		for (int k = 0; k < NT_COUNT; k++)
			free(bc->s[i].h[k]);
	free(bc);
}

void tp_gnn_body_cache_stats(const struct tp_gnn_body_cache *bc,
			     uint64_t *hits, uint64_t *misses)
{
	*hits = bc ? bc->hits : 0;
	*misses = bc ? bc->misses : 0;
}

static struct body_slot *body_find(struct tp_gnn_body_cache *bc,
				   const struct tp_gnn_net *net, uint64_t key,
				   const struct tp_gnn_input *in)
{
	if (bc->net != net) {
		for (int i = 0; i < BODY_SLOTS; i++)
			bc->s[i].used = 0;
		bc->net = net;
	}
	for (int i = 0; i < BODY_SLOTS; i++) {
		struct body_slot *s = &bc->s[i];
		if (s->used && s->key == key &&
		    s->rows[NT_GROUP] == in->n_groups &&
		    s->rows[NT_DEVICE] == in->n_devices)
			return s;
	}
	return NULL;
}

/* Keep the node states of f in the least recently used slot (nothing
 * when out of memory: the cache is only an optimisation). */
static void body_store(struct tp_gnn_body_cache *bc, uint64_t key,
		       const struct fwd_ctx *f)
{
	struct body_slot *s = &bc->s[0];
	const uint32_t hid = f->net->cfg.hidden;

	for (int i = 1; i < BODY_SLOTS; i++)
		if (bc->s[i].used < s->used)
			s = &bc->s[i];
	s->used = 0;
	for (int k = 0; k < NT_COUNT; k++) {
		struct tp_tensor v = tp_ad_val(f->ad, f->h[k]);
		size_t need = (size_t)v.rows * hid;
		if (need > s->cap[k]) {
			float *p = realloc(s->h[k], need * sizeof(float));
			if (!p)
				return;
			s->h[k] = p;
			s->cap[k] = need;
		}
		for (uint32_t i = 0; i < v.rows; i++)
			memcpy(s->h[k] + (size_t)i * hid, tp_tensor_at(&v, i, 0),
			       hid * sizeof(float));
		s->rows[k] = v.rows;
	}
	s->key = key;
	s->used = ++bc->tick;
}

/* The forward graph.  With bc (inference only), the encoders and layers
 * are skipped when bc holds their output for the same node and edge
 * features: the heads then read a copy of the same floats, so the
 * outputs are the same to the bit. */
static enum tp_status forward(const struct tp_gnn_net *net,
			      const struct tp_gnn_input *in, struct tp_ad *ad,
			      float *grad, struct tp_gnn_body_cache *bc,
			      struct fwd *out,
			      struct tp_error *err)
{
	const struct tp_gnn_config *c = &net->cfg;
	struct fwd_ctx f = {.net = net, .in = in, .ad = ad, .grad = grad};
	struct body_slot *hit = NULL;
	uint64_t key = 0;

	tp_ad_reset(ad);
	f.nb[NT_GROUP] = 0;
	f.nb[NT_DEVICE] = c->group_in;
	f.nb_action = f.nb[NT_DEVICE] + c->device_in;
	/* the global features' block lies between the actions' and the
	   edges': no layer reads it since the value head was dropped
	   (weights.h, version 3) */
	f.nb_edge[0] = f.nb_action + c->action_in + c->global_in;
	for (int t = 1; t < TP_GNN_ETYPES; t++)
		f.nb_edge[t] = f.nb_edge[t - 1] + c->edge_in[t - 1];
	if (bc && !grad) {
		key = body_key(in);
		hit = body_find(bc, net, key, in);
	}
	if (hit) {
		bc->hits++;
		hit->used = ++bc->tick;
		for (int k = 0; k < NT_COUNT; k++) {
			struct tp_tensor v = tp_tensor_view(
			    hit->h[k], hit->rows[k], c->hidden);
			f.h[k] = tp_ad_const(ad, &v);
		}
	} else {
		if (!fwd_encode(&f))
			goto nomem;
		for (uint32_t l = 0; l < c->layers; l++)
			fwd_layer(&f, l);
		if (bc && !grad && !tp_ad_failed(ad)) {
			bc->misses++;
			body_store(bc, key, &f);
		}
	}
	out->logits = TP_AD_NONE;
	out->gains = TP_AD_NONE;
	if ((in->n_actions && !fwd_policy(&f, out)) || tp_ad_failed(ad))
		goto nomem;
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM,
			    "out of memory in the GNN workspace");
}

enum tp_status tp_gnn_infer(const struct tp_gnn_net *net,
			    const struct tp_gnn_input *in, struct tp_ad *ad,
			    float *prior, struct tp_error *err)
{
	return tp_gnn_infer_cached(net, in, ad, NULL, prior, NULL, err);
}

enum tp_status tp_gnn_infer_gains(const struct tp_gnn_net *net,
				  const struct tp_gnn_input *in,
				  struct tp_ad *ad, float *prior, float *gain,
				  struct tp_error *err)
{
	return tp_gnn_infer_cached(net, in, ad, NULL, prior, gain, err);
}

enum tp_status tp_gnn_infer_cached(const struct tp_gnn_net *net,
				   const struct tp_gnn_input *in,
				   struct tp_ad *ad,
				   struct tp_gnn_body_cache *bc, float *prior,
				   float *gain, struct tp_error *err)
{
	struct fwd f;
	enum tp_status st = forward(net, in, ad, NULL, bc, &f, err);

	if (st)
		return st;
	if (in->n_actions) {
		struct tp_tensor l = tp_ad_val(ad, f.logits);
		float mx = -INFINITY;
		double sum = 0;
		for (uint32_t k = 0; k < in->n_actions; k++)
			if (l.data[k] > mx)
				mx = l.data[k];
		for (uint32_t k = 0; k < in->n_actions; k++) {
			prior[k] = expf(l.data[k] - mx);
			sum += prior[k];
		}
		for (uint32_t k = 0; k < in->n_actions; k++)
			prior[k] = (float)(prior[k] / sum);
		if (gain) {
			struct tp_tensor q = tp_ad_val(ad, f.gains);
			for (uint32_t k = 0; k < in->n_actions; k++)
				gain[k] = q.data[k];
		}
	}
	return TP_OK;
}

enum tp_status tp_gnn_train_targets(const struct tp_gnn_net *net,
				    const struct tp_gnn_input *in,
				    const struct tp_gnn_targets *t,
				    struct tp_ad *ad, float *grad,
				    float loss_out[2], struct tp_error *err)
{
	struct fwd f;
	enum tp_status st;
	uint32_t lp = TP_AD_NONE, lq = TP_AD_NONE, loss = TP_AD_NONE;

	loss_out[0] = loss_out[1] = 0.0f;
	if (!in->n_actions || ((!t->pi) && !(t->gain && t->gain_weight)))
		return TP_OK; /* nothing to learn from: no gradient */
	if ((st = forward(net, in, ad, grad, NULL, &f, err)))
		return st;
	if (t->pi)
		loss = lp = tp_ad_softmax_xent(ad, f.logits, t->pi);
	if (t->gain && t->gain_weight) {
		lq = tp_ad_wmse(ad, f.gains, t->gain, t->gain_weight);
		loss = loss == TP_AD_NONE ? lq : tp_ad_add(ad, loss, lq);
	}
	if (!tp_ad_backward(ad, loss))
		return tp_error_set(err, TP_ENOMEM,
				    "out of memory in the GNN workspace");
	loss_out[0] = lp == TP_AD_NONE ? 0.0f : tp_ad_val(ad, lp).data[0];
	loss_out[1] = lq == TP_AD_NONE ? 0.0f : tp_ad_val(ad, lq).data[0];
	return TP_OK;
}

/* ------------------------------------------------------------------ */
/* optimiser */

enum tp_status tp_gnn_adam_init(struct tp_gnn_adam *a, size_t n, float lr,
				struct tp_error *err)
{
	memset(a, 0, sizeof(*a));
	a->m = tp_calloc(n ? n : 1, sizeof(float));
	a->v = tp_calloc(n ? n : 1, sizeof(float));
	if (!a->m || !a->v) {
		tp_gnn_adam_release(a);
		return tp_error_set(err, TP_ENOMEM,
				    "out of memory for the optimiser");
	}
	a->n = n;
	a->lr = lr;
	a->beta1 = 0.9f;
	a->beta2 = 0.999f;
	a->eps = 1e-8f;
	a->weight_decay = 0.0f;
	return TP_OK;
}

void tp_gnn_adam_release(struct tp_gnn_adam *a)
{
	free(a->m);
	free(a->v);
	a->m = a->v = NULL;
	a->n = 0;
}

void tp_gnn_adam_step(struct tp_gnn_adam *a, float *w, const float *g)
{
	double c1, c2;

	a->t++;
	c1 = 1.0 - pow(a->beta1, (double)a->t);
	c2 = 1.0 - pow(a->beta2, (double)a->t);
	for (size_t i = 0; i < a->n; i++) {
		float mh, vh;
		a->m[i] = a->beta1 * a->m[i] + (1.0f - a->beta1) * g[i];
		a->v[i] = a->beta2 * a->v[i] + (1.0f - a->beta2) * g[i] * g[i];
		mh = (float)(a->m[i] / c1);
		vh = (float)(a->v[i] / c2);
		w[i] -= a->lr * (mh / (sqrtf(vh) + a->eps) +
				 a->weight_decay * w[i]);
	}
}

double tp_gnn_clip_grad(float *g, size_t n, double max_norm)
{
	double norm = sqrt(tp_tensor_sumsq(g, n));

	if (norm > max_norm && norm > 0) {
		float s = (float)(max_norm / norm);
		for (size_t i = 0; i < n; i++)
			g[i] *= s;
	}
	return norm;
}
