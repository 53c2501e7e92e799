/* dist.h -- the distributed elastic trainer's roles: coordinator,
 * parameter server (ActivePS / BackupPS) and worker, each a single-threaded
 * loop over nanomsg sockets (nn_poll) speaking the wire protocol, plus the
 * `local` launcher that starts a whole job on one host.  The design is in
 * docs/trainer.md.
 */
#ifndef PX_DIST_H
#define PX_DIST_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/log.h"
#include "../../common/px.h"
#include "../io/dataset.h"
#include "../compute/model.h"
#include "net.h"
#include "../train_local.h"
#include "wire.h"

#define DIST_ADDR_MAX 120        /* a base address, bytes (< WIRE_STR_MAX) */
#define DIST_MAX_NODES 1024      /* members a coordinator tracks */
#define DIST_MAX_SHARDS 64       /* shards of the parameter vector */
#define DIST_COORD_NODE 0u       /* the coordinator's node id */
#define DIST_CLOCK_BATCHES 8     /* default --clock-batches */
#define DIST_CLOCK_BATCHES_MAX 4096 /* most minibatches in a clock */
#define DIST_KEY_ENV "PX_JOB_KEY" /* job key, hex, in the environment */
#define DIST_KEY_FILE_ENV "PX_JOB_KEY_FILE" /* or a file holding it
					     (common/keyfile.h) */
#define DIST_PARENT_ENV "PX_PARENT_WATCH" /* a role's parent: its pid (the
					   role exits if its parent is
					   another), or 1 (exits if its
					   parent is gone) */
#define DIST_AGENT_NODE 0xfffffffeu /* the agent's node id (PROGRESS) */

#define DIST_SLOW_MAX 8          /* --slow-worker-at / --fault-slow
				    periods */

/* A worker's compute stretched by factor from `at` s for `secs` s
 * (0: to the end): after each minibatch it waits (factor - 1) times the
 * minibatch's measured compute time (docs/trainer.md, "Stragglers"). */
struct dist_slow {
	double at;                 /* s after its first clock (worker), or
				      after the job's start (local) */
	double factor;             /* >= 1 */
	double secs;               /* 0: to the end */
	uint32_t worker;           /* local: the worker's index (0 is the
				      first started) */
};

/* Log callback: roles never write to stderr themselves.  level is one of
 * the project's (common/log.h). */
typedef void (*dist_log_fn)(void *arg, enum log_level level,
			    const char *msg);

/* Options common to every role (one table filled by the program). */
struct dist_opts {
	struct wire_node node;     /* this process's node id */
	uint64_t job;              /* job id */
	uint8_t key[WIRE_JOB_KEY_MAX]; /* job key (never from argv) */
	size_t key_len;            /* bytes */
	char coord[DIST_ADDR_MAX + 1];  /* coordinator's base address */
	char listen[DIST_ADDR_MAX + 1]; /* this node's base address */
	char agent[DIST_ADDR_MAX + 1];  /* coordinator: the agent's PULL
					   endpoint for PROGRESS; "": none */
	bool reliable;             /* a reliable (on-demand) node */
	struct train_opts train;   /* model, epochs, batch, lr, ... */
	const char *data_dir;      /* Fashion-MNIST dir; NULL: default */
	struct data_spec data;     /* the user's own data (data.train
				      NULL: Fashion-MNIST) */
	const char *train_sha256;  /* data.train's SHA-256 (hex): needed
				      for a URL (data_url.h) */
	const char *test_sha256;
	uint32_t max_train;        /* examples used (0: all) */
	uint32_t max_test;
	uint32_t data_memory_mb;   /* train, worker: MiB of training rows
				      held at once (more is read in chunks
				      each pass); 0: no bound */
	bool data_whole;           /* worker: load the whole training set,
				      not only its partition (and so help
				      stragglers: the coordinator relieves
				      them only then) */
	uint32_t workers;          /* initial workers (partitions, clocks) */
	uint32_t ps;               /* coordinator: PS nodes to wait for */
	uint32_t shards;           /* coordinator: shards (0: automatic) */
	uint16_t slack;            /* SSP bound, clocks (0 = BSP) */
	uint32_t clock_batches;    /* coordinator: minibatches a worker
				      trains between two pushes (a clock);
				      the others take it from ASSIGN */
	uint8_t stage;             /* coordinator: initial stage 1..3 */
	int64_t stage_at;          /* coordinator: switch at this clock */
	uint8_t stage_to;          /* ... to this stage (0: never) */
	uint32_t hb_ms;            /* heartbeat interval, ms */
	uint32_t hb_timeout_ms;    /* declared lost after this, ms */
	uint32_t stall_timeout_s;  /* coordinator: fail the job after this
				      long without a clock advance (or
				      without starting); 0: never */
	uint32_t sole_copy_timeout_s; /* coordinator: a PS holding a shard's
				      only copy silent this long fails the
				      job at once when a checkpoint of
				      this run exists; 0: wait for
				      stall_timeout_s */
	bool no_partial;           /* coordinator: a shard with no copy
				      left fails the job (from the
				      checkpoint), not reloaded alone */
	uint32_t fault_ps_sub_late_ms; /* PS, tests only: reads its other
				      sockets first, its subscription only
				      this long after its start */
	bool fault_lose_handoff;   /* PS, tests only: the first shard it
				      hands over is not sent (a hand-over
				      lost on the way) */
	uint32_t fault_late_push_ms; /* PS, tests only: hold each push
				      received (as still in flight) until
				      a read waits for pushes, this long
				      at most; 0: off */
	uint32_t fault_batch_ms;   /* worker, benches: a minibatch takes
				      at least this long, the rest a wait
				      (machines of their own on a few
				      cores; --fault-batch-ms) */
	int64_t fault_crash_at;    /* coordinator, tests only: SIGKILL
				      itself at this clock (0: never) */
	struct dist_slow slow[DIST_SLOW_MAX]; /* worker, test fault: its
				      compute stretched (--fault-slow) */
	uint32_t n_slow;
	bool no_reassign;          /* coordinator: no straggler relief
				      (--no-reassign) */
	bool adapt;                /* coordinator: co-adapt each worker's
				      batch and the lr on joins and
				      leaves (--adapt; docs/trainer.md,
				      "Goodput and co-adaptation") */
	bool adapt_clock;          /* coordinator: with --adapt, the
				      clock's length follows the batch
				      (--adapt-clock) */
	const char *test_visits;   /* worker, tests: at its end, how often
				      it trained each example, to
				      DIR/visits.NODE (one count a line);
				      NULL: not kept */
	const char *checkpoint;    /* coordinator: write checkpoints here
				      (ckpt.h); NULL: none */
	uint32_t checkpoint_every; /* ... every this many clocks (0: after
				      each evaluation only) */
	uint64_t checkpoint_budget; /* ... of at most this many bytes each
				      between full ones, the parameters
				      that changed most (ckpt.h's
				      records); 0: every one full */
	uint32_t checkpoint_full_every; /* ... and every this many a full
				      one (0: the default, 10) */
	const char *resume;        /* coordinator: resume the job from this
				      checkpoint; NULL: start afresh */
	const char *export_path;   /* coordinator: the final parameters to
				      this safetensors file (export.h) once
				      the job is done; NULL: none */
	bool json;                 /* coordinator: JSON result on out */
	bool eval_epochs;          /* coordinator: test after each epoch */
	uint32_t eval_every;       /* coordinator: and every this many
				      clocks (0: not) */
	int out_fd;                /* coordinator: progress and result */
	int ready_fd;              /* coordinator: one byte here when the
				      job starts, then closed; -1: none */
	dist_log_fn log;           /* may be NULL */
	void *log_arg;
	volatile sig_atomic_t *stop; /* set on SIGTERM: leave gracefully */
	volatile sig_atomic_t *leave_ms; /* a sigqueue'd SIGTERM's value
				      (dist_leave_sigval: the ms left to
				      leave in and why); 0 or NULL:
				      unknown */
	bool expect_joins;         /* coordinator: admit only the nodes the
				      agent names (WIRE_CMD_EXPECT) */
};

/* Defaults: MLP, 5 epochs, batch 128, 1 worker, 1 PS, slack 0, stage 1,
 * heartbeat 100 ms, timeout 800 ms, stall timeout 60 s, sole-copy
 * timeout 10 s. */
void dist_opts_default(struct dist_opts *o);

/* Read the job key: from the environment variable DIST_KEY_ENV (hex,
 * WIRE_JOB_KEY_MIN..MAX bytes), else from the file DIST_KEY_FILE_ENV
 * names (a regular file of ours, mode 0600 or 0400, 64 hex digits and an
 * optional newline: common/keyfile.h; the error names the path, never
 * the key).  DIST_KEY_ENV wins when both are set; both are removed from
 * the environment, whatever the outcome. */
enum px_err dist_key_from_env(struct dist_opts *o, struct px_error *err);

/* The endpoints of a base address: "ipc:///dir/n3" gives
 * "ipc:///dir/n3.rep" etc.; "tcp://host:P" gives ports P, P+1, P+2. */
enum dist_ep {
	DIST_EP_REP,   /* handshakes (coordinator), PULL requests (PS) */
	DIST_EP_PULL,  /* one-way inbox: CLOCK, HEARTBEAT, PUSH, FORWARD */
	DIST_EP_PUB,   /* coordinator broadcasts */
	DIST_EP_MAX
};
enum px_err dist_endpoint(const char *base, enum dist_ep ep, char *buf,
			  size_t len, struct px_error *err);
/* The port of a "tcp://host:P" address, checked to leave `more` ports
 * after it, and the length of "tcp://host". */
enum px_err dist_tcp_port(const char *base, unsigned long more,
			  size_t *ret_host_len, unsigned long *ret_port,
			  struct px_error *err);

/* Minibatches a worker trains in the whole run:
 * epochs * ceil(ceil(n / workers) / batch). */
int64_t dist_total_clocks(uint32_t n_train, uint32_t workers,
			  uint32_t epochs, uint32_t batch);
/* Clocks in the whole run, clock_batches minibatches each:
 * ceil(dist_total_clocks(...) / clock_batches). */
int64_t dist_job_clocks(uint32_t n_train, uint32_t workers, uint32_t epochs,
			uint32_t batch, uint32_t clock_batches);

/* The training set's examples and, for the user's own data (o->data),
 * what it fixes: width, labels, scaling (a pass over the file, nothing
 * kept; dataset.h).  Fashion-MNIST: its labels file's header, *prep
 * zeroed.  Release prep with data_prep_release. */
enum px_err dist_data_shape(const struct dist_opts *o, uint32_t *ret_n,
			    struct data_prep *prep, struct px_error *err);
/* Whether a worker reads only its partition of the training set (a
 * window; docs/trainer.md, "Who reads what"): the user's file unless
 * --data-whole; Fashion-MNIST only with --data-memory (otherwise whole:
 * 47 MB, and straggler relief needs a worker to hold every row). */
bool dist_partition_only(const struct dist_opts *o);
/* The model o names for data of prep (zeroed: Fashion-MNIST's). */
enum px_err dist_model_desc(const struct dist_opts *o,
			    const struct data_prep *prep,
			    struct model_desc *d, struct px_error *err);
/* The test set: o->data's held to prep, or Fashion-MNIST's. */
enum px_err dist_load_test(const struct dist_opts *o,
			   const struct data_prep *prep, struct data_set *ret,
			   struct px_error *err);

/* --model mf: the training ratings (o->data.train, o->max_train of
 * them) and the model they fix with o->train.rank (mf.h).  Every role
 * reads the file: the coordinator for the training RMSE, a PS for the
 * matrices' shape and seeded start, a worker for its partition.
 * Release ret with mf_set_release. */
struct mf_set;
struct mf_desc;
enum px_err dist_mf_load(const struct dist_opts *o, struct mf_set *ret,
			 struct mf_desc *d, struct px_error *err);

/* When a role told to stop must be gone (wall clock, us): the deadline
 * of the eviction notice it got, else DIST_LEAVE_DEFAULT_MS from now. */
#define DIST_LEAVE_DEFAULT_MS 2000
int64_t dist_leave_deadline_us(const struct dist_opts *o);

/* Straggler relief's split (docs/trainer.md, "Stragglers"): a straggler
 * of speed vs (minibatches a second) with `left` minibatches of its clock
 * still to train, the one it is in among them, and n idle helpers of
 * speeds vh[], helper k free t0[k] seconds from now (NULL: all now):
 * how many of its minibatches not begun each helper takes (ret[n]), so
 * that the last of them all ends as early as whole minibatches allow:
 * one at a time to whoever would end it first, while that is before the
 * straggler would.  (Shares in proportion to the speeds, each rounded
 * down, left a straggler with three helpers most of a short clock's
 * work.)  Returns the minibatches handed over in all. */
uint32_t dist_relief_split(double left, double vs, const double *vh,
			   const double *t0, uint32_t n, uint32_t *ret);
/* Why it leaves (enum wire_leave_reason): what the signal said, else an
 * eviction. */
uint8_t dist_leave_reason(const struct dist_opts *o);

/* The value of the sigqueue'd SIGTERM that tells a node to leave
 * (proteusd -> node -> roles): the ms left in the low 24 bits (capped at
 * 4.6 h), the reason (enum wire_leave_reason; 0: an eviction) above them.
 * A plain ms count is an eviction notice. */
#define DIST_LEAVE_MS_MASK 0xffffff
static inline int dist_leave_sigval(int64_t ms, uint8_t reason)
{
	if (ms < 1)
		ms = 1;
	if (ms > DIST_LEAVE_MS_MASK)
		ms = DIST_LEAVE_MS_MASK;
	return (int)(((unsigned)reason & 0x3f) << 24 | (unsigned)ms);
}

/* The learning rate of a worker's minibatch step `step` of `steps` (step
 * = clock * clock_batches + the minibatch in the clock), as `train`
 * computes it for its steps. */
float dist_lr(const struct train_opts *t, int64_t step, int64_t steps);

/* Placement of shards (docs/trainer.md, "Stages").  ps[] are the live PS
 * nodes, rel[i] whether ps[i] is reliable.  Splits nparams into nshards
 * contiguous ranges and fills map[nshards] for the stage. */
void dist_place(uint8_t stage, const struct wire_node *ps, const bool *rel,
		uint32_t nps, uint64_t nparams, uint32_t nshards,
		struct wire_shard *map);

/* dist_place for a vector of nrows rows of width floats (--model mf):
 * each shard a contiguous range of whole rows. */
void dist_place_rows(uint8_t stage, const struct wire_node *ps,
		     const bool *rel, uint32_t nps, uint64_t nrows,
		     uint32_t width, uint32_t nshards, struct wire_shard *map);

/* The roles.  Each runs until the job ends (SHUTDOWN), it has left, or a
 * fatal error; PX_OK on a normal end. */
enum px_err dist_coord_run(const struct dist_opts *o, struct px_error *err);
enum px_err dist_ps_run(const struct dist_opts *o, struct px_error *err);
enum px_err dist_worker_run(const struct dist_opts *o,
			    struct px_error *err);

/* `local`: start a coordinator, ps PS nodes (the first `reliable` of them
 * reliable) and `workers` workers on this host, as children running
 * `self` (this program), over ipc:// sockets in a private directory (or
 * dir), with a fresh job key in each child's environment. */
struct dist_local {
	const char *self;          /* path of proteus-trainer */
	const char *dir;           /* socket dir; NULL: a private temp dir */
	uint32_t reliable;         /* reliable PS nodes */
	double kill_worker_every;  /* s; 0: never.  Replaced at once */
	double kill_worker_at;     /* s; 0: never.  Once, replaced */
	double kill_ps_at;         /* s; 0: never.  An ActivePS (transient) */
	uint32_t kill_ps_at_clock; /* 0: never; else the same once the
				      job's clock (PROGRESS) reaches it */
	double leave_worker_at;    /* s; 0: never.  SIGTERM, then replace */
	double add_worker_at;      /* s; 0: never.  One extra worker */
	double add_ps_at;          /* s; 0: never.  One extra reliable PS
				      (stage 1 moves shards to it) */
	double churn_every;        /* s; 0: never.  A worker joins, until
				      churn_max work, then one is
				      SIGKILLed (not replaced) until one
				      is left, and again (goodput bench) */
	uint32_t churn_max;
	double pause_worker_at;    /* s; 0: never.  SIGSTOP one worker ... */
	double pause_ps_at;        /* s; 0: never.  ... or one transient PS
				      (the worker if both are set) ... */
	double pause_for;          /* ... for this long, then SIGCONT;
				      0: never resumed */
	double timeout_s;          /* kill everything after this; 0: none */
	struct dist_slow slow[DIST_SLOW_MAX]; /* --slow-worker-at: passed
				      to those workers as --fault-slow */
	uint32_t n_slow;
	uint32_t max_restarts;     /* a failed job (coordinator dead or
				      failed) is started again from
				      o->checkpoint up to this many times,
				      without the churn and test faults */
	char *const *role_args;    /* argv tail passed to every role (not
				      --resume and --fault-crash-at: the
				      coordinator gets those from o) */
};

/* Run the job; returns the exit status (docs/trainer.md, "Exit codes"):
 * the coordinator's (0 on success; 128 + N when killed by signal N), that
 * of a PS or worker that ended on its own and left the job unable to go
 * on (1..3), 124 past timeout_s, 130 on SIGINT/SIGTERM; with restarts,
 * the last attempt's.  On a failure err holds the clearest reason (the
 * failed role's own last error line). */
int dist_local_run(const struct dist_opts *o, const struct dist_local *l,
		   struct px_error *err);

#endif
