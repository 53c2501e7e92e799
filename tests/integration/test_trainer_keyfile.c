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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../trainer/dist/dist.h"
#include "trainer_fixture.h"

#define KEYHEX TRAINER_KEYHEX

/* The waits below are for events; their limits only end a test that
 * hangs, and are far above what a loaded machine takes. */
#define WAIT_MS 60000

TestSuite(trainer_keyfile, .init = trainer_fixture_setup,
	  .fini = trainer_fixture_teardown, .timeout = 150);

/* proteus-trainer ARGV with env1 and env2 ("K=V" or NULL) in place of
 * any job key of ours. */
static pid_t start(const char *name, const char *const *argv,
		   const char *env1, const char *env2)
{
	const char *env[3] = { 0 };
	int n = 0;

	if (env1)
		env[n++] = env1;
	if (env2)
		env[n++] = env2;
	return trainer_spawn(name, argv, env);
}

#define COMMON "--model", "mlr", "--max-train", "600", "--max-test", "100", \
	"--batch", "32", "--threads", "1", "--job", "77", "--coord", tt.coord

static pid_t start_coordinator(const char *epochs)
{
	const char *argv[] = { "proteus-trainer", "coordinator", COMMON,
			       "--epochs", epochs, "--node", "0", "--listen",
			       tt.coord, "--workers", "1", "--ps", "1", NULL };

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

	snprintf(listen, sizeof listen, "ipc://%s/n%s", tt.tmp, base);
	snprintf(name, sizeof name, "node%s", base);
	return start(name, argv, env1, env2);
}

/* Write KEYHEX and a newline to tmp/NAME with mode; its path in buf. */
static const char *key_file(const char *name, mode_t mode, char *buf,
			    size_t len)
{
	int fd;

	snprintf(buf, len, "%s/%s", tt.tmp, name);
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
	log = trainer_log("coordinator");
	cr_assert_eq(st, 0, "coordinator: %d\n%s", st, log);
	cr_assert_not_null(strstr(log, "node 101 registered"), "%s", log);
	free(log);
	st = wait_exit(node, WAIT_MS);
	log = trainer_log("node100");
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
	log = trainer_log("coordinator");
	cr_assert_eq(st, 0, "coordinator: %d\n%s", st, log);
	free(log);
	cr_assert_eq(wait_exit(node, WAIT_MS), 0);
	log = trainer_log("node100");
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
	log = trainer_log("node100");
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
				       "--listen", tt.coord, NULL };
		pid_t w = start("worker", argv, env, NULL);

		cr_assert_eq(wait_exit(w, WAIT_MS), 2);
		log = trainer_log("worker");
		cr_assert_not_null(strstr(log, file), "%s", log);
		free(log);
	}
}
