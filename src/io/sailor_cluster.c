/*
 * sailor_cluster.c - Sailor's (eth-easl/sailor, SOSP 2025) cluster
 * description as a tagplan topology (io.h tp_sailor_import_cluster).
 *
 * Sailor describes a cluster by a trace, configs/trace_NAME.csv: a header
 * ",Timestamp,GPU_zone,..." and rows "i,time,count,..." of GPUs per type
 * and zone over time; configs/basic_cluster_config.json gives GPUs per
 * node (and memory) per GPU type; providers/intra_node_bandwidths.json
 * fits the bandwidth of n GPUs of a node ([GPU][n] = [[a, b, c], max
 * bytes/s]) and providers/multizone_bandwidths_het.json that between two
 * nodes ([zone][GPU][n][zone][GPU][n]), with bandwidth in GB/s = a x^2 +
 * b x + c, x = log2(message MB), capped at max.
 *
 * The topology (one row of the trace): per GPU type and zone, nodes of
 * GPUs-per-node devices of tagplan's type (sailor.c's mapping; the last
 * node holds the remainder), an NVSwitch-like fabric of the intra-node
 * fit's maximum at n = GPUs per node, one NIC of the maximum between two
 * such nodes of the zone, all on one switch (a star: between types the
 * slower NIC, which is what Sailor measured: A100-V100 5.79 GB/s, V100-V100
 * 5.79, A100-A100 6.04).  A link's latency is the fit's excess time for
 * 1 MB over the maximum: 1 MB / fit(0) - 1 MB / max (a route between
 * two nodes of a star pays half of each end's NIC latency, so the NIC
 * takes the whole).
 *
 * Dropped, and said in the notes: GPU types tagplan has no device type
 * for; the fits' shape between 1 MB and the cap (tagplan prices a
 * transfer as latency + bytes / bandwidth); Sailor's memory per GPU
 * (tagplan keeps its catalogue's, the notes compare them); bandwidths of
 * other zones.  A trace row spanning several zones is refused (the
 * shipped traces have one; zones would need a WAN tier per zone pair).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "io_int.h"
#include "json.h"

#define MAX_COLS 32

struct col {
	char gpu[32], zone[64];
	long count;
};

/* The trace's columns and the counts of row `row` into cols; *n the
 * columns.  Errors name the file, line and column. */
static enum tp_status read_trace(const char *path, unsigned row,
				 struct col *cols, int *n,
				 struct tp_error *err)
{
	char *text = NULL, *save = NULL, *line;
	size_t len = 0;
	int lineno = 0, found = 0;
	enum tp_status st = tp_file_read_text(path, 0, &text, &len, err);

	*n = 0;
	if (st)
		return st;
	for (line = strtok_r(text, "\n", &save); line && !st && !found;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f = line, *comma;
		int k = 0;
		lineno++;
		line[strcspn(line, "\r")] = 0;
		for (;; k++) {
			comma = strchr(f, ',');
			if (comma)
				*comma = 0;
			if (lineno == 1 && k >= 2) {
				char *us = strrchr(f, '_');
				if (!us || us == f || !us[1] || *n >= MAX_COLS) {
					st = tp_error_set_at(
					    err, TP_EINPUT, 1,
					    (int)(f - line) + 1,
					    "column \"%s\": expected GPU_zone "
					    "(e.g. A100-40_us-central1-a), at "
					    "most %d columns",
					    f, MAX_COLS);
					break;
				}
				snprintf(cols[*n].gpu, sizeof(cols[0].gpu),
					 "%.*s", (int)(us - f), f);
				snprintf(cols[*n].zone, sizeof(cols[0].zone),
					 "%s", us + 1);
				(*n)++;
			} else if (lineno > 1 && k == 0) {
				char *e;
				unsigned long r = strtoul(f, &e, 10);
				if (e == f || *e || r != row)
					break;
				found = lineno;
			} else if (lineno > 1 && k >= 2) {
				char *e;
				double v = strtod(f, &e);
				if (k - 2 >= *n || e == f || *e || v < 0 ||
				    v != floor(v) || v > 1e7) {
					st = tp_error_set_at(
					    err, TP_EINPUT, lineno,
					    (int)(f - line) + 1,
					    "\"%s\": expected a GPU count (a "
					    "whole number, one per column of "
					    "the header)",
					    f);
					break;
				}
				cols[k - 2].count = (long)v;
			}
			if (!comma)
				break;
			f = comma + 1;
		}
		if (!st && lineno > 1 && found && k - 1 != *n)
			st = tp_error_set_at(err, TP_EINPUT, lineno, 1,
					     "row %u has %d counts; the header "
					     "names %d GPU types",
					     row, k - 1, *n);
	}
	if (!st && !*n)
		st = tp_error_set_at(err, TP_EINPUT, 1, 1,
				     "no GPU_zone columns in the header "
				     "(expected \",Timestamp,A100-40_zone,"
				     "...\")");
	else if (!st && !found)
		st = tp_error_set(err, TP_EINPUT,
				  "no row %u (rows are numbered in the first "
				  "column; --row picks one)",
				  row);
	free(text);
	if (st)
		tp_error_set_file(err, path);
	return st;
}

/* A fit [[a, b, c], max] at o: its maximum (bytes/s) and the latency it
 * implies (s); false when o is not such a fit. */
static bool fit_of(const struct tp_json *o, double *max_Bps, double *lat_s)
{
	const struct tp_json *abc;
	double c;

	if (!o || o->type != TP_JSON_ARRAY || o->n != 2 ||
	    o->items[0]->type != TP_JSON_ARRAY || o->items[0]->n != 3 ||
	    o->items[1]->type != TP_JSON_NUMBER || !(o->items[1]->num > 0))
		return false;
	abc = o->items[0];
	if (abc->items[2]->type != TP_JSON_NUMBER)
		return false;
	c = abc->items[2]->num * 1e9; /* bytes/s at 1 MB (x = 0) */
	*max_Bps = o->items[1]->num;
	*lat_s = c > 0 && c < *max_Bps ? 1e6 / c - 1e6 / *max_Bps : 0;
	return true;
}

static const struct tp_json *child(const struct tp_json *o, const char *k)
{
	return o && o->type == TP_JSON_OBJECT ? tp_json_get(o, k) : NULL;
}

struct docs {
	struct tp_json_doc basic, intra, inter;
	char basic_path[4096], intra_path[4096], inter_path[4096];
};

/* One column as nodes of the topology's JSON (sb), with its notes. */
static enum tp_status add_column(const struct docs *d, const struct col *cl,
				 const char *type, struct tp_strbuf *sb,
				 bool *first, struct tp_strbuf *notes,
				 struct tp_error *err)
{
	const struct tp_json *b = child(d->basic.root, cl->gpu);
	const struct tp_json *g = child(b, "gpus_per_node"), *intra, *inter;
	const struct tp_json *mem = child(b, "mem_per_gpu");
	double fab_bw, fab_lat, nic_bw, nic_lat;
	char n[16];
	long gpn, full, rem;

	if (!g || g->type != TP_JSON_NUMBER || g->num < 1 || g->num > 64 ||
	    g->num != floor(g->num))
		return tp_error_set_path(err, TP_EINPUT, cl->gpu,
					 "%s: no gpus_per_node (1 to 64) for "
					 "%s; add it",
					 d->basic_path, cl->gpu);
	gpn = (long)g->num;
	snprintf(n, sizeof(n), "%ld", gpn);
	intra = child(child(d->intra.root, cl->gpu), n);
	if (gpn > 1 && !fit_of(intra, &fab_bw, &fab_lat))
		return tp_error_set(err, TP_EINPUT,
				    "%s: no bandwidth fit [[a, b, c], max] "
				    "at $.%s.\"%s\" (%ld GPUs per node)",
				    d->intra_path, cl->gpu, n, gpn);
	if (gpn == 1)
		fab_bw = 1e12, fab_lat = 0; /* no intra-node traffic */
	inter = child(child(child(child(child(child(d->inter.root, cl->zone),
						 cl->gpu),
					   n),
				     cl->zone),
			       cl->gpu),
		      n);
	if (!fit_of(inter, &nic_bw, &nic_lat))
		return tp_error_set(err, TP_EINPUT,
				    "%s: no bandwidth fit [[a, b, c], max] "
				    "between two %s nodes of %s at "
				    "$.%s.%s.\"%s\".%s.%s.\"%s\"",
				    d->inter_path, cl->gpu, cl->zone,
				    cl->zone, cl->gpu, n, cl->zone, cl->gpu,
				    n);
	full = cl->count / gpn;
	rem = cl->count % gpn;
	for (int part = 0; part < 2; part++) {
		long nodes = part ? (rem ? 1 : 0) : full;
		long devs = part ? rem : gpn;
		if (!nodes)
			continue;
		tp_strbuf_addf(sb,
			       "%s{\"name\": \"%s-%s%s\", \"count\": %ld, "
			       "\"devices\": [{\"type\": \"%s\", \"count\": "
			       "%ld}], \"fabric\": {\"kind\": \"nvswitch\", "
			       "\"bandwidth_Bps\": %.17g, \"latency_s\": "
			       "%.17g}, \"nic\": {\"count\": 1, "
			       "\"bandwidth_Bps\": %.17g, \"latency_s\": "
			       "%.17g}}",
			       *first ? "" : ", ", cl->gpu, cl->zone,
			       part ? "-part" : "", nodes, type, devs, fab_bw,
			       fab_lat, nic_bw, nic_lat);
		*first = false;
	}
	tp_strbuf_addf(notes,
		       "%s_%s: %ld GPUs as %s, %ld node%s of %ld%s; "
		       "intra-node %.4g GB/s (latency %.3g us), between "
		       "nodes %.4g GB/s (latency %.3g us): the fits' maxima, "
		       "latency from the fit at 1 MB\n",
		       cl->gpu, cl->zone, cl->count, type, full,
		       full == 1 ? "" : "s", gpn,
		       rem ? " and one of the rest" : "", fab_bw / 1e9,
		       fab_lat * 1e6, nic_bw / 1e9, nic_lat * 1e6);
	if (mem && mem->type == TP_JSON_NUMBER)
		tp_strbuf_addf(notes,
			       "%s: Sailor's %.4g GB per GPU dropped (the "
			       "catalogue's %s is kept)\n",
			       cl->gpu, mem->num / 1e9, type);
	return TP_OK;
}

/* The trace's path: a file as given, or DIR/configs/trace_NAME.csv. */
static void trace_path(const char *dir, const char *trace, char *out,
		       size_t n)
{
	size_t len = strlen(trace);

	if (strchr(trace, '/') || (len > 4 && !strcmp(trace + len - 4, ".csv")))
		snprintf(out, n, "%s", trace);
	else
		snprintf(out, n, "%s/configs/trace_%s.csv", dir, trace);
}

/* The traces DIR/configs holds, as the names --cluster takes, into sb
 * ("none" when there are none). */
static void list_traces(const char *dir, struct tp_strbuf *sb)
{
	char path[4096];
	struct dirent **e = NULL;
	int n;
	size_t n0 = sb->len;

	snprintf(path, sizeof(path), "%s/configs", dir);
	n = scandir(path, &e, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		size_t len = strlen(e[i]->d_name);
		if (len > 10 && !strncmp(e[i]->d_name, "trace_", 6) &&
		    !strcmp(e[i]->d_name + len - 4, ".csv"))
			tp_strbuf_addf(sb, "%s%.*s", sb->len > n0 ? ", " : "",
				       (int)(len - 10), e[i]->d_name + 6);
		free(e[i]);
	}
	free(e);
	if (sb->len == n0)
		tp_strbuf_addf(sb, "none");
}

/* A file import needs, readable, else an error naming it, what it is
 * for and the fix (exit 2: a missing input, not a failing system). */
static enum tp_status need_file(const char *path, const char *dir,
				const char *what, bool is_trace,
				struct tp_error *err)
{
	FILE *fp = fopen(path, "r");
	struct tp_strbuf sb;
	int e = errno;

	if (fp) {
		fclose(fp);
		return TP_OK;
	}
	tp_strbuf_init(&sb);
	if (is_trace)
		list_traces(dir, &sb);
	tp_error_set(err, TP_EINPUT,
		     "cannot open %s: %s; %s%s%s", what,
		     strerror(e),
		     is_trace ? "give --cluster the NAME of one of the "
				"folder's traces, configs/trace_NAME.csv ("
			      : "point sailor:DIR at a checkout of Sailor's "
				"repository (eth-easl/sailor), which has it",
		     is_trace ? (sb.buf ? sb.buf : "none") : "",
		     is_trace ? "), or a path to a .csv file" : "");
	tp_error_set_file(err, path);
	tp_strbuf_release(&sb);
	return TP_EINPUT;
}

enum tp_status tp_sailor_import_cluster(const char *dir, const char *trace,
					unsigned row, struct tp_cluster *c,
					struct tp_strbuf *notes,
					struct tp_error *err)
{
	struct docs d;
	struct col cols[MAX_COLS];
	struct tp_strbuf sb;
	char path[4096];
	const char *zone = NULL;
	enum tp_status st;
	int n = 0;
	bool first = true;
	long kept = 0;

	memset(&d, 0, sizeof(d));
	tp_strbuf_init(&sb);
	trace_path(dir, trace, path, sizeof(path));
	snprintf(d.basic_path, sizeof(d.basic_path),
		 "%s/configs/basic_cluster_config.json", dir);
	snprintf(d.intra_path, sizeof(d.intra_path),
		 "%s/providers/intra_node_bandwidths.json", dir);
	snprintf(d.inter_path, sizeof(d.inter_path),
		 "%s/providers/multizone_bandwidths_het.json", dir);
	if ((st = need_file(path, dir,
			    "Sailor's cluster trace (GPU counts per type "
			    "and zone)",
			    true, err)) ||
	    (st = need_file(d.basic_path, dir,
			    "Sailor's GPUs per node per GPU type", false,
			    err)) ||
	    (st = need_file(d.intra_path, dir,
			    "Sailor's measured bandwidths inside a node",
			    false, err)) ||
	    (st = need_file(d.inter_path, dir,
			    "Sailor's measured bandwidths between nodes",
			    false, err)) ||
	    (st = read_trace(path, row, cols, &n, err)) ||
	    (st = tp_sailor_read_json(d.basic_path, &d.basic, err)) ||
	    (st = tp_sailor_read_json(d.intra_path, &d.intra, err)) ||
	    (st = tp_sailor_read_json(d.inter_path, &d.inter, err)))
		goto out;
	tp_strbuf_addf(&sb,
		       "{\"format\": \"tagplan-topology/1\", \"name\": "
		       "\"sailor %s row %u\", \"nodes\": [",
		       trace, row);
	for (int i = 0; i < n && !st; i++) {
		const char *type = tp_sailor_device_type(cols[i].gpu);
		if (!cols[i].count)
			continue;
		if (!type) {
			tp_strbuf_addf(notes,
				       "%s_%s: %ld GPUs dropped: tagplan has "
				       "no device type for %s\n",
				       cols[i].gpu, cols[i].zone,
				       cols[i].count, cols[i].gpu);
			continue;
		}
		if (zone && strcmp(zone, cols[i].zone) != 0) {
			st = tp_error_set_at(err, TP_EINPUT, 1, 1,
					     "row %u spans zones %s and %s: "
					     "tagplan import reads one zone "
					     "(pick a row or trace of one)",
					     row, zone, cols[i].zone);
			tp_error_set_file(err, path);
			break;
		}
		zone = cols[i].zone;
		st = add_column(&d, &cols[i], type, &sb, &first, notes, err);
		kept += cols[i].count;
	}
	if (st)
		goto out;
	if (!kept) {
		st = tp_error_set(err, TP_EINPUT,
				  "%s: row %u has no GPU tagplan knows", path,
				  row);
		goto out;
	}
	tp_strbuf_addf(&sb, "], \"network\": {\"oversubscription\": 1}}\n");
	if (sb.failed) {
		st = tp_error_set(err, TP_ENOMEM, "out of memory");
		goto out;
	}
	tp_strbuf_addf(notes,
		       "one zone (%s), every node on one switch; the fits' "
		       "shape between 1 MB and their maximum dropped "
		       "(tagplan prices a transfer as latency + bytes / "
		       "bandwidth)\n",
		       zone);
	st = tp_topology_load("sailor cluster", sb.buf, sb.len, NULL, c, err);
out:
	tp_json_doc_release(&d.basic);
	tp_json_doc_release(&d.intra);
	tp_json_doc_release(&d.inter);
	tp_strbuf_release(&sb);
	return st;
}
