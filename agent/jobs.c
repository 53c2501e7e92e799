/* jobs.c -- proteusd's jobs (jobs.h; docs/jobs.md): the list, the queue,
 * start, tick and finish, and the stop rules.  The other concerns are in
 * jobs_*.c (jobs_int.h says which).
 *
 * One job, from submit to its end:
 *
 *   submit      jobreq_parse, the trace and prices loaded and the plan
 *               checked (markets, window), a queued row; reply {"job": id}
 *               (jobs_submit.c)
 *   start       (a loop turn later) job directory, key, coordinator
 *               process, the job's world and the controller, first
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
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"
#include "../trainer/dist/dist.h"
#include "jobkey.h"
#include "jobs_int.h"

#define TICK_MS 50               /* the longest a job's timer sleeps */
#define PROGRESS_EVENT_MS 2000   /* a "progress" event at most this often */
/* A running job whose trainer's clock has not moved for this long, in
 * real time and in market time both, while it rents, has stalled: its
 * trainer restarts from the checkpoint while restarts are left, then it
 * is failed (what a stall costs is rent for nothing). */
#define BILLS_POLL_MS 500       /* a finished job's bills, to EC2's end */
#define BILLS_WAIT_S 60
#define STALL_MARKET_S 1800     /* (the real-time part: stall_seconds) */
/* Before its first clock, a trainer may take this long (real seconds,
 * if stall_seconds is less): the setup of a large model (an MF job's
 * 90M parameters, 360 MB handed to each PS and pulled for the first
 * checkpoint) is work too.  The coordinator's own start bound (its
 * --stall-timeout default, trainer/dist/dist_opts.c). */
#define STALL_FIRST_CLOCK_S 60

static int64_t job_tick(struct loop *l, int64_t id, void *ctx);
static int64_t job_bills(struct loop *l, int64_t id, void *ctx);
static int64_t pump(struct loop *l, int64_t id, void *ctx);

/* ---- the list ---- */

struct job *job_new(struct jobs *js, const char *src)
{
	struct job *j = calloc(1, sizeof *j);

	if (!j)
		return NULL;
	j->js = js;
	/* the built-in trainer until the request names another
	 * (job_world) */
	j->wlops = &workload_trainer;
	j->run.timer = -1;
	job_inputs_init(j);
	job_market_init(j, js->s.cfg->spot_advisor);
	job_progress_init(j);
	job_pool_init(j);
	snprintf(j->src, sizeof j->src, "%s", src);
	return j;
}

struct job *job_find(struct jobs *js, int64_t id)
{
	for (struct job *j = js->list; j; j = j->next)
		if (j->id == id)
			return j;
	return NULL;
}

/* Nodes the job's world holds now (0 without a world). */
size_t job_nodes(const struct job *j)
{
	return j->run.w ? j->wops->nodes(j->run.w) : 0;
}

size_t jobs_running(const struct jobs *js)
{
	size_t n = 0;

	for (const struct job *j = js->list; j; j = j->next)
		n += j->run.state == STORE_JOB_RUNNING;
	return n;
}

static enum px_err take_state(const struct store_job *sj, void *ctx)
{
	*(enum store_job_state *)ctx = sj->state;
	return PX_OK;
}

bool jobs_stored_state(struct jobs *js, int64_t id,
		       enum store_job_state *ret, struct px_error *err)
{
	struct store_job_filter f = { .id = id };

	*ret = STORE_JOB_STATE_MAX;
	return store_jobs_each(js->s.st, &f, take_state, ret, err) ==
	       PX_OK && *ret != STORE_JOB_STATE_MAX;
}

/* The job's state, in the store and here.  When the store cannot take it
 * (a full disk), this daemon still treats the job as being in state s (an
 * ended job is not run again by it); the store keeps the state it had, and
 * a restarted daemon takes a job it says is running up again. */
bool job_set_state(struct job *j, enum store_job_state s)
{
	struct px_error err = {0};

	bool final = s != STORE_JOB_QUEUED && s != STORE_JOB_RUNNING;
	bool ok;

	j->run.state = s;
	ok = store_job_set_state(j->js->s.st, j->id, s, px_now_wall_us(),
				 &err) == PX_OK;
	if (!ok)
		log_err("job %" PRId64 ": state %s not stored: %s", j->id,
			store_job_state_name(s), err.msg);
	/* an end holds here even when the store failed; a start that was
	 * not stored is taken back (pump) */
	if (ok || final)
		job_notify(j, "state", final ? j->run.why : NULL, NULL);
	return ok;
}

void job_take_state(struct job *j, enum store_job_state s)
{
	j->run.state = s;
}

void job_resume_at(struct job *j, int64_t t)
{
	j->run.t = t;
	j->run.state = STORE_JOB_QUEUED;
}

void job_first_start_at(struct job *j, int64_t s)
{
	j->run.first_s = s;
}

double job_finish_by_hours(const struct job *j)
{
	return j->run.finish_by_h > 0 ? j->run.finish_by_h :
	       j->req.spec.finish_by_hours > 0 ? j->req.spec.finish_by_hours :
	       0;
}

int64_t job_finish_by_s(const struct job *j)
{
	int64_t start = j->run.first_s ? j->run.first_s :
			j->run.t ? j->run.t : j->mk.start_s;

	return start + llround(job_finish_by_hours(j) * 3600);
}

/* finish_by_hours counts from the job's first start, in every life of
 * the daemon: the policy (which counts from its controller's start,
 * start_s) gets what is left of it then, at least a second, and the
 * hours as submitted stay in run.finish_by_h. */
static void finish_by_rebase(struct job *j, int64_t start_s)
{
	double used, left;

	if (!(j->run.finish_by_h > 0))
		j->run.finish_by_h = j->req.spec.finish_by_hours;
	if (!(j->run.finish_by_h > 0))
		return;
	used = j->run.first_s && start_s > j->run.first_s ?
	       (double)(start_s - j->run.first_s) / 3600 : 0;
	left = j->run.finish_by_h - used;
	j->req.spec.finish_by_hours = left > 1.0 / 3600 ? left : 1.0 / 3600;
}

void job_set_why(struct job *j, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(j->run.why, sizeof j->run.why, fmt, ap);
	va_end(ap);
}

void job_fail_soon(struct job *j, const char *fmt, ...)
{
	va_list ap;

	if (j->run.fail_now[0])         /* the first cause stays */
		return;
	va_start(ap, fmt);
	vsnprintf(j->run.fail_now, sizeof j->run.fail_now, fmt, ap);
	va_end(ap);
}

/* ---- the controller's events ---- */

/* Every event of the job's controller, in one place: into the books (the
 * store, one transaction, and the shadow bill), then to whoever else it
 * concerns: a notice or an eviction to the notifications, a stage change
 * to the workload. */
static enum px_err job_dispatch(const struct ctrl_event *ev, void *ctx)
{
	struct job *j = ctx;
	struct px_error err = {0};
	enum px_err e = job_books_record(j, ev, &err);

	if (e != PX_OK) {
		job_set_why(j, "the store: %s", err.msg);
		log_err("job %" PRId64 ": %s", j->id, j->run.why);
	}
	switch (ev->kind) {
	case CTRL_EV_REJECT:
		job_pool_refused(j, ev);
		break;
	case CTRL_EV_WARNING:
		job_notify_instance(j, "eviction_notice", ev);
		break;
	case CTRL_EV_EVICTION:
		job_notify_instance(j, "eviction", ev);
		break;
	case CTRL_EV_STAGE:
		log_info("job %" PRId64 ": stage %d", j->id, ev->count);
		if (j->wl)
			j->wlops->stage(j, ev->count);
		break;
	default:
		break;
	}
	return e;
}

/* ---- start, tick, finish ---- */

/* The job's timer and its workload's driver end (its world and
 * controller stay). */
static void job_stop_trainer(struct job *j)
{
	if (j->run.timer > 0)
		(void)loop_timer_del(j->js->s.loop, j->run.timer);
	j->run.timer = -1;
	if (j->wl)
		j->wlops->stop(j);
}

void job_key_env(const struct job *j, char *buf)
{
	_Static_assert(sizeof j->run.key == 32, "JOB_KEYENV_LEN's key");
	memcpy(buf, DIST_KEY_ENV "=", sizeof DIST_KEY_ENV);
	px_hex(j->run.key, sizeof j->run.key, buf + sizeof DIST_KEY_ENV);
}

static void job_release_run(struct job *j)
{
	job_stop_trainer(j);
	if (j->run.w)
		j->wops->free_world(j->run.w);
	/* its nodes are gone: what they left on this host goes too */
	if (j->run.w && j->wl && j->wlops->released)
		j->wlops->released(j);
	j->run.w = NULL;
	ctrl_free(j->run.c);
	j->run.c = NULL;
	journal_free(j->run.jn);
	j->run.jn = NULL;
}

static void progress_event(struct job *j, bool force)
{
	uint64_t now = px_now_mono_us();
	char acc[32], loss[32], more[48] = "";

	if (!force && now - j->run.last_ev_us < PROGRESS_EVENT_MS * 1000ull)
		return;
	j->run.last_ev_us = now;
	if (isfinite(j->pg.acc))
		snprintf(acc, sizeof acc, "%.4f", j->pg.acc);
	else
		snprintf(acc, sizeof acc, "null");
	/* an mf job's test RMSE is its loss, with no accuracy */
	if (isfinite(j->pg.loss))
		snprintf(loss, sizeof loss, "%.4f", j->pg.loss);
	else
		snprintf(loss, sizeof loss, "null");
	/* a workload's own count of its work (a program's samples) */
	{
		json_t *v = j->wl && j->wlops->view ? j->wlops->view(j) : NULL;
		json_t *n = json_object_get(v, "samples");

		if (json_is_integer(n))
			snprintf(more, sizeof more, ", \"samples\": %" PRId64,
				 (int64_t)json_integer_value(n));
		json_decref(v);
	}
	/* the whole job's figures (with the daemon's earlier lives) */
	job_eventf(j, "progress", "{\"clock\": %" PRId64 ", \"clocks_total\": "
		   "%" PRId64 ", \"work_done\": %.4f, \"test_accuracy\": %s, "
		   "\"test_loss\": %s, "
		   "\"workers\": %d, \"ps\": %d, \"stage\": %d, \"joins\": %"
		   PRId64 ", \"losses\": %" PRId64 ", \"cost_usd\": %.6f, "
		   "\"fleet_ondemand_usd\": %.6f%s}",
		   j->pg.clock, job_clocks_total(j), j->pg.frac, acc, loss,
		   j->pg.workers,
		   j->pg.ps, ctrl_stage(j->run.c), j->pg.joins, j->pg.losses,
		   (double)job_cost_uusd(j) / 1e6,
		   job_od_fleet_usd(j, j->run.t), more);
	job_scaling_event(j, force);
}

void job_end(struct job *j, enum store_job_state s, const char *why)
{
	bool completed = s == STORE_JOB_DONE;
	int64_t cost = 0;

	if (j->run.c)
		progress_event(j, true);
	if (j->run.w)       /* the trainer is done or stopped: nothing to hand
			 * over, so the releases below need no leave */
		j->wops->end_leaves(j->run.w);
	/* a provider's clock ran on since the last event: its bills close
	 * now, as the provider's do */
	if (j->run.w && j->wops->real_clock &&
	    j->wops->now(j->run.w) > j->run.t)
		j->run.t = j->wops->now(j->run.w);
	/* nor before what the world reported at its clock after the last
	 * event (local: a node's end found by the reap, and what the
	 * controller started for it) */
	if (j->run.c && ctrl_latest(j->run.c) > j->run.t)
		j->run.t = ctrl_latest(j->run.c);
	if (j->run.c &&
	    ctrl_finish(j->run.c, j->run.t, completed, &cost) != PX_OK)
		log_err("job %" PRId64 ": closing the bills: %s", j->id,
			ctrl_error(j->run.c)->msg);
	job_books_close(j, cost);
	if (j->run.c)
		j->run.final_stage = ctrl_stage(j->run.c);
	if (why && *why && !j->run.why[0])  /* a cause found earlier stays */
		snprintf(j->run.why, sizeof j->run.why, "%s", why);
	if (why && *why)
		job_eventf(j, s == STORE_JOB_FAILED ? "error" : "end", "%s",
			   why);
	job_stop_trainer(j);
	/* the key's nodes are gone: nothing may join the job again */
	if (j->run.dir[0])
		jobkey_remove(j->run.dir);
	/* nothing reads the job's copies of its files any more */
	job_inputs_remove(j);
	job_set_state(j, s);
	job_pool_leave(j);      /* its share goes to the others */
	pump_soon(j->js);       /* a queued job may start now */
	log_notice("job %" PRId64 " %s%s%s (cost $%.6f)", j->id,
		   store_job_state_name(s), why && *why ? ": " : "",
		   why ? why : "", (double)j->bk.cost_uusd / 1e6);
	if (j->run.w && j->run.c && j->wops->bill_ends && ctrl_bills_open(j->run.c)) {
		/* the provider bills to its own end of each instance (the
		 * terminate call's arrival): its listing says when */
		j->run.closing_us = px_now_mono_us();
		j->run.timer = loop_timer_add(j->js->s.loop, BILLS_POLL_MS,
					  job_bills, j);
		if (j->run.timer >= 0)
			return;
	}
	job_release_run(j);
}

/* A finished job whose bills wait for the provider's end times: each
 * BILLS_POLL_MS until none is open, or BILLS_WAIT_S have passed (they
 * stay as closed at the decision). */
static int64_t job_bills(struct loop *l, int64_t id, void *ctx)
{
	struct job *j = ctx;
	int64_t change;
	bool late;

	(void)l;
	(void)id;
	j->wops->bill_ends(j->run.w);
	late = px_now_mono_us() - j->run.closing_us >
	       (uint64_t)BILLS_WAIT_S * 1000000;
	if (ctrl_bills_open(j->run.c) && !late)
		return BILLS_POLL_MS;
	change = job_books_final(j);
	if (ctrl_bills_open(j->run.c))
		log_warn("job %" PRId64 ": EC2's end of %zu instance%s not "
			 "seen in %d s: their bills close at the decision",
			 j->id, ctrl_bills_open(j->run.c),
			 ctrl_bills_open(j->run.c) == 1 ? "" : "s", BILLS_WAIT_S);
	job_eventf(j, "bills_final", "{\"cost_usd\": %.6f, "
		   "\"provider_end_usd\": %.6f}", (double)j->bk.cost_uusd / 1e6,
		   (double)change / 1e6);
	log_info("job %" PRId64 ": bills final: $%.6f", j->id,
		 (double)j->bk.cost_uusd / 1e6);
	j->run.timer = -1;
	j->run.closing_us = 0;
	job_release_run(j);
	if (j->run.trim_due) {
		j->run.trim_due = false;
		job_trim(j);
	}
	return LOOP_NOMORE;
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
	const struct pol_env *env = plan_env(j->mk.plan);
	const struct policy_ops *pol = NULL;
	struct ctrl_progress pg = {0};
	char coord[JOB_PATH_MAX + 8];
	enum px_err e;

	if (snprintf(j->run.dir, sizeof j->run.dir, "%s/%" PRId64, s->dir,
		     j->id) >= (int)sizeof j->run.dir)
		return px_errorf(err, PX_ETOOBIG, "job_dir too long");
	if (mkdir(s->dir, 0700) != 0 && errno != EEXIST)
		return px_errorf(err, PX_ESYS | errno, "mkdir %s: %s", s->dir,
				 strerror(errno));
	if (mkdir(j->run.dir, 0700) != 0 && errno != EEXIST)
		return px_errorf(err, PX_ESYS | errno, "mkdir %s: %s",
				 j->run.dir, strerror(errno));
	clean_sockets(j->run.dir);
	/* the job's key, kept in its directory across the daemon's lives
	 * (nodes that outlive the daemon stay members) */
	e = jobkey_load_or_create(j->run.dir, j->run.key, err);
	if (e == PX_OK)
		e = j->wlops->prepare(j, err);
	if (e != PX_OK)
		return e;
	job_progress_start(j);
	e = policy_lookup(j->req.policy, &pol, err);
	if (e != PX_OK)
		return e;
	/* the exploration's limit before the first decision (a restarted
	 * daemon's from what the earlier lives measured) */
	job_explore(j, 0);
	{
		struct journal_setup js = {
			.st = s->st, .job_id = j->id,
			.region = j->req.spec.region, .product = PRODUCT,
			.world = j->wops->name, .cloud_id = job_cloud_id,
			.ctx = j,
		};
		struct world_setup ws = {
			.host = &j->js->host, .job_id = j->id,
			.job_dir = j->run.dir, .region = j->req.spec.region,
			.resume = resume, .job_key = j->run.key,
			.rebalance_leave = j->req.world.rebalance_leave,
			.env = env, .ms = job_market_lend(j),
			.t0_s = j->run.t,
			.end_s = plan_end(j->mk.plan),
			.speedup = j->mk.speedup,
			.tick_s = j->req.spec.tick_seconds,
			.wants = pol->wants,
			.release_ms = j->wlops->release_ms,
			.node_ports = j->wlops->node_ports(j),
		};
		struct ctrl_setup cs = {
			.env = env, .ms = job_market_lend(j), .policy = pol,
			.world = j->wops, .start_s = j->run.t,
			.window_end_s = plan_end(j->mk.plan),
			.tiers = {
				(double)s->cfg->stage2_ratio_pct / 100.0,
				(double)s->cfg->stage3_ratio_pct / 100.0,
				0.25, s->cfg->stage_up_after_s },
			.replace_reliable = true,
			.sink = job_dispatch, .sink_ctx = j,
			.gate = job_pool_gate(j),
		};
		j->wlops->hooks(j, &ws.hooks);
		ws.hooks.room = job_room;
		e = journal_new(&js, &j->run.jn, err);
		if (e == PX_OK)
			e = j->wops->create(&ws, &j->run.w, err);
		/* the workload's driver listens where the world says its
		 * nodes reach it */
		if (e == PX_OK)
			e = j->wops->coordinator(j->run.w, coord, sizeof coord,
						 err);
		if (e == PX_OK)
			e = j->wlops->start(j, coord, resume, err);
		if (e != PX_OK)
			return e;
		/* a market the provider gives runs on its clock, from now */
		if (j->wops->load_market)
			cs.start_s = j->run.t = j->wops->now(j->run.w);
		cs.world_ctx = j->run.w;
		finish_by_rebase(j, cs.start_s);
		e = ctrl_new(&cs, &j->run.c, err);
		if (e != PX_OK)
			return e;
	}
	j->wops->attach(j->run.w, j->run.c);
	job_ctrl_progress(j, j->run.t, &pg);
	e = j->wops->start(j->run.w, &pg, err);
	if (e != PX_OK)
		return e;
	j->run.timer = loop_timer_add(s->loop, TICK_MS, job_tick, j);
	if (j->run.timer < 0)
		return px_errorf(err, PX_ENOMEM, "timer");
	return PX_OK;
}

/* The stall watchdog: the trainer's clock against real and market time.
 * True (and j->run.why set) when the job has stalled. */
static bool stalled(struct job *j, int64_t t)
{
	uint64_t now = px_now_mono_us();

	/* renting nothing costs nothing: the clock of a stall starts
	 * again */
	if (!j->run.stall_mono_us || j->pg.clock != j->run.stall_clock ||
	    !job_nodes(j)) {
		j->run.stall_clock = j->pg.clock;
		j->run.stall_mono_us = now;
		j->run.stall_t = t;
		return false;
	}
	{
		int64_t bound = j->js->s.cfg->stall_seconds;

		if (j->pg.clock <= 0 && bound < STALL_FIRST_CLOCK_S)
			bound = STALL_FIRST_CLOCK_S;
		if (now - j->run.stall_mono_us < (uint64_t)bound * 1000000 ||
		    t - j->run.stall_t < STALL_MARKET_S)
			return false;
	}
	snprintf(j->run.why, sizeof j->run.why, "stalled: the trainer made no "
		 "progress for %" PRIu64 " s (%.1f market hours; clock %"
		 PRId64 ", %.1f%% of the work) while renting %zu instance%s; "
		 "stopped", (now - j->run.stall_mono_us) / 1000000,
		 (double)(t - j->run.stall_t) / 3600.0, j->pg.clock,
		 100 * j->pg.frac,
		 job_nodes(j), job_nodes(j) == 1 ? "" : "s");
	return true;
}

static int64_t job_tick(struct loop *l, int64_t id, void *ctx)
{
	struct job *j = ctx;
	struct ctrl_progress pg;
	struct px_error err = {0};
	enum ctrl_stop stop;
	bool stall;
	int64_t next, t = j->run.t;
	int st = CTRL_RUN;
	const double target = j->req.trainer.target_accuracy;

	(void)l;
	(void)id;
	if (job_pool_tick(j))
		pump_soon(j->js);
	j->wlops->poll(j);
	switch (j->wlops->check(j, j->run.why, sizeof j->run.why)) {
	case WORKLOAD_FAILED:
		j->run.timer = -1;
		job_end(j, STORE_JOB_FAILED, j->run.why);
		return LOOP_NOMORE;
	case WORKLOAD_DONE:
		j->run.done = true;
		job_progress_done(j);
		break;
	case WORKLOAD_RUNS:
		break;
	}
	job_ctrl_progress(j, j->wops->now(j->run.w), &pg);
	if (j->wops->run_due(j->run.w, &pg, &t, &st, &err) != PX_OK) {
		j->run.timer = -1;
		job_end(j, STORE_JOB_FAILED, err.msg[0] ? err.msg : j->run.why);
		return LOOP_NOMORE;
	}
	stop = (enum ctrl_stop)st;
	j->run.t = t;
	stall = !j->run.fail_now[0] && stop == CTRL_RUN && !j->run.done &&
		stalled(j, t);
	if (stall && j->wlops->restart_stalled(j)) {
		j->run.stall_mono_us = 0;     /* the restart's clock starts */
	} else if (stall || j->run.fail_now[0]) {
		j->run.timer = -1;
		job_end(j, STORE_JOB_FAILED, j->run.fail_now[0] ?
			j->run.fail_now : j->run.why);
		return LOOP_NOMORE;
	}
	if (target > 0 && isfinite(j->pg.acc) && j->pg.acc >= target)
		j->run.done = true;
	if (j->run.done)
		stop = CTRL_STOP_DONE;
	if (stop == CTRL_RUN)
		progress_event(j, false);
	if (stop != CTRL_RUN) {
		char why[128];

		snprintf(why, sizeof why, "%s", ctrl_stop_name(stop));
		if (stop == CTRL_STOP_DEADLINE && (j->req.spec.deadline_hours
						   <= 0 || t >=
						   plan_end(j->mk.plan)))
			snprintf(why, sizeof why, "the market trace ended "
				 "before the work did (%.1f%% done)",
				 100 * j->pg.frac);
		if (stop == CTRL_STOP_DONE && isfinite(j->pg.acc))
			snprintf(why, sizeof why, "test accuracy %.4f",
				 j->pg.acc);
		j->run.timer = -1;
		if (stop == CTRL_STOP_BUDGET || stop == CTRL_STOP_DEADLINE)
			job_notify(j, stop == CTRL_STOP_BUDGET ? "budget_stop" :
				   "deadline_stop", why, NULL);
		job_end(j, stop == CTRL_STOP_DONE ? STORE_JOB_DONE :
			   STORE_JOB_FAILED, why);
		return LOOP_NOMORE;
	}
	next = j->wops->next_ms(j->run.w);
	return next < 0 || next > TICK_MS ? TICK_MS : next;
}

/* ---- queue ---- */

void job_free(struct job *j)
{
	job_inputs_drop(j);
	job_release_run(j);
	if (j->wl)
		j->wlops->free(j);
	job_market_trim(j);
	job_books_free(j);
	job_pool_free(j);
	free(j);
}

/* Drop what an ended job no longer needs (its market); keep its figures. */
void job_trim(struct job *j)
{
	if (j->run.closing_us) {
		/* its world and controller still use the market and the
		 * plan until the bills are final (job_bills trims then) */
		j->run.trim_due = true;
		return;
	}
	(void)job_ref_od_uusd(j);   /* kept: the plan goes */
	job_market_trim(j);
}

void pump_soon(struct jobs *js)
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
		if (j->run.state != STORE_JOB_QUEUED)
			continue;
		if ((int64_t)jobs_running(js) >= js->s.cfg->max_jobs)
			break;
		/* its reliable tier whole in the pool, or it waits */
		if (!job_pool_may_start(j))
			continue;
		if (!job_set_state(j, STORE_JOB_RUNNING)) {
			j->run.state = STORE_JOB_QUEUED;
			break;          /* the store failed: try later */
		}
		if (!j->run.t)
			j->run.t = j->mk.start_s;
		if (!j->run.first_s)    /* the start finish_by_hours counts
					 * from */
			j->run.first_s = j->run.t;
		job_eventf(j, "start", "{\"market_start\": %" PRId64 ", "
			   "\"speedup\": %.9g, \"billing\": \"%s\", "
			   "\"policy\": \"%s\", \"resumed\": %s}", j->run.t,
			   j->mk.speedup, billing_model_name(j->mk.billing),
			   j->req.policy, j->pg.restarts ? "true" : "false");
		if (job_start(j, j->pg.restarts > 0, &err) != PX_OK) {
			snprintf(j->run.why, sizeof j->run.why, "%s", err.msg);
			job_end(j, STORE_JOB_FAILED, j->run.why);
			job_trim(j);
		}
	}
	return LOOP_NOMORE;
}

void jobs_suspend(struct jobs *js)
{
	for (struct job *j = js->list; j; j = j->next) {
		if (j->run.state == STORE_JOB_QUEUED) {
			log_notice("job %" PRId64 " '%s': stays queued; it "
				   "starts when proteusd runs again", j->id,
				   j->req.spec.name);
			continue;
		}
		if (j->run.state != STORE_JOB_RUNNING)
			continue;
		/* the figures of this moment, for the next life's status */
		if (j->run.c)
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
			   j->req.spec.name, j->run.t, j->pg.clock, 100 * j->pg.frac,
			   job_nodes(j), j->wops->name,
			   job_nodes(j) == 1 ? "" : "s",
			   j->wops->instances_outlive_daemon ? "keep running"
			   : "stop with proteusd");
		job_eventf(j, "suspended", "proteusd stopped at market time %"
			   PRId64 " (clock %" PRId64 "); the job resumes when "
			   "it starts again", j->run.t, j->pg.clock);
	}
}
