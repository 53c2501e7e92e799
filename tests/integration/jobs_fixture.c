/* jobs_fixture.c -- a real proteusd for the jobs tests (test_jobs.c,
 * test_jobs_books.c): a private temp dir, config, socket and database,
 * the daemon started and stopped, proteusctl run against it, the shipped
 * local example job written with changes, the store read back, and the
 * trainer processes the daemon started found and counted. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <grp.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "../../common/px.h"
#include "jobs_fixture.h"

struct jobs_fixture jt;

void jobs_fixture_setup(void)
{
	jt.tmp = px_tmpdir();
	cr_assert_not_null(jt.tmp);
	cr_assert(asprintf(&jt.conf, "%s/p.conf", jt.tmp) > 0);
	cr_assert(asprintf(&jt.sock, "%s/p.sock", jt.tmp) > 0);
	cr_assert(asprintf(&jt.db, "%s/p.db", jt.tmp) > 0);
	cr_assert(asprintf(&jt.log, "%s/log", jt.tmp) > 0);
	cr_assert(asprintf(&jt.job, "%s/job.json", jt.tmp) > 0);
}

/* Call fn (may be NULL) for each process whose command line holds a and
 * b (NULL: a alone); how many there were. */
int each_argv(const char *a, const char *b, void (*fn)(pid_t pid, void *ctx),
	      void *ctx)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d))) {
		char path[300], buf[65536];
		size_t k;
		FILE *f;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		k = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		for (size_t i = 0; i < k; i++)
			if (!buf[i])
				buf[i] = ' ';
		buf[k] = 0;
		if (strstr(buf, a) && (!b || strstr(buf, b))) {
			n++;
			if (fn)
				fn((pid_t)atol(e->d_name), ctx);
		}
	}
	closedir(d);
	return n;
}

/* Call fn for each trainer process whose command line names our temp
 * dir; how many there were. */
int each_ours(void (*fn)(pid_t pid, void *ctx), void *ctx)
{
	return each_argv("proteus-trainer", jt.tmp, fn, ctx);
}

int our_processes(void)
{
	return each_ours(NULL, NULL);
}

/* Process groups of our trainer processes (a node and the roles it
 * forks share one; the coordinator has its own). */
struct groups {
	long v[512];
	int n;
};

static void add_group(pid_t pid, void *ctx)
{
	struct groups *g = ctx;
	char path[64], buf[1024], *rp;
	long pgrp;
	size_t k;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	f = fopen(path, "r");
	if (!f)
		return;
	k = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[k] = 0;
	rp = strrchr(buf, ')');   /* "pid (comm) S ppid pgrp" */
	if (!rp || sscanf(rp + 2, "%*c %*d %ld", &pgrp) != 1)
		return;
	for (int i = 0; i < g->n; i++)
		if (g->v[i] == pgrp)
			return;
	if (g->n < 512)
		g->v[g->n++] = pgrp;
}

int our_groups(void)
{
	struct groups g = { .n = 0 };

	each_ours(add_group, &g);
	return g.n;
}

void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Processes die with the daemon (each node watches its parent): wait a
 * little for the kernel to deliver that. */
int processes_after(int ms)
{
	int n = our_processes();

	for (int i = 0; i < ms / 50 && n; i++) {
		sleep_ms(50);
		n = our_processes();
	}
	return n;
}

/* Whether the daemon is still up, else how it ended, and the end of its
 * log: for the messages of assertions on what it answers, so that a
 * daemon gone between two commands says why (exit status or signal). */
const char *daemon_said(void)
{
	static char buf[3072];
	int st, n = 0;
	pid_t p = jt.pid > 0 ? waitpid(jt.pid, &st, WNOHANG) : -1;
	FILE *f;

	if (p == 0)
		n = snprintf(buf, sizeof buf, "proteusd %d running", jt.pid);
	else if (p == jt.pid && WIFEXITED(st))
		n = snprintf(buf, sizeof buf, "proteusd exited %d",
			     WEXITSTATUS(st));
	else if (p == jt.pid && WIFSIGNALED(st))
		n = snprintf(buf, sizeof buf, "proteusd killed by signal %d",
			     WTERMSIG(st));
	else
		n = snprintf(buf, sizeof buf, "proteusd: no status");
	if (p == jt.pid)
		jt.pid = 0;      /* reaped here */
	f = fopen(jt.log, "r");
	if (f) {
		long size;
		size_t got;

		fseek(f, 0, SEEK_END);
		size = ftell(f);
		fseek(f, size > 2048 ? size - 2048 : 0, SEEK_SET);
		n += snprintf(buf + n, sizeof buf - (size_t)n,
			      "; log (%ld bytes) ends:\n", size);
		got = fread(buf + n, 1, sizeof buf - (size_t)n - 1, f);
		buf[(size_t)n + got] = '\0';
		fclose(f);
	}
	return buf;
}

/* The daemon's log, whole (NUL-terminated, malloc'd). */
char *daemon_log(void)
{
	char *buf = NULL;
	size_t n = 0;
	struct px_error e = {0};

	cr_assert_eq(px_read_file(jt.log, 64 << 20, &buf, &n, &e), PX_OK, "%s",
		     e.msg);
	return buf;
}

void stop_daemon(int sig)
{
	if (jt.pid > 0) {
		kill(jt.pid, sig);
		waitpid(jt.pid, NULL, 0);
		jt.pid = 0;
	}
}

void jobs_fixture_teardown(void)
{
	stop_daemon(SIGKILL);
	(void)processes_after(2000);
	if (!getenv("PX_KEEP_TMP"))
		px_rmtree(jt.tmp);
	else
		fprintf(stderr, "kept %s\n", jt.tmp);
	free(jt.tmp);
	free(jt.conf);
	free(jt.sock);
	free(jt.db);
	free(jt.log);
	free(jt.job);
}

int ctl(struct pxrun *r, int timeout_s, const char *a1,
	       const char *a2, const char *a3, const char *a4)
{
	const char *argv[] = { "proteusctl", "--socket", jt.sock, a1, a2, a3,
			       a4, NULL };

	cr_assert_eq(pxrun(r, timeout_s, "proteusctl", argv), 0);
	return r->status;
}

/* Start proteusd; fsize > 0: with that RLIMIT_FSIZE (a full disk: writes
 * past it fail with EFBIG). */
void start_daemon_limited(rlim_t fsize)
{
	const char *build = getenv("PX_BUILD");
	char path[4096];
	char *argv[] = { "proteusd", "--config", jt.conf, NULL };
	struct pxrun r;
	int fd;

	snprintf(path, sizeof path, "%s/proteusd", build ? build : "build");
	fd = open(jt.log, O_WRONLY | O_CREAT | O_APPEND, 0644);
	cr_assert_geq(fd, 0);
	jt.pid = fork();
	cr_assert_geq(jt.pid, 0);
	if (jt.pid == 0) {
		struct rlimit rl = { fsize, fsize };

		if (fsize && setrlimit(RLIMIT_FSIZE, &rl))
			_exit(127);
		dup2(fd, 1);
		dup2(fd, 2);
		close(0);
		(void)open("/dev/null", O_RDONLY);
		execv(path, argv);
		_exit(127);
	}
	close(fd);
	for (int i = 0; i < 100; i++) {
		int rc = ctl(&r, 5, "ping", NULL, NULL, NULL);

		pxrun_free(&r);
		if (rc == 0)
			return;
		sleep_ms(50);
	}
	cr_assert_fail("proteusd did not answer");
}

void start_daemon(void)
{
	start_daemon_limited(0);
}

static const char *const fmnist_files[] = {
	"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
	"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
};

/* src's content again at dst, gzip'd in stored blocks (level 0); 0 on
 * success. */
static int gz_restore(const char *src, const char *dst)
{
	gzFile in = gzopen(src, "rb"), out = gzopen(dst, "wb0");
	static char buf[1 << 16];
	int n = 0, bad = !in || !out;

	while (!bad && (n = gzread(in, buf, sizeof buf)) > 0)
		bad = gzwrite(out, buf, (unsigned)n) != n;
	bad |= n < 0;
	if (in)
		gzclose(in);
	if (out)
		bad |= gzclose(out) != Z_OK;
	return bad || chmod(dst, 0644) ? -1 : 0;
}

/* dir (ours, not a link) holds the four files. */
static bool fmnist_ready(const char *dir)
{
	struct stat sb;
	char path[300];

	if (lstat(dir, &sb) || !S_ISDIR(sb.st_mode) || sb.st_uid != geteuid())
		return false;
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, fmnist_files[i]);
		if (access(path, R_OK))
			return false;
	}
	return true;
}

/* Fashion-MNIST as the jobs tests' daemons read it: the shipped files'
 * content in gzip's stored blocks, made once per host and user.  Every
 * worker's start reads the whole training set, and inflating the shipped
 * 26 MB took 0.25 s of CPU of each of the hundreds a run starts (the same
 * bytes, through the same gzip reader); NULL (the daemon's default) where
 * it cannot be made. */
static const char *fmnist_stored(void)
{
	static char dir[64];
	char tmp[80], src[300], dst[300];
	bool ok;

	snprintf(dir, sizeof dir, "/tmp/proteus-test-fmnist.%u",
		 (unsigned)geteuid());
	if (fmnist_ready(dir))
		return dir;
	snprintf(tmp, sizeof tmp, "%s.XXXXXX", dir);
	if (!mkdtemp(tmp))
		return NULL;
	ok = chmod(tmp, 0755) == 0;
	for (size_t i = 0; ok && i < 4; i++) {
		snprintf(src, sizeof src, "/usr/share/datasets/fashion-mnist/%s",
			 fmnist_files[i]);
		snprintf(dst, sizeof dst, "%s/%s", tmp, fmnist_files[i]);
		ok = gz_restore(src, dst) == 0;
	}
	/* another test may have made it meanwhile: its copy stays */
	if (!ok || rename(tmp, dir)) {
		for (size_t i = 0; i < 4; i++) {
			snprintf(dst, sizeof dst, "%s/%s", tmp,
				 fmnist_files[i]);
			(void)unlink(dst);
		}
		(void)rmdir(tmp);
	}
	return fmnist_ready(dir) ? dir : NULL;
}

const char *data_dir_line(void)
{
	static char line[96];
	const char *dir = fmnist_stored();

	snprintf(line, sizeof line, "%s%s%s", dir ? "data_dir " : "",
		 dir ? dir : "", dir ? "\n" : "");
	return line;
}

/* Config with the daemon's defaults but our paths (the shipped trace and
 * prices are found beside build/) and the stored Fashion-MNIST (unless
 * more names a data_dir). */
void daemon_up(void)
{
	daemon_up_with("");
}

void write_conf(const char *more)
{
	FILE *f = fopen(jt.conf, "w");

	cr_assert_not_null(f);
	fprintf(f, "db %s\ncontrol_socket %s\nlog_level info\n%s%s", jt.db,
		jt.sock, strstr(more, "data_dir ") ? "" : data_dir_line(),
		more);
	fclose(f);
}

void daemon_up_with(const char *more)
{
	write_conf(more);
	start_daemon();
}

/* The shipped example with the epochs set, not exploring its scaling;
 * "" extra, or more fields. */
void write_job(int epochs, const char *extra)
{
	char *src = px_src_path("docs/examples/job-local-mlr.json");
	json_error_t je;
	json_t *j = json_load_file(src, 0, &je), *x;

	cr_assert_not_null(j, "%s", je.text);
	json_object_set_new(json_object_get(j, "trainer"), "epochs",
			    json_integer(epochs));
	/* a fixed fleet from the start: the tests of books, notices and
	 * evictions want BidBrain's spot instances at once, not after an
	 * exploration of the scaling (docs/controller.md) that this host's
	 * flat MLR scaling would end at one or two; jobs_scaling turns it
	 * on in extra */
	json_object_set_new(j, "scaling_explore", json_false());
	if (extra && *extra) {
		x = json_loads(extra, 0, &je);
		cr_assert_not_null(x, "%s", je.text);
		json_object_update(j, x);
		json_decref(x);
	}
	cr_assert_eq(json_dump_file(j, jt.job, 0), 0);
	json_decref(j);
	free(src);
}

int64_t submit(void)
{
	struct pxrun r;
	int64_t id;

	cr_assert_eq(ctl(&r, 10, "submit", jt.job, NULL, NULL), 0, "%s",
		     r.err);
	id = strtoll(r.out, NULL, 10);
	cr_assert_gt(id, 0, "submit printed '%s'", r.out);
	pxrun_free(&r);
	return id;
}

json_t *status_with(int64_t id, void (*check)(const char *out))
{
	char ids[24];
	struct pxrun r;
	json_error_t je;
	json_t *o;

	snprintf(ids, sizeof ids, "%lld", (long long)id);
	cr_assert_eq(ctl(&r, 10, "status", ids, "--json", NULL), 0, "%s; %s",
		     r.err, daemon_said());
	if (check)
		check(r.out);
	o = json_loads(r.out, 0, &je);
	cr_assert_not_null(o, "%s: %s", je.text, r.out);
	pxrun_free(&r);
	return o;
}

json_t *status(int64_t id)
{
	return status_with(id, NULL);
}

char *daemon_without_data(void)
{
	char *empty;
	FILE *f;

	cr_assert(asprintf(&empty, "%s/nodata", jt.tmp) > 0);
	cr_assert_eq(mkdir(empty, 0700), 0);
	f = fopen(jt.conf, "w");
	cr_assert_not_null(f);
	fprintf(f, "db %s\ncontrol_socket %s\ndata_dir %s\n", jt.db,
		jt.sock, empty);
	fclose(f);
	start_daemon();
	return empty;
}

const char *state_of(json_t *o)
{
	return json_string_value(json_object_get(o, "state"));
}

/* The first column of q's first row on the store, read-only: as an
 * integer into *iv, as text (a copy) into *tv; either may be NULL.  Left
 * as they were where there is no row (and *tv where the value is
 * NULL). */
static void sql_first(const char *q, int64_t *iv, char **tv)
{
	sqlite3 *db;
	sqlite3_stmt *s;

	cr_assert_eq(sqlite3_open_v2(jt.db, &db, SQLITE_OPEN_READONLY, NULL),
		     SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	cr_assert_eq(sqlite3_prepare_v2(db, q, -1, &s, NULL), SQLITE_OK,
		     "%s: %s", q, sqlite3_errmsg(db));
	if (sqlite3_step(s) == SQLITE_ROW) {
		if (iv)
			*iv = sqlite3_column_int64(s, 0);
		if (tv && sqlite3_column_text(s, 0))
			*tv = strdup((const char *)sqlite3_column_text(s, 0));
	}
	sqlite3_finalize(s);
	sqlite3_close(db);
}

int64_t sql_int(const char *q)
{
	int64_t v = -1;

	sql_first(q, &v, NULL);
	return v;
}

char *sql_text(const char *q)
{
	char *v = NULL;

	sql_first(q, NULL, &v);
	return v ? v : strdup("");
}

/* Run q on the store (the daemon stopped, or between its writes). */
void sql_exec(const char *q)
{
	char *msg = NULL;
	sqlite3 *db;
	int rc;

	cr_assert_eq(sqlite3_open_v2(jt.db, &db, SQLITE_OPEN_READWRITE, NULL),
		     SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	rc = sqlite3_exec(db, q, NULL, NULL, &msg);
	cr_assert_eq(rc, SQLITE_OK, "%s: %s", q, msg ? msg : "?");
	sqlite3_free(msg);
	sqlite3_close(db);
}

/* The money of job id adds up: the cost status reports is the ledger's
 * sum, every instance is closed and charged by exactly one line. */
void check_books(int64_t id, json_t *st)
{
	char q[512];
	int64_t sum, open, lines, inst, dup;

	snprintf(q, sizeof q, "SELECT coalesce(sum(amount_uusd), 0) FROM "
		 "ledger WHERE job_id = %lld", (long long)id);
	sum = sql_int(q);
	cr_assert_float_eq(json_number_value(json_object_get(st, "cost_usd")),
			   (double)sum / 1e6, 1e-6);
	snprintf(q, sizeof q, "SELECT count(*) FROM instances i JOIN "
		 "allocations a ON a.id = i.alloc_id WHERE a.job_id = %lld "
		 "AND i.end_us IS NULL", (long long)id);
	open = sql_int(q);
	cr_assert_eq(open, 0, "%lld instances never closed", (long long)open);
	snprintf(q, sizeof q, "SELECT count(*) FROM instances i JOIN "
		 "allocations a ON a.id = i.alloc_id WHERE a.job_id = %lld",
		 (long long)id);
	inst = sql_int(q);
	snprintf(q, sizeof q, "SELECT count(*) FROM ledger WHERE job_id = "
		 "%lld AND instance_id IS NOT NULL", (long long)id);
	lines = sql_int(q);
	cr_assert_gt(inst, 0);
	cr_assert_eq(lines, inst, "%lld instances, %lld ledger lines",
		     (long long)inst, (long long)lines);
	snprintf(q, sizeof q, "SELECT count(*) FROM (SELECT instance_id FROM "
		 "ledger WHERE job_id = %lld AND instance_id IS NOT NULL "
		 "GROUP BY instance_id HAVING "
		 "count(*) > 1)", (long long)id);
	dup = sql_int(q);
	cr_assert_eq(dup, 0, "an instance charged twice");
	/* an instance let go while it was asked for has no line until it
	 * launches (a late launch is billed on its own line) */
	snprintf(q, sizeof q, "SELECT count(*) FROM ledger WHERE job_id = "
		 "%lld AND instance_id IS NULL AND amount_uusd = 0",
		 (long long)id);
	cr_assert_eq(sql_int(q), 0, "a $0 line of no instance");
}

/* Every status is a proteusctl run, about 12 ms of CPU: 10 a second
 * through a minute's job took a tenth of a core from the test beside it.
 * A wait asks every 100 ms for its first 2 s (the short jobs), then every
 * 300 ms (an end heard at most 0.2 s later); timeout_s counts the pauses
 * alone, as it always did (the asking is slower under load). */
json_t *wait_end(int64_t id, int timeout_s)
{
	for (int slept = 0; slept < timeout_s * 1000;) {
		json_t *o = status(id);
		const char *s = state_of(o);
		int pause = slept < 2000 ? 100 : 300;

		if (strcmp(s, "queued") && strcmp(s, "running"))
			return o;
		json_decref(o);
		sleep_ms(pause);
		slept += pause;
	}
	cr_assert_fail("job %lld did not end in %d s", (long long)id,
		       timeout_s);
	return NULL;
}

void cancel_job(int64_t id, int timeout_s)
{
	char ids[24];
	struct pxrun r;

	snprintf(ids, sizeof ids, "%lld", (long long)id);
	cr_assert_eq(ctl(&r, timeout_s, "cancel", ids, NULL, NULL), 0, "%s",
		     r.err);
	pxrun_free(&r);
}

/* A port nothing listens on now (the kernel's pick). */
int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0), p;

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	p = ntohs(a.sin_port);
	close(fd);
	return p;
}

/* Lines of the job's trainer log (its coordinator's words) holding
 * needle. */
int trainer_log_count(int64_t id, const char *needle)
{
	char path[4200];
	char *buf = NULL;
	size_t n;
	struct px_error e = {0};
	int k = 0;

	snprintf(path, sizeof path, "%s.jobs/%lld/trainer.log", jt.db,
		 (long long)id);
	if (px_read_file(path, 64 << 20, &buf, &n, &e) != PX_OK)
		return 0;
	for (char *p = buf; (p = strstr(p, needle)); p++)
		k++;
	free(buf);
	return k;
}

/* proteusctl as another user: the built one copied into tmp/bin (the
 * build folder may not be that user's to reach), run with uid and group
 * 0 (the 0660 socket's), no other groups; its exit status, its output
 * and errors in r. */
int ctl_as(struct pxrun *r, int timeout_s, uid_t uid, const char *a1,
	   const char *a2, const char *a3, const char *a4)
{
	char bin[4096], prog[4200], out[4200], errp[4200];
	size_t n;
	struct px_error e = {0};
	pid_t pid;
	int st = 0;
	time_t deadline = time(NULL) + timeout_s;

	snprintf(bin, sizeof bin, "%s/bin", jt.tmp);
	snprintf(prog, sizeof prog, "%s/proteusctl", bin);
	snprintf(out, sizeof out, "%s/ctl_as.out", jt.tmp);
	snprintf(errp, sizeof errp, "%s/ctl_as.err", jt.tmp);
	cr_assert_eq(chmod(jt.tmp, 0755), 0);
	if (access(prog, X_OK) != 0) {
		char *built, *text;
		size_t len;
		FILE *f;

		(void)mkdir(bin, 0755);
		cr_assert(asprintf(&built, "%s/proteusctl",
				   getenv("PX_BUILD")) > 0);
		cr_assert_eq(px_read_file(built, 1u << 30, &text, &len, &e),
			     PX_OK, "%s", e.msg);
		f = fopen(prog, "wb");
		cr_assert_not_null(f);
		cr_assert_eq(fwrite(text, 1, len, f), len);
		fclose(f);
		cr_assert_eq(chmod(prog, 0755), 0);
		free(text);
		free(built);
	}
	memset(r, 0, sizeof *r);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0666);
		int x = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
		gid_t none[1] = {0};

		if (o < 0 || x < 0 || dup2(o, 1) < 0 || dup2(x, 2) < 0 ||
		    setgroups(0, none) || setgid(0) || setuid(uid))
			_exit(126);
		execl(prog, "proteusctl", "--socket", jt.sock, a1, a2, a3, a4,
		      (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &st, WNOHANG) != pid) {
		if (time(NULL) > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		sleep_ms(20);
	}
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	cr_assert_eq(px_read_file(out, 1u << 24, &r->out, &n, &e), PX_OK);
	cr_assert_eq(px_read_file(errp, 1u << 24, &r->err, &n, &e), PX_OK);
	return r->status;
}

int64_t submit_as(uid_t uid)
{
	struct pxrun r;
	int64_t id;

	cr_assert_eq(ctl_as(&r, 60, uid, "submit", jt.job, NULL, NULL), 0,
		     "%s", r.err);
	id = strtoll(r.out, NULL, 10);
	cr_assert_gt(id, 0, "submit printed '%s'", r.out);
	pxrun_free(&r);
	return id;
}

int64_t events_like(int64_t id, const char *kind, const char *like)
{
	char q[600];

	snprintf(q, sizeof q, "SELECT count(*) FROM events WHERE job_id = %lld"
		 " AND kind = '%s' AND detail LIKE '%s'", (long long)id, kind,
		 like);
	return sql_int(q);
}

void write_flat_trace(int64_t t0, int days, int64_t spike_at,
		      int64_t spike_s)
{
	char path[700];
	FILE *f;

	snprintf(path, sizeof path, "%s/trace.json", jt.tmp);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("{\"SpotPriceHistory\": [", f);
	for (int64_t t = t0 - 3600, k = 0; t < t0 + days * 86400; t += 300, k++)
		fprintf(f, "%s{\"AvailabilityZone\": \"us-east-1a\", "
			"\"InstanceType\": \"m3.large\", \"ProductDescription\":"
			" \"Linux/UNIX\", \"SpotPrice\": \"%s\", \"Timestamp\": "
			"\"@%lld\"}", k ? ", " : "", t >= spike_at &&
			t < spike_at + spike_s ? "5.000000" : "0.020000",
			(long long)t);
	fputs("]}\n", f);
	fclose(f);
	cr_assert_eq(chmod(path, 0644), 0);
}

json_t *pool_json(void)
{
	struct pxrun r;
	json_error_t je;
	json_t *o;

	cr_assert_eq(ctl(&r, 10, "pool", "--json", NULL, NULL), 0, "%s",
		     r.err);
	o = json_loads(r.out, 0, &je);
	cr_assert_not_null(o, "pool --json: %s: %s", je.text, r.out);
	pxrun_free(&r);
	return o;
}

int64_t pool_used(json_t *p, const char *market)
{
	return json_integer_value(json_object_get(json_object_get(
		json_object_get(p, "used"), market), "total"));
}

json_t *pool_job(json_t *p, int64_t id)
{
	size_t i;
	json_t *x;

	json_array_foreach(json_object_get(p, "jobs"), i, x)
		if (json_integer_value(json_object_get(x, "job")) == id)
			return x;
	return NULL;
}
