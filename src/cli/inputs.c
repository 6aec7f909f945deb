/*
 * inputs.c - load model, topology and plan; compare recorded digests
 * (inputs.h).
 */
#include "inputs.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/runtime.h"
#include "core/sha256.h"
#include "core/strategy.h"
#include "io/build.h"
#include "io/io.h"
#include "sim/sim.h"

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

/* Compare the digest of the bytes read with the recorded one; warn and
 * set *changed when they differ. */
static void compare_digest(const char *what, const char *path,
			   const char *hex, const char *recorded,
			   const char *recorded_file, bool *changed,
			   struct tp_strbuf *warnings)
{
	*changed = false;
	if (!recorded || !recorded[0] || !hex[0] || strcmp(hex, recorded) == 0)
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

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* The directory part of path with its slash ("" when none). */
static void dir_of(const char *path, char *out, size_t size)
{
	const char *s = strrchr(path, '/');
	size_t n = s ? (size_t)(s - path) + 1 : 0;

	if (n >= size || strcmp(path, "-") == 0)
		n = 0;
	memcpy(out, path, n);
	out[n] = '\0';
}

/* out = a followed by b; false when it does not fit. */
static bool join(char *out, size_t size, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la + lb >= size)
		return false;
	memcpy(out, a, la);
	memcpy(out + la, b, lb + 1);
	return true;
}

/* SHA-256 of a file; false when it cannot be read. */
static bool file_sha(const char *path, char hex[65])
{
	char *data = NULL;
	size_t len = 0;
	struct tp_error e;

	/* a FIFO or a device would be read (or waited for) again */
	if (!tp_file_is_regular(path))
		return false;
	tp_error_clear(&e);
	if (tp_file_read_text(path, 0, &data, &len, &e) != TP_OK)
		return false;
	tp_sha256_hex(data, len, hex);
	free(data);
	return true;
}

/* An input as the plan recorded it: what it is ("model"), the option that
 * gives another ("-m MODEL"), and the record: the path as given, the base
 * name and the SHA-256 (each "" when not recorded). */
struct recorded {
	const char *what, *opt;
	const char *path, *file, *sha;
};

/*
 * Find the input the plan recorded (inputs.h, top): out receives the path
 * to use; TP_OK with out = "" when nothing is recorded and no file of the
 * recorded name and digest is next to the plan (the caller falls back to
 * the shipped demo).  TP_EUSAGE when a recorded path cannot be found.
 */
static enum tp_status find_recorded(const char *plan_path,
				    const struct recorded *r, char *out,
				    size_t size, struct tp_error *err)
{
	const char *what = r->what, *opt = r->opt, *rpath = r->path,
		   *rfile = r->file, *rsha = r->sha;
	char cand[4][1024], hex[65], pdir[1024], tried[2048] = "";
	int n = 0, pick = -1, need_sha_from;

	out[0] = '\0';
	dir_of(plan_path, pdir, sizeof(pdir));
	if (rpath[0] && strcmp(rpath, "-") == 0)
		return tp_error_set(err, TP_EUSAGE,
				    "%s was made from a %s read from standard "
				    "input: pass the %s with %s",
				    plan_path, what, what, opt);
	if (rpath[0]) {
		snprintf(cand[n++], sizeof(cand[0]), "%s", rpath);
		if (rpath[0] != '/' && pdir[0] &&
		    join(cand[n], sizeof(cand[0]), pdir, rpath))
			n++;
	}
	/* by base name next to the plan: only with a matching digest when
	   no path was recorded */
	need_sha_from = rpath[0] ? 4 : n;
	{
		const char *b = rfile[0] ? rfile : base_name(rpath);
		if (b[0] && join(cand[n], sizeof(cand[0]), pdir, b)) {
			bool dup = false;
			for (int k = 0; k < n; k++)
				dup |= strcmp(cand[k], cand[n]) == 0;
			if (!dup)
				n++;
		}
	}
	/* a shipped model or topology of that base name, with the recorded
	   digest only: a plan made with -t dgx-a100-128 records this
	   install's absolute path, which another machine or prefix lacks */
	{
		const char *b = rfile[0] ? rfile : base_name(rpath);
		bool model = !strcmp(what, "model");
		char ship[1024];
		if (n < 4 && b[0] && (model || !strcmp(what, "topology")) &&
		    tp_inputs_shipped(b, model, ship, sizeof(ship)) == ship) {
			bool dup = false;
			for (int k = 0; k < n; k++)
				dup |= strcmp(cand[k], ship) == 0;
			if (!dup) {
				snprintf(cand[n], sizeof(cand[0]), "%s", ship);
				if (need_sha_from > n)
					need_sha_from = n;
				n++;
			}
		}
	}
	/* a candidate with the recorded digest first, else the first that
	   exists (where allowed) */
	for (int k = 0; k < n && pick < 0; k++)
		if (rsha[0] && file_sha(cand[k], hex) &&
		    strcmp(hex, rsha) == 0)
			pick = k;
	for (int k = 0; k < n && k < need_sha_from && pick < 0; k++)
		if (file_sha(cand[k], hex))
			pick = k;
	if (pick >= 0) {
		size_t l = strnlen(cand[pick], sizeof(cand[0]));
		if (l >= size)
			l = size - 1;
		memcpy(out, cand[pick], l);
		out[l] = '\0';
		return TP_OK;
	}
	if (!rpath[0])
		return TP_OK;
	for (int k = 0; k < n; k++) {
		struct stat st;
		if (stat(cand[k], &st) == 0 && !S_ISREG(st.st_mode))
			return tp_error_set(
				err, TP_EUSAGE,
				"%.300s was made from the %s \"%.300s\", which "
				"is not a "
				"regular file (a FIFO, a pipe or a device: read "
				"once, it cannot be read again): pass the %s "
				"with %s",
				plan_path, what, cand[k], what, opt);
	}
	for (int k = 0; k < n; k++) {
		size_t used = strlen(tried);
		snprintf(tried + used, sizeof(tried) - used, "%s%s",
			 k ? ", " : "", cand[k]);
	}
	/* a plan read from stdin has no folder: its relative paths are
	   the working directory's */
	return tp_error_set(err, TP_EUSAGE,
			    "%s was made from the %s file \"%s\", which is not "
			    "there (looked for %s%s): pass the %s with %s",
			    strcmp(plan_path, "-") ? plan_path
						   : "the plan read from "
						     "standard input",
			    what, rpath, tried,
			    strcmp(plan_path, "-") ? ""
						   : " in the working "
						     "directory",
			    what, opt);
}

/* Read a file once: its digest and the model or topology in it. */
static enum tp_status load_one(const char *path, bool model,
			       const struct tp_load_options *o,
			       struct tp_inputs *in, char hex[65],
			       struct tp_error *err)
{
	char *data = NULL;
	size_t len = 0;
	enum tp_status st;

	hex[0] = '\0';
	if ((st = tp_file_read_text(path, 0, &data, &len, err)) != TP_OK) {
		tp_error_set_file(err, path);
		tp_inputs_hint_shipped(path, model, err);
		return st;
	}
	tp_sha256_hex(data, len, hex);
	if (model)
		st = tp_model_load(path, data, len, o, &in->model, err);
	else
		st = tp_topology_load(path, data, len, o, &in->cluster, err);
	free(data);
	if (st != TP_OK) {
		tp_error_set_file(err, path);
		if (st == TP_EINPUT)
			tp_inputs_hint_kind(path, model ? "model" : "topology",
					    err);
	}
	return st;
}

static void append_msg(struct tp_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void append_msg(struct tp_error *err, const char *fmt, ...)
{
	size_t n = strlen(err->msg);
	va_list ap;

	if (n + 1 >= sizeof(err->msg))
		return;
	va_start(ap, fmt);
	vsnprintf(err->msg + n, sizeof(err->msg) - n, fmt, ap);
	va_end(ap);
}

/* The kind of tagplan file path holds, read a second time only when it
 * is a regular file (a FIFO's writer is gone, a device would be read
 * again); TP_FORMAT_UNKNOWN otherwise. */
static enum tp_format_kind sniff_file(const char *path)
{
	char *data = NULL;
	size_t len = 0;
	struct tp_error e;
	enum tp_format_kind k;

	if (!path || !tp_file_is_regular(path))
		return TP_FORMAT_UNKNOWN;
	tp_error_clear(&e);
	if (tp_file_read_text(path, 0, &data, &len, &e) != TP_OK)
		return TP_FORMAT_UNKNOWN;
	k = tp_format_sniff(data, len);
	free(data);
	return k;
}

enum tp_format_kind tp_inputs_file_kind(const char *path)
{
	return sniff_file(path);
}

void tp_inputs_hint_swap(const char *model_path, const char *topo_path,
			 struct tp_error *err)
{
	char *kind;

	if (!err || err->status != TP_EINPUT ||
	    sniff_file(model_path) != TP_FORMAT_TOPOLOGY ||
	    sniff_file(topo_path) != TP_FORMAT_MODEL)
		return;
	/* instead of tp_inputs_hint_kind's note about -m alone */
	kind = strstr(err->msg, " (this file is a topology: ");
	if (kind)
		*kind = '\0';
	append_msg(err,
		   " (-m and -t are swapped: %s is a topology and %s a "
		   "model; give -m %s -t %s)",
		   model_path, topo_path, topo_path, model_path);
}

void tp_inputs_hint_kind(const char *path, const char *expected,
			 struct tp_error *err)
{
	enum tp_format_kind k;
	const char *opt = NULL, *want_opt;

	if (!err)
		return;
	k = sniff_file(path);
	switch (k) {
	case TP_FORMAT_MODEL:
		opt = "-m MODEL";
		break;
	case TP_FORMAT_TOPOLOGY:
		opt = "-t TOPO";
		break;
	case TP_FORMAT_PLAN:
		opt = "-p PLAN";
		break;
	case TP_FORMAT_REPORT:
		opt = NULL;
		break;
	case TP_FORMAT_RUNTIME:
		opt = "--runtime FILE";
		break;
	case TP_FORMAT_DEVICES:
		break;
	default:
		return;
	}
	if (strcmp(tp_format_kind_name(k), expected) == 0)
		return;
	want_opt = strcmp(expected, "model") == 0      ? "-m"
		   : strcmp(expected, "topology") == 0 ? "-t"
						       : "-p";
	if (k == TP_FORMAT_DEVICES)
		/* data/devices.json given as the cluster: it holds device
		   types, no nodes */
		append_msg(err,
			   " (this file is a catalogue of device types, "
			   "which tagplan reads from its data folder, as "
			   "data/devices.json; %s takes a %s%s)",
			   want_opt, expected,
			   strcmp(expected, "topology") == 0
				   ? ": build one from presets with `tagplan "
				     "topo PRESET:NODES -o topo.json`"
				   : "");
	else if (opt)
		append_msg(err,
			   " (this file is a %s: give it with %s; %s takes "
			   "a %s)",
			   tp_format_kind_name(k), opt, want_opt, expected);
	else
		append_msg(err,
			   " (this file is a simulation report, written by "
			   "`tagplan simulate`; %s takes a %s)",
			   want_opt, expected);
}

void tp_inputs_describe(const struct tp_inputs *in, struct tp_strbuf *out)
{
	bool m_rec = in->model_recorded, t_rec = in->topology_recorded;
	bool m_def = in->model_default, t_def = in->topology_default;
	/* "-p -": not "recorded in -" */
	const char *plan = strcmp(in->plan_path, "-") == 0
				   ? "the plan read from standard input"
				   : in->plan_path;

	if (!m_rec && !t_rec && !m_def && !t_def)
		return;
	tp_strbuf_adds(out, "using ");
	if (m_rec && t_rec) {
		tp_strbuf_addf(out, "model %s and topology %s, recorded in %s",
			       in->model_path, in->topology_path, plan);
	} else if (m_def && t_def) {
		tp_strbuf_addf(out,
			       "the shipped demo model %s and TAG testbed %s "
			       "(%s records no input files; -m/-t choose "
			       "others)",
			       in->model_path, in->topology_path, plan);
	} else {
		const char *sep = "";
		if (m_rec || m_def) {
			tp_strbuf_addf(out, "model %s (%s)", in->model_path,
				       m_rec ? "recorded in the plan"
					     : "the shipped demo");
			sep = " and ";
		}
		if (t_rec || t_def)
			tp_strbuf_addf(out, "%stopology %s (%s)", sep,
				       in->topology_path,
				       t_rec ? "recorded in the plan"
					     : "the shipped TAG testbed");
	}
	tp_strbuf_addc(out, '\n');
}

/* data/models or data/topologies, the folder of the shipped files. */
static bool shipped_dir(bool model, char *dir, size_t size)
{
	struct tp_error e;
	char *slash;

	tp_error_clear(&e);
	if (tp_data_path(model ? "models/README" : "topologies/dgx-a100.json",
			 dir, size, &e) != TP_OK)
		return false;
	slash = strrchr(dir, '/');
	if (!slash)
		return false;
	*slash = '\0';
	return true;
}

const char *tp_inputs_shipped(const char *arg, bool model, char *buf,
			      size_t size)
{
	char rel[512];
	struct tp_error e;
	size_t n;

	if (!arg || !strcmp(arg, "-") || strchr(arg, '/') ||
	    access(arg, F_OK) == 0)
		return arg;
	n = strlen(arg);
	snprintf(rel, sizeof(rel), "%s/%s%s", model ? "models" : "topologies",
		 arg, n > 5 && !strcmp(arg + n - 5, ".json") ? "" : ".json");
	tp_error_clear(&e);
	if (tp_data_path(rel, buf, size, &e) != TP_OK)
		return arg;
	return buf;
}

void tp_inputs_list_shipped(bool model, struct tp_strbuf *out)
{
	char dir[2048];
	struct dirent **names = NULL;
	int n;

	if (!shipped_dir(model, dir, sizeof(dir)))
		return;
	n = scandir(dir, &names, NULL, alphasort);
	for (int i = 0, k = 0; i < n; i++) {
		size_t len = strlen(names[i]->d_name);
		if (len > 5 && !strcmp(names[i]->d_name + len - 5, ".json"))
			tp_strbuf_addf(out, "%s%.*s", k++ ? ", " : "",
				       (int)len - 5, names[i]->d_name);
		free(names[i]);
	}
	free(names);
}

/* Is arg what `tagplan topo` takes ("dgx-a100:4", "v100-nvlink:2
 * 1080ti-pcie:2"): its first word a node preset, alone or before ':'? */
static bool topo_spec(const char *arg)
{
	size_t n = strcspn(arg, ": ");

	for (size_t i = 0; tp_node_preset_name(i); i++)
		if (strlen(tp_node_preset_name(i)) == n &&
		    !strncmp(tp_node_preset_name(i), arg, n))
			return arg[n] == ':' || arg[n] == ' ';
	return false;
}

/* An -m that is a `tagplan model` source (hf:PATH) or a -t that is a
 * `tagplan topo` spec, which no file is: usage, with the command that
 * builds the file (it was 'cannot open', exit 3).  True when said. */
static bool hint_source(const char *arg, bool model, struct tp_error *err)
{
	char msg[sizeof(err->msg)];

	if (model && !strncmp(arg, "hf:", 3))
		snprintf(msg, sizeof(msg),
			 "a source of `tagplan model`, not a model file: build "
			 "the model with `tagplan model %.900s -o model.json` "
			 "and give -m model.json",
			 arg);
	else if (!model && topo_spec(arg))
		snprintf(msg, sizeof(msg),
			 "a spec of `tagplan topo`, not a topology file: build "
			 "it with `tagplan topo %.900s -o topo.json` and give "
			 "-t topo.json",
			 arg);
	else
		return false;
	tp_error_set(err, TP_EUSAGE, "%s", msg);
	tp_error_set_file(err, arg);
	return true;
}

void tp_inputs_hint_shipped(const char *arg, bool model, struct tp_error *err)
{
	struct tp_strbuf list;
	char dir[2048];

	if (err && err->status == TP_EIO && arg && access(arg, F_OK) != 0 &&
	    hint_source(arg, model, err))
		return;
	if (!err || err->status != TP_EIO || !arg || strchr(arg, '/') ||
	    !strcmp(arg, "-") || access(arg, F_OK) == 0)
		return;
	tp_strbuf_init(&list);
	tp_inputs_list_shipped(model, &list);
	if (list.len && shipped_dir(model, dir, sizeof(dir)))
		append_msg(err,
			   " (a name of a shipped %s file works too, from "
			   "%s: %s)",
			   model ? "model" : "topology", dir,
			   tp_strbuf_cstr(&list));
	tp_strbuf_release(&list);
}

/* The files tp_inputs_load reads, as given or resolved (model and
 * topology NULL until then). */
struct load_paths {
	const char *plan, *model, *topology;
};

/* At most one of the plan, model and topology from stdin ("-"). */
static enum tp_status check_stdin(const struct load_paths *lp,
				  struct tp_error *err)
{
	const char *plan_path = lp->plan, *model_path = lp->model,
		   *topology_path = lp->topology;

	if (model_path && topology_path && strcmp(model_path, "-") == 0 &&
	    strcmp(topology_path, "-") == 0)
		return tp_error_set(err, TP_EUSAGE,
				    "only one input can come from stdin (-)");
	if ((model_path && strcmp(model_path, "-") == 0 &&
	     strcmp(plan_path, "-") == 0) ||
	    (topology_path && strcmp(topology_path, "-") == 0 &&
	     strcmp(plan_path, "-") == 0))
		return tp_error_set(err, TP_EUSAGE,
				    "only one input can come from stdin (-)");
	return TP_OK;
}

/* The model (model true) or topology not given: the file the plan
 * recorded (ol), else the shipped demo model or TAG testbed; its path in
 * buf (1024 bytes) and lp, in->*_recorded or in->*_default set. */
static enum tp_status resolve_input(struct tp_inputs *in,
				    const struct tp_plan_outline *ol,
				    struct load_paths *lp, bool model,
				    char *buf, struct tp_error *err)
{
	struct recorded rec =
	    model ? (struct recorded){"model", "-m MODEL", ol->model_path,
				      ol->model_file, ol->model_sha256}
		  : (struct recorded){"topology", "-t TOPO", ol->topology_path,
				      ol->topology_file, ol->topology_sha256};
	enum tp_status st;

	if ((st = find_recorded(lp->plan, &rec, buf, 1024, err)) != TP_OK)
		return st;
	if (buf[0]) {
		*(model ? &in->model_recorded : &in->topology_recorded) = true;
	} else {
		if ((st = tp_data_path(model ? "demo-model.json"
					     : "tag-testbed.json",
				       buf, 1024, err)) != TP_OK)
			return st;
		*(model ? &in->model_default : &in->topology_default) = true;
	}
	*(model ? &lp->model : &lp->topology) = buf;
	return TP_OK;
}

/* A plan that says it was made for other files than the defaults used. */
static enum tp_status check_made_for(const struct tp_inputs *in,
				     const struct tp_plan_outline *ol,
				     const struct load_paths *lp,
				     struct tp_error *err)
{
	const char *pm = ol->model, *pt = ol->topology;

	if (in->model_default && pm[0] && strcmp(pm, in->model.name) != 0)
		return tp_error_set(err, TP_EUSAGE,
				    "%s was made for model \"%s\": pass its "
				    "model file with -m (without -m the "
				    "shipped demo model \"%s\" is used)",
				    lp->plan, pm, in->model.name);
	if (in->topology_default && pt[0] && strcmp(pt, in->cluster.name) != 0)
		return tp_error_set(err, TP_EUSAGE,
				    "%s was made for topology \"%s\": pass "
				    "its topology file with -t (without -t "
				    "the shipped TAG testbed is used)",
				    lp->plan, pt);
	return TP_OK;
}

/* After the plan failed to read against the model and topology: which of
 * them the plan was made for instead, or that they were the defaults. */
static void explain_plan_error(const struct tp_inputs *in,
			       const struct tp_plan_outline *ol,
			       const struct load_paths *lp,
			       struct tp_error *err)
{
	const char *pm = ol->model, *pt = ol->topology;

	if (pm[0] && strcmp(pm, in->model.name) != 0)
		append_msg(err,
			   " (the plan was made for model \"%s\", "
			   "%s is \"%s\": give the plan's model "
			   "with -m%s)",
			   pm, lp->model, in->model.name,
			   ol->model_path[0] && strcmp(ol->model_path, "-") != 0
			       ? ", or leave -m out to use the "
				 "file it recorded"
			       : "");
	else if (pt[0] && in->cluster.name && strcmp(pt, in->cluster.name) != 0)
		append_msg(err,
			   " (the plan was made for topology \"%s\", "
			   "%s is \"%s\": give the plan's topology "
			   "with -t%s)",
			   pt, lp->topology, in->cluster.name,
			   ol->topology_path[0] &&
				   strcmp(ol->topology_path, "-") != 0
			       ? ", or leave -t out to use the "
				 "file it recorded"
			       : "");
	else if (in->model_default || in->topology_default)
		append_msg(err,
			   " (read against the shipped %s, the "
			   "default without %s; pass the files the "
			   "plan was made for)",
			   in->model_default && in->topology_default
			       ? "demo model and TAG testbed"
			   : in->model_default ? "demo model"
					       : "TAG testbed",
			   in->model_default && in->topology_default ? "-m/-t"
			   : in->model_default			     ? "-m"
								     : "-t");
}

enum tp_status tp_inputs_load(struct tp_inputs *in, const char *plan_path,
			      const char *model_path, const char *topology_path,
			      struct tp_strbuf *warnings, struct tp_error *err)
{
	struct tp_load_options o, quiet;
	struct tp_plan_outline ol;
	enum tp_status st;
	char *text = NULL;
	size_t len = 0;
	char mfound[1024], tfound[1024];
	char mhex[65], thex[65], mship[2048], tship[2048];
	struct load_paths lp;

	tp_load_options_default(&o);
	o.warnings = warnings;
	o.strict = in->strict;
	tp_load_options_default(&quiet);
	quiet.strict = in->strict;
	memset(&ol, 0, sizeof(ol));
	snprintf(in->plan_path, sizeof(in->plan_path), "%s", plan_path);
	/* -m llama-2-7b: the shipped data/models/llama-2-7b.json */
	model_path = tp_inputs_shipped(model_path, true, mship, sizeof(mship));
	topology_path =
	    tp_inputs_shipped(topology_path, false, tship, sizeof(tship));
	lp = (struct load_paths){plan_path, model_path, topology_path};
	if ((st = check_stdin(&lp, err)))
		return st;

	/* the plan, read once: its outline says what it was made from */
	if ((st = tp_file_read_text(plan_path, 0, &text, &len, err)) != TP_OK) {
		tp_error_set_file(err, plan_path);
		return st;
	}
	if ((st = tp_plan_check(plan_path, text, len, &quiet, &ol, err)) !=
	    TP_OK) {
		if (st == TP_EINPUT)
			tp_inputs_hint_kind(plan_path, "plan", err);
		goto out;
	}
	if ((!lp.model &&
	     (st = resolve_input(in, &ol, &lp, true, mfound, err))) ||
	    (!lp.topology &&
	     (st = resolve_input(in, &ol, &lp, false, tfound, err))))
		goto out;
	model_path = lp.model;
	topology_path = lp.topology;
	snprintf(in->model_path, sizeof(in->model_path), "%s", model_path);
	snprintf(in->topology_path, sizeof(in->topology_path), "%s",
		 topology_path);
	if ((st = load_one(model_path, true, &o, in, mhex, err)) != TP_OK) {
		tp_inputs_hint_swap(model_path, topology_path, err);
		goto out;
	}
	if ((st = load_one(topology_path, false, &o, in, thex, err)) != TP_OK ||
	    (st = check_made_for(in, &ol, &lp, err)) != TP_OK)
		goto out;
	if ((st = tp_plan_load(plan_path, text, len, &in->model, &in->cluster,
			       &o, &in->plan, err)) != TP_OK) {
		tp_error_set_file(err, plan_path);
		if (st == TP_EINPUT)
			explain_plan_error(in, &ol, &lp, err);
		goto out;
	}
	in->loaded = true;
	if (in->plan.summary.valid) {
		const struct tp_plan_summary *s = &in->plan.summary;
		compare_digest("model", model_path, mhex, s->model_sha256,
			       s->model_file, &in->model_changed, warnings);
		compare_digest("topology", topology_path, thex,
			       s->topology_sha256, s->topology_file,
			       &in->topology_changed, warnings);
	}
out:
	tp_plan_outline_release(&ol);
	free(text);
	return st;
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

enum tp_status tp_inputs_blame_runtime(const char *plan_path,
				       struct tp_error *err)
{
	char msg[sizeof(err->msg)];

	if (err->status != TP_EUSAGE || !strstr(err->msg, "unknown runtime"))
		return err->status;
	snprintf(msg, sizeof(msg), "%s", err->msg);
	tp_error_set_path(err, TP_EINPUT, "$.runtime",
			  "%.900s; fix the plan's \"runtime\" (simulate and "
			  "check also take --runtime NAME|FILE)",
			  msg);
	tp_error_set_file(err, plan_path ? plan_path : "-");
	return TP_EINPUT;
}

enum tp_status tp_inputs_runtime(const struct tp_inputs *in,
				 const char *given, struct tp_runtime *rt,
				 struct tp_error *err)
{
	const struct tp_plan_summary *s = &in->plan.summary;
	char path[1024], hex[65];
	enum tp_status st;

	if (given)
		return tp_runtime_find(given, rt, err);
	if (!s->runtime_path[0]) {
		st = tp_runtime_find(in->plan.runtime[0] ? in->plan.runtime
							 : "none",
				     rt, err);
		return st ? tp_inputs_blame_runtime(in->plan_path, err) : st;
	}
	if ((st = find_recorded(in->plan_path,
				&(struct recorded){"runtime profile",
						   "--runtime FILE",
						   s->runtime_path, "",
						   s->runtime_sha256},
				path, sizeof(path), err)))
		return st;
	if ((st = tp_runtime_find_file(path, rt, hex, err)))
		return st;
	if (strcmp(hex, s->runtime_sha256) != 0)
		return tp_error_set(
			err, TP_EUSAGE,
			"%s was made under the runtime profile \"%s\" "
			"(sha256 %.12s...), which has changed since (%s: "
			"sha256 %.12s...): pass --runtime %s to use the file "
			"as it is now, or plan again",
			in->plan_path, s->runtime_path, s->runtime_sha256, path,
			hex, path);
	return TP_OK;
}

enum tp_status tp_inputs_sim_open(struct tp_inputs_sim *s,
				  const struct tp_inputs *in,
				  struct tp_error *err)
{
	struct tp_sim_options o;
	struct tp_runtime rt;
	enum tp_status st;

	memset(s, 0, sizeof(*s));
	tp_sim_options_default(&o);
	/* the runtime the plan was made for (none when it names none) */
	st = tp_inputs_runtime(in, in->runtime, &rt, err);
	if (st)
		return st;
	tp_sim_params_runtime(&o.params, &rt);
	s->fused_attention = o.params.fused_attention;
	s->rt = rt;
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

/* A strategy string that is no key=value but names a file or folder
 * ("-s plan.json": a plan where a strategy goes): err says what the file
 * is and where it goes instead of listing the strategy's keys.  True when
 * it did. */
static bool strategy_is_file(const char *strategy, struct tp_error *err)
{
	static const char items[] =
		"-s takes key=value items joined by commas, e.g. "
		"tp=8,pp=2,dp=4";
	struct stat sb;
	enum tp_format_kind k;

	if (strchr(strategy, '=') || stat(strategy, &sb) != 0)
		return false;
	if (S_ISDIR(sb.st_mode)) {
		tp_error_set(err, TP_EUSAGE,
			     "strategy: \"%s\" is a folder, not a strategy "
			     "string: %s",
			     strategy, items);
		return true;
	}
	k = sniff_file(strategy);
	if (k == TP_FORMAT_PLAN || k == TP_FORMAT_MODEL ||
	    k == TP_FORMAT_TOPOLOGY)
		tp_error_set(err, TP_EUSAGE,
			     "strategy: \"%s\" is a %s file, not a strategy "
			     "string: give it with %s %s%s; %s",
			     strategy, tp_format_kind_name(k),
			     k == TP_FORMAT_PLAN	 ? "-p"
			     : k == TP_FORMAT_MODEL ? "-m"
						    : "-t",
			     strategy,
			     k == TP_FORMAT_PLAN ? " (tagplan simulate, check, "
						   "render and export take "
						   "a plan)"
						 : "",
			     items);
	else
		tp_error_set(err, TP_EUSAGE,
			     "strategy: \"%s\" is a file, not a strategy "
			     "string: %s",
			     strategy, items);
	return true;
}

enum tp_status tp_inputs_strategy_plan(const char *strategy,
				       const struct tp_model *m,
				       const struct tp_cluster *c,
				       struct tp_plan *p, struct tp_error *err)
{
	struct tp_strategy st;
	enum tp_status parsed = tp_strategy_parse(strategy, &st, err);

	if (parsed != TP_OK && strategy_is_file(strategy, err))
		return err->status;
	if (parsed != TP_OK ||
	    tp_strategy_to_plan(&st, m, c, p, err) != TP_OK) {
		err->file[0] = '\0';
		if (err->status == TP_EINPUT)
			err->status = TP_EUSAGE;
		return err->status;
	}
	return TP_OK;
}

enum tp_status tp_inputs_load_named(const char **arg, char *buf, size_t size,
				    const struct tp_load_options *lo,
				    struct tp_model *m, struct tp_cluster *c,
				    struct tp_error *err)
{
	bool model = m != NULL;
	enum tp_status st;

	*arg = tp_inputs_shipped(*arg, model, buf, size);
	st = model ? tp_model_load_file(*arg, lo, m, err)
		   : tp_topology_load_file(*arg, lo, c, err);
	if (st != TP_OK) {
		if (err->status == TP_EINPUT)
			tp_inputs_hint_kind(*arg, model ? "model" : "topology",
					    err);
		tp_inputs_hint_shipped(*arg, model, err);
	}
	return st;
}

size_t tp_inputs_runtimes_running(const struct tp_plan *p,
				  const struct tp_model *m,
				  const struct tp_cluster *c,
				  const char *skip, bool builds, char *out,
				  size_t size)
{
	char names[32][64];
	size_t n = tp_runtime_shipped(names, 32), used = 0, able = 0;
	struct tp_error e;

	if (size)
		out[0] = '\0';
	for (size_t i = 0; i < n && used < size; i++) {
		struct tp_runtime rt;
		tp_error_clear(&e);
		if ((skip && !strcmp(names[i], skip)) ||
		    tp_runtime_find(names[i], &rt, &e) ||
		    tp_runtime_builds(&rt, m, NULL, 0) != builds ||
		    tp_runtime_plan_check(&rt, p, m, c, NULL, NULL, 0))
			continue;
		used += (size_t)snprintf(out + used, size - used, "%s%s",
					 able++ ? ", " : "", names[i]);
	}
	return able;
}
