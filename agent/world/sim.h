/* sim.h -- the "sim" world: a virtual clock that drives the controller
 * (controller.h) and one policy over a replayed spot market, event to
 * event (price changes, billing-hour ends, eviction notices and
 * evictions, instance startup, ticks, job end), with
 * the job's work model and the chosen billing model.  docs/simulate.md
 * describes the model and every assumption.  No I/O, no logging; decisions
 * and events can be streamed to a sink (for --db).
 */
#ifndef PX_SIM_H
#define PX_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../bidbrain/billing.h"
#include "../../bidbrain/jobspec.h"
#include "../../bidbrain/policy.h"
#include "../../cloudapi/market.h"
#include "../../cloudapi/ondemand.h"
#include "../../common/px.h"
#include "../controller.h"
#include "../plan.h"

/* The simulator reports the controller's events (controller.h). */

/* The sim world's ops (world_ops_by_name("sim")): the controller's half;
 * the daemon's half is NULL (simulate drives it: sim_run). */
extern const struct world_ops sim_world_ops;

struct sim_setup {
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
	uint64_t seed;
	/* per-second hazards from a Spot Instance Advisor snapshot (plan.h);
	 * NULL: the job's rates or the instance table's */
	const struct advisor *advisor;
	bool series;          /* collect time series for plots */
	ctrl_sink_fn sink;    /* may be NULL */
	void *sink_ctx;
};

/* A validated setup: the job resolved against the markets and prices
 * (a plan, plan.h) with the sim world's own settings.  Build once, run any
 * number of policies. */
struct sim_plan;

/* plan_new's checks and errors (plan.h).  setup is copied; the market
 * set, table and job it points to must outlive the plan. */
enum px_err sim_plan_new(const struct sim_setup *setup, struct sim_plan **ret,
			 struct px_error *err);
void sim_plan_free(struct sim_plan *p);
/* The resolved window and environment. */
int64_t sim_plan_start(const struct sim_plan *p);
int64_t sim_plan_end(const struct sim_plan *p);
const struct pol_env *sim_plan_env(const struct sim_plan *p);

struct sim_point {
	int64_t t_s;
	int64_t cost_uusd;    /* charged so far */
	int spot;             /* live spot instances, not counting those
			       * under an eviction notice (leaving) */
	int ondemand;         /* live on-demand instances */
	double work_done_h;
};

/* Why a run ended. */
enum sim_stop {
	SIM_STOP_DONE = 0,        /* the work is done (completed) */
	SIM_STOP_BUDGET,          /* the budget paid for nothing more */
	SIM_STOP_DEADLINE,        /* the job's deadline */
	SIM_STOP_WINDOW           /* the end of the window */
};
/* "done", "budget", "deadline", "window". */
const char *sim_stop_name(enum sim_stop s);

/* The result of one run: exactly the fields of `simulate --json`'s
 * results[] entries, plus the cost in micro-USD and the series. */
struct sim_result {
	char policy[32];
	bool completed;
	enum sim_stop stop;
	double cost_usd;
	double runtime_hours;
	double work_done_hours;
	double cost_per_work_usd; /* cost_usd / work_done_hours; 0 when
				   * undefined (sim_result_cost_per_work) */
	int64_t evictions;
	int64_t instances_launched;
	double instance_hours;
	double free_hours;
	int64_t cost_uusd;
	int64_t decisions;        /* decide() calls */
	/* the re-forms of the working set that cost the job restart_seconds
	 * each (docs/simulate.md, "Re-forms"), and the work-hours the fleet
	 * did not do while it waited; 0 when restart_seconds is 0, and for
	 * the oracle rows (which plan for no re-form: still a lower bound) */
	int64_t reforms;
	double reform_lost_hours;
	struct sim_point *series; /* when setup.series */
	size_t n_series;
};

/* The hindsight bound (bidbrain/oracle.h) as a policy for sim_run only:
 * sim_run computes the bound instead of running a controller, and its
 * result row is "oracle" (cost: the bound; runtime: the end of the plan
 * that attains it; work: the job's; completed; no evictions, launches or
 * decisions).  A bound past the job's budget means no plan finishes
 * within it: the row is then stopped by the budget, with no cost, work
 * or runtime (as a run whose budget pays for nothing).  Its init refuses
 * every world: it reads the future. */
extern const struct policy_ops sim_oracle_ops;
/* The same bound counting every instance-second as paid ("oracle-paid"):
 * what foresight of prices alone is worth; a bound only on plans that
 * never get a bill waived. */
extern const struct policy_ops sim_oracle_paid_ops;

/* Run policy over the plan's window.  *ret is the caller's
 * (sim_result_release).  Every figure of a result is finite and none is
 * negative; a run whose figures would not be is PX_EINVAL naming the
 * figure (it cannot be simulated in this window), never a result. */
enum px_err sim_run(const struct sim_plan *plan,
		    const struct policy_ops *policy, struct sim_result *ret,
		    struct px_error *err);
void sim_result_release(struct sim_result *r);

/* ---- one job of several on one clock (simulate --workload,
 * sim_workload.h): the run of sim_run, a step at a time, its controller
 * gated by the pool and its spot instances capped by its share ---- */
struct sim_job;

/* Build it (gate may be NULL); nothing runs yet.  The oracles refused. */
enum px_err sim_job_new(const struct sim_plan *plan,
			const struct policy_ops *policy,
			const struct ctrl_gate *gate, struct sim_job **ret,
			struct px_error *err);
/* The first decision, at the plan's start. */
enum px_err sim_job_start(struct sim_job *j, struct px_error *err);
/* The instant of its next step (an event, its end, its work done);
 * INT64_MAX once it finished. */
int64_t sim_job_next(const struct sim_job *j);
/* Its next step, at sim_job_next. */
enum px_err sim_job_step(struct sim_job *j, struct px_error *err);
/* Its clock to t (<= sim_job_next): the work the fleet does till then. */
void sim_job_advance(struct sim_job *j, int64_t t);
/* The spot instances and vCPUs it may hold from its now (the pool's
 * share; -1: no cap): its policy decides again at once (once started;
 * before, its first decision sees it). */
enum px_err sim_job_share(struct sim_job *j, int spot_max,
			  int64_t spot_vcpus, struct px_error *err);
struct ctrl *sim_job_ctrl(struct sim_job *j);
const struct pol_env *sim_job_env(const struct sim_job *j);
double sim_job_work(const struct sim_job *j);
double sim_job_rate(const struct sim_job *j);
/* Its result once it finished, else NULL. */
const struct sim_result *sim_job_result(const struct sim_job *j);
void sim_job_free(struct sim_job *j);

/* Whether r's cost per work-hour is defined (some work was done), and its
 * value in *ret.  Printers show an undefined one as '-' (JSON null, an
 * empty CSV field), never as 0, inf or nan. */
bool sim_result_cost_per_work(const struct sim_result *r, double *ret);

#endif
