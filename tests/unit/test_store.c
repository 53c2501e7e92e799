/* test_store.c -- the SQLite store: migrations, markets, prices,
 * transactions, on-demand prices, jobs and their cost, crash safety. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../db/schema_v1.h"
#include "../../db/store.h"
#include "store_fixture.h"

/* ---- helpers (the temp dir per test, db_path: store_fixture.h) ---- */

static int64_t market(struct store *st, const char *zone, const char *type)
{
	struct px_error err = {0};
	int64_t id = -1;
	enum px_err r = store_market_get_or_add(st, "us-east-1", zone, type,
						"Linux/UNIX", &id, &err);

	cr_assert_eq(r, PX_OK, "market %s %s: %s", zone, type, err.msg);
	cr_assert_gt(id, 0);
	return id;
}

static bool price_add(struct store *st, int64_t m, int64_t t, int64_t p)
{
	struct px_error err = {0};
	bool ins = false;
	enum px_err r = store_price_add(st, m, t, p, &ins, &err);

	cr_assert_eq(r, PX_OK, "price %" PRId64 " at %" PRId64 ": %s", m, t,
		     err.msg);
	return ins;
}

static int64_t price_count(struct store *st, int64_t m)
{
	int64_t first, last, n = -1;
	enum px_err r = store_price_range(st, m, &first, &last, &n, NULL);

	if (r == PX_ENOENT)
		return 0;
	cr_assert_eq(r, PX_OK);
	return n;
}

/* Run a one-value integer query on a separate raw connection. */
static int64_t raw_int(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	int64_t v = INT64_MIN;

	cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
		     SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK,
		     "%s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

/* The same for a text value, copied into buf. */
static const char *raw_text(const char *path, const char *sql, char *buf,
			    size_t len)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;

	buf[0] = '\0';
	cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
		     SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK,
		     "%s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		snprintf(buf, len, "%s", sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	sqlite3_close(db);
	return buf;
}

static void raw_exec(const char *path, const char *sql)
{
	sqlite3 *db = NULL;

	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK,
		     "%s: %s", sql, sqlite3_errmsg(db));
	sqlite3_close(db);
}

/* sqlite3_exec's code for sql on a plain connection (foreign keys on). */
static int raw_exec_rc(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	int rc;

	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_exec(db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
	rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

/* ---- migrations ---- */

Test(store, fresh_db_gets_this_version, .init = db_setup,
     .fini = db_teardown)
{
	struct store *st = db_open(":memory:");

	cr_assert_eq(store_schema_version(st), STORE_SCHEMA_VERSION);
	cr_assert_eq(STORE_SCHEMA_VERSION, 3);
	store_close(st);

	st = db_open(db_path);
	cr_assert_eq(store_schema_version(st), STORE_SCHEMA_VERSION);
	store_close(st);
	cr_assert_eq(raw_int(db_path, "PRAGMA user_version"),
		     STORE_SCHEMA_VERSION);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM sqlite_schema "
				      "WHERE type = 'table'"),
		     11);
}

Test(store, reopen_keeps_data, .init = db_setup, .fini = db_teardown)
{
	struct store *st = db_open(db_path);
	int64_t m = market(st, "us-east-1a", "c4.xlarge"), p = 0, since = 0;

	cr_assert(price_add(st, m, 1000, 230000));
	store_close(st);

	st = db_open(db_path);
	cr_assert_eq(store_schema_version(st), STORE_SCHEMA_VERSION);
	cr_assert_eq(market(st, "us-east-1a", "c4.xlarge"), m);
	cr_assert_eq(store_price_at(st, m, 2000, &p, &since, NULL), PX_OK);
	cr_assert_eq(p, 230000);
	cr_assert_eq(since, 1000);
	store_close(st);
}

Test(store, newer_db_refused, .init = db_setup, .fini = db_teardown)
{
	struct px_error err = {0};
	struct store *st = (struct store *)1;

	raw_exec(db_path, "CREATE TABLE t (x); PRAGMA user_version = 99;");
	cr_assert_eq(store_open(db_path, &st, &err), PX_EUNSUPP);
	cr_assert_eq(st, (struct store *)1, "*ret clobbered on failure");
	cr_assert(strstr(err.msg, "99"), "message: %s", err.msg);
	cr_assert(strstr(err.msg, db_path), "message: %s", err.msg);
	/* Refused before touching it: not switched to WAL, not migrated. */
	cr_assert_eq(raw_int(db_path, "PRAGMA user_version"), 99);
	char mode[16];
	cr_assert_str_eq(raw_text(db_path, "PRAGMA journal_mode", mode,
				  sizeof(mode)),
			 "delete");
}

Test(store, foreign_db_refused, .init = db_setup, .fini = db_teardown)
{
	struct px_error err = {0};
	struct store *st = NULL;

	raw_exec(db_path, "CREATE TABLE notes (x TEXT);");
	cr_assert_eq(store_open(db_path, &st, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "not a proteus store"), "%s", err.msg);

	/* Not a database at all. */
	FILE *f = fopen(db_path, "w");
	cr_assert_not_null(f);
	for (int i = 0; i < 200; i++)
		fputs("this is not sqlite ", f);
	fclose(f);
	cr_assert_eq(store_open(db_path, &st, &err), PX_EDB);
	cr_assert(strstr(err.msg, "not a database"), "%s", err.msg);
	cr_assert_null(st);
}

/* ---- markets ---- */

struct market_list {
	int n;
	struct store_market m[8];
};

static enum px_err collect_market(const struct store_market *m, void *ctx)
{
	struct market_list *l = ctx;

	cr_assert_lt(l->n, 8);
	l->m[l->n++] = *m;
	return PX_OK;
}

Test(store, market_get_or_add_idempotent)
{
	struct store *st = db_open(":memory:");
	struct store_market_filter f = {.zone = "us-east-1b"};
	struct market_list l = {0};
	struct px_error err = {0};
	int64_t a = market(st, "us-east-1a", "c4.xlarge");
	int64_t b = market(st, "us-east-1b", "c4.xlarge");
	int64_t c = market(st, "us-east-1b", "a1.large");

	cr_assert_neq(a, b);
	cr_assert_neq(b, c);
	cr_assert_eq(market(st, "us-east-1a", "c4.xlarge"), a);
	cr_assert_eq(market(st, "us-east-1b", "c4.xlarge"), b);

	/* Same names, another product: another market. */
	int64_t d = 0;
	cr_assert_eq(store_market_get_or_add(st, "us-east-1", "us-east-1a",
					     "c4.xlarge", "Windows", &d,
					     &err),
		     PX_OK, "%s", err.msg);
	cr_assert_neq(d, a);

	/* All, ordered by region, type, zone, product. */
	cr_assert_eq(store_markets_each(st, NULL, collect_market, &l, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(l.n, 4);
	cr_assert_str_eq(l.m[0].type, "a1.large");
	cr_assert_eq(l.m[1].id, a);
	cr_assert_str_eq(l.m[1].product, "Linux/UNIX");
	cr_assert_eq(l.m[2].id, d);
	cr_assert_eq(l.m[3].id, b);
	cr_assert_str_eq(l.m[3].region, "us-east-1");
	cr_assert_str_eq(l.m[3].zone, "us-east-1b");

	l.n = 0;
	cr_assert_eq(store_markets_each(st, &f, collect_market, &l, &err),
		     PX_OK);
	cr_assert_eq(l.n, 2);
	cr_assert_eq(l.m[0].id, c);
	cr_assert_eq(l.m[1].id, b);
	store_close(st);
}

static enum px_err stop_market(const struct store_market *m, void *ctx)
{
	(*(int *)ctx)++;
	return PX_ECANCELED;
}

Test(store, market_walk_stops)
{
	struct store *st = db_open(":memory:");
	int n = 0;

	market(st, "us-east-1a", "c4.xlarge");
	market(st, "us-east-1b", "c4.xlarge");
	cr_assert_eq(store_markets_each(st, NULL, stop_market, &n, NULL),
		     PX_ECANCELED);
	cr_assert_eq(n, 1);
	store_close(st);
}

Test(store, market_names_checked)
{
	struct store *st = db_open(":memory:");
	struct px_error err = {0};
	char name[STORE_NAME_MAX + 1];
	int64_t id = 42;

	memset(name, 'z', STORE_NAME_MAX);
	name[STORE_NAME_MAX] = '\0'; /* 64 bytes: one too many */
	cr_assert_eq(store_market_get_or_add(st, "us-east-1", name, "t", "p",
					     &id, &err),
		     PX_EINVAL);
	cr_assert(strstr(err.msg, "'zone'"), "%s", err.msg);
	cr_assert_eq(id, 42);
	cr_assert_eq(store_market_get_or_add(st, "us-east-1", "z", "t", "",
					     &id, &err),
		     PX_EINVAL);
	cr_assert(strstr(err.msg, "'product'"), "%s", err.msg);
	cr_assert_eq(store_market_get_or_add(st, NULL, "z", "t", "p", &id,
					     &err),
		     PX_EINVAL);
	cr_assert(strstr(err.msg, "'region'"), "%s", err.msg);

	name[STORE_NAME_MAX - 1] = '\0'; /* 63 bytes: fits */
	cr_assert_eq(store_market_get_or_add(st, "us-east-1", "z", name, "p",
					     &id, &err),
		     PX_OK, "%s", err.msg);
	store_close(st);
}

/* Many markets: the cache wipes itself and ids stay right. */
Test(store, market_cache_many)
{
	struct store *st = db_open(":memory:");
	int64_t ids[1000];
	char type[32];

	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 1000; i++) {
			snprintf(type, sizeof(type), "t%d.large", i);
			int64_t id = market(st, "us-east-1a", type);
			if (round == 0)
				ids[i] = id;
			else
				cr_assert_eq(id, ids[i], "market %d", i);
		}
	for (int i = 1; i < 1000; i++)
		cr_assert_neq(ids[i], ids[i - 1]);
	store_close(st);
}

/* ---- prices ---- */

Test(store, price_dedup)
{
	struct store *st = db_open(":memory:");
	int64_t m = market(st, "us-east-1a", "c4.xlarge"), p = 0;
	int64_t n = market(st, "us-east-1b", "c4.xlarge");

	struct px_error err = {0};
	bool ins = true;

	cr_assert(price_add(st, m, 1456348253, 230000));
	/* the same record again: fine, not stored twice */
	cr_assert_not(price_add(st, m, 1456348253, 230000));
	/* another price for the same market and second: refused, named */
	cr_assert_eq(store_price_add(st, m, 1456348253, 999999, &ins, &err),
		     PX_EEXIST);
	cr_assert_not(ins);
	cr_assert(strstr(err.msg, "0.999999"), "%s", err.msg);
	cr_assert(strstr(err.msg, "0.230000"), "%s", err.msg);
	cr_assert(strstr(err.msg, "2016-02-24T21:10:53Z"), "%s", err.msg);
	cr_assert(price_add(st, n, 1456348253, 5), "other market, same time");
	cr_assert_eq(store_price_at(st, m, 1456348253, &p, NULL, NULL), PX_OK);
	cr_assert_eq(p, 230000, "the first record must stay");
	cr_assert_eq(price_count(st, m), 1);
	/* NULL ret_inserted is allowed. */
	cr_assert_eq(store_price_add(st, m, 1456348254, 1, NULL, NULL), PX_OK);
	cr_assert_eq(price_count(st, m), 2);
	store_close(st);
}

Test(store, price_checked)
{
	struct store *st = db_open(":memory:");
	int64_t m = market(st, "us-east-1a", "c4.xlarge");
	struct px_error err = {0};
	bool ins = true;

	cr_assert_eq(store_price_add(st, m, 10, -1, &ins, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "negative"), "%s", err.msg);
	cr_assert_eq(store_price_add(st, m + 100, 10, 1, &ins, &err),
		     PX_ENOENT);
	cr_assert(strstr(err.msg, "insert price for market"), "%s", err.msg);
	cr_assert(strstr(err.msg, "FOREIGN KEY"), "%s", err.msg);
	cr_assert_eq(price_count(st, m), 0);
	store_close(st);
}

Test(store, price_at_edges)
{
	struct store *st = db_open(":memory:");
	int64_t m = market(st, "us-east-1a", "c4.xlarge");
	int64_t o = market(st, "us-east-1b", "c4.xlarge");
	struct px_error err = {0};
	int64_t p = -1, since = -1;

	price_add(st, m, 300, 3000);
	price_add(st, m, 100, 1000);
	price_add(st, m, 200, 2000);
	price_add(st, o, 50, 7);

	cr_assert_eq(store_price_at(st, m, 99, &p, &since, &err), PX_ENOENT);
	cr_assert_eq(p, -1, "output clobbered");
	cr_assert_eq(store_price_at(st, m, 100, &p, &since, NULL), PX_OK);
	cr_assert_eq(p, 1000);
	cr_assert_eq(since, 100);
	cr_assert_eq(store_price_at(st, m, 199, &p, &since, NULL), PX_OK);
	cr_assert_eq(p, 1000);
	cr_assert_eq(since, 100);
	cr_assert_eq(store_price_at(st, m, 200, &p, &since, NULL), PX_OK);
	cr_assert_eq(p, 2000);
	cr_assert_eq(store_price_at(st, m, INT64_MAX, &p, &since, NULL), PX_OK);
	cr_assert_eq(p, 3000);
	cr_assert_eq(since, 300);
	cr_assert_eq(store_price_at(st, o, 60, &p, &since, NULL), PX_OK);
	cr_assert_eq(p, 7);
	cr_assert_eq(store_price_at(st, o + 99, 60, &p, &since, NULL),
		     PX_ENOENT);

	int64_t first = 0, last = 0, n = 0;
	cr_assert_eq(store_price_range(st, m, &first, &last, &n, NULL), PX_OK);
	cr_assert_eq(first, 100);
	cr_assert_eq(last, 300);
	cr_assert_eq(n, 3);
	store_close(st);
}

struct price_list {
	int n;
	int stop_after; /* 0: never */
	int64_t t[16], p[16];
};

static enum px_err collect_price(int64_t t_s, int64_t price, void *ctx)
{
	struct price_list *l = ctx;

	cr_assert_lt(l->n, 16);
	l->t[l->n] = t_s;
	l->p[l->n] = price;
	l->n++;
	if (l->stop_after && l->n == l->stop_after)
		return PX_ECANCELED;
	return PX_OK;
}

Test(store, prices_each_order_and_bounds)
{
	struct store *st = db_open(":memory:");
	int64_t m = market(st, "us-east-1a", "c4.xlarge");
	int64_t o = market(st, "us-east-1b", "c4.xlarge");
	static const int64_t ts[] = {500, -20, 300, INT64_MAX, 100, INT64_MIN};
	struct price_list l = {0};
	struct px_error err = {0};

	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
		price_add(st, m, ts[i], (int64_t)i);
	price_add(st, o, 200, 1);

	cr_assert_eq(store_prices_each(st, m, INT64_MIN, INT64_MAX,
				       collect_price, &l, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(l.n, 6);
	cr_assert_eq(l.t[0], INT64_MIN);
	cr_assert_eq(l.t[1], -20);
	cr_assert_eq(l.t[2], 100);
	cr_assert_eq(l.p[2], 4);
	cr_assert_eq(l.t[3], 300);
	cr_assert_eq(l.t[4], 500);
	cr_assert_eq(l.t[5], INT64_MAX);

	/* Half-open: from included, to excluded. */
	memset(&l, 0, sizeof(l));
	cr_assert_eq(store_prices_each(st, m, 100, 500, collect_price, &l,
				       NULL),
		     PX_OK);
	cr_assert_eq(l.n, 2);
	cr_assert_eq(l.t[0], 100);
	cr_assert_eq(l.t[1], 300);

	memset(&l, 0, sizeof(l));
	cr_assert_eq(store_prices_each(st, m, 101, 101, collect_price, &l,
				       NULL),
		     PX_OK);
	cr_assert_eq(l.n, 0);
	cr_assert_eq(store_prices_each(st, m, 600, 100, collect_price, &l,
				       NULL),
		     PX_OK);
	cr_assert_eq(l.n, 0);
	cr_assert_eq(store_prices_each(st, m, INT64_MIN, INT64_MIN,
				       collect_price, &l, NULL),
		     PX_OK);
	cr_assert_eq(l.n, 0);

	/* Stop early: the callback's code comes back. */
	memset(&l, 0, sizeof(l));
	l.stop_after = 2;
	cr_assert_eq(store_prices_each(st, m, INT64_MIN, INT64_MAX,
				       collect_price, &l, NULL),
		     PX_ECANCELED);
	cr_assert_eq(l.n, 2);
	store_close(st);
}

/* A walk whose callback writes through the same store. */
struct reenter {
	struct store *st;
	int64_t copy_to;
};

static enum px_err copy_price(int64_t t_s, int64_t price, void *ctx)
{
	struct reenter *re = ctx;

	return store_price_add(re->st, re->copy_to, t_s, price * 2, NULL,
			       NULL);
}

Test(store, prices_each_reentrant)
{
	struct store *st = db_open(":memory:");
	int64_t m = market(st, "us-east-1a", "c4.xlarge");
	struct reenter re = {st, market(st, "us-east-1b", "c4.xlarge")};
	int64_t p = 0;

	for (int i = 0; i < 10; i++)
		price_add(st, m, i * 10, i);
	cr_assert_eq(store_prices_each(st, m, INT64_MIN, INT64_MAX,
				       copy_price, &re, NULL),
		     PX_OK);
	cr_assert_eq(price_count(st, re.copy_to), 10);
	cr_assert_eq(store_price_at(st, re.copy_to, 95, &p, NULL, NULL), PX_OK);
	cr_assert_eq(p, 18);
	store_close(st);
}

/* ---- transactions ---- */

Test(store, rollback_leaves_nothing)
{
	struct store *st = db_open(":memory:");
	struct px_error err = {0};
	struct market_list l = {0};
	int64_t m;

	cr_assert_eq(store_begin(st, &err), PX_OK, "%s", err.msg);
	cr_assert(store_in_transaction(st));
	m = market(st, "us-east-1a", "c4.xlarge");
	for (int i = 0; i < 100; i++)
		cr_assert(price_add(st, m, i, 1000 + i));
	cr_assert_eq(price_count(st, m), 100);
	store_rollback(st);
	cr_assert_not(store_in_transaction(st));
	cr_assert_eq(price_count(st, m), 0);
	cr_assert_eq(store_markets_each(st, NULL, collect_market, &l, NULL),
		     PX_OK);
	cr_assert_eq(l.n, 0);

	/* The market cache must not hand out the rolled-back id. */
	int64_t m2 = market(st, "us-east-1a", "c4.xlarge");
	cr_assert(price_add(st, m2, 5, 5), "market %" PRId64 " is not real",
		  m2);
	store_rollback(st); /* outside a transaction: a no-op */
	cr_assert_eq(price_count(st, m2), 1);
	store_close(st);
}

Test(store, commit_and_misuse)
{
	struct store *st = db_open(":memory:");
	struct px_error err = {0};
	int64_t m = market(st, "us-east-1a", "c4.xlarge");

	cr_assert_eq(store_commit(st, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "no transaction"), "%s", err.msg);
	cr_assert_eq(store_begin(st, &err), PX_OK);
	cr_assert_eq(store_begin(st, &err), PX_EINVAL, "nested begin");
	cr_assert(store_in_transaction(st), "still in the first one");
	price_add(st, m, 1, 1);
	price_add(st, m, 2, 2);
	cr_assert_eq(store_commit(st, &err), PX_OK, "%s", err.msg);
	cr_assert_not(store_in_transaction(st));
	store_rollback(st);
	cr_assert_eq(price_count(st, m), 2);
	store_close(st);
}

/* A failing statement inside a transaction leaves it open and usable. */
Test(store, error_inside_transaction)
{
	struct store *st = db_open(":memory:");
	int64_t m = market(st, "us-east-1a", "c4.xlarge");

	cr_assert_eq(store_begin(st, NULL), PX_OK);
	price_add(st, m, 1, 1);
	cr_assert_eq(store_price_add(st, 999, 1, 1, NULL, NULL), PX_ENOENT);
	cr_assert(store_in_transaction(st));
	price_add(st, m, 2, 2);
	cr_assert_eq(store_commit(st, NULL), PX_OK);
	cr_assert_eq(price_count(st, m), 2);
	store_close(st);
}

Test(store, close_rolls_back, .init = db_setup, .fini = db_teardown)
{
	struct store *st = db_open(db_path);
	int64_t m = market(st, "us-east-1a", "c4.xlarge");

	cr_assert_eq(store_begin(st, NULL), PX_OK);
	price_add(st, m, 1, 1);
	market(st, "us-east-1b", "c4.xlarge");
	store_close(st);

	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM prices"), 0);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM markets"), 1);
}

/* A process that dies with a transaction open stores nothing of it; one
 * that committed before dying keeps everything. */
static void child_writes(const char *path, bool commit)
{
	struct store *st = NULL;
	int64_t m = 0;

	if (store_open(path, &st, NULL) != PX_OK ||
	    store_begin(st, NULL) != PX_OK ||
	    store_market_get_or_add(st, "r", commit ? "zc" : "zx", "t", "p",
				     &m, NULL) != PX_OK)
		_exit(2);
	for (int i = 0; i < 5000; i++)
		if (store_price_add(st, m, i, i, NULL, NULL) != PX_OK)
			_exit(3);
	if (commit && store_commit(st, NULL) != PX_OK)
		_exit(4);
	_exit(0); /* no store_close: as if the process crashed */
}

static void run_child(const char *path, bool commit)
{
	int status = 0;
	pid_t pid = fork();

	cr_assert_neq(pid, -1);
	if (pid == 0)
		child_writes(path, commit);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "child status %d", status);
}

Test(store, crash_with_open_transaction, .init = db_setup,
     .fini = db_teardown)
{
	struct store *st;
	struct market_list l = {0};

	st = db_open(db_path); /* create and migrate first */
	store_close(st);
	run_child(db_path, false);
	run_child(db_path, true);

	st = db_open(db_path);
	cr_assert_eq(store_markets_each(st, NULL, collect_market, &l, NULL),
		     PX_OK);
	cr_assert_eq(l.n, 1, "only the committed market");
	cr_assert_str_eq(l.m[0].zone, "zc");
	cr_assert_eq(price_count(st, l.m[0].id), 5000);
	store_close(st);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM prices"), 5000);
}

Test(store, wal_mode_on_file, .init = db_setup, .fini = db_teardown)
{
	struct store *st = db_open(db_path);
	char mode[16];

	/* Seen from another connection while ours is open. */
	cr_assert_str_eq(raw_text(db_path, "PRAGMA journal_mode", mode,
				  sizeof(mode)),
			 "wal");
	char wal[160];
	snprintf(wal, sizeof(wal), "%s-wal", db_path);
	cr_assert_eq(access(wal, F_OK), 0, "no WAL file");
	store_close(st);
	cr_assert_str_eq(raw_text(db_path, "PRAGMA journal_mode", mode,
				  sizeof(mode)),
			 "wal");
	/* :memory: has no WAL but works. */
	st = db_open(":memory:");
	cr_assert_eq(store_schema_version(st), STORE_SCHEMA_VERSION);
	store_close(st);
	store_close(NULL);
}

/* ---- on-demand prices, imports ---- */

Test(store, ondemand_set_get)
{
	struct store *st = db_open(":memory:");
	struct px_error err = {0};
	int64_t v = -1;

	cr_assert_eq(store_ondemand_get(st, "us-east-1", "c4.xlarge", &v,
					&err),
		     PX_ENOENT);
	cr_assert_eq(v, -1);
	cr_assert_eq(store_ondemand_set(st, "us-east-1", "c4.xlarge", 199000,
					"AWS2015", &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_ondemand_set(st, "us-west-2", "c4.xlarge", 250000,
					"", &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_ondemand_get(st, "us-east-1", "c4.xlarge", &v,
					NULL),
		     PX_OK);
	cr_assert_eq(v, 199000);
	cr_assert_eq(store_ondemand_set(st, "us-east-1", "c4.xlarge", 209000,
					"AWS2016", NULL),
		     PX_OK);
	cr_assert_eq(store_ondemand_get(st, "us-east-1", "c4.xlarge", &v,
					NULL),
		     PX_OK);
	cr_assert_eq(v, 209000);
	cr_assert_eq(store_ondemand_get(st, "us-west-2", "c4.xlarge", &v,
					NULL),
		     PX_OK);
	cr_assert_eq(v, 250000);
	cr_assert_eq(store_ondemand_set(st, "us-east-1", "c4.xlarge", -1, "",
					&err),
		     PX_EINVAL);
	cr_assert_eq(store_ondemand_set(st, "us-east-1", "c4.xlarge", 1, NULL,
					&err),
		     PX_EINVAL);
	cr_assert(strstr(err.msg, "'source'"), "%s", err.msg);
	store_close(st);
}

Test(store, import_provenance, .init = db_setup, .fini = db_teardown)
{
	static const char sha[] = "9f86d081884c7d659a2feaa0c55ad015"
				  "a3bf4f1b2b0b822cd15d6c15b0f00a08";
	struct store *st = db_open(db_path);
	struct store_import imp = {
		.path = "t.json.gz", .sha256 = sha, .records = 10,
		.inserted = 7, .first_s = 100, .last_s = 900, .at_us = 5,
	};
	struct px_error err = {0};
	bool seen = true;

	cr_assert_eq(store_import_seen(st, sha, &seen, NULL), PX_OK);
	cr_assert_not(seen);
	cr_assert_eq(store_import_add(st, &imp, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(store_import_seen(st, sha, &seen, NULL), PX_OK);
	cr_assert(seen);

	imp.records = 0;
	imp.inserted = 0;
	imp.first_s = INT64_MAX; /* ignored when there are no records */
	imp.last_s = INT64_MIN;
	cr_assert_eq(store_import_add(st, &imp, &err), PX_OK, "%s", err.msg);

	imp.records = 3;
	imp.inserted = 4;
	cr_assert_eq(store_import_add(st, &imp, &err), PX_EINVAL);
	imp.inserted = 1;
	imp.sha256 = "ABC";
	cr_assert_eq(store_import_add(st, &imp, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "'sha256'"), "%s", err.msg);
	store_close(st);

	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM imports"), 2);
	cr_assert_eq(raw_int(db_path, "SELECT sum(inserted) FROM imports"), 7);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM imports "
				      "WHERE first_s IS NULL"),
		     1);
}

/* ---- jobs, allocations, instances, events, ledger ---- */

Test(store, job_round_trip, .init = db_setup, .fini = db_teardown)
{
	struct store *st = db_open(db_path);
	struct px_error err = {0};
	int64_t m = market(st, "us-east-1a", "c4.xlarge");
	int64_t job = 0, job2 = 0, al = 0, al2 = 0, i1 = 0, i2 = 0, cost = -1;
	char buf[256];

	cr_assert_eq(store_job_add(st, "mlr", "{\"model\": \"mlr\"}", "sim", 1000,
				   &job, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_job_add(st, "other", "{}", "sim", 1000, &job2, &err),
		     PX_OK);
	cr_assert_neq(job, job2);
	cr_assert_eq(store_job_set_state(st, job, STORE_JOB_RUNNING, 2000,
					 &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_allocation_add(st, job, m, "m3.large", STORE_TIER_TRANSIENT,
					  50000, 4, 2000, &al, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_allocation_add(st, job, m, "m3.large", STORE_TIER_RELIABLE, 0,
					  1, 2000, &al2, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_instance_add(st, al, "i-0123456789abcdef0", 3000,
					1, &i1, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_instance_add(st, al2, "i-1", 3000, 0, &i2, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_event_add(st, job, i1, 4000, "warning",
				     "{\"action\": \"terminate\"}", &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_event_add(st, job, 0, 4100, "stage", "2", &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_event_add(st, 0, 0, 4200, "decision", "", &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_instance_end(st, i1, 5000, "evicted", &err), PX_OK,
		     "%s", err.msg);
	cr_assert_eq(store_instance_end(st, i1, 6000, "released", &err),
		     PX_EEXIST);
	cr_assert_eq(store_instance_end(st, i2, 2999, "released", &err),
		     PX_EINVAL, "end before start");
	cr_assert_eq(store_instance_end(st, 9999, 6000, "released", &err),
		     PX_ENOENT);

	cr_assert_eq(store_job_cost(st, job, &cost, &err), PX_OK);
	cr_assert_eq(cost, 0, "no ledger lines yet");
	cr_assert_eq(store_ledger_add(st, job, i1, 3000, 5000, 123456, "spot",
				      &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_ledger_add(st, job, i2, 3000, 7000, 1000000,
				      "on-demand", &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_ledger_add(st, job2, 0, 0, 1, 7, "", &err), PX_OK,
		     "%s", err.msg);
	cr_assert_eq(store_ledger_add(st, job, i1, 10, 5, 1, "", &err),
		     PX_EINVAL);
	cr_assert_eq(store_ledger_add(st, job, i1, 0, 5, -1, "", &err),
		     PX_EINVAL);
	cr_assert_eq(store_job_cost(st, job, &cost, &err), PX_OK);
	cr_assert_eq(cost, 1123456);
	/* the provider billed i1 to 5200: its one line ends there */
	cr_assert_eq(store_instance_bill_end(st, i1, 5200, 100, &err), PX_OK,
		     "%s", err.msg);
	/* ... or ended it before our end, as its interruption: less */
	cr_assert_eq(store_instance_bill_end(st, i1, 5100, -456, &err), PX_OK,
		     "%s", err.msg);
	snprintf(buf, sizeof buf, "SELECT l.to_us + i.end_us FROM ledger l "
		 "JOIN instances i ON i.id = l.instance_id WHERE i.id = %lld",
		 (long long)i1);
	cr_assert_eq(raw_int(db_path, buf), 2 * 5100, "both ends moved");
	cr_assert_eq(store_instance_bill_end(st, i1, 5300, -123456, &err),
		     PX_EINVAL, "less than nothing");
	snprintf(buf, sizeof buf, "instance %lld", (long long)i1);
	cr_assert(strstr(err.msg, buf), "%s", err.msg);
	cr_assert_eq(store_instance_bill_end(st, i1, 2999, 0, &err),
		     PX_EINVAL, "an end before its start");
	cr_assert_eq(store_instance_bill_end(st, 9999, 5300, 1, &err),
		     PX_ENOENT);
	cr_assert_eq(store_job_cost(st, job, &cost, &err), PX_OK);
	cr_assert_eq(cost, 1123456 + 100 - 456);
	cr_assert_eq(store_job_cost(st, job2, &cost, &err), PX_OK);
	cr_assert_eq(cost, 7);
	cr_assert_eq(store_job_cost(st, 9999, &cost, &err), PX_ENOENT);

	cr_assert_eq(store_job_set_state(st, job, STORE_JOB_DONE, 8000, &err),
		     PX_OK);
	cr_assert_eq(store_job_set_state(st, job, STORE_JOB_RUNNING, 9000,
					 &err),
		     PX_EINVAL, "a done job came back");
	cr_assert(strstr(err.msg, "'done' is final"), "%s", err.msg);
	cr_assert_eq(store_job_set_state(st, 9999, STORE_JOB_RUNNING, 9000,
					 &err),
		     PX_ENOENT);
	cr_assert_eq(store_job_set_state(st, job, STORE_JOB_STATE_MAX, 9000,
					 &err),
		     PX_EINVAL);
	store_close(st);

	/* What landed in the file. */
	cr_assert_str_eq(raw_text(db_path, "SELECT state FROM jobs WHERE "
					   "name = 'mlr'",
				  buf, sizeof(buf)),
			 "done");
	cr_assert_eq(raw_int(db_path, "SELECT updated_us FROM jobs WHERE "
				      "name = 'mlr'"),
		     8000);
	cr_assert_str_eq(raw_text(db_path, "SELECT spec FROM jobs WHERE "
					   "name = 'mlr'",
				  buf, sizeof(buf)),
			 "{\"model\": \"mlr\"}");
	cr_assert_str_eq(raw_text(db_path, "SELECT tier || ' ' || bid_uusd "
					   "|| ' ' || count FROM allocations "
					   "ORDER BY id",
				  buf, sizeof(buf)),
			 "transient 50000 4");
	cr_assert_str_eq(raw_text(db_path, "SELECT end_reason || ' ' || "
					   "end_us FROM instances WHERE "
					   "cloud_id = 'i-0123456789abcdef0'",
				  buf, sizeof(buf)),
			 "evicted 5100");
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM instances WHERE "
				      "end_us IS NULL"),
		     1);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM events"), 3);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM events WHERE "
				      "job_id IS NULL AND instance_id IS "
				      "NULL AND kind = 'decision'"),
		     1);
	cr_assert_str_eq(store_job_state_name(STORE_JOB_CANCELLED), "cancelled");
	cr_assert_str_eq(store_job_state_name(STORE_JOB_STATE_MAX), "unknown");
}

Test(store, foreign_keys_enforced)
{
	struct store *st = db_open(":memory:");
	struct px_error err = {0};
	int64_t job = 0, m = market(st, "us-east-1a", "c4.xlarge"), id = -5;

	cr_assert_eq(store_event_add(st, 42, 0, 1, "stage", "x", &err),
		     PX_ENOENT);
	cr_assert(strstr(err.msg, "add event for job 42"), "%s", err.msg);
	cr_assert(strstr(err.msg, "FOREIGN KEY constraint failed"), "%s",
		  err.msg);
	cr_assert_eq(store_job_add(st, "j", "{}", "sim", 1, &job,
				   NULL), PX_OK);
	cr_assert_eq(store_event_add(st, job, 77, 1, "join", "", &err),
		     PX_ENOENT, "missing instance");
	cr_assert_eq(store_allocation_add(st, job + 1, m, "m3.large",
					  STORE_TIER_RELIABLE, 0, 1, 1, &id,
					  &err),
		     PX_ENOENT);
	cr_assert_eq(id, -5);
	cr_assert_eq(store_allocation_add(st, job, m + 1, "m3.large",
					  STORE_TIER_RELIABLE, 0, 1, 1, &id,
					  &err),
		     PX_ENOENT, "missing market");
	cr_assert_eq(store_instance_add(st, 5, "i-1", 1, 0, &id, &err),
		     PX_ENOENT);
	cr_assert_eq(store_ledger_add(st, job + 1, 0, 0, 1, 1, "", &err),
		     PX_ENOENT);
	store_close(st);
}

Test(store, job_input_checked)
{
	struct store *st = db_open(":memory:");
	struct px_error err = {0};
	int64_t job = 0, m = market(st, "us-east-1a", "c4.xlarge"), id;

	cr_assert_eq(store_job_add(st, "j", "{not json", "sim", 1, &job, &err),
		     PX_EINVAL);
	cr_assert(strstr(err.msg, "spec_is_json"), "%s", err.msg);
	cr_assert_eq(store_job_add(st, "", "{}", "sim", 1, &job, &err), PX_EINVAL);
	cr_assert_eq(store_job_add(st, "j", NULL, "sim", 1, &job, &err), PX_EINVAL);
	cr_assert_eq(store_job_add(st, "j", "{}", "sim", -1, &job, &err), PX_EINVAL);
	cr_assert_eq(store_job_add(st, "j", "{}", "sim", 1, &job, &err), PX_OK);
	cr_assert_eq(store_allocation_add(st, job, m, "m3.large", STORE_TIER_RELIABLE, 0,
					  0, 1, &id, &err),
		     PX_EINVAL, "count 0");
	cr_assert_eq(store_allocation_add(st, job, m, "m3.large", STORE_TIER_RELIABLE, -1,
					  1, 1, &id, &err),
		     PX_EINVAL, "negative bid");
	cr_assert_eq(store_allocation_add(st, job, m, "m3.large", (enum store_tier)2, 0,
					  1, 1, &id, &err),
		     PX_EINVAL, "bad tier");
	cr_assert_eq(store_event_add(st, job, 0, 1, "Bad Kind", "", &err),
		     PX_EINVAL);
	cr_assert(strstr(err.msg, "kind_is_word"), "%s", err.msg);
	cr_assert_eq(store_event_add(st, job, 0, 1, "stage", NULL, &err),
		     PX_EINVAL);
	store_close(st);
}

/* Another connection holds the write lock: we wait the busy timeout
 * (5 s), then fail with a message that says what we were doing. */
Test(store, busy_error_names_the_work, .init = db_setup,
     .fini = db_teardown, .timeout = 30)
{
	struct store *st = db_open(db_path);
	int64_t m = market(st, "us-east-1a", "c4.xlarge");
	struct px_error err = {0};
	sqlite3 *other = NULL;
	uint64_t t0;

	cr_assert_eq(sqlite3_open(db_path, &other), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL),
		     SQLITE_OK);
	t0 = px_now_mono_us();
	cr_assert_eq(store_price_add(st, m, 1456348253, 1, NULL, &err),
		     PX_EDB);
	cr_assert_geq(px_now_mono_us() - t0, 4 * PX_USEC_PER_SEC,
		      "gave up before the busy timeout");
	cr_assert_str_eq(err.msg, "insert price for market 1 at 1456348253: "
				  "database is locked");
	cr_assert_eq(err.code, PX_EDB);
	sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(other);

	/* The lock is gone: the same call works. */
	cr_assert_eq(m, 1);
	cr_assert(price_add(st, m, 1456348253, 1));
	store_close(st);
}

/* ---- schema version 2 (issue 10): jobs for proteusd ---- */

/* A version-1 file with a job in each old state, an allocation, an
 * instance, events and ledger lines: opened by this build, it is migrated
 * through version 2 (and on to this build's) with everything kept, the
 * states renamed and the type on the allocation. */
Test(store, v1_file_migrated_to_v2_keeps_everything, .init = db_setup,
     .fini = db_teardown)
{
	struct store *st;
	char sql[4096];

	snprintf(sql, sizeof sql, "%s"
		 "PRAGMA user_version = 1;"
		 "INSERT INTO markets VALUES (1, 'us-east-1', 'us-east-1a',"
		 " 'm3.large', 'Linux/UNIX');"
		 "INSERT INTO jobs VALUES (1, 'a', '{}', 'submitted', 5, 5),"
		 " (2, 'b', '{}', 'canceled', 5, 6),"
		 " (3, 'c', '{}', 'done', 5, 7);"
		 "INSERT INTO allocations VALUES (1, 3, 1, 'transient', 42, 1,"
		 " 9);"
		 "INSERT INTO instances VALUES (1, 1, 'i-1', 10, 20,"
		 " 'released');"
		 "INSERT INTO events VALUES (1, 3, 1, 11, 'warning', '');"
		 "INSERT INTO ledger VALUES (1, 3, 1, 10, 20, 99, '');",
		 store_schema_v1);
	raw_exec(db_path, sql);
	st = db_open(db_path);
	cr_assert_eq(store_schema_version(st), STORE_SCHEMA_VERSION);
	store_close(st);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM jobs WHERE "
			     "state = 'queued' AND id = 1 AND world = 'sim'"), 1);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM jobs WHERE "
			     "state = 'cancelled' AND id = 2"), 1);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM allocations "
			     "WHERE type = 'm3.large' AND market_id = 1 AND "
			     "bid_uusd = 42"), 1);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM instances WHERE "
			     "ctrl_id IS NULL AND alloc_id = 1"), 1);
	cr_assert_eq(raw_int(db_path, "SELECT sum(amount_uusd) FROM ledger"),
		     99);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM "
			     "pragma_foreign_key_check"), 0);
	/* the job's rows still point to it */
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM events e JOIN "
			     "jobs j ON j.id = e.job_id WHERE j.name = 'c'"),
		     1);
}

/* The legal changes of a job's state live in the schema: an illegal one
 * is refused by the store whoever asks, a final state never changes. */
Test(store, job_state_changes_enforced, .init = db_setup,
     .fini = db_teardown)
{
	struct store *st = db_open(db_path);
	struct px_error err = {0};
	int64_t a, b;

	cr_assert_eq(store_job_add(st, "a", "{}", "local", 1, &a,
				   &err), PX_OK, "%s", err.msg);
	cr_assert_eq(store_job_add(st, "b", "{}", "local", 1, &b,
				   &err), PX_OK, "%s", err.msg);
	/* queued cannot be done without running */
	cr_assert_eq(store_job_set_state(st, a, STORE_JOB_DONE, 2, &err),
		     PX_EINVAL);
	cr_assert(strstr(err.msg, "illegal"), "%s", err.msg);
	cr_assert_eq(store_job_set_state(st, a, STORE_JOB_RUNNING, 2, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_job_set_state(st, a, STORE_JOB_QUEUED, 3, &err),
		     PX_EINVAL, "running does not go back to queued");
	cr_assert_eq(store_job_set_state(st, a, STORE_JOB_DONE, 3, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(store_job_set_state(st, a, STORE_JOB_FAILED, 4, &err),
		     PX_EINVAL);
	cr_assert_eq(store_job_set_state(st, b, STORE_JOB_CANCELLED, 2, &err),
		     PX_OK, "%s", err.msg);
	store_close(st);
	/* not even raw SQL moves a final state */
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM jobs WHERE "
			     "state = 'done'"), 1);
	cr_assert_neq(raw_exec_rc(db_path, "UPDATE jobs SET state = 'running' "
				  "WHERE state = 'done'"), 0);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM jobs WHERE "
			     "world = 'local'"), 2);
	cr_assert_neq(raw_exec_rc(db_path, "UPDATE jobs SET world = 'gcp'"),
		      0);
}

/* An on-demand request has no market; its type is on the row. */
Test(store, ondemand_allocation_without_market, .init = db_setup,
     .fini = db_teardown)
{
	struct store *st = db_open(db_path);
	struct px_error err = {0};
	int64_t job, al, inst;

	cr_assert_eq(store_job_add(st, "j", "{}", "local", 1, &job,
				   &err), PX_OK, "%s", err.msg);
	cr_assert_eq(store_allocation_add(st, job, 0, "m3.large",
					  STORE_TIER_RELIABLE, 0, 1, 5, &al,
					  &err), PX_OK, "%s", err.msg);
	cr_assert_eq(store_instance_add(st, al, "local:123", 5, 7, &inst,
					&err), PX_OK, "%s", err.msg);
	cr_assert_eq(store_allocation_add(st, job, 0, "",
					  STORE_TIER_RELIABLE, 0, 1, 5, &al,
					  &err), PX_EINVAL, "a type is needed");
	store_close(st);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM allocations "
			     "WHERE market_id IS NULL AND type = 'm3.large'"),
		     1);
	cr_assert_eq(raw_int(db_path, "SELECT ctrl_id FROM instances"), 7);
}
