/* test_jobs_pool.c -- several jobs, one pool, in a real proteusd
 * (docs/pool.md): on the local world under a small pool of vCPUs the
 * limits are never past, a job that comes late gets its share within a
 * lease, a reliable tier that does not fit waits whole, all finish with
 * books equal to the ledger, `pool`, `status` and /metrics say the
 * shares, and a kill -9 keeps the pool straight. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/px.h"
#include "jobs_fixture.h"

static void setup(void)
{
	jobs_fixture_setup();
}

static void teardown(void)
{
	stop_daemon(SIGTERM);
	jobs_fixture_teardown();
}

TestSuite(jobs_pool, .init = setup, .fini = teardown, .timeout = 240);

/* The pool in these tests: 8 spot and `od` on-demand vCPUs of the
 * standard group (m3.large, m1.large, r3.large: 2 vCPUs; m3.medium 1),
 * leases of 600 market s (2.5 s at the jobs' speedup 240). */
#define SPOT_VCPUS 8

/* The config lines of a pool of spot and od vCPUs (and /metrics on
 * metrics_port, 0: none) into more. */
static void pool_conf(char *more, size_t len, int spot, int od,
		      int metrics_port)
{
	snprintf(more, len, "pool_spot_vcpus standard=%d\n"
		 "pool_ondemand_vcpus standard=%d\npool_lease_seconds 600\n"
		 "max_jobs 4\n%s%d\n", spot, od,
		 metrics_port ? "metrics_listen 127.0.0.1:" : "# ",
		 metrics_port);
}

static void pool_daemon(int od, int metrics_port)
{
	char more[512];

	pool_conf(more, sizeof more, SPOT_VCPUS, od, metrics_port);
	daemon_up_with(more);
}

/* A job of the shipped example's, named, its epochs and most spot
 * instances set. */
static int64_t submit_job(const char *name, int epochs, int max_spot)
{
	char extra[256];

	snprintf(extra, sizeof extra, "{\"name\": \"%s\", \"spot\": "
		 "{\"types\": [\"m1.large\", \"m3.large\", \"m3.medium\", "
		 "\"r3.large\"], \"zones\": [\"us-east-1a\", \"us-east-1b\", "
		 "\"us-east-1c\"], \"max_instances\": %d}}", name, max_spot);
	write_job(epochs, extra);
	return submit();
}

/* One look at the pool: nothing past its limits, by the pool's count
 * and by the jobs' own; the pool's reply (the caller's). */
static json_t *look(int od)
{
	json_t *p = pool_json(), *x;
	int64_t spot = 0, ond = 0;
	size_t i;

	cr_assert_leq(pool_used(p, "spot_vcpus"), SPOT_VCPUS, "spot past the "
		      "pool: %s", json_dumps(p, 0));
	cr_assert_leq(pool_used(p, "ondemand_vcpus"), od, "on demand past the "
		      "pool: %s", json_dumps(p, 0));
	json_array_foreach(json_object_get(p, "jobs"), i, x) {
		spot += json_integer_value(json_object_get(x, "spot_vcpus"));
		ond += json_integer_value(json_object_get(x,
							  "ondemand_vcpus"));
		cr_assert(json_is_number(json_object_get(x, "weight")));
	}
	cr_assert_eq(spot, pool_used(p, "spot_vcpus"));
	cr_assert_eq(ond, pool_used(p, "ondemand_vcpus"));
	return p;
}

static bool ended(int64_t id)
{
	json_t *o = status(id);
	bool e = strcmp(state_of(o), "queued") && strcmp(state_of(o),
							  "running");

	json_decref(o);
	return e;
}

/* Watch the pool until every job of ids[0..n) ended (timeout_s): never
 * past its limits. */
static void watch_until_ended(const int64_t *ids, size_t n, int od,
			      int timeout_s)
{
	for (int t = 0; t < timeout_s * 5; t++) {
		size_t left = 0;

		json_decref(look(od));
		for (size_t k = 0; k < n; k++)
			left += !ended(ids[k]);
		if (!left)
			return;
		sleep_ms(200);
	}
	cr_assert_fail("the jobs did not end in %d s", timeout_s);
}

static void done_with_books(int64_t id)
{
	json_t *st = wait_end(id, 60);

	cr_assert_str_eq(state_of(st), "done", "job %lld: %s", (long long)id,
			 json_dumps(st, 0));
	check_books(id, st);
	json_decref(st);
}

static size_t body(char *p, size_t sz, size_t n, void *ctx)
{
	FILE *f = ctx;

	return fwrite(p, sz, n, f);
}

/* GET http://127.0.0.1:port/metrics (malloc'd). */
static char *scrape(int port)
{
	char url[64], *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	CURL *h = curl_easy_init();
	long code = 0;

	cr_assert(f && h);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", port);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, f);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
	cr_assert_eq(curl_easy_perform(h), CURLE_OK);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	fclose(f);
	cr_assert_eq(code, 200);
	return text;
}

Test(jobs_pool, three_jobs_share_a_small_pool_and_a_late_one_gets_its_share)
{
	int port = free_port();
	int64_t id[3];
	json_t *p, *x;
	char *m, needle[96], q[512];
	bool shared = false, full = false;

	pool_daemon(6, port);
	id[0] = submit_job("big", 40, 6);
	id[1] = submit_job("medium", 30, 4);
	/* the two take the whole pool between them: then the late job's
	 * share can only come from what they give back (or lose) */
	for (int t = 0; t < 300 && !full; t++) {
		full = pool_used(p = look(6), "spot_vcpus") == SPOT_VCPUS;
		json_decref(p);
		if (!full)
			sleep_ms(100);
	}
	cr_assert(full, "the first two jobs never held the whole pool");
	id[2] = submit_job("small", 20, 6);
	/* its share within one lease (2.5 s), and the others' made room */
	for (int t = 0; t < 30 && !shared; t++) {
		p = look(6);
		x = pool_job(p, id[2]);
		shared = x && json_integer_value(json_object_get(
			x, "share_vcpus")) > 0 &&
			json_integer_value(json_object_get(x, "spot_vcpus")) > 0;
		json_decref(p);
		if (!shared)
			sleep_ms(100);
	}
	cr_assert(shared, "the late job got no share of the pool in a lease");
	p = status(id[2]);
	x = json_object_get(p, "pool");
	cr_assert(json_is_integer(json_object_get(x, "share_vcpus")));
	cr_assert(json_number_value(json_object_get(x, "rho")) > 0);
	json_decref(p);
	/* /metrics' text is rebuilt once a second */
	snprintf(needle, sizeof needle, "proteus_job_rho{job=\"%lld\"}",
		 (long long)id[2]);
	m = scrape(port);
	for (int t = 0; t < 30 && !strstr(m, needle); t++) {
		free(m);
		sleep_ms(100);
		m = scrape(port);
	}
	cr_assert(strstr(m, "proteus_pool_vcpus_used{market=\"spot\","
			    "group=\"all\"}"), "%s", m);
	cr_assert(strstr(m, "proteus_pool_vcpus_limit{market=\"spot\","
			    "group=\"standard\"} 8"), "%s", m);
	snprintf(needle, sizeof needle, "proteus_job_rho{job=\"%lld\"}",
		 (long long)id[2]);
	cr_assert(strstr(m, needle), "%s", m);
	snprintf(needle, sizeof needle, "proteus_job_pool_share_vcpus{job="
		 "\"%lld\"}", (long long)id[2]);
	cr_assert(strstr(m, needle), "%s", m);
	free(m);
	watch_until_ended(id, 3, 6, 180);
	for (int k = 0; k < 3; k++)
		done_with_books(id[k]);
	/* each round's decisions are the jobs' lease events, where a
	 * share changed, and the pool's round events, each within the
	 * limit; each done job has its realized rho */
	for (int k = 0; k < 3; k++) {
		cr_assert_gt(events_like(id[k], "lease", "%\"share\"%"), 0);
		cr_assert_eq(events_like(id[k], "pool_end", "%\"rho\"%"), 1);
		p = status(id[k]);
		x = json_object_get(json_object_get(p, "pool"),
				    "rho_realized");
		cr_assert(json_is_number(x) && json_number_value(x) > 0 &&
			  isfinite(json_number_value(x)), "%s",
			  json_dumps(p, 0));
		json_decref(p);
	}
	cr_assert_gt(sql_int("SELECT count(*) FROM events WHERE job_id IS "
			     "NULL AND kind = 'round'"), 2);
	cr_assert_eq(sql_int("SELECT count(*) FROM events e WHERE job_id IS "
			     "NULL AND kind = 'round' AND (SELECT coalesce("
			     "sum(json_extract(j.value, '$.share_vcpus')), 0) "
			     "FROM json_each(e.detail, '$.jobs') j) > 8"), 0,
		     "a round gave more than the pool");
	/* the pool was full when the late one came: before its first spot
	 * instance, the others gave instances back for the pool (or lost
	 * them to the market, which makes the same room) */
	snprintf(q, sizeof q, "SELECT count(*) FROM events WHERE job_id IN "
		 "(%lld, %lld) AND ((kind = 'release' AND detail LIKE "
		 "'%%pool%%') OR kind IN ('warning', 'eviction')) AND rowid < "
		 "(SELECT min(rowid) FROM events WHERE job_id = %lld AND kind "
		 "= 'launch' AND detail LIKE '%%\"market\":\"spot\"%%')",
		 (long long)id[0], (long long)id[1], (long long)id[2]);
	cr_assert_gt(sql_int(q), 0, "nothing made room for the late job");
}

Test(jobs_pool, a_reliable_tier_that_does_not_fit_waits_whole)
{
	int64_t a, b;
	json_t *p, *x;
	bool waited = false;

	/* room for one reliable m3.large only; the first job long enough
	 * that the second still waits when status and pool are read (20
	 * epochs ended before that on a loaded host once the trainer's
	 * data path was vectorized) */
	pool_daemon(2, 0);
	a = submit_job("first", 40, 4);
	b = submit_job("second", 20, 4);
	for (int t = 0; t < 30 && !waited; t++) {
		p = look(2);
		x = pool_job(p, b);
		if (x && !strcmp(json_string_value(json_object_get(x, "state")),
				 "queued") &&
		    json_is_string(json_object_get(x, "waiting")) &&
		    !json_is_true(json_object_get(x, "admitted")))
			waited = true;
		json_decref(p);
		if (!waited)
			sleep_ms(100);
	}
	cr_assert(waited, "the second job's tier did not wait for room");
	{
		struct pxrun r;
		char ids[24];

		snprintf(ids, sizeof ids, "%lld", (long long)b);
		cr_assert_eq(ctl(&r, 10, "status", ids, NULL, NULL), 0);
		cr_assert(strstr(r.out, "waits: its reliable tier"), "%s",
			  r.out);
		pxrun_free(&r);
		cr_assert_eq(ctl(&r, 10, "pool", NULL, NULL, NULL), 0);
		cr_assert(strstr(r.out, "standard=2"), "%s", r.out);
		cr_assert(strstr(r.out, "waits:"), "%s", r.out);
		pxrun_free(&r);
	}
	watch_until_ended((int64_t[]){a, b}, 2, 2, 180);
	done_with_books(a);
	done_with_books(b);
	/* a tier that could never fit, even alone: refused at submit */
	{
		struct pxrun r;

		write_job(20, "{\"reliable\": {\"type\": \"m3.large\", "
			  "\"count\": 2}}");
		cr_assert_eq(ctl(&r, 10, "submit", jt.job, NULL, NULL), 3,
			     "%s", r.err);
		cr_assert(strstr(r.err, "reliable: its tier (2 m3.large, 4 "
				 "vCPUs of group standard on demand) can "
				 "never fit the pool"), "%s", r.err);
		pxrun_free(&r);
	}
}

Test(jobs_pool, kill_9_keeps_the_pool_straight)
{
	int64_t a, b;
	json_t *p, *x;
	int64_t share = -1, rounds;

	pool_daemon(6, 0);
	a = submit_job("one", 40, 6);
	b = submit_job("two", 40, 6);
	for (int t = 0; t < 100 && share <= 0; t++) {
		p = look(6);
		x = pool_job(p, b);
		share = x ? json_integer_value(json_object_get(
			x, "share_vcpus")) : -1;
		json_decref(p);
		sleep_ms(100);
	}
	cr_assert_gt(share, 0);
	stop_daemon(SIGKILL);
	rounds = sql_int("SELECT max(json_extract(detail, '$.round')) FROM "
			 "events WHERE kind IN ('lease', 'round')");
	cr_assert_gt(rounds, 0);
	start_daemon();
	p = look(6);
	/* the rounds count on from the stored lease events, not from 0 */
	cr_assert_gt(json_integer_value(json_object_get(p, "rounds")), rounds,
		     "%s", json_dumps(p, 0));
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(
		p, "in_force"), "spot_vcpus")), "standard=8");
	cr_assert_not_null(pool_job(p, a));
	cr_assert_not_null(pool_job(p, b));
	json_decref(p);
	watch_until_ended((int64_t[]){a, b}, 2, 6, 200);
	done_with_books(a);
	done_with_books(b);
}

Test(jobs_pool, without_limits_nothing_is_gated_and_the_pool_says_so)
{
	int64_t id;
	json_t *p, *x;

	daemon_up();
	id = submit_job("alone", 20, 6);
	p = pool_json();
	cr_assert(json_is_false(json_object_get(p, "limited")));
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(
		p, "configured"), "spot_vcpus")), "none");
	x = pool_job(p, id);
	cr_assert_not_null(x);
	cr_assert(json_is_null(json_object_get(x, "share_vcpus")));
	json_decref(p);
	done_with_books(id);
	cr_assert_eq(events_like(id, "lease", "%"), 0);
}

/* A learned limit of the pool ("quota" about no job, the last one) that
 * holds the pool's limits learnt under configured pool_spot_vcpus and
 * pool_ondemand_vcpus. */
static void learned_before(const char *spot, const char *under_spot,
			   const char *under_od)
{
	char q[512];

	snprintf(q, sizeof q, "INSERT INTO events (job_id, instance_id, "
		 "at_us, kind, detail) VALUES (NULL, NULL, 1, 'quota', "
		 "'{\"spot_vcpus\": \"%s\", \"ondemand_vcpus\": \"none\", "
		 "\"under_spot_vcpus\": \"%s\", \"under_ondemand_vcpus\": "
		 "\"%s\"}')", spot, under_spot, under_od);
	sql_exec(q);
}

static const char *learned_spot(void)
{
	static char text[64];
	json_t *p = pool_json();

	snprintf(text, sizeof text, "%s", json_string_value(json_object_get(
		json_object_get(p, "learned"), "spot_vcpus")));
	json_decref(p);
	return text;
}

/* The running daemon's pool_spot_vcpus changed to standard=spot (the
 * file, then SIGHUP), once `pool` says so. */
static void pool_daemon_reload(int od, int spot)
{
	char want[32], more[512];
	bool now = false;

	pool_conf(more, sizeof more, spot, od, 0);
	write_conf(more);
	cr_assert_eq(kill(jt.pid, SIGHUP), 0);
	snprintf(want, sizeof want, "standard=%d", spot);
	for (int t = 0; t < 50 && !now; t++) {
		json_t *p = pool_json();

		now = !strcmp(json_string_value(json_object_get(json_object_get(
			p, "configured"), "spot_vcpus")), want);
		json_decref(p);
		if (!now)
			sleep_ms(100);
	}
	cr_assert(now, "the reload did not take");
}

/* What the pool learnt from EC2's quota errors outlives a restart, even
 * with no job running then, under the same configured limits; changed
 * ones (in the file while it was down, or by SIGHUP) forget it, and the
 * forgetting is stored too. */
Test(jobs_pool, learned_limits_outlive_a_restart_unless_the_limits_change)
{
	pool_daemon(6, 0);
	stop_daemon(SIGTERM);
	learned_before("standard=4", "standard=8", "standard=6");
	start_daemon();
	cr_assert_str_eq(learned_spot(), "standard=4");
	{
		json_t *p = pool_json();

		cr_assert_str_eq(json_string_value(json_object_get(
			json_object_get(p, "in_force"), "spot_vcpus")),
			"standard=4");
		json_decref(p);
	}
	{
		char *log = daemon_log();

		cr_assert(strstr(log, "learnt from EC2's quota errors before "
				 "the restart hold"), "%s", log);
		free(log);
	}
	/* learnt under other limits than today's: not taken up */
	stop_daemon(SIGTERM);
	learned_before("standard=2", "standard=16", "standard=6");
	start_daemon();
	cr_assert_str_eq(learned_spot(), "none");
	/* under today's again, then the operator changes them: forgotten,
	 * and a restart does not bring it back */
	stop_daemon(SIGTERM);
	learned_before("standard=4", "standard=8", "standard=6");
	start_daemon();
	cr_assert_str_eq(learned_spot(), "standard=4");
	pool_daemon_reload(6, 12);
	cr_assert_str_eq(learned_spot(), "none");
	cr_assert_eq(sql_int("SELECT count(*) FROM events WHERE job_id IS "
			     "NULL AND kind = 'quota' AND detail LIKE "
			     "'%\"spot_vcpus\":\"none\"%'"), 1);
	stop_daemon(SIGTERM);
	pool_daemon(6, 0);
	cr_assert_str_eq(learned_spot(), "none");
}

/* A program job beside a trainer job under one pool: the toy program
 * (tests/fakes/program_toy.py) on a flat m3.large market, 1 reliable and
 * up to 2 spot m3.large, run as nobody. */
static int64_t submit_program(long samples)
{
	char *toy = px_src_path("tests/fakes/program_toy.py");
	char cmd[2400], text[4096];
	FILE *f;

	write_flat_trace(1456876800, 2, 0, 0);
	cr_assert_eq(chmod(jt.tmp, 0755), 0);
	snprintf(cmd, sizeof cmd, "mkdir -m 0755 '%s/code' && cp '%s' "
		 "'%s/code/' && chmod 0644 '%s/code/program_toy.py'", jt.tmp,
		 toy, jt.tmp, jt.tmp);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	free(toy);
	snprintf(text, sizeof text, "{\"name\": \"toy\", \"region\": "
		 "\"us-east-1\", \"work_hours\": 2, \"reference_type\": "
		 "\"m3.large\", \"instances\": 3, \"reliable\": {\"type\": "
		 "\"m3.large\", \"count\": 1}, \"spot\": {\"types\": "
		 "[\"m3.large\"], \"zones\": [\"us-east-1a\"], "
		 "\"max_instances\": 2}, \"scaling_explore\": false, "
		 "\"startup_seconds\": 60, \"program\": {\"command\": "
		 "[\"/usr/bin/python3\", \"program_toy.py\"], \"code\": "
		 "\"%s/code\", \"env\": {\"TOY_SAMPLES\": \"%ld\"}, "
		 "\"nodes\": {\"min\": 1, \"max\": 3}, \"samples\": %ld}, "
		 "\"world\": {\"name\": \"local\", \"trace\": "
		 "\"%s/trace.json\", \"start\": \"2016-03-02T00:00:00Z\", "
		 "\"speedup\": 1200}}", jt.tmp, samples, samples, jt.tmp);
	f = fopen(jt.job, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(jt.job, 0644), 0);
	return submit_as(65534);
}

/* Both workloads share the pool: the program job takes the whole spot
 * pool (4 vCPUs: its 2 spot m3.large), a trainer job comes, and the
 * round takes a unit back: the program's job sheds an instance for the
 * pool's share and its group re-forms; never past a limit, both done,
 * the books the ledger's. */
Test(jobs_pool, a_program_job_gives_back_its_share_and_re_forms)
{
	int64_t prog, mlr;
	json_t *p, *x;
	int64_t held = 0;
	char more[512];

	if (geteuid() != 0)
		cr_skip_test("needs root to run a program as another user");
	pool_conf(more, sizeof more, 4, 4, 0);
	daemon_up_with(more);
	prog = submit_program(60000);
	for (int t = 0; t < 300 && held < 4; t++) {
		p = look(4);
		x = pool_job(p, prog);
		held = x ? json_integer_value(json_object_get(x,
			"spot_vcpus")) : 0;
		json_decref(p);
		if (held < 4)
			sleep_ms(100);
	}
	cr_assert_eq(held, 4, "the program's job never held the pool");
	cr_assert(!ended(prog), "the program's job ended too soon");
	mlr = submit_job("mlr", 20, 2);
	watch_until_ended((int64_t[]){prog, mlr}, 2, 4, 180);
	done_with_books(prog);
	done_with_books(mlr);
	cr_assert_gt(events_like(prog, "release", "%pool%"), 0,
		     "the program's job gave nothing back");
	cr_assert_gt(events_like(prog, "program", "%re-forms%"), 0,
		     "its group did not re-form");
	cr_assert_gt(events_like(mlr, "lease", "%\"share\"%"), 0);
}
