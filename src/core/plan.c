#include "plan.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tp_plan_init(struct tp_plan *p)
{
	memset(p, 0, sizeof(*p));
	p->micro_batches = 1;
	p->schedule = TP_SCHEDULE_1F1B;
	p->virtual_stages = 1;
	p->compression = TP_COMPRESSION_LOSSLESS;
}

void tp_plan_summary_release(struct tp_plan_summary *s)
{
	free(s->peak_memory_bytes);
	free(s->busy_fraction);
	memset(s, 0, sizeof(*s));
}

void tp_plan_release(struct tp_plan *p)
{
	if (!p)
		return;
	tp_vec_free(&p->groups);
	tp_vec_free(&p->ops);
	tp_vec_free(&p->devs);
	tp_vec_free(&p->shares);
	tp_vec_free(&p->sfb);
	tp_vec_free(&p->rtp);
	tp_plan_summary_release(&p->summary);
	memset(p, 0, sizeof(*p));
}

void tp_plan_clear(struct tp_plan *p)
{
	p->groups.n = p->ops.n = p->devs.n = p->shares.n = p->sfb.n = 0;
	p->rtp.n = 0;
	tp_plan_summary_release(&p->summary);
}

#define COPY_VEC(dst, src)                                                    \
	do {                                                                  \
		(dst)->n = 0;                                                 \
		if (tp_vec_reserve((dst), (src)->n))                          \
			goto nomem;                                           \
		if ((src)->n)                                                 \
			memcpy((dst)->v, (src)->v,                            \
			       (src)->n * sizeof(*(src)->v));                 \
		(dst)->n = (src)->n;                                          \
	} while (0)

enum tp_status tp_plan_copy(struct tp_plan *dst, const struct tp_plan *src,
			    struct tp_error *err)
{
	uint32_t nd = src->summary.n_devices;

	COPY_VEC(&dst->groups, &src->groups);
	COPY_VEC(&dst->ops, &src->ops);
	COPY_VEC(&dst->devs, &src->devs);
	COPY_VEC(&dst->shares, &src->shares);
	COPY_VEC(&dst->sfb, &src->sfb);
	COPY_VEC(&dst->rtp, &src->rtp);
	dst->global_batch = src->global_batch;
	dst->micro_batches = src->micro_batches;
	dst->schedule = src->schedule;
	dst->virtual_stages = src->virtual_stages;
	dst->zero = src->zero;
	dst->compression = src->compression;
	dst->grad_bucket_bytes = src->grad_bucket_bytes;
	dst->expert_imbalance = src->expert_imbalance;
	dst->expert_capacity_factor = src->expert_capacity_factor;
	memcpy(dst->runtime, src->runtime, sizeof(dst->runtime));
	tp_plan_summary_release(&dst->summary);
	dst->summary = src->summary;
	dst->summary.peak_memory_bytes = NULL;
	dst->summary.busy_fraction = NULL;
	if (src->summary.peak_memory_bytes) {
		dst->summary.peak_memory_bytes = tp_calloc(nd, sizeof(double));
		if (!dst->summary.peak_memory_bytes)
			goto nomem;
		memcpy(dst->summary.peak_memory_bytes,
		       src->summary.peak_memory_bytes, nd * sizeof(double));
	}
	if (src->summary.busy_fraction) {
		dst->summary.busy_fraction = tp_calloc(nd, sizeof(double));
		if (!dst->summary.busy_fraction)
			goto nomem;
		memcpy(dst->summary.busy_fraction, src->summary.busy_fraction,
		       nd * sizeof(double));
	}
	return TP_OK;
nomem:
	return tp_error_set(err, TP_ENOMEM, "out of memory");
}

/* Append a group of the given degrees (not checked against n_devs). */
static enum tp_status push_group(struct tp_plan *p, const uint32_t *ops,
				 uint32_t n_ops, const uint32_t *devs,
				 uint32_t n_devs,
				 const struct tp_plan_degrees *deg,
				 const double *shares, struct tp_error *err)
{
	struct tp_plan_group g;
	uint32_t dp = deg->dp;

	if (tp_vec_reserve(&p->ops, n_ops) || tp_vec_reserve(&p->devs, n_devs) ||
	    tp_vec_reserve(&p->shares, dp) || tp_vec_reserve(&p->groups, 1))
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	memset(&g, 0, sizeof(g));
	g.op_first = (uint32_t)p->ops.n;
	g.n_ops = n_ops;
	g.dev_first = (uint32_t)p->devs.n;
	g.n_devices = n_devs;
	g.share_first = (uint32_t)p->shares.n;
	g.dp = dp;
	g.tp = deg->tp;
	g.ep = 1;
	g.cp = deg->cp;
	g.sync = TP_SYNC_RING;
	g.recompute = TP_RECOMPUTE_NONE;
	g.sfb_first = (uint32_t)p->sfb.n;
	if (n_ops)
		memcpy(p->ops.v + p->ops.n, ops, n_ops * sizeof(*ops));
	p->ops.n += n_ops;
	if (n_devs)
		memcpy(p->devs.v + p->devs.n, devs, n_devs * sizeof(*devs));
	p->devs.n += n_devs;
	for (uint32_t r = 0; r < dp; r++)
		p->shares.v[p->shares.n++] = shares ? shares[r] : 1.0 / dp;
	p->groups.v[p->groups.n++] = g;
	return TP_OK;
}

enum tp_status tp_plan_add_group_degrees(struct tp_plan *p,
					 const uint32_t *ops, uint32_t n_ops,
					 const uint32_t *devs, uint32_t n_devs,
					 const struct tp_plan_degrees *deg,
					 const double *shares,
					 struct tp_error *err)
{
	uint32_t dp = deg->dp, cp = deg->cp, tp = deg->tp;

	if (dp == 0 || tp == 0 || cp == 0 ||
	    (uint64_t)dp * cp * tp != n_devs) {
		if (cp == 1)
			return tp_error_set(err, TP_EINPUT,
					    "dp (%u) x tp (%u) must equal the "
					    "number of devices (%u)",
					    dp, tp, n_devs);
		return tp_error_set(err, TP_EINPUT,
				    "dp (%u) x cp (%u) x tp (%u) must equal "
				    "the number of devices (%u)",
				    dp, cp, tp, n_devs);
	}
	return push_group(p, ops, n_ops, devs, n_devs, deg, shares, err);
}

enum tp_status tp_plan_add_group_mixed(struct tp_plan *p, const uint32_t *ops,
				       uint32_t n_ops, const uint32_t *devs,
				       uint32_t n_devs,
				       const struct tp_plan_replicas *rep,
				       const double *shares,
				       struct tp_error *err)
{
	struct tp_plan_degrees deg = {rep->n, 1, 1};
	uint64_t sum = 0;
	uint32_t lo = UINT32_MAX;
	struct tp_plan_group *g;
	enum tp_status st;

	for (uint32_t r = 0; r < rep->n; r++) {
		sum += rep->tp[r];
		if (rep->tp[r] > deg.tp)
			deg.tp = rep->tp[r];
		if (rep->tp[r] < lo)
			lo = rep->tp[r];
	}
	if (!rep->n || !lo || sum != n_devs)
		return tp_error_set(err, TP_EINPUT,
				    "the replicas' tensor-parallel degrees "
				    "sum to %llu; the group has %u devices",
				    (unsigned long long)sum, n_devs);
	for (uint32_t r = 0; r < rep->n; r++)
		if (deg.tp % rep->tp[r])
			return tp_error_set(err, TP_EINPUT,
					    "replica %u's tp %u does not "
					    "divide the largest, %u",
					    r, rep->tp[r], deg.tp);
	if (lo == deg.tp) /* one degree: a plain group */
		return tp_plan_add_group_degrees(p, ops, n_ops, devs, n_devs,
						 &deg, shares, err);
	if (tp_vec_reserve(&p->rtp, rep->n))
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	st = push_group(p, ops, n_ops, devs, n_devs, &deg, shares, err);
	if (st)
		return st;
	g = &p->groups.v[p->groups.n - 1];
	g->mixed = true;
	g->rtp_first = (uint32_t)p->rtp.n;
	memcpy(p->rtp.v + p->rtp.n, rep->tp, rep->n * sizeof(*rep->tp));
	p->rtp.n += rep->n;
	return TP_OK;
}

void tp_plan_degrees_label(const struct tp_plan *p, uint32_t g, char *buf,
			   size_t size)
{
	const struct tp_plan_group *gr = &p->groups.v[g];
	size_t used = 0;
	uint32_t t = 0;

	if (!size)
		return;
	buf[0] = 0;
	if (!gr->mixed) {
		snprintf(buf, size, "dp %u x tp %u", gr->dp, gr->tp);
		return;
	}
	/* degrees ascending: each next larger one once */
	for (;;) {
		uint32_t next = UINT32_MAX, n = 0;
		int k;
		for (uint32_t r = 0; r < gr->dp; r++) {
			uint32_t d = tp_plan_replica_tp(p, g, r);
			if (d > t && d < next)
				next = d;
		}
		if (next == UINT32_MAX)
			break;
		for (uint32_t r = 0; r < gr->dp; r++)
			n += tp_plan_replica_tp(p, g, r) == next;
		k = snprintf(buf + used, size - used, "%s%u x tp %u",
			     used ? " + " : "", n, next);
		if (k < 0 || (size_t)k >= size - used)
			break;
		used += (size_t)k;
		t = next;
	}
}

/* tp_plan_validate's rules of a mixed group g (plan.h). */
static enum tp_status mixed_check(const struct tp_plan *p, uint32_t g,
				  struct tp_error *err)
{
	const struct tp_plan_group *gr = &p->groups.v[g];
	uint64_t sum = 0;
	uint32_t hi = 0;
	char path[64], fix[64];
	const char *no = NULL;

	snprintf(path, sizeof(path), "$.groups[%u].replica_tp", g);
	if ((uint64_t)gr->rtp_first + gr->dp > p->rtp.n || gr->dp == 0)
		return tp_error_set_path(err, TP_EINPUT, path,
					 "expected one degree per replica");
	for (uint32_t r = 0; r < gr->dp; r++) {
		uint32_t t = p->rtp.v[gr->rtp_first + r];
		if (t == 0)
			return tp_error_set_path(err, TP_EINPUT, path,
						 "a degree of 0");
		sum += t;
		if (t > hi)
			hi = t;
	}
	for (uint32_t r = 0; r < gr->dp; r++)
		if (hi % p->rtp.v[gr->rtp_first + r])
			return tp_error_set_path(
				err, TP_EINPUT, path,
				"replica %u's tp %u does not divide the "
				"largest, %u (the gradient all-reduce runs "
				"over the finest sharding)",
				r, p->rtp.v[gr->rtp_first + r], hi);
	if (sum != gr->n_devices || hi != gr->tp)
		return tp_error_set_path(err, TP_EINPUT, path,
					 "the degrees sum to %llu (largest "
					 "%u); the group has %u devices (tp "
					 "%u)",
					 (unsigned long long)sum, hi,
					 gr->n_devices, gr->tp);
	/* what the simulator does not model over unequal replicas: the
	   field to change is named in the error with its fix */
	if (gr->cp != 1) {
		no = "context parallelism";
		snprintf(fix, sizeof(fix), "set $.groups[%u].cp to 1", g);
	} else if (gr->ep != 1) {
		no = "expert parallelism";
		snprintf(fix, sizeof(fix), "set $.groups[%u].ep to 1", g);
	} else if (gr->sp) {
		no = "sequence parallelism";
		snprintf(fix, sizeof(fix), "set $.groups[%u].sp to false", g);
	} else if (gr->sync != TP_SYNC_RING) {
		no = "a sync other than ring";
		snprintf(fix, sizeof(fix), "set $.groups[%u].sync to \"ring\"",
			 g);
	} else if (p->zero) {
		no = "ZeRO";
		snprintf(fix, sizeof(fix), "set $.zero to 0");
	} else if (gr->n_sfb || gr->lossy != TP_LOSSY_NONE) {
		no = "gradient compression";
		snprintf(fix, sizeof(fix), "remove $.groups[%u].compression",
			 g);
	}
	if (no)
		return tp_error_set_path(
			err, TP_EINPUT, path,
			"replicas of different tensor-parallel degrees do "
			"not combine with %s (the simulator has no model of "
			"it over unequally sharded replicas): %s, or give "
			"every replica the same tp",
			no, fix);
	return TP_OK;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* ep does not divide the `distinct` routed experts of key layer
 * `layer` (the op's layer + 1). */
static enum tp_status ep_layer_error(uint32_t ep, int64_t distinct,
				     int64_t layer, const char *path,
				     struct tp_error *err)
{
	return tp_error_set_path(err, TP_EINPUT, path,
				 "ep=%u does not divide the %lld routed experts "
				 "of layer %lld in the group; use a divisor of "
				 "%lld",
				 ep, (long long)distinct,
				 (long long)(layer - 1), (long long)distinct);
}

/* Whether op o is a routed expert's, with its key (layer + 1) 2^40 +
 * expert in *key (ep_check). */
static bool expert_key(const struct tp_model *m, uint32_t o, int64_t *key)
{
	int64_t j = tp_model_op_expert(m, o);

	if (j < 0 || j >= ((int64_t)1 << 40))
		return false;
	*key = ((int64_t)m->ops.v[o].layer + 1) * ((int64_t)1 << 40) + j;
	return true;
}

/* ep against the routed experts per layer of the group's n ops: ep must
 * divide each layer's number of distinct experts; the first layer
 * (ascending) it does not is the error.  The n_ex expert ops' keys
 * (expert_key) span key layers lo..hi and experts up to jmax: counted
 * in a table of those layers x experts when that is small (every MoE
 * model: DeepSeek-V3's 61 x 256; sorting a group's 45,000 keys was 18%
 * of a search's CPU there), else by sorting the keys. */
struct ep_span {
	int64_t n_ex, lo, hi, jmax;
};

static enum tp_status ep_layers_divide(const struct tp_model *m,
				       const uint32_t *ops, uint32_t n,
				       const struct ep_span *sp, uint32_t ep,
				       const char *path, struct tp_error *err)
{
	int64_t rows = sp->hi - sp->lo + 1, cols = sp->jmax + 1, key, i = 0;
	uint8_t *seen = NULL;
	int64_t *distinct = NULL, *keys;
	enum tp_status st = TP_OK;

	if (sp->lo >= 0 && rows <= (1 << 20) / cols) {
		seen = tp_calloc((size_t)(rows * cols), 1);
		distinct = tp_calloc((size_t)rows, sizeof(*distinct));
	}
	if (seen && distinct) {
		for (uint32_t k = 0; k < n; k++) {
			int64_t r, c;
			if (!expert_key(m, ops[k], &key))
				continue;
			r = (key >> 40) - sp->lo;
			c = key & (((int64_t)1 << 40) - 1);
			if (!seen[r * cols + c]) {
				seen[r * cols + c] = 1;
				distinct[r]++;
			}
		}
		for (int64_t r = 0; r < rows; r++)
			if (distinct[r] && distinct[r] % ep != 0) {
				st = ep_layer_error(ep, distinct[r],
						    sp->lo + r, path, err);
				break;
			}
		free(seen);
		free(distinct);
		return st;
	}
	free(seen);
	free(distinct);
	keys = tp_calloc((size_t)sp->n_ex, sizeof(*keys));
	if (!keys)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	for (uint32_t k = 0; k < n; k++)
		if (expert_key(m, ops[k], &key))
			keys[i++] = key;
	qsort(keys, (size_t)i, sizeof(*keys), cmp_i64);
	for (int64_t count = 0, x = 0; x < i; x++) {
		int64_t layer = keys[x] >> 40;
		if (x == 0 || keys[x] != keys[x - 1])
			count++;
		if (x + 1 < i && keys[x + 1] >> 40 == layer)
			continue;
		if (count % ep != 0) {
			st = ep_layer_error(ep, count, layer, path, err);
			break;
		}
		count = 0;
	}
	free(keys);
	return st;
}

/*
 * Expert parallelism of group g: ep >= 1; ep > 1 needs routed experts in
 * the group, ep dividing dp x cp (Megatron-Core: with the expert tensor-parallel
 * degree = tp, ep x expert-dp = dp x cp) and each layer's routed experts
 * in the group (experts / ep per rank).
 */
static enum tp_status ep_check(const struct tp_plan *p,
			       const struct tp_model *m, uint32_t g,
			       uint32_t ep, struct tp_error *err)
{
	struct tp_plan_group gcopy = p->groups.v[g];
	const struct tp_plan_group *gr = &gcopy;
	const uint32_t *ops = tp_plan_group_ops(p, g);
	struct ep_span span = {0, 0, 0, 0};
	enum tp_status st;
	char path[96];

	gcopy.ep = ep;
	snprintf(path, sizeof(path), "$.groups[%u].ep", g);
	if (gr->ep == 0)
		return tp_error_set_path(err, TP_EINPUT, path,
					 "ep=0: expected a positive "
					 "expert-parallel degree (1 = none)");
	if (gr->etp > 1 && gr->etp != gr->tp) {
		snprintf(path, sizeof(path), "$.groups[%u].etp", g);
		return tp_error_set_path(err, TP_EINPUT, path,
					 "etp=%u: the expert tensor-parallel "
					 "degree is modelled as tp (%u) or 1; "
					 "set 1 or drop the field",
					 gr->etp, gr->tp);
	}
	if (gr->etp == 1 && gr->tp > 1) {
		uint32_t r = gr->tp * gr->dp * gr->cp;
		if (!gr->sp) {
			snprintf(path, sizeof(path), "$.groups[%u].etp", g);
			return tp_error_set_path(
				err, TP_EINPUT, path,
				"etp=1 with tp=%u needs sequence parallelism "
				"(Megatron-LM refuses MoE with tensor "
				"parallelism without it): set sp to true",
				gr->tp);
		}
		if (r % gr->ep != 0)
			return tp_error_set_path(
				err, TP_EINPUT, path,
				"ep=%u does not divide the group's tp x dp x cp "
				"= %u (with etp=1 Megatron-Core spreads the "
				"experts over every rank: ep x expert-dp = tp x "
				"dp x cp); use a divisor of %u",
				gr->ep, r, r);
	} else if (gr->ep == 1) {
		return TP_OK;
	} else if ((gr->dp * gr->cp) % gr->ep != 0) {
		uint32_t lanes = gr->dp * gr->cp;
		if (gr->cp == 1)
			return tp_error_set_path(
				err, TP_EINPUT, path,
				"ep=%u does not divide the group's dp=%u "
				"(Megatron-Core spreads the experts over "
				"data-parallel replicas: ep x expert-dp = dp); "
				"use a divisor of %u",
				gr->ep, gr->dp, gr->dp);
		return tp_error_set_path(
			err, TP_EINPUT, path,
			"ep=%u does not divide the group's dp x cp = %u "
			"(Megatron-Core spreads the experts over the data- and "
			"context-parallel ranks: ep x expert-dp = dp x cp); use "
			"a divisor of %u",
			gr->ep, lanes, lanes);
	}
	for (uint32_t k = 0; k < gr->n_ops; k++) {
		int64_t key, layer, j;
		if (!expert_key(m, ops[k], &key))
			continue;
		layer = key >> 40;
		j = key & (((int64_t)1 << 40) - 1);
		if (span.n_ex++ == 0 || layer < span.lo)
			span.lo = layer;
		if (span.n_ex == 1 || layer > span.hi)
			span.hi = layer;
		if (j > span.jmax)
			span.jmax = j;
	}
	if (span.n_ex == 0) {
		if (gr->ep <= 1)
			snprintf(path, sizeof(path), "$.groups[%u].etp", g);
		st = gr->ep > 1
			     ? tp_error_set_path(
				   err, TP_EINPUT, path,
				   "ep=%u but the group has no routed experts "
				   "(ops \"...expert<j>...\"); use ep=1",
				   gr->ep)
			     : tp_error_set_path(
				   err, TP_EINPUT, path,
				   "etp=1 but the group has no routed experts "
				   "(ops \"...expert<j>...\"); drop etp");
		return st;
	}
	return ep_layers_divide(m, ops, gr->n_ops, &span, gr->ep, path, err);
}

static enum tp_status validate_ep(const struct tp_plan *p,
				  const struct tp_model *m, uint32_t g,
				  struct tp_error *err)
{
	return ep_check(p, m, g, p->groups.v[g].ep, err);
}

bool tp_plan_ep_fits(const struct tp_plan *p, const struct tp_model *m,
		     uint32_t g, uint32_t ep)
{
	struct tp_error e;

	return ep_check(p, m, g, ep, &e) == TP_OK;
}

/* Why a group's context-parallel degree cp is refused (path names it). */
static enum tp_status cp_error(const struct tp_plan *p,
			       const struct tp_model *m, uint32_t cp,
			       const char *path, struct tp_error *err)
{
	if (cp != p->groups.v[0].cp)
		return tp_error_set_path(
			err, TP_EINPUT, path,
			"cp=%u differs from the first group's cp=%u; every "
			"group of a plan splits the sequence the same way",
			cp, p->groups.v[0].cp);
	if (m->seq_len <= 0)
		return tp_error_set_path(err, TP_EINPUT, path,
					 "cp=%u: context parallelism splits "
					 "the sequence, and the model has no "
					 "sequence length; use cp=1",
					 cp);
	/* Megatron-Core cuts every sequence into 2*cp chunks and gives rank
	 * c chunks c and 2cp-1-c, so that causal attention costs every rank
	 * the same (load balancing). */
	return tp_error_set_path(err, TP_EINPUT, path,
				 "cp=%u: the sequence of %lld tokens does not "
				 "split into 2*cp = %u equal chunks (causal "
				 "load balancing); use a cp whose double "
				 "divides %lld",
				 cp, (long long)m->seq_len, 2 * cp,
				 (long long)m->seq_len);
}

/* The plan's own fields: groups, batch, micro-batches, ZeRO, bucket,
 * expert settings, virtual stages. */
static enum tp_status validate_fields(const struct tp_plan *p,
				      const struct tp_model *m,
				      struct tp_error *err)
{
	if (p->groups.n == 0)
		return tp_error_set_path(err, TP_EINPUT, "$.groups",
					 "the plan has no groups");
	if (p->global_batch != m->global_batch)
		return tp_error_set_path(
			err, TP_EINPUT, "$.global_batch_size",
			"the plan's global batch (%lld) differs from the "
			"model's (%lld); re-plan or fix the model",
			(long long)p->global_batch, (long long)m->global_batch);
	if (p->micro_batches > TP_PLAN_MAX_MICRO_BATCHES)
		return tp_error_set_path(
			err, TP_EINPUT, "$.micro_batches",
			"%u micro-batches: the simulator runs each one and "
			"takes at most %u; use larger micro-batches",
			p->micro_batches, TP_PLAN_MAX_MICRO_BATCHES);
	if (p->micro_batches == 0 ||
	    p->global_batch % (int64_t)p->micro_batches != 0)
		return tp_error_set_path(
			err, TP_EINPUT, "$.micro_batches",
			"%u micro-batches do not divide the global batch of "
			"%lld samples; pick a divisor",
			p->micro_batches, (long long)p->global_batch);
	if (p->zero > 3)
		return tp_error_set_path(err, TP_EINPUT, "$.zero",
					 "ZeRO stage %u: expected 0 to 3",
					 p->zero);
	if (!(p->grad_bucket_bytes >= 0) || !isfinite(p->grad_bucket_bytes))
		return tp_error_set_path(err, TP_EINPUT, "$.grad_bucket_bytes",
					 "a gradient bucket of %g bytes: "
					 "expected a positive size",
					 p->grad_bucket_bytes);
	if (!(p->expert_imbalance == 0 || p->expert_imbalance >= 1) ||
	    !isfinite(p->expert_imbalance) || p->expert_imbalance > 64)
		return tp_error_set_path(err, TP_EINPUT, "$.expert_imbalance",
					 "an expert load imbalance of %g: "
					 "expected the busiest rank's load "
					 "over the mean, from 1 to 64",
					 p->expert_imbalance);
	if (!(p->expert_capacity_factor == 0 ||
	      p->expert_capacity_factor >= 1) ||
	    !isfinite(p->expert_capacity_factor) ||
	    p->expert_capacity_factor > 64)
		return tp_error_set_path(err, TP_EINPUT,
					 "$.expert_capacity_factor",
					 "an expert capacity factor of %g: "
					 "expected 1 to 64 (or 0: dropless)",
					 p->expert_capacity_factor);
	if (p->virtual_stages == 0 ||
	    (p->virtual_stages > 1 &&
	     p->schedule != TP_SCHEDULE_INTERLEAVED))
		return tp_error_set_path(err, TP_EINPUT, "$.virtual_stages",
					 "virtual stages > 1 need the "
					 "interleaved schedule");
	return TP_OK;
}

/* What validating the groups of a plan shares: owner[op] (the group
 * holding it, TP_NONE), seen[device] (last group + 1 listing it). */
struct vctx {
	const struct tp_plan *p;
	const struct tp_model *m;
	const struct tp_cluster *c;
	uint32_t *owner, *seen;
	double mb; /* samples per micro-batch */
};

/* Group g's shape: ops, degrees (or its mixed replicas), context and
 * sequence parallelism. */
static enum tp_status validate_shape(const struct vctx *x, uint32_t g,
				     struct tp_error *err)
{
	const struct tp_plan *p = x->p;
	const struct tp_plan_group *gr = &p->groups.v[g];
	enum tp_status st;
	char path[96];

	if (gr->n_ops == 0) {
		snprintf(path, sizeof(path), "$.groups[%u].ops", g);
		return tp_error_set_path(err, TP_EINPUT, path,
					 "a group needs at least one op");
	}
	if (gr->mixed) {
		if ((st = mixed_check(p, g, err)))
			return st;
	} else if (gr->dp == 0 || gr->tp == 0 || gr->cp == 0 ||
		   (uint64_t)gr->dp * gr->cp * gr->tp != gr->n_devices) {
		snprintf(path, sizeof(path), "$.groups[%u]", g);
		if (gr->cp == 1)
			return tp_error_set_path(
				err, TP_EINPUT, path,
				"dp (%u) x tp (%u) must equal the "
				"number of devices (%u)",
				gr->dp, gr->tp, gr->n_devices);
		return tp_error_set_path(
			err, TP_EINPUT, path,
			"dp (%u) x cp (%u) x tp (%u) must "
			"equal the number of devices (%u)",
			gr->dp, gr->cp, gr->tp, gr->n_devices);
	}
	if (gr->cp != p->groups.v[0].cp ||
	    (gr->cp > 1 && (x->m->seq_len <= 0 ||
			    x->m->seq_len % (2 * (int64_t)gr->cp)))) {
		snprintf(path, sizeof(path), "$.groups[%u].cp", g);
		return cp_error(p, x->m, gr->cp, path, err);
	}
	if (gr->sp && gr->tp < 2) {
		snprintf(path, sizeof(path), "$.groups[%u].sp", g);
		return tp_error_set_path(err, TP_EINPUT, path,
					 "sequence parallelism needs "
					 "tp > 1");
	}
	return TP_OK;
}

/* Group g's ops: in range, in no other group, tp dividing their units;
 * marks them in x->owner. */
static enum tp_status validate_ops(const struct vctx *x, uint32_t g,
				   struct tp_error *err)
{
	const struct tp_model *m = x->m;
	const struct tp_plan_group *gr = &x->p->groups.v[g];
	const uint32_t *ops = tp_plan_group_ops(x->p, g);
	uint32_t nops = (uint32_t)m->ops.n;
	char path[96];

	for (uint32_t k = 0; k < gr->n_ops; k++) {
		uint32_t o = ops[k];
		if (o >= nops) {
			snprintf(path, sizeof(path), "$.groups[%u].ops[%u]", g,
				 k);
			return tp_error_set_path(err, TP_EINPUT, path,
						 "op index %u out of range", o);
		}
		if (x->owner[o] != TP_NONE) {
			snprintf(path, sizeof(path), "$.groups[%u].ops[%u]", g,
				 k);
			return tp_error_set_path(
				err, TP_EINPUT, path,
				"op \"%s\" is already in group %u; "
				"every op belongs to exactly one group",
				m->ops.v[o].name, x->owner[o]);
		}
		x->owner[o] = g;
		if (gr->tp > 1 && m->ops.v[o].tp_units &&
		    m->ops.v[o].tp_units % gr->tp != 0) {
			snprintf(path, sizeof(path), "$.groups[%u].tp", g);
			return tp_error_set_path(
				err, TP_EINPUT, path,
				"tp=%u does not divide the %u units "
				"(heads or channels) of op \"%s\"; use "
				"a divisor of %u",
				gr->tp, m->ops.v[o].tp_units, m->ops.v[o].name,
				m->ops.v[o].tp_units);
		}
	}
	return TP_OK;
}

/* Group g's devices: in range, each once; marks them in x->seen. */
static enum tp_status validate_devices(const struct vctx *x, uint32_t g,
				       struct tp_error *err)
{
	const struct tp_plan_group *gr = &x->p->groups.v[g];
	const uint32_t *devs = tp_plan_group_devs(x->p, g);
	uint32_t ndev = (uint32_t)x->c->devices.n;
	char path[96];

	for (uint32_t k = 0; k < gr->n_devices; k++) {
		uint32_t d = devs[k];
		if (d >= ndev) {
			snprintf(path, sizeof(path),
				 "$.groups[%u].devices[%u]", g, k);
			return tp_error_set_path(err, TP_EINPUT, path,
						 "device index %u out of range",
						 d);
		}
		if (x->seen[d] == g + 1) {
			snprintf(path, sizeof(path),
				 "$.groups[%u].devices[%u]", g, k);
			return tp_error_set_path(
				err, TP_EINPUT, path,
				"device \"%s\" appears twice in the group",
				x->c->devices.v[d].name);
		}
		x->seen[d] = g + 1;
	}
	return TP_OK;
}

/* Group g's shares: a whole number of samples, at least 1, per replica,
 * summing to the micro-batch. */
static enum tp_status validate_shares(const struct vctx *x, uint32_t g,
				      struct tp_error *err)
{
	const struct tp_plan_group *gr = &x->p->groups.v[g];
	const double *sh = tp_plan_group_shares(x->p, g);
	double sum = 0, mb = x->mb;
	char path[96];

	for (uint32_t r = 0; r < gr->dp; r++) {
		double samples = sh[r] * mb;
		if (!(sh[r] > 0) || !isfinite(sh[r]) || samples < 1 - 1e-6 ||
		    fabs(samples - round(samples)) > 1e-6 * mb) {
			snprintf(path, sizeof(path), "$.groups[%u].shares[%u]",
				 g, r);
			return tp_error_set_path(
				err, TP_EINPUT, path,
				"replica %u gets %.4g samples of each "
				"%.6g-sample micro-batch; every replica "
				"needs a whole number, at least 1 "
				"(fewer micro-batches or fewer "
				"replicas)",
				r, samples, mb);
		}
		sum += sh[r];
	}
	if (fabs(sum - 1.0) > 1e-6) {
		snprintf(path, sizeof(path), "$.groups[%u].shares", g);
		return tp_error_set_path(err, TP_EINPUT, path,
					 "shares sum to %.6g, expected 1", sum);
	}
	return TP_OK;
}

/* Why sufficient-factor broadcasting cannot apply to group g, or NULL.
 * It replaces an all-reduce of whole gradients among data-parallel
 * replicas (src/compress/sfb.c): nothing to replace otherwise. */
static const char *sfb_refusal(const struct tp_plan *p,
			       const struct tp_plan_group *gr)
{
	if (p->compression == TP_COMPRESSION_OFF)
		return "the plan's compression is \"off\"";
	if (gr->dp < 2)
		return "it has a single replica (dp < 2)";
	if (gr->tp > 1)
		return "it is tensor parallel (tp > 1)";
	if (gr->cp > 1)
		return "it is context parallel (cp > 1)";
	if (gr->sync == TP_SYNC_PS)
		return "it synchronises through a parameter server (use ring "
		       "or hierarchical)";
	if (p->zero > 0)
		return "ZeRO shards its gradients (zero > 0)";
	return NULL;
}

/* Group g's compression: sufficient-factor broadcasting where it
 * applies, of its own ops with parameters; lossy compression opted in
 * and without context parallelism. */
static enum tp_status validate_compression(const struct vctx *x, uint32_t g,
					   struct tp_error *err)
{
	const struct tp_plan *p = x->p;
	const struct tp_model *m = x->m;
	const struct tp_plan_group *gr = &p->groups.v[g];
	const char *why;
	char path[96];

	if (gr->n_sfb > 0 && (why = sfb_refusal(p, gr))) {
		snprintf(path, sizeof(path),
			 "$.groups[%u].compression.sfb_ops", g);
		return tp_error_set_path(
			err, TP_EINPUT, path,
			"sufficient-factor broadcasting cannot "
			"apply to this group: %s; remove "
			"sfb_ops or change the group",
			why);
	}
	if (gr->lossy != TP_LOSSY_NONE && gr->cp > 1) {
		snprintf(path, sizeof(path), "$.groups[%u].compression.lossy",
			 g);
		return tp_error_set_path(
			err, TP_EINPUT, path,
			"lossy gradient compression is not modelled "
			"with context parallelism (cp > 1); use "
			"\"lossy\": \"none\"");
	}
	if (gr->lossy != TP_LOSSY_NONE &&
	    p->compression != TP_COMPRESSION_LOSSY) {
		snprintf(path, sizeof(path), "$.groups[%u].compression.lossy",
			 g);
		return tp_error_set_path(
			err, TP_EINPUT, path,
			"lossy gradient compression needs the plan's "
			"\"compression\": \"lossy\" (opt-in)");
	}
	for (uint32_t k = 0; k < gr->n_sfb; k++) {
		uint32_t o = tp_plan_group_sfb(p, g)[k];
		snprintf(path, sizeof(path),
			 "$.groups[%u].compression.sfb_ops[%u]", g, k);
		if (o >= m->ops.n || x->owner[o] != g)
			return tp_error_set_path(
				err, TP_EINPUT, path,
				"compressed op is not in this group");
		if (!(m->ops.v[o].param_bytes > 0))
			return tp_error_set_path(
				err, TP_EINPUT, path,
				"op \"%s\" has no parameters: nothing to "
				"compress",
				m->ops.v[o].name);
	}
	return TP_OK;
}

enum tp_status tp_plan_validate(const struct tp_plan *p,
				const struct tp_model *m,
				const struct tp_cluster *c,
				struct tp_error *err)
{
	uint32_t nops = (uint32_t)m->ops.n;
	struct vctx x = {p, m, c, NULL, NULL, 0};
	enum tp_status st;

	if ((st = validate_fields(p, m, err)))
		return st;
	x.mb = (double)p->global_batch / p->micro_batches;
	x.owner = tp_calloc(nops, sizeof(*x.owner));
	x.seen = tp_calloc(c->devices.n, sizeof(*x.seen));
	if (!x.owner || !x.seen) {
		st = tp_error_set(err, TP_ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < nops; i++)
		x.owner[i] = TP_NONE;
	for (uint32_t g = 0; g < p->groups.n && !st; g++) {
		if (!(st = validate_shape(&x, g, err)) &&
		    !(st = validate_ops(&x, g, err)) &&
		    !(st = validate_devices(&x, g, err)) &&
		    !(st = validate_ep(p, m, g, err)) &&
		    !(st = validate_shares(&x, g, err)))
			st = validate_compression(&x, g, err);
	}
	for (uint32_t i = 0; i < nops && !st; i++)
		if (x.owner[i] == TP_NONE)
			st = tp_error_set_path(err, TP_EINPUT, "$.groups",
					       "op \"%s\" is in no group; every "
					       "op belongs to exactly one group",
					       m->ops.v[i].name);
out:
	free(x.owner);
	free(x.seen);
	return st;
}

static int parse_in(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

static const char *const sync_names[] = {"ring", "hierarchical", "ps"};
static const char *const rec_names[] = {"none", "selective", "full"};
static const char *const sched_names[] = {"gpipe", "1f1b", "interleaved",
						  "zb-h1"};
static const char *const comp_names[] = {"off", "lossless", "lossy"};
static const char *const lossy_names[] = {"none", "fp16", "powersgd"};

const char *tp_sync_name(enum tp_sync s)
{
	return (unsigned)s < TP_SYNC_COUNT ? sync_names[s] : "?";
}
int tp_sync_parse(const char *s)
{
	return parse_in(sync_names, TP_SYNC_COUNT, s);
}
const char *tp_recompute_name(enum tp_recompute r)
{
	return (unsigned)r < TP_RECOMPUTE_COUNT ? rec_names[r] : "?";
}
int tp_recompute_parse(const char *s)
{
	return parse_in(rec_names, TP_RECOMPUTE_COUNT, s);
}
const char *tp_schedule_name(enum tp_schedule s)
{
	return (unsigned)s < TP_SCHEDULE_COUNT ? sched_names[s] : "?";
}
int tp_schedule_parse(const char *s)
{
	return parse_in(sched_names, TP_SCHEDULE_COUNT, s);
}
const char *tp_compression_name(enum tp_compression c)
{
	return (unsigned)c < TP_COMPRESSION_COUNT ? comp_names[c] : "?";
}
int tp_compression_parse(const char *s)
{
	return parse_in(comp_names, TP_COMPRESSION_COUNT, s);
}
const char *tp_lossy_name(enum tp_lossy l)
{
	return (unsigned)l < TP_LOSSY_COUNT ? lossy_names[l] : "?";
}
int tp_lossy_parse(const char *s)
{
	return parse_in(lossy_names, TP_LOSSY_COUNT, s);
}

double tp_plan_price_per_hour(const struct tp_plan *p,
			      const struct tp_cluster *c, uint8_t *mark)
{
	uint32_t nd = (uint32_t)c->devices.n;
	uint8_t *own = mark ? NULL : calloc(nd + 1, 1);
	double per_hour = 0;

	if (!mark && !(mark = own))
		return 0;
	for (size_t i = 0; i < p->devs.n; i++)
		if (p->devs.v[i] < nd && !mark[p->devs.v[i]]) {
			double price =
			    c->types.v[c->devices.v[p->devs.v[i]].type]
				.price_per_hour;
			mark[p->devs.v[i]] = 1;
			per_hour = per_hour >= 0 && price > 0
					   ? per_hour + price
					   : -1;
		}
	for (size_t i = 0; i < p->devs.n; i++)
		if (p->devs.v[i] < nd)
			mark[p->devs.v[i]] = 0;
	free(own);
	return per_hour > 0 ? per_hour : 0;
}

/* --- content hash --------------------------------------------------------- */

/* The fields tp_plan_content_hash reads; a new one changes these sizes
 * (on the 64-bit ABI the project builds on) and must be hashed. */
_Static_assert(sizeof(void *) != 8 || sizeof(struct tp_plan_group) == 88,
	       "struct tp_plan_group changed: hash the new field in "
	       "tp_plan_content_hash and update this size");
_Static_assert(sizeof(void *) != 8 ||
		       offsetof(struct tp_plan, summary) == 264,
	       "struct tp_plan changed: hash the new field in "
	       "tp_plan_content_hash and update this offset");

static uint64_t hmix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 31);
}

static uint64_t hdouble(uint64_t h, double d)
{
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	return hmix(h, v);
}

/* The n words of base from first; base may be NULL when n is 0 (an empty
 * vector: NULL + 0 is undefined behaviour, so the pointer is formed only
 * when there are words). */
static uint64_t hwords(uint64_t h, const uint32_t *base, size_t first,
		       uint32_t n)
{
	const uint32_t *v;
	uint32_t i = 0;

	h = hmix(h, n);
	if (!n)
		return h;
	v = base + first;
	for (; i + 1 < n; i += 2)
		h = hmix(h, (uint64_t)v[i] | (uint64_t)v[i + 1] << 32);
	if (i < n)
		h = hmix(h, v[i]);
	return h;
}

uint64_t tp_plan_content_hash(const struct tp_plan *p)
{
	uint64_t h = 0x2545f4914f6cdd1dull;

	h = hmix(h, (uint64_t)p->groups.n);
	for (size_t g = 0; g < p->groups.n; g++) {
		const struct tp_plan_group *q = &p->groups.v[g];
		h = hwords(h, p->ops.v, q->op_first, q->n_ops);
		h = hwords(h, p->devs.v, q->dev_first, q->n_devices);
		h = hmix(h, q->dp);
		for (uint32_t r = 0; r < q->dp; r++)
			h = hdouble(h, p->shares.v[q->share_first + r]);
		h = hmix(h, (uint64_t)q->tp | (uint64_t)q->cp << 32);
		h = hmix(h, (uint64_t)q->sync | (uint64_t)q->recompute << 16 |
				    (uint64_t)q->sp << 32 |
				    (uint64_t)q->mixed << 40 |
				    (uint64_t)q->lossy << 48);
		h = hmix(h, (uint64_t)q->ep | (uint64_t)q->etp << 32);
		h = hwords(h, p->sfb.v, q->sfb_first, q->n_sfb);
		h = hdouble(h, q->sfb_saved_bytes);
		h = hmix(h, q->powersgd_rank);
		if (q->mixed)
			h = hwords(h, p->rtp.v, q->rtp_first, q->dp);
	}
	h = hmix(h, (uint64_t)p->global_batch);
	h = hmix(h, (uint64_t)p->micro_batches | (uint64_t)p->schedule << 32);
	h = hmix(h, (uint64_t)p->virtual_stages | (uint64_t)p->zero << 32);
	h = hmix(h, p->compression);
	h = hdouble(h, p->grad_bucket_bytes);
	h = hdouble(h, p->expert_imbalance);
	h = hdouble(h, p->expert_capacity_factor);
	for (size_t i = 0; i < sizeof(p->runtime) && p->runtime[i]; i++)
		h = hmix(h, (unsigned char)p->runtime[i]);
	return h;
}
