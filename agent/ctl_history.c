/* ctl_history.c -- `proteusctl history`: list the runs stored in the
 * database (by `proteusctl simulate --db`, later by the daemon) and show
 * one run's events in time order with its cost.
 *
 *   proteusctl history [--db PATH] [--job ID|NAME] [--json]
 *
 * It only reads: the file is opened read-only with SQLite directly (the
 * store API has no read side for jobs and events yet), after checking that
 * it is a Proteus store of a schema version this build knows.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"
#include "../db/store.h"
#include "ctl.h"

#define STORE_APP_ID 1347965745 /* "PXS1", see db/schema_v1.h */

static const char history_usage[] =
	"usage: proteusctl history [--db PATH] [--job ID|NAME] [--json]\n"
	"\n"
	"Without --job: one line per stored run (job): id, name, policy,\n"
	"state, billing, simulated window, runtime, cost (the sum of its\n"
	"ledger) and number of events.  With --job: the run with that id, or\n"
	"every run with that name, each with its events in time order and\n"
	"its cost.\n"
	"\n"
	"  --db PATH   database (default $PROTEUS_DB or\n"
	"              ~/.local/share/proteus/proteus.db)\n"
	"  --json      {\"runs\": [...]}; with --job each run has \"events\"\n"
	"\n"
	"exit: 0 ok, 1 failure, 2 usage, 4 no such database or job\n";

static const char sql_runs[] =
	"SELECT j.id, j.name, j.state, j.created_us,"
	" (SELECT detail FROM events e WHERE e.job_id = j.id"
	"   AND e.kind = 'simulate' ORDER BY e.id LIMIT 1),"
	" (SELECT detail FROM events e WHERE e.job_id = j.id"
	"   AND e.kind = 'result' ORDER BY e.id DESC LIMIT 1),"
	" (SELECT COALESCE(SUM(amount_uusd), 0) FROM ledger l"
	"   WHERE l.job_id = j.id),"
	" (SELECT COUNT(*) FROM events e WHERE e.job_id = j.id)"
	" FROM jobs j WHERE (?1 IS NULL OR j.id = ?1)"
	" AND (?2 IS NULL OR j.name = ?2) ORDER BY j.id";

static const char sql_events[] =
	"SELECT at_us, kind, instance_id, detail FROM events"
	" WHERE job_id = ?1 ORDER BY at_us, id";

struct hrun {
	int64_t id;
	char name[STORE_NAME_MAX];
	char state[16];
	int64_t created_us;
	json_t *sim;             /* the "simulate" event's detail, or NULL */
	json_t *result;          /* the "result" event's detail, or NULL */
	int64_t cost_uusd;
	int64_t n_events;
};

static int open_db(const char *arg, sqlite3 **ret)
{
	char *path = arg ? strdup(arg) : ctl_default_db();
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int app = 0, ver = -1, rc = CTL_EXIT_FAIL;

	if (!path)
		return CTL_EXIT_FAIL;
	if (access(path, F_OK)) {
		log_err("database '%s': %s (nothing stored yet?)", path,
			strerror(errno));
		free(path);
		return errno == ENOENT ? CTL_EXIT_NOTFOUND : CTL_EXIT_FAIL;
	}
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) !=
	    SQLITE_OK) {
		log_err("database '%s': %s", path, db ? sqlite3_errmsg(db) :
			"out of memory");
		goto out;
	}
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_prepare_v2(db, "SELECT (SELECT application_id FROM "
			       "pragma_application_id), (SELECT user_version "
			       "FROM pragma_user_version)", -1, &st,
			       NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		log_err("database '%s': %s", path, sqlite3_errmsg(db));
		goto out;
	}
	app = sqlite3_column_int(st, 0);
	ver = sqlite3_column_int(st, 1);
	if (app != STORE_APP_ID || ver < 1) {
		log_err("database '%s': not a Proteus database", path);
		goto out;
	}
	if (ver > STORE_SCHEMA_VERSION) {
		log_err("database '%s': schema version %d is newer than this "
			"build's (%d)", path, ver, STORE_SCHEMA_VERSION);
		goto out;
	}
	rc = CTL_EXIT_OK;
out:
	sqlite3_finalize(st);
	if (rc == CTL_EXIT_OK)
		*ret = db;
	else
		sqlite3_close(db);
	free(path);
	return rc;
}

static json_t *col_json(sqlite3_stmt *st, int i)
{
	const unsigned char *s = sqlite3_column_text(st, i);
	return s ? json_loads((const char *)s, 0, NULL) : NULL;
}

static void runs_free(struct hrun *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		json_decref(v[i].sim);
		json_decref(v[i].result);
	}
	free(v);
}

/* Runs matching id (> 0) or name (non-NULL), or all. */
static int load_runs(sqlite3 *db, int64_t id, const char *name,
		     struct hrun **ret, size_t *ret_n)
{
	sqlite3_stmt *st = NULL;
	struct hrun *v = NULL;
	size_t n = 0, cap = 0;
	int s;

	if (sqlite3_prepare_v2(db, sql_runs, -1, &st, NULL) != SQLITE_OK)
		goto fail;
	if (id > 0)
		sqlite3_bind_int64(st, 1, id);
	if (name)
		sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			size_t c = cap ? 2 * cap : 32;
			struct hrun *w = px_reallocarray(v, c, sizeof *w);
			if (!w) {
				log_err("out of memory");
				goto out_free;
			}
			v = w;
			cap = c;
		}
		struct hrun *r = &v[n++];
		memset(r, 0, sizeof *r);
		r->id = sqlite3_column_int64(st, 0);
		snprintf(r->name, sizeof r->name, "%s",
			 (const char *)sqlite3_column_text(st, 1));
		snprintf(r->state, sizeof r->state, "%s",
			 (const char *)sqlite3_column_text(st, 2));
		r->created_us = sqlite3_column_int64(st, 3);
		r->sim = col_json(st, 4);
		r->result = col_json(st, 5);
		r->cost_uusd = sqlite3_column_int64(st, 6);
		r->n_events = sqlite3_column_int64(st, 7);
	}
	if (s != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(st);
	*ret = v;
	*ret_n = n;
	return CTL_EXIT_OK;
fail:
	log_err("database: reading jobs: %s", sqlite3_errmsg(db));
out_free:
	sqlite3_finalize(st);
	runs_free(v, n);
	return CTL_EXIT_FAIL;
}

static const char *jstr(json_t *o, const char *k, const char *def)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : def;
}

static void fmt_us(int64_t us, char *buf, size_t len)
{
	px_format_time(us / PX_USEC_PER_SEC, buf, len);
}

static void print_runs_table(const struct hrun *v, size_t n)
{
	char c[32], cost[32], rt[32];

	printf("%5s %-16s %-9s %-9s %-13s %-20s %9s %12s %7s  %s\n", "ID",
	       "NAME", "POLICY", "STATE", "BILLING", "START", "HOURS",
	       "COST_USD", "EVENTS", "STORED");
	for (size_t i = 0; i < n; i++) {
		const struct hrun *r = &v[i];
		json_t *h = json_object_get(r->result, "runtime_hours");

		fmt_us(r->created_us, c, sizeof c);
		if (json_is_number(h))
			snprintf(rt, sizeof rt, "%.2f", json_number_value(h));
		else
			snprintf(rt, sizeof rt, "-");
		printf("%5lld %-16s %-9s %-9s %-13s %-20s %9s %12s %7lld  %s\n",
		       (long long)r->id, r->name, jstr(r->sim, "policy", "-"),
		       r->state, jstr(r->sim, "billing", "-"),
		       jstr(r->sim, "start", "-"), rt,
		       px_format_usd(r->cost_uusd, cost, sizeof cost),
		       (long long)r->n_events, c);
	}
}

static json_t *run_json(const struct hrun *r)
{
	char c[32];

	fmt_us(r->created_us, c, sizeof c);
	json_t *o = json_pack("{s:I, s:s, s:s, s:s, s:f, s:I}", "id",
			      (json_int_t)r->id, "name", r->name, "state",
			      r->state, "stored", c, "cost_usd",
			      (double)r->cost_uusd / 1e6, "events",
			      (json_int_t)r->n_events);
	if (!o)
		return NULL;
	json_object_set_new(o, "policy", r->sim && json_object_get(r->sim,
			    "policy") ? json_string(jstr(r->sim, "policy",
			    "")) : json_null());
	json_object_set(o, "simulation", r->sim ? r->sim : json_null());
	json_object_set(o, "result", r->result ? r->result : json_null());
	return o;
}

/* The events of run r, printed (table) or added to o as "events". */
static int show_events(sqlite3 *db, const struct hrun *r, json_t *o)
{
	sqlite3_stmt *st = NULL;
	json_t *arr = o ? json_array() : NULL;
	char t[32], cost[32];
	int s, rc = CTL_EXIT_OK;

	if (o && !arr)
		return CTL_EXIT_FAIL;
	if (sqlite3_prepare_v2(db, sql_events, -1, &st, NULL) != SQLITE_OK) {
		log_err("database: reading events: %s", sqlite3_errmsg(db));
		json_decref(arr);
		return CTL_EXIT_FAIL;
	}
	sqlite3_bind_int64(st, 1, r->id);
	if (!o) {
		printf("run %lld: job '%s', policy %s, %s, cost %s USD "
		       "(ledger), %lld events\n\n", (long long)r->id, r->name,
		       jstr(r->sim, "policy", "-"), r->state,
		       px_format_usd(r->cost_uusd, cost, sizeof cost),
		       (long long)r->n_events);
		printf("%-20s %-9s %s\n", "TIME", "KIND", "DETAIL");
	}
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		const char *kind = (const char *)sqlite3_column_text(st, 1);
		const char *det = (const char *)sqlite3_column_text(st, 3);

		fmt_us(sqlite3_column_int64(st, 0), t, sizeof t);
		if (!o) {
			printf("%-20s %-9s %s\n", t, kind, det ? det : "");
			continue;
		}
		json_t *d = det ? json_loads(det, 0, NULL) : NULL;
		json_t *e = json_pack("{s:s, s:s}", "at", t, "kind", kind);
		if (!e || json_array_append_new(arr, e)) {
			json_decref(d);
			rc = CTL_EXIT_FAIL;
			break;
		}
		if (sqlite3_column_type(st, 2) != SQLITE_NULL)
			json_object_set_new(e, "instance_id", json_integer(
				sqlite3_column_int64(st, 2)));
		json_object_set_new(e, "detail", d ? d : json_string(
					    det ? det : ""));
	}
	if (rc == CTL_EXIT_OK && s != SQLITE_DONE) {
		log_err("database: reading events: %s", sqlite3_errmsg(db));
		rc = CTL_EXIT_FAIL;
	}
	sqlite3_finalize(st);
	if (o)
		json_object_set_new(o, "events", arr);
	else
		printf("\n");
	return rc;
}

int ctl_history(int argc, char **argv)
{
	static const struct option opts[] = {
		{"db", required_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},
		{"job", required_argument, NULL, 'J'},
		{"json", no_argument, NULL, 'j'},
		{0},
	};
	const char *dbpath = NULL, *job = NULL, *name = NULL;
	sqlite3 *db = NULL;
	struct hrun *v = NULL;
	size_t n = 0;
	int64_t id = 0;
	bool json = false;
	json_t *out = NULL, *arr;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dbpath = optarg; break;
		case 'h': fputs(history_usage, stdout); return CTL_EXIT_OK;
		case 'J': job = optarg; break;
		case 'j': json = true; break;
		default: fputs(history_usage, stderr); return CTL_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		log_err("history: unexpected argument '%s'", argv[optind]);
		return CTL_EXIT_USAGE;
	}
	if (job) {
		char *end;
		errno = 0;
		long long x = strtoll(job, &end, 10);
		if (!*job) {
			log_err("--job: empty");
			return CTL_EXIT_USAGE;
		}
		if (!errno && !*end && x > 0)
			id = x;
		else
			name = job;
	}
	rc = open_db(dbpath, &db);
	if (rc)
		return rc;
	rc = load_runs(db, id, name, &v, &n);
	if (rc)
		goto out;
	if (job && n == 0) {
		log_err("no run with %s '%s' (see 'proteusctl history')",
			id ? "id" : "name", job);
		rc = CTL_EXIT_NOTFOUND;
		goto out;
	}
	if (!json) {
		if (!job)
			print_runs_table(v, n);
		for (size_t i = 0; job && i < n && !rc; i++)
			rc = show_events(db, &v[i], NULL);
		goto out;
	}
	arr = json_array();
	out = json_pack("{s:o*}", "runs", arr);
	if (!out) {
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		json_t *o = run_json(&v[i]);
		if (!o || json_array_append_new(arr, o)) {
			rc = CTL_EXIT_FAIL;
			break;
		}
		if (job)
			rc = show_events(db, &v[i], o);
	}
	if (!rc && json_dumpf(out, stdout, JSON_INDENT(2) |
			      JSON_REAL_PRECISION(10)))
		rc = CTL_EXIT_FAIL;
	if (!rc)
		putchar('\n');
out:
	json_decref(out);
	runs_free(v, n);
	sqlite3_close(db);
	return rc;
}
