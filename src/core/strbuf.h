/*
 * strbuf.h - the one string builder (after git's strbuf).
 *
 * A struct tp_strbuf is embedded by the caller: tp_strbuf_init, append,
 * tp_strbuf_release.  buf is always NUL-terminated once anything was
 * appended (tp_strbuf_cstr returns "" for an empty buffer).  On allocation
 * failure the buffer stops growing and `failed` is set; callers check it
 * once at the end instead of after every append.
 */
#ifndef TP_STRBUF_H
#define TP_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

struct tp_strbuf {
	char *buf;
	size_t len, cap;
	bool failed;
};

void tp_strbuf_init(struct tp_strbuf *sb);
void tp_strbuf_release(struct tp_strbuf *sb);
void tp_strbuf_reset(struct tp_strbuf *sb); /* len = 0, keeps memory */
void tp_strbuf_add(struct tp_strbuf *sb, const char *data, size_t len);
void tp_strbuf_adds(struct tp_strbuf *sb, const char *s);
void tp_strbuf_addc(struct tp_strbuf *sb, char c);
void tp_strbuf_addf(struct tp_strbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void tp_strbuf_vaddf(struct tp_strbuf *sb, const char *fmt, va_list ap);
/* word as one shell word: as it is when it holds only letters, digits
 * and _./+-=:,@%, else in single quotes (a ' as '\''), so a line built
 * of such words pastes into a shell as those words (export's launch
 * lines, the command lines a usage error gives). */
void tp_strbuf_add_shell_word(struct tp_strbuf *sb, const char *word);
const char *tp_strbuf_cstr(const struct tp_strbuf *sb);
/* Hand the buffer to the caller (who frees it); sb is reset to empty. */
char *tp_strbuf_detach(struct tp_strbuf *sb, size_t *len);

#endif
