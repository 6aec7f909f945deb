/*
 * build_nvsmi.c - a one-node topology from the matrix `nvidia-smi topo -m`
 * prints.
 *
 * Accepted: the header line naming GPU0 .. GPU(n-1) (then NIC columns,
 * "CPU Affinity", "NUMA Affinity", "GPU NUMA ID", all ignored), one row
 * per GPU whose first n entries are X (itself), NV# (# bonded NVLinks),
 * PIX, PXB, PHB, NODE, SYS (SOC, the old name of SYS); rows of NICs
 * (mlx5_0, NIC0, ...) and everything from "Legend:" on are ignored, and
 * so are terminal escape sequences (some versions underline the header).
 *
 * Links (per direction; see the table in links_for): NV# = # links x the
 * NVLink rate of the GPU generation (20 GB/s per link for P100, 25 for
 * V100, A100, H100, H200); PIX/PXB = the GPU's PCIe x16 rate; PHB, NODE
 * and SYS pay for the host bridge, the hop between root complexes and the
 * socket interconnect (factors and latencies are ASSUMPTIONS, typical of
 * measured peer-to-peer rates, not vendor figures).  When every pair is
 * NV# with the same # the GPUs sit on NVSwitch: one fabric vertex instead
 * of pairwise links.  Otherwise every pair gets its own link, so the
 * sharing of a PCIe switch or host bridge by several pairs is not
 * modelled (the matrix does not say which pairs share one).
 */
#include "build.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "io_int.h"

enum entry { E_SELF, E_NV, E_PIX, E_PXB, E_PHB, E_NODE, E_SYS };

struct cell {
	uint8_t kind;
	uint8_t links; /* NV# */
	int line, col;
};

#define MAX_GPUS 64
#define MAX_TOKENS 256

struct tok {
	const char *s;
	size_t len;
	int col;
};

/* Copy a line without terminal escape sequences (ESC [ ... letter). */
static size_t strip_line(const char *s, size_t n, char *out, size_t cap)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k + 1 < cap; i++) {
		if (s[i] == 0x1b) {
			i++;
			if (i < n && s[i] == '[')
				while (i + 1 < n &&
				       !isalpha((unsigned char)s[i + 1]))
					i++;
			i++; /* the final letter */
			continue;
		}
		out[k++] = s[i];
	}
	out[k] = '\0';
	return k;
}

static int tokenize(const char *line, struct tok *t, int max)
{
	int n = 0, col = 1;

	for (const char *p = line; *p;) {
		if (*p == ' ' || *p == '\t' || *p == '\r') {
			p++;
			col++;
			continue;
		}
		if (n == max)
			break;
		t[n].s = p;
		t[n].col = col;
		while (*p && *p != ' ' && *p != '\t' && *p != '\r') {
			p++;
			col++;
		}
		t[n].len = (size_t)(p - t[n].s);
		n++;
	}
	return n;
}

/* "GPU<k>" -> k, else -1. */
static int gpu_label(const struct tok *t)
{
	int k = 0;

	if (t->len < 4 || strncmp(t->s, "GPU", 3) != 0)
		return -1;
	for (size_t i = 3; i < t->len; i++) {
		if (!isdigit((unsigned char)t->s[i]) || k > 100000)
			return -1;
		k = k * 10 + (t->s[i] - '0');
	}
	return k;
}

static bool tok_is(const struct tok *t, const char *s)
{
	return t->len == strlen(s) && strncmp(t->s, s, t->len) == 0;
}

static int parse_entry(const struct tok *t, struct cell *c)
{
	static const struct {
		const char *s;
		enum entry e;
	} names[] = {{"X", E_SELF},     {"PIX", E_PIX},   {"PXB", E_PXB},
		     {"PHB", E_PHB},    {"NODE", E_NODE}, {"SYS", E_SYS},
		     {"SOC", E_SYS}};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (tok_is(t, names[i].s)) {
			c->kind = (uint8_t)names[i].e;
			c->links = 0;
			return 0;
		}
	if (t->len >= 3 && t->len <= 4 && t->s[0] == 'N' && t->s[1] == 'V') {
		int k = 0;
		for (size_t i = 2; i < t->len; i++) {
			if (!isdigit((unsigned char)t->s[i]))
				return -1;
			k = k * 10 + (t->s[i] - '0');
		}
		if (k < 1 || k > 64)
			return -1;
		c->kind = E_NV;
		c->links = (uint8_t)k;
		return 0;
	}
	return -1;
}

static const char *entry_name(const struct cell *c, char *buf, size_t n)
{
	static const char *const names[] = {"X",   "NV",   "PIX", "PXB",
					    "PHB", "NODE", "SYS"};

	if (c->kind == E_NV)
		snprintf(buf, n, "NV%u", c->links);
	else
		snprintf(buf, n, "%s", names[c->kind]);
	return buf;
}

/* Bandwidth, latency and kind of the link one matrix entry stands for. */
static void links_for(const struct cell *c, double nvlink, double pcie,
		      double *bw, double *lat, enum tp_link_kind *kind)
{
	/* ASSUMPTIONS: fraction of the PCIe rate peer-to-peer traffic gets,
	 * and one-way latency, per path kind */
	static const double frac[] = {0, 0, 1.0, 1.0, 0.8, 0.7, 0.5};
	static const double us[] = {0, 0.3, 1.0, 1.5, 2.0, 2.5, 4.0};

	if (c->kind == E_NV) {
		*bw = c->links * nvlink;
		*lat = us[E_NV] * 1e-6;
		*kind = TP_LINK_NVLINK;
		return;
	}
	*bw = frac[c->kind] * pcie;
	*lat = us[c->kind] * 1e-6;
	*kind = TP_LINK_PCIE;
}

static enum tp_status fail_at(struct tp_error *err, const char *file,
			      int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static enum tp_status fail_at(struct tp_error *err, const char *file,
			      int line, int col, const char *fmt, ...)
{
	char msg[TP_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	tp_error_set_at(err, TP_EINPUT, line, col, "%s", msg);
	tp_error_set_file(err, file);
	return TP_EINPUT;
}

/* Parse the matrix into cells[n*n]; *n_gpus gets n. */
static enum tp_status parse_matrix(const char *text, size_t len,
				   const char *file, struct cell *cells,
				   int *n_gpus, struct tp_error *err)
{
	char *line = malloc(len + 1);
	struct tok *t = calloc(MAX_TOKENS, sizeof(*t));
	bool seen[MAX_GPUS] = {false};
	int n = -1, lineno = 0, last_line = 1;
	enum tp_status st = TP_OK;
	size_t pos = 0;

	if (!line || !t) {
		free(line);
		free(t);
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	}
	while (pos < len) {
		size_t end = pos, ll;
		int nt, row;
		while (end < len && text[end] != '\n')
			end++;
		lineno++;
		last_line = lineno;
		ll = strip_line(text + pos, end - pos, line, len + 1);
		pos = end + 1;
		if (strlen(line) != ll) {
			st = fail_at(err, file, lineno, 1,
				     "a NUL byte: this is not the text "
				     "`nvidia-smi topo -m` prints");
			goto out;
		}
		nt = tokenize(line, t, MAX_TOKENS);
		if (nt == 0)
			continue;
		if (tok_is(&t[0], "Legend:") ||
		    (nt > 1 && tok_is(&t[1], "Legend:")))
			break;
		if (n < 0) {
			/* the header: GPU0 GPU1 ... */
			if (gpu_label(&t[0]) != 0)
				continue;
			n = 0;
			while (n < nt && gpu_label(&t[n]) >= 0) {
				if (gpu_label(&t[n]) != n) {
					st = fail_at(
						err, file, lineno, t[n].col,
						"header column %.*s: expected "
						"GPU%d (GPU columns in order)",
						(int)t[n].len, t[n].s, n);
					goto out;
				}
				if (n == MAX_GPUS) {
					st = fail_at(err, file, lineno,
						     t[n].col,
						     "more than %d GPUs",
						     MAX_GPUS);
					goto out;
				}
				n++;
			}
			continue;
		}
		row = gpu_label(&t[0]);
		if (row < 0)
			continue; /* a NIC row */
		if (row >= n) {
			st = fail_at(err, file, lineno, t[0].col,
				     "row GPU%d, but the header names only "
				     "GPU0 to GPU%d",
				     row, n - 1);
			goto out;
		}
		if (seen[row]) {
			st = fail_at(err, file, lineno, t[0].col,
				     "a second row for GPU%d", row);
			goto out;
		}
		seen[row] = true;
		if (nt - 1 < n) {
			st = fail_at(err, file, lineno, t[0].col,
				     "row GPU%d has %d entries, the header "
				     "names %d GPUs",
				     row, nt - 1, n);
			goto out;
		}
		for (int k = 0; k < n; k++) {
			struct cell *c = &cells[row * n + k];
			if (parse_entry(&t[k + 1], c)) {
				st = fail_at(err, file, lineno, t[k + 1].col,
					     "GPU%d-GPU%d: unknown entry "
					     "\"%.*s\"; expected X, NV#, PIX, "
					     "PXB, PHB, NODE or SYS",
					     row, k, (int)t[k + 1].len,
					     t[k + 1].s);
				goto out;
			}
			c->line = lineno;
			c->col = t[k + 1].col;
			if ((c->kind == E_SELF) != (k == row)) {
				st = fail_at(err, file, lineno, c->col,
					     k == row
						     ? "GPU%d-GPU%d: expected "
						       "X on the diagonal"
						     : "GPU%d-GPU%d: X off the "
						       "diagonal",
					     row, k);
				goto out;
			}
		}
	}
	if (n <= 0) {
		st = fail_at(err, file, 1, 1,
			     "no header line \"GPU0 GPU1 ...\": is this the "
			     "output of `nvidia-smi topo -m`?");
		goto out;
	}
	for (int r = 0; r < n; r++)
		if (!seen[r]) {
			st = fail_at(err, file, last_line, 1,
				     "no row for GPU%d (the header names %d "
				     "GPUs)",
				     r, n);
			goto out;
		}
	for (int a = 0; a < n; a++)
		for (int b = a + 1; b < n; b++) {
			const struct cell *x = &cells[a * n + b],
					  *y = &cells[b * n + a];
			char s1[16], s2[16];
			if (x->kind == y->kind && x->links == y->links)
				continue;
			st = fail_at(err, file, y->line, y->col,
				     "GPU%d-GPU%d is %s but GPU%d-GPU%d (line "
				     "%d) is %s: the matrix must be symmetric",
				     b, a, entry_name(y, s1, sizeof(s1)), a, b,
				     x->line, entry_name(x, s2, sizeof(s2)));
			goto out;
		}
	*n_gpus = n;
out:
	free(line);
	free(t);
	return st;
}

enum tp_status tp_build_topology_nvidia_smi(const char *text, size_t len,
					    const char *file_name,
					    const char *gpu_type,
					    struct tp_cluster *c,
					    struct tp_error *err)
{
	struct cell *cells = calloc(MAX_GPUS * MAX_GPUS, sizeof(*cells));
	enum tp_status st;
	int n = 0;
	uint32_t type, node;
	double nvlink, pcie;
	bool nvswitch = true;
	struct tp_node_build nb = {0};
	char nname[128], base[96];
	const char *b = strrchr(file_name, '/');

	if (!cells)
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	st = parse_matrix(text, len, file_name, cells, &n, err);
	if (!st)
		st = tp_devices_load_builtin(c, err);
	if (st)
		goto out;
	type = tp_cluster_find_type(c, gpu_type);
	if (type == TP_NONE) {
		/* the types meant ("A100" -> the four A100s), then all */
		struct tp_strbuf sb, sug;
		const char **names = tp_calloc(c->types.n + 1, sizeof(*names));
		tp_strbuf_init(&sb);
		tp_strbuf_init(&sug);
		for (size_t k = 0; k < c->types.n; k++) {
			tp_strbuf_addf(&sb, "%s%s", k ? ", " : "",
				       c->types.v[k].name);
			if (names)
				names[k] = c->types.v[k].name;
		}
		if (names)
			tp_io_suggest(gpu_type, names, c->types.n, 4, &sug);
		st = tp_error_set(err, TP_EUSAGE,
				  "--gpu: unknown device type \"%s\"%s%s%s; "
				  "known: %s",
				  gpu_type, sug.len ? " (did you mean " : "",
				  tp_strbuf_cstr(&sug), sug.len ? "?)" : "",
				  tp_strbuf_cstr(&sb));
		tp_strbuf_release(&sb);
		tp_strbuf_release(&sug);
		free(names);
		goto out;
	}
	/* the type's bus (presets.c): every catalogue type is listed */
	if (!tp_gpu_bus(gpu_type, &pcie, &nvlink)) {
		st = tp_error_set(err, TP_EINTERNAL,
				  "device type \"%s\" has no host bus in "
				  "presets.c",
				  gpu_type);
		goto out;
	}
	for (int i = 0; i < n * n && nvlink <= 0; i++)
		if (cells[i].kind == E_NV) {
			st = fail_at(err, file_name, cells[i].line,
				     cells[i].col,
				     "NV%u: a %s has no NVLink; pass the GPUs' "
				     "type with --gpu",
				     cells[i].links, gpu_type);
			goto out;
		}
	for (int i = 0; i < n * n; i++) {
		int a = i / n, k = i % n;
		if (a != k && (cells[i].kind != E_NV ||
			       cells[i].links != cells[1].links))
			nvswitch = false;
	}
	if (n < 3)
		nvswitch = false;
	/* node name: the file's base name without extension */
	snprintf(base, sizeof(base), "%s", b ? b + 1 : file_name);
	if (strchr(base, '.'))
		*strchr(base, '.') = '\0';
	if (!base[0] || !strcmp(base, "-"))
		snprintf(base, sizeof(base), "node");
	snprintf(nname, sizeof(nname), "%s-0", base);
	nb.name = nname;
	nb.type = type;
	nb.count = (uint32_t)n;
	nb.fabric_kind = nvswitch ? TP_LINK_NVSWITCH : TP_LINK_PCIE;
	if (nvswitch) {
		nb.fabric_bw_Bps = cells[1].links * nvlink;
		nb.fabric_latency_s = 0.3e-6;
	}
	st = tp_cluster_build_node(c, &nb, &node, err);
	for (int a = 0; !st && !nvswitch && a < n; a++)
		for (int k = a + 1; !st && k < n; k++) {
			double bw, lat;
			enum tp_link_kind kind;
			uint32_t first = c->nodes.v[node].first_device;
			links_for(&cells[a * n + k], nvlink, pcie, &bw, &lat,
				  &kind);
			st = tp_cluster_add_link(
				c, c->devices.v[first + (uint32_t)a].vertex,
				c->devices.v[first + (uint32_t)k].vertex, bw,
				lat, kind, err);
		}
	if (!st) {
		char cname[160];
		const char *nm;
		snprintf(cname, sizeof(cname), "nvidia-smi:%s", base);
		nm = tp_arena_strdup(&c->arena, cname);
		if (!nm)
			st = tp_error_set(err, TP_ENOMEM, "out of memory");
		else
			c->name = nm;
	}
	if (!st)
		st = tp_cluster_finalize(c, err);
out:
	free(cells);
	if (st) {
		tp_cluster_release(c);
		tp_cluster_init(c);
	}
	return st;
}
