/* ckpt.h -- training checkpoints: the whole parameter vector and the
 * optimizer's momentum at a clock, with what the job was, in one file.
 *
 * The format (docs/trainer.md, "Checkpoints"): one line of JSON (at most
 * CKPT_HEADER_MAX bytes, then '\n') naming the model, the job's shape and
 * the clock; the parameters, n_params float32 little-endian; the momentum,
 * likewise; with "scale": "standard" in the header, the features' means
 * and standard deviations (inputs float32 each); the SHA-256 of
 * everything before it (32 bytes).  A matrix factorization ("model":
 * "mf") has its shape in the header instead of the layers' ("users",
 * "items", "rank", "mean", "ids": "identity", row = id) and no momentum
 * (plain SGD).  A model of the user's own data has
 * its labels in the header ("labels": the value of each class).  A file is
 * written to a fresh temporary name beside it (mkostemp: O_EXCL, 0600),
 * synced and renamed over the old one, so a crash leaves the old
 * checkpoint or the new, never half of one.
 */
#ifndef PX_CKPT_H
#define PX_CKPT_H

#include <stdint.h>

#include "../../common/px.h"
#include "dataset.h"
#include "../compute/mf.h"
#include "../compute/model.h"

#define CKPT_HEADER_MAX 4096
/* The largest checkpoint: header, parameters and momentum, scaling,
 * SHA-256 (what proteusd hands out is bounded by it). */
#define CKPT_MAX_BYTES ((uint64_t)CKPT_HEADER_MAX + 1 +                  \
			8 * (uint64_t)MODEL_MAX_PARAMS +                 \
			8 * (uint64_t)MODEL_MAX_IN + 32)
#define CKPT_FORMAT "proteus-checkpoint"
#define CKPT_VERSION 1
#define CKPT_MF_IDS "identity" /* an mf model's rows: user u is row u,
				  item i row users + i */

/* What a checkpoint says of itself.  The job's shape (workers, batch,
 * epochs, n_train) fixes what a clock means, so a resumed job must have
 * the same; the model must match the parameter vector. */
struct ckpt_meta {
	struct model_desc d;    /* model (kind, widths, n_params); of an
				   mf model the kind and n_params alone */
	struct mf_desc mf;      /* d.kind MODEL_MF: the factorization's
				   shape (the rest zero) */
	int64_t clock;          /* every update of clocks < clock is in;
				   some of the next 1 + slack may be too */
	int64_t total;          /* clocks of the whole job */
	uint32_t workers;       /* initial workers (partitions) */
	uint32_t batch;
	uint32_t epochs;
	uint32_t n_train;       /* training examples used */
	uint64_t samples;       /* samples trained before clock (the job's
				   progress whatever its workers); 0: not
				   said */
	double test_accuracy;   /* at clock (mf: the test RMSE); NaN: not
				   evaluated */
	int64_t written_s;      /* Unix time it was written */
	uint32_t deltas;        /* ckpt_read: incremental records applied
				   over the full checkpoint (0: none) */
	uint8_t sha256[32];     /* ckpt_read: the full file's SHA-256 (what
				   its records name) */
	struct data_prep prep;  /* the training data's labels and scaling
				   (n_classes 0: Fashion-MNIST's, none).
				   Written from the caller's; ckpt_read
				   allocates its scaling: release it with
				   data_prep_release */
};

/* The checkpoint of an mf model of shape md: m->d says its kind and
 * size. */
void ckpt_meta_mf(struct ckpt_meta *m, const struct mf_desc *md);

/*
 * Incremental, prioritized checkpoints (--checkpoint-budget; Qiao et al.,
 * ICML'19).  Between two full checkpoints the coordinator appends to
 * PATH.delta records of the parameters that changed most since the files
 * last recorded them, within a byte budget each.  A record (all numbers
 * little-endian):
 *
 *   "PXCKDLT1" | SHA-256 of its full checkpoint (32) | clock (i64) |
 *   samples (u64) | k (u32) | 0 (u32) | k indices (u32, ascending) |
 *   k values (float32) | SHA-256 of the record before it (32)
 *
 * ckpt_read applies the records whose base is the file's own SHA-256 in
 * order over the full state (its momentum stays the full one's): the
 * clock and samples become the last record's, and the parameters no
 * record named keep the values last written -- an approximation of the
 * state at that clock, the nearest the budget allows.  A record cut short
 * at the end (a crash while appending) is dropped; one damaged before the
 * end fails the read.  A full checkpoint removes PATH.delta.
 */
#define CKPT_DELTA_MAGIC "PXCKDLT1"
#define CKPT_DELTA_FIXED (8 + 32 + 8 + 8 + 4 + 4 + 32) /* all but k pairs */

/* The coordinator's side of the chain. */
struct ckpt_chain {
	uint64_t n;           /* parameters */
	float *saved;         /* the state the files give now */
	uint8_t base[32];     /* SHA-256 of the last full checkpoint */
	bool have_base;       /* one was written by this chain */
	uint32_t since_full;  /* records appended since it */
	float *mag;           /* scratch: |params - saved| */
	uint32_t *idx;        /* scratch: the chosen indices */
	float *val;           /* scratch: their values */
};

enum px_err ckpt_chain_init(struct ckpt_chain *ch, uint64_t n,
			    struct px_error *err);
void ckpt_chain_release(struct ckpt_chain *ch);

/* Go on with the chain a job resumed from: params is what ckpt_read gave
 * for it (m, of the same path), so that the next checkpoint is a record
 * of the changes since, not a full one. */
void ckpt_chain_adopt(struct ckpt_chain *ch, const struct ckpt_meta *m,
		      const float *params);

/* What a record of budget bytes holds: the number of (index, value)
 * pairs, 0 when the budget does not cover a record's fixed part. */
uint64_t ckpt_delta_capacity(uint64_t budget);

/* One checkpoint of params (m->d.n_params) to path through the chain:
 * a full one (ckpt_write, then saved = params) when full is set, when
 * the chain has no full checkpoint yet or when budget is 0; else one
 * record of the at most ckpt_delta_capacity(budget) parameters whose
 * |params - saved| is largest (none that did not change), appended to
 * path.delta and synced.  *ret_written: the parameters written (all for a
 * full one); *ret_bytes: the bytes.  m->clock and m->samples date it. */
enum px_err ckpt_chain_write(struct ckpt_chain *ch, const char *path,
			     const struct ckpt_meta *m, const float *params,
			     const float *momentum, uint64_t budget,
			     bool full, uint64_t *ret_written,
			     uint64_t *ret_bytes, struct px_error *err);

/* Write params and momentum (m->d.n_params floats each; an mf model's
 * momentum is not written, and may be NULL) to path, atomically
 * (path.tmp.XXXXXX, fsync, rename, fsync of the directory); mode 0600.
 * A state with a number that is not finite (a diverged run's) is not
 * written: PX_ESYS | ERANGE, naming the first. */
enum px_err ckpt_write(const char *path, const struct ckpt_meta *m,
		       const float *params, const float *momentum,
		       struct px_error *err);

/* Whether ckpt_write could write path: it is not a directory and a
 * fresh path.tmp.XXXXXX can be created beside it (it is, then removed).
 * Programs call this before training, so that a checkpoint that could
 * never be written fails the run at its start, naming the path. */
enum px_err ckpt_check_writable(const char *path, struct px_error *err);

/* Read and verify a checkpoint: header fields, exact size, SHA-256, every
 * number finite (else PX_EINVAL, naming the first).  On
 * success *ret_params and *ret_momentum are malloc'd (freed by the
 * caller; an mf model's momentum is zeros).  Errors name the file and the field or byte. */
enum px_err ckpt_read(const char *path, struct ckpt_meta *m,
		      float **ret_params, float **ret_momentum,
		      struct px_error *err);

/* Whether a checkpoint fits a job: same model and shape.  Errors name the
 * file and the first field that differs, with both values. */
enum px_err ckpt_check_job(const char *path, const struct ckpt_meta *have,
			   const struct ckpt_meta *want,
			   struct px_error *err);

#endif
