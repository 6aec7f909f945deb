/*
 * report_io.c - tagplan-report/1 <-> struct tp_report (README section 4).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonw.h"
#include "io_int.h"

static const char *const report_fields[] = {"format",
					    "feasible",
					    "iteration_time_s",
					    "throughput_samples_per_s",
					    "tokens_per_s",
					    "model_flop_per_iteration",
					    "tflops_per_device",
					    "mfu",
					    "bubble_fraction",
					    "devices",
					    "links",
					    "worst_device_index",
					    "worst_device",
					    "over_bytes",
					    "reason",
					    "approximations",
					    "precision",
					    "basis",
					    NULL};
static const char *const basis_fields[] = {
	"runtime",	     "constants",
	"gemm_sustained",    "link_eff_intra",
	"link_eff_network",  "fitted_on",
	"runs",		     "fit_mean_abs_error",
	"holdout_runs",	     "holdout_mean_abs_error",
	"validation_mean_abs_error", "validation_max_abs_error",
	"validation_runs",   "validation_scope",
	"description",	     NULL};

void tp_io_write_basis(struct tp_jw *jw, const struct tp_report_basis *b)
{
	char line[512];

	if (!b->runtime[0])
		return;
	tp_jw_key(jw, "basis");
	tp_jw_object_begin(jw);
	tp_jw_kv_string(jw, "runtime", b->runtime);
	tp_jw_kv_string(jw, "constants", b->calibrated ? "calibrated"
						       : "shipped");
	tp_jw_kv_number(jw, "gemm_sustained", b->gemm_sustained);
	tp_jw_kv_number(jw, "link_eff_intra", b->link_eff_intra);
	tp_jw_kv_number(jw, "link_eff_network", b->link_eff_network);
	if (b->calibrated) {
		tp_jw_kv_string(jw, "fitted_on", b->fitted_on);
		tp_jw_kv_int(jw, "runs", b->runs);
		tp_jw_kv_number(jw, "fit_mean_abs_error", b->fit_error);
		tp_jw_kv_int(jw, "holdout_runs", b->holdout_runs);
		tp_jw_kv_number(jw, "holdout_mean_abs_error",
				b->holdout_error);
	} else if (b->validation_mean_error > 0) {
		tp_jw_kv_number(jw, "validation_mean_abs_error",
				b->validation_mean_error);
		tp_jw_kv_number(jw, "validation_max_abs_error",
				b->validation_max_error);
		tp_jw_kv_int(jw, "validation_runs", b->validation_runs);
		tp_jw_kv_string(jw, "validation_scope",
				b->validation_runtime ? "runtime" : "all");
	}
	tp_report_basis_describe(b, line, sizeof(line));
	tp_jw_kv_string(jw, "description", line);
	tp_jw_object_end(jw);
}

enum tp_status tp_io_read_basis(struct tp_jctx *j, const struct tp_json *obj,
				struct tp_report_basis *b)
{
	const struct tp_json *v;
	const char *rt, *cons, *on, *scope;
	int64_t runs, hold, vruns;
	size_t old;
	enum tp_status st;

	memset(b, 0, sizeof(*b));
	if ((st = tp_jget_object(j, obj, "basis", false, &v)) || !v)
		return st;
	old = tp_jctx_push_key(j, "basis");
	if ((st = tp_jctx_object(j, v, "the basis of the figures",
				 basis_fields)) ||
	    (st = tp_jget_string(j, v, "runtime", true, sizeof(b->runtime) - 1,
				 false, "", &rt)) ||
	    (st = tp_jget_string(j, v, "constants", true, 0, false, "",
				 &cons)) ||
	    (st = tp_jget_number(j, v, "gemm_sustained", false, TP_JNUM_NONNEG,
				 0, &b->gemm_sustained, NULL)) ||
	    (st = tp_jget_number(j, v, "link_eff_intra", false, TP_JNUM_NONNEG,
				 0, &b->link_eff_intra, NULL)) ||
	    (st = tp_jget_number(j, v, "link_eff_network", false,
				 TP_JNUM_NONNEG, 0, &b->link_eff_network,
				 NULL)) ||
	    (st = tp_jget_string(j, v, "fitted_on", false,
				 sizeof(b->fitted_on) - 1, false, "", &on)) ||
	    (st = tp_jget_int(j, v, "runs", false, 0, UINT32_MAX, 0, &runs)) ||
	    (st = tp_jget_int(j, v, "holdout_runs", false, 0, UINT32_MAX, 0,
			      &hold)) ||
	    (st = tp_jget_number(j, v, "fit_mean_abs_error", false,
				 TP_JNUM_NONNEG, 0, &b->fit_error, NULL)) ||
	    (st = tp_jget_number(j, v, "holdout_mean_abs_error", false,
				 TP_JNUM_NONNEG, 0, &b->holdout_error, NULL)) ||
	    (st = tp_jget_number(j, v, "validation_mean_abs_error", false,
				 TP_JNUM_NONNEG, 0, &b->validation_mean_error,
				 NULL)) ||
	    (st = tp_jget_number(j, v, "validation_max_abs_error", false,
				 TP_JNUM_NONNEG, 0, &b->validation_max_error,
				 NULL)) ||
	    (st = tp_jget_int(j, v, "validation_runs", false, 0, UINT32_MAX, 0,
			      &vruns)) ||
	    (st = tp_jget_string(j, v, "validation_scope", false, 0, false,
				 "all", &scope)))
		return st;
	if (strcmp(scope, "all") && strcmp(scope, "runtime"))
		return tp_jctx_fail(j, "validation_scope",
				    "expected \"runtime\" or \"all\", got "
				    "\"%s\"",
				    scope);
	b->validation_runs = (uint32_t)vruns;
	b->validation_runtime = strcmp(scope, "runtime") == 0;
	if (strcmp(cons, "shipped") && strcmp(cons, "calibrated"))
		return tp_jctx_fail(j, "constants",
				    "expected \"shipped\" or \"calibrated\", "
				    "got \"%s\"",
				    cons);
	snprintf(b->runtime, sizeof(b->runtime), "%s", rt);
	snprintf(b->fitted_on, sizeof(b->fitted_on), "%s", on);
	b->calibrated = strcmp(cons, "calibrated") == 0;
	b->runs = (uint32_t)runs;
	b->holdout_runs = (uint32_t)hold;
	tp_jctx_pop(j, old);
	return TP_OK;
}
static const char *const dev_fields[] = {"device",	    "peak_memory_bytes",
					 "capacity_bytes",  "compute_s",
					 "communication_s", "idle_s",
					 "memory",	    NULL};
static const char *const mem_fields[] = {"weights_bytes",
					 "gradients_bytes",
					 "optimizer_bytes",
					 "activations_bytes",
					 "temporary_bytes",
					 "reserved_bytes",
					 NULL};
static const char *const link_fields[] = {"link", "endpoints", "bytes",
					  "busy_s", NULL};

static enum tp_status read_device(struct tp_jctx *j, const struct tp_json *v,
				  struct tp_report_device *d)
{
	const struct tp_json *mem;
	const char *name;
	double *mdst[] = {&d->memory.weights,	&d->memory.gradients,
			  &d->memory.optimizer, &d->memory.activations,
			  &d->memory.temporary, &d->memory.reserved};
	enum tp_status st;

	if ((st = tp_jctx_object(j, v, "a device report", dev_fields)) ||
	    (st = tp_jget_string(j, v, "device", false, 0, false, "", &name)) ||
	    (st = tp_jget_number(j, v, "peak_memory_bytes", false,
				 TP_JNUM_NONNEG, 0, &d->peak_memory_bytes,
				 NULL)) ||
	    (st = tp_jget_number(j, v, "capacity_bytes", false, TP_JNUM_NONNEG,
				 0, &d->capacity_bytes, NULL)) ||
	    (st = tp_jget_number(j, v, "compute_s", false, TP_JNUM_NONNEG, 0,
				 &d->compute_s, NULL)) ||
	    (st = tp_jget_number(j, v, "communication_s", false, TP_JNUM_NONNEG,
				 0, &d->communication_s, NULL)) ||
	    (st = tp_jget_number(j, v, "idle_s", false, TP_JNUM_NONNEG, 0,
				 &d->idle_s, NULL)) ||
	    (st = tp_jget_object(j, v, "memory", false, &mem)))
		return st;
	if (mem) {
		size_t old = tp_jctx_push_key(j, "memory");
		if ((st = tp_jctx_object(j, mem, "a memory breakdown",
					 mem_fields)))
			return st;
		for (int k = 0; k < 6; k++)
			if ((st = tp_jget_number(j, mem, mem_fields[k], false,
						 TP_JNUM_NONNEG, 0, mdst[k],
						 NULL)))
				return st;
		tp_jctx_pop(j, old);
	}
	return TP_OK;
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

static enum tp_status read_report(struct tp_jctx *j, const struct tp_json *root,
				  struct tp_report *r)
{
	const struct tp_json *devs, *links;
	const char *worst;
	int64_t wi;
	bool has_wi;
	enum tp_status st;

	if ((st = tp_jctx_object(j, root, "a report", report_fields)) ||
	    (st = tp_jget_bool(j, root, "feasible", true, false,
			       &r->feasible)) ||
	    (st = tp_jget_number(j, root, "iteration_time_s", true,
				 TP_JNUM_NONNEG, 0, &r->iteration_time_s,
				 NULL)) ||
	    (st = tp_jget_number(j, root, "throughput_samples_per_s", true,
				 TP_JNUM_NONNEG, 0,
				 &r->throughput_samples_per_s, NULL)) ||
	    (st = tp_jget_number(j, root, "tokens_per_s", false, TP_JNUM_NONNEG,
				 0, &r->tokens_per_s, NULL)) ||
	    (st = tp_jget_number(j, root, "model_flop_per_iteration", false,
				 TP_JNUM_NONNEG, 0,
				 &r->model_flop_per_iteration, NULL)) ||
	    (st = tp_jget_number(j, root, "tflops_per_device", false,
				 TP_JNUM_NONNEG, 0, &r->tflops_per_device,
				 NULL)) ||
	    (st = tp_jget_number(j, root, "mfu", false, TP_JNUM_NONNEG, 0,
				 &r->mfu, NULL)) ||
	    (st = tp_jget_number(j, root, "bubble_fraction", false,
				 TP_JNUM_UNIT, 0, &r->bubble_fraction, NULL)) ||
	    (st = tp_jget_array(j, root, "devices", false, false, &devs)) ||
	    (st = tp_jget_array(j, root, "links", false, false, &links)) ||
	    (st = tp_jget_int(j, root, "worst_device_index", false, 0,
			      UINT32_MAX - 1, 0, &wi)) ||
	    (st = tp_jget_string(j, root, "worst_device", false, 0, false, "",
				 &worst)) ||
	    (st = tp_jget_number(j, root, "over_bytes", false, TP_JNUM_NONNEG,
				 0, &r->over_bytes, NULL)) ||
	    (st = copy_str(j, root, "reason", r->reason, sizeof(r->reason))) ||
	    (st = copy_str(j, root, "approximations", r->approximations,
			   sizeof(r->approximations))) ||
	    (st = copy_str(j, root, "precision", r->precision,
			   sizeof(r->precision))) ||
	    (st = tp_io_read_basis(j, root, &r->basis)))
		return st;
	has_wi = tp_json_get(root, "worst_device_index") != NULL;
	r->worst_device = has_wi ? (uint32_t)wi : UINT32_MAX;
	if (devs && devs->n) {
		if (devs->n > TP_IO_MAX_DEVICES)
			return tp_jctx_fail(j, "devices",
					    "more than %d devices",
					    TP_IO_MAX_DEVICES);
		if ((st = tp_report_alloc(r, (uint32_t)devs->n, j->err)))
			return st;
		for (size_t k = 0; k < devs->n; k++) {
			size_t old = tp_jctx_push_key(j, "devices");
			tp_jctx_push_index(j, k);
			if ((st = read_device(j, devs->items[k],
					      &r->devices[k])))
				return st;
			tp_jctx_pop(j, old);
		}
	}
	if (has_wi && wi >= (int64_t)r->n_devices)
		return tp_jctx_fail(j, "worst_device_index",
				    "index %lld is not one of the report's %u "
				    "devices",
				    (long long)wi, r->n_devices);
	if (links && links->n) {
		r->links = tp_calloc(links->n, sizeof(*r->links));
		if (!r->links)
			return tp_error_set(j->err, TP_ENOMEM, "out of memory");
		r->n_links = (uint32_t)links->n;
		for (size_t k = 0; k < links->n; k++) {
			const struct tp_json *l = links->items[k];
			struct tp_report_link *rl = &r->links[k];
			const char *ends;
			int64_t idx;
			size_t old = tp_jctx_push_key(j, "links");
			tp_jctx_push_index(j, k);
			if ((st = tp_jctx_object(j, l, "a link report",
						 link_fields)) ||
			    (st = tp_jget_int(j, l, "link", true, 0,
					      UINT32_MAX - 1, 0, &idx)) ||
			    (st = tp_jget_string(j, l, "endpoints", false, 0,
						 false, "", &ends)) ||
			    (st = tp_jget_number(j, l, "bytes", false,
						 TP_JNUM_NONNEG, 0, &rl->bytes,
						 NULL)) ||
			    (st = tp_jget_number(j, l, "busy_s", false,
						 TP_JNUM_NONNEG, 0, &rl->busy_s,
						 NULL)))
				return st;
			rl->link = (uint32_t)idx;
			tp_jctx_pop(j, old);
		}
	}
	return TP_OK;
}

enum tp_status tp_report_load(const char *name, const char *text, size_t len,
			      const struct tp_load_options *o,
			      struct tp_report *r, struct tp_error *err)
{
	struct tp_json_doc doc;
	struct tp_jctx j;
	enum tp_status st;

	tp_report_release(r);
	tp_report_init(r);
	st = tp_io_parse(name, text, len, o, "tagplan-report/1", &doc, &j, err);
	if (st)
		return st;
	st = read_report(&j, doc.root, r);
	tp_json_doc_release(&doc);
	if (st) {
		tp_error_set_file(err, name);
		tp_report_release(r);
		tp_report_init(r);
	}
	return st;
}

/* Who every vertex is, for its readable name: a device, a node's fabric
 * or NIC, else the k-th switch.  Built once per report (O(vertices)): a
 * search per link was O(devices) and took minutes at 100,000 GPUs. */
enum { VN_DEVICE, VN_FABRIC, VN_NIC, VN_SWITCH };
struct vnames {
	uint32_t *who; /* device, node or switch ordinal per vertex */
	uint8_t *what; /* VN_* per vertex */
};

static bool vnames_build(const struct tp_cluster *c, struct vnames *vn)
{
	size_t nv = c->vertex_kind.n;
	uint32_t sw = 0;

	vn->who = malloc((nv + 1) * sizeof(*vn->who));
	vn->what = malloc(nv + 1);
	if (!vn->who || !vn->what) {
		free(vn->who);
		free(vn->what);
		vn->who = NULL;
		vn->what = NULL;
		return false;
	}
	for (size_t v = 0; v < nv; v++) {
		vn->what[v] = VN_SWITCH;
		vn->who[v] = sw;
		sw += c->vertex_kind.v[v] == TP_VERTEX_SWITCH;
	}
	/* in reverse, so the first owner wins as a search would find it */
	for (uint32_t k = (uint32_t)c->nodes.n; k-- > 0;) {
		const struct tp_node *nd = &c->nodes.v[k];
		for (uint32_t r = 0; nd->nic_vertex < nv &&
				     r < tp_node_nic_vertices(nd);
		     r++) {
			vn->what[nd->nic_vertex + r] = VN_NIC;
			vn->who[nd->nic_vertex + r] = k;
		}
		if (nd->fabric_vertex < nv) {
			vn->what[nd->fabric_vertex] = VN_FABRIC;
			vn->who[nd->fabric_vertex] = k;
		}
	}
	for (uint32_t d = (uint32_t)c->devices.n; d-- > 0;)
		if (c->devices.v[d].vertex < nv) {
			vn->what[c->devices.v[d].vertex] = VN_DEVICE;
			vn->who[c->devices.v[d].vertex] = d;
		}
	return true;
}

/* A readable name for a vertex: device name, "<node>/fabric",
 * "<node>/nic" ("<node>/nic<r>" for rail r), "switch<k>". */
static void vertex_name(const struct tp_cluster *c, const struct vnames *vn,
			uint32_t v, char *buf, size_t size)
{
	uint32_t w = v < c->vertex_kind.n ? vn->who[v] : 0;

	switch (v < c->vertex_kind.n ? vn->what[v] : VN_SWITCH) {
	case VN_DEVICE:
		snprintf(buf, size, "%s", c->devices.v[w].name);
		return;
	case VN_FABRIC:
		snprintf(buf, size, "%s/fabric", c->nodes.v[w].name);
		return;
	case VN_NIC:
		tp_node_nic_name(&c->nodes.v[w], v, buf, size);
		return;
	default:
		if (v >= c->vertex_kind.n)
			for (uint32_t u = 0; u < c->vertex_kind.n; u++)
				w += c->vertex_kind.v[u] == TP_VERTEX_SWITCH;
		snprintf(buf, size, "switch%u", w);
	}
}

void tp_report_write(const struct tp_report *r, const struct tp_cluster *c,
		     struct tp_strbuf *out)
{
	struct tp_jw jw;
	struct vnames vn = {NULL, NULL};
	bool names = c && c->devices.n == r->n_devices;

	tp_jw_init(&jw, out, true);
	tp_jw_object_begin(&jw);
	tp_jw_kv_string(&jw, "format", "tagplan-report/1");
	tp_jw_kv_bool(&jw, "feasible", r->feasible);
	tp_jw_kv_number(&jw, "iteration_time_s", r->iteration_time_s);
	tp_jw_kv_number(&jw, "throughput_samples_per_s",
			r->throughput_samples_per_s);
	tp_jw_kv_number(&jw, "tokens_per_s", r->tokens_per_s);
	tp_jw_kv_number(&jw, "model_flop_per_iteration",
			r->model_flop_per_iteration);
	tp_jw_kv_number(&jw, "tflops_per_device", r->tflops_per_device);
	tp_jw_kv_number(&jw, "mfu", r->mfu);
	tp_jw_kv_number(&jw, "bubble_fraction", r->bubble_fraction);
	tp_jw_key(&jw, "devices");
	tp_jw_array_begin(&jw);
	for (uint32_t d = 0; d < r->n_devices; d++) {
		const struct tp_report_device *rd = &r->devices[d];
		tp_jw_object_begin(&jw);
		if (names)
			tp_jw_kv_string(&jw, "device", c->devices.v[d].name);
		tp_jw_kv_number(&jw, "peak_memory_bytes",
				rd->peak_memory_bytes);
		tp_jw_kv_number(&jw, "capacity_bytes", rd->capacity_bytes);
		tp_jw_kv_number(&jw, "compute_s", rd->compute_s);
		tp_jw_kv_number(&jw, "communication_s", rd->communication_s);
		tp_jw_kv_number(&jw, "idle_s", rd->idle_s);
		tp_jw_key(&jw, "memory");
		tp_jw_object_begin(&jw);
		tp_jw_kv_number(&jw, "weights_bytes", rd->memory.weights);
		tp_jw_kv_number(&jw, "gradients_bytes", rd->memory.gradients);
		tp_jw_kv_number(&jw, "optimizer_bytes", rd->memory.optimizer);
		tp_jw_kv_number(&jw, "activations_bytes",
				rd->memory.activations);
		tp_jw_kv_number(&jw, "temporary_bytes", rd->memory.temporary);
		tp_jw_kv_number(&jw, "reserved_bytes", rd->memory.reserved);
		tp_jw_object_end(&jw);
		tp_jw_object_end(&jw);
	}
	tp_jw_array_end(&jw);
	tp_jw_key(&jw, "links");
	tp_jw_array_begin(&jw);
	if (c && r->n_links && !vnames_build(c, &vn))
		out->failed = true; /* the caller reports out of memory */
	for (uint32_t k = 0; k < r->n_links && !out->failed; k++) {
		const struct tp_report_link *l = &r->links[k];
		tp_jw_object_begin(&jw);
		tp_jw_kv_int(&jw, "link", l->link);
		if (c && l->link < c->links.n) {
			char a[300], b[300], both[640];
			vertex_name(c, &vn, c->links.v[l->link].a, a, sizeof(a));
			vertex_name(c, &vn, c->links.v[l->link].b, b, sizeof(b));
			snprintf(both, sizeof(both), "%s -- %s", a, b);
			tp_jw_kv_string(&jw, "endpoints", both);
		}
		tp_jw_kv_number(&jw, "bytes", l->bytes);
		tp_jw_kv_number(&jw, "busy_s", l->busy_s);
		tp_jw_object_end(&jw);
	}
	if (c && r->n_links) {
		free(vn.who);
		free(vn.what);
	}
	tp_jw_array_end(&jw);
	if (r->worst_device != UINT32_MAX) {
		tp_jw_kv_int(&jw, "worst_device_index", r->worst_device);
		if (names && r->worst_device < c->devices.n)
			tp_jw_kv_string(&jw, "worst_device",
					c->devices.v[r->worst_device].name);
	}
	tp_jw_kv_number(&jw, "over_bytes", r->over_bytes);
	if (r->reason[0])
		tp_jw_kv_string(&jw, "reason", r->reason);
	if (r->approximations[0])
		tp_jw_kv_string(&jw, "approximations", r->approximations);
	if (r->precision[0])
		tp_jw_kv_string(&jw, "precision", r->precision);
	tp_io_write_basis(&jw, &r->basis);
	tp_jw_object_end(&jw);
	tp_jw_finish(&jw);
}
