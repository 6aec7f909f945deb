/*
 * json.c - the strict JSON reader (see json.h; the accessors are in jctx.c).
 *
 * The reader is a state machine over the bytes with an explicit stack of
 * open containers, so nesting costs heap, not C stack, and stops at the
 * depth limit.  Children of open containers wait on one shared pointer
 * stack and move into the arena when their container closes.  Columns
 * are counted in characters incrementally (a cache of the last position
 * on the current line), so long single-line files stay linear.
 */
#include "json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "core/strmap.h"
#include "core/vec.h"

/* --- reader ------------------------------------------------------------- */

struct frame {
	struct tp_json *node;
	size_t first;		 /* its children start here in p->kids */
	const char *pending_key; /* objects: key of the value being read */
	int key_line, key_column;
};

struct parser {
	const unsigned char *s;
	size_t n, i;
	int line;
	size_t line_start;
	size_t cpos; /* column cache: position and its column */
	int ccol;
	int max_depth;
	struct tp_arena *arena;
	TP_VEC(struct tp_json *) kids;
	TP_VEC(struct frame) stack;
	struct tp_strbuf sb;
	struct tp_json *root;
	const char *name;
	struct tp_error *err;
};

static int col_at(struct parser *p, size_t pos)
{
	if (pos < p->cpos || p->cpos < p->line_start) {
		p->cpos = p->line_start;
		p->ccol = 1;
	}
	for (; p->cpos < pos && p->cpos < p->n; p->cpos++)
		if ((p->s[p->cpos] & 0xC0) != 0x80)
			p->ccol++;
	return p->ccol;
}

static enum tp_status failv(struct parser *p, size_t pos, enum tp_status st,
			    const char *fmt, va_list ap)
{
	char msg[TP_ERROR_MSG_MAX];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	tp_error_set_at(p->err, st, p->line, col_at(p, pos), "%s", msg);
	tp_error_set_file(p->err, p->name);
	return st;
}

__attribute__((format(printf, 3, 4))) static enum tp_status
fail(struct parser *p, size_t pos, const char *fmt, ...)
{
	va_list ap;
	enum tp_status st;

	va_start(ap, fmt);
	st = failv(p, pos, TP_EINPUT, fmt, ap);
	va_end(ap);
	return st;
}

__attribute__((format(printf, 2, 3))) static enum tp_status
limit_fail(struct parser *p, const char *fmt, ...)
{
	va_list ap;
	enum tp_status st;

	va_start(ap, fmt);
	st = failv(p, p->i, TP_ELIMIT, fmt, ap);
	va_end(ap);
	return st;
}

static enum tp_status nomem(struct parser *p)
{
	tp_error_set(p->err, TP_ENOMEM, "out of memory reading the document");
	tp_error_set_file(p->err, p->name);
	return TP_ENOMEM;
}

static void skip_ws(struct parser *p)
{
	while (p->i < p->n) {
		unsigned char c = p->s[p->i];
		if (c == '\n') {
			p->line++;
			p->line_start = p->i + 1;
		} else if (c != ' ' && c != '\t' && c != '\r') {
			return;
		}
		p->i++;
	}
}

/* Length (1-4) of the valid UTF-8 sequence at s[i], its code point in
 * *cp; 0 when invalid (RFC 3629: no overlongs, no surrogates, <= 10FFFF). */
static int utf8_seq(const unsigned char *s, size_t n, size_t i, uint32_t *cp)
{
	unsigned char b = s[i];
	unsigned char lo = 0x80, hi = 0xBF;
	int len;
	uint32_t v;

	if (b < 0x80) {
		*cp = b;
		return 1;
	}
	if (b >= 0xC2 && b <= 0xDF) {
		len = 2;
		v = b & 0x1F;
	} else if (b >= 0xE0 && b <= 0xEF) {
		len = 3;
		v = b & 0x0F;
		if (b == 0xE0)
			lo = 0xA0;
		else if (b == 0xED)
			hi = 0x9F;
	} else if (b >= 0xF0 && b <= 0xF4) {
		len = 4;
		v = b & 0x07;
		if (b == 0xF0)
			lo = 0x90;
		else if (b == 0xF4)
			hi = 0x8F;
	} else {
		return 0;
	}
	if (n - i < (size_t)len)
		return 0;
	for (int k = 1; k < len; k++) {
		unsigned char c = s[i + (size_t)k];
		if (k == 1 ? (c < lo || c > hi) : (c & 0xC0) != 0x80)
			return 0;
		v = (v << 6) | (c & 0x3F);
	}
	*cp = v;
	return len;
}

static void utf8_put(struct tp_strbuf *sb, uint32_t cp)
{
	char b[4];

	if (cp < 0x80) {
		tp_strbuf_addc(sb, (char)cp);
	} else if (cp < 0x800) {
		b[0] = (char)(0xC0 | (cp >> 6));
		b[1] = (char)(0x80 | (cp & 0x3F));
		tp_strbuf_add(sb, b, 2);
	} else if (cp < 0x10000) {
		b[0] = (char)(0xE0 | (cp >> 12));
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		b[2] = (char)(0x80 | (cp & 0x3F));
		tp_strbuf_add(sb, b, 3);
	} else {
		b[0] = (char)(0xF0 | (cp >> 18));
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		b[3] = (char)(0x80 | (cp & 0x3F));
		tp_strbuf_add(sb, b, 4);
	}
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Four hex digits at s[i]; -1 when not. */
static long hex4(struct parser *p, size_t i)
{
	long v = 0;

	if (p->n - i < 4)
		return -1;
	for (size_t k = 0; k < 4; k++) {
		int h = hexval(p->s[i + k]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

static enum tp_status unterminated(struct parser *p, size_t start)
{
	return fail(p, start,
		    "unterminated string: no closing '\"' before the end of "
		    "the input (is the file truncated?)");
}

/* Scan the string starting at the '"' at p->i; the decoded text goes to
 * the arena (*out, *out_len). */
static enum tp_status scan_string(struct parser *p, const char **out,
				  size_t *out_len)
{
	size_t start = p->i;
	char *copy;

	tp_strbuf_reset(&p->sb);
	p->i++;
	for (;;) {
		size_t run = p->i;
		unsigned char b;

		while (p->i < p->n) {
			b = p->s[p->i];
			if (b < 0x20 || b == '"' || b == '\\' || b >= 0x80)
				break;
			p->i++;
		}
		if (p->i > run)
			tp_strbuf_add(&p->sb, (const char *)p->s + run,
				      p->i - run);
		if (p->i >= p->n)
			return unterminated(p, start);
		b = p->s[p->i];
		if (b == '"') {
			p->i++;
			break;
		}
		if (b == '\\') {
			unsigned char e;
			if (p->i + 1 >= p->n)
				return unterminated(p, start);
			e = p->s[p->i + 1];
			switch (e) {
			case '"':
			case '\\':
			case '/':
				tp_strbuf_addc(&p->sb, (char)e);
				break;
			case 'b':
				tp_strbuf_addc(&p->sb, '\b');
				break;
			case 'f':
				tp_strbuf_addc(&p->sb, '\f');
				break;
			case 'n':
				tp_strbuf_addc(&p->sb, '\n');
				break;
			case 'r':
				tp_strbuf_addc(&p->sb, '\r');
				break;
			case 't':
				tp_strbuf_addc(&p->sb, '\t');
				break;
			case 'u': {
				long cp = hex4(p, p->i + 2), lo;
				if (cp < 0)
					return fail(
					    p, p->i,
					    "bad \\u escape: expected 4 "
					    "hexadecimal digits");
				if (cp == 0)
					return fail(p, p->i,
						    "\\u0000 (NUL) is not "
						    "allowed in strings");
				if (cp >= 0xDC00 && cp <= 0xDFFF)
					return fail(p, p->i,
						    "lone UTF-16 low surrogate "
						    "\\u%04lX",
						    cp);
				if (cp >= 0xD800 && cp <= 0xDBFF) {
					if (p->n - p->i < 12 ||
					    p->s[p->i + 6] != '\\' ||
					    p->s[p->i + 7] != 'u' ||
					    (lo = hex4(p, p->i + 8)) < 0xDC00 ||
					    lo > 0xDFFF)
						return fail(
						    p, p->i,
						    "lone UTF-16 high "
						    "surrogate \\u%04lX "
						    "(not followed by a "
						    "low surrogate)",
						    cp);
					cp = 0x10000 + ((cp - 0xD800) << 10) +
					     (lo - 0xDC00);
					p->i += 6;
				}
				utf8_put(&p->sb, (uint32_t)cp);
				p->i += 4;
				break;
			}
			default:
				return fail(
				    p, p->i,
				    "invalid escape in a string (valid: "
				    "\\\" \\\\ \\/ \\b \\f \\n \\r \\t "
				    "\\uXXXX)");
			}
			p->i += 2;
			continue;
		}
		if (b < 0x20) {
			if (b == 0)
				return fail(
				    p, p->i,
				    "NUL byte in a string: this looks "
				    "like a binary file, not JSON text");
			if (b == '\n' || b == '\r')
				return fail(
				    p, p->i,
				    "line break inside a string (missing "
				    "closing '\"'?  write a line break "
				    "as \\n)");
			return fail(p, p->i,
				    "raw control character U+%04X in a string; "
				    "write it escaped as \\u%04X",
				    b, b);
		}
		{
			uint32_t cp;
			int len = utf8_seq(p->s, p->n, p->i, &cp);
			if (!len)
				return fail(p, p->i,
					    "invalid UTF-8 byte 0x%02X in a "
					    "string (the file must be UTF-8)",
					    b);
			tp_strbuf_add(&p->sb, (const char *)p->s + p->i,
				      (size_t)len);
			p->i += (size_t)len;
		}
	}
	if (p->sb.failed)
		return nomem(p);
	copy = tp_arena_alloc(p->arena, p->sb.len + 1);
	if (!copy)
		return nomem(p);
	if (p->sb.len)
		memcpy(copy, p->sb.buf, p->sb.len);
	copy[p->sb.len] = '\0';
	*out = copy;
	*out_len = p->sb.len;
	return TP_OK;
}

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static bool is_word(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       is_digit(c) || c == '_';
}

/* The word at pos (letters, digits, _), at most 31 bytes, into buf. */
static void word_at(struct parser *p, size_t pos, char *buf, size_t size)
{
	size_t k = 0;

	while (pos + k < p->n && is_word(p->s[pos + k]) && k + 1 < size) {
		buf[k] = (char)p->s[pos + k];
		k++;
	}
	buf[k] = '\0';
}

static bool nonfinite_word(const char *w)
{
	static const char *const words[] = {
	    "NaN", "nan", "Infinity", "infinity", "inf", "Inf", "INF", "NAN"};
	for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++)
		if (strcmp(w, words[k]) == 0)
			return true;
	return false;
}

static enum tp_status scan_number(struct parser *p, double *out)
{
	size_t start = p->i, len;
	char small[64], *buf = small, *end;
	double v;

	if (p->s[p->i] == '-') {
		p->i++;
		if (p->i >= p->n)
			return fail(p, p->i,
				    "unexpected end of input after '-' (is the "
				    "file truncated?)");
		if (p->s[p->i] == 'I' || p->s[p->i] == 'N' ||
		    p->s[p->i] == 'i' || p->s[p->i] == 'n')
			return fail(p, start,
				    "-Infinity/NaN is not a JSON number: "
				    "numbers must be finite");
	}
	if (p->s[p->i] == '0') {
		p->i++;
		if (p->i < p->n && is_digit(p->s[p->i]))
			return fail(p, start,
				    "leading zeros are not allowed in JSON "
				    "numbers");
	} else if (is_digit(p->s[p->i])) {
		while (p->i < p->n && is_digit(p->s[p->i]))
			p->i++;
	} else {
		return fail(p, p->i, "expected a digit after '-'");
	}
	if (p->i < p->n && p->s[p->i] == '.') {
		p->i++;
		if (p->i >= p->n || !is_digit(p->s[p->i]))
			return fail(p, p->i,
				    "expected a digit after the decimal point");
		while (p->i < p->n && is_digit(p->s[p->i]))
			p->i++;
	}
	if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
		p->i++;
		if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-'))
			p->i++;
		if (p->i >= p->n || !is_digit(p->s[p->i]))
			return fail(p, p->i,
				    "expected a digit in the exponent");
		while (p->i < p->n && is_digit(p->s[p->i]))
			p->i++;
	}
	len = p->i - start;
	if (len >= sizeof(small)) {
		buf = malloc(len + 1);
		if (!buf)
			return nomem(p);
	}
	memcpy(buf, p->s + start, len);
	buf[len] = '\0';
	v = strtod(buf, &end);
	if (buf != small)
		free(buf);
	if (!isfinite(v))
		return fail(p, start,
			    "number %.*s%s is too large for a double (JSON "
			    "numbers must be finite)",
			    (int)(len > 40 ? 40 : len),
			    (const char *)p->s + start, len > 40 ? "..." : "");
	*out = v;
	return TP_OK;
}

static struct tp_json *new_node(struct parser *p, enum tp_json_type t,
				size_t pos)
{
	struct tp_json *v = tp_arena_alloc(p->arena, sizeof(*v));

	if (!v)
		return NULL;
	v->type = t;
	v->line = p->line;
	v->column = col_at(p, pos);
	if (p->stack.n) {
		struct frame *f = &p->stack.v[p->stack.n - 1];
		v->key = f->pending_key;
		v->key_line = f->key_line;
		v->key_column = f->key_column;
		f->pending_key = NULL;
	}
	return v;
}

/* A value is complete: it becomes a child of the open container, or the
 * root. */
static enum tp_status attach(struct parser *p, struct tp_json *v)
{
	if (!p->stack.n) {
		p->root = v;
		return TP_OK;
	}
	if (tp_vec_push(&p->kids, v))
		return nomem(p);
	return TP_OK;
}

static int key_cmp(const void *a, const void *b)
{
	const struct tp_json *x = *(const struct tp_json *const *)a;
	const struct tp_json *y = *(const struct tp_json *const *)b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	/* same key: file order (positions are distinct) */
	if (x->key_line != y->key_line)
		return x->key_line < y->key_line ? -1 : 1;
	return x->key_column < y->key_column   ? -1
	       : x->key_column > y->key_column ? 1
					       : 0;
}

static bool before(const struct tp_json *a, const struct tp_json *b)
{
	return a->key_line < b->key_line ||
	       (a->key_line == b->key_line && a->key_column < b->key_column);
}

static enum tp_status check_duplicates(struct parser *p, struct tp_json *obj)
{
	const struct tp_json *dup = NULL, *first = NULL;

	if (obj->n < 2)
		return TP_OK;
	if (obj->n <= 32) {
		for (size_t a = 0; a < obj->n && !dup; a++)
			for (size_t b = 0; b < a; b++)
				if (strcmp(obj->items[a]->key,
					   obj->items[b]->key) == 0) {
					dup = obj->items[a];
					first = obj->items[b];
					break;
				}
	} else {
		struct tp_json **tmp = tp_calloc(obj->n, sizeof(*tmp));
		if (!tmp)
			return nomem(p);
		memcpy(tmp, obj->items, obj->n * sizeof(*tmp));
		qsort(tmp, obj->n, sizeof(*tmp), key_cmp);
		for (size_t k = 1; k < obj->n; k++)
			if (strcmp(tmp[k]->key, tmp[k - 1]->key) == 0 &&
			    (!dup || before(tmp[k], dup))) {
				dup = tmp[k];
				first = tmp[k - 1];
				while (k + 1 < obj->n &&
				       strcmp(tmp[k + 1]->key, dup->key) == 0)
					k++;
			}
		free(tmp);
	}
	if (!dup)
		return TP_OK;
	tp_error_set_at(p->err, TP_EINPUT, dup->key_line, dup->key_column,
			"duplicate key \"%.200s\" in one object (first at line "
			"%d, column %d); keys must be unique",
			dup->key, first->key_line, first->key_column);
	tp_error_set_file(p->err, p->name);
	return TP_EINPUT;
}

/* Close the innermost container: move its children to the arena. */
static enum tp_status close_frame(struct parser *p)
{
	struct frame f = p->stack.v[--p->stack.n];
	size_t n = p->kids.n - f.first;

	f.node->n = n;
	if (n) {
		f.node->items = tp_arena_array(p->arena, n, sizeof(void *));
		if (!f.node->items)
			return nomem(p);
		memcpy(f.node->items, p->kids.v + f.first, n * sizeof(void *));
	}
	p->kids.n = f.first;
	if (f.node->type == TP_JSON_OBJECT) {
		enum tp_status st = check_duplicates(p, f.node);
		if (st)
			return st;
	}
	return attach(p, f.node);
}

static enum tp_status unexpected(struct parser *p, bool after_comma)
{
	unsigned char c = p->s[p->i];
	char w[32];

	switch (c) {
	case 0:
		return fail(p, p->i,
			    "NUL byte: this looks like a binary file, not JSON "
			    "text");
	case '/':
		if (p->i + 1 < p->n &&
		    (p->s[p->i + 1] == '/' || p->s[p->i + 1] == '*'))
			return fail(p, p->i,
				    "comments are not allowed in JSON (use a "
				    "\"note\" field instead)");
		return fail(p, p->i, "unexpected '/'");
	case '#':
		return fail(p, p->i,
			    "comments are not allowed in JSON (use a \"note\" "
			    "field instead)");
	case '\'':
		return fail(p, p->i,
			    "strings must be in double quotes, not single "
			    "quotes");
	case '+':
		return fail(p, p->i, "numbers may not start with '+'");
	case '.':
		return fail(p, p->i,
			    "numbers need a digit before the decimal point");
	case ']':
	case '}':
		if (after_comma)
			return fail(p, p->i,
				    "trailing comma before '%c' (JSON does not "
				    "allow it; remove the comma)",
				    c);
		return fail(p, p->i, "expected a value before '%c'", c);
	case ',':
		return fail(p, p->i, "expected a value before ','");
	case ':':
		return fail(p, p->i, "unexpected ':' (expected a value)");
	default:
		break;
	}
	if (is_word(c)) {
		word_at(p, p->i, w, sizeof(w));
		if (nonfinite_word(w))
			return fail(p, p->i,
				    "%s is not a JSON number: numbers must be "
				    "finite",
				    w);
		return fail(p, p->i,
			    "unknown word \"%s\" (JSON's literals are true, "
			    "false and null; strings need double quotes)",
			    w);
	}
	if (c >= 0x80) {
		uint32_t cp;
		if (!utf8_seq(p->s, p->n, p->i, &cp))
			return fail(
			    p, p->i,
			    "invalid UTF-8 byte 0x%02X (the file must be "
			    "UTF-8 JSON text; is it binary?)",
			    c);
		return fail(p, p->i, "unexpected character U+%04X",
			    (unsigned)cp);
	}
	if (c < 0x20 || c == 0x7F)
		return fail(p, p->i,
			    "unexpected control character U+%04X (is this a "
			    "binary file?)",
			    c);
	return fail(p, p->i, "unexpected character '%c'", c);
}

static enum tp_status end_of_input(struct parser *p)
{
	if (p->stack.n) {
		const struct tp_json *open = p->stack.v[p->stack.n - 1].node;
		return fail(
		    p, p->n,
		    "unexpected end of input: the %s opened at line %d, "
		    "column %d is not closed (is the file truncated?)",
		    open->type == TP_JSON_OBJECT ? "object" : "array",
		    open->line, open->column);
	}
	return fail(p, p->n, "empty input: expected a JSON document");
}

static enum tp_status scan_literal(struct parser *p, const char *lit,
				   size_t len)
{
	char w[32];

	if (p->n - p->i < len || memcmp(p->s + p->i, lit, len) != 0 ||
	    (p->n - p->i > len && is_word(p->s[p->i + len]))) {
		if (p->n - p->i < len &&
		    memcmp(p->s + p->i, lit, p->n - p->i) == 0)
			return fail(p, p->i,
				    "unexpected end of input inside \"%s\" (is "
				    "the file truncated?)",
				    lit);
		word_at(p, p->i, w, sizeof(w));
		return fail(p, p->i,
			    "unknown word \"%s\" (JSON's literals are true, "
			    "false and null; strings need double quotes)",
			    w);
	}
	p->i += len;
	return TP_OK;
}

static enum tp_status depth_limit(struct parser *p)
{
	return limit_fail(p,
			  "nesting deeper than %d levels (the limit; tagplan "
			  "files need far fewer)",
			  p->max_depth);
}

enum { S_VALUE, S_AFTER, S_KEY };

static enum tp_status run(struct parser *p)
{
	int state = S_VALUE;
	bool after_comma = false;
	enum tp_status st;

	if (p->n >= 3 && p->s[0] == 0xEF && p->s[1] == 0xBB && p->s[2] == 0xBF)
		p->i = 3; /* UTF-8 byte order mark */
	p->cpos = p->i;
	for (;;) {
		unsigned char c;
		struct tp_json *v;

		skip_ws(p);
		if (state == S_AFTER && !p->stack.n)
			break;
		if (p->i >= p->n)
			return end_of_input(p);
		c = p->s[p->i];
		if (state == S_VALUE) {
			switch (c) {
			case '{':
			case '[': {
				struct frame f;
				if (p->stack.n >= (size_t)p->max_depth)
					return depth_limit(p);
				v = new_node(p,
					     c == '{' ? TP_JSON_OBJECT
						      : TP_JSON_ARRAY,
					     p->i);
				if (!v)
					return nomem(p);
				memset(&f, 0, sizeof(f));
				f.node = v;
				f.first = p->kids.n;
				if (tp_vec_push(&p->stack, f))
					return nomem(p);
				p->i++;
				skip_ws(p);
				if (p->i < p->n &&
				    p->s[p->i] == (c == '{' ? '}' : ']')) {
					p->i++;
					if ((st = close_frame(p)))
						return st;
					state = S_AFTER;
				} else {
					state = c == '{' ? S_KEY : S_VALUE;
				}
				after_comma = false;
				continue;
			}
			case '"':
				v = new_node(p, TP_JSON_STRING, p->i);
				if (!v)
					return nomem(p);
				if ((st = scan_string(p, &v->str, &v->str_len)))
					return st;
				break;
			case 't':
			case 'f':
				v = new_node(p, TP_JSON_BOOL, p->i);
				if (!v)
					return nomem(p);
				v->b = c == 't';
				if ((st = scan_literal(p,
						       v->b ? "true" : "false",
						       v->b ? 4 : 5)))
					return st;
				break;
			case 'n':
				v = new_node(p, TP_JSON_NULL, p->i);
				if (!v)
					return nomem(p);
				if ((st = scan_literal(p, "null", 4)))
					return st;
				break;
			default:
				if (c == '-' || is_digit(c)) {
					v = new_node(p, TP_JSON_NUMBER, p->i);
					if (!v)
						return nomem(p);
					if ((st = scan_number(p, &v->num)))
						return st;
					break;
				}
				return unexpected(p, after_comma);
			}
			if ((st = attach(p, v)))
				return st;
			state = S_AFTER;
			after_comma = false;
			continue;
		}
		if (state == S_KEY) {
			struct frame *f = &p->stack.v[p->stack.n - 1];
			const char *key;
			size_t klen;
			int kl = p->line, kc = col_at(p, p->i);

			if (c != '"') {
				if (c == '}' && after_comma)
					return unexpected(p, true);
				if (c == '\'' || c == '/' || c == '#' ||
				    c == 0 || c >= 0x80)
					return unexpected(p, false);
				return fail(p, p->i,
					    "expected a key in double quotes");
			}
			if ((st = scan_string(p, &key, &klen)))
				return st;
			skip_ws(p);
			if (p->i >= p->n)
				return end_of_input(p);
			if (p->s[p->i] != ':')
				return fail(
				    p, p->i,
				    "expected ':' after the key \"%.100s\"",
				    key);
			p->i++;
			f = &p->stack.v[p->stack.n - 1];
			f->pending_key = key;
			f->key_line = kl;
			f->key_column = kc;
			state = S_VALUE;
			after_comma = false;
			continue;
		}
		/* S_AFTER inside a container */
		{
			bool obj = p->stack.v[p->stack.n - 1].node->type ==
				   TP_JSON_OBJECT;
			char closer = obj ? '}' : ']';

			if (c == ',') {
				p->i++;
				state = obj ? S_KEY : S_VALUE;
				after_comma = true;
				continue;
			}
			if (c == (unsigned char)closer) {
				p->i++;
				if ((st = close_frame(p)))
					return st;
				continue;
			}
			if (c == '/' || c == '#' || c == 0 || c >= 0x80)
				return unexpected(p, false);
			if (obj && c == '"')
				return fail(
				    p, p->i,
				    "expected ',' or '}' after an object "
				    "member (missing comma?)");
			if (!obj && (c == '"' || c == '{' || c == '[' ||
				     c == '-' || is_digit(c) || is_word(c)))
				return fail(
				    p, p->i,
				    "expected ',' or ']' after an array "
				    "element (missing comma?)");
			return fail(p, p->i, "expected ',' or '%c', found '%c'",
				    closer, c >= 0x20 && c < 0x7F ? c : '?');
		}
	}
	if (p->i < p->n) {
		if (p->s[p->i] == 0)
			return fail(
			    p, p->i,
			    "NUL byte after the JSON document: this looks "
			    "like a binary file");
		return fail(p, p->i,
			    "trailing data after the JSON document (a file "
			    "holds exactly one document)");
	}
	return TP_OK;
}

enum tp_status tp_json_parse(const char *name, const char *text, size_t len,
			     size_t max_bytes, int max_depth,
			     struct tp_json_doc *doc, struct tp_error *err)
{
	struct parser p;
	enum tp_status st;

	memset(doc, 0, sizeof(*doc));
	tp_arena_init(&doc->arena, 0);
	if (!max_bytes)
		max_bytes = TP_IO_DEFAULT_MAX_BYTES;
	if (max_depth <= 0)
		max_depth = TP_IO_DEFAULT_MAX_DEPTH;
	if (max_depth > TP_IO_DEPTH_CAP)
		max_depth = TP_IO_DEPTH_CAP;
	if (len > max_bytes) {
		tp_error_set(err, TP_ELIMIT,
			     "the input is %zu bytes, over the size limit of "
			     "%zu bytes (raise it with --max-bytes)",
			     len, max_bytes);
		tp_error_set_file(err, name);
		return TP_ELIMIT;
	}
	memset(&p, 0, sizeof(p));
	p.s = (const unsigned char *)text;
	p.n = len;
	p.line = 1;
	p.ccol = 1;
	p.max_depth = max_depth;
	p.arena = &doc->arena;
	p.name = name;
	p.err = err;
	tp_strbuf_init(&p.sb);
	st = run(&p);
	tp_vec_free(&p.kids);
	tp_vec_free(&p.stack);
	tp_strbuf_release(&p.sb);
	if (st) {
		tp_json_doc_release(doc);
		return st;
	}
	doc->root = p.root;
	return TP_OK;
}

void tp_json_doc_release(struct tp_json_doc *doc)
{
	if (!doc)
		return;
	tp_arena_release(&doc->arena);
	doc->root = NULL;
}

const struct tp_json *tp_json_get(const struct tp_json *obj, const char *key)
{
	if (!obj || obj->type != TP_JSON_OBJECT)
		return NULL;
	for (size_t k = 0; k < obj->n; k++)
		if (strcmp(obj->items[k]->key, key) == 0)
			return obj->items[k];
	return NULL;
}

const char *tp_json_type_name(enum tp_json_type t)
{
	switch (t) {
	case TP_JSON_NULL:
		return "null";
	case TP_JSON_BOOL:
		return "a boolean";
	case TP_JSON_NUMBER:
		return "a number";
	case TP_JSON_STRING:
		return "a string";
	case TP_JSON_ARRAY:
		return "an array";
	case TP_JSON_OBJECT:
		return "an object";
	}
	return "?";
}

