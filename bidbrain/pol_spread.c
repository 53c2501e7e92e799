/* pol_spread.c -- "spread": a current-era policy for per-second billing
 * without bidding (max price = the on-demand price, as AWS defaults it).
 *
 * Each market's effective cost per work is price / (speed * useful), where
 * useful = 1 - rate * (startup + lost clock) / 3600 is the fraction of an
 * hour left after the expected restarts from the type's interruption rate.
 * It keeps the reliable tier, and acquires spot instances one at a time in
 * the market with the lowest effective cost whose share is below
 * ceil(SPREAD_SHARE * spot.max_instances) (diversification: at least
 * 1/SPREAD_SHARE markets when the fleet is full, so one capacity event
 * cannot take the whole fleet), while that lowers the job's average cost
 * per work.  Interrupted instances are replaced at once.  At each tick it
 * migrates up to 1/8 of the fleet from markets that became SPREAD_MIGRATE
 * times dearer than the best market with room, and releases instances that
 * no longer pay for themselves (per-second billing makes both cheap).
 */
#include <math.h>
#include <stdlib.h>

#include "policy.h"

#define SPREAD_SHARE 0.25
#define SPREAD_MIGRATE 1.3

struct sp_state {
	const struct pol_env *env;
	double *eff;             /* per env market: effective cost; <0: n/a */
	int64_t *price;
	int *count;              /* live spot instances per env market */
	double *useful;          /* per env type: sp_useful, once */
};

static double sp_useful(const struct pol_env *env, int type)
{
	double r = env->types[type].interrupt_per_h;
	double u = 1 - r * (env->job->startup_seconds + pol_loss_s(env)) /
		   BILLING_HOUR_S;
	return u < 0.05 ? 0.05 : u;
}

static enum px_err sp_init(const struct pol_env *env, void **ret_state,
			   struct px_error *err)
{
	struct sp_state *s = px_calloc(1, sizeof *s);
	size_t n = env->n_markets ? env->n_markets : 1;

	if (!s)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	s->env = env;
	s->eff = px_calloc(n, sizeof *s->eff);
	s->price = px_calloc(n, sizeof *s->price);
	s->count = px_calloc(n, sizeof *s->count);
	s->useful = px_calloc(env->n_types ? env->n_types : 1,
			      sizeof *s->useful);
	if (!s->eff || !s->price || !s->count || !s->useful) {
		free(s->eff);
		free(s->price);
		free(s->count);
		free(s->useful);
		free(s);
		return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	for (size_t t = 0; t < env->n_types; t++)
		s->useful[t] = sp_useful(env, (int)t);
	*ret_state = s;
	return PX_OK;
}

static void sp_fini(void *state)
{
	struct sp_state *s = state;
	if (!s)
		return;
	free(s->eff);
	free(s->price);
	free(s->count);
	free(s->useful);
	free(s);
}


/* The market with room and the lowest effective cost (-1 if none),
 * skipping market `except`. */
static int sp_best(const struct sp_state *s, int cap, int except)
{
	const struct pol_env *env = s->env;
	int best = -1;

	for (size_t i = 0; i < env->n_markets; i++) {
		if ((int)i == except || s->eff[i] < 0 || s->count[i] >= cap)
			continue;
		if (best < 0 || s->eff[i] < s->eff[best] ||
		    (s->eff[i] == s->eff[best] &&
		     env->types[env->markets[i].type].interrupt_per_h <
		     env->types[env->markets[best].type].interrupt_per_h))
			best = (int)i;
	}
	return best;
}

static enum px_err sp_push(struct pol_actions *out, const struct pol_action *a,
			   struct px_error *err)
{
	if (pol_actions_push(out, a) != PX_OK)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	return PX_OK;
}

static enum px_err sp_decide(void *state, const struct pol_input *in,
			     struct pol_actions *out, struct px_error *err)
{
	struct sp_state *s = state;
	const struct pol_env *env = s->env;
	const struct pol_fleet *f = in->fleet;
	int max = env->job->spot.max_instances;
	int cap = (int)ceil(SPREAD_SHARE * max);
	int n = 0, spot = 0, moves;
	double C = 0, S = 0;
	enum px_err r;

	if (cap < 1)
		cap = 1;
	/* Only prices moved and the fleet is full: migrations happen at ticks
	 * and acquisitions need room, so nothing can change (the per-market
	 * figures below are rebuilt at every call, each market's effective
	 * cost only when its price changed). */
	if (in->why == POL_WHY_PRICE && pol_fleet_spot(f) >= max)
		return PX_OK;
	if (in->why & POL_WHY_START && env->job->reliable.count > 0) {
		struct pol_action a = {
			.kind = POL_ACQUIRE, .market = -1,
			.type = env->reliable_type, .reliable = true,
			.count = env->job->reliable.count,
		};
		r = sp_push(out, &a, err);
		if (r != PX_OK)
			return r;
		n = env->job->reliable.count;
		S = n * env->types[env->reliable_type].speed;
		C = n * (double)env->types[env->reliable_type].od_uusd;
	}
	for (size_t i = 0; i < env->n_markets; i++) {
		const struct pol_type *ty = &env->types[env->markets[i].type];
		int64_t p;
		s->count[i] = 0;
		if (!market_view_price(in->mv, env->markets[i].market, &p) ||
		    p > ty->od_uusd || ty->speed <= 0) {
			s->eff[i] = -1;
			continue;
		}
		/* most calls see most prices unchanged */
		if (s->eff[i] >= 0 && p == s->price[i])
			continue;
		s->price[i] = p;
		s->eff[i] = p / (ty->speed *
				 s->useful[env->markets[i].type]);
	}
	for (size_t i = 0; i < f->n; i++) {
		const struct pol_instance *v = &f->v[i];
		if (v->warned)
			continue;
		n++;
		if (v->market < 0) {
			C += env->types[v->type].od_uusd;
			S += env->types[v->type].speed;
			continue;
		}
		spot++;
		s->count[v->market]++;
		C += s->eff[v->market] >= 0 ? s->price[v->market] :
		     v->hour_uusd;
		S += env->types[v->type].speed * s->useful[v->type];
	}
	/* at ticks: migrate from markets that became dear, drop dead weight */
	moves = spot / 8 > 1 ? spot / 8 : 1;
	for (size_t i = 0; (in->why & POL_WHY_TICK) && i < f->n; i++) {
		const struct pol_instance *v = &f->v[i];
		double sp, c, w, wo;
		bool drop;
		int alt;
		if (v->warned || v->market < 0)
			continue;
		sp = env->types[v->type].speed * s->useful[v->type];
		c = s->eff[v->market] >= 0 ? s->price[v->market] : v->hour_uusd;
		w = pol_rate(env, in->scaling, n, S);
		wo = pol_rate(env, in->scaling, n - 1, S - sp);
		drop = w - wo <= 0 || c / (w - wo) > C / w;
		alt = sp_best(s, cap, v->market);
		if (!drop && moves > 0 && alt >= 0 &&
		    (s->eff[v->market] < 0 ||
		     s->eff[v->market] > SPREAD_MIGRATE * s->eff[alt])) {
			drop = true;
			moves--;
		}
		if (!drop)
			continue;
		struct pol_action a = {.kind = POL_RELEASE, .instance = v->id};
		r = sp_push(out, &a, err);
		if (r != PX_OK)
			return r;
		s->count[v->market]--;
		C -= c;
		S -= sp;
		n--;
		spot--;
	}
	while (spot < max) {
		int b = sp_best(s, cap, -1);
		double w, dw, sp;
		if (b < 0)
			break;
		sp = env->types[env->markets[b].type].speed *
		     s->useful[env->markets[b].type];
		w = pol_rate(env, in->scaling, n, S);
		dw = pol_rate(env, in->scaling, n + 1, S + sp) - w;
		if (dw <= 0 || (w > 0 && s->price[b] / dw >= C / w))
			break;
		struct pol_action a = {
			.kind = POL_ACQUIRE, .market = b, .count = 1,
			.bid_uusd = env->types[env->markets[b].type].od_uusd,
		};
		r = sp_push(out, &a, err);
		if (r != PX_OK)
			return r;
		s->count[b]++;
		C += s->price[b];
		S += sp;
		n++;
		spot++;
	}
	return PX_OK;
}

const struct policy_ops pol_spread_ops = {
	.name = "spread",
	.summary = "per-second era: spot across markets by price and "
		   "interruption rate, max price = on-demand, capped share "
		   "per market",
	.wants = POL_WHY_PRICE | POL_WHY_EVICTION | POL_WHY_WARNING |
		 POL_WHY_TICK,
	.init = sp_init,
	.decide = sp_decide,
	.fini = sp_fini,
};
