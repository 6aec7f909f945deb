#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "core/strategy.h"
#include "core/strbuf.h"
#include "core/strmap.h"
#include "io/io.h"
#include "sim/sim.h"

void tp_opt_list_free(struct tp_opt_list *l)
{
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

/* True when swapping two adjacent letters of a gives b ("plna"). */
static bool swapped(const char *a, const char *b)
{
	size_t n = strlen(a), i = 0;

	if (n != strlen(b))
		return false;
	while (i < n && a[i] == b[i])
		i++;
	return i + 1 < n && a[i] == b[i + 1] && a[i + 1] == b[i] &&
	       strcmp(a + i + 2, b + i + 2) == 0;
}

const char *tp_cli_near_name(const char *name, const char *const *names,
			     size_t n)
{
	size_t len = strlen(name), cap = len > 4 ? 2 : 1, bd = cap + 1;
	size_t bl = 0;
	const char *best = NULL, *prefix = NULL, *begins = NULL;
	int nprefix = 0;

	if (len < 2 || len > 64)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t cl = strlen(names[i]), d;
		if (len > cl && cl > bl && strncmp(name, names[i], cl) == 0) {
			begins = names[i];
			bl = cl;
		}
		if (strncmp(names[i], name, len < 6 ? len : 6) == 0) {
			prefix = names[i];
			nprefix++;
		}
		d = swapped(name, names[i])
			? 1
			: tp_edit_distance(name, names[i], cap);
		if (d < bd) {
			bd = d;
			best = names[i];
		}
	}
	/* one edit first: "dp-hetro" is dp-hetero, not dp */
	if (bd <= 1)
		return best;
	if (begins)
		return begins;
	return nprefix == 1 ? prefix : best;
}

int tp_cli_bad_choice(const char *cmd, const char *opt, const char *given,
		      const char *const *names, size_t n)
{
	return tp_cli_bad_choice_meant(cmd, opt, given, names, n,
				       tp_cli_near_name(given, names, n));
}

int tp_cli_bad_choice_meant(const char *cmd, const char *opt,
			    const char *given, const char *const *names,
			    size_t n, const char *near)
{
	struct tp_strbuf list;
	int code;

	tp_strbuf_init(&list);
	for (size_t i = 0; i < n; i++)
		tp_strbuf_addf(&list, "%s%s",
			       i == 0 ? ""
			       : i + 1 < n ? ", "
					   : " or ",
			       names[i]);
	code = tp_cli_usage_error(cmd, "%s %s: expected %s%s%s%s", opt, given,
				  tp_strbuf_cstr(&list),
				  near ? " (did you mean " : "",
				  near ? near : "", near ? "?)" : "");
	tp_strbuf_release(&list);
	return code;
}

double tp_cli_grad_bucket_mb_default(void)
{
	struct tp_sim_params pa;

	tp_sim_params_default(&pa);
	return pa.grad_bucket_bytes / 1e6;
}

double tp_cli_monotonic_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void tp_cli_escape(FILE *f, const char *s, size_t n, bool keep_newlines)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < n; i++) {
		unsigned c = p[i];
		if (c == '\n' && keep_newlines) {
			fputc('\n', f);
		} else if (c == '\n') {
			fputs("\\n", f);
		} else if (c == '\t') {
			fputs("\\t", f);
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\x%02x", c);
		} else if (c == 0xc2 && i + 1 < n && p[i + 1] >= 0x80 &&
			   p[i + 1] <= 0x9f) {
			/* a C1 control (U+0080..U+009F): CSI and friends */
			fprintf(f, "\\u%04x", p[++i]);
		} else {
			fputc((int)c, f);
		}
	}
}

int tp_cli_usage_error(const char *cmd, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf))
		n = (int)sizeof(buf) - 1;
	fprintf(stderr, "tagplan %s: ", cmd);
	tp_cli_escape(stderr, buf, (size_t)n, false);
	fprintf(stderr, "\n(see 'tagplan %s --help')\n", cmd);
	return TP_EXIT_USAGE;
}

int tp_cli_fail(const struct tp_error *err)
{
	char buf[2048];

	tp_error_format(err, buf, sizeof(buf));
	fputs("tagplan: ", stderr);
	tp_cli_escape(stderr, buf, strlen(buf), false);
	fputc('\n', stderr);
	return tp_cli_exit_code(err);
}

int tp_cli_json_output(const char *cmd, const char *opt, const char *path,
		       const char *what, const char *fix)
{
	static const char *const pictures[] = {".svg", ".png", ".pdf", ".dot",
					       ".gv", NULL};
	const char *dot = path ? strrchr(path, '.') : NULL;

	if (!dot || strchr(dot, '/'))
		return 0;
	for (int i = 0; pictures[i]; i++)
		if (!strcasecmp(dot, pictures[i]))
			return tp_cli_usage_error(
				cmd,
				"%s %s: %s is %s, written as JSON, not a "
				"picture; %s",
				opt, path, opt, what,
				fix ? fix : "give it a .json name");
	return 0;
}

int tp_cli_exit_code(const struct tp_error *err)
{
	if (err->status == TP_EIO &&
	    (err->sys_errno == ENOENT || err->sys_errno == ENOTDIR ||
	     err->sys_errno == ENAMETOOLONG))
		return TP_EXIT_USAGE;
	return tp_status_exit_code(err->status);
}

int tp_cli_not_yet(const char *cmd, const char *issue)
{
	fprintf(stderr,
		"tagplan %s: not available in this version yet (%s); see the "
		"README's list of commands\n",
		cmd, issue);
	return TP_EXIT_FAILURE;
}

void tp_opts_help(FILE *out, const struct tp_cli_doc *doc,
		  const struct tp_opt *opts)
{
	fprintf(out, "usage: tagplan %s %s\n", doc->cmd, doc->usage);
	if (doc->about && *doc->about)
		fprintf(out, "\n%s\n", doc->about);
	if (!opts || !opts->name)
		return;
	fprintf(out, "\noptions:\n");
	for (const struct tp_opt *o = opts; o->name; o++) {
		char left[64];
		int n;

		if (o->short_name)
			n = snprintf(left, sizeof(left), "  -%c, --%s",
				     o->short_name, o->name);
		else
			n = snprintf(left, sizeof(left), "      --%s", o->name);
		if (o->type != TP_OPT_FLAG && n > 0 && (size_t)n < sizeof(left))
			snprintf(left + n, sizeof(left) - (size_t)n, " %s",
				 o->metavar ? o->metavar : "X");
		{
			/* help text, then the default in brackets (unless the
			   text states it: "[no limit]"), cut at spaces to 80
			   columns with continuations under the text */
			char text[1024];
			const char *h = o->help ? o->help : "", *p = text;
			int col = 29, used;

			used = snprintf(text, sizeof(text), "%s", h);
			if (used < 0 || (size_t)used >= sizeof(text))
				used = (int)strlen(text);
			if (strchr(h, '[')) {
				/* stated */
			} else if (o->type == TP_OPT_INT && o->dest)
				snprintf(text + used, sizeof(text) - (size_t)used,
					 " [%lld]", *(long long *)o->dest);
			else if (o->type == TP_OPT_DOUBLE && o->dest)
				snprintf(text + used, sizeof(text) - (size_t)used,
					 " [%g]", *(double *)o->dest);
			else if (o->type == TP_OPT_STRING && o->dest &&
				 *(const char **)o->dest)
				snprintf(text + used, sizeof(text) - (size_t)used,
					 " [%s]", *(const char **)o->dest);
			fprintf(out, "%-28s", left);
			if (strlen(left) > 28) {
				fprintf(out, "\n%28s", "");
			}
			while (*p) {
				int room = 80 - col, len = (int)strlen(p), cut;
				if (len <= room) {
					cut = len;
				} else {
					cut = room;
					while (cut > 0 && p[cut] != ' ')
						cut--;
					if (cut == 0)
						cut = room;
				}
				fprintf(out, " %.*s\n", cut, p);
				p += cut;
				while (*p == ' ')
					p++;
				if (*p)
					fprintf(out, "%28s", "");
			}
			if (!*text)
				fputc('\n', out);
		}
	}
	fprintf(out, "  -h, --help                 show this help\n");
}

static struct tp_opt *find_long(struct tp_opt *opts, const char *name,
				size_t len)
{
	for (struct tp_opt *o = opts; o && o->name; o++)
		if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
			return o;
	return NULL;
}

static struct tp_opt *find_short(struct tp_opt *opts, char c)
{
	for (struct tp_opt *o = opts; o && o->name; o++)
		if (o->short_name == c)
			return o;
	return NULL;
}

/* True when a (n bytes) and b have as many '-'-separated words, each
 * word of one beginning the other's: "max-iteration-time" and
 * "max-iter-time". */
static bool word_prefixes(const char *a, size_t n, const char *b)
{
	const char *end = a + n;

	while (a < end && *b) {
		size_t wa = strcspn(a, "-"), wb = strcspn(b, "-");
		if (a + wa > end)
			wa = (size_t)(end - a);
		if (!wa || !wb || strncmp(a, b, wa < wb ? wa : wb) != 0)
			return false;
		a += wa;
		b += wb;
		if ((a < end) != (*b == '-'))
			return false;
		a += a < end;
		b += *b == '-';
	}
	return a >= end && !*b;
}

/* The option an unknown one "a" most likely meant: a long name given with
 * one dash ("-seed"), the only long name it begins ("--time" for
 * --time-limit), else the nearest by edit distance (at most 1 for names
 * up to 4 letters, else 2: "--playout" for --playouts), else the only
 * one whose words begin its words or the other way round
 * ("--max-iteration-time" for --max-iter-time); NULL if none. */
static const struct tp_opt *near_option(const struct tp_opt *opts,
					const char *a)
{
	const char *name = a + (a[1] == '-' ? 2 : 1);
	const char *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	size_t cap = len > 4 ? 2 : 1, bd = cap + 1;
	const struct tp_opt *best = NULL, *prefix = NULL, *words = NULL;
	int nprefix = 0, nwords = 0;
	char buf[64];

	if (len < 2 || len >= sizeof(buf))
		return NULL;
	memcpy(buf, name, len);
	buf[len] = '\0';
	for (const struct tp_opt *o = opts; o && o->name; o++) {
		size_t d;
		if (a[1] != '-' && strcmp(o->name, buf) == 0)
			return o;
		if (len >= 3 && strncmp(o->name, buf, len) == 0) {
			prefix = o;
			nprefix++;
		}
		d = tp_edit_distance(buf, o->name, cap);
		if (d < bd) {
			bd = d;
			best = o;
		}
		if (strchr(buf, '-') && word_prefixes(buf, len, o->name)) {
			words = o;
			nwords++;
		}
	}
	if (nprefix == 1)
		return prefix;
	return best ? best : nwords == 1 ? words : NULL;
}

/* A short option with its value joined ("-ox.json", "-o=x.json") or
 * short flags bundled ("-qp"), as getopt takes them: the usage error
 * gives them apart (true), unless the word is a long option's name
 * given with one dash ("-seed": near_option's hint). */
static bool short_joined(const char *cmd, struct tp_opt *opts,
			 const char *a)
{
	const struct tp_opt *o, *n;
	char apart[96] = "";
	size_t used = 0;

	if (a[0] != '-' || a[1] == '-' || !a[1] || !a[2] ||
	    !(o = find_short(opts, a[1])))
		return false;
	/* a long name (or near one: "-seeds") given with one dash */
	n = near_option(opts, a);
	if (n && (!strcmp(n->name, a + 1) ||
		  strspn(a + 1, "abcdefghijklmnopqrstuvwxyz-") ==
		      strlen(a + 1)))
		return false;
	if (o->type != TP_OPT_FLAG) {
		tp_cli_usage_error(cmd,
				   "unknown option \"%s\" (the value goes "
				   "after a space: -%c %s)",
				   a, a[1], a[2] == '=' ? a + 3 : a + 2);
		return true;
	}
	for (const char *c = a + 1; *c; c++) {
		if (!find_short(opts, *c) || used + 4 >= sizeof(apart))
			return false;
		used += (size_t)snprintf(apart + used, sizeof(apart) - used,
					 "%s-%c", used ? " " : "", *c);
	}
	tp_cli_usage_error(cmd,
			   "unknown option \"%s\" (give short options "
			   "apart: %s)",
			   a, apart);
	return true;
}

/* An option cmd does not have, where the usual slip is taking one
 * command for the other (plan writes plans, check and render read them)
 * or a word for what cmd spells otherwise (topo's network is --net, its
 * node count PRESET:NODES): what to write instead; NULL if none.  A
 * name ending in '*' matches the options it begins. */
static const char *other_commands_option(const char *cmd, const char *a)
{
	static const char *const slips[][3] = {
	    {"topo", "--network",
	     "the network between nodes is --net NETWORK (10gbe, 25gbe, "
	     "100gbe, 200gbe, ib-edr, ib-hdr, ib-ndr, ib-xdr, roce-400g, ...; "
	     "see --help); switch tiers are --fabric"},
	    {"topo", "--nic", NULL},
	    {"topo", "--nics", NULL},
	    {"topo", "--bandwidth", NULL},
	    {"topo", "--bw", NULL},
	    {"topo", "--gbps", NULL},
	    {"topo", "--inter*", NULL},
	    {"topo", "--nodes",
	     "the node count goes with its preset: PRESET:NODES, e.g. "
	     "dgx-a100:4"},
	    {"topo", "--num-nodes", NULL},
	    {"topo", "--count", NULL},
	    {"topo", "--gpus", NULL},
	    {"plan", "-p",
	     "plan searches a plan and writes it with -o PLAN; to simulate "
	     "or check one: tagplan simulate -p PLAN, tagplan check -p PLAN"},
	    {"plan", "--plan", NULL},
	    {"check", "-s",
	     "check reads a plan, -p PLAN: write one from a strategy with "
	     "tagplan plan -s STRATEGY -o PLAN, or simulate it with tagplan "
	     "simulate -s STRATEGY"},
	    {"check", "--strategy", NULL},
	    {"render", "-s",
	     "render draws a plan, -p PLAN: write one from a strategy with "
	     "tagplan plan -s STRATEGY -o PLAN"},
	    {"render", "--strategy", NULL},
	    {"render", "--svg",
	     "render writes its picture with -o FILE, the format from the "
	     "extension: -o plan.svg (or .dot .png .pdf), or --format"},
	    {"render", "--dot", NULL},
	    {"render", "--png", NULL},
	    {"render", "--pdf", NULL},
	};

	for (size_t i = 0; i < sizeof(slips) / sizeof(slips[0]); i++) {
		size_t n = strlen(slips[i][1]);
		bool prefix = slips[i][1][n - 1] == '*';

		n -= prefix;
		if (!strcmp(cmd, slips[i][0]) && !strncmp(a, slips[i][1], n) &&
		    (prefix || a[n] == '\0' || a[n] == '=')) {
			while (!slips[i][2])
				i--;
			return slips[i][2];
		}
	}
	return NULL;
}

/* What is wrong with a number that parses up to end but not after it
 * (none when nothing parses): "1,5" a decimal comma, "1e4" and "10k" an
 * integer not in digits, "5s" or "25MB" a unit. */
static void number_hint(const char *cmd, const struct tp_opt *o,
			const char *val, const char *end, char *hint,
			size_t size)
{
	bool integer = o->type == TP_OPT_INT;
	double v = strtod(val, NULL);

	hint[0] = '\0';
	if (end == val || !*end)
		return;
	if (*end == ',' && isdigit((unsigned char)end[1]) && !integer)
		snprintf(hint, size, " (a decimal point, not a comma: %.*s.%s)",
			 (int)(end - val), val, end + 1);
	else if (integer && (*end == '.' || *end == 'e' || *end == 'E') &&
		 isfinite(v) && v == floor(v) && fabs(v) < 1e18)
		snprintf(hint, size, " (an integer in digits: %.0f)", v);
	else if (integer && (!strcmp(end, "k") || !strcmp(end, "K")))
		snprintf(hint, size, " (an integer in digits: %.0f)",
			 strtod(val, NULL) * 1e3);
	/* an integer's exponent beyond the range ("1e30") is no unit */
	else if (isalpha((unsigned char)*end) && strlen(end) <= 8 &&
		 !(integer && isfinite(v) && (*end == 'e' || *end == 'E')))
		snprintf(hint, size,
			 " (a plain number, without the unit \"%s\": "
			 "'tagplan %s --help' gives --%s's unit)",
			 end, cmd, o->name);
}

/* "--NAME expects an integer from MIN to MAX, not "VAL"HINT"; with min ==
 * max there is no range in the table (the command checks the value
 * itself): "an integer", or "a finite number" for a double. */
static void expects_error(const char *cmd, const struct tp_opt *o,
			  bool integer, const char *val, const char *hint)
{
	char range[80] = "";

	if (o->min != o->max)
		snprintf(range, sizeof(range),
			 integer ? " from %.0f to %.0f" : " from %g to %g",
			 o->min, o->max);
	tp_cli_usage_error(cmd, "--%s expects %s%s, not \"%s\"%s", o->name,
			   integer	    ? "an integer"
			   : o->min != o->max ? "a number"
					      : "a finite number",
			   range, val, hint);
}
static int set_value(const char *cmd, struct tp_opt *o, const char *val)
{
	char hint[160];
	char *end;

	if ((o->type == TP_OPT_STRING || o->type == TP_OPT_LIST) && !*val) {
		/* "-o ''" is a mistake of the script, not stdout */
		tp_cli_usage_error(cmd, "--%s: empty value; give a %s", o->name,
				   o->metavar ? o->metavar : "value");
		return -1;
	}
	switch (o->type) {
	case TP_OPT_FLAG:
		*(bool *)o->dest = true;
		return 0;
	case TP_OPT_STRING:
		*(const char **)o->dest = val;
		return 0;
	case TP_OPT_LIST: {
		struct tp_opt_list *l = o->dest;
		if (l->n == l->cap) {
			int ncap = l->cap ? l->cap * 2 : 8;
			const char **nv = realloc(l->v, sizeof(*nv) * (size_t)ncap);
			if (!nv) {
				fprintf(stderr, "tagplan %s: out of memory\n",
					cmd);
				return -1;
			}
			l->v = nv;
			l->cap = ncap;
		}
		l->v[l->n++] = val;
		return 0;
	}
	case TP_OPT_INT: {
		long long v;
		errno = 0;
		v = strtoll(val, &end, 10);
		if (errno || end == val || *end ||
		    (o->min != o->max && (v < o->min || v > o->max))) {
			number_hint(cmd, o, val, end, hint, sizeof(hint));
			expects_error(cmd, o, true, val, hint);
			return -1;
		}
		*(long long *)o->dest = v;
		return 0;
	}
	case TP_OPT_DOUBLE: {
		double v;
		errno = 0;
		v = strtod(val, &end);
		if (errno || end == val || *end || !isfinite(v) ||
		    (o->min != o->max && (v < o->min || v > o->max))) {
			/* a fraction given as a percentage ("40%", "40"):
			 * name the fraction meant; also of a share that may
			 * exceed 1, whose help says so ("--max-regression
			 * 5%": 0.05 = 5%) */
			bool pct = end != val && isfinite(v) && v > 0 &&
				   v <= 100 && (!*end || !strcmp(end, "%"));
			bool share = o->min == 0 &&
				     (o->max == 1 ||
				      (*end && o->help &&
				       strstr(o->help, " = ") &&
				       strchr(o->help, '%')));

			number_hint(cmd, o, val, end, hint, sizeof(hint));
			if (share && pct && (*end || v > 1))
				snprintf(hint, sizeof(hint),
					 " (a fraction: %g for %g%%)", v / 100,
					 v);
			expects_error(cmd, o, false, val, hint);
			return -1;
		}
		*(double *)o->dest = v;
		return 0;
	}
	}
	return -1;
}

/* An argument where the command takes none: if it names a file and the
 * command takes files through options (-p PLAN, -m MODEL, -t TOPO) not
 * given yet, the error says so ("tagplan export plan.json" is a natural
 * first try). */
/* arg begins "KEY=" with KEY a strategy string's key (tp, pp, ...). */
static bool strategy_item(const char *arg)
{
	const char *eq = strchr(arg, '=');
	return eq && tp_strategy_is_key(arg, (size_t)(eq - arg));
}

/* Arguments that are strategy items ("tagplan simulate -s tp=2 pp=4": the
 * shell split an unquoted "tp=2 pp=4") where the command takes a
 * strategy: the error says it is one argument and gives it joined with
 * commas.  False when pos[0] is not such an item. */
static bool strategy_split(const char *cmd, const struct tp_opt *opts,
			   char *const *pos)
{
	const struct tp_opt *s = NULL;
	struct tp_strbuf sb;

	for (const struct tp_opt *o = opts; o->name; o++)
		if (o->metavar && strcmp(o->metavar, "STRATEGY") == 0 &&
		    o->type == TP_OPT_STRING)
			s = o;
	if (!s || !strategy_item(pos[0]))
		return false;
	tp_strbuf_init(&sb);
	if (s->seen)
		tp_strbuf_adds(&sb, *(const char *const *)s->dest);
	for (int i = 0; pos[i] && strategy_item(pos[i]); i++)
		tp_strbuf_addf(&sb, "%s%s", sb.len ? "," : "", pos[i]);
	if (s->seen)
		tp_cli_usage_error(cmd,
				   "unexpected argument \"%s\": a strategy is "
				   "one argument, its items joined by commas: "
				   "-s %s",
				   pos[0], tp_strbuf_cstr(&sb));
	else
		tp_cli_usage_error(cmd,
				   "unexpected argument \"%s\": a strategy is "
				   "given with -s: -s %s",
				   pos[0], tp_strbuf_cstr(&sb));
	tp_strbuf_release(&sb);
	return true;
}

/* -s STRATEGY was given: a plan file (-p) is then no option (the
 * commands take one or the other). */
static bool strategy_given(const struct tp_opt *opts)
{
	for (const struct tp_opt *o = opts; o->name; o++)
		if (o->seen && o->metavar && !strcmp(o->metavar, "STRATEGY"))
			return true;
	return false;
}

static void unexpected_argument(const char *cmd, const struct tp_opt *opts,
				char *const *pos)
{
	static const char *const file_vars[] = {"PLAN", "MODEL", "TOPO"};
	const char *arg = pos[0];
	char hint[160] = "";
	size_t used = 0;

	if (strategy_split(cmd, opts, pos))
		return;

	if (strcmp(arg, "-") == 0 || access(arg, F_OK) == 0 ||
	    strstr(arg, ".json")) {
		for (size_t v = 0; v < sizeof(file_vars) / sizeof(*file_vars);
		     v++) {
			for (const struct tp_opt *o = opts; o->name; o++) {
				if (o->seen || !o->short_name ||
				    o->short_name == 'o' || !o->metavar ||
				    strcmp(o->metavar, file_vars[v]) != 0 ||
				    (v == 0 && strategy_given(opts)))
					continue;
				int n = snprintf(hint + used,
						 sizeof(hint) - used, "%s-%c %s",
						 used ? " or " : "",
						 o->short_name, o->metavar);
				if (n > 0 && (size_t)n < sizeof(hint) - used)
					used += (size_t)n;
				break;
			}
		}
	}
	if (used)
		tp_cli_usage_error(cmd,
				   "unexpected argument \"%s\" (files are "
				   "given with their option: %s)",
				   arg, hint);
	else
		tp_cli_usage_error(cmd, "unexpected argument \"%s\"", arg);
}

int tp_opts_parse(const struct tp_cli_doc *doc, struct tp_opt *opts,
		  int argc, char **argv, char ***pos, int *npos,
		  int *exit_code)
{
	const char *cmd = doc->cmd;
	char **positional = calloc((size_t)argc + 1, sizeof(char *));
	int np = 0;
	bool only_pos = false;

	*exit_code = TP_EXIT_USAGE;
	if (!positional) {
		fprintf(stderr, "tagplan %s: out of memory\n", cmd);
		*exit_code = TP_EXIT_FAILURE;
		return -1;
	}
	/* --help before anything is parsed: the help prints each option's
	   default from its destination, which an option given before it
	   would have set ("check -p x.json --help" showed "[x.json]" as
	   -p's default, "plan --seed 7 --help" "[7]") */
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			tp_opts_help(stdout, doc, opts);
			free(positional);
			*exit_code = TP_EXIT_OK;
			return -1;
		}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		struct tp_opt *o = NULL;
		const char *val = NULL;

		if (only_pos || a[0] != '-' || strcmp(a, "-") == 0) {
			positional[np++] = argv[i];
			continue;
		}
		if (strcmp(a, "--") == 0) {
			only_pos = true;
			continue;
		}
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			tp_opts_help(stdout, doc, opts);
			free(positional);
			*exit_code = TP_EXIT_OK;
			return -1;
		}
		if (a[1] == '-') {
			const char *eq = strchr(a + 2, '=');
			size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
			o = find_long(opts, a + 2, len);
			if (eq)
				val = eq + 1;
		} else if (a[2] == '\0') {
			o = find_short(opts, a[1]);
		}
		if (!o && short_joined(cmd, opts, a)) {
			free(positional);
			return -1;
		}
		if (!o) {
			const struct tp_opt *n = near_option(opts, a);
			const char *other = other_commands_option(cmd, a);
			if (other)
				tp_cli_usage_error(cmd, "unknown option \"%s\" "
							"(%s)",
						   a, other);
			else if (n)
				tp_cli_usage_error(cmd,
						   "unknown option \"%s\" (did "
						   "you mean --%s?)",
						   a, n->name);
			else
				tp_cli_usage_error(cmd,
						   "unknown option \"%s\"", a);
			free(positional);
			return -1;
		}
		if (o->type == TP_OPT_FLAG) {
			if (val) {
				tp_cli_usage_error(cmd,
						   "--%s takes no value", o->name);
				free(positional);
				return -1;
			}
		} else if (!val) {
			if (i + 1 >= argc) {
				tp_cli_usage_error(cmd, "%s needs a value (%s)",
						   a, o->metavar ? o->metavar
								 : "X");
				free(positional);
				return -1;
			}
			val = argv[++i];
		}
		if (o->seen && o->type != TP_OPT_LIST) {
			tp_cli_usage_error(cmd, "--%s given twice", o->name);
			free(positional);
			return -1;
		}
		o->seen = true;
		if (set_value(cmd, o, val)) {
			free(positional);
			return -1;
		}
	}
	positional[np] = NULL;
	if (pos) {
		*pos = positional; /* the caller frees the array */
	} else {
		if (np) {
			unexpected_argument(cmd, opts, positional);
			free(positional);
			return -1;
		}
		free(positional);
	}
	if (npos)
		*npos = np;
	*exit_code = TP_EXIT_OK;
	return 0;
}

void tp_cli_help_item(struct tp_strbuf *sb, int indent, const char *name,
		      int name_width, const char *text)
{
	int col = indent + name_width + 1, start = col;
	const char *p = text;

	tp_strbuf_addf(sb, "%*s%-*s ", indent, "", name_width, name);
	while (*p) {
		const char *w = p;
		int n;
		while (*w && *w != ' ')
			w++;
		n = (int)(w - p);
		if (col > start && col + 1 + n > 79) {
			tp_strbuf_addf(sb, "\n%*s", start, "");
			col = start;
		} else if (col > start) {
			tp_strbuf_addc(sb, ' ');
			col++;
		}
		tp_strbuf_add(sb, p, (size_t)n);
		col += n;
		p = *w ? w + 1 : w;
	}
	tp_strbuf_addc(sb, '\n');
}

void tp_cli_print_warnings(const char *cmd, struct tp_strbuf *w)
{
	const char *s = tp_strbuf_cstr(w);

	while (*s) {
		const char *nl = strchr(s, '\n');
		int n = nl ? (int)(nl - s) : (int)strlen(s);
		if (n) {
			fprintf(stderr, "tagplan %s: warning: ", cmd);
			tp_cli_escape(stderr, s, (size_t)n, false);
			fputc('\n', stderr);
		}
		s += n + (nl ? 1 : 0);
	}
	tp_strbuf_reset(w);
}

const char tp_cli_default_stdout[] = "-";

int tp_cli_check_outputs(const char *cmd, const struct tp_cli_file *inputs,
			 const struct tp_cli_file *outputs)
{
	for (const struct tp_cli_file *o = outputs; o && o->opt; o++) {
		if (!o->path)
			continue;
		for (const struct tp_cli_file *i = inputs; i && i->opt; i++)
			if (i->path && tp_file_same(i->path, o->path))
				return tp_cli_usage_error(
					cmd,
					"%s %s is also the input %s %s: writing "
					"it would destroy the input; give the "
					"output another name",
					o->opt, o->path, i->opt, i->path);
	}
	for (const struct tp_cli_file *o = outputs; o && o->opt; o++)
		for (const struct tp_cli_file *p = outputs; p < o; p++)
			if (o->path && p->path &&
			    tp_file_same_output(p->path, o->path))
				return p->path == tp_cli_default_stdout
				    ? tp_cli_usage_error(
					  cmd,
					  "%s %s would be written to standard "
					  "output, which carries the command's "
					  "output without %s: give %s a file "
					  "name, or %s FILE",
					  o->opt, o->path, p->opt, o->opt,
					  p->opt)
				    : tp_cli_usage_error(
					  cmd,
					  "%s %s and %s %s would both be "
					  "written to %s: give each output its "
					  "own name",
					  p->opt, p->path, o->opt, o->path,
					  tp_file_same_output(o->path, "-")
					      ? "standard output"
					      : "one file");
	for (const struct tp_cli_file *o = outputs; o && o->opt; o++) {
		struct tp_error err;
		tp_error_clear(&err);
		if (o->path && tp_file_check_output(o->path, &err) != TP_OK)
			return tp_cli_fail(&err);
	}
	return 0;
}
