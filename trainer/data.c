/* data.c -- IDX reader over zlib, Fashion-MNIST loading, partitioning,
 * shuffling and batch gathering.
 */
#include "data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "kern.h"

#define IDX_MAX_DIMS 4
#define IDX_TYPE_UBYTE 0x08
#define READ_CHUNK (1u << 30)

/* Read exactly len bytes or report why not (gzip error or truncation). */
static enum px_err read_full(gzFile f, const char *path, void *buf,
			     uint64_t len, const char *what,
			     struct px_error *err)
{
	uint8_t *p = buf;
	uint64_t done = 0;

	while (done < len) {
		uint64_t want = len - done;
		int got, zerr;

		if (want > READ_CHUNK)
			want = READ_CHUNK;
		got = gzread(f, p + done, (unsigned)want);
		if (got < 0) {
			const char *m = gzerror(f, &zerr);

			return px_errorf(err, PX_EIO,
					 "file '%s': reading %s: %s", path,
					 what, m ? m : "gzip error");
		}
		if (got == 0)
			return px_errorf(err, PX_EINVAL,
					 "file '%s': truncated: %s needs %llu "
					 "bytes, got %llu", path, what,
					 (unsigned long long)len,
					 (unsigned long long)done);
		done += (uint64_t)got;
	}
	return PX_OK;
}

static uint32_t be32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	       (uint32_t)b[2] << 8 | (uint32_t)b[3];
}

enum px_err data_idx_read(const char *path, uint32_t expect_ndims,
			  uint32_t max_items, uint8_t **ret_data,
			  uint32_t *ret_items, uint32_t *ret_item_bytes,
			  struct px_error *err)
{
	uint8_t hdr[4 * (1 + IDX_MAX_DIMS)], *data = NULL;
	uint32_t magic, ndims, items, item_bytes = 1;
	uint64_t bytes;
	enum px_err r;
	gzFile f;

	if (expect_ndims < 1 || expect_ndims > IDX_MAX_DIMS)
		return px_errorf(err, PX_EINVAL,
				 "file '%s': bad expected dimension count %u",
				 path, expect_ndims);
	errno = 0;
	f = gzopen(path, "rb");
	if (!f) {
		int e = errno ? errno : ENOMEM;

		return px_errorf(err, e == ENOENT ? PX_ENOENT : PX_ESYS | e,
				 "cannot open '%s': %s", path, strerror(e));
	}
	r = read_full(f, path, hdr, 4, "the magic number", err);
	if (r != PX_OK)
		goto out_close;
	magic = be32(hdr);
	ndims = magic & 0xff;
	if ((magic >> 16) != 0 || ((magic >> 8) & 0xff) != IDX_TYPE_UBYTE ||
	    ndims != expect_ndims) {
		r = px_errorf(err, PX_EINVAL,
			      "file '%s': bad magic 0x%08x (want 0x%08x: "
			      "unsigned bytes, %u dimensions)", path, magic,
			      (unsigned)(IDX_TYPE_UBYTE << 8 | expect_ndims),
			      expect_ndims);
		goto out_close;
	}
	r = read_full(f, path, hdr + 4, 4 * (uint64_t)ndims, "the dimensions",
		      err);
	if (r != PX_OK)
		goto out_close;
	items = be32(hdr + 4);
	if (items == 0 || items > DATA_IDX_MAX_ITEMS) {
		r = px_errorf(err, PX_ETOOBIG,
			      "file '%s': item count %u out of range 1..%u",
			      path, items, DATA_IDX_MAX_ITEMS);
		goto out_close;
	}
	for (uint32_t i = 1; i < ndims; i++) {
		uint32_t d = be32(hdr + 4 + 4 * i);

		if (d == 0 || d > DATA_IDX_MAX_DIM) {
			r = px_errorf(err, PX_ETOOBIG,
				      "file '%s': dimension %u is %u, out of "
				      "range 1..%u", path, i, d,
				      DATA_IDX_MAX_DIM);
			goto out_close;
		}
		/* At most 3 dims of <= 4096 after the first: <= 2^36. */
		if ((uint64_t)item_bytes * d > UINT32_MAX) {
			r = px_errorf(err, PX_ETOOBIG,
				      "file '%s': items of more than %u bytes",
				      path, UINT32_MAX);
			goto out_close;
		}
		item_bytes *= d;
	}
	bytes = (uint64_t)items * item_bytes;
	if (bytes > DATA_IDX_MAX_BYTES) {
		r = px_errorf(err, PX_ETOOBIG,
			      "file '%s': %llu bytes of data, over the %llu "
			      "byte bound", path, (unsigned long long)bytes,
			      (unsigned long long)DATA_IDX_MAX_BYTES);
		goto out_close;
	}
	if (max_items && max_items < items)
		items = max_items;
	bytes = (uint64_t)items * item_bytes;
	data = px_calloc(bytes, 1);
	if (!data) {
		r = px_errorf(err, PX_ENOMEM, "file '%s': cannot allocate %llu "
			      "bytes", path, (unsigned long long)bytes);
		goto out_close;
	}
	r = read_full(f, path, data, bytes, "the data", err);
	if (r != PX_OK)
		goto out_free_data;
	gzclose(f);
	*ret_data = data;
	*ret_items = items;
	*ret_item_bytes = item_bytes;
	return PX_OK;

out_free_data:
	free(data);
out_close:
	gzclose(f);
	return r;
}

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

enum px_err data_load_fashion_mnist(const char *dir, bool train,
				    uint32_t max_n, struct data_set *ret,
				    struct px_error *err)
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
	r = data_load(img, lab, 10, max_n, ret, err);
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

void data_release(struct data_set *d)
{
	if (!d)
		return;
	free(d->x);
	free(d->xb);
	free(d->y);
	memset(d, 0, sizeof(*d));
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

void data_gather(const struct data_set *d, const uint32_t *idx, uint32_t n,
		 float *x, uint8_t *y)
{
	for (uint32_t i = 0; i < n; i++) {
		float *to = x + (size_t)i * d->dim;

		if (d->xb) {
			const uint8_t *b = d->xb + (size_t)idx[i] * d->dim;

			for (uint32_t j = 0; j < d->dim; j++)
				to[j] = (float)b[j] * (1.0f / 255.0f);
		} else {
			memcpy(to, d->x + (size_t)idx[i] * d->dim,
			       d->dim * sizeof(*x));
		}
		y[i] = d->y[idx[i]];
	}
}
