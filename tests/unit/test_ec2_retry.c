/* test_ec2_retry.c -- standard-mode retry rules, the full-jitter backoff
 * schedule (seeded) and the retry quota; request encoding; parsing of the
 * sample responses (tests/ec2/samples, checked by botocore). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cloudapi/ec2_int.h"
#include "../integration/pxrun.h"

Test(ec2_retry, classification)
{
	cr_assert(ec2_retry_is_retryable(503, "RequestLimitExceeded", false));
	cr_assert(ec2_retry_is_retryable(400, "RequestLimitExceeded", false));
	cr_assert(ec2_retry_is_retryable(400, "EC2ThrottledException", false));
	cr_assert(ec2_retry_is_retryable(500, "InsufficientInstanceCapacity",
					 false));
	cr_assert(ec2_retry_is_retryable(500, "InternalError", false));
	cr_assert(ec2_retry_is_retryable(502, "", false));
	cr_assert(ec2_retry_is_retryable(504, NULL, false));
	cr_assert(ec2_retry_is_retryable(0, "", false)); /* transport */
	cr_assert(ec2_retry_is_retryable(400, "RequestTimeout", false));
	cr_assert_not(ec2_retry_is_retryable(401, "AuthFailure", false));
	cr_assert_not(ec2_retry_is_retryable(403, "SignatureDoesNotMatch",
					     false));
	cr_assert_not(ec2_retry_is_retryable(403, "UnauthorizedOperation",
					     false));
	cr_assert_not(ec2_retry_is_retryable(400, "RequestExpired", false));
	cr_assert_not(ec2_retry_is_retryable(400, "SpotMaxPriceTooLow", true));
	cr_assert_not(ec2_retry_is_retryable(412, "DryRunOperation", false));
	cr_assert_not(ec2_retry_is_retryable(400, "InvalidInstanceID.NotFound",
					     false));
	cr_assert(ec2_retry_is_retryable(400, "InvalidInstanceID.NotFound",
					 true));
	cr_assert(ec2_retry_is_retryable(
		400, "InvalidSpotInstanceRequestID.NotFound", true));
	cr_assert_not(ec2_retry_is_retryable(400, "InvalidInstanceID.Malformed",
					     true));
	cr_assert(ec2_retry_is_throttle("Throttling"));
	cr_assert_not(ec2_retry_is_throttle("InternalError"));
}

Test(ec2_retry, full_jitter_schedule)
{
	const uint64_t base = 1000000, cap = 20000000;
	uint64_t rng = 7, max_seen[12] = { 0 }, sum[12] = { 0 };
	const int n = 4000;

	for (int i = 0; i < n; i++)
		for (int a = 1; a <= 10; a++) {
			uint64_t d = ec2_retry_delay_us(a, base, cap, &rng);
			uint64_t ceil_us = base << (a - 1);

			if (ceil_us > cap)
				ceil_us = cap;
			cr_assert_lt(d, ceil_us, "attempt %d: %llu", a,
				     (unsigned long long)d);
			if (d > max_seen[a])
				max_seen[a] = d;
			sum[a] += d;
		}
	/* uniform on [0, ceil): the mean is about ceil/2, the max near ceil */
	for (int a = 1; a <= 10; a++) {
		uint64_t ceil_us = base << (a - 1);
		double mean;

		if (ceil_us > cap)
			ceil_us = cap;
		mean = (double)sum[a] / n;
		cr_assert(mean > 0.45 * ceil_us && mean < 0.55 * ceil_us,
			  "attempt %d mean %f", a, mean);
		cr_assert_gt(max_seen[a], 0.98 * ceil_us);
	}
	/* capped at 20 s from the 6th retry on (2^5 s = 32 s > 20 s) */
	cr_assert_gt(max_seen[6], 19000000);
	cr_assert_lt(max_seen[10], 20000000);
	/* deterministic for a seed */
	uint64_t r1 = 99, r2 = 99;
	for (int a = 1; a < 6; a++)
		cr_assert_eq(ec2_retry_delay_us(a, base, cap, &r1),
			     ec2_retry_delay_us(a, base, cap, &r2));
	cr_assert_eq(ec2_retry_delay_us(3, 0, cap, &r1), 0);
	/* huge attempt numbers do not overflow */
	cr_assert_lt(ec2_retry_delay_us(1000, base, cap, &r1), cap);
}

Test(ec2_retry, quota)
{
	struct ec2_quota q;
	int cost, n = 0;

	ec2_quota_init(&q);
	while (ec2_quota_acquire(&q, false, &cost))
		n++;
	cr_assert_eq(n, EC2_QUOTA_MAX / EC2_QUOTA_RETRY_COST);
	cr_assert_not(ec2_quota_acquire(&q, true, &cost));
	ec2_quota_success(&q, 5);
	cr_assert(ec2_quota_acquire(&q, false, &cost));
	cr_assert_eq(cost, 5);
	cr_assert_not(ec2_quota_acquire(&q, false, &cost));
	for (int i = 0; i < 10; i++)
		ec2_quota_success(&q, 0);
	cr_assert(ec2_quota_acquire(&q, true, &cost));
	cr_assert_eq(cost, 10);
	for (int i = 0; i < 1000; i++)
		ec2_quota_success(&q, 10);
	cr_assert_eq(q.tokens, EC2_QUOTA_MAX);
}

Test(ec2_params, encoding)
{
	struct ec2_params p;
	char *body = NULL;
	struct px_error err;

	ec2_params_init(&p, "DescribeSpotPriceHistory");
	ec2_params_add(&p, "InstanceType.1", "c5.large");
	ec2_params_add(&p, "ProductDescription.1", "Linux/UNIX");
	ec2_params_addf(&p, "a b&c=d~", "Filter.%d.Value.%d", 1, 2);
	cr_assert_eq(ec2_params_encode(&p, &body, &err), PX_OK);
	cr_assert_str_eq(body, "Action=DescribeSpotPriceHistory&Version="
			 "2016-11-15&InstanceType.1=c5.large&"
			 "ProductDescription.1=Linux%2FUNIX&"
			 "Filter.1.Value.2=a%20b%26c%3Dd~");
	free(body);
	ec2_params_release(&p);
}

Test(ec2_params, run_instances_wire_names)
{
	struct ec2_tag t = { "Name", "job 42" };
	const char *sg[] = { "sg-1", "sg-2" };
	struct ec2_run_req r = {
		.spec = { .image_id = "ami-1", .instance_type = "c5.large",
			  .zone = "us-east-1a", .security_group_ids = sg,
			  .n_security_groups = 2, .user_data = "hi",
			  .user_data_len = 2 },
		.spot = true, .max_price_uusd = 50000, .client_token = "t-1",
		.tags = &t, .n_tags = 1, .min_count = 2,
	};
	struct ec2_params p;
	struct px_error err;
	char *body;

	cr_assert_eq(ec2_build_run_instances(&r, &p, &err), PX_OK);
	cr_assert_eq(ec2_params_encode(&p, &body, &err), PX_OK);
	const char *want[] = {
		"Action=RunInstances", "ImageId=ami-1", "MinCount=2",
		"MaxCount=2", "ClientToken=t-1",
		"Placement.AvailabilityZone=us-east-1a",
		"SecurityGroupId.2=sg-2", "UserData=aGk%3D",
		"InstanceMarketOptions.MarketType=spot",
		"InstanceMarketOptions.SpotOptions.MaxPrice=0.050000",
		"TagSpecification.1.ResourceType=instance",
		"TagSpecification.1.Tag.1.Value=job%2042",
	};
	for (size_t i = 0; i < sizeof want / sizeof *want; i++)
		cr_assert(strstr(body, want[i]), "%s not in %s", want[i], body);
	free(body);
	ec2_params_release(&p);
	r.spec.image_id = NULL;
	cr_assert_eq(ec2_build_run_instances(&r, &p, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "image_id"));
}

static char *sample(const char *name, size_t *len)
{
	char path[4096], *b;

	snprintf(path, sizeof path, "%s/tests/ec2/samples/%s",
		 getenv("PX_SRC"), name);
	b = px_test_read_file(path, len);
	cr_assert(b, "open %s", path);
	return b;
}

static xmlDoc *ok_doc(const char *name)
{
	size_t len;
	char *b = sample(name, &len);
	xmlDoc *d = NULL;
	struct ec2_aws_error aws = { 0 };
	struct px_error err;

	cr_assert_eq(ec2_xml_parse(b, len, 200, &d, &aws, &err), PX_OK, "%s",
		     name);
	free(b);
	return d;
}

Test(ec2_xml, samples_instances_and_requests)
{
	xmlDoc *d = ok_doc("DescribeInstances-page1.xml");
	struct ec2_instance_list l = { 0 };
	struct ec2_spot_request_list s = { 0 };
	struct px_error err;
	char *tok;

	cr_assert_eq(ec2_parse_instances(xmlDocGetRootElement(d), &l, &err),
		     PX_OK);
	cr_assert_eq(l.n, 1);
	cr_assert_str_eq(l.v[0].id, "i-0123456789abcdef0");
	cr_assert_eq(l.v[0].state_code, 16);
	cr_assert_str_eq(l.v[0].public_ip, "203.0.113.25");
	cr_assert_str_eq(l.v[0].spot_request_id, "sir-abcd1234");
	cr_assert_eq(l.v[0].launch_time_s, 1705311005);
	cr_assert_eq(ec2_parse_next_token(xmlDocGetRootElement(d), &tok, &err),
		     PX_OK);
	cr_assert_str_eq(tok, "ZGVzY3JpYmUtaW5zdGFuY2VzLUVYQU1QTEU=");
	free(tok);
	ec2_instance_list_release(&l);
	xmlFreeDoc(d);

	d = ok_doc("RunInstances-spot.xml");
	cr_assert_eq(ec2_parse_instances(xmlDocGetRootElement(d), &l, &err),
		     PX_OK);
	cr_assert_str_eq(l.v[0].lifecycle, "spot");
	cr_assert_eq(l.v[0].n_tags, 2);
	cr_assert_str_eq(l.v[0].tags[1].value, "spotbuy");
	ec2_instance_list_release(&l);
	xmlFreeDoc(d);

	d = ok_doc("DescribeSpotInstanceRequests-mixed.xml");
	cr_assert_eq(ec2_parse_spot_requests(xmlDocGetRootElement(d), &s,
					     &err), PX_OK);
	cr_assert_eq(s.n, 6);
	cr_assert_str_eq(s.v[0].status_code, "price-too-low");
	cr_assert_eq(s.v[0].price_uusd, 10000);
	cr_assert_str_eq(s.v[2].status_code, "marked-for-termination");
	cr_assert_str_eq(s.v[2].zone, "us-east-1b");
	cr_assert_str_eq(s.v[5].state, "failed");
	cr_assert_str_eq(s.v[5].fault_code, "InvalidAMIID.NotFound");
	ec2_spot_request_list_release(&s);
	xmlFreeDoc(d);

	d = ok_doc("DescribeSpotPriceHistory-page2.xml");
	cr_assert_eq(ec2_parse_next_token(xmlDocGetRootElement(d), &tok, &err),
		     PX_OK);
	cr_assert_str_eq(tok, "");
	free(tok);
	xmlFreeDoc(d);
}

/* What the daemon bills and reconciles from: EC2's own time of the last
 * state change (<reason>), the state reason's code, the ClientToken and
 * the tags. */
Test(ec2_xml, transition_reason_and_time)
{
	xmlDoc *d = ok_doc("DescribeInstances-page2.xml");
	struct ec2_instance_list l = { 0 };
	struct px_error err;

	cr_assert_eq(ec2_parse_instances(xmlDocGetRootElement(d), &l, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(l.n, 1);
	cr_assert_str_eq(l.v[0].state, "terminated");
	cr_assert_str_eq(l.v[0].state_reason_code,
			 "Server.SpotInstanceTermination");
	cr_assert_str_eq(l.v[0].transition_reason,
			 "Service initiated (2024-01-15 10:04:00 GMT)");
	cr_assert_eq(l.v[0].transition_s, 1705313040);
	cr_assert_str_eq(l.v[0].client_token, "");
	cr_assert_eq(l.v[0].n_tags, 1);
	cr_assert_str_eq(l.v[0].tags[0].key, "owner");
	ec2_instance_list_release(&l);
	xmlFreeDoc(d);

	d = ok_doc("DescribeInstances-page1.xml"); /* running: <reason/> */
	cr_assert_eq(ec2_parse_instances(xmlDocGetRootElement(d), &l, &err),
		     PX_OK);
	cr_assert_str_eq(l.v[0].transition_reason, "");
	cr_assert_eq(l.v[0].transition_s, -1);
	cr_assert_str_eq(l.v[0].state_reason_code, "");
	cr_assert_str_eq(l.v[0].client_token, "spotbuy-7f3a9c");
	ec2_instance_list_release(&l);
	xmlFreeDoc(d);

	cr_assert_eq(ec2_transition_time("User initiated (2026-11-27 "
					 "04:00:00 GMT)"), 1795752000);
	cr_assert_eq(ec2_transition_time("User initiated"), -1);
	cr_assert_eq(ec2_transition_time(""), -1);
	cr_assert_eq(ec2_transition_time("x (2026-11-27 04:00:00 UTC)"), -1);
	cr_assert_eq(ec2_transition_time("x (2026-11-27 GMT)"), -1);
	cr_assert_eq(ec2_transition_time("x (2026-13-27 04:00:00 GMT)"), -1);
	cr_assert_eq(ec2_transition_time("x (2026-11-27T04:00:00 GMT)"), -1);
	cr_assert_eq(ec2_transition_time("(GMT)"), -1);
}

/* A reason longer than the field is cut (at a character), not a failed
 * DescribeInstances: reconciling must not stop on free text. */
Test(ec2_xml, long_reason_is_cut)
{
	char body[2048], reason[600];
	xmlDoc *d = NULL;
	struct ec2_aws_error aws = { 0 };
	struct ec2_instance_list l = { 0 };
	struct px_error err;
	size_t n;

	memset(reason, 'x', sizeof reason - 3);
	memcpy(reason + 254, "\xc3\xa9", 2); /* an e-acute across the cut */
	reason[sizeof reason - 3] = '\0';
	n = (size_t)snprintf(body, sizeof body, "<DescribeInstancesResponse>"
			     "<reservationSet><item><instancesSet><item>"
			     "<instanceId>i-1</instanceId><reason>%s</reason>"
			     "</item></instancesSet></item></reservationSet>"
			     "</DescribeInstancesResponse>", reason);
	cr_assert_eq(ec2_xml_parse(body, n, 200, &d, &aws, &err), PX_OK);
	cr_assert_eq(ec2_parse_instances(xmlDocGetRootElement(d), &l, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(strlen(l.v[0].transition_reason), 254);
	cr_assert_eq(l.v[0].transition_s, -1);
	ec2_instance_list_release(&l);
	xmlFreeDoc(d);
}

Test(ec2_xml, sample_errors)
{
	static const struct {
		const char *file, *code;
		long status;
	} v[] = {
		{ "error-AuthFailure-401.xml", "AuthFailure", 401 },
		{ "error-RequestLimitExceeded-503.xml", "RequestLimitExceeded",
		  503 },
		{ "error-InsufficientInstanceCapacity-500.xml",
		  "InsufficientInstanceCapacity", 500 },
		{ "error-InvalidInstanceID.NotFound-400.xml",
		  "InvalidInstanceID.NotFound", 400 },
		{ "error-DryRunOperation-412.xml", "DryRunOperation", 412 },
	};

	for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
		size_t len;
		char *b = sample(v[i].file, &len);
		xmlDoc *d = NULL;
		struct ec2_aws_error aws = { 0 };
		struct px_error err;

		cr_assert_eq(ec2_xml_parse(b, len, v[i].status, &d, &aws, &err),
			     PX_EAWS, "%s", v[i].file);
		cr_assert_str_eq(aws.code, v[i].code);
		cr_assert(aws.request_id[0]);
		cr_assert(aws.message[0]);
		cr_assert_null(d);
		free(b);
	}
}

Test(ec2_xml, hostile_input)
{
	const char *xxe = "<?xml version=\"1.0\"?><!DOCTYPE a [<!ENTITY e "
		"SYSTEM \"file:///etc/passwd\">]><a><requestId>&e;</requestId>"
		"</a>";
	xmlDoc *d = NULL;
	struct ec2_aws_error aws = { 0 };
	struct px_error err;
	char buf[64];

	if (ec2_xml_parse(xxe, strlen(xxe), 200, &d, &aws, &err) == PX_OK) {
		cr_assert_eq(ec2_xml_text(xmlDocGetRootElement(d), "requestId",
					  buf, sizeof buf, &err), PX_OK);
		cr_assert_null(strstr(buf, "root:"));
		xmlFreeDoc(d);
	}
	cr_assert_eq(ec2_xml_parse("<a><b>", 6, 200, &d, &aws, &err),
		     PX_EPROTO);
	cr_assert_eq(ec2_xml_parse("", 0, 200, &d, &aws, &err), PX_EPROTO);
	cr_assert_eq(ec2_xml_parse("oops", 4, 502, &d, &aws, &err), PX_EHTTP);
	cr_assert_eq(ec2_xml_parse("<a><id>0123456789</id></a>", 26, 200, &d,
				   &aws, &err), PX_OK);
	cr_assert_eq(ec2_xml_text(xmlDocGetRootElement(d), "id", buf, 5, &err),
		     PX_ETOOBIG);
	xmlFreeDoc(d);
}
