/*
 * arena.h - bump allocation in chunks; everything frees at once.
 *
 * Used for strings of the IR (op, device and group names) and for large
 * short-lived structures.  An arena may carry a byte budget: allocation
 * beyond it fails (returns NULL) instead of growing, which is how the
 * search bounds its memory.  tp_arena_release frees every chunk.
 */
#ifndef TP_ARENA_H
#define TP_ARENA_H

#include <stddef.h>

struct tp_arena_chunk;

struct tp_arena {
	struct tp_arena_chunk *head;
	size_t used;   /* bytes handed out, all chunks */
	size_t budget; /* 0 = unlimited */
};

void tp_arena_init(struct tp_arena *a, size_t budget);
void tp_arena_release(struct tp_arena *a);
/* size bytes aligned to 16, zeroed; NULL on failure or over budget. */
void *tp_arena_alloc(struct tp_arena *a, size_t size);
/* Array of count elements of size bytes, overflow-checked, zeroed. */
void *tp_arena_array(struct tp_arena *a, size_t count, size_t size);
/* Copy of s in the arena; NULL on failure. */
char *tp_arena_strdup(struct tp_arena *a, const char *s);

#endif
