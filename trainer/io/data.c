/* data.c -- Fashion-MNIST loading, partitioning, shuffling and batch
 * gathering (the IDX reader and the other formats are dataset.c's).
 */
#include "data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "../compute/kern.h"

enum px_err data_load(const char *images_path, const char *labels_path,
		      uint32_t n_classes, uint32_t max_n,
		      struct data_set *ret, struct px_error *err)
{
	uint8_t *pix = NULL, *lab = NULL;
	uint32_t n_img, dim, n_lab, one;
	enum px_err r;

	r = data_idx_read(images_path, 3, max_n, &pix, &n_img, &dim, err);
	if (r != PX_OK)
		return r;
	r = data_idx_read(labels_path, 1, max_n, &lab, &n_lab, &one, err);
	if (r != PX_OK)
		goto out_free_pix;
	if (n_lab != n_img) {
		r = px_errorf(err, PX_EINVAL, "file '%s': %u labels for %u "
			      "images in '%s'", labels_path, n_lab, n_img,
			      images_path);
		goto out_free_lab;
	}
	for (uint32_t i = 0; i < n_lab; i++)
		if (lab[i] >= n_classes) {
			r = px_errorf(err, PX_EINVAL, "file '%s': label %u of "
				      "item %u is not below %u", labels_path,
				      lab[i], i, n_classes);
			goto out_free_lab;
		}
	/* kept as bytes: data_gather makes the floats of a batch */
	ret->n = n_img;
	ret->dim = dim;
	ret->n_classes = n_classes;
	ret->x = NULL;
	ret->xb = pix;
	ret->y = lab;
	return PX_OK;

out_free_lab:
	free(lab);
out_free_pix:
	free(pix);
	return r;
}

static char *path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + 1 + strlen(name) + 1;
	char *p = px_calloc(n, 1);

	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* Fashion-MNIST's split from dir: loaded whole, or with window in a
 * window of budget bytes (data_window_open_idx). */
static enum px_err fashion_mnist(const char *dir, bool train, uint32_t max_n,
				 bool window, uint64_t budget,
				 struct data_set *ret, struct px_error *err)
{
	const char *pre = train ? "train" : "t10k";
	char img_name[64], lab_name[64];
	char *img, *lab;
	enum px_err r;

	if (!dir)
		dir = DATA_FASHION_MNIST_DIR;
	snprintf(img_name, sizeof(img_name), "%s-images-idx3-ubyte.gz", pre);
	snprintf(lab_name, sizeof(lab_name), "%s-labels-idx1-ubyte.gz", pre);
	img = path_join(dir, img_name);
	lab = path_join(dir, lab_name);
	if (!img || !lab) {
		r = px_errorf(err, PX_ENOMEM, "cannot allocate a path");
		goto out_free;
	}
	if (window)
		r = data_window_open_idx(img, lab, DATA_FASHION_MNIST_CLASSES,
					 max_n, budget, ret, err);
	else
		r = data_load(img, lab, DATA_FASHION_MNIST_CLASSES, max_n, ret,
			      err);
	if (r == PX_ENOENT && err) {
		size_t used = strnlen(err->msg, sizeof(err->msg));

		snprintf(err->msg + used, sizeof(err->msg) - used,
			 " (install Debian's dataset-fashion-mnist)");
	}
out_free:
	free(img);
	free(lab);
	return r;
}

enum px_err data_load_fashion_mnist(const char *dir, bool train,
				    uint32_t max_n, struct data_set *ret,
				    struct px_error *err)
{
	return fashion_mnist(dir, train, max_n, false, 0, ret, err);
}

enum px_err data_window_fashion_mnist(const char *dir, uint32_t max_n,
				      uint64_t budget, struct data_set *ret,
				      struct px_error *err)
{
	return fashion_mnist(dir, true, max_n, true, budget, ret, err);
}

enum px_err data_partition(uint32_t n, uint32_t n_parts, uint32_t part,
			   uint32_t *ret_lo, uint32_t *ret_hi,
			   struct px_error *err)
{
	uint64_t lo, hi;

	if (n_parts == 0 || part >= n_parts)
		return px_errorf(err, PX_EINVAL, "bad partition %u of %u",
				 part, n_parts);
	/* floor(n * p / parts): sizes differ by at most one. */
	lo = (uint64_t)n * part / n_parts;
	hi = (uint64_t)n * (part + 1) / n_parts;
	*ret_lo = (uint32_t)lo;
	*ret_hi = (uint32_t)hi;
	return PX_OK;
}

void data_shuffle(uint32_t *idx, uint32_t n, uint32_t lo, uint64_t seed)
{
	struct kern_rng rng;

	kern_rng_seed(&rng, seed);
	for (uint32_t i = 0; i < n; i++)
		idx[i] = lo + i;
	for (uint32_t i = n; i > 1; i--) {
		uint32_t j = (uint32_t)kern_rng_below(&rng, i);
		uint32_t t = idx[i - 1];

		idx[i - 1] = idx[j];
		idx[j] = t;
	}
}

const char *data_csr_refused(const struct data_set *d)
{
	if (d->win ? d->win->fmt != DATA_FMT_LIBSVM : !d->rp)
		return "the training set is not sparse (only LIBSVM rows are "
		       "kept sparse)";
	if (d->prep && d->prep->mean)
		return "standard scaling makes every feature non-zero (use "
		       "--scale none)";
	return NULL;
}

double data_density(const struct data_set *d)
{
	if (d->win && d->win->fmt == DATA_FMT_LIBSVM && d->n && d->dim)
		return (double)d->win->ix.nnz / ((double)d->n * d->dim);
	if (!d->rp || !d->n || !d->dim)
		return 1.0;
	return (double)d->rp[d->n] / ((double)d->n * d->dim);
}

/* data_gather_csr after the `first` rows b holds already (y is the new
 * rows' classes). */
static enum px_err gather_csr_at(const struct data_set *d,
				 const uint32_t *idx, uint32_t n,
				 uint32_t first, struct data_csr *b,
				 uint8_t *y, struct px_error *err)
{
	uint64_t at = first ? b->rp[first] : 0, nnz = at;

	for (uint32_t i = 0; i < n; i++)
		nnz += d->rp[idx[i] + 1] - d->rp[idx[i]];
	if (first + n > b->cap_n) {
		uint64_t *p = px_reallocarray(b->rp, (size_t)first + n + 1,
					      sizeof(*p));

		if (!p)
			return px_errorf(err, PX_ENOMEM, "sparse batch");
		b->rp = p;
		b->cap_n = first + n;
	}
	if (nnz > b->cap_v || !b->ci) {
		uint64_t c = nnz > 1024 ? nnz + nnz / 2 : 1024;
		uint32_t *ci = px_reallocarray(b->ci, c, sizeof(*ci));
		float *cv;

		if (ci)
			b->ci = ci;
		cv = ci ? px_reallocarray(b->cv, c, sizeof(*cv)) : NULL;
		if (!cv)
			return px_errorf(err, PX_ENOMEM, "sparse batch of %llu "
					 "values", (unsigned long long)nnz);
		b->cv = cv;
		b->cap_v = c;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t lo = d->rp[idx[i]], k = d->rp[idx[i] + 1] - lo;

		b->rp[first + i] = at;
		memcpy(b->ci + at, d->ci + lo, k * sizeof(*b->ci));
		memcpy(b->cv + at, d->cv + lo, k * sizeof(*b->cv));
		at += k;
		y[i] = d->y[idx[i]];
	}
	b->rp[first + n] = at;
	b->csr = (struct kern_csr){ .n = first + n, .rp = b->rp, .ci = b->ci,
				    .cv = b->cv };
	return PX_OK;
}

enum px_err data_gather_csr(const struct data_set *d, const uint32_t *idx,
			    uint32_t n, struct data_csr *b, uint8_t *y,
			    struct px_error *err)
{
	return gather_csr_at(d, idx, n, 0, b, y, err);
}

enum px_err data_batch_gather(const struct data_set *d, const uint32_t *idx,
			      uint32_t n, float *x, struct data_csr *xs,
			      uint8_t *y, struct px_error *err)
{
	struct data_window *w = d->win;
	enum px_err e = PX_OK;

	if (!w) {
		if (xs)
			return data_gather_csr(d, idx, n, xs, y, err);
		data_gather(d, idx, n, x, y);
		return PX_OK;
	}
	if (n > w->cap_lidx) {
		uint32_t *p = px_reallocarray(w->lidx, n, sizeof(*p));

		if (!p)
			return px_errorf(err, PX_ENOMEM, "batch rows");
		w->lidx = p;
		w->cap_lidx = n;
	}
	/* runs of rows in the chunk held: a batch spans two at most */
	for (uint32_t i = 0, m; e == PX_OK && i < n; i += m) {
		e = data_window_hold(w, idx[i], err);
		for (m = 0; e == PX_OK && i + m < n &&
			    idx[i + m] >= w->held_lo &&
			    idx[i + m] - w->held_lo < w->held.n; m++)
			w->lidx[m] = idx[i + m] - w->held_lo;
		if (e != PX_OK)
			break;
		if (xs)
			e = gather_csr_at(&w->held, w->lidx, m, i, xs, y + i,
					  err);
		else
			data_gather(&w->held, w->lidx, m,
				    x + (size_t)i * d->dim, y + i);
	}
	return e;
}

void data_shuffle_chunked(uint32_t *idx, uint32_t n, uint32_t lo,
			  uint32_t chunk, uint64_t seed)
{
	uint32_t nc, *order, at = 0;
	struct kern_rng rng;

	if (!chunk || chunk >= n) {
		data_shuffle(idx, n, lo, seed);
		return;
	}
	nc = (n + chunk - 1) / chunk;
	/* the chunks in a shuffled order, then each one's rows */
	order = px_calloc(nc, sizeof(*order));
	kern_rng_seed(&rng, seed);
	if (!order) { /* no room: the chunks in order, rows shuffled */
		for (uint32_t c = 0; c < nc; c++) {
			uint32_t m = n - c * chunk < chunk ? n - c * chunk
							    : chunk;

			data_shuffle(idx + c * chunk, m, lo + c * chunk,
				     kern_rng_u64(&rng));
		}
		return;
	}
	data_shuffle(order, nc, 0, kern_rng_u64(&rng));
	for (uint32_t k = 0; k < nc; k++) {
		uint32_t c = order[k], m = n - c * chunk < chunk
						   ? n - c * chunk : chunk;

		data_shuffle(idx + at, m, lo + c * chunk, kern_rng_u64(&rng));
		at += m;
	}
	free(order);
}

void data_csr_free(struct data_csr *b)
{
	free(b->rp);
	free(b->ci);
	free(b->cv);
	memset(b, 0, sizeof(*b));
}

void data_gather(const struct data_set *d, const uint32_t *idx, uint32_t n,
		 float *x, uint8_t *y)
{
	const struct data_prep *p = d->prep;

	for (uint32_t i = 0; i < n; i++) {
		float *to = x + (size_t)i * d->dim;
		uint32_t r = idx[i];

		if (d->xb) {
			const uint8_t *b = d->xb + (size_t)r * d->dim;

			for (uint32_t j = 0; j < d->dim; j++)
				to[j] = (float)b[j] * (1.0f / 255.0f);
		} else if (d->rp) {
			memset(to, 0, d->dim * sizeof(*x));
			for (uint64_t k = d->rp[r]; k < d->rp[r + 1]; k++)
				to[d->ci[k]] = d->cv[k];
		} else {
			memcpy(to, d->x + (size_t)r * d->dim,
			       d->dim * sizeof(*x));
		}
		/* standardized: a sparse row's zeros become -mean / std */
		if (p && p->mean)
			for (uint32_t j = 0; j < d->dim; j++)
				to[j] = (to[j] - p->mean[j]) / p->std[j];
		y[i] = d->y[r];
	}
}
