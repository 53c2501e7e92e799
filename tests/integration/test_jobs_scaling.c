/* test_jobs_scaling.c -- proteusd plans with the scaling a job measured
 * (docs/controller.md, "Measured scaling"), end to end: a real daemon,
 * the local world on the shipped trace slice and the real trainer.  The
 * measurements are put in the store as the daemon writes them (a
 * "scaling" event) while the daemon is down, so that what BidBrain plans
 * with does not depend on how fast this host trains. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs_fixture.h"
#include "pxrun.h"

TestSuite(jobs_scaling, .init = jobs_fixture_setup,
	  .fini = jobs_fixture_teardown, .timeout = 120);

/* The spot instances of a status's fleet (pending requests included). */
static int transients(json_t *st)
{
	json_t *f = json_object_get(st, "fleet"), *g;
	size_t i;
	int n = 0;

	json_array_foreach(f, i, g)
		if (!strcmp(json_string_value(json_object_get(g, "tier")),
			    "transient"))
			n += (int)json_integer_value(json_object_get(g,
								     "count"));
	return n;
}

/* Reports behind the measured scaling in a status, all counts. */
static int64_t reports(json_t *st)
{
	json_t *r = json_object_get(json_object_get(json_object_get(st,
		"goodput"), "scaling"), "reports"), *v;
	int64_t n = 0;
	size_t i;

	json_array_foreach(r, i, v)
		n += json_integer_value(v);
	return n;
}

static bool measured(json_t *st)
{
	return json_is_true(json_object_get(json_object_get(json_object_get(
		st, "goodput"), "scaling"), "measured"));
}

/* The shipped example (1 reliable, spot.max_instances 6,
 * scaling_efficiency 0.9) plans 6 spot instances at its start.  Killed
 * (kill -9) and given a flat measured scaling (the same goodput at 1 and
 * at 7 instances: the spot ones add nothing), the restarted daemon plans
 * with it and rents fewer while its trainer reports.  The seeded goodput
 * is low on purpose: this life's own reports come at the counts it
 * rents, each above it, so they can only make more instances look worse
 * still, whenever they come.  The job co-adapts (trainer.adapt), as a job
 * measured so would: its coordinator has --adapt. */
Test(jobs_scaling, a_flat_measured_scaling_rents_fewer_spot_instances)
{
	char q[512], ids[24];
	int first = 0, most = 0;
	bool seen = false;
	struct pxrun r;
	int64_t id, n0;
	json_t *st;
	char *log;

	daemon_up();
	write_job(1000, "{\"trainer\": {\"model\": \"mlr\", \"epochs\": "
		  "1000, \"batch\": 128, \"lr\": 0.05, \"adapt\": true}}");
	id = submit();
	snprintf(ids, sizeof ids, "%lld", (long long)id);
	/* its first spot decision, from the store (a status later may show
	 * the replacements of evicted ones beside the warned) */
	snprintf(q, sizeof q, "SELECT coalesce((SELECT json_extract(detail, "
		 "'$.count') FROM events WHERE job_id = %lld AND kind = "
		 "'decision' AND json_extract(detail, '$.market') = 'spot' "
		 "ORDER BY id LIMIT 1), 0)", (long long)id);
	for (int i = 0; i < 600 && !first; i++) {
		first = (int)sql_int(q);
		if (!first)
			sleep_ms(50);
	}
	st = status(id);
	cr_assert_not(measured(st));
	json_decref(st);
	cr_assert_eq(first, 6, "the spec's scaling rents %d spot instances",
		     first);
	stop_daemon(SIGKILL);
	cr_assert_eq(processes_after(5000), 0, "the nodes outlived proteusd");
	snprintf(q, sizeof q, "INSERT INTO events (job_id, at_us, kind, "
		 "detail) SELECT %lld, max(at_us), 'scaling', '{\"measured\":"
		 "true,\"instances\":[1,7],\"goodput\":[1000,1000],"
		 "\"reports\":[20,20]}' FROM events WHERE job_id = %lld",
		 (long long)id, (long long)id);
	sql_exec(q);
	n0 = 20 + 20;    /* the seeded reports */
	start_daemon();
	/* watched until this life's trainer has reported 5 times (each
	 * report the daemon plans with at once), at most 60 s */
	for (int i = 0; i < 600; i++) {
		int t;

		st = status(id);
		cr_assert(measured(st), "the restarted daemon plans with the "
			  "spec's scaling: %s", json_dumps(st, 0));
		cr_assert(!strcmp(state_of(st), "queued") ||
			  !strcmp(state_of(st), "running"), "%s",
			  json_dumps(st, 0));
		t = transients(st);
		most = t > most ? t : most;
		seen = !strcmp(state_of(st), "running") &&
		       json_array_size(json_object_get(st, "fleet")) > 0 &&
		       reports(st) >= n0 + 5;
		json_decref(st);
		if (seen)
			break;
		sleep_ms(100);
	}
	cr_assert(seen, "the trainer did not report 5 times in 60 s: %s",
		  daemon_said());
	/* trainer.adapt: its coordinator (and it alone) co-adapts */
	cr_assert_eq(each_argv(jt.tmp, " --adapt ", NULL, NULL), 1);
	cr_assert_lt(most, first, "under a flat measured scaling %d spot "
		     "instances, under the spec's %d", most, first);
	/* the store says the same: no decision of this life rented as many */
	snprintf(q, sizeof q, "SELECT coalesce(sum(json_extract(detail, "
		 "'$.count')), 0) FROM events WHERE job_id = %lld AND kind = "
		 "'decision' AND json_extract(detail, '$.action') = 'acquire' "
		 "AND json_extract(detail, '$.market') = 'spot' AND id > "
		 "(SELECT max(id) FROM events WHERE job_id = %lld AND kind = "
		 "'start')", (long long)id, (long long)id);
	cr_assert_lt(sql_int(q), first, "spot instances acquired after the "
		     "restart");
	log = daemon_log();
	cr_assert(strstr(log, "BidBrain plans with the measured scaling"),
		  "%s", log);
	free(log);
	cr_assert_eq(ctl(&r, 10, "cancel", ids, NULL, NULL), 0, "%s", r.err);
	pxrun_free(&r);
	st = wait_end(id, 30);
	cr_assert_str_eq(state_of(st), "cancelled");
	check_books(id, st);
	json_decref(st);
	cr_assert_eq(processes_after(5000), 0, "trainer processes left");
}
