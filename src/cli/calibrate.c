/*
 * calibrate.c - `tagplan calibrate`: fit the cost model's exposed
 * constants (gemm_sustained, link_eff_intra, link_eff_network, and the
 * runtime profiles' fitted ones: gemm_shape_half, nic_socket_Bps,
 * tp_node_rings, cuda_core_gemm_eff, hopper_gemm_scale,
 * p2p_socket_Bps) to a user's
 * measured runs (io/runs.h; calib/calib.h tp_calib_fit) and write
 * a runtime profile (tagplan-runtime/1) with a "calibration" object that
 * plan, simulate and check take with --runtime FILE.  The table of runs
 * (predicted with the defaults and with the fit, measured, error, fit or
 * held out) goes to stdout; the profile to -o.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calib.h"
#include "cli.h"
#include "core/runtime.h"
#include "core/strbuf.h"
#include "io/io.h"
#include "io/runs.h"

static const char usage[] =
	"RUNS.json [RUNS.json ...] -o PROFILE.json\n"
	"                    [--runtime NAME] [--name NAME]\n"
	"                    [--holdout K | --holdout-source S]\n"
	"                    [--prior-weight W] [--fit NAME,...]";

static const char about[] =
	"Fit the simulator's constants to measured runs and write a runtime "
	"profile.\nRUNS are run lists (tagplan-formats(5), MEASURED RUNS: "
	"model, topology,\nstrategy, measured iteration time or throughput, "
	"the runtime that ran it).\nFitted, by bounded least squares on log "
	"time (each run under its own\nruntime's behaviour): on every run "
	"gemm_sustained (0.5-1.1, x each GPU's\nGEMM efficiency), "
	"link_eff_intra and link_eff_network (0.3-1.0, the\nfraction of "
	"NVLink/PCIe and of network peak collectives reach); on the\nruns "
	"whose runtime profile sets them, the profile's own constants\n"
	"gemm_shape_half (1e5-1e7), nic_socket_Bps (2.5e8-1.25e10), "
	"tp_node_rings\n(1-4), cuda_core_gemm_eff (0.3-1), hopper_gemm_scale "
	"(0.5-1),\np2p_socket_Bps (1e7-1.25e10).  Each is pulled toward its "
	"shipped value by a\nprior in log space worth W runs "
	"(--prior-weight; 0 = plain least\nsquares), so that a few runs "
	"move the constants only as far as they\noutweigh it.  Every K-th "
	"run (or every run of source S) is held out: the\nfit never sees "
	"it, and the table and the profile report its error.  The\nprofile "
	"is --runtime NAME's (its behaviour and capabilities) with the\n"
	"fitted constants (of its own profile constants, those it sets); "
	"pass it\nto plan, simulate and check as --runtime PROFILE.json.\n\n"
	"example (the shipped validation runs):\n"
	"  tagplan calibrate data/validation/measured_runs.json \\\n"
	"      data/validation/megatron_a100_table1.json -o mine.json\n"
	"  tagplan simulate -m gpt.json -t topo.json -s tp=8,pp=4 \\\n"
	"      --runtime mine.json";

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* What `tagplan calibrate` was asked. */
struct cal_args {
	const char *out, *runtime, *name, *hold_src, *fit_list;
	long long holdout;
	double prior_weight;
	bool holdout_given, quiet;
	char **pos;
	int npos;
};

/* --fit "gemm_sustained, link_eff_intra": the list without its spaces
 * (in buf), as a strategy takes them; NULL stays NULL. */
static const char *no_spaces(const char *list, char *buf, size_t size)
{
	size_t n = 0;

	if (!list)
		return NULL;
	for (const char *p = list; *p && n + 1 < size; p++)
		if (*p != ' ' && *p != '\t')
			buf[n++] = *p;
	buf[n] = '\0';
	return buf;
}

/* The usage errors of a parsed command line: TP_EXIT_OK when none, else
 * the exit code after the message. */
static int check_args(const struct cal_args *a)
{
	unsigned bad;

	if (!a->npos)
		return tp_cli_usage_error(
		    "calibrate", "missing RUNS.json (a run list, e.g. "
				 "data/validation/measured_runs.json)");
	if (!a->out)
		return tp_cli_usage_error("calibrate",
					  "missing -o PROFILE.json (where the "
					  "calibrated runtime profile goes)");
	if (a->hold_src && a->holdout_given)
		return tp_cli_usage_error("calibrate",
					  "--holdout and --holdout-source "
					  "choose the held-out runs two ways; "
					  "give one");
	/* the table of runs is the command's standard output */
	if (tp_file_same_output(a->out, "-"))
		return tp_cli_usage_error("calibrate",
					  "-o %s would be written to standard "
					  "output, which carries the table of "
					  "runs: give -o a file name (the "
					  "profile is for --runtime FILE)",
					  a->out);
	{
		struct tp_cli_file ins[34],
		    outs[] = {{"-o", a->out}, {NULL, NULL}};
		int k = 0, code;

		for (int i = 0; i < a->npos && k < 32; i++)
			ins[k++] = (struct tp_cli_file){"RUNS", a->pos[i]};
		ins[k] = (struct tp_cli_file){NULL, NULL};
		/* its own code: a missing directory is exit 3, as for
		 * every command (tagplan(1)) */
		if ((code = tp_cli_check_outputs("calibrate", ins, outs)))
			return code;
	}
	if (a->fit_list && !*a->fit_list)
		return tp_cli_usage_error("calibrate",
					  "--fit: an empty list; name the "
					  "constants to fit, or leave it out "
					  "to fit all");
	if (a->fit_list) {
		const char *p = a->fit_list;

		while (*p) {
			size_t l = strcspn(p, ",");
			int c;

			for (c = 0; c < TP_CALIB_N; c++)
				if (strlen(tp_calib_names[c]) == l &&
				    !strncmp(p, tp_calib_names[c], l))
					break;
			if (c == TP_CALIB_N)
				return tp_cli_usage_error(
				    "calibrate",
				    "--fit %s: \"%.*s\" is not a constant "
				    "calibrate fits; give some of "
				    "gemm_sustained, link_eff_intra, "
				    "link_eff_network, gemm_shape_half, "
				    "nic_socket_Bps, tp_node_rings, "
				    "cuda_core_gemm_eff, hopper_gemm_scale, "
				    "p2p_socket_Bps, comma-separated",
				    a->fit_list, (int)l, p);
			p += l;
			if (*p == ',')
				p++;
		}
	}
	if (a->name && tp_io_name_bad_char(a->name, &bad))
		return tp_cli_usage_error("calibrate",
					  "--name: the name contains the "
					  "control character U+%04X; names "
					  "are printable text",
					  bad);
	if (a->name && (!*a->name || strlen(a->name) >= TP_RUNTIME_NAME_MAX ||
			strcmp(a->name, "none") == 0))
		return tp_cli_usage_error("calibrate",
					  "--name \"%s\": give 1 to %d "
					  "characters other than \"none\"",
					  a->name, TP_RUNTIME_NAME_MAX - 1);
	return TP_EXIT_OK;
}

/* Every run list into runs; their base names, comma-separated, into files
 * (cut at its size). */
static enum tp_status load_runs(const struct cal_args *a, struct tp_mruns *runs,
				char *files, size_t size, struct tp_error *err)
{
	size_t fl = 0;
	enum tp_status st;

	for (int i = 0; i < a->npos; i++) {
		if ((st = tp_mruns_load_file(a->pos[i], NULL, runs, err)))
			return st;
		fl += (size_t)snprintf(files + fl, fl < size ? size - fl : 0,
				       "%s%s", i ? ", " : "",
				       base_name(a->pos[i]));
		if (fl >= size)
			fl = size - 1;
	}
	return TP_OK;
}

/* held[i]: run i is held out (every K-th, or of source S); fitm[i] its
 * negation.  Says on stderr how many of each. */
static enum tp_status choose_held(const struct cal_args *a,
				  const struct tp_mruns *runs, bool *fitm,
				  bool *held, struct tp_error *err)
{
	size_t n = runs->rows.n, h = 0;

	for (size_t i = 0; i < n; i++) {
		if (a->hold_src)
			held[i] =
			    strcmp(runs->rows.v[i].source, a->hold_src) == 0;
		else
			held[i] =
			    a->holdout > 0 && (i + 1) % (size_t)a->holdout == 0;
		fitm[i] = !held[i];
		h += held[i];
	}
	if (a->hold_src && !h)
		return tp_error_set(err, TP_EUSAGE,
				    "--holdout-source %s: no run has that "
				    "source",
				    a->hold_src);
	/* before any fit: say which option left nothing to fit */
	if (n && h == n && a->hold_src)
		return tp_error_set(err, TP_EUSAGE,
				    "--holdout-source %s: every run has that "
				    "source, so none is left to fit; hold out "
				    "another source, or leave the option out",
				    a->hold_src);
	if (n && h == n)
		return tp_error_set(err, TP_EUSAGE,
				    "--holdout %lld holds out every run, so "
				    "none is left to fit; give 0 to fit on "
				    "all, or a K above 1",
				    a->holdout);
	if (!a->quiet)
		fprintf(stderr,
			"tagplan calibrate: fitting %zu runs, %zu held out "
			"...\n",
			n - h, h);
	return TP_OK;
}

/* The table of runs (default, calibrated, measured, error, set) and the
 * fit's figures, on stdout. */
static enum tp_status print_fit(const struct tp_mruns *runs,
				const struct tp_calib_fit *fit,
				const bool *held, struct tp_error *err)
{
	enum tp_status st;

	printf("%-26s %-16s %10s %10s %10s %8s %s\n", "run", "runtime",
	       "default", "calibrated", "measured", "error", "set");
	for (size_t i = 0; i < runs->rows.n; i++) {
		struct tp_calib_result r0, r1;
		if ((st = tp_calib_predict(&runs->rows.v[i], NULL, NULL, NULL,
					   &r0, err)) ||
		    (st = tp_calib_predict_fitted(&runs->rows.v[i], fit, NULL,
						  &r1, err)))
			return st;
		printf("%-26s %-16s %9.3fs %9.3fs %9.3fs %+7.1f%% %s\n",
		       runs->rows.v[i].id, r1.runtime, r0.predicted_s,
		       r1.predicted_s, runs->rows.v[i].measured_s,
		       100 * r1.error, held[i] ? "held out" : "fit");
	}
	printf("\n%-20s %12s %12s   %s\n", "constant", "fitted",
	       "shipped", "");
	for (int c = 0; c < TP_CALIB_N; c++)
		if (fit->used[c])
			printf("%-20s %12.5g %12.5g\n", tp_calib_names[c],
			       fit->k[c], fit->k0[c]);
		else
			printf("%-20s %12s %12s   not fitted (not in --fit, or "
			       "no fitted run's runtime sets it)\n",
			       tp_calib_names[c], "-", "-");
	printf("prior weight %g runs; %u simulations of one run\n",
	       fit->prior_weight, fit->evaluations);
	printf("fit runs      %3u: mean |error| %.1f%% (defaults %.1f%%)\n",
	       fit->fit_runs, 100 * fit->fit_error, 100 * fit->fit_error0);
	if (fit->holdout_runs)
		printf("held-out runs %3u: mean |error| %.1f%% (defaults "
		       "%.1f%%)\n",
		       fit->holdout_runs, 100 * fit->holdout_error,
		       100 * fit->holdout_error0);
	return TP_OK;
}

/* The profile at path (base's) with the fit as its calibration, written
 * atomically to -o. */
static enum tp_status write_profile(const struct cal_args *a,
				    const struct tp_runtime *base,
				    const char *path, const char *files,
				    const struct tp_calib_fit *fit,
				    struct tp_error *err)
{
	struct tp_runtime_calibration cal;
	char pname[TP_RUNTIME_NAME_MAX], desc[256];
	struct tp_strbuf sb;
	enum tp_status st;

	memset(&cal, 0, sizeof(cal));
	cal.present = true;
	cal.gemm_sustained = fit->k[TP_CALIB_GEMM_SUSTAINED];
	cal.link_eff_intra = fit->k[TP_CALIB_LINK_INTRA];
	cal.link_eff_network = fit->k[TP_CALIB_LINK_NETWORK];
	/* the profile's own fitted constants: those it sets, when the runs
	   fitted them */
	{
		const struct tp_runtime_behaviour *b = &base->behaviour;
		const double has[6] = {b->gemm_shape_half, b->nic_socket_Bps,
				       b->tp_node_rings, b->cuda_core_gemm_eff,
				       b->hopper_gemm_scale, b->p2p_socket_Bps};
		double *dst[6] = {&cal.gemm_shape_half, &cal.nic_socket_Bps,
				  &cal.tp_node_rings, &cal.cuda_core_gemm_eff,
				  &cal.hopper_gemm_scale, &cal.p2p_socket_Bps};
		for (int i = 0; i < 6; i++)
			if (has[i] > 0 &&
			    fit->used[TP_CALIB_GEMM_SHAPE_HALF + i])
				*dst[i] = fit->k[TP_CALIB_GEMM_SHAPE_HALF + i];
	}
	snprintf(cal.fitted_on, sizeof(cal.fitted_on), "%s", files);
	cal.runs = fit->fit_runs;
	cal.holdout_runs = fit->holdout_runs;
	cal.fit_error = fit->fit_error;
	cal.holdout_error = fit->holdout_error;
	cal.prior_weight = fit->prior_weight;
	snprintf(pname, sizeof(pname), "%.*s-calibrated",
		 (int)(sizeof(pname) - 12), base->name);
	snprintf(desc, sizeof(desc),
		 "%s calibrated by tagplan calibrate on %u runs of %.*s: "
		 "gemm_sustained %.3f, link_eff_intra %.3f, link_eff_network "
		 "%.3f%s",
		 base->name, fit->fit_runs, 40, files,
		 fit->k[TP_CALIB_GEMM_SUSTAINED], fit->k[TP_CALIB_LINK_INTRA],
		 fit->k[TP_CALIB_LINK_NETWORK],
		 cal.gemm_shape_half > 0 || cal.nic_socket_Bps > 0 ||
			 cal.tp_node_rings > 0 || cal.cuda_core_gemm_eff > 0 ||
			 cal.hopper_gemm_scale > 0 || cal.p2p_socket_Bps > 0
		     ? ", profile constants"
		     : "");
	tp_strbuf_init(&sb);
	st = tp_runtime_write_calibrated(path, a->name ? a->name : pname, desc,
					 &cal, &sb, err);
	if (!st && sb.failed)
		st = tp_error_set(err, TP_ENOMEM, "out of memory");
	if (!st)
		st = tp_file_write_atomic(a->out, sb.buf, sb.len, err);
	tp_strbuf_release(&sb);
	/* a FIFO or device cannot be read back by --runtime, nor a
	 * descriptor's name (/dev/fd/3 to a file: gone with the process) */
	if (a->quiet)
		return st;
	if (!st && tp_file_is_regular(a->out) &&
	    strncmp(a->out, "/dev/", 5) != 0 &&
	    strncmp(a->out, "/proc/", 6) != 0)
		fprintf(stderr,
			"tagplan calibrate: %s -> %s (use --runtime %s)\n",
			a->name ? a->name : pname, a->out, a->out);
	else if (!st)
		fprintf(stderr, "tagplan calibrate: %s -> %s\n",
			a->name ? a->name : pname, a->out);
	return st;
}

int cmd_calibrate(int argc, char **argv)
{
	struct cal_args a = {.runtime = "megatron-core",
			     .holdout = 4,
			     .prior_weight = TP_CALIB_PRIOR_WEIGHT};
	struct tp_opt opts[] = {
	    {"output", 'o', TP_OPT_STRING, &a.out, "PROFILE",
	     "write the calibrated runtime profile here (atomically)", 0, 0,
	     false},
	    {"runtime", 0, TP_OPT_STRING, &a.runtime, "NAME",
	     "the profile to calibrate (its behaviour and capabilities "
	     "are kept): a name of data/runtimes or a file [megatron-core]",
	     0, 0, false},
	    {"name", 0, TP_OPT_STRING, &a.name, "NAME",
	     "the calibrated profile's name [RUNTIME-calibrated]", 0, 0, false},
	    {"holdout", 0, TP_OPT_INT, &a.holdout, "K",
	     "hold out every K-th run (the 4th, 8th, ...); 0 = fit on all "
	     "[4]",
	     0, 1000000, false},
	    {"holdout-source", 0, TP_OPT_STRING, &a.hold_src, "S",
	     "hold out the runs of source S instead (its first word, as "
	     "the table prints it)",
	     0, 0, false},
	    {"fit", 0, TP_OPT_STRING, &a.fit_list, "NAME,...",
	     "fit only these constants (the others keep their shipped "
	     "values) [all that the runs depend on]",
	     0, 0, false},
	    {"prior-weight", 0, TP_OPT_DOUBLE, &a.prior_weight, "W",
	     "how many runs the shipped constants count as: the fit "
	     "minimises the squared log errors plus W x each constant's "
	     "squared log distance from its shipped value; 0 = plain least "
	     "squares [10: the SC21 Table 1 runs gemm_sustained was fitted "
	     "on]",
	     0, 1e6, false},
	    {"quiet", 'q', TP_OPT_FLAG, &a.quiet, NULL, TP_CLI_QUIET_HELP, 0,
	     0, false},
	    {0}};
	struct tp_mruns runs;
	struct tp_runtime base;
	struct tp_calib_fit fit;
	struct tp_calib_opts co;
	struct tp_error err;
	char path[4096], files[256] = "", fits[512];
	bool *fitm = NULL, *held = NULL;
	int code = TP_EXIT_OK;
	size_t n;

	if (tp_opts_parse(&(struct tp_cli_doc){"calibrate", usage, about}, opts,
			  argc, argv, &a.pos, &a.npos, &code))
		return code;
	a.holdout_given = opts[3].seen;
	a.fit_list = no_spaces(a.fit_list, fits, sizeof(fits));
	if ((code = check_args(&a)) != TP_EXIT_OK) {
		free(a.pos);
		return code;
	}
	tp_error_clear(&err);
	tp_mruns_init(&runs);
	if (strcmp(a.runtime, "none") == 0) {
		tp_error_set(&err, TP_EUSAGE,
			     "--runtime none has no profile to calibrate; "
			     "name one (megatron-core, ddp, ...) or a file");
		goto fail;
	}
	if (tp_runtime_find(a.runtime, &base, &err) ||
	    tp_runtime_path(a.runtime, path, sizeof(path), &err) ||
	    load_runs(&a, &runs, files, sizeof(files), &err))
		goto fail;
	/* a figure that makes the GPUs faster than their peak is a typo or
	 * a unit slip: refused where it is, before any fit */
	for (size_t i = 0; i < runs.rows.n; i++)
		if (tp_calib_check_rate(&runs.rows.v[i], &err))
			goto fail;
	memset(&co, 0, sizeof(co));
	for (int c = 0; a.fit_list && c < TP_CALIB_N; c++) {
		const char *p = a.fit_list;
		size_t l = strlen(tp_calib_names[c]);

		co.fixed[c] = true;
		for (; *p; p += strcspn(p, ","), p += *p == ',')
			if (strcspn(p, ",") == l &&
			    !strncmp(p, tp_calib_names[c], l))
				co.fixed[c] = false;
	}
	n = runs.rows.n;
	fitm = calloc(n, sizeof(bool));
	held = calloc(n, sizeof(bool));
	if (!fitm || !held) {
		tp_error_set(&err, TP_ENOMEM, "out of memory");
		goto fail;
	}
	if (choose_held(&a, &runs, fitm, held, &err) ||
	    tp_calib_fit(runs.rows.v, n, fitm, held, a.prior_weight, &co,
			 &fit, &err) ||
	    print_fit(&runs, &fit, held, &err) ||
	    write_profile(&a, &base, path, files, &fit, &err))
		goto fail;
	goto done;
fail:
	code = tp_cli_fail(&err);
done:
	free(fitm);
	free(held);
	free(a.pos);
	tp_mruns_release(&runs);
	return code;
}
