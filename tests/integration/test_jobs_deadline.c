/* test_jobs_deadline.c -- proteusd and a job's finish_by_hours (issue 40,
 * item 2): a deadline that even on demand cannot be met is refused at
 * submit (exit 3, the hours on demand needs against the hours given, the
 * field and the file) and nothing is stored; a feasible one's status has
 * the deadline (its world time, the line, the progress, the state) and
 * the text form's line, sane before, during and after the run; and a
 * kill -9 of the daemon and a restart keep the deadline where it was
 * (it counts from the job's first start). */
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
