/* test_trainer_keyfile.c -- the job key from a file (PX_JOB_KEY_FILE), as
 * a node on an instance gets it: a real coordinator (key in PX_JOB_KEY)
 * and real `proteus-trainer node` programs that have only the file.
 *
 *  - a node with only PX_JOB_KEY_FILE authenticates: its roles register
 *    and the job trains to the end;
 *  - PX_JOB_KEY wins when both are set (a bad file is not even read);
 *  - a 0644 key file is refused, the message naming the path and not
 *    the key, and the node ends.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../trainer/dist.h"
#include "pxrun.h"

extern char **environ;

#define KEYHEX "00112233445566778899aabbccddeeff" \
	       "00112233445566778899aabbccddeeff"

static struct {
	char *tmp;
	char coord[600];
	pid_t pids[8];
	int n;
} t;

static void setup(void)
{
	t.tmp = px_tmpdir();
	cr_assert_not_null(t.tmp);
	snprintf(t.coord, sizeof t.coord, "ipc://%s/n0", t.tmp);
}

static void teardown(void)
{
	for (int i = 0; i < t.n; i++)
		if (t.pids[i] > 0) {
			kill(-t.pids[i], SIGKILL);
			waitpid(t.pids[i], NULL, 0);
		}
	px_rmtree(t.tmp);
	free(t.tmp);
	memset(&t, 0, sizeof t);
}

/* The waits below are for events; their limits only end a test that
 * hangs, and are far above what a loaded machine takes. */
#define WAIT_MS 60000

TestSuite(trainer_keyfile, .init = setup, .fini = teardown, .timeout = 150);

/* proteus-trainer ARGV in a process group of its own, stderr to
 * tmp/NAME.err, with env1 and env2 ("K=V" or NULL) in place of any job
 * key of ours, and a parent watch on us. */
static pid_t start(const char *name, const char *const *argv,
		   const char *env1, const char *env2)
{
	char path[4096], err[700], *envp[512];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	size_t n = 0;
	pid_t pid;

	snprintf(path, sizeof path, "%s/proteus-trainer", getenv("PX_BUILD"));
	snprintf(err, sizeof err, "%s/%s.err", t.tmp, name);
	for (char **e = environ; *e && n < 500; e++)
		if (strncmp(*e, DIST_PARENT_ENV "=", sizeof(DIST_PARENT_ENV))
		    && strncmp(*e, DIST_KEY_ENV "=", sizeof(DIST_KEY_ENV)) &&
		    strncmp(*e, DIST_KEY_FILE_ENV "=",
			    sizeof(DIST_KEY_FILE_ENV)))
			envp[n++] = *e;
	if (env1)
		envp[n++] = (char *)env1;
	if (env2)
		envp[n++] = (char *)env2;
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
	t.pids[t.n++] = pid;
	return pid;
}

#define COMMON "--model", "mlr", "--max-train", "600", "--max-test", "100", \
	"--batch", "32", "--threads", "1", "--job", "77", "--coord", t.coord

static pid_t start_coordinator(const char *epochs)
{
	const char *argv[] = { "proteus-trainer", "coordinator", COMMON,
			       "--epochs", epochs, "--node", "0", "--listen",
			       t.coord, "--workers", "1", "--ps", "1", NULL };

	return start("coordinator", argv, DIST_KEY_ENV "=" KEYHEX, NULL);
}

static pid_t start_node(const char *base, const char *epochs,
			const char *env1, const char *env2)
{
	char listen[700], name[32];
	const char *argv[] = { "proteus-trainer", "node", COMMON,
			       "--epochs", epochs, "--node", base,
			       "--listen", listen, "--node-workers", "1",
			       "--with-ps", "--reliable", NULL };

	snprintf(listen, sizeof listen, "ipc://%s/n%s", t.tmp, base);
	snprintf(name, sizeof name, "node%s", base);
	return start(name, argv, env1, env2);
}

static char *slurp(const char *name)
{
	char path[700];
	FILE *f;
	char *buf = calloc(1, 1 << 20);
	size_t n;

	snprintf(path, sizeof path, "%s/%s.err", t.tmp, name);
	f = fopen(path, "r");
	cr_assert_not_null(buf);
	if (f) {
		n = fread(buf, 1, (1 << 20) - 1, f);
		buf[n] = 0;
		fclose(f);
	}
	return buf;
}

/* Exit status of pid within ms, or -1. */
static int wait_exit(pid_t pid, int ms)
{
	int st;

	for (int i = 0; i < ms / 10; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			for (int k = 0; k < t.n; k++)
				if (t.pids[k] == pid)
					t.pids[k] = 0;
			return WIFEXITED(st) ? WEXITSTATUS(st)
					     : 128 + WTERMSIG(st);
		}
		usleep(10000);
	}
	return -1;
}

/* Write KEYHEX and a newline to tmp/NAME with mode; its path in buf. */
static const char *key_file(const char *name, mode_t mode, char *buf,
			    size_t len)
{
	int fd;

	snprintf(buf, len, "%s/%s", t.tmp, name);
	fd = open(buf, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0, "%s", buf);
	cr_assert_eq(write(fd, KEYHEX "\n", 65), 65);
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
	return buf;
}

/* The coordinator knows the key from PX_JOB_KEY; the node has only the
 * file.  Frames under another key are dropped unread, so a job that
 * trains to the end is one whose node authenticated. */
Test(trainer_keyfile, a_node_with_only_the_file_authenticates)
{
	char file[700], env[800];
	pid_t coord, node;
	char *log;
	int st;

	key_file("job.key", 0400, file, sizeof file);
	snprintf(env, sizeof env, DIST_KEY_FILE_ENV "=%s", file);
	coord = start_coordinator("2");
	node = start_node("100", "2", env, NULL);
	st = wait_exit(coord, WAIT_MS);
	log = slurp("coordinator");
	cr_assert_eq(st, 0, "coordinator: %d\n%s", st, log);
	cr_assert_not_null(strstr(log, "node 101 registered"), "%s", log);
	free(log);
	st = wait_exit(node, WAIT_MS);
	log = slurp("node100");
	cr_assert_eq(st, 0, "node: %d\n%s", st, log);
	cr_assert_null(strstr(log, KEYHEX + 8), "the key in a log:\n%s", log);
	free(log);
}

/* Both set: PX_JOB_KEY is the key, and a file that would be refused is
 * not even read. */
Test(trainer_keyfile, the_variable_wins_over_the_file)
{
	char file[700], env[800];
	pid_t coord, node;
	char *log;
	int st;

	key_file("loose.key", 0644, file, sizeof file);
	snprintf(env, sizeof env, DIST_KEY_FILE_ENV "=%s", file);
	coord = start_coordinator("1");
	node = start_node("100", "1", DIST_KEY_ENV "=" KEYHEX, env);
	st = wait_exit(coord, WAIT_MS);
	log = slurp("coordinator");
	cr_assert_eq(st, 0, "coordinator: %d\n%s", st, log);
	free(log);
	cr_assert_eq(wait_exit(node, WAIT_MS), 0);
	log = slurp("node100");
	cr_assert_null(strstr(log, file), "%s", log);
	free(log);
}

/* A key file others may read is no secret: refused with the path (and
 * never the key), and the node ends. */
Test(trainer_keyfile, a_0644_file_is_refused)
{
	char file[700], env[800];
	pid_t node;
	char *log;
	int st;

	key_file("loose.key", 0644, file, sizeof file);
	snprintf(env, sizeof env, DIST_KEY_FILE_ENV "=%s", file);
	node = start_node("100", "1", env, NULL);
	st = wait_exit(node, WAIT_MS);
	log = slurp("node100");
	cr_assert_neq(st, 0, "%s", log);
	cr_assert_not_null(strstr(log, file), "no path in:\n%s", log);
	cr_assert_not_null(strstr(log, "mode 0644"), "%s", log);
	cr_assert_not_null(strstr(log, DIST_KEY_FILE_ENV), "%s", log);
	cr_assert_null(strstr(log, KEYHEX + 8), "the key in a log:\n%s", log);
	free(log);
	/* a role started alone says the same, with the usage exit */
	{
		const char *argv[] = { "proteus-trainer", "worker", COMMON,
				       "--epochs", "1", "--node", "5",
				       "--listen", t.coord, NULL };
		pid_t w = start("worker", argv, env, NULL);

		cr_assert_eq(wait_exit(w, WAIT_MS), 2);
		log = slurp("worker");
		cr_assert_not_null(strstr(log, file), "%s", log);
		free(log);
	}
}
