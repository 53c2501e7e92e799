/* dist_local.c -- `proteus-trainer local`: a whole job on this host.  Acts
 * as the agent: draws the job key (RAND_bytes) and id, posix_spawns the
 * coordinator, PS nodes and workers (the key goes in the children's
 * environment, never argv), injects churn (SIGKILL / SIGTERM of workers,
 * SIGKILL of an ActivePS, SIGSTOP, roles added) with replacements, and
 * reaps everything.  The test faults are a table (struct fault: when, on
 * which role, what) made once from the options before the job's loop,
 * which runs each entry when it is due.
 *
 * Each role's stderr comes through a pipe that local copies to its own
 * line by line, keeping the role's last error line: a role that dies on
 * its own is noticed at once (SIGCHLD) and its error becomes the job's.
 * The sockets live in TMPDIR/pxtrainer.PID.XXXXXX, with an `owner` file
 * (pid, start time, pid namespace); a run removes its own at the end and
 * those of owners that are gone (a SIGKILLed local) at its start
 * (docs/trainer.md, "The socket directory").
 */
#include "dist_int.h"
#include "agent_chan.h"
#include "../io/ckpt.h"
#include "../compute/goodput.h"
#include "../compute/kern_cuda.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <openssl/rand.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define LOCAL_MAX_CHILDREN 256
#define LOCAL_MAX_ARGS 96
#define LOCAL_LINE_MAX 1280      /* a role's stderr line, bytes */
#define LOCAL_DIR_PREFIX "pxtrainer."
#define LOCAL_OWNER "owner"      /* the socket dir's owner file */
#define LOCAL_GRACE_US 3000000   /* no worker (or PS) left: fail after */
#define LOCAL_MAX_FAULTS 8       /* struct fault: faults_plan makes <= 7 */

enum child_kind { CH_COORD, CH_PS, CH_WORKER };

struct child {
	pid_t pid;               /* 0: reaped */
	enum child_kind kind;
	uint32_t node;
	bool reliable;
	bool stopped;            /* local signalled it on purpose */
	bool seen;               /* its end was looked at */
	uint64_t started_us;     /* monotonic */
	int status;              /* wait status once reaped */
	int errfd;               /* its stderr, read end; -1: at EOF */
	size_t nline;            /* bytes in line */
	char line[LOCAL_LINE_MAX];     /* its stderr line being read */
	char last_err[LOCAL_LINE_MAX]; /* its last error line ("" none) */
	bool err_tagged;         /* last_err is a logged error */
};

/* What a test fault does to the oldest live role of its kind (pick). */
enum fault_action {
	FA_KILL,  /* SIGKILL it and start another (a PS: transient) */
	FA_LEAVE, /* SIGTERM it (it leaves) and start another */
	FA_PAUSE, /* SIGSTOP it; SIGCONT `lasts` seconds later */
	FA_CHURN, /* a worker added, until churn_max work, then one
		     SIGKILLed (not replaced) until one is left, again */
	FA_ADD,   /* start one more: a worker, or a reliable PS */
};

/* One test fault: when, on which role, what; made once from the
 * options (faults_plan) before the loop, which runs each one due, in the
 * table's order.  Every time counts from the job's start. */
struct fault {
	enum fault_action action;
	enum child_kind role;
	double at;           /* due this many seconds after the start */
	int64_t at_clock;    /* or (> 0) once the job's clock reached it */
	bool timed;          /* due at next_us instead: first at `at` */
	double every;        /* timed: again this long after each; 0: once */
	double lasts;        /* FA_PAUSE: seconds stopped; <= 0: for good */
	/* where it stands */
	bool done;           /* an untimed one ran */
	uint64_t next_us;    /* timed: monotonic; 0: not again */
	struct child *held;  /* FA_PAUSE: the role stopped */
	uint64_t until_us;   /* FA_PAUSE: its SIGCONT */
	uint32_t churn_n;    /* FA_CHURN: workers now */
	bool churn_up;       /* FA_CHURN: adding, else removing */
};

struct local {
	const struct dist_opts *o;
	const struct dist_local *l;
	char dir[256];
	bool own_dir;
	char keyenv[2 * 32 + sizeof(DIST_KEY_ENV) + 2];
	char watchenv[40];       /* PX_PARENT_WATCH=<our pid> */
	char jobarg[24];
	char **envp;
	struct child ch[LOCAL_MAX_CHILDREN];
	uint32_t nch;
	uint32_t next_worker, next_ps;
	int ready[2];            /* pipe: the coordinator says "started" */
	/* the agent's end of PROGRESS */
	uint8_t key[32];         /* job key */
	uint64_t job;            /* job id */
	char agent_ep[DIST_ADDR_MAX + 1]; /* ipc://dir/agent.pull */
	struct agent_chan *ach;  /* PROGRESS inbox, handshake */
	bool registered;
	/* roles that died (killed, or failed): told to the coordinator
	 * at once (WIRE_CMD_GONE), one command at a time */
	uint32_t gone[LOCAL_MAX_CHILDREN];
	uint32_t n_gone;
	bool gone_out;           /* a GONE is on the wire */
	uint64_t progress_n;     /* PROGRESS frames received */
	int64_t last_clock;
	/* a role that ended on its own and left the job unable to go on */
	uint64_t fail_at;        /* monotonic us: fail then; 0: none */
	struct px_error fail;    /* why */
	int fail_rc;
	enum child_kind fail_kind;
	bool fail_late;          /* after the start (none of its kind left) */
	int64_t worker_index;    /* the initial worker spawn starts (its
				    --slow-worker-at periods), else -1 */
	/* the coordinator's own options */
	const char *resume;      /* --resume FILE, or NULL */
	char crash_at[24];       /* --fault-crash-at CLOCK, or "" */
	/* the test faults (struct fault), in the order they run */
	struct fault faults[LOCAL_MAX_FAULTS];
	uint32_t n_faults;
};

static volatile sig_atomic_t local_stop;

/* The role argument of each child_kind, also used in the logs. */
static const char *const role[] = { "coordinator", "ps", "worker" };

static void on_signal(int sig)
{
	(void)sig;
	local_stop = 1;
}

/* SIGCHLD only interrupts what the loop waits in (a handshake, a
 * receive), so that a role's death is looked at at once. */
static void on_child(int sig)
{
	(void)sig;
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		p += k;
		n -= (size_t)k;
	}
}

/* A whole line of a role's stderr: to ours, and remembered when it is
 * an error: "prog: error: text" or "<3>text" (the journal's form), else,
 * until one of those came, a line that says "error" (the dynamic
 * loader's, say). */
static void end_line(struct child *c)
{
	const char *t = NULL;
	char *l = c->line;
	bool tagged = true;

	if (l[c->nline - 1] != '\n')
		l[c->nline++] = '\n';
	write_all(2, l, c->nline);
	l[c->nline - 1] = 0;
	c->nline = 0;
	if ((t = strstr(l, ": error: ")))
		t += 9;
	else if (l[0] == '<' && l[1] >= '0' && l[1] <= '3' && l[2] == '>')
		t = l + 3;
	else if (!c->err_tagged && strstr(l, "error")) {
		t = l;
		tagged = false;
	}
	if (t && *t) {
		snprintf(c->last_err, sizeof(c->last_err), "%s", t);
		c->err_tagged |= tagged;
	}
}

/* What a role wrote to its stderr so far, line by line; at EOF (it is
 * gone) the pipe is closed. */
static void pump_child(struct child *c)
{
	char buf[4096];

	while (c->errfd >= 0) {
		ssize_t n = read(c->errfd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			if (c->nline)
				end_line(c);
			close(c->errfd);
			c->errfd = -1;
			return;
		}
		for (ssize_t i = 0; i < n; i++) {
			c->line[c->nline++] = buf[i];
			if (buf[i] == '\n' || c->nline == sizeof(c->line) - 1)
				end_line(c);
		}
	}
}

static enum px_err spawn(struct local *s, enum child_kind kind,
			 uint32_t node, bool reliable, struct px_error *err)
{
	char nodearg[16], listen[300], coord[300];
	char slow[DIST_SLOW_MAX][80];
	const char *argv[LOCAL_MAX_ARGS];
	posix_spawn_file_actions_t fa;
	struct child *c;
	size_t k = 0;
	pid_t pid;
	int r, efd[2];

	if (s->nch >= LOCAL_MAX_CHILDREN)
		return px_errorf(err, PX_ETOOBIG, "too many children");
	snprintf(nodearg, sizeof(nodearg), "%u", node);
	snprintf(coord, sizeof(coord), "ipc://%s/n0", s->dir);
	snprintf(listen, sizeof(listen), "ipc://%s/n%u", s->dir, node);
	argv[k++] = s->l->self;
	argv[k++] = role[kind];
	for (char *const *a = s->l->role_args; a && *a; a++) {
		if (k >= LOCAL_MAX_ARGS - 12)
			return px_errorf(err, PX_ETOOBIG, "too many options");
		argv[k++] = *a;
	}
	argv[k++] = "--node";
	argv[k++] = nodearg;
	argv[k++] = "--job";
	argv[k++] = s->jobarg;
	argv[k++] = "--coord";
	argv[k++] = coord;
	argv[k++] = "--listen";
	argv[k++] = listen;
	if (reliable)
		argv[k++] = "--reliable";
	/* --slow-worker-at: that worker's own test fault, its time from
	 * its first clock (the job's start, within a few ms) */
	for (uint32_t i = 0, n = 0; kind == CH_WORKER && s->worker_index >= 0 &&
				    i < s->l->n_slow; i++) {
		const struct dist_slow *sl = &s->l->slow[i];

		if (sl->worker != (uint64_t)s->worker_index)
			continue;
		if (k + 3 >= LOCAL_MAX_ARGS)
			return px_errorf(err, PX_ETOOBIG, "too many options");
		snprintf(slow[n], sizeof slow[n], "%.6g:%.6g:%.6g", sl->at,
			 sl->factor, sl->secs);
		argv[k++] = "--fault-slow";
		argv[k++] = slow[n++];
	}
	/* its stderr: a pipe whose read end (ours, non-blocking) no other
	 * child inherits; its end stays blocking */
	if (pipe2(efd, O_CLOEXEC) != 0)
		return px_errorf(err, PX_ESYS | errno, "pipe: %s",
				 strerror(errno));
	(void)fcntl(efd[0], F_SETFL, O_NONBLOCK);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, efd[1], 2);
	if (kind == CH_COORD) {
		/* the pipe's write end as fd 3 of the coordinator only */
		argv[k++] = "--ready-fd";
		argv[k++] = "3";
		argv[k++] = "--agent";
		argv[k++] = s->agent_ep;
		if (s->resume) {
			argv[k++] = "--resume";
			argv[k++] = s->resume;
		}
		if (s->crash_at[0]) {
			argv[k++] = "--fault-crash-at";
			argv[k++] = s->crash_at;
		}
		posix_spawn_file_actions_adddup2(&fa, s->ready[1], 3);
	}
	argv[k] = NULL;
	r = posix_spawn(&pid, s->l->self, &fa, NULL, (char **)argv, s->envp);
	posix_spawn_file_actions_destroy(&fa);
	close(efd[1]);
	if (r != 0) {
		close(efd[0]);
		return px_errorf(err, PX_ESYS | r, "spawn '%s': %s",
				 s->l->self, strerror(r));
	}
	c = &s->ch[s->nch++];
	c->pid = pid;
	c->kind = kind;
	c->node = node;
	c->reliable = reliable;
	c->started_us = px_now_mono_us();
	c->errfd = efd[0];
	dist_logf(s->o, LOG_LVL_DEBUG,
		  "started %s node %u (pid %d)", role[kind], node,
		  (int)pid);
	return PX_OK;
}

/* Reap the children that ended and copy out what they all wrote (all
 * of it for a reaped one: its pipe is at EOF).  A role that died (a
 * signal, or a failure: not a leave, which ends with 0 once its work is
 * handed over) is queued for the coordinator: gone now, not after its
 * heartbeat timeout. */
static void reap(struct local *s)
{
	for (uint32_t i = 0; i < s->nch; i++) {
		int st;

		if (s->ch[i].pid && waitpid(s->ch[i].pid, &st, WNOHANG) ==
					    s->ch[i].pid) {
			s->ch[i].pid = 0;
			s->ch[i].status = st;
			if (s->ch[i].kind != CH_COORD &&
			    (WIFSIGNALED(st) || WEXITSTATUS(st) != 0) &&
			    s->n_gone < LOCAL_MAX_CHILDREN)
				s->gone[s->n_gone++] = s->ch[i].node;
		}
		pump_child(&s->ch[i]);
	}
}

/* Tell the coordinator of the roles that died, one GONE at a time (its
 * answer taken without waiting).  Nothing before the agent registered:
 * a role that dies so early is not a member yet. */
static void tell_gone(struct local *s)
{
	struct px_error err;
	char detail[WIRE_STR_MAX + 1];
	uint32_t st;

	if (!s->registered)
		return;
	if (s->gone_out) {
		if (agent_chan_answer(s->ach, 0, &st, detail, sizeof detail,
				      &err) != PX_OK)
			return;
		s->gone_out = false;
		memmove(s->gone, s->gone + 1, --s->n_gone * sizeof *s->gone);
	}
	if (s->n_gone) {
		struct wire_command c = { .op = WIRE_CMD_GONE,
					  .node = { s->gone[0] } };

		if (agent_chan_send(s->ach, &c, &err) == PX_OK)
			s->gone_out = true;
	}
}

/* Signal a child on purpose: its end is then no failure. */
static void stop_child(struct child *c, int sig)
{
	c->stopped = true;
	kill(c->pid, sig);
}

static bool any_live(const struct local *s, enum child_kind kind)
{
	for (uint32_t i = 0; i < s->nch; i++)
		if (s->ch[i].pid && s->ch[i].kind == kind)
			return true;
	return false;
}

/* "exited with status 1", "was killed by signal 9 (Killed)" */
static void describe_end(int st, char *buf, size_t len)
{
	if (WIFEXITED(st))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
	else
		snprintf(buf, len, "was killed by signal %d (%s)",
			 WTERMSIG(st), strsignal(WTERMSIG(st)));
}

/* A PS or worker that ended on its own.  Before the job started, the
 * job cannot start without it: it fails at once.  After, the job goes
 * on without it (a lost node, docs/trainer.md), unless none of its kind
 * is left: then it fails LOCAL_GRACE_US later if none came back and the
 * coordinator has not ended by then (at the job's end the roles may go
 * first).  On a failure: true, the role's last error line (or how it
 * ended) in err, and *ret_rc its exit status when that is 1..3, else 1. */
static bool role_ended(struct local *s, bool started, int *ret_rc,
		       struct px_error *err)
{
	uint64_t now = px_now_mono_us();

	for (uint32_t i = 1; i < s->nch; i++) {
		struct child *c = &s->ch[i];
		int st = c->status;
		char how[80];

		if (c->pid || c->seen)
			continue;
		c->seen = true;
		if (c->stopped || (s->fail_at && !s->fail_late) ||
		    (started && WIFEXITED(st) && WEXITSTATUS(st) == 0))
			continue;
		describe_end(st, how, sizeof(how));
		if (started && any_live(s, c->kind)) {
			dist_logf(s->o, LOG_LVL_WARN,
				  "%s %u %s%s%s; the job goes on "
				  "without it", role[c->kind], c->node, how,
				  c->last_err[0] ? ": " : "", c->last_err);
			continue;
		}
		if (c->last_err[0])
			px_errorf(&s->fail, PX_EIO, "%s (%s %u %s %s)",
				  c->last_err, role[c->kind], c->node, how,
				  started ? "and none is left" :
					    "before the job started");
		else
			px_errorf(&s->fail, PX_EIO, "%s %u %s %s",
				  role[c->kind], c->node, how,
				  started ? "and none is left" :
					    "before the job started");
		s->fail_rc = WIFEXITED(st) && WEXITSTATUS(st) >= 1 &&
			     WEXITSTATUS(st) <= 3 ? WEXITSTATUS(st) : 1;
		s->fail_kind = c->kind;
		s->fail_late = started;
		s->fail_at = started ? now + LOCAL_GRACE_US : now;
	}
	if (!s->fail_at || now < s->fail_at)
		return false;
	if (s->fail_late && any_live(s, s->fail_kind)) { /* one came */
		s->fail_at = 0;
		return false;
	}
	*err = s->fail;
	*ret_rc = s->fail_rc;
	return true;
}

/* The oldest live child of a kind (for PS: a transient one). */
static struct child *pick(struct local *s, enum child_kind kind)
{
	for (uint32_t i = 0; i < s->nch; i++)
		if (s->ch[i].pid && s->ch[i].kind == kind &&
		    !(kind == CH_PS && s->ch[i].reliable))
			return &s->ch[i];
	return NULL;
}

static void kill_all(struct local *s)
{
	uint64_t until;

	for (uint32_t i = 0; i < s->nch; i++) {
		if (s->ch[i].pid) {
			stop_child(&s->ch[i], SIGTERM);
			kill(s->ch[i].pid, SIGCONT); /* a paused one */
		}
	}
	/* Wait on the children's stderr pipes (each reaches its end when
	 * its role exits) and SIGCHLD (which interrupts poll), not in
	 * sleeps. */
	until = px_now_mono_us() + 2000000;
	for (;;) {
		struct pollfd pf[LOCAL_MAX_CHILDREN];
		nfds_t n = 0;
		bool any = false;
		int ms;

		reap(s);
		for (uint32_t i = 0; i < s->nch; i++) {
			any |= s->ch[i].pid != 0;
			if (s->ch[i].pid && s->ch[i].errfd >= 0)
				pf[n++] = (struct pollfd){
					.fd = s->ch[i].errfd, .events = POLLIN };
		}
		ms = dist_ms_until(until, 100);
		if (!any || ms == 0)
			break;
		(void)poll(pf, n, ms);
	}
	for (uint32_t i = 0; i < s->nch; i++) {
		if (s->ch[i].pid) {
			kill(s->ch[i].pid, SIGKILL);
			waitpid(s->ch[i].pid, &s->ch[i].status, 0);
			s->ch[i].pid = 0;
		}
		pump_child(&s->ch[i]);
	}
}

static enum px_err make_env(struct local *s, struct px_error *err)
{
	uint8_t key[32], job[8];
	static const char hex[] = "0123456789abcdef";
	size_t n = 0, k = 0, off;
	uint64_t jid = 0;

	if (RAND_bytes(key, sizeof(key)) != 1 ||
	    RAND_bytes(job, sizeof(job)) != 1)
		return px_errorf(err, PX_EIO, "RAND_bytes failed");
	memcpy(s->key, key, sizeof(key));
	off = (size_t)snprintf(s->keyenv, sizeof(s->keyenv), "%s=",
			       DIST_KEY_ENV);
	for (size_t i = 0; i < sizeof(key); i++) {
		s->keyenv[off++] = hex[key[i] >> 4];
		s->keyenv[off++] = hex[key[i] & 15];
	}
	s->keyenv[off] = 0;
	memcpy(&jid, job, sizeof(jid));
	s->job = jid >> 1;
	snprintf(s->jobarg, sizeof(s->jobarg), "%llu",
		 (unsigned long long)s->job);
	while (environ[n])
		n++;
	s->envp = px_calloc(n + 3, sizeof(char *));
	if (!s->envp)
		return px_errorf(err, PX_ENOMEM, "environment");
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], DIST_KEY_ENV "=",
			    sizeof(DIST_KEY_ENV)) &&
		    strncmp(environ[i], DIST_PARENT_ENV "=",
			    sizeof(DIST_PARENT_ENV)))
			s->envp[k++] = environ[i];
	s->envp[k++] = s->keyenv;
	/* a role started after we died exits at once (PDEATHSIG is set
	 * only once it runs) */
	snprintf(s->watchenv, sizeof(s->watchenv), DIST_PARENT_ENV "=%ld",
		 (long)getpid());
	s->envp[k++] = s->watchenv;
	s->envp[k] = NULL;
	return PX_OK;
}

/* ---- the socket directory ---- */

/* The start time of process pid (clock ticks since boot, /proc/PID/stat
 * field 22): with the pid, it names one process for good. */
static bool proc_start(long pid, unsigned long long *ret)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the name may hold spaces and ')' */
	for (int f = 2; p && f < 22; f++)
		p = strchr(p + 1, ' ');
	return p && sscanf(p + 1, "%llu", ret) == 1;
}

/* Our pid namespace (its inode): pids mean something only in one. */
static unsigned long long pid_ns(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)
							st.st_ino : 0;
}

/* Whether a name is one local makes in its socket dir. */
static bool own_file(const char *n)
{
	const char *dot;

	if (!strcmp(n, LOCAL_OWNER) || !strcmp(n, "agent.pull"))
		return true;
	if (n[0] != 'n' || n[1] < '0' || n[1] > '9')
		return false;
	dot = n + 1 + strspn(n + 1, "0123456789");
	return !strcmp(dot, ".rep") || !strcmp(dot, ".pull") ||
	       !strcmp(dot, ".pub");
}

/* Remove a socket dir (name under dirfd at): the files local makes
 * there, then the dir itself, which fails (and stays) if anything else
 * is in it.  Never follows a link. */
static void remove_dir(int at, const char *name)
{
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				  O_CLOEXEC);
	struct dirent *e;
	DIR *d;

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((e = readdir(d)))
		if (own_file(e->d_name))
			(void)unlinkat(fd, e->d_name, 0);
	closedir(d);
	(void)unlinkat(at, name, AT_REMOVEDIR);
}

/* Whether the local that made dir `name` (pid in its name) may still
 * run.  The owner file, when there, tells a recycled pid (another start
 * time) and another pid namespace (then we cannot tell: yes). */
static bool owner_alive(int at, const char *name, long pid)
{
	unsigned long long start, ns, now;
	char path[300], buf[128];
	long opid;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/" LOCAL_OWNER, name);
	fd = openat(at, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n > 0) {
		buf[n] = 0;
		if (sscanf(buf, "%ld %llu %llu", &opid, &start, &ns) == 3 &&
		    opid == pid) {
			if (ns != pid_ns())
				return true;
			return proc_start(pid, &now) && now == start;
		}
	}
	/* no owner file yet (or a foreign one): the pid alone */
	return kill((pid_t)pid, 0) == 0 || errno != ESRCH;
}

/* Remove the socket dirs under base whose local is gone (SIGKILLed: it
 * could not clean up; its roles died with it).  Only ours (our uid),
 * only dirs named pxtrainer.PID.XXXXXX. */
static void sweep_stale(const struct dist_opts *o, const char *base)
{
	DIR *d = opendir(base);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		const char *n = e->d_name;
		struct stat st;
		char *end;
		long pid;

		if (strncmp(n, LOCAL_DIR_PREFIX, sizeof(LOCAL_DIR_PREFIX) - 1))
			continue;
		errno = 0;
		pid = strtol(n + sizeof(LOCAL_DIR_PREFIX) - 1, &end, 10);
		if (errno || pid <= 1 || end == n + sizeof(LOCAL_DIR_PREFIX) -
						 1 || *end != '.' ||
		    strlen(end + 1) != 6 || pid == (long)getpid())
			continue;
		if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
		    owner_alive(dirfd(d), n, pid))
			continue;
		dist_logf(o, LOG_LVL_DEBUG,
			  "removing '%s/%s': its local (pid %ld) is "
			  "gone", base, n, pid);
		remove_dir(dirfd(d), n);
	}
	closedir(d);
}

/* A private socket dir TMPDIR/pxtrainer.PID.XXXXXX (mode 0700), with
 * its owner file, after removing stale ones. */
static enum px_err make_dir(struct local *s, struct px_error *err)
{
	const char *t = getenv("TMPDIR");
	const char *base = t && *t ? t : "/tmp";
	unsigned long long start = 0;
	char path[300], line[96];
	int fd, n;

	sweep_stale(s->o, base);
	n = snprintf(s->dir, sizeof(s->dir), "%s/" LOCAL_DIR_PREFIX
		     "%ld.XXXXXX", base, (long)getpid());
	if (n < 0 || (size_t)n >= sizeof(s->dir) - 32)
		return px_errorf(err, PX_ETOOBIG, "TMPDIR '%s' too long",
				 base);
	if (!mkdtemp(s->dir))
		return px_errorf(err, PX_ESYS | errno, "mkdtemp '%s': %s",
				 s->dir, strerror(errno));
	s->own_dir = true;
	(void)proc_start(getpid(), &start);
	snprintf(path, sizeof(path), "%s/" LOCAL_OWNER, s->dir);
	n = snprintf(line, sizeof(line), "%ld %llu %llu\n", (long)getpid(),
		     start, pid_ns());
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0)
		return px_errorf(err, PX_ESYS | errno, "create '%s': %s",
				 path, strerror(errno));
	write_all(fd, line, (size_t)n);
	close(fd);
	return PX_OK;
}

/* The agent's sockets: a PULL for PROGRESS (bound before the
 * coordinator starts) and a REQ to the coordinator for the handshake. */
static enum px_err agent_open(struct local *s, struct px_error *err)
{
	char coord[300];
	struct agent_chan_setup as = {
		.agent_ep = s->agent_ep, .coord = coord, .job = s->job,
		.key = s->key, .key_len = sizeof(s->key),
	};
	int n = snprintf(s->agent_ep, sizeof(s->agent_ep),
			 "ipc://%s/agent.pull", s->dir);

	if (n < 0 || (size_t)n >= sizeof(s->agent_ep))
		return px_errorf(err, PX_ETOOBIG, "socket dir '%s' too long",
				 s->dir);
	snprintf(coord, sizeof(coord), "ipc://%s/n0", s->dir);
	return agent_chan_open(&as, &s->ach, err);
}

/* One handshake attempt with the coordinator (it may not be up yet). */
static void agent_register(struct local *s)
{
	struct px_error err;
	enum px_err e = agent_chan_register(s->ach, "local", 1000, &err);

	if (e == PX_OK)
		s->registered = true;
	else if (e == PX_EPROTO)
		dist_logf(s->o, LOG_LVL_WARN, "agent: coordinator refused the "
			  "registration");
}

/* Print the PROGRESS frames that came in within ms. */
static void agent_poll(struct local *s, int ms)
{
	struct px_error err;
	struct wire_msg m;

	while (agent_chan_progress(s->ach, ms, &m, &err) == PX_OK) {
		const struct wire_progress *p = &m.u.progress;
		uint32_t nw = 0, nps = 0;
		char ev[80], slow[160] = "", gp[160] = "", phi[32];
		size_t k = 0;

		ms = 0;
		for (uint32_t i = 0; i < p->n; i++) {
			const struct wire_member *w = &p->members[i];

			if (w->state != WIRE_MEMBER_ACTIVE &&
			    w->state != WIRE_MEMBER_JOINING)
				continue;
			if (w->slow && k + 40 < sizeof slow)
				k += (size_t)snprintf(slow + k, sizeof slow - k,
						      "%s worker %u at %.1f "
						      "minibatches/s", k ? ","
						      : ", slow:", w->node.v,
						      (double)w->speed);
			if (w->roles & WIRE_ROLE_WORKER)
				nw++;
			else
				nps++;
		}
		s->progress_n++;
		s->last_clock = p->clock;
		if (s->o->train.model == MODEL_MF && isnan(p->loss))
			snprintf(ev, sizeof(ev), "test: not evaluated yet");
		else if (s->o->train.model == MODEL_MF)
			snprintf(ev, sizeof(ev), "train RMSE %.4f, test RMSE "
				 "%.4f", (double)p->train_rmse,
				 (double)p->loss);
		else
			dist_fmt_eval(ev, sizeof(ev), p->loss, p->accuracy);
		if (p->noise_scale > 0)
			snprintf(gp, sizeof gp, ", goodput %.0f samples/s "
				 "(efficiency %.3f, noise scale %s, batch "
				 "%u, lr x%.3f)", (double)p->goodput,
				 (double)p->efficiency,
				 gns_format(p->noise_scale, phi, sizeof phi),
				 p->batch,
				 (double)p->lr_scale);
		if (s->o->json)
			dist_logf(s->o, LOG_LVL_INFO,
				  "progress: clock %" PRId64 ", %.0f "
				  "samples/s, %s, %u workers, %u PS, "
				  "membership epoch %" PRIu64 "%s%s", p->clock,
				  (double)p->samples_per_s, ev, nw, nps,
				  p->epoch, slow, gp);
		else
			printf("progress: clock %" PRId64 ", %.0f samples/s, "
			       "%s, %u workers, %u PS, membership epoch %"
			       PRIu64 "%s%s\n", p->clock,
			       (double)p->samples_per_s, ev, nw, nps,
			       p->epoch, slow, gp);
		fflush(stdout);
		wire_msg_release(&m);
	}
}

/* ---- the test faults (--kill-worker-every ... --add-ps-at) ---- */

/* The test faults of l, in the order the loop runs them. */
static uint32_t faults_plan(const struct dist_opts *o,
			    const struct dist_local *l, struct fault *f)
{
	uint32_t n = 0;

	if (l->kill_worker_every > 0 || l->kill_worker_at > 0)
		f[n++] = (struct fault){
			.action = FA_KILL, .role = CH_WORKER, .timed = true,
			.at = l->kill_worker_every > 0 ? l->kill_worker_every
						       : l->kill_worker_at,
			.every = l->kill_worker_every };
	if (l->kill_ps_at > 0 || l->kill_ps_at_clock)
		f[n++] = (struct fault){
			.action = FA_KILL, .role = CH_PS, .at = l->kill_ps_at,
			.at_clock = (int64_t)l->kill_ps_at_clock };
	if (l->leave_worker_at > 0)
		f[n++] = (struct fault){ .action = FA_LEAVE, .role = CH_WORKER,
					 .at = l->leave_worker_at };
	if (l->pause_worker_at > 0 || l->pause_ps_at > 0)
		f[n++] = (struct fault){
			.action = FA_PAUSE, .lasts = l->pause_for,
			.role = l->pause_worker_at > 0 ? CH_WORKER : CH_PS,
			.at = l->pause_worker_at > 0 ? l->pause_worker_at
						     : l->pause_ps_at };
	if (l->churn_every > 0)
		f[n++] = (struct fault){
			.action = FA_CHURN, .role = CH_WORKER, .timed = true,
			.at = l->churn_every, .every = l->churn_every,
			.churn_n = o->workers, .churn_up = true };
	if (l->add_worker_at > 0)
		f[n++] = (struct fault){ .action = FA_ADD, .role = CH_WORKER,
					 .at = l->add_worker_at };
	if (l->add_ps_at > 0)
		f[n++] = (struct fault){ .action = FA_ADD, .role = CH_PS,
					 .at = l->add_ps_at };
	return n;
}

/* The timed faults' first times, once the job started at t0. */
static void faults_start(struct local *s, uint64_t t0)
{
	for (uint32_t i = 0; i < s->n_faults; i++)
		if (s->faults[i].timed)
			s->faults[i].next_us = t0 + (uint64_t)(
				s->faults[i].at * 1e6);
}

static bool fault_due(const struct local *s, const struct fault *f,
		      uint64_t now, double el)
{
	if (f->held)
		return now >= f->until_us;
	if (f->timed)
		return f->next_us && now >= f->next_us;
	return !f->done && ((f->at > 0 && el >= f->at) ||
			    (f->at_clock && s->last_clock >= f->at_clock));
}

/* One more role of a kind, with the next node id of that kind. */
static enum px_err spawn_next(struct local *s, enum child_kind kind,
			      bool reliable, struct px_error *err)
{
	return kind == CH_PS ? spawn(s, CH_PS, s->next_ps++, reliable, err)
			     : spawn(s, CH_WORKER, s->next_worker++, reliable,
				     err);
}

/* FA_PAUSE: the role stopped when due, and started again when its time
 * came (the same turn, for a pause too short to wait). */
static void fault_pause(struct local *s, struct fault *f, uint64_t now,
			double el)
{
	if (!f->done && !f->held) {
		f->held = pick(s, f->role);
		if (f->held) { /* else: again next turn */
			dist_logf(s->o, LOG_LVL_INFO, "churn: SIGSTOP %s %u at "
				  "%.1f s", role[f->role], f->held->node, el);
			kill(f->held->pid, SIGSTOP);
			f->until_us = f->lasts > 0
				? now + (uint64_t)(f->lasts * 1e6) : UINT64_MAX;
			f->done = true;
		}
	}
	if (f->held && now >= f->until_us) {
		if (f->held->pid) {
			dist_logf(s->o, LOG_LVL_INFO, "churn: SIGCONT %s %u",
				  role[f->role], f->held->node);
			kill(f->held->pid, SIGCONT);
		}
		f->held = NULL;
	}
}

/* FA_CHURN: one step up (a worker added) or down (one SIGKILLed). */
static enum px_err fault_churn(struct local *s, struct fault *f,
			       uint64_t now, double el, struct px_error *err)
{
	struct child *c;
	enum px_err e;

	f->next_us = now + (uint64_t)(f->every * 1e6);
	f->churn_up = f->churn_n <= 1 ||
		      (f->churn_up && f->churn_n < s->l->churn_max);
	c = f->churn_up ? NULL : pick(s, CH_WORKER);
	if (c) {
		dist_logf(s->o, LOG_LVL_INFO, "churn: SIGKILL worker %u at "
			  "%.1f s", c->node, el);
		stop_child(c, SIGKILL);
		f->churn_n--;
		return PX_OK;
	}
	if (!f->churn_up)
		return PX_OK;
	dist_logf(s->o, LOG_LVL_INFO, "churn: adding worker %u at %.1f s",
		  s->next_worker, el);
	e = spawn_next(s, CH_WORKER, false, err);
	if (e == PX_OK)
		f->churn_n++;
	return e;
}

/* Run fault f, due now (el seconds into the job). */
static enum px_err fault_run(struct local *s, struct fault *f, uint64_t now,
			     double el, struct px_error *err)
{
	struct child *c;

	switch (f->action) {
	case FA_KILL:
	case FA_LEAVE:
		if (f->timed)
			f->next_us = f->every > 0
				? now + (uint64_t)(f->every * 1e6) : 0;
		f->done = true;
		c = pick(s, f->role);
		if (!c)
			return PX_OK;
		dist_logf(s->o, LOG_LVL_INFO, "churn: %s %s %u at %.1f s",
			  f->action == FA_KILL ? "SIGKILL" : "SIGTERM",
			  role[f->role], c->node, el);
		stop_child(c, f->action == FA_KILL ? SIGKILL : SIGTERM);
		return spawn_next(s, f->role, false, err);
	case FA_PAUSE:
		fault_pause(s, f, now, el);
		return PX_OK;
	case FA_CHURN:
		return fault_churn(s, f, now, el, err);
	case FA_ADD:
		f->done = true;
		dist_logf(s->o, LOG_LVL_INFO, f->role == CH_PS
			  ? "adding reliable PS %u at %.1f s"
			  : "adding worker %u at %.1f s", f->role == CH_PS
			  ? s->next_ps : s->next_worker, el);
		return spawn_next(s, f->role, f->role == CH_PS, err);
	}
	return PX_OK;
}

/* Every fault due now, in order; a role that cannot be started ends the
 * job (the error in err). */
static enum px_err faults_run(struct local *s, uint64_t now, double el,
			      struct px_error *err)
{
	for (uint32_t i = 0; i < s->n_faults; i++) {
		struct fault *f = &s->faults[i];

		enum px_err e = fault_due(s, f, now, el)
				? fault_run(s, f, now, el, err) : PX_OK;

		if (e != PX_OK)
			return e;
	}
	return PX_OK;
}

/* ---- one attempt of the job ---- */

/* The handlers run_once installs, and the ones it puts back. */
struct saved_signals {
	struct sigaction intr, term, chld;
};

/* SIGINT and SIGTERM stop the job (local_stop); SIGCHLD cuts short
 * what the loop waits in. */
static void take_signals(struct saved_signals *old)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, &old->intr);
	sigaction(SIGTERM, &sa, &old->term);
	sa.sa_handler = on_child;
	sa.sa_flags = SA_NOCLDSTOP | SA_RESTART;
	sigaction(SIGCHLD, &sa, &old->chld);
}

static void put_back_signals(const struct saved_signals *old)
{
	sigaction(SIGINT, &old->intr, NULL);
	sigaction(SIGTERM, &old->term, NULL);
	sigaction(SIGCHLD, &old->chld, NULL);
}

/* The socket dir, the children's environment and the ready pipe. */
static enum px_err prepare(struct local *s, struct px_error *err)
{
	enum px_err e;

	if (s->l->dir) {
		snprintf(s->dir, sizeof(s->dir), "%s", s->l->dir);
	} else {
		e = make_dir(s, err);
		if (e != PX_OK)
			return e;
	}
	e = make_env(s, err);
	if (e != PX_OK)
		return e;
	if (pipe2(s->ready, O_CLOEXEC | O_NONBLOCK) != 0)
		return px_errorf(err, PX_ESYS | errno, "pipe: %s",
				 strerror(errno));
	return PX_OK;
}

/* The agent's sockets, then the coordinator, the PS nodes (the first
 * l->reliable of them reliable) and the workers. */
static enum px_err start_roles(struct local *s, struct px_error *err)
{
	enum px_err e = agent_open(s, err);

	if (e == PX_OK)
		e = spawn(s, CH_COORD, DIST_COORD_NODE, false, err);
	for (uint32_t i = 0; e == PX_OK && i < s->o->ps; i++)
		e = spawn(s, CH_PS, 1 + i, i < s->l->reliable, err);
	s->next_ps = 1 + s->o->ps;
	s->next_worker = 1000;
	for (uint32_t i = 0; e == PX_OK && i < s->o->workers; i++) {
		s->worker_index = i;
		e = spawn(s, CH_WORKER, s->next_worker++, false, err);
	}
	s->worker_index = -1;
	if (e != PX_OK)
		return e;
	close(s->ready[1]);
	s->ready[1] = -1;
	return PX_OK;
}

/* Whether the job is over: the coordinator ended (its exit status, 128
 * + N when killed by signal N), a role ended and left it unable to go
 * on, an interrupt (130) or --timeout past t_begin (124); *rc then. */
static bool job_over(struct local *s, bool started, uint64_t now,
		     uint64_t t_begin, int *rc, struct px_error *err)
{
	if (!s->ch[0].pid) {
		int st = s->ch[0].status;

		agent_poll(s, 0); /* the last PROGRESS */

		*rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 +
		      (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
		if (WIFSIGNALED(st))
			px_errorf(err, PX_EIO, "the coordinator was killed by "
				  "signal %d (%s)", WTERMSIG(st),
				  strsignal(WTERMSIG(st)));
		else if (*rc != 0)
			/* its own words, last, after the noise of the
			 * others stopping */
			px_errorf(err, PX_EIO, "%s", s->ch[0].last_err[0]
				  ? s->ch[0].last_err
				  : "the coordinator failed");
		return true;
	}
	if (role_ended(s, started, rc, err))
		return true;
	if (local_stop) {
		px_errorf(err, PX_ECANCELED, "interrupted");
		*rc = 130;
		return true;
	}
	if (s->l->timeout_s > 0 &&
	    (double)(now - t_begin) / 1e6 > s->l->timeout_s) {
		px_errorf(err, PX_ETIMEDOUT, "job ran past %.0f s",
			  s->l->timeout_s);
		*rc = 124;
		return true;
	}
	return false;
}

/* The job watched until it is over: the roles' output and ends, the
 * test faults once it started (the coordinator's ready pipe), the
 * agent's channel.  The exit status (1: a role could not start). */
static int watch(struct local *s, uint64_t t_begin, struct px_error *err)
{
	uint64_t t0 = t_begin;
	bool started = false;
	int rc = 1;

	for (;;) {
		uint64_t now = px_now_mono_us();
		double el = (double)(now - t0) / 1e6;
		char b;

		reap(s);
		if (!started && read(s->ready[0], &b, 1) == 1) {
			/* churn times count from the job's start */
			started = true;
			t0 = now;
			el = 0;
			faults_start(s, t0);
		}
		if (job_over(s, started, now, t_begin, &rc, err))
			break;
		if (started && faults_run(s, now, el, err) != PX_OK)
			break;
		if (!s->registered)
			agent_register(s);
		tell_gone(s);
		agent_poll(s, 10);
	}
	return rc;
}

/* What run_once made, closed and freed (s too). */
static void release(struct local *s)
{
	for (uint32_t i = 0; i < s->nch; i++)
		if (s->ch[i].errfd >= 0)
			close(s->ch[i].errfd);
	if (s->own_dir)
		remove_dir(AT_FDCWD, s->dir);
	if (s->ready[0] >= 0)
		close(s->ready[0]);
	if (s->ready[1] >= 0)
		close(s->ready[1]);
	if (s->ach)
		dist_logf(s->o, LOG_LVL_DEBUG,
			  "agent: %" PRIu64 " progress reports, last "
			  "clock %" PRId64, s->progress_n, s->last_clock);
	agent_chan_close(s->ach);
	free(s->envp);
	free(s);
}

/* One attempt of the job: its dir and environment, our signal handlers
 * (put back after), the roles started and watched, every one stopped and
 * reaped.  The exit status (dist_local_run). */
static int run_once(const struct dist_opts *o, const struct dist_local *l,
		    const char *resume, int64_t crash_at,
		    struct px_error *err)
{
	uint64_t t_begin = px_now_mono_us();
	struct local *s = px_calloc(1, sizeof(*s));
	struct saved_signals old;
	int rc = 1;

	if (!s) {
		px_errorf(err, PX_ENOMEM, "launcher");
		return 1;
	}
	s->o = o;
	s->l = l;
	s->resume = resume;
	if (crash_at)
		snprintf(s->crash_at, sizeof(s->crash_at), "%lld",
			 (long long)crash_at);
	s->ready[0] = s->ready[1] = -1;
	s->n_faults = faults_plan(o, l, s->faults);
	if (prepare(s, err) == PX_OK) {
		take_signals(&old);
		if (start_roles(s, err) == PX_OK)
			rc = watch(s, t_begin, err);
		kill_all(s);
		put_back_signals(&old);
	}
	release(s);
	return rc;
}

/* Whether a failed attempt that began at start_s (Unix seconds) left a
 * checkpoint to go on from: written since, readable, not finished. */
static bool resumable(const struct dist_opts *o, int64_t start_s,
		      int64_t *ret_clock)
{
	struct ckpt_meta m;
	struct px_error err;
	float *w, *v;
	struct stat st;

	if (!o->checkpoint || stat(o->checkpoint, &st) != 0 ||
	    st.st_mtim.tv_sec < start_s)
		return false;
	if (ckpt_read(o->checkpoint, &m, &w, &v, &err) != PX_OK) {
		dist_logf(o, LOG_LVL_WARN, "no restart: %s", err.msg);
		return false;
	}
	free(w);
	free(v);
	data_prep_release(&m.prep);
	*ret_clock = m.clock;
	return m.clock < m.total;
}

int dist_local_run(const struct dist_opts *o, const struct dist_local *l,
		   struct px_error *err)
{
	struct dist_local cur = *l;
	const char *resume = o->resume;
	int64_t crash_at = o->fault_crash_at;

	/* Workers without CUDA would exit at once and the job wait for
	 * them: no role starts unless the library loads and sees a GPU. */
	if (o->train.device == TRAIN_DEV_CUDA && kern_cuda_check(err) != PX_OK)
		return 1;
	for (uint32_t attempt = 0;; attempt++) {
		int64_t start_s = px_now_wall_us() / 1000000, clock = 0;
		int rc = run_once(o, &cur, resume, crash_at, err);

		/* not for a bad command line or bad input: no use */
		if (rc == 0 || rc == 2 || rc == 3 || rc == 124 || rc == 130 ||
		    local_stop ||
		    attempt >= l->max_restarts ||
		    !resumable(o, start_s, &clock))
			return rc;
		dist_logf(o, LOG_LVL_WARN,
			  "the job failed (%s); restart %u of %u from "
			  "the checkpoint of clock %" PRId64 " in %s",
			  err->msg[0] ? err->msg : "see above", attempt + 1,
			  l->max_restarts, clock, o->checkpoint);
		px_error_clear(err);
		/* A restart recovers: no more churn, no test fault. */
		resume = o->checkpoint;
		crash_at = 0;
		cur.kill_worker_every = cur.kill_worker_at = 0;
		cur.kill_ps_at = cur.leave_worker_at = cur.add_worker_at = 0;
		cur.add_ps_at = 0;
		cur.churn_every = 0;
		cur.kill_ps_at_clock = 0;
		cur.pause_worker_at = cur.pause_ps_at = 0;
		cur.n_slow = 0;
	}
}
