/* notify.c -- job events to webhooks and a command (notify.h).
 *
 * A destination (struct dest) is a URL, or notify_command for one job:
 * a ring of event bodies, the first of which may be in flight.  kick()
 * starts the first when nothing of the destination is in flight or
 * waiting to be retried; finish() ends a try: delivered (the next is
 * started), retried after a backoff (a loop timer), or given up.  A
 * destination whose queue is empty is freed.
 *
 * URLs: one easy handle per try on the notifier's multi handle, whose
 * socket and timer hooks are the loop's through curl_loop_new (the
 * adapter the EC2 client uses).  Commands: posix_spawn in a process
 * group of their own, with no signal blocked, the body on a pipe to
 * standard input (written whole at once: it is at most NOTIFY_BODY_MAX
 * bytes, and a new pipe holds 64 KiB), standard output and error on
 * another pipe the loop reads, and the exit seen on a pidfd; the group
 * is killed at notify_timeout_ms, and when the command exits (what it
 * left behind must not hold the pipe).
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../cloudapi/curl_poll.h"
#include "../common/log.h"
#include "curl_loop.h"
#include "notify.h"
#include "outbound.h"
#include "prom.h"
#include "spawnattr.h"

#define BACKOFF_MAX_SHIFT 6      /* the backoff grows to 64 times the first */
#define SHOWN_MAX 160            /* a URL's origin in a log line */

struct item {
	char *body;
	size_t len;
	int64_t job;
	char event[32];
};

enum dest_kind { DEST_URL, DEST_CMD };

struct dest {
	struct dest *next;
	struct notify *n;
	enum dest_kind kind;
	char key[CONFIG_PATH_MAX];       /* the URL, or the command */
	char shown[PX_TERM_SAFE_LEN(SHOWN_MAX)]; /* for logs */
	int64_t job;                     /* DEST_CMD: the job's queue */
	struct item *q;                  /* ring */
	size_t head, len, cap;
	bool busy;                       /* q[head] in flight */
	bool waiting;                    /* DEST_CMD: held by the limit */
	int attempt;                     /* tries of q[head] */
	int64_t retry_timer;             /* 0: none */
	/* DEST_URL */
	CURL *easy;
	struct curl_slist *hdrs;
	char errbuf[CURL_ERROR_SIZE];
	size_t answer;                   /* bytes of the answer read */
	size_t hdr;                      /* bytes of its headers */
	char refused[256];               /* an address refused, and why */
	/* DEST_CMD */
	pid_t pid;
	int pidfd, outfd;
	int64_t kill_timer;              /* 0: none */
	bool killed;
	char out[NOTIFY_OUTPUT_MAX + 1];
	size_t out_len, out_more;
};

struct notify {
	struct loop *l;
	const struct proteusd_config *cfg;
	CURLM *multi;
	struct curl_loop *el;
	struct dest *dests;
	size_t n_dests;
	uint64_t result[NOTIFY_RESULT_MAX];
	uint64_t retries;
	size_t running;
};

static const char *const result_names[NOTIFY_RESULT_MAX] = {
	"delivered", "failed", "dropped",
};

const char *notify_result_name(enum notify_result r)
{
	return r < NOTIFY_RESULT_MAX ? result_names[r] : "?";
}

static void kick(struct dest *d);

/* ---- destinations ---- */

/* A URL as logs show it: scheme://host[:port], never the path or query
 * (a webhook's token is often there); terminal-safe. */
static void url_origin(const char *url, char *buf, size_t len)
{
	const char *h = strstr(url, "://");
	char tmp[SHOWN_MAX + 1];
	size_t n;

	h = h ? h + 3 : url;
	n = (size_t)(h - url) + strcspn(h, "/?#");
	if (n > SHOWN_MAX)
		n = SHOWN_MAX;
	memcpy(tmp, url, n);
	tmp[n] = 0;
	px_term_safe(tmp, buf, len);
}

static struct dest *dest_get(struct notify *n, enum dest_kind kind,
			     const char *key, int64_t job)
{
	struct dest *d;

	for (d = n->dests; d; d = d->next)
		if (d->kind == kind && !strcmp(d->key, key) &&
		    (kind == DEST_URL || d->job == job))
			return d;
	if (n->n_dests >= NOTIFY_DESTS_MAX)
		return NULL;
	d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	d->n = n;
	d->kind = kind;
	d->job = job;
	d->pidfd = d->outfd = -1;
	snprintf(d->key, sizeof d->key, "%s", key);
	if (kind == DEST_URL)
		url_origin(key, d->shown, sizeof d->shown);
	else
		px_term_safe(key, d->shown, sizeof d->shown);
	d->next = n->dests;
	n->dests = d;
	n->n_dests++;
	return d;
}

static void dest_free(struct dest *d)
{
	struct notify *n = d->n;

	for (struct dest **p = &n->dests; *p; p = &(*p)->next)
		if (*p == d) {
			*p = d->next;
			break;
		}
	n->n_dests--;
	for (size_t i = 0; i < d->len; i++)
		free(d->q[(d->head + i) % d->cap].body);
	free(d->q);
	free(d);
}

static struct item *first(struct dest *d)
{
	return &d->q[d->head];
}

static void pop(struct dest *d)
{
	free(first(d)->body);
	d->head = (d->head + 1) % d->cap;
	d->len--;
	d->attempt = 0;
}

static bool push(struct dest *d, const struct item *it)
{
	if (d->len == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 8;
		struct item *q = px_reallocarray(NULL, cap, sizeof *q);

		if (!q)
			return false;
		for (size_t i = 0; i < d->len; i++)
			q[i] = d->q[(d->head + i) % d->cap];
		free(d->q);
		d->q = q;
		d->head = 0;
		d->cap = cap;
	}
	d->q[(d->head + d->len) % d->cap] = *it;
	d->len++;
	return true;
}

/* Not delivered: logged with the event (bounded; log_msg escapes it) and
 * counted. */
static void lost(struct notify *n, struct dest *d, const struct item *it,
		 enum notify_result r, const char *why)
{
	char body[513];

	n->result[r]++;
	snprintf(body, sizeof body, "%s", it->body);
	log_warn("notification '%s' of job %" PRId64 " to %s %s: %s; it was "
		 "%s%s", it->event, it->job, d->shown,
		 r == NOTIFY_DROPPED ? "dropped" : "not delivered", why, body,
		 it->len > 512 ? "..." : "");
}

/* ---- a try's end ---- */

static int64_t on_retry(struct loop *l, int64_t id, void *ctx)
{
	struct dest *d = ctx;

	(void)l;
	(void)id;
	d->retry_timer = 0;
	kick(d);
	return LOOP_NOMORE;
}

/* Wake command destinations held by notify_commands_max, one at a time
 * from the list's head: a start that fails at once ends in finish(),
 * which may free destinations (a saved next could be gone). */
static void wake_commands(struct notify *n)
{
	struct dest *d;

	while (n->running < (size_t)n->cfg->notify_commands_max) {
		for (d = n->dests; d && !d->waiting; d = d->next)
			;
		if (!d)
			return;
		d->waiting = false;
		kick(d);
	}
}

/* The try of q[head] ended: ok, or not (retry: whether another try may
 * help); why says what happened. */
static void finish(struct dest *d, bool ok, bool retry, const char *why)
{
	struct notify *n = d->n;
	const struct proteusd_config *c = n->cfg;
	bool cmd = d->kind == DEST_CMD;

	d->busy = false;
	if (ok) {
		n->result[NOTIFY_DELIVERED]++;
		log_debug("notification '%s' of job %" PRId64 " delivered to "
			  "%s (try %d)", first(d)->event, first(d)->job,
			  d->shown, d->attempt);
		pop(d);
	} else if (retry && d->attempt < c->notify_attempts) {
		int shift = d->attempt - 1 < BACKOFF_MAX_SHIFT ?
			    d->attempt - 1 : BACKOFF_MAX_SHIFT;
		int64_t ms = c->notify_backoff_ms << shift;

		n->retries++;
		log_info("notification '%s' of job %" PRId64 " to %s: try %d "
			 "of %" PRId64 " failed (%s); again in %" PRId64 " ms",
			 first(d)->event, first(d)->job, d->shown, d->attempt,
			 c->notify_attempts, why, ms);
		d->retry_timer = loop_timer_add(n->l, ms, on_retry, d);
		if (d->retry_timer < 0)
			d->retry_timer = 0;
		else
			goto out;
		lost(n, d, first(d), NOTIFY_FAILED, "no timer for its retry");
		pop(d);
	} else {
		char msg[512];

		snprintf(msg, sizeof msg, "%s (try %d of %" PRId64 ")", why,
			 d->attempt, c->notify_attempts);
		lost(n, d, first(d), NOTIFY_FAILED, msg);
		pop(d);
	}
out:
	if (cmd) {
		n->running--;
		wake_commands(n);
	}
	kick(d);
}

/* ---- URLs ---- */

/* The answer's body is not needed, its status is: NOTIFY_ANSWER_MAX
 * bytes of it are read, then the transfer ends (a short count), so that
 * a receiver that streams forever costs nothing more. */
static size_t discard(char *p, size_t sz, size_t nm, void *ud)
{
	struct dest *d = ud;
	size_t n = sz * nm;

	(void)p;
	if (n > NOTIFY_ANSWER_MAX - d->answer) {
		d->answer = NOTIFY_ANSWER_MAX + 1;
		return 0;
	}
	d->answer += n;
	return n;
}

/* The answer's headers, bounded as its body (an endless header is an
 * endless answer too). */
static size_t headers(char *p, size_t sz, size_t nm, void *ud)
{
	struct dest *d = ud;
	size_t n = sz * nm;

	(void)p;
	if (n > 4 * NOTIFY_ANSWER_MAX - d->hdr) {
		d->answer = NOTIFY_ANSWER_MAX + 1;
		return 0;
	}
	d->hdr += n;
	return n;
}

/* Each address libcurl connects to for d's URL, held to the outbound
 * rules (outbound.h) again: a job's URL was checked at submit, but its
 * name may resolve elsewhere now, and the operator's list may have
 * changed since. */
static curl_socket_t open_socket(void *ud, curlsocktype purpose,
				 struct curl_sockaddr *a)
{
	struct dest *d = ud;
	const struct proteusd_config *c = d->n->cfg;
	bool job = strcmp(d->key, c->notify_url) != 0;

	(void)purpose;
	if (!outbound_notify_addr_ok(c, d->key, job, &a->addr, a->addrlen,
				     d->refused, sizeof d->refused))
		return CURL_SOCKET_BAD;
	d->refused[0] = 0;
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static bool start_url(struct dest *d)
{
	struct notify *n = d->n;
	struct item *it = first(d);
	long ms = (long)n->cfg->notify_timeout_ms;
	CURL *e = curl_easy_init();

	if (!e)
		return false;
	d->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	if (d->hdrs)
		d->hdrs = curl_slist_append(d->hdrs, "Expect:");
	d->errbuf[0] = 0;
	d->refused[0] = 0;
	d->answer = d->hdr = 0;
	curl_easy_setopt(e, CURLOPT_URL, d->key);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, it->body);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)it->len);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, d->hdrs);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "proteusd/" PX_VERSION);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, ms);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, ms);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, d);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, headers);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, d);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, d);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, d->errbuf);
	curl_easy_setopt(e, CURLOPT_PRIVATE, d);
	if (curl_multi_add_handle(n->multi, e) != CURLM_OK) {
		curl_easy_cleanup(e);
		curl_slist_free_all(d->hdrs);
		d->hdrs = NULL;
		return false;
	}
	d->easy = e;
	return true;
}

static void end_url(struct dest *d)
{
	curl_multi_remove_handle(d->n->multi, d->easy);
	curl_easy_cleanup(d->easy);
	curl_slist_free_all(d->hdrs);
	d->easy = NULL;
	d->hdrs = NULL;
}

/* Tries that ended, each to finish(). */
static void process(struct notify *n)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(n->multi, &left))) {
		struct dest *d = NULL;
		CURLcode rc = m->data.result;
		long code = 0;
		char why[CURL_ERROR_SIZE + 64];

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &d);
		curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE,
				  &code);
		/* an answer cut at its bound: its status is what counts */
		if (rc == CURLE_WRITE_ERROR && d->answer > NOTIFY_ANSWER_MAX &&
		    code)
			rc = CURLE_OK;
		if (rc != CURLE_OK && d->refused[0]) {
			/* the operator's rules: no other try would do */
			snprintf(why, sizeof why, "%s", d->refused);
			end_url(d);
			finish(d, false, false, why);
			continue;
		}
		if (rc != CURLE_OK)
			snprintf(why, sizeof why, "%s", d->errbuf[0] ?
				 d->errbuf : curl_easy_strerror(rc));
		else
			snprintf(why, sizeof why, "HTTP %ld", code);
		end_url(d);
		/* a 4xx other than a timeout or throttling says the request
		 * itself is refused: sending it again would not help */
		finish(d, rc == CURLE_OK && code >= 200 && code < 300,
		       rc != CURLE_OK || code >= 500 || code == 408 ||
		       code == 429 || code < 200, why);
	}
}

static enum px_err on_socket(void *c, int fd, int what)
{
	struct notify *n = c;
	int running;

	if (curl_multi_socket_action(n->multi, fd, ec2_poll_to_cselect(what),
				     &running) != CURLM_OK)
		return PX_EHTTP;
	process(n);
	return PX_OK;
}

static enum px_err on_timeout(void *c)
{
	struct notify *n = c;
	int running;

	if (curl_multi_socket_action(n->multi, CURL_SOCKET_TIMEOUT, 0,
				     &running) != CURLM_OK)
		return PX_EHTTP;
	process(n);
	return PX_OK;
}

static const struct curl_loop_ops notify_ops = {
	.on_socket = on_socket,
	.on_timeout = on_timeout,
};

static int curl_socket_cb(CURL *e, curl_socket_t s, int what, void *ud,
			  void *sp)
{
	struct notify *n = ud;

	(void)e;
	(void)sp;
	curl_loop_socket_hook((int)s, ec2_poll_from_curl(what), n->el);
	return 0;
}

static int curl_timer_cb(CURLM *m, long timeout_ms, void *ud)
{
	struct notify *n = ud;

	(void)m;
	curl_loop_timer_hook(timeout_ms, n->el);
	return 0;
}

/* ---- the command ---- */

/* The command's environment: the daemon's is not passed on (it may hold
 * AWS credentials or a job's key), only the allow-list of px_spawn_env
 * (what a program needs to run) and the event's job and kind. */
static char **command_env(const struct item *it, char *job, size_t jlen,
			  char *event, size_t elen)
{
	char *add[] = { job, event, NULL };

	snprintf(job, jlen, "PROTEUS_JOB=%" PRId64, it->job);
	snprintf(event, elen, "PROTEUS_EVENT=%s", it->event);
	return px_spawn_env(add, 0);
}

static void close_fd(struct loop *l, int *fd)
{
	if (*fd < 0)
		return;
	loop_fd_del(l, *fd);
	close(*fd);
	*fd = -1;
}

/* Read what the command wrote (kept up to NOTIFY_OUTPUT_MAX bytes, the
 * rest counted); false at the end of it. */
static bool drain(struct dest *d)
{
	char buf[4096];
	ssize_t k;

	for (;;) {
		k = read(d->outfd, buf, sizeof buf);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			return true;
		if (k <= 0)
			return false;
		size_t room = NOTIFY_OUTPUT_MAX - d->out_len;
		size_t take = (size_t)k < room ? (size_t)k : room;

		memcpy(d->out + d->out_len, buf, take);
		d->out_len += take;
		d->out_more += (size_t)k - take;
	}
}

static void on_output(struct loop *l, int fd, int mask, void *ctx)
{
	struct dest *d = ctx;

	(void)fd;
	(void)mask;
	if (!drain(d))
		close_fd(l, &d->outfd);
}

/* The command's output, one log line. */
static void log_output(struct dest *d, bool ok)
{
	while (d->out_len && (d->out[d->out_len - 1] == '\n' ||
			      d->out[d->out_len - 1] == '\r'))
		d->out_len--;
	if (!d->out_len)
		return;
	/* as it was written: log_msg escapes the line (once) */
	d->out[d->out_len] = 0;
	if (ok)
		log_info("notify_command (job %" PRId64 ") said: %s%s", d->job,
			 d->out, d->out_more ? " [more not kept]" : "");
	else
		log_warn("notify_command (job %" PRId64 ") said: %s%s", d->job,
			 d->out, d->out_more ? " [more not kept]" : "");
}

static void on_exit_fd(struct loop *l, int fd, int mask, void *ctx)
{
	struct dest *d = ctx;
	char why[128];
	int st = 0;
	pid_t p;

	(void)fd;
	(void)mask;
	while ((p = waitpid(d->pid, &st, WNOHANG)) < 0 && errno == EINTR)
		;
	if (p == 0)
		return;          /* not yet (a spurious wake-up) */
	/* what it left in its group must not hold the pipe open */
	(void)kill(-d->pid, SIGKILL);
	d->pid = 0;
	close_fd(l, &d->pidfd);
	if (d->kill_timer)
		(void)loop_timer_del(l, d->kill_timer);
	d->kill_timer = 0;
	if (d->outfd >= 0)
		(void)drain(d);
	close_fd(l, &d->outfd);
	if (d->killed)
		snprintf(why, sizeof why, "killed after %" PRId64 " ms (its "
			 "timeout)", d->n->cfg->notify_timeout_ms);
	else if (p < 0)
		snprintf(why, sizeof why, "waitpid: %s", strerror(errno));
	else if (WIFEXITED(st))
		snprintf(why, sizeof why, "exit status %d", WEXITSTATUS(st));
	else
		snprintf(why, sizeof why, "signal %d", WTERMSIG(st));
	log_output(d, p > 0 && WIFEXITED(st) && !WEXITSTATUS(st) &&
		   !d->killed);
	finish(d, p > 0 && !d->killed && WIFEXITED(st) && !WEXITSTATUS(st),
	       true, why);
}

static int64_t on_kill(struct loop *l, int64_t id, void *ctx)
{
	struct dest *d = ctx;

	(void)l;
	(void)id;
	d->kill_timer = 0;
	d->killed = true;
	if (d->pid > 0)
		(void)kill(-d->pid, SIGKILL);   /* the exit fd says when */
	return LOOP_NOMORE;
}

static bool spawn(struct dest *d, int in, int out, struct px_error *err)
{
	posix_spawn_file_actions_t fa;
	char *argv[] = { d->key, NULL };
	char job[48], event[64];
	char **envp = command_env(first(d), job, sizeof job, event,
				  sizeof event);
	int r;

	if (!envp) {
		px_errorf(err, PX_ENOMEM, "out of memory");
		return false;
	}
	/* 0 the body's pipe, 1 and 2 the output's, nothing else */
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in, 0);
	posix_spawn_file_actions_adddup2(&fa, out, 1);
	posix_spawn_file_actions_adddup2(&fa, out, 2);
	r = px_spawn(&d->pid, d->key, &fa, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	free(envp);
	if (r) {
		px_errorf(err, PX_ESYS | r, "cannot start it: %s", strerror(r));
		d->pid = 0;
		return false;
	}
	return true;
}

static bool start_cmd(struct dest *d, struct px_error *err)
{
	struct notify *n = d->n;
	struct item *it = first(d);
	int in[2] = {-1, -1}, out[2] = {-1, -1};
	bool ok = false;

	d->out_len = d->out_more = 0;
	d->killed = false;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC | O_NONBLOCK)) {
		px_errorf(err, PX_ESYS | errno, "pipe: %s", strerror(errno));
		goto out;
	}
	/* the child's ends are blocking: O_NONBLOCK on a pipe2 is both */
	(void)fcntl(out[1], F_SETFL, 0);
	if (write(in[1], it->body, it->len) != (ssize_t)it->len ||
	    write(in[1], "\n", 1) != 1) {
		px_errorf(err, PX_ESYS | errno, "its input: %s",
			  strerror(errno));
		goto out;
	}
	if (!spawn(d, in[0], out[1], err))
		goto out;
	d->pidfd = (int)syscall(SYS_pidfd_open, d->pid, 0);
	d->outfd = out[0];
	out[0] = -1;
	if (d->pidfd < 0 ||
	    loop_fd_add(n->l, d->pidfd, LOOP_READABLE, on_exit_fd, d) ||
	    loop_fd_add(n->l, d->outfd, LOOP_READABLE, on_output, d)) {
		px_errorf(err, PX_ESYS | errno, "watching it: %s",
			  strerror(errno));
		(void)kill(-d->pid, SIGKILL);
		while (waitpid(d->pid, NULL, 0) < 0 && errno == EINTR)
			;
		d->pid = 0;
		close_fd(n->l, &d->pidfd);
		close_fd(n->l, &d->outfd);
		goto out;
	}
	d->kill_timer = loop_timer_add(n->l, n->cfg->notify_timeout_ms,
				       on_kill, d);
	if (d->kill_timer < 0)
		d->kill_timer = 0;
	ok = true;
out:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
	}
	return ok;
}

/* ---- the queue ---- */

/* Start the first event when the destination is free; free it once
 * empty. */
static void kick(struct dest *d)
{
	struct notify *n = d->n;
	struct px_error err = {0};
	bool ok;

	if (d->busy || d->retry_timer || d->waiting)
		return;
	if (!d->len) {
		dest_free(d);
		return;
	}
	if (d->kind == DEST_CMD &&
	    n->running >= (size_t)n->cfg->notify_commands_max) {
		d->waiting = true;
		return;
	}
	d->attempt++;
	d->busy = true;
	if (d->kind == DEST_CMD)
		n->running++;
	ok = d->kind == DEST_URL ? start_url(d) : start_cmd(d, &err);
	if (!ok)
		finish(d, false, true, d->kind == DEST_URL ? "cannot start "
		       "the request (out of memory)" : err.msg);
}

static void enqueue(struct notify *n, enum dest_kind kind, const char *key,
		    const struct item *src)
{
	struct dest *d = dest_get(n, kind, key, src->job);
	struct item it = *src;
	char shown[PX_TERM_SAFE_LEN(SHOWN_MAX)];

	if (!d) {
		if (kind == DEST_URL)
			url_origin(key, shown, sizeof shown);
		else
			px_term_safe(key, shown, sizeof shown);
		n->result[NOTIFY_DROPPED]++;
		log_warn("notification '%s' of job %" PRId64 " to %s dropped: "
			 "%d destinations have events waiting already",
			 src->event, src->job, shown, NOTIFY_DESTS_MAX);
		return;
	}
	it.body = malloc(src->len + 1);
	if (it.body)
		memcpy(it.body, src->body, src->len + 1);
	if (d->len >= (size_t)n->cfg->notify_queue_max) {
		/* the oldest that is not in flight goes */
		size_t k = d->busy ? 1 : 0;
		struct item *old = &d->q[(d->head + k) % d->cap];

		if (k < d->len) {
			lost(n, d, old, NOTIFY_DROPPED, "its queue was full");
			free(old->body);
			for (size_t i = k; i + 1 < d->len; i++)
				d->q[(d->head + i) % d->cap] =
					d->q[(d->head + i + 1) % d->cap];
			d->len--;
		}
	}
	if (!it.body || !push(d, &it)) {
		free(it.body);
		lost(n, d, src, NOTIFY_DROPPED, "out of memory");
	}
	kick(d);
}

void notify_event(struct notify *n, int64_t job, const char *url,
		  json_t *ev)
{
	const struct proteusd_config *c = n->cfg;
	struct item it = { .job = job };
	const char *kind = json_string_value(json_object_get(ev, "event"));

	if (!c->notify_url[0] && !c->notify_command[0] && !(url && *url))
		return;
	snprintf(it.event, sizeof it.event, "%s", kind ? kind : "?");
	/* dollars to the micro-dollar, not 17 digits of binary noise */
	it.body = json_dumps(ev, JSON_COMPACT | JSON_REAL_PRECISION(12));
	if (!it.body || strlen(it.body) > NOTIFY_BODY_MAX) {
		n->result[NOTIFY_DROPPED]++;
		log_warn("notification '%s' of job %" PRId64 " dropped: %s",
			 it.event, job, it.body ? "over its size limit" :
			 "out of memory");
		free(it.body);
		return;
	}
	it.len = strlen(it.body);
	if (c->notify_url[0])
		enqueue(n, DEST_URL, c->notify_url, &it);
	if (url && *url && strcmp(url, c->notify_url))
		enqueue(n, DEST_URL, url, &it);
	if (c->notify_command[0])
		enqueue(n, DEST_CMD, c->notify_command, &it);
	free(it.body);
}

/* ---- life ---- */

enum px_err notify_new(struct loop *l, const struct proteusd_config *cfg,
		       struct notify **ret, struct px_error *err)
{
	struct notify *n = calloc(1, sizeof *n);

	if (!n)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	n->l = l;
	n->cfg = cfg;
	if (curl_loop_new(l, &notify_ops, &n->el, err) != PX_OK) {
		free(n);
		return err->code;
	}
	curl_loop_bind(n->el, n);
	n->multi = curl_multi_init();
	if (!n->multi) {
		curl_loop_free(n->el);
		free(n);
		return px_errorf(err, PX_ENOMEM, "curl_multi_init");
	}
	curl_multi_setopt(n->multi, CURLMOPT_SOCKETFUNCTION, curl_socket_cb);
	curl_multi_setopt(n->multi, CURLMOPT_SOCKETDATA, n);
	curl_multi_setopt(n->multi, CURLMOPT_TIMERFUNCTION, curl_timer_cb);
	curl_multi_setopt(n->multi, CURLMOPT_TIMERDATA, n);
	*ret = n;
	return PX_OK;
}

void notify_free(struct notify *n)
{
	size_t left = 0;

	if (!n)
		return;
	while (n->dests) {
		struct dest *d = n->dests;

		if (d->easy)
			end_url(d);
		if (d->pid > 0) {
			(void)kill(-d->pid, SIGKILL);
			while (waitpid(d->pid, NULL, 0) < 0 && errno == EINTR)
				;
		}
		close_fd(n->l, &d->pidfd);
		close_fd(n->l, &d->outfd);
		if (d->retry_timer)
			(void)loop_timer_del(n->l, d->retry_timer);
		if (d->kill_timer)
			(void)loop_timer_del(n->l, d->kill_timer);
		left += d->len;
		n->result[NOTIFY_FAILED] += d->len;
		dest_free(d);
	}
	if (left)
		log_warn("%zu notification%s not delivered: proteusd is "
			 "stopping", left, left == 1 ? "" : "s");
	curl_multi_cleanup(n->multi);
	curl_loop_free(n->el);
	free(n);
}

void notify_counts(const struct notify *n, struct notify_counts *ret)
{
	memset(ret, 0, sizeof *ret);
	if (!n)
		return;
	memcpy(ret->result, n->result, sizeof ret->result);
	ret->retries = n->retries;
	ret->running = n->running;
	for (const struct dest *d = n->dests; d; d = d->next)
		ret->pending += d->len;
}

void notify_metrics(const struct notify *n, struct prom *p)
{
	struct notify_counts c;

	notify_counts(n, &c);
	prom_family(p, "proteus_notifications_total", "counter",
		    "Job event notifications (notify_url, a job's notify_url, "
		    "notify_command), by how they ended.");
	for (int r = 0; r < NOTIFY_RESULT_MAX; r++)
		prom_sample(p, "proteus_notifications_total",
			    (double)c.result[r], "result", result_names[r],
			    NULL);
	prom_family(p, "proteus_notification_retries_total", "counter",
		    "Notification tries after a first one failed.");
	prom_sample(p, "proteus_notification_retries_total",
		    (double)c.retries, NULL);
	prom_family(p, "proteus_notifications_pending", "gauge",
		    "Notifications queued or in flight now.");
	prom_sample(p, "proteus_notifications_pending", (double)c.pending,
		    NULL);
}
