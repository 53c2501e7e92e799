/* sim.c -- the `sim` world: a virtual clock that jumps event to event over
 * a replayed market and drives the controller (controller.h) with the job's
 * work model (see sim.h, docs/simulate.md and docs/controller.md).  The
 * world's own part: when instances become ready, are warned and evicted
 * (the trace's prices against the bid; per-second interruptions from the
 * job's hazard), and how much work the fleet does and loses. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../bidbrain/oracle.h"
#include "../controller.h"
#include "../evq.h"
#include "sim.h"
#include "../world.h"

struct sim_plan {
	struct sim_setup setup;
	struct plan *plan;
	const struct pol_env *env;
	int64_t start_s, end_s;
};

enum px_err sim_plan_new(const struct sim_setup *setup, struct sim_plan **ret,
			 struct px_error *err)
{
	struct plan_setup ps = {
		.ms = setup->ms, .od = setup->od, .job = setup->job,
		.billing = setup->billing, .start_s = setup->start_s,
		.end_s = setup->end_s, .trace_first_s = setup->trace_first_s,
		.trace_last_s = setup->trace_last_s, .seed = setup->seed,
		.advisor = setup->advisor,
	};
	struct sim_plan *p = px_calloc(1, sizeof *p);
	enum px_err e;

	if (!p)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	e = plan_new(&ps, &p->plan, err);
	if (e != PX_OK) {
		free(p);
		return e;
	}
	p->setup = *setup;
	p->env = plan_env(p->plan);
	p->start_s = plan_start(p->plan);
	p->end_s = plan_end(p->plan);
	*ret = p;
	return PX_OK;
}

void sim_plan_free(struct sim_plan *p)
{
	if (!p)
		return;
	plan_free(p->plan);
	free(p);
}

int64_t sim_plan_start(const struct sim_plan *p)
{
	return p->start_s;
}

int64_t sim_plan_end(const struct sim_plan *p)
{
	return p->end_s;
}

const struct pol_env *sim_plan_env(const struct sim_plan *p)
{
	return p->env;
}

/* ---- the run: the sim world ---- */

enum ev_kind { EV_PRICE, EV_READY, EV_WARN, EV_EVICT, EV_HOUR, EV_TICK };

/* The world's side of one instance the controller launched. */
struct winst {
	uint64_t id;
	double speed;            /* its type's speed */
	int64_t ready_s;         /* contributes work from here */
	int64_t warn_s;          /* MARKET_NONE when not scheduled */
	int64_t evict_s;
	bool ready, warned;
};

struct run {
	const struct sim_plan *p;
	const struct pol_env *env;
	struct ctrl *c;
	struct winst *v;
	size_t n, cap;
	struct evq q;
	int64_t now;
	double work, rate, s_contrib;
	int n_contrib;
	/* re-forms (reform(), docs/simulate.md "Re-forms"): the fleet does no
	 * work before pause_end; the instant of the last change, whether it
	 * is the group's first forming and whether it was counted; ending:
	 * the run's end releases the fleet (no re-form) */
	double pause_end;
	int64_t chg_s;
	bool formed, chg_first, chg_counted, ending;
	bool finished;            /* finish() ran */
	/* the pool's share (sim_job_share): the decision's spot_max */
	bool shared;
	struct pol_scaling share;
	int64_t reforms;
	double reform_lost;       /* work-hours the pauses cost */
	struct sim_result *res;
	struct px_error *err;
};

/* Queue an event unless it falls after the window. */
static enum px_err heap_push(struct run *r, int64_t t, enum ev_kind k,
			     uint64_t id, struct px_error *err)
{
	return t > r->p->end_s ? PX_OK : evq_push(&r->q, t, k, id, err);
}

static struct winst *find_inst(struct run *r, uint64_t id)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].id == id)
			return &r->v[i];
	return NULL;
}

static void drop_inst(struct run *r, struct winst *w)
{
	*w = r->v[--r->n];
}

static void update_rate(struct run *r)
{
	r->rate = jobspec_fleet_rate(r->env->job, r->n_contrib, r->s_contrib);
}

/* The working set just changed (an instance joined or left; r->rate is
 * the rate after it).  A program's group re-forms: every member waits
 * restart_seconds (the job spec's), then goes on, so the fleet does no
 * work until restart_seconds after the change, at whatever rate it has
 * meanwhile.  The rule (docs/simulate.md, "Re-forms"):
 *  - the changes of one instant are one re-form (a fleet launched
 *    together joins together), counted once;
 *  - the group's first forming is its start, not a re-form: the first
 *    instant at which the working set is non-empty costs nothing more
 *    than its startup_seconds;
 *  - a change that leaves no one working costs nothing (no one waits);
 *    a later join, to a group that formed before, is a re-form;
 *  - the run's end (the controller releasing everything) is none;
 *  - overlapping pauses do not stack: a change inside a pause moves its
 *    end to restart_seconds after the change (the group re-forms again),
 *    so the fleet is idle over the union of the windows [t, t + R).
 * So one re-form alone costs exactly restart_seconds x the rate after it.
 * restart_seconds 0 (the default) changes nothing: this returns first. */
static void reform(struct run *r)
{
	double rs = r->env->job->restart_seconds;
	double end;

	if (!(rs > 0) || r->ending)
		return;
	if (r->now != r->chg_s) {
		r->chg_s = r->now;
		r->chg_first = !r->formed;
		r->chg_counted = false;
	}
	if (r->n_contrib == 0)
		return;
	r->formed = true;
	if (r->chg_first)
		return;
	if (!r->chg_counted) {
		r->reforms++;
		r->chg_counted = true;
	}
	end = (double)r->now + rs;
	if (end > r->pause_end)
		r->pause_end = end;
}

/* An instance starts contributing work. */
static void join(struct run *r, struct winst *w)
{
	w->ready = true;
	r->n_contrib++;
	r->s_contrib += w->speed;
	update_rate(r);
	reform(r);
}

/* Seconds of [now, t) the fleet is paused by a re-form (0 when none). */
static double paused_s(const struct run *r, int64_t t)
{
	double p = r->pause_end - (double)r->now;

	if (!(p > 0))
		return 0;
	return p < (double)(t - r->now) ? p : (double)(t - r->now);
}

/* The clock moves to t > now: the work at the rate, less the paused
 * part, which is the re-forms' lost work. */
static void advance(struct run *r, int64_t t)
{
	double p = paused_s(r, t);

	if (p > 0) {
		r->reform_lost += r->rate * p / 3600;
		r->work += r->rate * ((double)(t - r->now) - p) / 3600;
	} else {
		r->work += r->rate * (double)(t - r->now) / 3600;
	}
	r->now = t;
}

/* The instance stops contributing; lose its unsynced work. */
static void stop_contrib(struct run *r, struct winst *w, bool lose)
{
	if (!w->ready)
		return;
	if (lose && r->s_contrib > 0) {
		double share = r->rate * w->speed / r->s_contrib;
		double lost_s = pol_loss_s(r->env);
		if (lost_s > r->now - w->ready_s)
			lost_s = (double)(r->now - w->ready_s);
		r->work -= share * lost_s / BILLING_HOUR_S;
		if (r->work < 0)
			r->work = 0;
	}
	w->ready = false;
	r->n_contrib--;
	r->s_contrib -= w->speed;
	if (r->n_contrib == 0)
		r->s_contrib = 0;
	update_rate(r);
	reform(r);
}

/* world op: the instance runs from now.  Its eviction notice comes when
 * the price first rises above the bid or, per-second, at an exponential
 * interruption time drawn from (seed, id). */
static enum px_err w_acquire(void *ctx, const struct world_req *q,
			     struct px_error *err)
{
	struct run *r = ctx;
	const struct pol_env *env = r->env;
	struct winst *w;
	enum px_err e;

	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct winst *a = px_reallocarray(r->v, cap, sizeof *a);
		if (!a)
			return px_errorf(err, PX_ENOMEM, "out of memory");
		r->v = a;
		r->cap = cap;
	}
	w = &r->v[r->n++];
	memset(w, 0, sizeof *w);
	w->id = q->id;
	w->speed = env->types[q->type].speed;
	w->ready_s = r->now + env->job->startup_seconds;
	w->warn_s = w->evict_s = MARKET_NONE;
	if (q->market >= 0)
		w->warn_s = world_notice_at(env, &r->p->setup.ms->v[
			env->markets[q->market].market], q->type, q->id,
			r->now, q->bid_uusd);
	if (w->ready_s <= r->now) {
		join(r, w);
	} else if ((e = heap_push(r, w->ready_s, EV_READY, q->id, err)) !=
		   PX_OK) {
		return e;
	}
	int64_t warn_s = w->warn_s;

	/* the controller opens the bill and asks for its hour timer (after
	 * READY, before WARN: same-instant events keep this order) */
	e = ctrl_launched(r->c, r->now, q->id);
	if (e != PX_OK)
		return e;  /* the message is in err, the controller's */
	if (warn_s != MARKET_NONE)
		e = heap_push(r, warn_s, EV_WARN, q->id, err);
	return e;
}

/* world op: the controller ended it (policy or job end). */
static enum px_err w_release(void *ctx, uint64_t id, struct px_error *err)
{
	struct run *r = ctx;
	struct winst *w = find_inst(r, id);

	(void)err;
	if (w) {
		stop_contrib(r, w, false);
		drop_inst(r, w);
	}
	return PX_OK;
}

/* world op: a controller timer, in the one event queue. */
static enum px_err w_timer(void *ctx, int64_t t_s, enum ctrl_timer_kind kind,
			   uint64_t id, struct px_error *err)
{
	(void)kind;
	return heap_push(ctx, t_s, EV_HOUR, id, err);
}

/* The controller's half only: simulate drives the sim world itself
 * (sim_run), so the daemon's half is NULL. */
const struct world_ops sim_world_ops = {
	.name = "sim",
	.acquire = w_acquire,
	.release = w_release,
	.timer = w_timer,
	.no_explore = true,
	.no_jobs = "is no world for jobs: simulations run with "
		   "'proteusctl simulate'",
};

/* A controller call's result, with its message moved to the run's. */
static enum px_err cc(struct run *r, enum px_err e)
{
	if (e != PX_OK && r->err)
		px_errorf(r->err, e, "%s", ctrl_error(r->c)->msg);
	return e;
}

static enum px_err record(struct run *r)
{
	struct sim_result *res = r->res;
	const struct pol_fleet *f;
	struct sim_point *pt;
	int spot = 0, od = 0;
	int64_t cost = ctrl_cost(r->c, r->now);

	if (!r->p->setup.series)
		return PX_OK;
	if (res->n_series && res->series[res->n_series - 1].t_s == r->now) {
		pt = &res->series[res->n_series - 1];
	} else {
		if ((res->n_series & (res->n_series - 1)) == 0) {
			size_t cap = res->n_series ? res->n_series * 2 : 64;
			struct sim_point *v = px_reallocarray(res->series,
							      cap, sizeof *v);
			if (!v)
				return px_errorf(r->err, PX_ENOMEM,
						 "out of memory");
			res->series = v;
		}
		pt = &res->series[res->n_series++];
	}
	f = ctrl_fleet(r->c);
	for (size_t i = 0; i < f->n; i++) {
		spot += f->v[i].market >= 0 && !f->v[i].warned;
		od += f->v[i].market < 0;
	}
	pt->t_s = r->now;
	pt->cost_uusd = cost;
	pt->spot = spot;
	pt->ondemand = od;
	pt->work_done_h = r->work;
	return PX_OK;
}

/* Handle one popped event; sets the world's bits (price, tick) in *why. */
static enum px_err handle(struct run *r, const struct evq_ev *ev,
			  unsigned *why)
{
	const struct pol_env *env = r->env;
	struct winst *w;
	uint64_t id = ev->id;

	switch (ev->kind) {
	case EV_PRICE: {
		const struct market *m = &r->p->setup.ms->v[
			env->markets[ev->id].market];
		*why |= POL_WHY_PRICE;
		return heap_push(r, market_next_change(m, r->now), EV_PRICE,
				 ev->id, r->err);
	}
	case EV_TICK:
		*why |= POL_WHY_TICK;
		return heap_push(r, r->now + env->job->tick_seconds, EV_TICK,
				 0, r->err);
	case EV_HOUR:
		return cc(r, ctrl_timer(r->c, r->now, CTRL_TIMER_HOUR, id));
	default:
		break;
	}
	w = find_inst(r, id);
	if (!w)
		return PX_OK;
	switch (ev->kind) {
	case EV_READY:
		if (w->ready || w->warned)
			return PX_OK;
		join(r, w);
		return cc(r, ctrl_ready(r->c, r->now, id));
	case EV_WARN:
		if (w->warned || w->warn_s != r->now)
			return PX_OK;
		if (env->warning_s <= 0) {
			stop_contrib(r, w, true);
			drop_inst(r, w);
			return cc(r, ctrl_gone(r->c, r->now, id,
					       "no warning"));
		}
		w->warned = true;
		stop_contrib(r, w, true);
		w->evict_s = r->now + env->warning_s;
		int64_t evict_s = w->evict_s;
		enum px_err e = cc(r, ctrl_warned(r->c, r->now, id, evict_s));
		if (e != PX_OK || evict_s > r->p->end_s)
			return e;
		return heap_push(r, evict_s, EV_EVICT, id, r->err);
	case EV_EVICT:
		if (w->evict_s != r->now)
			return PX_OK;
		stop_contrib(r, w, true);
		drop_inst(r, w);
		return cc(r, ctrl_gone(r->c, r->now, id, "price above bid or "
				       "capacity"));
	default:
		return PX_OK;
	}
}

/* The figures of a finished run, each finite and not negative (the job
 * spec's bounds and run_loop's overflow check keep them so; this says
 * which one is not, rather than print it). */
static enum px_err check_result(const struct sim_result *res,
				struct px_error *err)
{
	const struct {
		const char *name;
		double v;
	} f[] = {
		{"cost_usd", res->cost_usd},
		{"runtime_hours", res->runtime_hours},
		{"work_done_hours", res->work_done_hours},
		{"cost_per_work_usd", res->cost_per_work_usd},
		{"instance_hours", res->instance_hours},
		{"free_hours", res->free_hours},
		{"reform_lost_hours", res->reform_lost_hours},
	};

	for (size_t i = 0; i < sizeof f / sizeof *f; i++)
		if (!isfinite(f[i].v) || f[i].v < 0)
			return px_errorf(err, PX_EINVAL, "%s %g is out of "
					 "range: the job cannot be simulated "
					 "in this window", f[i].name, f[i].v);
	if (res->cost_uusd < 0 || res->evictions < 0 ||
	    res->instances_launched < 0 || res->reforms < 0)
		return px_errorf(err, PX_EINVAL, "a count or the cost is "
				 "negative: the job cannot be simulated in "
				 "this window");
	return PX_OK;
}

const char *sim_stop_name(enum sim_stop s)
{
	static const char *const names[] = {
		[SIM_STOP_DONE] = "done", [SIM_STOP_BUDGET] = "budget",
		[SIM_STOP_DEADLINE] = "deadline", [SIM_STOP_WINDOW] = "window",
	};

	return (unsigned)s <= SIM_STOP_WINDOW ? names[s] : "?";
}

/* Why a run that is not done ends at the run's end: the deadline when it
 * comes before the window's end. */
static enum sim_stop end_stop(const struct sim_plan *p, int64_t end)
{
	return end < p->end_s ? SIM_STOP_DEADLINE : SIM_STOP_WINDOW;
}

static enum px_err finish(struct run *r, enum sim_stop stop)
{
	bool completed = stop == SIM_STOP_DONE;
	struct sim_result *res = r->res;
	const struct ctrl_stats *st = ctrl_stats(r->c);
	int64_t cost;
	enum px_err e;

	r->ending = true;
	r->finished = true;
	e = cc(r, ctrl_finish(r->c, r->now, completed, &cost));
	if (e == PX_OK)
		e = record(r);
	if (e != PX_OK)
		return e;
	res->completed = completed;
	res->stop = stop;
	res->cost_uusd = cost;
	res->cost_usd = (double)cost / PX_UUSD_PER_USD;
	res->runtime_hours = (double)(r->now - r->p->start_s) /
			     BILLING_HOUR_S;
	res->work_done_hours = r->work;
	res->cost_per_work_usd = r->work > 0 ? res->cost_usd / r->work : 0;
	res->evictions = st->evictions;
	res->instances_launched = st->instances_launched;
	res->instance_hours = st->instance_hours;
	res->free_hours = st->free_hours;
	res->decisions = st->decisions;
	res->reforms = r->reforms;
	res->reform_lost_hours = r->reform_lost;
	return check_result(res, r->err);
}

/* The run through the shared event driver (world.h). */
static enum px_err drive_handle(void *w, const struct evq_ev *ev,
				unsigned *why, struct px_error *err)
{
	(void)err;               /* the run's own, r->err */
	return handle(w, ev, why);
}

static void drive_progress(void *w, struct ctrl_progress *ret)
{
	const struct run *r = w;

	*ret = (struct ctrl_progress){.work_done_h = r->work,
				      .rate_h = r->rate,
				      .scaling = r->shared ? &r->share : NULL};
}

static enum px_err drive_books(void *w, int64_t t, struct px_error *err)
{
	(void)t;                 /* r->now */
	(void)err;
	return record(w);
}

/* Whether the work is done at the fleet's rate (after the pause of a
 * re-form, if one is on) at or before lim, and when (*ret).  The seconds
 * to finish (tolerance for rounding in the accumulated work) are
 * compared before they become a time: a rate too slow to finish inside
 * the window must not overflow the clock. */
static bool done_at(const struct run *r, int64_t lim, int64_t *ret)
{
	double left = r->env->job->work_hours - r->work;
	double p = paused_s(r, INT64_MAX), ds;

	if (!(r->rate > 0))
		return false;
	if (left <= 0) {
		*ret = r->now;
		return r->now <= lim;
	}
	ds = p > 0 ? ceil(p + left * 3600 / r->rate - 1e-6)
		   : ceil(left * 3600 / r->rate - 1e-6);
	if (!(ds <= (double)(lim - r->now)))
		return false;
	*ret = r->now + (int64_t)ds;
	return true;
}

/* The run's first decision, at the plan's start. */
static enum px_err run_begin(struct run *r, unsigned wants)
{
	const struct sim_plan *p = r->p;
	const struct jobspec *j = r->env->job;
	struct ctrl_progress pg;
	enum px_err e;

	r->now = p->start_s;
	for (size_t i = 0; (wants & POL_WHY_PRICE) && i < r->env->n_markets;
	     i++) {
		const struct market *m = &p->setup.ms->v[
			r->env->markets[i].market];
		e = heap_push(r, market_next_change(m, r->now), EV_PRICE, i,
			      r->err);
		if (e != PX_OK)
			return e;
	}
	e = heap_push(r, r->now + j->tick_seconds, EV_TICK, 0, r->err);
	drive_progress(r, &pg);
	if (e == PX_OK)
		e = cc(r, ctrl_step(r->c, r->now, POL_WHY_START, &pg));
	if (e == PX_OK)
		e = record(r);
	/* a budget that pays for no instance ends the run at its start */
	if (e == PX_OK && ctrl_stop(r->c, r->now, &pg) == CTRL_STOP_BUDGET)
		return finish(r, SIM_STOP_BUDGET);
	return e;
}

/* The instant of the run's next step: its next event, its end, or when
 * its work is done before either; INT64_MAX once it finished. */
static int64_t run_next(const struct run *r)
{
	int64_t tn = r->q.n ? evq_top(&r->q)->t : INT64_MAX;
	int64_t end = ctrl_end(r->c), lim = tn < end ? tn : end, td;

	if (r->finished)
		return INT64_MAX;
	if (done_at(r, lim, &td))
		return td;
	return tn > end ? end : tn;
}

/* The run's next step (at run_next). */
static enum px_err run_instant(struct run *r)
{
	const struct jobspec *j = r->env->job;
	int64_t tn = r->q.n ? evq_top(&r->q)->t : INT64_MAX;
	int64_t end = ctrl_end(r->c), lim = tn < end ? tn : end, td;
	const struct world_drive drive = {
		.c = r->c, .q = &r->q, .w = r, .handle = drive_handle,
		.progress = drive_progress, .books = drive_books,
	};
	struct ctrl_progress pg;
	enum px_err e;

	if (done_at(r, lim, &td)) {
		r->reform_lost += r->rate * paused_s(r, td) / 3600;
		r->work = j->work_hours;
		r->now = td;
		return finish(r, SIM_STOP_DONE);
	}
	if (tn > end) {
		advance(r, end);
		return finish(r, end_stop(r->p, end));
	}
	advance(r, tn);
	e = world_drive_instant(&drive, r->now, &pg, r->err);
	if (e == PX_OK && ctrl_stop(r->c, r->now, &pg) == CTRL_STOP_BUDGET)
		return finish(r, SIM_STOP_BUDGET);
	return e;
}

static enum px_err run_loop(struct run *r, unsigned wants)
{
	enum px_err e = run_begin(r, wants);

	while (e == PX_OK && !r->finished)
		e = run_instant(r);
	return e;
}

/* ---- the oracle ---- */

static enum px_err or_init(const struct pol_env *env, void **ret_state,
			   struct px_error *err)
{
	(void)env;
	(void)ret_state;
	return px_errorf(err, PX_EINVAL, "the oracle sees the future: it "
			 "runs only in simulate");
}

static enum px_err or_decide(void *state, const struct pol_input *in,
			     struct pol_actions *out, struct px_error *err)
{
	(void)state;
	(void)in;
	(void)out;
	return px_errorf(err, PX_EINVAL, "the oracle does not decide");
}

static void or_fini(void *state)
{
	(void)state;
}

const struct policy_ops sim_oracle_ops = {
	.name = "oracle",
	.summary = "hindsight lower bound on the cost of finishing the job "
		   "(simulate only)",
	.wants = 0,
	.init = or_init,
	.decide = or_decide,
	.fini = or_fini,
};

const struct policy_ops sim_oracle_paid_ops = {
	.name = "oracle-paid",
	.summary = "the hindsight bound when no bill is ever waived "
		   "(simulate only)",
	.wants = 0,
	.init = or_init,
	.decide = or_decide,
	.fini = or_fini,
};

/* The end of a run of this plan: the window's end or the deadline. */
static int64_t plan_run_end(const struct sim_plan *p)
{
	const struct jobspec *j = p->env->job;
	int64_t end = p->end_s;

	if (j->deadline_hours > 0 &&
	    p->start_s + (int64_t)(j->deadline_hours * 3600) < end)
		end = p->start_s + (int64_t)(j->deadline_hours * 3600);
	return end;
}

static enum px_err run_oracle(const struct sim_plan *p, bool paid_only,
			      struct sim_result *res, struct px_error *err)
{
	const struct pol_env *env = p->env;
	struct oracle_setup os = {
		.env = env, .ms = p->setup.ms, .start_s = p->start_s,
		.end_s = plan_run_end(p),
		.paid_only = paid_only,
	};
	size_t nm = env->n_markets ? env->n_markets : 1;
	int64_t **ev = px_calloc(nm, sizeof *ev);
	size_t *nev = px_calloc(nm, sizeof *nev);
	struct oracle_result o;
	enum px_err e = PX_OK;

	if (!ev || !nev)
		e = px_errorf(err, PX_ENOMEM, "out of memory");
	/* the capacity events of every pool: any instance there may be
	 * interrupted at one of them */
	for (size_t i = 0; e == PX_OK && i < env->n_markets; i++)
		e = world_pool_events(env, &p->setup.ms->v[
			env->markets[i].market], env->markets[i].type,
			p->start_s, os.end_s, &ev[i], &nev[i], err);
	os.notices = (const int64_t *const *)ev;
	os.n_notices = nev;
	if (e == PX_OK)
		e = oracle_bound(&os, &o, err);
	for (size_t i = 0; ev && i < env->n_markets; i++)
		free(ev[i]);
	free(ev);
	free(nev);
	if (e != PX_OK)
		return e;
	if (!o.done) {
		/* no plan can finish: nothing to bound, no work done */
		res->stop = end_stop(p, os.end_s);
		res->runtime_hours = (double)(os.end_s - p->start_s) /
				     BILLING_HOUR_S;
		return check_result(res, err);
	}
	if (env->job->budget_uusd >= 0 &&
	    (int64_t)o.cost_uusd > env->job->budget_uusd) {
		/* no plan finishes within the budget: the cheapest one would
		 * be stopped by it, so nothing is spent (docs/simulate.md) */
		res->stop = SIM_STOP_BUDGET;
		return check_result(res, err);
	}
	res->completed = true;
	res->cost_uusd = (int64_t)o.cost_uusd;
	res->cost_usd = (double)res->cost_uusd / PX_UUSD_PER_USD;
	res->runtime_hours = (double)(o.end_s - p->start_s) / BILLING_HOUR_S;
	res->work_done_hours = env->job->work_hours;
	res->cost_per_work_usd = res->cost_usd / res->work_done_hours;
	res->instance_hours = o.instance_hours;
	res->free_hours = o.free_hours;
	if (p->setup.series) {
		res->series = px_calloc(2, sizeof *res->series);
		if (!res->series)
			return px_errorf(err, PX_ENOMEM, "out of memory");
		res->n_series = 2;
		res->series[0] = (struct sim_point){.t_s = p->start_s};
		res->series[1] = (struct sim_point){
			.t_s = o.end_s, .cost_uusd = res->cost_uusd,
			.work_done_h = res->work_done_hours,
		};
	}
	return check_result(res, err);
}

/* The run of policy over plan, its controller built (gate may be NULL). */
static enum px_err run_init(struct run *r, const struct sim_plan *plan,
			    const struct policy_ops *policy,
			    const struct ctrl_gate *gate,
			    struct sim_result *res, struct px_error *err)
{
	struct ctrl_setup cs = {
		.env = plan->env, .ms = plan->setup.ms, .policy = policy,
		.world = &sim_world_ops, .start_s = plan->start_s,
		.window_end_s = plan->end_s,
		.sink = plan->setup.sink, .sink_ctx = plan->setup.sink_ctx,
		.gate = gate,
	};

	memset(r, 0, sizeof *r);
	memset(res, 0, sizeof *res);
	snprintf(res->policy, sizeof res->policy, "%s", policy->name);
	r->p = plan;
	r->env = plan->env;
	r->chg_s = INT64_MIN;     /* no change yet */
	r->res = res;
	r->err = err;
	r->share.spot_max = -1;
	cs.world_ctx = r;
	return ctrl_new(&cs, &r->c, err);
}

static void run_release(struct run *r)
{
	ctrl_free(r->c);
	free(r->v);
	evq_release(&r->q);
}

enum px_err sim_run(const struct sim_plan *plan,
		    const struct policy_ops *policy, struct sim_result *ret,
		    struct px_error *err)
{
	struct run r;
	struct sim_result res;
	enum px_err e;

	if (policy == &sim_oracle_ops || policy == &sim_oracle_paid_ops) {
		memset(&res, 0, sizeof res);
		snprintf(res.policy, sizeof res.policy, "%s", policy->name);
		e = run_oracle(plan, policy == &sim_oracle_paid_ops, &res,
			       err);
		if (e != PX_OK) {
			sim_result_release(&res);
			return e;
		}
		*ret = res;
		return PX_OK;
	}
	e = run_init(&r, plan, policy, NULL, &res, err);
	if (e != PX_OK)
		return e;
	e = run_loop(&r, policy->wants);
	run_release(&r);
	if (e != PX_OK) {
		sim_result_release(&res);
		return e;
	}
	*ret = res;
	return PX_OK;
}

/* ---- one job of several on one clock ---- */

struct sim_job {
	struct run r;
	struct sim_result res;
	const struct policy_ops *policy;
	bool started;
	struct px_error err;
};

/* The job's error (its run's), copied to the caller's. */
static enum px_err job_err(struct sim_job *j, enum px_err e,
			   struct px_error *err)
{
	if (e != PX_OK && err)
		*err = j->err;
	return e;
}

enum px_err sim_job_new(const struct sim_plan *plan,
			const struct policy_ops *policy,
			const struct ctrl_gate *gate, struct sim_job **ret,
			struct px_error *err)
{
	struct sim_job *j;
	enum px_err e;

	if (policy == &sim_oracle_ops || policy == &sim_oracle_paid_ops)
		return px_errorf(err, PX_EINVAL, "%s reads the future: it "
				 "runs alone, not in a pool", policy->name);
	if (!(j = px_calloc(1, sizeof *j)))
		return px_errorf(err, PX_ENOMEM, "out of memory");
	j->policy = policy;
	e = run_init(&j->r, plan, policy, gate, &j->res, &j->err);
	if (e != PX_OK) {
		*err = j->err;
		free(j);
		return e;
	}
	*ret = j;
	return PX_OK;
}

enum px_err sim_job_start(struct sim_job *j, struct px_error *err)
{
	j->started = true;
	return job_err(j, run_begin(&j->r, j->policy->wants), err);
}

int64_t sim_job_next(const struct sim_job *j)
{
	return run_next(&j->r);
}

enum px_err sim_job_step(struct sim_job *j, struct px_error *err)
{
	if (j->r.finished)
		return PX_OK;
	return job_err(j, run_instant(&j->r), err);
}

void sim_job_advance(struct sim_job *j, int64_t t)
{
	if (!j->r.finished && t > j->r.now)
		advance(&j->r, t);
}

enum px_err sim_job_share(struct sim_job *j, int spot_max,
			  int64_t spot_vcpus, struct px_error *err)
{
	if (j->r.finished)
		return PX_OK;
	j->r.shared = true;
	j->r.share.spot_max = spot_max;
	j->r.share.spot_vcpus_set = spot_vcpus >= 0;
	j->r.share.spot_vcpus = spot_vcpus;
	if (!j->started)
		return PX_OK;     /* its first decision sees it */
	return job_err(j, cc(&j->r, ctrl_wake(j->r.c, j->r.now)), err);
}

struct ctrl *sim_job_ctrl(struct sim_job *j)
{
	return j->r.c;
}

const struct pol_env *sim_job_env(const struct sim_job *j)
{
	return j->r.env;
}

double sim_job_work(const struct sim_job *j)
{
	return j->r.work;
}

double sim_job_rate(const struct sim_job *j)
{
	return j->r.rate;
}

const struct sim_result *sim_job_result(const struct sim_job *j)
{
	return j->r.finished ? &j->res : NULL;
}

void sim_job_free(struct sim_job *j)
{
	if (!j)
		return;
	run_release(&j->r);
	sim_result_release(&j->res);
	free(j);
}

void sim_result_release(struct sim_result *r)
{
	if (!r)
		return;
	free(r->series);
	r->series = NULL;
	r->n_series = 0;
}

bool sim_result_cost_per_work(const struct sim_result *r, double *ret)
{
	if (!(r->work_done_hours > 0) || !isfinite(r->cost_per_work_usd))
		return false;
	*ret = r->cost_per_work_usd;
	return true;
}
