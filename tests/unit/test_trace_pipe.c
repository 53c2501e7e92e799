/* test_trace_pipe.c -- the pipelined reader gives exactly what the plain
 * reader gives: same records in the same order, same stats, same errors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "../../cloudapi/trace.h"

struct digest {
	uint64_t n;
	uint64_t h;      /* order-sensitive hash of every field */
	uint64_t stop_at; /* fail at this record index (UINT64_MAX: never) */
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h;
}

static uint64_t str_hash(uint64_t h, const char *s)
{
	while (*s)
		h = mix(h, (unsigned char)*s++);
	return h;
}

static enum px_err digest_rec(const struct trace_record *r, void *arg,
			      struct px_error *err)
{
	struct digest *d = arg;

	if (r->index == d->stop_at)
		return px_errorf(err, PX_EINVAL, "field 'X': stop here");
	cr_assert_eq(r->index, d->n, "records out of order");
	d->h = str_hash(d->h, r->zone);
	d->h = str_hash(d->h, r->type);
	d->h = str_hash(d->h, r->product);
	d->h = mix(d->h, (uint64_t)r->t_s);
	d->h = mix(d->h, (uint64_t)r->price_uusd);
	d->h = mix(d->h, r->offset);
	d->n++;
	return PX_OK;
}

static void same_as_plain(const char *path, uint64_t expect)
{
	struct digest a = {.stop_at = UINT64_MAX}, b = {.stop_at = UINT64_MAX};
	struct trace_stats sa, sb;
	struct px_error err = {0};

	cr_assert_eq(trace_read_file(path, digest_rec, &a, &sa, &err), PX_OK,
		     "%s", err.msg);
	cr_assert_eq(trace_read_file_pipelined(path, 0, digest_rec, &b, &sb,
					       &err), PX_OK, "%s", err.msg);
	cr_assert_eq(a.n, expect);
	cr_assert_eq(b.n, a.n);
	cr_assert_eq(b.h, a.h, "pipelined records differ from plain ones");
	cr_assert_eq(sb.records, sa.records);
	cr_assert_eq(sb.bytes, sa.bytes);
	cr_assert_eq(sb.first_s, sa.first_s);
	cr_assert_eq(sb.last_s, sa.last_s);
}

Test(trace_pipe, small_fixture_identical)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/tests/data/ctl/small.json.gz",
		 getenv("PX_SRC") ? getenv("PX_SRC") : ".");
	same_as_plain(path, 4);
}

/* Many batches: the 2021 trace is 30,310 records, 15 batches. */
Test(trace_pipe, shared_trace_identical, .timeout = 60)
{
	char path[4096];

	snprintf(path, sizeof(path),
		 "%s/traces/us-east-1_2021-03_2021-05_linux.json.gz",
		 getenv("PX_SHARED") ? getenv("PX_SHARED") : "../shared");
	if (access(path, R_OK))
		cr_skip("shared traces not present");
	same_as_plain(path, 30310);
}

/* The consumer's error stops the reader and names the record. */
Test(trace_pipe, consumer_error_stops, .timeout = 60)
{
	char path[4096];
	struct digest d = {.stop_at = 5000};
	struct px_error err = {0};

	snprintf(path, sizeof(path),
		 "%s/traces/us-east-1_2021-03_2021-05_linux.json.gz",
		 getenv("PX_SHARED") ? getenv("PX_SHARED") : "../shared");
	if (access(path, R_OK))
		cr_skip("shared traces not present");
	cr_assert_eq(trace_read_file_pipelined(path, 0, digest_rec, &d, NULL,
					       &err), PX_EINVAL);
	cr_assert_eq(d.n, 5000);
	cr_assert(strstr(err.msg, "record 5000 (byte "), "%s", err.msg);
	cr_assert(strstr(err.msg, "field 'X': stop here"), "%s", err.msg);
	cr_assert(strstr(err.msg, "2021-05"), "%s", err.msg);
}

/* The reader's error comes back word for word. */
Test(trace_pipe, reader_error_identical)
{
	char path[4096];
	struct digest a = {.stop_at = UINT64_MAX}, b = {.stop_at = UINT64_MAX};
	struct px_error ea = {0}, eb = {0};
	enum px_err ra, rb;

	snprintf(path, sizeof(path), "%s/tests/data/ctl/bad-price.json",
		 getenv("PX_SRC") ? getenv("PX_SRC") : ".");
	ra = trace_read_file(path, digest_rec, &a, NULL, &ea);
	rb = trace_read_file_pipelined(path, 0, digest_rec, &b, NULL, &eb);
	cr_assert_eq(ra, PX_EINVAL);
	cr_assert_eq(rb, ra);
	cr_assert_str_eq(eb.msg, ea.msg);
	cr_assert_eq(b.n, 2, "records before the bad one are delivered");

	ra = trace_read_file("/nonexistent.json", digest_rec, &a, NULL, &ea);
	rb = trace_read_file_pipelined("/nonexistent.json", 0, digest_rec, &b,
				       NULL, &eb);
	cr_assert_eq(rb, ra);
	cr_assert_str_eq(eb.msg, ea.msg);
}

/* TRACE_SHA256: the digest of the bytes as read equals the file's SHA-256
 * computed in one go, for gzip and plain files, plain and pipelined. */
static void check_digest(const char *path)
{
	unsigned char want[EVP_MAX_MD_SIZE];
	unsigned int wlen = 0;
	struct trace_stats a, b;
	struct px_error err = {0};
	char *buf;
	size_t len;
	FILE *f = fopen(path, "rb");

	cr_assert_not_null(f, "%s", path);
	buf = malloc(1 << 20);
	cr_assert_not_null(buf);
	len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	cr_assert(len > 0 && len < (1 << 20));
	cr_assert(EVP_Digest(buf, len, want, &wlen, EVP_sha256(), NULL));
	free(buf);
	cr_assert_eq(wlen, TRACE_SHA256_LEN);
	cr_assert_eq(trace_read_file_flags(path, TRACE_SHA256, NULL, NULL, &a,
					   &err), PX_OK, "%s", err.msg);
	cr_assert_eq(memcmp(a.sha256, want, wlen), 0, "plain digest of %s",
		     path);
	cr_assert_eq(trace_read_file_pipelined(path, TRACE_SHA256, digest_rec,
					       &(struct digest){
						       .stop_at = UINT64_MAX},
					       &b, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(memcmp(b.sha256, want, wlen), 0,
		     "pipelined digest of %s", path);
}

Test(trace_pipe, sha256_of_bytes_read)
{
	char path[4096];
	const char *src = getenv("PX_SRC") ? getenv("PX_SRC") : ".";

	snprintf(path, sizeof(path), "%s/tests/data/ctl/small.json.gz", src);
	check_digest(path);
	snprintf(path, sizeof(path), "%s/tests/data/ctl/small.json", src);
	check_digest(path);
}
