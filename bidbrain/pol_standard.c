/* pol_standard.c -- the Proteus paper's "standard" baseline: the job's
 * on-demand reliable tier plus `instances` spot instances of
 * reference_type, each bid at the on-demand price in the zone that is
 * cheapest when it is acquired; evicted ones are re-acquired as soon as a
 * zone's price is back at or below the bid.  It never releases.
 */
#include <stdlib.h>

#include "policy.h"

struct std_state {
	const struct pol_env *env;
	int *markets;            /* env markets of reference_type */
	size_t n;
};

static enum px_err std_init(const struct pol_env *env, void **ret_state,
			    struct px_error *err)
{
	struct std_state *s = px_calloc(1, sizeof *s);

	if (!s)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	s->env = env;
	s->markets = px_calloc(env->n_markets ? env->n_markets : 1,
			       sizeof *s->markets);
	if (!s->markets) {
		free(s);
		return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < env->n_markets; i++)
		if (env->markets[i].type == env->ref_type)
			s->markets[s->n++] = (int)i;
	if (s->n == 0) {
		free(s->markets);
		free(s);
		/* the controller prefixes "policy 'standard': " */
		return px_errorf(err, PX_EINVAL, "it needs a spot market for "
				 "reference_type '%s' in the job's zones",
				 env->job->reference_type);
	}
	*ret_state = s;
	return PX_OK;
}

static enum px_err std_decide(void *state, const struct pol_input *in,
			      struct pol_actions *out, struct px_error *err)
{
	struct std_state *s = state;
	const struct pol_env *env = s->env;
	int64_t bid = env->types[env->ref_type].od_uusd;
	int have = pol_fleet_spot(in->fleet);
	int best = -1;
	int64_t best_p = 0, p;

	if (in->why & POL_WHY_START && env->job->reliable.count > 0) {
		struct pol_action a = {
			.kind = POL_ACQUIRE, .market = -1,
			.type = env->reliable_type, .reliable = true,
			.count = env->job->reliable.count,
		};
		if (pol_actions_push(out, &a) != PX_OK)
			return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	if (have >= env->job->instances)
		return PX_OK;
	for (size_t i = 0; i < s->n; i++) {
		int mi = env->markets[s->markets[i]].market;
		if (!market_view_price(in->mv, mi, &p) || p > bid)
			continue;
		if (best < 0 || p < best_p) {
			best = s->markets[i];
			best_p = p;
		}
	}
	if (best >= 0) {
		struct pol_action a = {
			.kind = POL_ACQUIRE, .market = best,
			.count = env->job->instances - have, .bid_uusd = bid,
		};
		if (pol_actions_push(out, &a) != PX_OK)
			return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	return PX_OK;
}

static void std_fini(void *state)
{
	struct std_state *s = state;
	if (!s)
		return;
	free(s->markets);
	free(s);
}

const struct policy_ops pol_standard_ops = {
	.name = "standard",
	.summary = "`instances` spot instances of reference_type bid at the "
		   "on-demand price, re-acquired when the price falls back",
	.wants = POL_WHY_PRICE | POL_WHY_EVICTION | POL_WHY_WARNING |
		 POL_WHY_TICK,
	.init = std_init,
	.decide = std_decide,
	.fini = std_fini,
};
