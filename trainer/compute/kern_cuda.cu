/* kern_cuda.cu -- CUDA kernels, their launchers and the CUDA ops table.
 *
 * Matrix products go through cuBLAS; the rest are plain grid-stride kernels
 * that mirror the CPU references in kern_cpu.c loop for loop (same
 * summation order), so results differ only by expf/logf and FMA rounding.
 * Errors become PX_ECUDA with the CUDA/cuBLAS error string; nothing exits.
 *
 * Built into libproteus-cuda.so, which exports one symbol,
 * px_kern_cuda_entry (everything else is hidden), returning the table of
 * kern_cuda.h; the trainer dlopens it (kern_load.c).  It uses nothing of
 * libproteus, so that it depends only on CUDA and the C/C++ runtimes.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "kern_cuda.h"

struct kern_cuda {
	int device;           /* CUDA device ordinal */
	cudaStream_t stream;  /* every op runs here */
	cublasHandle_t blas;  /* bound to stream */
	char name[256];       /* cudaDeviceProp.name, e.g. "NVIDIA H100 ..." */
};

#define KC_THREADS 256
#define KC_MAX_BLOCKS 65535u

/* ==== CUDA kernels ==== */

/* y[n,d] += b[d] */
static __global__ void
kc_bias_add_kernel(float *y, const float *b, int n, int d)
{
	size_t total = (size_t)n * (size_t)d;
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	     i < total; i += stride)
		y[i] += b[i % (size_t)d];
}

/* db[d] = sum_i dy[i,d]: one thread per column, rows in order (as the CPU
 * reference, so the sums round identically).  A column sum is a chain of
 * n dependent adds; loading KC_BIAS_UNROLL rows before adding them keeps
 * that many loads in flight instead of one, and leaves the order of the
 * adds, hence the result, unchanged. */
#define KC_BIAS_UNROLL 16
static __global__ void
kc_bias_grad_kernel(float *db, const float *dy, int n, int d)
{
	int stride = gridDim.x * blockDim.x;

	for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < d;
	     j += stride) {
		const float *col = dy + j;
		float s = 0.0f;
		int i = 0;

		for (; i + KC_BIAS_UNROLL <= n; i += KC_BIAS_UNROLL) {
			float v[KC_BIAS_UNROLL];

#pragma unroll
			for (int u = 0; u < KC_BIAS_UNROLL; u++)
				v[u] = col[(size_t)(i + u) * d];
#pragma unroll
			for (int u = 0; u < KC_BIAS_UNROLL; u++)
				s += v[u];
		}
		for (; i < n; i++)
			s += col[(size_t)i * d];
		db[j] = s;
	}
}

/* y[len] = max(x, 0) */
static __global__ void
kc_relu_fwd_kernel(float *y, const float *x, size_t len)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	     i < len; i += stride)
		y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* dx[len] = dy * (y > 0) */
static __global__ void
kc_relu_bwd_kernel(float *dx, const float *dy, const float *y,
		   size_t len)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	     i < len; i += stride)
		dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

/* One thread per row: probs[n,c] = softmax(logits[n,c]) with the row max
 * subtracted, loss[n] = log(sum) - (z_y - max).  Fine for our c = 10. */
static __global__ void
kc_softmax_xent_fwd_kernel(float *probs, float *loss,
			   const float *logits,
			   const uint8_t *labels, int n, int c)
{
	int stride = gridDim.x * blockDim.x;

	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += stride) {
		const float *z = logits + (size_t)i * c;
		float *p = probs + (size_t)i * c;
		float mx = z[0], sum = 0.0f;
		int y = labels[i];

		for (int j = 1; j < c; j++)
			if (z[j] > mx)
				mx = z[j];
		for (int j = 0; j < c; j++) {
			p[j] = expf(z[j] - mx);
			sum += p[j];
		}
		for (int j = 0; j < c; j++)
			p[j] /= sum;
		loss[i] = y < c ? logf(sum) - (z[y] - mx)
				: __int_as_float(0x7fc00000); /* NAN */
	}
}

/* dlogits[n,c] = (probs - onehot(labels)) * inv_n */
static __global__ void
kc_softmax_xent_bwd_kernel(float *dlogits, const float *probs,
			   const uint8_t *labels, int n, int c,
			   float inv_n)
{
	size_t total = (size_t)n * (size_t)c;
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (size_t o = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	     o < total; o += stride) {
		size_t i = o / (size_t)c;
		int j = (int)(o % (size_t)c);
		float t = labels[i] == j ? 1.0f : 0.0f;

		dlogits[o] = (probs[o] - t) * inv_n;
	}
}

/* g' = g + wd*w; v = mu*v + g'; w -= lr*v */
static __global__ void
kc_sgd_momentum_kernel(float *w, float *v, const float *g,
		       size_t len, float lr, float mu, float wd)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	     i < len; i += stride) {
		float gi = g[i] + wd * w[i];
		float vi = mu * v[i] + gi;

		v[i] = vi;
		w[i] -= lr * vi;
	}
}

/* ==== kernel launchers (C linkage: they fill the C ops table) ==== */

extern "C" {

/* px_errorf's contract, here so that the library needs no libproteus. */
static enum px_err kc_errorf(struct px_error *e, enum px_err code,
			     const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum px_err kc_errorf(struct px_error *e, enum px_err code,
			     const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return code;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return code;
}

/* A failed runtime call (cudaMalloc out of memory, say) also records its
 * error as the thread's "last error", which the next kc_check_launch would
 * then report against an innocent kernel: read it back here to clear it.
 * Sticky errors (a fault inside a kernel) cannot be cleared and keep
 * failing every later call, which is what we want. */
static enum px_err kc_cuda_err(struct px_error *err, cudaError_t e,
			       const char *what)
{
	(void)cudaGetLastError();
	return kc_errorf(err, PX_ECUDA, "cuda: %s: %s", what,
			 cudaGetErrorString(e));
}

static enum px_err kc_blas_err(struct px_error *err, cublasStatus_t s,
			       const char *what)
{
	return kc_errorf(err, PX_ECUDA, "cublas: %s: %s", what,
			 cublasGetStatusString(s));
}

/* A launch error (bad configuration, sticky fault) shows here; faults
 * inside a kernel show at the next synchronizing call (download). */
static enum px_err kc_check_launch(struct px_error *err, const char *what)
{
	cudaError_t e = cudaGetLastError();

	if (e != cudaSuccess)
		return kc_cuda_err(err, e, what);
	return PX_OK;
}

static unsigned kc_blocks(size_t work)
{
	size_t b = (work + KC_THREADS - 1) / KC_THREADS;

	if (b < 1)
		b = 1;
	if (b > KC_MAX_BLOCKS)
		b = KC_MAX_BLOCKS;
	return (unsigned)b;
}

static enum px_err kc_alloc(void *ctx, size_t bytes, void **ret,
			    struct px_error *err)
{
	void *p = NULL;
	cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);

	(void)ctx;
	if (e != cudaSuccess)
		return kc_cuda_err(err, e, "cudaMalloc");
	*ret = p;
	return PX_OK;
}

/* Wait for the stream first: a kernel queued on it may still use p.
 * (cudaFree waits for the device in practice; this does not rely on it.) */
static void kc_free(void *ctx, void *p)
{
	struct kern_cuda *k = (struct kern_cuda *)ctx;

	if (!p)
		return;
	if (k)
		(void)cudaStreamSynchronize(k->stream);
	(void)cudaFree(p);
}

static enum px_err kc_memcpy(struct kern_cuda *k, void *dst, const void *src,
			     size_t bytes, enum cudaMemcpyKind kind,
			     const char *what, struct px_error *err)
{
	cudaError_t e;

	if (!bytes)
		return PX_OK;
	e = cudaMemcpyAsync(dst, src, bytes, kind, k->stream);
	if (e != cudaSuccess)
		return kc_cuda_err(err, e, what);
	/* Host buffers are pageable: wait so the caller may reuse them. */
	if (kind != cudaMemcpyDeviceToDevice) {
		e = cudaStreamSynchronize(k->stream);
		if (e != cudaSuccess)
			return kc_cuda_err(err, e, what);
	}
	return PX_OK;
}

static enum px_err kc_upload(void *ctx, void *dst, const void *src_host,
			     size_t bytes, struct px_error *err)
{
	return kc_memcpy((struct kern_cuda *)ctx, dst, src_host, bytes,
			 cudaMemcpyHostToDevice, "upload", err);
}

static enum px_err kc_download(void *ctx, void *dst_host, const void *src,
			       size_t bytes, struct px_error *err)
{
	return kc_memcpy((struct kern_cuda *)ctx, dst_host, src, bytes,
			 cudaMemcpyDeviceToHost, "download", err);
}

static enum px_err kc_copy(void *ctx, void *dst, const void *src,
			   size_t bytes, struct px_error *err)
{
	return kc_memcpy((struct kern_cuda *)ctx, dst, src, bytes,
			 cudaMemcpyDeviceToDevice, "copy", err);
}

static enum px_err kc_zero(void *ctx, void *dst, size_t bytes,
			   struct px_error *err)
{
	struct kern_cuda *k = (struct kern_cuda *)ctx;
	cudaError_t e;

	if (!bytes)
		return PX_OK;
	e = cudaMemsetAsync(dst, 0, bytes, k->stream);
	if (e != cudaSuccess)
		return kc_cuda_err(err, e, "cudaMemsetAsync");
	return PX_OK;
}

/* Row-major C[m,n] = op(A) op(B) is, read column-major, C^T[n,m] =
 * op(B)^T op(A)^T: a row-major matrix with row stride ld is the
 * column-major transpose with leading dimension ld.  So call cuBLAS with
 * the operands swapped (B first), m and n swapped, and the same leading
 * dimensions; no data is transposed. */
static enum px_err kc_gemm(void *ctx, bool trans_a, bool trans_b, int m,
			   int n, int k, float alpha, const float *a, int lda,
			   const float *b, int ldb, float beta, float *c,
			   int ldc, struct px_error *err)
{
	struct kern_cuda *kc = (struct kern_cuda *)ctx;
	cublasStatus_t s;

	if (m == 0 || n == 0)
		return PX_OK;
	s = cublasSgemm(kc->blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
			trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha,
			b, ldb, a, lda, &beta, c, ldc);
	if (s != CUBLAS_STATUS_SUCCESS)
		return kc_blas_err(err, s, "cublasSgemm");
	return PX_OK;
}

static enum px_err kc_bias_add(void *ctx, float *y, const float *b, int n,
			       int d, struct px_error *err)
{
	struct kern_cuda *k = (struct kern_cuda *)ctx;

	/* The reference does nothing for n or d <= 0; a negative one cast
	 * to size_t would launch over a huge range and write out of bounds. */
	if (n <= 0 || d <= 0)
		return PX_OK;
	kc_bias_add_kernel<<<kc_blocks((size_t)n * (size_t)d), KC_THREADS, 0,
			     k->stream>>>(y, b, n, d);
	return kc_check_launch(err, "bias_add");
}

static enum px_err kc_bias_grad(void *ctx, float *db, const float *dy, int n,
				int d, struct px_error *err)
{
	struct kern_cuda *k = (struct kern_cuda *)ctx;

	if (d <= 0)
		return PX_OK;
	kc_bias_grad_kernel<<<kc_blocks((size_t)d), KC_THREADS, 0,
			      k->stream>>>(db, dy, n, d);
	return kc_check_launch(err, "bias_grad");
}

static enum px_err kc_relu_fwd(void *ctx, float *y, const float *x,
			       size_t len, struct px_error *err)
{
	struct kern_cuda *k = (struct kern_cuda *)ctx;

	if (!len)
		return PX_OK;
	kc_relu_fwd_kernel<<<kc_blocks(len), KC_THREADS, 0, k->stream>>>(
		y, x, len);
	return kc_check_launch(err, "relu_fwd");
}

static enum px_err kc_relu_bwd(void *ctx, float *dx, const float *dy,
			       const float *y, size_t len,
			       struct px_error *err)
{
	struct kern_cuda *k = (struct kern_cuda *)ctx;

	if (!len)
		return PX_OK;
	kc_relu_bwd_kernel<<<kc_blocks(len), KC_THREADS, 0, k->stream>>>(
		dx, dy, y, len);
	return kc_check_launch(err, "relu_bwd");
}

static enum px_err kc_softmax_xent_fwd(void *ctx, float *probs, float *loss,
				       const float *logits,
				       const uint8_t *labels, int n, int c,
				       struct px_error *err)
{
	struct kern_cuda *k = (struct kern_cuda *)ctx;

	if (n <= 0 || c <= 0)
		return PX_OK;
	kc_softmax_xent_fwd_kernel<<<kc_blocks((size_t)n), KC_THREADS, 0,
				     k->stream>>>(probs, loss, logits, labels,
						  n, c);
	return kc_check_launch(err, "softmax_xent_fwd");
}

static enum px_err kc_softmax_xent_bwd(void *ctx, float *dlogits,
				       const float *probs,
				       const uint8_t *labels, int n, int c,
				       struct px_error *err)
{
	struct kern_cuda *k = (struct kern_cuda *)ctx;
	size_t work = (size_t)n * (size_t)c;

	if (n <= 0 || c <= 0)
		return PX_OK;
	kc_softmax_xent_bwd_kernel<<<kc_blocks(work), KC_THREADS, 0,
				     k->stream>>>(dlogits, probs, labels, n, c,
						  1.0f / (float)n);
	return kc_check_launch(err, "softmax_xent_bwd");
}

static enum px_err kc_sgd_momentum(void *ctx, float *w, float *v,
				   const float *g, size_t len, float lr,
				   float mu, float wd, struct px_error *err)
{
	struct kern_cuda *k = (struct kern_cuda *)ctx;

	if (!len)
		return PX_OK;
	kc_sgd_momentum_kernel<<<kc_blocks(len), KC_THREADS, 0, k->stream>>>(
		w, v, g, len, lr, mu, wd);
	return kc_check_launch(err, "sgd_momentum");
}

/* cuBLAS's nrm2 (a scaled sum in float) squared; the result comes back
 * to the host, so this waits for the stream: called once in several
 * minibatches (the goodput measurement), not per step.  An int's worth
 * of elements at a time (cuBLAS takes int lengths). */
static enum px_err kc_sqnorm(void *ctx, const float *x, size_t len,
			     double *ret, struct px_error *err)
{
	struct kern_cuda *k = (struct kern_cuda *)ctx;
	double sum = 0.0;

	for (size_t off = 0; off < len;) {
		size_t n = len - off < (size_t)INT_MAX ? len - off
						       : (size_t)INT_MAX;
		float r = 0.0f;
		cublasStatus_t s = cublasSnrm2(k->blas, (int)n, x + off, 1,
					       &r);

		if (s != CUBLAS_STATUS_SUCCESS)
			return kc_blas_err(err, s, "cublasSnrm2");
		sum += (double)r * (double)r;
		off += n;
	}
	*ret = sum;
	return PX_OK;
}

/* Positional: C++17 has no designated initializers.  The order is that of
 * struct kern_ops in kern.h (the compiler checks each pointer's type). */
static const struct kern_ops kc_ops = {
	"cuda",
	kc_alloc,
	kc_free,
	kc_upload,
	kc_download,
	kc_copy,
	kc_zero,
	kc_gemm,
	kc_bias_add,
	kc_bias_grad,
	kc_relu_fwd,
	kc_relu_bwd,
	kc_softmax_xent_fwd,
	kc_softmax_xent_bwd,
	kc_sgd_momentum,
	kc_sqnorm,
};

static int kc_device_count(struct px_error *err)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess) {
		(void)kc_cuda_err(err, e, "cudaGetDeviceCount");
		(void)cudaGetLastError(); /* clear it */
		return 0;
	}
	return n;
}

static enum px_err kc_open(int device, struct kern_cuda **ret,
			   struct px_error *err)
{
	struct kern_cuda *k;
	struct cudaDeviceProp prop;
	cudaError_t e;
	cublasStatus_t s;
	enum px_err r;
	int n = 0;

	e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		return kc_cuda_err(err, e, "no usable device");
	}
	if (device < 0 || device >= n)
		return kc_errorf(err, PX_ECUDA,
				 "cuda: no device %d (%d found)", device, n);
	k = (struct kern_cuda *)calloc(1, sizeof(*k));
	if (!k)
		return kc_errorf(err, PX_ENOMEM,
				 "cannot allocate a cuda context");
	k->device = device;
	e = cudaSetDevice(device);
	if (e != cudaSuccess) {
		r = kc_cuda_err(err, e, "cudaSetDevice");
		goto out_free_k;
	}
	e = cudaGetDeviceProperties(&prop, device);
	if (e != cudaSuccess) {
		r = kc_cuda_err(err, e, "cudaGetDeviceProperties");
		goto out_free_k;
	}
	snprintf(k->name, sizeof(k->name), "%s", prop.name);
	e = cudaStreamCreateWithFlags(&k->stream, cudaStreamNonBlocking);
	if (e != cudaSuccess) {
		r = kc_cuda_err(err, e, "cudaStreamCreate");
		goto out_free_k;
	}
	s = cublasCreate(&k->blas);
	if (s != CUBLAS_STATUS_SUCCESS) {
		r = kc_blas_err(err, s, "cublasCreate");
		goto out_destroy_stream;
	}
	s = cublasSetStream(k->blas, k->stream);
	if (s == CUBLAS_STATUS_SUCCESS)
		/* Plain FP32: no TF32 tensor-op rounding, so the CPU
		 * comparison tolerances hold. */
		s = cublasSetMathMode(k->blas, CUBLAS_DEFAULT_MATH);
	if (s != CUBLAS_STATUS_SUCCESS) {
		r = kc_blas_err(err, s, "cublas setup");
		goto out_destroy_blas;
	}
	*ret = k;
	return PX_OK;

out_destroy_blas:
	(void)cublasDestroy(k->blas);
out_destroy_stream:
	(void)cudaStreamDestroy(k->stream);
out_free_k:
	free(k);
	return r;
}

static const char *kc_name(const struct kern_cuda *k)
{
	return k->name;
}

static void kc_close(struct kern_cuda *k)
{
	if (!k)
		return;
	(void)cudaStreamSynchronize(k->stream);
	(void)cublasDestroy(k->blas);
	(void)cudaStreamDestroy(k->stream);
	free(k);
}

static const struct kern_cuda_api kc_api = {
	KERN_CUDA_ABI,
	(uint32_t)sizeof(struct kern_cuda_api),
	(uint32_t)sizeof(struct kern_ops),
	(uint32_t)sizeof(struct px_error),
	&kc_ops,
	kc_device_count,
	kc_open,
	kc_close,
	kc_name,
};

/* The library's one exported symbol (KERN_CUDA_ENTRY). */
__attribute__((visibility("default"))) const struct kern_cuda_api *
px_kern_cuda_entry(void)
{
	return &kc_api;
}

} /* extern "C" */
