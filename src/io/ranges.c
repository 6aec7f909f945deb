/*
 * ranges.c - the physical ranges of the formats' quantities (README,
 * section 5): the one table the loaders check every cost, size, rate and
 * time against, and the builders check what they made against.
 *
 * Why: every figure is finite by JSON's rules, but 1e307 FLOP per sample
 * times a batch is not, and a link of 1e-300 B/s makes any transfer last
 * forever; such values used to reach the writers as Infinity (an
 * assertion) or turn into misleading errors far from the file.  Each
 * bound is far outside anything real (the reason says how far), so it
 * refuses only typos and unit mistakes, and products of bounded figures
 * (x the 2^28-sample batch, x 10^6 ops) stay below 1e40.
 */
#include <stdio.h>
#include <string.h>

#include "io_int.h"

static const struct tp_io_range ranges[TP_IOQ_COUNT] = {
	[TP_IOQ_FLOP_PER_SAMPLE] = {0, 1e21, "FLOP",
				    "one sample of GPT-3 175B is 1e15 FLOP "
				    "through all its ops"},
	[TP_IOQ_OP_BYTES] = {0, 1e15, "bytes",
			     "1 PB; the largest published models hold some "
			     "1e13 bytes of parameters"},
	[TP_IOQ_SAMPLE_BYTES] = {0, 1e15, "bytes",
				 "1 PB per sample; a 128k-token sample of "
				 "a large model keeps some 1e11"},
	[TP_IOQ_OP_SECONDS] = {0, 1e6, "s", "11 days for one op"},
	[TP_IOQ_PROFILE_BATCH] = {1e-9, 268435456, "samples",
				  "2^28, the largest global batch"},
	[TP_IOQ_BANDWIDTH] = {1e3, 1e15, "B/s",
			      "1 kB/s to 1 PB/s; NVLink 5 is 9e11 B/s"},
	[TP_IOQ_LATENCY] = {0, 1e3, "s", "a WAN round trip is 0.3 s"},
	[TP_IOQ_DEVICE_MEMORY] = {1e6, 1e15, "bytes",
				  "1 MB to 1 PB; a B200 has 1.9e11"},
	[TP_IOQ_MEMORY_BANDWIDTH] = {1e6, 1e15, "B/s",
				     "HBM3e is 8e12 B/s"},
	[TP_IOQ_DEVICE_FLOPS] = {1e6, 1e18, "FLOP/s",
				 "a B200 is 2.3e15 dense fp16"},
	[TP_IOQ_GEMM_HALF_FLOP] = {0, 1e18, "FLOP",
				   "the shipped devices have 1e8 to 1e10"},
	[TP_IOQ_KERNEL_OVERHEAD] = {0, 1, "s",
				    "kernel launches take some 5e-6 s"},
	[TP_IOQ_RESERVED_BYTES] = {0, 1e15, "bytes",
				   "as device memory"},
	[TP_IOQ_OVERSUBSCRIPTION] = {1, 1e3, "",
				     "real fabrics are 1:1 to 8:1"},
	[TP_IOQ_PLAN_BYTES] = {0, 1e18, "bytes",
			       "1 EB per iteration"},
	/* measured runs (calibrate's input): the time each row comes to
	 * must stay a positive finite figure through the fit's logs and
	 * ratios (an achieved 1e300 TFLOP/s gave a time of 0 and an
	 * infinite error, an assertion in the profile's writer) */
	[TP_IOQ_RUN_SECONDS] = {1e-6, 1e6, "s",
				"one training iteration: 1 us to 11 days"},
	[TP_IOQ_RUN_TFLOPS] = {1e-6, 1e6, "TFLOP/s",
			       "achieved per GPU, at most its peak: a B200 "
			       "is 2.3e3 dense fp16"},
	[TP_IOQ_RUN_SAMPLES_PER_S] = {1e-6, 1e12, "samples/s",
				      "a million GPUs at a million samples/s "
				      "each"},
};

const struct tp_io_range *tp_io_range_of(enum tp_io_quantity q)
{
	return &ranges[q];
}

bool tp_io_in_range(enum tp_io_quantity q, double v)
{
	const struct tp_io_range *r = &ranges[q];

	/* 0 is "none" wherever the field's sign rule allows it */
	return v == 0 || (v >= r->min && v <= r->max);
}

/* "1e+21" -> "1e21": the figure as a user would write it. */
static void figure(double v, char *out, size_t size)
{
	char *e;

	snprintf(out, size, "%.6g", v);
	e = strchr(out, 'e');
	if (e && e[1] == '+')
		memmove(e + 1, e + 2, strlen(e + 2) + 1);
}

enum tp_status tp_io_check_quantity(struct tp_jctx *j, const char *key,
				    enum tp_io_quantity q, double v)
{
	const struct tp_io_range *r = &ranges[q];
	char lo[32], hi[32], got[32];

	if (tp_io_in_range(q, v))
		return TP_OK;
	figure(r->min, lo, sizeof(lo));
	figure(r->max, hi, sizeof(hi));
	figure(v, got, sizeof(got));
	return tp_jctx_fail(j, key,
			    "%s%s%s is outside the range tagplan accepts, "
			    "%s to %s%s%s (%s); check the figure and its unit",
			    got, *r->unit ? " " : "", r->unit, lo, hi,
			    *r->unit ? " " : "", r->unit, r->why);
}

enum tp_status tp_io_get_quantity(struct tp_jctx *j, const struct tp_json *obj,
				  const char *key, bool required,
				  enum tp_jnum rng, enum tp_io_quantity q,
				  double def, double *out)
{
	bool here = false;
	enum tp_status st =
		tp_jget_number(j, obj, key, required, rng, def, out, &here);

	if (st || !here)
		return st;
	return tp_io_check_quantity(j, key, q, *out);
}

static enum tp_status model_out_of_range(struct tp_error *err,
					 const char *op, const char *what,
					 enum tp_io_quantity q, double v)
{
	const struct tp_io_range *r = &ranges[q];
	char hi[32], got[32];

	figure(r->max, hi, sizeof(hi));
	figure(v, got, sizeof(got));
	return tp_error_set(err, TP_EINPUT,
			    "op \"%s\": %s %s %s is above the %s %s tagplan "
			    "accepts (%s); choose smaller dimensions",
			    op, got, r->unit, what, hi, r->unit, r->why);
}

enum tp_status tp_io_model_check_ranges(const struct tp_model *m,
					struct tp_error *err)
{
	for (size_t k = 0; k < m->ops.n; k++) {
		const struct tp_op *op = &m->ops.v[k];
		const struct {
			double v;
			const char *what;
			enum tp_io_quantity q;
		} f[] = {
			{op->flop, "forward per sample", TP_IOQ_FLOP_PER_SAMPLE},
			{op->backward_flop, "backward per sample",
			 TP_IOQ_FLOP_PER_SAMPLE},
			{op->param_bytes, "of parameters", TP_IOQ_OP_BYTES},
			{op->out_bytes, "of output per sample",
			 TP_IOQ_SAMPLE_BYTES},
			{op->saved_bytes, "saved per sample",
			 TP_IOQ_SAMPLE_BYTES},
			{op->mem_bytes, "of memory traffic per sample",
			 TP_IOQ_SAMPLE_BYTES},
		};
		for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
			if (!tp_io_in_range(f[i].q, f[i].v))
				return model_out_of_range(err, op->name,
							  f[i].what, f[i].q,
							  f[i].v);
	}
	for (size_t k = 0; k < m->edges.n; k++)
		if (!tp_io_in_range(TP_IOQ_SAMPLE_BYTES, m->edges.v[k].bytes))
			return model_out_of_range(
				err, m->ops.v[m->edges.v[k].src].name,
				"sent per sample on an edge",
				TP_IOQ_SAMPLE_BYTES, m->edges.v[k].bytes);
	if (m->global_batch < 1 || m->global_batch > TP_IO_MAX_GLOBAL_BATCH)
		return tp_error_set(err, TP_EINPUT,
				    "a global batch of %lld samples: tagplan "
				    "accepts 1 to %lld (2^28)",
				    (long long)m->global_batch,
				    (long long)TP_IO_MAX_GLOBAL_BATCH);
	return TP_OK;
}

/* ---- names ---------------------------------------------------------------
 *
 * Names reach terminals (tables, messages): a control character in one
 * (an escape sequence, a newline) would drive the terminal or break the
 * table, so names are printable text (README section 0). */

size_t tp_io_name_bad_char(const char *s, unsigned *code)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; p[i]; i++) {
		if (p[i] < 0x20 || p[i] == 0x7f) {
			*code = p[i];
			return i + 1;
		}
		/* C1 controls U+0080..U+009F: C2 80..C2 9F in UTF-8 */
		if (p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f) {
			*code = p[i + 1];
			return i + 1;
		}
	}
	return 0;
}

enum tp_status tp_io_get_name(struct tp_jctx *j, const struct tp_json *obj,
			      const char *key, bool required, size_t max_len,
			      const char *def, const char **out)
{
	unsigned code = 0;
	enum tp_status st = tp_jget_string(j, obj, key, required, max_len,
					   required || !def || *def, def, out);

	if (st || !*out || !tp_io_name_bad_char(*out, &code))
		return st;
	return tp_jctx_fail(j, key,
			    "the name contains the control character U+%04X "
			    "(names are printable text: they are shown on "
			    "terminals); remove it",
			    code);
}
