/* test_sim_oracle.c -- the hindsight bound (bidbrain/oracle.c through
 * sim_run): exact where the relaxation is the problem itself, counting
 * the hours the billing rules may waive, and never above what a policy
 * pays on volatile markets under either billing model. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_fixture.h"

TestSuite(sim_oracle, .init = sim_fixture_setup,
	  .fini = sim_fixture_teardown, .timeout = 120);

static struct sim_result run(const struct policy_ops *ops,
			     enum billing_model b, int64_t start, int64_t end,
			     uint64_t seed)
{
	struct sim_setup su = {
		.ms = &ms, .od = &od, .job = &job, .billing = b,
		.start_s = start, .end_s = end, .seed = seed,
	};
	struct sim_plan *p = NULL;
	struct sim_result r;
	struct px_error e = {0};

	if (!ms.sealed)
		cr_assert_eq(market_set_seal(&ms, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(sim_plan_new(&su, &p, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(sim_run(p, ops, &r, &e), PX_OK, "%s", e.msg);
	sim_plan_free(p);
	return r;
}

static struct sim_result run_named(const char *name, enum billing_model b,
				   int64_t start, int64_t end, uint64_t seed)
{
	const struct policy_ops *ops = NULL;
	struct px_error e = {0};

	cr_assert_eq(policy_lookup(name, &ops, &e), PX_OK, "%s", e.msg);
	return run(ops, b, start, end, seed);
}

/* Flat 0.10 spot, 0.50 on demand, linear scaling, no startup, no
 * interruption: the relaxation is the problem.  One reliable c3.xlarge
 * (0.50/h, 1 work/h) and 4 spot ones (0.10/h each): 10 work-hours need
 * 2 h (1.00 + 0.80), and more time only adds tier hours.  standard runs
 * exactly that plan, so the bound is attained. */
Test(sim_oracle, exact_where_the_relaxation_is_the_problem)
{
	struct sim_result o, s;

	add("us-east-1a", "c3.xlarge", 0, 100000);
	add("us-east-1a", "c3.xlarge", 2 * 86400, 100000);
	add("us-east-1a", "c3.xlarge", 2 * 86400 + 1, 100001);
	job_from("\"work_hours\": 10, \"instances\": 4, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 1}, "
		 "\"interruption_rates\": {\"default\": 0}, "
		 "\"spot\": {\"types\": [\"c3.xlarge\"], \"max_instances\": 4}");
	o = run(&sim_oracle_ops, BILLING_PER_SECOND, 0, 0, 1);
	s = run_named("standard", BILLING_PER_SECOND, 0, 0, 1);
	cr_assert(o.completed);
	cr_assert_str_eq(o.policy, "oracle");
	cr_assert_eq(o.cost_uusd, 1800000, "bound %lld",
		     (long long)o.cost_uusd);
	/* the plan's end, to the bound's minute grid */
	cr_assert_float_eq(o.runtime_hours, 2, 60 / 3600.0);
	cr_assert_float_eq(o.work_done_hours, 10, 1e-12);
	cr_assert_float_eq(o.instance_hours, 10, 0.02);
	cr_assert_eq(s.cost_uusd, o.cost_uusd, "standard %lld",
		     (long long)s.cost_uusd);
	sim_result_release(&o);
	sim_result_release(&s);
	/* legacy: the same 2 whole hours */
	o = run(&sim_oracle_ops, BILLING_LEGACY_HOURLY, 0, 0, 1);
	s = run_named("standard", BILLING_LEGACY_HOURLY, 0, 0, 1);
	cr_assert_eq(o.cost_uusd, 1800000);
	cr_assert_eq(s.cost_uusd, o.cost_uusd);
	sim_result_release(&o);
	sim_result_release(&s);
}

/* Without a reliable tier and with a spot cap of 1, the work takes spot
 * hours at the cheapest prices the window reaches: 0.30 for the first
 * 5 h, 0.10 after.  (Legacy charges an hour at the price of its start:
 * a second may be in an hour started at the lowest price of the hour
 * before it, which here is the price in force.) */
Test(sim_oracle, cheapest_hours_first)
{
	struct sim_result o;

	add("us-east-1a", "c3.xlarge", 0, 300000);
	add("us-east-1a", "c3.xlarge", 5 * 3600, 100000);
	add("us-east-1a", "c3.xlarge", 86400, 100001);
	job_from("\"work_hours\": 5, \"instances\": 1, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 0}, "
		 "\"warning_seconds\": 0, "
		 "\"spot\": {\"types\": [\"c3.xlarge\"], \"max_instances\": 1}");
	/* 5 work-hours: the 5 h at 0.10 from 5 h on */
	o = run(&sim_oracle_ops, BILLING_PER_SECOND, 0, 10 * 3600, 1);
	cr_assert_eq(o.cost_uusd, 500000, "%lld", (long long)o.cost_uusd);
	cr_assert_float_eq(o.runtime_hours, 10, 60 / 3600.0);
	sim_result_release(&o);
	/* ending by 7 h: 2 h at 0.10 and 3 at 0.30 */
	o = run(&sim_oracle_ops, BILLING_PER_SECOND, 0, 7 * 3600, 1);
	cr_assert_eq(o.cost_uusd, 1100000, "%lld", (long long)o.cost_uusd);
	sim_result_release(&o);
	/* legacy: the same */
	o = run(&sim_oracle_ops, BILLING_LEGACY_HOURLY, 0, 7 * 3600, 1);
	cr_assert_eq(o.cost_uusd, 1100000, "%lld", (long long)o.cost_uusd);
	sim_result_release(&o);
}

/* A price that jumps above every bid at 2 h: any instance running in the
 * hour before (less the notice) may be evicted there and have that
 * partial hour waived (legacy), or its whole first hour (per-second, when
 * it started less than an hour before).  The bound counts that time as
 * free; oracle-paid does not. */
Test(sim_oracle, waived_hours_are_free_in_the_bound)
{
	struct sim_result o, p;

	add("us-east-1a", "c3.xlarge", 0, 100000);
	add("us-east-1a", "c3.xlarge", 2 * 3600, 9000000);
	add("us-east-1a", "c3.xlarge", 3 * 3600, 100000);
	add("us-east-1a", "c3.xlarge", 86400, 100001);
	job_from("\"work_hours\": 1, \"instances\": 1, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 0}, "
		 "\"warning_seconds\": 0, "
		 "\"spot\": {\"types\": [\"c3.xlarge\"], \"max_instances\": 1}");
	o = run(&sim_oracle_ops, BILLING_LEGACY_HOURLY, 0, 10 * 3600, 1);
	p = run(&sim_oracle_paid_ops, BILLING_LEGACY_HOURLY, 0, 10 * 3600, 1);
	cr_assert_eq(o.cost_uusd, 0, "%lld", (long long)o.cost_uusd);
	cr_assert_float_eq(o.free_hours, 1, 1e-9);
	cr_assert_eq(p.cost_uusd, 100000, "%lld", (long long)p.cost_uusd);
	sim_result_release(&o);
	sim_result_release(&p);
	/* and a policy really gets it: standard from 1.5 h is evicted at
	 * 2 h (its bid is 0.50), that half hour waived, and does the other
	 * half hour from 3 h (one hour at 0.10); the bound from 1.5 h counts
	 * the waived half hour and 0.5 h at 0.10 */
	o = run_named("standard", BILLING_LEGACY_HOURLY, 5400, 10 * 3600, 1);
	cr_assert_eq(o.cost_uusd, 100000, "%lld", (long long)o.cost_uusd);
	cr_assert_float_eq(o.free_hours, 0.5, 1e-9);
	p = run(&sim_oracle_ops, BILLING_LEGACY_HOURLY, 5400, 10 * 3600, 1);
	cr_assert_eq(p.cost_uusd, 50000, "%lld", (long long)p.cost_uusd);
	sim_result_release(&o);
	sim_result_release(&p);
}


/* The bound is below every policy that keeps the tier, for both billing
 * models, several markets, windows and job sizes; oracle-paid is at or
 * above it. */
Test(sim_oracle, below_every_policy)
{
	static const char *const pols[] = {"bidbrain", "standard", "spread"};
	struct px_error e = {0};
	int checked = 0;

	for (uint64_t seed = 1; seed <= 3; seed++) {
		market_set_release(&ms);
		market_set_init(&ms);
		sim_volatile_market(seed * 7919);
		cr_assert_eq(market_set_seal(&ms, &e), PX_OK);
		for (int b = 0; b < 2; b++) {
			enum billing_model bm = b ? BILLING_PER_SECOND :
					       BILLING_LEGACY_HOURLY;

			for (int size = 0; size < 2; size++) {
				struct sim_result o, p;
				char spec[512];

				snprintf(spec, sizeof spec,
					 "\"work_hours\": %d, \"instances\": 4,"
					 " \"reliable\": {\"type\": "
					 "\"c3.xlarge\", \"count\": 1}, "
					 "\"interruption_rates\": {\"default\":"
					 " 0.3}, \"spot\": {\"types\": "
					 "[\"c3.xlarge\", \"c3.2xlarge\"], "
					 "\"max_instances\": 6}",
					 size ? 400 : 40);
				job_from(spec);
				job.startup_seconds = 120;
				job.scaling_efficiency = 0.9;
				o = run(&sim_oracle_ops, bm, 86400, 0, seed);
				p = run(&sim_oracle_paid_ops, bm, 86400, 0,
					seed);
				cr_assert_geq(p.cost_uusd, o.cost_uusd);
				for (size_t k = 0; k < 3; k++) {
					struct sim_result r = run_named(
						pols[k], bm, 86400, 0, seed);

					if (r.completed) {
						cr_assert_geq(r.cost_uusd +
							      r.instances_launched,
							      o.cost_uusd,
							      "%s %s size %d "
							      "seed %llu: %lld < "
							      "bound %lld",
							      pols[k],
							      billing_model_name(bm),
							      size,
							      (unsigned long long)seed,
							      (long long)r.cost_uusd,
							      (long long)o.cost_uusd);
						checked++;
					}
					sim_result_release(&r);
				}
				sim_result_release(&o);
				sim_result_release(&p);
			}
		}
	}
	cr_assert_gt(checked, 20, "only %d completed runs", checked);
}

/* Under a flat scaling the bound counts it (docs/simulate.md, "The
 * oracle", 1).  Flat 0.25 spot, the tier one c3.xlarge at 0.50, e = 0.9,
 * no startup, no interruption: a fleet of 1 + n does (1 + n) 0.9^log2(1+n)
 * work an hour for 0.50 + 0.25 n, and the cheapest plan is that ratio's
 * minimum over n held throughout (n = 5 here, 0.3830 per work-hour).
 * The bound is at most that plan's cost, within the sqrt 2 pieces' slack
 * of it, well above the linear relaxation's (16 spot at once, 0.2647),
 * and below what every policy pays. */
Test(sim_oracle, counts_the_jobs_scaling)
{
	static const char *const pols[] = {"bidbrain", "standard", "spread"};
	double best = INFINITY, W = 30;
	struct sim_result o;

	add("us-east-1a", "c3.xlarge", 0, 250000);
	add("us-east-1a", "c3.xlarge", 4 * 86400, 250000);
	add("us-east-1a", "c3.xlarge", 4 * 86400 + 1, 250001);
	job_from("\"work_hours\": 30, \"instances\": 4, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 1}, "
		 "\"interruption_rates\": {\"default\": 0}, "
		 "\"spot\": {\"types\": [\"c3.xlarge\"], \"max_instances\": 16}");
	job.scaling_efficiency = 0.9;
	for (int n = 0; n <= 16; n++) {
		double f = (0.50 + 0.25 * n) /
			   ((1 + n) * pow(0.9, log2(1.0 + n)));

		if (f < best)
			best = f;
	}
	cr_assert_float_eq(best, 0.3830, 1e-4);
	o = run(&sim_oracle_paid_ops, BILLING_PER_SECOND, 0, 0, 1);
	cr_assert(o.completed);
	cr_assert_leq(o.cost_uusd, W * best * 1e6 + 1, "bound %lld",
		      (long long)o.cost_uusd);
	cr_assert_geq(o.cost_uusd, 0.97 * W * best * 1e6, "bound %lld",
		      (long long)o.cost_uusd);
	cr_assert_gt(o.cost_uusd, 1.3 * W * (0.50 + 0.25 * 16) / 17 * 1e6);
	for (size_t k = 0; k < 3; k++) {
		struct sim_result r = run_named(pols[k], BILLING_PER_SECOND,
						0, 0, 1);

		cr_assert(r.completed, "%s", pols[k]);
		cr_assert_geq(r.cost_uusd + r.instances_launched, o.cost_uusd,
			      "%s %lld < bound %lld", pols[k],
			      (long long)r.cost_uusd, (long long)o.cost_uusd);
		sim_result_release(&r);
	}
	sim_result_release(&o);
}

/* The oracle never runs in a world: its init refuses. */
Test(sim_oracle, refuses_to_be_a_policy)
{
	void *st = NULL;
	struct px_error e = {0};
	struct pol_env env;

	memset(&env, 0, sizeof env);
	cr_assert_eq(sim_oracle_ops.init(&env, &st, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "only in simulate"), "%s", e.msg);
	cr_assert_eq(policy_lookup("oracle", &(const struct policy_ops *){0},
				   &e), PX_EINVAL, "no world finds it");
}

/* Per-second capacity interruptions: instances interrupted in their
 * first hour are not charged, so with frequent ones standard pays far
 * less than every hour at the price.  The bound counts the hour before
 * each of the pool's events as possibly free and stays below. */
Test(sim_oracle, capacity_interruptions_may_be_free)
{
	struct sim_result o, p, s;

	add("us-east-1a", "c3.xlarge", 0, 100000);
	add("us-east-1a", "c3.xlarge", 3 * 86400, 100001);
	job_from("\"work_hours\": 40, \"instances\": 4, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 0}, "
		 "\"interruption_rates\": {\"default\": 2}, "
		 "\"interruption_pool_share\": 1, "
		 "\"spot\": {\"types\": [\"c3.xlarge\"], \"max_instances\": 4}");
	s = run_named("standard", BILLING_PER_SECOND, 0, 2 * 86400, 5);
	o = run(&sim_oracle_ops, BILLING_PER_SECOND, 0, 2 * 86400, 5);
	p = run(&sim_oracle_paid_ops, BILLING_PER_SECOND, 0, 2 * 86400, 5);
	cr_assert(s.completed);
	cr_assert_gt(s.free_hours, 0.5 * s.instance_hours, "free %f of %f",
		     s.free_hours, s.instance_hours);
	/* every hour paid would cost 40 x 0.10 */
	cr_assert_eq(p.cost_uusd, 4000000, "%lld", (long long)p.cost_uusd);
	cr_assert_lt(s.cost_uusd, p.cost_uusd);
	cr_assert_leq(o.cost_uusd, s.cost_uusd, "bound %lld, standard %lld",
		      (long long)o.cost_uusd, (long long)s.cost_uusd);
	sim_result_release(&o);
	sim_result_release(&p);
	sim_result_release(&s);
}
