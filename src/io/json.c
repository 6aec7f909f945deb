/*
 * json.c - the JSON reader: cJSON parses, this file holds it to RFC 8259
 * and to tagplan's limits, names what is wrong and where, and turns the
 * cJSON tree into the arena DOM of json.h (see json.h for the contract).
 *
 * Debian 12's cJSON (1.7.15) accepts more than strict JSON: every byte up
 * to 0x20 (NUL and control characters too) counts as whitespace; strings
 * may hold raw control characters and invalid UTF-8; a bad \u escape
 * reads as \u0000, which ends the C string; numbers are whatever strtod
 * takes of [0-9+-.eE] (01, 1., 1.e5, 1e999 = inf); duplicate keys are
 * kept.  Its parser recurses and stops at CJSON_NESTING_LIMIT (1000)
 * levels.  And when it refuses a text it says only where it stopped.  So:
 *
 *  1. scan(): one pass without recursion over the bytes, checking what
 *     cJSON lets through (strings, numbers, bytes between tokens) and the
 *     nesting depth, and noting where every token starts (line, column).
 *     It stops at the first token it finds wrong.
 *  2. cJSON_ParseWithLengthOpts on the text up to that token (all of it
 *     when none), in place: cJSON sees neither nesting over the limit nor
 *     a string or number we refuse, and checks the grammar.  When it
 *     refuses, again on a NUL-terminated copy (its length counting the
 *     NUL), whose parse end tells running out of input from a bad last
 *     byte.  What follows the document is checked here, after step 4,
 *     so that a duplicate key inside it is named first, as before.
 *  3. On any problem, the place: cJSON's parse end, or the token the scan
 *     stopped at when cJSON reached it without complaint.  A second,
 *     non-validating pass up to that place (error path only) finds the
 *     open containers and what was expected there, and name_error() says
 *     what is wrong as a person would.
 *  4. Otherwise the cJSON tree is copied into the arena in document order
 *     (positions from step 1), objects are checked for duplicate keys, and
 *     the tree is deleted.  cJSON types never leave this file.
 *
 * The checks of steps 1 and 3 share check_string() and check_number(), so
 * a string or number is judged the same way wherever it is met.
 */
#include "json.h"

#include <assert.h>
#include <ctype.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/vec.h"

/* --- problems and positions ---------------------------------------------- */

/* What is wrong (st != TP_OK) and the byte offset the message points at. */
struct problem {
	enum tp_status st;
	size_t at;
	char msg[TP_ERROR_MSG_MAX];
};

static bool vset_problem(struct problem *pr, enum tp_status st, size_t at,
			 const char *fmt, va_list ap)
{
	pr->st = st;
	pr->at = at;
	vsnprintf(pr->msg, sizeof(pr->msg), fmt, ap);
	return false;
}

/* Record the problem; false, for `return set_problem(...)` in checkers. */
__attribute__((format(printf, 4, 5))) static bool
set_problem(struct problem *pr, enum tp_status st, size_t at, const char *fmt,
	    ...)
{
	va_list ap;

	va_start(ap, fmt);
	vset_problem(pr, st, at, fmt, ap);
	va_end(ap);
	return false;
}

/* The same for bad input (TP_EINPUT). */
__attribute__((format(printf, 3, 4))) static bool
bad(struct problem *pr, size_t at, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vset_problem(pr, TP_EINPUT, at, fmt, ap);
	va_end(ap);
	return false;
}

/* 1-based line and column (in characters: UTF-8 continuation bytes do not
 * count) of offset pos, counting from base (just after a byte order mark).
 * Linear: for error messages only; the scan keeps its own count. */
static void line_col(const unsigned char *s, size_t base, size_t pos, int *line,
		     int *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = base; i < pos; i++) {
		if (s[i] == '\n') {
			++*line;
			*col = 1;
		} else if ((s[i] & 0xC0) != 0x80) {
			++*col;
		}
	}
}

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static bool is_letter(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_word(unsigned char c)
{
	return is_letter(c) || is_digit(c) || c == '_';
}

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* --- strings and numbers ---------------------------------------------- */

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
static long hex4(const unsigned char *s, size_t n, size_t i)
{
	long v = 0;

	if (n - i < 4)
		return -1;
	for (size_t k = 0; k < 4; k++) {
		int h = hexval(s[i + k]);
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

/* Code point cp as UTF-8 into b, when it fits in room bytes; its length
 * or 0. */
static size_t utf8_put(uint32_t cp, char *b, size_t room)
{
	size_t len = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
	static const unsigned char lead[] = {0, 0, 0xC0, 0xE0, 0xF0};

	if (len > room)
		return 0;
	for (size_t k = len - 1; k > 0; k--, cp >>= 6)
		b[k] = (char)(0x80 | (cp & 0x3F));
	b[0] = (char)(lead[len] | cp);
	return len;
}

/* The escape at s[i] ('\\'): its length, or 0 with the problem. */
static size_t check_escape(const unsigned char *s, size_t n, size_t i,
			   struct problem *pr)
{
	long cp, lo;

	switch (s[i + 1]) {
	case '"':
	case '\\':
	case '/':
	case 'b':
	case 'f':
	case 'n':
	case 'r':
	case 't':
		return 2;
	case 'u':
		break;
	default:
		return bad(pr, i,
			   "invalid escape in a string (valid: \\\" \\\\ \\/ "
			   "\\b \\f \\n \\r \\t \\uXXXX)");
	}
	cp = hex4(s, n, i + 2);
	if (cp < 0)
		return bad(pr, i,
			   "bad \\u escape: expected 4 hexadecimal digits");
	if (cp == 0)
		return bad(pr, i, "\\u0000 (NUL) is not allowed in strings");
	if (cp >= 0xDC00 && cp <= 0xDFFF)
		return bad(pr, i, "lone UTF-16 low surrogate \\u%04lX", cp);
	if (cp < 0xD800 || cp > 0xDBFF)
		return 6;
	if (n - i < 12 || s[i + 6] != '\\' || s[i + 7] != 'u' ||
	    (lo = hex4(s, n, i + 8)) < 0xDC00 || lo > 0xDFFF)
		return bad(pr, i,
			   "lone UTF-16 high surrogate \\u%04lX (not followed "
			   "by a low surrogate)",
			   cp);
	return 12;
}

/* The string whose '"' is at *ip: on success *ip is past its closing
 * quote and *cont has grown by its UTF-8 continuation bytes. */
static bool check_string(const unsigned char *s, size_t n, size_t *ip,
			 size_t *cont, struct problem *pr)
{
	size_t start = *ip, i = start + 1;

	for (;;) {
		unsigned char b;
		uint32_t cp;
		size_t len;

		while (i < n && s[i] >= 0x20 && s[i] < 0x80 && s[i] != '"' &&
		       s[i] != '\\')
			i++;
		if (i >= n || (s[i] == '\\' && i + 1 >= n))
			return bad(pr, start,
				   "unterminated string: no closing '\"' "
				   "before the end of the input (is the file "
				   "truncated?)");
		b = s[i];
		if (b == '"') {
			*ip = i + 1;
			return true;
		}
		if (b == '\\') {
			if (!(len = check_escape(s, n, i, pr)))
				return false;
			i += len;
			continue;
		}
		if (b == 0)
			return bad(pr, i,
				   "NUL byte in a string: this looks like a "
				   "binary file, not JSON text");
		if (b == '\n' || b == '\r')
			return bad(
			    pr, i,
			    "line break inside a string (missing closing "
			    "'\"'?  write a line break as \\n)");
		if (b < 0x20)
			return bad(pr, i,
				   "raw control character U+%04X in a string; "
				   "write it escaped as \\u%04X",
				   b, b);
		len = (size_t)utf8_seq(s, n, i, &cp);
		if (!len)
			return bad(pr, i,
				   "invalid UTF-8 byte 0x%02X in a string (the "
				   "file must be UTF-8)",
				   b);
		*cont += len - 1;
		i += len;
	}
}

/* Finite: a number whose integer part has d digits and whose exponent is
 * e >= 0 is below 10^(d+e), so only d + e > 308 can overflow a double;
 * those few go through strtod (as cJSON reads them: the C locale). */
static bool check_finite(const unsigned char *s, size_t start, size_t end,
			 struct problem *pr)
{
	size_t len = end - start;
	char small[64], *buf = small;
	double v;

	if (len >= sizeof(small) && !(buf = malloc(len + 1)))
		return set_problem(pr, TP_ENOMEM, start,
				   "out of memory reading the document");
	memcpy(buf, s + start, len);
	buf[len] = '\0';
	v = strtod(buf, NULL);
	if (buf != small)
		free(buf);
	if (isfinite(v))
		return true;
	return bad(pr, start,
		   "number %.*s%s is too large for a double (JSON numbers must "
		   "be finite)",
		   (int)(len > 40 ? 40 : len), (const char *)s + start,
		   len > 40 ? "..." : "");
}

/* The number at *ip ('-' or a digit) by RFC 8259's grammar; on success
 * *ip is past it (what follows is the grammar's business). */
static bool check_number(const unsigned char *s, size_t n, size_t *ip,
			 struct problem *pr)
{
	size_t start = *ip, i = start, digits = 0;
	long exp = 0;
	bool exp_neg = false;

	if (s[i] == '-') {
		if (++i >= n)
			return bad(pr, i,
				   "unexpected end of input after '-' (is the "
				   "file truncated?)");
		if (s[i] == 'I' || s[i] == 'N' || s[i] == 'i' || s[i] == 'n')
			return bad(
			    pr, start,
			    "-Infinity/NaN is not a JSON number: numbers "
			    "must be finite");
	}
	if (s[i] == '0') {
		i++;
		digits = 1;
		if (i < n && is_digit(s[i]))
			return bad(pr, start,
				   "leading zeros are not allowed in JSON "
				   "numbers");
	} else if (is_digit(s[i])) {
		for (; i < n && is_digit(s[i]); i++)
			digits++;
	} else {
		return bad(pr, i, "expected a digit after '-'");
	}
	if (i < n && s[i] == '.') {
		if (++i >= n || !is_digit(s[i]))
			return bad(pr, i,
				   "expected a digit after the decimal point");
		while (i < n && is_digit(s[i]))
			i++;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			exp_neg = s[i++] == '-';
		if (i >= n || !is_digit(s[i]))
			return bad(pr, i, "expected a digit in the exponent");
		for (; i < n && is_digit(s[i]); i++)
			if (exp < 100000)
				exp = exp * 10 + (s[i] - '0');
	}
	if (!exp_neg && (long)digits + exp > 308 &&
	    !check_finite(s, start, i, pr))
		return false;
	*ip = i;
	return true;
}

/* --- step 1: the scan ----------------------------------------------------- */

/* The memory bound: at most one token (value or key) per this many bytes
 * of input, beyond the first TP_JSON_TOKEN_FLOOR; a token costs about
 * TP_JSON_TOKEN_MEMORY bytes while read (cJSON's node, ours, the
 * position: `tagplan validate` of 50 MB of 5-byte tokens took 0.99 GB),
 * so memory stays within about 20 bytes per input byte whatever the
 * document. */
#define TP_JSON_BYTES_PER_TOKEN 5
#define TP_JSON_TOKEN_FLOOR ((size_t)1 << 16)
#define TP_JSON_TOKEN_MEMORY 100

struct tok_pos {
	int line, column;
};

struct scan {
	const unsigned char *s;
	size_t n, base;
	int max_depth;
	size_t max_tokens;	    /* the memory bound (tp_json_parse) */
	TP_VEC(struct tok_pos) pos; /* where each token starts, in order */
	struct problem pr;	    /* scratch for the checkers */
};

/*
 * Check what cJSON does not, in one pass: strings and numbers, bytes
 * outside strings (cJSON skips every byte up to 0x20 as whitespace) and
 * the nesting depth; record where each token (string, number, word,
 * '[' or '{') starts.  Returns the offset of the first token found wrong
 * (a control byte, a bracket over the depth limit, the start of a bad
 * string or number), or SIZE_MAX.  Bytes cJSON refuses by itself (stray
 * punctuation, non-ASCII outside strings) pass: cJSON stops there.
 * In a document cJSON accepts, the recorded tokens are exactly its values
 * and keys in document order.
 */
static size_t scan(struct scan *sc)
{
	const unsigned char *s = sc->s;
	size_t n = sc->n, i = sc->base, line_start = sc->base;
	size_t cont = 0, cont_line = 0; /* continuation bytes, at line start */
	int line = 1, depth = 0;

	while (i < n) {
		unsigned char b = s[i];
		struct tok_pos tp;
		size_t t = i;

		if (b == '\n') {
			/* pretty-printed files: the indentation in one go */
			while (++i < n && s[i] == ' ')
				;
			line++;
			line_start = t + 1;
			cont_line = cont;
			continue;
		}
		if (b == ' ' || b == '\t' || b == '\r' || b == ',' ||
		    b == ':') {
			i++;
			continue;
		}
		if (b == ']' || b == '}') {
			depth -= depth > 0;
			i++;
			continue;
		}
		if (b < 0x20)
			return i;
		if (b != '"' && b != '[' && b != '{' && b != '-' &&
		    !is_word(b)) {
			i++;
			continue;
		}
		tp.line = line;
		tp.column = (int)(i - line_start - (cont - cont_line) + 1);
		if (tp_vec_push(&sc->pos, tp)) {
			set_problem(&sc->pr, TP_ENOMEM, i,
				    "out of memory reading the document");
			return t;
		}
		if (sc->pos.n > sc->max_tokens) {
			set_problem(&sc->pr, TP_ELIMIT, i,
				    "more than one value or key per %d bytes "
				    "of input (%zu of them by here): no "
				    "tagplan file is made of so many tiny "
				    "values (a huge array of numbers?), and "
				    "reading them would take some %d bytes of "
				    "memory per byte",
				    TP_JSON_BYTES_PER_TOKEN, sc->pos.n,
				    TP_JSON_TOKEN_MEMORY /
					    TP_JSON_BYTES_PER_TOKEN);
			return t;
		}
		if (b == '"') {
			if (!check_string(s, n, &i, &cont, &sc->pr))
				return t;
		} else if (b == '[' || b == '{') {
			if (++depth > sc->max_depth)
				return t;
			i++;
		} else if (b == '-' || is_digit(b)) {
			if (!check_number(s, n, &i, &sc->pr))
				return t;
		} else {
			while (i < n && is_word(s[i]))
				i++;
		}
	}
	return SIZE_MAX;
}

/* --- step 3: naming an error ---------------------------------------------- */

enum want { W_VALUE, W_KEY, W_COLON, W_AFTER, W_DONE };

/* Where a place in the text stands: what the grammar wants there, the open
 * containers, the last token before it. */
struct ctx {
	enum want want;
	bool after_comma;
	int depth;
	unsigned char kind[TP_IO_DEPTH_CAP]; /* '{' or '[' */
	size_t open[TP_IO_DEPTH_CAP];	     /* offsets of the openers */
	size_t key;			     /* W_COLON: the key's '"' */
	size_t last;			     /* start of the last token */
	enum want want_before_last;	     /* and what was wanted there */
	bool comma_before_last;
};

/* Follow the tokens of s[base..upto) without judging them: upto is at or
 * before the first error, so what precedes it is well-formed, and its
 * nesting is within the limit.  Error path only. */
static void ctx_scan(const unsigned char *s, size_t base, size_t upto,
		     struct ctx *c)
{
	size_t i = base, cont = 0;
	struct problem scratch;

	c->want = W_VALUE;
	c->after_comma = false;
	c->depth = 0;
	c->last = SIZE_MAX;
	while (i < upto) {
		unsigned char b = s[i];
		enum want w = c->want;

		if (is_space(b)) {
			i++;
			continue;
		}
		c->last = i;
		c->want_before_last = w;
		c->comma_before_last = c->after_comma;
		c->after_comma = false;
		if (b == '{' || b == '[') {
			assert(c->depth <
			       TP_IO_DEPTH_CAP); /* the scan's limit */
			c->kind[c->depth] = b;
			c->open[c->depth++] = i++;
			c->want = b == '{' ? W_KEY : W_VALUE;
		} else if (b == '}' || b == ']') {
			c->depth -= c->depth > 0;
			c->want = W_AFTER;
			i++;
		} else if (b == ',') {
			c->after_comma = true;
			c->want = c->depth && c->kind[c->depth - 1] == '{'
				      ? W_KEY
				      : W_VALUE;
			i++;
		} else if (b == ':') {
			c->want = W_VALUE;
			i++;
		} else if (b == '"') {
			c->key = i;
			if (!check_string(s, upto, &i, &cont, &scratch))
				i = upto;
			c->want = w == W_KEY ? W_COLON : W_AFTER;
		} else {
			while (i < upto && !is_space(s[i]) &&
			       !strchr("{}[],:\"", s[i]))
				i++;
			c->want = W_AFTER;
		}
		if (c->want == W_AFTER && !c->depth)
			c->want = W_DONE;
	}
}

static void word_at(const unsigned char *s, size_t n, size_t pos, char *buf,
		    size_t size)
{
	size_t k = 0;

	while (pos + k < n && is_word(s[pos + k]) && k + 1 < size) {
		buf[k] = (char)s[pos + k];
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

/* A byte that cannot start a value (after_comma: one came just before). */
static void unexpected(const unsigned char *s, size_t n, size_t i,
		       bool after_comma, struct problem *pr)
{
	unsigned char c = s[i];
	uint32_t cp;
	char w[32];

	switch (c) {
	case 0:
		bad(pr, i,
		    "NUL byte: this looks like a binary file, not JSON text");
		return;
	case '/':
		if (i + 1 < n && (s[i + 1] == '/' || s[i + 1] == '*'))
			bad(pr, i,
			    "comments are not allowed in JSON (use a \"note\" "
			    "field instead)");
		else
			bad(pr, i, "unexpected '/'");
		return;
	case '#':
		bad(pr, i,
		    "comments are not allowed in JSON (use a \"note\" field "
		    "instead)");
		return;
	case '\'':
		bad(pr, i,
		    "strings must be in double quotes, not single quotes");
		return;
	case '+':
		bad(pr, i, "numbers may not start with '+'");
		return;
	case '.':
		bad(pr, i, "numbers need a digit before the decimal point");
		return;
	case ']':
	case '}':
		if (after_comma)
			bad(pr, i,
			    "trailing comma before '%c' (JSON does not allow "
			    "it; remove the comma)",
			    c);
		else
			bad(pr, i, "expected a value before '%c'", c);
		return;
	case ',':
		bad(pr, i, "expected a value before ','");
		return;
	case ':':
		bad(pr, i, "unexpected ':' (expected a value)");
		return;
	default:
		break;
	}
	if (is_word(c)) {
		word_at(s, n, i, w, sizeof(w));
		if (nonfinite_word(w))
			bad(pr, i,
			    "%s is not a JSON number: numbers must be finite",
			    w);
		else
			bad(pr, i,
			    "unknown word \"%s\" (JSON's literals are true, "
			    "false and null; strings need double quotes)",
			    w);
	} else if (c >= 0x80) {
		if (!utf8_seq(s, n, i, &cp))
			bad(pr, i,
			    "invalid UTF-8 byte 0x%02X (the file must be UTF-8 "
			    "JSON text; is it binary?)",
			    c);
		else
			bad(pr, i, "unexpected character U+%04X", (unsigned)cp);
	} else if (c < 0x20 || c == 0x7F) {
		bad(pr, i,
		    "unexpected control character U+%04X (is this a binary "
		    "file?)",
		    c);
	} else {
		bad(pr, i, "unexpected character '%c'", c);
	}
}

/* true, false or null at s[i]: named when it is not exactly that. */
static bool check_literal(const unsigned char *s, size_t n, size_t i,
			  struct problem *pr)
{
	const char *lit = s[i] == 't' ? "true" : s[i] == 'f' ? "false" : "null";
	size_t len = strlen(lit);
	char w[32];

	if (n - i >= len && memcmp(s + i, lit, len) == 0 &&
	    (n - i == len || !is_word(s[i + len])))
		return true;
	if (n - i < len && memcmp(s + i, lit, n - i) == 0)
		return bad(pr, i,
			   "unexpected end of input inside \"%s\" (is the file "
			   "truncated?)",
			   lit);
	word_at(s, n, i, w, sizeof(w));
	return bad(pr, i,
		   "unknown word \"%s\" (JSON's literals are true, false and "
		   "null; strings need double quotes)",
		   w);
}

/* What is wrong with a value that starts at s[i] (want W_VALUE); false
 * when nothing is. */
static bool value_error(const unsigned char *s, size_t n, size_t i,
			const struct ctx *c, int max_depth, struct problem *pr)
{
	size_t j = i, cont = 0;

	switch (s[i]) {
	case '{':
	case '[':
		if (c->depth < max_depth)
			return false;
		set_problem(pr, TP_ELIMIT, i,
			    "nesting deeper than %d levels (the limit; tagplan "
			    "files need far fewer)",
			    max_depth);
		return true;
	case '"':
		return !check_string(s, n, &j, &cont, pr);
	case 't':
	case 'f':
	case 'n':
		return !check_literal(s, n, i, pr);
	default:
		if (s[i] == '-' || is_digit(s[i]))
			return !check_number(s, n, &j, pr);
		unexpected(s, n, i, c->after_comma, pr);
		return true;
	}
}

/* Where an object member or array element should end. */
static void after_error(const unsigned char *s, size_t n, size_t i,
			const struct ctx *c, struct problem *pr)
{
	bool obj = c->kind[c->depth - 1] == '{';
	char closer = obj ? '}' : ']';
	unsigned char b = s[i];

	if (b == '/' || b == '#' || b == 0 || b >= 0x80)
		unexpected(s, n, i, false, pr);
	else if (obj && b == '"')
		bad(pr, i,
		    "expected ',' or '}' after an object member (missing "
		    "comma?)");
	else if (!obj &&
		 (b == '"' || b == '{' || b == '[' || b == '-' || is_word(b)))
		bad(pr, i,
		    "expected ',' or ']' after an array element (missing "
		    "comma?)");
	else
		bad(pr, i, "expected ',' or '%c', found '%c'", closer,
		    b >= 0x20 && b < 0x7F ? b : '?');
}

/* The first size - 1 bytes of the decoded string whose '"' is at s[q]
 * (well-formed: the scan checked it), for a message. */
static void decode_key(const unsigned char *s, size_t n, size_t q, char *buf,
		       size_t size)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	size_t i = q + 1, k = 0;

	while (i < n && s[i] != '"' && k + 1 < size) {
		long cp, lo;
		if (s[i] != '\\') {
			buf[k++] = (char)s[i++];
			continue;
		}
		if (s[i + 1] != 'u') {
			buf[k++] = to[strchr(from, s[i + 1]) - from];
			i += 2;
			continue;
		}
		cp = hex4(s, n, i + 2);
		i += 6;
		if (cp >= 0xD800 && cp <= 0xDBFF) {
			lo = hex4(s, n, i + 2);
			cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
			i += 6;
		}
		k += utf8_put((uint32_t)cp, buf + k, size - 1 - k);
	}
	buf[k] = '\0';
}

/*
 * Name the error at offset i of s[0..n) (n: the end of the input), where
 * c says what the grammar wants.  false when nothing is wrong there
 * (which cJSON's refusal then means: out of memory).
 */
static bool name_error(const unsigned char *s, size_t n, size_t base, size_t i,
		       const struct ctx *c, int max_depth, struct problem *pr)
{
	unsigned char b;
	int line, col;

	if (i >= n) {
		if (!c->depth)
			return c->want != W_DONE &&
			       !bad(pr, n,
				    "empty input: expected a JSON document");
		line_col(s, base, c->open[c->depth - 1], &line, &col);
		bad(pr, n,
		    "unexpected end of input: the %s opened at line %d, column "
		    "%d is not closed (is the file truncated?)",
		    c->kind[c->depth - 1] == '{' ? "object" : "array", line,
		    col);
		return true;
	}
	b = s[i];
	switch (c->want) {
	case W_VALUE:
		return value_error(s, n, i, c, max_depth, pr);
	case W_KEY:
		if (b == '"') {
			size_t j = i, cont = 0;
			return !check_string(s, n, &j, &cont, pr);
		}
		if ((b == '}' && c->after_comma) || b == '\'' || b == '/' ||
		    b == '#' || b == 0 || b >= 0x80)
			unexpected(s, n, i, b == '}', pr);
		else
			bad(pr, i, "expected a key in double quotes");
		return true;
	case W_COLON: {
		char key[512];
		decode_key(s, n, c->key, key, sizeof(key));
		bad(pr, i, "expected ':' after the key \"%.100s\"", key);
		return true;
	}
	case W_AFTER:
		if (b == ',' || b == (c->kind[c->depth - 1] == '{' ? '}' : ']'))
			return false;
		after_error(s, n, i, c, pr);
		return true;
	case W_DONE:
		if (b == 0)
			bad(pr, i,
			    "NUL byte after the JSON document: this looks like "
			    "a binary file");
		else
			bad(pr, i,
			    "trailing data after the JSON document (a file "
			    "holds "
			    "exactly one document)");
		return true;
	}
	return false;
}

/*
 * cJSON stopped at offset o: the place of the error.  Its parse end is
 * that place but in two cases: a key it could not read is reported one
 * byte late (parse_string steps over the byte it refuses), and a word
 * that begins like a literal ("truex", "nul1") is reported where the
 * literal ends, where we name the whole word.
 */
static size_t error_place(const unsigned char *s, size_t n, size_t base,
			  size_t o, struct ctx *c)
{
	size_t w;

	ctx_scan(s, base, o, c);
	if (o > base && c->last == o - 1 && c->want_before_last == W_KEY &&
	    s[o - 1] != '"' && (s[o - 1] != '}' || c->comma_before_last))
		return o - 1; /* ('}' closing "{}" is fine) */
	if (o > base && o < n && is_word(s[o]) && is_word(s[o - 1])) {
		for (w = o - 1; w > base && is_word(s[w - 1]); w--)
			;
		if (is_letter(s[w]))
			return w;
	}
	return o;
}

/* --- step 4: the DOM --------------------------------------------------------
 */

struct conv {
	struct tp_arena *arena;
	const struct tok_pos *pos;
	size_t npos, next;
	const char *name;
	struct tp_error *err;
};

static enum tp_status nomem(const char *name, struct tp_error *err)
{
	tp_error_set(err, TP_ENOMEM, "out of memory reading the document");
	tp_error_set_file(err, name);
	return TP_ENOMEM;
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

/* The second occurrence of a key that comes first in the file. */
static enum tp_status check_duplicates(struct conv *cv,
				       const struct tp_json *obj)
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
			return nomem(cv->name, cv->err);
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
	tp_error_set_at(cv->err, TP_EINPUT, dup->key_line, dup->key_column,
			"duplicate key \"%.200s\" in one object (first at line "
			"%d, column %d); keys must be unique",
			dup->key, first->key_line, first->key_column);
	tp_error_set_file(cv->err, cv->name);
	return TP_EINPUT;
}

static const struct tok_pos *next_pos(struct conv *cv)
{
	/* the scan saw every token cJSON built, in the same order */
	assert(cv->next < cv->npos);
	return &cv->pos[cv->next++];
}

static char *arena_copy(struct tp_arena *a, const char *s, size_t len)
{
	char *d = tp_arena_alloc(a, len + 1);

	if (d)
		memcpy(d, s, len + 1);
	return d;
}

/*
 * Copy the cJSON value c (with its key when member) into the arena, in
 * document order.  An object's keys are checked once its members are in,
 * innermost first, as a reader checks them at '}'.  The recursion is as
 * deep as the document, which the scan kept within the depth limit.
 */
static enum tp_status convert(struct conv *cv, cJSON *c, bool member,
			      struct tp_json **out)
{
	struct tp_json *v = tp_arena_alloc(cv->arena, sizeof(*v));
	const struct tok_pos *p;
	enum tp_status st;
	size_t k = 0;

	if (!v)
		return nomem(cv->name, cv->err);
	*out = v;
	if (member) {
		p = next_pos(cv);
		v->key_line = p->line;
		v->key_column = p->column;
		if (!(v->key =
			  arena_copy(cv->arena, c->string, strlen(c->string))))
			return nomem(cv->name, cv->err);
	}
	p = next_pos(cv);
	v->line = p->line;
	v->column = p->column;
	switch (c->type & 0xFF) {
	case cJSON_NULL:
		v->type = TP_JSON_NULL;
		return TP_OK;
	case cJSON_False:
	case cJSON_True:
		v->type = TP_JSON_BOOL;
		v->b = (c->type & 0xFF) == cJSON_True;
		return TP_OK;
	case cJSON_Number:
		v->type = TP_JSON_NUMBER;
		v->num = c->valuedouble;
		return TP_OK;
	case cJSON_String:
		v->type = TP_JSON_STRING;
		v->str_len = strlen(c->valuestring);
		if (!(v->str =
			  arena_copy(cv->arena, c->valuestring, v->str_len)))
			return nomem(cv->name, cv->err);
		return TP_OK;
	case cJSON_Array:
	case cJSON_Object:
		break;
	default:
		assert(!"cJSON built a value of no JSON type");
	}
	v->type =
	    (c->type & 0xFF) == cJSON_Array ? TP_JSON_ARRAY : TP_JSON_OBJECT;
	for (const cJSON *e = c->child; e; e = e->next)
		v->n++;
	if (!v->n)
		return TP_OK;
	v->items = tp_arena_array(cv->arena, v->n, sizeof(*v->items));
	if (!v->items)
		return nomem(cv->name, cv->err);
	/* each member is freed once copied, while it is still in cache; on
	 * failure the rest stays linked for the caller's cJSON_Delete */
	while (c->child) {
		cJSON *e = c->child;
		st = convert(cv, e, v->type == TP_JSON_OBJECT, &v->items[k++]);
		if (st)
			return st;
		c->child = e->next;
		e->next = NULL;
		cJSON_Delete(e);
	}
	return v->type == TP_JSON_OBJECT ? check_duplicates(cv, v) : TP_OK;
}

/* --- the reader ---------------------------------------------------------- */

static bool starts(const unsigned char *s, size_t n, const char *p)
{
	size_t l = strlen(p);
	return n >= l && memcmp(s, p, l) == 0;
}

/* p occurs in s[0..n) (memmem is GNU's). */
static bool holds(const unsigned char *s, size_t n, const char *p)
{
	for (size_t i = 0; i < n; i++)
		if (starts(s + i, n - i, p))
			return true;
	return false;
}

/* s[0..n) has a line that is a TOML table header: "[name]". */
static bool toml_table(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i + 2 < n; i++) {
		size_t k = i + 2;

		if (s[i] != '\n' || s[i + 1] != '[')
			continue;
		while (k < n && (isalnum(s[k]) || s[k] == '_' || s[k] == '.'))
			k++;
		if (k > i + 2 && k + 1 < n && s[k] == ']' && s[k + 1] == '\n')
			return true;
	}
	return false;
}

/* What a file that is no JSON from its first byte is, when it is one of
 * tagplan's own other outputs or inputs (given where a JSON file goes:
 * "-p plan.svg", "-m megatron.args"), and what to do with it; NULL when
 * it is none of them.  s[0..n) starts at the first non-space byte. */
static const char *own_text(const unsigned char *s, size_t n)
{
	const unsigned char *nl = memchr(s, '\n', n);
	size_t first = nl ? (size_t)(nl - s) : n;

	/* JSON with an error of its own */
	if (s[0] == '{' || s[0] == '[' || s[0] == '"')
		return NULL;
	if (starts(s, n, "\x89PNG") || starts(s, n, "%PDF"))
		return "a picture (tagplan render writes them), not JSON";
	if (starts(s, n, "<?xml") || starts(s, n, "<svg"))
		return "an SVG picture (tagplan render, plan --svg), not JSON";
	if (starts(s, n, "digraph") || starts(s, n, "graph ") ||
	    starts(s, n, "strict "))
		return "Graphviz DOT (tagplan render, plan --dot), not JSON";
	if (starts(s, n, "TPGNNW"))
		return "GNN weights (tagplan train), not JSON: give them to "
		       "plan --weights";
	if (starts(s, n, "TPGNNCK"))
		return "a training checkpoint (tagplan train --checkpoint), "
		       "not JSON: give it to tagplan train --resume";
	if (starts(s, n, "torchrun") || starts(s, n, "#!"))
		return "a shell script (tagplan export --to torchrun writes "
		       "one), not JSON: run it with sh";
	if (starts(s, n, "--"))
		return "command-line arguments (tagplan export --to megatron "
		       "writes them), not JSON: give them to pretrain_gpt.py";
	if (holds(s, first, "GPU0") && holds(s, first, "GPU1"))
		return "the output of nvidia-smi topo -m, not JSON: tagplan "
		       "topo --from-nvidia-smi FILE --gpu TYPE builds a "
		       "topology from it";
	if (s[0] == '#' && toml_table(s, n))
		return "TOML (tagplan export --to torchtitan writes a "
		       "TorchTitan job config), not JSON";
	return NULL;
}

static enum tp_status report(const char *name, const unsigned char *s,
			     size_t n, size_t base, const struct problem *pr,
			     struct tp_error *err)
{
	int line, col;
	size_t i = base;
	const char *what;

	line_col(s, base, pr->at, &line, &col);
	while (i < n && is_space(s[i]))
		i++;
	/* an error on the first line of something else than JSON: what it
	   is says more than the syntax error */
	what = pr->st == TP_EINPUT && i < n && pr->at >= i &&
		       !memchr(s + i, '\n', pr->at - i)
		   ? own_text(s + i, n - i < 65536 ? n - i : 65536)
		   : NULL;
	if (what)
		tp_error_set_at(err, pr->st, line, col, "this is %s", what);
	else
		tp_error_set_at(err, pr->st, line, col, "%s", pr->msg);
	tp_error_set_file(err, name);
	return pr->st;
}

/* Step 2: cJSON on s[base..end).  On success *root is the tree and *at
 * where the document ends; else *at is where cJSON stopped. */
static enum tp_status parse_prefix(const char *name, const unsigned char *s,
				   size_t base, size_t end, cJSON **root,
				   size_t *at, struct tp_error *err)
{
	const char *text = (const char *)s + base, *stop = NULL;
	char *copy;

	/* In place first: cJSON reads nothing past its length and, without
	 * require_null_terminated, needs no NUL to accept a document. */
	*root = cJSON_ParseWithLengthOpts(text, end - base, &stop, 0);
	if (*root) {
		*at = base + (size_t)(stop - text);
		return TP_OK;
	}
	/* Refused: again with a NUL at the end of the length, as cJSON
	 * wants it, so that its parse end is `end` exactly when it ran out
	 * of input (else it is clamped to the last byte, which may be the
	 * error). */
	if (!(copy = malloc(end - base + 1)))
		return nomem(name, err);
	memcpy(copy, text, end - base);
	copy[end - base] = '\0';
	*root = cJSON_ParseWithLengthOpts(copy, end - base + 1, &stop, 0);
	*at = base + (size_t)(stop - copy);
	free(copy);
	return TP_OK;
}

/* Step 3: the syntax error where cJSON stopped, or at offset at after a
 * complete document. */
static enum tp_status syntax_error(const char *name, const unsigned char *s,
				   size_t n, size_t base, size_t at,
				   int max_depth, struct tp_error *err)
{
	struct ctx *c = malloc(sizeof(*c));
	struct problem pr;

	if (!c)
		return nomem(name, err);
	at = error_place(s, n, base, at, c);
	ctx_scan(s, base, at, c);
	memset(&pr, 0, sizeof(pr));
	if (!name_error(s, n, base, at, c, max_depth, &pr))
		set_problem(&pr, TP_ENOMEM, at,
			    "out of memory reading the document");
	free(c);
	return report(name, s, n, base, &pr, err);
}

enum tp_status tp_json_parse(const char *name, const char *text, size_t len,
			     size_t max_bytes, int max_depth,
			     struct tp_json_doc *doc, struct tp_error *err)
{
	const unsigned char *s = (const unsigned char *)text;
	struct scan sc;
	struct conv cv;
	cJSON *root = NULL;
	size_t base = 0, i, end, at = 0;
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
	if (len >= 3 && s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF)
		base = 3; /* UTF-8 byte order mark */
	for (i = base; i < len && is_space(s[i]); i++)
		;
	if (i == len) {
		struct problem pr;
		bad(&pr, len, "empty input: expected a JSON document");
		return report(name, s, len, base, &pr, err);
	}
	memset(&sc, 0, sizeof(sc));
	sc.s = s;
	sc.n = len;
	sc.base = base;
	sc.max_depth = max_depth;
	/* memory bounded per input byte: each value or key costs some
	 * TP_JSON_TOKEN_MEMORY bytes (cJSON's node, ours, its position);
	 * tagplan's files have one per 8 bytes or more (minified, measured
	 * on data/ and tests/data), a 200 MB array of "1," one per 2 bytes
	 * (9.8 GB of memory) */
	sc.max_tokens = len / TP_JSON_BYTES_PER_TOKEN + TP_JSON_TOKEN_FLOOR;
	end = scan(&sc);
	if (end != SIZE_MAX &&
	    (sc.pr.st == TP_ENOMEM || sc.pr.st == TP_ELIMIT)) {
		tp_vec_free(&sc.pos);
		return report(name, s, len, base, &sc.pr, err);
	}
	if (end == SIZE_MAX)
		end = len;
	st = parse_prefix(name, s, base, end, &root, &at, err);
	if (!st && !root)
		st = syntax_error(name, s, len, base, at, max_depth, err);
	if (!st) {
		/* duplicate keys come before what follows the document */
		cv.arena = &doc->arena;
		cv.pos = sc.pos.v;
		cv.npos = sc.pos.n;
		cv.next = 0;
		cv.name = name;
		cv.err = err;
		st = convert(&cv, root, false, &doc->root);
		while (at < end && is_space(s[at]))
			at++;
		if (!st && at < len)
			st = syntax_error(name, s, len, base, at, max_depth,
					  err);
		assert(st || cv.next == cv.npos);
	}
	cJSON_Delete(root);
	tp_vec_free(&sc.pos);
	if (st)
		tp_json_doc_release(doc);
	return st;
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
