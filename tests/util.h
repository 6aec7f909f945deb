/*
 * util.h - shared helpers for the Check tests.
 *
 * Command tests run the tagplan binary named by $TAGPLAN_BIN (the Makefile
 * sets it, and TAGPLAN_DATA / TAGPLAN_TESTS to the data and tests folders).
 */
#ifndef TP_TESTS_UTIL_H
#define TP_TESTS_UTIL_H

#include <stdint.h>

#include "core/cluster.h"
#include "core/model.h"

#include <stddef.h>

struct tp_run {
	int status; /* exit code, or 128 + signal */
	char *out;  /* captured stdout, NUL-terminated (caller frees) */
	char *err;  /* captured stderr */
	size_t out_len, err_len;
};

/* Run $TAGPLAN_BIN with argv (NULL-terminated, argv[0] is ignored),
 * feeding stdin_data (may be NULL) and capturing stdout and stderr. */
void tp_run_tagplan(struct tp_run *r, const char *const *argv,
		    const char *stdin_data);
void tp_run_free(struct tp_run *r);

/* Run argv (tp_run_tagplan, no stdin); its exit status must be `status`,
 * its stderr contain want (and not unwanted, unless NULL), its stdout be
 * empty: a command's error as a user meets it. */
void tp_test_expect(const char *const *argv, int status, const char *want,
		    const char *unwanted);

/* Path of a file under tests/ or data/ (static buffer rotation of 8). */
const char *tp_test_path(const char *rel);
const char *tp_data_file(const char *rel);
/* A fresh temporary directory for this test (removed by the OS /tmp
 * policy; tests do not rely on cleanup). */
const char *tp_test_tmpdir(void);

/* Read a whole file; NULL when it cannot be read.  Caller frees. */
char *tp_test_read(const char *path, size_t *len);
/* s with every run of white space (wrapped lines and their indent
 * included) made one space, in place, for matching a summary's phrases;
 * returns s. */
char *tp_test_squeeze(char *s);

/* The small GPT the action-space tests plan ("gpt-12": hidden 1024, 12
 * layers, 16 heads, sequence 1024, vocabulary 32000, batch 64, bf16) on
 * the nodes of specs (tagplan topo's PRESET:NODES, ib-hdr between them);
 * m and c are initialised here, TAGPLAN_DATA set to the shipped data. */
void tp_test_gpt12(struct tp_model *m, struct tp_cluster *c,
		   const char *const *specs, int n_specs);
/* Write a whole file; 0 on success. */
int tp_test_write(const char *path, const char *data, size_t len);

/* tp_cluster_route into a rotating static buffer (8 deep), so a test can
 * hold a few routes at once: tp_test_route(c, a, b)->bw_Bps. */
const struct tp_route *tp_test_route(const struct tp_cluster *c, uint32_t a,
				     uint32_t b);

/* A device type with round numbers: fp32 10 TFLOP/s, fp16 and bf16 100
 * TFLOP/s, 80 GB, 1 TB/s, a flat GEMM curve at exactly peak, no kernel
 * overhead or reserve, so a test's hand figures need no device model. */
struct tp_device_type tp_test_toy_type(const char *name);

/* c as one finalised node "node0" of `gpus` devices of type t on an
 * NVSwitch of 100 GB/s per device, no NICs, no latency. */
void tp_test_toy_node(struct tp_cluster *c, const struct tp_device_type *t,
		      uint32_t gpus);

/* A chain of n matmuls, one per layer, named op0, op1, ...: `flop`
 * forward FLOP per sample each (backward 2x), `pbytes` parameter bytes,
 * `saved` bytes kept per sample for the backward, `out` output bytes per
 * sample, `edge` bytes per sample on each edge; Adam; finalised. */
struct tp_test_chain {
	uint32_t n;
	enum tp_dtype dtype;
	double flop, pbytes, saved, out, edge;
	int64_t batch;
};
void tp_test_chain_model(struct tp_model *m, const struct tp_test_chain *s);

/* One MoE layer: a free router, E experts "layer0.expert<j>.fc" of 1e11
 * FLOP per sample (backward 2x), pbytes parameter bytes and 1e7 saved
 * bytes per sample each, 1e8 bytes per sample dispatched to and combined
 * from each, a free combine; bf16, Adam, top-2, global batch `batch`;
 * finalised. */
void tp_test_moe_layer(struct tp_model *m, uint32_t E, int64_t batch,
		       double pbytes);

/* A 4-token attention model: a projection "qkv" of 1 TFLOP per sample
 * and pbytes parameter bytes whose 3 GB output is Q, K and V, and the
 * attention core "attn" (1 TFLOP), backward 2x, 1 GB saved each; bf16,
 * Adam, global batch `batch`; finalised. */
void tp_test_attn_model(struct tp_model *m, int64_t batch, double pbytes);

#endif
