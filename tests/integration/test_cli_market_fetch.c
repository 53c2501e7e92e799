/* test_cli_market_fetch.c -- proteusctl market fetch against the fake EC2, end to
 * end: credentials from the environment (or a credentials file), the
 * endpoint from AWS_ENDPOINT_URL_EC2, several pages, rows checked through
 * `proteusctl market --json`, no duplicates on a second fetch, nothing
 * stored on an AWS error (first or later page), and no secret in the
 * output. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../fake_ec2/fake.h"
#include "pxrun.h"

static struct fake F;
static char *tmp, *db;
static long now_s;

/* The fake's price history: NREC records over the last day, one every 97
 * s, zones a/b/c, types c4.large/c4.xlarge/m4.large in turn; plus one
 * c4.large record 3 days old and one Windows record (both outside what
 * the tests fetch). */
#define NREC 300

static const char *rec_zone(int i) { return (const char *[]){
	"us-east-1a", "us-east-1b", "us-east-1c" }[i % 3]; }
static const char *rec_type(int i) { return (const char *[]){
	"c4.large", "c4.xlarge", "m4.large" }[(i / 3) % 3]; }
static long rec_ts(int i) { return now_s - 86400 + 97L * i; }
static int rec_price(int i) { return 20000 + (i * 7919) % 5000; }

static void load_prices(void)
{
	size_t cap = NREC * 160 + 512, len = 0;
	char *cmd = malloc(cap);

	cr_assert_not_null(cmd);
	len += (size_t)snprintf(cmd + len, cap - len, "{\"prices\":[");
	for (int i = 0; i < NREC; i++)
		len += (size_t)snprintf(cmd + len, cap - len,
			"{\"zone\":\"%s\",\"type\":\"%s\",\"price\":"
			"\"0.%06d\",\"ts\":%ld},", rec_zone(i), rec_type(i),
			rec_price(i), rec_ts(i));
	snprintf(cmd + len, cap - len,
		 "{\"zone\":\"us-east-1a\",\"type\":\"c4.large\",\"price\":"
		 "\"0.5\",\"ts\":%ld},{\"zone\":\"us-east-1a\",\"type\":"
		 "\"c4.large\",\"product\":\"Windows\",\"price\":\"0.9\","
		 "\"ts\":%ld}]}", now_s - 3 * 86400, now_s - 3600);
	json_decref(fake_ctl(&F, cmd));
	free(cmd);
}

static void setup(void)
{
	char *p;

	tmp = px_tmpdir();
	cr_assert_not_null(tmp);
	cr_assert(asprintf(&db, "%s/t.db", tmp) > 0);
	fake_start(&F);
	now_s = (long)time(NULL);
	load_prices();
	setenv("AWS_ACCESS_KEY_ID", FAKE_AKID, 1);
	setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET, 1);
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_PROFILE");
	unsetenv("AWS_ENDPOINT_URL");
	setenv("AWS_ENDPOINT_URL_EC2", F.url, 1);
	cr_assert(asprintf(&p, "%s/no-credentials", tmp) > 0);
	setenv("AWS_SHARED_CREDENTIALS_FILE", p, 1);
	setenv("AWS_CONFIG_FILE", p, 1);
	free(p);
	setenv("NO_PROXY", "*", 1);
}

static void teardown(void)
{
	fake_stop(&F);
	px_rmtree(tmp);
	free(tmp);
	free(db);
}

TestSuite(cli_market_fetch, .init = setup, .fini = teardown, .timeout = 60);

static void no_secret(const struct pxrun *r)
{
	cr_assert_null(strstr(r->out, FAKE_SECRET), "secret on stdout");
	cr_assert_null(strstr(r->err, FAKE_SECRET), "secret on stderr");
}

/* proteusctl market fetch ... --db DB (args NULL-terminated). */
static int fetch(struct pxrun *r, ...)
{
	const char *argv[24] = {"proteusctl", "market", "fetch"};
	int n = 3;
	va_list ap;
	const char *a;

	va_start(ap, r);
	while ((a = va_arg(ap, const char *)) && n < 20)
		argv[n++] = a;
	va_end(ap);
	argv[n++] = "--db";
	argv[n++] = db;
	argv[n] = NULL;
	cr_assert_eq(pxrun(r, 60, "proteusctl", argv), 0, "spawn failed");
	no_secret(r);
	return r->status;
}

/* `proteusctl market --json`; NULL when it exits 4 (no market). */
static json_t *show(void)
{
	const char *argv[] = {"proteusctl", "market", "--json", "--db", db,
			      NULL};
	struct pxrun r;
	json_error_t je;
	json_t *j = NULL;

	cr_assert_eq(pxrun(&r, 60, "proteusctl", argv), 0);
	if (r.status != 4) {
		cr_assert_eq(r.status, 0, "show: %s", r.err);
		j = json_loads(r.out, 0, &je);
		cr_assert_not_null(j, "bad json: %s", je.text);
	}
	pxrun_free(&r);
	return j;
}

static long dsph_calls(void)
{
	json_t *s = fake_ctl(&F, NULL);
	long n = (long)json_integer_value(json_object_get(json_object_get(s,
		"calls"), "DescribeSpotPriceHistory"));

	json_decref(s);
	return n;
}

/* Expected records of (zone, type) among the NREC loaded, with min/max. */
static int expect(const char *zone, const char *type, int *min, int *max)
{
	int n = 0;

	*min = 1 << 30;
	*max = -1;
	for (int i = 0; i < NREC; i++) {
		if (strcmp(rec_zone(i), zone) || strcmp(rec_type(i), type))
			continue;
		n++;
		if (rec_price(i) < *min)
			*min = rec_price(i);
		if (rec_price(i) > *max)
			*max = rec_price(i);
	}
	return n;
}

static double num(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	cr_assert(json_is_number(v), "field %s is not a number", k);
	return json_number_value(v);
}

Test(cli_market_fetch, pages_rows_and_no_duplicates)
{
	const char *zones[] = {"us-east-1a", "us-east-1b"};
	const char *types[] = {"c4.large", "c4.xlarge"};
	struct pxrun r;
	int total = 0, pages = 0, min, max;
	char want[64];
	json_t *j, *m;
	size_t i;

	for (int z = 0; z < 2; z++) {
		int nz = 0;

		for (int t = 0; t < 2; t++)
			nz += expect(zones[z], types[t], &min, &max);
		total += nz;
		pages += (nz + 24) / 25;
	}
	cr_assert_gt(pages, 4, "the test wants several pages");
	cr_assert_eq(fetch(&r, "--region", "us-east-1", "--types",
			   "c4.large,c4.xlarge", "--zones",
			   "us-east-1a,us-east-1b", "--days", "2",
			   "--page-size", "25", NULL), 0, "%s", r.err);
	snprintf(want, sizeof(want), ": %d records, %d new,", total, total);
	cr_assert(strstr(r.out, want), "want '%s' in: %s", want, r.out);
	cr_assert(strstr(r.out, "ec2:us-east-1:c4.large,c4.xlarge:"
			 "us-east-1a,us-east-1b:Linux/UNIX:"), "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(dsph_calls(), pages);

	j = show();
	cr_assert_not_null(j, "nothing stored");
	cr_assert_eq(json_array_size(j), 4, "markets: %zu",
		     json_array_size(j));
	json_array_foreach(j, i, m) {
		const char *zone = json_string_value(json_object_get(m,
								     "zone"));
		const char *type = json_string_value(json_object_get(m,
								     "type"));
		int n = expect(zone, type, &min, &max);

		cr_assert_str_eq(json_string_value(json_object_get(m,
			"region")), "us-east-1");
		cr_assert_str_eq(json_string_value(json_object_get(m,
			"product")), "Linux/UNIX");
		cr_assert_gt(n, 0, "unexpected market %s %s", zone, type);
		cr_assert_eq((int)num(m, "records"), n, "%s %s", zone, type);
		cr_assert_eq((long)(num(m, "min_usd") * 1e6 + 0.5), min);
		cr_assert_eq((long)(num(m, "max_usd") * 1e6 + 0.5), max);
	}
	json_decref(j);

	/* again, every zone this time: the a/b records are not stored twice,
	 * the c ones are new */
	cr_assert_eq(fetch(&r, "--region", "us-east-1", "--types",
			   "c4.large,c4.xlarge", "--days", "2", NULL), 0,
		     "%s", r.err);
	{
		int nc = expect("us-east-1c", "c4.large", &min, &max) +
			 expect("us-east-1c", "c4.xlarge", &min, &max);

		snprintf(want, sizeof(want), ": %d records, %d new,",
			 total + nc, nc);
	}
	cr_assert(strstr(r.out, want), "want '%s' in: %s", want, r.out);
	pxrun_free(&r);
	j = show();
	cr_assert_eq(json_array_size(j), 6);
	json_array_foreach(j, i, m) {
		int n = expect(json_string_value(json_object_get(m, "zone")),
			       json_string_value(json_object_get(m, "type")),
			       &min, &max);

		cr_assert_eq((int)num(m, "records"), n);
	}
	json_decref(j);
}

Test(cli_market_fetch, auth_failure_stores_nothing)
{
	struct pxrun r;

	setenv("AWS_ACCESS_KEY_ID", "AKIDUNKNOWN0000", 1);
	cr_assert_eq(fetch(&r, "--region", "us-east-1", "--types",
			   "c4.large", NULL), 1, "%s", r.err);
	cr_assert(strstr(r.err, "AuthFailure"), "%s", r.err);
	cr_assert(strstr(r.err, "request id '"), "%s", r.err);
	cr_assert(strstr(r.err, "environment"), "%s", r.err);
	cr_assert(strstr(r.err, "nothing was stored"), "%s", r.err);
	cr_assert_str_eq(r.out, "");
	pxrun_free(&r);
	cr_assert_null(show(), "something was stored");

	/* the right key id with a wrong secret: the signature is refused */
	setenv("AWS_ACCESS_KEY_ID", FAKE_AKID, 1);
	setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret-0123456789", 1);
	cr_assert_eq(fetch(&r, "--region", "us-east-1", "--types",
			   "c4.large", NULL), 1);
	cr_assert(strstr(r.err, "SignatureDoesNotMatch"), "%s", r.err);
	cr_assert_null(strstr(r.err, "not-the-secret"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_null(show(), "something was stored");
}

Test(cli_market_fetch, failure_on_a_later_page_stores_nothing)
{
	struct pxrun r;

	json_decref(fake_ctl(&F, "{\"faults\":[{\"op\":"
		"\"DescribeSpotPriceHistory\",\"kind\":\"error\",\"code\":"
		"\"UnauthorizedOperation\",\"status\":403,\"skip\":2}]}"));
	cr_assert_eq(fetch(&r, "--region", "us-east-1", "--types",
			   "c4.large,c4.xlarge,m4.large", "--page-size", "10",
			   NULL), 1, "%s", r.err);
	cr_assert(strstr(r.err, "UnauthorizedOperation"), "%s", r.err);
	cr_assert(strstr(r.err, "nothing was stored"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(dsph_calls(), 2); /* two pages read, the third refused */
	cr_assert_null(show(), "something was stored");
}

Test(cli_market_fetch, request_expired_is_explained)
{
	struct pxrun r;

	json_decref(fake_ctl(&F, "{\"clock_offset\": 3600}"));
	cr_assert_eq(fetch(&r, "--region", "us-east-1", "--types",
			   "c4.large", NULL), 1);
	cr_assert(strstr(r.err, "RequestExpired"), "%s", r.err);
	cr_assert(strstr(r.err, "clock"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_null(show());
}

Test(cli_market_fetch, credentials_file_readable_by_others_warns)
{
	struct pxrun r;
	char *path;
	FILE *f;

	cr_assert(asprintf(&path, "%s/credentials", tmp) > 0);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "[default]\naws_access_key_id = %s\n"
		"aws_secret_access_key = %s\n", FAKE_AKID, FAKE_SECRET);
	fclose(f);
	cr_assert_eq(chmod(path, 0644), 0);
	setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	cr_assert_eq(fetch(&r, "--region", "us-east-1", "--types",
			   "m4.large", "--zones", "us-east-1c", NULL), 0,
		     "%s", r.err);
	cr_assert(strstr(r.err, "warning"), "%s", r.err);
	cr_assert(strstr(r.err, path), "%s", r.err);
	cr_assert(strstr(r.err, "chmod 600"), "%s", r.err);
	pxrun_free(&r);
	free(path);
}

Test(cli_market_fetch, usage_errors)
{
	struct pxrun r;

	cr_assert_eq(fetch(&r, "--region", "us-east-1", NULL), 2);
	cr_assert(strstr(r.err, "--types"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(fetch(&r, "--region", "us-east-1", "--types", "c4.large",
			   "--zones", "us-west-2a", NULL), 2);
	cr_assert(strstr(r.err, "'us-west-2a' is not a zone of region "
			 "'us-east-1'"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(fetch(&r, "--region", "us-east-1", "--types", "c4.large",
			   "--days", "0", NULL), 2);
	pxrun_free(&r);
	cr_assert_eq(fetch(&r, "--region", "us-east-1", "--types",
			   "c4.large,,m4.large", NULL), 2);
	pxrun_free(&r);
	cr_assert_eq(fetch(&r, "--region", "us-east-1", "--types", "c4.large",
			   FAKE_SECRET, NULL), 2);
	pxrun_free(&r);
	cr_assert_eq(dsph_calls(), 0);
	cr_assert_eq(fetch(&r, "--help", NULL), 0);
	cr_assert(strstr(r.out, "--page-size"), "%s", r.out);
	pxrun_free(&r);
}

Test(cli_market_fetch, no_record_exits_4)
{
	struct pxrun r;

	cr_assert_eq(fetch(&r, "--region", "us-east-1", "--types",
			   "p2.16xlarge", NULL), 4, "%s", r.err);
	cr_assert(strstr(r.err, "no records"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_null(show());
}

/* The summary as JSON; both spellings of the list options (--type/--zone
 * are the old ones of --types/--zones) fetch the same records, and the
 * global options before the command work like the command's own. */
Test(cli_market_fetch, json_summary_and_both_spellings)
{
	struct pxrun r;
	json_error_t je;
	json_t *j;
	json_int_t recs;

	cr_assert_eq(fetch(&r, "--region", "us-east-1", "--type", "c4.large",
			   "--zone", "us-east-1a", "--json", NULL), 0, "%s",
		     r.err);
	j = json_loads(r.out, 0, &je);
	cr_assert_not_null(j, "%s: %s", je.text, r.out);
	pxrun_free(&r);
	recs = json_integer_value(json_object_get(j, "records"));
	/* every 9th record of the fake is c4.large in us-east-1a, and the
	 * one 3 days old is in the default 7 days */
	cr_assert_eq(recs, (NREC + 8) / 9 + 1, "%lld", (long long)recs);
	cr_assert_eq(json_integer_value(json_object_get(j, "new")), recs);
	cr_assert_str_eq(json_string_value(json_object_get(j, "region")),
			 "us-east-1");
	cr_assert_eq(strlen(json_string_value(json_object_get(j, "sha256"))),
		     64);
	json_decref(j);
	{
		const char *argv[] = {"proteusctl", "--db", db, "--json",
				      "market", "fetch", "--region",
				      "us-east-1", "--types", "c4.large",
				      "--zones", "us-east-1a", NULL};

		cr_assert_eq(pxrun(&r, 60, "proteusctl", argv), 0);
	}
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = json_loads(r.out, 0, &je);
	cr_assert_not_null(j, "%s: %s", je.text, r.out);
	pxrun_free(&r);
	cr_assert_eq(json_integer_value(json_object_get(j, "records")), recs);
	cr_assert_eq(json_integer_value(json_object_get(j, "new")), 0);
	json_decref(j);
}

/* A bad option is one line and a hint, not the help text. */
Test(cli_market_fetch, bad_option_is_one_line)
{
	struct pxrun r;

	cr_assert_eq(fetch(&r, "--types", "c4.large", "--bogus", NULL), 2);
	cr_assert_str_eq(r.err, "proteusctl: error: unknown option '--bogus' "
			 "for 'market fetch' (see 'proteusctl market fetch "
			 "--help')\n");
	cr_assert_str_empty(r.out);
	pxrun_free(&r);
	cr_assert_eq(dsph_calls(), 0);
}
