/* pol_ondemand.c -- the on-demand baseline: `instances` on-demand
 * instances of reference_type, acquired at the start and never changed. */
#include "policy.h"

static enum px_err od_init(const struct pol_env *env, void **ret_state,
			   struct px_error *err)
{
	*ret_state = (void *)env;
	return PX_OK;
}

static enum px_err od_decide(void *state, const struct pol_input *in,
			     struct pol_actions *out, struct px_error *err)
{
	const struct pol_env *env = state;
	struct pol_action a = {
		.kind = POL_ACQUIRE,
		.market = -1,
		.type = env->ref_type,
		.reliable = true,
		.count = env->job->instances,
	};

	if (!(in->why & POL_WHY_START))
		return PX_OK;
	if (pol_actions_push(out, &a) != PX_OK)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	return PX_OK;
}

static void od_fini(void *state)
{
}

const struct policy_ops pol_ondemand_ops = {
	.name = "ondemand",
	.summary = "`instances` on-demand instances of reference_type",
	.wants = 0,
	.init = od_init,
	.decide = od_decide,
	.fini = od_fini,
};
