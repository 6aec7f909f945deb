/*
 * model.c - `tagplan model SOURCE [OPTIONS] [-o MODEL]`: build a model file
 * from GPT dimensions, a HuggingFace config.json or a zoo name
 * (src/io/build.h).  The model goes to -o (atomically) or stdout; its
 * parameter count and forward FLOP per sample (the figures `tagplan
 * inspect` reports) go to stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/strbuf.h"
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
		"other non-training\n"
		"                       types need --dtype).  MoE models also "
		"report the\n"
		"                       parameters active per token.\n"
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

int cmd_model(int argc, char **argv)
{
	long long hidden = 0, layers = 0, heads = 0, seq = 0, vocab = 0,
		  batch = 0, ffn = 0, kv = 0;
	const char *dtype_s = NULL, *out = NULL, *name = NULL;
	struct tp_opt opts[] = {
		{"hidden", 0, TP_OPT_INT, &hidden, "H",
		 "gpt: hidden size", 1, 1 << 20, false},
		{"layers", 0, TP_OPT_INT, &layers, "L",
		 "gpt: transformer blocks", 1, 1 << 16, false},
		{"heads", 0, TP_OPT_INT, &heads, "A",
		 "gpt: attention heads (must divide H)", 1, 1 << 16, false},
		{"seq", 0, TP_OPT_INT, &seq, "S",
		 "sequence length, tokens per sample (gpt, hf)", 1, 1 << 26,
		 false},
		{"vocab", 0, TP_OPT_INT, &vocab, "V", "gpt: vocabulary size", 1,
		 1 << 28, false},
		{"batch", 0, TP_OPT_INT, &batch, "B",
		 "global batch size, samples (at most 2^28, as the formats)",
		 1, 268435456.0, false},
		{"ffn", 0, TP_OPT_INT, &ffn, "F",
		 "gpt: MLP width (default 4 x H)", 1, 1 << 24, false},
		{"kv-heads", 0, TP_OPT_INT, &kv, "K",
		 "gpt: key/value heads, grouped-query attention (default A)",
		 1, 1 << 16, false},
		{"dtype", 0, TP_OPT_STRING, &dtype_s, "bf16|fp16|fp32|fp8",
		 "parameter and activation type (fp8: Transformer "
		 "Engine hybrid FP8 GEMMs, bf16 elsewhere) [gpt: bf16; hf: the "
		 "config's torch_dtype, else bf16; zoo: the entry's]",
		 0, 0, false},
		{"name", 0, TP_OPT_STRING, &name, "NAME",
		 "the model's name (default from the source)", 0, 0, false},
		{"output", 'o', TP_OPT_STRING, &out, "MODEL",
		 "write the model here (atomically) instead of stdout", 0, 0,
		 false},
		{0}};
	struct tp_strbuf about, sb;
	struct tp_model m;
	struct tp_error err;
	enum tp_status st;
	char **pos = NULL;
	int npos = 0, code, dtype = -1;
	const char *src, *ship;
	char sbuf[2048];

	tp_strbuf_init(&about);
	about_text(&about);
	if (tp_opts_parse("model", usage, tp_strbuf_cstr(&about), opts, argc,
			  argv, &pos, &npos, &code)) {
		tp_strbuf_release(&about);
		return code;
	}
	tp_strbuf_release(&about);
	if (npos != 1) {
		if (npos)
			code = tp_cli_usage_error(
				"model", "expected one SOURCE, got %d arguments",
				npos);
		else
			code = tp_cli_usage_error(
				"model", "missing SOURCE: gpt, "
					 "hf:PATH/config.json or a zoo name "
					 "(resnet50, vgg19, bert-large, ...)");
		free(pos);
		return code;
	}
	src = pos[0];
	free(pos);
	if (dtype_s && (dtype = tp_dtype_parse(dtype_s)) < 0)
		return tp_cli_usage_error("model",
					  "--dtype expects bf16, fp16, fp32 or "
					  "fp8, "
					  "not \"%s\"",
					  dtype_s);
	if (strcmp(src, "gpt") != 0) {
		/* options that only make sense for dimensions */
		for (int i = 0; i < 8; i++) {
			const char *o = opts[i].name;
			if (!opts[i].seen || !strcmp(o, "batch") ||
			    (!strcmp(o, "seq") && !strncmp(src, "hf:", 3)))
				continue;
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
		const struct tp_cli_file outs[] = {{"-o", out}, {NULL, NULL}};
		if (tp_cli_check_outputs("model", ins, outs))
			return TP_EXIT_USAGE;
	}
	{
		unsigned bad;
		if (name && tp_io_name_bad_char(name, &bad))
			return tp_cli_usage_error(
				"model",
				"--name: the name contains the control "
				"character U+%04X; names are printable text",
				bad);
	}
	tp_model_init(&m);
	tp_error_clear(&err);
	if (!strcmp(src, "gpt")) {
		struct tp_gpt_dims d;
		struct tp_strbuf miss;
		tp_strbuf_init(&miss);
		for (int i = 0; i < 6; i++)
			if (!opts[i].seen)
				tp_strbuf_addf(&miss, " --%s", opts[i].name);
		if (miss.len) {
			code = tp_cli_usage_error(
				"model", "'model gpt' needs%s",
				tp_strbuf_cstr(&miss));
			tp_strbuf_release(&miss);
			return code;
		}
		tp_strbuf_release(&miss);
		tp_gpt_dims_default(&d);
		d.hidden = hidden;
		d.layers = layers;
		d.heads = heads;
		d.seq = seq;
		d.vocab = vocab;
		d.batch = batch;
		d.ffn = ffn;
		d.kv_heads = kv;
		if (dtype >= 0)
			d.dtype = (enum tp_dtype)dtype;
		d.name = name;
		st = tp_build_gpt(&d, &m, &err);
	} else if (!strncmp(src, "hf:", 3)) {
		if (!src[3])
			return tp_cli_usage_error(
				"model", "hf: needs a path, e.g. "
					 "hf:llama/config.json");
		st = tp_build_hf(src + 3, seq, batch, dtype, &m, &err);
	} else if (!zoo_name(src) &&
		   (ship = tp_inputs_shipped(src, true, sbuf, sizeof(sbuf))) !=
			   src) {
		/* a model file that ships (data/models/NAME.json, built from
		   an HF config): its costs are fixed, its batch is not */
		if (dtype >= 0)
			return tp_cli_usage_error(
				"model",
				"--dtype: %s is a shipped model file (%s) of "
				"its own dtype; build from its HF config "
				"(hf:PATH) to choose another",
				src, ship);
		st = tp_model_load_file(ship, NULL, &m, &err);
		if (!st && batch > 0)
			m.global_batch = batch;
		if (!st)
			fprintf(stderr, "tagplan model: %s: the shipped %s\n",
				src, ship);
	} else {
		st = tp_build_zoo(src, batch, dtype, &m, &err);
		if (st == TP_EUSAGE && !zoo_name(src)) {
			struct tp_strbuf list;
			tp_strbuf_init(&list);
			tp_inputs_list_shipped(true, &list);
			if (list.len) {
				char msg[TP_ERROR_MSG_MAX];
				snprintf(msg, sizeof(msg), "%s", err.msg);
				tp_error_set(&err, TP_EUSAGE,
					     "%.700s; or a shipped model "
					     "file: %s",
					     msg, tp_strbuf_cstr(&list));
			}
			tp_strbuf_release(&list);
		}
	}
	if (st)
		return tp_cli_fail(&err);
	if (name && strcmp(src, "gpt") != 0) {
		const char *n = tp_arena_strdup(&m.arena, name);
		if (n)
			m.name = n;
	}
	tp_strbuf_init(&sb);
	tp_model_write(&m, &sb);
	if (sb.failed) {
		tp_error_set(&err, TP_ENOMEM, "out of memory");
		st = TP_ENOMEM;
	} else {
		st = tp_file_write_atomic(out ? out : "-", sb.buf, sb.len,
					  &err);
	}
	tp_strbuf_release(&sb);
	if (!st) {
		char active[64] = "";
		if (tp_model_active_parameters(&m) >= 0)
			snprintf(active, sizeof(active), ", %.4g B active",
				 tp_model_active_parameters(&m) / 1e9);
		fprintf(stderr,
			"tagplan model: %s: %.0f parameters (%.4g B%s), %.6g "
			"forward FLOP per sample, %zu ops, global batch "
			"%lld%s%s\n",
			m.name, tp_model_parameters(&m),
			tp_model_parameters(&m) / 1e9, active, m.total_flop,
			m.ops.n, (long long)m.global_batch, out ? " -> " : "",
			out ? out : "");
	}
	tp_model_release(&m);
	return st ? tp_cli_fail(&err) : TP_EXIT_OK;
}
