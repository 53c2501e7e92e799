/* train_mf.c -- matrix factorization in one process: shuffled minibatches
 * of ratings, the sparse gradient of each applied to the rows it touched
 * (mf.h), the RMSE of both sets after each epoch.
 */
#include "train_mf.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/ckpt.h"
#include "io/data.h"
#include "io/export.h"

static enum px_err check(const struct train_opts *o,
			 const struct mf_set *train,
			 const struct mf_set *test, struct px_error *err)
{
	if (o->epochs == 0 || o->batch == 0 || o->batch > MODEL_MAX_BATCH)
		return px_errorf(err, PX_EINVAL, "need epochs >= 1 and batch "
				 "in 1..%u", MODEL_MAX_BATCH);
	if (!(o->lr > 0.0f) || !(o->weight_decay >= 0.0f))
		return px_errorf(err, PX_EINVAL, "need lr > 0 and weight "
				 "decay >= 0");
	if (!train->n || !test->n)
		return px_errorf(err, PX_EINVAL, "the training set (%u "
				 "ratings) or the test set (%u) is empty",
				 train->n, test->n);
	return PX_OK;
}

/* This run's shape, as a checkpoint records it: one worker, a clock a
 * step. */
static struct ckpt_meta run_meta(const struct mf_desc *d,
				 const struct train_opts *o, uint32_t n_train,
				 uint64_t steps_total)
{
	struct ckpt_meta m = {
		.total = (int64_t)steps_total, .workers = 1,
		.batch = o->batch, .epochs = o->epochs, .n_train = n_train,
		.test_accuracy = NAN,
	};

	ckpt_meta_mf(&m, d);
	return m;
}

/* The state after `step` steps (epoch ep's end) to o->checkpoint, the
 * unseen rows zeroed (mf.h: training never reads them). */
static enum px_err save(const struct train_opts *o, struct ckpt_meta m,
			float *params, const uint8_t *seen, uint64_t step,
			uint64_t samples, double test_rmse,
			struct px_error *err)
{
	m.clock = (int64_t)step;
	m.samples = samples;
	m.test_accuracy = test_rmse;
	m.written_s = px_now_wall_us() / 1000000;
	mf_zero_unseen(&m.mf, params, seen);
	return ckpt_write(o->checkpoint, &m, params, NULL, err);
}

/* Go on from o->resume: its parameters into params; the epochs it has
 * done in *ret_done. */
static enum px_err restore(const struct train_opts *o,
			   const struct ckpt_meta *want, float *params,
			   uint64_t per_epoch, uint32_t *ret_done,
			   struct px_error *err)
{
	float *w, *v;
	enum px_err e;

	e = train_resume_read(o->resume, want, per_epoch, &w, &v, ret_done,
			      err);
	if (e != PX_OK)
		return e;
	memcpy(params, w, want->d.n_params * sizeof(float));
	free(w);
	free(v);
	return PX_OK;
}

enum px_err train_mf_run(const struct train_opts *o,
			 const struct mf_set *train,
			 const struct mf_set *test, mf_epoch_fn on_epoch,
			 void *arg, struct mf_result *ret,
			 struct px_error *err)
{
	uint64_t t0 = px_now_mono_us(), train_us = 0, trained = 0, step = 0;
	uint64_t per_epoch, steps_total;
	struct ckpt_meta meta;
	struct mf_result res;
	uint32_t done = 0;
	struct mf_grad *g = NULL;
	float *params = NULL;
	uint32_t *idx = NULL;
	uint8_t *seen = NULL;
	enum px_err e;

	memset(&res, 0, sizeof(res));
	e = check(o, train, test, err);
	if (e == PX_OK)
		e = mf_desc_init(&res.d, train->n_users, train->n_items,
				 o->rank, train->mean, err);
	if (e == PX_OK)
		e = mf_grad_new(&res.d, o->batch, &g, err);
	if (e != PX_OK)
		goto out;
	params = px_calloc(res.d.n_params, sizeof(float));
	idx = px_calloc(train->n, sizeof(uint32_t));
	seen = px_calloc((size_t)res.d.n_users + res.d.n_items, 1);
	if (!params || !idx || !seen) {
		e = px_errorf(err, PX_ENOMEM, "the model (%zu floats) and the "
			      "order of %u ratings", res.d.n_params, train->n);
		goto out;
	}
	mf_init_params(&res.d, params, o->seed);
	mf_mark_seen(&res.d, train, seen);
	for (uint32_t k = 0; k < test->n; k++) {
		const struct mf_rating *r = &test->r[k];

		res.test_unseen += r->user >= res.d.n_users ||
				   r->item >= res.d.n_items ||
				   !seen[mf_user_row(&res.d, r->user)] ||
				   !seen[mf_item_row(&res.d, r->item)];
	}
	per_epoch = (train->n + (uint64_t)o->batch - 1) / o->batch;
	steps_total = (uint64_t)o->epochs * per_epoch;
	meta = run_meta(&res.d, o, train->n, steps_total);
	if (o->resume) {
		e = restore(o, &meta, params, per_epoch, &done, err);
		if (e != PX_OK)
			goto out;
		step = (uint64_t)done * per_epoch;
		res.resumed_from = done;
	}
	for (uint32_t ep = done + 1; ep <= o->epochs; ep++) {
		struct mf_epoch st = { .epoch = ep };
		uint64_t t1 = px_now_mono_us(), dt;

		data_shuffle(idx, train->n, 0,
			     o->seed ^ (UINT64_C(0x5851f42d4c957f2d) * ep));
		for (uint32_t i = 0; i < train->n; i += o->batch) {
			uint32_t n = train->n - i < o->batch ? train->n - i
							     : o->batch;
			float lr = train_step_lr(o, step++, steps_total);
			double loss;
			char when[96];

			e = mf_batch_grad(&res.d, params, train, idx + i, n,
					  o->weight_decay, g, &loss, err);
			if (e != PX_OK)
				goto out;
			if (!isfinite(loss)) {
				snprintf(when, sizeof(when), "epoch %u, step "
					 "%u of %llu", ep, i / o->batch + 1,
					 (unsigned long long)per_epoch);
				e = train_diverged(err, when, "training loss",
						   loss, o->lr);
				goto out;
			}
			mf_grad_apply(&res.d, params, g, lr);
		}
		dt = px_now_mono_us() - t1;
		train_us += dt;
		trained += train->n;
		st.train_rmse = mf_rmse(&res.d, params, seen, train);
		st.test_rmse = mf_rmse(&res.d, params, seen, test);
		if (!isfinite(st.train_rmse)) {
			char when[48];

			snprintf(when, sizeof(when), "the end of epoch %u", ep);
			e = train_diverged(err, when, "training RMSE",
					   st.train_rmse, o->lr);
			goto out;
		}
		st.train_seconds = (double)dt / 1e6;
		st.ratings_per_sec = dt ? train->n / st.train_seconds : 0.0;
		res.epochs = ep;
		res.train_rmse = st.train_rmse;
		res.test_rmse = st.test_rmse;
		res.train_seconds = (double)train_us / 1e6;
		res.ratings_per_sec = train_us ? trained / res.train_seconds
					       : 0.0;
		res.wall_seconds = (double)(px_now_mono_us() - t0) / 1e6;
		if (o->checkpoint) {
			e = save(o, meta, params, seen, step,
				 (uint64_t)ep * train->n, st.test_rmse, err);
			if (e != PX_OK)
				goto out;
			if (o->fault_crash_after == ep)
				raise(SIGKILL);
		}
		if (on_epoch && !on_epoch(arg, &st)) {
			e = px_errorf(err, PX_ECANCELED, "stopped after epoch "
				      "%u", ep);
			break;
		}
	}
	/* (a resumed run has an epoch to go: ckpt_check_job refuses a
	 * finished job's checkpoint) */
	if (e == PX_OK && o->export_path)
		e = export_mf_write(o->export_path, &res.d, params, seen,
				    res.test_rmse, err);
	if (e == PX_OK || e == PX_ECANCELED)
		*ret = res;
out:
	mf_grad_free(g);
	free(params);
	free(idx);
	free(seen);
	return e;
}
