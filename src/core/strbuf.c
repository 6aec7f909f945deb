#include "strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tp_strbuf_init(struct tp_strbuf *sb)
{
	memset(sb, 0, sizeof(*sb));
}

void tp_strbuf_release(struct tp_strbuf *sb)
{
	free(sb->buf);
	tp_strbuf_init(sb);
}

void tp_strbuf_reset(struct tp_strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

static int grow(struct tp_strbuf *sb, size_t extra)
{
	size_t need, ncap;
	char *p;

	if (sb->failed)
		return -1;
	if (sb->len > (size_t)-1 - extra - 1)
		goto fail;
	need = sb->len + extra + 1;
	if (need <= sb->cap)
		return 0;
	ncap = sb->cap ? sb->cap : 64;
	while (ncap < need) {
		if (ncap > (size_t)-1 / 2)
			goto fail;
		ncap *= 2;
	}
	p = realloc(sb->buf, ncap);
	if (!p)
		goto fail;
	sb->buf = p;
	sb->cap = ncap;
	return 0;
fail:
	sb->failed = true;
	return -1;
}

void tp_strbuf_add(struct tp_strbuf *sb, const char *data, size_t len)
{
	if (grow(sb, len))
		return;
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
}

void tp_strbuf_adds(struct tp_strbuf *sb, const char *s)
{
	tp_strbuf_add(sb, s, strlen(s));
}

void tp_strbuf_addc(struct tp_strbuf *sb, char c)
{
	tp_strbuf_add(sb, &c, 1);
}

void tp_strbuf_vaddf(struct tp_strbuf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0 || grow(sb, (size_t)n))
		return;
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	sb->len += (size_t)n;
}

void tp_strbuf_addf(struct tp_strbuf *sb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tp_strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
}

/* word as one shell word: as it is when it holds only characters the
 * shell takes literally, else in single quotes (a ' as '\'') - a
 * --script path with a space ran as two words, one with ';' as two
 * commands; a DeepSpeed config path likewise). */
void tp_strbuf_add_shell_word(struct tp_strbuf *sb, const char *word)
{
	bool plain = *word != '\0';

	for (const char *p = word; *p && plain; p++)
		plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			(*p >= '0' && *p <= '9') || strchr("_./+-=:,@%", *p);
	if (plain) {
		tp_strbuf_adds(sb, word);
		return;
	}
	tp_strbuf_addc(sb, '\'');
	for (const char *p = word; *p; p++)
		if (*p == '\'')
			tp_strbuf_adds(sb, "'\\''");
		else
			tp_strbuf_addc(sb, *p);
	tp_strbuf_addc(sb, '\'');
}

const char *tp_strbuf_cstr(const struct tp_strbuf *sb)
{
	return sb->buf ? sb->buf : "";
}

char *tp_strbuf_detach(struct tp_strbuf *sb, size_t *len)
{
	char *p = sb->buf;

	if (!p)
		p = calloc(1, 1);
	if (len)
		*len = sb->len;
	tp_strbuf_init(sb);
	return p;
}
