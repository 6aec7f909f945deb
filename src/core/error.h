/*
 * error.h - status codes and the error record every library call fills.
 *
 * Library functions return an enum tp_status and, on failure, fill a
 * caller-supplied struct tp_error: a message, the file it concerns, a JSON
 * path ("$.ops[3].name") and/or a line and column.  The library never prints
 * and never exits; src/cli/ turns a status into an exit code
 * (tp_status_exit_code) and prints the record (tp_error_format).
 *
 * Ownership: struct tp_error is plain storage (fixed-size buffers), nothing
 * to free.  Passing err == NULL to any function means "do not record".
 */
#ifndef TP_ERROR_H
#define TP_ERROR_H

#include <stddef.h>

enum tp_status {
	TP_OK = 0,
	TP_EINPUT,    /* bad input file or value: exit 2 */
	TP_EUSAGE,    /* bad command-line usage: exit 2 */
	TP_EINFEASIBLE, /* a check failed / nothing fits: exit 1 */
	TP_EIO,       /* reading or writing failed: exit 3 */
	TP_ENOMEM,    /* allocation failed or a size overflowed: exit 3 */
	TP_ELIMIT,    /* input over a documented limit: exit 2 */
	TP_EINTERNAL, /* a bug or an unimplemented path: exit 3 */
	TP_EINTERRUPTED /* SIGINT/SIGTERM: exit 130 */
};

#define TP_ERROR_MSG_MAX 1024
#define TP_ERROR_PATH_MAX 256
#define TP_ERROR_FILE_MAX 256

struct tp_error {
	enum tp_status status;
	char file[TP_ERROR_FILE_MAX]; /* "" when not about a file */
	char path[TP_ERROR_PATH_MAX]; /* JSON path, "" when none */
	int line, column;             /* 1-based; 0 when unknown */
	int sys_errno;                /* TP_EIO: the errno of the failed
					 system call (ENOENT: no such
					 file), 0 when none; every
					 tp_error_set* resets it */
	char msg[TP_ERROR_MSG_MAX];
};

/* Reset to "no error". */
void tp_error_clear(struct tp_error *err);

/*
 * Record a failure and return st, so callers can write
 *   return tp_error_set(err, TP_EINPUT, "expected %s", "a number");
 * Leaves file/path/line untouched (set them with the helpers below).
 */
enum tp_status tp_error_set(struct tp_error *err, enum tp_status st,
			    const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Like tp_error_set, also recording a JSON path. */
enum tp_status tp_error_set_path(struct tp_error *err, enum tp_status st,
				 const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Like tp_error_set, also recording a line and column (1-based). */
enum tp_status tp_error_set_at(struct tp_error *err, enum tp_status st,
			       int line, int column, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Set the file name the error concerns (if not already set). */
void tp_error_set_file(struct tp_error *err, const char *file);

/*
 * Format as one line into buf:
 *   "file:line:column: message"   when a line is known,
 *   "file: $.path: message"       when a JSON path is known,
 *   "file: message" or "message"  otherwise.
 * Returns buf.
 */
char *tp_error_format(const struct tp_error *err, char *buf, size_t size);

/* Exit code of the command line for a status (0, 1, 2, 3 or 130); the
 * command line maps a TP_EIO of a path that does not exist to 2 as well
 * (src/cli tp_cli_exit_code). */
int tp_status_exit_code(enum tp_status st);

/* Short name of a status, e.g. "bad input". */
const char *tp_status_name(enum tp_status st);

#endif
