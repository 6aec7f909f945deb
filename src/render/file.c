/*
 * file.c - tp_render_plan_file: render into a file, atomically, with the
 * DOT fallback (see render.h).  Apart from render.c so that users of the
 * in-memory functions do not pull in the file writer.
 */
#include <stdio.h>
#include <string.h>

#include "io/io.h"
#include "render.h"

void tp_render_file_init(struct tp_render_file *f, const char *path,
			 int format)
{
	memset(f, 0, sizeof(*f));
	f->path = path;
	f->format = format;
	tp_strbuf_init(&f->data);
}

void tp_render_file_release(struct tp_render_file *f)
{
	tp_strbuf_release(&f->data);
}

enum tp_status tp_render_plan_prepare(const struct tp_render_input *in,
				      const struct tp_render_options *o,
				      struct tp_render_file *f,
				      struct tp_strbuf *warning,
				      struct tp_error *err)
{
	enum tp_render_format produced;
	enum tp_status st;
	const char *fname = f->path;
	int format = f->format;

	if (strcmp(fname, "-") == 0) {
		if (format < 0)
			format = TP_RENDER_DOT;
	} else if (format < 0) {
		format = tp_render_format_from_path(fname);
		if (format < 0)
			return tp_error_set(err, TP_EUSAGE,
					    "%s: cannot tell the picture format "
					    "from the name; use .dot, .svg, "
					    ".png or .pdf (or --format)",
					    fname);
	}
	tp_strbuf_reset(&f->data);
	st = tp_render_plan(in, o, (enum tp_render_format)format, &f->data,
			    &produced, warning, err);
	if (st != TP_OK)
		return st;
	if (f->data.failed)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	snprintf(f->target, sizeof(f->target), "%s", fname);
	if ((int)produced != format && strcmp(fname, "-") != 0) {
		const char *dot = strrchr(fname, '.'), *slash = strrchr(fname, '/');
		size_t stem = (dot && (!slash || dot > slash)) ? (size_t)(dot - fname)
							       : strlen(fname);
		if (stem + 5 > sizeof(f->target))
			return tp_error_set(err, TP_EUSAGE, "%s: name too long",
					    fname);
		memcpy(f->target, fname, stem);
		memcpy(f->target + stem, ".dot", 5);
		if (warning)
			tp_strbuf_addf(warning, " (written to %s)", f->target);
	}
	return TP_OK;
}

enum tp_status tp_render_plan_file(const struct tp_render_input *in,
				   const struct tp_render_options *o,
				   const char *fname, int format,
				   char *written, size_t written_size,
				   struct tp_strbuf *warning,
				   struct tp_error *err)
{
	struct tp_render_file f;
	enum tp_status st;

	tp_render_file_init(&f, fname, format);
	st = tp_render_plan_prepare(in, o, &f, warning, err);
	if (st == TP_OK)
		st = tp_file_write_atomic(f.target, f.data.buf ? f.data.buf : "",
					  f.data.len, err);
	if (st == TP_OK && written && written_size)
		snprintf(written, written_size, "%s", f.target);
	tp_render_file_release(&f);
	return st;
}
