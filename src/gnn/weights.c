/*
 * weights.c - reading and writing GNN weights files (see weights.h).
 */
#include "weights.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"

static const unsigned char magic[8] = {'T', 'P', 'G', 'N',
				       'N', 'W', '\r', '\n'};

#define MAX_FILE_BYTES ((size_t)1 << 30)

/* The note's 96 bytes of the header (weights.h): the note, then the
 * BLAS kernel set, both NUL-padded. */
#define NOTE_AT 148
#define NOTE_MAX 64
#define BLAS_AT (NOTE_AT + NOTE_MAX)
#define BLAS_MAX 32
_Static_assert(BLAS_AT + BLAS_MAX == 244, "note and kernel set fill 96 bytes");
/* The largest cluster of the training corpus, in what was 4 reserved
 * bytes written 0 (weights.h). */
#define CORPUS_AT 244
_Static_assert(CORPUS_AT + 4 == TP_GNN_WEIGHTS_HEADER,
	       "the corpus size ends the header");
_Static_assert(sizeof(((struct tp_gnn_meta *)0)->blas) == BLAS_MAX,
	       "meta.blas holds the field");
_Static_assert(sizeof(((struct tp_gnn_meta *)0)->note) >= NOTE_MAX,
	       "meta.note holds the field");

/* Byte-wise with a table built per call (256 entries, 2,048 steps: no
 * shared state between threads); the same checksum as the bit-by-bit
 * loop this replaced, eight times fewer steps per byte. */
uint32_t tp_gnn_crc32(const unsigned char *p, size_t n)
{
	uint32_t tab[256], c = 0xFFFFFFFFu;

	for (uint32_t b = 0; b < 256; b++) {
		uint32_t t = b;
		for (int k = 0; k < 8; k++)
			t = (t >> 1) ^ (0xEDB88320u & (0u - (t & 1u)));
		tab[b] = t;
	}
	for (size_t i = 0; i < n; i++)
		c = (c >> 8) ^ tab[(c ^ p[i]) & 0xFFu];
	return c ^ 0xFFFFFFFFu;
}

static void put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

static uint64_t get_u64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void put_f32(unsigned char *p, float f)
{
	uint32_t v;
	memcpy(&v, &f, 4);
	put_u32(p, v);
}

static float get_f32(const unsigned char *p)
{
	uint32_t v = get_u32(p);
	float f;
	memcpy(&f, &v, 4);
	return f;
}

static void put_f64(unsigned char *p, double f)
{
	uint64_t v;
	memcpy(&v, &f, 8);
	put_u64(p, v);
}

static double get_f64(const unsigned char *p)
{
	uint64_t v = get_u64(p);
	double f;
	memcpy(&f, &v, 8);
	return f;
}

enum tp_status tp_gnn_weights_encode(const struct tp_gnn_net *net,
				     unsigned char **buf, size_t *len,
				     struct tp_error *err)
{
	const struct tp_gnn_config *c = &net->cfg;
	size_t nn = net->norm.n, nw = net->n_params;
	size_t total = TP_GNN_WEIGHTS_HEADER + 4 * (2 * nn + nw) + 4;
	unsigned char *b = calloc(1, total), *p;

	if (!b)
		return tp_error_set(err, TP_ENOMEM,
				    "out of memory writing weights");
	memcpy(b, magic, 8);
	put_u32(b + 8, TP_GNN_WEIGHTS_VERSION);
	put_u32(b + 12, TP_GNN_WEIGHTS_HEADER);
	put_u32(b + 16, c->hidden);
	put_u32(b + 20, c->heads);
	put_u32(b + 24, c->layers);
	put_u32(b + 28, c->head_hidden);
	put_u32(b + 32, c->group_in);
	put_u32(b + 36, c->device_in);
	put_u32(b + 40, c->action_in);
	put_u32(b + 44, c->global_in);
	for (int t = 0; t < TP_GNN_ETYPES; t++)
		put_u32(b + 48 + 4 * t, c->edge_in[t]);
	put_u32(b + 68, (uint32_t)nn);
	put_u64(b + 72, nw);
	put_u64(b + 80, net->meta.seed);
	put_u32(b + 88, net->meta.games);
	put_u32(b + 92, net->meta.epochs);
	put_u32(b + 96, net->meta.samples);
	put_f32(b + 100, net->meta.train_loss);
	put_f32(b + 104, net->meta.heldout_loss);
	put_f64(b + 108, net->meta.train_seconds);
	memcpy(b + 116, net->meta.version,
	       strnlen(net->meta.version, sizeof(net->meta.version) - 1));
	memcpy(b + NOTE_AT, net->meta.note,
	       strnlen(net->meta.note, NOTE_MAX - 1));
	memcpy(b + BLAS_AT, net->meta.blas,
	       strnlen(net->meta.blas, BLAS_MAX - 1));
	put_u32(b + CORPUS_AT, net->meta.corpus_gpus);
	p = b + TP_GNN_WEIGHTS_HEADER;
	for (size_t i = 0; i < nn; i++, p += 4)
		put_f32(p, net->norm.mean[i]);
	for (size_t i = 0; i < nn; i++, p += 4)
		put_f32(p, net->norm.std[i]);
	for (size_t i = 0; i < nw; i++, p += 4)
		put_f32(p, net->w[i]);
	put_u32(p, tp_gnn_crc32(b, total - 4));
	*buf = b;
	*len = total;
	return TP_OK;
}

static struct tp_gnn_net *bad(struct tp_error *err, const char *name,
			      const char *msg)
{
	tp_error_set(err, TP_EINPUT, "%s", msg);
	tp_error_set_file(err, name);
	return NULL;
}

/* Do the widths `want` only add action and global features to `got`
 * (features.h appends new ones after the last slot of their kind)? */
static bool appended_only(const struct tp_gnn_widths *got,
			  const struct tp_gnn_widths *want)
{
	if (got->group != want->group || got->device != want->device ||
	    got->action > want->action || got->global > want->global)
		return false;
	for (int t = 0; t < TP_GNN_ETYPES; t++)
		if (got->edge[t] != want->edge[t])
			return false;
	return true;
}

/* Copy block [at, at + n) of the old normalisation to `to` of the new
 * one, then pad the new block up to m entries with the identity. */
static void norm_block(const struct tp_gnn_norm *o, size_t at, size_t n,
		       struct tp_gnn_norm *w, size_t to, size_t m)
{
	for (size_t i = 0; i < m; i++) {
		w->mean[to + i] = i < n ? o->mean[at + i] : 0.0f;
		w->std[to + i] = i < n ? o->std[at + i] : 1.0f;
	}
}

/*
 * old (trained for fewer action or global features, appended_only) as a
 * network of this build's widths: every tensor copied, the policy's
 * first layer (whose inputs end with the action features, net.c) padded
 * with zero rows (no layer reads the global features), the new features'
 * normalisation the identity.  So the network computes exactly what old
 * did, whatever the new features hold, until `make weights` retrains it
 * (src/gnn/README, "Widths").  Frees old; NULL with err on failure.
 */
static struct tp_gnn_net *widen(const char *name, struct tp_gnn_net *old,
				const struct tp_gnn_widths *want,
				struct tp_error *err)
{
	struct tp_gnn_config c = old->cfg;
	struct tp_gnn_net *net;
	struct tp_rng rng;
	size_t at = 0, to = 0;

	c.action_in = want->action;
	c.global_in = want->global;
	tp_rng_seed(&rng, 0);
	net = tp_gnn_net_new(&c, &rng, err);
	if (!net) {
		tp_gnn_net_free(old);
		tp_error_set_file(err, name);
		return NULL;
	}
	for (size_t i = 0; i < tp_gnn_net_tensor_count(net); i++) {
		uint32_t r0 = 0, c0 = 0, r1, c1;
		size_t o0 = 0, o1;
		if (i < tp_gnn_net_tensor_count(old))
			tp_gnn_net_tensor(old, i, &r0, &c0, &o0);
		tp_gnn_net_tensor(net, i, &r1, &c1, &o1);
		if (tp_gnn_net_tensor_count(net) !=
			    tp_gnn_net_tensor_count(old) ||
		    c0 != c1 || r0 > r1) {
			tp_gnn_net_free(old);
			tp_gnn_net_free(net);
			return bad(err, name,
				   "the weights were trained for other "
				   "features and their layers do not extend "
				   "to this tagplan's; retrain with 'make "
				   "weights'");
		}
		memset(net->w + o1, 0, (size_t)r1 * c1 * sizeof(float));
		memcpy(net->w + o1, old->w + o0, (size_t)r0 * c0 * sizeof(float));
	}
	norm_block(&old->norm, at, c.group_in + c.device_in, &net->norm, to,
		   c.group_in + c.device_in);
	at += c.group_in + c.device_in;
	to += c.group_in + c.device_in;
	norm_block(&old->norm, at, old->cfg.action_in, &net->norm, to,
		   c.action_in);
	at += old->cfg.action_in;
	to += c.action_in;
	norm_block(&old->norm, at, old->cfg.global_in, &net->norm, to,
		   c.global_in);
	at += old->cfg.global_in;
	to += c.global_in;
	norm_block(&old->norm, at, old->norm.n - at, &net->norm, to,
		   net->norm.n - to);
	net->meta = old->meta;
	tp_gnn_net_free(old);
	return net;
}

/* The header of weights file b (len bytes): magic, version, layer
 * sizes into *c, counts of normalisation constants *nn and weights *nw
 * agreeing with them, the file's length and checksum.  false (err set
 * by bad()) when any is wrong. */
/* bad() for decode_header: false. */
static bool bad_header(struct tp_error *err, const char *name, const char *msg)
{
	bad(err, name, msg);
	return false;
}

static bool decode_header(const char *name, const unsigned char *b, size_t len,
			  struct tp_gnn_config *c, uint32_t *nn, uint64_t *nw,
			  struct tp_error *err)
{
	struct tp_error cerr;
	uint32_t version, hsize;
	size_t want, exp_params, exp_norm;
	char msg[512];

	if (len < 8 || memcmp(b, magic, 8) != 0)
		return bad_header(
		    err, name,
		    "not a tagplan weights file (no \"TPGNNW\" magic "
		    "at the start); create one with 'tagplan train' "
		    "or 'make weights'");
	if (len < 16)
		return bad_header(
		    err, name,
		    "truncated weights file: the header is incomplete");
	version = get_u32(b + 8);
	if (version != TP_GNN_WEIGHTS_VERSION) {
		snprintf(msg, sizeof(msg),
			 "weights format version %u%s; this tagplan reads "
			 "version %d: retrain with 'make weights' (or "
			 "'tagplan train'), or use the matching tagplan",
			 version,
			 version == 2 ? " (with the value head that version 3 "
					"dropped)"
				      : "",
			 TP_GNN_WEIGHTS_VERSION);
		return bad_header(err, name, msg);
	}
	hsize = get_u32(b + 12);
	if (hsize != TP_GNN_WEIGHTS_HEADER) {
		snprintf(msg, sizeof(msg),
			 "corrupted weights header: header size %u, expected "
			 "%d",
			 hsize, TP_GNN_WEIGHTS_HEADER);
		return bad_header(err, name, msg);
	}
	if (len < TP_GNN_WEIGHTS_HEADER)
		return bad_header(
		    err, name,
		    "truncated weights file: the header is incomplete");
	memset(c, 0, sizeof(*c));
	c->hidden = get_u32(b + 16);
	c->heads = get_u32(b + 20);
	c->layers = get_u32(b + 24);
	c->head_hidden = get_u32(b + 28);
	c->group_in = get_u32(b + 32);
	c->device_in = get_u32(b + 36);
	c->action_in = get_u32(b + 40);
	c->global_in = get_u32(b + 44);
	for (int t = 0; t < TP_GNN_ETYPES; t++)
		c->edge_in[t] = get_u32(b + 48 + 4 * t);
	*nn = get_u32(b + 68);
	*nw = get_u64(b + 72);
	tp_error_clear(&cerr);
	if (tp_gnn_config_check(c, &cerr)) {
		tp_error_set(err, TP_EINPUT, "bad layer sizes in the header: %s",
			     cerr.msg);
		tp_error_set_file(err, name);
		return false;
	}
	exp_params = tp_gnn_config_params(c);
	exp_norm =
	    (size_t)c->group_in + c->device_in + c->action_in + c->global_in;
	for (int t = 0; t < TP_GNN_ETYPES; t++)
		exp_norm += c->edge_in[t];
	if (*nn != exp_norm || *nw != exp_params) {
		snprintf(msg, sizeof(msg),
			 "inconsistent header: %u normalisation "
			 "constants and %llu weights, but the layer "
			 "sizes give %zu and %zu",
			 *nn, (unsigned long long)*nw, exp_norm, exp_params);
		return bad_header(err, name, msg);
	}
	want = TP_GNN_WEIGHTS_HEADER + 4 * (2 * (size_t)*nn + (size_t)*nw) + 4;
	if (len != want) {
		snprintf(msg, sizeof(msg),
			 "%s weights file: %zu bytes, the header announces "
			 "%zu",
			 len < want ? "truncated" : "oversized (trailing bytes)",
			 len, want);
		return bad_header(err, name, msg);
	}
	if (tp_gnn_crc32(b, len - 4) != get_u32(b + len - 4))
		return bad_header(
		    err, name,
		    "checksum mismatch: the weights file is corrupted; "
		    "restore it or retrain ('make weights')");
	return true;
}

/* The note and the BLAS kernel set (weights.h): a NUL in the note's
 * first NOTE_MAX bytes means the kernel set follows (zeros in a file
 * written before it was recorded: ""); a note without one is an older
 * file's note of 64-95 bytes, which runs on over the kernel set's
 * place. */
static void decode_note(const unsigned char *b, struct tp_gnn_meta *m)
{
	if (memchr(b + NOTE_AT, 0, NOTE_MAX)) {
		memcpy(m->note, b + NOTE_AT, NOTE_MAX);
		memcpy(m->blas, b + BLAS_AT, BLAS_MAX - 1);
		m->blas[BLAS_MAX - 1] = '\0';
	} else {
		memcpy(m->note, b + NOTE_AT, sizeof(m->note) - 1);
		m->note[sizeof(m->note) - 1] = '\0';
		m->blas[0] = '\0';
	}
}

/* The network of a checked file (decode_header): its normalisation
 * constants and weights, all finite (std > 0), and its training
 * record. */
static struct tp_gnn_net *decode_body(const char *name, const unsigned char *b,
				      const struct tp_gnn_config *c,
				      uint32_t nn, uint64_t nw,
				      struct tp_error *err)
{
	struct tp_gnn_net *net;
	const unsigned char *p;

	net = tp_gnn_net_new(c, NULL, err); /* every number read below */
	if (!net) {
		tp_error_set_file(err, name);
		return NULL;
	}
	p = b + TP_GNN_WEIGHTS_HEADER;
	for (size_t i = 0; i < nn; i++, p += 4)
		net->norm.mean[i] = get_f32(p);
	for (size_t i = 0; i < nn; i++, p += 4)
		net->norm.std[i] = get_f32(p);
	for (size_t i = 0; i < nw; i++, p += 4)
		net->w[i] = get_f32(p);
	for (size_t i = 0; i < nn; i++)
		if (!isfinite(net->norm.mean[i]) ||
		    !(net->norm.std[i] > 0) || !isfinite(net->norm.std[i])) {
			tp_gnn_net_free(net);
			return bad(err, name,
				   "invalid normalisation constants (not "
				   "finite or not positive)");
		}
	for (size_t i = 0; i < nw; i++)
		if (!isfinite(net->w[i])) {
			tp_gnn_net_free(net);
			return bad(err, name, "invalid weights (not finite)");
		}
	net->meta.seed = get_u64(b + 80);
	net->meta.games = get_u32(b + 88);
	net->meta.epochs = get_u32(b + 92);
	net->meta.samples = get_u32(b + 96);
	net->meta.train_loss = get_f32(b + 100);
	net->meta.heldout_loss = get_f32(b + 104);
	net->meta.train_seconds = get_f64(b + 108);
	memcpy(net->meta.version, b + 116, sizeof(net->meta.version) - 1);
	net->meta.version[sizeof(net->meta.version) - 1] = '\0';
	decode_note(b, &net->meta);
	net->meta.corpus_gpus = get_u32(b + CORPUS_AT);
	return net;
}

struct tp_gnn_net *tp_gnn_weights_decode(const char *name,
					 const unsigned char *b, size_t len,
					 const struct tp_gnn_widths *expect,
					 struct tp_error *err)
{
	struct tp_gnn_config c;
	struct tp_gnn_net *net;
	uint32_t nn;
	uint64_t nw;
	char msg[512];

	if (!decode_header(name, b, len, &c, &nn, &nw, err))
		return NULL;
	if (expect) {
		struct tp_gnn_widths got = {
		    c.group_in, c.device_in, c.action_in, c.global_in, {0}};
		for (int t = 0; t < TP_GNN_ETYPES; t++)
			got.edge[t] = c.edge_in[t];
		if (memcmp(&got, expect, sizeof(got)) != 0 &&
		    appended_only(&got, expect)) {
			/* read as it is, then zero-padded to this build */
			net = tp_gnn_weights_decode(name, b, len, NULL, err);
			return net ? widen(name, net, expect, err) : NULL;
		}
		if (memcmp(&got, expect, sizeof(got)) != 0) {
			snprintf(msg, sizeof(msg),
				 "the weights were trained for other features "
				 "(group/device/action/global widths "
				 "%u/%u/%u/%u, this tagplan computes "
				 "%u/%u/%u/%u); retrain with 'make weights'",
				 got.group, got.device, got.action, got.global,
				 expect->group, expect->device, expect->action,
				 expect->global);
			return bad(err, name, msg);
		}
	}
	return decode_body(name, b, &c, nn, nw, err);
}

enum tp_status tp_gnn_weights_save(const struct tp_gnn_net *net,
				   const char *path, struct tp_error *err)
{
	unsigned char *buf;
	size_t len;
	enum tp_status st = tp_gnn_weights_encode(net, &buf, &len, err);

	if (st)
		return st;
	st = tp_file_write_atomic(path, (const char *)buf, len, err);
	free(buf);
	return st;
}

struct tp_gnn_net *tp_gnn_weights_load(const char *path,
				       const struct tp_gnn_widths *expect,
				       struct tp_error *err)
{
	char *data;
	size_t len;
	struct tp_gnn_net *net;

	if (tp_file_read(path, MAX_FILE_BYTES, &data, &len, err))
		return NULL;
	net = tp_gnn_weights_decode(path, (const unsigned char *)data, len,
				    expect, err);
	free(data);
	return net;
}
