/* train_local.c -- the single-process training loop over model.h on the
 * CPU ops table or the CUDA one.
 */
#include "train_local.h"

#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/ckpt.h"
#include "io/export.h"
#include "io/dataset.h"
#include "compute/kern_cuda.h"

/* Everything one run allocates, so one function can free it. */
struct run {
	const struct kern_ops *ops;
	void *kctx;
	struct kern_cuda *cuda;
	struct model_desc d;
	struct model_ctx *m;
	struct model_ctx *em; /* host, TRAIN_EVAL_BATCH: evaluation */
	float *h_params;   /* host: initial values, then a scratch copy */
	float *params;     /* ops memory from here on */
	float *vel;
	float *grad;
	float *h_x;        /* host batch */
	uint8_t *h_y;
	float *x;          /* ops memory batch (aliases h_x on the CPU) */
	uint8_t *y;
	uint32_t *idx;     /* shuffled order */
	bool sparse;       /* batches as sparse rows (xs), not h_x */
	struct data_csr xs;
};

void train_opts_default(struct train_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->model = MODEL_MLP;
	o->hidden[0] = 256;
	o->hidden[1] = 256;
	o->n_hidden = 2;
	/* 10 epochs and a cosine schedule: what reaches the accuracy targets
	 * (MLR 84%, MLP 88%, docs/trainer.md) with the other defaults */
	o->epochs = 10;
	o->batch = 128;
	o->lr = 0.05f;
	o->momentum = 0.9f;
	o->schedule = TRAIN_LR_COSINE;
	o->device = TRAIN_DEV_CPU;
	o->seed = 1;
	o->rank = TRAIN_MF_RANK;
}

enum px_err train_device_parse(const char *s, enum train_device *ret,
			       struct px_error *err)
{
	if (!strcmp(s, "cpu"))
		*ret = TRAIN_DEV_CPU;
	else if (!strcmp(s, "cuda"))
		*ret = TRAIN_DEV_CUDA;
	else
		return px_errorf(err, PX_EINVAL,
				 "unknown device '%s' (cpu or cuda)", s);
	return PX_OK;
}

static const char *const sparse_names[] = {
	[TRAIN_SPARSE_AUTO] = "auto", [TRAIN_SPARSE_ON] = "on",
	[TRAIN_SPARSE_OFF] = "off",
};

enum px_err train_sparse_parse(const char *s, enum train_sparse *ret,
			       struct px_error *err)
{
	for (int i = 0; i < TRAIN_SPARSE_MAX; i++)
		if (!strcmp(s, sparse_names[i])) {
			*ret = (enum train_sparse)i;
			return PX_OK;
		}
	return px_errorf(err, PX_EINVAL, "unknown sparse mode '%s' (auto, on "
			 "or off)", s);
}

const char *train_sparse_name(enum train_sparse s)
{
	return (unsigned)s < TRAIN_SPARSE_MAX ? sparse_names[s] : "?";
}

enum px_err train_sparse_pick(const struct train_opts *o,
			      const struct data_set *train, double density,
			      bool *ret, struct px_error *err)
{
	const char *why = data_csr_refused(train);

	*ret = false;
	if (o->sparse == TRAIN_SPARSE_OFF)
		return PX_OK;
	if (!why && o->device != TRAIN_DEV_CPU)
		why = "the sparse kernels are the CPU's (--device cpu)";
	if (why)
		return o->sparse == TRAIN_SPARSE_ON
			       ? px_errorf(err, PX_EINVAL, "--sparse on: %s",
					   why)
			       : PX_OK;
	if (density < 0)
		density = data_density(train);
	*ret = o->sparse == TRAIN_SPARSE_ON || density <= TRAIN_SPARSE_DENSITY;
	return PX_OK;
}

enum px_err train_schedule_parse(const char *s, enum train_schedule *ret,
				 struct px_error *err)
{
	if (!strcmp(s, "const"))
		*ret = TRAIN_LR_CONST;
	else if (!strcmp(s, "cosine"))
		*ret = TRAIN_LR_COSINE;
	else
		return px_errorf(err, PX_EINVAL,
				 "unknown schedule '%s' (const or cosine)", s);
	return PX_OK;
}

float train_step_lr(const struct train_opts *o, uint64_t step,
		    uint64_t steps)
{
	if (o->schedule != TRAIN_LR_COSINE || steps == 0)
		return o->lr;
	return o->lr * 0.5f *
	       (1.0f + (float)cos(3.141592653589793 * (double)step / steps));
}

static void run_release(struct run *r)
{
	if (r->ops) {
		r->ops->free(r->kctx, r->params);
		r->ops->free(r->kctx, r->vel);
		r->ops->free(r->kctx, r->grad);
		if (r->x != r->h_x)
			r->ops->free(r->kctx, r->x);
		if (r->y != r->h_y)
			r->ops->free(r->kctx, r->y);
	}
	model_ctx_free(r->m);
	model_ctx_free(r->em);
	kern_cuda_free(r->cuda);
	free(r->h_params);
	free(r->h_x);
	free(r->h_y);
	free(r->idx);
	data_csr_free(&r->xs);
}

static enum px_err ops_alloc(struct run *r, size_t bytes, void **ret,
			     struct px_error *err)
{
	return r->ops->alloc(r->kctx, bytes, ret, err);
}

static enum px_err run_setup(struct run *r, const struct train_opts *o,
			     const struct data_set *train,
			     struct px_error *err)
{
	size_t pb;
	enum px_err e;

	e = model_desc_init(&r->d, o->model, train->dim, train->n_classes,
			    o->hidden, o->model == MODEL_MLR ? 0 : o->n_hidden,
			    err);
	if (e == PX_OK)
		e = train_sparse_pick(o, train, -1, &r->sparse, err);
	if (e != PX_OK)
		return e;
	if (o->device == TRAIN_DEV_CUDA) {
		e = kern_cuda_new(o->cuda_device, &r->cuda, err);
		if (e != PX_OK)
			return e;
		r->ops = kern_cuda_ops();
		r->kctx = r->cuda;
	} else {
		r->ops = &kern_cpu_ops;
		kern_cpu_set_threads(o->threads);
	}
	pb = r->d.n_params * sizeof(float);
	r->h_params = px_calloc(r->d.n_params, sizeof(float));
	/* sparse: no dense batch (batch x features floats: 51 MB at
	 * batch 128 and 10^5 features) */
	r->h_x = px_calloc(r->sparse ? 1 : (size_t)o->batch * train->dim,
			   sizeof(float));
	r->h_y = px_calloc(o->batch, 1);
	r->idx = px_calloc(train->n > o->batch ? train->n : o->batch,
			   sizeof(uint32_t));
	if (!r->h_params || !r->h_x || !r->h_y || !r->idx)
		return px_errorf(err, PX_ENOMEM, "cannot allocate the run");
	e = ops_alloc(r, pb, (void **)&r->params, err);
	if (e == PX_OK)
		e = ops_alloc(r, pb, (void **)&r->vel, err);
	if (e == PX_OK)
		e = ops_alloc(r, pb, (void **)&r->grad, err);
	if (e != PX_OK)
		return e;
	if (r->ops == &kern_cpu_ops) {
		/* Host memory already: gather straight into the batch. */
		r->x = r->h_x;
		r->y = r->h_y;
	} else {
		e = ops_alloc(r, (size_t)o->batch * train->dim * sizeof(float),
			      (void **)&r->x, err);
		if (e == PX_OK)
			e = ops_alloc(r, o->batch, (void **)&r->y, err);
		if (e != PX_OK)
			return e;
	}
	model_init_params(&r->d, r->h_params, o->seed);
	e = r->ops->upload(r->kctx, r->params, r->h_params, pb, err);
	if (e == PX_OK)
		e = r->ops->zero(r->kctx, r->vel, pb, err);
	if (e == PX_OK)
		e = model_ctx_new(&r->d, r->ops, r->kctx, o->batch, &r->m,
				  err);
	/* evaluation goes through train_eval_host, as in the coordinator
	 * and `eval`: one code path, so one result for one checkpoint */
	if (e == PX_OK)
		e = model_ctx_new(&r->d, &kern_cpu_ops, NULL,
				  TRAIN_EVAL_BATCH, &r->em, err);
	return e;
}

/* Copy examples idx[0..n) to the batch buffers in ops memory. */
static enum px_err load_batch(struct run *r, const struct data_set *ds,
			      const uint32_t *idx, uint32_t n,
			      struct px_error *err)
{
	enum px_err e;

	e = data_batch_gather(ds, idx, n, r->h_x, r->sparse ? &r->xs : NULL,
			      r->h_y, err);
	if (e != PX_OK || r->sparse || r->x == r->h_x)
		return PX_OK;
	e = r->ops->upload(r->kctx, r->x, r->h_x,
			   (size_t)n * ds->dim * sizeof(float), err);
	if (e == PX_OK)
		e = r->ops->upload(r->kctx, r->y, r->h_y, n, err);
	return e;
}

/* Test loss and accuracy of the current parameters: copied to the host
 * and evaluated there by train_eval_host, whatever the device. */
static enum px_err evaluate(struct run *r, const struct data_set *test,
			    double *ret_loss, double *ret_acc,
			    struct px_error *err)
{
	enum px_err e = r->ops->download(r->kctx, r->h_params, r->params,
					 r->d.n_params * sizeof(float), err);

	return e != PX_OK ? e : train_eval_host(r->em, r->h_params, test,
						ret_loss, ret_acc, err);
}

static enum px_err check_opts(const struct train_opts *o,
			      const struct data_set *train,
			      const struct data_set *test,
			      struct px_error *err)
{
	if (o->epochs == 0 || o->batch == 0 || o->batch > MODEL_MAX_BATCH)
		return px_errorf(err, PX_EINVAL, "need epochs >= 1 and batch "
				 "in 1..%u", MODEL_MAX_BATCH);
	if (!(o->lr > 0.0f) || !(o->momentum >= 0.0f && o->momentum < 1.0f)
	    || !(o->weight_decay >= 0.0f))
		return px_errorf(err, PX_EINVAL, "need lr > 0, momentum in "
				 "[0, 1) and weight decay >= 0");
	if (o->schedule != TRAIN_LR_CONST && o->schedule != TRAIN_LR_COSINE)
		return px_errorf(err, PX_EINVAL, "bad schedule %d",
				 (int)o->schedule);
	if (o->device != TRAIN_DEV_CPU && o->device != TRAIN_DEV_CUDA)
		return px_errorf(err, PX_EINVAL, "bad device %d",
				 (int)o->device);
	if (train->n == 0 || test->n == 0 || train->dim != test->dim ||
	    train->n_classes != test->n_classes)
		return px_errorf(err, PX_EINVAL, "train (%u x %u) and test "
				 "(%u x %u) sets do not match or are empty",
				 train->n, train->dim, test->n, test->dim);
	return PX_OK;
}

/* This run's shape, as a checkpoint records it (one worker). */
static struct ckpt_meta run_meta(const struct run *r,
				 const struct train_opts *o,
				 const struct data_set *train,
				 uint64_t steps_total)
{
	struct ckpt_meta m = {
		.d = r->d, .total = (int64_t)steps_total, .workers = 1,
		.batch = o->batch, .epochs = o->epochs, .n_train = train->n,
		.test_accuracy = NAN,
	};

	if (train->prep)
		m.prep = *train->prep; /* borrowed: written, never freed */
	return m;
}

/* The state after `step` steps (an epoch's end) to o->checkpoint. */
static enum px_err save(struct run *r, const struct train_opts *o,
			struct ckpt_meta m, uint64_t step, double acc,
			struct px_error *err)
{
	size_t pb = r->d.n_params * sizeof(float);
	float *v = px_calloc(r->d.n_params, sizeof(float));
	enum px_err e;

	if (!v)
		return px_errorf(err, PX_ENOMEM, "checkpoint");
	m.clock = (int64_t)step;
	m.test_accuracy = acc;
	m.written_s = px_now_wall_us() / 1000000;
	e = r->ops->download(r->kctx, r->h_params, r->params, pb, err);
	if (e == PX_OK)
		e = r->ops->download(r->kctx, v, r->vel, pb, err);
	if (e == PX_OK)
		e = ckpt_write(o->checkpoint, &m, r->h_params, v, err);
	free(v);
	return e;
}

enum px_err train_resume_read(const char *path, const struct ckpt_meta *want,
			      uint64_t steps_per_epoch, float **ret_params,
			      float **ret_momentum, uint32_t *ret_done,
			      struct px_error *err)
{
	struct ckpt_meta have;
	enum px_err e;

	e = ckpt_read(path, &have, ret_params, ret_momentum, err);
	if (e != PX_OK)
		return e;
	e = ckpt_check_job(path, &have, want, err);
	if (e == PX_OK && have.clock % (int64_t)steps_per_epoch)
		e = px_errorf(err, PX_EINVAL, "checkpoint '%s': clock %" PRId64
			      " is not at an epoch's end (%" PRIu64 " steps "
			      "each)", path, have.clock, steps_per_epoch);
	*ret_done = (uint32_t)(have.clock / (int64_t)steps_per_epoch);
	data_prep_release(&have.prep);
	if (e != PX_OK) {
		free(*ret_params);
		free(*ret_momentum);
		*ret_params = *ret_momentum = NULL;
	}
	return e;
}

/* Go on from o->resume: its state into ops memory; the epochs it has
 * done in *ret_done. */
static enum px_err restore(struct run *r, const struct train_opts *o,
			   const struct ckpt_meta *want,
			   uint64_t steps_per_epoch, uint32_t *ret_done,
			   struct px_error *err)
{
	size_t pb = r->d.n_params * sizeof(float);
	float *w, *v;
	enum px_err e;

	e = train_resume_read(o->resume, want, steps_per_epoch, &w, &v,
			      ret_done, err);
	if (e != PX_OK)
		return e;
	e = r->ops->upload(r->kctx, r->params, w, pb, err);
	if (e == PX_OK)
		e = r->ops->upload(r->kctx, r->vel, v, pb, err);
	free(w);
	free(v);
	return e;
}

enum px_err train_diverged(struct px_error *err, const char *when,
			   const char *what, double value, float lr)
{
	return px_errorf(err, TRAIN_EDIVERGED, "the run diverged at %s: the "
			 "%s is %s (--lr %g); a smaller --lr may train", when,
			 what, isnan(value) ? "not a number" : "infinite",
			 (double)lr);
}

/* The run's loss at epoch ep, step (1-based) of per_epoch: an error if
 * it diverged. */
static enum px_err check_loss(const struct train_opts *o, uint32_t ep,
			      uint64_t step, uint64_t per_epoch,
			      const char *what, double loss,
			      struct px_error *err)
{
	char when[96];

	if (isfinite(loss))
		return PX_OK;
	if (step)
		snprintf(when, sizeof(when), "epoch %u, step %" PRIu64 " of "
			 "%" PRIu64, ep, step, per_epoch);
	else
		snprintf(when, sizeof(when), "the end of epoch %u", ep);
	return train_diverged(err, when, what, loss, o->lr);
}

enum px_err train_local_run(const struct train_opts *o,
			    const struct data_set *train,
			    const struct data_set *test,
			    train_epoch_fn on_epoch, void *arg,
			    struct train_result *ret, struct px_error *err)
{
	uint64_t t0 = px_now_mono_us(), train_us = 0, samples = 0;
	uint64_t step = 0, steps_total, per_epoch;
	struct train_result res;
	struct ckpt_meta meta;
	uint32_t done = 0;
	struct run r;
	enum px_err e;

	memset(&r, 0, sizeof(r));
	memset(&res, 0, sizeof(res));
	e = check_opts(o, train, test, err);
	if (e == PX_OK && train->win) /* read in chunks: a batch fits one */
		data_window_range(train, 0, train->n,
				  o->batch);
	if (e == PX_OK)
		e = run_setup(&r, o, train, err);
	if (e != PX_OK)
		goto out_release;
	res.n_params = r.d.n_params;
	res.sparse = r.sparse;
	per_epoch = (train->n + (uint64_t)o->batch - 1) / o->batch;
	steps_total = (uint64_t)o->epochs * per_epoch;
	meta = run_meta(&r, o, train, steps_total);
	if (o->resume) {
		e = restore(&r, o, &meta, per_epoch, &done, err);
		if (e != PX_OK)
			goto out_release;
		step = (uint64_t)done * per_epoch;
		res.resumed_from = done;
	}
	for (uint32_t ep = done + 1; ep <= o->epochs; ep++) {
		struct train_epoch st = { .epoch = ep };
		uint64_t t1 = px_now_mono_us(), dt;
		double loss_sum = 0.0;
		uint32_t steps = 0;

		data_shuffle_chunked(r.idx, train->n, 0, train->win ?
				     train->win->chunk : 0, o->seed ^
				     (UINT64_C(0x5851f42d4c957f2d) * ep));
		for (uint32_t i = 0; i < train->n; i += o->batch, steps++) {
			uint32_t n = train->n - i < o->batch ? train->n - i
							     : o->batch;
			double loss;

			e = load_batch(&r, train, r.idx + i, n, err);
			if (e == PX_OK && r.sparse)
				e = model_grad_csr(r.m, r.params, &r.xs.csr,
						   r.y, r.grad, &loss, err);
			else if (e == PX_OK)
				e = model_grad(r.m, r.params, r.x, r.y, n,
					       r.grad, &loss, err);
			if (e == PX_OK)
				e = r.ops->sgd_momentum(r.kctx, r.params,
							r.vel, r.grad,
							r.d.n_params,
							train_step_lr(o, step++,
								      steps_total),
							o->momentum,
							o->weight_decay, err);
			if (e == PX_OK)
				e = check_loss(o, ep, steps + 1, per_epoch,
					       "training loss", loss, err);
			if (e != PX_OK)
				goto out_release;
			loss_sum += loss;
		}
		dt = px_now_mono_us() - t1;
		train_us += dt;
		samples += train->n;
		e = evaluate(&r, test, &st.test_loss, &st.test_accuracy,
			     err);
		/* the parameters: a non-finite one makes the test loss so */
		if (e == PX_OK)
			e = check_loss(o, ep, 0, per_epoch, "test loss",
				       st.test_loss, err);
		if (e != PX_OK)
			goto out_release;
		st.train_loss = loss_sum / steps;
		st.train_seconds = (double)dt / 1e6;
		st.samples_per_sec = dt ? train->n / st.train_seconds : 0.0;
		res.epochs = ep;
		res.train_loss = st.train_loss;
		res.test_loss = st.test_loss;
		res.test_accuracy = st.test_accuracy;
		res.train_seconds = (double)train_us / 1e6;
		res.samples_per_sec = train_us ? samples / res.train_seconds
					       : 0.0;
		res.wall_seconds = (double)(px_now_mono_us() - t0) / 1e6;
		if (o->checkpoint) {
			e = save(&r, o, meta, step, st.test_accuracy, err);
			if (e != PX_OK)
				goto out_release;
			if (o->fault_crash_after == ep)
				raise(SIGKILL);
		}
		if (on_epoch && !on_epoch(arg, &st)) {
			e = px_errorf(err, PX_ECANCELED, "stopped after epoch "
				      "%u", ep);
			break;
		}
	}
	/* the last evaluation left the final parameters on the host */
	if (e == PX_OK && o->export_path)
		e = export_write(o->export_path, &r.d, train->prep, r.h_params,
				 res.test_accuracy, err);
	if (train->win) {
		res.data_reads = train->win->reads;
		res.data_held = train->win->max_held;
	}
	*ret = res;
out_release:
	run_release(&r);
	return e;
}

enum px_err train_eval_host(struct model_ctx *mc, const float *params,
			    const struct data_set *set, double *ret_loss,
			    double *ret_acc, struct px_error *err)
{
	uint32_t batch = TRAIN_EVAL_BATCH, idx[TRAIN_EVAL_BATCH];
	struct data_csr xs = { 0 };
	bool sparse = !data_csr_refused(set);
	float *buf = NULL;
	uint8_t *yb = NULL;
	uint64_t correct = 0;
	double loss = 0.0;
	enum px_err e = PX_OK;

	if (!set->n)
		return px_errorf(err, PX_EINVAL, "no examples to evaluate");
	/* sparse rows, unscaled: on their non-zeros (a dense batch of a
	 * set of 10^5 features would be 400 MB) */
	if (sparse) {
		yb = px_calloc(batch, 1);
		if (!yb)
			return px_errorf(err, PX_ENOMEM, "evaluation batch");
	}
	/* bytes, sparse rows or scaled: a batch of floats at a time */
	if (!sparse && (!set->x || (set->prep && set->prep->mean))) {
		buf = px_calloc((size_t)batch * set->dim, sizeof(float));
		yb = px_calloc(batch, 1);
		if (!buf || !yb) {
			e = px_errorf(err, PX_ENOMEM, "evaluation batch");
			goto out;
		}
	}
	for (uint32_t i = 0; i < set->n && e == PX_OK; i += batch) {
		uint32_t n = set->n - i < batch ? set->n - i : batch;
		const float *x = buf;
		const uint8_t *y = yb;

		for (uint32_t j = 0; j < n; j++)
			idx[j] = i + j;
		if (sparse) {
			e = data_gather_csr(set, idx, n, &xs, yb, err);
			if (e == PX_OK)
				e = model_eval_csr(mc, params, &xs.csr, yb,
						   &loss, &correct, err);
			continue;
		}
		if (buf) {
			data_gather(set, idx, n, buf, yb);
		} else {
			x = set->x + (size_t)i * set->dim;
			y = set->y + i;
		}
		e = model_eval(mc, params, x, y, n, &loss, &correct, err);
	}
	if (e == PX_OK) {
		*ret_loss = loss / set->n;
		*ret_acc = (double)correct / set->n;
	}
out:
	data_csr_free(&xs);
	free(buf);
	free(yb);
	return e;
}
