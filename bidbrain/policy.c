/* policy.c -- the policy registry and helpers shared by policies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

static const struct policy_ops *const all[] = {
	&pol_bidbrain_ops,
	&pol_standard_ops,
	&pol_ondemand_ops,
	&pol_spread_ops,
	&pol_lowest_price_ops,
	&pol_capacity_optimized_ops,
	&pol_price_capacity_optimized_ops,
	&pol_diversified_ops,
	/* from here: only for jobs with the field they need (policy.h) */
	&pol_uniform_progress_ops,
};

/* The policies any job can run: all but the last ones. */
#define N_NEED_FIELD 1

size_t policy_count(void)
{
	return sizeof all / sizeof *all - N_NEED_FIELD;
}

static size_t n_all(void)
{
	return sizeof all / sizeof *all;
}

const struct policy_ops *policy_at(size_t i)
{
	return i < policy_count() ? all[i] : NULL;
}

enum px_err policy_lookup(const char *name, const struct policy_ops **ret,
			  struct px_error *err)
{
	char known[512];
	size_t o = 0;

	for (size_t i = 0; i < n_all(); i++)
		if (!strcmp(all[i]->name, name)) {
			*ret = all[i];
			return PX_OK;
		}
	known[0] = '\0';
	for (size_t i = 0; i < n_all() && o < sizeof known; i++)
		o += (size_t)snprintf(known + o, sizeof known - o, "%s%s",
				      i ? ", " : "", all[i]->name);
	return px_errorf(err, PX_EINVAL, "unknown policy '%.64s' (known: %s)",
			 name, known);
}

enum px_err pol_actions_push(struct pol_actions *a,
			     const struct pol_action *x)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 16;
		struct pol_action *v = px_reallocarray(a->v, cap, sizeof *v);
		if (!v)
			return PX_ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = *x;
	return PX_OK;
}

void pol_actions_release(struct pol_actions *a)
{
	free(a->v);
	a->v = NULL;
	a->n = a->cap = 0;
}

int pol_fleet_spot(const struct pol_fleet *f)
{
	int n = 0;
	for (size_t i = 0; i < f->n; i++)
		if (!f->v[i].reliable && f->v[i].market >= 0 &&
		    !f->v[i].warned)
			n++;
	return n;
}

double pol_loss_s(const struct pol_env *env)
{
	if (env->warning_s >= env->job->clock_seconds)
		return 0;
	return env->job->clock_seconds;
}

int64_t pol_spot_vcpus_room(const struct pol_env *env,
			    const struct pol_scaling *sc,
			    const struct pol_fleet *f)
{
	int64_t room;

	if (!sc || !sc->spot_vcpus_set)
		return INT64_MAX;
	room = sc->spot_vcpus;
	for (size_t i = 0; i < f->n; i++)
		if (f->v[i].market >= 0 && !f->v[i].warned)
			room -= env->types[f->v[i].type].vcpus;
	return room > 0 ? room : 0;
}
