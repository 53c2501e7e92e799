/* test_jobs_rights.c -- what a socket user may make a root proteusd read
 * (docs/security.md, "What a submitter may make the daemon read"): every
 * file a job names is opened once, at submit, with the submitter's rights
 * and copied; a file swapped afterwards (a symlink or a hard link to a
 * root-only file, while the job is queued, running, or taken up again
 * after a kill -9) is never read; /proc magic links and the daemon's own
 * files (its database by another name, its job folders) are refused, and
 * the books of a done job survive the sequence that once lost them. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/px.h"
#include "jobs_fixture.h"
#include "pxrun.h"

TestSuite(jobs_rights, .init = jobs_fixture_setup,
	  .fini = jobs_fixture_teardown, .timeout = 300);

#define NOBODY 65534
#define SECRET "SECRETWORD"

/* tmp/name, mode 0644: n LIBSVM rows of 2 classes feature 1 or 2 split. */
static void svm(const char *name, int n)
{
	char path[700];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", jt.tmp, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s %d:%.2f 3:%.2f\n", i % 2 ? "+1" : "-1",
			i % 2 + 1, 1.0 + (i * 37 % 100) / 100.0,
			(i * 37 % 100) / 100.0);
	fclose(f);
	cr_assert_eq(chmod(path, 0644), 0);
}

/* tmp/secret: root's only, a first token that would be quoted. */
static void secret(char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/secret", jt.tmp);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(SECRET " 1:1\n" SECRET " 2:1\n", f);
	fclose(f);
	cr_assert_eq(chmod(path, 0600), 0);
}

/* Whether needle is in the file at path (binary). */
static bool file_has(const char *path, const char *needle)
{
	char *text = NULL;
	size_t n = 0;
	struct px_error e = {0};
	bool has;

	if (px_read_file(path, 1u << 30, &text, &n, &e) != PX_OK)
		return false;
	has = memmem(text, n, needle, strlen(needle)) != NULL;
	free(text);
	return has;
}

/* Whether needle is in any file under dir. */
static bool tree_has(const char *dir, const char *needle)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool has = false;

	while (d && !has && (e = readdir(d))) {
		char path[4096];
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (lstat(path, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode))
			has = tree_has(path, needle);
		else if (S_ISREG(st.st_mode))
			has = file_has(path, needle);
	}
	if (d)
		closedir(d);
	return has;
}

/* path replaced, atomically, by a symlink (or a hard link) to target. */
static void swap_for_link(const char *path, const char *target, bool hard)
{
	char tmp[4200];

	snprintf(tmp, sizeof tmp, "%s.swap", path);
	(void)unlink(tmp);
	cr_assert_eq(hard ? link(target, tmp) : symlink(target, tmp), 0);
	cr_assert_eq(rename(tmp, path), 0);
}

static int64_t submit_as_nobody(void)
{
	struct pxrun r;
	int64_t id;

	cr_assert_eq(chmod(jt.job, 0644), 0);
	cr_assert_eq(ctl_as(&r, 60, NOBODY, "submit", jt.job, NULL, NULL), 0,
		     "%s", r.err);
	id = strtoll(r.out, NULL, 10);
	cr_assert_gt(id, 0, "submit printed '%s'", r.out);
	pxrun_free(&r);
	return id;
}

static void wait_running(int64_t id)
{
	for (int i = 0; i < 600; i++) {
		json_t *o = status(id);
		bool running = !strcmp(state_of(o), "running");

		json_decref(o);
		if (running)
			return;
		sleep_ms(100);
	}
	cr_assert_fail("job %lld never ran", (long long)id);
}

/* The submitter's data (tmp/train.svm, tmp/test.svm, readable by all)
 * and root's secret beside it, each path 700 bytes at most; a test that
 * cannot act as another user is skipped. */
static void own_data(char *train, char *test, char *sec)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to act as another user");
	svm("train.svm", 2000);
	svm("test.svm", 400);
	secret(sec, 700);
	snprintf(train, 700, "%s/train.svm", jt.tmp);
	snprintf(test, 700, "%s/test.svm", jt.tmp);
}

enum when { WHILE_QUEUED, WHILE_RUNNING, ACROSS_A_KILL };

/* A job on the submitter's own data, whose files are swapped for a link
 * to root's secret at `when`: it trains on what was submitted, and the
 * secret is nowhere (status, events, log, store, the job's folder). */
static void swapped(enum when when, bool hard)
{
	char train[700], test[700], sec[700], extra[1600], ids[24], jobs[700];
	struct pxrun r;
	json_t *st;
	int64_t id, first = 0;

	own_data(train, test, sec);
	/* queued: behind another job, one job at a time */
	daemon_up_with(when == WHILE_RUNNING ? "" : "max_jobs 1\n");
	if (when != WHILE_RUNNING) {
		write_job(2, "");
		first = submit();
	}
	snprintf(extra, sizeof extra, "{\"trainer\": {\"model\": \"mlr\", "
		 "\"epochs\": 5, \"batch\": 32, \"data\": {\"train\": \"%s\", "
		 "\"test\": \"%s\"}}}", train, test);
	write_job(1, extra);
	id = submit_as_nobody();
	if (when == WHILE_RUNNING) {
		wait_running(id);
	} else {
		st = status(id);
		cr_assert_str_eq(state_of(st), "queued");
		json_decref(st);
	}
	swap_for_link(train, sec, hard);
	swap_for_link(test, sec, hard);
	if (when == ACROSS_A_KILL) {
		stop_daemon(SIGKILL);
		(void)processes_after(3000);
		start_daemon();
	}
	if (first > 0)
		json_decref(wait_end(first, 200));
	st = wait_end(id, 200);
	cr_assert_str_eq(state_of(st), "done", "%s",
			 json_string_value(json_object_get(st, "error")));
	cr_assert_gt(json_number_value(json_object_get(st, "test_accuracy")),
		     0.9, "it trained on what was submitted");
	json_decref(st);
	snprintf(ids, sizeof ids, "%lld", (long long)id);
	cr_assert_eq(ctl(&r, 20, "status", ids, NULL, NULL), 0, "%s", r.err);
	cr_assert_null(strstr(r.out, SECRET), "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 20, "events", ids, NULL, NULL), 0, "%s", r.err);
	cr_assert_null(strstr(r.out, SECRET), "%s", r.out);
	pxrun_free(&r);
	stop_daemon(SIGTERM);
	cr_assert(!file_has(jt.log, SECRET), "the daemon's log has it");
	{
		char wal[700];

		snprintf(wal, sizeof wal, "%s-wal", jt.db);
		cr_assert(!file_has(jt.db, SECRET) && !file_has(wal, SECRET),
			  "the store has it");
	}
	snprintf(jobs, sizeof jobs, "%s.jobs", jt.db);
	cr_assert(!tree_has(jobs, SECRET), "the job's folder has it");
	/* an ended job's copies are gone */
	{
		char in[800];
		struct stat sb;

		snprintf(in, sizeof in, "%s/%lld/in", jobs, (long long)id);
		cr_assert_neq(stat(in, &sb), 0, "%s is left", in);
	}
	cr_assert_eq(processes_after(3000), 0, "trainer processes left");
}

Test(jobs_rights, a_symlink_swapped_in_while_queued_is_not_read)
{
	swapped(WHILE_QUEUED, false);
}

Test(jobs_rights, a_hard_link_swapped_in_while_running_is_not_read)
{
	swapped(WHILE_RUNNING, true);
}

/* (queued too: the next life starts it from its copies) */
Test(jobs_rights, a_swap_across_a_kill_9_is_not_read_by_the_next_life)
{
	swapped(ACROSS_A_KILL, false);
}

/* The daemon's descriptor of path (its pid's /proc/PID/fd), or -1. */
static int daemon_fd_of(const char *path)
{
	char dir[64], link[400], to[4096];
	DIR *d;
	struct dirent *e;
	int fd = -1;

	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)jt.pid);
	d = opendir(dir);
	while (d && fd < 0 && (e = readdir(d))) {
		ssize_t n;

		snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
		n = readlink(link, to, sizeof to - 1);
		if (n <= 0)
			continue;
		to[n] = '\0';
		if (!strcmp(to, path))
			fd = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return fd;
}

/* The spec in jt.job sent to the socket as uid would send it by hand,
 * with no proteusctl to look at its paths first: the daemon's reply. */
static json_t *raw_submit_as(uid_t uid)
{
	int pv[2], st;
	char reply[65536];
	ssize_t n, got = 0;
	json_error_t je;
	json_t *o;
	pid_t pid;

	cr_assert_eq(pipe(pv), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		json_t *spec = json_load_file(jt.job, 0, &je);
		json_t *req = json_pack("{s:i, s:s, s:s, s:o}", "v", 1, "cmd",
					"submit", "file", "job.json", "spec",
					spec);
		char *line = req ? json_dumps(req, JSON_COMPACT) : NULL;
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		gid_t none[1] = {0};
		FILE *f;
		char buf[65536];

		snprintf(a.sun_path, sizeof a.sun_path, "%s", jt.sock);
		if (!line) _exit(120);
		if (fd < 0 || setgroups(0, none) || setgid(0) ||
		    setuid(uid))
			_exit(126);
		if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
			_exit(errno);
		f = fdopen(fd, "r+");
		if (!f || fprintf(f, "%s\n", line) < 0 || fflush(f) ||
		    !fgets(buf, sizeof buf, f))
			_exit(125);
		if (write(pv[1], buf, strlen(buf)) < 0)
			_exit(124);
		_exit(0);
	}
	close(pv[1]);
	while ((n = read(pv[0], reply + got, sizeof reply - 1 - got)) > 0)
		got += n;
	close(pv[0]);
	reply[got > 0 ? got : 0] = '\0';
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "raw submit: %d",
		  st);
	o = json_loads(reply, 0, &je);
	cr_assert_not_null(o, "%s: %s", je.text, reply);
	return o;
}

/* A spec whose on-demand prices, trace or training data (field 0, 1,
 * 2) are `path`: refused at submit, the error saying why (want; NULL:
 * any refusal, for a name that may not exist); sent by hand as root and
 * as nobody, and nothing stored. */
static void refused(const char *path, int field, const char *want)
{
	static const uid_t who[] = { 0, NOBODY };
	char extra[1600];

	if (field == 0)
		snprintf(extra, sizeof extra, "{\"world\": {\"name\": "
			 "\"local\", \"start\": \"2016-03-02\", "
			 "\"ondemand_prices\": \"%s\"}}", path);
	else if (field == 1)
		snprintf(extra, sizeof extra, "{\"world\": {\"name\": "
			 "\"local\", \"trace\": \"%s\"}}", path);
	else
		snprintf(extra, sizeof extra, "{\"trainer\": {\"model\": "
			 "\"mlr\", \"data\": {\"format\": \"libsvm\", "
			 "\"train\": \"%s\", \"test\": \"%s\"}}}", path, path);
	write_job(1, extra);
	cr_assert_eq(chmod(jt.job, 0644), 0);
	cr_assert_eq(chmod(jt.tmp, 0755), 0);   /* the socket's folder */
	for (int i = 0; i < 2; i++) {
		json_t *o = raw_submit_as(who[i]);
		const char *e = json_string_value(json_object_get(o, "error"));

		cr_assert(json_is_false(json_object_get(o, "ok")) && e,
			  "uid %d, %s: taken", (int)who[i], path);
		/* (nobody may be stopped sooner: a folder it cannot
		 * search) */
		cr_assert(!want || strstr(e, want) ||
			  (who[i] && strstr(e, "ermission denied")),
			  "uid %d, %s: want '%s' in %s", (int)who[i], path,
			  want, e);
		json_decref(o);
	}
}

/* The books of job id as report gives them: its cost. */
static double reported_cost(int64_t id)
{
	char ids[24];
	struct pxrun r;
	json_error_t je;
	json_t *o;
	double cost;

	snprintf(ids, sizeof ids, "%lld", (long long)id);
	cr_assert_eq(ctl(&r, 30, "report", ids, "--json", NULL), 0, "%s",
		     r.err);
	o = json_loads(r.out, 0, &je);
	cr_assert_not_null(o, "%s: %s", je.text, r.out);
	cost = json_number_value(json_object_get(o, "cost_usd"));
	json_decref(o);
	pxrun_free(&r);
	return cost;
}

Test(jobs_rights, the_daemons_own_files_are_refused_and_the_books_survive)
{
	char p[4200], jobs[700], wal[700], hl[700], sym[700], bind[700];
	char *trace = px_src_path("docs/examples/traces/"
				  "us-east-1_2016-03-01_7d_linux.json.gz");
	int dbfd, walfd;
	double cost;
	struct pxrun r;
	json_t *st;
	int64_t id;

	if (geteuid() != 0)
		cr_skip_test("needs root to act as another user");
	daemon_up();
	write_job(1, "");
	id = submit();
	st = wait_end(id, 200);
	cr_assert_str_eq(state_of(st), "done");
	json_decref(st);
	cost = reported_cost(id);
	cr_assert_gt(cost, 0.0);
	snprintf(wal, sizeof wal, "%s-wal", jt.db);
	dbfd = daemon_fd_of(jt.db);
	walfd = daemon_fd_of(wal);
	cr_assert_geq(dbfd, 0, "the daemon holds %s open", jt.db);
	/* its descriptors by every name of them */
	for (int fd = 3; fd < 40; fd++) {
		snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
		refused(p, fd % 3, fd == dbfd || fd == walfd ?
			"a link into a process's" : NULL);
	}
	snprintf(p, sizeof p, "/dev/fd/%d", dbfd);
	refused(p, 0, "a link into a process's");
	snprintf(p, sizeof p, "/proc/%d/fd/%d", (int)jt.pid, dbfd);
	refused(p, 2, "a link into a process's");
	snprintf(p, sizeof p, "/proc/self/root%s", jt.db);
	refused(p, 1, "a link into a process's");
	/* its own files by another name */
	snprintf(hl, sizeof hl, "%s/db.link", jt.tmp);
	cr_assert_eq(link(jt.db, hl), 0);
	refused(hl, 1, "one of the daemon's own files");
	snprintf(sym, sizeof sym, "%s/wal.sym", jt.tmp);
	cr_assert_eq(symlink(wal, sym), 0);
	refused(sym, 2, "one of the daemon's own files");
	snprintf(jobs, sizeof jobs, "%s.jobs/%lld/trainer.log", jt.db,
		 (long long)id);
	refused(jobs, 0, "one of the daemon's own files");
	snprintf(bind, sizeof bind, "%s/bind", jt.tmp);
	cr_assert_eq(mkdir(bind, 0755), 0);
	snprintf(jobs, sizeof jobs, "%s.jobs", jt.db);
	if (mount(jobs, bind, NULL, MS_BIND, NULL) == 0) {
		snprintf(p, sizeof p, "%s/%lld/trainer.log", bind,
			 (long long)id);
		refused(p, 2, "one of the daemon's own files");
		cr_assert_eq(umount(bind), 0);
	} else {
		cr_log_warn("no bind mount here (%s): that case not run",
			    strerror(errno));
	}
	/* the sequence that once lost a done job's books: an import by
	 * another process, the report, a kill -9, the report again */
	{
		const char *argv[] = { "proteusctl", "--db", jt.db, "market",
				       "import", trace, NULL };

		cr_assert_eq(pxrun(&r, 60, "proteusctl", argv), 0);
		cr_assert_eq(r.status, 0, "%s", r.err);
		pxrun_free(&r);
	}
	cr_assert_float_eq(reported_cost(id), cost, 1e-9);
	stop_daemon(SIGKILL);
	start_daemon();
	cr_assert_float_eq(reported_cost(id), cost, 1e-9);
	/* and none of the refused ones was stored */
	cr_assert_eq(sql_int("SELECT count(*) FROM jobs"), 1);
	free(trace);
}

/* sha256sum of path, hex (65 bytes). */
static void sha256_of(const char *path, char *hex)
{
	char cmd[800];
	FILE *p;

	snprintf(cmd, sizeof cmd, "sha256sum '%s'", path);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	cr_assert_eq(fscanf(p, "%64s", hex), 1);
	pclose(p);
}

/* A file:// URL is a file of this host like a path: read with the
 * submitter's rights, checked at submit, copied; a root-only one is
 * refused without a word of it (nor its SHA-256), and the user's own
 * runs, swapped or not. */
Test(jobs_rights, a_file_url_is_read_with_the_submitters_rights)
{
	char train[700], test[700], sec[700], extra[2000], hex[65], shex[65],
	     bad[65], ids[24];
	struct pxrun r;
	json_t *st;
	int64_t id;

	own_data(train, test, sec);
	sha256_of(train, hex);
	sha256_of(sec, shex);
	memset(bad, 'a', 64);
	bad[64] = '\0';
	daemon_up();
	/* root's secret by URL, with a wrong SHA-256 and with the right one */
	for (int i = 0; i < 2; i++) {
		snprintf(extra, sizeof extra, "{\"trainer\": {\"model\": "
			 "\"mlr\", \"epochs\": 5, \"batch\": 32, \"data\": "
			 "{\"train\": \"file://%s\", \"train_sha256\": \"%s\", "
			 "\"test\": \"%s\", \"format\": \"libsvm\"}}}", sec,
			 i ? shex : bad, test);
		write_job(1, extra);
		cr_assert_eq(chmod(jt.job, 0644), 0);
		cr_assert_neq(ctl_as(&r, 60, NOBODY, "submit", jt.job, NULL,
				     NULL), 0, "taken: %s", r.out);
		cr_assert(strstr(r.err, "ermission denied"), "%s", r.err);
		cr_assert(!strstr(r.err, shex) && !strstr(r.err, SECRET),
			  "%s", r.err);
		pxrun_free(&r);
	}
	cr_assert_eq(sql_int("SELECT count(*) FROM jobs"), 0);
	/* the user's own file by URL: taken, swapped after, trained on */
	snprintf(extra, sizeof extra, "{\"trainer\": {\"model\": \"mlr\", "
		 "\"epochs\": 5, \"batch\": 32, \"data\": {\"train\": "
		 "\"file://%s\", \"train_sha256\": \"%s\", \"test\": \"%s\"}}}",
		 train, hex, test);
	write_job(1, extra);
	id = submit_as_nobody();
	swap_for_link(train, sec, false);
	st = wait_end(id, 200);
	cr_assert_str_eq(state_of(st), "done", "%s",
			 json_string_value(json_object_get(st, "error")));
	json_decref(st);
	snprintf(ids, sizeof ids, "%lld", (long long)id);
	cr_assert_eq(ctl(&r, 20, "events", ids, NULL, NULL), 0, "%s", r.err);
	cr_assert(!strstr(r.out, SECRET) && !strstr(r.out, shex), "%s",
		  r.out);
	pxrun_free(&r);
}
