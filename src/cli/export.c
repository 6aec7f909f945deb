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
	"-p PLAN [--to megatron|deepspeed|torchrun|torchtitan]\n"
	"                      [-m MODEL] [-t TOPO] [-o FILE] [--script NAME]\n"
	"       tagplan export -s STRATEGY -m MODEL -t TOPO [--to TARGET]\n"
	"                      [-o FILE] [--script NAME]";

static const char about[] =
	"Turn a plan into the launch configuration of the runtime it was made\n"
	"for (`tagplan plan --runtime`, recorded in the plan):\n"
	"  megatron    Megatron-LM arguments, one \"--flag value\" per line\n"
	"              (ARGS=$(tagplan export ...); python pretrain_gpt.py "
	"$ARGS)\n"
	"  deepspeed   a DeepSpeed config (JSON); the Megatron-DeepSpeed launch\n"
	"              line on stderr (\"tagplan export: launch: deepspeed ...\")\n"
	"  torchrun    a torchrun command running --script (Megatron's\n"
	"              pretrain_gpt.py, or a DDP plan's train.py)\n"
	"  torchtitan  a TorchTitan job config (.toml)\n"
	"--to defaults to the runtime's launcher; another target is refused\n"
	"(torchrun also runs Megatron).  A plan made for no runtime (--runtime\n"
	"none) exports to a target if the runtime that target stands for\n"
	"(megatron-core, deepspeed, megatron-core, fsdp2) can execute it.  The\n"
	"output builds the model that was simulated (its architecture flags)\n"
	"and runs it as simulated (degrees, layer layout, schedule, batch,\n"
	"recomputation, ZeRO, gradient overlap and bucket in the runtime's\n"
	"unit, the precision the devices have).  A plan the runtime cannot\n"
	"execute is refused with what it needs (exit 1).  Notes on what the\n"
	"output leaves to the model code go to stderr, and warnings where it\n"
	"will not run as simulated unless you act (-q keeps those, and the\n"
	"launch line).  Without -m/-t the files\n"
	"`tagplan plan` recorded in the plan are used (found as given, or next\n"
	"to the plan; the shipped demo model and TAG testbed for plans of the\n"
	"demo); stderr says which.\n"
	"-s STRATEGY exports a strategy string (tagplan simulate's, tagplan(1)\n"
	"STRATEGIES: e.g. a published run's degrees) on -m MODEL and -t TOPO\n"
	"instead of a plan: --to defaults to megatron (checked against\n"
	"megatron-core) and the runtime's gradient bucket; nothing is\n"
	"simulated (tagplan simulate -s ... --runtime megatron-core says\n"
	"whether it fits and how fast it runs).";

/* w's lines on stderr, each as "tagplan export: PREFIXline"; a line
 * tp_export_write marked as a warning (TP_EXPORT_WARNING) as
 * "tagplan export: warning: line" and the launch line (TP_EXPORT_LAUNCH)
 * as "tagplan export: launch: line" whatever prefix is, and a NULL
 * prefix (-q) drops the other lines: -q silences notes, never warnings
 * nor the command that starts the run. */
static void print_lines(const char *prefix, struct tp_strbuf *w)
{
	static const char *const kept[] = {TP_EXPORT_WARNING, TP_EXPORT_LAUNCH};
	const char *s = tp_strbuf_cstr(w);

	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s);
		const char *mark = NULL;

		for (size_t k = 0; k < sizeof(kept) / sizeof(kept[0]); k++)
			if (n >= strlen(kept[k]) &&
			    !strncmp(s, kept[k], strlen(kept[k])))
				mark = kept[k];
		if (n && (mark || prefix)) {
			const char *line = mark ? s + strlen(mark) : s;

			fprintf(stderr, "tagplan export: %s",
				mark ? mark : prefix);
			tp_cli_escape(stderr, line, n - (size_t)(line - s),
				      false);
			fputc('\n', stderr);
		}
		s += n + (nl ? 1 : 0);
	}
	tp_strbuf_reset(w);
}

/*
 * The runtime the plan is exported for and the target: the plan's
 * runtime and its launcher (another target must launch it too); a plan
 * of no runtime ("none" or not recorded) takes the profile the target
 * stands for, and needs --to (without it: a usage error, exit 2).
 * Returns 0, TP_EXIT_CHECK (a target the runtime does not launch: err
 * says so) or the exit code of bad usage or a bad runtime.
 */
static int export_runtime(const struct tp_plan *p, const char *plan_path,
			  int want, struct tp_runtime *rt, int *target,
			  struct tp_error *err)
{
	const char *name = p->runtime[0] ? p->runtime : "none";

	if (tp_runtime_find(name, rt, err))
		return tp_inputs_blame_runtime(plan_path, err)
			       ? tp_cli_exit_code(err)
			       : 0;
	if (tp_runtime_is_none(rt)) {
		if (want < 0) {
			tp_error_set(err, TP_EUSAGE,
				     "the plan was made for no runtime "
				     "(--runtime none): give --to TARGET, and "
				     "it is checked against the runtime that "
				     "target stands for");
			return tp_cli_exit_code(err);
		}
		*target = want;
		if (tp_runtime_find(tp_export_target_runtime(
					    (enum tp_export_target)want),
				    rt, err))
			return tp_cli_exit_code(err);
		return 0;
	}
	if (rt->can.launcher == TP_LAUNCH_NONE) {
		tp_error_set(err, TP_EINFEASIBLE,
			     "the plan was made for %s, which has no launch "
			     "configuration tagplan can write: re-plan with "
			     "--runtime megatron-core (or another shipped "
			     "stack) to export",
			     rt->name);
		return TP_EXIT_CHECK;
	}
	*target = want >= 0 ? want : (int)tp_export_target_of(rt);
	if (!tp_export_target_fits((enum tp_export_target)*target, rt)) {
		tp_error_set(err, TP_EINFEASIBLE,
			     "the plan was made for %s, which %s does not "
			     "launch: export --to %s, or re-plan with "
			     "--runtime %s",
			     rt->name,
			     tp_export_target_name((enum tp_export_target)*target),
			     tp_export_target_name(tp_export_target_of(rt)),
			     tp_export_target_runtime(
				     (enum tp_export_target)*target));
		return TP_EXIT_CHECK;
	}
	return 0;
}

/* --to TARGET (if given) into *target; 0 or the exit code of a usage
 * error naming the target meant: the target of the runtime it names
 * ("fsdp2" -> torchtitan, "megatron-core" -> megatron), else the nearest
 * name ("megatorn", "megatron-lm", "Deepspeed"). */
static int parse_target(const char *to, int *target)
{
	const char *names[TP_EXPORT_TARGET_COUNT], *near = NULL;

	if (!to || (*target = tp_export_target_parse(to)) >= 0)
		return 0;
	for (int i = 0; i < TP_EXPORT_TARGET_COUNT; i++) {
		names[i] = tp_export_target_name((enum tp_export_target)i);
		if (!near && strcmp(to, tp_export_target_runtime(
					       (enum tp_export_target)i)) == 0)
			near = names[i];
	}
	if (!near)
		near = tp_cli_near_name(to, names, TP_EXPORT_TARGET_COUNT);
	return tp_cli_bad_choice_meant("export", "--to", to, names,
				       TP_EXPORT_TARGET_COUNT, near);
}

/* -s: the model and topology files (shipped names too) into in, and the
 * strategy's plan; TP_EUSAGE for a strategy the model or cluster refuses
 * (a strategy is usage, not a file). */
static enum tp_status load_strategy(struct tp_inputs *in, const char *strategy,
				    const char *model, const char *topo,
				    struct tp_strbuf *warn,
				    struct tp_error *err)
{
	struct tp_load_options lo;
	char mship[1024], tship[1024];

	tp_load_options_default(&lo);
	lo.warnings = warn;
	if (tp_inputs_load_named(&model, mship, sizeof(mship), &lo,
				 &in->model, NULL, err) != TP_OK) {
		tp_inputs_hint_swap(model, topo, err);
		return err->status;
	}
	if (tp_inputs_load_named(&topo, tship, sizeof(tship), &lo, NULL,
				 &in->cluster, err) != TP_OK)
		return err->status;
	snprintf(in->model_path, sizeof(in->model_path), "%s", model);
	snprintf(in->topology_path, sizeof(in->topology_path), "%s", topo);
	return tp_inputs_strategy_plan(strategy, &in->model, &in->cluster,
				       &in->plan, err);
}

/* Which model and topology the plan was resolved against, on stderr. */
static void say_inputs(const struct tp_inputs *in)
{
	struct tp_strbuf used;

	tp_strbuf_init(&used);
	tp_inputs_describe(in, &used);
	if (used.len)
		fprintf(stderr, "tagplan export: %s", tp_strbuf_cstr(&used));
	tp_strbuf_release(&used);
}

int cmd_export(int argc, char **argv)
{
	const char *plan = NULL, *model = NULL, *topo = NULL, *to = NULL,
		   *out = "-", *script = NULL, *strategy = NULL;
	bool quiet = false;
	struct tp_opt opts[] = {
		{"plan", 'p', TP_OPT_STRING, &plan, "PLAN",
		 "plan file; - reads stdin", 0, 0, false},
		{"strategy", 's', TP_OPT_STRING, &strategy, "STRATEGY",
		 "a strategy string instead of a plan (needs -m and -t)", 0, 0,
		 false},
		{"model", 'm', TP_OPT_STRING, &model, "MODEL",
		 "the model the plan was made for [the one recorded in the "
		 "plan]",
		 0, 0, false},
		{"topology", 't', TP_OPT_STRING, &topo, "TOPO",
		 "the topology the plan was made for [the one recorded in "
		 "the plan]",
		 0, 0, false},
		{"to", 0, TP_OPT_STRING, &to, "TARGET",
		 "megatron, deepspeed, torchrun or torchtitan [the plan's "
		 "runtime's launcher]",
		 0, 0, false},
		{"output", 'o', TP_OPT_STRING, &out, "FILE",
		 "write here (atomically) instead of stdout", 0, 0, false},
		{"script", 0, TP_OPT_STRING, &script, "NAME",
		 "training script torchrun runs [pretrain_gpt.py; train.py "
		 "for a DDP plan]",
		 0, 0, false},
		{"quiet", 'q', TP_OPT_FLAG, &quiet, NULL,
		 "no notes on stderr (warnings, the launch line and errors "
		 "still print)",
		 0, 0,
		 false},
		{NULL, 0, TP_OPT_FLAG, NULL, NULL, NULL, 0, 0, false}};
	struct tp_inputs in;
	struct tp_export_spec spec;
	struct tp_runtime rt;
	struct tp_strbuf warn, text;
	struct tp_error err;
	int code, target = -1;

	memset(&spec, 0, sizeof(spec));
	tp_runtime_none(&rt);

	if (tp_opts_parse(&(struct tp_cli_doc){"export", usage, about}, opts,
			  argc, argv, NULL, NULL, &code))
		return code;
	if (!plan == !strategy)
		return tp_cli_usage_error("export",
					  "give -p PLAN or -s STRATEGY (one of "
					  "them)");
	if (strategy && (!model || !topo))
		return tp_cli_usage_error("export",
					  "-s STRATEGY needs -m MODEL and -t "
					  "TOPO");
	if ((code = parse_target(to, &target)))
		return code;
	tp_error_clear(&err);
	tp_strbuf_init(&warn);
	tp_strbuf_init(&text);
	tp_inputs_init(&in);
	if (strategy) {
		if (load_strategy(&in, strategy, model, topo, &warn, &err) !=
		    TP_OK)
			goto fail;
		if (!to)
			target = TP_EXPORT_MEGATRON;
	} else if (tp_inputs_load(&in, plan, model, topo, &warn, &err) !=
		   TP_OK) {
		goto fail;
	}
	if (plan && !quiet)
		say_inputs(&in);
	print_lines("warning: ", &warn);
	if (in.plan.summary.valid && !in.plan.summary.feasible)
		fprintf(stderr,
			"tagplan export: warning: the exported run would run "
			"out of memory: when it was made, the plan did not fit "
			"(%s); tagplan simulate -p PLAN re-checks it\n",
			in.plan.summary.infeasible_reason[0]
				? in.plan.summary.infeasible_reason
				: "its summary gives no reason");
	{
		const struct tp_cli_file ins[] = {{"-m", in.model_path},
						  {"-t", in.topology_path},
						  {"-p", plan},
						  {NULL, NULL}};
		const struct tp_cli_file outs[] = {{"-o", out}, {NULL, NULL}};
		if ((code = tp_cli_check_outputs("export", ins, outs)))
			goto done;
	}
	if ((code = export_runtime(&in.plan, plan, to || strategy ? target : -1,
				   &rt, &target, &err)) != 0)
		goto refused;
	/* a strategy runs with the runtime's gradient bucket, as tagplan
	   simulate -s --runtime simulates it */
	if (strategy && rt.behaviour.grad_bucket_bytes > 0)
		in.plan.grad_bucket_bytes = rt.behaviour.grad_bucket_bytes;
	/* ... and reduces as the runtime's collectives do unless the string
	   names sync=: the string's own default (hierarchical whenever a
	   replica set spans nodes) made every such export note that 'the
	   plan synchronises gradients otherwise ... not as simulated', of a
	   strategy nothing simulated */
	if (strategy && !strstr(strategy, "sync="))
		for (uint32_t g = 0; g < in.plan.groups.n; g++)
			in.plan.groups.v[g].sync = tp_runtime_sync(
				&in.cluster, tp_plan_group_devs(&in.plan, g),
				in.plan.groups.v[g].n_devices,
				in.plan.groups.v[g].tp);
	if (tp_export_analyze(&in.plan, &in.model, &in.cluster, &rt, &spec,
			      &err) != TP_OK)
		goto refuse;
	/* the launch line names the config file -o writes */
	spec.config_path = strcmp(out, "-") ? out : NULL;
	if (tp_export_write(&spec, (enum tp_export_target)target, script,
			    &text, &warn, &err) != TP_OK)
		goto refuse;
	if (tp_file_write_atomic(out, tp_strbuf_cstr(&text), text.len, &err) !=
	    TP_OK)
		goto fail;
	print_lines(quiet ? NULL : "note: ", &warn);
	code = TP_EXIT_OK;
	goto done;
refuse:
	if (err.status == TP_EINFEASIBLE) {
		fprintf(stderr,
			"tagplan export: %s (runtime %s) cannot express this "
			"plan: %s\n",
			tp_export_target_name((enum tp_export_target)target),
			rt.name, err.msg);
		code = TP_EXIT_CHECK;
		goto done;
	}
	goto fail;
refused:
	if (code == TP_EXIT_CHECK) {
		fprintf(stderr, "tagplan export: %s\n", err.msg);
		goto done;
	}
fail:
	print_lines("warning: ", &warn);
	code = tp_cli_fail(&err);
done:
	tp_export_spec_release(&spec);
	tp_inputs_release(&in);
	tp_strbuf_release(&warn);
	tp_strbuf_release(&text);
	return code;
}
