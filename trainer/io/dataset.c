/* dataset.c -- LIBSVM, CSV and IDX files read row by row over zlib, the
 * training set's label map, width and scaling, the test set held to them
 * (dataset.h), and the IDX reader Fashion-MNIST's loader uses (data.h).
 */
#include "dataset.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define IDX_MAX_DIMS 4
#define IDX_TYPE_UBYTE 0x08
#define READ_CHUNK (1u << 30)
#define GUARD_EVERY 4096 /* lines between two looks at the guard's clock */
#define IDX_PIECE (1u << 20) /* IDX bytes read at a time (and a tick) */

/* ---- names ---- */

static const char *const fmt_names[] = {
	[DATA_FMT_AUTO] = "auto", [DATA_FMT_LIBSVM] = "libsvm",
	[DATA_FMT_CSV] = "csv", [DATA_FMT_IDX] = "idx",
};

enum px_err data_format_parse(const char *s, enum data_format *ret,
			      struct px_error *err)
{
	for (size_t i = 0; i < sizeof(fmt_names) / sizeof(fmt_names[0]); i++)
		if (!strcmp(s, fmt_names[i])) {
			*ret = (enum data_format)i;
			return PX_OK;
		}
	return px_errorf(err, PX_EINVAL, "unknown data format '%s' (libsvm, "
			 "csv or idx)", s);
}

const char *data_format_name(enum data_format f)
{
	return (unsigned)f < sizeof(fmt_names) / sizeof(fmt_names[0])
		       ? fmt_names[f] : "?";
}

enum px_err data_scale_parse(const char *s, enum data_scale *ret,
			     struct px_error *err)
{
	if (!strcmp(s, "none"))
		*ret = DATA_SCALE_NONE;
	else if (!strcmp(s, "standard"))
		*ret = DATA_SCALE_STANDARD;
	else
		return px_errorf(err, PX_EINVAL, "unknown scaling '%s' (none "
				 "or standard)", s);
	return PX_OK;
}

const char *data_scale_name(enum data_scale s)
{
	return s == DATA_SCALE_STANDARD ? "standard" : "none";
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !strncmp(s + n - k, suffix, k);
}

enum px_err data_format_of(const char *path, enum data_format *ret,
			   struct px_error *err)
{
	const char *base = strrchr(path, '/');
	size_t n;

	base = base ? base + 1 : path;
	n = strlen(base);
	if (ends_with(base, n, ".gz"))
		n -= 3;
	if (ends_with(base, n, ".svm") || ends_with(base, n, ".libsvm"))
		*ret = DATA_FMT_LIBSVM;
	else if (ends_with(base, n, ".csv"))
		*ret = DATA_FMT_CSV;
	else if (memmem(base, n, "idx3-ubyte", 10))
		*ret = DATA_FMT_IDX;
	else
		return px_errorf(err, PX_EINVAL, "'%s': cannot tell its format "
				 "from its name (.svm, .libsvm, .csv, "
				 "*idx3-ubyte, each maybe .gz): name one "
				 "(--data-format)", path);
	return PX_OK;
}

enum px_err data_idx_labels_path(const char *images, char *buf, size_t len,
				 struct px_error *err)
{
	const char *base = strrchr(images, '/'), *img = NULL, *p, *idx;
	size_t head;

	base = base ? base + 1 : images;
	for (p = base; (p = strstr(p, "images")); p++)
		img = p;
	if (!img)
		return px_errorf(err, PX_EINVAL, "'%s': an IDX images file's "
				 "name has 'images' in it (its labels file is "
				 "named with 'labels' there)", images);
	head = (size_t)(img - images);
	if (head + strlen(images) + 1 > len)
		return px_errorf(err, PX_ETOOBIG, "'%s': name too long",
				 images);
	snprintf(buf, len, "%.*slabels%s", (int)head, images, img + 6);
	idx = strstr(buf + head + 6, "idx3");
	if (idx)
		((char *)idx)[3] = '1';
	return PX_OK;
}

/* ---- IDX ---- */

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

/* path through zlib, opened as px_open_input opens (a daemon's guard). */
static enum px_err gz_open(const char *path, gzFile *ret,
			   struct px_error *err)
{
	int fd = px_open_input(path, err);

	if (fd < 0)
		return err && err->code ? err->code : PX_EIO;
	*ret = gzdopen(fd, "rb");
	if (!*ret) {
		close(fd);
		return px_errorf(err, PX_ENOMEM, "file '%s': cannot start "
				 "zlib", path);
	}
	return PX_OK;
}

/* Open an IDX file and check its header: *ret_items items of
 * *ret_item_bytes bytes each follow. */
static enum px_err idx_open(const char *path, uint32_t expect_ndims,
			    gzFile *ret, uint32_t *ret_items,
			    uint32_t *ret_item_bytes, struct px_error *err)
{
	uint8_t hdr[4 * (1 + IDX_MAX_DIMS)];
	uint32_t magic, ndims, items, item_bytes = 1;
	uint64_t bytes;
	enum px_err r;
	gzFile f;

	if (expect_ndims < 1 || expect_ndims > IDX_MAX_DIMS)
		return px_errorf(err, PX_EINVAL,
				 "file '%s': bad expected dimension count %u",
				 path, expect_ndims);
	r = gz_open(path, &f, err);
	if (r != PX_OK)
		return r;
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
	*ret = f;
	*ret_items = items;
	*ret_item_bytes = item_bytes;
	return PX_OK;

out_close:
	gzclose(f);
	return r;
}

enum px_err data_idx_read(const char *path, uint32_t expect_ndims,
			  uint32_t max_items, uint8_t **ret_data,
			  uint32_t *ret_items, uint32_t *ret_item_bytes,
			  struct px_error *err)
{
	uint32_t items, item_bytes;
	uint8_t *data;
	uint64_t bytes;
	enum px_err r;
	gzFile f;

	r = idx_open(path, expect_ndims, &f, &items, &item_bytes, err);
	if (r != PX_OK)
		return r;
	if (max_items && max_items < items)
		items = max_items;
	bytes = (uint64_t)items * item_bytes;
	data = px_calloc(bytes, 1);
	if (!data) {
		gzclose(f);
		return px_errorf(err, PX_ENOMEM, "file '%s': cannot allocate "
				 "%llu bytes", path, (unsigned long long)bytes);
	}
	r = read_full(f, path, data, bytes, "the data", err);
	gzclose(f);
	if (r != PX_OK) {
		free(data);
		return r;
	}
	*ret_data = data;
	*ret_items = items;
	*ret_item_bytes = item_bytes;
	return PX_OK;
}

/* ---- what a file's rows add up to ---- */

/* A read in progress: the file, what it is held to, what it keeps. */
struct acc {
	const char *path;
	const struct data_prep *known; /* the test set's training prep;
					  NULL: this is the training set */
	bool keep;                     /* keep the rows (else count) */
	bool stats;                    /* sum the features (scaling) */
	uint32_t max_n;                /* 0: all */
	uint32_t label_col;            /* CSV, 1-based */
	uint32_t below;                /* IDX: each label is below it (the
					  labels are the classes: Fashion-
					  MNIST); 0: any label */
	const char *lpath;             /* IDX: the labels file; NULL: named
					  from path's */
	uint32_t start;                /* IDX: the first item read */
	/* the training set's */
	uint32_t dim;                  /* width so far */
	uint32_t n_labels;
	int32_t labels[DATA_MAX_CLASSES];   /* ascending */
	double *sum, *sumsq;           /* [DATA_MAX_FEATURES] with stats */
	/* the rows */
	uint32_t n, cap_n;
	int32_t *lab;                  /* [cap_n] labels as read */
	uint64_t nv, cap_v;            /* values kept */
	uint64_t *rp;                  /* LIBSVM: [cap_n + 1] */
	uint32_t *ci;                  /* LIBSVM: [cap_v] */
	float *cv;                     /* LIBSVM: [cap_v]; CSV: [n, dim] */
	uint8_t *xb;                   /* IDX: [n, dim] */
	bool full;                     /* max_n rows read: stop */
	/* the text reader */
	gzFile gz;
	char *buf;                     /* DATA_LINE_MAX + 2 */
	uint64_t line;
	uint64_t bytes, max_bytes;     /* text read; 0: no bound */
	bool cut;                      /* stopped at max_bytes */
	uint32_t csv_cols;             /* columns of the first line */
	/* a row being parsed */
	uint32_t *ridx;                /* [DATA_MAX_FEATURES] */
	float *rval;                   /* [DATA_MAX_FEATURES] */
	/* reading in parts (data_window) */
	struct data_index *ix;         /* record a checkpoint every
					  ix->every rows; NULL: not */
	uint64_t line_off;             /* where the line read last began */
	uint64_t seen_nnz;             /* values of the rows so far */
	uint32_t skip;                 /* rows to check but not keep first */
	uint64_t start_off, start_line; /* where to begin (a checkpoint) */
	void (*tick)(void *);          /* called every GUARD_EVERY lines */
	void *tick_arg;
};

static void acc_free(struct acc *a)
{
	if (a->gz)
		gzclose(a->gz);
	free(a->sum);
	free(a->sumsq);
	free(a->lab);
	free(a->rp);
	free(a->ci);
	free(a->cv);
	free(a->xb);
	free(a->buf);
	free(a->ridx);
	free(a->rval);
	memset(a, 0, sizeof(*a));
}


static enum px_err oom(struct acc *a, struct px_error *err)
{
	return px_errorf(err, PX_ENOMEM, "'%s': out of memory after %u rows",
			 a->path, a->n);
}

/* A checkpoint for the row about to be counted, every ix->every rows. */
static enum px_err acc_checkpoint(struct acc *a, struct px_error *err)
{
	struct data_index *ix = a->ix;

	if (!ix || a->n % ix->every)
		return PX_OK;
	if (ix->n_cp == ix->cap_cp) {
		uint32_t c = ix->cap_cp ? ix->cap_cp * 2 : 64;
		void *p = px_reallocarray(ix->cp, c, sizeof(*ix->cp));

		if (!p)
			return oom(a, err);
		ix->cp = p;
		ix->cap_cp = c;
	}
	ix->cp[ix->n_cp++] = (struct data_checkpoint){
		.off = a->line_off, .line = a->line - 1, .nnz = a->seen_nnz };
	return PX_OK;
}

/* Where label v is in the sorted list (its class), or where it would go
 * (and *found false). */
static uint32_t label_find(const int32_t *l, uint32_t n, int32_t v,
			   bool *found)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (l[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < n && l[lo] == v;
	return lo;
}

/* A row's label: one of the training set's (test), or added to them. */
static enum px_err acc_label(struct acc *a, int32_t v, const char *where,
			     struct px_error *err)
{
	bool found;
	uint32_t at;

	if (a->known) {
		label_find(a->known->labels, a->known->n_classes, v, &found);
		if (!found)
			return px_errorf(err, PX_EINVAL, "%s: label %d is not "
					 "one of the training set's %u (%d to "
					 "%d)", where, v, a->known->n_classes,
					 a->known->labels[0],
					 a->known->labels[a->known->n_classes -
							  1]);
		return PX_OK;
	}
	at = label_find(a->labels, a->n_labels, v, &found);
	if (found)
		return PX_OK;
	if (a->n_labels == DATA_MAX_CLASSES)
		return px_errorf(err, PX_ETOOBIG, "%s: label %d is a %uth "
				 "distinct label, past the %u classes a model "
				 "may have", where, v, DATA_MAX_CLASSES + 1,
				 DATA_MAX_CLASSES);
	memmove(a->labels + at + 1, a->labels + at,
		(a->n_labels - at) * sizeof(a->labels[0]));
	a->labels[at] = v;
	a->n_labels++;
	return PX_OK;
}

/* Room for one more row and nnz more values. */
static enum px_err acc_grow(struct acc *a, bool sparse, uint32_t nnz,
			    struct px_error *err)
{
	if (a->n == a->cap_n) {
		uint32_t c = a->cap_n ? a->cap_n * 2 : 1024;
		void *p;

		if (c > DATA_MAX_EXAMPLES)
			c = DATA_MAX_EXAMPLES;
		p = px_reallocarray(a->lab, c, sizeof(*a->lab));
		if (!p)
			return oom(a, err);
		a->lab = p;
		if (sparse) {
			p = px_reallocarray(a->rp, (size_t)c + 1,
					    sizeof(*a->rp));
			if (!p)
				return oom(a, err);
			a->rp = p;
		}
		a->cap_n = c;
	}
	if (a->nv + nnz > a->cap_v) {
		uint64_t c = a->cap_v ? a->cap_v : 65536;
		void *p;

		while (c < a->nv + nnz)
			c *= 2;
		if (c > DATA_MAX_VALUES)
			c = DATA_MAX_VALUES;
		p = px_reallocarray(a->cv, c, sizeof(*a->cv));
		if (!p)
			return oom(a, err);
		a->cv = p;
		if (sparse) {
			p = px_reallocarray(a->ci, c, sizeof(*a->ci));
			if (!p)
				return oom(a, err);
			a->ci = p;
		}
		a->cap_v = c;
	}
	return PX_OK;
}

/* One parsed row: label v and nnz values (idx NULL: dense, 0..nnz-1).
 * where names the line, for errors. */
static enum px_err acc_row(struct acc *a, int32_t v, const uint32_t *idx,
			   const float *val, uint32_t nnz, const char *where,
			   struct px_error *err)
{
	enum px_err e;

	if (a->n == DATA_MAX_EXAMPLES)
		return px_errorf(err, PX_ETOOBIG, "%s: more than %u rows",
				 where, DATA_MAX_EXAMPLES);
	e = acc_label(a, v, where, err);
	if (e == PX_OK)
		e = acc_checkpoint(a, err);
	if (e != PX_OK)
		return e;
	a->seen_nnz += nnz;
	if (a->skip) { /* before the rows wanted: checked only */
		a->skip--;
		return PX_OK;
	}
	if (a->stats)
		for (uint32_t k = 0; k < nnz; k++) {
			uint32_t j = idx ? idx[k] : k;

			a->sum[j] += val[k];
			a->sumsq[j] += (double)val[k] * val[k];
		}
	if (a->keep) {
		if (a->nv + nnz > DATA_MAX_VALUES)
			return px_errorf(err, PX_ETOOBIG, "%s: more than %llu "
					 "values in the set", where,
					 (unsigned long long)DATA_MAX_VALUES);
		e = acc_grow(a, idx != NULL, nnz, err);
		if (e != PX_OK)
			return e;
		a->lab[a->n] = v;
		if (idx)
			a->rp[a->n] = a->nv;
		if (idx && nnz)
			memcpy(a->ci + a->nv, idx, nnz * sizeof(*idx));
		if (nnz)
			memcpy(a->cv + a->nv, val, nnz * sizeof(*val));
		a->nv += nnz;
		if (idx)
			a->rp[a->n + 1] = a->nv;
	}
	a->n++;
	a->full = a->max_n && a->n == a->max_n;
	return PX_OK;
}

/* ---- text ---- */

/* The next line into a->buf without its end of line; false at the end
 * (or at the byte bound: a->cut). */
static enum px_err next_line(struct acc *a, bool *ret_got,
			     struct px_error *err)
{
	uint64_t got;
	size_t n;
	int zerr;

	*ret_got = false;
	if (a->max_bytes && a->bytes >= a->max_bytes) {
		int c = gzgetc(a->gz);

		a->cut = c != -1; /* more to read */
		return PX_OK;
	}
	if (a->line % GUARD_EVERY == GUARD_EVERY - 1 && px_guard_expired())
		return px_errorf(err, PX_ECANCELED, "%s:%llu: reading stopped "
				 "(it took too long)", a->path,
				 (unsigned long long)a->line + 1);
	if (a->tick && a->line % GUARD_EVERY == GUARD_EVERY - 1)
		a->tick(a->tick_arg);
	a->line_off = (uint64_t)gztell(a->gz);
	if (!gzgets(a->gz, a->buf, DATA_LINE_MAX + 2)) {
		const char *m = gzerror(a->gz, &zerr);

		if (zerr != Z_OK) /* Z_BUF_ERROR: a truncated stream */
			return px_errorf(err, PX_EINVAL, "%s:%llu: %s", a->path,
					 (unsigned long long)a->line + 1,
					 m ? m : "gzip error");
		return PX_OK;
	}
	a->line++;
	n = strlen(a->buf);
	/* what the file held, NUL bytes too: they count toward the bound
	 * (a sparse file is not read whole) and are bad text */
	got = (uint64_t)gztell(a->gz) - a->line_off;
	a->bytes += got;
	if (got != n)
		return px_errorf(err, PX_EINVAL, "%s:%llu: a NUL byte (at "
				 "byte %zu of the line): not a text file",
				 a->path, (unsigned long long)a->line, n + 1);
	if (n && a->buf[n - 1] == '\n')
		a->buf[--n] = '\0';
	else if (n > DATA_LINE_MAX)
		return px_errorf(err, PX_ETOOBIG, "%s:%llu: a line longer than "
				 "%u bytes", a->path,
				 (unsigned long long)a->line, DATA_LINE_MAX);
	if (n && a->buf[n - 1] == '\r')
		a->buf[--n] = '\0';
	*ret_got = true;
	return PX_OK;
}

static bool blank(const char *s)
{
	return s[strspn(s, " \t")] == '\0';
}

/* A label: an integer in int32's range, digits and a sign only. */
static bool parse_label(const char *s, int32_t *ret)
{
	const char *d = s + (*s == '+' || *s == '-');
	char *end;
	long long v;

	if (*d < '0' || *d > '9')
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < INT32_MIN || v > INT32_MAX)
		return false;
	*ret = (int32_t)v;
	return true;
}

/* A feature's value: a finite number that a float holds.  NULL, or
 * what is wrong with s. */
static const char *parse_value(const char *s, float *ret)
{
	char *end;
	double v;

	if (!*s)
		return "empty, not a number";
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end)
		return "not a number";
	if (isnan(v) || isinf(v))
		return errno == ERANGE ? "out of range" : "not a finite number "
		       "(NaN or inf)";
	if (fabs(v) > FLT_MAX)
		return "out of a float's range";
	*ret = (float)v;
	return NULL;
}

const char *data_parse_float(const char *s, float *ret)
{
	return parse_value(s, ret);
}

/* One LIBSVM line, in place: "label idx:val ..." (# starts a comment). */
static enum px_err libsvm_line(struct acc *a, char *s, struct px_error *err)
{
	char where[PX_ERRMSG_MAX / 2], *tok, *save = NULL, *colon;
	uint32_t nnz = 0, field = 1, prev = 0;
	int32_t label;
	const char *why;

	snprintf(where, sizeof(where), "%s:%llu", a->path,
		 (unsigned long long)a->line);
	s[strcspn(s, "#")] = '\0';
	if (blank(s))
		return PX_OK;
	tok = strtok_r(s, " \t", &save);
	if (!parse_label(tok, &label))
		return px_errorf(err, PX_EINVAL, "%s: field 1 (label): '%.40s' "
				 "is not an integer of at most 32 bits", where,
				 tok);
	while ((tok = strtok_r(NULL, " \t", &save))) {
		unsigned long j;
		char *end;

		field++;
		colon = strchr(tok, ':');
		if (!colon || tok[0] < '0' || tok[0] > '9')
			return px_errorf(err, PX_EINVAL, "%s: field %u: '%.40s' "
					 "is not index:value", where, field,
					 tok);
		*colon = '\0';
		errno = 0;
		j = strtoul(tok, &end, 10);
		if (errno || *end || j > DATA_MAX_FEATURES)
			return px_errorf(err, PX_EINVAL, "%s: field %u: index "
					 "'%.20s' is not a whole number in "
					 "1..%u", where, field, tok,
					 DATA_MAX_FEATURES);
		if (j == 0)
			return px_errorf(err, PX_EINVAL, "%s: field %u: index "
					 "0 (indices start at 1)", where,
					 field);
		if (a->known && j > a->known->dim)
			return px_errorf(err, PX_EINVAL, "%s: field %u: index "
					 "%lu is beyond the training set's %u "
					 "features", where, field, j,
					 a->known->dim);
		if (j <= prev)
			return px_errorf(err, PX_EINVAL, "%s: field %u: index "
					 "%lu after %u (indices must increase)",
					 where, field, j, prev);
		prev = (uint32_t)j;
		why = parse_value(colon + 1, &a->rval[nnz]);
		if (why)
			return px_errorf(err, PX_EINVAL, "%s: field %u (index "
					 "%lu): value '%.40s': %s", where, field,
					 j, colon + 1, why);
		if (a->rval[nnz] == 0.0f)
			continue; /* sparse: zeros are not kept */
		a->ridx[nnz++] = (uint32_t)j - 1;
	}
	if (prev > a->dim)
		a->dim = prev;
	return acc_row(a, label, a->ridx, a->rval, nnz, where, err);
}

/* Split s at commas into f[] (at most max, trimmed); the count, or
 * max + 1 when there are more. */
static uint32_t csv_split(char *s, char **f, uint32_t max)
{
	uint32_t n = 0;

	for (;;) {
		char *c = strchr(s, ',');
		size_t len;

		if (n == max)
			return max + 1;
		if (c)
			*c = '\0';
		s += strspn(s, " \t");
		len = strlen(s);
		while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
			s[--len] = '\0';
		f[n++] = s;
		if (!c)
			return n;
		s = c + 1;
	}
}

/* One CSV line, in place.  The first line is a header when none of its
 * fields is a number, refused when some are and some are not. */
static enum px_err csv_line(struct acc *a, char *s, char **f,
			    struct px_error *err)
{
	char where[PX_ERRMSG_MAX / 2];
	uint32_t n, k = 0, numbers = 0, lc = a->label_col;
	int32_t label;
	float v;
	const char *why;

	snprintf(where, sizeof(where), "%s:%llu", a->path,
		 (unsigned long long)a->line);
	if (blank(s))
		return PX_OK;
	n = csv_split(s, f, DATA_MAX_FEATURES + 1);
	if (n > DATA_MAX_FEATURES + 1)
		return px_errorf(err, PX_ETOOBIG, "%s: more than %u fields (a "
				 "label and %u features at most)", where,
				 DATA_MAX_FEATURES + 1, DATA_MAX_FEATURES);
	if (!a->csv_cols) {
		if (n < 2)
			return px_errorf(err, PX_EINVAL, "%s: %u field: a CSV "
					 "row is a label and 1 or more "
					 "features, comma-separated", where, n);
		if (lc > n)
			return px_errorf(err, PX_EINVAL, "%s: the label column "
					 "%u is past its %u fields", where, lc,
					 n);
		a->csv_cols = n;
		if (a->known && n - 1 != a->known->dim)
			return px_errorf(err, PX_EINVAL, "%s: %u features, the "
					 "training set has %u", where, n - 1,
					 a->known->dim);
		a->dim = n - 1;
		for (uint32_t i = 0; i < n; i++)
			numbers += parse_value(f[i], &v) == NULL;
		if (!numbers)
			return PX_OK; /* a header */
		if (numbers < n) {
			while (parse_value(f[k], &v) == NULL)
				k++;
			return px_errorf(err, PX_EINVAL, "%s: field %u: "
					 "'%.40s' is not a number, and a "
					 "header line has no field that is "
					 "one", where, k + 1, f[k]);
		}
	}
	if (n != a->csv_cols)
		return px_errorf(err, PX_EINVAL, "%s: %u fields, the first line "
				 "has %u (a ragged CSV)", where, n,
				 a->csv_cols);
	if (!parse_label(f[lc - 1], &label))
		return px_errorf(err, PX_EINVAL, "%s: field %u (label): "
				 "'%.40s' is not an integer of at most 32 "
				 "bits", where, lc, f[lc - 1]);
	for (uint32_t i = 0; i < n; i++) {
		if (i == lc - 1)
			continue;
		why = parse_value(f[i], &a->rval[k]);
		if (why)
			return px_errorf(err, PX_EINVAL, "%s: field %u: "
					 "'%.40s': %s", where, i + 1, f[i],
					 why);
		k++;
	}
	return acc_row(a, label, NULL, a->rval, k, where, err);
}

/* Every line of a text file, or up to its byte bound. */
static enum px_err read_text(struct acc *a, enum data_format fmt,
			     struct px_error *err)
{
	char **fields = NULL;
	enum px_err e;
	bool got;

	a->buf = px_calloc(DATA_LINE_MAX + 2, 1);
	a->ridx = px_calloc(DATA_MAX_FEATURES, sizeof(*a->ridx));
	a->rval = px_calloc(DATA_MAX_FEATURES, sizeof(*a->rval));
	if (fmt == DATA_FMT_CSV)
		fields = px_calloc(DATA_MAX_FEATURES + 1, sizeof(*fields));
	if (!a->buf || !a->ridx || !a->rval ||
	    (fmt == DATA_FMT_CSV && !fields)) {
		free(fields);
		return oom(a, err);
	}
	e = gz_open(a->path, &a->gz, err);
	if (e == PX_OK && a->start_off &&
	    gzseek(a->gz, (z_off_t)a->start_off, SEEK_SET) !=
	    (z_off_t)a->start_off)
		e = px_errorf(err, PX_EIO, "%s:%llu: cannot seek to byte %llu "
			      "(the file changed since it was checked?)",
			      a->path, (unsigned long long)a->start_line + 1,
			      (unsigned long long)a->start_off);
	a->line = a->start_line;
	while (e == PX_OK && !a->full) {
		e = next_line(a, &got, err);
		if (e != PX_OK || !got)
			break;
		e = fmt == DATA_FMT_CSV ? csv_line(a, a->buf, fields, err)
					: libsvm_line(a, a->buf, err);
	}
	free(fields);
	return e;
}

/* ---- IDX ---- */

/* An IDX pair's label v of item `item` (1-based) of lpath: below
 * a->below when set, one of the training set's (test), or added to
 * them.  The message is made only for a label not seen yet. */
static enum px_err idx_label(struct acc *a, int32_t v, const char *lpath,
			     uint64_t item, struct px_error *err)
{
	char where[PX_ERRMSG_MAX / 2];
	const struct data_prep *k = a->known;
	bool found;

	label_find(k ? k->labels : a->labels, k ? k->n_classes : a->n_labels,
		   v, &found);
	if (found && (!a->below || (uint32_t)v < a->below))
		return PX_OK;
	snprintf(where, sizeof(where), "%.480s: item %llu", lpath,
		 (unsigned long long)item);
	if (a->below && (uint32_t)v >= a->below)
		return px_errorf(err, PX_EINVAL, "%s: label %d is not below "
				 "%u", where, v, a->below);
	return acc_label(a, v, where, err);
}

/* Move f (path) `bytes` on: a plain file seeks; a gzip file is read
 * through a piece at a time (zlib cannot seek in it), ticking between. */
static enum px_err idx_skip(struct acc *a, gzFile f, const char *path,
			    uint64_t bytes, struct px_error *err)
{
	uint8_t *buf;
	enum px_err e = PX_OK;

	if (!bytes)
		return PX_OK;
	if (gzdirect(f)) {
		if (gzseek(f, (z_off_t)bytes, SEEK_CUR) < 0)
			return px_errorf(err, PX_EIO, "file '%s': cannot seek "
					 "%llu bytes on", path,
					 (unsigned long long)bytes);
		return PX_OK;
	}
	buf = px_calloc(IDX_PIECE, 1);
	if (!buf)
		return oom(a, err);
	while (e == PX_OK && bytes) {
		uint32_t k = bytes < IDX_PIECE ? (uint32_t)bytes : IDX_PIECE;

		e = read_full(f, path, buf, k, "the items before the range",
			      err);
		bytes -= k;
		if (a->tick)
			a->tick(a->tick_arg);
	}
	free(buf);
	return e;
}

/* An images file and its labels file (a->lpath, or named from the
 * images'), read a piece at a time from item a->start: each label checked
 * (and added to the training set's), with a->keep the images kept as
 * bytes (features byte / 255), with a->stats summed.  Neither kept nor
 * summed, the images file is checked to hold its items (data_check:
 * its header only). */
static enum px_err read_idx(struct acc *a, struct px_error *err)
{
	char lbuf[4096];
	const char *lpath = a->lpath;
	gzFile lf = NULL, imf = NULL;
	uint32_t n_lab, one, n_img, dim = 0, n = 0, rows;
	uint8_t *lab = NULL, *img = NULL;
	bool read_img = a->keep || a->stats;
	enum px_err e = PX_OK;

	if (!lpath) {
		e = data_idx_labels_path(a->path, lbuf, sizeof(lbuf), err);
		lpath = lbuf;
	}
	if (e == PX_OK)
		e = idx_open(lpath, 1, &lf, &n_lab, &one, err);
	if (e == PX_OK)
		e = idx_open(a->path, 3, &imf, &n_img, &dim, err);
	if (e == PX_OK && n_img != n_lab)
		e = px_errorf(err, PX_EINVAL, "file '%s': %u labels for %u "
			      "images in '%s'", lpath, n_lab, n_img, a->path);
	if (e == PX_OK && a->known && dim != a->known->dim)
		e = px_errorf(err, PX_EINVAL, "file '%s': %u features an "
			      "image, the training set has %u", a->path, dim,
			      a->known->dim);
	if (e == PX_OK && dim > DATA_MAX_FEATURES)
		e = px_errorf(err, PX_ETOOBIG, "file '%s': %u features an "
			      "image, more than %u", a->path, dim,
			      DATA_MAX_FEATURES);
	if (e == PX_OK && a->start >= n_lab)
		e = px_errorf(err, PX_EINVAL, "file '%s': item %u past its %u "
			      "(the file changed since it was checked?)",
			      lpath, a->start + 1, n_lab);
	if (e != PX_OK)
		goto out;
	n = n_lab - a->start;
	if (a->max_n && a->max_n < n)
		n = a->max_n;
	rows = IDX_PIECE / dim ? IDX_PIECE / dim : 1;
	lab = px_calloc(rows, 1);
	if (read_img && !a->keep)
		img = px_calloc(rows, dim);
	if (a->keep) {
		a->lab = px_calloc(n, sizeof(*a->lab));
		a->xb = px_calloc(n, dim);
	}
	if (!lab || (read_img && !a->keep && !img) ||
	    (a->keep && (!a->lab || !a->xb))) {
		e = oom(a, err);
		goto out;
	}
	e = idx_skip(a, lf, lpath, a->start, err);
	if (e == PX_OK && read_img)
		e = idx_skip(a, imf, a->path, (uint64_t)a->start * dim, err);
	for (uint32_t i = 0, k; e == PX_OK && i < n; i += k) {
		const uint8_t *x;

		k = n - i < rows ? n - i : rows;
		if (px_guard_expired()) {
			e = px_errorf(err, PX_ECANCELED, "file '%s': reading "
				      "stopped at item %u (it took too long)",
				      lpath, a->start + i + 1);
			break;
		}
		e = read_full(lf, lpath, lab, k, "the labels", err);
		x = a->keep ? a->xb + (size_t)i * dim : img;
		if (e == PX_OK && read_img)
			e = read_full(imf, a->path, (uint8_t *)x,
				      (uint64_t)k * dim, "the images", err);
		for (uint32_t j = 0; e == PX_OK && j < k; j++) {
			e = idx_label(a, lab[j], lpath,
				      (uint64_t)a->start + i + j + 1, err);
			if (a->keep)
				a->lab[i + j] = lab[j];
			for (uint32_t c = 0; a->stats && c < dim; c++) {
				double v = x[(size_t)j * dim + c] / 255.0;

				a->sum[c] += v;
				a->sumsq[c] += v * v;
			}
		}
		if (a->tick)
			a->tick(a->tick_arg);
	}
	/* the images are there (a pass, not a load, over a gzip file) */
	if (e == PX_OK && !read_img && !a->max_bytes) {
		uint8_t last;

		e = idx_skip(a, imf, a->path, (uint64_t)n * dim - 1, err);
		if (e == PX_OK)
			e = read_full(imf, a->path, &last, 1, "the images",
				      err);
	}
	if (e == PX_OK) {
		a->n = n;
		a->dim = dim;
	}
out:
	if (lf)
		gzclose(lf);
	if (imf)
		gzclose(imf);
	free(lab);
	free(img);
	return e;
}

/* ---- the loaders ---- */

static enum px_err format_for(const struct data_spec *spec, const char *path,
			      enum data_format *ret, struct px_error *err)
{
	if (spec->format != DATA_FMT_AUTO) {
		*ret = spec->format;
		return PX_OK;
	}
	return data_format_of(path, ret, err);
}

/* Read path as spec says into a. */
static enum px_err acc_read(struct acc *a, const struct data_spec *spec,
			    const char *path, struct px_error *err)
{
	enum data_format fmt;
	enum px_err e = format_for(spec, path, &fmt, err);

	if (e != PX_OK)
		return e;
	a->path = path;
	a->label_col = spec->label_col ? spec->label_col : 1;
	if (a->stats) {
		a->sum = px_calloc(DATA_MAX_FEATURES, sizeof(*a->sum));
		a->sumsq = px_calloc(DATA_MAX_FEATURES, sizeof(*a->sumsq));
		if (!a->sum || !a->sumsq)
			return oom(a, err);
	}
	e = fmt == DATA_FMT_IDX ? read_idx(a, err) : read_text(a, fmt, err);
	if (e != PX_OK)
		return e;
	if (a->n == 0)
		return px_errorf(err, PX_EINVAL, "%s: no rows (an empty file)",
				 path);
	if (a->dim == 0)
		return px_errorf(err, PX_EINVAL, "%s: no feature in any row "
				 "(every index:value is 0 or none is given)",
				 path);
	return PX_OK;
}

/* The training set's prep from a read of it. */
static enum px_err acc_prep(struct acc *a, const struct data_spec *spec,
			    struct data_prep *prep, struct px_error *err)
{
	memset(prep, 0, sizeof(*prep));
	if (a->n_labels < 2)
		return px_errorf(err, PX_EINVAL, "%s: every one of its %u rows "
				 "has label %d: a classifier needs 2 labels or "
				 "more", a->path, a->n, a->labels[0]);
	prep->dim = a->dim;
	prep->n_classes = a->n_labels;
	memcpy(prep->labels, a->labels, a->n_labels * sizeof(a->labels[0]));
	if (!a->stats)
		return PX_OK;
	prep->mean = px_calloc(a->dim, sizeof(float));
	prep->std = px_calloc(a->dim, sizeof(float));
	if (!prep->mean || !prep->std) {
		data_prep_release(prep);
		return oom(a, err);
	}
	for (uint32_t j = 0; j < a->dim; j++) {
		double m = a->sum[j] / a->n;
		double var = a->sumsq[j] / a->n - m * m;
		double sd = var > 0 ? sqrt(var) : 0;

		prep->mean[j] = (float)m;
		/* a constant feature stays at 0, not at inf */
		prep->std[j] = sd > 1e-12 * (fabs(m) + 1) ? (float)sd : 1.0f;
	}
	return PX_OK;
}

/* What a holds into ret (moved), the labels as classes of prep. */
static enum px_err acc_set(struct acc *a, const struct data_prep *prep,
			   struct data_set *ret, struct px_error *err)
{
	bool found;

	memset(ret, 0, sizeof(*ret));
	ret->y = px_calloc(a->n, 1);
	if (!ret->y)
		return oom(a, err);
	for (uint32_t i = 0; i < a->n; i++)
		ret->y[i] = (uint8_t)label_find(prep->labels, prep->n_classes,
						a->lab[i], &found);
	ret->n = a->n;
	ret->dim = prep->dim;
	ret->n_classes = prep->n_classes;
	ret->prep = prep;
	ret->xb = a->xb;
	ret->rp = a->rp;
	ret->ci = a->ci;
	if (a->rp)
		ret->cv = a->cv;
	else if (!a->xb)
		ret->x = a->cv;
	if (ret->rp && !ret->ci) { /* no non-zero at all: empty arrays */
		ret->ci = px_calloc(1, sizeof(*ret->ci));
		ret->cv = px_calloc(1, sizeof(*ret->cv));
	}
	a->xb = NULL;
	a->rp = NULL;
	a->ci = NULL;
	a->cv = NULL;
	return PX_OK;
}

enum px_err data_load_train(const struct data_spec *spec, uint32_t max_n,
			    struct data_set *ret, struct data_prep *prep,
			    struct px_error *err)
{
	struct acc a = { .keep = true, .max_n = max_n,
			 .stats = spec->scale == DATA_SCALE_STANDARD };
	enum px_err e = acc_read(&a, spec, spec->train, err);

	if (e == PX_OK)
		e = acc_prep(&a, spec, prep, err);
	if (e == PX_OK) {
		e = acc_set(&a, prep, ret, err);
		if (e != PX_OK)
			data_prep_release(prep);
	}
	acc_free(&a);
	return e;
}

enum px_err data_scan_train(const struct data_spec *spec, uint32_t max_n,
			    uint32_t *ret_n, struct data_prep *prep,
			    struct px_error *err)
{
	struct acc a = { .max_n = max_n,
			 .stats = spec->scale == DATA_SCALE_STANDARD };
	enum px_err e = acc_read(&a, spec, spec->train, err);

	if (e == PX_OK)
		e = acc_prep(&a, spec, prep, err);
	if (e == PX_OK)
		*ret_n = a.n;
	acc_free(&a);
	return e;
}

enum px_err data_load_test(const struct data_spec *spec,
			   const struct data_prep *prep, uint32_t max_n,
			   struct data_set *ret, struct px_error *err)
{
	struct acc a = { .keep = true, .max_n = max_n, .known = prep };
	enum px_err e = acc_read(&a, spec, spec->test, err);

	if (e == PX_OK)
		e = acc_set(&a, prep, ret, err);
	acc_free(&a);
	return e;
}

enum px_err data_check(const struct data_spec *spec, bool *ret_whole,
		       struct px_error *err)
{
	struct acc a = { .max_bytes = DATA_CHECK_BYTES };
	struct data_prep prep = { 0 };
	enum px_err e;

	/* no statistics: nothing scales what is not trained */
	*ret_whole = false;
	e = acc_read(&a, spec, spec->train, err);
	if (e == PX_OK)
		e = acc_prep(&a, spec, &prep, err);
	if (e == PX_OK) {
		struct acc t = { .max_bytes = DATA_CHECK_BYTES };

		*ret_whole = !a.cut;
		/* a label or an index past the part read may be in the
		 * rest: the test set is held to a whole training set */
		t.known = *ret_whole ? &prep : NULL;
		e = acc_read(&t, spec, spec->test, err);
		*ret_whole = *ret_whole && !t.cut;
		acc_free(&t);
	}
	data_prep_release(&prep);
	acc_free(&a);
	return e;
}

/* ---- a training set in parts ---- */

bool data_window_able(const struct data_spec *spec)
{
	enum data_format f;

	return spec->train && format_for(spec, spec->train, &f, NULL) ==
	       PX_OK;
}

double data_window_row_bytes(const struct data_window *w, uint32_t dim,
			     uint32_t n)
{
	/* held: a label byte, and a row pointer and 8 bytes a value
	 * (LIBSVM), 4 a feature (CSV) or 1 (IDX); reading: 4 more (the
	 * label as read) */
	if (w->fmt == DATA_FMT_IDX)
		return 5.0 + dim;
	if (w->fmt == DATA_FMT_CSV)
		return 5.0 + 4.0 * dim;
	return 13.0 + 8.0 * (double)w->ix.nnz / (n ? n : 1);
}

/* The window of data_window_open (below 0) and data_window_open_idx
 * (w's own labels, below n_classes): the checked pass over its file. */
static enum px_err window_open(struct data_window *w, uint32_t max_n,
			       struct data_set *ret, struct data_prep *prep,
			       struct px_error *err)
{
	const struct data_spec *spec = &w->spec;
	struct acc a = { .max_n = max_n, .below = w->below,
			 .lpath = w->lpath, .ix = &w->ix,
			 .stats = spec->scale == DATA_SCALE_STANDARD };
	enum px_err e;

	memset(ret, 0, sizeof(*ret));
	w->ix.every = DATA_INDEX_EVERY;
	e = format_for(spec, spec->train, &w->fmt, err);
	if (e == PX_OK)
		e = acc_read(&a, spec, spec->train, err);
	if (e == PX_OK && w->below) { /* the classes are the labels */
		w->own.dim = a.dim;
		w->own.n_classes = w->below;
		for (uint32_t k = 0; k < w->below; k++)
			w->own.labels[k] = (int32_t)k;
		w->prep = &w->own;
	} else if (e == PX_OK) {
		e = acc_prep(&a, spec, prep, err);
		w->prep = prep;
		ret->prep = prep;
	}
	if (e == PX_OK) {
		w->ix.nnz = a.seen_nnz;
		ret->n = a.n;
		ret->dim = w->prep->dim;
		ret->n_classes = w->prep->n_classes;
		ret->win = w;
		data_window_range(ret, 0, a.n, 1);
	} else {
		ret->win = w;
		data_release(ret);
	}
	acc_free(&a);
	return e;
}

enum px_err data_window_open(const struct data_spec *spec, uint32_t max_n,
			     uint64_t budget, struct data_set *ret,
			     struct data_prep *prep, struct px_error *err)
{
	struct data_window *w = px_calloc(1, sizeof(*w));

	if (!w)
		return px_errorf(err, PX_ENOMEM, "'%s': a window",
				 spec->train);
	w->spec = *spec;
	w->budget = budget;
	return window_open(w, max_n, ret, prep, err);
}

enum px_err data_window_open_idx(const char *images, const char *labels,
				 uint32_t n_classes, uint32_t max_n,
				 uint64_t budget, struct data_set *ret,
				 struct px_error *err)
{
	struct data_window *w;

	if (n_classes < 2 || n_classes > DATA_MAX_CLASSES)
		return px_errorf(err, PX_EINVAL, "'%s': %u classes, not 2..%u",
				 images, n_classes, DATA_MAX_CLASSES);
	w = px_calloc(1, sizeof(*w));
	if (w) {
		w->own_train = strdup(images);
		w->lpath = strdup(labels);
	}
	if (!w || !w->own_train || !w->lpath) {
		if (w) {
			free(w->own_train);
			free(w->lpath);
		}
		free(w);
		return px_errorf(err, PX_ENOMEM, "'%s': a window", images);
	}
	w->spec = (struct data_spec){ .train = w->own_train,
				      .format = DATA_FMT_IDX };
	w->budget = budget;
	w->below = n_classes;
	return window_open(w, max_n, ret, NULL, err);
}

void data_window_range(const struct data_set *d, uint32_t lo, uint32_t hi,
		       uint32_t min_chunk)
{
	struct data_window *w = d->win;
	double rows;

	if (w->lo == lo && w->hi == hi && w->chunk >= min_chunk && w->chunk)
		return;
	data_release(&w->held);
	w->held_lo = 0;
	w->lo = lo;
	w->hi = hi;
	rows = w->budget ? (double)w->budget /
			   data_window_row_bytes(w, d->dim, d->n)
			 : (double)(hi - lo);
	w->chunk = rows >= hi - lo ? hi - lo : (uint32_t)rows;
	if (w->chunk < min_chunk)
		w->chunk = min_chunk;
	if (!w->chunk)
		w->chunk = 1;
}

/* Rows [lo, hi) of an IDX pair: a seek to item lo in a plain file, a
 * pass up to it in a gzip one, then the items. */
static enum px_err load_idx_rows(struct data_window *w, uint32_t lo,
				 uint32_t hi, struct data_set *ret,
				 struct px_error *err)
{
	struct acc a = {
		.keep = true, .known = w->prep, .max_n = hi - lo,
		.start = lo, .below = w->below, .lpath = w->lpath,
		.tick = w->tick, .tick_arg = w->tick_arg,
	};
	enum px_err e = acc_read(&a, &w->spec, w->spec.train, err);

	if (e == PX_OK && a.n != hi - lo)
		e = px_errorf(err, PX_EINVAL, "'%s': %u rows from row %u, %u "
			      "wanted (the file changed since it was "
			      "checked?)", w->spec.train, a.n, lo, hi - lo);
	if (e == PX_OK)
		e = acc_set(&a, w->prep, ret, err);
	acc_free(&a);
	return e;
}

/* Rows [lo, hi) of w's file into *ret (row 0 is row lo), held to its
 * prep; they were checked by the window's pass. */
static enum px_err load_rows(struct data_window *w, uint32_t lo,
			     uint32_t hi, struct data_set *ret,
			     struct px_error *err)
{
	const struct data_index *ix = &w->ix;
	uint32_t k = lo / ix->every, k2 = (hi + ix->every - 1) / ix->every;
	uint64_t vals = (k2 < ix->n_cp ? ix->cp[k2].nnz : ix->nnz) -
			ix->cp[k].nnz;
	bool sparse = w->fmt == DATA_FMT_LIBSVM;
	struct acc a = {
		.keep = true, .known = w->prep, .max_n = hi - lo,
		.skip = lo - k * ix->every, .start_off = ix->cp[k].off,
		.start_line = ix->cp[k].line, .dim = w->prep->dim,
		.csv_cols = w->prep->dim + 1, .tick = w->tick,
		.tick_arg = w->tick_arg,
	};
	enum px_err e = PX_OK;

	if (k >= ix->n_cp)
		return px_errorf(err, PX_EINVAL, "'%s': row %u past its %u "
				 "checkpoints", w->spec.train, lo, ix->n_cp);
	/* the rows' exact room: no doubling on the way */
	if (!sparse)
		vals = (uint64_t)(hi - lo) * w->prep->dim;
	a.cap_n = hi - lo;
	a.cap_v = vals ? vals : 1;
	a.lab = px_calloc(a.cap_n, sizeof(*a.lab));
	a.cv = px_calloc(a.cap_v, sizeof(*a.cv));
	if (sparse) {
		a.rp = px_calloc((size_t)a.cap_n + 1, sizeof(*a.rp));
		a.ci = px_calloc(a.cap_v, sizeof(*a.ci));
	}
	if (!a.lab || !a.cv || (sparse && (!a.rp || !a.ci)))
		e = oom(&a, err);
	if (e == PX_OK)
		e = acc_read(&a, &w->spec, w->spec.train, err);
	if (e == PX_OK && a.n != hi - lo)
		e = px_errorf(err, PX_EINVAL, "'%s': %u rows from row %u, %u "
			      "wanted (the file changed since it was "
			      "checked?)", w->spec.train, a.n, lo, hi - lo);
	if (e == PX_OK && sparse && !a.ci) {
		a.ci = px_calloc(1, sizeof(*a.ci));
		if (!a.ci)
			e = oom(&a, err);
	}
	if (e == PX_OK)
		e = acc_set(&a, w->prep, ret, err);
	acc_free(&a);
	return e;
}

enum px_err data_window_hold(struct data_window *w, uint32_t r,
			     struct px_error *err)
{
	uint32_t lo, hi;
	enum px_err e;

	if (r >= w->held_lo && r - w->held_lo < w->held.n)
		return PX_OK;
	if (r < w->lo || r >= w->hi)
		return px_errorf(err, PX_EINVAL, "'%s': row %u is not in the "
				 "rows [%u, %u) read here", w->spec.train, r,
				 w->lo, w->hi);
	lo = w->lo + (r - w->lo) / w->chunk * w->chunk;
	hi = w->hi - lo < w->chunk ? w->hi : lo + w->chunk;
	data_release(&w->held);
	e = w->fmt == DATA_FMT_IDX ? load_idx_rows(w, lo, hi, &w->held, err)
				   : load_rows(w, lo, hi, &w->held, err);
	if (e != PX_OK)
		return e;
	w->held_lo = lo;
	w->reads++;
	w->rows_read += hi - lo;
	if (hi - lo > w->max_held)
		w->max_held = hi - lo;
	return PX_OK;
}

/* ---- preps and sets ---- */

bool data_prep_equal(const struct data_prep *a, const struct data_prep *b)
{
	if (a->dim != b->dim || a->n_classes != b->n_classes ||
	    memcmp(a->labels, b->labels, a->n_classes * sizeof(int32_t)) ||
	    !a->mean != !b->mean)
		return false;
	return !a->mean ||
	       (!memcmp(a->mean, b->mean, a->dim * sizeof(float)) &&
		!memcmp(a->std, b->std, a->dim * sizeof(float)));
}

void data_prep_release(struct data_prep *prep)
{
	if (!prep)
		return;
	free(prep->mean);
	free(prep->std);
	memset(prep, 0, sizeof(*prep));
}

void data_release(struct data_set *d)
{
	if (!d)
		return;
	free(d->x);
	free(d->xb);
	free(d->y);
	free(d->rp);
	free(d->ci);
	free(d->cv);
	if (d->win) {
		data_release(&d->win->held);
		free(d->win->ix.cp);
		free(d->win->lidx);
		free(d->win->own_train);
		free(d->win->lpath);
		free(d->win);
	}
	memset(d, 0, sizeof(*d));
}
