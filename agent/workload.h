/* workload.h -- what runs on a job's nodes, behind one table, as worlds
 * are behind theirs (world.h).
 *
 * A world says where a job's nodes run and what they cost; a workload
 * says what they run and what they report: the command of each node
 * (argv, environment, files, through the world's hooks), the process
 * that drives them (the built-in trainer's coordinator), the progress it
 * reports (a struct job_report, handed to jobs_progress.c), what it is
 * told of stage and tier changes and of a node's notice, how it ends, and
 * what the job produced.  The job's own parts (jobs_int.h) are written by
 * their owners: a workload keeps its state in job->wl and tells the rest
 * through the functions of jobs_int.h (job_progress_take,
 * job_fail_soon, job_event, ...).
 *
 *   jobs.c           calls   prepare, hooks, start, poll, check,
 *                            restart_stalled, stop, free
 *   the controller   (through jobs.c's dispatcher)  stage
 *   the world        (through the hooks)  command, notice, ended,
 *                            adopted, start_failed, progress
 *
 * The built-in elastic trainer (workload_trainer.c) is the first; a
 * second is one table and its file, known to workload_of (workload.c;
 * workload_register adds one, as tests/integration/test_workload_own.c
 * does).  A job names its workload ("workload", default "trainer").
 * docs/jobs.md, "Workloads", has the contract.
 */
#ifndef PX_WORKLOAD_H
#define PX_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include <stdint.h>

#include "../common/px.h"

struct job;
struct world_hooks;

/* A worker the workload counts slow (status). */
struct job_slow {
	uint32_t node;
	float speed;
};

/* How the workload's driver stands after a poll (check). */
enum workload_end {
	WORKLOAD_RUNS = 0,       /* working (restarted, maybe) */
	WORKLOAD_DONE,           /* the work ended: the job is done */
	WORKLOAD_FAILED,         /* failed: why says why */
};

/* One progress report of a workload, in the job's terms
 * (job_progress_take).  Figures it does not know are NaN or 0 as said. */
struct job_report {
	int64_t clock;           /* steps done (the trainer's clocks) */
	int64_t total_clock;     /* as now foreseen; 0: not said */
	double frac;             /* share of the work done, 0..1 */
	double acc, loss;        /* test figures; NaN: not evaluated */
	double sps;              /* samples per second */
	int workers, ps;         /* live members of each role */
	int stage;               /* the stage it runs in (1-3) */
	float speed_median;      /* its workers' median speed (0: none) */
	struct job_slow slow[8];
	int n_slow;
	/* goodput (0: not reported): the report's, its count of instances
	 * and the total batch of the workers that train */
	double goodput, efficiency, noise_scale, lr_scale;
	uint32_t batch;          /* per worker */
	double base_batch;       /* the job's own (the noise scale's
				  * efficiency is judged against it) */
	int instances;
	double total_batch;
};

struct workload_ops {
	const char *name;        /* "trainer" */
	/* What the job produces, a file in its folder (<job_dir>/ID/...):
	 * `proteusctl model` serves it. */
	const char *product;
	/* Real ms a released node has to hand its work over, as a warned
	 * one does (world_setup.release_ms; 0: killed at once). */
	int64_t release_ms;
	/* Each start of the job (a daemon's life): the workload's state
	 * (job->wl, made when NULL), from the job's request and key; the
	 * figures it foresees (job_progress_foresee).  PX_ENOMEM, ... */
	enum px_err (*prepare)(struct job *j, struct px_error *err);
	/* TCP ports one node's processes take (a world's port slots). */
	int (*node_ports)(const struct job *j);
	/* The world's hooks of the workload's side: each instance's node
	 * command, its notices, a node that ended or failed to start, one
	 * adopted, the progress mark, the nodes' log. */
	void (*hooks)(struct job *j, struct world_hooks *h);
	/* Its driver (the trainer's coordinator), listening at coord, the
	 * address the world gives (resume: from the job's checkpoint). */
	enum px_err (*start)(struct job *j, const char *coord, bool resume,
			     struct px_error *err);
	/* Progress in, commands out; never blocks. */
	void (*poll)(struct job *j);
	/* The controller moved the job to stage (1-3): the tiers' roles. */
	void (*stage)(struct job *j, int stage);
	/* How the driver stands; on WORKLOAD_FAILED, why (len bytes). */
	enum workload_end (*check)(struct job *j, char *why, size_t len);
	/* The job stalled (job->run.why says how): restart the driver from
	 * the checkpoint if that may help; false: the job fails. */
	bool (*restart_stalled)(struct job *j);
	/* The driver killed and reaped, its channels closed (the state
	 * stays, for status and a later start). */
	void (*stop)(struct job *j);
	/* job->wl freed (after stop). */
	void (*free)(struct job *j);
	/* The job's world was freed (its nodes ended): what they left on
	 * this host may go.  May be NULL. */
	void (*released)(struct job *j);
	/* What `status` shows of the workload's own, under its name (a new
	 * object; NULL: nothing).  May be NULL. */
	json_t *(*view)(const struct job *j);
};

/* The built-in elastic trainer (workload_trainer.c). */
extern const struct workload_ops workload_trainer;
/* The user's own program (workload_program.c, docs/programs.md). */
extern const struct workload_ops workload_program;

/* The workload a request names ("workload": default "trainer"); NULL:
 * none of that name. */
const struct workload_ops *workload_of(const char *name);
/* One more workload jobs may name (before the daemon takes jobs: not
 * thread-safe); PX_EINVAL for an op missing or a name taken. */
enum px_err workload_register(const struct workload_ops *o,
			      struct px_error *err);
/* The names known, ", " between them, into buf. */
void workload_names(char *buf, size_t len);

#endif
