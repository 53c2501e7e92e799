/* train_mf.h -- `train --model mf`: matrix factorization in one process
 * (mf.h), minibatch SGD with L2 over a ratings file, the training and test
 * RMSE after each epoch.
 */
#ifndef PX_TRAIN_MF_H
#define PX_TRAIN_MF_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/px.h"
#include "compute/mf.h"
#include "train_local.h"

/* Reported after each epoch. */
struct mf_epoch {
	uint32_t epoch;          /* 1-based */
	double train_rmse;       /* the whole training set, after the epoch */
	double test_rmse;
	double train_seconds;    /* this epoch's training, no evaluation */
	double ratings_per_sec;  /* this epoch's training throughput */
};

struct mf_result {
	uint32_t epochs;
	double train_rmse;       /* after the last epoch */
	double test_rmse;
	double ratings_per_sec;  /* all ratings trained / training time */
	double train_seconds;
	double wall_seconds;     /* setup and evaluation included */
	struct mf_desc d;        /* the model's shape */
	uint32_t test_unseen;    /* test ratings of a user or item the
				    training set has none of */
	uint32_t resumed_from;   /* epochs done before (--resume), or 0 */
};

/* Called after each epoch; false stops the run (PX_ECANCELED). */
typedef bool (*mf_epoch_fn)(void *arg, const struct mf_epoch *e);

/* Train on `train` with o's rank, epochs, batch (ratings a step), lr and
 * schedule, weight_decay (the L2's lambda) and seed; momentum, hidden,
 * threads and device are not used (the caller refuses what does not
 * apply).  Test on `test` after each epoch.  With o->checkpoint a
 * checkpoint (ckpt.h, "model": "mf") after each epoch, its clock the
 * steps done (o->fault_crash_after: SIGKILL after that epoch's); with
 * o->resume go on from one of a run of the same shape (same ratings,
 * rank, batch and epochs: ckpt_check_job), to the same result as a run
 * never stopped; with o->export_path the final model as safetensors
 * (export.h, export_mf_write). */
enum px_err train_mf_run(const struct train_opts *o,
			 const struct mf_set *train,
			 const struct mf_set *test, mf_epoch_fn on_epoch,
			 void *arg, struct mf_result *ret,
			 struct px_error *err);

#endif
