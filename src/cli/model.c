/*
 * model.c - `tagplan model SOURCE [OPTIONS] [-o MODEL]`: build a model file
 * from GPT dimensions, a HuggingFace config.json or a zoo name
 * (src/io/build.h).  The model goes to -o (atomically) or stdout; its
 * parameter count and forward FLOP per sample (the figures `tagplan
 * inspect` reports) go to stderr.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "core/strbuf.h"
#include "core/strmap.h"
#include "io/build.h"
#include "inputs.h"
#include "io/io.h"

static const char usage[] =
	"SOURCE [OPTIONS] [-o MODEL]\n"
	"       tagplan model gpt --hidden H --layers L --heads A --seq S\n"
	"                 --vocab V --batch B [--ffn F] [--kv-heads K]\n"
	"                 [--dtype bf16|fp16|fp32|fp8] [-o MODEL]\n"
	"       tagplan model hf:PATH/config.json [--seq S] [--batch B]\n"
	"                 [--dtype D] [-o MODEL]\n"
	"       tagplan model ZOO-NAME [--batch B] [--dtype D] [-o MODEL]\n"
	"       tagplan model NAME [--batch B] [-o MODEL]   (a shipped "
	"model file)";

static void about_text(struct tp_strbuf *sb)
{
	tp_strbuf_adds(
		sb,
		"Build a training graph (tagplan-model/1) and write it to -o "
		"MODEL, or to\nstdout.  Its parameter count and forward FLOP "
		"per sample go to stderr.\n\n"
		"SOURCE:\n"
		"  gpt                  a GPT decoder (Megatron-LM's GPT): "
		"embedding, L blocks of\n"
		"                       ln1 qkv attn proj drop1 ln2 fc1 gelu "
		"fc2 drop2, LM head\n"
		"                       tied to the embedding, loss.  Needs "
		"--hidden --layers\n"
		"                       --heads --seq --vocab --batch.\n"
		"  hf:PATH/config.json  a HuggingFace config of model_type "
		"llama, mistral,\n"
		"                       mixtral, qwen2, qwen2_moe, qwen3, "
		"qwen3_moe, gemma,\n"
		"                       gemma2, gemma3_text, phi3, olmo, olmo2, "
		"gpt2, bert, t5,\n"
		"                       falcon, deepseek_v2, deepseek_v3, dbrx "
		"or vit.  Defaults:\n"
		"                       --seq = the config's context length "
		"capped at 4096 (T5:\n"
		"                       512, the decoder gets seq/4; ViT: its "
		"patches), --batch\n"
		"                       256, --dtype from torch_dtype (int8 and "
		"other\n"
		"                       non-training types need --dtype).  MoE "
		"models also\n"
		"                       report the parameters active per "
		"token.  A local file\n"
		"                       (no downloads): huggingface-cli "
		"download ORG/NAME\n"
		"                       config.json --local-dir DIR gets "
		"it.\n"
		"  ZOO-NAME             one of:\n");
	for (int i = 0; tp_zoo_names[i]; i++)
		tp_cli_help_item(sb, 4, tp_zoo_names[i], 14,
			 tp_zoo_about(tp_zoo_names[i]));
	{
		/* the shipped model files: read as they are, --batch set */
		struct tp_strbuf list;
		tp_strbuf_init(&list);
		tp_strbuf_adds(&list,
			       "a model file that ships (data/models/NAME.json; "
			       "plan, simulate, check, render and export take "
			       "the name for -m too), as built, with --batch "
			       "applied: ");
		tp_inputs_list_shipped(true, &list);
		tp_cli_help_item(sb, 2, "NAME", 20, tp_strbuf_cstr(&list));
		tp_strbuf_release(&list);
	}
	tp_strbuf_adds(
		sb,
		"\nCosts are per sample (one sequence, one image).  FLOP count "
		"a multiply-add as\n2 FLOP; torchvision's \"GFLOPS\" and "
		"thop's \"MACs\" count it as 1, so the CNNs'\nconvolution and "
		"fully connected FLOP are exactly twice torchvision's "
		"figures\n(plus about 1% for batch norm, activations and "
		"pools, which torchvision\nomits).  Parameters are counted "
		"as torchvision and HuggingFace count them.\nGranularity and "
		"activation-memory conventions: src/io/README, section 8.");
}

static bool zoo_name(const char *s)
{
	for (int i = 0; tp_zoo_names[i]; i++)
		if (!strcmp(tp_zoo_names[i], s))
			return true;
	return false;
}

/* The option table (N_OPTS entries with its terminator): the gpt
 * dimensions first (N_DIMS of them must be given for gpt; the first
 * N_GPT_ONLY are gpt's, bar --batch and, for hf:, --seq), then the
 * options of every source. */
enum { N_DIMS = 6, N_GPT_ONLY = 8, N_OPTS = 13 };

/* What the command line asked for. */
struct model_args {
	long long hidden, layers, heads, seq, vocab, batch, ffn, kv;
	const char *dtype_s, *out, *name;
	const char *src;  /* SOURCE */
	const char *ship; /* the shipped model file SOURCE names, or NULL */
	int dtype;        /* enum tp_dtype, or -1 */
	bool quiet;       /* -q: no figures on stderr */
	struct tp_opt opts[N_OPTS];
	char sbuf[2048];
};

static void fill_opts(struct model_args *a)
{
	const struct tp_opt opts[] = {
		{"hidden", 0, TP_OPT_INT, &a->hidden, "H",
		 "gpt: hidden size", 1, 1 << 20, false},
		{"layers", 0, TP_OPT_INT, &a->layers, "L",
		 "gpt: transformer blocks", 1, 1 << 16, false},
		{"heads", 0, TP_OPT_INT, &a->heads, "A",
		 "gpt: attention heads (must divide H)", 1, 1 << 16, false},
		{"seq", 0, TP_OPT_INT, &a->seq, "S",
		 "sequence length, tokens per sample (gpt, hf)", 1, 1 << 26,
		 false},
		{"vocab", 0, TP_OPT_INT, &a->vocab, "V", "gpt: vocabulary size",
		 1, 1 << 28, false},
		{"batch", 0, TP_OPT_INT, &a->batch, "B",
		 "global batch size, samples (at most 2^28, as the formats)",
		 1, 268435456.0, false},
		{"ffn", 0, TP_OPT_INT, &a->ffn, "F",
		 "gpt: MLP width (default 4 x H)", 1, 1 << 24, false},
		{"kv-heads", 0, TP_OPT_INT, &a->kv, "K",
		 "gpt: key/value heads, grouped-query attention (default A)",
		 1, 1 << 16, false},
		{"dtype", 0, TP_OPT_STRING, &a->dtype_s, "bf16|fp16|fp32|fp8",
		 "parameter and activation type (fp8: Transformer "
		 "Engine hybrid FP8 GEMMs, bf16 elsewhere) [gpt: bf16; hf: the "
		 "config's torch_dtype, else bf16; zoo: the entry's]",
		 0, 0, false},
		{"name", 0, TP_OPT_STRING, &a->name, "NAME",
		 "the model's name (default from the source)", 0, 0, false},
		{"output", 'o', TP_OPT_STRING, &a->out, "MODEL",
		 "write the model here (atomically) instead of stdout", 0, 0,
		 false},
		{"quiet", 'q', TP_OPT_FLAG, &a->quiet, NULL, TP_CLI_QUIET_HELP,
		 0, 0, false},
		{0}};

	_Static_assert(sizeof(opts) / sizeof(opts[0]) == N_OPTS,
		       "N_OPTS counts the option table");
	memcpy(a->opts, opts, sizeof(opts));
}


/* The --dtype meant by a PyTorch or HF config name (torch_dtype
 * "bfloat16", "torch.float16", "half"), NULL for none. */
static const char *torch_dtype(const char *s)
{
	static const char *const names[][2] = {
	    {"bfloat16", "bf16"}, {"float16", "fp16"}, {"half", "fp16"},
	    {"float32", "fp32"},  {"float", "fp32"},   {"single", "fp32"},
	    {"float8_e4m3fn", "fp8"}, {"float8", "fp8"}};

	if (!strncmp(s, "torch.", 6))
		s += 6;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(s, names[i][0]))
			return names[i][1];
	return NULL;
}
/* Options, SOURCE and --dtype; nonzero (and *code) when the command ends
 * here. */
static int parse_args(struct model_args *a, int argc, char **argv, int *code)
{
	struct tp_strbuf about;
	char **pos = NULL;
	int npos = 0;

	fill_opts(a);
	a->dtype = -1;
	tp_strbuf_init(&about);
	about_text(&about);
	if (tp_opts_parse(&(struct tp_cli_doc){"model", usage,
					       tp_strbuf_cstr(&about)},
			  a->opts, argc, argv, &pos, &npos, code)) {
		tp_strbuf_release(&about);
		return 1;
	}
	tp_strbuf_release(&about);
	if (npos != 1) {
		if (npos)
			*code = tp_cli_usage_error(
				"model", "expected one SOURCE, got %d arguments",
				npos);
		else
			*code = tp_cli_usage_error(
				"model", "missing SOURCE: gpt, "
					 "hf:PATH/config.json or a zoo name "
					 "(resnet50, vgg19, bert-large, ...)");
		free(pos);
		return 1;
	}
	a->src = pos[0];
	free(pos);
	if (a->dtype_s && (a->dtype = tp_dtype_parse(a->dtype_s)) < 0) {
		static const char *const dtypes[] = {"bf16", "fp16", "fp32",
						     "fp8"};
		const char *meant = torch_dtype(a->dtype_s);
		*code = tp_cli_bad_choice_meant(
			"model", "--dtype", a->dtype_s, dtypes, 4,
			meant ? meant
			      : tp_cli_near_name(a->dtype_s, dtypes, 4));
		return 1;
	}
	return 0;
}

/* SOURCE is gpt, hf:..., a zoo name or a shipped model file; otherwise
 * the error says what it is not (before blaming the options). */
static bool known_source(const char *src)
{
	char buf[2048];

	return !strcmp(src, "gpt") || !strncmp(src, "hf:", 3) ||
	       zoo_name(src) ||
	       tp_inputs_shipped(src, true, buf, sizeof(buf)) != src;
}

/* Options that do not go with SOURCE, outputs that are inputs, a bad
 * --name: exit 2 (0 when all is well). */
static int check_options(const struct model_args *a)
{
	const char *src = a->src;
	unsigned bad;

	if (strcmp(src, "gpt") != 0 && known_source(src)) {
		/* options that only make sense for dimensions */
		for (int i = 0; i < N_GPT_ONLY; i++) {
			const char *o = a->opts[i].name;
			if (!a->opts[i].seen || !strcmp(o, "batch") ||
			    (!strcmp(o, "seq") && !strncmp(src, "hf:", 3)))
				continue;
			/* --seq goes with hf: too: a zoo name or shipped
			   file has its own ("gpt only" misled there) */
			if (!strcmp(o, "seq"))
				return tp_cli_usage_error(
					"model",
					"--seq applies to 'tagplan model gpt' "
					"and hf:PATH only, not to %s (a zoo "
					"model or shipped file keeps its own; "
					"for another length build from an HF "
					"config: hf:PATH --seq S)",
					src);
			return tp_cli_usage_error(
				"model", "--%s applies to 'tagplan model gpt' "
					 "only, not to %s",
				o, src);
		}
	}
	{
		const struct tp_cli_file ins[] = {
			{"hf:", strncmp(src, "hf:", 3) ? NULL : src + 3},
			{NULL, NULL}};
		const struct tp_cli_file outs[] = {{"-o", a->out},
						   {NULL, NULL}};
		int code = tp_cli_json_output("model", "-o", a->out,
					      "the model file", NULL);
		if (!code)
			code = tp_cli_check_outputs("model", ins, outs);
		if (code)
			return code;
	}
	if (a->name && tp_io_name_bad_char(a->name, &bad))
		return tp_cli_usage_error(
			"model",
			"--name: the name contains the control "
			"character U+%04X; names are printable text",
			bad);
	/* the model reader's limit: a longer name wrote a file that
	   validate and every command then refused */
	if (a->name && strlen(a->name) > TP_IO_NAME_MAX)
		return tp_cli_usage_error("model",
					  "--name: %zu bytes; a name has at "
					  "most %d",
					  strlen(a->name), TP_IO_NAME_MAX);
	return 0;
}

/* SOURCE names a file: an HF config given without "hf:", or a tagplan
 * model file (which needs no building).  Exit 2. */
static int source_is_file(const char *src)
{
	struct tp_error err;
	char *data = NULL;
	size_t len = 0;
	bool model;

	tp_error_clear(&err);
	model = tp_file_read(src, 0, &data, &len, &err) == TP_OK &&
		tp_format_sniff(data, len) == TP_FORMAT_MODEL;
	free(data);
	if (model)
		return tp_cli_usage_error(
			"model",
			"SOURCE \"%s\" is already a tagplan model file: give "
			"it to plan or simulate with -m %s (SOURCE is gpt, "
			"hf:PATH/config.json or a zoo name)",
			src, src);
	return tp_cli_usage_error("model",
				  "SOURCE \"%s\" is a file: for a HuggingFace "
				  "config.json write hf:%s",
				  src, src);
}

/* hf:PATH where PATH is no file but a URL, a Hub id ("meta-llama/
 * Llama-2-7b-hf") or the name of a shipped model ("gpt2"): tagplan reads
 * local files only; say how to get the config, and name the shipped model
 * of that name (case and a "-hf" suffix aside) when there is one.  Exit 2
 * then, 0 otherwise (a missing file is the reader's error, exit 3). */
static int hf_not_local(const char *path)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t n = strlen(path), bl = strlen(base);
	char name[128], buf[4096], ship[200] = "";

	if (access(path, F_OK) == 0)
		return 0;
	if (!strncmp(path, "http://", 7) || !strncmp(path, "https://", 8))
		return tp_cli_usage_error(
			"model", "hf:%s: tagplan reads local files only: "
				 "download the config (curl -L -o config.json "
				 "'%s') and give hf:config.json",
			path, path);
	if (bl > 3 && !strcmp(base + bl - 3, "-hf"))
		bl -= 3;
	if (bl && bl < sizeof(name)) {
		for (size_t i = 0; i < bl; i++)
			name[i] = (char)tolower((unsigned char)base[i]);
		name[bl] = '\0';
		if (tp_inputs_shipped(name, true, buf, sizeof(buf)) != name)
			snprintf(ship, sizeof(ship),
				 "; or the shipped model: tagplan model %s",
				 name);
	}
	/* ORG/NAME: one slash, no ".json" */
	if (base != path && path[0] != '.' && path[0] != '/' &&
	    strchr(path, '/') == base - 1 && *base &&
	    (n < 5 || strcmp(path + n - 5, ".json") != 0))
		return tp_cli_usage_error(
			"model", "hf:%s: no such file; a HuggingFace Hub id? "
				 "tagplan reads local files only: download the "
				 "config (huggingface-cli download %s "
				 "config.json --local-dir DIR) and give "
				 "hf:DIR/config.json%s",
			path, path, ship);
	if (base == path && *ship)
		return tp_cli_usage_error(
			"model", "hf:%s: no such file; hf: takes a config.json "
				 "path%s",
			path, ship);
	return 0;
}

/* What SOURCE needs: gpt its dimensions, hf: a path, a shipped model
 * file no --dtype; sets a->ship.  Exit 2 (0 when all is well). */
static int check_source(struct model_args *a)
{
	const char *src = a->src;

	if (!strcmp(src, "gpt")) {
		struct tp_strbuf miss;
		int code = 0;

		tp_strbuf_init(&miss);
		for (int i = 0; i < N_DIMS; i++)
			if (!a->opts[i].seen)
				tp_strbuf_addf(&miss, " --%s",
					       a->opts[i].name);
		if (miss.len)
			code = tp_cli_usage_error("model",
						  "'model gpt' needs%s",
						  tp_strbuf_cstr(&miss));
		tp_strbuf_release(&miss);
		return code;
	}
	if (!strncmp(src, "hf:", 3))
		return src[3] ? hf_not_local(src + 3)
			      : tp_cli_usage_error(
					"model", "hf: needs a path, e.g. "
						 "hf:llama/config.json");
	if (!known_source(src) && access(src, F_OK) == 0)
		return source_is_file(src);
	if (zoo_name(src) ||
	    tp_inputs_shipped(src, true, a->sbuf, sizeof(a->sbuf)) == src)
		return 0;
	/* a model file that ships (data/models/NAME.json, built from an HF
	   config): its costs are fixed, its batch is not */
	a->ship = a->sbuf;
	if (a->dtype >= 0)
		return tp_cli_usage_error(
			"model",
			"--dtype: %s is a shipped model file (%s) of "
			"its own dtype; build from its HF config "
			"(hf:PATH) to choose another",
			src, a->ship);
	return 0;
}

static enum tp_status build_from_dims(const struct model_args *a,
				      struct tp_model *m, struct tp_error *err)
{
	struct tp_gpt_dims d;

	tp_gpt_dims_default(&d);
	d.hidden = a->hidden;
	d.layers = a->layers;
	d.heads = a->heads;
	d.seq = a->seq;
	d.vocab = a->vocab;
	d.batch = a->batch;
	d.ffn = a->ffn;
	d.kv_heads = a->kv;
	if (a->dtype >= 0)
		d.dtype = (enum tp_dtype)a->dtype;
	d.name = a->name;
	return tp_build_gpt(&d, m, err);
}

/* The SOURCE nearest to an unknown src (gpt, a zoo name or a name in
 * shipped, ", "-separated) within an edit distance of 2, into out; false
 * if none is that near. */
static bool near_source(const char *src, const char *shipped, char *out,
			size_t size)
{
	size_t bd = 3;
	char name[256];

	out[0] = '\0';
	for (int i = -1; i < 0 || tp_zoo_names[i]; i++) {
		const char *n = i < 0 ? "gpt" : tp_zoo_names[i];
		size_t d = tp_edit_distance(src, n, 2);
		if (d < bd) {
			bd = d;
			snprintf(out, size, "%s", n);
		}
	}
	for (const char *p = shipped; p && *p;) {
		size_t len = strcspn(p, ",");
		size_t d;
		snprintf(name, sizeof(name), "%.*s",
			 (int)(len < sizeof(name) ? len : sizeof(name) - 1),
			 p);
		d = tp_edit_distance(src, name, 2);
		if (d < bd) {
			bd = d;
			snprintf(out, size, "%s", name);
		}
		p += len;
		p += strspn(p, ", ");
	}
	return bd <= 2;
}

/* A zoo entry; an unknown name also lists the shipped model files and
 * names the nearest SOURCE. */
static enum tp_status build_from_zoo(const struct model_args *a,
				     struct tp_model *m, struct tp_error *err)
{
	enum tp_status st = tp_build_zoo(a->src, a->batch, a->dtype, m, err);

	if (st == TP_EUSAGE && !zoo_name(a->src)) {
		struct tp_strbuf list;
		char msg[TP_ERROR_MSG_MAX], near[256], hint[300] = "";
		const char *semi;
		int head;

		tp_strbuf_init(&list);
		tp_inputs_list_shipped(true, &list);
		snprintf(msg, sizeof(msg), "%s", err->msg);
		if (near_source(a->src, tp_strbuf_cstr(&list), near,
				sizeof(near)))
			snprintf(hint, sizeof(hint), " (did you mean %s?)",
				 near);
		/* the hint goes after 'unknown model "NAME"' */
		semi = strchr(msg, ';');
		head = semi ? (int)(semi - msg) : (int)strlen(msg);
		if (list.len)
			tp_error_set(err, TP_EUSAGE,
				     "%.*s%s%.700s; or a shipped model "
				     "file: %s",
				     head, msg, hint, msg + head,
				     tp_strbuf_cstr(&list));
		else
			tp_error_set(err, TP_EUSAGE, "%.*s%s%.700s", head, msg,
				     hint, msg + head);
		tp_strbuf_release(&list);
	}
	return st;
}

static enum tp_status build(const struct model_args *a, struct tp_model *m,
			    struct tp_error *err)
{
	enum tp_status st;

	if (!strcmp(a->src, "gpt"))
		return build_from_dims(a, m, err);
	if (!strncmp(a->src, "hf:", 3)) {
		struct tp_strbuf w;
		struct tp_hf_options ho = {a->seq, a->batch, a->dtype, &w};

		tp_strbuf_init(&w);
		st = tp_build_hf_opts(a->src + 3, &ho, m, err);
		if (!st)
			tp_cli_print_warnings("model", &w);
		tp_strbuf_release(&w);
		return st;
	}
	if (!a->ship)
		return build_from_zoo(a, m, err);
	st = tp_model_load_file(a->ship, NULL, m, err);
	if (!st && a->batch > 0)
		m->global_batch = a->batch;
	if (!st && !a->quiet)
		fprintf(stderr, "tagplan model: %s: the shipped %s\n", a->src,
			a->ship);
	return st;
}

/* --name, the file (or stdout) and the figures on stderr. */
static enum tp_status write_model(const struct model_args *a,
				  struct tp_model *m, struct tp_error *err)
{
	const char *out = a->out;
	struct tp_strbuf sb;
	enum tp_status st;
	char active[64] = "";

	if (a->name && strcmp(a->src, "gpt") != 0) {
		const char *n = tp_arena_strdup(&m->arena, a->name);
		if (n)
			m->name = n;
	}
	tp_strbuf_init(&sb);
	tp_model_write(m, &sb);
	if (sb.failed)
		st = tp_error_set(err, TP_ENOMEM, "out of memory");
	else
		st = tp_file_write_atomic(out ? out : "-", sb.buf, sb.len, err);
	tp_strbuf_release(&sb);
	if (st || a->quiet)
		return st;
	if (tp_model_active_parameters(m) >= 0)
		snprintf(active, sizeof(active), ", %.4g B active",
			 tp_model_active_parameters(m) / 1e9);
	fprintf(stderr,
		"tagplan model: %s: %.0f parameters (%.4g B%s), %.6g "
		"forward FLOP per sample, %zu ops, global batch "
		"%lld%s%s\n",
		m->name, tp_model_parameters(m), tp_model_parameters(m) / 1e9,
		active, m->total_flop, m->ops.n, (long long)m->global_batch,
		out ? " -> " : "", out ? out : "");
	return TP_OK;
}

int cmd_model(int argc, char **argv)
{
	struct model_args *a = calloc(1, sizeof(*a));
	struct tp_model m;
	struct tp_error err;
	int code;

	if (!a) {
		fprintf(stderr, "tagplan model: out of memory\n");
		return TP_EXIT_FAILURE;
	}
	if (parse_args(a, argc, argv, &code) ||
	    (code = check_options(a)) != 0 || (code = check_source(a)) != 0) {
		free(a);
		return code;
	}
	tp_model_init(&m);
	tp_error_clear(&err);
	code = build(a, &m, &err) || write_model(a, &m, &err)
		       ? tp_cli_fail(&err)
		       : TP_EXIT_OK;
	tp_model_release(&m);
	free(a);
	return code;
}
