#include "strmap.h"

#include <stdlib.h>
#include <string.h>

#include "vec.h"

void tp_strmap_init(struct tp_strmap *m)
{
	memset(m, 0, sizeof(*m));
}

void tp_strmap_release(struct tp_strmap *m)
{
	free(m->keys);
	free(m->vals);
	tp_strmap_init(m);
}

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static size_t slot(const char **keys, size_t cap, const char *key)
{
	size_t i = (size_t)hash(key) & (cap - 1);

	while (keys[i] && strcmp(keys[i], key) != 0)
		i = (i + 1) & (cap - 1);
	return i;
}

static int rehash(struct tp_strmap *m, size_t ncap)
{
	const char **keys = tp_calloc(ncap, sizeof(*keys));
	uint32_t *vals = tp_calloc(ncap, sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -1;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (m->keys[i]) {
			size_t j = slot(keys, ncap, m->keys[i]);
			keys[j] = m->keys[i];
			vals[j] = m->vals[i];
		}
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = ncap;
	return 0;
}

int tp_strmap_put(struct tp_strmap *m, const char *key, uint32_t val,
		  uint32_t *old)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap) {
		if (m->cap > SIZE_MAX / 4 || rehash(m, m->cap ? m->cap * 2 : 16))
			return -1;
	}
	i = slot(m->keys, m->cap, key);
	if (m->keys[i]) {
		if (old)
			*old = m->vals[i];
		return 1;
	}
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
	return 0;
}

uint32_t tp_strmap_get(const struct tp_strmap *m, const char *key)
{
	size_t i;

	if (!m->cap)
		return TP_STRMAP_NONE;
	i = slot(m->keys, m->cap, key);
	return m->keys[i] ? m->vals[i] : TP_STRMAP_NONE;
}

size_t tp_edit_distance(const char *a, const char *b, size_t cap)
{
	size_t la = strlen(a), lb = strlen(b), *row, best, d;

	if (la > 256 || lb > 256)
		return cap + 1;
	if ((la > lb ? la - lb : lb - la) > cap)
		return cap + 1;
	row = malloc((lb + 1) * sizeof(*row));
	if (!row)
		return cap + 1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cur = row[j];
			size_t ca = (a[i - 1] | 32) == (b[j - 1] | 32) ? 0 : 1;
			best = prev + ca;
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = cur;
		}
	}
	d = row[lb];
	free(row);
	return d > cap ? cap + 1 : d;
}
