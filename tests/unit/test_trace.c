/* test_trace.c -- the streaming spot-price trace reader: fixtures, the
 * shared real traces, gzip handling and every error path. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../../cloudapi/trace.h"
#include "../integration/pxrun.h"

#define KEEP_MAX 8

/* What the collecting callback saw. */
struct seen {
	uint64_t n;
	uint64_t stop_after;  /* stop (PX_ECANCELED) after this many; 0 never */
	struct {
		char zone[TRACE_FIELD_MAX + 1];
		char type[TRACE_FIELD_MAX + 1];
		char product[TRACE_FIELD_MAX + 1];
		int64_t t_s, price_uusd;
		uint64_t index, offset;
	} r[KEEP_MAX];
};

static enum px_err collect(const struct trace_record *rec, void *ctx,
			   struct px_error *err)
{
	struct seen *s = ctx;

	if (s->stop_after && s->n == s->stop_after)
		return px_errorf(err, PX_ECANCELED, "enough after %llu",
				 (unsigned long long)s->n);
	if (s->n < KEEP_MAX) {
		snprintf(s->r[s->n].zone, sizeof(s->r[0].zone), "%s",
			 rec->zone);
		snprintf(s->r[s->n].type, sizeof(s->r[0].type), "%s",
			 rec->type);
		snprintf(s->r[s->n].product, sizeof(s->r[0].product), "%s",
			 rec->product);
		s->r[s->n].t_s = rec->t_s;
		s->r[s->n].price_uusd = rec->price_uusd;
		s->r[s->n].index = rec->index;
		s->r[s->n].offset = rec->offset;
	}
	s->n++;
	return PX_OK;
}

static int64_t tm(const char *s)
{
	int64_t t = 0;

	cr_assert_eq(px_parse_time(s, strlen(s), &t), PX_OK, "time '%s'", s);
	return t;
}

static void data_path(char *buf, size_t len, const char *name)
{
	const char *src = getenv("PX_SRC");

	snprintf(buf, len, "%s/tests/data/trace/%s", src ? src : ".", name);
}

/* gzip src into a malloc'd buffer. */
static unsigned char *gz(const void *src, size_t len, size_t *ret_len)
{
	z_stream z;
	size_t cap = len + 1024;
	unsigned char *out = malloc(cap);

	cr_assert_not_null(out);
	memset(&z, 0, sizeof(z));
	cr_assert_eq(deflateInit2(&z, 6, Z_DEFLATED, 16 + 15, 8,
				  Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (unsigned char *)src;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	cr_assert_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
	*ret_len = cap - z.avail_out;
	deflateEnd(&z);
	return out;
}

/* Read a string; return the code and fill err and the seen records. */
static enum px_err rd(const char *json, struct seen *s, struct px_error *err)
{
	memset(s, 0, sizeof(*s));
	px_error_clear(err);
	return trace_read_buffer(json, strlen(json), "t.json", collect, s,
				 NULL, err);
}

/* Expect code and a message containing every one of the fragments. */
static void bad(const char *json, enum px_err code, const char *frag1,
		const char *frag2, const char *frag3)
{
	struct seen s;
	struct px_error err;
	enum px_err rc = rd(json, &s, &err);
	const char *frags[] = {frag1, frag2, frag3};

	cr_assert_eq(rc, code, "rc %d (%s), want %d for %s", rc, err.msg,
		     code, json);
	cr_assert_eq(err.code, code);
	cr_assert_eq(strncmp(err.msg, "t.json: ", 8), 0, "msg: %s", err.msg);
	cr_assert_null(strchr(err.msg, '\n'), "multi-line msg: %s", err.msg);
	for (int i = 0; i < 3; i++)
		if (frags[i])
			cr_assert_not_null(strstr(err.msg, frags[i]),
					   "'%s' not in '%s'", frags[i],
					   err.msg);
}

#define REC(zone, type, price, time) \
	"{\"AvailabilityZone\": " zone ", \"InstanceType\": " type \
	", \"ProductDescription\": \"Linux/UNIX\", \"SpotPrice\": " price \
	", \"Timestamp\": " time "}"
#define GOOD REC("\"us-east-1a\"", "\"c4.xlarge\"", "\"0.1\"", \
		 "\"2016-01-01T00:00:00.000Z\"")
#define DOC(recs) "{\"SpotPriceHistory\": [" recs "]}"

Test(trace, small_plain_fixture)
{
	char path[4096];
	struct seen s = {0};
	struct trace_stats st;
	struct px_error err = {0};
	size_t len;
	char *text;

	data_path(path, sizeof(path), "small.json");
	cr_assert_eq(trace_read_file(path, collect, &s, &st, &err), PX_OK,
		     "%s", err.msg);
	cr_assert_eq(s.n, 3);
	cr_assert_eq(st.records, 3);
	cr_assert_str_eq(s.r[0].zone, "us-east-1b");
	cr_assert_str_eq(s.r[0].type, "c4.xlarge");
	cr_assert_str_eq(s.r[0].product, "Linux/UNIX");
	cr_assert_eq(s.r[0].price_uusd, 230000);
	cr_assert_eq(s.r[0].t_s, tm("2016-02-24T21:10:53Z"));
	/* fields in another order, a number price, nested unknown fields */
	cr_assert_str_eq(s.r[1].zone, "us-east-1c");
	cr_assert_str_eq(s.r[1].type, "m1.small");
	cr_assert_str_eq(s.r[1].product, "Linux/UNIX (Amazon VPC)");
	cr_assert_eq(s.r[1].price_uusd, 7100);
	cr_assert_eq(s.r[2].price_uusd, 21000000);
	cr_assert_eq(st.first_s, tm("2016-02-24T21:10:53Z"));
	cr_assert_eq(st.last_s, tm("2016-03-01T00:00:00Z"));

	/* index and offset: each offset is that record's '{' */
	text = px_test_read_file(path, &len);
	cr_assert_not_null(text, "open %s", path);
	cr_assert_eq(st.bytes, len);
	const char *at = text;
	for (uint64_t i = 0; i < 3; i++) {
		at = strstr(at + 1, "\n        {");
		cr_assert_not_null(at);
		cr_assert_eq(s.r[i].index, i);
		cr_assert_eq(s.r[i].offset, (uint64_t)(at - text) + 9,
			     "record %llu offset %llu",
			     (unsigned long long)i,
			     (unsigned long long)s.r[i].offset);
		cr_assert_eq(text[s.r[i].offset], '{');
	}
	free(text);
}

Test(trace, gzip_same_as_plain)
{
	char p1[4096], p2[4096];
	struct seen a = {0}, b = {0};
	struct trace_stats sa, sb;
	struct px_error err = {0};

	data_path(p1, sizeof(p1), "small.json");
	data_path(p2, sizeof(p2), "small.json.gz");
	cr_assert_eq(trace_read_file(p1, collect, &a, &sa, &err), PX_OK);
	cr_assert_eq(trace_read_file(p2, collect, &b, &sb, &err), PX_OK,
		     "%s", err.msg);
	cr_assert_eq(b.n, 3);
	cr_assert_eq(memcmp(&a, &b, sizeof(a)), 0);
	cr_assert_eq(memcmp(&sa, &sb, sizeof(sa)), 0);
}

Test(trace, gzip_buffer_and_members)
{
	const char *json = DOC(GOOD "," GOOD "," GOOD);
	size_t len = strlen(json), h = len / 2, n1, n2, nz;
	unsigned char *g1 = gz(json, h, &n1), *g2 = gz(json + h, len - h,
						      &n2);
	unsigned char *cat = malloc(n1 + n2 + 1);
	struct seen s = {0};
	struct trace_stats st;
	struct px_error err = {0};

	/* two gzip members, as `cat a.gz b.gz`, split mid-record */
	memcpy(cat, g1, n1);
	memcpy(cat + n1, g2, n2);
	cr_assert_eq(trace_read_buffer(cat, n1 + n2, "cat.gz", collect, &s,
				       &st, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(s.n, 3);
	cr_assert_eq(st.bytes, len);

	/* a byte after the last member that does not start another one */
	cat[n1 + n2] = 'x';
	cr_assert_eq(trace_read_buffer(cat, n1 + n2 + 1, "cat.gz", collect,
				       &s, NULL, &err), PX_EIO);
	cr_assert_not_null(strstr(err.msg, "cat.gz: trailing bytes"), "%s",
			   err.msg);
	free(cat);
	free(g1);
	free(g2);

	/* corrupt data (a flipped byte in the deflate body or the CRC) */
	unsigned char *z = gz(json, len, &nz);
	z[nz - 6] ^= 0x55;
	cr_assert_eq(trace_read_buffer(z, nz, "bad.gz", collect, &s, NULL,
				       &err), PX_EIO, "%s", err.msg);
	cr_assert_not_null(strstr(err.msg, "bad.gz: corrupt gzip"), "%s",
			   err.msg);
	free(z);
}

/* Decompressed sizes at and around the 64 KiB chunk size: the end of the
 * stream must be seen even when the last output exactly fills a chunk. */
Test(trace, gzip_chunk_boundaries)
{
	static const size_t sizes[] = {65535, 65536, 65537, 131072, 196608};
	const char *head = "{\"SpotPriceHistory\": [" GOOD "]";
	size_t hl = strlen(head);

	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		size_t len = sizes[i], zn;
		char *json = malloc(len);
		struct seen s = {0};
		struct trace_stats st;
		struct px_error err = {0};

		/* whitespace padding, in runs shorter than TRACE_TOKEN_MAX */
		memcpy(json, head, hl);
		memset(json + hl, ' ', len - hl - 1);
		for (size_t k = hl + 1000; k < len - 1; k += 30000)
			memcpy(json + k, ",\"x\":1", 6);
		json[len - 1] = '}';
		unsigned char *z = gz(json, len, &zn);
		cr_assert_eq(trace_read_buffer(z, zn, "b.gz", collect, &s,
					       &st, &err), PX_OK,
			     "size %zu: %s", len, err.msg);
		cr_assert_eq(s.n, 1);
		cr_assert_eq(st.bytes, len);
		free(z);
		free(json);
	}
}

Test(trace, truncated_gzip_is_eio)
{
	char path[4096], tmp[] = "/tmp/px_trace_XXXXXX";
	size_t len;
	char *g;
	struct seen s = {0};
	struct px_error err = {0};
	int fd;

	data_path(path, sizeof(path), "small.json.gz");
	g = px_test_read_file(path, &len);
	cr_assert_not_null(g, "open %s", path);
	/* cut anywhere: before the JSON ends, inside the CRC trailer */
	size_t cuts[] = {len / 2, len - 8, len - 1, 12};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		memset(&s, 0, sizeof(s));
		cr_assert_eq(trace_read_buffer(g, cuts[i], "cut.gz", collect,
					       &s, NULL, &err), PX_EIO,
			     "cut at %zu: %s", cuts[i], err.msg);
		cr_assert_not_null(strstr(err.msg, "cut.gz: truncated gzip"),
				   "%s", err.msg);
	}
	/* and through a file */
	fd = mkstemp(tmp);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, g, len - 4), (ssize_t)(len - 4));
	close(fd);
	cr_assert_eq(trace_read_file(tmp, collect, &s, NULL, &err), PX_EIO);
	cr_assert_not_null(strstr(err.msg, "truncated gzip"), "%s", err.msg);
	unlink(tmp);
	free(g);
}

Test(trace, newest_first_order)
{
	char path[4096];
	struct seen s = {0};
	struct trace_stats st;
	struct px_error err = {0};

	data_path(path, sizeof(path), "newest_first.json");
	cr_assert_eq(trace_read_file(path, collect, &s, &st, &err), PX_OK,
		     "%s", err.msg);
	cr_assert_eq(s.n, 3);
	cr_assert_gt(s.r[0].t_s, s.r[1].t_s);
	cr_assert_gt(s.r[1].t_s, s.r[2].t_s);
	cr_assert_eq(st.first_s, tm("2015-03-11T10:34:42Z"));
	cr_assert_eq(st.last_s, tm("2015-08-31T23:59:13Z"));
	cr_assert_eq(s.r[1].price_uusd, 2100000);
}

Test(trace, empty_history_and_stats)
{
	struct trace_stats st;
	struct px_error err;
	const char *json = "{\"NextToken\": null, \"SpotPriceHistory\": []}";

	cr_assert_eq(trace_read_buffer(json, strlen(json), "e", NULL, NULL,
				       &st, &err), PX_OK);
	cr_assert_eq(st.records, 0);
	cr_assert_eq(st.first_s, INT64_MAX);
	cr_assert_eq(st.last_s, INT64_MIN);
	cr_assert_eq(st.bytes, strlen(json));
}

Test(trace, callback_stop)
{
	struct seen s = {0};
	struct trace_stats st = {.records = 77};
	struct px_error err = {0};
	const char *json = DOC(GOOD "," GOOD "," GOOD "," GOOD);

	s.stop_after = 2;
	cr_assert_eq(trace_read_buffer(json, strlen(json), "t.json", collect,
				       &s, &st, &err), PX_ECANCELED);
	cr_assert_eq(s.n, 2);
	cr_assert_eq(st.records, 77, "stats written on failure");
	cr_assert_eq(err.code, PX_ECANCELED);
	cr_assert_not_null(strstr(err.msg, "t.json: record 2 (byte "), "%s",
			   err.msg);
	cr_assert_not_null(strstr(err.msg, "enough after 2"), "%s", err.msg);
}

Test(trace, exact_error_message)
{
	/* the byte is just past the offending token "-0.5" */
	bad("{\"SpotPriceHistory\": [{\"SpotPrice\": \"-0.5\"}]}", PX_EINVAL,
	    "t.json: record 0 (byte 42): field 'SpotPrice': negative price",
	    NULL, NULL);
}

Test(trace, field_errors)
{
	bad(DOC(GOOD "," REC("\"us-east-1a\"", "\"c4.xlarge\"", "{}",
			     "\"2016-01-01\"")),
	    PX_EINVAL, "record 1 (byte ", "field 'SpotPrice'",
	    "expected a string or number, got an object");
	bad(DOC(REC("\"us-east-1a\"", "\"c4.xlarge\"", "true",
		    "\"2016-01-01\"")),
	    PX_EINVAL, "record 0", "field 'SpotPrice'", "got a boolean");
	bad(DOC(REC("\"us-east-1a\"", "\"c4.xlarge\"", "[1]",
		    "\"2016-01-01\"")),
	    PX_EINVAL, "field 'SpotPrice'", "got an array", NULL);
	bad(DOC(REC("\"us-east-1a\"", "\"c4.xlarge\"", "null",
		    "\"2016-01-01\"")),
	    PX_EINVAL, "field 'SpotPrice'", "got a null", NULL);
	bad(DOC(REC("\"us-east-1a\"", "5", "\"1\"", "\"2016-01-01\"")),
	    PX_EINVAL, "field 'InstanceType'", "expected a string, got a "
	    "number", NULL);
	bad(DOC(GOOD "," GOOD "," REC("\"us-east-1a\"", "\"c4.xlarge\"",
				      "\"-0.1\"", "\"2016-01-01\"")),
	    PX_EINVAL, "record 2", "field 'SpotPrice'", "negative price");
	bad(DOC(REC("\"us-east-1a\"", "\"c4.xlarge\"", "-0.1",
		    "\"2016-01-01\"")),
	    PX_EINVAL, "field 'SpotPrice'", "negative price", NULL);
	bad(DOC(REC("\"us-east-1a\"", "\"c4.xlarge\"", "\"abc\"",
		    "\"2016-01-01\"")),
	    PX_EINVAL, "field 'SpotPrice'", "bad price 'abc'", NULL);
	bad(DOC(REC("\"us-east-1a\"", "\"c4.xlarge\"", "1e3",
		    "\"2016-01-01\"")),
	    PX_EINVAL, "field 'SpotPrice'", "bad price '1e3'", NULL);
	/* a bad value is shown escaped: the message stays one line (bad()
	 * checks) and no control byte reaches a terminal (found by
	 * fuzz_trace: a time with "\n" made a two-line message) */
	bad(DOC(REC("\"us-east-1a\"", "\"c4.xlarge\"", "\"0.1\"",
		    "\"5920--JT12:0k\\n\"")),
	    PX_EINVAL, "field 'Timestamp'", "bad time '5920--JT12:0k\\n'",
	    NULL);
	bad(DOC(REC("\"us-east-1a\"", "\"c4.xlarge\"", "\"1\\u001b[2J\"",
		    "\"2016-01-01\"")),
	    PX_EINVAL, "field 'SpotPrice'", "bad price '1\\x1b[2J'", NULL);
	bad(DOC(REC("\"us-east-1a\"", "\"c4.xlarge\"", "\"-1\\t\"",
		    "\"2016-01-01\"")),
	    PX_EINVAL, "field 'SpotPrice'", "negative price '-1\\t'", NULL);
	bad(DOC(REC("\"us-east-1a\"", "\"c4.xlarge\"", "\"\"",
		    "\"2016-01-01\"")),
	    PX_EINVAL, "field 'SpotPrice'", "bad price ''", NULL);
	bad(DOC(REC("\"us-east-1a\"", "\"c4.xlarge\"", "\"0.1\"",
		    "\"2016-13-01T00:00:00Z\"")),
	    PX_EINVAL, "record 0", "field 'Timestamp'", "bad time");
	bad(DOC(REC("\"us-east-1a\"", "\"c4.xlarge\"", "\"0.1\"",
		    "1456348253")),
	    PX_EINVAL, "field 'Timestamp'", "expected a string", NULL);
	bad(DOC(GOOD "," REC("\"\"", "\"c4.xlarge\"", "\"0.1\"",
			     "\"2016-01-01\"")),
	    PX_EINVAL, "record 1", "field 'AvailabilityZone': empty", NULL);
	bad(DOC(REC("\"us-east-1a\"", "\"\"", "\"0.1\"", "\"2016-01-01\"")),
	    PX_EINVAL, "record 0", "field 'InstanceType': empty", NULL);
	bad(DOC(REC("\"us-east-1a\\u0000\"", "\"c4\"", "\"0.1\"",
		    "\"2016-01-01\"")),
	    PX_EINVAL, "field 'AvailabilityZone'", "NUL", NULL);
	bad(DOC(GOOD ",{\"AvailabilityZone\": \"a-1a\"}"),
	    PX_EINVAL, "record 1", "field 'InstanceType': missing", NULL);
	/* control characters would break tables and reach terminals:
	 * refused, and the message shows them escaped */
	bad(DOC(GOOD "," REC("\"us-east-1a\"", "\"c4.x\\tlarge\"", "\"0.1\"",
			     "\"2016-01-01\"")),
	    PX_EINVAL, "record 1", "field 'InstanceType': control "
	    "character '\\t' at byte 4", "'c4.x\\tlarge'");
	bad(DOC(REC("\"us-east-1a\\n\"", "\"c4\"", "\"0.1\"",
		    "\"2016-01-01\"")),
	    PX_EINVAL, "field 'AvailabilityZone'", "'\\n' at byte 10", NULL);
	bad(DOC(REC("\"us-east-1a\"", "\"c4\"", "\"0.1\"",
		    "\"2016-01-01\"") "," REC("\"us-east-1a\"", "\"c4\"",
		    "\"0.1\"", "\"2016-01-01\"")
		"," "{\"ProductDescription\": \"Linux\\u001b[31m\"}"),
	    PX_EINVAL, "record 2", "field 'ProductDescription'",
	    "'\\x1b' at byte 5 of 'Linux\\x1b[31m'");
	bad(DOC(REC("\"us-east-1a\"", "\"c4\\u009b\"", "\"0.1\"",
		    "\"2016-01-01\"")),
	    PX_EINVAL, "field 'InstanceType'", "'\\x9b' at byte 2", NULL);
	{
		struct seen sn;
		struct px_error e;

		rd(DOC(REC("\"us-east-1a\"", "\"c4\\u001b\"", "\"0.1\"",
			   "\"2016-01-01\"")), &sn, &e);
		cr_assert_null(strchr(e.msg, 0x1b), "raw ESC in '%s'", e.msg);
	}
	bad(DOC("{\"SpotPrice\": \"1\", \"SpotPrice\": \"2\"}"),
	    PX_EINVAL, "record 0", "field 'SpotPrice': duplicate", NULL);
}

Test(trace, field_and_token_limits)
{
	char zone[TRACE_FIELD_MAX + 2];
	size_t big = TRACE_TOKEN_MAX + 1000;
	char *json = malloc(big + 256);
	int n;

	/* exactly TRACE_FIELD_MAX is fine, one more is not */
	memset(zone, 'z', TRACE_FIELD_MAX);
	zone[TRACE_FIELD_MAX] = '\0';
	n = snprintf(json, big, DOC(GOOD "," REC("\"%s\"", "\"t\"", "\"1\"",
						 "\"2016-01-01\"")), zone);
	cr_assert_gt(n, 0);
	struct seen s;
	struct px_error err;
	cr_assert_eq(rd(json, &s, &err), PX_OK, "%s", err.msg);
	cr_assert_str_eq(s.r[1].zone, zone);

	zone[TRACE_FIELD_MAX] = 'z';
	zone[TRACE_FIELD_MAX + 1] = '\0';
	snprintf(json, big, DOC(GOOD "," REC("\"%s\"", "\"t\"", "\"1\"",
					     "\"2016-01-01\"")), zone);
	bad(json, PX_ETOOBIG, "record 1", "field 'AvailabilityZone'",
	    "over the limit of 64");

	/* a huge string in an ignored field, complete or never ending:
	 * refused once TRACE_TOKEN_MAX bytes pass without a token */
	const char *pre = "{\"SpotPriceHistory\": [{\"Junk\": \"";
	size_t pl = strlen(pre);
	memcpy(json, pre, pl);
	memset(json + pl, 'x', big);
	memcpy(json + pl + big, "\"}]}", 5);
	bad(json, PX_ETOOBIG, "t.json: record 0 (byte 29): no token ends "
	    "within 65536 bytes", NULL, NULL);
	json[pl + big] = '\0';
	bad(json, PX_ETOOBIG, "no token ends within", NULL, NULL);
	/* a giant number, and giant whitespace, are bounded the same way */
	memset(json + pl - 1, '7', big);
	memcpy(json + pl - 1 + big, "}]}", 4);
	bad(json, PX_ETOOBIG, "no token ends within", NULL, NULL);
	memset(json + pl - 1, ' ', big);
	memcpy(json + pl - 1 + big, "1}]}", 5);
	bad(json, PX_ETOOBIG, "no token ends within", NULL, NULL);
	/* just under the bound is fine */
	memcpy(json + pl - 1, "\"", 1);
	memset(json + pl, 'y', TRACE_TOKEN_MAX - 64);
	snprintf(json + pl + TRACE_TOKEN_MAX - 64, 256,
		 "\", %s]}", GOOD + 1);
	cr_assert_eq(rd(json, &s, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(s.n, 1);
	free(json);
}

Test(trace, document_errors)
{
	bad("{\"NextToken\": \"x\"}", PX_EINVAL,
	    "t.json: byte 18: no 'SpotPriceHistory' array", NULL, NULL);
	bad("{}", PX_EINVAL, "no 'SpotPriceHistory' array", NULL, NULL);
	bad("[]", PX_EINVAL, "top level is an array, not an object", NULL,
	    NULL);
	bad("{\"SpotPriceHistory\": {}}", PX_EINVAL,
	    "'SpotPriceHistory' is an object, not an array", NULL, NULL);
	bad("{\"SpotPriceHistory\": [], \"SpotPriceHistory\": []}",
	    PX_EINVAL, "duplicate 'SpotPriceHistory'", NULL, NULL);
	bad(DOC(GOOD ", 5"), PX_EINVAL, "record 1", "record is a number",
	    NULL);
	/* malformed JSON: yajl's message, one line, record and byte */
	bad(DOC(GOOD ", {\"AvailabilityZone\" \"x\"}"), PX_EINVAL,
	    "t.json: record 1 (byte ", "invalid JSON: parse error: object "
	    "key and value must be separated by a colon", NULL);
	bad(DOC(GOOD) " x", PX_EINVAL, "invalid JSON", "trailing garbage",
	    NULL);
	bad(DOC(GOOD) " {}", PX_EINVAL, "invalid JSON", "trailing garbage",
	    NULL);
	bad("hello, world", PX_EINVAL, "t.json: byte ", "invalid JSON",
	    NULL);
	bad("\x01\x02garbage", PX_EINVAL, "invalid JSON", NULL, NULL);
	bad("{\"SpotPriceHistory\": [" GOOD, PX_EINVAL, "record 1",
	    "invalid JSON", "premature EOF");
	bad("   \n", PX_EINVAL, "invalid JSON", NULL, NULL);
	bad("", PX_EINVAL, "t.json: empty file", NULL, NULL);
	bad("{\"SpotPriceHistory\": [], // c\n}", PX_EINVAL, "invalid JSON",
	    NULL, NULL);
	bad(DOC(REC("\"us-east-1a\xff\"", "\"t\"", "\"1\"", "\"2016-01-01\"")),
	    PX_EINVAL, "invalid JSON", NULL, NULL);
}

Test(trace, file_errors)
{
	char path[4096], tmp[] = "/tmp/px_trace_XXXXXX";
	struct seen s = {0};
	struct px_error err = {0};
	int fd;

	data_path(path, sizeof(path), "");
	cr_assert_eq(trace_read_file(path, collect, &s, NULL, &err),
		     PX_ESYS | EISDIR);
	cr_assert_not_null(strstr(err.msg, "Is a directory"), "%s", err.msg);
	data_path(path, sizeof(path), "no-such-file.json");
	cr_assert_eq(trace_read_file(path, collect, &s, NULL, &err),
		     PX_ENOENT);
	cr_assert_not_null(strstr(err.msg, "no-such-file.json"), "%s",
			   err.msg);
	fd = mkstemp(tmp);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(trace_read_file(tmp, collect, &s, NULL, &err),
		     PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, ": empty file"), "%s", err.msg);
	unlink(tmp);
}

Test(trace, zone_region)
{
	char b[32];

	cr_assert_eq(trace_zone_region("us-east-1b", b, sizeof(b)), PX_OK);
	cr_assert_str_eq(b, "us-east-1");
	cr_assert_eq(trace_zone_region("us-west-2-lax-1a", b, sizeof(b)),
		     PX_OK);
	cr_assert_str_eq(b, "us-west-2");
	cr_assert_eq(trace_zone_region("us-gov-west-1a", b, sizeof(b)),
		     PX_OK);
	cr_assert_str_eq(b, "us-gov-west-1");
	cr_assert_eq(trace_zone_region("ap-southeast-12c", b, sizeof(b)),
		     PX_OK);
	cr_assert_str_eq(b, "ap-southeast-12");
	cr_assert_eq(trace_zone_region("eu-west-1", b, sizeof(b)), PX_OK);
	cr_assert_str_eq(b, "eu-west-1");
	cr_assert_eq(trace_zone_region("us-east-1b", b, 9), PX_ETOOBIG);
	cr_assert_eq(trace_zone_region("us-east-1b", b, 10), PX_OK);
	const char *bad_zones[] = {"", "us", "us-east", "us-east-b",
				   "1-east-1a", "-east-1a", "US-EAST-1A",
				   "us--east-1a", "us-east-1.", "us-east-1_"};
	for (size_t i = 0; i < sizeof(bad_zones) / sizeof(*bad_zones); i++)
		cr_assert_eq(trace_zone_region(bad_zones[i], b, sizeof(b)),
			     PX_EINVAL, "'%s' accepted", bad_zones[i]);
}

/* A real shared trace: count, times, one region. */
struct real {
	uint64_t n, bad_region, out_of_order;
	int64_t prev;
};

static enum px_err real_cb(const struct trace_record *rec, void *ctx,
			   struct px_error *err)
{
	struct real *r = ctx;
	char region[32];

	if (trace_zone_region(rec->zone, region, sizeof(region)) != PX_OK ||
	    strcmp(region, "us-east-1") != 0)
		r->bad_region++;
	if (rec->t_s < r->prev)
		r->out_of_order++;
	r->prev = rec->t_s;
	r->n++;
	return PX_OK;
}

Test(trace, real_2015_file)
{
	const char *shared = getenv("PX_SHARED");
	char path[4096];
	struct real r = {0};
	struct trace_stats st;
	struct px_error err = {0};

	if (!shared)
		cr_skip("PX_SHARED not set");
	snprintf(path, sizeof(path),
		 "%s/traces/us-east-1_2015-03_2015-08_linux.json.gz", shared);
	if (access(path, R_OK) != 0)
		cr_skip("%s not readable", path);
	r.prev = INT64_MIN;
	cr_assert_eq(trace_read_file(path, real_cb, &r, &st, &err), PX_OK,
		     "%s", err.msg);
	cr_assert_eq(r.n, 274099);
	cr_assert_eq(st.records, 274099);
	cr_assert_eq(r.bad_region, 0);
	cr_assert_eq(r.out_of_order, 0, "the README says ascending");
	cr_assert_eq(st.first_s, tm("2015-03-11T10:34:42Z"));
	cr_assert_eq(st.last_s, tm("2015-08-31T23:59:13Z"));
	cr_assert_gt(st.bytes, 50u * 1000 * 1000);
}

Test(trace, real_2021_file)
{
	const char *shared = getenv("PX_SHARED");
	char path[4096];
	struct real r = {0};
	struct trace_stats st;
	struct px_error err = {0};

	if (!shared)
		cr_skip("PX_SHARED not set");
	snprintf(path, sizeof(path),
		 "%s/traces/us-east-1_2021-03_2021-05_linux.json.gz", shared);
	if (access(path, R_OK) != 0)
		cr_skip("%s not readable", path);
	r.prev = INT64_MIN;
	cr_assert_eq(trace_read_file(path, real_cb, &r, &st, &err), PX_OK,
		     "%s", err.msg);
	cr_assert_eq(r.n, 30310);
	cr_assert_eq(r.bad_region, 0);
	cr_assert_eq(st.first_s, tm("2021-03-02T01:46:11Z"));
	cr_assert_eq(st.last_s, tm("2021-05-31T01:45:44Z"));
}
