/* test_policy.c -- policies and the risk estimator, driven directly
 * through the policy interface with hand-built fleets. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../agent/plan.h"
#include "../../bidbrain/risk.h"
#include "../../trainer/compute/goodput.h"

static struct market_set ms;
static struct jobspec job;
static struct ondemand_entry od_v[3];
static struct ondemand_table od = {.v = od_v, .n = 3};

#define JOB \
	"{\"name\": \"t\", \"region\": \"us-east-1\", \"work_hours\": 1000,"\
	" \"reference_type\": \"c3.xlarge\", \"instances\": 4,"             \
	" \"reliable\": {\"type\": \"c3.xlarge\", \"count\": 1},"            \
	" \"spot\": {\"types\": [\"c3.xlarge\", \"c3.2xlarge\"],"             \
	" \"max_instances\": 8}, \"scaling_efficiency\": 1}"

static void add(const char *z, const char *t, int64_t ts, int64_t p)
{
	struct px_error e = {0};
	cr_assert_eq(market_set_add(&ms, z, t, ts, p, &e), PX_OK, "%s", e.msg);
}

static void setup(void)
{
	struct px_error e = {0};
	market_set_init(&ms);
	cr_assert_eq(jobspec_parse(JOB, strlen(JOB), "job.json", &job, &e),
		     PX_OK, "%s", e.msg);
	snprintf(od_v[0].region, sizeof od_v[0].region, "us-east-1");
	snprintf(od_v[0].type, sizeof od_v[0].type, "c3.2xlarge");
	od_v[0].uusd_per_hour = 420000;
	snprintf(od_v[1].region, sizeof od_v[1].region, "us-east-1");
	snprintf(od_v[1].type, sizeof od_v[1].type, "c3.xlarge");
	od_v[1].uusd_per_hour = 210000;
	snprintf(od_v[2].region, sizeof od_v[2].region, "us-west-2");
	snprintf(od_v[2].type, sizeof od_v[2].type, "c3.xlarge");
	od_v[2].uusd_per_hour = 999999;
}

static void teardown(void)
{
	market_set_release(&ms);
}

TestSuite(policy, .init = setup, .fini = teardown);

/* The policies' environment, with no world at all (plan.h). */
static struct plan *mkplan(enum billing_model b)
{
	struct plan_setup su = {
		.ms = &ms, .od = &od, .job = &job, .billing = b,
	};
	struct plan *p = NULL;
	struct px_error e = {0};
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(plan_new(&su, &p, &e), PX_OK, "%s", e.msg);
	return p;
}

/* The running job's scaling the next decisions get (pol_input.scaling;
 * NULL: the spec's), as proteusd passes it. */
static const struct pol_scaling *scaling_in;

static void decide(const struct policy_ops *ops, const struct pol_env *env,
		   void *st, int64_t now, unsigned why,
		   const struct pol_instance *fl, size_t n,
		   struct pol_actions *out)
{
	struct market_view mv = {.ms = &ms, .now_s = now};
	struct pol_fleet f = {.v = fl, .n = n};
	struct pol_progress pr = {.work_total_h = 1000};
	struct pol_input in = {.now_s = now, .why = why, .mv = &mv,
			       .fleet = &f, .progress = &pr,
			       .scaling = scaling_in};
	struct px_error e = {0};
	out->n = 0;
	cr_assert_eq(ops->decide(st, &in, out, &e), PX_OK, "%s", e.msg);
	(void)env;
}

Test(policy, ondemand_fixed_fleet)
{
	struct pol_actions a = {0};
	void *st = NULL;
	add("us-east-1a", "c3.xlarge", 0, 50000);
	add("us-east-1a", "c3.2xlarge", 0, 90000);
	add("us-east-1a", "c3.2xlarge", 86400, 91000);
	struct plan *p = mkplan(BILLING_LEGACY_HOURLY);
	const struct pol_env *env = plan_env(p);
	cr_assert_eq(pol_ondemand_ops.init(env, &st, NULL), PX_OK);
	decide(&pol_ondemand_ops, env, st, 0, POL_WHY_START, NULL, 0, &a);
	cr_assert_eq(a.n, 1);
	cr_assert_eq(a.v[0].kind, POL_ACQUIRE);
	cr_assert_eq(a.v[0].market, -1);
	cr_assert_eq(a.v[0].count, 4);
	cr_assert_str_eq(env->types[a.v[0].type].name, "c3.xlarge");
	decide(&pol_ondemand_ops, env, st, 100, POL_WHY_TICK, NULL, 0, &a);
	cr_assert_eq(a.n, 0);
	pol_ondemand_ops.fini(st);
	pol_actions_release(&a);
	plan_free(p);
}

Test(policy, standard_cheapest_zone_bid_ondemand_and_reacquire)
{
	struct pol_actions a = {0};
	void *st = NULL;
	add("us-east-1a", "c3.xlarge", 0, 60000);
	add("us-east-1b", "c3.xlarge", 0, 40000);
	add("us-east-1b", "c3.xlarge", 1000, 900000); /* b above the bid */
	add("us-east-1b", "c3.xlarge", 2000, 30000);
	add("us-east-1a", "c3.2xlarge", 0, 10000);    /* not its type */
	struct plan *p = mkplan(BILLING_LEGACY_HOURLY);
	const struct pol_env *env = plan_env(p);
	cr_assert_eq(pol_standard_ops.init(env, &st, NULL), PX_OK);

	decide(&pol_standard_ops, env, st, 0, POL_WHY_START, NULL, 0, &a);
	cr_assert_eq(a.n, 2);
	cr_assert(a.v[0].market < 0 && a.v[0].reliable && a.v[0].count == 1);
	cr_assert_str_eq(env->markets[a.v[1].market].zone, "us-east-1b");
	cr_assert_eq(a.v[1].count, 4);
	cr_assert_eq(a.v[1].bid_uusd, 210000);

	/* two of four evicted while b is above the bid: refill in a */
	struct pol_instance fl[2] = {
		{.id = 1, .market = a.v[1].market, .bid_uusd = 210000},
		{.id = 2, .market = a.v[1].market, .bid_uusd = 210000},
	};
	decide(&pol_standard_ops, env, st, 1500, POL_WHY_EVICTION, fl, 2, &a);
	cr_assert_eq(a.n, 1);
	cr_assert_str_eq(env->markets[a.v[0].market].zone, "us-east-1a");
	cr_assert_eq(a.v[0].count, 2);
	/* b falls back below a: the next refill goes to b */
	decide(&pol_standard_ops, env, st, 2000, POL_WHY_PRICE, fl, 2, &a);
	cr_assert_str_eq(env->markets[a.v[0].market].zone, "us-east-1b");
	pol_standard_ops.fini(st);
	pol_actions_release(&a);
	plan_free(p);
}

Test(policy, lookup_names)
{
	const struct policy_ops *ops = NULL;
	struct px_error e = {0};
	cr_assert_eq(policy_lookup("bidbrain", &ops, &e), PX_OK);
	cr_assert_eq(ops, &pol_bidbrain_ops);
	cr_assert_eq(policy_lookup("spread", &ops, &e), PX_OK);
	cr_assert_eq(policy_lookup("greedy", &ops, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "'greedy'") && strstr(e.msg, "standard"),
		  "%s", e.msg);
}

/* Base price 0.10 with a +0.05 spike over [1800, 2400) of every 2 h. */
static void spiky(const char *zone, int64_t days)
{
	for (int64_t t = 0; t < days * 86400; t += 7200) {
		add(zone, "c3.xlarge", t, 100000);
		add(zone, "c3.xlarge", t + 1800, 150000);
		add(zone, "c3.xlarge", t + 2400, 100000);
	}
}

Test(policy, risk_estimates_match_hand_count)
{
	struct risk *r = NULL;
	struct risk_estimate est;
	struct px_error e = {0};
	int idx = 0, k2, k5;
	int64_t odp = 1000000;

	spiky("us-east-1a", 10);
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK);
	cr_assert_eq(risk_new(1, &idx, &odp, &r, &e), PX_OK);
	struct market_view mv = {.ms = &ms, .now_s = 5 * 86400};
	cr_assert(risk_update(r, &mv, NULL));
	/* per 2 h, 24 samples: 12 see a rise within the hour (s mod 7200
	 * in 0..1500 and 5400..7100), after 1800-s' and 9000-s' seconds:
	 * mean (1050 + 2850) / 2 = 1950, less a partial last period */
	risk_get(r, 0, 0, &est);
	cr_assert_float_eq(est.beta, 0.5, 0.01, "beta %f", est.beta);
	cr_assert_float_eq(est.tau_s, 1950, 10.0, "tau %f", est.tau_s);
	k2 = risk_delta_index(r, 0, 100000, 120000);
	cr_assert_eq(risk_delta_uusd(r, 0, k2), 20000);
	risk_get(r, 0, k2, &est);   /* +0.02 */
	cr_assert_float_eq(est.beta, 0.5, 0.01);
	k5 = risk_delta_index(r, 0, 100000, 150000);
	cr_assert_eq(risk_delta_uusd(r, 0, k5), 50000);
	risk_get(r, 0, k5, &est);   /* +0.05: 0.15 is not above 0.15 */
	cr_assert(est.beta < 0.01, "beta %f", est.beta);
	/* only complete samples: s + 3600 <= now */
	cr_assert_eq(est.samples, (5 * 86400 - 3600) / 300 + 1);
	/* the deltas between 0 and 0.02 of the on-demand price */
	cr_assert_eq(risk_delta_index(r, 0, 100000, 100200), 1);
	cr_assert_eq(risk_delta_uusd(r, 0, 1), 200);
	cr_assert_eq(risk_delta_index(r, 0, 100000, 99999), -1);
	risk_free(r);
}

Test(policy, risk_sees_nothing_after_now)
{
	struct risk *a = NULL, *b = NULL;
	struct market_set tr;
	struct px_error e = {0};
	struct risk_estimate x, y;
	int idx = 0;
	int64_t odp = 1000000, now = 3 * 86400 + 1234;

	spiky("us-east-1a", 6);
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK);
	cr_assert_eq(market_set_truncate(&ms, now, &tr, &e), PX_OK);
	cr_assert_eq(risk_new(1, &idx, &odp, &a, &e), PX_OK);
	cr_assert_eq(risk_new(1, &idx, &odp, &b, &e), PX_OK);
	struct market_view va = {.ms = &ms, .now_s = now};
	struct market_view vb = {.ms = &tr, .now_s = now};
	risk_update(a, &va, NULL);
	risk_update(b, &vb, NULL);
	for (int k = 0; k < RISK_DELTAS; k++) {
		risk_get(a, 0, k, &x);
		risk_get(b, 0, k, &y);
		cr_assert_eq(x.samples, y.samples);
		cr_assert_eq(x.beta, y.beta);
		cr_assert_eq(x.tau_s, y.tau_s);
	}
	risk_free(a);
	risk_free(b);
	market_set_release(&tr);
}

Test(policy, bidbrain_acquires_cheap_spot_and_drops_dear)
{
	struct pol_actions a = {0};
	void *st = NULL;
	int total = 0;

	spiky("us-east-1a", 4);
	add("us-east-1b", "c3.2xlarge", 0, 60000);
	add("us-east-1b", "c3.2xlarge", 3 * 86400, 4000000); /* 10x OD */
	struct plan *p = mkplan(BILLING_LEGACY_HOURLY);
	const struct pol_env *env = plan_env(p);
	cr_assert_eq(pol_bidbrain_ops.init(env, &st, NULL), PX_OK);
	decide(&pol_bidbrain_ops, env, st, 86400, POL_WHY_START, NULL, 0, &a);
	cr_assert(a.n >= 2);
	cr_assert(a.v[0].reliable && a.v[0].market < 0);
	for (size_t i = 1; i < a.n; i++) {
		int64_t price;
		struct market_view mv = {.ms = &ms, .now_s = 86400};
		cr_assert_eq(a.v[i].kind, POL_ACQUIRE);
		cr_assert(market_view_price(&mv,
			  env->markets[a.v[i].market].market, &price));
		cr_assert(a.v[i].bid_uusd >= price);
		total += a.v[i].count;
	}
	cr_assert(total > 0 && total <= job.spot.max_instances, "%d", total);

	/* an instance in the now 10x-dear market at its hour end goes */
	int dear = -1;
	for (size_t i = 0; i < env->n_markets; i++)
		if (!strcmp(env->types[env->markets[i].type].name,
			    "c3.2xlarge"))
			dear = (int)i;
	struct pol_instance fl[2] = {
		{.id = 1, .reliable = true, .type = env->reliable_type,
		 .market = -1, .period_end_s = 3 * 86400 + 600},
		{.id = 7, .type = env->markets[dear].type, .market = dear,
		 .bid_uusd = 5000000, .period_end_s = 3 * 86400 + 600},
	};
	decide(&pol_bidbrain_ops, env, st, 3 * 86400 + 600,
	       POL_WHY_HOUR_END, fl, 2, &a);
	bool released = false;
	for (size_t i = 0; i < a.n; i++)
		if (a.v[i].kind == POL_RELEASE && a.v[i].instance == 7)
			released = true;
	cr_assert(released);
	/* the same instance mid-hour is kept (its hour is paid) */
	fl[1].period_end_s += 1800;
	decide(&pol_bidbrain_ops, env, st, 3 * 86400 + 600, POL_WHY_PRICE,
	       fl, 2, &a);
	for (size_t i = 0; i < a.n; i++)
		cr_assert_neq(a.v[i].kind, POL_RELEASE);
	pol_bidbrain_ops.fini(st);
	pol_actions_release(&a);
	plan_free(p);
}

Test(policy, spread_caps_share_per_market)
{
	struct pol_actions a = {0};
	void *st = NULL;
	int per[16] = {0};

	add("us-east-1a", "c3.xlarge", 0, 30000);
	add("us-east-1b", "c3.xlarge", 0, 31000);
	add("us-east-1c", "c3.xlarge", 0, 32000);
	add("us-east-1a", "c3.2xlarge", 0, 62000);
	add("us-east-1b", "c3.2xlarge", 0, 64000);
	add("us-east-1b", "c3.2xlarge", 86400, 65000);
	struct plan *p = mkplan(BILLING_PER_SECOND);
	const struct pol_env *env = plan_env(p);
	cr_assert_eq(pol_spread_ops.init(env, &st, NULL), PX_OK);
	decide(&pol_spread_ops, env, st, 10, POL_WHY_START, NULL, 0, &a);
	int total = 0;
	for (size_t i = 0; i < a.n; i++) {
		if (a.v[i].market < 0)
			continue;
		cr_assert_eq(a.v[i].bid_uusd,
			     env->types[env->markets[a.v[i].market].type]
			     .od_uusd);
		per[a.v[i].market] += a.v[i].count;
		total += a.v[i].count;
	}
	/* 8 at most, ceil(0.25 * 8) = 2 per market, cheapest first */
	cr_assert_eq(total, 8);
	for (size_t i = 0; i < env->n_markets; i++)
		cr_assert(per[i] <= 2, "market %zu has %d", i, per[i]);
	pol_spread_ops.fini(st);
	pol_actions_release(&a);
	plan_free(p);
}

/* decide() with the job rem_h work-hours from its end. */
static void decide_rem(void *st, int64_t now, unsigned why,
		       const struct pol_instance *fl, size_t n, double rem_h,
		       struct pol_actions *out)
{
	struct market_view mv = {.ms = &ms, .now_s = now};
	struct pol_fleet f = {.v = fl, .n = n};
	struct pol_progress pr = {.work_total_h = 1000,
				  .work_done_h = 1000 - rem_h};
	struct pol_input in = {.now_s = now, .why = why, .mv = &mv,
			       .fleet = &f, .progress = &pr};
	struct px_error e = {0};
	out->n = 0;
	cr_assert_eq(pol_bidbrain_ops.decide(st, &in, out, &e), PX_OK, "%s",
		     e.msg);
}

static int acquired(const struct pol_actions *a)
{
	int n = 0;
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].kind == POL_ACQUIRE && a->v[i].market >= 0)
			n += a->v[i].count;
	return n;
}

Test(policy, bidbrain_no_hours_the_job_cannot_use)
{
	struct pol_actions a = {0};
	void *st = NULL;
	int64_t now = 2 * 86400;

	/* one cheap, steady market (a quarter of on-demand), one dear */
	add("us-east-1a", "c3.xlarge", 0, 50000);
	add("us-east-1a", "c3.xlarge", 3 * 86400, 50000);
	add("us-east-1a", "c3.2xlarge", 0, 400000);
	struct plan *p = mkplan(BILLING_LEGACY_HOURLY);
	const struct pol_env *env = plan_env(p);
	int m = -1;
	for (size_t i = 0; i < env->n_markets; i++)
		if (!strcmp(env->types[env->markets[i].type].name,
			    "c3.xlarge"))
			m = (int)i;
	cr_assert(m >= 0);
	cr_assert_eq(pol_bidbrain_ops.init(env, &st, NULL), PX_OK);
	/* reliable + 4 spot, every hour paid for 30 more minutes */
	struct pol_instance fl[5];
	for (int i = 0; i < 5; i++)
		fl[i] = (struct pol_instance){
			.id = (uint64_t)i + 1, .reliable = i == 0,
			.type = env->markets[m].type, .market = i ? m : -1,
			.bid_uusd = i ? 60000 : 0,
			.period_end_s = now + 1800,
		};
	/* a long way to go: cheap spot lowers the cost, so it grows */
	decide_rem(st, now, POL_WHY_TICK, fl, 5, 500, &a);
	cr_assert_eq(acquired(&a), job.spot.max_instances - 4);
	/* 1 work-hour left: the fleet (rate 5) ends in 12 minutes, inside
	 * the paid hours; another instance would be a wasted hour */
	decide_rem(st, now, POL_WHY_TICK, fl, 5, 1, &a);
	cr_assert_eq(a.n, 0, "%zu actions", a.n);
	/* one spot hour ends now and the other four finish the last
	 * 1 work-hour inside their paid half hour: it is released, and
	 * nothing is acquired for it */
	fl[4].period_end_s = now;
	decide_rem(st, now, POL_WHY_HOUR_END, fl, 5, 1, &a);
	cr_assert_eq(a.n, 1, "%zu actions", a.n);
	cr_assert_eq(a.v[0].kind, POL_RELEASE);
	cr_assert_eq(a.v[0].instance, 5);
	/* with 20 work-hours left it still pays for itself: kept (it
	 * shortens the reliable tier's on-demand hours) */
	decide_rem(st, now, POL_WHY_HOUR_END, fl, 5, 20, &a);
	for (size_t i = 0; i < a.n; i++)
		cr_assert_neq(a.v[i].kind, POL_RELEASE);
	pol_bidbrain_ops.fini(st);
	pol_actions_release(&a);
	plan_free(p);
}

/* Acquisitions of a: instances per (zone, type) into per[market]. */
static int acquired_per(const struct pol_env *env, const struct pol_actions *a,
		    int *per)
{
	int n = 0;

	for (size_t i = 0; i < env->n_markets; i++)
		per[i] = 0;
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].kind == POL_ACQUIRE && a->v[i].market >= 0) {
			per[a->v[i].market] += a->v[i].count;
			cr_assert_eq(a->v[i].bid_uusd, env->types[
				env->markets[a->v[i].market].type].od_uusd,
				"the max price is the on-demand price");
			n += a->v[i].count;
		}
	return n;
}

static int market_of(const struct pol_env *env, const char *zone,
		     const char *type)
{
	for (size_t i = 0; i < env->n_markets; i++)
		if (!strcmp(env->markets[i].zone, zone) &&
		    !strcmp(env->types[env->markets[i].type].name, type))
			return (int)i;
	cr_assert_fail("no market %s %s", zone, type);
	return -1;
}

/* EC2 Fleet's strategies on three eligible pools and one above its
 * on-demand price: weighted capacity 4 (instances x reference speed),
 * c3.2xlarge counting 2 and cheapest per unit but interrupted 15 times
 * as often; interrupted instances are replaced in the strategy's pool. */
Test(policy, fleet_strategies_pick_their_pools)
{
	static const struct {
		const struct policy_ops *ops;
		int want[4];     /* 1a x, 1b x, 1a 2x, 1b 2x */
	} cases[] = {
		{&pol_lowest_price_ops, {0, 0, 2, 0}},
		{&pol_capacity_optimized_ops, {2, 2, 0, 0}},
		{&pol_price_capacity_optimized_ops, {4, 0, 0, 0}},
		{&pol_diversified_ops, {1, 1, 1, 0}},
	};
	struct pol_actions a = {0};
	int per[8], m[4];

	add("us-east-1a", "c3.xlarge", 0, 40000);
	add("us-east-1b", "c3.xlarge", 0, 50000);
	add("us-east-1a", "c3.2xlarge", 0, 60000);
	add("us-east-1b", "c3.2xlarge", 0, 500000);  /* above on-demand */
	add("us-east-1b", "c3.2xlarge", 86400, 500001);
	snprintf(job.rate[0].type, sizeof job.rate[0].type, "c3.2xlarge");
	job.rate[0].v = 0.3;
	job.n_rate = 1;
	job.rate_default = 0.02;
	struct plan *p = mkplan(BILLING_PER_SECOND);
	const struct pol_env *env = plan_env(p);

	m[0] = market_of(env, "us-east-1a", "c3.xlarge");
	m[1] = market_of(env, "us-east-1b", "c3.xlarge");
	m[2] = market_of(env, "us-east-1a", "c3.2xlarge");
	m[3] = market_of(env, "us-east-1b", "c3.2xlarge");
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		const struct policy_ops *ops = cases[c].ops;
		struct pol_instance fl[8];
		void *st = NULL;
		size_t n = 0;

		cr_assert_eq(ops->init(env, &st, NULL), PX_OK);
		decide(ops, env, st, 0, POL_WHY_START, NULL, 0, &a);
		cr_assert(a.v[0].market < 0 && a.v[0].reliable &&
			  a.v[0].count == 1, "%s: the tier first", ops->name);
		acquired_per(env, &a, per);
		for (int k = 0; k < 4; k++)
			cr_assert_eq(per[m[k]], cases[c].want[k], "%s: pool %d "
				     "has %d", ops->name, k, per[m[k]]);
		/* the fleet as asked; one of the first pool's is gone */
		for (int k = 0; k < 4; k++)
			for (int i = 0; i < per[m[k]]; i++)
				fl[n] = (struct pol_instance){
					.id = n + 10, .market = m[k],
					.type = env->markets[m[k]].type,
				}, n++;
		decide(ops, env, st, 100, POL_WHY_TICK, fl, n, &a);
		cr_assert_eq(a.n, 0, "%s: full, nothing to do", ops->name);
		fl[0].warned = true;
		decide(ops, env, st, 200, POL_WHY_WARNING, fl, n, &a);
		cr_assert_eq(acquired_per(env, &a, per), 1, "%s", ops->name);
		cr_assert_eq(per[fl[0].market], 1, "%s: replaced in its pool",
			     ops->name);
		ops->fini(st);
	}
	pol_actions_release(&a);
	plan_free(p);
}

/* A measured scaling profile (docs/jobspec.md) where a third instance
 * adds 3% to the fleet's work: BidBrain takes one spot instance beside
 * the reliable one and stops, although the baselines' 5 instances do a
 * little more work an hour (its floor would otherwise add instances
 * that do less work per dollar than the fleet: up to the cap of 8). */
Test(policy, bidbrain_stops_where_the_profile_says_instances_add_little)
{
	static const char spec[] =
		"{\"name\": \"t\", \"region\": \"us-east-1\", "
		"\"work_hours\": 1000, \"reference_type\": \"c3.xlarge\", "
		"\"instances\": 4, \"reliable\": {\"type\": \"c3.xlarge\", "
		"\"count\": 1}, \"spot\": {\"types\": [\"c3.xlarge\", "
		"\"c3.2xlarge\"], \"max_instances\": 8}, "
		"\"scaling_profile\": {\"workers\": [1, 2, 4], "
		"\"samples_per_s\": [100, 150, 160], "
		"\"accuracy_per_sample\": [1e-6, 1e-6, 1e-6]}}";
	struct pol_actions a = {0};
	struct px_error e = {0};
	void *st = NULL;
	int spot = 0;

	add("us-east-1a", "c3.xlarge", 0, 50000);
	add("us-east-1a", "c3.2xlarge", 0, 400000);
	add("us-east-1a", "c3.2xlarge", 86400, 400001);
	cr_assert_eq(jobspec_parse(spec, strlen(spec), "job.json", &job, &e),
		     PX_OK, "%s", e.msg);
	/* 2 instances do 1.5 of one, 4 do 1.6; 3 do 2^(log-linear) 1.56 */
	cr_assert_float_eq(jobspec_fleet_rate(&job, 2, 2), 1.5, 1e-12);
	cr_assert_float_eq(jobspec_fleet_rate(&job, 4, 4), 1.6, 1e-12);
	cr_assert_float_eq(jobspec_fleet_rate(&job, 3, 3),
			   3 * exp(log(0.75) + log(0.4 / 0.75) *
				   (log2(3) - 1)), 1e-12);
	/* beyond the last point: its factor per doubling */
	cr_assert_float_eq(jobspec_fleet_rate(&job, 8, 8),
			   8 * 0.4 * (0.4 / 0.75), 1e-12);
	struct plan *p = mkplan(BILLING_LEGACY_HOURLY);
	const struct pol_env *env = plan_env(p);

	cr_assert_eq(pol_bidbrain_ops.init(env, &st, &e), PX_OK, "%s", e.msg);
	decide(&pol_bidbrain_ops, env, st, 3600, POL_WHY_START, NULL, 0, &a);
	for (size_t i = 0; i < a.n; i++)
		if (a.v[i].kind == POL_ACQUIRE && a.v[i].market >= 0) {
			cr_assert_str_eq(env->types[env->markets[
				a.v[i].market].type].name, "c3.xlarge");
			spot += a.v[i].count;
		}
	cr_assert_eq(spot, 1, "%d spot instances", spot);
	pol_bidbrain_ops.fini(st);
	pol_actions_release(&a);
	plan_free(p);
}

/* risk_get_at: a bid at an absolute level.  On the spiky market (0.10,
 * 0.15 over [1800, 2400) of every 2 h) a bid at 0.10 was launchable at
 * the 22 low samples of each period, 12 of which saw the spike within
 * the hour; a bid at 0.15 (the price during a spike) was never exceeded,
 * where the relative estimate at delta 0 says one in two for any price. */
Test(policy, risk_at_an_absolute_bid)
{
	struct risk *r = NULL;
	struct risk_estimate est, rel;
	struct px_error e = {0};
	int idx = 0;
	int64_t odp = 1000000;

	spiky("us-east-1a", 20);
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK);
	cr_assert_eq(risk_new(1, &idx, &odp, &r, &e), PX_OK);
	struct market_view mv = {.ms = &ms, .now_s = 5 * 86400};
	cr_assert(risk_update(r, &mv, NULL));
	risk_get_at(r, 0, 100000, &est);
	cr_assert_float_eq(est.beta, 12.0 / 22, 0.01, "beta %f", est.beta);
	cr_assert_float_eq(est.tau_s, 1950, 10.0, "tau %f", est.tau_s);
	risk_get_at(r, 0, 120000, &est);   /* 0.02 above: still the spike */
	cr_assert_float_eq(est.beta, 12.0 / 22, 0.01, "beta %f", est.beta);
	risk_get_at(r, 0, 150000, &est);
	risk_get(r, 0, 0, &rel);
	cr_assert(est.beta < 0.01 && rel.beta > 0.45, "at %f, relative %f",
		  est.beta, rel.beta);
	cr_assert_eq(est.samples, rel.samples, "every sample was at most "
		     "0.15");
	/* below every price seen: no sample, the prior */
	risk_get_at(r, 0, 99999, &est);
	cr_assert_eq(est.samples, 0);
	cr_assert_float_eq(est.beta, RISK_PRIOR_EVICTED / RISK_PRIOR_SAMPLES,
			   1e-12);
	/* 18 days in: the 14-day window has dropped samples; the levels
	 * still hold exactly the window's */
	mv.now_s = 18 * 86400;
	cr_assert(risk_update(r, &mv, NULL));
	risk_get_at(r, 0, 150000, &est);
	risk_get(r, 0, 0, &rel);
	cr_assert_eq(est.samples, rel.samples);
	cr_assert_eq(est.samples, RISK_WINDOW_S / RISK_STEP_S);
	risk_get_at(r, 0, 100000, &est);
	cr_assert_float_eq(est.beta, 12.0 / 22, 0.01, "beta %f", est.beta);
	risk_free(r);
}

/* risk_get_level: the price now matters.  Every 2 h the price is 0.10 for
 * 90 min, 0.11 for 20 min, 0.12 for 10 min.  A bid at 0.11 when the price
 * is 0.11 is evicted within the hour every time (at 6600 s, after 1200,
 * 900, 600 or 300 s: 750 s on average), while of all the samples, which
 * risk_get pools for a bid at the price (delta 0), two thirds are: the
 * 0.10 ones from 1800 s on, and none at 0.12. */
Test(policy, risk_at_the_current_price_level)
{
	struct risk *r = NULL;
	struct risk_estimate lv, pool, at;
	struct px_error e = {0};
	int idx = 0, k;
	int64_t odp = 1000000;       /* deltas 0, 0.0002, ..., 0.01, ... */
	double w = RISK_LEVEL_W, n;

	for (int64_t t = 0; t < 20 * 86400; t += 7200) {
		add("us-east-1a", "c3.xlarge", t, 100000);
		add("us-east-1a", "c3.xlarge", t + 5400, 110000);
		add("us-east-1a", "c3.xlarge", t + 6600, 120000);
	}
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK);
	cr_assert_eq(risk_new(1, &idx, &odp, &r, &e), PX_OK);
	struct market_view mv = {.ms = &ms, .now_s = 5 * 86400};
	cr_assert(risk_update(r, &mv, NULL));
	risk_get(r, 0, 0, &pool);
	risk_get_level(r, 0, 110000, 110000, &lv);
	/* 4 samples at 0.11 in each of the 59 whole periods before now - 1 h */
	n = lv.samples;
	cr_assert_eq(lv.samples, 4 * 59, "%u samples at 0.11", lv.samples);
	cr_assert_float_eq(pool.beta, 2.0 / 3, 0.02, "pool %f", pool.beta);
	cr_assert(pool.samples > lv.samples);
	/* all n evicted, shrunk towards the pooled estimate with weight w */
	cr_assert_float_eq(lv.beta, (n + w * pool.beta) / (n + w), 1e-9,
			   "level %f pool %f", lv.beta, pool.beta);
	cr_assert_float_eq(lv.tau_s, (750 * n + w * pool.beta * pool.tau_s) /
			   (n + w * pool.beta), 1e-6, "tau %f", lv.tau_s);
	cr_assert(lv.beta > pool.beta + 0.1, "level %f pool %f", lv.beta,
		  pool.beta);
	/* a bid at 0.11 when the price is 0.10 (delta 0.01): the 0.10
	 * level's own samples rise above 0.11 within the hour from 3000 s
	 * on, 8 of 18; pooled over every level a third do (none at 0.11 or
	 * 0.12 rise by 0.01) */
	k = risk_delta_index(r, 0, 100000, 110000);
	cr_assert_eq(risk_delta_uusd(r, 0, k), 10000);
	risk_get(r, 0, k, &pool);
	risk_get_level(r, 0, 100000, 110000, &lv);
	cr_assert(lv.beta > pool.beta + 0.03 && lv.beta < 8.0 / 18,
		  "level %f pool %f", lv.beta, pool.beta);
	/* a price never seen: the pooled estimate for its delta (0.005) */
	k = risk_delta_index(r, 0, 105000, 110000);
	cr_assert_eq(risk_delta_uusd(r, 0, k), 5000);
	risk_get(r, 0, k, &pool);
	risk_get_level(r, 0, 105000, 110000, &lv);
	cr_assert_eq(lv.samples, 0);
	cr_assert_float_eq(lv.beta, pool.beta, 1e-12);
	cr_assert_float_eq(lv.tau_s, pool.tau_s, 1e-9);
	/* a bid below the price: risk_get_at's answer */
	risk_get_at(r, 0, 110000, &at);
	risk_get_level(r, 0, 120000, 110000, &lv);
	cr_assert_float_eq(lv.beta, at.beta, 1e-12);
	risk_free(r);
}

/* risk_get_age: a price that holds 6 h per level, rising from 0.10 to
 * 0.12 and falling back in turn.  Half an hour into a level no level of
 * the window changed within the next hour: only the prior.  At 5.5 h the
 * hour holds every level's end: the 27 of the 55 levels of the window at
 * 0.10 rose (to 0.12, 1800 s later), the 28 at 0.12 fell; a bid 0.05
 * above the price is above every rise.  risk_get_age_deltas answers each
 * delta as risk_get_age does; a market whose price moves every 10
 * minutes gets no answer (risk_get_level's is used). */
Test(policy, risk_by_the_age_of_the_price_now)
{
	struct risk *r = NULL;
	struct risk_estimate a, all[RISK_DELTAS];
	struct px_error e = {0};
	int idx[2] = {0, 1};
	int64_t odp[2] = {1000000, 1000000};
	const int64_t day = 86400, lvl = 6 * 3600;

	for (int64_t t = 0, i = 0; t < 20 * day; t += lvl, i++)
		add("us-east-1a", "c3.xlarge", t, i % 2 ? 120000 : 100000);
	for (int64_t t = 0, i = 0; t < 20 * day; t += 600, i++)
		add("us-east-1b", "c3.xlarge", t, i % 2 ? 120000 : 100000);
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK);
	cr_assert_eq(market_set_find(&ms, "us-east-1a", "c3.xlarge"), 0);
	cr_assert_eq(risk_new(2, idx, odp, &r, &e), PX_OK);

	struct market_view mv = {.ms = &ms, .now_s = 15 * day + 1800};
	risk_update(r, &mv, NULL);
	cr_assert(risk_get_age(r, 0, 100000, 100000, &a));
	cr_assert_eq(a.samples, 55, "%u levels", a.samples);
	cr_assert_float_eq(a.beta, 0.5 / (55 + 12), 1e-12, "%f", a.beta);
	cr_assert_float_eq(a.tau_s, 1800, 1e-9);
	cr_assert(!risk_get_age(r, 1, 100000, 100000, &a),
		  "a price that moves every 10 minutes has no age to speak of");

	mv.now_s = 15 * day + 19800;
	risk_update(r, &mv, NULL);
	cr_assert(risk_get_age(r, 0, 100000, 100000, &a));
	cr_assert_eq(a.samples, 55);
	cr_assert_float_eq(a.beta, 27.5 / 67, 1e-12, "%f", a.beta);
	cr_assert_float_eq(a.tau_s, 1800, 1e-9, "%f", a.tau_s);
	cr_assert(risk_get_age(r, 0, 100000, 150000, &a));
	cr_assert_float_eq(a.beta, 0.5 / 67, 1e-12, "%f", a.beta);
	cr_assert(!risk_get_age(r, 0, 100000, 90000, &a), "a bid below");
	cr_assert(risk_get_age_deltas(r, 0, all));
	for (int k = 0; k < RISK_DELTAS; k++) {
		cr_assert(risk_get_age(r, 0, 100000, 100000 +
				       risk_delta_uusd(r, 0, k), &a));
		cr_assert_float_eq(all[k].beta, a.beta, 1e-12, "delta %d", k);
		cr_assert_float_eq(all[k].tau_s, a.tau_s, 1e-9);
		cr_assert_eq(all[k].samples, a.samples);
	}
	risk_free(r);
}

/* risk_get_level_deltas answers, for every delta at once, exactly what
 * risk_get_level does for price + that delta: at the price now (where the
 * way it came matters), at another seen price, at one never seen; and
 * with deltas that round to the same value (a cheap type's on-demand
 * price of 2000 micro-USD makes the three smallest 0, 0 and 1). */
Test(policy, risk_level_deltas_match_one_by_one)
{
	static const int64_t ods[2] = {1000000, 2000};
	struct px_error e = {0};

	for (int t = 0; t < 20 * 86400; t += 7200) {
		add("us-east-1a", "c3.xlarge", t, 100000);
		add("us-east-1a", "c3.xlarge", t + 5400, 110000);
		add("us-east-1a", "c3.xlarge", t + 6600, 120000);
	}
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK);
	for (int o = 0; o < 2; o++) {
		struct risk *r = NULL;
		int idx = 0;
		struct market_view mv = {.ms = &ms, .now_s = 5 * 86400 + 5500};
		static const int64_t prices[] = {110000, 100000, 120000, 105000};

		cr_assert_eq(risk_new(1, &idx, &ods[o], &r, &e), PX_OK);
		cr_assert(risk_update(r, &mv, NULL));
		for (size_t q = 0; q < sizeof prices / sizeof prices[0]; q++) {
			struct risk_estimate all[RISK_DELTAS], one;

			risk_get_level_deltas(r, 0, prices[q], all);
			for (int k = 0; k < RISK_DELTAS; k++) {
				risk_get_level(r, 0, prices[q], prices[q] +
					       risk_delta_uusd(r, 0, k), &one);
				cr_assert(all[k].beta == one.beta &&
					  all[k].tau_s == one.tau_s &&
					  all[k].samples == one.samples,
					  "od %lld price %lld delta %d",
					  (long long)ods[o],
					  (long long)prices[q], k);
			}
		}
		risk_free(r);
	}
}

/* risk_get_level at the price now: the way the price came there.  Every
 * 2 h the price is 0.10, rises to 0.11 at 2400 s and 0.12 at 3600 s, falls
 * back to 0.11 at 4200 s and to 0.10 at 6600 s.  At 0.11 reached by the
 * rise (4 samples a period) a bid at 0.11 is always evicted within the
 * hour, after (3600 - s) s; at 0.11 reached by the fall (8) never. */
Test(policy, risk_at_the_price_now_by_the_way_it_came)
{
	struct risk *r = NULL;
	struct risk_estimate pool, up, down, lv;
	struct px_error e = {0};
	int idx = 0;
	int64_t odp = 1000000, base = 60 * 7200;
	double w = RISK_LEVEL_W, n, nd, lb;

	for (int64_t t = 0; t < 20 * 86400; t += 7200) {
		add("us-east-1a", "c3.xlarge", t, 100000);
		add("us-east-1a", "c3.xlarge", t + 2400, 110000);
		add("us-east-1a", "c3.xlarge", t + 3600, 120000);
		add("us-east-1a", "c3.xlarge", t + 4200, 110000);
		add("us-east-1a", "c3.xlarge", t + 6600, 100000);
	}
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK);
	cr_assert_eq(risk_new(1, &idx, &odp, &r, &e), PX_OK);
	/* now: 0.11 reached by the rise.  Complete samples (s + 3600 <=
	 * now): those of 60 periods, but the last period's falling ones
	 * from 6300 s on */
	struct market_view mv = {.ms = &ms, .now_s = base + 2500};
	risk_update(r, &mv, NULL);
	risk_get(r, 0, 0, &pool);
	risk_get_level(r, 0, 110000, 110000, &up);
	n = 4 * 60;
	nd = 8 * 60 - 1;
	cr_assert_eq(up.samples, n + nd, "%u", up.samples);
	/* the level: n of n + nd evicted, shrunk towards the pool; the
	 * rising samples: all n, shrunk towards the level */
	lb = (n + w * pool.beta) / (n + nd + w);
	cr_assert_float_eq(up.beta, (n + w * lb) / (n + w), 1e-9,
			   "up %f level %f", up.beta, lb);
	/* a bid at another price than now's gets the level's estimate */
	risk_get_level(r, 0, 100000, 100000, &lv);
	cr_assert(lv.samples > 0);
	/* now: 0.11 reached by the fall; one more period seen */
	mv.now_s = base + 7200 + 4300;
	risk_update(r, &mv, NULL);
	risk_get(r, 0, 0, &pool);
	risk_get_level(r, 0, 110000, 110000, &down);
	n = 4 * 61;
	nd = 8 * 61;
	cr_assert_eq(down.samples, n + nd, "%u", down.samples);
	lb = (n + w * pool.beta) / (n + nd + w);
	cr_assert_float_eq(down.beta, w * lb / (nd + w), 1e-9,
			   "down %f level %f", down.beta, lb);
	cr_assert(up.beta > lb + 0.1 && down.beta < lb - 0.1,
		  "up %f level %f down %f", up.beta, lb, down.beta);
	risk_free(r);
}

/* The reference count of risk_get_at for a bid at b, straight from the
 * definition (risk.h) over the price history t/p[0..n): every sample
 * time s in the window before now, the price at s, and whether the price
 * rose above the bid's delta within the hour, and when. */
static void risk_brute(const int64_t *t, const int64_t *p, size_t n,
		       int64_t now, int64_t odp, int64_t b, uint64_t *ret_n,
		       uint64_t *ret_ev, uint64_t *ret_tau)
{
	static const double fr[RISK_DELTAS] = RISK_DELTA_FRACS;
	int64_t first = (t[0] + RISK_STEP_S - 1) / RISK_STEP_S * RISK_STEP_S;
	int64_t last = (now - RISK_HORIZON_S) / RISK_STEP_S * RISK_STEP_S;
	int64_t from = last - (RISK_WINDOW_S / RISK_STEP_S - 1) * RISK_STEP_S;

	*ret_n = *ret_ev = *ret_tau = 0;
	for (int64_t s = from > first ? from : first; s <= last;
	     s += RISK_STEP_S) {
		size_t i0 = 0;
		int k = 0;

		while (i0 + 1 < n && t[i0 + 1] <= s)
			i0++;
		if (t[i0] > s || p[i0] > b)
			continue;
		while (k + 1 < RISK_DELTAS &&
		       (int64_t)(fr[k + 1] * (double)odp + 0.5) <= b - p[i0])
			k++;
		++*ret_n;
		for (size_t j = i0 + 1; j < n && t[j] <= s + RISK_HORIZON_S;
		     j++)
			if (p[j] > p[i0] + (int64_t)(fr[k] * (double)odp +
						     0.5)) {
				++*ret_ev;
				*ret_tau += (uint64_t)(t[j] - s);
				break;
			}
	}
}

/* risk_get_at against the definition on a market that wanders over
 * hundreds of price levels, so that levels come and go as the 14-day
 * window slides and new ones wait beside the trees (risk.c's side
 * levels) between queries: every count matches at every query. */
Test(policy, risk_at_matches_the_definition_as_levels_come_and_go)
{
	enum { N = 6000 }; /* 16 days of 4-minute prices; over 1000 queries */
	static int64_t t[N], p[N];
	struct risk *r = NULL;
	struct risk_estimate est;
	struct px_error e = {0};
	int idx = 0;
	int64_t odp = 200000, x = 400, now;
	uint32_t seed = 12345;
	size_t q = 0;

	for (size_t i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		t[i] = (int64_t)i * 240 + (seed >> 16) % 200;
		/* a random walk over 0.04 + 0.0001 x, x in [0, 1200], with
		 * spikes of up to 0.2 above it one time in 40 */
		x += (int64_t)((seed >> 8) % 41) - 20;
		x = x < 0 ? -x : x > 1200 ? 2400 - x : x;
		p[i] = 40000 + 100 * x +
		       ((seed >> 4) % 40 == 0 ? (int64_t)(seed % 2000) * 100 : 0);
		add("us-east-1a", "c3.xlarge", t[i], p[i]);
	}
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK);
	cr_assert_eq(risk_new(1, &idx, &odp, &r, &e), PX_OK);
	for (now = 86400; now < t[N - 1]; now += 1800 + (now / 7) % 9000) {
		struct market_view mv = {.ms = &ms, .now_s = now};
		size_t n = 0;

		while (n < N && t[n] <= now)
			n++;
		(void)risk_update(r, &mv, NULL);
		for (int j = 0; j < 6; j++, q++) {
			uint64_t bn, bev, btau;
			int64_t b;

			seed = seed * 1103515245u + 12345u;
			b = 40000 + (int64_t)(seed >> 8) % 200000;
			risk_get_at(r, 0, b, &est);
			risk_brute(t, p, n, now, odp, b, &bn, &bev, &btau);
			cr_assert_eq(est.samples, bn, "now %ld bid %ld: %u "
				     "samples, %lu by definition", (long)now,
				     (long)b, est.samples, (unsigned long)bn);
			cr_assert_float_eq(est.beta, (bev + RISK_PRIOR_EVICTED) /
					   (bn + RISK_PRIOR_SAMPLES), 1e-12,
					   "now %ld bid %ld", (long)now,
					   (long)b);
			if (bev)
				cr_assert_float_eq(est.tau_s, (double)btau /
						   (double)bev, 1e-9);
		}
	}
	cr_assert_gt(q, 1000);
	risk_free(r);
}

/* The spot instances BidBrain acquires at its start for the job. */
static int bidbrain_start_spot(void)
{
	struct pol_actions a = {0};
	struct px_error e = {0};
	struct plan *p = mkplan(BILLING_LEGACY_HOURLY);
	const struct pol_env *env = plan_env(p);
	void *st = NULL;
	int spot = 0;

	cr_assert_eq(pol_bidbrain_ops.init(env, &st, &e), PX_OK, "%s", e.msg);
	decide(&pol_bidbrain_ops, env, st, 3600, POL_WHY_START, NULL, 0, &a);
	for (size_t i = 0; i < a.n; i++)
		if (a.v[i].kind == POL_ACQUIRE && a.v[i].market >= 0)
			spot += a.v[i].count;
	pol_bidbrain_ops.fini(st);
	pol_actions_release(&a);
	plan_free(p);
	return spot;
}

/* proteusd's measured scaling (docs/controller.md, "Measured scaling"):
 * a job whose goodput stays flat from 1 to 4 instances gets fewer spot
 * instances than its spec's scaling_efficiency had it rent, once the
 * measurements have two points; one point is not enough. */
Test(policy, bidbrain_rents_fewer_under_a_flat_measured_scaling)
{
	static const char spec[] =
		"{\"name\": \"t\", \"region\": \"us-east-1\", "
		"\"work_hours\": 1000, \"reference_type\": \"c3.xlarge\", "
		"\"instances\": 4, \"reliable\": {\"type\": \"c3.xlarge\", "
		"\"count\": 1}, \"spot\": {\"types\": [\"c3.xlarge\"], "
		"\"max_instances\": 8}, \"scaling_efficiency\": 0.95}";
	struct jobspec_measured m = {0};
	struct jobspec_profile pr;
	struct px_error e = {0};
	int by_spec, by_measured;

	add("us-east-1a", "c3.xlarge", 0, 50000);
	add("us-east-1a", "c3.xlarge", 86400, 50001);
	cr_assert_eq(jobspec_parse(spec, strlen(spec), "job.json", &job, &e),
		     PX_OK, "%s", e.msg);
	by_spec = bidbrain_start_spot();
	cr_assert_gt(by_spec, 2, "the spec's scaling rents %d", by_spec);
	for (int i = 0; i < JOBSPEC_MEASURED_MIN; i++)
		jobspec_measured_add(&m, 2, 100 + i % 2);
	cr_assert_not(jobspec_measured_profile(&m, &pr), "one point");
	for (int i = 0; i < JOBSPEC_MEASURED_MIN; i++)
		jobspec_measured_add(&m, 4, 100 + i % 2);
	/* bad reports are ignored */
	jobspec_measured_add(&m, 0, 100);
	jobspec_measured_add(&m, 3, NAN);
	jobspec_measured_add(&m, JOBSPEC_MEASURED_MAX + 1, 100);
	cr_assert(jobspec_measured_profile(&m, &pr));
	/* the counts measured, planned with as the fitted model: flat */
	cr_assert_eq(pr.n, 2);
	cr_assert_eq(pr.workers[0], 2);
	cr_assert_eq(pr.workers[1], 4);
	cr_assert(pr.fitted);
	cr_assert_float_eq(pr.serial, 1, 1e-6);
	/* 2 and 4 instances do what 1 does */
	cr_assert_float_eq(jobspec_rate(&job, &pr, 4, 4),
			   jobspec_rate(&job, &pr, 2, 2), 1e-6);
	cr_assert_float_eq(jobspec_rate(&job, &pr, 2, 2), 1, 1e-6);
	/* the measurement is an input of the decision: the spec stays */
	struct pol_scaling sc = {.profile = &pr, .spot_max = -1};
	scaling_in = &sc;
	by_measured = bidbrain_start_spot();
	scaling_in = NULL;
	cr_assert_lt(by_measured, by_spec, "measured %d, spec %d",
		     by_measured, by_spec);
	cr_assert_eq(job.profile.n, 0, "the spec's scaling is untouched");
	cr_assert_eq(bidbrain_start_spot(), by_spec);
}

/* n reports of goodput g at count c. */
static void measure(struct jobspec_measured *m, int c, double g, int n)
{
	for (int i = 0; i < n; i++)
		jobspec_measured_add(m, c, g);
}

/* The model fitted to the measured goodput (docs/controller.md,
 * "Exploring the scaling"): goodput(n) = g1 n / (1 + serial (n - 1)),
 * back from points it made, exact through two counts, serial clamped to
 * [0, JOBSPEC_SERIAL_MAX], counts below JOBSPEC_MEASURED_MIN reports left
 * out. */
Test(policy, measured_fit_recovers_the_scaling_model)
{
	static const int at[] = {1, 2, 4, 7};
	struct jobspec_measured m = {0};
	double g1, s;

	cr_assert_not(jobspec_measured_fit(&m, &g1, &s));
	for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
		measure(&m, at[i], 1000.0 * at[i] / (1 + 0.3 * (at[i] - 1)),
			20);
	cr_assert(jobspec_measured_fit(&m, &g1, &s));
	cr_assert_float_eq(g1, 1000, 1e-3);
	cr_assert_float_eq(s, 0.3, 1e-6);
	cr_assert_eq(jobspec_measured_largest(&m), 7);
	/* a count with fewer reports than a point needs changes nothing */
	measure(&m, 9, 1e9, JOBSPEC_MEASURED_MIN - 1);
	cr_assert(jobspec_measured_fit(&m, &g1, &s));
	cr_assert_float_eq(s, 0.3, 1e-6);
	cr_assert_eq(jobspec_measured_largest(&m), 7);

	/* two counts: through both (2 do 1.8 of one: serial 1/9) */
	m = (struct jobspec_measured){0};
	measure(&m, 1, 100, JOBSPEC_MEASURED_MIN);
	cr_assert_not(jobspec_measured_fit(&m, &g1, &s), "one point");
	measure(&m, 2, 180, JOBSPEC_MEASURED_MIN);
	cr_assert(jobspec_measured_fit(&m, &g1, &s));
	cr_assert_float_eq(g1, 100, 1e-4);
	cr_assert_float_eq(s, 1.0 / 9, 1e-6);
	/* more instances do less: serial above 1 (2 do half of one) */
	m = (struct jobspec_measured){0};
	measure(&m, 1, 100, JOBSPEC_MEASURED_MIN);
	measure(&m, 2, 50, JOBSPEC_MEASURED_MIN);
	cr_assert(jobspec_measured_fit(&m, &g1, &s));
	cr_assert_float_eq(s, 3, 1e-6);
	/* more than their share (noise): linear, no better */
	m = (struct jobspec_measured){0};
	measure(&m, 1, 100, JOBSPEC_MEASURED_MIN);
	measure(&m, 2, 250, JOBSPEC_MEASURED_MIN);
	cr_assert(jobspec_measured_fit(&m, &g1, &s));
	cr_assert_eq(s, 0);
	cr_assert_float_eq(g1, sqrt(100 * 125.0), 1e-6);
	/* and at worst JOBSPEC_SERIAL_MAX */
	m = (struct jobspec_measured){0};
	measure(&m, 1, 1e6, JOBSPEC_MEASURED_MIN);
	measure(&m, 8, 1, JOBSPEC_MEASURED_MIN);
	cr_assert(jobspec_measured_fit(&m, &g1, &s));
	cr_assert_eq(s, JOBSPEC_SERIAL_MAX);
}

static double eff_at(double batch, const void *arg)
{
	const double *phi_m0 = arg;

	return goodput_efficiency(phi_m0[0], phi_m0[1], batch);
}

/* Pollux keeps throughput and efficiency apart: a count measured early,
 * when the noise scale was small and a large total batch wasted most of
 * its examples, is valued again at the noise scale of now.  8 instances
 * with 8 times the throughput of one measured 2.1 times its goodput at
 * noise scale 100 (batch 64 each): a serial share far above 0; at 10^4
 * the same throughput is nearly linear goodput. */
Test(policy, measured_goodput_is_valued_again_at_the_noise_scale_of_now)
{
	struct jobspec_measured m = {0}, bare = {0};
	double early[2] = { 100, 64 }, now[2] = { 1e4, 64 }, g1, s;

	for (int i = 0; i < JOBSPEC_MEASURED_MIN; i++) {
		jobspec_measured_add(&m, 1, 1000 * eff_at(64, early));
		jobspec_measured_add_parts(&m, 1, 1000, 64);
		jobspec_measured_add(&m, 8, 8000 * eff_at(512, early));
		jobspec_measured_add_parts(&m, 8, 8000, 512);
		/* a count reported without its factors */
		jobspec_measured_add(&bare, 3, 777);
	}
	/* bad factors are ignored */
	jobspec_measured_add_parts(&m, 8, NAN, 512);
	jobspec_measured_add_parts(&m, 8, 8000, 0);
	jobspec_measured_add_parts(&m, 0, 8000, 512);
	cr_assert_eq(m.parts[8], JOBSPEC_MEASURED_MIN);
	cr_assert(jobspec_measured_fit(&m, &g1, &s));
	cr_assert_gt(s, 0.3, "early: serial %f", s);
	cr_assert_float_eq(m.goodput[8], 8000 * 164.0 / 612, 1e-6);

	jobspec_measured_revalue(&m, eff_at, now);
	cr_assert_float_eq(m.goodput[8], 8000 * 10064.0 / 10512, 1e-6);
	cr_assert_float_eq(m.goodput[1], 1000, 1e-6);
	jobspec_measured_revalue(&bare, eff_at, now);
	cr_assert_float_eq(bare.goodput[3], 777, 1e-9, "no factors: as it "
			   "was");
	cr_assert(jobspec_measured_fit(&m, &g1, &s));
	cr_assert_lt(s, 0.05, "now: serial %f", s);
	/* and back: valued at the early noise scale again */
	jobspec_measured_revalue(&m, eff_at, early);
	cr_assert_float_eq(m.goodput[8], 8000 * 164.0 / 612, 1e-6);
}

/* Pollux's rule: start while nothing is measured, then growth x the
 * largest count measured, at least one more, at most
 * JOBSPEC_MEASURED_MAX. */
Test(policy, explore_limit_grows_from_the_largest_count_measured)
{
	cr_assert_eq(jobspec_explore_limit(0, 1, 2), 1);
	cr_assert_eq(jobspec_explore_limit(0, 3, 2), 3);
	cr_assert_eq(jobspec_explore_limit(1, 1, 2), 2);
	cr_assert_eq(jobspec_explore_limit(2, 1, 2), 4);
	cr_assert_eq(jobspec_explore_limit(3, 1, 2), 6);
	cr_assert_eq(jobspec_explore_limit(3, 1, 1.5), 4);
	cr_assert_eq(jobspec_explore_limit(1, 1, 1.2), 2);
	cr_assert_eq(jobspec_explore_limit(4, 1, 1), 5);
	cr_assert_eq(jobspec_explore_limit(40, 1, 2), JOBSPEC_MEASURED_MAX);
	cr_assert_eq(jobspec_explore_limit(8, 1, 16), JOBSPEC_MEASURED_MAX);
}

/* The exploration as reports come: 1, 2, 4 instances, then the spec's
 * cap; a fleet below the limit (BidBrain wants no more) waits as long as
 * it takes; one that holds the limit JOBSPEC_EXPLORE_PATIENCE reports
 * without a measurement (no goodput) stops exploring. */
Test(policy, explore_steps_up_and_gives_up_without_goodput)
{
	struct jobspec_explore x = {.start = 1, .growth = 2};
	struct jobspec_measured m = {0};

	cr_assert_eq(jobspec_explore_step(&x, &m, 0, 1, 6),
		     JOBSPEC_EXPLORE_LIMIT);
	cr_assert_eq(x.limit, 1);
	measure(&m, 1, 100, JOBSPEC_MEASURED_MIN);
	cr_assert_eq(jobspec_explore_step(&x, &m, 1, 1, 6),
		     JOBSPEC_EXPLORE_LIMIT);
	cr_assert_eq(x.limit, 2);
	for (int i = 0; i < 10 * JOBSPEC_EXPLORE_PATIENCE; i++)
		cr_assert_eq(jobspec_explore_step(&x, &m, 1, 1, 6),
			     JOBSPEC_EXPLORE_SAME, "below the limit: waits");
	measure(&m, 2, 150, JOBSPEC_MEASURED_MIN);
	cr_assert_eq(jobspec_explore_step(&x, &m, 2, 1, 6),
		     JOBSPEC_EXPLORE_LIMIT);
	cr_assert_eq(x.limit, 4);
	cr_assert_not(x.done);
	measure(&m, 4, 200, JOBSPEC_MEASURED_MIN);
	cr_assert_eq(jobspec_explore_step(&x, &m, 4, 1, 6),
		     JOBSPEC_EXPLORE_DONE_MAX, "8 let all 6 spot in");
	cr_assert(x.done);
	cr_assert_eq(x.limit, 0);
	cr_assert_eq(jobspec_explore_step(&x, &m, 7, 1, 6),
		     JOBSPEC_EXPLORE_SAME);

	/* no goodput: the count is never measured */
	x = (struct jobspec_explore){.start = 1, .growth = 2};
	m = (struct jobspec_measured){0};
	cr_assert_eq(jobspec_explore_step(&x, &m, 0, 1, 6),
		     JOBSPEC_EXPLORE_LIMIT);
	for (int i = 1; i < JOBSPEC_EXPLORE_PATIENCE; i++)
		cr_assert_eq(jobspec_explore_step(&x, &m, 1, 1, 6),
			     JOBSPEC_EXPLORE_SAME, "report %d", i);
	cr_assert_not(x.done);
	cr_assert_eq(jobspec_explore_step(&x, &m, 1, 1, 6),
		     JOBSPEC_EXPLORE_DONE_IDLE);
	cr_assert(x.done);
	/* a limit past the spec's cap from the start: nothing to explore */
	x = (struct jobspec_explore){.start = 4, .growth = 2};
	m = (struct jobspec_measured){0};
	cr_assert_eq(jobspec_explore_step(&x, &m, 0, 1, 3),
		     JOBSPEC_EXPLORE_DONE_MAX);
}

static const char scaling_job[] =
	"{\"name\": \"t\", \"region\": \"us-east-1\", "
	"\"work_hours\": 1000, \"reference_type\": \"c3.xlarge\", "
	"\"instances\": 4, \"reliable\": {\"type\": \"c3.xlarge\", "
	"\"count\": 1}, \"spot\": {\"types\": [\"c3.xlarge\"], "
	"\"max_instances\": 8}, \"scaling_efficiency\": 0.95}";

/* While proteusd explores, BidBrain rents at most spot_limit spot
 * instances (none at 0), and as it would without the limit once the
 * limit is past what it wants. */
Test(policy, bidbrain_holds_the_exploration_limit)
{
	struct px_error e = {0};
	int free_spot;

	add("us-east-1a", "c3.xlarge", 0, 50000);
	add("us-east-1a", "c3.xlarge", 86400, 50001);
	cr_assert_eq(jobspec_parse(scaling_job, strlen(scaling_job),
				   "job.json", &job, &e), PX_OK, "%s", e.msg);
	free_spot = bidbrain_start_spot();
	cr_assert_gt(free_spot, 3, "unlimited it rents %d", free_spot);
	struct pol_scaling sc = {.spot_max = 0};
	struct plan *p = mkplan(BILLING_LEGACY_HOURLY);

	scaling_in = &sc;
	for (int lim = 0; lim <= 3; lim++) {
		sc.spot_max = lim;
		cr_assert_eq(pol_spot_max(plan_env(p), &sc), lim);
		cr_assert_eq(bidbrain_start_spot(), lim, "limit %d", lim);
	}
	sc.spot_max = -1;      /* no limit */
	cr_assert_eq(pol_spot_max(plan_env(p), &sc), job.spot.max_instances);
	sc.spot_max = job.spot.max_instances + 5;
	cr_assert_eq(pol_spot_max(plan_env(p), &sc), job.spot.max_instances);
	cr_assert_eq(pol_spot_max(plan_env(p), NULL), job.spot.max_instances);
	scaling_in = NULL;
	plan_free(p);
	cr_assert_eq(bidbrain_start_spot(), free_spot);
}

/* BidBrain values a worker by the goodput the fitted model says it adds:
 * as the measured serial share grows (each added instance adding less),
 * it rents no more spot instances, and a job whose instances add little
 * or nothing gets fewer than one that scales linearly. */
Test(policy, bidbrain_rents_by_the_measured_marginal_goodput)
{
	static const double serial[] = {0, 0.05, 0.2, 0.5, 1, 3};
	struct px_error e = {0};
	int last = 0, first = 0;

	add("us-east-1a", "c3.xlarge", 0, 50000);
	add("us-east-1a", "c3.xlarge", 86400, 50001);
	cr_assert_eq(jobspec_parse(scaling_job, strlen(scaling_job),
				   "job.json", &job, &e), PX_OK, "%s", e.msg);
	for (size_t i = 0; i < sizeof serial / sizeof serial[0]; i++) {
		struct jobspec_measured m = {0};
		struct jobspec_profile pr;
		int spot;

		measure(&m, 1, 1000, JOBSPEC_MEASURED_MIN);
		measure(&m, 2, 2000 / (1 + serial[i]), JOBSPEC_MEASURED_MIN);
		cr_assert(jobspec_measured_profile(&m, &pr));
		cr_assert_float_eq(pr.serial, serial[i], 1e-6);
		job.profile = pr;
		spot = bidbrain_start_spot();
		if (i == 0)
			first = spot;
		else
			cr_assert_leq(spot, last, "serial %g: %d spot, %g: %d",
				      serial[i], spot, serial[i - 1], last);
		last = spot;
	}
	cr_assert_eq(first, job.spot.max_instances, "a linear job gets %d",
		     first);
	cr_assert_lt(last, first);
	cr_assert_eq(last, 0, "instances that do less: %d rented", last);
}
