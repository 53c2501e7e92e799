/* plan.h -- a job resolved against its markets and prices: the policies'
 * environment (bidbrain/policy.h struct pol_env: the job's types with
 * their speeds and on-demand prices, the spot markets it may use) and the
 * window it runs in.  Built once, with errors that name what is missing
 * and what is available, then handed to any world (sim, local, ec2) or to
 * a policy directly (tests).  Pure: no I/O.
 */
#ifndef PX_PLAN_H
#define PX_PLAN_H

#include <stdint.h>

#include "../bidbrain/billing.h"
#include "../bidbrain/jobspec.h"
#include "../bidbrain/policy.h"
#include "../cloudapi/advisor.h"
#include "../cloudapi/market.h"
#include "../cloudapi/ondemand.h"
#include "../common/px.h"

struct plan_setup {
	const struct market_set *ms;      /* sealed */
	const struct ondemand_table *od;  /* prices for job->region */
	const struct jobspec *job;
	enum billing_model billing;
	int64_t start_s;      /* 0: the trace's first record */
	int64_t end_s;        /* 0: the trace's last record */
	/* The range of the trace the set was loaded from, when the loader
	 * dropped records after end_s (0, 0: the set's own first and last
	 * record).  The window is checked against it. */
	int64_t trace_first_s;
	int64_t trace_last_s;
	uint64_t seed;        /* the env's seed (per-second interruptions) */
	/* Interruption hazards per type from a Spot Instance Advisor
	 * snapshot, for the types the job gives no rate for (NULL: the
	 * instance table's defaults).  Every type of the job must be in it. */
	const struct advisor *advisor;
};

struct plan;

/* Check the job against the market set and price table and resolve it:
 * PX_EINVAL/PX_ENOENT with a message that names what is missing and what
 * is available (a spot type or zone with no market, an on-demand price
 * missing, a type the advisor snapshot lacks, a window outside the
 * trace).  setup is copied; the market set,
 * table and job it points to must outlive the plan. */
enum px_err plan_new(const struct plan_setup *setup, struct plan **ret,
		     struct px_error *err);
void plan_free(struct plan *p);
/* The resolved window, environment and setup. */
int64_t plan_start(const struct plan *p);
int64_t plan_end(const struct plan *p);
const struct pol_env *plan_env(const struct plan *p);
const struct plan_setup *plan_setup(const struct plan *p);

/* The env's seed: the job's id once it has one (per-second interruption
 * draws). */
void plan_set_seed(struct plan *p, uint64_t seed);

#endif
