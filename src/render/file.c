/*
 * file.c - tp_render_plan_file: render into a file, atomically, with the
 * DOT fallback (see render.h).  Apart from render.c so that users of the
 * in-memory functions do not pull in the file writer.
 */
#include <stdio.h>
#include <string.h>

#include "io/io.h"
#include "render.h"

enum tp_status tp_render_plan_file(const struct tp_plan *p,
				   const struct tp_model *m,
				   const struct tp_cluster *c,
				   const struct tp_report *report,
				   const struct tp_render_options *o,
				   const char *fname, int format,
				   char *written, size_t written_size,
				   struct tp_strbuf *warning,
				   struct tp_error *err)
{
	struct tp_strbuf out;
	enum tp_render_format produced;
	enum tp_status st;
	char alt[4096];
	const char *target = fname;

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
	tp_strbuf_init(&out);
	st = tp_render_plan(p, m, c, report, o, (enum tp_render_format)format,
			    &out, &produced, warning, err);
	if (st != TP_OK)
		goto done;
	if ((int)produced != format && strcmp(fname, "-") != 0) {
		const char *dot = strrchr(fname, '.'), *slash = strrchr(fname, '/');
		size_t stem = (dot && (!slash || dot > slash)) ? (size_t)(dot - fname)
							       : strlen(fname);
		if (stem + 5 > sizeof(alt)) {
			st = tp_error_set(err, TP_EUSAGE, "%s: name too long",
					  fname);
			goto done;
		}
		memcpy(alt, fname, stem);
		memcpy(alt + stem, ".dot", 5);
		target = alt;
		if (warning)
			tp_strbuf_addf(warning, " (written to %s)", alt);
	}
	st = tp_file_write_atomic(target, out.buf ? out.buf : "", out.len,
				  err);
	if (st == TP_OK && written && written_size)
		snprintf(written, written_size, "%s", target);
done:
	tp_strbuf_release(&out);
	return st;
}
