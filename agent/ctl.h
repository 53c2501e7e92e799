/* ctl.h -- proteusctl's commands: one file per command (ctl_<name>.c),
 * each exporting `int ctl_<name>(int argc, char **argv)` that returns an
 * exit code (enum ctl_exit).  main_proteusctl.c holds the dispatch table.
 */
#ifndef PX_CTL_H
#define PX_CTL_H

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

/* Default database path: $PROTEUS_DB, else $XDG_DATA_HOME/proteus/proteus.db,
 * else ~/.local/share/proteus/proteus.db.  Creates the folder.  Returns a
 * malloc'd string or NULL (and says why on stderr). */
char *ctl_default_db(void);

int ctl_market(int argc, char **argv);
/* `market fetch`: DescribeSpotPriceHistory into the store (ctl_fetch.c). */
int ctl_market_fetch(int argc, char **argv);
int ctl_simulate(int argc, char **argv);
int ctl_history(int argc, char **argv);
/* ctl_daemon.c: ask a running proteusd over its control socket. */
int ctl_status(int argc, char **argv);
int ctl_ping(int argc, char **argv);

#endif
