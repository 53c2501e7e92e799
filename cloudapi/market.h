/* market.h -- the spot-market replayer: every (zone, type) price series of a
 * trace, in memory, with the queries a simulator and a policy need.
 *
 * Build a set by adding records in any order (market_set_add), then seal it
 * (market_set_seal) which sorts each market by time, drops repeated reports
 * of an unchanged price and builds the indexes.  A price holds from its
 * record's time until the next record of the same market; before the first
 * record the price is unknown.  A policy sees a market only through struct
 * market_view, which hides every record after the view's `now`.
 * This module does no I/O and does not log.
 */
#ifndef PX_MARKET_H
#define PX_MARKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/px.h"

#define MARKET_NAME_MAX 64        /* longest zone/type/region, with NUL */
#define MARKET_MAX 4096           /* markets in one set */
#define MARKET_RECORDS_MAX (64u * 1024 * 1024) /* records in one set */
#define MARKET_NONE INT64_MAX     /* "no such time" */

/* One (zone, type) price series.  Read-only once sealed. */
struct market {
	char zone[MARKET_NAME_MAX];   /* e.g. us-east-1a */
	char type[MARKET_NAME_MAX];   /* e.g. c4.xlarge */
	char region[MARKET_NAME_MAX]; /* zone minus its letter: us-east-1 */
	int64_t *t_s;         /* record times, ascending, Unix seconds */
	int64_t *price_uusd;  /* price from t_s[i] on, micro-USD per hour */
	size_t n;             /* records (after dropping unchanged repeats) */
	size_t cap;
	/* built by market_set_seal: */
	int64_t *blockmax;    /* max price of each MARKET_BLOCK records */
	int64_t *cum;         /* cum[i] = integral of price over [t_0, t_i),
			       * in micro-USD-per-hour x seconds */
	size_t idx_cap;       /* entries cum has room for (blockmax: as
			       * many / MARKET_BLOCK, rounded up) */
};

#define MARKET_BLOCK 64

struct market_set {
	struct market *v;     /* sorted by (zone, type) once sealed */
	size_t n, cap;
	size_t records;       /* records added */
	int64_t first_s;      /* earliest record time (INT64_MAX if none) */
	int64_t last_s;       /* latest record time (INT64_MIN if none) */
	bool sealed;
	int *hash;            /* while building: (zone, type) -> index + 1 */
	size_t hash_cap;
};

/* Lifecycle: init an embedded set; release frees what it holds. */
void market_set_init(struct market_set *ms);
void market_set_release(struct market_set *ms);

/* Add one record (any order).  Names longer than MARKET_NAME_MAX-1 and a
 * negative price are PX_EINVAL, too many markets or records PX_ETOOBIG.
 * Not allowed after market_set_seal (PX_EINVAL). */
enum px_err market_set_add(struct market_set *ms, const char *zone,
			   const char *type, int64_t t_s, int64_t price_uusd,
			   struct px_error *err);

/* Sort, check and index.  Two records of one market at the same time with
 * different prices are PX_EINVAL (naming the market and time); identical
 * ones are merged.  Consecutive records with an unchanged price are
 * dropped (the first one stays). */
enum px_err market_set_seal(struct market_set *ms, struct px_error *err);

/* Copy of the sealed set src holding only the records with t_s <= t_s_max
 * (what a world that stops at t_s_max would have seen); *ret is embedded
 * storage the caller releases. */
enum px_err market_set_truncate(const struct market_set *src, int64_t t_s_max,
				struct market_set *ret, struct px_error *err);

/* A live market (the ec2 world's) grows: append a record of market idx of
 * a sealed set.  A record at or before the market's last one is ignored
 * (a poll's window overlaps the last: *ret_added false), as is an
 * unchanged price; a later one is appended and indexed (blockmax, cum),
 * and the set's records count moves, so that every view's cursor looks
 * again.  A negative price is PX_EINVAL, a full set PX_ETOOBIG. */
enum px_err market_set_append(struct market_set *ms, int idx, int64_t t_s,
			      int64_t price_uusd, bool *ret_added,
			      struct px_error *err);

/* Index of market (zone, type) in a sealed set, or -1. */
int market_set_find(const struct market_set *ms, const char *zone,
		    const char *type);

/* ---- queries on one sealed market (full knowledge: simulator side) ---- */

/* Index of the record in force at t (the last with t_s <= t), or -1 when t
 * is before the first record. */
long market_index_at(const struct market *m, int64_t t);

/* The index of the last of t[0..n) (ascending) at or before s, -1 when
 * none.  hint: an earlier answer for an earlier s (-2: none), from which
 * a caller whose s only grows walks a few records forward; further, a
 * binary search. */
long market_index_from(const int64_t *t, size_t n, long hint, int64_t s);

/* Price in force at t; false (and *ret untouched) before the first
 * record. */
bool market_price_at(const struct market *m, int64_t t, int64_t *ret_uusd);

/* Time of the first record strictly after t, or MARKET_NONE. */
int64_t market_next_change(const struct market *m, int64_t t);

/* First time u >= t at which the price is strictly above bid_uusd (t itself
 * when the price in force at t is already above), or MARKET_NONE.  Before
 * the first record the price counts as unknown, not above. */
int64_t market_first_above(const struct market *m, int64_t t,
			   int64_t bid_uusd);

/* Integral of the price over [a, b) in micro-USD-per-hour x seconds (divide
 * by 3600 for micro-USD).  Requires first record <= a <= b. */
int64_t market_integral(const struct market *m, int64_t a, int64_t b);

/* ---- what a policy may see: history up to now ---- */

/* A view's cache for one market: record i (price price_uusd) is the last
 * at or before any time in [lo_s, hi_s), while the set holds `records`
 * records. */
struct market_cursor {
	long i;
	int64_t price_uusd;
	int64_t lo_s, hi_s;
	size_t records;
};

struct market_view {
	const struct market_set *ms;
	int64_t now_s;        /* nothing after this time is visible */
	/* Optional (NULL: none): one per market of ms, zeroed before the
	 * first query, kept by the queries below.  A caller whose now_s
	 * only grows (the simulator) makes each lookup O(1) amortized instead
	 * of a binary search, and a query at a time whose record is the one
	 * of the last query compares two times.  It is a cache: answers
	 * never depend on it. */
	struct market_cursor *cursor;
	/* Optional (NULL: none): one per market of ms; a market is not
	 * visible (no price, no history) while now_s < its value: a world
	 * found it out of capacity, and a policy must choose another. */
	const int64_t *hide_until;
};

static inline bool market_view_hidden(const struct market_view *v, int idx)
{
	return v->hide_until && idx >= 0 && (size_t)idx < v->ms->n &&
	       v->now_s < v->hide_until[idx];
}

/* Records of market idx visible at the view's now: *ret_t and *ret_p point
 * at the first of *ret_n records, all with t_s <= now.  Returns false when
 * there are none (the market has not started yet). */
bool market_view_history(const struct market_view *v, int idx,
			 const int64_t **ret_t, const int64_t **ret_p,
			 size_t *ret_n);

/* Price of market idx at now (false when not yet known).  Policies ask it
 * of every market at every decision: a time inside the span of the
 * cursor's record is answered here, the rest by market_view_price_at. */
bool market_view_price_at(const struct market_view *v, int idx,
			  int64_t *ret_uusd);

/* Whether cursor c still holds the record of v's now. */
static inline bool market_cursor_holds(const struct market_view *v,
				       const struct market_cursor *c)
{
	return c->lo_s <= v->now_s && v->now_s < c->hi_s &&
	       c->records == v->ms->records;
}

static inline bool market_view_price(const struct market_view *v, int idx,
				     int64_t *ret_uusd)
{
	const struct market_cursor *c;

	if (market_view_hidden(v, idx))
		return false;
	if (v->cursor && idx >= 0 && (size_t)idx < v->ms->n) {
		c = &v->cursor[idx];
		if (c->i >= 0 && market_cursor_holds(v, c)) {
			*ret_uusd = c->price_uusd;
			return true;
		}
	}
	return market_view_price_at(v, idx, ret_uusd);
}

#endif
