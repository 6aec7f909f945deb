/*
 * corpus.c - random models and clusters for self-play (train.h).
 *
 * Transformers come from the GPT builder (src/io/build.h) with random
 * dimensions; CNNs (ResNet-like: stem, stages of residual blocks, pooling,
 * classifier) and random DAGs are built here with the core IR API, with
 * the builders' conventions: costs per sample, backward FLOP = 2 x
 * forward, a multiply-add is 2 FLOP, activations in the model dtype.
 * None of the benchmark's models (Llama-2, BERT-large, the zoo's
 * torchvision CNNs) is generated: the benchmark measures generalisation.
 */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "io/build.h"

static const char *const family_names[TP_TRAIN_FAMILY_COUNT] = {
	"transformer", "cnn", "dag", "hf", "zoo"};

static const char *const split_names[TP_TRAIN_SPLITS] = {
	"same", "family", "cluster"};

const char *tp_train_split_name(enum tp_train_split s)
{
	return s < TP_TRAIN_SPLITS ? split_names[s] : "?";
}

const char *tp_train_family_name(enum tp_train_family f)
{
	return f < TP_TRAIN_FAMILY_COUNT ? family_names[f] : "?";
}

static uint64_t pick(struct tp_rng *rng, uint64_t n)
{
	return tp_rng_below(rng, n);
}

/* Log-uniform in [lo, hi]. */
static double logu(struct tp_rng *rng, double lo, double hi)
{
	return lo * exp(log(hi / lo) * tp_rng_uniform(rng));
}

static int64_t pow2_at_least(int64_t x)
{
	int64_t p = 1;
	while (p < x)
		p *= 2;
	return p;
}

static enum tp_status random_gpt(struct tp_rng *rng, int64_t min_batch,
				 struct tp_model *m, struct tp_error *err)
{
	static const int64_t hidden[] = {128, 256, 384, 512, 768, 1024,
					 1536, 2048, 2560};
	static const int64_t seqs[] = {128, 256, 512, 1024, 2048};
	struct tp_gpt_dims d;
	int64_t heads;

	tp_gpt_dims_default(&d);
	d.hidden = hidden[pick(rng, sizeof(hidden) / sizeof(hidden[0]))];
	heads = d.hidden >= 1024 ? 16 : d.hidden >= 512 ? 8 : 4;
	if (pick(rng, 3) == 0 && d.hidden % (2 * heads) == 0)
		heads *= 2;
	d.heads = heads;
	if (pick(rng, 4) == 0)
		d.kv_heads = heads / 4 > 0 ? heads / 4 : 1;
	d.layers = 2 + (int64_t)pick(rng, 23);
	d.seq = seqs[pick(rng, sizeof(seqs) / sizeof(seqs[0]))];
	d.vocab = (int64_t)logu(rng, 1000, 60000);
	d.batch = pow2_at_least(min_batch);
	d.batch *= (int64_t)1 << pick(rng, 4);
	if (pick(rng, 3) == 0)
		d.ffn = d.hidden * (2 + (int64_t)pick(rng, 3));
	d.dtype = pick(rng, 5) == 0 ? TP_DTYPE_FP16 : TP_DTYPE_BF16;
	d.name = "random-transformer";
	return tp_build_gpt(&d, m, err);
}

struct mb {
	struct tp_model *m;
	double e; /* bytes per element */
	int32_t layer;
	uint32_t n;
	struct tp_error *err;
	enum tp_status st;
};

/* An op's figures per sample: forward FLOP, parameters, output and input
 * elements. */
struct op_size {
	double flop, params, out_elems, in_elems;
};

/* Add an op fed by up to two inputs (TP_NONE = none); returns its index.
 * Errors are sticky in b->st. */
static uint32_t op(struct mb *b, enum tp_op_kind kind, enum tp_tp_split split,
		   uint32_t units, struct op_size z, uint32_t in1, uint32_t in2)
{
	double flop = z.flop, params = z.params, out_elems = z.out_elems;
	double in_elems = z.in_elems;
	struct tp_op o = tp_op_default();
	char name[48];
	uint32_t idx = TP_NONE;

	if (b->st)
		return TP_NONE;
	snprintf(name, sizeof(name), "op%u", b->n++);
	o.name = name;
	o.kind = kind;
	o.tp_split = split;
	o.tp_units = units;
	o.layer = b->layer;
	o.flop = flop;
	o.backward_flop = kind == TP_OP_INPUT ? 0 : 2 * flop;
	o.param_bytes = params * b->e;
	o.out_bytes = out_elems * b->e;
	o.saved_bytes = kind == TP_OP_INPUT ? 0 : in_elems * b->e;
	o.mem_bytes = (in_elems + out_elems) * b->e;
	b->st = tp_model_add_op(b->m, &o, &idx, b->err);
	if (!b->st && in1 != TP_NONE)
		b->st = tp_model_add_edge(b->m, in1, idx,
					  b->m->ops.v[in1].out_bytes, b->err);
	if (!b->st && in2 != TP_NONE)
		b->st = tp_model_add_edge(b->m, in2, idx,
					  b->m->ops.v[in2].out_bytes, b->err);
	return idx;
}

/* A ResNet-like CNN: stem, 2-5 stages of 1-4 residual blocks (two 3x3
 * convolutions with batch norm), global pooling, classifier, loss. */
static enum tp_status random_cnn(struct tp_rng *rng, int64_t min_batch,
				 struct tp_model *m, struct tp_error *err)
{
	static const double sizes[] = {32, 64, 112, 160, 224};
	static const double widths[] = {16, 32, 48, 64, 96, 128};
	struct mb b = {m, 4, -1, 0, err, TP_OK};
	double hw = sizes[pick(rng, 5)], c = widths[pick(rng, 6)];
	double classes = pick(rng, 2) ? 1000 : 100;
	uint32_t stages = 2 + (uint32_t)pick(rng, 4), x, skip;
	bool half = pick(rng, 2);

	b.e = half ? 2 : 4;
	m->dtype = half ? TP_DTYPE_FP16 : TP_DTYPE_FP32;
	m->optimizer = pick(rng, 3) ? TP_OPT_MOMENTUM : TP_OPT_ADAM;
	m->global_batch = pow2_at_least(min_batch) * ((int64_t)1 << pick(rng, 4));
	m->name = tp_arena_strdup(&m->arena, "random-cnn");
	snprintf(m->arch.family, sizeof(m->arch.family), "resnet");
	x = op(&b, TP_OP_INPUT, TP_SPLIT_NONE, 0,
	       (struct op_size){0, 0, 3 * hw * hw, 0}, TP_NONE, TP_NONE);
	x = op(&b, TP_OP_CONV, TP_SPLIT_COLUMN, (uint32_t)c,
	       (struct op_size){2 * 49 * 3 * c * (hw / 2) * (hw / 2),
				49 * 3 * c, c * (hw / 2) * (hw / 2),
				3 * hw * hw},
	       x, TP_NONE);
	hw /= 2;
	for (uint32_t s = 0; s < stages; s++) {
		uint32_t blocks = 1 + (uint32_t)pick(rng, 4);
		b.layer = (int32_t)s;
		for (uint32_t k = 0; k < blocks; k++) {
			double cin = c, hin = hw, a;
			if (k == 0 && s > 0) {
				c *= 2;
				hw = hw > 4 ? hw / 2 : hw;
			}
			a = c * hw * hw;
			skip = x;
			x = op(&b, TP_OP_CONV, TP_SPLIT_COLUMN, (uint32_t)c,
			       (struct op_size){2 * 9 * cin * a, 9 * cin * c, a,
						cin * hin * hin},
			       x, TP_NONE);
			x = op(&b, TP_OP_NORM, TP_SPLIT_NONE, 0,
			       (struct op_size){5 * a, 2 * c, a, a}, x,
			       TP_NONE);
			x = op(&b, TP_OP_CONV, TP_SPLIT_COLUMN, (uint32_t)c,
			       (struct op_size){2 * 9 * c * a, 9 * c * c, a, a},
			       x, TP_NONE);
			x = op(&b, TP_OP_NORM, TP_SPLIT_NONE, 0,
			       (struct op_size){5 * a, 2 * c, a, a}, x,
			       TP_NONE);
			if (cin != c || hin != hw)
				skip = op(&b, TP_OP_CONV, TP_SPLIT_COLUMN,
					  (uint32_t)c,
					  (struct op_size){2 * cin * a, cin * c,
							   a, cin * hin * hin},
					  skip, TP_NONE);
			x = op(&b, TP_OP_ELEMENTWISE, TP_SPLIT_NONE, 0,
			       (struct op_size){2 * a, 0, a, 2 * a}, x, skip);
		}
	}
	b.layer = -1;
	x = op(&b, TP_OP_POOL, TP_SPLIT_NONE, 0,
	       (struct op_size){c * hw * hw, 0, c, c * hw * hw}, x, TP_NONE);
	x = op(&b, TP_OP_MATMUL, TP_SPLIT_COLUMN, 0,
	       (struct op_size){2 * c * classes, c * classes + classes, classes,
				c},
	       x, TP_NONE);
	op(&b, TP_OP_LOSS, TP_SPLIT_NONE, 0,
	   (struct op_size){5 * classes, 0, 1, classes}, x, TP_NONE);
	if (b.st)
		return b.st;
	return tp_model_finalize(m, err);
}

/* A random DAG of 16-160 ops: mostly GEMMs with elementwise ops, norms
 * and attention-like ops in between; each op reads one of the few
 * previous ops and sometimes a farther one (skip connections). */
static enum tp_status random_dag(struct tp_rng *rng, int64_t min_batch,
				 struct tp_model *m, struct tp_error *err)
{
	struct mb b = {m, 2, -1, 0, err, TP_OK};
	uint32_t n = 16 + (uint32_t)pick(rng, 145);
	uint32_t layers = 2 + (uint32_t)pick(rng, 11);
	double scale = logu(rng, 1e-2, 10); /* overall size */
	uint32_t first;

	m->dtype = TP_DTYPE_BF16;
	m->optimizer = TP_OPT_ADAM;
	m->global_batch = pow2_at_least(min_batch) * ((int64_t)1 << pick(rng, 4));
	m->name = tp_arena_strdup(&m->arena, "random-dag");
	snprintf(m->arch.family, sizeof(m->arch.family), "dag");
	first = op(&b, TP_OP_INPUT, TP_SPLIT_NONE, 0,
		   (struct op_size){0, 0, logu(rng, 1e3, 1e6), 0}, TP_NONE,
		   TP_NONE);
	for (uint32_t i = 1; i < n; i++) {
		uint32_t in1 = first + i - 1 - (uint32_t)pick(rng, i < 3 ? i : 3);
		uint32_t in2 = TP_NONE;
		double out = logu(rng, 1e3, 1e6) * scale;
		double in = m->ops.v[in1].out_bytes / b.e;
		uint32_t r = (uint32_t)pick(rng, 20);
		b.layer = (int32_t)((uint64_t)i * layers / n);
		if (i > 4 && pick(rng, 6) == 0)
			in2 = first + (uint32_t)pick(rng, i - 1);
		if (in2 == in1)
			in2 = TP_NONE;
		if (in2 != TP_NONE)
			in += m->ops.v[in2].out_bytes / b.e;
		if (r < 11) { /* GEMM */
			double k = logu(rng, 64, 8192);
			op(&b, TP_OP_MATMUL,
			   pick(rng, 2) ? TP_SPLIT_COLUMN : TP_SPLIT_ROW, 0,
			   (struct op_size){2 * k * out,
					    k * out / logu(rng, 1, 512), out,
					    in},
			   in1, in2);
		} else if (r < 15) {
			op(&b, TP_OP_ELEMENTWISE, TP_SPLIT_NONE, 0,
			   (struct op_size){2 * out, 0, out, in}, in1, in2);
		} else if (r < 17) {
			op(&b, TP_OP_NORM, TP_SPLIT_NONE, 0,
			   (struct op_size){5 * out, 2 * sqrt(out), out, in},
			   in1, in2);
		} else if (r < 19) {
			op(&b, TP_OP_ATTENTION, TP_SPLIT_SHARDED, 0,
			   (struct op_size){4 * out * logu(rng, 64, 2048), 0,
					    out, in},
			   in1, in2);
		} else {
			op(&b, TP_OP_SOFTMAX, TP_SPLIT_NONE, 0,
			   (struct op_size){5 * out, 0, out, in}, in1, in2);
		}
	}
	b.layer = -1;
	op(&b, TP_OP_LOSS, TP_SPLIT_NONE, 0,
	   (struct op_size){1e3, 0, 1, m->ops.v[first + n - 1].out_bytes / b.e},
	   first + n - 1, TP_NONE);
	if (b.st)
		return b.st;
	return tp_model_finalize(m, err);
}

/* The HF architectures of the corpus and how their configs name the
 * dimensions: 0 llama-like (hidden_size, intermediate_size,
 * num_attention_heads, num_key_value_heads, num_hidden_layers), 1 the
 * same with 8 routed experts (mixtral), 2 with 16 routed experts and a
 * shared one (qwen2_moe), 3 gpt2 (n_embd, n_layer, n_head), 4 bert,
 * 5 t5 (d_model, d_ff, d_kv, num_layers, num_heads), 6 vit.
 * TP_TRAIN_HELD_FAMILY (gemma, llama-like with head_dim 256) is drawn
 * for the held-out family split only. */
struct hf_arch {
	const char *type;
	int style;
};
static const struct hf_arch hf_archs[] = {
	{"llama", 0},  {"mistral", 0}, {"qwen2", 0}, {"phi3", 0},
	{"olmo", 0},   {"falcon", 0},  {"mixtral", 1}, {"qwen2_moe", 2},
	{"gpt2", 3},   {"bert", 4},    {"t5", 5},    {"vit", 6},
};
#define N_HF_ARCHS (sizeof(hf_archs) / sizeof(hf_archs[0]))
/* the first ones: Llama-style decoders (SwiGLU, RMSNorm, RoPE), which
 * TorchTitan (runtime fsdp2) builds */
#define HF_LLAMA_ARCHS 3
/* the dense ones: all but the MoE styles 1 and 2 (mixtral, qwen2_moe,
 * whose experts make a model of 8 layers 300-1,000 ops) */
#define N_HF_DENSE (N_HF_ARCHS - 2)

/* Index in hf_archs of the k-th dense architecture (k < N_HF_DENSE). */
static uint64_t dense_arch(uint64_t k)
{
	uint64_t i = 0;

	for (;; i++)
		if (hf_archs[i].style != 1 && hf_archs[i].style != 2 &&
		    k-- == 0)
			return i;
}

/* A random config of one HF architecture in text (size bytes). */
static void hf_config(struct tp_rng *rng, const struct tp_train_draw *d,
		      char *text, size_t size, int64_t *seq)
{
	/* widths of released models: small clusters 768-4,096 (BERT-base
	   to Llama-7B), large ones 4,096-8,192 (Llama-7B to Llama-70B) */
	static const int64_t small_h[] = {768, 1024, 1536, 2048, 2560, 3072,
					  4096};
	static const int64_t large_h[] = {4096, 5120, 6144, 8192};
	static const int64_t seqs[] = {512, 1024, 2048, 4096};
	/* long-context runs, where context parallelism applies
	   (search/actions.h TP_SPACE_CP_MIN_TOKENS) */
	static const int64_t long_seqs[] = {8192, 8192, 16384, 32768};
	static const int64_t vocabs[] = {32000, 50257, 65024, 128256,
					 151936};
	/* a huge game (train.h TP_TRAIN_HUGE_ABOVE): dense and shallow */
	bool huge = d->large > TP_TRAIN_HUGE_ABOVE;
	struct hf_arch a =
	    d->held_family ? (struct hf_arch){TP_TRAIN_HELD_FAMILY, 0}
	    : d->llama	   ? hf_archs[pick(rng, HF_LLAMA_ARCHS)]
	    : huge	   ? hf_archs[dense_arch(pick(rng, N_HF_DENSE))]
			   : hf_archs[pick(rng, N_HF_ARCHS)];
	int64_t h = d->large ? large_h[pick(rng, 4)] : small_h[pick(rng, 7)];
	int64_t hd = d->held_family ? 256 : pick(rng, 3) ? 128 : 64;
	int64_t heads = h / hd > 0 ? h / hd : 1;
	int64_t kv = heads, layers, ffn, vocab = vocabs[pick(rng, 5)];
	const char *dt = pick(rng, 5) == 0 ? "float16" : "bfloat16";

	if (h % hd)
		heads = h / 64, hd = 64;
	if (pick(rng, 2) && heads % 8 == 0)
		kv = heads / 8;
	else if (pick(rng, 2) && heads % 4 == 0)
		kv = heads / 4;
	/* large: 8-20 layers, so that a game's simulations on hundreds
	   of GPUs stay affordable, huge 4-8 (src/gnn/README, "The
	   corpus") */
	layers = huge	    ? 4 + (int64_t)pick(rng, 5)
		 : d->large ? 8 + (int64_t)pick(rng, 13)
			    : 2 + (int64_t)pick(rng, 23);
	/* SwiGLU models about 8/3 to 3.5 x hidden, in multiples of 256 */
	ffn = (h * (8 + (int64_t)pick(rng, 3)) / 3 + 255) / 256 * 256;
	*seq = d->long_seq ? long_seqs[pick(rng, 4)] : seqs[pick(rng, 4)];
	switch (a.style) {
	case 3:
		snprintf(text, size,
			 "{\"model_type\": \"gpt2\", \"n_embd\": %lld, "
			 "\"n_layer\": %lld, \"n_head\": %lld, "
			 "\"n_positions\": %lld, \"vocab_size\": %lld, "
			 "\"torch_dtype\": \"%s\"}",
			 (long long)h, (long long)layers, (long long)heads,
			 (long long)*seq, (long long)vocab, dt);
		break;
	case 4:
		*seq = *seq > 512 ? 512 : *seq;
		snprintf(text, size,
			 "{\"model_type\": \"bert\", \"hidden_size\": %lld, "
			 "\"num_hidden_layers\": %lld, "
			 "\"num_attention_heads\": %lld, "
			 "\"intermediate_size\": %lld, "
			 "\"max_position_embeddings\": 512, \"vocab_size\": "
			 "30522, \"type_vocab_size\": 2, \"torch_dtype\": "
			 "\"%s\"}",
			 (long long)h, (long long)layers, (long long)heads,
			 (long long)(4 * h), dt);
		break;
	case 5:
		*seq = 0; /* 512 encoder tokens */
		snprintf(text, size,
			 "{\"model_type\": \"t5\", \"d_model\": %lld, "
			 "\"d_ff\": %lld, \"d_kv\": 64, \"num_layers\": %lld, "
			 "\"num_decoder_layers\": %lld, \"num_heads\": %lld, "
			 "\"vocab_size\": 32128, \"torch_dtype\": \"%s\"}",
			 (long long)h, (long long)(4 * h),
			 (long long)(layers / 2 + 1),
			 (long long)(layers / 2 + 1), (long long)(h / 64), dt);
		break;
	case 6:
		*seq = 0; /* its patches */
		snprintf(text, size,
			 "{\"model_type\": \"vit\", \"hidden_size\": %lld, "
			 "\"num_hidden_layers\": %lld, "
			 "\"num_attention_heads\": %lld, "
			 "\"intermediate_size\": %lld, \"image_size\": 224, "
			 "\"patch_size\": %d, \"num_channels\": 3, "
			 "\"torch_dtype\": \"%s\"}",
			 (long long)h, (long long)layers, (long long)heads,
			 (long long)(4 * h), pick(rng, 2) ? 16 : 14, dt);
		break;
	default: {
		char extra[160] = "";
		if (a.style == 1)
			snprintf(extra, sizeof(extra),
				 ", \"num_local_experts\": 8, "
				 "\"num_experts_per_tok\": 2");
		else if (a.style == 2)
			snprintf(extra, sizeof(extra),
				 ", \"num_experts\": 16, "
				 "\"num_experts_per_tok\": 4, "
				 "\"moe_intermediate_size\": %lld, "
				 "\"shared_expert_intermediate_size\": %lld",
				 (long long)(ffn / 4 + 255) / 256 * 256,
				 (long long)ffn);
		else if (d->held_family)
			snprintf(extra, sizeof(extra), ", \"head_dim\": 256");
		snprintf(text, size,
			 "{\"model_type\": \"%s\", \"hidden_size\": %lld, "
			 "\"intermediate_size\": %lld, "
			 "\"num_attention_heads\": %lld, "
			 "\"num_key_value_heads\": %lld, "
			 "\"num_hidden_layers\": %lld, \"vocab_size\": %lld, "
			 "\"max_position_embeddings\": 4096, "
			 "\"torch_dtype\": \"%s\"%s}",
			 a.type, (long long)h, (long long)ffn,
			 (long long)heads, (long long)kv, (long long)layers,
			 (long long)vocab, dt, extra);
	}
	}
}

static enum tp_status random_hf(struct tp_rng *rng,
				const struct tp_train_draw *d,
				struct tp_model *m, struct tp_error *err)
{
	char text[640];
	int64_t seq, batch = pow2_at_least(d->min_batch) << pick(rng, 3);
	enum tp_status st;

	hf_config(rng, d, text, sizeof(text), &seq);
	st = tp_build_hf_text("corpus-hf.json", text, strlen(text), seq,
			      batch, -1, m, err);
	return st;
}

/* The zoo's models that no benchmark plans (bench/: the others are its
 * cases) at a random batch and dtype. */
static enum tp_status random_zoo(struct tp_rng *rng, int64_t min_batch,
				 struct tp_model *m, struct tp_error *err)
{
	static const char *const zoo[] = {"mobilenet-v2", "transformer"};
	const char *name = zoo[pick(rng, 2)];
	int64_t batch = pow2_at_least(min_batch) << pick(rng, 4);
	int dtype = pick(rng, 2) ? TP_DTYPE_FP16 : TP_DTYPE_FP32;

	return tp_build_zoo(name, batch, dtype, m, err);
}

enum tp_status tp_train_draw_model(struct tp_rng *rng,
				   const struct tp_train_draw *d,
				   struct tp_model *m, struct tp_error *err)
{
	int64_t min_batch = d->min_batch < 1 ? 1 : d->min_batch;
	enum tp_status st;

	if (d->held_family || d->fam == TP_TRAIN_HF)
		st = random_hf(rng, d, m, err);
	else if (d->fam == TP_TRAIN_ZOO)
		st = random_zoo(rng, min_batch, m, err);
	else
		return tp_train_random_model(rng, d->fam, min_batch, m, err);
	if (st) {
		tp_model_release(m);
		tp_model_init(m);
	}
	return st;
}

enum tp_status tp_train_random_model(struct tp_rng *rng,
				     enum tp_train_family f, int64_t min_batch,
				     struct tp_model *m, struct tp_error *err)
{
	enum tp_status st;

	if (min_batch < 1)
		min_batch = 1;
	switch (f) {
	case TP_TRAIN_TRANSFORMER:
		return random_gpt(rng, min_batch, m, err);
	case TP_TRAIN_CNN:
		st = random_cnn(rng, min_batch, m, err);
		break;
	case TP_TRAIN_HF:
	case TP_TRAIN_ZOO: {
		struct tp_train_draw d = {f, min_batch, 0, 0, false, false, false, false};
		return tp_train_draw_model(rng, &d, m, err);
	}
	default:
		st = random_dag(rng, min_batch, m, err);
		break;
	}
	if (st) {
		tp_model_release(m);
		tp_model_init(m);
	}
	return st;
}

/* The node presets random clusters are drawn from (their GPUs and
 * figures: io/presets.c); the order fixes the corpus of a seed. */
static const char *const presets[] = {
	"v100-nvlink", "p100-pcie", "1080ti-pcie", "t4-pcie",  "l4-pcie",
	"a100-pcie",   "dgx1-v100", "dgx-a100",    "dgx-h100",
};
#define N_PRESETS (sizeof(presets) / sizeof(presets[0]))

/* GPUs per node of preset k. */
static uint32_t preset_gpus(uint32_t k)
{
	const char *gpu;
	uint32_t gpus = 0;
	double pcie;

	if (!tp_node_preset_info(presets[k], &gpu, &gpus, &pcie))
		return 0;
	return gpus;
}

/* Node presets no training cluster has: the held-out cluster split's
 * (TP_TRAIN_HELD_PRESETS). */
static const char *const held_presets[] = {"hgx-h200", "dgx-b200"};

static uint32_t held_gpus(const char *name)
{
	const char *gpu;
	uint32_t gpus = 0;
	double pcie;

	if (!tp_node_preset_info(name, &gpu, &gpus, &pcie))
		return 0;
	return gpus;
}

/* Presets of large clusters (indices into presets[]: t4-pcie, l4-pcie,
 * a100-pcie, dgx1-v100, dgx-a100, dgx-h100): the 8-GPU servers and the
 * PCIe servers of data centres. */
static const uint32_t large_presets[] = {3, 4, 5, 6, 7, 8};

/* The cluster of kinds/count (nk kinds) on network net, or the held-out
 * preset held (NULL = none) in place of kind 0. */
struct cl_spec {
	uint32_t kinds[3], count[3], nk;
	const char *net, *held;
};

static enum tp_status build_spec(struct tp_rng *rng, const struct cl_spec *q,
				 struct tp_cluster *c, char *desc,
				 size_t desc_size, struct tp_error *err)
{
	char specs[3][32];
	const char *sp[3];

	for (uint32_t k = 0; k < q->nk; k++) {
		snprintf(specs[k], sizeof(specs[k]), "%s:%u",
			 k == 0 && q->held ? q->held : presets[q->kinds[k]],
			 q->count[k]);
		sp[k] = specs[k];
	}
	if (desc) {
		size_t off = 0;
		desc[0] = 0;
		for (uint32_t k = 0; k < q->nk && off < desc_size; k++)
			off += (size_t)snprintf(desc + off, desc_size - off,
						"%s ", sp[k]);
		if (off < desc_size)
			snprintf(desc + off, desc_size - off, "--net %s",
				 q->net);
	}
	return tp_build_topology(sp, (int)q->nk, q->net,
				 pick(rng, 4) == 0 ? 2.0 : 1.0, c, err);
}

/* A large cluster: 1-3 kinds of large_presets, 9 to d->large / 8
 * nodes in all (log-uniform; more than 64 GPUs when they are 8-GPU
 * nodes, so the network sees pooled device classes; a huge game's,
 * d->large above TP_TRAIN_HUGE_ABOVE, from TP_TRAIN_HUGE_ABOVE / 8 + 1
 * nodes), a data-centre network. */
static enum tp_status large_cluster(struct tp_rng *rng,
				    const struct tp_train_draw *d,
				    struct tp_cluster *c, char *desc,
				    size_t desc_size, struct tp_error *err)
{
	static const char *const nets[] = {"100gbe", "ib-edr", "ib-hdr",
					   "ib-ndr"};
	struct cl_spec q;
	uint32_t total = 0, nodes;
	double hi = d->large / 8.0 > 10 ? d->large / 8.0 : 10;
	double lo = d->large > TP_TRAIN_HUGE_ABOVE
			? TP_TRAIN_HUGE_ABOVE / 8 + 1
			: 9;

	memset(&q, 0, sizeof(q));
	q.nk = 1 + (uint32_t)pick(rng, 3);
	nodes = (uint32_t)logu(rng, lo, hi);
	for (uint32_t k = 0; k < q.nk; k++)
		q.kinds[k] = large_presets[pick(rng, sizeof(large_presets) /
						       sizeof(large_presets[0]))];
	if (d->held_cluster)
		q.held = held_presets[pick(rng, 2)];
	for (uint32_t i = 0; i < nodes; i++) {
		uint32_t k = i < q.nk ? i : (uint32_t)pick(rng, q.nk);
		uint32_t g = k == 0 && q.held ? held_gpus(q.held)
						  : preset_gpus(q.kinds[k]);
		if (total + g > d->large)
			continue;
		q.count[k]++;
		total += g;
	}
	for (uint32_t a = 0; a < q.nk; a++) /* merge duplicate kinds */
		for (uint32_t b = a + 1; b < q.nk; b++)
			if (q.kinds[a] == q.kinds[b] && !(a == 0 && q.held)) {
				q.count[a] += q.count[b];
				q.count[b] = 0;
			}
	{
		uint32_t j = 0;
		for (uint32_t k = 0; k < q.nk; k++)
			if (q.count[k]) {
				if (k == 0 && q.held)
					j = 1;
				else {
					q.kinds[j] = q.kinds[k];
					q.count[j++] = q.count[k];
				}
			}
		q.nk = j;
	}
	q.net = nets[pick(rng, sizeof(nets) / sizeof(nets[0]))];
	return build_spec(rng, &q, c, desc, desc_size, err);
}

enum tp_status tp_train_random_cluster(struct tp_rng *rng,
				       uint32_t max_devices,
				       struct tp_cluster *c, char *desc,
				       size_t desc_size, struct tp_error *err)
{
	struct tp_train_draw d = {TP_TRAIN_TRANSFORMER, 1, max_devices, 0,
				  false, false, false, false};
	return tp_train_draw_cluster(rng, &d, c, desc, desc_size, err);
}

enum tp_status tp_train_draw_cluster(struct tp_rng *rng,
				     const struct tp_train_draw *d,
				     struct tp_cluster *c, char *desc,
				     size_t desc_size, struct tp_error *err)
{
	static const char *const nets[] = {"10gbe",  "25gbe",  "100gbe",
					   "ib-edr", "ib-hdr", "ib-ndr"};
	struct cl_spec q;
	uint32_t nodes, total = 0, max_devices = d->max_devices;
	uint32_t *kinds = q.kinds, *count = q.count, nk;

	if (d->large)
		return large_cluster(rng, d, c, desc, desc_size, err);
	memset(&q, 0, sizeof(q));
	if (max_devices < 2)
		max_devices = 2;
	for (int attempt = 0;; attempt++) {
		nk = 1 + (uint32_t)pick(rng, 3);
		nodes = 1 + (uint32_t)pick(rng, 8);
		if (nodes < nk)
			nk = nodes;
		total = 0;
		for (uint32_t k = 0; k < nk; k++) {
			kinds[k] = (uint32_t)pick(rng, N_PRESETS);
			count[k] = 0;
		}
		/* the held-out split: kind 0 is a node of a type no
		   training cluster has (never merged) */
		q.held = d->held_cluster ? held_presets[pick(rng, 2)] : NULL;
		for (uint32_t i = 0; i < nodes; i++) {
			uint32_t k = i < nk ? i : (uint32_t)pick(rng, nk);
			uint32_t g = k == 0 && q.held ? held_gpus(q.held)
						  : preset_gpus(kinds[k]);
			if (total + g > max_devices)
				continue;
			count[k]++;
			total += g;
		}
		/* merge duplicate kinds, drop empty ones */
		for (uint32_t a = 0; a < nk; a++)
			for (uint32_t b = a + 1; b < nk; b++)
				if (kinds[a] == kinds[b] &&
				    !(q.held && (a == 0 || b == 0))) {
					count[a] += count[b];
					count[b] = 0;
				}
		{
			uint32_t j = 0;
			for (uint32_t k = 0; k < nk; k++)
				if (count[k]) {
					kinds[j] = kinds[k];
					count[j++] = count[k];
				} else if (k == 0 && q.held) {
					q.held = NULL; /* did not fit */
				}
			nk = j;
		}
		q.net = nets[pick(rng, sizeof(nets) / sizeof(nets[0]))];
		/* never the TAG testbed (the benchmark's cluster) */
		if (nk == 3 && strcmp(q.net, "25gbe") == 0 && !q.held) {
			bool v = false, g = false, p = false;
			for (uint32_t k = 0; k < nk; k++) {
				const char *n = presets[kinds[k]];
				v |= !strcmp(n, "v100-nvlink") && count[k] == 1;
				g |= !strcmp(n, "1080ti-pcie") && count[k] == 4;
				p |= !strcmp(n, "p100-pcie") && count[k] == 2;
			}
			if (v && g && p)
				continue;
		}
		if ((total >= 2 && (q.held || !d->held_cluster)) ||
		    attempt > 20)
			break;
	}
	q.nk = nk;
	return build_spec(rng, &q, c, desc, desc_size, err);
}
