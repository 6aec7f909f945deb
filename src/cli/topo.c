/*
 * topo.c - `tagplan topo`: a topology file (tagplan-topology/1) from node
 * presets composed over a network, or from the matrix `nvidia-smi topo -m`
 * prints (src/io/build.h).  The topology goes to -o (atomically) or
 * stdout; a one-line inventory goes to stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "core/strbuf.h"
#include "inputs.h"
#include "io/build.h"
#include "io/io.h"

static const char usage[] =
	"PRESET[:NODES] [PRESET[:NODES] ...] [--net NETWORK]\n"
	"                    [--oversubscription X] [--fabric SPEC] [-o TOPO]\n"
	"       tagplan topo --from-nvidia-smi FILE --gpu TYPE [-o TOPO]";

static void about_text(struct tp_strbuf *sb)
{
	tp_strbuf_adds(
		sb,
		"Build a topology (tagplan-topology/1) and write it to -o TOPO, "
		"or to stdout.\nNodes of each PRESET are named PRESET-0, "
		"PRESET-1, ...; their GPUs NODE/gpuI.\nAll nodes join one "
		"switch (a star) through their NICs, or the switch tiers of\n"
		"--fabric clos:leaf=N[,spine=M][,oversubscription=X]"
		"[,latency=S]: leaf switches\nof N nodes, spines of M leaves "
		"(all leaves without spine=) under one core\nswitch, leaf "
		"uplinks divided by X, S seconds per spine or core switch "
		"crossed\n(default 5e-7, ASSUMPTION); --fabric rail:... (same "
		"keys): rail-optimised, one\nNIC per GPU, GPU i of each leaf "
		"group's nodes on its leaf i, spines of M\ngroups (presets with "
		"one NIC per GPU); --fabric FILE reads the same keys from\na "
		"JSON file {\"format\": \"tagplan-fabric/1\", \"kind\": "
		"\"clos\" or \"rail\", \"leaf\": N,\n...}.  --net replaces the "
		"presets' NIC kind (keeping their NIC count),\n"
		"--oversubscription divides each node's uplink.  Figures are "
		"per direction;\nlatencies marked ASSUMPTION are typical values, "
		"not vendor figures.\n\nnode presets:\n");
	for (size_t i = 0; tp_node_preset_name(i); i++)
		tp_cli_help_item(sb, 2, tp_node_preset_name(i), 12,
			 tp_node_preset_about(tp_node_preset_name(i)));
	tp_strbuf_adds(sb, "\ncompositions:\n");
	for (int i = 0; tp_topology_composition_names[i]; i++)
		tp_cli_help_item(sb, 2, tp_topology_composition_names[i], 12,
			 tp_node_preset_about(tp_topology_composition_names[i]));
	tp_strbuf_adds(sb, "\nnetworks (per NIC):\n");
	for (int i = 0; tp_network_names[i]; i++)
		tp_cli_help_item(sb, 2, tp_network_names[i], 12,
			 tp_network_about(tp_network_names[i]));
	tp_strbuf_adds(
		sb,
		"\n--from-nvidia-smi reads the matrix of `nvidia-smi topo -m` "
		"(NV#, PIX, PXB, PHB,\nNODE, SYS) into one node of --gpu TYPE "
		"devices (a name of data/devices.json):\nNV# = # NVLinks x "
		"25 GB/s (P100: 20), PIX/PXB = the GPU's PCIe x16 rate,\nPHB "
		"0.8x, NODE 0.7x, SYS 0.5x of it (ASSUMPTIONS); all pairs NV# "
		"alike =\nNVSwitch.\n\nexamples:\n"
		"  tagplan topo dgx-a100:4 --net ib-hdr -o topo.json\n"
		"  tagplan topo v100-nvlink:2 1080ti-pcie:2 --net 25gbe -o "
		"mixed.json\n"
		"  tagplan topo tag-testbed -o tag.json\n"
		"  nvidia-smi topo -m > m.txt\n"
		"  tagplan topo --from-nvidia-smi m.txt --gpu A100-SXM4-80GB");
}

static int from_nvidia_smi(const char *file, const char *gpu,
			   struct tp_cluster *c, struct tp_error *err)
{
	char *text = NULL;
	size_t len = 0;
	enum tp_status st;

	st = tp_file_read_text(file, 0, &text, &len, err);
	if (!st)
		st = tp_build_topology_nvidia_smi(text, len, file, gpu, c,
						  err);
	free(text);
	return st;
}

/* A node count written as a word of its own: "4", "x4", "*4". */
static bool is_count(const char *p, size_t n)
{
	if (n && (*p == 'x' || *p == '*')) {
		p++;
		n--;
	}
	for (size_t i = 0; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return false;
	return n > 0;
}

/* The n bytes at p into fix as one shell word, after a space unless
 * fix is empty. */
static void add_word(struct tp_strbuf *fix, const char *p, size_t n)
{
	char *w = strndup(p, n);

	if (fix->len)
		tp_strbuf_addc(fix, ' ');
	if (!w) {
		fix->failed = true;
		return;
	}
	tp_strbuf_add_shell_word(fix, w);
	free(w);
}

/* The words of the arguments (split at seps) as `tagplan topo` takes
 * them, into fix (shell words): a count joins the preset before it, or the one after
 * when it comes first ("dgx-a100 4", "4 dgx-a100": dgx-a100:4).  True
 * when a count was joined. */
static bool respell(char **pos, int npos, const char *seps,
		    struct tp_strbuf *fix)
{
	const char *pend = NULL; /* a count waiting for its preset */
	size_t pn = 0, pd = 0;   /* its length, and of its 'x' or '*' */
	bool open = false, joined = false;

	for (int i = 0; i < npos; i++)
		for (const char *p = pos[i]; *p;) {
			size_t n = strcspn(p, seps);
			if (n && is_count(p, n)) {
				size_t d = (*p == 'x' || *p == '*');
				if (open) {
					tp_strbuf_addf(fix, ":%.*s",
						       (int)(n - d), p + d);
					open = false;
					joined = true;
				} else if (!pend) {
					pend = p;
					pn = n;
					pd = d;
				}
			} else if (n) {
				bool colon = memchr(p, ':', n) != NULL;
				add_word(fix, p, n);
				open = !colon;
				if (pend && !colon) {
					tp_strbuf_addf(fix, ":%.*s",
						       (int)(pn - pd),
						       pend + pd);
					pend = NULL;
					open = false;
					joined = true;
				}
			}
			p += n;
			p += strspn(p, seps);
		}
	if (pend) /* no preset to join: as written */
		add_word(fix, pend, pn);
	return joined;
}

/* The command line argv meant, "tagplan topo ..." into line: every
 * argument as given (shell-quoted) but the positional ones, which give
 * way to fix (the presets respelled) where the first of them was. */
static void command_meant(int argc, char **argv, char **pos, int npos,
			  const struct tp_strbuf *fix, struct tp_strbuf *line)
{
	bool fixed = false;

	tp_strbuf_adds(line, "tagplan topo");
	for (int i = 1; i < argc; i++) {
		bool positional = false;

		for (int k = 0; k < npos && !positional; k++)
			positional = argv[i] == pos[k];
		if (positional && fixed)
			continue;
		tp_strbuf_addc(line, ' ');
		if (positional) {
			tp_strbuf_adds(line, tp_strbuf_cstr(fix));
			fixed = true;
		} else {
			tp_strbuf_add_shell_word(line, argv[i]);
		}
	}
}

/* Presets joined in one argument ("dgx-a100:2,dgx-h100:2", a quoted
 * "dgx-a100:2 dgx-h100:2", '+' or ';'), or a node count given as a word
 * of its own ("dgx-a100 4", `tagplan topo dgx-a100 4`): a usage error
 * giving the whole command line meant, the other options kept (the
 * node count's error named only the count; a lone "4" was taken for a
 * preset, "did you mean t4-pcie"; then the line meant dropped --net,
 * -o and the rest).  argv is the command's, pos its positional
 * arguments (pointers into argv).  Returns the exit code, 0 when none
 * is. */
static int joined_presets(int argc, char **argv, char **pos, int npos)
{
	static const char seps[] = " \t,;+";
	struct tp_strbuf fix, line;
	int bad = -1, code;
	bool joined;

	for (int i = 0; i < npos && bad < 0; i++)
		if (strpbrk(pos[i], seps) || is_count(pos[i], strlen(pos[i])))
			bad = i;
	if (bad < 0)
		return 0;
	tp_strbuf_init(&fix);
	joined = respell(pos, npos, seps, &fix);
	if (!joined && !strpbrk(pos[bad], seps)) {
		/* a count with no preset to join: the preset's error says
		 * how to write one */
		tp_strbuf_release(&fix);
		return 0;
	}
	tp_strbuf_init(&line);
	command_meant(argc, argv, pos, npos, &fix, &line);
	code = tp_cli_usage_error("topo",
				  joined ? "\"%s\": a node count goes after "
					   "its preset, joined by ':': %s"
					 : "\"%s\": one preset per argument: "
					   "%s",
				  pos[bad], tp_strbuf_cstr(&line));
	tp_strbuf_release(&fix);
	tp_strbuf_release(&line);
	return code;
}

/* A preset that names a file or folder, when the presets did not build
 * (`tagplan topo plan.json`, `tagplan topo data/topologies/dgx-a100.json`:
 * a topology file is used as it is; "unknown node preset" listed the
 * presets): a usage error saying what the file is and what takes it.
 * Returns the exit code, 0 when no preset names a file. */
static int preset_is_file(char **pos, int npos)
{
	for (int i = 0; i < npos; i++) {
		struct stat sb;
		struct tp_cluster one;
		struct tp_error e;
		enum tp_format_kind k;
		bool preset;

		if (stat(pos[i], &sb) != 0)
			continue;
		/* a file named as a preset is the preset */
		tp_cluster_init(&one);
		tp_error_clear(&e);
		preset = tp_build_topology_fabric((const char *const *)&pos[i],
						  1, NULL, 1, NULL, &one,
						  &e) == TP_OK;
		tp_cluster_release(&one);
		if (preset)
			continue;
		k = tp_inputs_file_kind(pos[i]);
		if (k == TP_FORMAT_TOPOLOGY)
			return tp_cli_usage_error(
				"topo",
				"\"%s\" is a topology file already: give it "
				"to the other commands as it is (-t %s); topo "
				"builds one from node presets (PRESET:NODES, "
				"e.g. dgx-a100:4)",
				pos[i], pos[i]);
		if (S_ISREG(sb.st_mode) && !strstr(pos[i], ".json"))
			return tp_cli_usage_error(
				"topo",
				"\"%s\" is a file, not a node preset: topo "
				"builds a topology from presets (PRESET:NODES, "
				"e.g. dgx-a100:4), or from `nvidia-smi topo -m` "
				"output with --from-nvidia-smi %s --gpu TYPE",
				pos[i], pos[i]);
		return tp_cli_usage_error(
			"topo",
			"\"%s\" is a %s, not a node preset: topo builds a "
			"topology from presets (PRESET:NODES, e.g. "
			"dgx-a100:4; the list in --help)",
			pos[i],
			S_ISDIR(sb.st_mode) ? "folder"
			: k != TP_FORMAT_UNKNOWN
				? (k == TP_FORMAT_PLAN	  ? "plan file"
				   : k == TP_FORMAT_MODEL ? "model file"
							  : "tagplan file")
				: "file");
	}
	return 0;
}

int cmd_topo(int argc, char **argv)
{
	const char *net = NULL, *out = NULL, *smi = NULL, *gpu = NULL,
		   *fabric = NULL;
	double over = 1;
	bool quiet = false;
	struct tp_opt opts[] = {
		{"net", 0, TP_OPT_STRING, &net, "NETWORK",
		 "the NICs of every node: 10gbe, 25gbe, 100gbe, 200gbe, "
		 "ib-edr, ib-hdr, ib-ndr, ib-xdr, roce-400g, gaudi2-roce, "
		 "gaudi3-roce (default: each preset's own)",
		 0, 0, false},
		{"oversubscription", 0, TP_OPT_DOUBLE, &over, "X",
		 "divide each node's uplink to the switch by X", 1, 1e6,
		 false},
		{"fabric", 0, TP_OPT_STRING, &fabric, "SPEC",
		 "switch tiers instead of one switch: "
		 "clos:leaf=N[,spine=M][,oversubscription=X][,latency=S], "
		 "rail: with the same keys (rail-optimised), or a fabric file "
		 "(tagplan-fabric/1: the same keys as JSON)",
		 0, 0, false},
		{"from-nvidia-smi", 0, TP_OPT_STRING, &smi, "FILE",
		 "read `nvidia-smi topo -m` output (- = stdin)", 0, 0, false},
		{"gpu", 0, TP_OPT_STRING, &gpu, "TYPE",
		 "with --from-nvidia-smi: the device type of the GPUs", 0, 0,
		 false},
		{"output", 'o', TP_OPT_STRING, &out, "TOPO",
		 "write the topology here (atomically) instead of stdout", 0,
		 0, false},
		{"quiet", 'q', TP_OPT_FLAG, &quiet, NULL, TP_CLI_QUIET_HELP, 0,
		 0, false},
		{0}};
	struct tp_strbuf about, sb;
	struct tp_cluster c;
	struct tp_error err;
	enum tp_status st;
	char **pos = NULL;
	int npos = 0, code;

	tp_strbuf_init(&about);
	about_text(&about);
	if (tp_opts_parse(&(struct tp_cli_doc){"topo", usage,
					       tp_strbuf_cstr(&about)},
			  opts, argc, argv, &pos, &npos, &code)) {
		tp_strbuf_release(&about);
		return code;
	}
	tp_strbuf_release(&about);
	{
		const struct tp_cli_file ins[] = {{"--from-nvidia-smi", smi},
						  {NULL, NULL}};
		const struct tp_cli_file outs[] = {{"-o", out}, {NULL, NULL}};
		code = tp_cli_json_output("topo", "-o", out,
					  "the topology file", NULL);
		if (!code)
			code = tp_cli_check_outputs("topo", ins, outs);
		if (code) {
			free(pos);
			return code;
		}
	}
	tp_cluster_init(&c);
	tp_error_clear(&err);
	if (smi) {
		if (npos || net || opts[1].seen || fabric) {
			free(pos);
			return tp_cli_usage_error(
				"topo", "--from-nvidia-smi builds one node: no "
					"presets, --net, --oversubscription "
					"or --fabric with it");
		}
		free(pos);
		if (!gpu)
			return tp_cli_usage_error(
				"topo", "--from-nvidia-smi needs --gpu TYPE "
					"(e.g. A100-SXM4-80GB; the types are "
					"in data/devices.json)");
		st = from_nvidia_smi(smi, gpu, &c, &err);
	} else {
		if (gpu) {
			free(pos);
			return tp_cli_usage_error(
				"topo", "--gpu goes with --from-nvidia-smi; "
					"presets name their GPUs");
		}
		if (!npos) {
			free(pos);
			return tp_cli_usage_error(
				"topo", "missing PRESET[:NODES], e.g. "
					"dgx-a100:4 (see the list in --help)");
		}
		if ((code = joined_presets(argc, argv, pos, npos))) {
			free(pos);
			return code;
		}
		st = tp_build_topology_fabric((const char *const *)pos, npos,
					      net, over, fabric, &c, &err);
		if (st && (code = preset_is_file(pos, npos))) {
			tp_cluster_release(&c);
			free(pos);
			return code;
		}
		free(pos);
	}
	if (st)
		return tp_cli_fail(&err);
	tp_strbuf_init(&sb);
	tp_topology_write(&c, &sb);
	if (sb.failed)
		st = tp_error_set(&err, TP_ENOMEM, "out of memory");
	else
		st = tp_file_write_atomic(out ? out : "-", sb.buf, sb.len,
					  &err);
	tp_strbuf_release(&sb);
	if (!st && !quiet) {
		fprintf(stderr, "tagplan topo: %s: %zu devices (", c.name,
			c.devices.n);
		for (size_t t = 0, k = 0; t < c.types.n; t++)
			if (c.type_count[t])
				fprintf(stderr, "%s%u x %s", k++ ? ", " : "",
					c.type_count[t], c.types.v[t].name);
		fprintf(stderr, ") in %zu node%s%s%s\n", c.nodes.n,
			c.nodes.n == 1 ? "" : "s", out ? " -> " : "",
			out ? out : "");
	}
	tp_cluster_release(&c);
	return st ? tp_cli_fail(&err) : TP_EXIT_OK;
}
