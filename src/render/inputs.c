/*
 * inputs.c - load model, topology and plan; compare recorded digests
 * (inputs.h).
 */
#include "inputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/sha256.h"
#include "../io/io.h"
#include "../sim/sim.h"

void tp_inputs_init(struct tp_inputs *in)
{
	memset(in, 0, sizeof(*in));
	tp_model_init(&in->model);
	tp_cluster_init(&in->cluster);
	tp_plan_init(&in->plan);
}

void tp_inputs_release(struct tp_inputs *in)
{
	if (!in)
		return;
	tp_plan_release(&in->plan);
	tp_cluster_release(&in->cluster);
	tp_model_release(&in->model);
	memset(in, 0, sizeof(*in));
}

/* Compare the digest of file path with the recorded one; warn and set
 * *changed when they differ.  Unreadable files were already reported by
 * the loader; stdin cannot be re-read. */
static void compare_digest(const char *what, const char *path,
			   const char *recorded, const char *recorded_file,
			   bool *changed, struct tp_strbuf *warnings)
{
	char *data = NULL, hex[65];
	size_t len = 0;
	struct tp_error e;

	*changed = false;
	if (!recorded || !recorded[0] || strcmp(path, "-") == 0)
		return;
	tp_error_clear(&e);
	if (tp_file_read(path, 0, &data, &len, &e) != TP_OK)
		return;
	tp_sha256_hex(data, len, hex);
	free(data);
	if (strcmp(hex, recorded) == 0)
		return;
	*changed = true;
	if (warnings)
		tp_strbuf_addf(warnings,
			       "%s: the %s differs from the one the plan was "
			       "made from (%s%s%ssha256 %.12s..., now "
			       "%.12s...); the figures below are for the "
			       "file given\n",
			       path, what, recorded_file && *recorded_file
						   ? "made from "
						   : "",
			       recorded_file ? recorded_file : "",
			       recorded_file && *recorded_file ? ", " : "",
			       recorded, hex);
}

/* The shipped defaults, and what the plan says it was made for (its
 * "model" and "topology" names; "" when it does not say or cannot be
 * read: the plan loader reports that). */
static enum tp_status defaults(const char *plan_path, const char *model_path,
			       const char *topology_path, char *mdef,
			       char *tdef, size_t size, char *plan_model,
			       char *plan_topo, size_t name_size,
			       struct tp_error *err)
{
	struct tp_plan_outline ol;
	struct tp_load_options o;
	struct tp_error e;
	char *text = NULL;
	size_t len = 0;
	enum tp_status st;

	plan_model[0] = plan_topo[0] = '\0';
	if (!model_path &&
	    (st = tp_data_path("demo-model.json", mdef, size, err)) != TP_OK)
		return st;
	if (!topology_path &&
	    (st = tp_data_path("tag-testbed.json", tdef, size, err)) != TP_OK)
		return st;
	memset(&ol, 0, sizeof(ol));
	tp_load_options_default(&o);
	tp_error_clear(&e);
	if (strcmp(plan_path, "-") == 0 ||
	    tp_file_read(plan_path, 0, &text, &len, &e) != TP_OK)
		return TP_OK;
	if (tp_plan_check(plan_path, text, len, &o, &ol, &e) == TP_OK) {
		snprintf(plan_model, name_size, "%s", ol.model);
		snprintf(plan_topo, name_size, "%s", ol.topology);
	}
	tp_plan_outline_release(&ol);
	free(text);
	return TP_OK;
}

enum tp_status tp_inputs_load(struct tp_inputs *in, const char *plan_path,
			      const char *model_path,
			      const char *topology_path,
			      struct tp_strbuf *warnings, struct tp_error *err)
{
	struct tp_load_options o;
	enum tp_status st;
	char mdef[1024], tdef[1024], pm[256] = "", pt[256] = "";

	if (!model_path || !topology_path) {
		if ((st = defaults(plan_path, model_path, topology_path, mdef,
				   tdef, sizeof(mdef), pm, pt, sizeof(pm),
				   err)) != TP_OK)
			return st;
		if (!model_path) {
			model_path = mdef;
			in->model_default = true;
		}
		if (!topology_path) {
			topology_path = tdef;
			in->topology_default = true;
		}
	}
	if (strcmp(model_path, "-") == 0 && strcmp(topology_path, "-") == 0)
		return tp_error_set(err, TP_EUSAGE,
				    "only one input can come from stdin (-)");
	tp_load_options_default(&o);
	o.warnings = warnings;
	snprintf(in->model_path, sizeof(in->model_path), "%s", model_path);
	snprintf(in->topology_path, sizeof(in->topology_path), "%s",
		 topology_path);
	if ((st = tp_model_load_file(model_path, &o, &in->model, err)) !=
	    TP_OK)
		return st;
	if ((st = tp_topology_load_file(topology_path, &o, &in->cluster,
					err)) != TP_OK)
		return st;
	/* a plan that says it was made for other files than the defaults */
	if (in->model_default && pm[0] && strcmp(pm, in->model.name) != 0)
		return tp_error_set(err, TP_EUSAGE,
				    "%s was made for model \"%s\": pass its "
				    "model file with -m (without -m the "
				    "shipped demo model \"%s\" is used)",
				    plan_path, pm, in->model.name);
	if (in->topology_default && pt[0] &&
	    strcmp(pt, in->cluster.name) != 0)
		return tp_error_set(err, TP_EUSAGE,
				    "%s was made for topology \"%s\": pass "
				    "its topology file with -t (without -t "
				    "the shipped TAG testbed is used)",
				    plan_path, pt);
	if ((st = tp_plan_load_file(plan_path, &in->model, &in->cluster, &o,
				    &in->plan, err)) != TP_OK) {
		if (st == TP_EINPUT &&
		    (in->model_default || in->topology_default)) {
			size_t n = strlen(err->msg);
			snprintf(err->msg + n, sizeof(err->msg) - n,
				 " (read against the shipped %s, the default "
				 "without %s; pass the files the plan was made "
				 "for)",
				 in->model_default && in->topology_default
					 ? "demo model and TAG testbed"
				 : in->model_default ? "demo model"
						     : "TAG testbed",
				 in->model_default && in->topology_default
					 ? "-m/-t"
				 : in->model_default ? "-m"
						     : "-t");
		}
		return st;
	}
	in->loaded = true;
	if (in->plan.summary.valid) {
		const struct tp_plan_summary *s = &in->plan.summary;
		compare_digest("model", model_path, s->model_sha256,
			       s->model_file, &in->model_changed, warnings);
		compare_digest("topology", topology_path, s->topology_sha256,
			       s->topology_file, &in->topology_changed,
			       warnings);
	}
	return TP_OK;
}

enum tp_status tp_inputs_load_plan(const struct tp_inputs *in,
				   const char *plan_path, struct tp_plan *p,
				   struct tp_strbuf *warnings,
				   struct tp_error *err)
{
	struct tp_load_options o;

	tp_load_options_default(&o);
	o.warnings = warnings;
	return tp_plan_load_file(plan_path, &in->model, &in->cluster, &o, p,
				 err);
}

enum tp_status tp_inputs_sim_open(struct tp_inputs_sim *s,
				  const struct tp_inputs *in,
				  struct tp_error *err)
{
	struct tp_sim_options o;

	memset(s, 0, sizeof(*s));
	tp_sim_options_default(&o);
	s->sim = tp_sim_new(&in->model, &in->cluster, &o, err);
	if (!s->sim)
		return err && err->status != TP_OK ? err->status : TP_ENOMEM;
	s->scratch = tp_sim_scratch_new(s->sim);
	if (!s->scratch) {
		tp_sim_free(s->sim);
		s->sim = NULL;
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	}
	return TP_OK;
}

void tp_inputs_sim_close(struct tp_inputs_sim *s)
{
	if (!s)
		return;
	tp_sim_scratch_free(s->scratch);
	tp_sim_free(s->sim);
	memset(s, 0, sizeof(*s));
}

enum tp_status tp_inputs_sim_run(void *ctx, const struct tp_plan *p,
				 struct tp_report *report,
				 struct tp_error *err)
{
	struct tp_inputs_sim *s = ctx;
	return tp_sim_run(s->sim, p, s->scratch, report, NULL, err);
}
