/* ckpt.c -- training checkpoints (ckpt.h): a JSON header line, two float32
 * arrays, a SHA-256; written atomically, read with every field checked.
 */
#include "ckpt.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DIGEST_LEN 32
#define CHUNK 16384 /* floats converted per write */

static enum px_err sys_err(struct px_error *err, const char *path,
			   const char *what)
{
	int e = errno;

	return px_errorf(err, PX_ESYS | e, "checkpoint '%s': %s: %s", path,
			 what, strerror(e));
}

/* fd, open on path, is a regular file (not a FIFO that would block, a
 * directory, a device): its size in *ret_size. */
static enum px_err check_regular(int fd, const char *path,
				 uint64_t *ret_size, struct px_error *err)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return sys_err(err, path, "fstat");
	if (!S_ISREG(st.st_mode))
		return px_errorf(err, PX_EINVAL, "checkpoint '%s': not a "
				 "regular file", path);
	*ret_size = (uint64_t)st.st_size;
	return PX_OK;
}

static enum px_err write_all(int fd, const void *buf, size_t len,
			     EVP_MD_CTX *md, const char *path,
			     struct px_error *err)
{
	const uint8_t *p = buf;

	if (md && EVP_DigestUpdate(md, buf, len) != 1)
		return px_errorf(err, PX_EIO, "checkpoint '%s': SHA-256",
				 path);
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return sys_err(err, path, "write");
		p += n;
		len -= (size_t)n;
	}
	return PX_OK;
}

/* n 32-bit words (floats or indices), little-endian on disk whatever
 * the host is. */
static enum px_err write_words(int fd, const void *f, uint64_t n,
			       EVP_MD_CTX *md, const char *path,
			       struct px_error *err)
{
	uint32_t buf[CHUNK];

	for (uint64_t i = 0; i < n; i += CHUNK) {
		uint64_t k = n - i < CHUNK ? n - i : CHUNK;
		enum px_err e;

		memcpy(buf, (const uint8_t *)f + 4 * i, k * sizeof(float));
		for (uint64_t j = 0; j < k; j++)
			buf[j] = htole32(buf[j]);
		e = write_all(fd, buf, k * sizeof(float), md, path, err);
		if (e != PX_OK)
			return e;
	}
	return PX_OK;
}

static enum px_err write_floats(int fd, const float *f, uint64_t n,
				EVP_MD_CTX *md, const char *path,
				struct px_error *err)
{
	return write_words(fd, f, n, md, path, err);
}

/* path.delta (ckpt.h) into buf. */
static enum px_err delta_name(char *buf, size_t len, const char *path,
			      struct px_error *err)
{
	if ((size_t)snprintf(buf, len, "%s.delta", path) >= len)
		return px_errorf(err, PX_ETOOBIG, "checkpoint path too long");
	return PX_OK;
}

/* The model's shape: the layers' widths, or an mf model's matrices. */
static json_t *shape_json(const struct ckpt_meta *m)
{
	json_t *hid;

	if (m->d.kind == MODEL_MF)
		return json_pack("{s:I, s:I, s:I, s:f, s:s}",
				 "users", (json_int_t)m->mf.n_users,
				 "items", (json_int_t)m->mf.n_items,
				 "rank", (json_int_t)m->mf.rank,
				 "mean", (double)m->mf.mean,
				 "ids", CKPT_MF_IDS);
	hid = json_array();
	for (uint32_t i = 0; hid && i + 1 < m->d.n_layers; i++)
		json_array_append_new(hid, json_integer(m->d.layer[i].out));
	return json_pack("{s:I, s:I, s:o}", "inputs", (json_int_t)m->d.n_in,
			 "classes", (json_int_t)m->d.n_out, "hidden", hid);
}

static char *header(const struct ckpt_meta *m)
{
	json_t *j, *shape = shape_json(m), *rest;
	char when[32];
	char *s;

	px_format_time(m->written_s, when, sizeof(when));
	j = json_pack("{s:s, s:i, s:s}", "format", CKPT_FORMAT, "version",
		      CKPT_VERSION, "model", model_kind_name(m->d.kind));
	rest = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, "
			 "s:s}",
			 "params", (json_int_t)m->d.n_params,
			 "clock", (json_int_t)m->clock,
			 "total", (json_int_t)m->total,
			 "workers", (json_int_t)m->workers,
			 "batch", (json_int_t)m->batch,
			 "epochs", (json_int_t)m->epochs,
			 "train_examples", (json_int_t)m->n_train,
			 "samples", (json_int_t)m->samples,
			 m->d.kind == MODEL_MF ? "test_rmse" : "test_accuracy",
			 isnan(m->test_accuracy) ? json_null()
				 : json_real(m->test_accuracy),
			 "written", when);
	if (!j || !shape || !rest || json_object_update(j, shape) ||
	    json_object_update(j, rest)) {
		json_decref(j);
		j = NULL;
	}
	json_decref(shape);
	json_decref(rest);
	if (j && m->prep.n_classes) {
		json_t *l = json_array();

		for (uint32_t i = 0; l && i < m->prep.n_classes; i++)
			json_array_append_new(l,
					      json_integer(m->prep.labels[i]));
		if (!l || json_object_set_new(j, "labels", l) ||
		    json_object_set_new(j, "scale", json_string(
				m->prep.mean ? "standard" : "none"))) {
			json_decref(j);
			return NULL;
		}
	}
	if (!j)
		return NULL;
	s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(j);
	return s;
}

void ckpt_meta_mf(struct ckpt_meta *m, const struct mf_desc *md)
{
	memset(&m->d, 0, sizeof(m->d));
	m->d.kind = MODEL_MF;
	m->d.n_params = md->n_params;
	m->mf = *md;
}

/* fsync the directory holding path, so that the rename is durable. */
static enum px_err sync_dir(const char *path, struct px_error *err)
{
	return px_fsync_parent(path) == 0 ? PX_OK :
	       sys_err(err, path, "fsync its directory");
}

/* The index of the first of n floats that is not finite, or n. */
static size_t first_not_finite(const float *f, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!isfinite(f[i]))
			break;
	return i;
}

/* A state with a number that is not finite is a diverged run's: no
 * checkpoint holds one, so none resumes one. */
static enum px_err check_finite(const char *path, const float *params,
				const float *momentum, size_t n,
				enum px_err code, struct px_error *err)
{
	size_t i = first_not_finite(params, n);
	const char *what = "parameter";

	if (i == n && momentum) {
		i = first_not_finite(momentum, n);
		what = "momentum";
	}
	if (i == n)
		return PX_OK;
	return px_errorf(err, code, "checkpoint '%s': %s %zu of %zu is not "
			 "a finite number (a diverged run's)", path, what,
			 i + 1, n);
}

/* ckpt_write, giving the file's SHA-256 (what its delta records name). */
static enum px_err write_full(const char *path, const struct ckpt_meta *m,
			      const float *params, const float *momentum,
			      uint8_t digest[DIGEST_LEN], struct px_error *err)
{
	char tmp[4200], dname[4200];
	EVP_MD_CTX *md = NULL;
	char *h = NULL;
	bool made = false;
	enum px_err e;
	int fd = -1;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >=
	    sizeof(tmp))
		return px_errorf(err, PX_ETOOBIG, "checkpoint path too long");
	e = check_finite(path, params, m->d.kind == MODEL_MF ? NULL : momentum,
			 m->d.n_params, (enum px_err)(PX_ESYS | ERANGE), err);
	if (e != PX_OK)
		return e;
	h = header(m);
	md = EVP_MD_CTX_new();
	if (!h || !md) {
		e = px_errorf(err, PX_ENOMEM, "checkpoint '%s'", path);
		goto out;
	}
	if (strlen(h) >= CKPT_HEADER_MAX) {
		e = px_errorf(err, PX_ETOOBIG, "checkpoint '%s': header of "
			      "%zu bytes", path, strlen(h));
		goto out;
	}
	if (EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
		e = px_errorf(err, PX_EIO, "checkpoint '%s': SHA-256", path);
		goto out;
	}
	/* a fresh name, O_EXCL, mode 0600: nothing planted there is used */
	fd = mkostemp(tmp, O_CLOEXEC);
	made = fd >= 0;
	if (fd < 0) {
		e = sys_err(err, tmp, "create");
		goto out;
	}
	e = write_all(fd, h, strlen(h), md, tmp, err);
	if (e == PX_OK)
		e = write_all(fd, "\n", 1, md, tmp, err);
	if (e == PX_OK)
		e = write_floats(fd, params, m->d.n_params, md, tmp, err);
	if (e == PX_OK && m->d.kind != MODEL_MF) /* mf: plain SGD */
		e = write_floats(fd, momentum, m->d.n_params, md, tmp, err);
	if (e == PX_OK && m->prep.mean)
		e = write_floats(fd, m->prep.mean, m->d.n_in, md, tmp, err);
	if (e == PX_OK && m->prep.mean)
		e = write_floats(fd, m->prep.std, m->d.n_in, md, tmp, err);
	if (e == PX_OK && EVP_DigestFinal_ex(md, digest, NULL) != 1)
		e = px_errorf(err, PX_EIO, "checkpoint '%s': SHA-256", path);
	if (e == PX_OK) {
		ssize_t n = write(fd, digest, DIGEST_LEN);

		if (n != DIGEST_LEN)
			e = n < 0 ? sys_err(err, tmp, "write")
				  : px_errorf(err, PX_EIO, "checkpoint '%s':"
					      " short write", tmp);
	}
	if (e == PX_OK && fsync(fd) != 0)
		e = sys_err(err, tmp, "fsync");
	if (close(fd) != 0 && e == PX_OK)
		e = sys_err(err, tmp, "close");
	fd = -1;
	if (e == PX_OK && rename(tmp, path) != 0)
		e = sys_err(err, path, "rename the new file over it");
	if (e == PX_OK)
		e = sync_dir(path, err);
	/* the records of the checkpoint before: stale (they name its
	 * SHA-256, and a reader would skip them) */
	if (e == PX_OK && delta_name(dname, sizeof(dname), path, err) == PX_OK)
		(void)unlink(dname);
out:
	if (fd >= 0)
		close(fd);
	if (e != PX_OK && made)
		(void)unlink(tmp); /* created, not renamed */
	EVP_MD_CTX_free(md);
	free(h);
	return e;
}

enum px_err ckpt_write(const char *path, const struct ckpt_meta *m,
		       const float *params, const float *momentum,
		       struct px_error *err)
{
	uint8_t digest[DIGEST_LEN];

	return write_full(path, m, params, momentum, digest, err);
}

enum px_err ckpt_check_writable(const char *path, struct px_error *err)
{
	char tmp[4200];
	struct stat st;
	int fd, e;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >=
	    sizeof(tmp))
		return px_errorf(err, PX_ETOOBIG, "checkpoint path too long");
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return px_errorf(err, PX_EINVAL, "checkpoint '%s': a directory, "
				 "not a file", path);
	/* what ckpt_write does first: the same name, the same flags */
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		return px_errorf(err, PX_ESYS | e, "checkpoint '%s': cannot "
				 "create a file in its directory: %s", path,
				 strerror(e));
	}
	close(fd);
	(void)unlink(tmp);
	return PX_OK;
}

/* Read exactly len bytes at the current offset, hashing them. */
static enum px_err read_exact(int fd, void *buf, size_t len, EVP_MD_CTX *md,
			      const char *path, const char *what,
			      struct px_error *err)
{
	ssize_t k = px_read_full(fd, buf, len);

	if (k < 0)
		return sys_err(err, path, what);
	if ((size_t)k < len)
		return px_errorf(err, PX_EINVAL, "checkpoint '%s': "
				 "ends inside %s", path, what);
	if (md && EVP_DigestUpdate(md, buf, len) != 1)
		return px_errorf(err, PX_EIO, "checkpoint '%s': SHA-256",
				 path);
	return PX_OK;
}

/* n 32-bit words from disk's little-endian, in place. */
static enum px_err read_words(int fd, void *f, uint64_t n, EVP_MD_CTX *md,
			      const char *path, const char *what,
			      struct px_error *err)
{
	enum px_err e = read_exact(fd, f, n * sizeof(float), md, path, what,
				   err);
	uint8_t *p = f;
	uint32_t u;

	for (uint64_t i = 0; e == PX_OK && i < n; i++) {
		memcpy(&u, p + 4 * i, sizeof(u));
		u = le32toh(u);
		memcpy(p + 4 * i, &u, sizeof(u));
	}
	return e;
}

static enum px_err read_floats(int fd, float *f, uint64_t n, EVP_MD_CTX *md,
			       const char *path, const char *what,
			       struct px_error *err)
{
	return read_words(fd, f, n, md, path, what, err);
}

/* An integer field in [lo, hi]. */
static enum px_err get_int(json_t *j, const char *path, const char *key,
			   int64_t lo, int64_t hi, int64_t *ret,
			   struct px_error *err)
{
	json_t *v = json_object_get(j, key);

	if (!v)
		return px_errorf(err, PX_EINVAL, "checkpoint '%s': header "
				 "field '%s' missing", path, key);
	if (!json_is_integer(v) || json_integer_value(v) < lo ||
	    json_integer_value(v) > hi)
		return px_errorf(err, PX_EINVAL, "checkpoint '%s': header "
				 "field '%s': not an integer in [%" PRId64
				 ", %" PRId64 "]", path, key, lo, hi);
	*ret = json_integer_value(v);
	return PX_OK;
}

/* "labels" (the value of each class, ascending) and "scale", when the
 * model is of the user's own data: into m->prep, less the scaling's
 * values (they follow the momentum). */
static enum px_err parse_prep(json_t *j, const char *path,
			      struct ckpt_meta *m, bool *ret_scaled,
			      struct px_error *err)
{
	json_t *l = json_object_get(j, "labels");
	const char *sc = json_string_value(json_object_get(j, "scale"));

	*ret_scaled = false;
	if (!l && !json_object_get(j, "scale"))
		return PX_OK;
	if (!json_is_array(l) || json_array_size(l) != m->d.n_out ||
	    m->d.n_out > DATA_MAX_CLASSES)
		return px_errorf(err, PX_EINVAL, "checkpoint '%s': header "
				 "field 'labels': not an array of 'classes' "
				 "(%u) labels", path, m->d.n_out);
	for (size_t i = 0; i < m->d.n_out; i++) {
		json_t *v = json_array_get(l, i);

		if (!json_is_integer(v) || json_integer_value(v) < INT32_MIN ||
		    json_integer_value(v) > INT32_MAX ||
		    (i && json_integer_value(v) <= m->prep.labels[i - 1]))
			return px_errorf(err, PX_EINVAL, "checkpoint '%s': "
					 "header field 'labels[%zu]': not a "
					 "32-bit integer above the one before",
					 path, i);
		m->prep.labels[i] = (int32_t)json_integer_value(v);
	}
	if (!sc || (strcmp(sc, "none") && strcmp(sc, "standard")))
		return px_errorf(err, PX_EINVAL, "checkpoint '%s': header "
				 "field 'scale': not \"none\" or "
				 "\"standard\"", path);
	m->prep.n_classes = m->d.n_out;
	m->prep.dim = m->d.n_in;
	*ret_scaled = !strcmp(sc, "standard");
	return PX_OK;
}

/* The layers' widths ("inputs", "classes", "hidden") into m->d. */
static enum px_err parse_layers(json_t *j, const char *path,
				enum model_kind kind, struct ckpt_meta *m,
				struct px_error *err)
{
	uint32_t hidden[MODEL_MAX_LAYERS - 1];
	int64_t in, out;
	json_t *hid;
	size_t nh;
	enum px_err e;

	e = get_int(j, path, "inputs", 1, MODEL_MAX_IN, &in, err);
	if (e == PX_OK)
		e = get_int(j, path, "classes", 2, MODEL_MAX_WIDTH, &out, err);
	if (e != PX_OK)
		return e;
	hid = json_object_get(j, "hidden");
	nh = json_array_size(hid);
	if (!json_is_array(hid) || nh > MODEL_MAX_LAYERS - 1)
		return px_errorf(err, PX_EINVAL, "checkpoint '%s': header "
				 "field 'hidden': not an array of at most %d "
				 "widths", path, MODEL_MAX_LAYERS - 1);
	for (size_t i = 0; i < nh; i++) {
		json_t *w = json_array_get(hid, i);

		if (!json_is_integer(w) || json_integer_value(w) < 1 ||
		    json_integer_value(w) > MODEL_MAX_WIDTH)
			return px_errorf(err, PX_EINVAL, "checkpoint '%s': "
					 "header field 'hidden[%zu]': not a "
					 "width in [1, %u]", path, i,
					 MODEL_MAX_WIDTH);
		hidden[i] = (uint32_t)json_integer_value(w);
	}
	e = model_desc_init(&m->d, kind, (uint32_t)in, (uint32_t)out, hidden,
			    (uint32_t)nh, err);
	if (e != PX_OK)
		px_error_prefix(err, "checkpoint '%s': the model: ", path);
	return e;
}

/* An mf model's shape ("users", "items", "rank", "mean", "ids") into
 * m->mf and m->d. */
static enum px_err parse_mf(json_t *j, const char *path, struct ckpt_meta *m,
			    struct px_error *err)
{
	const char *ids = json_string_value(json_object_get(j, "ids"));
	json_t *mean = json_object_get(j, "mean");
	int64_t users, items, rank;
	struct mf_desc md;
	enum px_err e;

	e = get_int(j, path, "users", 1, MF_MAX_ID + 1, &users, err);
	if (e == PX_OK)
		e = get_int(j, path, "items", 1, MF_MAX_ID + 1, &items, err);
	if (e == PX_OK)
		e = get_int(j, path, "rank", 1, MF_MAX_RANK, &rank, err);
	if (e != PX_OK)
		return e;
	if (!json_is_number(mean) || !isfinite(json_number_value(mean)) ||
	    fabs(json_number_value(mean)) > MF_RATING_MAX)
		return px_errorf(err, PX_EINVAL, "checkpoint '%s': header "
				 "field 'mean': not a rating (a finite number,"
				 " at most 1e6 either way)", path);
	if (!ids || strcmp(ids, CKPT_MF_IDS))
		return px_errorf(err, PX_EINVAL, "checkpoint '%s': header "
				 "field 'ids': not \"%s\" (the only map of "
				 "ids to rows this build knows)", path,
				 CKPT_MF_IDS);
	e = mf_desc_init(&md, (uint32_t)users, (uint32_t)items,
			 (uint32_t)rank, json_number_value(mean), err);
	if (e != PX_OK) {
		px_error_prefix(err, "checkpoint '%s': the model: ", path);
		return e;
	}
	ckpt_meta_mf(m, &md);
	return PX_OK;
}

static enum px_err parse_header(json_t *j, const char *path,
				struct ckpt_meta *m, struct px_error *err)
{
	const char *fmt, *model;
	enum model_kind kind;
	json_t *acc, *wr, *samples;
	int64_t v[8];
	enum px_err e;
	static const struct {
		const char *key;
		int64_t lo, hi;
	} f[] = {
		{ "version", 1, INT32_MAX },
		{ "params", 1, MODEL_MAX_PARAMS },
		{ "clock", 0, INT64_MAX },
		{ "total", 1, INT64_MAX },
		{ "workers", 1, UINT32_MAX },
		{ "batch", 1, MODEL_MAX_BATCH },
		{ "epochs", 1, UINT32_MAX },
		{ "train_examples", 1, UINT32_MAX },
	};

	fmt = json_string_value(json_object_get(j, "format"));
	if (!fmt || strcmp(fmt, CKPT_FORMAT) != 0)
		return px_errorf(err, PX_EINVAL, "checkpoint '%s': header "
				 "field 'format': not \"%s\"", path,
				 CKPT_FORMAT);
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		e = get_int(j, path, f[i].key, f[i].lo, f[i].hi, &v[i], err);
		if (e != PX_OK)
			return e;
	}
	if (v[0] != CKPT_VERSION)
		return px_errorf(err, PX_EINVAL, "checkpoint '%s': version "
				 "%" PRId64 ", this build reads %d", path,
				 v[0], CKPT_VERSION);
	model = json_string_value(json_object_get(j, "model"));
	if (!model)
		return px_errorf(err, PX_EINVAL, "checkpoint '%s': header "
				 "field 'model' missing or not a string",
				 path);
	e = model_kind_parse(model, &kind, err);
	if (e != PX_OK) {
		px_error_prefix(err, "checkpoint '%s': header field 'model': ",
				path);
		return e;
	}
	e = kind == MODEL_MF ? parse_mf(j, path, m, err)
			     : parse_layers(j, path, kind, m, err);
	if (e != PX_OK)
		return e;
	if ((int64_t)m->d.n_params != v[1])
		return px_errorf(err, PX_EINVAL, "checkpoint '%s': header "
				 "field 'params': %" PRId64 ", but the model "
				 "it names has %zu", path, v[1],
				 m->d.n_params);
	/* an elastic job may run past 'total' (its clocks at the initial
	 * workers) while fewer work, never past its clocks at one */
	if ((v[2] - 1) / v[4] + 1 > v[3] && v[2] > 0)
		return px_errorf(err, PX_EINVAL, "checkpoint '%s': header "
				 "field 'clock': %" PRId64 " is past 'total' %"
				 PRId64 " times 'workers' %" PRId64, path, v[2],
				 v[3], v[4]);
	m->clock = v[2];
	m->total = v[3];
	m->workers = (uint32_t)v[4];
	m->batch = (uint32_t)v[5];
	m->epochs = (uint32_t)v[6];
	m->n_train = (uint32_t)v[7];
	/* samples trained up to clock (0: not said, an older file) */
	samples = json_object_get(j, "samples");
	m->samples = json_is_integer(samples) &&
		     json_integer_value(samples) > 0 ?
			     (uint64_t)json_integer_value(samples) : 0;
	acc = json_object_get(j, kind == MODEL_MF ? "test_rmse"
						  : "test_accuracy");
	m->test_accuracy = json_is_number(acc) ? json_number_value(acc) : NAN;
	wr = json_object_get(j, "written");
	if (!json_is_string(wr) ||
	    px_parse_time(json_string_value(wr), json_string_length(wr),
			  &m->written_s) != PX_OK)
		m->written_s = 0; /* informative only */
	return PX_OK;
}

static enum px_err apply_deltas(const char *path, const uint8_t *base,
				struct ckpt_meta *m, float *w,
				struct px_error *err);

enum px_err ckpt_read(const char *path, struct ckpt_meta *m,
		      float **ret_params, float **ret_momentum,
		      struct px_error *err)
{
	uint8_t digest[DIGEST_LEN], want[DIGEST_LEN];
	char hbuf[CKPT_HEADER_MAX + 1];
	float *w = NULL, *v = NULL;
	EVP_MD_CTX *md = NULL;
	json_error_t je;
	size_t hlen = 0;
	json_t *j = NULL;
	uint64_t need, fsize;
	bool scaled = false;
	enum px_err e;
	ssize_t n;
	char *nl;
	int fd;

	*ret_params = *ret_momentum = NULL;
	memset(m, 0, sizeof(*m));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT
			? px_errorf(err, PX_ENOENT, "checkpoint '%s': no such "
				    "file", path)
			: sys_err(err, path, "open");
	e = check_regular(fd, path, &fsize, err);
	if (e != PX_OK)
		goto out;
	/* The header line: read what may hold it, find its end. */
	while (hlen < sizeof(hbuf) - 1) {
		n = read(fd, hbuf + hlen, sizeof(hbuf) - 1 - hlen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = sys_err(err, path, "read");
			goto out;
		}
		if (n == 0)
			break;
		hlen += (size_t)n;
	}
	hbuf[hlen] = '\0';
	nl = memchr(hbuf, '\n', hlen);
	if (!nl) {
		e = px_errorf(err, PX_EINVAL, "checkpoint '%s': no header "
			      "line in the first %d bytes (not a checkpoint?)",
			      path, CKPT_HEADER_MAX);
		goto out;
	}
	j = json_loadb(hbuf, (size_t)(nl - hbuf), 0, &je);
	if (!j || !json_is_object(j)) {
		e = px_errorf(err, PX_EINVAL, "checkpoint '%s': header, byte "
			      "%d: %s", path, j ? 0 : je.position,
			      j ? "not a JSON object" : je.text);
		goto out;
	}
	e = parse_header(j, path, m, err);
	if (e == PX_OK)
		e = parse_prep(j, path, m, &scaled, err);
	if (e != PX_OK)
		goto out;
	hlen = (size_t)(nl - hbuf) + 1;
	/* an mf model has no momentum */
	need = hlen + (m->d.kind == MODEL_MF ? 1 : 2) *
		      (uint64_t)m->d.n_params * sizeof(float) +
	       (scaled ? 2 * (uint64_t)m->d.n_in * sizeof(float) : 0) +
	       DIGEST_LEN;
	if (fsize != need) {
		e = px_errorf(err, PX_EINVAL, "checkpoint '%s': %jd bytes, "
			      "but its header (%zu parameters) makes it %"
			      PRIu64 ": truncated or damaged", path,
			      (intmax_t)fsize, m->d.n_params, need);
		goto out;
	}
	md = EVP_MD_CTX_new();
	w = px_calloc(m->d.n_params, sizeof(float));
	v = px_calloc(m->d.n_params, sizeof(float));
	if (scaled) {
		m->prep.mean = px_calloc(m->d.n_in, sizeof(float));
		m->prep.std = px_calloc(m->d.n_in, sizeof(float));
	}
	if (!md || !w || !v || (scaled && (!m->prep.mean || !m->prep.std))) {
		e = px_errorf(err, PX_ENOMEM, "checkpoint '%s': %zu "
			      "parameters", path, m->d.n_params);
		goto out;
	}
	if (EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(md, hbuf, hlen) != 1) {
		e = px_errorf(err, PX_EIO, "checkpoint '%s': SHA-256", path);
		goto out;
	}
	if (lseek(fd, (off_t)hlen, SEEK_SET) != (off_t)hlen) {
		e = sys_err(err, path, "seek");
		goto out;
	}
	e = read_floats(fd, w, m->d.n_params, md, path, "the parameters",
			err);
	if (e == PX_OK && m->d.kind != MODEL_MF)
		e = read_floats(fd, v, m->d.n_params, md, path,
				"the momentum", err);
	if (e == PX_OK && scaled)
		e = read_floats(fd, m->prep.mean, m->d.n_in, md, path,
				"the features' means", err);
	if (e == PX_OK && scaled)
		e = read_floats(fd, m->prep.std, m->d.n_in, md, path,
				"the features' deviations", err);
	if (e == PX_OK)
		e = read_exact(fd, want, DIGEST_LEN, NULL, path,
			       "the SHA-256", err);
	if (e != PX_OK)
		goto out;
	if (EVP_DigestFinal_ex(md, digest, NULL) != 1) {
		e = px_errorf(err, PX_EIO, "checkpoint '%s': SHA-256", path);
		goto out;
	}
	if (memcmp(digest, want, DIGEST_LEN) != 0) {
		e = px_errorf(err, PX_EINVAL, "checkpoint '%s': SHA-256 does "
			      "not match its contents: the file is damaged",
			      path);
		goto out;
	}
	e = check_finite(path, w, v, m->d.n_params, PX_EINVAL, err);
	for (uint32_t i = 0; e == PX_OK && scaled && i < m->d.n_in; i++)
		if (!isfinite(m->prep.mean[i]) || !(m->prep.std[i] > 0) ||
		    !isfinite(m->prep.std[i]))
			e = px_errorf(err, PX_EINVAL, "checkpoint '%s': the "
				      "scaling of feature %u is not a finite "
				      "mean and a deviation above 0", path,
				      i + 1);
	if (e != PX_OK)
		goto out;
	memcpy(m->sha256, digest, DIGEST_LEN);
	e = apply_deltas(path, digest, m, w, err);
	if (e != PX_OK)
		goto out;
	*ret_params = w;
	*ret_momentum = v;
	w = v = NULL;
out:
	if (e != PX_OK)
		data_prep_release(&m->prep);
	close(fd);
	json_decref(j);
	EVP_MD_CTX_free(md);
	free(w);
	free(v);
	return e;
}

enum px_err ckpt_check_job(const char *path, const struct ckpt_meta *have,
			   const struct ckpt_meta *want,
			   struct px_error *err)
{
	const struct {
		const char *what;
		uint64_t h, w;
	} f[] = {
		/* an mf model's shape first (zero for the others): its
		 * parameters follow from it */
		{ "users (mf: the training ratings' largest user id + 1)",
		  have->mf.n_users, want->mf.n_users },
		{ "items (mf: the largest item id + 1)", have->mf.n_items,
		  want->mf.n_items },
		{ "factors a row (--rank)", have->mf.rank, want->mf.rank },
		{ "inputs", have->d.n_in, want->d.n_in },
		{ "classes", have->d.n_out, want->d.n_out },
		{ "layers (--hidden)", have->d.n_layers, want->d.n_layers },
		{ "parameters (--hidden)", have->d.n_params,
		  want->d.n_params },
		{ "workers (--workers)", have->workers, want->workers },
		{ "batch (--batch)", have->batch, want->batch },
		{ "epochs (--epochs)", have->epochs, want->epochs },
		{ "training examples (--max-train)", have->n_train,
		  want->n_train },
		{ "total clocks", (uint64_t)have->total,
		  (uint64_t)want->total },
	};

	if (!data_prep_equal(&have->prep, &want->prep))
		return px_errorf(err, PX_EINVAL, "checkpoint '%s' is of a model "
				 "of other data: its labels (%u) or feature "
				 "scaling (%s) differ from this job's (%u, %s)",
				 path, have->prep.n_classes,
				 have->prep.mean ? "standard" : "none",
				 want->prep.n_classes,
				 want->prep.mean ? "standard" : "none");
	if (have->d.kind != want->d.kind)
		return px_errorf(err, PX_EINVAL, "checkpoint '%s' is of an %s"
				 " model, this job trains an %s (--model)",
				 path, model_kind_name(have->d.kind),
				 model_kind_name(want->d.kind));
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i].h != f[i].w)
			return px_errorf(err, PX_EINVAL, "checkpoint '%s' is "
					 "of a job with %" PRIu64 " %s, this "
					 "one has %" PRIu64, path, f[i].h,
					 f[i].what, f[i].w);
	if (have->mf.mean != want->mf.mean)
		return px_errorf(err, PX_EINVAL, "checkpoint '%s' is of a job "
				 "whose training ratings have the mean %.9g, "
				 "this one's have %.9g (other ratings)", path,
				 (double)have->mf.mean, (double)want->mf.mean);
	for (uint32_t i = 0; i < have->d.n_layers; i++)
		if (have->d.layer[i].out != want->d.layer[i].out)
			return px_errorf(err, PX_EINVAL, "checkpoint '%s': "
					 "layer %u has %u outputs, this job's "
					 "%u (--hidden)", path, i + 1,
					 have->d.layer[i].out,
					 want->d.layer[i].out);
	if (have->clock >= have->total)
		return px_errorf(err, PX_EINVAL, "checkpoint '%s' is of a "
				 "finished job (clock %" PRId64 " of %" PRId64
				 "): nothing to resume", path, have->clock,
				 have->total);
	return PX_OK;
}

/* ------------------------------------------------- incremental records */

#define DELTA_HEAD (8 + DIGEST_LEN + 8 + 8 + 4 + 4)

uint64_t ckpt_delta_capacity(uint64_t budget)
{
	return budget > CKPT_DELTA_FIXED ? (budget - CKPT_DELTA_FIXED) / 8
					 : 0;
}

/* n bytes of v at p, little-endian; and back. */
static void put_le(uint8_t *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Append one record to path.delta and sync it.  A record that cannot be
 * written whole is cut off again, so that what follows it is read. */
static enum px_err delta_append(const char *path, const uint8_t *base,
				const struct ckpt_meta *m, const uint32_t *idx,
				const float *val, uint32_t k,
				uint64_t *ret_bytes, struct px_error *err)
{
	uint8_t head[DELTA_HEAD], digest[DIGEST_LEN];
	char dname[4200];
	EVP_MD_CTX *md = NULL;
	uint64_t size;
	enum px_err e;
	int fd;

	e = delta_name(dname, sizeof(dname), path, err);
	if (e != PX_OK)
		return e;
	fd = open(dname, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC |
		  O_NOFOLLOW | O_NONBLOCK, 0600);
	if (fd < 0)
		return sys_err(err, dname, "open");
	e = check_regular(fd, dname, &size, err);
	if (e != PX_OK)
		goto out;
	memcpy(head, CKPT_DELTA_MAGIC, 8);
	memcpy(head + 8, base, DIGEST_LEN);
	put_le(head + 40, (uint64_t)m->clock, 8);
	put_le(head + 48, m->samples, 8);
	put_le(head + 56, k, 4);
	put_le(head + 60, 0, 4);
	md = EVP_MD_CTX_new();
	if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
		e = px_errorf(err, PX_EIO, "checkpoint '%s': SHA-256", dname);
		goto out;
	}
	e = write_all(fd, head, sizeof(head), md, dname, err);
	if (e == PX_OK)
		e = write_words(fd, idx, k, md, dname, err);
	if (e == PX_OK)
		e = write_floats(fd, val, k, md, dname, err);
	if (e == PX_OK && EVP_DigestFinal_ex(md, digest, NULL) != 1)
		e = px_errorf(err, PX_EIO, "checkpoint '%s': SHA-256", dname);
	if (e == PX_OK)
		e = write_all(fd, digest, DIGEST_LEN, NULL, dname, err);
	if (e == PX_OK && fdatasync(fd) != 0)
		e = sys_err(err, dname, "fdatasync");
	if (e != PX_OK)
		(void)!ftruncate(fd, (off_t)size);
	else
		*ret_bytes = sizeof(head) + 8 * (uint64_t)k + DIGEST_LEN;
out:
	EVP_MD_CTX_free(md);
	close(fd);
	return e;
}

/* Apply path.delta's records over w (the full checkpoint's parameters,
 * of SHA-256 base): ckpt.h. */
static enum px_err apply_deltas(const char *path, const uint8_t *base,
				struct ckpt_meta *m, float *w,
				struct px_error *err)
{
	uint64_t n = m->d.n_params, off = 0, size;
	uint8_t head[DELTA_HEAD], digest[DIGEST_LEN], want[DIGEST_LEN];
	uint32_t *idx = NULL;
	float *val = NULL;
	EVP_MD_CTX *md = NULL;
	char dname[4200];
	enum px_err e;
	int fd;

	e = delta_name(dname, sizeof(dname), path, err);
	if (e != PX_OK)
		return e;
	fd = open(dname, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR
			? PX_OK : sys_err(err, dname, "open");
	e = check_regular(fd, dname, &size, err);
	if (e != PX_OK)
		goto out;
	md = EVP_MD_CTX_new();
	idx = px_calloc(n ? n : 1, sizeof(*idx));
	val = px_calloc(n ? n : 1, sizeof(*val));
	if (!md || !idx || !val) {
		e = px_errorf(err, PX_ENOMEM, "checkpoint '%s'", dname);
		goto out;
	}
	for (uint32_t r = 1; size - off >= CKPT_DELTA_FIXED; r++) {
		uint64_t k, len;
		int64_t clock;

		if (EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
			e = px_errorf(err, PX_EIO, "checkpoint '%s': SHA-256",
				      dname);
			break;
		}
		e = read_exact(fd, head, sizeof(head), md, dname,
			       "a record's head", err);
		if (e != PX_OK)
			break;
		if (memcmp(head, CKPT_DELTA_MAGIC, 8) != 0) {
			e = px_errorf(err, PX_EINVAL, "checkpoint '%s': record"
				      " %u (byte %" PRIu64 "): not a record "
				      "of incremental checkpoints", dname, r,
				      off);
			break;
		}
		if (memcmp(head + 8, base, DIGEST_LEN) != 0) {
			if (r == 1)
				break; /* the records of an older full one */
			e = px_errorf(err, PX_EINVAL, "checkpoint '%s': record"
				      " %u (byte %" PRIu64 ") is of another "
				      "full checkpoint than the records "
				      "before it", dname, r, off);
			break;
		}
		clock = (int64_t)get_le(head + 40, 8);
		k = (uint32_t)get_le(head + 56, 4);
		len = CKPT_DELTA_FIXED + 8 * k;
		if (k > n || get_le(head + 60, 4) != 0) {
			e = px_errorf(err, PX_EINVAL, "checkpoint '%s': record"
				      " %u (byte %" PRIu64 "): %" PRIu64
				      " parameters of %" PRIu64, dname, r,
				      off, k, n);
			break;
		}
		if (len > size - off)
			break; /* cut short at the end: a crash appending */
		e = read_words(fd, idx, k, md, dname, "a record's indices",
			       err);
		if (e == PX_OK)
			e = read_floats(fd, val, k, md, dname,
					"a record's values", err);
		if (e == PX_OK)
			e = read_exact(fd, want, DIGEST_LEN, NULL, dname,
				       "a record's SHA-256", err);
		if (e != PX_OK)
			break;
		if (EVP_DigestFinal_ex(md, digest, NULL) != 1 ||
		    memcmp(digest, want, DIGEST_LEN) != 0) {
			if (off + len == size)
				break; /* the last, torn by a crash */
			e = px_errorf(err, PX_EINVAL, "checkpoint '%s': record"
				      " %u (byte %" PRIu64 "): SHA-256 does "
				      "not match its contents: the file is "
				      "damaged", dname, r, off);
			break;
		}
		if (clock < m->clock || clock > m->total) {
			e = px_errorf(err, PX_EINVAL, "checkpoint '%s': record"
				      " %u: clock %" PRId64 " is not within "
				      "[%" PRId64 ", %" PRId64 "]", dname, r,
				      clock, m->clock, m->total);
			break;
		}
		for (uint64_t i = 0; e == PX_OK && i < k; i++)
			if (idx[i] >= n || (i && idx[i] <= idx[i - 1]) ||
			    !isfinite(val[i]))
				e = px_errorf(err, PX_EINVAL, "checkpoint '%s':"
					      " record %u, pair %" PRIu64 ": "
					      "%s", dname, r, i + 1,
					      isfinite(val[i])
					      ? "index out of order or range"
					      : "not a finite number");
		if (e != PX_OK)
			break;
		for (uint64_t i = 0; i < k; i++)
			w[idx[i]] = val[i];
		m->clock = clock;
		m->samples = get_le(head + 48, 8);
		m->test_accuracy = NAN;
		m->deltas = r;
		off += len;
	}
out:
	EVP_MD_CTX_free(md);
	free(idx);
	free(val);
	close(fd);
	return e;
}

/* ----------------------------------------------------- the chain */

enum px_err ckpt_chain_init(struct ckpt_chain *ch, uint64_t n,
			    struct px_error *err)
{
	memset(ch, 0, sizeof(*ch));
	ch->n = n;
	ch->saved = px_calloc(n, sizeof(float));
	ch->mag = px_calloc(n, sizeof(float));
	ch->idx = px_calloc(n, sizeof(uint32_t));
	ch->val = px_calloc(n, sizeof(float));
	if (!ch->saved || !ch->mag || !ch->idx || !ch->val) {
		ckpt_chain_release(ch);
		return px_errorf(err, PX_ENOMEM, "checkpoints: %" PRIu64
				 " parameters", n);
	}
	return PX_OK;
}

void ckpt_chain_release(struct ckpt_chain *ch)
{
	free(ch->saved);
	free(ch->mag);
	free(ch->idx);
	free(ch->val);
	memset(ch, 0, sizeof(*ch));
}

void ckpt_chain_adopt(struct ckpt_chain *ch, const struct ckpt_meta *m,
		      const float *params)
{
	if (!ch->saved || m->d.n_params != ch->n)
		return;
	memcpy(ch->saved, params, ch->n * sizeof(float));
	memcpy(ch->base, m->sha256, DIGEST_LEN);
	ch->have_base = true;
	ch->since_full = m->deltas;
}

/* The k-th largest of a[0..n) (k in 1..n), reordering a (Hoare's
 * selection). */
static float kth_largest(float *a, uint64_t n, uint64_t k)
{
	int64_t lo = 0, hi = (int64_t)n - 1, want = (int64_t)k - 1;

	while (lo < hi) {
		float pivot = a[lo + (hi - lo) / 2];
		int64_t i = lo, j = hi;

		/* descending: the larger to the left */
		while (i <= j) {
			while (a[i] > pivot)
				i++;
			while (a[j] < pivot)
				j--;
			if (i <= j) {
				float t = a[i];

				a[i++] = a[j];
				a[j--] = t;
			}
		}
		/* a[lo..j] >= pivot >= a[i..hi]; between them, the pivot */
		if (want <= j)
			hi = j;
		else if (want >= i)
			lo = i;
		else
			break;
	}
	return a[want];
}

enum px_err ckpt_chain_write(struct ckpt_chain *ch, const char *path,
			     const struct ckpt_meta *m, const float *params,
			     const float *momentum, uint64_t budget,
			     bool full, uint64_t *ret_written,
			     uint64_t *ret_bytes, struct px_error *err)
{
	uint64_t cap = ckpt_delta_capacity(budget), nz = 0, gt = 0, k = 0;
	uint64_t n = ch->n;
	float t = 0;
	enum px_err e;

	if (full || !ch->have_base || !budget || m->d.n_params != n) {
		e = write_full(path, m, params, momentum, ch->base, err);
		if (e != PX_OK)
			return e;
		if (ch->saved && m->d.n_params == n)
			memcpy(ch->saved, params, n * sizeof(float));
		ch->have_base = ch->saved != NULL;
		ch->since_full = 0;
		*ret_written = n;
		*ret_bytes = 0;
		{
			struct stat st;

			if (stat(path, &st) == 0)
				*ret_bytes = (uint64_t)st.st_size;
		}
		return PX_OK;
	}
	e = check_finite(path, params, params, n,
			 (enum px_err)(PX_ESYS | ERANGE), err);
	if (e != PX_OK)
		return e;
	for (uint64_t i = 0; i < n; i++) {
		ch->mag[i] = fabsf(params[i] - ch->saved[i]);
		nz += ch->mag[i] > 0;
	}
	if (cap > UINT32_MAX)
		cap = UINT32_MAX;
	if (nz > cap && cap) {
		/* the cap-th largest change: all above it go, then as many
		 * equal to it as are left */
		memcpy(ch->val, ch->mag, n * sizeof(float));
		t = kth_largest(ch->val, n, cap);
		for (uint64_t i = 0; i < n; i++)
			gt += ch->mag[i] > t;
	}
	for (uint64_t i = 0, eq = cap - gt; i < n && k < cap; i++) {
		bool take;

		if (nz <= cap) {
			take = ch->mag[i] > 0;
		} else if (ch->mag[i] > t) {
			take = true;
		} else {
			take = ch->mag[i] == t && t > 0 && eq > 0;
			eq -= take;
		}
		if (take) {
			ch->idx[k] = (uint32_t)i;
			ch->val[k++] = params[i];
		}
	}
	e = delta_append(path, ch->base, m, ch->idx, ch->val, (uint32_t)k,
			 ret_bytes, err);
	if (e != PX_OK)
		return e;
	for (uint64_t i = 0; i < k; i++)
		ch->saved[ch->idx[i]] = ch->val[i];
	ch->since_full++;
	*ret_written = k;
	return PX_OK;
}
