/* jobs_int.h -- what the files of proteusd's jobs share (jobs.h;
 * docs/jobs.md): one job, made of parts each written by one file, and the
 * functions each file offers the others.  Private to agent/jobs*.c and
 * the workloads (workload.h).  Lowest first:
 *
 *   jobs_events.c      the job's event log (store rows)
 *   jobs_inputs.c      the files a job names: opened once under the
 *                      submitter's guard, copied into the job's folder
 *   jobs_market.c      its trace, prices and advisor snapshot, read under
 *                      a guard (the submitter's rights, bounds)
 *   jobs_books.c       the controller's events into the store, the
 *                      on-demand shadow bill, the cost
 *   jobs_pool.c        the pool all jobs share (docs/pool.md): its
 *                      limits, the gate on every job's requests, the
 *                      arbiter's rounds in leases, the shares
 *   jobs_progress.c    what the workload reports, the measured scaling
 *                      and its exploration, what the controller sees
 *   jobs_notify.c      the notifications of a job's events (notify.h)
 *   jobs.c             the list, the queue, start, tick and end, the stop
 *                      rules, the controller events' dispatcher
 *   workload_trainer.c the built-in trainer (workload.h): coordinator,
 *                      each instance's node command, the agent channel
 *   jobs_submit.c      submit (checked, its market read on a thread,
 *                      stored queued) and cancel; this host's capacity
 *   jobs_recover.c     taking the store's jobs up after a restart
 *   jobs_view.c        the JSON of status, jobs, events and /metrics
 *   jobs_model.c       `model`: what the job produced, a chunk at a time
 *
 * A job reaches its world only through the world's ops (world.h,
 * world_ops_by_name): no file here includes a world's header, calls a
 * world's own functions or names a world; each per-world rule is a
 * field of the table (capacity, spec_check, no_explore, enrollments).
 * Its nodes' work it reaches only through its workload's (workload.h).
 */
#ifndef PX_JOBS_INT_H
#define PX_JOBS_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "../bidbrain/billing.h"
#include "../cloudapi/advisor.h"
#include "../cloudapi/market_load.h"
#include "../cloudapi/ondemand.h"
#include "config.h"
#include "controller.h"
#include "jobreq.h"
#include "jobs.h"
#include "journal.h"
#include "plan.h"
#include "pool_member.h"
#include "workload.h"
#include "world.h"

/* Error texts are cut to fit their buffers on purpose; paths are checked
 * for length where it matters (job_start). */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#define JOB_PATH_MAX 1024
#define PRODUCT "Linux/UNIX"

/* The files a job names (jobs_inputs.c): the spec's trace, on-demand
 * prices, Advisor snapshot and data (an IDX set's labels files too). */
enum job_input {
	JIN_TRACE, JIN_ONDEMAND, JIN_ADVISOR, JIN_TRAIN, JIN_TRAIN_LABELS,
	JIN_TEST, JIN_TEST_LABELS, JIN_MAX
};
struct job_inputs {
	char path[JIN_MAX][JOBREQ_PATH_MAX]; /* the file on this host */
	int fd[JIN_MAX];         /* pinned at submit; -1 */
	struct px_pin pins[JIN_MAX];
	int npins;
	char stage[JOB_PATH_MAX]; /* the copies until the job is stored */
	bool kept;               /* read from its copies (DIR/ID/in) */
};


/* ---- a job: its identity, and parts each written by one file ----
 *
 * The top-level fields are the job's identity: set while the job is built
 * (job_new, jobs_submit.c, jobs_recover.c) and read-only once it is in the
 * list.  Each part below is written by its owner only; the other files
 * read it, or ask the owner through its functions.  `make check-style`
 * enforces it (scripts/check-style, "owned parts"). */

/* The market a job runs in (owner: jobs_market.c). */
struct job_market {
	struct market_set ms;
	struct ondemand_table od;
	struct market_load ld;
	enum billing_model billing;
	/* per-second: the Spot Instance Advisor snapshot the hazards come
	 * from (adv_cfg: the daemon's spot_advisor when the job came) */
	char adv_cfg[CONFIG_PATH_MAX];
	char adv_path[CONFIG_PATH_MAX];
	struct advisor adv;
	bool have_adv;
	struct plan *plan;
	int64_t start_s;         /* market time the world starts at */
	int64_t now_s;           /* the provider's clock when its markets
				  * were read (ec2) */
	double speedup;
};

/* The run on its world: the state, the controller, the clock, the stop
 * rules and why it ended (owner: jobs.c). */
struct job_run {
	enum store_job_state state;
	char dir[JOB_PATH_MAX];  /* <job_dir>/ID */
	uint8_t key[32];         /* the job's key (jobkey.h) */
	struct ctrl *c;
	void *w;                 /* its world (j->wops) */
	struct journal *jn;
	int64_t timer;           /* loop timer id, -1 when none */
	int64_t t;               /* market time of the last event handled */
	bool done;               /* the workload ended the work */
	char why[640];           /* why it failed */
	char fail_now[512];      /* set: fail the job at the next tick */
	/* the stall watchdog: the workload's clock when it last moved,
	 * and when (monotonic, market time) */
	int64_t stall_clock;
	uint64_t stall_mono_us;
	int64_t stall_t;
	uint64_t closing_us;     /* ended, its bills open since (mono) */
	bool trim_due;           /* job_trim waits for the bills */
	uint64_t last_ev_us;     /* last "progress" event (monotonic) */
	int final_stage;         /* once ended: the last stage */
	/* finish_by_hours (docs/jobspec.md): the market time of the job's
	 * first start (its first "start" event's, in every life of the
	 * daemon; 0 until then), and the hours as submitted (req.spec's
	 * are the policy's: what is left of them from this life's start;
	 * 0 until the first job_start) */
	int64_t first_s;
	double finish_by_h;
};

/* What the workload reported, and what the job learnt from it: its
 * progress, test figures, members, goodput and measured scaling (owner:
 * jobs_progress.c; a workload hands in a struct job_report). */
struct job_progress {
	int64_t clock;
	int64_t total_clocks;    /* the workload's, as now foreseen */
	int64_t total_before;    /* of the earlier lives' last progress */
	int restarts;            /* of the workload's driver, every life */
	double acc, loss, sps;   /* NaN until evaluated */
	int workers, ps;
	/* workers the trainer counts slow, for `status`, and the median
	 * speed they are judged against (0: fewer than two report one) */
	struct job_slow slow[8];
	int n_slow;
	float speed_median;
	int stage;               /* the stage the workload reports */
	/* goodput (docs/controller.md, "Measured scaling"): the last
	 * report's, and the scaling measured from them */
	double goodput, efficiency, noise_scale, lr_scale;
	uint32_t gp_batch;
	int gp_count;            /* instances of the last report ... */
	uint32_t gp_same;        /* ... and how many in a row had it */
	struct jobspec_measured meas;
	bool measured_on;
	struct jobspec_explore explore;  /* of the scaling (job_explore) */
	uint64_t scaling_ev_us;  /* last "scaling" event (monotonic) */
	/* what the policy gets with each decision (ctrl_progress.scaling):
	 * the measured profile once measured_on, the exploration's limit */
	struct jobspec_profile profile;
	struct pol_scaling scaling;
	struct pol_scaling seen; /* scaling held to the pool's share: what
				  * the policy gets (job_ctrl_progress) */
	double frac;             /* of the work, 0..1 */
	double work_h, rate_h;
	int64_t rate_t;          /* market time of the last rate sample */
	double rate_w;           /* work at rate_t */
	int64_t joins, losses;
	/* the last test figures of the daemon's earlier lives */
	bool have_test_before;
	double acc_before, loss_before;
};

/* The books: the cost across the daemon's lives and the same fleet's
 * on-demand shadow bill (owner: jobs_books.c). */
struct job_books {
	int64_t cost_uusd;       /* final, once ended */
	/* the same instances for the same times at on-demand prices, under
	 * the job's billing model: what renting this fleet on demand would
	 * have cost */
	struct od_run { uint64_t id; struct billing_acct a; } *od_open;
	size_t n_od_open, cap_od_open;
	int64_t od_fleet_uusd;   /* of the instances that ended */
	double od_before_usd;    /* the same, of the daemon's earlier lives */
	/* the ledger of the daemon's earlier lives (a controller counts
	 * from its own start) */
	int64_t cost_before_uusd;
	int64_t od_cost_uusd;    /* the ended bills of on-demand instances
				  * (of the daemon's earlier lives too):
				  * /metrics' split of the cost */
	int64_t ref_od;          /* on-demand price of the reference type,
				  * micro-USD/h, once known (0: not yet) */
	int64_t evictions_before;
	int64_t final_evictions; /* once ended: this life's */
	int64_t notify_seq;      /* notifications of this job (this life;
				  * jobs_notify.c asks job_books_notified) */
};

/* The pool's view of the job and its share (owner: jobs_pool.c). */
struct job_share {
	bool member;             /* sized (pm): the pool counts it */
	bool admitted;           /* its reliable tier is in: it may start */
	struct pool_member pm;   /* its sizes, rates, share and holds */
	struct pool_use held;    /* what its fleet holds (the gate's) */
	struct ctrl_gate gate;
	double rho;              /* at its share, the last round's; NaN */
	int64_t came_us;         /* when it came (submitted), Unix us */
	char wait[200];          /* why it waits; "" when it does not */
	int64_t round;           /* the round that last changed its share */
	int resume_share;        /* the share an earlier life gave it (its
				  * last "lease" event); -1: none */
	int64_t pass_t;          /* market time of the last tick's pm_pass
				  * (0: none yet in this run) */
	char gone_type[32];      /* the last instance the gate saw go (a
				  * refusal's: the quota it hit) */
	bool gone_spot;
	/* the jobs present (queued or running) over its ticks, in jobs x
	 * market hours, and those hours: its 1/N of the pool; and the work
	 * its rates (pm.rate) say the spot it held then does */
	double present_jh, ticked_h, ideal_wh;
	/* done: its realized rho (completion over its time alone on 1/N of
	 * the pool), those two times and N; NaN: none */
	double rho_done, completion_h, alone_h, n_present;
};

struct job {
	struct jobs *js;
	struct job *next;
	int64_t id;
	struct job_request req;  /* as submitted; never written after */
	char note[320];          /* what was changed to fit this host */
	char src[256];           /* its file, for messages ("job N" after
				  * a restart) */
	const struct world_ops *wops;      /* its world's table */
	const struct workload_ops *wlops;  /* what runs on its nodes */
	void *wl;                /* the workload's own state (wlops) */
	struct job_inputs in;    /* the files it names (jobs_inputs.c) */
	struct job_market mk;
	struct job_run run;
	struct job_progress pg;
	struct job_books bk;
	struct job_share sh;
};

struct jobs {
	struct jobs_setup s;
	struct world_host host;  /* what the daemon has for the worlds */
	struct job *list;
	struct loading *loading; /* submissions being read (jobs_submit.c) */
	struct notify *notify;   /* the job events' notifications */
	struct jobs_pool *pool;  /* the pool they share (jobs_pool.c) */
};

/* The functions of each file, lowest first: a file calls those of the
 * sections above its own and its own, never those below.  The ways up go
 * through tables: the controller's events (which jobs.c dispatches to the
 * books, the notifications and the workload's stage), a world's hooks,
 * and the workload's ops, which jobs.c calls as it calls a world's.
 * scripts/check-style enforces it (jobs-layers). */

/* ---- jobs_events.c: the job's event log ---- */

/* An event row of the job, in its own transaction (market time). */
void job_event(struct job *j, const char *kind, const char *detail);
void job_eventf(struct job *j, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- jobs_inputs.c: the files a job names ---- */

/* None pinned yet (job_new). */
void job_inputs_init(struct job *j);
/* On the submission's thread, under the submitter's guard g: every file
 * the job names opened (one that cannot be is left to its reader, which
 * says why under the same guard) and pinned in g, so that the checks
 * read those very files. */
void job_inputs_pin(struct job *j, struct px_guard *g);
/* The pinned files copied into a folder of their own (the job has no id
 * yet), within the guard's time; errors name the submitter's file. */
enum px_err job_inputs_copy(struct job *j, struct px_error *err);
/* A program job's owner (the guard's user: its program runs as it) and
 * its code folder, packed by tar(1) as that user, into the copies'
 * program/ (owner, code.tar.gz); within the guard's time. */
enum px_err job_inputs_program(struct job *j, const struct px_guard *g,
			       struct px_error *err);
/* The stored job's copies moved to DIR/ID/in (the loop's thread). */
enum px_err job_inputs_keep(struct job *j, struct px_error *err);
/* A restarted daemon's job reads its copies (in.kept), each of which
 * must be there. */
enum px_err job_inputs_use_kept(struct job *j, bool check,
				struct px_error *err);
/* Pins closed, copies not kept removed. */
void job_inputs_drop(struct job *j);
/* The file on this host input k names (buf): a path, a file:// URL's
 * path, an IDX set's labels file by its images file's name; false for
 * none (another URL, no such field). */
bool job_input_path(const struct job *j, enum job_input k, char *buf,
		    size_t len);
/* Where the copy of input k is (buf), or NULL when the job names none. */
const char *job_input(const struct job *j, enum job_input k, char *buf,
		      size_t len);
/* The file a reader reads for input k: the copy once kept, else what
 * the spec names (spec: that string). */
const char *job_file(const struct job *j, enum job_input k,
		     const char *spec, char *buf, size_t len);
/* An ended job's copies removed; it reads them no more. */
void job_inputs_remove(struct job *j);
/* Copies of submissions a killed daemon never stored, removed. */
void job_inputs_clean_stale(const char *dir);

/* ---- jobs_market.c: its trace, prices and advisor snapshot ---- */

void job_guard(struct px_guard *g);
/* The market part made ready (job_new): adv_cfg, the daemon's
 * spot_advisor now. */
void job_market_init(struct job *j, const char *adv_cfg);
enum px_err job_load_market(struct job *j, struct px_error *err);
/* The market the job's world and controller use: lent to them for the
 * run (ec2's world appends the prices it polls). */
struct market_set *job_market_lend(struct job *j);
/* What an ended job no longer needs, all of it: the set, the on-demand
 * table, the snapshot and the plan (job_trim, job_free). */
void job_market_trim(struct job *j);

/* ---- jobs_books.c: the store sink's books and the cost ---- */

void job_cloud_id(void *ctx, uint64_t ctrl_id, char *buf, size_t len);
/* A controller event into the store (the journal, one transaction) and
 * the on-demand shadow bill. */
enum px_err job_books_record(struct job *j, const struct ctrl_event *ev,
			     struct px_error *err);
/* A restarted daemon's books of the earlier lives: the ledger's cost,
 * the on-demand share, and from the stored events the shadow bill (a
 * progress event's fleet_ondemand_usd) and the evictions. */
void job_books_resume(struct job *j, int64_t cost_before,
		      int64_t od_cost);
void job_books_resume_event(struct job *j, const char *kind, json_t *o);
/* The run's end: the ledger's sum (cost: the controller's, when the
 * store cannot say) and this life's evictions. */
void job_books_close(struct job *j, int64_t cost);
/* The bills final (job_bills): the ledger's sum again; the change. */
int64_t job_books_final(struct job *j);
/* The books freed (job_free). */
void job_books_free(struct job *j);
/* The next notification's number. */
int64_t job_books_notified(struct job *j);
double job_od_fleet_usd(struct job *j, int64_t t);
int64_t jobs_req_ref_od_uusd(struct jobs *js, const struct job_request *q);
int64_t job_ref_od_uusd(struct job *j);
int64_t job_cost_uusd(struct job *j);
int64_t job_evictions(struct job *j);

/* ---- jobs_pool.c: the pool all jobs share ---- */

/* The daemon's pool (jobs_new) and its end (jobs_free). */
enum px_err jobs_pool_new(struct jobs *js, struct px_error *err);
void jobs_pool_free(struct jobs *js);
/* A restarted daemon's pool: the limits it had learnt (its last "quota"
 * event about no job), unless the configured limits they were learnt
 * under changed; its rounds go on from the last one's count. */
void jobs_pool_recover(struct jobs *js);
/* The share part made ready (job_new): no share, no rho, came now. */
void job_pool_init(struct job *j);
/* A restarted daemon's job: it came at came_us (its submission); an
 * event of its earlier lives ("lease": its share). */
void job_pool_came(struct job *j, int64_t came_us);
void job_pool_resume_event(struct job *j, const char *kind, json_t *o);
/* A submitted job whose reliable tier could never fit the pool, even
 * alone in it: PX_EINVAL naming the field (name: its file). */
enum px_err job_pool_check(struct job *j, const char *name,
			   struct px_error *err);
/* Whether queued job j may start: its reliable tier fits the pool
 * beside the running jobs' (gang; a round decides, in submission
 * order); else sh.wait says why. */
bool job_pool_may_start(struct job *j);
/* The gate of j's controller (controller.h): every instance it asks
 * for, under the pool's limits and its share. */
const struct ctrl_gate *job_pool_gate(struct job *j);
/* The scaling j's policy gets (sc: the job's own), held to its share. */
void job_pool_scaling(const struct job *j, struct pol_scaling *sc);
/* A refusal of j's controller (a REJECT event): a quota error of EC2
 * lowers the learned limit. */
void job_pool_refused(struct job *j, const struct ctrl_event *ev);
/* j's tick: prices that took the pool past pool_usd_per_hour; whether a
 * queued job was admitted (the queue's pump is due). */
bool job_pool_tick(struct job *j);
/* j ended: it leaves the pool, whose shares are decided again. */
void job_pool_leave(struct job *j);
/* What j's share part holds, freed (job_free). */
void job_pool_free(struct job *j);
/* j's part of `status` ("pool"; NULL when out of memory, or for a job
 * that ended with no realized rho). */
json_t *job_pool_json(const struct job *j);

/* ---- jobs_progress.c: what the workload reports, the scaling ---- */

/* The progress part made ready (job_new): nothing evaluated (NaN), the
 * spec's scaling. */
void job_progress_init(struct job *j);
/* A life's start: no test figure yet in it, and the total its earlier
 * lives foresaw (resumed) until the workload reports. */
void job_progress_start(struct job *j);
/* The workload's foreseen total (prepare). */
void job_progress_foresee(struct job *j, int64_t total_clocks);
/* One report of the workload (workload.h). */
void job_progress_take(struct job *j, const struct job_report *r);
/* The workload ended the work: all of it is done. */
void job_progress_done(struct job *j);
/* A member that joined after the job began; one lost without notice. */
void job_progress_join(struct job *j);
void job_progress_loss(struct job *j);
/* The workload's driver is restarting: the count of restarts, this one
 * included (a driver past its restarts fails the job, and its last
 * judgement of its workers stays); a new driver's judgement starts
 * empty (driver_anew). */
int job_progress_restarted(struct job *j);
void job_progress_driver_anew(struct job *j);
/* A restarted daemon's job: the figures of its earlier lives' last
 * progress event, and a "scaling" event's measurements (bad entries
 * skipped); resumed: its driver's first life here counts a restart. */
void job_progress_resume_event(struct job *j, json_t *progress);
void job_scaling_take(struct job *j, json_t *o);
void job_progress_resumed(struct job *j);
/* The job's total clocks, the one figure `status`, `model` and the
 * progress events give: the workload's last foreseen (a resumed job's,
 * its earlier lives' until it reports), never below the clock reached. */
int64_t job_clocks_total(const struct job *j);
/* The measured scaling: the policy's (pg.scaling) once it has enough
 * points (docs/controller.md, "Measured scaling"). */
void job_measured_apply(struct job *j);
/* Pollux's rule (docs/controller.md, "Exploring the scaling"): the spot
 * instances the job may hold now into pg.scaling, from the largest count
 * measured; n is the instances of the report just taken (0: none, the
 * job's start). */
void job_explore(struct job *j, int n);
/* As JSON {"measured", "instances", "goodput", "reports", "fit",
 * "explore_limit", ...} (status, the "scaling" event; NULL on OOM); a
 * "scaling" event (at most every 30 s unless force). */
json_t *job_scaling_json(const struct job *j);
void job_scaling_event(struct job *j, bool force);
/* What the controller sees: work done in reference hours, the rate over
 * the last market hour, the scaling. */
void job_ctrl_progress(struct job *j, int64_t t, struct ctrl_progress *p);

/* ---- jobs_notify.c: notifications of the job's events ---- */

/* Notify the job's event (notify.h): job, event, state, time, seq, name,
 * world, cost_usd, market_time, reason (NULL: none) and extra's fields
 * (taken; may be NULL). */
void job_notify(struct job *j, const char *event, const char *reason,
		json_t *extra);
/* The same with an instance's figures (an eviction, its notice). */
void job_notify_instance(struct job *j, const char *event,
			 const struct ctrl_event *ev);

/* ---- jobs.c: the list, the queue, start, tick, end ---- */

/* A job of js named src (its file, or "job N") with nothing loaded yet;
 * NULL when out of memory. */
struct job *job_new(struct jobs *js, const char *src);
struct job *job_find(struct jobs *js, int64_t id);
/* Nodes the job's world holds now (0 without a world). */
size_t job_nodes(const struct job *j);
/* Whether the store holds job id (its state in *ret); false when it does
 * not, or on an error (in err). */
bool jobs_stored_state(struct jobs *js, int64_t id,
		       enum store_job_state *ret, struct px_error *err);
/* The state a job is built in (submit: queued; a restart: the store's),
 * not stored. */
void job_take_state(struct job *j, enum store_job_state s);
bool job_set_state(struct job *j, enum store_job_state s);
/* A restarted daemon's running job: queued again, from market time t. */
void job_resume_at(struct job *j, int64_t t);
/* A restarted daemon's job: its first start was at market time s (its
 * first "start" event), which finish_by_hours counts from. */
void job_first_start_at(struct job *j, int64_t s);
/* The job's finish_by_hours as submitted (0: none), and the market time
 * it means (its first start, or the one it would have now, plus those
 * hours). */
double job_finish_by_hours(const struct job *j);
int64_t job_finish_by_s(const struct job *j);
/* "PX_JOB_KEY=<hex of the job's key>" into buf (JOB_KEYENV_LEN bytes):
 * the environment entry of a workload's processes on this host (the
 * trainer's roles, a program's node agents: DIST_KEY_ENV). */
#define JOB_KEYENV_LEN (sizeof DIST_KEY_ENV "=" + 2 * 32)
void job_key_env(const struct job *j, char *buf);
/* Why the job fails (run.why); the fail_soon one fails it at the next
 * tick. */
void job_set_why(struct job *j, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void job_fail_soon(struct job *j, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* End the job in state s (why: its reason, logged and stored); every
 * instance is released, the run freed. */
void job_end(struct job *j, enum store_job_state s, const char *why);
void job_free(struct job *j);
/* Drop what an ended job no longer needs (its market); keep its figures. */
void job_trim(struct job *j);
/* Start queued jobs on the loop's next turn. */
void pump_soon(struct jobs *js);

/* ---- workload_trainer.c: the built-in trainer (workload.h) ---- */

struct wire_progress;
/* A PROGRESS frame's goodput into r: its count of instances (of
 * workers_per_instance workers each) and the total batch of the workers
 * that train a partition (not stage 3's idle reliable ones). */
void trainer_goodput_report(const struct job *j, const struct wire_progress *p,
			    int workers, struct job_report *r);

/* ---- jobs_submit.c: submit and cancel; this host's capacity ---- */

/* The world's room hook: one more node only under this host's capacity. */
bool job_room(void *ctx, char *why, size_t len);
enum px_err job_fit(struct job *j, const char *name, struct px_error *err);
/* The job's world and workload tables, from its request. */
enum px_err job_world(struct job *j, const char *name, struct px_error *err);
json_t *jobs_reply_err(struct px_error *err, enum px_err e, const char *fmt,
		       ...) __attribute__((format(printf, 3, 4)));
/* The job a request names ("job": id): false (err set) for a bad id;
 * else *ret_id, and *ret the job this daemon holds (NULL: none). */
bool jobs_req_job(struct jobs *js, json_t *req, int64_t *ret_id,
		  struct job **ret, struct px_error *err);
/* The same, for a job that may be one of the store's only (ended in an
 * earlier life): false (err set: notfound "no job N") when it is
 * neither held nor stored. */
bool jobs_req_known(struct jobs *js, json_t *req, int64_t *ret_id,
		    struct job **ret, struct px_error *err);
/* Let submissions still being read end, answering none. */
void jobs_submit_stop(struct jobs *js);

/* ---- jobs_view.c (and jobs_recover.c, jobs_model.c: jobs.h's) ---- */

/* job_clocks_total for job id, held or not (a job ended in an earlier
 * life: its last progress event's); 0 when nothing says. */
int64_t jobs_clocks_total(struct jobs *js, int64_t id);

#endif
