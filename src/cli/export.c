/*
 * export.c - `tagplan export`: a plan as launcher arguments or config.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "io/io.h"
#include "export/export.h"
#include "inputs.h"

static const char usage[] =
	"-p PLAN --to megatron|deepspeed|torchrun [-m MODEL]\n"
	"                      [-t TOPO] [-o FILE] [--script NAME]";

static const char about[] =
	"Turn a plan into what a training launcher takes:\n"
	"  megatron   Megatron-LM arguments, one \"--flag value\" per line\n"
	"             (ARGS=$(tagplan export ...); python pretrain_gpt.py "
	"$ARGS)\n"
	"  deepspeed  a DeepSpeed config (JSON)\n"
	"  torchrun   a torchrun command (nnodes, nproc_per_node) running\n"
	"             --script with the Megatron-LM arguments\n"
	"Only plans these frameworks can express are exported: one tensor- and\n"
	"data-parallel degree for all layers, even batch shares, equal layers "
	"per\n"
	"pipeline chunk, devices in Megatron's rank order, no parameter server\n"
	"and no gradient compression.  Otherwise the command says which part "
	"of\n"
	"the plan cannot be expressed and exits 1.  Notes on what the output\n"
	"leaves to the model code go to stderr.  Without -m/-t the files\n"
	"`tagplan plan` recorded in the plan are used (found as given, or next\n"
	"to the plan; the shipped demo model and TAG testbed for plans of the\n"
	"demo); stderr says which.";

static void print_lines(const char *prefix, struct tp_strbuf *w)
{
	const char *s = tp_strbuf_cstr(w);

	while (*s) {
		const char *nl = strchr(s, '\n');
		int n = nl ? (int)(nl - s) : (int)strlen(s);
		if (n) {
			fprintf(stderr, "tagplan export: %s", prefix);
			tp_cli_escape(stderr, s, (size_t)n, false);
			fputc('\n', stderr);
		}
		s += n + (nl ? 1 : 0);
	}
	tp_strbuf_reset(w);
}

int cmd_export(int argc, char **argv)
{
	const char *plan = NULL, *model = NULL, *topo = NULL, *to = NULL,
		   *out = "-", *script = NULL;
	struct tp_opt opts[] = {
		{"plan", 'p', TP_OPT_STRING, &plan, "PLAN",
		 "plan file; - reads stdin", 0, 0, false},
		{"model", 'm', TP_OPT_STRING, &model, "MODEL",
		 "the model the plan was made for [the one recorded in the "
		 "plan]",
		 0, 0, false},
		{"topology", 't', TP_OPT_STRING, &topo, "TOPO",
		 "the topology the plan was made for [the one recorded in "
		 "the plan]",
		 0, 0, false},
		{"to", 0, TP_OPT_STRING, &to, "TARGET",
		 "megatron, deepspeed or torchrun", 0, 0, false},
		{"output", 'o', TP_OPT_STRING, &out, "FILE",
		 "write here (atomically) instead of stdout", 0, 0, false},
		{"script", 0, TP_OPT_STRING, &script, "NAME",
		 "training script torchrun runs [pretrain_gpt.py]", 0, 0,
		 false},
		{NULL, 0, TP_OPT_FLAG, NULL, NULL, NULL, 0, 0, false}};
	struct tp_inputs in;
	struct tp_export_spec spec;
	struct tp_strbuf warn, text;
	struct tp_error err;
	int code, target;

	if (tp_opts_parse("export", usage, about, opts, argc, argv, NULL, NULL,
			  &code))
		return code;
	if (!plan || !to)
		return tp_cli_usage_error("export",
					  "-p PLAN and --to TARGET are required");
	if ((target = tp_export_target_parse(to)) < 0)
		return tp_cli_usage_error("export",
					  "--to %s: expected megatron, "
					  "deepspeed or torchrun",
					  to);
	tp_error_clear(&err);
	tp_strbuf_init(&warn);
	tp_strbuf_init(&text);
	tp_inputs_init(&in);
	if (tp_inputs_load(&in, plan, model, topo, &warn, &err) != TP_OK)
		goto fail;
	{
		struct tp_strbuf used;
		tp_strbuf_init(&used);
		tp_inputs_describe(&in, &used);
		if (used.len)
			fprintf(stderr, "tagplan export: %s", tp_strbuf_cstr(&used));
		tp_strbuf_release(&used);
	}
	print_lines("warning: ", &warn);
	{
		const struct tp_cli_file ins[] = {{"-m", in.model_path},
						  {"-t", in.topology_path},
						  {"-p", plan},
						  {NULL, NULL}};
		const struct tp_cli_file outs[] = {{"-o", out}, {NULL, NULL}};
		if (tp_cli_check_outputs("export", ins, outs)) {
			code = TP_EXIT_USAGE;
			goto done;
		}
	}
	if (tp_export_analyze(&in.plan, &in.model, &in.cluster, &spec,
			      &err) != TP_OK ||
	    tp_export_write(&spec, (enum tp_export_target)target, script,
			    &text, &warn, &err) != TP_OK)
		goto refuse;
	if (tp_file_write_atomic(out, tp_strbuf_cstr(&text), text.len, &err) !=
	    TP_OK)
		goto fail;
	print_lines("note: ", &warn);
	code = TP_EXIT_OK;
	goto done;
refuse:
	if (err.status == TP_EINFEASIBLE) {
		fprintf(stderr,
			"tagplan export: %s cannot express this plan: %s\n",
			tp_export_target_name((enum tp_export_target)target),
			err.msg);
		code = TP_EXIT_CHECK;
		goto done;
	}
fail:
	print_lines("warning: ", &warn);
	code = tp_cli_fail(&err);
done:
	tp_inputs_release(&in);
	tp_strbuf_release(&warn);
	tp_strbuf_release(&text);
	return code;
}
