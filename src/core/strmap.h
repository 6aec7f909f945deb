/*
 * strmap.h - a string -> uint32_t hash map (open addressing, FNV-1a).
 *
 * Keys are borrowed: the map stores the pointers it is given, so they must
 * outlive it (IR names live in the IR's arena).  Used to look up ops and
 * devices by name and to detect duplicate names.
 */
#ifndef TP_STRMAP_H
#define TP_STRMAP_H

#include <stddef.h>
#include <stdint.h>

#define TP_STRMAP_NONE UINT32_MAX

struct tp_strmap {
	const char **keys;
	uint32_t *vals;
	size_t n, cap;
};

void tp_strmap_init(struct tp_strmap *m);
void tp_strmap_release(struct tp_strmap *m);
/* Insert key -> val.  Returns 0, 1 if the key was already present (the
 * old value is kept and stored in *old if old != NULL), or -1 on
 * allocation failure. */
int tp_strmap_put(struct tp_strmap *m, const char *key, uint32_t val,
		  uint32_t *old);
/* Value of key, or TP_STRMAP_NONE. */
uint32_t tp_strmap_get(const struct tp_strmap *m, const char *key);

/* Levenshtein distance, capped at cap+1 (for "did you mean" hints). */
size_t tp_edit_distance(const char *a, const char *b, size_t cap);

#endif
