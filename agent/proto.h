/* proto.h -- the control protocol spoken on proteusd's control socket,
 * shared by the daemon (handlers) and proteusctl (client).
 *
 * Newline-delimited JSON over an AF_UNIX stream socket.  Each request is one
 * line {"v": PROTO_VERSION, "cmd": NAME, ...}; each reply is one line
 * {"v": PROTO_VERSION, "ok": true|false, "error": "...", ...}.  A line is at
 * most PROTO_LINE_MAX bytes, newline included.  Described in docs/proteusd.md.
 */
#ifndef PX_PROTO_H
#define PX_PROTO_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "../common/px.h"

#define PROTO_VERSION 1
/* The longest request or reply, newline included.  Sized for the largest
 * submit proteusctl sends (JOBREQ_SENT_MAX, agent/jobreq.h: a 1 MiB job
 * file and a 1 MiB scaling profile re-encoded, which may grow 5-fold) and
 * the request around it; proto.c checks that it holds both.  The daemon
 * holds at most one such line per connection (docs/proteusd.md, "Limits
 * on what a client can make the daemon hold"). */
#define PROTO_LINE_MAX (10 * 1024 * 1024 + 128 * 1024)

/* How long proteusd may spend on a submitted job's files: the reads
 * that can be long (the trace, the check of an IDX, CSV or LIBSVM data
 * set) and the copies into the job's folder stop this long after the
 * submission's guard was set (agent/jobs_market.c job_guard, tested by
 * px_guard_expired), and the job is refused then; the other reads are
 * bounded in size or count, not in time.  It is not a bound on the whole
 * answer: resolving the names in the job's URLs (agent/outbound.c) runs
 * first, under the resolver's own timeouts, and storing the job after.
 * proteusctl waits this long and 30 s more (agent/ctl/cli.h), so that a
 * client gives up on a submit the daemon then runs only when those took
 * longer than the margin. */
#define PROTO_SUBMIT_LOAD_S 60

/* The commands: X(name, summary).  The daemon builds its handler table from
 * this list, proteusctl its help text; a new command is one line here. */
#define PROTO_COMMANDS(X)                                                    \
	X(ping, "check that the daemon answers")                             \
	X(status, "uptime, pid, database, world, clients and store counts") \
	X(config, "the configuration in force, as JSON")                     \
	X(submit, "queue a job (the request's \"spec\"); answers its id")      \
	X(jobs, "every job: id, name, state, cost")                         \
	X(job, "one job's state, progress, fleet and cost")                 \
	X(events, "one job's events (after an event id)")                   \
	X(cancel, "end a job, releasing every instance")                    \
	X(model, "a chunk of a job's last checkpoint (\"offset\"), base64") \
	X(logs, "the tail of each node's program output (after \"offset\")") \
	X(pool, "the pool the jobs share: limits, use, shares, rho")

enum proto_cmd {
#define PROTO_ENUM(name, summary) PROTO_CMD_##name,
	PROTO_COMMANDS(PROTO_ENUM)
#undef PROTO_ENUM
	PROTO_CMD_MAX
};

/* An error reply's "kind", from the handler's code: "notfound"
 * (PX_ENOENT), "invalid" (PX_EINVAL, PX_ETOOBIG, PX_EUNSUPP: the request
 * or its data is wrong), "failed" (anything else: the daemon could not do
 * it).  proteusctl maps them to exit codes 4, 3 and 1. */
const char *proto_err_kind(enum px_err e);

/* The command's name ("ping"); NULL for an out-of-range value. */
const char *proto_cmd_name(enum proto_cmd c);
/* The command named name, or PROTO_CMD_MAX when there is none. */
enum proto_cmd proto_cmd_find(const char *name);

/* The paths both proteusd and proteusctl use when none is given, each
 * computed in one place so that the two sides meet (docs/proteusd.md,
 * "Where the database and the socket are").
 *
 * The control socket: $PROTEUS_SOCKET, else $RUNTIME_DIRECTORY/proteusd.sock
 * (set by systemd's RuntimeDirectory=; the first entry when it lists
 * several), else /run/proteus/proteusd.sock for root, else
 * $XDG_RUNTIME_DIR/proteusd.sock, else /run/proteus/proteusd.sock.
 * Writes into buf; PX_ETOOBIG when the path does not fit (len is at most
 * sizeof(sun_path) for a usable path). */
enum px_err proto_default_socket(char *buf, size_t len);

/* The database: $PROTEUS_DB, else $STATE_DIRECTORY/proteus.db (systemd's
 * StateDirectory=, first entry), else /var/lib/proteus/proteus.db for
 * root, else $XDG_DATA_HOME/proteus/proteus.db, else
 * $HOME/.local/share/proteus/proteus.db.  PX_ENOENT when none applies (no
 * HOME), PX_ETOOBIG when it does not fit in len. */
enum px_err proto_default_db(char *buf, size_t len);

/* mkdir -p, with mode, for the folders above path's last component. */
enum px_err proto_make_parents(const char *path, mode_t mode,
			       struct px_error *err);

/* A new request object {"v": PROTO_VERSION, "cmd": cmd}; NULL on OOM.
 * The caller owns it (json_decref). */
json_t *proto_request_new(enum proto_cmd cmd);

/* Parse one request line (without its newline) and check it: valid JSON,
 * an object, "v" equal to PROTO_VERSION, "cmd" a string.  On success
 * *ret_req is the caller's (json_decref) and *ret_cmd is the command, or
 * PROTO_CMD_MAX when the name is not known (a valid request for an
 * unknown command: the caller answers with an error).  PX_EPROTO with a
 * message for garbage, PX_EUNSUPP for another protocol version. */
enum px_err proto_request_parse(const char *line, size_t len,
				json_t **ret_req, enum proto_cmd *ret_cmd,
				struct px_error *err);

/* Encode obj as one compact line ending in '\n' into a malloc'd string the
 * caller frees; *ret_len is its length.  PX_ETOOBIG when it would be over
 * PROTO_LINE_MAX, PX_ENOMEM on OOM.  obj is not consumed. */
enum px_err proto_encode(json_t *obj, char **ret_line, size_t *ret_len,
			 struct px_error *err);

/* Client side: connect to the socket at path, send req, read one reply line
 * and parse it, all within timeout_ms.  On success *ret_reply is the
 * caller's (it may say "ok": false: check it).  Errors: PX_ENOENT or
 * PX_ESYS|ECONNREFUSED etc. when nobody listens (the message names the
 * socket), PX_ETIMEDOUT, PX_EPROTO for a reply that is not a JSON object
 * or has another version.  req is not consumed. */
enum px_err proto_call(const char *path, json_t *req, int timeout_ms,
		       json_t **ret_reply, struct px_error *err);
/* proto_call, telling waiting(ctx, ms waited so far) about once a second
 * while no reply came (NULL: no one). */
enum px_err proto_call_waiting(const char *path, json_t *req, int timeout_ms,
			       void (*waiting)(void *ctx, int64_t waited_ms),
			       void *ctx, json_t **ret_reply,
			       struct px_error *err);

#endif
