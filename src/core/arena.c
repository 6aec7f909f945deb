#include "arena.h"

#include <stdlib.h>
#include <string.h>

#include "vec.h"

struct tp_arena_chunk {
	struct tp_arena_chunk *next;
	size_t size, off;
	_Alignas(16) unsigned char data[];
};

#define CHUNK_MIN (64 * 1024)

void tp_arena_init(struct tp_arena *a, size_t budget)
{
	a->head = NULL;
	a->used = 0;
	a->budget = budget;
}

void tp_arena_release(struct tp_arena *a)
{
	struct tp_arena_chunk *c = a->head, *next;

	for (; c; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
	a->used = 0;
}

void *tp_arena_alloc(struct tp_arena *a, size_t size)
{
	struct tp_arena_chunk *c = a->head;
	size_t need, csize;
	void *p;

	if (tp_size_add(size, 15, &need))
		return NULL;
	need &= ~(size_t)15;
	if (a->budget && (need > a->budget || a->used > a->budget - need))
		return NULL;
	if (!c || c->size - c->off < need) {
		csize = need > CHUNK_MIN ? need : CHUNK_MIN;
		if (tp_size_add(csize, sizeof(*c), &csize))
			return NULL;
		c = malloc(csize);
		if (!c)
			return NULL;
		c->size = csize - sizeof(*c);
		c->off = 0;
		c->next = a->head;
		a->head = c;
	}
	p = c->data + c->off;
	c->off += need;
	a->used += need;
	memset(p, 0, size);
	return p;
}

void *tp_arena_array(struct tp_arena *a, size_t count, size_t size)
{
	size_t bytes;

	if (tp_size_mul(count, size, &bytes))
		return NULL;
	return tp_arena_alloc(a, bytes);
}

char *tp_arena_strdup(struct tp_arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = tp_arena_alloc(a, n);

	if (p)
		memcpy(p, s, n);
	return p;
}
