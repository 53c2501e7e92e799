/* data_url.h -- a job's data named by URL (docs/trainer.md, "Data by
 * URL"): --train-data and --test-data may be s3://, https:// (http:// to
 * loopback) or file:// URLs as well as paths; with --train-sha256 and
 * --test-sha256 each is fetched into the content-addressed cache
 * (cloudapi/fetch.h) and checked before anything reads it, and the run
 * reads the cached file.  A local path with a SHA-256 is checked in place.
 */
#ifndef PX_DATA_URL_H
#define PX_DATA_URL_H

#include <stdbool.h>

#include "../../common/px.h"
#include "dataset.h"

/* Whether s names a file by URL (scheme://), not by path. */
bool data_is_url(const char *s);

/* The format a URL's name tells: its path's, the query and fragment left
 * out (".../train.csv?X-Amz-Signature=..." is CSV).  PX_EINVAL naming
 * the URL as fetch_url_shown shows it. */
enum px_err data_url_format(const char *url, enum data_format *ret,
			    struct px_error *err);

/* Fetch and check spec's files named by URL (their SHA-256 required),
 * and check local ones whose SHA-256 is given; spec's paths then name
 * the files to read (strings kept until exit) and, for a URL, its format
 * is fixed from the URL's name where it was AUTO.  Errors name the URL
 * (never its query or credentials) and what failed (fetch.h); PX_EINVAL
 * for a URL without its SHA-256 or an IDX set by URL.  A try whose peer
 * does not connect (TLS handshake included) in 8 s, or sends less than
 * 1 KiB/s for 8 s, fails (two tries at most), so that a peer that never
 * answers fails the job, naming the URL, before its stall watchdog
 * would. */
enum px_err data_fetch_urls(struct data_spec *spec, const char *train_sha,
			    const char *test_sha, struct px_error *err);

#endif
