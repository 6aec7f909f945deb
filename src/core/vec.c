#include "vec.h"

#include <string.h>

int tp_vec_grow_(void **data, size_t *cap, size_t elsz, size_t need)
{
	size_t ncap = *cap ? *cap : 8, bytes;
	void *p;

	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -1;
		ncap *= 2;
	}
	if (tp_size_mul(ncap, elsz, &bytes))
		return -1;
	p = realloc(*data, bytes);
	if (!p)
		return -1;
	*data = p;
	*cap = ncap;
	return 0;
}

void *tp_calloc(size_t count, size_t size)
{
	size_t bytes;

	if (tp_size_mul(count, size, &bytes))
		return NULL;
	return calloc(count ? count : 1, size ? size : 1);
}

char *tp_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);

	if (p)
		memcpy(p, s, n);
	return p;
}
