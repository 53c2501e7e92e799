/* dist_local.c -- `proteus-trainer local`: a whole job on this host.  Acts
 * as the agent: draws the job key (RAND_bytes) and id, posix_spawns the
 * coordinator, PS nodes and workers (the key goes in the children's
 * environment, never argv), injects churn (SIGKILL / SIGTERM of workers,
 * SIGKILL of an ActivePS) with replacements, and reaps everything.
 */
#include "dist_int.h"
#include "ckpt.h"
#include "kern_cuda.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/rand.h>
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

enum child_kind { CH_COORD, CH_PS, CH_WORKER };

struct child {
	pid_t pid;               /* 0: reaped */
	enum child_kind kind;
	uint32_t node;
	bool reliable;
	uint64_t started_us;     /* monotonic */
	int status;              /* wait status once reaped */
};

struct local {
	const struct dist_opts *o;
	const struct dist_local *l;
	char dir[256];
	bool own_dir;
	char keyenv[2 * 32 + sizeof(DIST_KEY_ENV) + 2];
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
	struct wire_ctx *ctx;
	struct net_sock *apull;  /* PROGRESS inbox */
	struct net_sock *areq;   /* REQ to the coordinator (handshake) */
	bool registered;
	uint64_t progress_n;     /* PROGRESS frames received */
	int64_t last_clock;
	/* the coordinator's own options */
	const char *resume;      /* --resume FILE, or NULL */
	char crash_at[24];       /* --fault-crash-at CLOCK, or "" */
};

static volatile sig_atomic_t local_stop;

/* The role argument of each child_kind, also used in the logs. */
static const char *const role[] = { "coordinator", "ps", "worker" };

static void on_signal(int sig)
{
	(void)sig;
	local_stop = 1;
}

static enum px_err spawn(struct local *s, enum child_kind kind,
			 uint32_t node, bool reliable, struct px_error *err)
{
	char nodearg[16], listen[300], coord[300];
	const char *argv[LOCAL_MAX_ARGS];
	posix_spawn_file_actions_t fa;
	struct child *c;
	size_t k = 0;
	pid_t pid;
	int r;

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
	posix_spawn_file_actions_init(&fa);
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
	if (r != 0)
		return px_errorf(err, PX_ESYS | r, "spawn '%s': %s",
				 s->l->self, strerror(r));
	c = &s->ch[s->nch++];
	c->pid = pid;
	c->kind = kind;
	c->node = node;
	c->reliable = reliable;
	c->started_us = px_now_mono_us();
	dist_logf(s->o, 7, "started %s node %u (pid %d)", role[kind], node,
		  (int)pid);
	return PX_OK;
}

static void reap(struct local *s)
{
	for (uint32_t i = 0; i < s->nch; i++) {
		int st;

		if (s->ch[i].pid && waitpid(s->ch[i].pid, &st, WNOHANG) ==
					    s->ch[i].pid) {
			s->ch[i].pid = 0;
			s->ch[i].status = st;
		}
	}
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
			kill(s->ch[i].pid, SIGTERM);
			kill(s->ch[i].pid, SIGCONT); /* a paused one */
		}
	}
	until = px_now_mono_us() + 2000000;
	while (px_now_mono_us() < until) {
		bool any = false;

		reap(s);
		for (uint32_t i = 0; i < s->nch; i++)
			any |= s->ch[i].pid != 0;
		if (!any)
			return;
		usleep(10000);
	}
	for (uint32_t i = 0; i < s->nch; i++) {
		if (s->ch[i].pid) {
			kill(s->ch[i].pid, SIGKILL);
			waitpid(s->ch[i].pid, &s->ch[i].status, 0);
			s->ch[i].pid = 0;
		}
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
	s->envp = px_calloc(n + 2, sizeof(char *));
	if (!s->envp)
		return px_errorf(err, PX_ENOMEM, "environment");
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], DIST_KEY_ENV "=",
			    sizeof(DIST_KEY_ENV)))
			s->envp[k++] = environ[i];
	s->envp[k++] = s->keyenv;
	s->envp[k] = NULL;
	return PX_OK;
}

/* The agent's sockets: a PULL for PROGRESS (bound before the
 * coordinator starts) and a REQ to the coordinator for the handshake. */
static enum px_err agent_open(struct local *s, struct px_error *err)
{
	struct wire_config wc = {
		.self = { DIST_AGENT_NODE }, .job = s->job,
		.job_key = s->key, .job_key_len = sizeof(s->key),
	};
	char coord[300];
	enum px_err e;
	int n = snprintf(s->agent_ep, sizeof(s->agent_ep),
			 "ipc://%s/agent.pull", s->dir);

	if (n < 0 || (size_t)n >= sizeof(s->agent_ep))
		return px_errorf(err, PX_ETOOBIG, "socket dir '%s' too long",
				 s->dir);
	snprintf(coord, sizeof(coord), "ipc://%s/n0", s->dir);
	e = wire_ctx_new(&wc, &s->ctx, err);
	if (e == PX_OK)
		e = net_open(s->ctx, NET_PULL, NULL, &s->apull, err);
	if (e == PX_OK)
		e = net_bind(s->apull, s->agent_ep, err);
	if (e == PX_OK)
		e = dist_sock(s->ctx, NET_REQ, coord, DIST_EP_REP, false,
			      &s->areq, err);
	return e;
}

/* One handshake attempt with the coordinator (it may not be up yet). */
static void agent_register(struct local *s)
{
	struct wire_register info;
	struct wire_msg r;
	struct px_error err;

	memset(&info, 0, sizeof(info));
	info.roles = WIRE_ROLE_AGENT;
	snprintf(info.instance, sizeof(info.instance), "local");
	snprintf(info.addr, sizeof(info.addr), "%s", s->agent_ep);
	if (net_register(s->areq, (struct wire_node){ DIST_COORD_NODE },
			 &info, 1000, &r, &err) != PX_OK)
		return;
	if (r.hdr.type == WIRE_ACK && r.u.ack.status == PX_OK)
		s->registered = true;
	else
		dist_logf(s->o, 4, "agent: coordinator refused the "
			  "registration");
	wire_msg_release(&r);
}

/* Print the PROGRESS frames that came in within ms. */
static void agent_poll(struct local *s, int ms)
{
	struct px_error err;
	struct wire_msg m;

	while (net_recv(s->apull, &m, ms, &err) == PX_OK) {
		const struct wire_progress *p = &m.u.progress;
		uint32_t nw = 0, nps = 0;
		char ev[80];

		ms = 0;
		if (m.hdr.type != WIRE_PROGRESS ||
		    m.hdr.sender.v != DIST_COORD_NODE) {
			wire_msg_release(&m);
			continue;
		}
		for (uint32_t i = 0; i < p->n; i++) {
			const struct wire_member *w = &p->members[i];

			if (w->state != WIRE_MEMBER_ACTIVE &&
			    w->state != WIRE_MEMBER_JOINING)
				continue;
			if (w->roles & WIRE_ROLE_WORKER)
				nw++;
			else
				nps++;
		}
		s->progress_n++;
		s->last_clock = p->clock;
		dist_fmt_eval(ev, sizeof(ev), p->loss, p->accuracy);
		if (s->o->json)
			dist_logf(s->o, 6, "progress: clock %" PRId64 ", %.0f "
				  "samples/s, %s, %u workers, %u PS, "
				  "membership epoch %" PRIu64, p->clock,
				  (double)p->samples_per_s, ev, nw, nps,
				  p->epoch);
		else
			printf("progress: clock %" PRId64 ", %.0f samples/s, "
			       "%s, %u workers, %u PS, membership epoch %"
			       PRIu64 "\n", p->clock,
			       (double)p->samples_per_s, ev, nw, nps,
			       p->epoch);
		fflush(stdout);
		wire_msg_release(&m);
	}
}

static int run_once(const struct dist_opts *o, const struct dist_local *l,
		    const char *resume, int64_t crash_at,
		    struct px_error *err)
{
	struct local *s = px_calloc(1, sizeof(*s));
	struct sigaction sa, old_int, old_term;
	uint64_t t0 = px_now_mono_us(), t_begin = t0, next_kill = 0;
	bool ps_killed = false, left = false, added = false, started = false;
	struct child *paused = NULL;
	uint64_t resume_at = 0;
	double pause_at = l->pause_worker_at > 0 ? l->pause_worker_at
						 : l->pause_ps_at;
	enum child_kind pause_kind = l->pause_worker_at > 0 ? CH_WORKER
								 : CH_PS;
	int rc = 1;
	enum px_err e;

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
	if (l->dir) {
		snprintf(s->dir, sizeof(s->dir), "%s", l->dir);
	} else {
		const char *t = getenv("TMPDIR");

		snprintf(s->dir, sizeof(s->dir), "%s/pxtrainer.XXXXXX",
			 t && *t ? t : "/tmp");
		if (!mkdtemp(s->dir)) {
			px_errorf(err, PX_ESYS | errno, "mkdtemp '%s': %s",
				  s->dir, strerror(errno));
			goto out_free;
		}
		s->own_dir = true;
	}
	e = make_env(s, err);
	if (e != PX_OK)
		goto out_free;
	if (pipe2(s->ready, O_CLOEXEC | O_NONBLOCK) != 0) {
		px_errorf(err, PX_ESYS | errno, "pipe: %s", strerror(errno));
		goto out_free;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	e = agent_open(s, err);
	if (e != PX_OK)
		goto out_free;
	e = spawn(s, CH_COORD, DIST_COORD_NODE, false, err);
	for (uint32_t i = 0; e == PX_OK && i < o->ps; i++)
		e = spawn(s, CH_PS, 1 + i, i < l->reliable, err);
	s->next_ps = 1 + o->ps;
	s->next_worker = 1000;
	for (uint32_t i = 0; e == PX_OK && i < o->workers; i++)
		e = spawn(s, CH_WORKER, s->next_worker++, false, err);
	if (e != PX_OK)
		goto out_kill;
	close(s->ready[1]);
	s->ready[1] = -1;
	for (;;) {
		uint64_t now = px_now_mono_us();
		double el = (double)(now - t0) / 1e6;
		struct child *c;
		char b;

		reap(s);
		if (!started && read(s->ready[0], &b, 1) == 1) {
			/* churn times count from the job's start */
			started = true;
			t0 = now;
			el = 0;
			if (l->kill_worker_every > 0)
				next_kill = t0 + (uint64_t)(
					l->kill_worker_every * 1e6);
			else if (l->kill_worker_at > 0)
				next_kill = t0 + (uint64_t)(
					l->kill_worker_at * 1e6);
		}
		if (!s->ch[0].pid) {
			int st = s->ch[0].status;

			agent_poll(s, 0); /* the last PROGRESS */

			rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 +
			     (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
			if (WIFSIGNALED(st))
				px_errorf(err, PX_EIO, "the coordinator was "
					  "killed by signal %d (%s)",
					  WTERMSIG(st),
					  strsignal(WTERMSIG(st)));
			break;
		}
		if (local_stop) {
			px_errorf(err, PX_ECANCELED, "interrupted");
			rc = 130;
			break;
		}
		if (l->timeout_s > 0 &&
		    (double)(now - t_begin) / 1e6 > l->timeout_s) {
			px_errorf(err, PX_ETIMEDOUT, "job ran past %.0f s",
				  l->timeout_s);
			rc = 124;
			break;
		}
		if (next_kill && now >= next_kill) {
			c = pick(s, CH_WORKER);
			if (c) {
				dist_logf(o, 6, "churn: SIGKILL worker %u at "
					  "%.1f s", c->node, el);
				kill(c->pid, SIGKILL);
				e = spawn(s, CH_WORKER, s->next_worker++,
					  false, err);
				if (e != PX_OK)
					break;
			}
			next_kill = l->kill_worker_every > 0
				? now + (uint64_t)(l->kill_worker_every * 1e6)
				: 0;
		}
		if (l->kill_ps_at > 0 && started && !ps_killed &&
		    el >= l->kill_ps_at) {
			ps_killed = true;
			c = pick(s, CH_PS);
			if (c) {
				dist_logf(o, 6, "churn: SIGKILL ps %u at "
					  "%.1f s", c->node, el);
				kill(c->pid, SIGKILL);
				e = spawn(s, CH_PS, s->next_ps++, false, err);
				if (e != PX_OK)
					break;
			}
		}
		if (l->leave_worker_at > 0 && started && !left &&
		    el >= l->leave_worker_at) {
			left = true;
			c = pick(s, CH_WORKER);
			if (c) {
				dist_logf(o, 6, "churn: SIGTERM worker %u at "
					  "%.1f s", c->node, el);
				kill(c->pid, SIGTERM);
				e = spawn(s, CH_WORKER, s->next_worker++,
					  false, err);
				if (e != PX_OK)
					break;
			}
		}
		if (pause_at > 0 && started && !resume_at && !paused &&
		    el >= pause_at) {
			paused = pick(s, pause_kind);
			if (paused) {
				dist_logf(o, 6, "churn: SIGSTOP %s %u at "
					  "%.1f s", role[pause_kind],
					  paused->node, el);
				kill(paused->pid, SIGSTOP);
				resume_at = l->pause_for > 0
					? now + (uint64_t)(l->pause_for * 1e6)
					: UINT64_MAX;
			}
		}
		if (paused && now >= resume_at) {
			if (paused->pid) {
				dist_logf(o, 6, "churn: SIGCONT %s %u",
					  role[pause_kind], paused->node);
				kill(paused->pid, SIGCONT);
			}
			paused = NULL;
		}
		if (l->add_worker_at > 0 && started && !added &&
		    el >= l->add_worker_at) {
			added = true;
			dist_logf(o, 6, "adding worker %u at %.1f s",
				  s->next_worker, el);
			e = spawn(s, CH_WORKER, s->next_worker++, false, err);
			if (e != PX_OK)
				break;
		}
		if (!s->registered)
			agent_register(s);
		agent_poll(s, 10);
	}
out_kill:
	kill_all(s);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
out_free:
	if (s->own_dir) {
		static const char *const suf[] = { "rep", "pull", "pub" };
		char path[600];

		for (uint32_t i = 0; i < s->nch; i++) {
			for (int ep = 0; ep < DIST_EP_MAX; ep++) {
				snprintf(path, sizeof(path), "%s/n%u.%s",
					 s->dir, s->ch[i].node, suf[ep]);
				(void)unlink(path);
			}
		}
		snprintf(path, sizeof(path), "%s/agent.pull", s->dir);
		(void)unlink(path);
		(void)rmdir(s->dir);
	}
	if (s->ready[0] > 0)
		close(s->ready[0]);
	if (s->ready[1] > 0)
		close(s->ready[1]);
	if (s->ctx)
		dist_logf(o, 7, "agent: %" PRIu64 " progress reports, last "
			  "clock %" PRId64, s->progress_n, s->last_clock);
	net_close(s->apull);
	net_close(s->areq);
	wire_ctx_free(s->ctx);
	free(s->envp);
	free(s);
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
		dist_logf(o, 4, "no restart: %s", err.msg);
		return false;
	}
	free(w);
	free(v);
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

		if (rc == 0 || rc == 124 || rc == 130 || local_stop ||
		    attempt >= l->max_restarts ||
		    !resumable(o, start_s, &clock))
			return rc;
		dist_logf(o, 4, "the job failed (%s); restart %u of %u from "
			  "the checkpoint of clock %" PRId64 " in %s",
			  err->msg[0] ? err->msg : "see above", attempt + 1,
			  l->max_restarts, clock, o->checkpoint);
		px_error_clear(err);
		/* A restart recovers: no more churn, no test fault. */
		resume = o->checkpoint;
		crash_at = 0;
		cur.kill_worker_every = cur.kill_worker_at = 0;
		cur.kill_ps_at = cur.leave_worker_at = cur.add_worker_at = 0;
		cur.pause_worker_at = cur.pause_ps_at = 0;
	}
}
