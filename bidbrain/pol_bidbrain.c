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
 * that.
 *
 * Decisions plan the fleet by the expected cost to finish the job
 * (bb_finish): with the remaining work R and the planned fleet's rate w
 * (jobspec_fleet_rate) the job ends in T = R / w, and each instance pays
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
 *  - it acquires, one instance at a time, the best candidate (by cost per
 *    marginal work, or by cost to finish within END_S of the end: see
 *    bb_pick) while that lowers the cost to finish, up to
 *    spot.max_instances;
 *  - the runtime floor: before the last END_S it keeps the planned rate
 *    at least the baselines' (instances of reference_type plus the
 *    reliable tier; more when the job is behind their schedule, so that
 *    it still ends within their planned runtime) with spot that costs no
 *    more per work than reference_type on demand and whose marginal work
 *    per dollar is at least the fleet's (under a scaling profile the last
 *    instances may add almost nothing).  When a fleet filled to
 *    spot.max_instances with the best candidate would be slower than
 *    that, it takes a candidate whose effective speed is enough (the
 *    cheapest per work of each market's best and least-churning delta),
 *    else the fastest, and at the cap it swaps instances slower than that
 *    for faster ones (bb_choose, bb_pick_rate).  So its runtime is not
 *    longer than standard's by plan, unless that would take instances
 *    worth less than the fleet; in the last END_S the cost to finish
 *    alone decides.
 * Under per-second billing the per-type interruption rate is folded into
 * beta and nothing is prepaid.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "policy.h"
#include "risk.h"

/* No hand-picked constants: a swap is made when it lowers the expected
 * cost to finish at all (margin 1, as every other decision; the swapped-in
 * instance's startup is in its estimate), and the end game is the last
 * billing hour, where the rounding of the last hour rather than cost per
 * work decides (bb_pick).  tests/bench/bench_bidbrain_sweep.sh builds
 * BidBrain with other values (-DBB_SWAP_MARGIN=, -DBB_END_S=): the
 * benchmark windows' savings are flat for margins 1.0 to 1.2 and ends
 * 0.5 to 8 h, lower for larger margins (docs/benchmarks.md). */
#ifndef BB_SWAP_MARGIN
#define BB_SWAP_MARGIN 1.0
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
	struct risk *risk;
	struct bb_cand *cand;    /* per env market */
	struct bb_memo *memo;    /* per env market */
	bool *changed;
	struct bb_item *items;   /* decide's scratch: the planned fleet */
	size_t cap;
	/* this decision's runtime floor: the baselines' rate, the most per
	 * speed-hour it may cost (reference_type on demand), and the
	 * effective speed each spot slot needs for that rate at the cap */
	double w_min, cap_per_speed, need;
};

/* What an acquisition would add to the planned fleet (bb_choose). */
struct bb_choice {
	int m;                   /* market; -1: none */
	struct bb_opt o;
	double speed;            /* effective: speed x useful_s / hour */
	double f;                /* expected cost to finish with it */
};

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
	idx = px_calloc(n, sizeof *idx);
	od = px_calloc(n, sizeof *od);
	if (!s->cand || !s->memo || !s->changed || !idx || !od) {
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
		free(s->cand);
		free(s->memo);
		free(s->changed);
		free(s);
		return r;
	}
	*ret_state = s;
	return PX_OK;
}

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
	free(s);
}

/* beta and tau of market i for a bid at bid_uusd when the price is
 * price_uusd (risk_get_level: the chance that the price rises above the
 * bid within the hour, from the samples taken at that price, shrunk
 * towards those taken at or below the bid), with
 * current-era interruptions folded in under per-second billing. */
static void bb_estimate(struct bb_state *s, size_t i, int64_t price,
			int64_t bid, double *ret_beta, double *ret_tau)
{
	const struct pol_env *env = s->env;
	struct bb_memo *mo = &s->memo[i];
	struct risk_estimate e;
	double b = 0, t = RISK_HORIZON_S / 2.0;
	int j;

	if (bid >= price) {
		for (j = 0; j < mo->n && (mo->bid[j] != bid ||
					  mo->price[j] != price); j++)
			;
		if (j == mo->n) {
			j = mo->n < BB_MEMO ? mo->n++ : mo->next++ % BB_MEMO;
			mo->bid[j] = bid;
			mo->price[j] = price;
			risk_get_level(s->risk, i, price, bid, &mo->e[j]);
		}
		e = mo->e[j];
		b = e.beta;
		t = e.tau_s;
	} else {
		b = 1;
		t = 0;
	}
	if (env->billing == BILLING_PER_SECOND) {
		double r = env->types[env->markets[i].type].interrupt_per_h;
		double bi = 1 - exp(-r);
		double tot = 1 - (1 - b) * (1 - bi);
		if (tot > 0)
			t = (b * t + bi * RISK_HORIZON_S / 2.0) / (b + bi);
		b = tot;
	}
	*ret_beta = b;
	*ret_tau = t;
}

/* Recompute the best delta of market i at price p. */
static void bb_candidate(struct bb_state *s, size_t i, int64_t p,
			 int64_t now)
{
	const struct pol_env *env = s->env;
	const struct pol_type *ty = &env->types[env->markets[i].type];
	struct bb_cand *c = &s->cand[i];
	double loss = pol_loss_s(env);

	c->valid = false;
	c->price = p;
	c->at_s = now;
	for (int k = 0; k < RISK_DELTAS; k++) {
		struct billing_expect x;
		struct bb_opt o;
		double beta, tau, useful;

		bb_estimate(s, i, p, p + risk_delta_uusd(s->risk, i, k),
			    &beta, &tau);
		billing_expect_hour(env->billing, p, beta, tau, true, &x);
		useful = x.run_s - env->job->startup_seconds - beta * loss;
		if (useful <= 0 || ty->speed <= 0)
			continue;
		o = (struct bb_opt){
			.bid = p + risk_delta_uusd(s->risk, i, k),
			.cost = x.cost_uusd * BILLING_HOUR_S / x.run_s,
			.useful_s = useful * BILLING_HOUR_S / x.run_s,
			.score = x.cost_uusd / (ty->speed * useful),
		};
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


/* Expected billed hours for running x more seconds past what is paid.
 * Legacy-hourly: every started hour is charged, so anything in (0, 1 h]
 * costs a full hour, and beyond that the last hour is on average half
 * wasted (x/h + 0.5, a smooth stand-in for ceil whose exact value depends
 * on evictions still to come).  Per-second: x/h. */
static double bb_hours(enum billing_model b, double x)
{
	double h;
	if (x <= 0)
		return 0;
	h = x / BILLING_HOUR_S;
	if (b != BILLING_LEGACY_HOURLY)
		return h;
	return h + 0.5 < 1 ? 1 : h + 0.5;
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
	w = jobspec_fleet_rate(env->job, cnt, S);
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

/* The candidate market to add to the planned fleet v[0..n), whose live
 * items number c0 with speeds summing to S0: while the fleet would run
 * longer than END_S, the one with the lowest expected cost per marginal
 * work (c / (rate with it - rate without)); near the end, the one that
 * gives the lowest expected cost to finish (a fast instance that ends the
 * job inside paid hours can beat a cheap one that adds an hour).  -1 when
 * none is valid.  Uses v[n] as scratch. */
static int bb_pick(const struct bb_state *s, size_t n, int c0, double S0,
		   double rem_h, double T_s)
{
	const struct pol_env *env = s->env;
	struct bb_item *v = s->items;
	bool end = T_s <= END_S;
	double w0 = jobspec_fleet_rate(env->job, c0, S0), best_key = INFINITY;
	int best = -1;

	for (size_t i = 0; i < env->n_markets; i++) {
		const struct bb_cand *c = &s->cand[i];
		double key;
		if (!c->valid)
			continue;
		v[n] = (struct bb_item){
			.cost = c->best.cost,
			.speed = env->types[env->markets[i].type].speed *
				 c->best.useful_s / BILLING_HOUR_S,
			.inst = SIZE_MAX,
		};
		if (end) {
			key = bb_finish(s, v, n + 1, rem_h, NULL);
		} else {
			double dw = jobspec_fleet_rate(env->job, c0 + 1,
						       S0 + v[n].speed) - w0;
			key = dw > 0 ? c->best.cost / dw : INFINITY;
		}
		if (best < 0 || key < best_key) {
			best = (int)i;
			best_key = key;
		}
	}
	return best;
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
		double speed = env->types[env->markets[i].type].speed;

		if (!c->valid)
			continue;
		for (int f = 0; f < 2; f++) {
			const struct bb_opt *o = f ? &c->fast : &c->best;
			double v = speed * o->useful_s / BILLING_HOUR_S;
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

/* The instance the acquisitions would add to the planned fleet v[0..n),
 * of which spot are spot instances: bb_pick's candidate or, before the
 * end game, when a fleet filled to spot.max_instances with it would run
 * slower than the baselines' fleet, bb_pick_rate's.  Uses v[n]. */
static void bb_choose(struct bb_state *s, size_t n, int spot, double rem_h,
		      double T_s, struct bb_choice *ch)
{
	const struct pol_env *env = s->env;
	const struct jobspec *job = env->job;
	int slots = job->spot.max_instances - spot, cnt = 0;
	double S = 0, sp;
	bool fast = false;

	for (size_t j = 0; j < n; j++)
		if (!s->items[j].gone) {
			S += s->items[j].speed;
			cnt++;
		}
	ch->m = bb_pick(s, n, cnt, S, rem_h, T_s);
	if (ch->m < 0)
		return;
	ch->o = s->cand[ch->m].best;
	sp = env->types[env->markets[ch->m].type].speed;
	if (T_s > END_S && slots > 0 && sp * ch->o.useful_s / BILLING_HOUR_S <
	    s->need && jobspec_fleet_rate(job, cnt + slots, S + slots * sp *
					  ch->o.useful_s / BILLING_HOUR_S) <
	    s->w_min) {
		int m = bb_pick_rate(s, s->need, s->cap_per_speed, &fast);
		if (m >= 0) {
			ch->m = m;
			ch->o = fast ? s->cand[m].fast : s->cand[m].best;
			sp = env->types[env->markets[m].type].speed;
		}
	}
	ch->speed = sp * ch->o.useful_s / BILLING_HOUR_S;
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

	for (size_t i = 0; i < env->n_markets; i++) {
		int64_t p;

		if (!market_view_price(in->mv, env->markets[i].market, &p)) {
			s->cand[i].valid = false;
			continue;
		}
		if (p != s->cand[i].price || !s->cand[i].valid ||
		    s->cand[i].at_s < s->memo[i].at_s)
			bb_candidate(s, i, p, in->now_s);
	}
}

static enum px_err bb_decide(void *state, const struct pol_input *in,
			     struct pol_actions *out, struct px_error *err)
{
	struct bb_state *s = state;
	const struct pol_env *env = s->env;
	const struct jobspec *job = env->job;
	const struct pol_fleet *f = in->fleet;
	int max = job->spot.max_instances;
	bool legacy = env->billing == BILLING_LEGACY_HOURLY;
	double rem = in->progress->work_total_h - in->progress->work_done_h;
	double f0, T0, w_min, cap_per_speed;
	struct bb_choice ch;
	size_t n = 0;
	int spot = 0;
	bool fresh = false;       /* candidates refreshed in this call */
	enum px_err r;

	/* Only prices moved and the fleet is full: releases happen at hour
	 * ends and acquisitions need room, so nothing can change.  Skipping
	 * is exact: the estimator catches up on its samples at the next call
	 * and candidates are recomputed when their market changed. */
	if (in->why == POL_WHY_PRICE && pol_fleet_spot(f) >= max)
		return PX_OK;
	if (rem <= 0)
		return PX_OK;
	r = bb_grow(s, f->n + (size_t)job->reliable.count + (size_t)max + 2,
		    err);
	if (r != PX_OK)
		return r;
	if (in->why & POL_WHY_START && job->reliable.count > 0) {
		struct pol_action a = {
			.kind = POL_ACQUIRE, .market = -1,
			.type = env->reliable_type, .reliable = true,
			.count = job->reliable.count,
		};
		r = push(out, &a, err);
		if (r != PX_OK)
			return r;
		/* count the tier as if it were already in the fleet */
		for (int i = 0; i < job->reliable.count; i++)
			s->items[n++] = (struct bb_item){
				.cost = (double)env->types[
					env->reliable_type].od_uusd,
				.speed = env->types[env->reliable_type].speed,
				.inst = SIZE_MAX,
			};
	}
	risk_update(s->risk, in->mv, s->changed);
	for (size_t i = 0; i < env->n_markets; i++)
		if (s->changed[i] &&
		    in->now_s - s->memo[i].at_s >= RISK_HORIZON_S) {
			s->memo[i].n = 0;
			s->memo[i].at_s = in->now_s;
		}
	for (size_t i = 0; i < f->n; i++) {
		const struct pol_instance *v = &f->v[i];
		struct bb_item *it = &s->items[n];
		if (v->warned)
			continue;
		bb_inst(s, in, v, &it->cost, &it->speed);
		it->paid_s = legacy && v->period_end_s > in->now_s ?
			     (double)(v->period_end_s - in->now_s) : 0;
		it->gone = false;
		it->inst = i;
		n++;
		if (v->market >= 0)
			spot++;
	}
	/* the rate of the baselines' fleet: never plan a slower one, except
	 * in the last END_S where the cost to finish alone decides */
	w_min = jobspec_fleet_rate(job, job->instances + job->reliable.count,
				   job->instances *
				   env->types[env->ref_type].speed +
				   job->reliable.count *
				   env->types[env->reliable_type].speed);
	/* behind the baselines' schedule (their planned runtime, one
	 * startup included), the rate that still ends the job in it */
	if (w_min > 0) {
		double left = (double)(in->progress->start_s - in->now_s) +
			      job->startup_seconds +
			      in->progress->work_total_h / w_min *
			      BILLING_HOUR_S;
		double w_req = left > 0 ? rem / left * BILLING_HOUR_S :
			       INFINITY;
		if (w_req > w_min)
			w_min = w_req;
	}
	/* ... and never pay more per work than on-demand for that */
	cap_per_speed = (double)env->types[env->ref_type].od_uusd /
			env->types[env->ref_type].speed;
	/* the effective speed each of spot.max_instances needs for that
	 * rate; below it at the cap, the floor swaps slow (churning)
	 * instances for faster ones */
	s->w_min = w_min;
	s->cap_per_speed = cap_per_speed;
	s->need = max > 0 ? (w_min / jobspec_fleet_rate(job,
			     job->reliable.count + max, 1.0) -
			     job->reliable.count *
			     env->types[env->reliable_type].speed) / max :
		  INFINITY;
	/* releases at the end of billing hours */
	f0 = bb_finish(s, s->items, n, rem, &T0);
	for (size_t j = 0; j < n; j++) {
		struct bb_item *it = &s->items[j];
		const struct pol_instance *v;
		double f1, T1;
		bool drop;
		if (it->inst == SIZE_MAX || it->paid_s > 0)
			continue;
		v = &f->v[it->inst];
		if (v->market < 0 || v->period_end_s != in->now_s)
			continue;
		it->gone = true;
		f1 = bb_finish(s, s->items, n, rem, &T1);
		/* before the end game, not below the baselines' rate */
		drop = f1 < f0 && (T0 <= END_S ||
				   rem / T1 * BILLING_HOUR_S >= w_min ||
				   it->cost > cap_per_speed * it->speed);
		/* swap for what the acquisitions would take instead when
		 * that lowers the expected cost to finish, or, with the fleet
		 * full and slower than the baselines', when it is faster */
		if (!drop) {
			if (!fresh) {
				bb_refresh(s, in);
				fresh = true;
			}
			bb_choose(s, n, spot - 1, rem, T0, &ch);
			drop = ch.m >= 0 &&
			       (ch.f < f0 - (SWAP_MARGIN - 1) * it->cost *
				bb_hours(env->billing, T0) ||
				(spot >= max && T0 > END_S &&
				 rem / T0 * BILLING_HOUR_S < w_min &&
				 it->speed < s->need &&
				 ch.speed > it->speed));
		}
		if (!drop) {
			it->gone = false;
			continue;
		}
		bb_finish(s, s->items, n, rem, &T0);
		struct pol_action a = {.kind = POL_RELEASE, .instance = v->id};
		r = push(out, &a, err);
		if (r != PX_OK)
			return r;
		f0 = f1;
		spot--;
	}
	/* acquisitions while they lower the expected cost to finish, or
	 * while the fleet is slower than the baselines' */
	if (spot < max && !fresh)
		bb_refresh(s, in);
	while (spot < max) {
		double f1, S = 0, w, C = 0, dw;
		int cnt = 0;
		for (size_t j = 0; j < n; j++)
			if (!s->items[j].gone) {
				S += s->items[j].speed;
				C += s->items[j].cost;
				cnt++;
			}
		w = jobspec_fleet_rate(job, cnt, S);
		bb_choose(s, n, spot, rem, T0, &ch);
		if (ch.m < 0)
			break;
		f1 = ch.f;
		/* the floor never adds an instance that does less work per
		 * dollar than the fleet does (a scaling profile can make the
		 * last instances nearly useless) */
		dw = jobspec_fleet_rate(job, cnt + 1, S + ch.speed) - w;
		if (f1 >= f0 && (w >= w_min || T0 <= END_S ||
		    ch.o.score * BILLING_HOUR_S > cap_per_speed ||
		    (w > 0 && !(dw > 0 && ch.o.cost / dw <= C / w))))
			break;
		struct pol_action a = {
			.kind = POL_ACQUIRE, .market = ch.m, .count = 1,
			.bid_uusd = ch.o.bid,
		};
		r = push(out, &a, err);
		if (r != PX_OK)
			return r;
		s->items[n] = (struct bb_item){
			.cost = ch.o.cost, .speed = ch.speed, .inst = SIZE_MAX,
		};
		n++;
		f0 = f1;
		bb_finish(s, s->items, n, rem, &T0);
		spot++;
	}
	return PX_OK;
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
