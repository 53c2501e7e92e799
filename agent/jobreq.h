/* jobreq.h -- what `proteusctl submit` sends: the job spec of `simulate`
 * (bidbrain/jobspec.h, docs/jobspec.md) plus two sections of its own,
 * `trainer` (what runs on the instances) and `world` (where they run),
 * and four top-level fields: `policy`, `notify_url`, `scaling_measured`
 * and `scaling_explore`.
 * Strict: an unknown field, a value of the wrong type or out of range is
 * refused with the field's path ("trainer.epochs: ...").  Pure: no I/O.
 * docs/jobspec.md, "Jobs for proteusd", lists every field and default.
 */
#ifndef PX_JOBREQ_H
#define PX_JOBREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../bidbrain/billing.h"
#include "../bidbrain/jobspec.h"
#include "../common/px.h"
#include "world.h"

#define JOBREQ_PATH_MAX 1024

/* The most a submitted job can be as the daemon reads it.  proteusctl
 * submit reads a job file and the scaling_profile file it inlines, each
 * at most JOBSPEC_FILE_MAX (1 MiB), and sends them re-encoded as compact
 * JSON (jansson).  Whitespace goes and no string grows (the file had to
 * escape what jansson escapes), but a real number may: "0.1," (4 bytes)
 * comes out as "0.10000000000000001," (20), JOBREQ_GROWTH times as long.
 * Add the five paths submit makes absolute (PATH_MAX bytes each, 6 bytes
 * a byte at most when escaped).  PROTO_LINE_MAX holds this. */
#define JOBREQ_GROWTH 5
#define JOBREQ_SENT_MAX (JOBREQ_GROWTH * 2 * JOBSPEC_FILE_MAX + 5 * 6 * 4096)

/* trainer.data: the user's own data (docs/jobspec.md).  train "": none
 * (Fashion-MNIST from the daemon's data_dir). */
struct job_data {
	char train[JOBREQ_PATH_MAX];  /* absolute paths (proteusctl submit */
	char test[JOBREQ_PATH_MAX];   /* makes them so), or URLs */
	char train_sha256[65];        /* hex; needed for a URL, checked on */
	char test_sha256[65];         /* the node for a path where set */
	char format[8];               /* "libsvm", "csv", "idx"; "": from
				       * the names */
	char scale[12];               /* "none" (default) or "standard" */
	int label_column;             /* CSV: 1-based; default 1 */
};

struct job_trainer {
	char model[8];              /* "mlr", "mlp" or "mf" (ratings in
				     * data: docs/jobspec.md) */
	int rank;                   /* mf: factors a row, 1..1024; 0: the
				     * trainer's default */
	int epochs;                 /* 1..1000 */
	double target_accuracy;     /* 0: none; else stop once reached */
	int batch;                  /* 1..65536 */
	double lr;                  /* (0, 10] */
	int workers_per_instance;   /* 1..16 (DIST_NODE_MAX_WORKERS) */
	int checkpoint_every;       /* clocks; 0: after each evaluation */
	int checkpoint_budget;      /* bytes a prioritized, incremental
				     * checkpoint between full ones; 0: all
				     * full (docs/trainer.md) */
	char device[8];             /* "cpu" (default) or "cuda": where the
				     * nodes compute their gradients */
	bool adapt;                 /* co-adaptation: the coordinator's
				     * --adapt (docs/trainer.md, "Goodput
				     * and co-adaptation"); default off */
	struct job_data data;       /* trainer.data */
};

/* program: the user's own program (docs/programs.md), the second
 * workload ("workload": "program", implied by the section).  Its argv and
 * environment are packed: each string NUL-ended, one after another. */
#define PROGRAM_ARGS_MAX 256         /* command: argv entries */
#define PROGRAM_CMD_BYTES 16384      /* command: all of them, NULs too */
#define PROGRAM_ENV_MAX 128          /* env: variables */
#define PROGRAM_ENV_BYTES 32768      /* env: "K=V" each, NULs too */
#define PROGRAM_ENV_NAME_MAX 128     /* env: a name's bytes */
#define PROGRAM_PROCS_MAX 64         /* procs_per_node */
#define PROGRAM_NOTICE_S 120         /* a spot notice's 2 minutes */
#define PROGRAM_NOTICE_MARGIN_S 10   /* the node's own share of them */
#define PROGRAM_GRACE_DEFAULT_S (PROGRAM_NOTICE_S - PROGRAM_NOTICE_MARGIN_S)
#define PROGRAM_REFORM_DEFAULT_S 120 /* program.reform_seconds */
#define PROGRAM_RESTARTS_MAX 100     /* max_restarts_on_errors */
#define PROGRAM_KEEP_DEFAULT 3       /* checkpoint_keep */
#define PROGRAM_KEEP_MAX 100
#define PROGRAM_CKPT_MB_DEFAULT 4096 /* checkpoint_max_mb: one checkpoint */
#define PROGRAM_CKPT_MB_MAX (1024 * 1024)

struct job_program {
	bool on;                    /* the spec has a "program" section */
	char cmd[PROGRAM_CMD_BYTES]; /* command: argc strings, packed */
	int argc;                   /* 1..PROGRAM_ARGS_MAX */
	char code[JOBREQ_PATH_MAX]; /* code: an absolute folder (proteusctl
				     * submit makes it so) or an http(s)://
				     * or s3:// URL of a .tar.gz; "": none
				     * (the command is on the node) */
	char code_sha256[65];       /* hex; needed with a URL */
	char env[PROGRAM_ENV_BYTES]; /* env: nenv "K=V", packed, in the
				      * spec's order */
	int nenv;
	int nodes_min, nodes_max;   /* nodes: 1 <= min <= max <= the
				     * job's reliable.count +
				     * spot.max_instances; default 1:that */
	int procs_per_node;         /* 1..PROGRAM_PROCS_MAX, default 1 */
	int grace_seconds;          /* 1..PROGRAM_NOTICE_S - margin,
				     * default PROGRAM_GRACE_DEFAULT_S */
	int max_restarts_on_errors; /* 0..PROGRAM_RESTARTS_MAX, default 0 */
	int stall_seconds;          /* 0: none (default); else 10..604800 */
	int reform_seconds;         /* elastic: no progress this long after
				     * a peer left, a new start; 5..86400,
				     * default PROGRAM_REFORM_DEFAULT_S */
	int checkpoint_keep;        /* 1..PROGRAM_KEEP_MAX, default 3 */
	int64_t checkpoint_max_mb;  /* one checkpoint's bound, MiB */
	char checkpoint_store[JOBREQ_PATH_MAX]; /* "": the head node's job
				     * folder (default); "s3://BUCKET/PREFIX" */
	int64_t samples;            /* the job's work in samples (its
				     * progress' share done); 0: not said */
	char membership[8];         /* "auto" (default: elastic when the
				     * command is torchrun), "elastic" or
				     * "fixed" (docs/programs.md) */
};

struct job_world {
	bool named;                 /* the spec names its world (else the
				     * daemon's default, its `world` key) */
	char name[WORLD_NAME_MAX];  /* its world ("local", "ec2": one the
				     * registry has that runs the daemon's
				     * jobs, world.h); "" when not named,
				     * until submit sets the daemon's */
	double speedup;             /* local: market s per real s, 1..1e6;
				     * 0: the daemon's local_speedup */
	int64_t start_s;            /* local: where in the trace the job
				     * starts; 0: the trace's start */
	enum billing_model billing; /* local: legacy-hourly or per-second */
	bool have_billing;          /* else the daemon's default */
	char trace[JOBREQ_PATH_MAX];    /* local: spot-price trace; "":
					 * the daemon's */
	char ondemand[JOBREQ_PATH_MAX]; /* local: on-demand prices; "":
					 * the daemon's */
	bool rebalance_leave;       /* ec2: "rebalance": "leave" (a spot
				     * node leaves on a rebalance
				     * recommendation and is replaced);
				     * false: "ignore" (the default,
				     * docs/ec2-world.md says why) */
};

/* The local world's fastest market clock: at 1200 market s per real s a
 * 2-minute eviction notice leaves a node 100 ms to hand its work over
 * (about what a hand-off takes on loopback) and a node's start (about
 * half a second here) is 10 market minutes; faster, nodes are evicted
 * before they can leave and bills run while nothing trains. */
#define JOBREQ_SPEEDUP_MAX 1200

#define JOBREQ_URL_MAX 1024        /* notify_url, with its NUL */

struct job_request {
	struct jobspec spec;
	char policy[32];            /* "policy": default "bidbrain" */
	char workload[32];          /* "workload": what runs on its nodes
				     * (workload.h); default "trainer" */
	char notify_url[JOBREQ_URL_MAX]; /* "notify_url": where the job's
					  * events are POSTed; "": none */
	double weight;              /* "weight" (default 1, above 0 and
				     * at most JOBREQ_WEIGHT_MAX): its
				     * share of the pool scales with it
				     * (docs/pool.md) */
	bool scaling_measured;      /* "scaling_measured" (default true):
				     * BidBrain plans with the scaling the
				     * job measures once it has two points
				     * (docs/controller.md, "Measured
				     * scaling"); false: with the spec's
				     * all along (measured all the same) */
	/* "scaling_explore" (docs/jobspec.md; docs/controller.md,
	 * "Exploring the scaling"): BidBrain holds at most `start`
	 * instances until a count is measured, then at most growth x the
	 * largest count measured, so that the measured scaling sees the
	 * counts on the way up; on by default with the measured scaling
	 * and BidBrain, false: off */
	struct {
		bool on;
		int start;               /* 1 .. JOBSPEC_MEASURED_MAX */
		double growth;           /* JOBREQ_GROWTH_MIN .. _MAX */
	} explore;
	struct job_trainer trainer;    /* unset with a program */
	struct job_program program;    /* program.on: the program's */
	struct job_world world;
};

#define JOBREQ_WEIGHT_MAX 1000.0
#define JOBREQ_EXPLORE_START 1
#define JOBREQ_EXPLORE_GROWTH 2.0  /* Pollux's rule */
#define JOBREQ_GROWTH_MIN 1.0
#define JOBREQ_GROWTH_MAX 16.0

/* Parse a submit request of len bytes (at most JOBREQ_SENT_MAX) named
 * `name` in messages.  Top-level fields whose name starts with '_' are
 * comments, dropped.  What is left of the job spec once trainer, world,
 * policy and the comments are taken out is held to JOBSPEC_FILE_MAX as
 * compact JSON.  Every string has a bound, and a value over it is refused
 * with the field's path and the bound ("name: ... 63 bytes").
 * PX_EINVAL with the field's path, PX_ETOOBIG. */
enum px_err jobreq_parse(const char *buf, size_t len, const char *name,
			 struct job_request *ret, struct px_error *err);

#endif
