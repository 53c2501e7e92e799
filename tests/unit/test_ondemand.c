/* test_ondemand.c -- on-demand price tables: shapes, exact prices, errors,
 * the shipped etc/ondemand tables. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../cloudapi/ondemand.h"

static enum px_err parse(const char *json, struct ondemand_table *t,
			 struct px_error *err)
{
	px_error_clear(err);
	return ondemand_table_parse(json, strlen(json), "od.json", t, err);
}

static int64_t price(const struct ondemand_table *t, const char *region,
		     const char *type)
{
	const struct ondemand_entry *e = ondemand_table_find(t, region, type);

	cr_assert_not_null(e, "%s %s missing", region, type);
	cr_assert_str_eq(e->region, region);
	cr_assert_str_eq(e->type, type);
	return e->uusd_per_hour;
}

/* Expect code and a message with both fragments. */
static void bad(const char *json, enum px_err code, const char *f1,
		const char *f2)
{
	struct ondemand_table t = {(void *)1, 42};
	struct px_error err;
	enum px_err rc = parse(json, &t, &err);

	cr_assert_eq(rc, code, "rc %d (%s) for %s", rc, err.msg, json);
	cr_assert_eq(err.code, code);
	cr_assert_eq(t.n, 42, "ret written on failure");
	cr_assert_eq(strncmp(err.msg, "od.json: ", 9), 0, "%s", err.msg);
	cr_assert_not_null(strstr(err.msg, f1), "'%s' not in '%s'", f1,
			   err.msg);
	if (f2)
		cr_assert_not_null(strstr(err.msg, f2), "'%s' not in '%s'",
				   f2, err.msg);
}

Test(ondemand, simple_table)
{
	struct ondemand_table t = {0};
	struct px_error err;

	cr_assert_eq(parse("{\"_comment\": \"x\", \"us-west-2\": "
			   "{\"g2.2xlarge\": 0.65}, \"us-east-1\": "
			   "{\"m3.medium\": 0.067, \"c4.xlarge\": 0.199, "
			   "\"_note\": [1], \"x1.32xlarge\": 13, "
			   "\"p3.16xlarge\": 24.48, \"t1.nano\": 0, "
			   "\"tiny\": 0.000001, \"max\": 1000000000}}",
			   &t, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(t.n, 8);
	cr_assert_eq(price(&t, "us-east-1", "c4.xlarge"), 199000);
	cr_assert_eq(price(&t, "us-east-1", "m3.medium"), 67000);
	cr_assert_eq(price(&t, "us-east-1", "x1.32xlarge"), 13000000);
	cr_assert_eq(price(&t, "us-east-1", "p3.16xlarge"), 24480000);
	cr_assert_eq(price(&t, "us-east-1", "t1.nano"), 0);
	cr_assert_eq(price(&t, "us-east-1", "tiny"), 1);
	cr_assert_eq(price(&t, "us-east-1", "max"),
		     INT64_C(1000000000) * PX_UUSD_PER_USD);
	cr_assert_eq(price(&t, "us-west-2", "g2.2xlarge"), 650000);
	/* sorted by (region, type) */
	for (size_t i = 1; i < t.n; i++) {
		int c = strcmp(t.v[i - 1].region, t.v[i].region);
		cr_assert(c < 0 || (c == 0 &&
			  strcmp(t.v[i - 1].type, t.v[i].type) < 0));
	}
	cr_assert_null(ondemand_table_find(&t, "us-east-1", "g2.2xlarge"));
	cr_assert_null(ondemand_table_find(&t, "us-west-1", "c4.xlarge"));
	cr_assert_null(ondemand_table_find(&t, "us-east-1", "_note"));
	cr_assert_null(ondemand_table_find(&t, "us-east-1", ""));
	ondemand_table_release(&t);
	cr_assert_null(t.v);
	cr_assert_eq(t.n, 0);
	ondemand_table_release(&t);
	ondemand_table_release(NULL);
}

Test(ondemand, object_prices_and_empty)
{
	struct ondemand_table t = {0};
	struct px_error err;

	cr_assert_eq(parse("{\"us-east-1\": {\"c3.xlarge\": {\"usd_per_hour\""
			   ": 0.21, \"source\": \"AWS2015\", \"alternatives\":"
			   " [{\"usd_per_hour\": 0.2}]}, \"m3.medium\": 0.07}"
			   "}", &t, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(t.n, 2);
	cr_assert_eq(price(&t, "us-east-1", "c3.xlarge"), 210000);
	cr_assert_eq(price(&t, "us-east-1", "m3.medium"), 70000);
	ondemand_table_release(&t);

	cr_assert_eq(parse("{}", &t, &err), PX_OK);
	cr_assert_eq(t.n, 0);
	cr_assert_null(ondemand_table_find(&t, "us-east-1", "c3.xlarge"));
	ondemand_table_release(&t);
}

/* Every price with up to 6 decimals converts exactly, whatever its
 * binary rounding. */
Test(ondemand, exact_micro_usd)
{
	char json[128];
	struct ondemand_table t = {0};
	struct px_error err;
	static const int64_t cases[] = {
		1, 7, 10, 70000, 199000, 209999, 290000, 999999, 1000001,
		4510000, 24480000, 123456789, 999999999999999,
		INT64_C(1000000000) * PX_UUSD_PER_USD
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		int64_t u = cases[i];
		snprintf(json, sizeof(json), "{\"r\": {\"t\": %lld.%06lld}}",
			 (long long)(u / 1000000), (long long)(u % 1000000));
		cr_assert_eq(parse(json, &t, &err), PX_OK, "%s: %s", json,
			     err.msg);
		cr_assert_eq(price(&t, "r", "t"), u, "%s", json);
		ondemand_table_release(&t);
	}
	/* a sweep of every cent-and-a-bit value below $50 */
	for (int64_t u = 0; u < 50000000; u += 9973) {
		snprintf(json, sizeof(json), "{\"r\": {\"t\": %lld.%06lld}}",
			 (long long)(u / 1000000), (long long)(u % 1000000));
		cr_assert_eq(parse(json, &t, &err), PX_OK, "%s", json);
		cr_assert_eq(t.v[0].uusd_per_hour, u, "%s", json);
		ondemand_table_release(&t);
	}
	/* exponent form is a number too */
	cr_assert_eq(parse("{\"r\": {\"t\": 1.5e-1}}", &t, &err), PX_OK);
	cr_assert_eq(price(&t, "r", "t"), 150000);
	ondemand_table_release(&t);
}

Test(ondemand, price_errors)
{
	bad("{\"us-east-1\": {\"c4.xlarge\": -0.1}}", PX_EINVAL,
	    "od.json: us-east-1.c4.xlarge: negative price", NULL);
	bad("{\"us-east-1\": {\"c4.xlarge\": -3}}", PX_EINVAL,
	    "us-east-1.c4.xlarge: negative price", NULL);
	bad("{\"us-east-1\": {\"a\": 1, \"c4.xlarge\": \"0.1\"}}", PX_EINVAL,
	    "us-east-1.c4.xlarge: price is a string, not a number", NULL);
	bad("{\"us-east-1\": {\"c4.xlarge\": null}}", PX_EINVAL,
	    "us-east-1.c4.xlarge: price is null", NULL);
	bad("{\"us-east-1\": {\"c4.xlarge\": true}}", PX_EINVAL,
	    "us-east-1.c4.xlarge: price is a boolean", NULL);
	bad("{\"us-east-1\": {\"c4.xlarge\": [0.1]}}", PX_EINVAL,
	    "us-east-1.c4.xlarge: price is an array", NULL);
	bad("{\"us-east-1\": {\"c4.xlarge\": {\"usd\": 0.1}}}", PX_EINVAL,
	    "us-east-1.c4.xlarge: no 'usd_per_hour'", NULL);
	bad("{\"us-east-1\": {\"c4.xlarge\": {\"usd_per_hour\": \"1\"}}}",
	    PX_EINVAL, "us-east-1.c4.xlarge: price is a string", NULL);
	bad("{\"us-east-1\": {\"c4.xlarge\": {\"usd_per_hour\": -1.5}}}",
	    PX_EINVAL, "us-east-1.c4.xlarge: negative price", NULL);
	bad("{\"us-east-1\": {\"c4.xlarge\": 0.0000001}}", PX_EINVAL,
	    "us-east-1.c4.xlarge: price", "micro-USD");
	bad("{\"us-east-1\": {\"c4.xlarge\": 0.1234567}}", PX_EINVAL,
	    "us-east-1.c4.xlarge: price", "micro-USD");
	bad("{\"us-east-1\": {\"c4.xlarge\": 1000000001}}", PX_EINVAL,
	    "us-east-1.c4.xlarge: price", NULL);
	bad("{\"us-east-1\": {\"c4.xlarge\": 1e300}}", PX_EINVAL,
	    "us-east-1.c4.xlarge: price", NULL);
	/* jansson itself refuses NaN, Infinity and overflowing reals */
	bad("{\"us-east-1\": {\"c4.xlarge\": NaN}}", PX_EINVAL, "line 1",
	    NULL);
	bad("{\"us-east-1\": {\"c4.xlarge\": 1e999}}", PX_EINVAL, "line 1",
	    NULL);
}

Test(ondemand, shape_errors)
{
	char json[256];

	bad("[]", PX_EINVAL, "top level is an array, not an object", NULL);
	bad("{\"us-east-1\": 5}", PX_EINVAL, "us-east-1: a number, not an "
	    "object of types", NULL);
	bad("{\"us-east-1\": {\"c4\": 1}, \"us-east-1\": {}}", PX_EINVAL,
	    "duplicate", NULL);
	bad("{\"us-east-1\": {\"c4\": 1, \"c4\": 2}}", PX_EINVAL,
	    "duplicate", NULL);
	bad("{\"\": {\"c4\": 1}}", PX_EINVAL, "od.json: region ''", NULL);
	bad("{\"r\": {\"\": 1}}", PX_EINVAL, "od.json: r: type ''", NULL);
	/* jansson refuses a NUL in a key before we see it */
	bad("{\"r\": {\"a\\u0000b\": 1}}", PX_EINVAL, "od.json: line 1",
	    "NUL");
	snprintf(json, sizeof(json), "{\"r\": {\"%0*d\": 1}}",
		 ONDEMAND_NAME_MAX, 0);
	bad(json, PX_EINVAL, "od.json: r: type '000", "too long");
	snprintf(json, sizeof(json), "{\"r\": {\"%0*d\": 1}}",
		 ONDEMAND_NAME_MAX - 1, 0);
	struct ondemand_table t = {0};
	struct px_error err;
	cr_assert_eq(parse(json, &t, &err), PX_OK, "%s", err.msg);
	ondemand_table_release(&t);
	/* malformed JSON: jansson's message with line and column */
	bad("{\"r\": {\"t\": 1,}}", PX_EINVAL, "od.json: line 1 column ",
	    NULL);
	bad("{\"r\":\n {\"t\" 1}}", PX_EINVAL, "od.json: line 2 column ",
	    NULL);
	bad("", PX_EINVAL, "od.json: line ", NULL);
	bad("{} {}", PX_EINVAL, "end of file expected", NULL);
}

Test(ondemand, file_errors_and_bound)
{
	char tmp[] = "/tmp/px_od_XXXXXX";
	struct ondemand_table t = {0};
	struct px_error err;
	const char *src = getenv("PX_SRC");
	char dir[4096];
	int fd;

	cr_assert_eq(ondemand_table_load("/nonexistent/od.json", &t, &err),
		     PX_ENOENT);
	cr_assert_not_null(strstr(err.msg, "/nonexistent/od.json"));
	snprintf(dir, sizeof(dir), "%s/etc/ondemand", src ? src : ".");
	cr_assert_eq(ondemand_table_load(dir, &t, &err), PX_ESYS | EISDIR);

	/* a file one byte over the bound is refused without parsing */
	fd = mkstemp(tmp);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)ONDEMAND_FILE_MAX + 1), 0);
	close(fd);
	cr_assert_eq(ondemand_table_load(tmp, &t, &err), PX_ETOOBIG);
	cr_assert_not_null(strstr(err.msg, "over the limit"), "%s", err.msg);
	/* a buffer too */
	cr_assert_eq(ondemand_table_parse("{}", (size_t)ONDEMAND_FILE_MAX + 1,
					  "big", &t, &err), PX_ETOOBIG);
	/* a small file through the load path */
	fd = open(tmp, O_WRONLY | O_TRUNC);
	cr_assert_geq(fd, 0);
	const char *j = "{\"us-east-1\": {\"c4.xlarge\": 0.199}}";
	cr_assert_eq(write(fd, j, strlen(j)), (ssize_t)strlen(j));
	close(fd);
	cr_assert_eq(ondemand_table_load(tmp, &t, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(price(&t, "us-east-1", "c4.xlarge"), 199000);
	ondemand_table_release(&t);
	unlink(tmp);
}

/* The shipped tables: each loads, and its prices are the shared file's. */
Test(ondemand, shipped_tables)
{
	static const struct {
		const char *file, *region, *type;
		int64_t uusd;
		size_t n;
	} want[] = {
		{"us-east-1_2015-03_2015-08.json", "us-east-1", "c3.xlarge",
		 210000, 21},
		{"us-east-1_2016-02_2016-04.json", "us-east-1", "m4.10xlarge",
		 2520000, 34},
		{"us-east-1_2016-02_2016-04.json", "us-east-1", "m3.medium",
		 70000, 34},
		{"us-east-1_2021-03_2021-05.json", "us-east-1", "c4.xlarge",
		 199000, 30},
		{"us-west-2_2016-11_2017-02.json", "us-west-2", "g2.2xlarge",
		 650000, 1},
	};
	const char *src = getenv("PX_SRC");
	char path[4096];

	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
		struct ondemand_table t = {0};
		struct px_error err;

		snprintf(path, sizeof(path), "%s/etc/ondemand/%s",
			 src ? src : ".", want[i].file);
		cr_assert_eq(ondemand_table_load(path, &t, &err), PX_OK,
			     "%s", err.msg);
		cr_assert_eq(t.n, want[i].n, "%s: %zu entries", path, t.n);
		cr_assert_eq(price(&t, want[i].region, want[i].type),
			     want[i].uusd, "%s %s", path, want[i].type);
		ondemand_table_release(&t);
	}
}

/* The shared per-era file itself is not a table (region -> era -> type):
 * it must be refused with a path, not misread. */
Test(ondemand, shared_per_era_file_refused)
{
	const char *shared = getenv("PX_SHARED");
	char path[4096];
	struct ondemand_table t = {0};
	struct px_error err;

	if (!shared)
		cr_skip("PX_SHARED not set");
	snprintf(path, sizeof(path), "%s/traces/ondemand-prices.json",
		 shared);
	if (access(path, R_OK) != 0)
		cr_skip("%s not readable", path);
	cr_assert_eq(ondemand_table_load(path, &t, &err), PX_EINVAL);
	cr_assert_not_null(strstr(err.msg, "us-east-1.2015-03_2015-08: no "
				  "'usd_per_hour'"), "%s", err.msg);
}
