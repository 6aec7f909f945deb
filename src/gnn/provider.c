/*
 * provider.c - the GNN behind the search's prior interface (provider.h).
 */
#include "provider.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "ad.h"
#include "features.h"
#include "weights.h"

struct tp_gnn_prior {
	struct tp_gnn_net *net[TP_GNN_MAX_MEMBERS]; /* the ensemble */
	uint32_t n;
	char source[4096];
};

struct scratch {
	struct tp_ad ad;
	struct tp_gnn_features *feat;
	/* per member: bodies of recent states (net.h; the members are
	   read-only while a scratch lives) */
	struct tp_gnn_body_cache *bc[TP_GNN_MAX_MEMBERS];
	float *buf; /* the members' priors and raw gains */
	size_t cap;
};

struct tp_gnn_prior *tp_gnn_prior_new(struct tp_gnn_net *net,
				      const char *source)
{
	struct tp_gnn_prior *gp = calloc(1, sizeof(*gp));

	if (!gp) {
		tp_gnn_net_free(net);
		return NULL;
	}
	gp->net[0] = net;
	gp->n = 1;
	snprintf(gp->source, sizeof(gp->source), "%s", source ? source : "");
	return gp;
}

bool tp_gnn_prior_add(struct tp_gnn_prior *gp, struct tp_gnn_net *net,
		      const char *source)
{
	size_t l = strlen(gp->source);

	if (gp->n >= TP_GNN_MAX_MEMBERS) {
		tp_gnn_net_free(net);
		return false;
	}
	gp->net[gp->n++] = net;
	snprintf(gp->source + l, sizeof(gp->source) - l, ",%s",
		 source ? source : "");
	return true;
}

uint32_t tp_gnn_prior_members(const struct tp_gnn_prior *gp)
{
	return gp->n;
}

void tp_gnn_prior_free(struct tp_gnn_prior *gp)
{
	if (!gp)
		return;
	for (uint32_t m = 0; m < gp->n; m++)
		tp_gnn_net_free(gp->net[m]);
	free(gp);
}

const struct tp_gnn_net *tp_gnn_prior_net(const struct tp_gnn_prior *gp)
{
	return gp->net[0];
}

const struct tp_gnn_net *tp_gnn_prior_member(const struct tp_gnn_prior *gp,
					     uint32_t m)
{
	return m < gp->n ? gp->net[m] : NULL;
}

const char *tp_gnn_prior_source(const struct tp_gnn_prior *gp)
{
	return gp->source;
}

static void scratch_free(void *ctx, void *scratch);

static void *scratch_new(void *ctx)
{
	struct scratch *s = calloc(1, sizeof(*s));
	(void)ctx;
	if (!s)
		return NULL;
	tp_ad_init(&s->ad);
	for (int m = 0; m < TP_GNN_MAX_MEMBERS; m++)
		if (!(s->bc[m] = tp_gnn_body_cache_new())) {
			scratch_free(ctx, s);
			return NULL;
		}
	return s;
}

static void scratch_free(void *ctx, void *scratch)
{
	struct scratch *s = scratch;
	(void)ctx;
	if (!s)
		return;
	tp_ad_release(&s->ad);
	for (int m = 0; m < TP_GNN_MAX_MEMBERS; m++)
		tp_gnn_body_cache_free(s->bc[m]);
	tp_gnn_features_free(s->feat);
	free(s->buf);
	free(s);
}

/* The members' mean predicted ln(t_state / t_child) of action k. */
static double gain_mean(const struct tp_gnn_prior *gp, const float *buf,
			uint32_t na, uint32_t k)
{
	double sum = 0;

	for (uint32_t m = 0; m < gp->n; m++)
		sum += tp_gnn_gain_log_ratio(buf[(size_t)(2 * m + 1) * na + k]);
	return sum / gp->n;
}

enum tp_status tp_gnn_prior_eval(struct tp_gnn_prior *gp, void *scratch,
				 const struct tp_prior_state *st,
				 float *priors, struct tp_error *err)
{
	struct scratch *s = scratch;
	struct tp_gnn_input in;
	struct tp_error local;
	enum tp_status rc;
	const uint32_t na = st->n_actions;

	if (!err)
		err = &local;
	if (!tp_gnn_features_match(s->feat, st->model, st->cluster,
				   st->n_groups, st->group_first)) {
		tp_gnn_features_free(s->feat);
		tp_error_clear(err);
		s->feat = tp_gnn_features_new(st->model, st->cluster,
					      st->n_groups, st->group_first,
					      NULL, err);
		if (!s->feat)
			return err->status ? err->status : TP_ENOMEM;
	}
	if ((rc = tp_gnn_features_state(s->feat, st, &in, err)))
		return rc;
	{
		/* member m's priors and raw gains: buf + 2 m na (member 0's
		   priors go straight to priors) */
		size_t need = (size_t)2 * gp->n * (na ? na : 1);
		if (need > s->cap) {
			float *b = realloc(s->buf, need * sizeof(*b));
			if (!b)
				return tp_error_set(err, TP_ENOMEM,
						    "out of memory");
			s->buf = b;
			s->cap = need;
		}
	}
	for (uint32_t m = 0; m < gp->n; m++) {
		float *p = m ? s->buf + (size_t)2 * m * na : priors;
		float *g = st->gains ? s->buf + (size_t)(2 * m + 1) * na : NULL;
		if ((rc = tp_gnn_input_check(gp->net[m], &in, err)))
			return rc;
		if ((rc = tp_gnn_infer_cached(gp->net[m], &in, &s->ad,
					      s->bc[m], p, g, err)))
			return rc;
	}
	/* the ensemble's priors: the members' mean */
	for (uint32_t m = 1; m < gp->n; m++)
		for (uint32_t k = 0; k < na; k++)
			priors[k] += s->buf[(size_t)2 * m * na + k];
	for (uint32_t k = 0; gp->n > 1 && k < na; k++)
		priors[k] /= (float)gp->n;
	if (st->gains) {
		/* the mean of the members' ln(t_state / t_child), relative
		 * to the action that keeps the state as it is, whose gain is
		 * 0 by definition (the head's bias cancels) */
		double anchor = 0;
		for (uint32_t k = 0; k < na; k++)
			if (st->actions[k].keeps_default) {
				anchor = gain_mean(gp, s->buf, na, k);
				break;
			}
		for (uint32_t k = 0; k < na; k++)
			st->gains[k] =
				(float)(gain_mean(gp, s->buf, na, k) - anchor);
	}
	return TP_OK;
}

static enum tp_status evaluate(void *ctx, void *scratch,
			       const struct tp_prior_state *st, float *priors,
			       struct tp_error *err)
{
	if (st->n_actions == 0)
		return TP_OK;
	return tp_gnn_prior_eval(ctx, scratch, st, priors, err);
}

/* n with a comma every three digits ("1,024") into buf. */
static void digits(char *buf, size_t size, uint32_t n)
{
	char raw[16];
	size_t l = (size_t)snprintf(raw, sizeof(raw), "%u", n), o = 0;

	for (size_t i = 0; i < l && o + 2 < size; i++) {
		if (i && (l - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = raw[i];
	}
	buf[o] = '\0';
}

uint32_t tp_gnn_prior_corpus_gpus(const struct tp_gnn_prior *gp)
{
	uint32_t least = 0;

	for (uint32_t m = 0; m < gp->n; m++) {
		uint32_t g = gp->net[m]->meta.corpus_gpus;
		if (g && (!least || g < least))
			least = g;
	}
	return least;
}

/* The domain rule (provider.h): a member trained on smaller clusters
 * than c (corpus_gpus recorded and below c's devices) rules it out. */
static bool covers(void *ctx, const struct tp_cluster *c, char *why,
		   size_t why_size)
{
	uint32_t most = tp_gnn_prior_corpus_gpus(ctx);
	char a[16], b[16];

	if (!most || c->devices.n <= most)
		return true;
	if (why && why_size) {
		digits(a, sizeof(a), most);
		digits(b, sizeof(b),
		       c->devices.n > UINT32_MAX ? UINT32_MAX
						 : (uint32_t)c->devices.n);
		snprintf(why, why_size,
			 "the GNN was trained on clusters of up to %s GPUs, "
			 "this one has %s",
			 a, b);
	}
	return false;
}

void tp_gnn_prior_provider(struct tp_gnn_prior *gp,
			   struct tp_prior_provider *pp)
{
	memset(pp, 0, sizeof(*pp));
	pp->name = "gnn";
	pp->ctx = gp;
	pp->scratch_new = scratch_new;
	pp->scratch_free = scratch_free;
	pp->evaluate = evaluate;
	pp->covers = covers;
}

/* Load one member's weights: path; or, in_data, a name under the data
 * directory (the first member's: tp_data_path; the others beside it, so
 * an ensemble never mixes two installs). */
static struct tp_gnn_net *load_member(const char *path, size_t len,
				      bool in_data, char *where, size_t wsz,
				      struct tp_error *err)
{
	char name[4096];
	struct tp_gnn_widths w;
	struct tp_gnn_net *net;

	if (len == 0 || len >= sizeof(name)) {
		tp_error_set(err, TP_EINPUT,
			     "--weights: an empty or overlong file name in "
			     "the list (give FILE or FILE,FILE,...)");
		return NULL;
	}
	memcpy(name, path, len);
	name[len] = 0;
	if (in_data && where[0]) {
		/* beside the first member: replace its file name */
		char *slash = strrchr(where, '/');
		size_t dl = slash ? (size_t)(slash - where) + 1 : 0;
		snprintf(where + dl, wsz - dl, "%s", name);
	} else if (in_data) {
		if (tp_data_path(name, where, wsz, err))
			return NULL;
	} else {
		snprintf(where, wsz, "%s", name);
	}
	tp_gnn_feature_widths(&w);
	net = tp_gnn_weights_load(where, &w, err);
	if (!net && !err->status)
		tp_error_set(err, TP_EINPUT, "%s: unusable weights", where);
	return net;
}

enum tp_status tp_gnn_prior_load_default(const char *path,
					 struct tp_prior_provider *pp,
					 struct tp_gnn_prior **gp,
					 struct tp_error *err)
{
	char where[4096];
	const bool in_data = path == NULL;
	const char *p = path ? path : TP_GNN_DEFAULT_WEIGHTS;
	struct tp_error local;
	uint32_t n = 0;

	if (!err)
		err = &local;
	tp_error_clear(err);
	*gp = NULL;
	where[0] = '\0';
	for (;;) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		struct tp_gnn_net *net;
		if (n == TP_GNN_MAX_MEMBERS) {
			tp_gnn_prior_free(*gp);
			*gp = NULL;
			return tp_error_set(err, TP_EINPUT,
					    "--weights: at most %d files (an "
					    "ensemble of up to %d networks)",
					    TP_GNN_MAX_MEMBERS,
					    TP_GNN_MAX_MEMBERS);
		}
		net = load_member(p, len, in_data, where, sizeof(where), err);
		if (!net) {
			tp_gnn_prior_free(*gp);
			*gp = NULL;
			/* the shipped ensemble half there: a broken install,
			   not "no weights shipped" */
			if (in_data && n > 0 && err->status == TP_EIO) {
				tp_error_set(err, TP_EINPUT,
					     "missing or unreadable, beside the "
					     "other shipped GNN weights (run "
					     "`make weights` or reinstall the "
					     "data)");
				tp_error_set_file(err, where);
				return TP_EINPUT;
			}
			return err->status ? err->status : TP_EINPUT;
		}
		if (n++ > 0)
			tp_gnn_prior_add(*gp, net, where); /* room: above */
		else if (!(*gp = tp_gnn_prior_new(net, where)))
			return tp_error_set(err, TP_ENOMEM, "out of memory");
		if (!c)
			break;
		p = c + 1;
	}
	tp_gnn_prior_provider(*gp, pp);
	return TP_OK;
}
