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

#define SEEDED_REPORTS (20 + 20)

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

static json_t *scaling(json_t *st)
{
	return json_object_get(json_object_get(st, "goodput"), "scaling");
}

/* Reports behind the measured scaling in a status, all counts. */
static int64_t reports(json_t *st)
{
	json_t *v;
	int64_t n = 0;
	size_t i;

	json_array_foreach(json_object_get(scaling(st), "reports"), i, v)
		n += json_integer_value(v);
	return n;
}

/* The spot instances acquired by the decisions of the job's life now
 * (after its last "start" event): their sum, or the first decision's
 * count (0: none yet). */
static int64_t spot_acquired(int64_t id, bool first_only)
{
	char q[640];

	snprintf(q, sizeof q, "SELECT coalesce((SELECT %s FROM events WHERE "
		 "job_id = %lld AND kind = 'decision' AND json_extract(detail,"
		 " '$.action') = 'acquire' AND json_extract(detail, "
		 "'$.market') = 'spot' AND id > (SELECT max(id) FROM events "
		 "WHERE job_id = %lld AND kind = 'start')%s), 0)",
		 first_only ? "json_extract(detail, '$.count')" :
		 "sum(json_extract(detail, '$.count'))", (long long)id,
		 (long long)id, first_only ? " ORDER BY id LIMIT 1" : "");
	return sql_int(q);
}

struct life {
	int64_t id;
	int first;          /* spot instances of the first life's start */
	int most;           /* most spot instances the second life showed */
	int polls, measured_polls;  /* its statuses; those "measured" */
};

/* The shipped example with more fields (extra, JSON text): submitted,
 * the daemon killed (-9) once it decided its first spot instances, a
 * flat measured scaling put in the store (the same goodput at 1 and at
 * 7 instances: the spot ones add nothing), the daemon restarted and
 * watched until this life's trainer has reported 5 times (each report
 * re-applies the measurements), at most 60 s.  The seeded goodput is low
 * on purpose: this life's own reports come at the counts it rents, each
 * above it, so they can only make more instances look worse still,
 * whenever they come. */
static struct life flat_after_restart(const char *extra)
{
	struct life l = {0};
	bool seen = false;
	char q[512];
	json_t *st;

	daemon_up();
	write_job(1000, extra);
	l.id = submit();
	for (int i = 0; i < 600 && !l.first; i++) {
		l.first = (int)spot_acquired(l.id, true);
		if (!l.first)
			sleep_ms(50);
	}
	st = status(l.id);
	cr_assert_not(json_is_true(json_object_get(scaling(st), "measured")));
	json_decref(st);
	stop_daemon(SIGKILL);
	cr_assert_eq(processes_after(5000), 0, "the nodes outlived proteusd");
	snprintf(q, sizeof q, "INSERT INTO events (job_id, at_us, kind, "
		 "detail) SELECT %lld, max(at_us), 'scaling', '{\"measured\":"
		 "true,\"instances\":[1,7],\"goodput\":[1000,1000],"
		 "\"reports\":[20,20]}' FROM events WHERE job_id = %lld",
		 (long long)l.id, (long long)l.id);
	sql_exec(q);
	start_daemon();
	for (int i = 0; i < 600 && !seen; i++) {
		const char *s;

		st = status(l.id);
		s = state_of(st);
		cr_assert(!strcmp(s, "queued") || !strcmp(s, "running"),
			  "%s", json_dumps(st, 0));
		l.polls++;
		l.measured_polls += json_is_true(json_object_get(scaling(st),
								 "measured"));
		l.most = transients(st) > l.most ? transients(st) : l.most;
		seen = !strcmp(s, "running") &&
		       json_array_size(json_object_get(st, "fleet")) > 0 &&
		       reports(st) >= SEEDED_REPORTS + 5;
		json_decref(st);
		if (!seen)
			sleep_ms(100);
	}
	cr_assert(seen, "the trainer did not report 5 times in 60 s: %s",
		  daemon_said());
	snprintf(q, sizeof q, "SELECT count(*) FROM events WHERE job_id = "
		 "%lld AND kind = 'start'", (long long)l.id);
	cr_assert_eq(sql_int(q), 2, "two lives");
	return l;
}

static bool log_has(const char *needle)
{
	char *log = daemon_log();
	bool has = strstr(log, needle) != NULL;

	free(log);
	return has;
}

static void cancel_and_check(int64_t id)
{
	char ids[24];
	struct pxrun r;
	json_t *st;

	snprintf(ids, sizeof ids, "%lld", (long long)id);
	cr_assert_eq(ctl(&r, 10, "cancel", ids, NULL, NULL), 0, "%s", r.err);
	pxrun_free(&r);
	st = wait_end(id, 30);
	cr_assert_str_eq(state_of(st), "cancelled");
	check_books(id, st);
	json_decref(st);
	cr_assert_eq(processes_after(5000), 0, "trainer processes left");
}

/* The shipped example (1 reliable, spot.max_instances 6,
 * scaling_efficiency 0.9) plans 6 spot instances at its start; given a
 * flat measured scaling, the restarted daemon plans with it and rents
 * fewer.  The job co-adapts (trainer.adapt), as a job measured so would:
 * its coordinator has --adapt. */
Test(jobs_scaling, a_flat_measured_scaling_rents_fewer_spot_instances)
{
	struct life l = flat_after_restart("{\"trainer\": {\"model\": "
		"\"mlr\", \"epochs\": 1000, \"batch\": 128, \"lr\": 0.05, "
		"\"adapt\": true}}");

	cr_assert_eq(l.first, 6, "the spec's scaling rents %d spot "
		     "instances", l.first);
	cr_assert_eq(l.measured_polls, l.polls, "the restarted daemon "
		     "planned with the spec's scaling (%d of %d statuses)",
		     l.polls - l.measured_polls, l.polls);
	cr_assert(log_has("BidBrain plans with the measured scaling"));
	cr_assert_lt(l.most, l.first, "under a flat measured scaling %d spot "
		     "instances, under the spec's %d", l.most, l.first);
	/* the store says the same: no decision of this life rented as many */
	cr_assert_lt(spot_acquired(l.id, false), l.first);
	/* trainer.adapt: its coordinator (and it alone) co-adapts */
	cr_assert_eq(each_argv(jt.tmp, " --adapt ", NULL, NULL), 1);
	cancel_and_check(l.id);
}

/* "scaling_measured": false: the same measurements (status shows them)
 * but BidBrain plans with the spec's scaling, and the restarted daemon
 * rents as many as the first life did. */
Test(jobs_scaling, scaling_measured_false_keeps_the_specs_scaling)
{
	struct life l = flat_after_restart("{\"scaling_measured\": false}");

	cr_assert_eq(l.first, 6);
	cr_assert_eq(l.measured_polls, 0);
	cr_assert_not(log_has("BidBrain plans with the measured scaling"));
	cr_assert_eq(spot_acquired(l.id, true), l.first, "this life's first "
		     "decision");
	cr_assert_eq(each_argv(jt.tmp, " --adapt ", NULL, NULL), 0,
		     "co-adapts unasked");
	cancel_and_check(l.id);
}

/* Exploring (docs/controller.md, "Exploring the scaling"): the shipped
 * example asked to explore Pollux's way starts with its reliable
 * instance alone (its first decision rents no spot instance, where the
 * spec's scaling rents 6: a_flat_measured_scaling_...), the limit
 * status shows only grows (1, 2, 4 instances), and the daemon measures
 * a second count on the way up, from 1 instance, so that BidBrain plans
 * with the fitted measured scaling: all within 90 s, whatever the
 * host's speed (only the order of things is asserted). */
Test(jobs_scaling, exploring_measures_a_second_count_on_the_way_up,
     .timeout = 150)
{
	char q[512];
	bool on = false;
	int lim = 0, polls = 0;
	json_t *st = NULL, *sc, *fit, *v;
	size_t i;

	daemon_up();
	write_job(1000, "{\"scaling_explore\": {\"start\": 1, "
		  "\"growth\": 2}}");
	{
		int64_t id = submit();

		for (i = 0; i < 900 && !on; i++) {
			const char *s;

			json_decref(st);
			st = status(id);
			s = state_of(st);
			cr_assert(!strcmp(s, "queued") || !strcmp(s, "running"),
				  "%s", json_dumps(st, 0));
			sc = scaling(st);
			v = json_object_get(sc, "explore_limit");
			if (json_is_integer(v)) {
				int l = (int)json_integer_value(v);

				cr_assert(l == 1 || l == 2 || l == 4, "%d", l);
				cr_assert_geq(l, lim, "the limit fell from %d "
					      "to %d", lim, l);
				lim = l;
				polls++;
			}
			on = json_is_true(json_object_get(sc, "measured"));
			if (!on)
				sleep_ms(100);
		}
		cr_assert(on, "no second count measured in 90 s: %s; %s",
			  json_dumps(st, 0), daemon_said());
		cr_assert_gt(polls, 0, "status never showed the limit");
		/* the first decision: the reliable instance, no spot */
		snprintf(q, sizeof q, "SELECT count(*) FROM events WHERE "
			 "job_id = %lld AND kind = 'decision' AND at_us = "
			 "(SELECT min(at_us) FROM events WHERE job_id = %lld "
			 "AND kind = 'decision')", (long long)id,
			 (long long)id);
		cr_assert_gt(sql_int(q), 0, "no first decision");
		snprintf(q, sizeof q, "SELECT count(*) FROM events WHERE "
			 "job_id = %lld AND kind = 'decision' AND "
			 "json_extract(detail, '$.market') = 'spot' AND at_us "
			 "= (SELECT min(at_us) FROM events WHERE job_id = "
			 "%lld AND kind = 'decision')", (long long)id,
			 (long long)id);
		cr_assert_eq(sql_int(q), 0, "spot instances at the start");
		/* two counts with 5 reports each, the first of them 1 */
		sc = scaling(st);
		cr_assert_eq(json_integer_value(json_array_get(
			json_object_get(sc, "instances"), 0)), 1);
		{
			int counts = 0;

			json_array_foreach(json_object_get(sc, "reports"), i,
					   v)
				counts += json_integer_value(v) >= 5;
			cr_assert_geq(counts, 2, "%s", json_dumps(sc, 0));
		}
		fit = json_object_get(sc, "fit");
		cr_assert(json_is_object(fit), "%s", json_dumps(sc, 0));
		v = json_object_get(fit, "serial");
		cr_assert(json_number_value(v) >= 0 &&
			  json_number_value(v) <= 16, "%s", json_dumps(fit,
								       0));
		cr_assert_gt(json_number_value(json_object_get(fit,
			     "goodput_1")), 0);
		cr_assert(log_has("exploring its scaling: at most 1 "
				  "instances"));
		cr_assert(log_has("exploring its scaling: at most 2 "
				  "instances"));
		cr_assert(log_has("BidBrain plans with the measured scaling"));
		json_decref(st);
		cancel_and_check(id);
	}
}
