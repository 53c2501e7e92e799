/* arbiter.h -- dividing one pool among the jobs that share it
 * (docs/pool.md).
 *
 * Each job says what it would rent (its spot instances `want`, beside its
 * reliable tier) and what each further instance is worth to it: its rate
 * of work with the tier and n spot instances (rate[n], from its measured
 * goodput or the spec's scaling until measured).  When the wants fit in
 * the pool every job gets them; when they do not, the arbiter divides
 * the pool:
 *  - fifo: in arrival order, each takes what it wants of what is left;
 *  - max-min: equal vCPUs (times the job's weight), water-filled;
 *  - goodput: each instance to the job it adds the most work per vCPU;
 *  - finish-time: Themis's finish-time fairness (NSDI 2020).  A job's
 *    rho is its finish time sharing (the time since it came plus the
 *    time its remaining work takes at the share, plus a re-form when the
 *    share changes) over its finish time alone on 1/N of the pool (N the
 *    jobs present).  Each round the fraction `fairness` of the jobs with
 *    the worst rho take part: the pool goes to them one instance at a
 *    time, to the one whose weighted rho is worst (so the largest rho is
 *    as low as the pool allows), while the others keep their shares up
 *    to 1/N of the pool; what is left goes the same way to every job.
 * Shares hold for a lease; the caller re-decides at lease ends, arrivals
 * and completions.  A job's reliable tier is admitted whole or the job
 * waits (gang), in arrival order; an admitted tier is never taken back.
 * Pure: no I/O, deterministic in its input.
 */
#ifndef PX_ARBITER_H
#define PX_ARBITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/px.h"
#include "pool.h"

enum arb_kind {
	ARB_FIFO = 0,
	ARB_MAX_MIN,
	ARB_FINISH_TIME,
	ARB_GOODPUT,
	ARB_KINDS
};
/* "fifo", "max-min", "finish-time", "goodput" */
const char *arb_name(enum arb_kind k);
/* By name; PX_EINVAL lists the known ones. */
enum px_err arb_lookup(const char *name, enum arb_kind *ret,
		       struct px_error *err);

#define ARB_FAIRNESS_DEFAULT 0.8

struct arb_job {
	/* ---- in ---- */
	double weight;            /* > 0; its share scales with it */
	double arrival_h;         /* when it came (hours, the caller's clock) */
	enum pool_group group;    /* its spot instances' quota group */
	int64_t unit_vcpus;       /* vCPUs of one of its spot instances (its
				   * largest type: a share never needs
				   * more) */
	int64_t unit_uusd;        /* what one costs an hour (its price now) */
	enum pool_group tier_group; /* its reliable tier's */
	int64_t tier_vcpus;       /* the tier's vCPUs, all on demand */
	int64_t tier_uusd;        /* what the tier costs an hour */
	int want;                 /* spot instances it would rent (0..max) */
	int max;                  /* rate[] has max + 1 entries */
	const double *rate;       /* work-hours an hour with the tier and n
				   * spot instances, n = 0..max; not
				   * decreasing where it is used */
	double work_left_h;       /* work-hours left */
	double work_total_h;      /* its whole work */
	double restart_h;         /* what a change of its share costs it
				   * (a program's re-form); 0: none */
	bool admitted;            /* its tier was admitted before */
	int share;                /* in: the share it held (the lease
				   * ending); out: the new one */
	/* ---- out ---- */
	bool admit;               /* its tier is in: it may run */
	double rho;               /* its finish-time fairness at the new
				   * share (>= 0; HUGE_VAL when it cannot
				   * progress) */
};

struct arb_setup {
	enum arb_kind kind;
	double fairness;          /* (0, 1]: finish-time's f */
	double now_h;             /* the caller's clock */
	const struct pool_limits *limits;
	/* what is held against the limits outside the jobs given (other
	 * users of the account, learned from quota errors); NULL: none */
	const struct pool_use *outside;
};

/* Decide the shares of jobs[0..n) (each job's share and admit, and rho).
 * Never admits a tier or gives a share that would take the pool past a
 * limit: with every job at its share, units of unit_vcpus and unit_uusd,
 * the pool is within its limits.  PX_EINVAL on a bad job (no rate,
 * weight <= 0), PX_ENOMEM. */
enum px_err arb_decide(const struct arb_setup *s, struct arb_job *jobs,
		       size_t n, struct px_error *err);

/* How many of j's spot instances the pool holds with j alone in it (its
 * tier in, beside what is held outside: may be NULL): the pool in j's
 * units, whether or not j could use them all (its 1/N of the pool is
 * counted in them, then held to its max: Themis's and Gavel's "1/N of
 * the cluster"), up to j->max * ARB_ALONE_JOBS (a pool without a limit:
 * its 1/N is its max up to that many jobs). */
#define ARB_ALONE_JOBS 64
int arb_alone_max(const struct pool_limits *l, const struct pool_use *outside,
		  const struct arb_job *j);
/* j's finish time alone on 1/n_jobs of such a pool: work_total over its
 * rate with min(max, alone_max / n_jobs) spot instances (at least one
 * where it may hold any); 0 when that rate is 0. */
double arb_alone_hours(const struct arb_job *j, double n_jobs, int alone_max);

/* The finish-time fairness of job j at a share of n spot instances among
 * n_jobs present, in a pool whose limits let one job alone hold
 * alone_max of j's instances: (now - arrival + restart if n differs from
 * its share + work_left / rate[n]) / arb_alone_hours.  HUGE_VAL when
 * rate[n] is 0. */
double arb_rho(const struct arb_job *j, int n, double now_h, size_t n_jobs,
	       int alone_max);

#endif
