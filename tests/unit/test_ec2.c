/* test_ec2.c -- the EC2 client against the fake EC2: every operation,
 * pagination, SigV4 rejections, faults and retries, idempotent creates,
 * the spot lifecycle, event-loop hooks and secrets kept out of traces. */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cloudapi/ec2_int.h"
#include "../fake_ec2/fake.h"

static struct fake F;
static struct awscred_provider *P;
static struct ec2_client *C;

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

static void run_one(struct ec2_instance_list *l, const char *token,
		    bool spot)
{
	struct ec2_tag tags[] = { { "job", "42" }, { "owner", "proteus" } };
	struct ec2_run_req r = {
		.spec = { .image_id = "ami-1", .instance_type = "c5.large",
			  .zone = "us-east-1b", .user_data = "#!/bin/sh\n",
			  .user_data_len = 10 },
		.client_token = token, .tags = tags, .n_tags = 2,
		.spot = spot, .max_price_uusd = spot ? 50000 : 0,
	};
	struct px_error err;

	cr_assert_eq(ec2_run_instances(C, &r, l, &err, NULL), PX_OK, "%s",
		     err.msg);
}

TestSuite(ec2, .init = setup, .fini = teardown, .timeout = 30);

Test(ec2, run_describe_terminate_tags)
{
	struct ec2_instance_list l = { 0 }, d = { 0 };
	struct px_error err;
	const char *ids[1];
	const char *run[] = { "running" };
	struct ec2_filter f[] = { { "tag:job", (const char *[]){ "42" }, 1 },
				  { "instance-state-name", run, 1 } };
	struct ec2_tag extra = { "stage", "2" };

	run_one(&l, NULL, false);
	cr_assert_eq(l.n, 1);
	cr_assert_str_eq(l.v[0].type, "c5.large");
	cr_assert_str_eq(l.v[0].zone, "us-east-1b");
	cr_assert_str_eq(l.v[0].state, "pending");
	cr_assert_eq(l.v[0].n_tags, 2);
	cr_assert_str_eq(l.v[0].lifecycle, "");
	cr_assert_eq(strlen(l.v[0].client_token), 32); /* generated */
	ids[0] = l.v[0].id;
	/* user data arrives base64-encoded */
	json_t *s = fake_ctl(&F, NULL);
	json_t *i0 = json_array_get(json_object_get(s, "instances"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(i0, "user_data")),
			 "IyEvYmluL3NoCg==");
	cr_assert_str_eq(json_string_value(json_object_get(
		json_object_get(s, "last_headers"), "user-agent")),
		"proteus/" PX_VERSION);
	json_decref(s);

	cr_assert_eq(ec2_describe_instances(C, ids, 1, NULL, 0, false, &d,
					    &err, NULL), PX_OK, "%s", err.msg);
	cr_assert_eq(d.n, 1);
	ec2_instance_list_release(&d);
	cr_assert_eq(ec2_describe_instances(C, NULL, 0, f, 2, false, &d,
					    &err, NULL), PX_OK, "%s", err.msg);
	cr_assert_eq(d.n, 1, "filters: %zu", d.n);
	cr_assert_str_eq(d.v[0].state, "running");
	ec2_instance_list_release(&d);

	cr_assert_eq(ec2_create_tags(C, ids, 1, &extra, 1, &err, NULL), PX_OK,
		     "%s", err.msg);
	cr_assert_eq(ec2_describe_instances(C, ids, 1, NULL, 0, false, &d,
					    &err, NULL), PX_OK);
	cr_assert_eq(d.v[0].n_tags, 3);
	ec2_instance_list_release(&d);

	cr_assert_eq(ec2_terminate_instances(C, ids, 1, &err, NULL), PX_OK);
	cr_assert_eq(ec2_describe_instances(C, ids, 1, NULL, 0, false, &d,
					    &err, NULL), PX_OK);
	cr_assert_str_eq(d.v[0].state, "terminated");
	cr_assert_eq(d.v[0].state_code, 48);
	ec2_instance_list_release(&d);
	ec2_instance_list_release(&l);
}

Test(ec2, describe_instances_pages)
{
	struct ec2_instance_list l = { 0 };
	struct px_error err;
	json_t *s;

	for (int i = 0; i < 3; i++) {
		struct ec2_instance_list one = { 0 };

		run_one(&one, NULL, false);
		ec2_instance_list_release(&one);
	}
	/* page size 5 minimum in EC2: make 12, read all */
	for (int i = 0; i < 9; i++) {
		struct ec2_instance_list one = { 0 };

		run_one(&one, NULL, false);
		ec2_instance_list_release(&one);
	}
	cr_assert_eq(ec2_describe_instances(C, NULL, 0, NULL, 0, false, &l,
					    &err, NULL), PX_OK, "%s", err.msg);
	cr_assert_eq(l.n, 12);
	ec2_instance_list_release(&l);
	/* the fake pages at MaxResults; check the raw paging by hand */
	struct ec2_params p;
	struct ec2_response r;
	char *tok = NULL;

	ec2_params_init(&p, "DescribeInstances");
	ec2_params_add(&p, "MaxResults", "5");
	cr_assert_eq(ec2_call(C, &p, &r, &err, NULL), PX_OK);
	cr_assert_eq(ec2_parse_instances(r.root, &l, &err), PX_OK);
	cr_assert_eq(l.n, 5);
	cr_assert_eq(ec2_parse_next_token(r.root, &tok, &err), PX_OK);
	cr_assert(tok[0]);
	free(tok);
	ec2_response_release(&r);
	ec2_instance_list_release(&l);
	s = fake_ctl(&F, NULL);
	json_decref(s);
}

static enum px_err count_rec(const struct trace_record *r, void *ctx,
			     struct px_error *err)
{
	int64_t *acc = ctx;

	(void)err;
	cr_assert_str_eq(r->product, "Linux/UNIX");
	cr_assert(r->t_s >= 1705276800);
	acc[0]++;
	acc[1] += r->price_uusd;
	if (strcmp(r->zone, "us-east-1b") == 0)
		acc[2]++;
	return PX_OK;
}

Test(ec2, spot_price_history_all_pages)
{
	/* 2500 records: three pages of 1000 */
	size_t cap = 2500 * 140 + 64, len = 0;
	char *cmd = malloc(cap);
	int64_t acc[3] = { 0 }, want = 0;
	const char *types[] = { "c5.large", "m5.large" };
	const char *zones[] = { "us-east-1a", "us-east-1b" };
	struct px_error err;

	len += (size_t)snprintf(cmd + len, cap - len, "{\"prices\":[");
	for (int i = 0; i < 2500; i++) {
		int64_t price = 10000 + i;

		len += (size_t)snprintf(cmd + len, cap - len,
			"%s{\"zone\":\"us-east-1%c\",\"type\":\"%s\","
			"\"price\":\"0.%06lld\",\"ts\":%d}", i ? "," : "",
			"ab"[i % 2], i % 5 ? "c5.large" : "m5.large",
			(long long)price, 1705276800 + i * 60);
		want += price;
	}
	snprintf(cmd + len, cap - len, "]}");
	json_decref(fake_ctl(&F, cmd));
	free(cmd);
	cr_assert_eq(ec2_describe_spot_price_history_all(C, types, 2, zones, 2,
		NULL, 1705276800, 1705276800 + 3 * 86400, count_rec, acc,
		&err, NULL), PX_OK, "%s", err.msg);
	cr_assert_eq(acc[0], 2500);
	cr_assert_eq(acc[1], want);
	cr_assert_eq(acc[2], 1250);
	json_t *s = fake_ctl(&F, NULL);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(s,
		"calls"), "DescribeSpotPriceHistory")), 4); /* 2+2 pages */
	json_decref(s);
}

Test(ec2, spot_request_lifecycle)
{
	struct ec2_spot_req r = {
		.spec = { .image_id = "ami-1", .instance_type = "c5.large" },
		.bid_uusd = 40000,
	};
	struct ec2_spot_request_list l = { 0 }, d = { 0 };
	struct px_error err;
	const char *ids[1];

	cr_assert_eq(ec2_request_spot_instances(C, &r, &l, &err, NULL), PX_OK,
		     "%s", err.msg);
	cr_assert_eq(l.n, 1);
	cr_assert_str_eq(l.v[0].state, "open");
	cr_assert_str_eq(l.v[0].status_code, "pending-evaluation");
	cr_assert_eq(l.v[0].price_uusd, 40000);
	ids[0] = l.v[0].id;
	/* market above the bid, then below, then a spike: the trace */
	json_decref(fake_ctl(&F, "{\"trace\":{\"c5.large\":[0.05,0.03,0.03,"
			     "0.09,0.09]},\"spot_tick\":1}"));
	cr_assert_eq(ec2_describe_spot_requests(C, ids, 1, NULL, 0, false, &d,
						&err, NULL), PX_OK);
	cr_assert_str_eq(d.v[0].status_code, "price-too-low");
	ec2_spot_request_list_release(&d);
	json_decref(fake_ctl(&F, "{\"spot_tick\":1}"));
	cr_assert_eq(ec2_describe_spot_requests(C, ids, 1, NULL, 0, false, &d,
						&err, NULL), PX_OK);
	cr_assert_str_eq(d.v[0].state, "active");
	cr_assert_str_eq(d.v[0].status_code, "fulfilled");
	cr_assert(d.v[0].instance_id[0]);
	ec2_spot_request_list_release(&d);
	json_decref(fake_ctl(&F, "{\"spot_tick\":2}"));
	cr_assert_eq(ec2_describe_spot_requests(C, ids, 1, NULL, 0, false, &d,
						&err, NULL), PX_OK);
	cr_assert_str_eq(d.v[0].status_code, "marked-for-termination");
	ec2_spot_request_list_release(&d);
	json_decref(fake_ctl(&F, "{\"spot_tick\":1}"));
	cr_assert_eq(ec2_describe_spot_requests(C, ids, 1, NULL, 0, false, &d,
						&err, NULL), PX_OK);
	cr_assert_str_eq(d.v[0].state, "closed");
	cr_assert_str_eq(d.v[0].status_code, "instance-terminated-by-price");
	const char *iid[] = { d.v[0].instance_id };
	struct ec2_instance_list il = { 0 };
	cr_assert_eq(ec2_describe_instances(C, iid, 1, NULL, 0, false, &il,
					    &err, NULL), PX_OK);
	cr_assert_str_eq(il.v[0].state, "terminated");
	cr_assert_str_eq(il.v[0].state_reason_code, "Server.SpotInstanceTermination");
	cr_assert_str_eq(il.v[0].lifecycle, "spot");
	ec2_instance_list_release(&il);
	ec2_spot_request_list_release(&d);
	cr_assert_eq(ec2_cancel_spot_requests(C, ids, 1, &err, NULL), PX_OK);
	ec2_spot_request_list_release(&l);
}

Test(ec2, spot_run_instances_and_cancel)
{
	struct ec2_instance_list l = { 0 };
	struct ec2_spot_req r = {
		.spec = { .image_id = "ami-1", .instance_type = "c5.large" },
		.bid_uusd = 10000, .count = 2,
	};
	struct ec2_spot_request_list s = { 0 }, d = { 0 };
	struct px_error err;
	const char *open_[] = { "open" };
	struct ec2_filter f = { "state", open_, 1 };

	run_one(&l, "tok-spot-1", true);
	cr_assert_str_eq(l.v[0].lifecycle, "spot");
	cr_assert(l.v[0].spot_request_id[0]);
	ec2_instance_list_release(&l);
	cr_assert_eq(ec2_request_spot_instances(C, &r, &s, &err, NULL), PX_OK);
	cr_assert_eq(s.n, 2);
	const char *ids[] = { s.v[0].id, s.v[1].id };
	cr_assert_eq(ec2_cancel_spot_requests(C, ids, 2, &err, NULL), PX_OK);
	cr_assert_eq(ec2_describe_spot_requests(C, NULL, 0, &f, 1, false, &d,
						&err, NULL), PX_OK);
	cr_assert_eq(d.n, 0);
	ec2_spot_request_list_release(&d);
	cr_assert_eq(ec2_describe_spot_requests(C, ids, 2, NULL, 0, false, &d,
						&err, NULL), PX_OK);
	cr_assert_str_eq(d.v[0].state, "cancelled");
	cr_assert_str_eq(d.v[1].status_code, "canceled-before-fulfillment");
	ec2_spot_request_list_release(&d);
	ec2_spot_request_list_release(&s);
}

Test(ec2, spot_max_price_too_low)
{
	struct ec2_run_req r = {
		.spec = { .image_id = "ami-1", .instance_type = "c5.large" },
		.spot = true, .max_price_uusd = 1000,
	};
	struct ec2_instance_list l = { 0 };
	struct ec2_aws_error aws;
	struct px_error err;

	cr_assert_eq(ec2_run_instances(C, &r, &l, &err, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "SpotMaxPriceTooLow");
	cr_assert_eq(aws.http_status, 400);
	cr_assert_eq(aws.attempts, 1);
	cr_assert(aws.request_id[0]);
	cr_assert(strstr(err.msg, "SpotMaxPriceTooLow"), "%s", err.msg);
	cr_assert(strstr(err.msg, aws.request_id), "%s", err.msg);
}

/* What ec2_api_stats says of action: calls and throttled. */
static void api_stat(const char *action, uint64_t *calls, uint64_t *thr)
{
	struct ec2_api_stat v[EC2_STATS_MAX];
	size_t n = ec2_api_stats(v, EC2_STATS_MAX);

	*calls = *thr = 0;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].action, action)) {
			*calls = v[i].calls;
			*thr = v[i].throttled;
		}
}

Test(ec2, throttle_burst_retried)
{
	struct ec2_instance_list l = { 0 };
	uint64_t calls0, thr0, calls, thr;
	json_t *s;

	api_stat("RunInstances", &calls0, &thr0);
	json_decref(fake_ctl(&F, "{\"faults\":[{\"op\":\"RunInstances\","
		"\"kind\":\"error\",\"code\":\"RequestLimitExceeded\","
		"\"status\":503,\"count\":2}]}"));
	run_one(&l, NULL, false);
	ec2_instance_list_release(&l);
	s = fake_ctl(&F, NULL);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(s,
		"attempts"), "RunInstances")), 3);
	json_decref(s);
	cr_assert_eq(fake_count(&F, "instances"), 1);
	/* /metrics' counters: every attempt, the two throttled */
	api_stat("RunInstances", &calls, &thr);
	cr_assert_eq(calls - calls0, 3);
	cr_assert_eq(thr - thr0, 2);
}

Test(ec2, throttle_attempt_cap)
{
	struct ec2_instance_list l = { 0 };
	struct ec2_run_req r = {
		.spec = { .image_id = "ami-1", .instance_type = "c5.large" } };
	struct ec2_aws_error aws;
	struct px_error err;

	json_decref(fake_ctl(&F, "{\"faults\":[{\"kind\":\"error\","
		"\"code\":\"RequestLimitExceeded\",\"status\":503,"
		"\"count\":10}]}"));
	cr_assert_eq(ec2_run_instances(C, &r, &l, &err, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "RequestLimitExceeded");
	cr_assert_eq(aws.http_status, 503);
	cr_assert_eq(aws.attempts, 3);
	cr_assert_eq(fake_count(&F, "instances"), 0);
}

static void fault_then_ok(const char *fault, int want_attempts)
{
	struct ec2_instance_list l = { 0 };
	char cmd[256];
	json_t *s;

	snprintf(cmd, sizeof cmd, "{\"faults\":[%s]}", fault);
	json_decref(fake_ctl(&F, cmd));
	run_one(&l, NULL, false);
	cr_assert_eq(l.n, 1);
	ec2_instance_list_release(&l);
	s = fake_ctl(&F, NULL);
	cr_assert_geq(json_integer_value(json_object_get(json_object_get(s,
		"attempts"), "RunInstances")), want_attempts, "%s", fault);
	json_decref(s);
	cr_assert_eq(fake_count(&F, "instances"), 1, "%s", fault);
}

Test(ec2, server_errors_retried)
{
	fault_then_ok("{\"kind\":\"error\",\"code\":\"InternalError\","
		      "\"status\":500}", 2);
}

Test(ec2, unavailable_and_bad_gateway_retried)
{
	fault_then_ok("{\"kind\":\"error\",\"code\":\"Unavailable\","
		      "\"status\":503},{\"kind\":\"status\",\"status\":502}",
		      3);
}

Test(ec2, dropped_response_creates_once)
{
	/* the fake creates the instance, then closes without answering:
	 * the retry carries the same ClientToken */
	fault_then_ok("{\"kind\":\"drop_after\",\"op\":\"RunInstances\"}", 2);
}

Test(ec2, dropped_request_retried)
{
	fault_then_ok("{\"kind\":\"drop\"}", 2);
}

Test(ec2, truncated_body_retried)
{
	fault_then_ok("{\"kind\":\"truncate\"}", 2);
}

Test(ec2, slow_response_times_out_then_retries)
{
	struct ec2_config cfg = { 0 };
	struct ec2_client *c2;
	struct ec2_instance_list l = { 0 };
	struct ec2_run_req r = {
		.spec = { .image_id = "ami-1", .instance_type = "c5.large" },
		.client_token = "slow-1" };
	struct px_error err;

	cfg.region = "us-east-1";
	cfg.endpoint = F.url;
	cfg.creds = P;
	cfg.backoff_base_us = 1000;
	cfg.timeout_us = 300000;
	cr_assert_eq(ec2_client_new(&cfg, &c2, &err), PX_OK);
	json_decref(fake_ctl(&F, "{\"faults\":[{\"kind\":\"slow\","
			     "\"delay\":1.0}]}"));
	cr_assert_eq(ec2_run_instances(c2, &r, &l, &err, NULL), PX_OK, "%s",
		     err.msg);
	ec2_instance_list_release(&l);
	ec2_client_free(c2);
	cr_assert_eq(fake_count(&F, "instances"), 1);
}

Test(ec2, malformed_and_truncated_xml_are_clear_errors)
{
	struct ec2_instance_list l = { 0 };
	struct px_error err;

	json_decref(fake_ctl(&F, "{\"faults\":[{\"kind\":\"malformed\","
		"\"op\":\"DescribeInstances\"},{\"kind\":\"truncate_xml\","
		"\"op\":\"DescribeInstances\"}]}"));
	cr_assert_eq(ec2_describe_instances(C, NULL, 0, NULL, 0, false, &l,
					    &err, NULL), PX_EPROTO);
	cr_assert(strstr(err.msg, "DescribeInstances"), "%s", err.msg);
	cr_assert(strstr(err.msg, "malformed"), "%s", err.msg);
	cr_assert_eq(ec2_describe_instances(C, NULL, 0, NULL, 0, false, &l,
					    &err, NULL), PX_EPROTO);
	cr_assert_eq(ec2_describe_instances(C, NULL, 0, NULL, 0, false, &l,
					    &err, NULL), PX_OK);
	ec2_instance_list_release(&l);
}

Test(ec2, oversized_response_refused)
{
	struct ec2_instance_list l = { 0 };
	struct px_error err;

	json_decref(fake_ctl(&F, "{\"faults\":[{\"kind\":\"huge\","
		"\"size\":17000000}]}"));
	cr_assert_eq(ec2_describe_instances(C, NULL, 0, NULL, 0, false, &l,
					    &err, NULL), PX_ETOOBIG, "%s",
		     err.msg);
}

Test(ec2, not_found_after_create)
{
	struct ec2_instance_list l = { 0 }, d = { 0 };
	struct ec2_aws_error aws;
	struct px_error err;

	run_one(&l, NULL, false);
	const char *ids[] = { l.v[0].id };
	json_decref(fake_ctl(&F, "{\"faults\":[{\"op\":\"DescribeInstances\","
		"\"kind\":\"error\",\"code\":\"InvalidInstanceID.NotFound\","
		"\"status\":400,\"count\":2}]}"));
	/* without the flag: a clear error, not retried */
	cr_assert_eq(ec2_describe_instances(C, ids, 1, NULL, 0, false, &d,
					    &err, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "InvalidInstanceID.NotFound");
	cr_assert_eq(aws.attempts, 1);
	/* with it: retried past the eventual-consistency window */
	cr_assert_eq(ec2_describe_instances(C, ids, 1, NULL, 0, true, &d,
					    &err, &aws), PX_OK, "%s", err.msg);
	cr_assert_eq(d.n, 1);
	ec2_instance_list_release(&d);
	ec2_instance_list_release(&l);
}

Test(ec2, bad_secret_signature_does_not_match)
{
	struct awscred_provider *p2;
	struct ec2_client *c2 = fake_client(&F, FAKE_AKID, "not-the-secret",
					    NULL, &p2);
	struct ec2_instance_list l = { 0 };
	struct ec2_aws_error aws;
	struct px_error err;

	cr_assert_eq(ec2_describe_instances(c2, NULL, 0, NULL, 0, false, &l,
					    &err, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "SignatureDoesNotMatch");
	cr_assert_eq(aws.http_status, 403);
	cr_assert_eq(aws.attempts, 1);
	cr_assert_null(strstr(err.msg, "not-the-secret"));
	ec2_client_free(c2);
	awscred_provider_free(p2);
}

Test(ec2, unknown_key_auth_failure)
{
	struct awscred_provider *p2;
	struct ec2_client *c2 = fake_client(&F, "AKIDUNKNOWN", "x", NULL,
					    &p2);
	struct ec2_instance_list l = { 0 };
	struct ec2_aws_error aws;
	struct px_error err;

	cr_assert_eq(ec2_describe_instances(c2, NULL, 0, NULL, 0, false, &l,
					    &err, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "AuthFailure");
	cr_assert_eq(aws.http_status, 401);
	ec2_client_free(c2);
	awscred_provider_free(p2);
}

Test(ec2, session_token_signed)
{
	struct awscred_provider *p2;
	struct ec2_client *c2;
	struct ec2_instance_list l = { 0 };
	struct ec2_aws_error aws;
	struct px_error err;

	json_decref(fake_ctl(&F, "{\"keys\":{\"ASIATEMP\":{\"secret\":"
		"\"tmpSecret/+=\",\"token\":\"FQoGZXIvYXdzEXAMPLE+/=TOKEN\"}}}"));
	c2 = fake_client(&F, "ASIATEMP", "tmpSecret/+=",
			 "FQoGZXIvYXdzEXAMPLE+/=TOKEN", &p2);
	cr_assert_eq(ec2_describe_instances(c2, NULL, 0, NULL, 0, false, &l,
					    &err, &aws), PX_OK, "%s", err.msg);
	ec2_client_free(c2);
	awscred_provider_free(p2);
	c2 = fake_client(&F, "ASIATEMP", "tmpSecret/+=", "wrong-token", &p2);
	cr_assert_eq(ec2_describe_instances(c2, NULL, 0, NULL, 0, false, &l,
					    &err, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "AuthFailure");
	ec2_client_free(c2);
	awscred_provider_free(p2);
}

Test(ec2, clock_skew_explained)
{
	struct ec2_instance_list l = { 0 };
	struct ec2_aws_error aws;
	struct px_error err;

	json_decref(fake_ctl(&F, "{\"clock_offset\":3600}"));
	cr_assert_eq(ec2_describe_instances(C, NULL, 0, NULL, 0, false, &l,
					    &err, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "RequestExpired");
	cr_assert(strstr(err.msg, "clock"), "%s", err.msg);
	cr_assert(strstr(err.msg, "NTP"), "%s", err.msg);
}

Test(ec2, idempotency_mismatch)
{
	struct ec2_instance_list l = { 0 };
	struct ec2_run_req r = {
		.spec = { .image_id = "ami-2", .instance_type = "m5.large" },
		.client_token = "same-token" };
	struct ec2_aws_error aws;
	struct px_error err;

	run_one(&l, "same-token", false);
	ec2_instance_list_release(&l);
	run_one(&l, "same-token", false); /* same params: same instance */
	ec2_instance_list_release(&l);
	cr_assert_eq(fake_count(&F, "instances"), 1);
	cr_assert_eq(ec2_run_instances(C, &r, &l, &err, &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "IdempotentParameterMismatch");
}

/* ---- secrets stay out of every trace line and error */
struct trace {
	char *p;
	size_t n;
};

static void on_debug(const char *t, size_t n, void *ctx)
{
	struct trace *tr = ctx;

	tr->p = realloc(tr->p, tr->n + n + 1);
	memcpy(tr->p + tr->n, t, n);
	tr->n += n;
	tr->p[tr->n] = '\0';
}

Test(ec2, no_secret_in_traces_or_errors)
{
	const char *secret = "SeCrEtKeyNeverLogged/0123456789abcdefXYZ";
	const char *token = "ToKeNNeverLogged+abc/def==";
	struct awscred cr = { 0 };
	struct awscred_provider *p2;
	struct ec2_config cfg = { 0 };
	struct ec2_client *c2;
	struct trace tr = { 0 };
	struct ec2_instance_list l = { 0 };
	struct ec2_aws_error aws;
	struct px_error err;
	char cmd[256];

	snprintf(cmd, sizeof cmd, "{\"keys\":{\"ASIALOG\":{\"secret\":\"%s\","
		 "\"token\":\"%s\"}},\"faults\":[{\"kind\":\"error\","
		 "\"status\":500,\"code\":\"InternalError\"}]}", secret, token);
	json_decref(fake_ctl(&F, cmd));
	snprintf(cr.access_key_id, sizeof cr.access_key_id, "ASIALOG");
	snprintf(cr.secret_access_key, sizeof cr.secret_access_key, "%s",
		 secret);
	snprintf(cr.session_token, sizeof cr.session_token, "%s", token);
	cr_assert_eq(awscred_provider_static(&cr, &p2, &err), PX_OK);
	cfg.region = "us-east-1";
	cfg.endpoint = F.url;
	cfg.creds = p2;
	cfg.backoff_base_us = 1000;
	cfg.debug_fn = on_debug;
	cfg.debug_ctx = &tr;
	cr_assert_eq(ec2_client_new(&cfg, &c2, &err), PX_OK);
	cr_assert_eq(ec2_describe_instances(c2, NULL, 0, NULL, 0, false, &l,
					    &err, &aws), PX_OK, "%s", err.msg);
	cr_assert_eq(ec2_describe_instances(c2, (const char *[]){ "i-nope" },
					    1, NULL, 0, false, &l, &err, &aws),
		     PX_EAWS);
	cr_assert(tr.n > 200, "trace captured");
	cr_assert(strstr(tr.p, "X-Amz-Security-Token: [redacted]"), "%s",
		  tr.p);
	cr_assert_null(strstr(tr.p, secret));
	cr_assert_null(strstr(tr.p, token));
	cr_assert_null(strstr(err.msg, secret));
	cr_assert_null(strstr(err.msg, token));
	cr_assert_null(strstr(aws.message, secret));
	free(tr.p);
	ec2_client_free(c2);
	awscred_provider_free(p2);
}

/* ---- asynchronous use through the event-loop hooks */
#define MAXFD 64
struct loop {
	struct pollfd fds[MAXFD];
	int nfds;
	long timer_ms;
	int done;
	int ok;
};

static void on_socket(int fd, int what, void *ctx)
{
	struct loop *lp = ctx;
	int i;

	for (i = 0; i < lp->nfds && lp->fds[i].fd != fd; i++)
		;
	if (what & EC2_POLL_REMOVE) {
		if (i < lp->nfds)
			lp->fds[i] = lp->fds[--lp->nfds];
		return;
	}
	if (i == lp->nfds) {
		cr_assert_lt(lp->nfds, MAXFD);
		lp->nfds++;
	}
	lp->fds[i].fd = fd;
	lp->fds[i].events = (short)(((what & EC2_POLL_IN) ? POLLIN : 0) |
				    ((what & EC2_POLL_OUT) ? POLLOUT : 0));
}

static void on_timer(long ms, void *ctx)
{
	((struct loop *)ctx)->timer_ms = ms;
}

static void on_done(enum px_err rc, struct ec2_response *resp,
		    const struct px_error *err,
		    const struct ec2_aws_error *aws, void *ctx)
{
	struct loop *lp = ctx;
	struct ec2_instance_list l = { 0 };

	(void)aws;
	lp->done++;
	cr_assert_eq(rc, PX_OK, "%s", err ? err->msg : "");
	cr_assert_eq(ec2_parse_instances(resp->root, &l, NULL), PX_OK);
	lp->ok += l.n == 1;
	ec2_instance_list_release(&l);
}

Test(ec2, event_loop_hooks_with_retries)
{
	struct loop lp = { .timer_ms = -1 };
	struct ec2_config cfg = { 0 };
	struct ec2_client *c2;
	struct px_error err;

	cfg.region = "us-east-1";
	cfg.endpoint = F.url;
	cfg.creds = P;
	cfg.backoff_base_us = 20000;
	cfg.socket_fn = on_socket;
	cfg.timer_fn = on_timer;
	cfg.hook_ctx = &lp;
	cr_assert_eq(ec2_client_new(&cfg, &c2, &err), PX_OK);
	json_decref(fake_ctl(&F, "{\"faults\":[{\"kind\":\"error\","
		"\"code\":\"RequestLimitExceeded\",\"status\":503,"
		"\"count\":4}]}"));
	for (int i = 0; i < 8; i++) {
		struct ec2_run_req r = { .spec = { .image_id = "ami-1",
			.instance_type = "c5.large" } };
		struct ec2_params p;

		cr_assert_eq(ec2_build_run_instances(&r, &p, &err), PX_OK);
		cr_assert_eq(ec2_call_start(c2, &p, on_done, &lp, &err), PX_OK);
	}
	cr_assert_eq(lp.done, 0, "callbacks run later, not in start");
	/* blocking calls are refused on a hooked client */
	struct ec2_params p;
	struct ec2_response r;
	ec2_params_init(&p, "DescribeInstances");
	cr_assert_eq(ec2_call(c2, &p, &r, &err, NULL), PX_EINVAL);
	for (int spins = 0; lp.done < 8 && spins < 10000; spins++) {
		int n = poll(lp.fds, (nfds_t)lp.nfds,
			     lp.timer_ms < 0 ? 1000 : (int)lp.timer_ms);

		cr_assert_geq(n, 0);
		if (n == 0) {
			ec2_client_on_timeout(c2);
			continue;
		}
		for (int i = 0; i < lp.nfds; i++) {
			int w = 0;

			if (lp.fds[i].revents & (POLLIN | POLLHUP | POLLERR))
				w |= EC2_POLL_IN;
			if (lp.fds[i].revents & POLLOUT)
				w |= EC2_POLL_OUT;
			if (w) {
				ec2_client_on_socket(c2, lp.fds[i].fd, w);
				break; /* the fd set may have changed */
			}
		}
	}
	cr_assert_eq(lp.done, 8);
	cr_assert_eq(lp.ok, 8);
	cr_assert_eq(ec2_client_pending(c2), 0);
	ec2_client_free(c2);
	cr_assert_eq(fake_count(&F, "instances"), 8);
}

Test(ec2, free_cancels_pending)
{
	struct loop lp = { .timer_ms = -1 };
	struct ec2_params p;
	struct px_error err;
	int calls = 0;

	(void)lp;
	ec2_params_init(&p, "DescribeInstances");
	cr_assert_eq(ec2_call_start(C, &p, (ec2_done_fn)(void (*)(void))NULL,
				    &calls, &err), PX_OK);
	cr_assert_eq(ec2_client_pending(C), 1);
	ec2_client_free(C);
	C = NULL;
}

/* A call started from a completion callback must go out at once: it used
 * to wait for the next poll's whole timeout (1 s here), so a chain of
 * calls (pagination, the daemon's loop) crawled at a few per second. */
struct chain {
	int left, done, failed;
};

static void chain_done(enum px_err rc, struct ec2_response *resp,
		       const struct px_error *err,
		       const struct ec2_aws_error *aws, void *ctx)
{
	struct chain *ch = ctx;
	struct ec2_params p;
	struct px_error e;

	ch->done++;
	ch->failed += rc != PX_OK;
	if (rc != PX_OK || --ch->left <= 0)
		return;
	ec2_params_init(&p, "DescribeSpotPriceHistory");
	ec2_params_add(&p, "MaxResults", "5");
	cr_assert_eq(ec2_call_start(C, &p, chain_done, ch, &e), PX_OK);
}

Test(ec2, chained_calls_do_not_stall)
{
	struct chain ch = { .left = 200 };
	uint64_t t0 = px_now_mono_us();
	struct ec2_params p;
	struct px_error err;

	ec2_params_init(&p, "DescribeSpotPriceHistory");
	ec2_params_add(&p, "MaxResults", "5");
	cr_assert_eq(ec2_call_start(C, &p, chain_done, &ch, &err), PX_OK);
	while (ec2_client_pending(C) > 0)
		cr_assert_eq(ec2_client_step(C, 1000), PX_OK);
	cr_assert_eq(ch.done, 200);
	cr_assert_eq(ch.failed, 0);
	cr_assert_lt(px_now_mono_us() - t0, 3 * PX_USEC_PER_SEC,
		     "200 chained calls took %.1f s",
		     (double)(px_now_mono_us() - t0) / 1e6);
}
