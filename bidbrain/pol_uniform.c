/* pol_uniform.c -- Uniform Progress (Can't Be Late, NSDI 2024): finish
 * by the job's finish_by_hours at a low cost, mixing spot and on-demand.
 *
 * With D = finish_by_hours, C = work_hours and d the time a change of
 * fleet costs the job (startup_seconds: the new fleet boots, plus
 * restart_seconds: its group re-forms), progress is held against the line
 * ep(t) = t C / D, t the hours since the job's start.  The job runs one
 * fleet at a time: spot (instances until their speeds reach `instances` x
 * reference_type's speed, each in the pool cheapest per unit of capacity
 * at or below its type's on-demand price, the max price, as EC2 Fleet's
 * lowest-price), or on-demand (`instances` of reference_type, the
 * `ondemand` baseline's fleet, rate r).  At each decision, with cp the
 * work done:
 *  1. spot, when a pool is at or below its max price: taken whenever the
 *     job is idle, even behind the line, and kept (evicted instances
 *     replaced) until it is gone (the paper's "taking risks");
 *  2. idle with no spot and behind the line (cp < ep(t)): on-demand;
 *  3. on on-demand, it stays there until spot is back and the job is
 *     ahead of the line two overheads later, cp >= ep(t + 2d)
 *     (hysteresis: a switch costs d, so no flapping);
 *  4. safety net: once the time left is less than the work left on
 *     demand plus two overheads and one tick (the most a decision can
 *     come late), D - t < (C - cp) / r + 2d + tick_seconds, it switches
 *     to on-demand for good.
 * A switch releases the old fleet when it asks for the new one (the
 * paper's model: one fleet at a time).  As every spot policy here (EC2
 * Fleet's strategies, standard, BidBrain), it keeps the job's reliable
 * tier from the start to the end, the home of the state an eviction
 * would lose; the on-demand fleet is `instances` more beside it, and r
 * is the rate of both.  It refuses a job without finish_by_hours.
 */
#include <math.h>
#include <stdlib.h>

#include "policy.h"

struct up_state {
	const struct pol_env *env;
	double d_s;              /* the overhead of a switch, seconds */
	bool for_good;           /* rule 4 fired: on-demand to the end */
	double *unit;            /* per env market: price per unit; <0 n/a */
	int *count;              /* per env market: live spot instances */
};

static enum px_err up_init(const struct pol_env *env, void **ret_state,
			   struct px_error *err)
{
	const struct jobspec *job = env->job;
	size_t n = env->n_markets ? env->n_markets : 1;
	struct up_state *s;

	if (!(job->finish_by_hours > 0))
		/* the controller prefixes "policy 'uniform-progress': " */
		return px_errorf(err, PX_EINVAL, "it needs the job's "
				 "finish_by_hours (the deadline it plans "
				 "for)");
	s = px_calloc(1, sizeof *s);
	if (!s)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	s->env = env;
	s->d_s = job->startup_seconds + job->restart_seconds;
	s->unit = px_calloc(n, sizeof *s->unit);
	s->count = px_calloc(n, sizeof *s->count);
	if (!s->unit || !s->count) {
		free(s->unit);
		free(s->count);
		free(s);
		return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	*ret_state = s;
	return PX_OK;
}

static void up_fini(void *state)
{
	struct up_state *s = state;

	if (!s)
		return;
	free(s->unit);
	free(s->count);
	free(s);
}

static enum px_err push(struct pol_actions *out, const struct pol_action *a,
			struct px_error *err)
{
	if (pol_actions_push(out, a) != PX_OK)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	return PX_OK;
}

/* Release every instance of the fleet on spot (spot true) or on demand
 * but the first `keep` of those (the reliable tier), except spot ones
 * under a notice (the provider ends them). */
static enum px_err release_all(const struct pol_fleet *f, bool spot,
			       int keep, struct pol_actions *out,
			       struct px_error *err)
{
	enum px_err e = PX_OK;

	for (size_t i = 0; i < f->n && e == PX_OK; i++) {
		const struct pol_instance *v = &f->v[i];
		struct pol_action a = {
			.kind = POL_RELEASE, .instance = v->id,
		};

		if ((v->market >= 0) != spot || v->warned)
			continue;
		if (!spot && keep > 0) {
			keep--;
			continue;
		}
		e = push(out, &a, err);
	}
	return e;
}

/* The pool cheapest per unit with a price at or below its max, or -1. */
static int cheapest(const struct up_state *s)
{
	int best = -1;

	for (size_t i = 0; i < s->env->n_markets; i++)
		if (s->unit[i] >= 0 && (best < 0 || s->unit[i] < s->unit[best]))
			best = (int)i;
	return best;
}

/* Fill the spot fleet up to the baselines' capacity; how many it asked
 * for in *ret_n. */
static enum px_err fill_spot(struct up_state *s, const struct pol_input *in,
			     struct pol_actions *out, int *ret_n,
			     struct px_error *err)
{
	const struct pol_env *env = s->env;
	const struct jobspec *job = env->job;
	int cap = job->spot.max_instances > job->instances ?
		  job->spot.max_instances : job->instances;
	double target = job->instances * env->types[env->ref_type].speed;
	double have = 0;
	int spot = 0, b;
	enum px_err e = PX_OK;

	if (in->scaling && in->scaling->spot_max >= 0 &&
	    in->scaling->spot_max < cap)
		cap = in->scaling->spot_max;
	for (size_t i = 0; i < in->fleet->n; i++) {
		const struct pol_instance *v = &in->fleet->v[i];

		if (v->warned || v->market < 0)
			continue;
		have += env->types[v->type].speed;
		spot++;
	}
	*ret_n = 0;
	while (e == PX_OK && have < target && spot < cap &&
	       (b = cheapest(s)) >= 0) {
		const struct pol_type *ty = &env->types[env->markets[b].type];
		struct pol_action a = {
			.kind = POL_ACQUIRE, .market = b, .count = 1,
			.bid_uusd = ty->od_uusd,
		};

		e = push(out, &a, err);
		have += ty->speed;
		spot++;
		(*ret_n)++;
	}
	return e;
}

static enum px_err up_decide(void *state, const struct pol_input *in,
			     struct pol_actions *out, struct px_error *err)
{
	struct up_state *s = state;
	const struct pol_env *env = s->env;
	const struct jobspec *job = env->job;
	const struct pol_fleet *f = in->fleet;
	double c = job->work_hours, dh = job->finish_by_hours;
	double cp = in->progress->work_done_h;
	double t = (double)(in->now_s - in->progress->start_s) / 3600;
	double d = s->d_s / 3600, r;
	bool spot_avail = false, to_spot;
	int n_spot = 0, n_od = 0, asked;
	enum px_err e;

	if (cp >= c)
		return PX_OK;
	for (size_t i = 0; i < env->n_markets; i++) {
		const struct pol_type *ty = &env->types[env->markets[i].type];
		int64_t p;

		s->unit[i] = -1;
		if (!market_view_price(in->mv, env->markets[i].market, &p) ||
		    p > ty->od_uusd || !(ty->speed > 0))
			continue;
		s->unit[i] = (double)p / ty->speed;
		spot_avail = true;
	}
	for (size_t i = 0; i < f->n; i++) {
		if (f->v[i].market < 0)
			n_od++;
		else if (!f->v[i].warned)
			n_spot++;
	}
	/* the tier, kept throughout (asked again if it is short) */
	if (n_od < job->reliable.count) {
		struct pol_action a = {
			.kind = POL_ACQUIRE, .market = -1,
			.type = env->reliable_type, .reliable = true,
			.count = job->reliable.count - n_od,
		};

		e = push(out, &a, err);
		if (e != PX_OK)
			return e;
		n_od = job->reliable.count;
	}
	n_od -= job->reliable.count;
	r = pol_base_rate(env, in->scaling);
	/* rule 4: the time left against the work left on demand */
	if (!s->for_good && (!(r > 0) || dh - t < (c - cp) / r + 2 * d +
			     job->tick_seconds / 3600.0))
		s->for_good = true;
	if (s->for_good)
		to_spot = false;
	else if (n_od > 0)              /* rule 3 */
		to_spot = spot_avail && cp >= (t + 2 * d) * c / dh;
	else                            /* rule 1 */
		to_spot = n_spot > 0 || spot_avail;
	if (to_spot) {
		e = fill_spot(s, in, out, &asked, err);
		if (e != PX_OK || asked > 0 || n_spot > 0)
			return e == PX_OK ?
			       release_all(f, false, job->reliable.count,
					   out, err) : e;
		/* none to be had (the scaling's limit): as if no spot */
	}
	/* rule 2: idle and ahead of the line, it waits */
	if (!s->for_good && n_od == 0 && cp >= t * c / dh)
		return PX_OK;
	if (n_od < job->instances) {
		struct pol_action a = {
			.kind = POL_ACQUIRE, .market = -1,
			.type = env->ref_type, .reliable = true,
			.count = job->instances - n_od,
		};

		e = push(out, &a, err);
		if (e != PX_OK)
			return e;
	}
	return release_all(f, true, 0, out, err);
}

const struct policy_ops pol_uniform_progress_ops = {
	.name = "uniform-progress",
	.summary = "Can't Be Late's Uniform Progress: spot when there is "
		   "some, on-demand to keep up with finish_by_hours",
	.wants = POL_WHY_PRICE | POL_WHY_EVICTION | POL_WHY_WARNING |
		 POL_WHY_TICK,
	.init = up_init,
	.decide = up_decide,
	.fini = up_fini,
};
