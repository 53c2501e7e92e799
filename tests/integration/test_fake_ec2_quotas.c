/* test_fake_ec2_quotas.c -- the fake EC2's vCPU quotas, as AWS enforces
 * them per region and per quota group (--spot-vcpus, --ondemand-vcpus,
 * the "limits" control command): a spot launch within the quota runs, one
 * past it is MaxSpotInstanceCountExceeded (HTTP 400, AWS's XML error), an
 * on-demand one VcpuLimitExceeded; terminating frees the vCPUs; groups do
 * not limit each other, a total counts them all; MinCount..MaxCount
 * launches what fits or nothing; open spot requests count until they are
 * cancelled; a retry of a launch (its ClientToken) is never refused.
 *
 * The fake runs nothing (--no-exec) on a frozen clock, with instances
 * running and terminated at once: every count below is exact. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fake_ec2/fake.h"
#include "../../cloudapi/ec2_int.h"
#include "pxrun.h"

#define API_ONLY "--no-exec", "--speedup", "0", "--clock-origin", \
	"1700000000", "--boot-seconds", "0", "--shutdown-seconds", "0"

static struct fake F;
static struct awscred_provider *P;
static struct ec2_client *C;

static void teardown(void)
{
	ec2_client_free(C);
	C = NULL;
	awscred_provider_free(P);
	P = NULL;
	fake_stop(&F);
}

TestSuite(fake_ec2_quotas, .fini = teardown, .timeout = 30);

/* Start the fake with API_ONLY and these options (NULL-terminated), and a
 * client on it. */
static void start(const char *first, ...)
{
	const char *args[32] = { API_ONLY };
	size_t n = 9;
	va_list ap;

	va_start(ap, first);
	for (const char *a = first; a; a = va_arg(ap, const char *)) {
		cr_assert_lt(n, sizeof args / sizeof *args - 1);
		args[n++] = a;
	}
	va_end(ap);
	args[n] = NULL;
	fake_start_args(&F, args);
	C = fake_client(&F, FAKE_AKID, FAKE_SECRET, NULL, &P);
}

/* RunInstances of min..max instances of type; the first id into id
 * (EC2_ID_MAX, may be NULL), how many launched into *n (may be NULL). */
static enum px_err launch(const char *type, bool spot, int min, int max,
			  const char *token, char *id, size_t *n,
			  struct ec2_aws_error *aws)
{
	struct ec2_run_req r = {
		.spec = { .image_id = "ami-0abc", .instance_type = type,
			  .zone = "us-east-1a" },
		.min_count = min, .max_count = max, .spot = spot,
		.max_price_uusd = spot ? 1000000 : 0, .client_token = token,
	};
	struct ec2_instance_list l = { 0 };
	struct px_error err;
	enum px_err rc;

	memset(aws, 0, sizeof *aws);
	rc = ec2_run_instances(C, &r, &l, &err, aws);
	if (rc == PX_OK && id) {
		cr_assert_gt(l.n, 0);
		snprintf(id, EC2_ID_MAX, "%s", l.v[0].id);
	}
	if (n)
		*n = rc == PX_OK ? l.n : 0;
	ec2_instance_list_release(&l);
	return rc;
}

/* One instance of type, which must launch; its id into id (may be NULL). */
static void launch_ok(const char *type, bool spot, char *id)
{
	struct ec2_aws_error aws;

	cr_assert_eq(launch(type, spot, 1, 1, NULL, id, NULL, &aws), PX_OK,
		     "RunInstances %s: %s %s", type, aws.code, aws.message);
}

/* One instance of type, which must be refused with code, HTTP 400, at
 * the first attempt (no retry: a quota is not transient). */
static void launch_refused(const char *type, bool spot, const char *code)
{
	struct ec2_aws_error aws;

	cr_assert_eq(launch(type, spot, 1, 1, NULL, NULL, NULL, &aws),
		     PX_EAWS, "RunInstances %s launched", type);
	cr_assert_str_eq(aws.code, code, "%s: %s", type, aws.message);
	cr_assert_eq(aws.http_status, 400);
	cr_assert_eq(aws.attempts, 1);
	cr_assert_neq(aws.request_id[0], '\0', "no RequestID");
}

static void terminate(const char *id)
{
	struct px_error err;

	cr_assert_eq(ec2_terminate_instances(C, &id, 1, &err, NULL), PX_OK,
		     "%s", err.msg);
}

/* The vCPUs the fake counts against a market's quota ("spot",
 * "on_demand"), of group g or (g NULL) of all groups. */
static long long used(const char *market, const char *g)
{
	json_t *s = fake_ctl(&F, NULL), *m, *v;
	const char *k;
	long long n = 0;

	m = json_object_get(json_object_get(s, "vcpus"), market);
	cr_assert(json_is_object(m), "no vcpus.%s in the state", market);
	json_object_foreach(m, k, v)
		if (!g || !strcmp(k, g))
			n += (long long)json_integer_value(v);
	json_decref(s);
	return n;
}

struct sbuf {
	char *p;
	size_t n;
};

static size_t sbuf_write(char *d, size_t sz, size_t nm, void *ud)
{
	struct sbuf *b = ud;
	char *p = realloc(b->p, b->n + sz * nm + 1);

	cr_assert_not_null(p);
	b->p = p;
	memcpy(b->p + b->n, d, sz * nm);
	b->n += sz * nm;
	b->p[b->n] = '\0';
	return sz * nm;
}

/* POST body to the fake's path ("/" signed with SigV4 as the EC2 client
 * signs, "/_ctl" unsigned): the reply (free it), its status in *status. */
static char *post(const char *path, const char *body, long *status)
{
	char url[128];
	struct sbuf b = { 0 };
	struct curl_slist *h = NULL;
	CURL *c = curl_easy_init();

	cr_assert_not_null(c);
	snprintf(url, sizeof url, "http://127.0.0.1:%d%s", F.port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	if (!strcmp(path, "/")) {
		h = curl_slist_append(h, "Content-Type: application/"
				      "x-www-form-urlencoded; charset=utf-8");
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c, CURLOPT_USERPWD, FAKE_AKID ":" FAKE_SECRET);
		curl_easy_setopt(c, CURLOPT_AWS_SIGV4, "aws:amz:us-east-1:ec2");
	}
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sbuf_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	cr_assert_eq(curl_easy_perform(c), CURLE_OK, "POST %s", path);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	return b.p ? b.p : calloc(1, 1);
}

/* body must be AWS's error document for code and message, exactly (the
 * RequestID a UUID): <Response><Errors><Error><Code>... */
static void assert_aws_error(const char *body, const char *code,
			     const char *message)
{
	char head[1024], tail[] = "</RequestID></Response>";
	size_t hn, bn = strlen(body), tn = strlen(tail);
	const char *id;

	hn = (size_t)snprintf(head, sizeof head, "<?xml version=\"1.0\" "
			      "encoding=\"UTF-8\"?>\n<Response><Errors><Error>"
			      "<Code>%s</Code><Message>%s</Message></Error>"
			      "</Errors><RequestID>", code, message);
	cr_assert_lt(hn, sizeof head);
	cr_assert(bn == hn + 36 + tn, "not AWS's error shape: %s", body);
	cr_assert(!strncmp(body, head, hn), "not AWS's error shape: %s",
		  body);
	id = body + hn;
	for (int i = 0; i < 36; i++)
		cr_assert(i == 8 || i == 13 || i == 18 || i == 23 ?
			  id[i] == '-' : strchr("0123456789abcdef", id[i]) &&
			  id[i], "RequestID is no UUID: %s", body);
	cr_assert_str_eq(id + 36, tail);
}

#define RUN "Action=RunInstances&Version=2016-11-15&ImageId=ami-0abc" \
	"&MinCount=1&MaxCount=1"
#define VCPU_MSG(n) "You have requested more vCPU capacity than your " \
	"current vCPU limit of " n " allows for the instance bucket that " \
	"the specified instance type belongs to. Please visit " \
	"http://aws.amazon.com/contact-us/ec2-request to request an " \
	"adjustment to this limit."

/* ---- spot */

Test(fake_ec2_quotas, spot_within_quota_runs_and_past_it_is_refused)
{
	start("--spot-vcpus", "standard=8", NULL);
	launch_ok("c5.xlarge", true, NULL);   /* 4 of 8 */
	launch_ok("c5.large", true, NULL);    /* 6 */
	launch_ok("m5.large", true, NULL);    /* 8: the quota, exactly */
	cr_assert_eq(used("spot", "standard"), 8);
	launch_refused("t3.nano", true, "MaxSpotInstanceCountExceeded");
	launch_refused("c5.xlarge", true, "MaxSpotInstanceCountExceeded");
	cr_assert_eq(fake_count(&F, "instances"), 3, "nothing launched");
	/* the spot quota does not hold on-demand */
	launch_ok("c5.4xlarge", false, NULL);
	cr_assert_eq(used("on_demand", NULL), 16);
}

Test(fake_ec2_quotas, quota_errors_are_aws_xml_with_http_400)
{
	long st = 0;
	char *body;

	start("--spot-vcpus", "standard=2", "--ondemand-vcpus", "standard=2",
	      NULL);
	body = post("/", RUN "&InstanceType=c5.xlarge"
		    "&InstanceMarketOptions.MarketType=spot", &st);
	cr_assert_eq(st, 400, "%s", body);
	assert_aws_error(body, "MaxSpotInstanceCountExceeded",
			 "Max spot instance count exceeded");
	free(body);
	body = post("/", RUN "&InstanceType=c5.xlarge", &st);
	cr_assert_eq(st, 400, "%s", body);
	assert_aws_error(body, "VcpuLimitExceeded", VCPU_MSG("2"));
	free(body);
	/* within the quota, the same signed call launches */
	body = post("/", RUN "&InstanceType=c5.large"
		    "&InstanceMarketOptions.MarketType=spot", &st);
	cr_assert_eq(st, 200, "%s", body);
	cr_assert(strstr(body, "<RunInstancesResponse"), "%s", body);
	free(body);
}

Test(fake_ec2_quotas, terminating_frees_quota)
{
	char a[EC2_ID_MAX], b[EC2_ID_MAX];

	start("--spot-vcpus", "standard=8", "--ondemand-vcpus", "standard=4",
	      NULL);
	launch_ok("c5.2xlarge", true, a);
	launch_refused("c5.large", true, "MaxSpotInstanceCountExceeded");
	terminate(a);
	cr_assert_eq(used("spot", NULL), 0);
	launch_ok("c5.xlarge", true, NULL);
	launch_ok("c5.xlarge", true, NULL);
	launch_ok("t3.micro", false, b);
	launch_ok("t3.micro", false, NULL);
	launch_refused("t3.micro", false, "VcpuLimitExceeded");
	terminate(b);
	launch_ok("t3.micro", false, NULL);
}

/* ---- on-demand */

Test(fake_ec2_quotas, ondemand_past_quota_is_vcpu_limit_exceeded)
{
	struct ec2_aws_error aws;

	start("--ondemand-vcpus", "standard=6", NULL);
	launch_ok("c5.xlarge", false, NULL);
	cr_assert_eq(launch("c5.xlarge", false, 1, 1, NULL, NULL, NULL, &aws),
		     PX_EAWS);
	cr_assert_str_eq(aws.code, "VcpuLimitExceeded");
	cr_assert_eq(aws.http_status, 400);
	cr_assert_str_eq(aws.message, VCPU_MSG("6"));
	launch_ok("c5.large", false, NULL); /* 6 of 6 */
	launch_refused("t2.nano", false, "VcpuLimitExceeded");
	/* nor does the on-demand quota hold spot */
	launch_ok("c5.4xlarge", true, NULL);
	/* a name that is no type cannot be counted: refused as AWS does */
	cr_assert_eq(launch("c5.huge", false, 1, 1, NULL, NULL, NULL, &aws),
		     PX_EAWS);
	cr_assert_str_eq(aws.code, "InvalidParameterValue");
	cr_assert_eq(aws.http_status, 400);
}

/* ---- groups and the total */

Test(fake_ec2_quotas, groups_are_independent)
{
	start("--spot-vcpus", "g=8,p=0", "--ondemand-vcpus", "inf=4", NULL);
	launch_ok("g4dn.xlarge", true, NULL);
	launch_ok("vt1.3xlarge", false, NULL); /* on-demand: not limited */
	launch_refused("g5.2xlarge", true, "MaxSpotInstanceCountExceeded");
	launch_ok("g5.xlarge", true, NULL);    /* 8 of 8 */
	launch_refused("vt1.3xlarge", true, "MaxSpotInstanceCountExceeded");
	launch_refused("p3.2xlarge", true, "MaxSpotInstanceCountExceeded");
	/* the g quota does not hold standard, nor f, x or trn */
	for (int i = 0; i < 4; i++)
		launch_ok("c5.24xlarge", true, NULL);
	launch_ok("f1.2xlarge", true, NULL);
	launch_ok("x1.32xlarge", true, NULL);
	launch_ok("trn1.32xlarge", true, NULL);
	cr_assert_eq(used("spot", "g"), 8);
	cr_assert_eq(used("spot", "standard"), 4 * 96);
	launch_ok("inf1.xlarge", false, NULL);
	launch_refused("inf2.xlarge", false, "VcpuLimitExceeded");
	launch_ok("dl1.24xlarge", false, NULL);
}

Test(fake_ec2_quotas, a_total_counts_all_groups)
{
	char a[EC2_ID_MAX];

	start("--spot-vcpus", "12,g=4", "--ondemand-vcpus", "8", NULL);
	launch_ok("g4dn.xlarge", true, a);     /* g 4, total 4 */
	launch_refused("g4dn.xlarge", true, "MaxSpotInstanceCountExceeded");
	launch_ok("c5.xlarge", true, NULL);    /* total 8 */
	launch_ok("inf1.xlarge", true, NULL);  /* total 12 */
	launch_refused("c5.large", true, "MaxSpotInstanceCountExceeded");
	terminate(a);
	launch_ok("c5.xlarge", true, NULL);    /* the g instance's room */
	cr_assert_eq(used("spot", NULL), 12);
	/* an on-demand total over standard, g and p together */
	launch_ok("c5.xlarge", false, NULL);
	launch_ok("p2.xlarge", false, NULL);
	launch_refused("g4dn.xlarge", false, "VcpuLimitExceeded");
	launch_refused("t3.micro", false, "VcpuLimitExceeded");
}

/* ---- MinCount..MaxCount, requests, retries, changes */

Test(fake_ec2_quotas, min_count_and_max_count_against_the_quota)
{
	struct ec2_aws_error aws;
	size_t n;

	start("--spot-vcpus", "standard=10", "--ondemand-vcpus", "standard=8",
	      NULL);
	/* as many as fit, MinCount at least */
	cr_assert_eq(launch("c5.xlarge", true, 1, 5, NULL, NULL, &n, &aws),
		     PX_OK, "%s", aws.message);
	cr_assert_eq(n, 2);
	/* MinCount that does not fit: nothing */
	cr_assert_eq(launch("c5.large", true, 2, 3, NULL, NULL, &n, &aws),
		     PX_EAWS);
	cr_assert_str_eq(aws.code, "MaxSpotInstanceCountExceeded");
	cr_assert_eq(used("spot", NULL), 8);
	cr_assert_eq(launch("c5.large", true, 1, 3, NULL, NULL, &n, &aws),
		     PX_OK, "%s", aws.message);
	cr_assert_eq(n, 1);
	cr_assert_eq(launch("c5.2xlarge", false, 2, 2, NULL, NULL, &n, &aws),
		     PX_EAWS);
	cr_assert_str_eq(aws.code, "VcpuLimitExceeded");
	cr_assert_eq(launch("c5.2xlarge", false, 1, 2, NULL, NULL, &n, &aws),
		     PX_OK, "%s", aws.message);
	cr_assert_eq(n, 1);
	cr_assert_eq(fake_count(&F, "instances"), 4);
}

Test(fake_ec2_quotas, open_spot_requests_count_until_cancelled)
{
	struct ec2_spot_req rq = {
		.spec = { .image_id = "ami-0abc", .instance_type = "c5.xlarge",
			  .zone = "us-east-1a" },
		.bid_uusd = 10000, .count = 2, /* below the price: stays open */
	};
	struct ec2_spot_request_list l = { 0 }, l2 = { 0 };
	struct ec2_aws_error aws;
	struct px_error err;
	const char *ids[2];

	start("--spot-vcpus", "standard=10", NULL);
	cr_assert_eq(ec2_request_spot_instances(C, &rq, &l, &err, &aws),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(l.n, 2);
	cr_assert_eq(used("spot", "standard"), 8);
	launch_ok("c5.large", true, NULL);
	launch_refused("c5.large", true, "MaxSpotInstanceCountExceeded");
	/* a request past the quota is refused whole */
	rq.count = 1;
	cr_assert_eq(ec2_request_spot_instances(C, &rq, &l2, &err, &aws),
		     PX_EAWS);
	ec2_spot_request_list_release(&l2);
	cr_assert_str_eq(aws.code, "MaxSpotInstanceCountExceeded");
	cr_assert_eq(aws.http_status, 400);
	cr_assert_eq(fake_count(&F, "spot"), 2);
	ids[0] = l.v[0].id;
	ids[1] = l.v[1].id;
	cr_assert_eq(ec2_cancel_spot_requests(C, ids, 2, &err, NULL), PX_OK,
		     "%s", err.msg);
	ec2_spot_request_list_release(&l);
	cr_assert_eq(used("spot", NULL), 2);
	launch_ok("c5.2xlarge", true, NULL);
}

Test(fake_ec2_quotas, a_retry_of_a_launch_is_not_refused)
{
	struct ec2_aws_error aws;
	char a[EC2_ID_MAX], b[EC2_ID_MAX];

	start("--spot-vcpus", "standard=4", NULL);
	cr_assert_eq(launch("c5.xlarge", true, 1, 1, "quota-retry-1", a, NULL,
			    &aws), PX_OK, "%s", aws.message);
	/* the same call again (a lost answer): the same instance */
	cr_assert_eq(launch("c5.xlarge", true, 1, 1, "quota-retry-1", b, NULL,
			    &aws), PX_OK, "%s %s", aws.code, aws.message);
	cr_assert_str_eq(a, b);
	cr_assert_eq(fake_count(&F, "instances"), 1);
	cr_assert_eq(launch("c5.xlarge", true, 1, 1, "quota-retry-2", b, NULL,
			    &aws), PX_EAWS);
	cr_assert_str_eq(aws.code, "MaxSpotInstanceCountExceeded");
}

Test(fake_ec2_quotas, quotas_change_at_runtime)
{
	json_t *s, *lim;
	long st = 0;
	char *body;

	start(NULL);
	s = fake_ctl(&F, NULL);
	lim = json_object_get(s, "limits");
	cr_assert_str_eq(json_string_value(json_object_get(lim,
		"spot_vcpus")), "none");
	cr_assert_str_eq(json_string_value(json_object_get(lim,
		"ondemand_vcpus")), "none");
	json_decref(s);
	launch_ok("c5.4xlarge", true, NULL);
	s = fake_ctl(&F, "{\"limits\": {\"spot_vcpus\": \"20,standard=18\", "
		     "\"ondemand_vcpus\": \"p=8\"}}");
	lim = json_object_get(s, "limits");
	cr_assert_str_eq(json_string_value(json_object_get(lim,
		"spot_vcpus")), "20,standard=18");
	cr_assert_str_eq(json_string_value(json_object_get(lim,
		"ondemand_vcpus")), "p=8");
	json_decref(s);
	launch_ok("c5.large", true, NULL);   /* standard 18 of 18 */
	launch_refused("c5.large", true, "MaxSpotInstanceCountExceeded");
	/* g is not limited by its own quota, but by the total: 22 > 20 */
	launch_refused("g4dn.xlarge", true, "MaxSpotInstanceCountExceeded");
	launch_ok("p3.2xlarge", false, NULL); /* on-demand p: 8 of 8 */
	launch_refused("p2.xlarge", false, "VcpuLimitExceeded");
	/* another quota, from now on: standard is free, g holds 4 */
	json_decref(fake_ctl(&F, "{\"limits\": {\"spot_vcpus\": \"g=4\"}}"));
	launch_ok("c5.large", true, NULL);
	launch_ok("g4dn.xlarge", true, NULL);
	launch_refused("g4dn.xlarge", true, "MaxSpotInstanceCountExceeded");
	json_decref(fake_ctl(&F, "{\"limits\": {\"spot_vcpus\": null, "
			     "\"ondemand_vcpus\": \"none\"}}"));
	launch_ok("g4dn.xlarge", true, NULL);
	launch_ok("p3.2xlarge", false, NULL);
	/* a bad limit is the test's bug: 400, and it says why */
	body = post("/_ctl", "{\"limits\": {\"spot_vcpus\": \"gpu=4\"}}", &st);
	cr_assert_eq(st, 400, "%s", body);
	cr_assert(strstr(body, "unknown quota group 'gpu'"), "%s", body);
	free(body);
}

Test(fake_ec2_quotas, bad_quota_options_are_refused)
{
	static const char *const bad[][2] = {
		{ "--spot-vcpus", "gpu=4" },
		{ "--spot-vcpus", "8,16" },
		{ "--ondemand-vcpus", "standard=-1" },
		{ "--ondemand-vcpus", "g=4,g=8" },
	};
	char *script = px_src_path("tests/fake_ec2/fake_ec2.py");
	struct pxrun r;

	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		const char *argv[] = { "python3", script, "--timeout", "5",
				       "--no-exec", bad[i][0], bad[i][1],
				       NULL };

		cr_assert_eq(pxrun(&r, 20, "/usr/bin/python3", argv), 0);
		cr_assert_eq(r.status, 2, "%s %s: exit %d", bad[i][0],
			     bad[i][1], r.status);
		cr_assert(strstr(r.err, bad[i][0]), "%s", r.err);
		cr_assert(!strstr(r.out, "PORT"), "it started: %s", r.out);
		pxrun_free(&r);
	}
	free(script);
}
