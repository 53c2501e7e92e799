/* sim_fixture.c -- see sim_fixture.h. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "sim_fixture.h"

struct market_set ms;
struct jobspec job;
static struct ondemand_entry od_v[2];
struct ondemand_table od = {.v = od_v, .n = 2};

void add(const char *z, const char *t, int64_t ts, int64_t p)
{
	struct px_error e = {0};

	cr_assert_eq(market_set_add(&ms, z, t, ts, p, &e), PX_OK, "%s", e.msg);
}

void job_from(const char *extra)
{
	char buf[2048];
	struct px_error e = {0};

	snprintf(buf, sizeof buf,
		 "{\"name\": \"t\", \"region\": \"us-east-1\", "
		 "\"reference_type\": \"c3.xlarge\", \"scaling_efficiency\": 1,"
		 " \"startup_seconds\": 0, %s}", extra);
	cr_assert_eq(jobspec_parse(buf, strlen(buf), "job.json", &job, &e),
		     PX_OK, "%s", e.msg);
}

void sim_fixture_setup(void)
{
	market_set_init(&ms);
	snprintf(od_v[0].region, sizeof od_v[0].region, "us-east-1");
	snprintf(od_v[0].type, sizeof od_v[0].type, "c3.2xlarge");
	od_v[0].uusd_per_hour = 1000000;
	snprintf(od_v[1].region, sizeof od_v[1].region, "us-east-1");
	snprintf(od_v[1].type, sizeof od_v[1].type, "c3.xlarge");
	od_v[1].uusd_per_hour = 500000;
}

void sim_fixture_teardown(void)
{
	market_set_release(&ms);
}
