/* tcli_opts.c -- proteus-trainer's option engine: the one table of every
 * option of every command (topts[]), and what reads it: parsing, range
 * checks, --help with each default, which options `local` and `node`
 * pass on to the roles, and the checks across options.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/log.h"
#include "../../common/px.h"
#include "../../cloudapi/fetch.h"
#include "../io/data.h"
#include "../dist/dist.h"
#include "../dist/dist_node.h"
#include "../compute/kern_cuda.h"
#include "../compute/mf.h"
#include "../train_local.h"
#include "tcli.h"

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
	/* program-node */
	OPT("hub", "ADDR", C_PROGRAM, K_STR, g.hub, 0, 0, 0,
	    "proteusd's endpoint for the job's program channel (ipc:// or "
	    "tcp://HOST:PORT)", NULL),
	OPT("inst", "N", C_PROGRAM, K_UINT, g.inst, 1, (double)UINT32_MAX,
	    F_NORANGE, "this node's instance (the daemon's number)", NULL),
	OPT("log", "FILE", C_PROGRAM, K_STR, g.log, 0, 0, 0,
	    "the program's output, rotated at 4 MiB into FILE.1",
	    "this process's stderr"),
	OPT("work", "DIR", C_PROGRAM, K_STR, g.work, 0, 0, 0,
	    "where the node's folder is made", "$TMPDIR, else /tmp"),
	OPT("listen", "ADDR", C_PROGRAM, K_STR, g.listen, 0, 0, 0,
	    "this node's own address (tcp://HOST:PORT: HOST is the one its "
	    "peers reach, PORT and PORT+1 its program's; ipc://: this "
	    "host's loopback)", "ipc:// (loopback)"),
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
	    60000, 0, "test fault: each PS holds the pushes it receives (as "
	    "still in flight) until a read waits for pushes, MS at most, "
	    "0: off", NULL),
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
	OPT("imds-notices", NULL, C_NODE | C_PROGRAM, K_FLAG, n.imds, 0, 0, F_OWN,
	    "node: poll the instance metadata (IMDSv2) for a spot "
	    "interruption notice, on which the roles leave by its time, "
	    "and for a rebalance recommendation", NULL),
	OPT("imds-poll-ms", "MS", C_NODE | C_PROGRAM, K_UINT, n.imds_poll_ms, 50,
	    600000, F_OWN, "node: between two polls",
	    "5 s of the notices' clock: 5000 / K"),
	OPT("imds-margin-ms", "MS", C_NODE | C_PROGRAM, K_UINT, n.imds_margin_ms, 0,
	    600000, F_OWN, "node: the roles are to be gone this long before "
	    "the notice's time (at most a quarter of the time left)", NULL),
	OPT("leave-on-rebalance", NULL, C_NODE | C_PROGRAM, K_FLAG, n.leave_on_rebalance,
	    0, 0, F_OWN, "node: a rebalance recommendation is a leave "
	    "(reason rebalance), not only a log line", NULL),
	OPT("clock-speedup", "K", C_NODE | C_PROGRAM, K_UINT, n.clock_speedup, 1, 1200,
	    F_OWN, "node: the notices' times are on a clock K times faster "
	    "than real time (a fake EC2's; AWS: 1)", NULL),
	OPT("clock-origin", "T0", C_NODE | C_PROGRAM, K_UINT, n.clock_origin_s, 0,
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

int tx_usage(const struct subcmd *sc, const char *fmt, ...)
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
void tx_print_wrapped(FILE *f, const char *text, int col, int indent)
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
double tx_float_as_typed(float f)
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
		snprintf(buf, len, "%g", tx_float_as_typed(*(const float *)p));
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
void tx_help(const struct subcmd *sc, FILE *f)
{
	struct tcli d;

	tcli_default(&d, sc);
	fprintf(f, "usage: " PROG " %s %s\n", sc->name, sc->synopsis);
	tx_print_wrapped(f, sc->summary, 0, 0);
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
		tx_print_wrapped(f, text, 28, 28);
	}
	fprintf(f, "  --help                    this help\n");
	if (sc->more) {
		fputc('\n', f);
		tx_print_wrapped(f, sc->more, 0, 0);
	}
	fprintf(f, "\nexit: 0 ok, 1 failure, 2 usage, 3 bad input data "
		   "(docs/trainer.md, \"Exit codes\")\n");
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
			return tx_usage(sc, "bad --%s '%s' (an integer in "
					"%" PRIu64 "..%" PRIu64 ")",
					o->name, arg, uint_min(o),
					uint_max(o));
		set_uint(p, o->size, v);
		return 0;
	}
	case K_SECS: {
		double v = is_decimal(arg) ? strtod(arg, &end) : NAN;

		if (errno || !(v >= 0.0) || v > 1e6)
			return tx_usage(sc, "bad --%s '%s' (seconds, 0 to "
					"1000000)", o->name, arg);
		*(double *)p = v;
		return 0;
	}
	case K_FLOAT: {
		float v = is_decimal(arg) ? strtof(arg, &end) : NAN;
		bool lo = (o->flags & F_MIN_OPEN) ? v > o->min : v >= o->min;
		bool hi = (o->flags & F_MAX_OPEN) ? v < o->max : v <= o->max;

		if (errno || !isfinite(v) || !lo || !hi)
			return tx_usage(sc, "bad --%s '%s' (%sa number %s "
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
			return tx_usage(sc, "--%s needs a value, not ''",
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
				return tx_usage(sc, "--%s %s: that variable "
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
			return tx_usage(sc, "--%s '%s': longer than %zu "
					"bytes", o->name, arg, o->size - 1);
		if (o->kind == K_ADDR)
			e = dist_endpoint(arg, DIST_EP_REP, buf, sizeof(buf),
					  &err);
		if (e == PX_OK)
			snprintf(p, o->size, "%s", arg);
		break;
	case K_STAGE_AT:
		if (parse_stage_at(arg, &t->o))
			return tx_usage(sc, "bad --stage-at '%s' "
					"(CLOCK:STAGE, stage 1..3)", arg);
		return 0;
	case K_SLOW_AT:
	case K_SLOW:
		if (parse_slow(arg, o->kind == K_SLOW_AT, o->kind == K_SLOW_AT
			       ? t->l.slow : t->o.slow, o->kind == K_SLOW_AT
			       ? &t->l.n_slow : &t->o.n_slow))
			return tx_usage(sc, "bad --%s '%s' (%s, seconds "
					"and a factor in 1..1000; at most "
					"%d)", o->name, arg, o->arg,
					DIST_SLOW_MAX);
		return 0;
	}
	if (e != PX_OK)
		return tx_usage(sc, "--%s: %s", o->name, err.msg);
	return 0;
}

/* Parse sc's options (argv[0] is the command) into t.  For local, the
 * arguments the roles take are appended to role_args (*nargs of them).
 * Returns -1 to go on, else the exit status (TX_OK after --help). */
int tx_parse(const struct subcmd *sc, int argc, char **argv,
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
			tx_help(sc, stdout);
			return TX_OK;
		}
		if (c == '?' || c == ':' || c < OPT_BASE ||
		    c >= OPT_BASE + (int)N_TOPTS)
			return tx_usage(sc, c == ':' ? "option '%s' for "
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
		return tx_usage(sc, sc->mask == C_EVAL
				? "eval needs a checkpoint FILE"
				: sc->mask == C_PREDICT
				? "predict needs a MODEL and a DATA file"
				: "fetch needs a URL");
	if (optind < argc - one_arg)
		return tx_usage(sc, "unexpected argument '%s' for '%s'",
				argv[optind + one_arg],
				sc->name);
	return -1;
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
int tx_check_combination(const struct subcmd *sc, const struct tcli *t)
{
	const struct dist_opts *o = &t->o;

	if ((sc->mask & C_RUN) && !o->data.train != !o->data.test)
		return tx_usage(sc, "%s needs %s too (your own data is a "
				"training set and a test set)",
				o->data.train ? "--train-data" :
				"--test-data", o->data.train ?
				"--test-data" : "--train-data");
	if (o->data.test && o->data_dir)
		return tx_usage(sc, "--data DIR names Fashion-MNIST's "
				"folder: not with your own data");
	if ((sc->mask & C_DIST) && o->train.model == MODEL_MF) {
		const char *bad = mf_dist_refused(sc, t);

		if (bad)
			return tx_usage(sc, "--model mf does not take %s "
					"in a distributed run", bad);
		if (!o->data.train)
			return tx_usage(sc, "--model mf needs --train-data "
					"and --test-data (user,item,rating "
					"lines)");
	}
	if ((sc->mask & C_DIST) && o->train.model != MODEL_MF &&
	    o->train.rank != TRAIN_MF_RANK)
		return tx_usage(sc, "--rank is for --model mf");
	if (!(sc->mask & C_DIST))
		return -1;
	if (o->checkpoint_every && !o->checkpoint)
		return tx_usage(sc, "--checkpoint-every needs --checkpoint "
				"FILE");
	if ((o->checkpoint_budget || o->checkpoint_full_every) &&
	    !o->checkpoint)
		return tx_usage(sc, "--checkpoint-budget and "
				"--checkpoint-full-every need --checkpoint "
				"FILE");
	if (o->checkpoint_full_every && !o->checkpoint_budget)
		return tx_usage(sc, "--checkpoint-full-every needs "
				"--checkpoint-budget BYTES (without it "
				"every checkpoint is full)");
	if (t->l.max_restarts && !o->checkpoint)
		return tx_usage(sc, "--max-restarts needs --checkpoint FILE "
				"(a restart resumes from it)");
	if (t->l.reliable > o->ps)
		return tx_usage(sc, "--reliable %u is more than --ps %u",
				t->l.reliable, o->ps);
	for (uint32_t i = 0; i < t->l.n_slow; i++)
		if (t->l.slow[i].worker >= o->workers)
			return tx_usage(sc, "--slow-worker-at: worker %u of "
					"%u (0 is the first)",
					t->l.slow[i].worker, o->workers);
	if (o->hb_timeout_ms <= o->hb_ms)
		return tx_usage(sc, "--hb-timeout %u must be more than "
				"--heartbeat %u", o->hb_timeout_ms,
				o->hb_ms);
	if ((sc->mask & C_ROLE) && (!o->coord[0] || !o->listen[0]))
		return tx_usage(sc, "%s needs --coord and --listen",
				sc->name);
	return -1;
}
