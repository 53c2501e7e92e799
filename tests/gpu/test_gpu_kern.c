/* test_gpu_kern.c -- every CUDA kernel against its CPU reference on seeded
 * random inputs, |gpu - ref| <= tol + |ref| * eps (tolerances in
 * docs/trainer-compute.md), printing the first pairs and the max diff; then
 * N SGD steps of the MLP on CPU and GPU.  Built by `make test-gpu` into
 * build/px_gpu_tests; every test skips when no CUDA device is found. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../trainer/kern_cuda.h"
#include "../../trainer/model.h"

#ifdef PX_HAVE_CUDA

static struct kern_cuda *gpu;

static void gpu_open(void)
{
	struct px_error err = { 0 };

	if (kern_cuda_device_count(NULL) <= 0)
		return;
	cr_assert_eq(kern_cuda_new(0, &gpu, &err), PX_OK, "%s", err.msg);
}

static void gpu_close(void)
{
	kern_cuda_free(gpu);
	gpu = NULL;
}

TestSuite(gpu, .init = gpu_open, .fini = gpu_close);

static void need_gpu(void)
{
	if (!gpu)
		cr_skip_test("no CUDA device (cudaGetDeviceCount)");
}

static const struct kern_ops *G = &kern_cuda_ops;

static void *to_dev(const void *h, size_t bytes)
{
	struct px_error err = { 0 };
	void *d = NULL;

	cr_assert_eq(G->alloc(gpu, bytes, &d, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(G->upload(gpu, d, h, bytes, &err), PX_OK, "%s", err.msg);
	return d;
}

static void *dev_alloc(size_t bytes)
{
	struct px_error err = { 0 };
	void *d = NULL;

	cr_assert_eq(G->alloc(gpu, bytes, &d, &err), PX_OK, "%s", err.msg);
	return d;
}

static void from_dev(void *h, const void *d, size_t bytes)
{
	struct px_error err = { 0 };

	cr_assert_eq(G->download(gpu, h, d, bytes, &err), PX_OK, "%s",
		     err.msg);
}

static float *rand_floats(size_t n, uint64_t seed, float scale)
{
	struct kern_rng r;
	float *a = malloc(n * sizeof(float));

	cr_assert_not_null(a);
	kern_rng_seed(&r, seed);
	for (size_t i = 0; i < n; i++)
		a[i] = scale * (2.0f * kern_rng_uniform(&r) - 1.0f);
	return a;
}

/* llm.c's validate_result: first pairs, max diff, fail on any element
 * outside tol + |ref| * eps (NAN only matches NAN). */
static void validate(const char *what, const float *got, const float *ref,
		     size_t n, double tol, double eps)
{
	double maxd = 0.0;
	size_t bad = 0;

	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)got[i] - ref[i]);
		bool ok = isnan(ref[i]) ? isnan(got[i])
					: d <= tol + fabs(ref[i]) * eps;

		if (i < 3)
			cr_log_info("%s[%zu]: gpu %.9g cpu %.9g", what, i,
				    got[i], ref[i]);
		if (!isnan(d) && d > maxd)
			maxd = d;
		if (!ok && bad++ < 5)
			cr_log_error("%s[%zu]: gpu %.9g cpu %.9g", what, i,
				     got[i], ref[i]);
	}
	cr_log_info("%s: %zu values, max |diff| %.3g (tol %.1g + |ref| * "
		    "%.1g)", what, n, maxd, tol, eps);
	cr_assert_eq(bad, 0, "%s: %zu of %zu values off", what, bad, n);
}

static void check_gemm(bool ta, bool tb, int m, int n, int k, int pad)
{
	struct px_error err = { 0 };
	int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
	size_t na = (size_t)(ta ? k : m) * lda, nb = (size_t)(tb ? n : k) * ldb;
	size_t nc = (size_t)m * ldc;
	float *a = rand_floats(na, 1, 1.0f), *b = rand_floats(nb, 2, 1.0f);
	float *c = rand_floats(nc, 3, 1.0f), *got = malloc(nc * 4);
	float *da = to_dev(a, na * 4), *db = to_dev(b, nb * 4);
	float *dc = to_dev(c, nc * 4);
	char what[64];

	kern_gemm(ta, tb, m, n, k, 0.7f, a, lda, b, ldb, 0.3f, c, ldc);
	cr_assert_eq(G->gemm(gpu, ta, tb, m, n, k, 0.7f, da, lda, db, ldb,
			     0.3f, dc, ldc, &err), PX_OK, "%s", err.msg);
	from_dev(got, dc, nc * 4);
	snprintf(what, sizeof(what), "gemm %c%c %dx%dx%d", ta ? 'T' : 'N',
		 tb ? 'T' : 'N', m, n, k);
	validate(what, got, c, nc, 1e-3, 1e-4);
	G->free(gpu, da);
	G->free(gpu, db);
	G->free(gpu, dc);
	free(a);
	free(b);
	free(c);
	free(got);
}

Test(gpu, gemm_vs_cpu)
{
	need_gpu();
	/* the MLP's three products, then odd shapes with padding */
	check_gemm(false, false, 128, 256, 784, 0);
	check_gemm(true, false, 784, 256, 128, 0);
	check_gemm(false, true, 128, 784, 256, 0);
	for (int t = 0; t < 4; t++)
		check_gemm(t & 1, t & 2, 33, 17, 65, 3);
}

Test(gpu, bias_add_and_grad_vs_cpu)
{
	enum { N = 129, D = 257 };
	struct px_error err = { 0 };
	float *y, *b, *got, db[D], gdb[D], *dy, *dbias;

	need_gpu();
	y = rand_floats(N * D, 4, 2.0f);
	b = rand_floats(D, 5, 1.0f);
	got = malloc(N * D * 4);
	dy = to_dev(y, N * D * 4);
	dbias = to_dev(b, D * 4);
	kern_bias_add(y, b, N, D);
	cr_assert_eq(G->bias_add(gpu, dy, dbias, N, D, &err), PX_OK);
	from_dev(got, dy, N * D * 4);
	validate("bias_add", got, y, N * D, 0.0, 1e-7);
	kern_bias_grad(db, y, N, D);
	cr_assert_eq(G->bias_grad(gpu, dbias, dy, N, D, &err), PX_OK);
	from_dev(gdb, dbias, D * 4);
	validate("bias_grad", gdb, db, D, 1e-6, 1e-6);
	G->free(gpu, dy);
	G->free(gpu, dbias);
	free(y);
	free(b);
	free(got);
}

Test(gpu, relu_vs_cpu)
{
	const size_t n = 100003;
	struct px_error err = { 0 };
	float *x, *dy, *y, *dx, *got, *dX, *dDY;

	need_gpu();
	x = rand_floats(n, 6, 1.0f);
	dy = rand_floats(n, 7, 1.0f);
	y = malloc(n * 4);
	dx = malloc(n * 4);
	got = malloc(n * 4);
	dX = to_dev(x, n * 4);
	dDY = to_dev(dy, n * 4);
	kern_relu_fwd(y, x, n);
	cr_assert_eq(G->relu_fwd(gpu, dX, dX, n, &err), PX_OK);
	from_dev(got, dX, n * 4);
	validate("relu_fwd", got, y, n, 0.0, 0.0);
	kern_relu_bwd(dx, dy, y, n);
	cr_assert_eq(G->relu_bwd(gpu, dDY, dDY, dX, n, &err), PX_OK);
	from_dev(got, dDY, n * 4);
	validate("relu_bwd", got, dx, n, 0.0, 0.0);
	G->free(gpu, dX);
	G->free(gpu, dDY);
	free(x);
	free(dy);
	free(y);
	free(dx);
	free(got);
}

Test(gpu, softmax_xent_vs_cpu)
{
	enum { N = 300, C = 10 };
	struct px_error err = { 0 };
	float *z, p[N * C], loss[N], d[N * C];
	float gp[N * C], gl[N], gd[N * C];
	uint8_t y[N];
	struct kern_rng r;

	need_gpu();
	z = rand_floats(N * C, 8, 8.0f);
	kern_rng_seed(&r, 9);
	for (int i = 0; i < N; i++)
		y[i] = (uint8_t)kern_rng_below(&r, C);
	y[7] = C; /* out of range: NAN on both */
	for (int j = 0; j < C; j++)
		z[C + j] += 1000.0f; /* huge logits stay finite */
	float *dz = to_dev(z, sizeof(p)), *dp = dev_alloc(sizeof(p));
	float *dl = dev_alloc(sizeof(loss)), *dd = dev_alloc(sizeof(d));
	uint8_t *dyl = to_dev(y, sizeof(y));

	kern_softmax_xent_fwd(p, loss, z, y, N, C);
	kern_softmax_xent_bwd(d, p, y, N, C);
	cr_assert_eq(G->softmax_xent_fwd(gpu, dp, dl, dz, dyl, N, C, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(G->softmax_xent_bwd(gpu, dd, dp, dyl, N, C, &err),
		     PX_OK, "%s", err.msg);
	from_dev(gp, dp, sizeof(gp));
	from_dev(gl, dl, sizeof(gl));
	from_dev(gd, dd, sizeof(gd));
	validate("softmax probs", gp, p, N * C, 1e-6, 1e-5);
	validate("xent loss", gl, loss, N, 1e-5, 1e-5);
	validate("softmax_xent_bwd", gd, d, N * C, 1e-8, 1e-5);
	G->free(gpu, dz);
	G->free(gpu, dp);
	G->free(gpu, dl);
	G->free(gpu, dd);
	G->free(gpu, dyl);
	free(z);
}

Test(gpu, sgd_momentum_vs_cpu)
{
	const size_t n = 269322;
	struct px_error err = { 0 };
	float *w, *v, *g, *got, *dw, *dv, *dg;

	need_gpu();
	w = rand_floats(n, 10, 0.1f);
	v = rand_floats(n, 11, 0.01f);
	g = rand_floats(n, 12, 1.0f);
	got = malloc(n * 4);
	dw = to_dev(w, n * 4);
	dv = to_dev(v, n * 4);
	dg = to_dev(g, n * 4);

	for (int s = 0; s < 3; s++) {
		kern_sgd_momentum(w, v, g, n, 0.05f, 0.9f, 1e-4f);
		cr_assert_eq(G->sgd_momentum(gpu, dw, dv, dg, n, 0.05f, 0.9f,
					     1e-4f, &err), PX_OK);
	}
	from_dev(got, dw, n * 4);
	validate("sgd w", got, w, n, 1e-6, 1e-5);
	from_dev(got, dv, n * 4);
	validate("sgd v", got, v, n, 1e-6, 1e-5);
	G->free(gpu, dw);
	G->free(gpu, dv);
	G->free(gpu, dg);
	free(w);
	free(v);
	free(g);
	free(got);
}

Test(gpu, errors_map_to_px_ecuda)
{
	struct px_error err = { 0 };
	struct kern_cuda *k = NULL;
	void *p = NULL;

	need_gpu();
	cr_assert_eq(kern_cuda_new(1000, &k, &err), PX_ECUDA);
	cr_assert(strstr(err.msg, "no device 1000"), "%s", err.msg);
	cr_assert_eq(G->alloc(gpu, (size_t)1 << 50, &p, &err), PX_ECUDA);
	cr_assert(strstr(err.msg, "cudaMalloc"), "%s", err.msg);
	cr_log_info("oversized alloc: %s", err.msg);
}

/* The MLP (784-256-256-10) trained for STEPS SGD steps on CPU and GPU from
 * the same initial parameters and batches: per-step losses and the final
 * parameters must agree. */
Test(gpu, mlp_sgd_steps_cpu_vs_gpu)
{
	enum { B = 64, STEPS = 10 };
	const uint32_t hidden[2] = { 256, 256 };
	struct px_error err = { 0 };
	struct model_desc d;
	struct model_ctx *mc = NULL, *mg = NULL;
	float *p, *v, *g, *gp, *x;
	float *dp, *dv, *dg, *dx;
	uint8_t y[B], *dy;
	struct kern_rng r;
	float lc[STEPS], lg[STEPS];

	need_gpu();
	cr_assert_eq(model_desc_init(&d, MODEL_MLP, 784, 10, hidden, 2, &err),
		     PX_OK);
	p = malloc(d.n_params * 4);
	v = calloc(d.n_params, 4);
	g = malloc(d.n_params * 4);
	gp = malloc(d.n_params * 4);
	model_init_params(&d, p, 21);
	x = rand_floats((size_t)STEPS * B * 784, 22, 0.5f);
	for (size_t i = 0; i < (size_t)STEPS * B * 784; i++)
		x[i] += 0.5f; /* pixel-like, in [0, 1] */
	kern_rng_seed(&r, 23);
	dp = to_dev(p, d.n_params * 4);
	dv = to_dev(v, d.n_params * 4);
	dg = dev_alloc(d.n_params * 4);
	dx = dev_alloc(B * 784 * 4);
	dy = dev_alloc(B);
	cr_assert_eq(model_ctx_new(&d, &kern_cpu_ops, NULL, B, &mc, &err),
		     PX_OK);
	cr_assert_eq(model_ctx_new(&d, G, gpu, B, &mg, &err), PX_OK, "%s",
		     err.msg);
	for (int s = 0; s < STEPS; s++) {
		const float *xs = x + (size_t)s * B * 784;
		double l;

		for (int i = 0; i < B; i++)
			y[i] = (uint8_t)kern_rng_below(&r, 10);
		cr_assert_eq(G->upload(gpu, dx, xs, B * 784 * 4, &err), PX_OK);
		cr_assert_eq(G->upload(gpu, dy, y, B, &err), PX_OK);
		cr_assert_eq(model_grad(mc, p, xs, y, B, g, &l, &err), PX_OK);
		lc[s] = (float)l;
		kern_sgd_momentum(p, v, g, d.n_params, 0.01f, 0.9f, 0.0f);
		cr_assert_eq(model_grad(mg, dp, dx, dy, B, dg, &l, &err), PX_OK,
			     "%s", err.msg);
		lg[s] = (float)l;
		cr_assert_eq(G->sgd_momentum(gpu, dp, dv, dg, d.n_params,
					     0.01f, 0.9f, 0.0f, &err), PX_OK);
	}
	validate("step losses", lg, lc, STEPS, 1e-5, 1e-4);
	from_dev(gp, dp, d.n_params * 4);
	validate("params after steps", gp, p, d.n_params, 1e-5, 1e-3);
	model_ctx_free(mc);
	model_ctx_free(mg);
	G->free(gpu, dp);
	G->free(gpu, dv);
	G->free(gpu, dg);
	G->free(gpu, dx);
	G->free(gpu, dy);
	free(p);
	free(v);
	free(g);
	free(gp);
	free(x);
}

#else /* !PX_HAVE_CUDA */

Test(gpu, built_without_cuda)
{
	cr_skip_test("built without nvcc: no CUDA kernels to test");
}

#endif
