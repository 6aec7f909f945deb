/*
 * jsonw.h - the one JSON-writing helper.
 *
 * Writes strict JSON into a struct tp_strbuf, pretty-printed with two-space
 * indentation (or compact).  Numbers are written in the shortest form that
 * reads back to the same double, so output is byte-identical across runs;
 * a non-finite number is a bug (assert) - callers must not produce one.
 *
 *   struct tp_jw jw;
 *   tp_jw_init(&jw, &sb, true);
 *   tp_jw_object_begin(&jw);
 *   tp_jw_kv_string(&jw, "format", "tagplan-plan/1");
 *   tp_jw_key(&jw, "groups"); tp_jw_array_begin(&jw); ... tp_jw_array_end(&jw);
 *   tp_jw_object_end(&jw);
 *   tp_jw_finish(&jw);   (adds the final newline)
 *
 * tp_jw_array_begin_inline writes the array's elements on one line (for
 * short vectors of numbers).
 */
#ifndef TP_JSONW_H
#define TP_JSONW_H

#include <stdbool.h>
#include <stdint.h>

#include "strbuf.h"

#define TP_JW_MAX_DEPTH 64

struct tp_jw {
	struct tp_strbuf *sb;
	bool pretty;
	int depth;
	bool first[TP_JW_MAX_DEPTH];
	bool inline_[TP_JW_MAX_DEPTH];
	bool after_key;
};

void tp_jw_init(struct tp_jw *jw, struct tp_strbuf *sb, bool pretty);
void tp_jw_object_begin(struct tp_jw *jw);
void tp_jw_object_end(struct tp_jw *jw);
void tp_jw_array_begin(struct tp_jw *jw);
void tp_jw_array_begin_inline(struct tp_jw *jw);
void tp_jw_array_end(struct tp_jw *jw);
void tp_jw_key(struct tp_jw *jw, const char *key);
void tp_jw_string(struct tp_jw *jw, const char *s);
void tp_jw_number(struct tp_jw *jw, double v);
void tp_jw_int(struct tp_jw *jw, int64_t v);
void tp_jw_bool(struct tp_jw *jw, bool v);
void tp_jw_null(struct tp_jw *jw);
void tp_jw_finish(struct tp_jw *jw);

void tp_jw_kv_string(struct tp_jw *jw, const char *key, const char *s);
void tp_jw_kv_number(struct tp_jw *jw, const char *key, double v);
void tp_jw_kv_int(struct tp_jw *jw, const char *key, int64_t v);
void tp_jw_kv_bool(struct tp_jw *jw, const char *key, bool v);

/* Append the shortest round-trip text of a finite double to sb. */
void tp_jw_format_number(struct tp_strbuf *sb, double v);
/* Append s as a JSON string literal (quotes and escapes) to sb. */
void tp_jw_format_string(struct tp_strbuf *sb, const char *s);

#endif
