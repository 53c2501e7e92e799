/* kern.h -- the trainer's compute kernels: CPU references and the ops table.
 *
 * The kern_* functions are the plain-loop CPU references (row-major, shapes
 * in comments) plus gemm through OpenBLAS.  struct kern_ops is the interface
 * the model code runs on; kern_cpu_ops wraps the references, and the CUDA
 * path (kern_cuda.h) provides the same table over device memory.
 */
#ifndef PX_KERN_H
#define PX_KERN_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" { /* px.h has no guard of its own; kern_cuda.cu is C++ */
#endif

#include "../../common/px.h"

/* ---- seeded PRNG (splitmix64): deterministic for a seed ---- */

struct kern_rng {
	uint64_t s; /* state */
};

void kern_rng_seed(struct kern_rng *r, uint64_t seed);
uint64_t kern_rng_u64(struct kern_rng *r);
/* Uniform in [0, 1) with 24 random bits. */
float kern_rng_uniform(struct kern_rng *r);
/* Standard normal (Box-Muller). */
float kern_rng_normal(struct kern_rng *r);
/* Uniform integer in [0, n); n > 0. */
uint64_t kern_rng_below(struct kern_rng *r, uint64_t n);

/* ---- CPU reference kernels (row-major) ---- */

/* c[m,n] = alpha * op(a) * op(b) + beta * c, through cblas_sgemm.
 * op(a) is [m,k]: a is [m,lda] (lda >= k), or [k,lda] (lda >= m) when
 * trans_a.  op(b) is [k,n]: b is [k,ldb] (ldb >= n), or [n,ldb] (ldb >= k)
 * when trans_b.  c is [m,ldc], ldc >= n. */
void kern_gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
	       const float *a, int lda, const float *b, int ldb, float beta,
	       float *c, int ldc);

/* A batch of sparse rows (CSR): row i's non-zeros are rp[i] ..
 * rp[i + 1] - 1, at columns ci[] (0-based, each < the width) with values
 * cv[]; host memory. */
struct kern_csr {
	uint32_t n;          /* rows */
	const uint64_t *rp;  /* [n + 1], rp[0] = 0 */
	const uint32_t *ci;  /* [rp[n]] */
	const float *cv;     /* [rp[n]] */
};

/* y[n,d] = x[n,in] (CSR) * w[in,d] + b[d]: each row's non-zeros only,
 * summed in column order (the order gemm's reference sums a row in). */
void kern_csr_affine(float *y, const struct kern_csr *x, const float *w,
		     const float *b, int d);

/* dw[in,d] = x^T (CSR) * dy[n,d] on the rows of dw that x touches (a
 * column of x with a non-zero): those are set, the others left as they
 * are.  Summed over x's rows in row order. */
void kern_csr_wgrad(float *dw, const struct kern_csr *x, const float *dy,
		    int d);

/* y[n,d] += b[d] (broadcast over rows). */
void kern_bias_add(float *y, const float *b, int n, int d);

/* db[d] = sum over rows i of dy[i,d]  (dy is [n,d]). */
void kern_bias_grad(float *db, const float *dy, int n, int d);

/* y[len] = max(x, 0); y may equal x. */
void kern_relu_fwd(float *y, const float *x, size_t len);

/* dx[len] = dy * (y > 0), where y is the forward output; dx may equal dy. */
void kern_relu_bwd(float *dx, const float *dy, const float *y, size_t len);

/* Stable softmax with cross-entropy.  logits[n,c], labels[n] (each < c),
 * probs[n,c] = softmax(logits) per row (max subtracted first),
 * loss[n] = -log(probs[i, labels[i]]) per row (the caller takes the mean).
 * A label >= c gives loss NAN for that row and reads nothing out of range. */
void kern_softmax_xent_fwd(float *probs, float *loss, const float *logits,
			   const uint8_t *labels, int n, int c);

/* Gradient of the MEAN loss over the batch with respect to the logits:
 * dlogits[n,c] = (probs - onehot(labels)) / n. */
void kern_softmax_xent_bwd(float *dlogits, const float *probs,
			   const uint8_t *labels, int n, int c);

/* SGD with momentum (PyTorch convention), over len parameters:
 *   g' = g + wd * w;  v = mu * v + g';  w -= lr * v. */
void kern_sgd_momentum(float *w, float *v, const float *g, size_t len,
		       float lr, float mu, float wd);

/* y[len] += x[len]: a parameter server adding a worker's update.  A
 * loop the compiler vectorizes (kern_cpu.c is built -O3), not
 * cblas_saxpy: OpenBLAS would wake its threads in the PS for it. */
void kern_add(float *y, const float *x, size_t len);

/* d[len] = a[len] - b[len]: a worker's update since its last push. */
void kern_sub(float *d, const float *a, const float *b, size_t len);

/* x[len] *= s. */
void kern_scale(float *x, float s, size_t len);

/* The squared norm of x[len], summed in double: a worker's gradient
 * norms for the goodput estimate (goodput.h). */
double kern_sqnorm(const float *x, size_t len);

/* ---- the ops table the model runs on ---- */

/* Every op works on memory of the table's space (host for the CPU table,
 * device for the CUDA one), takes the table's ctx, returns PX_OK or an
 * error with detail in *err (which may be NULL), and may run
 * asynchronously: results are visible to later ops and to download, which
 * waits.  Shapes and semantics are those of the references above. */
struct kern_ops {
	const char *name; /* "cpu" or "cuda" */
	enum px_err (*alloc)(void *ctx, size_t bytes, void **ret,
			     struct px_error *err);
	void (*free)(void *ctx, void *p); /* NULL is a no-op */
	enum px_err (*upload)(void *ctx, void *dst, const void *src_host,
			      size_t bytes, struct px_error *err);
	enum px_err (*download)(void *ctx, void *dst_host, const void *src,
				size_t bytes, struct px_error *err);
	enum px_err (*copy)(void *ctx, void *dst, const void *src,
			    size_t bytes, struct px_error *err);
	enum px_err (*zero)(void *ctx, void *dst, size_t bytes,
			    struct px_error *err);
	enum px_err (*gemm)(void *ctx, bool trans_a, bool trans_b, int m,
			    int n, int k, float alpha, const float *a, int lda,
			    const float *b, int ldb, float beta, float *c,
			    int ldc, struct px_error *err);
	enum px_err (*bias_add)(void *ctx, float *y, const float *b, int n,
				int d, struct px_error *err);
	enum px_err (*bias_grad)(void *ctx, float *db, const float *dy, int n,
				 int d, struct px_error *err);
	enum px_err (*relu_fwd)(void *ctx, float *y, const float *x,
				size_t len, struct px_error *err);
	enum px_err (*relu_bwd)(void *ctx, float *dx, const float *dy,
				const float *y, size_t len,
				struct px_error *err);
	enum px_err (*softmax_xent_fwd)(void *ctx, float *probs, float *loss,
					const float *logits,
					const uint8_t *labels, int n, int c,
					struct px_error *err);
	enum px_err (*softmax_xent_bwd)(void *ctx, float *dlogits,
					const float *probs,
					const uint8_t *labels, int n, int c,
					struct px_error *err);
	enum px_err (*sgd_momentum)(void *ctx, float *w, float *v,
				    const float *g, size_t len, float lr,
				    float mu, float wd, struct px_error *err);
	/* *ret = the squared norm of x[len] (kern_sqnorm; the CUDA table's
	 * sums in float, through cuBLAS, and waits for it): a worker's
	 * gradient norms for the goodput estimate. */
	enum px_err (*sqnorm)(void *ctx, const float *x, size_t len,
			      double *ret, struct px_error *err);
};

/* The CPU table; its ctx is unused (pass NULL). */
extern const struct kern_ops kern_cpu_ops;

/* Set OpenBLAS's thread count (n >= 1); process-wide. */
void kern_cpu_set_threads(int n);

/* Flush denormal floats to zero in this thread's arithmetic (FTZ and DAZ
 * on x86; a no-op elsewhere).  Momentum that decays toward zero (weights
 * of always-blank pixels) spends hundreds of steps as denormals, each
 * operation on one costing ~100 cycles: the MLP trained 25-35% slower.
 * TensorFlow flushes by default too.  Call once per thread that trains;
 * proteus-trainer does at start. */
void kern_cpu_flush_denormals(void);

#ifdef __cplusplus
}
#endif

#endif
