/* trace.h -- streaming reader for spot-price history files.
 *
 * Reads the JSON that `aws ec2 describe-spot-price-history` prints:
 *   {"SpotPriceHistory": [{"AvailabilityZone": "...", "InstanceType": "...",
 *     "ProductDescription": "...", "SpotPrice": "0.230000",
 *     "Timestamp": "2016-02-24T21:10:53.000Z"}, ...], "NextToken": "..."}
 * plain or gzip-compressed (detected from the bytes, not the name; several
 * gzip members are read as one stream, as gzip -d does), records in any
 * time order.  It streams with a SAX parser (yajl) through zlib, so
 * memory stays bounded whatever the file size; each record is handed to a
 * callback and forgotten.  Other top-level keys and unknown record fields
 * (whatever their shape) are ignored; the five fields above are required,
 * once each.  SpotPrice is a string or a JSON number, read exactly by
 * px_parse_usd (at most 6 decimals, no sign or exponent); Timestamp is a
 * string read by px_parse_time.
 *
 * Every error names the source, the record index (0-based) and the byte
 * offset in the decompressed stream, and the field, e.g.
 *   "t.json.gz: record 12 (byte 3456): field 'SpotPrice': negative price"
 * The byte is where the problem was seen: just past the offending token,
 * or where the JSON parser stopped.  Errors outside the array have no
 * record ("t.json: byte 18: no 'SpotPriceHistory' array"); gzip errors name
 * the source only.  docs/traces.md lists the messages.
 * This module does not log.
 */
#ifndef PX_TRACE_H
#define PX_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "../common/px.h"

#define TRACE_FIELD_MAX 64            /* longest zone/type/product string */
/* Longest stretch of JSON text from the end of one token to the end of the
 * next (whitespace included): bounds what the parser buffers. */
#define TRACE_TOKEN_MAX (64 * 1024)

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
 * value is returned, with err set to the callback's message (or "stopped by
 * the callback: <px_strerror>" if it left err empty) prefixed with the
 * source, record and byte.  The callback's err is never NULL. */
typedef enum px_err (*trace_record_fn)(const struct trace_record *rec,
				       void *ctx, struct px_error *err);

#define TRACE_SHA256_LEN 32

struct trace_stats {
	uint64_t records;    /* records delivered */
	uint64_t bytes;      /* bytes of JSON text parsed */
	int64_t first_s;     /* earliest record time (INT64_MAX if none) */
	int64_t last_s;      /* latest record time (INT64_MIN if none) */
	/* with TRACE_SHA256: SHA-256 of the file's bytes as read (the
	 * compressed bytes for a gzip file), for provenance */
	unsigned char sha256[TRACE_SHA256_LEN];
};

/* Flags for trace_read_file_flags and trace_read_file_pipelined. */
enum trace_flags {
	TRACE_SHA256 = 1 << 0, /* fill stats.sha256 while reading */
};

/* Read the file at path ("-" reads standard input).  fn may be NULL (just
 * validate and count).  ret_stats may be NULL; it is written on success
 * only.  Errors: PX_ENOENT/PX_ESYS|errno (open; a directory is
 * PX_ESYS|EISDIR), PX_EIO (truncated or corrupt gzip, bytes after it),
 * PX_EINVAL (bad JSON or field, an empty file), PX_ETOOBIG (more than
 * TRACE_TOKEN_MAX bytes without a token, or a field over TRACE_FIELD_MAX),
 * PX_ENOMEM, or the callback's. */
enum px_err trace_read_file(const char *path, trace_record_fn fn, void *ctx,
			    struct trace_stats *ret_stats,
			    struct px_error *err);

/* trace_read_file with flags (enum trace_flags). */
enum px_err trace_read_file_flags(const char *path, unsigned flags,
				  trace_record_fn fn, void *ctx,
				  struct trace_stats *ret_stats,
				  struct px_error *err);

/* The same over an in-memory buffer (plain or gzip), named name in errors;
 * used by tests and the fuzzer. */
enum px_err trace_read_buffer(const void *buf, size_t len, const char *name,
			      trace_record_fn fn, void *ctx,
			      struct trace_stats *ret_stats,
			      struct px_error *err);

/* trace_read_file with the parsing on a second thread: fn runs on the
 * caller's thread, in file order, while the next records are being read
 * and parsed.  Records travel in a bounded queue (TRACE_PIPE_BATCH records
 * x TRACE_PIPE_DEPTH batches, about 3 MiB), so memory stays bounded.  Same
 * results, stats and error messages as trace_read_file; an error from fn
 * stops the reader thread.  Used by imports, where the consumer (SQLite)
 * and the parser each take about half the time. */
#define TRACE_PIPE_BATCH 2048
#define TRACE_PIPE_DEPTH 4
enum px_err trace_read_file_pipelined(const char *path, unsigned flags,
				      trace_record_fn fn, void *ctx,
				      struct trace_stats *ret_stats,
				      struct px_error *err);

/* Region of an availability zone: "us-east-1b" -> "us-east-1",
 * "us-west-2-lax-1a" -> "us-west-2", "us-east-1" -> "us-east-1".  The
 * region is the prefix [a-z]+(-[a-z]+)*-[0-9]+, which must be followed by
 * the end, a letter or '-'.  PX_EINVAL when zone has no such prefix,
 * PX_ETOOBIG when it does not fit in len bytes with its NUL. */
enum px_err trace_zone_region(const char *zone, char *buf, size_t len);

#endif
