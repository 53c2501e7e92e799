/* test_cli_history.c -- proteusctl history on stores written through the
 * store API, as simulate --db and proteusd write them: numbers in event
 * details print in their shortest form, each detail key once, and a
 * daemon's run shows its policy, billing, start and hours. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../db/store.h"
#include "pxrun.h"

static char *tmp, *db;

static void setup(void)
{
	tmp = px_tmpdir();
	cr_assert_not_null(tmp);
	cr_assert(asprintf(&db, "%s/h.db", tmp) > 0);
}

static void teardown(void)
{
	px_rmtree(tmp);
	free(tmp);
	free(db);
}

TestSuite(cli_history, .init = setup, .fini = teardown, .timeout = 60);

#define T0 INT64_C(1456790400)   /* 2016-03-01T00:00:00Z */
#define US(s) ((int64_t)(s) * 1000000)

static void ok(enum px_err e, const struct px_error *err)
{
	cr_assert_eq(e, PX_OK, "%s", err->msg);
}

/* proteusctl history --db db [args...] (NULL-terminated, at most 4) */
static void history(struct pxrun *r, const char *a1, const char *a2,
		    const char *a3)
{
	const char *argv[] = {"proteusctl", "history", "--db", db, a1, a2, a3,
			      NULL};

	cr_assert_eq(pxrun(r, 30, "proteusctl", argv), 0);
	cr_assert_eq(r->status, 0, "%s", r->err);
}

/* The line of out that contains needle (a copy; caller frees). */
static char *line_with(const char *out, const char *needle)
{
	const char *p = strstr(out, needle), *b, *e;

	cr_assert_not_null(p, "no '%s' in:\n%s", needle, out);
	for (b = p; b > out && b[-1] != '\n'; b--)
		;
	e = strchr(p, '\n');
	return strndup(b, e ? (size_t)(e - b) : strlen(b));
}

static int count(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* A simulated run's launch event: the detail names the instance (the
 * controller's number) and the event row points to the instance's row;
 * it used to print "instance=2 event=launch instance=2" and
 * "bid_usd=0.017899999999999999". */
Test(cli_history, details_once_and_shortest_numbers)
{
	struct store *st;
	struct px_error e = {0};
	int64_t job, alloc, row, other;
	struct pxrun r;
	char *l;

	ok(store_open(db, &st, &e), &e);
	ok(store_job_add(st, "j", "{}", "sim", US(T0), &job, &e),
	   &e);
	ok(store_allocation_add(st, job, 0, "m3.large", STORE_TIER_TRANSIENT,
				17900, 2, US(T0), &alloc, &e), &e);
	ok(store_instance_add(st, alloc, "sim-1", US(T0), 1, &other, &e), &e);
	ok(store_instance_add(st, alloc, "sim-2", US(T0), 2, &row, &e), &e);
	ok(store_event_add(st, job, row, US(T0), "launch",
			   "{\"event\":\"launch\",\"instance\":2,"
			   "\"bid_usd\":0.0179,\"price_usd\":0.1,"
			   "\"charge_usd\":2.0,\"n\":[0.30000000000000004,"
			   "1e-300,{\"x\":0.0179}]}", &e), &e);
	ok(store_event_add(st, job, other, US(T0 + 60), "lost",
			   "the node stopped answering", &e), &e);
	store_close(st);

	history(&r, "--job", "1", NULL);
	l = line_with(r.out, "launch    ");
	cr_assert(strstr(l, " bid_usd=0.0179 "), "%s", l);
	cr_assert(strstr(l, " price_usd=0.1 "), "%s", l);
	cr_assert(strstr(l, " charge_usd=2.0 "), "%s", l);
	cr_assert(strstr(l, " n=[0.30000000000000004,1e-300,{\"x\":0.0179}]"),
		  "%s", l);
	cr_assert_null(strstr(l, "0.01789999"), "%s", l);
	cr_assert_eq(count(l, "instance"), 1, "%s", l);
	cr_assert(strstr(l, " instance=2 "), "%s", l);
	free(l);
	/* a detail that does not name it: the row's id, as --json's key */
	l = line_with(r.out, "lost      ");
	cr_assert(strstr(l, " instance_id=1 the node stopped answering"),
		  "%s", l);
	free(l);
	pxrun_free(&r);

	/* --json keeps the detail as stored */
	history(&r, "--job", "1", "--json");
	cr_assert(strstr(r.out, "\"instance_id\": 2"), "%s", r.out);
	pxrun_free(&r);
}

/* A job run by proteusd has no "simulate" event: its policy, billing and
 * market start are in its first "start" event, its end in "done".  The
 * list used to show '-' for all four. */
Test(cli_history, daemon_run_shows_policy_billing_start_hours)
{
	struct store *st;
	struct px_error e = {0};
	int64_t done_job, live_job;
	struct pxrun r;
	json_t *j, *run;
	char *l;

	ok(store_open(db, &st, &e), &e);
	ok(store_job_add(st, "daemon-job", "{}", "local", US(T0),
			 &done_job, &e), &e);
	ok(store_job_set_state(st, done_job, STORE_JOB_RUNNING, US(T0), &e),
	   &e);
	ok(store_event_add(st, done_job, 0, US(T0 + 3600), "start",
			   "{\"market_start\": 1456794000, \"speedup\": 3600,"
			   " \"billing\": \"per-second\", \"policy\": "
			   "\"spread\", \"resumed\": false}", &e), &e);
	ok(store_event_add(st, done_job, 0, US(T0 + 5400), "start",
			   "{\"market_start\": 1456795800, \"speedup\": 3600,"
			   " \"billing\": \"per-second\", \"policy\": "
			   "\"spread\", \"resumed\": true}", &e), &e);
	ok(store_event_add(st, done_job, 0, US(T0 + 3600 + 9000), "done",
			   "{\"event\":\"done\",\"charge_usd\":1.5}", &e), &e);
	ok(store_job_set_state(st, done_job, STORE_JOB_DONE, US(T0), &e), &e);
	ok(store_job_add(st, "daemon-live", "{}", "local", US(T0),
			 &live_job, &e), &e);
	ok(store_job_set_state(st, live_job, STORE_JOB_RUNNING, US(T0), &e),
	   &e);
	ok(store_event_add(st, live_job, 0, US(T0), "start",
			   "{\"market_start\": 1456790400, \"speedup\": 1,"
			   " \"billing\": \"legacy-hourly\", \"policy\": "
			   "\"bidbrain\", \"resumed\": false}", &e), &e);
	store_close(st);

	history(&r, NULL, NULL, NULL);
	l = line_with(r.out, "daemon-job");
	cr_assert(strstr(l, " spread "), "%s", l);
	cr_assert(strstr(l, " per-second "), "%s", l);
	cr_assert(strstr(l, " 2016-03-01T01:00:00Z "), "%s", l);
	cr_assert(strstr(l, " 2.50 "), "%s", l);
	free(l);
	/* still running: no hours yet */
	l = line_with(r.out, "daemon-live");
	cr_assert(strstr(l, " bidbrain "), "%s", l);
	cr_assert(strstr(l, " legacy-hourly "), "%s", l);
	cr_assert(strstr(l, " 2016-03-01T00:00:00Z         - "), "%s", l);
	free(l);
	pxrun_free(&r);

	history(&r, "--json", NULL, NULL);
	j = json_loads(r.out, 0, NULL);
	cr_assert_not_null(j, "%s", r.out);
	run = json_array_get(json_object_get(j, "runs"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(run, "policy")),
			 "spread");
	json_decref(j);
	pxrun_free(&r);

	history(&r, "--job", "daemon-job", NULL);
	cr_assert(strstr(r.out, "policy spread"), "%s", r.out);
	pxrun_free(&r);
}
