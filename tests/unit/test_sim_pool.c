/* test_sim_pool.c -- per-second capacity interruptions (agent/world/world.c):
 * each instance's hazard is its type's rate, instances of one pool are
 * interrupted together (one event takes each with pool_share), pools are
 * independent, every notice is one of the pool's events that the oracle
 * sees, and a job's rates come from an Advisor snapshot when it gives
 * none. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/world/sim.h"
#include "../../agent/world.h"
#include "../integration/pxrun.h"

static struct market_set ms;
static struct jobspec job;
static struct ondemand_entry od_v[2];
static struct ondemand_table od = {.v = od_v, .n = 2};

static void setup(void)
{
	struct px_error e = {0};

	market_set_init(&ms);
	snprintf(od_v[0].region, sizeof od_v[0].region, "us-east-1");
	snprintf(od_v[0].type, sizeof od_v[0].type, "c4.xlarge");
	od_v[0].uusd_per_hour = 200000;
	snprintf(od_v[1].region, sizeof od_v[1].region, "us-east-1");
	snprintf(od_v[1].type, sizeof od_v[1].type, "g4dn.xlarge");
	od_v[1].uusd_per_hour = 526000;
	/* flat prices over 10 days, two zones */
	for (int z = 0; z < 2; z++) {
		const char *zone = z ? "us-east-1b" : "us-east-1a";

		cr_assert_eq(market_set_add(&ms, zone, "c4.xlarge", 0, 60000 +
					    z, &e), PX_OK);
		cr_assert_eq(market_set_add(&ms, zone, "c4.xlarge", 864000,
					    60010 + z, &e), PX_OK);
		cr_assert_eq(market_set_add(&ms, zone, "g4dn.xlarge", 0,
					    160000, &e), PX_OK);
		cr_assert_eq(market_set_add(&ms, zone, "g4dn.xlarge", 864000,
					    160010, &e), PX_OK);
	}
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK, "%s", e.msg);
}

static void teardown(void)
{
	market_set_release(&ms);
}

TestSuite(sim_pool, .init = setup, .fini = teardown, .timeout = 60);

static void job_from(const char *extra)
{
	char buf[2048];
	struct px_error e = {0};

	snprintf(buf, sizeof buf,
		 "{\"name\": \"t\", \"region\": \"us-east-1\", "
		 "\"reference_type\": \"c4.xlarge\", \"scaling_efficiency\": 1,"
		 " \"startup_seconds\": 0, \"work_hours\": 1e6, "
		 "\"reliable\": {\"type\": \"c4.xlarge\", \"count\": 0}, %s}",
		 extra);
	cr_assert_eq(jobspec_parse(buf, strlen(buf), "job.json", &job, &e),
		     PX_OK, "%s", e.msg);
}

/* Eviction times of a run, in order. */
struct evs {
	int64_t t[20000];
	char zone[20000][16];
	size_t n;
};

static enum px_err sink(const struct ctrl_event *ev, void *ctx)
{
	struct evs *l = ctx;

	if (ev->kind == CTRL_EV_WARNING && l->n < 20000) {
		snprintf(l->zone[l->n], sizeof l->zone[l->n], "%s", ev->zone);
		l->t[l->n++] = ev->t_s;
	}
	return PX_OK;
}

static struct sim_result run(const char *pol, int64_t end, uint64_t seed,
			     const struct advisor *adv, struct evs *l)
{
	const struct policy_ops *ops = NULL;
	struct sim_setup su = {
		.ms = &ms, .od = &od, .job = &job,
		.billing = BILLING_PER_SECOND, .end_s = end, .seed = seed,
		.advisor = adv, .sink = l ? sink : NULL, .sink_ctx = l,
	};
	struct sim_plan *p = NULL;
	struct sim_result r;
	struct px_error e = {0};

	cr_assert_eq(policy_lookup(pol, &ops, &e), PX_OK);
	cr_assert_eq(sim_plan_new(&su, &p, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(sim_run(p, ops, &r, &e), PX_OK, "%s", e.msg);
	sim_plan_free(p);
	return r;
}

/* Notices at one instant in one zone form a group. */
static void groups(const struct evs *l, size_t *ret_n, double *ret_mean)
{
	size_t g = 0;

	for (size_t i = 0; i < l->n; i++)
		g += i == 0 || l->t[i] != l->t[i - 1] ||
		     strcmp(l->zone[i], l->zone[i - 1]);
	*ret_n = g;
	*ret_mean = g ? (double)l->n / (double)g : 0;
}

/* 40 instances kept in one pool for 9 days at 0.2/h each: about 1700
 * interruptions, in events that take each with 0.25: groups of about 10
 * (40 x 0.25, given at least one). */
Test(sim_pool, hazard_and_groups_follow_the_model)
{
	static struct evs l;
	struct sim_result r;
	size_t ng;
	double mean, rate;

	job_from("\"instances\": 40, \"spot\": {\"types\": [\"c4.xlarge\"], "
		 "\"zones\": [\"us-east-1a\"], \"max_instances\": 40}, "
		 "\"interruption_rates\": {\"default\": 0.2}, "
		 "\"interruption_pool_share\": 0.25");
	l.n = 0;
	r = run("standard", 9 * 86400, 3, NULL, &l);
	rate = (double)r.evictions / r.instance_hours;
	cr_assert_float_eq(rate, 0.2, 0.04, "%lld evictions in %.0f "
			   "instance-hours", (long long)r.evictions,
			   r.instance_hours);
	groups(&l, &ng, &mean);
	cr_assert(mean > 8 && mean < 12.5, "%zu groups, mean %.2f", ng, mean);
	sim_result_release(&r);
	/* share 1: the whole pool at once */
	job.pool_share = 1;
	l.n = 0;
	r = run("standard", 9 * 86400, 3, NULL, &l);
	groups(&l, &ng, &mean);
	cr_assert_float_eq(mean, 40, 1e-9, "%zu groups, mean %.2f", ng, mean);
	cr_assert_float_eq((double)r.evictions / r.instance_hours, 0.2,
			   0.07);
	sim_result_release(&r);
	/* a small share: nearly independent */
	job.pool_share = 0.01;
	l.n = 0;
	r = run("standard", 9 * 86400, 3, NULL, &l);
	groups(&l, &ng, &mean);
	cr_assert(mean < 1.3, "%zu groups, mean %.2f", ng, mean);
	cr_assert_float_eq((double)r.evictions / r.instance_hours, 0.2,
			   0.02);
	sim_result_release(&r);
}

/* Two pools (zones) do not share events. */
Test(sim_pool, pools_are_independent)
{
	struct pol_env env;
	struct pol_type ty = {.name = "c4.xlarge", .speed = 1,
			      .interrupt_per_h = 0.5};
	int64_t *a = NULL, *b = NULL;
	size_t na = 0, nb = 0, common = 0;
	struct px_error e = {0};

	memset(&env, 0, sizeof env);
	env.billing = BILLING_PER_SECOND;
	env.types = &ty;
	env.n_types = 1;
	env.seed = 9;
	env.pool_share = 0.1;
	cr_assert_eq(world_pool_events(&env, &ms.v[market_set_find(
		&ms, "us-east-1a", "c4.xlarge")], 0, 0, 864000, &a, &na, &e),
		PX_OK);
	cr_assert_eq(world_pool_events(&env, &ms.v[market_set_find(
		&ms, "us-east-1b", "c4.xlarge")], 0, 0, 864000, &b, &nb, &e),
		PX_OK);
	/* 5 events an hour for 240 h */
	cr_assert(na > 1100 && na < 1300 && nb > 1100 && nb < 1300,
		  "%zu %zu", na, nb);
	for (size_t i = 0, j = 0; i < na && j < nb;) {
		if (a[i] == b[j])
			common++;
		if (a[i] <= b[j])
			i++;
		else
			j++;
	}
	cr_assert_lt(common, 5, "%zu events shared", common);
	for (size_t i = 1; i < na; i++)
		cr_assert_leq(a[i - 1], a[i]);
	free(a);
	free(b);
	/* legacy billing: none */
	env.billing = BILLING_LEGACY_HOURLY;
	cr_assert_eq(world_pool_events(&env, &ms.v[0], 0, 0, 864000, &a, &na,
				       &e), PX_OK);
	cr_assert_eq(na, 0);
	free(a);
}

/* Every capacity notice world_notice_at gives is one of the events
 * world_pool_events lists (what the oracle counts on), and instances
 * launched at one time in one pool share their notices. */
Test(sim_pool, notices_are_pool_events)
{
	struct pol_env env;
	struct pol_type ty = {.name = "c4.xlarge", .speed = 1,
			      .interrupt_per_h = 0.2};
	const struct market *m = &ms.v[market_set_find(&ms, "us-east-1a",
						       "c4.xlarge")];
	int64_t *ev = NULL;
	size_t nev = 0, seen = 0;
	struct px_error e = {0};

	memset(&env, 0, sizeof env);
	env.billing = BILLING_PER_SECOND;
	env.types = &ty;
	env.n_types = 1;
	env.seed = 4;
	env.pool_share = 0.3;
	cr_assert_eq(world_pool_events(&env, m, 0, 0, 864000, &ev, &nev, &e),
		     PX_OK);
	for (uint64_t id = 1; id <= 3000; id++) {
		int64_t now = (int64_t)(id * 271 % 700000);
		int64_t t = world_notice_at(&env, m, 0, id, now, 1000000);
		bool found = false;

		if (t == MARKET_NONE)
			continue;
		cr_assert_gt(t, now);
		for (size_t i = 0; i < nev && !found; i++)
			found = ev[i] == t;
		cr_assert(found, "id %llu: notice at %lld is no pool event",
			  (unsigned long long)id, (long long)t);
		seen++;
	}
	cr_assert_gt(seen, 2500);
	/* the same id at the same instant: the same draw */
	cr_assert_eq(world_notice_at(&env, m, 0, 77, 1000, 1000000),
		     world_notice_at(&env, m, 0, 77, 1000, 1000000));
	free(ev);
}

/* A job without rates takes them from the snapshot: g4dn.xlarge (bucket
 * 1 in 2021-02) is interrupted more than c4.xlarge (bucket 0); a type the
 * snapshot lacks is an error naming the file and the type. */
Test(sim_pool, rates_from_the_snapshot)
{
	char *p = px_src_path("etc/spot-advisor/linux_2021-02.json");
	struct advisor a;
	struct sim_setup su = {
		.ms = &ms, .od = &od, .job = &job,
		.billing = BILLING_PER_SECOND, .advisor = &a,
	};
	struct sim_plan *plan = NULL;
	struct px_error e = {0};
	const struct pol_env *env;

	cr_assert_eq(advisor_load(p, "us-east-1", &a, &e), PX_OK, "%s", e.msg);
	job_from("\"instances\": 4, \"spot\": {\"types\": [\"c4.xlarge\", "
		 "\"g4dn.xlarge\"], \"max_instances\": 4}, "
		 "\"interruption_rates\": {\"g4dn.xlarge\": 0.7}");
	cr_assert_eq(sim_plan_new(&su, &plan, &e), PX_OK, "%s", e.msg);
	env = sim_plan_env(plan);
	for (size_t i = 0; i < env->n_types; i++) {
		if (!strcmp(env->types[i].name, "c4.xlarge"))
			cr_assert_float_eq(env->types[i].interrupt_per_h,
					   advisor_hazard(&a, 0), 1e-12);
		else
			cr_assert_float_eq(env->types[i].interrupt_per_h, 0.7,
					   1e-12, "the job's own rate wins");
	}
	cr_assert_float_eq(env->pool_share, JOBSPEC_POOL_SHARE, 1e-12);
	sim_plan_free(plan);
	/* a type the snapshot lacks */
	for (size_t i = 0; i < a.n; i++)
		if (!strcmp(a.v[i].type, "c4.xlarge"))
			snprintf(a.v[i].type, sizeof a.v[i].type, "c4.xlargf");
	cr_assert_neq(sim_plan_new(&su, &plan, &e), PX_OK);
	cr_assert(strstr(e.msg, "linux_2021-02.json") &&
		  strstr(e.msg, "has no 'c4.xlarge' in region 'us-east-1'"),
		  "%s", e.msg);
	advisor_release(&a);
	free(p);
}
