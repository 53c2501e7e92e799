/* test_imds.c -- the IMDSv2 client against the fake IMDS: token flow,
 * interruption notice 404 -> 200 through the spot market, rebalance,
 * identity. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fake_ec2/fake.h"
#include "../../cloudapi/imds.h"

static struct fake F;
static struct imds_client *M;

static void setup(void)
{
	char ep[64];
	struct px_error err;

	fake_start(&F);
	snprintf(ep, sizeof ep, "http://127.0.0.1:%d/", F.port);
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", ep, 1);
	cr_assert_eq(imds_client_new(NULL, 2 * PX_USEC_PER_SEC, &M, &err),
		     PX_OK, "%s", err.msg);
}

static void teardown(void)
{
	imds_client_free(M);
	fake_stop(&F);
}

TestSuite(imds, .init = setup, .fini = teardown, .timeout = 30);

Test(imds, token_flow_and_reuse)
{
	char *body;
	size_t len;
	struct px_error err;

	cr_assert_eq(imds_get(M, "/latest/meta-data/placement/region", &body,
			      &len, &err), PX_OK, "%s", err.msg);
	cr_assert_str_eq(body, "us-east-1");
	free(body);
	cr_assert_eq(imds_get(M, "/latest/meta-data/instance-id", &body,
			      &len, &err), PX_OK);
	free(body);
	cr_assert_eq(imds_token_fetches(M), 1);
	cr_assert_eq(imds_get(M, "/latest/meta-data/nothing", &body, &len,
			      &err), PX_ENOENT);
	/* tokens revoked on the server: one 401, then a new token */
	json_decref(fake_ctl(&F, "{\"imds\":{\"tokens\":{}}}"));
	cr_assert_eq(imds_get(M, "/latest/meta-data/instance-id", &body,
			      &len, &err), PX_OK, "%s", err.msg);
	free(body);
	cr_assert_eq(imds_token_fetches(M), 2);
}

Test(imds, interruption_notice_from_spot_market)
{
	struct imds_spot_action a;
	bool present = true;
	int64_t notice;
	struct px_error err;
	struct awscred_provider *p;
	struct ec2_client *c = fake_client(&F, FAKE_AKID, FAKE_SECRET, NULL,
					   &p);
	struct ec2_run_req r = {
		.spec = { .image_id = "ami-1", .instance_type = "c5.large" },
		.spot = true, .max_price_uusd = 40000 };
	struct ec2_instance_list l = { 0 };

	cr_assert_eq(imds_spot_action(M, &a, &present, &err), PX_OK);
	cr_assert_not(present);
	cr_assert_eq(imds_rebalance(M, &notice, &present, &err), PX_OK);
	cr_assert_not(present);
	cr_assert_eq(ec2_run_instances(c, &r, &l, &err, NULL), PX_OK, "%s",
		     err.msg);
	json_decref(fake_ctl(&F, "{\"market\":{\"c5.large\":0.09},"
			     "\"spot_tick\":1}"));
	cr_assert_eq(imds_spot_action(M, &a, &present, &err), PX_OK, "%s",
		     err.msg);
	cr_assert(present);
	cr_assert_str_eq(a.action, "terminate");
	int64_t now = px_now_wall_us() / PX_USEC_PER_SEC;
	cr_assert(a.time_s > now + 60 && a.time_s < now + 180);
	cr_assert_eq(imds_rebalance(M, &notice, &present, &err), PX_OK);
	cr_assert(present);
	struct imds_identity id;
	cr_assert_eq(imds_identity(M, &id, &err), PX_OK, "%s", err.msg);
	cr_assert_str_eq(id.instance_id, l.v[0].id);
	cr_assert_str_eq(id.region, "us-east-1");
	cr_assert_str_eq(id.account_id, "123456789012");
	ec2_instance_list_release(&l);
	ec2_client_free(c);
	awscred_provider_free(p);
}

Test(imds, unreachable_is_a_quick_error)
{
	struct imds_client *m2;
	struct imds_spot_action a;
	bool present;
	struct px_error err;
	uint64_t t0 = px_now_mono_us();

	cr_assert_eq(imds_client_new("http://127.0.0.1:1", 500000, &m2, &err),
		     PX_OK);
	cr_assert_eq(imds_spot_action(m2, &a, &present, &err), PX_EHTTP);
	cr_assert(px_now_mono_us() - t0 < 3 * PX_USEC_PER_SEC);
	imds_client_free(m2);
}
