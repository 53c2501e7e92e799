/* test_trainer_blas.c -- the OpenBLAS kernel rule (blas_pick_core) on the
 * CPUs it is for, and the reference check against right and wrong
 * SGEMMs. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../../trainer/compute/blas_pick.h"
#include "../../trainer/compute/kern.h"

/* Feature sets of real CPUs. */
static const struct blas_cpu sse_only = { 0 };
static const struct blas_cpu sandy = { .avx = true };
static const struct blas_cpu haswell = { .avx = true, .avx2 = true,
					 .fma = true };
/* Knights Landing: AVX-512 F without BW, VL, DQ: SkylakeX's kernels
 * would fault on it */
static const struct blas_cpu knl = { .avx = true, .avx2 = true, .fma = true,
				     .avx512f = true };
/* Skylake-SP and later Xeons, Zen 4 and 5 */
static const struct blas_cpu avx512 = { .avx = true, .avx2 = true,
					.fma = true, .avx512f = true,
					.avx512bw = true, .avx512vl = true,
					.avx512dq = true };

static void expect(const char *lib, const struct blas_cpu *cpu,
		   const char *want)
{
	const char *got = blas_pick_core(lib, cpu);

	if (!want)
		cr_assert_null(got, "%s: kept expected, got %s", lib, got);
	else
		cr_assert(got && !strcmp(got, want), "%s: %s expected, got %s",
			  lib, want, got ? got : "(kept)");
}

/* The case: Debian's 0.3.21 on a Xeon of family 6 model 207
 * (AVX-512, AMX) does not know the model and takes Prescott. */
Test(trainer_blas, xeon_model_207_prescott_raised_to_skylakex)
{
	expect("Prescott", &avx512, "SkylakeX");
}

/* An AMD family 0.3.21 does not know (Zen 5) gets Barcelona: raised by
 * its features, whatever vendor the name is of. */
Test(trainer_blas, unknown_amd_barcelona_raised)
{
	expect("Barcelona", &avx512, "SkylakeX");
	expect("Barcelona", &haswell, "Haswell");
	expect("Nehalem", &sandy, "Sandybridge");
}

/* Each tier's generic fallback goes to that tier, no further. */
Test(trainer_blas, raised_to_the_cpus_tier)
{
	expect("Prescott", &haswell, "Haswell");
	expect("Prescott", &sandy, "Sandybridge");
	expect("Sandybridge", &haswell, "Haswell");
	expect("Haswell", &avx512, "SkylakeX");
	/* AVX-512 F alone is not SkylakeX's set */
	expect("Prescott", &knl, "Haswell");
	expect("Haswell", &knl, NULL);
}

/* A choice of the CPU's tier is kept: Zen 4 on 0.3.21 gets Cooperlake
 * (measured as fast as SkylakeX here, the same sgemm kernels), Zen 1-3
 * get Zen (Haswell's kernels), and nothing is raised past the CPU. */
Test(trainer_blas, same_tier_kept)
{
	expect("Cooperlake", &avx512, NULL);
	expect("SkylakeX", &avx512, NULL);
	expect("Zen", &haswell, NULL);
	expect("Haswell", &haswell, NULL);
	expect("Prescott", &sse_only, NULL);
	expect("SkylakeX", &haswell, NULL); /* higher than the CPU: the
					       operator's to fix */
}

/* Names are OpenBLAS's, in any case; a name the table does not know
 * (a newer library's) is the library's to decide. */
Test(trainer_blas, names)
{
	expect("prescott", &avx512, "SkylakeX");
	expect("PRESCOTT", &haswell, "Haswell");
	expect("Unknown", &avx512, "SkylakeX");
	expect("Zen5", &avx512, NULL);
	expect("", &avx512, NULL);
	cr_assert_str_eq(blas_how_name(BLAS_BY_LIBRARY), "library");
	cr_assert_str_eq(blas_how_name(BLAS_BY_CPU), "cpu-features");
	cr_assert_str_eq(blas_how_name(BLAS_BY_ENV), "environment");
}

/* This CPU's flags: each tier implies the one below (as the CPUs do). */
Test(trainer_blas, detect_consistent)
{
	struct blas_cpu c;

	blas_cpu_detect(&c);
	if (c.avx512bw)
		cr_assert(c.avx512f);
	if (c.avx2)
		cr_assert(c.avx);
}

Test(trainer_blas, library_passes)
{
	struct px_error err = { 0 };
	double worst = -1.0;

	cr_assert_eq(blas_check(kern_gemm, &worst, &err), PX_OK, "%s",
		     err.msg);
	cr_assert(worst >= 0.0 && worst < 1e-5, "worst %g", worst);
}

/* Wrong SGEMMs: one element off, a transpose ignored, beta ignored, NaN
 * out.  Each is named. */
static void off_one(bool ta, bool tb, int m, int n, int k, float alpha,
		    const float *a, int lda, const float *b, int ldb,
		    float beta, float *c, int ldc)
{
	kern_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
	c[(m - 1) * ldc + n - 1] += 0.01f; /* the last edge element */
}

static void no_trans_b(bool ta, bool tb, int m, int n, int k, float alpha,
		       const float *a, int lda, const float *b, int ldb,
		       float beta, float *c, int ldc)
{
	if (!tb) {
		kern_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
		return;
	}
	/* b ([n,k]) read as if it were [k,n]: a kernel that lost the flag */
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			float s = 0.0f;

			for (int p = 0; p < k; p++)
				s += (ta ? a[p * lda + i] : a[i * lda + p]) *
				     b[p * n + j];
			c[i * ldc + j] = alpha * s + beta * c[i * ldc + j];
		}
}

static void no_beta(bool ta, bool tb, int m, int n, int k, float alpha,
		    const float *a, int lda, const float *b, int ldb,
		    float beta, float *c, int ldc)
{
	(void)beta;
	kern_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, 0.0f, c, ldc);
}

static void nan_out(bool ta, bool tb, int m, int n, int k, float alpha,
		    const float *a, int lda, const float *b, int ldb,
		    float beta, float *c, int ldc)
{
	kern_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
	c[0] = NAN;
}

static void expect_fail(blas_gemm_fn f, const char *what)
{
	struct px_error err = { 0 };
	double worst;

	cr_assert_eq(blas_check(f, &worst, &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, what), "%s", err.msg);
	cr_assert_not_null(strstr(err.msg, "float64 says"), "%s", err.msg);
}

Test(trainer_blas, wrong_gemms_refused)
{
	expect_fail(off_one, "sgemm NN 67x53x131: c[66,52]");
	expect_fail(no_trans_b, "sgemm NT");
	expect_fail(no_beta, "sgemm TN");
	expect_fail(nan_out, "c[0,0] is nan");
}
