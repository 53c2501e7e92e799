/* gpu_step_bench.c -- time per training step of the MLP 784-256-256-10
 * (ReLU, softmax cross-entropy, SGD with momentum 0.9, lr 0.01) on the CUDA ops
 * table, or on the CPU one with --device cpu (a check of the harness where
 * there is no GPU).  bench_trainer_gpu.sh builds it against
 * build/libproteus.a and compares it with torch_step.py.  Bench fixture
 * only, not part of the product.
 *
 * One step is what train_local.c does per batch, through the same calls:
 * model_grad (forward and backward) and sgd_momentum over the flat
 * parameters, which stay on the device (no parameter copies).  Modes:
 *   sync    the batch is on the device; the mean loss is downloaded every
 *           step (a stream sync), as train_local does
 *   async   the same without reading the loss: steps queue back to back
 *   upload  sync, plus the batch copied from host memory every step, as
 *           train_local's load_batch does (the host-side gather excluded)
 * After warm-up, ROUNDS rounds of STEPS steps each are timed between two
 * device synchronisations; the median and the fastest round are printed
 * as one JSON object on stdout.
 *
 *   gpu_step_bench [--device cuda|cpu] [--batch N] [--mode sync|async|upload]
 *                  [--steps N] [--rounds N] [--warmup N] [--threads N]
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../trainer/compute/kern_cuda.h"
#include "../../trainer/compute/model.h"

enum mode { MODE_SYNC, MODE_ASYNC, MODE_UPLOAD };

static const char *const mode_name[] = { "sync", "async", "upload" };
static const char *const mode_includes[] = {
	"model_grad (forward+backward) + sgd_momentum, parameters and batch "
	"on the device, mean loss downloaded every step (as train_local)",
	"model_grad (forward+backward) + sgd_momentum, parameters and batch "
	"on the device, no host read between steps",
	"model_grad (forward+backward) + sgd_momentum, parameters on the "
	"device, batch uploaded from host memory and mean loss downloaded "
	"every step (as train_local, less the host gather)",
};

struct opts {
	bool cuda;
	uint32_t batch;
	enum mode mode;
	int steps, rounds, warmup, threads;
};

struct bench {
	const struct kern_ops *ops;
	void *kctx;
	struct kern_cuda *cuda;
	struct model_desc d;
	struct model_ctx *m;
	float *params, *vel, *grad, *x; /* ops memory */
	uint8_t *y;
	float *h_x;                     /* host copies of the batch */
	uint8_t *h_y;
	float sync_word;                /* download target for a sync */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: gpu_step_bench [--device cuda|cpu] [--batch N] "
		"[--mode sync|async|upload]\n"
		"                      [--steps N] [--rounds N] [--warmup N] "
		"[--threads N]\n");
}

static int parse_int(const char *s, int lo, int hi, int *ret)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || *end || v < lo || v > hi)
		return -1;
	*ret = (int)v;
	return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "batch", required_argument, NULL, 'b' },
		{ "device", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "mode", required_argument, NULL, 'm' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "steps", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "warmup", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	int c, b = 256, bad = 0;

	*o = (struct opts){ .cuda = true, .mode = MODE_SYNC, .steps = 100,
			    .rounds = 5, .warmup = 20, .threads = 1 };
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'b':
			bad |= parse_int(optarg, 1, MODEL_MAX_BATCH, &b);
			break;
		case 'd':
			o->cuda = !strcmp(optarg, "cuda");
			bad |= !o->cuda && strcmp(optarg, "cpu");
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'm':
			if (!strcmp(optarg, "sync"))
				o->mode = MODE_SYNC;
			else if (!strcmp(optarg, "async"))
				o->mode = MODE_ASYNC;
			else if (!strcmp(optarg, "upload"))
				o->mode = MODE_UPLOAD;
			else
				bad = 1;
			break;
		case 'r':
			bad |= parse_int(optarg, 1, 1000, &o->rounds);
			break;
		case 's':
			bad |= parse_int(optarg, 1, 1000000, &o->steps);
			break;
		case 't':
			bad |= parse_int(optarg, 1, 1024, &o->threads);
			break;
		case 'w':
			bad |= parse_int(optarg, 0, 1000000, &o->warmup);
			break;
		default:
			bad = 1;
		}
	}
	if (bad || optind != argc) {
		usage(stderr);
		return -1;
	}
	o->batch = (uint32_t)b;
	return 0;
}

static void bench_release(struct bench *b)
{
	if (b->ops) {
		b->ops->free(b->kctx, b->params);
		b->ops->free(b->kctx, b->vel);
		b->ops->free(b->kctx, b->grad);
		b->ops->free(b->kctx, b->x);
		b->ops->free(b->kctx, b->y);
	}
	model_ctx_free(b->m);
	kern_cuda_free(b->cuda);
	free(b->h_x);
	free(b->h_y);
}

static enum px_err alloc(struct bench *b, size_t bytes, void **ret,
			 struct px_error *err)
{
	return b->ops->alloc(b->kctx, bytes, ret, err);
}

/* The model, its parameters (He/Xavier init, seed 1) and momentum on the
 * device, and a fixed batch: pixels uniform in [0, 1), labels uniform. */
static enum px_err bench_setup(struct bench *b, const struct opts *o,
			       struct px_error *err)
{
	static const uint32_t hidden[2] = { 256, 256 };
	size_t pb, nx = (size_t)o->batch * 784;
	float *h_params;
	struct kern_rng r;
	enum px_err e;

	e = model_desc_init(&b->d, MODEL_MLP, 784, 10, hidden, 2, err);
	if (e != PX_OK)
		return e;
	if (o->cuda) {
		e = kern_cuda_new(0, &b->cuda, err);
		if (e != PX_OK)
			return e;
		b->ops = kern_cuda_ops();
		b->kctx = b->cuda;
	} else {
		b->ops = &kern_cpu_ops;
		kern_cpu_set_threads(o->threads);
	}
	pb = b->d.n_params * sizeof(float);
	e = alloc(b, pb, (void **)&b->params, err);
	if (e == PX_OK)
		e = alloc(b, pb, (void **)&b->vel, err);
	if (e == PX_OK)
		e = alloc(b, pb, (void **)&b->grad, err);
	if (e == PX_OK)
		e = alloc(b, nx * sizeof(float), (void **)&b->x, err);
	if (e == PX_OK)
		e = alloc(b, o->batch, (void **)&b->y, err);
	if (e == PX_OK)
		e = model_ctx_new(&b->d, b->ops, b->kctx, o->batch, &b->m,
				  err);
	if (e != PX_OK)
		return e;
	h_params = px_calloc(b->d.n_params, sizeof(float));
	b->h_x = px_calloc(nx, sizeof(float));
	b->h_y = px_calloc(o->batch, 1);
	if (!h_params || !b->h_x || !b->h_y) {
		free(h_params);
		return px_errorf(err, PX_ENOMEM, "cannot allocate the batch");
	}
	model_init_params(&b->d, h_params, 1);
	kern_rng_seed(&r, 2);
	for (size_t i = 0; i < nx; i++)
		b->h_x[i] = kern_rng_uniform(&r);
	for (uint32_t i = 0; i < o->batch; i++)
		b->h_y[i] = (uint8_t)kern_rng_below(&r, 10);
	e = b->ops->upload(b->kctx, b->params, h_params, pb, err);
	free(h_params);
	if (e == PX_OK)
		e = b->ops->zero(b->kctx, b->vel, pb, err);
	if (e == PX_OK)
		e = b->ops->upload(b->kctx, b->x, b->h_x, nx * sizeof(float),
				   err);
	if (e == PX_OK)
		e = b->ops->upload(b->kctx, b->y, b->h_y, o->batch, err);
	return e;
}

/* One training step; *ret_loss is written when the mode reads it. */
static enum px_err step(struct bench *b, const struct opts *o,
			double *ret_loss, struct px_error *err)
{
	bool read = o->mode != MODE_ASYNC;
	enum px_err e = PX_OK;

	if (o->mode == MODE_UPLOAD) {
		e = b->ops->upload(b->kctx, b->x, b->h_x,
				   (size_t)o->batch * 784 * sizeof(float), err);
		if (e == PX_OK)
			e = b->ops->upload(b->kctx, b->y, b->h_y, o->batch,
					   err);
	}
	if (e == PX_OK)
		e = model_grad(b->m, b->params, b->x, b->y, o->batch, b->grad,
			       read ? ret_loss : NULL, err);
	if (e == PX_OK)
		e = b->ops->sgd_momentum(b->kctx, b->params, b->vel, b->grad,
					 b->d.n_params, 0.01f, 0.9f, 0.0f,
					 err);
	return e;
}

/* Wait until every queued op is done: download waits for the stream. */
static enum px_err sync_device(struct bench *b, struct px_error *err)
{
	return b->ops->download(b->kctx, &b->sync_word, b->params,
				sizeof(float), err);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static enum px_err run(struct bench *b, const struct opts *o,
		       struct px_error *err)
{
	double loss0 = NAN, loss = NAN, *ms;
	enum px_err e = PX_OK;

	ms = px_calloc((size_t)o->rounds, sizeof(double));
	if (!ms)
		return px_errorf(err, PX_ENOMEM, "cannot allocate the rounds");
	/* The first step also reads the loss before any update. */
	e = model_grad(b->m, b->params, b->x, b->y, o->batch, b->grad, &loss0,
		       err);
	for (int i = 0; e == PX_OK && i < o->warmup; i++)
		e = step(b, o, &loss, err);
	for (int r = 0; e == PX_OK && r < o->rounds; r++) {
		uint64_t t0;

		e = sync_device(b, err);
		t0 = px_now_mono_us();
		for (int i = 0; e == PX_OK && i < o->steps; i++)
			e = step(b, o, &loss, err);
		if (e == PX_OK)
			e = sync_device(b, err);
		ms[r] = (double)(px_now_mono_us() - t0) / 1e3 / o->steps;
	}
	/* A last loss, after every step, whatever the mode. */
	if (e == PX_OK)
		e = model_grad(b->m, b->params, b->x, b->y, o->batch, b->grad,
			       &loss, err);
	if (e == PX_OK) {
		double best;

		qsort(ms, (size_t)o->rounds, sizeof(double), cmp_double);
		best = ms[0];
		printf("{\"impl\": \"proteus\", \"device\": \"%s\", "
		       "\"gpu_name\": \"%s\", \"batch\": %u, \"mode\": \"%s\", "
		       "\"steps\": %d, \"rounds\": %d, \"warmup\": %d, "
		       "\"threads\": %d, \"ms_per_step\": %.6f, "
		       "\"ms_per_step_min\": %.6f, \"first_loss\": %.6f, "
		       "\"final_loss\": %.6f, \"includes\": \"%s\"}\n",
		       o->cuda ? "cuda" : "cpu",
		       o->cuda ? kern_cuda_name(b->cuda) : "none", o->batch,
		       mode_name[o->mode], o->steps, o->rounds, o->warmup,
		       o->cuda ? 0 : o->threads, ms[o->rounds / 2], best,
		       loss0, loss, mode_includes[o->mode]);
	}
	free(ms);
	return e;
}

int main(int argc, char **argv)
{
	struct px_error err = { 0 };
	struct bench b;
	struct opts o;
	enum px_err e;

	if (parse_opts(argc, argv, &o))
		return 2;
	memset(&b, 0, sizeof(b));
	e = bench_setup(&b, &o, &err);
	if (e == PX_OK)
		e = run(&b, &o, &err);
	bench_release(&b);
	if (e != PX_OK) {
		fprintf(stderr, "gpu_step_bench: %s\n", err.msg);
		return e == PX_ECUDA || e == PX_EUNSUPP ? 3 : 1;
	}
	return 0;
}
