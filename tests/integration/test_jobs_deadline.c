/* test_jobs_deadline.c -- proteusd and a job's finish_by_hours (issue 40,
 * item 2): a deadline that even on demand cannot be met is refused at
 * submit (exit 3, the hours on demand needs against the hours given, the
 * field and the file) and nothing is stored; a feasible one's status has
 * the deadline (its world time, the line, the progress, the state) and
 * the text form's line, sane before, during and after the run; and a
 * kill -9 of the daemon and a restart keep the deadline where it was
 * (it counts from the job's first start); a BidBrain job whose spot is
 * priced past on demand for a stretch rents on demand for its deadline
 * and meets it, and without one rents none beyond its reliable tier. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs_fixture.h"
#include "pxrun.h"

TestSuite(jobs_deadline, .init = jobs_fixture_setup,
	  .fini = jobs_fixture_teardown, .timeout = 120);

/* The shipped example's world starts at 2016-03-02T00:00:00Z (market
 * time); its 4 on-demand m3.large at scaling 0.9 do 3.24 work-hours an
 * hour: its 8 work-hours take 120 s, then 8889 s, 2.5025 h in all. */
#define WORLD_START_S INT64_C(1456876800)

static json_t *deadline_of(json_t *st)
{
	json_t *d = json_object_get(st, "deadline");

	cr_assert(json_is_object(d), "no deadline object in status");
	return d;
}

static double num(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	cr_assert(json_is_number(v), "deadline.%s is not a number", k);
	cr_assert(isfinite(json_number_value(v)), "deadline.%s", k);
	return json_number_value(v);
}

/* Every figure of a deadline object within its bounds. */
static void check_sane(json_t *d, double hours)
{
	const char *s = json_string_value(json_object_get(d, "state"));
	double line = num(d, "line"), done = num(d, "progress");

	cr_assert_float_eq(num(d, "finish_by_hours"), hours, 1e-9);
	cr_assert(line >= 0 && line <= 1, "line %g", line);
	cr_assert(done >= 0 && done <= 1, "progress %g", done);
	cr_assert_float_eq(num(d, "ahead"), done - line, 1e-9);
	cr_assert(num(d, "hours_left") >= 0 &&
		  num(d, "hours_left") <= hours, "hours_left %g",
		  num(d, "hours_left"));
	cr_assert(num(d, "ondemand_hours_needed") >= 0 &&
		  num(d, "ondemand_hours_needed") <= 8 / 3.24 + 1e-6,
		  "ondemand_hours_needed %g", num(d, "ondemand_hours_needed"));
	cr_assert(s && (!strcmp(s, "ahead") || !strcmp(s, "behind") ||
			!strcmp(s, "must-go-on-demand") ||
			!strcmp(s, "cannot-meet") || !strcmp(s, "met") ||
			!strcmp(s, "missed")), "state %s", s ? s : "-");
	cr_assert(json_is_string(json_object_get(d, "finish_by")));
}

/* Status of job id until it has trained a clock (20 s at most). */
static json_t *status_progressed(int64_t id)
{
	for (int i = 0; i < 200; i++) {
		json_t *st = status(id);

		if (json_integer_value(json_object_get(st, "clock")) > 0)
			return st;
		cr_assert(!strcmp(state_of(st), "queued") ||
			  !strcmp(state_of(st), "running"), "job %s: %s",
			  state_of(st), json_string_value(json_object_get(st,
								  "error")));
		json_decref(st);
		sleep_ms(100);
	}
	cr_assert_fail("no progress in 20 s; %s", daemon_said());
	return NULL;
}

static char text_out[8192];

static void keep_text(const char *out)
{
	snprintf(text_out, sizeof text_out, "%s", out);
}

/* proteusctl status ID (the text form) into text_out. */
static void status_text(int64_t id)
{
	char ids[24];
	struct pxrun r;

	snprintf(ids, sizeof ids, "%lld", (long long)id);
	cr_assert_eq(ctl(&r, 10, "status", ids, NULL, NULL), 0, "%s", r.err);
	keep_text(r.out);
	pxrun_free(&r);
}

Test(jobs_deadline, one_on_demand_cannot_meet_is_refused_at_submit)
{
	struct pxrun r;

	daemon_up();
	write_job(1, "{\"finish_by_hours\": 2}");
	cr_assert_eq(ctl(&r, 10, "submit", jt.job, NULL, NULL), 3, "%s%s",
		     r.out, r.err);
	cr_assert(strstr(r.err, "job.json: finish_by_hours 2 cannot be met "
			 "even on demand: 4 on-demand m3.large need 2.51 h "
			 "(startup_seconds 120, then 8 work-hours at 3.24 an "
			 "hour); give it 2.51 h or more"), "%s", r.err);
	cr_assert_eq(r.out[0], 0, "an id printed: %s", r.out);
	pxrun_free(&r);
	/* uniform-progress plans for a deadline: none, refused too */
	write_job(1, "{\"policy\": \"uniform-progress\"}");
	cr_assert_eq(ctl(&r, 10, "submit", jt.job, NULL, NULL), 3, "%s",
		     r.err);
	cr_assert(strstr(r.err, "job.json: policy: 'uniform-progress' needs "
			 "the job's finish_by_hours"), "%s", r.err);
	pxrun_free(&r);
	cr_assert_eq(processes_after(200), 0, "a trainer was started");
	stop_daemon(SIGTERM);
	cr_assert_eq(sql_int("SELECT count(*) FROM jobs"), 0, "stored");
}

/* Just feasible (2.52 h, on demand needs 2.5025): before any work, the
 * hours left are fewer than the work on demand and two restarts. */
Test(jobs_deadline, a_tight_one_must_go_on_demand_before_it_works)
{
	json_t *st, *d;
	int64_t id;

	daemon_up();
	write_job(1, "{\"finish_by_hours\": 2.52}");
	id = submit();
	st = status(id);
	d = deadline_of(st);
	check_sane(d, 2.52);
	cr_assert_str_eq(json_string_value(json_object_get(d, "finish_by")),
			 "2016-03-02T02:31:12Z");
	if (num(d, "progress") == 0)
		cr_assert_str_eq(json_string_value(json_object_get(d,
								   "state")),
				 "must-go-on-demand");
	json_decref(st);
	cancel_job(id, 30);
}

Test(jobs_deadline, status_shows_where_the_job_stands)
{
	json_t *st, *d;
	int64_t id;

	daemon_up();
	write_job(12, "{\"finish_by_hours\": 10, \"policy\": "
		  "\"uniform-progress\"}");
	id = submit();
	/* before or at its start: from the world's start */
	st = status(id);
	d = deadline_of(st);
	check_sane(d, 10);
	cr_assert_str_eq(json_string_value(json_object_get(d, "finish_by")),
			 "2016-03-02T10:00:00Z");
	cr_assert_eq(json_integer_value(json_object_get(d, "finish_by_s")),
		     WORLD_START_S + 36000);
	json_decref(st);
	/* running: the line is where the market clock is */
	st = status_progressed(id);
	d = deadline_of(st);
	check_sane(d, 10);
	cr_assert(json_is_true(json_object_get(d, "started")));
	{
		double t = (double)(json_integer_value(json_object_get(st,
				"market_time")) - WORLD_START_S) / 3600;

		cr_assert_float_eq(num(d, "line"), t / 10, 1e-6);
		cr_assert_float_eq(num(d, "hours_left"), 10 - t, 1e-6);
	}
	json_decref(st);
	status_text(id);
	cr_assert(strstr(text_out, "\ndeadline finish by 2016-03-02T10:00:00Z "
			 "(in "), "%s", text_out);
	cr_assert(strstr(text_out, "% done, line "), "%s", text_out);
	/* done: all of it, in time */
	st = wait_end(id, 120);
	cr_assert_str_eq(state_of(st), "done", "%s",
			 json_string_value(json_object_get(st, "error")));
	d = deadline_of(st);
	check_sane(d, 10);
	cr_assert_str_eq(json_string_value(json_object_get(d, "state")), "met");
	cr_assert_float_eq(num(d, "progress"), 1, 1e-12);
	cr_assert_float_eq(num(d, "ondemand_hours_needed"), 0, 1e-12);
	cr_assert_gt(num(d, "ahead"), 0);
	json_decref(st);
	status_text(id);
	cr_assert(strstr(text_out, "\ndeadline finish by 2016-03-02T10:00:00Z "
			 "(ended): 100% done, line "), "%s", text_out);
	cr_assert(strstr(text_out, "%: met\n"), "%s", text_out);
	/* a later daemon's, from the store alone: the same */
	stop_daemon(SIGTERM);
	start_daemon();
	st = status(id);
	d = deadline_of(st);
	check_sane(d, 10);
	cr_assert_str_eq(json_string_value(json_object_get(d, "finish_by")),
			 "2016-03-02T10:00:00Z");
	cr_assert_str_eq(json_string_value(json_object_get(d, "state")), "met");
	cr_assert_float_eq(num(d, "progress"), 1, 1e-12);
	json_decref(st);
	/* a job without one has none */
	write_job(1, NULL);
	id = submit();
	st = status(id);
	cr_assert_null(json_object_get(st, "deadline"));
	json_decref(st);
	status_text(id);
	cr_assert_null(strstr(text_out, "deadline"), "%s", text_out);
	cancel_job(id, 30);
}

/* kill -9 of the daemon mid-job: the restarted one's deadline is the
 * same world time, from the first start: its line is the market time
 * since then (the job resumes at its last recorded instant, past the
 * world's start), not 0 at the resumed start. */
Test(jobs_deadline, a_restart_keeps_the_deadline)
{
	char q[200];
	json_t *st, *d;
	int64_t id, goal, t;

	daemon_up();
	write_job(200, "{\"finish_by_hours\": 10}");
	id = submit();
	st = status_progressed(id);
	d = deadline_of(st);
	goal = json_integer_value(json_object_get(d, "finish_by_s"));
	cr_assert_eq(goal, WORLD_START_S + 36000);
	json_decref(st);
	/* recorded ten market minutes past the start (2.5 s here) */
	snprintf(q, sizeof q, "SELECT max(at_us) / 1000000 FROM events WHERE "
		 "job_id = %lld", (long long)id);
	for (int i = 0; i < 100 && sql_int(q) < WORLD_START_S + 600; i++)
		sleep_ms(100);
	cr_assert_geq(sql_int(q), WORLD_START_S + 600);
	stop_daemon(SIGKILL);
	cr_assert_eq(processes_after(3000), 0, "nodes outlived the daemon");
	start_daemon();
	st = status(id);
	cr_assert(!strcmp(state_of(st), "queued") ||
		  !strcmp(state_of(st), "running"), "%s", state_of(st));
	d = deadline_of(st);
	check_sane(d, 10);
	cr_assert_eq(json_integer_value(json_object_get(d, "finish_by_s")),
		     goal, "the deadline moved");
	cr_assert_str_eq(json_string_value(json_object_get(d, "finish_by")),
			 "2016-03-02T10:00:00Z");
	cr_assert(json_is_true(json_object_get(d, "started")));
	t = json_integer_value(json_object_get(st, "market_time"));
	cr_assert_geq(t, WORLD_START_S + 600);
	cr_assert_float_eq(num(d, "line"), (double)(t - WORLD_START_S) / 36000,
			   1e-9);
	cr_assert_float_eq(num(d, "hours_left"),
			   (double)(goal - t) / 3600, 1e-9);
	json_decref(st);
	cancel_job(id, 30);
}

/* A stretch with no spot: the job's own market (m3.large in us-east-1a
 * at $0.02, on demand $0.133) at $5, past any bid and past on demand,
 * from five market minutes in (its first record after the start) for
 * 12 h, longer than the job.  BidBrain takes spot at the start; the spike
 * warns it at SPIKE_AT, half a real second in at SPIKE_SPEEDUP, before
 * the trainer's first clock. */
#define SPIKE_AT (WORLD_START_S + 300)
#define SPIKE_S (12 * 3600)
#define SPIKE_SPEEDUP 600

/* The shipped example on that market: spot m3.large in us-east-1a only,
 * 6 epochs (5-10 s here), more fields in extra (may be ""). */
static void write_spiked_job(const char *extra)
{
	char j[1024];

	write_flat_trace(WORLD_START_S, 2, SPIKE_AT, SPIKE_S);
	snprintf(j, sizeof j, "{%s%s\"spot\": {\"types\": [\"m3.large\"], "
		 "\"zones\": [\"us-east-1a\"], \"max_instances\": 6}, "
		 "\"world\": {\"name\": \"local\", \"trace\": "
		 "\"%s/trace.json\", \"start\": \"2016-03-02T00:00:00Z\", "
		 "\"speedup\": %d}}", extra, extra[0] ? ", " : "", jt.tmp,
		 SPIKE_SPEEDUP);
	write_job(6, j);
}

/* Job id's decisions to acquire on market ("spot", "on-demand") from
 * market instant from_s on: the instances they asked for (count). */
static int64_t asked(int64_t id, const char *market, int64_t from_s)
{
	char q[512];

	snprintf(q, sizeof q, "SELECT coalesce(sum(json_extract(detail, "
		 "'$.count')), 0) FROM events WHERE job_id = %lld AND kind = "
		 "'decision' AND json_extract(detail, '$.action') = 'acquire' "
		 "AND json_extract(detail, '$.market') = '%s' AND at_us >= "
		 "%lld", (long long)id, market, (long long)from_s * 1000000);
	return sql_int(q);
}

/* Job id's decisions and what led to them, one line each (market
 * seconds from the start, kind, the detail's first 90 characters): for
 * a failure's message, since which decision came when is timing. */
static const char *timeline(int64_t id)
{
	static char out[6000];
	char q[640], *t;

	snprintf(q, sizeof q, "SELECT group_concat(line, char(10)) FROM "
		 "(SELECT (at_us / 1000000 - %lld) || ' ' || kind || ' ' || "
		 "substr(detail, 1, 90) AS line FROM events WHERE job_id = "
		 "%lld AND kind IN ('decision', 'warning', 'eviction', "
		 "'ready', 'progress') ORDER BY rowid LIMIT 50)",
		 (long long)WORLD_START_S, (long long)id);
	t = sql_text(q);
	snprintf(out, sizeof out, "%s", t);
	free(t);
	return out;
}

/* The spike took the spot BidBrain had at the start: evicted. */
static void check_spot_lost(int64_t id)
{
	cr_assert_gt(asked(id, "spot", WORLD_START_S), 0, "no spot at the "
		     "start");
	cr_assert_gt(events_like(id, "eviction", "%\"market\":\"spot\"%"),
		     0, "the spike evicted no spot instance");
	cr_assert_eq(asked(id, "spot", SPIKE_AT), 0, "spot asked for at $5");
}

/* The spiked job (extra: its more fields) on a fresh daemon, run to its
 * end, which must be done: its status; its id in *ret_id. */
static json_t *run_spiked(const char *extra, int64_t *ret_id)
{
	json_t *st;

	daemon_up();
	write_spiked_job(extra);
	*ret_id = submit();
	st = wait_end(*ret_id, 90);
	cr_assert_str_eq(state_of(st), "done", "%s; %s",
			 json_string_value(json_object_get(st, "error")),
			 daemon_said());
	return st;
}

/* Job id's on-demand instances: n in all, each released by the daemon
 * (none "lost" as the job ended: the nodes whose work ended exit before
 * the daemon reads the last report; the local world gives them a grace,
 * else a reliable one was replaced, and billed, for nothing). */
static void check_ondemand_released(int64_t id, int64_t n)
{
	char q[512];

	snprintf(q, sizeof q, "SELECT count(*) FROM instances i JOIN "
		 "allocations a ON a.id = i.alloc_id WHERE a.job_id = %lld "
		 "AND a.market_id IS NULL", (long long)id);
	cr_assert_eq(sql_int(q), n, "on-demand instances");
	snprintf(q, sizeof q, "SELECT count(*) FROM instances i JOIN "
		 "allocations a ON a.id = i.alloc_id WHERE a.job_id = %lld "
		 "AND a.market_id IS NULL AND i.end_reason != 'released'",
		 (long long)id);
	cr_assert_eq(sql_int(q), 0, "on-demand instances not released");
}

/* Finish by 8 h: by BidBrain's rates, the tier alone (one m3.large, at
 * most 1 work-hour an hour) cannot do the 8 work-hours in time; with the
 * spot gone and the work behind the line (none done yet), Uniform
 * Progress's rule takes on demand: `instances` (4) m3.large beside the
 * tier, kept to the end (no spot comes back), the deadline met.  The
 * store has their request (an on-demand allocation of 4, made in the
 * spike) and its 4 instances, each billed once. */
Test(jobs_deadline, no_spot_for_a_stretch_rents_on_demand_and_meets_it)
{
	char q[512];
	json_t *st, *d;
	int64_t id;

	st = run_spiked("\"finish_by_hours\": 8", &id);
	d = deadline_of(st);
	check_sane(d, 8);
	cr_assert_str_eq(json_string_value(json_object_get(d, "state")), "met",
			 "ended at %lld s", (long long)(json_integer_value(
			 json_object_get(st, "market_time")) - WORLD_START_S));
	cr_assert_float_eq(num(d, "progress"), 1, 1e-12);
	check_spot_lost(id);
	/* the tier's one at the start, then the 4 in the spike */
	cr_assert_eq(asked(id, "on-demand", WORLD_START_S), 5, "%lld; "
		     "events:\n%s", (long long)asked(id, "on-demand",
		     WORLD_START_S), timeline(id));
	cr_assert_eq(asked(id, "on-demand", SPIKE_AT), 4, "%lld in the "
		     "spike; events:\n%s", (long long)asked(id, "on-demand",
		     SPIKE_AT), timeline(id));
	snprintf(q, sizeof q, "SELECT count(*) FROM instances i JOIN "
		 "allocations a ON a.id = i.alloc_id WHERE a.job_id = %lld "
		 "AND a.market_id IS NULL AND a.tier = 'reliable' AND a.count "
		 "= 4 AND a.at_us >= %lld AND a.at_us < %lld", (long long)id,
		 (long long)SPIKE_AT * 1000000,
		 (long long)(SPIKE_AT + SPIKE_S) * 1000000);
	cr_assert_eq(sql_int(q), 4, "on-demand instances beyond the tier");
	check_ondemand_released(id, 5);
	check_books(id, st);
	json_decref(st);
}

/* The same job without finish_by_hours: BidBrain never rents spot dearer
 * than on demand, nor on demand beyond the tier: after the spike the
 * tier alone does the work (no deadline to keep), nothing else asked
 * for.  (A lost reliable instance's replacement is no decision: its own
 * allocation of 1.) */
Test(jobs_deadline, without_one_no_spot_rents_no_more_on_demand)
{
	char q[512];
	json_t *st;
	int64_t id;

	st = run_spiked("", &id);
	cr_assert_null(json_object_get(st, "deadline"));
	check_spot_lost(id);
	cr_assert_eq(asked(id, "on-demand", WORLD_START_S), 1, "%lld",
		     (long long)asked(id, "on-demand", WORLD_START_S));
	snprintf(q, sizeof q, "SELECT count(*) FROM allocations WHERE job_id "
		 "= %lld AND market_id IS NULL AND count > 1", (long long)id);
	cr_assert_eq(sql_int(q), 0, "on demand beyond the tier");
	check_ondemand_released(id, 1);
	check_books(id, st);
	json_decref(st);
}
