/* test_children.c -- what proteusd's children get of it (agent/spawnattr.h):
 * a real daemon with AWS credentials in its environment, a notify_url
 * (libcurl's multi handle and its wake-up socket pair, which has no
 * close-on-exec) and a notify_command, and a local-world job.  A running
 * coordinator, every node (and the roles it forks) and each run of the
 * command hold no socket, pipe or database file of the daemon's, and none
 * of its credentials; the command has only 0, 1 and 2 (and the folder
 * `ls` reads); the trainer roles' credential chain points at nothing. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/px.h"
#include "jobs_fixture.h"

TestSuite(children, .init = jobs_fixture_setup,
	  .fini = jobs_fixture_teardown, .timeout = 240);

#define SECRET "canary-secret-of-the-daemon-0123456789"
#define AKID "AKIDCANARYOFTHEDAEMON"
#define TOKEN "canary-session-token-of-the-daemon"

/* The daemon's descriptors that are sockets or pipes (unique inodes),
 * or its database files (by path). */
struct fds {
	ino_t ino[1024];
	size_t n;
};

static void daemon_fds(struct fds *s)
{
	char dir[64], path[400];
	struct dirent *e;
	struct stat sb;
	DIR *d;

	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)jt.pid);
	d = opendir(dir);
	cr_assert_not_null(d);
	s->n = 0;
	while ((e = readdir(d)) && s->n < 1024) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (stat(path, &sb) == 0 && (S_ISSOCK(sb.st_mode) ||
					     S_ISFIFO(sb.st_mode)))
			s->ino[s->n++] = sb.st_ino;
	}
	closedir(d);
	cr_assert_gt(s->n, 0, "the daemon has sockets (its control socket)");
}

struct seen {
	const struct fds *daemon;
	int procs;
	int blocked;             /* with the credential chain pointed away */
};

/* Whether /proc/PID/environ holds needle. */
static bool environ_has(pid_t pid, const char *needle, bool *read_it)
{
	char path[64], *text = NULL, *lines;
	struct px_error e = {0};
	bool has = false;
	size_t n;

	snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
	*read_it = px_read_file(path, 1 << 20, &text, &n, &e) == PX_OK;
	if (!*read_it)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!text[i])
			text[i] = '\n';
	/* each entry between newlines, the first one too */
	cr_assert(asprintf(&lines, "\n%s\n", text) > 0);
	has = strstr(lines, needle) != NULL;
	free(lines);
	free(text);
	return has;
}

static void check_process(pid_t pid, void *ctx)
{
	struct seen *s = ctx;
	char dir[64], path[400], to[4096];
	struct dirent *e;
	struct stat sb;
	bool read_it, blocked;
	DIR *d;

	cr_assert_not(environ_has(pid, SECRET, &read_it), "process %d has "
		      "the daemon's AWS secret", (int)pid);
	if (!read_it)
		return;          /* ended meanwhile */
	cr_assert_not(environ_has(pid, AKID, &read_it), "%d", (int)pid);
	cr_assert_not(environ_has(pid, TOKEN, &read_it), "%d", (int)pid);
	cr_assert_not(environ_has(pid, "NOTIFY_SOCKET=", &read_it), "%d",
		      (int)pid);
	blocked = environ_has(pid, "\nAWS_EC2_METADATA_DISABLED=true\n",
			      &read_it);
	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		ssize_t k;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		k = readlink(path, to, sizeof to - 1);
		if (k < 0 || stat(path, &sb) != 0)
			continue;
		to[k] = 0;
		cr_assert(strncmp(to, jt.db, strlen(jt.db)) ||
			  (to[strlen(jt.db)] && to[strlen(jt.db)] != '-'),
			  "process %d fd %s is the daemon's database (%s)",
			  (int)pid, e->d_name, to);
		if (!S_ISSOCK(sb.st_mode) && !S_ISFIFO(sb.st_mode))
			continue;
		for (size_t i = 0; i < s->daemon->n; i++)
			cr_assert_neq(sb.st_ino, s->daemon->ino[i], "process "
				      "%d fd %s is the daemon's %s", (int)pid,
				      e->d_name, to);
	}
	closedir(d);
	s->blocked += blocked;
	s->procs++;
}

/* What each run of the command wrote: its descriptors (`ls -l`), then its
 * environment. */
static void check_command(const char *fds_file, const char *env_file)
{
	char *text = NULL, *line, *save;
	struct px_error e = {0};
	int runs = 0;
	size_t n;

	cr_assert_eq(px_read_file(fds_file, 1 << 20, &text, &n, &e), PX_OK,
		     "%s", e.msg);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *arrow = strstr(line, " -> "), *num;

		if (!strncmp(line, "== ", 3)) {
			runs++;
			continue;
		}
		if (!arrow)
			continue;        /* "total 0" */
		*arrow = 0;
		num = strrchr(line, ' ');
		cr_assert_not_null(num);
		num++;
		/* 0 the event's pipe, 1 this file, 2 the output's pipe; 3 is
		 * the folder ls itself opened to list */
		if (!strcmp(num, "3") && !strncmp(arrow + 4, "/proc/", 6))
			continue;
		cr_assert(!strcmp(num, "0") || !strcmp(num, "1") ||
			  !strcmp(num, "2"), "the command has fd %s (%s)",
			  num, arrow + 4);
	}
	free(text);
	cr_assert_gt(runs, 0, "the command never ran");
	cr_assert_eq(px_read_file(env_file, 1 << 20, &text, &n, &e), PX_OK,
		     "%s", e.msg);
	cr_assert_null(strstr(text, SECRET));
	cr_assert_null(strstr(text, AKID));
	cr_assert_null(strstr(text, TOKEN));
	cr_assert_null(strstr(text, "AWS_"), "%s", text);
	cr_assert_not_null(strstr(text, "PROTEUS_EVENT="));
	free(text);
}

Test(children, get_only_their_descriptors_and_no_credential)
{
	char *cmd, *fds_file, *env_file, conf[8400];
	struct fds dfds;
	struct seen s = { .daemon = &dfds };
	json_t *st = NULL;
	FILE *f;
	int64_t id;
	int coords = 0;

	cr_assert(asprintf(&fds_file, "%s/cmd.fds", jt.tmp) > 0);
	cr_assert(asprintf(&env_file, "%s/cmd.env", jt.tmp) > 0);
	cr_assert(asprintf(&cmd, "%s/notify.sh", jt.tmp) > 0);
	f = fopen(cmd, "w");
	cr_assert_not_null(f);
	fprintf(f, "#!/bin/sh\ncat > /dev/null\n"
		"{ echo \"== $PROTEUS_EVENT\"; ls -l /proc/self/fd; } >> %s\n"
		"env >> %s\n", fds_file, env_file);
	fclose(f);
	cr_assert_eq(chmod(cmd, 0700), 0);
	/* a receiver that is down: libcurl's handles are made and kept
	 * retrying while the job runs */
	snprintf(conf, sizeof conf, "notify_command %s\n"
		 "notify_url http://127.0.0.1:%d/hook\n", cmd, free_port());
	setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
	setenv("AWS_ACCESS_KEY_ID", AKID, 1);
	setenv("AWS_SESSION_TOKEN", TOKEN, 1);
	daemon_up_with(conf);
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SESSION_TOKEN");
	write_job(40, NULL);
	id = submit();
	/* running, a clock trained: the coordinator and nodes are up */
	for (int i = 0; i < 400; i++) {
		json_decref(st);
		st = status(id);
		if (json_integer_value(json_object_get(st, "clock")) > 0)
			break;
		sleep_ms(50);
	}
	cr_assert_gt(json_integer_value(json_object_get(st, "clock")), 0,
		     "no progress in 20 s: %s", daemon_said());
	json_decref(st);
	daemon_fds(&dfds);
	coords = each_argv("proteus-trainer coordinator", jt.tmp, NULL, NULL);
	cr_assert_eq(coords, 1, "one coordinator");
	cr_assert_gt(each_argv("proteus-trainer node", jt.tmp, NULL, NULL), 0,
		     "a node");
	/* every trainer process: the coordinator, the nodes, their roles */
	each_ours(check_process, &s);
	cr_assert_gt(s.procs, 1);
	cr_assert_eq(s.blocked, s.procs, "each trainer process's AWS chain "
		     "points at nothing");
	cancel_job(id, 60);
	st = wait_end(id, 60);
	json_decref(st);
	/* the command ran for queued, running, and the end */
	for (int i = 0; i < 200; i++) {
		struct stat sb;

		if (stat(fds_file, &sb) == 0 && sb.st_size > 0 &&
		    stat(env_file, &sb) == 0 && sb.st_size > 0)
			break;
		sleep_ms(50);
	}
	check_command(fds_file, env_file);
	free(cmd);
	free(fds_file);
	free(env_file);
}
