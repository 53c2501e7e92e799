/* test_sim_budget.c -- the budget is a cap (issue 23, item 7;
 * docs/jobspec.md, "The budget is a cap"): for every policy, the oracle,
 * both billing models and many budgets (one micro-dollar, budgets that end
 * a run anywhere in it, budgets that do not bind), a run never costs more
 * than its budget, a run the budget ended says so and did not complete,
 * and a budget that binds nowhere changes nothing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "sim_fixture.h"

TestSuite(sim_budget, .init = sim_fixture_setup,
	  .fini = sim_fixture_teardown);


static void budget_job(void)
{
	job_from("\"work_hours\": 150, \"instances\": 6, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 1}, "
		 "\"clock_seconds\": 60, "
		 "\"interruption_rates\": {\"default\": 0.05}, "
		 "\"spot\": {\"types\": [\"c3.xlarge\", \"c3.2xlarge\"], "
		 "\"max_instances\": 10}");
	job.startup_seconds = 120;
}

static struct sim_result run(const struct policy_ops *ops,
			     enum billing_model b, int64_t budget)
{
	struct sim_setup su = {
		.ms = &ms, .od = &od, .job = &job, .billing = b, .seed = 7,
	};
	struct sim_plan *p = NULL;
	struct sim_result r;
	struct px_error e = {0};

	if (!ms.sealed)
		cr_assert_eq(market_set_seal(&ms, &e), PX_OK, "%s", e.msg);
	job.budget_uusd = budget;
	cr_assert_eq(sim_plan_new(&su, &p, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(sim_run(p, ops, &r, &e), PX_OK, "%s: %s", ops->name,
		     e.msg);
	sim_plan_free(p);
	return r;
}

/* One policy under one billing model over many budgets. */
static void caps(const struct policy_ops *ops, enum billing_model b)
{
	static const double share[] = {
		0.0001, 0.003, 0.01, 0.05, 0.11, 0.25, 0.37, 0.5, 0.66, 0.8,
		0.93, 0.99,
	};
	const char *bn = billing_model_name(b);
	struct sim_result free_run = run(ops, b, -1), r;
	int64_t full = free_run.cost_uusd;

	cr_assert(free_run.completed, "%s %s: the free run does not finish",
		  ops->name, bn);

	/* one micro-dollar pays for nothing: the run ends at once */
	r = run(ops, b, 1);
	cr_assert_eq(r.cost_uusd, 0, "%s %s: 1 uusd budget cost %lld",
		     ops->name, bn, (long long)r.cost_uusd);
	cr_assert_eq(r.stop, SIM_STOP_BUDGET, "%s %s: stop %s", ops->name, bn,
		     sim_stop_name(r.stop));
	cr_assert_not(r.completed);
	cr_assert_eq(r.runtime_hours, 0, "%s %s: ran %g h", ops->name, bn,
		     r.runtime_hours);
	cr_assert_eq(r.instances_launched, 0);
	sim_result_release(&r);

	cr_assert_gt(full, 0, "%s %s: the free run costs nothing", ops->name,
		     bn);
	for (size_t i = 0; i < sizeof share / sizeof *share; i++) {
		int64_t budget = (int64_t)(share[i] * (double)full) + 1;

		r = run(ops, b, budget);
		cr_assert_leq(r.cost_uusd, budget, "%s %s: budget %lld uusd, "
			      "cost %lld", ops->name, bn, (long long)budget,
			      (long long)r.cost_uusd);
		cr_assert(r.stop == SIM_STOP_BUDGET || r.stop == SIM_STOP_DONE,
			  "%s %s: budget %lld: stop %s", ops->name, bn,
			  (long long)budget, sim_stop_name(r.stop));
		cr_assert_eq(r.completed, r.stop == SIM_STOP_DONE);
		if (r.stop == SIM_STOP_BUDGET)
			cr_assert_lt(r.work_done_hours, job.work_hours);
		/* half of what the free run paid does not finish it */
		if (share[i] <= 0.5 && free_run.completed)
			cr_assert_eq(r.stop, SIM_STOP_BUDGET, "%s %s: budget "
				     "%lld of %lld: %s", ops->name, bn,
				     (long long)budget, (long long)full,
				     sim_stop_name(r.stop));
		sim_result_release(&r);
	}
	/* a budget the run never comes near changes nothing */
	r = run(ops, b, 2 * full + 1000000);
	cr_assert_eq(r.cost_uusd, full, "%s %s", ops->name, bn);
	cr_assert_eq(r.stop, free_run.stop, "%s %s", ops->name, bn);
	cr_assert_eq(r.completed, free_run.completed);
	cr_assert_eq(r.runtime_hours, free_run.runtime_hours);
	sim_result_release(&r);
	sim_result_release(&free_run);
}

static void every_policy(enum billing_model b)
{
	sim_volatile_market(42);
	budget_job();
	for (size_t i = 0; i < policy_count(); i++)
		caps(policy_at(i), b);
	caps(&sim_oracle_ops, b);
	caps(&sim_oracle_paid_ops, b);
}

Test(sim_budget, a_cap_for_every_policy_legacy_hourly, .timeout = 240)
{
	every_policy(BILLING_LEGACY_HOURLY);
}

Test(sim_budget, a_cap_for_every_policy_per_second, .timeout = 240)
{
	every_policy(BILLING_PER_SECOND);
}

/* One market at 0.10/h spot (on-demand 0.50/h), the ondemand policy with
 * 4 instances, 10 work-hours. */
static const struct policy_ops *ondemand_by_hand(void)
{
	const struct policy_ops *ops = NULL;
	struct px_error e = {0};

	add("us-east-1a", "c3.xlarge", 0, 100000);
	add("us-east-1a", "c3.xlarge", 2 * 86400, 100001);
	job_from("\"work_hours\": 10, \"instances\": 4, "
		 "\"reliable\": {\"type\": \"c3.xlarge\", \"count\": 1}, "
		 "\"spot\": {\"types\": [\"c3.xlarge\"], "
		 "\"max_instances\": 4}");
	cr_assert_eq(policy_lookup("ondemand", &ops, &e), PX_OK);
	return ops;
}

/* ondemand, 4 instances at 0.50/h, legacy-hourly: a budget of 1.20 pays
 * for 2 first hours (1.00); the other 2 are refused.  At the hour's end a
 * second hour of either would make 1.50: both are released before it is
 * charged, nothing is left, and the run is stopped by the budget at
 * 1.00.  (The run started all 4 and said
 * "completed" at 213% of its budget.) */
Test(sim_budget, ondemand_by_hand_legacy_hourly)
{
	struct sim_result r;
	const struct policy_ops *ops;

	ops = ondemand_by_hand();
	r = run(ops, BILLING_LEGACY_HOURLY, 1200000);
	cr_assert_eq(r.cost_uusd, 1000000, "cost %lld",
		     (long long)r.cost_uusd);
	cr_assert_eq(r.stop, SIM_STOP_BUDGET);
	cr_assert_not(r.completed);
	cr_assert_eq(r.instances_launched, 2);
	cr_assert_float_eq(r.runtime_hours, 1.0, 1e-9);
	cr_assert_float_eq(r.work_done_hours, 2.0, 1e-9);
	/* 1.60: 3 first hours (1.50), no second hour */
	r = run(ops, BILLING_LEGACY_HOURLY, 1600000);
	cr_assert_eq(r.cost_uusd, 1500000);
	cr_assert_eq(r.instances_launched, 3);
	cr_assert_eq(r.stop, SIM_STOP_BUDGET);
	cr_assert_float_eq(r.runtime_hours, 1.0, 1e-9);
	cr_assert_float_eq(r.work_done_hours, 3.0, 1e-9);
	/* 2.00 pays for the 4 first hours to the micro-dollar, and no
	 * second hour */
	r = run(ops, BILLING_LEGACY_HOURLY, 2000000);
	cr_assert_eq(r.cost_uusd, 2000000);
	cr_assert_eq(r.instances_launched, 4);
	cr_assert_eq(r.stop, SIM_STOP_BUDGET);
	cr_assert_float_eq(r.runtime_hours, 1.0, 1e-9);
}

/* The same under per-second billing: 4 instances at 0.50/h cost
 * 2.00/h, so a budget of 1.00 lasts exactly 1800 s; the run stops there,
 * at the budget to the micro-dollar, and says so. */
Test(sim_budget, ondemand_by_hand_per_second)
{
	struct sim_result r;
	const struct policy_ops *ops;

	ops = ondemand_by_hand();
	r = run(ops, BILLING_PER_SECOND, 1000000);
	cr_assert_eq(r.cost_uusd, 1000000, "cost %lld",
		     (long long)r.cost_uusd);
	cr_assert_eq(r.stop, SIM_STOP_BUDGET);
	cr_assert_not(r.completed);
	cr_assert_float_eq(r.runtime_hours, 0.5, 1e-9);
	cr_assert_float_eq(r.work_done_hours, 2.0, 1e-9);
	/* 60 s of one is 8333 uusd: a budget below it starts nothing */
	r = run(ops, BILLING_PER_SECOND, 8332);
	cr_assert_eq(r.cost_uusd, 0);
	cr_assert_eq(r.instances_launched, 0);
	cr_assert_eq(r.stop, SIM_STOP_BUDGET);
	r = run(ops, BILLING_PER_SECOND, 8333);
	cr_assert_eq(r.instances_launched, 1);
	cr_assert_eq(r.cost_uusd, 8333);
	cr_assert_eq(r.stop, SIM_STOP_BUDGET);
}
