/* proteusd -- the Proteus head-node daemon.  Today it is the foundation the
 * controller will run in: the config, the store, the control socket (see
 * proto.h), sd_notify, SIGHUP reload and a clean SIGTERM.
 *
 * Runs in the foreground only (Type=notify; it never forks) on one event
 * loop (loop.h).  Exit: 0 after SIGTERM/SIGINT or a good --check-config,
 * 1 on a runtime failure (database, socket), 2 usage, 3 bad config.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../common/log.h"
#include "../db/store.h"
#include "config.h"
#include "loop.h"
#include "proto.h"
#include "sdnotify.h"

enum proteusd_exit {
	PROTEUSD_EXIT_OK = 0,
	PROTEUSD_EXIT_FAIL = 1,
	PROTEUSD_EXIT_USAGE = 2,
	PROTEUSD_EXIT_CONFIG = 3,
};

#define LISTEN_BACKLOG 64
#define ACCEPT_BATCH 16          /* accepts per readable event */
#define ACCEPT_PAUSE_MS 1000     /* after EMFILE and friends */
#define CLIENT_OUT_HIGH (64 * 1024) /* stop answering above this backlog */
#define REFUSED_LOG_MS 5000      /* at most one line per this on refusals */

struct proteusd;

/* One control connection. */
struct client {
	struct proteusd *d;
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
};

/* The daemon: main() owns the one instance and passes it down. */
struct proteusd {
	struct proteusd_config cfg;
	const char *config_path; /* --config, or NULL for built-in defaults */
	struct loop *loop;
	struct store *st;
	int lfd;                 /* listening socket, -1 when not open */
	dev_t sock_dev;          /* the socket file we made, to unlink it */
	ino_t sock_ino;
	struct client *clients;
	size_t nclients;
	uint64_t last_client_id;
	uint64_t start_us;       /* monotonic */
	unsigned reloads;        /* successful SIGHUP reloads */
	int lockfd;              /* DB.lock, flock'd for our life; -1: none */
	uint64_t refused;        /* clients refused since the last line */
	bool refused_timer;      /* a summary line is scheduled */
};

/* ---- clients ---- */

static void client_close(struct client *c)
{
	struct proteusd *d = c->d;

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

static json_t *cmd_ping(struct proteusd *d, json_t *req,
			struct px_error *err)
{
	return json_pack("{s:b, s:I, s:s}", "pong", 1, "pid",
			 (json_int_t)getpid(), "version", PX_VERSION);
}

static json_t *cmd_status(struct proteusd *d, json_t *req,
			  struct px_error *err)
{
	struct store_counts n;
	char level[32];
	const struct config_key *k = config_key_find("log_level");

	if (store_counts(d->st, &n, err) != PX_OK)
		return NULL;
	config_format(k, &d->cfg, level, sizeof(level));
	return json_pack("{s:s, s:I, s:I, s:s, s:i, s:s, s:s, s:s, s:s, s:i, "
			 "s:I, s:I, s:I, s:I}",
			 "version", PX_VERSION,
			 "pid", (json_int_t)getpid(),
			 "uptime_s",
			 (json_int_t)((px_now_mono_us() - d->start_us) /
				      1000000),
			 "db", d->cfg.db,
			 "schema_version", store_schema_version(d->st),
			 "world", config_world_name(d->cfg.world),
			 "region", d->cfg.region,
			 "log_level", level,
			 "socket", d->cfg.control_socket,
			 "reloads", (int)d->reloads,
			 "clients", (json_int_t)d->nclients,
			 "markets", (json_int_t)n.markets,
			 "prices", (json_int_t)n.prices,
			 "jobs", (json_int_t)n.jobs);
}

static json_t *cmd_config(struct proteusd *d, json_t *req,
			  struct px_error *err)
{
	json_t *cfg = config_to_json(&d->cfg);

	if (!cfg)
		return NULL;
	return json_pack("{s:o, s:s?}", "config", cfg, "file",
			 d->config_path);
}

typedef json_t *cmd_fn(struct proteusd *d, json_t *req,
		       struct px_error *err);
static cmd_fn *const cmd_handlers[PROTO_CMD_MAX] = {
#define PROTO_HANDLER(name, summary) [PROTO_CMD_##name] = cmd_##name,
	PROTO_COMMANDS(PROTO_HANDLER)
#undef PROTO_HANDLER
};

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
	if (cmd == PROTO_CMD_MAX) {
		snprintf(err.msg, sizeof(err.msg), "unknown command '%.64s'",
			 json_string_value(json_object_get(req, "cmd")));
		ok = client_error(c, err.msg);
	} else {
		log_debug("client %" PRIu64 ": %s", c->id,
			  proto_cmd_name(cmd));
		reply = cmd_handlers[cmd](c->d, req, &err);
		if (reply)
			ok = client_reply(c, reply, true);
		else
			ok = client_error(c, err.msg[0] ? err.msg
							: "out of memory");
	}
	json_decref(req);
	if (!ok) {
		client_fail(c, "out of memory");
		return false;
	}
	c->last_us = px_now_mono_us();
	return true;
}

/* Answer the complete lines in c->in while the reply backlog is small,
 * then watch for what comes next.  False when the client was dropped. */
static bool client_process(struct client *c)
{
	char *nl;
	size_t used = 0, n;
	int mask;

	while (c->out_len - c->out_off < CLIENT_OUT_HIGH &&
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
	if (c->eof && c->out_len == 0 && !memchr(c->in, '\n', c->in_len)) {
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
	uint64_t limit = (uint64_t)c->d->cfg.client_timeout_ms * 1000;
	uint64_t idle = px_now_mono_us() - c->last_us;
	char why[96];

	if (idle < limit)
		return (int64_t)((limit - idle + 999) / 1000);
	snprintf(why, sizeof(why), "%s in %" PRId64 " ms",
		 c->out_len ? "replies not read" : "no complete request",
		 c->d->cfg.client_timeout_ms);
	c->timer = 0; /* this timer ends with the LOOP_NOMORE below */
	client_fail(c, why);
	return LOOP_NOMORE;
}

/* The end of a window after a refusal: one line for those refused in
 * it, if any. */
static int64_t refused_summary(struct loop *l, int64_t id, void *ctx)
{
	struct proteusd *d = ctx;

	(void)l;
	(void)id;
	if (!d->refused) {
		d->refused_timer = false;
		return LOOP_NOMORE;
	}
	log_notice("%" PRIu64 " more client%s refused in the last %d s: too "
		   "many clients (max_clients %" PRId64 ")",
		   d->refused, d->refused == 1 ? "" : "s",
		   REFUSED_LOG_MS / 1000, d->cfg.max_clients);
	d->refused = 0;
	return REFUSED_LOG_MS; /* a quiet window ends the series */
}

/* Refuse a client over max_clients.  A flood of them logs the first
 * refusal, then at most one line per REFUSED_LOG_MS with the count. */
static void client_refuse(struct proteusd *d, struct client *c)
{
	char why[96];

	snprintf(why, sizeof(why), "too many clients (max_clients "
		 "%" PRId64 ")", d->cfg.max_clients);
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
	client_drop(c, why);
}

static void client_add(struct proteusd *d, int fd)
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
	if ((int64_t)d->nclients > d->cfg.max_clients) {
		client_refuse(d, c);
		return;
	}
	c->timer = loop_timer_add(d->loop, d->cfg.client_timeout_ms,
				  client_timer, c);
	if (c->timer < 0 ||
	    loop_fd_add(d->loop, fd, LOOP_READABLE, client_event, c) !=
		    PX_OK) {
		log_err("cannot watch client %" PRIu64, c->id);
		client_close(c);
	}
}

/* ---- the database lock ---- */

/* One daemon per database: an exclusive flock on "DB.lock", held for the
 * daemon's life.  The kernel drops it when the process dies, so a crash
 * or kill -9 never blocks a restart; the file (never removed: removing
 * it would let two daemons lock two different files) keeps the holder's
 * pid for the message. */
static bool db_lock(struct proteusd *d)
{
	char *path = NULL, holder[32] = "";
	ssize_t n;
	int fd;

	if (asprintf(&path, "%s.lock", d->cfg.db) < 0) {
		log_err("out of memory");
		return false;
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		log_err("database lock '%s': %s", path, strerror(errno));
		goto out_fail;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno != EWOULDBLOCK) {
			log_err("database lock '%s': %s", path,
				strerror(errno));
			goto out_fail;
		}
		n = pread(fd, holder, sizeof(holder) - 1, 0);
		holder[n > 0 ? n : 0] = '\0';
		holder[strcspn(holder, "\n")] = '\0';
		log_err("database '%s' is in use by another proteusd (pid %s, "
			"lock '%s'); one daemon per database", d->cfg.db,
			holder[0] ? holder : "unknown", path);
		goto out_fail;
	}
	n = snprintf(holder, sizeof(holder), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, holder, (size_t)n, 0) != n)
		log_warn("database lock '%s': cannot record our pid: %s",
			 path, strerror(errno));
	d->lockfd = fd;
	free(path);
	return true;

out_fail:
	if (fd >= 0)
		close(fd);
	free(path);
	return false;
}

/* ---- the listening socket ---- */

static void listen_event(struct loop *l, int fd, int mask, void *ctx);

static int64_t accept_resume(struct loop *l, int64_t id, void *ctx)
{
	struct proteusd *d = ctx;

	if (loop_fd_mask(l, d->lfd, LOOP_READABLE) != PX_OK)
		return ACCEPT_PAUSE_MS;
	return LOOP_NOMORE;
}

static void listen_event(struct loop *l, int fd, int mask, void *ctx)
{
	struct proteusd *d = ctx;
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
			 d->cfg.control_socket, strerror(errno),
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

static bool listen_open(struct proteusd *d)
{
	const char *path = d->cfg.control_socket;
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
	old = umask(0777 & ~(mode_t)d->cfg.control_socket_mode);
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
static void listen_close(struct proteusd *d)
{
	struct stat sb;

	if (d->lfd < 0)
		return;
	loop_fd_del(d->loop, d->lfd);
	close(d->lfd);
	d->lfd = -1;
	if (stat(d->cfg.control_socket, &sb) == 0 &&
	    sb.st_dev == d->sock_dev && sb.st_ino == d->sock_ino)
		unlink(d->cfg.control_socket);
}

/* ---- signals, watchdog, status ---- */

static void notify_status(struct proteusd *d)
{
	(void)sdnotifyf("STATUS=ready: world %s, region %s, socket %s",
			config_world_name(d->cfg.world), d->cfg.region,
			d->cfg.control_socket);
}

static void log_diag(const struct config_diag *dg, enum log_level lvl)
{
	for (size_t i = 0; i < dg->n; i++)
		log_msg(lvl, "%s", dg->msgs[i]);
	if (dg->dropped)
		log_msg(lvl, "... and %zu more", dg->dropped);
}

static void on_hup(struct loop *l, int signo, void *ctx)
{
	struct proteusd *d = ctx;
	struct proteusd_config next, old = d->cfg;
	struct config_diag dg = {0}, refused = {0};
	char was[CONFIG_PATH_MAX], now[CONFIG_PATH_MAX];
	const struct config_key *keys;
	size_t nkeys;
	unsigned changed;

	(void)sdnotifyf("RELOADING=1\nMONOTONIC_USEC=%" PRIu64,
			px_now_mono_us());
	if (!d->config_path) {
		log_notice("SIGHUP: no --config file, nothing to reload");
		goto out_ready;
	}
	if (config_load(d->config_path, &next, &dg) != PX_OK) {
		log_diag(&dg, LOG_LVL_ERR);
		log_err("reload of '%s' failed; the configuration in force "
			"is kept", d->config_path);
		goto out_ready;
	}
	changed = config_reload(&d->cfg, &next, &refused);
	log_diag(&refused, LOG_LVL_WARN);
	log_set_level((enum log_level)d->cfg.log_level);
	keys = config_keys(&nkeys);
	for (size_t i = 0; i < nkeys; i++) {
		if (config_equal(&keys[i], &old, &d->cfg))
			continue;
		config_format(&keys[i], &old, was, sizeof(was));
		config_format(&keys[i], &d->cfg, now, sizeof(now));
		log_notice("'%s' changed from '%s' to '%s'", keys[i].name, was,
			   now);
	}
	d->reloads++;
	log_notice("reloaded '%s': %u key%s changed, %zu refused",
		   d->config_path, changed, changed == 1 ? "" : "s",
		   refused.n + refused.dropped);
out_ready:
	config_diag_release(&dg);
	config_diag_release(&refused);
	(void)sdnotify("READY=1");
	notify_status(d);
}

static void on_term(struct loop *l, int signo, void *ctx)
{
	log_notice("%s received, stopping",
		   signo == SIGTERM ? "SIGTERM" : "SIGINT");
	(void)sdnotify("STOPPING=1");
	loop_stop(l);
}

static int64_t watchdog_timer(struct loop *l, int64_t id, void *ctx)
{
	const uint64_t *interval_us = ctx;

	(void)sdnotify("WATCHDOG=1");
	return (int64_t)(*interval_us / 2000 ? *interval_us / 2000 : 1);
}

/* ---- main ---- */

static const char usage_text[] =
	"usage: proteusd [--check-config] [--config FILE] [--foreground]\n"
	"                [--print-config [--json]] [--help] [--version]\n"
	"\n"
	"The Proteus head-node daemon (see proteusd(8)).  It runs in the\n"
	"foreground, under systemd as Type=notify.\n"
	"\n"
	"  --config FILE    read \"key value\" lines from FILE (default: the\n"
	"                   built-in defaults)\n"
	"  --check-config   check the configuration and exit: 0 good, 3 bad\n"
	"  --print-config   print every key with its value, its default and\n"
	"                   whether SIGHUP reloads it, then exit\n"
	"  --json           with --print-config: as one JSON object\n"
	"  --foreground     accepted for clarity: the only mode\n"
	"\n"
	"exit: 0 ok, 1 failure, 2 usage, 3 bad configuration\n";

/* --print-config --json: {"version", "from", "keys": {name: {"value",
 * "default", "reloadable"}}}; values typed as in config_to_json. */
static int print_config_json(const struct proteusd *d)
{
	char dflt[CONFIG_PATH_MAX];
	const struct config_key *keys;
	json_t *vals = config_to_json(&d->cfg), *o = NULL, *ks = NULL;
	size_t n;
	int rc = PROTEUSD_EXIT_FAIL;

	keys = config_keys(&n);
	if (!vals || !(ks = json_object()))
		goto out;
	for (size_t i = 0; i < n; i++) {
		config_format_default(&keys[i], dflt, sizeof(dflt));
		if (json_object_set_new(ks, keys[i].name, json_pack(
			    "{s:O, s:s, s:b}", "value",
			    json_object_get(vals, keys[i].name), "default",
			    dflt, "reloadable",
			    (keys[i].flags & CONFIG_RELOADABLE) != 0)))
			goto out;
	}
	o = json_pack("{s:s, s:s?, s:O}", "version", PX_VERSION, "from",
		      d->config_path, "keys", ks);
	if (o && !json_dumpf(o, stdout, JSON_INDENT(2))) {
		putchar('\n');
		rc = PROTEUSD_EXIT_OK;
	}
out:
	if (rc != PROTEUSD_EXIT_OK)
		log_err("out of memory");
	json_decref(o);
	json_decref(ks);
	json_decref(vals);
	return rc;
}

static void print_config(const struct proteusd *d)
{
	char val[CONFIG_PATH_MAX], dflt[CONFIG_PATH_MAX];
	const struct config_key *keys;
	size_t n;

	keys = config_keys(&n);
	printf("# proteusd %s configuration, from %s\n", PX_VERSION,
	       d->config_path ? d->config_path : "the built-in defaults");
	for (size_t i = 0; i < n; i++) {
		config_format(&keys[i], &d->cfg, val, sizeof(val));
		config_format_default(&keys[i], dflt, sizeof(dflt));
		printf("%-20s %-30s # default %s; %s\n", keys[i].name, val,
		       dflt,
		       (keys[i].flags & CONFIG_RELOADABLE) ? "reloadable"
							    : "restart needed");
	}
}

/* Parse the command line and load the configuration into d.  Returns -1
 * to go on, or the exit code. */
static int setup(struct proteusd *d, int argc, char **argv)
{
	enum { OPT_CHECK = 1, OPT_PRINT, OPT_JSON };
	static const struct option opts[] = {
		{"check-config", no_argument, NULL, OPT_CHECK},
		{"config", required_argument, NULL, 'c'},
		{"foreground", no_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{"json", no_argument, NULL, OPT_JSON},
		{"print-config", no_argument, NULL, OPT_PRINT},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	struct config_diag dg = {0};
	bool check = false, print = false, json = false;
	enum px_err r;
	int o;

	opterr = 0;
	while ((o = getopt_long(argc, argv, ":c:fh", opts, NULL)) != -1) {
		switch (o) {
		case OPT_CHECK:
			check = true;
			break;
		case 'c':
			d->config_path = optarg;
			break;
		case 'f':
			break;
		case 'h':
			fputs(usage_text, stdout);
			return PROTEUSD_EXIT_OK;
		case OPT_PRINT:
			print = true;
			break;
		case OPT_JSON:
			json = true;
			break;
		case 'V':
			printf("proteusd %s\n", PX_VERSION);
			return PROTEUSD_EXIT_OK;
		default:
			/* one line and a hint, not the whole help */
			log_err("%s '%s' (see 'proteusd --help')",
				o == ':' ? "missing value for option"
					 : "unknown option",
				argv[optind - 1]);
			return PROTEUSD_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		log_err("unexpected argument '%s' (see 'proteusd --help')",
			argv[optind]);
		return PROTEUSD_EXIT_USAGE;
	}
	if (json && !print) {
		log_err("--json goes with --print-config (see 'proteusd "
			"--help')");
		return PROTEUSD_EXIT_USAGE;
	}
	r = d->config_path ? config_load(d->config_path, &d->cfg, &dg)
			   : config_defaults(&d->cfg, &dg);
	if (r != PX_OK) {
		log_diag(&dg, LOG_LVL_ERR);
		log_err("bad configuration%s%s: %zu error%s",
			d->config_path ? " in " : "",
			d->config_path ? d->config_path : "",
			dg.n + dg.dropped, dg.n + dg.dropped == 1 ? "" : "s");
		config_diag_release(&dg);
		return PROTEUSD_EXIT_CONFIG;
	}
	config_diag_release(&dg);
	if (print) {
		if (json)
			return print_config_json(d);
		print_config(d);
		return PROTEUSD_EXIT_OK;
	}
	if (check) {
		log_notice("configuration '%s' is valid",
			   d->config_path ? d->config_path : "(defaults)");
		return PROTEUSD_EXIT_OK;
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct proteusd d = {.lfd = -1, .lockfd = -1};
	struct px_error err = {0};
	uint64_t wd_us = 0;
	enum px_err r;
	int code;

	log_init("proteusd", LOG_LVL_NOTICE);
	code = setup(&d, argc, argv);
	if (code >= 0)
		return code;
	code = PROTEUSD_EXIT_FAIL;
	log_set_level((enum log_level)d.cfg.log_level);
	d.start_us = px_now_mono_us();
	signal(SIGPIPE, SIG_IGN);
	log_notice("proteusd %s starting: world %s, region %s, db '%s'",
		   PX_VERSION, config_world_name(d.cfg.world), d.cfg.region,
		   d.cfg.db);
	r = loop_new(&d.loop);
	if (r != PX_OK) {
		log_err("cannot create the event loop: %s", px_strerror(r));
		return PROTEUSD_EXIT_FAIL;
	}
	if (loop_signal_add(d.loop, SIGTERM, on_term, &d) != PX_OK ||
	    loop_signal_add(d.loop, SIGINT, on_term, &d) != PX_OK ||
	    loop_signal_add(d.loop, SIGHUP, on_hup, &d) != PX_OK) {
		log_err("cannot set up signal handling");
		goto out_loop;
	}
	/* the default paths' folders may not exist outside systemd */
	if (proto_make_parents(d.cfg.db, 0700, &err) != PX_OK ||
	    proto_make_parents(d.cfg.control_socket, 0755, &err) != PX_OK) {
		log_err("%s", err.msg);
		goto out_loop;
	}
	if (!db_lock(&d))
		goto out_loop;
	if (store_open(d.cfg.db, &d.st, &err) != PX_OK) {
		log_err("%s", err.msg);
		goto out_loop;
	}
	if (!listen_open(&d))
		goto out_listen;
	if (sdnotify_watchdog_usec(&wd_us)) {
		if (loop_timer_add(d.loop, 0, watchdog_timer, &wd_us) < 0)
			goto out_listen;
		log_info("watchdog: pinging every %" PRIu64 " ms",
			 wd_us / 2000);
	}
	if (sdnotify("READY=1") != PX_OK)
		log_warn("cannot notify '%s'", getenv("NOTIFY_SOCKET"));
	notify_status(&d);
	log_notice("ready");
	r = loop_run(d.loop);
	if (r != PX_OK) {
		log_err("event loop: %s", px_strerror(r));
		goto out_listen;
	}
	code = PROTEUSD_EXIT_OK;
out_listen:
	while (d.clients)
		client_close(d.clients);
	listen_close(&d);
	store_close(d.st);
out_loop:
	loop_free(d.loop);
	if (d.lockfd >= 0)
		close(d.lockfd); /* drops the lock */
	if (code == PROTEUSD_EXIT_OK)
		log_notice("stopped");
	return code;
}
