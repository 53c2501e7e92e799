/* test_gpu_kern.c -- every op of the CUDA ops table against its CPU
 * reference on seeded random inputs, |gpu - ref| <= tol + |ref| * eps
 * (tolerances in docs/trainer-compute.md), printing the first pairs and the
 * max diff; sizes past the launch cap (grid-stride loops), empty sizes,
 * error mapping; then the MLP's gradient, evaluation and N SGD steps on CPU
 * and GPU.  Built by `make test-gpu` into build/px_gpu_tests; every test
 * skips when no CUDA device is found, and the run then says so.  The CUDA
 * table comes through the trainer's loader (kern_load.c), which finds
 * build/libproteus-cuda.so beside this program (or $PROTEUS_CUDA_LIB): a
 * library that does not load fails every test rather than skipping. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../trainer/compute/kern_cuda.h"
#include "../../trainer/compute/model.h"

/* In the runner process, after every test: make a run where nothing ran
 * visible without --verbose.  No CUDA call here: the runner forks the
 * tests, and a CUDA context made before a fork is unusable in the child. */
ReportHook(POST_ALL)(struct criterion_global_stats *st)
{
	if (st->nb_tests > 0 && st->tests_skipped == st->nb_tests)
		fprintf(stderr, "px_gpu_tests: all %zu tests SKIPPED (no CUDA "
			"device, or built without CUDA): nothing was checked "
			"on a GPU\n", st->nb_tests);
	else if (st->tests_skipped > 0)
		fprintf(stderr, "px_gpu_tests: %zu of %zu tests skipped\n",
			st->tests_skipped, st->nb_tests);
}

#ifdef PX_HAVE_CUDA

static struct kern_cuda *gpu;
static const struct kern_ops *G; /* the loaded library's table */

static void gpu_open(void)
{
	struct px_error err = { 0 };

	cr_assert_eq(kern_cuda_load(&err), PX_OK, "%s", err.msg);
	if (kern_cuda_device_count(NULL) <= 0)
		return;
	cr_assert_eq(kern_cuda_new(0, &gpu, &err), PX_OK, "%s", err.msg);
	G = kern_cuda_ops();
	cr_assert(G && !strcmp(G->name, "cuda"));
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
	/* the bench's batch, and k = 1 */
	check_gemm(false, false, 1024, 256, 784, 0);
	check_gemm(true, false, 256, 10, 1024, 0);
	check_gemm(false, false, 5, 7, 1, 2);
}

/* k = 0 leaves c = beta * c; beta = 0 overwrites c without reading it
 * (NAN there does not propagate), as BLAS does. */
Test(gpu, gemm_edges)
{
	enum { M = 6, N = 5, K = 4 };
	struct px_error err = { 0 };
	float a[M * K], b[K * N], c[M * N], ref[M * N], got[M * N];
	float *da, *db, *dc;

	need_gpu();
	for (int i = 0; i < M * K; i++)
		a[i] = (float)(i % 7) - 3.0f;
	for (int i = 0; i < K * N; i++)
		b[i] = (float)(i % 5) - 2.0f;
	for (int i = 0; i < M * N; i++)
		c[i] = (float)i;
	da = to_dev(a, sizeof(a));
	db = to_dev(b, sizeof(b));
	dc = to_dev(c, sizeof(c));
	memcpy(ref, c, sizeof(c));
	kern_gemm(false, false, M, N, 0, 1.0f, a, 1, b, N, 0.5f, ref, N);
	cr_assert_eq(G->gemm(gpu, false, false, M, N, 0, 1.0f, da, 1, db, N,
			     0.5f, dc, N, &err), PX_OK, "%s", err.msg);
	from_dev(got, dc, sizeof(got));
	validate("gemm k=0", got, ref, M * N, 0.0, 0.0);
	for (int i = 0; i < M * N; i++)
		c[i] = NAN;
	cr_assert_eq(G->upload(gpu, dc, c, sizeof(c), &err), PX_OK);
	kern_gemm(false, false, M, N, K, 1.0f, a, K, b, N, 0.0f, c, N);
	cr_assert_eq(G->gemm(gpu, false, false, M, N, K, 1.0f, da, K, db, N,
			     0.0f, dc, N, &err), PX_OK, "%s", err.msg);
	from_dev(got, dc, sizeof(got));
	validate("gemm beta=0 over NAN", got, c, M * N, 0.0, 0.0);
	G->free(gpu, da);
	G->free(gpu, db);
	G->free(gpu, dc);
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

/* bias_grad sums each column in row order on both paths, so the results
 * are identical whatever n (the kernel loads rows 16 at a time: n = 1, 15,
 * 17 and 1027 exercise the remainder). */
Test(gpu, bias_grad_shapes)
{
	static const int shape[][2] = { { 1, 3 }, { 15, 10 }, { 17, 300 },
					{ 1024, 10 }, { 1027, 256 } };
	struct px_error err = { 0 };

	need_gpu();
	for (size_t t = 0; t < sizeof(shape) / sizeof(shape[0]); t++) {
		int n = shape[t][0], d = shape[t][1];
		float *dy = rand_floats((size_t)n * d, 40 + t, 1.0f);
		float *ref = malloc(d * 4), *got = malloc(d * 4);
		float *ddy = to_dev(dy, (size_t)n * d * 4), *ddb = dev_alloc(d * 4);
		char what[64];

		kern_bias_grad(ref, dy, n, d);
		cr_assert_eq(G->bias_grad(gpu, ddb, ddy, n, d, &err), PX_OK,
			     "%s", err.msg);
		from_dev(got, ddb, d * 4);
		snprintf(what, sizeof(what), "bias_grad %dx%d", n, d);
		validate(what, got, ref, d, 0.0, 0.0);
		G->free(gpu, ddy);
		G->free(gpu, ddb);
		free(dy);
		free(ref);
		free(got);
	}
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

/* Other class counts (2 and 256, the most labels a byte holds) and more
 * rows than one block has threads.  (Few rows would need a looser bwd
 * tolerance: p_y near 1 gives p - 1 with the ulps of p, not divided by a
 * large n.) */
Test(gpu, softmax_xent_shapes)
{
	static const int shape[][2] = { { 1025, 2 }, { 257, 256 } };
	struct px_error err = { 0 };

	need_gpu();
	for (size_t t = 0; t < sizeof(shape) / sizeof(shape[0]); t++) {
		int n = shape[t][0], c = shape[t][1];
		size_t nc = (size_t)n * c;
		float *z = rand_floats(nc, 50 + t, 6.0f);
		float *p = malloc(nc * 4), *l = malloc(n * 4), *d = malloc(nc * 4);
		float *gp = malloc(nc * 4), *gl = malloc(n * 4);
		float *gd = malloc(nc * 4);
		uint8_t *y = malloc(n), *dyl;
		float *dz, *dp, *dl, *dd;
		struct kern_rng r;

		kern_rng_seed(&r, 60 + t);
		for (int i = 0; i < n; i++)
			y[i] = (uint8_t)kern_rng_below(&r, c);
		dz = to_dev(z, nc * 4);
		dyl = to_dev(y, n);
		dp = dev_alloc(nc * 4);
		dl = dev_alloc(n * 4);
		dd = dev_alloc(nc * 4);
		kern_softmax_xent_fwd(p, l, z, y, n, c);
		kern_softmax_xent_bwd(d, p, y, n, c);
		cr_assert_eq(G->softmax_xent_fwd(gpu, dp, dl, dz, dyl, n, c,
						 &err), PX_OK, "%s", err.msg);
		cr_assert_eq(G->softmax_xent_bwd(gpu, dd, dp, dyl, n, c, &err),
			     PX_OK, "%s", err.msg);
		from_dev(gp, dp, nc * 4);
		from_dev(gl, dl, n * 4);
		from_dev(gd, dd, nc * 4);
		validate("softmax probs", gp, p, nc, 1e-6, 1e-5);
		validate("xent loss", gl, l, n, 1e-5, 1e-5);
		validate("softmax_xent_bwd", gd, d, nc, 1e-8, 1e-5);
		G->free(gpu, dz);
		G->free(gpu, dyl);
		G->free(gpu, dp);
		G->free(gpu, dl);
		G->free(gpu, dd);
		free(z);
		free(p);
		free(l);
		free(d);
		free(gp);
		free(gl);
		free(gd);
		free(y);
	}
}

/* upload, device-to-device copy, zero and download move bytes exactly. */
Test(gpu, copy_and_zero)
{
	const size_t n = 100001;
	struct px_error err = { 0 };
	float *a = rand_floats(n, 13, 1.0f), *ref = malloc(n * 4);
	float *got = malloc(n * 4), *da, *db;

	need_gpu();
	da = to_dev(a, n * 4);
	db = dev_alloc(n * 4);
	cr_assert_eq(G->copy(gpu, db, da, n * 4, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(G->zero(gpu, da + 10, 1000 * 4, &err), PX_OK, "%s",
		     err.msg);
	from_dev(got, db, n * 4);
	validate("copy", got, a, n, 0.0, 0.0);
	memcpy(ref, a, n * 4);
	memset(ref + 10, 0, 1000 * 4);
	from_dev(got, da, n * 4);
	validate("zero", got, ref, n, 0.0, 0.0);
	G->free(gpu, da);
	G->free(gpu, db);
	free(a);
	free(ref);
	free(got);
}

/* The elementwise kernels cap their grid at 65535 blocks of 256 threads
 * (16,776,960) and loop past it: check every element beyond the cap. */
Test(gpu, grid_stride_past_the_launch_cap)
{
	const size_t n = (size_t)65535 * 256 + 4099;
	enum { R = 65537, D = 256 }; /* bias_add: over the cap, within n */
	struct px_error err = { 0 };
	float *w = rand_floats(n, 14, 1.0f), *v = rand_floats(n, 15, 0.1f);
	float *g = rand_floats(n, 16, 1.0f), *got = malloc(n * 4);
	float *b = rand_floats(D, 17, 1.0f), *dw, *dv, *dg, *dbias;

	need_gpu();
	cr_assert_not_null(got);
	dw = to_dev(w, n * 4);
	dv = to_dev(v, n * 4);
	dg = to_dev(g, n * 4);
	kern_sgd_momentum(w, v, g, n, 0.1f, 0.9f, 1e-3f);
	cr_assert_eq(G->sgd_momentum(gpu, dw, dv, dg, n, 0.1f, 0.9f, 1e-3f,
				     &err), PX_OK, "%s", err.msg);
	from_dev(got, dw, n * 4);
	validate("sgd w, past the cap", got, w, n, 1e-6, 1e-5);
	from_dev(got, dv, n * 4);
	validate("sgd v, past the cap", got, v, n, 1e-6, 1e-5);
	/* relu on g (in place), then its backward against it; w and v
	 * differ by FMA ulps after the step, so each op below starts from
	 * the CPU's values to be compared exactly */
	cr_assert_eq(G->upload(gpu, dw, w, n * 4, &err), PX_OK);
	cr_assert_eq(G->upload(gpu, dv, v, n * 4, &err), PX_OK);
	kern_relu_fwd(g, g, n);
	cr_assert_eq(G->relu_fwd(gpu, dg, dg, n, &err), PX_OK, "%s", err.msg);
	from_dev(got, dg, n * 4);
	validate("relu_fwd, past the cap", got, g, n, 0.0, 0.0);
	kern_relu_bwd(v, v, g, n);
	cr_assert_eq(G->relu_bwd(gpu, dv, dv, dg, n, &err), PX_OK, "%s",
		     err.msg);
	from_dev(got, dv, n * 4);
	validate("relu_bwd, past the cap", got, v, n, 0.0, 0.0);
	/* bias_add over R x D = 16,777,472 values, on w */
	dbias = to_dev(b, D * 4);
	kern_bias_add(w, b, R, D);
	cr_assert_eq(G->bias_add(gpu, dw, dbias, R, D, &err), PX_OK, "%s",
		     err.msg);
	from_dev(got, dw, (size_t)R * D * 4);
	validate("bias_add, past the cap", got, w, (size_t)R * D, 0.0, 1e-7);
	G->free(gpu, dw);
	G->free(gpu, dv);
	G->free(gpu, dg);
	G->free(gpu, dbias);
	free(w);
	free(v);
	free(g);
	free(b);
	free(got);
}

/* Empty sizes (and a negative row count, which the reference loops skip)
 * launch nothing, return PX_OK and leave memory alone. */
Test(gpu, empty_sizes_are_no_ops)
{
	const size_t n = 64;
	struct px_error err = { 0 };
	float *a = rand_floats(n, 18, 1.0f), got[64], *da;
	uint8_t y[8] = { 0 }, *dyl;

	need_gpu();
	da = to_dev(a, n * 4);
	dyl = to_dev(y, sizeof(y));
	cr_assert_eq(G->upload(gpu, da, a, 0, &err), PX_OK);
	cr_assert_eq(G->download(gpu, got, da, 0, &err), PX_OK);
	cr_assert_eq(G->copy(gpu, da, da + 1, 0, &err), PX_OK);
	cr_assert_eq(G->zero(gpu, da, 0, &err), PX_OK);
	cr_assert_eq(G->gemm(gpu, false, false, 0, 4, 4, 1.0f, da, 4, da, 4,
			     0.0f, da, 4, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(G->gemm(gpu, false, false, 4, 0, 4, 1.0f, da, 4, da, 4,
			     0.0f, da, 4, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(G->bias_add(gpu, da, da, 0, 8, &err), PX_OK);
	cr_assert_eq(G->bias_add(gpu, da, da, 8, 0, &err), PX_OK);
	cr_assert_eq(G->bias_add(gpu, da, da, -1, 8, &err), PX_OK);
	cr_assert_eq(G->bias_grad(gpu, da, da, 8, 0, &err), PX_OK);
	cr_assert_eq(G->relu_fwd(gpu, da, da, 0, &err), PX_OK);
	cr_assert_eq(G->relu_bwd(gpu, da, da, da, 0, &err), PX_OK);
	cr_assert_eq(G->softmax_xent_fwd(gpu, da, da, da, dyl, 0, 10, &err),
		     PX_OK);
	cr_assert_eq(G->softmax_xent_bwd(gpu, da, da, dyl, 0, 10, &err),
		     PX_OK);
	cr_assert_eq(G->sgd_momentum(gpu, da, da, da, 0, 0.1f, 0.9f, 0.0f,
				     &err), PX_OK);
	from_dev(got, da, n * 4);
	validate("untouched", got, a, n, 0.0, 0.0);
	G->free(gpu, da);
	G->free(gpu, dyl);
	G->free(gpu, NULL);
	free(a);
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

/* The goodput measurement's squared norms: cuBLAS's float nrm2, squared,
 * against the CPU's double sum; sizes around a warp and a block, one
 * past the MLP's parameters, and empty. */
Test(gpu, sqnorm_vs_cpu)
{
	const size_t sizes[] = { 0, 1, 31, 257, 269322 };
	struct px_error err = { 0 };

	need_gpu();
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		float *x = rand_floats(n ? n : 1, 20 + i, 0.5f);
		float *dx = to_dev(x, (n ? n : 1) * 4);
		double ref = kern_sqnorm(x, n), got = -1.0;

		cr_assert_eq(G->sqnorm(gpu, dx, n, &got, &err), PX_OK, "%s",
			     err.msg);
		cr_log_info("sqnorm %zu: gpu %.9g cpu %.9g", n, got, ref);
		cr_assert(fabs(got - ref) <= 1e-6 + 1e-5 * ref,
			  "sqnorm of %zu values: gpu %.9g, cpu %.9g", n, got,
			  ref);
		G->free(gpu, dx);
		free(x);
	}
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
	/* The failed cudaMalloc is the runtime's "last error" too; the next
	 * launch must not report it as its own. */
	p = dev_alloc(1024 * 4);
	cr_assert_eq(G->relu_fwd(gpu, p, p, 1024, &err), PX_OK, "%s",
		     err.msg);
	G->free(gpu, p);
	cr_assert(kern_cuda_name(gpu)[0] != '\0');
	cr_log_info("device 0: %s", kern_cuda_name(gpu));
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

/* One batch through the MLP: every parameter's gradient and the
 * evaluation (summed loss, correct count) on CPU and GPU.  With seed 81 no
 * hidden pre-activation lies within 2e-5 of the ReLU kink, about 10x the
 * largest float error of a pre-activation here (2.4e-6 against double);
 * closer, a rounding difference could flip one ReLU and move a gradient
 * column by ~1e-4, which would say nothing about the kernels.  The test
 * checks that on the CPU first.  Float against double, this gradient is
 * off by 1e-7 at most, 30x inside the tolerance; the top two
 * probabilities of every row are at least 7e-3 apart, so the argmax
 * counts must agree exactly. */
Test(gpu, mlp_grad_and_eval_cpu_vs_gpu)
{
	enum { B = 32, IN = 784 };
	const uint32_t hidden[2] = { 256, 256 };
	struct px_error err = { 0 };
	struct model_desc d;
	struct model_ctx *mc = NULL, *mg = NULL;
	float *p, *g, *gg, *x, *h[2], minpre = INFINITY;
	float *dp, *dg, *dx;
	uint8_t y[B], *dy;
	double lc, lg, sc = 0.0, sg = 0.0;
	uint64_t cc = 0, cg = 0;
	struct kern_rng r;

	need_gpu();
	cr_assert_eq(model_desc_init(&d, MODEL_MLP, IN, 10, hidden, 2, &err),
		     PX_OK);
	p = malloc(d.n_params * 4);
	g = malloc(d.n_params * 4);
	gg = malloc(d.n_params * 4);
	model_init_params(&d, p, 81);
	x = rand_floats((size_t)B * IN, 82, 0.5f);
	for (size_t i = 0; i < (size_t)B * IN; i++)
		x[i] += 0.5f;
	kern_rng_seed(&r, 83);
	for (int i = 0; i < B; i++)
		y[i] = (uint8_t)kern_rng_below(&r, 10);
	/* the precondition: hidden pre-activations away from the kink */
	for (int l = 0; l < 2; l++) {
		const struct model_layer *L = &d.layer[l];

		h[l] = malloc((size_t)B * L->out * 4);
		kern_gemm(false, false, B, L->out, L->in, 1.0f,
			  l ? h[0] : x, L->in, p + L->w_off, L->out, 0.0f,
			  h[l], L->out);
		kern_bias_add(h[l], p + L->b_off, B, L->out);
		for (size_t i = 0; i < (size_t)B * L->out; i++)
			if (fabsf(h[l][i]) < minpre)
				minpre = fabsf(h[l][i]);
		kern_relu_fwd(h[l], h[l], (size_t)B * L->out);
	}
	cr_log_info("min |hidden pre-activation| %.3g", minpre);
	cr_assert(minpre > 2e-5f, "seeds put a pre-activation at %g of the "
		  "ReLU kink: choose others", minpre);
	dp = to_dev(p, d.n_params * 4);
	dx = to_dev(x, (size_t)B * IN * 4);
	dy = to_dev(y, B);
	dg = dev_alloc(d.n_params * 4);
	cr_assert_eq(model_ctx_new(&d, &kern_cpu_ops, NULL, B, &mc, &err),
		     PX_OK);
	cr_assert_eq(model_ctx_new(&d, G, gpu, B, &mg, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(model_grad(mc, p, x, y, B, g, &lc, &err), PX_OK);
	cr_assert_eq(model_grad(mg, dp, dx, dy, B, dg, &lg, &err), PX_OK, "%s",
		     err.msg);
	from_dev(gg, dg, d.n_params * 4);
	for (uint32_t l = 0; l < d.n_layers; l++) {
		const struct model_layer *L = &d.layer[l];
		char what[64];

		snprintf(what, sizeof(what), "grad W%u", l);
		validate(what, gg + L->w_off, g + L->w_off,
			 (size_t)L->in * L->out, 1e-6, 1e-3);
		snprintf(what, sizeof(what), "grad b%u", l);
		validate(what, gg + L->b_off, g + L->b_off, L->out, 1e-6,
			 1e-3);
	}
	cr_assert(fabs(lg - lc) <= 1e-5 + 1e-5 * fabs(lc), "loss gpu %.9g "
		  "cpu %.9g", lg, lc);
	cr_assert_eq(model_eval(mc, p, x, y, B, &sc, &cc, &err), PX_OK);
	cr_assert_eq(model_eval(mg, dp, dx, dy, B, &sg, &cg, &err), PX_OK,
		     "%s", err.msg);
	cr_log_info("eval: loss sum gpu %.9g cpu %.9g, correct %llu / %llu",
		    sg, sc, (unsigned long long)cg, (unsigned long long)cc);
	cr_assert(fabs(sg - sc) <= B * 1e-5 + 1e-5 * fabs(sc));
	cr_assert_eq(cg, cc);
	model_ctx_free(mc);
	model_ctx_free(mg);
	G->free(gpu, dp);
	G->free(gpu, dg);
	G->free(gpu, dx);
	G->free(gpu, dy);
	free(p);
	free(g);
	free(gg);
	free(x);
	free(h[0]);
	free(h[1]);
}

#else /* !PX_HAVE_CUDA */

Test(gpu, built_without_cuda)
{
	cr_skip_test("built without nvcc: no CUDA kernels to test");
}

#endif
