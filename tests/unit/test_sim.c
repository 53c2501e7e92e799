/* test_sim.c -- the simulator end to end on synthetic markets: costs
 * computed by hand, evictions, determinism, no peeking at the future, and
 * the errors for jobs that cannot run. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_fixture.h"

TestSuite(sim, .init = sim_fixture_setup, .fini = sim_fixture_teardown);

struct log {
	char (*line)[160];
	size_t n, cap;
	bool decisions_only;
};

static enum px_err sink(const struct ctrl_event *ev, void *ctx)
{
	struct log *l = ctx;
	if (l->decisions_only && ev->kind != CTRL_EV_DECIDE_ACQUIRE &&
	    ev->kind != CTRL_EV_DECIDE_RELEASE)
		return PX_OK;
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 256;
		l->line = realloc(l->line, l->cap * sizeof *l->line);
		cr_assert(l->line);
	}
	snprintf(l->line[l->n++], sizeof *l->line, "%lld %s %llu %s %s %d %lld",
		 (long long)ev->t_s, ctrl_event_name(ev->kind),
		 (unsigned long long)ev->instance, ev->zone ? ev->zone : "-",
		 ev->type ? ev->type : "-", ev->count,
		 (long long)ev->bid_uusd);
	return PX_OK;
}

static struct sim_result run(const char *pol, enum billing_model b,
			     int64_t start, int64_t end, uint64_t seed,
			     struct log *lg)
{
	const struct policy_ops *ops = NULL;
	struct sim_setup su = {
		.ms = &ms, .od = &od, .job = &job, .billing = b,
		.start_s = start, .end_s = end, .seed = seed, .series = true,
		.sink = lg ? sink : NULL, .sink_ctx = lg,
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

static void flat(int64_t days)
{
	add("us-east-1a", "c3.xlarge", 0, 100000);
	add("us-east-1a", "c3.xlarge", days * 86400, 100000 + 1);
}

Test(sim, ondemand_cost_by_hand)
{
	struct sim_result r;
	flat(2);
	job_from("\"work_hours\": 10, \"instances\": 4, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 1}, "
		 "\"spot\": {\"types\": [\"c3.xlarge\"], \"max_instances\": 4}");
	/* 4 instances x 2.5 h: legacy 4 x 3 started hours x 0.50 = 6.00 */
	r = run("ondemand", BILLING_LEGACY_HOURLY, 0, 0, 1, NULL);
	cr_assert(r.completed);
	cr_assert_float_eq(r.runtime_hours, 2.5, 1e-9, "rt %f cost %lld work %f", r.runtime_hours, (long long)r.cost_uusd, r.work_done_hours);
	cr_assert_eq(r.cost_uusd, 6000000);
	cr_assert_float_eq(r.runtime_hours, 2.5, 1e-9);
	cr_assert_float_eq(r.work_done_hours, 10, 1e-9);
	cr_assert_float_eq(r.cost_per_work_usd, 0.6, 1e-9);
	cr_assert_float_eq(r.instance_hours, 10, 1e-9);
	cr_assert_eq(r.instances_launched, 4);
	cr_assert_eq(r.evictions, 0);
	cr_assert(r.n_series >= 2);
	cr_assert_eq(r.series[r.n_series - 1].cost_uusd, 6000000);
	sim_result_release(&r);
	/* per-second: 4 x 2.5 h x 0.50 = 5.00 */
	r = run("ondemand", BILLING_PER_SECOND, 0, 0, 1, NULL);
	cr_assert_eq(r.cost_uusd, 5000000);
	sim_result_release(&r);
}

Test(sim, standard_eviction_free_hour_and_reacquire)
{
	struct sim_result r;
	/* 0.10, above the 0.50 bid over [5400, 7200), then 0.10 again */
	add("us-east-1a", "c3.xlarge", 0, 100000);
	add("us-east-1a", "c3.xlarge", 5400, 1000000);
	add("us-east-1a", "c3.xlarge", 7200, 100000);
	add("us-east-1a", "c3.xlarge", 86400, 100001);
	job_from("\"work_hours\": 8, \"instances\": 2, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 1}, "
		 "\"spot\": {\"types\": [\"c3.xlarge\"], \"max_instances\": 2}");
	r = run("standard", BILLING_LEGACY_HOURLY, 0, 0, 1, NULL);
	/* rate 3 until the notice at 5400 (4.5 h of work), 1 until 7200
	 * (5.0), 3 again: done at 10800.  Reliable: 3 h x 0.50 = 1.50.
	 * First spot pair: hour 0 at 0.10 each, hour 1 evicted at 5520:
	 * free.  Second pair: 7200-10800, one hour at 0.10 each.  1.90. */
	cr_assert(r.completed);
	cr_assert_float_eq(r.runtime_hours, 3, 1e-9);
	cr_assert_eq(r.cost_uusd, 1900000);
	cr_assert_eq(r.evictions, 2);
	cr_assert_eq(r.instances_launched, 5);
	cr_assert_float_eq(r.free_hours, 2 * 1920 / 3600.0, 1e-9);
	cr_assert_float_eq(r.instance_hours, 3 + 2 * 5520 / 3600.0 + 2,
			   1e-9);
	sim_result_release(&r);
}

Test(sim, eviction_without_warning_loses_a_clock)
{
	struct sim_result a, b;
	add("us-east-1a", "c3.xlarge", 0, 100000);
	add("us-east-1a", "c3.xlarge", 5400, 1000000);
	add("us-east-1a", "c3.xlarge", 86400, 1000001);
	job_from("\"work_hours\": 100, \"instances\": 1, "
		 "\"clock_seconds\": 300, \"warning_seconds\": 0, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 1}, "
		 "\"spot\": {\"types\": [\"c3.xlarge\"], \"max_instances\": 1}");
	a = run("standard", BILLING_LEGACY_HOURLY, 0, 7200, 1, NULL);
	/* reliable 2 h + spot 1.5 h, less the spot's lost 300 s */
	cr_assert_float_eq(a.work_done_hours, 3.5 - 300 / 3600.0, 1e-9);
	cr_assert_not(a.completed);
	job.warning_seconds = 300;
	b = run("standard", BILLING_LEGACY_HOURLY, 0, 7200, 1, NULL);
	cr_assert_float_eq(b.work_done_hours, 3.5, 1e-9);
	sim_result_release(&a);
	sim_result_release(&b);
}

/* A fleet too slow to finish inside any clock (a spec the parser now
 * refuses, set here behind its back): the time to finish, 1.8e304 s, was
 * cast to int64 and the run "completed" at a negative time, with negative
 * instance-hours.  It must run to the end of the window, not completed. */
Test(sim, too_slow_to_finish_runs_to_the_window_end)
{
	struct sim_result r;

	flat(2);
	job_from("\"work_hours\": 10, \"instances\": 2, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 0}, "
		 "\"spot\": {\"types\": [\"c3.xlarge\"], "
		 "\"max_instances\": 2}");
	job.scaling_efficiency = 1e-300;
	r = run("ondemand", BILLING_LEGACY_HOURLY, 0, 84600, 1, NULL);
	cr_assert_not(r.completed);
	cr_assert_float_eq(r.runtime_hours, 23.5, 1e-9);
	cr_assert_float_eq(r.instance_hours, 47, 1e-9);
	cr_assert_eq(r.cost_uusd, 2 * 24 * 500000);
	cr_assert(r.work_done_hours >= 0 && r.work_done_hours < 1e-290);
	sim_result_release(&r);
}

/* The last line of defence: a figure that is not finite (here a NaN speed
 * set behind the parser's back) fails the run with the figure's name; it
 * is never returned as a result to print. */
Test(sim, a_figure_out_of_range_is_an_error_not_a_result)
{
	const struct policy_ops *ops = NULL;
	struct sim_setup su = {
		.ms = &ms, .od = &od, .job = &job,
		.billing = BILLING_LEGACY_HOURLY, .end_s = 86400,
	};
	struct sim_plan *p = NULL;
	struct sim_result r;
	struct px_error e = {0};

	flat(2);
	job_from("\"work_hours\": 10, \"instances\": 2, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 0}, "
		 "\"spot\": {\"types\": [\"c3.xlarge\"], "
		 "\"max_instances\": 2}");
	snprintf(job.speed[0].type, sizeof job.speed[0].type, "c3.xlarge");
	job.speed[0].v = NAN;
	job.n_speed = 1;
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(policy_lookup("ondemand", &ops, &e), PX_OK);
	cr_assert_eq(sim_plan_new(&su, &p, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(sim_run(p, ops, &r, &e), PX_EINVAL, "ran: work %g",
		     r.work_done_hours);
	cr_assert(strstr(e.msg, "work_done_hours nan is out of range"), "%s",
		  e.msg);
	sim_plan_free(p);
}


static void volatile_job(void)
{
	job_from("\"work_hours\": 2000, \"instances\": 8, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 1}, "
		 "\"clock_seconds\": 60, "
		 "\"interruption_rates\": {\"default\": 0.05}, "
		 "\"spot\": {\"types\": [\"c3.xlarge\", \"c3.2xlarge\"], "
		 "\"max_instances\": 12}");
	job.startup_seconds = 120;
}

/* Decisions made up to T over the full market equal those made over the
 * market truncated at T: no policy sees the future. */
static void no_future(const char *pol, enum billing_model b)
{
	struct market_set full, tr;
	struct px_error e = {0};
	struct log la = {.decisions_only = true}, lb = {.decisions_only = true};
	int64_t T = 4 * 86400 + 3 * 3600 + 300;
	struct sim_result r;

	sim_volatile_market(42);
	volatile_job();
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK);
	full = ms;
	r = run(pol, b, 86400, 0, 7, &la);
	sim_result_release(&r);
	cr_assert_eq(market_set_truncate(&full, T, &tr, &e), PX_OK);
	ms = tr;
	r = run(pol, b, 86400, tr.last_s, 7, &lb);
	sim_result_release(&r);
	ms = full;
	int64_t last = tr.last_s;
	market_set_release(&tr);
	size_t na = 0;
	while (na < la.n && atoll(la.line[na]) <= last)
		na++;
	cr_assert_gt(na, 5, "%s made only %zu decisions", pol, na);
	cr_assert_eq(lb.n, na, "%s: %zu vs %zu decisions", pol, lb.n, na);
	for (size_t i = 0; i < na; i++)
		cr_assert_str_eq(la.line[i], lb.line[i], "%s decision %zu",
				 pol, i);
	free(la.line);
	free(lb.line);
}

Test(sim, no_future_bidbrain)
{
	no_future("bidbrain", BILLING_LEGACY_HOURLY);
}

Test(sim, no_future_standard)
{
	no_future("standard", BILLING_LEGACY_HOURLY);
}

Test(sim, no_future_spread_per_second)
{
	no_future("spread", BILLING_PER_SECOND);
}

Test(sim, no_future_bidbrain_per_second)
{
	no_future("bidbrain", BILLING_PER_SECOND);
}

Test(sim, deterministic_for_a_seed)
{
	struct sim_result a, b, c;
	sim_volatile_market(42);
	volatile_job();
	a = run("spread", BILLING_PER_SECOND, 0, 0, 11, NULL);
	b = run("spread", BILLING_PER_SECOND, 0, 0, 11, NULL);
	cr_assert_eq(a.cost_uusd, b.cost_uusd);
	cr_assert_eq(a.evictions, b.evictions);
	cr_assert_float_eq(a.work_done_hours, b.work_done_hours, 0);
	cr_assert_gt(a.evictions, 0, "rate 0.05/h should interrupt");
	c = run("spread", BILLING_PER_SECOND, 0, 0, 12, NULL);
	cr_assert(c.evictions != a.evictions || c.cost_uusd != a.cost_uusd,
		  "the seed changes the interruptions");
	sim_result_release(&a);
	sim_result_release(&b);
	sim_result_release(&c);
}

Test(sim, bidbrain_cheaper_per_work_than_baselines)
{
	struct sim_result bb, od_r, st;
	sim_volatile_market(42);
	volatile_job();
	bb = run("bidbrain", BILLING_LEGACY_HOURLY, 86400, 0, 1, NULL);
	od_r = run("ondemand", BILLING_LEGACY_HOURLY, 86400, 0, 1, NULL);
	st = run("standard", BILLING_LEGACY_HOURLY, 86400, 0, 1, NULL);
	cr_assert_lt(bb.cost_per_work_usd, od_r.cost_per_work_usd,
		     "bidbrain %f ondemand %f", bb.cost_per_work_usd,
		     od_r.cost_per_work_usd);
	cr_assert_lt(bb.cost_per_work_usd, st.cost_per_work_usd,
		     "bidbrain %f standard %f", bb.cost_per_work_usd,
		     st.cost_per_work_usd);
	cr_assert_gt(bb.free_hours, 0);
	sim_result_release(&bb);
	sim_result_release(&od_r);
	sim_result_release(&st);
}

/* A market where a bid at the price is evicted within 5 min nearly every
 * time (0.10, with 0.45 for the last 20 s of every 310): such instances
 * are almost free, but after startup each does less than 3 of its 5
 * minutes; another zone is a steady 0.12.  With spot.max_instances
 * equal to the job's instances, swapping steady instances for them makes
 * the fleet slower than standard's (23.6 h against 22.3 h without the
 * runtime floor); the floor keeps bids that stay (issue 12: no longer
 * runtime). */
Test(sim, bidbrain_no_slower_than_standard_when_churn_is_cheap)
{
	struct sim_result bb, st;

	for (int64_t ts = 0; ts <= 4 * 86400; ts += 310) {
		add("us-east-1a", "c3.xlarge", ts, 100000);
		add("us-east-1a", "c3.xlarge", ts + 290, 450000);
	}
	add("us-east-1b", "c3.xlarge", 0, 120000);
	add("us-east-1b", "c3.xlarge", 4 * 86400, 120001);
	job_from("\"work_hours\": 200, \"instances\": 8, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 1}, "
		 "\"clock_seconds\": 60, "
		 "\"spot\": {\"types\": [\"c3.xlarge\"], "
		 "\"max_instances\": 8}");
	job.startup_seconds = 120;
	bb = run("bidbrain", BILLING_LEGACY_HOURLY, 2 * 86400, 0, 1, NULL);
	st = run("standard", BILLING_LEGACY_HOURLY, 2 * 86400, 0, 1, NULL);
	cr_assert(bb.completed && st.completed);
	/* in the last hour the cost to finish alone decides (the end game
	 * may trade an hour for money) */
	cr_assert_leq(bb.runtime_hours, st.runtime_hours + 1,
		      "bidbrain %f h standard %f h", bb.runtime_hours,
		      st.runtime_hours);
	sim_result_release(&bb);
	sim_result_release(&st);
}

/* No reliable tier, so nothing to spread over a bigger fleet: under a
 * scaling_efficiency below 1 each further instance adds less work than
 * the fleet's average, and after an eviction a replacement carries its
 * startup where the instances it joins do not.  The runtime floor must
 * still keep the baselines' rate (instances of reference_type) with spot
 * that is cheaper per work than on demand: until session 31 it would
 * only add an instance that did not raise the fleet's cost per work:
 * on the flat market under e 0.9 BidBrain ran one instance, 60 h against
 * standard's 10.3 h (cheaper per work, but not what a job without a
 * deadline was promised), and with rises under e 1 and legacy billing
 * it took 8.9 h against 7.5 h, for 6% more per work. */
Test(sim, bidbrain_keeps_the_baselines_rate_without_a_tier)
{
	static const struct {
		double eff;
		bool rises;
		enum billing_model b;
	} cases[] = {
		{0.9, false, BILLING_PER_SECOND},
		{0.9, false, BILLING_LEGACY_HOURLY},
		{1.0, true, BILLING_PER_SECOND},
		{1.0, true, BILLING_LEGACY_HOURLY},
	};

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct sim_result bb, st;

		market_set_release(&ms);
		market_set_init(&ms);
		/* zone a: 0.10, and with rises a step of 0.001 up every 2 h
		 * (a bid at the price is lost), back down an hour later;
		 * zone b: a steady 0.11 */
		for (int64_t ts = 0; ts <= 6 * 86400; ts += 7200) {
			add("us-east-1a", "c3.xlarge", ts, 100000);
			if (cases[i].rises)
				add("us-east-1a", "c3.xlarge", ts + 3600,
				    101000);
		}
		add("us-east-1b", "c3.xlarge", 0, 110000);
		add("us-east-1b", "c3.xlarge", 6 * 86400, 110001);
		job_from("\"work_hours\": 60, \"instances\": 8, "
			 "\"reliable\": {\"type\": \"c3.xlarge\", "
			 "\"count\": 0}, \"clock_seconds\": 60, "
			 "\"interruption_rates\": {\"default\": 0}, "
			 "\"spot\": {\"types\": [\"c3.xlarge\"], "
			 "\"max_instances\": 16}");
		job.startup_seconds = 120;
		job.scaling_efficiency = cases[i].eff;
		bb = run("bidbrain", cases[i].b, 86400, 0, 1, NULL);
		st = run("standard", cases[i].b, 86400, 0, 1, NULL);
		cr_assert(bb.completed && st.completed, "case %zu", i);
		/* the end game may trade the last hour for money */
		cr_assert_leq(bb.runtime_hours, st.runtime_hours + 1,
			      "case %zu: bidbrain %f h standard %f h", i,
			      bb.runtime_hours, st.runtime_hours);
		/* for at most 2% more per work than standard's (measured:
		 * 1.3% more on the flat market under e 0.9 per-second, where
		 * it plans each new instance's first hour, startup and all,
		 * and so runs 10 where standard runs 8; 2-5% less in the
		 * other cases) */
		cr_assert_leq(bb.cost_per_work_usd, st.cost_per_work_usd *
			      1.02, "case %zu: bidbrain %f standard %f", i,
			      bb.cost_per_work_usd, st.cost_per_work_usd);
		sim_result_release(&bb);
		sim_result_release(&st);
	}
}

static void plan_err(const char *want, int64_t start, int64_t end)
{
	struct sim_setup su = {
		.ms = &ms, .od = &od, .job = &job,
		.billing = BILLING_LEGACY_HOURLY, .start_s = start,
		.end_s = end,
	};
	struct sim_plan *p = NULL;
	struct px_error e = {0};
	if (!ms.sealed)
		cr_assert_eq(market_set_seal(&ms, &e), PX_OK);
	cr_assert_neq(sim_plan_new(&su, &p, &e), PX_OK, "accepted");
	cr_assert(strstr(e.msg, want), "'%s' lacks '%s'", e.msg, want);
}

Test(sim, errors_say_what_is_missing)
{
	flat(2);
	add("us-east-1b", "m3.medium", 0, 1000);
	job_from("\"work_hours\": 10, \"instances\": 1, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 1}, "
		 "\"spot\": {\"types\": [\"c3.xlarge\", \"r3.large\"], "
		 "\"max_instances\": 4}");
	plan_err("spot.types[1]: no market for 'r3.large'", 0, 0);
	plan_err("types in the trace: c3.xlarge, m3.medium", 0, 0);
	job_from("\"work_hours\": 10, \"instances\": 1, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 1}, "
		 "\"spot\": {\"types\": [\"c3.xlarge\"], \"zones\": "
		 "[\"us-east-1a\", \"us-east-1e\"], \"max_instances\": 4}");
	plan_err("spot.zones[1]: no market in zone 'us-east-1e'", 0, 0);
	plan_err("us-east-1a, us-east-1b", 0, 0);
	job_from("\"work_hours\": 10, \"instances\": 1, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 1}, "
		 "\"spot\": {\"types\": [\"m3.medium\"], \"max_instances\": 4}");
	plan_err("no price for 'm3.medium' in region 'us-east-1' (it has: "
		 "c3.2xlarge, c3.xlarge)", 0, 0);
	job_from("\"work_hours\": 10, \"instances\": 1, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 1}, "
		 "\"spot\": {\"types\": [\"c3.xlarge\"], \"max_instances\": 4}");
	plan_err("outside the trace", 0, 3 * 86400);
	plan_err("the trace covers 1970-01-01T00:00:00Z to "
		 "1970-01-03T00:00:00Z", -5, 0);
}

Test(sim, no_future_fleet_strategies_per_second)
{
	no_future("price-capacity-optimized", BILLING_PER_SECOND);
}
