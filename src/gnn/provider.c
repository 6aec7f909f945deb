/*
 * provider.c - the GNN behind the search's prior interface (provider.h).
 */
#include "provider.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../io/io.h"
#include "ad.h"
#include "features.h"
#include "weights.h"

struct tp_gnn_prior {
	struct tp_gnn_net *net;
	bool values; /* return values when the search gives a reference */
	char source[4096];
};

struct scratch {
	struct tp_ad ad;
	struct tp_gnn_features *feat;
};

struct tp_gnn_prior *tp_gnn_prior_new(struct tp_gnn_net *net,
				      const char *source)
{
	struct tp_gnn_prior *gp = calloc(1, sizeof(*gp));

	if (!gp) {
		tp_gnn_net_free(net);
		return NULL;
	}
	gp->net = net;
	snprintf(gp->source, sizeof(gp->source), "%s", source ? source : "");
	return gp;
}

void tp_gnn_prior_free(struct tp_gnn_prior *gp)
{
	if (!gp)
		return;
	tp_gnn_net_free(gp->net);
	free(gp);
}

const struct tp_gnn_net *tp_gnn_prior_net(const struct tp_gnn_prior *gp)
{
	return gp->net;
}

const char *tp_gnn_prior_source(const struct tp_gnn_prior *gp)
{
	return gp->source;
}

static void *scratch_new(void *ctx)
{
	struct scratch *s = calloc(1, sizeof(*s));
	(void)ctx;
	if (s)
		tp_ad_init(&s->ad);
	return s;
}

static void scratch_free(void *ctx, void *scratch)
{
	struct scratch *s = scratch;
	(void)ctx;
	if (!s)
		return;
	tp_ad_release(&s->ad);
	tp_gnn_features_free(s->feat);
	free(s);
}

enum tp_status tp_gnn_prior_eval(struct tp_gnn_prior *gp, void *scratch,
				 const struct tp_prior_state *st,
				 float *priors, float *raw_value,
				 struct tp_error *err)
{
	struct scratch *s = scratch;
	struct tp_gnn_input in;
	struct tp_error local;
	enum tp_status rc;

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
	if ((rc = tp_gnn_input_check(gp->net, &in, err)))
		return rc;
	if ((rc = tp_gnn_infer_gains(gp->net, &in, &s->ad, priors, st->gains,
				     raw_value, err)))
		return rc;
	if (st->gains) {
		/* relative to the action that keeps the state as it is,
		 * whose gain is 0 by definition (the head's bias cancels) */
		double anchor = 0;
		for (uint32_t k = 0; k < st->n_actions; k++)
			if (st->actions[k].keeps_default) {
				anchor = tp_gnn_gain_log_ratio(st->gains[k]);
				break;
			}
		for (uint32_t k = 0; k < st->n_actions; k++)
			st->gains[k] = (float)(tp_gnn_gain_log_ratio(
						       st->gains[k]) -
					       anchor);
	}
	return TP_OK;
}

static enum tp_status evaluate(void *ctx, void *scratch,
			       const struct tp_prior_state *st, float *priors,
			       float *value, bool *has_value,
			       struct tp_error *err)
{
	float raw;
	enum tp_status rc;
	const struct tp_gnn_prior *gp = ctx;
	const struct scratch *s = scratch;

	*has_value = false;
	if (st->n_actions == 0)
		return TP_OK;
	rc = tp_gnn_prior_eval(ctx, scratch, st, priors, &raw, err);
	if (rc == TP_OK && gp->values && st->reference_time_s > 0 &&
	    isfinite(raw)) {
		*value = (float)tp_gnn_prior_value(
			tp_gnn_features_lower_bound(s->feat), raw,
			st->reference_time_s);
		*has_value = true;
	}
	return rc;
}

void tp_gnn_prior_set_values(struct tp_gnn_prior *gp, bool on)
{
	gp->values = on;
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
}

enum tp_status tp_gnn_prior_load_default(const char *path,
					 struct tp_prior_provider *pp,
					 struct tp_gnn_prior **gp,
					 struct tp_error *err)
{
	char buf[4096];
	struct tp_gnn_widths w;
	struct tp_gnn_net *net;
	struct tp_error local;
	enum tp_status rc;

	if (!err)
		err = &local;
	tp_error_clear(err);
	*gp = NULL;
	if (!path) {
		if ((rc = tp_data_path(TP_GNN_DEFAULT_WEIGHTS, buf, sizeof(buf),
				       err)))
			return rc;
		path = buf;
	}
	tp_gnn_feature_widths(&w);
	net = tp_gnn_weights_load(path, &w, err);
	if (!net)
		return err->status ? err->status : TP_EINPUT;
	*gp = tp_gnn_prior_new(net, path);
	if (!*gp)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	tp_gnn_prior_provider(*gp, pp);
	return TP_OK;
}

double tp_gnn_prior_value(double lb_s, float raw_value, double ref_s)
{
	double t = tp_gnn_value_time(lb_s, raw_value);

	if (!isfinite(t) || !(ref_s > 0))
		return -1.0; /* predicted not to fit */
	return 0.25 + 0.75 * tanh(2.0 * log(ref_s / t));
}
