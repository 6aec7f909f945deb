/*
 * file.c - reading and atomically writing files, the data directory,
 * format detection and the loaders' shared prologue.
 */
#define _GNU_SOURCE /* O_TMPFILE, linkat */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/strmap.h"
#include "core/vec.h"
#include "ioint.h"

#ifndef TP_DATADIR
#define TP_DATADIR "/usr/local/share/tagplan"
#endif

void tp_load_options_default(struct tp_load_options *o)
{
	memset(o, 0, sizeof(*o));
	o->max_bytes = TP_IO_DEFAULT_MAX_BYTES;
	o->max_depth = TP_IO_DEFAULT_MAX_DEPTH;
}

static enum tp_status io_fail(struct tp_error *err, const char *path,
			      const char *what, int e)
{
	tp_error_set(err, TP_EIO, "%s: %s", what, strerror(e));
	tp_error_set_file(err, path);
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

enum tp_status tp_file_read(const char *path, size_t max_bytes, char **data,
			    size_t *len, struct tp_error *err)
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
	if (fd < 0)
		return io_fail(err, path, "cannot open", errno);
	if (fstat(fd, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			if (!is_stdin)
				close(fd);
			tp_error_set(err, TP_EIO, "is a directory, not a file");
			tp_error_set_file(err, path);
			return TP_EIO;
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

/*
 * Write data through an O_TMPFILE file in the directory of path, then
 * link it under the name tmp (a mkstemp pattern, its X's replaced) and
 * rename it over path.  Returns 0 when done; -1 with *e == 0 when the
 * file system cannot do it (the caller falls back to mkstemp); -1 with
 * *e set on a real failure (nothing is left behind).
 */
static int write_unnamed(const char *path, char *tmp, const char *data,
			 size_t len, mode_t mode, int *e)
{
#ifdef O_TMPFILE
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX], proc[64];
	size_t dlen = slash ? (size_t)(slash - path) : 0;
	char *x = tmp + strlen(tmp) - 6;
	int fd;

	*e = 0;
	if (dlen >= sizeof(dir))
		return -1;
	if (slash) {
		memcpy(dir, path, dlen ? dlen : 1);
		dir[dlen ? dlen : 1] = '\0';
	} else {
		strcpy(dir, ".");
	}
	fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
	if (fd < 0)
		return -1; /* not supported here: fall back */
	if (fchmod(fd, mode) || write_all(fd, data, len) || fsync(fd)) {
		*e = errno;
		close(fd);
		return -1;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	for (unsigned k = 0;; k++) {
		snprintf(x, 7, "%06x", (unsigned)(getpid() * 31u + k) & 0xffffffu);
		if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) ==
		    0)
			break;
		if (errno != EEXIST || k > 1000) {
			/* no /proc, say: let the fallback try */
			*e = errno == EEXIST ? EEXIST : 0;
			close(fd);
			return -1;
		}
	}
	if (close(fd) || rename(tmp, path)) {
		*e = errno;
		unlink(tmp);
		return -1;
	}
	return 0;
#else
	(void)path;
	(void)tmp;
	(void)data;
	(void)len;
	(void)mode;
	*e = 0;
	return -1;
#endif
}

enum tp_status tp_file_write_atomic(const char *path, const char *data,
				    size_t len, struct tp_error *err)
{
	char *tmp;
	size_t plen = strlen(path);
	int fd, e;
	struct stat st;
	mode_t mode, mask;

	if (strcmp(path, "-") == 0) {
		if (fwrite(data, 1, len, stdout) != len || fflush(stdout))
			return io_fail(err, "<stdout>", "cannot write", errno);
		return TP_OK;
	}
	if (plen == 0) {
		tp_error_set(err, TP_EIO, "empty output file name");
		return TP_EIO;
	}
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		tp_error_set(err, TP_EIO, "is a directory, not a file");
		tp_error_set_file(err, path);
		return TP_EIO;
	}
	tmp = malloc(plen + 16);
	if (!tmp)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	/* a hidden temporary beside the target: rename stays in one file
	 * system */
	{
		const char *slash = strrchr(path, '/');
		size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
		memcpy(tmp, path, dirlen);
		snprintf(tmp + dirlen, plen + 16 - dirlen, ".%s.XXXXXX",
			 path + dirlen);
	}
	/* the permissions a plain fopen would give, or the old file's */
	if (stat(path, &st) == 0) {
		mode = st.st_mode & 07777;
	} else {
		mask = umask(0);
		umask(mask);
		mode = 0666 & ~mask;
	}
	/* Linux: write an unnamed file and give it a name only once it is
	 * complete, so a run killed while writing leaves nothing behind */
	if (write_unnamed(path, tmp, data, len, mode, &e) == 0) {
		free(tmp);
		return TP_OK;
	} else if (e) {
		free(tmp);
		return io_fail(err, path, "cannot write", e);
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		e = errno;
		free(tmp);
		return io_fail(err, path, "cannot create a temporary file", e);
	}
	if (fchmod(fd, mode) || write_all(fd, data, len) || fsync(fd)) {
		e = errno;
		close(fd);
		unlink(tmp);
		free(tmp);
		return io_fail(err, path, "cannot write", e);
	}
	if (close(fd) || rename(tmp, path)) {
		e = errno;
		unlink(tmp);
		free(tmp);
		return io_fail(err, path, "cannot write", e);
	}
	free(tmp);
	return TP_OK;
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
		st =
		    tp_jctx_fail(&j, NULL,
				 "missing required field \"format\" (one of "
				 "\"tagplan-model/1\", \"tagplan-topology/1\", "
				 "\"tagplan-plan/1\", \"tagplan-report/1\")");
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
		for (int k = TP_FORMAT_MODEL; k <= TP_FORMAT_DEVICES; k++) {
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

int tp_io_suggest(const char *s, const char *const *names, size_t n, int max,
		  struct tp_strbuf *sb)
{
	char ns[64], nn[64], pre[64];
	size_t ls, cap, *score;
	int found = 0;

	normalise(s, ns, sizeof(ns));
	ls = strlen(ns);
	cap = ls / 3 + 1;
	score = tp_calloc(n + 1, sizeof(*score));
	if (!score)
		return 0;
	/* 0: same normalised prefix up to one edit ("A10O" -> "A100-...");
	 * 1 + d: whole-name edit distance d within cap; else no match */
	for (size_t i = 0; i < n; i++) {
		size_t lp, d;
		normalise(names[i], nn, sizeof(nn));
		lp = strlen(nn) < ls ? strlen(nn) : ls;
		memcpy(pre, nn, lp);
		pre[lp] = '\0';
		d = tp_edit_distance(ns, nn, cap);
		if (d <= cap)
			score[i] = 1 + d;
		else if (ls >= 2 && lp == ls &&
			 tp_edit_distance(ns, pre, 1) <= 1)
			score[i] = 2 + cap;
		else
			score[i] = (size_t)-1;
	}
	for (size_t want = 1; found < max && want <= 2 + cap; want++)
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
