/* ctl.h -- proteusctl's commands: one file per command (ctl_<name>.c),
 * each exporting `int ctl_<name>(int argc, char **argv)` that returns an
 * exit code (enum ctl_exit).  main_proteusctl.c holds the dispatch table.
 */
#ifndef PX_CTL_H
#define PX_CTL_H

#include <stdbool.h>
#include <stddef.h>

#include "../common/px.h"

/* Exit codes, documented in docs/proteusctl.md and proteusctl(1). */
enum ctl_exit {
	CTL_EXIT_OK = 0,      /* success */
	CTL_EXIT_FAIL = 1,    /* the operation failed (I/O, database, ...) */
	CTL_EXIT_USAGE = 2,   /* bad command line */
	CTL_EXIT_DATA = 3,    /* bad input data: trace, table, job spec */
	CTL_EXIT_NOTFOUND = 4 /* nothing matched (market, job, ...) */
};

/* Map a library error to the exit code a command returns. */
int ctl_exit_for(enum px_err e);

/* The options given before the command (`proteusctl --db X market`):
 * they apply to every command, which may override them with its own. */
struct ctl_globals {
	const char *db;     /* --db PATH */
	const char *socket; /* --socket PATH */
	bool json;          /* --json */
};
extern struct ctl_globals ctl_g;

#define CTL_SOCKET_MAX 1024

/* A usage error: one line naming the problem, and a hint to
 * 'proteusctl CMD --help'.  Returns CTL_EXIT_USAGE. */
int ctl_usage(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* After getopt_long returned c ('?' or ':'; the optstring starts with ':'):
 * the usage error for the option it refused.  Returns CTL_EXIT_USAGE. */
int ctl_bad_option(const char *cmd, char **argv, int c);

/* Split a comma-separated list (the value of flag, or NULL for none) into
 * at most CTL_LIST_MAX items, pointers into *ret_buf (malloc'd, the
 * caller frees it).  -1 to go on, else an exit code (already reported):
 * an empty item or too many items is a usage error. */
#define CTL_LIST_MAX 64
int ctl_split_list(const char *flag, const char *arg, char **ret_buf,
		   char **v, size_t *ret_n);

/* Database path when the command has no --db: the global --db, else
 * $PROTEUS_DB, else the database of the proteusd answering on the default
 * socket (or the global --socket), else proto_default_db()'s rule (its
 * folder is created, mode 0700).  Returns a malloc'd string or NULL (and
 * says why on stderr). */
char *ctl_default_db(void);

/* The control socket into buf when the command has no --socket: the
 * global --socket, else proto_default_socket() ($PROTEUS_SOCKET, ...).
 * -1 to go on, else an exit code (already reported). */
int ctl_socket_path(char *buf, size_t len);

int ctl_market(int argc, char **argv);
/* `market fetch`: DescribeSpotPriceHistory into the store (ctl_fetch.c). */
int ctl_market_fetch(int argc, char **argv);
int ctl_simulate(int argc, char **argv);
int ctl_history(int argc, char **argv);
/* ctl_daemon.c: ask a running proteusd over its control socket. */
int ctl_status(int argc, char **argv);
int ctl_ping(int argc, char **argv);

#endif
