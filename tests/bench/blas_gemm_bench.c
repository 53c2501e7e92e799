/* blas_gemm_bench.c -- the SGEMMs of one training step of the MLP
 * 784-256-256-10 at batch B (argv[1], default 256), as trainer/compute/model.c
 * issues them (row-major: forward act = in * W, NN; weight gradient
 * dW = in^T * dy, TN; input gradient dx = dy * W^T, NT, not for the first
 * layer; the values stay in [-1, 1] times the sizes: no denormals, no
 * infinities), through OpenBLAS on 1 thread.  Prints the kernel set OpenBLAS
 * runs, the best of 5 timings of 100 steps in ms per step, and GFLOP/s.
 * Set OPENBLAS_CORETYPE to try a kernel set (tests/bench/bench_blas.sh
 * runs it for each).  Bench program only, not part of the product. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	static const int layer[3][2] = { { 784, 256 }, { 256, 256 },
					 { 256, 10 } };
	int b = argc > 1 ? atoi(argv[1]) : 256;
	float *x, *w, *y, *g, *d;
	double best = 1e30, flop = 0.0;

	if (b < 1 || b > 65536) {
		fprintf(stderr, "blas_gemm_bench: batch %s: 1..65536\n",
			argv[1]);
		return 2;
	}
	x = malloc(sizeof(float) * (size_t)b * 784);
	y = malloc(sizeof(float) * (size_t)b * 784);
	w = malloc(sizeof(float) * 784 * 256);
	g = malloc(sizeof(float) * 784 * 256);
	d = malloc(sizeof(float) * (size_t)b * 784);
	if (!x || !y || !w || !g || !d) {
		fprintf(stderr, "blas_gemm_bench: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < (size_t)b * 784; i++)
		x[i] = y[i] = (float)(i % 255) / 255.0f;
	for (size_t i = 0; i < 784 * 256; i++)
		w[i] = (float)(i % 97) / 97.0f - 0.5f;
	openblas_set_num_threads(1);
	for (int rep = 0; rep < 5; rep++) {
		double t0 = now(), t;

		for (int it = 0; it < 100; it++)
			for (int l = 0; l < 3; l++) {
				int ni = layer[l][0], no = layer[l][1];

				cblas_sgemm(CblasRowMajor, CblasNoTrans,
					    CblasNoTrans, b, no, ni, 1.0f, x,
					    ni, w, no, 0.0f, y, no);
				cblas_sgemm(CblasRowMajor, CblasTrans,
					    CblasNoTrans, ni, no, b, 1.0f, x,
					    ni, y, no, 0.0f, g, no);
				if (l)
					cblas_sgemm(CblasRowMajor, CblasNoTrans,
						    CblasTrans, b, ni, no, 1.0f,
						    y, no, w, no, 0.0f, d, ni);
			}
		t = (now() - t0) / 100;
		if (t < best)
			best = t;
	}
	for (int l = 0; l < 3; l++)
		flop += 2.0 * b * layer[l][0] * layer[l][1] * (l ? 3 : 2);
	printf("%s %.3f %.1f\n", openblas_get_corename(), best * 1e3,
	       flop / best * 1e-9);
	free(x);
	free(y);
	free(w);
	free(g);
	free(d);
	return 0;
}
