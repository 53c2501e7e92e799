/* kern_cpu.c -- CPU reference kernels (plain loops), gemm via OpenBLAS,
 * and the CPU ops table (the seeded PRNG is kern_rng.c).  These loops are the reference
 * the CUDA kernels are tested against: keep them obvious.
 */
#include "kern.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

/* ---- reference kernels ---- */

void kern_gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
	       const float *a, int lda, const float *b, int ldb, float beta,
	       float *c, int ldc)
{
	cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
		    trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a,
		    lda, b, ldb, beta, c, ldc);
}

void kern_csr_affine(float *y, const struct kern_csr *x, const float *w,
		     const float *b, int d)
{
	/* y[n,d], w[in,d]: row j of w is feature j's d weights */
	for (uint32_t i = 0; i < x->n; i++) {
		float *yi = y + (size_t)i * d;

		memcpy(yi, b, (size_t)d * sizeof(*yi));
		for (uint64_t k = x->rp[i]; k < x->rp[i + 1]; k++) {
			const float *wj = w + (size_t)x->ci[k] * d;
			float v = x->cv[k];

			for (int c = 0; c < d; c++)
				yi[c] += v * wj[c];
		}
	}
}

void kern_csr_wgrad(float *dw, const struct kern_csr *x, const float *dy,
		    int d)
{
	uint64_t nnz = x->rp[x->n];

	/* the touched rows to zero first, then the sums into them */
	for (uint64_t k = 0; k < nnz; k++)
		memset(dw + (size_t)x->ci[k] * d, 0, (size_t)d * sizeof(*dw));
	for (uint32_t i = 0; i < x->n; i++) {
		const float *dyi = dy + (size_t)i * d;

		for (uint64_t k = x->rp[i]; k < x->rp[i + 1]; k++) {
			float *dwj = dw + (size_t)x->ci[k] * d;
			float v = x->cv[k];

			for (int c = 0; c < d; c++)
				dwj[c] += v * dyi[c];
		}
	}
}

void kern_bias_add(float *y, const float *b, int n, int d)
{
	/* y[n,d], b[d] */
	for (int i = 0; i < n; i++)
		for (int j = 0; j < d; j++)
			y[(size_t)i * d + j] += b[j];
}

void kern_bias_grad(float *db, const float *dy, int n, int d)
{
	/* db[d], dy[n,d]; summed in row order, like the CUDA kernel */
	for (int j = 0; j < d; j++) {
		float s = 0.0f;

		for (int i = 0; i < n; i++)
			s += dy[(size_t)i * d + j];
		db[j] = s;
	}
}

/* The elementwise loops below run in place (y == x, dx == dy) or on
 * disjoint arrays, never on partly overlapping ones: `ivdep` lets GCC
 * vectorize them (blends instead of a branch per element, which
 * mispredicted half the time in relu_bwd) without an overlap check. */
void kern_relu_fwd(float *y, const float *x, size_t len)
{
#pragma GCC ivdep
	for (size_t i = 0; i < len; i++)
		y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void kern_relu_bwd(float *dx, const float *dy, const float *y, size_t len)
{
#pragma GCC ivdep
	for (size_t i = 0; i < len; i++) {
		float d = dy[i]; /* loaded either way: a select, no branch */

		dx[i] = y[i] > 0.0f ? d : 0.0f;
	}
}

void kern_softmax_xent_fwd(float *probs, float *loss, const float *logits,
			   const uint8_t *labels, int n, int c)
{
	/* probs[n,c], loss[n], logits[n,c], labels[n] */
	for (int i = 0; i < n; i++) {
		const float *z = logits + (size_t)i * c;
		float *p = probs + (size_t)i * c;
		float mx = z[0], sum = 0.0f;

		for (int j = 1; j < c; j++)
			if (z[j] > mx)
				mx = z[j];
		for (int j = 0; j < c; j++) {
			p[j] = expf(z[j] - mx);
			sum += p[j];
		}
		for (int j = 0; j < c; j++)
			p[j] /= sum;
		/* -log p_y = log(sum) - (z_y - max): exact even when p_y
		 * underflows to 0. */
		if (labels[i] < c)
			loss[i] = logf(sum) - (z[labels[i]] - mx);
		else
			loss[i] = NAN;
	}
}

void kern_softmax_xent_bwd(float *dlogits, const float *probs,
			   const uint8_t *labels, int n, int c)
{
	/* dlogits[n,c], probs[n,c], labels[n] */
	float inv_n = 1.0f / (float)n;

	for (int i = 0; i < n; i++)
		for (int j = 0; j < c; j++) {
			size_t o = (size_t)i * c + j;
			float t = labels[i] == j ? 1.0f : 0.0f;

			dlogits[o] = (probs[o] - t) * inv_n;
		}
}

void kern_sgd_momentum(float *w, float *v, const float *g, size_t len,
		       float lr, float mu, float wd)
{
#pragma GCC ivdep
	for (size_t i = 0; i < len; i++) {
		float gi = g[i] + wd * w[i];

		v[i] = mu * v[i] + gi;
		w[i] -= lr * v[i];
	}
}

void kern_add(float *y, const float *x, size_t len)
{
#pragma GCC ivdep
	for (size_t i = 0; i < len; i++)
		y[i] += x[i];
}

void kern_scale(float *x, float s, size_t len)
{
#pragma GCC ivdep
	for (size_t i = 0; i < len; i++)
		x[i] *= s;
}

double kern_sqnorm(const float *x, size_t len)
{
	double s = 0;

	for (size_t i = 0; i < len; i++)
		s += (double)x[i] * x[i];
	return s;
}

void kern_sub(float *d, const float *a, const float *b, size_t len)
{
#pragma GCC ivdep
	for (size_t i = 0; i < len; i++)
		d[i] = a[i] - b[i];
}

void kern_cpu_flush_denormals(void)
{
#if defined(__SSE2__)
	_MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
	_MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#endif
}

void kern_cpu_set_threads(int n)
{
	if (n >= 1)
		openblas_set_num_threads(n);
}

/* ---- the CPU ops table: host memory, never fails except on OOM ---- */

static enum px_err cpu_alloc(void *ctx, size_t bytes, void **ret,
			     struct px_error *err)
{
	void *p = px_calloc(bytes ? bytes : 1, 1);

	if (!p)
		return px_errorf(err, PX_ENOMEM, "cannot allocate %zu bytes",
				 bytes);
	*ret = p;
	return PX_OK;
}

static void cpu_free(void *ctx, void *p)
{
	free(p);
}

static enum px_err cpu_copy(void *ctx, void *dst, const void *src,
			    size_t bytes, struct px_error *err)
{
	if (bytes)
		memmove(dst, src, bytes);
	return PX_OK;
}

static enum px_err cpu_zero(void *ctx, void *dst, size_t bytes,
			    struct px_error *err)
{
	if (bytes)
		memset(dst, 0, bytes);
	return PX_OK;
}

static enum px_err cpu_gemm(void *ctx, bool trans_a, bool trans_b, int m,
			    int n, int k, float alpha, const float *a, int lda,
			    const float *b, int ldb, float beta, float *c,
			    int ldc, struct px_error *err)
{
	kern_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
		  ldc);
	return PX_OK;
}

static enum px_err cpu_bias_add(void *ctx, float *y, const float *b, int n,
				int d, struct px_error *err)
{
	kern_bias_add(y, b, n, d);
	return PX_OK;
}

static enum px_err cpu_bias_grad(void *ctx, float *db, const float *dy,
				 int n, int d, struct px_error *err)
{
	kern_bias_grad(db, dy, n, d);
	return PX_OK;
}

static enum px_err cpu_relu_fwd(void *ctx, float *y, const float *x,
				size_t len, struct px_error *err)
{
	kern_relu_fwd(y, x, len);
	return PX_OK;
}

static enum px_err cpu_relu_bwd(void *ctx, float *dx, const float *dy,
				const float *y, size_t len,
				struct px_error *err)
{
	kern_relu_bwd(dx, dy, y, len);
	return PX_OK;
}

static enum px_err cpu_sm_fwd(void *ctx, float *probs, float *loss,
			      const float *logits, const uint8_t *labels,
			      int n, int c, struct px_error *err)
{
	kern_softmax_xent_fwd(probs, loss, logits, labels, n, c);
	return PX_OK;
}

static enum px_err cpu_sm_bwd(void *ctx, float *dlogits, const float *probs,
			      const uint8_t *labels, int n, int c,
			      struct px_error *err)
{
	kern_softmax_xent_bwd(dlogits, probs, labels, n, c);
	return PX_OK;
}

static enum px_err cpu_sgd(void *ctx, float *w, float *v, const float *g,
			   size_t len, float lr, float mu, float wd,
			   struct px_error *err)
{
	kern_sgd_momentum(w, v, g, len, lr, mu, wd);
	return PX_OK;
}

static enum px_err cpu_sqnorm(void *ctx, const float *x, size_t len,
			      double *ret, struct px_error *err)
{
	*ret = kern_sqnorm(x, len);
	return PX_OK;
}

const struct kern_ops kern_cpu_ops = {
	.name = "cpu",
	.alloc = cpu_alloc,
	.free = cpu_free,
	.upload = cpu_copy,
	.download = cpu_copy,
	.copy = cpu_copy,
	.zero = cpu_zero,
	.gemm = cpu_gemm,
	.bias_add = cpu_bias_add,
	.bias_grad = cpu_bias_grad,
	.relu_fwd = cpu_relu_fwd,
	.relu_bwd = cpu_relu_bwd,
	.softmax_xent_fwd = cpu_sm_fwd,
	.softmax_xent_bwd = cpu_sm_bwd,
	.sgd_momentum = cpu_sgd,
	.sqnorm = cpu_sqnorm,
};
