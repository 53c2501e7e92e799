/* test_ec2_sph.c -- the asynchronous DescribeSpotPriceHistory walk
 * (ec2_sph_start) against the fake: NextToken chaining over small pages,
 * zones one after the other, two walks at once on one client, a callback
 * that stops the walk, an AWS error between pages, cancellation by
 * ec2_client_free, and argument checks. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fake_ec2/fake.h"

static struct fake F;
static struct awscred_provider *P;
static struct ec2_client *C;

#define T0 1705276800 /* 2024-01-15T00:00:00Z */

/* n records: zone a/b alternating, type c5.large except every fifth
 * (m5.large), price 0.010000 + i, one a minute from T0. */
static void load_prices(int n)
{
	size_t cap = (size_t)n * 140 + 64, len = 0;
	char *cmd = malloc(cap);

	cr_assert_not_null(cmd);
	len += (size_t)snprintf(cmd + len, cap - len, "{\"prices\":[");
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(cmd + len, cap - len,
			"%s{\"zone\":\"us-east-1%c\",\"type\":\"%s\","
			"\"price\":\"0.%06d\",\"ts\":%d}", i ? "," : "",
			"ab"[i % 2], i % 5 ? "c5.large" : "m5.large",
			10000 + i, T0 + i * 60);
	snprintf(cmd + len, cap - len, "]}");
	json_decref(fake_ctl(&F, cmd));
	free(cmd);
}

static void setup(void)
{
	fake_start(&F);
	C = fake_client(&F, FAKE_AKID, FAKE_SECRET, NULL, &P);
}

static void teardown(void)
{
	ec2_client_free(C);
	awscred_provider_free(P);
	fake_stop(&F);
}

TestSuite(ec2_sph, .init = setup, .fini = teardown, .timeout = 60);

struct walk {
	bool done;
	int done_calls;
	enum px_err rc;
	struct ec2_sph_stats st;
	struct ec2_aws_error aws;
	char msg[sizeof(((struct px_error *)0)->msg)];
	int64_t records, price_sum, in_b, last_index;
	char first_zone[16];
	bool zone_went_back;  /* a record of zone a after zone b started */
	int stop_at;          /* fn fails at this record (0: never) */
	int fault_at;         /* inject an AuthFailure at this record */
};

static enum px_err on_rec(const struct trace_record *r, void *ctx,
			  struct px_error *err)
{
	struct walk *w = ctx;

	cr_assert_eq((int64_t)r->index, w->records, "index %llu",
		     (unsigned long long)r->index);
	if (!w->first_zone[0])
		snprintf(w->first_zone, sizeof w->first_zone, "%s", r->zone);
	if (w->in_b && strcmp(r->zone, "us-east-1a") == 0)
		w->zone_went_back = true;
	w->records++;
	w->price_sum += r->price_uusd;
	w->in_b += strcmp(r->zone, "us-east-1b") == 0;
	if (w->fault_at && w->records == w->fault_at)
		json_decref(fake_ctl(&F, "{\"faults\":[{\"kind\":\"error\","
			"\"op\":\"DescribeSpotPriceHistory\",\"code\":"
			"\"AuthFailure\",\"status\":401}]}"));
	if (w->stop_at && w->records == w->stop_at)
		return px_errorf(err, PX_EINVAL, "stop at %d", w->stop_at);
	return PX_OK;
}

static void on_done(enum px_err rc, const struct ec2_sph_stats *st,
		    const struct px_error *err,
		    const struct ec2_aws_error *aws, void *ctx)
{
	struct walk *w = ctx;

	w->done = true;
	w->done_calls++;
	w->rc = rc;
	w->st = *st;
	if (aws)
		w->aws = *aws;
	if (err)
		snprintf(w->msg, sizeof w->msg, "%s", err->msg);
}

static void drive(struct walk *a, struct walk *b)
{
	for (int i = 0; i < 2000 && !(a->done && (!b || b->done)); i++)
		cr_assert_eq(ec2_client_step(C, 100), PX_OK);
	cr_assert(a->done && (!b || b->done), "walk did not finish");
}

static long calls(void)
{
	json_t *s = fake_ctl(&F, NULL);
	long n = (long)json_integer_value(json_object_get(json_object_get(s,
		"calls"), "DescribeSpotPriceHistory"));

	json_decref(s);
	return n;
}

Test(ec2_sph, pages_and_zones_in_order)
{
	const char *types[] = { "c5.large", "m5.large" };
	const char *zones[] = { "us-east-1a", "us-east-1b" };
	struct ec2_sph_query q = {
		.types = types, .n_types = 2, .zones = zones, .n_zones = 2,
		.start_s = T0, .end_s = T0 + 86400, .max_results = 7,
	};
	struct walk w = { 0 };
	struct px_error err;
	int64_t want = 0;

	load_prices(100);
	for (int i = 0; i < 100; i++)
		want += 10000 + i;
	cr_assert_eq(ec2_sph_start(C, &q, on_rec, on_done, &w, &err), PX_OK,
		     "%s", err.msg);
	cr_assert_not(w.done, "done ran inside ec2_sph_start");
	drive(&w, NULL);
	cr_assert_eq(w.rc, PX_OK, "%s", w.msg);
	cr_assert_eq(w.done_calls, 1);
	cr_assert_eq(w.records, 100);
	cr_assert_eq(w.price_sum, want);
	cr_assert_eq(w.in_b, 50);
	cr_assert_str_eq(w.first_zone, "us-east-1a");
	cr_assert_not(w.zone_went_back, "zones interleaved");
	cr_assert_eq(w.st.records, 100);
	/* 50 per zone in pages of 7: 8 pages each */
	cr_assert_eq(w.st.pages, 16);
	cr_assert_eq(calls(), 16);
	cr_assert_eq(w.st.first_s, T0);
	cr_assert_eq(w.st.last_s, T0 + 99 * 60);
	cr_assert_eq(ec2_client_pending(C), 0);
}

Test(ec2_sph, two_walks_at_once)
{
	const char *c5[] = { "c5.large" }, *m5[] = { "m5.large" };
	struct ec2_sph_query qa = { .types = c5, .n_types = 1,
				    .max_results = 9 };
	struct ec2_sph_query qb = { .types = m5, .n_types = 1,
				    .max_results = 3 };
	struct walk a = { 0 }, b = { 0 };
	struct px_error err;

	load_prices(100);
	cr_assert_eq(ec2_sph_start(C, &qa, on_rec, on_done, &a, &err), PX_OK);
	cr_assert_eq(ec2_sph_start(C, &qb, on_rec, on_done, &b, &err), PX_OK);
	cr_assert_eq(ec2_client_pending(C), 2);
	drive(&a, &b);
	cr_assert_eq(a.rc, PX_OK, "%s", a.msg);
	cr_assert_eq(b.rc, PX_OK, "%s", b.msg);
	cr_assert_eq(a.records, 80);
	cr_assert_eq(b.records, 20);
	cr_assert_eq(a.st.pages, 9);  /* ceil(80 / 9) */
	cr_assert_eq(b.st.pages, 7);  /* ceil(20 / 3) */
}

Test(ec2_sph, callback_stops_the_walk)
{
	struct ec2_sph_query q = { .max_results = 5 };
	struct walk w = { .stop_at = 12 };
	struct px_error err;

	load_prices(40);
	cr_assert_eq(ec2_sph_start(C, &q, on_rec, on_done, &w, &err), PX_OK);
	drive(&w, NULL);
	cr_assert_eq(w.rc, PX_EINVAL);
	cr_assert_str_eq(w.msg, "stop at 12");
	cr_assert_eq(w.records, 12);
	cr_assert_eq(w.st.records, 11); /* the refused one is not counted */
	cr_assert_eq(calls(), 3);       /* no page after the third */
}

Test(ec2_sph, aws_error_between_pages)
{
	struct ec2_sph_query q = { .max_results = 10 };
	struct walk w = { .fault_at = 15 };
	struct px_error err;

	load_prices(50);
	cr_assert_eq(ec2_sph_start(C, &q, on_rec, on_done, &w, &err), PX_OK);
	drive(&w, NULL);
	cr_assert_eq(w.rc, PX_EAWS, "%s", w.msg);
	cr_assert_str_eq(w.aws.code, "AuthFailure");
	cr_assert_eq(w.aws.http_status, 401);
	cr_assert_eq(w.records, 20); /* pages 1 and 2, then the failure */
	cr_assert(strstr(w.msg, "AuthFailure"), "%s", w.msg);
	cr_assert_null(strstr(w.msg, FAKE_SECRET));
}

Test(ec2_sph, client_free_cancels)
{
	struct ec2_sph_query q = { .max_results = 10 };
	struct walk w = { 0 };
	struct px_error err;

	load_prices(50);
	json_decref(fake_ctl(&F, "{\"faults\":[{\"kind\":\"slow\","
		"\"delay\":2}]}"));
	cr_assert_eq(ec2_sph_start(C, &q, on_rec, on_done, &w, &err), PX_OK);
	(void)ec2_client_step(C, 10);
	ec2_client_free(C);
	C = NULL;
	cr_assert_eq(w.done_calls, 1);
	cr_assert_eq(w.rc, PX_ECANCELED);
	cr_assert_eq(w.records, 0);
}

Test(ec2_sph, bad_arguments)
{
	const char *bad[] = { "" };
	struct ec2_sph_query q = { .max_results = 1001 };
	struct walk w = { 0 };
	struct px_error err;

	cr_assert_eq(ec2_sph_start(C, &q, on_rec, on_done, &w, &err),
		     PX_EINVAL);
	cr_assert(strstr(err.msg, "1001"), "%s", err.msg);
	q.max_results = 0;
	q.types = bad;
	q.n_types = 1;
	cr_assert_eq(ec2_sph_start(C, &q, on_rec, on_done, &w, &err),
		     PX_EINVAL);
	cr_assert(strstr(err.msg, "instance type 1"), "%s", err.msg);
	cr_assert_eq(ec2_client_pending(C), 0);
	cr_assert_eq(w.done_calls, 0);
}

Test(ec2_sph, blocking_wrapper_reports_stats)
{
	const char *zones[] = { "us-east-1b" };
	struct ec2_sph_query q = { .zones = zones, .n_zones = 1,
				   .max_results = 4 };
	struct ec2_sph_stats st;
	struct walk w = { 0 };
	struct px_error err;

	load_prices(30);
	cr_assert_eq(ec2_describe_spot_price_history(C, &q, on_rec, &w, &st,
						     &err, NULL), PX_OK,
		     "%s", err.msg);
	cr_assert_eq(w.records, 15);
	cr_assert_eq(st.records, 15);
	cr_assert_eq(st.pages, 4);
	cr_assert_eq(st.first_s, T0 + 60);
	cr_assert_eq(st.last_s, T0 + 29 * 60);
}
