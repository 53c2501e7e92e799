/* pol_bidbrain.c -- Proteus's BidBrain (Harlap et al., EuroSys 2017).
 *
 * Keeps the job's on-demand reliable tier and rents spot capacity by
 * expected cost per unit of work.  For every market it may use and every
 * bid delta of the risk estimator (bid = current price + delta) it computes
 * the expected charge and useful time of the next billing hour from the
 * eviction probability beta and mean time to eviction tau of a bid at
 * that level when the price is what it is now, learnt from history
 * before now (risk.h, risk_get_level: the samples taken at the current
 * price, shrunk towards the market's pooled estimate for the same delta
 * where that price was seen less than a day), counting an evicted partial
 * hour as free (billing_expect_hour) and a new instance's startup and
 * lost clock as useless time.  Each market's best delta is the one with
 * the lowest expected cost per speed-second.
 *
 * An instance slot is planned as a renewal process: an evicted instance
 * is replaced at once, so a slot's cost per hour is the expected charge
 * of a launch over its expected running time, and its effective speed
 * the useful share of that time (bb_candidate, bb_inst).  A bid evicted
 * within minutes is nearly free but does little work per hour of the
 * slot; the fleet's rate, and so the runtime and the tier's hours, count
 * that.  Under legacy billing every hour that ends in an eviction is
 * free, whatever the launch's age, and a launch pays its startup once and
 * lives on through the hours it is not evicted in (1 / beta of them on
 * average), so each hour of the slot carries beta x (startup + lost
 * clock), for a candidate as for a live instance (a candidate used to
 * carry a whole startup every hour, which made bids that are rarely
 * evicted look 3% slower than they are).  Under per-second billing only
 * an interruption in a launch's first hour is free, so a candidate is
 * judged by that first hour, startup and all.
 *
 * Decisions plan the fleet by the expected cost to finish the job
 * (bb_finish): with the remaining work R and the planned fleet's rate w
 * (pol_rate) the job ends in T = R / w, and each instance pays
 * its expected hourly charge for the hours it would still start: under
 * legacy billing any part of an hour beyond what is already paid is a full
 * hour, plus on average half a wasted last hour (bb_hours).  For a long
 * job this is the fleet's cost rate x T, i.e. the average cost per work of
 * the original rule; near the end it stops renting hours the job cannot
 * use.  Then:
 *  - at the end of a spot instance's billing hour it is released when the
 *    cost to finish is lower without it (it no longer pays for itself),
 *    or when swapping it for what the acquisitions would take instead
 *    (bb_choose) lowers the expected cost to finish: a bid far above a
 *    price that fell is rarely evicted, and a new bid at the price may
 *    win free hours again;
 *  - it acquires, one instance at a time, the best candidate (the one
 *    whose copies fill the free slots into the fleet with the lowest cost
 *    to finish: see bb_pick) while that lowers the cost to finish, up to
 *    spot.max_instances (or the fewer proteusd's exploration of the
 *    job's scaling allows now: pol_spot_max);
 *  - the runtime floor: before the last END_S it keeps the planned rate at
 *    least the baselines' (instances of reference_type plus the reliable
 *    tier; more when the job is behind their schedule, so that it still
 *    ends within their planned runtime) with spot that costs no more per
 *    work than reference_type on demand, also per work-hour it adds to the
 *    fleet's rate (under a scaling profile the last instances may add
 *    almost nothing), each the candidate that raises the cost to finish
 *    least per work-hour it adds (bb_floor_pick).  When a fleet filled to
 *    spot.max_instances with the best candidate would be slower than that,
 *    it takes a candidate whose effective speed is enough (the cheapest
 *    per work of each market's best and least-churning delta), else the
 *    fastest, and at the cap it swaps instances slower than that for
 *    faster ones (bb_choose, bb_pick_rate).  So its runtime is not longer
 *    than standard's by plan, unless that would take instances whose added
 *    work costs more than on demand; in the last END_S the cost to finish
 *    alone decides.
 * Under per-second billing the per-type interruption rate is folded into
 * beta and nothing is prepaid; where a market's prices hold for hours
 * (today's), beta is the lower of the estimates by the age of the price
 * now and by its level (risk_get_age, bb_age_take), and candidates are
 * judged again every RISK_STEP_S as the price ages.  For a program job
 * (restart_seconds R), every fleet change must also pay for the re-form
 * it causes: the planned fleet's charge for R (bb_reform).  With a deadline
 * (finish_by_hours) it follows Uniform Progress's rules on its own
 * fleet (bb_on_demand, bb_switch), and where a smaller fleet is cheaper
 * per work the floor's schedule stretches toward the deadline, by the
 * share of time spot was there lately (bb_stretch).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "policy.h"
#include "risk.h"

/* No hand-picked constants: a swap is made when it lowers the expected
 * cost to finish at all (margin 1, as every other decision; the swapped-in
 * instance's startup is in its estimate), and the end game, where the
 * runtime floor gives way to the cost to finish alone, is the last
 * billing hour, where the rounding of the last hour decides.  (bb_pick
 * judges by the cost to finish throughout, so the end game no longer
 * changes how it picks.)  tests/bench/bench_bidbrain_sweep.sh builds
 * BidBrain with other values (-DBB_SWAP_MARGIN=, -DBB_END_S=): the
 * benchmark windows' savings are flat for ends 0 to 4 h and lower for
 * margins above 1; margins below 1 gain on the benchmark windows but not
 * on windows outside it (docs/benchmarks.md). */
#ifndef BB_SWAP_MARGIN
#define BB_SWAP_MARGIN 1.0
#endif
/* The share of a deadline (less four overheads and a tick) that the
 * stretched floor's schedule may take (bb_stretch).  Chosen by hand: 0.75
 * paid 1.08x Uniform Progress on a market whose spot is gone for hours at
 * a time, where 0.6 paid 1.005x and no stretch 1.004x; on the shipped 2016
 * slice 0.6 kept most of 0.75's saving (docs/benchmarks.md, session 31). */
#ifndef BB_DL_SLACK
#define BB_DL_SLACK 0.6
#endif
#ifndef BB_END_S
#define BB_END_S ((double)BILLING_HOUR_S)
#endif
#define SWAP_MARGIN BB_SWAP_MARGIN
#define END_S BB_END_S

/* One bid of a market, its slot planned as a renewal (see the head). */
struct bb_opt {
	int64_t bid;
	double cost;             /* expected charge per hour of the slot, uusd */
	double useful_s;         /* expected useful seconds per hour of it */
	double score;            /* cost per speed-second of useful work */
};

struct bb_cand {
	bool valid;
	int64_t price;           /* price when computed */
	int64_t at_s;            /* when computed */
	struct bb_opt best;      /* the delta with the lowest score */
	struct bb_opt fast;      /* the most useful seconds (least churn) */
	bool tight;              /* computed for bids at on-demand's price */
};

/* One instance of the fleet being planned: expected charge of its next
 * billing hour, effective speed, and seconds already paid from now. */
struct bb_item {
	double cost;
	double speed;
	double paid_s;
	size_t inst;             /* index in the fleet; SIZE_MAX: planned */
	bool gone;
};

/* Estimates of a market's bid levels, kept for up to an hour of new
 * samples (each moves a 14-day estimate by 1/4032): live instances share
 * bids, and prices that oscillate bring the same candidate bids back. */
#define BB_MEMO 32
struct bb_memo {
	int64_t bid[BB_MEMO];
	int64_t price[BB_MEMO];
	struct risk_estimate e[BB_MEMO];
	int n, next;
	int64_t at_s;            /* when the entries were first computed */
};

struct bb_state {
	const struct pol_env *env;
	/* the spot vCPUs the fleet may still take (the pool's share,
	 * pol_spot_vcpus_room): candidates bigger than that are passed
	 * over; INT64_MAX: no limit */
	int64_t vroom;
	struct risk *risk;
	struct bb_cand *cand;    /* per env market */
	struct bb_memo *memo;    /* per env market */
	bool *changed;
	bool for_good;           /* the deadline's safety net fired */
	/* a deadline near enough that this decision bids on-demand's price
	 * for spot (bb_on_demand): candidates are judged at that bid, the
	 * one they will get */
	bool tight;
	struct bb_item *items;   /* decide's scratch: the planned fleet */
	size_t cap;
	/* this decision's runtime floor: the baselines' rate, the most per
	 * speed-hour it may cost (reference_type on demand), and the
	 * effective speed each spot slot needs for that rate at the cap */
	double w_min, cap_per_speed, need;
	double w_base;           /* the baselines' rate alone */
	/* the share of the trailing AVAIL_S in which the job's best market
	 * had spot within the cost cap (bb_availability), as of avail_at_s;
	 * 0: not enough history */
	double avail;
	int64_t avail_at_s;
	/* per env market: the candidate as a planned item; the markets
	 * sorted by its charge (bb_before), each one's place in that
	 * order, and those on the front (bb_front) */
	struct bb_item *pick;
	int *order, *pos, *front;
	int *kfill;              /* per market: bb_fill's last k */
	size_t n_front;
	double *eff;             /* bb_pick: rate per speed with k more */
	/* this decision's scaling (bb_decide: its input's; NULL the
	 * spec's): every rate of the plan is by it */
	const struct pol_scaling *sc;
};

/* What an acquisition would add to the planned fleet (bb_choose). */
struct bb_choice {
	int m;                   /* market; -1: none */
	struct bb_opt o;
	double speed;            /* effective: speed x useful_s / hour */
	double f;                /* expected cost to finish with it */
	int k;                   /* how many of it bb_pick's fleet adds */
	bool by_rate;            /* bb_pick_rate's: the cap needs its speed */
};

static void bb_fini(void *state)
{
	struct bb_state *s = state;
	if (!s)
		return;
	risk_free(s->risk);
	free(s->items);
	free(s->cand);
	free(s->memo);
	free(s->changed);
	free(s->pick);
	free(s->order);
	free(s->pos);
	free(s->kfill);
	free(s->front);
	free(s->eff);
	free(s);
}

static enum px_err bb_init(const struct pol_env *env, void **ret_state,
			   struct px_error *err)
{
	struct bb_state *s = px_calloc(1, sizeof *s);
	int *idx = NULL;
	int64_t *od = NULL;
	size_t n = env->n_markets ? env->n_markets : 1;
	enum px_err r;

	if (!s)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	s->env = env;
	s->cand = px_calloc(n, sizeof *s->cand);
	s->memo = px_calloc(n, sizeof *s->memo);
	s->changed = px_calloc(n, sizeof *s->changed);
	s->pick = px_calloc(n, sizeof *s->pick);
	s->order = px_calloc(n, sizeof *s->order);
	s->pos = px_calloc(n, sizeof *s->pos);
	s->kfill = px_calloc(n, sizeof *s->kfill);
	s->eff = px_calloc((size_t)env->job->spot.max_instances + 2,
			   sizeof *s->eff);
	s->front = px_calloc(n, sizeof *s->front);
	idx = px_calloc(n, sizeof *idx);
	od = px_calloc(n, sizeof *od);
	if (!s->cand || !s->memo || !s->changed || !s->pick || !s->order ||
	    !s->pos || !s->kfill || !s->front || !s->eff ||
	    !idx || !od) {
		r = px_errorf(err, PX_ENOMEM, "out of memory");
		goto out_free;
	}
	for (size_t i = 0; i < env->n_markets; i++) {
		idx[i] = env->markets[i].market;
		od[i] = env->types[env->markets[i].type].od_uusd;
	}
	r = risk_new(env->n_markets, idx, od, &s->risk, err);
out_free:
	free(idx);
	free(od);
	if (r != PX_OK) {
		bb_fini(s);
		return r;
	}
	for (size_t i = 0; i < env->n_markets; i++) {
		s->pick[i].cost = INFINITY;
		s->order[i] = (int)i;
		s->pos[i] = (int)i;
	}
	*ret_state = s;
	return PX_OK;
}

/* Fold the current-era interruption rate of market i's type into beta
 * and tau (callers: under per-second billing only). */
static void bb_fold(const struct pol_env *env, size_t i, double *beta,
		    double *tau)
{
	double r = env->types[env->markets[i].type].interrupt_per_h;
	double bi = 1 - exp(-r);
	double b = *beta, tot = 1 - (1 - b) * (1 - bi);

	if (tot > 0)
		*tau = (b * *tau + bi * RISK_HORIZON_S / 2.0) / (b + bi);
	*beta = tot;
}

/* Under per-second billing, where market i's prices move in levels that
 * hold for hours (risk_get_age answers): the lower of the two estimates,
 * by the age of the price now and by its level, folded.  A first-hour
 * eviction is free, so a high beta makes a new instance look cheap and
 * an hourly renewal worth its startup; each estimate alone overstated it
 * where BidBrain chose (docs/benchmarks.md, issue 40, "Session 32"): the
 * level's, blind to the age, after every rise (7-12% predicted where a
 * price that has just changed holds for 4.8 h or more), and the age's
 * alone bought renewals of whole fleets before each expected change, 75
 * evictions and 426 launches in 10 h on one job, which the waivers did
 * not pay for.  The lower one counts on a free hour only where both the
 * age and the level's own history say so. */
static void bb_age_take(const struct pol_env *env, size_t i,
			const struct risk_estimate *age,
			const struct risk_estimate *lev, double *beta,
			double *tau)
{
	const struct risk_estimate *e = lev->beta < age->beta ? lev : age;

	*beta = e->beta;
	*tau = e->tau_s;
	bb_fold(env, i, beta, tau);
}

/* A new memo slot of market i for (bid, price) holding e (NULL: computed
 * now), in place of the oldest when the memo is full. */
static int bb_memo_put(struct bb_state *s, size_t i, int64_t price,
		       int64_t bid, const struct risk_estimate *e)
{
	struct bb_memo *mo = &s->memo[i];
	int j = mo->n < BB_MEMO ? mo->n++ : mo->next++ % BB_MEMO;

	mo->bid[j] = bid;
	mo->price[j] = price;
	if (e)
		mo->e[j] = *e;
	else
		risk_get_level(s->risk, i, price, bid, &mo->e[j]);
	return j;
}

/* beta and tau of market i for a bid at bid_uusd when the price is
 * price_uusd (risk_get_level: the chance that the price rises above the
 * bid within the hour, from the samples taken at that price, shrunk
 * towards those taken at or below the bid), with
 * current-era interruptions folded in under per-second billing. */
static void bb_estimate(struct bb_state *s, size_t i, int64_t price,
			int64_t bid, double *ret_beta, double *ret_tau)
{
	struct bb_memo *mo = &s->memo[i];
	int j;

	*ret_beta = 1;
	*ret_tau = 0;
	if (bid >= price && s->env->billing == BILLING_PER_SECOND) {
		struct risk_estimate age, lev;

		if (risk_get_age(s->risk, i, price, bid, &age)) {
			risk_get_level(s->risk, i, price, bid, &lev);
			bb_age_take(s->env, i, &age, &lev, ret_beta, ret_tau);
			return;
		}
	}
	if (bid >= price) {
		for (j = 0; j < mo->n && (mo->bid[j] != bid ||
					  mo->price[j] != price); j++)
			;
		if (j == mo->n)
			j = bb_memo_put(s, i, price, bid, NULL);
		*ret_beta = mo->e[j].beta;
		*ret_tau = mo->e[j].tau_s;
	}
	if (s->env->billing == BILLING_PER_SECOND)
		bb_fold(s->env, i, ret_beta, ret_tau);
}

/* bb_estimate for the bids price + d_k of every delta k, in one pass
 * over the memo: the same answers, the memo left the same, as
 * bb_estimate called for k = 0, 1, ... in turn (the estimator does not
 * change between those calls, so what is missing is computed at once). */
static void bb_estimate_deltas(struct bb_state *s, size_t i, int64_t price,
			       double *beta, double *tau)
{
	struct bb_memo *mo = &s->memo[i];
	struct risk_estimate e[RISK_DELTAS];
	bool have = false;
	int64_t bid[RISK_DELTAS];
	int at[RISK_DELTAS];

	if (s->env->billing == BILLING_PER_SECOND &&
	    risk_get_age_deltas(s->risk, i, e)) {
		struct risk_estimate lev[RISK_DELTAS];

		risk_get_level_deltas(s->risk, i, price, lev);
		for (int k = 0; k < RISK_DELTAS; k++)
			bb_age_take(s->env, i, &e[k], &lev[k], &beta[k],
				    &tau[k]);
		return;
	}
	for (int k = 0; k < RISK_DELTAS; k++) {
		bid[k] = price + risk_delta_uusd(s->risk, i, k);
		at[k] = -1;
	}
	for (int j = 0; j < mo->n; j++)
		if (mo->price[j] == price)
			for (int k = 0; k < RISK_DELTAS; k++)
				if (bid[k] == mo->bid[j])
					at[k] = j;
	for (int k = 0; k < RISK_DELTAS; k++) {
		if (at[k] < 0) {
			int j;

			if (!have)
				risk_get_level_deltas(s->risk, i, price, e);
			have = true;
			j = bb_memo_put(s, i, price, bid[k], &e[k]);

			/* the slot it took held no other bid looked for
			 * yet, and one equal to it is found there */
			for (int q = k + 1; q < RISK_DELTAS; q++)
				if (bid[q] == bid[k])
					at[q] = j;
				else if (at[q] == j)
					at[q] = -1;
			at[k] = j;
		}
		beta[k] = mo->e[at[k]].beta;
		tau[k] = mo->e[at[k]].tau_s;
		if (s->env->billing == BILLING_PER_SECOND)
			bb_fold(s->env, i, &beta[k], &tau[k]);
	}
}

/* Effective speed of option o of market m: its type's speed x the useful
 * share of an hour of its slot. */
static double bb_opt_speed(const struct pol_env *env, size_t m,
			   const struct bb_opt *o)
{
	return env->types[env->markets[m].type].speed * o->useful_s /
	       BILLING_HOUR_S;
}

/* Option o of market i at price p for a bid whose beta and tau are
 * given; false when it would do no useful work. */
static bool bb_option(const struct bb_state *s, size_t i, int64_t p,
		      int64_t bid, double beta, double tau, struct bb_opt *o)
{
	const struct pol_env *env = s->env;
	const struct pol_type *ty = &env->types[env->markets[i].type];
	struct billing_expect x;
	double useful;

	billing_expect_hour(env->billing, p, beta, tau, true, &x);
	useful = x.run_s - beta * pol_loss_s(env) -
		 env->job->startup_seconds *
		 (env->billing == BILLING_LEGACY_HOURLY ? beta : 1);
	if (useful <= 0 || ty->speed <= 0)
		return false;
	*o = (struct bb_opt){
		.bid = bid,
		.cost = x.cost_uusd * BILLING_HOUR_S / x.run_s,
		.useful_s = useful * BILLING_HOUR_S / x.run_s,
		.score = x.cost_uusd / (ty->speed * useful),
	};
	return true;
}

/* Recompute the best delta of market i at price p; in a tight decision
 * (s->tight) the one bid at on-demand's price, which the acquisition
 * will place: judged at price + delta it was counted on hours a rise
 * would take back for free, which at that bid it keeps and pays. */
static void bb_candidate(struct bb_state *s, size_t i, int64_t p,
			 int64_t now)
{
	const struct pol_env *env = s->env;
	struct bb_cand *c = &s->cand[i];
	double beta_k[RISK_DELTAS], tau_k[RISK_DELTAS];
	int64_t od = env->types[env->markets[i].type].od_uusd;

	c->valid = false;
	c->price = p;
	c->at_s = now;
	c->tight = s->tight;
	if (s->tight) {
		struct bb_opt o;
		double beta, tau;

		if (od < p)
			return;
		bb_estimate(s, i, p, od, &beta, &tau);
		if (bb_option(s, i, p, od, beta, tau, &o)) {
			c->best = c->fast = o;
			c->valid = true;
		}
		return;
	}
	bb_estimate_deltas(s, i, p, beta_k, tau_k);
	for (int k = 0; k < RISK_DELTAS; k++) {
		struct bb_opt o;

		if (!bb_option(s, i, p, p + risk_delta_uusd(s->risk, i, k),
			       beta_k[k], tau_k[k], &o))
			continue;
		if (!c->valid || o.useful_s > c->fast.useful_s ||
		    (o.useful_s == c->fast.useful_s &&
		     o.score < c->fast.score))
			c->fast = o;
		if (!c->valid || o.score < c->best.score)
			c->best = o;
		c->valid = true;
	}
}

/* Expected next-hour charge and effective speed of a live instance. */
static void bb_inst(struct bb_state *s, const struct pol_input *in,
		    const struct pol_instance *v, double *ret_cost,
		    double *ret_speed)
{
	const struct pol_env *env = s->env;
	double speed = env->types[v->type].speed;
	struct billing_expect x;
	int64_t p = 0;
	double beta, tau;

	if (v->market < 0) {
		*ret_cost = (double)env->types[v->type].od_uusd;
		*ret_speed = speed;
		return;
	}
	if (!market_view_price(in->mv, env->markets[v->market].market, &p))
		p = v->hour_uusd;
	bb_estimate(s, (size_t)v->market, p, v->bid_uusd, &beta, &tau);
	billing_expect_hour(env->billing, p, beta, tau, false, &x);
	if (x.run_s < 1) {         /* bid below the price: going now */
		*ret_cost = 0;
		*ret_speed = 0;
		return;
	}
	*ret_cost = x.cost_uusd * BILLING_HOUR_S / x.run_s;
	*ret_speed = speed * (x.run_s - beta * (pol_loss_s(env) +
		     env->job->startup_seconds)) / x.run_s;
}

static enum px_err push(struct pol_actions *out, const struct pol_action *a,
			struct px_error *err)
{
	struct pol_action *last = out->n ? &out->v[out->n - 1] : NULL;
	if (last && a->kind == POL_ACQUIRE && last->kind == POL_ACQUIRE &&
	    last->market == a->market && last->bid_uusd == a->bid_uusd &&
	    last->reliable == a->reliable && a->market >= 0) {
		last->count += a->count;
		return PX_OK;
	}
	if (pol_actions_push(out, a) != PX_OK)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	return PX_OK;
}


/* Expected billed hours for running x more seconds past what is paid
 * (x < 0: the paid time outlasts the plan by -x).  Per-second: x/h.
 * Legacy-hourly: every started hour is charged in full, so exactly it is
 * ceil(x/h); but where in its billing hour the job will end is not known
 * (evictions, startups and prices still to come move the end), and with
 * that phase uniform over the hour the expectation of the hours started,
 * E[ceil(x/h + u)] for u uniform in (-1/2, 1/2), is x/h + 1/2 for
 * x/h >= -1/2 and 0 below: continuous, linear in the time to finish.
 * (Until session 10 this was 0 for x <= 0 and 1 for x/h in (0, 1/2]: the
 * exact rounding there, the expectation beyond, so an instance whose paid
 * hour ended just before the planned end cost a whole hour more than one
 * whose hour ended just after.  docs/benchmarks.md, "Session 10".) */
static double bb_hours(enum billing_model b, double x)
{
	double h = x / BILLING_HOUR_S;

	if (b != BILLING_LEGACY_HOURLY)
		return h > 0 ? h : 0;
	return h > -0.5 ? h + 0.5 : 0;
}

/* Expected cost to finish the remaining work rem_h (work-hours) with the
 * live items of v: the fleet runs T = rem_h / rate, and each instance pays
 * bb_hours(T - paid) hours at its expected hourly charge.  INFINITY when
 * the fleet does no work. */
static double bb_finish(const struct bb_state *s, const struct bb_item *v,
			size_t n, double rem_h, double *ret_T)
{
	const struct pol_env *env = s->env;
	double S = 0, w, T, f = 0;
	int cnt = 0;

	for (size_t i = 0; i < n; i++)
		if (!v[i].gone) {
			S += v[i].speed;
			cnt++;
		}
	w = pol_rate(env, s->sc, cnt, S);
	if (ret_T)
		*ret_T = w > 0 ? rem_h / w * BILLING_HOUR_S : INFINITY;
	if (w <= 0)
		return INFINITY;
	T = rem_h / w * BILLING_HOUR_S;
	for (size_t i = 0; i < n; i++)
		if (!v[i].gone)
			f += v[i].cost * bb_hours(env->billing,
						  T - v[i].paid_s);
	return f;
}

/* The live items of a planned fleet summed once, so that bb_pick can
 * price the fleet with k more instances without a pass over it. */
struct bb_sums {
	int cnt;
	double S;                /* speed */
	double C;                /* expected hourly charge */
	double CP;               /* charge x seconds already paid */
	double paid_max;
};

static void bb_sum(const struct bb_item *v, size_t n, struct bb_sums *u)
{
	*u = (struct bb_sums){0};
	for (size_t i = 0; i < n; i++) {
		if (v[i].gone)
			continue;
		u->cnt++;
		u->S += v[i].speed;
		u->C += v[i].cost;
		u->CP += v[i].cost * v[i].paid_s;
		if (v[i].paid_s > u->paid_max)
			u->paid_max = v[i].paid_s;
	}
}

/* bb_finish of the fleet summed in u (v[0..n)) with k copies of it added;
 * eff[k] is the fleet's rate per unit of speed with them
 * (pol_rate(env, sc, u->cnt + k, 1): the rate is linear in the
 * speed).  Where bb_hours is linear for every instance (legacy: T - paid
 * > -half an hour, so it is x/h + 0.5; per-second: T past what is paid)
 * the sum is linear in T and costs nothing to evaluate; otherwise it is
 * bb_finish over v[0..n+k). */
static double bb_finish_with(const struct bb_state *s, struct bb_item *v,
			     size_t n, const struct bb_sums *u,
			     const double *eff, const struct bb_item *it,
			     int k, double rem_h)
{
	double w = (u->S + k * it->speed) * eff[k], T, C;

	if (w <= 0)
		return INFINITY;
	T = rem_h / w * BILLING_HOUR_S;
	C = u->C + k * it->cost;
	if (s->env->billing == BILLING_LEGACY_HOURLY) {
		if (T - u->paid_max > -BILLING_HOUR_S / 2.0)
			return (C * T - u->CP) / BILLING_HOUR_S + 0.5 * C;
	} else if (T > u->paid_max) {
		return (C * T - u->CP) / BILLING_HOUR_S;
	}
	for (int j = 0; j < k; j++)
		v[n + (size_t)j] = *it;
	return bb_finish(s, v, n + (size_t)k, rem_h, NULL);
}

static enum px_err bb_grow(struct bb_state *s, size_t n,
			   struct px_error *err)
{
	struct bb_item *v;
	if (n <= s->cap)
		return PX_OK;
	v = px_reallocarray(s->items, n, sizeof *v);
	if (!v)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	s->items = v;
	s->cap = n;
	return PX_OK;
}

/* The lowest expected cost to finish of the fleet summed in u (v[0..n))
 * with k = 1 .. slots copies of it added, and that k.  The cost falls
 * with k, then rises (each copy cuts the time to finish by less and pays
 * as much), so the first k after which it rises is found by bisection,
 * started from *ret_k. */
static double bb_fill(const struct bb_state *s, struct bb_item *v, size_t n,
		      const struct bb_sums *u, const double *eff,
		      const struct bb_item *it, int slots, double rem_h,
		      int *ret_k)
{
	int k = *ret_k, lo = 1, hi = slots;
	double f, fl, fr;

	/* *ret_k holds the k found last time for this market, which moves
	 * little from one pick to the next: first see whether it (clamped
	 * to the slots) is still where the cost turns */
	if (k < 1)
		k = 1;
	if (k > slots)
		k = slots;
	f = bb_finish_with(s, v, n, u, eff, it, k, rem_h);
	fl = k > 1 ? bb_finish_with(s, v, n, u, eff, it, k - 1, rem_h) :
	     INFINITY;
	fr = k < slots ? bb_finish_with(s, v, n, u, eff, it, k + 1, rem_h) :
	     INFINITY;
	if (!(fl <= f) && !(fr < f)) {
		*ret_k = k;
		return f;
	}
	if (fl <= f)
		hi = k - 1;
	else
		lo = k + 1;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (bb_finish_with(s, v, n, u, eff, it, mid + 1, rem_h) <
		    bb_finish_with(s, v, n, u, eff, it, mid, rem_h))
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_k = lo;
	return bb_finish_with(s, v, n, u, eff, it, lo, rem_h);
}

/* The candidate market to add to the planned fleet v[0..n), which has
 * `slots` free spot slots: each market's candidate (its delta with the
 * lowest cost per work) is judged by the fleet it would fill, the lowest
 * expected cost to finish with k = 1 .. slots copies of it (bb_fill), and
 * the market whose fleet is cheapest wins (*ret_k: its k).  Judged by
 * its own cost per marginal work instead, a slow instance that wins free
 * hours looks cheap to an empty fleet, and the cap filled with them runs
 * at a fraction of the rate of faster ones while the reliable tier's
 * hours go on (on the 2016 trace, 32 m1.large where 26 c1.xlarge did 3
 * times the work).  Near the end, k = 1 is the cost to finish of one
 * more instance: a fast one that ends the job inside paid hours can beat
 * a cheap one that adds an hour.  Only the markets on the front
 * (bb_front) can win.  u is bb_sum of v[0..n).  -1 when none is valid.
 * Uses v[n..n+slots) as scratch. */
/* Whether one instance of market i fits in the vCPUs the fleet may
 * still take. */
static bool bb_fits(const struct bb_state *s, size_t i)
{
	return s->vroom == INT64_MAX ||
	       s->env->types[s->env->markets[i].type].vcpus <= s->vroom;
}

static int bb_pick(struct bb_state *s, size_t n, const struct bb_sums *u,
		   int slots, double rem_h, int *ret_k)
{
	struct bb_item *v = s->items;
	double best_key = INFINITY;
	int best = -1;

	if (slots < 1)
		slots = 1;
	for (int j = 1; j <= slots; j++)
		s->eff[j] = pol_rate(s->env, s->sc, u->cnt + j, 1.0);
	for (size_t j = 0; j < s->n_front; j++) {
		int i = s->front[j];

		if (!bb_fits(s, (size_t)i))
			continue;
		double key = bb_fill(s, v, n, u, s->eff, &s->pick[i], slots,
				     rem_h, &s->kfill[i]);
		if (key < best_key || (key == best_key && i < best)) {
			best = i;
			best_key = key;
			*ret_k = s->kfill[i];
		}
	}
	return best;
}

/* Whether market a's candidate goes before b's on the front's order:
 * lower charge, then faster, then the lower index (invalid candidates
 * have an infinite charge and go last). */
static bool bb_before(const struct bb_state *s, int a, int b)
{
	const struct bb_item *x = &s->pick[a], *y = &s->pick[b];

	if (x->cost != y->cost)
		return x->cost < y->cost;
	if (x->speed != y->speed)
		return x->speed > y->speed;
	return a < b;
}

/* Market i's candidate changed: its planned item, and its place in the
 * order (moved left or right, the rest stays sorted). */
static void bb_reorder(struct bb_state *s, size_t i)
{
	const struct pol_env *env = s->env;
	const struct bb_cand *c = &s->cand[i];
	int p = s->pos[i];

	s->pick[i] = (struct bb_item){
		.cost = c->valid ? c->best.cost : INFINITY,
		.speed = c->valid ? bb_opt_speed(env, i, &c->best) : 0,
		.inst = SIZE_MAX,
	};
	while (p > 0 && bb_before(s, (int)i, s->order[p - 1])) {
		s->order[p] = s->order[p - 1];
		s->pos[s->order[p]] = p;
		p--;
	}
	while (p + 1 < (int)env->n_markets &&
	       bb_before(s, s->order[p + 1], (int)i)) {
		s->order[p] = s->order[p + 1];
		s->pos[s->order[p]] = p;
		p++;
	}
	s->order[p] = (int)i;
	s->pos[i] = p;
}

/* The markets whose candidate no other one beats in both expected charge
 * and effective speed (ties: the lower index), the only ones bb_pick
 * needs: the cost to finish only grows with an instance's charge and
 * only falls with its speed, so a dominated candidate never fills a
 * cheaper fleet.  In the order by charge, a market is on the front when
 * it is faster than every one before it. */
static void bb_front(struct bb_state *s)
{
	double fastest = -INFINITY;

	s->n_front = 0;
	for (size_t j = 0; j < s->env->n_markets; j++) {
		int i = s->order[j];
		if (s->pick[i].cost == INFINITY)
			break;
		if (s->pick[i].speed <= fastest)
			continue;
		fastest = s->pick[i].speed;
		s->front[s->n_front++] = i;
	}
}

/* The runtime floor's pick: of every market's two candidates (the lowest
 * cost per work and the least churn) that cost no more per work than
 * cap_per_speed, the cheapest per work whose effective speed is at least
 * need, else the fastest.  -1 when none; *ret_fast says which of the two. */
static int bb_pick_rate(const struct bb_state *s, double need,
			double cap_per_speed, bool *ret_fast)
{
	const struct pol_env *env = s->env;
	double best_v = 0, best_score = INFINITY;
	bool best_ok = false;
	int best = -1;

	for (size_t i = 0; i < env->n_markets; i++) {
		const struct bb_cand *c = &s->cand[i];

		if (!c->valid || !bb_fits(s, i))
			continue;
		for (int f = 0; f < 2; f++) {
			const struct bb_opt *o = f ? &c->fast : &c->best;
			double v = bb_opt_speed(env, i, o);
			bool ok = v >= need;

			if (o->score * BILLING_HOUR_S > cap_per_speed)
				continue;
			if (best < 0 || (ok && !best_ok) ||
			    (ok == best_ok && (ok ? o->score < best_score :
					       v > best_v))) {
				best = (int)i;
				best_v = v;
				best_score = o->score;
				best_ok = ok;
				*ret_fast = f;
			}
		}
	}
	return best;
}

/* The instance the acquisitions would add to the planned fleet v[0..n)
 * (u: its bb_sum), of which spot are spot instances: bb_pick's candidate or, before the
 * end game, when a fleet filled to spot.max_instances with it would run
 * slower than the baselines' fleet, bb_pick_rate's.  Uses v[n]. */
static void bb_choose(struct bb_state *s, size_t n, const struct bb_sums *u,
		      int spot, double rem_h, double T_s, struct bb_choice *ch)
{
	const struct pol_env *env = s->env;
	const struct jobspec *job = env->job;
	/* the floor judges the fleet the spec allows; the pick fills only
	 * the slots the exploration allows now (pol_spot_max) */
	int slots = job->spot.max_instances - spot;
	double sp;
	bool fast = false;

	ch->k = 1;
	ch->by_rate = false;
	ch->m = bb_pick(s, n, u, pol_spot_max(env, s->sc) - spot, rem_h,
			&ch->k);
	if (ch->m < 0)
		return;
	ch->o = s->cand[ch->m].best;
	sp = env->types[env->markets[ch->m].type].speed;
	if (T_s > END_S && slots > 0 &&
	    bb_opt_speed(env, (size_t)ch->m, &ch->o) < s->need &&
	    pol_rate(env, s->sc, u->cnt + slots, u->S + slots * sp *
		     ch->o.useful_s / BILLING_HOUR_S) < s->w_min) {
		int m = bb_pick_rate(s, s->need, s->cap_per_speed, &fast);
		if (m >= 0) {
			ch->k = 1;
			ch->m = m;
			ch->o = fast ? s->cand[m].fast : s->cand[m].best;
			ch->by_rate = true;
		}
	}
	ch->speed = bb_opt_speed(env, (size_t)ch->m, &ch->o);
	s->items[n] = (struct bb_item){
		.cost = ch->o.cost, .speed = ch->speed, .inst = SIZE_MAX,
	};
	ch->f = bb_finish(s, s->items, n + 1, rem_h, NULL);
}

/* The candidates of every market at now, redone where the price changed
 * or the estimates were renewed (hourly); only when a decision needs
 * them (a full fleet with no hour ending needs none). */
static void bb_refresh(struct bb_state *s, const struct pol_input *in)
{
	const struct pol_env *env = s->env;
	bool changed = false;

	for (size_t i = 0; i < env->n_markets; i++) {
		int64_t p;

		if (!market_view_price(in->mv, env->markets[i].market, &p)) {
			if (s->cand[i].valid) {
				s->cand[i].valid = false;
				bb_reorder(s, i);
				changed = true;
			}
			continue;
		}
		if (p != s->cand[i].price || !s->cand[i].valid ||
		    s->cand[i].tight != s->tight ||
		    s->cand[i].at_s < s->memo[i].at_s ||
		    (s->env->billing == BILLING_PER_SECOND &&
		     in->now_s - s->cand[i].at_s >= RISK_STEP_S)) {
			bb_candidate(s, i, p, in->now_s);
			bb_reorder(s, i);
			changed = true;
		}
	}
	if (changed)
		bb_front(s);
}

/* One decision's working set: what bb_decide's steps plan, in order, on
 * s->items (the fleet as it would be: items[0..n)). */
struct bb_work {
	struct bb_state *s;
	const struct pol_input *in;
	struct pol_actions *out;
	/* acquisitions stop at what proteusd's exploration allows now
	 * (max); the runtime floor's swaps judge the fleet the spec allows
	 * (cap: a limited fleet is not one to swap for faster instances) */
	int max, cap;
	double rem;              /* work left, hours */
	size_t n;                /* items planned */
	int spot;                /* spot instances among them */
	double f0, T0;           /* the planned fleet's expected cost to
				    finish, and its time to */
	bool fresh;              /* candidates refreshed in this call */
	/* a release (left) or an acquisition (joined) asked for in this
	 * decision: the re-form it causes is paid once (bb_reform) */
	bool left, joined;
};

/* At the start: the reliable tier acquired, and counted as if it were
 * already in the fleet. */
static enum px_err bb_plan_reliable(struct bb_work *w, struct px_error *err)
{
	const struct pol_env *env = w->s->env;
	const struct jobspec *job = env->job;
	struct pol_action a = {
		.kind = POL_ACQUIRE, .market = -1,
		.type = env->reliable_type, .reliable = true,
		.count = job->reliable.count,
	};
	enum px_err r = push(w->out, &a, err);

	if (r != PX_OK)
		return r;
	for (int i = 0; i < job->reliable.count; i++)
		w->s->items[w->n++] = (struct bb_item){
			.cost = (double)env->types[env->reliable_type].od_uusd,
			.speed = env->types[env->reliable_type].speed,
			.inst = SIZE_MAX,
		};
	return PX_OK;
}

/* The candidates' news (the risk estimator's samples, memos past their
 * horizon) and the fleet's instances as items, but the warned ones. */
static void bb_plan_fleet(struct bb_work *w)
{
	struct bb_state *s = w->s;
	const struct pol_env *env = s->env;
	const struct pol_input *in = w->in;
	const struct pol_fleet *f = in->fleet;
	bool legacy = env->billing == BILLING_LEGACY_HOURLY;

	risk_update(s->risk, in->mv, s->changed);
	for (size_t i = 0; i < env->n_markets; i++)
		if (s->changed[i] &&
		    in->now_s - s->memo[i].at_s >= RISK_HORIZON_S) {
			s->memo[i].n = 0;
			s->memo[i].at_s = in->now_s;
		}
	for (size_t i = 0; i < f->n; i++) {
		const struct pol_instance *v = &f->v[i];
		struct bb_item *it = &s->items[w->n];
		if (v->warned)
			continue;
		bb_inst(s, in, v, &it->cost, &it->speed);
		it->paid_s = legacy && v->period_end_s > in->now_s ?
			     (double)(v->period_end_s - in->now_s) : 0;
		it->gone = false;
		it->inst = i;
		w->n++;
		if (v->market >= 0)
			w->spot++;
	}
}

/* The rate (work-hours an hour) that does the work left by the job's
 * deadline less k overheads (startup_seconds + restart_seconds: a fleet
 * change) and a tick (the most a decision can come late); at least a
 * minute is left for it. */
static double bb_deadline_rate(const struct bb_work *w, int k)
{
	const struct jobspec *job = w->s->env->job;
	double left = (double)w->in->progress->start_s +
		      job->finish_by_hours * BILLING_HOUR_S -
		      (double)w->in->now_s -
		      k * (job->startup_seconds + job->restart_seconds) -
		      job->tick_seconds;

	return w->rem * BILLING_HOUR_S / (left > 60 ? left : 60);
}

/* Whether spot in market m at price p costs no more per work than
 * reference_type on demand (the cap bb_set_floor set). */
static bool bb_within_od(const struct bb_state *s, size_t m, int64_t p)
{
	double speed = s->env->types[s->env->markets[m].type].speed;

	return speed > 0 && (double)p <= s->cap_per_speed * speed;
}

/* Whether the baselines' fleet does less work per instance than one
 * instance alone (scaling_efficiency or the measured profile below 1):
 * only then is a slower fleet cheaper per work. */
static bool bb_scaling_loses(const struct pol_env *env,
			     const struct pol_scaling *sc)
{
	const struct jobspec *job = env->job;
	int n = job->instances + job->reliable.count;
	double one = pol_rate(env, sc, 1, env->types[env->ref_type].speed);

	return n > 1 && pol_base_rate(env, sc) < 0.99 * n * one;
}

/* The share of the trailing AVAIL_S in which the best of the job's
 * markets had spot within the cost cap (bb_within_od), from the prices
 * seen; 0 where no market has AVAIL_S / 2 of history.  The best market
 * alone: spot was there at least that often.  Recomputed hourly. */
#define AVAIL_S (3 * 86400)
static double bb_availability(struct bb_state *s, const struct pol_input *in)
{
	const struct pol_env *env = s->env;
	int64_t now = in->now_s, lo = now - AVAIL_S;
	double best = 0;

	if (s->avail_at_s > 0 && now - s->avail_at_s < BILLING_HOUR_S)
		return s->avail;
	for (size_t i = 0; i < env->n_markets; i++) {
		const int64_t *t, *p;
		size_t n, k = 0, hi;
		int64_t from, ok = 0;
		double share;

		if (!market_view_history(in->mv, env->markets[i].market, &t,
					 &p, &n) || now - t[0] < AVAIL_S / 2)
			continue;
		/* the last record at or before lo, by bisection */
		for (hi = n; k + 1 < hi;) {
			size_t mid = k + (hi - k) / 2;

			if (t[mid] <= lo)
				k = mid;
			else
				hi = mid;
		}
		from = t[0] > lo ? t[0] : lo;
		for (; k < n; k++) {
			int64_t a = t[k] > from ? t[k] : from;
			int64_t b = k + 1 < n && t[k + 1] < now ? t[k + 1] : now;

			if (b > a && bb_within_od(s, i, p[k]))
				ok += b - a;
		}
		share = (double)ok / (double)(now - from);
		if (share > best)
			best = share;
	}
	s->avail = best;
	s->avail_at_s = now;
	return best;
}

/* With finish_by_hours, where a smaller fleet is cheaper per work, the
 * floor's schedule (the baselines', left seconds of it to go) stretches
 * toward the deadline: to BB_DL_SLACK of it less four overheads and a
 * tick, its rate divided by the share of time spot was there lately
 * (bb_availability), and never above the baselines' floor w_min.  A
 * loose deadline buys a slower, cheaper fleet; a market whose spot
 * comes and goes keeps the fleet fast while spot is there, as Uniform
 * Progress takes spot whenever it can: a stretch that did not look at
 * availability ran into the outages late and ended on demand, at up to
 * 2.9x Uniform Progress's cost (docs/benchmarks.md, "Session 31").
 * Nothing stretches before AVAIL_S / 2 of prices has been seen. */
static double bb_stretch(const struct bb_work *w, double w_min, double left)
{
	struct bb_state *s = w->s;
	const struct jobspec *job = s->env->job;
	const struct pol_input *in = w->in;
	double sched, a, w_s;

	if (!(job->finish_by_hours > 0) || !bb_scaling_loses(s->env, s->sc))
		return w_min;
	sched = BB_DL_SLACK * (job->finish_by_hours * BILLING_HOUR_S -
			       4 * (job->startup_seconds +
				    job->restart_seconds) -
			       job->tick_seconds) -
		(double)(in->now_s - in->progress->start_s);
	if (!(sched > left))
		return w_min;
	a = bb_availability(s, in);
	if (!(a > 0))
		return w_min;
	w_s = w->rem / sched * BILLING_HOUR_S / a;
	return w_s < w_min ? w_s : w_min;
}

/* The runtime floor: the baselines' rate (s->w_min), the cost cap per
 * speed (s->cap_per_speed) and the speed each slot needs (s->need). */
static void bb_set_floor(struct bb_work *w)
{
	struct bb_state *s = w->s;
	const struct pol_env *env = s->env;
	const struct jobspec *job = env->job;
	const struct pol_input *in = w->in;
	double w_min;

	/* never pay more per work than on-demand for the floor */
	s->cap_per_speed = (double)env->types[env->ref_type].od_uusd /
			   env->types[env->ref_type].speed;
	/* the rate of the baselines' fleet: never plan a slower one, except
	 * in the last END_S where the cost to finish alone decides */
	w_min = pol_base_rate(env, s->sc);
	/* behind the baselines' schedule (their planned runtime, one
	 * startup included), the rate that still ends the job in it */
	if (w_min > 0) {
		double left = (double)(in->progress->start_s - in->now_s) +
			      job->startup_seconds +
			      in->progress->work_total_h / w_min *
			      BILLING_HOUR_S;
		double w_req = left > 0 ? w->rem / left * BILLING_HOUR_S :
			       INFINITY;
		if (w_req > w_min)
			w_min = w_req;
		w_min = bb_stretch(w, w_min, left);
	}
	/* with finish_by_hours, at least the rate that ends the job two
	 * overheads and a tick before it */
	s->w_base = w_min;
	if (job->finish_by_hours > 0) {
		double w_dl = bb_deadline_rate(w, 2);

		if (w_dl > w_min)
			w_min = w_dl;
	}
	s->w_min = w_min;
	/* the effective speed each of spot.max_instances needs for that
	 * rate; below it at the cap, the floor swaps slow (churning)
	 * instances for faster ones */
	s->need = w->cap > 0 ? (w_min / pol_rate(env, s->sc,
				job->reliable.count + w->cap, 1.0) -
				job->reliable.count *
				env->types[env->reliable_type].speed) / w->cap :
		  INFINITY;
}

/* What a re-form of a program's group costs the job (restart_seconds,
 * docs/simulate.md "Re-forms"): every member waits, paid, doing nothing,
 * so the planned fleet's charge for restart_seconds.  A decision's
 * releases leave together and its acquisitions join together: each kind
 * pays it once (already: 0).  0 without restart_seconds. */
static double bb_reform(const struct bb_work *w, bool already)
{
	double rs = w->s->env->job->restart_seconds;
	struct bb_sums u;

	if (!(rs > 0) || already)
		return 0;
	bb_sum(w->s->items, w->n, &u);
	return u.C * rs / BILLING_HOUR_S;
}

/* Whether releasing it (its hour ends now; without it the fleet would
 * finish at f1 in T1) pays: it lowers the expected cost to finish
 * without going below the baselines' rate before the end game, or
 * swapping it for what the acquisitions would take instead does. */
static bool bb_release_pays(struct bb_work *w, const struct bb_item *it,
			    double f1, double T1)
{
	struct bb_state *s = w->s;
	struct bb_choice ch;
	struct bb_sums u;

	/* before the end game, not below the baselines' rate */
	if (f1 + bb_reform(w, w->left) < w->f0 && (w->T0 <= END_S ||
			   w->rem / T1 * BILLING_HOUR_S >= s->w_min ||
			   it->cost > s->cap_per_speed * it->speed))
		return true;
	/* swap for what the acquisitions would take instead when that
	 * lowers the expected cost to finish, or, with the fleet full and
	 * slower than the baselines', when it is faster */
	if (!w->fresh) {
		bb_refresh(s, w->in);
		w->fresh = true;
	}
	bb_sum(s->items, w->n, &u);
	bb_choose(s, w->n, &u, w->spot - 1, w->rem, w->T0, &ch);
	return ch.m >= 0 &&
	       (ch.f + bb_reform(w, w->left) + bb_reform(w, w->joined) <
		w->f0 - (SWAP_MARGIN - 1) * it->cost *
		bb_hours(s->env->billing, w->T0) ||
		(w->spot >= w->cap && w->T0 > END_S &&
		 w->rem / w->T0 * BILLING_HOUR_S < s->w_min &&
		 it->speed < s->need &&
		 ch.speed > it->speed));
}

/* Releases at the end of billing hours, where they pay. */
static enum px_err bb_releases(struct bb_work *w, struct px_error *err)
{
	struct bb_state *s = w->s;
	const struct pol_fleet *f = w->in->fleet;
	const struct bb_item *kept = NULL;

	w->f0 = bb_finish(s, s->items, w->n, w->rem, &w->T0);
	for (size_t j = 0; j < w->n; j++) {
		struct bb_item *it = &s->items[j];
		const struct pol_instance *v;
		double f1, T1;
		enum px_err r;

		if (it->inst == SIZE_MAX || it->paid_s > 0)
			continue;
		v = &f->v[it->inst];
		if (v->market < 0 || v->period_end_s != w->in->now_s)
			continue;
		/* instances launched together end their hours together: one
		 * just like the last one kept, in the same fleet, is kept
		 * too (every number below would be the same) */
		if (kept && kept->cost == it->cost &&
		    kept->speed == it->speed)
			continue;
		it->gone = true;
		f1 = bb_finish(s, s->items, w->n, w->rem, &T1);
		if (!bb_release_pays(w, it, f1, T1)) {
			it->gone = false;
			kept = it;
			continue;
		}
		kept = NULL;
		bb_finish(s, s->items, w->n, w->rem, &w->T0);
		struct pol_action a = {.kind = POL_RELEASE, .instance = v->id};
		r = push(w->out, &a, err);
		if (r != PX_OK)
			return r;
		w->f0 = f1;
		w->spot--;
		w->left = true;
	}
	return PX_OK;
}

/* The runtime floor's instance, where the cost to finish alone would
 * add none (it only rises from f0 on): of every market's best delta that
 * fits and costs no more per work than on demand, the one that raises
 * the cost to finish least per work-hour it adds to the fleet's rate
 * (u: bb_sum of v[0..n), rate its rate).  bb_pick's lowest cost to
 * finish there is the smallest instance, which adds least, and under a
 * scaling_efficiency below 1 a fleet of small ones pays for the count:
 * on the 2016 slice a 9.6 h deadline took 4 m1.large before the second
 * c1.xlarge, 15% dearer than Uniform Progress's 4 c1.xlarge.  Uses v[n];
 * false when none adds work. */
static bool bb_floor_pick(struct bb_state *s, size_t n,
			  const struct bb_sums *u, double rate, double f0,
			  double rem_h, struct bb_choice *ch)
{
	const struct pol_env *env = s->env;
	double best_key = INFINITY;
	struct bb_choice c = {.m = -1, .k = 1};

	for (size_t i = 0; i < env->n_markets; i++) {
		const struct bb_cand *cd = &s->cand[i];
		double sp, dw, f, key;

		if (!cd->valid || !bb_fits(s, i) ||
		    !bb_within_od(s, i, cd->price) ||
		    cd->best.score * BILLING_HOUR_S > s->cap_per_speed)
			continue;
		sp = bb_opt_speed(env, i, &cd->best);
		dw = pol_rate(env, s->sc, u->cnt + 1, u->S + sp) - rate;
		if (!(dw > 0))
			continue;
		s->items[n] = (struct bb_item){
			.cost = cd->best.cost, .speed = sp, .inst = SIZE_MAX,
		};
		f = bb_finish(s, s->items, n + 1, rem_h, NULL);
		key = (f - f0) / dw;
		if (key < best_key) {
			best_key = key;
			c.m = (int)i;
			c.o = cd->best;
			c.speed = sp;
			c.f = f;
		}
	}
	if (c.m < 0)
		return false;
	s->items[n] = (struct bb_item){
		.cost = c.o.cost, .speed = c.speed, .inst = SIZE_MAX,
	};
	*ch = c;
	return true;
}

/* Acquisitions while they lower the expected cost to finish, or while
 * the fleet is slower than the baselines'. */
static enum px_err bb_acquisitions(struct bb_work *w, struct px_error *err)
{
	struct bb_state *s = w->s;
	struct bb_choice ch = { .m = -1 };
	int again = 0;

	if (w->spot < w->max && !w->fresh)
		bb_refresh(s, w->in);
	while (w->spot < w->max) {
		struct bb_sums u;
		double f1, rate, dw;
		enum px_err r;

		bb_sum(s->items, w->n, &u);
		rate = pol_rate(s->env, s->sc, u.cnt, u.S);
		if (again > 0) {
			/* the rest of the fleet bb_pick planned: the same
			 * candidate, judged again as one more instance */
			s->items[w->n] = s->items[w->n - 1];
			ch.f = bb_finish(s, s->items, w->n + 1, w->rem, NULL);
			again--;
		} else {
			bb_choose(s, w->n, &u, w->spot, w->rem, w->T0, &ch);
			if (ch.m < 0)
				break;
			/* the floor's own choice where it is the floor that
			 * adds (bb_pick_rate's already is one) */
			if (!ch.by_rate && rate > 0 && rate < s->w_min &&
			    w->T0 > END_S &&
			    ch.f + bb_reform(w, w->joined) >= w->f0)
				bb_floor_pick(s, w->n, &u, rate, w->f0, w->rem,
					      &ch);
			again = ch.k - 1;
		}
		f1 = ch.f;
		/* never spot dearer per work than reference_type on demand,
		 * expected or now (the floor took it only up to that, and
		 * with an empty fleet any instance lowers the cost to finish,
		 * from none: in an outage that was a bid at a price above
		 * on-demand's; a deadline takes on-demand instead:
		 * bb_on_demand) */
		if (ch.o.score * BILLING_HOUR_S > s->cap_per_speed ||
		    !bb_within_od(s, (size_t)ch.m, s->cand[ch.m].price))
			break;
		/* the floor pays no more per work-hour that an instance adds
		 * to the fleet's rate (dw: a scaling profile can make the
		 * last instances nearly useless) than reference_type on
		 * demand per work.  (Until session 31 the limit was the
		 * fleet's own cost per work: a candidate carries its startup
		 * and a live instance does not, and under e < 1 every
		 * further instance adds less than the fleet's average, so
		 * the floor never held for a job without a reliable tier:
		 * 2-8x lowest-price's runtime on the 2021 trace, and with a
		 * deadline a fleet that fell behind the line and ran on
		 * demand, at 1.3-2.8x Uniform Progress's cost;
		 * docs/benchmarks.md, "Session 31".) */
		dw = pol_rate(s->env, s->sc, u.cnt + 1, u.S + ch.speed) -
		     rate;
		if (f1 + bb_reform(w, w->joined) >= w->f0 &&
		    (rate >= s->w_min || w->T0 <= END_S ||
		    (rate > 0 && !(dw > 0 &&
				   ch.o.cost / dw <= s->cap_per_speed))))
			break;
		if (!bb_fits(s, (size_t)ch.m)) {
			/* its copies no longer fit: choose again */
			if (again > 0) {
				again = 0;
				continue;
			}
			break;
		}
		struct pol_action a = {
			.kind = POL_ACQUIRE, .market = ch.m, .count = 1,
			.bid_uusd = ch.o.bid,
		};
		int64_t od = s->env->types[s->env->markets[ch.m].type].od_uusd;

		if (s->vroom != INT64_MAX)
			s->vroom -= s->env->types[s->env->markets[ch.m].type]
					.vcpus;

		if (s->tight && a.bid_uusd < od)
			a.bid_uusd = od;
		r = push(w->out, &a, err);
		if (r != PX_OK)
			return r;
		s->items[w->n] = (struct bb_item){
			.cost = ch.o.cost, .speed = ch.speed, .inst = SIZE_MAX,
		};
		w->n++;
		w->f0 = f1;
		bb_finish(s, s->items, w->n, w->rem, &w->T0);
		w->spot++;
		w->joined = true;
	}
	return PX_OK;
}

/* On-demand instances beyond the reliable tier. */
static int bb_extra_od(const struct bb_work *w)
{
	const struct pol_fleet *f = w->in->fleet;
	int n = 0;

	for (size_t i = 0; i < f->n; i++)
		if (f->v[i].market < 0 && !f->v[i].warned)
			n++;
	n -= w->s->env->job->reliable.count;
	return n > 0 ? n : 0;
}

/* Whether the job runs on demand now for finish_by_hours (docs/
 * simulate.md, "Deadlines"): Uniform Progress's rules (pol_uniform.c)
 * with BidBrain's spot fleet in place of its lowest-price one.  With the
 * line t C / D and d = startup_seconds + restart_seconds: on demand for
 * good once the time left is less than the work left at the on-demand
 * fleet's rate (the tier and `instances` of reference_type) plus two
 * overheads and a tick; on demand when no spot is held or to be had at
 * on-demand's cost per work and the work done is behind the line; back
 * to spot when there is some and the work done is ahead of the line two
 * overheads on (hysteresis). */
static bool bb_on_demand(struct bb_work *w)
{
	struct bb_state *s = w->s;
	const struct pol_env *env = s->env;
	const struct jobspec *job = env->job;
	const struct pol_input *in = w->in;
	double line = job->work_hours / job->finish_by_hours;
	double d = (job->startup_seconds + job->restart_seconds) /
		   BILLING_HOUR_S;
	double t = (double)(in->now_s - in->progress->start_s) /
		   BILLING_HOUR_S;
	double cp = in->progress->work_done_h;
	double r_od = pol_base_rate(env, s->sc);
	double left = job->finish_by_hours - t;
	double tick = (double)job->tick_seconds / BILLING_HOUR_S;
	double margin = left - (w->rem / r_od + 2 * d + tick);
	double T = INFINITY;
	bool avail = w->spot > 0;

	if (!s->for_good)
		s->for_good = !(r_od > 0) || margin < 0;
	if (s->for_good)
		return true;
	/* Tight: spot is bid at on-demand's price, the max price, as
	 * Uniform Progress bids, so that price moves do not take it, when
	 * the safety net's margin is under half the time left, or when the
	 * planned fleet (with no spot held: the baselines' rate, which the
	 * runtime floor keeps) would not end the job two overheads and a
	 * tick before the deadline.  BidBrain's bids at the price lost
	 * their spot to rises within minutes, each loss an overhead and a
	 * clock the margin could not spare: on a jittery market with
	 * outages it paid 2.8x Uniform Progress at a barely feasible
	 * deadline, and on the shipped 2016 slice 1.8x at 12-16 h, where
	 * its own plan was slower than the deadline; docs/benchmarks.md. */
	if (w->spot > 0)
		bb_finish(s, s->items, w->n, w->rem, &T);
	else if (s->w_base > 0)
		T = w->rem / s->w_base * BILLING_HOUR_S;
	s->tight = margin < 0.5 * left ||
		   !(T / BILLING_HOUR_S < left - 2 * d - tick);
	for (size_t i = 0; i < env->n_markets && !avail; i++) {
		int64_t p;

		avail = market_view_price(in->mv, env->markets[i].market,
					  &p) && bb_within_od(s, i, p);
	}
	if (bb_extra_od(w) > 0)
		return !(avail && cp >= (t + 2 * d) * line);
	return !avail && cp < t * line;
}

/* Switch the fleet: on demand (`instances` of reference_type beside the
 * tier, spot released) or back to spot (the extras released, newest
 * first; legacy: at their hour ends). */
static enum px_err bb_switch(struct bb_work *w, bool od, struct px_error *err)
{
	const struct pol_env *env = w->s->env;
	const struct pol_fleet *f = w->in->fleet;
	int extra = bb_extra_od(w), drop = od ? 0 : extra;
	bool legacy = env->billing == BILLING_LEGACY_HOURLY;
	enum px_err r = PX_OK;

	if (od && extra < env->job->instances) {
		struct pol_action a = {
			.kind = POL_ACQUIRE, .market = -1,
			.type = env->ref_type, .reliable = true,
			.count = env->job->instances - extra,
		};

		r = push(w->out, &a, err);
	}
	for (size_t i = f->n; r == PX_OK && i-- > 0;) {
		const struct pol_instance *v = &f->v[i];
		struct pol_action a = {.kind = POL_RELEASE, .instance = v->id};

		if (v->warned || (v->market < 0 && drop <= 0) ||
		    (v->market >= 0 && !od))
			continue;
		if (v->market < 0) {
			if (legacy && v->period_end_s != w->in->now_s)
				continue;
			drop--;
		}
		r = push(w->out, &a, err);
	}
	return r;
}

/* The BidBrain decision as the paper's steps in order, each on the same
 * working set: the reliable tier (at the start) and the fleet as items,
 * the runtime floor (the baselines' rate and the cost cap), releases at
 * hour ends, acquisitions while they pay. */
static enum px_err bb_decide(void *state, const struct pol_input *in,
			     struct pol_actions *out, struct px_error *err)
{
	struct bb_state *s = state;
	const struct jobspec *job = s->env->job;
	struct bb_work w = {
		.s = s, .in = in, .out = out,
		.max = pol_spot_max(s->env, in->scaling),
		.cap = job->spot.max_instances,
		.rem = in->progress->work_total_h - in->progress->work_done_h,
	};
	enum px_err r;

	s->sc = in->scaling;
	s->vroom = pol_spot_vcpus_room(s->env, in->scaling, in->fleet);
	s->tight = false;
	/* Only prices moved and the fleet is full: releases happen at hour
	 * ends and acquisitions need room, so nothing can change.  Skipping
	 * is exact: the estimator catches up on its samples at the next call
	 * and candidates are recomputed when their market changed. */
	if (in->why == POL_WHY_PRICE && pol_fleet_spot(in->fleet) >= w.max)
		return PX_OK;
	if (w.rem <= 0)
		return PX_OK;
	r = bb_grow(s, in->fleet->n + (size_t)job->reliable.count +
		    (size_t)w.cap + (size_t)job->instances + 2, err);
	if (r == PX_OK && in->why & POL_WHY_START && job->reliable.count > 0)
		r = bb_plan_reliable(&w, err);
	if (r != PX_OK)
		return r;
	bb_plan_fleet(&w);
	bb_set_floor(&w);
	if (job->finish_by_hours > 0) {
		bool od = bb_on_demand(&w);

		if (od || bb_extra_od(&w) > 0) {
			r = bb_switch(&w, od, err);
			if (r != PX_OK || od)
				return r;
		}
	}
	r = bb_releases(&w, err);
	return r == PX_OK ? bb_acquisitions(&w, err) : r;
}

const struct policy_ops pol_bidbrain_ops = {
	.name = "bidbrain",
	.summary = "Proteus's BidBrain: spot by expected cost per work, "
		   "bids = price + delta, free evicted hours counted",
	.wants = POL_WHY_PRICE | POL_WHY_HOUR_END | POL_WHY_EVICTION |
		 POL_WHY_WARNING | POL_WHY_TICK,
	.init = bb_init,
	.decide = bb_decide,
	.fini = bb_fini,
};
