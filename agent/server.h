/* server.h -- proteusd's control socket (agent/server.c): a Unix stream
 * socket at cfg->control_socket with mode cfg->control_socket_mode,
 * newline-framed JSON requests (proto.h) answered in order, at most
 * cfg->max_clients at once (more are refused, logged rate-limited),
 * clients without progress for cfg->client_timeout_ms dropped.  The
 * config is read live, so a SIGHUP reload of those keys takes effect on
 * the next event.  Everything runs on the daemon's loop; a handler must
 * not block. */
#ifndef PX_SERVER_H
#define PX_SERVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "../common/px.h"
#include "config.h"
#include "loop.h"
#include "proto.h"

/* One command: the reply's fields (consumed by the server), or NULL with
 * err set (answered as {"ok": false, "error": ...}). */
typedef json_t *server_cmd_fn(void *app, json_t *req, struct px_error *err);

/* A command that needs time (submit: reading a trace) does not block the
 * loop: its handler takes the request's ticket with server_defer (only
 * while it runs) and returns SERVER_DEFERRED; the client's later requests
 * wait, unanswered, and its idle timer does not run; server_answer sends
 * the reply (or err) once it is ready, or drops it if the client has gone
 * meanwhile. */
struct server_ticket {
	struct server *s;
	uint64_t client;          /* connection number; 0: none */
};
extern json_t *const SERVER_DEFERRED;
/* The ticket of the request being handled; false outside a handler. */
bool server_defer(struct server_ticket *ret);
/* The credentials of the client whose request is being handled
 * (SO_PEERCRED, SO_PEERGROUPS), as a file guard that opens files with its
 * rights (px.h); false outside a handler or when the kernel gave none. */
bool server_peer(struct px_guard *ret);
/* Answer a deferred request: reply (consumed), or err when reply is
 * NULL. */
void server_answer(const struct server_ticket *t, json_t *reply,
		   const struct px_error *err);

struct server_setup {
	struct loop *loop;
	const struct proteusd_config *cfg; /* outlives the server */
	server_cmd_fn *const *handlers;    /* indexed by enum proto_cmd */
	void *app;                         /* handed to every handler */
};

struct server;

/* Listen (a stale socket file a crashed daemon left is replaced; a live
 * one is refused).  False, with the reason logged, when it cannot; *ret
 * is set either way and must be given to server_close. */
bool server_open(const struct server_setup *s, struct server **ret);
/* Drop every client, close the listener, remove the socket file if it
 * is still the one we made. */
void server_close(struct server *s);
size_t server_clients(const struct server *s);
/* Requests of command cmd answered or deferred since the start
 * (PROTO_CMD_MAX: those naming no known command); clients refused over
 * max_clients since the start.  For /metrics; 0 for a NULL server. */
uint64_t server_requests(const struct server *s, enum proto_cmd cmd);
uint64_t server_refused(const struct server *s);

#endif
