/* trace.h -- streaming reader for spot-price history files.
 *
 * Reads the JSON that `aws ec2 describe-spot-price-history` prints:
 *   {"SpotPriceHistory": [{"AvailabilityZone": "...", "InstanceType": "...",
 *     "ProductDescription": "...", "SpotPrice": "0.230000",
 *     "Timestamp": "2016-02-24T21:10:53.000Z"}, ...], "NextToken": "..."}
 * plain or gzip-compressed (detected from the bytes, not the name), records
 * in any time order.  It streams with a SAX parser (yajl) through zlib, so
 * memory stays bounded whatever the file size; each record is handed to a
 * callback and forgotten.  Other top-level keys and unknown record fields
 * are ignored; the five fields above are required.
 *
 * Every error names the source, the record index (0-based) and the byte
 * offset in the decompressed stream, and the field, e.g.
 *   "t.json.gz: record 12 (byte 3456): field 'SpotPrice': negative price"
 * This module does not log.
 */
#ifndef PX_TRACE_H
#define PX_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "../common/px.h"

#define TRACE_FIELD_MAX 64            /* longest zone/type/product string */
#define TRACE_TOKEN_MAX (64 * 1024)   /* longest token of any kind */

/* One record.  The strings are borrowed: valid only during the callback. */
struct trace_record {
	const char *zone;    /* AvailabilityZone, e.g. us-east-1a */
	const char *type;    /* InstanceType */
	const char *product; /* ProductDescription */
	int64_t t_s;         /* Timestamp, Unix seconds UTC */
	int64_t price_uusd;  /* SpotPrice, micro-USD per hour */
	uint64_t index;      /* 0-based record index in the file */
	uint64_t offset;     /* byte offset of the record in the JSON text */
};

/* Called once per record; returning non-PX_OK stops the read, and that
 * value (and err, if the callback filled it) is returned. */
typedef enum px_err (*trace_record_fn)(const struct trace_record *rec,
				       void *ctx, struct px_error *err);

struct trace_stats {
	uint64_t records;    /* records delivered */
	uint64_t bytes;      /* bytes of JSON text parsed */
	int64_t first_s;     /* earliest record time (INT64_MAX if none) */
	int64_t last_s;      /* latest record time (INT64_MIN if none) */
};

/* Read the file at path ("-" reads standard input).  ret_stats may be NULL.
 * Errors: PX_ENOENT/PX_ESYS|errno (open), PX_EIO (truncated or corrupt
 * gzip), PX_EINVAL (bad JSON or field), PX_ETOOBIG (a token over
 * TRACE_TOKEN_MAX or a field over TRACE_FIELD_MAX), or the callback's. */
enum px_err trace_read_file(const char *path, trace_record_fn fn, void *ctx,
			    struct trace_stats *ret_stats,
			    struct px_error *err);

/* The same over an in-memory buffer (plain or gzip), named name in errors;
 * used by tests and the fuzzer. */
enum px_err trace_read_buffer(const void *buf, size_t len, const char *name,
			      trace_record_fn fn, void *ctx,
			      struct trace_stats *ret_stats,
			      struct px_error *err);

/* Region of an availability zone: "us-east-1b" -> "us-east-1",
 * "us-west-2-lax-1a" -> "us-west-2".  PX_EINVAL when zone has no
 * "<letters>-...-<digits>" prefix. */
enum px_err trace_zone_region(const char *zone, char *buf, size_t len);

#endif
