/* tcli.h -- what proteus-trainer's commands share: the command table's
 * row, struct tcli (where every option lands), the option engine
 * (tcli_opts.c) and the helpers of more than one command (tcli_common.c).
 *
 * One file per command, named after it: cmd_train.c is `train`,
 * cmd_role.c `coordinator`, `ps` and `worker`, cmd_node.c `node`, ...;
 * each exports `int tx_cmd_<name>(sc, argc, argv)` (argv[0] is the
 * command) returning the exit status.  main_proteus-trainer.c holds the
 * command table and the dispatch; tcli_opts.c the one option table.
 */
#ifndef PX_TRAINER_TCLI_H
#define PX_TRAINER_TCLI_H

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../../common/log.h"
#include "../../common/px.h"
#include "../io/ckpt.h"
#include "../dist/dist.h"
#include "../dist/dist_node.h"
#include "../dist/enroll_node.h"

#define PROG "proteus-trainer"

/* Exit codes (docs/trainer.md, "Exit codes"). */
enum tx_exit {
	TX_OK = 0,
	TX_FAIL = 1,   /* the run failed (not the input's fault) */
	TX_USAGE = 2,  /* bad command line */
	TX_DATA = 3,   /* bad input data: data set, checkpoint */
};

/* The commands, as the option table's rows name them. */
enum {
	C_TRAIN = 1 << 0,
	C_LOCAL = 1 << 1,
	C_ROLE = 1 << 2,  /* coordinator, ps, worker */
	C_EVAL = 1 << 3,
	C_NODE = 1 << 4,  /* node: the roles of one instance; it takes
			     the roles' options and passes them on */
	C_ENROLL = 1 << 5, /* enroll: get the job key as a node would */
	C_FETCH = 1 << 6,  /* fetch: a file by URL into the cache */
	C_PREDICT = 1 << 7, /* predict: a model's classes for a data set */
	C_PROGRAM = 1 << 8, /* program-node: a program job's node agent */
	C_DIST = C_LOCAL | C_ROLE,
	C_RUN = C_TRAIN | C_DIST,
};

struct subcmd {
	const char *name;
	unsigned mask;        /* C_* */
	const char *synopsis; /* after "usage: proteus-trainer NAME" */
	const char *summary;  /* one line */
	const char *more;     /* printed after the options; may be NULL */
	/* the command: argv[0] is its name; returns the exit status */
	int (*run)(const struct subcmd *sc, int argc, char **argv);
};

/* Where options land: everything a command may be given. */
struct tcli {
	struct dist_opts o;  /* train's options are o.train, o.data_dir,
				o.max_train, o.max_test, o.json */
	struct dist_local l; /* local's own */
	struct dist_node n;  /* node's own */
	struct enroll_node_opts en; /* enroll's */
	struct {             /* fetch's own */
		const char *sha256;
		const char *cache;
		uint64_t max_bytes;
	} f;
	struct {             /* predict's own */
		bool proba;
	} p;
	struct {             /* program-node's own */
		const char *hub;
		uint64_t inst;
		const char *log;
		const char *work;
		const char *listen;
	} g;
};

/* ---- the option engine (tcli_opts.c) ---- */

/* Parse sc's options (argv[0] is the command) into t.  For local and
 * node, the arguments the roles take are appended to role_args (*nargs
 * of them).  Returns -1 to go on, else the exit status (TX_OK after
 * --help). */
int tx_parse(const struct subcmd *sc, int argc, char **argv,
	     struct tcli *t, char **role_args, size_t *nargs);
/* What no single option's range says.  -1: fine, else the exit status. */
int tx_check_combination(const struct subcmd *sc, const struct tcli *t);
/* `proteus-trainer CMD --help`: synopsis, what it is, every option with
 * its default. */
void tx_help(const struct subcmd *sc, FILE *f);
/* text from column col (the cursor is there), wrapped at 79 columns,
 * continued at column indent. */
void tx_print_wrapped(FILE *f, const char *text, int col, int indent);
/* A usage error: one line, and where to read more (sc NULL: the
 * program's --help).  Returns TX_USAGE. */
int tx_usage(const struct subcmd *sc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A float as the user would type it: the fewest digits that read back
 * as f (0.05, not 0.0500000007). */
double tx_float_as_typed(float f);

/* ---- shared by the commands (tcli_common.c) ---- */

/* Set by SIGTERM and SIGINT once tx_take_stop_signals took them. */
extern volatile sig_atomic_t tx_stop_flag;

/* The exit status for a run's error: bad input files are TX_DATA. */
int tx_exit_for(enum px_err e);
/* Every option at its default for command sc (eval: one thread). */
void tcli_default(struct tcli *t, const struct subcmd *sc);
/* SIGTERM and SIGINT ask a role to leave; a SIGTERM sent with sigqueue
 * says by when (proteusd: the eviction's real deadline). */
void tx_take_stop_signals(void);
/* The library's log callback (dist_opts.log, dist_node.log). */
void tx_log_cb(void *arg, enum log_level level, const char *msg);
/* The data named by URL fetched into the cache and checked, and a local
 * file with a SHA-256 checked, before anything reads them.  -1: fine,
 * else the exit status. */
int tx_fetch_data(struct tcli *t);
/* A command's start: t at sc's defaults, argv parsed (tx_parse: role_args
 * and nargs as there, may be NULL), the combination checked and the data
 * fetched and checked.  -1: go on, else the exit status. */
int tx_options(const struct subcmd *sc, int argc, char **argv,
	       struct tcli *t, char **role_args, size_t *nargs);
/* A checkpoint or a model to write must be writable (exit 2), a
 * checkpoint to resume from must read back whole (exit 3).  -1: fine,
 * else the exit status. */
int tx_check_files(const char *ckpt, const char *resume,
		   const char *export_path);
/* A flat JSON object and a newline, each real in its shortest form. */
int tx_print_json(FILE *f, json_t *j);
/* One line for a role's or a node's log: the kernels it computes with. */
void tx_log_blas(int threads);
/* The "blas" object of --json: the kernels, how chosen, the threads. */
json_t *tx_blas_json(void);
/* An mf model from file (a checkpoint with ckpt, a model file without);
 * the message logged on an error. */
enum px_err tx_load_mf(const char *file, bool ckpt, struct ckpt_meta *m,
		       float **ret_params, struct px_error *err);
/* With DIST_PARENT_ENV set, a role dies with whoever started it.
 * Whether to go on. */
bool tx_watch_parent(void);
/* What local, node and the roles do first: the options parsed (the
 * roles' own into role_args, for local and node; NULL for a role),
 * checked, the data fetched, the files checked (local, coordinator).
 * -1 to go on, else the exit status. */
int tx_dist_start(const struct subcmd *sc, int argc, char **argv,
		  struct tcli *t, char **role_args);

/* ---- the commands, one file each ---- */

int tx_cmd_train(const struct subcmd *sc, int argc, char **argv);
int tx_cmd_eval(const struct subcmd *sc, int argc, char **argv);
int tx_cmd_predict(const struct subcmd *sc, int argc, char **argv);
int tx_cmd_fetch(const struct subcmd *sc, int argc, char **argv);
int tx_cmd_enroll(const struct subcmd *sc, int argc, char **argv);
int tx_cmd_local(const struct subcmd *sc, int argc, char **argv);
/* coordinator, ps and worker */
int tx_cmd_role(const struct subcmd *sc, int argc, char **argv);
int tx_cmd_node(const struct subcmd *sc, int argc, char **argv);
int tx_cmd_program(const struct subcmd *sc, int argc, char **argv);
int tx_cmd_ckpt_s3(const struct subcmd *sc, int argc, char **argv);

#endif
