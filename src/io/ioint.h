/*
 * ioint.h - private to src/io/: helpers shared by the loaders (device
 * types, name suggestions, the parse-then-check prologue).
 */
#ifndef TP_IO_INT_H
#define TP_IO_INT_H

#include "io.h"
#include "json.h"

/*
 * Read a device-type object v (at the jctx's current path) into *t.
 * inline_type: a topology's own type (may have "base", must not reuse a
 * preset name); else a data/devices.json entry.  Strings in *t point into
 * the JSON document or c's arena: copy with tp_cluster_add_type.
 */
enum tp_status tp_io_read_device_type(struct tp_jctx *j,
				      const struct tp_json *v,
				      const struct tp_cluster *c,
				      bool inline_type,
				      struct tp_device_type *t);

/* Resolve a device type name; on failure fail at the jctx path (plus
 * ".key") with suggestions and the list of known types. */
enum tp_status tp_io_find_type(struct tp_jctx *j, const char *key,
			       const struct tp_cluster *c, const char *name,
			       uint32_t *index);

/* Fail at the jctx path (plus ".key") for an op name m does not have,
 * suggesting the closest. */
enum tp_status tp_io_model_unknown_op(struct tp_jctx *j, const char *key,
				      const struct tp_model *m,
				      const char *name);

/* Append to sb up to max names from names[0..n) that are close to s:
 * same normalised prefix, or a small edit distance.  Returns how many. */
int tp_io_suggest(const char *s, const char *const *names, size_t n, int max,
		  struct tp_strbuf *sb);

/* An error from a core call (message in j->err): TP_EINPUT moves to the
 * jctx path (plus ".key"); other statuses only get the file name. */
enum tp_status tp_io_wrap(struct tp_jctx *j, const char *key,
			  enum tp_status st);

/* Parse text and check the "format" (the shared prologue). */
enum tp_status tp_io_parse(const char *name, const char *text, size_t len,
			   const struct tp_load_options *o, const char *format,
			   struct tp_json_doc *doc, struct tp_jctx *j,
			   struct tp_error *err);

#endif
