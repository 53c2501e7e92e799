/* test_journal.c -- what `simulate --db` writes through the journal
 * (agent/journal.c): every instance a row tied to its allocation and job,
 * closed at its end, each with one ledger line; on-demand requests without
 * a market; the ledger adds up to the job's cost. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

#include "pxrun.h"

static char *tmp;

static void setup(void)
{
	tmp = px_tmpdir();
	cr_assert_not_null(tmp);
}

static void teardown(void)
{
	px_rmtree(tmp);
	free(tmp);
}

static int64_t q(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s;
	int64_t v;

	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK,
		     "%s: %s", sql, sqlite3_errmsg(db));
	cr_assert_eq(sqlite3_step(s), SQLITE_ROW, "%s", sql);
	v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

Test(journal, simulate_db_rows, .init = setup, .fini = teardown,
     .timeout = 60)
{
	char *trace = px_src_path(
		"docs/examples/traces/us-east-1_2016-03-01_7d_linux.json.gz");
	char *od = px_src_path("etc/ondemand/us-east-1_2016-02_2016-04.json");
	char *job = px_src_path("docs/examples/job-2016-7d-m3large.json");
	char db[600];
	const char *argv[] = {"proteusctl", "simulate", "--trace", trace,
			      "--ondemand-prices", od, "--job", job,
			      "--policy", "bidbrain,ondemand", "--json",
			      "--db", db, NULL};
	struct pxrun r;
	json_t *j, *res;
	sqlite3 *h;

	snprintf(db, sizeof db, "%s/j.db", tmp);
	cr_assert_eq(pxrun(&r, 60, "proteusctl", argv), 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	j = json_loads(r.out, 0, NULL);
	cr_assert_not_null(j, "%s", r.out);
	res = json_object_get(j, "results");
	cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL),
		     SQLITE_OK);
	for (size_t i = 0; i < json_array_size(res); i++) {
		json_t *x = json_array_get(res, i);
		int64_t launched = json_integer_value(
			json_object_get(x, "instances_launched"));
		double cost = json_real_value(json_object_get(x, "cost_usd"));
		char sql[512];
		int64_t job_id = (int64_t)i + 1;

		cr_assert_gt(launched, 0);
		snprintf(sql, sizeof sql, "SELECT count(*) FROM instances i "
			 "JOIN allocations a ON a.id = i.alloc_id WHERE "
			 "a.job_id = %lld", (long long)job_id);
		cr_assert_eq(q(h, sql), launched, "one row per instance");
		snprintf(sql, sizeof sql, "SELECT count(*) FROM instances i "
			 "JOIN allocations a ON a.id = i.alloc_id WHERE "
			 "a.job_id = %lld AND (i.end_us IS NULL OR i.ctrl_id "
			 "IS NULL)", (long long)job_id);
		cr_assert_eq(q(h, sql), 0, "every instance closed, with its "
			     "controller id");
		snprintf(sql, sizeof sql, "SELECT count(*) FROM ledger WHERE "
			 "job_id = %lld AND instance_id IS NULL",
			 (long long)job_id);
		cr_assert_eq(q(h, sql), 0, "every ledger line has its "
			     "instance");
		snprintf(sql, sizeof sql, "SELECT count(*) FROM ledger WHERE "
			 "job_id = %lld", (long long)job_id);
		cr_assert_eq(q(h, sql), launched, "one line per instance");
		snprintf(sql, sizeof sql, "SELECT coalesce(sum(amount_uusd), "
			 "0) FROM ledger WHERE job_id = %lld",
			 (long long)job_id);
		cr_assert_eq(q(h, sql), (int64_t)(cost * 1e6 + 0.5),
			     "the ledger adds up to the cost");
		/* reliable instances are on-demand: no market */
		snprintf(sql, sizeof sql, "SELECT count(*) FROM allocations "
			 "WHERE job_id = %lld AND (tier = 'reliable') != "
			 "(market_id IS NULL)", (long long)job_id);
		cr_assert_eq(q(h, sql), 0);
		snprintf(sql, sizeof sql, "SELECT state = 'done' AND world = "
			 "'sim' FROM jobs WHERE id = %lld", (long long)job_id);
		cr_assert_eq(q(h, sql), 1);
	}
	cr_assert_eq(q(h, "SELECT count(*) FROM events WHERE kind IN "
		       "('launch', 'release', 'eviction', 'ready', "
		       "'warning') AND instance_id IS NULL"), 0,
		     "instance events are tied to their instance");
	cr_assert_eq(q(h, "SELECT count(*) FROM pragma_foreign_key_check"),
		     0);
	sqlite3_close(h);
	json_decref(j);
	pxrun_free(&r);
	free(trace);
	free(od);
	free(job);
}
