/*
 * harness.c - the fuzz target bodies (contracts in harness.h).
 *
 * Compiled into each libFuzzer binary by the Makefile and included by
 * tests/test_reliability.c, so a regression input replays through exactly
 * the code that found it.
 */
#include "harness.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/plan.h"
#include "core/report.h"
#include "core/runtime.h"
#include "core/strategy.h"
#include "core/strbuf.h"
#include "gnn/net.h"
#include "gnn/weights.h"
#include "io/build.h"
#include "io/io.h"
#include "io/runs.h"
#include "search/joint.h"
#include "search/search.h"
#include "sim/sim.h"

/* Fuzz inputs are small: a low size limit reaches the limit paths too. */
#define FZ_MAX_BYTES (1 << 16)

static void fz_options(struct tp_load_options *o, struct tp_strbuf *warnings)
{
	tp_load_options_default(o);
	tp_strbuf_init(warnings);
	o->warnings = warnings;
	o->max_bytes = FZ_MAX_BYTES;
}

/* A failed call must say why, and formatting its record must work. */
static const char *fz_failed(enum tp_status st, const struct tp_error *err)
{
	char buf[2048];

	if (st == TP_OK)
		return NULL;
	if (err->status != st)
		return "the error record's status differs from the returned "
		       "status";
	if (!err->msg[0])
		return "a call failed without a message";
	tp_error_format(err, buf, sizeof buf);
	return NULL;
}

static bool same(const struct tp_strbuf *a, const struct tp_strbuf *b)
{
	return a->len == b->len && memcmp(a->buf, b->buf, a->len) == 0;
}

enum tp_status fz_fixture_load(struct fz_fixture *fx, const char *model_path,
			       const char *topology_path, struct tp_error *err)
{
	struct tp_sim_options so;
	enum tp_status st;

	memset(fx, 0, sizeof *fx);
	tp_model_init(&fx->model);
	tp_cluster_init(&fx->cluster);
	st = tp_model_load_file(model_path, NULL, &fx->model, err);
	if (!st)
		st = tp_topology_load_file(topology_path, NULL, &fx->cluster,
					   err);
	if (!st) {
		tp_sim_options_default(&so);
		fx->sim = tp_sim_new(&fx->model, &fx->cluster, &so, err);
		if (!fx->sim)
			st = err->status ? err->status : TP_EINTERNAL;
	}
	if (!st) {
		fx->scratch = tp_sim_scratch_new(fx->sim);
		if (!fx->scratch)
			st = tp_error_set(err, TP_ENOMEM, "simulator scratch");
	}
	if (st)
		fz_fixture_release(fx);
	return st;
}

void fz_fixture_release(struct fz_fixture *fx)
{
	tp_sim_scratch_free(fx->scratch);
	tp_sim_free(fx->sim);
	tp_cluster_release(&fx->cluster);
	tp_model_release(&fx->model);
	memset(fx, 0, sizeof *fx);
}

const char *fz_model_one(const uint8_t *data, size_t size,
			 struct tp_error *err)
{
	struct tp_load_options o;
	struct tp_strbuf warnings, w1, w2;
	struct tp_model m, m2;
	const char *bug;
	enum tp_status st;

	fz_options(&o, &warnings);
	tp_error_clear(err);
	tp_model_init(&m);
	st = tp_model_load("fuzz.json", (const char *)data, size, &o, &m, err);
	bug = fz_failed(st, err);
	if (st == TP_OK) {
		tp_strbuf_init(&w1);
		tp_strbuf_init(&w2);
		tp_model_write(&m, &w1);
		tp_model_init(&m2);
		if (tp_model_load("roundtrip.json", w1.buf, w1.len, NULL, &m2,
				  err))
			bug = "the model writer's output does not load";
		tp_model_write(&m2, &w2);
		if (!bug && !same(&w1, &w2))
			bug = "model round trip changed the text";
		tp_model_release(&m2);
		tp_strbuf_release(&w1);
		tp_strbuf_release(&w2);
	}
	tp_model_release(&m);
	tp_strbuf_release(&warnings);
	return bug;
}

const char *fz_topology_one(const uint8_t *data, size_t size,
			    struct tp_error *err)
{
	struct tp_load_options o;
	struct tp_strbuf warnings, w1, w2;
	struct tp_cluster c, c2;
	const char *bug;
	enum tp_status st;

	fz_options(&o, &warnings);
	tp_error_clear(err);
	tp_cluster_init(&c);
	st = tp_topology_load("fuzz.json", (const char *)data, size, &o, &c,
			      err);
	bug = fz_failed(st, err);
	if (st == TP_OK) {
		tp_strbuf_init(&w1);
		tp_strbuf_init(&w2);
		tp_topology_write(&c, &w1);
		tp_cluster_init(&c2);
		if (tp_topology_load("roundtrip.json", w1.buf, w1.len, NULL,
				     &c2, err))
			bug = "the topology writer's output does not load";
		tp_topology_write(&c2, &w2);
		if (!bug && !same(&w1, &w2))
			bug = "topology round trip changed the text";
		tp_cluster_release(&c2);
		tp_strbuf_release(&w1);
		tp_strbuf_release(&w2);
	}
	tp_cluster_release(&c);
	tp_strbuf_release(&warnings);
	return bug;
}

/* A validated plan must simulate (feasible or not) without error. */
/* A plan tp_sim_run simulated into *rep, run again bounded with a cutoff
 * no plan reaches (sim.h): it is cut only when out of memory (decided
 * from the compute tasks' order before the task graph, sim.c), exactly
 * when the report is infeasible, and otherwise simulates to the same
 * figures. */
static const char *fz_bounded_same(const struct tp_sim *sim,
				   struct tp_sim_scratch *scr,
				   const struct tp_plan *p,
				   const struct tp_report *rep,
				   struct tp_error *err)
{
	struct tp_report rep2;
	struct tp_sim_cut cut;
	const char *bug = NULL;

	tp_report_init(&rep2);
	tp_error_clear(err);
	if (tp_sim_run_bounded(sim, p, scr, 1e300, &rep2, NULL, &cut, err))
		bug = "a plan that simulates fails its bounded run";
	else if (cut.bounded && !cut.out_of_memory)
		bug = rep->iteration_time_s >= cut.lower_bound_s
			      ? NULL
			      : "a bounded run's lower bound exceeds the "
				"simulated time";
	else if (cut.bounded && rep->feasible)
		bug = "a bounded run cut a feasible plan as out of memory";
	else if (!cut.bounded && !rep->feasible)
		bug = "a bounded run did not cut a plan out of memory";
	else if (!cut.bounded &&
		 memcmp(&rep->iteration_time_s, &rep2.iteration_time_s,
			sizeof(double)) != 0)
		bug = "a bounded run simulated a different time";
	tp_report_release(&rep2);
	return bug;
}

static const char *fz_simulate(const struct fz_fixture *fx,
			       const struct tp_plan *p, struct tp_error *err)
{
	struct tp_report rep;
	const char *bug = NULL;

	tp_report_init(&rep);
	if (tp_sim_run(fx->sim, p, fx->scratch, &rep, NULL, err))
		bug = "a validated plan does not simulate";
	else
		bug = fz_bounded_same(fx->sim, fx->scratch, p, &rep, err);
	tp_report_release(&rep);
	return bug;
}

const char *fz_plan_one(const struct fz_fixture *fx, const uint8_t *data,
			size_t size, struct tp_error *err)
{
	struct tp_load_options o;
	struct tp_strbuf warnings, w1, w2;
	struct tp_plan p, p2;
	struct tp_plan_outline ol;
	const char *bug;
	enum tp_status st;

	fz_options(&o, &warnings);
	memset(&ol, 0, sizeof ol);
	tp_error_clear(err);
	st = tp_plan_check("fuzz.json", (const char *)data, size, &o, &ol, err);
	tp_plan_outline_release(&ol);
	bug = fz_failed(st, err);
	if (bug) {
		tp_strbuf_release(&warnings);
		return bug;
	}

	tp_error_clear(err);
	tp_plan_init(&p);
	st = tp_plan_load("fuzz.json", (const char *)data, size, &fx->model,
			  &fx->cluster, &o, &p, err);
	bug = fz_failed(st, err);
	if (st == TP_OK) {
		tp_strbuf_init(&w1);
		tp_strbuf_init(&w2);
		tp_plan_write(&p, &fx->model, &fx->cluster, &w1);
		tp_plan_init(&p2);
		if (tp_plan_load("roundtrip.json", w1.buf, w1.len, &fx->model,
				 &fx->cluster, NULL, &p2, err))
			bug = "the plan writer's output does not load";
		tp_plan_write(&p2, &fx->model, &fx->cluster, &w2);
		if (!bug && !same(&w1, &w2))
			bug = "plan round trip changed the text";
		tp_plan_release(&p2);
		tp_strbuf_release(&w1);
		tp_strbuf_release(&w2);
		if (!bug)
			bug = fz_simulate(fx, &p, err);
	}
	tp_plan_release(&p);
	tp_strbuf_release(&warnings);
	return bug;
}

const char *fz_hf_one(const uint8_t *data, size_t size, struct tp_error *err)
{
	static const int64_t seqs[4] = {0, 128, 2048, 100000};
	static const int64_t batches[4] = {0, 1, 8, 3};
	uint8_t sel = (uint8_t)(size * 37u);
	struct tp_strbuf w;
	struct tp_model m, m2;
	const char *bug;
	enum tp_status st;

	tp_error_clear(err);
	tp_model_init(&m);
	st = tp_build_hf_text("config.json", (const char *)data, size,
			      seqs[sel & 3], batches[(sel >> 2) & 3],
			      (sel >> 4) % 4 - 1, &m, err);
	bug = fz_failed(st, err);
	if (st == TP_OK) {
		tp_strbuf_init(&w);
		tp_model_write(&m, &w);
		tp_model_init(&m2);
		if (tp_model_load("built.json", w.buf, w.len, NULL, &m2, err))
			bug = "a built HF model does not load back";
		tp_model_release(&m2);
		tp_strbuf_release(&w);
	}
	tp_model_release(&m);
	return bug;
}

const char *fz_strategy_one(const struct fz_fixture *fx, const uint8_t *data,
			    size_t size, struct tp_error *err)
{
	char text[1024], canon[512], canon2[512];
	struct tp_strategy s, s2;
	struct tp_plan p;
	const char *bug;
	enum tp_status st;

	/* Command-line arguments are C strings. */
	if (size >= sizeof text)
		size = sizeof text - 1;
	memcpy(text, data, size);
	text[size] = '\0';

	tp_error_clear(err);
	st = tp_strategy_parse(text, &s, err);
	bug = fz_failed(st, err);
	if (st)
		return bug;
	tp_strategy_format(&s, canon, sizeof canon);
	if (tp_strategy_parse(canon, &s2, err))
		return "the canonical strategy string does not parse";
	tp_strategy_format(&s2, canon2, sizeof canon2);
	if (strcmp(canon, canon2))
		return "strategy format/parse round trip changed the string";

	tp_error_clear(err);
	tp_plan_init(&p);
	st = tp_strategy_to_plan(&s, &fx->model, &fx->cluster, &p, err);
	bug = fz_failed(st, err);
	if (st == TP_OK) {
		if (tp_plan_validate(&p, &fx->model, &fx->cluster, err))
			bug = "an expanded strategy fails tp_plan_validate";
		else
			bug = fz_simulate(fx, &p, err);
	}
	tp_plan_release(&p);
	return bug;
}

const char *fz_report_one(const uint8_t *data, size_t size,
			  struct tp_error *err)
{
	struct tp_load_options o;
	struct tp_strbuf warnings;
	struct tp_report r;
	const char *bug;

	fz_options(&o, &warnings);
	tp_error_clear(err);
	tp_report_init(&r);
	bug = fz_failed(tp_report_load("fuzz.json", (const char *)data, size,
				       &o, &r, err),
			err);
	tp_report_release(&r);
	tp_strbuf_release(&warnings);
	return bug;
}

const char *fz_nvsmi_one(const uint8_t *data, size_t size,
			 struct tp_error *err)
{
	struct tp_strbuf w1, w2;
	struct tp_cluster c, c2;
	const char *bug;
	enum tp_status st;

	tp_error_clear(err);
	tp_cluster_init(&c);
	st = tp_build_topology_nvidia_smi((const char *)data, size, "topo.txt",
					  "A100-SXM4-80GB", &c, err);
	bug = fz_failed(st, err);
	if (st == TP_OK) {
		tp_strbuf_init(&w1);
		tp_strbuf_init(&w2);
		tp_topology_write(&c, &w1);
		tp_cluster_init(&c2);
		if (tp_topology_load("roundtrip.json", w1.buf, w1.len, NULL,
				     &c2, err))
			bug = "an nvidia-smi topology does not load back";
		tp_topology_write(&c2, &w2);
		if (!bug && !same(&w1, &w2))
			bug = "nvidia-smi topology round trip changed the text";
		tp_cluster_release(&c2);
		tp_strbuf_release(&w1);
		tp_strbuf_release(&w2);
	}
	tp_cluster_release(&c);
	return bug;
}

const char *fz_devices_one(const uint8_t *data, size_t size,
			   struct tp_error *err)
{
	struct tp_load_options o;
	struct tp_strbuf warnings;
	struct tp_cluster c;
	const char *bug;

	fz_options(&o, &warnings);
	tp_error_clear(err);
	tp_cluster_init(&c);
	bug = fz_failed(tp_devices_load("fuzz.json", (const char *)data, size,
					&o, &c, err),
			err);
	tp_cluster_release(&c);
	tp_strbuf_release(&warnings);
	return bug;
}

const char *fz_weights_one(const uint8_t *data, size_t size,
			   struct tp_error *err)
{
	unsigned char *buf, *enc = NULL, *enc2 = NULL;
	size_t len = 0, len2 = 0;
	struct tp_gnn_net *net, *net2;
	const char *bug = NULL;
	uint32_t crc;

	buf = malloc(size ? size : 1);
	if (!buf)
		return NULL;
	memcpy(buf, data, size);
	if (size >= 4) {
		crc = tp_gnn_crc32(buf, size - 4);
		for (int i = 0; i < 4; i++)
			buf[size - 4 + i] = (unsigned char)(crc >> (8 * i));
	}
	tp_error_clear(err);
	net = tp_gnn_weights_decode("fuzz.weights", buf, size, NULL, err);
	if (!net) {
		bug = fz_failed(err->status ? err->status : TP_EINTERNAL, err);
	} else if (tp_gnn_weights_encode(net, &enc, &len, err)) {
		bug = "an accepted weights file does not encode";
	} else if (len == size && memcmp(enc, buf, size) == 0) {
		/* canonical: the second round would decode these same bytes
		   again (decode is a function of the bytes: decode_body
		   seeds its rng with 0 and overwrites every weight) and
		   encode that net to enc again; skipping it halves the
		   time of most inputs, which are canonical */
	} else {
		net2 = tp_gnn_weights_decode("roundtrip.weights", enc, len,
					     NULL, err);
		if (!net2)
			bug = "re-encoded weights do not decode";
		else if (tp_gnn_weights_encode(net2, &enc2, &len2, err) ||
			 len2 != len || memcmp(enc, enc2, len))
			bug = "weights round trip changed the bytes";
		tp_gnn_net_free(net2);
	}
	tp_gnn_net_free(net);
	free(enc);
	free(enc2);
	free(buf);
	return bug;
}

/* ---- pipeline: load -> simulate -> a tiny plan ------------------------- */

/* Every figure of a report finite and not negative: the writers assert
 * it (a 1e307 FLOP op once reached them as Infinity). */
static const char *fz_report_sane(const struct tp_report *r)
{
	const double f[] = {r->iteration_time_s,  r->throughput_samples_per_s,
			    r->tokens_per_s,	  r->model_flop_per_iteration,
			    r->tflops_per_device, r->mfu,
			    r->bubble_fraction,	  r->over_bytes};

	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		if (!isfinite(f[i]) || f[i] < 0)
			return "a report figure is not a finite number >= 0";
	for (uint32_t d = 0; d < r->n_devices; d++) {
		const struct tp_report_device *v = &r->devices[d];
		if (!isfinite(v->peak_memory_bytes) || !isfinite(v->compute_s) ||
		    !isfinite(v->communication_s) || !isfinite(v->idle_s))
			return "a device figure of a report is not finite";
	}
	for (uint32_t l = 0; l < r->n_links; l++)
		if (!isfinite(r->links[l].bytes) || !isfinite(r->links[l].busy_s))
			return "a link figure of a report is not finite";
	return NULL;
}

/* The report writes and loads back (finite figures only). */
static const char *fz_report_roundtrip(const struct tp_report *r,
				       const struct tp_cluster *c,
				       struct tp_error *err)
{
	struct tp_strbuf w;
	struct tp_report back;
	const char *bug = fz_report_sane(r);

	if (bug)
		return bug;
	tp_strbuf_init(&w);
	tp_report_write(r, c, &w);
	tp_report_init(&back);
	if (!w.failed &&
	    tp_report_load("report.json", w.buf, w.len, NULL, &back, err))
		bug = "the report writer's output does not load";
	tp_report_release(&back);
	tp_strbuf_release(&w);
	return bug;
}

/* The strategy every cluster has (dp over all devices, the model's
 * batch): when it expands, it must simulate. */
static const char *fz_pipeline_simulate(const struct tp_model *m,
					const struct tp_cluster *c,
					const struct tp_sim *sim,
					struct tp_error *err)
{
	struct tp_strategy s;
	struct tp_plan p;
	struct tp_report rep;
	struct tp_sim_scratch *scr;
	const char *bug = NULL;

	tp_strategy_default(&s);
	tp_plan_init(&p);
	tp_report_init(&rep);
	tp_error_clear(err);
	if (tp_strategy_to_plan(&s, m, c, &p, err)) {
		bug = fz_failed(err->status, err);
		goto out;
	}
	scr = tp_sim_scratch_new(sim);
	if (!scr)
		goto out;
	if (tp_sim_run(sim, &p, scr, &rep, NULL, err))
		bug = "the default strategy expanded but does not simulate";
	else if (!(bug = fz_report_roundtrip(&rep, c, err)))
		bug = fz_bounded_same(sim, scr, &p, &rep, err);
	tp_sim_scratch_free(scr);
out:
	tp_report_release(&rep);
	tp_plan_release(&p);
	return bug;
}

/* A search of a few playouts, one thread, a time limit: it answers or
 * fails with a message; its plan validates, writes, loads back and its
 * report is finite. */
static const char *fz_pipeline_plan(const struct tp_model *m,
				    const struct tp_cluster *c,
				    const struct tp_sim *sim, unsigned sel,
				    struct tp_error *err)
{
	struct tp_search_simeval sectx;
	struct tp_evaluator ev, sim_ev;
	struct tp_sfb_joint joint;
	struct tp_search_options so;
	struct tp_search_result res;
	struct tp_strbuf w;
	struct tp_plan back;
	const char *bug = NULL;
	enum tp_status st;

	tp_search_sim_evaluator(&sectx, sim, NULL, &ev);
	if (sel & 1) {
		sim_ev = ev;
		tp_sfb_joint_evaluator(&joint, tp_sim_sfb(sim), &sim_ev, &ev);
	}
	tp_search_options_default(&so);
	so.threads = 1;
	so.seed = sel;
	so.playouts = 4 + (sel >> 1) % 8;
	so.time_limit_s = 2;
	so.compression = (sel & 1) ? TP_COMPRESSION_LOSSLESS
				   : TP_COMPRESSION_OFF;
	so.bound_sim = sim;
	so.tree_bytes = (size_t)8 << 20;
	tp_search_result_init(&res);
	tp_error_clear(err);
	st = tp_search_run(m, c, &ev, &so, &res, err);
	if (st) {
		bug = fz_failed(st, err);
		goto out;
	}
	if (!res.have_plan) {
		bug = "the search succeeded without a plan";
		goto out;
	}
	if (tp_plan_validate(&res.plan, m, c, err)) {
		bug = "the search's plan does not validate";
		goto out;
	}
	if ((bug = fz_report_roundtrip(&res.report, c, err)))
		goto out;
	tp_strbuf_init(&w);
	tp_plan_write(&res.plan, m, c, &w);
	tp_plan_init(&back);
	if (w.failed || tp_plan_load("plan.json", w.buf, w.len, m, c, NULL,
				     &back, err))
		bug = "the search's plan does not load back";
	tp_plan_release(&back);
	tp_strbuf_release(&w);
out:
	tp_search_result_release(&res);
	return bug;
}

const char *fz_pipeline_one(const struct fz_fixture *fx, const uint8_t *data,
			    size_t size, struct tp_error *err)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t mlen = nul ? (size_t)(nul - data) : size;
	struct tp_load_options o;
	struct tp_strbuf warnings;
	struct tp_model m;
	struct tp_cluster c;
	struct tp_sim *sim = NULL;
	const struct tp_model *mp = &fx->model;
	const struct tp_cluster *cp = &fx->cluster;
	const char *bug = NULL;
	enum tp_status st;

	fz_options(&o, &warnings);
	tp_model_init(&m);
	tp_cluster_init(&c);
	tp_error_clear(err);
	/* MODEL [NUL TOPOLOGY]; an empty part is the fixture's */
	if (mlen) {
		st = tp_model_load("fuzz-model.json", (const char *)data, mlen,
				   &o, &m, err);
		if (st) {
			bug = fz_failed(st, err);
			goto out;
		}
		mp = &m;
	}
	if (nul && size - mlen > 1) {
		tp_error_clear(err);
		st = tp_topology_load("fuzz-topology.json",
				      (const char *)nul + 1, size - mlen - 1,
				      &o, &c, err);
		if (st) {
			bug = fz_failed(st, err);
			goto out;
		}
		cp = &c;
	}
	/* a large cluster takes long under the sanitizers, not forever */
	if (cp->devices.n > 256)
		goto out;
	tp_error_clear(err);
	sim = tp_sim_new(mp, cp, NULL, err);
	if (!sim) {
		bug = fz_failed(err->status ? err->status : TP_EINTERNAL, err);
		goto out;
	}
	bug = fz_pipeline_simulate(mp, cp, sim, err);
	if (!bug)
		bug = fz_pipeline_plan(mp, cp, sim, (unsigned)size * 2654435761u >> 24,
				       err);
out:
	tp_sim_free(sim);
	tp_cluster_release(&c);
	tp_model_release(&m);
	tp_strbuf_release(&warnings);
	return bug;
}

const char *fz_runtime_one(const struct fz_fixture *fx, const uint8_t *data,
			   size_t size, struct tp_error *err)
{
	struct tp_load_options o;
	struct tp_strbuf warnings;
	struct tp_runtime rt;
	struct tp_sim_options so;
	struct tp_sim *sim;
	enum tp_status st;
	const char *bug;

	fz_options(&o, &warnings);
	tp_error_clear(err);
	st = tp_runtime_load("fuzz.json", (const char *)data, size, &o, &rt,
			     err);
	bug = fz_failed(st, err);
	if (st)
		goto out;
	tp_sim_options_default(&so);
	tp_sim_params_runtime(&so.params, &rt);
	sim = tp_sim_new(&fx->model, &fx->cluster, &so, err);
	if (!sim) {
		bug = fz_failed(err->status ? err->status : TP_EINTERNAL, err);
		goto out;
	}
	bug = fz_pipeline_simulate(&fx->model, &fx->cluster, sim, err);
	tp_sim_free(sim);
out:
	tp_strbuf_release(&warnings);
	return bug;
}

const char *fz_runs_one(const uint8_t *data, size_t size,
			struct tp_error *err)
{
	struct tp_load_options o;
	struct tp_strbuf warnings;
	struct tp_mruns r;
	enum tp_status st;
	const char *bug;

	fz_options(&o, &warnings);
	tp_error_clear(err);
	tp_mruns_init(&r);
	st = tp_mruns_load("fuzz.json", "", (const char *)data, size, &o, &r,
			   err);
	bug = fz_failed(st, err);
	if (!st)
		for (size_t i = 0; i < r.rows.n; i++)
			if (!(r.rows.v[i].measured_s > 0) ||
			    !isfinite(r.rows.v[i].measured_s))
				bug = "an accepted run has no finite positive "
				      "measured time";
	tp_mruns_release(&r);
	tp_strbuf_release(&warnings);
	return bug;
}
