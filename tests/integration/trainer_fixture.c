/* trainer_fixture.c -- real proteus-trainer processes for the trainer
 * tests (test_trainer_agent.c, test_trainer_notices.c,
 * test_trainer_keyfile.c): a private temp dir, each process in a group of
 * its own with its log there, the logs read and waited on, exits reaped,
 * and the test registered with the coordinator as its agent (as proteusd
 * is), sending COMMANDs. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/px.h"
#include "../../trainer/dist/dist.h"
#include "../../trainer/dist/dist_int.h"
#include "../../trainer/dist/net.h"
#include "trainer_fixture.h"

extern char **environ;

struct trainer_fixture tt;

void trainer_fixture_setup(void)
{
	tt.tmp = px_tmpdir();
	cr_assert_not_null(tt.tmp);
	snprintf(tt.coord, sizeof tt.coord, "ipc://%s/n0", tt.tmp);
	snprintf(tt.agent_ep, sizeof tt.agent_ep, "ipc://%s/agent.pull",
		 tt.tmp);
}

void trainer_fixture_teardown(void)
{
	for (int i = 0; i < tt.n; i++)
		if (tt.pids[i] > 0) {
			kill(-tt.pids[i], SIGKILL);
			waitpid(tt.pids[i], NULL, 0);
		}
	net_close(tt.req);
	net_close(tt.pull);
	wire_ctx_free(tt.ctx);
	px_rmtree(tt.tmp);
	free(tt.tmp);
	memset(&tt, 0, sizeof tt);
}

/* Whether environment entry e ("K=V") is variable name (len bytes). */
static bool is_var(const char *e, const char *name, size_t len)
{
	return !strncmp(e, name, len) && e[len] == '=';
}

/* Whether our entry e stays in a child's environment: not a job key or
 * parent watch, and not a variable env sets or unsets. */
static bool keep_env(const char *e, const char *const *env)
{
	static const char *const ours[] = { DIST_PARENT_ENV, DIST_KEY_ENV,
					    DIST_KEY_FILE_ENV };

	for (size_t i = 0; i < sizeof ours / sizeof *ours; i++)
		if (is_var(e, ours[i], strlen(ours[i])))
			return false;
	for (int i = 0; env && env[i]; i++)
		if (is_var(e, env[i], strcspn(env[i], "=")))
			return false;
	return true;
}

pid_t trainer_spawn(const char *name, const char *const *argv,
		    const char *const *env)
{
	char path[4096], err[700], *envp[512];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	size_t n = 0;
	pid_t pid;

	snprintf(path, sizeof path, "%s/proteus-trainer", getenv("PX_BUILD"));
	snprintf(err, sizeof err, "%s/%s.err", tt.tmp, name);
	for (char **e = environ; *e && n < 490; e++)
		if (keep_env(*e, env))
			envp[n++] = *e;
	for (int i = 0; env && env[i]; i++) {
		cr_assert_lt(n, 510);
		if (strchr(env[i], '='))
			envp[n++] = (char *)env[i];
	}
	envp[n++] = DIST_PARENT_ENV "=1";
	envp[n] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT |
					 O_TRUNC | O_APPEND, 0600);
	posix_spawn_file_actions_adddup2(&fa, 2, 1);
	posix_spawnattr_init(&at);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
	cr_assert_eq(posix_spawn(&pid, path, &fa, &at, (char **)argv, envp),
		     0);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	cr_assert_lt(tt.n, (int)(sizeof tt.pids / sizeof *tt.pids));
	tt.pids[tt.n++] = pid;
	return pid;
}

pid_t trainer_start(const char *name, const char *const *argv)
{
	const char *const env[] = { DIST_KEY_ENV "=" TRAINER_KEYHEX, NULL };

	return trainer_spawn(name, argv, env);
}

char *trainer_log(const char *name)
{
	char path[700], *buf;

	snprintf(path, sizeof path, "%s/%s.err", tt.tmp, name);
	buf = px_test_read_file(path, NULL);
	if (!buf)
		buf = strdup("");
	cr_assert_not_null(buf);
	return buf;
}

bool wait_log(const char *name, const char *text, int ms)
{
	for (int i = 0; i < ms / 20; i++) {
		char *s = trainer_log(name);
		bool hit = strstr(s, text) != NULL;

		free(s);
		if (hit)
			return true;
		usleep(20000);
	}
	return false;
}

int wait_exit(pid_t pid, int ms)
{
	int st;

	for (int i = 0; i < ms / 10; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			for (int k = 0; k < tt.n; k++)
				if (tt.pids[k] == pid)
					tt.pids[k] = 0;
			return WIFEXITED(st) ? WEXITSTATUS(st)
					     : 128 + WTERMSIG(st);
		}
		usleep(10000);
	}
	return -1;
}

void agent_up(uint32_t job)
{
	static uint8_t key[32];
	struct wire_config wc = { .self = { DIST_AGENT_NODE }, .job = job,
				  .job_key = key, .job_key_len = sizeof key };
	struct wire_register info = { .roles = WIRE_ROLE_AGENT };
	struct px_error err = { 0 };
	struct wire_msg r;

	/* TRAINER_KEYHEX's bytes */
	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)(i % 16 * 0x11);
	cr_assert_eq(wire_ctx_new(&wc, &tt.ctx, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(net_open(tt.ctx, NET_PULL, NULL, &tt.pull, &err), PX_OK);
	cr_assert_eq(net_bind(tt.pull, tt.agent_ep, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(dist_sock(tt.ctx, NET_REQ, tt.coord, DIST_EP_REP, false,
			       &tt.req, &err), PX_OK, "%s", err.msg);
	snprintf(info.instance, sizeof info.instance, "test");
	cr_assert_lt(strlen(tt.agent_ep), sizeof info.addr);
	memcpy(info.addr, tt.agent_ep, strlen(tt.agent_ep) + 1);
	for (int i = 0; i < 100; i++) {
		if (net_register(tt.req, (struct wire_node){ DIST_COORD_NODE },
				 &info, 200, &r, &err) == PX_OK)
			break;
		usleep(50000);
	}
	cr_assert_eq(r.hdr.type, WIRE_ACK, "%s", err.msg);
	cr_assert_eq(r.u.ack.status, PX_OK, "%s", r.u.ack.detail);
	wire_msg_release(&r);
}

uint32_t command(struct wire_command c)
{
	struct px_error err = { 0 };
	struct wire_msg m;
	uint32_t st;

	wire_msg_init(&m, WIRE_COMMAND, (struct wire_node){ DIST_COORD_NODE },
		      0);
	m.u.command = c;
	cr_assert_eq(net_send(tt.req, &m, TRAINER_WAIT_MS, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(net_recv(tt.req, &m, TRAINER_WAIT_MS, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(m.hdr.type, WIRE_ACK);
	st = m.u.ack.status;
	wire_msg_release(&m);
	return st;
}

void expect(uint32_t node, uint8_t roles)
{
	cr_assert_eq(command((struct wire_command){ .op = WIRE_CMD_EXPECT,
						    .roles = roles,
						    .node = { node } }),
		     PX_OK);
}

double leave_gone(unsigned node, int reason)
{
	char what[80], *log, *at;
	double gone;

	snprintf(what, sizeof what, "node %u leaving (reason %d, gone in ",
		 node, reason);
	if (!wait_log("coordinator", what, TRAINER_WAIT_MS)) {
		log = trainer_log("coordinator");
		cr_assert_fail("no '%s' in the coordinator's log:\n%s", what,
			       log);
	}
	log = trainer_log("coordinator");
	at = strstr(log, what);
	cr_assert_not_null(at, "%s", log);
	gone = strtod(at + strlen(what), NULL);
	free(log);
	return gone;
}
