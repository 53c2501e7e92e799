/* test_sim_reform.c -- a program's re-forms in the sim world (the job
 * spec's restart_seconds; docs/simulate.md, "Re-forms"): each change of
 * the working set idles the fleet for restart_seconds, costing exactly
 * restart_seconds x the rate after it (hand-made markets with one leave
 * and one join at known times); pauses that overlap do not stack; the
 * group's first forming and the run's end cost nothing; 0 changes
 * nothing; the field's bounds are refused naming it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim_fixture.h"

TestSuite(sim_reform, .init = sim_fixture_setup,
	  .fini = sim_fixture_teardown);

static struct sim_result run(const char *pol, enum billing_model b,
			     int64_t end, uint64_t seed)
{
	const struct policy_ops *ops = NULL;
	struct sim_setup su = {
		.ms = &ms, .od = &od, .job = &job, .billing = b,
		.end_s = end, .seed = seed, .series = true,
	};
	struct sim_plan *p = NULL;
	struct sim_result r;
	struct px_error e = {0};

	if (!ms.sealed)
		cr_assert_eq(market_set_seal(&ms, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(policy_lookup(pol, &ops, &e), PX_OK);
	cr_assert_eq(sim_plan_new(&su, &p, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(sim_run(p, ops, &r, &e), PX_OK, "%s", e.msg);
	sim_plan_free(p);
	return r;
}

/* test_sim.c's standard_eviction_free_hour_and_reacquire: 0.10, above
 * the 0.50 bid over [5400, 7200), then 0.10 again.  standard runs the
 * reliable c3.xlarge and 2 spot ones from 0 (rate 3), the spot pair is
 * warned at 5400 and stops working (rate 1: a leave), and a new pair
 * starts at 7200 (no startup: a join, rate 3 again).  Without re-forms:
 * 4.5 work-hours by 5400, 5.0 by 7200, done (8) at 10800. */
static void eviction_case(double restart_s)
{
	char extra[512];

	add("us-east-1a", "c3.xlarge", 0, 100000);
	add("us-east-1a", "c3.xlarge", 5400, 1000000);
	add("us-east-1a", "c3.xlarge", 7200, 100000);
	add("us-east-1a", "c3.xlarge", 86400, 100001);
	snprintf(extra, sizeof extra, "\"work_hours\": 8, \"instances\": 2, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 1}, "
		 "\"spot\": {\"types\": [\"c3.xlarge\"], "
		 "\"max_instances\": 2}, \"restart_seconds\": %.17g",
		 restart_s);
	job_from(extra);
}

Test(sim_reform, zero_is_the_model_without_reforms)
{
	struct sim_result r;

	eviction_case(0);
	r = run("standard", BILLING_LEGACY_HOURLY, 0, 1);
	cr_assert(r.completed);
	cr_assert_float_eq(r.runtime_hours, 3, 1e-9);
	cr_assert_eq(r.cost_uusd, 1900000);
	cr_assert_eq(r.evictions, 2);
	cr_assert_eq(r.reforms, 0);
	cr_assert_eq(r.reform_lost_hours, 0);
	sim_result_release(&r);
}

/* R = 360 s: the leave at 5400 idles rate 1 for 360 s (0.1 work-hours),
 * the join at 7200 rate 3 for 360 s (0.3).  Work 4.5 at 5400, 4.9 at
 * 7200, then 3.1 to do at rate 3 from 7560: 3720 s, done at 11280. */
Test(sim_reform, each_reform_costs_restart_seconds_times_the_rate)
{
	struct sim_result r;

	eviction_case(360);
	r = run("standard", BILLING_LEGACY_HOURLY, 0, 1);
	cr_assert(r.completed);
	cr_assert_eq(r.reforms, 2);
	cr_assert_float_eq(r.reform_lost_hours, 360 * 1 / 3600.0 +
			   360 * 3 / 3600.0, 1e-12, "lost %.17g",
			   r.reform_lost_hours);
	cr_assert_float_eq(r.work_done_hours, 8, 1e-9);
	cr_assert_float_eq(r.runtime_hours, 11280 / 3600.0, 1e-9, "rt %.9g",
			   r.runtime_hours);
	cr_assert_eq(r.evictions, 2);
	sim_result_release(&r);
}

/* The same window cut at 6000, during the rate-1 stretch after the
 * leave: with R 360 the fleet did exactly 360 s x rate 1 less work than
 * with none (4.5 + 240/3600 against 4.5 + 600/3600), and says so. */
Test(sim_reform, an_unfinished_run_does_exactly_the_lost_work_less)
{
	struct sim_result r0, r1;

	eviction_case(0);
	r0 = run("standard", BILLING_LEGACY_HOURLY, 6000, 1);
	job.restart_seconds = 360;
	r1 = run("standard", BILLING_LEGACY_HOURLY, 6000, 1);
	cr_assert(!r0.completed && !r1.completed);
	cr_assert_float_eq(r0.work_done_hours, 4.5 + 600 / 3600.0, 1e-9);
	cr_assert_float_eq(r1.work_done_hours, 4.5 + 240 / 3600.0, 1e-9);
	cr_assert_eq(r1.reforms, 1);
	cr_assert_float_eq(r0.work_done_hours - r1.work_done_hours,
			   r1.reform_lost_hours, 1e-12);
	cr_assert_float_eq(r1.reform_lost_hours, 0.1, 1e-12);
	cr_assert_float_eq(r1.runtime_hours, r0.runtime_hours, 1e-12);
	/* the same instances, the same bill: only the work differs */
	cr_assert_eq(r1.cost_uusd, r0.cost_uusd);
	sim_result_release(&r0);
	sim_result_release(&r1);
}

/* A pause cut short by the window's end costs only its part inside. */
Test(sim_reform, a_pause_past_the_end_counts_up_to_the_end)
{
	struct sim_result r;

	eviction_case(3600);
	r = run("standard", BILLING_LEGACY_HOURLY, 6000, 1);
	cr_assert_eq(r.reforms, 1);
	cr_assert_float_eq(r.reform_lost_hours, 600 / 3600.0, 1e-12);
	cr_assert_float_eq(r.work_done_hours, 4.5, 1e-9);
	sim_result_release(&r);
}

/* R = 2400 s > the 1800 s between the leave and the join: the first
 * pause [5400, 7800) is cut by the join, whose own runs to 9600, so the
 * fleet idles over [5400, 9600), not 4800 s: lost 1800 s at rate 1 and
 * 2400 s at rate 3 (0.5 + 2.0).  Work 4.5 until 9600, then 3.5 at rate
 * 3: 4200 s, done at 13800. */
Test(sim_reform, overlapping_pauses_do_not_stack)
{
	struct sim_result r;

	eviction_case(2400);
	r = run("standard", BILLING_LEGACY_HOURLY, 0, 1);
	cr_assert(r.completed);
	cr_assert_eq(r.reforms, 2);
	cr_assert_float_eq(r.reform_lost_hours, 2.5, 1e-12, "lost %.17g",
			   r.reform_lost_hours);
	cr_assert_float_eq(r.runtime_hours, 13800 / 3600.0, 1e-9, "rt %.9g",
			   r.runtime_hours);
	sim_result_release(&r);
}

/* A fleet that starts together and never changes has no re-form: its
 * first forming is its start (startup_seconds pays for it), the end
 * releases it; test_sim.c's ondemand_cost_by_hand gives the same. */
Test(sim_reform, the_first_forming_and_the_end_cost_nothing)
{
	struct sim_result r;

	add("us-east-1a", "c3.xlarge", 0, 100000);
	add("us-east-1a", "c3.xlarge", 2 * 86400, 100001);
	job_from("\"work_hours\": 10, \"instances\": 4, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 1}, "
		 "\"spot\": {\"types\": [\"c3.xlarge\"], \"max_instances\": 4},"
		 " \"restart_seconds\": 600");
	job.startup_seconds = 120;       /* all ready at 120 together */
	r = run("ondemand", BILLING_LEGACY_HOURLY, 0, 1);
	cr_assert(r.completed);
	cr_assert_eq(r.reforms, 0);
	cr_assert_eq(r.reform_lost_hours, 0);
	cr_assert_float_eq(r.runtime_hours, 2.5 + 120 / 3600.0, 1e-9);
	sim_result_release(&r);
}

/* On a volatile market with per-second interruptions every policy's run
 * with restart_seconds 0 is the run without the field, figure for
 * figure and point for point; with 600 s, the evictions cost re-forms:
 * the job takes longer or does less. */
static void same(const struct sim_result *a, const struct sim_result *b)
{
	cr_assert_eq(a->completed, b->completed);
	cr_assert_eq(a->stop, b->stop);
	cr_assert_eq(a->cost_uusd, b->cost_uusd);
	cr_assert_eq(memcmp(&a->runtime_hours, &b->runtime_hours,
			    sizeof(double)), 0);
	cr_assert_eq(memcmp(&a->work_done_hours, &b->work_done_hours,
			    sizeof(double)), 0);
	cr_assert_eq(a->evictions, b->evictions);
	cr_assert_eq(a->instances_launched, b->instances_launched);
	cr_assert_eq(a->decisions, b->decisions);
	cr_assert_eq(a->reforms, 0);
	cr_assert_eq(b->reforms, 0);
	cr_assert_eq(a->n_series, b->n_series);
	cr_assert_eq(memcmp(a->series, b->series,
			    a->n_series * sizeof *a->series), 0);
}

Test(sim_reform, zero_changes_nothing_and_evictions_cost_reforms)
{
	static const char *const pols[] = {"bidbrain", "standard", "spread"};
	const char *base = "\"work_hours\": 60, \"instances\": 4, "
			   "\"reliable\": {\"type\": \"c3.xlarge\", "
			   "\"count\": 1}, \"interruption_rates\": "
			   "{\"default\": 0.2}, \"spot\": {\"types\": "
			   "[\"c3.xlarge\", \"c3.2xlarge\"], "
			   "\"max_instances\": 8}";
	char extra[512];

	sim_volatile_market(11);
	for (size_t i = 0; i < sizeof pols / sizeof *pols; i++) {
		struct sim_result a, b, c;

		job_from(base);
		a = run(pols[i], BILLING_PER_SECOND, 0, 3);
		snprintf(extra, sizeof extra, "%s, \"restart_seconds\": 0",
			 base);
		job_from(extra);
		b = run(pols[i], BILLING_PER_SECOND, 0, 3);
		same(&a, &b);
		cr_assert_gt(a.evictions, 0, "%s: no eviction", pols[i]);
		job.restart_seconds = 600;
		c = run(pols[i], BILLING_PER_SECOND, 0, 3);
		cr_assert_gt(c.reforms, 0, "%s", pols[i]);
		cr_assert_gt(c.reform_lost_hours, 0, "%s", pols[i]);
		cr_assert(c.runtime_hours > a.runtime_hours ||
			  c.work_done_hours < a.work_done_hours,
			  "%s: %g h, %g work-h against %g h, %g", pols[i],
			  c.runtime_hours, c.work_done_hours,
			  a.runtime_hours, a.work_done_hours);
		sim_result_release(&a);
		sim_result_release(&b);
		sim_result_release(&c);
	}
}

static void refused(const char *v, const char *want)
{
	char buf[1024];
	struct jobspec j;
	struct px_error e = {0};

	snprintf(buf, sizeof buf,
		 "{\"name\": \"t\", \"region\": \"us-east-1\", "
		 "\"work_hours\": 1, \"reference_type\": \"c3.xlarge\", "
		 "\"instances\": 1, \"reliable\": {\"type\": \"c3.xlarge\", "
		 "\"count\": 0}, \"spot\": {\"types\": [\"c3.xlarge\"], "
		 "\"max_instances\": 1}, \"restart_seconds\": %s}", v);
	if (!want) {
		cr_assert_eq(jobspec_parse(buf, strlen(buf), "job.json", &j,
					   &e), PX_OK, "%s: %s", v, e.msg);
		return;
	}
	cr_assert_eq(jobspec_parse(buf, strlen(buf), "job.json", &j, &e),
		     PX_EINVAL, "%s accepted", v);
	cr_assert(strstr(e.msg, want), "message '%s' lacks '%s'", e.msg,
		  want);
}

Test(sim_reform, restart_seconds_bounds_name_the_field)
{
	refused("-1", "job.json: restart_seconds: -1 is out of range "
		"[0, 86400]");
	refused("86400.5", "job.json: restart_seconds: 86400.5 is out of "
		"range [0, 86400]");
	refused("1e300", "restart_seconds: 1e+300 is out of range");
	refused("\"60\"", "job.json: restart_seconds: must be a number");
	refused("null", "job.json: restart_seconds: must be a number");
	refused("0", NULL);
	refused("0.5", NULL);
	refused("86400", NULL);
	job_from("\"work_hours\": 1, \"instances\": 1, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 0}, "
		 "\"spot\": {\"types\": [\"c3.xlarge\"], \"max_instances\": 1}");
	cr_assert_eq(job.restart_seconds, 0);
}

/* BidBrain weighs a re-form: each fleet change costs the whole fleet's
 * charge for restart_seconds (bb_reform), so with a costly one it
 * changes the fleet less.  On the volatile market (interruptions 0.2 an
 * instance-hour), measured against standard (which only replaces what
 * was evicted): at 600 s BidBrain stays cheaper under both billings; at
 * 1800 s cheaper under legacy and within 1.2x per-second (1.15x; before
 * it weighed re-forms: 2.4x, 109 re-forms against standard's 10, and
 * 1.39x under legacy). */
Test(sim_reform, bidbrain_weighs_the_cost_of_a_reform)
{
	static const double rs[] = {600, 1800};

	sim_volatile_market(11);
	for (int b = 0; b < 2; b++)
		for (size_t k = 0; k < 2; k++) {
			enum billing_model bm = b ? BILLING_PER_SECOND :
					       BILLING_LEGACY_HOURLY;
			struct sim_result x, y;
			double bar = b && rs[k] > 1000 ? 1.2 : 1;

			job_from("\"work_hours\": 60, \"instances\": 4, "
				 "\"reliable\": {\"type\": \"c3.xlarge\", "
				 "\"count\": 1}, \"interruption_rates\": "
				 "{\"default\": 0.2}, \"spot\": {\"types\": "
				 "[\"c3.xlarge\", \"c3.2xlarge\"], "
				 "\"max_instances\": 8}");
			job.restart_seconds = rs[k];
			x = run("bidbrain", bm, 0, 3);
			y = run("standard", bm, 0, 3);
			cr_assert(x.completed && y.completed);
			cr_assert_gt(x.reforms, 0);
			cr_assert_lt(x.cost_uusd, y.cost_uusd * bar, "%s, %g s: "
				     "bidbrain %lld (%lld re-forms), standard "
				     "%lld (%lld)", billing_model_name(bm),
				     rs[k], (long long)x.cost_uusd,
				     (long long)x.reforms,
				     (long long)y.cost_uusd,
				     (long long)y.reforms);
			sim_result_release(&x);
			sim_result_release(&y);
		}
}
