/*
 * checkpoint.c - training checkpoints (train_int.h): the network, the
 * epochs done and the Adam step, so an interrupted `tagplan train
 * --checkpoint F` resumes where it stopped.
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "train_int.h"
#include "gnn/weights.h"
#include "io/io.h"

/* ------------------------------------------------------------------ */
/* checkpoints: magic, version, epochs done, Adam step, weights file
 * (length-prefixed), Adam m and v, CRC-32 */

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *p)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}
static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

enum tp_status ckpt_save(const char *path, const struct tp_gnn_net *net,
				const struct tp_gnn_adam *a, uint32_t epochs,
				struct tp_error *err)
{
	unsigned char *w, *b, *p;
	size_t wl, total;
	enum tp_status st = tp_gnn_weights_encode(net, &w, &wl, err);

	if (st)
		return st;
	total = 8 + 4 + 4 + 8 + 8 + wl + 8 * a->n + 4;
	b = malloc(total);
	if (!b) {
		free(w);
		return tp_error_set(err, TP_ENOMEM, "out of memory");
	}
	memcpy(b, CKPT_MAGIC, 8);
	put32(b + 8, CKPT_VERSION);
	put32(b + 12, epochs);
	put64(b + 16, a->t);
	put64(b + 24, wl);
	memcpy(b + 32, w, wl);
	p = b + 32 + wl;
	for (size_t i = 0; i < a->n; i++, p += 4) {
		uint32_t u;
		memcpy(&u, &a->m[i], 4);
		put32(p, u);
	}
	for (size_t i = 0; i < a->n; i++, p += 4) {
		uint32_t u;
		memcpy(&u, &a->v[i], 4);
		put32(p, u);
	}
	put32(p, tp_gnn_crc32(b, total - 4));
	st = tp_file_write_atomic(path, (const char *)b, total, err);
	free(w);
	free(b);
	return st;
}

enum tp_status ckpt_load(const char *path, struct tp_gnn_net **net,
				struct tp_gnn_adam *a, uint32_t *epochs,
				float lr, struct tp_error *err)
{
	char *data;
	const unsigned char *b;
	size_t len, wl;
	struct tp_gnn_widths w;
	enum tp_status st;

	if ((st = tp_file_read(path, (size_t)1 << 30, &data, &len, err)))
		return st;
	b = (const unsigned char *)data;
	tp_gnn_feature_widths(&w);
	if (len < 36 || memcmp(b, CKPT_MAGIC, 8) != 0) {
		st = tp_error_set(err, TP_EINPUT,
				  "not a tagplan training checkpoint (bad "
				  "magic or too short)");
		goto out;
	}
	if (get32(b + 8) != CKPT_VERSION) {
		st = tp_error_set(err, TP_EINPUT,
				  "checkpoint version %u; this tagplan reads %d",
				  get32(b + 8), CKPT_VERSION);
		goto out;
	}
	if (tp_gnn_crc32(b, len - 4) != get32(b + len - 4)) {
		st = tp_error_set(err, TP_EINPUT,
				  "checksum mismatch: the checkpoint is "
				  "corrupted");
		goto out;
	}
	wl = get64(b + 24);
	if (wl > len - 36) {
		st = tp_error_set(err, TP_EINPUT, "truncated checkpoint");
		goto out;
	}
	*net = tp_gnn_weights_decode(path, b + 32, wl, &w, err);
	if (!*net) {
		st = err->status;
		goto out;
	}
	if (len != 36 + wl + 8 * (*net)->n_params) {
		tp_gnn_net_free(*net);
		*net = NULL;
		st = tp_error_set(err, TP_EINPUT,
				  "checkpoint size does not match its network");
		goto out;
	}
	if ((st = tp_gnn_adam_init(a, (*net)->n_params, lr, err)))
		goto out;
	a->t = get64(b + 16);
	for (size_t i = 0; i < a->n; i++) {
		uint32_t u = get32(b + 32 + wl + 4 * i);
		memcpy(&a->m[i], &u, 4);
		u = get32(b + 32 + wl + 4 * (a->n + i));
		memcpy(&a->v[i], &u, 4);
	}
	*epochs = get32(b + 12);
out:
	if (st)
		tp_error_set_file(err, path);
	free(data);
	return st;
}
