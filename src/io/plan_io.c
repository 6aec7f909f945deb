/*
 * plan_io.c - tagplan-plan/1 <-> struct tp_plan (README section 3).
 *
 * One reader serves two modes: resolving (model, cluster and plan given:
 * names become indices, then tp_plan_validate) and structural
 * (tp_plan_check: only the document's own consistency).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonw.h"
#include "core/runtime.h"
#include "core/strmap.h"
#include "io_int.h"

static const char *const plan_fields[] = {
    "format",	     "model",	 "topology",	   "global_batch_size",
    "micro_batches", "schedule", "virtual_stages", "zero",
    "compression",   "grad_bucket_bytes", "runtime", "groups", "summary",
    "expert_imbalance", "expert_capacity_factor", NULL};
static const char *const group_fields[] = {
    "name", "ops",	 "devices", "tp",	   "dp", "cp",
    "shares", "sync", "recompute", "sp",	    "compression", "ep",
    "replica_tp", "etp", NULL};
static const char *const range_fields[] = {"from", "to", NULL};
static const char *const gcomp_fields[] = {"sfb_ops", "saved_bytes", "lossy",
					   "powersgd_rank", NULL};
static const char *const summary_fields[] = {"feasible",
					     "iteration_time_s",
					     "throughput_samples_per_s",
					     "tokens_per_s",
					     "mfu",
					     "tflops_per_device",
					     "cost_per_iteration_usd",
					     "cost_per_million_tokens_usd",
					     "infeasible_reason",
					     "precision",
					     "basis",
					     "devices",
					     "baselines",
					     "search",
					     "provenance",
					     "runtime_fit",
					     NULL};
static const char *const fit_fields[] = {"note", "unconstrained", "idle",
					 NULL};
static const char *const unc_fields[] = {"iteration_time_s", "speedup",
					 "needs", "why", "runtimes", NULL};
static const char *const idle_fields[] = {
	"devices", "types", "all_devices_iteration_time_s", "why", NULL};
static const char *const sdev_fields[] = {"device", "peak_memory_bytes",
					  "busy_fraction", NULL};
static const char *const base_fields[] = {"feasible", "iteration_time_s",
					  "speedup", NULL};
static const char *const search_fields[] = {
    "playouts", "simulations", "seed",	 "threads",
    "gnn",	"weights",     "gnn_declined", "timing", "objective",
    "max_iter_time_s", NULL};
static const char *const timing_fields[] = {"search_seconds", "playouts_per_s",
					    NULL};
static const char *const prov_fields[] = {"tagplan_version", "model_file",
					  "model_sha256",    "topology_file",
					  "topology_sha256", "model_path",
					  "topology_path",   "runtime_path",
					  "runtime_sha256",  NULL};

static int parse_schedule(const char *s)
{
	return tp_schedule_parse(s);
}
static int parse_compression(const char *s)
{
	return tp_compression_parse(s);
}
static int parse_sync(const char *s)
{
	return tp_sync_parse(s);
}
static int parse_recompute(const char *s)
{
	return tp_recompute_parse(s);
}
static int parse_lossy(const char *s)
{
	return tp_lossy_parse(s);
}

struct reader {
	struct tp_jctx *j;
	const struct tp_model *m;   /* NULL: structural mode */
	const struct tp_cluster *c; /* NULL: structural mode */
	struct tp_plan *p;	    /* NULL: structural mode */
	struct tp_plan_outline *ol; /* may be NULL */
	struct tp_strmap all_devs;  /* names across groups, for ol */
	TP_VEC(uint32_t) ops, devs, sfb;
	TP_VEC(double) shares;
	TP_VEC(uint32_t) rtp; /* the group's replica_tp (n 0: none) */
};

static enum tp_status nomem(struct reader *r)
{
	return tp_error_set(r->j->err, TP_ENOMEM, "out of memory");
}

static enum tp_status unknown_device(struct reader *r, const char *name)
{
	struct tp_strbuf sb;
	const char **names;
	enum tp_status st;
	size_t n = r->c->devices.n;

	names = tp_calloc(n + 1, sizeof(*names));
	if (!names)
		return nomem(r);
	for (size_t k = 0; k < n; k++)
		names[k] = r->c->devices.v[k].name;
	tp_strbuf_init(&sb);
	if (tp_io_suggest(name, names, n, 3, &sb))
		st = tp_jctx_fail(
		    r->j, NULL,
		    "unknown device \"%.100s\" (did you mean %s?); "
		    "the topology's devices are named like \"%s\"",
		    name, tp_strbuf_cstr(&sb), names[0]);
	else
		st = tp_jctx_fail(r->j, NULL,
				  "unknown device \"%.100s\"; the topology's "
				  "%zu devices are named like \"%s\" .. \"%s\"",
				  name, n, names[0], names[n - 1]);
	tp_strbuf_release(&sb);
	free(names);
	return st;
}

static enum tp_status op_index(struct reader *r, const char *key,
			       const char *name, uint32_t *idx)
{
	*idx = tp_model_find_op(r->m, name);
	if (*idx == TP_NONE)
		return tp_io_model_unknown_op(r->j, key, r->m, name);
	return TP_OK;
}

/* One element of a group's "ops": a name or a {"from","to"} range. */
static enum tp_status read_op_entry(struct reader *r, const struct tp_json *e)
{
	struct tp_jctx *j = r->j;
	enum tp_status st;

	if (e->type == TP_JSON_STRING) {
		uint32_t idx;
		if (e->str_len == 0 || e->str_len > TP_IO_NAME_MAX)
			return tp_jctx_fail(
			    j, NULL, "expected an op name (1 to %d bytes)",
			    TP_IO_NAME_MAX);
		if (!r->m)
			return TP_OK;
		if ((st = op_index(r, NULL, e->str, &idx)))
			return st;
		return tp_vec_push(&r->ops, idx) ? nomem(r) : TP_OK;
	}
	if (e->type == TP_JSON_OBJECT) {
		const char *from, *to;
		uint32_t a, b, pa, pb;
		if ((st = tp_jctx_object(j, e, "an op range", range_fields)) ||
		    (st = tp_jget_string(j, e, "from", true, TP_IO_NAME_MAX,
					 true, NULL, &from)) ||
		    (st = tp_jget_string(j, e, "to", true, TP_IO_NAME_MAX, true,
					 NULL, &to)))
			return st;
		if (!r->m)
			return TP_OK;
		if ((st = op_index(r, "from", from, &a)) ||
		    (st = op_index(r, "to", to, &b)))
			return st;
		pa = r->m->topo_pos[a];
		pb = r->m->topo_pos[b];
		if (pa > pb)
			return tp_jctx_fail(
			    j, NULL,
			    "op \"%s\" comes after op \"%s\" in "
			    "the model's topological order; swap "
			    "\"from\" and \"to\"",
			    from, to);
		if (tp_vec_reserve(&r->ops, pb - pa + 1))
			return nomem(r);
		for (uint32_t k = pa; k <= pb; k++)
			r->ops.v[r->ops.n++] = r->m->topo[k];
		return TP_OK;
	}
	return tp_jctx_fail(j, NULL,
			    "expected an op name or a range {\"from\": OP, "
			    "\"to\": OP}, found %s",
			    tp_json_type_name(e->type));
}

/* A mixed group's "replica_tp" (plan.h: one degree per replica, summing
 * to the devices, each dividing the largest) into r->rtp; its degrees:
 * tp the largest (a given "tp" must say so), cp 1, dp the replicas. */
static enum tp_status read_replica_tp(struct reader *r, const struct tp_json *g,
				      size_t n_devs, int64_t *tp,
				      int64_t *dp, int64_t *cp)
{
	struct tp_jctx *j = r->j;
	const struct tp_json *a;
	enum tp_status st;
	int64_t hi = 0, sum = 0, given;

	r->rtp.n = 0;
	if ((st = tp_jget_array(j, g, "replica_tp", false, true, &a)) || !a)
		return st;
	for (size_t k = 0; k < a->n; k++) {
		const struct tp_json *v = a->items[k];
		size_t old = tp_jctx_push_key(j, "replica_tp");
		tp_jctx_push_index(j, k);
		if (v->type != TP_JSON_NUMBER || v->num < 1 ||
		    v->num > TP_IO_MAX_DEVICES || v->num != floor(v->num))
			return tp_jctx_fail(j, NULL,
					    "expected a tensor-parallel "
					    "degree (a whole number >= 1)");
		tp_jctx_pop(j, old);
		if (tp_vec_push(&r->rtp, (uint32_t)v->num))
			return nomem(r);
		sum += (int64_t)v->num;
		if ((int64_t)v->num > hi)
			hi = (int64_t)v->num;
	}
	for (size_t k = 0; k < a->n; k++)
		if (hi % r->rtp.v[k])
			return tp_jctx_fail(j, "replica_tp",
					    "replica %zu's tp %u does not "
					    "divide the largest, %lld (the "
					    "gradient all-reduce runs over the "
					    "finest sharding)",
					    k, r->rtp.v[k], (long long)hi);
	if ((size_t)sum != n_devs)
		return tp_jctx_fail(j, "replica_tp",
				    "the replicas' degrees sum to %lld; the "
				    "group lists %zu devices",
				    (long long)sum, n_devs);
	if ((st = tp_jget_int(j, g, "tp", false, 1, TP_IO_MAX_DEVICES, hi,
			      &given)))
		return st;
	if (given != hi)
		return tp_jctx_fail(j, "tp",
				    "with replica_tp, tp is the largest "
				    "degree, %lld",
				    (long long)hi);
	if ((st = tp_jget_int(j, g, "cp", false, 1, 1, 1, cp)) ||
	    (st = tp_jget_int(j, g, "dp", false, 1, TP_IO_MAX_DEVICES,
			      (int64_t)a->n, &given)))
		return st;
	if ((size_t)given != a->n)
		return tp_jctx_fail(j, "dp",
				    "with replica_tp, dp is the number of "
				    "replicas, %zu",
				    a->n);
	*tp = hi;
	*dp = given;
	return TP_OK;
}

/* What one group of a plan file says (read_group). */
struct group_in {
	const struct tp_json *ops, *devs, *shares, *comp;
	int64_t tp, dp, cp, ep, etp;
	int sync, rec, lossy;
	bool sp;
	double saved;  /* compression.saved_bytes */
	int64_t rank;  /* compression.powersgd_rank */
};

/* The group's devices: names, each once, into r->devs when there is a
 * cluster. */
static enum tp_status read_group_devices(struct reader *r,
					 const struct tp_json *devs)
{
	struct tp_jctx *j = r->j;
	struct tp_strmap seen;
	enum tp_status st = TP_OK;

	tp_strmap_init(&seen);
	for (size_t k = 0; k < devs->n && !st; k++) {
		const char *name;
		uint32_t first;
		int put;
		size_t old = tp_jctx_push_key(j, "devices");

		tp_jctx_push_index(j, k);
		if ((st = tp_jcheck_string(j, devs->items[k],
					   TP_IO_NAME_MAX * 2, true, &name)))
			break;
		put = tp_strmap_put(&seen, name, (uint32_t)k, &first);
		if (put < 0) {
			st = nomem(r);
		} else if (put > 0) {
			st = tp_jctx_fail(j, NULL,
					  "device \"%s\" appears twice in the "
					  "group (also at index %u)",
					  name, first);
		} else if (r->c) {
			uint32_t d = tp_cluster_find_device(r->c, name);
			if (d == TP_NONE)
				st = unknown_device(r, name);
			else if (tp_vec_push(&r->devs, d))
				st = nomem(r);
		}
		if (!st)
			tp_jctx_pop(j, old);
	}
	tp_strmap_release(&seen);
	return st;
}

/* tp, cp and dp of a group without replica_tp: dp x cp x tp = the
 * group's devices. */
static enum tp_status read_degrees(struct reader *r, const struct tp_json *g,
				   struct group_in *in)
{
	struct tp_jctx *j = r->j;
	size_t n = in->devs->n;
	enum tp_status st;

	if ((st = tp_jget_int(j, g, "tp", false, 1, TP_IO_MAX_DEVICES, 1,
			      &in->tp)))
		return st;
	if (n % (size_t)in->tp)
		return tp_jctx_fail(j, "tp",
				    "tp=%lld does not divide the group's %zu "
				    "devices; use a divisor of %zu, or list "
				    "a multiple of %lld devices",
				    (long long)in->tp, n, n,
				    (long long)in->tp);
	/* cp: the context-parallel degree, 1 when absent (plan.h) */
	if ((st = tp_jget_int(j, g, "cp", false, 1, TP_IO_MAX_DEVICES, 1,
			      &in->cp)))
		return st;
	if (n % (size_t)(in->tp * in->cp))
		return tp_jctx_fail(j, "cp",
				    "cp (%lld) x tp (%lld) does not divide "
				    "the group's %zu devices",
				    (long long)in->cp, (long long)in->tp, n);
	if ((st = tp_jget_int(j, g, "dp", false, 1, TP_IO_MAX_DEVICES,
			      (int64_t)n / (in->tp * in->cp), &in->dp)))
		return st;
	if ((size_t)(in->dp * in->cp * in->tp) != n) {
		if (in->cp == 1)
			return tp_jctx_fail(j, "dp",
					    "dp (%lld) x tp (%lld) must equal "
					    "the number of devices (%zu): "
					    "give dp %zu, or leave dp out",
					    (long long)in->dp, (long long)in->tp,
					    n, n / (size_t)in->tp);
		return tp_jctx_fail(j, "dp",
				    "dp (%lld) x cp (%lld) x tp (%lld) must "
				    "equal the number of devices (%zu)",
				    (long long)in->dp, (long long)in->cp,
				    (long long)in->tp, n);
	}
	return TP_OK;
}

/* The group's shares, when given: one per replica, summing to 1, into
 * r->shares. */
static enum tp_status read_group_shares(struct reader *r,
					const struct tp_json *g,
					struct group_in *in)
{
	struct tp_jctx *j = r->j;
	const struct tp_json *shares;
	enum tp_status st;
	double sum = 0;

	if ((st = tp_jget_array(j, g, "shares", false, false, &shares)))
		return st;
	in->shares = shares;
	if (!shares)
		return TP_OK;
	if (shares->n != (size_t)in->dp)
		return tp_jctx_fail(j, "shares",
				    "expected %lld shares (one per "
				    "data-parallel replica), found %zu",
				    (long long)in->dp, shares->n);
	for (size_t k = 0; k < shares->n; k++) {
		double x;
		size_t old = tp_jctx_push_key(j, "shares");
		tp_jctx_push_index(j, k);
		if ((st = tp_jcheck_number(j, shares->items[k], TP_JNUM_POS,
					   &x)))
			return st;
		if (tp_vec_push(&r->shares, x))
			return nomem(r);
		sum += x;
		tp_jctx_pop(j, old);
	}
	if (fabs(sum - 1) > 1e-6)
		return tp_jctx_fail(j, "shares",
				    "shares sum to %.9g, expected 1", sum);
	return TP_OK;
}

/* sync, recompute, sp and ep of a group. */
static enum tp_status read_group_modes(struct reader *r,
				       const struct tp_json *g,
				       struct group_in *in)
{
	struct tp_jctx *j = r->j;
	enum tp_status st;

	if ((st = tp_jget_enum(j, g, "sync", false, parse_sync,
			       "ring | hierarchical | ps", TP_SYNC_RING,
			       &in->sync)) ||
	    (st = tp_jget_enum(j, g, "recompute", false, parse_recompute,
			       "none | selective | full", TP_RECOMPUTE_NONE,
			       &in->rec)) ||
	    (st = tp_jget_bool(j, g, "sp", false, false, &in->sp)) ||
	    (st = tp_jget_object(j, g, "compression", false, &in->comp)))
		return st;
	if (in->sp && in->tp < 2)
		return tp_jctx_fail(j, "sp",
				    "sequence parallelism needs tp > 1");
	if ((st = tp_jget_int(j, g, "ep", false, 1, TP_IO_MAX_DEVICES, 1,
			      &in->ep)) ||
	    (st = tp_jget_int(j, g, "etp", false, 1, TP_IO_MAX_DEVICES, 0,
			      &in->etp)))
		return st;
	if (in->etp == in->tp)
		in->etp = 0;
	if (in->etp > 0) /* etp 1 (or refused) and ep: tp_plan_validate */
		return TP_OK;
	if (in->dp % in->ep != 0)
		return tp_jctx_fail(j, "ep",
				    "ep=%lld does not divide dp=%lld (Megatron-"
				    "Core spreads the experts over data-"
				    "parallel replicas: ep x expert-dp = dp); "
				    "use a divisor of %lld",
				    (long long)in->ep, (long long)in->dp,
				    (long long)in->dp);
	return TP_OK;
}

/* The group's compression object: saved bytes, lossy mode, PowerSGD
 * rank, and its sufficient-factor ops (the group's own) into r->sfb. */
static enum tp_status read_group_compression(struct reader *r,
					     struct group_in *in)
{
	struct tp_jctx *j = r->j;
	const struct tp_json *comp = in->comp, *sfb;
	enum tp_status st;
	size_t o2 = tp_jctx_push_key(j, "compression");

	if ((st = tp_jctx_object(j, comp, "a group's compression",
				 gcomp_fields)) ||
	    (st = tp_jget_array(j, comp, "sfb_ops", false, false, &sfb)) ||
	    (st = tp_io_get_quantity(j, comp, "saved_bytes", false,
				     TP_JNUM_NONNEG, TP_IOQ_PLAN_BYTES, 0,
				     &in->saved)) ||
	    (st = tp_jget_enum(j, comp, "lossy", false, parse_lossy,
			       "none | fp16 | powersgd", TP_LOSSY_NONE,
			       &in->lossy)) ||
	    (st = tp_jget_int(j, comp, "powersgd_rank", false, 0, UINT32_MAX,
			      0, &in->rank)))
		return st;
	for (size_t k = 0; sfb && k < sfb->n; k++) {
		const char *name;
		uint32_t idx;
		bool mine = false;
		size_t old = tp_jctx_push_key(j, "sfb_ops");
		tp_jctx_push_index(j, k);
		if ((st = tp_jcheck_string(j, sfb->items[k], TP_IO_NAME_MAX,
					   true, &name)))
			return st;
		if (r->m) {
			if ((st = op_index(r, NULL, name, &idx)))
				return st;
			for (size_t q = 0; q < r->ops.n && !mine; q++)
				mine = r->ops.v[q] == idx;
			if (!mine)
				return tp_jctx_fail(
				    j, NULL,
				    "op \"%s\" is not in this group; "
				    "only a group's own ops can use "
				    "its compression",
				    name);
			if (tp_vec_push(&r->sfb, idx))
				return nomem(r);
		}
		tp_jctx_pop(j, old);
	}
	tp_jctx_pop(j, o2);
	return TP_OK;
}

/* The group's line of the outline (r->ol). */
static enum tp_status outline_group(struct reader *r,
				    const struct group_in *in)
{
	struct tp_plan_outline_group og;

	memset(&og, 0, sizeof(og));
	og.n_op_entries = (uint32_t)in->ops->n;
	for (size_t k = 0; k < in->ops->n; k++)
		og.n_ranges += in->ops->items[k]->type == TP_JSON_OBJECT;
	og.n_devices = (uint32_t)in->devs->n;
	og.dp = (uint32_t)in->dp;
	og.cp = (uint32_t)in->cp;
	og.tp = (uint32_t)in->tp;
	og.sync = (enum tp_sync)in->sync;
	og.recompute = (enum tp_recompute)in->rec;
	og.sp = in->sp;
	if (tp_vec_push(&r->ol->groups, og))
		return nomem(r);
	for (size_t k = 0; k < in->devs->n; k++)
		if (tp_strmap_put(&r->all_devs, in->devs->items[k]->str,
				  (uint32_t)k, NULL) < 0)
			return nomem(r);
	r->ol->n_distinct_devices = (uint32_t)r->all_devs.n;
	return TP_OK;
}

/* The group added to the plan (r->p). */
static enum tp_status plan_group(struct reader *r, const struct group_in *in)
{
	struct tp_jctx *j = r->j;
	struct tp_plan_group *gr;
	struct tp_plan_degrees deg = {(uint32_t)in->dp, (uint32_t)in->cp,
				      (uint32_t)in->tp};
	struct tp_plan_replicas rep = {(uint32_t)r->rtp.n, r->rtp.v};
	const double *shares = in->shares ? r->shares.v : NULL;
	enum tp_status st;

	if ((st = r->rtp.n ? tp_plan_add_group_mixed(
				     r->p, r->ops.v, (uint32_t)r->ops.n,
				     r->devs.v, (uint32_t)r->devs.n, &rep,
				     shares, j->err)
			   : tp_plan_add_group_degrees(
				     r->p, r->ops.v, (uint32_t)r->ops.n,
				     r->devs.v, (uint32_t)r->devs.n, &deg,
				     shares, j->err)))
		return tp_io_wrap(j, NULL, st);
	if (tp_vec_reserve(&r->p->sfb, r->sfb.n))
		return nomem(r);
	gr = &r->p->groups.v[r->p->groups.n - 1];
	gr->sync = (enum tp_sync)in->sync;
	gr->recompute = (enum tp_recompute)in->rec;
	gr->sp = in->sp;
	gr->ep = (uint32_t)in->ep;
	gr->etp = (uint32_t)in->etp;
	gr->sfb_first = (uint32_t)r->p->sfb.n;
	gr->n_sfb = (uint32_t)r->sfb.n;
	for (size_t k = 0; k < r->sfb.n; k++)
		r->p->sfb.v[r->p->sfb.n++] = r->sfb.v[k];
	gr->sfb_saved_bytes = in->saved;
	gr->lossy = (enum tp_lossy)in->lossy;
	gr->powersgd_rank = (uint32_t)in->rank;
	return TP_OK;
}

static enum tp_status read_group(struct reader *r, const struct tp_json *g)
{
	struct tp_jctx *j = r->j;
	struct group_in in;
	const char *gname;
	enum tp_status st;

	memset(&in, 0, sizeof(in));
	in.lossy = TP_LOSSY_NONE;
	r->ops.n = r->devs.n = r->sfb.n = r->shares.n = 0;
	if ((st = tp_jctx_object(j, g, "a group", group_fields)) ||
	    (st = tp_io_get_name(j, g, "name", false, TP_IO_NAME_MAX, "",
				 &gname)) ||
	    (st = tp_jget_array(j, g, "ops", true, true, &in.ops)) ||
	    (st = tp_jget_array(j, g, "devices", true, true, &in.devs)))
		return st;
	for (size_t k = 0; k < in.ops->n; k++) {
		size_t old = tp_jctx_push_key(j, "ops");
		tp_jctx_push_index(j, k);
		if ((st = read_op_entry(r, in.ops->items[k])))
			return st;
		tp_jctx_pop(j, old);
	}
	if ((st = read_group_devices(r, in.devs)) ||
	    (st = read_replica_tp(r, g, in.devs->n, &in.tp, &in.dp, &in.cp)) ||
	    (!r->rtp.n && (st = read_degrees(r, g, &in))) ||
	    (st = read_group_shares(r, g, &in)) ||
	    (st = read_group_modes(r, g, &in)) ||
	    (in.comp && (st = read_group_compression(r, &in))) ||
	    (r->ol && (st = outline_group(r, &in))) ||
	    (r->p && (st = plan_group(r, &in))))
		return st;
	return TP_OK;
}

static bool is_hex64(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (!((s[n] >= '0' && s[n] <= '9') ||
		      (s[n] >= 'a' && s[n] <= 'f')))
			return false;
	return n == 64;
}

static enum tp_status copy_str(struct tp_jctx *j, const struct tp_json *obj,
			       const char *key, char *dst, size_t size)
{
	const char *s;
	enum tp_status st;

	if ((st = tp_jget_string(j, obj, key, false, size - 1, false, "", &s)))
		return st;
	snprintf(dst, size, "%s", s);
	return TP_OK;
}

static enum tp_status read_u64(struct tp_jctx *j, const struct tp_json *obj,
			       const char *key, uint64_t *out)
{
	const struct tp_json *v = tp_json_get(obj, key);
	int64_t x;
	enum tp_status st;

	if (v && v->type == TP_JSON_STRING) {
		char *end;
		unsigned long long u;
		if (!v->str_len || v->str[0] < '0' || v->str[0] > '9')
			return tp_jctx_fail(
			    j, key,
			    "expected an integer >= 0 (a number, "
			    "or a decimal string above 2^53)");
		u = strtoull(v->str, &end, 10);
		if (*end)
			return tp_jctx_fail(
			    j, key,
			    "expected an integer >= 0 (a number, "
			    "or a decimal string above 2^53)");
		*out = u;
		return TP_OK;
	}
	if ((st = tp_jget_int(j, obj, key, false, 0, INT64_MAX, 0, &x)))
		return st;
	*out = (uint64_t)x;
	return TP_OK;
}

/* summary."runtime_fit" (optional). */
/* summary.runtime_fit.unconstrained.runtimes: names joined by ", " into
 * out (the summary's form). */
static enum tp_status read_runtimes(struct tp_jctx *j,
				    const struct tp_json *unc, char *out,
				    size_t size)
{
	const struct tp_json *a;
	enum tp_status st;
	size_t used = 0;

	out[0] = '\0';
	if ((st = tp_jget_array(j, unc, "runtimes", false, false, &a)) || !a)
		return st;
	for (size_t k = 0; k < a->n; k++) {
		const char *name;
		size_t o = tp_jctx_push_key(j, "runtimes");
		tp_jctx_push_index(j, k);
		if ((st = tp_jcheck_string(j, a->items[k], 63, true, &name)))
			return st;
		if (strchr(name, ','))
			return tp_jctx_fail(j, NULL,
					    "a runtime name has no comma; "
					    "give one name per element");
		if (used + strlen(name) + 3 > size)
			return tp_jctx_fail(j, NULL,
					    "more runtime names than fit in "
					    "%zu bytes; list each once",
					    size - 1);
		used += (size_t)snprintf(out + used, size - used, "%s%s",
					 used ? ", " : "", name);
		tp_jctx_pop(j, o);
	}
	return TP_OK;
}

static enum tp_status read_fit(struct tp_jctx *j, const struct tp_json *s,
			       struct tp_plan_summary *sum)
{
	const struct tp_json *fit, *unc, *idle, *needs;
	enum tp_status st;
	size_t old;
	double x;
	int64_t n;

	if ((st = tp_jget_object(j, s, "runtime_fit", false, &fit)) || !fit)
		return st;
	old = tp_jctx_push_key(j, "runtime_fit");
	if ((st = tp_jctx_object(j, fit, "the runtime fit", fit_fields)) ||
	    (st = copy_str(j, fit, "note", sum->runtime_note,
			   sizeof(sum->runtime_note))) ||
	    (st = tp_jget_object(j, fit, "unconstrained", false, &unc)) ||
	    (st = tp_jget_object(j, fit, "idle", false, &idle)))
		return st;
	if (unc) {
		size_t o2 = tp_jctx_push_key(j, "unconstrained");
		if ((st = tp_jctx_object(j, unc, "the unconstrained plan",
					 unc_fields)) ||
		    (st = tp_jget_number(j, unc, "iteration_time_s", true,
					 TP_JNUM_POS, 0,
					 &sum->unconstrained_time_s, NULL)) ||
		    (st = tp_jget_number(j, unc, "speedup", false,
					 TP_JNUM_NONNEG, 0, &x, NULL)) ||
		    (st = copy_str(j, unc, "why", sum->unconstrained_why,
				   sizeof(sum->unconstrained_why))) ||
		    (st = tp_jget_array(j, unc, "needs", false, false, &needs)) ||
		    (st = read_runtimes(j, unc, sum->unconstrained_runtimes,
					sizeof(sum->unconstrained_runtimes))))
			return st;
		sum->have_unconstrained = true;
		for (size_t k = 0; needs && k < needs->n; k++) {
			const char *name;
			int c = -1;
			size_t o3 = tp_jctx_push_key(j, "needs");
			tp_jctx_push_index(j, k);
			if ((st = tp_jcheck_string(j, needs->items[k], 64, true,
						   &name)))
				return st;
			for (int q = 0; q < TP_CAP_COUNT; q++)
				if (strcmp(name, tp_runtime_cap_name(
							 (enum tp_runtime_cap)q)) == 0)
					c = q;
			if (c < 0)
				return tp_jctx_fail(j, NULL,
						    "unknown capability \"%.64s\"; "
						    "expected a field of a "
						    "runtime's \"can\"",
						    name);
			sum->unconstrained_needs |= 1u << c;
			tp_jctx_pop(j, o3);
		}
		tp_jctx_pop(j, o2);
	}
	if (idle) {
		size_t o2 = tp_jctx_push_key(j, "idle");
		if ((st = tp_jctx_object(j, idle, "the idle devices",
					 idle_fields)) ||
		    (st = tp_jget_int(j, idle, "devices", true, 1, UINT32_MAX,
				      0, &n)) ||
		    (st = copy_str(j, idle, "types", sum->idle_types,
				   sizeof(sum->idle_types))) ||
		    (st = copy_str(j, idle, "why", sum->idle_why,
				   sizeof(sum->idle_why))))
			return st;
		sum->idle_devices = (uint32_t)n;
		if (tp_json_get(idle, "all_devices_iteration_time_s")) {
			if ((st = tp_jget_number(
				     j, idle, "all_devices_iteration_time_s",
				     true, TP_JNUM_POS, 0,
				     &sum->all_devices_time_s, NULL)))
				return st;
			sum->have_all_devices = true;
		}
		tp_jctx_pop(j, o2);
	}
	tp_jctx_pop(j, old);
	return TP_OK;
}

/* The summary's per-device entries (one per device, in the topology's
 * order): peak memory and busy fraction. */
static enum tp_status read_summary_devices(struct reader *r,
					   const struct tp_json *devs,
					   struct tp_plan_summary *sum)
{
	struct tp_jctx *j = r->j;
	bool any_peak = false, any_busy = false;
	enum tp_status st;

	if (r->c && devs->n != r->c->devices.n)
		return tp_jctx_fail(j, "devices",
				    "%zu entries for a topology of %zu "
				    "devices; expected one per device",
				    devs->n, r->c->devices.n);
	for (size_t k = 0; k < devs->n; k++) {
		any_peak |= tp_json_get(devs->items[k], "peak_memory_bytes") !=
			    NULL;
		any_busy |= tp_json_get(devs->items[k], "busy_fraction") !=
			    NULL;
	}
	sum->n_devices = (uint32_t)devs->n;
	if (any_peak &&
	    !(sum->peak_memory_bytes = tp_calloc(devs->n, sizeof(double))))
		return nomem(r);
	if (any_busy &&
	    !(sum->busy_fraction = tp_calloc(devs->n, sizeof(double))))
		return nomem(r);
	for (size_t k = 0; k < devs->n; k++) {
		const struct tp_json *d = devs->items[k];
		const char *name;
		double x;
		size_t o2 = tp_jctx_push_key(j, "devices");
		tp_jctx_push_index(j, k);
		if ((st = tp_jctx_object(j, d, "a device summary",
					 sdev_fields)) ||
		    (st = tp_jget_string(j, d, "device", false,
					 TP_IO_NAME_MAX * 2, false, NULL,
					 &name)))
			return st;
		if (r->c && name && strcmp(name, r->c->devices.v[k].name) != 0)
			return tp_jctx_fail(
			    j, "device",
			    "expected device \"%s\" (entries follow "
			    "the topology's device order), found "
			    "\"%.100s\"",
			    r->c->devices.v[k].name, name);
		if ((st = tp_jget_number(j, d, "peak_memory_bytes", false,
					 TP_JNUM_NONNEG, 0, &x, NULL)))
			return st;
		if (sum->peak_memory_bytes)
			sum->peak_memory_bytes[k] = x;
		if ((st = tp_jget_number(j, d, "busy_fraction", false,
					 TP_JNUM_UNIT, 0, &x, NULL)))
			return st;
		if (sum->busy_fraction)
			sum->busy_fraction[k] = x;
		tp_jctx_pop(j, o2);
	}
	return TP_OK;
}

/* The summary's baselines: name -> feasible, iteration time. */
static enum tp_status read_summary_baselines(struct tp_jctx *j,
					     const struct tp_json *bases,
					     struct tp_plan_summary *sum)
{
	enum tp_status st;

	for (size_t k = 0; k < bases->n; k++) {
		const struct tp_json *b = bases->items[k];
		struct tp_plan_baseline *pb;
		size_t o2 = tp_jctx_push_key(j, "baselines");
		double speedup;

		if (k >= TP_PLAN_MAX_BASELINES)
			return tp_jctx_fail(j, NULL, "more than %d baselines",
					    TP_PLAN_MAX_BASELINES);
		tp_jctx_push_key(j, b->key);
		if (strlen(b->key) >= sizeof(pb->name) || !b->key[0])
			return tp_jctx_fail(
			    j, NULL, "baseline names have 1 to %zu bytes",
			    sizeof(pb->name) - 1);
		pb = &sum->baselines[sum->n_baselines++];
		snprintf(pb->name, sizeof(pb->name), "%s", b->key);
		if ((st = tp_jctx_object(j, b, "a baseline", base_fields)) ||
		    (st = tp_jget_bool(j, b, "feasible", false, true,
				       &pb->feasible)) ||
		    (st = tp_jget_number(j, b, "iteration_time_s", false,
					 TP_JNUM_NONNEG, 0,
					 &pb->iteration_time_s, NULL)) ||
		    (st = tp_jget_number(j, b, "speedup", false, TP_JNUM_NONNEG,
					 0, &speedup, NULL)))
			return st;
		tp_jctx_pop(j, o2);
	}
	return TP_OK;
}

/* The summary's search statistics and, unless --no-timing, timing. */
static enum tp_status read_summary_search(struct tp_jctx *j,
					  const struct tp_json *search,
					  struct tp_plan_summary *sum)
{
	const struct tp_json *timing;
	int64_t threads;
	enum tp_status st;
	size_t o2 = tp_jctx_push_key(j, "search");

	if ((st = tp_jctx_object(j, search, "the search statistics",
				 search_fields)) ||
	    (st = read_u64(j, search, "playouts", &sum->playouts)) ||
	    (st = read_u64(j, search, "simulations", &sum->simulations)) ||
	    (st = read_u64(j, search, "seed", &sum->seed)) ||
	    (st = tp_jget_int(j, search, "threads", false, 0, UINT32_MAX, 0,
			      &threads)) ||
	    (st = tp_jget_bool(j, search, "gnn", false, false, &sum->gnn)) ||
	    (st = copy_str(j, search, "weights", sum->weights,
			   sizeof(sum->weights))) ||
	    (st = copy_str(j, search, "gnn_declined", sum->gnn_declined,
			   sizeof(sum->gnn_declined))) ||
	    (st = tp_jget_object(j, search, "timing", false, &timing)))
		return st;
	if ((st = tp_io_read_objective(j, search, sum)))
		return st;
	sum->threads = (uint32_t)threads;
	sum->no_timing = timing == NULL;
	if (timing) {
		size_t o3 = tp_jctx_push_key(j, "timing");
		if ((st = tp_jctx_object(j, timing, "the search timing",
					 timing_fields)) ||
		    (st = tp_jget_number(j, timing, "search_seconds", false,
					 TP_JNUM_NONNEG, 0,
					 &sum->search_seconds, NULL)) ||
		    (st = tp_jget_number(j, timing, "playouts_per_s", false,
					 TP_JNUM_NONNEG, 0,
					 &sum->playouts_per_s, NULL)))
			return st;
		tp_jctx_pop(j, o3);
	}
	tp_jctx_pop(j, o2);
	return TP_OK;
}

/* The summary's provenance: version, files, paths and their hashes. */
static enum tp_status read_summary_provenance(struct tp_jctx *j,
					      const struct tp_json *prov,
					      struct tp_plan_summary *sum)
{
	enum tp_status st;
	size_t o2 = tp_jctx_push_key(j, "provenance");

	if ((st = tp_jctx_object(j, prov, "the provenance", prov_fields)) ||
	    (st = copy_str(j, prov, "tagplan_version", sum->version,
			   sizeof(sum->version))) ||
	    (st = copy_str(j, prov, "model_file", sum->model_file,
			   sizeof(sum->model_file))) ||
	    (st = copy_str(j, prov, "topology_file", sum->topology_file,
			   sizeof(sum->topology_file))) ||
	    (st = copy_str(j, prov, "model_sha256", sum->model_sha256,
			   sizeof(sum->model_sha256))) ||
	    (st = copy_str(j, prov, "topology_sha256", sum->topology_sha256,
			   sizeof(sum->topology_sha256))) ||
	    (st = copy_str(j, prov, "model_path", sum->model_path,
			   sizeof(sum->model_path))) ||
	    (st = copy_str(j, prov, "topology_path", sum->topology_path,
			   sizeof(sum->topology_path))) ||
	    (st = copy_str(j, prov, "runtime_path", sum->runtime_path,
			   sizeof(sum->runtime_path))) ||
	    (st = copy_str(j, prov, "runtime_sha256", sum->runtime_sha256,
			   sizeof(sum->runtime_sha256))))
		return st;
	if (sum->runtime_sha256[0] && !is_hex64(sum->runtime_sha256))
		return tp_jctx_fail(j, "runtime_sha256",
				    "expected 64 lowercase hexadecimal "
				    "digits");
	if (!sum->runtime_path[0] != !sum->runtime_sha256[0])
		return tp_jctx_fail(j,
				    sum->runtime_path[0] ? "runtime_path"
							 : "runtime_sha256",
				    "runtime_path and runtime_sha256 "
				    "go together; give both or "
				    "neither");
	if (sum->model_sha256[0] && !is_hex64(sum->model_sha256))
		return tp_jctx_fail(j, "model_sha256",
				    "expected 64 lowercase hexadecimal "
				    "digits");
	if (sum->topology_sha256[0] && !is_hex64(sum->topology_sha256))
		return tp_jctx_fail(j, "topology_sha256",
				    "expected 64 lowercase hexadecimal "
				    "digits");
	tp_jctx_pop(j, o2);
	return TP_OK;
}

static enum tp_status read_summary(struct reader *r, const struct tp_json *s,
				   struct tp_plan_summary *sum)
{
	struct tp_jctx *j = r->j;
	const struct tp_json *devs, *bases, *search, *prov;
	enum tp_status st;
	size_t old = tp_jctx_push_key(j, "summary");

	sum->valid = true;
	if ((st = tp_jctx_object(j, s, "the summary", summary_fields)) ||
	    (st = tp_jget_bool(j, s, "feasible", false, false,
			       &sum->feasible)) ||
	    (st =
		 tp_jget_number(j, s, "iteration_time_s", false, TP_JNUM_NONNEG,
				0, &sum->iteration_time_s, NULL)) ||
	    (st = tp_jget_number(j, s, "throughput_samples_per_s", false,
				 TP_JNUM_NONNEG, 0,
				 &sum->throughput_samples_per_s, NULL)) ||
	    (st = tp_jget_number(j, s, "tokens_per_s", false, TP_JNUM_NONNEG, 0,
				 &sum->tokens_per_s, NULL)) ||
	    (st = tp_jget_number(j, s, "mfu", false, TP_JNUM_NONNEG, 0,
				 &sum->mfu, NULL)) ||
	    (st = tp_jget_number(j, s, "tflops_per_device", false,
				 TP_JNUM_NONNEG, 0, &sum->tflops_per_device,
				 NULL)) ||
	    (st = tp_jget_number(j, s, "cost_per_iteration_usd", false,
				 TP_JNUM_NONNEG, 0, &sum->cost_per_iteration,
				 NULL)) ||
	    (st = tp_jget_number(j, s, "cost_per_million_tokens_usd", false,
				 TP_JNUM_NONNEG, 0,
				 &sum->cost_per_million_tokens, NULL)) ||
	    (st = copy_str(j, s, "infeasible_reason", sum->infeasible_reason,
			   sizeof(sum->infeasible_reason))) ||
	    (st = copy_str(j, s, "precision", sum->precision,
			   sizeof(sum->precision))) ||
	    (st = tp_io_read_basis(j, s, &sum->basis)) ||
	    (st = tp_jget_array(j, s, "devices", false, false, &devs)) ||
	    (st = tp_jget_object(j, s, "baselines", false, &bases)) ||
	    (st = tp_jget_object(j, s, "search", false, &search)) ||
	    (st = tp_jget_object(j, s, "provenance", false, &prov)) ||
	    (st = read_fit(j, s, sum)) ||
	    (devs && devs->n && (st = read_summary_devices(r, devs, sum))) ||
	    (bases && (st = read_summary_baselines(j, bases, sum))) ||
	    (search && (st = read_summary_search(j, search, sum))) ||
	    (prov && (st = read_summary_provenance(j, prov, sum))))
		return st;
	tp_jctx_pop(j, old);
	return TP_OK;
}

static enum tp_status read_plan(struct reader *r, const struct tp_json *root)
{
	struct tp_jctx *j = r->j;
	const struct tp_json *groups, *summary;
	const char *mname, *tname, *runtime;
	int64_t gbs, mb, vs, zero;
	int sched, comp;
	double bucket, imbalance, capacity;
	enum tp_status st;
	struct tp_plan_summary scratch;

	if ((st = tp_jctx_object(j, root, "a plan", plan_fields)) ||
	    (st = tp_jget_string(j, root, "model", false, TP_IO_NAME_MAX, false,
				 NULL, &mname)) ||
	    (st = tp_jget_string(j, root, "topology", false, TP_IO_NAME_MAX,
				 false, NULL, &tname)) ||
	    (st = tp_jget_int(j, root, "global_batch_size", true, 1,
			      TP_IO_MAX_GLOBAL_BATCH, 0, &gbs)) ||
	    (st = tp_jget_int(j, root, "micro_batches", false, 1,
			      TP_PLAN_MAX_MICRO_BATCHES, 1, &mb)) ||
	    (st = tp_jget_enum(j, root, "schedule", false, parse_schedule,
			       "gpipe | 1f1b | interleaved | zb-h1",
			       TP_SCHEDULE_1F1B,
			       &sched)) ||
	    (st = tp_jget_int(j, root, "virtual_stages", false, 1, 1024, 1, &vs)) ||
	    (st = tp_jget_int(j, root, "zero", false, 0, 3, 0, &zero)) ||
	    (st = tp_jget_enum(j, root, "compression", false, parse_compression,
			       "off | lossless | lossy",
			       TP_COMPRESSION_LOSSLESS, &comp)) ||
	    (st = tp_io_get_quantity(j, root, "grad_bucket_bytes", false,
				     TP_JNUM_POS, TP_IOQ_PLAN_BYTES, 0, &bucket)) ||
	    (st = tp_jget_number(j, root, "expert_imbalance", false,
				 TP_JNUM_POS, 0, &imbalance, NULL)) ||
	    (st = tp_jget_number(j, root, "expert_capacity_factor", false,
				 TP_JNUM_POS, 0, &capacity, NULL)) ||
	    (st = tp_jget_string(j, root, "runtime", false, 63, true, "",
				 &runtime)) ||
	    (st = tp_jget_array(j, root, "groups", true, true, &groups)) ||
	    (st = tp_jget_object(j, root, "summary", false, &summary)))
		return st;
	if (imbalance != 0 && !(imbalance >= 1 && imbalance <= 64))
		return tp_jctx_fail(j, "expert_imbalance",
				    "an expert load imbalance of %g: expected "
				    "the busiest rank's load over the mean, "
				    "from 1 to 64",
				    imbalance);
	if (capacity != 0 && !(capacity >= 1 && capacity <= 64))
		return tp_jctx_fail(j, "expert_capacity_factor",
				    "an expert capacity factor of %g: "
				    "expected 1 to 64 (omit it: dropless)",
				    capacity);
	if (vs > 1 && sched != TP_SCHEDULE_INTERLEAVED)
		return tp_jctx_fail(j, "virtual_stages",
				    "virtual stages > 1 need \"schedule\": "
				    "\"interleaved\"");
	if (r->m && mname && strcmp(mname, r->m->name) != 0 &&
	    (st = tp_jctx_warn(j, "model", false,
			       "the plan was made for model \"%.100s\", the "
			       "model given is \"%s\"",
			       mname, r->m->name)))
		return st;
	if (r->c && tname && *tname && r->c->name && *r->c->name &&
	    strcmp(tname, r->c->name) != 0 &&
	    (st = tp_jctx_warn(j, "topology", false,
			       "the plan was made for topology \"%.100s\", the "
			       "topology given is \"%s\"",
			       tname, r->c->name)))
		return st;
	if (r->ol) {
		snprintf(r->ol->model, sizeof(r->ol->model), "%s",
			 mname ? mname : "");
		snprintf(r->ol->topology, sizeof(r->ol->topology), "%s",
			 tname ? tname : "");
		r->ol->global_batch = gbs;
		r->ol->micro_batches = (uint32_t)mb;
		r->ol->schedule = (enum tp_schedule)sched;
		r->ol->virtual_stages = (uint32_t)vs;
		r->ol->zero = (uint32_t)zero;
		r->ol->compression = (enum tp_compression)comp;
		r->ol->grad_bucket_bytes = bucket;
		snprintf(r->ol->runtime, sizeof(r->ol->runtime), "%s",
			 runtime);
		r->ol->has_summary = summary != NULL;
		if (summary) {
			const struct tp_json *it =
			    tp_json_get(summary, "iteration_time_s");
			if (it && it->type == TP_JSON_NUMBER)
				r->ol->iteration_time_s = it->num;
		}
	}
	if (r->p) {
		r->p->global_batch = gbs;
		r->p->micro_batches = (uint32_t)mb;
		r->p->schedule = (enum tp_schedule)sched;
		r->p->virtual_stages = (uint32_t)vs;
		r->p->zero = (uint32_t)zero;
		r->p->compression = (enum tp_compression)comp;
		r->p->grad_bucket_bytes = bucket;
		r->p->expert_imbalance = imbalance;
		r->p->expert_capacity_factor = capacity;
		snprintf(r->p->runtime, sizeof(r->p->runtime), "%s", runtime);
	}
	for (size_t k = 0; k < groups->n; k++) {
		size_t old = tp_jctx_push_key(j, "groups");
		tp_jctx_push_index(j, k);
		if ((st = read_group(r, groups->items[k])))
			return st;
		tp_jctx_pop(j, old);
	}
	if (summary) {
		memset(&scratch, 0, sizeof(scratch));
		st = read_summary(r, summary, r->p ? &r->p->summary : &scratch);
		if (!r->p && !st && r->ol) {
			struct tp_plan_outline *ol = r->ol;
			snprintf(ol->model_file, sizeof(ol->model_file), "%s",
				 scratch.model_file);
			snprintf(ol->topology_file, sizeof(ol->topology_file),
				 "%s", scratch.topology_file);
			snprintf(ol->model_sha256, sizeof(ol->model_sha256),
				 "%s", scratch.model_sha256);
			snprintf(ol->topology_sha256,
				 sizeof(ol->topology_sha256), "%s",
				 scratch.topology_sha256);
			snprintf(ol->model_path, sizeof(ol->model_path), "%s",
				 scratch.model_path);
			snprintf(ol->topology_path, sizeof(ol->topology_path),
				 "%s", scratch.topology_path);
		}
		if (!r->p)
			tp_plan_summary_release(&scratch);
		if (st)
			return st;
	}
	if (r->p && (st = tp_plan_validate(r->p, r->m, r->c, j->err)))
		tp_error_set_file(j->err, j->file);
	return st;
}

/* What load reads a plan file against (m, c: NULL when not given) and
 * into (a plan p, or an outline ol). */
struct load_into {
	const struct tp_model *m;
	const struct tp_cluster *c;
	struct tp_plan *p;
	struct tp_plan_outline *ol;
};

static enum tp_status load(const char *name, const char *text, size_t len,
			   const struct tp_load_options *o,
			   const struct load_into *to, struct tp_error *err)
{
	struct tp_plan *p = to->p;
	struct tp_plan_outline *ol = to->ol;
	struct tp_json_doc doc;
	struct tp_jctx j;
	struct reader r;
	enum tp_status st;

	if (p) {
		tp_plan_release(p);
		tp_plan_init(p);
	}
	st = tp_io_parse(name, text, len, o, "tagplan-plan/1", &doc, &j, err);
	if (st)
		return st;
	memset(&r, 0, sizeof(r));
	r.j = &j;
	r.m = to->m;
	r.c = to->c;
	r.p = p;
	r.ol = ol;
	tp_strmap_init(&r.all_devs);
	if (ol) {
		tp_plan_outline_release(ol);
	}
	st = read_plan(&r, doc.root);
	tp_strmap_release(&r.all_devs);
	tp_json_doc_release(&doc);
	tp_vec_free(&r.ops);
	tp_vec_free(&r.devs);
	tp_vec_free(&r.sfb);
	tp_vec_free(&r.shares);
	tp_vec_free(&r.rtp);
	if (st) {
		tp_error_set_file(err, name);
		if (p) {
			tp_plan_release(p);
			tp_plan_init(p);
		}
	}
	return st;
}

enum tp_status tp_plan_load(const char *name, const char *text, size_t len,
			    const struct tp_model *m,
			    const struct tp_cluster *c,
			    const struct tp_load_options *o, struct tp_plan *p,
			    struct tp_error *err)
{
	struct load_into to = {m, c, p, NULL};

	if (!m->finalized || !c->finalized) {
		tp_error_set(
		    err, TP_EINTERNAL,
		    "tp_plan_load needs a finalized model and cluster");
		return TP_EINTERNAL;
	}
	return load(name, text, len, o, &to, err);
}

void tp_plan_outline_release(struct tp_plan_outline *ol)
{
	if (!ol)
		return;
	tp_vec_free(&ol->groups);
	memset(ol, 0, sizeof(*ol));
}

enum tp_status tp_plan_check(const char *name, const char *text, size_t len,
			     const struct tp_load_options *o,
			     struct tp_plan_outline *ol, struct tp_error *err)
{
	struct load_into to = {NULL, NULL, NULL, ol};

	return load(name, text, len, o, &to, err);
}

enum tp_status tp_plan_load_file(const char *path, const struct tp_model *m,
				 const struct tp_cluster *c,
				 const struct tp_load_options *o,
				 struct tp_plan *p, struct tp_error *err)
{
	char *text;
	size_t len;
	enum tp_status st;

	st = tp_file_read_text(path, o ? o->max_bytes : 0, &text, &len, err);
	if (st) {
		tp_plan_release(p);
		tp_plan_init(p);
		return st;
	}
	st = tp_plan_load(path, text, len, m, c, o, p, err);
	free(text);
	return st;
}

/* --- writer --------------------------------------------------------------- */

/* Write a group's ops: maximal runs that are contiguous in the
 * topological order become ranges when at least 3 long. */
static void write_ops(struct tp_jw *jw, const struct tp_plan *p, uint32_t g,
		      const struct tp_model *m)
{
	const uint32_t *ops = tp_plan_group_ops(p, g);
	uint32_t n = p->groups.v[g].n_ops;

	tp_jw_key(jw, "ops");
	tp_jw_array_begin(jw);
	for (uint32_t k = 0; k < n;) {
		uint32_t e = k + 1;
		if (m->finalized)
			while (e < n && m->topo_pos[ops[e]] ==
					    m->topo_pos[ops[e - 1]] + 1)
				e++;
		if (e - k >= 3) {
			tp_jw_object_begin(jw);
			tp_jw_kv_string(jw, "from", m->ops.v[ops[k]].name);
			tp_jw_kv_string(jw, "to", m->ops.v[ops[e - 1]].name);
			tp_jw_object_end(jw);
			k = e;
		} else {
			tp_jw_string(jw, m->ops.v[ops[k]].name);
			k++;
		}
	}
	tp_jw_array_end(jw);
}

/* summary."runtime_fit", when there is anything to say. */
static void write_summary(struct tp_jw *jw, const struct tp_plan_summary *s,
			  const struct tp_cluster *c)
{
	tp_jw_key(jw, "summary");
	tp_jw_object_begin(jw);
	tp_jw_kv_bool(jw, "feasible", s->feasible);
	tp_jw_kv_number(jw, "iteration_time_s", s->iteration_time_s);
	tp_jw_kv_number(jw, "throughput_samples_per_s",
			s->throughput_samples_per_s);
	tp_jw_kv_number(jw, "tokens_per_s", s->tokens_per_s);
	tp_jw_kv_number(jw, "mfu", s->mfu);
	tp_jw_kv_number(jw, "tflops_per_device", s->tflops_per_device);
	if (s->cost_per_iteration > 0)
		tp_jw_kv_number(jw, "cost_per_iteration_usd",
				s->cost_per_iteration);
	if (s->cost_per_million_tokens > 0)
		tp_jw_kv_number(jw, "cost_per_million_tokens_usd",
				s->cost_per_million_tokens);
	if (s->infeasible_reason[0])
		tp_jw_kv_string(jw, "infeasible_reason", s->infeasible_reason);
	if (s->precision[0])
		tp_jw_kv_string(jw, "precision", s->precision);
	tp_io_write_basis(jw, &s->basis);
	if ((s->peak_memory_bytes || s->busy_fraction) &&
	    s->n_devices == c->devices.n) {
		tp_jw_key(jw, "devices");
		tp_jw_array_begin(jw);
		for (uint32_t d = 0; d < s->n_devices; d++) {
			tp_jw_object_begin(jw);
			tp_jw_kv_string(jw, "device", c->devices.v[d].name);
			if (s->peak_memory_bytes)
				tp_jw_kv_number(jw, "peak_memory_bytes",
						s->peak_memory_bytes[d]);
			if (s->busy_fraction)
				tp_jw_kv_number(jw, "busy_fraction",
						s->busy_fraction[d]);
			tp_jw_object_end(jw);
		}
		tp_jw_array_end(jw);
	}
	if (s->n_baselines) {
		tp_jw_key(jw, "baselines");
		tp_jw_object_begin(jw);
		for (uint32_t k = 0; k < s->n_baselines; k++) {
			const struct tp_plan_baseline *b = &s->baselines[k];
			tp_jw_key(jw, b->name);
			tp_jw_object_begin(jw);
			tp_jw_kv_bool(jw, "feasible", b->feasible);
			tp_jw_kv_number(jw, "iteration_time_s",
					b->iteration_time_s);
			if (b->feasible && b->iteration_time_s > 0 &&
			    s->iteration_time_s > 0)
				tp_jw_kv_number(jw, "speedup",
						b->iteration_time_s /
						    s->iteration_time_s);
			tp_jw_object_end(jw);
		}
		tp_jw_object_end(jw);
	}
	tp_io_write_fit(jw, s);
	tp_jw_key(jw, "search");
	tp_jw_object_begin(jw);
	tp_jw_kv_int(jw, "playouts", (int64_t)s->playouts);
	tp_jw_kv_int(jw, "simulations", (int64_t)s->simulations);
	if (s->seed <= (UINT64_C(1) << 53)) {
		tp_jw_kv_int(jw, "seed", (int64_t)s->seed);
	} else {
		char buf[32];
		snprintf(buf, sizeof(buf), "%" PRIu64, s->seed);
		tp_jw_kv_string(jw, "seed", buf);
	}
	tp_jw_kv_int(jw, "threads", s->threads);
	tp_jw_kv_bool(jw, "gnn", s->gnn);
	if (s->weights[0])
		tp_jw_kv_string(jw, "weights", s->weights);
	if (s->gnn_declined[0])
		tp_jw_kv_string(jw, "gnn_declined", s->gnn_declined);
	tp_io_write_objective(jw, s);
	if (!s->no_timing) {
		tp_jw_key(jw, "timing");
		tp_jw_object_begin(jw);
		tp_jw_kv_number(jw, "search_seconds", s->search_seconds);
		tp_jw_kv_number(jw, "playouts_per_s", s->playouts_per_s);
		tp_jw_object_end(jw);
	}
	tp_jw_object_end(jw);
	tp_jw_key(jw, "provenance");
	tp_jw_object_begin(jw);
	tp_jw_kv_string(jw, "tagplan_version", s->version);
	tp_jw_kv_string(jw, "model_file", s->model_file);
	tp_jw_kv_string(jw, "model_sha256", s->model_sha256);
	tp_jw_kv_string(jw, "topology_file", s->topology_file);
	tp_jw_kv_string(jw, "topology_sha256", s->topology_sha256);
	if (s->model_path[0])
		tp_jw_kv_string(jw, "model_path", s->model_path);
	if (s->topology_path[0])
		tp_jw_kv_string(jw, "topology_path", s->topology_path);
	if (s->runtime_path[0]) {
		tp_jw_kv_string(jw, "runtime_path", s->runtime_path);
		tp_jw_kv_string(jw, "runtime_sha256", s->runtime_sha256);
	}
	tp_jw_object_end(jw);
	tp_jw_object_end(jw);
}

void tp_plan_write(const struct tp_plan *p, const struct tp_model *m,
		   const struct tp_cluster *c, struct tp_strbuf *out)
{
	struct tp_jw jw;

	tp_jw_init(&jw, out, true);
	tp_jw_object_begin(&jw);
	tp_jw_kv_string(&jw, "format", "tagplan-plan/1");
	tp_jw_kv_string(&jw, "model", m->name);
	if (c->name && *c->name)
		tp_jw_kv_string(&jw, "topology", c->name);
	tp_jw_kv_int(&jw, "global_batch_size", p->global_batch);
	tp_jw_kv_int(&jw, "micro_batches", p->micro_batches);
	tp_jw_kv_string(&jw, "schedule", tp_schedule_name(p->schedule));
	tp_jw_kv_int(&jw, "virtual_stages", p->virtual_stages);
	tp_jw_kv_int(&jw, "zero", p->zero);
	tp_jw_kv_string(&jw, "compression",
			tp_compression_name(p->compression));
	if (p->grad_bucket_bytes > 0)
		tp_jw_kv_number(&jw, "grad_bucket_bytes", p->grad_bucket_bytes);
	if (p->expert_imbalance > 0)
		tp_jw_kv_number(&jw, "expert_imbalance", p->expert_imbalance);
	if (p->expert_capacity_factor > 0)
		tp_jw_kv_number(&jw, "expert_capacity_factor",
				p->expert_capacity_factor);
	if (p->runtime[0])
		tp_jw_kv_string(&jw, "runtime", p->runtime);
	tp_jw_key(&jw, "groups");
	tp_jw_array_begin(&jw);
	for (uint32_t g = 0; g < p->groups.n; g++) {
		const struct tp_plan_group *gr = &p->groups.v[g];
		const double *sh = tp_plan_group_shares(p, g);
		bool even = true;
		char name[32];

		tp_jw_object_begin(&jw);
		snprintf(name, sizeof(name), "g%u", g);
		tp_jw_kv_string(&jw, "name", name);
		write_ops(&jw, p, g, m);
		tp_jw_key(&jw, "devices");
		tp_jw_array_begin_inline(&jw);
		for (uint32_t k = 0; k < gr->n_devices; k++)
			tp_jw_string(
			    &jw,
			    c->devices.v[tp_plan_group_devs(p, g)[k]].name);
		tp_jw_array_end(&jw);
		tp_jw_kv_int(&jw, "dp", gr->dp);
		if (gr->cp > 1)
			tp_jw_kv_int(&jw, "cp", gr->cp);
		tp_jw_kv_int(&jw, "tp", gr->tp);
		if (gr->mixed) {
			tp_jw_key(&jw, "replica_tp");
			tp_jw_array_begin_inline(&jw);
			for (uint32_t r = 0; r < gr->dp; r++)
				tp_jw_int(&jw, tp_plan_replica_tp(p, g, r));
			tp_jw_array_end(&jw);
		}
		for (uint32_t r = 0; r < gr->dp; r++)
			even &= sh[r] == 1.0 / gr->dp;
		if (!even) {
			tp_jw_key(&jw, "shares");
			tp_jw_array_begin_inline(&jw);
			for (uint32_t r = 0; r < gr->dp; r++)
				tp_jw_number(&jw, sh[r]);
			tp_jw_array_end(&jw);
		}
		tp_jw_kv_string(&jw, "sync", tp_sync_name(gr->sync));
		tp_jw_kv_string(&jw, "recompute",
				tp_recompute_name(gr->recompute));
		tp_jw_kv_bool(&jw, "sp", gr->sp);
		if (gr->ep > 1)
			tp_jw_kv_int(&jw, "ep", gr->ep);
		if (gr->etp == 1 && gr->tp > 1)
			tp_jw_kv_int(&jw, "etp", 1);
		if (gr->n_sfb || gr->sfb_saved_bytes > 0 ||
		    gr->lossy != TP_LOSSY_NONE || gr->powersgd_rank) {
			tp_jw_key(&jw, "compression");
			tp_jw_object_begin(&jw);
			tp_jw_key(&jw, "sfb_ops");
			tp_jw_array_begin_inline(&jw);
			for (uint32_t k = 0; k < gr->n_sfb; k++)
				tp_jw_string(
				    &jw,
				    m->ops.v[tp_plan_group_sfb(p, g)[k]].name);
			tp_jw_array_end(&jw);
			tp_jw_kv_number(&jw, "saved_bytes",
					gr->sfb_saved_bytes);
			tp_jw_kv_string(&jw, "lossy", tp_lossy_name(gr->lossy));
			tp_jw_kv_int(&jw, "powersgd_rank", gr->powersgd_rank);
			tp_jw_object_end(&jw);
		}
		tp_jw_object_end(&jw);
	}
	tp_jw_array_end(&jw);
	if (p->summary.valid)
		write_summary(&jw, &p->summary, c);
	tp_jw_object_end(&jw);
	tp_jw_finish(&jw);
}
