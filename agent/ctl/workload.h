/* workload.h -- `proteusctl simulate --workload FILE`: the workload file
 * (docs/pool.md, "The workload file") and the output of its runs.
 *
 * The file is {"pool": {KEY: VALUE, ...}, "jobs": [{"arrival_hours": H,
 * "weight": W, "name": N, "job": SPEC}, ...]}: the pool keys are the
 * daemon's (pool_spot_vcpus, pool_ondemand_vcpus, pool_usd_per_hour,
 * pool_lease_seconds, pool_fairness), a job's SPEC an object as
 * `simulate --job` takes, or the name of such a file (relative to the
 * workload file's folder; a daemon job file's own sections dropped).
 */
#ifndef PX_CTL_WORKLOAD_H
#define PX_CTL_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "../../bidbrain/jobspec.h"
#include "../world/sim_workload.h"
#include "simplot.h"

#define WORKLOAD_FILE_MAX (4 * 1024 * 1024)

struct workload {
	struct pool_limits limits;
	int64_t lease_s;
	double fairness;
	struct wl_job *jobs;
	struct jobspec *specs;
	size_t n;
	char region[JOBSPEC_NAME_MAX];   /* every job's */
};

/* Read and check the file; errors name it and the field
 * ("w.json: jobs[2].arrival_hours: ..."). */
enum px_err workload_load(const char *path, struct workload *ret,
			  struct px_error *err);
void workload_release(struct workload *w);

/* The results of the arbiters, r[0..n), as a table or one JSON object
 * (to stdout); 0 or CLI_EXIT_FAIL. */
void workload_print(const char *path, const struct workload *w,
		    const struct wl_setup *s, const struct wl_result *r,
		    size_t n);
int workload_print_json(const char *path, const struct workload *w,
			const struct wl_setup *s, const struct wl_result *r,
			size_t n);
/* Each job's completion hours and rho under each arbiter. */
enum px_err workload_plot(const char *plot, enum simplot_format fmt,
			  const char *path, const struct wl_result *r,
			  size_t n, struct px_error *err);

#endif
