/* train_local.h -- single-process training: a model, a data set, minibatch
 * SGD with momentum for some epochs, evaluation after each, on the CPU
 * (OpenBLAS) or one CUDA device.  No networking: the parameter-server
 * trainer reuses model.h and kern.h directly.
 */
#ifndef PX_TRAIN_LOCAL_H
#define PX_TRAIN_LOCAL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "../common/px.h"
#include "io/data.h"
#include "compute/model.h"

enum train_device {
	TRAIN_DEV_CPU,
	TRAIN_DEV_CUDA,
	TRAIN_DEV_MAX
};

enum train_schedule {
	TRAIN_LR_CONST,  /* lr throughout */
	TRAIN_LR_COSINE, /* lr * (1 + cos(pi * step / steps)) / 2, to 0 */
	TRAIN_LR_MAX
};

/* How a batch reaches the model (docs/trainer.md, "Sparse data"). */
enum train_sparse {
	TRAIN_SPARSE_AUTO, /* sparse rows when the set allows it and its
			      density is at most TRAIN_SPARSE_DENSITY */
	TRAIN_SPARSE_ON,   /* sparse rows; an error when the set or the
			      device does not allow it */
	TRAIN_SPARSE_OFF,  /* dense batches, as before */
	TRAIN_SPARSE_MAX
};

/* auto's threshold: at most 5% of the features non-zero.  A chosen
 * value, not a measured crossover: the loops over the non-zeros do a
 * 20th of gemm's multiplications there, at a few times gemm's cost each,
 * and the dense batch also pays for writing the zeros (docs/trainer.md,
 * "Sparse data"; at 0.04% the sparse path is 56x, docs/benchmarks.md). */
#define TRAIN_SPARSE_DENSITY 0.05

struct train_opts {
	enum model_kind model;
	uint32_t hidden[MODEL_MAX_LAYERS - 1]; /* MLP widths */
	uint32_t n_hidden;     /* 0 for MLR */
	uint32_t epochs;       /* passes over the training set, >= 1 */
	uint32_t batch;        /* examples per step */
	float lr;              /* learning rate */
	float momentum;        /* 0 for plain SGD */
	float weight_decay;    /* L2, added to the gradient */
	enum train_schedule schedule; /* learning rate over the run */
	int threads;           /* OpenBLAS threads; 0 leaves the default */
	enum train_device device;
	int cuda_device;       /* CUDA device ordinal */
	uint64_t seed;         /* initialisation and shuffling */
	const char *checkpoint; /* write one here after each epoch (ckpt.h);
				   NULL: none */
	const char *resume;    /* go on from this checkpoint (written by a
				   run of the same shape, at an epoch's end);
				   NULL: start afresh */
	const char *export_path; /* write the trained model here at the end
				   (export.h, safetensors); NULL: none */
	uint32_t rank;         /* mf: factors a user and an item */
	enum train_sparse sparse; /* sparse batches: auto, on or off */
	uint32_t fault_crash_after; /* tests only: SIGKILL itself after this
				   epoch's checkpoint (0: never) */
};

#define TRAIN_MF_RANK 16u /* --rank's default */

/* Defaults: MLP 256-256 (mf: rank 16), 5 epochs, batch 128, lr 0.05,
 * momentum 0.9, no weight decay, constant lr, CPU, seed 1. */
void train_opts_default(struct train_opts *o);

/* The learning rate for step `step` of `steps` under o's schedule. */
float train_step_lr(const struct train_opts *o, uint64_t step,
		    uint64_t steps);

/* "cpu" or "cuda". */
enum px_err train_device_parse(const char *s, enum train_device *ret,
			       struct px_error *err);

/* "auto", "on" or "off". */
enum px_err train_sparse_parse(const char *s, enum train_sparse *ret,
			       struct px_error *err);
const char *train_sparse_name(enum train_sparse s);

/* Whether training on `train` goes through sparse batches under
 * o->sparse: the set allows it (data_csr_refused), the device is the CPU
 * and, for auto, the density (data_density, or `density` when >= 0: a
 * set read in parts says its file's) is at most TRAIN_SPARSE_DENSITY.
 * PX_EINVAL saying why for "on" when it cannot. */
enum px_err train_sparse_pick(const struct train_opts *o,
			      const struct data_set *train, double density,
			      bool *ret, struct px_error *err);

/* "const" or "cosine". */
enum px_err train_schedule_parse(const char *s, enum train_schedule *ret,
				 struct px_error *err);

/* Reported after each epoch. */
struct train_epoch {
	uint32_t epoch;          /* 1-based */
	double train_loss;       /* mean over the epoch's batches */
	double test_loss;        /* mean over the test set */
	double test_accuracy;    /* fraction in [0, 1] */
	double train_seconds;    /* this epoch's training time, no eval */
	double samples_per_sec;  /* this epoch's training throughput */
};

struct train_result {
	uint32_t epochs;         /* epochs completed */
	double train_loss;       /* last epoch's */
	double test_loss;        /* after the last epoch */
	double test_accuracy;    /* after the last epoch, in [0, 1] */
	double samples_per_sec;  /* all training samples / training time */
	double train_seconds;    /* training time only */
	double wall_seconds;     /* everything, setup and eval included */
	size_t n_params;         /* model size in floats */
	uint32_t resumed_from;   /* epochs done before (--resume), or 0 */
	bool sparse;             /* the batches were sparse rows */
	uint64_t data_reads;     /* a set read in parts: chunks read */
	uint32_t data_held;      /* ... and the most rows held at once */
};

/* Called after each epoch; return false to stop (PX_ECANCELED). */
typedef bool (*train_epoch_fn)(void *arg, const struct train_epoch *e);

/* Train on `train`, evaluate on `test` (same dim and classes).  on_epoch
 * may be NULL.  On success *ret holds the result; on PX_ECANCELED it holds
 * the epochs done so far. */
enum px_err train_local_run(const struct train_opts *o,
			    const struct data_set *train,
			    const struct data_set *test,
			    train_epoch_fn on_epoch, void *arg,
			    struct train_result *ret, struct px_error *err);

/* A checkpoint to resume a one-process run from (`train --resume`):
 * read, checked against want (ckpt_check_job) and at an epoch's end
 * (steps_per_epoch steps each); its parameters and momentum malloc'd
 * into *ret_params and *ret_momentum, the epochs done in *ret_done.
 * Errors name the file. */
struct ckpt_meta;
enum px_err train_resume_read(const char *path, const struct ckpt_meta *want,
			      uint64_t steps_per_epoch, float **ret_params,
			      float **ret_momentum, uint32_t *ret_done,
			      struct px_error *err);

/* A run diverged: its loss (or a parameter) is no longer a finite
 * number.  train_diverged() records it in *err, saying when ("epoch 3,
 * step 12 of 469", "clock 40"), which figure ("training loss") and the
 * learning rate, and returns TRAIN_EDIVERGED: a failure of the run
 * (exit 1), not of its input. */
#define TRAIN_EDIVERGED ((enum px_err)(PX_ESYS | ERANGE))
enum px_err train_diverged(struct px_error *err, const char *when,
			   const char *what, double value, float lr);

/* Evaluate params on a data set held in host memory with a model context
 * on the host (CPU ops) made for batches of at least TRAIN_EVAL_BATCH:
 * mean loss and accuracy in [0, 1].  The coordinator and `eval` use it. */
#define TRAIN_EVAL_BATCH 1000u
enum px_err train_eval_host(struct model_ctx *mc, const float *params,
			    const struct data_set *set, double *ret_loss,
			    double *ret_acc, struct px_error *err);

#endif
