/*
 * file.c - reading and atomically writing files, the data directory,
 * format detection and the loaders' shared prologue.
 */
#define _GNU_SOURCE /* O_TMPFILE, linkat */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/strmap.h"
#include "core/vec.h"
#include "io_int.h"

#ifndef TP_DATADIR
#define TP_DATADIR "/usr/local/share/tagplan"
#endif

void tp_load_options_default(struct tp_load_options *o)
{
	memset(o, 0, sizeof(*o));
	o->max_bytes = TP_IO_DEFAULT_MAX_BYTES;
	o->max_depth = TP_IO_DEFAULT_MAX_DEPTH;
}

/* TP_EIO "what: strerror(e)" about path, e kept in err->sys_errno (the
 * command line tells a path that does not exist from a failing disk). */
static enum tp_status io_fail(struct tp_error *err, const char *path,
			      const char *what, int e)
{
	tp_error_set(err, TP_EIO, "%s: %s", what, strerror(e));
	tp_error_set_file(err, path);
	if (err)
		err->sys_errno = e;
	return TP_EIO;
}

/* TP_EIO "cannot write: strerror(e)" about path, with the fix when there
 * is one: a full or read-only file system is not a wrong name. */
static enum tp_status write_fail(struct tp_error *err, const char *path,
				 int e)
{
	const char *fix = "";

	if (e == ENOSPC || e == EDQUOT)
		fix = " (the file system or device is full: free some space, "
		      "or write the output elsewhere)";
	else if (e == EROFS)
		fix = " (the file system is read-only: write the output "
		      "elsewhere)";
	else if (e == EFBIG)
		fix = " (over the file size limit, ulimit -f, or the file "
		      "system's largest file: write the output elsewhere)";
	else if (e == EPIPE)
		fix = " (the program reading the pipe exited before the end, "
		      "as head does: the output is incomplete; let the "
		      "reader take all of it, or write to a file)";
	tp_error_set(err, TP_EIO, "cannot write: %s%s", strerror(e), fix);
	tp_error_set_file(err, path);
	if (err)
		err->sys_errno = e;
	return TP_EIO;
}

/* A directory whose mode (or read-only mount) forbids new files. */
static enum tp_status dir_not_writable(struct tp_error *err, const char *path,
				       const char *dir, int e)
{
	tp_error_set(err, TP_EIO,
		     "cannot write in the directory %s: %s (write elsewhere, "
		     "or make it writable)",
		     dir, strerror(e));
	tp_error_set_file(err, path);
	return TP_EIO;
}

/* A directory that exists, and is writable as far as access(2) tells, but
 * where no file can be created (/proc, /sys: mkstemp's ENOENT or EPERM
 * would read as a missing name, EACCES as a mode to change).  TP_EIO, exit 3 like a read-only
 * directory; sys_errno stays 0 so that ENOENT does not read as a missing
 * path. */
static enum tp_status dir_refuses_files(struct tp_error *err, const char *path,
					const char *dir, int e)
{
	tp_error_set(err, TP_EIO,
		     "cannot create a file in the directory %s (%s): it does "
		     "not accept new files; write the output elsewhere, or to "
		     "standard output with -",
		     dir, strerror(e));
	tp_error_set_file(err, path);
	return TP_EIO;
}

/* The extension of a file name (".json"), "" for none. */
static const char *ext_of(const char *name)
{
	const char *dot = strrchr(name, '.');
	return dot && dot != name ? dot : "";
}

/* The nearest name to base in the folder dir (not a hidden one), in out;
 * false when none.  Names are compared without their extension, which
 * must be base's (or ".json" when base has none), within 2 edits of the
 * stem (1 up to 4 letters); or the same stem as a .json file ("gpt2",
 * "gpt2.jsn": gpt2.json).  "llama3-8b.json" finds llama-3-8b.json,
 * "deep.json" not rep.json. */
static bool near_entry(const char *dir, const char *base, char *out,
		       size_t size)
{
	const char *bext = ext_of(base), *want = *bext ? bext : ".json";
	size_t blen = strlen(base) - strlen(bext), cap = blen > 4 ? 2 : 1,
	       bd = cap + 1;
	char bstem[256], stem[256];
	DIR *d;
	struct dirent *e;

	if (blen >= sizeof(bstem) || !(d = opendir(dir)))
		return false;
	snprintf(bstem, sizeof(bstem), "%.*s", (int)blen, base);
	while ((e = readdir(d))) {
		const char *eext = ext_of(e->d_name);
		size_t elen = strlen(e->d_name) - strlen(eext), dist;
		if (e->d_name[0] == '.' || elen >= sizeof(stem))
			continue;
		snprintf(stem, sizeof(stem), "%.*s", (int)elen, e->d_name);
		if (strcmp(eext, want) == 0)
			dist = tp_edit_distance(bstem, stem, cap);
		else if (!strcmp(eext, ".json") && !strcmp(stem, bstem))
			dist = 0; /* "gpt2.jsn": gpt2.json */
		else
			continue;
		if (dist < bd) {
			bd = dist;
			snprintf(out, size, "%s", e->d_name);
		}
	}
	closedir(d);
	return bd <= cap;
}

/* An input path that does not exist: TP_EIO with errno e (ENOENT,
 * ENOTDIR), the message naming the fix: the nearest file of its folder
 * ("did you mean data/models/llama-3-8b.json?"), or the part of the path
 * that is missing. */
static enum tp_status no_input(struct tp_error *err, const char *path, int e)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX], near[256];
	struct stat st;
	int dl = slash ? (int)(slash - path) : 0;

	io_fail(err, path, "cannot open", e);
	if (!err || strlen(path) >= sizeof(dir))
		return TP_EIO;
	if (slash)
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : dl,
			 path);
	else
		snprintf(dir, sizeof(dir), ".");
	if (stat(dir, &st) != 0)
		tp_error_set(err, TP_EIO,
			     "cannot open: %s (the folder %s does not exist)",
			     strerror(e), dir);
	else if (!S_ISDIR(st.st_mode))
		tp_error_set(err, TP_EIO,
			     "cannot open: %s (%s is a file, not a folder)",
			     strerror(e), dir);
	else if (*(slash ? slash + 1 : path) &&
		 near_entry(dir, slash ? slash + 1 : path, near, sizeof(near)))
		tp_error_set(err, TP_EIO,
			     "cannot open: %s (did you mean %.*s%s?)",
			     strerror(e), slash ? dl + 1 : 0, path, near);
	else
		return TP_EIO;
	err->sys_errno = e;
	return TP_EIO;
}

static enum tp_status too_big(struct tp_error *err, const char *path,
			      size_t max)
{
	tp_error_set(err, TP_ELIMIT,
		     "the file is larger than the size limit of %zu bytes "
		     "(raise it with --max-bytes)",
		     max);
	tp_error_set_file(err, path);
	return TP_ELIMIT;
}

static int json_entry(const struct dirent *e)
{
	size_t n = strlen(e->d_name);
	return e->d_name[0] != '.' && n > 5 &&
	       strcmp(e->d_name + n - 5, ".json") == 0;
}

int tp_io_json_names(const char *dir, char *names, size_t size)
{
	struct dirent **e = NULL;
	int n = scandir(dir, &e, json_entry, alphasort);
	size_t used = 0;

	if (size)
		names[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (i < 3 && used < size) {
			int w = snprintf(names + used, size - used, "%s%.80s",
					 i ? ", " : "", e[i]->d_name);
			if (w > 0)
				used += (size_t)w;
		}
		free(e[i]);
	}
	free(e);
	return n > 0 ? n : 0;
}

/* An input that is a directory: a usage error (exit 2, as an output that
 * is one) naming the first of its JSON files to give instead. */
static enum tp_status dir_input(struct tp_error *err, const char *path)
{
	char names[400];
	int n = tp_io_json_names(path, names, sizeof(names));
	int shown = n < 3 ? n : 3;

	if (n > shown)
		tp_error_set(err, TP_EUSAGE,
			     "is a directory, not a file: give one of its "
			     "files (%s and %d more .json)",
			     names, n - shown);
	else if (n > 0)
		tp_error_set(err, TP_EUSAGE,
			     "is a directory, not a file: give one of its "
			     "files (%s)",
			     names);
	else
		tp_error_set(err, TP_EUSAGE,
			     "is a directory, not a file: give a file (it "
			     "holds no .json file)");
	tp_error_set_file(err, path);
	return TP_EUSAGE;
}

/* text: a NUL byte in a stream (not a regular file, whose NUL bytes the
 * parser reports with their line and column) ends the read as bad input,
 * so /dev/zero is refused at its first byte, not after 1 GiB. */
static enum tp_status read_file(const char *path, size_t max_bytes,
				bool text, char **data, size_t *len,
				struct tp_error *err)
{
	bool is_stdin = strcmp(path, "-") == 0;
	int fd = is_stdin ? 0 : open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf = NULL;
	size_t n = 0, cap = 0;

	*data = NULL;
	*len = 0;
	if (!max_bytes)
		max_bytes = TP_IO_DEFAULT_MAX_BYTES;
	if (!*path)
		/* "tagplan validate "$PLAN"" with PLAN unset: the message
		   would name no file */
		return tp_error_set(err, TP_EUSAGE,
				    "an empty file name (\"\"): give the path "
				    "of a file (a shell variable that is not "
				    "set?)");
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR
			       ? no_input(err, path, errno)
			       : io_fail(err, path, "cannot open", errno);
	if (fstat(fd, &st) == 0) {
		if (S_ISREG(st.st_mode))
			text = false;
		if (S_ISDIR(st.st_mode)) {
			if (!is_stdin)
				close(fd);
			return dir_input(err, path);
		}
		if (S_ISREG(st.st_mode) && st.st_size > 0) {
			if ((unsigned long long)st.st_size > max_bytes) {
				if (!is_stdin)
					close(fd);
				return too_big(err, path, max_bytes);
			}
			cap = (size_t)st.st_size + 1;
		}
	}
	if (cap < 4096)
		cap = 4096;
	buf = malloc(cap + 1);
	if (!buf)
		goto nomem;
	for (;;) {
		ssize_t r;
		if (n == cap) {
			size_t ncap;
			char *nb;
			if (n > max_bytes)
				break;
			ncap = cap > SIZE_MAX / 4 ? SIZE_MAX / 2 : cap * 2;
			if (ncap > max_bytes + 1)
				ncap = max_bytes + 1;
			if (ncap <= cap)
				ncap = cap + 1;
			nb = realloc(buf, ncap + 1);
			if (!nb)
				goto nomem;
			buf = nb;
			cap = ncap;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0) {
			int e = errno;
			if (e == EINTR)
				continue;
			free(buf);
			if (!is_stdin)
				close(fd);
			return io_fail(err, path, "cannot read", e);
		}
		if (r == 0)
			break;
		if (text && memchr(buf + n, 0, (size_t)r)) {
			size_t at = n + (size_t)((char *)memchr(buf + n, 0,
							       (size_t)r) -
						 (buf + n));
			free(buf);
			if (!is_stdin)
				close(fd);
			tp_error_set(err, TP_EINPUT,
				     "byte %zu is a NUL byte: this is not a "
				     "text file (a device such as /dev/zero, "
				     "or binary data); give a JSON file",
				     at + 1);
			tp_error_set_file(err, path);
			return TP_EINPUT;
		}
		n += (size_t)r;
		if (n > max_bytes)
			break;
	}
	if (!is_stdin)
		close(fd);
	if (n > max_bytes) {
		free(buf);
		return too_big(err, path, max_bytes);
	}
	buf[n] = '\0';
	*data = buf;
	*len = n;
	return TP_OK;
nomem:
	free(buf);
	if (!is_stdin)
		close(fd);
	tp_error_set(err, TP_ENOMEM, "out of memory reading the file");
	tp_error_set_file(err, path);
	return TP_ENOMEM;
}

enum tp_status tp_file_read(const char *path, size_t max_bytes, char **data,
			    size_t *len, struct tp_error *err)
{
	return read_file(path, max_bytes, false, data, len, err);
}

enum tp_status tp_file_read_text(const char *path, size_t max_bytes,
				 char **data, size_t *len,
				 struct tp_error *err)
{
	return read_file(path, max_bytes, true, data, len, err);
}

bool tp_file_is_regular(const char *path)
{
	struct stat st;

	return path && strcmp(path, "-") != 0 && stat(path, &st) == 0 &&
	       S_ISREG(st.st_mode);
}

static int write_all(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t w = write(fd, data, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		data += w;
		len -= (size_t)w;
	}
	return 0;
}

/* ---- outputs ------------------------------------------------------------
 *
 * An output path is resolved before anything is written (resolve):
 *   "-", /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N   the open
 *        descriptor itself (a pipe of `>(cmd)`, the terminal, a file the
 *        shell opened), written in place;
 *   a symbolic link      followed (up to 40 links) to its target, which is
 *                        then resolved like the path itself;
 *   a character device, a FIFO   opened and written in place (no temporary,
 *                        no rename: /dev/null stays /dev/null);
 *   a regular file or a new path  replaced atomically: an unnamed
 *                        O_TMPFILE file (or a hidden ".NAME.XXXXXX" when the
 *                        file system cannot) in the target's directory,
 *                        written and fsync'd, then renamed over the target;
 *   a directory, a block device, a socket   refused.
 */

enum target_kind { T_FILE, T_FD, T_STREAM };

struct target {
	enum target_kind kind;
	const char *given;    /* the path as given (messages) */
	char path[PATH_MAX];  /* T_FILE, T_STREAM: the resolved path */
	int fd;		      /* T_FD: the descriptor */
	mode_t mode;	      /* T_FILE: permissions of the new file */
	bool exists;	      /* T_FILE: a file is there now */
	dev_t dev;	      /* T_FILE that exists: its identity */
	ino_t ino;
	int tmp_fd;	      /* prepared: an unnamed file, else -1 */
	char *tmp;	      /* prepared: the temporary's name */
	bool named;	      /* the temporary has a name on disk */
};

/* The descriptor a path names (/dev/stdout, /dev/fd/3, ...), or -1. */
static int special_fd(const char *p)
{
	const char *n = NULL;
	long v;

	if (!strcmp(p, "-") || !strcmp(p, "/dev/stdout"))
		return 1;
	if (!strcmp(p, "/dev/stderr"))
		return 2;
	if (!strncmp(p, "/dev/fd/", 8))
		n = p + 8;
	else if (!strncmp(p, "/proc/self/fd/", 14))
		n = p + 14;
	if (!n || !*n || strlen(n) > 9)
		return -1;
	for (const char *q = n; *q; q++)
		if (*q < '0' || *q > '9')
			return -1;
	v = strtol(n, NULL, 10);
	return (int)v;
}

static mode_t default_mode(void)
{
	mode_t mask = umask(0);

	umask(mask);
	return 0666 & ~mask;
}

static const char *file_type_name(mode_t m)
{
	return S_ISBLK(m)    ? "a block device"
	       : S_ISSOCK(m) ? "a socket"
	       : S_ISDIR(m)  ? "a directory"
			     : "not a regular file";
}

static enum tp_status resolve(const char *path, struct target *t,
			      struct tp_error *err)
{
	char link[PATH_MAX];
	struct stat st;

	memset(t, 0, sizeof(*t));
	t->given = path;
	t->tmp_fd = -1;
	if (!*path)
		return tp_error_set(err, TP_EUSAGE,
				    "empty output file name (give a file, or "
				    "- for standard output)");
	if (strlen(path) >= sizeof(t->path)) {
		tp_error_set(err, TP_EUSAGE, "output file name too long");
		tp_error_set_file(err, path);
		return TP_EUSAGE;
	}
	strcpy(t->path, path);
	for (int hop = 0; hop <= 40; hop++) {
		int fd = special_fd(t->path);
		ssize_t n;
		size_t dir;
		char *slash;

		if (fd >= 0) {
			t->kind = T_FD;
			t->fd = fd;
			return TP_OK;
		}
		if (lstat(t->path, &st) != 0) {
			/* a new file (a missing directory fails when the
			 * temporary is made, with its own message) */
			t->kind = T_FILE;
			t->mode = default_mode();
			return TP_OK;
		}
		if (S_ISREG(st.st_mode)) {
			t->kind = T_FILE;
			t->mode = st.st_mode & 07777;
			t->exists = true;
			t->dev = st.st_dev;
			t->ino = st.st_ino;
			return TP_OK;
		}
		if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
			t->kind = T_STREAM;
			return TP_OK;
		}
		if (!S_ISLNK(st.st_mode)) {
			/* usage, as tagplan(1) says: the name is wrong, not
			 * the disk */
			tp_error_set(err, TP_EUSAGE,
				     "is %s, not a file%s (tagplan writes "
				     "regular files, character devices such "
				     "as /dev/null, FIFOs and pipes)",
				     file_type_name(st.st_mode),
				     S_ISDIR(st.st_mode)
					     ? ": name a file inside it"
					     : "");
			tp_error_set_file(err, path);
			return TP_EUSAGE;
		}
		/* a symbolic link: write its target */
		n = readlink(t->path, link, sizeof(link) - 1);
		if (n < 0)
			return io_fail(err, path,
				       "cannot read the symbolic link", errno);
		link[n] = '\0';
		slash = strrchr(t->path, '/');
		dir = link[0] == '/' || !slash ? 0
					       : (size_t)(slash - t->path) + 1;
		if (dir + (size_t)n >= sizeof(t->path)) {
			tp_error_set(err, TP_EUSAGE,
				     "the target of the symbolic link is too "
				     "long");
			tp_error_set_file(err, path);
			return TP_EUSAGE;
		}
		memmove(t->path + dir, link, (size_t)n + 1);
	}
	return io_fail(err, path, "cannot follow the symbolic link", ELOOP);
}

/* Write data into an unnamed O_TMPFILE file in the directory of t->path.
 * Returns 0 (t->tmp_fd set); -1 with *e == 0 when the file system cannot
 * (the caller falls back to a named temporary); -1 with *e set on a real
 * failure (nothing is left behind). */
static int prepare_unnamed(struct target *t, const char *data, size_t len,
			   int *e)
{
#ifdef O_TMPFILE
	const char *slash = strrchr(t->path, '/');
	char dir[PATH_MAX];
	size_t dlen = slash ? (size_t)(slash - t->path) : 0;
	int fd;

	*e = 0;
	if (slash) {
		memcpy(dir, t->path, dlen ? dlen : 1);
		dir[dlen ? dlen : 1] = '\0';
	} else {
		strcpy(dir, ".");
	}
	/* naming it later goes through /proc (linkat) */
	if (access("/proc/self/fd", X_OK))
		return -1;
	fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, t->mode);
	if (fd < 0)
		return -1; /* not supported here: fall back */
	if (fchmod(fd, t->mode) || write_all(fd, data, len) || fsync(fd)) {
		*e = errno;
		close(fd);
		return -1;
	}
	t->tmp_fd = fd;
	return 0;
#else
	(void)t;
	(void)data;
	(void)len;
	*e = 0;
	return -1;
#endif
}

/* The directory of t->path as written ("." for none), in dir. */
static void target_dir(const struct target *t, char *dir, size_t size)
{
	const char *slash = strrchr(t->path, '/');

	if (!slash)
		snprintf(dir, size, ".");
	else if (slash == t->path)
		snprintf(dir, size, "/");
	else
		snprintf(dir, size, "%.*s", (int)(slash - t->path), t->path);
}

/* No file could be created beside t (errno e): a full or read-only file
 * system, a directory that does not accept files, else e as it is. */
static enum tp_status create_fail(struct tp_error *err,
				  const struct target *t, int e)
{
	char dir[PATH_MAX];
	struct stat st;

	if (e == ENOSPC || e == EDQUOT || e == EROFS)
		return write_fail(err, t->given, e);
	target_dir(t, dir, sizeof(dir));
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return io_fail(err, t->given, "cannot create a temporary file",
			       e);
	if (access(dir, W_OK | X_OK) != 0)
		return dir_not_writable(err, t->given, dir, errno);
	return dir_refuses_files(err, t->given, dir, e);
}

/* Whether a file can be created beside t, without leaving one: an unnamed
 * file where the file system has them, else a named one removed at once.
 * 0, or -1 with errno. */
static int probe_create(const struct target *t)
{
	char dir[PATH_MAX], name[PATH_MAX + 32];
	int fd;

	target_dir(t, dir, sizeof(dir));
#ifdef O_TMPFILE
	fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	/* EOPNOTSUPP, EISDIR, EINVAL: no unnamed files here; try a name */
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return -1;
#endif
	snprintf(name, sizeof(name), "%s/.tagplan-probe.XXXXXX", dir);
	fd = mkstemp(name);
	if (fd < 0)
		return -1;
	close(fd);
	unlink(name);
	return 0;
}

/* Give t's temporary a name beside the target (a hidden mkstemp-style
 * name): for an unnamed file through linkat.  0, or -1 with errno. */
static int name_unnamed(struct target *t)
{
	char proc[64];
	char *x = t->tmp + strlen(t->tmp) - 6;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", t->tmp_fd);
	for (unsigned k = 0;; k++) {
		snprintf(x, 7, "%06x",
			 (unsigned)(getpid() * 31u + k) & 0xffffffu);
		if (linkat(AT_FDCWD, proc, AT_FDCWD, t->tmp,
			   AT_SYMLINK_FOLLOW) == 0)
			break;
		if (errno != EEXIST || k > 1000)
			return -1;
	}
	t->named = true;
	return 0;
}

/* Write t's data to a temporary beside the target; nothing is visible at
 * the target until commit. */
static enum tp_status prepare(struct target *t, const char *data, size_t len,
			      struct tp_error *err)
{
	size_t plen = strlen(t->path);
	const char *slash = strrchr(t->path, '/');
	size_t dirlen = slash ? (size_t)(slash - t->path + 1) : 0;
	int fd, e;

	t->tmp = malloc(plen + 16);
	if (!t->tmp)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	/* a hidden temporary beside the target: rename stays in one file
	 * system */
	memcpy(t->tmp, t->path, dirlen);
	snprintf(t->tmp + dirlen, plen + 16 - dirlen, ".%s.XXXXXX",
		 t->path + dirlen);
	/* Linux: an unnamed file, named only once it is complete, so a run
	 * killed while writing leaves nothing behind */
	if (prepare_unnamed(t, data, len, &e) == 0)
		return TP_OK;
	if (e)
		return write_fail(err, t->given, e);
	fd = mkstemp(t->tmp);
	if (fd < 0) {
		e = errno;
		return create_fail(err, t, e);
	}
	t->named = true;
	if (fchmod(fd, t->mode) || write_all(fd, data, len) || fsync(fd)) {
		e = errno;
		close(fd);
		return write_fail(err, t->given, e);
	}
	if (close(fd))
		return write_fail(err, t->given, errno);
	return TP_OK;
}

/* An unnamed temporary is named and at once renamed over the target, its
 * descriptor closed only after: the named temporary a kill could leave
 * (Linux cannot link an unnamed file over an existing name) exists for
 * two system calls, and it is whole (written and fsync'd before). */
static enum tp_status commit(struct target *t, struct tp_error *err)
{
	int fd = t->tmp_fd;

	if (fd >= 0 && name_unnamed(t)) {
		int e = errno;
		return write_fail(err, t->given, e);
	}
	if (rename(t->tmp, t->path))
		return write_fail(err, t->given, errno);
	t->named = false;
	if (fd >= 0) {
		t->tmp_fd = -1;
		if (close(fd))
			return write_fail(err, t->given, errno);
	}
	return TP_OK;
}

/* Drop what prepare made (NULL-safe on unprepared targets). */
static void discard(struct target *t)
{
	if (t->tmp_fd >= 0)
		close(t->tmp_fd);
	t->tmp_fd = -1;
	if (t->named)
		unlink(t->tmp);
	t->named = false;
	free(t->tmp);
	t->tmp = NULL;
}

static enum tp_status write_stream(const struct target *t, const char *data,
				   size_t len, struct tp_error *err)
{
	int fd = t->fd, e;

	if (t->kind == T_FD) {
		if (fd == 1)
			fflush(stdout);
		if (fcntl(fd, F_GETFL) < 0)
			return io_fail(err, t->given[0] == '-' ? "<stdout>"
							       : t->given,
				       "cannot write (the descriptor is not "
				       "open)",
				       errno);
		if (write_all(fd, data, len))
			return write_fail(err,
					  fd == 1 && t->given[0] == '-'
						  ? "<stdout>"
						  : t->given,
					  errno);
		return TP_OK;
	}
	/* a character device or a FIFO: open it as it is (a FIFO waits for
	 * its reader, as a shell redirection would) */
	do
		fd = open(t->path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return io_fail(err, t->given, "cannot open", errno);
	if (write_all(fd, data, len)) {
		e = errno;
		close(fd);
		return write_fail(err, t->given, e);
	}
	if (close(fd) && errno != EINTR)
		return write_fail(err, t->given, errno);
	return TP_OK;
}

/* The directory part of a path ("." for none), resolved when it exists. */
static void dir_of(const char *path, char *out, size_t size)
{
	const char *slash = strrchr(path, '/');
	char d[PATH_MAX];

	if (!slash)
		strcpy(d, ".");
	else if (slash == path)
		strcpy(d, "/");
	else
		snprintf(d, sizeof(d), "%.*s", (int)(slash - path), path);
	if (!realpath(d, out))
		snprintf(out, size, "%s", d);
}

/* Two targets that are one file (after links). */
static bool same_target(const struct target *a, const struct target *b)
{
	char da[PATH_MAX], db[PATH_MAX];
	const char *ba, *bb;

	/* "-" and /dev/stdout: two documents run together on one stream */
	if (a->kind == T_FD && b->kind == T_FD)
		return a->fd == b->fd;
	if (a->kind != T_FILE || b->kind != T_FILE || a->exists != b->exists)
		return false;
	if (a->exists)
		return a->dev == b->dev && a->ino == b->ino;
	/* two new files: the same name in the same directory */
	ba = strrchr(a->path, '/') ? strrchr(a->path, '/') + 1 : a->path;
	bb = strrchr(b->path, '/') ? strrchr(b->path, '/') + 1 : b->path;
	if (strcmp(ba, bb))
		return false;
	dir_of(a->path, da, sizeof(da));
	dir_of(b->path, db, sizeof(db));
	return !strcmp(da, db);
}

enum tp_status tp_file_write_set(const struct tp_output *outs, size_t n,
				 struct tp_error *err)
{
	struct target *t;
	enum tp_status st = TP_OK;
	size_t k;

	if (!n)
		return TP_OK;
	t = calloc(n, sizeof(*t));
	if (!t)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	for (k = 0; k < n; k++)
		t[k].tmp_fd = -1;
	/* 1. every target resolved, none twice */
	for (k = 0; k < n && !st; k++)
		st = resolve(outs[k].path, &t[k], err);
	for (k = 0; k < n && !st; k++)
		for (size_t i = 0; i < k && !st; i++)
			if (same_target(&t[i], &t[k])) {
				st = tp_error_set(err, TP_EUSAGE,
						  "%s and %s are the same "
						  "file: give each output its "
						  "own name",
						  outs[i].path, outs[k].path);
			}
	/* 2. every file written beside its target */
	for (k = 0; k < n && !st; k++)
		if (t[k].kind == T_FILE)
			st = prepare(&t[k], outs[k].data, outs[k].len, err);
	/* 3. the streams, which cannot be taken back */
	for (k = 0; k < n && !st; k++)
		if (t[k].kind != T_FILE)
			st = write_stream(&t[k], outs[k].data, outs[k].len,
					  err);
	/* 4. every file renamed over its target */
	for (k = 0; k < n && !st; k++)
		if (t[k].kind == T_FILE)
			st = commit(&t[k], err);
	for (k = 0; k < n; k++)
		discard(&t[k]);
	free(t);
	return st;
}

enum tp_status tp_file_flush_stdout(struct tp_error *err)
{
	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return TP_OK;
	/* a failed flush sets errno; a stream that failed earlier and has
	 * nothing left to flush keeps only its error flag */
	return write_fail(err, "<stdout>", errno ? errno : EIO);
}

bool tp_file_same_output(const char *a, const char *b)
{
	struct target ta, tb;
	struct tp_error e;

	tp_error_clear(&e);
	if (!a || !b || resolve(a, &ta, &e) || resolve(b, &tb, &e))
		return false;
	return same_target(&ta, &tb);
}

enum tp_status tp_file_write_atomic(const char *path, const char *data,
				    size_t len, struct tp_error *err)
{
	struct tp_output o = {path, data, len};

	return tp_file_write_set(&o, 1, err);
}

enum tp_status tp_file_check_output(const char *path, struct tp_error *err)
{
	struct target t;
	enum tp_status st = resolve(path, &t, err);
	char dir[PATH_MAX];
	struct stat st_dir;
	int e;

	if (st)
		return st;
	if (t.kind == T_FD) {
		if (fcntl(t.fd, F_GETFL) < 0)
			return io_fail(err, path,
				       "cannot write (the descriptor is not "
				       "open)",
				       errno);
		return TP_OK;
	}
	if (t.kind == T_STREAM)
		return TP_OK;
	/* the directory the temporary goes to */
	{
		const char *slash = strrchr(t.path, '/');
		if (!slash)
			strcpy(dir, ".");
		else if (slash == t.path)
			strcpy(dir, "/");
		else
			snprintf(dir, sizeof(dir), "%.*s",
				 (int)(slash - t.path), t.path);
	}
	if (stat(dir, &st_dir) != 0 && errno == ENOENT) {
		tp_error_set(err, TP_EIO,
			     "cannot write: the directory %s does not exist "
			     "(create it first, e.g. mkdir -p %s)",
			     dir, dir);
		tp_error_set_file(err, path);
		if (err)
			err->sys_errno = ENOENT;
		return TP_EIO;
	}
	e = stat(dir, &st_dir) != 0 ? errno : 0;
	if (e && e != ENOTDIR)
		return io_fail(err, path, "cannot write", e);
	if (e == ENOTDIR || !S_ISDIR(st_dir.st_mode)) {
		/* "plan.json/x.json": name the file the path goes through */
		char *cut;
		while (stat(dir, &st_dir) != 0 && (cut = strrchr(dir, '/')) &&
		       cut > dir)
			*cut = '\0';
		tp_error_set(err, TP_EIO,
			     "cannot write: %s is a file, not a directory "
			     "(name the output in a directory)",
			     dir);
		tp_error_set_file(err, path);
		if (err)
			err->sys_errno = ENOTDIR;
		return TP_EIO;
	}
	if (access(dir, W_OK | X_OK) != 0)
		return dir_not_writable(err, path, dir, errno);
	/* writable by its mode, yet some directories take no files (/proc):
	 * say so now, not after the work */
	if (probe_create(&t) != 0)
		return create_fail(err, &t, errno);
	return TP_OK;
}

bool tp_file_same(const char *a, const char *b)
{
	struct stat sa, sb;

	if (!a || !b || !strcmp(a, "-") || !strcmp(b, "-"))
		return false;
	if (stat(a, &sa) || stat(b, &sb))
		return false;
	return S_ISREG(sa.st_mode) && S_ISREG(sb.st_mode) &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static bool readable(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, R_OK) == 0;
}

enum tp_status tp_data_path(const char *rel, char *out, size_t size,
			    struct tp_error *err)
{
	const char *env = getenv("TAGPLAN_DATA");
	char exe[PATH_MAX];
	ssize_t n;

	if (env && *env) {
		snprintf(out, size, "%s/%s", env, rel);
		if (readable(out))
			return TP_OK;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		/* a build tree: data/ beside the binary or up to three
		 * levels above it (build/NAME/tagplan); a relocated install:
		 * PREFIX/bin/tagplan with PREFIX/share/tagplan */
		for (int up = 0; up < 4; up++) {
			char *slash = strrchr(exe, '/');
			if (!slash)
				break;
			*slash = '\0';
			snprintf(out, size, "%s/data/%s", exe, rel);
			if (readable(out))
				return TP_OK;
			if (up == 1) {
				snprintf(out, size, "%s/share/tagplan/%s", exe,
					 rel);
				if (readable(out))
					return TP_OK;
			}
		}
	}
	snprintf(out, size, "%s/%s", TP_DATADIR, rel);
	if (readable(out))
		return TP_OK;
	tp_error_set(err, TP_EIO,
		     "cannot find tagplan's data file \"%s\" (looked in "
		     "$TAGPLAN_DATA, a data/ folder next to the binary and "
		     "%s); set TAGPLAN_DATA to the folder holding it",
		     rel, TP_DATADIR);
	return TP_EIO;
}

enum tp_status tp_io_parse(const char *name, const char *text, size_t len,
			   const struct tp_load_options *o, const char *format,
			   struct tp_json_doc *doc, struct tp_jctx *j,
			   struct tp_error *err)
{
	enum tp_status st;

	st = tp_json_parse(name, text, len, o ? o->max_bytes : 0,
			   o ? o->max_depth : 0, doc, err);
	if (st)
		return st;
	tp_jctx_init(j, name, o, err);
	st = tp_jctx_format(j, doc->root, format);
	if (st)
		tp_json_doc_release(doc);
	return st;
}

enum tp_status tp_format_detect(const char *name, const char *text, size_t len,
				const struct tp_load_options *o,
				enum tp_format_kind *kind, struct tp_error *err)
{
	struct tp_json_doc doc;
	struct tp_jctx j;
	const struct tp_json *f;
	enum tp_status st;

	*kind = TP_FORMAT_UNKNOWN;
	st = tp_json_parse(name, text, len, o ? o->max_bytes : 0,
			   o ? o->max_depth : 0, &doc, err);
	if (st)
		return st;
	tp_jctx_init(&j, name, o, err);
	if (doc.root->type != TP_JSON_OBJECT) {
		st = tp_jctx_fail(&j, NULL,
				  "expected a JSON object with a \"format\" "
				  "field at the top level, found %s",
				  tp_json_type_name(doc.root->type));
		goto out;
	}
	f = tp_json_get(doc.root, "format");
	if (!f) {
		st = tp_jctx_missing_format(
		    &j, doc.root,
		    "one of \"tagplan-model/1\", \"tagplan-topology/1\", "
		    "\"tagplan-plan/1\", \"tagplan-report/1\", "
		    "\"tagplan-devices/1\", \"tagplan-runtime/1\"");
		goto out;
	}
	if (f->type != TP_JSON_STRING) {
		st = tp_jctx_fail(&j, "format", "expected a string, found %s",
				  tp_json_type_name(f->type));
		goto out;
	}
	*kind = tp_format_parse(f->str);
	if (*kind == TP_FORMAT_UNKNOWN) {
		const char *slash = strchr(f->str, '/');
		size_t base = slash ? (size_t)(slash - f->str) : strlen(f->str);
		bool same_kind = false;
		for (int k = TP_FORMAT_MODEL; k <= TP_FORMAT_RUNTIME; k++) {
			const char *fs =
			    tp_format_string((enum tp_format_kind)k);
			if (strlen(fs) > base && fs[base] == '/' &&
			    strncmp(fs, f->str, base) == 0)
				same_kind = true;
		}
		if (same_kind)
			st = tp_jctx_fail(
			    &j, "format",
			    "unsupported format \"%.60s\": this "
			    "tagplan reads version 1 of each format",
			    f->str);
		else
			st = tp_jctx_fail(&j, "format",
					  "unknown format \"%.60s\"; expected "
					  "\"tagplan-model/1\", "
					  "\"tagplan-topology/1\", "
					  "\"tagplan-plan/1\" or "
					  "\"tagplan-report/1\"",
					  f->str);
	}
out:
	tp_json_doc_release(&doc);
	return st;
}

enum tp_format_kind tp_format_sniff(const char *text, size_t len)
{
	static const char key[] = "\"format\"";
	size_t n = len < 65536 ? len : 65536, i;
	const char *p = NULL;
	char val[32];
	size_t k = 0;

	for (i = 0; i + sizeof(key) - 1 <= n; i++)
		if (memcmp(text + i, key, sizeof(key) - 1) == 0) {
			p = text + i + sizeof(key) - 1;
			break;
		}
	if (!p)
		return TP_FORMAT_UNKNOWN;
	while (p < text + n &&
	       (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	if (p >= text + n || *p++ != ':')
		return TP_FORMAT_UNKNOWN;
	while (p < text + n &&
	       (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	if (p >= text + n || *p++ != '"')
		return TP_FORMAT_UNKNOWN;
	while (p < text + n && *p != '"' && k + 1 < sizeof(val))
		val[k++] = *p++;
	val[k] = '\0';
	if (p >= text + n || *p != '"')
		return TP_FORMAT_UNKNOWN;
	return tp_format_parse(val);
}

/* Lower-case letters and digits only: "A100-SXM4" -> "a100sxm4". */
static void normalise(const char *s, char *out, size_t size)
{
	size_t k = 0;

	for (; *s && k + 1 < size; s++) {
		char c = *s;
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
			out[k++] = c;
	}
	out[k] = '\0';
}

/* Every '-'-separated part of s (two or more) is a part of name, case
 * aside: "A100-80GB" in "A100-SXM4-80GB" and "A100-PCIe-80GB". */
static bool has_parts(const char *s, const char *name)
{
	int parts = 0;

	for (const char *p = s; *p;) {
		size_t l = strcspn(p, "-_ ");
		bool in = false;

		for (const char *q = name; l && *q && !in;) {
			size_t m = strcspn(q, "-_ ");
			in = m == l && !strncasecmp(p, q, l);
			q += m;
			q += strspn(q, "-_ ");
		}
		if (l && !in)
			return false;
		parts += l > 0;
		p += l;
		p += strspn(p, "-_ ");
	}
	return parts >= 2;
}

int tp_io_suggest(const char *s, const char *const *names, size_t n, int max,
		  struct tp_strbuf *sb)
{
	char ns[64], nn[64], pre[64];
	size_t ls, cap, *score;
	int found = 0;

	/* the names holding every part of s ("A100-80GB") first: an edit
	   distance took "A10-24GB" for it */
	for (size_t i = 0; i < n && found < max; i++)
		if (has_parts(s, names[i]))
			tp_strbuf_addf(sb, "%s\"%s\"", found++ ? ", " : "",
				       names[i]);
	if (found)
		return found;

	normalise(s, ns, sizeof(ns));
	ls = strlen(ns);
	cap = ls / 3 + 1;
	score = tp_calloc(n + 1, sizeof(*score));
	if (!score)
		return 0;
	/* 1 + d: whole-name edit distance d within cap; 2 + cap: the same
	 * normalised prefix ("H100" -> "H100-..."); 3 + cap: the prefix up
	 * to one edit ("A10O" -> "A100-..."), only when no name has the
	 * prefix itself ("A100" named the V100s, which come first, and not
	 * the A100s); else no match */
	for (size_t i = 0; i < n; i++) {
		size_t lp, d;
		normalise(names[i], nn, sizeof(nn));
		lp = strlen(nn) < ls ? strlen(nn) : ls;
		memcpy(pre, nn, lp);
		pre[lp] = '\0';
		d = tp_edit_distance(ns, nn, cap);
		if (d <= cap)
			score[i] = 1 + d;
		else if (ls >= 2 && lp == ls && !strcmp(ns, pre))
			score[i] = 2 + cap;
		else if (ls >= 2 && lp == ls &&
			 tp_edit_distance(ns, pre, 1) <= 1)
			score[i] = 3 + cap;
		else
			score[i] = (size_t)-1;
	}
	for (size_t i = 0; i < n; i++)
		if (score[i] == 2 + cap)
			for (size_t k = 0; k < n; k++)
				if (score[k] == 3 + cap)
					score[k] = (size_t)-1;
	for (size_t want = 1; found < max && want <= 3 + cap; want++)
		for (size_t i = 0; i < n && found < max; i++)
			if (score[i] == want) {
				tp_strbuf_addf(sb, "%s\"%s\"",
					       found ? ", " : "", names[i]);
				found++;
			}
	free(score);
	return found;
}

enum tp_status tp_io_wrap(struct tp_jctx *j, const char *key, enum tp_status st)
{
	char msg[TP_ERROR_MSG_MAX];

	if (!j->err)
		return st;
	if (st != TP_EINPUT) {
		tp_error_set_file(j->err, j->file);
		return st;
	}
	snprintf(msg, sizeof(msg), "%s", j->err->msg);
	return tp_jctx_fail(j, key, "%s", msg);
}
