#include "jsonw.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void tp_jw_init(struct tp_jw *jw, struct tp_strbuf *sb, bool pretty)
{
	jw->sb = sb;
	jw->pretty = pretty;
	jw->depth = 0;
	jw->first[0] = true;
	jw->inline_[0] = false;
	jw->after_key = false;
}

static void newline(struct tp_jw *jw)
{
	if (!jw->pretty || jw->inline_[jw->depth])
		return;
	tp_strbuf_addc(jw->sb, '\n');
	for (int i = 0; i < jw->depth; i++)
		tp_strbuf_add(jw->sb, "  ", 2);
}

/* Separator before a value or key at the current level. */
static void before_item(struct tp_jw *jw)
{
	if (jw->after_key) {
		jw->after_key = false;
		return;
	}
	if (jw->depth == 0)
		return;
	if (!jw->first[jw->depth]) {
		tp_strbuf_addc(jw->sb, ',');
		if (jw->pretty && jw->inline_[jw->depth])
			tp_strbuf_addc(jw->sb, ' ');
	}
	jw->first[jw->depth] = false;
	newline(jw);
}

static void open(struct tp_jw *jw, char c, bool inl)
{
	before_item(jw);
	tp_strbuf_addc(jw->sb, c);
	assert(jw->depth + 1 < TP_JW_MAX_DEPTH);
	jw->depth++;
	jw->first[jw->depth] = true;
	jw->inline_[jw->depth] = inl || jw->inline_[jw->depth - 1];
}

static void close(struct tp_jw *jw, char c)
{
	bool empty = jw->first[jw->depth];

	assert(jw->depth > 0);
	jw->depth--;
	if (!empty && !jw->inline_[jw->depth + 1])
		newline(jw);
	tp_strbuf_addc(jw->sb, c);
}

void tp_jw_object_begin(struct tp_jw *jw)
{
	open(jw, '{', false);
}

void tp_jw_object_end(struct tp_jw *jw)
{
	close(jw, '}');
}

void tp_jw_array_begin(struct tp_jw *jw)
{
	open(jw, '[', false);
}

void tp_jw_array_begin_inline(struct tp_jw *jw)
{
	open(jw, '[', true);
}

void tp_jw_array_end(struct tp_jw *jw)
{
	close(jw, ']');
}

void tp_jw_key(struct tp_jw *jw, const char *key)
{
	before_item(jw);
	tp_jw_format_string(jw->sb, key);
	tp_strbuf_adds(jw->sb, jw->pretty ? ": " : ":");
	jw->after_key = true;
}

void tp_jw_format_string(struct tp_strbuf *sb, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	tp_strbuf_addc(sb, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			tp_strbuf_add(sb, "\\\"", 2);
			break;
		case '\\':
			tp_strbuf_add(sb, "\\\\", 2);
			break;
		case '\n':
			tp_strbuf_add(sb, "\\n", 2);
			break;
		case '\t':
			tp_strbuf_add(sb, "\\t", 2);
			break;
		case '\r':
			tp_strbuf_add(sb, "\\r", 2);
			break;
		default:
			if (*p < 0x20) {
				char esc[6] = {'\\', 'u', '0', '0', hex[*p >> 4],
					       hex[*p & 15]};
				tp_strbuf_add(sb, esc, 6);
			} else {
				tp_strbuf_addc(sb, (char)*p);
			}
		}
	}
	tp_strbuf_addc(sb, '"');
}

void tp_jw_string(struct tp_jw *jw, const char *s)
{
	before_item(jw);
	tp_jw_format_string(jw->sb, s ? s : "");
}

void tp_jw_format_number(struct tp_strbuf *sb, double v)
{
	char buf[40];

	assert(isfinite(v));
	if (!isfinite(v)) {
		tp_strbuf_adds(sb, "null");
		return;
	}
	if (v == 0) {
		tp_strbuf_addc(sb, '0');
		return;
	}
	if (fabs(v) < 9007199254740992.0 && v == (double)(int64_t)v) {
		snprintf(buf, sizeof(buf), "%" PRId64, (int64_t)v);
		tp_strbuf_adds(sb, buf);
		return;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	tp_strbuf_adds(sb, buf);
}

void tp_jw_number(struct tp_jw *jw, double v)
{
	before_item(jw);
	tp_jw_format_number(jw->sb, v);
}

void tp_jw_int(struct tp_jw *jw, int64_t v)
{
	before_item(jw);
	tp_strbuf_addf(jw->sb, "%" PRId64, v);
}

void tp_jw_bool(struct tp_jw *jw, bool v)
{
	before_item(jw);
	tp_strbuf_adds(jw->sb, v ? "true" : "false");
}

void tp_jw_null(struct tp_jw *jw)
{
	before_item(jw);
	tp_strbuf_adds(jw->sb, "null");
}

void tp_jw_finish(struct tp_jw *jw)
{
	assert(jw->depth == 0);
	tp_strbuf_addc(jw->sb, '\n');
}

void tp_jw_kv_string(struct tp_jw *jw, const char *key, const char *s)
{
	tp_jw_key(jw, key);
	tp_jw_string(jw, s);
}

void tp_jw_kv_number(struct tp_jw *jw, const char *key, double v)
{
	tp_jw_key(jw, key);
	tp_jw_number(jw, v);
}

void tp_jw_kv_int(struct tp_jw *jw, const char *key, int64_t v)
{
	tp_jw_key(jw, key);
	tp_jw_int(jw, v);
}

void tp_jw_kv_bool(struct tp_jw *jw, const char *key, bool v)
{
	tp_jw_key(jw, key);
	tp_jw_bool(jw, v);
}
