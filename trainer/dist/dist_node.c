/* dist_node.c -- `proteus-trainer node`: the trainer roles of one
 * instance, started and watched together (dist_node.h).
 *
 * An instance of a job (a spot or on-demand EC2 instance, a process group
 * of the local world) runs one node program.  It starts its roles as
 * children in its own process group, forwards a SIGTERM (and the
 * sigqueue value that carries the milliseconds left before an eviction)
 * to each, and ends when they have: with 0 when every role ended well,
 * else 1 after stopping the others, so that the instance counts as lost
 * as a whole.  Signals are taken with sigtimedwait on a blocked set, so
 * there is no handler and nothing is missed between two waits.
 *
 * A spot node on EC2 polls its own interruption notice (imds): a thread
 * asks the instance metadata every few seconds and posts what it saw; the
 * supervisor's loop, which wakes every 50 ms, acts on it.  The IMDS calls
 * block (up to a second each when the service is slow or gone), which is
 * why they have a thread of their own: a signal to forward never waits
 * for them.
 */
#include "dist_node.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../cloudapi/imds.h"
#include "../../common/log.h"

extern char **environ;

#define KILL_AFTER_MS 3000 /* a stopped role still there is SIGKILLed */
#define IMDS_TIMEOUT_US 1000000 /* one IMDS call (on the poller's thread) */

struct role {
	const char *name;     /* "ps", "worker" */
	uint32_t node;
	pid_t pid;            /* 0 once reaped */
	int status;
};

enum px_err dist_node_addr(const char *base, uint32_t k, char *buf,
			   size_t len, struct px_error *err)
{
	int n;

	if (!strncmp(base, "tcp://", 6)) {
		size_t host;
		unsigned long port;
		enum px_err e = dist_tcp_port(base, 3ul * k + DIST_EP_MAX - 1,
					      &host, &port, err);

		if (e != PX_OK)
			return e;
		n = snprintf(buf, len, "%.*s:%lu", (int)host, base,
			     port + 3ul * k);
	} else if (!strncmp(base, "ipc://", 6) ||
		   !strncmp(base, "inproc://", 9)) {
		n = snprintf(buf, len, "%s-%u", base, k);
	} else {
		return px_errorf(err, PX_EINVAL, "--listen '%s': need tcp://, "
				 "ipc:// or inproc://", base);
	}
	if (n < 0 || (size_t)n >= len || (size_t)n > DIST_ADDR_MAX)
		return px_errorf(err, PX_ETOOBIG, "--listen '%s' too long",
				 base);
	return PX_OK;
}

/* argv of one role: exe role --node ID --listen ADDR [--reliable]
 * args...; NULL on OOM (the strings are in the caller's buffers). */
static char **role_argv(const char *exe, const char *role, const char *id,
			const char *addr, bool reliable,
			char *const *args)
{
	size_t n = 0, k = 0;
	char **v;

	while (args && args[n])
		n++;
	v = calloc(n + 8, sizeof *v);
	if (!v)
		return NULL;
	v[k++] = (char *)exe;
	v[k++] = (char *)role;
	v[k++] = "--node";
	v[k++] = (char *)id;
	v[k++] = "--listen";
	v[k++] = (char *)addr;
	if (reliable)
		v[k++] = "--reliable";
	for (size_t i = 0; i < n; i++)
		v[k++] = args[i];
	return v;
}

static enum px_err start_role(const struct dist_node *n, struct role *r,
			      uint32_t k, struct px_error *err)
{
	char id[16], addr[DIST_ADDR_MAX + 1];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none;
	char **argv;
	enum px_err e;
	int rc;

	e = dist_node_addr(n->listen, k, addr, sizeof addr, err);
	if (e != PX_OK)
		return e;
	snprintf(id, sizeof id, "%" PRIu32, r->node);
	argv = role_argv(n->exe, r->name, id, addr, n->reliable,
			 n->role_args);
	if (!argv)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	/* the roles take their signals themselves: nothing blocked; and
	 * they get our 0, 1 and 2 and no other descriptor of ours, with
	 * close-on-exec or not (as proteusd starts us: agent/spawnattr.h) */
	sigemptyset(&none);
	posix_spawnattr_init(&at);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
	posix_spawn_file_actions_init(&fa);
	rc = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	if (!rc)
		rc = posix_spawn(&r->pid, n->exe, &fa, &at, argv, n->envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	free(argv);
	if (rc)
		return px_errorf(err, PX_ESYS | rc, "cannot start %s %u: %s",
				 r->name, r->node, strerror(rc));
	return PX_OK;
}

/* SIGKILL what is left by at, or earlier if it was so already. */
static void kill_by(uint64_t *kill_at, uint64_t at)
{
	if (!*kill_at || at < *kill_at)
		*kill_at = at;
}

/* Send sig to every role still running, with value when it has one. */
static void signal_all(struct role *r, size_t n, int sig, bool queued,
		       union sigval v)
{
	for (size_t i = 0; i < n; i++) {
		if (r[i].pid <= 0)
			continue;
		if (!queued || sigqueue(r[i].pid, sig, v) != 0)
			kill(r[i].pid, sig);
	}
}

/* Reap what ended; the index of the first role that failed, or -1.  A
 * role told to stop (stopping) may end by that signal. */
static int reap(struct role *r, size_t n, size_t *running, int stopping)
{
	int failed = -1, st;
	pid_t pid;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (size_t i = 0; i < n; i++) {
			if (r[i].pid != pid)
				continue;
			r[i].pid = 0;
			r[i].status = st;
			(*running)--;
			if (stopping && WIFSIGNALED(st) &&
			    WTERMSIG(st) == stopping)
				continue;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				if (failed < 0)
					failed = (int)i;
			}
		}
	}
	return failed;
}

static void describe(const struct role *r, char *buf, size_t len)
{
	if (WIFEXITED(r->status))
		snprintf(buf, len, "%s %u exited with %d", r->name, r->node,
			 WEXITSTATUS(r->status));
	else
		snprintf(buf, len, "%s %u was killed by signal %d (%s)",
			 r->name, r->node, WTERMSIG(r->status),
			 strsignal(WTERMSIG(r->status)));
}

/* The roles' environment: ours, with a parent watch (DIST_PARENT_ENV)
 * naming this node, so that they die with it as it dies with its own
 * parent.  Pointers into environ and watch; free the array only. */
static char **role_env(char *watch, size_t len)
{
	size_t n = 0, k = 0;
	bool watched = false;
	char **v;

	while (environ[n])
		n++;
	v = calloc(n + 2, sizeof *v);
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(environ[i], DIST_PARENT_ENV "=",
			     sizeof(DIST_PARENT_ENV))) {
			watched = true;
			continue;
		}
		v[k++] = environ[i];
	}
	snprintf(watch, len, DIST_PARENT_ENV "=%ld", (long)getpid());
	if (watched)
		v[k++] = watch;
	return v;
}

static void nlog(const struct dist_node *n, enum log_level lvl,
		 const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void nlog(const struct dist_node *n, enum log_level lvl,
		 const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!n->log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	n->log(n->log_arg, lvl, buf);
}

/* ---- interruption notices (imds) ---- */

static double speedup(const struct dist_node *n)
{
	return n->clock_speedup > 1 ? (double)n->clock_speedup : 1;
}

/* left_ms (real) less the margin, which takes at most a quarter of it: a
 * short notice (120 s of a fake EC2's clock at 60x are 2 real s) still
 * leaves most of its time to the hand-off.  1 (at once) when past. */
static int64_t less_margin(const struct dist_node *n, double left_ms)
{
	double m = n->imds_margin_ms;

	if (!(left_ms > 1))             /* past, or NaN */
		return 1;
	if (m > left_ms / 4)
		m = left_ms / 4;
	left_ms -= m;
	if (left_ms > DIST_LEAVE_MS_MASK)
		left_ms = DIST_LEAVE_MS_MASK;
	return left_ms < 1 ? 1 : (int64_t)left_ms;
}

int64_t dist_node_notice_ms(const struct dist_node *n, int64_t notice_s,
			    int64_t now_us)
{
	double k = speedup(n), now = (double)now_us / 1e6;
	double t0 = (double)n->clock_origin_s;
	/* the notices' clock now: T0 + (now - T0) * K, the fake EC2's own
	 * formula (docs/ec2.md); on AWS, K = 1 and it is real time */
	double clock_now = k > 1 ? t0 + (now - t0) * k : now;

	return less_margin(n, ((double)notice_s - clock_now) / k * 1e3);
}

/* The poller and what it saw (under mu). */
struct watch {
	const struct dist_node *n;
	struct imds_client *c;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool running;             /* the thread was started */
	bool stop;
	bool action;              /* an interruption notice: act */
	struct imds_spot_action act;
	bool rebalance;           /* a rebalance recommendation: rebal_s */
	int64_t rebal_s;
	/* the supervisor's own (no lock) */
	bool acted;               /* the node leaves (a notice, a signal) */
	int64_t rebal_logged_s;   /* the recommendation last logged */
};

static void *watch_main(void *arg)
{
	struct watch *w = arg;
	const struct dist_node *n = w->n;
	/* 5 s of the notices' clock: a fake EC2's 2-minute notice at 60x
	 * is 2 real s, which a 5 real s poll would miss */
	uint32_t every = n->imds_poll_ms ? n->imds_poll_ms
		: (uint32_t)(DIST_NODE_IMDS_POLL_MS / speedup(n));
	bool failing = false;

	if (every < 50)
		every = 50;

	pthread_mutex_lock(&w->mu);
	while (!w->stop) {
		struct imds_spot_action a;
		struct px_error err = { 0 }, err2 = { 0 };
		bool has_a = false, has_r = false;
		int64_t r = 0;
		struct timespec until;
		enum px_err e, e2;

		pthread_mutex_unlock(&w->mu);
		e = imds_spot_action(w->c, &a, &has_a, &err);
		e2 = imds_rebalance(w->c, &r, &has_r, &err2);
		/* once a streak: an IMDS that is down (or a node that is not
		 * on EC2) would fill the log every few seconds */
		if ((e != PX_OK || e2 != PX_OK) && !failing)
			nlog(n, LOG_LVL_WARN, "imds: poll failed: %s (not "
			     "logged again until a poll works)",
			     e != PX_OK ? err.msg : err2.msg);
		else if (e == PX_OK && e2 == PX_OK && failing)
			nlog(n, LOG_LVL_NOTICE, "imds: polls work again");
		failing = e != PX_OK || e2 != PX_OK;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += every / 1000;
		until.tv_nsec += (long)(every % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&w->mu);
		if (e == PX_OK && has_a) {
			w->action = true;
			w->act = a;
		}
		if (e2 == PX_OK && has_r) {
			w->rebalance = true;
			w->rebal_s = r;
		}
		while (!w->stop && pthread_cond_timedwait(&w->cv, &w->mu,
							  &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* The client and the thread (after the signals are blocked: it inherits
 * the mask, so that they all come to the supervisor's sigtimedwait). */
static enum px_err watch_start(struct watch *w, const struct dist_node *n,
			       struct px_error *err)
{
	pthread_condattr_t ca;
	enum px_err e;
	int rc;

	memset(w, 0, sizeof *w);
	w->n = n;
	w->rebal_logged_s = INT64_MIN;
	if (!n->imds)
		return PX_OK;
	e = imds_client_new(NULL, IMDS_TIMEOUT_US, &w->c, err);
	if (e != PX_OK)
		return e;
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	rc = pthread_create(&w->th, NULL, watch_main, w);
	if (rc) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		imds_client_free(w->c);
		w->c = NULL;
		return px_errorf(err, PX_ESYS | rc, "imds poller: %s",
				 strerror(rc));
	}
	w->running = true;
	return PX_OK;
}

/* Stop polling: the thread ends after the call it is in, if any. */
static void watch_halt(struct watch *w)
{
	if (!w->running)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* ... and wait for it to end (at most the IMDS calls' timeouts). */
static void watch_stop(struct watch *w)
{
	if (!w->running)
		return;
	watch_halt(w);
	pthread_join(w->th, NULL);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	imds_client_free(w->c);
	w->c = NULL;
	w->running = false;
}

/* What the poller saw, acted on: a rebalance recommendation is logged
 * (once each), and an interruption notice (or, with leave_on_rebalance,
 * a recommendation) is every role's leave, once.  Returns the ms given
 * to the roles, or 0 for nothing to do; *reason says why. */
static int64_t watch_check(struct watch *w, uint8_t *reason)
{
	const struct dist_node *n = w->n;
	struct imds_spot_action a;
	bool has_a, has_r;
	int64_t r, ms, now = px_now_wall_us();
	char at[32];

	pthread_mutex_lock(&w->mu);
	has_a = w->action;
	a = w->act;
	has_r = w->rebalance;
	r = w->rebal_s;
	pthread_mutex_unlock(&w->mu);
	if (has_r && r != w->rebal_logged_s) {
		/* the observation, for whoever reads the node's log: the
		 * prefix is fixed (docs/trainer.md) */
		w->rebal_logged_s = r;
		nlog(n, LOG_LVL_NOTICE, "imds: rebalance recommendation at "
		     "%s%s", px_format_time(r, at, sizeof at),
		     w->acted ? "" : n->leave_on_rebalance ?
		     ": the roles leave" : ": no leave (no "
		     "--leave-on-rebalance)");
	}
	if (w->acted)
		return 0;
	if (has_a) {
		ms = dist_node_notice_ms(n, a.time_s, now);
		*reason = WIRE_LEAVE_EVICTION;
		nlog(n, LOG_LVL_NOTICE, "imds: spot interruption notice: %s "
		     "at %s: the roles leave within %.1f s", a.action,
		     px_format_time(a.time_s, at, sizeof at),
		     (double)ms / 1e3);
	} else if (has_r && n->leave_on_rebalance) {
		/* no deadline comes with it: as long as a notice gives */
		ms = less_margin(n, DIST_NODE_REBALANCE_S * 1e3 / speedup(n));
		*reason = WIRE_LEAVE_REBALANCE;
	} else {
		return 0;
	}
	w->acted = true;
	return ms;
}

int dist_node_run(const struct dist_node *cfg, struct px_error *err)
{
	struct dist_node node = *cfg, *n = &node;
	char watch[sizeof(DIST_PARENT_ENV) + 24];
	struct role r[1 + DIST_NODE_MAX_WORKERS];
	size_t nr = 0, running = 0;
	sigset_t set, old;
	int failed = -1, code = 0, stopping = 0;
	uint64_t kill_at = 0;
	char why[160] = "";
	struct watch w;
	enum px_err e = PX_OK;

	if (n->workers > DIST_NODE_MAX_WORKERS || (!n->ps && !n->workers)) {
		px_errorf(err, PX_EINVAL, "a node runs a PS and/or 1 to %d "
			  "workers", DIST_NODE_MAX_WORKERS);
		return 2;
	}
	n->envp = role_env(watch, sizeof watch);
	if (!n->envp) {
		px_errorf(err, PX_ENOMEM, "out of memory");
		return 1;
	}
	if (n->ps)
		r[nr++] = (struct role){ "ps", n->base, 0, 0 };
	for (uint32_t i = 0; i < n->workers; i++)
		r[nr++] = (struct role){ "worker", n->base + 1 + i, 0, 0 };
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, &old) != 0) {
		px_errorf(err, PX_ESYS | errno, "sigprocmask: %s",
			  strerror(errno));
		free(n->envp);
		return 1;
	}
	e = watch_start(&w, n, err);
	if (e != PX_OK) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		free(n->envp);
		return 1;
	}
	for (size_t i = 0; i < nr && e == PX_OK; i++) {
		e = start_role(n, &r[i], n->ps ? (uint32_t)i : (uint32_t)i + 1,
			       err);
		if (e == PX_OK)
			running++;
	}
	if (e != PX_OK) {
		code = 1;
		kill_at = px_now_mono_us() + KILL_AFTER_MS * 1000ull;
		signal_all(r, nr, SIGTERM, false, (union sigval){ 0 });
	}
	while (running) {
		struct timespec ts = { 0, 50 * 1000000L };
		siginfo_t si;
		int sig = sigtimedwait(&set, &si, &ts);
		int f;

		if (sig == SIGTERM || sig == SIGINT) {
			/* an eviction notice (sigqueue: the ms left) or a
			 * stop: every role gets it as it came */
			signal_all(r, nr, sig, si.si_code == SI_QUEUE,
				   si.si_value);
			stopping = sig;
			w.acted = true; /* a notice after it changes nothing */
			if (sig == SIGINT)
				kill_by(&kill_at, px_now_mono_us() +
					KILL_AFTER_MS * 1000ull);
		} else if (w.running && failed < 0 && e == PX_OK) {
			uint8_t reason = 0;
			int64_t ms = watch_check(&w, &reason);

			if (ms > 0) {
				/* as a local eviction: SIGTERM, the ms left
				 * and why; roles still there well past the
				 * time are killed (EC2 would) */
				signal_all(r, nr, SIGTERM, true, (union sigval){
					.sival_int = dist_leave_sigval(ms,
								       reason)
				});
				stopping = SIGTERM;
				kill_by(&kill_at, px_now_mono_us() +
					(uint64_t)(ms + KILL_AFTER_MS) * 1000);
				watch_halt(&w); /* joined at the end */
			}
		}
		f = reap(r, nr, &running, stopping);
		if (f >= 0 && failed < 0) {
			failed = f;
			describe(&r[f], why, sizeof why);
			if (running) {
				/* one role down takes the node down: the
				 * instance is lost as a whole */
				signal_all(r, nr, SIGTERM, false,
					   (union sigval){ 0 });
				kill_by(&kill_at, px_now_mono_us() +
					KILL_AFTER_MS * 1000ull);
			}
		}
		if (kill_at && px_now_mono_us() >= kill_at) {
			signal_all(r, nr, SIGKILL, false, (union sigval){ 0 });
			kill_at = 0;
		}
	}
	watch_stop(&w);
	sigprocmask(SIG_SETMASK, &old, NULL);
	free(n->envp);
	if (failed >= 0) {
		px_errorf(err, PX_EIO, "%s", why);
		return 1;
	}
	return code;
}
