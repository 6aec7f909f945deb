/*
 * tensor.h - plain 2-D float tensors and the project's only BLAS calls.
 *
 * A struct tp_tensor is a view: row-major float data with explicit rows,
 * cols and leading dimension (ld >= cols; element (i, j) is
 * data[i * ld + j]).  It owns nothing; whoever allocated data frees it
 * (usually a struct tp_ad tape or the network's parameter block).
 *
 * Every BLAS call of tagplan is in tensor.c (OpenBLAS through cblas.h).
 * OpenBLAS's own thread count is set once in main; the functions here are
 * reentrant and may be called from several threads at once on disjoint
 * outputs.  Shape mismatches are bugs (assert), not errors.
 */
#ifndef TP_GNN_TENSOR_H
#define TP_GNN_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tp_tensor {
	float *data;
	uint32_t rows, cols, ld;
};

/* A view of rows x cols floats at data with ld = cols. */
static inline struct tp_tensor tp_tensor_view(float *data, uint32_t rows,
					      uint32_t cols)
{
	struct tp_tensor t = {data, rows, cols, cols};
	return t;
}

static inline float *tp_tensor_at(const struct tp_tensor *t, uint32_t i,
				  uint32_t j)
{
	return t->data + (size_t)i * t->ld + j;
}

/*
 * C = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T (ta, tb).
 * Shapes must agree (assert).  Row-major sgemm; with beta == 0 C need not
 * be initialised.
 */
void tp_tensor_gemm(bool ta, bool tb, float alpha, const struct tp_tensor *a,
		    const struct tp_tensor *b, float beta, struct tp_tensor *c);

/* Set every element to v. */
void tp_tensor_fill(struct tp_tensor *t, float v);

/* dst += alpha * src, element-wise, same shape. */
void tp_tensor_axpy(float alpha, const struct tp_tensor *src,
		    struct tp_tensor *dst);

/* Sum of squares of n floats (double accumulation). */
double tp_tensor_sumsq(const float *x, size_t n);

/* Set the number of threads OpenBLAS uses (call once, from main). */
void tp_tensor_set_blas_threads(int n);

/*
 * The name of the kernel set OpenBLAS runs in this process ("Haswell",
 * "SkylakeX", "Zen", ...: openblas_get_corename()), never NULL; static
 * storage.  OpenBLAS picks it by CPU unless OPENBLAS_CORETYPE names one.
 * sgemm's results depend on it (FMA or not, blocking order), so trained
 * weights do too: training records it (src/gnn/README, Training).
 */
const char *tp_tensor_blas_core(void);

/* OpenBLAS's build description (openblas_get_config(): version, build
 * options, kernel set), never NULL; static storage. */
const char *tp_tensor_blas_config(void);

#endif
