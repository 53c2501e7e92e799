/* ondemand.h -- on-demand price tables.
 *
 * A table is a JSON object region -> instance type -> USD per hour:
 *   {"us-east-1": {"c4.xlarge": 0.199, "m3.medium": 0.067}, ...}
 * A price may also be an object with a "usd_per_hour" number (the shape of
 * ../shared/traces/ondemand-prices.json, one era), and keys starting with
 * '_' (comments, "_sources") are skipped.  Prices are converted to integer
 * micro-USD exactly from the number's text, never through a double.
 * Files are bounded (ONDEMAND_FILE_MAX); errors name the file and the
 * JSON path of the bad field, e.g. "od.json: us-east-1.c4.xlarge: ...".
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

/* Load a table from path; *ret is the caller's (ondemand_table_release). */
enum px_err ondemand_table_load(const char *path, struct ondemand_table *ret,
				struct px_error *err);
/* The same from a buffer named name in errors. */
enum px_err ondemand_table_parse(const char *buf, size_t len,
				 const char *name, struct ondemand_table *ret,
				 struct px_error *err);
/* Lookup; NULL when absent. */
const struct ondemand_entry *ondemand_table_find(
	const struct ondemand_table *t, const char *region, const char *type);
void ondemand_table_release(struct ondemand_table *t);

#endif
