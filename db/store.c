/* store.c -- the SQLite store (see store.h and docs/schema.md).
 *
 * One connection, statements prepared once and kept (SQLITE_PREPARE_
 * PERSISTENT) except for the walkers (*_each), whose callbacks may
 * re-enter the store.  A read-only store (store_open_readonly) is the same
 * struct with SQLite refusing the writes.  Every state-changing call is a
 * single SQL statement, so outside a caller's transaction SQLite's
 * autocommit makes it one transaction.
 */
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "schema_v1.h"
#include "schema_v2.h"
#include "schema_v3.h"

#define STORE_BUSY_TIMEOUT_MS 5000
#define STORE_APPLICATION_ID 1347965745 /* 0x50585331, "PXS1" */

/* Migration i takes a database from user_version i to i + 1; steps that
 * rebuild a table run with foreign keys off (SQLite's documented way). */
static const struct {
	const char *sql;
	bool rebuilds;
} store_migrations[] = {
	{store_schema_v1, false},
	{store_schema_v2, true},
	{store_schema_v3, false},
};
_Static_assert(sizeof(store_migrations) / sizeof(store_migrations[0]) ==
		       STORE_SCHEMA_VERSION,
	       "one migration step per schema version");

/* Market cache: open addressing, wiped when 3/4 full (the real traces have
 * at most a few hundred markets, so a wipe is rare). */
#define MCACHE_SLOTS 512
#define MCACHE_LIMIT (MCACHE_SLOTS * 3 / 4)
#define MCACHE_KEY_MAX (4 * STORE_NAME_MAX)

struct mcache_ent {
	int64_t id;     /* 0: empty slot */
	uint32_t hash;
	uint16_t key_len;
	char key[MCACHE_KEY_MAX]; /* region\0zone\0type\0product */
};

enum stmt_id {
	ST_BEGIN,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_MARKET_GET,
	ST_MARKET_ADD,
	ST_PRICE_ADD,
	ST_PRICE_GET,
	ST_PRICE_AT,
	ST_PRICE_RANGE,
	ST_ONDEMAND_SET,
	ST_ONDEMAND_GET,
	ST_IMPORT_ADD,
	ST_IMPORT_SEEN,
	ST_JOB_ADD,
	ST_JOB_SET_STATE,
	ST_JOB_STATE,
	ST_ALLOC_ADD,
	ST_INSTANCE_ADD,
	ST_INSTANCE_END,
	ST_INSTANCE_ENDED,
	ST_EVENT_ADD,
	ST_LEDGER_ADD,
	ST_JOB_COST,
	ST_JOB_COST_OD,
	ST_COUNTS,
	ST_DAEMON_GET,
	ST_DAEMON_ADD,
	ST_EC2_REQ_ADD,
	ST_EC2_REQ_SET,
	ST_EC2_REQ_GET,
	ST_JOB_MAX_CTRL,
	ST_LEDGER_EXTEND,
	ST_INSTANCE_END_AT,
	ST_MAX
};

static const char *const stmt_sql[ST_MAX] = {
	[ST_LEDGER_EXTEND] = "UPDATE ledger SET to_us = ?2, amount_uusd = "
			     "amount_uusd + ?3 WHERE instance_id = ?1",
	[ST_INSTANCE_END_AT] = "UPDATE instances SET end_us = ?2 WHERE id = "
			       "?1 AND end_us IS NOT NULL",
	[ST_BEGIN] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_MARKET_GET] = "SELECT id FROM markets WHERE region = ?1 AND "
			  "zone = ?2 AND type = ?3 AND product = ?4",
	[ST_MARKET_ADD] = "INSERT INTO markets (region, zone, type, product) "
			  "VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
	[ST_PRICE_ADD] = "INSERT INTO prices (market_id, t_s, price_uusd) "
			 "VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
	[ST_PRICE_GET] = "SELECT price_uusd FROM prices WHERE market_id = ?1 "
			 "AND t_s = ?2",
	[ST_PRICE_AT] = "SELECT price_uusd, t_s FROM prices WHERE "
			"market_id = ?1 AND t_s <= ?2 "
			"ORDER BY t_s DESC LIMIT 1",
	[ST_PRICE_RANGE] = "SELECT min(t_s), max(t_s), count(*) FROM prices "
			   "WHERE market_id = ?1",
	[ST_ONDEMAND_SET] = "INSERT INTO ondemand_prices (region, type, "
			    "uusd_per_hour, source) VALUES (?1, ?2, ?3, ?4) "
			    "ON CONFLICT (region, type) DO UPDATE SET "
			    "uusd_per_hour = excluded.uusd_per_hour, "
			    "source = excluded.source",
	[ST_ONDEMAND_GET] = "SELECT uusd_per_hour FROM ondemand_prices "
			    "WHERE region = ?1 AND type = ?2",
	[ST_IMPORT_ADD] = "INSERT INTO imports (path, sha256, records, "
			  "inserted, first_s, last_s, at_us) "
			  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[ST_IMPORT_SEEN] = "SELECT 1 FROM imports WHERE sha256 = ?1 LIMIT 1",
	[ST_JOB_ADD] = "INSERT INTO jobs (name, spec, state, world, "
		       "created_us, updated_us) "
		       "VALUES (?1, ?2, 'queued', ?4, ?3, ?3)",
	[ST_JOB_SET_STATE] = "UPDATE jobs SET state = ?2, updated_us = ?3 "
			     "WHERE id = ?1 AND state IN "
			     "('queued', 'running')",
	[ST_JOB_STATE] = "SELECT state FROM jobs WHERE id = ?1",
	[ST_ALLOC_ADD] = "INSERT INTO allocations (job_id, market_id, type, "
			 "tier, bid_uusd, count, at_us) "
			 "VALUES (?1, ?2, ?7, ?3, ?4, ?5, ?6)",
	[ST_INSTANCE_ADD] = "INSERT INTO instances (alloc_id, cloud_id, "
			    "start_us, ctrl_id) VALUES (?1, ?2, ?3, ?4)",
	[ST_INSTANCE_END] = "UPDATE instances SET end_us = ?2, "
			    "end_reason = ?3 WHERE id = ?1 AND end_us IS NULL",
	[ST_INSTANCE_ENDED] = "SELECT start_us, end_us FROM instances "
			      "WHERE id = ?1",
	[ST_EVENT_ADD] = "INSERT INTO events (job_id, instance_id, at_us, "
			 "kind, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
	[ST_LEDGER_ADD] = "INSERT INTO ledger (job_id, instance_id, from_us, "
			  "to_us, amount_uusd, note) "
			  "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	[ST_JOB_COST] = "SELECT (SELECT 1 FROM jobs WHERE id = ?1), "
			"(SELECT coalesce(sum(amount_uusd), 0) FROM ledger "
			"WHERE job_id = ?1)",
	[ST_JOB_COST_OD] = "SELECT (SELECT 1 FROM jobs WHERE id = ?1), "
			   "(SELECT coalesce(sum(l.amount_uusd), 0) FROM "
			   "ledger l JOIN instances i ON i.id = "
			   "l.instance_id JOIN allocations a ON a.id = "
			   "i.alloc_id WHERE l.job_id = ?1 AND a.market_id "
			   "IS NULL)",
	[ST_COUNTS] = "SELECT (SELECT count(*) FROM markets), "
		      "(SELECT count(*) FROM prices), "
		      "(SELECT count(*) FROM jobs)",
	[ST_DAEMON_GET] = "SELECT daemon_id FROM daemon WHERE one = 1",
	[ST_DAEMON_ADD] = "INSERT INTO daemon (one, daemon_id, created_us) "
			  "VALUES (1, ?1, ?2) ON CONFLICT DO NOTHING",
	[ST_EC2_REQ_ADD] = "INSERT INTO ec2_requests (client_token, job_id, "
			   "ctrl_id, zone, type, reliable, bid_uusd, "
			   "created_us, instance_id, state, updated_us) "
			   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, NULL, "
			   "'sent', ?8)",
	[ST_EC2_REQ_SET] = "UPDATE ec2_requests SET state = ?2, "
			   "instance_id = coalesce(?3, instance_id), "
			   "updated_us = ?4 WHERE client_token = ?1",
	[ST_EC2_REQ_GET] = "SELECT state, instance_id FROM ec2_requests "
			   "WHERE client_token = ?1",
	[ST_JOB_MAX_CTRL] = "SELECT max("
			    "(SELECT coalesce(max(ctrl_id), 0) FROM "
			    "ec2_requests WHERE job_id = ?1), "
			    "(SELECT coalesce(max(i.ctrl_id), 0) FROM "
			    "instances i JOIN allocations a "
			    "ON a.id = i.alloc_id WHERE a.job_id = ?1))",
};

struct store {
	sqlite3 *db;
	bool readonly;         /* store_open_readonly */
	int check_rc;          /* SQLite's code when check_version failed */
	bool in_tx;            /* store_begin done, no commit/rollback yet */
	bool mcache_tentative; /* cache entries added inside in_tx */
	size_t mcache_used;
	struct mcache_ent *mcache; /* MCACHE_SLOTS entries */
	sqlite3_stmt *stmt[ST_MAX];
	char daemon_id[STORE_DAEMON_ID_LEN + 1]; /* "" until read */
};

static const char *const job_state_names[STORE_JOB_STATE_MAX] = {
	[STORE_JOB_QUEUED] = "queued",
	[STORE_JOB_RUNNING] = "running",
	[STORE_JOB_DONE] = "done",
	[STORE_JOB_FAILED] = "failed",
	[STORE_JOB_CANCELLED] = "cancelled",
};

static const char *const tier_names[] = {
	[STORE_TIER_RELIABLE] = "reliable",
	[STORE_TIER_TRANSIENT] = "transient",
};

const char *store_job_state_name(enum store_job_state s)
{
	if ((int)s < 0 || s >= STORE_JOB_STATE_MAX)
		return "unknown";
	return job_state_names[s];
}

/* ---- errors ---- */

static void mcache_wipe(struct store *st)
{
	if (st->mcache && st->mcache_used)
		memset(st->mcache, 0, MCACHE_SLOTS * sizeof(*st->mcache));
	st->mcache_used = 0;
	st->mcache_tentative = false;
}

/* SQLite may end a transaction by itself on some errors (SQLITE_FULL,
 * SQLITE_IOERR, SQLITE_NOMEM...): then forget what it undid. */
static void tx_sync(struct store *st)
{
	if (st->in_tx && sqlite3_get_autocommit(st->db)) {
		st->in_tx = false;
		if (st->mcache_tentative)
			mcache_wipe(st);
	}
}

static enum px_err code_of(int rc)
{
	switch (rc) {
	case SQLITE_CONSTRAINT_FOREIGNKEY:
		return PX_ENOENT;
	case SQLITE_CONSTRAINT_CHECK:
	case SQLITE_CONSTRAINT_NOTNULL:
	case SQLITE_CONSTRAINT_DATATYPE:
		return PX_EINVAL;
	case SQLITE_CONSTRAINT_UNIQUE:
	case SQLITE_CONSTRAINT_PRIMARYKEY:
		return PX_EEXIST;
	case SQLITE_NOMEM:
		return PX_ENOMEM;
	default:
		return PX_EDB;
	}
}

/* Report a failed SQLite call rc while doing what (printf format): "what:
 * sqlite message".  Call before resetting the statement, which would
 * clear the message. */
static enum px_err store_fail(struct store *st, int rc, struct px_error *err,
			      const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static enum px_err store_fail(struct store *st, int rc, struct px_error *err,
			      const char *fmt, ...)
{
	char what[PX_ERRMSG_MAX / 2];
	const char *msg;
	bool lost;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	msg = st->db && sqlite3_errcode(st->db) != SQLITE_OK ?
		      sqlite3_errmsg(st->db) :
		      sqlite3_errstr(rc);
	lost = st->db && st->in_tx && sqlite3_get_autocommit(st->db);
	px_errorf(err, code_of(rc), "%s: %s%s", what, msg,
		  lost ? " (transaction rolled back)" : "");
	tx_sync(st);
	return code_of(rc);
}

/* Check a name argument: 1 to STORE_NAME_MAX-1 bytes. */
static enum px_err check_name(const char *what, const char *field,
			      const char *s, struct px_error *err)
{
	size_t n;

	if (!s)
		return px_errorf(err, PX_EINVAL, "%s: field '%s' missing",
				 what, field);
	n = strnlen(s, STORE_NAME_MAX);
	if (n == 0)
		return px_errorf(err, PX_EINVAL, "%s: field '%s' empty", what,
				 field);
	if (n >= STORE_NAME_MAX)
		return px_errorf(err, PX_EINVAL,
				 "%s: field '%s' '%.20s...' longer than %d "
				 "bytes",
				 what, field, s, STORE_NAME_MAX - 1);
	return PX_OK;
}

/* Check a free-text argument: not NULL, at most STORE_TEXT_MAX bytes. */
static enum px_err check_text(const char *what, const char *field,
			      const char *s, struct px_error *err)
{
	if (!s)
		return px_errorf(err, PX_EINVAL, "%s: field '%s' missing",
				 what, field);
	if (strnlen(s, STORE_TEXT_MAX + 1) > STORE_TEXT_MAX)
		return px_errorf(err, PX_ETOOBIG,
				 "%s: field '%s' longer than %d bytes", what,
				 field, STORE_TEXT_MAX);
	return PX_OK;
}

/* ---- statements ---- */

static sqlite3_stmt *stmt_get(struct store *st, enum stmt_id id,
			      struct px_error *err)
{
	int rc;

	if (st->stmt[id])
		return st->stmt[id];
	rc = sqlite3_prepare_v3(st->db, stmt_sql[id], -1,
				SQLITE_PREPARE_PERSISTENT, &st->stmt[id],
				NULL);
	if (rc != SQLITE_OK) {
		store_fail(st, rc, err, "prepare '%.60s'", stmt_sql[id]);
		st->stmt[id] = NULL;
		return NULL;
	}
	return st->stmt[id];
}

/* Execute SQL that returns no rows we need (pragmas, migrations). */
static enum px_err exec_sql(struct store *st, const char *sql,
			    const char *what, struct px_error *err)
{
	int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);

	if (rc != SQLITE_OK)
		return store_fail(st, rc, err, "%s", what);
	return PX_OK;
}

/* Run a one-row integer query (pragmas); *ret is column 0, 0 if no row. */
static enum px_err query_int(struct store *st, const char *sql,
			     int64_t *ret, struct px_error *err)
{
	sqlite3_stmt *s = NULL;
	enum px_err r = PX_OK;
	int rc;

	rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, err, "run '%s'", sql);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*ret = sqlite3_column_int64(s, 0);
	else if (rc == SQLITE_DONE)
		*ret = 0;
	else
		r = store_fail(st, rc, err, "run '%s'", sql);
	sqlite3_finalize(s);
	return r;
}

/* Bind an int64 that means "none" when <= 0. */
static int bind_opt_id(sqlite3_stmt *s, int i, int64_t id)
{
	return id > 0 ? sqlite3_bind_int64(s, i, id) : sqlite3_bind_null(s, i);
}

static int bind_text(sqlite3_stmt *s, int i, const char *t)
{
	return sqlite3_bind_text(s, i, t, -1, SQLITE_STATIC);
}

/* ---- open, close, migrations ---- */

static enum px_err migrate(struct store *st, const char *path,
			   struct px_error *err)
{
	int64_t v;
	enum px_err r;

	/* foreign keys cannot be switched inside a transaction: off for the
	 * migration (nothing else runs on this connection yet), checked by
	 * foreign_key_check after each step that rebuilds a table */
	r = exec_sql(st, "PRAGMA foreign_keys = OFF", "disable foreign keys",
		     err);
	if (r == PX_OK)
		r = exec_sql(st, "BEGIN IMMEDIATE", "begin migration", err);
	if (r != PX_OK)
		return r;
	for (;;) {
		/* Read inside the write transaction: another process may
		 * have migrated while we waited for the lock. */
		r = query_int(st, "PRAGMA user_version", &v, err);
		if (r != PX_OK)
			goto out_rollback;
		if (v > STORE_SCHEMA_VERSION) {
			/* A newer build migrated it after check_version. */
			r = px_errorf(err, PX_EUNSUPP,
				      "database '%s': schema version %" PRId64
				      " is newer than this build's (%d)",
				      path, v, STORE_SCHEMA_VERSION);
			goto out_rollback;
		}
		if (v == STORE_SCHEMA_VERSION)
			break;
		if (v == 0) {
			int64_t n;

			r = query_int(st, "SELECT count(*) FROM sqlite_schema",
				      &n, err);
			if (r == PX_OK && n > 0)
				r = px_errorf(err, PX_EINVAL,
					      "database '%s': has tables but "
					      "no schema version: not a "
					      "proteus store", path);
			if (r != PX_OK)
				goto out_rollback;
		}
		r = exec_sql(st, store_migrations[v].sql, "migrate schema",
			     err);
		if (r == PX_OK && store_migrations[v].rebuilds) {
			int64_t bad;

			r = query_int(st, "SELECT count(*) FROM "
				      "pragma_foreign_key_check", &bad, err);
			if (r == PX_OK && bad)
				r = px_errorf(err, PX_EINVAL, "%" PRId64
					      " rows break a foreign key",
					      bad);
		}
		if (r != PX_OK) {
			px_error_prefix(err, "database '%s': version %" PRId64
					" to %" PRId64 ": ",
					path, v, v + 1);
			goto out_rollback;
		}
		char pragma[64];
		snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d",
			 (int)v + 1);
		r = exec_sql(st, pragma, "set schema version", err);
		if (r != PX_OK)
			goto out_rollback;
		/* every step in this one transaction: a reader never sees
		 * a version between the file's and this build's */
	}
	r = exec_sql(st, "COMMIT", "end migration", err);
	if (r == PX_OK)
		r = exec_sql(st, "PRAGMA foreign_keys = ON",
			     "enable foreign keys", err);
	return r;

out_rollback:
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_exec(st->db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
	return r;
}

/* Refuse files that are not ours or are newer than this build, before
 * changing anything in them.  The reads share one read transaction: read
 * one by one, a version of 0 followed by the tables another process
 * committed in between looked like a foreign file. */
static enum px_err check_version_tx(struct store *st, const char *path,
				    struct px_error *err)
{
	int64_t v, app, n;
	enum px_err r;

	r = query_int(st, "PRAGMA user_version", &v, err);
	if (r != PX_OK)
		goto out_name;
	if (v > STORE_SCHEMA_VERSION)
		return px_errorf(err, PX_EUNSUPP,
				 "database '%s': schema version %" PRId64
				 " is newer than this build's (%d)",
				 path, v, STORE_SCHEMA_VERSION);
	if (v == 0) {
		r = query_int(st, "SELECT count(*) FROM sqlite_schema", &n,
			      err);
		if (r != PX_OK)
			goto out_name;
		if (n > 0)
			return px_errorf(err, PX_EINVAL,
					 "database '%s': has tables but no "
					 "schema version: not a proteus store",
					 path);
		return PX_OK;
	}
	r = query_int(st, "PRAGMA application_id", &app, err);
	if (r != PX_OK)
		goto out_name;
	if (app != STORE_APPLICATION_ID)
		return px_errorf(err, PX_EINVAL,
				 "database '%s': application id %" PRId64
				 ": not a proteus store",
				 path, app);
	return PX_OK;

out_name: /* e.g. "database 'x': run 'PRAGMA ...': not a database" */
	px_error_prefix(err, "database '%s': ", path);
	return r;
}

static enum px_err check_version(struct store *st, const char *path,
				 struct px_error *err)
{
	enum px_err r = exec_sql(st, "BEGIN", "begin", err);

	if (r != PX_OK) {
		st->check_rc = sqlite3_extended_errcode(st->db);
		px_error_prefix(err, "database '%s': ", path);
		return r;
	}
	r = check_version_tx(st, path, err);
	st->check_rc = r != PX_OK ? sqlite3_extended_errcode(st->db) :
				    SQLITE_OK;
	if (!sqlite3_get_autocommit(st->db))
		sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
	return r;
}

static enum px_err configure(struct store *st, const char *path,
			     struct px_error *err)
{
	const char *fname = sqlite3_db_filename(st->db, "main");
	sqlite3_stmt *s = NULL;
	enum px_err r;
	int rc;

	r = exec_sql(st, "PRAGMA foreign_keys = ON", "enable foreign keys",
		     err);
	if (r != PX_OK)
		return r;
	r = exec_sql(st, "PRAGMA synchronous = NORMAL", "set synchronous",
		     err);
	if (r != PX_OK)
		return r;
	if (!fname || !fname[0])
		return PX_OK; /* :memory: or temporary: no WAL */
	rc = sqlite3_prepare_v2(st->db, "PRAGMA journal_mode = WAL", -1, &s,
				NULL);
	/* Leaving rollback mode takes an exclusive lock, and SQLite answers
	 * SQLITE_BUSY at once, without the busy handler, while another
	 * process opening the same fresh file holds a shared one: retried
	 * here up to the busy timeout. */
	for (uint64_t t0 = px_now_mono_us(); rc == SQLITE_OK;) {
		rc = sqlite3_step(s);
		if ((rc & 0xff) != SQLITE_BUSY ||
		    px_now_mono_us() - t0 > STORE_BUSY_TIMEOUT_MS * 1000ull)
			break;
		sqlite3_reset(s);
		rc = SQLITE_OK;
		sqlite3_sleep(5);
	}
	if (rc != SQLITE_ROW) {
		r = store_fail(st, rc, err, "database '%s': set WAL mode",
			       path);
		goto out_finalize;
	}
	const unsigned char *mode = sqlite3_column_text(s, 0);
	if (!mode || strcmp((const char *)mode, "wal") != 0)
		r = px_errorf(err, PX_EDB,
			      "database '%s': cannot use WAL mode (got '%s')",
			      path, mode ? (const char *)mode : "?");
out_finalize:
	sqlite3_finalize(s);
	return r;
}

/* SQLite keeps allocation statistics behind a global mutex taken on every
 * malloc; nothing here reads them.  This is process-wide and only takes
 * effect before SQLite initializes, so it is tried once and its result
 * ignored (a program that initialized SQLite first keeps its setting). */
static void store_tune_sqlite(void)
{
	(void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/* A read-only store must be at this build's version already: it cannot
 * be migrated.  check_version has refused newer and foreign files. */
static enum px_err check_current(struct store *st, const char *path,
				 struct px_error *err)
{
	int64_t v;
	enum px_err r = query_int(st, "PRAGMA user_version", &v, err);

	if (r != PX_OK)
		return r;
	if (v == 0) /* check_version saw no tables: a store yet to be made */
		return px_errorf(err, PX_ENOENT,
				 "database '%s': empty, no store in it yet",
				 path);
	if (v < STORE_SCHEMA_VERSION)
		return px_errorf(err, PX_EUNSUPP,
				 "database '%s': schema version %" PRId64
				 " is older than this build's (%d) and cannot "
				 "be migrated read-only",
				 path, v, STORE_SCHEMA_VERSION);
	return PX_OK;
}

/* True when path's write-ahead log is missing or empty, so that the main
 * file alone holds every committed transaction. */
static bool wal_is_empty(const char *path)
{
	char wal[PATH_MAX];
	struct stat sb;

	if ((size_t)snprintf(wal, sizeof(wal), "%s-wal", path) >= sizeof(wal))
		return false;
	if (stat(wal, &sb) != 0)
		return errno == ENOENT;
	return sb.st_size == 0;
}

/* Reopen a read-only store as "immutable" (SQLite's URI parameter): no
 * locks, no -shm.  Only for a WAL file whose -shm this user can neither
 * read nor create (a database readable through its group in a folder
 * it cannot write) and whose WAL is empty: nothing is then written
 * anywhere, and only a writer that starts during the read can make the
 * read fail (SQLITE_CORRUPT or stale rows; never damage). */
static int reopen_immutable(struct store *st, const char *path)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(path), cap = 3 * n + 32, j;
	char *uri = px_calloc(1, cap);
	int rc;

	if (!uri)
		return SQLITE_NOMEM;
	/* "file:", at most 3 bytes a byte of path, the parameter, NUL */
	j = (size_t)snprintf(uri, cap, "file:");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)path[i];

		if (c == '?' || c == '#' || c == '%' || c < 0x20 ||
		    c >= 0x7f) {
			uri[j++] = '%';
			uri[j++] = hex[c >> 4];
			uri[j++] = hex[c & 15];
		} else {
			uri[j++] = (char)c;
		}
	}
	snprintf(uri + j, cap - j, "?immutable=1");
	sqlite3_close_v2(st->db);
	st->db = NULL;
	rc = sqlite3_open_v2(uri, &st->db,
			     SQLITE_OPEN_READONLY | SQLITE_OPEN_URI |
				     SQLITE_OPEN_NOMUTEX |
				     SQLITE_OPEN_EXRESCODE,
			     NULL);
	free(uri);
	return rc;
}

/* Open path; read-only: never create, configure or migrate. */
static enum px_err open_mode(const char *path, bool readonly,
			     struct store **ret, struct px_error *err)
{
	static pthread_once_t tune_once = PTHREAD_ONCE_INIT;
	const char *how = readonly ? " read-only" : "";
	struct store *st;
	enum px_err r;
	int rc;

	if (!path || !ret)
		return px_errorf(err, PX_EINVAL, "open store: no path");
	pthread_once(&tune_once, store_tune_sqlite);
	st = px_calloc(1, sizeof(*st));
	if (!st)
		return px_errorf(err, PX_ENOMEM, "open store '%s'", path);
	st->mcache = px_calloc(MCACHE_SLOTS, sizeof(*st->mcache));
	if (!st->mcache) {
		r = px_errorf(err, PX_ENOMEM, "open store '%s'", path);
		goto out_close;
	}
	rc = sqlite3_open_v2(path, &st->db,
			     (readonly ? SQLITE_OPEN_READONLY :
					 SQLITE_OPEN_READWRITE |
						 SQLITE_OPEN_CREATE) |
				     SQLITE_OPEN_NOMUTEX |
				     SQLITE_OPEN_EXRESCODE,
			     NULL);
	if (rc != SQLITE_OK) {
		if (readonly && (rc & 0xff) == SQLITE_CANTOPEN && st->db &&
		    sqlite3_system_errno(st->db) == ENOENT)
			r = px_errorf(err, PX_ENOENT,
				      "database '%s': no such file", path);
		else
			r = store_fail(st, rc, err, "open database '%s'%s",
				       path, how);
		goto out_close;
	}
	st->readonly = readonly;
	sqlite3_extended_result_codes(st->db, 1);
	sqlite3_busy_timeout(st->db, STORE_BUSY_TIMEOUT_MS);
	r = check_version(st, path, err);
	if (r != PX_OK && readonly &&
	    (st->check_rc & 0xff) == SQLITE_READONLY &&
	    wal_is_empty(path)) {
		rc = reopen_immutable(st, path);
		if (rc != SQLITE_OK) {
			r = store_fail(st, rc, err, "open database '%s'%s",
				       path, how);
			goto out_close;
		}
		sqlite3_extended_result_codes(st->db, 1);
		r = check_version(st, path, err);
	}
	if (r == PX_OK && readonly)
		r = check_current(st, path, err);
	if (r == PX_OK && !readonly)
		r = configure(st, path, err);
	if (r == PX_OK && !readonly)
		r = migrate(st, path, err);
	if (r != PX_OK)
		goto out_close;
	*ret = st;
	return PX_OK;

out_close:
	store_close(st);
	return r;
}

enum px_err store_open(const char *path, struct store **ret,
		       struct px_error *err)
{
	return open_mode(path, false, ret, err);
}

enum px_err store_open_readonly(const char *path, struct store **ret,
				struct px_error *err)
{
	return open_mode(path, true, ret, err);
}

void store_close(struct store *st)
{
	if (!st)
		return;
	if (st->db && !sqlite3_get_autocommit(st->db))
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	for (int i = 0; i < ST_MAX; i++)
		sqlite3_finalize(st->stmt[i]);
	/* Everything is finalized, so this does close (and checkpoints). */
	sqlite3_close(st->db);
	free(st->mcache);
	free(st);
}

int store_schema_version(struct store *st)
{
	int64_t v;

	if (query_int(st, "PRAGMA user_version", &v, NULL) != PX_OK)
		return -1;
	return (int)v;
}

enum px_err store_counts(struct store *st, struct store_counts *ret,
			 struct px_error *err)
{
	sqlite3_stmt *s = stmt_get(st, ST_COUNTS, err);
	int rc;

	if (!s)
		return PX_EDB;
	rc = sqlite3_step(s);
	if (rc != SQLITE_ROW) {
		enum px_err r = store_fail(st, rc, err, "count rows");

		sqlite3_reset(s);
		return r;
	}
	ret->markets = sqlite3_column_int64(s, 0);
	ret->prices = sqlite3_column_int64(s, 1);
	ret->jobs = sqlite3_column_int64(s, 2);
	sqlite3_reset(s);
	return PX_OK;
}

/* ---- transactions ---- */

/* Run a cached statement that returns no rows. */
static int step_done(struct store *st, enum stmt_id id, struct px_error *err)
{
	sqlite3_stmt *s = stmt_get(st, id, err);
	int rc;

	if (!s)
		return SQLITE_ERROR;
	rc = sqlite3_step(s);
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	return rc;
}

enum px_err store_begin(struct store *st, struct px_error *err)
{
	int rc;

	if (!sqlite3_get_autocommit(st->db))
		return px_errorf(err, PX_EINVAL,
				 "begin transaction: one is already open");
	if (st->readonly)
		return px_errorf(err, PX_EINVAL,
				 "begin transaction: store opened read-only");
	rc = step_done(st, ST_BEGIN, err);
	if (rc != SQLITE_OK) {
		enum px_err r = store_fail(st, rc, err, "begin transaction");
		sqlite3_reset(st->stmt[ST_BEGIN]);
		return r;
	}
	sqlite3_reset(st->stmt[ST_BEGIN]);
	st->in_tx = true;
	return PX_OK;
}

enum px_err store_commit(struct store *st, struct px_error *err)
{
	enum px_err r = PX_OK;
	int rc;

	if (sqlite3_get_autocommit(st->db)) {
		bool lost = st->in_tx;

		tx_sync(st);
		return px_errorf(err, PX_EINVAL, "commit: %s",
				 lost ? "the transaction was rolled back "
					"after an error" :
					"no transaction open");
	}
	rc = step_done(st, ST_COMMIT, err);
	if (rc != SQLITE_OK) {
		r = store_fail(st, rc, err, "commit transaction");
		if (st->stmt[ST_COMMIT])
			sqlite3_reset(st->stmt[ST_COMMIT]);
		store_rollback(st);
		return r;
	}
	sqlite3_reset(st->stmt[ST_COMMIT]);
	st->in_tx = false;
	st->mcache_tentative = false;
	return PX_OK;
}

void store_rollback(struct store *st)
{
	if (!sqlite3_get_autocommit(st->db)) {
		sqlite3_stmt *s = stmt_get(st, ST_ROLLBACK, NULL);

		if (s) {
			sqlite3_step(s);
			sqlite3_reset(s);
		}
		/* Should ROLLBACK fail to prepare (OOM), try the slow way. */
		if (!sqlite3_get_autocommit(st->db))
			sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	}
	st->in_tx = false;
	if (st->mcache_tentative)
		mcache_wipe(st);
}

bool store_in_transaction(struct store *st)
{
	return !sqlite3_get_autocommit(st->db);
}

/* ---- markets ---- */

/* FNV-1a over the key bytes. */
static uint32_t key_hash(const char *key, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)key[i];
		h *= 16777619u;
	}
	return h;
}

/* Build region\0zone\0type\0product into key (MCACHE_KEY_MAX bytes); the
 * names have been checked to be under STORE_NAME_MAX. */
static size_t key_make(char *key, const char *const names[4])
{
	size_t n = 0;

	for (int i = 0; i < 4; i++) {
		size_t l = strlen(names[i]);

		memcpy(key + n, names[i], l + 1);
		n += l + 1;
	}
	return n;
}

static struct mcache_ent *mcache_find(struct store *st, const char *key,
				      size_t len, uint32_t h)
{
	size_t i = h & (MCACHE_SLOTS - 1);

	for (;; i = (i + 1) & (MCACHE_SLOTS - 1)) {
		struct mcache_ent *e = &st->mcache[i];

		if (e->id == 0)
			return e;
		if (e->hash == h && e->key_len == len &&
		    memcmp(e->key, key, len) == 0)
			return e;
	}
}

static void mcache_put(struct store *st, const char *key, size_t len,
		       uint32_t h, int64_t id)
{
	struct mcache_ent *e;

	if (st->mcache_used >= MCACHE_LIMIT)
		mcache_wipe(st);
	e = mcache_find(st, key, len, h);
	if (e->id == 0)
		st->mcache_used++;
	e->id = id;
	e->hash = h;
	e->key_len = (uint16_t)len;
	memcpy(e->key, key, len);
	if (st->in_tx)
		st->mcache_tentative = true;
}

/* Look the market up in the table: *ret_id 0 when absent. */
static enum px_err market_select(struct store *st,
				 const char *const names[4], int64_t *ret_id,
				 struct px_error *err)
{
	sqlite3_stmt *s = stmt_get(st, ST_MARKET_GET, err);
	enum px_err r = PX_OK;
	int rc;

	if (!s)
		return PX_EDB;
	for (int i = 0; i < 4; i++)
		bind_text(s, i + 1, names[i]);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*ret_id = sqlite3_column_int64(s, 0);
	else if (rc == SQLITE_DONE)
		*ret_id = 0;
	else
		r = store_fail(st, rc, err,
			       "look up market '%s' '%s' '%s' '%s'", names[0],
			       names[1], names[2], names[3]);
	sqlite3_reset(s);
	return r;
}

enum px_err store_market_get_or_add(struct store *st, const char *region,
				    const char *zone, const char *type,
				    const char *product, int64_t *ret_id,
				    struct px_error *err)
{
	static const char *const fields[4] = {"region", "zone", "type",
					      "product"};
	const char *const names[4] = {region, zone, type, product};
	char key[MCACHE_KEY_MAX];
	struct mcache_ent *e;
	sqlite3_stmt *s;
	int64_t id = 0;
	enum px_err r;
	size_t len;
	uint32_t h;
	int rc;

	for (int i = 0; i < 4; i++) {
		r = check_name("market", fields[i], names[i], err);
		if (r != PX_OK)
			return r;
	}
	len = key_make(key, names);
	h = key_hash(key, len);
	e = mcache_find(st, key, len, h);
	if (e->id != 0) {
		*ret_id = e->id;
		return PX_OK;
	}

	r = market_select(st, names, &id, err);
	if (r != PX_OK)
		return r;
	if (id == 0) {
		s = stmt_get(st, ST_MARKET_ADD, err);
		if (!s)
			return PX_EDB;
		for (int i = 0; i < 4; i++)
			bind_text(s, i + 1, names[i]);
		rc = sqlite3_step(s);
		if (rc != SQLITE_DONE) {
			r = store_fail(st, rc, err,
				       "add market '%s' '%s' '%s' '%s'",
				       region, zone, type, product);
			sqlite3_reset(s);
			return r;
		}
		if (sqlite3_changes(st->db) == 1)
			id = sqlite3_last_insert_rowid(st->db);
		sqlite3_reset(s);
		/* Another connection added it between our two steps. */
		if (id == 0) {
			r = market_select(st, names, &id, err);
			if (r != PX_OK)
				return r;
			if (id == 0)
				return px_errorf(err, PX_EDB,
						 "add market '%s' '%s' '%s' "
						 "'%s': vanished",
						 region, zone, type, product);
		}
	}
	mcache_put(st, key, len, h, id);
	*ret_id = id;
	return PX_OK;
}

/* Copy name column col of record (what, id) into dst (STORE_NAME_MAX). */
static enum px_err copy_col(sqlite3_stmt *s, int col, char *dst,
			    const char *what, const char *field, int64_t id,
			    struct px_error *err)
{
	const unsigned char *t = sqlite3_column_text(s, col);
	int n = sqlite3_column_bytes(s, col);

	if (!t)
		return px_errorf(err, PX_ENOMEM, "read %s %" PRId64, what,
				 id);
	if (n >= STORE_NAME_MAX)
		return px_errorf(err, PX_EINVAL,
				 "read %s %" PRId64 ": field '%s' longer "
				 "than %d bytes",
				 what, id, field, STORE_NAME_MAX - 1);
	memcpy(dst, t, (size_t)n);
	dst[n] = '\0';
	return PX_OK;
}

enum px_err store_markets_each(struct store *st,
			       const struct store_market_filter *filter,
			       store_market_fn fn, void *ctx,
			       struct px_error *err)
{
	static const char sql[] =
		"SELECT id, region, zone, type, product FROM markets "
		"WHERE (?1 IS NULL OR region = ?1) "
		"AND (?2 IS NULL OR zone = ?2) "
		"AND (?3 IS NULL OR type = ?3) "
		"AND (?4 IS NULL OR product = ?4) "
		"ORDER BY region, type, zone, product";
	struct store_market m;
	sqlite3_stmt *s = NULL;
	enum px_err r = PX_OK;
	int rc;

	/* Not cached: fn may re-enter the store (even this function). */
	rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, err, "list markets");
	if (filter) {
		bind_text(s, 1, filter->region);
		bind_text(s, 2, filter->zone);
		bind_text(s, 3, filter->type);
		bind_text(s, 4, filter->product);
	}
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		memset(&m, 0, sizeof(m));
		m.id = sqlite3_column_int64(s, 0);
		r = copy_col(s, 1, m.region, "market", "region", m.id, err);
		if (r == PX_OK)
			r = copy_col(s, 2, m.zone, "market", "zone", m.id,
				     err);
		if (r == PX_OK)
			r = copy_col(s, 3, m.type, "market", "type", m.id,
				     err);
		if (r == PX_OK)
			r = copy_col(s, 4, m.product, "market", "product",
				     m.id, err);
		if (r == PX_OK)
			r = fn(&m, ctx);
		if (r != PX_OK)
			goto out_finalize;
	}
	if (rc != SQLITE_DONE)
		r = store_fail(st, rc, err, "list markets");
out_finalize:
	sqlite3_finalize(s);
	return r;
}

/* ---- prices ---- */

/* A record (market_id, t_s) is already stored: fine when it has the same
 * price, PX_EEXIST naming both prices when not. */
static enum px_err price_same(struct store *st, int64_t market_id,
			      int64_t t_s, int64_t price_uusd,
			      struct px_error *err)
{
	sqlite3_stmt *s = stmt_get(st, ST_PRICE_GET, err);
	char a[32], b[32], t[32];
	enum px_err r = PX_OK;
	int64_t have;
	int rc;

	if (!s)
		return PX_EDB;
	sqlite3_bind_int64(s, 1, market_id);
	sqlite3_bind_int64(s, 2, t_s);
	rc = sqlite3_step(s);
	if (rc != SQLITE_ROW) {
		r = store_fail(st, rc, err, "read price for market %" PRId64
			       " at %" PRId64, market_id, t_s);
		goto out;
	}
	have = sqlite3_column_int64(s, 0);
	if (have != price_uusd)
		r = px_errorf(err, PX_EEXIST,
			      "price %s at %s conflicts with %s already "
			      "stored for this market and second",
			      px_format_usd(price_uusd, a, sizeof(a)),
			      px_format_time(t_s, t, sizeof(t)),
			      px_format_usd(have, b, sizeof(b)));
out:
	sqlite3_reset(s);
	return r;
}

enum px_err store_price_add(struct store *st, int64_t market_id, int64_t t_s,
			    int64_t price_uusd, bool *ret_inserted,
			    struct px_error *err)
{
	sqlite3_stmt *s;
	enum px_err r = PX_OK;
	int rc;

	if (price_uusd < 0)
		return px_errorf(err, PX_EINVAL,
				 "insert price for market %" PRId64
				 " at %" PRId64 ": negative price %" PRId64,
				 market_id, t_s, price_uusd);
	s = stmt_get(st, ST_PRICE_ADD, err);
	if (!s)
		return PX_EDB;
	sqlite3_bind_int64(s, 1, market_id);
	sqlite3_bind_int64(s, 2, t_s);
	sqlite3_bind_int64(s, 3, price_uusd);
	rc = sqlite3_step(s);
	if (rc == SQLITE_DONE) {
		bool ins = sqlite3_changes(st->db) == 1;

		if (ret_inserted)
			*ret_inserted = ins;
		sqlite3_reset(s);
		return ins ? PX_OK : price_same(st, market_id, t_s, price_uusd,
					       err);
	}
	r = store_fail(st, rc, err,
		       "insert price for market %" PRId64 " at %" PRId64,
		       market_id, t_s);
	sqlite3_reset(s);
	return r;
}

enum px_err store_prices_each(struct store *st, int64_t market_id,
			      int64_t from_s, int64_t to_s, store_price_fn fn,
			      void *ctx, struct px_error *err)
{
	static const char sql[] =
		"SELECT t_s, price_uusd FROM prices WHERE market_id = ?1 "
		"AND t_s BETWEEN ?2 AND ?3 ORDER BY t_s";
	sqlite3_stmt *s = NULL;
	enum px_err r = PX_OK;
	int rc;

	if (from_s >= to_s)
		return PX_OK;
	/* Not cached: fn may re-enter the store (even this function). */
	rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, err,
				  "list prices of market %" PRId64,
				  market_id);
	sqlite3_bind_int64(s, 1, market_id);
	sqlite3_bind_int64(s, 2, from_s);
	sqlite3_bind_int64(s, 3, to_s == INT64_MAX ? INT64_MAX : to_s - 1);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		r = fn(sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
		       ctx);
		if (r != PX_OK)
			goto out_finalize;
	}
	if (rc != SQLITE_DONE)
		r = store_fail(st, rc, err, "list prices of market %" PRId64,
			       market_id);
out_finalize:
	sqlite3_finalize(s);
	return r;
}

enum px_err store_price_at(struct store *st, int64_t market_id, int64_t t_s,
			   int64_t *ret_price_uusd, int64_t *ret_since_s,
			   struct px_error *err)
{
	sqlite3_stmt *s = stmt_get(st, ST_PRICE_AT, err);
	enum px_err r = PX_OK;
	int rc;

	if (!s)
		return PX_EDB;
	sqlite3_bind_int64(s, 1, market_id);
	sqlite3_bind_int64(s, 2, t_s);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		if (ret_price_uusd)
			*ret_price_uusd = sqlite3_column_int64(s, 0);
		if (ret_since_s)
			*ret_since_s = sqlite3_column_int64(s, 1);
	} else if (rc == SQLITE_DONE) {
		r = px_errorf(err, PX_ENOENT,
			      "price of market %" PRId64 " at %" PRId64
			      ": no record at or before",
			      market_id, t_s);
	} else {
		r = store_fail(st, rc, err,
			       "price of market %" PRId64 " at %" PRId64,
			       market_id, t_s);
	}
	sqlite3_reset(s);
	return r;
}

enum px_err store_price_range(struct store *st, int64_t market_id,
			      int64_t *ret_first_s, int64_t *ret_last_s,
			      int64_t *ret_count, struct px_error *err)
{
	sqlite3_stmt *s = stmt_get(st, ST_PRICE_RANGE, err);
	enum px_err r = PX_OK;
	int rc;

	if (!s)
		return PX_EDB;
	sqlite3_bind_int64(s, 1, market_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW && sqlite3_column_int64(s, 2) > 0) {
		if (ret_first_s)
			*ret_first_s = sqlite3_column_int64(s, 0);
		if (ret_last_s)
			*ret_last_s = sqlite3_column_int64(s, 1);
		if (ret_count)
			*ret_count = sqlite3_column_int64(s, 2);
	} else if (rc == SQLITE_ROW) {
		r = px_errorf(err, PX_ENOENT,
			      "price range of market %" PRId64 ": no records",
			      market_id);
	} else {
		r = store_fail(st, rc, err,
			       "price range of market %" PRId64, market_id);
	}
	sqlite3_reset(s);
	return r;
}

/* ---- on-demand prices ---- */

enum px_err store_ondemand_set(struct store *st, const char *region,
			       const char *type, int64_t uusd_per_hour,
			       const char *source, struct px_error *err)
{
	static const char what[] = "set on-demand price";
	sqlite3_stmt *s;
	enum px_err r;
	int rc;

	if ((r = check_name(what, "region", region, err)) != PX_OK ||
	    (r = check_name(what, "type", type, err)) != PX_OK ||
	    (r = check_text(what, "source", source, err)) != PX_OK)
		return r;
	if (uusd_per_hour < 0)
		return px_errorf(err, PX_EINVAL,
				 "%s of '%s' in '%s': negative price %" PRId64,
				 what, type, region, uusd_per_hour);
	s = stmt_get(st, ST_ONDEMAND_SET, err);
	if (!s)
		return PX_EDB;
	bind_text(s, 1, region);
	bind_text(s, 2, type);
	sqlite3_bind_int64(s, 3, uusd_per_hour);
	bind_text(s, 4, source);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		r = store_fail(st, rc, err, "%s of '%s' in '%s'", what, type,
			       region);
	sqlite3_reset(s);
	return r;
}

enum px_err store_ondemand_get(struct store *st, const char *region,
			       const char *type, int64_t *ret_uusd_per_hour,
			       struct px_error *err)
{
	static const char what[] = "get on-demand price";
	sqlite3_stmt *s;
	enum px_err r;
	int rc;

	if ((r = check_name(what, "region", region, err)) != PX_OK ||
	    (r = check_name(what, "type", type, err)) != PX_OK)
		return r;
	s = stmt_get(st, ST_ONDEMAND_GET, err);
	if (!s)
		return PX_EDB;
	bind_text(s, 1, region);
	bind_text(s, 2, type);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*ret_uusd_per_hour = sqlite3_column_int64(s, 0);
	else if (rc == SQLITE_DONE)
		r = px_errorf(err, PX_ENOENT, "%s of '%s' in '%s': not known",
			      what, type, region);
	else
		r = store_fail(st, rc, err, "%s of '%s' in '%s'", what, type,
			       region);
	sqlite3_reset(s);
	return r;
}

/* ---- imports ---- */

static bool is_sha256_hex(const char *s)
{
	size_t i;

	for (i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[i] == '\0';
}

enum px_err store_import_add(struct store *st, const struct store_import *imp,
			     struct px_error *err)
{
	static const char what[] = "record import";
	sqlite3_stmt *s;
	enum px_err r;
	int rc;

	if ((r = check_text(what, "path", imp->path, err)) != PX_OK ||
	    (r = check_text(what, "sha256", imp->sha256, err)) != PX_OK)
		return r;
	if (!is_sha256_hex(imp->sha256))
		return px_errorf(err, PX_EINVAL,
				 "%s of '%s': field 'sha256' is not 64 "
				 "lower-case hex digits",
				 what, imp->path);
	if (imp->records < 0 || imp->inserted < 0 ||
	    imp->inserted > imp->records)
		return px_errorf(err, PX_EINVAL,
				 "%s of '%s': fields 'records' %" PRId64
				 " and 'inserted' %" PRId64 " do not fit",
				 what, imp->path, imp->records, imp->inserted);
	if (imp->records > 0 && imp->first_s > imp->last_s)
		return px_errorf(err, PX_EINVAL,
				 "%s of '%s': field 'first_s' after 'last_s'",
				 what, imp->path);
	s = stmt_get(st, ST_IMPORT_ADD, err);
	if (!s)
		return PX_EDB;
	bind_text(s, 1, imp->path);
	bind_text(s, 2, imp->sha256);
	sqlite3_bind_int64(s, 3, imp->records);
	sqlite3_bind_int64(s, 4, imp->inserted);
	if (imp->records > 0) {
		sqlite3_bind_int64(s, 5, imp->first_s);
		sqlite3_bind_int64(s, 6, imp->last_s);
	} else {
		sqlite3_bind_null(s, 5);
		sqlite3_bind_null(s, 6);
	}
	sqlite3_bind_int64(s, 7, imp->at_us);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		r = store_fail(st, rc, err, "%s of '%s'", what, imp->path);
	sqlite3_reset(s);
	return r;
}

enum px_err store_import_seen(struct store *st, const char *sha256,
			      bool *ret_seen, struct px_error *err)
{
	sqlite3_stmt *s;
	enum px_err r;
	int rc;

	r = check_text("look up import", "sha256", sha256, err);
	if (r != PX_OK)
		return r;
	s = stmt_get(st, ST_IMPORT_SEEN, err);
	if (!s)
		return PX_EDB;
	bind_text(s, 1, sha256);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		*ret_seen = rc == SQLITE_ROW;
	else
		r = store_fail(st, rc, err, "look up import '%.64s'", sha256);
	sqlite3_reset(s);
	return r;
}

/* ---- jobs, allocations, instances, events, ledger ---- */

/* Step a cached INSERT whose parameters are bound; *ret_id (may be NULL)
 * gets the new row id.  what is the whole error prefix. */
static enum px_err insert_step(struct store *st, sqlite3_stmt *s,
			       int64_t *ret_id, const char *what,
			       struct px_error *err)
{
	enum px_err r = PX_OK;
	int rc = sqlite3_step(s);

	if (rc == SQLITE_DONE) {
		if (ret_id)
			*ret_id = sqlite3_last_insert_rowid(st->db);
	} else {
		r = store_fail(st, rc, err, "%s", what);
	}
	sqlite3_reset(s);
	return r;
}

/* A world's name as the jobs table holds it: the store knows none. */
static bool world_name_ok(const char *w)
{
	size_t n = w ? strlen(w) : 0;

	if (n == 0 || n >= STORE_WORLD_MAX)
		return false;
	for (; *w; w++)
		if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789_", *w))
			return false;
	return true;
}

/* Column col's world name into buf (STORE_WORLD_MAX), "" when it is
 * none that store_job_add takes (a database another build wrote). */
static void world_name_read(sqlite3_stmt *s, int col, char *buf)
{
	const char *w = (const char *)sqlite3_column_text(s, col);

	buf[0] = 0;
	if (world_name_ok(w))
		snprintf(buf, STORE_WORLD_MAX, "%s", w);
}

enum px_err store_job_add(struct store *st, const char *name,
			  const char *spec_json, const char *world,
			  int64_t created_us, int64_t *ret_job_id,
			  struct px_error *err)
{
	char what[128];
	sqlite3_stmt *s;
	enum px_err r;

	if ((r = check_name("add job", "name", name, err)) != PX_OK)
		return r;
	snprintf(what, sizeof(what), "add job '%s'", name);
	if ((r = check_text(what, "spec", spec_json, err)) != PX_OK)
		return r;
	if (created_us < 0)
		return px_errorf(err, PX_EINVAL, "%s: negative created_us",
				 what);
	if (!world_name_ok(world))
		return px_errorf(err, PX_EINVAL, "%s: bad world '%.16s'", what,
				 world ? world : "(null)");
	s = stmt_get(st, ST_JOB_ADD, err);
	if (!s)
		return PX_EDB;
	bind_text(s, 1, name);
	bind_text(s, 2, spec_json);
	sqlite3_bind_int64(s, 3, created_us);
	bind_text(s, 4, world);
	return insert_step(st, s, ret_job_id, what, err);
}

enum px_err store_job_set_state(struct store *st, int64_t job_id,
				enum store_job_state state, int64_t at_us,
				struct px_error *err)
{
	sqlite3_stmt *s;
	enum px_err r = PX_OK;
	int rc;

	if ((int)state < 0 || state >= STORE_JOB_STATE_MAX)
		return px_errorf(err, PX_EINVAL,
				 "set state of job %" PRId64 ": bad state %d",
				 job_id, (int)state);
	if (at_us < 0)
		return px_errorf(err, PX_EINVAL,
				 "set state of job %" PRId64 ": negative time",
				 job_id);
	s = stmt_get(st, ST_JOB_SET_STATE, err);
	if (!s)
		return PX_EDB;
	sqlite3_bind_int64(s, 1, job_id);
	bind_text(s, 2, job_state_names[state]);
	sqlite3_bind_int64(s, 3, at_us);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE &&
	    sqlite3_extended_errcode(st->db) == SQLITE_CONSTRAINT_TRIGGER)
		r = px_errorf(err, PX_EINVAL, "set state of job %" PRId64
			      " to '%s': %s", job_id, job_state_names[state],
			      sqlite3_errmsg(st->db));
	else if (rc != SQLITE_DONE)
		r = store_fail(st, rc, err,
			       "set state of job %" PRId64 " to '%s'", job_id,
			       job_state_names[state]);
	else if (sqlite3_changes(st->db) == 0)
		r = PX_ENOENT; /* or final: told apart below */
	sqlite3_reset(s);
	if (r != PX_ENOENT)
		return r;

	s = stmt_get(st, ST_JOB_STATE, err);
	if (!s)
		return PX_EDB;
	sqlite3_bind_int64(s, 1, job_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		r = px_errorf(err, PX_EINVAL,
			      "set state of job %" PRId64 " to '%s': "
			      "state '%s' is final",
			      job_id, job_state_names[state],
			      (const char *)sqlite3_column_text(s, 0));
	else if (rc == SQLITE_DONE)
		r = px_errorf(err, PX_ENOENT,
			      "set state of job %" PRId64 ": no such job",
			      job_id);
	else
		r = store_fail(st, rc, err, "read state of job %" PRId64,
			       job_id);
	sqlite3_reset(s);
	return r;
}

enum px_err store_allocation_add(struct store *st, int64_t job_id,
				 int64_t market_id, const char *type,
				 enum store_tier tier, int64_t bid_uusd,
				 int count, int64_t at_us,
				 int64_t *ret_alloc_id, struct px_error *err)
{
	char what[128];
	sqlite3_stmt *s;
	enum px_err r;

	snprintf(what, sizeof(what),
		 "add allocation for job %" PRId64 " in market %" PRId64,
		 job_id, market_id);
	if (tier != STORE_TIER_RELIABLE && tier != STORE_TIER_TRANSIENT)
		return px_errorf(err, PX_EINVAL, "%s: bad tier %d", what,
				 (int)tier);
	if (bid_uusd < 0)
		return px_errorf(err, PX_EINVAL, "%s: negative bid %" PRId64,
				 what, bid_uusd);
	if (count <= 0)
		return px_errorf(err, PX_EINVAL, "%s: count %d not positive",
				 what, count);
	if (at_us < 0)
		return px_errorf(err, PX_EINVAL, "%s: negative time", what);
	if ((r = check_name(what, "type", type, err)) != PX_OK)
		return r;
	s = stmt_get(st, ST_ALLOC_ADD, err);
	if (!s)
		return PX_EDB;
	sqlite3_bind_int64(s, 1, job_id);
	if (market_id > 0)
		sqlite3_bind_int64(s, 2, market_id);
	else
		sqlite3_bind_null(s, 2);
	bind_text(s, 7, type);
	bind_text(s, 3, tier_names[tier]);
	sqlite3_bind_int64(s, 4, bid_uusd);
	sqlite3_bind_int(s, 5, count);
	sqlite3_bind_int64(s, 6, at_us);
	return insert_step(st, s, ret_alloc_id, what, err);
}

enum px_err store_instance_add(struct store *st, int64_t alloc_id,
			       const char *cloud_id, int64_t start_us,
			       uint64_t ctrl_id, int64_t *ret_instance_id,
			       struct px_error *err)
{
	char what[128];
	sqlite3_stmt *s;
	enum px_err r;

	snprintf(what, sizeof(what), "add instance of allocation %" PRId64,
		 alloc_id);
	if ((r = check_name(what, "cloud_id", cloud_id, err)) != PX_OK)
		return r;
	snprintf(what, sizeof(what),
		 "add instance '%s' of allocation %" PRId64, cloud_id,
		 alloc_id);
	if (start_us < 0)
		return px_errorf(err, PX_EINVAL, "%s: negative start", what);
	s = stmt_get(st, ST_INSTANCE_ADD, err);
	if (!s)
		return PX_EDB;
	sqlite3_bind_int64(s, 1, alloc_id);
	bind_text(s, 2, cloud_id);
	sqlite3_bind_int64(s, 3, start_us);
	if (ctrl_id > 0 && ctrl_id <= INT64_MAX)
		sqlite3_bind_int64(s, 4, (int64_t)ctrl_id);
	else
		sqlite3_bind_null(s, 4);
	return insert_step(st, s, ret_instance_id, what, err);
}

enum px_err store_instance_end(struct store *st, int64_t instance_id,
			       int64_t end_us, const char *reason,
			       struct px_error *err)
{
	char what[128];
	sqlite3_stmt *s;
	enum px_err r = PX_OK;
	int rc;

	snprintf(what, sizeof(what), "end instance %" PRId64, instance_id);
	if ((r = check_name(what, "reason", reason, err)) != PX_OK)
		return r;
	s = stmt_get(st, ST_INSTANCE_ENDED, err);
	if (!s)
		return PX_EDB;
	sqlite3_bind_int64(s, 1, instance_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_DONE)
		r = px_errorf(err, PX_ENOENT, "%s: no such instance", what);
	else if (rc != SQLITE_ROW)
		r = store_fail(st, rc, err, "%s", what);
	else if (sqlite3_column_type(s, 1) != SQLITE_NULL)
		r = px_errorf(err, PX_EEXIST, "%s: already ended at %" PRId64,
			      what, (int64_t)sqlite3_column_int64(s, 1));
	else if (end_us < sqlite3_column_int64(s, 0))
		r = px_errorf(err, PX_EINVAL,
			      "%s: end %" PRId64 " before start %" PRId64,
			      what, end_us,
			      (int64_t)sqlite3_column_int64(s, 0));
	sqlite3_reset(s);
	if (r != PX_OK)
		return r;

	/* The checks above are for the message; the WHERE clause and the
	 * CHECK constraints are what hold when another writer is racing. */
	s = stmt_get(st, ST_INSTANCE_END, err);
	if (!s)
		return PX_EDB;
	sqlite3_bind_int64(s, 1, instance_id);
	sqlite3_bind_int64(s, 2, end_us);
	bind_text(s, 3, reason);
	rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		r = store_fail(st, rc, err, "%s", what);
	else if (sqlite3_changes(st->db) == 0)
		r = px_errorf(err, PX_EEXIST, "%s: already ended", what);
	sqlite3_reset(s);
	return r;
}

enum px_err store_event_add(struct store *st, int64_t job_id,
			    int64_t instance_id, int64_t at_us,
			    const char *kind, const char *detail,
			    struct px_error *err)
{
	char what[128];
	sqlite3_stmt *s;
	enum px_err r;

	snprintf(what, sizeof(what),
		 "add event for job %" PRId64 " instance %" PRId64, job_id,
		 instance_id);
	if ((r = check_name(what, "kind", kind, err)) != PX_OK ||
	    (r = check_text(what, "detail", detail, err)) != PX_OK)
		return r;
	if (at_us < 0)
		return px_errorf(err, PX_EINVAL, "%s: negative time", what);
	s = stmt_get(st, ST_EVENT_ADD, err);
	if (!s)
		return PX_EDB;
	bind_opt_id(s, 1, job_id);
	bind_opt_id(s, 2, instance_id);
	sqlite3_bind_int64(s, 3, at_us);
	bind_text(s, 4, kind);
	bind_text(s, 5, detail);
	return insert_step(st, s, NULL, what, err);
}

enum px_err store_ledger_add(struct store *st, int64_t job_id,
			     int64_t instance_id, int64_t from_us,
			     int64_t to_us, int64_t amount_uusd,
			     const char *note, struct px_error *err)
{
	char what[128];
	sqlite3_stmt *s;
	enum px_err r;

	snprintf(what, sizeof(what),
		 "add ledger line for job %" PRId64 " instance %" PRId64,
		 job_id, instance_id);
	if ((r = check_text(what, "note", note, err)) != PX_OK)
		return r;
	if (amount_uusd < 0)
		return px_errorf(err, PX_EINVAL,
				 "%s: negative amount %" PRId64, what,
				 amount_uusd);
	if (from_us < 0 || to_us < from_us)
		return px_errorf(err, PX_EINVAL,
				 "%s: bad interval [%" PRId64 ", %" PRId64 ")",
				 what, from_us, to_us);
	s = stmt_get(st, ST_LEDGER_ADD, err);
	if (!s)
		return PX_EDB;
	bind_opt_id(s, 1, job_id);
	bind_opt_id(s, 2, instance_id);
	sqlite3_bind_int64(s, 3, from_us);
	sqlite3_bind_int64(s, 4, to_us);
	sqlite3_bind_int64(s, 5, amount_uusd);
	bind_text(s, 6, note);
	return insert_step(st, s, NULL, what, err);
}

enum px_err store_instance_bill_end(struct store *st, int64_t instance_id,
				    int64_t end_us, int64_t more_uusd,
				    struct px_error *err)
{
	static const int which[2] = { ST_LEDGER_EXTEND, ST_INSTANCE_END_AT };

	/* the tables' checks refuse a line or a row that would end before
	 * it started, or a line that would charge less than nothing */
	for (int k = 0; k < 2; k++) {
		sqlite3_stmt *s = stmt_get(st, which[k], err);
		int rc;

		if (!s)
			return PX_EDB;
		sqlite3_bind_int64(s, 1, instance_id);
		sqlite3_bind_int64(s, 2, end_us);
		if (k == 0)
			sqlite3_bind_int64(s, 3, more_uusd);
		rc = sqlite3_step(s);
		if (rc != SQLITE_DONE) {
			enum px_err e = store_fail(st, rc, err, "instance %"
						   PRId64 ": bill to its end "
						   "at %" PRId64 " us, %"
						   PRId64 " uUSD more",
						   instance_id, end_us,
						   more_uusd);

			sqlite3_reset(s);
			return e;
		}
		sqlite3_reset(s);
		if (k == 0 && sqlite3_changes(st->db) != 1)
			return px_errorf(err, PX_ENOENT, "instance %" PRId64
					 ": no ledger line", instance_id);
	}
	return PX_OK;
}

static enum px_err job_cost(struct store *st, enum stmt_id which,
			    int64_t job_id, int64_t *ret_uusd,
			    struct px_error *err)
{
	sqlite3_stmt *s = stmt_get(st, which, err);
	enum px_err r = PX_OK;
	int rc;

	if (!s)
		return PX_EDB;
	sqlite3_bind_int64(s, 1, job_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) == SQLITE_NULL)
		r = px_errorf(err, PX_ENOENT,
			      "cost of job %" PRId64 ": no such job", job_id);
	else if (rc == SQLITE_ROW)
		*ret_uusd = sqlite3_column_int64(s, 1);
	else
		r = store_fail(st, rc, err, "cost of job %" PRId64, job_id);
	sqlite3_reset(s);
	return r;
}

enum px_err store_job_cost(struct store *st, int64_t job_id,
			   int64_t *ret_uusd, struct px_error *err)
{
	return job_cost(st, ST_JOB_COST, job_id, ret_uusd, err);
}

enum px_err store_job_cost_ondemand(struct store *st, int64_t job_id,
				    int64_t *ret_uusd, struct px_error *err)
{
	return job_cost(st, ST_JOB_COST_OD, job_id, ret_uusd, err);
}

/* ---- reading jobs, events and ledger lines back ---- */

/* Borrow text column col of record (what, id) into *ret (valid until the
 * statement moves): at most STORE_TEXT_MAX bytes, "" for NULL. */
static enum px_err borrow_text(sqlite3_stmt *s, int col, const char **ret,
			       size_t *ret_len, const char *what,
			       const char *field, int64_t id,
			       struct px_error *err)
{
	const unsigned char *t = sqlite3_column_text(s, col);
	int n = sqlite3_column_bytes(s, col);

	if (!t && sqlite3_column_type(s, col) != SQLITE_NULL)
		return px_errorf(err, PX_ENOMEM, "read %s %" PRId64, what,
				 id);
	if (n > STORE_TEXT_MAX)
		return px_errorf(err, PX_ETOOBIG,
				 "read %s %" PRId64 ": field '%s' longer "
				 "than %d bytes",
				 what, id, field, STORE_TEXT_MAX);
	*ret = t ? (const char *)t : "";
	*ret_len = t ? (size_t)n : 0;
	return PX_OK;
}

/* "job 12" or "no job", for messages about a job_id that may be none. */
static const char *job_label(int64_t job_id, char *buf, size_t len)
{
	if (job_id > 0)
		snprintf(buf, len, "job %" PRId64, job_id);
	else
		snprintf(buf, len, "no job");
	return buf;
}

/* Column col as an id where NULL means none (0). */
static int64_t col_opt_id(sqlite3_stmt *s, int col)
{
	return sqlite3_column_type(s, col) == SQLITE_NULL ?
		       0 :
		       sqlite3_column_int64(s, col);
}

enum px_err store_jobs_each(struct store *st,
			    const struct store_job_filter *filter,
			    store_job_fn fn, void *ctx, struct px_error *err)
{
	static const char sql[] =
		"SELECT id, name, state, created_us, updated_us, spec, world "
		"FROM jobs WHERE (?1 IS NULL OR id = ?1) "
		"AND (?2 IS NULL OR name = ?2) ORDER BY id";
	char state[STORE_NAME_MAX];
	struct store_job j;
	sqlite3_stmt *s = NULL;
	enum px_err r = PX_OK;
	int rc, i;

	if (filter && filter->name) {
		size_t n = strnlen(filter->name, STORE_NAME_MAX);

		if (n == 0 || n >= STORE_NAME_MAX)
			return PX_OK; /* no job has such a name */
	}
	/* Not cached: fn may re-enter the store (even this function). */
	rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, err, "list jobs");
	if (filter && filter->id > 0)
		sqlite3_bind_int64(s, 1, filter->id);
	if (filter && filter->name)
		bind_text(s, 2, filter->name);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		memset(&j, 0, sizeof(j));
		j.id = sqlite3_column_int64(s, 0);
		r = copy_col(s, 1, j.name, "job", "name", j.id, err);
		if (r == PX_OK)
			r = copy_col(s, 2, state, "job", "state", j.id, err);
		if (r != PX_OK)
			goto out_finalize;
		for (i = 0; i < STORE_JOB_STATE_MAX; i++)
			if (strcmp(state, job_state_names[i]) == 0)
				break;
		if (i == STORE_JOB_STATE_MAX) {
			r = px_errorf(err, PX_EINVAL,
				      "read job %" PRId64 ": field 'state' "
				      "'%.16s' unknown",
				      j.id, state);
			goto out_finalize;
		}
		j.state = (enum store_job_state)i;
		j.created_us = sqlite3_column_int64(s, 3);
		j.updated_us = sqlite3_column_int64(s, 4);
		world_name_read(s, 6, j.world);
		r = borrow_text(s, 5, &j.spec_json, &j.spec_len, "job",
				"spec", j.id, err);
		if (r == PX_OK)
			r = fn(&j, ctx);
		if (r != PX_OK)
			goto out_finalize;
	}
	if (rc != SQLITE_DONE)
		r = store_fail(st, rc, err, "list jobs");
out_finalize:
	sqlite3_finalize(s);
	return r;
}


/* One events row (id, job_id, instance_id, at_us, kind, detail) to fn;
 * the detail is borrowed for the call. */
static enum px_err event_row(sqlite3_stmt *s, store_event_fn fn, void *ctx,
			     struct px_error *err)
{
	struct store_event ev;
	enum px_err r;

	memset(&ev, 0, sizeof(ev));
	ev.id = sqlite3_column_int64(s, 0);
	ev.job_id = col_opt_id(s, 1);
	ev.instance_id = col_opt_id(s, 2);
	ev.at_us = sqlite3_column_int64(s, 3);
	r = copy_col(s, 4, ev.kind, "event", "kind", ev.id, err);
	if (r == PX_OK)
		r = borrow_text(s, 5, &ev.detail, &ev.detail_len, "event",
				"detail", ev.id, err);
	return r == PX_OK ? fn(&ev, ctx) : r;
}

enum px_err store_events_each(struct store *st, int64_t job_id,
			      store_event_fn fn, void *ctx,
			      struct px_error *err)
{
	static const char sql[] =
		"SELECT id, job_id, instance_id, at_us, kind, detail "
		"FROM events WHERE job_id IS ?1 ORDER BY at_us, id";
	sqlite3_stmt *s = NULL;
	enum px_err r = PX_OK;
	char who[32];
	int rc;

	job_label(job_id, who, sizeof(who));
	/* Not cached: fn may re-enter the store (even this function). */
	rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, err, "list events of %s", who);
	bind_opt_id(s, 1, job_id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		r = event_row(s, fn, ctx, err);
		if (r != PX_OK)
			goto out_finalize;
	}
	if (rc != SQLITE_DONE)
		r = store_fail(st, rc, err, "list events of %s", who);
out_finalize:
	sqlite3_finalize(s);
	return r;
}

/* Events of job_id of one kind: their count, or (count NULL) the last. */
static enum px_err event_kind_query(struct store *st, int64_t job_id,
				    const char *kind, int64_t *ret_count,
				    store_event_fn fn, void *ctx,
				    struct px_error *err)
{
	static const char count_sql[] =
		"SELECT count(*) FROM events WHERE job_id IS ?1 AND kind = ?2";
	static const char last_sql[] =
		"SELECT id, job_id, instance_id, at_us, kind, detail "
		"FROM events WHERE job_id IS ?1 AND kind = ?2 "
		"ORDER BY at_us DESC, id DESC LIMIT 1";
	sqlite3_stmt *s = NULL;
	enum px_err r = PX_OK;
	char who[32];
	int rc;

	job_label(job_id, who, sizeof(who));
	if (!kind || !*kind || strlen(kind) >= STORE_NAME_MAX)
		return px_errorf(err, PX_EINVAL, "events of %s: kind: 1 to "
				 "%d bytes", who, STORE_NAME_MAX - 1);
	/* Not cached: fn may re-enter the store (even this function). */
	rc = sqlite3_prepare_v2(st->db, ret_count ? count_sql : last_sql, -1,
				&s, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, err, "%s '%s' events of %s",
				  ret_count ? "count" : "last", kind, who);
	bind_opt_id(s, 1, job_id);
	sqlite3_bind_text(s, 2, kind, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW && ret_count) {
		*ret_count = sqlite3_column_int64(s, 0);
	} else if (rc == SQLITE_ROW) {
		r = event_row(s, fn, ctx, err);
	} else if (rc != SQLITE_DONE) {
		r = store_fail(st, rc, err, "%s '%s' events of %s",
			       ret_count ? "count" : "last", kind, who);
	}
	sqlite3_finalize(s);
	return r;
}

enum px_err store_event_count(struct store *st, int64_t job_id,
			      const char *kind, int64_t *ret_count,
			      struct px_error *err)
{
	int64_t n = 0;
	enum px_err r = event_kind_query(st, job_id, kind, &n, NULL, NULL,
					 err);

	if (r == PX_OK)
		*ret_count = n;
	return r;
}

enum px_err store_event_last(struct store *st, int64_t job_id,
			     const char *kind, store_event_fn fn, void *ctx,
			     struct px_error *err)
{
	return event_kind_query(st, job_id, kind, NULL, fn, ctx, err);
}

enum px_err store_ledger_each(struct store *st, int64_t job_id,
			      store_ledger_fn fn, void *ctx,
			      struct px_error *err)
{
	static const char sql[] =
		"SELECT id, job_id, instance_id, from_us, to_us, amount_uusd, "
		"note FROM ledger WHERE job_id IS ?1 ORDER BY from_us, id";
	struct store_ledger_line l;
	sqlite3_stmt *s = NULL;
	enum px_err r = PX_OK;
	char who[32];
	int rc;

	job_label(job_id, who, sizeof(who));
	/* Not cached: fn may re-enter the store (even this function). */
	rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, err, "list ledger of %s", who);
	bind_opt_id(s, 1, job_id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		memset(&l, 0, sizeof(l));
		l.id = sqlite3_column_int64(s, 0);
		l.job_id = col_opt_id(s, 1);
		l.instance_id = col_opt_id(s, 2);
		l.from_us = sqlite3_column_int64(s, 3);
		l.to_us = sqlite3_column_int64(s, 4);
		l.amount_uusd = sqlite3_column_int64(s, 5);
		r = borrow_text(s, 6, &l.note, &l.note_len,
				"ledger line", "note", l.id, err);
		if (r == PX_OK)
			r = fn(&l, ctx);
		if (r != PX_OK)
			goto out_finalize;
	}
	if (rc != SQLITE_DONE)
		r = store_fail(st, rc, err, "list ledger of %s", who);
out_finalize:
	sqlite3_finalize(s);
	return r;
}

enum px_err store_open_instances_each(struct store *st, int64_t job_id,
				      store_open_instance_fn fn, void *ctx,
				      struct px_error *err)
{
	static const char sql[] =
		"SELECT i.id, i.ctrl_id, i.cloud_id, i.start_us, "
		"coalesce(m.zone, ''), a.type, a.tier, a.bid_uusd "
		"FROM instances i JOIN allocations a ON a.id = i.alloc_id "
		"LEFT JOIN markets m ON m.id = a.market_id "
		"WHERE a.job_id = ?1 AND i.end_us IS NULL ORDER BY i.id";
	struct store_open_instance in;
	sqlite3_stmt *s = NULL;
	enum px_err r = PX_OK;
	char who[32];
	int rc;

	job_label(job_id, who, sizeof(who));
	rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, err, "list open instances of %s",
				  who);
	sqlite3_bind_int64(s, 1, job_id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const unsigned char *t;

		memset(&in, 0, sizeof(in));
		in.id = sqlite3_column_int64(s, 0);
		in.ctrl_id = (uint64_t)sqlite3_column_int64(s, 1);
		t = sqlite3_column_text(s, 2);
		snprintf(in.cloud_id, sizeof in.cloud_id, "%s",
			 t ? (const char *)t : "");
		in.start_us = sqlite3_column_int64(s, 3);
		t = sqlite3_column_text(s, 4);
		snprintf(in.zone, sizeof in.zone, "%s",
			 t ? (const char *)t : "");
		t = sqlite3_column_text(s, 5);
		snprintf(in.type, sizeof in.type, "%s",
			 t ? (const char *)t : "");
		t = sqlite3_column_text(s, 6);
		in.tier = t && !strcmp((const char *)t, "reliable") ?
			  STORE_TIER_RELIABLE : STORE_TIER_TRANSIENT;
		in.bid_uusd = sqlite3_column_int64(s, 7);
		r = fn(&in, ctx);
		if (r != PX_OK)
			goto out_finalize;
	}
	if (rc != SQLITE_DONE)
		r = store_fail(st, rc, err, "list open instances of %s", who);
out_finalize:
	sqlite3_finalize(s);
	return r;
}

/* ---- the daemon and its EC2 launch requests ---- */

static const char *const ec2_state_names[] = {
	"sent", "launched", "rejected", "closed",
};

static bool is_ec2_state(const char *s)
{
	for (size_t i = 0; i < sizeof ec2_state_names /
			       sizeof ec2_state_names[0]; i++)
		if (!strcmp(s, ec2_state_names[i]))
			return true;
	return false;
}

enum px_err store_daemon_id(struct store *st, char *buf, size_t len,
			    struct px_error *err)
{
	static const char hex[] = "0123456789abcdef";
	char fresh[STORE_DAEMON_ID_LEN + 1];
	uint8_t rnd[STORE_DAEMON_ID_LEN / 2];
	const unsigned char *t;
	enum px_err r = PX_OK;
	sqlite3_stmt *s;
	int rc;

	if (len < STORE_DAEMON_ID_LEN + 1)
		return px_errorf(err, PX_EINVAL, "daemon id: a buffer of %zu "
				 "bytes; it needs %d", len,
				 STORE_DAEMON_ID_LEN + 1);
	if (st->daemon_id[0]) {
		memcpy(buf, st->daemon_id, sizeof st->daemon_id);
		return PX_OK;
	}
	/* twice at most: read; if none, add ours (a racing process's may
	 * win: ON CONFLICT DO NOTHING) and read what is there */
	for (int pass = 0; pass < 2; pass++) {
		s = stmt_get(st, ST_DAEMON_GET, err);
		if (!s)
			return PX_EDB;
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			t = sqlite3_column_text(s, 0);
			if (!t || strlen((const char *)t) !=
				  STORE_DAEMON_ID_LEN)
				r = px_errorf(err, PX_EINVAL, "daemon id: "
					      "stored value is not %d hex "
					      "digits", STORE_DAEMON_ID_LEN);
			else
				memcpy(buf, t, STORE_DAEMON_ID_LEN + 1);
		} else if (rc != SQLITE_DONE) {
			r = store_fail(st, rc, err, "read daemon id");
		}
		sqlite3_reset(s);
		if (r != PX_OK)
			return r;
		if (rc == SQLITE_ROW)
			break;
		if (pass == 1)
			return px_errorf(err, PX_EDB, "daemon id: none stored "
					 "after adding one");
		if (RAND_bytes(rnd, sizeof rnd) != 1)
			return px_errorf(err, PX_EIO, "daemon id: RAND_bytes "
					 "failed");
		for (size_t i = 0; i < sizeof rnd; i++) {
			fresh[2 * i] = hex[rnd[i] >> 4];
			fresh[2 * i + 1] = hex[rnd[i] & 15];
		}
		fresh[STORE_DAEMON_ID_LEN] = '\0';
		s = stmt_get(st, ST_DAEMON_ADD, err);
		if (!s)
			return PX_EDB;
		bind_text(s, 1, fresh);
		sqlite3_bind_int64(s, 2, px_now_wall_us());
		r = insert_step(st, s, NULL, "add daemon id", err);
		if (r != PX_OK)
			return r;
	}
	/* kept once committed: a caller's transaction that added it may
	 * still roll it back */
	if (!st->in_tx)
		memcpy(st->daemon_id, buf, sizeof st->daemon_id);
	return PX_OK;
}

/* A ClientToken or an instance id: 1 to max-1 printable ASCII bytes,
 * no blank. */
static enum px_err check_token(const char *what, const char *field,
			       const char *s, size_t max,
			       struct px_error *err)
{
	size_t n;

	if (!s)
		return px_errorf(err, PX_EINVAL, "%s: field '%s' missing",
				 what, field);
	n = strnlen(s, max);
	if (n == 0 || n >= max)
		return px_errorf(err, PX_EINVAL, "%s: field '%s' is %s; it "
				 "takes 1 to %zu bytes", what, field,
				 n ? "too long" : "empty", max - 1);
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return px_errorf(err, PX_EINVAL, "%s: field '%s': "
					 "byte %zu is not printable ASCII",
					 what, field, i);
	return PX_OK;
}

enum px_err store_ec2_request_add(struct store *st,
				  const struct store_ec2_request *r,
				  struct px_error *err)
{
	char what[160];
	sqlite3_stmt *s;
	enum px_err e;

	if ((e = check_token("add ec2 request", "client_token",
			     r->client_token, STORE_TOKEN_MAX, err)) != PX_OK)
		return e;
	snprintf(what, sizeof what, "add ec2 request '%s' of job %" PRId64
		 " (controller id %" PRIu64 ")", r->client_token, r->job_id,
		 r->ctrl_id);
	if (r->job_id <= 0)
		return px_errorf(err, PX_EINVAL, "%s: field 'job_id' not "
				 "positive", what);
	if (r->ctrl_id == 0 || r->ctrl_id > INT64_MAX)
		return px_errorf(err, PX_EINVAL, "%s: field 'ctrl_id' outside "
				 "1..%" PRId64, what, INT64_MAX);
	if (strnlen(r->zone, STORE_NAME_MAX) >= STORE_NAME_MAX)
		return px_errorf(err, PX_EINVAL, "%s: field 'zone' longer "
				 "than %d bytes", what, STORE_NAME_MAX - 1);
	if ((e = check_name(what, "type", r->type, err)) != PX_OK)
		return e;
	if (r->bid_uusd < 0)
		return px_errorf(err, PX_EINVAL, "%s: field 'bid_uusd' "
				 "negative", what);
	if (r->created_us < 0)
		return px_errorf(err, PX_EINVAL, "%s: field 'created_us' "
				 "negative", what);
	s = stmt_get(st, ST_EC2_REQ_ADD, err);
	if (!s)
		return PX_EDB;
	bind_text(s, 1, r->client_token);
	sqlite3_bind_int64(s, 2, r->job_id);
	sqlite3_bind_int64(s, 3, (int64_t)r->ctrl_id);
	bind_text(s, 4, r->zone);
	bind_text(s, 5, r->type);
	sqlite3_bind_int(s, 6, r->reliable ? 1 : 0);
	sqlite3_bind_int64(s, 7, r->bid_uusd);
	sqlite3_bind_int64(s, 8, r->created_us);
	return insert_step(st, s, NULL, what, err);
}

enum px_err store_ec2_request_set(struct store *st, const char *client_token,
				  const char *state, const char *instance_id,
				  int64_t at_us, struct px_error *err)
{
	char what[160], was[STORE_EC2_STATE_MAX] = "", had[STORE_CLOUD_ID_MAX];
	const unsigned char *t;
	enum px_err r = PX_OK;
	sqlite3_stmt *s;
	int rc, xrc;

	if ((r = check_token("set ec2 request", "client_token", client_token,
			     STORE_TOKEN_MAX, err)) != PX_OK)
		return r;
	snprintf(what, sizeof what, "set ec2 request '%s' to '%.15s'",
		 client_token, state ? state : "(null)");
	if (!state || !is_ec2_state(state))
		return px_errorf(err, PX_EINVAL, "%s: not a state (sent, "
				 "launched, rejected, closed)", what);
	if (instance_id && (r = check_token(what, "instance_id", instance_id,
					    STORE_CLOUD_ID_MAX, err)) != PX_OK)
		return r;
	if (at_us < 0)
		return px_errorf(err, PX_EINVAL, "%s: negative time", what);
	s = stmt_get(st, ST_EC2_REQ_SET, err);
	if (!s)
		return PX_EDB;
	bind_text(s, 1, client_token);
	bind_text(s, 2, state);
	if (instance_id)
		bind_text(s, 3, instance_id);
	else
		sqlite3_bind_null(s, 3);
	sqlite3_bind_int64(s, 4, at_us);
	rc = sqlite3_step(s);
	xrc = sqlite3_extended_errcode(st->db);
	if (rc == SQLITE_DONE && sqlite3_changes(st->db) == 0)
		r = px_errorf(err, PX_ENOENT, "%s: no such request", what);
	else if (rc != SQLITE_DONE && xrc != SQLITE_CONSTRAINT_TRIGGER &&
		 xrc != SQLITE_CONSTRAINT_CHECK)
		r = store_fail(st, rc, err, "%s", what);
	else if (rc != SQLITE_DONE)
		r = PX_EINVAL; /* told below, with what the row holds */
	sqlite3_reset(s);
	if (r != PX_EINVAL)
		return r;

	s = stmt_get(st, ST_EC2_REQ_GET, err);
	if (!s)
		return PX_EDB;
	bind_text(s, 1, client_token);
	had[0] = '\0';
	if (sqlite3_step(s) == SQLITE_ROW) {
		t = sqlite3_column_text(s, 0);
		snprintf(was, sizeof was, "%s", t ? (const char *)t : "");
		t = sqlite3_column_text(s, 1);
		snprintf(had, sizeof had, "%s", t ? (const char *)t : "");
	}
	sqlite3_reset(s);
	if (!strcmp(state, "launched") && !had[0] && !instance_id)
		return px_errorf(err, PX_EINVAL, "%s: a launched request "
				 "needs its instance id", what);
	if (instance_id && had[0] && strcmp(had, instance_id))
		return px_errorf(err, PX_EINVAL, "%s: its instance is '%s', "
				 "not '%s'", what, had, instance_id);
	return px_errorf(err, PX_EINVAL, "%s: illegal from '%s' (sent -> "
			 "launched, rejected or closed; launched -> closed)",
			 what, was);
}

/* Copy text column col into dst (size bytes with the NUL); "" for NULL;
 * PX_EINVAL naming the request and field when it does not fit. */
static enum px_err copy_text(sqlite3_stmt *s, int col, char *dst,
			     size_t size, const char *token,
			     const char *field, struct px_error *err)
{
	const unsigned char *t = sqlite3_column_text(s, col);
	size_t n = (size_t)sqlite3_column_bytes(s, col);

	if (!t && sqlite3_column_type(s, col) != SQLITE_NULL)
		return px_errorf(err, PX_ENOMEM, "read ec2 request '%.64s'",
				 token);
	if (!t)
		n = 0;
	if (n >= size)
		return px_errorf(err, PX_EINVAL, "read ec2 request '%.64s': "
				 "field '%s' longer than %zu bytes", token,
				 field, size - 1);
	if (n)
		memcpy(dst, t, n);
	dst[n] = '\0';
	return PX_OK;
}

enum px_err store_ec2_requests_each(struct store *st, int64_t job_id,
				    bool only_open, store_ec2_request_fn fn,
				    void *ctx, struct px_error *err)
{
	static const char sql[] =
		"SELECT client_token, job_id, ctrl_id, zone, type, reliable, "
		"bid_uusd, created_us, instance_id, state, updated_us "
		"FROM ec2_requests WHERE (?1 < 0 OR job_id = ?1) AND "
		"(?2 = 0 OR state IN ('sent', 'launched')) "
		"ORDER BY job_id, ctrl_id";
	struct store_ec2_request q;
	sqlite3_stmt *s = NULL;
	enum px_err r = PX_OK;
	char who[32];
	int rc;

	if (job_id < 0)
		snprintf(who, sizeof who, "every job");
	else
		job_label(job_id, who, sizeof who);
	rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return store_fail(st, rc, err, "list ec2 requests of %s",
				  who);
	sqlite3_bind_int64(s, 1, job_id);
	sqlite3_bind_int(s, 2, only_open ? 1 : 0);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		memset(&q, 0, sizeof q);
		r = copy_text(s, 0, q.client_token, sizeof q.client_token,
			      "?", "client_token", err);
		if (r == PX_OK)
			r = copy_text(s, 3, q.zone, sizeof q.zone,
				      q.client_token, "zone", err);
		if (r == PX_OK)
			r = copy_text(s, 4, q.type, sizeof q.type,
				      q.client_token, "type", err);
		if (r == PX_OK)
			r = copy_text(s, 8, q.instance_id,
				      sizeof q.instance_id, q.client_token,
				      "instance_id", err);
		if (r == PX_OK)
			r = copy_text(s, 9, q.state, sizeof q.state,
				      q.client_token, "state", err);
		if (r != PX_OK)
			goto out_finalize;
		q.job_id = sqlite3_column_int64(s, 1);
		q.ctrl_id = (uint64_t)sqlite3_column_int64(s, 2);
		q.reliable = sqlite3_column_int(s, 5) != 0;
		q.bid_uusd = sqlite3_column_int64(s, 6);
		q.created_us = sqlite3_column_int64(s, 7);
		q.updated_us = sqlite3_column_int64(s, 10);
		r = fn(&q, ctx);
		if (r != PX_OK)
			goto out_finalize;
	}
	if (rc != SQLITE_DONE)
		r = store_fail(st, rc, err, "list ec2 requests of %s", who);
out_finalize:
	sqlite3_finalize(s);
	return r;
}

enum px_err store_job_max_ctrl_id(struct store *st, int64_t job_id,
				  uint64_t *ret, struct px_error *err)
{
	sqlite3_stmt *s = stmt_get(st, ST_JOB_MAX_CTRL, err);
	enum px_err r = PX_OK;
	int rc;

	if (!s)
		return PX_EDB;
	sqlite3_bind_int64(s, 1, job_id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*ret = (uint64_t)sqlite3_column_int64(s, 0);
	else
		r = store_fail(st, rc, err, "highest controller id of job %"
			       PRId64, job_id);
	sqlite3_reset(s);
	return r;
}
