/* sim_workload.h -- several jobs, one pool, in the sim world
 * (`proteusctl simulate --workload`, docs/pool.md).
 *
 * Jobs arrive over time; each runs under its own controller and policy
 * (BidBrain by default) on the one replayed market and virtual clock, as
 * sim_run runs one.  Above them the pool's limits (pool.h) gate every
 * instance any job asks for, and an arbiter (arbiter.h) divides the pool
 * in leases: each job's share caps its spot instances, and a job above a
 * new share gives the excess back at once (its newest spot instances;
 * a program's group re-forms, which the work model charges).  The
 * arbiter decides at lease ends, arrivals and completions.  A job whose
 * reliable tier does not fit waits, unstarted, until it does.  No I/O.
 */
#ifndef PX_SIM_WORKLOAD_H
#define PX_SIM_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../bidbrain/arbiter.h"
#include "../../bidbrain/pool.h"
#include "sim.h"

#define WL_JOBS_MAX 256
#define WL_LEASE_DEFAULT_S 3600

struct wl_job {
	const struct jobspec *job;
	char name[JOBSPEC_NAME_MAX];
	double arrival_hours;     /* after the window's start */
	double weight;            /* > 0 */
};

struct wl_setup {
	const struct market_set *ms;      /* sealed */
	const struct ondemand_table *od;
	enum billing_model billing;
	int64_t start_s, end_s;           /* the window, resolved */
	int64_t trace_first_s, trace_last_s;
	uint64_t seed;                    /* job i runs with seed + i */
	const struct advisor *advisor;    /* may be NULL */
	const struct policy_ops *policy;  /* every job's */
	struct pool_limits limits;
	int64_t lease_s;                  /* > 0 */
	double fairness;                  /* (0, 1] */
	const struct wl_job *jobs;
	size_t n_jobs;
};

struct wl_job_result {
	char name[JOBSPEC_NAME_MAX];
	bool completed;
	double arrival_hours;
	double wait_hours;        /* arrival to its tier's admission */
	double completion_hours;  /* arrival to the end of its run (the
				   * window's end when not completed) */
	double alone_hours;       /* its ideal: alone on 1/N of the pool */
	double rho;               /* completion / alone */
	double cost_usd;
	double work_done_hours;
	int64_t sheds;            /* instances it gave back to the pool */
	int64_t refused;          /* requests the pool refused */
	struct sim_result run;    /* its run (policy, evictions...) */
};

struct wl_result {
	char arbiter[16];
	double max_rho;
	double mean_completion_hours;
	double p95_completion_hours;
	double cost_usd;
	double utilisation;       /* time-average of the use of the
				   * tightest limit, from the first arrival
				   * to the last end (0..1) */
	int64_t rounds;           /* the arbiter's decisions */
	/* the most the jobs held at once */
	int64_t peak_spot_vcpus, peak_ondemand_vcpus;
	double peak_usd_per_hour;
	/* instants at which a limit was past (0 unless prices rose past
	 * pool_usd_per_hour before the jobs shed: see docs/pool.md) */
	int64_t over_limit;
	struct wl_job_result *jobs;
	size_t n_jobs;
};

/* Run the workload under arbiter a.  *ret is the caller's
 * (wl_result_release).  Errors name the job ("job 2 'mf-small': ..."). */
enum px_err wl_run(const struct wl_setup *s, enum arb_kind a,
		   struct wl_result *ret, struct px_error *err);
void wl_result_release(struct wl_result *r);

#endif
