/* jobs_int.h -- what the files of proteusd's jobs share (jobs.h;
 * docs/jobs.md): one job and the list of them, and the functions one
 * concern offers the others.  Private to agent/jobs*.c.
 *
 *   jobs.c          the list, the queue, start, tick and finish, the stop
 *                   rules, suspend and free
 *   jobs_submit.c   submit (checked, its market read on a thread, stored
 *                   queued) and cancel; what this host can run
 *   jobs_market.c   a job's trace, prices and advisor snapshot, read
 *                   under a guard (the submitter's rights, bounds)
 *   jobs_trainer.c  the trainer: the key, the coordinator process, each
 *                   instance's node command, the agent channel (commands,
 *                   PROGRESS frames) and the progress the controller sees
 *   jobs_books.c    the store sink, the on-demand shadow bill, cost
 *   jobs_view.c     the JSON of status, jobs and events
 *   jobs_recover.c  taking the store's jobs up after a restart
 *   jobs_model.c    `model`: the last checkpoint, a chunk at a time
 *   jobs_notify.c   the notifications of a job's events (notify.h)
 *   jobs_inputs.c   the files a job names: opened once under the
 *                   submitter's guard, copied into the job's folder
 *
 * A job reaches its world only through the world's ops (world.h,
 * world_ops_by_name): no file here includes a world's header, calls a
 * world's own functions or names a world; each per-world rule is a
 * field of the table (capacity, spec_check, no_explore, enrollments).
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
#include "../trainer/agent_chan.h"
#include "../trainer/dist.h"
#include "config.h"
#include "controller.h"
#include "jobreq.h"
#include "jobs.h"
#include "journal.h"
#include "plan.h"
#include "world.h"

/* Error texts are cut to fit their buffers on purpose; paths are checked
 * for length where it matters (job_start). */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#define JOB_PATH_MAX 1024
#define NODE_STRIDE 100          /* node ids of instance i: i*100 + k */
#define MAX_SEEN 1024            /* trainer nodes remembered per job */
/* Commands to the coordinator waiting their turn: a fleet's first
 * decision names every node it starts at once (an EXPECT each: 1002 for
 * 500 instances of a PS and a worker), and its rejections take them back
 * (a LEAVE each), for as many nodes as a coordinator tracks
 * (DIST_MAX_NODES) twice over. */
#define CMDQ_MAX 4096
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
};

struct seen_node {
	uint32_t node;
	uint8_t state;           /* enum wire_member_state */
	bool warned;             /* its instance got an eviction notice:
				  * gone is a leave, not a loss */
	bool anew;               /* the coordinator restarted: its next
				  * live report readies its instance again */
};

struct job {
	struct jobs *js;
	struct job *next;
	int64_t id;
	enum store_job_state state;
	struct job_request req;
	char dir[JOB_PATH_MAX];
	char ckpt[JOB_PATH_MAX + 16];
	char log[JOB_PATH_MAX + 16];     /* the trainer processes' output */
	/* the market */
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
	/* the run, on its world (world_ops_by_name(req.world.name)) */
	const struct world_ops *wops;
	struct ctrl *c;
	void *w;
	struct journal *jn;
	int64_t timer;           /* loop timer id, -1 when none */
	int64_t t;               /* market time of the last event handled */
	bool started;
	enum ctrl_stop stop;
	char why[640];           /* why it failed */
	char note[320];          /* what was changed to fit this host */
	char src[256];           /* its file, for messages ("job N" after
				  * a restart) */
	struct job_inputs in;    /* the files it names, at submit */
	bool in_kept;            /* read from its copies (DIR/ID/in) */
	/* nodes that could not start, and progress (the stall watchdog) */
	int64_t start_failures;  /* in a row, since a node last started */
	char fail_now[512];      /* set: fail the job at the next tick */
	int64_t stall_clock;     /* the trainer's clock when it last moved */
	uint64_t stall_mono_us;  /* and when (monotonic) */
	int64_t stall_t;         /* and market time */
	/* the trainer */
	char keyenv[sizeof(DIST_KEY_ENV) + 65];
	/* PX_TRAIN_DATA=URL, PX_TEST_DATA=URL for this host's roles: a URL
	 * with a query, kept out of their argv ("": none) */
	char data_env[2][JOBREQ_PATH_MAX + 16];
	uint8_t key[32];
	uint64_t token;          /* the trainer's job id */
	char coord_addr[JOB_PATH_MAX + 8]; /* where the coordinator listens
					    * (the world says) */
	pid_t coord;             /* coordinator pid (its own group), 0 */
	int restarts;
	struct agent_chan *ach;  /* PROGRESS in, commands out */
	char agent_ep[JOB_PATH_MAX + 32];
	bool registered;
	/* commands to the coordinator (stage, expect, leave), one at a time
	 * on the REQ socket, in order; the loop never waits for a reply */
	struct wire_command cmdq[CMDQ_MAX];
	size_t cmd_head, cmd_n;
	bool cmd_out;            /* cmdq[cmd_head] sent, no reply yet */
	int cmd_fd;              /* watched for its reply (loop), -1 */
	uint64_t cmd_sent_us;
	int64_t total_clocks;    /* the trainer's, as now foreseen */
	int64_t total_before;    /* of the earlier lives' last progress */
	/* progress */
	int64_t clock;
	double acc, loss, sps;   /* NaN until evaluated */
	int workers, ps;
	/* workers the trainer counts slow (PROGRESS), for `status`, and
	 * the median speed they are judged against (0: fewer than two
	 * workers report a speed) */
	struct { uint32_t node; float speed; } slow[8];
	int n_slow;
	float speed_median;
	int trainer_stage;       /* the stage the trainer reports */
	/* goodput (PROGRESS; docs/controller.md, "Measured scaling"): the
	 * last report's, and the scaling measured from them, which
	 * replaces the spec's in req.spec.profile once it has enough
	 * points (measured_on) */
	double goodput, efficiency, noise_scale, lr_scale;
	uint32_t gp_batch;
	int gp_count;            /* instances of the last report ... */
	uint32_t gp_same;        /* ... and how many in a row had it */
	struct jobspec_measured meas;
	bool measured_on;
	struct jobspec_explore explore;  /* of the scaling (job_explore) */
	uint64_t scaling_ev_us;  /* last "scaling" event (monotonic) */
	double frac;             /* of the work, 0..1 */
	double work_h, rate_h;
	int64_t rate_t;          /* market time of the last rate sample */
	double rate_w;           /* work at rate_t */
	int64_t joins, losses;
	struct seen_node *seen;
	size_t n_seen;
	bool trainer_done;       /* the coordinator ended the job */
	bool stall_kill;         /* the coordinator was killed: stalled */
	uint64_t closing_us;     /* ended, its bills open since (mono) */
	bool trim_due;           /* job_trim waits for the bills */
	int64_t stall_restart_clock; /* the clock of the last stall
				      * restart; -1: none */
	uint64_t last_ev_us;     /* last "progress" event (monotonic) */
	int64_t cost_uusd;       /* final, once ended */
	/* the same instances for the same times at on-demand prices, under
	 * the job's billing model: what renting this fleet on demand would
	 * have cost */
	struct od_run { uint64_t id; struct billing_acct a; } *od_open;
	size_t n_od_open, cap_od_open;
	int64_t od_fleet_uusd;   /* of the instances that ended */
	double od_before_usd;    /* the same, of the daemon's earlier lives */
	/* the books of the daemon's earlier lives (recover_one): what the
	 * ledger held, and the last test figures; a controller counts from
	 * its own start */
	int64_t cost_before_uusd;
	int64_t od_cost_uusd;    /* the ended bills of on-demand instances
				  * (of the daemon's earlier lives too):
				  * /metrics' split of the cost */
	int64_t ref_od;          /* on-demand price of the reference type,
				  * micro-USD/h, once known (0: not yet) */
	int64_t evictions_before;
	bool have_test_before;
	double acc_before, loss_before;
	int64_t notify_seq;      /* notifications of this job (this life) */
	int final_stage;         /* once ended: the last stage */
	int64_t final_evictions; /* and evictions */
};

struct jobs {
	struct jobs_setup s;
	struct world_host host;  /* what the daemon has for the worlds */
	struct job *list;
	struct loading *loading; /* submissions being read (jobs_submit.c) */
	struct notify *notify;   /* the job events' notifications */
};

/* ---- jobs.c ---- */

/* A job of js named src (its file, or "job N") with nothing loaded yet;
 * NULL when out of memory. */
struct job *job_new(struct jobs *js, const char *src);
struct job *job_find(struct jobs *js, int64_t id);
/* The job's total clocks, the one figure `status`, `model` and the
 * progress events give: the trainer's last foreseen (a resumed job's,
 * its earlier lives' until it reports), never below the clock reached. */
int64_t job_clocks_total(const struct job *j);
/* The same for job id, held or not (a job ended in an earlier life:
 * its last progress event's); 0 when nothing says. */
int64_t jobs_clocks_total(struct jobs *js, int64_t id);
/* Whether the store holds job id (its state in *ret); false when it does
 * not, or on an error (in err). */
bool jobs_stored_state(struct jobs *js, int64_t id,
		       enum store_job_state *ret, struct px_error *err);
/* Nodes the job's world holds now (0 without a world). */
size_t job_nodes(const struct job *j);
/* An event row of the job, in its own transaction (market time). */
void job_event(struct job *j, const char *kind, const char *detail);
void job_eventf(struct job *j, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool job_set_state(struct job *j, enum store_job_state s);
/* End the job in state s (why: its reason, logged and stored); every
 * instance is released, the run freed. */
void job_end(struct job *j, enum store_job_state s, const char *why);
void job_free(struct job *j);
/* Drop what an ended job no longer needs (its market); keep its figures. */
void job_trim(struct job *j);
/* Start queued jobs on the loop's next turn. */
void pump_soon(struct jobs *js);

/* ---- jobs_submit.c ---- */

/* The world's room hook: one more node only under this host's capacity. */
bool job_room(void *ctx, char *why, size_t len);
enum px_err job_fit(struct job *j, const char *name, struct px_error *err);
enum px_err job_world(struct job *j, const char *name, struct px_error *err);
json_t *jobs_reply_err(struct px_error *err, enum px_err e, const char *fmt,
		       ...) __attribute__((format(printf, 3, 4)));
/* The job a request names ("job": id): false (err set) for a bad id;
 * else *ret_id, and *ret the job this daemon holds (NULL: none). */
bool jobs_req_job(struct jobs *js, json_t *req, int64_t *ret_id,
		  struct job **ret, struct px_error *err);
/* Let submissions still being read end, answering none. */
void jobs_submit_stop(struct jobs *js);

/* ---- jobs_market.c ---- */

void job_guard(struct px_guard *g);
enum px_err job_load_market(struct job *j, struct px_error *err);

/* ---- jobs_inputs.c ---- */

/* On the submission's thread, under the submitter's guard g: every file
 * the job names opened (one that cannot be is left to its reader, which
 * says why under the same guard) and pinned in g, so that the checks
 * read those very files. */
void job_inputs_pin(struct job *j, struct px_guard *g);
/* The pinned files copied into a folder of their own (the job has no id
 * yet), within the guard's time; errors name the submitter's file. */
enum px_err job_inputs_copy(struct job *j, struct px_error *err);
/* The stored job's copies moved to DIR/ID/in (the loop's thread). */
enum px_err job_inputs_keep(struct job *j, struct px_error *err);
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
/* A restarted daemon's job: each copy it needs is there. */
enum px_err job_inputs_check_kept(const struct job *j, struct px_error *err);
/* An ended job's copies removed. */
void job_inputs_remove(const struct job *j);
/* Copies of submissions a killed daemon never stored, removed. */
void job_inputs_clean_stale(const char *dir);

/* ---- jobs_trainer.c ---- */

/* A fresh key and trainer job id (each start), and the trainer's figures
 * of a run. */
enum px_err job_trainer_prepare(struct job *j, struct px_error *err);
/* The agent channel, then the coordinator (resume: from the job's
 * checkpoint when there is one). */
enum px_err job_trainer_start(struct job *j, bool resume,
			      struct px_error *err);
/* The coordinator killed and reaped, the agent channel closed. */
void job_trainer_stop(struct job *j);
/* The world hooks of the trainer's side: each instance's node command,
 * notices to the coordinator, readiness on report, the progress mark,
 * nodes that fail at start, the nodes' log. */
void job_trainer_hooks(struct job *j, struct world_hooks *h);
/* Registration, queued commands, PROGRESS frames: never blocks. */
void job_trainer_poll(struct job *j);
/* The measured scaling: into req.spec.profile once it has enough points
 * (docs/controller.md, "Measured scaling"); as JSON {"measured",
 * "instances", "goodput", "reports", "fit", "explore_limit"} (status,
 * the "scaling" event, NULL
 * on OOM); a "scaling" event (at most every 30 s unless force); and the
 * restart's taking up of one (bad entries skipped). */
void job_measured_apply(struct job *j);
/* A PROGRESS's goodput into the job: the last report's figures, and
 * the measured scaling at its count of instances once the count has
 * held GOODPUT_STEADY reports, its total batch that of the workers that
 * train a partition (not stage 3's idle reliable ones). */
void job_take_goodput(struct job *j, const struct wire_progress *p);
/* Pollux's rule (docs/controller.md, "Exploring the scaling"): the
 * instances the job may hold now into req.spec's spot_limit, from the
 * largest count measured; n is the instances of the report just taken
 * (0: none, the job's start). */
void job_explore(struct job *j, int n);
json_t *job_scaling_json(const struct job *j);
void job_scaling_event(struct job *j, bool force);
void job_scaling_take(struct job *j, json_t *o);
/* The coordinator's end: done, or a restart from the checkpoint (false,
 * j->why set: the job fails). */
bool job_check_coordinator(struct job *j);
bool job_restart_stalled(struct job *j);
void job_cmd_stage(struct job *j, int stage);
void job_ctrl_progress(struct job *j, int64_t t, struct ctrl_progress *p);

/* ---- jobs_notify.c ---- */

/* Notify the job's event (notify.h): job, event, state, time, seq, name,
 * world, cost_usd, market_time, reason (NULL: none) and extra's fields
 * (taken; may be NULL). */
void job_notify(struct job *j, const char *event, const char *reason,
		json_t *extra);
/* The same with an instance's figures (an eviction, its notice). */
void job_notify_instance(struct job *j, const char *event,
			 const struct ctrl_event *ev);

/* ---- jobs_books.c ---- */

void job_cloud_id(void *ctx, uint64_t ctrl_id, char *buf, size_t len);
enum px_err job_sink(const struct ctrl_event *ev, void *ctx);
double job_od_fleet_usd(struct job *j, int64_t t);
int64_t jobs_req_ref_od_uusd(struct jobs *js, const struct job_request *q);
int64_t job_ref_od_uusd(struct job *j);
int64_t job_cost_uusd(struct job *j);
int64_t job_evictions(struct job *j);

#endif
