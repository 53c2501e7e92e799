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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"
#include "jobkey.h"
#include "jobs_int.h"
#include "notify.h"

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
 * --stall-timeout default, trainer/dist_opts.c). */
#define STALL_FIRST_CLOCK_S 60

static int64_t job_tick(struct loop *l, int64_t id, void *ctx);
static int64_t job_bills(struct loop *l, int64_t id, void *ctx);
static int64_t pump(struct loop *l, int64_t id, void *ctx);

/* ---- the list ---- */

struct job *job_new(struct jobs *js, const char *src)
{
	struct job *j = calloc(1, sizeof *j);

	if (!j || !(j->seen = calloc(MAX_SEEN, sizeof *j->seen))) {
		free(j);
		return NULL;
	}
	j->js = js;
	j->timer = -1;
	j->stall_restart_clock = -1;
	j->cmd_fd = -1;
	for (int k = 0; k < JIN_MAX; k++)
		j->in.fd[k] = -1;
	/* not evaluated yet: no figure (status null, /metrics absent),
	 * not a 0 that reads as a test */
	j->acc = j->loss = j->sps = NAN;
	market_set_init(&j->ms);
	snprintf(j->adv_cfg, sizeof j->adv_cfg, "%s", js->s.cfg->spot_advisor);
	snprintf(j->src, sizeof j->src, "%s", src);
	return j;
}

int64_t job_clocks_total(const struct job *j)
{
	return j->total_clocks > j->clock ? j->total_clocks : j->clock;
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
	return j->w ? j->wops->nodes(j->w) : 0;
}

size_t jobs_running(const struct jobs *js)
{
	size_t n = 0;

	for (const struct job *j = js->list; j; j = j->next)
		n += j->state == STORE_JOB_RUNNING;
	return n;
}

/* An event row of the job, in its own transaction (market time). */
void job_event(struct job *j, const char *kind, const char *detail)
{
	struct store *st = j->js->s.st;
	struct px_error err = {0};
	int64_t at = (j->t ? j->t : j->start_s) * 1000000;

	if (store_event_add(st, j->id, 0, at, kind, detail, &err) != PX_OK)
		log_warn("job %" PRId64 ": event '%s' not stored: %s", j->id,
			 kind, err.msg);
}

void job_eventf(struct job *j, const char *kind, const char *fmt, ...)
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
bool job_set_state(struct job *j, enum store_job_state s)
{
	struct px_error err = {0};

	bool final = s != STORE_JOB_QUEUED && s != STORE_JOB_RUNNING;
	bool ok;

	j->state = s;
	ok = store_job_set_state(j->js->s.st, j->id, s, px_now_wall_us(),
				 &err) == PX_OK;
	if (!ok)
		log_err("job %" PRId64 ": state %s not stored: %s", j->id,
			store_job_state_name(s), err.msg);
	/* an end holds here even when the store failed; a start that was
	 * not stored is taken back (pump) */
	if (ok || final)
		job_notify(j, "state", final ? j->why : NULL, NULL);
	return ok;
}

/* ---- start, tick, finish ---- */

/* The job's timer and its trainer end (its world and controller stay). */
static void job_stop_trainer(struct job *j)
{
	if (j->timer > 0)
		(void)loop_timer_del(j->js->s.loop, j->timer);
	j->timer = -1;
	job_trainer_stop(j);
}

static void job_release_run(struct job *j)
{
	job_stop_trainer(j);
	if (j->w)
		j->wops->free_world(j->w);
	j->w = NULL;
	ctrl_free(j->c);
	j->c = NULL;
	journal_free(j->jn);
	j->jn = NULL;
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
	/* an mf job's test RMSE is its loss, with no accuracy */
	if (isfinite(j->loss))
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
		   j->clock, job_clocks_total(j), j->frac, acc, loss,
		   j->workers,
		   j->ps, ctrl_stage(j->c), j->joins, j->losses,
		   (double)(j->cost_before_uusd + ctrl_cost(j->c, j->t)) / 1e6,
		   job_od_fleet_usd(j, j->t));
	job_scaling_event(j, force);
}

void job_end(struct job *j, enum store_job_state s, const char *why)
{
	bool completed = s == STORE_JOB_DONE;
	int64_t cost = 0;
	struct px_error err = {0};

	if (j->c)
		progress_event(j, true);
	if (j->w)       /* the trainer is done or stopped: nothing to hand
			 * over, so the releases below need no leave */
		j->wops->end_leaves(j->w);
	/* a provider's clock ran on since the last event: its bills close
	 * now, as the provider's do */
	if (j->w && j->wops->real_clock && j->wops->now(j->w) > j->t)
		j->t = j->wops->now(j->w);
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
	job_stop_trainer(j);
	/* the key's nodes are gone: nothing may join the job again */
	if (j->dir[0])
		jobkey_remove(j->dir);
	/* nothing reads the job's copies of its files any more */
	job_inputs_remove(j);
	j->in_kept = false;
	job_set_state(j, s);
	pump_soon(j->js);       /* a queued job may start now */
	log_notice("job %" PRId64 " %s%s%s (cost $%.6f)", j->id,
		   store_job_state_name(s), why && *why ? ": " : "",
		   why ? why : "", (double)j->cost_uusd / 1e6);
	if (j->w && j->c && j->wops->bill_ends && ctrl_bills_open(j->c)) {
		/* the provider bills to its own end of each instance (the
		 * terminate call's arrival): its listing says when */
		j->closing_us = px_now_mono_us();
		j->timer = loop_timer_add(j->js->s.loop, BILLS_POLL_MS,
					  job_bills, j);
		if (j->timer >= 0)
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
	struct px_error err = {0};
	int64_t before = j->cost_uusd;
	bool late;

	(void)l;
	(void)id;
	j->wops->bill_ends(j->w);
	late = px_now_mono_us() - j->closing_us >
	       (uint64_t)BILLS_WAIT_S * 1000000;
	if (ctrl_bills_open(j->c) && !late)
		return BILLS_POLL_MS;
	if (store_job_cost(j->js->s.st, j->id, &j->cost_uusd, &err) != PX_OK)
		log_err("job %" PRId64 ": its cost: %s", j->id, err.msg);
	if (ctrl_bills_open(j->c))
		log_warn("job %" PRId64 ": EC2's end of %zu instance%s not "
			 "seen in %d s: their bills close at the decision",
			 j->id, ctrl_bills_open(j->c),
			 ctrl_bills_open(j->c) == 1 ? "" : "s", BILLS_WAIT_S);
	job_eventf(j, "bills_final", "{\"cost_usd\": %.6f, "
		   "\"provider_end_usd\": %.6f}", (double)j->cost_uusd / 1e6,
		   (double)(j->cost_uusd - before) / 1e6);
	log_info("job %" PRId64 ": bills final: $%.6f", j->id,
		 (double)j->cost_uusd / 1e6);
	j->timer = -1;
	j->closing_us = 0;
	job_release_run(j);
	if (j->trim_due) {
		j->trim_due = false;
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
	const struct pol_env *env = plan_env(j->plan);
	const struct policy_ops *pol = NULL;
	struct ctrl_progress pg = {0, 0};
	enum px_err e;

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
	e = job_trainer_prepare(j, err);
	if (e != PX_OK)
		return e;
	/* a resumed job's total is its earlier lives' last (the trainer's
	 * own, for its fleet then), not prepare's one-worker guess, until
	 * the trainer reports again */
	if (j->total_before > 0)
		j->total_clocks = j->total_before;
	j->acc = j->loss = NAN;
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
			.job_dir = j->dir, .region = j->req.spec.region,
			.resume = resume, .job_key = j->key,
			.rebalance_leave = j->req.world.rebalance_leave,
			.env = env, .ms = &j->ms, .t0_s = j->t,
			.end_s = plan_end(j->plan),
			.speedup = j->speedup,
			.tick_s = j->req.spec.tick_seconds,
			.wants = pol->wants,
			/* a released node's roles hand over their work,
			 * as a warned one's do, in the trainer's own
			 * leave time */
			.release_ms = DIST_LEAVE_DEFAULT_MS,
			/* a PS and its workers, three ports each */
			.node_ports = 3 * (j->req.trainer.workers_per_instance
					   + 1),
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
		job_trainer_hooks(j, &ws.hooks);
		ws.hooks.room = job_room;
		e = journal_new(&js, &j->jn, err);
		if (e == PX_OK)
			e = j->wops->create(&ws, &j->w, err);
		/* the coordinator listens where the world says its nodes
		 * reach it */
		if (e == PX_OK)
			e = j->wops->coordinator(j->w, j->coord_addr,
						 sizeof j->coord_addr, err);
		if (e == PX_OK)
			e = job_trainer_start(j, resume, err);
		if (e != PX_OK)
			return e;
		/* a market the provider gives runs on its clock, from now */
		if (j->wops->load_market)
			cs.start_s = j->t = j->wops->now(j->w);
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
	{
		int64_t bound = j->js->s.cfg->stall_seconds;

		if (j->clock <= 0 && bound < STALL_FIRST_CLOCK_S)
			bound = STALL_FIRST_CLOCK_S;
		if (now - j->stall_mono_us < (uint64_t)bound * 1000000 ||
		    t - j->stall_t < STALL_MARKET_S)
			return false;
	}
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
	bool stall;
	int64_t next, t = j->t;
	int st = CTRL_RUN;
	const double target = j->req.trainer.target_accuracy;

	(void)l;
	(void)id;
	job_trainer_poll(j);
	if (!job_check_coordinator(j)) {
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
	stall = !j->fail_now[0] && stop == CTRL_RUN && !j->trainer_done &&
		stalled(j, t);
	if (stall && job_restart_stalled(j)) {
		j->stall_mono_us = 0;     /* the restart's clock starts */
	} else if (stall || j->fail_now[0]) {
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
		if (stop == CTRL_STOP_BUDGET || stop == CTRL_STOP_DEADLINE)
			job_notify(j, stop == CTRL_STOP_BUDGET ? "budget_stop" :
				   "deadline_stop", why, NULL);
		job_end(j, stop == CTRL_STOP_DONE ? STORE_JOB_DONE :
			   STORE_JOB_FAILED, why);
		return LOOP_NOMORE;
	}
	next = j->wops->next_ms(j->w);
	return next < 0 || next > TICK_MS ? TICK_MS : next;
}

/* ---- queue ---- */

void job_free(struct job *j)
{
	job_inputs_drop(j);
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
void job_trim(struct job *j)
{
	if (j->closing_us) {
		/* its world and controller still use the market and the
		 * plan until the bills are final (job_bills trims then) */
		j->trim_due = true;
		return;
	}
	(void)job_ref_od_uusd(j);   /* kept: the plan goes */
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
		if (j->state != STORE_JOB_QUEUED)
			continue;
		if ((int64_t)jobs_running(js) >= js->s.cfg->max_jobs)
			break;
		if (!job_set_state(j, STORE_JOB_RUNNING)) {
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

enum px_err jobs_new(const struct jobs_setup *s, struct jobs **ret,
		     struct px_error *err)
{
	struct jobs *js = calloc(1, sizeof *js);

	if (!js)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	js->s = *s;
	js->host = (struct world_host){ .loop = s->loop, .st = s->st,
					.cfg = s->cfg };
	if (notify_new(s->loop, s->cfg, &js->notify, err) != PX_OK) {
		free(js);
		return err->code;
	}
	/* copies of submissions a killed daemon never stored */
	job_inputs_clean_stale(s->dir);
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
	jobs_submit_stop(js);
	while (js->list) {
		struct job *j = js->list;

		js->list = j->next;
		job_free(j);
	}
	for (size_t k = 0; world_ops_at(k); k++) {
		const struct world_ops *o = world_ops_at(k);

		if (o->host_free)
			o->host_free(&js->host);
	}
	notify_free(js->notify);
	free(js);
}
