/*
 * sailor_plan.c - a plan of Sailor's planner or of its ports of Metis
 * and AMP (results/CASE/PLANNER_MODEL.json) as a tagplan plan (io.h
 * tp_sailor_import_plan), for the model tp_sailor_import_model builds and
 * a cluster with the GPUs it names (tp_sailor_import_cluster's).
 *
 * Sailor's plan: {mbs, pipelines: [{num_stages, layers_per_stage: Sailor
 * layers per stage (0 the embedding, 1..L the blocks, L+1 the head),
 * dp_degrees, tmp_stages: per stage, per replica [[[GPU, n, zone], ...],
 * tp]}]}.  A replica runs on tp GPUs of its type (n is the GPUs per node
 * of its machines in the ports' plans, the replica's GPUs in SAILOR's;
 * tp GPUs is what both use).  Each stage becomes one group of the
 * stage's ops, each replica tp consecutive free GPUs of its type on one
 * node (first fit in device order), the replicas' degrees as they are:
 * a stage of replicas of different tp is a mixed group (plan.h).
 *
 * Micro-batches: Sailor gives every replica mbs samples of a micro-batch,
 * mbs x dp samples (a pipeline whose stages differ in dp, Metis's: mbs x
 * the smallest dp).  tagplan's micro-batches divide the global batch and
 * give each replica whole samples, so the translation takes the divisor
 * whose micro-batch is nearest that (ties: the smaller; at least one
 * sample per replica of every stage) and gives each replica S / dp
 * samples, one more to the first S mod dp (SAILOR's 2 x 27 = 54 samples
 * of Fig. 8b: 32 micro-batches of 32, 2 samples for 5 replicas, 1 for
 * 22; options.micro_batches chooses another count).  Even shares, 1F1B,
 * no ZeRO, no recomputation, no compression: what Sailor's simulator
 * assumes.  The notes say each stage's translation.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "io_int.h"
#include "json.h"

static const struct tp_json *key(const struct tp_json *o, const char *k)
{
	return o && o->type == TP_JSON_OBJECT ? tp_json_get(o, k) : NULL;
}

static bool is_array(const struct tp_json *v)
{
	return v && v->type == TP_JSON_ARRAY;
}

static bool whole(const struct tp_json *v, double lo, double hi)
{
	return v && v->type == TP_JSON_NUMBER && v->num >= lo && v->num <= hi &&
	       v->num == floor(v->num);
}

/* The translation's state: free devices, the stage's ops and devices. */
struct xlate {
	const struct tp_model *m;
	const struct tp_cluster *c;
	uint8_t *used;   /* per device */
	int32_t *lay;    /* Sailor's layer of each op */
	uint32_t *ops, *devs, *rtp;
	const char *path;
	uint32_t micro_batches; /* 0: chosen */
	struct tp_error *err;
};

/* tp free consecutive devices of type ty on one node into out; false
 * when no node has them. */
static bool take(struct xlate *x, uint32_t ty, uint32_t tp, uint32_t *out)
{
	const struct tp_cluster *c = x->c;

	for (size_t n = 0; n < c->nodes.n; n++) {
		const struct tp_node *nd = &c->nodes.v[n];
		uint32_t got = 0;
		for (uint32_t k = 0; k < nd->n_devices && got < tp; k++) {
			uint32_t d = nd->first_device + k;
			if (c->devices.v[d].type != ty || x->used[d])
				continue;
			out[got++] = d;
		}
		if (got == tp) {
			for (uint32_t k = 0; k < tp; k++)
				x->used[out[k]] = 1;
			return true;
		}
	}
	return false;
}

/* Stage s's replicas into x->devs / x->rtp; *n_dev, *dp. */
static enum tp_status stage_replicas(struct xlate *x, const struct tp_json *st,
				     uint32_t s, uint32_t *n_dev, uint32_t *dp,
				     struct tp_strbuf *notes)
{
	uint32_t nd = 0, cnt[8] = {0}, tps[8] = {0}, tys[8] = {0}, nk = 0;

	for (size_t r = 0; r < st->n; r++) {
		const struct tp_json *rep = st->items[r], *gpus, *g0;
		const char *tname;
		uint32_t ty, tp, k;
		if (!is_array(rep) || rep->n != 2 || !is_array(rep->items[0]) ||
		    !rep->items[0]->n || !whole(rep->items[1], 1, 64))
			return tp_error_set(x->err, TP_EINPUT,
					    "%s: stage %u replica %zu: "
					    "expected [[[GPU, n, zone], ...], "
					    "tp]",
					    x->path, s, r);
		gpus = rep->items[0];
		g0 = gpus->items[0];
		tp = (uint32_t)rep->items[1]->num;
		if (!is_array(g0) || !g0->n || g0->items[0]->type !=
							 TP_JSON_STRING)
			return tp_error_set(x->err, TP_EINPUT,
					    "%s: stage %u replica %zu: "
					    "expected [GPU, n, zone]",
					    x->path, s, r);
		tname = tp_sailor_device_type(g0->items[0]->str);
		ty = tname ? tp_cluster_find_type(x->c, tname) : TP_NONE;
		if (ty == TP_NONE)
			return tp_error_set(x->err, TP_EINPUT,
					    "%s: stage %u replica %zu runs on "
					    "%s, which the cluster does not "
					    "have (as %s)",
					    x->path, s, r, g0->items[0]->str,
					    tname ? tname : "no tagplan type");
		if (!take(x, ty, tp, x->devs + nd))
			return tp_error_set(x->err, TP_EINPUT,
					    "%s: stage %u replica %zu needs %u "
					    "free %s on one node; the cluster "
					    "has no more",
					    x->path, s, r, tp, tname);
		x->rtp[r] = tp;
		nd += tp;
		for (k = 0; k < nk; k++)
			if (tys[k] == ty && tps[k] == tp)
				break;
		if (k == nk && nk < 8) {
			tys[nk] = ty;
			tps[nk++] = tp;
		}
		if (k < 8)
			cnt[k]++;
	}
	*n_dev = nd;
	*dp = (uint32_t)st->n;
	tp_strbuf_addf(notes, "stage %u: %zu replicas:", s, st->n);
	for (uint32_t k = 0; k < nk; k++)
		tp_strbuf_addf(notes, "%s %u x %s at tp %u", k ? " +" : "",
			       cnt[k], x->c->types.v[tys[k]].name, tps[k]);
	tp_strbuf_addf(notes, "\n");
	return TP_OK;
}

/* Stage s's ops (their Sailor layers in `layers`) into x->ops. */
static enum tp_status stage_ops(struct xlate *x, const struct tp_json *layers,
				uint32_t s, uint32_t *n_ops)
{
	uint32_t n = 0;

	for (size_t o = 0; o < x->m->ops.n; o++)
		for (size_t k = 0; k < layers->n; k++)
			if (whole(layers->items[k], 0, 1e6) &&
			    (int32_t)layers->items[k]->num == x->lay[o]) {
				x->ops[n++] = (uint32_t)o;
				break;
			}
	if (!n)
		return tp_error_set(x->err, TP_EINPUT,
				    "%s: stage %u holds no layer of the "
				    "model (its layers_per_stage)",
				    x->path, s);
	*n_ops = n;
	return TP_OK;
}

/* Every group's shares as whole samples of a micro-batch: S / dp each,
 * one more for the first S mod dp replicas. */
static void whole_shares(struct tp_plan *p)
{
	int64_t S = p->global_batch / p->micro_batches;

	for (uint32_t g = 0; g < p->groups.n; g++) {
		uint32_t dp = p->groups.v[g].dp;
		double *sh = tp_plan_group_shares(p, g);
		for (uint32_t r = 0; r < dp; r++)
			sh[r] = (double)(S / dp + ((int64_t)r < S % dp)) /
				(double)S;
	}
}

/* The pipeline pl into p. */
static enum tp_status translate(struct xlate *x, const struct tp_json *pl,
				int64_t mbs, struct tp_plan *p,
				struct tp_strbuf *notes)
{
	const struct tp_json *lps = key(pl, "layers_per_stage");
	const struct tp_json *tms = key(pl, "tmp_stages");
	uint32_t min_dp = UINT32_MAX, max_dp = 0;
	double per_mb;
	enum tp_status st;

	if (!is_array(lps) || !is_array(tms) || lps->n != tms->n || !lps->n)
		return tp_error_set(x->err, TP_EINPUT,
				    "%s: expected layers_per_stage and "
				    "tmp_stages, one entry per stage",
				    x->path);
	for (uint32_t s = 0; s < lps->n; s++) {
		uint32_t n_ops = 0, n_dev = 0, dp = 0;
		struct tp_plan_replicas rep;
		if (!is_array(lps->items[s]) || !is_array(tms->items[s]) ||
		    !tms->items[s]->n || tms->items[s]->n > x->c->devices.n)
			return tp_error_set(x->err, TP_EINPUT,
					    "%s: stage %u: expected a list of "
					    "layers and a list of replicas",
					    x->path, s);
		if ((st = stage_ops(x, lps->items[s], s, &n_ops)) ||
		    (st = stage_replicas(x, tms->items[s], s, &n_dev, &dp,
					 notes)))
			return st;
		rep.n = dp;
		rep.tp = x->rtp;
		if ((st = tp_plan_add_group_mixed(p, x->ops, n_ops, x->devs,
						  n_dev, &rep, NULL, x->err)))
			return st;
		if (dp < min_dp)
			min_dp = dp;
		if (dp > max_dp)
			max_dp = dp;
	}
	/* micro-batches dividing the batch, their samples nearest mbs x the
	   smallest dp (ties: fewer samples), at least one per replica */
	per_mb = (double)mbs * min_dp;
	if (x->micro_batches) {
		p->micro_batches = x->micro_batches;
	} else {
		double best = INFINITY;
		for (int64_t k = 1; k <= p->global_batch; k++) {
			double S = (double)p->global_batch / (double)k;
			if (p->global_batch % k || S < max_dp)
				continue;
			if (fabs(S - per_mb) <= best) {
				best = fabs(S - per_mb);
				p->micro_batches = (uint32_t)k;
			}
		}
	}
	whole_shares(p);
	tp_strbuf_addf(notes,
		       "micro-batches: %u of %.4g samples (Sailor's mbs %lld "
		       "per replica x the smallest dp, %u, is %.4g; tagplan's "
		       "divide the batch of %lld), whole samples per replica, "
		       "the remainder to the first replicas\n",
		       p->micro_batches,
		       (double)p->global_batch / p->micro_batches,
		       (long long)mbs, min_dp, per_mb,
		       (long long)p->global_batch);
	return TP_OK;
}

enum tp_status tp_sailor_import_plan(const char *path,
				     const struct tp_sailor_plan_opts *o,
				     const struct tp_model *m,
				     const struct tp_cluster *c,
				     struct tp_plan *p,
				     struct tp_strbuf *notes,
				     struct tp_error *err)
{
	struct tp_json_doc doc;
	struct xlate x;
	const struct tp_json *e, *plan, *pls, *mbs;
	int64_t L = 0;
	enum tp_status st;

	memset(&doc, 0, sizeof(doc));
	memset(&x, 0, sizeof(x));
	x.m = m;
	x.c = c;
	x.path = path;
	x.err = err;
	x.micro_batches = o->micro_batches;
	if ((st = tp_sailor_read_json(path, &doc, err)))
		goto out;
	e = is_array(doc.root) && o->entry < doc.root->n
		    ? doc.root->items[o->entry]
		    : NULL;
	plan = key(e, "plan");
	pls = key(plan, "pipelines");
	mbs = key(plan, "mbs");
	if (!plan || !is_array(pls) || !whole(mbs, 1, 1e6)) {
		st = tp_error_set(err, TP_EINPUT,
				  "%s: expected entry %u of a list of "
				  "Sailor results with \"plan\": {\"mbs\", "
				  "\"pipelines\"}",
				  path, o->entry);
		goto out;
	}
	if (pls->n != 1) {
		st = tp_error_set(err, TP_EINPUT,
				  "%s: %zu pipelines; tagplan translates "
				  "plans of one",
				  path, pls->n);
		goto out;
	}
	for (size_t k = 0; k < m->ops.n; k++)
		if (m->ops.v[k].layer + 1 > L)
			L = m->ops.v[k].layer + 1;
	x.lay = tp_sailor_layer_map(m, L);
	x.used = calloc(c->devices.n + 1, 1);
	x.ops = calloc(m->ops.n + 1, sizeof(*x.ops));
	x.devs = calloc(c->devices.n + 1, sizeof(*x.devs));
	x.rtp = calloc(c->devices.n + 1, sizeof(*x.rtp));
	if (!x.lay || !x.used || !x.ops || !x.devs || !x.rtp) {
		st = tp_error_set(err, TP_ENOMEM, "out of memory");
		goto out;
	}
	tp_plan_init(p);
	p->global_batch = m->global_batch;
	p->schedule = TP_SCHEDULE_1F1B;
	p->compression = TP_COMPRESSION_OFF;
	st = translate(&x, pls->items[0], (int64_t)mbs->num, p, notes);
	if (!st)
		st = tp_plan_validate(p, m, c, err);
out:
	free(x.lay);
	free(x.used);
	free(x.ops);
	free(x.devs);
	free(x.rtp);
	tp_json_doc_release(&doc);
	if (st && err && !err->file[0])
		tp_error_set_file(err, path);
	return st;
}
