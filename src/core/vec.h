/*
 * vec.h - the one growable-array macro set.
 *
 *   TP_VEC(double) xs = {0};         declares {double *v; size_t n, cap;}
 *   if (tp_vec_push(&xs, 3.0)) ...   nonzero on allocation failure/overflow
 *   tp_vec_reserve(&xs, 100)         make room for 100 more; nonzero on failure
 *   tp_vec_free(&xs)                 frees and zeroes; safe on a zeroed vec
 *
 * Elements may move when the array grows: keep indices, not pointers.
 */
#ifndef TP_VEC_H
#define TP_VEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define TP_VEC(T)                                                             \
	struct {                                                              \
		T *v;                                                         \
		size_t n, cap;                                                \
	}

/* Grow (void **)data with element size elsz so that at least need elements
 * fit.  Returns 0 on success, -1 on overflow or allocation failure (the
 * array is unchanged then). */
int tp_vec_grow_(void **data, size_t *cap, size_t elsz, size_t need);

#define tp_vec_reserve(vec, extra)                                            \
	(((vec)->n + (size_t)(extra) < (vec)->n)                              \
		 ? -1                                                         \
		 : ((vec)->n + (size_t)(extra) <= (vec)->cap                  \
			    ? 0                                               \
			    : tp_vec_grow_((void **)&(vec)->v, &(vec)->cap,   \
					   sizeof(*(vec)->v),                 \
					   (vec)->n + (size_t)(extra))))

#define tp_vec_push(vec, x)                                                   \
	(tp_vec_reserve((vec), 1) ? -1 : ((vec)->v[(vec)->n++] = (x), 0))

#define tp_vec_free(vec)                                                      \
	do {                                                                  \
		free((vec)->v);                                               \
		(vec)->v = NULL;                                              \
		(vec)->n = (vec)->cap = 0;                                    \
	} while (0)

/* Overflow-checked size arithmetic: return 0 and store the result, or -1. */
static inline int tp_size_mul(size_t a, size_t b, size_t *out)
{
	if (a && b > SIZE_MAX / a)
		return -1;
	*out = a * b;
	return 0;
}

static inline int tp_size_add(size_t a, size_t b, size_t *out)
{
	if (a > SIZE_MAX - b)
		return -1;
	*out = a + b;
	return 0;
}

/* calloc with an overflow-checked count*size; NULL on failure. */
void *tp_calloc(size_t count, size_t size);

/* strdup that returns NULL on failure (C11 has no strdup). */
char *tp_strdup(const char *s);

#endif
