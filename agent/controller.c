/* controller.c -- the decision step for every world (controller.h,
 * docs/controller.md).  Moved out of the simulator: the fleet table, the
 * policy's input, the checks on its actions, the bills, the stop rules. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller.h"

#define FLEET_MAX 100000
/* A refused reliable request is asked again this long after (market s):
 * a world that refuses at once (resting, throttled) is not asked in a
 * loop. */
#define REASK_S 60

/* The controller's side of one instance (beside its public pol_instance,
 * same slot). */
struct cinst {
	struct billing_acct bill;
	bool launched;           /* the world confirmed it: bill open */
	bool ready;              /* contributes work */
	int64_t reserve_uusd;    /* not launched yet: its forced charge as
				  * asked (what the budget keeps for it) */
	bool adopted;            /* taken up after a restart, not yet
				  * counted against a first decision */
	bool rejoining;          /* taken up after a restart, its node not
				  * ready again yet */
};

struct ctrl {
	struct ctrl_setup s;
	const struct pol_env *env;
	void *pstate;
	struct market_cursor *cursor; /* market_view caches */
	int reliable_owed;           /* refused reliable requests to ask
				      * again at the next step */
	int reliable_owed_type;
	int64_t reliable_owed_at;    /* not asked again before this */
	int64_t latest_t;            /* the latest instant of an event */
	int spot_max;                /* the last decision's scaling's (-1:
				      * none): the pool's share when gated */
	/* the policy decides again at wake_at (0: none asked; ctrl_wake),
	 * besides its own triggers: after a refused request of its, not
	 * at its next tick (tick_seconds, 10 market minutes by default);
	 * reask_s doubles from REASK_S with each refusal in a row, up to
	 * the tick, and a launch resets it */
	int64_t wake_at, reask_s;
	int64_t reask_dec;           /* decisions made at the last refusal */
	int64_t *hide_until;         /* per market of ms: resting (NULL
				      * until a world says one rests) */
	struct pol_instance *pub;    /* live instances, compact */
	struct cinst *priv;
	size_t n, cap;
	struct pol_fleet fleet;
	uint64_t next_id;
	int64_t cost_ended, cost_now;
	struct pol_actions acts;
	uint64_t *hour;              /* instances whose hour ended now */
	size_t n_hour, cap_hour;
	unsigned why;                /* bits the world's reports added */
	bool changed;
	int stage;
	/* the budget cap (docs/jobspec.md, "The budget is a cap") */
	bool budget_hit;             /* this step refused or ended an
				      * instance for the budget */
	bool budget_out;             /* nothing more can be paid for */
	bool budget_dirty;           /* the fleet changed: budget_t stale */
	int64_t budget_t;            /* per-second: the last instant the
				      * fleet can be paid for, its timer
				      * set (INT64_MAX: to the end, no
				      * timer; 0: not computed) */
	struct ctrl_stats st;
	struct px_error err;         /* why a call failed (ctrl_error) */
	/* bills closed at our decision, kept for the provider's end time
	 * (ctrl_keep_bills, ctrl_bill_end) */
	bool keep_bills;
	struct kept_bill *kept;
	size_t n_kept, cap_kept;
	/* the ids of launched instances charged so far (a release, an
	 * eviction, a late launch's bill), kept for the run: a late launch
	 * heard again once its kept bill was settled (ctrl_bill_end) or
	 * dropped past KEPT_MAX is not charged twice */
	uint64_t *charged;
	size_t n_charged, cap_charged;
};

/* An instance we ended, its bill as it was before it closed. */
struct kept_bill {
	struct pol_instance v;
	struct billing_acct acct;    /* before the close */
	int64_t closed_s;
	int64_t amount;              /* what the close charged */
	bool unlaunched;             /* ended before the world heard it
				      * launched: ctrl_bill_late says */
};

#define KEPT_MAX 4096            /* the oldest go beyond (never trued up) */

static const char *const ev_names[CTRL_EV_MAX] = {
	[CTRL_EV_DECIDE_ACQUIRE] = "decide-acquire",
	[CTRL_EV_DECIDE_RELEASE] = "decide-release",
	[CTRL_EV_LAUNCH] = "launch",
	[CTRL_EV_REJECT] = "reject",
	[CTRL_EV_READY] = "ready",
	[CTRL_EV_WARNING] = "warning",
	[CTRL_EV_EVICTION] = "eviction",
	[CTRL_EV_RELEASE] = "release",
	[CTRL_EV_DONE] = "done",
	[CTRL_EV_STAGE] = "stage",
	[CTRL_EV_ADOPT] = "adopt",
	[CTRL_EV_BILL_END] = "bill_end",
};

const char *ctrl_event_name(enum ctrl_event_kind k)
{
	return (unsigned)k < CTRL_EV_MAX ? ev_names[k] : "?";
}

static const char *const stop_names[] = {
	[CTRL_RUN] = "running", [CTRL_STOP_DONE] = "done",
	[CTRL_STOP_DEADLINE] = "deadline", [CTRL_STOP_BUDGET] = "budget",
};

const char *ctrl_stop_name(enum ctrl_stop s)
{
	return (unsigned)s <= CTRL_STOP_BUDGET ? stop_names[s] : "?";
}

/* ---- tiers ---- */

int ctrl_stage_for(const struct ctrl_tiers *t, int reliable, int transient,
		   int current)
{
	double ratio, down = 1.0 - t->hysteresis;
	int up;

	if (reliable <= 0)
		return transient > 0 ? 3 : 1;  /* nothing reliable to back */
	ratio = (double)transient / reliable;
	up = ratio >= t->stage3_ratio ? 3 : ratio >= t->stage2_ratio ? 2 : 1;
	if (current < 1 || current > 3 || up >= current)
		return up;
	/* moving down: only once clearly below the current stage's bar */
	if (current == 3 && ratio >= t->stage3_ratio * down)
		return 3;
	if (current >= 2 && ratio >= t->stage2_ratio * down)
		return 2;
	return 1;
}

/* ---- the fleet table ---- */

static const struct market *mkt(const struct ctrl *c, int market)
{
	return &c->s.ms->v[c->env->markets[market].market];
}

static long find_slot(const struct ctrl *c, uint64_t id)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->pub[i].id == id)
			return (long)i;
	return -1;
}

/* Whether slot i is of the reliable tier (an on-demand reliable one). */
static bool in_reliable_tier(const struct ctrl *c, size_t i)
{
	return c->pub[i].reliable && c->pub[i].market < 0;
}

/* ---- the budget ---- */

static bool has_budget(const struct ctrl *c)
{
	return c->env->job->budget_uusd >= 0;
}

/* What one instance started at now is charged at least, whatever happens
 * next: legacy-hourly its first hour, per-second its first 60 s (at the
 * price now; spot: the market's, on-demand: the type's). */
static int64_t forced_charge(const struct ctrl *c, int64_t now, int market,
			     int type)
{
	struct billing_acct a;

	billing_acct_start(&a, c->env->billing, market >= 0 ?
			   &c->s.ms->v[c->env->markets[market].market] : NULL,
			   c->env->types[type].od_uusd, now);
	return billing_acct_end(&a, now, BILLING_END_USER);
}

/* The spend committed at t if the fleet ran unchanged until t and was
 * released then: what has ended, every bill closed by us at t, and the
 * forced charge of every request not answered yet.  Never decreasing in
 * t; what the bills come to is at most this (an eviction only waives). */
static int64_t committed(const struct ctrl *c, int64_t t)
{
	int64_t sum = c->cost_ended;

	for (size_t i = 0; i < c->n; i++) {
		if (!c->priv[i].launched) {
			sum += c->priv[i].reserve_uusd;
			continue;
		}
		struct billing_acct a = c->priv[i].bill;

		sum += billing_acct_end(&a, t, BILLING_END_USER);
	}
	return sum;
}

/* Whether extra more can be committed at now within the budget. */
static bool affords(const struct ctrl *c, int64_t now, int64_t extra)
{
	return !has_budget(c) ||
	       committed(c, now) + extra <= c->env->job->budget_uusd;
}

/* ---- decision time, for every controller of the process ---- */

const double ctrl_decide_bounds[CTRL_DECIDE_BUCKETS] = {
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 1.0,
};
/* atomics: simulate runs controllers on several threads */
static uint64_t decide_n[CTRL_DECIDE_BUCKETS + 1], decide_sum_us;

static void decide_observe(uint64_t us)
{
	size_t b = 0;

	while (b < CTRL_DECIDE_BUCKETS &&
	       (double)us > ctrl_decide_bounds[b] * 1e6)
		b++;
	__atomic_add_fetch(&decide_n[b], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&decide_sum_us, us, __ATOMIC_RELAXED);
}

void ctrl_decide_hist(struct ctrl_decide_hist *ret)
{
	uint64_t cum = 0;

	for (size_t b = 0; b <= CTRL_DECIDE_BUCKETS; b++) {
		cum += __atomic_load_n(&decide_n[b], __ATOMIC_RELAXED);
		if (b < CTRL_DECIDE_BUCKETS)
			ret->le[b] = cum;
	}
	ret->count = cum;
	ret->sum_s = (double)__atomic_load_n(&decide_sum_us,
					     __ATOMIC_RELAXED) / 1e6;
}

static enum px_err emit_ev(struct ctrl *c, const struct ctrl_event *e,
			   struct px_error *err)
{
	if (e->t_s > c->latest_t)
		c->latest_t = e->t_s;
	if (!c->s.sink || c->s.sink(e, c->s.sink_ctx) == PX_OK)
		return PX_OK;
	return px_errorf(err, PX_ECANCELED, "event sink stopped the run at "
			 "%s", ctrl_event_name(e->kind));
}

/* An event about the instance in slot (SIZE_MAX: none). */
/* The event of kind k about instance v (NULL: none). */
static void ev_of(const struct ctrl *c, int64_t now, enum ctrl_event_kind k,
		  const struct pol_instance *v, const char *detail,
		  int64_t amount, struct ctrl_event *e)
{
	*e = (struct ctrl_event){
		.t_s = now, .kind = k, .detail = detail,
		.amount_uusd = amount,
	};
	if (v) {
		e->instance = v->id;
		e->reliable = v->reliable;
		e->type = c->env->types[v->type].name;
		e->bid_uusd = v->bid_uusd;
		if (v->market >= 0) {
			const struct market *m = mkt(c, v->market);

			e->zone = m->zone;
			market_price_at(m, now, &e->price_uusd);
		}
	}
}

static enum px_err emit(struct ctrl *c, int64_t now, enum ctrl_event_kind k,
			size_t slot, const char *detail, int64_t amount,
			struct px_error *err)
{
	struct ctrl_event e;

	if (now > c->latest_t)
		c->latest_t = now;
	if (!c->s.sink)
		return PX_OK;
	ev_of(c, now, k, slot < c->n ? &c->pub[slot] : NULL, detail, amount,
	      &e);
	return emit_ev(c, &e, err);
}

/* The stage for the ready instances now; an event when it moves.  Off
 * when the setup has no tiers (stage2_ratio 0: sim models no PS). */
static enum px_err restage(struct ctrl *c, int64_t now, struct px_error *err)
{
	int r = 0, t = 0, t_old = 0, st, up;

	if (c->s.tiers.stage2_ratio <= 0)
		return PX_OK;
	/* after a restart, the reliable tier's nodes rejoin in any order
	 * with the others: the stage waits for them (a stage computed on
	 * the transients alone would move the shards twice) */
	for (size_t i = 0; i < c->n; i++)
		if (c->priv[i].rejoining && in_reliable_tier(c, i) &&
		    !c->priv[i].ready)
			return PX_OK;
	for (size_t i = 0; i < c->n; i++) {
		if (!c->priv[i].ready || c->pub[i].warned)
			continue;
		if (c->pub[i].reliable) {
			r++;
			continue;
		}
		t++;
		if (now - c->pub[i].ready_s >= c->s.tiers.up_after_s)
			t_old++;
	}
	/* down on what is there; up only on transients that have lasted */
	st = ctrl_stage_for(&c->s.tiers, r, t, c->stage);
	up = ctrl_stage_for(&c->s.tiers, r, t_old, c->stage);
	if (st > c->stage)
		st = up > c->stage ? up : c->stage;
	if (st == c->stage)
		return PX_OK;
	c->stage = st;
	struct ctrl_event e = {.t_s = now, .kind = CTRL_EV_STAGE,
			       .count = st};
	return emit_ev(c, &e, err);
}

/* Remove slot (swap with the last: the fleet's order is part of what
 * policies see, and the simulator's results depend on it). */
static void drop_slot(struct ctrl *c, size_t slot)
{
	if (c->s.gate)
		c->s.gate->hold(c->s.gate->ctx, c->pub[slot].type,
				c->pub[slot].market, -1);
	c->n--;
	if (slot != c->n) {
		c->pub[slot] = c->pub[c->n];
		c->priv[slot] = c->priv[c->n];
	}
	c->changed = true;
}

/* Keep v's bill as it is before it closes at closed_s (ctrl_bill_end);
 * memory short or too many kept: the oldest goes, untrued. */
static bool keep_bill(struct ctrl *c, const struct pol_instance *v,
		      const struct billing_acct *a, int64_t closed_s)
{
	if (c->n_kept == KEPT_MAX) {
		memmove(c->kept, c->kept + 1, --c->n_kept * sizeof *c->kept);
	} else if (c->n_kept == c->cap_kept) {
		size_t cap = c->cap_kept ? 2 * c->cap_kept : 16;
		struct kept_bill *k = px_reallocarray(c->kept, cap,
						      sizeof *k);

		if (!k)
			return false;
		c->kept = k;
		c->cap_kept = cap;
	}
	c->kept[c->n_kept++] = (struct kept_bill){
		.v = *v, .acct = *a, .closed_s = closed_s,
	};
	return true;
}

static bool was_charged(const struct ctrl *c, uint64_t id)
{
	for (size_t i = 0; i < c->n_charged; i++)
		if (c->charged[i] == id)
			return true;
	return false;
}

/* Out of memory: not kept (the kept bill still guards, as before). */
static void mark_charged(struct ctrl *c, uint64_t id)
{
	if (c->n_charged == c->cap_charged) {
		size_t cap = c->cap_charged ? 2 * c->cap_charged : 64;
		uint64_t *a = px_reallocarray(c->charged, cap, sizeof *a);

		if (!a)
			return;
		c->charged = a;
		c->cap_charged = cap;
	}
	c->charged[c->n_charged++] = id;
}

/* End the instance in slot now; provider says who ended it. */
static enum px_err end_inst(struct ctrl *c, int64_t now, size_t slot,
			    bool provider, const char *why,
			    struct px_error *err)
{
	struct cinst *in = &c->priv[slot];
	struct pol_instance *v = &c->pub[slot];
	int64_t amount = 0;
	enum px_err e;
	/* one not launched yet is kept too: its launch may be answered
	 * after this (ctrl_bill_late), and its bill is the provider's */
	bool kept = !provider && c->keep_bills &&
		    keep_bill(c, v, &in->bill, now);

	if (kept)
		c->kept[c->n_kept - 1].unlaunched = !in->launched;
	if (in->launched) {
		mark_charged(c, v->id);
		amount = billing_acct_end(&in->bill, now, provider ?
					  BILLING_END_PROVIDER :
					  BILLING_END_USER);
		if (kept)
			c->kept[c->n_kept - 1].amount = amount;
		c->cost_ended += amount;
		c->st.instance_hours += (double)(now - v->launch_s) /
					BILLING_HOUR_S;
		c->st.free_hours += (double)in->bill.free_s / BILLING_HOUR_S;
	}
	if (provider)
		c->st.evictions++;
	e = emit(c, now, provider ? CTRL_EV_EVICTION : CTRL_EV_RELEASE, slot,
		 why, amount, err);
	drop_slot(c, slot);
	c->budget_dirty = true;
	return e;
}

/* Slot s costs more than the budget leaves: ended as the user's release
 * ("budget") and given back to the world. */
static enum px_err release_for_budget(struct ctrl *c, int64_t now, size_t s,
				      struct px_error *err)
{
	uint64_t id = c->pub[s].id;
	enum px_err e;

	c->budget_hit = true;
	e = end_inst(c, now, s, false, "budget", err);
	return e == PX_OK ? c->s.world->release(c->s.world_ctx, id, err) : e;
}

/* A zeroed slot at the end of the fleet table (not counted in n yet), or
 * NULL (err set). */
static struct pol_instance *new_slot(struct ctrl *c, struct px_error *err)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct pol_instance *a = px_reallocarray(c->pub, cap,
							 sizeof *a);
		if (!a) {
			px_errorf(err, PX_ENOMEM, "out of memory");
			return NULL;
		}
		c->pub = a;
		struct cinst *b = px_reallocarray(c->priv, cap, sizeof *b);
		if (!b) {
			px_errorf(err, PX_ENOMEM, "out of memory");
			return NULL;
		}
		c->priv = b;
		c->cap = cap;
	}
	memset(&c->pub[c->n], 0, sizeof c->pub[c->n]);
	memset(&c->priv[c->n], 0, sizeof c->priv[c->n]);
	return &c->pub[c->n];
}

static enum px_err reask(struct ctrl *c, int64_t now, struct px_error *err);

/* Ask the world for one instance; the world answers with ctrl_launched
 * (sim: before it returns) or ctrl_rejected. */
static enum px_err launch(struct ctrl *c, int64_t now, int market, int type,
			  bool reliable, int64_t bid, struct px_error *err)
{
	const struct pol_env *env = c->env;
	struct pol_instance *v;
	struct world_req req;
	int64_t forced = has_budget(c) ? forced_charge(c, now, market, type)
				       : 0;

	if (market >= 0 && c->hide_until &&
	    now < c->hide_until[env->markets[market].market])
		/* the world found it out of capacity: not asked again yet */
		return emit(c, now, CTRL_EV_REJECT, SIZE_MAX, "the market "
			    "rests after a capacity refusal", 0, err);
	if (!affords(c, now, forced)) {
		/* it would take the committed spend past the budget */
		c->budget_hit = true;
		return emit(c, now, CTRL_EV_REJECT, SIZE_MAX, "budget", 0,
			    err);
	}
	if (c->s.gate) {
		int64_t p = env->types[type].od_uusd;
		const char *why;

		if (market >= 0)
			market_price_at(mkt(c, market), now, &p);
		why = c->s.gate->admit(c->s.gate->ctx, now, type, market, p);
		/* the pool is full now, but what another job let go comes
		 * back as the provider confirms its end (seconds): decided
		 * again soon, as after a world's refusal, not at the tick */
		if (why) {
			enum px_err e = emit(c, now, CTRL_EV_REJECT, SIZE_MAX,
					     why, 0, err);

			return e == PX_OK ? reask(c, now, err) : e;
		}
	}
	if (!(v = new_slot(c, err)))
		return err->code;
	v->id = ++c->next_id;
	v->reliable = reliable;
	v->type = type;
	v->market = market;
	v->bid_uusd = market >= 0 ? bid : 0;
	v->launch_s = now;
	v->ready_s = now + env->job->startup_seconds;
	v->period_end_s = now + BILLING_HOUR_S;
	c->priv[c->n].reserve_uusd = forced;
	c->n++;
	if (c->s.gate)
		c->s.gate->hold(c->s.gate->ctx, type, market, 1);
	c->budget_dirty = true;
	req = (struct world_req){
		.id = v->id, .market = market, .type = type,
		.reliable = reliable, .bid_uusd = v->bid_uusd,
		.type_name = env->types[type].name,
		.zone = market >= 0 ? env->markets[market].zone : NULL,
	};
	return c->s.world->acquire(c->s.world_ctx, &req, err);
}

enum px_err ctrl_launched(struct ctrl *c, int64_t now, uint64_t id)
{
	long s = find_slot(c, id);
	struct px_error *err = &c->err;
	const struct market *m = NULL;
	struct pol_instance *v;
	struct cinst *in;
	int64_t p = 0;
	enum px_err e;

	if (s < 0 || c->priv[s].launched)
		return PX_OK;
	v = &c->pub[s];
	in = &c->priv[s];
	if (v->market >= 0) {
		m = mkt(c, v->market);
		market_price_at(m, now, &p);
	}
	v->launch_s = now;
	v->ready_s = now + c->env->job->startup_seconds;
	v->period_end_s = now + BILLING_HOUR_S;
	billing_acct_start(&in->bill, c->env->billing, m,
			   c->env->types[v->type].od_uusd, now);
	v->hour_uusd = m ? p : c->env->types[v->type].od_uusd;
	in->launched = true;
	c->reask_s = 0;  /* the world grants again: no backoff */
	c->st.instances_launched++;
	c->changed = true;
	c->budget_dirty = true;
	e = emit(c, now, CTRL_EV_LAUNCH, (size_t)s, NULL, 0, err);
	if (e != PX_OK)
		return e;
	if (!affords(c, now, 0))
		/* answered later than asked, at a higher price: what it
		 * forces is paid, nothing more (docs/jobspec.md) */
		return release_for_budget(c, now, (size_t)s, err);
	if (v->ready_s <= now) {
		in->ready = true;
		e = restage(c, now, err);
		if (e != PX_OK)
			return e;
	}
	return c->s.world->timer(c->s.world_ctx, v->period_end_s,
				 CTRL_TIMER_HOUR, id, err);
}

enum px_err ctrl_market_rests(struct ctrl *c, int market, int64_t until_s)
{
	if (market < 0 || (size_t)market >= c->env->n_markets)
		return PX_OK;
	if (!c->hide_until) {
		c->hide_until = px_calloc(c->s.ms->n ? c->s.ms->n : 1,
					  sizeof *c->hide_until);
		if (!c->hide_until)
			return px_errorf(&c->err, PX_ENOMEM, "out of memory");
	}
	c->hide_until[c->env->markets[market].market] = until_s;
	return PX_OK;
}

void ctrl_ids_past(struct ctrl *c, uint64_t id)
{
	if (id > c->next_id)
		c->next_id = id;
}

enum px_err ctrl_adopt(struct ctrl *c, int64_t now,
		       const struct world_req *req, int64_t launched_s,
		       bool ready)
{
	struct px_error *err = &c->err;
	const struct market *m = NULL;
	struct pol_instance *v;
	struct cinst *in;
	int64_t p = 0;
	size_t s;
	enum px_err e;

	if (req->id == CTRL_BUDGET_TIMER_ID || req->id == CTRL_WAKE_TIMER_ID ||
	    find_slot(c, req->id) >= 0)
		return px_errorf(err, PX_EEXIST, "instance %" PRIu64 " is "
				 "held already", req->id);
	if (req->type < 0 || (size_t)req->type >= c->env->n_types ||
	    (req->market >= 0 && (size_t)req->market >= c->env->n_markets) ||
	    launched_s > now)
		return px_errorf(err, PX_EINVAL, "instance %" PRIu64 ": not "
				 "of this job's markets, or launched after "
				 "now", req->id);
	if (req->market >= 0) {
		m = mkt(c, req->market);
		if (!market_price_at(m, launched_s, &p))
			/* the prices known start later: bill from there */
			launched_s = m->n ? m->t_s[0] : now;
		if (launched_s > now)
			launched_s = now;
		market_price_at(m, launched_s, &p);
	}
	if (!(v = new_slot(c, err)))
		return err->code;
	s = c->n++;
	if (c->s.gate)
		c->s.gate->hold(c->s.gate->ctx, req->type, req->market, 1);
	in = &c->priv[s];
	v->id = req->id;
	ctrl_ids_past(c, req->id);
	v->reliable = req->reliable;
	v->type = req->type;
	v->market = req->market;
	v->bid_uusd = req->market >= 0 ? req->bid_uusd : 0;
	v->launch_s = launched_s;
	v->ready_s = ready ? now : now + c->env->job->startup_seconds;
	billing_acct_start(&in->bill, c->env->billing, m,
			   c->env->types[v->type].od_uusd, launched_s);
	v->period_end_s = billing_period_end(&in->bill, now);
	v->hour_uusd = m ? p : c->env->types[v->type].od_uusd;
	in->launched = true;
	in->ready = ready;
	in->adopted = true;
	in->rejoining = !ready;
	c->st.instances_launched++;
	c->changed = true;
	c->budget_dirty = true;
	e = emit(c, launched_s, CTRL_EV_ADOPT, s, "adopted after a restart",
		 0, err);
	if (e == PX_OK && ready)
		e = restage(c, now, err);
	if (e != PX_OK)
		return e;
	return c->s.world->timer(c->s.world_ctx, v->period_end_s,
				 CTRL_TIMER_HOUR, v->id, err);
}

static enum px_err wake(struct ctrl *c, int64_t at, struct px_error *err)
{
	if (c->wake_at && c->wake_at <= at)
		return PX_OK;   /* sooner already asked */
	c->wake_at = at;
	return c->s.world->timer(c->s.world_ctx, at, CTRL_TIMER_HOUR,
				 CTRL_WAKE_TIMER_ID, err);
}

enum px_err ctrl_shed(struct ctrl *c, int64_t now, uint64_t id,
		      const char *why)
{
	long s = find_slot(c, id);
	enum px_err e;

	if (s < 0)
		return PX_OK;
	e = end_inst(c, now, (size_t)s, false, why, &c->err);
	return e == PX_OK ? c->s.world->release(c->s.world_ctx, id, &c->err)
			  : e;
}

enum px_err ctrl_wake(struct ctrl *c, int64_t at)
{
	return wake(c, at, &c->err);
}

/* A request of the policy's was refused (no capacity in its market,
 * throttled, a limit): the policy decides again reask_s from now, with
 * what the refusal taught (a market that rests is hidden from it), not
 * only at its next tick: a fleet short of its spot instances trains
 * slowly on the reliable tier's, and at the default tick of 600 s that
 * is 10 minutes lost to one refused call.  Not at once: a world that
 * refuses at once would loop; reask_s doubles with each refusal in a
 * row, up to the tick. */
static enum px_err reask(struct ctrl *c, int64_t now, struct px_error *err)
{
	int64_t tick = c->env->job->tick_seconds > 0 ?
		       c->env->job->tick_seconds : REASK_S;
	/* in a row: refused again after deciding again (the refusals of
	 * one decision's requests, in one step or as their calls end, are
	 * one) */
	if (!c->reask_s || c->reask_dec != c->st.decisions)
		c->reask_s = !c->reask_s ? REASK_S : c->reask_s * 2;
	if (c->reask_s > tick)
		c->reask_s = tick;
	c->reask_dec = c->st.decisions;
	return wake(c, now + c->reask_s, err);
}

enum px_err ctrl_rejected(struct ctrl *c, int64_t now, uint64_t id,
			  const char *why)
{
	long s = find_slot(c, id);
	struct px_error *err = &c->err;
	bool in_reliable;
	enum px_err e;

	if (s < 0 || c->priv[s].launched)
		return PX_OK;
	in_reliable = in_reliable_tier(c, (size_t)s);
	/* the reliable tier holds the parameters: a refused request for it
	 * is asked again, at the first step REASK_S after (not here, nor at
	 * once: a world that refuses at once would loop) */
	if (in_reliable && c->s.replace_reliable) {
		c->reliable_owed++;
		c->reliable_owed_type = c->pub[s].type;
		c->reliable_owed_at = now + REASK_S;
	}
	drop_slot(c, (size_t)s);
	c->budget_dirty = true;
	e = emit(c, now, CTRL_EV_REJECT, SIZE_MAX, why, 0, err);
	if (e == PX_OK && !in_reliable)
		e = reask(c, now, err);
	return e;
}

enum px_err ctrl_ready(struct ctrl *c, int64_t now, uint64_t id)
{
	long s = find_slot(c, id);
	struct px_error *err = &c->err;
	enum px_err e;

	if (s < 0 || c->priv[s].ready || c->pub[s].warned)
		return PX_OK;
	c->priv[s].ready = true;
	e = emit(c, now, CTRL_EV_READY, (size_t)s, NULL, 0, err);
	return e == PX_OK ? restage(c, now, err) : e;
}

enum px_err ctrl_warned(struct ctrl *c, int64_t now, uint64_t id,
			int64_t gone_s)
{
	long s = find_slot(c, id);
	struct px_error *err = &c->err;
	enum px_err e;

	(void)gone_s;
	if (s < 0 || c->pub[s].warned)
		return PX_OK;
	c->pub[s].warned = true;
	c->why |= POL_WHY_WARNING;
	c->changed = true;
	e = emit(c, now, CTRL_EV_WARNING, (size_t)s, NULL, 0, err);
	return e == PX_OK ? restage(c, now, err) : e;
}

/* An instance ended without the user's asking: by the provider (an
 * eviction: its partial hour may be free) or by its own failure (the
 * user's end: charged as a release, not counted as an eviction).  A
 * reliable one is replaced either way. */
static enum px_err ended(struct ctrl *c, int64_t now, uint64_t id,
			 bool provider, const char *why)
{
	long s = find_slot(c, id);
	struct px_error *err = &c->err;
	bool reliable;
	int type;
	enum px_err e;

	if (s < 0)
		return PX_OK;
	reliable = in_reliable_tier(c, (size_t)s);
	type = c->pub[s].type;
	c->why |= POL_WHY_EVICTION;
	e = end_inst(c, now, (size_t)s, provider, why, err);
	if (e == PX_OK && reliable && c->s.replace_reliable) {
		/* the reliable tier holds the parameters: keep its size */
		c->st.replaced++;
		e = launch(c, now, -1, type, true, 0, err);
	}
	return e == PX_OK ? restage(c, now, err) : e;
}

enum px_err ctrl_gone(struct ctrl *c, int64_t now, uint64_t id,
		      const char *why)
{
	return ended(c, now, id, true, why);
}

enum px_err ctrl_failed(struct ctrl *c, int64_t now, uint64_t id,
			const char *why)
{
	return ended(c, now, id, false, why);
}

enum px_err ctrl_timer(struct ctrl *c, int64_t now,
		       enum ctrl_timer_kind kind, uint64_t id)
{
	long s = find_slot(c, id);
	struct px_error *err = &c->err;

	if (kind == CTRL_TIMER_HOUR && id == CTRL_WAKE_TIMER_ID) {
		/* ctrl_wake's: the policy looks again (a timer a sooner one
		 * superseded, fired since, is not this one) */
		if (c->wake_at && now >= c->wake_at) {
			c->wake_at = 0;
			c->why |= POL_WHY_TICK;
		}
		return PX_OK;
	}
	if (kind == CTRL_TIMER_HOUR && id == CTRL_BUDGET_TIMER_ID) {
		/* the last instant the fleet can be paid for: look again */
		if (now == c->budget_t)
			c->budget_dirty = true;
		return PX_OK;
	}
	if (kind != CTRL_TIMER_HOUR || s < 0 ||
	    c->pub[s].period_end_s != now)
		return PX_OK;
	c->why |= POL_WHY_HOUR_END;
	if (c->n_hour == c->cap_hour) {
		size_t cap = c->cap_hour ? c->cap_hour * 2 : 16;
		uint64_t *a = px_reallocarray(c->hour, cap, sizeof *a);

		if (!a)
			return px_errorf(err, PX_ENOMEM, "out of memory");
		c->hour = a;
		c->cap_hour = cap;
	}
	c->hour[c->n_hour++] = id;
	return PX_OK;
}

/* ---- actions ---- */

static int live_spot(const struct ctrl *c)
{
	int n = 0;

	for (size_t i = 0; i < c->n; i++)
		if (c->pub[i].market >= 0 && !c->pub[i].warned)
			n++;
	return n;
}

static enum px_err reject(struct ctrl *c, int64_t now, const char *why,
			  struct px_error *err)
{
	return emit(c, now, CTRL_EV_REJECT, SIZE_MAX, why, 0, err);
}

/* The decide-acquire event for action a. */
static enum px_err emit_acquire(struct ctrl *c, int64_t now,
				const struct pol_action *a,
				struct px_error *err)
{
	const struct pol_env *env = c->env;
	struct ctrl_event ev = {
		.t_s = now, .kind = CTRL_EV_DECIDE_ACQUIRE,
		.reliable = a->reliable, .count = a->count,
		.bid_uusd = a->bid_uusd,
	};

	if (!c->s.sink)
		return PX_OK;
	if (a->market >= 0 && (size_t)a->market < env->n_markets) {
		ev.zone = env->markets[a->market].zone;
		ev.type = env->types[env->markets[a->market].type].name;
	} else if (a->type >= 0 && (size_t)a->type < env->n_types) {
		ev.type = env->types[a->type].name;
	}
	return emit_ev(c, &ev, err);
}

/* A first decision after a restart asks for the fleet the job wants:
 * an adopted instance of the same market (spot) or type (on-demand)
 * counts toward it instead of a new one.  Whether one was taken. */
static bool take_adopted(struct ctrl *c, int market, int type)
{
	for (size_t i = 0; i < c->n; i++) {
		if (!c->priv[i].adopted || c->pub[i].market != market ||
		    (market < 0 && c->pub[i].type != type))
			continue;
		c->priv[i].adopted = false;
		return true;
	}
	return false;
}

/* Check and carry out the policy's actions, in order. */
static enum px_err apply(struct ctrl *c, int64_t now, unsigned why,
			 struct px_error *err)
{
	const struct pol_env *env = c->env;
	const struct jobspec *j = env->job;
	int cap = j->spot.max_instances > j->instances ?
		  j->spot.max_instances : j->instances;
	enum px_err e = PX_OK;

	/* under a pool, its share (the decision's spot_max) is a cap too */
	if (c->s.gate && c->spot_max >= 0 && c->spot_max < cap)
		cap = c->spot_max;
	for (size_t i = 0; i < c->acts.n && e == PX_OK; i++) {
		const struct pol_action *a = &c->acts.v[i];

		if (a->kind == POL_RELEASE) {
			long s = find_slot(c, a->instance);

			e = emit(c, now, CTRL_EV_DECIDE_RELEASE, s < 0 ?
				 SIZE_MAX : (size_t)s, NULL, 0, err);
			if (e == PX_OK && s >= 0) {
				uint64_t id = a->instance;

				e = end_inst(c, now, (size_t)s, false,
					     "policy", err);
				if (e == PX_OK)
					e = c->s.world->release(
						c->s.world_ctx, id, err);
			}
			continue;
		}
		e = emit_acquire(c, now, a, err);
		for (int k = 0; k < a->count && e == PX_OK; k++) {
			int64_t p;

			if ((why & POL_WHY_START) && take_adopted(c,
				a->market < 0 ? -1 : a->market, a->type))
				continue;
			if (a->market < 0) {
				if (a->type < 0 || (size_t)a->type >=
				    env->n_types || c->n >= FLEET_MAX)
					e = reject(c, now, "bad on-demand "
						   "request", err);
				else
					e = launch(c, now, -1, a->type, true,
						   0, err);
				continue;
			}
			if ((size_t)a->market >= env->n_markets)
				e = reject(c, now, "no such market", err);
			else if (live_spot(c) >= cap)
				e = reject(c, now, cap < j->spot.max_instances
					   ? "the pool's share reached"
					   : "spot.max_instances reached",
					   err);
			else if (!market_price_at(mkt(c, a->market), now,
						  &p) || p > a->bid_uusd)
				e = reject(c, now, "bid below the market "
					   "price", err);
			else
				e = launch(c, now, a->market,
					   env->markets[a->market].type,
					   false, a->bid_uusd, err);
		}
	}
	return e;
}

/* Charge the new hour of the instances whose hour ended now and that kept
 * going; ask for the next hour's timer.  Under legacy-hourly a new hour
 * the budget cannot pay for is not started: the instance is released at
 * the hour's end, before it is charged. */
static enum px_err next_hours(struct ctrl *c, int64_t now,
			      struct px_error *err)
{
	for (size_t i = 0; i < c->n_hour; i++) {
		long s = find_slot(c, c->hour[i]);

		if (s < 0)
			continue;
		struct pol_instance *v = &c->pub[s];
		struct cinst *in = &c->priv[s];

		if (in->bill.model == BILLING_LEGACY_HOURLY &&
		    has_budget(c)) {
			struct billing_acct a = in->bill;
			int64_t before = a.charged_uusd;

			billing_acct_advance(&a, now);
			if (!affords(c, now, a.charged_uusd - before)) {
				enum px_err e = release_for_budget(c, now,
								   (size_t)s,
								   err);

				if (e != PX_OK)
					return e;
				continue;
			}
		}
		billing_acct_advance(&in->bill, now);
		if (in->bill.model == BILLING_LEGACY_HOURLY)
			v->hour_uusd = in->bill.last_hour_uusd;
		else if (v->market >= 0)
			market_price_at(in->bill.m, now, &v->hour_uusd);
		v->period_end_s = now + BILLING_HOUR_S;
		enum px_err e = c->s.world->timer(c->s.world_ctx,
						  v->period_end_s,
						  CTRL_TIMER_HOUR, v->id, err);
		if (e != PX_OK)
			return e;
	}
	c->n_hour = 0;
	return PX_OK;
}

/* The last instant t >= now (up to the run's end) at which what the
 * fleet has committed is within the budget; INT64_MAX when it stays
 * within it to the end. */
static int64_t budget_last(const struct ctrl *c, int64_t now)
{
	const int64_t b = c->env->job->budget_uusd;
	int64_t end = ctrl_end(c), lo = now, hi, d = 1;

	if (committed(c, now) > b)
		return now - 1;
	/* exponential, then binary search: committed() never decreases */
	for (;;) {
		if (end - now <= d || d >= (INT64_C(1) << 40)) {
			hi = end - now <= d ? end : now + d;
			if (committed(c, hi) <= b)
				return INT64_MAX;
			break;
		}
		hi = now + d;
		if (committed(c, hi) > b)
			break;
		lo = hi;
		d *= 2;
	}
	while (hi - lo > 1) {          /* committed(lo) <= b < committed(hi) */
		int64_t mid = lo + (hi - lo) / 2;

		if (committed(c, mid) <= b)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Whether a reliable (on-demand, reliable-tier) instance is held. */
static bool reliable_left(const struct ctrl *c)
{
	for (size_t i = 0; i < c->n; i++)
		if (in_reliable_tier(c, i))
			return true;
	return false;
}

/* After a step: whether the budget leaves anything to run on, and under
 * per-second billing a timer at the last second the fleet can be paid
 * for (legacy-hourly charges only at launches and hour ends, both
 * checked). */
static enum px_err budget_step(struct ctrl *c, int64_t now,
			       struct px_error *err)
{
	int64_t t;

	if (!has_budget(c) || c->budget_out)
		return PX_OK;
	/* refused or ended for the budget, and nothing left running, or
	 * no reliable instance left where the job has a reliable tier: it
	 * holds the parameters, so the rest cannot go on without it (a
	 * daemon job stalled on one spot node after its reliable one was
	 * let go for the budget) */
	if (c->budget_hit && (c->n == 0 || (c->env->job->reliable.count > 0 &&
					    !reliable_left(c))))
		c->budget_out = true;
	c->budget_hit = false;
	if (c->budget_out || c->env->billing != BILLING_PER_SECOND ||
	    (!c->budget_dirty && c->budget_t > now))
		return PX_OK;
	c->budget_dirty = false;
	t = budget_last(c, now);
	if (t <= now) {
		/* not one more second can be paid for */
		c->budget_out = true;
		return PX_OK;
	}
	if (t == c->budget_t)
		return PX_OK;           /* that timer is already set */
	c->budget_t = t;
	if (t == INT64_MAX)
		return PX_OK;           /* paid for up to the end */
	return c->s.world->timer(c->s.world_ctx, t, CTRL_TIMER_HOUR,
				 CTRL_BUDGET_TIMER_ID, err);
}

enum px_err ctrl_step(struct ctrl *c, int64_t now, unsigned why,
		      const struct ctrl_progress *p)
{
	struct px_error *err = &c->err;
	enum px_err e = PX_OK;
	unsigned all = why | c->why;

	c->why = 0;
	if (all & (c->s.policy->wants | POL_WHY_START)) {
		struct market_view mv = {.ms = c->s.ms, .now_s = now,
					 .cursor = c->cursor,
					 .hide_until = c->hide_until};
		struct pol_progress pr = {
			.start_s = c->s.start_s, .work_done_h = p->work_done_h,
			.work_total_h = c->env->job->work_hours,
			.rate_h = p->rate_h, .cost_uusd = c->cost_now,
		};
		struct pol_input in = {
			.now_s = now, .why = all, .mv = &mv,
			.fleet = ctrl_fleet(c), .progress = &pr,
			.scaling = p->scaling,
		};

		uint64_t t0 = px_now_mono_us();

		/* a share of a pool (the scaling's spot vCPUs set) caps
		 * the fleet; the exploration's limit alone is the
		 * policy's to keep */
		c->spot_max = p->scaling && p->scaling->spot_vcpus_set ?
			      p->scaling->spot_max : -1;
		c->acts.n = 0;
		c->st.decisions++;
		e = c->s.policy->decide(c->pstate, &in, &c->acts, err);
		if (e == PX_OK)
			e = apply(c, now, all, err);
		decide_observe(px_now_mono_us() - t0);
	}
	if (e == PX_OK && c->reliable_owed > 0 && now >= c->reliable_owed_at) {
		/* those refused during this step wait for the next one */
		int owed = c->reliable_owed;

		c->reliable_owed = 0;
		for (int k = 0; k < owed && e == PX_OK; k++) {
			c->st.replaced++;
			e = launch(c, now, -1, c->reliable_owed_type, true, 0,
				   err);
		}
	}
	if (e == PX_OK && c->n_hour)
		e = next_hours(c, now, err);
	if (e == PX_OK)
		e = budget_step(c, now, err);
	/* transients that have lasted long enough may move the stage up */
	if (e == PX_OK)
		e = restage(c, now, err);
	return e;
}

int64_t ctrl_cost(struct ctrl *c, int64_t now)
{
	int64_t cost = c->cost_ended;

	for (size_t i = 0; i < c->n; i++)
		if (c->priv[i].launched)
			cost += billing_acct_advance(&c->priv[i].bill, now);
	c->cost_now = cost;
	return cost;
}

int64_t ctrl_cost_ondemand_open(struct ctrl *c, int64_t now)
{
	int64_t cost = 0;

	for (size_t i = 0; i < c->n; i++)
		if (c->priv[i].launched && c->pub[i].market < 0)
			cost += billing_acct_advance(&c->priv[i].bill, now);
	return cost;
}

bool ctrl_take_changed(struct ctrl *c)
{
	bool ch = c->changed;

	c->changed = false;
	return ch;
}

int64_t ctrl_end(const struct ctrl *c)
{
	const struct jobspec *j = c->env->job;
	int64_t end = c->s.window_end_s;

	if (j->deadline_hours > 0 &&
	    c->s.start_s + (int64_t)(j->deadline_hours * 3600) < end)
		end = c->s.start_s + (int64_t)(j->deadline_hours * 3600);
	return end;
}

enum ctrl_stop ctrl_stop(const struct ctrl *c, int64_t now,
			 const struct ctrl_progress *p)
{
	const struct jobspec *j = c->env->job;

	if (p->work_done_h >= j->work_hours)
		return CTRL_STOP_DONE;
	if (c->budget_out || (j->budget_uusd >= 0 &&
			       c->cost_now > j->budget_uusd))
		return CTRL_STOP_BUDGET;
	if (now >= ctrl_end(c))
		return CTRL_STOP_DEADLINE;
	return CTRL_RUN;
}

enum px_err ctrl_finish(struct ctrl *c, int64_t now, bool completed,
			int64_t *ret_uusd)
{
	struct px_error *err = &c->err;
	enum px_err e = PX_OK;

	while (c->n > 0 && e == PX_OK) {
		uint64_t id = c->pub[c->n - 1].id;

		e = end_inst(c, now, c->n - 1, false, completed ? "job done" :
			     "run ended", err);
		if (e == PX_OK)
			e = c->s.world->release(c->s.world_ctx, id, err);
	}
	if (e != PX_OK)
		return e;
	c->cost_now = c->cost_ended;
	*ret_uusd = c->cost_ended;
	return emit(c, now, CTRL_EV_DONE, SIZE_MAX, completed ? "completed" :
		    "not completed", c->cost_ended, err);
}

int64_t ctrl_latest(const struct ctrl *c)
{
	return c->latest_t;
}

void ctrl_keep_bills(struct ctrl *c)
{
	c->keep_bills = true;
}

size_t ctrl_bills_open(const struct ctrl *c)
{
	return c->n_kept;
}

/* The kept bill of instance id, or -1. */
static long kept_of(const struct ctrl *c, uint64_t id)
{
	for (size_t i = 0; i < c->n_kept; i++)
		if (c->kept[i].v.id == id)
			return (long)i;
	return -1;
}

static void unkeep(struct ctrl *c, size_t i)
{
	memmove(c->kept + i, c->kept + i + 1,
		(c->n_kept - i - 1) * sizeof *c->kept);
	c->n_kept--;
}

enum px_err ctrl_bill_end(struct ctrl *c, int64_t now, uint64_t id,
			  int64_t end_s, bool provider)
{
	struct px_error *err = &c->err;
	struct ctrl_event ev;
	struct kept_bill k;
	long i = kept_of(c, id);
	int64_t more;

	if (i < 0 || c->kept[i].unlaunched)
		return PX_OK;
	k = c->kept[i];
	unkeep(c, (size_t)i);
	if (end_s == k.closed_s && !provider)
		return PX_OK;
	/* the same account closed there, by whoever the provider says
	 * ended it: the same rules (minimum, per-second accrual over the
	 * market's prices, a spot instance the provider ends in its first
	 * hour free) as a close there.  An end before ours is the
	 * provider's (it ended the instance before our terminate call
	 * arrived: an interruption racing the release), and brings the
	 * bill down */
	more = billing_acct_end(&k.acct, end_s, provider ?
				BILLING_END_PROVIDER : BILLING_END_USER) -
	       k.amount;
	if (!more)
		return PX_OK;
	c->cost_ended += more;
	c->cost_now += more;
	c->st.instance_hours += (double)(end_s - k.closed_s) / BILLING_HOUR_S;
	c->st.free_hours += (double)k.acct.free_s / BILLING_HOUR_S;
	if (!c->s.sink)
		return PX_OK;
	ev_of(c, now, CTRL_EV_BILL_END, &k.v, provider ? "the provider "
	      "ended it first (its interruption)" : "the provider's end",
	      more, &ev);
	ev.end_s = end_s;
	return emit_ev(c, &ev, err);
}

enum px_err ctrl_bill_late(struct ctrl *c, int64_t now,
			   const struct world_req *q, int64_t launched_s)
{
	struct px_error *err = &c->err;
	const struct market *m = NULL;
	struct pol_instance v = {0};
	struct billing_acct a, closed;
	struct ctrl_event ev;
	long i = kept_of(c, q->id);
	int64_t amount;
	enum px_err e;

	if ((i >= 0 && !c->kept[i].unlaunched) || was_charged(c, q->id))
		return PX_OK;            /* billed already */
	if (i >= 0)
		unkeep(c, (size_t)i);
	if (launched_s < 0 || find_slot(c, q->id) >= 0)
		return PX_OK;            /* never launched; or held */
	if (q->type < 0 || (size_t)q->type >= c->env->n_types ||
	    (q->market >= 0 && (size_t)q->market >= c->env->n_markets))
		return px_errorf(err, PX_EINVAL, "instance %" PRIu64 ": not "
				 "of this job's markets", q->id);
	if (launched_s > now)
		launched_s = now;
	v.id = q->id;
	v.reliable = q->reliable;
	v.type = q->type;
	v.market = q->market;
	v.bid_uusd = q->market >= 0 ? q->bid_uusd : 0;
	v.launch_s = launched_s;
	if (q->market >= 0)
		m = mkt(c, q->market);
	billing_acct_start(&a, c->env->billing, m,
			   c->env->types[q->type].od_uusd, launched_s);
	closed = a;
	amount = billing_acct_end(&closed, now, BILLING_END_USER);
	mark_charged(c, q->id);
	/* terminated now: the provider's end brings it there */
	if (c->keep_bills && keep_bill(c, &v, &a, now))
		c->kept[c->n_kept - 1].amount = amount;
	c->cost_ended += amount;
	c->cost_now += amount;
	c->st.instances_launched++;
	c->st.instance_hours += (double)(now - launched_s) / BILLING_HOUR_S;
	if (!c->s.sink)
		return PX_OK;
	ev_of(c, launched_s, CTRL_EV_LAUNCH, &v, NULL, 0, &ev);
	e = emit_ev(c, &ev, err);
	if (e != PX_OK)
		return e;
	ev_of(c, now, CTRL_EV_RELEASE, &v, "launched after it was let go: "
	      "terminated", amount, &ev);
	return emit_ev(c, &ev, err);
}

/* ---- life ---- */

enum px_err ctrl_new(const struct ctrl_setup *s, struct ctrl **ret,
		     struct px_error *err)
{
	struct ctrl *c = px_calloc(1, sizeof *c);
	enum px_err e;

	if (!c)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	c->s = *s;
	c->spot_max = -1;
	c->env = s->env;
	c->cursor = px_calloc(s->ms->n ? s->ms->n : 1, sizeof *c->cursor);
	if (!c->cursor) {
		free(c);
		return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	e = s->policy->init(s->env, &c->pstate, err);
	if (e != PX_OK) {
		free(c->cursor);
		free(c);
		px_error_prefix(err, "policy '%s': ", s->policy->name);
		return e;
	}
	*ret = c;
	return PX_OK;
}

void ctrl_free(struct ctrl *c)
{
	if (!c)
		return;
	c->s.policy->fini(c->pstate);
	free(c->pub);
	free(c->priv);
	free(c->hour);
	free(c->cursor);
	free(c->hide_until);
	free(c->kept);
	free(c->charged);
	pol_actions_release(&c->acts);
	free(c);
}

const struct pol_fleet *ctrl_fleet(const struct ctrl *c)
{
	struct ctrl *m = (struct ctrl *)c;

	m->fleet.v = c->pub;
	m->fleet.n = c->n;
	return &m->fleet;
}

const struct ctrl_stats *ctrl_stats(const struct ctrl *c)
{
	return &c->st;
}

int ctrl_stage(const struct ctrl *c)
{
	return c->stage;
}

const struct px_error *ctrl_error(const struct ctrl *c)
{
	return &c->err;
}
