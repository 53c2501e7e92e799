/* jobspec.h -- the job spec: a JSON file describing a training job for the
 * simulator and the daemon (docs/jobspec.md is the reference).
 *
 * Parsing validates every field; errors name the file and the field's
 * path, e.g. "job.json: spot.types[2]: unknown instance type 'x'".  The
 * parsed spec is a flat struct with fixed-size arrays: nothing to free.
 * No I/O beyond reading a file in jobspec_load (the spec) and
 * jobspec_profile_load (a scaling profile it names); no logging.
 */
#ifndef PX_JOBSPEC_H
#define PX_JOBSPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/px.h"

#define JOBSPEC_FILE_MAX (1024 * 1024)
#define JOBSPEC_NAME_MAX 64       /* names, types, zones, with NUL */
#define JOBSPEC_TYPES_MAX 64      /* spot.types, speed and rate entries */
#define JOBSPEC_ZONES_MAX 32

/* Lower bounds of the numbers whose small values break the work model
 * (docs/jobspec.md says why):
 *  - work_hours and deadline_hours: the simulator's clock counts whole
 *    seconds; 0.001 h is 3.6 s;
 *  - speed: the slowest type in the instance table runs at 1/40 of the
 *    fastest, so 0.001 leaves room; smaller rates make a job's time to
 *    finish overflow any clock;
 *  - scaling_efficiency: n instances do S * e^log2(n) = S * n^log2(e)
 *    work per hour; below 0.5 adding instances would make the fleet do
 *    less work in all (at 0.5 it does the same);
 *  - budget_usd: money is counted in micro-dollars. */
#define JOBSPEC_HOURS_MIN 0.001
#define JOBSPEC_SPEED_MIN 0.001
#define JOBSPEC_EFFICIENCY_MIN 0.5
#define JOBSPEC_BUDGET_MIN 0.000001
#define JOBSPEC_PATH_MAX 1024
#define JOBSPEC_RESTART_MAX 86400.0 /* restart_seconds at most: a day */
/* The chance that one capacity event of a pool takes a given instance of
 * it, fitted to Bamboo's measured traces (docs/simulate.md,
 * "Interruptions"). */
#define JOBSPEC_POOL_SHARE 0.094

#define JOBSPEC_PROFILE_MAX 8     /* points of a scaling profile */

/* A scaling profile measured by the trainer's benchmark: at workers[k]
 * instances (1 first, increasing) the job did samples_per_s[k] samples a
 * second and reached accuracy_per_sample[k] test accuracy per sample
 * trained (at an equal number of samples).  n instances do
 * eff(n) = samples_per_s(n) / (n samples_per_s(1)) x
 * accuracy_per_sample(n) / accuracy_per_sample(1) of n lone instances'
 * work (docs/jobspec.md has the interpolation). */
struct jobspec_profile {
	int n;                 /* points; 0: none (scaling_efficiency) */
	int workers[JOBSPEC_PROFILE_MAX];
	double samples_per_s[JOBSPEC_PROFILE_MAX];
	double accuracy_per_sample[JOBSPEC_PROFILE_MAX];
	/* derived when parsed: log of each point's efficiency (work per
	 * worker against one worker's), log2 of its workers */
	double log_eff[JOBSPEC_PROFILE_MAX];
	double log2_workers[JOBSPEC_PROFILE_MAX];
	/* a fitted model in place of the points (proteusd's measured
	 * scaling, jobspec_measured_profile): eff(n) = 1 / (1 + serial
	 * (n - 1)), the points kept to show what it was fitted to */
	bool fitted;
	double serial;
};

struct jobspec_type_value {
	char type[JOBSPEC_NAME_MAX];
	double v;
};

struct jobspec {
	char name[JOBSPEC_NAME_MAX];
	char region[JOBSPEC_NAME_MAX];        /* e.g. us-east-1 */
	double work_hours;    /* total work, hours of one reference_type */
	char reference_type[JOBSPEC_NAME_MAX];
	int instances;        /* fleet of the ondemand/standard baselines */
	struct {
		char type[JOBSPEC_NAME_MAX];
		int count;            /* on-demand instances, >= 0 */
	} reliable;
	struct {
		char types[JOBSPEC_TYPES_MAX][JOBSPEC_NAME_MAX];
		size_t n_types;
		char zones[JOBSPEC_ZONES_MAX][JOBSPEC_NAME_MAX];
		size_t n_zones;       /* 0: every zone of the region */
		int max_instances;    /* transient instances at most */
	} spot;
	struct jobspec_type_value speed[JOBSPEC_TYPES_MAX]; /* explicit */
	size_t n_speed;
	double scaling_efficiency; /* per doubling of the fleet, [0.5, 1] */
	int startup_seconds;  /* before a new instance contributes */
	int clock_seconds;    /* work lost when an instance vanishes
			       * without warning */
	int warning_seconds;  /* eviction notice (120; 0: none) */
	int tick_seconds;     /* periodic decision tick */
	/* work lost each time the working fleet changes (a join, a leave):
	 * the group re-forms and waits this long, in seconds of the fleet's
	 * rate (docs/simulate.md, "Re-forms"); [0, JOBSPEC_RESTART_MAX],
	 * 0: none */
	double restart_seconds;
	int64_t budget_uusd;  /* -1: none */
	double deadline_hours; /* 0: none; the run stops there */
	/* a goal, not a stop: the job should be done this many hours after
	 * its start (uniform-progress plans for it; simulate says which
	 * policy met it); 0: none */
	double finish_by_hours;
	/* current-era interruptions per instance-hour */
	struct jobspec_type_value rate[JOBSPEC_TYPES_MAX];
	size_t n_rate;
	double rate_default;  /* < 0: the snapshot's or the instance table's */
	/* a Spot Instance Advisor snapshot for the per-second hazards, as
	 * written in the spec (relative to the spec's folder); "": the
	 * shipped default */
	char spot_advisor[JOBSPEC_PATH_MAX];
	double pool_share;    /* interruption_pool_share, (0, 1] */
	/* scaling_profile: inline (profile.n > 0), or a file named in the
	 * spec (profile_path, relative to the spec's folder) that the reader
	 * loads with jobspec_profile_load */
	struct jobspec_profile profile;
	char profile_path[JOBSPEC_PATH_MAX];
};

/* Parse the spec in buf (len bytes, named name in errors) into *ret
 * (written only on success).  PX_EINVAL with the field path on bad input. */
enum px_err jobspec_parse(const char *buf, size_t len, const char *name,
			  struct jobspec *ret, struct px_error *err);

/* Read and parse the file at path (at most JOBSPEC_FILE_MAX bytes). */
enum px_err jobspec_load(const char *path, struct jobspec *ret,
			 struct px_error *err);

/* Hours the job needs on demand alone: `instances` on-demand instances of
 * reference_type at the spec's scaling (p: a running job's measured
 * scaling; NULL the spec's), startup_seconds then work_hours at their
 * rate, in whole seconds (the `ondemand` baseline's runtime in simulate);
 * INFINITY when that fleet does no work. */
double jobspec_ondemand_hours(const struct jobspec *j,
			      const struct jobspec_profile *p);

/* Whether finish_by_hours (when set) can be met on demand: false with
 * the hours on demand needs in *ret_need (jobspec_ondemand_hours) when
 * it cannot; true when it can or the spec has none. */
bool jobspec_finish_feasible(const struct jobspec *j,
			     const struct jobspec_profile *p,
			     double *ret_need);

/* Work rate of one instance of type relative to reference_type: the
 * "speed" entry when there is one, else the ratio of vCPU counts from the
 * instance table (0 for a type missing from the table). */
double jobspec_speed(const struct jobspec *j, const char *type);

/* Interruption rate per instance-hour of type (current era). */
double jobspec_interrupt_rate(const struct jobspec *j, const char *type);

/* Work per hour of n instances whose speeds sum to speed_sum:
 * speed_sum * eff(n), with eff(n) = e^log2(n) (e = scaling_efficiency)
 * or the scaling profile's (at most 1); 0 when n is 0. */
double jobspec_fleet_rate(const struct jobspec *j, int n, double speed_sum);
/* The same by profile p (a running job's measured scaling; NULL: the
 * spec's, as jobspec_fleet_rate). */
double jobspec_rate(const struct jobspec *j, const struct jobspec_profile *p,
		    int n, double speed_sum);

/* The scaling a running job measured (proteusd, from the trainer's
 * PROGRESS; docs/controller.md, "Measured scaling"): its goodput (samples
 * a second times their statistical efficiency) at each count of
 * instances, a running mean over the last JOBSPEC_MEASURED_WINDOW
 * reports of each. */
#define JOBSPEC_MEASURED_MAX 64    /* instances measured at most */
#define JOBSPEC_MEASURED_WINDOW 20
#define JOBSPEC_MEASURED_MIN 5     /* reports before a point counts */

struct jobspec_measured {
	double goodput[JOBSPEC_MEASURED_MAX + 1]; /* [n]: at n instances */
	uint32_t reports[JOBSPEC_MEASURED_MAX + 1];
	/* Pollux keeps the two factors apart: the throughput (samples a
	 * second) and the total batch at n, running means over the reports
	 * that had both (parts[n]), so that the goodput of a count measured
	 * early can be valued again at the efficiency of now */
	double throughput[JOBSPEC_MEASURED_MAX + 1];
	double batch[JOBSPEC_MEASURED_MAX + 1];
	uint32_t parts[JOBSPEC_MEASURED_MAX + 1];
};

/* One report: goodput at n instances (ignored unless n is 1 ..
 * JOBSPEC_MEASURED_MAX and goodput finite and > 0). */
void jobspec_measured_add(struct jobspec_measured *m, int n, double goodput);
/* The same report's factors: throughput (samples a second) at a total
 * batch (ignored unless n is in range and both are finite and > 0). */
void jobspec_measured_add_parts(struct jobspec_measured *m, int n,
				double throughput, double batch);
/* Value every count with known factors again: goodput = throughput x
 * eff(batch, arg), eff the statistical efficiency of a total batch now
 * (0..1; a value outside leaves that count as it was). */
void jobspec_measured_revalue(struct jobspec_measured *m,
			      double (*eff)(double batch, const void *arg),
			      const void *arg);
/* The profile the measurements make once two counts of instances have
 * JOBSPEC_MEASURED_MIN reports each (else false, *ret untouched): the
 * points in order (at most JOBSPEC_PROFILE_MAX: the smallest counts and
 * the largest), samples_per_s their goodput, accuracy_per_sample 1 (the
 * goodput holds the efficiency), planned with as the fitted model
 * (jobspec_measured_fit: fitted, serial), not the points. */
bool jobspec_measured_profile(const struct jobspec_measured *m,
			      struct jobspec_profile *ret);

/* The scaling model fitted to the counts with JOBSPEC_MEASURED_MIN
 * reports: goodput(n) = g1 n / (1 + serial (n - 1)), serial in [0,
 * JOBSPEC_SERIAL_MAX] (0: linear, 1: flat, above 1: more instances do
 * less), least squares on the logs, each count weighted by its reports
 * (at most JOBSPEC_MEASURED_WINDOW).  False (nothing written) below two
 * such counts. */
#define JOBSPEC_SERIAL_MAX 16.0
bool jobspec_measured_fit(const struct jobspec_measured *m, double *ret_g1,
			  double *ret_serial);

/* The largest count of instances with JOBSPEC_MEASURED_MIN reports; 0
 * when none. */
int jobspec_measured_largest(const struct jobspec_measured *m);

/* Pollux's rule for exploring (docs/controller.md, "Exploring the
 * scaling"): the most instances a job may hold when largest is the
 * largest count measured: start while none is (largest 0), else
 * growth x largest (rounded down), at least largest + 1. */
int jobspec_explore_limit(int largest, int start, double growth);

/* The exploration of one job: the rule above as the reports come.  A
 * fleet at the limit is measured in 8 reports (proteusd leaves out the
 * first 3 at a new count, then JOBSPEC_MEASURED_MIN); one that held it
 * JOBSPEC_EXPLORE_PATIENCE reports without (its trainer reports no
 * goodput, or the count keeps changing under it) stops exploring, so
 * that a job is never held small for a measurement that does not come. */
#define JOBSPEC_EXPLORE_PATIENCE 32

struct jobspec_explore {
	int start;               /* instances at first, >= 1 */
	double growth;           /* >= 1 */
	int limit;               /* instances allowed now; 0: before the
				  * first step, or done */
	uint32_t idle;           /* reports that held the limit since it
				  * was set */
	bool done;
	bool saved;              /* done, and the store says so (proteusd) */
};

enum jobspec_explore_ev {
	JOBSPEC_EXPLORE_SAME = 0,
	JOBSPEC_EXPLORE_LIMIT,      /* the limit was set or raised */
	JOBSPEC_EXPLORE_DONE_MAX,   /* it lets spot.max_instances in */
	JOBSPEC_EXPLORE_DONE_IDLE   /* held it, nothing measured */
};

/* One step, after a report at n instances (0: none, a job's start), with
 * the measurements m, reliable instances and at most max_spot spot ones:
 * x->limit from the largest count measured, done once that lets max_spot
 * spot instances in or the fleet held it JOBSPEC_EXPLORE_PATIENCE
 * reports.  What changed. */
enum jobspec_explore_ev jobspec_explore_step(struct jobspec_explore *x,
					     const struct jobspec_measured *m,
					     int n, int reliable,
					     int max_spot);

/* Parse a scaling profile file (the object `scaling_profile` takes) into
 * j->profile; errors name the file and the field. */
enum px_err jobspec_profile_load(const char *path, struct jobspec *j,
				 struct px_error *err);

#endif
