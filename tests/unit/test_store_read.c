/* test_store_read.c -- the store's read side: read-only opening, and
 * walking jobs, events and ledger lines back (order, filters, bounds,
 * snapshots, writes refused through a read-only store). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../db/store.h"
#include "../integration/pxrun.h"
#include "store_fixture.h"

/* ---- helpers (the temp dir per test, db_path: store_fixture.h) ---- */

/* Run SQL on path outside the store (to make foreign or broken files). */
static void raw_exec(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	char *msg = NULL;

	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK,
		     "%s: %s", sql, msg ? msg : "?");
	sqlite3_close(db);
}

static int64_t job_add(struct store *st, const char *name, const char *spec,
		       int64_t at_us)
{
	struct px_error err = {0};
	int64_t id = 0;

	cr_assert_eq(store_job_add(st, name, spec, "sim", at_us, &id, &err), PX_OK,
		     "add job '%s': %s", name, err.msg);
	cr_assert_gt(id, 0);
	return id;
}

static void event_add(struct store *st, int64_t job, int64_t inst,
		      int64_t at_us, const char *kind, const char *detail)
{
	struct px_error err = {0};

	cr_assert_eq(store_event_add(st, job, inst, at_us, kind, detail,
				     &err),
		     PX_OK, "add event '%s': %s", kind, err.msg);
}

/* ---- collectors ---- */

#define MAXROWS 16

struct jobs_seen {
	size_t n;
	struct store_job v[MAXROWS]; /* spec_json points into spec[] */
	char spec[MAXROWS][128];
};

static enum px_err collect_job(const struct store_job *j, void *ctx)
{
	struct jobs_seen *c = ctx;

	cr_assert_lt(c->n, MAXROWS);
	cr_assert_eq(strlen(j->spec_json), j->spec_len);
	c->v[c->n] = *j;
	snprintf(c->spec[c->n], sizeof(c->spec[0]), "%s", j->spec_json);
	c->v[c->n].spec_json = c->spec[c->n];
	c->n++;
	return PX_OK;
}

static struct jobs_seen *jobs(struct store *st,
			      const struct store_job_filter *f)
{
	static struct jobs_seen c;
	struct px_error err = {0};

	memset(&c, 0, sizeof(c));
	cr_assert_eq(store_jobs_each(st, f, collect_job, &c, &err), PX_OK,
		     "list jobs: %s", err.msg);
	return &c;
}

struct events_seen {
	size_t n;
	struct store_event v[MAXROWS]; /* detail points into detail[] */
	char detail[MAXROWS][64];
};

static enum px_err collect_event(const struct store_event *ev, void *ctx)
{
	struct events_seen *c = ctx;

	cr_assert_lt(c->n, MAXROWS);
	cr_assert_eq(strlen(ev->detail), ev->detail_len);
	c->v[c->n] = *ev;
	snprintf(c->detail[c->n], sizeof(c->detail[0]), "%s", ev->detail);
	c->v[c->n].detail = c->detail[c->n];
	c->n++;
	return PX_OK;
}

static struct events_seen *events(struct store *st, int64_t job)
{
	static struct events_seen c;
	struct px_error err = {0};

	memset(&c, 0, sizeof(c));
	cr_assert_eq(store_events_each(st, job, collect_event, &c, &err),
		     PX_OK, "list events: %s", err.msg);
	return &c;
}

/* ---- jobs ---- */

Test(store_read, jobs_round_trip)
{
	struct store *st = db_open(":memory:");
	struct px_error err = {0};
	struct jobs_seen *c;
	int64_t a, b, d;

	c = jobs(st, NULL);
	cr_assert_eq(c->n, 0, "an empty store has no jobs");
	a = job_add(st, "alpha", "{\"w\": 1}", 1000);
	b = job_add(st, "beta", "[1, 2,  3]", 500);
	d = job_add(st, "alpha", "{}", 2000);
	cr_assert_eq(store_job_set_state(st, a, STORE_JOB_RUNNING, 1500,
					 &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_job_set_state(st, a, STORE_JOB_DONE, 2500, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_job_set_state(st, d, STORE_JOB_CANCELLED, 2600,
					 &err),
		     PX_OK, "%s", err.msg);

	c = jobs(st, NULL);
	cr_assert_eq(c->n, 3);
	/* id order (submission order), not creation time */
	cr_assert_eq(c->v[0].id, a);
	cr_assert_eq(c->v[1].id, b);
	cr_assert_eq(c->v[2].id, d);
	cr_assert_str_eq(c->v[0].name, "alpha");
	cr_assert_str_eq(c->v[1].name, "beta");
	cr_assert_eq(c->v[0].state, STORE_JOB_DONE);
	cr_assert_eq(c->v[1].state, STORE_JOB_QUEUED);
	cr_assert_eq(c->v[2].state, STORE_JOB_CANCELLED);
	cr_assert_eq(c->v[0].created_us, 1000);
	cr_assert_eq(c->v[0].updated_us, 2500);
	cr_assert_eq(c->v[1].created_us, 500);
	cr_assert_eq(c->v[1].updated_us, 500);
	/* the spec comes back verbatim, spacing and all */
	cr_assert_str_eq(c->v[0].spec_json, "{\"w\": 1}");
	cr_assert_str_eq(c->v[1].spec_json, "[1, 2,  3]");
	cr_assert_eq(c->v[1].spec_len, strlen("[1, 2,  3]"));
	store_close(st);
}

Test(store_read, jobs_filters)
{
	struct store *st = db_open(":memory:");
	char longname[STORE_NAME_MAX + 8];
	struct jobs_seen *c;
	int64_t a, b, d;

	a = job_add(st, "alpha", "{}", 1);
	b = job_add(st, "beta", "{}", 2);
	d = job_add(st, "alpha", "{}", 3);

	c = jobs(st, &(struct store_job_filter){.id = b});
	cr_assert_eq(c->n, 1);
	cr_assert_eq(c->v[0].id, b);
	cr_assert_str_eq(c->v[0].name, "beta");

	c = jobs(st, &(struct store_job_filter){.name = "alpha"});
	cr_assert_eq(c->n, 2);
	cr_assert_eq(c->v[0].id, a);
	cr_assert_eq(c->v[1].id, d);

	/* both set: both must match */
	c = jobs(st, &(struct store_job_filter){.id = d, .name = "alpha"});
	cr_assert_eq(c->n, 1);
	cr_assert_eq(c->v[0].id, d);
	c = jobs(st, &(struct store_job_filter){.id = b, .name = "alpha"});
	cr_assert_eq(c->n, 0);

	/* nothing matches: no error */
	c = jobs(st, &(struct store_job_filter){.id = d + 100});
	cr_assert_eq(c->n, 0);
	c = jobs(st, &(struct store_job_filter){.name = "gamma"});
	cr_assert_eq(c->n, 0);
	c = jobs(st, &(struct store_job_filter){.name = ""});
	cr_assert_eq(c->n, 0);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	c = jobs(st, &(struct store_job_filter){.name = longname});
	cr_assert_eq(c->n, 0);

	/* a zero filter is no filter */
	c = jobs(st, &(struct store_job_filter){0});
	cr_assert_eq(c->n, 3);
	store_close(st);
}

static enum px_err stop_at_second(const struct store_job *j, void *ctx)
{
	int *n = ctx;

	(void)j;
	return ++*n == 2 ? PX_ECANCELED : PX_OK;
}

Test(store_read, walk_stops_on_callback_error)
{
	struct store *st = db_open(":memory:");
	struct px_error err = {0};
	int n = 0;

	for (int i = 0; i < 4; i++)
		job_add(st, "j", "{}", i);
	cr_assert_eq(store_jobs_each(st, NULL, stop_at_second, &n, &err),
		     PX_ECANCELED);
	cr_assert_eq(n, 2, "the walk went on after the callback said stop");
	cr_assert_eq(err.msg[0], '\0', "err written for a callback's stop");
	store_close(st);
}

/* ---- events ---- */

Test(store_read, events_in_time_order)
{
	struct store *st = db_open(":memory:");
	struct events_seen *c;
	struct px_error err = {0};
	int64_t a, b, alloc, inst, m;

	a = job_add(st, "a", "{}", 0);
	b = job_add(st, "b", "{}", 0);
	cr_assert_eq(store_market_get_or_add(st, "us-east-1", "us-east-1a",
					     "c4.xlarge", "Linux/UNIX", &m,
					     &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_allocation_add(st, a, m, "m3.large", STORE_TIER_TRANSIENT,
					  100000, 1, 10, &alloc, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_instance_add(st, alloc, "i-1", 10, 0, &inst, &err),
		     PX_OK, "%s", err.msg);

	/* inserted out of time order, with a tie at 300 */
	event_add(st, a, 0, 300, "stage", "first at 300");
	event_add(st, a, inst, 100, "join", "");
	event_add(st, b, 0, 50, "decision", "other job");
	event_add(st, a, 0, 300, "warning", "second at 300");
	event_add(st, a, inst, 200, "eviction", "{\"price\": 1}");
	event_add(st, 0, 0, 150, "error", "no job");

	c = events(st, a);
	cr_assert_eq(c->n, 4);
	cr_assert_eq(c->v[0].at_us, 100);
	cr_assert_str_eq(c->v[0].kind, "join");
	cr_assert_str_eq(c->v[0].detail, "");
	cr_assert_eq(c->v[0].detail_len, 0);
	cr_assert_eq(c->v[0].instance_id, inst);
	cr_assert_eq(c->v[0].job_id, a);
	cr_assert_eq(c->v[1].at_us, 200);
	cr_assert_str_eq(c->v[1].kind, "eviction");
	cr_assert_str_eq(c->v[1].detail, "{\"price\": 1}");
	/* same time: insertion order */
	cr_assert_eq(c->v[2].at_us, 300);
	cr_assert_str_eq(c->v[2].detail, "first at 300");
	cr_assert_eq(c->v[2].instance_id, 0, "no instance reads as 0");
	cr_assert_str_eq(c->v[3].detail, "second at 300");
	cr_assert_lt(c->v[2].id, c->v[3].id);
	for (size_t i = 1; i < c->n; i++)
		cr_assert_neq(c->v[i].id, c->v[i - 1].id);

	c = events(st, b);
	cr_assert_eq(c->n, 1);
	cr_assert_str_eq(c->v[0].kind, "decision");

	/* job_id <= 0: the events about no job */
	c = events(st, 0);
	cr_assert_eq(c->n, 1);
	cr_assert_eq(c->v[0].job_id, 0);
	cr_assert_str_eq(c->v[0].detail, "no job");
	cr_assert_eq(events(st, -1)->n, 1);

	/* an unknown job has none */
	cr_assert_eq(events(st, b + 10)->n, 0);
	store_close(st);
}

/* ---- ledger ---- */

struct ledger_seen {
	size_t n;
	int64_t sum, from[MAXROWS], id[MAXROWS], inst[MAXROWS];
	char note[MAXROWS][32];
};

static enum px_err collect_line(const struct store_ledger_line *l,
				void *ctx)
{
	struct ledger_seen *c = ctx;

	cr_assert_lt(c->n, MAXROWS);
	cr_assert_eq(strlen(l->note), l->note_len);
	c->sum += l->amount_uusd;
	c->from[c->n] = l->from_us;
	c->id[c->n] = l->id;
	c->inst[c->n] = l->instance_id;
	cr_assert_geq(l->to_us, l->from_us);
	snprintf(c->note[c->n], sizeof(c->note[0]), "%s", l->note);
	c->n++;
	return PX_OK;
}

Test(store_read, ledger_round_trip)
{
	struct store *st = db_open(":memory:");
	struct px_error err = {0};
	struct ledger_seen c = {0};
	int64_t a, b, cost = -1;

	a = job_add(st, "a", "{}", 0);
	b = job_add(st, "b", "{}", 0);
	cr_assert_eq(store_ledger_add(st, a, 0, 7200, 10800, 250000,
				      "hour 3", &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_ledger_add(st, a, 0, 0, 3600, 130000, "hour 1",
				      &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_ledger_add(st, b, 0, 0, 3600, 999, "", &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_ledger_add(st, a, 0, 3600, 7200, 1, "", &err),
		     PX_OK, "%s", err.msg);

	cr_assert_eq(store_ledger_each(st, a, collect_line, &c, &err), PX_OK,
		     "%s", err.msg);
	cr_assert_eq(c.n, 3);
	cr_assert_eq(c.from[0], 0);
	cr_assert_eq(c.from[1], 3600);
	cr_assert_eq(c.from[2], 7200);
	cr_assert_str_eq(c.note[0], "hour 1");
	cr_assert_str_eq(c.note[1], "");
	cr_assert_str_eq(c.note[2], "hour 3");
	cr_assert_eq(c.inst[0], 0);
	/* the lines add up to the job's cost */
	cr_assert_eq(store_job_cost(st, a, &cost, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(c.sum, cost);
	cr_assert_eq(c.sum, 380001);

	memset(&c, 0, sizeof(c));
	cr_assert_eq(store_ledger_each(st, b + 5, collect_line, &c, &err),
		     PX_OK);
	cr_assert_eq(c.n, 0);
	store_close(st);
}

/* ---- re-entry and snapshots ---- */

struct summary {
	struct store *st;
	struct store *writer; /* commits an event during the walk, or NULL */
	struct px_error *err;
	size_t jobs;
	int64_t events[MAXROWS];
	int64_t cost[MAXROWS];
};

static enum px_err count_event(const struct store_event *ev, void *ctx)
{
	(void)ev;
	++*(int64_t *)ctx;
	return PX_OK;
}

static enum px_err summarize(const struct store_job *j, void *ctx)
{
	struct summary *s = ctx;
	enum px_err r;

	cr_assert_lt(s->jobs, MAXROWS);
	if (s->writer)
		event_add(s->writer, j->id, 0, 1, "late", "");
	r = store_events_each(s->st, j->id, count_event,
			      &s->events[s->jobs], s->err);
	if (r == PX_OK)
		r = store_job_cost(s->st, j->id, &s->cost[s->jobs], s->err);
	s->jobs++;
	return r;
}

Test(store_read, walkers_reenter)
{
	struct store *st = db_open(":memory:");
	struct px_error err = {0};
	struct summary s = {.st = st, .err = &err};
	int64_t a, b;

	a = job_add(st, "a", "{}", 0);
	b = job_add(st, "b", "{}", 0);
	for (int i = 0; i < 5; i++)
		event_add(st, a, 0, i, "stage", "");
	event_add(st, b, 0, 0, "stage", "");
	cr_assert_eq(store_ledger_add(st, b, 0, 0, 1, 42, "", &err), PX_OK);
	cr_assert_eq(store_jobs_each(st, NULL, summarize, &s, &err), PX_OK,
		     "%s", err.msg);
	cr_assert_eq(s.jobs, 2);
	cr_assert_eq(s.events[0], 5);
	cr_assert_eq(s.events[1], 1);
	cr_assert_eq(s.cost[0], 0);
	cr_assert_eq(s.cost[1], 42);
	store_close(st);
}

Test(store_read, walk_sees_one_snapshot, .init = db_setup,
     .fini = db_teardown)
{
	struct store *w = db_open(db_path), *ro;
	struct px_error err = {0};
	struct summary s = {.err = &err};
	int64_t a;

	a = job_add(w, "a", "{}", 0);
	event_add(w, a, 0, 0, "stage", "");
	ro = db_open_ro(db_path);
	s.st = ro;
	s.writer = w;
	/* the writer commits one more event per job during the walk: the
	 * walk's reads do not see it */
	cr_assert_eq(store_jobs_each(ro, NULL, summarize, &s, &err), PX_OK,
		     "%s", err.msg);
	cr_assert_eq(s.jobs, 1);
	cr_assert_eq(s.events[0], 1);
	/* a read after the walk does */
	cr_assert_eq(events(ro, a)->n, 2);

	/* an uncommitted transaction is not seen */
	cr_assert_eq(store_begin(w, &err), PX_OK, "%s", err.msg);
	job_add(w, "uncommitted", "{}", 0);
	cr_assert_eq(jobs(ro, NULL)->n, 1);
	cr_assert_eq(store_commit(w, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(jobs(ro, NULL)->n, 2);
	store_close(ro);
	store_close(w);
}

/* ---- bounds on what is read back ---- */

Test(store_read, reads_are_bounded, .init = db_setup, .fini = db_teardown)
{
	struct store *st = db_open(db_path);
	struct px_error err = {0};
	struct jobs_seen c = {0};
	struct events_seen e = {0};
	char sql[256];
	int64_t a;

	a = job_add(st, "ok", "{}", 0);
	store_close(st);
	/* the table allows longer names and texts than the API writes */
	snprintf(sql, sizeof(sql),
		 "INSERT INTO jobs (name, spec, state, created_us, "
		 "updated_us) VALUES (hex(zeroblob(%d)), '{}', 'running', "
		 "0, 0)",
		 STORE_NAME_MAX / 2);
	raw_exec(db_path, sql);
	snprintf(sql, sizeof(sql),
		 "INSERT INTO events (job_id, at_us, kind, detail) VALUES "
		 "(%" PRId64 ", 5, 'big', hex(zeroblob(%d)))",
		 a, STORE_TEXT_MAX / 2 + 1);
	raw_exec(db_path, sql);

	st = db_open_ro(db_path);
	cr_assert_eq(store_jobs_each(st, NULL, collect_job, &c, &err),
		     PX_EINVAL);
	cr_assert_eq(c.n, 1, "the good job before the bad one is seen");
	cr_assert(strstr(err.msg, "read job 2: field 'name' longer than"),
		  "%s", err.msg);
	memset(&err, 0, sizeof(err));
	cr_assert_eq(store_events_each(st, a, collect_event, &e, &err),
		     PX_ETOOBIG);
	cr_assert_eq(e.n, 0);
	cr_assert(strstr(err.msg, "field 'detail' longer than"), "%s",
		  err.msg);
	store_close(st);
}

/* ---- read-only opening ---- */

Test(store_read, readonly_round_trip, .init = db_setup,
     .fini = db_teardown)
{
	struct store *st = db_open(db_path);
	struct px_error err = {0};
	struct jobs_seen *c;
	int64_t a, cost = 0;

	a = job_add(st, "run", "{\"policy\": \"bidbrain\"}", 123);
	event_add(st, a, 0, 9, "result", "{\"cost_usd\": 1.5}");
	cr_assert_eq(store_ledger_add(st, a, 0, 0, 10, 1500000, "", &err),
		     PX_OK, "%s", err.msg);
	store_close(st);

	st = db_open_ro(db_path);
	cr_assert_eq(store_schema_version(st), STORE_SCHEMA_VERSION);
	c = jobs(st, NULL);
	cr_assert_eq(c->n, 1);
	cr_assert_eq(c->v[0].id, a);
	cr_assert_str_eq(c->v[0].name, "run");
	cr_assert_str_eq(c->v[0].spec_json, "{\"policy\": \"bidbrain\"}");
	cr_assert_eq(c->v[0].created_us, 123);
	cr_assert_eq(events(st, a)->n, 1);
	cr_assert_str_eq(events(st, a)->v[0].detail, "{\"cost_usd\": 1.5}");
	cr_assert_eq(store_job_cost(st, a, &cost, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(cost, 1500000);
	store_close(st);
}

/* Every write through a read-only store fails, says so, and changes
 * nothing in the file. */
Test(store_read, readonly_refuses_writes, .init = db_setup,
     .fini = db_teardown)
{
	struct store *st = db_open(db_path);
	struct px_error err = {0};
	struct store_import imp = {
		.path = "t.json",
		.sha256 = "00000000000000000000000000000000"
			  "00000000000000000000000000000000",
		.records = 0,
		.at_us = 1,
	};
	int64_t job, m, alloc, inst, id = -7;
	char *before, *after;
	size_t nb, na;
	enum px_err r[11];
	bool ins = false;

	job = job_add(st, "j", "{}", 0);
	cr_assert_eq(store_market_get_or_add(st, "r", "z", "t", "p", &m,
					     &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_allocation_add(st, job, m, "m3.large", STORE_TIER_RELIABLE, 0,
					  1, 0, &alloc, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_instance_add(st, alloc, "i-1", 0, 0, &inst, &err),
		     PX_OK, "%s", err.msg);
	store_close(st);
	before = px_test_read_file(db_path, &nb);
	cr_assert_not_null(before, "%s", db_path);

	st = db_open_ro(db_path);
	/* a market already there is only read */
	cr_assert_eq(store_market_get_or_add(st, "r", "z", "t", "p", &id,
					     &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(id, m);
	id = -7;
	r[0] = store_market_get_or_add(st, "r", "z", "t2", "p", &id, &err);
	cr_assert(strstr(err.msg, "readonly"), "%s", err.msg);
	r[1] = store_price_add(st, m, 1, 1, &ins, NULL);
	r[2] = store_ondemand_set(st, "r", "t", 1, "", NULL);
	r[3] = store_import_add(st, &imp, NULL);
	r[4] = store_job_add(st, "k", "{}", "sim", 0, &id, NULL);
	r[5] = store_job_set_state(st, job, STORE_JOB_RUNNING, 1, NULL);
	r[6] = store_allocation_add(st, job, m, "m3.large", STORE_TIER_RELIABLE, 0, 1, 0,
				    &id, NULL);
	r[7] = store_instance_add(st, alloc, "i-2", 0, 0, &id, NULL);
	r[8] = store_instance_end(st, inst, 5, "released", NULL);
	r[9] = store_event_add(st, job, 0, 0, "stage", "", NULL);
	r[10] = store_ledger_add(st, job, 0, 0, 1, 1, "", NULL);
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		cr_assert_eq(r[i], PX_EDB, "write %zu: %s", i,
			     px_strerror(r[i]));
	cr_assert_eq(id, -7, "an id came back from a refused write");
	/* no write lock taken for nothing */
	cr_assert_eq(store_begin(st, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "read-only"), "%s", err.msg);
	cr_assert_not(store_in_transaction(st));
	/* still usable for reading after the refusals */
	cr_assert_eq(jobs(st, NULL)->n, 1);
	cr_assert_eq(jobs(st, NULL)->v[0].state, STORE_JOB_QUEUED);
	store_close(st);

	after = px_test_read_file(db_path, &na);
	cr_assert_not_null(after, "%s", db_path);
	cr_assert_eq(na, nb);
	cr_assert_eq(memcmp(before, after, nb), 0, "database changed");
	free(before);
	free(after);
}

Test(store_read, readonly_missing_file, .init = db_setup,
     .fini = db_teardown)
{
	struct px_error err = {0};
	struct store *st = (struct store *)&err; /* must stay untouched */

	cr_assert_eq(store_open_readonly(db_path, &st, &err), PX_ENOENT,
		     "%s", err.msg);
	cr_assert_eq(st, (struct store *)&err);
	cr_assert(strstr(err.msg, db_path), "%s", err.msg);
	cr_assert(strstr(err.msg, "no such file"), "%s", err.msg);
	cr_assert_neq(access(db_path, F_OK), 0, "the file was created");
	memset(&err, 0, sizeof(err));
	cr_assert_eq(store_open_readonly("/nonexistent-dir/x.db", &st, &err),
		     PX_ENOENT, "%s", err.msg);
}

static enum px_err open_ro_fails(const char *path, char *msg, size_t len)
{
	struct px_error err = {0};
	struct store *st = NULL;
	enum px_err r = store_open_readonly(path, &st, &err);

	cr_assert_null(st);
	snprintf(msg, len, "%s", err.msg);
	return r;
}

Test(store_read, readonly_refuses_foreign_files, .init = db_setup,
     .fini = db_teardown)
{
	char msg[PX_ERRMSG_MAX];
	FILE *f;

	/* an empty file (as a first writer leaves it until its schema
	 * commits): nothing stored yet, like a missing file */
	f = fopen(db_path, "w");
	cr_assert_not_null(f);
	fclose(f);
	cr_assert_eq(open_ro_fails(db_path, msg, sizeof(msg)), PX_ENOENT,
		     "%s", msg);
	cr_assert(strstr(msg, "empty"), "%s", msg);

	/* tables but no version */
	raw_exec(db_path, "CREATE TABLE t (x)");
	cr_assert_eq(open_ro_fails(db_path, msg, sizeof(msg)), PX_EINVAL,
		     "%s", msg);
	cr_assert(strstr(msg, "not a proteus store"), "%s", msg);
	unlink(db_path);

	/* a version but another application id */
	raw_exec(db_path, "CREATE TABLE t (x); PRAGMA user_version = 1; "
			  "PRAGMA application_id = 42");
	cr_assert_eq(open_ro_fails(db_path, msg, sizeof(msg)), PX_EINVAL,
		     "%s", msg);
	cr_assert(strstr(msg, "application id 42"), "%s", msg);
	unlink(db_path);

	/* newer than this build */
	store_close(db_open(db_path));
	raw_exec(db_path, "PRAGMA user_version = 99");
	cr_assert_eq(open_ro_fails(db_path, msg, sizeof(msg)), PX_EUNSUPP,
		     "%s", msg);
	cr_assert(strstr(msg, "schema version 99"), "%s", msg);
	unlink(db_path);

	/* not SQLite at all */
	f = fopen(db_path, "w");
	cr_assert_not_null(f);
	for (int i = 0; i < 200; i++)
		fputs("this is not a database\n", f);
	fclose(f);
	cr_assert_eq(open_ro_fails(db_path, msg, sizeof(msg)), PX_EDB, "%s",
		     msg);
	cr_assert(strstr(msg, db_path), "%s", msg);

	/* :memory: is always empty, so never a store */
	cr_assert_eq(open_ro_fails(":memory:", msg, sizeof(msg)), PX_ENOENT,
		     "%s", msg);
}

/* store_event_count and store_event_last: of one kind, for one job; the
 * last in the walk's order (latest time, then latest id); none: count 0
 * and fn not called; a bad kind refused. */
Test(store_read, last_and_count_of_a_kind)
{
	struct store *st = db_open(":memory:");
	struct events_seen c = {0};
	struct px_error err = {0};
	int64_t a, b, n = -1;

	a = job_add(st, "a", "{}", 0);
	b = job_add(st, "b", "{}", 0);
	event_add(st, a, 0, 300, "error", "restarting");
	event_add(st, a, 0, 100, "eviction", "1");
	event_add(st, a, 0, 400, "error", "tie, earlier id");
	event_add(st, a, 0, 400, "error", "the reason");
	event_add(st, a, 0, 200, "eviction", "2");
	event_add(st, a, 0, 500, "progress", "later, other kind");
	event_add(st, b, 0, 900, "error", "other job");
	event_add(st, b, 0, 900, "eviction", "other job");
	cr_assert_eq(store_event_count(st, a, "eviction", &n, &err), PX_OK,
		     "%s", err.msg);
	cr_assert_eq(n, 2);
	cr_assert_eq(store_event_count(st, a, "join", &n, &err), PX_OK);
	cr_assert_eq(n, 0);
	cr_assert_eq(store_event_count(st, 99, "error", &n, &err), PX_OK);
	cr_assert_eq(n, 0);
	cr_assert_eq(store_event_last(st, a, "error", collect_event, &c,
				      &err), PX_OK, "%s", err.msg);
	cr_assert_eq(c.n, 1);
	cr_assert_str_eq(c.detail[0], "the reason");
	cr_assert_eq(c.v[0].at_us, 400);
	cr_assert_eq(c.v[0].job_id, a);
	cr_assert_eq(store_event_last(st, a, "join", collect_event, &c,
				      &err), PX_OK);
	cr_assert_eq(c.n, 1, "called for no event");
	cr_assert_eq(store_event_count(st, a, "", &n, &err), PX_EINVAL);
	cr_assert_eq(store_event_last(st, a, NULL, collect_event, &c, &err),
		     PX_EINVAL);
	store_close(st);
}
