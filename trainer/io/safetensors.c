/* safetensors.c -- the safetensors container, float32 only
 * (safetensors.h): written atomically, read with every field checked.
 */
#include "safetensors.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK 16384                 /* floats converted per write */
#define MAX_ELEMS (UINT64_C(1) << 60) /* of a tensor: its bytes fit */
#define META_KEY "__metadata__"

static enum px_err sys_err(struct px_error *err, const char *path,
			   const char *what)
{
	int e = errno;

	return px_errorf(err, PX_ESYS | e, "model file '%s': %s: %s", path,
			 what, strerror(e));
}

static const char *kind_of(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" :
	       S_ISSOCK(m) ? "a socket" : S_ISCHR(m) || S_ISBLK(m) ?
	       "a device" : "not a regular file";
}

/* What is at path now, if anything, must be a regular file: a rename
 * over a FIFO or a device would replace it, and a directory is a
 * mistake. */
static enum px_err check_target(const char *path, struct px_error *err)
{
	struct stat st;

	if (stat(path, &st) != 0 || S_ISREG(st.st_mode))
		return PX_OK;
	return px_errorf(err, PX_EINVAL, "model file '%s': %s, not a regular "
			 "file: refused", path, kind_of(st.st_mode));
}

enum px_err st_check_writable(const char *path, struct px_error *err)
{
	enum px_err e = check_target(path, err);
	struct px_atomic a;

	if (e != PX_OK)
		return e;
	/* what st_write does first: the same temporary file */
	if (px_atomic_open(&a, path, 0644) != 0)
		return errno == ENAMETOOLONG ?
		       px_errorf(err, PX_ETOOBIG, "model file '%.200s...': "
				 "path too long", path) :
		       sys_err(err, path, "cannot create a file in its folder");
	px_atomic_abort(&a);
	return PX_OK;
}

/* The header: "__metadata__" first, then each tensor at the next
 * offsets; padded with spaces to a multiple of 8.  NULL on OOM. */
static char *header(const struct st_tensor *t, uint32_t n, json_t *meta,
		    size_t *ret_len)
{
	json_t *h = json_object();
	uint64_t off = 0;
	size_t len, pad;
	char *s, *p;

	if (!h || (meta && json_object_set(h, META_KEY, meta))) {
		json_decref(h);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++) {
		json_t *shape = json_array();
		uint64_t end = off + t[i].n * sizeof(float);

		for (uint32_t k = 0; shape && k < t[i].ndim; k++)
			json_array_append_new(shape,
					      json_integer((json_int_t)
							   t[i].shape[k]));
		if (!shape || json_object_set_new(h, t[i].name, json_pack(
				"{s:s, s:o, s:[I, I]}", "dtype", "F32",
				"shape", shape, "data_offsets",
				(json_int_t)off, (json_int_t)end))) {
			json_decref(h);
			return NULL;
		}
		off = end;
	}
	s = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(h);
	if (!s)
		return NULL;
	len = strlen(s);
	pad = (8 - len % 8) % 8;
	p = realloc(s, len + pad + 1);
	if (!p) {
		free(s);
		return NULL;
	}
	memset(p + len, ' ', pad);
	p[len + pad] = '\0';
	*ret_len = len + pad;
	return p;
}

/* The names are unique and not the metadata's; the metadata's values
 * are strings; the sizes are what the shapes say. */
static enum px_err check_tensors(const char *path, const struct st_tensor *t,
				 uint32_t n, json_t *meta,
				 struct px_error *err)
{
	const char *k;
	json_t *v;

	if (n > ST_MAX_TENSORS)
		return px_errorf(err, PX_EINVAL, "model file '%s': %u tensors, "
				 "over %u", path, n, ST_MAX_TENSORS);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t e = 1;

		for (uint32_t d = 0; d < t[i].ndim && d < ST_MAX_DIMS; d++)
			e *= t[i].shape[d];
		if (!t[i].name[0] || !strcmp(t[i].name, META_KEY) ||
		    t[i].ndim > ST_MAX_DIMS || e != t[i].n)
			return px_errorf(err, PX_EINVAL, "model file '%s': "
					 "tensor %u ('%s'): a bad name or "
					 "shape", path, i, t[i].name);
		for (uint32_t j = 0; j < i; j++)
			if (!strcmp(t[i].name, t[j].name))
				return px_errorf(err, PX_EINVAL, "model file "
						 "'%s': tensor '%s' twice",
						 path, t[i].name);
	}
	if (meta && !json_is_object(meta))
		return px_errorf(err, PX_EINVAL, "model file '%s': metadata is "
				 "not an object", path);
	json_object_foreach(meta, k, v)
		if (!json_is_string(v))
			return px_errorf(err, PX_EINVAL, "model file '%s': "
					 "metadata '%s' is not a string (the "
					 "format's values are strings)", path,
					 k);
	return PX_OK;
}

static enum px_err put(FILE *f, const void *buf, size_t len,
		       const char *tmp, struct px_error *err)
{
	if (len && fwrite(buf, 1, len, f) != len)
		return sys_err(err, tmp, "write");
	return PX_OK;
}

/* The tensors' data, little-endian whatever the host. */
static enum px_err put_data(FILE *f, const struct st_tensor *t, uint32_t n,
			    const char *tmp, struct px_error *err)
{
	uint32_t buf[CHUNK];
	enum px_err e = PX_OK;

	for (uint32_t i = 0; e == PX_OK && i < n; i++)
		for (uint64_t o = 0; e == PX_OK && o < t[i].n; o += CHUNK) {
			uint64_t k = t[i].n - o < CHUNK ? t[i].n - o : CHUNK;

			memcpy(buf, t[i].data + o, k * sizeof(float));
			for (uint64_t j = 0; j < k; j++)
				buf[j] = htole32(buf[j]);
			e = put(f, buf, k * sizeof(float), tmp, err);
		}
	return e;
}

enum px_err st_write(const char *path, const struct st_tensor *t, uint32_t n,
		     json_t *meta, struct px_error *err)
{
	struct px_atomic a;
	size_t hlen = 0;
	uint64_t le;
	char *h = NULL;
	FILE *f = NULL;
	enum px_err e;
	int fd;

	e = check_tensors(path, t, n, meta, err);
	if (e == PX_OK)
		e = check_target(path, err);
	if (e != PX_OK)
		return e;
	h = header(t, n, meta, &hlen);
	if (!h)
		return px_errorf(err, PX_ENOMEM, "model file '%s': header",
				 path);
	/* a fresh name beside it, renamed over it (px_atomic_open) */
	if (px_atomic_open(&a, path, 0644) != 0) {
		e = errno == ENAMETOOLONG ?
		    px_errorf(err, PX_ETOOBIG, "model file '%.200s...': path "
			      "too long", path) :
		    sys_err(err, path, "create a file in its folder");
		goto out;
	}
	/* stdio on a copy of the descriptor: px_atomic_commit syncs and
	 * closes the file's own */
	fd = dup(a.fd);
	f = fd >= 0 ? fdopen(fd, "wb") : NULL;
	if (!f) {
		e = sys_err(err, a.tmp, "fdopen");
		if (fd >= 0)
			close(fd);
		goto out;
	}
	le = htole64((uint64_t)hlen);
	e = put(f, &le, sizeof(le), a.tmp, err);
	if (e == PX_OK)
		e = put(f, h, hlen, a.tmp, err);
	if (e == PX_OK)
		e = put_data(f, t, n, a.tmp, err);
	if (fclose(f) != 0 && e == PX_OK)
		e = sys_err(err, a.tmp, "write");
	if (e == PX_OK && px_atomic_commit(&a, path) != 0)
		e = sys_err(err, path, "write the new file over it");
out:
	px_atomic_abort(&a);     /* created, not renamed */
	free(h);
	return e;
}

/* ---- reading ---- */

static enum px_err read_exact(int fd, void *buf, size_t len, const char *path,
			      const char *what, struct px_error *err)
{
	ssize_t k = px_read_full(fd, buf, len);

	if (k < 0)
		return sys_err(err, path, what);
	if ((size_t)k < len)
		return px_errorf(err, PX_EINVAL, "model file '%s': ends "
				 "inside %s", path, what);
	return PX_OK;
}

/* A JSON integer in [0, max]. */
static bool get_u64(json_t *v, uint64_t max, uint64_t *ret)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > max)
		return false;
	*ret = (uint64_t)json_integer_value(v);
	return true;
}

/* One tensor's entry: exactly dtype "F32", shape, data_offsets whose
 * length is the shape's. */
static enum px_err parse_tensor(const char *path, const char *name, json_t *v,
				struct st_tensor *t, uint64_t *ret_begin,
				struct px_error *err)
{
	json_t *shape = json_object_get(v, "shape");
	json_t *offs = json_object_get(v, "data_offsets");
	const char *dt = json_string_value(json_object_get(v, "dtype"));
	uint64_t b, e;
	const char *k;
	json_t *x;

	if (strlen(name) >= ST_NAME_MAX || !name[0])
		return px_errorf(err, PX_EINVAL, "model file '%s': header: a "
				 "tensor's name of %zu bytes (1..%u)", path,
				 strlen(name), ST_NAME_MAX - 1);
	if (!json_is_object(v))
		return px_errorf(err, PX_EINVAL, "model file '%s': tensor '%s':"
				 " not an object", path, name);
	json_object_foreach(v, k, x)
		if (strcmp(k, "dtype") && strcmp(k, "shape") &&
		    strcmp(k, "data_offsets"))
			return px_errorf(err, PX_EINVAL, "model file '%s': "
					 "tensor '%s': unknown field '%s'",
					 path, name, k);
	if (!dt)
		return px_errorf(err, PX_EINVAL, "model file '%s': tensor '%s':"
				 " field 'dtype' missing or not a string",
				 path, name);
	if (strcmp(dt, "F32"))
		return px_errorf(err, PX_EINVAL, "model file '%s': tensor '%s':"
				 " dtype '%s': this reader takes F32 only",
				 path, name, dt);
	if (!json_is_array(shape) || json_array_size(shape) > ST_MAX_DIMS)
		return px_errorf(err, PX_EINVAL, "model file '%s': tensor '%s':"
				 " field 'shape': not an array of at most %u "
				 "sizes", path, name, ST_MAX_DIMS);
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->ndim = (uint32_t)json_array_size(shape);
	t->n = 1;
	for (uint32_t d = 0; d < t->ndim; d++) {
		if (!get_u64(json_array_get(shape, d), MAX_ELEMS, &t->shape[d]))
			return px_errorf(err, PX_EINVAL, "model file '%s': "
					 "tensor '%s': field 'shape[%u]': not "
					 "a size in 0..2^60", path, name, d);
		if (t->shape[d] && t->n > MAX_ELEMS / t->shape[d])
			return px_errorf(err, PX_EINVAL, "model file '%s': "
					 "tensor '%s': field 'shape': over "
					 "2^60 elements", path, name);
		t->n *= t->shape[d];
	}
	if (!json_is_array(offs) || json_array_size(offs) != 2 ||
	    !get_u64(json_array_get(offs, 0), UINT64_MAX >> 1, &b) ||
	    !get_u64(json_array_get(offs, 1), UINT64_MAX >> 1, &e) || e < b)
		return px_errorf(err, PX_EINVAL, "model file '%s': tensor '%s':"
				 " field 'data_offsets': not [begin, end] with "
				 "0 <= begin <= end", path, name);
	if (e - b != t->n * sizeof(float))
		return px_errorf(err, PX_EINVAL, "model file '%s': tensor '%s':"
				 " field 'data_offsets': [%" PRIu64 ", %" PRIu64
				 "] is %" PRIu64 " bytes, its shape makes %"
				 PRIu64 " (F32)", path, name, b, e, e - b,
				 t->n * (uint64_t)sizeof(float));
	*ret_begin = b;
	return PX_OK;
}

static enum px_err parse_meta(const char *path, json_t *v, struct st_file *f,
			      struct px_error *err)
{
	const char *k;
	json_t *x;

	if (!json_is_object(v))
		return px_errorf(err, PX_EINVAL, "model file '%s': field '"
				 META_KEY "': not an object", path);
	json_object_foreach(v, k, x)
		if (!json_is_string(x))
			return px_errorf(err, PX_EINVAL, "model file '%s': "
					 "field '" META_KEY ".%s': not a "
					 "string", path, k);
	f->meta = json_incref(v);
	return PX_OK;
}

/* The tensors sorted by where their data begins (begin[] alongside), then
 * checked to tile [0, buf_len) exactly. */
static enum px_err tile(const char *path, struct st_file *f, uint64_t *begin,
			uint64_t buf_len, struct px_error *err)
{
	uint64_t at = 0;

	for (uint32_t i = 1; i < f->n; i++)
		for (uint32_t j = i; j > 0 && begin[j - 1] > begin[j]; j--) {
			struct st_tensor t = f->t[j];
			uint64_t b = begin[j];

			f->t[j] = f->t[j - 1];
			begin[j] = begin[j - 1];
			f->t[j - 1] = t;
			begin[j - 1] = b;
		}
	for (uint32_t i = 0; i < f->n; i++) {
		if (begin[i] != at)
			return px_errorf(err, PX_EINVAL, "model file '%s': "
					 "tensor '%s': field 'data_offsets' "
					 "begins at %" PRIu64 ", not at %"
					 PRIu64 " where %s%s%s (%s)", path,
					 f->t[i].name, begin[i], at,
					 i ? "'" : "the data begins",
					 i ? f->t[i - 1].name : "",
					 i ? "' ends" : "", begin[i] > at ?
					 "a gap" : "an overlap");
		at += f->t[i].n * sizeof(float);
	}
	if (at != buf_len)
		return px_errorf(err, PX_EINVAL, "model file '%s': the tensors "
				 "end at byte %" PRIu64 " of the data, which "
				 "has %" PRIu64 " (%s)", path, at, buf_len,
				 at < buf_len ? "bytes after the last" :
				 "truncated");
	return PX_OK;
}

/* The header's JSON into f, the tensors checked and in data order. */
static enum px_err parse_header(const char *path, const char *h, uint64_t len,
				uint64_t buf_len, struct st_file *f,
				struct px_error *err)
{
	uint64_t begin[ST_MAX_TENSORS];
	enum px_err e = PX_OK;
	json_error_t je;
	const char *k;
	json_t *j, *v;

	if (h[0] != '{')
		return px_errorf(err, PX_EINVAL, "model file '%s': the header "
				 "does not begin with '{' (not a safetensors "
				 "file?)", path);
	j = json_loadb(h, (size_t)len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return px_errorf(err, PX_EINVAL, "model file '%s': header, byte "
				 "%d: %s", path, je.position, je.text);
	if (!json_is_object(j))
		e = px_errorf(err, PX_EINVAL, "model file '%s': the header is "
			      "not a JSON object", path);
	json_object_foreach(j, k, v) {
		if (e != PX_OK)
			break;
		if (!strcmp(k, META_KEY)) {
			e = parse_meta(path, v, f, err);
			continue;
		}
		if (f->n == ST_MAX_TENSORS) {
			e = px_errorf(err, PX_EINVAL, "model file '%s': over %u "
				      "tensors", path, ST_MAX_TENSORS);
			break;
		}
		e = parse_tensor(path, k, v, &f->t[f->n], &begin[f->n], err);
		f->n++;
	}
	json_decref(j);
	return e == PX_OK ? tile(path, f, begin, buf_len, err) : e;
}

enum px_err st_read(const char *path, uint64_t max_floats, struct st_file *f,
		    struct px_error *err)
{
	uint64_t hlen, buf_len, total = 0;
	char *h = NULL;
	struct stat st;
	enum px_err e;
	int fd;

	memset(f, 0, sizeof(*f));
	/* O_NONBLOCK: a FIFO named here must not hang the open */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT
			? px_errorf(err, PX_ENOENT, "model file '%s': no such "
				    "file", path)
			: sys_err(err, path, "open");
	if (fstat(fd, &st) != 0) {
		e = sys_err(err, path, "fstat");
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		e = px_errorf(err, PX_EINVAL, "model file '%s': %s, not a "
			      "regular file", path, kind_of(st.st_mode));
		goto out;
	}
	if (st.st_size < 8) {
		e = px_errorf(err, PX_EINVAL, "model file '%s': %jd bytes, "
			      "shorter than the header's 8-byte length (not a "
			      "safetensors file?)", path, (intmax_t)st.st_size);
		goto out;
	}
	e = read_exact(fd, &hlen, sizeof(hlen), path, "the header length",
		       err);
	if (e != PX_OK)
		goto out;
	hlen = le64toh(hlen);
	if (hlen < 2 || hlen > ST_HEADER_MAX) {
		e = px_errorf(err, PX_EINVAL, "model file '%s': header length "
			      "%" PRIu64 ", not in 2..%u (not a safetensors "
			      "file?)", path, hlen, ST_HEADER_MAX);
		goto out;
	}
	if (hlen > (uint64_t)st.st_size - 8) {
		e = px_errorf(err, PX_EINVAL, "model file '%s': header length "
			      "%" PRIu64 " is past the end of the file (%jd "
			      "bytes): truncated?", path, hlen,
			      (intmax_t)st.st_size);
		goto out;
	}
	buf_len = (uint64_t)st.st_size - 8 - hlen;
	h = malloc(hlen + 1);
	if (!h) {
		e = px_errorf(err, PX_ENOMEM, "model file '%s': header", path);
		goto out;
	}
	e = read_exact(fd, h, hlen, path, "the header", err);
	if (e != PX_OK)
		goto out;
	h[hlen] = '\0';
	e = parse_header(path, h, hlen, buf_len, f, err);
	if (e != PX_OK)
		goto out;
	total = buf_len / sizeof(float);
	if (total > max_floats) {
		e = px_errorf(err, PX_ETOOBIG, "model file '%s': %" PRIu64
			      " floats, over the %" PRIu64 " a model may have",
			      path, total, max_floats);
		goto out;
	}
	f->buf = px_calloc(total ? total : 1, sizeof(float));
	if (!f->buf) {
		e = px_errorf(err, PX_ENOMEM, "model file '%s': %" PRIu64
			      " floats", path, total);
		goto out;
	}
	e = read_exact(fd, f->buf, buf_len, path, "the tensors' data", err);
	for (uint64_t i = 0; e == PX_OK && i < total; i++) {
		uint32_t u;

		memcpy(&u, f->buf + i, sizeof(u));
		u = le32toh(u);
		memcpy(f->buf + i, &u, sizeof(u));
	}
	for (uint64_t i = 0, at = 0; e == PX_OK && i < f->n; i++) {
		f->t[i].data = f->buf + at;
		at += f->t[i].n;
	}
out:
	if (e != PX_OK)
		st_file_release(f);
	free(h);
	close(fd);
	return e;
}

const struct st_tensor *st_find(const struct st_file *f, const char *name)
{
	for (uint32_t i = 0; i < f->n; i++)
		if (!strcmp(f->t[i].name, name))
			return &f->t[i];
	return NULL;
}

const char *st_meta(const struct st_file *f, const char *key)
{
	return json_string_value(json_object_get(f->meta, key));
}

void st_file_release(struct st_file *f)
{
	json_decref(f->meta);
	free(f->buf);
	memset(f, 0, sizeof(*f));
}
