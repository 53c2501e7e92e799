/* fetch.h -- a file named by URL onto this host's disk, checked by its
 * SHA-256, kept in a content-addressed cache.
 *
 * URL forms:
 *  - a local path or file:///path: checked by SHA-256 in place, never
 *    copied; anything but a regular file (a FIFO, a directory, a device)
 *    is refused at once, without blocking;
 *  - https://HOST/...: a plain GET (redirects to https only); http:// only
 *    to a loopback host (127.0.0.0/8, ::1, localhost), or anywhere with
 *    fetch_opts.allow_http;
 *  - s3://BUCKET/KEY: a GET signed with SigV4 by libcurl
 *    (CURLOPT_AWS_SIGV4 "aws:amz:REGION:s3") with the credentials of
 *    awscred.h's chain (environment, profile, instance role).  Endpoint:
 *    https://BUCKET.s3.REGION.amazonaws.com/KEY (path style on
 *    https://s3.REGION.amazonaws.com for a bucket with a dot in its name),
 *    or path style under $AWS_ENDPOINT_URL_S3, else $AWS_ENDPOINT_URL.
 * A remote file needs its SHA-256: it is streamed into an unnamed file
 * (O_TMPFILE) in the cache directory while hashed, and linked as
 * CACHE/sha256-<hex> only once the hash matches; a failed download leaves
 * nothing there (where the file system lacks O_TMPFILE, a temporary name
 * is used, removed on every failure but not after a SIGKILL).  A later fetch
 * of the same hash finds it there and hashes it again (a file that does
 * not match is removed and fetched again).  Connection failures, time
 * outs and 5xx answers are retried with backoff; 4xx answers, a checksum
 * mismatch and a file over the size bound are not.
 *
 * Errors name the URL as shown by fetch_url_shown (no user name or
 * password, no query string: a presigned URL's signature stays out) and
 * what failed, e.g. "s3://b/k: 403 Forbidden (AccessDenied: Access
 * Denied)", "s3://b/k: 404 Not Found (NoSuchKey: ...)", "s3://b/k:
 * checksum mismatch: expected X, got Y", "s3://b/k: larger than N bytes".
 * No credential ever reaches an error.  This module does not log.  Calls
 * block (curl's easy interface): for programs and tests, not for the
 * daemon's event loop.
 */
#ifndef PX_FETCH_H
#define PX_FETCH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "../common/px.h"
#include "awscred.h"

#define FETCH_SHA256_HEX 64               /* hex digits of a SHA-256 */
#define FETCH_MAX_BYTES_DEFAULT (UINT64_C(16) << 30) /* 16 GiB */
#define FETCH_PATH_MAX 4096
#define FETCH_S3_KEY_MAX 1024             /* S3's own bound on a key */

enum fetch_kind {
	FETCH_LOCAL = 1, /* a path on this host (or file://) */
	FETCH_HTTP,      /* http:// or https:// */
	FETCH_S3,        /* s3://bucket/key */
};

/* A parsed URL.  Strings are the caller's (fetch_url_release). */
struct fetch_url {
	enum fetch_kind kind;
	char *path;    /* LOCAL: the file, percent-decoded for file:// */
	char *url;     /* HTTP: the URL as given */
	bool loopback; /* HTTP: the host is a loopback address */
	bool plain;    /* HTTP: http://, not https:// */
	char *bucket;  /* S3 */
	char *key;     /* S3: as written after "s3://bucket/", not encoded */
	char *shown;   /* what messages name: no userinfo, no query */
};

/* Parse url.  PX_EINVAL (naming it) for an unknown scheme, a URL curl
 * cannot parse, an S3 bucket name S3 would refuse (3..63 of a-z 0-9 . -)
 * or an empty or over-long key, a file:// URL with a host other than
 * localhost.  Local paths are not looked at here. */
enum px_err fetch_url_parse(const char *url, struct fetch_url *ret,
			    struct px_error *err);
void fetch_url_release(struct fetch_url *u);

/* url as messages and logs may show it: scheme://host[:port]/path, no
 * user or password, "?..." for a query, no fragment, terminal-safe (a
 * presigned URL's X-Amz-Signature stays out); a string that is not a
 * URL is shown as it is (terminal-safe).  Into buf, cut to len. */
void fetch_url_shown(const char *url, char *buf, size_t len);
#define FETCH_SHOWN_MAX 512   /* a buffer for fetch_url_shown */

/* What an address a request would connect to is (outbound rules,
 * agent/outbound.h): link-local (169.254.0.0/16, fe80::/10), a cloud
 * metadata address (169.254.169.254, fd00:ec2::254) or an unspecified
 * one (0.0.0.0/8, ::: connecting there reaches this host) are NEVER;
 * loopback (127.0.0.0/8, ::1); private (10/8, 172.16/12, 192.168/16,
 * 100.64/10 shared, 192.0.0/24, 198.18/15 benchmarking, multicast,
 * 240/4, fc00::/7, ff00::/8); else public.  An IPv4-mapped or NAT64
 * IPv6 address is its IPv4 address's class. */
enum fetch_addr_class {
	FETCH_ADDR_PUBLIC = 0,
	FETCH_ADDR_PRIVATE,
	FETCH_ADDR_LOOPBACK,
	FETCH_ADDR_NEVER,
};
enum fetch_addr_class fetch_addr_class(const struct sockaddr *sa);

/* Whether s is a SHA-256 in hex: 64 hex digits, either case. */
bool fetch_sha256_valid(const char *s);

/* The cache directory when none is given: $STATE_DIRECTORY/data (the
 * first of systemd's list) when set, else $HOME/.cache/proteus/data.
 * PX_ENOENT when neither variable is set; PX_ETOOBIG when it does not fit
 * in len. */
enum px_err fetch_default_cache_dir(char *buf, size_t len,
				    struct px_error *err);

struct fetch_opts {
	const char *cache_dir;      /* NULL: fetch_default_cache_dir; made
				       (with its parents) mode 0700 */
	uint64_t max_bytes;         /* 0: FETCH_MAX_BYTES_DEFAULT */
	bool allow_http;            /* http:// to any host, not loopback
				       only (the SHA-256 still checks the
				       bytes, but nothing hides them) */
	int max_attempts;           /* tries per fetch; 0: 4 */
	uint64_t backoff_base_us;   /* first retry's ceiling; 0: 1 s */
	uint64_t backoff_cap_us;    /* 0: 20 s */
	uint64_t connect_timeout_us; /* per attempt; 0: 10 s */
	/* An attempt slower than low_speed_bytes a second for
	 * low_speed_time_s seconds is a failure (retried); no bound on the
	 * whole transfer, whose size only max_bytes limits. */
	uint32_t low_speed_bytes;   /* 0: 1024 */
	uint32_t low_speed_time_s;  /* 0: 30 */
	/* s3:// only.  creds: borrowed; NULL: the chain of awscred.h,
	 * resolved at the first s3:// fetch.  region: NULL: $AWS_REGION,
	 * $AWS_DEFAULT_REGION, the profile's, else us-east-1; an answer
	 * naming the bucket's own region (x-amz-bucket-region) is followed
	 * once.  s3_endpoint: NULL: $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL,
	 * else AWS's (see above). */
	struct awscred_provider *creds;
	const char *region;
	const char *s3_endpoint;
	/* Set (by a signal handler) to stop: the transfer or the wait
	 * before a retry ends with PX_ECANCELED.  May be NULL. */
	const volatile sig_atomic_t *stop;
};

struct fetch_result {
	char path[FETCH_PATH_MAX];  /* the file to read: the cache's, or the
				       local file's absolute path */
	uint64_t bytes;
	char sha256[FETCH_SHA256_HEX + 1]; /* lower-case hex */
	bool cached;   /* found in the cache: nothing was downloaded (a
			  local file is never "cached") */
	int attempts;  /* downloads tried (0: none was needed) */
};

/* Get url onto this host and check it.  sha256_hex: 64 hex digits,
 * required for remote URLs; for a local file it may be NULL (the file's
 * hash is then only reported).  o may be NULL (all defaults).  *ret is
 * written on success only.  Errors: PX_EINVAL (a bad URL or hash, a
 * checksum mismatch, not a regular file, http:// to a remote host),
 * PX_ETOOBIG (over max_bytes), PX_ENOENT (no such file; HTTP 404),
 * PX_EAWS (S3 answered with an error code), PX_EHTTP (any other failed
 * transfer), PX_ECANCELED (o->stop), PX_ESYS|errno (the cache directory,
 * the disk). */
enum px_err fetch_file(const struct fetch_opts *o, const char *url,
		       const char *sha256_hex, struct fetch_result *ret,
		       struct px_error *err);

/* S3 objects the daemon's own programs write (a program job's checkpoint
 * store, docs/programs.md): url is s3://BUCKET/KEY, signed, addressed
 * and retried as fetch_file's (o: its s3 fields, retry fields and stop;
 * NULL: all defaults).  Blocking, as fetch_file. */

/* PutObject: size bytes, of the regular file fd (pread from offset 0,
 * so that every try sends it whole; fd stays the caller's) or, with fd
 * -1, of mem.  sha256_hex: the body's SHA-256, sent as
 * x-amz-content-sha256, which S3 checks the body against (a mismatch is
 * PX_EAWS, not retried).  Errors as fetch_file's; PX_ESYS|errno when fd
 * cannot be read (or is shorter than size). */
enum px_err fetch_s3_put(const struct fetch_opts *o, const char *url,
			 int fd, const void *mem, uint64_t size,
			 const char *sha256_hex, struct px_error *err);
/* DeleteObject (S3 answers 204 for a key that is not there too). */
enum px_err fetch_s3_delete(const struct fetch_opts *o, const char *url,
			    struct px_error *err);
/* GetObject of a small object into memory: *ret (malloc'd, one NUL
 * after its *ret_len bytes; the caller frees it), written on success
 * only.  PX_ENOENT for 404 (no such key or bucket), PX_ETOOBIG past max
 * bytes; else as fetch_file. */
enum px_err fetch_s3_get(const struct fetch_opts *o, const char *url,
			 size_t max, char **ret, size_t *ret_len,
			 struct px_error *err);

#endif
