/* data.h -- training data: the IDX reader (Fashion-MNIST), partitioning
 * across workers, shuffling and batch gathering.  Host memory only.
 */
#ifndef PX_DATA_H
#define PX_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/px.h"
#include "../compute/kern.h"

/* Where Debian's dataset-fashion-mnist installs the files. */
#define DATA_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#define DATA_FASHION_MNIST_DIM 784     /* 28 x 28 pixels */
#define DATA_FASHION_MNIST_CLASSES 10

/* Bounds on what an IDX header may claim. */
#define DATA_IDX_MAX_ITEMS 10000000u  /* images or labels per file */
#define DATA_IDX_MAX_DIM 4096u        /* rows, columns */
#define DATA_IDX_MAX_BYTES (UINT64_C(1) << 32) /* payload, 4 GiB */

struct data_prep;
struct data_window;
struct data_csr;

/* A labelled data set: n examples of dim features each, held in one of
 * three ways: x (dense floats), xb (pixel bytes) or rp/ci/cv (sparse
 * rows).  data_gather makes the floats of a batch from any of them. */
struct data_set {
	uint32_t n;         /* examples */
	uint32_t dim;       /* features per example (rows * cols) */
	uint32_t n_classes; /* labels are < n_classes */
	float *x;           /* [n, dim] features, or NULL when xb holds them */
	uint8_t *xb;        /* [n, dim] pixel bytes (data_load): feature =
			       byte / 255, made by data_gather; 4x less
			       memory than floats (47 MB, not 188, for
			       Fashion-MNIST's training set) */
	uint8_t *y;         /* [n] classes */
	uint64_t *rp;       /* [n + 1] a sparse set's rows: row i's
			       non-zeros are rp[i] .. rp[i + 1] - 1 */
	uint32_t *ci;       /* their features, 0-based */
	float *cv;          /* their values */
	const struct data_prep *prep; /* the labels and scaling the
			       training set fixed (dataset.h), borrowed;
			       NULL: Fashion-MNIST's (none) */
	struct data_window *win; /* rows read from the file in parts
			       (dataset.h): the arrays above are NULL, the
			       window holds some of the n rows; NULL: all
			       held above */
};

/* (dataset.c) Read an IDX file of unsigned bytes (magic 0x0000080N, N = ndims), plain
 * or gzip-compressed (read through zlib).  expect_ndims must match; at
 * most max_items (0: all) items of the first dimension are read.  The
 * header is checked against the DATA_IDX_MAX_* bounds before anything is
 * allocated; a missing, short or corrupt file is an error naming it.
 * On success *ret_data (free() it) holds items * item_bytes bytes,
 * *ret_items the items read and *ret_item_bytes the product of the other
 * dimensions (1 for labels). */
enum px_err data_idx_read(const char *path, uint32_t expect_ndims,
			  uint32_t max_items, uint8_t **ret_data,
			  uint32_t *ret_items, uint32_t *ret_item_bytes,
			  struct px_error *err);

/* Load an images file (3 dims) and its labels file (1 dim): counts must
 * agree and every label must be < n_classes.  Reads at most max_n
 * examples (0: all).  Release with data_release. */
enum px_err data_load(const char *images_path, const char *labels_path,
		      uint32_t n_classes, uint32_t max_n,
		      struct data_set *ret, struct px_error *err);

/* Load Fashion-MNIST's train (60,000) or test (10,000) split from dir
 * (NULL: DATA_FASHION_MNIST_DIR).  PX_ENOENT, naming the file and the
 * Debian package, when it is not installed. */
enum px_err data_load_fashion_mnist(const char *dir, bool train,
				    uint32_t max_n, struct data_set *ret,
				    struct px_error *err);

/* Fashion-MNIST's training split read in parts (a worker's partition,
 * docs/trainer.md "Who reads what"): data_window_open_idx over its files
 * in dir (NULL: DATA_FASHION_MNIST_DIR), budget bytes of rows held at
 * once (0: no bound); the same rows, classes and errors as
 * data_load_fashion_mnist. */
enum px_err data_window_fashion_mnist(const char *dir, uint32_t max_n,
				      uint64_t budget, struct data_set *ret,
				      struct px_error *err);

/* (dataset.c) Free what a loader filled; safe on a zeroed or released
 * set.  The prep is not the set's. */
void data_release(struct data_set *d);

/* Worker `part` of n_parts gets examples [*ret_lo, *ret_hi): contiguous,
 * sizes differ by at most one, the union is [0, n).  PX_EINVAL when
 * n_parts is 0 or part >= n_parts. */
enum px_err data_partition(uint32_t n, uint32_t n_parts, uint32_t part,
			   uint32_t *ret_lo, uint32_t *ret_hi,
			   struct px_error *err);

/* Fill idx[0..n) with lo, lo+1, ... and shuffle it (Fisher-Yates) with
 * the seeded PRNG: the same seed gives the same order. */
void data_shuffle(uint32_t *idx, uint32_t n, uint32_t lo, uint64_t seed);

/* Copy examples idx[0..n) into x[n, dim] (as floats: pixel bytes become
 * byte * (1 / 255.0f), a sparse row's missing features 0) and y[n]; with
 * a prep that scales, each feature becomes (x - mean) / std. */
void data_gather(const struct data_set *d, const uint32_t *idx, uint32_t n,
		 float *x, uint8_t *y);

/* Examples idx[0..n) of d into x[n, dim] (data_gather) or, with xs
 * non-NULL, into xs (data_gather_csr), and y[n]; the rows of a windowed
 * set (d->win) are read from its file as needed. */
enum px_err data_batch_gather(const struct data_set *d, const uint32_t *idx,
			      uint32_t n, float *x, struct data_csr *xs,
			      uint8_t *y, struct px_error *err);

/* data_shuffle over the chunks of a window: the chunks [lo + c * chunk,
 * ...) in a shuffled order, each one's rows shuffled, so that a pass
 * reads each chunk once.  chunk 0 or >= n: data_shuffle itself. */
void data_shuffle_chunked(uint32_t *idx, uint32_t n, uint32_t lo,
			  uint32_t chunk, uint64_t seed);

/* A sparse batch's rows (data_gather_csr): csr points into the arrays,
 * which grow to the largest batch's non-zeros.  Zero it before the first
 * use; release with data_csr_free. */
struct data_csr {
	struct kern_csr csr;
	uint64_t *rp;       /* [cap_n + 1] */
	uint32_t *ci;       /* [cap_v] */
	float *cv;          /* [cap_v] */
	uint32_t cap_n;
	uint64_t cap_v;
};

/* Whether a batch of d can be sparse rows: d holds its rows sparse
 * (LIBSVM) and is not standardized (centering makes every feature
 * non-zero).  NULL, or why not. */
const char *data_csr_refused(const struct data_set *d);

/* Copy examples idx[0..n) of d (data_csr_refused(d) NULL) into b's rows
 * and their classes into y[n]. */
enum px_err data_gather_csr(const struct data_set *d, const uint32_t *idx,
			    uint32_t n, struct data_csr *b, uint8_t *y,
			    struct px_error *err);
void data_csr_free(struct data_csr *b);

/* The share of d's features that are non-zero: stored values / (n *
 * dim); 1 for a dense set. */
double data_density(const struct data_set *d);

#endif
