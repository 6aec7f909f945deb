/*
 * render.c - `tagplan render`: draw a plan's device mapping.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/report.h"
#include "inputs.h"
#include "io/io.h"
#include "render/render.h"

static const char usage[] =
	"-p PLAN [-m MODEL] [-t TOPO] -o FILE|-\n"
	"                      [--format dot|svg|png|pdf] "
	"[--collapse auto|always|never]\n"
	"                      [--no-simulate] [--title TEXT]";

static const char about[] =
	"Draw the plan's device mapping with Graphviz: one box per node with "
	"its\n"
	"devices (coloured by type, labelled with memory and busy %), the "
	"pipeline\n"
	"stages attached to their devices, links labelled with bandwidth and "
	"the\n"
	"bytes the plan moves over them per iteration, the bottleneck in red.\n"
	"The plan is re-simulated for these figures (--no-simulate: use the "
	"plan's\n"
	"summary; no link traffic then).  Above 64 devices identical nodes "
	"and\n"
	"devices are drawn once with a count.  The format comes from the "
	"extension\n"
	"of -o (.dot .svg .png .pdf) or --format; -o - writes DOT to stdout "
	"(pipe it\n"
	"into `dot -Tsvg`).  SVG/PNG/PDF are laid out in-process; when "
	"Graphviz's\n"
	"plugins are not configured the DOT is written instead, with a "
	"warning.\n"
	"Without -m/-t the files `tagplan plan` recorded in the plan are "
	"used (found\n"
	"as given, or next to the plan; the shipped demo model and TAG "
	"testbed for\n"
	"plans of the demo); stderr says which.";

/* --title with a control character (an escape, a tab from a script)
 * made an SVG that XML readers refuse: printable text, as names. */
static int title_text(const char *title)
{
	unsigned bad;

	if (!title || !tp_io_name_bad_char(title, &bad))
		return 0;
	return tp_cli_usage_error("render",
				  "--title: the text contains the control "
				  "character U+%04X; give printable text",
				  bad);
}

/* PNG or PDF to standard output that is a terminal garbles it (curl
 * refuses the same): the usage error's exit code, else 0. */
static int binary_on_terminal(const char *out, int fmt, const char *format)
{
	if ((fmt != TP_RENDER_PNG && fmt != TP_RENDER_PDF) ||
	    !tp_file_same_output(out, "-") || !isatty(STDOUT_FILENO))
		return 0;
	return tp_cli_usage_error("render",
				  "--format %s -o %s would write binary %s to "
				  "the terminal: redirect it (> plan.%s), or "
				  "give -o plan.%s",
				  format, out,
				  fmt == TP_RENDER_PNG ? "PNG" : "PDF", format,
				  format);
}

int cmd_render(int argc, char **argv)
{
	static const char *const formats[] = {"dot", "svg", "png", "pdf"},
				 *const collapses[] = {"auto", "always",
						       "never"};
	const char *plan = NULL, *model = NULL, *topo = NULL, *out = NULL,
		   *format = NULL, *collapse = "auto", *title = NULL;
	bool no_sim = false, quiet = false;
	struct tp_opt opts[] = {
		{"plan", 'p', TP_OPT_STRING, &plan, "PLAN",
		 "plan file (tagplan-plan/1); - reads stdin", 0, 0, false},
		{"model", 'm', TP_OPT_STRING, &model, "MODEL",
		 "the model the plan was made for [the one recorded in the "
		 "plan]",
		 0, 0, false},
		{"topology", 't', TP_OPT_STRING, &topo, "TOPO",
		 "the topology the plan was made for [the one recorded in "
		 "the plan]",
		 0, 0, false},
		{"output", 'o', TP_OPT_STRING, &out, "FILE",
		 "picture to write: .dot .svg .png .pdf, or - (DOT on stdout)",
		 0, 0, false},
		{"format", 0, TP_OPT_STRING, &format, "FMT",
		 "dot, svg, png or pdf (default: from -o's extension)", 0, 0,
		 false},
		{"collapse", 0, TP_OPT_STRING, &collapse, "MODE",
		 "auto (above 64 devices), always or never", 0, 0, false},
		{"no-simulate", 0, TP_OPT_FLAG, &no_sim, NULL,
		 "label from the plan's summary, do not re-simulate", 0, 0,
		 false},
		{"title", 0, TP_OPT_STRING, &title, "TEXT",
		 "title of the picture (default: model on topology)", 0, 0,
		 false},
		{"quiet", 'q', TP_OPT_FLAG, &quiet, NULL, TP_CLI_QUIET_HELP, 0,
		 0, false},
		{NULL, 0, TP_OPT_FLAG, NULL, NULL, NULL, 0, 0, false}};
	struct tp_inputs in;
	struct tp_inputs_sim sim;
	struct tp_report report;
	struct tp_render_options ro;
	struct tp_render_input pic;
	struct tp_strbuf warn;
	struct tp_error err;
	char written[4096];
	int code, fmt = -1;
	bool have_report = false;

	if (tp_opts_parse(&(struct tp_cli_doc){"render", usage, about}, opts,
			  argc, argv, NULL, NULL, &code))
		return code;
	if (!plan)
		return tp_cli_usage_error("render", "-p PLAN is required (the "
						    "plan file to draw)");
	if (!out)
		return tp_cli_usage_error("render",
					  "-o FILE is required (.dot .svg .png "
					  ".pdf, or - for DOT on stdout)");
	if (format && (fmt = tp_render_format_parse(format)) < 0)
		return tp_cli_bad_choice("render", "--format", format, formats,
					 4);
	if (fmt >= 0 && strcmp(out, "-") != 0 &&
	    tp_render_format_from_path(out) >= 0 &&
	    tp_render_format_from_path(out) != fmt)
		return tp_cli_usage_error(
			"render",
			"-o %s says %s but --format says %s: give one, or "
			"make them agree",
			out,
			tp_render_format_name((enum tp_render_format)
						      tp_render_format_from_path(
							      out)),
			format);
	if (fmt < 0 && strcmp(out, "-") != 0 &&
	    tp_render_format_from_path(out) < 0)
		return tp_cli_usage_error("render",
					  "-o %s: cannot tell the format from "
					  "the name; use .dot, .svg, .png or "
					  ".pdf, or --format",
					  out);
	if ((code = binary_on_terminal(out, fmt, format)) ||
	    (code = title_text(title)))
		return code;
	tp_render_options_default(&ro);
	ro.title = title;
	if (strcmp(collapse, "auto") == 0)
		ro.collapse = TP_COLLAPSE_AUTO;
	else if (strcmp(collapse, "always") == 0)
		ro.collapse = TP_COLLAPSE_ALWAYS;
	else if (strcmp(collapse, "never") == 0)
		ro.collapse = TP_COLLAPSE_NEVER;
	else
		return tp_cli_bad_choice("render", "--collapse", collapse,
					 collapses, 3);

	tp_error_clear(&err);
	tp_strbuf_init(&warn);
	tp_inputs_init(&in);
	tp_report_init(&report);
	memset(&sim, 0, sizeof(sim));
	if (tp_inputs_load(&in, plan, model, topo, &warn, &err) != TP_OK)
		goto fail;
	{
		struct tp_strbuf used;
		tp_strbuf_init(&used);
		tp_inputs_describe(&in, &used);
		if (used.len && !quiet)
			fprintf(stderr, "tagplan render: %s", tp_strbuf_cstr(&used));
		tp_strbuf_release(&used);
	}
	tp_cli_print_warnings("render", &warn);
	{
		const struct tp_cli_file ins[] = {{"-m", in.model_path},
						  {"-t", in.topology_path},
						  {"-p", plan},
						  {NULL, NULL}};
		const struct tp_cli_file outs[] = {{"-o", out}, {NULL, NULL}};
		if ((code = tp_cli_check_outputs("render", ins, outs)))
			goto done;
	}
	if (!no_sim) {
		if (tp_inputs_sim_open(&sim, &in, &err) != TP_OK ||
		    tp_inputs_sim_run(&sim, &in.plan, &report, &err) != TP_OK)
			goto fail;
		have_report = true;
	}
	written[0] = '\0';
	pic = (struct tp_render_input){&in.plan, &in.model, &in.cluster,
				       have_report ? &report : NULL};
	if (tp_render_plan_file(&pic, &ro, out, fmt, written, sizeof(written),
				&warn, &err) != TP_OK)
		goto fail;
	tp_cli_print_warnings("render", &warn);
	if (strcmp(out, "-") != 0 && !quiet)
		fprintf(stderr, "tagplan render: wrote %s\n", written);
	code = TP_EXIT_OK;
	goto done;
fail:
	tp_cli_print_warnings("render", &warn);
	code = tp_cli_fail(&err);
done:
	tp_inputs_sim_close(&sim);
	tp_report_release(&report);
	tp_inputs_release(&in);
	tp_strbuf_release(&warn);
	return code;
}
