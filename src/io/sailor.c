/*
 * sailor.c - Sailor's (eth-easl/sailor, SOSP 2025) inputs as a tagplan
 * model (io.h tp_sailor_import_model).
 *
 * DIR holds Sailor's layout: configs/training_config_*.json (the model:
 * "model", global batch, hidden, sequence, layers, vocab, heads),
 * profiles/MODEL/GPU/profile.json ([micro-batch][tp][layer] = [forward s,
 * backward s, optimizer step s]; layer 0 the embedding, 1..L the blocks,
 * L+1 the head) and llm_info.json ([model][tp][layer] parameter and
 * activation floats).
 *
 * The model is tagplan's GPT (io/build.h) of the config's dimensions in
 * fp32 (Sailor's profiles are fp32 runs, TF32 on A100).  Each measured
 * (micro-batch, tp) point of a layer becomes one profile point of each of
 * the layer's ops: the layer's forward and backward times split in
 * proportion to the ops' FLOP per rank at that tp (an op tp splits does
 * 1/tp of its FLOP), its optimizer time in proportion to their
 * parameters (a layer without FLOP splits its times evenly).  So the ops
 * of a layer sum to Sailor's time at every measured point, and
 * interpolation between points (core/profile.h) is linear in the layer's
 * time as in each op's.  Ops outside the blocks belong to layer 0 before
 * the first block and to layer L+1 after the last.
 *
 * Dropped, and said in the notes: GPU types tagplan has no device type
 * for (GH-96, Titan-RTX, RTX-2080); llm_info's activation and state
 * memory (Sailor's memory model, not a measurement: tagplan keeps its own
 * memory model; llm_info's parameter count is compared with the model's);
 * the OPT/GPT-Neo differences from tagplan's GPT (learned positions,
 * ReLU MLP, local attention), which change no FLOP count by more than the
 * notes say.
 */
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "io.h"
#include "io_int.h"
#include "json.h"

/* Sailor's GPU names and tagplan's device types (data/devices.json):
 * GCP's a2 (A100 SXM4) and n1 (V100 SXM2) machines. */
static const char *const gpu_map[][2] = {
    {"A100-40", "A100-SXM4-40GB"},
    {"A100-80", "A100-SXM4-80GB"},
    {"V100-16", "V100-SXM2-16GB"},
    {"RTX-3090", "RTX-3090-24GB"},
};

const char *tp_sailor_device_type(const char *gpu)
{
	for (size_t i = 0; i < sizeof(gpu_map) / sizeof(gpu_map[0]); i++)
		if (strcmp(gpu_map[i][0], gpu) == 0)
			return gpu_map[i][1];
	return NULL;
}

/* snprintf for paths (vsnprintf: a long name is cut, then refused when
 * read, not a format warning). */
static void pathf(char *out, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void pathf(char *out, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out, n, fmt, ap);
	va_end(ap);
}

enum tp_status tp_sailor_read_json(const char *path, struct tp_json_doc *doc,
				struct tp_error *err)
{
	char *text = NULL;
	size_t len = 0;
	enum tp_status st = tp_file_read_text(path, 0, &text, &len, err);

	if (!st)
		st = tp_json_parse(path, text, len, 0, 0, doc, err);
	free(text);
	if (st && err && !err->file[0])
		tp_error_set_file(err, path);
	return st;
}

static double num(const struct tp_json *o, const char *key)
{
	const struct tp_json *v = o ? tp_json_get(o, key) : NULL;
	return v && v->type == TP_JSON_NUMBER ? v->num : NAN;
}

/* The training config naming `name` into d (its strings in doc). */
static enum tp_status find_config(const char *dir, const char *name,
				  struct tp_gpt_dims *d,
				  struct tp_strbuf *names, struct tp_error *err)
{
	char path[4096];
	DIR *dp;
	struct dirent *e;
	enum tp_status st = TP_EINPUT;

	pathf(path, sizeof(path), "%s/configs", dir);
	dp = opendir(path);
	if (!dp)
		return tp_error_set(err, TP_EIO,
				    "%s: cannot open the folder (expected "
				    "Sailor's configs/ in %s)",
				    path, dir);
	while ((e = readdir(dp)) != NULL && st) {
		struct tp_json_doc doc;
		const struct tp_json *r, *mv;
		size_t n = strlen(e->d_name);
		if (strncmp(e->d_name, "training_config_", 16) != 0 || n < 5 ||
		    strcmp(e->d_name + n - 5, ".json") != 0)
			continue;
		pathf(path, sizeof(path), "%s/configs/%s", dir, e->d_name);
		memset(&doc, 0, sizeof(doc));
		if (tp_sailor_read_json(path, &doc, err)) {
			closedir(dp);
			return err->status ? err->status : TP_EINPUT;
		}
		r = doc.root;
		mv = r ? tp_json_get(r, "model") : NULL;
		if (mv && mv->type == TP_JSON_STRING) {
			tp_strbuf_addf(names, "%s%s", names->len ? ", " : "",
				       mv->str);
			if (strcmp(mv->str, name) == 0) {
				d->hidden = (int64_t)num(r, "hidden_size");
				d->layers = (int64_t)num(r, "num_layers");
				d->heads = (int64_t)num(r, "heads");
				d->seq = (int64_t)num(r, "sequence_length");
				d->vocab = (int64_t)num(r, "vocab_size");
				d->batch = (int64_t)num(r, "global_batch_size");
				st = TP_OK;
			}
		}
		tp_json_doc_release(&doc);
	}
	closedir(dp);
	if (st)
		return tp_error_set(
		    err, TP_EUSAGE,
		    "%s/configs has no training config of "
		    "model \"%s\" (it has: %s); give one of "
		    "those to --model",
		    dir, name, names->len ? tp_strbuf_cstr(names) : "none");
	return TP_OK;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

int32_t *tp_sailor_layer_map(const struct tp_model *m, int64_t L)
{
	int32_t *lay = calloc(m->ops.n + 1, sizeof(*lay));
	bool seen = false;

	if (!lay)
		return NULL;
	for (size_t i = 0; i < m->ops.n; i++) {
		const struct tp_op *op = &m->ops.v[i];
		if (op->layer >= 0) {
			seen = true;
			lay[i] = op->layer + 1;
		} else {
			lay[i] = seen ? (int32_t)L + 1 : 0;
		}
	}
	return lay;
}

/* One GPU's profile: [mbs][tp][layer] = [f, b, o]; the fastest FLOP
 * rate per device its points give a block and the head (layer L+1). */
struct gpu_prof {
	const char *type; /* tagplan's */
	struct tp_json_doc doc;
	double block_rate, head_rate;
};

/* A head measured this many times faster than the fastest block cannot
 * hold its FLOP: said in the notes (HEAD_CHECK below). */
#define HEAD_RATE_RATIO 10

/* The op's weights at tp: forward and backward FLOP per rank, params. */
static void weights(const struct tp_op *op, int tp, double w[3])
{
	double d = op->tp_split != TP_SPLIT_NONE && tp > 1 ? tp : 1;

	w[0] = op->flop / d;
	w[1] = op->backward_flop / d;
	w[2] = op->param_bytes;
}

/* Add op o's points from one GPU's table. */
static enum tp_status add_points(struct tp_model *m, uint32_t o,
				 const int32_t *lay, struct gpu_prof *g,
				 int32_t head, struct tp_error *err)
{
	const struct tp_json *r = g->doc.root;

	for (size_t a = 0; a < r->n; a++) {
		const struct tp_json *mb = r->items[a];
		double batch = atof(mb->key);
		for (size_t b = 0; mb->type == TP_JSON_OBJECT && b < mb->n;
		     b++) {
			const struct tp_json *tv = mb->items[b];
			int tp = atoi(tv->key);
			char key[16];
			const struct tp_json *v;
			double sum[3] = {0, 0, 0}, w[3], t[3];
			uint32_t cnt = 0;
			struct tp_profile p;
			snprintf(key, sizeof(key), "%d", lay[o]);
			v = tv->type == TP_JSON_OBJECT ? tp_json_get(tv, key)
						       : NULL;
			if (!v || v->type != TP_JSON_ARRAY || v->n < 3 ||
			    !(batch > 0) || tp < 1)
				continue;
			for (size_t k = 0; k < 3; k++)
				t[k] = v->items[k]->type == TP_JSON_NUMBER
					   ? v->items[k]->num
					   : 0;
			for (uint32_t i = 0; i < m->ops.n; i++) {
				if (lay[i] != lay[o] ||
				    m->ops.v[i].kind == TP_OP_INPUT)
					continue;
				weights(&m->ops.v[i], tp, w);
				for (int k = 0; k < 3; k++)
					sum[k] += w[k];
				cnt++;
			}
			weights(&m->ops.v[o], tp, w);
			memset(&p, 0, sizeof(p));
			p.device_type = g->type;
			p.batch = batch;
			p.tp = (uint32_t)tp;
			p.forward_s =
			    sum[0] > 0 ? t[0] * w[0] / sum[0] : t[0] / cnt;
			p.backward_s =
			    sum[1] > 0 ? t[1] * w[1] / sum[1] : t[1] / cnt;
			if (sum[2] > 0 && w[2] > 0) {
				p.has |= TP_PROFILE_HAS_OPTIMIZER;
				p.optimizer_s = t[2] * w[2] / sum[2];
			}
			for (int k = 0; k < 2 && lay[o] > 0; k++) {
				double rate = t[k] > 0 ? sum[k] * batch / t[k]
						       : 0;
				double *best = lay[o] == head ? &g->head_rate
							      : &g->block_rate;
				if (rate > *best)
					*best = rate;
			}
			if (tp_model_add_profile(m, o, &p, err))
				return TP_ENOMEM;
		}
	}
	return TP_OK;
}

/* Parameters llm_info counts for the model at tp 1, beside the model's. */
static void check_params(const char *dir, const char *name,
			 const struct tp_model *m, struct tp_strbuf *notes)
{
	char path[4096];
	struct tp_json_doc doc;
	struct tp_error e;
	const struct tp_json *t1;
	double sail = 0, ours = 0;

	pathf(path, sizeof(path), "%s/llm_info.json", dir);
	memset(&doc, 0, sizeof(doc));
	tp_error_clear(&e);
	if (tp_sailor_read_json(path, &doc, &e)) {
		tp_strbuf_addf(notes, "llm_info.json not read (%s)\n", e.msg);
		return;
	}
	t1 = doc.root ? tp_json_get(doc.root, name) : NULL;
	t1 = t1 ? tp_json_get(t1, "1") : NULL;
	for (size_t i = 0; t1 && t1->type == TP_JSON_OBJECT && i < t1->n; i++)
		if (!isnan(num(t1->items[i], "params_floats")))
			sail += num(t1->items[i], "params_floats");
	for (size_t i = 0; i < m->ops.n; i++)
		ours += m->ops.v[i].param_bytes;
	ours /= tp_dtype_bytes(m->dtype);
	if (sail > 0)
		tp_strbuf_addf(notes,
			       "llm_info: %.4g parameters, the model %.4g "
			       "(%+.1f%%); its activation and state memory "
			       "(Sailor's memory model) dropped: tagplan's "
			       "own memory model prices memory\n",
			       sail, ours, 100 * (ours / sail - 1));
	else
		tp_strbuf_addf(notes, "llm_info: no entry for %s\n", name);
	tp_json_doc_release(&doc);
}

/*
 * Dropout as the model's released configuration has it (Sailor's configs
 * do not say): OPT (facebook/opt-*: dropout 0.1, attention_dropout 0.0)
 * keeps the residual dropouts' masks but not the attention
 * probabilities' mask and dropout output; GPT-Neo (EleutherAI/gpt-neo-*:
 * attention, embedding and residual dropout 0) and Llama 3 (none) keep
 * neither.  Megatron's GPT (dropout 0.1 everywhere, tagplan's default)
 * saves 9 a s^2 bytes per block in fp32 for the attention probabilities
 * (softmax output, mask, dropout output: Korthikanti et al.,
 * arXiv:2205.05198, eq. 1, at 4-byte tensors), the runtime without
 * attention dropout 4 a s^2: 604 against 268 MB per sample and block for
 * OPT-350 at 2,048 tokens, most of the 2.06x between tagplan's
 * activation estimate and Sailor's (issue 25).  Said in the notes.
 * Checked against Sailor's own memory model (llm_info.json, OPT-350,
 * tp 1, a block at one sample): act_mem_floats 90,181,632 = a s^2
 * (67,108,864: one fp32 tensor of attention probabilities, the softmax
 * output) + 11 s h (23,068,672) + 2 s (4,096); no dropout mask or
 * dropout output on the probabilities (they would add another a s^2
 * and a mask), so Sailor counts OPT without attention dropout too, and
 * its s^2 term is this import's exactly (4 a s^2 bytes); the 1.13x left
 * is in the s h terms (66 against Sailor's 44 bytes).
 */
static void dropout_of(const char *name, struct tp_gpt_dims *d,
		       struct tp_strbuf *notes)
{
	if (!strncmp(name, "OPT", 3)) {
		d->dropout = TP_GPT_NO_ATTN_DROPOUT;
		tp_strbuf_addf(notes,
			       "%s: dropout as OPT's released config (0.1 "
			       "after attention and MLP, none on the "
			       "attention probabilities: their mask and "
			       "dropout output are not kept)\n",
			       name);
	} else if (!strncmp(name, "GPT-Neo", 7) || !strncmp(name, "LLAMA", 5)) {
		d->dropout = TP_GPT_NO_DROPOUT;
		tp_strbuf_addf(notes,
			       "%s: no dropout, as its released config (no "
			       "dropout masks kept)\n",
			       name);
	} else {
		tp_strbuf_addf(notes,
			       "%s: dropout as Megatron's GPT (0.1 after "
			       "attention and MLP and on the attention "
			       "probabilities)\n",
			       name);
	}
}

/* HEAD_CHECK.  GPT-Neo-2.7's head (layer 33: the final norm and the LM
 * head, 2 s h V = 5.3e11 FLOP per sample forward) is measured at 4.6 ms
 * forward and 3.9 ms backward for 32 samples on A100-80: 3.7 and 22
 * PFLOP/s per device, 270 times the blocks' fastest (8.2e13) and far
 * above any A100 peak, so Sailor's head times cannot hold the head's
 * FLOP (OPT-350's head: 1.1e14, 3x its blocks').  Kept as measured (a
 * profile is the user's figure), and said: the summary's speeds, MFU
 * and lower bound divide by the fastest measured rate (sim/speed.c), so
 * with such a head they mean little (GPT-Neo: MFU 0.2%, a 333 ms bound
 * of a 123 s iteration). */
static void head_check(const char *name, const struct gpu_prof *g,
		       struct tp_strbuf *notes)
{
	if (!(g->block_rate > 0) ||
	    !(g->head_rate > HEAD_RATE_RATIO * g->block_rate))
		return;
	tp_strbuf_addf(notes,
		       "%s on %s: the head (last layer) measured at up to "
		       "%.3g FLOP/s per device, %.0fx the blocks' fastest "
		       "%.3g: Sailor's times cannot hold the head's FLOP; "
		       "kept as measured, so the plan summary's speeds, MFU "
		       "and lower bound, which divide by the fastest measured "
		       "rate, mean little\n",
		       name, g->type, g->head_rate,
		       g->head_rate / g->block_rate, g->block_rate);
}

enum tp_status tp_sailor_import_model(const char *dir, const char *name,
				      struct tp_model *m,
				      struct tp_strbuf *notes,
				      struct tp_error *err)
{
	struct tp_gpt_dims d;
	struct tp_strbuf names;
	struct gpu_prof g[16];
	uint32_t ng = 0;
	int32_t *lay = NULL;
	char path[4096], dn[32][256];
	uint32_t nn = 0;
	DIR *dp;
	struct dirent *e;
	enum tp_status st;

	tp_gpt_dims_default(&d);
	tp_strbuf_init(&names);
	st = find_config(dir, name, &d, &names, err);
	tp_strbuf_release(&names);
	if (st)
		return st;
	d.dtype = TP_DTYPE_FP32;
	d.name = name;
	dropout_of(name, &d, notes);
	tp_model_init(m);
	if ((st = tp_build_gpt(&d, m, err)))
		return st;
	lay = tp_sailor_layer_map(m, d.layers);
	pathf(path, sizeof(path), "%s/profiles/%s", dir, name);
	dp = opendir(path);
	if (!lay || !dp) {
		free(lay);
		if (dp)
			closedir(dp);
		return dp ? tp_error_set(err, TP_ENOMEM, "out of memory")
			  : tp_error_set(err, TP_EIO,
					 "%s: cannot open the folder (Sailor's "
					 "profiles of %s)",
					 path, name);
	}
	/* in name order: readdir's order is the file system's */
	while ((e = readdir(dp)) != NULL && nn < 32)
		if (e->d_name[0] != '.')
			pathf(dn[nn++], sizeof(dn[0]), "%s", e->d_name);
	closedir(dp);
	qsort(dn, nn, sizeof(dn[0]), cmp_name);
	for (uint32_t q = 0; q < nn; q++) {
		const char *type, *gname = dn[q];
		type = tp_sailor_device_type(gname);
		if (!type) {
			tp_strbuf_addf(notes,
				       "profiles/%s/%s dropped: tagplan has "
				       "no device type for Sailor's %s\n",
				       name, gname, gname);
			continue;
		}
		if (ng == 16)
			break;
		pathf(path, sizeof(path), "%s/profiles/%s/%s/profile.json", dir,
		      name, gname);
		memset(&g[ng].doc, 0, sizeof(g[ng].doc));
		if ((st = tp_sailor_read_json(path, &g[ng].doc, err)))
			break;
		if (!g[ng].doc.root || g[ng].doc.root->type != TP_JSON_OBJECT) {
			tp_json_doc_release(&g[ng].doc);
			st = tp_error_set(err, TP_EINPUT,
					  "%s: expected an object "
					  "[micro-batch][tp][layer]",
					  path);
			break;
		}
		g[ng].type = type;
		g[ng].block_rate = g[ng].head_rate = 0;
		tp_strbuf_addf(notes, "profiles/%s/%s: as %s\n", name, gname,
			       type);
		ng++;
	}
	/* an op's points go in together (core/model.h) */
	for (uint32_t o = 0; !st && o < m->ops.n; o++)
		for (uint32_t k = 0; !st && k < ng; k++)
			if (m->ops.v[o].kind != TP_OP_INPUT)
				st = add_points(m, o, lay, &g[k], d.layers + 1,
						err);
	for (uint32_t k = 0; !st && k < ng; k++)
		head_check(name, &g[k], notes);
	for (uint32_t k = 0; k < ng; k++)
		tp_json_doc_release(&g[k].doc);
	free(lay);
	if (st)
		return st;
	if (!ng)
		tp_strbuf_addf(notes,
			       "no profile of %s could be used: the "
			       "model has roofline estimates only\n",
			       name);
	check_params(dir, name, m, notes);
	return TP_OK;
}
