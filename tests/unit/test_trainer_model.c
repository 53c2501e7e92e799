/* test_trainer_model.c -- parameter layout, initialisation, and the
 * gradient check: backward (float, through the CPU ops table) against
 * central differences of an independent double-precision forward. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../trainer/compute/model.h"

Test(model, mlp_layout_is_flat_and_contiguous)
{
	const uint32_t hidden[2] = { 256, 256 };
	struct model_desc d;
	struct px_error err = { 0 };

	cr_assert_eq(model_desc_init(&d, MODEL_MLP, 784, 10, hidden, 2, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(d.n_layers, 3);
	cr_assert_eq(d.n_params, 784 * 256 + 256 + 256 * 256 + 256 +
				 256 * 10 + 10);
	size_t next = 0;

	for (uint32_t l = 0; l < d.n_layers; l++) {
		cr_assert_eq(d.layer[l].w_off, next);
		cr_assert_eq(d.layer[l].b_off,
			     next + (size_t)d.layer[l].in * d.layer[l].out);
		next = d.layer[l].b_off + d.layer[l].out;
		cr_assert_eq(d.layer[l].relu, l < 2);
	}
	cr_assert_eq(next, d.n_params);
	cr_assert_eq(d.layer[1].in, 256);
	cr_assert_eq(d.layer[2].out, 10);

	cr_assert_eq(model_desc_init(&d, MODEL_MLR, 784, 10, NULL, 0, &err),
		     PX_OK);
	cr_assert_eq(d.n_params, 7850);
	cr_assert_eq(d.n_layers, 1);
	cr_assert_not(d.layer[0].relu);
}

Test(model, desc_rejects_bad_shapes)
{
	const uint32_t h[8] = { 4, 4, 4, 4, 4, 4, 4, 4 }, zero[1] = { 0 };
	const uint32_t wide[2] = { 65536, 65536 };
	struct model_desc d;
	struct px_error err = { 0 };
	enum model_kind k;

	cr_assert_eq(model_desc_init(&d, MODEL_MLR, 4, 3, h, 1, &err),
		     PX_EINVAL);
	cr_assert_eq(model_desc_init(&d, MODEL_MLP, 4, 3, NULL, 0, &err),
		     PX_EINVAL);
	cr_assert_eq(model_desc_init(&d, MODEL_MLP, 4, 3, h, 8, &err),
		     PX_ETOOBIG);
	cr_assert_eq(model_desc_init(&d, MODEL_MLP, 4, 3, zero, 1, &err),
		     PX_ETOOBIG);
	cr_assert_eq(model_desc_init(&d, MODEL_MLP, 4, 3, wide, 2, &err),
		     PX_ETOOBIG);
	cr_assert_eq(model_desc_init(&d, MODEL_MLR, 4, 1, NULL, 0, &err),
		     PX_EINVAL);
	cr_assert_eq(model_kind_parse("mlp", &k, &err), PX_OK);
	cr_assert_eq(k, MODEL_MLP);
	cr_assert_eq(model_kind_parse("cnn", &k, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "'cnn'"), "%s", err.msg);
}

Test(model, init_is_seeded_he_and_xavier)
{
	const uint32_t hidden[1] = { 512 };
	struct model_desc d;
	float *a, *b;
	double sq = 0.0, mx = 0.0;

	cr_assert_eq(model_desc_init(&d, MODEL_MLP, 784, 10, hidden, 1, NULL),
		     PX_OK);
	a = calloc(d.n_params, sizeof(float));
	b = calloc(d.n_params, sizeof(float));
	model_init_params(&d, a, 5);
	model_init_params(&d, b, 5);
	cr_assert_eq(memcmp(a, b, d.n_params * sizeof(float)), 0);
	model_init_params(&d, b, 6);
	cr_assert_neq(memcmp(a, b, d.n_params * sizeof(float)), 0);
	/* hidden: He normal, sd sqrt(2/784) */
	size_t nw = 784 * 512;

	for (size_t i = 0; i < nw; i++)
		sq += (double)a[i] * a[i];
	cr_assert(fabs(sqrt(sq / nw) / sqrt(2.0 / 784) - 1.0) < 0.02,
		  "He sd %g", sqrt(sq / nw));
	/* output: Xavier uniform within sqrt(6/(512+10)) */
	const struct model_layer *L = &d.layer[1];
	double lim = sqrt(6.0 / 522);

	for (size_t i = 0; i < (size_t)L->in * L->out; i++) {
		double v = fabs(a[L->w_off + i]);

		cr_assert_leq(v, lim);
		mx = v > mx ? v : mx;
	}
	cr_assert_gt(mx, 0.9 * lim);
	for (uint32_t l = 0; l < d.n_layers; l++)
		for (uint32_t j = 0; j < d.layer[l].out; j++)
			cr_assert_eq(a[d.layer[l].b_off + j], 0.0f);
	free(a);
	free(b);
}

/* Mean cross-entropy of the model in double, written independently of
 * model.c: h = relu(x W + b) per hidden layer, then log-softmax. */
static double ref_loss(const struct model_desc *d, const double *p,
		       const float *x, const uint8_t *y, int n)
{
	double total = 0.0;

	for (int i = 0; i < n; i++) {
		double in[64] = { 0 }, out[64] = { 0 };
		uint32_t w = d->n_in;

		for (uint32_t j = 0; j < w; j++)
			in[j] = x[(size_t)i * d->n_in + j];
		for (uint32_t l = 0; l < d->n_layers; l++) {
			const struct model_layer *L = &d->layer[l];

			for (uint32_t o = 0; o < L->out; o++) {
				double s = p[L->b_off + o];

				for (uint32_t k = 0; k < L->in; k++)
					s += in[k] * p[L->w_off +
						       (size_t)k * L->out + o];
				out[o] = L->relu && s < 0.0 ? 0.0 : s;
			}
			memcpy(in, out, sizeof(out));
			w = L->out;
		}
		double mx = in[0], se = 0.0;

		for (uint32_t j = 1; j < w; j++)
			mx = in[j] > mx ? in[j] : mx;
		for (uint32_t j = 0; j < w; j++)
			se += exp(in[j] - mx);
		total += log(se) - (in[y[i]] - mx);
	}
	return total / n;
}

/* Backward vs central differences (h = 1e-5 in double: truncation and
 * rounding both ~1e-9, far below float's 1e-7 relative error in the
 * analytic gradient).  Tolerance: |an - fd| <= 1e-5 + 1e-3 |fd|. */
static void grad_check(enum model_kind kind, const uint32_t *hidden,
		       uint32_t n_hidden)
{
	enum { NIN = 7, NOUT = 4, N = 5 };
	struct model_desc d;
	struct model_ctx *c = NULL;
	struct px_error err = { 0 };
	struct kern_rng rng;
	float x[N * NIN], *pf, *g;
	uint8_t y[N] = { 0, 3, 1, 2, 3 };
	double *pd, loss = 0.0, worst = 0.0;

	cr_assert_eq(model_desc_init(&d, kind, NIN, NOUT, hidden, n_hidden,
				     &err), PX_OK, "%s", err.msg);
	pf = calloc(d.n_params, sizeof(float));
	g = calloc(d.n_params, sizeof(float));
	pd = calloc(d.n_params, sizeof(double));
	model_init_params(&d, pf, 11);
	kern_rng_seed(&rng, 12);
	for (size_t i = 0; i < d.n_params; i++) {
		/* non-zero biases too, so their path is exercised */
		pf[i] += 0.1f * kern_rng_normal(&rng);
		pd[i] = pf[i];
	}
	for (int i = 0; i < N * NIN; i++)
		x[i] = kern_rng_normal(&rng);
	cr_assert_eq(model_ctx_new(&d, &kern_cpu_ops, NULL, N, &c, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(model_grad(c, pf, x, y, N, g, &loss, &err), PX_OK, "%s",
		     err.msg);
	double ref = ref_loss(&d, pd, x, y, N);

	cr_assert(fabs(loss - ref) < 1e-5, "loss %g vs ref %g", loss, ref);
	for (size_t i = 0; i < d.n_params; i++) {
		const double h = 1e-5;
		double s = pd[i], lp, lm, fd, diff;

		pd[i] = s + h;
		lp = ref_loss(&d, pd, x, y, N);
		pd[i] = s - h;
		lm = ref_loss(&d, pd, x, y, N);
		pd[i] = s;
		fd = (lp - lm) / (2 * h);
		diff = fabs(g[i] - fd);
		worst = diff > worst ? diff : worst;
		cr_assert(diff <= 1e-5 + 1e-3 * fabs(fd),
			  "%s param %zu: backward %g, finite diff %g",
			  model_kind_name(kind), i, g[i], fd);
	}
	cr_log_info("%s grad check: %zu params, max |diff| %.3g",
		    model_kind_name(kind), d.n_params, worst);
	model_ctx_free(c);
	free(pf);
	free(g);
	free(pd);
}

Test(model, grad_check_mlr)
{
	grad_check(MODEL_MLR, NULL, 0);
}

Test(model, grad_check_mlp)
{
	const uint32_t hidden[2] = { 6, 5 };

	grad_check(MODEL_MLP, hidden, 2);
}

Test(model, eval_counts_correct_predictions)
{
	struct model_desc d;
	struct model_ctx *c = NULL;
	struct px_error err = { 0 };
	/* W = 5 I, b = 0: the prediction is the hot input */
	float p[3 * 3 + 3] = { 5, 0, 0, 0, 5, 0, 0, 0, 5, 0, 0, 0 };
	float x[4 * 3] = { 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0 };
	uint8_t y[4] = { 0, 1, 0, 2 };
	double loss = 0.0;
	uint64_t ok = 0;

	cr_assert_eq(model_desc_init(&d, MODEL_MLR, 3, 3, NULL, 0, &err),
		     PX_OK);
	cr_assert_eq(model_ctx_new(&d, &kern_cpu_ops, NULL, 4, &c, &err),
		     PX_OK);
	cr_assert_eq(model_eval(c, p, x, y, 4, &loss, &ok, &err), PX_OK);
	cr_assert_eq(ok, 2);
	/* right rows: log(1 + 2e^-5); wrong rows: 5 + log(1 + 2e^-5) */
	double l1 = log(1 + 2 * exp(-5.0));

	cr_assert(fabs(loss - (4 * l1 + 10)) < 1e-4, "loss sum %g", loss);
	/* batch bounds */
	cr_assert_eq(model_eval(c, p, x, y, 0, &loss, &ok, &err), PX_EINVAL);
	cr_assert_eq(model_eval(c, p, x, y, 5, &loss, &ok, &err), PX_EINVAL);
	cr_assert_eq(model_ctx_new(&d, &kern_cpu_ops, NULL, 0, &c, &err),
		     PX_EINVAL);
	model_ctx_free(c);
	model_ctx_free(NULL);
}

Test(model, sgd_steps_fit_a_small_batch)
{
	enum { NIN = 10, NOUT = 3, N = 16 };
	const uint32_t hidden[1] = { 16 };
	struct model_desc d;
	struct model_ctx *c = NULL;
	struct kern_rng rng;
	float x[N * NIN], *p, *v, *g;
	uint8_t y[N];
	double first = 0.0, last = 0.0;

	cr_assert_eq(model_desc_init(&d, MODEL_MLP, NIN, NOUT, hidden, 1,
				     NULL), PX_OK);
	p = calloc(d.n_params, sizeof(float));
	v = calloc(d.n_params, sizeof(float));
	g = calloc(d.n_params, sizeof(float));
	model_init_params(&d, p, 3);
	kern_rng_seed(&rng, 4);
	for (int i = 0; i < N * NIN; i++)
		x[i] = kern_rng_normal(&rng);
	for (int i = 0; i < N; i++)
		y[i] = (uint8_t)kern_rng_below(&rng, NOUT);
	cr_assert_eq(model_ctx_new(&d, &kern_cpu_ops, NULL, N, &c, NULL),
		     PX_OK);
	for (int s = 0; s < 100; s++) {
		cr_assert_eq(model_grad(c, p, x, y, N, g, &last, NULL), PX_OK);
		if (s == 0)
			first = last;
		kern_sgd_momentum(p, v, g, d.n_params, 0.1f, 0.9f, 0.0f);
	}
	cr_assert_lt(last, 0.2 * first, "loss %g -> %g", first, last);
	model_ctx_free(c);
	free(p);
	free(v);
	free(g);
}

/* A random batch of n rows over `in` features, about 1 in 8 non-zero,
 * as dense rows x[n, in] and as CSR (rp, ci, cv). */
static void sparse_batch(uint32_t n, uint32_t in, uint64_t seed, float *x,
			 uint64_t *rp, uint32_t *ci, float *cv, uint8_t *y,
			 uint32_t classes)
{
	struct kern_rng r;
	uint64_t k = 0;

	kern_rng_seed(&r, seed);
	memset(x, 0, (size_t)n * in * sizeof(float));
	for (uint32_t i = 0; i < n; i++) {
		rp[i] = k;
		for (uint32_t j = 0; j < in; j++)
			if (kern_rng_below(&r, 8) == 0) {
				float v = kern_rng_normal(&r);

				x[(size_t)i * in + j] = v;
				ci[k] = j;
				cv[k++] = v;
			}
		y[i] = (uint8_t)kern_rng_below(&r, classes);
	}
	rp[n] = k;
}

/* model_grad_csr and model_eval_csr against model_grad and model_eval
 * on the same rows made dense: the same gradient (every parameter) and
 * loss to float tolerance, over two batches into one grad buffer (the
 * rows the first touched are zero in the second's gradient unless it
 * touches them too). */
static void sparse_equals_dense(enum model_kind kind, const uint32_t *hid,
				uint32_t nh)
{
	enum { N = 12, IN = 70, C = 5 };
	struct model_desc d;
	struct model_ctx *mc;
	struct px_error err = { 0 };
	static float x[N * IN], cv[N * IN];
	static uint32_t ci[N * IN];
	uint64_t rp[N + 1], ok_d = 0, ok_s = 0;
	uint8_t y[N];
	float *p, *gd, *gs;
	double ld, ls, sd = 0, ss = 0;

	cr_assert_eq(model_desc_init(&d, kind, IN, C, hid, nh, &err), PX_OK);
	p = calloc(d.n_params, sizeof(float));
	gd = calloc(d.n_params, sizeof(float));
	gs = malloc(d.n_params * sizeof(float));
	cr_assert(p && gd && gs);
	for (size_t i = 0; i < d.n_params; i++)
		gs[i] = 1e9f; /* a buffer not seen before: zeroed whole */
	model_init_params(&d, p, 3);
	for (size_t i = 0; i < d.layer[0].out; i++)
		p[d.layer[0].b_off + i] = 0.1f * (float)i; /* a bias used */
	cr_assert_eq(model_ctx_new(&d, &kern_cpu_ops, NULL, N, &mc, &err),
		     PX_OK, "%s", err.msg);
	for (uint64_t b = 1; b <= 2; b++) {
		struct kern_csr xs = { .n = N - (uint32_t)b, .rp = rp,
				       .ci = ci, .cv = cv };

		sparse_batch(N - (uint32_t)b, IN, b, x, rp, ci, cv, y, C);
		cr_assert_eq(model_grad(mc, p, x, y, xs.n, gd, &ld, &err),
			     PX_OK, "%s", err.msg);
		cr_assert_eq(model_grad_csr(mc, p, &xs, y, gs, &ls, &err),
			     PX_OK, "%s", err.msg);
		cr_assert_float_eq(ld, ls, 1e-5, "batch %llu: loss %g, "
				   "sparse %g", (unsigned long long)b, ld, ls);
		for (size_t i = 0; i < d.n_params; i++)
			cr_assert_float_eq(gd[i], gs[i], 1e-5, "batch %llu: "
					   "grad[%zu] %g, sparse %g",
					   (unsigned long long)b, i, gd[i],
					   gs[i]);
		cr_assert_eq(model_eval(mc, p, x, y, xs.n, &sd, &ok_d, &err),
			     PX_OK);
		cr_assert_eq(model_eval_csr(mc, p, &xs, y, &ss, &ok_s, &err),
			     PX_OK);
		cr_assert_float_eq(sd, ss, 1e-4);
		cr_assert_eq(ok_d, ok_s);
	}
	/* a feature past the model's is refused, not read */
	ci[0] = IN;
	{
		const uint64_t one[2] = { 0, 1 };
		struct kern_csr xs = { .n = 1, .rp = one, .ci = ci, .cv = cv };

		cr_assert_eq(model_grad_csr(mc, p, &xs, y, gs, NULL, &err),
			     PX_EINVAL);
	}
	model_ctx_free(mc);
	free(p);
	free(gd);
	free(gs);
}

Test(model, sparse_mlr_equals_dense)
{
	sparse_equals_dense(MODEL_MLR, NULL, 0);
}

Test(model, sparse_mlp_first_layer_equals_dense)
{
	const uint32_t h[1] = { 9 };

	sparse_equals_dense(MODEL_MLP, h, 1);
}
