/* workload_trainer.c -- the built-in elastic trainer as a job's workload
 * (workload.h; docs/jobs.md): the coordinator process, the node each
 * instance runs (the world's command hook) and what it is told, the agent
 * channel (trainer/dist/agent_chan.h: commands out, PROGRESS frames in), and
 * its reports in the job's terms (struct job_report).  Its state is its
 * own (struct trainer, job->wl); the job's parts it only reads. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <openssl/evp.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/log.h"
#include "../trainer/dist/agent_chan.h"
#include "../trainer/io/data_url.h"
#include "../trainer/dist/dist.h"
#include "jobs_int.h"
#include "spawnattr.h"

#define COORD_RESTARTS 3         /* coordinator restarts from checkpoint */
#define TRAINER_FRAC_RUNNING (1.0 - 1e-9) /* the most work a running
					    coordinator's PROGRESS gives */
#define CMD_GIVE_UP_MS 5000      /* a command unanswered this long is dropped */
/* Nodes that fail at start, this many in a row (no node started between
 * them), fail the job: its nodes cannot run here. */
#define START_FAILURES_MAX 3
#define NODE_STRIDE 100          /* node ids of instance i: i*100 + k */
#define MAX_SEEN 1024            /* trainer nodes remembered per job */
/* Commands to the coordinator waiting their turn: a fleet's first
 * decision names every node it starts at once (an EXPECT each: 1002 for
 * 500 instances of a PS and a worker), and its rejections take them back
 * (a LEAVE each), for as many nodes as a coordinator tracks
 * (DIST_MAX_NODES) twice over. */
#define CMDQ_MAX 4096

struct seen_node {
	uint32_t node;
	uint8_t state;           /* enum wire_member_state */
	bool warned;             /* its instance got an eviction notice:
				  * gone is a leave, not a loss */
	bool anew;               /* the coordinator restarted: its next
				  * live report readies its instance again */
};

/* The trainer of one job (job->wl). */
struct trainer {
	char ckpt[JOB_PATH_MAX + 16];    /* <dir>/model.pxc */
	char log[JOB_PATH_MAX + 16];     /* the trainer processes' output */
	char keyenv[JOB_KEYENV_LEN];
	/* PX_TRAIN_DATA=URL, PX_TEST_DATA=URL for this host's roles: a URL
	 * with a query, kept out of their argv ("": none) */
	char data_env[2][JOBREQ_PATH_MAX + 16];
	uint64_t token;          /* the trainer's job id */
	char coord_addr[JOB_PATH_MAX + 8]; /* where the coordinator listens
					    * (the world says) */
	pid_t coord;             /* coordinator pid (its own group), 0 */
	struct agent_chan *ach;  /* PROGRESS in, commands out */
	char agent_ep[JOB_PATH_MAX + 32];
	bool registered;
	/* commands to the coordinator (stage, expect, leave), one at a time
	 * on the REQ socket, in order; the loop never waits for a reply */
	struct wire_command cmdq[CMDQ_MAX];
	size_t cmd_head, cmd_n;
	bool cmd_out;            /* cmdq[cmd_head] sent, no reply yet */
	int cmd_fd;              /* watched for its reply (loop), -1 */
	uint64_t cmd_sent_us;
	struct seen_node seen[MAX_SEEN];
	size_t n_seen;
	int64_t start_failures;  /* in a row, since a node last started */
	bool stall_kill;         /* the coordinator was killed: stalled */
	int64_t stall_restart_clock; /* the clock of the last stall
				      * restart; -1: none */
};

static struct trainer *tr(const struct job *j)
{
	return j->wl;
}

static void cmd_queue(struct job *j, const struct wire_command *c);
static struct seen_node *seen_get(struct job *j, uint32_t node);
static void cmd_unwatch(struct job *j);
static void trainer_stage(struct job *j, int stage);

/* ---- processes ---- */

static void argv_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

/* A data URL with a query (a presigned URL: its signature is a
 * credential) goes to this host's roles in their environment, not in
 * argv, which any local user may read: "env:PX_TRAIN_DATA" stands in
 * argv (proteus-trainer reads it there).  The variable for the role's
 * environment in buf ("" when the URL goes in argv). */
static const char *data_by_env(const char *url, const char *var, char *buf,
			       size_t len)
{
	buf[0] = '\0';
	if (data_is_url(url) && strchr(url, '?'))
		snprintf(buf, len, "%s=%s", var, url);
	return buf;
}

/* argv of a trainer role: the program, the role, the job's options, then
 * extra (NULL-terminated), then the job's own data (trainer.data: --train-
 * data, --test-data, ...) or else --data DIR where the daemon's data_dir
 * is set.  NULL on OOM. */
static char **role_argv(struct job *j, const char *role, const char *node,
			const char *coord, const char *listen,
			const char *const *extra, bool remote)
{
	const struct job_trainer *t = &j->req.trainer;
	char epochs[16], batch[16], lr[32], token[24];
	const char *fixed[] = {
		j->js->s.trainer, role, "--model", t->model, "--epochs",
		epochs, "--batch", batch, "--lr", lr, "--schedule", "cosine", "--threads", "1",
		"--workers", "1", "--ps", "1", "--shards", "4",
		"--job", token, "--node", node,
		"--coord", coord, "--listen", listen, NULL,
	};
	const char *data = j->js->s.cfg->data_dir;
	const struct job_data *d = &t->data;
	char col[16], rank[16], trb[JOB_PATH_MAX + 600],
	     teb[JOB_PATH_MAX + 600];
	/* the files of this host a job names are read from the daemon's
	 * copies (jobs_inputs.c), never by path (a URL's file is fetched);
	 * an instance elsewhere reads its own */
	const char *train = remote ? d->train :
			    job_file(j, JIN_TRAIN, d->train, trb, sizeof trb);
	const char *test = remote ? d->test :
			   job_file(j, JIN_TEST, d->test, teb, sizeof teb);

	if (!remote && data_is_url(train) && strchr(train, '?'))
		train = "env:PX_TRAIN_DATA";
	if (!remote && data_is_url(test) && strchr(test, '?'))
		test = "env:PX_TEST_DATA";
	const char *own[20] = {
		"--train-data", train, "--test-data", test, "--scale",
		d->scale, "--label-column", col,
	};
	size_t no = 8;
	size_t n = 0, k = 0;
	char **v;

	/* the checksums: a URL's file is fetched and checked on the node */
	if (d->train_sha256[0]) {
		own[no++] = "--train-sha256";
		own[no++] = d->train_sha256;
	}
	if (d->test_sha256[0]) {
		own[no++] = "--test-sha256";
		own[no++] = d->test_sha256;
	}
	if (d->format[0]) {
		own[no++] = "--data-format";
		own[no++] = d->format;
	}
	/* mf (its own data always: jobreq.c) */
	if (t->rank) {
		snprintf(rank, sizeof rank, "%d", t->rank);
		own[no++] = "--rank";
		own[no++] = rank;
	}
	snprintf(col, sizeof col, "%d", d->label_column);
	snprintf(epochs, sizeof epochs, "%d", t->epochs);
	snprintf(batch, sizeof batch, "%d", t->batch);
	snprintf(lr, sizeof lr, "%.9g", t->lr);
	snprintf(token, sizeof token, "%" PRIu64, tr(j)->token);
	while (fixed[n])
		n++;
	for (const char *const *e = extra; e && *e; e++)
		n++;
	/* + the own data's options (own[]), or --data DIR */
	v = calloc(n + sizeof own / sizeof own[0] + 2, sizeof *v);
	if (!v)
		return NULL;
	for (const char *const *f = fixed; *f; f++)
		if (!(v[k++] = strdup(*f)))
			goto oom;
	for (const char *const *e = extra; e && *e; e++)
		if (!(v[k++] = strdup(*e)))
			goto oom;
	for (const char *const *o = own; d->train[0] && *o; o++)
		if (!(v[k++] = strdup(*o)))
			goto oom;
	if (!d->train[0] && data[0] && (!(v[k++] = strdup("--data")) ||
					!(v[k++] = strdup(data))))
		goto oom;
	return v;
oom:
	argv_free(v);
	return NULL;
}

/* How the environment of the job's trainer processes on this host (its
 * coordinator, a local world's nodes) is built (spawnattr.h): the
 * allow-list, the job's key and the parent watch, and never the daemon's
 * AWS credentials.  PX_SPAWN_ENV_DAEMON_AWS belongs here only where the
 * operator allows s3:// data with the daemon's credentials (a config key,
 * off by default). */
static unsigned role_env_flags(const struct job *j)
{
	/* s3:// data with the daemon's credentials, where the operator
	 * allows it (data_s3_allowed; docs/security.md): the roles on this
	 * host fetch it; else they get none of them */
	return PX_SPAWN_ENV_TRAINER |
	       (j->js->s.cfg->data_s3_allowed ? PX_SPAWN_ENV_DAEMON_AWS : 0);
}

/* The coordinator's environment (px_spawn_env): free the array only. */
static char **role_env(struct job *j)
{
	const struct job_data *d = &j->req.trainer.data;
	/* the array points into them: the job's, not this frame's */
	struct trainer *t = tr(j);
	char *trd = t->data_env[0], *te = t->data_env[1];
	char *add[] = { t->keyenv, "PX_PARENT_WATCH=1", NULL, NULL, NULL };
	size_t k = 2;

	if (data_by_env(d->train, "PX_TRAIN_DATA", trd,
			sizeof t->data_env[0])[0])
		add[k++] = trd;
	if (data_by_env(d->test, "PX_TEST_DATA", te,
			sizeof t->data_env[1])[0])
		add[k++] = te;
	return px_spawn_env(add, role_env_flags(j));
}

static enum px_err start_coordinator(struct job *j, bool resume,
				     struct px_error *err)
{
	char listen[JOB_PATH_MAX + 8], every[24], hb[24], budget[24];
	const char *extra[20];
	posix_spawn_file_actions_t fa;
	char **argv, **envp;
	size_t k = 0;
	pid_t pid;
	int r;

	snprintf(listen, sizeof listen, "%s", tr(j)->coord_addr);
	snprintf(every, sizeof every, "%d", j->req.trainer.checkpoint_every);
	extra[k++] = "--agent";
	extra[k++] = tr(j)->agent_ep;
	extra[k++] = "--expect-joins";
	/* nodes across a network (another machine, a loaded one) are lost
	 * after ec2_hb_timeout_ms (5 s) of silence, not the trainer's 0.8 s
	 * for one host */
	if (!j->wops->on_this_host) {
		snprintf(hb, sizeof hb, "%" PRId64,
			 j->js->s.cfg->ec2_hb_timeout_ms > 0 ?
			 j->js->s.cfg->ec2_hb_timeout_ms : 5000);
		extra[k++] = "--hb-timeout";
		extra[k++] = hb;
	}
	extra[k++] = "--eval-epochs";
	extra[k++] = "--checkpoint";
	extra[k++] = tr(j)->ckpt;
	if (j->req.trainer.checkpoint_every) {
		extra[k++] = "--checkpoint-every";
		extra[k++] = every;
	}
	if (j->req.trainer.checkpoint_budget) {
		snprintf(budget, sizeof budget, "%d",
			 j->req.trainer.checkpoint_budget);
		extra[k++] = "--checkpoint-budget";
		extra[k++] = budget;
	}
	if (resume && access(tr(j)->ckpt, R_OK) == 0) {
		extra[k++] = "--resume";
		extra[k++] = tr(j)->ckpt;
	}
	if (j->req.trainer.adapt)      /* trainer.adapt: co-adaptation */
		extra[k++] = "--adapt";
	extra[k] = NULL;
	argv = role_argv(j, "coordinator", "0", listen, listen, extra, false);
	envp = role_env(j);
	if (!argv || !envp) {
		argv_free(argv);
		free(envp);
		return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	/* 0 /dev/null, 1 and 2 the job's trainer.log, nothing else */
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, tr(j)->log, O_WRONLY | O_CREAT |
					 O_APPEND, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	r = px_spawn(&pid, argv[0], &fa, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	argv_free(argv);
	free(envp);
	if (r != 0)
		return px_errorf(err, PX_ESYS | r, "start '%s': %s",
				 j->js->s.trainer, strerror(r));
	tr(j)->coord = pid;
	return PX_OK;
}

static void stop_coordinator(struct job *j)
{
	if (tr(j)->coord <= 0)
		return;
	kill(-tr(j)->coord, SIGKILL);
	(void)waitpid(tr(j)->coord, NULL, 0);
	tr(j)->coord = 0;
}

/* ---- the world's hooks ---- */

/* Tell the coordinator which nodes instance q runs and what each may
 * be: a reliable instance's PS may hold backups and its workers say they
 * sit on a reliable node (stage 3 keeps them idle); a spot instance's PS
 * may only be an ActivePS. */
static void expect_nodes(struct job *j, const struct world_req *q,
			 uint32_t base)
{
	struct wire_command c = { .op = WIRE_CMD_EXPECT };
	uint8_t rel = q->reliable ? WIRE_ROLE_PS_BACKUP : 0;

	c.node.v = base;
	c.roles = WIRE_ROLE_PS_ACTIVE | rel;
	cmd_queue(j, &c);
	for (int k = 1; k <= j->req.trainer.workers_per_instance; k++) {
		c.node.v = base + (uint32_t)k;
		c.roles = WIRE_ROLE_WORKER | rel;
		cmd_queue(j, &c);
	}
}

/* An instance runs one trainer node (`proteus-trainer node`): a PS and
 * workers_per_instance workers, node ids id*NODE_STRIDE + 0, 1, ...,
 * at the place its world gives it. */
static enum px_err node_command(void *ctx, const struct world_req *q,
				const struct world_place *pl,
				struct world_node *ret, struct px_error *err)
{
	struct job *j = ctx;
	char node[24], per[16];
	const char *extra[8] = { "--with-ps", "--node-workers", per,
				 "--device", j->req.trainer.device, NULL,
				 NULL, NULL };
	uint64_t id = q->id * NODE_STRIDE;
	char **env;

	if (q->id >= UINT32_MAX / NODE_STRIDE)
		return px_errorf(err, PX_ETOOBIG, "instance id %" PRIu64
				 " past the trainer's node ids", q->id);
	snprintf(node, sizeof node, "%" PRIu64, id);
	snprintf(per, sizeof per, "%d", j->req.trainer.workers_per_instance);
	if (q->reliable)
		extra[5] = "--reliable";
	expect_nodes(j, q, (uint32_t)id);
	ret->argv = role_argv(j, "node", node, pl->coord, pl->listen, extra,
			      pl->remote);
	if (pl->remote && ret->argv) {
		/* started from user data on its instance: the trainer there,
		 * and no secret in its command (the node enrolls for the
		 * key: the world adds what it needs, common/enroll.h) */
		free(ret->argv[0]);
		ret->argv[0] = strdup(j->js->s.cfg->ec2_node_trainer);
	}
	env = calloc(5, sizeof *env);
	if (env) {
		const struct job_data *d = &j->req.trainer.data;
		char trd[JOBREQ_PATH_MAX + 16], te[JOBREQ_PATH_MAX + 16];
		size_t k = 2;

		env[0] = strdup("PX_PARENT_WATCH=1");
		env[1] = pl->remote ? NULL : strdup(tr(j)->keyenv);
		if (!pl->remote &&
		    data_by_env(d->train, "PX_TRAIN_DATA", trd, sizeof trd)[0])
			env[k++] = strdup(trd);
		if (!pl->remote &&
		    data_by_env(d->test, "PX_TEST_DATA", te, sizeof te)[0])
			env[k++] = strdup(te);
	}
	if (ret->argv && !ret->argv[0]) {
		argv_free(ret->argv);
		ret->argv = NULL;
	}
	ret->env = env;
	if (!ret->argv || !env || !env[0] || (!pl->remote && !env[1])) {
		argv_free(ret->argv);
		argv_free(env);
		ret->argv = ret->env = NULL;
		return px_errorf(err, PX_ENOMEM, "out of memory");
	}
	return PX_OK;
}

/* An instance of an earlier life taken up again: its node registers with
 * the new coordinator, which admits only the nodes it was told of. */
static void node_adopted(void *ctx, const struct world_req *q)
{
	struct job *j = ctx;

	if (q->id < UINT32_MAX / NODE_STRIDE)
		expect_nodes(j, q, (uint32_t)(q->id * NODE_STRIDE));
}

/* An eviction notice or a release: the world told the node (its roles
 * leave by gone_ms); the coordinator moves their partitions and shards
 * now, even if a role is too busy to say it leaves. */
static void node_notice(void *ctx, uint64_t id, int64_t gone_ms,
			enum world_leave why)
{
	struct job *j = ctx;
	struct wire_command c = {
		.op = WIRE_CMD_LEAVE,
		.reason = why == WORLD_LEAVE_RELEASE ? WIRE_LEAVE_RELEASE
						     : WIRE_LEAVE_EVICTION,
		.deadline_us = px_now_wall_us() + gone_ms * 1000,
	};

	for (int k = 0; k <= j->req.trainer.workers_per_instance; k++) {
		struct seen_node *s;

		c.node.v = (uint32_t)(id * NODE_STRIDE) + (uint32_t)k;
		cmd_queue(j, &c);
		if ((s = seen_get(j, c.node.v)))
			s->warned = true;
	}
}

/* The world's hook: instance id's node ended on its own (its process
 * gone): each of its roles is lost now (WIRE_CMD_GONE), not after its
 * heartbeat timeout. */
static void node_ended(void *ctx, uint64_t id)
{
	struct job *j = ctx;
	struct wire_command c = { .op = WIRE_CMD_GONE };

	for (int k = 0; k <= j->req.trainer.workers_per_instance; k++) {
		c.node.v = (uint32_t)(id * NODE_STRIDE) + (uint32_t)k;
		cmd_queue(j, &c);
	}
}

/* ---- the agent channel ---- */

static enum px_err agent_open(struct job *j, struct px_error *err)
{
	char coord[JOB_PATH_MAX + 8];
	struct agent_chan_setup as = {
		.agent_ep = tr(j)->agent_ep, .coord = coord, .job = tr(j)->token,
		.key = j->run.key, .key_len = sizeof j->run.key,
	};

	snprintf(tr(j)->agent_ep, sizeof tr(j)->agent_ep, "ipc://%s/agent.pull",
		 j->run.dir);
	snprintf(coord, sizeof coord, "%s", tr(j)->coord_addr);
	return agent_chan_open(&as, &tr(j)->ach, err);
}

static void agent_close(struct job *j)
{
	cmd_unwatch(j);
	agent_chan_close(tr(j)->ach);
	tr(j)->ach = NULL;
	tr(j)->registered = false;
	tr(j)->cmd_out = false;
	tr(j)->cmd_n = tr(j)->cmd_head = 0;
}

/* One short handshake attempt (the coordinator answers in a few ms once
 * it is up; until then this costs the timeout). */
static void agent_register(struct job *j)
{
	struct px_error err;
	char rep[JOB_PATH_MAX + 16];

	/* not before the coordinator has bound its socket: a handshake
	 * attempt blocks the loop for its timeout */
	snprintf(rep, sizeof rep, "%s/n0.rep", j->run.dir);
	if (!strncmp(tr(j)->coord_addr, "ipc://", 6) && access(rep, F_OK) != 0)
		return;
	/* no answer: the next try (with a new socket) */
	tr(j)->registered = agent_chan_register(tr(j)->ach, "proteusd", 10, &err) ==
			PX_OK;
}

/* Queue a command for the coordinator.  A full queue drops the oldest:
 * the commands are idempotent and the newest stage is the one that
 * counts. */
static void cmd_queue(struct job *j, const struct wire_command *c)
{
	if (tr(j)->cmd_n == CMDQ_MAX) {
		log_warn("job %" PRId64 ": command queue full; dropping the "
			 "oldest", j->id);
		if (tr(j)->cmd_out)
			return;
		tr(j)->cmd_head = (tr(j)->cmd_head + 1) % CMDQ_MAX;
		tr(j)->cmd_n--;
	}
	tr(j)->cmdq[(tr(j)->cmd_head + tr(j)->cmd_n) % CMDQ_MAX] = *c;
	tr(j)->cmd_n++;
}

/* The loop stops waiting for a command's answer (before the socket may
 * change: a send, a registration, the channel's end). */
static void cmd_unwatch(struct job *j)
{
	if (tr(j)->cmd_fd >= 0)
		loop_fd_del(j->js->s.loop, tr(j)->cmd_fd);
	tr(j)->cmd_fd = -1;
}

static void cmd_pump(struct job *j);

static void on_answer(struct loop *l, int fd, int mask, void *ctx)
{
	(void)l;
	(void)fd;
	(void)mask;
	cmd_pump(ctx);
}

/* A command is out: its answer is taken (and the next command sent) as
 * soon as it comes, not at the job's next tick.  One command a tick (50
 * ms) was 50 s for the 1002 EXPECTs of a 500-instance fleet's start,
 * whose nodes meanwhile waited to be admitted and, past their join time,
 * were failed (tests/bench/bench_ec2_fleet.sh).  Without the descriptor
 * the tick still takes it. */
static void cmd_watch(struct job *j)
{
	struct px_error err;
	int fd;

	if (agent_chan_answer_fd(tr(j)->ach, &fd, &err) == PX_OK &&
	    loop_fd_add(j->js->s.loop, fd, LOOP_READABLE, on_answer, j) ==
		    PX_OK)
		tr(j)->cmd_fd = fd;
}

static void cmd_pop(struct job *j)
{
	cmd_unwatch(j);
	tr(j)->cmd_out = false;
	tr(j)->cmd_head = (tr(j)->cmd_head + 1) % CMDQ_MAX;
	tr(j)->cmd_n--;
}

/* Take the reply of the command in flight and send the next one; never
 * blocks.  A command the coordinator refuses is logged; one that gets no
 * answer for CMD_GIVE_UP_MS is dropped (the coordinator is restarting:
 * the socket is made anew with the next registration). */
static void cmd_pump(struct job *j)
{
	struct px_error err;
	char detail[WIRE_STR_MAX + 1];
	uint32_t st;

	while (tr(j)->registered && tr(j)->cmd_n) {
		const struct wire_command *c = &tr(j)->cmdq[tr(j)->cmd_head];

		if (tr(j)->cmd_out) {
			if (agent_chan_answer(tr(j)->ach, 0, &st, detail,
					      sizeof detail, &err) != PX_OK) {
				if (px_now_mono_us() - tr(j)->cmd_sent_us <
				    CMD_GIVE_UP_MS * 1000ull)
					return;
				log_warn("job %" PRId64 ": the coordinator did "
					 "not answer command %u", j->id,
					 c->op);
				cmd_pop(j);
				continue;
			}
			if (st != PX_OK)
				log_warn("job %" PRId64 ": the coordinator "
					 "refused command %u: %s", j->id,
					 c->op, detail);
			cmd_pop(j);
			continue;
		}
		if (agent_chan_send(tr(j)->ach, c, &err) != PX_OK)
			return; /* not now: the next tick */
		tr(j)->cmd_out = true;
		tr(j)->cmd_sent_us = px_now_mono_us();
		cmd_watch(j);
	}
}

static void trainer_stage(struct job *j, int stage)
{
	struct wire_command c = { .op = WIRE_CMD_STAGE,
				  .stage = (uint8_t)stage };

	if (stage >= 1 && stage <= 3)
		cmd_queue(j, &c);
}

/* ---- the trainer's progress ---- */

static struct seen_node *seen_get(struct job *j, uint32_t node)
{
	for (size_t i = 0; i < tr(j)->n_seen; i++)
		if (tr(j)->seen[i].node == node)
			return &tr(j)->seen[i];
	if (tr(j)->n_seen == MAX_SEEN)
		return NULL;
	tr(j)->seen[tr(j)->n_seen] = (struct seen_node){ .node = node };
	return &tr(j)->seen[tr(j)->n_seen++];
}

/* The median speed the coordinator judges its workers against, from the
 * speeds its report carries, by its rule (judge_speeds in
 * trainer/dist/dist_coord.c): the active workers with a speed, but a reliable
 * node's in stage 3 (which holds no partition); 0 with fewer than two,
 * when none is slow.  A slow worker is below 2/3 of it. */
static float speed_median(const struct wire_progress *p)
{
	float *v = p->n ? calloc(p->n, sizeof *v) : NULL, med = 0;
	uint32_t n = 0;

	for (uint32_t i = 0; v && i < p->n; i++) {
		const struct wire_member *m = &p->members[i];

		if ((m->roles & WIRE_ROLE_WORKER) && m->speed > 0 &&
		    m->state == WIRE_MEMBER_ACTIVE &&
		    !(p->stage == 3 && (m->roles & WIRE_ROLE_PS_BACKUP)))
			v[n++] = m->speed;
	}
	if (n >= 2)
		med = px_median_f(v, n);
	free(v);
	return med;
}

/* Members of a PROGRESS frame into r (workers, PS, the slow ones), and
 * what they mean to the job: joins (a node first seen after the job
 * began), losses, and readiness of the instance a node runs on. */
static void take_members(struct job *j, const struct wire_progress *p,
			 struct job_report *r)
{
	r->speed_median = speed_median(p);
	for (uint32_t i = 0; i < p->n; i++) {
		const struct wire_member *m = &p->members[i];
		struct seen_node *s = seen_get(j, m->node.v);
		struct px_error err;
		bool live = m->state == WIRE_MEMBER_ACTIVE ||
			    m->state == WIRE_MEMBER_JOINING;

		if (live && m->slow && r->n_slow < (int)(sizeof r->slow /
							 sizeof r->slow[0])) {
			r->slow[r->n_slow].node = m->node.v;
			r->slow[r->n_slow++].speed = m->speed;
		}
		if (live && (m->roles & WIRE_ROLE_WORKER))
			r->workers++;
		else if (live && m->roles)  /* a stub node has none */
			r->ps++;
		if (s && s->anew && live && j->run.w) {
			/* back with the new coordinator: no join */
			s->anew = false;
			(void)j->wops->ready(j->run.w, m->node.v / NODE_STRIDE,
					     &err);
		}
		if (s && m->state == WIRE_MEMBER_LEAVING &&
		    s->state != WIRE_MEMBER_LEAVING && !s->warned &&
		    (m->leave_reason == WIRE_LEAVE_EVICTION ||
		     m->leave_reason == WIRE_LEAVE_REBALANCE) && j->run.w &&
		    j->wops->node_warned) {
			/* the node read its instance's notice (or the
			 * rebalance recommendation it leaves on) itself
			 * (ec2: instance metadata): its end is a leave,
			 * and the controller hears it now */
			s->warned = true;
			j->wops->node_warned(j->run.w, m->node.v / NODE_STRIDE,
					     m->leave_deadline_us,
					     m->leave_reason ==
					     WIRE_LEAVE_REBALANCE);
		}
		if (!s || s->state == m->state)
			continue;
		if (!s->state && live && p->clock > 0)
			job_progress_join(j);
		/* a warned node's roles leave, and the coordinator reports
		 * them LOST once gone, as it does a lost one: that is a
		 * leave (the coordinator does not count it either) */
		if (m->state == WIRE_MEMBER_LOST && !s->warned &&
		    s->state != WIRE_MEMBER_LEAVING) {
			job_progress_loss(j);
			job_notify(j, "loss", "a trainer node was lost "
				   "without notice", json_pack("{s:I}",
				   "node", (json_int_t)m->node.v));
		}
		if (!s->state && live && j->run.w)
			(void)j->wops->ready(j->run.w, m->node.v / NODE_STRIDE,
					     &err);
		s->state = m->state;
	}
}

/* The workers that train a partition, by the coordinator's rule
 * (dist_coord.c, counts): active, and in stage 3 not a reliable node's
 * worker (a BackupPS holder, which idles there). */
static uint32_t holders(const struct wire_progress *p)
{
	uint32_t w = 0;

	for (uint32_t i = 0; i < p->n; i++) {
		const struct wire_member *m = &p->members[i];

		w += m->state == WIRE_MEMBER_ACTIVE &&
		     (m->roles & WIRE_ROLE_WORKER) &&
		     !(p->stage == 3 && (m->roles & WIRE_ROLE_PS_BACKUP));
	}
	return w;
}

void trainer_goodput_report(const struct job *j, const struct wire_progress *p,
			    int workers, struct job_report *r)
{
	int per = j->req.trainer.workers_per_instance > 0 ?
		  j->req.trainer.workers_per_instance : 1;

	r->goodput = p->goodput;
	r->efficiency = p->efficiency;
	r->noise_scale = p->noise_scale;
	r->lr_scale = p->lr_scale;
	r->batch = p->batch;
	r->base_batch = j->req.trainer.batch;
	r->instances = (workers + per - 1) / per;
	r->total_batch = (double)holders(p) * p->batch;
}

static void take_progress(struct job *j, const struct wire_progress *p)
{
	struct job_report r = {
		.clock = (int64_t)p->clock, .total_clock = p->total_clock,
		.acc = p->accuracy, .loss = p->loss, .sps = p->samples_per_s,
		.stage = p->stage,
		/* the work is the share of the job's samples trained: with
		 * more workers a clock holds more of them */
		.frac = p->total_samples ? (double)p->samples /
					   (double)p->total_samples : 0,
	};

	/* Not all of it before the coordinator ends well (trainer_check,
	 * then job_progress_done): its final evaluation and checkpoint come
	 * after the last samples, and work done in full ends the job
	 * (ctrl_stop), which would stop the trainer before it wrote them;
	 * a job that status calls done has the checkpoint `model` reads. */
	if (r.frac > TRAINER_FRAC_RUNNING)
		r.frac = TRAINER_FRAC_RUNNING;

	if (r.clock > j->pg.clock)  /* the nodes work: starts succeed */
		tr(j)->start_failures = 0;
	take_members(j, p, &r);
	trainer_goodput_report(j, p, r.workers, &r);
	job_progress_take(j, &r);
}

static void trainer_poll(struct job *j)
{
	struct px_error err;
	struct wire_msg m;

	if (!tr(j)->registered)
		agent_register(j);
	cmd_pump(j);
	while (agent_chan_progress(tr(j)->ach, 0, &m, &err) == PX_OK) {
		take_progress(j, &m.u.progress);
		wire_msg_release(&m);
	}
}

/* ---- the coordinator's end ---- */

/* The socket files of a killed coordinator and of the agent (the nodes'
 * own stay: they live on). */
static void remove_coord_sockets(struct job *j)
{
	static const char *const names[] = { "n0.rep", "n0.pull", "n0.pub",
					     "agent.pull", NULL };
	char path[JOB_PATH_MAX + 32];

	for (const char *const *n = names; *n; n++) {
		snprintf(path, sizeof path, "%s/%s", j->run.dir, *n);
		(void)unlink(path);
	}
}

static void last_trainer_error(const struct job *j, uint64_t id, char *buf,
			       size_t len);

/* The coordinator's end: done, or a restart from the checkpoint.  Not
 * after exit 3, bad input data (a checksum, a data file's error): a
 * restart would read the same, and the trainer's words are the job's
 * error. */
static enum workload_end trainer_check(struct job *j, char *why, size_t len)
{
	int st, n;
	struct px_error err = {0};
	pid_t pid = tr(j)->coord;

	if (pid <= 0 || waitpid(pid, &st, WNOHANG) != pid)
		return WORKLOAD_RUNS;
	tr(j)->coord = 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return WORKLOAD_DONE;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 3) {
		char what[512], safe[PX_TERM_SAFE_LEN(128)];

		/* the coordinator is node 0 */
		last_trainer_error(j, 0, what, sizeof what);
		px_term_safe(what, safe, sizeof safe);
		snprintf(why, len, "the trainer's coordinator refused its "
			 "input (exit 3)%s%s", safe[0] ? ": " : "", safe);
		return WORKLOAD_FAILED;
	}
	if ((n = job_progress_restarted(j)) <= COORD_RESTARTS) {
		if (tr(j)->stall_kill)
			job_eventf(j, "error", "%s; restarting the trainer "
				   "from the checkpoint (%d of %d)", j->run.why,
				   n, COORD_RESTARTS);
		else
			job_eventf(j, "error", "the coordinator %s %d; "
				   "restarting from the checkpoint (%d of %d)",
				   WIFEXITED(st) ? "exited with"
						 : "died of signal",
				   WIFEXITED(st) ? WEXITSTATUS(st)
						 : WTERMSIG(st),
				   n, COORD_RESTARTS);
		tr(j)->stall_kill = false;
		kill(-pid, SIGKILL);    /* what is left of its group */
		job_progress_driver_anew(j);
		/* the new coordinator knows neither the agent nor what it
		 * was told: register again, and tell it again */
		agent_close(j);
		remove_coord_sockets(j);
		if (agent_open(j, &err) == PX_OK &&
		    start_coordinator(j, true, &err) == PX_OK) {
			if (j->run.c)
				trainer_stage(j, ctrl_stage(j->run.c));
			/* the nodes' sessions were with the old one: they
			 * start anew (and are expected anew) */
			for (size_t i = 0; i < tr(j)->n_seen; i++)
				tr(j)->seen[i].anew = true;
			if (!j->run.w ||
			    j->wops->restart_nodes(j->run.w, &err) == PX_OK)
				return WORKLOAD_RUNS;
		}
	}
	snprintf(why, len, "the trainer's coordinator %s %d%s%s",
		 WIFEXITED(st) ? "exited with" : "died of signal",
		 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
		 err.msg[0] ? ": " : "", err.msg);
	return WORKLOAD_FAILED;
}

/* A stalled trainer (j->run.why says how) whose coordinator may restart
 * yet: the coordinator is killed, and trainer_check starts it again from
 * the checkpoint with every node anew.  Whatever wedged it (a shard whose
 * every copy was lost in a hand-off, a node that never answers) costs the
 * clocks since the checkpoint, not the job.  False when no restart is
 * left, or the last one never got past the clock it stalled at: the job
 * fails. */
static bool trainer_restart_stalled(struct job *j)
{
	/* a restart that did not get past where the last one stalled
	 * will not help again */
	if (tr(j)->coord <= 0 || j->pg.restarts >= COORD_RESTARTS ||
	    j->pg.clock <= tr(j)->stall_restart_clock)
		return false;
	tr(j)->stall_restart_clock = j->pg.clock;
	tr(j)->stall_kill = true;
	kill(-tr(j)->coord, SIGKILL);
	return true;
}

/* ---- nodes that fail at start ---- */

/* The last "error:" line the trainer processes wrote to the job's log
 * (their own reason), into buf ("" when none): instance id's own ("worker
 * 101: ..." is instance 1's), else the last one of any. */
static void last_trainer_error(const struct job *j, uint64_t id, char *buf,
			       size_t len)
{
	char tail[8192], *p, *best, *cause = NULL, *any = NULL, *mine = NULL;
	ssize_t n = 0;
	int fd = open(tr(j)->log, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	off_t size;

	buf[0] = 0;
	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	if (size > 0 && lseek(fd, size > (off_t)sizeof tail - 1 ?
			      size - (off_t)sizeof tail + 1 : 0,
			      SEEK_SET) >= 0)
		n = read(fd, tail, sizeof tail - 1);
	close(fd);
	if (n <= 0)
		return;
	tail[n] = 0;
	/* the root cause, not a supervisor's "role X exited with N" */
	for (p = tail; (p = strstr(p, "error: ")); p++) {
		size_t k = strcspn(p, "\n");
		char *nl = p + k, c = *nl;
		unsigned node;

		*nl = 0;
		if (!strstr(p, " exited with ")) {
			cause = p + 7;
			if (sscanf(cause, "%*s %u:", &node) == 1 &&
			    node / NODE_STRIDE == id)
				mine = cause;
		}
		*nl = c;
		any = p + 7;
	}
	best = mine ? mine : cause ? cause : any;
	if (best) {
		size_t k = strcspn(best, "\n");

		snprintf(buf, len, "%.*s", (int)k, best);
	}
}

/* The world's progress mark: the trainer's clock. */
static int64_t job_mark(void *ctx)
{
	return ((struct job *)ctx)->pg.clock;
}

/* The world's hook: instance id's node ended before it worked (how:
 * "exited with status 1"). */
static void node_start_failed(void *ctx, uint64_t id, const char *how)
{
	struct job *j = ctx;
	char said[400];

	tr(j)->start_failures++;
	last_trainer_error(j, id, said, sizeof said);
	job_eventf(j, "node_failed", "instance %" PRIu64 ": its node failed "
		   "to start: %s%s%s", id, how, said[0] ? ": " : "", said);
	log_warn("job %" PRId64 ": instance %" PRIu64 ": its node failed to "
		 "start: %s%s%s", j->id, id, how, said[0] ? ": " : "", said);
	if (tr(j)->start_failures >= START_FAILURES_MAX)
		job_fail_soon(j, "its nodes cannot start: %" PRId64 " in a "
			      "row failed (the last %s)%s%s",
			      tr(j)->start_failures, how, said[0] ? ": " : "",
			      said);
}

/* ---- the trainer of a run ---- */

static enum px_err trainer_prepare(struct job *j, struct px_error *err)
{
	uint32_t n_train = 60000;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdn = 0;
	struct trainer *t = j->wl;

	if (!t) {
		if (!(t = calloc(1, sizeof *t)))
			return px_errorf(err, PX_ENOMEM, "out of memory");
		t->cmd_fd = -1;
		t->stall_restart_clock = -1;
		j->wl = t;
	}
	snprintf(t->ckpt, sizeof t->ckpt, "%s/%s", j->run.dir,
		 workload_trainer.product);
	snprintf(t->log, sizeof t->log, "%s/trainer.log", j->run.dir);
	/* the trainer's job id, drawn from the job's key: the same in
	 * every life of the job (nodes that outlive the daemon stay
	 * members) */
	if (EVP_Digest(j->run.key, sizeof j->run.key, md, &mdn, EVP_sha256(),
		       NULL) != 1 || mdn < sizeof t->token)
		return px_errorf(err, PX_EIO, "SHA-256 failed");
	memcpy(&t->token, md, sizeof t->token);
	t->token >>= 1;
	job_key_env(j, t->keyenv);
	job_progress_foresee(j, dist_job_clocks(n_train, 1,
						(uint32_t)j->req.trainer.epochs,
						(uint32_t)j->req.trainer.batch,
						DIST_CLOCK_BATCHES));
	return PX_OK;
}

/* A PS and its workers, three ports each. */
static int trainer_node_ports(const struct job *j)
{
	return 3 * (j->req.trainer.workers_per_instance + 1);
}

static enum px_err trainer_start(struct job *j, const char *coord,
				 bool resume, struct px_error *err)
{
	enum px_err e;

	snprintf(tr(j)->coord_addr, sizeof tr(j)->coord_addr, "%s", coord);
	e = agent_open(j, err);
	return e == PX_OK ? start_coordinator(j, resume, err) : e;
}

static void trainer_stop(struct job *j)
{
	if (!tr(j))
		return;
	stop_coordinator(j);
	agent_close(j);
}

static void trainer_free(struct job *j)
{
	free(j->wl);
	j->wl = NULL;
}

static void trainer_hooks(struct job *j, struct world_hooks *h)
{
	h->command = node_command;
	h->notice = node_notice;
	h->ended = node_ended;
	h->adopted = node_adopted;
	h->ctx = j;
	h->ready_on_report = true;
	h->log_path = tr(j)->log;
	h->spawn_env = role_env_flags(j);
	h->progress = job_mark;
	h->start_failed = node_start_failed;
}

const struct workload_ops workload_trainer = {
	.name = "trainer",
	.product = "model.pxc",
	/* the trainer's own leave time */
	.release_ms = DIST_LEAVE_DEFAULT_MS,
	.prepare = trainer_prepare,
	.node_ports = trainer_node_ports,
	.hooks = trainer_hooks,
	.start = trainer_start,
	.poll = trainer_poll,
	.stage = trainer_stage,
	.check = trainer_check,
	.restart_stalled = trainer_restart_stalled,
	.stop = trainer_stop,
	.free = trainer_free,
};
