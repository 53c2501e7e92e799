/* proto.c -- control protocol helpers shared by proteusd and proteusctl:
 * command names, the default socket path, request checks, line encoding and
 * a blocking one-shot client call (see proto.h).  Does not log.
 */
#include "proto.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../common/jsonout.h"
#include "jobreq.h"

/* a submit request: the job, its "file" (a name, NAME_MAX bytes, 6 bytes
 * each at most when escaped) and the rest of the envelope */
_Static_assert(PROTO_LINE_MAX >= JOBREQ_SENT_MAX + 6 * 255 + 512,
	       "a control line must hold any job proteusctl submits");

static const char *const proto_names[PROTO_CMD_MAX] = {
#define PROTO_NAME(name, summary) [PROTO_CMD_##name] = #name,
	PROTO_COMMANDS(PROTO_NAME)
#undef PROTO_NAME
};

const char *proto_err_kind(enum px_err e)
{
	switch (e) {
	case PX_ENOENT:
		return "notfound";
	case PX_EINVAL:
	case PX_ETOOBIG:
	case PX_EUNSUPP:
		return "invalid";
	default:
		return "failed";
	}
}

const char *proto_cmd_name(enum proto_cmd c)
{
	return (unsigned)c < PROTO_CMD_MAX ? proto_names[c] : NULL;
}

enum proto_cmd proto_cmd_find(const char *name)
{
	for (int i = 0; i < PROTO_CMD_MAX; i++)
		if (!strcmp(name, proto_names[i]))
			return (enum proto_cmd)i;
	return PROTO_CMD_MAX;
}

/* The first entry of a colon-separated systemd directory list. */
static int first_entry(const char *list)
{
	return (int)strcspn(list, ":");
}

enum px_err proto_default_socket(char *buf, size_t len)
{
	const char *env = getenv("PROTEUS_SOCKET");
	const char *rt = getenv("RUNTIME_DIRECTORY");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (rt && *rt)
		n = snprintf(buf, len, "%.*s/proteusd.sock", first_entry(rt),
			     rt);
	else if (geteuid() != 0 && xdg && *xdg)
		n = snprintf(buf, len, "%s/proteusd.sock", xdg);
	else
		n = snprintf(buf, len, "/run/proteus/proteusd.sock");
	return n < 0 || (size_t)n >= len ? PX_ETOOBIG : PX_OK;
}

enum px_err proto_default_db(char *buf, size_t len)
{
	const char *env = getenv("PROTEUS_DB");
	const char *state = getenv("STATE_DIRECTORY");
	const char *xdg = getenv("XDG_DATA_HOME");
	const char *home = getenv("HOME");
	int n;

	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (state && *state)
		n = snprintf(buf, len, "%.*s/proteus.db", first_entry(state),
			     state);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/var/lib/proteus/proteus.db");
	else if (xdg && *xdg == '/')
		n = snprintf(buf, len, "%s/proteus/proteus.db", xdg);
	else if (home && *home)
		n = snprintf(buf, len, "%s/.local/share/proteus/proteus.db",
			     home);
	else
		return PX_ENOENT;
	return n < 0 || (size_t)n >= len ? PX_ETOOBIG : PX_OK;
}

enum px_err proto_make_parents(const char *path, mode_t mode,
			       struct px_error *err)
{
	char *p = strdup(path);

	if (!p)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	for (char *q = p + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = '\0';
		if (mkdir(p, mode) && errno != EEXIST) {
			int e = errno;

			px_errorf(err, PX_ESYS | e, "cannot create '%s': %s",
				  p, strerror(e));
			free(p);
			return PX_ESYS | e;
		}
		*q = '/';
	}
	free(p);
	return PX_OK;
}

json_t *proto_request_new(enum proto_cmd cmd)
{
	const char *name = proto_cmd_name(cmd);

	if (!name)
		return NULL;
	return json_pack("{s:i, s:s}", "v", PROTO_VERSION, "cmd", name);
}

enum px_err proto_request_parse(const char *line, size_t len,
				json_t **ret_req, enum proto_cmd *ret_cmd,
				struct px_error *err)
{
	json_error_t je;
	json_t *req, *v, *cmd;

	req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (!req)
		return px_errorf(err, PX_EPROTO,
				 "request is not JSON: %s at byte %d",
				 je.text, je.position);
	if (!json_is_object(req)) {
		json_decref(req);
		return px_errorf(err, PX_EPROTO, "request is not an object");
	}
	v = json_object_get(req, "v");
	if (!json_is_integer(v)) {
		json_decref(req);
		return px_errorf(err, PX_EPROTO,
				 "request has no integer field 'v'");
	}
	if (json_integer_value(v) != PROTO_VERSION) {
		px_errorf(err, PX_EUNSUPP,
			  "protocol version %lld not supported (this side "
			  "speaks %d)",
			  (long long)json_integer_value(v), PROTO_VERSION);
		json_decref(req);
		return PX_EUNSUPP;
	}
	cmd = json_object_get(req, "cmd");
	if (!json_is_string(cmd)) {
		json_decref(req);
		return px_errorf(err, PX_EPROTO,
				 "request has no string field 'cmd'");
	}
	*ret_cmd = proto_cmd_find(json_string_value(cmd));
	*ret_req = req;
	return PX_OK;
}

enum px_err proto_encode(json_t *obj, char **ret_line, size_t *ret_len,
			 struct px_error *err)
{
	/* reals in their shortest exact form: a cost of 0.5061 is sent as
	 * 0.5061, not jansson's 0.50609999999999999 */
	char *s = px_json_dumps(obj, JSON_COMPACT);
	size_t n;
	char *line;

	if (!s)
		return px_errorf(err, PX_ENOMEM, "cannot encode reply");
	n = strlen(s);
	if (n + 1 > PROTO_LINE_MAX) {
		free(s);
		return px_errorf(err, PX_ETOOBIG,
				 "message of %zu bytes is over the %d-byte "
				 "line limit", n + 1, PROTO_LINE_MAX);
	}
	line = realloc(s, n + 2);
	if (!line) {
		free(s);
		return px_errorf(err, PX_ENOMEM, "cannot encode reply");
	}
	line[n] = '\n';
	line[n + 1] = '\0';
	*ret_line = line;
	*ret_len = n + 1;
	return PX_OK;
}

/* A call's wait: its deadline and whom to tell, about once a second,
 * that no reply came yet (proto_call_waiting). */
struct call_wait {
	uint64_t start_us, deadline_us;
	void (*waiting)(void *ctx, int64_t waited_ms);
	void *ctx;
};

/* Wait until fd is ready for events or the deadline passes. */
static enum px_err wait_fd(int fd, short events, const struct call_wait *w,
			   const char *path, struct px_error *err)
{
	struct pollfd p = {.fd = fd, .events = events};
	uint64_t now, left;
	int r;

	for (;;) {
		now = px_now_mono_us();
		if (now >= w->deadline_us)
			return px_errorf(err, PX_ETIMEDOUT,
					 "no reply from proteusd at '%s' in "
					 "time", path);
		left = w->deadline_us - now;
		if (w->waiting && left > 1000000)
			left = 1000000;
		r = poll(&p, 1, (int)((left + 999) / 1000));
		if (r > 0)
			return PX_OK;
		if (r == 0 && w->waiting)
			w->waiting(w->ctx, (int64_t)(px_now_mono_us() -
						     w->start_us) / 1000);
		if (r < 0 && errno != EINTR)
			return px_errorf(err, PX_ESYS | errno,
					 "poll on '%s': %s", path,
					 strerror(errno));
	}
}

static enum px_err send_all(int fd, const char *buf, size_t len,
			    const struct call_wait *w, const char *path,
			    struct px_error *err)
{
	enum px_err r;
	ssize_t k;

	while (len > 0) {
		r = wait_fd(fd, POLLOUT, w, path, err);
		if (r != PX_OK)
			return r;
		k = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k < 0)
			return px_errorf(err, PX_ESYS | errno,
					 "send to '%s': %s", path,
					 strerror(errno));
		buf += k;
		len -= (size_t)k;
	}
	return PX_OK;
}

/* Read up to the first newline; *ret_buf (malloc'd) holds the line without
 * it, NUL-terminated. */
static enum px_err recv_line(int fd, const struct call_wait *w,
			     const char *path, char **ret_buf, size_t *ret_len,
			     struct px_error *err)
{
	char *buf = malloc(PROTO_LINE_MAX + 1), *nl;
	size_t n = 0;
	enum px_err r = PX_OK;
	ssize_t k;

	if (!buf)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	for (;;) {
		r = wait_fd(fd, POLLIN, w, path, err);
		if (r != PX_OK)
			goto out_free;
		k = recv(fd, buf + n, PROTO_LINE_MAX - n, MSG_DONTWAIT);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k < 0) {
			r = px_errorf(err, PX_ESYS | errno,
				      "receive from '%s': %s", path,
				      strerror(errno));
			goto out_free;
		}
		if (k == 0) {
			r = px_errorf(err, PX_EPROTO,
				      "proteusd at '%s' closed the connection "
				      "without a reply", path);
			goto out_free;
		}
		nl = memchr(buf + n, '\n', (size_t)k);
		n += (size_t)k;
		if (nl) {
			*nl = '\0';
			*ret_len = (size_t)(nl - buf);
			*ret_buf = buf;
			return PX_OK;
		}
		if (n == PROTO_LINE_MAX) {
			r = px_errorf(err, PX_ETOOBIG,
				      "reply from '%s' is over %d bytes",
				      path, PROTO_LINE_MAX);
			goto out_free;
		}
	}
out_free:
	free(buf);
	return r;
}

enum px_err proto_call(const char *path, json_t *req, int timeout_ms,
		       json_t **ret_reply, struct px_error *err)
{
	return proto_call_waiting(path, req, timeout_ms, NULL, NULL,
				  ret_reply, err);
}

enum px_err proto_call_waiting(const char *path, json_t *req, int timeout_ms,
			       void (*waiting)(void *ctx, int64_t waited_ms),
			       void *ctx, json_t **ret_reply,
			       struct px_error *err)
{
	struct call_wait w = { .start_us = px_now_mono_us(),
			       .waiting = waiting, .ctx = ctx };
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char *line = NULL, *in = NULL;
	size_t len, in_len = 0;
	json_error_t je;
	json_t *reply, *v;
	enum px_err r;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return px_errorf(err, PX_ETOOBIG,
				 "socket path '%s' is too long", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	r = proto_encode(req, &line, &len, err);
	if (r != PX_OK)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = px_errorf(err, PX_ESYS | errno, "socket: %s",
			      strerror(errno));
		goto out_free_line;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = px_errorf(err,
			      errno == ENOENT ? PX_ENOENT : PX_ESYS | errno,
			      "cannot connect to proteusd at '%s': %s", path,
			      strerror(errno));
		goto out_close;
	}
	w.deadline_us = w.start_us + (uint64_t)timeout_ms * 1000;
	r = send_all(fd, line, len, &w, path, err);
	if (r != PX_OK)
		goto out_close;
	r = recv_line(fd, &w, path, &in, &in_len, err);
	if (r != PX_OK)
		goto out_close;
	reply = json_loadb(in, in_len, 0, &je);
	if (!json_is_object(reply)) {
		json_decref(reply);
		r = px_errorf(err, PX_EPROTO,
			      "reply from '%s' is not a JSON object", path);
		goto out_free_in;
	}
	v = json_object_get(reply, "v");
	if (!json_is_integer(v) || json_integer_value(v) != PROTO_VERSION) {
		json_decref(reply);
		r = px_errorf(err, PX_EPROTO,
			      "reply from '%s' is not protocol version %d",
			      path, PROTO_VERSION);
		goto out_free_in;
	}
	*ret_reply = reply;
out_free_in:
	free(in);
out_close:
	close(fd);
out_free_line:
	free(line);
	return r;
}
