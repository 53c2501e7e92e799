/* test_world_local.c -- the local world, through its ops table (world.h):
 * instances are real process groups, the market a trace replayed on an
 * accelerated clock.  A stand-in node (sleep) is enough here: the checks
 * are on processes, evictions and money.  With a policy that does not
 * look at progress (standard), the local world must charge exactly what
 * `simulate` charges for the same trace, to the micro-dollar. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../../agent/controller.h"
#include "../../agent/world/sim.h"
#include "../../agent/world/local.h"

#define OPS (&lworld_ops)

#define H 3600
#define T0 1000000000   /* market time of the trace's start */

static struct market_set ms;
static struct jobspec job;
static struct ondemand_entry od_v[2];
static struct ondemand_table od = {.v = od_v, .n = 2};
static struct sim_plan *plan;

/* c3.2xlarge spot at 0.10; 0.50 (above the on-demand bid of 0.42) from
 * T0+2h to T0+3h; 0.10 again after. */
static void setup(void)
{
	struct px_error e = {0};
	const char *js =
		"{\"name\": \"lw\", \"region\": \"us-east-1\","
		" \"work_hours\": 1000000, \"reference_type\": \"c3.2xlarge\","
		" \"instances\": 2, \"deadline_hours\": 5,"
		" \"reliable\": {\"type\": \"c3.xlarge\", \"count\": 1},"
		" \"spot\": {\"types\": [\"c3.2xlarge\"], \"max_instances\": 4},"
		" \"startup_seconds\": 120, \"scaling_efficiency\": 1}";
	struct sim_setup su = {.ms = &ms, .od = &od, .job = &job,
			       .billing = BILLING_LEGACY_HOURLY,
			       .start_s = T0, .end_s = T0 + 6 * H};

	market_set_init(&ms);
	cr_assert_eq(market_set_add(&ms, "us-east-1a", "c3.2xlarge", T0,
				    100000, &e), PX_OK);
	cr_assert_eq(market_set_add(&ms, "us-east-1a", "c3.2xlarge",
				    T0 + 2 * H, 500000, &e), PX_OK);
	cr_assert_eq(market_set_add(&ms, "us-east-1a", "c3.2xlarge",
				    T0 + 3 * H, 100000, &e), PX_OK);
	cr_assert_eq(market_set_add(&ms, "us-east-1a", "c3.2xlarge",
				    T0 + 6 * H, 100000, &e), PX_OK);
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK, "%s", e.msg);
	snprintf(od_v[0].region, sizeof od_v[0].region, "us-east-1");
	snprintf(od_v[0].type, sizeof od_v[0].type, "c3.xlarge");
	od_v[0].uusd_per_hour = 210000;
	snprintf(od_v[1].region, sizeof od_v[1].region, "us-east-1");
	snprintf(od_v[1].type, sizeof od_v[1].type, "c3.2xlarge");
	od_v[1].uusd_per_hour = 420000;
	cr_assert_eq(jobspec_parse(js, strlen(js), "lw.json", &job, &e),
		     PX_OK, "%s", e.msg);
	cr_assert_eq(sim_plan_new(&su, &plan, &e), PX_OK, "%s", e.msg);
}

static void teardown(void)
{
	sim_plan_free(plan);
	market_set_release(&ms);
}

TestSuite(world_local, .init = setup, .fini = teardown, .timeout = 60);

/* ---- the owner's hooks ---- */

struct own {
	int spawned, notices;
	pid_t pgids[64];
	int64_t notice_ms;
	struct world_place place;   /* the last command's */
};

static char *dup_s(const char *s)
{
	char *d = strdup(s);

	cr_assert_not_null(d);
	return d;
}

static enum px_err cmd(void *ctx, const struct world_req *q,
		       const struct world_place *pl, struct world_node *ret,
		       struct px_error *err)
{
	char **v = calloc(3, sizeof *v), **e = calloc(2, sizeof *e);
	char node[64];
	struct own *o = ctx;

	(void)err;
	cr_assert(v && e);
	if (o)
		o->place = *pl;
	v[0] = dup_s("/bin/sleep");
	v[1] = dup_s("1000");
	snprintf(node, sizeof node, "PX_TEST_NODE=%llu",
		 (unsigned long long)q->id);
	e[0] = dup_s(node);
	ret->argv = v;
	ret->env = e;
	return PX_OK;
}

/* A node that runs script with /bin/sh, in the owner's environment. */
static void sh_node(struct world_node *ret, const char *script)
{
	char **v = calloc(4, sizeof *v);

	cr_assert(v);
	v[0] = dup_s("/bin/sh");
	v[1] = dup_s("-c");
	v[2] = dup_s(script);
	ret->argv = v;
	ret->env = NULL;
}

static void notice(void *ctx, uint64_t id, int64_t gone_ms,
		   enum world_leave why)
{
	struct own *o = ctx;

	(void)id;
	cr_assert_eq(why, WORLD_LEAVE_EVICTION, "standard releases nothing "
		     "before the end");
	o->notices++;
	o->notice_ms = gone_ms;
}

static bool alive(pid_t pgid)
{
	return kill(-pgid, 0) == 0;
}

static int64_t events_seen[CTRL_EV_MAX];
static int64_t events_last_t[CTRL_EV_MAX];   /* the last one's instant */

static enum px_err count(const struct ctrl_event *e, void *ctx)
{
	(void)ctx;
	events_seen[e->kind]++;
	events_last_t[e->kind] = e->t_s;
	return PX_OK;
}

static void sleep_ms(int64_t d)
{
	struct timespec ts = {d / 1000, (d % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

Test(world_local, processes_evictions_and_the_same_bill_as_sim)
{
	const struct policy_ops *std = &pol_standard_ops;
	const struct pol_env *env = sim_plan_env(plan);
	struct own o = {0};
	struct world_setup ls = {
		.env = env, .ms = &ms, .t0_s = T0, .end_s = T0 + 6 * H,
		.speedup = 36000, .tick_s = job.tick_seconds,
		.wants = std->wants,
		.hooks = {.command = cmd, .notice = notice, .ctx = &o},
	};
	void *w = NULL;
	struct ctrl *c = NULL;
	struct px_error e = {0};
	struct ctrl_progress pg = {0};
	struct sim_result sr;
	int64_t t = 0, cost = -1;
	int stop = CTRL_RUN;
	pid_t spot_pgid = -1;
	size_t polls = 0;

	memset(events_seen, 0, sizeof events_seen);
	cr_assert_eq(OPS->create(&ls, &w, &e), PX_OK, "%s", e.msg);
	struct ctrl_setup cs = {
		.env = env, .ms = &ms, .policy = std, .world = OPS,
		.world_ctx = w, .start_s = T0, .window_end_s = T0 + 6 * H,
		.sink = count,
	};
	cr_assert_eq(ctrl_new(&cs, &c, &e), PX_OK, "%s", e.msg);
	OPS->attach(w, c);
	cr_assert_eq(OPS->start(w, &pg, &e), PX_OK, "%s", e.msg);

	/* every instance the controller has is a live process group */
	const struct pol_fleet *f = ctrl_fleet(c);
	cr_assert_gt(f->n, 1);
	cr_assert_eq(OPS->nodes(w), f->n);
	cr_assert_eq(OPS->host_load(w), f->n);
	for (size_t i = 0; i < f->n; i++) {
		pid_t g = lworld_pgid(w, f->v[i].id);

		cr_assert(alive(g), "instance %zu has no process", i);
		o.pgids[o.spawned++] = g;
		if (f->v[i].market >= 0)
			spot_pgid = g;
	}
	cr_assert_gt(spot_pgid, 0, "standard rents spot at 0.10");

	while (stop == CTRL_RUN && polls++ < 10000) {
		int64_t due = OPS->next_ms(w);

		sleep_ms(due < 0 || due > 20 ? 20 : due);
		cr_assert_eq(OPS->run_due(w, &pg, &t, &stop, &e), PX_OK,
			     "%s", e.msg);
	}
	cr_assert_eq(stop, CTRL_STOP_DEADLINE);
	cr_assert_eq(t, T0 + 5 * H, "stopped at the job's deadline");
	/* the spike above the bid evicted the spot node: notice first, then
	 * its process group killed */
	cr_assert_geq(o.notices, 1);
	cr_assert_leq(o.notice_ms, 120 * 1000 / 36000 + 1);
	cr_assert_not(alive(spot_pgid), "the evicted node still runs");
	cr_assert_geq(ctrl_stats(c)->evictions, 1);

	cr_assert_eq(ctrl_finish(c, t, false, &cost), PX_OK);
	cr_assert_eq(OPS->nodes(w), 0, "every node released");
	for (int i = 0; i < o.spawned; i++)
		cr_assert_not(alive(o.pgids[i]), "process group %d left",
			      o.pgids[i]);

	/* the same trace, policy and window in sim: the same bill */
	cr_assert_eq(sim_run(plan, std, &sr, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(sr.cost_uusd, cost, "sim %lld, local %lld",
		     (long long)sr.cost_uusd, (long long)cost);
	cr_assert_eq(sr.evictions, ctrl_stats(c)->evictions);
	cr_assert_eq(sr.instances_launched,
		     ctrl_stats(c)->instances_launched);
	sim_result_release(&sr);
	ctrl_free(c);
	OPS->free_world(w);
}

/* A local world at 60x with these hooks and the ondemand policy over the
 * whole window, started (events counted from zero). */
static void ondemand_up(struct world_hooks hooks, int64_t release_ms,
			bool replace, void **w, struct ctrl **c)
{
	const struct pol_env *env = sim_plan_env(plan);
	struct world_setup ls = {
		.env = env, .ms = &ms, .t0_s = T0, .end_s = T0 + 6 * H,
		.speedup = 60, .tick_s = job.tick_seconds,
		.wants = pol_ondemand_ops.wants, .release_ms = release_ms,
		.job_id = 7, .job_dir = "/run/px-test/7",
		.hooks = hooks,
	};
	struct px_error e = {0};
	struct ctrl_progress pg = {0};

	memset(events_seen, 0, sizeof events_seen);
	cr_assert_eq(OPS->create(&ls, w, &e), PX_OK, "%s", e.msg);
	struct ctrl_setup cs = {
		.env = env, .ms = &ms, .policy = &pol_ondemand_ops,
		.world = OPS, .world_ctx = *w, .start_s = T0,
		.window_end_s = T0 + 6 * H, .replace_reliable = replace,
		.sink = count,
	};
	cr_assert_eq(ctrl_new(&cs, c, &e), PX_OK, "%s", e.msg);
	OPS->attach(*w, *c);
	cr_assert_eq(OPS->start(*w, &pg, &e), PX_OK, "%s", e.msg);
}

/* A node that dies on its own is reported gone ("lost"); freeing the
 * world leaves no process behind.  Each node was started at its place in
 * the job's directory, and its cloud id names its process group. */
Test(world_local, a_node_that_dies_is_lost_and_nothing_is_left)
{
	struct own o = {0};
	void *w = NULL;
	struct ctrl *c = NULL;
	struct px_error e = {0};
	struct ctrl_progress pg = {0};
	pid_t g[8];
	uint64_t ids[2];
	size_t n;
	int64_t t;
	int stop;
	char cid[64], want[64];

	ondemand_up((struct world_hooks){.command = cmd, .ctx = &o}, 0, true,
		    &w, &c);
	n = ctrl_fleet(c)->n;
	cr_assert_eq(n, 2, "ondemand: the job's 2 instances");
	cr_assert_str_eq(o.place.coord, "ipc:///run/px-test/7/n0");
	snprintf(want, sizeof want, "ipc:///run/px-test/7/i%llu",
		 (unsigned long long)ctrl_fleet(c)->v[1].id);
	cr_assert_str_eq(o.place.listen, want);
	for (size_t i = 0; i < n; i++) {
		uint64_t id = ctrl_fleet(c)->v[i].id;

		ids[i] = id;
		g[i] = lworld_pgid(w, id);
		OPS->cloud_id(w, id, cid, sizeof cid);
		snprintf(want, sizeof want, "local-7-%llu-pg%d",
			 (unsigned long long)id, (int)g[i]);
		cr_assert_str_eq(cid, want);
		/* it started (a node that never did fails instead: below) */
		cr_assert_eq(OPS->ready(w, id, &e), PX_OK, "%s", e.msg);
	}
	OPS->cloud_id(w, 999, cid, sizeof cid);
	cr_assert_str_eq(cid, "", "an instance it does not hold");
	/* a while after the last event handled: the loss is heard at the
	 * market's now, later than the world's last step */
	sleep_ms(1500);
	kill(-g[0], SIGKILL);
	for (int i = 0; i < 200 && ctrl_stats(c)->evictions == 0; i++) {
		sleep_ms(10);
		cr_assert_eq(OPS->run_due(w, &pg, &t, &stop, &e), PX_OK,
			     "%s", e.msg);
	}
	cr_assert_eq(ctrl_stats(c)->evictions, 1, "the dead node is gone");
	cr_assert_eq(ctrl_stats(c)->replaced, 1, "and replaced (reliable)");
	cr_assert_eq(OPS->nodes(w), 2);
	/* the replacement starts (and is billed) from the loss, not before */
	for (size_t i = 0; i < ctrl_fleet(c)->n; i++) {
		const struct pol_instance *v = &ctrl_fleet(c)->v[i];

		if (v->id == ids[0] || v->id == ids[1])
			continue;
		cr_assert_geq(v->launch_s, events_last_t[CTRL_EV_EVICTION],
			      "the replacement launched at %lld, before the "
			      "loss at %lld", (long long)v->launch_s,
			      (long long)events_last_t[CTRL_EV_EVICTION]);
	}
	cr_assert_gt(events_last_t[CTRL_EV_EVICTION], T0 + 60,
		     "the loss came at the market's now");
	ctrl_free(c);
	OPS->free_world(w);
	for (size_t i = 0; i < n; i++)
		cr_assert_not(alive(g[i]), "process group %d left", g[i]);
}

/* A node that ends before it started failed: not an eviction (its own
 * end, charged as the user's), the owner told how it ended, a reliable
 * one replaced. */
struct failer {
	int n;
	uint64_t id;
	char how[64];
};

static void start_failed_hook(void *ctx, uint64_t id, const char *how)
{
	struct failer *f = ctx;

	f->n++;
	f->id = id;
	snprintf(f->how, sizeof f->how, "%s", how);
}

static enum px_err cmd_fail(void *ctx, const struct world_req *q,
			    const struct world_place *pl,
			    struct world_node *ret, struct px_error *err)
{
	(void)ctx;
	(void)q;
	(void)pl;
	(void)err;
	sh_node(ret, "exit 3");
	return PX_OK;
}

Test(world_local, a_node_that_ends_before_it_started_failed)
{
	struct failer f = {0};
	void *w = NULL;
	struct ctrl *c = NULL;
	struct px_error e = {0};
	struct ctrl_progress pg = {0};
	int64_t t;
	int stop;

	ondemand_up((struct world_hooks){.command = cmd_fail, .ctx = &f,
					 .start_failed = start_failed_hook},
		    0, true, &w, &c);
	for (int i = 0; i < 300 && f.n < 2; i++) {
		sleep_ms(10);
		cr_assert_eq(OPS->run_due(w, &pg, &t, &stop, &e), PX_OK,
			     "%s", e.msg);
	}
	cr_assert_geq(f.n, 2, "both nodes failed at start");
	cr_assert_str_eq(f.how, "exited with status 3");
	cr_assert_eq(ctrl_stats(c)->evictions, 0, "a failure is no eviction");
	cr_assert_geq(ctrl_stats(c)->replaced, 2, "reliable ones replaced");
	ctrl_free(c);
	OPS->free_world(w);
}

/* What the reap reports comes after the last event due, at the clock's
 * instant, and so does what the controller starts for it (a reliable
 * node's replacement): the run's instant (run_due's *ret_t, where the
 * owner ends the run) is not behind either.  At speedup 60 the nodes'
 * readiness (startup 120 s) is due after 2 s; at 2.1 s it is handled at
 * T0 + 120 s, then the reap finds the nodes ended at T0 + 126 s. */
Test(world_local, the_runs_instant_is_not_behind_what_the_reap_reported)
{
	struct failer f = {0};
	void *w = NULL;
	struct ctrl *c = NULL;
	struct px_error e = {0};
	struct ctrl_progress pg = {0};
	int64_t t, latest = 0;
	int stop;

	ondemand_up((struct world_hooks){.command = cmd_fail, .ctx = &f,
					 .start_failed = start_failed_hook},
		    0, true, &w, &c);
	memset(events_last_t, 0, sizeof events_last_t);
	sleep_ms(2100);
	cr_assert_eq(OPS->run_due(w, &pg, &t, &stop, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(events_last_t[CTRL_EV_READY], T0 + 120);
	for (int k = 0; k < CTRL_EV_MAX; k++)
		if (events_last_t[k] > latest)
			latest = events_last_t[k];
	cr_assert_gt(events_last_t[CTRL_EV_LAUNCH], T0 + 120,
		     "the replacement launched at the reap's instant");
	cr_assert_geq(t, latest, "run instant %lld behind an event at %lld",
		      (long long)t, (long long)latest);
	cr_assert_eq(ctrl_latest(c), latest);
	ctrl_free(c);
	OPS->free_world(w);
}

/* A release is a leave: the world tells the node (SIGTERM with the time
 * it has) and the owner (WORLD_LEAVE_RELEASE), the controller hears no
 * more of it, a node that ends by itself is forgotten at once, and one
 * that does not is killed when its time is up.  The first node started
 * leaves when told; the second ignores SIGTERM. */
struct leaver {
	void *w;
	int n, started;
	uint64_t stays;          /* the instance whose node ignores it */
	uint64_t id[4];
	pid_t g[4];
	int64_t ms[4];
	enum world_leave why[4];
};

static enum px_err cmd_leaver(void *ctx, const struct world_req *q,
			      const struct world_place *pl,
			      struct world_node *ret, struct px_error *err)
{
	struct leaver *l = ctx;

	(void)pl;
	(void)err;
	/* an ignored signal stays ignored across exec */
	sh_node(ret, l->started++ ? "trap '' TERM; exec /bin/sleep 1000"
				  : "exec /bin/sleep 1000");
	if (l->started == 2)
		l->stays = q->id;
	return PX_OK;
}

static void leave_hook(void *ctx, uint64_t id, int64_t gone_ms,
		       enum world_leave why)
{
	struct leaver *l = ctx;
	pid_t g = lworld_pgid(l->w, id);

	cr_assert_lt(l->n, 4);
	cr_assert(g > 0 && alive(g), "told to leave after it was killed");
	l->id[l->n] = id;
	l->g[l->n] = g;
	l->ms[l->n] = gone_ms;
	l->why[l->n++] = why;
}

/* Whether process pid ignores SIGTERM now (its SigIgn mask). */
static bool ignores_term(pid_t pid)
{
	char path[64], line[256];
	unsigned long long mask = 0;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "SigIgn: %llx", &mask) == 1)
			break;
	fclose(f);
	return mask & (1ull << (SIGTERM - 1));
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

Test(world_local, a_released_node_leaves_then_is_killed)
{
	struct leaver l = {0};
	void *w = NULL;
	struct ctrl *c = NULL;
	struct px_error e = {0};
	struct ctrl_progress pg = {0};
	int64_t t, cost, t0, first = -1, last = -1;
	int stop;
	pid_t stays = -1, goes = -1;

	ondemand_up((struct world_hooks){.command = cmd_leaver,
					 .notice = leave_hook, .ctx = &l},
		    500, false, &w, &c);
	l.w = w;
	cr_assert_eq(OPS->nodes(w), 2);
	/* the node that stays must have set its trap before it is told */
	t0 = now_ms();
	while (!ignores_term(lworld_pgid(w, l.stays)) && now_ms() - t0 < 10000)
		sleep_ms(2);
	cr_assert(ignores_term(lworld_pgid(w, l.stays)));
	t0 = now_ms();
	cr_assert_eq(ctrl_finish(c, T0, false, &cost), PX_OK);
	cr_assert_eq(l.n, 2, "each released node is told");
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(l.why[i], WORLD_LEAVE_RELEASE);
		cr_assert_eq(l.ms[i], 500);
		if (l.id[i] == l.stays)
			stays = l.g[i];
		else
			goes = l.g[i];
	}
	cr_assert(stays > 0 && goes > 0);
	cr_assert_eq(OPS->nodes(w), 0, "the controller holds none");
	cr_assert_eq(lworld_leaving(w), 2);
	cr_assert_eq(OPS->host_load(w), 2, "leaving nodes use the host");
	cr_assert(alive(stays), "killed before its time was up");
	cr_assert_leq(OPS->next_ms(w), 500);
	while (lworld_leaving(w) && now_ms() - t0 < 3000) {
		int64_t due = OPS->next_ms(w);

		sleep_ms(due < 0 || due > 5 ? 5 : due);
		cr_assert_eq(OPS->run_due(w, &pg, &t, &stop, &e), PX_OK,
			     "%s", e.msg);
		if (lworld_leaving(w) < 2 && first < 0)
			first = now_ms() - t0;
		if (!lworld_leaving(w))
			last = now_ms() - t0;
	}
	cr_assert_eq(lworld_leaving(w), 0);
	cr_assert_eq(OPS->host_load(w), 0);
	cr_assert_lt(first, 400, "the node that ended was kept %lld ms",
		     (long long)first);
	cr_assert_geq(last, 500, "killed after %lld ms", (long long)last);
	cr_assert_not(alive(goes));
	cr_assert_not(alive(stays), "its time is up, and it still runs");
	cr_assert_eq(events_seen[CTRL_EV_EVICTION], 0, "a release reported "
		     "gone");
	cr_assert_eq(events_seen[CTRL_EV_RELEASE], 2);
	ctrl_free(c);
	OPS->free_world(w);
}

/* At the end of a run (end_leaves) a release kills at once: no node is
 * told to leave, none is left leaving. */
Test(world_local, releases_at_the_end_kill_at_once)
{
	struct leaver l = {0};
	void *w = NULL;
	struct ctrl *c = NULL;
	int64_t cost;
	pid_t g[2];

	ondemand_up((struct world_hooks){.command = cmd_leaver,
					 .notice = leave_hook, .ctx = &l},
		    500, false, &w, &c);
	l.w = w;
	cr_assert_eq(OPS->nodes(w), 2);
	for (size_t i = 0; i < 2; i++)
		g[i] = lworld_pgid(w, ctrl_fleet(c)->v[i].id);
	OPS->end_leaves(w);
	cr_assert_eq(ctrl_finish(c, T0, true, &cost), PX_OK);
	cr_assert_eq(l.n, 0, "told to leave at the end");
	cr_assert_eq(OPS->nodes(w), 0);
	cr_assert_eq(lworld_leaving(w), 0);
	for (size_t i = 0; i < 2; i++)
		cr_assert_not(alive(g[i]), "process group %d left", g[i]);
	ctrl_free(c);
	OPS->free_world(w);
}

Test(world_local, refuses_a_bad_speedup)
{
	struct world_setup ls = {
		.env = sim_plan_env(plan), .ms = &ms, .t0_s = T0,
		.end_s = T0 + H, .speedup = 0.5,
		.hooks = {.command = cmd},
	};
	void *w = NULL;
	struct px_error e = {0};

	cr_assert_eq(OPS->create(&ls, &w, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "speedup"), "%s", e.msg);
	ls.speedup = 1.0 / 0.0;
	cr_assert_eq(OPS->create(&ls, &w, &e), PX_EINVAL);
}

/* One registry of ops tables by name; sim has no daemon half. */
Test(world_local, the_registry_has_each_world_by_name)
{
	const struct world_ops *o;
	char names[64];
	size_t n = 0;

	cr_assert_eq(world_ops_by_name("local"), &lworld_ops);
	cr_assert_not(lworld_ops.instances_outlive_daemon);
	cr_assert_not_null(lworld_ops.capacity, "this host's room is local's");
	cr_assert_not_null(world_ops_by_name("sim"));
	cr_assert_null(world_ops_by_name("sim")->create);
	cr_assert_not_null(world_ops_by_name("ec2"));
	cr_assert_null(world_ops_by_name("moon"));
	cr_assert_null(world_ops_by_name(NULL));
	for (; (o = world_ops_at(n)) != NULL; n++)
		cr_assert_eq(world_ops_by_name(o->name), o);
	cr_assert_eq(n, 3, "sim, local, ec2 built in");
	cr_assert_eq(world_daemon_names(names, sizeof names, "\"", " or "), 2);
	cr_assert_str_eq(names, "\"local\" or \"ec2\"");
}
