/*
 * jctx.c - the typed accessors of json.h: fields looked up, type and range
 * checked, and failures reported at their JSON path ("$.nodes[2].type").
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/strbuf.h"
#include "core/strmap.h"
#include "json.h"

static bool is_word(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_';
}

void tp_jctx_init(struct tp_jctx *j, const char *file,
		  const struct tp_load_options *o, struct tp_error *err)
{
	memset(j, 0, sizeof(*j));
	j->file = file ? file : "";
	j->strict = o ? o->strict : false;
	j->warnings = o ? o->warnings : NULL;
	j->err = err;
	j->path[0] = '$';
	j->path[1] = '\0';
	j->plen = 1;
}

static bool plain_key(const char *k)
{
	if (!*k || !((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
		     *k == '_'))
		return false;
	for (; *k; k++)
		if (!is_word((unsigned char)*k))
			return false;
	return true;
}

static void path_add(char *buf, size_t *plen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void path_add(char *buf, size_t *plen, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*plen >= TP_ERROR_PATH_MAX - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *plen, TP_ERROR_PATH_MAX - *plen, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	*plen += (size_t)n;
	if (*plen >= TP_ERROR_PATH_MAX)
		*plen = TP_ERROR_PATH_MAX - 1;
}

static void path_key(char *buf, size_t *plen, const char *key)
{
	if (plain_key(key))
		path_add(buf, plen, ".%s", key);
	else
		path_add(buf, plen, "[\"%.60s\"]", key);
}

size_t tp_jctx_push_key(struct tp_jctx *j, const char *key)
{
	size_t old = j->plen;

	path_key(j->path, &j->plen, key);
	return old;
}

size_t tp_jctx_push_index(struct tp_jctx *j, size_t i)
{
	size_t old = j->plen;

	path_add(j->path, &j->plen, "[%zu]", i);
	return old;
}

void tp_jctx_pop(struct tp_jctx *j, size_t old)
{
	j->plen = old;
	j->path[old] = '\0';
}

static void full_path(const struct tp_jctx *j, const char *key, char *buf)
{
	size_t n = j->plen;

	memcpy(buf, j->path, j->plen + 1);
	if (key)
		path_key(buf, &n, key);
}

static enum tp_status vfail(struct tp_jctx *j, const char *key, const char *fmt,
			    va_list ap)
{
	char path[TP_ERROR_PATH_MAX];
	char msg[TP_ERROR_MSG_MAX];

	full_path(j, key, path);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	tp_error_set_path(j->err, TP_EINPUT, path, "%s", msg);
	tp_error_set_file(j->err, j->file);
	return TP_EINPUT;
}

enum tp_status tp_jctx_fail(struct tp_jctx *j, const char *key, const char *fmt,
			    ...)
{
	va_list ap;
	enum tp_status st;

	va_start(ap, fmt);
	st = vfail(j, key, fmt, ap);
	va_end(ap);
	return st;
}

enum tp_status tp_jctx_warn(struct tp_jctx *j, const char *key,
			    bool as_error_if_strict, const char *fmt, ...)
{
	va_list ap;
	char path[TP_ERROR_PATH_MAX];
	char msg[TP_ERROR_MSG_MAX];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (j->strict && as_error_if_strict)
		return tp_jctx_fail(j, key, "%s (an error under --strict)",
				    msg);
	if (j->warnings) {
		full_path(j, key, path);
		tp_strbuf_addf(j->warnings, "%s%s%s: %s\n", j->file,
			       *j->file ? ": " : "", path, msg);
	}
	return TP_OK;
}

/* The closest of names[] to s, or NULL when none is close. */
static const char *closest(const char *s, const char *const *names)
{
	const char *best = NULL;
	size_t bd = (size_t)-1, cap = strlen(s) / 3 + 2;

	for (; *names; names++) {
		size_t d = tp_edit_distance(s, *names, cap);
		if (d <= cap && d < bd) {
			bd = d;
			best = *names;
		}
	}
	return best;
}

enum tp_status tp_jctx_object(struct tp_jctx *j, const struct tp_json *v,
			      const char *what, const char *const *known)
{
	if (!v || v->type != TP_JSON_OBJECT)
		return tp_jctx_fail(
		    j, NULL, "expected %s (a JSON object), found %s", what,
		    v ? tp_json_type_name(v->type) : "nothing");
	for (size_t k = 0; k < v->n; k++) {
		const char *key = v->items[k]->key, *near;
		bool ok = strcmp(key, "note") == 0;
		enum tp_status st;

		for (const char *const *n = known; !ok && n && *n; n++)
			ok = strcmp(*n, key) == 0;
		if (ok)
			continue;
		near = known ? closest(key, known) : NULL;
		if (j->strict)
			st = tp_jctx_fail(
			    j, key,
			    "unknown field \"%.100s\" in %s%s%s%s "
			    "(an error under --strict: remove or "
			    "rename it)",
			    key, what, near ? " (did you mean \"" : "",
			    near ? near : "", near ? "\"?)" : "");
		else
			st = tp_jctx_warn(
			    j, key, false,
			    "unknown field \"%.100s\" in %s%s%s%s; "
			    "ignored",
			    key, what, near ? " (did you mean \"" : "",
			    near ? near : "", near ? "\"?)" : "");
		if (st)
			return st;
	}
	return TP_OK;
}

static const char *range_text(enum tp_jnum r)
{
	switch (r) {
	case TP_JNUM_ANY:
		return "a number";
	case TP_JNUM_NONNEG:
		return "a number >= 0";
	case TP_JNUM_POS:
		return "a number > 0";
	case TP_JNUM_FRACTION:
		return "a number in (0, 1]";
	case TP_JNUM_UNIT:
		return "a number in [0, 1]";
	case TP_JNUM_GE1:
		return "a number >= 1";
	}
	return "a number";
}

static bool in_range(double x, enum tp_jnum r)
{
	if (!isfinite(x))
		return false;
	switch (r) {
	case TP_JNUM_ANY:
		return true;
	case TP_JNUM_NONNEG:
		return x >= 0;
	case TP_JNUM_POS:
		return x > 0;
	case TP_JNUM_FRACTION:
		return x > 0 && x <= 1;
	case TP_JNUM_UNIT:
		return x >= 0 && x <= 1;
	case TP_JNUM_GE1:
		return x >= 1;
	}
	return false;
}

/* "found -5" / "found a string" */
static void found_text(const struct tp_json *v, char *buf, size_t size)
{
	if (v->type == TP_JSON_NUMBER)
		snprintf(buf, size, "%.17g", v->num);
	else if (v->type == TP_JSON_STRING)
		snprintf(buf, size, "a string (\"%.40s\")", v->str);
	else if (v->type == TP_JSON_BOOL)
		snprintf(buf, size, "%s", v->b ? "true" : "false");
	else
		snprintf(buf, size, "%s", tp_json_type_name(v->type));
}

static enum tp_status check_number_at(struct tp_jctx *j, const char *key,
				      const struct tp_json *v, enum tp_jnum rng,
				      double *out)
{
	char f[96];

	if (v->type != TP_JSON_NUMBER || !in_range(v->num, rng)) {
		found_text(v, f, sizeof(f));
		return tp_jctx_fail(j, key, "expected %s, found %s",
				    range_text(rng), f);
	}
	*out = v->num;
	return TP_OK;
}

enum tp_status tp_jcheck_number(struct tp_jctx *j, const struct tp_json *v,
				enum tp_jnum rng, double *out)
{
	return check_number_at(j, NULL, v, rng, out);
}

static enum tp_status missing(struct tp_jctx *j, const char *key,
			      const char *expected)
{
	return tp_jctx_fail(j, NULL, "missing required field \"%s\" (%s)", key,
			    expected);
}

enum tp_status tp_jget_number(struct tp_jctx *j, const struct tp_json *obj,
			      const char *key, bool required, enum tp_jnum rng,
			      double def, double *out, bool *present)
{
	const struct tp_json *v = tp_json_get(obj, key);

	if (present)
		*present = v != NULL;
	if (!v) {
		if (required)
			return missing(j, key, range_text(rng));
		*out = def;
		return TP_OK;
	}
	return check_number_at(j, key, v, rng, out);
}

#define MAX_EXACT_INT 9007199254740992.0 /* 2^53 */

enum tp_status tp_jget_int(struct tp_jctx *j, const struct tp_json *obj,
			   const char *key, bool required, int64_t min,
			   int64_t max, int64_t def, int64_t *out)
{
	const struct tp_json *v = tp_json_get(obj, key);
	char want[96], f[96];

	if (max >= (int64_t)MAX_EXACT_INT)
		snprintf(want, sizeof(want), "an integer >= %lld",
			 (long long)min);
	else
		snprintf(want, sizeof(want), "an integer from %lld to %lld",
			 (long long)min, (long long)max);
	if (!v) {
		if (required)
			return missing(j, key, want);
		*out = def;
		return TP_OK;
	}
	if (v->type != TP_JSON_NUMBER || v->num != floor(v->num) ||
	    fabs(v->num) > MAX_EXACT_INT || v->num < (double)min ||
	    v->num > (double)max) {
		found_text(v, f, sizeof(f));
		return tp_jctx_fail(j, key, "expected %s, found %s", want, f);
	}
	*out = (int64_t)v->num;
	return TP_OK;
}

enum tp_status tp_jget_bool(struct tp_jctx *j, const struct tp_json *obj,
			    const char *key, bool required, bool def, bool *out)
{
	const struct tp_json *v = tp_json_get(obj, key);
	char f[96];

	if (!v) {
		if (required)
			return missing(j, key, "true or false");
		*out = def;
		return TP_OK;
	}
	if (v->type != TP_JSON_BOOL) {
		found_text(v, f, sizeof(f));
		return tp_jctx_fail(j, key, "expected true or false, found %s",
				    f);
	}
	*out = v->b;
	return TP_OK;
}

static enum tp_status check_string_at(struct tp_jctx *j, const char *key,
				      const struct tp_json *v, size_t max_len,
				      bool nonempty, const char **out)
{
	char f[96];

	if (v->type != TP_JSON_STRING) {
		found_text(v, f, sizeof(f));
		return tp_jctx_fail(j, key, "expected a string, found %s", f);
	}
	if (nonempty && v->str_len == 0)
		return tp_jctx_fail(j, key, "expected a non-empty string");
	if (max_len && v->str_len > max_len)
		return tp_jctx_fail(j, key,
				    "string of %zu bytes is too long (at most "
				    "%zu)",
				    v->str_len, max_len);
	*out = v->str;
	return TP_OK;
}

enum tp_status tp_jcheck_string(struct tp_jctx *j, const struct tp_json *v,
				size_t max_len, bool nonempty, const char **out)
{
	return check_string_at(j, NULL, v, max_len, nonempty, out);
}

enum tp_status tp_jget_string(struct tp_jctx *j, const struct tp_json *obj,
			      const char *key, bool required, size_t max_len,
			      bool nonempty, const char *def, const char **out)
{
	const struct tp_json *v = tp_json_get(obj, key);

	if (!v) {
		if (required)
			return missing(j, key,
				       nonempty ? "a non-empty string"
						: "a string");
		*out = def;
		return TP_OK;
	}
	return check_string_at(j, key, v, max_len, nonempty, out);
}

enum tp_status tp_jget_enum(struct tp_jctx *j, const struct tp_json *obj,
			    const char *key, bool required,
			    int (*parse)(const char *), const char *choices,
			    int def, int *out)
{
	const struct tp_json *v = tp_json_get(obj, key);
	char want[256], f[96];
	int r;

	snprintf(want, sizeof(want), "one of %s", choices);
	if (!v) {
		if (required)
			return missing(j, key, want);
		*out = def;
		return TP_OK;
	}
	if (v->type != TP_JSON_STRING) {
		found_text(v, f, sizeof(f));
		return tp_jctx_fail(j, key, "expected %s, found %s", want, f);
	}
	r = parse(v->str);
	if (r < 0) {
		/* suggest the closest choice */
		char buf[256], *names[32], *tok, *save = NULL;
		const char *near;
		int n = 0;

		snprintf(buf, sizeof(buf), "%s", choices);
		for (tok = strtok_r(buf, " |", &save); tok && n < 31;
		     tok = strtok_r(NULL, " |", &save))
			names[n++] = tok;
		names[n] = NULL;
		near = closest(v->str, (const char *const *)names);
		if (near)
			return tp_jctx_fail(j, key,
					    "unknown value \"%.60s\" (did you "
					    "mean \"%s\"?); expected %s",
					    v->str, near, want);
		return tp_jctx_fail(j, key,
				    "unknown value \"%.60s\"; expected %s",
				    v->str, want);
	}
	*out = r;
	return TP_OK;
}

enum tp_status tp_jget_array(struct tp_jctx *j, const struct tp_json *obj,
			     const char *key, bool required, bool nonempty,
			     const struct tp_json **out)
{
	const struct tp_json *v = tp_json_get(obj, key);
	char f[96];

	*out = NULL;
	if (!v) {
		if (required)
			return missing(j, key,
				       nonempty ? "a non-empty array"
						: "an array");
		return TP_OK;
	}
	if (v->type != TP_JSON_ARRAY) {
		found_text(v, f, sizeof(f));
		return tp_jctx_fail(j, key, "expected an array, found %s", f);
	}
	if (nonempty && v->n == 0)
		return tp_jctx_fail(j, key, "expected a non-empty array");
	*out = v;
	return TP_OK;
}

enum tp_status tp_jget_object(struct tp_jctx *j, const struct tp_json *obj,
			      const char *key, bool required,
			      const struct tp_json **out)
{
	const struct tp_json *v = tp_json_get(obj, key);
	char f[96];

	*out = NULL;
	if (!v) {
		if (required)
			return missing(j, key, "an object");
		return TP_OK;
	}
	if (v->type != TP_JSON_OBJECT) {
		found_text(v, f, sizeof(f));
		return tp_jctx_fail(j, key, "expected an object, found %s", f);
	}
	*out = v;
	return TP_OK;
}

static const char *const format_strings[] = {NULL,
					     "tagplan-model/1",
					     "tagplan-topology/1",
					     "tagplan-plan/1",
					     "tagplan-report/1",
					     "tagplan-devices/1",
					     "tagplan-runtime/1"};

const char *tp_format_string(enum tp_format_kind k)
{
	return (unsigned)k <= TP_FORMAT_RUNTIME && k != TP_FORMAT_UNKNOWN
		   ? format_strings[k]
		   : "?";
}

const char *tp_format_kind_name(enum tp_format_kind k)
{
	static const char *const names[] = {"unknown", "model",	  "topology",
					    "plan",    "report",  "devices",
					    "runtime"};
	return (unsigned)k <= TP_FORMAT_RUNTIME ? names[k] : "unknown";
}

enum tp_format_kind tp_format_parse(const char *s)
{
	for (int k = TP_FORMAT_MODEL; k <= TP_FORMAT_RUNTIME; k++)
		if (strcmp(s, format_strings[k]) == 0)
			return (enum tp_format_kind)k;
	return TP_FORMAT_UNKNOWN;
}

enum tp_status tp_jctx_missing_format(struct tp_jctx *j,
				      const struct tp_json *root,
				      const char *fix)
{
	const struct tp_json *mt = tp_json_get(root, "model_type");

	/* a HuggingFace config.json given where a tagplan file goes: adding
	   "format" would not make it one */
	if (mt && mt->type == TP_JSON_STRING)
		return tp_jctx_fail(
		    j, NULL,
		    "missing required field \"format\": this is a "
		    "HuggingFace config (\"model_type\": \"%.60s\"), not a "
		    "tagplan file; build a model from it with `tagplan model "
		    "hf:%.200s -o MODEL.json` and give that with -m MODEL",
		    mt->str, j->file ? j->file : "config.json");
	/* tagplan's own outputs that are no tagplan format: adding "format"
	   would not make them one either */
	if (tp_json_get(root, "traceEvents"))
		return tp_jctx_fail(
		    j, NULL,
		    "missing required field \"format\": this is a "
		    "Chrome/Perfetto trace (\"traceEvents\", as tagplan "
		    "simulate --trace writes), not a tagplan file; open it in "
		    "ui.perfetto.dev or chrome://tracing");
	if (tp_json_get(root, "train_micro_batch_size_per_gpu") ||
	    tp_json_get(root, "zero_optimization"))
		return tp_jctx_fail(
		    j, NULL,
		    "missing required field \"format\": this is a DeepSpeed "
		    "config (as tagplan export --to deepspeed writes), not a "
		    "tagplan file; give DeepSpeed the config, and tagplan the "
		    "plan it was exported from");
	if (tp_json_get(root, "rows") &&
	    tp_json_get(root, "rows")->type == TP_JSON_ARRAY)
		return tp_jctx_fail(
		    j, NULL,
		    "missing required field \"format\": this is a list of "
		    "measured runs (calibrate's input, tagplan-formats(5) "
		    "MEASURED RUNS), not a tagplan file; tagplan validate "
		    "checks it, tagplan calibrate fits to it");
	if (tp_json_get(root, "$schema"))
		return tp_jctx_fail(
		    j, NULL,
		    "missing required field \"format\": this is a JSON "
		    "Schema (\"$schema\", as data/schema ships), not a "
		    "tagplan file; a JSON Schema validator checks files "
		    "against it");
	return tp_jctx_fail(j, NULL, "missing required field \"format\" (%s)",
			    fix);
}

enum tp_status tp_jctx_format(struct tp_jctx *j, const struct tp_json *root,
			      const char *want)
{
	char fix[96];

	const struct tp_json *f;
	const char *slash;

	if (!root || root->type != TP_JSON_OBJECT)
		return tp_jctx_fail(
		    j, NULL,
		    "expected a JSON object with \"format\": "
		    "\"%s\" at the top level, found %s",
		    want, root ? tp_json_type_name(root->type) : "nothing");
	f = tp_json_get(root, "format");
	if (!f) {
		snprintf(fix, sizeof(fix), "add \"format\": \"%.60s\"", want);
		return tp_jctx_missing_format(j, root, fix);
	}
	if (f->type != TP_JSON_STRING)
		return tp_jctx_fail(j, "format", "expected the string \"%s\"",
				    want);
	if (strcmp(f->str, want) == 0)
		return TP_OK;
	slash = strchr(want, '/');
	if (slash && strncmp(f->str, want, (size_t)(slash - want + 1)) == 0)
		return tp_jctx_fail(
		    j, "format",
		    "unsupported version \"%.60s\": this tagplan "
		    "reads \"%s\"",
		    f->str, want);
	if (tp_format_parse(f->str) != TP_FORMAT_UNKNOWN)
		return tp_jctx_fail(j, "format",
				    "this is a %.60s file, expected %s", f->str,
				    want);
	return tp_jctx_fail(j, "format",
			    "unknown format \"%.60s\"; expected \"%s\"", f->str,
			    want);
}
