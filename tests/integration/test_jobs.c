/* test_jobs.c -- proteusd runs jobs: a real daemon, the local world on the
 * shipped trace slice and the real trainer, driven through proteusctl.
 * Checks the outcome (state, accuracy), the money (cost = the ledger's
 * sum, every instance closed once), the processes (none left), bad
 * submissions, cancel, and kill -9 of the daemon mid-job. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../agent/proto.h"
#include "../../common/px.h"
#include "jobs_fixture.h"
#include "pxrun.h"
#include "../../trainer/compute/kern_cuda.h"

extern char **environ;

TestSuite(jobs, .init = jobs_fixture_setup,
	  .fini = jobs_fixture_teardown, .timeout = 240);


Test(jobs, a_job_runs_to_its_end_and_the_books_add_up)
{
	struct pxrun r;
	char ids[24];
	json_t *st;
	int64_t id;

	daemon_up();
	write_job(40, NULL);
	id = submit();
	snprintf(ids, sizeof ids, "%lld", (long long)id);
	/* --watch piped: a line per change (the clock moves: several running
	 * lines, each with a clock other than the line before; a key without
	 * the clock gave two, when the workers came), exit 0 once done */
	cr_assert_eq(ctl(&r, 180, "status", ids, "--watch", "--interval=0.1"),
		     0, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, " done "), "%s", r.out);
	{
		long last = -1, moves = 0;

		for (char *p = r.out; (p = strstr(p, " running ")); p++) {
			char *c = strstr(p, " clock ");
			long v = c ? strtol(c + 7, NULL, 10) : -1;

			moves += last >= 0 && v != last;
			last = v;
		}
		cr_assert_geq(moves, 3, "the clock moved %ld times in the "
			      "watch: %s", moves, r.out);
	}
	pxrun_free(&r);
	st = status(id);
	cr_assert_str_eq(state_of(st), "done");
	cr_assert_gt(json_number_value(json_object_get(st, "test_accuracy")),
		     0.75, "MLR after 2 epochs");
	cr_assert_gt(json_number_value(json_object_get(st, "cost_usd")), 0);
	cr_assert_gt(json_number_value(json_object_get(st,
						       "ondemand_cost_usd")),
		     0);
	check_books(id, st);
	json_decref(st);
	cr_assert_eq(processes_after(2000), 0, "trainer processes left");
	/* its events, readable */
	cr_assert_eq(ctl(&r, 10, "events", ids, NULL, NULL), 0, "%s", r.err);
	cr_assert(strstr(r.out, "launch") && strstr(r.out, "progress"),
		  "%s", r.out);
	pxrun_free(&r);
}

/* trainer.device "cuda" on a host without a CUDA device: refused at
 * submit (exit 3, naming the field and why), nothing stored, no node
 * started.  Where this host has one, the job would run: skipped. */
Test(jobs, a_cuda_job_where_there_is_no_gpu_is_refused)
{
	struct px_error e = {0};
	struct pxrun r;

	if (kern_cuda_device_count(&e) > 0)
		cr_skip_test("this host has a CUDA device");
	daemon_up();
	write_job(1, "{\"trainer\": {\"model\": \"mlr\", \"device\": "
		  "\"cuda\"}}");
	cr_assert_eq(ctl(&r, 10, "submit", jt.job, NULL, NULL), 3, "%s",
		     r.err);
	cr_assert(strstr(r.err, "trainer.device") && strstr(r.err, "cuda"),
		  "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(processes_after(200), 0, "a trainer was started");
	stop_daemon(SIGTERM);
	cr_assert_eq(sql_int("SELECT count(*) FROM jobs"), 0);
}

/* data_dir is where the job's trainer processes read Fashion-MNIST: a
 * folder without it fails the job (its coordinator exits 3), with the
 * books closed and no process left. */
Test(jobs, data_dir_is_where_the_trainer_reads)
{
	char *empty;
	int64_t id;
	json_t *st;

	empty = daemon_without_data();
	write_job(1, NULL);
	id = submit();
	st = wait_end(id, 60);
	cr_assert_str_eq(state_of(st), "failed");
	{
		/* the coordinator or the nodes fail first, each on the
		 * missing files of the folder given */
		const char *e = json_string_value(json_object_get(st,
								  "error"));

		cr_assert(e && (strstr(e, "coordinator refused its input "
				       "(exit 3)") ||
				strstr(e, "nodes cannot start")) &&
			  strstr(e, empty), "%s", e ? e : "-");
	}
	check_books(id, st);
	json_decref(st);
	cr_assert_eq(processes_after(2000), 0, "trainer processes left");
	free(empty);
}

Test(jobs, bad_submissions_are_refused_and_nothing_is_stored)
{
	static const struct {
		const char *extra, *needle;
	} bad[] = {
		{ "{\"trainer\": {\"epochs\": 0}}", "trainer.epochs" },
		{ "{\"trainer\": {\"model\": \"resnet\"}}", "trainer.model" },
		{ "{\"trainer\": {\"device\": \"tpu\"}}", "trainer.device" },
		{ "{\"frobnicate\": 1}", "frobnicate" },
		{ "{\"world\": {\"name\": \"mars\"}}", "world" },
		{ "{\"world\": \"ec2\"}", "ec2" },
		{ "{\"policy\": \"magic\"}", "policy" },
		{ "{\"spot\": {\"types\": [\"x9.huge\"]}}", "x9.huge" },
		/* what cannot work here: a market clock that outruns the
		 * nodes, a reliable tier bigger than the host */
		{ "{\"world\": {\"name\": \"local\", \"speedup\": 1e6}}",
		  "world.speedup" },
		{ "{\"reliable\": {\"type\": \"m3.large\", \"count\": "
		  "10000}}", "reliable.count: 10000" },
		{ "{\"world\": {\"name\": \"local\", \"start\": "
		  "\"2019-01-01\"}}", "job.json: world.start: "
		  "2019-01-01T00:00:00Z is outside the trace" },
	};
	struct pxrun r;
	FILE *f;

	daemon_up();
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		write_job(1, bad[i].extra);
		int rc = ctl(&r, 10, "submit", jt.job, NULL, NULL);

		cr_assert_eq(rc, 3, "%s: exit %d: %s", bad[i].extra, rc,
			     r.err);
		cr_assert(strstr(r.err, bad[i].needle), "%s: %s",
			  bad[i].extra, r.err);
		pxrun_free(&r);
	}
	f = fopen(jt.job, "w");
	fputs("{\"name\": \"x\",", f);
	fclose(f);
	cr_assert_eq(ctl(&r, 10, "submit", jt.job, NULL, NULL), 3);
	cr_assert(strstr(r.err, "job.json:1:"), "%s", r.err);
	pxrun_free(&r);
	/* a job file is bounded before it is read (JOBSPEC_FILE_MAX) */
	f = fopen(jt.job, "w");
	fputs("{\"name\": \"", f);
	for (int i = 0; i < 1100; i++)
		fprintf(f, "%01023d", 0);
	fputs("\"}", f);
	fclose(f);
	cr_assert_eq(ctl(&r, 10, "submit", jt.job, NULL, NULL), 3, "%s",
		     r.err);
	cr_assert(strstr(r.err, "over the limit"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 10, "submit", "/nonexistent/job.json", NULL,
			 NULL), 4, "%s", r.err);
	cr_assert(strstr(r.err, "/nonexistent/job.json"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 10, "status", "999", NULL, NULL), 4);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 10, "status", "x1", NULL, NULL), 2);
	pxrun_free(&r);
	/* the daemon is still there, and no job was written */
	cr_assert_eq(ctl(&r, 10, "ping", NULL, NULL, NULL), 0);
	pxrun_free(&r);
	cr_assert_eq(sql_int("SELECT count(*) FROM jobs"), 0);
}

Test(jobs, cancel_ends_the_job_and_every_process)
{
	struct pxrun r;
	char ids[24];
	json_t *st;
	int64_t id;

	daemon_up();
	write_job(200, NULL);
	id = submit();
	snprintf(ids, sizeof ids, "%lld", (long long)id);
	for (int i = 0; i < 100; i++) {
		st = status(id);
		if (json_integer_value(json_object_get(st, "clock")) > 0)
			break;
		json_decref(st);
		st = NULL;
		sleep_ms(100);
	}
	cr_assert_not_null(st, "no progress in 10 s");
	json_decref(st);
	cr_assert_eq(ctl(&r, 10, "cancel", ids, NULL, NULL), 0, "%s", r.err);
	pxrun_free(&r);
	st = status(id);
	cr_assert_str_eq(state_of(st), "cancelled");
	check_books(id, st);
	json_decref(st);
	cr_assert_eq(processes_after(2000), 0, "trainer processes left");
	cr_assert_eq(ctl(&r, 10, "cancel", ids, NULL, NULL), 3, "twice");
	pxrun_free(&r);
}

/* kill -9 of the daemon at random moments: each restart takes the job up
 * again (the nodes died with the daemon; the trainer resumes from its
 * checkpoint) and the job completes with its books straight.  The test
 * kills 4 times; tests/bench/bench_jobs_kill9.sh does it 20 times. */
Test(jobs, kill_9_of_the_daemon_mid_job)
{
	const char *n_env = getenv("PX_KILL9_ROUNDS");
	int rounds = n_env ? atoi(n_env) : 4;
	json_t *st;
	int64_t id;
	unsigned seed = (unsigned)time(NULL);

	int kills = 0;
	char ended[512] = "";

	daemon_up();
	/* long enough for every kill to land mid-job (an epoch is one pass
	 * over the data: about 0.1 s of training here) */
	write_job(6 * rounds + 8, NULL);
	id = submit();
	for (int k = 0; k < rounds; k++) {
		json_t *o;

		sleep_ms(300 + (int)(rand_r(&seed) % 1200));
		o = status(id);
		if (strcmp(state_of(o), "running") &&
		    strcmp(state_of(o), "queued")) {
			snprintf(ended, sizeof ended, "%s: %s", state_of(o),
				 json_string_value(json_object_get(o,
								   "error")));
			json_decref(o);
			break;
		}
		json_decref(o);
		stop_daemon(SIGKILL);
		kills++;
		cr_assert_eq(processes_after(3000), 0, "round %d: nodes "
			     "outlived the daemon", k);
		start_daemon();
	}
	cr_assert_eq(kills, rounds, "the job ended after %d of %d kills (%s)",
		     kills, rounds, ended);
	st = wait_end(id, 180);
	cr_assert_str_eq(state_of(st), "done", "%s",
			 json_string_value(json_object_get(st, "error")));
	check_books(id, st);
	json_decref(st);
	cr_assert_eq(processes_after(2000), 0, "trainer processes left");
}

/* A full disk (the daemon's file-size limit reached mid-job): the job
 * stops with the store's error, the daemon stays up and answers, a new
 * submission is refused and writes nothing; with room again, a restarted
 * daemon takes the job up and its books add up. */
Test(jobs, a_full_disk_fails_cleanly)
{
	struct pxrun r;
	char ids[24];
	json_t *st;
	int64_t id, jobs_before;

	{
		FILE *f = fopen(jt.conf, "w");

		cr_assert_not_null(f);
		fprintf(f, "db %s\ncontrol_socket %s\n%s", jt.db, jt.sock,
			data_dir_line());
		fclose(f);
	}
	start_daemon_limited(400 * 1024);
	write_job(200, NULL);
	id = submit();
	snprintf(ids, sizeof ids, "%lld", (long long)id);
	st = wait_end(id, 120);
	cr_assert_str_eq(state_of(st), "failed");
	cr_assert(strstr(json_string_value(json_object_get(st, "error")),
			 "store"), "%s",
		  json_string_value(json_object_get(st, "error")));
	json_decref(st);
	cr_assert_eq(processes_after(2000), 0, "trainer processes left");
	cr_assert_eq(ctl(&r, 10, "ping", NULL, NULL, NULL), 0, "%s; %s",
		     r.err, daemon_said());
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 10, "submit", jt.job, NULL, NULL), 1, "%s; %s",
		     r.err, daemon_said());
	cr_assert(strstr(r.err, "I/O") || strstr(r.err, "full"), "%s; %s",
		  r.err, daemon_said());
	pxrun_free(&r);
	stop_daemon(SIGTERM);
	jobs_before = sql_int("SELECT count(*) FROM jobs");
	cr_assert_eq(jobs_before, 1, "the refused submission wrote a row");
	/* room again: the job is taken up, then cancelled; books straight */
	start_daemon();
	for (int i = 0; i < 100; i++) {
		st = status(id);
		if (!strcmp(state_of(st), "running"))
			break;
		json_decref(st);
		st = NULL;
		sleep_ms(100);
	}
	cr_assert_not_null(st, "the job was not taken up again");
	json_decref(st);
	cr_assert_eq(ctl(&r, 10, "cancel", ids, NULL, NULL), 0, "%s; %s",
		     r.err, daemon_said());
	pxrun_free(&r);
	st = status(id);
	check_books(id, st);
	json_decref(st);
}

/* max_jobs 1: a second job waits queued and starts when the first ends. */
Test(jobs, a_second_job_waits_for_max_jobs)
{
	json_t *st;
	int64_t a, b;

	{
		FILE *f = fopen(jt.conf, "w");

		cr_assert_not_null(f);
		fprintf(f, "db %s\ncontrol_socket %s\nmax_jobs 1\n%s", jt.db,
			jt.sock, data_dir_line());
		fclose(f);
	}
	start_daemon();
	write_job(1, NULL);
	a = submit();
	b = submit();
	st = status(b);
	cr_assert_str_eq(state_of(st), "queued");
	json_decref(st);
	st = wait_end(a, 120);
	cr_assert_str_eq(state_of(st), "done");
	json_decref(st);
	st = wait_end(b, 120);
	cr_assert_str_eq(state_of(st), "done", "the queued job never ran");
	check_books(b, st);
	json_decref(st);
}

/* The trainer runs what the controller decides: the stage it picks (the
 * trainer's PROGRESS says which it runs: status's trainer_stage) and
 * trainer.workers_per_instance workers on each instance (node ids
 * instance*100 + 1..k beside its PS).  The job still ends done, with the
 * fleet's on-demand price reported. */
Test(jobs, the_trainer_follows_the_controller)
{
	json_t *st;
	int64_t id;
	bool both = false;
	int max_workers = 0;

	daemon_up();
	/* long enough for the stage to move (an epoch is one pass: about
	 * 0.1 s here; 6 ended before it now and then) */
	write_job(30, "{\"trainer\": {\"model\": \"mlr\", \"epochs\": 30, "
		  "\"workers_per_instance\": 2}}");
	id = submit();
	for (int i = 0; i < 1200; i++) {
		json_t *o = status(id);
		json_t *ts = json_object_get(o, "trainer_stage");
		int stage = (int)json_integer_value(json_object_get(o,
								  "stage"));
		int w = (int)json_integer_value(json_object_get(o,
							       "workers"));

		if (w > max_workers)
			max_workers = w;
		if (json_is_integer(ts) && json_integer_value(ts) == stage &&
		    stage >= 2)
			both = true;
		if (strcmp(state_of(o), "running") &&
		    strcmp(state_of(o), "queued")) {
			json_decref(o);
			break;
		}
		json_decref(o);
		sleep_ms(50);
	}
	cr_assert(both, "the trainer never ran the controller's stage 2 or 3");
	/* one reliable and up to 4 spot instances: more workers than
	 * instances only with 2 per instance */
	cr_assert_gt(max_workers, 5, "at most %d workers", max_workers);
	st = wait_end(id, 120);
	cr_assert_str_eq(state_of(st), "done", "%s",
			 json_string_value(json_object_get(st, "error")));
	cr_assert_gt(json_number_value(json_object_get(st,
						       "fleet_ondemand_usd")),
		     0);
	check_books(id, st);
	json_decref(st);
	cr_assert_eq(processes_after(2000), 0, "trainer processes left");
}

/* A submission reads its trace on a thread: while a 2-month trace loads
 * (most of a second), the daemon answers others.  Checked by order, not
 * by time: a ping sent after the submission is answered before it. */
Test(jobs, a_long_submission_does_not_block_the_daemon)
{
	char *trace = px_shared_path(
		"traces/us-east-1_2016-02_2016-04_linux.json.gz");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct px_error err = { 0 };
	json_t *req, *reply = NULL;
	char *line = NULL, buf[4096];
	size_t len;
	struct pollfd p;
	int fd;
	ssize_t k;

	daemon_up();
	write_job(2, NULL);
	{
		json_error_t je;
		json_t *j = json_load_file(jt.job, 0, &je);

		cr_assert_not_null(j);
		json_object_set_new(json_object_get(j, "world"), "trace",
				    json_string(trace));
		req = proto_request_new(PROTO_CMD_submit);
		json_object_set_new(req, "spec", j);
		json_object_set_new(req, "file", json_string("big.json"));
	}
	cr_assert_eq(proto_encode(req, &line, &len, &err), PX_OK, "%s",
		     err.msg);
	json_decref(req);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", jt.sock);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	cr_assert_eq(write(fd, line, len), (ssize_t)len);
	free(line);
	/* another client, meanwhile */
	req = proto_request_new(PROTO_CMD_ping);
	cr_assert_eq(proto_call(jt.sock, req, 5000, &reply, &err), PX_OK, "%s",
		     err.msg);
	json_decref(req);
	json_decref(reply);
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 0), 0, "the submission was answered before "
		     "a ping sent after it");
	/* and then it is answered: a job id */
	cr_assert_eq(poll(&p, 1, 30000), 1);
	k = read(fd, buf, sizeof buf - 1);
	cr_assert_gt(k, 0);
	buf[k] = 0;
	cr_assert_not_null(strstr(buf, "\"job\""), "%s", buf);
	close(fd);
	free(trace);
}

/* A copy of a shipped file into our temp dir, under name. */
static char *copy_src(const char *rel, const char *name)
{
	char *src = px_src_path(rel), *dst, buf[65536];
	FILE *in = fopen(src, "rb"), *out;
	size_t k;

	cr_assert_not_null(in, "%s", src);
	cr_assert(asprintf(&dst, "%s/%s", jt.tmp, name) > 0);
	out = fopen(dst, "wb");
	cr_assert_not_null(out);
	while ((k = fread(buf, 1, sizeof buf, in)) > 0)
		cr_assert_eq(fwrite(buf, 1, k, out), k);
	fclose(in);
	fclose(out);
	free(src);
	return dst;
}

/* Submit the example job with extra, and return what its status says of
 * field (a copy; NULL for null), then cancel it. */
static char *submitted_field(const char *extra, const char *field)
{
	json_t *st, *v;
	char *ret;
	int64_t id;

	write_job(200, extra);
	id = submit();
	st = status(id);
	v = json_object_get(st, field);
	cr_assert(json_is_string(v) || json_is_null(v), "%s", field);
	ret = json_is_string(v) ? strdup(json_string_value(v)) : NULL;
	json_decref(st);
	cancel_job(id, 20);
	return ret;
}

/* Per-second billing takes each type's hazard from a Spot Instance
 * Advisor snapshot, as simulate does: the job's (a path relative to the
 * job file, made absolute by submit), else the daemon's spot_advisor,
 * else the shipped one of the start's month (none before 2021-02: the
 * earliest); one that is missing or malformed refuses the job, naming the
 * field; legacy billing reads none.  A scaling profile file travels
 * inlined in the stored job. */
Test(jobs, per_second_jobs_take_hazards_from_a_snapshot)
{
	const char *ps = "{\"world\": {\"name\": \"local\", \"start\": "
			 "\"2016-03-02T00:00:00Z\", \"billing\": \"per-second\"}";
	char *cfg_adv = copy_src("etc/spot-advisor/linux_2025-06.json",
				 "cfg-adv.json");
	char *job_adv = copy_src("etc/spot-advisor/linux_2021-02.json",
				 "job-adv.json");
	char *prof = copy_src("docs/examples/scaling-mlr-2core.json",
			      "prof.json");
	char extra[512], *got;
	struct pxrun r;
	int64_t id;
	FILE *f;

	/* no daemon setting: the shipped snapshot; legacy: none */
	daemon_up();
	snprintf(extra, sizeof extra, "%s}", ps);
	got = submitted_field(extra, "billing");
	cr_assert_str_eq(got, "per-second");
	free(got);
	got = submitted_field(extra, "spot_advisor");
	cr_assert(got && strstr(got, "spot-advisor/linux_2021-02.json"), "%s",
		  got);
	free(got);
	cr_assert_null(submitted_field(NULL, "spot_advisor"));
	stop_daemon(SIGTERM);

	/* the daemon's setting, then the job's over it */
	f = fopen(jt.conf, "w");
	cr_assert_not_null(f);
	fprintf(f, "db %s\ncontrol_socket %s\nspot_advisor %s\n", jt.db,
		jt.sock, cfg_adv);
	fclose(f);
	start_daemon();
	got = submitted_field(extra, "spot_advisor");
	cr_assert_str_eq(got, cfg_adv);
	free(got);
	snprintf(extra, sizeof extra, "%s, \"spot_advisor\": \"job-adv.json\"}",
		 ps);
	got = submitted_field(extra, "spot_advisor");
	cr_assert_str_eq(got, job_adv);
	free(got);

	/* missing and malformed snapshots: refused, naming what */
	snprintf(extra, sizeof extra, "%s, \"spot_advisor\": \"nope.json\"}",
		 ps);
	write_job(200, extra);
	cr_assert_eq(ctl(&r, 10, "submit", jt.job, NULL, NULL), 3);
	cr_assert(strstr(r.err, "spot_advisor") && strstr(r.err, "nope.json"),
		  "%s", r.err);
	pxrun_free(&r);
	f = fopen(job_adv, "w");
	fputs("{\"spot_advisor\": {\"us-east-1\": {\"Linux\": {\"m3.large\": "
	      "{\"r\": 9}}}}}", f);
	fclose(f);
	snprintf(extra, sizeof extra, "%s, \"spot_advisor\": \"job-adv.json\"}",
		 ps);
	write_job(200, extra);
	cr_assert_eq(ctl(&r, 10, "submit", jt.job, NULL, NULL), 3);
	cr_assert(strstr(r.err, "job-adv.json"), "%s", r.err);
	pxrun_free(&r);

	/* a profile file, inlined: the stored job holds its figures */
	{
		char *src = px_src_path("docs/examples/job-local-mlr.json");
		json_error_t je;
		json_t *j = json_load_file(src, 0, &je);

		cr_assert_not_null(j, "%s", je.text);
		json_object_del(j, "scaling_efficiency");
		json_object_set_new(j, "scaling_profile",
				    json_string("prof.json"));
		cr_assert_eq(json_dump_file(j, jt.job, 0), 0);
		json_decref(j);
		free(src);
	}
	id = submit();
	cr_assert_eq(sql_int("SELECT count(*) FROM jobs WHERE spec LIKE "
			     "'%samples_per_s%' AND spec NOT LIKE "
			     "'%prof.json%'"), 1);
	cancel_job(id, 20);
	free(cfg_adv);
	free(job_adv);
	free(prof);
}

/* A warned node's roles leave within the notice; the coordinator then
 * reports them gone (LOST) as it would a lost node, and status counted
 * every one as a loss.  Compared with the coordinator's own words, which
 * load does not change: status's losses are at most the nodes it says
 * were "lost" (not "left"), once some warned node has left.  (Under load
 * a node may be lost for real: a missed heartbeat.)  The shipped
 * example's BidBrain bids at the price, so rises warn its spot instances
 * while the trainer runs. */
Test(jobs, warned_leaves_are_not_losses)
{
	json_t *st;
	int64_t id, losses;
	int left = 0, lost;

	daemon_up();
	write_job(200, NULL);
	id = submit();
	for (int i = 0; i < 1200 && !left; i++) {
		sleep_ms(50);
		left = trainer_log_count(id, ") left: no heartbeat");
	}
	cr_assert_gt(left, 0, "no warned node left in 60 s");
	/* the next PROGRESS has it */
	sleep_ms(1500);
	st = status(id);
	losses = json_integer_value(json_object_get(st, "losses"));
	json_decref(st);
	lost = trainer_log_count(id, ") lost: no heartbeat");
	cr_assert_leq(losses, lost, "status: %lld losses; the coordinator: %d "
		      "lost, %d left", (long long)losses, lost,
		      trainer_log_count(id, ") left: no heartbeat"));
	cancel_job(id, 20);
}

static void wait_progress(int64_t id);

/* A spot instance of job id whose node is ready and was neither warned
 * nor let go (the latest), or -1. */
static int64_t quiet_spot_instance(int64_t id)
{
	char q[1024];

	snprintf(q, sizeof q, "SELECT json_extract(e.detail, '$.instance') "
		 "FROM events e WHERE e.job_id = %lld AND e.kind = 'ready' "
		 "AND json_extract(e.detail, '$.reliable') = 0 AND NOT EXISTS "
		 "(SELECT 1 FROM events f WHERE f.job_id = e.job_id AND f.id > "
		 "e.id AND f.kind <> 'ready' AND json_extract(f.detail, "
		 "'$.instance') = json_extract(e.detail, '$.instance')) "
		 "ORDER BY e.id DESC LIMIT 1", (long long)id);
	return sql_int(q);
}

static void kill_it(pid_t pid, void *ctx)
{
	int *n = ctx;

	if (kill(pid, SIGKILL) == 0)
		(*n)++;
}

/* A node (a spot instance's process) SIGKILLed on a live host: the
 * daemon reaps it and tells the coordinator at once (GONE), so each of
 * its roles is lost "its process ended", none after the heartbeat
 * timeout; the controller replaces it and the job ends well.  (A node
 * that a market eviction warns meanwhile leaves instead: another is
 * tried.) */
Test(jobs, a_killed_nodes_roles_are_lost_at_once)
{
	json_t *st;
	int64_t id;
	int ended = 0;

	daemon_up();
	/* long enough for five tries, and the rest: the first kill comes
	 * at a fifth of it, measured (at 150 epochs, a tenth) */
	write_job(75, NULL);
	id = submit();
	wait_progress(id);
	for (int tries = 0; tries < 5 && !ended; tries++) {
		int64_t inst = -1;
		char node[48];
		int killed = 0;

		for (int i = 0; i < 200 && inst < 0; i++) {
			inst = quiet_spot_instance(id);
			if (inst < 0)
				sleep_ms(50);
		}
		cr_assert_geq(inst, 0, "no quiet spot node in 10 s");
		snprintf(node, sizeof node, "--node %lld ",
			 (long long)inst * 100);
		(void)each_argv("proteus-trainer node", node, kill_it, &killed);
		for (int i = 0; i < 60 && killed && !ended; i++) {
			sleep_ms(50);
			ended = trainer_log_count(id, "lost: its process "
						  "ended");
		}
	}
	cr_assert_gt(ended, 0, "the coordinator never heard a node died");
	cr_assert_eq(trainer_log_count(id, ") lost: no heartbeat"), 0);
	st = wait_end(id, 120);
	cr_assert_str_eq(state_of(st), "done", "%s", daemon_said());
	json_decref(st);
}

/* Wait until job id has trained a clock (10 s at most). */
static void wait_progress(int64_t id)
{
	json_t *st = NULL;

	for (int i = 0; i < 200 && !st; i++) {
		st = status(id);
		if (json_integer_value(json_object_get(st, "clock")) > 0)
			break;
		json_decref(st);
		st = NULL;
		sleep_ms(50);
	}
	cr_assert_not_null(st, "no progress in 10 s");
	json_decref(st);
}

/* SIGTERM the daemon: it must be gone within 5 s. */
static void term_daemon(void)
{
	int ws;

	kill(jt.pid, SIGTERM);
	for (int i = 0; i < 100 && waitpid(jt.pid, &ws, WNOHANG) == 0; i++)
		sleep_ms(50);
	cr_assert(kill(jt.pid, 0) != 0, "proteusd still up 5 s after SIGTERM");
	jt.pid = 0;
}

/* Paths a submitter names that never open (a FIFO), are not files, or are
 * not theirs to read: each refused at once, naming the path and what it
 * is; no loader thread or client slot is kept; the daemon answers and
 * stops on SIGTERM within seconds. */
Test(jobs, paths_that_never_open_are_refused_at_once)
{
	static const char *fields[] = { "trace", "ondemand_prices" };
	char fifo[600], extra[1400];
	struct pxrun r;

	daemon_up_with("max_clients 4\n");
	snprintf(fifo, sizeof fifo, "%s/fifo", jt.tmp);
	cr_assert_eq(mkfifo(fifo, 0666), 0);
	/* more than max_clients submits: a slot kept by any would refuse
	 * the next */
	for (int i = 0; i < 6; i++) {
		snprintf(extra, sizeof extra, "{\"world\": {\"name\": "
			 "\"local\", \"%s\": \"%s\"}}", fields[i % 2], fifo);
		write_job(1, extra);
		cr_assert_eq(ctl(&r, 10, "submit", jt.job, NULL, NULL), 3,
			     "%s: %s", extra, r.err);
		cr_assert(strstr(r.err, fifo) && strstr(r.err, "a FIFO"),
			  "%s", r.err);
		pxrun_free(&r);
	}
	snprintf(extra, sizeof extra, "{\"world\": {\"name\": \"local\", "
		 "\"trace\": \"%s\"}}", jt.tmp);
	write_job(1, extra);
	cr_assert_eq(ctl(&r, 10, "submit", jt.job, NULL, NULL), 3, "%s", r.err);
	cr_assert(strstr(r.err, "a directory"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 5, "ping", NULL, NULL, NULL), 0, "%s",
		     daemon_said());
	pxrun_free(&r);
	cr_assert_eq(sql_int("SELECT count(*) FROM jobs"), 0);
	/* SIGTERM: gone within seconds (no thread left blocked) */
	term_daemon();
}

/* A submitter that leaves while its submission is being read frees its
 * client slot at once. */
Test(jobs, a_client_gone_before_its_answer_frees_its_slot)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char *line, *log = NULL;
	json_t *req;
	struct pxrun r;
	bool seen = false;

	daemon_up_with("max_clients 2\n");
	write_job(1, NULL);
	{
		json_error_t je;
		json_t *spec = json_load_file(jt.job, 0, &je);
		char *shared = px_shared_path("traces/us-east-1_2016-02_"
					      "2016-04_linux.json.gz");

		cr_assert_not_null(spec);
		/* a 2-month trace: reading it takes a while */
		json_object_set_new(json_object_get(spec, "world"), "trace",
				    json_string(shared));
		req = json_pack("{s:i, s:s, s:o}", "v", PROTO_VERSION, "cmd",
				"submit", "spec", spec);
		free(shared);
	}
	line = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	snprintf(a.sun_path, sizeof a.sun_path, "%s", jt.sock);
	for (int i = 0; i < 2; i++) {
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);

		cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
		cr_assert_eq(write(fd, line, strlen(line)),
			     (ssize_t)strlen(line));
		cr_assert_eq(write(fd, "\n", 1), 1);
		close(fd);
	}
	free(line);
	/* the event: the daemon saw both leave (before their answers) */
	for (int i = 0; i < 200 && !seen; i++) {
		const char *p;
		int n = 0;

		free(log);
		log = daemon_log();
		for (p = log; (p = strstr(p, "left before its answer")); p++)
			n++;
		seen = n == 2;
		if (!seen)
			sleep_ms(25);
	}
	cr_assert(seen, "%s", log);
	free(log);
	/* both slots are free: an admin gets in */
	cr_assert_eq(ctl(&r, 5, "ping", NULL, NULL, NULL), 0, "%s", r.err);
	pxrun_free(&r);
}

/* A job's name from outside goes escaped into the daemon's log: no forged
 * line, no terminal escape. */
Test(jobs, a_hostile_name_cannot_forge_a_log_line)
{
	struct pxrun r;
	char *log;

	daemon_up();
	write_job(1, "{\"name\": \"x\\nproteusd: notice: job 99 done\\u001b"
		  "[2J\"}");
	cr_assert_eq(ctl(&r, 10, "submit", jt.job, NULL, NULL), 0, "%s",
		     r.err);
	pxrun_free(&r);
	cr_assert_eq(ctl(&r, 10, "cancel", "1", NULL, NULL), 0, "%s", r.err);
	pxrun_free(&r);
	log = daemon_log();
	cr_assert_null(strchr(log, '\x1b'), "an ESC reached the log");
	cr_assert_null(strstr(log, "\nproteusd: notice: job 99 done"),
		       "a forged line: %s", log);
	cr_assert(strstr(log, "'x\\nproteusd: notice: job 99 done\\x1b[2J'"),
		  "%s", log);
	free(log);
}

/* Copy src to dst, at most max bytes of it. */
static void copy_file(const char *src, const char *dst, long max)
{
	FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
	char buf[65536];
	size_t n;
	long left = max;

	cr_assert(in && out, "%s -> %s", src, dst);
	while (left > 0 && (n = fread(buf, 1, left < (long)sizeof buf ?
				      (size_t)left : sizeof buf, in)) > 0) {
		cr_assert_eq(fwrite(buf, 1, n, out), n);
		left -= (long)n;
	}
	fclose(in);
	fclose(out);
}

/* Nodes that cannot start (a truncated training set: each node exits 3
 * at start, the coordinator does not read that file) fail the job fast,
 * with the node's own error in status and events, after a few launches,
 * not hundreds. */
Test(jobs, a_job_whose_nodes_cannot_start_fails_fast)
{
	static const char *files[] = {
		"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
		"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz" };
	const char *fm = "/usr/share/datasets/fashion-mnist";
	char dir[600], src[700], dst[700];
	struct pxrun r;
	json_t *st;
	const char *err;
	int64_t id, launched;

	snprintf(dir, sizeof dir, "%s/cut", jt.tmp);
	cr_assert_eq(mkdir(dir, 0755), 0);
	for (int i = 0; i < 4; i++) {
		snprintf(src, sizeof src, "%s/%s", fm, files[i]);
		snprintf(dst, sizeof dst, "%s/%s", dir, files[i]);
		copy_file(src, dst, i == 2 ? 100000 : 1L << 30);
	}
	{
		char more[700];

		snprintf(more, sizeof more, "data_dir %s\n", dir);
		daemon_up_with(more);
	}
	write_job(1, NULL);
	id = submit();
	st = wait_end(id, 60);
	cr_assert_str_eq(state_of(st), "failed");
	err = json_string_value(json_object_get(st, "error"));
	cr_assert(err && strstr(err, "nodes cannot start") &&
		  strstr(err, "truncated"), "%s", err ? err : "(no error)");
	check_books(id, st);
	json_decref(st);
	launched = sql_int("SELECT count(*) FROM instances i JOIN allocations "
			   "a ON a.id = i.alloc_id");
	/* the first fleet (1 reliable, up to 6 spot) and at most one refill
	 * of it before the third failure in a row (the tester saw 817) */
	cr_assert_leq(launched, 2 * 7 + 3, "%lld launches",
		      (long long)launched);
	cr_assert_geq(sql_int("SELECT count(*) FROM events WHERE kind = "
			      "'node_failed' AND detail LIKE '%truncated%'"),
		      3);
	/* a failure at start is the node's own end, not an eviction */
	cr_assert_geq(sql_int("SELECT count(*) FROM instances WHERE "
			      "end_reason LIKE 'failed to start: exited with "
			      "status%'"), 3);
	cr_assert_eq(sql_int("SELECT count(*) FROM events WHERE kind = "
			     "'eviction' AND detail LIKE '%failed to%'"), 0);
	cr_assert_eq(ctl(&r, 10, "events", "1", NULL, NULL), 0, "%s", r.err);
	cr_assert(strstr(r.out, "node_failed"), "%s", r.out);
	pxrun_free(&r);
	cr_assert_eq(processes_after(2000), 0, "trainer processes left");
}

/* A job bigger than this host: its reliable tier refused at submit, its
 * spot fleet capped (said on stderr), the host's node processes never
 * above the capacity; cancel and SIGTERM take effect within seconds. */
Test(jobs, a_job_bigger_than_the_host_is_refused_or_capped)
{
	struct pxrun r;
	int most = 0;
	int64_t id;

	daemon_up_with("local_max_instances 3\n");
	write_job(200, "{\"reliable\": {\"type\": \"m3.large\", \"count\": "
		  "3}}");
	cr_assert_eq(ctl(&r, 10, "submit", jt.job, NULL, NULL), 3, "%s", r.err);
	cr_assert(strstr(r.err, "reliable.count: 3") &&
		  strstr(r.err, "at most 3"), "%s", r.err);
	pxrun_free(&r);
	/* 1 reliable + up to 6 spot: capped at 2 spot */
	write_job(200, NULL);
	cr_assert_eq(ctl(&r, 10, "submit", jt.job, NULL, NULL), 0, "%s", r.err);
	cr_assert(strstr(r.err, "capped at 2"), "%s", r.err);
	id = strtoll(r.out, NULL, 10);
	pxrun_free(&r);
	for (int i = 0; i < 60; i++) {
		int n = our_groups();   /* instances and the coordinator */

		if (n > most)
			most = n;
		sleep_ms(100);
	}
	cr_assert_gt(most, 1, "nothing ran");
	cr_assert_leq(most, 3 + 1, "%d trainer process groups", most);
	{
		char ids[24];

		snprintf(ids, sizeof ids, "%lld", (long long)id);
		cr_assert_eq(ctl(&r, 10, "cancel", ids, NULL, NULL), 0, "%s",
			     r.err);
		pxrun_free(&r);
	}
	cr_assert_eq(processes_after(3000), 0, "trainer processes left");
	term_daemon();
}

/* Send sig to every trainer process of ours; how many. */
static void send_sig(pid_t pid, void *ctx)
{
	kill(pid, *(int *)ctx);
}

static int signal_ours(int sig)
{
	return each_ours(send_sig, &sig);
}

/* A job whose trainer stops making progress while it rents (here every
 * trainer process frozen: no node dies, nothing is replaced, the clock
 * stands for stall_seconds and half a market hour, 7.5 s at the job's
 * speedup 240) is detected: its trainer is
 * restarted from the checkpoint once (an event says so), and when the
 * restart makes no progress either the job is failed, with the reason in
 * status, instead of renting on. */
Test(jobs, a_stalled_job_is_stopped_and_says_why)
{
	json_t *st = NULL;
	const char *err;
	int64_t id;

	/* 7 s, under the market's 7.5; 15 under the sanitizers (make
	 * check): more than a trainer's start takes there, which the
	 * watchdog counts too */
	daemon_up_with(getenv("ASAN_OPTIONS") ? "stall_seconds 15\n" :
		       "stall_seconds 7\n");
	write_job(200, NULL);
	id = submit();
	wait_progress(id);
	cr_assert_gt(signal_ours(SIGSTOP), 1);
	/* nodes the market adds meanwhile are frozen too, before they could
	 * time out waiting for the frozen coordinator */
	for (int i = 0; i < 900; i++) {
		st = status(id);
		if (strcmp(state_of(st), "running"))
			break;
		json_decref(st);
		st = NULL;
		signal_ours(SIGSTOP);
		sleep_ms(200);
	}
	signal_ours(SIGCONT);
	cr_assert_not_null(st, "still running after 180 s");
	cr_assert_str_eq(state_of(st), "failed");
	err = json_string_value(json_object_get(st, "error"));
	cr_assert(err && strstr(err, "stalled: the trainer made no progress"),
		  "%s", err ? err : "(none)");
	cr_assert_eq(sql_int("SELECT count(*) FROM events WHERE kind = 'error'"
			     " AND detail LIKE 'stalled: %restarting the "
			     "trainer from the checkpoint (1 of %'"), 1);
	check_books(id, st);
	json_decref(st);
	cr_assert_eq(processes_after(3000), 0, "trainer processes left");
}

/* SIGTERM suspends a running job: the daemon ends within seconds, says
 * what becomes of the job (log, a "suspended" event), the store keeps it
 * running, and the next start resumes it to its end (its checkpoints
 * prioritized and incremental: trainer.checkpoint_budget). */
Test(jobs, sigterm_suspends_a_running_job_and_says_so)
{
	json_t *st = NULL;
	char *log;
	int64_t id;

	daemon_up();
	/* prioritized checkpoints (issue 27): the restart resumes from
	 * the full one and its records */
	/* 30 epochs: the SIGTERM comes at its first progress, a fifth of
	 * it (measured at 60 epochs: a tenth) */
	write_job(30, "{\"trainer\": {\"model\": \"mlr\", \"epochs\": 30, "
		  "\"batch\": 128, \"lr\": 0.05, \"checkpoint_every\": 2, "
		  "\"checkpoint_budget\": 4096}}");
	id = submit();
	wait_progress(id);
	/* the restart resumes from a checkpoint only if one was written
	 * first: the first clock can come before it on a loaded host (a
	 * full run failed here with no "resuming from") */
	for (int i = 0; i < 200 &&
	     trainer_log_count(id, "checkpoint at clock") == 0; i++)
		sleep_ms(50);
	cr_assert_gt(trainer_log_count(id, "checkpoint at clock"), 0,
		     "no checkpoint in 10 s");
	term_daemon();
	log = daemon_log();
	cr_assert(strstr(log, "job 1 'mlr-local': suspended at market time"),
		  "%s", log);
	free(log);
	cr_assert_eq(sql_int("SELECT count(*) FROM events WHERE kind = "
			     "'suspended'"), 1);
	cr_assert_eq(sql_int("SELECT count(*) FROM jobs WHERE state = "
			     "'running'"), 1);
	cr_assert_eq(processes_after(3000), 0, "trainer processes left");
	start_daemon();
	st = wait_end(id, 120);
	cr_assert_str_eq(state_of(st), "done", "%s",
			 json_string_value(json_object_get(st, "error")));
	check_books(id, st);
	json_decref(st);
	cr_assert_gt(trainer_log_count(id, "model.pxc.delta ("), 0, "no "
		     "record of a prioritized checkpoint was written");
	cr_assert_gt(trainer_log_count(id, "resuming from"), 0);
}

/* The budget is a cap in the daemon too: one too small for any instance
 * starts nothing and ends the job at once for the budget ($0); a larger
 * one ends it for the budget with the cost at most the budget (legacy
 * hours are checked before they are charged: docs/jobspec.md). */
Test(jobs, the_budget_is_a_cap)
{
	static const char *budgets[] = { "0.000001", "0.4" };

	daemon_up();
	for (int i = 0; i < 2; i++) {
		char extra[256];
		json_t *st;
		int64_t id;
		double cost;

		/* at the world's fastest speedup: the cap is in market
		 * time, and $0.4 took 15 s of 7 nodes' training at 240x */
		snprintf(extra, sizeof extra, "{\"budget_usd\": %s, "
			 "\"world\": {\"name\": \"local\", \"start\": "
			 "\"2016-03-02T00:00:00Z\", \"speedup\": 1200}}",
			 budgets[i]);
		write_job(200, extra);
		id = submit();
		st = wait_end(id, 120);
		cr_assert_str_eq(state_of(st), "failed");
		cr_assert(strstr(json_string_value(json_object_get(st,
					"error")), "budget"), "%s",
			  json_string_value(json_object_get(st, "error")));
		cost = json_number_value(json_object_get(st, "cost_usd"));
		cr_assert_leq(cost, atof(budgets[i]) + 1e-9,
			      "budget %s: cost %.6f", budgets[i], cost);
		if (i == 0)
			cr_assert_eq(cost, 0.0);
		json_decref(st);
	}
	cr_assert_eq(processes_after(3000), 0, "trainer processes left");
}

/* Run the copied proteusctl as uid 65534 (group 0, so that it may use
 * the 0660 socket), stderr into errp; its exit status. */
static int submit_as_nobody(const char *prog, const char *errp)
{
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fd = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
		gid_t none[1] = {0};

		if (fd < 0 || dup2(fd, 2) < 0 || setgroups(0, none) ||
		    setgid(0) || setuid(65534))
			_exit(126);
		execl(prog, "proteusctl", "--socket", jt.sock, "submit", jt.job,
		      (char *)NULL);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The daemon reads a spec's files with the submitter's rights: a user
 * who may use the socket but not read a root-only file is refused,
 * without a word of the file in the error; root may read it. */
Test(jobs, files_are_read_with_the_submitters_rights)
{
	char secret[600], prices[600], bin[600], prog[700], errp[600],
	     extra[1400], *text;
	char *od = px_src_path("etc/ondemand/us-east-1_2016-02_2016-04.json");
	struct pxrun r;
	size_t n;
	struct px_error e = {0};
	FILE *f;

	char trace[600];
	char *slice = px_src_path("docs/examples/traces/"
				  "us-east-1_2016-03-01_7d_linux.json.gz");

	if (geteuid() != 0)
		cr_skip_test("needs root to act as another user");
	/* the daemon's own trace, root's only: read with its rights */
	snprintf(trace, sizeof trace, "%s/trace.json.gz", jt.tmp);
	copy_file(slice, trace, 1L << 30);
	cr_assert_eq(chmod(trace, 0600), 0);
	free(slice);
	{
		char more[700];

		snprintf(more, sizeof more, "local_trace %s\n", trace);
		daemon_up_with(more);
	}
	cr_assert_eq(chmod(jt.tmp, 0755), 0);
	snprintf(secret, sizeof secret, "%s/secret.json", jt.tmp);
	snprintf(prices, sizeof prices, "%s/prices.json", jt.tmp);
	snprintf(bin, sizeof bin, "%s/bin", jt.tmp);
	snprintf(prog, sizeof prog, "%s/proteusctl", bin);
	snprintf(errp, sizeof errp, "%s/err", jt.tmp);
	f = fopen(secret, "w");
	cr_assert_not_null(f);
	fputs("SECRETWORD and more", f);
	fclose(f);
	cr_assert_eq(chmod(secret, 0600), 0);
	copy_file(od, prices, 1L << 30);
	cr_assert_eq(chmod(prices, 0600), 0);
	cr_assert_eq(mkdir(bin, 0755), 0);
	{
		char *built;

		cr_assert(asprintf(&built, "%s/proteusctl",
				   getenv("PX_BUILD")) > 0);
		copy_file(built, prog, 1L << 30);
		cr_assert_eq(chmod(prog, 0755), 0);
		free(built);
	}
	for (int i = 0; i < 2; i++) {
		snprintf(extra, sizeof extra, "{\"world\": {\"name\": "
			 "\"local\", \"start\": \"2016-03-02\", "
			 "\"ondemand_prices\": \"%s\"}}", i ? prices : secret);
		write_job(1, extra);
		cr_assert_eq(chmod(jt.job, 0644), 0);
		cr_assert_eq(submit_as_nobody(prog, errp), 3);
		cr_assert_eq(px_read_file(errp, 1 << 20, &text, &n, &e), PX_OK);
		cr_assert(strstr(text, i ? prices : secret) &&
			  strstr(text, "ermission denied"), "%s", text);
		cr_assert_null(strstr(text, "SECRETWORD"), "%s", text);
		free(text);
	}
	/* root may read the same file: the job is taken */
	cr_assert_eq(ctl(&r, 10, "submit", jt.job, NULL, NULL), 0, "%s", r.err);
	pxrun_free(&r);
	/* the user's own readable file is taken from that user, the daemon's
	 * root-only trace notwithstanding */
	cr_assert_eq(chmod(prices, 0644), 0);
	cr_assert_eq(submit_as_nobody(prog, errp), 0);
	free(od);
}

/* A file a job named, replaced by a FIFO after the job ended, cannot stop
 * the daemon when status or jobs look at that job (in this life and the
 * next). */
Test(jobs, a_named_file_turned_fifo_does_not_wedge_status)
{
	char prices[600], extra[1400], ids[24];
	char *od = px_src_path("etc/ondemand/us-east-1_2016-02_2016-04.json");
	struct pxrun r;
	int64_t id;

	daemon_up();
	snprintf(prices, sizeof prices, "%s/prices.json", jt.tmp);
	copy_file(od, prices, 1L << 30);
	free(od);
	snprintf(extra, sizeof extra, "{\"world\": {\"name\": \"local\", "
		 "\"start\": \"2016-03-02\", \"ondemand_prices\": \"%s\"}}",
		 prices);
	write_job(200, extra);
	id = submit();
	snprintf(ids, sizeof ids, "%lld", (long long)id);
	cr_assert_eq(ctl(&r, 10, "cancel", ids, NULL, NULL), 0, "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(unlink(prices), 0);
	cr_assert_eq(mkfifo(prices, 0666), 0);
	for (int life = 0; life < 2; life++) {
		cr_assert_eq(ctl(&r, 5, "status", ids, "--json", NULL), 0,
			     "life %d: %s; %s", life, r.err, daemon_said());
		pxrun_free(&r);
		cr_assert_eq(ctl(&r, 5, "jobs", NULL, NULL, NULL), 0,
			     "life %d: %s", life, r.err);
		pxrun_free(&r);
		cr_assert_eq(ctl(&r, 5, "ping", NULL, NULL, NULL), 0);
		pxrun_free(&r);
		stop_daemon(SIGTERM);
		start_daemon();
	}
}
