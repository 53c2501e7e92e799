/* test_jobs_program_s3.c -- a program job's checkpoint store in S3
 * (docs/programs.md, "The checkpoint store in S3") through a real
 * proteusd in the local world, against the strict fake S3
 * (tests/fake_s3): each checkpoint mirrored by the daemon's child with
 * the daemon's credentials (a 500 retried), LATEST after its tar, the
 * pruned ones deleted there; a store outside checkpoint_s3_prefixes
 * refused at submit, on '/' boundaries; a kill -9 of proteusd with the
 * head node's folder lost resumes from the checkpoint in S3. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../agent/config.h"
#include "../../common/px.h"
#include "../fake_ec2/fake.h"
#include "jobs_fixture.h"
#include "pxrun.h"

TestSuite(jobs_program_s3, .init = jobs_fixture_setup,
	  .fini = jobs_fixture_teardown, .timeout = 120);

#define NOBODY 65534
#define T0 1456876800            /* 2016-03-02T00:00:00Z */
#define ALLOW "checkpoint_s3_prefixes s3://other/x, s3://ckpts/team\n"
#define STORE "s3://ckpts/team/a"

static struct fake s3;

/* The toy (tests/fakes/program_toy.py) on 1 reliable and up to 2 spot
 * nodes, samples in all, a checkpoint every 10 steps, 2 kept, its
 * store store. */
static void write_toy_job(const char *store, long samples, int step_ms)
{
	char dir[700], cmd[2000], text[4096];
	char *src = px_src_path("tests/fakes/program_toy.py");
	FILE *f;

	write_flat_trace(T0, 2, 0, 0);
	snprintf(dir, sizeof dir, "%s/code", jt.tmp);
	cr_assert_eq(chmod(jt.tmp, 0755), 0);
	cr_assert(mkdir(dir, 0755) == 0 || errno == EEXIST);
	snprintf(cmd, sizeof cmd, "cp '%s' '%s/program_toy.py' && chmod 0644 "
		 "'%s/program_toy.py'", src, dir, dir);
	cr_assert_eq(system(cmd), 0);
	free(src);
	snprintf(text, sizeof text,
		 "{\"name\": \"toy\", \"region\": \"us-east-1\", "
		 "\"work_hours\": 2, \"reference_type\": \"m3.large\", "
		 "\"instances\": 3, \"reliable\": {\"type\": \"m3.large\", "
		 "\"count\": 1}, \"spot\": {\"types\": [\"m3.large\"], "
		 "\"zones\": [\"us-east-1a\"], \"max_instances\": 2}, "
		 "\"scaling_explore\": false, \"startup_seconds\": 60, "
		 "\"program\": {\"command\": [\"/usr/bin/python3\", "
		 "\"program_toy.py\"], \"code\": \"%s\", \"env\": "
		 "{\"TOY_SAMPLES\": \"%ld\", \"TOY_CKPT_EVERY\": \"10\", "
		 "\"TOY_STEP_MS\": \"%d\"}, \"nodes\": {\"min\": 1, \"max\": "
		 "3}, \"samples\": %ld, \"checkpoint_keep\": 2, "
		 "\"checkpoint_store\": \"%s\"}, "
		 "\"world\": {\"name\": \"local\", \"trace\": "
		 "\"%s/trace.json\", \"start\": \"2016-03-02T00:00:00Z\", "
		 "\"speedup\": 1200}}", dir, samples, step_ms, samples, store,
		 jt.tmp);
	f = fopen(jt.job, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(jt.job, 0644), 0);
}

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to run a program as another user");
}

/* The fake S3 on tmp/s3 (bucket ckpts), its first fail requests 500,
 * and the daemon with our credentials, the fake as its S3 endpoint and
 * the prefixes allowed. */
static void s3_daemon(const char *fail)
{
	char root[700], ep[760];
	const char *args[] = { "--root", root, "--timeout", "300",
			       "--fail-first", fail, NULL };

	snprintf(root, sizeof root, "%s/s3", jt.tmp);
	cr_assert_eq(mkdir(root, 0700), 0);
	snprintf(ep, sizeof ep, "%s/ckpts", root);
	cr_assert_eq(mkdir(ep, 0700), 0);
	fake_start_script(&s3, "tests/fake_s3/fake_s3.py", args);
	snprintf(ep, sizeof ep, "http://127.0.0.1:%d", s3.port);
	setenv("AWS_ENDPOINT_URL_S3", ep, 1);
	setenv("AWS_ACCESS_KEY_ID", FAKE_AKID, 1);
	setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET, 1);
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_PROFILE");
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	daemon_up_with(ALLOW);
}

/* The file's SHA-256, hex. */
static void file_sha256(const char *path, char hex[65])
{
	static const char hx[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	size_t len = 0;
	char *buf = px_test_read_file(path, &len);

	cr_assert_not_null(buf, "%s", path);
	cr_assert_eq(EVP_Digest(buf, len, md, &n, EVP_sha256(), NULL), 1);
	for (unsigned i = 0; i < 32; i++) {
		hex[2 * i] = hx[md[i] >> 4];
		hex[2 * i + 1] = hx[md[i] & 15];
	}
	hex[64] = 0;
	free(buf);
}

/* The seqs of the N.tar files in dir, as a bit set (seq < 64). */
static uint64_t tars_in(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	uint64_t set = 0;

	cr_assert_not_null(d, "%s", dir);
	while ((e = readdir(d))) {
		int seq = 0;
		char tail[8] = "";

		if (sscanf(e->d_name, "%d.%7s", &seq, tail) == 2 &&
		    !strcmp(tail, "tar") && seq > 0 && seq < 64)
			set |= UINT64_C(1) << seq;
	}
	closedir(d);
	return set;
}

/* The store's LATEST for job id in the fake, or NULL (not yet). */
static json_t *s3_latest(int64_t id)
{
	char path[800];

	snprintf(path, sizeof path, "%s/s3/ckpts/team/a/%lld/LATEST", jt.tmp,
		 (long long)id);
	return json_load_file(path, 0, NULL);
}

/* (a) Every checkpoint mirrored: at done, the store's LATEST is the
 * head node's, its tar the one LATEST names (by SHA-256), the ones
 * checkpoint_keep pruned deleted there too; the fake's first answer (a
 * 500) retried; status tells the newest mirrored. */
Test(jobs_program_s3, checkpoints_are_mirrored_to_s3_and_pruned)
{
	char dir[800], path[900], hex[65];
	json_t *st, *loc, *rem, *reqs, *store, *q;
	int64_t id, seq;
	size_t i;
	int puts = 0, deletes = 0;

	need_root();
	s3_daemon("1");
	write_toy_job(STORE, 6000, 20);
	id = submit_as(NOBODY);
	st = wait_end(id, 90);
	cr_assert_str_eq(state_of(st), "done", "%s\n%s", json_dumps(st, 0),
			 daemon_said());
	snprintf(path, sizeof path, "%s.jobs/%lld/ckpt/LATEST", jt.db,
		 (long long)id);
	loc = json_load_file(path, 0, NULL);
	rem = s3_latest(id);
	cr_assert_not_null(loc);
	cr_assert_not_null(rem, "no LATEST in the fake S3");
	cr_assert(json_equal(loc, rem), "%s vs %s", json_dumps(loc, 0),
		  json_dumps(rem, 0));
	seq = json_integer_value(json_object_get(rem, "seq"));
	cr_assert_geq(seq, 3, "too few checkpoints to prune: %lld",
		      (long long)seq);
	snprintf(dir, sizeof dir, "%s/s3/ckpts/team/a/%lld", jt.tmp,
		 (long long)id);
	snprintf(path, sizeof path, "%s/%lld.tar", dir, (long long)seq);
	file_sha256(path, hex);
	cr_assert_str_eq(hex, json_string_value(json_object_get(rem,
			 "sha256")));
	/* S3 keeps no more than the head node (the newest 2): those
	 * pruned here are deleted there (a checkpoint superseded before its
	 * upload began was never put) */
	snprintf(path, sizeof path, "%s.jobs/%lld/ckpt", jt.db, (long long)id);
	cr_assert_eq(tars_in(path), UINT64_C(3) << (seq - 1), "%llx",
		     (unsigned long long)tars_in(path));
	cr_assert_eq(tars_in(dir) & ~tars_in(path), 0, "%llx vs %llx",
		     (unsigned long long)tars_in(dir),
		     (unsigned long long)tars_in(path));
	cr_assert(tars_in(dir) & (UINT64_C(1) << seq));
	/* status: the store, the newest mirrored, no error */
	store = json_object_get(json_object_get(st, "program"), "store");
	cr_assert_str_eq(json_string_value(json_object_get(store, "url")),
			 STORE, "%s", json_dumps(st, 0));
	cr_assert_eq(json_integer_value(json_object_get(store,
		     "mirrored_seq")), seq, "%s", json_dumps(store, 0));
	cr_assert(json_is_null(json_object_get(store, "last_error")));
	{
		char ids[24], want[300];
		struct pxrun r;

		snprintf(ids, sizeof ids, "%lld", (long long)id);
		snprintf(want, sizeof want, "; in %s up to %lld (idle)", STORE,
			 (long long)seq);
		cr_assert_eq(ctl(&r, 10, "status", ids, NULL, NULL), 0, "%s",
			     r.err);
		cr_assert(strstr(r.out, want), "no '%s' in:\n%s", want, r.out);
		pxrun_free(&r);
	}
	/* the fake's view: a 500 first, retried; every PUT and DELETE
	 * signed and answered; LATEST after its tar */
	reqs = fake_get_json(&s3, "cmd=requests");
	cr_assert_eq(json_integer_value(json_object_get(json_array_get(reqs,
		     0), "status")), 500);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(
		reqs, 1), "path")), json_string_value(json_object_get(
		json_array_get(reqs, 0), "path")), "the 500 was not retried");
	json_array_foreach(reqs, i, q) {
		const char *m = json_string_value(json_object_get(q, "method"));
		int code = (int)json_integer_value(json_object_get(q,
							"status"));

		cr_assert(json_is_true(json_object_get(q, "signed")));
		if (i == 0)
			continue;
		if (!strcmp(m, "PUT")) {
			puts++;
			cr_assert_eq(code, 200, "%s", json_dumps(q, 0));
		} else if (!strcmp(m, "DELETE")) {
			deletes++;
			cr_assert_eq(code, 204, "%s", json_dumps(q, 0));
		}
	}
	cr_assert_geq(puts, 2);
	cr_assert_geq(deletes, 1);
	cr_assert_eq(events_like(id, "checkpoint", "%mirroring to%"), 0);
	/* the daemon's secret in no log, event or answer of the child */
	{
		char *log = daemon_log(), *out;

		snprintf(path, sizeof path, "%s.jobs/%lld/ckpt-s3.out", jt.db,
			 (long long)id);
		out = px_test_read_file(path, NULL);
		cr_assert_not_null(out);
		cr_assert_null(strstr(log, FAKE_SECRET));
		cr_assert_null(strstr(out, FAKE_SECRET));
		cr_assert_eq(sql_int("SELECT count(*) FROM events WHERE "
				     "detail LIKE '%" FAKE_SECRET "%'"), 0);
		free(log);
		free(out);
	}
	json_decref(reqs);
	json_decref(loc);
	json_decref(rem);
	json_decref(st);
	unsetenv("AWS_ENDPOINT_URL_S3");
	fake_stop(&s3);
}

/* The prefix rule itself: on '/' boundaries, trailing '/'s ignored. */
Test(jobs_program_s3, prefixes_match_on_segment_boundaries)
{
	const char *l = "s3://other/x, s3://ckpts/team/,s3://whole";
	char why[256];

	cr_assert(config_s3_prefix_allows(l, "s3://ckpts/team"));
	cr_assert(config_s3_prefix_allows(l, "s3://ckpts/team/"));
	cr_assert(config_s3_prefix_allows(l, "s3://ckpts/team/a/b"));
	cr_assert(config_s3_prefix_allows(l, "s3://whole/any/thing"));
	cr_assert(config_s3_prefix_allows(l, "s3://other/x"));
	cr_assert_not(config_s3_prefix_allows(l, "s3://ckpts/team2"));
	cr_assert_not(config_s3_prefix_allows(l, "s3://ckpts/tea"));
	cr_assert_not(config_s3_prefix_allows(l, "s3://ckpts"));
	cr_assert_not(config_s3_prefix_allows(l, "s3://other/xy/z"));
	cr_assert_not(config_s3_prefix_allows(l, "s3://wholesale/a"));
	cr_assert_not(config_s3_prefix_allows("", "s3://ckpts/team"));
	cr_assert(config_s3_prefix_valid("s3://ckpts/team/a/", why,
					 sizeof why));
	cr_assert_not(config_s3_prefix_valid("s3://ckpts/team/../b", why,
					     sizeof why));
	cr_assert_not(config_s3_prefix_valid("s3://ckpts//b", why,
					     sizeof why));
	cr_assert_not(config_s3_prefix_valid("s3://Ck/b", why, sizeof why));
}

/* (b) A store outside the operator's prefixes (a sibling that shares
 * the prefix's letters, a '..' that climbs out) is refused at submit,
 * naming the field and the key; nothing reaches S3. */
Test(jobs_program_s3, a_store_outside_the_allowed_prefixes_is_refused)
{
	static const char *const bad[] = { "s3://ckpts/team2/a",
					   "s3://ckpts/team/../x",
					   "s3://ckpts" };
	json_t *reqs;

	need_root();
	s3_daemon("0");
	for (int i = 0; i < 3; i++) {
		struct pxrun r;
		int rc;

		write_toy_job(bad[i], 6000, 20);
		rc = ctl_as(&r, 60, NOBODY, "submit", jt.job, NULL, NULL);
		cr_assert_neq(rc, 0, "%s accepted: %s", bad[i], r.out);
		cr_assert(strstr(r.err, "program.checkpoint_store"), "%s",
			  r.err);
		cr_assert(strstr(r.err, i == 1 ? "'..'" :
				 "checkpoint_s3_prefixes"), "%s", r.err);
		pxrun_free(&r);
	}
	cr_assert_eq(sql_int("SELECT count(*) FROM jobs"), 0);
	reqs = fake_get_json(&s3, "cmd=requests");
	cr_assert_eq(json_array_size(reqs), 0);
	json_decref(reqs);
	unsetenv("AWS_ENDPOINT_URL_S3");
	fake_stop(&s3);
}

/* (c) A kill -9 of proteusd mid-job, and the head node's folder of
 * checkpoints lost with it (a new head node): the new daemon gets
 * LATEST and its tar from S3 before the first start, and the toy goes
 * on from there, not from 0. */
Test(jobs_program_s3, a_lost_head_node_resumes_from_s3)
{
	char cmd[4400], path[900], *log = NULL;
	json_t *st, *rem = NULL;
	int64_t id, seq;
	int from = -1;

	need_root();
	s3_daemon("0");
	write_toy_job(STORE, 9000, 40);
	id = submit_as(NOBODY);
	for (int i = 0; i < 400; i++) {
		json_decref(rem);
		rem = s3_latest(id);
		if (rem && json_integer_value(json_object_get(rem, "seq")) >= 2)
			break;
		sleep_ms(25);
	}
	cr_assert_not_null(rem, "nothing mirrored");
	seq = json_integer_value(json_object_get(rem, "seq"));
	stop_daemon(SIGKILL);
	(void)processes_after(3000);
	snprintf(cmd, sizeof cmd, "rm -rf '%s.jobs/%lld/ckpt' "
		 "'%s.jobs/%lld/logs'", jt.db, (long long)id, jt.db,
		 (long long)id);
	cr_assert_eq(system(cmd), 0);
	start_daemon();
	st = wait_end(id, 90);
	cr_assert_str_eq(state_of(st), "done", "%s\n%s", json_dumps(st, 0),
			 daemon_said());
	cr_assert_eq(events_like(id, "checkpoint", "%restored from "
				 STORE "%"), 1);
	{
		char like[120];

		/* the newest there when the daemon died, or one after it
		 * that its child put before it was killed */
		snprintf(like, sizeof like, "checkpoint %lld %%restored%%",
			 (long long)seq);
		if (!events_like(id, "checkpoint", like))
			snprintf(like, sizeof like, "checkpoint %lld %%restored"
				 "%%", (long long)seq + 1);
		cr_assert_eq(events_like(id, "checkpoint", like), 1,
			     "restored neither %lld nor the next",
			     (long long)seq);
	}
	/* this life's programs: the first resumed, from samples > 0 */
	for (int i = 1; i <= 9 && from < 0; i++) {
		snprintf(path, sizeof path, "%s.jobs/%lld/logs/i%d.log", jt.db,
			 (long long)id, i);
		log = px_test_read_file(path, NULL);
		if (log && strstr(log, "resumed from "))
			(void)sscanf(strstr(log, "resumed from "),
				     "resumed from %*s at samples %d", &from);
		free(log);
	}
	cr_assert_gt(from, 0, "no program of the new life resumed");
	/* the new daemon's child got LATEST, then the tar it names */
	{
		json_t *reqs = fake_get_json(&s3, "cmd=requests"), *q;
		char latest[120];
		size_t i;
		int at = -1, tar = -1;

		snprintf(latest, sizeof latest, "/ckpts/team/a/%lld/LATEST",
			 (long long)id);
		json_array_foreach(reqs, i, q) {
			const char *m = json_string_value(json_object_get(q,
							"method"));
			const char *pa = json_string_value(json_object_get(q,
							"path"));

			if (!strcmp(m, "GET") && !strcmp(pa, latest) &&
			    json_integer_value(json_object_get(q, "status")) ==
			    200)
				at = (int)i;
			else if (!strcmp(m, "GET") && at >= 0 && tar < 0 &&
				 strstr(pa, ".tar"))
				tar = (int)i;
		}
		cr_assert(at >= 0 && tar > at, "no GET of LATEST then its tar");
		json_decref(reqs);
	}
	cr_assert_geq(json_integer_value(json_object_get(json_object_get(st,
		      "program"), "samples")), 9000);
	json_decref(rem);
	json_decref(st);
	unsetenv("AWS_ENDPOINT_URL_S3");
	fake_stop(&s3);
}

/* A mirror that fails (a bucket S3 does not have: 404, not retried by
 * the child) is an event per failed run, and status shows the last
 * error; the job goes on (its folder holds the checkpoints). */
Test(jobs_program_s3, a_failed_mirror_is_an_event_and_shown_in_status)
{
	json_t *st = NULL, *store;
	const char *e;
	int64_t id;

	need_root();
	s3_daemon("0");
	write_toy_job("s3://other/x/j", 200000, 20);
	id = submit_as(NOBODY);
	for (int i = 0; i < 400 && !events_like(id, "checkpoint",
						"mirroring to s3://other/x/j "
						"(try 1 of 3): %NoSuchBucket%");
	     i++)
		sleep_ms(25);
	cr_assert_eq(events_like(id, "checkpoint", "mirroring to "
				 "s3://other/x/j (try 1 of 3): %404%"
				 "NoSuchBucket%"), 1, "%s", daemon_said());
	st = status(id);
	store = json_object_get(json_object_get(st, "program"), "store");
	e = json_string_value(json_object_get(store, "last_error"));
	cr_assert(e && strstr(e, "s3://other/x/j/") && strstr(e,
		  "NoSuchBucket"), "%s", json_dumps(store, 0));
	cr_assert_geq(json_integer_value(json_object_get(store, "failures")),
		      1);
	cr_assert(json_is_null(json_object_get(store, "mirrored_seq")));
	{
		char *text = json_dumps(st, 0);

		cr_assert_null(strstr(text, FAKE_SECRET));
		free(text);
	}
	json_decref(st);
	cancel_job(id, 30);
	unsetenv("AWS_ENDPOINT_URL_S3");
	fake_stop(&s3);
}
