/* test_trainer_train.c -- the local training loop: a short real run on a
 * Fashion-MNIST prefix (skipped without the dataset), a synthetic run,
 * determinism, cancellation, option checks, and the CUDA path's error
 * when there is no GPU.  Kept fast: the whole suite runs in seconds. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../trainer/compute/kern_cuda.h"
#include "../../trainer/train_local.h"

static bool have_fmnist(void)
{
	return access(DATA_FASHION_MNIST_DIR "/train-images-idx3-ubyte.gz",
		      R_OK) == 0 &&
	       access(DATA_FASHION_MNIST_DIR "/t10k-images-idx3-ubyte.gz",
		      R_OK) == 0;
}

Test(train, mlr_fashion_mnist_prefix_over_70_percent)
{
	struct data_set tr = { 0 }, te = { 0 };
	struct train_opts o;
	struct train_result res;
	struct px_error err = { 0 };

	if (!have_fmnist())
		cr_skip_test("dataset-fashion-mnist is not installed");
	cr_assert_eq(data_load_fashion_mnist(NULL, true, 5000, &tr, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(data_load_fashion_mnist(NULL, false, 2000, &te, &err),
		     PX_OK, "%s", err.msg);
	train_opts_default(&o);
	o.model = MODEL_MLR;
	o.n_hidden = 0;
	o.epochs = 1;
	o.lr = 0.05f;
	o.threads = 1;
	cr_assert_eq(train_local_run(&o, &tr, &te, NULL, NULL, &res, &err),
		     PX_OK, "%s", err.msg);
	cr_log_info("mlr, 5000 examples, 1 epoch: test accuracy %.4f, "
		    "%.0f samples/s", res.test_accuracy, res.samples_per_sec);
	cr_assert_gt(res.test_accuracy, 0.70, "accuracy %g",
		     res.test_accuracy);
	cr_assert_eq(res.epochs, 1);
	cr_assert_eq(res.n_params, 7850);
	cr_assert_gt(res.samples_per_sec, 0.0);
	data_release(&tr);
	data_release(&te);
}

/* Labels from a fixed random linear map of the features: separable. */
static void synth(struct data_set *ds, uint32_t n, uint64_t seed)
{
	enum { DIM = 20, K = 4 };
	struct kern_rng r, wr;
	float w[DIM * K];

	*ds = (struct data_set){ 0 }; /* float features: no bytes (xb) */
	ds->n = n;
	ds->dim = DIM;
	ds->n_classes = K;
	ds->x = calloc((size_t)n * DIM, sizeof(float));
	ds->y = calloc(n, 1);
	kern_rng_seed(&wr, 99);
	for (int i = 0; i < DIM * K; i++)
		w[i] = kern_rng_normal(&wr);
	kern_rng_seed(&r, seed);
	for (uint32_t i = 0; i < n; i++) {
		float best = -1e30f;

		for (int j = 0; j < DIM; j++)
			ds->x[i * DIM + j] = kern_rng_normal(&r);
		for (int k = 0; k < K; k++) {
			float s = 0.0f;

			for (int j = 0; j < DIM; j++)
				s += ds->x[i * DIM + j] * w[j * K + k];
			if (s > best) {
				best = s;
				ds->y[i] = (uint8_t)k;
			}
		}
	}
}

static bool count_epochs(void *arg, const struct train_epoch *e)
{
	uint32_t *n = arg;

	cr_assert_eq(e->epoch, *n + 1);
	cr_assert(e->test_accuracy >= 0.0 && e->test_accuracy <= 1.0);
	(*n)++;
	return *n < 2; /* stop after the second */
}

Test(train, synthetic_mlp_learns_and_is_deterministic)
{
	struct data_set tr, te;
	struct train_opts o;
	struct train_result a, b;
	struct px_error err = { 0 };
	uint32_t seen = 0;

	synth(&tr, 3000, 1);
	synth(&te, 500, 2);
	train_opts_default(&o);
	o.hidden[0] = 32;
	o.n_hidden = 1;
	o.epochs = 3;
	o.batch = 50;
	o.threads = 1;
	cr_assert_eq(train_local_run(&o, &tr, &te, NULL, NULL, &a, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_gt(a.test_accuracy, 0.85, "accuracy %g", a.test_accuracy);
	cr_assert_eq(train_local_run(&o, &tr, &te, NULL, NULL, &b, &err),
		     PX_OK);
	cr_assert_eq(a.test_loss, b.test_loss, "same seed, %g vs %g",
		     a.test_loss, b.test_loss);
	o.seed = 2;
	cr_assert_eq(train_local_run(&o, &tr, &te, NULL, NULL, &b, &err),
		     PX_OK);
	cr_assert_neq(a.test_loss, b.test_loss);
	/* the callback sees every epoch and can stop the run */
	o.epochs = 5;
	cr_assert_eq(train_local_run(&o, &tr, &te, count_epochs, &seen, &b,
				     &err), PX_ECANCELED);
	cr_assert_eq(seen, 2);
	cr_assert_eq(b.epochs, 2);
	data_release(&tr);
	data_release(&te);
}

Test(train, rejects_bad_options)
{
	struct data_set tr, te;
	struct train_opts o;
	struct train_result res;
	struct px_error err = { 0 };
	enum train_device dev;

	synth(&tr, 10, 1);
	synth(&te, 10, 2);
	train_opts_default(&o);
	o.epochs = 0;
	cr_assert_eq(train_local_run(&o, &tr, &te, NULL, NULL, &res, &err),
		     PX_EINVAL);
	train_opts_default(&o);
	o.momentum = 1.0f;
	cr_assert_eq(train_local_run(&o, &tr, &te, NULL, NULL, &res, &err),
		     PX_EINVAL);
	train_opts_default(&o);
	o.lr = 0.0f;
	cr_assert_eq(train_local_run(&o, &tr, &te, NULL, NULL, &res, &err),
		     PX_EINVAL);
	te.dim = 3;
	train_opts_default(&o);
	cr_assert_eq(train_local_run(&o, &tr, &te, NULL, NULL, &res, &err),
		     PX_EINVAL);
	te.dim = tr.dim;
	cr_assert_eq(train_device_parse("tpu", &dev, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "'tpu'"), "%s", err.msg);
	enum train_schedule sch;

	cr_assert_eq(train_schedule_parse("cosine", &sch, &err), PX_OK);
	cr_assert_eq(sch, TRAIN_LR_COSINE);
	cr_assert_eq(train_schedule_parse("step", &sch, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "'step'"), "%s", err.msg);
	/* batch larger than the training set: one short step per epoch */
	o.epochs = 1;
	o.batch = 64;
	o.schedule = TRAIN_LR_COSINE;
	cr_assert_eq(train_local_run(&o, &tr, &te, NULL, NULL, &res, &err),
		     PX_OK, "%s", err.msg);
	data_release(&tr);
	data_release(&te);
}

Test(train, cuda_without_a_gpu_is_a_clear_error)
{
	struct data_set tr, te;
	struct train_opts o;
	struct train_result res;
	struct px_error err = { 0 };
	enum px_err r;

	if (kern_cuda_device_count(NULL) > 0)
		cr_skip_test("a CUDA device is present (tests/gpu covers it)");
	synth(&tr, 10, 1);
	synth(&te, 10, 2);
	train_opts_default(&o);
	o.device = TRAIN_DEV_CUDA;
	r = train_local_run(&o, &tr, &te, NULL, NULL, &res, &err);
#ifdef PX_HAVE_CUDA
	cr_assert_eq(r, PX_ECUDA, "%d: %s", r, err.msg);
	cr_assert(strstr(err.msg, "cuda"), "%s", err.msg);
#else
	cr_assert_eq(r, PX_EUNSUPP, "%d: %s", r, err.msg);
#endif
	data_release(&tr);
	data_release(&te);
}
