/* cli.h -- proteusctl's commands: one file per command or per group of
 * commands that share their code, named after it (cli_market_fetch.c is
 * `market fetch`, cli_status.c is `status` and `ping`, cli_jobs.c is
 * `submit`, `jobs`, `events` and `cancel`), each command exporting
 * `int cli_<name>(int argc, char **argv)` that returns an exit code
 * (enum cli_exit).  main_proteusctl.c holds the dispatch table.
 */
#ifndef PX_CLI_H
#define PX_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "../../common/px.h"
#include "../proto.h"

/* Exit codes, documented in docs/proteusctl.md and proteusctl(1). */
enum cli_exit {
	CLI_EXIT_OK = 0,      /* success */
	CLI_EXIT_FAIL = 1,    /* the operation failed (I/O, database, ...) */
	CLI_EXIT_USAGE = 2,   /* bad command line */
	CLI_EXIT_DATA = 3,    /* bad input data: trace, table, job spec */
	CLI_EXIT_NOTFOUND = 4 /* nothing matched (market, job, ...) */
};

/* Map a library error to the exit code a command returns. */
int cli_exit_for(enum px_err e);

/* The options given before the command (`proteusctl --db X market`):
 * they apply to every command, which may override them with its own. */
struct cli_globals {
	const char *db;     /* --db PATH */
	const char *socket; /* --socket PATH */
	bool json;          /* --json */
};
extern struct cli_globals cli_g;

#define CLI_SOCKET_MAX 1024

/* A usage error: one line naming the problem, and a hint to
 * 'proteusctl CMD --help'.  Returns CLI_EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* After getopt_long returned c ('?' or ':'; the optstring starts with ':'):
 * the usage error for the option it refused.  Returns CLI_EXIT_USAGE. */
int cli_bad_option(const char *cmd, char **argv, int c);

/* Split a comma-separated list (the value of flag, or NULL for none) into
 * at most CLI_LIST_MAX items, pointers into *ret_buf (malloc'd, the
 * caller frees it).  -1 to go on, else an exit code (already reported):
 * an empty item or too many items is a usage error. */
#define CLI_LIST_MAX 64
int cli_split_list(const char *flag, const char *arg, char **ret_buf,
		   char **v, size_t *ret_n);

/* Database path when the command has no --db: the global --db, else
 * $PROTEUS_DB, else the database of the proteusd answering on the default
 * socket (or the global --socket), else proto_default_db()'s rule (its
 * folder is created, mode 0700).  Returns a malloc'd string or NULL (and
 * says why on stderr). */
char *cli_default_db(void);

/* A file that file (a job spec) names: name itself when absolute or when
 * file has no folder, else name in file's folder.  Into buf. */
void cli_file_relative(const char *file, const char *name, char *buf,
		       size_t len);

/* The control socket into buf when the command has no --socket: the
 * global --socket, else proto_default_socket() ($PROTEUS_SOCKET, ...).
 * -1 to go on, else an exit code (already reported). */
int cli_socket_path(char *buf, size_t len);
/* String member k of o from the daemon, terminal-safe (none when it is
 * not a string), in one of four rotating buffers: enough for one
 * printf. */
const char *cli_term_str(json_t *o, const char *k, const char *none);

int cli_market(int argc, char **argv);
/* `market fetch`: DescribeSpotPriceHistory into the store (cli_market_fetch.c). */
int cli_market_fetch(int argc, char **argv);
int cli_simulate(int argc, char **argv);
/* `plan JOB.json`: the job replayed on the stored prices under BidBrain
 * at a few deadlines and spot caps, and on demand: the cost-time
 * frontier (cli_plan.c; simrun.h: what it shares with simulate). */
int cli_plan(int argc, char **argv);
int cli_history(int argc, char **argv);
/* cli_status.c: ask a running proteusd over its control socket. */
int cli_status(int argc, char **argv);
/* `pool`: the pool the jobs share, its limits, use and shares. */
int cli_pool(int argc, char **argv);
int cli_ping(int argc, char **argv);

/* How long a command waits for proteusd's answer. */
#define CLI_DAEMON_TIMEOUT_MS 5000
/* How long `submit` waits: as long as the daemon may take to read the
 * job's files (PROTO_SUBMIT_LOAD_S, agent/proto.h) and 30 s for the rest
 * (resolving the names in its URLs; storing the job: SQLite's busy
 * timeout is 5 s; a loaded host), so that a submit gives up on a job the
 * daemon then stores and runs only when the rest took longer than that
 * (the timeout's message says the job may be stored). */
#define CLI_SUBMIT_TIMEOUT_MS ((PROTO_SUBMIT_LOAD_S + 30) * 1000)

/* Send req (not consumed) to the daemon at sock; on success *ret is the
 * reply without "v" and "ok".  Otherwise logs the error and returns the
 * exit code: 1 daemon down or failed, 3 request refused as invalid, 4 not
 * found. */
int cli_daemon_call(const char *sock, json_t *req, json_t **ret);
/* cli_daemon_call waiting timeout_ms, with waiting(ctx, ms) told about
 * once a second while no reply came (NULL: no one) and, when it times
 * out, hint (may be NULL) appended to the error. */
int cli_daemon_call_waiting(const char *sock, json_t *req, int timeout_ms,
			    void (*waiting)(void *ctx, int64_t waited_ms),
			    void *ctx, const char *hint, json_t **ret);

/* proteusd's jobs (cli_jobs.c); `status ID` comes here from cli_status. */
int cli_submit(int argc, char **argv);
int cli_jobs(int argc, char **argv);
int cli_events(int argc, char **argv);
int cli_cancel(int argc, char **argv);
int cli_job_status(int argc, char **argv);
/* `report ID`: a job's money and fleet from the store (cli_report.c). */
int cli_report(int argc, char **argv);
/* `model ID -o FILE`: the job's last checkpoint exported (cli_model.c). */
int cli_model(int argc, char **argv);
/* `logs ID`: each node's program output, prefixed (cli_logs.c). */
int cli_logs(int argc, char **argv);

#endif
