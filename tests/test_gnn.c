/*
 * test_gnn.c - the GNN: every op's and the whole network's gradients
 * against finite differences, the optimiser, thread safety, weight files,
 * features and a few training steps.
 */
#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/plan.h"
#include "core/report.h"
#include "core/rng.h"
#include "core/strategy.h"
#include "gnn/ad.h"
#include "gnn/features.h"
#include "gnn/graph.h"
#include "gnn/net.h"
#include "gnn/provider.h"
#include "gnn/weights.h"
#include "io/build.h"
#include "search/coarsen.h"
#include "train/train.h"
#include "util.h"

/* ------------------------------------------------------------------ */
/* finite differences for single ops */

#define MAXP 4

struct op_case {
	uint32_t shape[MAXP][2]; /* rows, cols of each parameter */
	int n_params;
	/* builds the op from the parameter vars; returns the output var */
	uint32_t (*build)(struct tp_ad *ad, const uint32_t *p, void *ctx);
	void *ctx;
	float lo, hi; /* parameter range; values with |x| < gap re-drawn */
	float gap;
};

/* Loss = <r, out> for a fixed random r. */
static double op_loss(struct op_case *c, float **w, float **g,
		      const float *r, struct tp_ad *ad, bool backward)
{
	uint32_t p[MAXP], out, loss;

	tp_ad_reset(ad);
	for (int i = 0; i < c->n_params; i++)
		p[i] = tp_ad_param(ad, w[i], backward ? g[i] : NULL,
				   c->shape[i][0], c->shape[i][1]);
	out = c->build(ad, p, c->ctx);
	ck_assert_uint_ne(out, TP_AD_NONE);
	loss = tp_ad_dot_const(ad, out, r);
	if (backward)
		ck_assert(tp_ad_backward(ad, loss));
	return tp_ad_val(ad, loss).data[0];
}

/* Returns the largest error |analytic - numeric| / max(1, |numeric|). */
static double check_op(struct op_case *c, uint64_t seed)
{
	struct tp_rng rng;
	struct tp_ad ad;
	float *w[MAXP], *g[MAXP], *r;
	double worst = 0;
	uint32_t out, n_out;
	const float eps = 1e-2f;

	tp_rng_seed(&rng, seed);
	tp_ad_init(&ad);
	for (int i = 0; i < c->n_params; i++) {
		size_t n = (size_t)c->shape[i][0] * c->shape[i][1];
		w[i] = calloc(n, sizeof(float));
		g[i] = calloc(n, sizeof(float));
		for (size_t k = 0; k < n; k++) {
			float x;
			do
				x = c->lo + (c->hi - c->lo) *
						    (float)tp_rng_uniform(&rng);
			while (fabsf(x) < c->gap);
			w[i][k] = x;
		}
	}
	/* output size from a dry forward */
	{
		uint32_t p[MAXP];
		tp_ad_reset(&ad);
		for (int i = 0; i < c->n_params; i++)
			p[i] = tp_ad_param(&ad, w[i], NULL, c->shape[i][0],
					   c->shape[i][1]);
		out = c->build(&ad, p, c->ctx);
		n_out = tp_ad_val(&ad, out).rows * tp_ad_val(&ad, out).cols;
	}
	r = calloc(n_out, sizeof(float));
	for (uint32_t k = 0; k < n_out; k++)
		r[k] = (float)(2 * tp_rng_uniform(&rng) - 1);
	op_loss(c, w, g, r, &ad, true);
	for (int i = 0; i < c->n_params; i++) {
		size_t n = (size_t)c->shape[i][0] * c->shape[i][1];
		for (size_t k = 0; k < n; k++) {
			float keep = w[i][k];
			double lp, lm, num, e;
			w[i][k] = keep + eps;
			lp = op_loss(c, w, g, r, &ad, false);
			w[i][k] = keep - eps;
			lm = op_loss(c, w, g, r, &ad, false);
			w[i][k] = keep;
			num = (lp - lm) / (2 * eps);
			e = fabs(num - g[i][k]) / fmax(1.0, fabs(num));
			if (e > worst)
				worst = e;
		}
	}
	for (int i = 0; i < c->n_params; i++) {
		free(w[i]);
		free(g[i]);
	}
	free(r);
	tp_ad_release(&ad);
	return worst;
}

#define OP_TOL 3e-3

static uint32_t b_matmul(struct tp_ad *ad, const uint32_t *p, void *ctx)
{
	(void)ctx;
	return tp_ad_matmul(ad, p[0], p[1]);
}
static uint32_t b_add_bias(struct tp_ad *ad, const uint32_t *p, void *ctx)
{
	(void)ctx;
	return tp_ad_add_bias(ad, p[0], p[1]);
}
static uint32_t b_add_scale(struct tp_ad *ad, const uint32_t *p, void *ctx)
{
	(void)ctx;
	return tp_ad_scale(ad, tp_ad_add(ad, p[0], p[1]), -1.5f);
}
static uint32_t b_silu(struct tp_ad *ad, const uint32_t *p, void *ctx)
{
	(void)ctx;
	return tp_ad_silu(ad, p[0]);
}
static uint32_t b_tanh(struct tp_ad *ad, const uint32_t *p, void *ctx)
{
	(void)ctx;
	return tp_ad_tanh(ad, p[0]);
}
static uint32_t b_relu(struct tp_ad *ad, const uint32_t *p, void *ctx)
{
	(void)ctx;
	return tp_ad_relu(ad, p[0]);
}
static uint32_t b_layernorm(struct tp_ad *ad, const uint32_t *p, void *ctx)
{
	(void)ctx;
	return tp_ad_layernorm(ad, p[0], p[1], p[2]);
}
static uint32_t b_concat(struct tp_ad *ad, const uint32_t *p, void *ctx)
{
	(void)ctx;
	return tp_ad_concat(ad, p[0], p[1], p[2], TP_AD_NONE);
}
static const uint32_t gather_idx[] = {2, 0, 2, 1, 3};
static uint32_t b_gather(struct tp_ad *ad, const uint32_t *p, void *ctx)
{
	(void)ctx;
	return tp_ad_gather(ad, p[0], gather_idx, 5);
}

/* A small bipartite graph: 4 sources, 3 destinations (the last has no
 * edge), 6 edges sorted by destination. */
static const uint32_t e_src[] = {0, 1, 3, 1, 2, 3};
static const uint32_t e_dst[] = {0, 0, 0, 1, 1, 1};
static const uint32_t e_first[] = {0, 3, 6, 6};
static const struct tp_ad_edges small_edges = {4, 3, 6, e_src, e_dst,
					       e_first, false};
/* complete bipartite 3 -> 2, in the dense order */
static const uint32_t d_src[] = {0, 1, 2, 0, 1, 2};
static const uint32_t d_dst[] = {0, 0, 0, 1, 1, 1};
static const uint32_t d_first[] = {0, 3, 6};
static const struct tp_ad_edges dense_edges = {3, 2, 6, d_src, d_dst,
					       d_first, true};

static uint32_t b_edge_logits(struct tp_ad *ad, const uint32_t *p, void *ctx)
{
	(void)ctx;
	return tp_ad_edge_logits(ad, &small_edges, p[0], p[1], p[2]);
}
static uint32_t b_edge_softmax(struct tp_ad *ad, const uint32_t *p, void *ctx)
{
	(void)ctx;
	return tp_ad_edge_softmax(ad, &small_edges, p[0]);
}
static uint32_t b_edge_agg(struct tp_ad *ad, const uint32_t *p, void *ctx)
{
	(void)ctx;
	return tp_ad_edge_agg(ad, &small_edges, p[0], p[1]);
}
static uint32_t b_edge_agg_dense(struct tp_ad *ad, const uint32_t *p,
				 void *ctx)
{
	(void)ctx;
	return tp_ad_edge_agg(ad, &dense_edges, p[0], p[1]);
}
/* feature-major: 3 features x 6 edges */
static float feat_x[3 * 6] = {0.5f,  -1.f, 2.f,  0.1f, 0.3f,  -0.7f,
			      1.2f,  0.4f, -.2f, .9f,  -.5f,  .25f,
			      -1.1f, .6f,  .8f,  .05f, -.35f, 1.5f};
static uint32_t b_edge_agg_feat(struct tp_ad *ad, const uint32_t *p,
				void *ctx)
{
	struct tp_tensor x = tp_tensor_view(feat_x, 3, 6);
	(void)ctx;
	return tp_ad_edge_agg_feat(ad, &small_edges, p[0], &x);
}
/* attention chain as the network uses it */
static uint32_t b_attention(struct tp_ad *ad, const uint32_t *p, void *ctx)
{
	uint32_t a;
	(void)ctx;
	a = tp_ad_edge_logits(ad, &small_edges, p[0], p[1], p[2]);
	a = tp_ad_edge_softmax(ad, &small_edges, a);
	return tp_ad_edge_agg(ad, &small_edges, a, p[3]);
}
static const uint32_t set_first[] = {0, 2, 3, 3, 6};
static const uint32_t set_member[] = {0, 3, 1, 1, 2, 4};
static const float set_w[] = {1, 2, 1, 3, 1, 0.5f};
static const struct tp_ad_sets small_sets = {4, set_first, set_member,
					     set_w};
static uint32_t b_set_pool(struct tp_ad *ad, const uint32_t *p, void *ctx)
{
	(void)ctx;
	return tp_ad_set_pool(ad, p[0], &small_sets);
}
static const float xent_t[] = {0.1f, 0.0f, 0.6f, 0.3f, 0.0f};
static uint32_t b_xent(struct tp_ad *ad, const uint32_t *p, void *ctx)
{
	(void)ctx;
	return tp_ad_softmax_xent(ad, p[0], xent_t);
}
static uint32_t b_mse(struct tp_ad *ad, const uint32_t *p, void *ctx)
{
	(void)ctx;
	return tp_ad_mse(ad, tp_ad_tanh(ad, p[0]), 0.3f);
}

static const float wmse_t[] = {0.1f, -0.4f, 0.7f, 0.0f, 0.2f};
static const float wmse_w[] = {0.5f, 1.0f, 0.0f, 2.0f, 0.25f};
static uint32_t b_wmse(struct tp_ad *ad, const uint32_t *p, void *ctx)
{
	(void)ctx;
	return tp_ad_wmse(ad, tp_ad_tanh(ad, p[0]), wmse_t, wmse_w);
}

static struct op_case op_cases[] = {
	{{{5, 4}, {4, 3}}, 2, b_matmul, NULL, -1, 1, 0},
	{{{5, 4}, {1, 4}}, 2, b_add_bias, NULL, -1, 1, 0},
	{{{3, 4}, {3, 4}}, 2, b_add_scale, NULL, -1, 1, 0},
	{{{4, 6}}, 1, b_silu, NULL, -3, 3, 0},
	{{{4, 6}}, 1, b_tanh, NULL, -2, 2, 0},
	{{{4, 6}}, 1, b_relu, NULL, -2, 2, 0.05f},
	{{{4, 7}, {1, 7}, {1, 7}}, 3, b_layernorm, NULL, -2, 2, 0},
	{{{3, 2}, {3, 4}, {3, 1}}, 3, b_concat, NULL, -1, 1, 0},
	{{{4, 3}}, 1, b_gather, NULL, -1, 1, 0},
	{{{4, 2}, {3, 2}, {2, 6}}, 3, b_edge_logits, NULL, -1, 1, 0.05f},
	{{{2, 6}}, 1, b_edge_softmax, NULL, -2, 2, 0},
	{{{2, 6}, {4, 6}}, 2, b_edge_agg, NULL, -1, 1, 0},
	{{{2, 6}, {3, 6}}, 2, b_edge_agg_dense, NULL, -1, 1, 0},
	{{{2, 6}}, 1, b_edge_agg_feat, NULL, -1, 1, 0},
	{{{4, 2}, {3, 2}, {2, 6}, {4, 6}}, 4, b_attention, NULL, -1, 1, 0.05f},
	{{{5, 4}}, 1, b_set_pool, NULL, -1, 1, 0},
	{{{5, 1}}, 1, b_xent, NULL, -2, 2, 0},
	{{{1, 1}}, 1, b_mse, NULL, -1, 1, 0},
	{{{5, 1}}, 1, b_wmse, NULL, -1, 1, 0},
};
static const char *const op_names[] = {
	"matmul",  "add_bias",	   "add+scale",	    "silu",
	"tanh",	   "relu",	   "layernorm",	    "concat",
	"gather",  "edge_logits",  "edge_softmax",  "edge_agg", "edge_agg_dense",
	"edge_agg_feat", "attention", "set_pool", "softmax_xent", "mse",
	"wmse"};

START_TEST(test_op_gradients)
{
	for (size_t i = 0; i < sizeof(op_cases) / sizeof(op_cases[0]); i++) {
		double e = check_op(&op_cases[i], 1000 + i);
		if (e > OP_TOL)
			ck_abort_msg("op %s: gradient error %.2e > %.0e",
				     op_names[i], e, OP_TOL);
	}
}
END_TEST

/* A gradient check must be able to fail: a wrong analytic gradient (the
 * output perturbed by a scaled copy) is caught. */
static uint32_t b_wrong(struct tp_ad *ad, const uint32_t *p, void *ctx)
{
	struct tp_tensor t;
	uint32_t y = tp_ad_tanh(ad, p[0]);
	(void)ctx;
	/* tamper with the value after recording: backward uses the stored
	 * output, so d/dx is computed from the wrong tanh */
	t = tp_ad_val(ad, y);
	t.data[0] += 0.5f;
	return y;
}

START_TEST(test_gradient_check_detects_errors)
{
	struct op_case c = {{{3, 3}}, 1, b_wrong, NULL, -1, 1, 0};
	ck_assert(check_op(&c, 7) > 10 * OP_TOL);
}
END_TEST

/* ------------------------------------------------------------------ */
/* whole network */

static const struct tp_gnn_widths small_w = {5, 4, 6, 3, {2, 2, 3, 4, 4}};

static struct tp_gnn_net *small_net(uint64_t seed, struct tp_gnn_config *cfg)
{
	struct tp_rng rng;
	struct tp_error err;
	struct tp_gnn_net *net;

	tp_gnn_config_default(cfg, small_w.group, small_w.device,
			      small_w.action, small_w.global, small_w.edge);
	cfg->hidden = 8;
	cfg->heads = 2;
	cfg->layers = 3;
	cfg->head_hidden = 8;
	tp_rng_seed(&rng, seed);
	net = tp_gnn_net_new(cfg, &rng, &err);
	ck_assert_msg(net != NULL, "%s", err.msg);
	/* non-trivial normalisation, so it is covered too */
	for (size_t i = 0; i < net->norm.n; i++) {
		net->norm.mean[i] = 0.1f * (float)(i % 3);
		net->norm.std[i] = 0.5f + 0.25f * (float)(i % 4);
	}
	/* random gains/biases instead of 1/0 so their gradients are not
	 * degenerate */
	for (size_t i = 0; i < net->n_params; i++)
		if (net->w[i] == 0.0f || net->w[i] == 1.0f)
			net->w[i] += (float)(0.3 * tp_rng_normal(&rng));
	return net;
}

/* gain targets of the 6 actions; the third is masked (weight 0) */
static const float gain_t[6] = {0.2f, -0.5f, 0.9f, 0.0f, -0.95f, 0.4f};
static const float gain_w[6] = {0.3f, 0.1f, 0.0f, 0.2f, 0.25f, 0.15f};

static double net_loss(struct tp_gnn_net *net, struct tp_gnn_input *in,
		       const float *pi, struct tp_ad *ad, float *g)
{
	float l[2];
	struct tp_error err;
	struct tp_gnn_targets t = {pi, gain_t, gain_w};
	ck_assert_int_eq(tp_gnn_train_targets(net, in, &t, ad, g, l, &err),
			 TP_OK);
	ck_assert(l[1] > 0);
	return (double)l[0] + l[1];
}

START_TEST(test_network_gradient)
{
	struct tp_gnn_config cfg;
	struct tp_gnn_net *net = small_net(5, &cfg);
	struct tp_gnn_graph g;
	struct tp_gnn_input in;
	struct tp_rng rng;
	struct tp_error err;
	struct tp_ad ad;
	float *grad, *scratch, pi[6] = {0.05f, 0.3f, 0, 0.4f, 0.15f, 0.1f};
	double worst = 0, sum_e = 0;
	size_t n_checked = 0;
	double worst_big = 0, worst_abs = 0;
	const float eps = 3e-3f;

	tp_rng_seed(&rng, 11);
	tp_gnn_graph_init(&g, &small_w);
	ck_assert_int_eq(tp_gnn_graph_random(&g, 5, 4, 6, &rng, &err), TP_OK);
	ck_assert_int_eq(tp_gnn_graph_finish(&g, &in, &err), TP_OK);
	ck_assert_int_eq(tp_gnn_input_check(net, &in, &err), TP_OK);
	tp_ad_init(&ad);
	grad = calloc(net->n_params, sizeof(float));
	scratch = calloc(net->n_params, sizeof(float));
	net_loss(net, &in, pi, &ad, grad);
	for (size_t i = 0; i < net->n_params; i++) {
		float keep = net->w[i];
		double lp, lm, num, e;
		net->w[i] = keep + eps;
		lp = net_loss(net, &in, pi, &ad, scratch);
		net->w[i] = keep - eps;
		lm = net_loss(net, &in, pi, &ad, scratch);
		net->w[i] = keep;
		num = (lp - lm) / (2 * eps);
		e = fabs(num - grad[i]) / fmax(0.1, fabs(num));
		sum_e += e;
		n_checked++;
		if (e > worst)
			worst = e;
		if (fabs(num) >= 1e-2 && e > worst_big)
			worst_big = e;
		if (fabs(num - grad[i]) > worst_abs)
			worst_abs = fabs(num - grad[i]);
	}
	fprintf(stderr,
		"gnn: whole-network gradient check: %zu weights, max abs "
		"error %.1e, max rel error %.1e where |grad| >= 0.01, mean "
		"rel error %.1e\n",
		n_checked, worst_abs, worst_big, sum_e / (double)n_checked);
	ck_assert_msg(worst < 2e-2, "network gradient error %.3e", worst);
	ck_assert_msg(worst_big < 1e-2, "network gradient error %.3e",
		      worst_big);
	ck_assert(sum_e / (double)n_checked < 2e-3);
	free(grad);
	free(scratch);
	tp_ad_release(&ad);
	tp_gnn_graph_release(&g);
	tp_gnn_net_free(net);
}
END_TEST

START_TEST(test_infer_priors_and_gains)
{
	struct tp_gnn_config cfg;
	struct tp_gnn_net *net = small_net(6, &cfg);
	struct tp_gnn_graph g;
	struct tp_gnn_input in;
	struct tp_rng rng;
	struct tp_error err;
	struct tp_ad ad;
	float prior[6], sum = 0;

	tp_rng_seed(&rng, 3);
	tp_gnn_graph_init(&g, &small_w);
	ck_assert_int_eq(tp_gnn_graph_random(&g, 7, 5, 6, &rng, &err), TP_OK);
	ck_assert_int_eq(tp_gnn_graph_finish(&g, &in, &err), TP_OK);
	tp_ad_init(&ad);
	ck_assert_int_eq(tp_gnn_infer(net, &in, &ad, prior, &err), TP_OK);
	for (int k = 0; k < 6; k++) {
		ck_assert(prior[k] > 0 && prior[k] < 1);
		sum += prior[k];
	}
	ck_assert(fabsf(sum - 1) < 1e-5f);
	/* with the gains: the same priors to the bit, gains in (-1, 1) */
	{
		float p2[6], q[6];
		ck_assert_int_eq(tp_gnn_infer_gains(net, &in, &ad, p2, q, &err),
				 TP_OK);
		ck_assert(!memcmp(prior, p2, sizeof(p2)));
		for (int k = 0; k < 6; k++)
			ck_assert(q[k] > -1 && q[k] < 1);
	}
	/* no actions: nothing to compute, not an error */
	in.n_actions = 0;
	ck_assert_int_eq(tp_gnn_infer(net, &in, &ad, NULL, &err), TP_OK);
	/* a width mismatch is an input error, not a crash */
	in.group_x.cols--;
	ck_assert_int_eq(tp_gnn_input_check(net, &in, &err), TP_EINPUT);
	ck_assert(strstr(err.msg, "group features") != NULL);
	tp_ad_release(&ad);
	tp_gnn_graph_release(&g);
	tp_gnn_net_free(net);
}
END_TEST

/* One cached inference against the uncached one: the same priors and
 * gains to the bit, and whether the body came from the cache. */
static void cached_same(const struct tp_gnn_net *net,
			const struct tp_gnn_input *in, struct tp_ad *ad,
			struct tp_gnn_body_cache *bc, bool want_hit)
{
	float p1[8], p2[8], q1[8], q2[8];
	uint64_t h0, m0, h1, m1;
	struct tp_error err;

	ck_assert_int_eq(tp_gnn_infer_gains(net, in, ad, p1, q1, &err), TP_OK);
	tp_gnn_body_cache_stats(bc, &h0, &m0);
	ck_assert_int_eq(tp_gnn_infer_cached(net, in, ad, bc, p2, q2, &err),
			 TP_OK);
	tp_gnn_body_cache_stats(bc, &h1, &m1);
	ck_assert_uint_eq(h1 - h0, want_hit ? 1 : 0);
	ck_assert_uint_eq(m1 - m0, want_hit ? 0 : 1);
	ck_assert(!memcmp(p1, p2, in->n_actions * sizeof(float)));
	ck_assert(!memcmp(q1, q2, in->n_actions * sizeof(float)));
}

/* The body cache (net.h): a state that differs only in the query (the
 * group being decided, the global features) reuses the body, with the
 * same outputs to the bit; a changed node or edge feature does not. */
START_TEST(test_body_cache)
{
	struct tp_gnn_config cfg;
	struct tp_gnn_net *net = small_net(6, &cfg), *other = small_net(7, &cfg);
	struct tp_gnn_body_cache *bc = tp_gnn_body_cache_new();
	struct tp_gnn_graph g;
	struct tp_gnn_input in;
	struct tp_rng rng;
	struct tp_error err;
	struct tp_ad ad;
	float gx[3];

	ck_assert(bc != NULL);
	tp_rng_seed(&rng, 3);
	tp_gnn_graph_init(&g, &small_w);
	ck_assert_int_eq(tp_gnn_graph_random(&g, 7, 5, 6, &rng, &err), TP_OK);
	ck_assert_int_eq(tp_gnn_graph_finish(&g, &in, &err), TP_OK);
	tp_ad_init(&ad);
	cached_same(net, &in, &ad, bc, false);
	cached_same(net, &in, &ad, bc, true);
	/* another group being decided, other globals: the same body */
	in.group = (in.group + 1) % in.n_groups;
	memcpy(gx, in.global_x, sizeof(gx));
	((float *)in.global_x)[0] += 0.5f;
	cached_same(net, &in, &ad, bc, true);
	/* a group feature, a device feature, an edge feature: new bodies */
	tp_tensor_at(&in.group_x, 2, 1)[0] += 0.25f;
	cached_same(net, &in, &ad, bc, false);
	tp_tensor_at(&in.device_x, 1, 0)[0] += 0.25f;
	cached_same(net, &in, &ad, bc, false);
	tp_tensor_at(&in.edge_x[TP_GNN_E_PLACE], 3, 1)[0] += 0.25f;
	cached_same(net, &in, &ad, bc, false);
	cached_same(net, &in, &ad, bc, true);
	/* another network never reads this one's bodies */
	cached_same(other, &in, &ad, bc, false);
	/* the first state again: computed afresh (using the other network
	   emptied the cache), then cached */
	tp_tensor_at(&in.group_x, 2, 1)[0] -= 0.25f;
	tp_tensor_at(&in.device_x, 1, 0)[0] -= 0.25f;
	tp_tensor_at(&in.edge_x[TP_GNN_E_PLACE], 3, 1)[0] -= 0.25f;
	memcpy((float *)in.global_x, gx, sizeof(gx));
	cached_same(net, &in, &ad, bc, false);
	cached_same(net, &in, &ad, bc, true);
	tp_gnn_body_cache_free(bc);
	tp_ad_release(&ad);
	tp_gnn_graph_release(&g);
	tp_gnn_net_free(other);
	tp_gnn_net_free(net);
}
END_TEST

struct thr {
	const struct tp_gnn_net *net;
	struct tp_gnn_input *in;
	float prior[16];
	int ok;
};

static void *thr_run(void *arg)
{
	struct thr *t = arg;
	struct tp_ad ad;
	struct tp_error err;
	tp_ad_init(&ad);
	t->ok = 1;
	for (int i = 0; i < 20; i++)
		if (tp_gnn_infer(t->net, t->in, &ad, t->prior, &err))
			t->ok = 0;
	tp_ad_release(&ad);
	return NULL;
}

START_TEST(test_infer_threads)
{
	struct tp_gnn_config cfg;
	struct tp_gnn_net *net = small_net(8, &cfg);
	struct tp_gnn_graph g;
	struct tp_gnn_input in;
	struct tp_rng rng;
	struct tp_error err;
	struct tp_ad ad;
	struct thr t[3];
	pthread_t th[3];
	float prior[16];

	tp_rng_seed(&rng, 9);
	tp_gnn_graph_init(&g, &small_w);
	ck_assert_int_eq(tp_gnn_graph_random(&g, 9, 6, 10, &rng, &err),
			 TP_OK);
	ck_assert_int_eq(tp_gnn_graph_finish(&g, &in, &err), TP_OK);
	tp_ad_init(&ad);
	ck_assert_int_eq(tp_gnn_infer(net, &in, &ad, prior, &err), TP_OK);
	for (int i = 0; i < 3; i++) {
		t[i].net = net;
		t[i].in = &in;
		ck_assert_int_eq(pthread_create(&th[i], NULL, thr_run, &t[i]),
				 0);
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		ck_assert(t[i].ok);
		ck_assert(memcmp(t[i].prior, prior, 10 * sizeof(float)) == 0);
	}
	tp_ad_release(&ad);
	tp_gnn_graph_release(&g);
	tp_gnn_net_free(net);
}
END_TEST

/* ------------------------------------------------------------------ */
/* optimiser */

START_TEST(test_adam_and_clip)
{
	struct tp_gnn_adam a;
	struct tp_error err;
	float w[3] = {3, -2, 1}, g[3];
	double norm;

	ck_assert_int_eq(tp_gnn_adam_init(&a, 3, 0.05f, &err), TP_OK);
	for (int it = 0; it < 500; it++) {
		/* f = sum (w_i - i)^2 */
		for (int i = 0; i < 3; i++)
			g[i] = 2 * (w[i] - (float)i);
		tp_gnn_adam_step(&a, w, g);
	}
	for (int i = 0; i < 3; i++)
		ck_assert_msg(fabsf(w[i] - (float)i) < 0.05f, "w[%d] = %g", i,
			      w[i]);
	tp_gnn_adam_release(&a);
	g[0] = 3;
	g[1] = 4;
	g[2] = 0;
	norm = tp_gnn_clip_grad(g, 3, 1.0);
	ck_assert(fabs(norm - 5) < 1e-6);
	ck_assert(fabsf(g[0] - 0.6f) < 1e-6f && fabsf(g[1] - 0.8f) < 1e-6f);
	norm = tp_gnn_clip_grad(g, 3, 10.0);
	ck_assert(fabs(norm - 1) < 1e-6 && fabsf(g[0] - 0.6f) < 1e-6f);
}
END_TEST

/* A few Adam steps on a tiny fixed corpus lower the loss. */
START_TEST(test_training_steps_lower_loss)
{
	struct tp_gnn_config cfg;
	struct tp_gnn_net *net = small_net(21, &cfg);
	struct tp_gnn_graph g[4];
	struct tp_gnn_input in[4];
	struct tp_rng rng;
	struct tp_error err;
	struct tp_ad ad;
	struct tp_gnn_adam adam;
	float *grad, pi[4][8], gt[4][8], gw[8];
	double first = 0, last = 0, gfirst = 0, glast = 0;

	tp_rng_seed(&rng, 77);
	for (int s = 0; s < 4; s++) {
		tp_gnn_graph_init(&g[s], &small_w);
		ck_assert_int_eq(tp_gnn_graph_random(&g[s], 4 + (uint32_t)s, 3,
						     8, &rng, &err),
				 TP_OK);
		ck_assert_int_eq(tp_gnn_graph_finish(&g[s], &in[s], &err),
				 TP_OK);
		for (int k = 0; k < 8; k++) {
			pi[s][k] = k == s ? 1.0f : 0.0f;
			gt[s][k] = k == s ? 0.6f : -0.2f * (float)(k % 3);
			gw[k] = 1.0f / 8;
		}
	}
	tp_ad_init(&ad);
	grad = calloc(net->n_params, sizeof(float));
	ck_assert_int_eq(tp_gnn_adam_init(&adam, net->n_params, 3e-3f, &err),
			 TP_OK);
	for (int step = 0; step < 40; step++) {
		double total = 0, gain = 0;
		memset(grad, 0, net->n_params * sizeof(float));
		for (int s = 0; s < 4; s++) {
			float l[2];
			struct tp_gnn_targets t = {pi[s], gt[s], gw};
			ck_assert_int_eq(tp_gnn_train_targets(net, &in[s], &t,
							      &ad, grad, l,
							      &err),
					 TP_OK);
			total += l[0] + l[1];
			gain += l[1];
		}
		tp_gnn_clip_grad(grad, net->n_params, 1.0);
		tp_gnn_adam_step(&adam, net->w, grad);
		if (step == 0) {
			first = total;
			gfirst = gain;
		}
		last = total;
		glast = gain;
	}
	ck_assert_msg(last < 0.5 * first, "loss %g -> %g", first, last);
	ck_assert_msg(glast < 0.5 * gfirst, "gain loss %g -> %g", gfirst,
		      glast);
	tp_gnn_adam_release(&adam);
	free(grad);
	tp_ad_release(&ad);
	for (int s = 0; s < 4; s++)
		tp_gnn_graph_release(&g[s]);
	tp_gnn_net_free(net);
}
END_TEST

/* ------------------------------------------------------------------ */
/* weights files */

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* Recompute the trailing CRC after a deliberate edit. */
static void refresh_crc(unsigned char *b, size_t len)
{
	put32(b + len - 4, tp_gnn_crc32(b, len - 4));
}

START_TEST(test_weights_roundtrip)
{
	struct tp_gnn_config cfg;
	struct tp_gnn_net *net = small_net(31, &cfg), *back;
	struct tp_error err;
	unsigned char *buf;
	size_t len;
	char path[512];

	/* CRC-32 check value of the standard */
	ck_assert_uint_eq(tp_gnn_crc32((const unsigned char *)"123456789", 9),
			  0xCBF43926u);
	net->meta.seed = 99;
	net->meta.games = 7;
	net->meta.heldout_loss = 0.5f;
	snprintf(net->meta.note, sizeof(net->meta.note), "unit test");
	ck_assert_int_eq(tp_gnn_weights_encode(net, &buf, &len, &err), TP_OK);
	ck_assert_uint_eq(len, TP_GNN_WEIGHTS_HEADER +
				       4 * (2 * net->norm.n + net->n_params) +
				       4);
	/* version 3: the gain head's tensors end the layout, no value head
	   (version 2 had four value tensors after them) */
	ck_assert_uint_eq(buf[8] | buf[9] << 8, 3);
	{
		size_t nt = tp_gnn_net_tensor_count(net), off;
		uint32_t r, c;
		for (size_t i = 0; i < nt; i++)
			ck_assert_msg(strncmp(tp_gnn_net_tensor(net, i, &r, &c,
								&off),
					      "value.", 6) != 0,
				      "tensor %zu is a value head's", i);
		ck_assert_str_eq(tp_gnn_net_tensor(net, nt - 1, &r, &c, &off),
				 "gain.b");
		ck_assert_uint_eq(off + (size_t)r * c, net->n_params);
	}
	back = tp_gnn_weights_decode("mem", buf, len, &small_w, &err);
	ck_assert_msg(back != NULL, "%s", err.msg);
	ck_assert_uint_eq(back->n_params, net->n_params);
	ck_assert(memcmp(back->w, net->w, net->n_params * sizeof(float)) == 0);
	ck_assert(memcmp(back->norm.std, net->norm.std,
			 net->norm.n * sizeof(float)) == 0);
	ck_assert(memcmp(&back->cfg, &net->cfg, sizeof(cfg)) == 0);
	ck_assert_uint_eq(back->meta.seed, 99);
	ck_assert_uint_eq(back->meta.games, 7);
	ck_assert_str_eq(back->meta.note, "unit test");
	tp_gnn_net_free(back);
	/* through a file */
	snprintf(path, sizeof(path), "%s/w.bin", tp_test_tmpdir());
	ck_assert_int_eq(tp_gnn_weights_save(net, path, &err), TP_OK);
	back = tp_gnn_weights_load(path, &small_w, &err);
	ck_assert_msg(back != NULL, "%s", err.msg);
	ck_assert(memcmp(back->w, net->w, net->n_params * sizeof(float)) == 0);
	tp_gnn_net_free(back);
	free(buf);
	tp_gnn_net_free(net);
}
END_TEST

/* Re-seal buf after an edit (the CRC-32 ends the file). */
static void reseal(unsigned char *buf, size_t len)
{
	uint32_t c = tp_gnn_crc32(buf, len - 4);
	for (int i = 0; i < 4; i++)
		buf[len - 4 + i] = (unsigned char)(c >> (8 * i));
}

/* The file records the OpenBLAS kernel set training ran on (bytes
 * 212-243, the last 32 of what was a 96-byte note, weights.h); files
 * written before it (zeros there, or a note of 64-95 bytes running on
 * over them) still load, with the kernel set "" and their note. */
START_TEST(test_weights_blas_field)
{
	struct tp_gnn_config cfg;
	struct tp_gnn_net *net = small_net(37, &cfg), *back;
	struct tp_error err;
	unsigned char *buf;
	size_t len;
	char longnote[91];

	snprintf(net->meta.note, sizeof(net->meta.note), "unit test");
	snprintf(net->meta.blas, sizeof(net->meta.blas), "SomeKernels");
	ck_assert_int_eq(tp_gnn_weights_encode(net, &buf, &len, &err), TP_OK);
	ck_assert_uint_eq(buf[8], 3); /* no new version */
	ck_assert(memcmp(buf + 212, "SomeKernels", 12) == 0);
	back = tp_gnn_weights_decode("mem", buf, len, &small_w, &err);
	ck_assert_msg(back != NULL, "%s", err.msg);
	ck_assert_str_eq(back->meta.blas, "SomeKernels");
	ck_assert_str_eq(back->meta.note, "unit test");
	tp_gnn_net_free(back);
	/* a file from before: zeros where the kernel set is */
	memset(buf + 212, 0, 32);
	reseal(buf, len);
	back = tp_gnn_weights_decode("old", buf, len, &small_w, &err);
	ck_assert_msg(back != NULL, "%s", err.msg);
	ck_assert_str_eq(back->meta.blas, "");
	ck_assert_str_eq(back->meta.note, "unit test");
	ck_assert(memcmp(back->w, net->w, net->n_params * sizeof(float)) == 0);
	tp_gnn_net_free(back);
	/* ... or with a note of 90 bytes, over the kernel set's place */
	memset(longnote, 'n', 90);
	longnote[90] = '\0';
	memcpy(buf + 148, longnote, 90);
	reseal(buf, len);
	back = tp_gnn_weights_decode("old", buf, len, &small_w, &err);
	ck_assert_msg(back != NULL, "%s", err.msg);
	ck_assert_str_eq(back->meta.note, longnote);
	ck_assert_str_eq(back->meta.blas, "");
	tp_gnn_net_free(back);
	free(buf);
	/* a note is written up to 63 bytes, the kernel set kept */
	snprintf(net->meta.note, sizeof(net->meta.note), "%s", longnote);
	ck_assert_int_eq(tp_gnn_weights_encode(net, &buf, &len, &err), TP_OK);
	back = tp_gnn_weights_decode("mem", buf, len, &small_w, &err);
	ck_assert_msg(back != NULL, "%s", err.msg);
	ck_assert_uint_eq(strlen(back->meta.note), 63);
	ck_assert(strncmp(back->meta.note, longnote, 63) == 0);
	ck_assert_str_eq(back->meta.blas, "SomeKernels");
	tp_gnn_net_free(back);
	free(buf);
	tp_gnn_net_free(net);
}
END_TEST

/* The file records the largest cluster of the training corpus in what
 * were 4 reserved bytes (244-247, weights.h) without a new version; a
 * file written before (0 there) reads as 0, "not recorded". */
START_TEST(test_weights_corpus_gpus)
{
	struct tp_gnn_config cfg;
	struct tp_gnn_net *net = small_net(41, &cfg), *back;
	struct tp_error err;
	unsigned char *buf;
	size_t len;

	net->meta.corpus_gpus = 256;
	ck_assert_int_eq(tp_gnn_weights_encode(net, &buf, &len, &err), TP_OK);
	ck_assert_uint_eq(buf[8], 3); /* no new version */
	ck_assert_uint_eq(buf[244] | buf[245] << 8 | buf[246] << 16 |
				  (uint32_t)buf[247] << 24,
			  256);
	back = tp_gnn_weights_decode("mem", buf, len, &small_w, &err);
	ck_assert_msg(back != NULL, "%s", err.msg);
	ck_assert_uint_eq(back->meta.corpus_gpus, 256);
	tp_gnn_net_free(back);
	/* a file from before: zeros there */
	memset(buf + 244, 0, 4);
	reseal(buf, len);
	back = tp_gnn_weights_decode("old", buf, len, &small_w, &err);
	ck_assert_msg(back != NULL, "%s", err.msg);
	ck_assert_uint_eq(back->meta.corpus_gpus, 0);
	ck_assert(memcmp(back->w, net->w, net->n_params * sizeof(float)) == 0);
	tp_gnn_net_free(back);
	free(buf);
	/* 100,000 GPUs: the whole u32 field is read */
	net->meta.corpus_gpus = 100000;
	ck_assert_int_eq(tp_gnn_weights_encode(net, &buf, &len, &err), TP_OK);
	back = tp_gnn_weights_decode("mem", buf, len, &small_w, &err);
	ck_assert_msg(back != NULL, "%s", err.msg);
	ck_assert_uint_eq(back->meta.corpus_gpus, 100000);
	tp_gnn_net_free(back);
	free(buf);
	tp_gnn_net_free(net);
}
END_TEST

/* Weights trained for fewer action and global features (new ones
 * appended, features.h) load zero-padded: on any input, whatever the new
 * features hold, the widened network gives the priors and gains the
 * original gives on the input without them.  Other width changes
 * stay refused (test_weights_corruption). */
START_TEST(test_weights_widened)
{
	struct tp_gnn_config cfg;
	struct tp_gnn_net *net = small_net(33, &cfg), *wide;
	struct tp_gnn_widths w2 = small_w;
	struct tp_gnn_graph g;
	struct tp_gnn_input in, in2;
	struct tp_rng rng;
	struct tp_error err;
	struct tp_ad ad;
	unsigned char *buf;
	size_t len;
	float p1[6], p2[6], q1[6], q2[6], *ax, *gx;
	uint32_t A = small_w.action, G = small_w.global;

	w2.action += 2;
	w2.global += 3;
	ck_assert_int_eq(tp_gnn_weights_encode(net, &buf, &len, &err), TP_OK);
	wide = tp_gnn_weights_decode("old.weights", buf, len, &w2, &err);
	ck_assert_msg(wide != NULL, "%s", err.msg);
	ck_assert_uint_eq(wide->cfg.action_in, A + 2);
	ck_assert_uint_eq(wide->cfg.global_in, G + 3);
	tp_rng_seed(&rng, 12);
	tp_gnn_graph_init(&g, &small_w);
	ck_assert_int_eq(tp_gnn_graph_random(&g, 5, 4, 6, &rng, &err), TP_OK);
	ck_assert_int_eq(tp_gnn_graph_finish(&g, &in, &err), TP_OK);
	ck_assert_uint_eq(in.n_actions, 6);
	/* the same input with the new features set to non-zero values */
	in2 = in;
	ax = malloc(6 * (A + 2) * sizeof(float));
	gx = malloc((G + 3) * sizeof(float));
	for (uint32_t k = 0; k < 6; k++)
		for (uint32_t j = 0; j < A + 2; j++)
			ax[k * (A + 2) + j] =
				j < A ? in.action_x.data[k * in.action_x.ld + j]
				      : 0.5f + (float)k;
	for (uint32_t j = 0; j < G + 3; j++)
		gx[j] = j < G ? in.global_x[j] : -2.0f;
	in2.action_x = tp_tensor_view(ax, 6, A + 2);
	in2.global_x = gx;
	ck_assert_int_eq(tp_gnn_input_check(wide, &in2, &err), TP_OK);
	tp_ad_init(&ad);
	ck_assert_int_eq(tp_gnn_infer_gains(net, &in, &ad, p1, q1, &err),
			 TP_OK);
	ck_assert_int_eq(tp_gnn_infer_gains(wide, &in2, &ad, p2, q2, &err),
			 TP_OK);
	for (int k = 0; k < 6; k++) {
		ck_assert_msg(fabsf(p1[k] - p2[k]) < 1e-6f, "prior %d: %g %g",
			      k, p1[k], p2[k]);
		ck_assert_msg(fabsf(q1[k] - q2[k]) < 1e-6f, "gain %d: %g %g",
			      k, q1[k], q2[k]);
	}
	/* narrower is no widening */
	w2 = small_w;
	w2.action--;
	tp_gnn_net_free(wide);
	wide = tp_gnn_weights_decode("old.weights", buf, len, &w2, &err);
	ck_assert_ptr_null(wide);
	ck_assert_msg(strstr(err.msg, "trained for other features"), "%s",
		      err.msg);
	tp_ad_release(&ad);
	tp_gnn_graph_release(&g);
	free(ax);
	free(gx);
	free(buf);
	tp_gnn_net_free(net);
}
END_TEST

/* Decode a damaged copy: must fail with TP_EINPUT, the file name and a
 * message containing `what`. */
static void expect_bad(const unsigned char *b, size_t len,
		       const struct tp_gnn_widths *w, const char *what)
{
	struct tp_error err;
	struct tp_gnn_net *net;

	tp_error_clear(&err);
	net = tp_gnn_weights_decode("damaged.weights", b, len, w, &err);
	ck_assert_msg(net == NULL, "a damaged file (%s) was accepted", what);
	ck_assert_int_eq(err.status, TP_EINPUT);
	ck_assert_str_eq(err.file, "damaged.weights");
	ck_assert_msg(strstr(err.msg, what) != NULL, "expected \"%s\" in: %s",
		      what, err.msg);
}

START_TEST(test_weights_corruption)
{
	struct tp_gnn_config cfg;
	struct tp_gnn_net *net = small_net(32, &cfg);
	struct tp_error err;
	struct tp_gnn_widths other = small_w;
	unsigned char *buf, *b;
	size_t len;
	const size_t cuts[] = {0, 5, 12, 100, TP_GNN_WEIGHTS_HEADER, 1000};

	ck_assert_int_eq(tp_gnn_weights_encode(net, &buf, &len, &err), TP_OK);
	b = malloc(len + 8);
	/* truncated anywhere */
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
		expect_bad(buf, cuts[i],
			   &small_w, cuts[i] < 8 ? "not a tagplan weights"
						 : "truncated");
	expect_bad(buf, len - 1, &small_w, "truncated");
	/* trailing bytes */
	memcpy(b, buf, len);
	memset(b + len, 0, 8);
	expect_bad(b, len + 8, &small_w, "trailing");
	/* a flipped bit anywhere in the payload or the checksum */
	for (size_t pos = TP_GNN_WEIGHTS_HEADER; pos < len; pos += 97) {
		memcpy(b, buf, len);
		b[pos] ^= 0x10;
		expect_bad(b, len, &small_w, "checksum");
	}
	/* ... or in the metadata part of the header */
	memcpy(b, buf, len);
	b[150] ^= 0x01;
	expect_bad(b, len, &small_w, "checksum");
	/* bad magic */
	memcpy(b, buf, len);
	b[6] = '\n';
	expect_bad(b, len, &small_w, "not a tagplan weights");
	/* wrong version (checksum made valid) */
	memcpy(b, buf, len);
	put32(b + 8, 1);
	refresh_crc(b, len);
	expect_bad(b, len, &small_w, "version 1");
	/* version 2, the layout with a value head: refused, saying how to
	   get a file of this version */
	memcpy(b, buf, len);
	put32(b + 8, 2);
	refresh_crc(b, len);
	expect_bad(b, len, &small_w, "version 2 (with the value head");
	expect_bad(b, len, &small_w, "make weights");
	/* wrong sizes: hidden changed, weights count no longer matches */
	memcpy(b, buf, len);
	put32(b + 16, cfg.hidden * 2);
	refresh_crc(b, len);
	expect_bad(b, len, &small_w, "inconsistent header");
	/* impossible sizes: heads do not divide hidden */
	memcpy(b, buf, len);
	put32(b + 20, 3);
	refresh_crc(b, len);
	expect_bad(b, len, &small_w, "bad layer sizes");
	/* another feature version */
	other.device++;
	expect_bad(buf, len, &other, "other features");
	/* a NaN weight with a valid checksum */
	memcpy(b, buf, len);
	put32(b + len - 8, 0x7fc00000u);
	refresh_crc(b, len);
	expect_bad(b, len, &small_w, "not finite");
	free(b);
	free(buf);
	tp_gnn_net_free(net);
}
END_TEST

/* ------------------------------------------------------------------ */
/* features and the provider on a real model and cluster */

struct fixture {
	struct tp_model m;
	struct tp_cluster c;
	struct tp_groups g;
	struct tp_plan plan;
	bool *decided;
	struct tp_prior_action acts[8];
	uint32_t devs[8][256];
	struct tp_prior_state st;
};

static void fixture_init(struct fixture *fx, const char *const *specs,
			 int n_specs, const char *net)
{
	struct tp_gpt_dims d;
	struct tp_strategy sg;
	struct tp_error err;
	uint32_t nd;

	memset(fx, 0, sizeof(*fx));
	tp_gpt_dims_default(&d);
	d.hidden = 256;
	d.layers = 4;
	d.heads = 4;
	d.seq = 128;
	d.vocab = 1000;
	d.batch = 256;
	tp_model_init(&fx->m);
	ck_assert_msg(tp_build_gpt(&d, &fx->m, &err) == TP_OK, "%s", err.msg);
	tp_cluster_init(&fx->c);
	ck_assert_msg(tp_build_topology(specs, n_specs, net, 1.0, &fx->c,
					&err) == TP_OK,
		      "%s", err.msg);
	ck_assert_int_eq(tp_coarsen(&fx->m, 0, &fx->g, &err), TP_OK);
	tp_plan_init(&fx->plan);
	tp_strategy_default(&sg);
	ck_assert_msg(tp_strategy_to_plan(&sg, &fx->m, &fx->c, &fx->plan,
					  &err) == TP_OK,
		      "%s", err.msg);
	fx->decided = calloc(fx->g.n, sizeof(bool));
	nd = (uint32_t)fx->c.devices.n;
	/* actions: all devices dp, the first half, the second half with
	 * tp 2, device 0 alone, and the global action */
	for (uint32_t i = 0; i < nd && i < 256; i++) {
		fx->devs[0][i] = i;
		fx->devs[1][i] = i;
		fx->devs[2][i] = nd / 2 + i;
	}
	fx->acts[0] = (struct tp_prior_action){
		.devices = fx->devs[0], .n_devices = nd, .dp = nd, .tp = 1,
		.keeps_default = true};
	fx->acts[1] = (struct tp_prior_action){
		.devices = fx->devs[1], .n_devices = nd / 2, .dp = nd / 2,
		.tp = 1, .sync = TP_SYNC_PS};
	fx->acts[2] = (struct tp_prior_action){
		.devices = fx->devs[2], .n_devices = nd / 2, .dp = nd / 4,
		.tp = 2, .recompute = TP_RECOMPUTE_FULL};
	fx->acts[3] = (struct tp_prior_action){
		.devices = fx->devs[0], .n_devices = 1, .dp = 1, .tp = 1};
	fx->st.model = &fx->m;
	fx->st.cluster = &fx->c;
	fx->st.n_groups = fx->g.n;
	fx->st.group_first = fx->g.first;
	fx->st.level = 2;
	fx->st.decided = fx->decided;
	fx->st.plan = &fx->plan;
	fx->st.n_actions = 4;
	fx->st.actions = fx->acts;
}

static void fixture_release(struct fixture *fx)
{
	free(fx->decided);
	tp_plan_release(&fx->plan);
	tp_groups_release(&fx->g);
	tp_cluster_release(&fx->c);
	tp_model_release(&fx->m);
}

static void check_range(const float *x, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(isfinite(x[i]) && x[i] >= 0 && x[i] <= 1,
			      "%s feature %zu = %g", what, i, x[i]);
}

START_TEST(test_features_real_graph)
{
	static const char *const specs[] = {"v100-nvlink:1", "1080ti-pcie:2"};
	struct fixture fx;
	struct tp_gnn_features *f;
	struct tp_gnn_input in;
	struct tp_gnn_config cfg;
	struct tp_gnn_widths w;
	struct tp_gnn_net *net;
	struct tp_report rep;
	struct tp_error err;
	struct tp_rng rng;
	uint32_t nd;
	float util_before;

	fixture_init(&fx, specs, 2, "25gbe");
	nd = (uint32_t)fx.c.devices.n;
	ck_assert_uint_eq(nd, 8);
	f = tp_gnn_features_new(&fx.m, &fx.c, fx.g.n, fx.g.first, NULL, &err);
	ck_assert_msg(f != NULL, "%s", err.msg);
	/* one device node per GPU, not per machine */
	ck_assert_uint_eq(tp_gnn_features_device_nodes(f), nd);
	ck_assert(!tp_gnn_features_pooled(f));
	ck_assert(tp_gnn_features_lower_bound(f) > 0);
	ck_assert_int_eq(tp_gnn_features_state(f, &fx.st, &in, &err), TP_OK);
	tp_gnn_feature_widths(&w);
	tp_gnn_config_default(&cfg, w.group, w.device, w.action, w.global,
			      w.edge);
	tp_rng_seed(&rng, 1);
	net = tp_gnn_net_new(&cfg, &rng, &err);
	ck_assert_int_eq(tp_gnn_input_check(net, &in, &err), TP_OK);
	ck_assert_uint_eq(in.n_groups, fx.g.n);
	ck_assert_uint_eq(in.n_actions, 4);
	check_range(in.group_x.data, (size_t)in.n_groups * w.group, "group");
	check_range(in.device_x.data, (size_t)nd * w.device, "device");
	check_range(in.action_x.data, 4 * (size_t)w.action, "action");
	check_range(in.global_x, w.global, "global");
	for (int t = 0; t < TP_GNN_ETYPES; t++)
		check_range(in.edge_x[t].data,
			    (size_t)in.edge_x[t].rows * w.edge[t], "edge");
	/* group-to-group edges carry the tensor bytes (TAG's were 0) */
	ck_assert(in.edges[TP_GNN_E_FLOW].n > 0);
	for (uint32_t k = 0; k < in.edges[TP_GNN_E_FLOW].n; k++)
		ck_assert(tp_tensor_at(&in.edge_x[TP_GNN_E_FLOW], k, 0)[0] > 0);
	/* every edge type is complete where it should be: dense aggregation */
	ck_assert(in.edges[TP_GNN_E_LINK].dense);
	ck_assert(in.edges[TP_GNN_E_PLACE].dense);
	ck_assert(in.edges[TP_GNN_E_SERVE].dense);
	/* no level in the node features (decided, the current group: 0;
	   features.h), so another level of the same plan has the same
	   graph (the body cache's hits); the placement of the dp plan */
	for (uint32_t k = 0; k < in.n_groups; k++) {
		ck_assert(tp_tensor_at(&in.group_x, k, 13)[0] == 0.0f);
		ck_assert(tp_tensor_at(&in.group_x, k, 14)[0] == 0.0f);
	}
	for (uint32_t k = 0; k < in.edges[TP_GNN_E_PLACE].n; k++)
		ck_assert(tp_tensor_at(&in.edge_x[TP_GNN_E_PLACE], k, 0)[3] ==
			  1.0f);
	/* V100 is faster than the 1080 Ti: its peak feature is higher */
	ck_assert(tp_tensor_at(&in.device_x, 0, 0)[0] >
		  tp_tensor_at(&in.device_x, nd - 1, 0)[0]);
	util_before = tp_tensor_at(&in.device_x, 0, 8)[0];
	/* utilisation from a report is a fraction, not 0 (TAG's integer
	 * division) */
	tp_report_init(&rep);
	ck_assert_int_eq(tp_report_alloc(&rep, nd, &err), TP_OK);
	rep.feasible = true;
	rep.iteration_time_s = 2.0;
	for (uint32_t d = 0; d < nd; d++) {
		rep.devices[d].compute_s = 0.6;
		rep.devices[d].communication_s = 0.2;
		rep.devices[d].peak_memory_bytes = 1e9;
	}
	fx.st.report = &rep;
	ck_assert_int_eq(tp_gnn_features_state(f, &fx.st, &in, &err), TP_OK);
	ck_assert(fabsf(tp_tensor_at(&in.device_x, 3, 8)[0] - 0.3f) < 1e-6f);
	ck_assert(fabsf(tp_tensor_at(&in.device_x, 3, 10)[0] - 0.1f) < 1e-6f);
	ck_assert(tp_tensor_at(&in.device_x, 3, 11)[0] == 1.0f);
	ck_assert(in.global_x[15] == 1.0f && in.global_x[17] > 0);
	ck_assert(util_before > 0); /* the estimate without a report */
	/* a bad action is an input error */
	fx.acts[2].dp = 3;
	ck_assert_int_eq(tp_gnn_features_state(f, &fx.st, &in, &err),
			 TP_EINPUT);
	tp_report_release(&rep);
	tp_gnn_net_free(net);
	tp_gnn_features_free(f);
	fixture_release(&fx);
}
END_TEST

/* Action feature 24 estimates the gradient sync with the action's own
 * method: the ring's estimate (feature 15) for the ring; for
 * hierarchical over a fast node (NVLink) and two PCIe nodes joined by
 * 25GbE, less than the ring, whose slowest route is the 25GbE one. */
START_TEST(test_features_sync_method)
{
	static const char *const specs[] = {"v100-nvlink:1", "1080ti-pcie:2"};
	struct fixture fx;
	struct tp_gnn_features *f;
	struct tp_gnn_input in;
	struct tp_error err;
	uint32_t nd;
	float ring15, ring24, hier15, hier24;

	fixture_init(&fx, specs, 2, "25gbe");
	nd = (uint32_t)fx.c.devices.n;
	fx.acts[1] = fx.acts[0];
	fx.acts[1].keeps_default = false;
	fx.acts[0].sync = TP_SYNC_RING;
	fx.acts[1].sync = TP_SYNC_HIERARCHICAL;
	fx.st.n_actions = 2;
	ck_assert(fx.c.devices.v[0].node != fx.c.devices.v[nd - 1].node);
	f = tp_gnn_features_new(&fx.m, &fx.c, fx.g.n, fx.g.first, NULL, &err);
	ck_assert_msg(f != NULL, "%s", err.msg);
	ck_assert_int_eq(tp_gnn_features_state(f, &fx.st, &in, &err), TP_OK);
	ring15 = tp_tensor_at(&in.action_x, 0, 0)[15];
	ring24 = tp_tensor_at(&in.action_x, 0, 0)[24];
	hier15 = tp_tensor_at(&in.action_x, 1, 0)[15];
	hier24 = tp_tensor_at(&in.action_x, 1, 0)[24];
	ck_assert(ring15 > 0);
	ck_assert(ring24 == ring15);
	ck_assert(hier15 == ring15);
	ck_assert_msg(hier24 > 0 && hier24 < ring24, "hierarchical %g, ring %g",
		      hier24, ring24);
	tp_gnn_features_free(f);
	fixture_release(&fx);
}
END_TEST

/* The route figures memoised per device list (features.c set_memo) give
 * the features computed afresh: the hierarchical sync of one device
 * list at tp 1 and tp 2 (other replicas, other runs per node), and the
 * same list asked again, each row equal to the row of a features object
 * that saw only that action.  Fails with the memo keyed by the list
 * alone (tp 2 would take tp 1's runs). */
START_TEST(test_features_route_memo)
{
	static const char *const specs[] = {"v100-nvlink:1", "1080ti-pcie:2"};
	struct fixture fx;
	struct tp_gnn_features *f;
	struct tp_gnn_input in;
	struct tp_error err;
	struct tp_prior_action acts[3];
	float alone[3][TP_GNN_F_ACTION];
	uint32_t nd;

	fixture_init(&fx, specs, 2, "25gbe");
	nd = (uint32_t)fx.c.devices.n;
	acts[0] = fx.acts[0];
	acts[0].sync = TP_SYNC_HIERARCHICAL;
	acts[1] = acts[0];
	acts[1].keeps_default = false;
	acts[1].tp = 2;
	acts[1].dp = nd / 2;
	acts[2] = acts[0];
	acts[2].recompute = TP_RECOMPUTE_FULL;
	for (int k = 0; k < 3; k++) {
		f = tp_gnn_features_new(&fx.m, &fx.c, fx.g.n, fx.g.first, NULL,
					&err);
		ck_assert_msg(f != NULL, "%s", err.msg);
		fx.st.actions = acts + k;
		fx.st.n_actions = 1;
		ck_assert_int_eq(tp_gnn_features_state(f, &fx.st, &in, &err),
				 TP_OK);
		memcpy(alone[k], tp_tensor_at(&in.action_x, 0, 0),
		       sizeof(alone[k]));
		tp_gnn_features_free(f);
	}
	ck_assert(alone[0][TP_GNN_ACTION_SYNC_OWN] !=
		  alone[1][TP_GNN_ACTION_SYNC_OWN]);
	f = tp_gnn_features_new(&fx.m, &fx.c, fx.g.n, fx.g.first, NULL, &err);
	ck_assert_msg(f != NULL, "%s", err.msg);
	fx.st.actions = acts;
	fx.st.n_actions = 3;
	for (int round = 0; round < 2; round++) {
		ck_assert_int_eq(tp_gnn_features_state(f, &fx.st, &in, &err),
				 TP_OK);
		for (uint32_t k = 0; k < 3; k++)
			ck_assert_msg(memcmp(tp_tensor_at(&in.action_x, k, 0),
					     alone[k], sizeof(alone[k])) == 0,
				      "action %u, round %d", k, round);
	}
	tp_gnn_features_free(f);
	fixture_release(&fx);
}
END_TEST

/* The expert- and context-parallel slots (appended to the action and
 * global layouts): a global action carries its own ep, cp and etp, a
 * group action the state's; the global node the model's experts and
 * sequence and the state's ep, cp and etp. */
START_TEST(test_features_ep_cp)
{
	static const char *const specs[] = {"dgx-a100:1"};
	struct fixture fx;
	struct tp_gnn_features *f;
	struct tp_gnn_input in;
	struct tp_error err;

	fixture_init(&fx, specs, 1, NULL);
	fx.acts[4] = (struct tp_prior_action){.global = true,
					      .micro_batches = 1,
					      .schedule = TP_SCHEDULE_1F1B,
					      .ep = 8,
					      .cp = 4,
					      .etp = 1};
	fx.st.n_actions = 5;
	for (size_t g = 0; g < fx.plan.groups.n; g++)
		fx.plan.groups.v[g].cp = 2;
	fx.plan.groups.v[0].ep = 4;
	f = tp_gnn_features_new(&fx.m, &fx.c, fx.g.n, fx.g.first, NULL, &err);
	ck_assert_msg(f != NULL, "%s", err.msg);
	ck_assert_int_eq(tp_gnn_features_state(f, &fx.st, &in, &err), TP_OK);
	ck_assert(tp_tensor_at(&in.action_x, 4, 0)[TP_GNN_ACTION_EP] ==
		  3.0f / 7);
	ck_assert(tp_tensor_at(&in.action_x, 4, 0)[TP_GNN_ACTION_CP] ==
		  2.0f / 6);
	ck_assert(tp_tensor_at(&in.action_x, 0, 0)[TP_GNN_ACTION_EP] ==
		  2.0f / 7);
	ck_assert(tp_tensor_at(&in.action_x, 0, 0)[TP_GNN_ACTION_CP] ==
		  1.0f / 6);
	ck_assert(in.global_x[TP_GNN_GLOBAL_EXPERTS] == 0);
	ck_assert(in.global_x[TP_GNN_GLOBAL_SEQ] == 7.0f / 17);
	ck_assert(in.global_x[TP_GNN_GLOBAL_EP] == 2.0f / 7);
	ck_assert(in.global_x[TP_GNN_GLOBAL_CP] == 1.0f / 6);
	/* etp: the global action's own (1), the group actions' and the
	   global node's the state's (0: no group runs etp 1) */
	ck_assert(tp_tensor_at(&in.action_x, 4, 0)[TP_GNN_ACTION_ETP] == 1);
	ck_assert(tp_tensor_at(&in.action_x, 0, 0)[TP_GNN_ACTION_ETP] == 0);
	ck_assert(in.global_x[TP_GNN_GLOBAL_ETP] == 0);
	tp_gnn_features_free(f);
	/* a state whose group 0 runs etp 1: the group actions and the
	   global node say so */
	fx.plan.groups.v[0].etp = 1;
	f = tp_gnn_features_new(&fx.m, &fx.c, fx.g.n, fx.g.first, NULL, &err);
	ck_assert_msg(f != NULL, "%s", err.msg);
	ck_assert_int_eq(tp_gnn_features_state(f, &fx.st, &in, &err), TP_OK);
	ck_assert(tp_tensor_at(&in.action_x, 0, 0)[TP_GNN_ACTION_ETP] == 1);
	ck_assert(in.global_x[TP_GNN_GLOBAL_ETP] == 1);
	tp_gnn_features_free(f);
	fixture_release(&fx);
}
END_TEST

/* The schedule and shape slots (appended after etp): a zb-h1 action
 * differs from the 1f1b one only in TP_GNN_ACTION_ZB_H1 (the globals
 * block counts zb-h1 as 1f1b), interleaving by 2 from by 4 only in
 * _INTERLEAVE, sequence parallelism and even shares on from off only in
 * _SP and _EVEN; a group action that decides the rest of the model
 * from the same decision for its group alone only in _REST; group
 * actions carry the state's schedule, interleaving and sequence
 * parallelism. */
static void expect_only_slot(const struct tp_gnn_input *in, uint32_t a,
			     uint32_t b, uint32_t slot, float va, float vb)
{
	const float *x = tp_tensor_at(&in->action_x, a, 0);
	const float *y = tp_tensor_at(&in->action_x, b, 0);

	for (uint32_t j = 0; j < TP_GNN_F_ACTION; j++)
		if (j != slot)
			ck_assert_msg(x[j] == y[j],
				      "actions %u and %u differ in slot %u "
				      "(%g, %g), expected only %u",
				      a, b, j, x[j], y[j], slot);
	ck_assert_msg(x[slot] == va && y[slot] == vb,
		      "slot %u: %g and %g, expected %g and %g", slot,
		      x[slot], y[slot], va, vb);
}

START_TEST(test_features_schedule_shape)
{
	static const char *const specs[] = {"dgx-a100:1"};
	struct fixture fx;
	struct tp_gnn_features *f;
	struct tp_gnn_input in;
	struct tp_error err;
	struct tp_prior_action acts[10];

	fixture_init(&fx, specs, 1, NULL);
	for (int k = 0; k < 8; k++)
		acts[k] = (struct tp_prior_action){
			.global = true, .micro_batches = 4,
			.schedule = TP_SCHEDULE_1F1B};
	acts[1].schedule = TP_SCHEDULE_ZB_H1;
	acts[2].schedule = acts[3].schedule = TP_SCHEDULE_INTERLEAVED;
	acts[2].virtual_stages = 2;
	acts[3].virtual_stages = 4;
	acts[4].sp = true;
	acts[5].even = true;
	acts[8] = fx.acts[2];
	acts[9] = fx.acts[2];
	acts[9].applies_to_rest = true;
	fx.st.actions = acts;
	fx.st.n_actions = 10;
	f = tp_gnn_features_new(&fx.m, &fx.c, fx.g.n, fx.g.first, NULL, &err);
	ck_assert_msg(f != NULL, "%s", err.msg);
	ck_assert_int_eq(tp_gnn_features_state(f, &fx.st, &in, &err), TP_OK);
	expect_only_slot(&in, 0, 1, TP_GNN_ACTION_ZB_H1, 0, 1);
	expect_only_slot(&in, 2, 3, TP_GNN_ACTION_INTERLEAVE, 0.25f, 0.5f);
	expect_only_slot(&in, 0, 4, TP_GNN_ACTION_SP, 0, 1);
	expect_only_slot(&in, 0, 5, TP_GNN_ACTION_EVEN, 0, 1);
	expect_only_slot(&in, 8, 9, TP_GNN_ACTION_REST, 0, 1);
	/* the state (tp_strategy_default: 1f1b, no interleaving, no sp) */
	ck_assert(tp_tensor_at(&in.action_x, 8, 0)[TP_GNN_ACTION_ZB_H1] == 0);
	ck_assert(tp_tensor_at(&in.action_x, 8, 0)[TP_GNN_ACTION_SP] == 0);
	/* a state under zb-h1 with sequence parallelism: the group actions
	   say so */
	fx.plan.schedule = TP_SCHEDULE_ZB_H1;
	fx.plan.groups.v[0].sp = true;
	ck_assert_int_eq(tp_gnn_features_state(f, &fx.st, &in, &err), TP_OK);
	ck_assert(tp_tensor_at(&in.action_x, 8, 0)[TP_GNN_ACTION_ZB_H1] == 1);
	ck_assert(tp_tensor_at(&in.action_x, 8, 0)[TP_GNN_ACTION_SP] == 1);
	ck_assert(tp_tensor_at(&in.action_x, 8, 0)[TP_GNN_ACTION_EVEN] == 0);
	/* a global action's are its own */
	ck_assert(tp_tensor_at(&in.action_x, 0, 0)[TP_GNN_ACTION_ZB_H1] == 0);
	fx.plan.schedule = TP_SCHEDULE_INTERLEAVED;
	fx.plan.virtual_stages = 2;
	ck_assert_int_eq(tp_gnn_features_state(f, &fx.st, &in, &err), TP_OK);
	ck_assert(tp_tensor_at(&in.action_x, 8, 0)
			  [TP_GNN_ACTION_INTERLEAVE] == 0.25f);
	tp_gnn_features_free(f);
	fixture_release(&fx);
}
END_TEST

/* The mixed tensor-parallel slots (appended after ep and cp): a group
 * action that makes its group mixed carries its own degree ratio and
 * share, a global action and the global node the state's mixed groups:
 * here one group of every op on 8 devices as replicas of tp 1, 1, 2, 4
 * (log2(4 / 1) / 3, 6 of 8 devices above tp 1). */
START_TEST(test_features_mixed)
{
	static const char *const specs[] = {"dgx-a100:1"};
	static const uint32_t rtp[] = {1, 1, 2, 4};
	struct tp_plan_replicas rep = {4, rtp};
	struct fixture fx;
	struct tp_gnn_features *f;
	struct tp_gnn_input in;
	struct tp_error err;
	uint32_t ops[4096], n_ops;

	fixture_init(&fx, specs, 1, NULL);
	n_ops = (uint32_t)fx.m.ops.n;
	ck_assert(n_ops <= 4096);
	for (uint32_t o = 0; o < n_ops; o++)
		ops[o] = o;
	tp_plan_clear(&fx.plan);
	fx.plan.global_batch = fx.m.global_batch;
	fx.plan.micro_batches = 1;
	ck_assert_msg(tp_plan_add_group_mixed(&fx.plan, ops, n_ops,
					      fx.devs[0], 8, &rep, NULL,
					      &err) == TP_OK,
		      "%s", err.msg);
	ck_assert(fx.plan.groups.v[0].mixed);
	fx.acts[1].mixed_tp = 2;
	fx.acts[1].mixed_devices = 2;
	fx.acts[4] = (struct tp_prior_action){.global = true,
					      .micro_batches = 1,
					      .schedule = TP_SCHEDULE_1F1B};
	fx.st.n_actions = 5;
	f = tp_gnn_features_new(&fx.m, &fx.c, fx.g.n, fx.g.first, NULL, &err);
	ck_assert_msg(f != NULL, "%s", err.msg);
	ck_assert_int_eq(tp_gnn_features_state(f, &fx.st, &in, &err), TP_OK);
	ck_assert(in.global_x[TP_GNN_GLOBAL_MIXED_TP] == 2.0f / 3);
	ck_assert(in.global_x[TP_GNN_GLOBAL_MIXED_SHARE] == 6.0f / 8);
	ck_assert(tp_tensor_at(&in.action_x, 4, 0)[TP_GNN_ACTION_MIXED_TP] ==
		  2.0f / 3);
	ck_assert(tp_tensor_at(&in.action_x, 4, 0)
			  [TP_GNN_ACTION_MIXED_SHARE] == 6.0f / 8);
	/* 4 devices, 2 of them at tp 2 */
	ck_assert(tp_tensor_at(&in.action_x, 1, 0)[TP_GNN_ACTION_MIXED_TP] ==
		  1.0f / 3);
	ck_assert(tp_tensor_at(&in.action_x, 1, 0)
			  [TP_GNN_ACTION_MIXED_SHARE] == 0.5f);
	/* a plain action has none */
	ck_assert(tp_tensor_at(&in.action_x, 0, 0)[TP_GNN_ACTION_MIXED_TP] ==
		  0);
	/* a mixed degree at or below tp is refused */
	fx.acts[1].mixed_tp = 1;
	fx.acts[1].mixed_devices = 2;
	ck_assert_int_eq(tp_gnn_features_state(f, &fx.st, &in, &err), TP_OK);
	fx.acts[2].mixed_tp = 2;
	ck_assert_int_eq(tp_gnn_features_state(f, &fx.st, &in, &err),
			 TP_EINPUT);
	ck_assert_msg(strstr(err.msg, "mixed tp"), "%s", err.msg);
	tp_gnn_features_free(f);
	fixture_release(&fx);
}
END_TEST

START_TEST(test_features_pooling)
{
	static const char *const specs[] = {"dgx-a100:16"};
	struct fixture fx;
	struct tp_gnn_features *f;
	struct tp_gnn_input in;
	struct tp_error err;
	float wsum = 0;

	fixture_init(&fx, specs, 1, NULL);
	ck_assert_uint_eq(fx.c.devices.n, 128);
	f = tp_gnn_features_new(&fx.m, &fx.c, fx.g.n, fx.g.first, NULL, &err);
	ck_assert_msg(f != NULL, "%s", err.msg);
	/* 16 identical nodes of 8 GPUs: one class per GPU position */
	ck_assert(tp_gnn_features_pooled(f));
	ck_assert_uint_eq(tp_gnn_features_device_nodes(f), 8);
	ck_assert_int_eq(tp_gnn_features_state(f, &fx.st, &in, &err), TP_OK);
	ck_assert_uint_eq(in.n_devices, 8);
	/* the all-devices action weighs every class by its 16 devices */
	for (uint32_t i = in.actions.first[0]; i < in.actions.first[1]; i++)
		wsum += in.actions.weight[i];
	ck_assert(wsum == 128.0f);
	/* device 0 alone: one class, weight 1 */
	ck_assert_uint_eq(in.actions.first[4] - in.actions.first[3], 1);
	tp_gnn_features_free(f);
	fixture_release(&fx);
}
END_TEST

START_TEST(test_provider_priors)
{
	static const char *const specs[] = {"v100-nvlink:1", "1080ti-pcie:2"};
	struct fixture fx;
	struct tp_gnn_config cfg;
	struct tp_gnn_widths w;
	struct tp_gnn_net *net;
	struct tp_gnn_prior *gp;
	struct tp_prior_provider pp;
	struct tp_error err;
	struct tp_rng rng;
	void *scr;
	float pri[8];
	double sum = 0;
	char path[512];

	fixture_init(&fx, specs, 2, "25gbe");
	tp_gnn_feature_widths(&w);
	tp_gnn_config_default(&cfg, w.group, w.device, w.action, w.global,
			      w.edge);
	tp_rng_seed(&rng, 4);
	net = tp_gnn_net_new(&cfg, &rng, &err);
	snprintf(path, sizeof(path), "%s/p.weights", tp_test_tmpdir());
	ck_assert_int_eq(tp_gnn_weights_save(net, path, &err), TP_OK);
	tp_gnn_net_free(net);
	ck_assert_msg(tp_gnn_prior_load_default(path, &pp, &gp, &err) == TP_OK,
		      "%s", err.msg);
	ck_assert_str_eq(pp.name, "gnn");
	ck_assert_str_eq(tp_gnn_prior_source(gp), path);
	scr = pp.scratch_new(pp.ctx);
	ck_assert_ptr_nonnull(scr);
	ck_assert_int_eq(pp.evaluate(pp.ctx, scr, &fx.st, pri, &err),
			 TP_OK);
	for (int k = 0; k < 4; k++) {
		ck_assert(pri[k] > 0);
		sum += pri[k];
	}
	ck_assert(fabs(sum - 1) < 1e-5);
	/* gains when asked: relative to the action keeping the state (0) */
	{
		float gains[4] = {NAN, NAN, NAN, NAN};
		fx.st.gains = gains;
		ck_assert_int_eq(pp.evaluate(pp.ctx, scr, &fx.st, pri, &err),
				 TP_OK);
		fx.st.gains = NULL;
		ck_assert(gains[0] == 0.0f); /* acts[0] keeps the default */
		for (int k = 1; k < 4; k++)
			ck_assert(isfinite(gains[k]) &&
				  fabsf(gains[k]) < 1.0f);
	}
	/* the globals level */
	fx.st.level = 0;
	fx.acts[4] = (struct tp_prior_action){.global = true,
					      .micro_batches = 4,
					      .schedule = TP_SCHEDULE_1F1B};
	fx.acts[5] = (struct tp_prior_action){.global = true,
					      .micro_batches = 8,
					      .schedule = TP_SCHEDULE_GPIPE,
					      .zero = 1};
	fx.st.actions = fx.acts + 4;
	fx.st.n_actions = 2;
	ck_assert_int_eq(pp.evaluate(pp.ctx, scr, &fx.st, pri, &err),
			 TP_OK);
	ck_assert(fabsf(pri[0] + pri[1] - 1) < 1e-5f);
	pp.scratch_free(pp.ctx, scr);
	tp_gnn_prior_free(gp);
	/* a missing file is an I/O error, a damaged one an input error */
	snprintf(path, sizeof(path), "%s/missing.weights", tp_test_tmpdir());
	ck_assert_int_eq(tp_gnn_prior_load_default(path, &pp, &gp, &err),
			 TP_EIO);
	ck_assert_ptr_null(gp);
	snprintf(path, sizeof(path), "%s/bad.weights", tp_test_tmpdir());
	ck_assert_int_eq(tp_test_write(path, "TPGNNW\r\nxx", 10), 0);
	ck_assert_int_eq(tp_gnn_prior_load_default(path, &pp, &gp, &err),
			 TP_EINPUT);
	ck_assert_ptr_null(gp);
	ck_assert(strstr(err.file, "bad.weights") != NULL);
	/* gain targets and their inverse */
	{
		float g, gw;
		tp_gnn_gain_target(true, 2.0, true, true, 1.9, &g, &gw);
		ck_assert(gw == 1.0f && g > 0);
		ck_assert(fabs(tp_gnn_gain_log_ratio(g) - log(2.0 / 1.9)) <
			  1e-5);
		tp_gnn_gain_target(true, 2.0, true, false, INFINITY, &g, &gw);
		ck_assert(gw == 1.0f && g == -1.0f);
		tp_gnn_gain_target(false, 2.0, true, true, 3.0, &g, &gw);
		ck_assert(gw == 1.0f && g == 1.0f);
		tp_gnn_gain_target(false, 2.0, true, false, 3.0, &g, &gw);
		ck_assert(gw == 0.0f); /* neither fits: unknown */
		tp_gnn_gain_target(true, 2.0, false, true, 1.0, &g, &gw);
		ck_assert(gw == 0.0f); /* not scored */
		ck_assert(tp_gnn_gain_log_ratio(-1.0f) < -0.4);
		ck_assert(isfinite(tp_gnn_gain_log_ratio(-1.0f)));
	}
	fixture_release(&fx);
}
END_TEST

/* One evaluation of fx's state by the provider of the weights list
 * `files`: priors and gains of its 4 actions. */
static void ensemble_eval(struct fixture *fx, const char *files, float *pri,
			  float *gains, uint32_t *members)
{
	struct tp_gnn_prior *gp;
	struct tp_prior_provider pp;
	struct tp_error err;
	void *scr;

	ck_assert_msg(tp_gnn_prior_load_default(files, &pp, &gp, &err) ==
			      TP_OK,
		      "%s", err.msg);
	ck_assert_str_eq(tp_gnn_prior_source(gp), files);
	*members = tp_gnn_prior_members(gp);
	scr = pp.scratch_new(pp.ctx);
	ck_assert_ptr_nonnull(scr);
	fx->st.gains = gains;
	ck_assert_int_eq(pp.evaluate(pp.ctx, scr, &fx->st, pri, &err),
			 TP_OK);
	fx->st.gains = NULL;
	pp.scratch_free(pp.ctx, scr);
	tp_gnn_prior_free(gp);
}

/* --weights A,B: an ensemble whose priors and gains are the members'
 * means; a bad member or a malformed list loads nothing. */
/* The provider covers a cluster of at most corpus_gpus devices (0: not
 * recorded, any cluster); an ensemble only what every member covers;
 * why names both sizes with thousands separators (issue 27). */
START_TEST(test_provider_covers)
{
	static const char *const specs[] = {"v100-nvlink:1", "1080ti-pcie:2"};
	struct fixture fx;
	struct tp_gnn_config cfg;
	struct tp_gnn_prior *gp;
	struct tp_prior_provider pp;
	char why[160], want[160];
	uint32_t n;

	fixture_init(&fx, specs, 2, "25gbe");
	n = (uint32_t)fx.c.devices.n;
	ck_assert_uint_gt(n, 2);
	/* recorded, as large as the cluster: covered */
	gp = tp_gnn_prior_new(small_net(5, &cfg), "a");
	ck_assert_ptr_nonnull(gp);
	tp_gnn_prior_provider(gp, &pp);
	ck_assert(pp.covers != NULL);
	((struct tp_gnn_net *)tp_gnn_prior_net(gp))->meta.corpus_gpus = n;
	ck_assert(pp.covers(pp.ctx, &fx.c, why, sizeof(why)));
	/* not recorded: covered */
	((struct tp_gnn_net *)tp_gnn_prior_net(gp))->meta.corpus_gpus = 0;
	ck_assert(pp.covers(pp.ctx, &fx.c, why, sizeof(why)));
	ck_assert_uint_eq(tp_gnn_prior_corpus_gpus(gp), 0);
	/* smaller: not, saying why */
	((struct tp_gnn_net *)tp_gnn_prior_net(gp))->meta.corpus_gpus = n - 1;
	ck_assert(!pp.covers(pp.ctx, &fx.c, why, sizeof(why)));
	snprintf(want, sizeof(want),
		 "the GNN was trained on clusters of up to %u GPUs, this one "
		 "has %u",
		 n - 1, n);
	ck_assert_str_eq(why, want);
	ck_assert(!pp.covers(pp.ctx, &fx.c, NULL, 0));
	/* an ensemble with a member of unknown corpus: the other rules */
	ck_assert(tp_gnn_prior_add(gp, small_net(6, &cfg), "b"));
	ck_assert(!pp.covers(pp.ctx, &fx.c, why, sizeof(why)));
	ck_assert_uint_eq(tp_gnn_prior_corpus_gpus(gp), n - 1);
	((struct tp_gnn_net *)tp_gnn_prior_member(gp, 1))->meta.corpus_gpus =
		4096;
	ck_assert(!pp.covers(pp.ctx, &fx.c, why, sizeof(why)));
	((struct tp_gnn_net *)tp_gnn_prior_net(gp))->meta.corpus_gpus = 1024;
	ck_assert(pp.covers(pp.ctx, &fx.c, why, sizeof(why)));
	/* thousands separators */
	fx.c.devices.n = 1234567;
	ck_assert(!pp.covers(pp.ctx, &fx.c, why, sizeof(why)));
	ck_assert_str_eq(why, "the GNN was trained on clusters of up to 1,024 "
			      "GPUs, this one has 1,234,567");
	fx.c.devices.n = n;
	tp_gnn_prior_free(gp);
	fixture_release(&fx);
}
END_TEST

START_TEST(test_provider_ensemble)
{
	static const char *const specs[] = {"v100-nvlink:1", "1080ti-pcie:2"};
	struct fixture fx;
	struct tp_gnn_config cfg;
	struct tp_gnn_widths w;
	struct tp_gnn_prior *gp;
	struct tp_prior_provider pp;
	struct tp_error err;
	char a[512], b[512], ab[1100], bad[512], list[2700];
	float pa[4], pb[4], pab[4], ga[4], gb[4], gab[4];
	uint32_t n;
	double differ = 0;

	fixture_init(&fx, specs, 2, "25gbe");
	tp_gnn_feature_widths(&w);
	tp_gnn_config_default(&cfg, w.group, w.device, w.action, w.global,
			      w.edge);
	for (int i = 0; i < 2; i++) {
		struct tp_rng rng;
		struct tp_gnn_net *net;
		tp_rng_seed(&rng, 11 + (uint64_t)i);
		net = tp_gnn_net_new(&cfg, &rng, &err);
		ck_assert_ptr_nonnull(net);
		snprintf(i ? b : a, sizeof(a), "%s/e%d.weights",
			 tp_test_tmpdir(), i);
		ck_assert_int_eq(tp_gnn_weights_save(net, i ? b : a, &err),
				 TP_OK);
		tp_gnn_net_free(net);
	}
	ensemble_eval(&fx, a, pa, ga, &n);
	ck_assert_uint_eq(n, 1);
	ensemble_eval(&fx, b, pb, gb, &n);
	snprintf(ab, sizeof(ab), "%s,%s", a, b);
	ensemble_eval(&fx, ab, pab, gab, &n);
	ck_assert_uint_eq(n, 2);
	for (int k = 0; k < 4; k++) {
		differ += fabs(pa[k] - pb[k]) + fabs(ga[k] - gb[k]);
		ck_assert_msg(fabsf(pab[k] - 0.5f * (pa[k] + pb[k])) < 1e-6f,
			      "prior %d: %g, members %g %g", k, pab[k], pa[k],
			      pb[k]);
		ck_assert_msg(fabsf(gab[k] - 0.5f * (ga[k] + gb[k])) < 1e-5f,
			      "gain %d: %g, members %g %g", k, gab[k], ga[k],
			      gb[k]);
	}
	ck_assert(differ > 1e-3); /* the members disagree */
	ck_assert(gab[0] == 0.0f);
	/* a damaged member: an input error naming it, nothing loaded */
	snprintf(bad, sizeof(bad), "%s/ebad.weights", tp_test_tmpdir());
	ck_assert_int_eq(tp_test_write(bad, "TPGNNW\r\nxx", 10), 0);
	snprintf(list, sizeof(list), "%s,%s", a, bad);
	gp = (struct tp_gnn_prior *)&err; /* must be reset */
	ck_assert_int_eq(tp_gnn_prior_load_default(list, &pp, &gp, &err),
			 TP_EINPUT);
	ck_assert_ptr_null(gp);
	ck_assert(strstr(err.file, "ebad.weights") != NULL);
	/* an empty name, too many members */
	snprintf(list, sizeof(list), "%s,", a);
	ck_assert_int_eq(tp_gnn_prior_load_default(list, &pp, &gp, &err),
			 TP_EINPUT);
	ck_assert_ptr_null(gp);
	ck_assert(strstr(err.msg, "empty") != NULL);
	snprintf(list, sizeof(list), "%s,%s,%s,%s,%s", a, b, a, b, a);
	ck_assert_int_eq(tp_gnn_prior_load_default(list, &pp, &gp, &err),
			 TP_EINPUT);
	ck_assert_ptr_null(gp);
	ck_assert(strstr(err.msg, "at most 4") != NULL);
	/* the shipped default: one network, tagplan.weights in the data
	   directory */
	{
		char dir[600], one[700], *old = getenv("TAGPLAN_DATA");
		char keep[4096] = "";
		struct tp_gnn_net *net;
		struct tp_rng rng;
		if (old)
			snprintf(keep, sizeof(keep), "%s", old);
		snprintf(dir, sizeof(dir), "%s/ens_data", tp_test_tmpdir());
		ck_assert(mkdir(dir, 0755) == 0 || errno == EEXIST);
		snprintf(one, sizeof(one), "%s/tagplan.weights", dir);
		tp_rng_seed(&rng, 11);
		net = tp_gnn_net_new(&cfg, &rng, &err);
		ck_assert_int_eq(tp_gnn_weights_save(net, one, &err), TP_OK);
		tp_gnn_net_free(net);
		setenv("TAGPLAN_DATA", dir, 1);
		ck_assert_int_eq(tp_gnn_prior_load_default(NULL, &pp, &gp,
							   &err),
				 TP_OK);
		ck_assert_uint_eq(tp_gnn_prior_members(gp), 1);
		ck_assert(strstr(tp_gnn_prior_source(gp), "tagplan.weights") !=
			  NULL);
		tp_gnn_prior_free(gp);
		if (old)
			setenv("TAGPLAN_DATA", keep, 1);
		else
			unsetenv("TAGPLAN_DATA");
	}
	fixture_release(&fx);
}
END_TEST

/* ------------------------------------------------------------------ */
/* training */

START_TEST(test_corpus)
{
	struct tp_rng a, b;
	struct tp_error err;
	char d1[160], d2[160];

	tp_rng_seed(&a, 5);
	for (int f = 0; f < TP_TRAIN_FAMILY_COUNT; f++)
		for (int k = 0; k < 3; k++) {
			struct tp_model m;
			tp_model_init(&m);
			ck_assert_msg(tp_train_random_model(
					      &a, (enum tp_train_family)f, 24, &m,
					      &err) == TP_OK,
				      "%s: %s", tp_train_family_name(f),
				      err.msg);
			ck_assert(m.finalized && m.ops.n >= 3);
			ck_assert(m.global_batch >= 24);
			ck_assert(m.total_flop > 0);
			tp_model_release(&m);
		}
	for (int k = 0; k < 20; k++) {
		struct tp_cluster c1, c2;
		tp_rng_seed(&a, 100 + (uint64_t)k);
		tp_rng_seed(&b, 100 + (uint64_t)k);
		tp_cluster_init(&c1);
		tp_cluster_init(&c2);
		ck_assert_msg(tp_train_random_cluster(&a, 16, &c1, d1,
						      sizeof(d1), &err) == TP_OK,
			      "%s", err.msg);
		ck_assert_int_eq(tp_train_random_cluster(&b, 16, &c2, d2,
							 sizeof(d2), &err),
				 TP_OK);
		ck_assert_str_eq(d1, d2); /* deterministic */
		ck_assert(c1.devices.n >= 2 && c1.devices.n <= 16);
		ck_assert(strstr(d1, "--net ") != NULL);
		tp_cluster_release(&c1);
		tp_cluster_release(&c2);
	}
}
END_TEST

/* Does cluster c have a device of a held-out node preset's type? */
static bool has_held_type(const struct tp_cluster *c)
{
	for (size_t i = 0; i < c->devices.n; i++) {
		const char *t = c->types.v[c->devices.v[i].type].name;
		if (strstr(t, "H200") || strstr(t, "B200"))
			return true;
	}
	return false;
}

/* The corpus's splits (train.h tp_train_draw): HF models of realistic
 * width, the held-out family (TP_TRAIN_HELD_FAMILY) only when asked
 * for, the held-out node presets (TP_TRAIN_HELD_PRESETS) only when asked
 * for, large clusters above 64 GPUs (pooled device classes) and within
 * their cap. */
START_TEST(test_corpus_splits)
{
	struct tp_rng a;
	struct tp_error err;
	char d[160];
	uint32_t large_seen = 0;

	tp_rng_seed(&a, 11);
	for (int k = 0; k < 24; k++) {
		struct tp_train_draw dr = {TP_TRAIN_HF, 16, 32, 0, k % 2 == 1,
					   false, false, false};
		struct tp_model m;
		tp_model_init(&m);
		ck_assert_msg(tp_train_draw_model(&a, &dr, &m, &err) == TP_OK,
			      "%s", err.msg);
		ck_assert(m.finalized && m.global_batch >= 16);
		ck_assert_int_ge(m.arch.hidden, 768);
		if (dr.held_family)
			ck_assert_str_eq(m.arch.family, TP_TRAIN_HELD_FAMILY);
		else
			ck_assert_str_ne(m.arch.family, TP_TRAIN_HELD_FAMILY);
		tp_model_release(&m);
	}
	for (int k = 0; k < 24; k++) {
		struct tp_train_draw dr = {TP_TRAIN_CNN, 1, 32,
					   k % 3 == 2 ? 256u : 0u, k % 2 == 1,
					   k % 2 == 1, false, false};
		struct tp_cluster c;
		tp_cluster_init(&c);
		ck_assert_msg(tp_train_draw_cluster(&a, &dr, &c, d, sizeof(d),
						    &err) == TP_OK,
			      "%s", err.msg);
		ck_assert_msg(has_held_type(&c) == dr.held_cluster, "%s", d);
		if (dr.large) {
			ck_assert_msg(c.devices.n <= 256, "%s", d);
			large_seen += c.devices.n > 64;
		} else {
			ck_assert_msg(c.devices.n <= 32, "%s", d);
		}
		tp_cluster_release(&c);
	}
	ck_assert_uint_ge(large_seen, 4);
}
END_TEST

/* A huge game (train.h TP_TRAIN_HUGE_ABOVE; --large-devices 2048): its
 * cluster reaches past 256 GPUs, to at most 2,048, on 33 or more nodes,
 * pooled into at most 64 device classes; its model is a dense HF
 * architecture of 4-8 layers (t5: 6-10 blocks, encoder and decoder),
 * which keeps its simulations affordable.  At 256 the large games draw
 * from 9 nodes and 8-20 layers, experts allowed, as before. */
START_TEST(test_corpus_huge)
{
	struct tp_rng a;
	struct tp_error err;
	char d[160];
	uint32_t above = 0, pooled = 0, deep256 = 0, small256 = 0;

	for (uint64_t k = 0; k < 24; k++) {
		struct tp_train_draw dr = {TP_TRAIN_HF, 1, 32, 2048, false,
					   false, false, false};
		struct tp_cluster c;
		struct tp_model m;
		struct tp_groups g;
		struct tp_gnn_features *f;
		uint32_t nodes = 0;
		/* as train.c build_game seeds game 0 of seed k + 1 */
		tp_rng_seed(&a, (k + 1) * 1000003u);
		tp_cluster_init(&c);
		tp_model_init(&m);
		memset(&g, 0, sizeof(g));
		ck_assert_msg(tp_train_draw_cluster(&a, &dr, &c, d, sizeof(d),
						    &err) == TP_OK,
			      "%s", err.msg);
		for (const char *p = d; *p; p++)
			if (*p == ':')
				nodes += (uint32_t)atoi(p + 1);
		ck_assert_msg(nodes > TP_TRAIN_HUGE_ABOVE / 8 &&
				  c.devices.n <= 2048,
			      "%s", d);
		above += c.devices.n > TP_TRAIN_HUGE_ABOVE;
		dr.min_batch = 2 * (int64_t)c.devices.n;
		ck_assert_msg(tp_train_draw_model(&a, &dr, &m, &err) == TP_OK,
			      "%s", err.msg);
		ck_assert_msg(m.arch.experts == 0, "%s: %s, %lld experts", d,
			      m.arch.family, (long long)m.arch.experts);
		ck_assert_msg(m.arch.layers >= 4 &&
				  m.arch.layers <=
				      (strcmp(m.arch.family, "t5") ? 8 : 10),
			      "%s: %s of %lld layers", d, m.arch.family,
			      (long long)m.arch.layers);
		ck_assert_int_eq(tp_coarsen(&m, TP_TRAIN_HUGE_GROUPS, &g, &err),
				 TP_OK);
		f = tp_gnn_features_new(&m, &c, g.n, g.first, NULL, &err);
		ck_assert_msg(f != NULL, "%s", err.msg);
		pooled += tp_gnn_features_pooled(f) &&
			  tp_gnn_features_device_nodes(f) <= 64;
		tp_gnn_features_free(f);
		tp_groups_release(&g);
		tp_model_release(&m);
		tp_cluster_release(&c);

		/* the same seed at the cap of 256: a large game as before */
		dr.large = 256;
		dr.min_batch = 1;
		tp_rng_seed(&a, (k + 1) * 1000003u);
		tp_cluster_init(&c);
		tp_model_init(&m);
		ck_assert_int_eq(tp_train_draw_cluster(&a, &dr, &c, d,
						       sizeof(d), &err),
				 TP_OK);
		ck_assert_msg(c.devices.n <= 256, "%s", d);
		small256 += c.devices.n <= TP_TRAIN_HUGE_ABOVE / 2;
		dr.min_batch = 2 * (int64_t)c.devices.n;
		ck_assert_int_eq(tp_train_draw_model(&a, &dr, &m, &err),
				 TP_OK);
		deep256 += m.arch.experts > 0 || m.arch.layers > 10;
		tp_model_release(&m);
		tp_cluster_release(&c);
	}
	/* log-uniform over 33-256 nodes of 4 or 8 GPUs */
	ck_assert_uint_ge(above, 16);
	ck_assert_uint_eq(pooled, 24);
	ck_assert_uint_ge(deep256, 8);
	ck_assert_uint_ge(small256, 8);
}
END_TEST

static void tiny_options(struct tp_train_options *o, const char *out)
{
	tp_train_options_default(o);
	o->games = 4;
	o->epochs = 2;
	o->playouts = 4;
	o->hidden = 8;
	o->max_devices = 8;
	o->heldout = 0.25;
	o->out = out;
	/* every game under none: the zb-h1 and even-share slots stay
	   constant (test_train_run_resume; test_train_runtimes has them) */
	o->runtime_every = 0;
}

/* The most GPUs of a training game of tiny_options' corpus, drawn as
 * train.c build_game draws it (no large games, none held out but every
 * k-th, k = 1 / heldout; a small cluster's draw reads only max_devices
 * and held_cluster, false for the training games). */
static uint32_t tiny_corpus_gpus(const struct tp_train_options *o)
{
	uint32_t most = 0, k = (uint32_t)(1.0 / o->heldout + 0.5);

	ck_assert(o->large_devices == 0);
	for (uint32_t i = 0; i < o->games; i++) {
		struct tp_train_draw d;
		struct tp_cluster c;
		struct tp_rng rng;
		struct tp_error err;
		if (i % k == k - 1)
			continue;
		memset(&d, 0, sizeof(d));
		d.max_devices = o->max_devices;
		tp_rng_seed(&rng, o->seed * 1000003u + i);
		tp_cluster_init(&c);
		ck_assert_int_eq(tp_train_draw_cluster(&rng, &d, &c, NULL, 0,
						       &err),
				 TP_OK);
		if (c.devices.n > most)
			most = (uint32_t)c.devices.n;
		tp_cluster_release(&c);
	}
	return most;
}

static void log_corpus(void *ctx, const char *line)
{
	if (strncmp(line, "corpus:", 7) == 0)
		snprintf(ctx, 512, "%s", line);
}

/* The standardisation std of action slot j and the largest |weight| of
 * its row of policy.W1. */
static void action_slot(const struct tp_gnn_net *net, uint32_t j,
			float *std, float *wmax)
{
	const struct tp_gnn_config *c = &net->cfg;
	uint32_t H = c->hidden, rows = 0, cols = 0;
	size_t off = 0, i;

	*std = net->norm.std[c->group_in + c->device_in + j];
	*wmax = 0;
	for (i = 0; i < tp_gnn_net_tensor_count(net); i++)
		if (strcmp(tp_gnn_net_tensor(net, i, &rows, &cols, &off),
			   "policy.W1") == 0)
			break;
	ck_assert(i < tp_gnn_net_tensor_count(net));
	for (uint32_t k = 0; k < cols; k++)
		*wmax = fmaxf(*wmax,
			      fabsf(net->w[off + (3 * H + j) * cols + k]));
}

/* Self-play under runtimes (train.h runtime_every): with every game in a
 * runtime slot, games 0-3 draw long sequences under megatron-core and
 * game 5 (an HF model, a Llama-style decoder in that block) runs under
 * fsdp2, so that zb-h1 (fsdp2's schedule), even shares (both runtimes)
 * and context parallelism (8K+ tokens) are offered and vary in the
 * corpus: their slots are standardised and their policy rows trained,
 * where under none they are constant and zero (test_train_run_resume). */
START_TEST(test_train_runtimes)
{
	struct tp_train_options o;
	struct tp_train_result *res = calloc(1, sizeof(*res));
	struct tp_error err;
	struct tp_gnn_prior *gp;
	struct tp_prior_provider pp;
	const uint32_t slots[] = {TP_GNN_ACTION_ZB_H1, TP_GNN_ACTION_EVEN,
				  TP_GNN_ACTION_CP};
	char w[512], line[512] = "";

	setenv("TAGPLAN_DATA", tp_data_file(""), 1);
	snprintf(w, sizeof(w), "%s/rt.weights", tp_test_tmpdir());
	tiny_options(&o, w);
	o.games = 6;
	o.epochs = 1;
	o.runtime_every = 1;
	o.log = log_corpus;
	o.log_ctx = line;
	ck_assert_msg(tp_train_run(&o, res, &err) == TP_OK, "%s", err.msg);
	ck_assert_msg(strstr(line, "; 0 under megatron-core") == NULL &&
			      strstr(line, ", 0 under fsdp2") == NULL &&
			      strstr(line, "; 0 of at least") == NULL,
		      "%s", line);
	ck_assert_msg(tp_gnn_prior_load_default(w, &pp, &gp, &err) == TP_OK,
		      "%s", err.msg);
	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
		float sd, wm;
		action_slot(tp_gnn_prior_net(gp), slots[i], &sd, &wm);
		ck_assert_msg(sd != 1.0f && wm > 0,
			      "action slot %u: std %g, row max %g", slots[i],
			      (double)sd, (double)wm);
	}
	tp_gnn_prior_free(gp);
	free(res);
}
END_TEST

START_TEST(test_train_run_resume)
{
	struct tp_train_options o;
	struct tp_train_result *res = calloc(1, sizeof(*res));
	struct tp_error err;
	struct tp_gnn_prior *gp;
	struct tp_prior_provider pp;
	char w1[512], w2[512], w3[512], ck[512];
	char *a, *b;
	size_t la, lb;

	snprintf(w1, sizeof(w1), "%s/a.weights", tp_test_tmpdir());
	snprintf(w2, sizeof(w2), "%s/b.weights", tp_test_tmpdir());
	snprintf(w3, sizeof(w3), "%s/c.weights", tp_test_tmpdir());
	snprintf(ck, sizeof(ck), "%s/run.ckpt", tp_test_tmpdir());
	tiny_options(&o, w1);
	o.checkpoint = ck;
	ck_assert_msg(tp_train_run(&o, res, &err) == TP_OK, "%s", err.msg);
	ck_assert_uint_eq(res->epochs_done, 2);
	ck_assert(res->playouts > 0 && res->simulations > 0);
	ck_assert(res->epoch[1].samples > 0);
	ck_assert(res->epoch[1].heldout_uniform > 0);
	/* the file is a valid weights file for this build */
	ck_assert_msg(tp_gnn_prior_load_default(w1, &pp, &gp, &err) == TP_OK,
		      "%s", err.msg);
	ck_assert_uint_eq(tp_gnn_prior_net(gp)->meta.epochs, 2);
	ck_assert_uint_eq(tp_gnn_prior_net(gp)->cfg.hidden, 8);
	/* the largest cluster of the games it learnt from, recorded and
	   reported (the held-out games aside) */
	ck_assert_uint_gt(tiny_corpus_gpus(&o), 0);
	ck_assert_uint_eq(res->corpus_gpus, tiny_corpus_gpus(&o));
	ck_assert_uint_eq(tp_gnn_prior_net(gp)->meta.corpus_gpus,
			  tiny_corpus_gpus(&o));
	/* the OpenBLAS kernel set this process runs, reported and recorded
	   (openblas_get_corename(): "Haswell", ... by CPU) */
	ck_assert(strlen(tp_tensor_blas_core()) > 0);
	ck_assert_str_eq(res->blas, tp_tensor_blas_core());
	ck_assert_str_eq(tp_gnn_prior_net(gp)->meta.blas,
			 tp_tensor_blas_core());
	/* action features that self-play never varies (zb-h1, even shares:
	   no runtime, uneven shares) meet zero rows of policy.W1, one that
	   varies (keeps the default) trained ones (train.c
	   zero_constant_actions) */
	{
		const struct tp_gnn_net *net = tp_gnn_prior_net(gp);
		uint32_t rows = 0, cols = 0, H = net->cfg.hidden;
		size_t off = 0, i;
		for (i = 0; i < tp_gnn_net_tensor_count(net); i++)
			if (strcmp(tp_gnn_net_tensor(net, i, &rows, &cols,
						     &off),
				   "policy.W1") == 0)
				break;
		ck_assert(i < tp_gnn_net_tensor_count(net));
		ck_assert_uint_eq(rows, 3 * H + TP_GNN_F_ACTION);
		for (uint32_t j = 0; j < cols; j++) {
			const float *w = net->w + off;
			ck_assert_msg(w[(3 * H + TP_GNN_ACTION_ZB_H1) * cols +
					j] == 0,
				      "zb-h1 row, column %u", j);
			ck_assert(w[(3 * H + TP_GNN_ACTION_EVEN) * cols + j] ==
				  0);
		}
		{
			double nz = 0;
			for (uint32_t j = 0; j < cols; j++)
				nz += fabsf(net->w[off + (3 * H +
							  TP_GNN_ACTION_KEEPS) *
								 cols +
						   j]);
			ck_assert(nz > 0);
		}
	}
	tp_gnn_prior_free(gp);
	/* bit-identical weights when run again (the metadata holds the
	 * wall-clock training time, so compare after the header) */
	tiny_options(&o, w2);
	ck_assert_int_eq(tp_train_run(&o, res, &err), TP_OK);
	a = tp_test_read(w1, &la);
	b = tp_test_read(w2, &lb);
	ck_assert(a && b && la == lb);
	ck_assert(memcmp(a + TP_GNN_WEIGHTS_HEADER, b + TP_GNN_WEIGHTS_HEADER,
			 la - TP_GNN_WEIGHTS_HEADER - 4) == 0);
	free(a);
	free(b);
	/* resume for one more epoch */
	tiny_options(&o, w3);
	o.epochs = 3;
	o.resume = ck;
	ck_assert_msg(tp_train_run(&o, res, &err) == TP_OK, "%s", err.msg);
	ck_assert_uint_eq(res->epochs_done, 1);
	ck_assert_uint_eq(res->epoch[0].epoch, 2);
	ck_assert_int_eq(tp_gnn_prior_load_default(w3, &pp, &gp, &err), TP_OK);
	ck_assert_uint_eq(tp_gnn_prior_net(gp)->meta.epochs, 3);
	ck_assert_uint_eq(tp_gnn_prior_net(gp)->meta.corpus_gpus,
			  tiny_corpus_gpus(&o));
	tp_gnn_prior_free(gp);
	/* a damaged checkpoint is refused, naming it */
	ck_assert_int_eq(tp_test_write(ck, "TPGNNCK\n0000000000000000000000000"
					   "000000000000",
				       45),
			 0);
	ck_assert_int_eq(tp_train_run(&o, res, &err), TP_EINPUT);
	ck_assert(strstr(err.file, "run.ckpt") != NULL);
	free(res);
}
END_TEST

/* Distillation (train.h distil_*; src/train/distil.c): every training
 * game of tiny_options' corpus is planned once by the product search,
 * its self-play follows that plan's decision vector, and the policy
 * target of each level whose candidates hold the plan's choice puts
 * distil_weight on it on top of (1 - distil_weight) x the level's own
 * target; the held-out game is never searched.  Off (the default), the
 * run writes the weights it wrote before, whatever the other distil_*
 * options say. */
START_TEST(test_train_distil)
{
	struct tp_train_options o;
	struct tp_train_result *res = calloc(1, sizeof(*res));
	struct tp_error err;
	const struct tp_train_distil *d = &res->distil;
	char w1[512], w2[512], w3[512];
	char *a, *b;
	size_t la, lb;
	uint32_t matched;

	snprintf(w1, sizeof(w1), "%s/d1.weights", tp_test_tmpdir());
	snprintf(w2, sizeof(w2), "%s/d2.weights", tp_test_tmpdir());
	snprintf(w3, sizeof(w3), "%s/d3.weights", tp_test_tmpdir());
	tiny_options(&o, w1);
	o.epochs = 1;
	o.distil_every = 1;
	o.distil_playouts = 200;
	o.distil_weight = 0.8f;
	ck_assert_msg(tp_train_run(&o, res, &err) == TP_OK, "%s", err.msg);
	/* games 0-2; game 3 is held out (heldout 0.25) */
	ck_assert_uint_eq(d->games, 3);
	ck_assert_uint_eq(d->mapped, 3);
	ck_assert(d->search_simulations > 0);
	matched = d->levels[0][TP_TRAIN_DISTIL_MATCHED] +
		  d->levels[1][TP_TRAIN_DISTIL_MATCHED];
	ck_assert_uint_gt(d->levels[1][TP_TRAIN_DISTIL_MATCHED], 0);
	ck_assert_uint_le(d->kept, matched);
	/* the targets lean on the search's choice: 0.8 of it plus 0.2 of
	   what the level's own target gave it */
	ck_assert_msg(fabs(d->target_pi - (0.2 * d->own_pi + 0.8)) < 1e-4,
		      "target %g, own %g", d->target_pi, d->own_pi);
	ck_assert(d->target_pi >= 0.8 - 1e-6 && d->own_pi < 1);
	/* off: nothing searched, nothing counted, the weights of a run
	   that never heard of the other options */
	tiny_options(&o, w2);
	o.epochs = 1;
	ck_assert_int_eq(tp_train_run(&o, res, &err), TP_OK);
	ck_assert_uint_eq(d->games, 0);
	ck_assert_uint_eq(d->levels[1][TP_TRAIN_DISTIL_MATCHED], 0);
	tiny_options(&o, w3);
	o.epochs = 1;
	o.distil_playouts = 7;
	o.distil_weight = 0.3f;
	ck_assert_int_eq(tp_train_run(&o, res, &err), TP_OK);
	a = tp_test_read(w2, &la);
	b = tp_test_read(w3, &lb);
	ck_assert(a && b && la == lb);
	ck_assert(memcmp(a + TP_GNN_WEIGHTS_HEADER, b + TP_GNN_WEIGHTS_HEADER,
			 la - TP_GNN_WEIGHTS_HEADER - 4) == 0);
	free(b);
	/* and on, the samples differ: so do the weights */
	b = tp_test_read(w1, &lb);
	ck_assert(b && la == lb);
	ck_assert(memcmp(a + TP_GNN_WEIGHTS_HEADER, b + TP_GNN_WEIGHTS_HEADER,
			 la - TP_GNN_WEIGHTS_HEADER - 4) != 0);
	free(a);
	free(b);
	free(res);
}
END_TEST

/* tagplan plan with weights trained on clusters of up to 4 GPUs
 * (corpus_gpus 4) on the 16-GPU demo testbed: uniform priors, said on
 * stderr (not under -q) and in the summary's search line, the plan's
 * "gnn" false with "gnn_declined"; --gnn-any-size uses the network
 * (issue 27). */
START_TEST(test_plan_gnn_beyond_corpus)
{
	static const char note[] =
		"uniform priors: the GNN was trained on clusters of up to 4 "
		"GPUs, this one has 16 (--gnn-any-size uses it)";
	struct tp_gnn_config cfg;
	struct tp_gnn_widths w;
	struct tp_gnn_net *net;
	struct tp_error err;
	struct tp_rng rng;
	struct tp_run r;
	char path[512], line[256], plan[512];
	const char *argv1[] = {"tagplan", "plan", "--weights", path,
			       "--playouts", "30", "--threads", "1",
			       "--no-timing", NULL};
	const char *argv2[] = {"tagplan", "plan", "--weights", path,
			       "--playouts", "30", "--threads", "1",
			       "--no-timing", "--gnn-any-size", NULL};
	const char *argv3[] = {"tagplan", "plan", "--weights", path,
			       "--playouts", "30", "--threads", "1",
			       "--no-timing", "-q", NULL};
	const char *argv4[] = {"tagplan", "validate", plan, NULL};

	tp_gnn_feature_widths(&w);
	tp_gnn_config_default(&cfg, w.group, w.device, w.action, w.global,
			      w.edge);
	tp_rng_seed(&rng, 4);
	net = tp_gnn_net_new(&cfg, &rng, &err);
	ck_assert_ptr_nonnull(net);
	net->meta.corpus_gpus = 4;
	snprintf(path, sizeof(path), "%s/small.weights", tp_test_tmpdir());
	ck_assert_int_eq(tp_gnn_weights_save(net, path, &err), TP_OK);
	tp_gnn_net_free(net);
	snprintf(line, sizeof(line), "tagplan plan: %s\n", note);
	tp_run_tagplan(&r, argv1, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_msg(strstr(r.err, line) != NULL, "%s", r.err);
	/* the summary's search line (wrapped: compare with single spaces) */
	snprintf(line, sizeof(line), "op groups, %s stopped by", note);
	ck_assert_msg(strstr(tp_test_squeeze(r.err), line) != NULL, "%s", r.err);
	ck_assert(strstr(r.out, "\"gnn\": false") != NULL);
	ck_assert(strstr(r.out, "\"gnn_declined\": \"the GNN was trained on "
			       "clusters of up to 4 GPUs, this one has "
			       "16\"") != NULL);
	/* the plan reads back (validate: the plan format with the field) */
	snprintf(plan, sizeof(plan), "%s/declined.plan.json",
		 tp_test_tmpdir());
	ck_assert_int_eq(tp_test_write(plan, r.out, r.out_len), 0);
	tp_run_free(&r);
	tp_run_tagplan(&r, argv4, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	tp_run_free(&r);
	tp_run_tagplan(&r, argv2, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	/* the summary's search line wraps where the search's figures put
	   it: compare with single spaces */
	ck_assert_msg(strstr(tp_test_squeeze(r.err), "uniform priors") == NULL, "%s",
		      r.err);
	ck_assert_msg(strstr(r.err, "GNN priors and gains") != NULL, "%s",
		      r.err);
	ck_assert(strstr(r.out, "\"gnn\": true") != NULL);
	ck_assert(strstr(r.out, "gnn_declined") == NULL);
	tp_run_free(&r);
	tp_run_tagplan(&r, argv3, NULL);
	ck_assert_msg(r.status == 0, "%s", r.err);
	ck_assert_str_eq(r.err, "");
	ck_assert(strstr(r.out, "\"gnn\": false") != NULL);
	tp_run_free(&r);
}
END_TEST

START_TEST(test_train_command)
{
	struct tp_run r;
	char w[1024];
	const char *argv1[] = {"tagplan", "train", "--games", "1", NULL};
	/* -o writable: a missing directory of -o is found first */
	const char *argv2[] = {"tagplan", "train", "--resume",
			       "/nonexistent/x.ckpt", "-o", w, NULL};
	const char *argv3[] = {"tagplan", "train", "--help", NULL};

	snprintf(w, sizeof(w), "%s/w", tp_test_tmpdir());
	tp_run_tagplan(&r, argv1, NULL);
	ck_assert_int_eq(r.status, 2);
	ck_assert(strstr(r.err, "--games") != NULL);
	tp_run_free(&r);
	tp_run_tagplan(&r, argv2, NULL);
	ck_assert_int_eq(r.status, 2); /* a path that does not exist */
	ck_assert(strstr(r.err, "x.ckpt") != NULL);
	tp_run_free(&r);
	tp_run_tagplan(&r, argv3, NULL);
	ck_assert_int_eq(r.status, 0);
	ck_assert(strstr(r.out, "--epochs") != NULL);
	tp_run_free(&r);
}
END_TEST

Suite *suite_gnn(void)
{
	Suite *s = suite_create("gnn");
	TCase *tc = tcase_create("gnn");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_op_gradients);
	tcase_add_test(tc, test_gradient_check_detects_errors);
	tcase_add_test(tc, test_network_gradient);
	tcase_add_test(tc, test_infer_priors_and_gains);
	tcase_add_test(tc, test_infer_threads);
	tcase_add_test(tc, test_body_cache);
	tcase_add_test(tc, test_adam_and_clip);
	tcase_add_test(tc, test_training_steps_lower_loss);
	tcase_add_test(tc, test_weights_roundtrip);
	tcase_add_test(tc, test_weights_blas_field);
	tcase_add_test(tc, test_weights_corpus_gpus);
	tcase_add_test(tc, test_weights_widened);
	tcase_add_test(tc, test_weights_corruption);
	tcase_add_test(tc, test_features_real_graph);
	tcase_add_test(tc, test_features_pooling);
	tcase_add_test(tc, test_features_ep_cp);
	tcase_add_test(tc, test_features_mixed);
	tcase_add_test(tc, test_features_schedule_shape);
	tcase_add_test(tc, test_features_sync_method);
	tcase_add_test(tc, test_features_route_memo);
	tcase_add_test(tc, test_provider_priors);
	tcase_add_test(tc, test_provider_ensemble);
	tcase_add_test(tc, test_provider_covers);
	tcase_add_test(tc, test_corpus);
	tcase_add_test(tc, test_corpus_splits);
	tcase_add_test(tc, test_corpus_huge);
	tcase_add_test(tc, test_train_command);
	tcase_add_test(tc, test_plan_gnn_beyond_corpus);
	suite_add_tcase(s, tc);
	tc = tcase_create("train");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_train_run_resume);
	tcase_add_test(tc, test_train_runtimes);
	tcase_add_test(tc, test_train_distil);
	suite_add_tcase(s, tc);
	return s;
}
