/* blas_pick.h -- which OpenBLAS kernel set the trainer computes with.
 *
 * Debian's OpenBLAS (0.3.21, DYNAMIC_ARCH) picks its kernels by the CPU's
 * model number and takes its generic Prescott kernels on an Intel model it
 * does not know (a 4x slower MLP on a Xeon of family 6 model 207), or its
 * Barcelona ones on an AMD family it does not know.  The trainer picks by
 * what the CPU can do instead: each kernel set needs an instruction set
 * (its tier: SSE, AVX, AVX2+FMA, AVX-512), and when the library's choice
 * is of a lower tier than the CPU's, the trainer asks for the tier's
 * kernels (Sandybridge, Haswell, SkylakeX) through OPENBLAS_CORETYPE.
 * OpenBLAS reads that variable once, when it is loaded, so the process
 * runs itself again (exec of /proc/self/exe, same argv) with it set.  An
 * OPENBLAS_CORETYPE the process was started with wins.  The kernels
 * chosen are checked once against a float64 reference before training
 * trusts them.  docs/trainer-compute.md has the rule and its measurements.
 */
#ifndef PX_BLAS_PICK_H
#define PX_BLAS_PICK_H

#include <stdbool.h>
#include <stddef.h>

#include "../../common/px.h"

/* How the kernel set in use was chosen. */
enum blas_how {
	BLAS_BY_LIBRARY,  /* OpenBLAS's own choice, kept */
	BLAS_BY_CPU,      /* raised by the CPU's feature flags */
	BLAS_BY_ENV,      /* OPENBLAS_CORETYPE given by the operator */
};

/* "library", "cpu-features", "environment". */
const char *blas_how_name(enum blas_how h);

/* What the CPU and the OS (saved register state) let code use. */
struct blas_cpu {
	bool avx, avx2, fma;
	bool avx512f, avx512bw, avx512vl, avx512dq;
};

/* This CPU's (__builtin_cpu_supports: cpuid, and xgetbv for the OS). */
void blas_cpu_detect(struct blas_cpu *cpu);

/* The core to ask OpenBLAS for when it chose `core` (a name
 * openblas_get_corename gives) on a CPU that can do *cpu: "SkylakeX",
 * "Haswell" or "Sandybridge" when `core` is of a lower tier than the CPU,
 * NULL to keep `core`.  A name this table does not know (a newer library's)
 * is kept: that library knows the CPU better than this table. */
const char *blas_pick_core(const char *core, const struct blas_cpu *cpu);

/* c[m,n] = alpha * op(a) * op(b) + beta * c, row-major: kern_gemm's
 * signature, so that a test can hand blas_check a broken one. */
typedef void (*blas_gemm_fn)(bool trans_a, bool trans_b, int m, int n, int k,
			     float alpha, const float *a, int lda,
			     const float *b, int ldb, float beta, float *c,
			     int ldc);

/* The reference check: small SGEMMs through gemm (every transpose, sizes
 * that reach both the kernels' full blocks and their edges, alpha and
 * beta) against float64 loops.  Each element must be within
 * 2 k FLT_EPSILON of its scale (the sum of |alpha a b| over k, plus
 * |beta c|): the float32 error bound of a k-term sum, which a wrong
 * kernel misses by orders of magnitude.  *worst gets the largest error
 * relative to that scale.  PX_EINVAL (which product, which element) when
 * one is out. */
enum px_err blas_check(blas_gemm_fn gemm, double *worst,
		       struct px_error *err);

/* The kernel set this process computes with (blas_start fills it). */
struct blas_state {
	char version[32];      /* "OpenBLAS 0.3.21" */
	char core[32];         /* openblas_get_corename() */
	char library[32];      /* what OpenBLAS chose by itself; "" when
				  OPENBLAS_CORETYPE was given */
	char rejected[32];     /* a core that failed blas_check, given up
				  for the library's own; "" none */
	char asked[32];        /* BLAS_BY_ENV: OPENBLAS_CORETYPE's value */
	enum blas_how how;
	double check_error;    /* blas_check's worst relative error */
	char note[PX_ERRMSG_MAX]; /* a warning for the log, "" none: the
				     library did not take the core asked
				     for, or the exec failed (then the
				     library's own kernels are kept) */
};

/* The environment variable that carries the choice to the process run
 * again, and to the roles a node or local starts: "HOW CORE LIBRARY"
 * (HOW "cpu-features": OPENBLAS_CORETYPE=CORE was set by the trainer,
 * the library chose LIBRARY) or "fallback CORE LIBRARY" (CORE failed the
 * check: OPENBLAS_CORETYPE unset, the library's own LIBRARY). */
#define BLAS_PICK_ENV "PX_BLAS_PICK"

/* At the start of a program that computes, before any thread: choose the
 * kernels, exec the program again (argv, once) when OpenBLAS must be
 * loaded with another OPENBLAS_CORETYPE, and check them.  Returns only
 * when this process goes on: PX_OK with *st filled, or an error (the
 * kernels fail the check and there is nothing safer to take; an exec that
 * failed when the check needs it) saying what to do.  *st is also kept
 * for blas_state(). */
enum px_err blas_start(char **argv, struct blas_state *st,
		       struct px_error *err);

/* What blas_start found; NULL before it ran. */
const struct blas_state *blas_state(void);

/* One line for logs: "OpenBLAS 0.3.21, kernels SkylakeX (cpu-features,
 * the library chose Prescott), 1 thread, within 2e-07 of float64" (the
 * check's worst relative error).  threads 0: OpenBLAS's count. */
void blas_describe(const struct blas_state *st, int threads, char *buf,
		   size_t len);

/* OpenBLAS's thread count now. */
int blas_threads(void);

#endif
