/* pol_fleet.c -- what EC2 Fleet's spot allocation strategies do, as
 * policies for the per-second era (no bidding: the max price is the
 * type's on-demand price, EC2's default).
 *
 * Like an EC2 Fleet of type "maintain" with weighted capacity: the job's
 * reliable tier, plus spot instances until their weights (each type's
 * speed) reach the target capacity `instances` x reference_type's speed,
 * the work rate of the baselines' fleet; an interrupted instance is
 * replaced at once, the fleet never rebalances (capacity rebalancing is
 * off by default), and it never has more than the controller's cap.  A
 * pool (zone, type) is eligible while its price is at most the type's
 * on-demand price.  Each new instance goes to the pool the strategy picks:
 *  - lowest-price: the lowest price per unit of capacity
 *    (InstancePoolsToUseCount 1);
 *  - capacity-optimized: the pools with the lowest interruption hazard
 *    (the model's stand-in for "most available capacity"), price
 *    ignored; among equals the one holding fewest of the fleet's
 *    instances;
 *  - price-capacity-optimized: of the pools with the lowest hazard, the
 *    lowest price per unit;
 *  - diversified: the pool holding fewest of the fleet's instances,
 *    among equals the lowest price per unit.
 * Ties left after that go to the pool listed first.
 */
#include <math.h>
#include <stdlib.h>

#include "policy.h"

enum fl_strategy {
	FL_LOWEST_PRICE = 0,
	FL_CAPACITY,
	FL_PRICE_CAPACITY,
	FL_DIVERSIFIED,
};

struct fl_state {
	const struct pol_env *env;
	enum fl_strategy how;
	int *count;              /* per env market: live spot instances */
	double *unit;            /* per env market: price per unit; <0 n/a */
	int64_t *price;
};

static enum px_err fl_init(const struct pol_env *env, enum fl_strategy how,
			   void **ret_state, struct px_error *err)
{
	struct fl_state *s = px_calloc(1, sizeof *s);
	size_t n = env->n_markets ? env->n_markets : 1;

	if (!s)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	s->env = env;
	s->how = how;
	s->count = px_calloc(n, sizeof *s->count);
	s->unit = px_calloc(n, sizeof *s->unit);
	s->price = px_calloc(n, sizeof *s->price);
	if (!s->count || !s->unit || !s->price) {
		free(s->count);
		free(s->unit);
		free(s->price);
		free(s);
		return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	*ret_state = s;
	return PX_OK;
}

static void fl_fini(void *state)
{
	struct fl_state *s = state;

	if (!s)
		return;
	free(s->count);
	free(s->unit);
	free(s->price);
	free(s);
}

/* The pool for the next instance, or -1 when none is eligible. */
static int fl_pick(const struct fl_state *s)
{
	const struct pol_env *env = s->env;
	double hmin = INFINITY;
	int best = -1;

	for (size_t i = 0; i < env->n_markets; i++)
		if (s->unit[i] >= 0 &&
		    env->types[env->markets[i].type].interrupt_per_h < hmin)
			hmin = env->types[env->markets[i].type].interrupt_per_h;
	for (size_t i = 0; i < env->n_markets; i++) {
		double h = env->types[env->markets[i].type].interrupt_per_h;
		bool better;

		if (s->unit[i] < 0)
			continue;
		if ((s->how == FL_CAPACITY || s->how == FL_PRICE_CAPACITY) &&
		    h > hmin)
			continue;
		if (best < 0) {
			best = (int)i;
			continue;
		}
		switch (s->how) {
		case FL_LOWEST_PRICE:
		case FL_PRICE_CAPACITY:
			better = s->unit[i] < s->unit[best];
			break;
		case FL_CAPACITY:
			better = s->count[i] < s->count[best];
			break;
		default:
			better = s->count[i] < s->count[best] ||
				 (s->count[i] == s->count[best] &&
				  s->unit[i] < s->unit[best]);
			break;
		}
		if (better)
			best = (int)i;
	}
	return best;
}

static enum px_err fl_decide(void *state, const struct pol_input *in,
			     struct pol_actions *out, struct px_error *err)
{
	struct fl_state *s = state;
	const struct pol_env *env = s->env;
	const struct jobspec *job = env->job;
	const struct pol_fleet *f = in->fleet;
	int cap = job->spot.max_instances > job->instances ?
		  job->spot.max_instances : job->instances;
	double target = job->instances * env->types[env->ref_type].speed;
	double have = 0;
	int spot = 0;

	if (in->why & POL_WHY_START && job->reliable.count > 0) {
		struct pol_action a = {
			.kind = POL_ACQUIRE, .market = -1,
			.type = env->reliable_type, .reliable = true,
			.count = job->reliable.count,
		};

		if (pol_actions_push(out, &a) != PX_OK)
			return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < env->n_markets; i++) {
		const struct pol_type *ty = &env->types[env->markets[i].type];
		int64_t p;

		s->count[i] = 0;
		s->unit[i] = -1;
		if (!market_view_price(in->mv, env->markets[i].market, &p) ||
		    p > ty->od_uusd || !(ty->speed > 0))
			continue;
		s->price[i] = p;
		s->unit[i] = (double)p / ty->speed;
	}
	for (size_t i = 0; i < f->n; i++) {
		const struct pol_instance *v = &f->v[i];

		if (v->warned || v->market < 0)
			continue;
		s->count[v->market]++;
		have += env->types[v->type].speed;
		spot++;
	}
	while (have < target && spot < cap) {
		int b = fl_pick(s);
		struct pol_action a;

		if (b < 0)
			break;
		a = (struct pol_action){
			.kind = POL_ACQUIRE, .market = b, .count = 1,
			.bid_uusd = env->types[env->markets[b].type].od_uusd,
		};
		if (pol_actions_push(out, &a) != PX_OK)
			return px_errorf(err, PX_ENOMEM, "out of memory");
		s->count[b]++;
		have += env->types[env->markets[b].type].speed;
		spot++;
	}
	return PX_OK;
}

static enum px_err fl_init_lowest(const struct pol_env *env, void **ret,
				  struct px_error *err)
{
	return fl_init(env, FL_LOWEST_PRICE, ret, err);
}

static enum px_err fl_init_capacity(const struct pol_env *env, void **ret,
				    struct px_error *err)
{
	return fl_init(env, FL_CAPACITY, ret, err);
}

static enum px_err fl_init_pco(const struct pol_env *env, void **ret,
			       struct px_error *err)
{
	return fl_init(env, FL_PRICE_CAPACITY, ret, err);
}

static enum px_err fl_init_div(const struct pol_env *env, void **ret,
			       struct px_error *err)
{
	return fl_init(env, FL_DIVERSIFIED, ret, err);
}

#define FL_WANTS (POL_WHY_PRICE | POL_WHY_EVICTION | POL_WHY_WARNING | \
		  POL_WHY_TICK)

const struct policy_ops pol_lowest_price_ops = {
	.name = "lowest-price",
	.summary = "EC2 Fleet lowest-price: weighted capacity from the pool "
		   "cheapest per unit, max price = on-demand",
	.wants = FL_WANTS,
	.init = fl_init_lowest,
	.decide = fl_decide,
	.fini = fl_fini,
};

const struct policy_ops pol_capacity_optimized_ops = {
	.name = "capacity-optimized",
	.summary = "EC2 Fleet capacity-optimized: the pools least likely to "
		   "be interrupted, price ignored",
	.wants = FL_WANTS,
	.init = fl_init_capacity,
	.decide = fl_decide,
	.fini = fl_fini,
};

const struct policy_ops pol_price_capacity_optimized_ops = {
	.name = "price-capacity-optimized",
	.summary = "EC2 Fleet price-capacity-optimized: the cheapest per unit "
		   "of the pools least likely to be interrupted",
	.wants = FL_WANTS,
	.init = fl_init_pco,
	.decide = fl_decide,
	.fini = fl_fini,
};

const struct policy_ops pol_diversified_ops = {
	.name = "diversified",
	.summary = "EC2 Fleet diversified: spread evenly over every pool at "
		   "or below on-demand",
	.wants = FL_WANTS,
	.init = fl_init_div,
	.decide = fl_decide,
	.fini = fl_fini,
};
