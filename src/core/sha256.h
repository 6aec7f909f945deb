/*
 * sha256.h - SHA-256 (FIPS 180-4), for plan provenance: a plan records the
 * digests of the model and topology files it was made from, so `check`
 * can tell when they changed.
 *
 * Incremental (init/update/final) or one call.  No allocation, no errors.
 */
#ifndef TP_SHA256_H
#define TP_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct tp_sha256 {
	uint32_t h[8];
	uint64_t bytes; /* total length so far */
	unsigned char block[64];
	size_t fill;
};

void tp_sha256_init(struct tp_sha256 *s);
void tp_sha256_update(struct tp_sha256 *s, const void *data, size_t len);
/* Finish: the 32-byte digest into out; s must be re-initialised to reuse. */
void tp_sha256_final(struct tp_sha256 *s, unsigned char out[32]);

/* Digest of data as 64 lowercase hex digits plus NUL. */
void tp_sha256_hex(const void *data, size_t len, char out[65]);

#endif
