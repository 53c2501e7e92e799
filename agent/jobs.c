/* jobs.c -- proteusd's jobs (jobs.h; docs/jobs.md).
 *
 * One job, from submit to its end:
 *
 *   submit      jobreq_parse, the trace and prices loaded and the plan
 *               checked (markets, window), a queued row; reply {"job": id}
 *   start       (a loop turn later) job directory, key, coordinator
 *               process, the local world and the controller, first
 *               decision; state running
 *   tick        (a loop timer) the trainer's PROGRESS frames (clock,
 *               accuracy, members: a node that registered is ready), the
 *               world's due events through the controller, the stop rules
 *   finish      ctrl_finish releases every instance and closes each bill;
 *               state done / failed / cancelled
 *
 * The controller's events go through the journal (journal.c) into the
 * store, one transaction per event, so that what the store says is what
 * happened even when the daemon is killed between two events.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../bidbrain/billing.h"
#include "../cloudapi/advisor.h"
#include "../cloudapi/market_load.h"
#include "../cloudapi/ondemand.h"
#include "../common/jsonout.h"
#include "../common/log.h"
#include "../trainer/agent_chan.h"
#include "../trainer/dist.h"
#include "../trainer/kern_cuda.h"
#include "controller.h"
#include "jobreq.h"
#include "jobs.h"
#include "journal.h"
#include "plan.h"
#include "server.h"
#include "world/world.h"

/* Error texts are cut to fit their buffers on purpose; paths are checked
 * for length where it matters (job_start). */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#define JOB_PATH_MAX 1024
#define TICK_MS 50               /* the longest a job's timer sleeps */
#define PROGRESS_EVENT_MS 2000   /* a "progress" event at most this often */
#define NODE_STRIDE 100          /* node ids of instance i: i*100 + k */
#define MAX_SEEN 1024            /* trainer nodes remembered per job */
#define COORD_RESTARTS 3         /* coordinator restarts from checkpoint */
#define CMDQ_MAX 256             /* commands to the coordinator in flight */
#define CMD_GIVE_UP_MS 5000      /* a command unanswered this long is dropped */
#define PRODUCT "Linux/UNIX"
/* The files a submitter names (trace, prices, snapshot) are read with
 * the submitter's rights, regular files only, at most this big, within
 * this long; at most LOADS_MAX submissions are read at once. */
#define JOB_FILE_MAX_BYTES (UINT64_C(1) << 30)
#define JOB_LOAD_S 60
#define LOADS_MAX 4
/* Nodes that fail at start, this many in a row (no node started between
 * them), fail the job: its nodes cannot run here. */
#define START_FAILURES_MAX 3
/* A running job whose trainer's clock has not moved for this long, in
 * real time and in market time both, while it rents, has stalled: it is
 * failed (what a stall costs is rent for nothing). */
#define STALL_REAL_S 20
#define STALL_MARKET_S 1800

extern char **environ;

struct seen_node {
	uint32_t node;
	uint8_t state;           /* enum wire_member_state */
	bool warned;             /* its instance got an eviction notice:
				  * gone is a leave, not a loss */
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
	double speedup;
	/* the run, on its world (world_ops_of(req.world.kind)) */
	const struct world_ops *wops;
	struct ctrl *c;
	void *w;
	struct journal *jn;
	int64_t timer;           /* loop timer id, -1 when none */
	int64_t t;               /* market time of the last event handled */
	bool started;
	enum ctrl_stop stop;
	char why[256];           /* why it failed */
	char note[320];          /* what was changed to fit this host */
	char src[256];           /* its file, for messages ("job N" after
				  * a restart) */
	/* nodes that could not start, and progress (the stall watchdog) */
	int64_t start_failures;  /* in a row, since a node last started */
	char fail_now[512];      /* set: fail the job at the next tick */
	int64_t stall_clock;     /* the trainer's clock when it last moved */
	uint64_t stall_mono_us;  /* and when (monotonic) */
	int64_t stall_t;         /* and market time */
	/* the trainer */
	char keyenv[sizeof(DIST_KEY_ENV) + 65];
	uint8_t key[32];
	uint64_t token;          /* the trainer's job id */
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
	uint64_t cmd_sent_us;
	int64_t total_clocks;
	/* progress */
	int64_t clock;
	double acc, loss, sps;   /* NaN until evaluated */
	int workers, ps;
	int trainer_stage;       /* the stage the trainer reports */
	double frac;             /* of the work, 0..1 */
	double work_h, rate_h;
	int64_t rate_t;          /* market time of the last rate sample */
	double rate_w;           /* work at rate_t */
	int64_t joins, losses;
	struct seen_node *seen;
	size_t n_seen;
	bool trainer_done;       /* the coordinator ended the job */
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
	int64_t ref_od;          /* on-demand price of the reference type,
				  * micro-USD/h, once known (0: not yet) */
	int64_t evictions_before;
	bool have_test_before;
	double acc_before, loss_before;
	int final_stage;         /* once ended: the last stage */
	int64_t final_evictions; /* and evictions */
};

/* A submitted job whose trace and prices are read on a thread of its
 * own (a 2-month trace takes most of a second): the loop goes on, and the
 * submitter gets its answer once the job is checked and stored. */
struct loading {
	struct loading *next;
	struct jobs *js;
	struct job *j;
	char *text;              /* the spec as submitted */
	char name[256];          /* its file, for messages */
	struct server_ticket ticket;
	struct px_guard guard;   /* the submitter's rights, the bounds */
	pthread_t th;
	int efd;                 /* the thread says it is done here */
	enum px_err e;
	struct px_error err;
};

struct jobs {
	struct jobs_setup s;
	struct world_host host;  /* what the daemon has for the worlds */
	struct job *list;
	struct loading *loading;
};

/* ---- small helpers ---- */

static int64_t now_us(void)
{
	return px_now_wall_us();
}

static struct job *job_find(struct jobs *js, int64_t id)
{
	for (struct job *j = js->list; j; j = j->next)
		if (j->id == id)
			return j;
	return NULL;
}

/* Nodes the job's world holds now (0 without a world). */
static size_t job_nodes(const struct job *j)
{
	return j->w ? j->wops->nodes(j->w) : 0;
}

size_t jobs_running(const struct jobs *js)
{
	size_t n = 0;

	for (const struct job *j = js->list; j; j = j->next)
		n += j->state == STORE_JOB_RUNNING;
	return n;
}

/* ---- what this host can run ---- */

/* The local world's capacity: the instances (node processes) this host
 * runs at once, all jobs together: the local_max_instances setting, else
 * 8 per online CPU and at most one per 256 MiB of memory, at least 2. */
static int64_t local_capacity(const struct proteusd_config *cfg)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	int64_t n, by_mem;

	if (cfg->local_max_instances > 0)
		return cfg->local_max_instances;
	n = 8 * (int64_t)(cpus > 0 ? cpus : 1);
	if (pages > 0 && psize > 0) {
		by_mem = (int64_t)((double)pages * (double)psize /
				   (256.0 * 1024 * 1024));
		if (by_mem < n)
			n = by_mem;
	}
	return n < 2 ? 2 : n;
}

/* Nodes of every job that use this host now (local: processes). */
static int64_t local_in_use(const struct jobs *js)
{
	int64_t n = 0;

	for (const struct job *j = js->list; j; j = j->next)
		if (j->w)
			n += (int64_t)j->wops->host_load(j->w);
	return n;
}

/* The world's room hook: one more node only under the capacity. */
static bool local_room(void *ctx, char *why, size_t len)
{
	struct job *j = ctx;
	int64_t cap = local_capacity(j->js->s.cfg), used = local_in_use(j->js);

	if (j->fail_now[0]) {    /* ending: nothing more is started */
		snprintf(why, len, "the job is failing: %s", j->fail_now);
		return false;
	}
	if (used < cap)
		return true;
	snprintf(why, len, "the local world is full: %" PRId64 " node "
		 "processes run on this host, at most %" PRId64
		 " (local_max_instances)", used, cap);
	return false;
}

/* A job against what this host can run: refused when its reliable tier
 * (and one instance more) cannot fit, its spot fleet and baseline fleet
 * capped to the rest (said in note).  name: its file, for messages. */
static enum px_err job_fit(struct job *j, const char *name,
			   struct px_error *err)
{
	struct jobspec *sp = &j->req.spec;
	int64_t cap = local_capacity(j->js->s.cfg), room;

	if (sp->reliable.count + 1 > cap)
		return px_errorf(err, PX_EINVAL, "%s: reliable.count: %d "
				 "instances cannot run here: this host's local "
				 "world runs at most %" PRId64 " at once "
				 "(local_max_instances), and a job needs room "
				 "for one more", name, sp->reliable.count,
				 cap);
	room = cap - sp->reliable.count;
	j->note[0] = 0;
	if (sp->spot.max_instances > room || sp->instances > room) {
		snprintf(j->note, sizeof j->note, "spot.max_instances %d and "
			 "instances %d capped at %" PRId64 ": this host's "
			 "local world runs at most %" PRId64 " instances "
			 "(local_max_instances), %d of them reliable",
			 sp->spot.max_instances, sp->instances, room, cap,
			 sp->reliable.count);
		if (sp->spot.max_instances > room)
			sp->spot.max_instances = (int)room;
		if (sp->instances > room)
			sp->instances = (int)room;
	}
	return PX_OK;
}

/* The job's world: one this daemon runs jobs on (its ops have the
 * daemon's half; sim's has none: simulate drives it).  name: its file,
 * for messages. */
static enum px_err job_world(struct job *j, const char *name,
			     struct px_error *err)
{
	const struct world_ops *o = world_ops_of(j->req.world.kind);
	char runs[64] = "";
	size_t n = 0;
	int k;

	if (o && o->create) {
		j->wops = o;
		return PX_OK;
	}
	for (k = 0; k < WORLD_KIND_MAX; k++) {
		o = world_ops_of((enum world_kind)k);
		if (o && o->create && n < sizeof runs)
			n += (size_t)snprintf(runs + n, sizeof runs - n,
					      "%s%s", n ? ", " : "", o->name);
	}
	return px_errorf(err, PX_EUNSUPP, "%s: world.name: '%s' is not "
			 "supported by this daemon yet (%s %s)", name,
			 world_kind_name(j->req.world.kind), runs,
			 strchr(runs, ',') ? "are" : "is");
}

/* An event row of the job, in its own transaction (market time). */
static void job_event(struct job *j, const char *kind, const char *detail)
{
	struct store *st = j->js->s.st;
	struct px_error err = {0};
	int64_t at = (j->t ? j->t : j->start_s) * 1000000;

	if (store_event_add(st, j->id, 0, at, kind, detail, &err) != PX_OK)
		log_warn("job %" PRId64 ": event '%s' not stored: %s", j->id,
			 kind, err.msg);
}

static void job_eventf(struct job *j, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void job_eventf(struct job *j, const char *kind, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	job_event(j, kind, buf);
}

/* The job's state, in the store and here.  When the store cannot take it
 * (a full disk), this daemon still treats the job as being in state s (an
 * ended job is not run again by it); the store keeps the state it had, and
 * a restarted daemon takes a job it says is running up again. */
static bool set_state(struct job *j, enum store_job_state s)
{
	struct px_error err = {0};

	j->state = s;
	if (store_job_set_state(j->js->s.st, j->id, s, now_us(), &err) !=
	    PX_OK) {
		log_err("job %" PRId64 ": state %s not stored: %s", j->id,
			store_job_state_name(s), err.msg);
		return false;
	}
	return true;
}

/* The guard a job's files are read under (px.h): the submitter's rights
 * when a client's request is being served (else the daemon's), regular
 * files of at most JOB_FILE_MAX_BYTES, within JOB_LOAD_S from now. */
static void job_guard(struct px_guard *g)
{
	if (!server_peer(g))
		*g = (struct px_guard){ .ngroups = -1 };
	g->max_bytes = JOB_FILE_MAX_BYTES;
	g->deadline_us = px_now_mono_us() + JOB_LOAD_S * UINT64_C(1000000);
}

/* ---- the market of a job ---- */

/* The files a job's spec names are read with the submitter's rights (the
 * thread's guard, set by whoever loads the job); the daemon's own (its
 * configured or shipped trace, prices and snapshot) with its own rights,
 * still bounded and stopped with it: own is sub without the user.  Sets
 * the thread's guard for a file the spec names (yes) or not; nothing
 * without a guard (sub NULL). */
static void rights_for(const struct px_guard *sub, const struct px_guard *own,
		       bool named_by_spec)
{
	if (sub)
		px_guard_set(named_by_spec ? sub : own);
}

static enum px_err job_load_market(struct job *j, struct px_error *err)
{
	const struct jobs_setup *s = &j->js->s;
	const char *trace = j->req.world.trace[0] ? j->req.world.trace :
			    s->trace;
	const char *od = j->req.world.ondemand[0] ? j->req.world.ondemand :
			 s->ondemand;
	const struct px_guard *sub = px_guard_get();
	struct px_guard own = { .ngroups = -1 };
	enum px_err e;

	if (sub) {
		own = *sub;
		own.as_user = false;
		own.parent = sub;       /* stopped when it is */
	}
	/* the GPU path needs a device here (the local world's nodes run on
	 * this host): refused now, not with every node failing at start.
	 * On this thread: the first check loads the CUDA library. */
	if (!strcmp(j->req.trainer.device, "cuda")) {
		struct px_error why = {0};

		if (kern_cuda_check(&why) != PX_OK)
			return px_errorf(err, PX_EUNSUPP, "job '%s': "
					 "trainer.device: 'cuda', but this "
					 "host cannot run it: %s",
					 j->req.spec.name, why.msg);
	}
	market_set_init(&j->ms);
	j->ld = (struct market_load){ .region = j->req.spec.region,
				      .product = PRODUCT };
	rights_for(sub, &own, j->req.world.trace[0]);
	e = market_load_files(&j->ms, &trace, 1, &j->ld, err);
	rights_for(sub, &own, j->req.world.ondemand[0]);
	if (e == PX_OK)
		e = ondemand_table_load(od, &j->od, err);
	rights_for(sub, &own, true);
	if (e != PX_OK)
		return e;
	j->start_s = j->req.world.start_s ? j->req.world.start_s :
		     j->ld.first_s;
	if (j->req.world.start_s && (j->start_s < j->ld.first_s ||
				     j->start_s >= j->ld.last_s)) {
		char at[32], first[32], last[32];

		return px_errorf(err, PX_EINVAL, "%s: world.start: %s is "
				 "outside the trace %s (it covers %s to %s)",
				 j->src, px_format_time(j->start_s, at,
							sizeof at), trace,
				 px_format_time(j->ld.first_s, first,
						sizeof first),
				 px_format_time(j->ld.last_s, last,
						sizeof last));
	}
	if (j->req.world.have_billing)
		j->billing = j->req.world.billing;
	else
		j->billing = j->start_s >= BILLING_PER_SECOND_FROM_S ?
			     BILLING_PER_SECOND : BILLING_LEGACY_HOURLY;
	j->speedup = j->req.world.speedup > 0 ? j->req.world.speedup :
		     (double)s->cfg->local_speedup;
	/* per-second hazards from a snapshot (as simulate), unless the job
	 * gives every rate itself: the job's, else the daemon's, else the
	 * shipped one of the start's month */
	if (j->billing == BILLING_PER_SECOND && j->req.spec.rate_default < 0) {
		const char *p = j->req.spec.spot_advisor[0] ?
				j->req.spec.spot_advisor : j->adv_cfg;

		rights_for(sub, &own, j->req.spec.spot_advisor[0]);
		if (p[0])
			snprintf(j->adv_path, sizeof j->adv_path, "%s", p);
		else
			e = advisor_shipped(j->start_s, j->adv_path,
					    sizeof j->adv_path, err);
		if (e == PX_OK)
			e = advisor_load(j->adv_path, j->req.spec.region,
					 &j->adv, err);
		rights_for(sub, &own, true);
		if (e != PX_OK)
			return e;
		j->have_adv = true;
	}
	{
		struct plan_setup su = {
			.ms = &j->ms, .od = &j->od, .job = &j->req.spec,
			.billing = j->billing, .start_s = j->start_s,
			.trace_first_s = j->ld.first_s,
			.trace_last_s = j->ld.last_s, .seed = (uint64_t)j->id,
			.advisor = j->have_adv ? &j->adv : NULL,
		};
		e = plan_new(&su, &j->plan, err);
	}
	return e;
}

/* ---- processes ---- */

static void argv_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

/* argv of a trainer role: the program, the role, the job's options, then
 * extra (NULL-terminated), then --data DIR where the daemon's data_dir is
 * set.  NULL on OOM. */
static char **role_argv(struct job *j, const char *role, const char *node,
			const char *coord, const char *listen,
			const char *const *extra)
{
	const struct job_trainer *t = &j->req.trainer;
	char epochs[16], batch[16], lr[32], token[24];
	const char *fixed[] = {
		j->js->s.trainer, role, "--model", t->model, "--epochs",
		epochs, "--batch", batch, "--lr", lr, "--schedule", "cosine", "--threads", "1",
		"--workers", "1", "--ps", "1", "--shards", "4",
		"--job", token, "--node", node,
		"--coord", coord, "--listen", listen, NULL,
	};
	const char *data = j->js->s.cfg->data_dir;
	size_t n = 0, k = 0;
	char **v;

	snprintf(epochs, sizeof epochs, "%d", t->epochs);
	snprintf(batch, sizeof batch, "%d", t->batch);
	snprintf(lr, sizeof lr, "%.9g", t->lr);
	snprintf(token, sizeof token, "%" PRIu64, j->token);
	while (fixed[n])
		n++;
	for (const char *const *e = extra; e && *e; e++)
		n++;
	v = calloc(n + 3, sizeof *v);      /* + --data DIR */
	if (!v)
		return NULL;
	for (const char *const *f = fixed; *f; f++)
		if (!(v[k++] = strdup(*f)))
			goto oom;
	for (const char *const *e = extra; e && *e; e++)
		if (!(v[k++] = strdup(*e)))
			goto oom;
	if (data[0] && (!(v[k++] = strdup("--data")) ||
			!(v[k++] = strdup(data))))
		goto oom;
	return v;
oom:
	argv_free(v);
	return NULL;
}

/* The environment of every trainer process: ours, less any stale key,
 * plus the job's key and the parent watch.  Pointers into environ and
 * the job; free the array only. */
static char **role_env(struct job *j)
{
	size_t n = 0, k = 0;
	char **v;

	while (environ[n])
		n++;
	v = calloc(n + 3, sizeof *v);
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], DIST_KEY_ENV "=",
			    sizeof(DIST_KEY_ENV)) &&
		    strncmp(environ[i], "PX_PARENT_WATCH=", 16))
			v[k++] = environ[i];
	v[k++] = j->keyenv;
	v[k++] = "PX_PARENT_WATCH=1";
	return v;
}

static enum px_err start_coordinator(struct job *j, bool resume,
				     struct px_error *err)
{
	char listen[JOB_PATH_MAX + 8], every[24];
	const char *extra[12];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	char **argv, **envp;
	size_t k = 0;
	pid_t pid;
	int r;

	snprintf(listen, sizeof listen, "ipc://%s/n0", j->dir);
	snprintf(every, sizeof every, "%d", j->req.trainer.checkpoint_every);
	extra[k++] = "--agent";
	extra[k++] = j->agent_ep;
	extra[k++] = "--expect-joins";
	extra[k++] = "--eval-epochs";
	extra[k++] = "--checkpoint";
	extra[k++] = j->ckpt;
	if (j->req.trainer.checkpoint_every) {
		extra[k++] = "--checkpoint-every";
		extra[k++] = every;
	}
	if (resume && access(j->ckpt, R_OK) == 0) {
		extra[k++] = "--resume";
		extra[k++] = j->ckpt;
	}
	extra[k] = NULL;
	argv = role_argv(j, "coordinator", "0", listen, listen, extra);
	envp = role_env(j);
	if (!argv || !envp) {
		argv_free(argv);
		free(envp);
		return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_init(&at);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP |
				 POSIX_SPAWN_SETSIGMASK |
				 POSIX_SPAWN_SETSIGDEF);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, j->log, O_WRONLY | O_CREAT |
					 O_APPEND, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	r = posix_spawn(&pid, argv[0], &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	argv_free(argv);
	free(envp);
	if (r != 0)
		return px_errorf(err, PX_ESYS | r, "start '%s': %s",
				 j->js->s.trainer, strerror(r));
	j->coord = pid;
	return PX_OK;
}

static void stop_coordinator(struct job *j)
{
	if (j->coord <= 0)
		return;
	kill(-j->coord, SIGKILL);
	(void)waitpid(j->coord, NULL, 0);
	j->coord = 0;
}

/* ---- the world's hooks ---- */

static void cmd_queue(struct job *j, const struct wire_command *c);

/* Tell the coordinator which nodes instance q runs and what each may
 * be: a reliable instance's PS may hold backups and its workers say they
 * sit on a reliable node (stage 3 keeps them idle); a spot instance's PS
 * may only be an ActivePS. */
static void expect_nodes(struct job *j, const struct world_req *q,
			 uint32_t base)
{
	struct wire_command c = { .op = WIRE_CMD_EXPECT };
	uint8_t rel = q->reliable ? WIRE_ROLE_PS_BACKUP : 0;

	c.node.v = base;
	c.roles = WIRE_ROLE_PS_ACTIVE | rel;
	cmd_queue(j, &c);
	for (int k = 1; k <= j->req.trainer.workers_per_instance; k++) {
		c.node.v = base + (uint32_t)k;
		c.roles = WIRE_ROLE_WORKER | rel;
		cmd_queue(j, &c);
	}
}

/* An instance runs one trainer node (`proteus-trainer node`): a PS and
 * workers_per_instance workers, node ids id*NODE_STRIDE + 0, 1, ...,
 * at the place its world gives it. */
static enum px_err node_command(void *ctx, const struct world_req *q,
				const struct world_place *pl,
				struct world_node *ret, struct px_error *err)
{
	struct job *j = ctx;
	char node[24], per[16];
	const char *extra[8] = { "--with-ps", "--node-workers", per,
				 "--device", j->req.trainer.device, NULL,
				 NULL, NULL };
	uint64_t id = q->id * NODE_STRIDE;
	char **env;

	if (q->id >= UINT32_MAX / NODE_STRIDE)
		return px_errorf(err, PX_ETOOBIG, "instance id %" PRIu64
				 " past the trainer's node ids", q->id);
	snprintf(node, sizeof node, "%" PRIu64, id);
	snprintf(per, sizeof per, "%d", j->req.trainer.workers_per_instance);
	if (q->reliable)
		extra[5] = "--reliable";
	expect_nodes(j, q, (uint32_t)id);
	ret->argv = role_argv(j, "node", node, pl->coord, pl->listen, extra);
	env = calloc(3, sizeof *env);
	if (env) {
		env[0] = strdup(j->keyenv);
		env[1] = strdup("PX_PARENT_WATCH=1");
	}
	ret->env = env;
	if (!ret->argv || !env || !env[0] || !env[1]) {
		argv_free(ret->argv);
		argv_free(env);
		ret->argv = ret->env = NULL;
		return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	return PX_OK;
}

static struct seen_node *seen_get(struct job *j, uint32_t node);

/* An eviction notice or a release: the world told the node (its roles
 * leave by gone_ms); the coordinator moves their partitions and shards
 * now, even if a role is too busy to say it leaves. */
static void node_notice(void *ctx, uint64_t id, int64_t gone_ms,
			enum world_leave why)
{
	struct job *j = ctx;
	struct wire_command c = {
		.op = WIRE_CMD_LEAVE,
		.reason = why == WORLD_LEAVE_RELEASE ? WIRE_LEAVE_RELEASE
						     : WIRE_LEAVE_EVICTION,
		.deadline_us = px_now_wall_us() + gone_ms * 1000,
	};

	for (int k = 0; k <= j->req.trainer.workers_per_instance; k++) {
		struct seen_node *s;

		c.node.v = (uint32_t)(id * NODE_STRIDE) + (uint32_t)k;
		cmd_queue(j, &c);
		if ((s = seen_get(j, c.node.v)))
			s->warned = true;
	}
}

/* The journal's cloud ids: the world's. */
static void cloud_id(void *ctx, uint64_t ctrl_id, char *buf, size_t len)
{
	struct job *j = ctx;

	if (j->w)
		j->wops->cloud_id(j->w, ctrl_id, buf, len);
	else
		snprintf(buf, len, "%s", "");
}

static void cmd_stage(struct job *j, int stage);

/* On-demand price of type name, micro-USD per hour (0: unknown). */
static int64_t od_price(struct job *j, const char *name)
{
	const struct pol_env *env = j->plan ? plan_env(j->plan) : NULL;

	for (size_t i = 0; env && name && i < env->n_types; i++)
		if (!strcmp(env->types[i].name, name))
			return env->types[i].od_uusd;
	return 0;
}

/* Keep the on-demand price of the fleet's instance-time. */
static void od_account(struct job *j, const struct ctrl_event *ev)
{
	if (ev->kind == CTRL_EV_LAUNCH) {
		if (j->n_od_open == j->cap_od_open) {
			size_t cap = j->cap_od_open ? 2 * j->cap_od_open : 16;
			struct od_run *a = px_reallocarray(j->od_open, cap,
							   sizeof *a);

			if (!a)
				return; /* a figure short, nothing worse */
			j->od_open = a;
			j->cap_od_open = cap;
		}
		struct od_run *r = &j->od_open[j->n_od_open++];

		r->id = ev->instance;
		billing_acct_start(&r->a, j->billing, NULL,
				   od_price(j, ev->type), ev->t_s);
		return;
	}
	if (ev->kind != CTRL_EV_RELEASE && ev->kind != CTRL_EV_EVICTION)
		return;
	for (size_t i = 0; i < j->n_od_open; i++) {
		struct od_run *r = &j->od_open[i];

		if (r->id != ev->instance)
			continue;
		/* on demand, nobody evicts it: we end it then */
		j->od_fleet_uusd += billing_acct_end(&r->a, ev->t_s,
						     BILLING_END_USER);
		*r = j->od_open[--j->n_od_open];
		return;
	}
}

/* That figure up to market time t, in USD. */
static double od_fleet_usd(struct job *j, int64_t t)
{
	int64_t u = j->od_fleet_uusd;

	for (size_t i = 0; i < j->n_od_open; i++)
		if (t >= j->od_open[i].a.start_s)
			u += billing_acct_advance(&j->od_open[i].a, t);
	return (double)u / 1e6 + j->od_before_usd;
}

/* The controller's events: into the store, and a stage change to the
 * trainer too. */
static enum px_err job_sink(const struct ctrl_event *ev, void *ctx)
{
	struct job *j = ctx;
	struct store *st = j->js->s.st;
	struct px_error err = {0};
	enum px_err e = store_begin(st, &err);

	od_account(j, ev);
	if (e == PX_OK)
		e = journal_event(j->jn, ev, &err);
	if (e == PX_OK)
		e = store_commit(st, &err);
	else
		store_rollback(st);
	if (e != PX_OK) {
		snprintf(j->why, sizeof j->why, "the store: %s", err.msg);
		log_err("job %" PRId64 ": %s", j->id, j->why);
	}
	if (ev->kind == CTRL_EV_STAGE) {
		log_info("job %" PRId64 ": stage %d", j->id, ev->count);
		cmd_stage(j, ev->count);
	}
	return e;
}

/* ---- the trainer's progress ---- */

static enum px_err agent_open(struct job *j, struct px_error *err)
{
	char coord[JOB_PATH_MAX + 8];
	struct agent_chan_setup as = {
		.agent_ep = j->agent_ep, .coord = coord, .job = j->token,
		.key = j->key, .key_len = sizeof j->key,
	};

	snprintf(j->agent_ep, sizeof j->agent_ep, "ipc://%s/agent.pull",
		 j->dir);
	snprintf(coord, sizeof coord, "ipc://%s/n0", j->dir);
	return agent_chan_open(&as, &j->ach, err);
}

static void agent_close(struct job *j)
{
	agent_chan_close(j->ach);
	j->ach = NULL;
	j->registered = false;
	j->cmd_out = false;
	j->cmd_n = j->cmd_head = 0;
}

/* One short handshake attempt (the coordinator answers in a few ms once
 * it is up; until then this costs the timeout). */
static void agent_register(struct job *j)
{
	struct px_error err;
	char rep[JOB_PATH_MAX + 16];

	/* not before the coordinator has bound its socket: a handshake
	 * attempt blocks the loop for its timeout */
	snprintf(rep, sizeof rep, "%s/n0.rep", j->dir);
	if (access(rep, F_OK) != 0)
		return;
	/* no answer: the next try (with a new socket) */
	j->registered = agent_chan_register(j->ach, "proteusd", 10, &err) ==
			PX_OK;
}

/* Queue a command for the coordinator.  A full queue drops the oldest:
 * the commands are idempotent and the newest stage is the one that
 * counts. */
static void cmd_queue(struct job *j, const struct wire_command *c)
{
	if (j->cmd_n == CMDQ_MAX) {
		log_warn("job %" PRId64 ": command queue full; dropping the "
			 "oldest", j->id);
		if (j->cmd_out)
			return;
		j->cmd_head = (j->cmd_head + 1) % CMDQ_MAX;
		j->cmd_n--;
	}
	j->cmdq[(j->cmd_head + j->cmd_n) % CMDQ_MAX] = *c;
	j->cmd_n++;
}

static void cmd_pop(struct job *j)
{
	j->cmd_out = false;
	j->cmd_head = (j->cmd_head + 1) % CMDQ_MAX;
	j->cmd_n--;
}

/* Take the reply of the command in flight and send the next one; never
 * blocks.  A command the coordinator refuses is logged; one that gets no
 * answer for CMD_GIVE_UP_MS is dropped (the coordinator is restarting:
 * the socket is made anew with the next registration). */
static void cmd_pump(struct job *j)
{
	struct px_error err;
	char detail[WIRE_STR_MAX + 1];
	uint32_t st;

	while (j->registered && j->cmd_n) {
		const struct wire_command *c = &j->cmdq[j->cmd_head];

		if (j->cmd_out) {
			if (agent_chan_answer(j->ach, 0, &st, detail,
					      sizeof detail, &err) != PX_OK) {
				if (px_now_mono_us() - j->cmd_sent_us <
				    CMD_GIVE_UP_MS * 1000ull)
					return;
				log_warn("job %" PRId64 ": the coordinator did "
					 "not answer command %u", j->id,
					 c->op);
				cmd_pop(j);
				continue;
			}
			if (st != PX_OK)
				log_warn("job %" PRId64 ": the coordinator "
					 "refused command %u: %s", j->id,
					 c->op, detail);
			cmd_pop(j);
			continue;
		}
		if (agent_chan_send(j->ach, c, &err) != PX_OK)
			return; /* not now: the next tick */
		j->cmd_out = true;
		j->cmd_sent_us = px_now_mono_us();
	}
}

static void cmd_stage(struct job *j, int stage)
{
	struct wire_command c = { .op = WIRE_CMD_STAGE,
				  .stage = (uint8_t)stage };

	if (stage >= 1 && stage <= 3)
		cmd_queue(j, &c);
}

static struct seen_node *seen_get(struct job *j, uint32_t node)
{
	for (size_t i = 0; i < j->n_seen; i++)
		if (j->seen[i].node == node)
			return &j->seen[i];
	if (j->n_seen == MAX_SEEN)
		return NULL;
	j->seen[j->n_seen] = (struct seen_node){ node, 0, false };
	return &j->seen[j->n_seen++];
}

/* Members of a PROGRESS frame: joins (a node first seen after the job
 * began), losses, and readiness of the instance a node runs on. */
static void take_members(struct job *j, const struct wire_progress *p)
{
	j->workers = j->ps = 0;
	for (uint32_t i = 0; i < p->n; i++) {
		const struct wire_member *m = &p->members[i];
		struct seen_node *s = seen_get(j, m->node.v);
		struct px_error err;
		bool live = m->state == WIRE_MEMBER_ACTIVE ||
			    m->state == WIRE_MEMBER_JOINING;

		if (live && (m->roles & WIRE_ROLE_WORKER))
			j->workers++;
		else if (live)
			j->ps++;
		if (!s || s->state == m->state)
			continue;
		if (!s->state && live && p->clock > 0)
			j->joins++;
		/* a warned node's roles leave, and the coordinator reports
		 * them LOST once gone, as it does a lost one: that is a
		 * leave (the coordinator does not count it either) */
		if (m->state == WIRE_MEMBER_LOST && !s->warned &&
		    s->state != WIRE_MEMBER_LEAVING)
			j->losses++;
		if (!s->state && live && j->w)
			(void)j->wops->ready(j->w, m->node.v / NODE_STRIDE,
					     &err);
		s->state = m->state;
	}
}

static void take_progress(struct job *j, const struct wire_progress *p)
{
	double f;

	if (p->clock > j->clock)  /* the nodes work: starts succeed */
		j->start_failures = 0;
	j->clock = p->clock;
	j->sps = p->samples_per_s;
	if (isfinite(p->accuracy)) {
		j->acc = p->accuracy;
		j->loss = p->loss;
	}
	take_members(j, p);
	j->trainer_stage = p->stage;
	if (p->total_clock > 0)
		j->total_clocks = p->total_clock;
	/* the work is the share of the job's samples trained: with more
	 * workers a clock holds more of them */
	f = p->total_samples ? (double)p->samples /
				       (double)p->total_samples : 0;
	if (f > 1)
		f = 1;
	if (f > j->frac)
		j->frac = f;
}

static void agent_poll(struct job *j)
{
	struct px_error err;
	struct wire_msg m;

	if (!j->registered)
		agent_register(j);
	cmd_pump(j);
	while (agent_chan_progress(j->ach, 0, &m, &err) == PX_OK) {
		take_progress(j, &m.u.progress);
		wire_msg_release(&m);
	}
}

/* What the controller sees: work done in reference hours, and the rate
 * measured over the last market hour of progress. */
static void job_ctrl_progress(struct job *j, int64_t t,
			      struct ctrl_progress *p)
{
	double w = j->frac * j->req.spec.work_hours;

	if (t - j->rate_t >= 3600 || !j->rate_t) {
		if (j->rate_t && t > j->rate_t)
			j->rate_h = (w - j->rate_w) * 3600.0 /
				    (double)(t - j->rate_t);
		j->rate_t = t;
		j->rate_w = w;
	}
	j->work_h = w;
	p->work_done_h = w;
	p->rate_h = j->rate_h > 0 ? j->rate_h : 0;
}

/* ---- start, tick, finish ---- */

static void pump_soon(struct jobs *js);
static void cmd_stage(struct job *j, int stage);

static int64_t job_tick(struct loop *l, int64_t id, void *ctx);
static void node_start_failed(void *ctx, uint64_t id, const char *how);
static int64_t job_mark(void *ctx);
static int64_t ref_od_uusd(struct job *j);

static void job_release_run(struct job *j)
{
	if (j->timer > 0)
		(void)loop_timer_del(j->js->s.loop, j->timer);
	j->timer = -1;
	stop_coordinator(j);
	if (j->w)
		j->wops->free_world(j->w);
	j->w = NULL;
	ctrl_free(j->c);
	j->c = NULL;
	journal_free(j->jn);
	j->jn = NULL;
	agent_close(j);
}

static void progress_event(struct job *j, bool force)
{
	uint64_t now = px_now_mono_us();
	char acc[32], loss[32];

	if (!force && now - j->last_ev_us < PROGRESS_EVENT_MS * 1000ull)
		return;
	j->last_ev_us = now;
	if (isfinite(j->acc))
		snprintf(acc, sizeof acc, "%.4f", j->acc);
	else
		snprintf(acc, sizeof acc, "null");
	if (isfinite(j->acc) && isfinite(j->loss))
		snprintf(loss, sizeof loss, "%.4f", j->loss);
	else
		snprintf(loss, sizeof loss, "null");
	/* the whole job's figures (with the daemon's earlier lives) */
	job_eventf(j, "progress", "{\"clock\": %" PRId64 ", \"clocks_total\": "
		   "%" PRId64 ", \"work_done\": %.4f, \"test_accuracy\": %s, "
		   "\"test_loss\": %s, "
		   "\"workers\": %d, \"ps\": %d, \"stage\": %d, \"joins\": %"
		   PRId64 ", \"losses\": %" PRId64 ", \"cost_usd\": %.6f, "
		   "\"fleet_ondemand_usd\": %.6f}",
		   j->clock, j->total_clocks, j->frac, acc, loss, j->workers,
		   j->ps, ctrl_stage(j->c), j->joins, j->losses,
		   (double)(j->cost_before_uusd + ctrl_cost(j->c, j->t)) / 1e6,
		   od_fleet_usd(j, j->t));
}

static void job_end(struct job *j, enum store_job_state s, const char *why)
{
	bool completed = s == STORE_JOB_DONE;
	int64_t cost = 0;
	struct px_error err = {0};

	if (j->c)
		progress_event(j, true);
	if (j->w)       /* the trainer is done or stopped: nothing to hand
			 * over, so the releases below need no leave */
		j->wops->end_leaves(j->w);
	if (j->c && ctrl_finish(j->c, j->t, completed, &cost) != PX_OK)
		log_err("job %" PRId64 ": closing the bills: %s", j->id,
			ctrl_error(j->c)->msg);
	if (store_job_cost(j->js->s.st, j->id, &j->cost_uusd, &err) != PX_OK)
		j->cost_uusd = cost;
	if (j->c) {
		j->final_stage = ctrl_stage(j->c);
		j->final_evictions = ctrl_stats(j->c)->evictions;
	}
	if (why && *why && !j->why[0])  /* a cause found earlier stays */
		snprintf(j->why, sizeof j->why, "%s", why);
	if (why && *why)
		job_eventf(j, s == STORE_JOB_FAILED ? "error" : "end", "%s",
			   why);
	job_release_run(j);
	set_state(j, s);
	pump_soon(j->js);       /* a queued job may start now */
	log_notice("job %" PRId64 " %s%s%s (cost $%.6f)", j->id,
		   store_job_state_name(s), why && *why ? ": " : "",
		   why ? why : "", (double)j->cost_uusd / 1e6);
}

/* Socket files an earlier run of the job left (a killed daemon's). */
static void clean_sockets(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[JOB_PATH_MAX + 300];

	while (d && (e = readdir(d))) {
		const char *dot = strrchr(e->d_name, '.');

		if (!dot || (strcmp(dot, ".rep") && strcmp(dot, ".pull") &&
			     strcmp(dot, ".pub")))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		(void)unlink(path);
	}
	if (d)
		closedir(d);
}

static enum px_err job_start(struct job *j, bool resume, struct px_error *err)
{
	const struct jobs_setup *s = &j->js->s;
	const struct pol_env *env = plan_env(j->plan);
	const struct policy_ops *pol = NULL;
	struct ctrl_progress pg = {0, 0};
	enum px_err e;
	uint32_t n_train = 60000;
	static const char hex[] = "0123456789abcdef";
	size_t off;

	if (snprintf(j->dir, sizeof j->dir, "%s/%" PRId64, s->dir, j->id) >=
	    (int)sizeof j->dir)
		return px_errorf(err, PX_ETOOBIG, "job_dir too long");
	snprintf(j->ckpt, sizeof j->ckpt, "%s/model.pxc", j->dir);
	snprintf(j->log, sizeof j->log, "%s/trainer.log", j->dir);
	if (mkdir(s->dir, 0700) != 0 && errno != EEXIST)
		return px_errorf(err, PX_ESYS | errno, "mkdir %s: %s", s->dir,
				 strerror(errno));
	if (mkdir(j->dir, 0700) != 0 && errno != EEXIST)
		return px_errorf(err, PX_ESYS | errno, "mkdir %s: %s", j->dir,
				 strerror(errno));
	clean_sockets(j->dir);
	/* a fresh key and trainer job id for each (re)start */
	if (RAND_bytes(j->key, sizeof j->key) != 1 ||
	    RAND_bytes((unsigned char *)&j->token, sizeof j->token) != 1)
		return px_errorf(err, PX_EIO, "RAND_bytes failed");
	j->token >>= 1;
	off = (size_t)snprintf(j->keyenv, sizeof j->keyenv, "%s=",
			       DIST_KEY_ENV);
	for (size_t i = 0; i < sizeof j->key; i++) {
		j->keyenv[off++] = hex[j->key[i] >> 4];
		j->keyenv[off++] = hex[j->key[i] & 15];
	}
	j->keyenv[off] = 0;
	j->total_clocks = dist_job_clocks(n_train, 1,
					  (uint32_t)j->req.trainer.epochs,
					  (uint32_t)j->req.trainer.batch,
					  DIST_CLOCK_BATCHES);
	j->acc = j->loss = NAN;
	e = policy_lookup(j->req.policy, &pol, err);
	if (e == PX_OK)
		e = agent_open(j, err);
	if (e == PX_OK)
		e = start_coordinator(j, resume, err);
	if (e != PX_OK)
		return e;
	{
		struct journal_setup js = {
			.st = s->st, .job_id = j->id,
			.region = j->req.spec.region, .product = PRODUCT,
			.world = j->wops->name, .cloud_id = cloud_id, .ctx = j,
		};
		struct world_setup ws = {
			.host = &j->js->host, .job_id = j->id,
			.job_dir = j->dir, .region = j->req.spec.region,
			.resume = resume,
			.env = env, .ms = &j->ms, .t0_s = j->t,
			.end_s = plan_end(j->plan),
			.speedup = j->speedup,
			.tick_s = j->req.spec.tick_seconds,
			.wants = pol->wants,
			/* a released node's roles hand over their work,
			 * as a warned one's do, in the trainer's own
			 * leave time */
			.release_ms = DIST_LEAVE_DEFAULT_MS,
			.hooks = { .command = node_command,
				   .notice = node_notice, .ctx = j,
				   .ready_on_report = true,
				   .log_path = j->log,
				   .room = local_room,
				   .progress = job_mark,
				   .start_failed = node_start_failed },
		};
		struct ctrl_setup cs = {
			.env = env, .ms = &j->ms, .policy = pol,
			.world = j->wops, .start_s = j->t,
			.window_end_s = plan_end(j->plan),
			.tiers = {
				(double)s->cfg->stage2_ratio_pct / 100.0,
				(double)s->cfg->stage3_ratio_pct / 100.0,
				0.25, s->cfg->stage_up_after_s },
			.replace_reliable = true,
			.sink = job_sink, .sink_ctx = j,
		};
		e = journal_new(&js, &j->jn, err);
		if (e == PX_OK)
			e = j->wops->create(&ws, &j->w, err);
		if (e != PX_OK)
			return e;
		cs.world_ctx = j->w;
		e = ctrl_new(&cs, &j->c, err);
		if (e != PX_OK)
			return e;
	}
	j->wops->attach(j->w, j->c);
	job_ctrl_progress(j, j->t, &pg);
	e = j->wops->start(j->w, &pg, err);
	if (e != PX_OK)
		return e;
	j->started = true;
	j->timer = loop_timer_add(s->loop, TICK_MS, job_tick, j);
	if (j->timer < 0)
		return px_errorf(err, PX_ENOMEM, "timer");
	return PX_OK;
}

/* The socket files of a killed coordinator and of the agent (the nodes'
 * own stay: they live on). */
static void remove_coord_sockets(struct job *j)
{
	static const char *const names[] = { "n0.rep", "n0.pull", "n0.pub",
					     "agent.pull", NULL };
	char path[JOB_PATH_MAX + 32];

	for (const char *const *n = names; *n; n++) {
		snprintf(path, sizeof path, "%s/%s", j->dir, *n);
		(void)unlink(path);
	}
}

/* The coordinator's end: done, or a restart from the checkpoint. */
static bool check_coordinator(struct job *j)
{
	int st;
	struct px_error err = {0};
	pid_t pid = j->coord;

	if (pid <= 0 || waitpid(pid, &st, WNOHANG) != pid)
		return true;
	j->coord = 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		j->trainer_done = true;
		j->frac = 1;
		return true;
	}
	if (j->restarts++ < COORD_RESTARTS) {
		job_eventf(j, "error", "the coordinator %s %d; restarting "
			   "from the checkpoint (%d of %d)",
			   WIFEXITED(st) ? "exited with" : "died of signal",
			   WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
			   j->restarts, COORD_RESTARTS);
		kill(-pid, SIGKILL);    /* what is left of its group */
		/* the new coordinator knows neither the agent nor what it
		 * was told: register again, and tell it again */
		agent_close(j);
		remove_coord_sockets(j);
		if (agent_open(j, &err) == PX_OK &&
		    start_coordinator(j, true, &err) == PX_OK) {
			if (j->c)
				cmd_stage(j, ctrl_stage(j->c));
			/* the nodes' sessions were with the old one: they
			 * start anew (and are expected anew) */
			if (!j->w || j->wops->restart_nodes(j->w, &err) ==
				     PX_OK)
				return true;
		}
	}
	snprintf(j->why, sizeof j->why, "the trainer's coordinator %s %d%s%s",
		 WIFEXITED(st) ? "exited with" : "died of signal",
		 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
		 err.msg[0] ? ": " : "", err.msg);
	return false;
}

/* The last "error:" line the trainer processes wrote to the job's log
 * (their own reason), into buf ("" when none): instance id's own ("worker
 * 101: ..." is instance 1's), else the last one of any. */
static void last_trainer_error(const struct job *j, uint64_t id, char *buf,
			       size_t len)
{
	char tail[8192], *p, *best, *cause = NULL, *any = NULL, *mine = NULL;
	ssize_t n = 0;
	int fd = open(j->log, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	off_t size;

	buf[0] = 0;
	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	if (size > 0 && lseek(fd, size > (off_t)sizeof tail - 1 ?
			      size - (off_t)sizeof tail + 1 : 0,
			      SEEK_SET) >= 0)
		n = read(fd, tail, sizeof tail - 1);
	close(fd);
	if (n <= 0)
		return;
	tail[n] = 0;
	/* the root cause, not a supervisor's "role X exited with N" */
	for (p = tail; (p = strstr(p, "error: ")); p++) {
		size_t k = strcspn(p, "\n");
		char *nl = p + k, c = *nl;
		unsigned node;

		*nl = 0;
		if (!strstr(p, " exited with ")) {
			cause = p + 7;
			if (sscanf(cause, "%*s %u:", &node) == 1 &&
			    node / NODE_STRIDE == id)
				mine = cause;
		}
		*nl = c;
		any = p + 7;
	}
	best = mine ? mine : cause ? cause : any;
	if (best) {
		size_t k = strcspn(best, "\n");

		snprintf(buf, len, "%.*s", (int)k, best);
	}
}

/* The world's progress mark: the trainer's clock. */
static int64_t job_mark(void *ctx)
{
	return ((struct job *)ctx)->clock;
}

/* The world's hook: instance id's node ended before it worked (how:
 * "exited with status 1"). */
static void node_start_failed(void *ctx, uint64_t id, const char *how)
{
	struct job *j = ctx;
	char said[400];

	j->start_failures++;
	last_trainer_error(j, id, said, sizeof said);
	job_eventf(j, "node_failed", "instance %" PRIu64 ": its node failed "
		   "to start: %s%s%s", id, how, said[0] ? ": " : "", said);
	log_warn("job %" PRId64 ": instance %" PRIu64 ": its node failed to "
		 "start: %s%s%s", j->id, id, how, said[0] ? ": " : "", said);
	if (j->start_failures >= START_FAILURES_MAX && !j->fail_now[0])
		snprintf(j->fail_now, sizeof j->fail_now, "its nodes cannot "
			 "start: %" PRId64 " in a row failed (the last %s)%s%s",
			 j->start_failures, how, said[0] ? ": " : "", said);
}

/* The stall watchdog: the trainer's clock against real and market time.
 * True (and j->why set) when the job has stalled. */
static bool stalled(struct job *j, int64_t t)
{
	uint64_t now = px_now_mono_us();

	/* renting nothing costs nothing: the clock of a stall starts
	 * again */
	if (!j->stall_mono_us || j->clock != j->stall_clock ||
	    !job_nodes(j)) {
		j->stall_clock = j->clock;
		j->stall_mono_us = now;
		j->stall_t = t;
		return false;
	}
	if (now - j->stall_mono_us < (uint64_t)STALL_REAL_S * 1000000 ||
	    t - j->stall_t < STALL_MARKET_S)
		return false;
	snprintf(j->why, sizeof j->why, "stalled: the trainer made no "
		 "progress for %" PRIu64 " s (%.1f market hours; clock %"
		 PRId64 ", %.1f%% of the work) while renting %zu instance%s; "
		 "stopped", (now - j->stall_mono_us) / 1000000,
		 (double)(t - j->stall_t) / 3600.0, j->clock, 100 * j->frac,
		 job_nodes(j), job_nodes(j) == 1 ? "" : "s");
	return true;
}

static int64_t job_tick(struct loop *l, int64_t id, void *ctx)
{
	struct job *j = ctx;
	struct ctrl_progress pg;
	struct px_error err = {0};
	enum ctrl_stop stop;
	int64_t next, t = j->t;
	int st = CTRL_RUN;
	const double target = j->req.trainer.target_accuracy;

	(void)l;
	(void)id;
	agent_poll(j);
	if (!check_coordinator(j)) {
		j->timer = -1;
		job_end(j, STORE_JOB_FAILED, j->why);
		return LOOP_NOMORE;
	}
	job_ctrl_progress(j, j->wops->now(j->w), &pg);
	if (j->wops->run_due(j->w, &pg, &t, &st, &err) != PX_OK) {
		j->timer = -1;
		job_end(j, STORE_JOB_FAILED, err.msg[0] ? err.msg : j->why);
		return LOOP_NOMORE;
	}
	stop = (enum ctrl_stop)st;
	j->t = t;
	if (j->fail_now[0] || (stop == CTRL_RUN && !j->trainer_done &&
			       stalled(j, t))) {
		j->timer = -1;
		job_end(j, STORE_JOB_FAILED, j->fail_now[0] ? j->fail_now :
			j->why);
		return LOOP_NOMORE;
	}
	if (target > 0 && isfinite(j->acc) && j->acc >= target)
		j->trainer_done = true;
	if (j->trainer_done)
		stop = CTRL_STOP_DONE;
	if (stop == CTRL_RUN)
		progress_event(j, false);
	if (stop != CTRL_RUN) {
		char why[128];

		snprintf(why, sizeof why, "%s", ctrl_stop_name(stop));
		if (stop == CTRL_STOP_DEADLINE && (j->req.spec.deadline_hours
						   <= 0 || t >=
						   plan_end(j->plan)))
			snprintf(why, sizeof why, "the market trace ended "
				 "before the work did (%.1f%% done)",
				 100 * j->frac);
		if (stop == CTRL_STOP_DONE && isfinite(j->acc))
			snprintf(why, sizeof why, "test accuracy %.4f",
				 j->acc);
		j->timer = -1;
		job_end(j, stop == CTRL_STOP_DONE ? STORE_JOB_DONE :
			   STORE_JOB_FAILED, why);
		return LOOP_NOMORE;
	}
	next = j->wops->next_ms(j->w);
	return next < 0 || next > TICK_MS ? TICK_MS : next;
}

/* ---- queue ---- */

static void job_free(struct job *j)
{
	job_release_run(j);
	plan_free(j->plan);
	market_set_release(&j->ms);
	ondemand_table_release(&j->od);
	if (j->have_adv)
		advisor_release(&j->adv);
	free(j->seen);
	free(j->od_open);
	free(j);
}

/* Drop what an ended job no longer needs (its market); keep its figures. */
static void job_trim(struct job *j)
{
	(void)ref_od_uusd(j);   /* kept: the plan goes */
	plan_free(j->plan);
	j->plan = NULL;
	market_set_release(&j->ms);
	market_set_init(&j->ms);
	ondemand_table_release(&j->od);
	memset(&j->od, 0, sizeof j->od);
	if (j->have_adv)
		advisor_release(&j->adv);
	j->have_adv = false;
}

static int64_t pump(struct loop *l, int64_t id, void *ctx);

static void pump_soon(struct jobs *js)
{
	(void)loop_timer_add(js->s.loop, 0, pump, js);
}

/* Start queued jobs, oldest first, while fewer than max_jobs run. */
static int64_t pump(struct loop *l, int64_t id, void *ctx)
{
	struct jobs *js = ctx;
	struct px_error err = {0};

	(void)l;
	(void)id;
	for (struct job *j = js->list; j; j = j->next) {
		if (j->state != STORE_JOB_QUEUED)
			continue;
		if ((int64_t)jobs_running(js) >= js->s.cfg->max_jobs)
			break;
		if (!set_state(j, STORE_JOB_RUNNING)) {
			j->state = STORE_JOB_QUEUED;
			break;          /* the store failed: try later */
		}
		if (!j->t)
			j->t = j->start_s;
		job_eventf(j, "start", "{\"market_start\": %" PRId64 ", "
			   "\"speedup\": %.9g, \"billing\": \"%s\", "
			   "\"policy\": \"%s\", \"resumed\": %s}", j->t,
			   j->speedup, billing_model_name(j->billing),
			   j->req.policy, j->restarts ? "true" : "false");
		if (job_start(j, j->restarts > 0, &err) != PX_OK) {
			snprintf(j->why, sizeof j->why, "%s", err.msg);
			job_end(j, STORE_JOB_FAILED, j->why);
			job_trim(j);
		}
	}
	return LOOP_NOMORE;
}

/* ---- commands ---- */

static json_t *reply_err(struct px_error *err, enum px_err e, const char *fmt,
			 ...) __attribute__((format(printf, 3, 4)));
static json_t *reply_err(struct px_error *err, enum px_err e, const char *fmt,
			 ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	err->code = e;
	return NULL;
}

static bool req_job_id(json_t *req, int64_t *ret, struct px_error *err)
{
	json_t *v = json_object_get(req, "job");

	if (!json_is_integer(v) || json_integer_value(v) <= 0) {
		px_errorf(err, PX_EINVAL, "'job': a job id (a positive "
			  "integer) is needed");
		return false;
	}
	*ret = json_integer_value(v);
	return true;
}

/* A checked, loaded job: stored queued, added to the list (or freed with
 * the reason in err).  Returns the reply, or NULL. */
static json_t *submit_store(struct jobs *js, struct job *j, const char *text,
			    enum px_err e, struct px_error *err)
{
	if (e == PX_OK)
		e = store_job_add(js->s.st, j->req.spec.name, text,
				  j->req.world.kind, now_us(), &j->id, err);
	if (e != PX_OK) {
		job_free(j);
		return NULL;
	}
	/* the per-second interruption draws follow the job's id, as after
	 * a restart */
	plan_set_seed(j->plan, (uint64_t)j->id);
	j->state = STORE_JOB_QUEUED;
	j->next = NULL;
	{
		struct job **p = &js->list;

		while (*p)
			p = &(*p)->next;
		*p = j;
	}
	log_notice("job %" PRId64 " '%s' queued", j->id, j->req.spec.name);
	pump_soon(js);
	if (j->note[0]) {
		log_notice("job %" PRId64 ": %s", j->id, j->note);
		job_event(j, "capped", j->note);
		return json_pack("{s:I, s:s}", "job", (json_int_t)j->id,
				 "note", j->note);
	}
	return json_pack("{s:I}", "job", (json_int_t)j->id);
}

static void *load_thread(void *arg)
{
	struct loading *ld = arg;
	uint64_t one = 1;

	px_guard_set(&ld->guard);
	ld->e = job_load_market(ld->j, &ld->err);
	px_guard_set(NULL);
	if (write(ld->efd, &one, sizeof one) != sizeof one)
		abort(); /* an eventfd write of 1 cannot fail */
	return NULL;
}

/* The loading thread is done: store the job and answer the submitter. */
static void loaded(struct loop *l, int fd, int mask, void *ctx)
{
	struct loading *ld = ctx;
	struct jobs *js = ld->js;
	struct px_error err = ld->err;
	json_t *reply;

	(void)mask;
	(void)pthread_join(ld->th, NULL);
	loop_fd_del(l, fd);
	close(fd);
	for (struct loading **p = &js->loading; *p; p = &(*p)->next)
		if (*p == ld) {
			*p = ld->next;
			break;
		}
	reply = submit_store(js, ld->j, ld->text, ld->e, &err);
	server_answer(&ld->ticket, reply, &err);
	free(ld->text);
	free(ld);
}

json_t *jobs_cmd_submit(struct jobs *js, json_t *req, struct px_error *err)
{
	json_t *spec = json_object_get(req, "spec");
	json_t *file = json_object_get(req, "file");
	const char *name = json_is_string(file) ? json_string_value(file) :
			   "job";
	struct loading *ld = NULL;
	struct job *j;
	char *text;
	enum px_err e;

	if (!json_is_object(spec))
		return reply_err(err, PX_EINVAL, "'spec': the job (a JSON "
				 "object) is needed");
	text = json_dumps(spec, JSON_COMPACT);
	if (!text)
		return reply_err(err, PX_ENOMEM, "out of memory");
	j = calloc(1, sizeof *j);
	if (j)
		j->seen = calloc(MAX_SEEN, sizeof *j->seen);
	if (!j || !j->seen) {
		free(text);
		free(j);
		return reply_err(err, PX_ENOMEM, "out of memory");
	}
	j->js = js;
	j->timer = -1;
	market_set_init(&j->ms);
	snprintf(j->adv_cfg, sizeof j->adv_cfg, "%s", js->s.cfg->spot_advisor);
	snprintf(j->src, sizeof j->src, "%s", name);
	e = jobreq_parse(text, strlen(text), name, &j->req, err);
	if (e == PX_OK)
		e = job_world(j, name, err);
	if (e == PX_OK)
		e = job_fit(j, name, err);
	if (e != PX_OK) {
		free(text);
		job_free(j);
		return NULL;
	}
	{
		size_t n = 0;

		for (struct loading *l = js->loading; l; l = l->next)
			n++;
		if (n >= LOADS_MAX) {
			free(text);
			job_free(j);
			return reply_err(err, PX_EUNSUPP, "%s: not taken: %zu "
					 "submissions are being read now (at "
					 "most %d at once); submit again in a "
					 "moment", name, n, LOADS_MAX);
		}
	}
	/* the trace and prices on a thread, the answer later; without a
	 * server to answer later (or a thread), here and now */
	ld = calloc(1, sizeof *ld);
	if (ld && server_defer(&ld->ticket)) {
		job_guard(&ld->guard);
		ld->js = js;
		ld->j = j;
		ld->text = text;
		snprintf(ld->name, sizeof ld->name, "%s", name);
		ld->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (ld->efd >= 0 && loop_fd_add(js->s.loop, ld->efd,
						LOOP_READABLE, loaded, ld) ==
					    PX_OK) {
			if (pthread_create(&ld->th, NULL, load_thread, ld) ==
			    0) {
				ld->next = js->loading;
				js->loading = ld;
				return SERVER_DEFERRED;
			}
			loop_fd_del(js->s.loop, ld->efd);
		}
		if (ld->efd >= 0)
			close(ld->efd);
	}
	free(ld);
	{
		struct px_guard g;

		job_guard(&g);
		px_guard_set(&g);
		e = job_load_market(j, err);
		px_guard_set(NULL);
	}
	{
		json_t *reply = submit_store(js, j, text, e, err);

		free(text);
		return reply;
	}
}

json_t *jobs_cmd_cancel(struct jobs *js, json_t *req, struct px_error *err)
{
	struct job *j;
	int64_t id;

	if (!req_job_id(req, &id, err))
		return NULL;
	j = job_find(js, id);
	if (!j)
		return reply_err(err, PX_ENOENT, "no job %" PRId64
				 " running or queued", id);
	if (j->state != STORE_JOB_QUEUED && j->state != STORE_JOB_RUNNING)
		return reply_err(err, PX_EINVAL, "job %" PRId64 " already "
				 "ended (%s)", id,
				 store_job_state_name(j->state));
	job_end(j, STORE_JOB_CANCELLED, "cancelled");
	job_trim(j);
	pump_soon(js);
	return json_pack("{s:I, s:s}", "job", (json_int_t)id, "state",
			 "cancelled");
}

/* {"tier": .., "type": .., "zone": .., "count": n} per group. */
static json_t *fleet_json(struct job *j)
{
	const struct pol_fleet *f = j->c ? ctrl_fleet(j->c) : NULL;
	const struct pol_env *env = j->plan ? plan_env(j->plan) : NULL;
	json_t *a = json_array();

	for (size_t i = 0; a && f && env && i < f->n; i++) {
		const struct pol_instance *in = &f->v[i];
		const char *type = env->types[in->type].name;
		const char *zone = in->market >= 0 ?
				   env->markets[in->market].zone : NULL;
		const char *tier = in->reliable ? "reliable" : "transient";
		json_t *g = NULL, *x;
		size_t k;

		json_array_foreach(a, k, x) {
			json_t *z = json_object_get(x, "zone");

			if (!strcmp(json_string_value(json_object_get(x,
				    "tier")), tier) &&
			    !strcmp(json_string_value(json_object_get(x,
				    "type")), type) &&
			    (zone ? json_is_string(z) &&
			     !strcmp(json_string_value(z), zone) :
			     json_is_null(z))) {
				g = x;
				break;
			}
		}
		if (g) {
			json_object_set_new(g, "count", json_integer(
				json_integer_value(json_object_get(g,
					"count")) + 1));
			continue;
		}
		json_array_append_new(a, json_pack("{s:s, s:s, s:o, s:i}",
			"tier", tier, "type", type, "zone",
			zone ? json_string(zone) : json_null(), "count", 1));
	}
	return a;
}

static double usd(int64_t uusd)
{
	return uusd < 0 ? 0 : px_usd(uusd);
}

static json_t *num_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* A dollar figure for JSON: to the micro-dollar, so that it prints as
 * that decimal (jsonout.h), never negative; null when not known. */
static json_t *money(double v)
{
	return isfinite(v) ? json_real(v > 0 ? px_usd_round(v) : 0.0) :
			     json_null();
}

/* The on-demand price of the job's reference type in its region, from its
 * on-demand table (the daemon's when it names none), micro-USD per hour;
 * 0 when not known.  For a job without its plan (ended, or read from the
 * store): a table is a few kB. */
static int64_t req_ref_od_uusd(struct jobs *js, const struct job_request *q)
{
	const char *path = q->world.ondemand[0] ? q->world.ondemand :
			   js->s.ondemand;
	const struct ondemand_entry *e;
	struct ondemand_table t;
	struct px_error err = {0};
	int64_t v = 0;

	/* on the loop's thread, a path a submitter named: a regular file
	 * only, opened without blocking, small (a FIFO put there since
	 * must not stop the daemon) */
	struct px_guard g = { .ngroups = -1, .max_bytes = 1 << 20,
			      .deadline_us = px_now_mono_us() + 1000000 };
	enum px_err r;

	memset(&t, 0, sizeof t);
	if (!path || !path[0])
		return 0;
	px_guard_set(&g);
	r = ondemand_table_load(path, &t, &err);
	px_guard_set(NULL);
	if (r != PX_OK)
		return 0;
	e = ondemand_table_find(&t, q->spec.region, q->spec.reference_type);
	if (e)
		v = e->uusd_per_hour;
	ondemand_table_release(&t);
	return v;
}

/* The on-demand price of the reference type: what the work would cost on
 * on-demand instances of that type, at one reference hour per hour. */
static int64_t ref_od_uusd(struct job *j)
{
	const struct pol_env *env = j->plan ? plan_env(j->plan) : NULL;

	/* kept once known: a trimmed job reads no file again */
	if (env)
		j->ref_od = env->types[env->ref_type].od_uusd;
	else if (!j->ref_od)
		j->ref_od = req_ref_od_uusd(j->js, &j->req);
	return j->ref_od;
}

/* The whole job's cost: the ledger of the daemon's earlier lives and this
 * controller's bills while it runs; once ended, the ledger's sum. */
static int64_t job_cost_uusd(struct job *j)
{
	if (j->c)
		return j->cost_before_uusd + ctrl_cost(j->c, j->t);
	if (j->state == STORE_JOB_QUEUED || j->state == STORE_JOB_RUNNING)
		return j->cost_before_uusd;
	return j->cost_uusd;
}

/* Its evictions in every life: the store's events, else what this daemon
 * counted. */
static int64_t job_evictions(struct job *j)
{
	const struct ctrl_stats *cs = j->c ? ctrl_stats(j->c) : NULL;
	struct px_error err = {0};
	int64_t n;

	if (store_event_count(j->js->s.st, j->id, "eviction", &n, &err) ==
	    PX_OK)
		return n;
	return j->evictions_before + (cs ? cs->evictions : j->final_evictions);
}

/* The last event of a kind of a job (events are at most 1023 bytes). */
struct last_ev {
	bool found;
	int64_t at_us;
	char detail[1024];
};

static enum px_err take_last(const struct store_event *ev, void *ctx)
{
	struct last_ev *l = ctx;

	l->found = true;
	l->at_us = ev->at_us;
	snprintf(l->detail, sizeof l->detail, "%.*s", (int)ev->detail_len,
		 ev->detail);
	return PX_OK;
}

static bool last_event(struct store *st, int64_t id, const char *kind,
		       struct last_ev *l)
{
	struct px_error err = {0};

	memset(l, 0, sizeof *l);
	return store_event_last(st, id, kind, take_last, l, &err) == PX_OK &&
	       l->found;
}

/* Why a failed job failed: this daemon's reason, else the store's (the
 * last "error" event: job_end writes the reason as one).  Sets o's
 * "error"; nothing for a job that did not fail. */
static void set_error(json_t *o, struct store *st, int64_t id,
		      enum store_job_state state, const char *why)
{
	struct last_ev l;

	if (state != STORE_JOB_FAILED)
		return;
	if (why && *why)
		json_object_set_new(o, "error", json_string(why));
	else if (last_event(st, id, "error", &l))
		json_object_set_new(o, "error", json_string(l.detail));
	else
		json_object_set_new(o, "error", json_string("not recorded"));
}

static json_t *status_live(struct job *j)
{
	int64_t cost = job_cost_uusd(j);
	double od = usd(ref_od_uusd(j));
	double proj = j->frac > 0.02 ? usd(cost) / j->frac : NAN;
	/* a resumed job: the last figures until the trainer tests again */
	bool before = !isfinite(j->acc) && j->have_test_before;
	json_t *o;

	if (j->state == STORE_JOB_DONE)
		proj = usd(cost);
	o = json_pack("{s:I, s:s, s:s, s:s, s:i, s:I, s:I, s:o, s:o, s:f, "
		      "s:o, s:o, s:o, s:I, s:I, s:I, s:i, s:i, s:f, s:s}",
		      "job", (json_int_t)j->id, "name", j->req.spec.name,
		      "state", store_job_state_name(j->state),
		      "world", world_kind_name(j->req.world.kind),
		      "stage", j->c ? ctrl_stage(j->c) : j->final_stage,
		      "clock", (json_int_t)j->clock,
		      "clocks_total", (json_int_t)j->total_clocks,
		      "test_accuracy", num_or_null(before ? j->acc_before :
						   j->acc),
		      "test_loss", num_or_null(before ? j->loss_before :
					       j->loss),
		      "work_done", j->frac,
		      "fleet", fleet_json(j),
		      "cost_usd", money(usd(cost)),
		      "projected_cost_usd", money(proj),
		      "evictions", (json_int_t)job_evictions(j),
		      "joins", (json_int_t)j->joins,
		      "losses", (json_int_t)j->losses,
		      "workers", j->workers, "ps", j->ps,
		      "samples_per_s", isfinite(j->sps) && j->sps > 0 ?
				       j->sps : 0.0,
		      "policy", j->req.policy);
	if (!o)
		return NULL;
	json_object_set_new(o, "ondemand_cost_usd",
			    money(od * j->frac * j->req.spec.work_hours));
	json_object_set_new(o, "fleet_ondemand_usd",
			    money(od_fleet_usd(j, j->t ? j->t : j->start_s)));
	json_object_set_new(o, "trainer_stage", j->trainer_stage ?
			    json_integer(j->trainer_stage) : json_null());
	json_object_set_new(o, "market_time", json_integer(j->t ? j->t :
							  j->start_s));
	json_object_set_new(o, "restarts", json_integer(j->restarts));
	json_object_set_new(o, "billing",
			    json_string(billing_model_name(j->billing)));
	json_object_set_new(o, "spot_advisor", j->adv_path[0] ?
			    json_string(j->adv_path) : json_null());
	set_error(o, j->js->s.st, j->id, j->state, j->why);
	return o;
}

/* A job this daemon has not run (it ended before this daemon started):
 * what the store says, which holds every life of the job. */
struct stored {
	json_t *o;
	char *spec;              /* as submitted */
	enum store_job_state state;
};

static enum px_err stored_job(const struct store_job *sj, void *ctx)
{
	struct stored *s = ctx;

	s->state = sj->state;
	s->o = json_pack("{s:I, s:s, s:s, s:s}", "job", (json_int_t)sj->id,
			 "name", sj->name, "state",
			 store_job_state_name(sj->state), "world",
			 world_kind_name(sj->world));
	free(s->spec);
	s->spec = strndup(sj->spec_json, sj->spec_len);
	return s->o && s->spec ? PX_OK : PX_ENOMEM;
}

/* A member of JSON text o (a stored event's detail), or NULL. */
static json_t *detail_get(json_t *o, const char *k)
{
	return json_is_object(o) ? json_object_get(o, k) : NULL;
}

/* o (job, name, state, world) with the job's figures from the store
 * alone: the cost is the ledger's sum; evictions, the eviction events;
 * the run's figures, its last progress event (the whole job's since they
 * carry the earlier lives'); policy and billing, its last start (else the
 * parameters of a `simulate --db` run, else its spec); the on-demand
 * estimate, from its spec; why it failed, its last "error" event. */
static enum px_err stored_books(struct jobs *js, int64_t id,
				const struct stored *s, struct px_error *err)
{
	struct store *st = js->s.st;
	struct job_request *q = calloc(1, sizeof *q);
	struct px_error perr = {0};
	struct last_ev l;
	int64_t cost = 0, evictions = 0, starts = 0, at_s = 0;
	json_t *o = s->o, *p = NULL, *start = NULL, *v;
	double frac = 0, proj = NAN;
	bool have_q;
	const char *k;
	enum px_err e;

	if (!q)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	e = store_job_cost(st, id, &cost, err);
	if (e == PX_OK)
		e = store_event_count(st, id, "eviction", &evictions, err);
	if (e == PX_OK)
		e = store_event_count(st, id, "start", &starts, err);
	if (e != PX_OK) {
		free(q);
		return e;
	}
	have_q = s->spec && jobreq_parse(s->spec, strlen(s->spec),
					 "the stored job", q, &perr) == PX_OK;
	if (last_event(st, id, "progress", &l)) {
		p = json_loads(l.detail, 0, NULL);
		at_s = l.at_us / 1000000;
	}
	/* a daemon's start, else `simulate --db`'s parameters: both name
	 * the policy and the billing */
	if (last_event(st, id, "start", &l) ||
	    last_event(st, id, "simulate", &l)) {
		start = json_loads(l.detail, 0, NULL);
		if (!at_s)
			at_s = l.at_us / 1000000;
	}
	json_object_set_new(o, "stage", json_integer(0));
	json_object_set_new(o, "clock", json_integer(0));
	json_object_set_new(o, "clocks_total", json_integer(0));
	json_object_set_new(o, "test_accuracy", json_null());
	json_object_set_new(o, "test_loss", json_null());
	json_object_set_new(o, "work_done", json_real(0));
	json_object_set_new(o, "fleet", json_array());
	json_object_set_new(o, "workers", json_integer(0));
	json_object_set_new(o, "ps", json_integer(0));
	json_object_set_new(o, "joins", json_integer(0));
	json_object_set_new(o, "losses", json_integer(0));
	json_object_set_new(o, "fleet_ondemand_usd", json_real(0));
	/* the figures of its last progress event, checked */
	if (json_is_object(p))
		json_object_foreach(p, k, v) {
			json_t *had = json_object_get(o, k);

			if (!had || !strcmp(k, "fleet") ||
			    (json_is_number(had) && !json_is_number(v)) ||
			    (json_is_number(v) && json_number_value(v) < 0))
				continue;
			json_object_set_new(o, k, json_is_integer(had) &&
					    json_is_real(v) ? json_integer(
					    (json_int_t)json_real_value(v)) :
					    json_incref(v));
		}
	frac = json_number_value(json_object_get(o, "work_done"));
	if (s->state == STORE_JOB_DONE)
		proj = usd(cost);
	else if (frac > 0.02)
		proj = usd(cost) / frac;
	json_object_set_new(o, "cost_usd", money(usd(cost)));
	json_object_set_new(o, "projected_cost_usd", money(proj));
	json_object_set_new(o, "evictions", json_integer(evictions));
	json_object_set_new(o, "samples_per_s", json_real(0));
	json_object_set_new(o, "fleet_ondemand_usd", money(json_number_value(
		json_object_get(o, "fleet_ondemand_usd"))));
	v = detail_get(start, "policy");
	json_object_set_new(o, "policy", json_is_string(v) ? json_copy(v) :
			    have_q ? json_string(q->policy) : json_null());
	v = detail_get(start, "billing");
	json_object_set_new(o, "billing", json_is_string(v) ? json_copy(v) :
			    have_q && q->world.have_billing ? json_string(
			    billing_model_name(q->world.billing)) :
			    json_null());
	{
		int64_t od = have_q ? req_ref_od_uusd(js, q) : 0;

		json_object_set_new(o, "ondemand_cost_usd", od > 0 ?
				    money(usd(od) * frac *
					  q->spec.work_hours) : json_null());
	}
	json_object_set_new(o, "trainer_stage", json_null());
	json_object_set_new(o, "market_time", at_s ? json_integer(at_s) :
			    json_null());
	json_object_set_new(o, "restarts", json_integer(starts > 1 ?
							 starts - 1 : 0));
	json_object_set_new(o, "spot_advisor", have_q &&
			    q->spec.spot_advisor[0] ?
			    json_string(q->spec.spot_advisor) : json_null());
	set_error(o, st, id, s->state, NULL);
	json_decref(p);
	json_decref(start);
	free(q);
	return PX_OK;
}

static json_t *status_stored(struct jobs *js, int64_t id,
			     struct px_error *err)
{
	struct store_job_filter f = { .id = id };
	struct stored s = {0};

	if (store_jobs_each(js->s.st, &f, stored_job, &s, err) != PX_OK) {
		json_decref(s.o);
		free(s.spec);
		return NULL;
	}
	if (!s.o) {
		free(s.spec);
		return reply_err(err, PX_ENOENT, "no job %" PRId64, id);
	}
	if (stored_books(js, id, &s, err) != PX_OK) {
		json_decref(s.o);
		s.o = NULL;
	}
	free(s.spec);
	return s.o;
}

json_t *jobs_cmd_status(struct jobs *js, json_t *req, struct px_error *err)
{
	struct job *j;
	int64_t id;

	if (!req_job_id(req, &id, err))
		return NULL;
	j = job_find(js, id);
	if (!j)
		return status_stored(js, id, err);
	return status_live(j);
}

struct list {
	struct jobs *js;
	json_t *a;
	struct px_error *err;
};

/* A row of `jobs`: its cost, accuracy and work in every life; a job this
 * daemon runs, live, else the ledger and its last progress event. */
static enum px_err list_job(const struct store_job *sj, void *ctx)
{
	struct list *ls = ctx;
	struct job *j = job_find(ls->js, sj->id);
	int64_t cost = 0;
	double acc = NAN, frac = 0;
	struct last_ev l;
	enum px_err e;
	json_t *x;

	if (j) {
		bool before = !isfinite(j->acc) && j->have_test_before;

		cost = job_cost_uusd(j);
		acc = before ? j->acc_before : j->acc;
		frac = j->frac;
	} else {
		e = store_job_cost(ls->js->s.st, sj->id, &cost, ls->err);
		if (e != PX_OK)
			return e;
		if (last_event(ls->js->s.st, sj->id, "progress", &l)) {
			json_t *p = json_loads(l.detail, 0, NULL);

			acc = json_number_value(detail_get(p,
							   "test_accuracy"));
			if (!json_is_number(detail_get(p, "test_accuracy")))
				acc = NAN;
			frac = json_number_value(detail_get(p, "work_done"));
			json_decref(p);
		}
	}
	x = json_pack("{s:I, s:s, s:s, s:s, s:I, s:o, s:o, s:f}",
		      "job", (json_int_t)sj->id, "name", sj->name, "state",
		      store_job_state_name(j ? j->state : sj->state), "world",
		      world_kind_name(sj->world), "created_us",
		      (json_int_t)sj->created_us, "cost_usd",
		      money(usd(cost)), "test_accuracy", num_or_null(acc),
		      "work_done", frac > 0 && frac <= 1 ? frac : 0.0);
	if (!x || json_array_append_new(ls->a, x))
		return px_errorf(ls->err, PX_ENOMEM, "out of memory");
	return PX_OK;
}

json_t *jobs_cmd_jobs(struct jobs *js, json_t *req, struct px_error *err)
{
	struct list ls = { .js = js, .a = json_array(), .err = err };

	(void)req;
	if (!ls.a)
		return reply_err(err, PX_ENOMEM, "out of memory");
	if (store_jobs_each(js->s.st, NULL, list_job, &ls, err) != PX_OK) {
		json_decref(ls.a);
		return NULL;
	}
	return json_pack("{s:o}", "jobs", ls.a);
}

struct ev_walk {
	json_t *a;
	int64_t after;       /* event ids <= this are skipped */
	size_t max;
};

static enum px_err walk_event(const struct store_event *ev, void *ctx)
{
	struct ev_walk *w = ctx;

	if (ev->id <= w->after)
		return PX_OK;
	if (json_array_size(w->a) >= w->max)
		return PX_OK;
	return json_array_append_new(w->a, json_pack("{s:I, s:I, s:I, s:s, "
		"s:s%}", "id", (json_int_t)ev->id, "at", (json_int_t)(
		ev->at_us / 1000000), "instance", (json_int_t)ev->instance_id,
		"kind", ev->kind, "detail", ev->detail, ev->detail_len)) ?
		PX_ENOMEM : PX_OK;
}

json_t *jobs_cmd_events(struct jobs *js, json_t *req, struct px_error *err)
{
	json_t *after = json_object_get(req, "after");
	struct store_job_filter f;
	struct stored s = {0};
	struct ev_walk w = { .after = 0, .max = 200 };
	struct job *j;
	int64_t id;

	if (!req_job_id(req, &id, err))
		return NULL;
	if (after && !(json_is_integer(after) &&
		       json_integer_value(after) >= 0))
		return reply_err(err, PX_EINVAL, "'after': an event id (an "
				 "integer >= 0) is needed");
	w.after = after ? json_integer_value(after) : 0;
	f = (struct store_job_filter){ .id = id };
	if (store_jobs_each(js->s.st, &f, stored_job, &s, err) != PX_OK) {
		json_decref(s.o);
		free(s.spec);
		return NULL;
	}
	free(s.spec);
	if (!s.o)
		return reply_err(err, PX_ENOENT, "no job %" PRId64, id);
	w.a = json_array();
	if (!w.a || store_events_each(js->s.st, id, walk_event, &w, err) !=
		    PX_OK) {
		json_decref(w.a);
		json_decref(s.o);
		return NULL;
	}
	j = job_find(js, id);
	json_object_set_new(s.o, "events", w.a);
	if (j)
		json_object_set_new(s.o, "state", json_string(
			store_job_state_name(j->state)));
	return s.o;
}

/* ---- restart ---- */

struct recover {
	struct job *j;
	int64_t first_us, last_us;
	double spent_uusd;
};

static enum px_err rec_event(const struct store_event *ev, void *ctx)
{
	struct recover *r = ctx;

	if (!strcmp(ev->kind, "progress")) {
		json_t *p = json_loads(ev->detail, 0, NULL);
		json_t *v = json_object_get(p, "fleet_ondemand_usd");
		json_t *acc = json_object_get(p, "test_accuracy");
		json_t *loss = json_object_get(p, "test_loss");
		struct job *j = r->j;

		if (json_is_number(v) && json_number_value(v) >= 0)
			j->od_before_usd = json_number_value(v);
		/* the job's figures so far: its later lives go on from
		 * them (each progress event carries the earlier lives') */
		v = json_object_get(p, "work_done");
		if (json_is_number(v) && json_number_value(v) >= 0 &&
		    json_number_value(v) <= 1)
			j->frac = json_number_value(v);
		v = json_object_get(p, "clock");
		if (json_is_integer(v) && json_integer_value(v) >= 0)
			j->clock = json_integer_value(v);
		v = json_object_get(p, "joins");
		if (json_is_integer(v) && json_integer_value(v) >= 0)
			j->joins = json_integer_value(v);
		v = json_object_get(p, "losses");
		if (json_is_integer(v) && json_integer_value(v) >= 0)
			j->losses = json_integer_value(v);
		if (json_is_number(acc)) {
			j->have_test_before = true;
			j->acc_before = json_number_value(acc);
			j->loss_before = json_is_number(loss) ?
					 json_number_value(loss) : NAN;
		}
		json_decref(p);
	} else if (!strcmp(ev->kind, "eviction")) {
		r->j->evictions_before++;
	}
	if (!r->first_us || ev->at_us < r->first_us)
		r->first_us = ev->at_us;
	if (ev->at_us > r->last_us)
		r->last_us = ev->at_us;
	return PX_OK;
}

/* An instance a killed daemon left open, of a world whose instances end
 * with the daemon: ended at the job's last recorded instant, charged
 * under the job's billing for its run, and what is left of it ended by
 * its world. */
static enum px_err rec_instance(const struct store_open_instance *in,
				void *ctx)
{
	struct recover *r = ctx;
	struct job *j = r->j;
	struct store *st = j->js->s.st;
	struct billing_acct a;
	struct px_error err = {0};
	int64_t end_s = r->last_us / 1000000, start_s = in->start_us / 1000000;
	int mi = in->zone[0] ? market_set_find(&j->ms, in->zone, in->type) : -1;
	const struct ondemand_entry *od = ondemand_table_find(&j->od,
		j->req.spec.region, in->type);
	int64_t amount = 0;
	enum px_err e;

	if (j->wops->end_orphan)
		j->wops->end_orphan(in->cloud_id);
	if (end_s < start_s)
		end_s = start_s;
	if (in->zone[0] && mi >= 0) {
		billing_acct_start(&a, j->billing, &j->ms.v[mi], 0, start_s);
		amount = billing_acct_end(&a, end_s, BILLING_END_USER);
	} else if (!in->zone[0] && od) {
		billing_acct_start(&a, j->billing, NULL, od->uusd_per_hour,
				   start_s);
		amount = billing_acct_end(&a, end_s, BILLING_END_USER);
	}
	e = store_instance_end(st, in->id, end_s * 1000000, "lost", &err);
	if (e == PX_OK)
		e = store_ledger_add(st, j->id, in->id, in->start_us,
				     end_s * 1000000, amount,
				     "closed by a restarted proteusd", &err);
	if (e == PX_OK)
		e = store_event_add(st, j->id, in->id, end_s * 1000000, "lost",
				    "its node died with proteusd", &err);
	if (e != PX_OK)
		log_err("job %" PRId64 ": instance %" PRId64 ": %s", j->id,
			in->id, err.msg);
	return e;
}

struct rec_list {
	struct jobs *js;
	int64_t ids[1024];
	size_t n;
};

static enum px_err rec_job(const struct store_job *sj, void *ctx)
{
	struct rec_list *l = ctx;

	const struct world_ops *o = world_ops_of(sj->world);

	/* jobs of every world the daemon runs (not simulate's) */
	if (!o || !o->create ||
	    (sj->state != STORE_JOB_QUEUED && sj->state != STORE_JOB_RUNNING))
		return PX_OK;
	if (l->n < sizeof l->ids / sizeof l->ids[0])
		l->ids[l->n++] = sj->id;
	return PX_OK;
}

struct rec_spec {
	char *text;
	enum store_job_state state;
	enum world_kind world;
};

static enum px_err rec_spec(const struct store_job *sj, void *ctx)
{
	struct rec_spec *r = ctx;

	r->state = sj->state;
	r->world = sj->world;
	r->text = strndup(sj->spec_json, sj->spec_len);
	return r->text ? PX_OK : PX_ENOMEM;
}

static void recover_one(struct jobs *js, int64_t id)
{
	struct store_job_filter f = { .id = id };
	struct rec_spec rs = {0};
	struct recover r = {0};
	struct px_error err = {0};
	int64_t spent = 0;
	char name[32];
	struct job *j = calloc(1, sizeof *j);
	enum px_err e = PX_ENOMEM;

	if (!j || !(j->seen = calloc(MAX_SEEN, sizeof *j->seen))) {
		free(j);
		log_err("job %" PRId64 ": out of memory", id);
		return;
	}
	j->js = js;
	j->id = id;
	j->timer = -1;
	j->acc = j->loss = NAN;         /* not tested in this life yet */
	market_set_init(&j->ms);
	snprintf(j->adv_cfg, sizeof j->adv_cfg, "%s", js->s.cfg->spot_advisor);
	snprintf(name, sizeof name, "job %" PRId64, id);
	snprintf(j->src, sizeof j->src, "%s", name);
	e = store_jobs_each(js->s.st, &f, rec_spec, &rs, &err);
	if (e == PX_OK)
		e = jobreq_parse(rs.text, strlen(rs.text), name, &j->req, &err);
	if (e != PX_OK)
		j->req.world.kind = rs.world;   /* for its status */
	if (e == PX_OK)
		e = job_world(j, name, &err);
	if (e == PX_OK)
		e = job_fit(j, name, &err);
	free(rs.text);
	j->state = rs.state;
	if (e == PX_OK) {
		/* the paths came from a submitter: regular files, bounded
		 * (with the daemon's rights: no client is served here, and
		 * who submitted is not stored) */
		struct px_guard g;

		job_guard(&g);
		px_guard_set(&g);
		e = job_load_market(j, &err);
		px_guard_set(NULL);
	}
	r.j = j;
	if (e == PX_OK)
		e = store_events_each(js->s.st, id, rec_event, &r, &err);
	/* instances that end with the daemon are closed here; a world whose
	 * instances outlive it takes them up itself (world_setup.resume) */
	if (e == PX_OK && j->state == STORE_JOB_RUNNING &&
	    !j->wops->instances_outlive_daemon) {
		if (!r.last_us)
			r.last_us = j->start_s * 1000000;
		e = store_begin(js->s.st, &err);
		if (e == PX_OK)
			e = store_open_instances_each(js->s.st, id,
						      rec_instance, &r, &err);
		if (e == PX_OK)
			e = store_commit(js->s.st, &err);
		else
			store_rollback(js->s.st);
	}
	if (e == PX_OK)
		e = store_job_cost(js->s.st, id, &spent, &err);
	/* the ledger so far, closed bills only: this life's controller
	 * counts from 0 */
	j->cost_before_uusd = spent;
	j->next = js->list;
	js->list = j;
	if (e != PX_OK) {
		snprintf(j->why, sizeof j->why, "cannot resume: %s", err.msg);
		if (j->state == STORE_JOB_RUNNING || j->state ==
		    STORE_JOB_QUEUED)
			job_end(j, STORE_JOB_FAILED, j->why);
		job_trim(j);
		return;
	}
	if (j->state == STORE_JOB_RUNNING) {
		/* what is left of the budget and the deadline */
		if (j->req.spec.budget_uusd >= 0)
			j->req.spec.budget_uusd = j->req.spec.budget_uusd >
				spent ? j->req.spec.budget_uusd - spent : 0;
		if (j->req.spec.deadline_hours > 0) {
			double used = (double)(r.last_us - r.first_us) / 3.6e9;

			j->req.spec.deadline_hours = j->req.spec.deadline_hours
				> used + 1.0 / 3600 ?
				j->req.spec.deadline_hours - used : 1.0 / 3600;
		}
		j->t = r.last_us / 1000000;
		j->restarts = 1;
		/* back to queued, started by the pump like a new one */
		j->state = STORE_JOB_QUEUED;
		log_notice("job %" PRId64 ": resuming at market time %"
			   PRId64 " after a restart", id, j->t);
	}
	pump_soon(js);
}

enum px_err jobs_recover(struct jobs *js, struct px_error *err)
{
	struct rec_list *l = calloc(1, sizeof *l);

	if (!l)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	if (store_jobs_each(js->s.st, NULL, rec_job, l, err) != PX_OK) {
		free(l);
		return err->code;
	}
	for (size_t i = 0; i < l->n; i++)
		recover_one(js, l->ids[i]);
	free(l);
	return PX_OK;
}

enum px_err jobs_new(const struct jobs_setup *s, struct jobs **ret,
		     struct px_error *err)
{
	struct jobs *js = calloc(1, sizeof *js);

	if (!js)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	js->s = *s;
	js->host = (struct world_host){ .loop = s->loop, .st = s->st,
					.cfg = s->cfg };
	*ret = js;
	return PX_OK;
}

void jobs_suspend(struct jobs *js)
{
	for (struct job *j = js->list; j; j = j->next) {
		if (j->state == STORE_JOB_QUEUED) {
			log_notice("job %" PRId64 " '%s': stays queued; it "
				   "starts when proteusd runs again", j->id,
				   j->req.spec.name);
			continue;
		}
		if (j->state != STORE_JOB_RUNNING)
			continue;
		/* the figures of this moment, for the next life's status */
		if (j->c)
			progress_event(j, true);
		/* a world whose instances end with the daemon (local:
		 * this host's processes): the store keeps the job running,
		 * and the next start closes their bills at the last
		 * recorded instant and resumes from the checkpoint; one
		 * whose instances outlive it takes them up again */
		log_notice("job %" PRId64 " '%s': suspended at market time %"
			   PRId64 " (clock %" PRId64 ", %.1f%% of the work): "
			   "its %zu %s instance%s %s; it "
			   "resumes from its checkpoint when proteusd starts "
			   "again (cancel it then to end it)", j->id,
			   j->req.spec.name, j->t, j->clock, 100 * j->frac,
			   job_nodes(j), j->wops->name,
			   job_nodes(j) == 1 ? "" : "s",
			   j->wops->instances_outlive_daemon ? "keep running"
			   : "stop with proteusd");
		job_eventf(j, "suspended", "proteusd stopped at market time %"
			   PRId64 " (clock %" PRId64 "); the job resumes when "
			   "it starts again", j->t, j->clock);
	}
}

void jobs_free(struct jobs *js)
{
	if (!js)
		return;
	/* submissions still loading: let their threads end, answer none */
	while (js->loading) {
		struct loading *ld = js->loading;

		js->loading = ld->next;
		px_guard_stop(&ld->guard); /* its reads end now */
		(void)pthread_join(ld->th, NULL);
		loop_fd_del(js->s.loop, ld->efd);
		close(ld->efd);
		job_free(ld->j);
		free(ld->text);
		free(ld);
	}
	while (js->list) {
		struct job *j = js->list;

		js->list = j->next;
		job_free(j);
	}
	free(js);
}
