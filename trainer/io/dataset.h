/* dataset.h -- a user's own data sets (docs/trainer.md, "Your own data"):
 * LIBSVM, CSV and IDX files, plain or gzip (zlib), read row by row with
 * every error naming file:line and the field; the label map, width and
 * feature scaling the training set fixes (struct data_prep), which the
 * model keeps (ckpt.h); the test set held to them.
 *
 * No BLAS and nothing of data.c: proteusd links this file to check a
 * job's data at submit (data_check), and must not load OpenBLAS.
 */
#ifndef PX_DATASET_H
#define PX_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/px.h"
#include "data.h"

/* Bounds on what a file may hold (docs/trainer.md, "Bounds"). */
#define DATA_LINE_MAX (1u << 20)       /* bytes in a line of text */
#define DATA_MAX_FEATURES (1u << 20)   /* width (MODEL_MAX_IN): a LIBSVM
					  set's; a CSV row is bounded by its
					  line too */
#define DATA_MAX_EXAMPLES 10000000u    /* rows of a file */
#define DATA_MAX_VALUES (UINT64_C(1) << 30) /* values kept: non-zeros of
						a LIBSVM set, cells of a CSV
						one (4 GiB of floats) */
#define DATA_MAX_CLASSES 256u          /* distinct labels (bytes) */
#define DATA_CHECK_BYTES (UINT64_C(64) << 20) /* data_check: text read
						    per file, at most */

enum data_format {
	DATA_FMT_AUTO,   /* from the file's name (data_format_of) */
	DATA_FMT_LIBSVM, /* label index:value ..., 1-based increasing */
	DATA_FMT_CSV,    /* label and dense features, comma-separated */
	DATA_FMT_IDX,    /* an images file (3 dims) and its labels file */
};

enum data_scale {
	DATA_SCALE_NONE,
	DATA_SCALE_STANDARD, /* (x - mean) / std, the training set's */
};

/* The data a run names.  train NULL: Fashion-MNIST (data.h). */
struct data_spec {
	const char *train;          /* file */
	const char *test;           /* file; needed with train */
	enum data_format format;    /* AUTO: each file's from its name */
	enum data_scale scale;
	uint32_t label_col;         /* CSV: the label's column, 1-based;
				       0: the first */
};

/* What the training set fixes and the model keeps.  n_classes 0: none
 * (Fashion-MNIST: labels are the classes, no scaling). */
struct data_prep {
	uint32_t dim;                      /* features */
	uint32_t n_classes;                /* 2..DATA_MAX_CLASSES */
	int32_t labels[DATA_MAX_CLASSES];  /* class k is label labels[k]:
					      the training set's distinct
					      labels, ascending */
	float *mean;                       /* [dim], or NULL: not scaled */
	float *std;                        /* [dim]; a constant feature's
					      is 1 */
};

/* "libsvm", "csv", "idx" (and "auto"); PX_EINVAL naming s otherwise. */
enum px_err data_format_parse(const char *s, enum data_format *ret,
			      struct px_error *err);
const char *data_format_name(enum data_format f);
/* "none" or "standard". */
enum px_err data_scale_parse(const char *s, enum data_scale *ret,
			     struct px_error *err);
const char *data_scale_name(enum data_scale s);

/* The format a file's name says, less a ".gz": .svm, .libsvm -> LIBSVM;
 * .csv -> CSV; a name with "idx3-ubyte" -> IDX.  PX_EINVAL naming the
 * file when none. */
enum px_err data_format_of(const char *path, enum data_format *ret,
			   struct px_error *err);

/* IDX: the labels file of an images file, named by replacing the last
 * "images" with "labels" and "idx3" after it with "idx1"
 * (train-images-idx3-ubyte.gz -> train-labels-idx1-ubyte.gz).  PX_EINVAL
 * when the name has no "images". */
enum px_err data_idx_labels_path(const char *images, char *buf, size_t len,
				 struct px_error *err);

/* Load the training set (at most max_n rows, 0: all) and the prep it
 * fixes: width (LIBSVM: the largest index; CSV: the columns less the
 * label's; IDX: rows * cols), the sorted distinct labels, and with
 * spec->scale the mean and standard deviation of each feature.  Release
 * with data_release and data_prep_release; ret->prep points at prep. */
enum px_err data_load_train(const struct data_spec *spec, uint32_t max_n,
			    struct data_set *ret, struct data_prep *prep,
			    struct px_error *err);

/* The same prep without keeping the rows (the coordinator, a PS): the
 * training set's row count in *ret_n. */
enum px_err data_scan_train(const struct data_spec *spec, uint32_t max_n,
			    uint32_t *ret_n, struct data_prep *prep,
			    struct px_error *err);

/* Load the test set held to prep: a label that is not one of prep's, an
 * index past its width, a CSV row of another width is an error naming
 * file:line.  ret->prep points at prep. */
enum px_err data_load_test(const struct data_spec *spec,
			   const struct data_prep *prep, uint32_t max_n,
			   struct data_set *ret, struct px_error *err);

/* ---- reading a training set in parts (docs/trainer.md, "Who reads
 * what") ---- */

#define DATA_INDEX_EVERY 1024u /* rows between two checkpoints */

/* Where row k * every begins: byte offset in the (uncompressed) text,
 * the line before it, the values of the rows before it. */
struct data_checkpoint {
	uint64_t off, line, nnz;
};

struct data_index {
	uint32_t every;
	uint32_t n_cp, cap_cp;
	struct data_checkpoint *cp;
	uint64_t nnz;                  /* values of the whole set */
};

/* A training set read in parts: the rows [lo, hi) it serves (a
 * worker's partition), held `chunk` rows at a time (all of them when the
 * budget allows), read again from the file when a row of another chunk
 * is asked for (data_batch_gather, data.h). */
struct data_window {
	struct data_spec spec;         /* a copy; its strings borrowed (but
					  own_train's) */
	enum data_format fmt;          /* LIBSVM, CSV or IDX */
	const struct data_prep *prep;  /* borrowed, or &own */
	char *own_train;               /* IDX by classes: spec.train, owned */
	char *lpath;                   /* IDX by classes: its labels file */
	uint32_t below;                /* IDX by classes: their count */
	struct data_prep own;          /* IDX by classes: labels 0..below-1,
					  not scaled */
	struct data_index ix;
	uint64_t budget;               /* bytes of rows held; 0: no bound */
	uint32_t lo, hi, chunk;
	struct data_set held;          /* rows [held_lo, held_lo + held.n) */
	uint32_t held_lo;
	uint32_t *lidx;                /* [cap_lidx] scratch: rows in held */
	uint32_t cap_lidx;
	uint32_t max_held;             /* most rows held at once */
	uint64_t reads, rows_read;     /* chunk reads and their rows */
	void (*tick)(void *arg);       /* called while reading (a worker's
					  heartbeat); NULL: none */
	void *tick_arg;
};

/* Whether spec's training file can be read in parts (LIBSVM, CSV, IDX:
 * a file of the user's; Fashion-MNIST: data_window_open_idx). */
bool data_window_able(const struct data_spec *spec);

/* The validation pass over the training file (every error data_load_train
 * gives, at most max_n rows, nothing kept but a checkpoint every
 * DATA_INDEX_EVERY rows) and the prep it fixes; *ret is the set of
 * ret->n rows, held by a window (ret->win) serving all of them, with no
 * row read yet.  budget: bytes of rows a window may hold (0: no bound).
 * Release with data_release (the window too) and data_prep_release. */
enum px_err data_window_open(const struct data_spec *spec, uint32_t max_n,
			     uint64_t budget, struct data_set *ret,
			     struct data_prep *prep, struct px_error *err);

/* data_window_open for an IDX pair whose labels are the classes
 * (Fashion-MNIST, data_load's): every label below n_classes, else an
 * error naming the labels file and the item.  ret->prep is NULL (no
 * label map, no scaling), ret->n_classes n_classes. */
enum px_err data_window_open_idx(const char *images, const char *labels,
				 uint32_t n_classes, uint32_t max_n,
				 uint64_t budget, struct data_set *ret,
				 struct px_error *err);

/* Serve rows [lo, hi) (lo < hi <= d->n) from now on, min_chunk rows at
 * least at a time (a batch: a batch spans two chunks at most): the rows
 * held are dropped when the range changes. */
void data_window_range(const struct data_set *d, uint32_t lo, uint32_t hi,
		       uint32_t min_chunk);

/* Make row r of d's window (in [lo, hi)) held, reading its chunk. */
enum px_err data_window_hold(struct data_window *w, uint32_t r,
			     struct px_error *err);

/* The bytes a row of the window's set takes held (its estimate). */
double data_window_row_bytes(const struct data_window *w, uint32_t dim,
			     uint32_t n);

/* proteusd's check at submit: parse at most DATA_CHECK_BYTES of each
 * text file (IDX: both headers and the labels), with every check the
 * loaders make; the test set is held to the training set's labels and
 * width when the training file was read whole.  *ret_whole says so. */
enum px_err data_check(const struct data_spec *spec, bool *ret_whole,
		       struct px_error *err);

/* A value as the loaders read one: a finite number that a float holds.
 * NULL, or what is wrong with s (the ratings of ratings.h use it too). */
const char *data_parse_float(const char *s, float *ret);

/* Whether two preps are the same (labels, width, scaling values). */
bool data_prep_equal(const struct data_prep *a, const struct data_prep *b);
/* Free the scaling arrays; zeroes prep.  Safe on a zeroed one. */
void data_prep_release(struct data_prep *prep);

#endif
