/* test_trainer_kern.c -- the CPU reference kernels, the PRNG and the CPU
 * ops table, against hand values and naive double-precision loops. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../trainer/compute/kern.h"

static void fill(float *a, size_t n, uint64_t seed)
{
	struct kern_rng r;

	kern_rng_seed(&r, seed);
	for (size_t i = 0; i < n; i++)
		a[i] = 2.0f * kern_rng_uniform(&r) - 1.0f;
}

Test(kern, rng_deterministic_and_in_range)
{
	struct kern_rng a, b;
	double sum = 0.0, sq = 0.0, usum = 0.0;
	const int n = 100000;

	kern_rng_seed(&a, 42);
	kern_rng_seed(&b, 42);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(kern_rng_u64(&a), kern_rng_u64(&b));
	kern_rng_seed(&b, 43);
	cr_assert_neq(kern_rng_u64(&a), kern_rng_u64(&b));
	for (int i = 0; i < n; i++) {
		float u = kern_rng_uniform(&a), z = kern_rng_normal(&a);
		uint64_t k = kern_rng_below(&a, 7);

		cr_assert(u >= 0.0f && u < 1.0f, "uniform %g", u);
		cr_assert(isfinite(z));
		cr_assert_lt(k, 7);
		usum += u;
		sum += z;
		sq += (double)z * z;
	}
	cr_assert(fabs(usum / n - 0.5) < 0.01, "uniform mean %g", usum / n);
	cr_assert(fabs(sum / n) < 0.02, "normal mean %g", sum / n);
	cr_assert(fabs(sqrt(sq / n) - 1.0) < 0.02, "normal sd %g",
		  sqrt(sq / n));
}

/* c = op(a) op(b) in double, row-major, the slow obvious way. */
static void naive_gemm(bool ta, bool tb, int m, int n, int k, const float *a,
		       int lda, const float *b, int ldb, double *c)
{
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			double s = 0.0;

			for (int p = 0; p < k; p++) {
				float av = ta ? a[p * lda + i] : a[i * lda + p];
				float bv = tb ? b[j * ldb + p] : b[p * ldb + j];

				s += (double)av * bv;
			}
			c[i * n + j] = s;
		}
}

Test(kern, gemm_matches_naive_all_transposes)
{
	const int m = 7, n = 5, k = 9, pad = 3;
	float a[(9 + 3) * (9 + 3)], b[(9 + 3) * (9 + 3)], c[7 * (5 + 3)];
	double ref[7 * 5];

	for (int t = 0; t < 4; t++) {
		bool ta = t & 1, tb = t & 2;
		int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad;
		int ldc = n + pad;

		fill(a, sizeof(a) / sizeof(a[0]), 1 + t);
		fill(b, sizeof(b) / sizeof(b[0]), 10 + t);
		fill(c, sizeof(c) / sizeof(c[0]), 20 + t);
		naive_gemm(ta, tb, m, n, k, a, lda, b, ldb, ref);
		/* beta = 0.5 keeps half of what c held */
		float c0[7 * (5 + 3)];

		memcpy(c0, c, sizeof(c));
		kern_gemm(ta, tb, m, n, k, 2.0f, a, lda, b, ldb, 0.5f, c, ldc);
		for (int i = 0; i < m; i++)
			for (int j = 0; j < n; j++) {
				double want = 2.0 * ref[i * n + j] +
					      0.5 * c0[i * ldc + j];

				cr_assert(fabs(c[i * ldc + j] - want) < 1e-5,
					  "t=%d c[%d,%d] %g != %g", t, i, j,
					  c[i * ldc + j], want);
			}
		/* the padding columns are left alone */
		for (int i = 0; i < m; i++)
			for (int j = n; j < ldc; j++)
				cr_assert_eq(c[i * ldc + j], c0[i * ldc + j]);
	}
}

Test(kern, bias_add_and_grad)
{
	float y[2 * 3] = { 1, 2, 3, 4, 5, 6 }, b[3] = { 10, 20, 30 };
	float db[3];

	kern_bias_add(y, b, 2, 3);
	const float want[6] = { 11, 22, 33, 14, 25, 36 };

	for (int i = 0; i < 6; i++)
		cr_assert_eq(y[i], want[i]);
	kern_bias_grad(db, y, 2, 3);
	cr_assert_eq(db[0], 25.0f);
	cr_assert_eq(db[1], 47.0f);
	cr_assert_eq(db[2], 69.0f);
}

Test(kern, relu_fwd_bwd)
{
	float x[5] = { -2.0f, -0.0f, 0.0f, 0.5f, 3.0f }, y[5], dx[5];
	float dy[5] = { 1, 2, 3, 4, 5 };

	kern_relu_fwd(y, x, 5);
	cr_assert_eq(y[0], 0.0f);
	cr_assert_eq(y[2], 0.0f);
	cr_assert_eq(y[3], 0.5f);
	cr_assert_eq(y[4], 3.0f);
	kern_relu_bwd(dx, dy, y, 5);
	cr_assert_eq(dx[0], 0.0f);
	cr_assert_eq(dx[1], 0.0f);
	cr_assert_eq(dx[2], 0.0f);
	cr_assert_eq(dx[3], 4.0f);
	cr_assert_eq(dx[4], 5.0f);
	/* in place */
	kern_relu_fwd(x, x, 5);
	cr_assert_eq(memcmp(x, y, sizeof(y)), 0);
}

/* The vectorized loops (ivdep) on lengths that leave a tail, in place and
 * on disjoint arrays, against the plain definitions. */
Test(kern, elementwise_long_in_place_and_apart)
{
	enum { N = 1003 };
	static float x[N], y[N], dy[N], g[N], w[N], v[N], w2[N], v2[N];
	struct kern_rng r;

	kern_rng_seed(&r, 5);
	for (int i = 0; i < N; i++) {
		x[i] = kern_rng_normal(&r);
		dy[i] = kern_rng_normal(&r);
		g[i] = kern_rng_normal(&r);
		w[i] = w2[i] = kern_rng_normal(&r);
		v[i] = v2[i] = kern_rng_normal(&r);
	}
	kern_relu_fwd(y, x, N);
	for (int i = 0; i < N; i++)
		cr_assert_eq(y[i], x[i] > 0.0f ? x[i] : 0.0f, "relu %d", i);
	kern_relu_bwd(dy, dy, y, N); /* in place, as model.c calls it */
	for (int i = 0; i < N; i++)
		cr_assert(y[i] > 0.0f || dy[i] == 0.0f, "relu_bwd %d", i);
	kern_relu_fwd(x, x, N);
	cr_assert_eq(memcmp(x, y, sizeof(y)), 0);
	kern_sgd_momentum(w, v, g, N, 0.05f, 0.9f, 1e-4f);
	for (int i = 0; i < N; i++) {
		float gi = g[i] + 1e-4f * w2[i];

		v2[i] = 0.9f * v2[i] + gi;
		w2[i] -= 0.05f * v2[i];
	}
	cr_assert_eq(memcmp(v, v2, sizeof(v)), 0, "sgd momentum");
	cr_assert_eq(memcmp(w, w2, sizeof(w)), 0, "sgd weights");
}

/* After kern_cpu_flush_denormals a result below FLT_MIN is 0 (x86). */
Test(kern, denormals_flushed)
{
	volatile float tiny = 1e-30f, k = 1e-10f;
	float r;

#if !defined(__SSE2__)
	cr_skip_test("no FTZ control on this CPU");
#endif
	r = tiny * k; /* 1e-40: a denormal */
	cr_assert_neq(r, 0.0f, "denormals already flushed");
	kern_cpu_flush_denormals();
	r = tiny * k;
	cr_assert_eq(r, 0.0f);
}

/* -log softmax(z)[y] in double. */
static double ref_xent(const float *z, int c, int y, double *p)
{
	double mx = z[0], s = 0.0;

	for (int j = 1; j < c; j++)
		mx = z[j] > mx ? z[j] : mx;
	for (int j = 0; j < c; j++)
		s += exp((double)z[j] - mx);
	for (int j = 0; j < c; j++)
		p[j] = exp((double)z[j] - mx) / s;
	return log(s) - ((double)z[y] - mx);
}

Test(kern, softmax_xent_fwd_matches_double)
{
	enum { N = 6, C = 10 };
	float z[N * C], p[N * C], loss[N];
	uint8_t y[N] = { 0, 3, 9, 5, 5, 1 };
	double pr[C];

	fill(z, N * C, 7);
	for (int i = 0; i < C; i++)
		z[C + i] *= 20.0f; /* a peaked row */
	kern_softmax_xent_fwd(p, loss, z, y, N, C);
	for (int i = 0; i < N; i++) {
		double l = ref_xent(z + i * C, C, y[i], pr), s = 0.0;

		cr_assert(fabs(loss[i] - l) <= 1e-6 + 1e-5 * fabs(l),
			  "row %d loss %g != %g", i, loss[i], l);
		for (int j = 0; j < C; j++) {
			cr_assert(fabs(p[i * C + j] - pr[j]) < 1e-6);
			s += p[i * C + j];
		}
		cr_assert(fabs(s - 1.0) < 1e-5, "row %d sums to %g", i, s);
	}
}

Test(kern, softmax_xent_stable_for_huge_logits)
{
	float z[2 * 3] = { 1000.0f, 1001.0f, 999.0f, -1e4f, 0.0f, 50.0f };
	uint8_t y[2] = { 1, 0 };
	float p[6], loss[2];

	kern_softmax_xent_fwd(p, loss, z, y, 2, 3);
	for (int i = 0; i < 6; i++)
		cr_assert(isfinite(p[i]), "p[%d] = %g", i, p[i]);
	/* log(e^-1 + 1 + e^-2) */
	cr_assert(fabs(loss[0] - 0.40760596) < 1e-6, "loss %g", loss[0]);
	/* p_y underflows to 0 yet the loss is exact: 50 + 1e4 */
	cr_assert_eq(p[3], 0.0f);
	cr_assert(fabs(loss[1] - 10050.0f) < 1e-2, "loss %g", loss[1]);
}

Test(kern, softmax_xent_bad_label_is_nan)
{
	float z[3] = { 1, 2, 3 }, p[3], loss[1];
	uint8_t y[1] = { 3 };

	kern_softmax_xent_fwd(p, loss, z, y, 1, 3);
	cr_assert(isnan(loss[0]));
}

/* The backward kernel is the gradient of the mean loss: check it by
 * central differences of the double-precision loss. */
Test(kern, softmax_xent_bwd_is_mean_loss_gradient)
{
	enum { N = 4, C = 5 };
	float z[N * C], p[N * C], loss[N], d[N * C];
	uint8_t y[N] = { 4, 0, 2, 2 };
	double pr[C];

	fill(z, N * C, 3);
	kern_softmax_xent_fwd(p, loss, z, y, N, C);
	kern_softmax_xent_bwd(d, p, y, N, C);
	for (int i = 0; i < N; i++) {
		double rs = 0.0;

		for (int j = 0; j < C; j++) {
			float s = z[i * C + j];
			const float h = 1e-2f;
			double lp, lm;

			z[i * C + j] = s + h;
			lp = ref_xent(z + i * C, C, y[i], pr);
			z[i * C + j] = s - h;
			lm = ref_xent(z + i * C, C, y[i], pr);
			z[i * C + j] = s;
			double fd = (lp - lm) / (2.0 * h) / N;

			cr_assert(fabs(d[i * C + j] - fd) < 1e-5,
				  "d[%d,%d] %g != %g", i, j, d[i * C + j], fd);
			rs += d[i * C + j];
		}
		cr_assert(fabs(rs) < 1e-6, "row %d gradient sums to %g", i, rs);
	}
}

Test(kern, sgd_momentum_two_steps)
{
	float w[2] = { 1.0f, -2.0f }, v[2] = { 0, 0 }, g[2] = { 0.5f, 1.0f };

	/* v = g; w -= 0.1 v */
	kern_sgd_momentum(w, v, g, 2, 0.1f, 0.9f, 0.0f);
	cr_assert(fabs(w[0] - 0.95f) < 1e-7 && fabs(w[1] + 2.1f) < 1e-6);
	/* v = 0.9 v + g = 1.5 g */
	kern_sgd_momentum(w, v, g, 2, 0.1f, 0.9f, 0.0f);
	cr_assert(fabs(v[0] - 0.95f) < 1e-7 && fabs(v[1] - 1.9f) < 1e-6);
	cr_assert(fabs(w[0] - 0.855f) < 1e-6 && fabs(w[1] + 2.29f) < 1e-6);
	/* weight decay adds wd * w to the gradient */
	float w2[1] = { 2.0f }, v2[1] = { 0 }, g2[1] = { 0 };

	kern_sgd_momentum(w2, v2, g2, 1, 0.5f, 0.0f, 0.1f);
	cr_assert(fabs(w2[0] - 1.9f) < 1e-6, "w %g", w2[0]);
}

Test(kern, cpu_ops_table_roundtrip)
{
	const struct kern_ops *o = &kern_cpu_ops;
	float src[4] = { 1, 2, 3, 4 }, back[4];
	void *dev = NULL;
	struct px_error err = { 0 };

	cr_assert_str_eq(o->name, "cpu");
	cr_assert_eq(o->alloc(NULL, sizeof(src), &dev, &err), PX_OK);
	cr_assert_eq(o->upload(NULL, dev, src, sizeof(src), &err), PX_OK);
	cr_assert_eq(o->relu_fwd(NULL, dev, dev, 4, &err), PX_OK);
	cr_assert_eq(o->download(NULL, back, dev, sizeof(back), &err), PX_OK);
	cr_assert_eq(memcmp(back, src, sizeof(src)), 0);
	cr_assert_eq(o->zero(NULL, dev, sizeof(src), &err), PX_OK);
	cr_assert_eq(o->download(NULL, back, dev, sizeof(back), &err), PX_OK);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(back[i], 0.0f);
	o->free(NULL, dev);
	o->free(NULL, NULL);
}

/* A worker's update (sub) and a PS adding it (add): each element is one
 * IEEE operation, the same as the plain float expression; lengths that
 * are no multiple of a vector, and a source 4 bytes off alignment (as
 * floats inside a frame may be). */
Test(kern, add_and_sub_elementwise)
{
	enum { N = 1037 };
	static float a[N + 1], b[N], d[N], y[N], want[N];

	fill(a, N + 1, 11);
	fill(b, N, 12);
	kern_sub(d, a, b, N);
	for (size_t i = 0; i < N; i++)
		cr_assert_eq(d[i], a[i] - b[i], "sub at %zu", i);
	for (size_t n = 0; n <= 33; n += 11) {
		memcpy(y, b, sizeof(y));
		for (size_t i = 0; i < N; i++)
			want[i] = i < N - n ? b[i] + a[i + 1] : b[i];
		kern_add(y, a + 1, N - n);
		for (size_t i = 0; i < N; i++)
			cr_assert_eq(y[i], want[i], "add of %zu at %zu",
				     N - n, i);
	}
}
