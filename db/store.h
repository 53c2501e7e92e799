/* store.h -- the SQLite store: markets, prices, on-demand prices, jobs,
 * instances, allocations (bids), events and the cost ledger.
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
 * (the SQL error text and the statement's purpose) in struct px_error.
 * Not thread-safe: one struct store per thread.
 */
#ifndef PX_STORE_H
#define PX_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/px.h"

#define STORE_SCHEMA_VERSION 1
#define STORE_NAME_MAX 64 /* longest region/zone/type/product we accept */

struct store;

/* Open (creating if needed) the database at path (":memory:" allowed) and
 * migrate it to STORE_SCHEMA_VERSION.  A database newer than this build is
 * refused with PX_EUNSUPP.  On success *ret is the caller's, freed with
 * store_close(). */
enum px_err store_open(const char *path, struct store **ret,
		       struct px_error *err);
/* Close; NULL is a no-op.  Rolls back an open transaction. */
void store_close(struct store *st);
/* The schema version stored in the file (PRAGMA user_version). */
int store_schema_version(struct store *st);

/* Explicit transactions (not nested).  store_rollback never fails. */
enum px_err store_begin(struct store *st, struct px_error *err);
enum px_err store_commit(struct store *st, struct px_error *err);
void store_rollback(struct store *st);

/* ---- markets and prices ---- */

struct store_market {
	int64_t id;
	char region[STORE_NAME_MAX];
	char zone[STORE_NAME_MAX];    /* availability zone, e.g. us-east-1a */
	char type[STORE_NAME_MAX];    /* instance type, e.g. c4.xlarge */
	char product[STORE_NAME_MAX]; /* e.g. Linux/UNIX */
};

/* Id of market (region, zone, type, product), created when new.  Names are
 * at most STORE_NAME_MAX-1 bytes (PX_EINVAL otherwise). */
enum px_err store_market_get_or_add(struct store *st, const char *region,
				    const char *zone, const char *type,
				    const char *product, int64_t *ret_id,
				    struct px_error *err);

/* Add one price record; a record with the same (market, t_s) already there
 * is left alone and *ret_inserted (may be NULL) is false. */
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

/* Call fn for each market matching filter, ordered by region, type, zone,
 * product.  fn returning non-PX_OK stops the walk and is returned. */
typedef enum px_err (*store_market_fn)(const struct store_market *m,
				       void *ctx);
enum px_err store_markets_each(struct store *st,
			       const struct store_market_filter *filter,
			       store_market_fn fn, void *ctx,
			       struct px_error *err);

/* Call fn for each price of market_id with from_s <= t_s < to_s in
 * ascending time (INT64_MIN/INT64_MAX for open ends). */
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

/* First and last record time and the record count of a market. */
enum px_err store_price_range(struct store *st, int64_t market_id,
			      int64_t *ret_first_s, int64_t *ret_last_s,
			      int64_t *ret_count, struct px_error *err);

/* ---- on-demand prices ---- */

/* Set (insert or replace) the on-demand price of type in region. */
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
	int64_t first_s;      /* earliest record time */
	int64_t last_s;       /* latest record time */
	int64_t at_us;        /* wall time of the import */
};
enum px_err store_import_add(struct store *st, const struct store_import *imp,
			     struct px_error *err);

/* ---- jobs, instances, allocations, events, cost ledger ---- */

enum store_job_state {
	STORE_JOB_SUBMITTED = 0,
	STORE_JOB_RUNNING,
	STORE_JOB_DONE,
	STORE_JOB_FAILED,
	STORE_JOB_CANCELED,
	STORE_JOB_STATE_MAX
};
const char *store_job_state_name(enum store_job_state s);

/* Add a job; spec_json is the job spec as submitted (kept verbatim). */
enum px_err store_job_add(struct store *st, const char *name,
			  const char *spec_json, int64_t created_us,
			  int64_t *ret_job_id, struct px_error *err);
enum px_err store_job_set_state(struct store *st, int64_t job_id,
				enum store_job_state state, int64_t at_us,
				struct px_error *err);

enum store_tier { STORE_TIER_RELIABLE = 0, STORE_TIER_TRANSIENT = 1 };

/* An allocation is one bid/request: count instances of a market at a bid
 * (0 = none/on-demand).  Instances point to their allocation. */
enum px_err store_allocation_add(struct store *st, int64_t job_id,
				 int64_t market_id, enum store_tier tier,
				 int64_t bid_uusd, int count, int64_t at_us,
				 int64_t *ret_alloc_id, struct px_error *err);
enum px_err store_instance_add(struct store *st, int64_t alloc_id,
			       const char *cloud_id, int64_t start_us,
			       int64_t *ret_instance_id, struct px_error *err);
/* Mark an instance ended; reason is "released", "evicted", "lost", ... */
enum px_err store_instance_end(struct store *st, int64_t instance_id,
			       int64_t end_us, const char *reason,
			       struct px_error *err);

/* Events: kind is one of "warning", "eviction", "join", "leave",
 * "stage", "decision", "error", ...; detail is free text or JSON. */
enum px_err store_event_add(struct store *st, int64_t job_id,
			    int64_t instance_id, int64_t at_us,
			    const char *kind, const char *detail,
			    struct px_error *err);
/* job_id/instance_id <= 0 mean "none" (stored as NULL). */

/* One cost ledger line: amount charged for instance over [from, to). */
enum px_err store_ledger_add(struct store *st, int64_t job_id,
			     int64_t instance_id, int64_t from_us,
			     int64_t to_us, int64_t amount_uusd,
			     const char *note, struct px_error *err);
/* Sum of a job's ledger lines. */
enum px_err store_job_cost(struct store *st, int64_t job_id,
			   int64_t *ret_uusd, struct px_error *err);

#endif
