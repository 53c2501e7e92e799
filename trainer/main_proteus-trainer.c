/* main_proteus-trainer.c -- the trainer program: `train` (single
 * process), `eval` (a checkpoint), the distributed roles `coordinator`,
 * `ps` and `worker` (see docs/trainer.md), and `local`, which starts a
 * whole job on this host.
 *
 * Every option of every command is one row of topts[]: parsing, range
 * checks, --help (with each default) and which options `local` passes on
 * to the roles all read it.  Exit codes (docs/trainer.md, "Exit codes"):
 * 0 ok, 1 failure, 2 usage, 3 bad input data; `local` also 124 (its
 * --timeout), 130 (interrupted), 128+N (the coordinator killed by N).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "../common/jsonout.h"
#include "../common/log.h"
#include "../common/px.h"
#include "../cloudapi/fetch.h"
#include "blas_pick.h"
#include "ckpt.h"
#include "data.h"
#include "data_url.h"
#include "dataset.h"
#include "enroll_node.h"
#include "export.h"
#include "safetensors.h"
#include "../common/enroll.h"
#include "dist.h"
#include "dist_node.h"
#include "kern_cuda.h"
#include "train_local.h"
#include "train_mf.h"

#define PROG "proteus-trainer"

enum tx_exit {
	TX_OK = 0,
	TX_FAIL = 1,   /* the run failed (not the input's fault) */
	TX_USAGE = 2,  /* bad command line */
	TX_DATA = 3,   /* bad input data: data set, checkpoint */
};

/* The exit status for a run's error: bad input files are TX_DATA, as
 * proteusctl's cli_exit_for has it. */
static int exit_for(enum px_err e)
{
	switch (e) {
	case PX_OK:
		return TX_OK;
	case PX_EINVAL:
	case PX_ETOOBIG:
	case PX_ENOENT:
		return TX_DATA;
	default:
		return TX_FAIL;
	}
}

/* ---- the commands and their options ---- */

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
	C_DIST = C_LOCAL | C_ROLE,
	C_RUN = C_TRAIN | C_DIST,
};

struct subcmd {
	const char *name;
	unsigned mask;        /* C_* */
	const char *synopsis; /* after "usage: proteus-trainer NAME" */
	const char *summary;  /* one line */
	const char *more;     /* printed after the options; may be NULL */
};

/* How every role gets the job key (dist_key_from_env). */
#define KEY_HELP                                                          \
	"The job key is read from $" DIST_KEY_ENV " (hex) or, when that is " \
	"unset, from the file $" DIST_KEY_FILE_ENV " names (a regular file " \
	"of this user, mode 0600 or 0400, holding 64 hex digits and an "     \
	"optional newline); never from the command line.  Both are removed " \
	"from the environment once read."

static const struct subcmd subcmds[] = {
	{ "train", C_TRAIN, "[OPTIONS]",
	  "train a model in this one process, testing it after each epoch",
	  NULL },
	{ "local", C_LOCAL, "[OPTIONS]",
	  "run a whole elastic parameter-server job on this host "
	  "(coordinator, parameter servers, workers)",
	  "The roles' output comes through local; a role that dies on its "
	  "own ends the job at once with its error when the job cannot go "
	  "on without it.  Also exits 124 (--timeout), 130 (interrupted), "
	  "128+N (the coordinator killed by signal N)." },
	{ "eval", C_EVAL, "FILE [OPTIONS]",
	  "say what a checkpoint is and evaluate it on the test set",
	  NULL },
	{ "predict", C_PREDICT, "MODEL DATA [OPTIONS]",
	  "the class of each row of a data set by a model taken away "
	  "(--export's .safetensors) or a checkpoint, and the accuracy",
	  "MODEL: a .safetensors file of an nn.Sequential of Linear and "
	  "ReLU (--export's, or one of F32 tensors 0.weight, 0.bias, "
	  "2.weight, ...) or a checkpoint.  DATA: any file the trainer "
	  "reads (LIBSVM, CSV, IDX, plain or .gz), held to the model's "
	  "width and labels; its features are scaled as the model's "
	  "metadata says.  Prints each row's label (class k is the label "
	  "the model's metadata names), with --proba the probability of "
	  "each class (in the order of the labels), and the accuracy "
	  "against the data's labels on stderr.  Exit 3: a bad model file "
	  "or data (the message names the file and the field)." },
	{ "fetch", C_FETCH, "URL --sha256 HEX [--cache DIR] [--max-bytes N] "
	  "[--json]",
	  "get a data file by URL into this host's cache, checked by its "
	  "SHA-256, and print its path",
	  "URL: a path or file:///path (checked in place, never copied), "
	  "https://..., http:// to this host only, or s3://BUCKET/KEY "
	  "(signed with the AWS credentials of the environment, the profile "
	  "or the instance role; $AWS_ENDPOINT_URL_S3 names another "
	  "endpoint).  A download goes to DIR/sha256-HEX once its hash "
	  "matches; a later fetch of the same hash is served from there.  "
	  "Exit 3: the file is not the one named (checksum, size, not a "
	  "regular file)." },
	{ "coordinator", C_ROLE, "--node N --job ID --coord ADDR "
	  "--listen ADDR [OPTIONS]",
	  "a job's coordinator: membership, clock, placement, evaluation "
	  "(started by local or proteusd)",
	  KEY_HELP },
	{ "ps", C_ROLE, "--node N --job ID --coord ADDR --listen ADDR "
	  "[OPTIONS]",
	  "a parameter server holding shards of the model (started by local "
	  "or proteusd)",
	  KEY_HELP },
	{ "worker", C_ROLE, "--node N --job ID --coord ADDR --listen ADDR "
	  "[OPTIONS]",
	  "a worker computing gradients on its partition (started by local "
	  "or proteusd)",
	  KEY_HELP },
	{ "node", C_ROLE | C_NODE, "--node N --job ID --coord ADDR --listen "
	  "ADDR [--with-ps] [--node-workers K] [--reliable] [--stub] "
	  "[OPTIONS]",
	  "the roles of one instance, started, signalled and stopped "
	  "together: a parameter server (node N) and K workers (N+1..N+K) "
	  "(started by proteusd)",
	  "Every other option goes to the roles.  Role k listens on ADDR-k "
	  "(ipc://) or ADDR's port + 3k (tcp://).  SIGTERM reaches every "
	  "role with the value it was sent with (sigqueue: the milliseconds "
	  "left before an eviction or a release, and which, above bit 24); "
	  "when one role fails the others are "
	  "stopped and the node exits 1.  With --imds-notices a spot "
	  "interruption notice in the instance metadata is the same leave, "
	  "timed by the notice.  A role that the coordinator lists as "
	  "leaving (a release) leaves by itself.  The job key ($" DIST_KEY_ENV
	  ", or $" DIST_KEY_FILE_ENV ") is passed on in the environment to "
	  "the roles, which read it as the coordinator does.  With --stub "
	  "the node runs no role: it registers as node N with no role "
	  "(no shard, no partition, no clock) and heartbeats until a "
	  "SIGTERM, when it leaves and exits 0.  On an EC2 instance "
	  "(PX_ENROLL_* in the environment, from the user data, and no "
	  "job key) the node first enrolls, as `enroll` does." },
	{ "enroll", C_ENROLL, "[OPTIONS]",
	  "get the job's key from proteusd as a node on an EC2 instance "
	  "does (from $" ENROLL_ENV_ADDR ", $" ENROLL_ENV_JOB ", $"
	  ENROLL_ENV_PUB ", $" ENROLL_ENV_TICKET " and the instance's "
	  "signed identity document)",
	  "The key goes to a key file (mode 0600), by default "
	  "$STATE_DIRECTORY/job-N.key, else $HOME/.proteus/job-N.key; it "
	  "is never printed.  A key file already there is used as it is "
	  "(the ticket is single-use).  Exits 0 enrolled, 1 refused or no "
	  "answer, 2 usage.  docs/security.md has the scheme." },
};

#define N_SUBCMDS (sizeof(subcmds) / sizeof(subcmds[0]))

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
};

enum opt_kind {
	K_UINT,      /* unsigned integer of .size bytes in [min, max] */
	K_SECS,      /* double, seconds in [0, 1e6] */
	K_FLOAT,     /* float in [min, max] (see F_*_OPEN) */
	K_STR,       /* const char *, not empty */
	K_FLAG,      /* bool, no value */
	K_MODEL,     /* enum model_kind */
	K_DEVICE,    /* enum train_device */
	K_SCHEDULE,  /* enum train_schedule */
	K_ADDR,      /* char[.size]: a base address (dist_endpoint) */
	K_ENDPOINT,  /* char[.size]: an endpoint */
	K_STAGE_AT,  /* "CLOCK:STAGE" into o.stage_at, o.stage_to */
	K_FORMAT,    /* enum data_format */
	K_SCALE,     /* enum data_scale */
	K_SPARSE,    /* enum train_sparse */
	K_SLOW_AT,   /* "S:WORKER:FACTOR:SECONDS" appended to l.slow[] */
	K_SLOW,      /* "S:FACTOR:SECONDS" appended to o.slow[] */
};

enum {
	F_MIN_OPEN = 1 << 0, /* K_FLOAT: > min, not >= */
	F_MAX_OPEN = 1 << 1, /* K_FLOAT: < max, not <= */
	F_NOPASS = 1 << 2,   /* local keeps it (the coordinator gets it
				from local itself, not on restarts) */
	F_HIDDEN = 1 << 3,   /* not in --help (between local and roles) */
	F_NORANGE = 1 << 4,  /* K_UINT: the range is not worth printing */
	F_OWN = 1 << 5,      /* a node keeps it (it gives each role its
				own), not passed on to its roles */
};

struct topt {
	const char *name;  /* long option, without "--" */
	const char *arg;   /* its value in --help; NULL: a switch */
	unsigned cmds;     /* C_*: the commands that take it */
	enum opt_kind kind;
	size_t off;        /* where in struct tcli */
	size_t size;       /* bytes there */
	double min, max;   /* K_UINT, K_FLOAT */
	unsigned flags;    /* F_* */
	const char *help;  /* what it does (--help) */
	const char *def;   /* the default as --help says it; NULL: the
			      value in the defaults (see tcli_default) */
};

#define OPT(n, a, c, k, f, lo, hi, fl, h, d) \
	{ .name = n, .arg = a, .cmds = c, .kind = k, \
	  .off = offsetof(struct tcli, f), \
	  .size = sizeof(((struct tcli *)0)->f), .min = lo, .max = hi, \
	  .flags = fl, .help = h, .def = d }

static const struct topt topts[] = {
	/* the model and its training */
	OPT("model", "mlr|mlp|mf", C_RUN | C_EVAL | C_PREDICT, K_MODEL,
	    o.train.model, 0, 0, 0,
	    "multinomial logistic regression, an MLP 784-256-256-10, or "
	    "matrix factorization of user,item,rating triplets "
	    "(docs/trainer.md, \"Matrix factorization\"); eval, predict: "
	    "mf says the file must hold an mf model", NULL),
	OPT("rank", "R", C_RUN, K_UINT, o.train.rank, 1, MF_MAX_RANK, 0,
	    "mf: factors per user and per item", NULL),
	OPT("epochs", "N", C_RUN, K_UINT, o.train.epochs, 1, 100000, 0,
	    "passes over the training set", NULL),
	OPT("batch", "N", C_RUN, K_UINT, o.train.batch, 1, MODEL_MAX_BATCH,
	    0, "examples per step, per worker and clock", NULL),
	OPT("lr", "X", C_RUN, K_FLOAT, o.train.lr, 0, 1e6, F_MIN_OPEN,
	    "learning rate, > 0", NULL),
	OPT("momentum", "X", C_RUN, K_FLOAT, o.train.momentum, 0, 1,
	    F_MAX_OPEN, "SGD momentum, in [0, 1)", NULL),
	OPT("weight-decay", "X", C_RUN, K_FLOAT, o.train.weight_decay, 0,
	    1e6, 0, "L2 weight decay, >= 0", NULL),
	OPT("schedule", "const|cosine", C_RUN, K_SCHEDULE, o.train.schedule,
	    0, 0, 0, "learning rate over the run", NULL),
	OPT("device", "cpu|cuda", C_RUN, K_DEVICE, o.train.device, 0, 0, 0,
	    "where the gradients are computed; cuda needs a GPU and "
	    KERN_CUDA_LIB, NULL),
	OPT("threads", "N", C_RUN | C_EVAL | C_PREDICT, K_UINT, o.train.threads, 0, 1024,
	    0, "OpenBLAS threads, 0: its default", NULL),
	OPT("seed", "N", C_RUN, K_UINT, o.train.seed, 0, (double)UINT64_MAX,
	    F_NORANGE, "initial parameters and shuffles", NULL),
	/* data */
	OPT("data", "DIR", C_RUN | C_EVAL, K_STR, o.data_dir, 0, 0, 0,
	    "the Fashion-MNIST files", DATA_FASHION_MNIST_DIR),
	OPT("train-data", "FILE", C_RUN, K_STR, o.data.train, 0, 0, 0,
	    "your own training set: LIBSVM, CSV or IDX, plain or .gz "
	    "(docs/trainer.md, \"Your own data\"); needs --test-data",
	    "Fashion-MNIST"),
	OPT("test-data", "FILE", C_RUN | C_EVAL, K_STR, o.data.test, 0, 0, 0,
	    "your own test set, in the training set's format; its labels "
	    "and features must be the training set's", "Fashion-MNIST"),
	OPT("train-sha256", "HEX", C_RUN, K_STR, o.train_sha256, 0, 0, 0,
	    "the training set's SHA-256: needed when --train-data is a URL "
	    "(s3://, https://: fetched into the cache, docs/trainer.md, "
	    "\"Data by URL\"), checked in place for a path", "none"),
	OPT("test-sha256", "HEX", C_RUN | C_EVAL, K_STR, o.test_sha256, 0, 0,
	    0, "the test set's SHA-256, likewise", "none"),
	OPT("data-format", "libsvm|csv|idx", C_RUN | C_EVAL | C_PREDICT,
	    K_FORMAT,
	    o.data.format, 0, 0, 0, "the files' format",
	    "from each name: .svm, .libsvm, .csv, *idx3-ubyte, each maybe "
	    ".gz"),
	OPT("label-column", "N", C_RUN | C_EVAL | C_PREDICT, K_UINT, o.data.label_col, 1,
	    DATA_MAX_FEATURES + 1, F_NORANGE, "CSV: the column of the label",
	    NULL),
	OPT("scale", "none|standard", C_RUN, K_SCALE, o.data.scale, 0, 0, 0,
	    "features as they are, or standardized by the training set's "
	    "mean and deviation (kept in checkpoints)", NULL),
	OPT("sparse", "auto|on|off", C_RUN, K_SPARSE, o.train.sparse, 0, 0,
	    0, "batches of LIBSVM rows as sparse rows, computed on their "
	    "non-zeros (CPU, unscaled); auto: when at most 5% of the "
	    "features are non-zero (docs/trainer.md, \"Sparse data\")",
	    NULL),
	OPT("data-memory", "MiB", C_RUN, K_UINT, o.data_memory_mb, 0,
	    1u << 20, F_NORANGE, "MiB of training rows held at once; a "
	    "larger set (a worker's partition) is read in chunks each pass "
	    "(Fashion-MNIST: a worker then reads only its partition, and "
	    "straggler relief is off). 0: no bound", NULL),
	OPT("data-whole", NULL, C_DIST, K_FLAG, o.data_whole, 0, 0, 0,
	    "each worker loads the whole training set, not only its "
	    "partition (straggler relief needs it)", NULL),
	OPT("max-train", "N", C_RUN, K_UINT, o.max_train, 0,
	    DATA_IDX_MAX_ITEMS, F_NORANGE,
	    "training examples used, 0: all", NULL),
	OPT("max-test", "N", C_RUN | C_EVAL, K_UINT, o.max_test, 0,
	    DATA_IDX_MAX_ITEMS, F_NORANGE, "test examples used, 0: all",
	    NULL),
	OPT("json", NULL, C_RUN | C_EVAL | C_FETCH | C_PREDICT, K_FLAG, o.json, 0, 0, 0,
	    "print the result as one JSON object on stdout, progress on "
	    "stderr",
	    NULL),
	OPT("proba", NULL, C_PREDICT, K_FLAG, p.proba, 0, 0, 0,
	    "the probability of each class too", NULL),
	/* fetch */
	OPT("sha256", "HEX", C_FETCH, K_STR, f.sha256, 0, 0, 0,
	    "the file's SHA-256, 64 hex digits; needed for a remote URL",
	    "none"),
	OPT("cache", "DIR", C_FETCH, K_STR, f.cache, 0, 0, 0,
	    "where downloads are kept (made mode 0700)",
	    "$STATE_DIRECTORY/data, else ~/.cache/proteus/data"),
	OPT("max-bytes", "N", C_FETCH, K_UINT, f.max_bytes, 1,
	    (double)UINT64_MAX, F_NORANGE, "refuse a larger file", NULL),
	/* train's checkpoints */
	OPT("checkpoint", "FILE", C_TRAIN, K_STR, o.train.checkpoint, 0, 0, 0,
	    "write a checkpoint here after each epoch; its directory must "
	    "be writable", "none"),
	OPT("resume", "FILE", C_TRAIN, K_STR, o.train.resume, 0, 0, 0,
	    "go on from this checkpoint of a run of the same shape", "none"),
	OPT("export", "FILE", C_TRAIN, K_STR, o.train.export_path, 0, 0, 0,
	    "write the trained model here at the end: safetensors, an "
	    "nn.Sequential's tensors and the labels and scaling "
	    "(docs/trainer.md, \"Take the model away\")", "none"),
	OPT("fault-crash-after", "EPOCH", C_TRAIN, K_UINT,
	    o.train.fault_crash_after, 0, 100000, F_NORANGE,
	    "test fault: SIGKILL itself after this epoch's checkpoint, "
	    "0: never", NULL),
	/* the distributed job */
	OPT("workers", "N", C_DIST, K_UINT, o.workers, 1, DIST_MAX_NODES, 0,
	    "workers at the start (the partitions)", NULL),
	OPT("ps", "N", C_DIST, K_UINT, o.ps, 1, DIST_MAX_NODES, 0,
	    "parameter servers", NULL),
	OPT("reliable", "R", C_LOCAL, K_UINT, l.reliable, 0, DIST_MAX_NODES,
	    F_NORANGE, "how many of the PS are reliable, at most --ps",
	    NULL),
	OPT("reliable", NULL, C_ROLE, K_FLAG, o.reliable, 0, 0, F_OWN,
	    "this node is reliable (on-demand)", NULL),
	OPT("slack", "S", C_DIST, K_UINT, o.slack, 0, UINT16_MAX, 0,
	    "SSP staleness bound in clocks, 0: BSP", NULL),
	OPT("stage", "N", C_DIST, K_UINT, o.stage, 1, 3, 0,
	    "placement stage: 1 PS on reliable nodes, 2 with backups, "
	    "3 and reliable workers hold no partition", NULL),
	OPT("stage-at", "CLOCK:STAGE", C_DIST, K_STAGE_AT, o.stage_at, 0, 0,
	    0, "switch to STAGE (1..3) at CLOCK", "never"),
	OPT("shards", "N", C_DIST, K_UINT, o.shards, 0, DIST_MAX_SHARDS, 0,
	    "shards of the parameter vector, 0: one per PS", NULL),
	OPT("eval-epochs", NULL, C_DIST, K_FLAG, o.eval_epochs, 0, 0, 0,
	    "evaluate on the test set after each epoch", NULL),
	OPT("eval-every", "N", C_DIST, K_UINT, o.eval_every, 0, 1000000, 0,
	    "also test every N clocks: a learning curve at a finer grain "
	    "than epochs (a measurement: neither a checkpoint nor the state "
	    "partial recovery reloads from), 0: not", NULL),
	OPT("heartbeat", "MS", C_DIST, K_UINT, o.hb_ms, 1, 60000, 0,
	    "heartbeat interval", NULL),
	OPT("hb-timeout", "MS", C_DIST, K_UINT, o.hb_timeout_ms, 1, 600000,
	    0, "a node silent this long is lost; more than --heartbeat",
	    NULL),
	OPT("stall-timeout", "S", C_DIST, K_UINT, o.stall_timeout_s, 0,
	    86400, 0, "fail the job after this long without progress, "
	    "0: never", NULL),
	OPT("sole-copy-timeout", "S", C_DIST, K_UINT, o.sole_copy_timeout_s,
	    0, 86400, 0, "a PS holding a shard's only copy silent this long "
	    "is lost (its shards reloaded, or with --no-partial-recovery the "
	    "job fails from the checkpoint), 0: --stall-timeout", NULL),
	OPT("no-partial-recovery", NULL, C_DIST, K_FLAG, o.no_partial, 0, 0,
	    0, "a shard whose every copy is lost fails the job (a restart "
	    "from the checkpoint, with local --max-restarts) instead of "
	    "being reloaded alone from the last state pulled", NULL),
	OPT("clock-batches", "N", C_DIST, K_UINT, o.clock_batches, 1,
	    DIST_CLOCK_BATCHES_MAX, 0, "minibatches a worker trains between "
	    "two pushes of its updates (a clock)", NULL),
	OPT("checkpoint", "FILE", C_DIST, K_STR, o.checkpoint, 0, 0, 0,
	    "the coordinator writes checkpoints here after each evaluation; "
	    "its directory must be writable", "none"),
	OPT("checkpoint-every", "CLOCKS", C_DIST, K_UINT, o.checkpoint_every,
	    0, INT32_MAX, F_NORANGE, "and every CLOCKS clocks, 0: after "
	    "evaluations only; needs --checkpoint", NULL),
	OPT("checkpoint-budget", "BYTES", C_DIST, K_UINT, o.checkpoint_budget,
	    CKPT_DELTA_FIXED + 8, (double)CKPT_MAX_BYTES, 0, "prioritized, "
	    "incremental checkpoints: between full ones, each writes only the "
	    "parameters that changed most since the files last had them, in "
	    "at most BYTES", "every checkpoint full"),
	OPT("checkpoint-full-every", "N", C_DIST, K_UINT,
	    o.checkpoint_full_every, 1, 1000000, 0, "with --checkpoint-budget:"
	    " every Nth checkpoint is a full one", "10"),
	OPT("resume", "FILE", C_DIST, K_STR, o.resume, 0, 0, F_NOPASS,
	    "go on from this checkpoint of a job of the same shape", "none"),
	OPT("export", "FILE", C_DIST, K_STR, o.export_path, 0, 0, 0,
	    "the coordinator writes the final model here when the job is "
	    "done: safetensors, as train --export", "none"),
	OPT("max-restarts", "N", C_LOCAL, K_UINT, l.max_restarts, 0, 100, 0,
	    "restart a failed job from its checkpoint up to N times; needs "
	    "--checkpoint", NULL),
	OPT("timeout", "S", C_LOCAL, K_SECS, l.timeout_s, 0, 0, 0,
	    "stop the job after S seconds, exit 124", "none"),
	OPT("dir", "DIR", C_LOCAL, K_STR, l.dir, 0, 0, 0,
	    "the sockets' directory", "$TMPDIR/pxtrainer.PID.XXXXXX"),
	/* local's churn */
	OPT("kill-worker-every", "S", C_LOCAL, K_SECS, l.kill_worker_every,
	    0, 0, 0, "SIGKILL a worker every S s and start another",
	    "never"),
	OPT("kill-worker-at", "S", C_LOCAL, K_SECS, l.kill_worker_at, 0, 0,
	    0, "SIGKILL a worker once, S s into the job, and start another",
	    "never"),
	OPT("kill-ps-at", "S", C_LOCAL, K_SECS, l.kill_ps_at, 0, 0, 0,
	    "SIGKILL a transient PS at S s and start another", "never"),
	OPT("kill-ps-at-clock", "C", C_LOCAL, K_UINT, l.kill_ps_at_clock, 0,
	    100000000, F_NORANGE, "the same once the job's clock reaches C "
	    "(as the coordinator's reports say it: within a report's "
	    "interval)", "never"),
	OPT("leave-worker-at", "S", C_LOCAL, K_SECS, l.leave_worker_at, 0, 0,
	    0, "SIGTERM a worker (it leaves) at S s and start another",
	    "never"),
	OPT("churn-every", "S", C_LOCAL, K_SECS, l.churn_every, 0, 0, 0,
	    "every S s a worker joins until --churn-max work, then one is "
	    "SIGKILLed (not replaced) until one is left, and again",
	    "never"),
	OPT("churn-max", "N", C_LOCAL, K_UINT, l.churn_max, 1,
	    DIST_MAX_NODES, 0, "the most workers --churn-every adds up to",
	    NULL),
	OPT("add-worker-at", "S", C_LOCAL, K_SECS, l.add_worker_at, 0, 0, 0,
	    "start one more worker at S s", "never"),
	OPT("add-ps-at", "S", C_LOCAL, K_SECS, l.add_ps_at, 0, 0, 0,
	    "start one more PS, a reliable one, at S s (a placement moves "
	    "shards to it: in stage 1 their only copy)", "never"),
	OPT("pause-worker-at", "S", C_LOCAL, K_SECS, l.pause_worker_at, 0, 0,
	    0, "SIGSTOP a worker at S s", "never"),
	OPT("pause-ps-at", "S", C_LOCAL, K_SECS, l.pause_ps_at, 0, 0, 0,
	    "SIGSTOP a transient PS at S s", "never"),
	OPT("pause-for", "S", C_LOCAL, K_SECS, l.pause_for, 0, 0, 0,
	    "SIGCONT it S s later, 0: never", NULL),
	OPT("slow-worker-at", "S:WORKER:FACTOR:SECONDS", C_LOCAL, K_SLOW_AT,
	    l.slow, 0, 0, 0, "from S s into the job, stretch the compute of "
	    "worker WORKER (0: the first started) by FACTOR (>= 1) for "
	    "SECONDS (0: to the end): it waits FACTOR - 1 times each "
	    "minibatch's measured time; repeatable, up to 8", "none"),
	/* straggler relief */
	OPT("no-reassign", NULL, C_DIST, K_FLAG, o.no_reassign, 0, 0, 0,
	    "coordinator: no straggler relief (a slow worker's minibatches "
	    "are not handed to idle peers; docs/trainer.md, \"Stragglers\")",
	    NULL),
	/* goodput */
	OPT("adapt", NULL, C_DIST, K_FLAG, o.adapt, 0, 0, 0,
	    "coordinator: co-adaptation: on every join and leave, each "
	    "worker's batch (at most --batch) and the lr factor are decided "
	    "anew from the measured gradient noise scale (docs/trainer.md, "
	    "\"Goodput and co-adaptation\"); without it they stay --batch "
	    "and --lr, and goodput is only measured", NULL),
	OPT("adapt-clock", NULL, C_DIST, K_FLAG, o.adapt_clock, 0, 0, 0,
	    "coordinator: with --adapt, a smaller batch makes a clock of "
	    "more minibatches (as many examples a push as at --batch; "
	    "measured no faster on one host: docs/trainer.md)", NULL),
	/* test faults */
	OPT("fault-batch-ms", "MS", C_DIST, K_UINT, o.fault_batch_ms, 0,
	    10000, 0, "bench fault: each minibatch of --batch examples takes "
	    "at least MS ms (a smaller one in proportion: co-adaptation's), "
	    "the rest of it a wait that takes no CPU (so that workers "
	    "behave as machines of their own on a host of fewer cores; "
	    "--slow-worker-at stretches it too), 0: off", NULL),
	OPT("fault-late-push", "MS", C_DIST, K_UINT, o.fault_late_push_ms, 0,
	    90, 0, "test fault: workers send CLOCK first, their pushes MS "
	    "later, 0: off", NULL),
	OPT("fault-ps-sub-late", "MS", C_DIST, K_UINT, o.fault_ps_sub_late_ms,
	    0, 10000, 0, "test fault: each PS reads the coordinator's "
	    "broadcasts only MS ms after its start (what else comes is read "
	    "once the membership lists it), 0: off", NULL),
	OPT("fault-lose-handoff", NULL, C_DIST, K_FLAG, o.fault_lose_handoff,
	    0, 0, 0, "test fault: each PS drops the first shard state it "
	    "hands over (as if lost on the way; the new holder is reloaded "
	    "from the coordinator's last state)", NULL),
	OPT("fault-slow", "S:FACTOR:SECONDS", C_ROLE, K_SLOW, o.slow, 0, 0, 0,
	    "test fault, worker: from S s after its first clock, stretch its "
	    "compute by FACTOR for SECONDS (0: to the end); repeatable, up "
	    "to 8 (local --slow-worker-at gives it)", "none"),
	OPT("test-visits", "DIR", C_DIST, K_STR, o.test_visits, 0, 0, 0,
	    "tests: each worker writes how often it trained each example to "
	    "DIR/visits.NODE at its end, one count a line", "none"),
	OPT("fault-crash-at", "CLOCK", C_DIST, K_UINT, o.fault_crash_at, 0,
	    INT32_MAX, F_NOPASS | F_NORANGE, "test fault: the coordinator "
	    "SIGKILLs itself at CLOCK, 0: never", NULL),
	/* a role's place in the job (local and proteusd give them) */
	OPT("node", "N", C_ROLE, K_UINT, o.node.v, 0, UINT32_MAX - 1,
	    F_NORANGE | F_OWN, "this node's id; the coordinator is 0", NULL),
	OPT("job", "ID", C_ROLE, K_UINT, o.job, 0, (double)UINT64_MAX,
	    F_NORANGE, "the job's id", NULL),
	OPT("coord", "ADDR", C_ROLE, K_ADDR, o.coord, 0, 0, 0,
	    "the coordinator's base address: ipc:///dir/n0 or "
	    "tcp://host:port", "none"),
	OPT("listen", "ADDR", C_ROLE, K_ADDR, o.listen, 0, 0, F_OWN,
	    "this node's base address", "none"),
	OPT("expect-joins", NULL, C_ROLE, K_FLAG, o.expect_joins, 0, 0, 0,
	    "coordinator: admit only the nodes the agent names (EXPECT), "
	    "each with the roles it grants; others wait", NULL),
	OPT("with-ps", NULL, C_NODE, K_FLAG, n.ps, 0, 0, F_OWN,
	    "node: run a parameter server (node N)", NULL),
	OPT("node-workers", "K", C_NODE, K_UINT, n.workers, 0,
	    DIST_NODE_MAX_WORKERS, F_OWN,
	    "node: run K workers (nodes N+1..N+K)", NULL),
	OPT("stub", NULL, C_NODE, K_FLAG, n.stub, 0, 0, F_OWN,
	    "node: run no role; register with the coordinator as node N "
	    "with no role, then only heartbeat, every second (benchmarks "
	    "of many instances; the coordinator's --hb-timeout must be "
	    "longer)", NULL),
	OPT("imds-notices", NULL, C_NODE, K_FLAG, n.imds, 0, 0, F_OWN,
	    "node: poll the instance metadata (IMDSv2) for a spot "
	    "interruption notice, on which the roles leave by its time, "
	    "and for a rebalance recommendation", NULL),
	OPT("imds-poll-ms", "MS", C_NODE, K_UINT, n.imds_poll_ms, 50,
	    600000, F_OWN, "node: between two polls",
	    "5 s of the notices' clock: 5000 / K"),
	OPT("imds-margin-ms", "MS", C_NODE, K_UINT, n.imds_margin_ms, 0,
	    600000, F_OWN, "node: the roles are to be gone this long before "
	    "the notice's time (at most a quarter of the time left)", NULL),
	OPT("leave-on-rebalance", NULL, C_NODE, K_FLAG, n.leave_on_rebalance,
	    0, 0, F_OWN, "node: a rebalance recommendation is a leave "
	    "(reason rebalance), not only a log line", NULL),
	OPT("clock-speedup", "K", C_NODE, K_UINT, n.clock_speedup, 1, 1200,
	    F_OWN, "node: the notices' times are on a clock K times faster "
	    "than real time (a fake EC2's; AWS: 1)", NULL),
	OPT("clock-origin", "T0", C_NODE, K_UINT, n.clock_origin_s, 0,
	    4102444800.0, F_OWN | F_NORANGE, "node: Unix seconds that clock "
	    "runs from (T0 + (now - T0) * K); needed with --clock-speedup",
	    "none"),
	OPT("signature", "FILE", C_ENROLL, K_STR, en.sig_file, 0, 0, 0,
	    "enroll: the PKCS#7 signature of the identity document "
	    "(base64) from FILE, not from the instance metadata", NULL),
	OPT("key-file", "FILE", C_ENROLL, K_STR, en.key_path, 0, 0, 0,
	    "enroll: write the key here", "the node's key file"),
	OPT("once", NULL, C_ENROLL, K_FLAG, en.once, 0, 0, 0,
	    "enroll: ask once; a refusal is final", NULL),
	OPT("wait-ms", "MS", C_ENROLL, K_UINT, en.wait_ms, 1, 3600000, 0,
	    "enroll: ask again until this long has passed", "600000"),
	OPT("agent", "ENDPOINT", C_ROLE, K_ENDPOINT, o.agent, 0, 0, 0,
	    "coordinator: PUSH PROGRESS frames to the agent's PULL here",
	    "none"),
	OPT("ready-fd", "FD", C_ROLE, K_UINT, o.ready_fd, 3, 1023, F_HIDDEN,
	    "coordinator: one byte there when the job starts", NULL),
};

#define N_TOPTS (sizeof(topts) / sizeof(topts[0]))
#define OPT_BASE 0x100 /* getopt_long's val for topts[i]: OPT_BASE + i */

static volatile sig_atomic_t stop_flag;
static volatile sig_atomic_t leave_ms; /* a sigqueue'd SIGTERM's value:
					  ms left and why (dist_leave_sigval) */

static void on_stop(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (sig == SIGTERM && si && si->si_code == SI_QUEUE &&
	    si->si_value.sival_int > 0)
		leave_ms = si->si_value.sival_int;
	stop_flag = 1;
}

/* SIGTERM and SIGINT ask a role to leave; a SIGTERM sent with sigqueue
 * says by when (proteusd: the eviction's real deadline). */
static void take_stop_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_stop;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

static void log_cb(void *arg, enum log_level level, const char *msg)
{
	(void)arg;
	log_msg(level, "%s", msg);
}

/* Every option at its default for command sc (eval: one thread). */
static void tcli_default(struct tcli *t, const struct subcmd *sc)
{
	memset(t, 0, sizeof(*t));
	dist_opts_default(&t->o);
	t->o.log = log_cb;
	t->o.stop = &stop_flag;
	t->o.leave_ms = &leave_ms;
	t->n.workers = 1;
	t->n.imds_margin_ms = DIST_NODE_IMDS_MARGIN_MS;
	t->n.clock_speedup = 1;
	t->l.self = "/proc/self/exe";
	t->l.churn_max = 4;
	t->f.max_bytes = FETCH_MAX_BYTES_DEFAULT;
	if (sc->mask & (C_EVAL | C_PREDICT))
		t->o.train.threads = 1;
}

static const struct subcmd *find_subcmd(const char *name)
{
	for (size_t i = 0; i < N_SUBCMDS; i++)
		if (!strcmp(subcmds[i].name, name))
			return &subcmds[i];
	return NULL;
}

/* A usage error: one line, and where to read more.  Returns TX_USAGE. */
static int usage_error(const struct subcmd *sc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int usage_error(const struct subcmd *sc, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_err("%s (see '" PROG "%s%s --help')", msg, sc ? " " : "",
		sc ? sc->name : "");
	return TX_USAGE;
}

/* text from column col (the cursor is there), wrapped at 79 columns,
 * continued at column indent. */
static void print_wrapped(FILE *f, const char *text, int col, int indent)
{
	const char *p = text;

	while (*p) {
		size_t w = strcspn(p, " ");

		if (col > indent && col + 1 + (int)w > 79) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', f);
			col++;
		}
		fprintf(f, "%.*s", (int)w, p);
		col += (int)w;
		p += w;
		p += strspn(p, " ");
	}
	fputc('\n', f);
}

static uint64_t get_uint(const void *p, size_t size)
{
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64 = 0;

	switch (size) {
	case 1:
		memcpy(&u8, p, 1);
		return u8;
	case 2:
		memcpy(&u16, p, 2);
		return u16;
	case 4:
		memcpy(&u32, p, 4);
		return u32;
	default:
		memcpy(&u64, p, sizeof(u64));
		return u64;
	}
}

static void set_uint(void *p, size_t size, uint64_t v)
{
	uint8_t u8 = (uint8_t)v;
	uint16_t u16 = (uint16_t)v;
	uint32_t u32 = (uint32_t)v;

	switch (size) {
	case 1:
		memcpy(p, &u8, 1);
		break;
	case 2:
		memcpy(p, &u16, 2);
		break;
	case 4:
		memcpy(p, &u32, 4);
		break;
	default:
		memcpy(p, &v, sizeof(v));
		break;
	}
}

/* A float as the user would type it: the fewest digits that read back
 * as f (0.05, not 0.0500000007). */
static double float_as_typed(float f)
{
	char buf[32];

	for (int p = 1; p <= 9; p++) {
		snprintf(buf, sizeof(buf), "%.*g", p, (double)f);
		if (strtof(buf, NULL) == f)
			break;
	}
	return strtod(buf, NULL);
}

/* A K_UINT option's range as integers (max: o->max, or all that the
 * field holds, where a double cannot say it exactly: 2^64 - 1 is 2^64 as
 * a double). */
static uint64_t uint_min(const struct topt *o)
{
	return (uint64_t)o->min;
}

static uint64_t uint_max(const struct topt *o)
{
	uint64_t field = o->size >= 8 ? UINT64_MAX
				      : (UINT64_C(1) << (8 * o->size)) - 1;

	return o->max >= (double)field ? field : (uint64_t)o->max;
}

/* The default of option o as --help says it. */
static void default_text(const struct topt *o, const struct tcli *d,
			 char *buf, size_t len)
{
	const void *p = (const char *)d + o->off;

	if (o->def) {
		snprintf(buf, len, "%s", o->def);
		return;
	}
	switch (o->kind) {
	case K_UINT:
		snprintf(buf, len, "%" PRIu64, get_uint(p, o->size));
		break;
	case K_SECS:
		snprintf(buf, len, "%g", *(const double *)p);
		break;
	case K_FLOAT:
		snprintf(buf, len, "%g", float_as_typed(*(const float *)p));
		break;
	case K_FLAG:
		snprintf(buf, len, "off");
		break;
	case K_MODEL:
		snprintf(buf, len, "%s",
			 model_kind_name(*(const enum model_kind *)p));
		break;
	case K_DEVICE:
		snprintf(buf, len, "%s", *(const enum train_device *)p ==
			 TRAIN_DEV_CUDA ? "cuda" : "cpu");
		break;
	case K_SCHEDULE:
		snprintf(buf, len, "%s", *(const enum train_schedule *)p ==
			 TRAIN_LR_COSINE ? "cosine" : "const");
		break;
	case K_SCALE:
		snprintf(buf, len, "%s",
			 data_scale_name(*(const enum data_scale *)p));
		break;
	case K_SPARSE:
		snprintf(buf, len, "%s",
			 train_sparse_name(*(const enum train_sparse *)p));
		break;
	default:
		snprintf(buf, len, "none");
		break;
	}
}

/* `proteus-trainer CMD --help`: synopsis, what it is, every option with
 * its default. */
static void help(const struct subcmd *sc, FILE *f)
{
	struct tcli d;

	tcli_default(&d, sc);
	fprintf(f, "usage: " PROG " %s %s\n", sc->name, sc->synopsis);
	print_wrapped(f, sc->summary, 0, 0);
	fprintf(f, "\noptions:\n");
	for (size_t i = 0; i < N_TOPTS; i++) {
		const struct topt *o = &topts[i];
		char name[64], def[96], text[400];
		int col;

		if (!(o->cmds & sc->mask) || (o->flags & F_HIDDEN))
			continue;
		col = snprintf(name, sizeof(name), "  --%s%s%s", o->name,
			       o->arg ? " " : "", o->arg ? o->arg : "");
		default_text(o, &d, def, sizeof(def));
		if (o->kind == K_UINT && !(o->flags & F_NORANGE))
			snprintf(text, sizeof(text), "%s (%" PRIu64 "..%"
				 PRIu64 "; default %s)", o->help, uint_min(o),
				 uint_max(o), def);
		else
			snprintf(text, sizeof(text), "%s (default %s)",
				 o->help, def);
		fputs(name, f);
		if (col >= 27) {
			fprintf(f, "\n%*s", 28, "");
		} else {
			fprintf(f, "%*s", 28 - col, "");
		}
		print_wrapped(f, text, 28, 28);
	}
	fprintf(f, "  --help                    this help\n");
	if (sc->more) {
		fputc('\n', f);
		print_wrapped(f, sc->more, 0, 0);
	}
	fprintf(f, "\nexit: 0 ok, 1 failure, 2 usage, 3 bad input data "
		   "(docs/trainer.md, \"Exit codes\")\n");
}

/* `proteus-trainer --help`: the commands. */
static void help_all(FILE *f)
{
	fprintf(f, "usage: " PROG " COMMAND [OPTIONS]\n"
		   "       " PROG " --help | --version\n\n"
		   "commands:\n");
	for (size_t i = 0; i < N_SUBCMDS; i++) {
		fprintf(f, "  %-12s ", subcmds[i].name);
		print_wrapped(f, subcmds[i].summary, 15, 15);
	}
	fprintf(f, "\n'" PROG " COMMAND --help' describes a command's "
		   "options and\ntheir defaults.\n"
		   "exit: 0 ok, 1 failure, 2 usage, 3 bad input data; local "
		   "also 124 timeout,\n"
		   "      130 interrupted, 128+N coordinator killed by signal "
		   "N\n");
}

/* "CLOCK:STAGE", each in decimal digits only */
static int parse_stage_at(const char *s, struct dist_opts *o)
{
	char *end;
	long long c;
	unsigned long st;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	c = strtoll(s, &end, 10);
	if (errno || *end != ':' || end[1] < '0' || end[1] > '9')
		return -1;
	st = strtoul(end + 1, &end, 10);
	if (errno || *end || st < 1 || st > 3)
		return -1;
	o->stage_at = c;
	o->stage_to = (uint8_t)st;
	return 0;
}

static bool is_decimal(const char *s);

/* "S:WORKER:FACTOR:SECONDS" (with_worker) or "S:FACTOR:SECONDS": decimal
 * seconds >= 0, a worker index, a factor in [1, 1000]; one more of
 * DIST_SLOW_MAX at most in sl[*n]. */
static int parse_slow(const char *arg, bool with_worker,
		      struct dist_slow *sl, uint32_t *n)
{
	char buf[128], *part[4], *save = NULL, *p;
	unsigned want = with_worker ? 4 : 3, k = 0;
	struct dist_slow v = { 0 };
	double d[4];

	if (*n >= DIST_SLOW_MAX || strlen(arg) >= sizeof buf)
		return -1;
	snprintf(buf, sizeof buf, "%s", arg);
	for (p = strtok_r(buf, ":", &save); p && k < 4;
	     p = strtok_r(NULL, ":", &save))
		part[k++] = p;
	if (k != want || p || strstr(arg, "::") || arg[strlen(arg) - 1] == ':')
		return -1;
	for (unsigned i = 0; i < k; i++) {
		if (!is_decimal(part[i]))
			return -1;
		d[i] = strtod(part[i], NULL);
		if (!(d[i] >= 0) || d[i] > 1e6)
			return -1;
	}
	v.at = d[0];
	if (with_worker) {
		if (d[1] != floor(d[1]) || d[1] >= DIST_MAX_NODES)
			return -1;
		v.worker = (uint32_t)d[1];
	}
	v.factor = d[k - 2];
	v.secs = d[k - 1];
	if (v.factor < 1 || v.factor > 1000)
		return -1;
	sl[(*n)++] = v;
	return 0;
}

/* Whether s is a decimal number as a person types one: an optional
 * sign, digits with at most one point (a digit on one side at least), an
 * optional exponent.  Not hex ("0x10" would read as 16), not "inf" or
 * "nan", no spaces, nothing after. */
static bool is_decimal(const char *s)
{
	size_t digits = 0;

	if (*s == '+' || *s == '-')
		s++;
	for (; *s >= '0' && *s <= '9'; s++)
		digits++;
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++)
			digits++;
	if (!digits)
		return false;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (*s < '0' || *s > '9')
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

/* The value of option o into t; a usage error on a bad one. */
static int set_opt(const struct subcmd *sc, const struct topt *o,
		   const char *arg, struct tcli *t)
{
	void *p = (char *)t + o->off;
	struct px_error err = { 0 };
	char *end, buf[DIST_ADDR_MAX + 16];
	enum px_err e = PX_OK;

	errno = 0;
	switch (o->kind) {
	case K_UINT: {
		/* digits only: strtoull would take spaces, a sign and wrap
		 * "-1" around */
		unsigned long long v = arg[0] >= '0' && arg[0] <= '9'
				       ? strtoull(arg, &end, 10) : 0;

		if (arg[0] < '0' || arg[0] > '9' || errno || *end ||
		    v < uint_min(o) || v > uint_max(o))
			return usage_error(sc, "bad --%s '%s' (an integer in "
					   "%" PRIu64 "..%" PRIu64 ")",
					   o->name, arg, uint_min(o),
					   uint_max(o));
		set_uint(p, o->size, v);
		return 0;
	}
	case K_SECS: {
		double v = is_decimal(arg) ? strtod(arg, &end) : NAN;

		if (errno || !(v >= 0.0) || v > 1e6)
			return usage_error(sc, "bad --%s '%s' (seconds, 0 to "
					   "1000000)", o->name, arg);
		*(double *)p = v;
		return 0;
	}
	case K_FLOAT: {
		float v = is_decimal(arg) ? strtof(arg, &end) : NAN;
		bool lo = (o->flags & F_MIN_OPEN) ? v > o->min : v >= o->min;
		bool hi = (o->flags & F_MAX_OPEN) ? v < o->max : v <= o->max;

		if (errno || !isfinite(v) || !lo || !hi)
			return usage_error(sc, "bad --%s '%s' (%sa number %s "
					   "%.10g and %s %.10g)", o->name, arg,
					   errno == ERANGE ? "beyond what a "
					   "float holds; " : "",
					   (o->flags & F_MIN_OPEN) ? ">" : ">=",
					   o->min,
					   (o->flags & F_MAX_OPEN) ? "<" : "<=",
					   o->max);
		*(float *)p = v;
		return 0;
	}
	case K_STR:
		if (!arg[0])
			return usage_error(sc, "--%s needs a value, not ''",
					   o->name);
		/* a data URL proteusd keeps out of argv, which every user of
		 * the host may read (a presigned URL's query is a
		 * credential): --train-data env:PX_TRAIN_DATA */
		if ((p == &t->o.data.train || p == &t->o.data.test) &&
		    !strncmp(arg, "env:", 4)) {
			const char *name = arg + 4;
			const char *v = !strcmp(name, "PX_TRAIN_DATA") ||
					!strcmp(name, "PX_TEST_DATA") ?
					getenv(name) : NULL;

			if (!v || !v[0])
				return usage_error(sc, "--%s %s: that variable "
						   "is not set (only "
						   "PX_TRAIN_DATA and "
						   "PX_TEST_DATA may be named)",
						   o->name, arg);
			arg = v;
		}
		*(const char **)p = arg;
		return 0;
	case K_FLAG:
		*(bool *)p = true;
		return 0;
	case K_MODEL:
		e = model_kind_parse(arg, (enum model_kind *)p, &err);
		break;
	case K_DEVICE:
		e = train_device_parse(arg, (enum train_device *)p, &err);
		break;
	case K_SCHEDULE:
		e = train_schedule_parse(arg, (enum train_schedule *)p, &err);
		break;
	case K_FORMAT:
		e = data_format_parse(arg, (enum data_format *)p, &err);
		break;
	case K_SCALE:
		e = data_scale_parse(arg, (enum data_scale *)p, &err);
		break;
	case K_SPARSE:
		e = train_sparse_parse(arg, (enum train_sparse *)p, &err);
		break;
	case K_ADDR:
	case K_ENDPOINT:
		if (strlen(arg) >= o->size)
			return usage_error(sc, "--%s '%s': longer than %zu "
					   "bytes", o->name, arg, o->size - 1);
		if (o->kind == K_ADDR)
			e = dist_endpoint(arg, DIST_EP_REP, buf, sizeof(buf),
					  &err);
		if (e == PX_OK)
			snprintf(p, o->size, "%s", arg);
		break;
	case K_STAGE_AT:
		if (parse_stage_at(arg, &t->o))
			return usage_error(sc, "bad --stage-at '%s' "
					   "(CLOCK:STAGE, stage 1..3)", arg);
		return 0;
	case K_SLOW_AT:
	case K_SLOW:
		if (parse_slow(arg, o->kind == K_SLOW_AT, o->kind == K_SLOW_AT
			       ? t->l.slow : t->o.slow, o->kind == K_SLOW_AT
			       ? &t->l.n_slow : &t->o.n_slow))
			return usage_error(sc, "bad --%s '%s' (%s, seconds "
					   "and a factor in 1..1000; at most "
					   "%d)", o->name, arg, o->arg,
					   DIST_SLOW_MAX);
		return 0;
	}
	if (e != PX_OK)
		return usage_error(sc, "--%s: %s", o->name, err.msg);
	return 0;
}

/* Parse sc's options (argv[0] is the command) into t.  For local, the
 * arguments the roles take are appended to role_args (*nargs of them).
 * Returns -1 to go on, else the exit status (TX_OK after --help). */
static int parse(const struct subcmd *sc, int argc, char **argv,
		 struct tcli *t, char **role_args, size_t *nargs)
{
	struct option lo[N_TOPTS + 2];
	size_t n = 0;
	int c, prev = 1, rc;
	/* positional: eval's FILE, fetch's URL, predict's MODEL DATA */
	int one_arg = sc->mask & C_PREDICT ? 2 :
		      (sc->mask & (C_EVAL | C_FETCH)) != 0;

	for (size_t i = 0; i < N_TOPTS; i++)
		if (topts[i].cmds & sc->mask)
			lo[n++] = (struct option){
				topts[i].name, topts[i].arg
					? required_argument : no_argument,
				NULL, OPT_BASE + (int)i };
	lo[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[n] = (struct option){ NULL, 0, NULL, 0 };
	opterr = 0; /* our own one-line errors */
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		const struct topt *o;

		if (c == 'h') {
			help(sc, stdout);
			return TX_OK;
		}
		if (c == '?' || c == ':' || c < OPT_BASE ||
		    c >= OPT_BASE + (int)N_TOPTS)
			return usage_error(sc, c == ':' ? "option '%s' for "
					   "'%s' needs a value" :
					   "unknown option '%s' for '%s'",
					   argv[optind - 1], sc->name);
		o = &topts[c - OPT_BASE];
		rc = set_opt(sc, o, optarg, t);
		if (rc)
			return rc;
		if (role_args && (o->cmds & C_ROLE) &&
		    !(o->flags & (F_NOPASS | F_OWN)))
			for (int i = prev; i < optind; i++)
				role_args[(*nargs)++] = argv[i];
		prev = optind;
	}
	if (one_arg && argc - optind < one_arg)
		return usage_error(sc, sc->mask == C_EVAL
				   ? "eval needs a checkpoint FILE"
				   : sc->mask == C_PREDICT
				   ? "predict needs a MODEL and a DATA file"
				   : "fetch needs a URL");
	if (optind < argc - one_arg)
		return usage_error(sc, "unexpected argument '%s' for '%s'",
				   argv[optind + one_arg],
				   sc->name);
	return -1;
}

/* The data named by URL fetched into the cache and checked, and a local
 * file with a SHA-256 checked, before anything reads them (data_url.h).
 * -1: fine, else the exit status. */
static int fetch_data(struct tcli *t)
{
	struct px_error err = { 0 };

	if (data_fetch_urls(&t->o.data, t->o.train_sha256, t->o.test_sha256,
			    &err) == PX_OK)
		return -1;
	log_err("%s", err.msg);
	/* data that cannot be had after the fetch's own tries (refused, not
	 * found, the network) is the job's input failing: exit 3, whose
	 * message the daemon makes the job's error, rather than a restart
	 * that would fetch the same */
	switch (err.code) {
	case PX_EINVAL:
	case PX_ETOOBIG:
	case PX_ENOENT:
	case PX_EHTTP:
	case PX_EAWS:
		return TX_DATA;
	default:
		return exit_for(err.code);
	}
}

/* What a distributed --model mf does not take, as the option that asked
 * for it, or NULL. */
static const char *mf_dist_refused(const struct subcmd *sc,
				   const struct tcli *t)
{
	const struct dist_opts *o = &t->o;
	const struct data_spec *ds = &o->data;
	struct tcli d;

	tcli_default(&d, sc);
	return o->train.device != TRAIN_DEV_CPU ? "--device cuda" :
	       o->test_visits ? "--test-visits" :
	       o->fault_late_push_ms ? "--fault-late-push" :
	       o->train.momentum != d.o.train.momentum ? "--momentum" :
	       ds->scale != DATA_SCALE_NONE ? "--scale" :
	       ds->label_col != d.o.data.label_col ? "--label-column" :
	       ds->format != DATA_FMT_AUTO && ds->format != DATA_FMT_CSV
	       ? "--data-format (ratings are CSV)" : NULL;
}

/* What no single option's range says.  -1: fine, else the exit status. */
static int check_combination(const struct subcmd *sc, const struct tcli *t)
{
	const struct dist_opts *o = &t->o;

	if ((sc->mask & C_RUN) && !o->data.train != !o->data.test)
		return usage_error(sc, "%s needs %s too (your own data is a "
				   "training set and a test set)",
				   o->data.train ? "--train-data" :
				   "--test-data", o->data.train ?
				   "--test-data" : "--train-data");
	if (o->data.test && o->data_dir)
		return usage_error(sc, "--data DIR names Fashion-MNIST's "
				   "folder: not with your own data");
	if ((sc->mask & C_DIST) && o->train.model == MODEL_MF) {
		const char *bad = mf_dist_refused(sc, t);

		if (bad)
			return usage_error(sc, "--model mf does not take %s "
					   "in a distributed run", bad);
		if (!o->data.train)
			return usage_error(sc, "--model mf needs --train-data "
					   "and --test-data (user,item,rating "
					   "lines)");
	}
	if ((sc->mask & C_DIST) && o->train.model != MODEL_MF &&
	    o->train.rank != TRAIN_MF_RANK)
		return usage_error(sc, "--rank is for --model mf");
	if (!(sc->mask & C_DIST))
		return -1;
	if (o->checkpoint_every && !o->checkpoint)
		return usage_error(sc, "--checkpoint-every needs --checkpoint "
				   "FILE");
	if ((o->checkpoint_budget || o->checkpoint_full_every) &&
	    !o->checkpoint)
		return usage_error(sc, "--checkpoint-budget and "
				   "--checkpoint-full-every need --checkpoint "
				   "FILE");
	if (o->checkpoint_full_every && !o->checkpoint_budget)
		return usage_error(sc, "--checkpoint-full-every needs "
				   "--checkpoint-budget BYTES (without it "
				   "every checkpoint is full)");
	if (t->l.max_restarts && !o->checkpoint)
		return usage_error(sc, "--max-restarts needs --checkpoint FILE "
				   "(a restart resumes from it)");
	if (t->l.reliable > o->ps)
		return usage_error(sc, "--reliable %u is more than --ps %u",
				   t->l.reliable, o->ps);
	for (uint32_t i = 0; i < t->l.n_slow; i++)
		if (t->l.slow[i].worker >= o->workers)
			return usage_error(sc, "--slow-worker-at: worker %u of "
					   "%u (0 is the first)",
					   t->l.slow[i].worker, o->workers);
	if (o->hb_timeout_ms <= o->hb_ms)
		return usage_error(sc, "--hb-timeout %u must be more than "
				   "--heartbeat %u", o->hb_timeout_ms,
				   o->hb_ms);
	if ((sc->mask & C_ROLE) && (!o->coord[0] || !o->listen[0]))
		return usage_error(sc, "%s needs --coord and --listen",
				   sc->name);
	return -1;
}

/* The files named on the command line, before anything starts: a
 * checkpoint or a model to write must be writable (exit 2), a checkpoint
 * to resume from must read back whole (exit 3).  -1: fine, else the exit
 * status. */
static int check_files(const char *ckpt, const char *resume,
		       const char *export_path)
{
	struct px_error err = { 0 };
	struct ckpt_meta m;
	float *w, *v;
	enum px_err e;

	if (ckpt && ckpt_check_writable(ckpt, &err) != PX_OK) {
		log_err("--checkpoint: %s", err.msg);
		return TX_USAGE;
	}
	if (export_path && st_check_writable(export_path, &err) != PX_OK) {
		log_err("--export: %s", err.msg);
		return TX_USAGE;
	}
	if (!resume)
		return -1;
	e = ckpt_read(resume, &m, &w, &v, &err);
	if (e != PX_OK) {
		log_err("--resume: %s", err.msg);
		return e == PX_ENOMEM ? TX_FAIL : TX_DATA;
	}
	data_prep_release(&m.prep);
	free(w);
	free(v);
	return -1;
}

/* ---- results ---- */

/* A flat JSON object and a newline, each real in its shortest form. */
static int print_json(FILE *f, json_t *j)
{
	if (!j || px_json_put(f, j) < 0)
		return -1;
	fputc('\n', f);
	return fflush(f) == 0 ? 0 : -1;
}

static bool print_epoch(void *arg, const struct train_epoch *e)
{
	const bool *json = arg;

	fprintf(*json ? stderr : stdout,
		"epoch %u: train loss %.4f, test loss %.4f, test accuracy "
		"%.2f%%, %.1f s, %.0f samples/s\n", e->epoch, e->train_loss,
		e->test_loss, 100.0 * e->test_accuracy, e->train_seconds,
		e->samples_per_sec);
	return true;
}

/* What the training set fixed: on stdout as a line (json: stderr), or
 * into j as "inputs", "classes" and "labels" (label values, class by
 * class). */
static void say_data(const struct data_prep *p, bool json, json_t *j)
{
	FILE *f = json ? stderr : stdout;
	json_t *l;

	if (!p->n_classes)
		return;
	if (j) {
		l = json_array();
		for (uint32_t i = 0; l && i < p->n_classes; i++)
			json_array_append_new(l, json_integer(p->labels[i]));
		json_object_set_new(j, "inputs", json_integer(p->dim));
		json_object_set_new(j, "classes", json_integer(p->n_classes));
		json_object_set_new(j, "labels", l ? l : json_null());
		json_object_set_new(j, "scale", json_string(p->mean ?
				    "standard" : "none"));
		return;
	}
	fprintf(f, "data: %u features, %u classes, labels in sorted order "
		"(label -> class):", p->dim, p->n_classes);
	for (uint32_t i = 0; i < p->n_classes && i < 8; i++)
		fprintf(f, " %d->%u", p->labels[i], i);
	fprintf(f, "%s; scaling %s\n", p->n_classes > 8 ? " ..." : "",
		p->mean ? "standard (the training set's mean and deviation)"
			: "none");
}

/* The training and test sets the options name: the user's own (prep
 * what the training set fixes) or Fashion-MNIST's. */
static enum px_err load_sets(const struct dist_opts *o,
			     struct data_set *train, struct data_set *test,
			     struct data_prep *prep, struct px_error *err)
{
	uint64_t budget = (uint64_t)o->data_memory_mb << 20;
	enum px_err e;

	if (o->data.train && o->data_memory_mb &&
	    data_window_able(&o->data))
		e = data_window_open(&o->data, o->max_train, budget, train,
				     prep, err);
	else if (o->data_memory_mb && !o->data.train)
		e = data_window_fashion_mnist(o->data_dir, o->max_train,
					      budget, train, err);
	else if (o->data.train)
		e = data_load_train(&o->data, o->max_train, train, prep, err);
	else
		e = data_load_fashion_mnist(o->data_dir, true, o->max_train,
					    train, err);
	return e != PX_OK ? e : dist_load_test(o, prep, test, err);
}

/* The OpenBLAS kernels for this CPU, checked (blas_pick.h): may run
 * this program again with OPENBLAS_CORETYPE set.  Whether to go on. */
static bool start_blas(char **argv)
{
	struct px_error err = { 0 };
	struct blas_state st;

	if (blas_start(argv, &st, &err) != PX_OK) {
		log_err("%s", err.msg);
		return false;
	}
	if (st.note[0])
		log_warn("%s", st.note);
	return true;
}

/* One line for a role's or a node's log: the kernels it computes with. */
static void log_blas(int threads)
{
	char d[256];

	blas_describe(blas_state(), threads, d, sizeof(d));
	log_notice("blas: %s", d);
}

/* The "blas" object of --json: the kernels, how chosen, the threads. */
static json_t *blas_json(void)
{
	const struct blas_state *st = blas_state();

	return json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:i, s:f}", "library",
			 st->version, "core", st->core, "chosen",
			 blas_how_name(st->how), "library_core",
			 st->library[0] ? st->library : NULL, "rejected",
			 st->rejected[0] ? st->rejected : NULL, "threads",
			 blas_threads(), "check_error", st->check_error);
}

/* train's result: the options as given, resumed_from the epochs done
 * before --resume (null without). */
static int print_train_json(const struct train_opts *o,
			    const struct data_prep *prep,
			    const struct train_result *r)
{
	json_t *j = json_pack("{s:s, s:s, s:I, s:i, s:o, s:o, s:I, s:I, "
			      "s:f, s:f, s:f, s:f, s:f, s:o}",
			      "model", model_kind_name(o->model),
			      "device", o->device == TRAIN_DEV_CUDA ? "cuda"
								   : "cpu",
			      "epochs", (json_int_t)r->epochs,
			      "threads", o->threads,
			      "lr", json_real(float_as_typed(o->lr)),
			      "momentum",
			      json_real(float_as_typed(o->momentum)),
			      "batch", (json_int_t)o->batch,
			      "params", (json_int_t)r->n_params,
			      "test_accuracy", r->test_accuracy,
			      "test_loss", r->test_loss,
			      "samples_per_sec", r->samples_per_sec,
			      "train_seconds", r->train_seconds,
			      "wall_seconds", r->wall_seconds,
			      "resumed_from", o->resume
				      ? json_integer(r->resumed_from)
				      : json_null());
	int rc;

	say_data(prep, true, j);
	json_object_set_new(j, "sparse", json_boolean(r->sparse));
	if (r->data_reads) { /* read in chunks (--data-memory) */
		json_object_set_new(j, "data_reads",
				    json_integer((json_int_t)r->data_reads));
		json_object_set_new(j, "rows_held_max",
				    json_integer(r->data_held));
	}
	json_object_set_new(j, "blas", blas_json());
	rc = print_json(stdout, j);

	json_decref(j);
	return rc;
}

/* ---- the commands ---- */

/* What --model mf does not take, as the option that asked for it, or
 * NULL. */
static const char *mf_refused(const struct subcmd *sc, const struct tcli *t)
{
	const struct train_opts *o = &t->o.train;
	const struct data_spec *ds = &t->o.data;
	struct tcli d;

	tcli_default(&d, sc);
	return o->device != TRAIN_DEV_CPU ? "--device cuda" :
	       o->momentum != d.o.train.momentum ? "--momentum" :
	       ds->scale != DATA_SCALE_NONE ? "--scale" :
	       ds->label_col != d.o.data.label_col ? "--label-column" :
	       ds->format != DATA_FMT_AUTO && ds->format != DATA_FMT_CSV
	       ? "--data-format (ratings are CSV)" : NULL;
}

static bool mf_print_epoch(void *arg, const struct mf_epoch *e)
{
	json_t *curve = arg; /* NULL: text on stdout */

	fprintf(curve ? stderr : stdout, "epoch %u: train RMSE %.4f, test "
		"RMSE %.4f, %.2f s, %.0f ratings/s\n", e->epoch, e->train_rmse,
		e->test_rmse, e->train_seconds, e->ratings_per_sec);
	if (curve)
		json_array_append_new(curve, json_pack("{s:i, s:f, s:f, s:f}",
				      "epoch", (int)e->epoch, "train_seconds",
				      e->train_seconds, "train_rmse",
				      e->train_rmse, "test_rmse",
				      e->test_rmse));
	return true;
}

/* train --model mf: ratings from --train-data and --test-data. */
static int cmd_train_mf(const struct subcmd *sc, struct tcli *t)
{
	const struct train_opts *o = &t->o.train;
	struct mf_set train = { 0 }, test = { 0 };
	struct px_error err = { 0 };
	struct mf_result res;
	const char *bad = mf_refused(sc, t);
	json_t *curve = NULL, *j;
	enum px_err e;
	int rc;

	if (bad)
		return usage_error(sc, "--model mf does not take %s (it trains "
				   "on the CPU with plain SGD from CSV "
				   "ratings)", bad);
	if (!t->o.data.train)
		return usage_error(sc, "--model mf needs --train-data and "
				   "--test-data: CSV files of "
				   "user,item,rating");
	rc = check_files(o->checkpoint, o->resume, o->export_path);
	if (rc >= 0)
		return rc;
	e = mf_load(t->o.data.train, t->o.max_train, &train, &err);
	if (e == PX_OK)
		e = mf_load(t->o.data.test, t->o.max_test, &test, &err);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		goto out;
	}
	if (t->o.json)
		curve = json_array();
	else
		printf("training mf rank %u on %u ratings (%u users, %u items, "
		       "mean %.4f; %u test), batch %u, lr %g, L2 %g\n",
		       o->rank, train.n, train.n_users, train.n_items,
		       train.mean, test.n, o->batch, float_as_typed(o->lr),
		       float_as_typed(o->weight_decay));
	e = train_mf_run(o, &train, &test, mf_print_epoch, curve, &res,
			 &err);
	if (e != PX_OK) {
		log_err("training failed: %s", err.msg);
		goto out;
	}
	if (!t->o.json) {
		if (o->resume)
			printf("resumed from %s after epoch %u\n", o->resume,
			       res.resumed_from);
		printf("test RMSE %.4f (%u of %u test ratings of a user or item "
		       "unseen in training), train RMSE %.4f, %.0f ratings/s, "
		       "%.1f s\n", res.test_rmse, res.test_unseen, test.n,
		       res.train_rmse, res.ratings_per_sec, res.wall_seconds);
		goto out;
	}
	j = json_pack("{s:s, s:I, s:I, s:f, s:f, s:I, s:I, s:I, s:I, s:I, "
		      "s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:O}",
		      "model", "mf", "rank", (json_int_t)o->rank,
		      "epochs", (json_int_t)res.epochs,
		      "lr", float_as_typed(o->lr),
		      "weight_decay", float_as_typed(o->weight_decay),
		      "batch", (json_int_t)o->batch,
		      "params", (json_int_t)res.d.n_params,
		      "users", (json_int_t)res.d.n_users,
		      "items", (json_int_t)res.d.n_items,
		      "train_ratings", (json_int_t)train.n,
		      "test_ratings", (json_int_t)test.n,
		      "test_unseen", (json_int_t)res.test_unseen,
		      "mean", (double)res.d.mean,
		      "train_rmse", res.train_rmse,
		      "test_rmse", res.test_rmse,
		      "ratings_per_sec", res.ratings_per_sec,
		      "train_seconds", res.train_seconds,
		      "wall_seconds", res.wall_seconds,
		      "curve", curve);
	json_object_set_new(j, "resumed_from", o->resume
			    ? json_integer(res.resumed_from) : json_null());
	if (print_json(stdout, j)) {
		e = px_errorf(&err, PX_EIO, "result: %s", strerror(errno));
		log_err("%s", err.msg);
	}
	json_decref(j);
out:
	json_decref(curve);
	mf_set_release(&train);
	mf_set_release(&test);
	return exit_for(e);
}

static int cmd_train(const struct subcmd *sc, int argc, char **argv)
{
	struct data_set train = { 0 }, test = { 0 };
	struct data_prep prep = { 0 };
	struct px_error err = { 0 };
	struct train_result res;
	struct tcli t;
	struct train_opts *o = &t.o.train;
	int rc;
	enum px_err e;

	tcli_default(&t, sc);
	rc = parse(sc, argc, argv, &t, NULL, NULL);
	if (rc < 0)
		rc = check_combination(sc, &t);
	if (rc < 0)
		rc = fetch_data(&t);
	if (rc < 0 && o->model == MODEL_MF)
		return cmd_train_mf(sc, &t);
	if (rc < 0 && o->rank != TRAIN_MF_RANK)
		rc = usage_error(sc, "--rank is for --model mf");
	if (rc < 0)
		rc = check_files(o->checkpoint, o->resume, o->export_path);
	if (rc >= 0)
		return rc;
	e = load_sets(&t.o, &train, &test, &prep, &err);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		goto out_release;
	}
	say_data(&prep, t.o.json, NULL);
	if (!t.o.json)
		printf("training %s on %u examples (%u test), device %s, "
		       "batch %u, lr %g, momentum %g\n",
		       model_kind_name(o->model), train.n, test.n,
		       o->device == TRAIN_DEV_CUDA ? "cuda" : "cpu", o->batch,
		       float_as_typed(o->lr), float_as_typed(o->momentum));
	if (!t.o.json && o->device == TRAIN_DEV_CPU) {
		char d[256];

		blas_describe(blas_state(), o->threads, d, sizeof(d));
		printf("blas: %s\n", d);
	}
	e = train_local_run(o, &train, &test, print_epoch, &t.o.json, &res,
			    &err);
	if (e != PX_OK) {
		log_err("training failed: %s", err.msg);
		goto out_release;
	}
	if (t.o.json) {
		if (print_train_json(o, &prep, &res)) {
			e = px_errorf(&err, PX_EIO, "result: %s",
				      strerror(errno));
			log_err("%s", err.msg);
		}
	} else {
		printf("test accuracy %.2f%%, %.0f samples/s, %.1f s\n",
		       100.0 * res.test_accuracy, res.samples_per_sec,
		       res.wall_seconds);
	}
out_release:
	data_release(&train);
	data_release(&test);
	data_prep_release(&prep);
	return exit_for(e);
}

/* eval --json: what a checkpoint says of itself (the keys the models
 * name otherwise given); the caller adds the evaluation.  NULL on OOM
 * (json_object_set_new on NULL fails, print_json reports it). */
static json_t *eval_json(const char *file, const struct ckpt_meta *m,
			 const char *when, const char *n_key,
			 const char *recorded_key)
{
	return json_pack("{s:s, s:s, s:I, s:I, s:I, s:i, s:i, s:i, s:i, s:o, "
			 "s:s}", "file", file,
			 "model", model_kind_name(m->d.kind),
			 "params", (json_int_t)m->d.n_params,
			 "clock", (json_int_t)m->clock,
			 "total", (json_int_t)m->total,
			 "workers", (int)m->workers, "batch", (int)m->batch,
			 "epochs", (int)m->epochs, n_key, (int)m->n_train,
			 recorded_key, isnan(m->test_accuracy) ? json_null()
				 : json_real(m->test_accuracy),
			 "written", when);
}

/* An mf model from file (a checkpoint with ckpt, a model file without),
 * --model mf or not; the message printed on an error. */
static enum px_err load_mf(const char *file, bool ckpt, struct ckpt_meta *m,
			   float **ret_params, struct px_error *err)
{
	float *v = NULL;
	enum px_err e;

	memset(m, 0, sizeof(*m));
	if (ckpt) {
		e = ckpt_read(file, m, ret_params, &v, err);
		free(v);
		if (e == PX_OK && m->d.kind != MODEL_MF)
			e = px_errorf(err, PX_EINVAL, "checkpoint '%s' is of an "
				      "%s model, not mf (--model mf)", file,
				      model_kind_name(m->d.kind));
	} else {
		m->d.kind = MODEL_MF;
		e = export_mf_load(file, &m->mf, ret_params,
				   &m->test_accuracy, err);
		if (e == PX_OK)
			ckpt_meta_mf(m, &m->mf);
	}
	if (e != PX_OK) {
		log_err("%s", err->msg);
		data_prep_release(&m->prep);
		free(*ret_params);
		*ret_params = NULL;
	}
	return e;
}

/* eval FILE of an mf model: its test RMSE on --test-data's ratings. */
static int cmd_eval_mf(const struct subcmd *sc, const struct tcli *t,
		       const char *file)
{
	struct mf_set test = { 0 };
	struct px_error err = { 0 };
	struct ckpt_meta m;
	float *w = NULL;
	char when[32], shape[160];
	double rmse;
	enum px_err e;

	if (!t->o.data.test)
		return usage_error(sc, "an mf model is evaluated on ratings: "
				   "name --test-data FILE (user,item,rating "
				   "lines)");
	e = load_mf(file, true, &m, &w, &err);
	if (e != PX_OK)
		return exit_for(e);
	e = mf_load(t->o.data.test, t->o.max_test, &test, &err);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		goto out;
	}
	/* unseen rows are zeros in the file: no mask (mf_zero_unseen) */
	rmse = mf_rmse(&m.mf, w, NULL, &test);
	export_shape_text(&m, shape, sizeof(shape));
	px_format_time(m.written_s, when, sizeof(when));
	if (t->o.json) {
		json_t *j = eval_json(file, &m, when, "train_ratings",
				      "recorded_test_rmse");

		json_object_set_new(j, "users", json_integer(m.mf.n_users));
		json_object_set_new(j, "items", json_integer(m.mf.n_items));
		json_object_set_new(j, "rank", json_integer(m.mf.rank));
		json_object_set_new(j, "mean", json_real(m.mf.mean));
		json_object_set_new(j, "test_rmse", json_real(rmse));
		json_object_set_new(j, "test_ratings", json_integer(test.n));

		if (print_json(stdout, j))
			e = px_errorf(&err, PX_EIO, "result: %s",
				      strerror(errno));
		json_decref(j);
	} else {
		printf("%s: mf %s (%zu parameters), clock %" PRId64 " of %"
		       PRId64 " (%u workers, batch %u, %u epochs, %u "
		       "ratings), written %s\n"
		       "test RMSE %.4f on %u ratings\n", file, shape,
		       m.d.n_params, m.clock, m.total, m.workers, m.batch,
		       m.epochs, m.n_train, when, rmse, test.n);
	}
	if (e != PX_OK)
		log_err("%s", err.msg);
out:
	mf_set_release(&test);
	free(w);
	return exit_for(e);
}

/* eval FILE: what a checkpoint is, and its accuracy on the test set. */
static int cmd_eval(const struct subcmd *sc, int argc, char **argv)
{
	struct data_set test = { 0 };
	struct model_ctx *mc = NULL;
	struct px_error err = { 0 };
	struct ckpt_meta m;
	struct tcli t;
	float *w = NULL, *v = NULL;
	const char *file;
	double loss, acc;
	char when[32], widths[160];
	int rc;
	enum px_err e;

	tcli_default(&t, sc);
	rc = parse(sc, argc, argv, &t, NULL, NULL);
	if (rc < 0)
		rc = check_combination(sc, &t);
	if (rc < 0)
		rc = fetch_data(&t);
	if (rc >= 0)
		return rc;
	file = argv[argc - 1];
	if (t.o.train.model == MODEL_MF || export_kind(file) == MODEL_MF)
		return cmd_eval_mf(sc, &t, file);
	e = ckpt_read(file, &m, &w, &v, &err);
	if (e == PX_OK && m.prep.n_classes && !t.o.data.test)
		e = px_errorf(&err, PX_EINVAL, "checkpoint '%s' is of a model "
			      "of your own data (%u features, %u classes): "
			      "name its --test-data", file, m.d.n_in,
			      m.d.n_out);
	if (e == PX_OK && t.o.data.test && !m.prep.n_classes) {
		/* a Fashion-MNIST model's labels are its classes */
		m.prep.dim = m.d.n_in;
		m.prep.n_classes = m.d.n_out;
		for (uint32_t i = 0; i < m.d.n_out && i < DATA_MAX_CLASSES;
		     i++)
			m.prep.labels[i] = (int32_t)i;
	}
	if (e == PX_OK && t.o.data.test)
		e = data_load_test(&t.o.data, &m.prep, t.o.max_test, &test,
				   &err);
	else if (e == PX_OK)
		e = data_load_fashion_mnist(t.o.data_dir, false, t.o.max_test,
					    &test, &err);
	if (e != PX_OK)
		goto out;
	if (test.dim != m.d.n_in || test.n_classes != m.d.n_out) {
		e = px_errorf(&err, PX_EINVAL, "checkpoint '%s' is of a model "
			      "with %u inputs and %u classes, the test set has "
			      "%u and %u", file, m.d.n_in, m.d.n_out, test.dim,
			      test.n_classes);
		goto out;
	}
	kern_cpu_set_threads(t.o.train.threads ? t.o.train.threads : 1);
	e = model_ctx_new(&m.d, &kern_cpu_ops, NULL, TRAIN_EVAL_BATCH, &mc,
			  &err);
	if (e == PX_OK)
		e = train_eval_host(mc, w, &test, &loss, &acc, &err);
	if (e != PX_OK)
		goto out;
	export_shape_text(&m, widths, sizeof(widths));
	px_format_time(m.written_s, when, sizeof(when));
	if (t.o.json) {
		json_t *j = eval_json(file, &m, when, "train_examples",
				      "recorded_test_accuracy");

		json_object_set_new(j, "layers", json_string(widths));
		json_object_set_new(j, "test_accuracy", json_real(acc));
		json_object_set_new(j, "test_loss", json_real(loss));
		json_object_set_new(j, "test_examples", json_integer(test.n));

		json_object_set_new(j, "blas", blas_json());
		if (print_json(stdout, j))
			e = px_errorf(&err, PX_EIO, "result: %s",
				      strerror(errno));
		json_decref(j);
	} else {
		printf("%s: %s %s (%zu parameters), clock %" PRId64 " of %"
		       PRId64 " (%u workers, batch %u, %u epochs, %u "
		       "examples), written %s\n"
		       "test accuracy %.2f%%, loss %.4f, on %u examples\n",
		       file, model_kind_name(m.d.kind), widths, m.d.n_params,
		       m.clock, m.total, m.workers, m.batch, m.epochs,
		       m.n_train, when, 100.0 * acc, loss, test.n);
	}
out:
	if (e != PX_OK)
		log_err("%s", err.msg);
	model_ctx_free(mc);
	data_release(&test);
	data_prep_release(&m.prep);
	free(w);
	free(v);
	return exit_for(e);
}

/* predict's output for one batch: each row's label (and probabilities)
 * on f, or into the JSON arrays; the count of rows whose class is the
 * data's. */
static uint64_t predict_batch(const float *probs, const uint8_t *y, uint32_t n,
			      const struct data_prep *prep, bool proba,
			      FILE *f, json_t *jl, json_t *jp)
{
	uint32_t k = prep->n_classes;
	uint64_t ok = 0;

	for (uint32_t i = 0; i < n; i++) {
		const float *p = probs + (size_t)i * k;
		json_t *row = jp ? json_array() : NULL;
		uint32_t best = 0;

		/* the first of the largest: model_eval's argmax */
		for (uint32_t j = 1; j < k; j++)
			if (p[j] > p[best])
				best = j;
		ok += best == y[i];
		if (jl) {
			json_array_append_new(jl,
					      json_integer(prep->labels[best]));
			for (uint32_t j = 0; row && j < k; j++)
				json_array_append_new(row,
						      json_real(p[j]));
			if (row)
				json_array_append_new(jp, row);
			continue;
		}
		fprintf(f, "%d", prep->labels[best]);
		for (uint32_t j = 0; proba && j < k; j++)
			fprintf(f, "\t%.6g", (double)p[j]);
		fputc('\n', f);
	}
	return ok;
}

/* predict MODEL DATA of an mf model: the predicted rating of each
 * user,item row, and the RMSE when the rows have ratings. */
static int cmd_predict_mf(const struct subcmd *sc, const struct tcli *t,
			  const char *model, const char *data)
{
	struct mf_set set = { 0 };
	struct px_error err = { 0 };
	struct ckpt_meta m;
	json_t *jl = NULL;
	float *w = NULL;
	double sse = 0.0;
	bool rated = false;
	enum px_err e;

	if (t->p.proba)
		return usage_error(sc, "--proba is for a classifier: an mf "
				   "model predicts a rating");
	e = load_mf(model, false, &m, &w, &err);
	if (e != PX_OK)
		return exit_for(e);
	e = mf_load_pairs(data, 0, &set, &rated, &err);
	if (e != PX_OK) {
		px_error_prefix(&err, "data for mf model '%s' (user,item "
				"lines, a rating optional): ", model);
		goto out;
	}
	if (t->o.json && !(jl = json_array()))
		e = px_errorf(&err, PX_ENOMEM, "predict: out of memory");
	for (uint32_t i = 0; e == PX_OK && i < set.n; i++) {
		const struct mf_rating *r = &set.r[i];
		float y = mf_predict(&m.mf, w, NULL, r->user, r->item);
		double d = (double)r->r - y;

		sse += d * d;
		if (jl)
			json_array_append_new(jl, json_real(y));
		else
			printf("%.9g\n", (double)y);
	}
	if (e != PX_OK)
		goto out;
	if (t->o.json) {
		json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:o}",
				      "model", model, "data", data, "kind",
				      "mf", "rank", (json_int_t)m.mf.rank,
				      "rows", (json_int_t)set.n,
				      "rmse", rated ? json_real(sqrt(sse /
							       set.n))
						    : json_null(),
				      "predictions", json_incref(jl));

		if (print_json(stdout, j))
			e = px_errorf(&err, PX_EIO, "result: %s",
				      strerror(errno));
		json_decref(j);
	} else if (fflush(stdout) != 0) {
		e = px_errorf(&err, PX_EIO, "result: %s", strerror(errno));
	} else if (rated) {
		fprintf(stderr, "RMSE %.4f on %u rows, model mf (rank %u)\n",
			sqrt(sse / set.n), set.n, m.mf.rank);
	} else {
		fprintf(stderr, "%u rows predicted (no ratings to compare), "
			"model mf (rank %u)\n", set.n, m.mf.rank);
	}
out:
	if (e != PX_OK)
		log_err("%s", err.msg);
	json_decref(jl);
	mf_set_release(&set);
	free(w);
	return exit_for(e);
}

/* predict MODEL DATA: the label of each row by the model, and its
 * accuracy against the data's labels. */
static int cmd_predict(const struct subcmd *sc, int argc, char **argv)
{
	uint32_t idx[TRAIN_EVAL_BATCH];
	struct data_set set = { 0 };
	struct data_prep prep = { 0 };
	struct px_error err = { 0 };
	struct model_ctx *mc = NULL;
	struct model_desc d;
	struct data_spec spec;
	json_t *jl = NULL, *jp = NULL;
	float *w = NULL, *x = NULL, *probs = NULL;
	uint8_t *y = NULL;
	const char *model, *data;
	uint64_t correct = 0;
	struct tcli t;
	enum px_err e;
	int rc;

	tcli_default(&t, sc);
	rc = parse(sc, argc, argv, &t, NULL, NULL);
	if (rc >= 0)
		return rc;
	model = argv[argc - 2];
	data = argv[argc - 1];
	if (t.o.train.model == MODEL_MF || export_kind(model) == MODEL_MF)
		return cmd_predict_mf(sc, &t, model, data);
	e = export_load(model, &d, &prep, &w, &err);
	if (e != PX_OK)
		goto out;
	spec = t.o.data;
	spec.train = NULL;
	spec.test = data;
	/* the data held to the model's width and labels */
	e = data_load_test(&spec, &prep, 0, &set, &err);
	if (e != PX_OK) {
		px_error_prefix(&err, "data for model '%s' (%u inputs, %u "
				"classes): ", model, d.n_in, d.n_out);
		goto out;
	}
	kern_cpu_set_threads(t.o.train.threads ? t.o.train.threads : 1);
	e = model_ctx_new(&d, &kern_cpu_ops, NULL, TRAIN_EVAL_BATCH, &mc,
			  &err);
	x = px_calloc((size_t)TRAIN_EVAL_BATCH * d.n_in, sizeof(float));
	probs = px_calloc((size_t)TRAIN_EVAL_BATCH * d.n_out, sizeof(float));
	y = px_calloc(TRAIN_EVAL_BATCH, 1);
	if (t.o.json) {
		jl = json_array();
		jp = t.p.proba ? json_array() : NULL;
	}
	if (e == PX_OK && (!x || !probs || !y || (t.o.json && !jl) ||
			   (t.p.proba && t.o.json && !jp)))
		e = px_errorf(&err, PX_ENOMEM, "predict: out of memory");
	for (uint32_t i = 0; e == PX_OK && i < set.n; i += TRAIN_EVAL_BATCH) {
		uint32_t n = set.n - i < TRAIN_EVAL_BATCH ? set.n - i
							  : TRAIN_EVAL_BATCH;

		for (uint32_t j = 0; j < n; j++)
			idx[j] = i + j;
		data_gather(&set, idx, n, x, y);
		e = model_probs(mc, w, x, y, n, probs, &err);
		if (e == PX_OK)
			correct += predict_batch(probs, y, n, &prep, t.p.proba,
						 stdout, jl, jp);
	}
	if (e != PX_OK)
		goto out;
	if (t.o.json) {
		json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:I, s:f, s:o, "
				      "s:o}", "model", model, "data", data,
				      "kind", model_kind_name(d.kind),
				      "rows", (json_int_t)set.n,
				      "correct", (json_int_t)correct,
				      "accuracy", (double)correct / set.n,
				      "predictions", json_incref(jl),
				      "probabilities", jp ? json_incref(jp)
							  : json_null());
		json_t *l = json_array();

		for (uint32_t k = 0; l && k < prep.n_classes; k++)
			json_array_append_new(l, json_integer(prep.labels[k]));
		json_object_set_new(j, "labels", l ? l : json_null());
		if (print_json(stdout, j))
			e = px_errorf(&err, PX_EIO, "result: %s",
				      strerror(errno));
		json_decref(j);
	} else if (fflush(stdout) != 0) {
		e = px_errorf(&err, PX_EIO, "result: %s", strerror(errno));
	} else {
		fprintf(stderr, "accuracy %.2f%% (%" PRIu64 " of %u rows), "
			"model %s, %u classes\n", 100.0 * (double)correct / set.n,
			correct, set.n, model_kind_name(d.kind), d.n_out);
	}
out:
	if (e != PX_OK)
		log_err("%s", err.msg);
	json_decref(jl);
	json_decref(jp);
	model_ctx_free(mc);
	data_release(&set);
	data_prep_release(&prep);
	free(w);
	free(x);
	free(probs);
	free(y);
	return exit_for(e);
}

/* fetch URL: the file on this host, checked; its path on stdout.  A
 * SIGTERM or SIGINT stops a download (exit 1). */
static int cmd_fetch(const struct subcmd *sc, int argc, char **argv)
{
	struct px_error err = { 0 };
	struct fetch_opts fo = { 0 };
	struct fetch_result r;
	struct fetch_url u = { 0 };
	struct tcli t;
	const char *url;
	enum px_err e;
	int rc;

	tcli_default(&t, sc);
	rc = parse(sc, argc, argv, &t, NULL, NULL);
	if (rc >= 0)
		return rc;
	url = argv[argc - 1];
	if (fetch_url_parse(url, &u, &err) != PX_OK)
		return usage_error(sc, "%s", err.msg);
	if (u.kind != FETCH_LOCAL && !t.f.sha256) {
		rc = usage_error(sc, "%s: a remote URL needs --sha256 HEX",
				 u.shown);
		goto out;
	}
	if (t.f.sha256 && !fetch_sha256_valid(t.f.sha256)) {
		rc = usage_error(sc, "bad --sha256 '%s' (64 hex digits)",
				 t.f.sha256);
		goto out;
	}
	take_stop_signals();
	fo.cache_dir = t.f.cache;
	fo.max_bytes = t.f.max_bytes;
	fo.stop = &stop_flag;
	e = fetch_file(&fo, url, t.f.sha256, &r, &err);
	if (e != PX_OK) {
		log_err("%s", err.msg);
		/* not the file named: bad data; anything else a failure */
		rc = e == PX_EINVAL || e == PX_ETOOBIG ? TX_DATA : TX_FAIL;
		goto out;
	}
	if (t.o.json) {
		json_t *j = json_pack("{s:s, s:s, s:I, s:s, s:b}", "url",
				      u.shown, "path", r.path, "bytes",
				      (json_int_t)r.bytes, "sha256", r.sha256,
				      "cached", r.cached);

		rc = print_json(stdout, j);
		json_decref(j);
	} else {
		rc = printf("%s\n", r.path) < 0 || fflush(stdout) ? -1 : 0;
	}
	if (rc)
		log_err("result: %s", strerror(errno));
	rc = rc ? TX_FAIL : TX_OK;
out:
	fetch_url_release(&u);
	return rc;
}

/* With DIST_PARENT_ENV set, a role dies with whoever started it: it
 * exits if that one is gone already (it died before PR_SET_PDEATHSIG
 * took effect).  The variable names the parent's pid (local, a node), or
 * is 1 (proteusd): then being adopted by init means gone.  Unset (a role
 * started by systemd, cloud-init or by hand), a role outlives its parent.
 * Whether to go on. */
static bool watch_parent(void)
{
	const char *w = getenv(DIST_PARENT_ENV);
	char *end;
	long long p = 0;

	if (!w || !*w)
		return true;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	errno = 0;
	p = strtoll(w, &end, 10);
	if (!errno && end != w && !*end && p > 1)
		return getppid() == (pid_t)p;
	return getppid() != 1;
}

/* coordinator | ps | worker, once the options are checked. */
static int run_role(const struct subcmd *sc, struct dist_opts *o)
{
	struct px_error err = { 0 };
	bool coord = !strcmp(sc->name, "coordinator");
	enum px_err e;

	if (!watch_parent())
		return TX_FAIL;
	take_stop_signals();
	signal(SIGPIPE, SIG_IGN);
	/* A role sends and receives frames of megabytes every clock, each
	 * a nanomsg message allocated and freed: keep such blocks in the
	 * heap (glibc would mmap and munmap each, a page fault per 4 KiB
	 * touched: a fifth of a job's time in the kernel) and the heap's
	 * top where it is. */
	(void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
	(void)mallopt(M_TRIM_THRESHOLD, 256 << 20);
	if (dist_key_from_env(o, &err) != PX_OK) {
		log_err("%s", err.msg);
		return TX_USAGE;
	}
	log_init(sc->name, coord ? LOG_LVL_INFO : LOG_LVL_NOTICE);
	log_blas(o->train.threads > 0 ? o->train.threads : 1);
	/* workers that hold their partition only cannot help stragglers
	 * (docs/trainer.md, "Who reads what") */
	if (coord && dist_partition_only(o) && !o->no_reassign) {
		log_info("straggler relief off: each worker holds only its "
			 "partition of %s (%s)", o->data.train ? o->data.train
			 : "Fashion-MNIST", o->data.train ? "--data-whole: "
			 "each holds all, and relief works" : "without "
			 "--data-memory each holds all, and relief works");
		o->no_reassign = true;
	}
	if (coord)
		e = dist_coord_run(o, &err);
	else if (!strcmp(sc->name, "ps"))
		e = dist_ps_run(o, &err);
	else
		e = dist_worker_run(o, &err);
	if (e == PX_OK)
		return TX_OK;
	/* Stopped on purpose (SIGTERM from local or the agent): no error
	 * of its own, whatever call the signal cut short.  The coordinator
	 * has said "stopped by a signal"; its job did not end. */
	if (e == PX_ECANCELED ||
	    (stop_flag && e == (enum px_err)(PX_ESYS | EINTR)))
		return coord ? TX_FAIL : TX_OK;
	log_err("%s %u: %s", sc->name, o->node.v, err.msg);
	return exit_for(e);
}

/* node --stub: registers as node N with no role, then heartbeats. */
static int run_stub(struct dist_opts *o)
{
	struct px_error err = { 0 };
	enum px_err e;

	take_stop_signals();
	signal(SIGPIPE, SIG_IGN);
	if (dist_key_from_env(o, &err) != PX_OK) {
		log_err("%s", err.msg);
		return TX_USAGE;
	}
	e = dist_node_stub(o, &err);
	if (e == PX_OK || e == PX_ECANCELED ||
	    (stop_flag && e == (enum px_err)(PX_ESYS | EINTR)))
		return TX_OK;
	log_err("stub %u: %s", o->node.v, err.msg);
	return exit_for(e);
}

/* enroll: the job key into a key file, as a node gets it. */
static int cmd_enroll(const struct subcmd *sc, int argc, char **argv)
{
	struct px_error err = { 0 };
	char path[4096];
	struct tcli t;
	int rc;

	tcli_default(&t, sc);
	rc = parse(sc, argc, argv, &t, NULL, NULL);
	if (rc >= 0)
		return rc;
	log_init("enroll", LOG_LVL_NOTICE);
	if (enroll_node(&t.en, path, sizeof path, &err) != PX_OK) {
		log_err("%s", err.msg);
		return TX_FAIL;
	}
	printf("enrolled: the job's key is in %s\n", path);
	return TX_OK;
}

/* node: its roles, with the options it was given (less its own). */
static int run_node(struct tcli *t, char **role_args)
{
	struct px_error err = { 0 };
	int rc;

	if (!watch_parent())
		return TX_FAIL;
	log_init("node", LOG_LVL_NOTICE);
	log_blas(t->o.train.threads > 0 ? t->o.train.threads : 1);
	if (enroll_node_wanted()) {
		struct enroll_node_opts eo = { 0 };
		char path[4096];

		/* on an EC2 instance: the key by enrollment, before any
		 * role starts (they read it from the key file) */
		if (enroll_node(&eo, path, sizeof path, &err) != PX_OK) {
			log_err("node %u: %s", t->o.node.v, err.msg);
			return TX_FAIL;
		}
	}
	t->n.exe = "/proc/self/exe";
	t->n.base = t->o.node.v;
	t->n.listen = t->o.listen;
	t->n.reliable = t->o.reliable;
	t->n.role_args = role_args;
	if (t->n.stub)
		return run_stub(&t->o);
	if (!t->n.ps && !t->n.workers)
		return usage_error(find_subcmd("node"), "a node needs "
				   "--with-ps or --node-workers K");
	if ((uint64_t)t->n.base + t->n.workers >= UINT32_MAX - 1)
		return usage_error(find_subcmd("node"), "--node %u: its "
				   "workers' ids are past the last", t->n.base);
	if (t->n.leave_on_rebalance && !t->n.imds)
		return usage_error(find_subcmd("node"), "--leave-on-rebalance "
				   "needs --imds-notices");
	if (t->n.clock_speedup > 1 && !t->n.clock_origin_s)
		return usage_error(find_subcmd("node"), "--clock-speedup %u "
				   "needs --clock-origin (the fake EC2's)",
				   t->n.clock_speedup);
	t->n.log = log_cb;
	rc = dist_node_run(&t->n, &err);
	if (rc != 0 && err.msg[0])
		log_err("node %u: %s", t->n.base, err.msg);
	return rc;
}

/* coordinator | ps | worker | local */
/* local --model mf: both ratings files read and the model they fix
 * checked once, before any role starts.  -1: fine, else the exit
 * status. */
static int mf_check_sets(const struct dist_opts *o)
{
	struct px_error err = { 0 };
	struct mf_set train = { 0 }, test = { 0 };
	struct mf_desc d;
	enum px_err e;

	e = dist_mf_load(o, &train, &d, &err);
	if (e == PX_OK)
		e = mf_load(o->data.test, o->max_test, &test, &err);
	mf_set_release(&train);
	mf_set_release(&test);
	if (e == PX_OK)
		return -1;
	log_err("%s", err.msg);
	return exit_for(e);
}

static int cmd_dist(const struct subcmd *sc, int argc, char **argv)
{
	struct px_error err = { 0 };
	struct tcli t;
	bool local = sc->mask == C_LOCAL;
	char **role_args;
	size_t nargs = 0;
	int rc;

	tcli_default(&t, sc);
	role_args = px_calloc((size_t)argc + 1, sizeof(char *));
	if (!role_args) {
		log_err("out of memory");
		return TX_FAIL;
	}
	rc = parse(sc, argc, argv, &t,
		   local || (sc->mask & C_NODE) ? role_args : NULL, &nargs);
	if (rc < 0)
		rc = check_combination(sc, &t);
	if (rc < 0)
		rc = fetch_data(&t);
	if (rc < 0 && (local || !strcmp(sc->name, "coordinator")))
		rc = check_files(t.o.checkpoint, t.o.resume, t.o.export_path);
	if (rc >= 0)
		goto out;
	/* mf: no straggler relief (docs/trainer.md, "Matrix
	 * factorization") */
	if (t.o.train.model == MODEL_MF)
		t.o.no_reassign = true;
	if (sc->mask & C_NODE) {
		rc = run_node(&t, role_args);
		goto out;
	}
	if (!local) {
		rc = run_role(sc, &t.o);
		goto out;
	}
	t.l.role_args = role_args;
	/* bad data is said once, here, before any role starts */
	if (t.o.train.model == MODEL_MF) {
		rc = mf_check_sets(&t.o);
		if (rc >= 0)
			goto out;
	} else if (t.o.data.train) {
		bool whole;

		if (data_check(&t.o.data, &whole, &err) != PX_OK) {
			log_err("%s", err.msg);
			rc = exit_for(err.code);
			goto out;
		}
	}
	rc = dist_local_run(&t.o, &t.l, &err);
	if (rc != 0 && err.msg[0])
		log_err("%s", err.msg);
out:
	free(role_args);
	return rc;
}

int main(int argc, char **argv)
{
	const struct subcmd *sc;

	log_init(PROG, LOG_LVL_INFO);
	kern_cpu_flush_denormals(); /* every role trains on this thread */
	if (argc < 2)
		return usage_error(NULL, "no command given");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		help_all(stdout);
		return TX_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf(PROG " %s\n", PX_VERSION);
		return TX_OK;
	}
	if (!strcmp(argv[1], "help")) {
		if (argc < 3) {
			help_all(stdout);
			return TX_OK;
		}
		sc = find_subcmd(argv[2]);
		if (!sc)
			return usage_error(NULL, "unknown command '%s'",
					   argv[2]);
		help(sc, stdout);
		return TX_OK;
	}
	sc = find_subcmd(argv[1]);
	if (!sc)
		return usage_error(NULL, argv[1][0] == '-'
				   ? "unknown option '%s'"
				   : "unknown command '%s'", argv[1]);
	if ((sc->mask & (C_RUN | C_EVAL)) && !start_blas(argv))
		return TX_FAIL;
	if (sc->mask == C_TRAIN)
		return cmd_train(sc, argc - 1, argv + 1);
	if (sc->mask == C_EVAL)
		return cmd_eval(sc, argc - 1, argv + 1);
	if (sc->mask == C_ENROLL)
		return cmd_enroll(sc, argc - 1, argv + 1);
	if (sc->mask == C_FETCH)
		return cmd_fetch(sc, argc - 1, argv + 1);
	if (sc->mask == C_PREDICT)
		return cmd_predict(sc, argc - 1, argv + 1);
	return cmd_dist(sc, argc - 1, argv + 1);
}
