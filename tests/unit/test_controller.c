/* test_controller.c -- the controller (agent/controller.c) through a fake
 * world that records what it is asked and answers when the test says so:
 * asynchronous launches and rejections (as EC2 answers), the reliable
 * tier kept whole, the checks on a policy's actions, the stop rules, the
 * bills, and the reliability stage. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "../../agent/controller.h"
#include "../../agent/world/sim.h"

static struct market_set ms;
static struct jobspec job;
static struct ondemand_entry od_v[2];
static struct ondemand_table od = {.v = od_v, .n = 2};
static struct sim_plan *plan;

#define JOB_FMT \
	"{\"name\": \"t\", \"region\": \"us-east-1\", \"work_hours\": 10,"   \
	" \"reference_type\": \"c3.xlarge\", \"instances\": 2,"            \
	" \"reliable\": {\"type\": \"c3.xlarge\", \"count\": 1},"           \
	" \"spot\": {\"types\": [\"c3.2xlarge\"], \"max_instances\": 3},"  \
	" \"startup_seconds\": 0 %s}"

/* ---- a fake world ---- */

struct fw {
	struct ctrl *c;
	bool sync;                 /* confirm launches at once, at now */
	int64_t now;
	int acquired, released, timers;
	int64_t budget_t;          /* the last budget timer asked */
	int64_t reask_t;           /* the last re-decision timer asked */
	int reask_timers;
	uint64_t ids[64];          /* acquired, in order */
	struct world_req reqs[64];
};

static enum px_err fw_acquire(void *w, const struct world_req *q,
			      struct px_error *err)
{
	struct fw *f = w;

	(void)err;
	cr_assert_lt(f->acquired, 64);
	f->reqs[f->acquired] = *q;
	f->ids[f->acquired++] = q->id;
	return f->sync ? ctrl_launched(f->c, f->now, q->id) : PX_OK;
}

static enum px_err fw_release(void *w, uint64_t id, struct px_error *err)
{
	(void)id;
	(void)err;
	((struct fw *)w)->released++;
	return PX_OK;
}

static enum px_err fw_timer(void *w, int64_t t, enum ctrl_timer_kind k,
			    uint64_t id, struct px_error *err)
{
	(void)k, (void)err;
	((struct fw *)w)->timers++;
	if (id == CTRL_BUDGET_TIMER_ID)
		((struct fw *)w)->budget_t = t;
	if (id == CTRL_WAKE_TIMER_ID) {
		((struct fw *)w)->reask_t = t;
		((struct fw *)w)->reask_timers++;
	}
	return PX_OK;
}

static const struct world_ops fw_ops = {
	.name = "fake", .acquire = fw_acquire, .release = fw_release,
	.timer = fw_timer,
};

/* ---- a policy that asks for what the test puts here, once ---- */

static struct pol_action want[8];
static size_t n_want;
static bool want_on_tick;     /* ask again at a tick too */
static int n_ticks;           /* decisions woken by a tick */

static enum px_err tp_init(const struct pol_env *env, void **st,
			   struct px_error *err)
{
	(void)env, (void)err;
	*st = NULL;
	return PX_OK;
}

static enum px_err tp_decide(void *st, const struct pol_input *in,
			     struct pol_actions *out, struct px_error *err)
{
	(void)st, (void)err;
	n_ticks += !!(in->why & POL_WHY_TICK);
	if (!(in->why & POL_WHY_START) &&
	    !(want_on_tick && (in->why & POL_WHY_TICK)))
		return PX_OK;
	for (size_t i = 0; i < n_want; i++)
		if (pol_actions_push(out, &want[i]) != PX_OK)
			return PX_ENOMEM;
	return PX_OK;
}

static void tp_fini(void *st)
{
	(void)st;
}

static const struct policy_ops test_pol = {
	.name = "test", .wants = POL_WHY_EVICTION | POL_WHY_TICK,
	.init = tp_init, .decide = tp_decide, .fini = tp_fini,
};

/* ---- the events ---- */

static int n_ev[CTRL_EV_MAX];
static int64_t released_uusd, done_uusd;
static int last_stage;
static int n_budget;          /* rejects and releases "budget" */

static enum px_err sink(const struct ctrl_event *e, void *ctx)
{
	(void)ctx;
	n_ev[e->kind]++;
	if (e->detail && !strcmp(e->detail, "budget"))
		n_budget++;
	if (e->kind == CTRL_EV_RELEASE || e->kind == CTRL_EV_EVICTION)
		released_uusd += e->amount_uusd;
	if (e->kind == CTRL_EV_DONE)
		done_uusd = e->amount_uusd;
	if (e->kind == CTRL_EV_STAGE)
		last_stage = e->count;
	return PX_OK;
}

static enum billing_model billing = BILLING_LEGACY_HOURLY;

static void setup_job(const char *extra)
{
	char js[1024];
	struct px_error e = {0};
	struct sim_setup su = {.ms = &ms, .od = &od, .job = &job,
			       .billing = billing};

	snprintf(js, sizeof js, JOB_FMT, extra);
	cr_assert_eq(jobspec_parse(js, strlen(js), "job.json", &job, &e),
		     PX_OK, "%s", e.msg);
	cr_assert_eq(sim_plan_new(&su, &plan, &e), PX_OK, "%s", e.msg);
}

static void setup(void)
{
	struct px_error e = {0};

	market_set_init(&ms);
	cr_assert_eq(market_set_add(&ms, "us-east-1a", "c3.2xlarge", 0,
				    100000, &e), PX_OK);
	cr_assert_eq(market_set_add(&ms, "us-east-1a", "c3.2xlarge", 36000,
				    100000, &e), PX_OK);
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK, "%s", e.msg);
	snprintf(od_v[0].region, sizeof od_v[0].region, "us-east-1");
	snprintf(od_v[0].type, sizeof od_v[0].type, "c3.xlarge");
	od_v[0].uusd_per_hour = 210000;
	snprintf(od_v[1].region, sizeof od_v[1].region, "us-east-1");
	snprintf(od_v[1].type, sizeof od_v[1].type, "c3.2xlarge");
	od_v[1].uusd_per_hour = 420000;
	memset(n_ev, 0, sizeof n_ev);
	released_uusd = done_uusd = 0;
	last_stage = 0;
	n_budget = 0;
	n_want = 0;
	want_on_tick = false;
	n_ticks = 0;
	plan = NULL;
}

static void teardown(void)
{
	sim_plan_free(plan);
	market_set_release(&ms);
}

TestSuite(controller, .init = setup, .fini = teardown);

/* A test's second case from where the fixture starts: the plan, the
 * market set and the counters of the first thrown away and made anew. */
static void start_again(void)
{
	teardown();
	setup();
}

static int64_t up_after = -1; /* mk's tiers: up_after_s, -1: default */

static struct ctrl *mk(struct fw *f, bool replace, bool tiers)
{
	struct ctrl_setup s = {
		.env = sim_plan_env(plan), .ms = &ms, .policy = &test_pol,
		.world = &fw_ops, .world_ctx = f, .start_s = 0,
		.window_end_s = 36000, .replace_reliable = replace,
		.sink = sink,
	};
	struct ctrl *c = NULL;
	struct px_error e = {0};

	if (tiers)
		s.tiers = (struct ctrl_tiers)CTRL_TIERS_DEFAULT;
	if (tiers && up_after >= 0)
		s.tiers.up_after_s = up_after;
	cr_assert_eq(ctrl_new(&s, &c, &e), PX_OK, "%s", e.msg);
	f->c = c;
	return c;
}

/* one reliable on-demand and n spot at bid */
static void want_fleet(int n_spot, int64_t bid)
{
	const struct pol_env *env = sim_plan_env(plan);

	want[0] = (struct pol_action){.kind = POL_ACQUIRE, .market = -1,
				      .type = env->reliable_type,
				      .reliable = true, .count = 1};
	want[1] = (struct pol_action){.kind = POL_ACQUIRE, .market = 0,
				      .count = n_spot, .bid_uusd = bid};
	n_want = 2;
}

static const struct ctrl_progress none = {0};

Test(controller, stage_thresholds_and_hysteresis)
{
	struct ctrl_tiers t = CTRL_TIERS_DEFAULT;   /* 1, 8, 0.25 */

	cr_assert_eq(ctrl_stage_for(&t, 2, 1, 0), 1);
	cr_assert_eq(ctrl_stage_for(&t, 2, 2, 0), 2);
	cr_assert_eq(ctrl_stage_for(&t, 2, 16, 0), 3);
	cr_assert_eq(ctrl_stage_for(&t, 2, 15, 0), 2);
	/* down only below the bar by the hysteresis: 8 * 0.75 = 6 */
	cr_assert_eq(ctrl_stage_for(&t, 2, 13, 3), 3);
	cr_assert_eq(ctrl_stage_for(&t, 2, 11, 3), 2);
	cr_assert_eq(ctrl_stage_for(&t, 4, 3, 2), 2);   /* 0.75 >= 0.75 */
	cr_assert_eq(ctrl_stage_for(&t, 4, 2, 2), 1);
	/* no reliable node: nothing can back a shard */
	cr_assert_eq(ctrl_stage_for(&t, 0, 3, 1), 3);
	cr_assert_eq(ctrl_stage_for(&t, 0, 0, 2), 1);
}

/* A world that answers later (EC2): nothing is billed before the launch
 * is confirmed, and a rejected request leaves the fleet. */
Test(controller, async_launch_and_rejection)
{
	struct fw f = {0};
	struct ctrl *c;
	int64_t cost;

	setup_job("");
	c = mk(&f, false, false);
	want_fleet(2, 200000);
	cr_assert_eq(ctrl_step(c, 0, POL_WHY_START, &none), PX_OK);
	cr_assert_eq(f.acquired, 3);
	cr_assert_eq(ctrl_fleet(c)->n, 3, "pending requests count");
	cr_assert_eq(ctrl_cost(c, 100), 0, "nothing billed before launch");
	cr_assert_eq(ctrl_launched(c, 100, f.ids[0]), PX_OK);
	cr_assert_eq(ctrl_launched(c, 100, f.ids[1]), PX_OK);
	cr_assert_eq(ctrl_rejected(c, 100, f.ids[2], "no capacity"), PX_OK);
	cr_assert_eq(ctrl_fleet(c)->n, 2);
	cr_assert_eq(n_ev[CTRL_EV_REJECT], 1);
	cr_assert_eq(n_ev[CTRL_EV_LAUNCH], 2);
	cr_assert_eq(ctrl_stats(c)->instances_launched, 2);
	/* legacy hourly: the first hour of each is charged at its start */
	cr_assert_eq(ctrl_cost(c, 200), 210000 + 100000);
	/* a late answer about an id it no longer has is ignored */
	cr_assert_eq(ctrl_launched(c, 300, f.ids[2]), PX_OK);
	cr_assert_eq(ctrl_fleet(c)->n, 2);
	cr_assert_eq(ctrl_finish(c, 1000, false, &cost), PX_OK);
	cr_assert_eq(cost, 310000);
	cr_assert_eq(f.released, 2);
	cr_assert_eq(released_uusd, cost, "the bills add up to the total");
	cr_assert_eq(done_uusd, cost);
	ctrl_free(c);
}

/* The reliable tier holds the parameters: a lost reliable instance is
 * replaced by one of its type (and only when the setup says so). */
Test(controller, lost_reliable_instance_replaced)
{
	for (int replace = 0; replace <= 1; replace++) {
		struct fw f = {.sync = true};
		struct ctrl *c;
		uint64_t rel;

		start_again();
		setup_job("");
		c = mk(&f, replace, false);
		want_fleet(1, 200000);
		cr_assert_eq(ctrl_step(c, 0, POL_WHY_START, &none), PX_OK);
		cr_assert_eq(f.acquired, 2);
		rel = f.ids[0];
		cr_assert(f.reqs[0].reliable);
		f.now = 500;
		cr_assert_eq(ctrl_gone(c, 500, rel, "lost"), PX_OK);
		cr_assert_eq(ctrl_stats(c)->evictions, 1);
		if (replace) {
			cr_assert_eq(f.acquired, 3);
			cr_assert(f.reqs[2].reliable);
			cr_assert_eq(f.reqs[2].market, -1);
			cr_assert_str_eq(f.reqs[2].type_name, "c3.xlarge");
			cr_assert_neq(f.ids[2], rel, "ids are never reused");
			cr_assert_eq(ctrl_stats(c)->replaced, 1);
			cr_assert_eq(ctrl_fleet(c)->n, 2);
		} else {
			cr_assert_eq(f.acquired, 2);
			cr_assert_eq(ctrl_fleet(c)->n, 1);
		}
		/* the eviction woke the policy */
		cr_assert_eq(ctrl_step(c, 500, 0, &none), PX_OK);
		cr_assert_eq(ctrl_stats(c)->decisions, 2);
		ctrl_free(c);
	}
}

/* A bid below the market and a request past the fleet cap are refused
 * without reaching the world. */
Test(controller, actions_checked_before_the_world)
{
	struct fw f = {.sync = true};
	struct ctrl *c;

	setup_job("");
	c = mk(&f, false, false);
	want_fleet(1, 99999);                  /* the price is 100000 */
	cr_assert_eq(ctrl_step(c, 0, POL_WHY_START, &none), PX_OK);
	cr_assert_eq(f.acquired, 1, "only the on-demand one");
	cr_assert_eq(n_ev[CTRL_EV_REJECT], 1);
	ctrl_free(c);

	start_again();
	setup_job("");
	memset(&f, 0, sizeof f);
	f.sync = true;
	c = mk(&f, false, false);
	want_fleet(5, 200000);                 /* max_instances 3 */
	cr_assert_eq(ctrl_step(c, 0, POL_WHY_START, &none), PX_OK);
	cr_assert_eq(f.acquired, 1 + 3);
	cr_assert_eq(n_ev[CTRL_EV_REJECT], 2);
	ctrl_free(c);
}

Test(controller, stop_rules)
{
	struct fw f = {.sync = true};
	struct ctrl *c;
	struct ctrl_progress half = {5, 1, NULL}, all = {10, 1, NULL};

	setup_job(", \"budget_usd\": 0.5, \"deadline_hours\": 5");
	c = mk(&f, false, false);
	cr_assert_eq(ctrl_end(c), 5 * 3600, "the deadline before the window");
	want_fleet(1, 200000);
	cr_assert_eq(ctrl_step(c, 0, POL_WHY_START, &none), PX_OK);
	ctrl_cost(c, 0);                     /* 0.31 USD: the first hours */
	cr_assert_eq(ctrl_stop(c, 10, &half), CTRL_RUN);
	cr_assert_eq(ctrl_stop(c, 10, &all), CTRL_STOP_DONE);
	/* a cost seen past the budget (here: bills brought past an hour's
	 * end that no timer reported) stops the run too */
	ctrl_cost(c, 3600);                  /* second hours: 0.62 USD */
	cr_assert_eq(ctrl_stop(c, 3600, &half), CTRL_STOP_BUDGET);
	ctrl_free(c);

	start_again();
	setup_job(", \"deadline_hours\": 5");
	memset(&f, 0, sizeof f);
	f.sync = true;
	c = mk(&f, false, false);
	cr_assert_eq(ctrl_stop(c, 5 * 3600 - 1, &half), CTRL_RUN);
	cr_assert_eq(ctrl_stop(c, 5 * 3600, &half), CTRL_STOP_DEADLINE);
	cr_assert_str_eq(ctrl_stop_name(CTRL_STOP_DEADLINE), "deadline");
	ctrl_free(c);
}

/* With tiers on, the stage follows the ready reliable and transient
 * instances, warned ones not counted. */
Test(controller, stage_follows_the_fleet)
{
	struct fw f = {.sync = true};
	struct ctrl *c;

	setup_job("");
	up_after = 0;
	c = mk(&f, false, true);
	up_after = -1;
	want_fleet(3, 200000);
	cr_assert_eq(ctrl_step(c, 0, POL_WHY_START, &none), PX_OK);
	cr_assert_eq(f.acquired, 4);
	/* startup 0: ready at launch */
	cr_assert_eq(ctrl_stage(c), 2, "1 reliable, 3 transient ready");
	cr_assert_eq(last_stage, 2);
	cr_assert_eq(ctrl_warned(c, 20, f.ids[1], 140), PX_OK);
	cr_assert_eq(ctrl_gone(c, 140, f.ids[2], "evicted"), PX_OK);
	cr_assert_eq(ctrl_stage(c), 2, "1:1 is still stage 2");
	cr_assert_eq(ctrl_gone(c, 150, f.ids[3], "evicted"), PX_OK);
	cr_assert_eq(ctrl_stage(c), 1, "no transient left");
	cr_assert_eq(last_stage, 1);
	/* 1 (the reliable one ready), 2 (transients), back to 1 */
	cr_assert_eq(n_ev[CTRL_EV_STAGE], 3);
	ctrl_free(c);
}

/* Up only on transients that have lasted up_after_s (here 300 s): a spot
 * instance evicted a minute after it came never holds an ActivePS; down
 * at once. */
Test(controller, stage_moves_up_on_transients_that_lasted)
{
	struct fw f = {.sync = true};
	struct ctrl *c;

	setup_job("");
	up_after = 300;
	c = mk(&f, false, true);
	up_after = -1;
	want_fleet(3, 200000);
	cr_assert_eq(ctrl_step(c, 0, POL_WHY_START, &none), PX_OK);
	cr_assert_eq(ctrl_stage(c), 1, "transients ready for 0 s");
	n_want = 0;
	cr_assert_eq(ctrl_gone(c, 60, f.ids[1], "evicted"), PX_OK);
	cr_assert_eq(ctrl_step(c, 60, 0, &none), PX_OK);
	cr_assert_eq(ctrl_stage(c), 1, "at 60 s");
	cr_assert_eq(ctrl_step(c, 299, POL_WHY_TICK, &none), PX_OK);
	cr_assert_eq(ctrl_stage(c), 1, "at 299 s");
	cr_assert_eq(ctrl_step(c, 300, POL_WHY_TICK, &none), PX_OK);
	cr_assert_eq(ctrl_stage(c), 2, "2 transients ready for 300 s");
	cr_assert_eq(last_stage, 2);
	cr_assert_eq(ctrl_gone(c, 400, f.ids[2], "evicted"), PX_OK);
	cr_assert_eq(ctrl_gone(c, 401, f.ids[3], "evicted"), PX_OK);
	cr_assert_eq(ctrl_stage(c), 1, "down at once");
	ctrl_free(c);
}

/* ---- the budget is a cap (docs/jobspec.md) ---- */

/* Legacy-hourly: an instance whose first hour would pass the budget is
 * not started; at an hour's end, one whose next hour would pass it is
 * released before that hour is charged; with nothing left the budget
 * stops the run, the bills within the budget. */
Test(controller, budget_caps_starts_and_hours)
{
	struct fw f = {.sync = true};
	struct ctrl *c;
	int64_t cost;

	/* on-demand c3.xlarge 0.21, spot c3.2xlarge 0.10 */
	setup_job(", \"budget_usd\": 0.35");
	c = mk(&f, false, false);
	want_fleet(2, 200000);
	cr_assert_eq(ctrl_step(c, 0, POL_WHY_START, &none), PX_OK);
	cr_assert_eq(f.acquired, 2, "0.21 + 0.10 fit, a second 0.10 not");
	cr_assert_eq(n_ev[CTRL_EV_REJECT], 1);
	cr_assert_eq(n_budget, 1);
	cr_assert_eq(ctrl_cost(c, 0), 310000);
	cr_assert_eq(ctrl_stop(c, 0, &none), CTRL_RUN);
	/* an hour on: neither second hour fits (0.52, 0.41) */
	cr_assert_eq(ctrl_timer(c, 3600, CTRL_TIMER_HOUR, f.ids[0]), PX_OK);
	cr_assert_eq(ctrl_timer(c, 3600, CTRL_TIMER_HOUR, f.ids[1]), PX_OK);
	cr_assert_eq(ctrl_step(c, 3600, 0, &none), PX_OK);
	cr_assert_eq(f.released, 2);
	cr_assert_eq(n_budget, 3);
	cr_assert_eq(ctrl_fleet(c)->n, 0);
	cr_assert_eq(ctrl_cost(c, 3600), 310000, "no second hour charged");
	cr_assert_eq(ctrl_stop(c, 3600, &none), CTRL_STOP_BUDGET);
	cr_assert_str_eq(ctrl_stop_name(CTRL_STOP_BUDGET), "budget");
	cr_assert_eq(ctrl_finish(c, 3600, false, &cost), PX_OK);
	cr_assert_eq(cost, 310000);
	ctrl_free(c);
}

/* A budget with nothing left (proteusd resumes a job with what is left
 * of it: 0 when it was spent) starts nothing and stops at once. */
Test(controller, budget_with_nothing_left_starts_nothing)
{
	struct fw f = {.sync = true};
	struct ctrl *c;

	setup_job(", \"budget_usd\": 1");
	job.budget_uusd = 0;
	c = mk(&f, false, false);
	want_fleet(1, 200000);
	cr_assert_eq(ctrl_step(c, 0, POL_WHY_START, &none), PX_OK);
	cr_assert_eq(f.acquired, 0);
	cr_assert_eq(n_budget, 2);
	cr_assert_eq(ctrl_stop(c, 0, &none), CTRL_STOP_BUDGET);
	ctrl_free(c);
}

/* A lost reliable instance is replaced only when the budget pays for
 * the replacement's first hour. */
Test(controller, budget_refuses_a_replacement)
{
	struct fw f = {.sync = true};
	struct ctrl *c;

	setup_job(", \"budget_usd\": 0.35");     /* 0.31 spent at 0 */
	c = mk(&f, true, false);
	want_fleet(1, 200000);
	cr_assert_eq(ctrl_step(c, 0, POL_WHY_START, &none), PX_OK);
	cr_assert_eq(f.acquired, 2);
	f.now = 500;
	cr_assert_eq(ctrl_gone(c, 500, f.ids[0], "lost"), PX_OK);
	cr_assert_eq(f.acquired, 2, "0.31 + 0.21 does not fit");
	cr_assert_eq(n_budget, 1);
	cr_assert_eq(ctrl_fleet(c)->n, 1);
	ctrl_free(c);
}

/* A world that answers later may open an instance at a higher price
 * than when it was asked for: when that bill passes the budget it is
 * released at once, paying what the billing model forces (its first
 * hour), and the run stops once nothing is left. */
Test(controller, budget_late_launch_at_a_higher_price)
{
	struct fw f = {0};
	struct ctrl *c;
	struct px_error e = {0};
	int64_t cost;

	market_set_release(&ms);
	market_set_init(&ms);
	cr_assert_eq(market_set_add(&ms, "us-east-1a", "c3.2xlarge", 0,
				    100000, &e), PX_OK);
	cr_assert_eq(market_set_add(&ms, "us-east-1a", "c3.2xlarge", 50,
				    180000, &e), PX_OK);
	cr_assert_eq(market_set_add(&ms, "us-east-1a", "c3.2xlarge", 36000,
				    180000, &e), PX_OK);
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK, "%s", e.msg);
	setup_job(", \"budget_usd\": 0.15");
	c = mk(&f, false, false);
	want[0] = (struct pol_action){.kind = POL_ACQUIRE, .market = 0,
				      .count = 1, .bid_uusd = 200000};
	n_want = 1;
	cr_assert_eq(ctrl_step(c, 0, POL_WHY_START, &none), PX_OK);
	cr_assert_eq(f.acquired, 1, "0.10 at the request fits 0.15");
	cr_assert_eq(ctrl_launched(c, 100, f.ids[0]), PX_OK);
	cr_assert_eq(n_budget, 1, "0.18 at the launch does not");
	cr_assert_eq(f.released, 1);
	cr_assert_eq(ctrl_fleet(c)->n, 0);
	cr_assert_eq(ctrl_step(c, 100, 0, &none), PX_OK);
	cr_assert_eq(ctrl_stop(c, 100, &none), CTRL_STOP_BUDGET);
	cr_assert_eq(ctrl_finish(c, 100, false, &cost), PX_OK);
	cr_assert_eq(cost, 180000, "the forced hour, nothing more");
	ctrl_free(c);
}

/* Per-second: the controller asks a timer for the last second the fleet
 * can be paid for, and at that second the budget stops the run with the
 * bills at most the budget. */
Test(controller, budget_timer_per_second)
{
	struct fw f = {.sync = true};
	struct ctrl *c;
	int64_t cost;

	billing = BILLING_PER_SECOND;
	/* 0.21 + 0.10 per hour: 0.31/h, so 0.155 lasts 1800 s */
	setup_job(", \"budget_usd\": 0.155");
	billing = BILLING_LEGACY_HOURLY;
	c = mk(&f, false, false);
	want_fleet(1, 200000);
	cr_assert_eq(ctrl_step(c, 0, POL_WHY_START, &none), PX_OK);
	cr_assert_eq(f.acquired, 2);
	cr_assert_eq(f.budget_t, 1800);
	cr_assert_eq(ctrl_stop(c, 1799, &none), CTRL_RUN);
	cr_assert_eq(ctrl_timer(c, 1800, CTRL_TIMER_HOUR,
				CTRL_BUDGET_TIMER_ID), PX_OK);
	cr_assert_eq(ctrl_step(c, 1800, 0, &none), PX_OK);
	cr_assert_eq(ctrl_stop(c, 1800, &none), CTRL_STOP_BUDGET);
	cr_assert_eq(ctrl_finish(c, 1800, false, &cost), PX_OK);
	cr_assert_eq(cost, 155000);
	ctrl_free(c);
}

/* After a restart (ec2): instances an earlier life launched are adopted
 * with their own launch times and ids, billed from then, ids go on past
 * them, and a second adoption of a held id is refused. */
/* The default job under per-second billing; its env. */
static const struct pol_env *per_second_job(void)
{
	billing = BILLING_PER_SECOND;
	setup_job("");
	billing = BILLING_LEGACY_HOURLY;
	return sim_plan_env(plan);
}

/* A request for the reliable tier, as a world hands it back (adopt). */
static struct world_req reliable_req(const struct pol_env *env, uint64_t id)
{
	return (struct world_req){ .id = id, .market = -1,
				   .type = env->reliable_type,
				   .reliable = true };
}

Test(controller, adopt_after_a_restart)
{
	struct fw f = {0};
	struct ctrl *c;
	int64_t cost;
	const struct pol_env *env;
	struct world_req spot = {0}, rel = {0};

	env = per_second_job();
	c = mk(&f, true, false);
	rel = reliable_req(env, 7);
	spot = (struct world_req){ .id = 12, .market = 0,
				   .type = env->markets[0].type,
				   .bid_uusd = 200000 };
	cr_assert_eq(ctrl_adopt(c, 5000, &rel, 1400, true), PX_OK, "%s",
		     ctrl_error(c)->msg);
	cr_assert_eq(ctrl_adopt(c, 5000, &spot, 3200, false), PX_OK);
	cr_assert_eq(ctrl_adopt(c, 5000, &spot, 3200, false), PX_EEXIST);
	spot.id = 13;
	cr_assert_eq(ctrl_adopt(c, 5000, &spot, 6000, false), PX_EINVAL,
		     "launched after now");
	cr_assert_eq(n_ev[CTRL_EV_ADOPT], 2);
	cr_assert_eq(ctrl_fleet(c)->n, 2);
	cr_assert_eq(ctrl_stats(c)->instances_launched, 2);
	/* per second from their launch times: 3600 s on-demand at 0.21,
	 * 1800 s spot at 0.10 */
	cr_assert_eq(ctrl_cost(c, 5000), 210000 + 50000);
	/* the first decision's fleet counts the adopted ones (one
	 * reliable and one spot asked: nothing new), and the next id the
	 * controller gives is past them */
	want_fleet(2, 200000);
	cr_assert_eq(ctrl_step(c, 5000, POL_WHY_START, &none), PX_OK);
	cr_assert_eq(f.acquired, 1, "only the second spot instance is new");
	cr_assert_eq(f.ids[0], 13);
	cr_assert_eq(f.reqs[0].market, 0);
	cr_assert_eq(ctrl_launched(c, 5000, 13), PX_OK);
	cr_assert_eq(ctrl_finish(c, 5000, false, &cost), PX_OK);
	/* and the new one's first 60 s (per-second minimum) at 0.10 */
	cr_assert_eq(cost, 260000 + 1667);
	ctrl_free(c);
}

/* A refused request for the reliable tier is asked again at the next
 * step (EC2 out of capacity, throttled): the tier holds the parameters;
 * a spot refusal is the policy's to answer. */
Test(controller, refused_reliable_request_asked_again)
{
	struct fw f = {0};
	struct ctrl *c;
	int64_t cost;

	setup_job("");
	c = mk(&f, true, false);
	want_fleet(1, 200000);
	cr_assert_eq(ctrl_step(c, 0, POL_WHY_START, &none), PX_OK);
	cr_assert_eq(f.acquired, 2);
	cr_assert(f.reqs[0].reliable);
	cr_assert_eq(ctrl_rejected(c, 10, f.ids[0], "no capacity"), PX_OK);
	cr_assert_eq(ctrl_rejected(c, 10, f.ids[1], "no capacity"), PX_OK);
	cr_assert_eq(f.acquired, 2, "not asked again inside the refusal");
	cr_assert_eq(ctrl_step(c, 20, 0, &none), PX_OK);
	cr_assert_eq(f.acquired, 2, "not asked again at once");
	cr_assert_eq(ctrl_step(c, 70, 0, &none), PX_OK);
	cr_assert_eq(f.acquired, 3, "the reliable one again, not the spot");
	cr_assert(f.reqs[2].reliable && f.reqs[2].market < 0);
	cr_assert_eq(ctrl_step(c, 200, 0, &none), PX_OK);
	cr_assert_eq(f.acquired, 3, "once");
	cr_assert_eq(ctrl_finish(c, 300, false, &cost), PX_OK);
	ctrl_free(c);
}

/* A refused spot request (no capacity, throttled) wakes the policy again
 * REASK_S (60 s) later, not at its next tick (600 s by default): the
 * refusals of one decision's requests count once, a refusal after the
 * policy decided again doubles the wait, up to tick_seconds, and a
 * launch the world grants resets it; a timer a sooner one superseded
 * wakes nothing. */
Test(controller, refused_spot_request_decided_again_soon)
{
	struct fw f = {0};
	struct ctrl *c;
	int64_t cost;

	setup_job(", \"tick_seconds\": 200");
	c = mk(&f, true, false);
	want_fleet(2, 200000);
	want_on_tick = true;
	cr_assert_eq(ctrl_step(c, 0, POL_WHY_START, &none), PX_OK);
	cr_assert_eq(f.acquired, 3);
	cr_assert_eq(ctrl_launched(c, 5, f.ids[0]), PX_OK);
	cr_assert_eq(ctrl_rejected(c, 10, f.ids[1], "no capacity"), PX_OK);
	cr_assert_eq(f.reask_t, 70);
	cr_assert_eq(ctrl_rejected(c, 30, f.ids[2], "throttled"), PX_OK);
	cr_assert_eq(f.reask_timers, 1, "one decision's refusals: one wait");
	cr_assert_eq(f.reask_t, 70);
	cr_assert_eq(ctrl_step(c, 40, 0, &none), PX_OK);
	cr_assert_eq(n_ticks, 0, "not before the wait");
	cr_assert_eq(ctrl_timer(c, 70, CTRL_TIMER_HOUR, CTRL_WAKE_TIMER_ID),
		     PX_OK);
	cr_assert_eq(ctrl_step(c, 70, 0, &none), PX_OK);
	cr_assert_eq(n_ticks, 1, "decided again at 70");
	cr_assert_eq(f.acquired, 6, "and asked again");
	/* refused again after deciding again: 120 s */
	cr_assert_eq(ctrl_rejected(c, 80, f.ids[4], "no capacity"), PX_OK);
	cr_assert_eq(f.reask_t, 200);
	cr_assert_eq(ctrl_timer(c, 70, CTRL_TIMER_HOUR, CTRL_WAKE_TIMER_ID),
		     PX_OK);
	cr_assert_eq(ctrl_step(c, 90, 0, &none), PX_OK);
	cr_assert_eq(n_ticks, 1, "an old timer wakes nothing");
	cr_assert_eq(ctrl_timer(c, 200, CTRL_TIMER_HOUR, CTRL_WAKE_TIMER_ID),
		     PX_OK);
	cr_assert_eq(ctrl_step(c, 200, 0, &none), PX_OK);
	cr_assert_eq(n_ticks, 2);
	/* again: 240 s, past the job's tick of 200: the tick */
	cr_assert_eq(ctrl_rejected(c, 210, f.ids[7], "no capacity"), PX_OK);
	cr_assert_eq(f.reask_t, 410);
	cr_assert_eq(ctrl_timer(c, 410, CTRL_TIMER_HOUR, CTRL_WAKE_TIMER_ID),
		     PX_OK);
	cr_assert_eq(ctrl_step(c, 410, 0, &none), PX_OK);
	cr_assert_eq(n_ticks, 3);
	/* a launch granted: the next refusal waits 60 s again */
	cr_assert_eq(f.acquired, 11);
	cr_assert(!f.reqs[10].reliable && !f.reqs[8].reliable);
	cr_assert_eq(ctrl_launched(c, 420, f.ids[10]), PX_OK);
	cr_assert_eq(ctrl_rejected(c, 430, f.ids[8], "no capacity"), PX_OK);
	cr_assert_eq(f.reask_t, 490);
	/* ctrl_wake (the jobs layer's, when its exploration's limit
	 * moves): the earliest asked wins, and it decides then */
	cr_assert_eq(ctrl_wake(c, 450), PX_OK);
	cr_assert_eq(f.reask_t, 450);
	cr_assert_eq(ctrl_wake(c, 460), PX_OK);
	cr_assert_eq(f.reask_t, 450, "a later wake than one asked: none");
	cr_assert_eq(ctrl_timer(c, 450, CTRL_TIMER_HOUR, CTRL_WAKE_TIMER_ID),
		     PX_OK);
	cr_assert_eq(ctrl_step(c, 450, 0, &none), PX_OK);
	cr_assert_eq(n_ticks, 4);
	cr_assert_eq(ctrl_finish(c, 500, false, &cost), PX_OK);
	ctrl_free(c);
}

/* A gate (the pool) that refuses spot while `full`. */
static bool gate_full;
static int gate_refused;

static const char *tg_admit(void *ctx, int64_t now, int type, int market,
			    int64_t hour_uusd)
{
	(void)ctx, (void)now, (void)type, (void)hour_uusd;
	if (market >= 0 && gate_full) {
		gate_refused++;
		return "pool_spot_vcpus standard";
	}
	return NULL;
}

static void tg_hold(void *ctx, int type, int market, int sign)
{
	(void)ctx, (void)type, (void)market, (void)sign;
}

/* A spot request the pool's gate refuses (another job's release not yet
 * confirmed by the provider) is decided again REASK_S later, as one the
 * world refused, not at the tick: the job gets the capacity once it is
 * back, and a gate that keeps refusing waits longer each time. */
Test(controller, gate_refusal_decided_again_soon)
{
	static const struct ctrl_gate gate = {.admit = tg_admit,
					      .hold = tg_hold};
	struct fw f = {0};
	struct ctrl *c;
	struct px_error e = {0};
	int64_t cost;
	struct ctrl_setup s;

	setup_job(", \"tick_seconds\": 600");
	s = (struct ctrl_setup){
		.env = sim_plan_env(plan), .ms = &ms, .policy = &test_pol,
		.world = &fw_ops, .world_ctx = &f, .start_s = 0,
		.window_end_s = 36000, .sink = sink, .gate = &gate,
	};
	cr_assert_eq(ctrl_new(&s, &c, &e), PX_OK, "%s", e.msg);
	f.c = c;
	f.sync = true;
	want_fleet(2, 200000);
	want_on_tick = true;
	gate_full = true;
	gate_refused = 0;
	cr_assert_eq(ctrl_step(c, 0, POL_WHY_START, &none), PX_OK);
	cr_assert_eq(f.acquired, 1, "the reliable one only");
	cr_assert_eq(gate_refused, 2);
	cr_assert_eq(f.reask_t, 60, "decided again 60 s on, not at 600");
	gate_full = false;
	cr_assert_eq(ctrl_timer(c, 60, CTRL_TIMER_HOUR, CTRL_WAKE_TIMER_ID),
		     PX_OK);
	cr_assert_eq(ctrl_step(c, 60, 0, &none), PX_OK);
	cr_assert_eq(n_ticks, 1);
	{
		int spot = 0;

		for (int i = 1; i < f.acquired; i++)
			spot += !f.reqs[i].reliable && f.reqs[i].market == 0;
		cr_assert_eq(spot, 2, "the spot ones once the pool has room");
	}
	cr_assert_eq(ctrl_finish(c, 100, false, &cost), PX_OK);
	ctrl_free(c);
}

/* A provider that bills to its own end of an instance (EC2: the terminate
 * call's arrival, after the decision): with the bills kept, the provider's
 * end time brings each one there (one event, the run's cost); an unknown
 * id, an end not after the close, or a second report change nothing; an
 * instance the provider ended itself was billed to its end already. */
/* A per-second job's controller keeping its bills, and its requests: a
 * reliable one (id 1) and a spot one (id 2, bid $0.20). */
static struct ctrl *bills_kept(struct fw *f, struct world_req *rel,
			       struct world_req *spot)
{
	const struct pol_env *env = per_second_job();
	struct ctrl *c = mk(f, false, false);

	ctrl_keep_bills(c);
	*rel = reliable_req(env, 1);
	*spot = (struct world_req){ .id = 2, .market = 0,
				    .type = env->markets[0].type,
				    .bid_uusd = 200000 };
	return c;
}

Test(controller, bills_brought_to_the_providers_end)
{
	struct fw f = {0};
	struct ctrl *c;
	struct world_req spot = {0}, rel = {0};
	int64_t cost;

	c = bills_kept(&f, &rel, &spot);
	cr_assert_eq(ctrl_adopt(c, 1000, &rel, 1000, true), PX_OK);
	cr_assert_eq(ctrl_adopt(c, 1000, &spot, 1000, true), PX_OK);
	cr_assert_eq(ctrl_gone(c, 4600, 2, "interrupted"), PX_OK);
	cr_assert_eq(ctrl_finish(c, 4600, true, &cost), PX_OK);
	/* 3600 s on-demand at 0.21, 3600 s spot at 0.10 */
	cr_assert_eq(cost, 210000 + 100000);
	cr_assert_eq(ctrl_bills_open(c), 1, "the released one only");
	cr_assert_eq(ctrl_bill_end(c, 4610, 99, 4700, false), PX_OK);
	cr_assert_eq(ctrl_bill_end(c, 4610, 2, 4700, false), PX_OK);
	cr_assert_eq(n_ev[CTRL_EV_BILL_END], 0, "unknown, provider's own");
	cr_assert_eq(ctrl_bill_end(c, 4610, 1, 4636, false), PX_OK);
	cr_assert_eq(n_ev[CTRL_EV_BILL_END], 1);
	cr_assert_eq(ctrl_bills_open(c), 0);
	/* 36 s more at 0.21/h */
	cr_assert_eq(ctrl_cost(c, 4700), 310000 + 2100);
	cr_assert_eq(ctrl_bill_end(c, 4620, 1, 4900, false), PX_OK);
	cr_assert_eq(n_ev[CTRL_EV_BILL_END], 1, "once");
	cr_assert_eq(ctrl_cost(c, 4900), 310000 + 2100);
	ctrl_free(c);
}

/* The provider ended an instance before our release reached it (a spot
 * interruption racing the run's end, the listing that would have said so
 * not in yet): the bill closed as our release is brought to the
 * provider's end, as its interruption: a spot instance's first hour
 * costs nothing; a later end still charges its seconds, and an on-demand
 * one ended first is charged to that end.  An end before the close
 * (ours) takes its seconds off. */
Test(controller, bills_brought_down_to_the_providers_earlier_end)
{
	struct fw f = {0};
	struct ctrl *c;
	struct world_req spot = {0}, late = {0}, rel = {0};
	int64_t cost;

	c = bills_kept(&f, &rel, &spot);
	late = spot;
	late.id = 3;
	cr_assert_eq(ctrl_adopt(c, 1000, &rel, 1000, true), PX_OK);
	cr_assert_eq(ctrl_adopt(c, 2800, &spot, 2800, true), PX_OK);
	cr_assert_eq(ctrl_adopt(c, 1000, &late, 1000, true), PX_OK);
	cr_assert_eq(ctrl_finish(c, 4600, true, &cost), PX_OK);
	/* 3600 s on-demand at 0.21, 1800 s and 3600 s of spot at 0.10 */
	cr_assert_eq(cost, 210000 + 50000 + 100000);
	cr_assert_eq(ctrl_bills_open(c), 3);
	/* interrupted at 4590, 1790 s after its launch: free */
	cr_assert_eq(ctrl_bill_end(c, 4610, 2, 4590, true), PX_OK);
	cr_assert_eq(n_ev[CTRL_EV_BILL_END], 1);
	cr_assert_eq(ctrl_cost(c, 4700), 210000 + 100000);
	/* interrupted at 4630, past its first hour: charged to there */
	cr_assert_eq(ctrl_bill_end(c, 4640, 3, 4630, true), PX_OK);
	cr_assert_eq(ctrl_cost(c, 4700), 210000 + 100000 + 833);
	cr_assert_eq(n_ev[CTRL_EV_BILL_END], 2);
	/* ended 36 s before our close (no refund on demand) */
	cr_assert_eq(ctrl_bill_end(c, 4640, 1, 4564, false), PX_OK);
	cr_assert_eq(ctrl_cost(c, 4700), 210000 - 2100 + 100000 + 833);
	cr_assert_eq(n_ev[CTRL_EV_BILL_END], 3);
	cr_assert_eq(ctrl_bills_open(c), 0);
	ctrl_free(c);
}

/* Released before its launch was answered (the run ended while EC2 was
 * asked): the bill waits (ctrl_bills_open) for what the world learns.
 * Launched after all: billed from EC2's launch to the terminate (now),
 * as a launch and a release, then brought to EC2's end like any other;
 * never launched: nothing.  An instance refused as far as the controller
 * heard, launched all the same, is billed the same way; one it holds or
 * billed already is not billed twice. */
Test(controller, a_launch_answered_after_its_release_is_billed)
{
	struct fw f = {0};
	struct ctrl *c;
	struct world_req q0, q1, q2;
	int64_t cost;

	per_second_job();
	c = mk(&f, false, false);
	ctrl_keep_bills(c);
	want_fleet(2, 200000);
	cr_assert_eq(ctrl_step(c, 0, POL_WHY_START, &none), PX_OK);
	cr_assert_eq(f.acquired, 3);
	q0 = f.reqs[0];
	q1 = f.reqs[1];
	q2 = f.reqs[2];
	cr_assert_eq(ctrl_rejected(c, 10, q2.id, "lost answer"), PX_OK);
	cr_assert_eq(ctrl_finish(c, 100, false, &cost), PX_OK);
	cr_assert_eq(cost, 0, "nothing launched as far as it knows");
	cr_assert_eq(ctrl_bills_open(c), 2, "both asked: neither answered");
	/* the on-demand one came at 20 and is terminated at 130: its
	 * 110 s at 0.21/h; the spot one never launched */
	cr_assert_eq(ctrl_bill_late(c, 130, &q0, 20), PX_OK);
	cr_assert_eq(ctrl_bill_late(c, 130, &q1, -1), PX_OK);
	cr_assert_eq(n_ev[CTRL_EV_LAUNCH], 1);
	cr_assert_eq(ctrl_cost(c, 200), 6417);
	cr_assert_eq(ctrl_bill_late(c, 140, &q0, 20), PX_OK);
	cr_assert_eq(ctrl_cost(c, 200), 6417, "billed once");
	cr_assert_eq(ctrl_bills_open(c), 1, "q0's, for EC2's end");
	cr_assert_eq(ctrl_bill_end(c, 150, q0.id, 131, false), PX_OK);
	cr_assert_eq(ctrl_cost(c, 200), 6475);
	cr_assert_eq(ctrl_bills_open(c), 0);
	/* its bill settled, the same launch heard again (a listing after
	 * the late answer): still billed once */
	cr_assert_eq(ctrl_bill_late(c, 160, &q0, 20), PX_OK);
	cr_assert_eq(ctrl_cost(c, 200), 6475, "billed again once settled");
	cr_assert_eq(ctrl_bills_open(c), 0);
	/* the refused one, listed later as launched at 10 (60 s minimum
	 * at 0.10/h) */
	cr_assert_eq(ctrl_bill_late(c, 40, &q2, 10), PX_OK);
	cr_assert_eq(ctrl_cost(c, 200), 6475 + 1667);
	cr_assert_eq(n_ev[CTRL_EV_LAUNCH], 2);
	cr_assert_eq(n_ev[CTRL_EV_RELEASE], 4, "2 at the end, 2 late");
	ctrl_free(c);
}

/* Without ctrl_keep_bills (sim, local) nothing is kept; an end at the
 * close changes nothing. */
Test(controller, bills_not_kept_unless_asked)
{
	struct fw f = {0};
	struct ctrl *c;
	const struct pol_env *env;
	struct world_req rel = {0};
	int64_t cost;

	env = per_second_job();
	c = mk(&f, false, false);
	rel = reliable_req(env, 1);
	cr_assert_eq(ctrl_adopt(c, 1000, &rel, 1000, true), PX_OK);
	cr_assert_eq(ctrl_finish(c, 4600, true, &cost), PX_OK);
	cr_assert_eq(ctrl_bills_open(c), 0);
	cr_assert_eq(ctrl_bill_end(c, 4610, 1, 4700, false), PX_OK);
	cr_assert_eq(ctrl_cost(c, 4700), cost);
	ctrl_free(c);
	c = mk(&f, false, false);
	ctrl_keep_bills(c);
	cr_assert_eq(ctrl_adopt(c, 1000, &rel, 1000, true), PX_OK);
	cr_assert_eq(ctrl_finish(c, 4600, true, &cost), PX_OK);
	cr_assert_eq(ctrl_bill_end(c, 4610, 1, 4600, false), PX_OK);
	cr_assert_eq(ctrl_bills_open(c), 0, "taken, nothing to add");
	cr_assert_eq(ctrl_cost(c, 4700), cost);
	cr_assert_eq(n_ev[CTRL_EV_BILL_END], 0);
	ctrl_free(c);
}
