/* jobs.h -- proteusd's jobs: what `proteusctl submit` hands the daemon,
 * run on a world by the controller, with the elastic trainer on the
 * instances (docs/jobs.md).
 *
 * A job is submitted (its spec checked on the loop; its files read,
 * checked and copied on a thread of its own, the loop going on; then
 * stored queued and answered with its id, or refused), started on a
 * later turn of the loop (its directory and key, its coordinator, its
 * world and controller, the first decision), driven by a timer of the
 * loop (the trainer's progress, the world's due events), and ended at
 * its target, by cancel, at its budget or deadline, or failed (a stall,
 * its trainer or its world failing); every instance is released then
 * and the store says how it ended.  Each job has its own controller,
 * world, fleet and budget.
 *
 * Restart: jobs the store says are queued or running when the daemon
 * starts are taken up again (jobs_recover), those of every world the
 * daemon runs: instances a killed daemon left open are closed and
 * charged up to the job's last recorded instant where they end with it
 * (local: its processes; every node watches its parent) or taken up by
 * their world where they outlive it (world.h, instances_outlive_daemon),
 * and the trainer resumes from the job's last checkpoint.
 *
 * The code: jobs.c and jobs_*.c, one concern a file (jobs_int.h).
 *
 * Everything runs on the daemon's loop but a submission's reads, which
 * have a thread each (jobs_submit.c); nothing here blocks for long.  A
 * restarted daemon reads a taken-up job's market again, from the job's
 * own copies, on the loop, before it serves the socket (jobs_recover.c).
 */
#ifndef PX_JOBS_H
#define PX_JOBS_H

#include <jansson.h>
#include <stdint.h>

#include "../common/px.h"
#include "../db/store.h"
#include "config.h"
#include "loop.h"

struct jobs_setup {
	struct loop *loop;
	struct store *st;
	const struct proteusd_config *cfg; /* live; outlives the jobs */
	const char *trainer;               /* proteus-trainer's path */
	const char *trace;                 /* default trace (resolved) */
	const char *ondemand;              /* default on-demand table */
	const char *dir;                   /* job directories' parent */
};

struct jobs;

enum px_err jobs_new(const struct jobs_setup *s, struct jobs **ret,
		     struct px_error *err);
/* Stop every running job's processes (the store keeps them running, for
 * the next start to resume) and free. */
/* proteusd is stopping (SIGTERM): each running job is logged and marked
 * (a "suspended" event) as staying running in the store, to resume at the
 * next start; each queued one stays queued.  Local instances end with the
 * daemon (jobs_free); docs/jobs.md, "When proteusd stops". */
void jobs_suspend(struct jobs *j);
void jobs_free(struct jobs *j);
/* Take up the store's queued and running jobs (once, after jobs_new). */
enum px_err jobs_recover(struct jobs *j, struct px_error *err);

/* The control commands (docs/proteusd.md): each returns the reply's
 * fields, or NULL with err set.  req is the request object. */
json_t *jobs_cmd_submit(struct jobs *j, json_t *req, struct px_error *err);
json_t *jobs_cmd_jobs(struct jobs *j, json_t *req, struct px_error *err);
json_t *jobs_cmd_status(struct jobs *j, json_t *req, struct px_error *err);
json_t *jobs_cmd_events(struct jobs *j, json_t *req, struct px_error *err);
json_t *jobs_cmd_cancel(struct jobs *j, json_t *req, struct px_error *err);
/* `model`: a chunk of the job's last checkpoint (jobs_model.c). */
json_t *jobs_cmd_model(struct jobs *j, json_t *req, struct px_error *err);
/* `logs`: each node's program output, bounded (jobs_logs.c). */
json_t *jobs_cmd_logs(struct jobs *j, json_t *req, struct px_error *err);
/* `pool`: the pool the jobs share (docs/pool.md): its limits as
 * configured, learned and in force, what is used, each job's share and
 * rho (jobs_pool.c). */
json_t *jobs_cmd_pool(struct jobs *j, json_t *req, struct px_error *err);

/* Every job this daemon holds, as Prometheus families (prom.h): by
 * state, and each one's fleet, cost, evictions, joins, losses, speed
 * and accuracy, with the figures status gives (docs/proteusd.md,
 * "Metrics"). */
struct prom;
void jobs_metrics(struct jobs *js, struct prom *p);
/* The pool's families: its use and limits, each job's rho and share. */
void jobs_pool_metrics(struct jobs *js, struct prom *p);

/* Jobs running now. */
size_t jobs_running(const struct jobs *j);

#endif
