/* test_store_ec2.c -- what the store keeps for reconciling EC2 after a
 * restart: the daemon's id, the launch requests recorded before they are
 * sent (round trip, the states and their legal changes, a token added
 * twice), the highest controller id of a job, and the migration from
 * version 2 that keeps every old row. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../db/schema_v1.h"
#include "../../db/schema_v2.h"
#include "../../db/store.h"
#include "store_fixture.h"

TestSuite(store_ec2, .init = db_setup, .fini = db_teardown);

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

static void raw_exec(const char *path, const char *sql)
{
	sqlite3 *db = NULL;

	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK,
		     "%s: %s", sql, sqlite3_errmsg(db));
	sqlite3_close(db);
}

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

static int64_t job(struct store *st, const char *name)
{
	struct px_error err = {0};
	int64_t id = 0;

	cr_assert_eq(store_job_add(st, name, "{}", "ec2", 1, &id,
				   &err), PX_OK, "%s", err.msg);
	return id;
}

static struct store_ec2_request req(const char *token, int64_t job_id,
				    uint64_t ctrl_id, const char *zone)
{
	struct store_ec2_request r = {
		.job_id = job_id, .ctrl_id = ctrl_id, .reliable = !zone[0],
		.bid_uusd = zone[0] ? 123456 : 0, .created_us = 1000 + ctrl_id,
	};

	snprintf(r.client_token, sizeof r.client_token, "%s", token);
	snprintf(r.zone, sizeof r.zone, "%s", zone);
	snprintf(r.type, sizeof r.type, "m5.large");
	/* ignored by add */
	snprintf(r.instance_id, sizeof r.instance_id, "i-ignored");
	snprintf(r.state, sizeof r.state, "closed");
	r.updated_us = 5;
	return r;
}

static void add_ok(struct store *st, const struct store_ec2_request *r)
{
	struct px_error err = {0};

	cr_assert_eq(store_ec2_request_add(st, r, &err), PX_OK, "%s",
		     err.msg);
}

static void set_ok(struct store *st, const char *token, const char *state,
		   const char *instance_id, int64_t at)
{
	struct px_error err = {0};

	cr_assert_eq(store_ec2_request_set(st, token, state, instance_id, at,
					   &err), PX_OK, "%s -> %s: %s",
		     token, state, err.msg);
}

/* A walk, copied. */
struct got {
	struct store_ec2_request v[16];
	size_t n;
};

static enum px_err collect(const struct store_ec2_request *r, void *ctx)
{
	struct got *g = ctx;

	cr_assert_lt(g->n, 16);
	g->v[g->n++] = *r;
	return PX_OK;
}

static struct got walk(struct store *st, int64_t job_id, bool only_open)
{
	struct px_error err = {0};
	struct got g = {0};

	cr_assert_eq(store_ec2_requests_each(st, job_id, only_open, collect,
					     &g, &err), PX_OK, "%s", err.msg);
	return g;
}

Test(store_ec2, daemon_id_made_once_for_the_life_of_the_db)
{
	struct px_error err = {0};
	char a[STORE_DAEMON_ID_LEN + 1], b[64], small[16];
	struct store *st = db_open(db_path);

	cr_assert_eq(store_daemon_id(st, a, sizeof a, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(strlen(a), STORE_DAEMON_ID_LEN);
	cr_assert_eq(strspn(a, "0123456789abcdef"), STORE_DAEMON_ID_LEN, "%s",
		     a);
	cr_assert_eq(store_daemon_id(st, b, sizeof b, &err), PX_OK);
	cr_assert_str_eq(a, b);
	cr_assert_eq(store_daemon_id(st, small, sizeof small, &err),
		     PX_EINVAL);
	cr_assert(strstr(err.msg, "17"), "%s", err.msg);
	store_close(st);
	/* a restart reads the same; so does a second connection */
	st = db_open(db_path);
	memset(b, 0, sizeof b);
	cr_assert_eq(store_daemon_id(st, b, sizeof b, &err), PX_OK);
	cr_assert_str_eq(a, b);
	store_close(st);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM daemon"), 1);
	/* not something to overwrite: a second row cannot be */
	cr_assert_neq(raw_exec_rc(db_path, "INSERT INTO daemon VALUES (2, "
				  "'0123456789abcdef', 1)"), SQLITE_OK);
	cr_assert_neq(raw_exec_rc(db_path, "UPDATE daemon SET daemon_id = "
				  "'XYZ'"), SQLITE_OK);
}

Test(store_ec2, daemon_ids_differ_between_databases)
{
	struct px_error err = {0};
	char a[STORE_DAEMON_ID_LEN + 1], b[STORE_DAEMON_ID_LEN + 1];
	struct store *s1 = db_open(":memory:"), *s2 = db_open(":memory:");

	cr_assert_eq(store_daemon_id(s1, a, sizeof a, &err), PX_OK);
	cr_assert_eq(store_daemon_id(s2, b, sizeof b, &err), PX_OK);
	cr_assert_str_neq(a, b);
	store_close(s1);
	store_close(s2);
}

/* A daemon id made inside a transaction the caller rolls back is not
 * kept (nor cached): the next call makes the one that stays. */
Test(store_ec2, daemon_id_rolled_back_is_not_kept)
{
	struct px_error err = {0};
	char a[STORE_DAEMON_ID_LEN + 1], b[STORE_DAEMON_ID_LEN + 1];
	char c[STORE_DAEMON_ID_LEN + 1];
	struct store *st = db_open(db_path);

	cr_assert_eq(store_begin(st, &err), PX_OK);
	cr_assert_eq(store_daemon_id(st, a, sizeof a, &err), PX_OK);
	store_rollback(st);
	cr_assert_eq(store_daemon_id(st, b, sizeof b, &err), PX_OK);
	store_close(st);
	st = db_open(db_path);
	cr_assert_eq(store_daemon_id(st, c, sizeof c, &err), PX_OK);
	cr_assert_str_eq(b, c);
	store_close(st);
}

Test(store_ec2, requests_round_trip)
{
	struct store *st = db_open(db_path);
	int64_t j1 = job(st, "a"), j2 = job(st, "b");
	struct store_ec2_request spot = req("px-0123-1-7", j1, 7,
					    "us-east-1a");
	struct store_ec2_request od = req("px-0123-1-3", j1, 3, "");
	struct store_ec2_request other = req("px-0123-2-1", j2, 1,
					     "us-east-1b");
	struct got g;

	add_ok(st, &spot);
	add_ok(st, &od);
	add_ok(st, &other);
	/* by job, then controller id; as recorded, in state sent */
	g = walk(st, j1, false);
	cr_assert_eq(g.n, 2);
	cr_assert_str_eq(g.v[0].client_token, "px-0123-1-3");
	cr_assert_eq(g.v[0].ctrl_id, 3);
	cr_assert_str_eq(g.v[0].zone, "");
	cr_assert(g.v[0].reliable);
	cr_assert_eq(g.v[0].bid_uusd, 0);
	cr_assert_str_eq(g.v[1].client_token, "px-0123-1-7");
	cr_assert_eq(g.v[1].job_id, j1);
	cr_assert_eq(g.v[1].ctrl_id, 7);
	cr_assert_str_eq(g.v[1].zone, "us-east-1a");
	cr_assert_str_eq(g.v[1].type, "m5.large");
	cr_assert_not(g.v[1].reliable);
	cr_assert_eq(g.v[1].bid_uusd, 123456);
	cr_assert_eq(g.v[1].created_us, 1007);
	cr_assert_str_eq(g.v[1].instance_id, "", "add ignores it");
	cr_assert_str_eq(g.v[1].state, "sent");
	cr_assert_eq(g.v[1].updated_us, 1007);
	/* every job */
	g = walk(st, -1, true);
	cr_assert_eq(g.n, 3);
	cr_assert_eq(g.v[2].job_id, j2);
	/* launched, then closed */
	set_ok(st, "px-0123-1-7", "launched", "i-0abc", 2000);
	g = walk(st, j1, true);
	cr_assert_eq(g.n, 2);
	cr_assert_str_eq(g.v[1].state, "launched");
	cr_assert_str_eq(g.v[1].instance_id, "i-0abc");
	cr_assert_eq(g.v[1].updated_us, 2000);
	cr_assert_eq(g.v[1].created_us, 1007);
	set_ok(st, "px-0123-1-7", "closed", NULL, 3000);
	set_ok(st, "px-0123-1-3", "rejected", NULL, 3001);
	g = walk(st, j1, true);
	cr_assert_eq(g.n, 0, "closed and rejected are not open");
	g = walk(st, j1, false);
	cr_assert_eq(g.n, 2);
	cr_assert_str_eq(g.v[1].state, "closed");
	cr_assert_str_eq(g.v[1].instance_id, "i-0abc", "kept when NULL");
	cr_assert_str_eq(g.v[0].state, "rejected");
	cr_assert_str_eq(g.v[0].instance_id, "");
	/* a job with none, and one unknown: empty walks */
	cr_assert_eq(walk(st, 999, false).n, 0);
	g = walk(st, -1, true);
	cr_assert_eq(g.n, 1);
	cr_assert_str_eq(g.v[0].client_token, "px-0123-2-1");
	store_close(st);
}

static enum px_err stop_at_first(const struct store_ec2_request *r,
				 void *ctx)
{
	(*(int *)ctx)++;
	return PX_ECANCELED;
}

Test(store_ec2, walk_stops_on_callback_error)
{
	struct store *st = db_open(":memory:");
	int64_t j = job(st, "a");
	struct store_ec2_request a = req("t-1", j, 1, "us-east-1a");
	struct store_ec2_request b = req("t-2", j, 2, "us-east-1a");
	int calls = 0;

	add_ok(st, &a);
	add_ok(st, &b);
	cr_assert_eq(store_ec2_requests_each(st, j, false, stop_at_first,
					     &calls, NULL), PX_ECANCELED);
	cr_assert_eq(calls, 1);
	store_close(st);
}

/* The states and their legal changes live in the schema: refused by the
 * store (saying why) and by raw SQL alike. */
Test(store_ec2, request_states_checked)
{
	struct px_error err = {0};
	struct store *st = db_open(db_path);
	int64_t j = job(st, "a");
	struct store_ec2_request a = req("tok-a", j, 1, "us-east-1a");
	struct store_ec2_request b = req("tok-b", j, 2, "us-east-1a");
	struct store_ec2_request c = req("tok-c", j, 3, "");

	add_ok(st, &a);
	add_ok(st, &b);
	add_ok(st, &c);
	/* not a state */
	cr_assert_eq(store_ec2_request_set(st, "tok-a", "running", NULL, 5,
					   &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "'running'") && strstr(err.msg, "not a "
		  "state"), "%s", err.msg);
	cr_assert_eq(store_ec2_request_set(st, "tok-a", NULL, NULL, 5, &err),
		     PX_EINVAL);
	/* launched needs its instance */
	cr_assert_eq(store_ec2_request_set(st, "tok-a", "launched", NULL, 5,
					   &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "needs its instance id"), "%s", err.msg);
	/* sent -> launched -> closed; never back */
	set_ok(st, "tok-a", "launched", "i-1", 5);
	set_ok(st, "tok-a", "launched", "i-1", 6); /* the same again */
	cr_assert_eq(store_ec2_request_set(st, "tok-a", "sent", NULL, 7,
					   &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "illegal from 'launched'"), "%s", err.msg);
	cr_assert_eq(store_ec2_request_set(st, "tok-a", "rejected", NULL, 7,
					   &err), PX_EINVAL);
	/* an instance id never changes */
	cr_assert_eq(store_ec2_request_set(st, "tok-a", "closed", "i-2", 7,
					   &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "its instance is 'i-1', not 'i-2'"), "%s",
		  err.msg);
	set_ok(st, "tok-a", "closed", "i-1", 8);
	/* final states stay */
	cr_assert_eq(store_ec2_request_set(st, "tok-a", "launched", NULL, 9,
					   &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "illegal from 'closed'"), "%s", err.msg);
	set_ok(st, "tok-b", "rejected", NULL, 5);
	cr_assert_eq(store_ec2_request_set(st, "tok-b", "launched", "i-3", 9,
					   &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "illegal from 'rejected'"), "%s", err.msg);
	/* sent -> closed: a request that made nothing (found gone) */
	set_ok(st, "tok-c", "closed", NULL, 5);
	/* unknown token; bad arguments */
	cr_assert_eq(store_ec2_request_set(st, "tok-z", "closed", NULL, 5,
					   &err), PX_ENOENT);
	cr_assert(strstr(err.msg, "'tok-z'") && strstr(err.msg, "no such"),
		  "%s", err.msg);
	cr_assert_eq(store_ec2_request_set(st, "tok-c", "closed", "", 5,
					   &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "'instance_id'"), "%s", err.msg);
	cr_assert_eq(store_ec2_request_set(st, "tok-c", "closed", NULL, -1,
					   &err), PX_EINVAL);
	store_close(st);
	/* the schema holds without the store's checks */
	cr_assert_neq(raw_exec_rc(db_path, "UPDATE ec2_requests SET state = "
				  "'running' WHERE client_token = 'tok-c'"),
		      SQLITE_OK);
	cr_assert_neq(raw_exec_rc(db_path, "UPDATE ec2_requests SET state = "
				  "'sent' WHERE client_token = 'tok-a'"),
		      SQLITE_OK);
	cr_assert_neq(raw_exec_rc(db_path, "INSERT INTO ec2_requests VALUES "
				  "('tok-d', 1, 4, '', 'm5.large', 1, 0, 1, "
				  "NULL, 'launched', 1)"), SQLITE_OK);
	cr_assert_neq(raw_exec_rc(db_path, "INSERT INTO ec2_requests VALUES "
				  "('tok-e', 1, 5, '', 'm5.large', 2, 0, 1, "
				  "NULL, 'sent', 1)"), SQLITE_OK);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM ec2_requests "
			     "WHERE state = 'closed'"), 2);
}

Test(store_ec2, a_token_added_twice_is_an_error)
{
	struct px_error err = {0};
	struct store *st = db_open(":memory:");
	int64_t j = job(st, "a");
	struct store_ec2_request a = req("px-dup", j, 1, "us-east-1a");
	struct store_ec2_request b = req("px-dup", j, 2, "us-east-1b");
	struct store_ec2_request c = req("px-other", j, 1, "us-east-1b");
	struct got g;

	add_ok(st, &a);
	cr_assert_eq(store_ec2_request_add(st, &a, &err), PX_EEXIST);
	cr_assert(strstr(err.msg, "'px-dup'"), "%s", err.msg);
	cr_assert_eq(store_ec2_request_add(st, &b, &err), PX_EEXIST,
		     "the same token for another id");
	cr_assert_eq(store_ec2_request_add(st, &c, &err), PX_EEXIST,
		     "a second request for one controller id");
	g = walk(st, -1, false);
	cr_assert_eq(g.n, 1);
	cr_assert_str_eq(g.v[0].zone, "us-east-1a", "the first one kept");
	store_close(st);
}

Test(store_ec2, request_fields_checked)
{
	struct px_error err = {0};
	struct store *st = db_open(":memory:");
	int64_t j = job(st, "a");
	struct store_ec2_request r;
	static const struct {
		const char *token;
		int64_t job;
		uint64_t ctrl;
		const char *type;
		int64_t bid;
		const char *field;
	} bad[] = {
		{"", 1, 1, "m5.large", 0, "'client_token'"},
		{"a b", 1, 1, "m5.large", 0, "'client_token'"},
		{"tok\x01", 1, 1, "m5.large", 0, "'client_token'"},
		{"tok", 0, 1, "m5.large", 0, "'job_id'"},
		{"tok", 1, 0, "m5.large", 0, "'ctrl_id'"},
		{"tok", 1, (uint64_t)INT64_MAX + 1, "m5.large", 0,
		 "'ctrl_id'"},
		{"tok", 1, 1, "", 0, "'type'"},
		{"tok", 1, 1, "m5.large", -1, "'bid_uusd'"},
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		r = req("x", j, 1, "us-east-1a");
		snprintf(r.client_token, sizeof r.client_token, "%s",
			 bad[i].token);
		r.job_id = bad[i].job;
		r.ctrl_id = bad[i].ctrl;
		snprintf(r.type, sizeof r.type, "%s", bad[i].type);
		r.bid_uusd = bad[i].bid;
		cr_assert_eq(store_ec2_request_add(st, &r, &err), PX_EINVAL,
			     "%zu", i);
		cr_assert(strstr(err.msg, bad[i].field), "%zu: %s", i,
			  err.msg);
	}
	/* 64 bytes is the longest token */
	r = req("x", j, 1, "us-east-1a");
	memset(r.client_token, 'k', 64);
	r.client_token[64] = '\0';
	add_ok(st, &r);
	/* an unknown job */
	r = req("y", 4242, 2, "us-east-1a");
	cr_assert_eq(store_ec2_request_add(st, &r, &err), PX_ENOENT, "%s",
		     err.msg);
	cr_assert_eq(walk(st, -1, false).n, 1);
	store_close(st);
}

Test(store_ec2, job_max_ctrl_id_from_requests_and_instances)
{
	struct px_error err = {0};
	struct store *st = db_open(":memory:");
	int64_t j1 = job(st, "a"), j2 = job(st, "b"), al, inst;
	struct store_ec2_request r = req("t-1", j1, 12, "us-east-1a");
	uint64_t max = 99;

	cr_assert_eq(store_job_max_ctrl_id(st, j1, &max, &err), PX_OK);
	cr_assert_eq(max, 0, "none yet");
	cr_assert_eq(store_job_max_ctrl_id(st, 4242, &max, &err), PX_OK);
	cr_assert_eq(max, 0, "an unknown job has none");
	cr_assert_eq(store_allocation_add(st, j1, 0, "m5.large",
					  STORE_TIER_RELIABLE, 0, 1, 5, &al,
					  &err), PX_OK, "%s", err.msg);
	cr_assert_eq(store_instance_add(st, al, "i-1", 5, 3, &inst, &err),
		     PX_OK);
	cr_assert_eq(store_instance_add(st, al, "i-2", 5, 9, &inst, &err),
		     PX_OK);
	cr_assert_eq(store_job_max_ctrl_id(st, j1, &max, &err), PX_OK);
	cr_assert_eq(max, 9, "from the instances");
	add_ok(st, &r);
	cr_assert_eq(store_job_max_ctrl_id(st, j1, &max, &err), PX_OK);
	cr_assert_eq(max, 12, "a request never launched counts too");
	/* an instance past every request */
	cr_assert_eq(store_instance_add(st, al, "i-3", 5, 40, &inst, &err),
		     PX_OK);
	cr_assert_eq(store_job_max_ctrl_id(st, j1, &max, &err), PX_OK);
	cr_assert_eq(max, 40);
	/* another job's ids are its own */
	cr_assert_eq(store_job_max_ctrl_id(st, j2, &max, &err), PX_OK);
	cr_assert_eq(max, 0);
	store_close(st);
}

/* A version-2 file (as the previous build left it) with a job, an
 * allocation, an instance with a controller id, an event and a ledger
 * line: opened by this build, it is at this version with every row kept
 * and the new tables empty and usable. */
Test(store_ec2, v2_file_migrated_keeps_everything)
{
	struct px_error err = {0};
	char sql[8192], id[STORE_DAEMON_ID_LEN + 1];
	struct store *st;
	uint64_t max = 0;

	snprintf(sql, sizeof sql, "%s%s"
		 "PRAGMA user_version = 2;"
		 "INSERT INTO markets VALUES (1, 'us-east-1', 'us-east-1a',"
		 " 'm3.large', 'Linux/UNIX');"
		 "INSERT INTO jobs VALUES (1, 'a', '{}', 'running', 'ec2', 5,"
		 " 5), (2, 'b', '{}', 'done', 'local', 5, 6);"
		 "INSERT INTO allocations VALUES (1, 1, 1, 'm3.large',"
		 " 'transient', 42, 1, 9);"
		 "INSERT INTO instances VALUES (1, 1, 'i-1', 10, NULL, NULL,"
		 " 17);"
		 "INSERT INTO events VALUES (1, 1, 1, 11, 'warning', '');"
		 "INSERT INTO ledger VALUES (1, 1, 1, 10, 20, 99, '');",
		 store_schema_v1, store_schema_v2);
	raw_exec(db_path, sql);
	cr_assert_eq(raw_int(db_path, "PRAGMA user_version"), 2);
	st = db_open(db_path);
	cr_assert_eq(store_schema_version(st), STORE_SCHEMA_VERSION);
	cr_assert_eq(store_job_max_ctrl_id(st, 1, &max, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(max, 17, "the old instance's controller id");
	cr_assert_eq(store_daemon_id(st, id, sizeof id, &err), PX_OK, "%s",
		     err.msg);
	{
		struct store_ec2_request r = req("px-1-18", 1, 18,
						 "us-east-1a");

		add_ok(st, &r);
	}
	store_close(st);
	cr_assert_eq(raw_int(db_path, "PRAGMA user_version"),
		     STORE_SCHEMA_VERSION);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM jobs WHERE "
			     "(id = 1 AND state = 'running' AND world = 'ec2')"
			     " OR (id = 2 AND state = 'done')"), 2);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM instances WHERE "
			     "ctrl_id = 17 AND end_us IS NULL"), 1);
	cr_assert_eq(raw_int(db_path, "SELECT sum(amount_uusd) FROM ledger"),
		     99);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM events"), 1);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM ec2_requests"),
		     1);
	cr_assert_eq(raw_int(db_path, "SELECT count(*) FROM "
			     "pragma_foreign_key_check"), 0);
}
