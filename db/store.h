/* store.h -- the SQLite store: markets, prices, on-demand prices, jobs,
 * instances, allocations (bids), events, the cost ledger, the daemon's id
 * and its EC2 launch requests.
 *
 * One struct store wraps one sqlite3 connection with WAL, a busy timeout,
 * foreign keys on and prepared statements kept for the hot paths.  The
 * schema is migrated on open, keyed on PRAGMA user_version.  Every state
 * change is one transaction: single calls that change state open their own
 * transaction unless the caller holds one (store_begin ... store_commit),
 * so a bulk import can be one transaction.  Money is int64 micro-USD, time
 * is int64 Unix seconds (prices, as in the data) or microseconds (suffix _us).
 * The schema is documented in docs/schema.md.
 *
 * This module does not log.  Errors come back as enum px_err with detail
 * (the SQL error text and the statement's purpose) in struct px_error,
 * e.g. "insert price for market 3 at 1456348253: database is locked".
 * SQLite failures are PX_EDB, except constraint failures, which say what
 * was wrong with the caller's data: a missing referenced row (job, market,
 * allocation, instance) is PX_ENOENT, a CHECK/NOT NULL failure PX_EINVAL,
 * a UNIQUE failure PX_EEXIST; PX_ENOMEM is out of memory.  Arguments are
 * checked before SQL runs where we can (PX_EINVAL naming the field).
 * Strings passed in are copied; nothing returned is borrowed beyond the
 * callback that receives it.  Not thread-safe: one struct store per thread.
 */
#ifndef PX_STORE_H
#define PX_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/px.h"

#define STORE_SCHEMA_VERSION 3
#define STORE_NAME_MAX 64 /* longest region/zone/type/product we accept */
#define STORE_WORLD_MAX 16 /* a job's world's name, with its NUL (the agent's
			    * WORLD_NAME_MAX) */
#define STORE_TEXT_MAX (1024 * 1024) /* longest spec/detail/note/path/source */

struct store;

/* Open (creating if needed) the database at path (":memory:" allowed) and
 * migrate it to STORE_SCHEMA_VERSION, each step in its own transaction.  A
 * database newer than this build is refused with PX_EUNSUPP, one that is
 * not ours (tables but no version, or another application id) with
 * PX_EINVAL, a file that is not SQLite with PX_EDB; a refused file is not
 * changed.  A file database is put in WAL mode (path-wal and path-shm live
 * beside it).  On success *ret is the caller's, freed with store_close();
 * on failure *ret is untouched. */
enum px_err store_open(const char *path, struct store **ret,
		       struct px_error *err);
/* Open an existing store for reading only (SQLITE_OPEN_READONLY), e.g. for
 * a command that shows what the daemon stored.  Nothing is ever created,
 * migrated or configured: a missing file is PX_ENOENT ("database '...': no
 * such file"); a file refused by store_open is refused alike (newer:
 * PX_EUNSUPP; not ours, including an empty SQLite file: PX_EINVAL; not
 * SQLite: PX_EDB); a Proteus store at an older schema version is
 * PX_EUNSUPP (store_open migrates it).  Every call that writes fails on
 * such a store with PX_EDB ("...: attempt to write a readonly database")
 * and changes nothing; store_begin is PX_EINVAL (it would take the write
 * lock).  A store in WAL mode can be read while another
 * process writes it.  *ret as for store_open. */
enum px_err store_open_readonly(const char *path, struct store **ret,
				struct px_error *err);
/* Close; NULL is a no-op.  Rolls back an open transaction. */
void store_close(struct store *st);
/* The schema version stored in the file (PRAGMA user_version); -1 when it
 * cannot be read. */
int store_schema_version(struct store *st);

/* Row counts for a status display. */
struct store_counts {
	int64_t markets; /* rows in markets */
	int64_t prices;  /* rows in prices (spot-price records) */
	int64_t jobs;    /* rows in jobs, in any state */
};
/* Count the rows of markets, prices and jobs in one read transaction.  The
 * count of prices walks that table's b-tree: about 5 ms per million
 * records with the file in the page cache (docs/proteusd.md), so callers
 * should not poll it in a tight loop.  *ret is written only on success. */
enum px_err store_counts(struct store *st, struct store_counts *ret,
			 struct px_error *err);

/* Explicit transactions (not nested: store_begin inside one is PX_EINVAL).
 * store_begin takes the write lock at once (BEGIN IMMEDIATE), waiting up to
 * the busy timeout.  store_commit outside a transaction is PX_EINVAL; when
 * the commit itself fails the transaction is rolled back.  store_rollback
 * never fails and is a no-op outside a transaction.  If SQLite rolls a
 * transaction back by itself (disk full, I/O error), the failing call says
 * so and the store is back in autocommit mode. */
enum px_err store_begin(struct store *st, struct px_error *err);
enum px_err store_commit(struct store *st, struct px_error *err);
void store_rollback(struct store *st);
/* Whether a transaction is open (store_begin without commit/rollback). */
bool store_in_transaction(struct store *st);

/* ---- markets and prices ---- */

struct store_market {
	int64_t id;
	char region[STORE_NAME_MAX];
	char zone[STORE_NAME_MAX];    /* availability zone, e.g. us-east-1a */
	char type[STORE_NAME_MAX];    /* instance type, e.g. c4.xlarge */
	char product[STORE_NAME_MAX]; /* e.g. Linux/UNIX */
};

/* Id of market (region, zone, type, product), created when new.  Names are
 * 1 to STORE_NAME_MAX-1 bytes (PX_EINVAL naming the field otherwise).  A
 * bounded in-memory cache of recent markets makes repeat calls cheap; it is
 * dropped on rollback, so it never hands out an id that was rolled back. */
enum px_err store_market_get_or_add(struct store *st, const char *region,
				    const char *zone, const char *type,
				    const char *product, int64_t *ret_id,
				    struct px_error *err);

/* Add one price record; a record with the same (market, t_s) and the same
 * price already there is left alone and *ret_inserted (may be NULL) is
 * false; one with another price is PX_EEXIST ("price X at T conflicts
 * with Y already stored ...") and the stored one stays.  A negative price
 * is PX_EINVAL, an unknown market PX_ENOENT. */
enum px_err store_price_add(struct store *st, int64_t market_id, int64_t t_s,
			    int64_t price_uusd, bool *ret_inserted,
			    struct px_error *err);

/* Filter for market listings: NULL fields match everything. */
struct store_market_filter {
	const char *region;
	const char *zone;
	const char *type;
	const char *product;
};

/* Call fn for each market matching filter (NULL: all), ordered by region,
 * type, zone, product.  fn returning non-PX_OK stops the walk and is
 * returned (err untouched).  m is valid during the call only.  fn may call
 * other store functions; rows it adds may or may not be seen by the walk. */
typedef enum px_err (*store_market_fn)(const struct store_market *m,
				       void *ctx);
enum px_err store_markets_each(struct store *st,
			       const struct store_market_filter *filter,
			       store_market_fn fn, void *ctx,
			       struct px_error *err);

/* Call fn for each price of market_id with from_s <= t_s < to_s in
 * ascending time (INT64_MIN/INT64_MAX for open ends; to_s == INT64_MAX
 * includes a record at INT64_MAX).  Stopping and re-entry as for
 * store_markets_each.  An unknown market simply has no prices. */
typedef enum px_err (*store_price_fn)(int64_t t_s, int64_t price_uusd,
				      void *ctx);
enum px_err store_prices_each(struct store *st, int64_t market_id,
			      int64_t from_s, int64_t to_s, store_price_fn fn,
			      void *ctx, struct px_error *err);

/* The price in force at t_s: the last record with time <= t_s.  PX_ENOENT
 * (no error text needed) when the market has no record at or before t_s. */
enum px_err store_price_at(struct store *st, int64_t market_id, int64_t t_s,
			   int64_t *ret_price_uusd, int64_t *ret_since_s,
			   struct px_error *err);

/* First and last record time and the record count of a market.  A market
 * without records is PX_ENOENT (no error text needed); outputs may be NULL.
 */
enum px_err store_price_range(struct store *st, int64_t market_id,
			      int64_t *ret_first_s, int64_t *ret_last_s,
			      int64_t *ret_count, struct px_error *err);

/* ---- on-demand prices ---- */

/* Set (insert or replace) the on-demand price of type in region.  source
 * says where the price came from (may be "", not NULL). */
enum px_err store_ondemand_set(struct store *st, const char *region,
			       const char *type, int64_t uusd_per_hour,
			       const char *source, struct px_error *err);
/* PX_ENOENT (no error text needed) when not known. */
enum px_err store_ondemand_get(struct store *st, const char *region,
			       const char *type, int64_t *ret_uusd_per_hour,
			       struct px_error *err);

/* ---- imports (provenance of trace files) ---- */

struct store_import {
	const char *path;     /* as given by the user */
	const char *sha256;   /* hex digest of the file's bytes */
	int64_t records;      /* records read */
	int64_t inserted;     /* records new to the store */
	int64_t first_s;      /* earliest record time (ignored if records 0) */
	int64_t last_s;       /* latest record time (ignored if records 0) */
	int64_t at_us;        /* wall time of the import */
};
/* Record one import.  sha256 must be 64 lower-case hex digits, inserted <=
 * records, first_s <= last_s when records > 0 (PX_EINVAL otherwise). */
enum px_err store_import_add(struct store *st, const struct store_import *imp,
			     struct px_error *err);
/* Whether a file with this sha256 was imported before. */
enum px_err store_import_seen(struct store *st, const char *sha256,
			      bool *ret_seen, struct px_error *err);

/* ---- jobs, instances, allocations, events, cost ledger ---- */

enum store_job_state {
	STORE_JOB_QUEUED = 0,
	STORE_JOB_RUNNING,
	STORE_JOB_DONE,
	STORE_JOB_FAILED,
	STORE_JOB_CANCELLED,
	STORE_JOB_STATE_MAX
};
/* "queued", "running", "done", "failed", "cancelled" (as stored in the
 * jobs table); "unknown" for other values.  The legal changes (queued to
 * running, failed or cancelled; running to done, failed or cancelled) are
 * enforced by the schema itself (a trigger; docs/schema.md). */
const char *store_job_state_name(enum store_job_state s);

/* Add a job in state queued; name is 1 to STORE_NAME_MAX-1 bytes;
 * spec_json is the job spec as submitted (kept verbatim; it must be valid
 * JSON, PX_EINVAL otherwise); world is the name of the job's world
 * ("local"; the store knows no world: 1 to STORE_WORLD_MAX-1 bytes of
 * [a-z0-9_], PX_EINVAL otherwise).
 *
 * store_job_set_state: done, failed and cancelled are final: changing the
 * state of such a job is PX_EINVAL; an unknown job is PX_ENOENT. */
enum px_err store_job_add(struct store *st, const char *name,
			  const char *spec_json, const char *world,
			  int64_t created_us, int64_t *ret_job_id,
			  struct px_error *err);
enum px_err store_job_set_state(struct store *st, int64_t job_id,
				enum store_job_state state, int64_t at_us,
				struct px_error *err);

enum store_tier { STORE_TIER_RELIABLE = 0, STORE_TIER_TRANSIENT = 1 };

/* An allocation is one bid/request: count instances of type in a market
 * at a bid (0 = none/on-demand); market_id <= 0: on-demand, no market.
 * Instances point to their allocation; ctrl_id is the controller's id of
 * the instance in its job (0: none), for a restarted daemon to adopt it. */
enum px_err store_allocation_add(struct store *st, int64_t job_id,
				 int64_t market_id, const char *type,
				 enum store_tier tier, int64_t bid_uusd,
				 int count, int64_t at_us,
				 int64_t *ret_alloc_id, struct px_error *err);
enum px_err store_instance_add(struct store *st, int64_t alloc_id,
			       const char *cloud_id, int64_t start_us,
			       uint64_t ctrl_id, int64_t *ret_instance_id,
			       struct px_error *err);
/* Mark an instance ended; reason is "released", "evicted", "lost", ...
 * Unknown instance: PX_ENOENT; already ended: PX_EEXIST; end_us before the
 * start: PX_EINVAL.  cloud_id and reason are 1 to STORE_NAME_MAX-1 bytes. */
enum px_err store_instance_end(struct store *st, int64_t instance_id,
			       int64_t end_us, const char *reason,
			       struct px_error *err);

/* The provider billed instance_id (ended, charged by its one ledger
 * line) to end_us, not where we ended it: its line ends there and
 * charges more_uusd more (less, when negative: the provider ended it
 * first, or billed it as its own interruption); its end moves there.
 * PX_ENOENT: no such line; PX_EINVAL: the line would end before it
 * started or charge less than nothing (nothing changed). */
enum px_err store_instance_bill_end(struct store *st, int64_t instance_id,
				    int64_t end_us, int64_t more_uusd,
				    struct px_error *err);

/* Events: kind is one of "warning", "eviction", "join", "leave",
 * "stage", "decision", "error", ... (a lower-case word: a-z, '_', '-');
 * detail is free text or JSON (may be "", not NULL). */
enum px_err store_event_add(struct store *st, int64_t job_id,
			    int64_t instance_id, int64_t at_us,
			    const char *kind, const char *detail,
			    struct px_error *err);
/* job_id/instance_id <= 0 mean "none" (stored as NULL). */

/* One cost ledger line: amount charged for instance over [from, to).  As
 * for events, job_id/instance_id <= 0 mean "none"; amount >= 0 and
 * from_us <= to_us (PX_EINVAL otherwise); note may be "", not NULL. */
enum px_err store_ledger_add(struct store *st, int64_t job_id,
			     int64_t instance_id, int64_t from_us,
			     int64_t to_us, int64_t amount_uusd,
			     const char *note, struct px_error *err);
/* Sum of a job's ledger lines (0 when none); unknown job: PX_ENOENT. */
enum px_err store_job_cost(struct store *st, int64_t job_id,
			   int64_t *ret_uusd, struct px_error *err);
/* The part of that sum charged for on-demand instances (those of
 * allocations without a market). */
enum px_err store_job_cost_ondemand(struct store *st, int64_t job_id,
				    int64_t *ret_uusd, struct px_error *err);

/* ---- reading jobs, events and ledger lines back ----
 *
 * The walkers below call fn once per row; fn returning non-PX_OK stops the
 * walk and is returned (err untouched).  The struct passed to fn and every
 * string it points to are valid during that call only (copy what you
 * keep).  fn may call other store functions, walkers included.  A walk
 * and the reads fn makes see one snapshot: what other connections commit
 * meanwhile is not seen (rows fn itself adds may or may not be).  Text
 * read back is bounded as on the way in: a name longer than
 * STORE_NAME_MAX-1 bytes is PX_EINVAL, a spec/detail/note longer than
 * STORE_TEXT_MAX bytes PX_ETOOBIG, each naming the record and field. */

struct store_job {
	int64_t id;
	char name[STORE_NAME_MAX];
	enum store_job_state state;
	char world[STORE_WORLD_MAX]; /* the world's name as stored
				      * ("local"; "" when it does not fit:
				      * a world this build does not run) */
	int64_t created_us;    /* submission time, Unix microseconds */
	int64_t updated_us;    /* last state change, Unix microseconds */
	const char *spec_json; /* the spec as submitted (borrowed) */
	size_t spec_len;       /* its length, bytes */
};

/* Which jobs to walk: zero fields match everything; both set must both
 * match.  A name no job can have (empty or too long) matches nothing. */
struct store_job_filter {
	int64_t id;       /* > 0: only the job with this id */
	const char *name; /* non-NULL: only the jobs with this name */
};

/* Call fn for each job matching filter (NULL: all) in id order, which is
 * the order of submission. */
typedef enum px_err (*store_job_fn)(const struct store_job *job, void *ctx);
enum px_err store_jobs_each(struct store *st,
			    const struct store_job_filter *filter,
			    store_job_fn fn, void *ctx, struct px_error *err);

struct store_event {
	int64_t id;             /* also the order of insertion */
	int64_t job_id;         /* 0: not about one job */
	int64_t instance_id;    /* 0: not about one instance */
	int64_t at_us;          /* Unix microseconds */
	char kind[STORE_NAME_MAX];
	const char *detail;     /* free text or JSON, maybe "" (borrowed) */
	size_t detail_len;      /* its length, bytes */
};

/* Call fn for each event of job_id (<= 0: the events about no job) in time
 * order: by at_us, then by id (insertion order).  An unknown job simply
 * has no events. */
typedef enum px_err (*store_event_fn)(const struct store_event *ev,
				      void *ctx);
enum px_err store_events_each(struct store *st, int64_t job_id,
			      store_event_fn fn, void *ctx,
			      struct px_error *err);

/* How many events of job_id (<= 0: about no job) have this kind (1 to
 * STORE_NAME_MAX-1 bytes, PX_EINVAL otherwise); 0 for an unknown job. */
enum px_err store_event_count(struct store *st, int64_t job_id,
			      const char *kind, int64_t *ret_count,
			      struct px_error *err);
/* Call fn once with the last event of job_id of this kind, in the order of
 * store_events_each (the latest at_us, then the latest id); fn is not
 * called when there is none.  fn's return is returned; re-entry as for
 * the walkers. */
enum px_err store_event_last(struct store *st, int64_t job_id,
			     const char *kind, store_event_fn fn, void *ctx,
			     struct px_error *err);
struct store_ledger_line {
	int64_t id;
	int64_t job_id;      /* 0: not charged to a job */
	int64_t instance_id; /* 0: not for one instance */
	int64_t from_us;     /* start of the charged interval, Unix us */
	int64_t to_us;       /* its end (excluded), Unix microseconds */
	int64_t amount_uusd; /* micro-USD */
	const char *note;    /* maybe "" (borrowed) */
	size_t note_len;     /* its length, bytes */
};

/* Call fn for each ledger line of job_id (<= 0: the lines charged to no
 * job) by from_us, then id.  An unknown job simply has no lines; their
 * amounts add up to store_job_cost. */
typedef enum px_err (*store_ledger_fn)(const struct store_ledger_line *l,
				       void *ctx);
enum px_err store_ledger_each(struct store *st, int64_t job_id,
			      store_ledger_fn fn, void *ctx,
			      struct px_error *err);

/* An instance still open (no end) of a job, with what a restarted daemon
 * needs to close its bill: the market (zone empty for on-demand), type,
 * tier and bid of its allocation. */
struct store_open_instance {
	int64_t id;
	uint64_t ctrl_id;                /* 0: none */
	char cloud_id[STORE_NAME_MAX];
	int64_t start_us;
	char zone[STORE_NAME_MAX];       /* "" for on-demand */
	char type[STORE_NAME_MAX];
	enum store_tier tier;
	int64_t bid_uusd;
};
typedef enum px_err (*store_open_instance_fn)(
	const struct store_open_instance *in, void *ctx);
/* Call fn for each instance of job_id that has no end, by id. */
enum px_err store_open_instances_each(struct store *st, int64_t job_id,
				      store_open_instance_fn fn, void *ctx,
				      struct px_error *err);

/* ---- the daemon and its EC2 launch requests ----
 *
 * What a restarted daemon needs to reconcile EC2 with its books: its own
 * id (which tags every instance it launches and is part of every
 * ClientToken), and every launch request, recorded before the request is
 * sent, so that a daemon killed between the call and the answer finds the
 * request (and, through its ClientToken, the instance) again.
 * docs/schema.md has the table and the states. */

#define STORE_DAEMON_ID_LEN 16   /* hex digits, without the NUL */
#define STORE_TOKEN_MAX 65       /* a ClientToken (1..64 printable ASCII,
				  * no blank), with its NUL */
#define STORE_CLOUD_ID_MAX 65    /* an EC2 instance id, with its NUL */
#define STORE_EC2_STATE_MAX 16   /* a request's state name, with its NUL */

/* The daemon's id: 16 lower-case hex digits (8 bytes from RAND_bytes),
 * made and stored on the first call, the same for the life of the
 * database (whichever process asks).  buf gets it with its NUL: len must
 * be at least STORE_DAEMON_ID_LEN + 1 (PX_EINVAL otherwise).  A read-only
 * store that has none yet fails with PX_EDB; PX_EIO when RAND_bytes
 * fails. */
enum px_err store_daemon_id(struct store *st, char *buf, size_t len,
			    struct px_error *err);

/* One EC2 launch request.  state: "sent" (recorded, the call made or
 * about to be), "launched" (EC2 gave instance_id), "rejected" (EC2
 * refused it: no instance), "closed" (done with: its instance ended or
 * is known gone, or it never made one).  Legal changes, enforced by the
 * schema: sent -> launched | rejected | closed, launched -> closed (and
 * any state to itself); instance_id, once set, never changes, and a
 * launched request has one. */
struct store_ec2_request {
	char client_token[STORE_TOKEN_MAX];
	int64_t job_id;
	uint64_t ctrl_id;                /* the controller's id, > 0 */
	char zone[STORE_NAME_MAX];       /* "" for on-demand */
	char type[STORE_NAME_MAX];
	bool reliable;
	int64_t bid_uusd;                /* spot max price; 0 on-demand */
	int64_t created_us;              /* when it was recorded */
	char instance_id[STORE_CLOUD_ID_MAX]; /* "" until known */
	char state[STORE_EC2_STATE_MAX];
	int64_t updated_us;              /* the last change */
};

/* Record r in state "sent" (r's instance_id, state and updated_us are
 * ignored: none, "sent", created_us).  Checked: client_token (1..64
 * printable ASCII, no blank), job_id > 0, ctrl_id in 1..INT64_MAX, zone
 * (0..STORE_NAME_MAX-1 bytes), type (a name), bid_uusd >= 0, created_us
 * >= 0 (PX_EINVAL naming the field).  A token already recorded, or a
 * second request for the same (job, ctrl_id), is PX_EEXIST; an unknown
 * job PX_ENOENT. */
enum px_err store_ec2_request_add(struct store *st,
				  const struct store_ec2_request *r,
				  struct px_error *err);
/* Move the request client_token to state (one of the four names),
 * setting its instance id (NULL: unchanged; else 1..64 bytes) and
 * updated_us = at_us.  An unknown token is PX_ENOENT; an illegal change
 * (a final state left, a launch without an instance id, another instance
 * id) PX_EINVAL, saying which. */
enum px_err store_ec2_request_set(struct store *st, const char *client_token,
				  const char *state, const char *instance_id,
				  int64_t at_us, struct px_error *err);
/* Call fn for each request of job_id (< 0: every job), only those in
 * state sent or launched when only_open, by job then ctrl_id.  Stopping,
 * re-entry and snapshots as for the walkers below; r is valid during the
 * call only. */
typedef enum px_err (*store_ec2_request_fn)(const struct store_ec2_request *r,
					    void *ctx);
enum px_err store_ec2_requests_each(struct store *st, int64_t job_id,
				    bool only_open, store_ec2_request_fn fn,
				    void *ctx, struct px_error *err);
/* The highest controller id job_id ever used, in its EC2 requests and its
 * instances, into *ret; 0 if none (an unknown job too): a restarted
 * controller numbers new instances past it. */
enum px_err store_job_max_ctrl_id(struct store *st, int64_t job_id,
				  uint64_t *ret, struct px_error *err);

#endif
