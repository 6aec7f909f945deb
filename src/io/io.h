/*
 * io.h - files <-> IR: strict JSON reading with precise error locations,
 * loaders and writers for the four tagplan formats, atomic output, and the
 * data directory.
 *
 * Formats (version 1, documented in man/tagplan-formats.5 and as JSON
 * Schema in data/schema/): "tagplan-model/1", "tagplan-topology/1",
 * "tagplan-plan/1", "tagplan-report/1".  Every document carries "format".
 *
 * Errors: syntax errors fill err->line/column ("file:line:column: msg");
 * semantic errors fill err->path ("$.ops[3].kind") and say what was
 * expected; err->file is the file name given.  Unknown fields are
 * warnings (appended, one per line, to opts->warnings when non-NULL), and
 * errors under opts->strict.  Nothing is left half-loaded: on failure the
 * output IR is released and re-initialised.
 *
 * Ownership: loaders fill caller-initialised IR structs (tp_model_init,
 * ...); writers append to a caller's strbuf.  No cJSON type appears here.
 */
#ifndef TP_IO_H
#define TP_IO_H

#include <stdbool.h>
#include <stddef.h>

#include "core/cluster.h"
#include "core/error.h"
#include "core/model.h"
#include "core/plan.h"
#include "core/report.h"
#include "core/strbuf.h"
#include "core/vec.h"

#define TP_IO_DEFAULT_MAX_BYTES ((size_t)1 << 30) /* 1 GiB */
#define TP_IO_DEFAULT_MAX_DEPTH 64

struct tp_load_options {
	bool strict;		    /* unknown fields are errors */
	size_t max_bytes;	    /* file size limit; 0 = default */
	int max_depth;		    /* nesting limit; 0 = default */
	struct tp_strbuf *warnings; /* NULL: warnings are dropped */
};

void tp_load_options_default(struct tp_load_options *o);

/* The kind of document a file holds, from its "format" field. */
enum tp_format_kind {
	TP_FORMAT_UNKNOWN,
	TP_FORMAT_MODEL,
	TP_FORMAT_TOPOLOGY,
	TP_FORMAT_PLAN,
	TP_FORMAT_REPORT,
	TP_FORMAT_DEVICES, /* "tagplan-devices/1": data/devices.json */
	TP_FORMAT_RUNTIME  /* "tagplan-runtime/1": data/runtimes/NAME.json
			      and the user's profiles (--runtime FILE) */
};

/* "model", "topology", "plan", "report" ("unknown" otherwise). */
const char *tp_format_kind_name(enum tp_format_kind k);
/* The "format" string of a kind ("tagplan-model/1"), "?" for UNKNOWN. */
const char *tp_format_string(enum tp_format_kind k);
/* The kind a "format" string names, TP_FORMAT_UNKNOWN if none. */
enum tp_format_kind tp_format_parse(const char *s);

/* A cheap guess of a document's kind: the value of the first "format"
 * key within its first 64 KiB, without validating anything (the loaders
 * still check the document strictly).  TP_FORMAT_UNKNOWN when there is no
 * recognisable "format"; then tp_format_detect gives the reason. */
enum tp_format_kind tp_format_sniff(const char *text, size_t len);

/* Runtime profiles (core/runtime.h, tagplan-runtime/1).  tp_runtime_find
 * takes a name (data/runtimes/NAME.json; "none" is the unconstrained
 * runtime, tp_runtime_none) or the path of a profile; an unknown name is
 * TP_EUSAGE listing the shipped ones.  Errors of the file: TP_EINPUT
 * with its JSON path, TP_EIO. */
struct tp_runtime;
enum tp_status tp_runtime_load(const char *name, const char *text, size_t len,
			       const struct tp_load_options *o,
			       struct tp_runtime *rt, struct tp_error *err);
enum tp_status tp_runtime_load_file(const char *path, struct tp_runtime *rt,
				    struct tp_error *err);
enum tp_status tp_runtime_find(const char *name, struct tp_runtime *rt,
			       struct tp_error *err);
/* tp_runtime_find, and when name is the path of a file (not a shipped
 * profile's name nor "none") the SHA-256 of its bytes in sha (64 hex
 * digits; "" for a shipped name or "none").  tagplan plan records it so
 * that simulate and check of the plan find the same profile. */
enum tp_status tp_runtime_find_file(const char *name, struct tp_runtime *rt,
				    char sha[65], struct tp_error *err);
/* The file tp_runtime_find reads for name (not "none"): a shipped
 * profile's path, or name itself when it is a path.  TP_EUSAGE as
 * tp_runtime_find for an unknown name. */
enum tp_status tp_runtime_path(const char *name, char *path, size_t size,
			       struct tp_error *err);
/* The profile of file base_path (a tagplan-runtime/1 file, already
 * loaded once) with name and description (NULL: kept) replaced and the
 * calibration cal written before its sources (a "calibration" it had is
 * replaced), pretty-printed into out.  Errors: TP_EIO, TP_EINPUT of the
 * file. */
struct tp_runtime_calibration;
struct tp_strbuf;
enum tp_status tp_runtime_write_calibrated(const char *base_path,
					   const char *name,
					   const char *description,
					   const struct tp_runtime_calibration
						   *cal,
					   struct tp_strbuf *out,
					   struct tp_error *err);
/* The shipped profiles' names (data/runtimes/NAME.json, without "none"),
 * sorted, at most max of them; returns how many (0 when the data folder
 * is not found). */
size_t tp_runtime_shipped(char (*names)[64], size_t max);

/* Read a whole file ("-" is stdin) refusing more than max_bytes (0 =
 * default).  *data is NUL-terminated, caller frees.  TP_EIO/TP_ELIMIT. */
enum tp_status tp_file_read(const char *path, size_t max_bytes, char **data,
			    size_t *len, struct tp_error *err);

/* Names (of models, ops, nodes, ...): the 1-based byte offset of the
 * first control character of s (U+0000..U+001F, U+007F, U+0080..U+009F;
 * *code its code point), 0 when there is none.  The loaders refuse names
 * with one (they are shown on terminals). */
size_t tp_io_name_bad_char(const char *s, unsigned *code);
/* Max name length (bytes) of models, ops, nodes, devices, types: what the
 * loaders accept, so what a command may write. */
#define TP_IO_NAME_MAX 255

/* tp_file_read for text (JSON, nvidia-smi matrices): from a stream (a
 * device, a FIFO, a pipe) a NUL byte ends the read with TP_EINPUT, so an
 * input that never ends (/dev/zero) is refused at once, not after
 * max_bytes.  Regular files read as with tp_file_read (the parser
 * locates their NUL bytes). */
enum tp_status tp_file_read_text(const char *path, size_t max_bytes,
				 char **data, size_t *len,
				 struct tp_error *err);

/* True when path names an existing regular file (after links): one that
 * can be read twice and ends ("-", devices and FIFOs are not). */
bool tp_file_is_regular(const char *path);

/*
 * Write data to path ("-" is stdout).  A regular file or a new path is
 * replaced atomically: a temporary in the same directory, fsync, rename;
 * a failure leaves any existing file untouched.  A symbolic link is
 * followed and its target written (atomically, beside the target).
 * Character devices (/dev/null), FIFOs, /dev/stdout, /dev/stderr,
 * /dev/fd/N and /proc/self/fd/N are written in place, never replaced.
 * Directories are TP_EIO; block devices, sockets and "" TP_EUSAGE.
 * Otherwise TP_EIO naming the path.
 */
enum tp_status tp_file_write_atomic(const char *path, const char *data,
				    size_t len, struct tp_error *err);

/* One output of a command (borrowed pointers). */
struct tp_output {
	const char *path;
	const char *data;
	size_t len;
};

/*
 * Write all n outputs of one command, each as tp_file_write_atomic
 * would, together or not at all: every target is resolved first (a bad
 * one, or two outputs that are one file, fails before anything is
 * written), every file is written to its temporary, then the streams
 * (stdout, devices, FIFOs) are written, and only when all of that
 * succeeded are the temporaries renamed over their targets.  A failure
 * up to there leaves every file target untouched (what a stream already
 * received cannot be taken back); only a failing rename in the last step,
 * after the others succeeded, can leave some files new and others old.
 */
enum tp_status tp_file_write_set(const struct tp_output *outs, size_t n,
				 struct tp_error *err);

/* Before any work: TP_OK when path can be written as far as can be told
 * without writing (its target resolves, its directory exists, is
 * writable and takes a new file - an unnamed one where the file system
 * has them, else a hidden one removed at once, so /proc is refused - its
 * descriptor is open); else the error writing would give (TP_EIO,
 * TP_EUSAGE), so a command fails before a long computation instead of
 * after it.  Writing may still fail (a full disk: the message says so and
 * what to do). */
enum tp_status tp_file_check_output(const char *path, struct tp_error *err);

/* Flush standard output (what commands print through stdio: validate's
 * lines, --help) and report whether all of it was written: TP_OK, else
 * TP_EIO "<stdout>: cannot write: ..." with the errno (a full disk
 * ENOSPC, a pipe whose reader exited EPIPE) and what to do. */
enum tp_status tp_file_flush_stdout(struct tp_error *err);

/* True when a and b both name one existing regular file (after links;
 * "-" never matches): an output that would overwrite an input. */
bool tp_file_same(const char *a, const char *b);

/* True when outputs a and b would be written to one place: the same file
 * (existing, or new of one name in one directory, after links) or the
 * same descriptor ("-", /dev/stdout, /dev/fd/1), where two documents
 * would run together; tp_file_write_set refuses them (TP_EUSAGE). */
bool tp_file_same_output(const char *a, const char *b);

/* Which format a document claims, after a strict parse (TP_EINPUT on
 * syntax errors or a missing/unknown "format"). */
enum tp_status tp_format_detect(const char *name, const char *text, size_t len,
				const struct tp_load_options *o,
				enum tp_format_kind *kind,
				struct tp_error *err);

/* Model: load (and tp_model_finalize) / write. */
enum tp_status tp_model_load(const char *name, const char *text, size_t len,
			     const struct tp_load_options *o,
			     struct tp_model *m, struct tp_error *err);
enum tp_status tp_model_load_file(const char *path,
				  const struct tp_load_options *o,
				  struct tp_model *m, struct tp_error *err);
void tp_model_write(const struct tp_model *m, struct tp_strbuf *out);

/*
 * Sailor (eth-easl/sailor) inputs in folder dir (sailor.c): the model
 * `name` of its configs/training_config_*.json as tagplan's GPT in fp32,
 * with the per-layer profiles of profiles/NAME/GPU/profile.json split
 * over each layer's ops (the ops of a layer sum to Sailor's time at
 * every measured point) into m (initialised here).  notes gets one line
 * per GPU used or dropped and what llm_info.json says (parameters
 * compared; its memory model dropped).  TP_EUSAGE naming the models the
 * folder has when none is `name`; TP_EIO/TP_EINPUT naming the file.
 */
enum tp_status tp_sailor_import_model(const char *dir, const char *name,
				      struct tp_model *m,
				      struct tp_strbuf *notes,
				      struct tp_error *err);

/*
 * Sailor's cluster in folder dir (sailor_cluster.c): row `row` of the trace
 * (a CSV path, or NAME for dir/configs/trace_NAME.csv) as a topology of
 * its GPUs per type, GPUs per node (configs/basic_cluster_config.json) and
 * the maxima of the bandwidth fits of providers/ (intra-node, and between
 * two nodes of a type in the zone) into c (initialised by the caller).
 * notes gets one line per GPU type used or dropped and what else was
 * dropped.  TP_EINPUT naming the file (and line:column of the trace), or
 * TP_EIO.  One zone only.
 */
enum tp_status tp_sailor_import_cluster(const char *dir, const char *trace,
					unsigned row, struct tp_cluster *c,
					struct tp_strbuf *notes,
					struct tp_error *err);

/*
 * Entry o->entry of a Sailor results file (results/CASE/PLANNER_MODEL.json:
 * SAILOR's, or its ports of Metis and AMP) as a plan of model m (from
 * tp_sailor_import_model) on cluster c (with the GPUs it names, e.g.
 * from tp_sailor_import_cluster) into p (initialised here; release it
 * after an error too): a group per stage, each replica on tp free GPUs
 * of its type on one node, replicas of different tp as a mixed group
 * (plan.h), Sailor's mbs per replica (sailor_plan.c).  notes: one line
 * per stage and the micro-batches.  TP_EINPUT naming the file.
 */
struct tp_sailor_plan_opts {
	unsigned entry;         /* of the results list */
	uint32_t micro_batches; /* 0: the translation's (sailor_plan.c) */
};
enum tp_status tp_sailor_import_plan(const char *path,
				     const struct tp_sailor_plan_opts *o,
				     const struct tp_model *m,
				     const struct tp_cluster *c,
				     struct tp_plan *p,
				     struct tp_strbuf *notes,
				     struct tp_error *err);

/* tagplan's device type for a Sailor GPU name ("A100-40" ->
 * "A100-SXM4-40GB"), or NULL. */
const char *tp_sailor_device_type(const char *gpu);

/* Topology: load (device types resolved against the built-in presets of
 * data/devices.json plus the file's own "device_types"; then
 * tp_cluster_finalize) / write. */
enum tp_status tp_topology_load(const char *name, const char *text, size_t len,
				const struct tp_load_options *o,
				struct tp_cluster *c, struct tp_error *err);
enum tp_status tp_topology_load_file(const char *path,
				     const struct tp_load_options *o,
				     struct tp_cluster *c,
				     struct tp_error *err);
void tp_topology_write(const struct tp_cluster *c, struct tp_strbuf *out);

/* The built-in device types (data/devices.json), added to c.  Idempotent
 * per cluster. */
enum tp_status tp_devices_load_builtin(struct tp_cluster *c,
				       struct tp_error *err);

/* Load a device-type list ("tagplan-devices/1", the layout of
 * data/devices.json) into c as built-in types.  On failure c is
 * unchanged (short of an allocation failure midway). */
enum tp_status tp_devices_load(const char *name, const char *text, size_t len,
			       const struct tp_load_options *o,
			       struct tp_cluster *c, struct tp_error *err);

/* Plan: ops and devices are named in the file and resolved against m and
 * c (unknown names are errors with the path); then tp_plan_validate. */
enum tp_status tp_plan_load(const char *name, const char *text, size_t len,
			    const struct tp_model *m,
			    const struct tp_cluster *c,
			    const struct tp_load_options *o, struct tp_plan *p,
			    struct tp_error *err);
enum tp_status tp_plan_load_file(const char *path, const struct tp_model *m,
				 const struct tp_cluster *c,
				 const struct tp_load_options *o,
				 struct tp_plan *p, struct tp_error *err);
/* What a plan file says, without resolving it (for `validate`/`inspect`
 * without a model and topology). */
struct tp_plan_outline_group {
	uint32_t n_op_entries; /* names and ranges as written */
	uint32_t n_ranges;
	uint32_t n_devices, dp, tp;
	uint32_t cp; /* 1 when the group gives none */
	enum tp_sync sync;
	enum tp_recompute recompute;
	bool sp;
};
struct tp_plan_outline {
	char model[256], topology[256];
	int64_t global_batch;
	uint32_t micro_batches, virtual_stages, zero;
	enum tp_schedule schedule;
	enum tp_compression compression;
	double grad_bucket_bytes; /* 0 when the plan gives none */
	char runtime[64];         /* "" when the plan names none */
	TP_VEC(struct tp_plan_outline_group) groups;
	uint32_t n_distinct_devices;
	bool has_summary;
	double iteration_time_s; /* from the summary, 0 without */
	/* the summary's provenance ("" when absent) */
	char model_file[256], topology_file[256];
	char model_sha256[65], topology_sha256[65];
	char model_path[1024], topology_path[1024];
};
void tp_plan_outline_release(struct tp_plan_outline *ol);

/* Check a plan's structure without a model or topology (names are not
 * resolved, only their syntax and the fields' types and ranges); fill
 * *ol when non-NULL (caller releases it, also on failure). */
enum tp_status tp_plan_check(const char *name, const char *text, size_t len,
			     const struct tp_load_options *o,
			     struct tp_plan_outline *ol, struct tp_error *err);
void tp_plan_write(const struct tp_plan *p, const struct tp_model *m,
		   const struct tp_cluster *c, struct tp_strbuf *out);

/* Report. */
void tp_report_write(const struct tp_report *r, const struct tp_cluster *c,
		     struct tp_strbuf *out);
enum tp_status tp_report_load(const char *name, const char *text, size_t len,
			      const struct tp_load_options *o,
			      struct tp_report *r, struct tp_error *err);

/*
 * Find a file of tagplan's data directory: $TAGPLAN_DATA, else "data"
 * next to the running binary (a build tree), else the installed
 * $(PREFIX)/share/tagplan.  Writes the full path of rel into out;
 * TP_EIO when no data directory holds it.
 */
enum tp_status tp_data_path(const char *rel, char *out, size_t size,
			    struct tp_error *err);

#endif
