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
 */
#include "dist_node.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/log.h"

extern char **environ;

#define KILL_AFTER_MS 3000 /* a stopped role still there is SIGKILLed */

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
	/* the roles take their signals themselves: nothing blocked */
	sigemptyset(&none);
	posix_spawnattr_init(&at);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
	rc = posix_spawn(&r->pid, n->exe, NULL, &at, argv, n->envp);
	posix_spawnattr_destroy(&at);
	free(argv);
	if (rc)
		return px_errorf(err, PX_ESYS | rc, "cannot start %s %u: %s",
				 r->name, r->node, strerror(rc));
	return PX_OK;
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
			if (!kill_at && sig == SIGINT)
				kill_at = px_now_mono_us() +
					  KILL_AFTER_MS * 1000ull;
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
				kill_at = px_now_mono_us() +
					  KILL_AFTER_MS * 1000ull;
			}
		}
		if (kill_at && px_now_mono_us() >= kill_at) {
			signal_all(r, nr, SIGKILL, false, (union sigval){ 0 });
			kill_at = 0;
		}
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	free(n->envp);
	if (failed >= 0) {
		px_errorf(err, PX_EIO, "%s", why);
		return 1;
	}
	return code;
}
