/* jobs_pool.c -- the pool all of proteusd's jobs share (docs/pool.md):
 * the limits (pool_spot_vcpus, pool_ondemand_vcpus, pool_usd_per_hour;
 * lower ones learnt from EC2's quota errors), the gate every job's
 * controller asks before it rents, and the arbiter's rounds: at each
 * lease's end, each job's submission and each job's end, the jobs
 * running and those queued that could start are given their shares
 * (arbiter.h, pool_arbiter); a job's reliable tier is admitted whole or
 * it stays queued; a job above its new share gives its newest spot
 * instances back at once (the trainer drops them, no restart).
 *
 * The arbiter's clock is each job's own market time (a job of the local
 * world at speedup S lives S market seconds a second): its age, its
 * rates (work-hours a market hour) and its work left are in its hours.
 * A lease is pool_lease_seconds of market time of the fastest job
 * running.  With no limit configured or learned, the pool gates nothing
 * and gives no shares; the rounds still say each job's rho.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "jobs_int.h"
#include "prom.h"

#define PROGRAM_RESTART_S 60.0

struct jobs_pool {
	struct pool_limit learned_spot, learned_od; /* from quota errors */
	int64_t rounds;
	int64_t timer;            /* the lease's end (loop timer); -1 */
	int64_t soon;             /* a round on the loop's next turn; -1 */
	uint64_t next_us;         /* when the lease ends (monotonic) */
	int64_t learned_n;        /* quota errors that lowered a limit */
	/* the configured limits the learned ones were learnt under: an
	 * operator who changes them (a quota raised, SIGHUP) starts the
	 * learning again */
	char under_spot[CONFIG_POOL_LIMIT_MAX];
	char under_od[CONFIG_POOL_LIMIT_MAX];
	bool in_round;
};

static void round_(struct jobs *js, const char *why);
static json_t *num_or_null(double v, bool have);
static json_t *limit_json(const struct pool_limit *l);

enum px_err jobs_pool_new(struct jobs *js, struct px_error *err)
{
	struct jobs_pool *p = calloc(1, sizeof *p);

	if (!p)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	pool_limit_none(&p->learned_spot);
	pool_limit_none(&p->learned_od);
	p->timer = p->soon = -1;
	snprintf(p->under_spot, sizeof p->under_spot, "%s",
		 js->s.cfg->pool_spot_vcpus);
	snprintf(p->under_od, sizeof p->under_od, "%s",
		 js->s.cfg->pool_ondemand_vcpus);
	js->pool = p;
	return PX_OK;
}

void jobs_pool_free(struct jobs *js)
{
	if (!js->pool)
		return;
	if (js->pool->timer > 0)
		(void)loop_timer_del(js->s.loop, js->pool->timer);
	if (js->pool->soon > 0)
		(void)loop_timer_del(js->s.loop, js->pool->soon);
	free(js->pool);
	js->pool = NULL;
}

void job_pool_init(struct job *j)
{
	j->sh.rho = NAN;
	j->sh.came_us = px_now_wall_us();
	j->sh.resume_share = -1;
	j->sh.rho_done = j->sh.completion_h = j->sh.alone_h = NAN;
	j->sh.n_present = NAN;
}

void job_pool_came(struct job *j, int64_t came_us)
{
	if (came_us > 0)
		j->sh.came_us = came_us;
}

/* ---- the pool's own events (about no job): what it learnt, its rounds
 * ---- */

static void pool_event(const struct jobs *js, const char *kind, json_t *o)
{
	struct px_error err = {0};
	char *d = o ? json_dumps(o, JSON_COMPACT) : NULL;

	if (!d)
		log_warn("the pool's '%s' event: out of memory", kind);
	else if (store_event_add(js->s.st, 0, 0, px_now_wall_us(), kind, d,
				 &err) != PX_OK)
		log_warn("the pool's '%s' event not stored: %s", kind,
			 err.msg);
	free(d);
	json_decref(o);
}

/* The learned limits as they stand now, with the configured ones they
 * were learnt under ("none" and "none": forgotten): the last such event
 * is what a restarted daemon starts from. */
static void learned_event(const struct jobs *js)
{
	struct jobs_pool *p = js->pool;
	char sp[CONFIG_POOL_LIMIT_MAX], od[CONFIG_POOL_LIMIT_MAX];

	pool_limit_format(&p->learned_spot, sp, sizeof sp);
	pool_limit_format(&p->learned_od, od, sizeof od);
	pool_event(js, "quota", json_pack("{s:s, s:s, s:s, s:s}",
		   "spot_vcpus", sp, "ondemand_vcpus", od,
		   "under_spot_vcpus", p->under_spot,
		   "under_ondemand_vcpus", p->under_od));
}

static enum px_err last_learned(const struct store_event *ev, void *ctx)
{
	struct jobs *js = ctx;
	struct jobs_pool *p = js->pool;
	json_t *o = json_loads(ev->detail, 0, NULL);
	const char *us = json_string_value(json_object_get(o,
						"under_spot_vcpus"));
	const char *uo = json_string_value(json_object_get(o,
						"under_ondemand_vcpus"));
	struct pool_limit sp, od;
	struct px_error err = {0};

	/* learnt under other configured limits (changed while the daemon
	 * was down): forgotten, as a SIGHUP's change forgets them */
	if (!us || !uo || strcmp(us, p->under_spot) ||
	    strcmp(uo, p->under_od)) {
		json_decref(o);
		return PX_OK;
	}
	if (pool_limit_parse("spot_vcpus", json_string_value(
			json_object_get(o, "spot_vcpus")), &sp, &err) != PX_OK ||
	    pool_limit_parse("ondemand_vcpus", json_string_value(
			json_object_get(o, "ondemand_vcpus")), &od, &err) !=
	    PX_OK) {
		log_warn("the pool's last quota event (%" PRId64 "): %s: its "
			 "learned limits are not taken up", ev->id, err.msg);
	} else {
		p->learned_spot = sp;
		p->learned_od = od;
	}
	json_decref(o);
	return PX_OK;
}

/* The rounds count on from an earlier life's: o's "round", if higher. */
static void rounds_from(struct jobs_pool *p, json_t *o)
{
	json_t *rd = json_object_get(o, "round");

	if (json_is_integer(rd) && json_integer_value(rd) > p->rounds &&
	    json_integer_value(rd) < INT64_MAX / 2)
		p->rounds = json_integer_value(rd);
}

static enum px_err last_round(const struct store_event *ev, void *ctx)
{
	json_t *o = json_loads(ev->detail, 0, NULL);

	rounds_from(ctx, o);
	json_decref(o);
	return PX_OK;
}

void jobs_pool_recover(struct jobs *js)
{
	struct px_error err = {0};
	char sp[CONFIG_POOL_LIMIT_MAX], od[CONFIG_POOL_LIMIT_MAX];

	if (store_event_last(js->s.st, 0, "quota", last_learned, js,
			     &err) != PX_OK ||
	    store_event_last(js->s.st, 0, "round", last_round, js->pool,
			     &err) != PX_OK)
		log_warn("the pool's state before the restart: %s", err.msg);
	if (!pool_limit_any(&js->pool->learned_spot) &&
	    !pool_limit_any(&js->pool->learned_od))
		return;
	pool_limit_format(&js->pool->learned_spot, sp, sizeof sp);
	pool_limit_format(&js->pool->learned_od, od, sizeof od);
	log_notice("the pool's limits learnt from EC2's quota errors before "
		   "the restart hold: spot %s, on demand %s", sp, od);
}

/* The limits in force: the configured ones, and the learned where they
 * are tighter. */
static void limits(const struct jobs *js, struct pool_limits *l)
{
	const struct proteusd_config *cfg = js->s.cfg;
	struct jobs_pool *p = js->pool;

	if (strcmp(p->under_spot, cfg->pool_spot_vcpus) ||
	    strcmp(p->under_od, cfg->pool_ondemand_vcpus)) {
		bool had = pool_limit_any(&p->learned_spot) ||
			   pool_limit_any(&p->learned_od);

		pool_limit_none(&p->learned_spot);
		pool_limit_none(&p->learned_od);
		snprintf(p->under_spot, sizeof p->under_spot, "%s",
			 cfg->pool_spot_vcpus);
		snprintf(p->under_od, sizeof p->under_od, "%s",
			 cfg->pool_ondemand_vcpus);
		if (had) {
			log_notice("the pool's configured limits changed: the "
				   "limits learnt from EC2's quota errors are "
				   "forgotten");
			learned_event(js);
		}
	}
	*l = cfg->pool_limits;
	pool_limit_min(&l->spot, &cfg->pool_limits.spot,
		       &js->pool->learned_spot);
	pool_limit_min(&l->ondemand, &cfg->pool_limits.ondemand,
		       &js->pool->learned_od);
}

static bool running(const struct job *j)
{
	return j->run.state == STORE_JOB_RUNNING && j->run.c;
}

/* Its market time now: its last event's while it runs. */
static int64_t job_now(const struct job *j)
{
	return running(j) ? j->run.t : j->mk.start_s;
}

static void going_one(void *ctx, const char *type, bool spot)
{
	struct pool_use *u = ctx;

	pool_use_add(u, pool_group_of(type), spot, pm_type_vcpus(type), 0, 1);
}

/* What the jobs let go that the provider still counts (world_ops.
 * host_going): its vCPUs. */
static struct pool_use going_now(const struct jobs *js)
{
	struct pool_use u;

	memset(&u, 0, sizeof u);
	for (size_t k = 0; world_ops_at(k); k++)
		if (world_ops_at(k)->host_going)
			world_ops_at(k)->host_going(&js->host, going_one, &u);
	return u;
}

/* u and what the pool holds: every member's fleet, priced at its own
 * now. */
static struct pool_use use_with(const struct jobs *js, struct pool_use u)
{
	for (const struct job *j = js->list; j; j = j->next) {
		if (!j->sh.member)
			continue;
		for (int g = 0; g < POOL_GROUPS; g++) {
			u.spot[g] += j->sh.held.spot[g];
			u.ondemand[g] += j->sh.held.ondemand[g];
		}
		u.spot_total += j->sh.held.spot_total;
		u.ondemand_total += j->sh.held.ondemand_total;
		if (running(j) && j->mk.plan)
			u.uusd_per_hour += pm_fleet_uusd(
				plan_env(j->mk.plan), ctrl_fleet(j->run.c),
				&j->mk.ms, job_now(j), false);
	}
	return u;
}

/* What the pool holds, and what the jobs let go that the provider still
 * counts (going_now). */
static struct pool_use use_now(const struct jobs *js)
{
	return use_with(js, going_now(js));
}

/* j counted by the pool: its sizes from its plan (false: none yet). */
static bool member(struct job *j)
{
	struct px_error err = {0};

	if (j->sh.member)
		return true;
	if (!j->mk.plan)
		return false;
	if (pm_init(&j->sh.pm, plan_env(j->mk.plan), NULL,
		    j->req.weight > 0 ? j->req.weight : 1, &err) != PX_OK) {
		log_err("job %" PRId64 ": the pool: %s", j->id, err.msg);
		return false;
	}
	/* a program's group re-forms when its share changes: the
	 * arbiter counts it (Pollux's restart penalty), 60 s unless the
	 * spec says (as simulate models a program) */
	if (j->req.program.on && !(j->sh.pm.restart_h > 0))
		j->sh.pm.restart_h = PROGRAM_RESTART_S / 3600;
	memset(&j->sh.held, 0, sizeof j->sh.held);
	j->sh.member = true;
	if (j->sh.resume_share >= 0 &&
	    pool_limits_any(&j->js->s.cfg->pool_limits)) {
		/* the share an earlier life gave it holds until the
		 * first round */
		j->sh.pm.share = j->sh.resume_share;
		j->sh.pm.shared = true;
	}
	return true;
}

/* ---- the gate (controller.h) ---- */

static const char *g_admit(void *ctx, int64_t now, int type, int market,
			   int64_t hour_uusd)
{
	struct job *j = ctx;
	const struct pol_env *env = plan_env(j->mk.plan);
	struct pool_limits l;
	struct pool_use u;

	limits(j->js, &l);
	if (!j->sh.member || (!pool_limits_any(&l) && !j->sh.pm.shared))
		return NULL;
	u = use_now(j->js);
	return pm_admit(&j->sh.pm, &l, &u, env->types[type].name, market >= 0,
			hour_uusd, pm_fleet_uusd(env, ctrl_fleet(j->run.c),
						 &j->mk.ms, now, true));
}

static void g_hold(void *ctx, int type, int market, int sign)
{
	struct job *j = ctx;
	const char *name = plan_env(j->mk.plan)->types[type].name;

	if (!j->sh.member)
		return;
	pm_hold(&j->sh.pm, &j->sh.held, name, market >= 0, sign);
	if (sign < 0) {
		snprintf(j->sh.gone_type, sizeof j->sh.gone_type, "%s", name);
		j->sh.gone_spot = market >= 0;
	}
}

const struct ctrl_gate *job_pool_gate(struct job *j)
{
	(void)member(j);
	memset(&j->sh.held, 0, sizeof j->sh.held);
	j->sh.pm.spot_vcpus = j->sh.pm.peak = j->sh.pm.od_vcpus = 0;
	/* its measurements start with this life's run */
	j->sh.pm.lease_t = 0;
	j->sh.pass_t = 0;
	j->sh.gate = (struct ctrl_gate){.admit = g_admit, .hold = g_hold,
					.ctx = j};
	return &j->sh.gate;
}

void job_pool_scaling(const struct job *j, struct pol_scaling *sc)
{
	int cap;

	if (!j->sh.member || !j->sh.pm.shared)
		return;
	cap = pm_spot_cap(&j->sh.pm);
	if (sc->spot_max < 0 || sc->spot_max > cap)
		sc->spot_max = cap;
	sc->spot_vcpus_set = true;
	sc->spot_vcpus = j->sh.pm.share * j->sh.pm.unit_vcpus;
}

/* ---- the rounds ---- */

static int64_t soon_fire(struct loop *l, int64_t id, void *ctx)
{
	struct jobs *js = ctx;

	(void)l;
	(void)id;
	js->pool->soon = -1;
	round_(js, "an arrival or an end");
	return LOOP_NOMORE;
}

static void round_soon(struct jobs *js)
{
	if (js->pool->soon < 0)
		js->pool->soon = loop_timer_add(js->s.loop, 0, soon_fire, js);
}

static int64_t lease_ms(const struct jobs *js)
{
	double speed = 1;

	for (const struct job *j = js->list; j; j = j->next)
		if (running(j) && j->mk.speedup > speed)
			speed = j->mk.speedup;
	return llround((double)js->s.cfg->pool_lease_seconds * 1000 / speed);
}

static int64_t lease_fire(struct loop *l, int64_t id, void *ctx)
{
	struct jobs *js = ctx;

	(void)l;
	(void)id;
	js->pool->timer = -1;
	round_(js, "the lease's end");
	return LOOP_NOMORE;
}

/* The jobs of a round: the running ones, and the queued ones (with
 * their market read) that max_jobs would let start, in submission
 * order; sized.  Into v (js's jobs at most); their count. */
static size_t round_jobs(struct jobs *js, struct job **v, size_t cap)
{
	size_t n = 0;
	int64_t slots = js->s.cfg->max_jobs;

	for (struct job *j = js->list; j && n < cap; j = j->next)
		if (running(j) && member(j)) {
			v[n++] = j;
			slots--;
		}
	for (struct job *j = js->list; j && n < cap && slots > 0; j = j->next)
		if (j->run.state == STORE_JOB_QUEUED && member(j)) {
			v[n++] = j;
			slots--;
		}
	return n;
}

/* What the arbiter is told of j. */
static void arb_of(struct job *j, struct arb_job *a)
{
	const struct pol_env *env = plan_env(j->mk.plan);
	struct pool_member *m = &j->sh.pm;
	double age_h = (double)(px_now_wall_us() - j->sh.came_us) / 3.6e9 *
		       (j->mk.speedup > 0 ? j->mk.speedup : 1);

	if (running(j)) {
		if (j->pg.measured_on)
			pm_rates(m, env, &j->pg.profile);
		/* the first round of a run only starts the counters */
		pm_measure(m, j->run.t, j->pg.work_h, m->lease_t != 0);
	} else {
		pm_measure(m, job_now(j), 0, false);
	}
	pm_arb(m, age_h > 0 ? -age_h : 0, running(j) ? j->pg.work_h : 0,
	       running(j),
	       pm_unit_price(m, env, running(j) ? ctrl_fleet(j->run.c) : NULL,
			     &j->mk.ms, job_now(j)), a);
}

/* Spot vCPUs j holds above its share go back, the newest first (under
 * legacy-hourly billing, the paid hour that ends soonest). */
static void trim(struct job *j)
{
	const struct pool_member *m = &j->sh.pm;
	size_t guard = ctrl_fleet(j->run.c)->n;

	while (m->spot_vcpus > m->share * m->unit_vcpus && guard--) {
		const struct pol_instance *v = pm_shed_first(
			ctrl_fleet(j->run.c), j->mk.billing);

		if (!v || ctrl_shed(j->run.c, j->run.t, v->id,
				    "the pool's share") != PX_OK)
			break;
		j->sh.pm.sheds++;
	}
	(void)ctrl_wake(j->run.c, j->run.t);
}

/* Why a job the round did not admit waits. */
static void waits(struct job *j, const struct pool_limits *l,
		  const struct pool_use *u)
{
	const struct pool_member *m = &j->sh.pm;
	const char *why = NULL;

	if (pool_fits(l, u, m->tier_group, false, m->tier_vcpus,
		      m->tier_uusd, &why))
		why = "the jobs before it";
	snprintf(j->sh.wait, sizeof j->sh.wait, "its reliable tier (%" PRId64
		 " %s vCPUs on demand) waits for room in the pool (%s)",
		 m->tier_vcpus, pool_group_name(m->tier_group), why);
}

/* j takes its round's decision a (the pool limited: active). */
static void take(struct job *j, const struct arb_job *a, bool active,
		 const struct pool_limits *l, const struct pool_use *u,
		 int64_t spare, int64_t round)
{
	struct pool_member *m = &j->sh.pm;
	int before = m->shared ? m->share : -1;
	bool was = j->sh.admitted;

	j->sh.rho = a->rho;
	if (!active) {
		m->shared = false;
		m->usd_cap = -1;
		j->sh.admitted = true;
		j->sh.wait[0] = '\0';
		return;
	}
	pm_take(m, l, a, spare);
	j->sh.admitted = a->admit || running(j);
	if (j->sh.admitted)
		j->sh.wait[0] = '\0';
	else
		waits(j, l, u);
	if (running(j))
		trim(j);
	if (before == m->share && was == j->sh.admitted)
		return;
	j->sh.round = round;
	{
		char rho[32] = "null";   /* it cannot progress at the share */

		if (isfinite(a->rho))
			snprintf(rho, sizeof rho, "%.6g", a->rho);
		job_eventf(j, "lease", "{\"round\": %" PRId64 ", \"share\": "
			   "%d, \"share_vcpus\": %" PRId64 ", \"admitted\": "
			   "%s, \"rho\": %s, \"arbiter\": \"%s\"}", round,
			   m->share, m->share * m->unit_vcpus,
			   j->sh.admitted ? "true" : "false", rho,
			   arb_name((enum arb_kind)j->js->s.cfg->pool_arbiter));
	}
}

/* The round's decision, as a "round" event about no job: its count,
 * why it came, the limits in force and each job's share, admission and
 * rho (docs/pool.md, "In the daemon"). */
static void round_event(struct jobs *js, const char *why, struct job **v,
			size_t n, const struct pool_limits *l)
{
	json_t *a = json_array();

	for (size_t k = 0; a && k < n; k++) {
		const struct pool_member *m = &v[k]->sh.pm;

		json_array_append_new(a, json_pack("{s:I, s:o, s:o, s:b, s:o}",
			"job", (json_int_t)v[k]->id,
			"share", m->shared ? json_integer(m->share) :
					     json_null(),
			"share_vcpus", m->shared ? json_integer(m->share *
					m->unit_vcpus) : json_null(),
			"admitted", v[k]->sh.admitted,
			"rho", num_or_null(v[k]->sh.rho, true)));
	}
	pool_event(js, "round", json_pack("{s:I, s:s, s:s, s:o, s:o, s:o}",
		   "round", (json_int_t)js->pool->rounds, "why", why,
		   "arbiter", arb_name((enum arb_kind)js->s.cfg->pool_arbiter),
		   "spot_vcpus", limit_json(&l->spot),
		   "ondemand_vcpus", limit_json(&l->ondemand),
		   "jobs", a ? a : json_null()));
}

static void round_(struct jobs *js, const char *why)
{
	struct jobs_pool *p = js->pool;
	const struct proteusd_config *cfg = js->s.cfg;
	size_t cap = 0, n = 0;
	struct job **v;
	struct arb_job *aj;
	struct pool_limits l;
	struct pool_use u;
	struct px_error err = {0};
	int64_t spare, ms;
	bool active;

	if (p->in_round)
		return;
	for (struct job *j = js->list; j; j = j->next)
		cap++;
	v = calloc(cap ? cap : 1, sizeof *v);
	aj = calloc(cap ? cap : 1, sizeof *aj);
	if (!v || !aj) {
		log_err("the pool's round: out of memory");
		goto out;
	}
	p->in_round = true;
	n = round_jobs(js, v, cap);
	limits(js, &l);
	active = pool_limits_any(&l);
	for (size_t k = 0; k < n; k++)
		arb_of(v[k], &aj[k]);
	{
		struct arb_setup as = {
			.kind = (enum arb_kind)cfg->pool_arbiter,
			.fairness = cfg->pool_fairness_f, .now_h = 0,
			.limits = &l,
		};

		if (n && arb_decide(&as, aj, n, &err) != PX_OK) {
			log_err("the pool's round: %s", err.msg);
			goto out;
		}
	}
	p->rounds++;
	u = use_now(js);
	spare = pm_spare(&l, aj, n);
	for (size_t k = 0; k < n; k++)
		take(v[k], &aj[k], active, &l, &u, spare, p->rounds);
	if (n && active)
		round_event(js, why, v, n, &l);
	if (n)
		log_debug("the pool's round %" PRId64 " (%s): %zu job%s",
			  p->rounds, why, n, n == 1 ? "" : "s");
out:
	p->in_round = false;
	if (p->timer > 0)
		(void)loop_timer_del(js->s.loop, p->timer);
	p->timer = -1;
	if (v && n) {
		ms = lease_ms(js);
		p->timer = loop_timer_add(js->s.loop, ms, lease_fire, js);
		p->next_us = px_now_mono_us() + (uint64_t)ms * 1000;
	}
	free(v);
	free(aj);
}

enum px_err job_pool_check(struct job *j, const char *name,
			   struct px_error *err)
{
	const struct jobspec *sp = &j->req.spec;
	struct pool_limits l;
	struct pool_use none;
	const char *why = NULL;
	enum pool_group g = pool_group_of(sp->reliable.type);
	int64_t v = sp->reliable.count * pm_type_vcpus(sp->reliable.type);
	char text[CONFIG_POOL_LIMIT_MAX];

	limits(j->js, &l);
	memset(&none, 0, sizeof none);
	if (sp->reliable.count <= 0 ||
	    pool_fits(&l, &none, g, false, v, 0, &why))
		return PX_OK;
	pool_limit_format(&l.ondemand, text, sizeof text);
	return px_errorf(err, PX_EINVAL, "%s: reliable: its tier (%d %s, %"
			 PRId64 " vCPUs of group %s on demand) can never fit "
			 "the pool (%s: pool_ondemand_vcpus %s in force): it "
			 "would wait for ever", name, sp->reliable.count,
			 sp->reliable.type, v, pool_group_name(g),
			 why ? why : "a limit", text);
}

bool job_pool_may_start(struct job *j)
{
	struct pool_limits l;

	limits(j->js, &l);
	if (!pool_limits_any(&l)) {
		j->sh.admitted = true;
		j->sh.wait[0] = '\0';
		return true;
	}
	if (!j->sh.admitted)
		round_(j->js, "a job that could start");
	return j->sh.admitted;
}

/* ---- what EC2 says of the account's quotas ---- */

void job_pool_refused(struct job *j, const struct ctrl_event *ev)
{
	struct jobs_pool *p = j->js->pool;
	const char *d = ev->detail ? ev->detail : "";
	bool spot = strstr(d, "MaxSpotInstanceCountExceeded") != NULL;
	struct pool_limit *learned = spot ? &p->learned_spot : &p->learned_od;
	struct pool_use u;
	enum pool_group g;
	int64_t held;
	char text[CONFIG_POOL_LIMIT_MAX];

	if (!spot && !strstr(d, "VcpuLimitExceeded"))
		return;
	if (!j->sh.gone_type[0] || j->sh.gone_spot != spot)
		return;      /* not the instance the gate saw go */
	g = pool_group_of(j->sh.gone_type);
	u = use_now(j->js);
	held = spot ? u.spot[g] : u.ondemand[g];
	if (!pool_learn(learned, g, held))
		return;
	p->learned_n++;
	pool_limit_format(learned, text, sizeof text);
	log_warn("job %" PRId64 ": EC2 refused a %s %s instance for the "
		 "account's quota (%s): the pool's learned "
		 "pool_%s_vcpus is now %s (%" PRId64 " vCPUs of group %s "
		 "held)", j->id, spot ? "spot" : "on-demand",
		 j->sh.gone_type, spot ? "MaxSpotInstanceCountExceeded" :
		 "VcpuLimitExceeded", spot ? "spot" : "ondemand", text, held,
		 pool_group_name(g));
	job_eventf(j, "quota", "{\"market\": \"%s\", \"group\": \"%s\", "
		   "\"learned_vcpus\": %" PRId64 ", \"learned\": \"%s\"}",
		   spot ? "spot" : "on-demand", pool_group_name(g), held,
		   text);
	learned_event(j->js);
	round_soon(j->js);
}

void job_pool_resume_event(struct job *j, const char *kind, json_t *o)
{
	struct jobs_pool *p = j->js->pool;

	if (!strcmp(kind, "lease")) {
		json_t *sh = json_object_get(o, "share");

		rounds_from(p, o);
		if (json_is_integer(sh) && json_integer_value(sh) >= 0 &&
		    json_integer_value(sh) <= INT32_MAX)
			j->sh.resume_share = (int)json_integer_value(sh);
	}
}

/* ---- ticks and ends ---- */

bool job_pool_tick(struct job *j)
{
	struct jobs *js = j->js;
	struct pool_limits l;
	bool waiting = false;
	int guard = 64;

	/* the spot it held since the last tick, for the lease's measure;
	 * the jobs present meanwhile, for its realized rho */
	if (j->sh.member && j->sh.pass_t && j->run.t > j->sh.pass_t) {
		double dt = (double)(j->run.t - j->sh.pass_t);
		int present = 0;

		pm_pass(&j->sh.pm, dt);
		for (const struct job *k = js->list; k; k = k->next)
			present += k->run.state == STORE_JOB_QUEUED ||
				   k->run.state == STORE_JOB_RUNNING;
		j->sh.present_jh += dt / 3600 * present;
		j->sh.ticked_h += dt / 3600;
		j->sh.ideal_wh += dt / 3600 * pm_rate_at(&j->sh.pm,
			(double)j->sh.pm.spot_vcpus /
			(double)j->sh.pm.unit_vcpus);
	}
	j->sh.pass_t = j->run.t;

	limits(js, &l);
	for (const struct job *k = js->list; k; k = k->next)
		waiting |= k->run.state == STORE_JOB_QUEUED &&
			   k->sh.admitted;
	/* a price rise took the held instances past pool_usd_per_hour:
	 * the spot instance that costs the most an hour goes */
	while (l.uusd_per_hour >= 0 && guard-- &&
	       use_now(js).uusd_per_hour > l.uusd_per_hour) {
		struct job *bj = NULL;
		uint64_t bid = 0;
		int64_t bp = -1;

		for (struct job *k = js->list; k; k = k->next) {
			const struct pol_instance *v;

			if (!running(k) || !k->sh.member)
				continue;
			v = pm_priciest(plan_env(k->mk.plan),
					ctrl_fleet(k->run.c), &k->mk.ms,
					job_now(k), &bp);
			if (v) {
				bj = k;
				bid = v->id;
			}
		}
		if (!bj || ctrl_shed(bj->run.c, bj->run.t, bid,
				     "pool_usd_per_hour") != PX_OK)
			break;      /* on demand alone is past it */
		bj->sh.pm.sheds++;
		(void)ctrl_wake(bj->run.c, bj->run.t);
	}
	return waiting;
}

void job_pool_free(struct job *j)
{
	pm_free(&j->sh.pm);
	j->sh.member = false;
}

/* Done job j's realized rho: its completion time (market hours since it
 * came) over its time alone on 1/N of the pool (Themis' rho, as
 * simulate --workload reports it); a "pool_end" event says it.  N is the
 * jobs present over its run on average.  Its time alone is in the units
 * its run measured: the work its rates say of what it held, over their
 * rate at its 1/N (so a host that runs the model at half its rates
 * counts half for both). */
static void realized(struct job *j)
{
	struct job_share *sh = &j->sh;
	struct pool_limits l;
	struct arb_job a;
	double age_h = (double)(px_now_wall_us() - sh->came_us) / 3.6e9 *
		       (j->mk.speedup > 0 ? j->mk.speedup : 1);
	double n = sh->ticked_h > 0 ? sh->present_jh / sh->ticked_h : 1;
	double alone;

	if (j->run.state != STORE_JOB_DONE || !(age_h > 0))
		return;
	limits(j->js, &l);
	pm_arb(&sh->pm, 0, sh->pm.work_total_h, false, 0, &a);
	a.rate = sh->pm.rate;
	a.work_total_h = sh->ideal_wh;
	alone = arb_alone_hours(&a, n < 1 ? 1 : n,
				arb_alone_max(&l, NULL, &a));
	if (!(alone > 0) || !isfinite(alone))
		return;
	sh->completion_h = age_h;
	sh->alone_h = alone;
	sh->n_present = n < 1 ? 1 : n;
	sh->rho_done = age_h / alone;
	job_eventf(j, "pool_end", "{\"rho\": %.6g, \"completion_hours\": "
		   "%.6g, \"alone_hours\": %.6g, \"jobs_present\": %.4g}",
		   sh->rho_done, sh->completion_h, sh->alone_h, sh->n_present);
}

void job_pool_leave(struct job *j)
{
	if (!j->sh.member)
		return;
	realized(j);
	j->sh.member = false;
	j->sh.admitted = false;
	pm_free(&j->sh.pm);
	memset(&j->sh.held, 0, sizeof j->sh.held);
	round_soon(j->js);
}

/* ---- what a user sees: status, `pool`, /metrics ---- */

/* A figure, or null where there is none (NaN, infinite, a share not
 * given). */
static json_t *num_or_null(double v, bool have)
{
	return have && isfinite(v) ? json_real(v) : json_null();
}

json_t *job_pool_json(const struct job *j)
{
	const struct job_share *sh = &j->sh;
	const struct pool_member *m = &sh->pm;
	bool shared = sh->member && m->shared;

	if (j->run.state != STORE_JOB_QUEUED &&
	    j->run.state != STORE_JOB_RUNNING)
		return isfinite(sh->rho_done) ? json_pack("{s:f, s:f, s:f, "
			"s:f}", "rho_realized", sh->rho_done,
			"completion_hours", sh->completion_h, "alone_hours",
			sh->alone_h, "jobs_present", sh->n_present) : NULL;

	return json_pack("{s:o, s:o, s:I, s:I, s:o, s:f, s:b, s:o, s:I, s:I}",
		"share_spot", shared ? json_integer(m->share) : json_null(),
		"share_vcpus", shared ? json_integer(m->share * m->unit_vcpus)
				      : json_null(),
		"spot_vcpus", (json_int_t)sh->held.spot_total,
		"ondemand_vcpus", (json_int_t)sh->held.ondemand_total,
		"rho", num_or_null(sh->rho, sh->member),
		"weight", j->req.weight > 0 ? j->req.weight : 1.0,
		"admitted", sh->admitted || running(j),
		"waiting", sh->wait[0] ? json_string(sh->wait) : json_null(),
		"sheds", (json_int_t)(sh->member ? m->sheds : 0),
		"refused", (json_int_t)(sh->member ? m->refused : 0));
}

/* {"total": N, GROUP: N...} of the groups in use or limited. */
static json_t *by_group(const int64_t *v, int64_t total,
			const struct pool_limit *lim, bool limits_only)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	if (!limits_only || lim->total >= 0)
		json_object_set_new(o, "total", json_integer(total));
	for (int g = 0; g < POOL_GROUPS; g++)
		if (limits_only ? lim->group[g] >= 0 : v[g] != 0)
			json_object_set_new(o, pool_group_name(
				(enum pool_group)g), json_integer(v[g]));
	return o;
}

static json_t *limit_json(const struct pool_limit *l)
{
	char text[CONFIG_POOL_LIMIT_MAX];

	pool_limit_format(l, text, sizeof text);
	return json_string(text);
}

json_t *jobs_cmd_pool(struct jobs *js, json_t *req, struct px_error *err)
{
	const struct proteusd_config *cfg = js->s.cfg;
	struct jobs_pool *p = js->pool;
	struct pool_limits l;
	struct pool_use g = going_now(js), u = use_with(js, g);
	uint64_t now = px_now_mono_us();
	json_t *a = json_array(), *o;

	(void)req;
	limits(js, &l);
	for (struct job *j = js->list; a && j; j = j->next) {
		json_t *x;

		if (j->run.state != STORE_JOB_RUNNING &&
		    j->run.state != STORE_JOB_QUEUED)
			continue;
		x = job_pool_json(j);
		if (!x)
			continue;
		json_object_set_new(x, "job", json_integer(j->id));
		json_object_set_new(x, "name", json_string(j->req.spec.name));
		json_object_set_new(x, "state", json_string(
			store_job_state_name(j->run.state)));
		json_array_append_new(a, x);
	}
	o = json_pack("{s:s, s:f, s:I, s:I, s:o, s:I, s:b, s:{s:o, s:o, s:o}, "
		      "s:{s:o, s:o}, s:{s:o, s:o}, s:{s:o, s:o, s:f}, "
		      "s:{s:I, s:I}, s:o}",
		"arbiter", arb_name((enum arb_kind)cfg->pool_arbiter),
		"fairness", cfg->pool_fairness_f,
		"lease_seconds", (json_int_t)cfg->pool_lease_seconds,
		"rounds", (json_int_t)p->rounds,
		"next_round_s", p->timer > 0 && p->next_us > now ?
			json_real((double)(p->next_us - now) / 1e6) :
			json_null(),
		"quota_errors", (json_int_t)p->learned_n,
		"limited", pool_limits_any(&l),
		"configured",
		"spot_vcpus", limit_json(&cfg->pool_limits.spot),
		"ondemand_vcpus", limit_json(&cfg->pool_limits.ondemand),
		"usd_per_hour", cfg->pool_limits.uusd_per_hour < 0 ?
			json_null() : json_real((double)cfg->pool_limits.
					       uusd_per_hour / PX_UUSD_PER_USD),
		"learned",
		"spot_vcpus", limit_json(&p->learned_spot),
		"ondemand_vcpus", limit_json(&p->learned_od),
		"in_force",
		"spot_vcpus", limit_json(&l.spot),
		"ondemand_vcpus", limit_json(&l.ondemand),
		"used",
		"spot_vcpus", by_group(u.spot, u.spot_total, &l.spot, false),
		"ondemand_vcpus", by_group(u.ondemand, u.ondemand_total,
					   &l.ondemand, false),
		"usd_per_hour", (double)u.uusd_per_hour / PX_UUSD_PER_USD,
		"releasing",
		"spot_vcpus", (json_int_t)g.spot_total,
		"ondemand_vcpus", (json_int_t)g.ondemand_total,
		"jobs", a ? a : json_null());
	if (!o)
		px_errorf(err, PX_ENOMEM, "out of memory");
	return o;
}

/* One market's use and limits by group, as samples. */
static void metrics_market(struct prom *pr, const char *market,
			   const int64_t *used, int64_t total,
			   const struct pool_limit *lim)
{
	const char *pu = "proteus_pool_vcpus_used";

	prom_sample(pr, pu, (double)total, "market", market, "group", "all",
		    NULL);
	for (int g = 0; g < POOL_GROUPS; g++)
		if (used[g] || lim->group[g] >= 0)
			prom_sample(pr, pu, (double)used[g], "market", market,
				    "group",
				    pool_group_name((enum pool_group)g), NULL);
}

static void metrics_limits(struct prom *pr, const char *market,
			   const struct pool_limit *lim)
{
	const char *pl = "proteus_pool_vcpus_limit";

	if (lim->total >= 0)
		prom_sample(pr, pl, (double)lim->total, "market", market,
			    "group", "all", NULL);
	for (int g = 0; g < POOL_GROUPS; g++)
		if (lim->group[g] >= 0)
			prom_sample(pr, pl, (double)lim->group[g], "market",
				    market, "group",
				    pool_group_name((enum pool_group)g), NULL);
}

void jobs_pool_metrics(struct jobs *js, struct prom *pr)
{
	struct pool_limits l;
	struct pool_use u = use_now(js);
	char id[24];

	limits(js, &l);
	prom_family(pr, "proteus_pool_vcpus_used", "gauge", "vCPUs the "
		    "jobs hold in the pool, or let go and the provider has "
		    "not yet ended, by market (spot, on-demand) and quota "
		    "group (all: the total).");
	metrics_market(pr, "spot", u.spot, u.spot_total, &l.spot);
	metrics_market(pr, "on-demand", u.ondemand, u.ondemand_total,
		       &l.ondemand);
	prom_family(pr, "proteus_pool_vcpus_limit", "gauge", "The pool's "
		    "limits in force (configured, or learned from EC2's quota "
		    "errors where lower), by market and group; absent where "
		    "none.");
	metrics_limits(pr, "spot", &l.spot);
	metrics_limits(pr, "on-demand", &l.ondemand);
	prom_family(pr, "proteus_pool_usd_per_hour", "gauge", "What the "
		    "pool's instances cost an hour at their prices now.");
	prom_sample(pr, "proteus_pool_usd_per_hour",
		    (double)u.uusd_per_hour / PX_UUSD_PER_USD, NULL);
	prom_family(pr, "proteus_pool_quota_errors_total", "counter",
		    "EC2 quota errors that lowered a learned limit.");
	prom_sample(pr, "proteus_pool_quota_errors_total",
		    (double)js->pool->learned_n, NULL);
	prom_family(pr, "proteus_job_rho", "gauge", "A job's finish-time "
		    "fairness at its share, the last round's (absent until "
		    "one, or where it cannot progress).");
	for (struct job *j = js->list; j; j = j->next) {
		snprintf(id, sizeof id, "%" PRId64, j->id);
		if (j->sh.member && isfinite(j->sh.rho))
			prom_sample(pr, "proteus_job_rho", j->sh.rho, "job",
				    id, NULL);
	}
	prom_family(pr, "proteus_job_pool_share_vcpus", "gauge", "The spot "
		    "vCPUs a job's share of the pool lets it hold (absent "
		    "without a limit).");
	for (struct job *j = js->list; j; j = j->next) {
		snprintf(id, sizeof id, "%" PRId64, j->id);
		if (j->sh.member && j->sh.pm.shared)
			prom_sample(pr, "proteus_job_pool_share_vcpus",
				    (double)(j->sh.pm.share *
					     j->sh.pm.unit_vcpus), "job", id,
				    NULL);
	}
}
