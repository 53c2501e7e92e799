/* local.c -- the `local` world (local.h, docs/controller.md). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../trainer/dist/dist.h"
#include "../config.h"
#include "../controller.h"
#include "../jobreq.h"
#include "../evq.h"
#include "local.h"
#include "../spawnattr.h"

enum lw_kind { LW_PRICE, LW_READY, LW_WARN, LW_EVICT, LW_HOUR, LW_TICK,
	       LW_END };

struct node {
	uint64_t id;
	struct world_req req;    /* what it was started for (no strings) */
	pid_t pid;               /* also the process group; 0 once a
				  * warned node ended and was reaped */
	int64_t warn_s, evict_s; /* market time; MARKET_NONE: none */
	bool warned;
	bool ready;              /* it reported ready (or its startup
				  * time passed) */
	int64_t mark0;           /* the owner's progress mark at its start */
	bool released;           /* the controller let it go: it is leaving
				  * and no longer reported */
	int64_t kill_ns;         /* released: monotonic instant its group is
				  * killed if still running (a released
				  * node's pid is > 0 until it is reaped) */
	/* it exited with status 0 on its own (pid 0 then): its work ended,
	 * and the job's end is near (the owner reads the last report
	 * after the exit): it is called lost only DONE_GRACE_NS later */
	int64_t done_ns;
	int done_status;
};

#define DONE_GRACE_NS (3 * (int64_t)1000000000)

struct lworld {
	struct world_setup s;    /* its pointers borrowed (world.h) */
	struct ctrl *c;
	struct evq q;
	struct node *v;
	size_t n, cap;
	int64_t mono0_ns;
	int64_t step_t;          /* the instant of the step running now */
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t w_now(const void *ctx)
{
	const struct lworld *w = ctx;
	double el = (double)(mono_ns() - w->mono0_ns) / 1e9 * w->s.speedup;

	return w->s.t0_s + (int64_t)floor(el);
}

/* Real ms from now until market instant t (0 when due). */
static int64_t real_ms_until(const struct lworld *w, int64_t t)
{
	double due_ns = (double)(t - w->s.t0_s) / w->s.speedup * 1e9;
	double left = due_ns - (double)(mono_ns() - w->mono0_ns);

	return left <= 0 ? 0 : (int64_t)ceil(left / 1e6);
}

static enum px_err push(struct lworld *w, int64_t t, enum lw_kind k,
			uint64_t id, struct px_error *err)
{
	return t > w->s.end_s ? PX_OK : evq_push(&w->q, t, k, id, err);
}

/* The node of id that the controller holds (not a released one). */
static struct node *find(const struct lworld *w, uint64_t id)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->v[i].id == id && !w->v[i].released)
			return &w->v[i];
	return NULL;
}

pid_t lworld_pgid(const void *w, uint64_t id)
{
	const struct node *nd = find(w, id);

	return nd ? nd->pid : -1;
}

/* Nodes the controller holds (a released node no longer counts). */
static size_t w_nodes(const void *ctx)
{
	const struct lworld *w = ctx;
	size_t k = 0;

	for (size_t i = 0; i < w->n; i++)
		k += !w->v[i].released;
	return k;
}

/* From now on a release kills at once, with no leave: the run is ending
 * (ctrl_finish), there is no work to hand over. */
static void w_end_leaves(void *ctx)
{
	((struct lworld *)ctx)->s.release_ms = 0;
}

/* How a node's process ended, from its waitpid status. */
static void ended_how(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d",
			 WEXITSTATUS(status));
	else
		snprintf(buf, len, "killed by signal %d",
			 WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* Nodes of this world that are processes now (held and leaving). */
static size_t w_host_load(const void *ctx)
{
	const struct lworld *w = ctx;
	size_t k = 0;

	for (size_t i = 0; i < w->n; i++)
		k += w->v[i].pid > 0;
	return k;
}

size_t lworld_leaving(const void *w)
{
	return ((const struct lworld *)w)->n - w_nodes(w);
}

/* "local-J-I-pgG": the job, the controller's id, the process group. */
static void w_cloud_id(const void *ctx, uint64_t id, char *buf, size_t len)
{
	const struct lworld *w = ctx;
	const struct node *nd = find(w, id);

	if (!nd) {
		snprintf(buf, len, "%s", "");
		return;
	}
	snprintf(buf, len, "local-%" PRId64 "-%" PRIu64 "-pg%d", w->s.job_id,
		 id, (int)nd->pid);
}

/* The process group in a cloud id "local-J-I-pgG" of an earlier life,
 * killed if it is still a trainer node (the parent watch should have
 * ended it already). */
static void w_end_orphan(const char *cloud_id)
{
	const char *p = strstr(cloud_id, "-pg");
	char path[64], cmd[256] = "";
	long g;
	FILE *f;

	if (!p || (g = strtol(p + 3, NULL, 10)) <= 1)
		return;
	snprintf(path, sizeof path, "/proc/%ld/cmdline", g);
	f = fopen(path, "r");
	if (!f)
		return;
	if (fread(cmd, 1, sizeof cmd - 1, f) > 0 &&
	    strstr(cmd, "proteus-trainer"))
		kill(-(pid_t)g, SIGKILL);
	fclose(f);
}

/* SIGKILL the node's process group, reap it, forget it. */
static void kill_node(struct lworld *w, struct node *nd)
{
	int st;

	if (nd->pid > 0) {
		kill(-nd->pid, SIGKILL);
		while (waitpid(nd->pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	*nd = w->v[--w->n];
}

static void free_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* posix_spawn argv (px_spawn: a process group of its own, every signal
 * unblocked and at its default; 0 /dev/null, 1 and 2 into log_path when
 * there is one, else ours; no other descriptor of ours) with the
 * allow-listed environment and env_add (px_spawn_env with flags). */
static enum px_err spawn(char **argv, char **env_add, unsigned flags,
			 const char *log_path, pid_t *ret,
			 struct px_error *err)
{
	posix_spawn_file_actions_t fa;
	char **envp;
	int rc;

	envp = px_spawn_env(env_add, flags);
	if (!envp)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (log_path) {
		posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY |
						 O_CREAT | O_APPEND, 0600);
		posix_spawn_file_actions_adddup2(&fa, 1, 2);
	}
	rc = px_spawn(ret, argv[0], &fa, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	free(envp);
	if (rc)
		return px_errorf(err, PX_ESYS | rc, "cannot start '%s': %s",
				 argv[0], strerror(rc));
	return PX_OK;
}

/* Start instance q's node: the owner's command for the place this world
 * gives it (the coordinator's and its own ipc:// addresses in the job's
 * directory). */
static enum px_err w_coordinator(const void *vw, char *buf, size_t len,
				 struct px_error *err)
{
	const struct lworld *w = vw;
	int n = snprintf(buf, len, "ipc://%s/n0", w->s.job_dir ?
			 w->s.job_dir : ".");

	if (n < 0 || (size_t)n >= len)
		return px_errorf(err, PX_ETOOBIG, "local world: job directory "
				 "too long for the coordinator's address");
	return PX_OK;
}

static enum px_err start_node(struct lworld *w, const struct world_req *q,
			      pid_t *ret, struct px_error *err)
{
	struct world_place pl;
	struct world_node nd = { NULL, NULL };
	enum px_err e = PX_OK;

	memset(&pl, 0, sizeof pl);
	if (w->s.job_dir) {
		int a = snprintf(pl.coord, sizeof pl.coord, "ipc://%s/n0",
				 w->s.job_dir);
		int b = snprintf(pl.listen, sizeof pl.listen,
				 "ipc://%s/i%" PRIu64, w->s.job_dir, q->id);

		if (a < 0 || (size_t)a >= sizeof pl.coord || b < 0 ||
		    (size_t)b >= sizeof pl.listen)
			return px_errorf(err, PX_ETOOBIG, "local world: job "
					 "directory '%s' too long for a node's "
					 "address", w->s.job_dir);
	}
	e = w->s.hooks.command(w->s.hooks.ctx, q, &pl, &nd, err);
	if (e == PX_OK)
		e = spawn(nd.argv, nd.env, w->s.hooks.spawn_env,
			  w->s.hooks.log_path, ret, err);
	free_strv(nd.argv);
	free_strv(nd.env);
	return e;
}

/* Tell node nd to leave within gone_ms real ms: its program (its group's
 * leader) gets SIGTERM with the time and the reason as the signal's value
 * and passes it to its roles; then the owner tells the rest. */
static void leave(struct lworld *w, const struct node *nd, int64_t gone_ms,
		  enum world_leave why)
{
	uint8_t reason = why == WORLD_LEAVE_RELEASE ? WIRE_LEAVE_RELEASE
						    : WIRE_LEAVE_EVICTION;
	union sigval v = { .sival_int = dist_leave_sigval(gone_ms, reason) };

	if (nd->pid > 0 && sigqueue(nd->pid, SIGTERM, v) != 0)
		kill(-nd->pid, SIGTERM);
	if (w->s.hooks.notice)
		w->s.hooks.notice(w->s.hooks.ctx, nd->id, gone_ms, why);
}

/* ---- world ops: the controller's half ---- */

static enum px_err w_acquire(void *ctx, const struct world_req *q,
			     struct px_error *err)
{
	struct lworld *w = ctx;
	struct node *nd;
	enum px_err e;
	pid_t pid;

	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 16;
		struct node *a = px_reallocarray(w->v, cap, sizeof *a);

		if (!a)
			return px_errorf(err, PX_ENOMEM, "out of memory");
		w->v = a;
		w->cap = cap;
	}
	if (w->s.hooks.room) {
		char why[256];

		if (!w->s.hooks.room(w->s.hooks.ctx, why, sizeof why))
			return ctrl_rejected(w->c, w->step_t, q->id, why) ==
			       PX_OK ? PX_OK : px_errorf(err, PX_EINVAL, "%s",
							 why);
	}
	e = start_node(w, q, &pid, err);
	if (e != PX_OK)
		return ctrl_rejected(w->c, w->step_t, q->id, err->msg) ==
		       PX_OK ? PX_OK : e;
	nd = &w->v[w->n++];
	memset(nd, 0, sizeof *nd);
	nd->id = q->id;
	nd->req = *q;
	nd->req.type_name = nd->req.zone = NULL;
	nd->pid = pid;
	nd->warn_s = nd->evict_s = MARKET_NONE;
	nd->mark0 = w->s.hooks.progress ?
		    w->s.hooks.progress(w->s.hooks.ctx) : 0;
	return PX_OK;
}

static enum px_err launched(struct lworld *w, const struct world_req *q,
			    int64_t t, struct px_error *err)
{
	const struct pol_env *env = w->s.env;
	struct node *nd = find(w, q->id);
	enum px_err e;

	if (!nd)
		return PX_OK;
	if (q->market >= 0)
		nd->warn_s = world_notice_at(env, &w->s.ms->v[
			env->markets[q->market].market], q->type, q->id, t,
			q->bid_uusd);
	if (!w->s.hooks.ready_on_report) {
		e = push(w, t + env->job->startup_seconds, LW_READY, q->id,
			 err);
		if (e != PX_OK)
			return e;
	}
	e = ctrl_launched(w->c, t, q->id);
	if (e != PX_OK)
		return px_errorf(err, e, "%s", ctrl_error(w->c)->msg);
	return nd->warn_s == MARKET_NONE ? PX_OK :
	       push(w, nd->warn_s, LW_WARN, q->id, err);
}

static enum px_err w_acquire_now(void *ctx, const struct world_req *q,
				 struct px_error *err)
{
	struct lworld *w = ctx;
	enum px_err e = w_acquire(ctx, q, err);

	/* a local process starts at once: confirm at the decision's instant
	 * (an event's, which may be a little behind the clock) */
	if (e == PX_OK && find(w, q->id))
		e = launched(w, q, w->step_t, err);
	return e;
}

/* A release is a leave: the node is told (unless an eviction notice
 * already told it), gets release_ms real ms to leave and end, then its
 * group is killed (reap).  Its roles hand their work over instead of
 * being declared lost. */
static enum px_err w_release(void *ctx, uint64_t id, struct px_error *err)
{
	struct lworld *w = ctx;
	struct node *nd = find(w, id);

	(void)err;
	if (!nd)
		return PX_OK;
	if (w->s.release_ms <= 0 || nd->pid <= 0) {
		kill_node(w, nd);
		return PX_OK;
	}
	if (!nd->warned)
		leave(w, nd, w->s.release_ms, WORLD_LEAVE_RELEASE);
	nd->released = true;
	nd->kill_ns = mono_ns() + w->s.release_ms * 1000000;
	return PX_OK;
}

static enum px_err w_timer(void *ctx, int64_t t, enum ctrl_timer_kind kind,
			   uint64_t id, struct px_error *err)
{
	(void)kind;
	return push(ctx, t, LW_HOUR, id, err);
}

/* ---- world ops: the daemon's half ---- */

static enum px_err w_create(const struct world_setup *s, void **ret,
			    struct px_error *err)
{
	struct lworld *w;

	if (!(s->speedup >= 1) || !isfinite(s->speedup))
		return px_errorf(err, PX_EINVAL, "local world: speedup %g: "
				 "must be a finite number >= 1", s->speedup);
	if (s->end_s <= s->t0_s)
		return px_errorf(err, PX_EINVAL, "local world: empty window");
	if (!s->hooks.command)
		return px_errorf(err, PX_EINVAL, "local world: no command");
	w = px_calloc(1, sizeof *w);
	if (!w)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	w->s = *s;
	w->mono0_ns = mono_ns();
	*ret = w;
	return PX_OK;
}

static void w_attach(void *ctx, struct ctrl *c)
{
	struct lworld *w = ctx;

	w->c = c;
	w->step_t = w->s.t0_s;
}

/* SIGKILL every process group still running and reap them. */
static void w_free(void *ctx)
{
	struct lworld *w = ctx;

	if (!w)
		return;
	while (w->n)
		kill_node(w, &w->v[w->n - 1]);
	free(w->v);
	evq_release(&w->q);
	free(w);
}

/* Real ms until the next event is due, or a released node's time to
 * leave is up (0: now; -1: none). */
static int64_t w_next_ms(const void *ctx)
{
	const struct lworld *w = ctx;
	int64_t ms = w->q.n ? real_ms_until(w, evq_top(&w->q)->t) : -1;
	int64_t now = mono_ns();

	for (size_t i = 0; i < w->n; i++) {
		int64_t d;

		if (!w->v[i].released)
			continue;
		d = w->v[i].kill_ns <= now ? 0 :
		    (w->v[i].kill_ns - now + 999999) / 1000000;
		if (ms < 0 || d < ms)
			ms = d;
	}
	return ms;
}

/* Start every live instance's command again (SIGKILL of its group, then
 * the command hook anew), as an instance's init would restart its
 * program: after the job's coordinator was restarted, the nodes must
 * register with the new one.  The instances and their bills go on. */
static enum px_err w_restart_nodes(void *ctx, struct px_error *err)
{
	struct lworld *w = ctx;
	enum px_err e = PX_OK;

	for (size_t i = 0; i < w->n && e == PX_OK;) {
		struct node *nd = &w->v[i];
		int st;

		if (nd->released) {   /* it was leaving the old coordinator */
			kill_node(w, nd);
			continue;
		}
		i++;
		if (nd->pid <= 0)
			continue;
		kill(-nd->pid, SIGKILL);
		while (waitpid(nd->pid, &st, 0) < 0 && errno == EINTR)
			;
		nd->pid = 0;
		e = start_node(w, &nd->req, &nd->pid, err);
	}
	return e;
}

/* The owner's readiness report for id (with ready_on_report). */
static enum px_err w_ready(void *ctx, uint64_t id, struct px_error *err)
{
	struct lworld *w = ctx;
	int64_t t = w_now(w);
	enum px_err e;

	struct node *nd = find(w, id);

	if (!nd)
		return PX_OK;
	nd->ready = true;
	e = ctrl_ready(w->c, t, id);
	return e == PX_OK ? PX_OK : px_errorf(err, e, "%s",
					      ctrl_error(w->c)->msg);
}

static enum px_err ctrl_err(struct lworld *w, enum px_err e,
			    struct px_error *err)
{
	return e == PX_OK ? e : px_errorf(err, e, "%s",
					  ctrl_error(w->c)->msg);
}

/* The first decision (POL_WHY_START) at t0, after queueing the first
 * price changes, the tick and the end of the run. */
static enum px_err w_start(void *ctx, const struct ctrl_progress *p,
			   struct px_error *err)
{
	struct lworld *w = ctx;
	const struct pol_env *env = w->s.env;
	int64_t t0 = w->s.t0_s, end = ctrl_end(w->c);
	enum px_err e = PX_OK;

	/* the order sim queues them in: prices, the tick, then what the
	 * first decision starts */
	for (size_t i = 0; (w->s.wants & POL_WHY_PRICE) &&
	     i < env->n_markets && e == PX_OK; i++)
		e = push(w, market_next_change(&w->s.ms->v[
				env->markets[i].market], t0),
			 LW_PRICE, i, err);
	if (e == PX_OK && w->s.tick_s > 0)
		e = push(w, t0 + w->s.tick_s, LW_TICK, 0, err);
	w->step_t = t0;
	if (e == PX_OK)
		e = ctrl_err(w, ctrl_step(w->c, t0, POL_WHY_START, p), err);
	if (e == PX_OK) {
		ctrl_take_changed(w->c);
		ctrl_cost(w->c, t0);
		e = evq_push(&w->q, end < w->s.end_s ? end : w->s.end_s,
			     LW_END, 0, err);
	}
	return e;
}

/* One event, through the shared event driver (world.h). */
static enum px_err handle(void *vw, const struct evq_ev *ev, unsigned *why,
			  struct px_error *err)
{
	struct lworld *w = vw;
	const struct pol_env *env = w->s.env;
	int64_t t = ev->t;
	struct node *nd;

	switch (ev->kind) {
	case LW_PRICE:
		*why |= POL_WHY_PRICE;
		return push(w, market_next_change(&w->s.ms->v[
				env->markets[ev->id].market], t),
			    LW_PRICE, ev->id, err);
	case LW_TICK:
		*why |= POL_WHY_TICK;
		return push(w, t + w->s.tick_s, LW_TICK, 0, err);
	case LW_HOUR:
		return ctrl_err(w, ctrl_timer(w->c, t, CTRL_TIMER_HOUR,
					      ev->id), err);
	case LW_END:
		return PX_OK;
	default:
		break;
	}
	nd = find(w, ev->id);
	if (!nd)
		return PX_OK;
	switch (ev->kind) {
	case LW_READY:
		nd->ready = true;
		return ctrl_err(w, ctrl_ready(w->c, t, ev->id), err);
	case LW_WARN:
		if (nd->warned || nd->warn_s != t)
			return PX_OK;
		if (env->warning_s <= 0) {
			kill_node(w, nd);
			return ctrl_err(w, ctrl_gone(w->c, t, ev->id,
						     "no warning"), err);
		}
		nd->warned = true;
		nd->evict_s = t + env->warning_s;
		leave(w, nd, real_ms_until(w, nd->evict_s),
		      WORLD_LEAVE_EVICTION);
		int64_t evict_s = nd->evict_s;
		enum px_err e = ctrl_err(w, ctrl_warned(w->c, t, ev->id,
							evict_s), err);
		return e != PX_OK ? e : push(w, evict_s, LW_EVICT, ev->id,
					     err);
	case LW_EVICT:
		if (nd->evict_s != t)
			return PX_OK;
		kill_node(w, nd);
		return ctrl_err(w, ctrl_gone(w->c, t, ev->id, "price above "
					     "bid or capacity"), err);
	default:
		return PX_OK;
	}
}

/* Node i (its process reaped with status st) is gone: "lost" once it
 * worked, else its own failure to start. */
static enum px_err gone(struct lworld *w, size_t i, int st, int64_t t,
			struct px_error *err)
{
	uint64_t id = w->v[i].id;
	/* it worked once the job moved on after its start */
	bool ready = w->s.hooks.progress ?
		     w->s.hooks.progress(w->s.hooks.ctx) > w->v[i].mark0 :
		     w->v[i].ready;
	char how[64], why[96];

	w->v[i] = w->v[--w->n];
	if (ready) {
		if (w->s.hooks.ended)
			w->s.hooks.ended(w->s.hooks.ctx, id);
		return ctrl_err(w, ctrl_gone(w->c, t, id, "lost"), err);
	}
	/* it never started: its own failure, not the market's; the owner
	 * counts it */
	ended_how(st, how, sizeof how);
	snprintf(why, sizeof why, "failed to start: %s", how);
	if (w->s.hooks.start_failed)
		w->s.hooks.start_failed(w->s.hooks.ctx, id, how);
	return ctrl_err(w, ctrl_failed(w->c, t, id, why), err);
}

/* Nodes that died on their own: gone, "lost" (the trainer recovers).  A
 * warned node that ended (its roles left in time) is the provider's
 * until the eviction instant: it stays on the books till then.  A
 * released node that ended, or whose time to leave is up, is forgotten
 * (its group killed): the controller is done with it.
 *
 * One that exited with status 0 ended its work: the job's end is near
 * (its last report may be read after the exit), so it stays on the books
 * for DONE_GRACE_NS, and is called lost only if the job goes on: else
 * every node of a job that ended was "lost" an instant before, and a
 * reliable one replaced, and billed, for nothing. */
static enum px_err reap(struct lworld *w, int64_t t, struct px_error *err)
{
	int64_t now = mono_ns();

	for (size_t i = 0; i < w->n;) {
		int st;
		pid_t p = w->v[i].pid > 0 ? waitpid(w->v[i].pid, &st, WNOHANG)
					  : 0;
		enum px_err e;

		if (w->v[i].released && (p == w->v[i].pid ||
					 now >= w->v[i].kill_ns)) {
			if (p == w->v[i].pid) {  /* reaped: its group only */
				kill(-w->v[i].pid, SIGKILL);
				w->v[i].pid = 0;
			}
			kill_node(w, &w->v[i]);
			continue;
		}
		if (w->v[i].done_ns && !w->v[i].released) {
			/* its work ended, and the job did not */
			if (now - w->v[i].done_ns < DONE_GRACE_NS) {
				i++;
				continue;
			}
			e = gone(w, i, w->v[i].done_status, t, err);
			if (e != PX_OK)
				return e;
			continue;
		}
		if (p <= 0 || p != w->v[i].pid) {
			i++;
			continue;
		}
		kill(-w->v[i].pid, SIGKILL);  /* what it left in its group */
		if (w->v[i].warned) {
			w->v[i].pid = 0;
			i++;
			continue;
		}
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			w->v[i].pid = 0;
			w->v[i].done_ns = now ? now : 1;
			w->v[i].done_status = st;
			i++;
			continue;
		}
		e = gone(w, i, st, t, err);
		if (e != PX_OK)
			return e;
	}
	return PX_OK;
}

/* Reap nodes that died (reported gone, "lost"; released ones are only
 * forgotten) and kill released nodes whose time to leave is up, then hand
 * every event due by now to the controller in order, each followed by
 * ctrl_step at its instant.  *ret_t is the market instant of the last
 * event handled (or now when none).  Stops early when a stop rule holds
 * (*ret_stop, an enum ctrl_stop). */
static enum px_err w_run_due(void *ctx, const struct ctrl_progress *p,
			     int64_t *ret_t, int *ret_stop,
			     struct px_error *err)
{
	struct lworld *w = ctx;
	int64_t now = w_now(w);
	const struct world_drive d = {
		.c = w->c, .q = &w->q, .w = w, .handle = handle,
		.step_t = &w->step_t,
	};
	enum px_err e;

	*ret_t = now;
	e = world_drive_due(&d, now, p, ret_t, ret_stop, err);
	if (e != PX_OK || *ret_stop != CTRL_RUN)
		return e;
	/* what the reaped nodes' ends start (a reliable one's replacement)
	 * happens now, not at the last event's instant */
	if (now > w->step_t)
		w->step_t = now;
	e = reap(w, now, err);
	/* the instant of the last event handled is the reap's when it
	 * reported one */
	if (ctrl_latest(w->c) > *ret_t)
		*ret_t = ctrl_latest(w->c);
	if (e == PX_OK && !*ret_stop)
		*ret_stop = ctrl_stop(w->c, *ret_t, p);
	return e;
}

/* The instances (node processes) this host runs at once, all jobs
 * together: the local_max_instances setting, else 8 per online CPU and
 * at most one per 256 MiB of memory, at least 2. */
static int64_t w_capacity(const struct proteusd_config *cfg)
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

/* Only EC2's instance metadata says a rebalance recommendation. */
static enum px_err w_spec_check(const struct job_world *w, const char *file,
				struct px_error *err)
{
	if (w->rebalance_leave)
		return px_errorf(err, PX_EINVAL, "%s: world.rebalance: only "
				 "the ec2 world hears rebalance "
				 "recommendations", file);
	return PX_OK;
}

const struct world_ops lworld_ops = {
	.name = "local",
	.acquire = w_acquire_now,
	.release = w_release,
	.timer = w_timer,
	.create = w_create,
	.attach = w_attach,
	.instances_outlive_daemon = false,
	.end_orphan = w_end_orphan,
	.start = w_start,
	.now = w_now,
	.next_ms = w_next_ms,
	.run_due = w_run_due,
	.ready = w_ready,
	.restart_nodes = w_restart_nodes,
	.end_leaves = w_end_leaves,
	.nodes = w_nodes,
	.host_load = w_host_load,
	.cloud_id = w_cloud_id,
	.bill_ends = NULL,
	.free_world = w_free,
	.coordinator = w_coordinator,
	.on_this_host = true,
	.spec_check = w_spec_check,
	.capacity = w_capacity,
};
