/* oracle.h -- the hindsight bound: a lower bound on what any plan that
 * keeps the job's reliable tier can pay to finish the job in a window,
 * computed with the whole future of the trace in view (every price, every
 * capacity interruption the simulator will draw).  For `simulate` only:
 * it reads the market past `now`, so no world ever runs it as a policy.
 *
 * The relaxation (docs/simulate.md, "The oracle", has the proof):
 *  - work under the job's flat scaling e: a fleet of the tier (R
 *    instances, speed St) and spot speed x has at least R + x / smax
 *    instances, so it does at most (St + x) e^log2(R + x / smax) an hour,
 *    concave in x, taken in pieces at their first unit's slope; linear
 *    in instance time under a scaling profile (startup and lost clocks
 *    only take work away);
 *  - each spot instance-second in market m at time t costs at least
 *    c_m(t): 0 where the bill of an instance running then may be waived
 *    (legacy: it may be in a partial hour that ends with an eviction;
 *    per-second: it may be in an instance interrupted within its first
 *    hour), else the price (per-second) or the lowest price an hour
 *    running at t may have started at (legacy);
 *  - on-demand instances of any of the job's types cost their price per
 *    second, with no cap; spot instances are capped at
 *    max(spot.max_instances, instances) at any time;
 *  - the reliable tier runs from the start to the end T of the plan.
 * For a fixed T the relaxation is a linear program whose optimum a greedy
 * over the lower convex hulls of each time slot's markets finds exactly;
 * the bound is its minimum over every T in the window.  Pure code: no
 * I/O, no logging.
 */
#ifndef PX_ORACLE_H
#define PX_ORACLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../cloudapi/market.h"
#include "../common/px.h"
#include "policy.h"

struct oracle_setup {
	const struct pol_env *env;
	const struct market_set *ms;  /* sealed; the env's markets index it */
	int64_t start_s;              /* the run's start */
	int64_t end_s;                /* the run's last instant: the window's
				       * end or the deadline */
	/* Per env market, the times (ascending) at which capacity
	 * interruption notices may come under per-second billing; NULL (or
	 * a NULL entry): none. */
	const int64_t *const *notices;
	const size_t *n_notices;
	/* Count every instance-second as paid (no waived hour): the bound
	 * for plans that never get a bill waived, not for every plan. */
	bool paid_only;
};

struct oracle_result {
	bool done;                /* false: no plan finishes in the window
				   * (it ends before any startup is over) */
	double cost_uusd;         /* the bound, micro-USD (a bill is whole
				   * micro-USD: rounded up from 1e-6 below) */
	int64_t end_s;            /* end of the plan that attains it */
	double tier_uusd;         /* of which the reliable tier */
	double spot_uusd;         /* spot instances */
	double ondemand_uusd;     /* on-demand instances beyond the tier */
	double tier_work_h;       /* work-hours of the tier */
	double free_work_h;       /* of spot instance time that may be free */
	double spot_work_h;       /* of paid spot instance time */
	double ondemand_work_h;
	double instance_hours;    /* of the plan (tier included) */
	double free_hours;        /* instance-hours that may be free */
};

/* Compute the bound.  PX_EINVAL when the window is empty or the job does
 * no work at all (no type with a speed), PX_ENOMEM. */
enum px_err oracle_bound(const struct oracle_setup *s,
			 struct oracle_result *ret, struct px_error *err);

#endif
