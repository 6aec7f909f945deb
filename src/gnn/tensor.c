/*
 * tensor.c - 2-D float views and the BLAS calls (see tensor.h).
 */
#include "tensor.h"

#include <assert.h>
#include <cblas.h>

void tp_tensor_gemm(bool ta, bool tb, float alpha, const struct tp_tensor *a,
		    const struct tp_tensor *b, float beta, struct tp_tensor *c)
{
	uint32_t m = ta ? a->cols : a->rows;
	uint32_t k = ta ? a->rows : a->cols;
	uint32_t kb = tb ? b->cols : b->rows;
	uint32_t n = tb ? b->rows : b->cols;

	assert(k == kb && c->rows == m && c->cols == n);
	(void)kb;
	if (m == 0 || n == 0)
		return;
	if (k == 0) {
		if (beta == 0.0f)
			tp_tensor_fill(c, 0.0f);
		else if (beta != 1.0f)
			for (uint32_t i = 0; i < m; i++)
				for (uint32_t j = 0; j < n; j++)
					*tp_tensor_at(c, i, j) *= beta;
		return;
	}
	cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
		    tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
		    alpha, a->data, (int)a->ld, b->data, (int)b->ld, beta,
		    c->data, (int)c->ld);
}

void tp_tensor_fill(struct tp_tensor *t, float v)
{
	for (uint32_t i = 0; i < t->rows; i++) {
		float *r = tp_tensor_at(t, i, 0);
		for (uint32_t j = 0; j < t->cols; j++)
			r[j] = v;
	}
}

void tp_tensor_axpy(float alpha, const struct tp_tensor *src,
		    struct tp_tensor *dst)
{
	assert(src->rows == dst->rows && src->cols == dst->cols);
	for (uint32_t i = 0; i < src->rows; i++) {
		const float *s = tp_tensor_at(src, i, 0);
		float *d = tp_tensor_at(dst, i, 0);
		for (uint32_t j = 0; j < src->cols; j++)
			d[j] += alpha * s[j];
	}
}

double tp_tensor_sumsq(const float *x, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += (double)x[i] * x[i];
	return s;
}

void tp_tensor_set_blas_threads(int n)
{
	openblas_set_num_threads(n);
}

const char *tp_tensor_blas_core(void)
{
	const char *s = openblas_get_corename();
	return s && *s ? s : "unknown";
}

const char *tp_tensor_blas_config(void)
{
	const char *s = openblas_get_config();
	return s && *s ? s : "unknown";
}
