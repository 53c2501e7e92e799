/* proteus-trainer -- the trainer program: `train` (single process),
 * `eval` (a checkpoint), `predict`, `fetch`, the distributed roles
 * `coordinator`, `ps` and `worker` (see docs/trainer.md), `node` and
 * `enroll` (an instance's), and `local`, which starts a whole job on
 * this host.
 *
 * Each command lives in its own cmd_<name>.c (tcli.h); this file holds
 * the command table, the program's --help and the dispatch.  Every
 * option of every command is one row of topts[] in tcli_opts.c.  Exit
 * codes (docs/trainer.md, "Exit codes"): 0 ok, 1 failure, 2 usage, 3 bad
 * input data; `local` also 124 (its --timeout), 130 (interrupted), 128+N
 * (the coordinator killed by N).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../../common/enroll.h"
#include "../../common/log.h"
#include "../../common/px.h"
#include "../compute/blas_pick.h"
#include "../dist/dist.h"
#include "../compute/kern.h"
#include "tcli.h"

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
	  NULL,
	  tx_cmd_train },
	{ "local", C_LOCAL, "[OPTIONS]",
	  "run a whole elastic parameter-server job on this host "
	  "(coordinator, parameter servers, workers)",
	  "The roles' output comes through local; a role that dies on its "
	  "own ends the job at once with its error when the job cannot go "
	  "on without it.  Also exits 124 (--timeout), 130 (interrupted), "
	  "128+N (the coordinator killed by signal N).",
	  tx_cmd_local },
	{ "eval", C_EVAL, "FILE [OPTIONS]",
	  "say what a checkpoint is and evaluate it on the test set",
	  NULL,
	  tx_cmd_eval },
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
	  "or data (the message names the file and the field).",
	  tx_cmd_predict },
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
	  "regular file).",
	  tx_cmd_fetch },
	{ "coordinator", C_ROLE, "--node N --job ID --coord ADDR "
	  "--listen ADDR [OPTIONS]",
	  "a job's coordinator: membership, clock, placement, evaluation "
	  "(started by local or proteusd)",
	  KEY_HELP,
	  tx_cmd_role },
	{ "ps", C_ROLE, "--node N --job ID --coord ADDR --listen ADDR "
	  "[OPTIONS]",
	  "a parameter server holding shards of the model (started by local "
	  "or proteusd)",
	  KEY_HELP,
	  tx_cmd_role },
	{ "worker", C_ROLE, "--node N --job ID --coord ADDR --listen ADDR "
	  "[OPTIONS]",
	  "a worker computing gradients on its partition (started by local "
	  "or proteusd)",
	  KEY_HELP,
	  tx_cmd_role },
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
	  "job key) the node first enrolls, as `enroll` does.",
	  tx_cmd_node },
	{ "program-node", C_PROGRAM, "--hub ADDR --inst N [--log FILE] "
	  "[--work DIR]",
	  "a program job's node agent: runs the user's program on this "
	  "instance under the contract of docs/programs.md (started by "
	  "proteusd)",
	  "What it runs (the command, its environment, the user, the code) "
	  "comes from proteusd over the program channel, sealed under the "
	  "job key ($" DIST_KEY_ENV ", or $" DIST_KEY_FILE_ENV "), never "
	  "from the command line.  SIGTERM (sigqueue: the milliseconds "
	  "left) is passed to the program with the job's grace period as "
	  "its share of them, then SIGKILL.",
	  tx_cmd_program },
	{ "ckpt-s3", 0, "put|get --store s3://BUCKET[/PREFIX] --job ID "
	  "[OPTIONS]",
	  "a program job's checkpoint store in S3: put one there, or get "
	  "the latest back (started by proteusd)",
	  "put --seq N --sha256 HEX --size BYTES --name NAME [--delete-from "
	  "A --delete-to B] < N.tar: PUTs STORE/ID/N.tar (S3 checks it by "
	  "its SHA-256), then STORE/ID/LATEST ({seq, name, sha256, size}), "
	  "then DELETEs STORE/ID/A.tar..B.tar.  get --dir DIR: GETs "
	  "STORE/ID/LATEST and its tar, checked by its SHA-256, into DIR "
	  "(the tar, then LATEST); none there (404) is no error.  Signed "
	  "with the AWS credentials of the environment, the profile or the "
	  "instance role ($AWS_ENDPOINT_URL_S3 names another endpoint); "
	  "failures of the network and 5xx answers are retried.  The "
	  "outcome is one JSON line on stdout.",
	  tx_cmd_ckpt_s3 },
	{ "enroll", C_ENROLL, "[OPTIONS]",
	  "get the job's key from proteusd as a node on an EC2 instance "
	  "does (from $" ENROLL_ENV_ADDR ", $" ENROLL_ENV_JOB ", $"
	  ENROLL_ENV_PUB ", $" ENROLL_ENV_TICKET " and the instance's "
	  "signed identity document)",
	  "The key goes to a key file (mode 0600), by default "
	  "$STATE_DIRECTORY/job-N.key, else $HOME/.proteus/job-N.key; it "
	  "is never printed.  A key file already there is used as it is "
	  "(the ticket is single-use).  Exits 0 enrolled, 1 refused or no "
	  "answer, 2 usage.  docs/security.md has the scheme.",
	  tx_cmd_enroll },
};

#define N_SUBCMDS (sizeof(subcmds) / sizeof(subcmds[0]))

static const struct subcmd *find_subcmd(const char *name)
{
	for (size_t i = 0; i < N_SUBCMDS; i++)
		if (!strcmp(subcmds[i].name, name))
			return &subcmds[i];
	return NULL;
}

/* `proteus-trainer --help`: the commands. */
static void help_all(FILE *f)
{
	fprintf(f, "usage: " PROG " COMMAND [OPTIONS]\n"
		   "       " PROG " --help | --version\n\n"
		   "commands:\n");
	for (size_t i = 0; i < N_SUBCMDS; i++) {
		fprintf(f, "  %-12s ", subcmds[i].name);
		tx_print_wrapped(f, subcmds[i].summary, 15, 15);
	}
	fprintf(f, "\n'" PROG " COMMAND --help' describes a command's "
		   "options and\ntheir defaults.\n"
		   "exit: 0 ok, 1 failure, 2 usage, 3 bad input data; local "
		   "also 124 timeout,\n"
		   "      130 interrupted, 128+N coordinator killed by signal "
		   "N\n");
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

int main(int argc, char **argv)
{
	const struct subcmd *sc;

	log_init(PROG, LOG_LVL_INFO);
	kern_cpu_flush_denormals(); /* every role trains on this thread */
	if (argc < 2)
		return tx_usage(NULL, "no command given");
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
			return tx_usage(NULL, "unknown command '%s'",
					argv[2]);
		tx_help(sc, stdout);
		return TX_OK;
	}
	sc = find_subcmd(argv[1]);
	if (!sc)
		return tx_usage(NULL, argv[1][0] == '-'
				? "unknown option '%s'"
				: "unknown command '%s'", argv[1]);
	if ((sc->mask & (C_RUN | C_EVAL)) && !start_blas(argv))
		return TX_FAIL;
	return sc->run(sc, argc - 1, argv + 1);
}
