/* pol_bidbrain.c -- Proteus's BidBrain (Harlap et al., EuroSys 2017).
 *
 * Keeps the job's on-demand reliable tier and rents spot capacity by
 * expected cost per unit of work.  For every market it may use and every
 * bid delta of the risk estimator (bid = current price + delta) it computes
 * the expected charge and useful time of the next billing hour from the
 * eviction probability beta and mean time to eviction tau learnt from
 * history before now (risk.h), counting an evicted partial hour as free
 * (billing_expect_hour) and a new instance's startup and lost clock as
 * useless time.  Each market's best delta is the one with the lowest
 * expected cost per speed-second.  Then:
 *  - at the end of a spot instance's billing hour it is released when its
 *    expected cost per marginal work for the next hour is above the
 *    fleet's average (it no longer pays for itself), or, when the fleet is
 *    at spot.max_instances, above 1.2x the best candidate's;
 *  - it acquires, one instance at a time, the candidate with the lowest
 *    expected cost per marginal work while that is below the fleet's
 *    average cost per work (so each acquisition lowers the average), up to
 *    spot.max_instances.
 * Marginal work uses the job's scaling model (jobspec_fleet_rate).  Under
 * per-second billing the per-type interruption rate is folded into beta.
 */
#include <math.h>
#include <stdlib.h>

#include "policy.h"
#include "risk.h"

#define SWAP_MARGIN 1.2

struct bb_cand {
	bool valid;
	int64_t price;           /* price when computed */
	int k;                   /* best delta */
	int64_t bid;
	double cost;             /* expected charge of the first hour, uusd */
	double useful_s;         /* expected useful seconds in it */
	double score;            /* cost / (speed * useful_s) */
};

struct bb_state {
	const struct pol_env *env;
	struct risk *risk;
	struct bb_cand *cand;    /* per env market */
	bool *changed;
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
	s->changed = px_calloc(n, sizeof *s->changed);
	idx = px_calloc(n, sizeof *idx);
	od = px_calloc(n, sizeof *od);
	if (!s->cand || !s->changed || !idx || !od) {
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
	free(s->cand);
	free(s->changed);
	free(s);
}

/* beta and tau of market i at delta k, with current-era interruptions
 * folded in under per-second billing. */
static void bb_estimate(const struct bb_state *s, size_t i, int k,
			double *ret_beta, double *ret_tau)
{
	const struct pol_env *env = s->env;
	struct risk_estimate e;
	double b = 0, t = RISK_HORIZON_S / 2.0;

	if (k >= 0) {
		risk_get(s->risk, i, k, &e);
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
static void bb_candidate(struct bb_state *s, size_t i, int64_t p)
{
	const struct pol_env *env = s->env;
	const struct pol_type *ty = &env->types[env->markets[i].type];
	struct bb_cand *c = &s->cand[i];
	double loss = pol_loss_s(env);

	c->valid = false;
	c->price = p;
	for (int k = 0; k < RISK_DELTAS; k++) {
		struct billing_expect x;
		double beta, tau, useful, score;

		bb_estimate(s, i, k, &beta, &tau);
		billing_expect_hour(env->billing, p, beta, tau, true, &x);
		useful = x.run_s - env->job->startup_seconds - beta * loss;
		if (useful <= 0 || ty->speed <= 0)
			continue;
		score = x.cost_uusd / (ty->speed * useful);
		if (!c->valid || score < c->score) {
			c->valid = true;
			c->k = k;
			c->bid = p + risk_delta_uusd(s->risk, i, k);
			c->cost = x.cost_uusd;
			c->useful_s = useful;
			c->score = score;
		}
	}
}

/* Expected next-hour charge and effective speed of a live instance. */
static void bb_inst(const struct bb_state *s, const struct pol_input *in,
		    const struct pol_instance *v, double *ret_cost,
		    double *ret_speed)
{
	const struct pol_env *env = s->env;
	double speed = env->types[v->type].speed;
	struct billing_expect x;
	int64_t p = 0;
	double beta, tau;
	int k;

	if (v->market < 0) {
		*ret_cost = (double)env->types[v->type].od_uusd;
		*ret_speed = speed;
		return;
	}
	if (!market_view_price(in->mv, env->markets[v->market].market, &p))
		p = v->hour_uusd;
	k = risk_delta_index(s->risk, (size_t)v->market, p, v->bid_uusd);
	bb_estimate(s, (size_t)v->market, k, &beta, &tau);
	billing_expect_hour(env->billing, p, beta, tau, false, &x);
	*ret_cost = x.cost_uusd;
	*ret_speed = speed * (x.run_s - beta * pol_loss_s(env)) /
		     BILLING_HOUR_S;
}

/* Best candidate for the next acquisition given fleet (n, S); its cost per
 * marginal work in *ret_cpw. */
static int bb_best(const struct bb_state *s, int n, double S,
		   double *ret_cpw)
{
	const struct pol_env *env = s->env;
	double w0 = jobspec_fleet_rate(env->job, n, S);
	int best = -1;
	double best_cpw = 0;

	for (size_t i = 0; i < env->n_markets; i++) {
		const struct bb_cand *c = &s->cand[i];
		double sp, dw, cpw;
		if (!c->valid)
			continue;
		sp = env->types[env->markets[i].type].speed * c->useful_s /
		     BILLING_HOUR_S;
		dw = jobspec_fleet_rate(env->job, n + 1, S + sp) - w0;
		if (dw <= 0)
			continue;
		cpw = c->cost / dw;
		if (best < 0 || cpw < best_cpw) {
			best = (int)i;
			best_cpw = cpw;
		}
	}
	*ret_cpw = best_cpw;
	return best;
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

static enum px_err bb_decide(void *state, const struct pol_input *in,
			     struct pol_actions *out, struct px_error *err)
{
	struct bb_state *s = state;
	const struct pol_env *env = s->env;
	const struct pol_fleet *f = in->fleet;
	int max = env->job->spot.max_instances;
	double C = 0, S = 0, cpw;
	int n = 0, spot = 0, best;
	enum px_err r;

	/* Only prices moved and the fleet is full: releases happen at hour
	 * ends and acquisitions need room, so nothing can change.  Skipping
	 * is exact: the estimator catches up on its samples at the next call
	 * and candidates are recomputed when their market changed. */
	if (in->why == POL_WHY_PRICE && pol_fleet_spot(f) >= max)
		return PX_OK;
	if (in->why & POL_WHY_START && env->job->reliable.count > 0) {
		struct pol_action a = {
			.kind = POL_ACQUIRE, .market = -1,
			.type = env->reliable_type, .reliable = true,
			.count = env->job->reliable.count,
		};
		r = push(out, &a, err);
		if (r != PX_OK)
			return r;
		/* count the tier as if it were already in the fleet */
		n = env->job->reliable.count;
		S = n * env->types[env->reliable_type].speed;
		C = n * (double)env->types[env->reliable_type].od_uusd;
	}
	risk_update(s->risk, in->mv, s->changed);
	for (size_t i = 0; i < env->n_markets; i++) {
		int64_t p;
		if (!market_view_price(in->mv, env->markets[i].market, &p)) {
			s->cand[i].valid = false;
			continue;
		}
		if (s->changed[i] || p != s->cand[i].price ||
		    !s->cand[i].valid)
			bb_candidate(s, i, p);
	}
	for (size_t i = 0; i < f->n; i++) {
		double c, sp;
		if (f->v[i].warned)
			continue;
		bb_inst(s, in, &f->v[i], &c, &sp);
		C += c;
		S += sp;
		n++;
		if (f->v[i].market >= 0)
			spot++;
	}
	/* releases at the end of billing hours */
	for (size_t i = 0; i < f->n; i++) {
		const struct pol_instance *v = &f->v[i];
		double c, sp, w, wo, mine;
		if (v->warned || v->market < 0 || v->period_end_s != in->now_s)
			continue;
		bb_inst(s, in, v, &c, &sp);
		w = jobspec_fleet_rate(env->job, n, S);
		wo = jobspec_fleet_rate(env->job, n - 1, S - sp);
		mine = w - wo > 0 ? c / (w - wo) : INFINITY;
		bool drop = mine > C / w;
		if (!drop && spot >= max) {
			best = bb_best(s, n - 1, S - sp, &cpw);
			drop = best >= 0 && mine > SWAP_MARGIN * cpw;
		}
		if (!drop)
			continue;
		struct pol_action a = {.kind = POL_RELEASE, .instance = v->id};
		r = push(out, &a, err);
		if (r != PX_OK)
			return r;
		C -= c;
		S -= sp;
		n--;
		spot--;
	}
	/* acquisitions while they lower the average cost per work */
	while (spot < max) {
		double w = jobspec_fleet_rate(env->job, n, S);
		const struct bb_cand *c;
		best = bb_best(s, n, S, &cpw);
		if (best < 0 || (w > 0 && cpw >= C / w))
			break;
		c = &s->cand[best];
		struct pol_action a = {
			.kind = POL_ACQUIRE, .market = best, .count = 1,
			.bid_uusd = c->bid,
		};
		r = push(out, &a, err);
		if (r != PX_OK)
			return r;
		C += c->cost;
		S += env->types[env->markets[best].type].speed * c->useful_s /
		     BILLING_HOUR_S;
		n++;
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
