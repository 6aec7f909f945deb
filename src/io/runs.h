/*
 * runs.h - measured training runs (the calibration and fidelity data):
 * published or the user's own iteration times of a model with a strategy
 * on a cluster, read from JSON.
 *
 * Two layouts are read (tagplan-formats(5), MEASURED RUNS):
 *  - a run list {"rows": [{id, source, model: {zoo, batch, dtype} |
 *    {gpt: {hidden, layers, heads, seq, vocab, batch[, ffn, kv_heads]},
 *    dtype}, topology (a file, relative to the run list's folder),
 *    strategy, measured_iteration_s | measured_samples_per_s
 *    [, runtime, attention_kernel, memory_format,
 *    measured_peak_memory_bytes]}]} (data/validation/
 *    measured_runs.json);
 *  - Megatron-LM SC21 Table 1 ({"common": {...}, "rows": [{hidden_size,
 *    num_layers, attention_heads, tensor_parallel, pipeline_parallel,
 *    data_parallel_derived, num_gpus, global_batch_size,
 *    achieved_tflops_per_gpu}]}), whose micro-batch sizes are not
 *    published: such a run's strategy leaves mb and the schedule open
 *    (sweep) for the evaluator to choose as the paper's authors did.
 * Every run ends up as an iteration time in seconds.
 *
 * Ownership: a struct tp_mruns owns its rows (tp_mruns_release).  Errors:
 * TP_EINPUT with the file and JSON path, TP_EIO when unreadable.
 */
#ifndef TP_IO_RUNS_H
#define TP_IO_RUNS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"
#include "core/model.h"
#include "core/vec.h"
#include "io.h"

struct tp_mrun {
	char id[96];
	char source[96]; /* the first word of the source: its group */
	bool zoo;	 /* a zoo model (else a GPT by dimensions) */
	char zoo_name[64];
	int64_t hidden, layers, heads, seq, vocab, batch, ffn, kv_heads;
	enum tp_dtype dtype;
	char topology[1024]; /* a file path (resolved against the list's
				folder), or "" with topo_spec */
	char topo_spec[64];  /* a tagplan topo spec ("dgx-a100:4") */
	char network[32];    /* its network ("ib-hdr") */
	char strategy[256];
	bool sweep;		    /* mb and interleaving not published */
	char runtime[64];	    /* "" = the caller's default */
	int attention_kernel;	    /* the kernel the run's attention ran
				       (enum tp_attn_kernel, core/
				       runtime.h) when it is not the
				       runtime's; 0 = the runtime's */
	int memory_format;	    /* the convolutions' memory format
				       when it is not the runtime's: 0 =
				       the runtime's, 1 = nhwc, 2 = nchw */
	double measured_s;	    /* iteration seconds */
	double measured_peak_bytes; /* 0 = not published */
	int64_t gpus;
	/* where a run of the list form was measured, for the errors about
	 * its figure (calib.h tp_calib_check_rate): the list's name and the
	 * JSON path of its measured_iteration_s or measured_samples_per_s;
	 * "" for Table 1's rows (checked against common.peak_tflops where
	 * they are read) */
	char file[TP_ERROR_FILE_MAX];
	char measured_path[64];
};

struct tp_mruns {
	TP_VEC(struct tp_mrun) rows;
};

void tp_mruns_init(struct tp_mruns *r);
void tp_mruns_release(struct tp_mruns *r);

/* Append the runs of file path (either layout) to r; Table 1's rows run
 * under "megatron-lm-2021" (the stack of that paper).  tp_mruns_load
 * reads text, resolving topology files against dir. */
enum tp_status tp_mruns_load_file(const char *path,
				  const struct tp_load_options *o,
				  struct tp_mruns *r, struct tp_error *err);
enum tp_status tp_mruns_load(const char *name, const char *dir,
			     const char *text, size_t len,
			     const struct tp_load_options *o,
			     struct tp_mruns *r, struct tp_error *err);

/* text is a JSON object with a "rows" array and no "format": one of the
 * two layouts above, for tagplan validate to tell from tagplan's own
 * formats (which every other file has).  False on a syntax error. */
bool tp_mruns_is_list(const char *text, size_t len);

#endif
