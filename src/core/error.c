#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void tp_error_clear(struct tp_error *err)
{
	if (!err)
		return;
	memset(err, 0, sizeof(*err));
}

static void vset(struct tp_error *err, enum tp_status st, const char *fmt,
		 va_list ap)
{
	err->status = st;
	err->sys_errno = 0;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

enum tp_status tp_error_set(struct tp_error *err, enum tp_status st,
			    const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return st;
	va_start(ap, fmt);
	vset(err, st, fmt, ap);
	va_end(ap);
	return st;
}

enum tp_status tp_error_set_path(struct tp_error *err, enum tp_status st,
				 const char *path, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return st;
	snprintf(err->path, sizeof(err->path), "%s", path ? path : "");
	va_start(ap, fmt);
	vset(err, st, fmt, ap);
	va_end(ap);
	return st;
}

enum tp_status tp_error_set_at(struct tp_error *err, enum tp_status st,
			       int line, int column, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return st;
	err->line = line;
	err->column = column;
	va_start(ap, fmt);
	vset(err, st, fmt, ap);
	va_end(ap);
	return st;
}

void tp_error_set_file(struct tp_error *err, const char *file)
{
	if (!err || !file || err->file[0])
		return;
	snprintf(err->file, sizeof(err->file), "%s", file);
}

char *tp_error_format(const struct tp_error *err, char *buf, size_t size)
{
	const char *file = err->file[0] ? err->file : NULL;

	if (file && err->line > 0)
		snprintf(buf, size, "%s:%d:%d: %s", file, err->line,
			 err->column, err->msg);
	else if (err->line > 0)
		snprintf(buf, size, "%d:%d: %s", err->line, err->column,
			 err->msg);
	else if (file && err->path[0])
		snprintf(buf, size, "%s: %s: %s", file, err->path, err->msg);
	else if (err->path[0])
		snprintf(buf, size, "%s: %s", err->path, err->msg);
	else if (file)
		snprintf(buf, size, "%s: %s", file, err->msg);
	else
		snprintf(buf, size, "%s", err->msg);
	return buf;
}

int tp_status_exit_code(enum tp_status st)
{
	switch (st) {
	case TP_OK:
		return 0;
	case TP_EINFEASIBLE:
		return 1;
	case TP_EINPUT:
	case TP_EUSAGE:
	case TP_ELIMIT:
		return 2;
	case TP_EINTERRUPTED:
		return 130;
	case TP_EIO:
	case TP_ENOMEM:
	case TP_EINTERNAL:
		return 3;
	}
	return 3;
}

const char *tp_status_name(enum tp_status st)
{
	switch (st) {
	case TP_OK:
		return "ok";
	case TP_EINPUT:
		return "bad input";
	case TP_EUSAGE:
		return "bad usage";
	case TP_EINFEASIBLE:
		return "infeasible";
	case TP_EIO:
		return "I/O error";
	case TP_ENOMEM:
		return "out of memory";
	case TP_ELIMIT:
		return "over a limit";
	case TP_EINTERNAL:
		return "internal error";
	case TP_EINTERRUPTED:
		return "interrupted";
	}
	return "unknown";
}
