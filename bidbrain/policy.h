/* policy.h -- the one interface every allocation policy implements.
 *
 * A policy is an ops table {name, summary, wants, init, decide, fini}:
 * wants says which events wake it (enum pol_why).  decide() is pure
 * decision logic: given now, a view of the markets that hides everything
 * after now, the fleet and the job's progress, it returns actions (acquire
 * N instances of a market at a bid, acquire on-demand, release an
 * instance).  It does no I/O and cannot tell which world (ec2, local, sim)
 * drives it.  Policy state (caches, estimators) lives in the void * that
 * init returns; it may only be derived from its env and what decide()
 * was shown, so the same inputs give the same decisions.  The env is not
 * all fixed: see struct pol_env.
 */
#ifndef PX_POLICY_H
#define PX_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../cloudapi/market.h"
#include "../common/px.h"
#include "billing.h"
#include "jobspec.h"

/* One instance type the job may run. */
struct pol_type {
	const char *name;
	double speed;            /* work rate relative to reference_type */
	int64_t od_uusd;         /* on-demand price, micro-USD per hour */
	double interrupt_per_h;  /* current-era interruptions/instance-hour */
	int vcpus;               /* its vCPUs (the instance table's; 1 when
				  * it does not know it) */
};

/* One spot market the job may use. */
struct pol_market {
	int market;              /* index in the market set */
	int type;                /* index in pol_env.types */
	const char *zone;
};

/* What a policy knows about the job and the world, borrowed for the whole
 * run and fixed for it (the job spec included: what a running job learns
 * of its own scaling reaches the policy as pol_scaling, an input of each
 * decision). */
struct pol_env {
	const struct jobspec *job;
	enum billing_model billing;
	const struct pol_type *types;
	size_t n_types;
	const struct pol_market *markets;  /* spot.types x spot.zones */
	size_t n_markets;
	int ref_type;            /* index of job->reference_type in types */
	int reliable_type;       /* index of job->reliable.type in types */
	int64_t warning_s;       /* eviction notice */
	uint64_t seed;           /* for policies that randomise */
	/* per-second capacity events: the chance that one event of a pool
	 * takes a given instance of it (0, 1] (world.h) */
	double pool_share;
};

/* One live instance as a policy sees it. */
struct pol_instance {
	uint64_t id;             /* unique in the run, never reused */
	bool reliable;           /* on-demand reliable tier */
	int type;                /* index in env types */
	int market;              /* index in env markets; -1: on-demand */
	int64_t bid_uusd;        /* 0 for on-demand */
	int64_t launch_s;        /* billing started here */
	int64_t ready_s;         /* contributes work from here */
	int64_t period_end_s;    /* end of the current billing hour */
	int64_t hour_uusd;       /* charge of the current billing hour
				  * (legacy) or the price at its start */
	bool warned;             /* eviction notice received: leaving */
};

struct pol_fleet {
	const struct pol_instance *v;
	size_t n;
};

struct pol_progress {
	int64_t start_s;         /* when the job started */
	double work_done_h;      /* reference-instance hours done */
	double work_total_h;     /* job->work_hours */
	double rate_h;           /* current work per hour of the fleet */
	int64_t cost_uusd;       /* charged so far (at the last fleet change
				  * or tick) */
};

/* Why decide() is called (a bit set). */
enum pol_why {
	POL_WHY_START = 1 << 0,      /* first call of the run */
	POL_WHY_PRICE = 1 << 1,      /* a price changed in one of its markets */
	POL_WHY_HOUR_END = 1 << 2,   /* some instance's billing hour ends now */
	POL_WHY_EVICTION = 1 << 3,   /* an instance was evicted / interrupted */
	POL_WHY_WARNING = 1 << 4,    /* an eviction notice arrived */
	POL_WHY_TICK = 1 << 5        /* periodic tick (job tick_seconds) */
};

/* What a running job measured of its own scaling (proteusd, from its
 * workload's reports; docs/controller.md, "Measured scaling" and
 * "Exploring the scaling"): an input of each decision.  pol_input.scaling
 * NULL is the spec's scaling and no limit (simulate, tests). */
struct pol_scaling {
	const struct jobspec_profile *profile; /* measured; NULL: the spec's */
	int spot_max;            /* the spot instances the job may hold now
				  * (>= 0; the exploration's limit); -1:
				  * spot.max_instances */
	/* the spot vCPUs the job may hold now (the pool's share,
	 * docs/pool.md); <= 0 with spot_vcpus_set false: no limit */
	bool spot_vcpus_set;
	int64_t spot_vcpus;
};

struct pol_input {
	int64_t now_s;
	unsigned why;                /* enum pol_why bits */
	const struct market_view *mv; /* history up to now only */
	const struct pol_fleet *fleet;
	const struct pol_progress *progress;
	const struct pol_scaling *scaling;  /* NULL: the spec's */
};

enum pol_action_kind { POL_ACQUIRE = 0, POL_RELEASE };

struct pol_action {
	enum pol_action_kind kind;
	int market;              /* acquire: env market, -1: on-demand */
	int type;                /* acquire on-demand: env type */
	bool reliable;           /* acquire on-demand: for the reliable tier */
	int count;               /* acquire: instances */
	int64_t bid_uusd;        /* acquire spot: bid (max price) */
	uint64_t instance;       /* release: instance id */
};

struct pol_actions {
	struct pol_action *v;
	size_t n, cap;
};

/* Append one action; PX_ENOMEM on failure. */
enum px_err pol_actions_push(struct pol_actions *a,
			     const struct pol_action *x);
void pol_actions_release(struct pol_actions *a);

struct policy_ops {
	const char *name;
	const char *summary;     /* one line for --help and docs */
	unsigned wants;          /* pol_why bits that wake it (START always) */
	/* Build the policy's state for env (borrowed for the whole run).
	 * May fail (PX_EINVAL: the job cannot run with this policy, message
	 * says why).  fini must accept what init returned. */
	enum px_err (*init)(const struct pol_env *env, void **ret_state,
			    struct px_error *err);
	/* Append actions to out.  Must not block or do I/O; deterministic in
	 * (state, input).  Fails only on OOM. */
	enum px_err (*decide)(void *state, const struct pol_input *in,
			      struct pol_actions *out, struct px_error *err);
	void (*fini)(void *state);
};

extern const struct policy_ops pol_ondemand_ops;
extern const struct policy_ops pol_standard_ops;
extern const struct policy_ops pol_bidbrain_ops;
extern const struct policy_ops pol_spread_ops;
/* EC2 Fleet's spot allocation strategies (pol_fleet.c) */
extern const struct policy_ops pol_lowest_price_ops;
extern const struct policy_ops pol_capacity_optimized_ops;
extern const struct policy_ops pol_price_capacity_optimized_ops;
extern const struct policy_ops pol_diversified_ops;
/* Can't Be Late's Uniform Progress (pol_uniform.c): needs the job's
 * finish_by_hours */
extern const struct policy_ops pol_uniform_progress_ops;

/* The registered policies that any job can run, in a stable order (what
 * the property and budget tests run on every spec).  The policies that
 * need a field a job may lack (uniform-progress: finish_by_hours) are
 * registered too, after them, but found only by name. */
size_t policy_count(void);
const struct policy_ops *policy_at(size_t i);
/* Find by name, among all of them; PX_EINVAL names it and lists the
 * known ones. */
enum px_err policy_lookup(const char *name, const struct policy_ops **ret,
			  struct px_error *err);

/* ---- helpers shared by policies ---- */

/* Work per hour of n instances whose speeds sum to speed_sum, by the
 * decision's scaling (sc: its input's; NULL the spec's): jobspec_rate.
 * Inline: BidBrain asks it in its inner loops. */
static inline double pol_rate(const struct pol_env *env,
			      const struct pol_scaling *sc, int n,
			      double speed_sum)
{
	return jobspec_rate(env->job, sc ? sc->profile : NULL, n, speed_sum);
}

/* The rate of the baselines' fleet: the reliable tier and `instances`
 * of reference_type (BidBrain's runtime floor; Uniform Progress's and
 * BidBrain's on-demand fleet for a deadline). */
static inline double pol_base_rate(const struct pol_env *env,
				   const struct pol_scaling *sc)
{
	const struct jobspec *job = env->job;

	return pol_rate(env, sc, job->instances + job->reliable.count,
			job->instances * env->types[env->ref_type].speed +
			job->reliable.count *
			env->types[env->reliable_type].speed);
}

/* The spot instances the job may hold now: spot.max_instances, or the
 * scaling's spot_max when it is set and lower. */
static inline int pol_spot_max(const struct pol_env *env,
			       const struct pol_scaling *sc)
{
	int max = env->job->spot.max_instances;

	return sc && sc->spot_max >= 0 && sc->spot_max < max ? sc->spot_max
							     : max;
}

/* Non-warned spot instances in the fleet. */
int pol_fleet_spot(const struct pol_fleet *f);
/* The spot vCPUs the job may still add to its fleet f under the
 * scaling's limit (spot_vcpus less those of its non-warned spot
 * instances, at least 0); INT64_MAX when there is none. */
int64_t pol_spot_vcpus_room(const struct pol_env *env,
			    const struct pol_scaling *sc,
			    const struct pol_fleet *f);

/* Work (reference-instance seconds) an instance loses when it vanishes:
 * clock_seconds, unless the notice is long enough to finish the clock. */
double pol_loss_s(const struct pol_env *env);

#endif
