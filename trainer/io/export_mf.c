/* export_mf.c -- a matrix factorization (mf.h) taken away: its matrices
 * and biases as four safetensors tensors, and back (export.h, "mf").
 */
#include "export.h"

#include <endian.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"
#include "safetensors.h"

/* The tensors' names, in the order written. */
static const char *const tname[4] = { "user_factors", "item_factors",
				      "user_bias", "item_bias" };

/* ---- writing ---- */

static json_t *mf_metadata(const struct mf_desc *d, double test_rmse)
{
	char ver[16], rank[16], users[16], items[16], mean[40];
	json_t *m;

	snprintf(ver, sizeof(ver), "%d", EXPORT_VERSION);
	snprintf(rank, sizeof(rank), "%u", d->rank);
	snprintf(users, sizeof(users), "%u", d->n_users);
	snprintf(items, sizeof(items), "%u", d->n_items);
	/* 9 digits: a float32 reads back exact */
	snprintf(mean, sizeof(mean), "%.9g", (double)d->mean);
	m = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}",
		      "format", EXPORT_FORMAT, "format_version", ver,
		      "model", "mf", "rank", rank, "users", users,
		      "items", items, "global_mean", mean,
		      "ids", EXPORT_MF_IDS, "prediction", EXPORT_MF_PREDICTION,
		      "unseen", EXPORT_MF_UNSEEN);
	return m ? export_meta_number(m, "test_rmse", test_rmse) : NULL;
}

static void set_tensor(struct st_tensor *t, const char *name, uint64_t rows,
		       uint32_t cols, const float *data)
{
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->ndim = cols ? 2 : 1;
	t->shape[0] = rows;
	t->shape[1] = cols;
	t->n = rows * (cols ? cols : 1);
	t->data = data;
}

enum px_err export_mf_write(const char *path, const struct mf_desc *d,
			    const float *params, const uint8_t *seen,
			    double test_rmse, struct px_error *err)
{
	size_t rows = (size_t)d->n_users + d->n_items;
	float *f = px_calloc(rows, (size_t)d->rank * sizeof(float));
	float *b = px_calloc(rows, sizeof(float));
	json_t *meta = mf_metadata(d, test_rmse);
	struct st_tensor t[4];
	enum px_err e;

	memset(t, 0, sizeof(t));
	if (!f || !b || !meta) {
		e = px_errorf(err, PX_ENOMEM, "model file '%s': out of memory",
			      path);
		goto out;
	}
	/* rows of rank + 1 (factors, bias) to [rows, rank] and [rows]; an
	 * unseen row stays zero (mf_zero_unseen) */
	for (size_t k = 0; k < rows; k++) {
		const float *p = params + k * d->row;

		if (seen && !seen[k])
			continue;
		memcpy(f + k * d->rank, p, d->rank * sizeof(float));
		b[k] = p[d->rank];
	}
	set_tensor(&t[0], tname[0], d->n_users, d->rank, f);
	set_tensor(&t[1], tname[1], d->n_items, d->rank,
		   f + (size_t)d->n_users * d->rank);
	set_tensor(&t[2], tname[2], d->n_users, 0, b);
	set_tensor(&t[3], tname[3], d->n_items, 0, b + d->n_users);
	e = st_write(path, t, 4, meta, err);
out:
	json_decref(meta);
	free(f);
	free(b);
	return e;
}

enum px_err export_ckpt_write(const char *path, const struct ckpt_meta *m,
			      const float *params, struct px_error *err)
{
	if (m->d.kind == MODEL_MF)
		return export_mf_write(path, &m->mf, params, NULL,
				       m->test_accuracy, err);
	return export_write(path, &m->d, &m->prep, params, m->test_accuracy,
			    err);
}

void export_shape_text(const struct ckpt_meta *m, char *buf, size_t n)
{
	size_t off;

	if (m->d.kind == MODEL_MF) {
		snprintf(buf, n, "%u users x %u items, rank %u, mean %.4f",
			 m->mf.n_users, m->mf.n_items, m->mf.rank,
			 (double)m->mf.mean);
		return;
	}
	off = (size_t)snprintf(buf, n, "%u", m->d.n_in);
	for (uint32_t i = 0; i < m->d.n_layers && off < n; i++)
		off += (size_t)snprintf(buf + off, n - off, "-%u",
					m->d.layer[i].out);
}

/* ---- which model a file holds ---- */

/* The first line of a checkpoint, its "model". */
static enum model_kind ckpt_kind(int fd)
{
	char buf[CKPT_HEADER_MAX + 1];
	enum model_kind k = MODEL_MLP;
	ssize_t n = px_read_full(fd, buf, sizeof(buf) - 1);
	const char *nl, *s;
	json_t *j;

	if (n <= 0)
		return k;
	nl = memchr(buf, '\n', (size_t)n);
	j = nl ? json_loadb(buf, (size_t)(nl - buf), 0, NULL) : NULL;
	s = json_string_value(json_object_get(j, "model"));
	if (s && !strcmp(s, "mf"))
		k = MODEL_MF;
	json_decref(j);
	return k;
}

/* A safetensors header with a tensor "user_factors". */
static enum model_kind st_kind(int fd, uint64_t size)
{
	enum model_kind k = MODEL_MLP;
	uint64_t len;
	char *h;
	json_t *j;

	if (px_read_full(fd, &len, 8) != 8)
		return k;
	len = le64toh(len);
	if (len > ST_HEADER_MAX || len > size - 8)
		return k;
	h = malloc(len ? len : 1);
	if (h && px_read_full(fd, h, len) == (ssize_t)len) {
		j = json_loadb(h, len, 0, NULL);
		if (json_object_get(j, tname[0]))
			k = MODEL_MF;
		json_decref(j);
	}
	free(h);
	return k;
}

enum model_kind export_kind(const char *path)
{
	enum model_kind k = MODEL_MLP;
	struct stat st;
	char c;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return k;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 8 &&
	    pread(fd, &c, 1, 0) == 1)
		k = c == '{' ? ckpt_kind(fd) : st_kind(fd, (uint64_t)st.st_size);
	close(fd);
	return k;
}

/* ---- reading ---- */

static enum px_err mf_from_checkpoint(const char *path, struct mf_desc *d,
				      float **ret_params, double *ret_rmse,
				      struct px_error *err)
{
	struct ckpt_meta m;
	float *w, *v;
	enum px_err e = ckpt_read(path, &m, &w, &v, err);

	if (e != PX_OK)
		return e;
	free(v);
	data_prep_release(&m.prep);
	if (m.d.kind != MODEL_MF) {
		free(w);
		return px_errorf(err, PX_EINVAL, "checkpoint '%s' is of an %s "
				 "model, not a matrix factorization (mf)",
				 path, model_kind_name(m.d.kind));
	}
	*d = m.mf;
	*ret_params = w;
	*ret_rmse = m.test_accuracy;
	return PX_OK;
}

/* Metadata key as a number (NULL: absent), else an error. */
static enum px_err meta_num(const struct st_file *f, const char *path,
			    const char *key, bool need, double *ret,
			    struct px_error *err)
{
	const char *s = st_meta(f, key);
	char *end;

	if (!s && !need)
		return PX_OK;
	if (!s)
		return px_errorf(err, PX_EINVAL, "model file '%s': metadata "
				 "'%s' missing (an mf model needs it)", path,
				 key);
	*ret = strtod(s, &end);
	if (end == s || *end || !isfinite(*ret))
		return px_errorf(err, PX_EINVAL, "model file '%s': metadata "
				 "'%s' \"%.40s\": not a finite number", path,
				 key, s);
	return PX_OK;
}

/* The tensors' shapes: [U, R], [I, R], [U], [I], and nothing else. */
static enum px_err mf_shapes(const struct st_file *f, const char *path,
			     const struct st_tensor **t, struct px_error *err)
{
	for (uint32_t k = 0; k < 4; k++) {
		t[k] = st_find(f, tname[k]);
		if (!t[k])
			return px_errorf(err, PX_EINVAL, "model file '%s': no "
					 "tensor '%s' (an mf model has "
					 "user_factors, item_factors, "
					 "user_bias and item_bias)", path,
					 tname[k]);
		if (t[k]->ndim != (k < 2 ? 2u : 1u))
			return px_errorf(err, PX_EINVAL, "model file '%s': "
					 "tensor '%s' has %u dimensions, not "
					 "%u", path, tname[k], t[k]->ndim,
					 k < 2 ? 2 : 1);
	}
	if (f->n != 4)
		return px_errorf(err, PX_EINVAL, "model file '%s': %u tensors, "
				 "an mf model has 4 (%s, %s, %s, %s)", path,
				 f->n, tname[0], tname[1], tname[2], tname[3]);
	if (t[0]->shape[1] != t[1]->shape[1] ||
	    t[2]->shape[0] != t[0]->shape[0] ||
	    t[3]->shape[0] != t[1]->shape[0])
		return px_errorf(err, PX_EINVAL, "model file '%s': the shapes "
				 "do not agree: user_factors [%" PRIu64 ", %"
				 PRIu64 "], item_factors [%" PRIu64 ", %" PRIu64
				 "], user_bias [%" PRIu64 "], item_bias [%"
				 PRIu64 "]", path, t[0]->shape[0],
				 t[0]->shape[1], t[1]->shape[0], t[1]->shape[1],
				 t[2]->shape[0], t[3]->shape[0]);
	for (uint32_t k = 0; k < 4; k++)
		for (uint64_t i = 0; i < t[k]->n; i++)
			if (!isfinite(t[k]->data[i]))
				return px_errorf(err, PX_EINVAL, "model file "
						 "'%s': tensor '%s': element %"
						 PRIu64 " is not a finite "
						 "number", path, tname[k], i);
	return PX_OK;
}

/* What the metadata says of the model, each key but global_mean
 * optional, against the tensors. */
static enum px_err mf_meta(const struct st_file *f, const char *path,
			   const struct st_tensor *const *t, double *mean,
			   struct px_error *err)
{
	const char *ver = st_meta(f, "format_version");
	const char *model = st_meta(f, "model");
	const char *ids = st_meta(f, "ids");
	static const char *const key[3] = { "users", "items", "rank" };
	const uint64_t have[3] = { t[0]->shape[0], t[1]->shape[0],
				   t[0]->shape[1] };
	enum px_err e;

	if (ver && strcmp(ver, "1"))
		return px_errorf(err, PX_EINVAL, "model file '%s': metadata "
				 "'format_version' \"%s\": this build reads "
				 "%d", path, ver, EXPORT_VERSION);
	if (model && strcmp(model, "mf"))
		return px_errorf(err, PX_EINVAL, "model file '%s': metadata "
				 "'model' \"%s\", but the tensors are an mf "
				 "model's", path, model);
	if (ids && strcmp(ids, EXPORT_MF_IDS))
		return px_errorf(err, PX_EINVAL, "model file '%s': metadata "
				 "'ids' \"%.60s\": this build knows \"%s\" "
				 "alone", path, ids, EXPORT_MF_IDS);
	for (uint32_t k = 0; k < 3; k++) {
		double v = (double)have[k];

		e = meta_num(f, path, key[k], false, &v, err);
		if (e != PX_OK)
			return e;
		if (v != (double)have[k])
			return px_errorf(err, PX_EINVAL, "model file '%s': "
					 "metadata '%s' is %g, the tensors "
					 "make %" PRIu64, path, key[k], v,
					 have[k]);
	}
	e = meta_num(f, path, "global_mean", true, mean, err);
	if (e == PX_OK && fabs(*mean) > MF_RATING_MAX)
		e = px_errorf(err, PX_EINVAL, "model file '%s': metadata "
			      "'global_mean' %g: over the bound of 1e6", path,
			      *mean);
	return e;
}

static enum px_err mf_from_safetensors(const char *path, struct mf_desc *d,
				       float **ret_params, double *ret_rmse,
				       struct px_error *err)
{
	const struct st_tensor *t[4];
	struct st_file f;
	float *params = NULL;
	double mean = 0.0;
	enum px_err e;

	e = st_read(path, MF_MAX_PARAMS, &f, err);
	if (e != PX_OK)
		return e;
	e = mf_shapes(&f, path, t, err);
	if (e == PX_OK)
		e = mf_meta(&f, path, t, &mean, err);
	if (e == PX_OK && (t[0]->shape[0] > MF_MAX_ID + 1 ||
			   t[1]->shape[0] > MF_MAX_ID + 1 ||
			   t[0]->shape[1] > MF_MAX_RANK))
		e = px_errorf(err, PX_EINVAL, "model file '%s': %" PRIu64
			      " users, %" PRIu64 " items, rank %" PRIu64 ": "
			      "over the bounds (%u, %u, %u)", path,
			      t[0]->shape[0], t[1]->shape[0], t[0]->shape[1],
			      MF_MAX_ID + 1, MF_MAX_ID + 1, MF_MAX_RANK);
	if (e == PX_OK) {
		e = mf_desc_init(d, (uint32_t)t[0]->shape[0],
				 (uint32_t)t[1]->shape[0],
				 (uint32_t)t[0]->shape[1], mean, err);
		if (e != PX_OK)
			px_error_prefix(err, "model file '%s': ", path);
	}
	if (e == PX_OK) {
		params = px_calloc(d->n_params, sizeof(float));
		if (!params)
			e = px_errorf(err, PX_ENOMEM, "model file '%s': %zu "
				      "parameters", path, d->n_params);
	}
	for (size_t k = 0; e == PX_OK && k < (size_t)d->n_users + d->n_items;
	     k++) {
		bool user = k < d->n_users;
		size_t r = user ? k : k - d->n_users;

		memcpy(params + k * d->row, t[user ? 0 : 1]->data +
		       r * d->rank, d->rank * sizeof(float));
		params[k * d->row + d->rank] = t[user ? 2 : 3]->data[r];
	}
	*ret_rmse = NAN;
	if (e == PX_OK && st_meta(&f, "test_rmse"))
		e = meta_num(&f, path, "test_rmse", true, ret_rmse, err);
	st_file_release(&f);
	if (e != PX_OK) {
		free(params);
		return e;
	}
	*ret_params = params;
	return PX_OK;
}

enum px_err export_mf_load(const char *path, struct mf_desc *d,
			   float **ret_params, double *ret_test_rmse,
			   struct px_error *err)
{
	char c = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	bool ck = fd >= 0 && pread(fd, &c, 1, 0) == 1 && c == '{';

	if (fd >= 0)
		close(fd);
	*ret_params = NULL;
	return ck ? mf_from_checkpoint(path, d, ret_params, ret_test_rmse, err)
		  : mf_from_safetensors(path, d, ret_params, ret_test_rmse,
					err);
}
