/* test_jobspec.c -- job spec parsing, validation messages, the
 * instance table and the work model helpers. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "../../bidbrain/instances.h"
#include "../../bidbrain/jobspec.h"

#define GOOD \
	"{\"name\": \"mlr\", \"region\": \"us-east-1\", \"work_hours\": 400,"\
	" \"reference_type\": \"c4.xlarge\", \"instances\": 16,"            \
	" \"reliable\": {\"type\": \"c4.xlarge\", \"count\": 2},"            \
	" \"spot\": {\"types\": [\"c4.xlarge\", \"m4.10xlarge\","             \
	" \"c4.2xlarge\"], \"zones\": [\"us-east-1a\", \"us-east-1b\"],"     \
	" \"max_instances\": 64}%s}"

static enum px_err parse_with(const char *extra, struct jobspec *j,
			      struct px_error *e)
{
	char buf[4096];
	snprintf(buf, sizeof buf, GOOD, extra);
	return jobspec_parse(buf, strlen(buf), "job.json", j, e);
}

static void bad(const char *json, const char *want)
{
	struct jobspec j;
	struct px_error e = {0};
	cr_assert_eq(jobspec_parse(json, strlen(json), "job.json", &j, &e),
		     PX_EINVAL, "accepted: %s", json);
	cr_assert(strstr(e.msg, want), "message '%s' lacks '%s'", e.msg,
		  want);
	cr_assert(!strncmp(e.msg, "job.json: ", 10), "%s", e.msg);
}

static void bad_extra(const char *extra, const char *want)
{
	char buf[4096];
	snprintf(buf, sizeof buf, GOOD, extra);
	bad(buf, want);
}

Test(jobspec, good_spec_and_defaults)
{
	struct jobspec j;
	struct px_error e = {0};
	cr_assert_eq(parse_with("", &j, &e), PX_OK, "%s", e.msg);
	cr_assert_str_eq(j.name, "mlr");
	cr_assert_str_eq(j.region, "us-east-1");
	cr_assert_float_eq(j.work_hours, 400, 1e-12);
	cr_assert_eq(j.instances, 16);
	cr_assert_str_eq(j.reliable.type, "c4.xlarge");
	cr_assert_eq(j.reliable.count, 2);
	cr_assert_eq(j.spot.n_types, 3);
	cr_assert_str_eq(j.spot.types[1], "m4.10xlarge");
	cr_assert_eq(j.spot.n_zones, 2);
	cr_assert_eq(j.spot.max_instances, 64);
	cr_assert_eq(j.startup_seconds, 120);
	cr_assert_eq(j.clock_seconds, 60);
	cr_assert_eq(j.budget_uusd, -1);
	cr_assert_float_eq(j.scaling_efficiency, 0.9, 1e-12);
	/* speed from vCPUs: 40 / 4 */
	cr_assert_float_eq(jobspec_speed(&j, "m4.10xlarge"), 10.0, 1e-12);
	cr_assert_float_eq(jobspec_speed(&j, "c4.xlarge"), 1.0, 1e-12);
}

Test(jobspec, optional_fields)
{
	struct jobspec j;
	struct px_error e = {0};
	cr_assert_eq(parse_with(", \"speed\": {\"m4.10xlarge\": 7.5},"
				" \"budget_usd\": 12.5, \"deadline_hours\": 48,"
				" \"scaling_efficiency\": 1,"
				" \"interruption_rates\": {\"default\": 0.01,"
				" \"c4.xlarge\": 0.05}, \"_comment\": 1",
				&j, &e), PX_OK, "%s", e.msg);
	cr_assert_float_eq(jobspec_speed(&j, "m4.10xlarge"), 7.5, 1e-12);
	cr_assert_float_eq(jobspec_speed(&j, "c4.2xlarge"), 2.0, 1e-12);
	cr_assert_eq(j.budget_uusd, 12500000);
	cr_assert_float_eq(j.deadline_hours, 48, 1e-12);
	cr_assert_float_eq(jobspec_interrupt_rate(&j, "c4.xlarge"), 0.05,
			   1e-12);
	cr_assert_float_eq(jobspec_interrupt_rate(&j, "m4.10xlarge"), 0.01,
			   1e-12);
}

Test(jobspec, errors_name_the_field)
{
	bad("{\"name\": \"x\", \"region\": \"us-east-1\", \"work_hours\": 1,"
	    " \"reference_type\": \"c4.xlarge\", \"instances\": 1,"
	    " \"reliable\": {\"type\": \"c4.xlarge\", \"count\": 1},"
	    " \"spot\": {\"types\": [\"c4.xlarge\", \"m4.large\", \"x\"],"
	    " \"max_instances\": 4}}",
	    "spot.types[2]: unknown instance type 'x'");
	bad("{\"name\": \"x\"}", "region: missing");
	bad("[1]", "must be a JSON object");
	bad("{\"name\": ", "line 1");
	bad_extra(", \"work_hour\": 3", "work_hour: unknown field");
	bad_extra(", \"speed\": {\"c4.xlarge\": -1}", "speed.c4.xlarge");
	bad_extra(", \"speed\": {\"q9.huge\": 1}",
		  "speed.q9.huge: unknown instance type");
	bad_extra(", \"scaling_efficiency\": 1.5", "scaling_efficiency");
	bad_extra(", \"startup_seconds\": \"120\"",
		  "startup_seconds: must be an integer");
	bad_extra(", \"budget_usd\": 0", "budget_usd");
	bad("{\"name\": \"x\", \"region\": \"us-east-1\", \"work_hours\": 0,"
	    " \"reference_type\": \"c4.xlarge\", \"instances\": 1,"
	    " \"reliable\": {\"type\": \"c4.xlarge\", \"count\": 1},"
	    " \"spot\": {\"types\": [\"c4.xlarge\"], \"max_instances\": 4}}",
	    "work_hours: 0 is out of range");
	bad("{\"name\": \"x\", \"region\": \"us-east-1\", \"work_hours\": 1,"
	    " \"reference_type\": \"c4.xlarge\", \"instances\": 1,"
	    " \"reliable\": {\"type\": \"c4.xlarge\"},"
	    " \"spot\": {\"types\": [\"c4.xlarge\"], \"max_instances\": 4}}",
	    "reliable.count: missing");
	bad("{\"name\": \"x\", \"region\": \"us-east-1\", \"work_hours\": 1,"
	    " \"reference_type\": \"c4.xlarge\", \"instances\": 1,"
	    " \"reliable\": {\"type\": \"c4.xlarge\", \"count\": 1},"
	    " \"spot\": {\"types\": [\"c4.xlarge\"], \"max_instances\": 4,"
	    " \"zones\": [\"us-west-2a\"]}}",
	    "spot.zones[0]: zone 'us-west-2a' is not in region 'us-east-1'");
	bad("{\"name\": \"x\", \"region\": \"us-east-1\", \"work_hours\": 1,"
	    " \"reference_type\": \"c4.xlarge\", \"instances\": 1,"
	    " \"reliable\": {\"type\": \"c4.xlarge\", \"count\": 1},"
	    " \"spot\": {\"types\": [\"c4.xlarge\", \"c4.xlarge\"],"
	    " \"max_instances\": 4}}",
	    "spot.types[1]: 'c4.xlarge' listed twice");
	bad("{\"name\": \"x\", \"name\": \"y\"}", "duplicate");
}

/* Values inside the old ranges that made the simulator overflow its clock
 * (scaling_efficiency 1e-300: a runtime of -2.5e15 h) or divide by
 * nearly nothing (work_hours 5e-324: cost per work inf), and a budget
 * that rounded to no budget at all: refused, naming the field. */
Test(jobspec, values_that_break_the_work_model_are_refused)
{
	static const char *const wh[] = {"5e-324", "1e-300", "0.000999"};
	static const struct {
		const char *extra, *want;
	} cases[] = {
		{", \"scaling_efficiency\": 1e-300",
		 "scaling_efficiency: 1e-300 is out of range [0.5, 1]"},
		{", \"scaling_efficiency\": 1e-4", "scaling_efficiency"},
		{", \"scaling_efficiency\": 0.49", "scaling_efficiency"},
		{", \"speed\": {\"c4.2xlarge\": 1e-300}",
		 "speed.c4.2xlarge: 1e-300 is out of range [0.001, 1000]"},
		{", \"speed\": {\"c4.2xlarge\": 5e-324}", "speed.c4.2xlarge"},
		{", \"budget_usd\": 1e-300",
		 "budget_usd: 1e-300 is out of range [1e-06, 1e+09]"},
		{", \"budget_usd\": 4e-7", "budget_usd"},
		{", \"deadline_hours\": 1e-300",
		 "deadline_hours: 1e-300 is out of range [0.001, 1e+06]"},
		{", \"interruption_rates\": {\"default\": 101}",
		 "interruption_rates.default"},
		{", \"interruption_pool_share\": 0",
		 "interruption_pool_share: 0 is out of range (0, 1]"},
		{", \"interruption_pool_share\": 1.5",
		 "interruption_pool_share"},
		{", \"spot_advisor\": 3", "spot_advisor: must be a string"},
		{", \"spot_advisor\": \"\"", "spot_advisor: must not be empty"},
		{", \"scaling_profile\": {\"workers\": [1, 2], "
		 "\"samples_per_s\": [1, 2]}",
		 "scaling_profile: needs workers, samples_per_s and "
		 "accuracy_per_sample"},
		{", \"scaling_profile\": {\"workers\": [1, 2], "
		 "\"samples_per_s\": [1, 2], \"accuracy_per_sample\": [1]}",
		 "must have as many entries (2, 2, 1)"},
		{", \"scaling_profile\": {\"workers\": [2, 4], "
		 "\"samples_per_s\": [1, 2], \"accuracy_per_sample\": [1, 1]}",
		 "scaling_profile.workers[0]: workers must be whole numbers"},
		{", \"scaling_profile\": {\"workers\": [1, 1.5], "
		 "\"samples_per_s\": [1, 2], \"accuracy_per_sample\": [1, 1]}",
		 "scaling_profile.workers[1]"},
		{", \"scaling_profile\": {\"workers\": [1, 2], "
		 "\"samples_per_s\": [1, 0], \"accuracy_per_sample\": [1, 1]}",
		 "scaling_profile.samples_per_s[1]: 0 is out of range (0, 1e+12]"},
		{", \"scaling_profile\": {\"workers\": [1], "
		 "\"samples_per_s\": [1], \"accuracy_per_sample\": [1], "
		 "\"speedup\": 3}", "scaling_profile.speedup: unknown field"},
		{", \"scaling_profile\": 4", "scaling_profile: must be an object"},
		{", \"scaling_profile\": \"p.json\", \"scaling_efficiency\": 0.9",
		 "give scaling_profile or scaling_efficiency, not both"},
	};
	struct jobspec j;
	struct px_error e = {0};
	char buf[1024];

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		bad_extra(cases[i].extra, cases[i].want);
	for (size_t i = 0; i < sizeof wh / sizeof *wh; i++) {
		snprintf(buf, sizeof buf, "{\"name\": \"x\", \"region\": "
			 "\"us-east-1\", \"work_hours\": %s, "
			 "\"reference_type\": \"c4.xlarge\", \"instances\": 1, "
			 "\"reliable\": {\"type\": \"c4.xlarge\", \"count\": 1},"
			 " \"spot\": {\"types\": [\"c4.xlarge\"], "
			 "\"max_instances\": 4}}", wh[i]);
		bad(buf, "work_hours: ");
		bad(buf, "is out of range [0.001, 1e+07]");
	}
	/* the bounds themselves are valid */
	cr_assert_eq(parse_with(", \"scaling_efficiency\": 0.5, "
				"\"speed\": {\"c4.2xlarge\": 0.001}, "
				"\"budget_usd\": 0.000001, "
				"\"deadline_hours\": 0.001, "
				"\"interruption_rates\": {\"default\": 1e-300}",
				&j, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(j.budget_uusd, 1);
	cr_assert_float_eq(j.scaling_efficiency, 0.5, 1e-12);
}

Test(jobspec, load_missing_file)
{
	struct jobspec j;
	struct px_error e = {0};
	cr_assert_eq(jobspec_load("/nonexistent/job.json", &j, &e),
		     PX_ENOENT);
	cr_assert(strstr(e.msg, "/nonexistent/job.json"));
}

Test(jobspec, fleet_rate_scaling)
{
	struct jobspec j;
	struct px_error e = {0};
	cr_assert_eq(parse_with("", &j, &e), PX_OK);
	/* 0.9 per doubling: two instances do 1.8, four do 4 * 0.81 */
	cr_assert_float_eq(jobspec_fleet_rate(&j, 1, 1), 1.0, 1e-12);
	cr_assert_float_eq(jobspec_fleet_rate(&j, 2, 2), 1.8, 1e-12);
	cr_assert_float_eq(jobspec_fleet_rate(&j, 4, 4), 3.24, 1e-12);
	cr_assert_float_eq(jobspec_fleet_rate(&j, 0, 0), 0, 1e-12);
}

Test(jobspec, instance_table_sorted_and_complete)
{
	static const char *const need[] = {
		"c1.medium", "c1.xlarge", "cg1.4xlarge", "cr1.8xlarge",
		"d2.xlarge", "d2.2xlarge", "d2.4xlarge", "d2.8xlarge",
		"g2.2xlarge", "g2.8xlarge", "hi1.4xlarge", "m1.small",
		"m1.large", "m1.xlarge", "m2.xlarge", "m3.medium", "m3.large",
		"m4.4xlarge", "m4.10xlarge", "r3.large", "t1.micro",
		"c3.xlarge", "c3.2xlarge", "c3.4xlarge", "c3.8xlarge",
		"c4.large", "c4.xlarge", "c4.2xlarge", "c4.4xlarge",
		"c4.8xlarge", "m4.large", "m4.xlarge", "m4.2xlarge",
		"r3.xlarge", "r4.large", "g3.4xlarge", "g4dn.xlarge",
		"p2.xlarge", "p2.8xlarge", "p3.2xlarge", "p3.8xlarge",
		"c5.xlarge", "m5.xlarge",
	};
	for (size_t i = 1; i < inst_count(); i++)
		cr_assert(strcmp(inst_at(i - 1)->name, inst_at(i)->name) < 0,
			  "%s before %s", inst_at(i - 1)->name,
			  inst_at(i)->name);
	for (size_t i = 0; i < sizeof need / sizeof *need; i++) {
		const struct inst_type *t = inst_find(need[i]);
		cr_assert(t, "missing %s", need[i]);
		cr_assert(t->vcpus > 0 && t->memory_mib > 0);
	}
	cr_assert_eq(inst_find("m4.10xlarge")->vcpus, 40);
	cr_assert_eq(inst_find("p2.8xlarge")->gpus, 8);
	cr_assert_null(inst_find("m9.nope"));
}
