/*
 * json.h - private to src/io/: the JSON reader (cJSON held to RFC 8259
 * and to tagplan's limits, producing a small read-only DOM) and typed
 * accessors that build JSON paths for semantic errors.
 *
 * Reader (json.c): cJSON (Debian's libcjson) parses; a scan before it
 * checks what cJSON would let through and keeps nesting over the limit
 * from its recursive parser (one pass without recursion, so a
 * 100,000-deep document fails at the limit in constant stack); cJSON's
 * parse end names the place of a syntax error; its tree is copied into
 * an arena and deleted, so no cJSON type leaves json.c.  Every syntax
 * problem is reported with a 1-based line and a column counted in
 * characters: empty input, NUL bytes (binary files), invalid UTF-8, raw
 * control characters in strings, comments, trailing commas, single
 * quotes, bad literals, NaN/Infinity, numbers that overflow a double,
 * \u0000 and lone surrogates, duplicate keys in one object, trailing
 * data, unterminated input (truncated files), nesting over the limit
 * (TP_ELIMIT) and size over the limit (TP_ELIMIT).
 *
 * Accessors (jctx.c, struct tp_jctx): look up a field, check its type and
 * range, and on failure fill the error with the file, the JSON path
 * ("$.nodes[2].devices[0].type") and what was expected.  Unknown fields
 * are collected as warnings, or errors under strict.
 *
 * Ownership: a struct tp_json_doc owns every node and string of its tree;
 * tp_json_doc_release frees them all.  Nodes are immutable.
 */
#ifndef TP_IO_JSON_H
#define TP_IO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/error.h"
#include "io.h"

enum tp_json_type {
	TP_JSON_NULL,
	TP_JSON_BOOL,
	TP_JSON_NUMBER,
	TP_JSON_STRING,
	TP_JSON_ARRAY,
	TP_JSON_OBJECT
};

struct tp_json {
	enum tp_json_type type;
	int line, column; /* where the value starts */
	bool b;		  /* BOOL */
	double num;	  /* NUMBER (finite) */
	const char *str;  /* STRING: decoded UTF-8, NUL-terminated */
	size_t str_len;
	const char *key;	  /* member of an object: its key, else NULL */
	int key_line, key_column; /* where the key starts */
	struct tp_json **items; /* ARRAY elements / OBJECT members, in order */
	size_t n;
};

struct tp_json_doc {
	struct tp_arena arena;
	struct tp_json *root;
};

/* Parse text[0..len) (need not be NUL-terminated) strictly.  On success
 * doc->root is the top-level value.  On failure err has line/column (or
 * only a message for size) and the file name; doc is left released.
 * max_bytes / max_depth 0 mean the defaults of io.h. */
enum tp_status tp_json_parse(const char *name, const char *text, size_t len,
			     size_t max_bytes, int max_depth,
			     struct tp_json_doc *doc, struct tp_error *err);
void tp_json_doc_release(struct tp_json_doc *doc);

/* Member of an object by key, or NULL (also when obj is not an object). */
const struct tp_json *tp_json_get(const struct tp_json *obj, const char *key);
/* "a number", "a string", ... for messages. */
const char *tp_json_type_name(enum tp_json_type t);

/* --- typed accessors with JSON paths ------------------------------------ */

struct tp_jctx {
	const char *file;
	bool strict;
	struct tp_strbuf *warnings; /* may be NULL */
	struct tp_error *err;	    /* may be NULL */
	char path[TP_ERROR_PATH_MAX];
	size_t plen;
};

void tp_jctx_init(struct tp_jctx *j, const char *file,
		  const struct tp_load_options *o, struct tp_error *err);

/* Extend the current path by ".key" or "[i]"; return the old length to
 * give back to tp_jctx_pop. */
size_t tp_jctx_push_key(struct tp_jctx *j, const char *key);
size_t tp_jctx_push_index(struct tp_jctx *j, size_t i);
void tp_jctx_pop(struct tp_jctx *j, size_t old);

/* Fail with TP_EINPUT at the current path (plus ".key" when key != NULL). */
enum tp_status tp_jctx_fail(struct tp_jctx *j, const char *key, const char *fmt,
			    ...) __attribute__((format(printf, 3, 4)));
/* Record a warning at the current path (an error under strict when
 * as_error_if_strict). */
enum tp_status tp_jctx_warn(struct tp_jctx *j, const char *key,
			    bool as_error_if_strict, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Check that v is an object (else fail "expected an object") and that all
 * its keys are in known[] (NULL-terminated; "note" is always allowed);
 * unknown keys are warnings or, under strict, errors, with a close-name
 * suggestion. */
enum tp_status tp_jctx_object(struct tp_jctx *j, const struct tp_json *v,
			      const char *what, const char *const *known);

/* Range constraints for numbers. */
enum tp_jnum {
	TP_JNUM_ANY,
	TP_JNUM_NONNEG,	  /* >= 0 */
	TP_JNUM_POS,	  /* > 0 */
	TP_JNUM_FRACTION, /* 0 < x <= 1 */
	TP_JNUM_UNIT,	  /* 0 <= x <= 1 */
	TP_JNUM_GE1	  /* >= 1 */
};

/*
 * Field getters: obj must be an object.  When the field is absent,
 * `required` makes it an error ("missing required field ..."), else *out
 * gets the default (and tp_jget_number's *present, where offered,
 * false; elsewhere, whether a field is there is tp_json_get(obj, key)
 * != NULL).  A present field of the wrong type or range is an error
 * naming the field's path and what was expected (`what`, e.g. "FLOP per
 * sample").
 */
enum tp_status tp_jget_number(struct tp_jctx *j, const struct tp_json *obj,
			      const char *key, bool required, enum tp_jnum rng,
			      double def, double *out, bool *present);
enum tp_status tp_jget_int(struct tp_jctx *j, const struct tp_json *obj,
			   const char *key, bool required, int64_t min,
			   int64_t max, int64_t def, int64_t *out);
enum tp_status tp_jget_bool(struct tp_jctx *j, const struct tp_json *obj,
			    const char *key, bool required, bool def,
			    bool *out);
/* Strings: max_len 0 = unlimited; nonempty rejects "". */
enum tp_status tp_jget_string(struct tp_jctx *j, const struct tp_json *obj,
			      const char *key, bool required, size_t max_len,
			      bool nonempty, const char *def, const char **out);
/* A string that must be one of names (parse returns -1 otherwise);
 * choices is the human list "a | b | c". */
enum tp_status tp_jget_enum(struct tp_jctx *j, const struct tp_json *obj,
			    const char *key, bool required,
			    int (*parse)(const char *), const char *choices,
			    int def, int *out);
/* Array / object members (NULL when absent and optional). */
enum tp_status tp_jget_array(struct tp_jctx *j, const struct tp_json *obj,
			     const char *key, bool required, bool nonempty,
			     const struct tp_json **out);
enum tp_status tp_jget_object(struct tp_jctx *j, const struct tp_json *obj,
			      const char *key, bool required,
			      const struct tp_json **out);

/* Check a value found some other way (array element etc.). */
enum tp_status tp_jcheck_number(struct tp_jctx *j, const struct tp_json *v,
				enum tp_jnum rng, double *out);
enum tp_status tp_jcheck_string(struct tp_jctx *j, const struct tp_json *v,
				size_t max_len, bool nonempty,
				const char **out);

/* The "format" check shared by all loaders: the document must be an
 * object whose "format" is want ("tagplan-model/1").  A different
 * version or another kind is an error saying what the file is. */
enum tp_status tp_jctx_format(struct tp_jctx *j, const struct tp_json *root,
			      const char *want);

/* The error for an object root without "format": "missing required
 * field \"format\" (FIX)", or, when root is a HuggingFace config.json
 * (a "model_type" string), how to build a model from it. */
enum tp_status tp_jctx_missing_format(struct tp_jctx *j,
				      const struct tp_json *root,
				      const char *fix);

/* Devices per topology (core/cluster.h) and per node: a node's routes are
 * a table of its devices squared (src/core/route.c). */
#define TP_IO_MAX_DEVICES TP_CLUSTER_MAX_DEVICES
/* Switch tiers of a tiered network (leaf, spine, core, zones, ...). */
#define TP_IO_MAX_TIERS 8
#define TP_IO_MAX_NODE_DEVICES 4096
/* Hard upper bound for max_depth. */
#define TP_IO_DEPTH_CAP 1000

#endif
