/* test_jobs_program.c -- program jobs through a real proteusd in the local
 * world (docs/programs.md): the user's program (tests/fakes/program_toy.py,
 * which follows the contract without real work) submitted by `nobody`,
 * run as nobody from a snapshot of its folder, through evictions with a
 * notice (a price spike in the test's own trace) to done, its checkpoints
 * in the store and restored on the nodes that start after; a program that
 * fails at start fails the job with its stderr; a failure restarts from
 * the latest checkpoint within max_restarts_on_errors; a program that
 * ignores the notice's SIGTERM is killed at the grace; a kill -9 of
 * proteusd mid-job resumes; the books equal the ledger. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/px.h"
#include "jobs_fixture.h"
#include "pxrun.h"

TestSuite(jobs_program, .init = jobs_fixture_setup,
	  .fini = jobs_fixture_teardown, .timeout = 240);

#define NOBODY 65534
#define T0 1456876800            /* 2016-03-02T00:00:00Z */
#define SPIKE_AT (T0 + 3600)     /* an hour in: 3 s at 1200x */
static int64_t spike_at = SPIKE_AT;
static int64_t spike_s = 1800;    /* its length, market seconds */
static int speedup = 1200;
/* the market's length: a job slower than it (a loaded host, the real
 * program) fails when the trace ends, whatever its progress */
static int trace_days = 2;
/* the toy's target (TOY_SAMPLES): 96 samples a 20 ms step in a group of
 * 3, so 48000 is 10 s of steps at the most; a test whose events come
 * early runs a shorter job */
static long toy_samples = 48000;

/* tmp/code/: the toy program, readable by all (nobody reads it). */
static void write_code(void)
{
	char dir[700], cmd[2000];
	char *src = px_src_path("tests/fakes/program_toy.py");

	snprintf(dir, sizeof dir, "%s/code", jt.tmp);
	cr_assert_eq(chmod(jt.tmp, 0755), 0);
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(cmd, sizeof cmd, "cp '%s' '%s/program_toy.py' && chmod 0644 "
		 "'%s/program_toy.py'", src, dir, dir);
	cr_assert_eq(system(cmd), 0);
	free(src);
}

/* The job: 1 reliable and up to 2 spot m3.large, the toy with env (a JSON
 * object's members, may be "") and more program fields (may be ""). */
static void write_job_cmd(const char *cmd, const char *env,
			  const char *more, long samples);

static void write_program_job(const char *env, const char *more)
{
	write_job_cmd("\"/usr/bin/python3\", \"program_toy.py\"", env, more,
		      toy_samples);
}

/* The job with its command (JSON array members) and its samples (the
 * toy's TOY_SAMPLES too). */
static void write_job_cmd(const char *cmd, const char *env, const char *more,
			  long samples)
{
	char text[8192];
	FILE *f;

	write_flat_trace(T0, trace_days, spike_at, spike_s);
	write_code();
	snprintf(text, sizeof text,
		 "{\"name\": \"toy\", \"region\": \"us-east-1\", "
		 "\"work_hours\": 2, \"reference_type\": \"m3.large\", "
		 "\"instances\": 3, \"reliable\": {\"type\": \"m3.large\", "
		 "\"count\": 1}, \"spot\": {\"types\": [\"m3.large\"], "
		 "\"zones\": [\"us-east-1a\"], \"max_instances\": 2}, "
		 "\"scaling_explore\": false, \"startup_seconds\": 60, "
		 "\"program\": {\"command\": [%s], \"code\": \"%s/code\", "
		 "\"env\": "
		 "{\"TOY_SAMPLES\": \"%ld\"%s%s}, "
		 "\"nodes\": {\"min\": 1, \"max\": 3}, \"samples\": %ld%s%s},"
		 " \"world\": {\"name\": \"local\", \"trace\": "
		 "\"%s/trace.json\", \"start\": \"2016-03-02T00:00:00Z\", "
		 "\"speedup\": %d}}",
		 cmd, jt.tmp, samples, env[0] ? ", " : "", env, samples,
		 more[0] ? ", " : "", more, jt.tmp, speedup);
	f = fopen(jt.job, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(jt.job, 0644), 0);
}

/* How many times needle is in the programs' logs of job id (every
 * node's, rotated ones too). */
static int logs_count(int64_t id, const char *needle)
{
	char dir[4200];
	DIR *d;
	struct dirent *e;
	int k = 0;

	snprintf(dir, sizeof dir, "%s.jobs/%lld/logs", jt.db, (long long)id);
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		char path[4500];
		char *buf = NULL;
		size_t n;
		struct px_error err = {0};

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (px_read_file(path, 64 << 20, &buf, &n, &err) != PX_OK)
			continue;
		for (char *p = buf; (p = strstr(p, needle)); p++)
			k++;
		free(buf);
	}
	if (d)
		closedir(d);
	return k;
}

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to run a program as another user");
}

/* The program's whole run: submitted by nobody, run as nobody, through
 * the spike's evictions (the toy checkpoints on the notice's SIGTERM), its
 * checkpoints stored and restored, done, the books the ledger's. */
Test(jobs_program, a_program_job_runs_as_its_submitter_through_evictions)
{
	json_t *st;
	int64_t id;

	need_root();
	daemon_up();
	write_program_job("", "");
	id = submit_as(NOBODY);
	/* the snapshot is the job's: an edit after submit changes nothing */
	{
		char p[700];
		FILE *f;

		snprintf(p, sizeof p, "%s/code/program_toy.py", jt.tmp);
		f = fopen(p, "w");
		cr_assert_not_null(f);
		fputs("import sys\nsys.exit(9)\n", f);
		fclose(f);
	}
	st = wait_end(id, 120);
	cr_assert_str_eq(state_of(st), "done", "%s\n%s",
			 json_dumps(st, 0), daemon_said());
	cr_assert_gt(logs_count(id, "toy: uid=65534 "), 0,
		     "the program did not run as nobody");
	cr_assert_eq(logs_count(id, "toy: uid=0 "), 0, "it ran as root");
	cr_assert_gt(json_integer_value(json_object_get(st, "evictions")), 0,
		     "the spike evicted nothing: %s", json_dumps(st, 0));
	cr_assert_gt(logs_count(id, "term: checkpointed"), 0,
		     "no notice's SIGTERM reached the program");
	cr_assert_gt(events_like(id, "checkpoint", "%stored"), 0);
	cr_assert_gt(logs_count(id, "resumed from "), 0,
		     "no start restored a checkpoint");
	cr_assert_eq(events_like(id, "error", "%program failed%"), 0,
		     "a preemption was counted as a failure");
	check_books(id, st);
	/* the program's own figures in status and in the report */
	cr_assert_geq(json_integer_value(json_object_get(json_object_get(st,
		      "program"), "samples")), 48000, "%s", json_dumps(st, 0));
	{
		char ids[24];
		struct pxrun r;
		json_t *o;

		snprintf(ids, sizeof ids, "%lld", (long long)id);
		cr_assert_eq(ctl(&r, 30, "report", ids, "--json", NULL), 0,
			     "%s", r.err);
		o = json_loads(r.out, 0, NULL);
		cr_assert_geq(json_integer_value(json_object_get(o,
			      "samples")), 48000, "%s", r.out);
		json_decref(o);
		pxrun_free(&r);
	}
	/* its latest checkpoint taken away: the tar of what the program
	 * wrote, its last state in it */
	{
		char ids[24], out[700], cmd[2000], *txt;
		struct pxrun r;
		json_t *o, *c;

		snprintf(ids, sizeof ids, "%lld", (long long)id);
		snprintf(out, sizeof out, "%s/latest.tar", jt.tmp);
		snprintf(cmd, sizeof cmd, "--output=%s", out);
		cr_assert_eq(ctl(&r, 30, "model", ids, cmd, "--json"), 0, "%s",
			     r.err);
		o = json_loads(r.out, 0, NULL);
		cr_assert_str_eq(json_string_value(json_object_get(o,
				 "format")), "tar", "%s", r.out);
		c = json_object_get(json_object_get(st, "program"),
				    "checkpoint");
		cr_assert_str_eq(json_string_value(json_object_get(o, "name")),
				 json_string_value(json_object_get(c, "name")),
				 "%s", r.out);
		snprintf(cmd, sizeof cmd, "tar -xOf '%s' --wildcards '*%s' > "
			 "'%s.json'", out, json_string_value(json_object_get(
			 o, "name")), out);
		cr_assert_eq(system(cmd), 0, "%s", cmd);
		json_decref(o);
		pxrun_free(&r);
		snprintf(cmd, sizeof cmd, "%s.json", out);
		txt = px_test_read_file(cmd, NULL);
		o = txt ? json_loads(txt, 0, NULL) : NULL;
		cr_assert_geq(json_integer_value(json_object_get(o, "samples")),
			      48000, "%s", txt);
		json_decref(o);
		free(txt);
	}
	json_decref(st);
}

Test(jobs_program, a_program_that_fails_at_start_fails_the_job_with_its_stderr)
{
	json_t *st;
	int64_t id;
	const char *why;

	need_root();
	daemon_up();
	write_program_job("\"TOY_FAIL_AT_START\": \"1\"", "");
	id = submit_as(NOBODY);
	st = wait_end(id, 60);
	cr_assert_str_eq(state_of(st), "failed", "%s", json_dumps(st, 0));
	why = json_string_value(json_object_get(st, "error"));
	cr_assert(why && strstr(why, "cannot start: bad config") &&
		  strstr(why, "exit 3"), "%s", why ? why : "(none)");
	json_decref(st);
}

Test(jobs_program, a_failure_restarts_from_the_latest_checkpoint)
{
	json_t *st;
	int64_t id;

	need_root();
	daemon_up();
	char env[1200], mark[800];

	snprintf(mark, sizeof mark, "%s/marks", jt.tmp);
	cr_assert_eq(mkdir(mark, 0777), 0);
	cr_assert_eq(chmod(mark, 0777), 0);
	/* one failure, once the whole group of 3 runs (no spike: nothing
	 * re-forms it after), whatever its start */
	spike_at = T0 + 3 * 86400;
	/* the failure at 6000, a quarter in (its 5 s of steps at the most) */
	toy_samples = 24000;
	snprintf(env, sizeof env, "\"TOY_FAIL_AT_SAMPLES\": \"6000\", "
		 "\"TOY_FAIL_ONCE\": \"%s/failed\", \"TOY_FAIL_NODES\": "
		 "\"3\"", mark);
	write_program_job(env, "\"max_restarts_on_errors\": 1");
	id = submit_as(NOBODY);
	st = wait_end(id, 120);
	cr_assert_str_eq(state_of(st), "done", "%s", json_dumps(st, 0));
	cr_assert_eq(events_like(id, "error", "%restart 1 of 1%diverged%"),
		     1);
	cr_assert_gt(logs_count(id, "resumed from "), 0);
	json_decref(st);
}

/* An elastic group (membership "elastic": the toy stands for torchrun)
 * whose peers the spike takes with a notice (each toy it stops makes the
 * mark), on_mark what the reliable node's toy then does: "fail", exit 1,
 * as torchrun's agent does when its barrier on a key a lost peer never
 * writes times out; "hang", train no more, as that barrier waits.  The
 * spike keeps spot away 18 s (21600 market s): no replacement's progress
 * stands for the group's.  Its id. */
static int64_t elastic_peer_left(const char *on_mark, const char *more)
{
	char env[1200], mark[800];

	snprintf(mark, sizeof mark, "%s/marks", jt.tmp);
	cr_assert_eq(mkdir(mark, 0777), 0);
	cr_assert_eq(chmod(mark, 0777), 0);
	/* 6 s in: every node trains by then; 20000 samples is the
	 * reliable toy's 12.5 s alone at the most (each toy counts its own
	 * here; its steps are paced by their sleeps) */
	spike_at = T0 + 2 * 3600;
	spike_s = 6 * 3600;
	toy_samples = 20000;
	snprintf(env, sizeof env, "\"TOY_TERM_MARK\": \"%s/left\", "
		 "\"TOY_ON_MARK\": \"%s\"", mark, on_mark);
	write_program_job(env, more);
	return submit_as(NOBODY);
}

/* An elastic group whose peer left (elastic_peer_left's mark and spec),
 * started anew from the latest checkpoint and done: the program said
 * `said` once, its first start ended as `ended` and the second began as
 * `again` (events' LIKE patterns), with no failure of the program. */
static void peer_left_starts_anew(const char *mark, const char *more,
				  const char *said, const char *ended,
				  const char *again)
{
	json_t *st;
	int64_t id;

	need_root();
	daemon_up();
	id = elastic_peer_left(mark, more);
	st = wait_end(id, 120);
	cr_assert_str_eq(state_of(st), "done", "%s\n%s", json_dumps(st, 0),
			 daemon_said());
	cr_assert_eq(logs_count(id, said), 1);
	cr_assert_eq(events_like(id, "program", ended), 1, "%s",
		     daemon_said());
	cr_assert_eq(events_like(id, "program", again), 1);
	cr_assert_eq(events_like(id, "error", "%program failed%"), 0);
	cr_assert_gt(logs_count(id, "resumed from "), 0);
	json_decref(st);
}

/* The program of an elastic group exits 1 after a peer of its start left
 * (torchrun giving up on a barrier): not the program's failure, with no
 * restart of max_restarts_on_errors (0 here) spent; a new start of the
 * group from the latest checkpoint, done. */
Test(jobs_program, an_elastic_program_that_gives_up_after_a_peer_left_starts_anew)
{
	peer_left_starts_anew("fail", "\"membership\": \"elastic\"",
			      "toy: a peer left; giving up",
			      "%the program exited (exit 1) after a peer of "
			      "start 1 left%",
			      "start 2 (it gave up after a peer left)%");
}

/* An elastic group that stops training after a peer left (torchrun in a
 * barrier that waits 300 s) is started anew after program.reform_seconds
 * without progress (5 here), its stuck program stopped: done. */
Test(jobs_program, an_elastic_group_stuck_after_a_peer_left_starts_anew)
{
	peer_left_starts_anew("hang", "\"membership\": \"elastic\", "
			      "\"reform_seconds\": 5",
			      "toy: a peer left; waiting for it",
			      "start 1: no progress % s after a peer left%",
			      "start 2 (no progress after a peer left)%");
}

Test(jobs_program, a_program_that_ignores_the_notice_is_killed_at_the_grace)
{
	json_t *st;
	int64_t id;

	char path[4200];
	char *log;

	need_root();
	daemon_up();
	/* a 1 s notice (120 s at 120x), of which a 30 s grace of 120 is
	 * 250 ms: the agent's SIGKILL comes well before the world's end of
	 * the node */
	speedup = 120;
	spike_at = T0 + 600;
	/* the notice 5 s in, when the toy has done 24000 samples at the most
	 * (its steps are paced by their sleeps: a fast host is no faster);
	 * the rest on the reliable node alone, 1600 a second */
	toy_samples = 30000;
	write_program_job("\"TOY_ON_TERM\": \"ignore\"",
			  "\"grace_seconds\": 30");
	id = submit_as(NOBODY);
	st = wait_end(id, 120);
	cr_assert_str_eq(state_of(st), "done", "%s", json_dumps(st, 0));
	cr_assert_gt(logs_count(id, "term: ignored"), 0);
	snprintf(path, sizeof path, "%s.jobs/%lld/program.log", jt.db,
		 (long long)id);
	log = px_test_read_file(path, NULL);
	cr_assert_not_null(log);
	{
		const char *g = strstr(log, "told to leave in ");
		int left = -1, ms = -1;

		if (g)
			(void)sscanf(g, "told to leave in %d ms: the program "
				     "gets SIGTERM and %d", &left, &ms);
		/* 30 s of 120: a quarter of what the notice leaves, as the
		 * agent was told it (1000 ms, or less on a loaded host) */
		cr_assert(left > 0 && left <= 1000 && ms == left * 30 / 120,
			  "left %d ms, grace %d ms: %s", left, ms, log);
	}
	cr_assert(strstr(log, "ended (signal 9)"), "the program that ignored "
		  "SIGTERM was not killed: %s", log);
	free(log);
	json_decref(st);
}

Test(jobs_program, a_kill_9_of_proteusd_mid_job_resumes)
{
	json_t *st;
	int64_t id;

	need_root();
	daemon_up();
	/* the toy's 20 ms steps: 5 s of a group of 3, the kill at its
	 * first stored checkpoint (25 steps, half a second in) */
	toy_samples = 24000;
	write_program_job("", "");
	id = submit_as(NOBODY);
	for (int i = 0; i < 300 && !events_like(id, "checkpoint", "%stored");
	     i++)
		sleep_ms(50);
	cr_assert_gt(events_like(id, "checkpoint", "%stored"), 0);
	stop_daemon(SIGKILL);
	(void)processes_after(3000);
	start_daemon();
	st = wait_end(id, 120);
	cr_assert_str_eq(state_of(st), "done", "%s", json_dumps(st, 0));
	cr_assert_gt(logs_count(id, "resumed from "), 0);
	check_books(id, st);
	json_decref(st);
}

/* The example alone: one process, no torchrun, no PROTEUS_* (its
 * checkpoints in a folder of its own), started; alone_accuracy reads its
 * "test accuracy: X".  Run before the job, not beside it: beside it, its
 * CPU and the job's four torch processes more than doubled the other
 * tests' times on 2 cores (load 10). */
static FILE *alone_start(const char *prog, const char *epochs)
{
	char cmd[2000];
	FILE *f;

	snprintf(cmd, sizeof cmd, "cd '%s' && mkdir -p alone && cd alone && "
		 "OMP_NUM_THREADS=1 /usr/bin/python3 '%s' --epochs %s 2>&1",
		 jt.tmp, prog, epochs);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	return f;
}

static double alone_accuracy(FILE *f)
{
	char line[256];
	double acc = -1;

	while (fgets(line, sizeof line, f))
		(void)sscanf(line, "test accuracy: %lf", &acc);
	cr_assert_eq(pclose(f), 0, "the example failed alone");
	cr_assert_gt(acc, 0.5, "no accuracy from the example alone");
	return acc;
}

/* Whether instance inst of job id has its workers in a formed group (its
 * log says where they start): torch's start on a loaded host is seconds,
 * and a kill before it is no loss of a peer that trains.  Waits up to
 * 60 s for it. */
static bool replacement_trains(int64_t id, int inst)
{
	char path[4200];

	snprintf(path, sizeof path, "%s.jobs/%lld/logs/i%d.log", jt.db,
		 (long long)id, inst);
	for (int i = 0; i < 600; i++) {
		char *log = px_test_read_file(path, NULL);
		bool in = log && strstr(log, ": start at samples ");

		free(log);
		if (in)
			return true;
		sleep_ms(100);
	}
	return false;
}

/* A node lost without notice: once a replacement (instance 4 or later)
 * has trained a while, its whole process group (agent, torchrun, workers)
 * gets SIGKILL, as a crashed instance would.  Its instance id. */
static int kill_a_replacement(int64_t id)
{
	char cmd[4400], line[64];

	snprintf(cmd, sizeof cmd, "pgrep -f 'p.db.jobs/%lld/n0 --inst [4-9] '"
		 " | head -1", (long long)id);
	for (int i = 0; i < 1200; i++) {
		FILE *f = popen(cmd, "r");
		long pid = 0;
		char stat[64];
		int inst = 0;

		if (f && fgets(line, sizeof line, f))
			pid = strtol(line, NULL, 10);
		if (f)
			pclose(f);
		snprintf(stat, sizeof stat, "/proc/%ld/cmdline", pid);
		if (pid > 0) {
			char *c = px_test_read_file(stat, NULL);

			/* argv is NUL-separated: "--inst" then the id */
			for (char *a = c; c && a && *a; a += strlen(a) + 1)
				if (!strcmp(a, "--inst"))
					inst = atoi(a + strlen(a) + 1);
			free(c);
		}
		if (inst > 0) {
			cr_assert(replacement_trains(id, inst), "replacement %d "
				  "never trained: %s", inst, daemon_said());
			sleep_ms(1000);
			if (kill(-(pid_t)pid, SIGKILL) == 0)
				return inst;
		}
		sleep_ms(100);
	}
	cr_assert_fail("no replacement ran");
	return 0;
}

/* The shipped PyTorch example (docs/examples/programs/fashion_mnist_ddp.py,
 * DDP over gloo on Fashion-MNIST) under torchrun, elastic over the fleet:
 * its c10d rendezvous hosted by the reliable node, the group re-formed by
 * torchrun when the spike evicts the spot nodes (with a notice: their
 * workers checkpoint) and when the replacements join, its workers resuming
 * from PROTEUS_CKPT_LATEST; done at the accuracy the program reaches alone,
 * within a point; the books the ledger's. */
Test(jobs_program, the_pytorch_example_runs_elastic_through_evictions,
     .timeout = 400)
{
	char *prog = px_src_path("docs/examples/programs/fashion_mnist_ddp.py");
	char cmd[2000];
	double alone, acc;
	json_t *st;
	int64_t id;
	int killed;
	FILE *af;

	need_root();
	if (access("/usr/bin/torchrun", X_OK) != 0)
		cr_skip_test("no torchrun (python3-torch)");
	af = alone_start(prog, "2");
	alone = alone_accuracy(af);
	daemon_up();
	/* after torch's start and the group's first forming */
	spike_at = T0 + 3 * 3600;
	/* 12 real minutes of market at 1200x: the test's own bound is
	 * wait_end's, not the trace's end on a host that trains slowly */
	trace_days = 10;
	/* a checkpoint every 50 steps: one is there for the loss */
	write_job_cmd("\"/usr/bin/torchrun\", \"fashion_mnist_ddp.py\", "
		      "\"--epochs\", \"2\", \"--ckpt-every\", \"50\"",
		      "\"OMP_NUM_THREADS\": \"1\"",
		      "\"grace_seconds\": 110", 2 * 60000);
	snprintf(cmd, sizeof cmd, "cp '%s' '%s/code/' && chmod 0644 "
		 "'%s/code/fashion_mnist_ddp.py'", prog, jt.tmp, jt.tmp);
	cr_assert_eq(system(cmd), 0);
	id = submit_as(NOBODY);
	killed = kill_a_replacement(id);
	st = wait_end(id, 360);
	cr_assert_str_eq(state_of(st), "done", "%s\n%s", json_dumps(st, 0),
			 daemon_said());
	cr_assert_gt(json_integer_value(json_object_get(st, "evictions")), 0);
	{
		char like[64];

		snprintf(like, sizeof like, "%%\"instance\":%d,%%lost%%",
			 killed);
		cr_assert_eq(events_like(id, "eviction", like), 1, "instance %d "
			     "killed without notice", killed);
	}
	cr_assert_gt(logs_count(id, "resumed from "), 0,
		     "no worker resumed from the latest checkpoint");
	acc = json_number_value(json_object_get(st, "test_accuracy"));
	cr_assert_geq(acc, alone - 0.01, "accuracy %.4f through evictions, "
		      "%.4f alone", acc, alone);
	cr_assert_eq(events_like(id, "error", "%program failed%"), 0);
	check_books(id, st);
	json_decref(st);
	free(prog);
}

/* pid is a task that has not exited (a zombie has). */
static bool task_alive(int pid)
{
	char path[64], *st, *r;
	bool alive;

	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	st = px_test_read_file(path, NULL);
	r = st ? strrchr(st, ')') : NULL;
	alive = r && r[1] == ' ' && r[2] != 'Z' && r[2] != 'X';
	free(st);
	return alive;
}

/* A program that forks without end is held to (procs_per_node + 1) x
 * 1024 tasks, not by the host's end: by its pids cgroup where the host
 * has one (its own tasks), else by RLIMIT_NPROC (its user's, host-wide).
 * It forks until EAGAIN, says how far it got, and the job still ends; a
 * daemon it started in a session of its own ends with it (the cgroup
 * finds what the process group does not). */
Test(jobs_program, a_fork_bomb_is_held_to_the_programs_bound)
{
	static const char prog[] =
		"import os, signal, sys, time\n"
		"if os.environ.get('PROTEUS_NODE_RANK') != '0':\n"
		"    time.sleep(600)\n"
		"esc = os.fork()\n"
		"if esc == 0:\n"
		"    os.setsid()\n"
		"    fd = os.open(os.devnull, os.O_RDWR)\n"
		"    for i in (0, 1, 2):\n"
		"        os.dup2(fd, i)\n"
		"    time.sleep(600)\n"
		"    os._exit(0)\n"
		"print('escapee %d' % esc, flush=True)\n"
		"kids = []\n"
		"try:\n"
		"    for _ in range(100000):\n"
		"        pid = os.fork()\n"
		"        if pid == 0:\n"
		"            time.sleep(60)\n"
		"            os._exit(0)\n"
		"        kids.append(pid)\n"
		"except OSError as e:\n"
		"    print('forked %d, then: %s' % (len(kids), e), flush=True)\n"
		"for k in kids:\n"
		"    os.kill(k, signal.SIGKILL)\n"
		"for k in kids:\n"
		"    os.waitpid(k, 0)\n"
		"open(os.environ['PROTEUS_PROGRESS'], 'a').write("
		"'{\"samples\": 1, \"done\": true}\\n')\n";
	char path[800], cmd[4200], *log;
	json_t *st;
	int64_t id;
	int forked = -1, esc = -1;
	bool by_cg;
	FILE *f;

	need_root();
	daemon_up();
	spike_at = T0 + 3 * 86400;
	write_job_cmd("\"/usr/bin/python3\", \"bomb.py\"", "", "", 1);
	/* (rank 0 forks; the others wait to be stopped) */
	snprintf(path, sizeof path, "%s/code/bomb.py", jt.tmp);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(prog, f);
	fclose(f);
	cr_assert_eq(chmod(path, 0644), 0);
	id = submit_as(NOBODY);
	st = wait_end(id, 120);
	cr_assert_str_eq(state_of(st), "done", "%s", json_dumps(st, 0));
	json_decref(st);
	for (int i = 1; i <= 3 && forked < 0; i++) {
		snprintf(cmd, sizeof cmd, "%s.jobs/%lld/logs/i%d.log", jt.db,
			 (long long)id, i);
		log = px_test_read_file(cmd, NULL);
		if (log && strstr(log, "forked "))
			(void)sscanf(strstr(log, "forked "), "forked %d",
				     &forked);
		if (log && strstr(log, "escapee "))
			(void)sscanf(strstr(log, "escapee "), "escapee %d",
				     &esc);
		free(log);
	}
	snprintf(cmd, sizeof cmd, "%s.jobs/%lld/program.log", jt.db,
		 (long long)id);
	log = px_test_read_file(cmd, NULL);
	by_cg = log && strstr(log, "are bounded at 2048 by cgroup");
	free(log);
	if (!by_cg) {
		/* below its bound (2048 tasks of nobody's, the host's
		 * others included), and well past a handful */
		cr_log_warn("no pids cgroup on this host: RLIMIT_NPROC");
		cr_assert(forked > 100 && forked < 2048, "forked %d", forked);
		return;
	}
	/* its own 2048 tasks: itself, the escapee and the rest */
	cr_assert(forked >= 2000 && forked <= 2046, "forked %d", forked);
	cr_assert_gt(esc, 1);
	for (int i = 0; i < 250 && task_alive(esc); i++)
		usleep(20000);
	cr_assert_not(task_alive(esc), "the escapee %d outlived the job",
		      esc);
}
