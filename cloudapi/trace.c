/* trace.c -- streaming spot-price history reader: zlib -> yajl -> callback.
 *
 * The input goes through inflate (when it starts with the gzip magic)
 * in 64 KiB chunks into a yajl SAX parser whose callbacks fill one fixed
 * record and hand it on; nothing is allocated per record.
 */
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>

#define TRACE_CHUNK (64 * 1024)

/* Where the parser is in the document. */
enum trace_state {
	ST_TOP,        /* before the top-level object */
	ST_TOP_KEY,    /* in the top-level object, expecting a key */
	ST_HIST_START, /* after "SpotPriceHistory", expecting '[' */
	ST_HIST,       /* in the array, expecting a record or ']' */
	ST_REC_KEY,    /* in a record, expecting a key or '}' */
	ST_REC_VALUE,  /* in a record, expecting the value of field */
	ST_SKIP,       /* skipping an ignored value (skip_depth deep) */
	ST_DONE        /* after the top-level object */
};

/* The five record fields; also the bits of have. */
enum trace_field {
	F_ZONE,
	F_TYPE,
	F_PRODUCT,
	F_PRICE,
	F_TIME,
	F_MAX
};

static const char *const trace_field_names[F_MAX] = {
	[F_ZONE] = "AvailabilityZone",
	[F_TYPE] = "InstanceType",
	[F_PRODUCT] = "ProductDescription",
	[F_PRICE] = "SpotPrice",
	[F_TIME] = "Timestamp",
};

struct trace_parser {
	yajl_handle h;
	const char *name;         /* source name for errors */
	trace_record_fn fn;
	void *ctx;
	struct px_error *err;     /* caller's, may be NULL */
	enum px_err rc;           /* why a callback stopped the parse */
	struct px_error cb_err;   /* what the record callback said */

	enum trace_state state;
	enum trace_state skip_ret; /* state to return to after a skip */
	unsigned skip_depth;      /* open containers in the skipped value */
	enum trace_field field;   /* field whose value comes next */
	bool seen_history;        /* the SpotPriceHistory key was read */
	bool in_history;          /* inside its array: errors name a record */

	uint64_t base;            /* offset of the current chunk's first byte */
	uint64_t pos;             /* offset just past the last token seen */

	/* The record being built. */
	unsigned have;            /* bit per enum trace_field */
	char zone[TRACE_FIELD_MAX + 1];
	char type[TRACE_FIELD_MAX + 1];
	char product[TRACE_FIELD_MAX + 1];
	struct trace_record rec;

	struct trace_stats stats;
};

/* Offset just past the token being reported, in the whole JSON text. */
static uint64_t trace_here(struct trace_parser *p)
{
	p->pos = p->base + yajl_get_bytes_consumed(p->h);
	return p->pos;
}

static int trace_fail(struct trace_parser *p, enum px_err code,
		      const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Every callback starts here: note where the token ended, and refuse a
 * gap of more than TRACE_TOKEN_MAX bytes since the previous one (so a
 * giant token, or giant whitespace, fails the same wherever the chunks
 * split it).  Returns 0 after an error. */
static int trace_mark(struct trace_parser *p)
{
	uint64_t prev = p->pos;

	if (trace_here(p) - prev > TRACE_TOKEN_MAX) {
		p->pos = prev;
		return trace_fail(p, PX_ETOOBIG, "no token ends within %d "
				  "bytes", TRACE_TOKEN_MAX);
	}
	return 1;
}

/* Record an error about the current record (or the document when outside
 * the array) at the current token, and stop the parse. */
static int trace_fail(struct trace_parser *p, enum px_err code,
		      const char *fmt, ...)
{
	char msg[PX_ERRMSG_MAX];
	va_list ap;
	uint64_t at = p->pos;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->in_history)
		px_errorf(p->err, code, "%s: record %llu (byte %llu): %s",
			  p->name, (unsigned long long)p->stats.records,
			  (unsigned long long)at, msg);
	else
		px_errorf(p->err, code, "%s: byte %llu: %s", p->name,
			  (unsigned long long)at, msg);
	p->rc = code;
	return 0;
}

static const char *const trace_kind_names[] = {
	"a null", "a boolean", "a number", "a string", "an object", "an array"
};

enum trace_kind { K_NULL, K_BOOL, K_NUMBER, K_STRING, K_OBJECT, K_ARRAY };

/* A value of kind k arrived outside a record field or a skip. */
static int trace_unexpected(struct trace_parser *p, enum trace_kind k)
{
	switch (p->state) {
	case ST_TOP:
		return trace_fail(p, PX_EINVAL,
				  "top level is %s, not an object",
				  trace_kind_names[k]);
	case ST_HIST_START:
		return trace_fail(p, PX_EINVAL,
				  "'SpotPriceHistory' is %s, not an array",
				  trace_kind_names[k]);
	case ST_HIST:
		return trace_fail(p, PX_EINVAL, "record is %s, not an "
				  "object", trace_kind_names[k]);
	default:
		return trace_fail(p, PX_EINVAL, "unexpected %s",
				  trace_kind_names[k]);
	}
}

/* A value of kind k for record field p->field that is not a string (or
 * number, for the price). */
static int trace_bad_type(struct trace_parser *p, enum trace_kind k)
{
	return trace_fail(p, PX_EINVAL, "field '%s': expected a %s, got %s",
			  trace_field_names[p->field],
			  p->field == F_PRICE ? "string or number" : "string",
			  trace_kind_names[k]);
}

/* A scalar ended: finish a skip if it was the skipped value. */
static void trace_skip_scalar(struct trace_parser *p)
{
	if (p->skip_depth == 0)
		p->state = p->skip_ret;
}

/* s[0..len) (len <= TRACE_FIELD_MAX) as message text: escaped like every
 * read string a message shows (px_term_safe), so that a bad value can
 * neither break the one-line error nor reach a terminal raw; a NUL ends
 * it.  Returns buf. */
static const char *shown(const char *s, size_t len, char *buf, size_t blen)
{
	char raw[TRACE_FIELD_MAX + 1];

	memcpy(raw, s, len);
	raw[len] = '\0';
	return px_term_safe(raw, buf, blen);
}

static int trace_field_string(struct trace_parser *p, const char *s,
			      size_t len)
{
	enum trace_field f = p->field;
	char *dst = NULL;
	char q[PX_TERM_SAFE_LEN(TRACE_FIELD_MAX)];   /* messages' values */

	if (len > TRACE_FIELD_MAX)
		return trace_fail(p, PX_ETOOBIG, "field '%s': %zu bytes, over "
				  "the limit of %d", trace_field_names[f],
				  len, TRACE_FIELD_MAX);
	switch (f) {
	case F_ZONE:
		dst = p->zone;
		break;
	case F_TYPE:
		dst = p->type;
		break;
	case F_PRODUCT:
		dst = p->product;
		break;
	case F_PRICE:
		if (len > 0 && s[0] == '-')
			return trace_fail(p, PX_EINVAL, "field 'SpotPrice': "
					  "negative price '%s'",
					  shown(s, len, q, sizeof(q)));
		if (px_parse_usd(s, len, &p->rec.price_uusd) != PX_OK)
			return trace_fail(p, PX_EINVAL, "field 'SpotPrice': "
					  "bad price '%s'",
					  shown(s, len, q, sizeof(q)));
		break;
	case F_TIME:
		if (px_parse_time(s, len, &p->rec.t_s) != PX_OK)
			return trace_fail(p, PX_EINVAL, "field 'Timestamp': "
					  "bad time '%s'",
					  shown(s, len, q, sizeof(q)));
		break;
	case F_MAX:
		break;
	}
	if (dst) {
		if (len == 0)
			return trace_fail(p, PX_EINVAL, "field '%s': empty",
					  trace_field_names[f]);
		if (memchr(s, '\0', len))
			return trace_fail(p, PX_EINVAL, "field '%s': contains "
					  "a NUL", trace_field_names[f]);
		long at = px_ctrl_at(s, len);
		if (at >= 0) {
			/* a tab, newline or ESC would break tables and
			 * reach terminals: refused, shown escaped */
			char one[3] = {s[at], 0, 0}, c[8];

			if ((unsigned char)s[at] == 0xc2) /* a C1 control */
				one[1] = s[at + 1];
			px_term_safe(one, c, sizeof(c));
			memcpy(dst, s, len);
			dst[len] = '\0';
			return trace_fail(p, PX_EINVAL, "field '%s': control "
					  "character '%s' at byte %ld of "
					  "'%s'", trace_field_names[f], c, at,
					  px_term_safe(dst, q, sizeof(q)));
		}
		memcpy(dst, s, len);
		dst[len] = '\0';
	}
	p->have |= 1u << f;
	p->state = ST_REC_KEY;
	return 1;
}

static int cb_null(void *ctx)
{
	struct trace_parser *p = ctx;

	if (!trace_mark(p))
		return 0;
	if (p->state == ST_SKIP) {
		trace_skip_scalar(p);
		return 1;
	}
	if (p->state == ST_REC_VALUE)
		return trace_bad_type(p, K_NULL);
	return trace_unexpected(p, K_NULL);
}

static int cb_boolean(void *ctx, int v)
{
	struct trace_parser *p = ctx;

	if (!trace_mark(p))
		return 0;
	(void)v;
	if (p->state == ST_SKIP) {
		trace_skip_scalar(p);
		return 1;
	}
	if (p->state == ST_REC_VALUE)
		return trace_bad_type(p, K_BOOL);
	return trace_unexpected(p, K_BOOL);
}

static int cb_number(void *ctx, const char *s, size_t len)
{
	struct trace_parser *p = ctx;

	if (!trace_mark(p))
		return 0;
	if (p->state == ST_SKIP) {
		trace_skip_scalar(p);
		return 1;
	}
	if (p->state == ST_REC_VALUE) {
		if (p->field != F_PRICE)
			return trace_bad_type(p, K_NUMBER);
		return trace_field_string(p, s, len);
	}
	return trace_unexpected(p, K_NUMBER);
}

static int cb_string(void *ctx, const unsigned char *s, size_t len)
{
	struct trace_parser *p = ctx;

	if (!trace_mark(p))
		return 0;
	if (p->state == ST_SKIP) {
		trace_skip_scalar(p);
		return 1;
	}
	if (p->state == ST_REC_VALUE)
		return trace_field_string(p, (const char *)s, len);
	return trace_unexpected(p, K_STRING);
}

/* Start skipping the value that follows, then return to state ret. */
static void trace_skip_next(struct trace_parser *p, enum trace_state ret)
{
	p->state = ST_SKIP;
	p->skip_ret = ret;
	p->skip_depth = 0;
}

static bool key_is(const unsigned char *k, size_t len, const char *name,
		   size_t nlen)
{
	return len == nlen && memcmp(k, name, nlen) == 0;
}

#define KEY_IS(k, len, lit) key_is((k), (len), (lit), sizeof(lit) - 1)

static int cb_map_key(void *ctx, const unsigned char *k, size_t len)
{
	struct trace_parser *p = ctx;
	enum trace_field f;

	if (!trace_mark(p))
		return 0;
	if (p->state == ST_TOP_KEY) {
		if (!KEY_IS(k, len, "SpotPriceHistory")) {
			trace_skip_next(p, ST_TOP_KEY);
			return 1;
		}
		if (p->seen_history)
			return trace_fail(p, PX_EINVAL,
					  "duplicate 'SpotPriceHistory'");
		p->seen_history = true;
		p->state = ST_HIST_START;
		return 1;
	}
	if (p->state != ST_REC_KEY)
		return 1; /* a key inside a skipped object */

	/* The hot path: tell the five fields apart by length first. */
	switch (len) {
	case 9:
		if (KEY_IS(k, len, "SpotPrice"))
			f = F_PRICE;
		else if (KEY_IS(k, len, "Timestamp"))
			f = F_TIME;
		else
			goto unknown;
		break;
	case 12:
		if (!KEY_IS(k, len, "InstanceType"))
			goto unknown;
		f = F_TYPE;
		break;
	case 16:
		if (!KEY_IS(k, len, "AvailabilityZone"))
			goto unknown;
		f = F_ZONE;
		break;
	case 18:
		if (!KEY_IS(k, len, "ProductDescription"))
			goto unknown;
		f = F_PRODUCT;
		break;
	default:
		goto unknown;
	}
	p->field = f;
	if (p->have & (1u << f))
		return trace_fail(p, PX_EINVAL, "field '%s': duplicate",
				  trace_field_names[f]);
	p->state = ST_REC_VALUE;
	return 1;
unknown:
	trace_skip_next(p, ST_REC_KEY);
	return 1;
}

static int cb_start_map(void *ctx)
{
	struct trace_parser *p = ctx;

	if (!trace_mark(p))
		return 0;
	switch (p->state) {
	case ST_SKIP:
		p->skip_depth++;
		return 1;
	case ST_TOP:
		p->state = ST_TOP_KEY;
		return 1;
	case ST_HIST:
		p->have = 0;
		p->rec.offset = p->pos - 1;
		p->state = ST_REC_KEY;
		return 1;
	case ST_REC_VALUE:
		return trace_bad_type(p, K_OBJECT);
	default:
		return trace_unexpected(p, K_OBJECT);
	}
}

/* A record's '}': check it, deliver it. */
static int trace_end_record(struct trace_parser *p)
{
	struct trace_stats *st = &p->stats;
	enum px_err rc;

	if (p->have != (1u << F_MAX) - 1) {
		for (int f = 0; f < F_MAX; f++)
			if (!(p->have & (1u << f)))
				return trace_fail(p, PX_EINVAL,
						  "field '%s': missing",
						  trace_field_names[f]);
	}
	p->rec.zone = p->zone;
	p->rec.type = p->type;
	p->rec.product = p->product;
	p->rec.index = st->records;
	if (p->fn) {
		p->cb_err.code = PX_OK;
		p->cb_err.msg[0] = '\0';
		rc = p->fn(&p->rec, p->ctx, &p->cb_err);
		if (rc != PX_OK) {
			if (p->cb_err.msg[0])
				return trace_fail(p, rc, "%s", p->cb_err.msg);
			return trace_fail(p, rc, "stopped by the callback: %s",
					  px_strerror(rc));
		}
	}
	st->records++;
	if (p->rec.t_s < st->first_s)
		st->first_s = p->rec.t_s;
	if (p->rec.t_s > st->last_s)
		st->last_s = p->rec.t_s;
	p->state = ST_HIST;
	return 1;
}

static int cb_end_map(void *ctx)
{
	struct trace_parser *p = ctx;

	if (!trace_mark(p))
		return 0;
	switch (p->state) {
	case ST_SKIP:
		if (--p->skip_depth == 0)
			p->state = p->skip_ret;
		return 1;
	case ST_REC_KEY:
		return trace_end_record(p);
	case ST_TOP_KEY:
		if (!p->seen_history)
			return trace_fail(p, PX_EINVAL,
					  "no 'SpotPriceHistory' array");
		p->state = ST_DONE;
		return 1;
	default:
		/* yajl only reports '}' where one is valid */
		return trace_fail(p, PX_EINVAL, "unexpected '}'");
	}
}

static int cb_start_array(void *ctx)
{
	struct trace_parser *p = ctx;

	if (!trace_mark(p))
		return 0;
	switch (p->state) {
	case ST_SKIP:
		p->skip_depth++;
		return 1;
	case ST_HIST_START:
		p->state = ST_HIST;
		p->in_history = true;
		return 1;
	case ST_REC_VALUE:
		return trace_bad_type(p, K_ARRAY);
	default:
		return trace_unexpected(p, K_ARRAY);
	}
}

static int cb_end_array(void *ctx)
{
	struct trace_parser *p = ctx;

	if (!trace_mark(p))
		return 0;
	switch (p->state) {
	case ST_SKIP:
		if (--p->skip_depth == 0)
			p->state = p->skip_ret;
		return 1;
	case ST_HIST:
		p->state = ST_TOP_KEY;
		p->in_history = false;
		return 1;
	default:
		return trace_fail(p, PX_EINVAL, "unexpected ']'");
	}
}

static const yajl_callbacks trace_callbacks = {
	.yajl_null = cb_null,
	.yajl_boolean = cb_boolean,
	.yajl_number = cb_number,
	.yajl_string = cb_string,
	.yajl_start_map = cb_start_map,
	.yajl_map_key = cb_map_key,
	.yajl_end_map = cb_end_map,
	.yajl_start_array = cb_start_array,
	.yajl_end_array = cb_end_array,
};

/* Turn a yajl error into ours, without the caret dump and the newline. */
static enum px_err trace_json_error(struct trace_parser *p,
				    const unsigned char *chunk, size_t len,
				    uint64_t at)
{
	unsigned char *e = yajl_get_error(p->h, 0, chunk, len);
	const char *msg = e ? (const char *)e : "parse error";
	size_t n = strlen(msg);

	while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' ' ||
			 msg[n - 1] == '.'))
		n--;
	p->pos = at;
	if (p->in_history)
		px_errorf(p->err, PX_EINVAL, "%s: record %llu (byte %llu): "
			  "invalid JSON: %.*s", p->name,
			  (unsigned long long)p->stats.records,
			  (unsigned long long)at, (int)n, msg);
	else
		px_errorf(p->err, PX_EINVAL, "%s: byte %llu: invalid JSON: "
			  "%.*s", p->name, (unsigned long long)at, (int)n,
			  msg);
	if (e)
		yajl_free_error(p->h, e);
	return PX_EINVAL;
}

/* Feed len bytes of JSON text. */
static enum px_err trace_feed(struct trace_parser *p,
			      const unsigned char *buf, size_t len)
{
	yajl_status s = yajl_parse(p->h, buf, len);

	if (s == yajl_status_client_canceled)
		return p->rc;
	if (s != yajl_status_ok)
		return trace_json_error(p, buf, len,
					p->base + yajl_get_bytes_consumed(p->h));
	p->base += len;
	/* yajl buffers a token that spans chunks: bound it (p->pos moves at
	 * every callback that looks at it; tokens without one are short). */
	if (p->base - p->pos > TRACE_TOKEN_MAX) {
		px_errorf(p->err, PX_ETOOBIG, "%s: byte %llu: no token ends "
			  "within %d bytes", p->name,
			  (unsigned long long)p->pos, TRACE_TOKEN_MAX);
		return PX_ETOOBIG;
	}
	return PX_OK;
}

/* A source of raw (maybe compressed) bytes: an fd or a buffer. */
struct trace_src {
	int fd;                   /* -1 for a buffer */
	const unsigned char *buf;
	size_t len, off;
	const char *name;
	EVP_MD_CTX *md;           /* digest of the bytes read, or NULL */
	uint64_t total;           /* bytes read from fd */
};

/* Read up to cap bytes; 0 at the end. */
static enum px_err trace_src_read(struct trace_src *s, unsigned char *dst,
				  size_t cap, size_t *ret_n,
				  struct px_error *err)
{
	const struct px_guard *g = px_guard_get();

	if (s->fd < 0) {
		size_t n = s->len - s->off;

		if (n > cap)
			n = cap;
		memcpy(dst, s->buf + s->off, n);
		s->off += n;
		*ret_n = n;
		if (s->md && n)
			EVP_DigestUpdate(s->md, dst, n);
		return PX_OK;
	}
	/* a file read for someone else: bounded in time and size */
	if (px_guard_expired())
		return px_errorf(err, PX_ETIMEDOUT, "%s: still reading after "
				 "the time allowed; stopped", s->name);
	if (g && g->max_bytes && s->total > g->max_bytes)
		return px_errorf(err, PX_ETOOBIG, "%s: over the limit of "
				 "%llu bytes", s->name,
				 (unsigned long long)g->max_bytes);
	for (;;) {
		ssize_t r = read(s->fd, dst, cap);

		if (r >= 0) {
			s->total += (uint64_t)r;
			*ret_n = (size_t)r;
			if (s->md && r > 0)
				EVP_DigestUpdate(s->md, dst, (size_t)r);
			return PX_OK;
		}
		if (errno != EINTR)
			return px_errorf(err, PX_ESYS | errno, "%s: read: %s",
					 s->name, strerror(errno));
	}
}

static const unsigned char trace_gz_magic[2] = {0x1f, 0x8b};

/* Plain text: feed the first n bytes in buf, then the rest. */
static enum px_err trace_pump_plain(struct trace_parser *p,
				    struct trace_src *src, unsigned char *buf,
				    size_t n)
{
	enum px_err rc;

	while (n > 0) {
		rc = trace_feed(p, buf, n);
		if (rc != PX_OK)
			return rc;
		rc = trace_src_read(src, buf, TRACE_CHUNK, &n, p->err);
		if (rc != PX_OK)
			return rc;
	}
	return PX_OK;
}

/* gzip: inflate the first n bytes in in, then the rest, through out.  The
 * input must end exactly at the end of a member. */
static enum px_err trace_pump_gzip(struct trace_parser *p,
				   struct trace_src *src, unsigned char *in,
				   unsigned char *out, size_t n)
{
	struct px_error *err = p->err;
	z_stream z;
	bool drained = true; /* inflate left room in out: it wants input */
	enum px_err rc;
	int zr;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 32 + 15) != Z_OK)
		return px_errorf(err, PX_ENOMEM, "%s: out of memory",
				 src->name);
	z.next_in = in;
	z.avail_in = (uInt)n;
	for (;;) {
		if (z.avail_in == 0 && drained) {
			rc = trace_src_read(src, in, TRACE_CHUNK, &n, err);
			if (rc != PX_OK)
				goto out_end;
			if (n == 0) {
				rc = px_errorf(err, PX_EIO, "%s: truncated "
					       "gzip stream (after %llu bytes "
					       "of JSON)", src->name,
					       (unsigned long long)p->base);
				goto out_end;
			}
			z.next_in = in;
			z.avail_in = (uInt)n;
		}
		z.next_out = out;
		z.avail_out = TRACE_CHUNK;
		zr = inflate(&z, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
			rc = px_errorf(err, zr == Z_MEM_ERROR ? PX_ENOMEM :
				       PX_EIO, "%s: corrupt gzip stream: %s",
				       src->name, z.msg ? z.msg :
				       "inflate failed");
			goto out_end;
		}
		drained = z.avail_out > 0;
		rc = trace_feed(p, out, TRACE_CHUNK - z.avail_out);
		if (rc != PX_OK)
			goto out_end;
		if (zr != Z_STREAM_END)
			continue;
		/* Another gzip member may follow (as `cat a.gz b.gz`). */
		if (z.avail_in == 0) {
			rc = trace_src_read(src, in, TRACE_CHUNK, &n, err);
			if (rc != PX_OK)
				goto out_end;
			if (n == 0)
				break;
			z.next_in = in;
			z.avail_in = (uInt)n;
		}
		if (z.next_in[0] != trace_gz_magic[0]) {
			rc = px_errorf(err, PX_EIO, "%s: trailing bytes after "
				       "the gzip stream", src->name);
			goto out_end;
		}
		inflateReset(&z);
		drained = true;
	}
	rc = PX_OK;
out_end:
	inflateEnd(&z);
	return rc;
}

/* Read src to the end through the parser. */
static enum px_err trace_run(struct trace_src *src, unsigned flags,
			     trace_record_fn fn, void *ctx,
			     struct trace_stats *ret_stats,
			     struct px_error *err)
{
	struct trace_parser *p;
	unsigned char *in;
	size_t n = 0;
	enum px_err rc;

	p = px_calloc(1, sizeof(*p));
	in = px_calloc(2, TRACE_CHUNK);
	if (!p || !in) {
		rc = px_errorf(err, PX_ENOMEM, "%s: out of memory", src->name);
		goto out_free;
	}
	if (flags & TRACE_SHA256) {
		src->md = EVP_MD_CTX_new();
		if (!src->md ||
		    !EVP_DigestInit_ex(src->md, EVP_sha256(), NULL)) {
			rc = px_errorf(err, PX_ENOMEM, "%s: cannot start "
				       "sha256", src->name);
			goto out_free;
		}
	}
	p->name = src->name;
	p->fn = fn;
	p->ctx = ctx;
	p->err = err;
	p->state = ST_TOP;
	p->stats.first_s = INT64_MAX;
	p->stats.last_s = INT64_MIN;
	/* yajl's defaults refuse comments, trailing garbage, several
	 * top-level values and a partial document. */
	p->h = yajl_alloc(&trace_callbacks, NULL, p);
	if (!p->h) {
		rc = px_errorf(err, PX_ENOMEM, "%s: out of memory", src->name);
		goto out_free;
	}

	/* Read until the magic can be checked (a pipe may give 1 byte). */
	do {
		size_t m = 0;

		rc = trace_src_read(src, in + n, TRACE_CHUNK - n, &m, err);
		if (rc != PX_OK)
			goto out_yajl;
		if (m == 0)
			break;
		n += m;
	} while (n < 2);
	if (n == 0) {
		rc = px_errorf(err, PX_EINVAL, "%s: empty file", src->name);
		goto out_yajl;
	}
	if (n >= 2 && memcmp(in, trace_gz_magic, 2) == 0)
		rc = trace_pump_gzip(p, src, in, in + TRACE_CHUNK, n);
	else
		rc = trace_pump_plain(p, src, in, n);
	if (rc != PX_OK)
		goto out_yajl;
	/* The end of the top-level object checked SpotPriceHistory. */
	if (yajl_complete_parse(p->h) != yajl_status_ok) {
		rc = p->rc != PX_OK ? p->rc :
			trace_json_error(p, NULL, 0, p->base);
		goto out_yajl;
	}
	p->stats.bytes = p->base;
	if (src->md)
		EVP_DigestFinal_ex(src->md, p->stats.sha256, NULL);
	if (ret_stats)
		*ret_stats = p->stats;
	rc = PX_OK;
out_yajl:
	yajl_free(p->h);
out_free:
	EVP_MD_CTX_free(src->md);
	src->md = NULL;
	free(in);
	free(p);
	return rc;
}

enum px_err trace_read_buffer(const void *buf, size_t len, const char *name,
			      trace_record_fn fn, void *ctx,
			      struct trace_stats *ret_stats,
			      struct px_error *err)
{
	struct trace_src src = {
		.fd = -1, .buf = buf, .len = len, .name = name ? name : "buffer"
	};

	return trace_run(&src, 0, fn, ctx, ret_stats, err);
}

enum px_err trace_read_file(const char *path, trace_record_fn fn, void *ctx,
			    struct trace_stats *ret_stats,
			    struct px_error *err)
{
	return trace_read_file_flags(path, 0, fn, ctx, ret_stats, err);
}

enum px_err trace_read_file_flags(const char *path, unsigned flags,
				  trace_record_fn fn, void *ctx,
				  struct trace_stats *ret_stats,
				  struct px_error *err)
{
	struct trace_src src = {.fd = 0, .name = path};
	struct stat st;
	enum px_err rc;
	bool is_stdin = strcmp(path, "-") == 0;

	if (is_stdin) {
		src.name = "<stdin>";
	} else {
		src.fd = px_open_input(path, err);
		if (src.fd < 0)
			return err ? err->code : PX_EIO;
	}
	if (fstat(src.fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		rc = px_errorf(err, PX_ESYS | EISDIR, "%s: %s", src.name,
			       strerror(EISDIR));
		goto out_close;
	}
	rc = trace_run(&src, flags, fn, ctx, ret_stats, err);
out_close:
	if (!is_stdin)
		close(src.fd);
	return rc;
}

/* The region is the prefix <letters>(-<letters>)*-<digits>. */
enum px_err trace_zone_region(const char *zone, char *buf, size_t len)
{
	size_t i = 0;

	for (;;) {
		size_t start = i;

		while (zone[i] >= 'a' && zone[i] <= 'z')
			i++;
		if (i == start || zone[i] != '-')
			return PX_EINVAL;
		i++;
		if (zone[i] >= '0' && zone[i] <= '9')
			break;
	}
	while (zone[i] >= '0' && zone[i] <= '9')
		i++;
	if (zone[i] != '\0' && zone[i] != '-' &&
	    !(zone[i] >= 'a' && zone[i] <= 'z'))
		return PX_EINVAL;
	if (i >= len)
		return PX_ETOOBIG;
	memcpy(buf, zone, i);
	buf[i] = '\0';
	return PX_OK;
}
