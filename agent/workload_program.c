/* workload_program.c -- the user's own program as a job's workload
 * (workload.h; docs/programs.md): each instance runs the node agent
 * (`proteus-trainer program-node`, trainer/dist/prog_node.c), which runs
 * the program under the contract and speaks for it over the program
 * channel (common/pchan.h) to the hub here, a REP socket in the job's
 * folder.  The hub decides which start of the program each node runs
 * (its ranks, or torchrun's rendezvous), keeps the checkpoint store
 * (DIR/ID/ckpt: the completed checkpoints, sequence-numbered, the latest
 * named by LATEST, written whole before it names them; for a store in
 * S3, a copy there that a child of the daemon's own program puts each
 * checkpoint into and restores a lost folder from: "The checkpoint store
 * in S3"), and turns the nodes' progress lines and ends into the job's
 * reports and end.
 *
 * Two ways a program runs (docs/programs.md, "Membership"):
 *  - elastic (its command is torchrun): one start on every node; the
 *    survivors' torchrun re-forms the group by itself (min:max) through
 *    the rendezvous, which a reliable node hosts;
 *  - fixed (any other command): each start has its nodes and ranks;
 *    when they change, the group re-forms: a new start on the nodes up,
 *    from the latest checkpoint (not a failure). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <math.h>
#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/pchan.h"
#include "../trainer/dist/dist.h"
#include "../trainer/io/data_url.h"
#include "jobs_int.h"
#include "loop.h"
#include "spawnattr.h"

#define PNODES_MAX 512           /* instances a job's hub tracks */
#define SETTLE_US 1500000        /* a fixed group re-forms after this
				  * long of steady membership */
#define PROG_HB_LOST_US 10000000 /* a node silent this long is gone (a
				  * node whose process ends, the world
				  * tells at once) */
#define TORCHRUN_RESTARTS 100    /* PET_MAX_RESTARTS: torchrun's own
				  * restarts of its workers, which a
				  * peer's eviction costs one of */
#define SPS_WINDOW_US 10000000   /* samples per second over this */
#define REFORM_WAIT_US 150000000 /* a re-form's barrier waits at most
				  * this (the grace, then SIGKILL, is less) */
#define PROG_REMOTE_USER "nobody" /* the program's user on an instance */
#define PROG_TASKS_A_PROC 1024   /* tasks (threads) a process of the
				  * program may have, for its RLIMIT_NPROC:
				  * torch's pools are tens a process */
#define PROG_LOG_ROTATE (4u << 20) /* a node's log, as the agent's */
#define PROG_QUIET_US 300000000  /* a running program's quiet time that
				  * is not yet a stall (5 minutes) */
#define S3_TRIES 3               /* runs of the S3 child for one
				  * checkpoint (each retries itself) */
#define S3_BACKOFF_US 2000000    /* before the second; x4 each after */
#define S3_OUT_MAX (64u << 10)   /* the child's answer read back */

struct pnode {
	uint64_t id;
	bool reliable;
	bool remote;             /* on another machine (ec2) */
	char addr[64];           /* where its peers reach it (its hello) */
	int port;                /* its first port; 0: this host's pick */
	off_t log_size;          /* its log (remote: written here) */
	bool hello;              /* its agent said hello */
	bool leaving;            /* a notice or a release */
	bool gone;               /* ended */
	uint64_t session, counter; /* the channel: the last request's */
	uint64_t seen_us;
	int64_t start;           /* the start it runs (its beat says) */
	int rank;                /* in the current fixed start; -1 */
	/* an upload in progress */
	int up_fd;
	int64_t up_off;
	char up_name[201];
	EVP_MD_CTX *up_md;
};

struct prog_ckpt {
	int64_t seq;
	char name[201];
	char sha256[65];
	int64_t size;
};

/* The program of one job (job->wl). */
struct program {
	struct pchan_key key;
	char hub[JOB_PATH_MAX + 16];
	int sock, fd;
	char store[JOB_PATH_MAX + 8];    /* DIR/ID/ckpt */
	char log[JOB_PATH_MAX + 16];     /* the agents' own output */
	char logs[JOB_PATH_MAX + 8];     /* DIR/ID/logs: the programs' */
	char code[JOB_PATH_MAX + 32];    /* the snapshot; "" none */
	char keyenv[JOB_KEYENV_LEN];
	uint32_t uid, gid, groups[64];
	int ngroups;
	bool elastic;            /* the group re-forms itself */
	bool torchrun;           /* the command is torchrun's */
	struct pnode nodes[PNODES_MAX];
	size_t n;
	int64_t start;           /* the current start (0: none yet) */
	uint64_t start_us;       /* when it began */
	uint64_t left_us;        /* a node of it last left (a loss or a
				  * notice) */
	char owed[64];           /* elastic: a new start is owed (why;
				  * "" none), made once the nodes allow */
	uint64_t line_us;        /* the last progress line */
	uint64_t formable_us;    /* nodes.min up since (0: fewer now) */
	uint64_t line_gap_us;    /* the longest gap between two lines of
				  * one start (or its start and its first)
				  * with no peer leaving */
	bool reforming;          /* a fixed group re-forms: every node's
				  * program stops before the next start */
	char reform_why[64];
	uint64_t reform_us;
	int64_t restarts;        /* after failures */
	uint64_t changed_us;     /* membership last changed */
	int master_port, rdzv_port;
	uint64_t rdzv_host;      /* elastic: the node hosting it */
	int group_n;             /* fixed: nodes in the current start */
	struct prog_ckpt latest;
	/* progress */
	int64_t samples;
	double loss;
	json_t *metrics;
	int64_t alive;           /* the liveness mark (job_report.clock) */
	uint64_t sps_us;
	int64_t sps_samples;
	double sps;
	uint64_t quiet_us;       /* last progress or checkpoint */
	bool done;
	char why[512];
	/* the store's copy in S3 (program.checkpoint_store; "The
	 * checkpoint store in S3", docs/programs.md): one child at a time,
	 * `proteus-trainer ckpt-s3 put|get` with the daemon's credentials */
	bool s3;                 /* the store is in S3 */
	pid_t s3_pid;            /* its child; 0: none */
	bool s3_get;             /* the child restores (else it mirrors) */
	int64_t s3_seq;          /* the checkpoint the child puts */
	int64_t s3_prune_to;     /* ... and the seq it deletes up to */
	int64_t s3_mirrored;     /* the newest checkpoint there */
	int64_t s3_pruned;       /* every seq up to this deleted there */
	bool s3_restore;         /* LATEST to get from there first */
	int s3_tries;            /* failed runs for the current one */
	int64_t s3_failures;     /* failed runs in all */
	int64_t s3_gave_up;      /* a checkpoint not mirrored after
				  * S3_TRIES runs (the next one is) */
	uint64_t s3_after_us;    /* no run before (the backoff) */
	char s3_err[400];        /* the last run's failure; "" */
};

static struct program *pr(const struct job *j)
{
	return j->wl;
}

/* ---- nodes ---- */

static struct pnode *node_of(struct job *j, uint64_t id, bool add)
{
	struct program *p = pr(j);

	for (size_t i = 0; i < p->n; i++)
		if (p->nodes[i].id == id)
			return &p->nodes[i];
	if (!add || p->n == PNODES_MAX)
		return NULL;
	p->nodes[p->n] = (struct pnode){ .id = id, .rank = -1, .up_fd = -1 };
	return &p->nodes[p->n++];
}

static bool node_up(const struct pnode *nd)
{
	return nd->hello && !nd->leaving && !nd->gone;
}

static void up_drop(struct job *j, struct pnode *nd)
{
	char part[JOB_PATH_MAX + 48];

	if (nd->up_fd >= 0)
		close(nd->up_fd);
	nd->up_fd = -1;
	EVP_MD_CTX_free(nd->up_md);
	nd->up_md = NULL;
	snprintf(part, sizeof part, "%s/.up-%" PRIu64, pr(j)->store, nd->id);
	(void)unlink(part);
}

static bool node_up_id(struct job *j, uint64_t id)
{
	const struct pnode *nd = id ? node_of(j, id, false) : NULL;

	return nd && node_up(nd);
}

static void membership_changed(struct job *j)
{
	pr(j)->changed_us = px_now_mono_us();
}

/* nd leaves (a loss, a notice, a release): when it ran the current start,
 * the start's group has lost a peer (take_exit, program_poll). */
static void member_left(struct job *j, const struct pnode *nd)
{
	struct program *p = pr(j);

	membership_changed(j);
	if (p->start && nd->start == p->start)
		p->left_us = px_now_mono_us();
}

/* ---- the store ---- */

/* The store's file name (LATEST, STATE, S3), parsed; NULL when it is
 * not there or not JSON. */
static json_t *store_get(const struct job *j, const char *name)
{
	char path[JOB_PATH_MAX + 16];

	snprintf(path, sizeof path, "%s/%s", pr(j)->store, name);
	return json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
}

static void load_latest(struct job *j)
{
	json_t *o = store_get(j, "LATEST");
	struct prog_ckpt *c = &pr(j)->latest;

	if (json_is_object(o) &&
	    json_is_string(json_object_get(o, "name")) &&
	    json_is_string(json_object_get(o, "sha256"))) {
		c->seq = json_integer_value(json_object_get(o, "seq"));
		c->size = json_integer_value(json_object_get(o, "size"));
		snprintf(c->name, sizeof c->name, "%s",
			 json_string_value(json_object_get(o, "name")));
		snprintf(c->sha256, sizeof c->sha256, "%s",
			 json_string_value(json_object_get(o, "sha256")));
	}
	json_decref(o);
}

/* The store's file name (LATEST, STATE, S3) written whole: o (taken)
 * into a new file, fsync'd, renamed over it. */
static bool store_put(const struct job *j, const char *name, json_t *o)
{
	char path[JOB_PATH_MAX + 16], tmp[JOB_PATH_MAX + 24];
	int fd;
	bool ok;

	snprintf(path, sizeof path, "%s/%s", pr(j)->store, name);
	snprintf(tmp, sizeof tmp, "%s.new", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ok = o && fd >= 0 && json_dumpfd(o, fd, JSON_COMPACT) == 0 &&
	     fsync(fd) == 0;
	if (fd >= 0)
		close(fd);
	json_decref(o);
	return ok && rename(tmp, path) == 0;
}

/* LATEST written whole, after the checkpoint it names is. */
static bool save_latest(struct job *j)
{
	const struct prog_ckpt *c = &pr(j)->latest;

	return store_put(j, "LATEST", json_pack("{s:I, s:s, s:s, s:I}", "seq",
						(json_int_t)c->seq, "name",
						c->name, "sha256", c->sha256,
						"size", (json_int_t)c->size));
}

static void ckpt_path(const struct job *j, int64_t seq, char *buf,
		      size_t len)
{
	snprintf(buf, len, "%s/%" PRId64 ".tar", pr(j)->store, seq);
}

/* The upload of nd complete: checked, kept as the next sequence number,
 * named by LATEST; the oldest beyond checkpoint_keep removed. */
static int64_t up_commit(struct job *j, struct pnode *nd, const char *sha)
{
	struct program *p = pr(j);
	uint8_t d[32];
	unsigned dl = 0;
	char hex[65], part[JOB_PATH_MAX + 48], to[JOB_PATH_MAX + 40];
	struct prog_ckpt keep = p->latest;
	int64_t seq = p->latest.seq + 1;

	(void)EVP_DigestFinal_ex(nd->up_md, d, &dl);
	px_hex(d, sizeof d, hex);
	snprintf(part, sizeof part, "%s/.up-%" PRIu64, p->store, nd->id);
	ckpt_path(j, seq, to, sizeof to);
	if (strcmp(hex, sha) || fsync(nd->up_fd) != 0 ||
	    rename(part, to) != 0) {
		up_drop(j, nd);
		return -1;
	}
	close(nd->up_fd);
	nd->up_fd = -1;
	EVP_MD_CTX_free(nd->up_md);
	nd->up_md = NULL;
	p->latest = (struct prog_ckpt){ .seq = seq, .size = nd->up_off };
	snprintf(p->latest.name, sizeof p->latest.name, "%s", nd->up_name);
	snprintf(p->latest.sha256, sizeof p->latest.sha256, "%s", hex);
	if (!save_latest(j)) {
		p->latest = keep;
		(void)unlink(to);
		return -1;
	}
	for (int64_t s = seq - j->req.program.checkpoint_keep; s > 0; s--) {
		ckpt_path(j, s, to, sizeof to);
		if (unlink(to) != 0)
			break;
	}
	p->quiet_us = px_now_mono_us();
	p->alive++;
	job_eventf(j, "checkpoint", "checkpoint %" PRId64 " '%s' (%" PRId64
		   " bytes) from instance %" PRIu64 " stored", seq,
		   p->latest.name, p->latest.size, nd->id);
	return seq;
}

/* Whether n more bytes leave the store's file system 2% and 256 MiB
 * free at least (the daemon's database shares it). */
static bool room_for(const struct job *j, uint64_t n)
{
	struct statvfs v;
	uint64_t free_b, total, keep;

	if (statvfs(pr(j)->store, &v) != 0)
		return true;     /* unknown: the write itself will say */
	free_b = (uint64_t)v.f_bavail * v.f_frsize;
	total = (uint64_t)v.f_blocks * v.f_frsize;
	keep = total / 50 > (UINT64_C(256) << 20) ? total / 50 :
	       UINT64_C(256) << 20;
	return free_b > n && free_b - n >= keep;
}

/* {"op": "ckpt_put", "name", "off", "data" (base64), "last", "sha256",
 * "abort"}: one chunk of nd's upload. */
static json_t *on_put(struct job *j, struct pnode *nd, json_t *q)
{
	const char *name = json_string_value(json_object_get(q, "name"));
	const char *data = json_string_value(json_object_get(q, "data"));
	const char *sha = json_string_value(json_object_get(q, "sha256"));
	int64_t off = json_integer_value(json_object_get(q, "off"));
	int64_t max = j->req.program.checkpoint_max_mb << 20;
	size_t dl = data ? strlen(data) : 0;
	uint8_t *bin;
	int n;

	if (!name || !data || strlen(name) > 200 || dl > 4 * (PCHAN_CHUNK / 3) + 4)
		return json_pack("{s:s}", "error", "a bad checkpoint chunk");
	if (json_object_get(q, "abort")) {
		job_eventf(j, "checkpoint", "instance %" PRIu64 ": checkpoint "
			   "'%s' not stored: %s", nd->id, name,
			   json_string_value(json_object_get(q, "abort")) ?
			   json_string_value(json_object_get(q, "abort")) :
			   "aborted");
		up_drop(j, nd);
		return json_pack("{s:I}", "seq", (json_int_t)-1);
	}
	if (off == 0) {
		char part[JOB_PATH_MAX + 48];

		up_drop(j, nd);
		snprintf(part, sizeof part, "%s/.up-%" PRIu64, pr(j)->store,
			 nd->id);
		nd->up_fd = open(part, O_WRONLY | O_CREAT | O_TRUNC |
				 O_CLOEXEC | O_NOFOLLOW, 0600);
		nd->up_md = EVP_MD_CTX_new();
		nd->up_off = 0;
		snprintf(nd->up_name, sizeof nd->up_name, "%s", name);
		if (nd->up_fd < 0 || !nd->up_md ||
		    EVP_DigestInit_ex(nd->up_md, EVP_sha256(), NULL) != 1) {
			up_drop(j, nd);
			return json_pack("{s:s}", "error", "the store cannot "
					 "take a checkpoint now");
		}
	}
	if (nd->up_fd < 0 || off != nd->up_off || strcmp(name, nd->up_name))
		return json_pack("{s:s}", "error", "a checkpoint chunk out of "
				 "order");
	bin = malloc(PCHAN_CHUNK + 8);
	n = bin ? pchan_b64_decode(data, dl, bin) : -1;
	if (n < 0 || nd->up_off + n > max || !room_for(j, (uint64_t)n) ||
	    write(nd->up_fd, bin, (size_t)n) != n) {
		free(bin);
		job_eventf(j, "checkpoint", "instance %" PRIu64 ": checkpoint "
			   "'%s' not stored: %s", nd->id, name, n < 0 ?
			   "bad data" : nd->up_off + n > max ?
			   "larger than checkpoint_max_mb" :
			   !room_for(j, (uint64_t)n) ? "the head node's disk "
			   "is nearly full" : strerror(errno));
		up_drop(j, nd);
		return json_pack("{s:I}", "seq", (json_int_t)-1);
	}
	(void)EVP_DigestUpdate(nd->up_md, bin, (size_t)n);
	free(bin);
	nd->up_off += n;
	if (!json_is_true(json_object_get(q, "last")))
		return json_object();
	return json_pack("{s:I}", "seq", (json_int_t)(sha ? up_commit(j, nd, sha)
							     : -1));
}

/* {"op": "ckpt_get", "seq", "off"}: a chunk of a stored checkpoint. */
static json_t *on_get(struct job *j, json_t *q)
{
	int64_t seq = json_integer_value(json_object_get(q, "seq"));
	int64_t off = json_integer_value(json_object_get(q, "off"));
	char path[JOB_PATH_MAX + 40];
	uint8_t *bin;
	char *b64;
	ssize_t n;
	int fd;
	json_t *r;

	ckpt_path(j, seq, path, sizeof path);
	fd = seq > 0 && off >= 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0)
		return json_pack("{s:s}", "error", "no such checkpoint");
	bin = malloc(PCHAN_CHUNK);
	b64 = malloc(4 * (PCHAN_CHUNK / 3) + 8);
	n = bin && b64 ? pread(fd, bin, PCHAN_CHUNK, off) : -1;
	close(fd);
	if (n < 0) {
		free(bin);
		free(b64);
		return json_pack("{s:s}", "error", "the store cannot be read");
	}
	EVP_EncodeBlock((unsigned char *)b64, bin, (int)n);
	r = json_pack("{s:s, s:b}", "data", b64, "last", n < PCHAN_CHUNK);
	free(bin);
	free(b64);
	return r;
}

/* ---- the store's copy in S3 ---- */

/* DIR/ID/ckpt/S3: what the store in S3 holds, {"mirrored", "pruned"}
 * (written after each mirror, so that a new life of the daemon mirrors
 * only what the last one did not). */
static void s3_save(struct job *j)
{
	const struct program *p = pr(j);

	(void)store_put(j, "S3", json_pack("{s:I, s:I}", "mirrored",
					   (json_int_t)p->s3_mirrored,
					   "pruned", (json_int_t)p->s3_pruned));
}

static void s3_load(struct job *j)
{
	struct program *p = pr(j);
	json_t *o = store_get(j, "S3");

	p->s3_mirrored = json_integer_value(json_object_get(o, "mirrored"));
	p->s3_pruned = json_integer_value(json_object_get(o, "pruned"));
	if (p->s3_mirrored < 0 || p->s3_mirrored > p->latest.seq)
		p->s3_mirrored = 0;
	if (p->s3_pruned < 0 || p->s3_pruned > p->s3_mirrored)
		p->s3_pruned = 0;
	json_decref(o);
}

/* The child's answer: DIR/ID/ckpt-s3.out, its stdout and stderr. */
static void s3_out_path(const struct job *j, char *buf, size_t len)
{
	snprintf(buf, len, "%s/ckpt-s3.out", j->run.dir);
}

/* Start `proteus-trainer ckpt-s3 ...` (argv after the program) with
 * in on its stdin (-1: /dev/null), its output in ckpt-s3.out; the
 * daemon's AWS credentials in its environment, never in argv.  The
 * child is the daemon's own program, which no submitter controls. */
static bool s3_spawn(struct job *j, const char *const *args, int in)
{
	struct program *p = pr(j);
	char out[JOB_PATH_MAX + 16];
	const char *argv[24];
	posix_spawn_file_actions_t fa;
	char **envp = px_spawn_env(NULL, PX_SPAWN_ENV_TRAINER |
				   PX_SPAWN_ENV_DAEMON_AWS);
	size_t k = 0;
	pid_t pid;
	int r;

	argv[k++] = j->js->s.trainer;
	argv[k++] = "ckpt-s3";
	while (*args && k < sizeof argv / sizeof argv[0] - 1)
		argv[k++] = *args++;
	argv[k] = NULL;
	if (!envp) {
		snprintf(p->s3_err, sizeof p->s3_err, "out of memory");
		return false;
	}
	s3_out_path(j, out, sizeof out);
	posix_spawn_file_actions_init(&fa);
	if (in >= 0)
		posix_spawn_file_actions_adddup2(&fa, in, 0);
	else
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY,
						 0);
	posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT |
					 O_TRUNC, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	r = px_spawn(&pid, argv[0], &fa, (char *const *)argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	free(envp);
	if (r != 0) {
		snprintf(p->s3_err, sizeof p->s3_err, "start '%s': %s",
			 argv[0], strerror(r));
		return false;
	}
	p->s3_pid = pid;
	return true;
}

/* Mirror the newest checkpoint: its tar (the daemon's descriptor on
 * the child's stdin: a prune meanwhile takes nothing from it), LATEST,
 * then the ones checkpoint_keep pruned since the last mirror. */
static bool s3_put(struct job *j)
{
	struct program *p = pr(j);
	const struct prog_ckpt *c = &p->latest;
	char path[JOB_PATH_MAX + 40], id[24], seq[24], size[24], from[24];
	char to[24];
	int64_t upto = c->seq - j->req.program.checkpoint_keep;
	const char *args[] = { "put", "--store",
			       j->req.program.checkpoint_store, "--job", id,
			       "--seq", seq, "--sha256", c->sha256, "--size",
			       size, "--name", c->name, "--delete-from", from,
			       "--delete-to", to, NULL };
	int fd;
	bool ok;

	if (p->s3_get || p->s3_seq != c->seq)
		p->s3_tries = 0;      /* a new one: S3_TRIES runs of its own */
	p->s3_get = false;
	p->s3_seq = c->seq;
	ckpt_path(j, c->seq, path, sizeof path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(p->s3_err, sizeof p->s3_err, "'%s': %s", path,
			 strerror(errno));
		return false;
	}
	snprintf(id, sizeof id, "%" PRId64, j->id);
	snprintf(seq, sizeof seq, "%" PRId64, c->seq);
	snprintf(size, sizeof size, "%" PRId64, c->size);
	snprintf(from, sizeof from, "%" PRId64, p->s3_pruned + 1);
	snprintf(to, sizeof to, "%" PRId64, upto > p->s3_pruned ? upto : 0);
	p->s3_prune_to = upto > p->s3_pruned ? upto : p->s3_pruned;
	ok = s3_spawn(j, args, fd);
	close(fd);
	return ok;
}

/* Restore LATEST and its tar from the store in S3 into the folder. */
static bool s3_restore(struct job *j)
{
	struct program *p = pr(j);
	char id[24];
	const char *args[] = { "get", "--store",
			       j->req.program.checkpoint_store, "--job", id,
			       "--dir", p->store, NULL };

	snprintf(id, sizeof id, "%" PRId64, j->id);
	p->s3_get = true;
	return s3_spawn(j, args, -1);
}

/* The child's one JSON line (the last line of its output that is one),
 * or NULL. */
static json_t *s3_answer(struct job *j)
{
	char path[JOB_PATH_MAX + 16], *buf = NULL, *l;
	struct px_error err = {0};
	json_t *o = NULL;
	size_t n;

	s3_out_path(j, path, sizeof path);
	if (px_read_file(path, S3_OUT_MAX, &buf, &n, &err) != PX_OK)
		return NULL;
	for (l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 :
	     NULL) {
		json_t *t = l[0] == '{' ? json_loadb(l, strcspn(l, "\n"), 0,
						      NULL) : NULL;

		if (json_is_object(t)) {
			json_decref(o);
			o = t;
		} else {
			json_decref(t);
		}
	}
	free(buf);
	return o;
}

/* A failed run: its error kept and told, the next after a backoff, at
 * most S3_TRIES for one checkpoint (or restore). */
static void s3_failed(struct job *j, const char *what, const char *why)
{
	struct program *p = pr(j);
	char safe[PX_TERM_SAFE_LEN(sizeof p->s3_err)];

	px_term_safe(why, safe, sizeof safe);
	snprintf(p->s3_err, sizeof p->s3_err, "%s", safe);
	p->s3_failures++;
	p->s3_tries++;
	p->s3_after_us = px_now_mono_us() + ((uint64_t)S3_BACKOFF_US <<
					     (2 * (p->s3_tries - 1)));
	job_eventf(j, "checkpoint", "%s %s (try %d of %d): %s", what,
		   j->req.program.checkpoint_store, p->s3_tries, S3_TRIES,
		   p->s3_err);
	if (p->s3_tries < S3_TRIES)
		return;
	p->s3_tries = 0;
	p->s3_after_us = 0;
	if (p->s3_get) {
		p->s3_restore = false;
		snprintf(p->why, sizeof p->why, "the checkpoint store %s "
			 "cannot be read: %s", j->req.program.checkpoint_store,
			 p->s3_err);
	} else {
		p->s3_gave_up = p->s3_seq;
	}
}

/* What the get child brought: a checkpoint, or none there. */
static void s3_got(struct job *j, json_t *a)
{
	struct program *p = pr(j);
	int64_t seq = json_integer_value(json_object_get(a, "restored"));

	p->s3_restore = false;
	p->s3_tries = 0;
	p->s3_err[0] = 0;
	if (seq > 0) {
		load_latest(j);
		p->s3_mirrored = p->latest.seq;
		p->s3_pruned = p->latest.seq > j->req.program.checkpoint_keep ?
			       p->latest.seq - j->req.program.checkpoint_keep :
			       0;
		s3_save(j);
		job_eventf(j, "checkpoint", "checkpoint %" PRId64 " '%s' "
			   "restored from %s", p->latest.seq, p->latest.name,
			   j->req.program.checkpoint_store);
	} else {
		job_eventf(j, "checkpoint", "no checkpoint of this job in %s: "
			   "the program starts from nothing",
			   j->req.program.checkpoint_store);
	}
}

/* The child ended with status st: what it did. */
static void s3_ended(struct job *j, int st)
{
	struct program *p = pr(j);
	json_t *a = s3_answer(j);
	const char *e = json_string_value(json_object_get(a, "error"));
	char why[160];

	p->s3_pid = 0;
	if (!a && !e) {
		snprintf(why, sizeof why, "proteus-trainer ckpt-s3 ended (%s "
			 "%d) without an answer", WIFSIGNALED(st) ? "signal" :
			 "exit", WIFSIGNALED(st) ? WTERMSIG(st) :
			 WEXITSTATUS(st));
		e = why;
	}
	if (p->s3_get && a && (json_object_get(a, "restored") ||
			       json_is_true(json_object_get(a, "none"))))
		s3_got(j, a);
	else if (p->s3_get)
		s3_failed(j, "restoring from", e ? e : "no answer");
	else if (json_is_true(json_object_get(a, "mirrored"))) {
		p->s3_mirrored = p->s3_seq;
		if (json_is_true(json_object_get(a, "pruned")))
			p->s3_pruned = p->s3_prune_to;
		p->s3_tries = 0;
		p->s3_err[0] = 0;
		s3_save(j);
		if (e)     /* mirrored, but a delete failed: the next tries */
			s3_failed(j, "pruning", e);
	} else {
		s3_failed(j, "mirroring to", e ? e : "no answer");
	}
	json_decref(a);
}

/* Whether a checkpoint waits to be mirrored. */
static bool s3_pending(const struct program *p)
{
	return p->s3 && p->latest.seq > p->s3_mirrored &&
	       p->latest.seq != p->s3_gave_up;
}

/* Whether the job's work is over: the program is done, and its last
 * checkpoint is in its store in S3 too (or given up on after S3_TRIES
 * runs). */
static bool program_over(const struct program *p)
{
	return p->done && p->s3_pid <= 0 && !s3_pending(p);
}

/* Each turn: the child's end, then the next run (a restore first; then
 * the newest checkpoint only, whatever came and went meanwhile). */
static void s3_poll(struct job *j)
{
	struct program *p = pr(j);
	int st = 0;

	if (!p->s3)
		return;
	if (p->s3_pid > 0) {
		pid_t r = waitpid(p->s3_pid, &st, WNOHANG);

		if (r == 0 || (r < 0 && errno == EINTR))
			return;
		s3_ended(j, st);
	}
	if (p->why[0] || px_now_mono_us() < p->s3_after_us)
		return;
	if (p->s3_restore && !s3_restore(j))
		s3_failed(j, "restoring from", p->s3_err);
	else if (!p->s3_restore && s3_pending(p) && !s3_put(j))
		s3_failed(j, "mirroring to", p->s3_err);
}

/* The child, if one runs, killed (the job stops, or the daemon). */
static void s3_stop(struct job *j)
{
	struct program *p = pr(j);

	if (p->s3_pid <= 0)
		return;
	kill(-p->s3_pid, SIGKILL);
	while (waitpid(p->s3_pid, NULL, 0) < 0 && errno == EINTR)
		;
	p->s3_pid = 0;
}

/* ---- the starts, kept across the daemon's lives ---- */

/* DIR/ID/ckpt/STATE: the current start, its restarts after failures and
 * its rendezvous (an instance that outlives the daemon, ec2's, goes on
 * with the same start when the new daemon hears from it). */
static void save_state(struct job *j)
{
	const struct program *p = pr(j);

	(void)store_put(j, "STATE", json_pack(
		"{s:I, s:I, s:I, s:i, s:i}", "start", (json_int_t)p->start,
		"restarts", (json_int_t)p->restarts, "rdzv_host",
		(json_int_t)p->rdzv_host, "rdzv_port", p->rdzv_port,
		"master_port", p->master_port));
}

static void load_state(struct job *j)
{
	struct program *p = pr(j);
	json_t *o = store_get(j, "STATE");

	if (json_is_object(o)) {
		p->start = json_integer_value(json_object_get(o, "start"));
		p->restarts = json_integer_value(json_object_get(o,
							"restarts"));
		p->rdzv_host = (uint64_t)json_integer_value(json_object_get(o,
							"rdzv_host"));
		p->rdzv_port = (int)json_integer_value(json_object_get(o,
							"rdzv_port"));
		p->master_port = (int)json_integer_value(json_object_get(o,
							"master_port"));
	}
	if (p->start < 0 || p->restarts < 0)
		p->start = p->restarts = 0;
	json_decref(o);
}

/* ---- starts ---- */

/* A free TCP port of this host (bound and let go: the node binds it
 * again at once). */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = 0;

	if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
	    getsockname(s, (struct sockaddr *)&a, &al) == 0)
		port = ntohs(a.sin_port);
	if (s >= 0)
		close(s);
	return port;
}

static bool is_torchrun(const struct job *j)
{
	const char *a0 = j->req.program.cmd, *b = strrchr(a0, '/');
	const char *a1 = j->req.program.argc > 2 ? a0 + strlen(a0) + 1 : "";
	const char *a2 = j->req.program.argc > 2 ? a1 + strlen(a1) + 1 : "";

	b = b ? b + 1 : a0;
	return !strcmp(b, "torchrun") ||
	       (!strncmp(b, "python", 6) && !strcmp(a1, "-m") &&
		!strcmp(a2, "torch.distributed.run"));
}

/* A new start on the nodes up: fixed, ranks (reliable first, then by
 * id) up to nodes.max; elastic, every node up, the rendezvous on a
 * reliable node (the first up; else the first node). */
static void new_start(struct job *j, const char *why)
{
	struct program *p = pr(j);
	int rank = 0;
	char because[sizeof p->owed];

	snprintf(because, sizeof because, "%s", why);  /* may be p->owed */
	why = because;
	p->start++;
	p->start_us = px_now_mono_us();
	p->owed[0] = '\0';
	p->line_us = 0;
	p->master_port = free_port();
	for (size_t i = 0; i < p->n; i++)
		p->nodes[i].rank = -1;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < p->n; i++) {
			struct pnode *nd = &p->nodes[i];

			if (node_up(nd) && nd->reliable == !pass &&
			    rank < j->req.program.nodes_max)
				nd->rank = rank++;
		}
	p->group_n = rank;
	if (p->torchrun) {
		p->rdzv_port = free_port();
		p->rdzv_host = 0;
		for (size_t i = 0; i < p->n; i++)
			if (p->nodes[i].rank == 0)
				p->rdzv_host = p->nodes[i].id;
	}
	save_state(j);
	if (p->elastic)
		job_eventf(j, "program", "start %" PRId64 " (%s): %s "
			   "forms the group of %d to %d nodes, %d up now%s",
			   p->start, why, p->torchrun ? "torchrun" :
			   "the program", j->req.program.nodes_min,
			   j->req.program.nodes_max, rank, p->latest.seq ?
			   ", from the latest checkpoint" : "");
	else
		job_eventf(j, "program", "start %" PRId64 " on %d node%s "
			   "(%s)%s", p->start, rank, rank == 1 ? "" : "s", why,
			   p->latest.seq ? ", from the latest checkpoint" : "");
}

/* Whether no node up still runs its program (a re-form's barrier). */
static bool all_stopped(struct job *j)
{
	const struct program *p = pr(j);

	for (size_t i = 0; i < p->n; i++)
		if (node_up(&p->nodes[i]) && p->nodes[i].start)
			return false;
	return true;
}

/* Whether the group must re-form, and why. */
static const char *want_start(struct job *j)
{
	struct program *p = pr(j);
	int up = 0, in = 0, lost = 0, reliable = 0;

	for (size_t i = 0; i < p->n; i++) {
		const struct pnode *nd = &p->nodes[i];

		up += node_up(nd);
		reliable += node_up(nd) && nd->reliable;
		in += node_up(nd) && nd->rank >= 0;
		lost += nd->rank >= 0 && !node_up(nd);
	}
	if (up < j->req.program.nodes_min || p->done || p->why[0])
		return NULL;
	/* torchrun's rendezvous is hosted by a reliable node: a job that
	 * has some waits for one (a spot host would take it down) */
	if (p->torchrun && !reliable && j->req.spec.reliable.count > 0 &&
	    !node_up_id(j, p->rdzv_host))
		return NULL;
	if (!p->start)
		return "the first";
	if (p->elastic && p->owed[0])
		return p->owed;
	/* torchrun re-forms; a new host, a new start (a program elastic
	 * by itself has no host of ours) */
	if (p->elastic)
		return !p->torchrun || node_up_id(j, p->rdzv_host) ? NULL :
		       "the rendezvous' node left";
	if (px_now_mono_us() - p->changed_us < SETTLE_US)
		return NULL;
	if (lost)
		return "a node left";
	if (in < up && p->group_n < j->req.program.nodes_max)
		return "a node joined";
	return NULL;
}

static void put_env(json_t *e, const char *k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void put_env(json_t *e, const char *k, const char *fmt, ...)
{
	char v[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(v, sizeof v, fmt, ap);
	va_end(ap);
	json_object_set_new(e, k, json_string(v));
}

/* The node of rank r in the current start, NULL. */
static const struct pnode *rank_node(const struct program *p, int r)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->nodes[i].rank == r && node_up(&p->nodes[i]))
			return &p->nodes[i];
	return NULL;
}

static const char *node_addr(const struct pnode *nd)
{
	return nd->addr[0] ? nd->addr : "127.0.0.1";
}

/* What node nd runs now: {"start", "env"}, or null (it waits). */
static json_t *run_of(struct job *j, const struct pnode *nd)
{
	struct program *p = pr(j);
	const struct job_program *g = &j->req.program;
	json_t *e = json_object();
	char addrs[4096] = "";
	size_t off = 0;

	if (!p->start || !node_up(nd) || (!p->elastic && nd->rank < 0) ||
	    p->reforming)
		return json_null();
	for (int r = 0; r < p->group_n; r++) {
		const struct pnode *m = rank_node(p, r);

		off += (size_t)snprintf(addrs + off, off < sizeof addrs ?
					sizeof addrs - off : 0, "%s%s",
					r ? "," : "", m ? node_addr(m) : "");
	}
	put_env(e, PROG_ENV_RESTART, "%" PRId64, p->start - 1);
	put_env(e, PROG_ENV_RELIABLE, "%d", nd->reliable);
	if (!p->elastic) {
		/* fixed for one start; torchrun's group has its own ranks */
		put_env(e, PROG_ENV_NODE_RANK, "%d", nd->rank);
		put_env(e, PROG_ENV_NUM_NODES, "%d", p->group_n);
		put_env(e, PROG_ENV_NODE_ADDRS, "%s", addrs);
		put_env(e, "MASTER_ADDR", "%s", rank_node(p, 0) ?
			node_addr(rank_node(p, 0)) : "127.0.0.1");
		put_env(e, "MASTER_PORT", "%d", rank_node(p, 0) &&
			rank_node(p, 0)->port ? rank_node(p, 0)->port :
			p->master_port);
	}
	if (p->torchrun) {
		/* elastic: min:max; fixed: this start's nodes, a rendezvous
		 * of its own, no restart of torchrun's (a change is ours) */
		if (p->elastic)
			put_env(e, "PET_NNODES", "%d:%d", g->nodes_min,
				g->nodes_max);
		else
			put_env(e, "PET_NNODES", "%d", p->group_n);
		put_env(e, "PET_NPROC_PER_NODE", "%d", g->procs_per_node);
		put_env(e, "PET_RDZV_BACKEND", "c10d");
		{
			const struct pnode *h = node_of(j, p->rdzv_host, false);

			/* the host's second port (its first: MASTER_PORT) */
			put_env(e, "PET_RDZV_ENDPOINT", "%s:%d", h ?
				node_addr(h) : "127.0.0.1", h && h->port ?
				h->port + 1 : p->rdzv_port);
		}
		put_env(e, "PET_RDZV_ID", "proteus-%" PRId64 "-%" PRId64,
			j->id, p->start);
		/* the store on the host's node only; the group closes 2 s
		 * after its min is there (torch's default is 30) */
		put_env(e, "PET_RDZV_CONF", "is_host=%d,last_call_timeout=2",
			nd->id == p->rdzv_host);
		put_env(e, "PET_MAX_RESTARTS", "%d", p->elastic ?
			TORCHRUN_RESTARTS : 0);
		/* Debian's torch 1.13 on Python 3.11: Std.from_str knows
		 * only 1 and 2 (its default "0" crashes torchrun); stderr
		 * redirected and teed keeps both streams in the node's log,
		 * each stderr line after "[default<rank>]:" */
		put_env(e, "PET_REDIRECTS", "2");
		put_env(e, "PET_TEE", "2");
	}
	return json_pack("{s:I, s:o}", "start", (json_int_t)p->start, "env", e);
}

/* ---- what the nodes say ---- */

static void take_line(struct job *j, const struct pnode *nd, json_t *l)
{
	struct program *p = pr(j);
	json_t *s = json_object_get(l, "samples");
	json_t *loss = json_object_get(l, "loss");
	json_t *m = json_object_get(l, "metrics");

	if (json_is_number(s) && isfinite(json_number_value(s)) &&
	    json_number_value(s) >= 0 && json_number_value(s) < 9e18 &&
	    nd->start == p->start) {
		uint64_t now = px_now_mono_us();
		uint64_t from = p->line_us ? p->line_us : p->start_us;

		/* the group trains (a resumed one may count below the
		 * most it said: work a loss took); the gap from the start
		 * to its first line is the program's own start */
		if (from && p->left_us < from && now - from > p->line_gap_us)
			p->line_gap_us = now - from;
		p->line_us = now;
	}
	if (json_is_number(s) && isfinite(json_number_value(s)) &&
	    json_number_value(s) >= 0 && json_number_value(s) < 9e18 &&
	    (int64_t)json_number_value(s) > p->samples) {
		p->samples = (int64_t)json_number_value(s);
		p->quiet_us = px_now_mono_us();
		p->alive++;
	}
	if (json_is_number(loss) && isfinite(json_number_value(loss)))
		p->loss = json_number_value(loss);
	if (json_is_object(m) && json_object_size(m) <= 32) {
		json_decref(p->metrics);
		p->metrics = json_incref(m);
	}
	/* {"done": true}: the work is over, as an exit 0 would say, without
	 * torchrun's exit barrier (up to 5 minutes for a peer an eviction
	 * took at the end); from rank 0 of a fixed group, or any node of
	 * an elastic one */
	if (json_is_true(json_object_get(l, "done")) && !p->done &&
	    !p->why[0] && p->start && nd->start == p->start &&
	    (p->elastic || nd->rank == 0)) {
		p->done = true;
		job_eventf(j, "program", "the program said it is done on "
			   "instance %" PRIu64 " (start %" PRId64 ")", nd->id,
			   p->start);
	}
}

/* The end of start S on nd: done, a failure, or nothing (superseded,
 * told to leave, stopped by us). */
static void take_exit(struct job *j, struct pnode *nd, json_t *x)
{
	struct program *p = pr(j);
	int64_t s = json_integer_value(json_object_get(x, "start"));
	int code = (int)json_integer_value(json_object_get(x, "code"));
	int sig = (int)json_integer_value(json_object_get(x, "signal"));
	const char *tail = json_string_value(json_object_get(x, "tail"));
	char safe[PX_TERM_SAFE_LEN(600)], last[600];
	size_t tl = tail ? strlen(tail) : 0;

	if (s != p->start || p->done || p->why[0])
		return;
	if (code == 0 && !sig && (p->elastic || nd->rank == 0)) {
		p->done = true;
		job_eventf(j, "program", "the program exited 0 on instance %"
			   PRIu64 " (start %" PRId64 "): done", nd->id, s);
		return;
	}
	if (code == 0 && !sig)
		return;
	if (nd->leaving || json_is_true(json_object_get(x, "stopped")))
		return;  /* a preemption or our stop: never a failure */
	/* the last lines of its stderr */
	snprintf(last, sizeof last, "%s", tl > 500 ? tail + tl - 500 : tail ?
		 tail : "");
	px_term_safe(last, safe, sizeof safe);
	if (p->elastic && p->left_us > p->start_us) {
		/* torchrun's agent gave up on a group a peer left (its
		 * barrier or rendezvous timed out): not the program's
		 * failure, and no restart of max_restarts_on_errors; one
		 * such new start for each start a peer left */
		job_eventf(j, "program", "instance %" PRIu64 ": %s exited "
			   "(%s %d) after a peer of start %" PRId64 " left; "
			   "the group starts anew: %s", nd->id, p->torchrun ?
			   "torchrun" : "the program", sig ? "signal" : "exit",
			   sig ? sig : code, s, safe);
		snprintf(p->owed, sizeof p->owed, "it gave up after a peer "
			 "left");
		return;
	}
	if (p->restarts < j->req.program.max_restarts_on_errors) {
		p->restarts++;
		job_eventf(j, "error", "the program failed on instance %" PRIu64
			   " (%s %d); restart %" PRId64 " of %d from the "
			   "latest checkpoint: %s", nd->id, sig ? "signal" :
			   "exit", sig ? sig : code, p->restarts,
			   j->req.program.max_restarts_on_errors, safe);
		new_start(j, "after a failure");
		return;
	}
	snprintf(p->why, sizeof p->why, "the program failed on instance %"
		 PRIu64 " (%s %d) after %" PRId64 " restart%s: %s", nd->id,
		 sig ? "signal" : "exit", sig ? sig : code, p->restarts,
		 p->restarts == 1 ? "" : "s", safe);
}

/* A remote node's output (its beat's "out", text) appended to its log,
 * DIR/ID/logs/iN.log, rotated to .1 past PROG_LOG_ROTATE as the local
 * agents do (proteusctl logs reads them). */
static void log_append(struct job *j, struct pnode *nd, json_t *out,
		       int64_t lost)
{
	char path[JOB_PATH_MAX + 48], old[JOB_PATH_MAX + 56], note[80];
	const char *t = json_string_value(out);
	size_t n = t ? json_string_length(out) : 0;
	int fd;

	if (!n && lost <= 0)
		return;
	snprintf(path, sizeof path, "%s/i%" PRIu64 ".log", pr(j)->logs,
		 nd->id);
	if (nd->log_size + (off_t)n > (off_t)PROG_LOG_ROTATE) {
		snprintf(old, sizeof old, "%s.1", path);
		(void)rename(path, old);
		nd->log_size = 0;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0)
		return;
	if (lost > 0) {
		int k = snprintf(note, sizeof note, "[%" PRId64 " bytes of "
				 "output lost]\n", lost);

		if (write(fd, note, (size_t)k) == k)
			nd->log_size += k;
	}
	if (n && write(fd, t, n) == (ssize_t)n)
		nd->log_size += (off_t)n;
	close(fd);
}

/* The node read its instance's own notice (ec2: the metadata): its end
 * is a leave, which the world hears now. */
static void node_read_notice(struct job *j, struct pnode *nd, int64_t at_us)
{
	if (nd->leaving || at_us <= 0)
		return;
	nd->leaving = true;
	member_left(j, nd);
	if (j->run.w && j->wops->node_warned)
		j->wops->node_warned(j->run.w, nd->id, at_us, false);
}

static json_t *on_beat(struct job *j, struct pnode *nd, json_t *q)
{
	struct program *p = pr(j);
	json_t *l, *x = json_object_get(q, "exit"), *r;
	size_t i;

	log_append(j, nd, json_object_get(q, "out"),
		   json_integer_value(json_object_get(q, "out_lost")));
	node_read_notice(j, nd, json_integer_value(json_object_get(q,
							"notice_us")));
	nd->start = json_integer_value(json_object_get(q, "start"));
	json_array_foreach(json_object_get(q, "lines"), i, l)
		if (i < PCHAN_LINES_MAX && json_is_object(l))
			take_line(j, nd, l);
	if (json_is_object(x))
		take_exit(j, nd, x);
	r = json_pack("{s:o, s:b}", "run", run_of(j, nd), "stop",
		      p->done || p->why[0]);
	if (p->latest.seq)
		json_object_set_new(r, "ckpt", json_pack(
			"{s:I, s:s, s:s, s:I}", "seq", (json_int_t)p->latest.seq,
			"name", p->latest.name, "sha256", p->latest.sha256,
			"size", (json_int_t)p->latest.size));
	return r;
}

static json_t *on_hello(struct job *j, struct pnode *nd, json_t *q)
{
	struct program *p = pr(j);
	const struct job_program *g = &j->req.program;
	json_t *cmd = json_array(), *env = json_array(), *gr = json_array();
	const char *s = g->cmd;
	struct px_error err;

	for (int i = 0; i < g->argc; i++, s += strlen(s) + 1)
		json_array_append_new(cmd, json_string(s));
	s = g->env;
	for (int i = 0; i < g->nenv; i++, s += strlen(s) + 1)
		json_array_append_new(env, json_string(s));
	for (int i = 0; i < p->ngroups; i++)
		json_array_append_new(gr, json_integer(p->groups[i]));
	const char *addr = json_string_value(json_object_get(q, "addr"));
	json_t *r;

	if (!nd->hello) {
		nd->hello = true;
		membership_changed(j);
		if (p->start)         /* after the job began: a join */
			job_progress_join(j);
		if (j->run.w)
			(void)j->wops->ready(j->run.w, nd->id, &err);
	}
	/* an address of [A-Za-z0-9.:-] only: it goes into the programs'
	 * environment */
	if (addr && strlen(addr) < sizeof nd->addr && addr[0] &&
	    !addr[strspn(addr, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
			 "QRSTUVWXYZ0123456789.:-")])
		snprintf(nd->addr, sizeof nd->addr, "%s", addr);
	nd->port = (int)json_integer_value(json_object_get(q, "port"));
	if (nd->port < 1 || nd->port > 65534)
		nd->port = 0;
	r = json_pack("{s:o, s:o, s:I, s:I, s:I, s:o, s:i, s:I, s:I, s:s}",
		      "command", cmd, "env", env, "job", (json_int_t)j->id,
		      "uid", (json_int_t)p->uid, "gid", (json_int_t)p->gid,
		      "groups", gr, "grace_s", g->grace_seconds,
		      /* a re-form's grace: grace_seconds of the world's clock
		       * (the local world's is accelerated) */
		      "stop_ms", (json_int_t)(g->grace_seconds * 1000.0 /
				(j->mk.speedup >= 1 ? j->mk.speedup : 1)),
		      "ckpt_max", (json_int_t)(g->checkpoint_max_mb << 20),
		      "code", nd->remote ? "" : p->code);
	/* an instance's user is its image's; code by URL is fetched and
	 * checked by each node */
	if (r && nd->remote)
		json_object_set_new(r, "user", json_string(PROG_REMOTE_USER));
	/* the tasks the program's user may have (RLIMIT_NPROC: its
	 * processes and threads, counted for the user host-wide) */
	if (r)
		json_object_set_new(r, "nproc_max", json_integer(
			(json_int_t)PROG_TASKS_A_PROC *
			(g->procs_per_node + 1)));
	if (r && data_is_url(g->code)) {
		json_object_set_new(r, "code_url", json_string(g->code));
		json_object_set_new(r, "code_sha256",
				    json_string(g->code_sha256));
	}
	return r;
}

static json_t *answer(struct job *j, struct pnode *nd, json_t *q)
{
	const char *op = json_string_value(json_object_get(q, "op"));

	nd->seen_us = px_now_mono_us();
	if (op && !strcmp(op, "hello"))
		return on_hello(j, nd, q);
	if (!nd->hello)
		return json_pack("{s:s}", "error", "hello first");
	if (op && !strcmp(op, "beat"))
		return on_beat(j, nd, q);
	if (op && !strcmp(op, "ckpt_put"))
		return on_put(j, nd, q);
	if (op && !strcmp(op, "ckpt_get"))
		return on_get(j, q);
	return json_pack("{s:s}", "error", "unknown op");
}

/* One request off the hub, answered. */
static bool hub_one(struct job *j)
{
	struct program *p = pr(j);
	void *buf = NULL;
	int n = nn_recv(p->sock, &buf, NN_MSG, NN_DONTWAIT);
	struct px_error err = {0};
	enum pchan_dir dir;
	uint64_t sess, ctr, id;
	json_t *q = NULL, *r;
	struct pnode *nd;
	uint8_t *out;
	size_t len;

	if (n < 0)
		return false;
	if (pchan_open(&p->key, buf, (size_t)n, &dir, &sess, &ctr, &q,
		       &err) != PX_OK || dir != PCHAN_REQUEST) {
		nn_freemsg(buf);
		json_decref(q);
		/* a REP must answer to take the next: a sealed refusal no
		 * one but the key's holder reads */
		r = json_pack("{s:s}", "error", "refused");
		sess = ctr = 0;
		goto reply;
	}
	nn_freemsg(buf);
	id = (uint64_t)json_integer_value(json_object_get(q, "inst"));
	nd = j->run.w ? node_of(j, id, true) : NULL;
	if (!nd || (nd->session == sess && ctr <= nd->counter)) {
		r = json_pack("{s:s}", "error", nd ? "a replayed request" :
			      "no such instance");
	} else {
		nd->session = sess;
		nd->counter = ctr;
		r = answer(j, nd, q);
	}
	json_decref(q);
reply:
	if (pchan_seal(&p->key, PCHAN_REPLY, sess, ctr, r, &out, &len, &err) ==
	    PX_OK) {
		if (nn_send(p->sock, out, len, NN_DONTWAIT) < 0)
			log_warn("job %" PRId64 ": the program's hub could not "
				 "answer: %s", j->id, nn_strerror(nn_errno()));
		free(out);
	}
	json_decref(r);
	return true;
}

static void on_hub(struct loop *l, int fd, int mask, void *ctx)
{
	struct job *j = ctx;

	(void)l;
	(void)fd;
	(void)mask;
	for (int k = 0; k < 64 && hub_one(j); k++)
		;
}

/* ---- the report ---- */

static void report(struct job *j)
{
	struct program *p = pr(j);
	uint64_t now = px_now_mono_us();
	int running = 0;
	json_t *acc = json_object_get(p->metrics, "test_accuracy");
	struct job_report r = {
		.acc = NAN, .loss = p->loss, .stage = 1,
		.total_clock = 0,
	};

	if (!acc)
		acc = json_object_get(p->metrics, "accuracy");
	if (json_is_number(acc))
		r.acc = json_number_value(acc);
	for (size_t i = 0; i < p->n; i++)
		running += node_up(&p->nodes[i]) && p->start &&
			   p->nodes[i].start == p->start;
	if (!p->sps_us || now - p->sps_us > SPS_WINDOW_US) {
		if (p->sps_us && p->samples >= p->sps_samples)
			p->sps = (double)(p->samples - p->sps_samples) /
				 ((double)(now - p->sps_us) / 1e6);
		p->sps_us = now;
		p->sps_samples = p->samples;
	}
	/* a program that reports nothing is alive while it runs; one that
	 * does, for PROG_QUIET_US after its last report too (torchrun's
	 * group re-forming, a long evaluation): the daemon's stall rule
	 * counts from then */
	if (running && (!p->samples || now - p->quiet_us < PROG_QUIET_US))
		p->alive++;       /* (a mark that only grows) */
	r.clock = p->alive;
	r.sps = p->sps;
	r.workers = running;
	r.instances = running;
	/* the work ends when the program does, not at its count (and its
	 * last checkpoint is in its store in S3) */
	r.frac = j->req.program.samples > 0 ?
		 fmin(program_over(p) ? 1.0 : 0.999, (double)p->samples /
		      (double)j->req.program.samples) : 0;
	job_progress_take(j, &r);
}

/* ---- the workload's ops ---- */

/* Elastic: no progress line program.reform_seconds after a peer of the
 * start left, while enough nodes were up to form the group (and thrice
 * the longest gap between lines before): torchrun's re-form is stuck (a
 * barrier on a key the lost peer never writes waits 300 s, then exits 1;
 * a silent peer holds gloo to its timeout); the daemon starts it anew. */
static bool reform_stuck(struct job *j, uint64_t now)
{
	struct program *p = pr(j);
	int up = 0;
	uint64_t from;

	for (size_t i = 0; i < p->n; i++)
		up += node_up(&p->nodes[i]);
	if (up < j->req.program.nodes_min)
		p->formable_us = 0;
	else if (!p->formable_us)
		p->formable_us = now;
	if (!p->elastic || !p->start || p->left_us <= p->start_us ||
	    p->owed[0] || p->line_us > p->left_us || !p->formable_us)
		return false;
	from = p->formable_us > p->left_us ? p->formable_us : p->left_us;
	return now - from > (uint64_t)j->req.program.reform_seconds * 1000000 &&
	       now - from > 3 * p->line_gap_us;
}

static void program_poll(struct job *j)
{
	struct program *p = pr(j);
	uint64_t now;
	const char *why;

	on_hub(NULL, -1, 0, j);
	s3_poll(j);
	now = px_now_mono_us();   /* after the answers, which time the nodes */
	for (size_t i = 0; i < p->n; i++) {
		struct pnode *nd = &p->nodes[i];

		if (nd->hello && !nd->gone && now > nd->seen_us &&
		    now - nd->seen_us > PROG_HB_LOST_US) {
			nd->gone = true;
			member_left(j, nd);
			if (!nd->leaving)  /* a leave is no loss */
				job_progress_loss(j);
			if (!nd->leaving)
				job_eventf(j, "loss", "instance %" PRIu64 ": its node "
					   "agent has been silent for %d s",
					   nd->id,
					   (int)(PROG_HB_LOST_US /
						 1000000));
		}
	}
	if (reform_stuck(j, now)) {
		job_eventf(j, "program", "start %" PRId64 ": no progress %d s "
			   "after a peer left; the group starts anew",
			   p->start, (int)((now - p->left_us) / 1000000));
		snprintf(p->owed, sizeof p->owed, "no progress after a peer "
			 "left");
	}
	if (p->s3_restore) {
		/* the first start waits for the store in S3 */
	} else if (p->reforming) {
		if (all_stopped(j) || now - p->reform_us > REFORM_WAIT_US) {
			p->reforming = false;
			new_start(j, p->reform_why);
		}
	} else if ((why = want_start(j))) {
		/* the first start, or an elastic one, at once; a fixed group
		 * once every node's program of the last start has stopped
		 * (a node that starts the next one alone waits for peers
		 * still stopping, and torchrun's rendezvous times out) */
		if (!p->start || p->elastic) {
			new_start(j, why);
		} else {
			p->reforming = true;
			p->reform_us = now;
			snprintf(p->reform_why, sizeof p->reform_why, "%s", why);
			job_eventf(j, "program", "start %" PRId64 " stops: the "
				   "group re-forms (%s)", p->start, why);
		}
	}
	if (j->req.program.stall_seconds > 0 && p->start && p->quiet_us &&
	    now - p->quiet_us > (uint64_t)j->req.program.stall_seconds *
				1000000 && !p->why[0])
		snprintf(p->why, sizeof p->why, "stalled: no progress and no "
			 "checkpoint for %d s (program.stall_seconds)",
			 j->req.program.stall_seconds);
	if (p->start && !p->quiet_us)
		p->quiet_us = now;
	report(j);
}

static enum workload_end program_check(struct job *j, char *why, size_t len)
{
	const struct program *p = pr(j);

	if (p->why[0]) {
		snprintf(why, len, "%s", p->why);
		return WORKLOAD_FAILED;
	}
	return program_over(p) ? WORKLOAD_DONE : WORKLOAD_RUNS;
}

static bool program_restart_stalled(struct job *j)
{
	(void)j;
	return false;
}

static void program_stage(struct job *j, int stage)
{
	(void)j;
	(void)stage;
}

/* An instance runs the node agent, which asks the hub what to run. */
static enum px_err node_command(void *ctx, const struct world_req *q,
				const struct world_place *pl,
				struct world_node *ret, struct px_error *err)
{
	struct job *j = ctx;
	struct program *p = pr(j);
	struct pnode *nd = node_of(j, q->id, true);
	char inst[24], log[JOB_PATH_MAX + 48];
	/* on an instance: its own trainer, enrolled for the key (the world
	 * adds what it needs), its output to the daemon over the channel */
	const char *argv[] = { pl->remote ? j->js->s.cfg->ec2_node_trainer :
			       j->js->s.trainer, "program-node", "--hub",
			       pl->coord, "--inst", inst, "--listen",
			       pl->listen, pl->remote ? NULL : "--log", log,
			       NULL };
	size_t k;

	if (!nd)
		return px_errorf(err, PX_ETOOBIG, "more than %d instances",
				 PNODES_MAX);
	nd->reliable = q->reliable;
	nd->remote = pl->remote;
	snprintf(inst, sizeof inst, "%" PRIu64, q->id);
	snprintf(log, sizeof log, "%s/i%" PRIu64 ".log", p->logs, q->id);
	ret->argv = calloc(sizeof argv / sizeof argv[0], sizeof *ret->argv);
	ret->env = calloc(2, sizeof *ret->env);
	for (k = 0; ret->argv && argv[k]; k++)
		if (!(ret->argv[k] = strdup(argv[k])))
			break;
	if (ret->env && !pl->remote)
		ret->env[0] = strdup(p->keyenv);
	if (!ret->argv || argv[k] || !ret->env ||
	    (!pl->remote && !ret->env[0])) {
		for (size_t i = 0; ret->argv && ret->argv[i]; i++)
			free(ret->argv[i]);
		free(ret->argv);
		free(ret->env ? ret->env[0] : NULL);
		free(ret->env);
		ret->argv = ret->env = NULL;
		return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	return PX_OK;
}

static void node_notice(void *ctx, uint64_t id, int64_t gone_ms,
			enum world_leave why)
{
	struct job *j = ctx;
	struct pnode *nd = node_of(j, id, false);

	(void)gone_ms;
	(void)why;
	if (nd && !nd->leaving) {
		nd->leaving = true;
		member_left(j, nd);
	}
}

static void node_ended(void *ctx, uint64_t id)
{
	struct job *j = ctx;
	struct pnode *nd = node_of(j, id, false);

	if (nd && !nd->gone) {
		nd->gone = true;
		up_drop(j, nd);
		member_left(j, nd);
		if (nd->hello && !nd->leaving)  /* no notice: a loss */
			job_progress_loss(j);
	}
}

static void node_start_failed(void *ctx, uint64_t id, const char *how)
{
	struct job *j = ctx;

	job_eventf(j, "node_failed", "instance %" PRIu64 ": its node agent "
		   "failed to start: %s", id, how);
	node_ended(ctx, id);
}

static void program_hooks(struct job *j, struct world_hooks *h)
{
	h->command = node_command;
	h->notice = node_notice;
	h->ended = node_ended;
	h->start_failed = node_start_failed;
	h->ctx = j;
	h->ready_on_report = true;
	h->log_path = pr(j)->log;
	h->spawn_env = PX_SPAWN_ENV_TRAINER;
}

/* The submitter the program runs as (jobs_inputs.c kept it). */
static enum px_err load_owner(struct job *j, struct px_error *err)
{
	struct program *p = pr(j);
	char path[JOB_PATH_MAX + 32];
	json_t *o, *g;
	size_t i;

	snprintf(path, sizeof path, "%s/in/program/owner", j->run.dir);
	o = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_integer(json_object_get(o, "uid")) ||
	    !json_is_integer(json_object_get(o, "gid"))) {
		json_decref(o);
		return px_errorf(err, PX_ENOENT, "%s: the job's owner is not "
				 "known (%s): submit it again", j->src, path);
	}
	p->uid = (uint32_t)json_integer_value(json_object_get(o, "uid"));
	p->gid = (uint32_t)json_integer_value(json_object_get(o, "gid"));
	g = json_object_get(o, "groups");
	p->ngroups = 0;
	json_array_foreach(g, i, g)
		if (p->ngroups < 64 && json_is_integer(g))
			p->groups[p->ngroups++] = (uint32_t)
				json_integer_value(g);
	json_decref(o);
	snprintf(p->code, sizeof p->code, "%s/in/program/code.tar.gz",
		 j->run.dir);
	if (access(p->code, R_OK) != 0)
		p->code[0] = 0;
	return PX_OK;
}

static enum px_err program_prepare(struct job *j, struct px_error *err)
{
	struct program *p = j->wl;

	if (!p) {
		if (!(p = calloc(1, sizeof *p)))
			return px_errorf(err, PX_ENOMEM, "out of memory");
		p->sock = p->fd = -1;
		p->loss = NAN;
		j->wl = p;
	}
	snprintf(p->store, sizeof p->store, "%s/ckpt", j->run.dir);
	snprintf(p->logs, sizeof p->logs, "%s/logs", j->run.dir);
	snprintf(p->log, sizeof p->log, "%s/program.log", j->run.dir);
	if ((mkdir(p->store, 0700) != 0 && errno != EEXIST) ||
	    (mkdir(p->logs, 0700) != 0 && errno != EEXIST))
		return px_errorf(err, PX_ESYS | errno, "%s: %s", p->store,
				 strerror(errno));
	if (pchan_key_from_job(j->run.key, sizeof j->run.key, &p->key, err) !=
	    PX_OK)
		return err->code;
	job_key_env(j, p->keyenv);
	/* torchrun's own group, unless the spec says fixed (each change
	 * a new start of every node: what SkyPilot's managed jobs do) */
	p->torchrun = is_torchrun(j);
	p->elastic = !strcmp(j->req.program.membership, "elastic") ||
		     (!strcmp(j->req.program.membership, "auto") &&
		      p->torchrun);
	load_latest(j);
	load_state(j);
	/* an S3 store: what it holds (program_start: what it restores) */
	p->s3 = !strncmp(j->req.program.checkpoint_store, "s3://", 5);
	if (p->s3 && p->s3_pid <= 0)
		s3_load(j);
	job_progress_foresee(j, 0);
	return load_owner(j, err);
}

static int program_node_ports(const struct job *j)
{
	(void)j;
	return 2;
}

/* rm -rf --one-file-system -- path (it follows no link), waited for. */
static void rm_tree(const char *path)
{
	char *const argv[] = { "rm", "-rf", "--one-file-system", "--",
			       (char *)path, NULL };
	posix_spawn_file_actions_t fa;
	char **envp = px_spawn_env(NULL, 0);
	pid_t pid;

	if (!envp)
		return;
	posix_spawn_file_actions_init(&fa);
	if (px_spawn(&pid, "/bin/rm", &fa, argv, envp) == 0)
		(void)waitpid(pid, NULL, 0);
	posix_spawn_file_actions_destroy(&fa);
	free(envp);
}

/* What agents of this job left on this host ($TMPDIR/proteus-TAG-iN-*,
 * the agent's own, root's and 0711: a folder of that name a user made
 * is not one), when none of them runs (a new life of the local world,
 * the job's end): an agent the world killed before it could remove its
 * folder leaves it. */
static void sweep_node_dirs(struct job *j)
{
	const char *base = getenv("TMPDIR");
	char prefix[48], path[PATH_MAX], tag[PCHAN_TAG_HEX];
	DIR *d;
	struct dirent *e;

	if (!j->wops || !j->wops->on_this_host ||
	    pchan_folder_tag(j->run.key, sizeof j->run.key, tag, NULL) != PX_OK)
		return;
	base = base && base[0] ? base : "/tmp";
	snprintf(prefix, sizeof prefix, "proteus-%s-i", tag);
	if (!(d = opendir(base)))
		return;
	while ((e = readdir(d))) {
		struct stat st;

		if (strncmp(e->d_name, prefix, strlen(prefix)) ||
		    snprintf(path, sizeof path, "%s/%s", base, e->d_name) >=
		    (int)sizeof path || lstat(path, &st) != 0 ||
		    !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
		    (st.st_mode & 07777) != 0711)
			continue;
		rm_tree(path);
	}
	closedir(d);
}

static enum px_err program_start(struct job *j, const char *coord,
				 bool resume, struct px_error *err)
{
	struct program *p = pr(j);
	char path[JOB_PATH_MAX + 16];
	size_t fl = sizeof p->fd;

	sweep_node_dirs(j);
	/* a job that resumes (a new life of the daemon, a new head node)
	 * with no checkpoint here: its store in S3's LATEST first.  Not a
	 * new job's, whose id another database may have used there. */
	p->s3_restore = p->s3 && resume && !p->latest.seq && p->s3_pid <= 0;
	/* a new life: its nodes say hello anew (ec2's, which outlived the
	 * daemon, go on with the start they run) */
	p->n = 0;
	p->done = false;
	/* the hub listens where the world puts a job's driver, which its
	 * nodes are told (world_place.coord) */
	snprintf(p->hub, sizeof p->hub, "%s", coord);
	if (!strncmp(coord, "ipc://", 6)) {
		snprintf(path, sizeof path, "%s", coord + 6);
		(void)unlink(path);
	}
	p->sock = nn_socket(AF_SP, NN_REP);
	if (p->sock < 0 || nn_bind(p->sock, p->hub) < 0 ||
	    nn_getsockopt(p->sock, NN_SOL_SOCKET, NN_RCVFD, &p->fd, &fl) < 0 ||
	    loop_fd_add(j->js->s.loop, p->fd, LOOP_READABLE, on_hub, j) !=
		    PX_OK)
		return px_errorf(err, PX_EIO, "the program's hub (%s): %s",
				 p->hub, nn_strerror(nn_errno()));
	{
		int max = (int)PCHAN_MSG_MAX;

		(void)nn_setsockopt(p->sock, NN_SOL_SOCKET, NN_RCVMAXSIZE,
				    &max, sizeof max);
	}
	return PX_OK;
}

static void program_stop(struct job *j)
{
	struct program *p = pr(j);

	if (!p)
		return;
	s3_stop(j);
	for (size_t i = 0; i < p->n; i++)
		up_drop(j, &p->nodes[i]);
	if (p->fd >= 0)
		loop_fd_del(j->js->s.loop, p->fd);
	p->fd = -1;
	if (p->sock >= 0)
		nn_close(p->sock);
	p->sock = -1;
}

static void program_free(struct job *j)
{
	if (j->wl)
		json_decref(pr(j)->metrics);
	free(j->wl);
	j->wl = NULL;
}

/* status: where the checkpoints are kept; for S3, the newest there,
 * what the child does now and the last run's failure. */
static json_t *store_view(const struct job *j)
{
	const struct program *p = pr(j);

	if (!p->s3)
		return json_pack("{s:s}", "where", "head");
	return json_pack("{s:s, s:s, s:o, s:s, s:I, s:o}", "where", "s3",
			 "url", j->req.program.checkpoint_store,
			 "mirrored_seq", p->s3_mirrored ?
			 json_integer(p->s3_mirrored) : json_null(),
			 "state", p->s3_pid > 0 ? (p->s3_get ? "restoring" :
			 "mirroring") : p->s3_restore ? "restoring" :
			 s3_pending(p) ? "waiting" : "idle",
			 "failures", (json_int_t)p->s3_failures,
			 "last_error", p->s3_err[0] ? json_string(p->s3_err) :
			 json_null());
}

/* status: the program's own figures. */
static json_t *program_view(const struct job *j)
{
	const struct program *p = pr(j);
	json_t *nodes = json_array();

	for (size_t i = 0; i < p->n; i++) {
		const struct pnode *nd = &p->nodes[i];

		if (nd->gone)
			continue;
		json_array_append_new(nodes, json_pack(
			"{s:I, s:b, s:s, s:I, s:o}", "instance",
			(json_int_t)nd->id, "reliable", nd->reliable, "state",
			nd->leaving ? "leaving" : !nd->hello ? "starting" :
			nd->start == p->start && p->start ? "running" :
			"waiting", "start", (json_int_t)nd->start, "rank",
			nd->rank >= 0 && !p->elastic ? json_integer(nd->rank) :
			json_null()));
	}
	return json_pack("{s:s, s:I, s:I, s:o, s:O*, s:I, s:I, s:o, s:o, "
			 "s:o}",
			 "membership", p->elastic ? "elastic" : "fixed",
			 "samples", (json_int_t)p->samples,
			 "samples_total", (json_int_t)j->req.program.samples,
			 "loss", isfinite(p->loss) ? json_real(p->loss) :
			 json_null(), "metrics", p->metrics,
			 "start", (json_int_t)p->start,
			 "restarts_on_errors", (json_int_t)p->restarts,
			 "checkpoint", p->latest.seq ? json_pack(
				 "{s:I, s:s, s:I}", "seq",
				 (json_int_t)p->latest.seq, "name",
				 p->latest.name, "bytes",
				 (json_int_t)p->latest.size) : json_null(),
			 "store", store_view(j), "nodes", nodes);
}

const struct workload_ops workload_program = {
	.name = "program",
	.product = "ckpt/LATEST",
	.release_ms = 5000,
	.prepare = program_prepare,
	.node_ports = program_node_ports,
	.hooks = program_hooks,
	.start = program_start,
	.poll = program_poll,
	.stage = program_stage,
	.check = program_check,
	.restart_stalled = program_restart_stalled,
	.stop = program_stop,
	.free = program_free,
	.view = program_view,
	.released = sweep_node_dirs,
};
