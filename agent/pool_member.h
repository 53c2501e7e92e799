/* pool_member.h -- what the pool knows of one job that shares it
 * (docs/pool.md): its sizes in the pool's units, its rates as the
 * arbiter sees them, its share for the lease and what it holds, and the
 * gate's rule for one more instance.  The same for a job of `simulate
 * --workload` (agent/world/sim_workload.c) and one of proteusd
 * (agent/jobs_pool.c): each passes its own job's environment, fleet and
 * markets.  No I/O.
 */
#ifndef PX_POOL_MEMBER_H
#define PX_POOL_MEMBER_H

#include <stdbool.h>
#include <stdint.h>

#include "../bidbrain/arbiter.h"
#include "../bidbrain/billing.h"
#include "../bidbrain/policy.h"
#include "../bidbrain/pool.h"
#include "../cloudapi/market.h"

struct pool_member {
	/* ---- its sizes (pm_init) ---- */
	double weight;
	int max;                  /* spot.max_instances */
	double *rate;             /* max + 1: the spec's (or the measured
				   * profile's) rate of work with the tier
				   * and n spot instances */
	double *seen;             /* rate x calib: what the arbiter sees */
	enum pool_group group, tier_group;
	/* a unit of share: the vCPUs of its reference type; its smallest
	 * spot type's */
	int64_t unit_vcpus, min_vcpus, tier_vcpus, tier_uusd;
	double work_total_h, restart_h;
	/* ---- the lease ---- */
	int share;                /* its units of spot for the lease */
	bool shared;              /* it had a share before */
	int64_t spot_vcpus, peak; /* spot vCPUs held; most in the lease */
	int64_t od_vcpus;         /* on-demand vCPUs held */
	/* measured throughput (pm_measure): calib is its work done in the
	 * last lease over what rate[] says of the spot it held meanwhile */
	double calib, lease_work, held_s;
	int64_t lease_t;          /* its market time at the lease's start */
	int64_t usd_cap;          /* its spot's USD an hour at its share
				   * (pool_usd_per_hour only; -1: none) */
	int64_t sheds, refused;
	int64_t lease_refused;    /* spot requests the pool refused in the
				   * lease */
};

/* The vCPUs of a type by name (the instance table's; 1 when unknown). */
int64_t pm_type_vcpus(const char *name);

/* m's sizes and rates for job spec `job` in env (its reference and
 * reliable types, its spot markets), weight w; profile: a measured one
 * (NULL: the spec's scaling).  PX_ENOMEM. */
enum px_err pm_init(struct pool_member *m, const struct pol_env *env,
		    const struct jobspec_profile *profile, double w,
		    struct px_error *err);
/* The rates again from a measured profile (its sizes kept). */
void pm_rates(struct pool_member *m, const struct pol_env *env,
	      const struct jobspec_profile *profile);
void pm_free(struct pool_member *m);

/* What the instances of fleet f cost an hour at now, in markets ms
 * (env's market i is ms->v[env->markets[i].market]): spot at its
 * market's price, and on demand at its type's unless spot_only. */
int64_t pm_fleet_uusd(const struct pol_env *env, const struct pol_fleet *f,
		      const struct market_set *ms, int64_t now,
		      bool spot_only);

/* The gate's rule for one more instance of type `name` (spot: in a
 * spot market) at hour_uusd an hour, the pool at use u under limits l,
 * m's spot costing spot_uusd an hour now: NULL when it may be rented,
 * else why not (m's refusals counted).  An on-demand instance that
 * fills m's reliable tier (its on-demand vCPUs within the tier's) is held
 * to the vCPU limits only: the tier was admitted whole, its cost counted
 * then, and a price rise since is the spot's to give back. */
const char *pm_admit(struct pool_member *m, const struct pool_limits *l,
		     const struct pool_use *u, const char *name, bool spot,
		     int64_t hour_uusd, int64_t spot_uusd);
/* One instance more (sign 1) or less (-1) of m's, in u too. */
void pm_hold(struct pool_member *m, struct pool_use *u, const char *name,
	     bool spot, int sign);
/* The clock moved dt seconds: the spot it held meanwhile. */
void pm_pass(struct pool_member *m, double dt);

/* The spot instances its policy may hold at its share (as many as fit
 * in the share's vCPUs with its smallest type). */
int pm_spot_cap(const struct pool_member *m);
/* What it would rent (docs/pool.md, "Wants"). */
int pm_want(const struct pool_member *m);
/* What one unit of its spot costs an hour at now: what its spot
 * instances (fleet f; may be NULL) cost per unit of vCPUs when it holds
 * some, else the median of its markets' prices per unit. */
int64_t pm_unit_price(const struct pool_member *m, const struct pol_env *env,
		      const struct pol_fleet *f,
		      const struct market_set *ms, int64_t now);
/* Its rate (rate[], work-hours an hour) with units of spot held, on
 * average (between two counts: in between). */
double pm_rate_at(const struct pool_member *m, double units);
/* The lease ends at market time now with work_h of its work done
 * (running: it has run in the lease): its rates as the arbiter is to
 * see them, and the lease's counters start again. */
void pm_measure(struct pool_member *m, int64_t now, double work_h,
		bool running);
/* The arbiter's view of m (arbiter.h): arrival_h on the arbiter's
 * clock, work_h of its work done, admitted: its tier is in. */
void pm_arb(const struct pool_member *m, double arrival_h, double work_h,
	    bool admitted, int64_t unit_uusd, struct arb_job *a);
/* The budget an hour the decided shares leave (jobs a[0..n)), for
 * pm_take; -1 when l has no budget. */
int64_t pm_spare(const struct pool_limits *l, const struct arb_job *a,
		 size_t n);
/* m takes its decision a: its share and its spend cap (its share's and
 * the spare beside it, a quarter of its share's at least). */
void pm_take(struct pool_member *m, const struct pool_limits *l,
	     const struct arb_job *a, int64_t spare);

/* The spot instance of fleet f (not leaving) to give back first: under
 * legacy-hourly billing the one whose paid hour ends soonest (what it
 * wastes is the least), else the newest; NULL when none. */
const struct pol_instance *pm_shed_first(const struct pol_fleet *f,
					 enum billing_model billing);
/* f's spot instance that costs the most an hour at now above *price
 * (updated), or NULL. */
const struct pol_instance *pm_priciest(const struct pol_env *env,
				       const struct pol_fleet *f,
				       const struct market_set *ms,
				       int64_t now, int64_t *price);

#endif
