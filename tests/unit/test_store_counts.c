/* test_store_counts.c -- store_counts(): row counts of markets, prices and
 * jobs, checked against SQLite's own count on the same file. */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../db/store.h"
#include "store_fixture.h"

static int64_t sql_count(const char *path, const char *table)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	char sql[128];
	int64_t n = -1;

	cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
		     SQLITE_OK);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return n;
}

Test(store_counts, empty_then_filled, .init = db_setup, .fini = db_teardown,
     .timeout = 30)
{
	struct store_counts c = {-1, -1, -1};
	struct px_error err = {0};
	struct store *st = db_open(db_path);
	int64_t m1, m2, job;

	cr_assert_eq(store_counts(st, &c, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(c.markets, 0);
	cr_assert_eq(c.prices, 0);
	cr_assert_eq(c.jobs, 0);

	cr_assert_eq(store_market_get_or_add(st, "us-east-1", "us-east-1a",
					     "c4.xlarge", "Linux/UNIX", &m1,
					     &err), PX_OK, "%s", err.msg);
	cr_assert_eq(store_market_get_or_add(st, "us-east-1", "us-east-1b",
					     "c4.xlarge", "Linux/UNIX", &m2,
					     &err), PX_OK, "%s", err.msg);
	for (int i = 0; i < 37; i++)
		cr_assert_eq(store_price_add(st, i % 3 ? m1 : m2, 1000 + i,
					     100000 + i, NULL, &err),
			     PX_OK, "%s", err.msg);
	/* a duplicate (market, time) is not a new row */
	cr_assert_eq(store_price_add(st, m1, 1001, 100001, NULL, &err), PX_OK);
	cr_assert_eq(store_job_add(st, "j", "{}", "sim", 1, &job, &err), PX_OK,
		     "%s", err.msg);
	cr_assert_eq(store_counts(st, &c, &err), PX_OK, "%s", err.msg);
	store_close(st);

	cr_assert_eq(c.markets, 2);
	cr_assert_eq(c.prices, 37);
	cr_assert_eq(c.jobs, 1);
	cr_assert_eq(c.markets, sql_count(db_path, "markets"));
	cr_assert_eq(c.prices, sql_count(db_path, "prices"));
	cr_assert_eq(c.jobs, sql_count(db_path, "jobs"));
}
