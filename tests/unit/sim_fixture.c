/* sim_fixture.c -- the synthetic world of test_sim.c and test_sim_oracle.c
 * (sim_fixture.h): the market set, the job and the on-demand table they
 * share, and how a test fills them. */
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

void sim_volatile_market(uint64_t x)
{
	const char *z[] = {"us-east-1a", "us-east-1b"};
	const char *t[] = {"c3.xlarge", "c3.2xlarge"};

	for (int m = 0; m < 4; m++) {
		int64_t base = m < 2 ? 60000 : 130000, p = base;

		for (int64_t ts = 0; ts <= 6 * 86400; ts += 300 + m * 7) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			int r = (int)((x >> 33) % 1000);

			if (r < 8)
				p = base * 12;       /* spike over OD */
			else if (r < 300)
				p = base + (int64_t)((x >> 20) % 30000);
			add(z[m % 2], t[m / 2], ts, p);
		}
	}
}
