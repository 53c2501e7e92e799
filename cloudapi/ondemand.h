/* ondemand.h -- on-demand price tables.
 *
 * A table is a JSON object region -> instance type -> USD per hour:
 *   {"us-east-1": {"c4.xlarge": 0.199, "m3.medium": 0.067}, ...}
 * A price may also be an object with a "usd_per_hour" number (the shape of
 * ../shared/traces/ondemand-prices.json, one era), and keys starting with
 * '_' (comments, "_sources") are skipped, at the top and in a region.
 * Prices are converted to integer micro-USD exactly for every price with at
 * most 6 decimals up to 10^9 USD: jansson only keeps a real as a double, so
 * the micro-USD value N = round(v * 1e6) is accepted only when N / 1e6 is
 * that same double (exact in that range; more decimals are refused, except
 * digits beyond a double's precision, which cannot be seen).  Negative,
 * non-number and over-precise prices are errors; duplicate keys too.
 * Files are bounded (ONDEMAND_FILE_MAX); errors name the file and the
 * JSON path of the bad field, e.g. "od.json: us-east-1.c4.xlarge: ...", or
 * jansson's line and column for malformed JSON.  The per-era shared file
 * (region -> era -> type) is not a table: etc/ondemand/ holds one per era.
 */
#ifndef PX_ONDEMAND_H
#define PX_ONDEMAND_H

#include <stddef.h>
#include <stdint.h>

#include "../common/px.h"

#define ONDEMAND_FILE_MAX (16u * 1024 * 1024)
#define ONDEMAND_NAME_MAX 64

struct ondemand_entry {
	char region[ONDEMAND_NAME_MAX];
	char type[ONDEMAND_NAME_MAX];
	int64_t uusd_per_hour;
};

struct ondemand_table {
	struct ondemand_entry *v; /* sorted by (region, type) */
	size_t n;
};

/* Load a table from path; *ret is the caller's (ondemand_table_release)
 * and is written on success only.  Errors: PX_ENOENT/PX_ESYS|errno,
 * PX_ETOOBIG (over ONDEMAND_FILE_MAX), PX_EINVAL, PX_ENOMEM. */
enum px_err ondemand_table_load(const char *path, struct ondemand_table *ret,
				struct px_error *err);
/* The same from a buffer named name in errors. */
enum px_err ondemand_table_parse(const char *buf, size_t len,
				 const char *name, struct ondemand_table *ret,
				 struct px_error *err);
/* Lookup by binary search; NULL when absent.  The entry is borrowed from
 * t.  Release frees the entries and empties t; NULL is a no-op. */
const struct ondemand_entry *ondemand_table_find(
	const struct ondemand_table *t, const char *region, const char *type);
void ondemand_table_release(struct ondemand_table *t);

#endif
