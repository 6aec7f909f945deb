/*
 * inspect.c - `tagplan inspect FILE`: a JSON summary of a tagplan file on
 * stdout (model totals, topology inventory, plan groups, report figures).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/jsonw.h"
#include "core/runtime.h"
#include "io/io.h"
#include "inputs.h"

/* The architecture fields after the first eight (core/model.h), those
 * the model records. */
static void inspect_arch_rest(struct tp_jw *jw, const struct tp_arch *a)
{
	for (size_t k = 8; k < tp_arch_n_fields; k++) {
		const struct tp_arch_field *f = &tp_arch_fields[k];
		const char *p = (const char *)a + f->offset;

		if (!tp_arch_field_set(a, f))
			continue;
		switch (f->type) {
		case TP_ARCH_INT:
			tp_jw_kv_int(jw, f->key,
				     *(const int64_t *)(const void *)p);
			break;
		case TP_ARCH_NUM:
			tp_jw_kv_number(jw, f->key,
					*(const double *)(const void *)p);
			break;
		case TP_ARCH_TRI:
			tp_jw_kv_bool(jw, f->key,
				      *(const enum tp_tri *)(const void *)p ==
					      TP_TRI_YES);
			break;
		case TP_ARCH_ENUM:
			tp_jw_kv_string(jw, f->key,
					f->name(*(const int *)(const void *)p));
			break;
		default:
			tp_jw_kv_string(jw, f->key, p);
			break;
		}
	}
}

static void inspect_model(struct tp_jw *jw, const struct tp_model *m)
{
	double bwd = 0, out = 0, edge = 0;
	int32_t max_layer = -1;
	uint32_t kinds[TP_OP_KIND_COUNT] = {0};
	const struct tp_arch *a = &m->arch;

	for (size_t k = 0; k < m->ops.n; k++) {
		const struct tp_op *op = &m->ops.v[k];
		bwd += op->backward_flop;
		out += op->out_bytes;
		if (op->layer > max_layer)
			max_layer = op->layer;
		kinds[op->kind]++;
	}
	for (size_t k = 0; k < m->edges.n; k++)
		edge += m->edges.v[k].bytes;
	tp_jw_kv_string(jw, "kind", "model");
	tp_jw_kv_string(jw, "name", m->name);
	tp_jw_kv_string(jw, "dtype", tp_dtype_name(m->dtype));
	tp_jw_kv_string(jw, "optimizer", tp_optimizer_name(m->optimizer));
	tp_jw_kv_int(jw, "global_batch_size", m->global_batch);
	tp_jw_kv_int(jw, "sequence_length", m->seq_len);
	tp_jw_kv_int(jw, "ops", (int64_t)m->ops.n);
	tp_jw_kv_int(jw, "edges", (int64_t)m->edges.n);
	tp_jw_kv_int(jw, "layers", max_layer + 1);
	tp_jw_kv_number(jw, "parameters", tp_model_parameters(m));
	if (tp_model_active_parameters(m) >= 0)
		tp_jw_kv_number(jw, "active_parameters",
				tp_model_active_parameters(m));
	tp_jw_kv_number(jw, "parameter_bytes", m->total_param_bytes);
	tp_jw_kv_number(jw, "forward_flop_per_sample", m->total_flop);
	tp_jw_kv_number(jw, "backward_flop_per_sample", bwd);
	tp_jw_kv_number(jw, "flop_per_iteration",
			(m->total_flop + bwd) * (double)m->global_batch);
	tp_jw_kv_number(jw, "activation_bytes_per_sample",
			m->total_saved_bytes);
	tp_jw_kv_number(jw, "output_bytes_per_sample", out);
	tp_jw_kv_number(jw, "edge_bytes_per_sample", edge);
	tp_jw_kv_int(jw, "profiles", (int64_t)m->profiles.n);
	tp_jw_key(jw, "op_kinds");
	tp_jw_object_begin(jw);
	for (int k = 0; k < TP_OP_KIND_COUNT; k++)
		if (kinds[k])
			tp_jw_kv_int(jw, tp_op_kind_name((enum tp_op_kind)k),
				     kinds[k]);
	tp_jw_object_end(jw);
	if (a->hidden || a->heads || a->layers || a->vocab || a->family[0]) {
		tp_jw_key(jw, "arch");
		tp_jw_object_begin(jw);
		tp_jw_kv_int(jw, "hidden", a->hidden);
		tp_jw_kv_int(jw, "heads", a->heads);
		tp_jw_kv_int(jw, "kv_heads", a->kv_heads);
		tp_jw_kv_int(jw, "layers", a->layers);
		tp_jw_kv_int(jw, "vocab", a->vocab);
		tp_jw_kv_int(jw, "ffn", a->ffn);
		tp_jw_kv_int(jw, "experts", a->experts);
		tp_jw_kv_string(jw, "family", a->family);
		inspect_arch_rest(jw, a);
		tp_jw_object_end(jw);
	}
}

static void type_counts(struct tp_jw *jw, const struct tp_cluster *c,
			uint32_t first, uint32_t n)
{
	uint32_t *cnt = calloc(c->types.n + 1, sizeof(uint32_t));

	tp_jw_object_begin(jw);
	if (cnt) {
		for (uint32_t d = first; d < first + n; d++)
			cnt[c->devices.v[d].type]++;
		for (size_t t = 0; t < c->types.n; t++)
			if (cnt[t])
				tp_jw_kv_int(jw, c->types.v[t].name, cnt[t]);
	}
	tp_jw_object_end(jw);
	free(cnt);
}

static void inspect_topology(struct tp_jw *jw, const struct tp_cluster *c)
{
	double mem = 0, min_bw = INFINITY, max_lat = 0;
	uint32_t nd = (uint32_t)c->devices.n;

	for (uint32_t d = 0; d < nd; d++)
		mem += c->types.v[c->devices.v[d].type].memory_bytes;
	/* exact over all pairs, from the hierarchy (core/route.c) */
	tp_cluster_route_extremes(c, &min_bw, &max_lat);
	tp_jw_kv_string(jw, "kind", "topology");
	tp_jw_kv_string(jw, "name", c->name ? c->name : "");
	tp_jw_kv_int(jw, "devices", nd);
	tp_jw_key(jw, "device_types");
	type_counts(jw, c, 0, nd);
	tp_jw_kv_int(jw, "nodes", (int64_t)c->nodes.n);
	tp_jw_kv_int(jw, "links", (int64_t)c->links.n);
	tp_jw_kv_number(jw, "memory_bytes", mem);
	tp_jw_key(jw, "peak_flops");
	tp_jw_object_begin(jw);
	for (int t = 0; t < TP_DTYPE_COUNT; t++)
		tp_jw_kv_number(jw, tp_dtype_name((enum tp_dtype)t),
				tp_cluster_total_peak(c, (enum tp_dtype)t));
	tp_jw_object_end(jw);
	if (nd > 1) {
		tp_jw_kv_number(jw, "min_route_bandwidth_Bps", min_bw);
		tp_jw_kv_number(jw, "max_route_latency_s", max_lat);
	}
	tp_jw_kv_number(jw, "oversubscription", c->oversubscription);
	tp_jw_key(jw, "node_list");
	tp_jw_array_begin(jw);
	for (size_t k = 0; k < c->nodes.n; k++) {
		const struct tp_node *n = &c->nodes.v[k];
		tp_jw_object_begin(jw);
		tp_jw_kv_string(jw, "name", n->name);
		tp_jw_kv_int(jw, "devices", n->n_devices);
		tp_jw_key(jw, "device_types");
		type_counts(jw, c, n->first_device, n->n_devices);
		tp_jw_key(jw, "fabric");
		if (n->fabric_vertex != TP_NONE) {
			tp_jw_object_begin(jw);
			tp_jw_kv_string(jw, "kind",
					tp_link_kind_name(n->fabric_kind));
			tp_jw_kv_number(jw, "bandwidth_Bps", n->fabric_bw_Bps);
			tp_jw_kv_number(jw, "latency_s", n->fabric_latency_s);
			tp_jw_object_end(jw);
		} else {
			tp_jw_null(jw);
		}
		tp_jw_key(jw, "nic");
		if (n->nic_vertex != TP_NONE) {
			tp_jw_object_begin(jw);
			tp_jw_kv_int(jw, "count", n->n_nics);
			tp_jw_kv_number(jw, "bandwidth_Bps", n->nic_bw_Bps);
			tp_jw_kv_number(jw, "latency_s", n->nic_latency_s);
			if (n->rails)
				tp_jw_kv_bool(jw, "rails", true);
			tp_jw_object_end(jw);
		} else {
			tp_jw_null(jw);
		}
		tp_jw_object_end(jw);
	}
	tp_jw_array_end(jw);
}

static void inspect_plan(struct tp_jw *jw, const struct tp_plan *p,
			 const struct tp_model *m, const struct tp_cluster *c)
{
	uint8_t *used = calloc(c->devices.n + 1, 1);
	uint32_t n_used = 0;

	for (size_t k = 0; used && k < p->devs.n; k++)
		if (!used[p->devs.v[k]]++)
			n_used++;
	free(used);
	tp_jw_kv_string(jw, "kind", "plan");
	tp_jw_kv_string(jw, "model", m->name);
	tp_jw_kv_string(jw, "topology", c->name ? c->name : "");
	tp_jw_kv_int(jw, "global_batch_size", p->global_batch);
	tp_jw_kv_int(jw, "micro_batches", p->micro_batches);
	tp_jw_kv_string(jw, "schedule", tp_schedule_name(p->schedule));
	tp_jw_kv_int(jw, "virtual_stages", p->virtual_stages);
	tp_jw_kv_int(jw, "zero", p->zero);
	tp_jw_kv_string(jw, "compression", tp_compression_name(p->compression));
	if (p->grad_bucket_bytes > 0)
		tp_jw_kv_number(jw, "grad_bucket_bytes", p->grad_bucket_bytes);
	tp_jw_kv_int(jw, "groups", (int64_t)p->groups.n);
	tp_jw_kv_int(jw, "devices_used", n_used);
	tp_jw_kv_int(jw, "devices_total", (int64_t)c->devices.n);
	tp_jw_key(jw, "group_list");
	tp_jw_array_begin(jw);
	for (uint32_t g = 0; g < p->groups.n; g++) {
		const struct tp_plan_group *gr = &p->groups.v[g];
		double flop = 0, params = 0;
		char name[32];
		for (uint32_t k = 0; k < gr->n_ops; k++) {
			flop += m->ops.v[tp_plan_group_ops(p, g)[k]].flop;
			params +=
			    m->ops.v[tp_plan_group_ops(p, g)[k]].param_bytes;
		}
		snprintf(name, sizeof(name), "g%u", g);
		tp_jw_object_begin(jw);
		tp_jw_kv_string(jw, "name", name);
		tp_jw_kv_int(jw, "ops", gr->n_ops);
		tp_jw_kv_number(jw, "forward_flop_per_sample", flop);
		tp_jw_kv_number(jw, "parameter_bytes", params);
		tp_jw_kv_int(jw, "devices", gr->n_devices);
		tp_jw_kv_int(jw, "dp", gr->dp);
		if (gr->cp > 1)
			tp_jw_kv_int(jw, "cp", gr->cp);
		tp_jw_kv_int(jw, "tp", gr->tp);
		tp_jw_kv_string(jw, "sync", tp_sync_name(gr->sync));
		tp_jw_kv_string(jw, "recompute",
				tp_recompute_name(gr->recompute));
		tp_jw_kv_bool(jw, "sp", gr->sp);
		tp_jw_kv_int(jw, "sfb_ops", gr->n_sfb);
		tp_jw_object_end(jw);
	}
	tp_jw_array_end(jw);
	if (p->summary.valid) {
		tp_jw_key(jw, "summary");
		tp_jw_object_begin(jw);
		tp_jw_kv_bool(jw, "feasible", p->summary.feasible);
		tp_jw_kv_number(jw, "iteration_time_s",
				p->summary.iteration_time_s);
		tp_jw_kv_number(jw, "throughput_samples_per_s",
				p->summary.throughput_samples_per_s);
		tp_jw_kv_number(jw, "mfu", p->summary.mfu);
		tp_jw_object_end(jw);
	}
}

static void inspect_outline(struct tp_jw *jw, const struct tp_plan_outline *ol)
{
	tp_jw_kv_string(jw, "kind", "plan");
	tp_jw_kv_bool(jw, "resolved", false);
	tp_jw_kv_string(jw, "model", ol->model);
	tp_jw_kv_string(jw, "topology", ol->topology);
	tp_jw_kv_int(jw, "global_batch_size", ol->global_batch);
	tp_jw_kv_int(jw, "micro_batches", ol->micro_batches);
	tp_jw_kv_string(jw, "schedule", tp_schedule_name(ol->schedule));
	tp_jw_kv_int(jw, "virtual_stages", ol->virtual_stages);
	tp_jw_kv_int(jw, "zero", ol->zero);
	tp_jw_kv_string(jw, "compression",
			tp_compression_name(ol->compression));
	if (ol->grad_bucket_bytes > 0)
		tp_jw_kv_number(jw, "grad_bucket_bytes", ol->grad_bucket_bytes);
	tp_jw_kv_int(jw, "groups", (int64_t)ol->groups.n);
	tp_jw_kv_int(jw, "devices_used", ol->n_distinct_devices);
	tp_jw_key(jw, "group_list");
	tp_jw_array_begin(jw);
	for (size_t g = 0; g < ol->groups.n; g++) {
		const struct tp_plan_outline_group *og = &ol->groups.v[g];
		tp_jw_object_begin(jw);
		tp_jw_kv_int(jw, "op_entries", og->n_op_entries);
		tp_jw_kv_int(jw, "op_ranges", og->n_ranges);
		tp_jw_kv_int(jw, "devices", og->n_devices);
		tp_jw_kv_int(jw, "dp", og->dp);
		if (og->cp > 1)
			tp_jw_kv_int(jw, "cp", og->cp);
		tp_jw_kv_int(jw, "tp", og->tp);
		tp_jw_kv_string(jw, "sync", tp_sync_name(og->sync));
		tp_jw_kv_string(jw, "recompute",
				tp_recompute_name(og->recompute));
		tp_jw_kv_bool(jw, "sp", og->sp);
		tp_jw_object_end(jw);
	}
	tp_jw_array_end(jw);
	if (ol->has_summary)
		tp_jw_kv_number(jw, "iteration_time_s", ol->iteration_time_s);
}

static void inspect_report(struct tp_jw *jw, const struct tp_report *r)
{
	double peak = 0;

	for (uint32_t d = 0; d < r->n_devices; d++)
		if (r->devices[d].peak_memory_bytes > peak)
			peak = r->devices[d].peak_memory_bytes;
	tp_jw_kv_string(jw, "kind", "report");
	tp_jw_kv_bool(jw, "feasible", r->feasible);
	tp_jw_kv_number(jw, "iteration_time_s", r->iteration_time_s);
	tp_jw_kv_number(jw, "throughput_samples_per_s",
			r->throughput_samples_per_s);
	tp_jw_kv_number(jw, "tokens_per_s", r->tokens_per_s);
	tp_jw_kv_number(jw, "tflops_per_device", r->tflops_per_device);
	tp_jw_kv_number(jw, "mfu", r->mfu);
	tp_jw_kv_number(jw, "bubble_fraction", r->bubble_fraction);
	tp_jw_kv_int(jw, "devices", r->n_devices);
	tp_jw_kv_number(jw, "max_peak_memory_bytes", peak);
	tp_jw_kv_int(jw, "links", r->n_links);
	if (r->reason[0])
		tp_jw_kv_string(jw, "reason", r->reason);
}

static void inspect_devices(struct tp_jw *jw, const struct tp_cluster *c)
{
	tp_jw_kv_string(jw, "kind", "devices");
	tp_jw_kv_int(jw, "device_types", (int64_t)c->types.n);
	tp_jw_key(jw, "names");
	tp_jw_array_begin(jw);
	for (size_t k = 0; k < c->types.n; k++)
		tp_jw_string(jw, c->types.v[k].name);
	tp_jw_array_end(jw);
}

static void inspect_runtime(struct tp_jw *jw, const struct tp_runtime *rt)
{
	tp_jw_kv_string(jw, "kind", "runtime");
	tp_jw_kv_string(jw, "name", rt->name);
	tp_jw_kv_string(jw, "description", rt->description);
	tp_jw_kv_string(jw, "launcher", tp_launcher_name(rt->can.launcher));
}

/* inspect --help */
static const char about[] =
    "Print a JSON summary of a tagplan file on stdout.\n"
    "  model:    \"parameters\", \"forward_flop_per_sample\", ops, "
    "edges, dtype,\n"
    "            global batch, sequence length, activation bytes, "
    "op kinds\n"
    "  topology: \"devices\" (count), \"device_types\" (name -> "
    "count), nodes,\n"
    "            links, total memory and peak FLOP/s, route "
    "extremes (exact over\n"
    "            all pairs, from the hierarchy)\n"
    "  plan:     its groups (resolved with -m MODEL -t TOPO, else "
    "with the files\n"
    "            it records when they are there unchanged, else as "
    "written)\n"
    "  report:   the headline figures\n"
    "  runtime:  a tagplan-runtime/1 profile's name, description and "
    "launcher\n\n"
    "example:\n  tagplan inspect data/demo-model.json | jq "
    ".parameters";

/* A plan given alone, resolved against the model and topology it
 * records when both are there unchanged (their SHA-256 as recorded), as
 * check, render and validate find them: its full summary into jw, and
 * stderr says which files (true); else false (the outline as written). */
static bool inspect_recorded(struct tp_jw *jw, const char *path,
			     const struct tp_load_options *o, bool quiet)
{
	struct tp_inputs in;
	struct tp_error e;
	bool ok;

	if (!strcmp(path, "-"))
		return false;
	tp_inputs_init(&in);
	in.strict = o->strict;
	tp_error_clear(&e);
	ok = tp_inputs_load(&in, path, NULL, NULL, NULL, &e) == TP_OK &&
	     in.model_recorded && in.topology_recorded &&
	     !in.model_changed && !in.topology_changed;
	if (ok) {
		struct tp_strbuf used;

		tp_strbuf_init(&used);
		tp_inputs_describe(&in, &used);
		if (used.len && !quiet)
			fprintf(stderr, "tagplan inspect: %s",
				tp_strbuf_cstr(&used));
		tp_strbuf_release(&used);
		inspect_plan(jw, &in.plan, &in.model, &in.cluster);
	}
	tp_inputs_release(&in);
	return ok;
}

/* inspect takes one file: the usage error of npos others. */
static int file_count_error(int npos)
{
	if (!npos)
		return tp_cli_usage_error("inspect",
					  "missing FILE: a model, topology, "
					  "plan or report");
	return tp_cli_usage_error("inspect",
				  "expected one FILE, got %d: inspect them one "
				  "at a time (tagplan validate checks several "
				  "at once)",
				  npos);
}

int cmd_inspect(int argc, char **argv)
{
	const char *model = NULL, *topo = NULL;
	bool strict = false, quiet = false;
	long long max_bytes = (long long)TP_IO_DEFAULT_MAX_BYTES;
	struct tp_opt opts[] = {
	    {"model", 'm', TP_OPT_STRING, &model, "MODEL",
	     "model a plan refers to (with -t)", 0, 0, false},
	    {"topology", 't', TP_OPT_STRING, &topo, "TOPO",
	     "topology a plan refers to (with -m)", 0, 0, false},
	    {"strict", 0, TP_OPT_FLAG, &strict, NULL,
	     "unknown fields are errors, not warnings", 0, 0, false},
	    {"max-bytes", 0, TP_OPT_INT, &max_bytes, "N",
	     "refuse files larger than N bytes", 1, 4.6e18, false},
	    {"quiet", 'q', TP_OPT_FLAG, &quiet, NULL, TP_CLI_QUIET_HELP, 0, 0,
	     false},
	    {NULL, 0, 0, NULL, NULL, NULL, 0, 0, false}};
	char **pos = NULL;
	int npos = 0, code, rc = TP_EXIT_OK;
	struct tp_load_options o;
	struct tp_strbuf warnings, out;
	struct tp_error err;
	struct tp_jw jw;
	char *text = NULL;
	size_t len;
	enum tp_format_kind kind;
	enum tp_status st;
	struct tp_model m;
	struct tp_cluster c;
	struct tp_plan p;
	struct tp_report r;
	struct tp_plan_outline ol;

	if (tp_opts_parse(&(struct tp_cli_doc){"inspect", "[OPTIONS] FILE",
					       about},
			  opts, argc, argv, &pos, &npos, &code))
		return code;
	if (npos != 1) {
		free(pos);
		return file_count_error(npos);
	}
	if ((model == NULL) != (topo == NULL)) {
		free(pos);
		return tp_cli_usage_error("inspect",
					  "-m MODEL and -t TOPO go together");
	}
	if ((model && !strcmp(model, "-")) + (topo && !strcmp(topo, "-")) +
		    !strcmp(pos[0], "-") >
	    1) {
		free(pos);
		return tp_cli_usage_error("inspect",
					  "only one input can come from stdin");
	}
	tp_load_options_default(&o);
	o.strict = strict;
	o.max_bytes = (size_t)max_bytes;
	tp_strbuf_init(&warnings);
	tp_strbuf_init(&out);
	o.warnings = &warnings;
	tp_error_clear(&err);
	tp_model_init(&m);
	tp_cluster_init(&c);
	tp_plan_init(&p);
	tp_report_init(&r);
	memset(&ol, 0, sizeof(ol));
	tp_jw_init(&jw, &out, true);
	if ((st = tp_file_read_text(pos[0], o.max_bytes, &text, &len, &err)))
		goto done;
	kind = tp_format_sniff(text, len);
	if (kind == TP_FORMAT_UNKNOWN &&
	    (st = tp_format_detect(pos[0], text, len, &o, &kind, &err)))
		goto done;
	tp_jw_object_begin(&jw);
	switch (kind) {
	case TP_FORMAT_MODEL:
		if (!(st = tp_model_load(pos[0], text, len, &o, &m, &err)))
			inspect_model(&jw, &m);
		break;
	case TP_FORMAT_TOPOLOGY:
		if (!(st = tp_topology_load(pos[0], text, len, &o, &c, &err)))
			inspect_topology(&jw, &c);
		break;
	case TP_FORMAT_PLAN:
		if (model) {
			if ((st = tp_model_load_file(model, &o, &m, &err))) {
				if (st == TP_EINPUT)
					tp_inputs_hint_kind(model, "model",
							    &err);
			} else if ((st = tp_topology_load_file(topo, &o, &c,
							       &err))) {
				if (st == TP_EINPUT)
					tp_inputs_hint_kind(topo, "topology",
							    &err);
			} else if (!(st = tp_plan_load(pos[0], text, len, &m,
						       &c, &o, &p, &err))) {
				inspect_plan(&jw, &p, &m, &c);
			}
		} else if (!(st = tp_plan_check(pos[0], text, len, &o, &ol,
						&err)) &&
			   !inspect_recorded(&jw, pos[0], &o, quiet)) {
			inspect_outline(&jw, &ol);
		}
		break;
	case TP_FORMAT_REPORT:
		if (!(st = tp_report_load(pos[0], text, len, &o, &r, &err)))
			inspect_report(&jw, &r);
		break;
	case TP_FORMAT_DEVICES:
		if (!(st = tp_devices_load(pos[0], text, len, &o, &c, &err)))
			inspect_devices(&jw, &c);
		break;
	case TP_FORMAT_RUNTIME: {
		struct tp_runtime rt;
		if (!(st = tp_runtime_load(pos[0], text, len, &o, &rt, &err)))
			inspect_runtime(&jw, &rt);
		break;
	}
	case TP_FORMAT_UNKNOWN:
		st = tp_error_set(&err, TP_EINTERNAL, "unknown format");
		break;
	}
	if (!st) {
		tp_jw_object_end(&jw);
		tp_jw_finish(&jw);
		if (out.failed)
			st = tp_error_set(&err, TP_ENOMEM, "out of memory");
	}
done:
	tp_cli_print_warnings("inspect", &warnings);
	if (st) {
		rc = tp_cli_fail(&err);
	} else {
		tp_error_clear(&err);
		if (tp_file_write_atomic("-", out.buf, out.len, &err))
			rc = tp_cli_fail(&err);
	}
	free(text);
	tp_model_release(&m);
	tp_cluster_release(&c);
	tp_plan_release(&p);
	tp_report_release(&r);
	tp_plan_outline_release(&ol);
	tp_strbuf_release(&warnings);
	tp_strbuf_release(&out);
	free(pos);
	return rc;
}
