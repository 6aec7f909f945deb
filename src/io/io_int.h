/*
 * io_int.h - private to src/io/: helpers shared by the loaders (device
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

/* The physical range of a real-valued architecture field, as an HF
 * config gives it (build_hf.c tp_hf_num) and as a model file's "arch"
 * records it (model_io.c, where 0 is also taken: unknown); the table,
 * with the reason for each bound, is in build_hf.c.  The fields tagplan
 * records but does not price are exported as they are (Megatron's
 * --rotary-base and --norm-epsilon, TorchTitan's rope_theta), so
 * nonsense such as 1e300, a zero epsilon or a negative base is refused
 * where it is read. */
enum tp_hf_range {
	TP_HF_DROPOUT,	    /* a probability: 0 <= p <= 1 */
	TP_HF_EPS,	    /* a norm epsilon: 0 < eps < 1 */
	TP_HF_ROPE_BASE,    /* RoPE's base (theta): 0 < b <= 1e12 */
	TP_HF_ROPE_FACTOR,  /* RoPE's scaling factor: 0 < f <= 1e6 */
	TP_HF_SOFTCAP,	    /* a logit soft-cap: 0 < c <= 1e6 */
	TP_HF_ROUTER_SCALE, /* routed experts' output scale: 0 < s <= 1e6 */
	TP_HF_RANGE_COUNT
};

/* Is x inside range r? */
bool tp_hf_in_range(enum tp_hf_range r, double x);
/* "a number above 0 and at most 1e+12 (RoPE's base frequency, usually
 * 10000 to 1e7)" into buf: what the range expects, for errors. */
void tp_hf_range_text(enum tp_hf_range r, char *buf, size_t size);

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

/* The .json files of the folder dir (not hidden ones, sorted), the first
 * three as "a.json, b.json, c.json" in names; returns how many there are
 * (0 when none, or dir cannot be read). */
int tp_io_json_names(const char *dir, char *names, size_t size);

/* Append to sb up to max names from names[0..n) that are close to s:
 * same normalised prefix, or a small edit distance.  Returns how many. */
int tp_io_suggest(const char *s, const char *const *names, size_t n, int max,
		  struct tp_strbuf *sb);

/* An error from a core call (message in j->err): TP_EINPUT moves to the
 * jctx path (plus ".key"); other statuses only get the file name. */
enum tp_status tp_io_wrap(struct tp_jctx *j, const char *key,
			  enum tp_status st);

/* Read and parse the JSON file path into doc (sailor.c); errors name
 * the file. */
enum tp_status tp_sailor_read_json(const char *path, struct tp_json_doc *doc,
				   struct tp_error *err);

/* Sailor's layer of each op of m (sailor.c): 0 before the first block,
 * block + 1, L + 1 after the last; m->ops.n + 1 entries, caller frees;
 * NULL when out of memory. */
int32_t *tp_sailor_layer_map(const struct tp_model *m, int64_t L);

/* Parse text and check the "format" (the shared prologue). */
enum tp_status tp_io_parse(const char *name, const char *text, size_t len,
			   const struct tp_load_options *o, const char *format,
			   struct tp_json_doc *doc, struct tp_jctx *j,
			   struct tp_error *err);

/*
 * Physical ranges (ranges.c; README section 5): every quantity of the
 * formats is refused outside [min, max] (0 is allowed where the field's
 * sign rule allows it: "none").  tp_io_get_quantity is tp_jget_number
 * plus that check; the error names the field, the range, its unit and
 * why the bound is where it is.
 */
enum tp_io_quantity {
	TP_IOQ_FLOP_PER_SAMPLE,
	TP_IOQ_OP_BYTES,
	TP_IOQ_SAMPLE_BYTES,
	TP_IOQ_OP_SECONDS,
	TP_IOQ_PROFILE_BATCH,
	TP_IOQ_BANDWIDTH,
	TP_IOQ_LATENCY,
	TP_IOQ_DEVICE_MEMORY,
	TP_IOQ_MEMORY_BANDWIDTH,
	TP_IOQ_DEVICE_FLOPS,
	TP_IOQ_GEMM_HALF_FLOP,
	TP_IOQ_KERNEL_OVERHEAD,
	TP_IOQ_RESERVED_BYTES,
	TP_IOQ_OVERSUBSCRIPTION,
	TP_IOQ_PLAN_BYTES,
	TP_IOQ_RUN_SECONDS,
	TP_IOQ_RUN_TFLOPS,
	TP_IOQ_RUN_SAMPLES_PER_S,
	TP_IOQ_COUNT
};

struct tp_io_range {
	double min, max;
	const char *unit; /* "FLOP", "bytes", "B/s", "s", "" */
	const char *why;  /* how far the bound is from real figures */
};

/* The global batch, samples: 2^28, as `tagplan model --batch`. */
#define TP_IO_MAX_GLOBAL_BATCH ((int64_t)1 << 28)
/* Tokens per sample: 2^26, as `tagplan model --seq`. */
#define TP_IO_MAX_SEQUENCE ((int64_t)1 << 26)

const struct tp_io_range *tp_io_range_of(enum tp_io_quantity q);
bool tp_io_in_range(enum tp_io_quantity q, double v);
enum tp_status tp_io_get_quantity(struct tp_jctx *j, const struct tp_json *obj,
				  const char *key, bool required,
				  enum tp_jnum rng, enum tp_io_quantity q,
				  double def, double *out);
/* The check alone, for a value read some other way (at jctx + key). */
enum tp_status tp_io_check_quantity(struct tp_jctx *j, const char *key,
				    enum tp_io_quantity q, double v);
/* tp_jget_string for a name (nonempty unless def is ""; at most max_len
 * bytes) refusing control characters. */
enum tp_status tp_io_get_name(struct tp_jctx *j, const struct tp_json *obj,
			      const char *key, bool required, size_t max_len,
			      const char *def, const char **out);
/* What a builder made, against the same ranges (TP_EINPUT naming the op
 * and the figure). */
/* A report's or plan summary's "basis" (core/report.h struct
 * tp_report_basis): write it as obj's key "basis" (nothing when
 * b->runtime is ""); read the optional key "basis" of obj. */
struct tp_jw;
void tp_io_write_basis(struct tp_jw *jw, const struct tp_report_basis *b);
enum tp_status tp_io_read_basis(struct tp_jctx *j, const struct tp_json *obj,
				struct tp_report_basis *b);

/* plan_summary_io.c: a plan summary's "runtime_fit" (nothing when it has
 * none) and its objective (summary.search "objective" and
 * "max_iter_time_s", written only for the cost objective; read: absent =
 * throughput). */
struct tp_plan_summary;
void tp_io_write_fit(struct tp_jw *jw, const struct tp_plan_summary *s);
void tp_io_write_objective(struct tp_jw *jw,
			   const struct tp_plan_summary *s);
enum tp_status tp_io_read_objective(struct tp_jctx *j,
				    const struct tp_json *search,
				    struct tp_plan_summary *sum);

enum tp_status tp_io_model_check_ranges(const struct tp_model *m,
					struct tp_error *err);

#endif
