/* server.c -- proteusd's control socket: the listener, its clients and
 * their requests (server.h; the protocol is proto.h).  Moved out of
 * main_proteusd.c (issue 10) so that the daemon's main keeps only what the
 * daemon is: its config, store, signals and commands. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../common/log.h"
#include "server.h"

struct server {
	struct loop *loop;
	const struct proteusd_config *cfg; /* live: reloads show here */
	server_cmd_fn *const *handlers;    /* PROTO_CMD_MAX of them */
	void *app;
	int lfd;                 /* listening socket, -1 when not open */
	dev_t sock_dev;          /* the socket file we made, to unlink it */
	ino_t sock_ino;
	struct client *clients;
	size_t nclients;
	uint64_t last_client_id;
	uint64_t refused;        /* clients refused since the last line */
	bool refused_timer;      /* a summary line is scheduled */
	/* for /metrics: requests by command (PROTO_CMD_MAX: unknown
	 * ones), clients refused, since the start */
	uint64_t requests[PROTO_CMD_MAX + 1];
	uint64_t refused_total;
};

#define LISTEN_BACKLOG 64
#define ACCEPT_BATCH 16          /* accepts per readable event */
#define ACCEPT_PAUSE_MS 1000     /* after EMFILE and friends */
#define CLIENT_OUT_HIGH (64 * 1024) /* stop answering above this backlog */
#define REFUSED_LOG_MS 5000      /* at most one line per this on refusals */

/* One control connection. */
struct client {
	struct server *d;
	struct client *prev, *next;
	int fd;
	uint64_t id;       /* connection number, for the log */
	pid_t pid;         /* peer credentials (SO_PEERCRED) */
	uid_t uid;
	gid_t gid;
	char *in;          /* PROTO_LINE_MAX bytes of unanswered input */
	size_t in_len;
	char *out;         /* replies not yet sent: out[out_off..out_len) */
	size_t out_len, out_off, out_cap;
	uint64_t last_us;  /* monotonic time of the last progress */
	int64_t timer;     /* idle/stall timer id */
	bool eof;          /* peer shut down its side: close once drained */
	bool pending;      /* a deferred request awaits its answer */
};

static char deferred_tag;
json_t *const SERVER_DEFERRED = (json_t *)&deferred_tag;
static struct client *serving; /* the client whose handler runs */

static bool client_process(struct client *c);

/* Whether the peer closed its socket (both directions shut: POLLHUP),
 * not just its sending side. */
static bool peer_gone(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

/* ---- clients ---- */

static void client_close(struct client *c)
{
	struct server *d = c->d;

	log_info("client %" PRIu64 " disconnected", c->id);
	loop_fd_del(d->loop, c->fd);
	(void)loop_timer_del(d->loop, c->timer);
	close(c->fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		d->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	d->nclients--;
	free(c->in);
	free(c->out);
	free(c);
}

/* Queue line (len bytes) for sending. */
static bool client_queue(struct client *c, const char *line, size_t len)
{
	if (c->out_len + len > c->out_cap) {
		size_t cap = c->out_len + len + 4096;
		char *n = realloc(c->out, cap);

		if (!n)
			return false;
		c->out = n;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, line, len);
	c->out_len += len;
	return true;
}

/* Queue obj as a reply with "v" and "ok" set; obj is consumed. */
static bool client_reply(struct client *c, json_t *obj, bool ok)
{
	json_t *head = json_pack("{s:i, s:b}", "v", PROTO_VERSION, "ok", ok);
	struct px_error err = {0};
	char *line = NULL;
	size_t len;
	bool done;

	if (!obj || !head || json_object_update(head, obj) < 0) {
		json_decref(head);
		json_decref(obj);
		return false;
	}
	json_decref(obj);
	obj = head;
	if (proto_encode(obj, &line, &len, &err) != PX_OK) {
		json_decref(obj);
		obj = json_pack("{s:i, s:b, s:s}", "v", PROTO_VERSION, "ok", 0,
				"error", err.msg);
		if (!obj || proto_encode(obj, &line, &len, NULL) != PX_OK) {
			json_decref(obj);
			return false;
		}
	}
	json_decref(obj);
	done = client_queue(c, line, len);
	free(line);
	return done;
}

static bool client_error(struct client *c, const char *msg)
{
	return client_reply(c, json_pack("{s:s}", "error", msg), false);
}

/* Send what we can; false when the connection is dead. */
static bool client_flush(struct client *c)
{
	ssize_t k;

	while (c->out_off < c->out_len) {
		k = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			return true;
		if (k < 0) {
			log_info("client %" PRIu64 ": send: %s", c->id,
				 strerror(errno));
			return false;
		}
		c->out_off += (size_t)k;
		c->last_us = px_now_mono_us();
	}
	c->out_off = c->out_len = 0;
	return true;
}

/* Tell a client why (best effort, without waiting) and drop it. */
static void client_drop(struct client *c, const char *why)
{
	if (client_error(c, why))
		(void)client_flush(c);
	client_close(c);
}

/* A client that broke the protocol or stalled: say so and drop it.
 * Others are not affected. */
static void client_fail(struct client *c, const char *why)
{
	log_notice("client %" PRIu64 " (pid %ld uid %ld): %s; disconnecting",
		   c->id, (long)c->pid, (long)c->uid, why);
	client_drop(c, why);
}

/* Answer one request line.  False when the client was dropped. */
static bool client_request(struct client *c, const char *line, size_t len)
{
	struct px_error err = {0};
	enum proto_cmd cmd;
	json_t *req = NULL, *reply;
	bool ok;

	if (proto_request_parse(line, len, &req, &cmd, &err) != PX_OK) {
		client_fail(c, err.msg);
		return false;
	}
	c->d->requests[cmd]++;
	if (cmd == PROTO_CMD_MAX) {
		snprintf(err.msg, sizeof(err.msg), "unknown command '%.64s'",
			 json_string_value(json_object_get(req, "cmd")));
		ok = client_error(c, err.msg);
	} else {
		log_debug("client %" PRIu64 ": %s", c->id,
			  proto_cmd_name(cmd));
		serving = c;
		reply = c->d->handlers[cmd](c->d->app, req, &err);
		serving = NULL;
		if (reply == SERVER_DEFERRED) {
			c->pending = true;
			json_decref(req);
			return true;
		}
		if (reply)
			ok = client_reply(c, reply, true);
		else
			ok = client_reply(c, json_pack("{s:s, s:s}", "error",
				err.msg[0] ? err.msg : "out of memory",
				"kind", proto_err_kind(err.code)), false);
	}
	json_decref(req);
	if (!ok) {
		client_fail(c, "out of memory");
		return false;
	}
	c->last_us = px_now_mono_us();
	return true;
}

bool server_defer(struct server_ticket *ret)
{
	if (!serving)
		return false;
	ret->s = serving->d;
	ret->client = serving->id;
	return true;
}

bool server_peer(struct px_guard *ret)
{
	gid_t gs[PX_GUARD_GROUPS_MAX];
	socklen_t len = sizeof gs;

	if (!serving || serving->uid == (uid_t)-1)
		return false;
	*ret = (struct px_guard){ .as_user = true, .uid = serving->uid,
				  .gid = serving->gid, .ngroups = -1 };
	if (getsockopt(serving->fd, SOL_SOCKET, SO_PEERGROUPS, gs, &len) ==
	    0) {
		ret->ngroups = (int)(len / sizeof gs[0]);
		for (int i = 0; i < ret->ngroups; i++)
			ret->groups[i] = gs[i];
	}
	/* more groups than we keep: only the primary one counts (fewer
	 * rights, never more) */
	return true;
}

void server_answer(const struct server_ticket *t, json_t *reply,
		   const struct px_error *err)
{
	struct client *c = t && t->s ? t->s->clients : NULL;
	bool ok;

	while (c && c->id != t->client)
		c = c->next;
	if (!c || !c->pending) {
		json_decref(reply);
		return;
	}
	c->pending = false;
	if (reply)
		ok = client_reply(c, reply, true);
	else
		ok = client_reply(c, json_pack("{s:s, s:s}", "error",
			err && err->msg[0] ? err->msg : "out of memory",
			"kind", proto_err_kind(err ? err->code : PX_ENOMEM)),
			false);
	if (!ok) {
		client_fail(c, "out of memory");
		return;
	}
	c->last_us = px_now_mono_us();
	(void)client_process(c);
}

/* Answer the complete lines in c->in while the reply backlog is small,
 * then watch for what comes next.  False when the client was dropped. */
static bool client_process(struct client *c)
{
	char *nl;
	size_t used = 0, n;
	int mask;

	while (!c->pending && c->out_len - c->out_off < CLIENT_OUT_HIGH &&
	       (nl = memchr(c->in + used, '\n', c->in_len - used))) {
		n = (size_t)(nl - (c->in + used));
		if (!client_request(c, c->in + used, n))
			return false;
		used += n + 1;
	}
	memmove(c->in, c->in + used, c->in_len - used);
	c->in_len -= used;
	if (c->in_len == PROTO_LINE_MAX) {
		char why[96];

		snprintf(why, sizeof(why), "request line is over %d bytes",
			 PROTO_LINE_MAX);
		client_fail(c, why);
		return false;
	}
	if (!client_flush(c)) {
		client_close(c);
		return false;
	}
	if (c->eof && !c->pending && c->out_len == 0 &&
	    !memchr(c->in, '\n', c->in_len)) {
		client_close(c);
		return false;
	}
	/* a client gone while its request is pending: its slot is free at
	 * once (the answer, when it comes, finds no one); one that only
	 * shut its sending side still waits for its answer */
	if (c->eof && c->pending && peer_gone(c->fd)) {
		log_info("client %" PRIu64 " left before its answer", c->id);
		client_close(c);
		return false;
	}
	mask = c->out_len ? LOOP_WRITABLE : c->eof ? 0 : LOOP_READABLE;
	if (loop_fd_mask(c->d->loop, c->fd, mask) != PX_OK) {
		client_close(c);
		return false;
	}
	return true;
}

static void client_event(struct loop *l, int fd, int mask, void *ctx)
{
	struct client *c = ctx;
	ssize_t k;

	if ((mask & LOOP_WRITABLE) && !client_flush(c)) {
		client_close(c);
		return;
	}
	if ((mask & LOOP_READABLE) && !c->eof &&
	    c->out_len - c->out_off < CLIENT_OUT_HIGH) {
		k = recv(fd, c->in + c->in_len, PROTO_LINE_MAX - c->in_len,
			 MSG_DONTWAIT);
		if (k < 0 && errno != EAGAIN && errno != EINTR) {
			log_info("client %" PRIu64 ": receive: %s", c->id,
				 strerror(errno));
			client_close(c);
			return;
		}
		if (k == 0)
			c->eof = true;
		if (k > 0)
			c->in_len += (size_t)k;
	}
	(void)client_process(c);
}

/* The idle/stall timer: a client that has made no progress for
 * client_timeout_ms is dropped (read again each time: it is reloadable). */
static int64_t client_timer(struct loop *l, int64_t id, void *ctx)
{
	struct client *c = ctx;
	uint64_t limit = (uint64_t)c->d->cfg->client_timeout_ms * 1000;
	uint64_t idle = px_now_mono_us() - c->last_us;
	char why[96];

	if (c->pending) /* the wait is ours, not the client's */
		idle = 0;
	if (idle < limit)
		return (int64_t)((limit - idle + 999) / 1000);
	snprintf(why, sizeof(why), "%s in %" PRId64 " ms",
		 c->out_len ? "replies not read" : "no complete request",
		 c->d->cfg->client_timeout_ms);
	c->timer = 0; /* this timer ends with the LOOP_NOMORE below */
	client_fail(c, why);
	return LOOP_NOMORE;
}

/* The end of a window after a refusal: one line for those refused in
 * it, if any. */
static int64_t refused_summary(struct loop *l, int64_t id, void *ctx)
{
	struct server *d = ctx;

	(void)l;
	(void)id;
	if (!d->refused) {
		d->refused_timer = false;
		return LOOP_NOMORE;
	}
	log_notice("%" PRIu64 " more client%s refused in the last %d s: too "
		   "many clients (max_clients %" PRId64 ")",
		   d->refused, d->refused == 1 ? "" : "s",
		   REFUSED_LOG_MS / 1000, d->cfg->max_clients);
	d->refused = 0;
	return REFUSED_LOG_MS; /* a quiet window ends the series */
}

/* Refuse a client over max_clients.  A flood of them logs the first
 * refusal, then at most one line per REFUSED_LOG_MS with the count. */
static void client_refuse(struct server *d, struct client *c)
{
	char why[96];

	snprintf(why, sizeof(why), "too many clients (max_clients "
		 "%" PRId64 ")", d->cfg->max_clients);
	if (!d->refused_timer) {
		log_notice("client %" PRIu64 " (pid %ld uid %ld): %s; "
			   "disconnecting (more refusals are counted, one "
			   "line per %d s)", c->id, (long)c->pid,
			   (long)c->uid, why, REFUSED_LOG_MS / 1000);
		d->refused_timer = loop_timer_add(d->loop, REFUSED_LOG_MS,
						  refused_summary, d) >= 0;
	} else {
		d->refused++;
	}
	d->refused_total++;
	client_drop(c, why);
}

static void client_add(struct server *d, int fd)
{
	struct ucred cr = {.pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1};
	socklen_t crlen = sizeof(cr);
	struct client *c = px_calloc(1, sizeof(*c));

	if (c)
		c->in = malloc(PROTO_LINE_MAX);
	if (!c || !c->in) {
		log_err("out of memory accepting a client");
		if (c)
			free(c);
		close(fd);
		return;
	}
	(void)getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen);
	*c = (struct client){.d = d, .fd = fd, .id = ++d->last_client_id,
			     .pid = cr.pid, .uid = cr.uid, .gid = cr.gid,
			     .in = c->in, .last_us = px_now_mono_us()};
	c->next = d->clients;
	if (d->clients)
		d->clients->prev = c;
	d->clients = c;
	d->nclients++;
	log_info("client %" PRIu64 " connected: pid %ld uid %ld gid %ld",
		 c->id, (long)cr.pid, (long)cr.uid, (long)cr.gid);
	if ((int64_t)d->nclients > d->cfg->max_clients) {
		client_refuse(d, c);
		return;
	}
	c->timer = loop_timer_add(d->loop, d->cfg->client_timeout_ms,
				  client_timer, c);
	if (c->timer < 0 ||
	    loop_fd_add(d->loop, fd, LOOP_READABLE, client_event, c) !=
		    PX_OK) {
		log_err("cannot watch client %" PRIu64, c->id);
		client_close(c);
	}
}

static void listen_event(struct loop *l, int fd, int mask, void *ctx);

static int64_t accept_resume(struct loop *l, int64_t id, void *ctx)
{
	struct server *d = ctx;

	if (loop_fd_mask(l, d->lfd, LOOP_READABLE) != PX_OK)
		return ACCEPT_PAUSE_MS;
	return LOOP_NOMORE;
}

static void listen_event(struct loop *l, int fd, int mask, void *ctx)
{
	struct server *d = ctx;
	int cfd;

	for (int i = 0; i < ACCEPT_BATCH; i++) {
		cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd >= 0) {
			client_add(d, cfd);
			continue;
		}
		if (errno == EAGAIN || errno == EINTR ||
		    errno == ECONNABORTED)
			return;
		/* EMFILE and the like: stop accepting for a while rather
		 * than spin on a listener that stays readable. */
		log_warn("accept on '%s': %s; pausing %d ms",
			 d->cfg->control_socket, strerror(errno),
			 ACCEPT_PAUSE_MS);
		if (loop_fd_mask(l, fd, 0) == PX_OK &&
		    loop_timer_add(l, ACCEPT_PAUSE_MS, accept_resume, d) < 0)
			(void)loop_fd_mask(l, fd, LOOP_READABLE);
		return;
	}
}

/* An existing file at path: refuse it unless it is a socket nobody
 * listens on, which a crashed daemon left behind. */
static bool clear_stale_socket(const char *path, struct sockaddr_un *sa)
{
	struct stat sb;
	int fd;

	if (lstat(path, &sb) < 0)
		return errno == ENOENT ||
		       (log_err("control socket '%s': %s", path,
				strerror(errno)),
			false);
	if (!S_ISSOCK(sb.st_mode)) {
		log_err("control socket '%s' exists and is not a socket",
			path);
		return false;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_err("socket: %s", strerror(errno));
		return false;
	}
	if (connect(fd, (struct sockaddr *)sa, sizeof(*sa)) == 0) {
		close(fd);
		log_err("another proteusd is listening on '%s'", path);
		return false;
	}
	if (errno != ECONNREFUSED) {
		log_err("control socket '%s': %s", path, strerror(errno));
		close(fd);
		return false;
	}
	close(fd);
	log_notice("removing stale control socket '%s'", path);
	if (unlink(path) < 0 && errno != ENOENT) {
		log_err("cannot remove '%s': %s", path, strerror(errno));
		return false;
	}
	return true;
}

static bool listen_open(struct server *d)
{
	const char *path = d->cfg->control_socket;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat sb;
	mode_t old;
	int fd, r;

	memcpy(sa.sun_path, path, strlen(path) + 1); /* length checked */
	if (!clear_stale_socket(path, &sa))
		return false;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_err("socket: %s", strerror(errno));
		return false;
	}
	/* bind creates the file with 0777 & ~umask: make that the mode
	 * asked for, so that it is never looser, even for an instant. */
	old = umask(0777 & ~(mode_t)d->cfg->control_socket_mode);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || listen(fd, LISTEN_BACKLOG) < 0 || stat(path, &sb) < 0) {
		log_err("control socket '%s': %s", path, strerror(errno));
		close(fd);
		return false;
	}
	d->sock_dev = sb.st_dev;
	d->sock_ino = sb.st_ino;
	d->lfd = fd;
	if (loop_fd_add(d->loop, fd, LOOP_READABLE, listen_event, d) !=
	    PX_OK) {
		log_err("cannot watch the control socket");
		return false;
	}
	log_notice("listening on '%s' (mode %04o)", path,
		   (unsigned)(sb.st_mode & 0777));
	return true;
}

/* Close the listener and remove the socket file if it is still ours. */
static void listen_close(struct server *d)
{
	struct stat sb;

	if (d->lfd < 0)
		return;
	loop_fd_del(d->loop, d->lfd);
	close(d->lfd);
	d->lfd = -1;
	if (stat(d->cfg->control_socket, &sb) == 0 &&
	    sb.st_dev == d->sock_dev && sb.st_ino == d->sock_ino)
		unlink(d->cfg->control_socket);
}

bool server_open(const struct server_setup *ss, struct server **ret)
{
	struct server *d = px_calloc(1, sizeof(*d));

	if (!d) {
		log_err("out of memory");
		return false;
	}
	d->loop = ss->loop;
	d->cfg = ss->cfg;
	d->handlers = ss->handlers;
	d->app = ss->app;
	d->lfd = -1;
	*ret = d;
	return listen_open(d);
}

void server_close(struct server *d)
{
	if (!d)
		return;
	while (d->clients)
		client_close(d->clients);
	listen_close(d);
	free(d);
}

size_t server_clients(const struct server *d)
{
	return d->nclients;
}

uint64_t server_requests(const struct server *d, enum proto_cmd cmd)
{
	return d && cmd <= PROTO_CMD_MAX ? d->requests[cmd] : 0;
}

uint64_t server_refused(const struct server *d)
{
	return d ? d->refused_total : 0;
}
