/* blas_pick.c -- the OpenBLAS kernel set by the CPU's features, the
 * re-exec that gives it to the library, and the reference check (see
 * blas_pick.h; the rule and its measurements: docs/trainer-compute.md).
 */
#include "blas_pick.h"

#include <cblas.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "kern.h"

#define CORETYPE_ENV "OPENBLAS_CORETYPE"
/* Test hooks (tests/integration/test_trainer_blas_cli.c): the core to take
 * as the library's own choice, and a core whose check is made to fail.
 * They change what is decided, never what a kernel computes. */
#define TEST_LIBRARY_ENV "PX_BLAS_TEST_LIBRARY"
#define TEST_BAD_ENV "PX_BLAS_TEST_BAD_CORE"

const char *blas_how_name(enum blas_how h)
{
	switch (h) {
	case BLAS_BY_CPU:
		return "cpu-features";
	case BLAS_BY_ENV:
		return "environment";
	case BLAS_BY_LIBRARY:
		break;
	}
	return "library";
}

/* ---- the rule ---- */

enum tier {
	T_SSE,     /* SSE2/SSE3 kernels (every x86-64) */
	T_AVX,
	T_AVX2,    /* AVX2 and FMA3 */
	T_AVX512,  /* AVX-512 F, BW, VL, DQ (Skylake-SP's set) */
	T_NEWER,   /* a name this table does not know: keep it */
};

/* The x86-64 cores OpenBLAS 0.3.21 names (driver/others/dynamic.c,
 * corename[]) and the instructions their kernels use.  Steamroller and
 * Excavator run Piledriver-style AVX/FMA kernels; Zen runs Haswell's. */
static const struct {
	const char *name;
	enum tier tier;
} cores[] = {
	{ "Unknown", T_SSE },     { "Katmai", T_SSE },
	{ "Coppermine", T_SSE },  { "Northwood", T_SSE },
	{ "Prescott", T_SSE },    { "Banias", T_SSE },
	{ "Atom", T_SSE },        { "Core2", T_SSE },
	{ "Penryn", T_SSE },      { "Dunnington", T_SSE },
	{ "Nehalem", T_SSE },     { "Athlon", T_SSE },
	{ "Opteron", T_SSE },     { "Opteron_SSE3", T_SSE },
	{ "Barcelona", T_SSE },   { "Nano", T_SSE },
	{ "Bobcat", T_SSE },      { "Sandybridge", T_AVX },
	{ "Bulldozer", T_AVX },   { "Piledriver", T_AVX },
	{ "Steamroller", T_AVX }, { "Excavator", T_AVX },
	{ "Haswell", T_AVX2 },    { "Zen", T_AVX2 },
	{ "SkylakeX", T_AVX512 }, { "Cooperlake", T_AVX512 },
	{ "SapphireRapids", T_AVX512 },
};

static enum tier core_tier(const char *name)
{
	for (size_t i = 0; i < sizeof(cores) / sizeof(cores[0]); i++)
		if (!strcasecmp(name, cores[i].name))
			return cores[i].tier;
	return T_NEWER;
}

static enum tier cpu_tier(const struct blas_cpu *c)
{
	if (c->avx512f && c->avx512bw && c->avx512vl && c->avx512dq)
		return T_AVX512;
	if (c->avx2 && c->fma)
		return T_AVX2;
	if (c->avx)
		return T_AVX;
	return T_SSE;
}

void blas_cpu_detect(struct blas_cpu *cpu)
{
	__builtin_cpu_init();
	cpu->avx = __builtin_cpu_supports("avx");
	cpu->avx2 = __builtin_cpu_supports("avx2");
	cpu->fma = __builtin_cpu_supports("fma");
	cpu->avx512f = __builtin_cpu_supports("avx512f");
	cpu->avx512bw = __builtin_cpu_supports("avx512bw");
	cpu->avx512vl = __builtin_cpu_supports("avx512vl");
	cpu->avx512dq = __builtin_cpu_supports("avx512dq");
}

const char *blas_pick_core(const char *core, const struct blas_cpu *cpu)
{
	/* each tier's kernels, by the name 0.3.21 accepts */
	static const char *const by_tier[] = {
		[T_AVX] = "Sandybridge",
		[T_AVX2] = "Haswell",
		[T_AVX512] = "SkylakeX",
	};
	enum tier have = core_tier(core), can = cpu_tier(cpu);

	if (have == T_NEWER || have >= can)
		return NULL;
	return by_tier[can];
}

/* ---- the reference check ---- */

#define CK_M 67  /* odd sizes: full register blocks and their edges */
#define CK_N 53
#define CK_K 131

enum px_err blas_check(blas_gemm_fn gemm, double *worst, struct px_error *err)
{
	static const struct {
		bool ta, tb;
		float alpha, beta;
	} runs[] = {
		{ false, false, 1.0f, 0.0f },
		{ false, true, 1.0f, 0.0f },  /* a layer's forward */
		{ true, false, 0.5f, 1.0f },  /* its weight gradient */
		{ true, true, -1.5f, 0.25f },
	};
	/* a, b and c as large as any run needs; c0 is c before */
	static float a[CK_M * CK_K], b[CK_K * CK_N], c[CK_M * CK_N],
		c0[CK_M * CK_N];
	struct kern_rng r;

	*worst = 0.0;
	kern_rng_seed(&r, 20240611);
	for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++)
		a[i] = 2.0f * kern_rng_uniform(&r) - 1.0f;
	for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++)
		b[i] = 2.0f * kern_rng_uniform(&r) - 1.0f;
	for (size_t i = 0; i < sizeof(c0) / sizeof(c0[0]); i++)
		c0[i] = 2.0f * kern_rng_uniform(&r) - 1.0f;
	for (size_t t = 0; t < sizeof(runs) / sizeof(runs[0]); t++) {
		bool ta = runs[t].ta, tb = runs[t].tb;
		float al = runs[t].alpha, be = runs[t].beta;
		/* row-major: a is [m,k] or, transposed, [k,m]; b likewise */
		int lda = ta ? CK_M : CK_K, ldb = tb ? CK_K : CK_N;

		memcpy(c, c0, sizeof(c));
		gemm(ta, tb, CK_M, CK_N, CK_K, al, a, lda, b, ldb, be, c,
		     CK_N);
		for (int i = 0; i < CK_M; i++)
			for (int j = 0; j < CK_N; j++) {
				double s = 0.0, mag = 0.0, got, e;

				for (int p = 0; p < CK_K; p++) {
					double x = ta ? a[p * lda + i]
						      : a[i * lda + p];
					double y = tb ? b[j * ldb + p]
						      : b[p * ldb + j];

					s += x * y;
					mag += fabs(x * y);
				}
				s = al * s + (double)be * c0[i * CK_N + j];
				mag = fabs(al) * mag +
				      fabs((double)be * c0[i * CK_N + j]);
				got = c[i * CK_N + j];
				e = isfinite(got) ? fabs(got - s) / mag
						  : INFINITY;
				if (e > *worst)
					*worst = e;
				if (!(e <= 2.0 * CK_K * FLT_EPSILON))
					return px_errorf(err, PX_EINVAL,
						"sgemm %c%c %dx%dx%d: c[%d,%d] "
						"is %.9g, float64 says %.9g "
						"(relative error %.3g, bound "
						"%.3g)", ta ? 'T' : 'N',
						tb ? 'T' : 'N', CK_M, CK_N,
						CK_K, i, j, got, s, e,
						2.0 * CK_K * FLT_EPSILON);
			}
	}
	return PX_OK;
}

/* blas_start's stand-in for a wrong kernel (TEST_BAD_ENV): one element
 * off by far more than rounding. */
static void bad_gemm(bool trans_a, bool trans_b, int m, int n, int k,
		     float alpha, const float *a, int lda, const float *b,
		     int ldb, float beta, float *c, int ldc)
{
	kern_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
		  ldc);
	c[(m / 2) * ldc + n / 2] += 0.01f;
}

/* ---- the start ---- */

static struct blas_state bs;
static bool bs_set;

const struct blas_state *blas_state(void)
{
	return bs_set ? &bs : NULL;
}

int blas_threads(void)
{
	return openblas_get_num_threads();
}

static void copy_name(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}

/* Run this program again with the environment as now set. */
static enum px_err reexec(char **argv, struct px_error *err)
{
	execv("/proc/self/exe", argv);
	return px_errorf(err, PX_ESYS | errno, "cannot run the trainer again "
			 "with %s set (exec /proc/self/exe): %s",
			 CORETYPE_ENV, strerror(errno));
}

/* How this process came to the kernels it has.  Exec's it again when
 * the CPU's features ask for others; returns when it goes on. */
/* The test hook's stand-in for the library's own choice (TEST_LIBRARY_
 * ENV), or NULL. */
static const char *test_library(void)
{
	const char *lib = getenv(TEST_LIBRARY_ENV);

	return lib && *lib ? lib : NULL;
}

/* Whether core is the hook's stand-in: a fallback under the hook runs it
 * (OpenBLAS would run its own choice, the machine's, not the one the
 * test pretends it made). */
static bool test_own(const char *core)
{
	return test_library() && !strcasecmp(core, test_library());
}

static void choose(char **argv, struct blas_state *st)
{
	const char *env = getenv(CORETYPE_ENV), *mark = getenv(BLAS_PICK_ENV);
	const char *lib, *pick;
	char how[16], core[32], from[32], val[96];
	struct blas_cpu cpu;
	struct px_error err;

	if (env && !*env)
		env = NULL; /* OpenBLAS takes an empty one as none */
	if (mark && sscanf(mark, "%15s %31s %31s", how, core, from) == 3) {
		if (!strcmp(how, "cpu-features") && env &&
		    !strcasecmp(env, core)) {
			st->how = BLAS_BY_CPU;
			copy_name(st->library, sizeof(st->library), from);
			return;
		}
		if (!strcmp(how, "fallback") && (!env || test_own(env))) {
			st->how = BLAS_BY_LIBRARY;
			copy_name(st->library, sizeof(st->library), st->core);
			copy_name(st->rejected, sizeof(st->rejected), core);
			return;
		}
	}
	if (env) {
		st->how = BLAS_BY_ENV;
		copy_name(st->asked, sizeof(st->asked), env);
		return;
	}
	/* OpenBLAS's own choice, decided on */
	st->how = BLAS_BY_LIBRARY;
	lib = test_library();
	if (!lib)
		lib = st->core;
	copy_name(st->library, sizeof(st->library), lib);
	blas_cpu_detect(&cpu);
	pick = blas_pick_core(lib, &cpu);
	if (!pick)
		return;
	snprintf(val, sizeof(val), "cpu-features %s %s", pick, st->library);
	if (setenv(CORETYPE_ENV, pick, 1) || setenv(BLAS_PICK_ENV, val, 1)) {
		snprintf(st->note, sizeof(st->note), "cannot set %s=%s: %s",
			 CORETYPE_ENV, pick, strerror(errno));
	} else {
		(void)reexec(argv, &err);
		copy_name(st->note, sizeof(st->note), err.msg);
	}
	/* slower, but right: go on with the library's own */
	(void)unsetenv(CORETYPE_ENV);
	(void)unsetenv(BLAS_PICK_ENV);
}

enum px_err blas_start(char **argv, struct blas_state *st,
		       struct px_error *err)
{
	const char *cfg = openblas_get_config(), *bad = getenv(TEST_BAD_ENV);
	struct px_error ck = { 0 };
	char val[96], after[64] = "";
	int vn = 0, threads;
	enum px_err e;

	memset(st, 0, sizeof(*st));
	copy_name(st->core, sizeof(st->core), openblas_get_corename());
	/* "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...": its first words */
	(void)sscanf(cfg, "%*s %*s%n", &vn);
	snprintf(st->version, sizeof(st->version), "%.*s", vn ? vn : 8, cfg);
	choose(argv, st);
	if (st->how == BLAS_BY_CPU && strcasecmp(st->core,
						 getenv(CORETYPE_ENV)))
		snprintf(st->note, sizeof(st->note), "OpenBLAS did not take "
			 "%s=%s: it runs %s", CORETYPE_ENV,
			 getenv(CORETYPE_ENV), st->core);
	if (st->how == BLAS_BY_ENV && strcasecmp(st->core, st->asked))
		snprintf(st->note, sizeof(st->note), "OpenBLAS does not know "
			 "%s=%s: it runs %s", CORETYPE_ENV, st->asked,
			 st->core);
	bs = *st;
	bs_set = true;
	/* on one thread: the kernels are the same on more, and OpenBLAS's
	 * pool, once woken, spins a while (the PS never uses it) */
	threads = openblas_get_num_threads();
	openblas_set_num_threads(1);
	e = blas_check(bad && !strcasecmp(bad, st->core) ? bad_gemm
							  : kern_gemm,
		       &st->check_error, &ck);
	openblas_set_num_threads(threads);
	bs.check_error = st->check_error;
	if (e == PX_OK)
		return PX_OK;
	if (st->how == BLAS_BY_CPU) {
		/* ours failed: the library's own, in a process of its own */
		struct px_error xe;

		snprintf(val, sizeof(val), "fallback %s %s", st->core,
			 st->library);
		if (!(test_library() ? setenv(CORETYPE_ENV, test_library(), 1) :
		      unsetenv(CORETYPE_ENV)) && !setenv(BLAS_PICK_ENV, val, 1))
			(void)reexec(argv, &xe);
	}
	if (st->rejected[0])
		snprintf(after, sizeof(after), ", after %s failed it",
			 st->rejected);
	return px_errorf(err, e, "%s's %s kernels (%s%s) fail the reference "
			 "check, so the trainer does not use them: %s; set %s "
			 "to a core that passes (Haswell, Sandybridge, "
			 "Prescott: docs/trainer-compute.md)", st->version,
			 st->core, blas_how_name(st->how), after, ck.msg,
			 CORETYPE_ENV);
}

void blas_describe(const struct blas_state *st, int threads, char *buf,
		   size_t len)
{
	char why[96] = "";

	if (threads <= 0)
		threads = blas_threads();
	if (st->how == BLAS_BY_CPU)
		snprintf(why, sizeof(why), ", the library chose %s",
			 st->library);
	else if (st->rejected[0])
		snprintf(why, sizeof(why), ", %s failed the check",
			 st->rejected);
	snprintf(buf, len, "%s, kernels %s (%s%s), %d thread%s, within "
		 "%.2g of float64", st->version, st->core,
		 blas_how_name(st->how), why, threads, threads == 1 ? "" : "s",
		 st->check_error);
}
