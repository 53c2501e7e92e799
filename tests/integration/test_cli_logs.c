/* test_cli_logs.c -- `proteusctl logs ID [--node I] [--follow] [--lines N]`
 * against a real proteusd: the nodes' logs a job's folder holds
 * (<db>.jobs/ID/logs/iN.log and iN.log.1, written here by hand beside a
 * short trainer job) are shown prefixed by node, in order, the older
 * file's tail first when the current one is short, escaped for the
 * terminal, a symlink never read; --node and --lines pick; an unknown
 * job exits 4 naming it, bad arguments 2 naming them; --follow prints
 * what comes (a line in two writes once, a rotation without a loss),
 * ends by itself once the job has ended, and on SIGINT with 0. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jobs_fixture.h"
#include "pxrun.h"

TestSuite(cli_logs, .init = jobs_fixture_setup,
	  .fini = jobs_fixture_teardown, .timeout = 240);

/* <db>.jobs/ID/logs/name (rel NULL: the logs folder) into buf. */
static void logs_path(int64_t id, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s.jobs/%lld/logs%s%s", jt.db, (long long)id,
		 name ? "/" : "", name ? name : "");
}

/* Write (mode "w") or append ("a") text to the job's log name. */
static void put_log(int64_t id, const char *name, const char *mode,
		    const char *text)
{
	char path[4200];
	FILE *f;

	logs_path(id, name, path, sizeof path);
	f = fopen(path, mode);
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	cr_assert_eq(fputs(text, f) >= 0, 1);
	cr_assert_eq(fclose(f), 0);
}

static int count(const char *s, const char *needle)
{
	int k = 0;

	for (const char *p = s; (p = strstr(p, needle)); p++)
		k++;
	return k;
}

/* A finished trainer job (its folder there, no logs folder yet). */
static int64_t done_job(char *ids, size_t len)
{
	json_t *s;
	int64_t id;

	daemon_up();
	write_job(1, "");
	id = submit();
	snprintf(ids, len, "%lld", (long long)id);
	s = wait_end(id, 180);
	cr_assert_str_eq(state_of(s), "done");
	json_decref(s);
	return id;
}

Test(cli_logs, each_nodes_tail_prefixed_escaped_and_bounded)
{
	char ids[24], dir[4200], link[4200], secret[4200], *big;
	struct pxrun r;
	int64_t id = done_job(ids, sizeof ids);
	size_t n = 0;

	/* a trainer job: no per-node logs, and said why */
	cr_assert_eq(ctl(&r, 10, "logs", ids, NULL, NULL), 0, "%s", r.err);
	cr_assert_str_empty(r.out);
	cr_assert(strstr(r.err, "a trainer job"), "%s", r.err);
	pxrun_free(&r);
	logs_path(id, NULL, dir, sizeof dir);
	cr_assert_eq(mkdir(dir, 0700), 0, "%s: %s", dir, strerror(errno));
	put_log(id, "i1.log.1", "w", "old-1\nold-2\nold-3\n");
	put_log(id, "i1.log", "w", "one-1\none-2 \033[31mred\033[0m bad "
		"\xff\xfe end\none-3\n");
	put_log(id, "i2.log", "w", "two-1\ntwo-2\n");
	put_log(id, "i10.log", "w", "ten-1\n");
	put_log(id, "notes.txt", "w", "NOTES\n");
	put_log(id, "i01.log", "w", "LEADING-ZERO\n");
	/* symlinks, to a secret and to /etc/shadow: never followed */
	snprintf(secret, sizeof secret, "%s/secret", jt.tmp);
	cr_assert_eq(px_put_file(jt.tmp, "secret", "SECRET-TEXT\n"), 0);
	logs_path(id, "i3.log", link, sizeof link);
	cr_assert_eq(symlink("/etc/shadow", link), 0);
	logs_path(id, "i3.log.1", link, sizeof link);
	cr_assert_eq(symlink(secret, link), 0);
	logs_path(id, "i4.log", link, sizeof link);
	cr_assert_eq(symlink(secret, link), 0);

	cr_assert_eq(ctl(&r, 10, "logs", ids, NULL, NULL), 0, "%s", r.err);
	/* i1: the .1's tail first (the current file is short), then i2 */
	cr_assert_str_eq(r.out,
			 "[i1] old-1\n[i1] old-2\n[i1] old-3\n[i1] one-1\n"
			 "[i1] one-2 \\x1b[31mred\\x1b[0m bad ?? end\n"
			 "[i1] one-3\n[i2] two-1\n[i2] two-2\n[i10] ten-1\n");
	cr_assert_null(strchr(r.out, '\033'));
	cr_assert_null(strstr(r.out, "SECRET"));
	cr_assert_null(strstr(r.out, "root:"));
	cr_assert_null(strstr(r.out, "NOTES"));
	pxrun_free(&r);

	cr_assert_eq(ctl(&r, 10, "logs", ids, "--node", "2"), 0, "%s", r.err);
	cr_assert_str_eq(r.out, "[i2] two-1\n[i2] two-2\n");
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 10, "logs", ids, "--lines", "1"), 0, "%s", r.err);
	cr_assert_str_eq(r.out, "[i1] one-3\n[i2] two-2\n[i10] ten-1\n");
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 10, "logs", ids, "--lines", "4"), 0, "%s", r.err);
	cr_assert_str_eq(r.out, "[i1] old-3\n[i1] one-1\n"
			 "[i1] one-2 \\x1b[31mred\\x1b[0m bad ?? end\n"
			 "[i1] one-3\n[i2] two-1\n[i2] two-2\n[i10] ten-1\n");
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 10, "logs", ids, "--node", "3"), 0, "%s", r.err);
	cr_assert_str_empty(r.out);
	pxrun_free(&r);

	/* a current file longer than the daemon sends: no .1, the tail
	 * starts at a whole line, and the last line without its newline is
	 * one of the last N */
	big = malloc(30000 * 10 + 16);
	cr_assert_not_null(big);
	for (int i = 0; i < 30000; i++)
		n += (size_t)snprintf(big + n, 16, "two-%05d\n", i);
	snprintf(big + n, 16, "unended");
	put_log(id, "i2.log", "w", big);
	put_log(id, "i2.log.1", "w", "OLD-TWO\n");
	free(big);
	cr_assert_eq(ctl(&r, 10, "logs", ids, "--node", "2"), 0, "%s", r.err);
	cr_assert_eq(count(r.out, "\n"), 100, "%s", r.out);
	cr_assert(strstr(r.out, "[i2] two-29999\n[i2] unended\n"), "%s",
		  r.out);
	cr_assert(!strncmp(r.out, "[i2] two-29901\n", 15), "%.40s", r.out);
	pxrun_free(&r);
	{
		const char *argv[] = { "proteusctl", "--socket", jt.sock,
				       "logs", ids, "--node", "2", "--lines",
				       "100000", NULL };

		cr_assert_eq(pxrun(&r, 10, "proteusctl", argv), 0);
		cr_assert_eq(r.status, 0, "%s", r.err);
		/* 256 KiB at most from the daemon, cut at a line */
		cr_assert(!strncmp(r.out, "[i2] two-", 9), "%.40s", r.out);
		cr_assert_null(strstr(r.out, "OLD-TWO"));
		cr_assert_gt(count(r.out, "\n"), 25000);
		cr_assert_lt(count(r.out, "\n"), 27000);
		pxrun_free(&r);
	}

	/* --follow on a job that ended: the lines, then it returns (the
	 * line without its end last: it waited for the rest) */
	cr_assert_eq(ctl(&r, 10, "logs", ids, "--follow", "--lines=2"), 0,
		     "%s", r.err);
	cr_assert_str_eq(r.out, "[i1] one-2 \\x1b[31mred\\x1b[0m bad ?? end\n"
			 "[i1] one-3\n[i2] two-29999\n[i10] ten-1\n"
			 "[i2] unended\n");
	pxrun_free(&r);

	/* --json: one object a line */
	cr_assert_eq(ctl(&r, 10, "logs", ids, "--lines=1", "--json"), 0, "%s",
		     r.err);
	cr_assert_str_eq(r.out, "{\"node\":1,\"line\":\"one-3\"}\n"
			 "{\"node\":2,\"line\":\"unended\"}\n"
			 "{\"node\":10,\"line\":\"ten-1\"}\n");
	pxrun_free(&r);

	/* no such job: named, exit 4 (nothing matched) */
	cr_assert_eq(ctl(&r, 10, "logs", "99999", NULL, NULL), 4, "%s", r.err);
	cr_assert(strstr(r.err, "no job 99999"), "%s", r.err);
	pxrun_free(&r);
}

Test(cli_logs, bad_arguments_are_usage_errors_naming_them)
{
	static const struct {
		const char *a[3];
		const char *says;
	} cases[] = {
		{{"abc"}, "'abc' is not a job id"},
		{{"0"}, "'0' is not a job id"},
		{{NULL}, "'logs' needs a job id"},
		{{"1", "--node", "-1"}, "--node: '-1'"},
		{{"1", "--node", "x"}, "--node: 'x'"},
		{{"1", "--lines", "many"}, "--lines: 'many'"},
		{{"1", "--lines", "-3"}, "--lines: '-3'"},
		{{"1", "--bogus"}, "unknown option '--bogus' for 'logs'"},
		{{"1", "2"}, "unexpected argument '2'"},
		{{"1", "--node"}, "option '--node' for 'logs' needs a value"},
	};
	struct pxrun r;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *const *a = cases[i].a;

		cr_assert_eq(ctl(&r, 10, "logs", a[0], a[1], a[2]), 2,
			     "case %zu: %s", i, r.err);
		cr_assert(strstr(r.err, cases[i].says), "case %zu: %s", i,
			  r.err);
		cr_assert_str_empty(r.out);
		pxrun_free(&r);
	}
	cr_assert_eq(ctl(&r, 10, "logs", "--help", NULL, NULL), 0);
	cr_assert(strstr(r.out, "usage: proteusctl logs ID"), "%s", r.out);
	pxrun_free(&r);
}

/* proteusctl logs ID --follow, its output into out; its pid. */
static pid_t start_follow(const char *ids, const char *out)
{
	const char *build = getenv("PX_BUILD");
	char prog[4096];
	pid_t pid;

	snprintf(prog, sizeof prog, "%s/proteusctl", build ? build : "build");
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(127);
		execl(prog, "proteusctl", "--socket", jt.sock, "logs", ids,
		      "--follow", (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Its exit status within timeout_s, else -1 (killed then). */
static int wait_exit(pid_t pid, int timeout_s)
{
	int st;

	for (int i = 0; i < timeout_s * 20; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 +
			       WTERMSIG(st);
		sleep_ms(50);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

/* Wait (up to 20 s) until the follower's output file holds needle: it
 * has read what came so far (it asks every 500 ms). */
static void wait_printed(const char *out, const char *needle)
{
	char *text = NULL;

	for (int i = 0; i < 400; i++) {
		text = px_test_read_file(out, NULL);
		if (text && strstr(text, needle))
			break;
		free(text);
		text = NULL;
		sleep_ms(50);
	}
	cr_assert_not_null(text, "no '%s' printed in 20 s", needle);
	free(text);
}

Test(cli_logs, follow_prints_what_comes_until_the_job_ends)
{
	char ids[24], dir[4200], cur[4200], old[4200], out[4200], out2[4200];
	char *text;
	json_t *s = NULL;
	struct stat st;
	int64_t id;
	pid_t f, g;

	daemon_up();
	write_job(200, NULL);
	id = submit();
	snprintf(ids, sizeof ids, "%lld", (long long)id);
	for (int i = 0; i < 300; i++) {
		s = status(id);
		logs_path(id, NULL, dir, sizeof dir);
		*strrchr(dir, '/') = '\0';
		if (!strcmp(state_of(s), "running") && !stat(dir, &st))
			break;
		json_decref(s);
		s = NULL;
		sleep_ms(100);
	}
	cr_assert_not_null(s, "job %s did not start", ids);
	json_decref(s);
	logs_path(id, NULL, dir, sizeof dir);
	cr_assert_eq(mkdir(dir, 0700), 0, "%s: %s", dir, strerror(errno));
	put_log(id, "i1.log", "w", "a-1\n");
	snprintf(out, sizeof out, "%s/follow.out", jt.tmp);
	snprintf(out2, sizeof out2, "%s/follow2.out", jt.tmp);
	f = start_follow(ids, out);
	wait_printed(out, "[i1] a-1\n");
	put_log(id, "i1.log", "a", "a-2\na-3 par");
	/* a-2 printed: the partial line was read too, and held */
	wait_printed(out, "[i1] a-2\n");
	put_log(id, "i1.log", "a", "tial\n");
	wait_printed(out, "[i1] a-3 partial\n");
	/* a rotation, the old file's last line unread yet */
	logs_path(id, "i1.log", cur, sizeof cur);
	logs_path(id, "i1.log.1", old, sizeof old);
	put_log(id, "i1.log", "a", "a-4\n");
	cr_assert_eq(rename(cur, old), 0);
	put_log(id, "i1.log", "w", "b-1\n");
	put_log(id, "i2.log", "w", "c-1\n");
	wait_printed(out, "[i1] b-1\n");
	wait_printed(out, "[i2] c-1\n");
	/* SIGINT: exit 0 (once its tail is out) */
	g = start_follow(ids, out2);
	wait_printed(out2, "[i2] c-1\n");
	cr_assert_eq(kill(g, SIGINT), 0);
	cr_assert_eq(wait_exit(g, 10), 0);
	/* the job ends: the follower prints the last lines and returns */
	put_log(id, "i1.log", "a", "b-2\n");
	cancel_job(id, 20);
	cr_assert_eq(wait_exit(f, 10), 0, "--follow did not end");
	text = px_test_read_file(out, NULL);
	cr_assert_not_null(text);
	cr_assert_str_eq(text, "[i1] a-1\n[i1] a-2\n[i1] a-3 partial\n"
			 "[i1] a-4\n[i1] b-1\n[i2] c-1\n[i1] b-2\n");
	free(text);
	text = px_test_read_file(out2, NULL);
	cr_assert_not_null(text);
	/* its tail: the current i1.log is short, the .1's comes first */
	cr_assert_str_eq(text, "[i1] a-1\n[i1] a-2\n[i1] a-3 partial\n"
			 "[i1] a-4\n[i1] b-1\n[i2] c-1\n");
	free(text);
}
