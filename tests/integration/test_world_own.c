/* test_world_own.c -- a world of the test's own, one table registered
 * (world.h): the daemon's code finds it by name, takes a spec that names
 * it with its own rules, and runs a job on it through the controller and
 * the shared event driver: instances launched, the job ended at its
 * deadline, its cost the same as sim's. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/config.h"
#include "../../agent/controller.h"
#include "../../agent/evq.h"
#include "../../agent/jobreq.h"
#include "../../agent/world.h"
#include "../../agent/world/sim.h"
#include "../../bidbrain/policy.h"

#define H 3600
#define T0 1000000000   /* market time of the trace's start */

/* ---- the world: instances as nothing but bookkeeping ---- */

enum { TOY_READY, TOY_HOUR, TOY_TICK, TOY_END };

struct toy {
	struct world_setup s;
	struct ctrl *c;
	struct evq q;
	int64_t now, step_t;     /* the test moves now */
	uint64_t ids[64];        /* the instances it holds */
	size_t n;
	int launched;
};

static enum px_err toy_acquire(void *vw, const struct world_req *q,
			       struct px_error *err)
{
	struct toy *w = vw;
	enum px_err e;

	if (w->n == sizeof w->ids / sizeof w->ids[0])
		return ctrl_rejected(w->c, w->now, q->id, "the toy is full");
	w->ids[w->n++] = q->id;
	w->launched++;
	e = evq_push(&w->q, w->now + w->s.env->job->startup_seconds,
		     TOY_READY, q->id, err);
	if (e == PX_OK)
		e = ctrl_launched(w->c, w->now, q->id);
	return e;
}

static bool held(const struct toy *w, uint64_t id, size_t *at)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->ids[i] == id) {
			*at = i;
			return true;
		}
	return false;
}

static enum px_err toy_release(void *vw, uint64_t id, struct px_error *err)
{
	struct toy *w = vw;
	size_t i;

	(void)err;
	if (held(w, id, &i))
		w->ids[i] = w->ids[--w->n];
	return PX_OK;
}

static enum px_err toy_timer(void *vw, int64_t t_s, enum ctrl_timer_kind kind,
			     uint64_t id, struct px_error *err)
{
	struct toy *w = vw;

	(void)kind;
	return evq_push(&w->q, t_s, TOY_HOUR, id, err);
}

static enum px_err toy_create(const struct world_setup *s, void **ret,
			      struct px_error *err)
{
	struct toy *w = calloc(1, sizeof *w);

	if (!w)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	w->s = *s;
	w->now = w->step_t = s->t0_s;
	*ret = w;
	return PX_OK;
}

static void toy_attach(void *vw, struct ctrl *c)
{
	((struct toy *)vw)->c = c;
}

static enum px_err toy_start(void *vw, const struct ctrl_progress *p,
			     struct px_error *err)
{
	struct toy *w = vw;
	enum px_err e = evq_push(&w->q, w->now + w->s.tick_s, TOY_TICK, 0,
				 err);

	if (e == PX_OK)
		e = ctrl_step(w->c, w->now, POL_WHY_START, p);
	if (e == PX_OK) {
		ctrl_take_changed(w->c);
		ctrl_cost(w->c, w->now);
		e = evq_push(&w->q, ctrl_end(w->c), TOY_END, 0, err);
	}
	return e;
}

static int64_t toy_now(const void *vw)
{
	return ((const struct toy *)vw)->now;
}

static int64_t toy_next_ms(const void *vw)
{
	return ((const struct toy *)vw)->q.n ? 0 : -1;
}

static enum px_err toy_handle(void *vw, const struct evq_ev *ev,
			      unsigned *why, struct px_error *err)
{
	struct toy *w = vw;
	size_t i;

	switch (ev->kind) {
	case TOY_TICK:
		*why |= POL_WHY_TICK;
		return evq_push(&w->q, ev->t + w->s.tick_s, TOY_TICK, 0, err);
	case TOY_HOUR:
		return ctrl_timer(w->c, ev->t, CTRL_TIMER_HOUR, ev->id);
	case TOY_READY:
		return held(w, ev->id, &i) ? ctrl_ready(w->c, ev->t, ev->id) :
					     PX_OK;
	default:
		return PX_OK;
	}
}

/* The shared driver, as every world's run_due. */
static enum px_err toy_run_due(void *vw, const struct ctrl_progress *p,
			       int64_t *ret_t, int *ret_stop,
			       struct px_error *err)
{
	struct toy *w = vw;
	const struct world_drive d = {
		.c = w->c, .q = &w->q, .w = w, .handle = toy_handle,
		.step_t = &w->step_t,   /* the books: the driver's own */
	};
	enum px_err e;

	*ret_t = w->now;
	e = world_drive_due(&d, w->now, p, ret_t, ret_stop, err);
	if (e == PX_OK && *ret_stop == CTRL_RUN)
		*ret_stop = ctrl_stop(w->c, *ret_t, p);
	return e;
}

static size_t toy_nodes(const void *vw)
{
	return ((const struct toy *)vw)->n;
}

static size_t toy_host_load(const void *vw)
{
	(void)vw;
	return 0;
}

static void toy_cloud_id(const void *vw, uint64_t id, char *buf, size_t len)
{
	(void)vw;
	snprintf(buf, len, "toy-%llu", (unsigned long long)id);
}

static void toy_free(void *vw)
{
	struct toy *w = vw;

	evq_release(&w->q);
	free(w);
}

static enum px_err toy_coordinator(const void *vw, char *buf, size_t len,
				   struct px_error *err)
{
	(void)vw;
	(void)err;
	snprintf(buf, len, "ipc:///nowhere");
	return PX_OK;
}

/* The toy's own rule: it replays no trace of the spec's. */
static enum px_err toy_spec_check(const struct job_world *w, const char *file,
				  struct px_error *err)
{
	if (w->trace[0])
		return px_errorf(err, PX_EINVAL, "%s: world.trace: the toy "
				 "world has its own market", file);
	return PX_OK;
}

static const struct world_ops toy_ops = {
	.name = "toy",
	.acquire = toy_acquire,
	.release = toy_release,
	.timer = toy_timer,
	.create = toy_create,
	.attach = toy_attach,
	.start = toy_start,
	.now = toy_now,
	.next_ms = toy_next_ms,
	.run_due = toy_run_due,
	.nodes = toy_nodes,
	.host_load = toy_host_load,
	.cloud_id = toy_cloud_id,
	.free_world = toy_free,
	.coordinator = toy_coordinator,
	.spec_check = toy_spec_check,
};

/* ---- the test ---- */

#define SPEC(world) \
	"{\"name\": \"j\", \"region\": \"us-east-1\", \"work_hours\": 8," \
	" \"reference_type\": \"m3.large\", \"instances\": 2,"           \
	" \"deadline_hours\": 3, \"startup_seconds\": 120,"              \
	" \"reliable\": {\"type\": \"m3.large\", \"count\": 1},"          \
	" \"spot\": {\"types\": [\"m3.large\"], \"max_instances\": 4},"   \
	" \"world\": " world "}"

static struct market_set ms;
static struct ondemand_entry od_v[1];
static struct ondemand_table od = {.v = od_v, .n = 1};

static void setup(void)
{
	struct px_error e = {0};

	cr_assert_eq(world_register(&toy_ops, &e), PX_OK, "%s", e.msg);
	market_set_init(&ms);
	cr_assert_eq(market_set_add(&ms, "us-east-1a", "m3.large", T0, 50000,
				    &e), PX_OK);
	cr_assert_eq(market_set_add(&ms, "us-east-1a", "m3.large", T0 + 6 * H,
				    50000, &e), PX_OK);
	cr_assert_eq(market_set_seal(&ms, &e), PX_OK, "%s", e.msg);
	snprintf(od_v[0].region, sizeof od_v[0].region, "us-east-1");
	snprintf(od_v[0].type, sizeof od_v[0].type, "m3.large");
	od_v[0].uusd_per_hour = 133000;
}

static void teardown(void)
{
	market_set_release(&ms);
}

TestSuite(world_own, .init = setup, .fini = teardown, .timeout = 60);

/* Registered, it is a world like the built-in ones: by name, in the
 * config's and the spec's lists, its rule applied; names stay unique. */
Test(world_own, the_registry_takes_a_world_of_its_own)
{
	struct job_request r;
	struct px_error e = {0};
	char names[64];

	cr_assert_eq(world_ops_by_name("toy"), &toy_ops);
	cr_assert_eq(world_register(&toy_ops, &e), PX_EINVAL, "taken");
	cr_assert_eq(world_daemon_names(names, sizeof names, "", ", "), 3);
	cr_assert_str_eq(names, "local, ec2, toy");
	cr_assert_eq(jobreq_parse(SPEC("\"toy\""), strlen(SPEC("\"toy\"")),
				  "j.json", &r, &e), PX_OK, "%s", e.msg);
	cr_assert_str_eq(r.world.name, "toy");
	cr_assert_eq(jobreq_parse(SPEC("{\"name\": \"toy\", \"trace\": \"t\"}"),
				  strlen(SPEC("{\"name\": \"toy\", "
					      "\"trace\": \"t\"}")),
				  "j.json", &r, &e), PX_EINVAL);
	cr_assert_str_eq(e.msg, "j.json: world.trace: the toy world has its "
			 "own market");
	cr_assert_eq(jobreq_parse(SPEC("\"moon\""), strlen(SPEC("\"moon\"")),
				  "j.json", &r, &e), PX_EINVAL);
	cr_assert_str_eq(e.msg, "j.json: world.name: must be \"local\", "
			 "\"ec2\" or \"toy\"");
}

/* A job on it: the spec's parse, the controller, the driver; the fleet
 * launched, the run ended at the deadline, the bill sim's. */
Test(world_own, a_job_runs_on_it_and_pays_what_sim_says)
{
	const struct world_ops *o = world_ops_by_name("toy");
	const struct policy_ops *pol = &pol_ondemand_ops;
	struct job_request r;
	struct px_error e = {0};
	struct sim_setup su = {.ms = &ms, .od = &od, .job = &r.spec,
			       .billing = BILLING_LEGACY_HOURLY,
			       .start_s = T0, .end_s = T0 + 6 * H};
	struct sim_plan *plan = NULL;
	struct sim_result sr;
	struct ctrl_progress pg = {0};
	struct ctrl *c = NULL;
	void *w = NULL;
	int64_t t = T0, cost = -1;
	int stop = CTRL_RUN;

	cr_assert_eq(jobreq_parse(SPEC("\"toy\""), strlen(SPEC("\"toy\"")),
				  "j.json", &r, &e), PX_OK, "%s", e.msg);
	cr_assert_not_null(o);
	cr_assert_eq(sim_plan_new(&su, &plan, &e), PX_OK, "%s", e.msg);
	struct world_setup ws = {
		.env = sim_plan_env(plan), .ms = &ms, .t0_s = T0,
		.end_s = T0 + 6 * H, .tick_s = r.spec.tick_seconds,
		.wants = pol->wants,
	};
	cr_assert_eq(o->create(&ws, &w, &e), PX_OK, "%s", e.msg);
	struct ctrl_setup cs = {
		.env = ws.env, .ms = &ms, .policy = pol, .world = o,
		.world_ctx = w, .start_s = T0, .window_end_s = T0 + 6 * H,
	};
	cr_assert_eq(ctrl_new(&cs, &c, &e), PX_OK, "%s", e.msg);
	o->attach(w, c);
	cr_assert_eq(o->start(w, &pg, &e), PX_OK, "%s", e.msg);
	cr_assert_geq(o->nodes(w), 2, "the job's instances, launched");
	for (int i = 0; stop == CTRL_RUN && i < 1000; i++) {
		((struct toy *)w)->now += 60;
		cr_assert_eq(o->run_due(w, &pg, &t, &stop, &e), PX_OK, "%s",
			     e.msg);
	}
	cr_assert_eq(stop, CTRL_STOP_DEADLINE);
	cr_assert_eq(t, T0 + 3 * H, "ended at its deadline");
	cr_assert_eq(ctrl_finish(c, t, false, &cost), PX_OK);
	cr_assert_eq(o->nodes(w), 0, "every instance released");
	cr_assert_gt(cost, 0);
	cr_assert_eq(ctrl_stats(c)->instances_launched,
		     ((struct toy *)w)->launched);

	/* the same spec, policy and window in sim: the same bill */
	cr_assert_eq(sim_run(plan, pol, &sr, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(sr.cost_uusd, cost, "sim %lld, toy %lld",
		     (long long)sr.cost_uusd, (long long)cost);
	cr_assert_eq(sr.instances_launched, ctrl_stats(c)->instances_launched);
	sim_result_release(&sr);
	ctrl_free(c);
	o->free_world(w);
	sim_plan_free(plan);
}
