/* test_cli_market.c -- proteusctl market import/show, end to end. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pxrun.h"

static char *tmp, *db;

static void setup(void)
{
	tmp = px_tmpdir();
	cr_assert_not_null(tmp);
	cr_assert(asprintf(&db, "%s/t.db", tmp) > 0);
}

static void teardown(void)
{
	px_rmtree(tmp);
	free(tmp);
	free(db);
}

/* Run proteusctl with up to 8 extra args after "--db DB" is appended. */
static int ctl(struct pxrun *r, const char *a1, const char *a2,
	       const char *a3, const char *a4, const char *a5)
{
	const char *argv[12] = {"proteusctl"};
	int n = 1;
	const char *in[] = {a1, a2, a3, a4, a5};

	for (int i = 0; i < 5 && in[i]; i++)
		argv[n++] = in[i];
	argv[n++] = "--db";
	argv[n++] = db;
	argv[n] = NULL;
	cr_assert_eq(pxrun(r, 60, "proteusctl", argv), 0, "spawn failed");
	return r->status;
}

static char *fixture(const char *name)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "tests/data/ctl/%s", name);
	return px_src_path(rel);
}

static json_t *show_json(const char *zone, const char *at)
{
	struct pxrun r;
	json_error_t je;
	json_t *j;

	cr_assert_eq(ctl(&r, "market", "--zone", zone, "--json",
			 at ? at : "--at=2016-03-01T03:30:00Z"), 0,
		     "show failed: %s", r.err);
	j = json_loads(r.out, 0, &je);
	cr_assert_not_null(j, "bad json: %s\n%s", je.text, r.out);
	pxrun_free(&r);
	return j;
}

TestSuite(cli_market, .init = setup, .fini = teardown, .timeout = 60);

Test(cli_market, import_and_show_time_weighted)
{
	char *small = fixture("small.json.gz"), *od = fixture("od.json");
	struct pxrun r;
	json_t *j, *m;

	cr_assert_eq(ctl(&r, "market", "import", small, NULL, NULL), 0,
		     "%s", r.err);
	cr_assert(strstr(r.out, "4 records, 4 new"), "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "import", "--ondemand", od, NULL), 0,
		     "%s", r.err);
	pxrun_free(&r);

	j = show_json("us-east-1a", NULL);
	cr_assert_eq(json_array_size(j), 1);
	m = json_array_get(j, 0);
	cr_assert_str_eq(json_string_value(json_object_get(m, "region")),
			 "us-east-1");
	cr_assert_str_eq(json_string_value(json_object_get(m, "type")),
			 "m3.medium");
	/* 0.01 for 1 h, 0.02 for 2 h, 0.10 for 1 h, then 0.01 (last) */
	cr_assert_float_eq(px_json_num(m, "price_usd"), 0.10, 1e-9);
	cr_assert_str_eq(json_string_value(json_object_get(m, "price_since")),
			 "2016-03-01T03:00:00Z");
	/* the price's time and its age at --at */
	cr_assert_str_eq(json_string_value(json_object_get(m, "price_time")),
			 "2016-03-01T03:00:00Z");
	cr_assert_eq(px_json_num(m, "price_age_s"), 1800);
	cr_assert_float_eq(px_json_num(m, "min_usd"), 0.01, 1e-9);
	cr_assert_float_eq(px_json_num(m, "median_usd"), 0.02, 1e-9);
	cr_assert_float_eq(px_json_num(m, "max_usd"), 0.10, 1e-9);
	cr_assert_float_eq(px_json_num(m, "ondemand_usd"), 0.067, 1e-9);
	cr_assert_float_eq(px_json_num(m, "above_ondemand_share"), 0.25, 1e-9);
	cr_assert_eq(px_json_num(m, "records"), 4);
	json_decref(j);

	/* before the first record there is no price in force */
	j = show_json("us-east-1a", "--at=2016-02-29T00:00:00Z");
	cr_assert(json_is_null(json_object_get(json_array_get(j, 0),
					       "price_usd")));
	json_decref(j);
	free(small);
	free(od);
}

Test(cli_market, newest_first_and_twice_stores_once)
{
	char *nf = fixture("newest-first.json");
	struct pxrun r;
	json_t *j;

	cr_assert_eq(ctl(&r, "market", "import", nf, NULL, NULL), 0, "%s",
		     r.err);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "import", nf, NULL, NULL), 0, "%s",
		     r.err);
	cr_assert(strstr(r.out, "2 records, 0 new"), "%s", r.out);
	pxrun_free(&r);
	j = show_json("us-east-1b", "--at=2016-03-01T01:00:00Z");
	cr_assert_eq(px_json_num(json_array_get(j, 0), "records"), 2);
	cr_assert_float_eq(px_json_num(json_array_get(j, 0), "price_usd"), 0.012,
			   1e-9);
	cr_assert(json_is_null(json_object_get(json_array_get(j, 0),
					       "ondemand_usd")));
	json_decref(j);
	free(nf);
}

Test(cli_market, bad_record_names_it_and_imports_nothing)
{
	char *small = fixture("small.json"), *bad = fixture("bad-price.json");
	struct pxrun r;
	json_t *j;

	cr_assert_eq(ctl(&r, "market", "import", small, NULL, NULL), 0);
	pxrun_free(&r);
	/* small.json again plus a bad file: all or nothing */
	cr_assert_eq(ctl(&r, "market", "import", bad, NULL, NULL), 3,
		     "status %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "bad-price.json"), "%s", r.err);
	cr_assert(strstr(r.err, "record 2"), "%s", r.err);
	cr_assert(strstr(r.err, "SpotPrice"), "%s", r.err);
	pxrun_free(&r);
	/* us-east-1c got nothing, us-east-1a still has its 4 records */
	cr_assert_eq(ctl(&r, "market", "--zone", "us-east-1c", NULL, NULL),
		     4);
	pxrun_free(&r);
	j = show_json("us-east-1a", NULL);
	cr_assert_eq(px_json_num(json_array_get(j, 0), "records"), 4);
	json_decref(j);
	free(small);
	free(bad);
}

Test(cli_market, truncated_gzip_is_an_error)
{
	char *tr = fixture("truncated.json.gz");
	struct pxrun r;

	cr_assert_eq(ctl(&r, "market", "import", tr, NULL, NULL), 3,
		     "status %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "truncated.json.gz"), "%s", r.err);
	cr_assert(strstr(r.err, "nothing was imported"), "%s", r.err);
	pxrun_free(&r);
	free(tr);
}

Test(cli_market, missing_file_and_usage)
{
	struct pxrun r;

	cr_assert_eq(ctl(&r, "market", "import", "/nonexistent/x.json", NULL,
			 NULL), 3);
	cr_assert(strstr(r.err, "/nonexistent/x.json"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "import", NULL, NULL, NULL), 2);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "--at", "yesterday", NULL, NULL), 2);
	cr_assert(strstr(r.err, "--at"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "--bogus", NULL, NULL, NULL), 2);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "frobnicate", NULL, NULL, NULL, NULL), 2);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "--help", NULL, NULL, NULL), 0);
	cr_assert(strstr(r.out, "usage: proteusctl market"), "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "import", "--help", NULL, NULL), 0);
	pxrun_free(&r);
}

Test(cli_market, shipped_trace_imports)
{
	char *tr = px_shared_path("traces/us-east-1_2021-03_2021-05_linux.json.gz");
	struct pxrun r;

	if (access(tr, R_OK))
		cr_skip("shared traces not present");
	cr_assert_eq(ctl(&r, "market", "import", tr, NULL, NULL), 0, "%s",
		     r.err);
	cr_assert(strstr(r.out, "30310 records, 30310 new"), "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "--type", "c4.xlarge", NULL, NULL), 0);
	cr_assert(strstr(r.out, "us-east-1f"), "%s", r.out);
	/* an old price says how old it is */
	cr_assert(strstr(r.out, "Z (") && strstr(r.out, " y ago)"), "%s",
		  r.out);
	pxrun_free(&r);
	free(tr);
}

/* ---- concurrency, read-only readers, missing databases ---- */

/* Start proteusctl argv (prog: that program; NULL: $PX_BUILD's) with
 * stdout to /dev/null and stderr to errpath; uid >= 0: as that user (the
 * test runs as root).  Returns the child's pid. */
static pid_t spawn_prog(const char *prog_path, const char *const *argv,
			const char *errpath, int uid)
{
	const char *build = getenv("PX_BUILD");
	char prog[512];
	pid_t pid;

	if (prog_path) {
		snprintf(prog, sizeof(prog), "%s", prog_path);
	} else {
		cr_assert_not_null(build, "PX_BUILD not set");
		snprintf(prog, sizeof(prog), "%s/proteusctl", build);
	}
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int o = open("/dev/null", O_WRONLY);
		int e = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(126);
		if (uid >= 0 && (setgroups(0, NULL) || setgid((gid_t)uid) ||
				 setuid((uid_t)uid)))
			_exit(125);
		execv(prog, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static pid_t spawn_ctl(const char *const *argv, const char *errpath,
		       int uid)
{
	return spawn_prog(NULL, argv, errpath, uid);
}

static int wait_status(pid_t pid)
{
	int ws;

	cr_assert_eq(waitpid(pid, &ws, 0), pid);
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

/* An import into a fresh database while other commands open it: each
 * opener makes or checks the schema in one transaction, so none sees the
 * tables of another before its schema version ("has tables but no
 * schema version").  Two imports both succeed; a show in between sees
 * the markets, or nothing yet (exit 4), never an error. */
Test(cli_market, concurrent_first_open_of_a_fresh_database)
{
	char *small = fixture("small.json"), *nf = fixture("newest-first.json");
	char e1[512], e2[512], e3[512];
	const char *imp1[] = {"proteusctl", "market", "import", "--db", db,
			      small, NULL};
	const char *imp2[] = {"proteusctl", "market", "import", "--db", db,
			      nf, NULL};
	const char *show[] = {"proteusctl", "market", "--db", db, NULL};

	snprintf(e1, sizeof(e1), "%s/e1", tmp);
	snprintf(e2, sizeof(e2), "%s/e2", tmp);
	snprintf(e3, sizeof(e3), "%s/e3", tmp);
	for (int round = 0; round < 25; round++) {
		char sfx[160];
		pid_t a, b, c;
		int sa, sb, sc;

		for (const char *const *x = (const char *const[]){
			     "", "-wal", "-shm", NULL};
		     *x; x++) {
			snprintf(sfx, sizeof(sfx), "%s%s", db, *x);
			unlink(sfx);
		}
		a = spawn_ctl(imp1, e1, -1);
		c = spawn_ctl(show, e3, -1);
		b = spawn_ctl(imp2, e2, -1);
		sa = wait_status(a);
		sb = wait_status(b);
		sc = wait_status(c);
		char *t1 = px_test_read_file(e1, NULL),
		     *t2 = px_test_read_file(e2, NULL),
		     *t3 = px_test_read_file(e3, NULL);

		cr_assert_not_null(t1, "%s", e1);
		cr_assert_not_null(t2, "%s", e2);
		cr_assert_not_null(t3, "%s", e3);
		cr_assert_eq(sa, 0, "round %d: import 1: %d: %s", round, sa,
			     t1);
		cr_assert_eq(sb, 0, "round %d: import 2: %d: %s", round, sb,
			     t2);
		cr_assert(sc == 0 || sc == 4, "round %d: show: %d: %s", round,
			  sc, t3);
		cr_assert_null(strstr(t3, "not a proteus store"), "%s", t3);
		free(t1);
		free(t2);
		free(t3);
	}
	free(small);
	free(nf);
}

/* Copy file src to dst with mode (a usable copy or the test fails). */
static void copy_file(const char *src, const char *dst, mode_t mode)
{
	char buf[65536];
	int in = open(src, O_RDONLY);
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL, mode);
	ssize_t n;

	cr_assert_geq(in, 0, "%s", src);
	cr_assert_geq(out, 0, "%s", dst);
	while ((n = read(in, buf, sizeof buf)) > 0)
		cr_assert_eq(write(out, buf, (size_t)n), n, "%s", dst);
	cr_assert_eq(n, 0, "%s", src);
	close(in);
	cr_assert_eq(fchmod(out, mode), 0);
	cr_assert_eq(close(out), 0, "%s", dst);
}

/* Whether uid may run prog and read path (asked as that user). */
static bool reachable_by(int uid, const char *prog, const char *path)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (setgroups(0, NULL) || setgid((gid_t)uid) ||
		    setuid((uid_t)uid))
			_exit(2);
		_exit(access(prog, X_OK) || access(path, R_OK) ? 1 : 0);
	}
	return wait_status(pid) == 0;
}

/* Reading needs no write access: a user who may read the database but
 * not write it or its folder (the shipped unit's group setup) can show
 * markets and history; nothing is created or changed.  That user runs a
 * copy of proteusctl in the test's own folder: the checkout's build/
 * may sit under a folder only root may enter. */
Test(cli_market, show_and_history_read_only_user)
{
	char *small = fixture("small.json");
	char dir[512], path[600], errp[512], bin[512], prog[600];
	const char *show[] = {"proteusctl", "market", "--db", path,
			      "--at=2016-03-01T03:30:00Z", NULL};
	const char *hist[] = {"proteusctl", "history", "--db", path, NULL};
	struct pxrun r;
	struct stat sb, sa;
	int uid = geteuid() == 0 ? 65534 : -1;
	char *t;
	int s;

	snprintf(dir, sizeof(dir), "%s/ro", tmp);
	snprintf(path, sizeof(path), "%s/p.db", dir);
	snprintf(errp, sizeof(errp), "%s/err", tmp);
	cr_assert_eq(mkdir(dir, 0755), 0);
	{
		const char *argv[] = {"proteusctl", "market", "import",
				      "--db", path, small, NULL};
		cr_assert_eq(pxrun(&r, 60, "proteusctl", argv), 0);
		cr_assert_eq(r.status, 0, "%s", r.err);
		pxrun_free(&r);
	}
	/* the WAL and -shm are gone after the last close */
	cr_assert_eq(chmod(path, 0444), 0);
	cr_assert_eq(chmod(dir, 0555), 0);
	cr_assert_eq(chmod(tmp, 0755), 0);
	cr_assert_eq(stat(path, &sb), 0);
	/* the program where that user can reach it */
	snprintf(bin, sizeof(bin), "%s/bin", tmp);
	snprintf(prog, sizeof(prog), "%s/proteusctl", bin);
	cr_assert_eq(mkdir(bin, 0755), 0);
	cr_assert_eq(chmod(bin, 0755), 0);
	{
		char *built;

		cr_assert_not_null(getenv("PX_BUILD"), "PX_BUILD not set");
		cr_assert(asprintf(&built, "%s/proteusctl",
				   getenv("PX_BUILD")) > 0);
		copy_file(built, prog, 0755);
		free(built);
	}
	if (uid >= 0 && !reachable_by(uid, prog, path)) {
		chmod(dir, 0755);
		free(small);
		cr_skip_test("uid %d cannot reach %s or %s (is %s closed to "
			"others?)", uid, prog, path, tmp);
	}

	s = wait_status(spawn_prog(prog, show, errp, uid));
	t = px_test_read_file(errp, NULL);
	cr_assert_not_null(t, "%s", errp);
	cr_assert_eq(s, 0, "show: status %d: %s", s, t);
	free(t);
	s = wait_status(spawn_prog(prog, hist, errp, uid));
	t = px_test_read_file(errp, NULL);
	cr_assert_not_null(t, "%s", errp);
	cr_assert_eq(s, 0, "history: status %d: %s", s, t);
	free(t);
	cr_assert_eq(stat(path, &sa), 0);
	cr_assert_eq(sa.st_mtime, sb.st_mtime, "the database was written");
	cr_assert_eq(sa.st_size, sb.st_size);
	chmod(dir, 0755);
	free(small);
}

/* Showing a database that does not exist creates nothing. */
Test(cli_market, show_missing_database_creates_nothing)
{
	struct pxrun r;

	cr_assert_eq(ctl(&r, "market", NULL, NULL, NULL, NULL), 4,
		     "status %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, db), "%s", r.err);
	cr_assert(strstr(r.err, "no such file"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_neq(access(db, F_OK), 0, "show created the database");
}

static char *write_tmp(const char *name, const char *text)
{
	char *path;
	FILE *f;

	cr_assert(asprintf(&path, "%s/%s", tmp, name) > 0);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

#define ONE_RECORD(price)                                                    \
	"{\"SpotPriceHistory\":[{\"AvailabilityZone\":\"us-east-1a\","     \
	"\"InstanceType\":\"m3.medium\",\"ProductDescription\":"           \
	"\"Linux/UNIX\",\"SpotPrice\":\"" price "\",\"Timestamp\":"        \
	"\"2016-03-01T00:00:00Z\"}]}"

/* One rule for two prices of one key: the same value twice is fine, a
 * different one is refused naming both, and nothing is imported. */
Test(cli_market, conflicting_prices_refused)
{
	char *a = write_tmp("a.json", ONE_RECORD("0.010000"));
	char *b = write_tmp("b.json", ONE_RECORD("0.020000"));
	char *o1 = write_tmp("o1.json", "{\"us-east-1\":{\"m3.medium\":0.067}}");
	char *o2 = write_tmp("o2.json", "{\"us-east-1\":{\"m3.medium\":0.07}}");
	struct pxrun r;
	json_t *j;

	cr_assert_eq(ctl(&r, "market", "import", a, a, NULL), 0, "%s", r.err);
	pxrun_free(&r);
	/* in one command and against what an earlier one stored */
	cr_assert_eq(ctl(&r, "market", "import", b, NULL, NULL), 3,
		     "status %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "b.json: record 0"), "%s", r.err);
	cr_assert(strstr(r.err, "0.020000"), "%s", r.err);
	cr_assert(strstr(r.err, "0.010000"), "%s", r.err);
	cr_assert(strstr(r.err, "nothing was imported"), "%s", r.err);
	pxrun_free(&r);
	j = show_json("us-east-1a", "--at=2016-03-01T01:00:00Z");
	cr_assert_float_eq(px_json_num(json_array_get(j, 0), "price_usd"), 0.01, 1e-9);
	json_decref(j);

	/* on-demand tables: the same in two files is fine; two different
	 * prices in one import are refused, naming both files */
	cr_assert_eq(ctl(&r, "market", "import", "--ondemand", o1, o1), 0,
		     "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, "market", "import", "--ondemand", o1, o2), 3,
		     "status %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "o2.json: us-east-1.m3.medium"), "%s", r.err);
	cr_assert(strstr(r.err, "o1.json"), "%s", r.err);
	pxrun_free(&r);
	j = show_json("us-east-1a", "--at=2016-03-01T01:00:00Z");
	cr_assert_float_eq(px_json_num(json_array_get(j, 0), "ondemand_usd"), 0.067,
			   1e-9);
	json_decref(j);
	/* a later table replaces an earlier one, and says so */
	cr_assert_eq(ctl(&r, "market", "import", "--ondemand", o2, NULL), 0,
		     "%s", r.err);
	cr_assert(strstr(r.out, "1 replacing a different price"), "%s", r.out);
	pxrun_free(&r);
	free(a);
	free(b);
	free(o1);
	free(o2);
}

/* Strings stored before the import checks (or by other means) never
 * reach the terminal raw: every table escapes them.  history --job
 * prints one readable line per event. */
Test(cli_market, stored_control_characters_are_escaped)
{
	char *small = fixture("small.json");
	struct pxrun r;
	sqlite3 *h = NULL;
	const char *argv[] = {"proteusctl", "history", "--db", db, "--job",
			      "1", NULL};

	cr_assert_eq(ctl(&r, "market", "import", small, NULL, NULL), 0, "%s",
		     r.err);
	pxrun_free(&r);
	cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(h,
		"INSERT INTO markets (region, zone, type, product) VALUES "
		"('us-east-1', 'us-east-1z', 'c4' || char(9) || 'x' || "
		"char(27) || '[2J', 'Linux/UNIX');"
		"INSERT INTO prices SELECT id, 1456790400, 10000 FROM markets "
		"WHERE zone = 'us-east-1z';"
		"INSERT INTO jobs (name, spec, state, created_us, updated_us) "
		"VALUES ('j' || char(10) || 'x', '{}', 'done', 1, 1);"
		"INSERT INTO events (job_id, at_us, kind, detail) VALUES "
		"(1, 1456790400000000, 'stage', "
		"'{\"stage\": \"bid\", \"n\": 3, \"why\": \"a\\u001bb\"}'), "
		"(1, 1456790401000000, 'warning', 'plain text');"
		"INSERT INTO events (job_id, at_us, kind, detail) VALUES "
		"(1, 1456790402000000, 'error', 'raw' || char(27) || '[2J');",
		NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
	sqlite3_close(h);

	cr_assert_eq(ctl(&r, "market", "--zone", "us-east-1z", NULL, NULL), 0,
		     "%s", r.err);
	cr_assert_null(strchr(r.out, 0x1b), "raw ESC: %s", r.out);
	cr_assert(strstr(r.out, "c4\\tx\\x1b[2J"), "%s", r.out);
	pxrun_free(&r);

	cr_assert_eq(pxrun(&r, 60, "proteusctl", argv), 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_null(strchr(r.out, 0x1b), "raw ESC: %s", r.out);
	cr_assert(strstr(r.out, "job 'j\\nx'"), "%s", r.out);
	cr_assert(strstr(r.out, "2016-03-01T00:00:00Z stage     stage=bid n=3 "
			 "why=a\\x1bb\n"), "%s", r.out);
	cr_assert(strstr(r.out, "2016-03-01T00:00:01Z warning   plain text\n"),
		  "%s", r.out);
	cr_assert(strstr(r.out, "2016-03-01T00:00:02Z error     raw\\x1b[2J\n"),
		  "%s", r.out);
	pxrun_free(&r);
	free(small);
}

#define REC_AT(price, time)                                                  \
	"{\"AvailabilityZone\":\"us-east-1a\",\"InstanceType\":\"m3.medium\"," \
	"\"ProductDescription\":\"Linux/UNIX\",\"SpotPrice\":\"" price "\","  \
	"\"Timestamp\":\"" time "\"}"

/* The 2016 and 2021 traces in one database: the years between them are
 * a gap, not the last 2016 price holding.  A price holds until the next
 * record, at most 7 days; the rest is excluded and reported. */
Test(cli_market, gap_between_traces_is_not_a_price)
{
	char *a = write_tmp("2016.json", "{\"SpotPriceHistory\":["
		REC_AT("0.01", "2016-03-01T00:00:00Z") ","
		REC_AT("0.02", "2016-03-01T01:00:00Z") "]}");
	char *b = write_tmp("2021.json", "{\"SpotPriceHistory\":["
		REC_AT("0.05", "2021-03-01T00:00:00Z") ","
		REC_AT("0.05", "2021-03-03T00:00:00Z") ","
		REC_AT("0.05", "2021-03-05T00:00:00Z") ","
		REC_AT("0.05", "2021-03-07T00:00:00Z") ","
		REC_AT("0.05", "2021-03-09T00:00:00Z") ","
		REC_AT("0.06", "2021-03-11T00:00:00Z") "]}");
	struct pxrun r;
	json_t *j, *m;

	cr_assert_eq(ctl(&r, "market", "import", a, b, NULL), 0, "%s", r.err);
	pxrun_free(&r);
	j = show_json("us-east-1a", "--at=2021-03-11T00:00:00Z");
	m = json_array_get(j, 0);
	/* 0.01 for 1 h, 0.02 for 7 d (then a gap), 0.05 for 10 d */
	cr_assert_float_eq(px_json_num(m, "median_usd"), 0.05, 1e-9);
	cr_assert_float_eq(px_json_num(m, "min_usd"), 0.01, 1e-9);
	cr_assert_float_eq(px_json_num(m, "max_usd"), 0.06, 1e-9);
	cr_assert_eq(px_json_num(m, "gaps"), 1);
	cr_assert_eq(px_json_num(m, "gap_s"), 1614556800 - 1456794000 - 7 * 86400);
	json_decref(j);
	cr_assert_eq(ctl(&r, "market", "--zone", "us-east-1a",
			 "--at=2021-03-11T00:00:00Z", NULL), 0, "%s", r.err);
	cr_assert(strstr(r.out, "(1 gap, 5 y without data, excluded)"), "%s",
		  r.out);
	pxrun_free(&r);
	free(a);
	free(b);
}
