/* fetch.c -- a file by URL into a content-addressed cache, checked by
 * SHA-256 (see fetch.h): URL parsing, the local-file check, the cache
 * directory, and one blocking request loop over libcurl's easy
 * interface (SigV4 for s3:// by libcurl, the retry rules and the XML
 * helpers of the EC2 client), which the S3 object calls (PUT, DELETE,
 * a small GET into memory) share with the download.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <libxml/parser.h>
#include <openssl/evp.h>

#include "ec2_int.h"
#include "fetch.h"

#define ERRBODY_MAX (64u * 1024)  /* an error answer's body kept */
#define REGION_MAX 32
/* SHA-256 of the empty body: a GET's x-amz-content-sha256, the same
 * value libcurl hashes into the signature for a request without one */
#define EMPTY_SHA256 \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* ------------------------------------------------------------ URLs */

bool fetch_sha256_valid(const char *s)
{
	size_t i;

	if (!s)
		return false;
	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f') ||
		      (s[i] >= 'A' && s[i] <= 'F')))
			return false;
	return i == FETCH_SHA256_HEX;
}

void fetch_url_release(struct fetch_url *u)
{
	if (!u)
		return;
	free(u->path);
	free(u->url);
	free(u->bucket);
	free(u->key);
	free(u->shown);
	memset(u, 0, sizeof *u);
}

static bool has_prefix(const char *s, const char *p)
{
	return strncasecmp(s, p, strlen(p)) == 0;
}

/* A copy of s that a terminal prints as text (messages name it). */
static char *term_dup(const char *s)
{
	size_t n = PX_TERM_SAFE_LEN(strlen(s));
	char *b = malloc(n);

	return b ? px_term_safe(s, b, n) : NULL;
}

/* Append l bytes of p to buf (n used of cap, one kept for the NUL). */
static void put(char *buf, size_t cap, size_t *n, const char *p, size_t l)
{
	if (l > cap - 1 - *n)
		l = cap - 1 - *n;
	memcpy(buf + *n, p, l);
	*n += l;
}

void fetch_url_shown(const char *url, char *buf, size_t len)
{
	const char *colon = url ? strstr(url, "://") : NULL;
	char tmp[FETCH_SHOWN_MAX];
	const char *auth, *at, *end, *path;
	size_t n = 0;

	if (!len)
		return;
	if (!url || !colon || strspn(url, "abcdefghijklmnopqrstuvwxyz"
				     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
	    != (size_t)(colon - url)) {
		px_term_safe(url ? url : "", buf, len);
		return;
	}
	auth = colon + 3;
	end = auth + strcspn(auth, "/?#");
	/* the host is after the authority's last '@' (user:password@) */
	for (at = end; at > auth && at[-1] != '@'; at--)
		;
	path = end + strcspn(end, "?#");
	put(tmp, sizeof tmp, &n, url, (size_t)(auth - url));
	put(tmp, sizeof tmp, &n, at, (size_t)(end - at));
	put(tmp, sizeof tmp, &n, end, (size_t)(path - end));
	if (*path == '?')
		put(tmp, sizeof tmp, &n, "?...", 4);
	tmp[n] = '\0';
	px_term_safe(tmp, buf, len);
}

/* url as messages show it, in sb (FETCH_SHOWN_MAX bytes). */
static const char *shown_of(const char *url, char *sb)
{
	fetch_url_shown(url, sb, FETCH_SHOWN_MAX);
	return sb;
}

static bool in4(uint32_t a, uint32_t net, int bits)
{
	return (a >> (32 - bits)) == (net >> (32 - bits));
}

static enum fetch_addr_class class4(uint32_t a)
{
	if (in4(a, 0xa9fe0000u, 16) || in4(a, 0, 8))
		return FETCH_ADDR_NEVER;      /* link-local, 0.0.0.0/8 */
	if (in4(a, 0x7f000000u, 8))
		return FETCH_ADDR_LOOPBACK;
	if (in4(a, 0x0a000000u, 8) || in4(a, 0xac100000u, 12) ||
	    in4(a, 0xc0a80000u, 16) || in4(a, 0x64400000u, 10) ||
	    in4(a, 0xc0000000u, 24) || in4(a, 0xc6120000u, 15) ||
	    in4(a, 0xe0000000u, 3))      /* multicast, 240/4, broadcast */
		return FETCH_ADDR_PRIVATE;
	return FETCH_ADDR_PUBLIC;
}

enum fetch_addr_class fetch_addr_class(const struct sockaddr *sa)
{
	static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0,
						  0, 0, 0xff, 0xff };
	static const unsigned char nat64[12] = { 0, 0x64, 0xff, 0x9b };
	/* fd00:ec2::254 */
	static const unsigned char ec2[16] = { 0xfd, 0, 0x0e, 0xc2, 0, 0, 0,
					       0, 0, 0, 0, 0, 0, 0, 0x02,
					       0x54 };
	const unsigned char *b;
	uint32_t v4;

	if (!sa)
		return FETCH_ADDR_NEVER;
	if (sa->sa_family == AF_INET)
		return class4(ntohl(((const struct sockaddr_in *)
				     (const void *)sa)->sin_addr.s_addr));
	if (sa->sa_family != AF_INET6)
		return FETCH_ADDR_NEVER;
	b = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
	if (!memcmp(b, mapped, 12) || !memcmp(b, nat64, 12)) {
		memcpy(&v4, b + 12, 4);
		return class4(ntohl(v4));
	}
	if ((b[0] == 0xfe && (b[1] & 0xc0) == 0x80) || !memcmp(b, ec2, 16))
		return FETCH_ADDR_NEVER;      /* fe80::/10, metadata */
	if (IN6_IS_ADDR_UNSPECIFIED((const struct in6_addr *)(const void *)b))
		return FETCH_ADDR_NEVER;
	if (IN6_IS_ADDR_LOOPBACK((const struct in6_addr *)(const void *)b))
		return FETCH_ADDR_LOOPBACK;
	if ((b[0] & 0xfe) == 0xfc || b[0] == 0xff)
		return FETCH_ADDR_PRIVATE;    /* fc00::/7, multicast */
	return FETCH_ADDR_PUBLIC;
}

/* Whether a URL's host (as CURLUPART_HOST gives it: "[::1]" for IPv6)
 * is this host: 127.0.0.0/8, ::1 or "localhost". */
static bool host_loopback(const char *host)
{
	char h[64];
	struct in_addr a4;
	struct in6_addr a6;
	size_t n = strlen(host);

	if (strcasecmp(host, "localhost") == 0)
		return true;
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']' && n - 2 < sizeof h) {
		memcpy(h, host + 1, n - 2);
		h[n - 2] = '\0';
		return inet_pton(AF_INET6, h, &a6) == 1 &&
		       IN6_IS_ADDR_LOOPBACK(&a6);
	}
	return inet_pton(AF_INET, host, &a4) == 1 &&
	       (ntohl(a4.s_addr) >> 24) == 127;
}

/* http(s)://: the host, whether it is loopback, and the URL as messages
 * show it: scheme://host[:port]/path, no userinfo, "?..." for a query. */
static enum px_err parse_http(const char *url, struct fetch_url *u,
			      struct px_error *err)
{
	CURLU *h = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
	char *query = NULL, *shown = NULL, sb[FETCH_SHOWN_MAX];
	enum px_err rc = PX_OK;
	int n;

	if (!h)
		return px_errorf(err, PX_ENOMEM, "url");
	if (curl_url_set(h, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
		rc = px_errorf(err, PX_EINVAL, "'%.200s': not a url curl can "
			       "read", shown_of(url, sb));
		goto out_free;
	}
	(void)curl_url_get(h, CURLUPART_PORT, &port, 0);
	(void)curl_url_get(h, CURLUPART_QUERY, &query, 0);
	n = asprintf(&shown, "%s://%s%s%s%s%s", scheme, host, port ? ":" : "",
		     port ? port : "", path, query ? "?..." : "");
	if (n < 0) {
		rc = px_errorf(err, PX_ENOMEM, "url");
		goto out_free;
	}
	u->shown = term_dup(shown);
	u->url = strdup(url);
	if (!u->shown || !u->url) {
		rc = px_errorf(err, PX_ENOMEM, "url");
		goto out_free;
	}
	u->kind = FETCH_HTTP;
	u->plain = strcasecmp(scheme, "http") == 0;
	u->loopback = host_loopback(host);
out_free:
	free(shown);
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_free(query);
	curl_url_cleanup(h);
	return rc;
}

/* file:///path or file://localhost/path, percent-decoded by curl. */
static enum px_err parse_file_url(const char *url, struct fetch_url *u,
				  struct px_error *err)
{
	CURLU *h = curl_url();
	char *path = NULL, sb[FETCH_SHOWN_MAX];
	enum px_err rc = PX_OK;

	if (!h)
		return px_errorf(err, PX_ENOMEM, "url");
	if (curl_url_set(h, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_PATH, &path, CURLU_URLDECODE) !=
	    CURLUE_OK || !path[0]) {
		rc = px_errorf(err, PX_EINVAL, "'%.200s': not a file url of "
			       "this host (file:///path)", shown_of(url, sb));
		goto out_free;
	}
	u->kind = FETCH_LOCAL;
	u->path = strdup(path);
	u->shown = term_dup(shown_of(url, sb));
	if (!u->path || !u->shown)
		rc = px_errorf(err, PX_ENOMEM, "url");
out_free:
	curl_free(path);
	curl_url_cleanup(h);
	return rc;
}

/* A bucket name S3 accepts: 3..63 of a-z 0-9 . -, a letter or digit at
 * each end. */
static bool bucket_valid(const char *b, size_t n)
{
	if (n < 3 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool alnum = (b[i] >= 'a' && b[i] <= 'z') ||
			     (b[i] >= '0' && b[i] <= '9');

		if (!alnum && ((i == 0 || i == n - 1) ||
			       (b[i] != '.' && b[i] != '-')))
			return false;
	}
	return true;
}

static enum px_err parse_s3(const char *url, struct fetch_url *u,
			    struct px_error *err)
{
	const char *b = url + 5, *slash = strchr(b, '/');
	size_t bl = slash ? (size_t)(slash - b) : strlen(b);
	char shown[FETCH_S3_KEY_MAX + 80], sb[FETCH_SHOWN_MAX];

	if (!bucket_valid(b, bl))
		return px_errorf(err, PX_EINVAL, "'%.200s': bad bucket name "
				 "(3 to 63 of a-z, 0-9, '.' and '-')",
				 shown_of(url, sb));
	if (!slash || !slash[1])
		return px_errorf(err, PX_EINVAL, "'%.200s': no key "
				 "(s3://BUCKET/KEY)", shown_of(url, sb));
	if (strlen(slash + 1) > FETCH_S3_KEY_MAX)
		return px_errorf(err, PX_EINVAL, "'%.200s...': key over %d "
				 "bytes", shown_of(url, sb), FETCH_S3_KEY_MAX);
	u->kind = FETCH_S3;
	u->bucket = px_strndup(b, bl);
	u->key = strdup(slash + 1);
	snprintf(shown, sizeof shown, "s3://%.*s/%s", (int)bl, b, slash + 1);
	u->shown = term_dup(shown);
	if (!u->bucket || !u->key || !u->shown)
		return px_errorf(err, PX_ENOMEM, "url");
	return PX_OK;
}

enum px_err fetch_url_parse(const char *url, struct fetch_url *ret,
			    struct px_error *err)
{
	struct fetch_url u = { 0 };
	const char *colon = strstr(url, "://");
	char sb[FETCH_SHOWN_MAX];
	enum px_err rc;

	if (!url[0])
		return px_errorf(err, PX_EINVAL, "empty url");
	if (has_prefix(url, "s3://"))
		rc = parse_s3(url, &u, err);
	else if (has_prefix(url, "http://") || has_prefix(url, "https://"))
		rc = parse_http(url, &u, err);
	else if (has_prefix(url, "file://"))
		rc = parse_file_url(url, &u, err);
	else if (colon && strspn(url, "abcdefghijklmnopqrstuvwxyz"
				 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-") ==
		 (size_t)(colon - url))
		rc = px_errorf(err, PX_EINVAL, "'%.200s': unsupported scheme "
			       "(a path, file://, https://, s3://)",
			       shown_of(url, sb));
	else {
		u.kind = FETCH_LOCAL;
		u.path = strdup(url);
		u.shown = term_dup(url);
		rc = u.path && u.shown ? PX_OK
				       : px_errorf(err, PX_ENOMEM, "url");
	}
	if (rc != PX_OK) {
		fetch_url_release(&u);
		return rc;
	}
	*ret = u;
	return PX_OK;
}

/* ------------------------------------------------------------ files */

enum px_err fetch_default_cache_dir(char *buf, size_t len,
				    struct px_error *err)
{
	const char *sd = getenv("STATE_DIRECTORY"), *home = getenv("HOME");
	int n;

	if (sd && *sd)
		n = snprintf(buf, len, "%.*s/data", (int)strcspn(sd, ":"), sd);
	else if (home && *home)
		n = snprintf(buf, len, "%s/.cache/proteus/data", home);
	else
		return px_errorf(err, PX_ENOENT, "no cache directory: neither "
				 "STATE_DIRECTORY nor HOME is set");
	if (n < 0 || (size_t)n >= len)
		return px_errorf(err, PX_ETOOBIG, "cache directory: path over "
				 "%zu bytes", len - 1);
	return PX_OK;
}

/* mkdir -p dir, each new folder mode 0700; dir must end up a folder. */
static enum px_err make_dir(const char *dir, struct px_error *err)
{
	char p[FETCH_PATH_MAX];
	struct stat st;
	size_t n = strlen(dir);

	if (n >= sizeof p)
		return px_errorf(err, PX_ETOOBIG, "cache directory '%.200s': "
				 "path too long", dir);
	memcpy(p, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		p[i] = '\0';
		if (mkdir(p, 0700) != 0 && errno != EEXIST)
			return px_errorf(err, PX_ESYS | errno, "cache directory"
					 " '%s': mkdir '%s': %s", dir, p,
					 strerror(errno));
		p[i] = i < n ? '/' : '\0';
	}
	if (stat(dir, &st) != 0)
		return px_errorf(err, PX_ESYS | errno, "cache directory '%s': "
				 "%s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return px_errorf(err, PX_ESYS | ENOTDIR, "cache directory '%s':"
				 " not a directory", dir);
	return PX_OK;
}

static const char *file_type(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISCHR(m) || S_ISBLK(m))
		return "a device";
	return "not a regular file";
}

/* Open a regular file to read.  O_NONBLOCK: opening a FIFO with no
 * writer must not wait for one, and fstat then refuses it. */
static enum px_err open_regular(const char *path, const char *shown,
				int *ret_fd, uint64_t *ret_size,
				struct px_error *err)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return px_errorf(err, errno == ENOENT ? PX_ENOENT
				 : PX_ESYS | errno, "%s: %s", shown,
				 strerror(errno));
	if (fstat(fd, &st) != 0) {
		close(fd);
		return px_errorf(err, PX_ESYS | errno, "%s: %s", shown,
				 strerror(errno));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return px_errorf(err, PX_EINVAL, "%s: %s, not a regular file",
				 shown, file_type(st.st_mode));
	}
	*ret_fd = fd;
	*ret_size = (uint64_t)st.st_size;
	return PX_OK;
}

/* Finish md into lower-case hex. */
static enum px_err md_hex(EVP_MD_CTX *md, char *out, struct px_error *err)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	if (EVP_DigestFinal_ex(md, d, &n) != 1 || n != 32)
		return px_errorf(err, PX_EIO, "sha-256 failed");
	px_hex(d, 32, out);
	return PX_OK;
}

/* SHA-256 of the whole file at path, a regular file of at most max
 * bytes; its size into *ret_bytes. */
static enum px_err hash_file(const char *path, const char *shown,
			     uint64_t max, char *ret_hex, uint64_t *ret_bytes,
			     struct px_error *err)
{
	EVP_MD_CTX *md = NULL;
	unsigned char *buf = NULL;
	uint64_t size = 0, n = 0;
	enum px_err rc = PX_OK;
	ssize_t r;
	int fd = -1;

	rc = open_regular(path, shown, &fd, &size, err);
	if (rc != PX_OK)
		return rc;
	if (size > max) {
		rc = px_errorf(err, PX_ETOOBIG, "%s: larger than %" PRIu64
			       " bytes", shown, max);
		goto out_close;
	}
	md = EVP_MD_CTX_new();
	buf = malloc(1u << 20);
	if (!md || !buf || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
		rc = px_errorf(err, PX_ENOMEM, "sha-256");
		goto out_close;
	}
	while ((r = read(fd, buf, 1u << 20)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = px_errorf(err, PX_ESYS | errno, "%s: %s", shown,
				       strerror(errno));
			goto out_close;
		}
		n += (uint64_t)r;
		if (n > max) { /* it grew while we read */
			rc = px_errorf(err, PX_ETOOBIG, "%s: larger than %"
				       PRIu64 " bytes", shown, max);
			goto out_close;
		}
		EVP_DigestUpdate(md, buf, (size_t)r);
	}
	rc = md_hex(md, ret_hex, err);
	*ret_bytes = n;
out_close:
	EVP_MD_CTX_free(md);
	free(buf);
	close(fd);
	return rc;
}

static enum px_err mismatch(const char *shown, const char *want,
			    const char *got, struct px_error *err)
{
	return px_errorf(err, PX_EINVAL, "%s: checksum mismatch: expected %s,"
			 " got %s", shown, want, got);
}

/* ------------------------------------------------------------ download */

/* One download: the file it goes to, its hash so far, and what came
 * back besides the data. */
struct dl {
	const struct fetch_opts *o;
	const struct fetch_url *u;
	uint64_t max;
	CURL *easy;
	int fd;                /* the unnamed (or temporary) file */
	char tmp_name[FETCH_PATH_MAX]; /* "" with O_TMPFILE */
	EVP_MD_CTX *md;
	uint64_t bytes;
	bool too_big;
	int write_errno;       /* writing the file failed with this */
	char *body;            /* a non-200 answer's body, ERRBODY_MAX */
	size_t body_len;
	bool body_full;
	char bucket_region[REGION_MAX + 1]; /* x-amz-bucket-region */
	char *endpoint;        /* S3: path-style endpoint, NULL: AWS's */
	char refused[160];     /* an address open_socket refused, and why */
	char errbuf[CURL_ERROR_SIZE];
	/* S3 calls other than a download (fetch_s3_put, fetch_s3_delete):
	 * fd is then -1 (a 2xx answer's body is not kept) */
	const char *method;    /* NULL: GET; "PUT" or "DELETE" */
	const char *payload;   /* PUT: its SHA-256 (hex), which S3 checks */
	const unsigned char *up_mem; /* PUT: the body in memory, or */
	int up_fd;             /* read from this file (pread) */
	uint64_t up_size, up_off;
	int read_errno;        /* reading the body failed with this */
};

static size_t write_cb(char *p, size_t sz, size_t nm, void *ud)
{
	struct dl *d = ud;
	size_t n = sz * nm, off = 0;
	long st = 0;

	curl_easy_getinfo(d->easy, CURLINFO_RESPONSE_CODE, &st);
	if (st != 200) {
		if (n > ERRBODY_MAX - d->body_len) {
			d->body_full = true;
			return 0;
		}
		memcpy(d->body + d->body_len, p, n);
		d->body_len += n;
		return n;
	}
	if (d->fd < 0)
		return n;        /* a PUT's answer: nothing to keep */
	if (n > d->max - d->bytes) {
		d->too_big = true;
		return 0;
	}
	while (off < n) {
		ssize_t w = write(d->fd, p + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			d->write_errno = errno;
			return 0;
		}
		off += (size_t)w;
	}
	EVP_DigestUpdate(d->md, p, n);
	d->bytes += n;
	return n;
}

/* A PUT's body, from memory or the file, from up_off on. */
static size_t read_cb(char *p, size_t sz, size_t nm, void *ud)
{
	struct dl *d = ud;
	size_t n = sz * nm;
	ssize_t r;

	if (n > d->up_size - d->up_off)
		n = (size_t)(d->up_size - d->up_off);
	if (!n)
		return 0;
	if (d->up_mem) {
		memcpy(p, d->up_mem + d->up_off, n);
		d->up_off += n;
		return n;
	}
	do
		r = pread(d->up_fd, p, n, (off_t)d->up_off);
	while (r < 0 && errno == EINTR);
	if (r <= 0) {            /* an error, or the file is shorter */
		d->read_errno = r < 0 ? errno : EIO;
		return CURL_READFUNC_ABORT;
	}
	d->up_off += (uint64_t)r;
	return (size_t)r;
}

/* libcurl's rewind of a PUT's body (a retried send on a new
 * connection). */
static int seek_cb(void *ud, curl_off_t off, int origin)
{
	struct dl *d = ud;

	if (origin != SEEK_SET || off < 0 || (uint64_t)off > d->up_size)
		return CURL_SEEKFUNC_CANTSEEK;
	d->up_off = (uint64_t)off;
	return CURL_SEEKFUNC_OK;
}

/* Keeps x-amz-bucket-region: S3 names the bucket's region when asked in
 * another one. */
static size_t header_cb(char *p, size_t sz, size_t nm, void *ud)
{
	static const char name[] = "x-amz-bucket-region:";
	struct dl *d = ud;
	size_t n = sz * nm, k = sizeof name - 1, v;

	if (n > k && strncasecmp(p, name, k) == 0) {
		p += k;
		n -= k;
		while (n && (*p == ' ' || *p == '\t')) {
			p++;
			n--;
		}
		v = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789-");
		if (v && v <= REGION_MAX && v <= n) {
			memcpy(d->bucket_region, p, v);
			d->bucket_region[v] = '\0';
		}
	}
	return sz * nm;
}

static int progress_cb(void *ud, curl_off_t dt, curl_off_t dn,
		       curl_off_t ut, curl_off_t un)
{
	const struct dl *d = ud;

	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return d->o->stop && *d->o->stop;
}

static const char *reason_phrase(long st)
{
	switch (st) {
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return st >= 300 && st < 400 ? "Redirect" : "Error";
	}
}

/* An S3 <Error><Code/><Message/></Error> body: code and message, cut to
 * fit and made terminal-safe; "" when the body is not one. */
static void s3_error(const char *body, size_t len, char *code, size_t cl,
		     char *msg, size_t ml)
{
	char c[128], m[512];
	xmlDoc *doc = NULL;
	xmlNode *root;

	code[0] = msg[0] = '\0';
	if (len)
		doc = xmlReadMemory(body, (int)len, "s3-error.xml", NULL,
				    XML_PARSE_NONET | XML_PARSE_NOERROR |
					    XML_PARSE_NOWARNING);
	root = doc ? xmlDocGetRootElement(doc) : NULL;
	if (root && strcmp((const char *)root->name, "Error") == 0) {
		ec2_xml_text_cut(root, "Code", c, sizeof c);
		ec2_xml_text_cut(root, "Message", m, sizeof m);
		px_term_safe(c, code, cl);
		px_term_safe(m, msg, ml);
	}
	xmlFreeDoc(doc);
}

/* Transport failures worth another try: not a refused certificate, a
 * bad URL, a protocol we do not speak or a redirect loop. */
static bool curl_retryable(CURLcode cc)
{
	switch (cc) {
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_TOO_MANY_REDIRECTS:
	case CURLE_OUT_OF_MEMORY:
	case CURLE_BAD_FUNCTION_ARGUMENT:
		return false;
	default:
		return true;
	}
}

/* The unnamed file in the cache directory the data goes to.  O_TMPFILE:
 * a crash leaves nothing behind; where the file system lacks it, a
 * temporary name, removed on every failure. */
static enum px_err dl_open(struct dl *d, const char *dir, const char *hex,
			   struct px_error *err)
{
	int n;

	d->tmp_name[0] = '\0';
	d->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (d->fd >= 0)
		return PX_OK;
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return px_errorf(err, PX_ESYS | errno, "cache directory '%s':"
				 " %s", dir, strerror(errno));
	n = snprintf(d->tmp_name, sizeof d->tmp_name, "%s/.sha256-%s.XXXXXX",
		     dir, hex);
	if (n < 0 || (size_t)n >= sizeof d->tmp_name)
		return px_errorf(err, PX_ETOOBIG, "cache directory '%.200s': "
				 "path too long", dir);
	d->fd = mkostemp(d->tmp_name, O_CLOEXEC);
	if (d->fd < 0) {
		d->tmp_name[0] = '\0';
		return px_errorf(err, PX_ESYS | errno, "cache directory '%s':"
				 " %s", dir, strerror(errno));
	}
	return PX_OK;
}

static void dl_close(struct dl *d)
{
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
	if (d->tmp_name[0])
		unlink(d->tmp_name);
	d->tmp_name[0] = '\0';
}

/* Give the finished file its name in the cache (replacing a bad copy
 * another fetch may have put there meanwhile). */
static enum px_err dl_place(struct dl *d, const char *final,
			    struct px_error *err)
{
	char proc[64];

	if (fsync(d->fd) != 0)
		return px_errorf(err, PX_ESYS | errno, "'%s': fsync: %s",
				 final, strerror(errno));
	if (d->tmp_name[0]) {
		if (rename(d->tmp_name, final) != 0)
			return px_errorf(err, PX_ESYS | errno, "'%s': rename: "
					 "%s", final, strerror(errno));
		d->tmp_name[0] = '\0';
		return PX_OK;
	}
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", d->fd);
	for (int i = 0; i < 3; i++) {
		if (linkat(AT_FDCWD, proc, AT_FDCWD, final,
			   AT_SYMLINK_FOLLOW) == 0)
			return PX_OK;
		if (errno != EEXIST)
			break;
		(void)unlink(final);
	}
	return px_errorf(err, PX_ESYS | errno, "'%s': link: %s", final,
			 strerror(errno));
}

/* Wait us before a retry; false when told to stop meanwhile. */
static bool dl_wait(const struct fetch_opts *o, uint64_t us)
{
	struct timespec t = { (time_t)(us / 1000000),
			      (long)(us % 1000000) * 1000 };

	while (!(o->stop && *o->stop)) {
		if (nanosleep(&t, &t) == 0)
			return true;
		if (errno != EINTR)
			return true;
	}
	return false;
}

static enum px_err http_refused(const char *shown, struct px_error *err)
{
	return px_errorf(err, PX_EINVAL, "%s: http:// only to this host "
			 "(127.0.0.1, ::1, localhost); use https://", shown);
}

/* The endpoint of path-style S3 requests: fetch_opts.s3_endpoint, then
 * $AWS_ENDPOINT_URL_S3, then $AWS_ENDPOINT_URL, held to the http://
 * rule of any URL (a session token travels in a header), without a
 * trailing '/'.  *ret NULL: AWS's own endpoints. */
static enum px_err s3_endpoint(const struct fetch_opts *o, char **ret,
			       bool *ret_plain, struct px_error *err)
{
	const char *ep = o->s3_endpoint;
	struct fetch_url e = { 0 };
	enum px_err rc;
	size_t n;

	*ret = NULL;
	*ret_plain = false;
	if (!ep || !*ep)
		ep = getenv("AWS_ENDPOINT_URL_S3");
	if (!ep || !*ep)
		ep = getenv("AWS_ENDPOINT_URL");
	if (!ep || !*ep)
		return PX_OK;
	if (!has_prefix(ep, "http://") && !has_prefix(ep, "https://"))
		return px_errorf(err, PX_EINVAL, "s3 endpoint '%.200s': not an "
				 "http(s) url", ep);
	rc = parse_http(ep, &e, err);
	if (rc == PX_OK && e.plain && !e.loopback && !o->allow_http)
		rc = http_refused(e.shown, err);
	if (rc == PX_OK) {
		n = strcspn(ep, "?#");
		while (n > 0 && ep[n - 1] == '/')
			n--;
		*ret = px_strndup(ep, n);
		*ret_plain = e.plain;
		if (!*ret)
			rc = px_errorf(err, PX_ENOMEM, "url");
	}
	fetch_url_release(&e);
	return rc;
}

/* The S3 object's URL: path style under an endpoint, else AWS's own
 * (virtual-hosted; path style for a bucket with a dot, which the
 * wildcard certificate of BUCKET.s3.REGION.amazonaws.com does not
 * cover).  The key is percent-encoded once, as S3's canonical URI wants
 * it (every byte but A-Z a-z 0-9 - . _ ~ and '/', by curl_easy_escape
 * between the slashes): libcurl 7.88 signs the path as it is sent, and
 * a path in that form is one that later libcurls, which canonicalise
 * it, leave as it is. */
static enum px_err s3_object_url(CURL *h, const char *endpoint,
				 const struct fetch_url *u, const char *region,
				 char **ret, struct px_error *err)
{
	char *enc = NULL, *p, *seg, *out = NULL;
	size_t len = 0, el;
	enum px_err rc = PX_OK;
	int n;

	enc = malloc(3 * strlen(u->key) + 1); /* 3 bytes a byte at most */
	p = strdup(u->key);
	if (!enc || !p) {
		rc = px_errorf(err, PX_ENOMEM, "url");
		goto out_free;
	}
	for (char *s = p;; s = seg + 1) {
		char *e;

		seg = strchr(s, '/');
		if (seg)
			*seg = '\0';
		e = curl_easy_escape(h, s, 0);
		if (!e) {
			rc = px_errorf(err, PX_ENOMEM, "url");
			goto out_free;
		}
		el = strlen(e);
		memcpy(enc + len, e, el);
		len += el;
		curl_free(e);
		if (seg)
			enc[len++] = '/';
		if (!seg)
			break;
	}
	enc[len] = '\0';
	if (endpoint)
		n = asprintf(&out, "%s/%s/%s", endpoint, u->bucket, enc);
	else if (strchr(u->bucket, '.'))
		n = asprintf(&out, "https://s3.%s.amazonaws.com/%s/%s", region,
			     u->bucket, enc);
	else
		n = asprintf(&out, "https://%s.s3.%s.amazonaws.com/%s",
			     u->bucket, region, enc);
	if (n < 0)
		rc = px_errorf(err, PX_ENOMEM, "url");
	else
		*ret = out;
out_free:
	free(p);
	free(enc);
	return rc;
}

/* The region to sign s3:// requests for (see fetch_opts.region). */
static void s3_region(const struct fetch_opts *o, char *buf, size_t len)
{
	if (o->region && *o->region &&
	    strlen(o->region) < len) {
		snprintf(buf, len, "%s", o->region);
		return;
	}
	if (awscred_region(buf, len, NULL) != PX_OK || !buf[0] ||
	    strpbrk(buf, ":/ ") || strlen(buf) > REGION_MAX)
		snprintf(buf, len, "us-east-1");
}

/* Each address libcurl connects to, the first and any a redirect or a
 * name that now resolves elsewhere brings: never a link-local or
 * metadata address, and loopback only for a URL that names a loopback
 * host (agent/outbound.h: the daemon holds a job's URLs to its rules at
 * submit, and this keeps them to it when the name is resolved again). */
static curl_socket_t open_socket(void *ud, curlsocktype purpose,
				 struct curl_sockaddr *a)
{
	struct dl *d = ud;
	enum fetch_addr_class c = fetch_addr_class(&a->addr);
	char ip[INET6_ADDRSTRLEN] = "?";
	const void *bits = a->family == AF_INET6 ?
		(const void *)&((struct sockaddr_in6 *)(void *)&a->addr)->
			sin6_addr :
		(const void *)&((struct sockaddr_in *)(void *)&a->addr)->
			sin_addr;

	(void)purpose;
	if (c == FETCH_ADDR_NEVER || (c == FETCH_ADDR_LOOPBACK &&
				      d->u->kind == FETCH_HTTP &&
				      !d->u->loopback)) {
		(void)inet_ntop(a->family, bits, ip, sizeof ip);
		snprintf(d->refused, sizeof d->refused, "address %s refused: "
			 "%s", ip, c == FETCH_ADDR_NEVER ? "a link-local or "
			 "metadata address is never reached" : "a loopback "
			 "address for a host that is not this one");
		return CURL_SOCKET_BAD;
	}
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* The easy handle's settings that do not change between attempts.
 * http_ok: the URL (or the S3 endpoint) is http:// and allowed; a
 * redirect still goes to https:// only, unless o->allow_http. */
static void dl_setup(struct dl *d, bool http_ok)
{
	const struct fetch_opts *o = d->o;

	curl_easy_setopt(d->easy, CURLOPT_PROTOCOLS_STR,
			 http_ok || o->allow_http ? "http,https" : "https");
	curl_easy_setopt(d->easy, CURLOPT_REDIR_PROTOCOLS_STR,
			 o->allow_http ? "http,https" : "https");
	curl_easy_setopt(d->easy, CURLOPT_USERAGENT, "proteus/" PX_VERSION);
	curl_easy_setopt(d->easy, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(d->easy, CURLOPT_SSL_VERIFYHOST, 2L);
	curl_easy_setopt(d->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(d->easy, CURLOPT_PATH_AS_IS, 1L); /* keys with ".." */
	curl_easy_setopt(d->easy, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)((o->connect_timeout_us ? o->connect_timeout_us
				 : 10 * PX_USEC_PER_SEC) / 1000));
	curl_easy_setopt(d->easy, CURLOPT_LOW_SPEED_LIMIT,
			 (long)(o->low_speed_bytes ? o->low_speed_bytes : 1024));
	curl_easy_setopt(d->easy, CURLOPT_LOW_SPEED_TIME,
			 (long)(o->low_speed_time_s ? o->low_speed_time_s : 30));
	curl_easy_setopt(d->easy, CURLOPT_MAXFILESIZE_LARGE,
			 (curl_off_t)(d->max > INT64_MAX ? INT64_MAX : d->max));
	curl_easy_setopt(d->easy, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(d->easy, CURLOPT_WRITEDATA, d);
	curl_easy_setopt(d->easy, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(d->easy, CURLOPT_HEADERDATA, d);
	curl_easy_setopt(d->easy, CURLOPT_XFERINFOFUNCTION, progress_cb);
	curl_easy_setopt(d->easy, CURLOPT_XFERINFODATA, d);
	curl_easy_setopt(d->easy, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(d->easy, CURLOPT_ERRORBUFFER, d->errbuf);
	curl_easy_setopt(d->easy, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(d->easy, CURLOPT_OPENSOCKETDATA, d);
	if (d->u->kind == FETCH_HTTP) {
		curl_easy_setopt(d->easy, CURLOPT_FOLLOWLOCATION, 1L);
		curl_easy_setopt(d->easy, CURLOPT_MAXREDIRS, 5L);
	}
}

/* One attempt's request: the URL and, for S3, the signature.  The
 * header list is the caller's. */
static enum px_err dl_request(struct dl *d, struct awscred_provider *creds,
			      const char *region, struct curl_slist **hdrs,
			      struct px_error *err)
{
	char sigv4[FETCH_SHA256_HEX + 32], *url = NULL;
	struct curl_slist *h;
	enum px_err rc;

	if (d->u->kind != FETCH_S3) {
		curl_easy_setopt(d->easy, CURLOPT_URL, d->u->url);
		return PX_OK;
	}
	rc = s3_object_url(d->easy, d->endpoint, d->u, region, &url, err);
	if (rc != PX_OK)
		return rc;
	curl_easy_setopt(d->easy, CURLOPT_URL, url);
	free(url);
	snprintf(sigv4, sizeof sigv4, "x-amz-content-sha256: %s",
		 d->payload ? d->payload : EMPTY_SHA256);
	h = curl_slist_append(*hdrs, sigv4);
	if (!h)
		return px_errorf(err, PX_ENOMEM, "request headers");
	*hdrs = h;
	if (d->method && !strcmp(d->method, "PUT")) {
		d->up_off = 0;
		curl_easy_setopt(d->easy, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(d->easy, CURLOPT_INFILESIZE_LARGE,
				 (curl_off_t)d->up_size);
		curl_easy_setopt(d->easy, CURLOPT_READFUNCTION, read_cb);
		curl_easy_setopt(d->easy, CURLOPT_READDATA, d);
		curl_easy_setopt(d->easy, CURLOPT_SEEKFUNCTION, seek_cb);
		curl_easy_setopt(d->easy, CURLOPT_SEEKDATA, d);
	} else if (d->method) {
		curl_easy_setopt(d->easy, CURLOPT_CUSTOMREQUEST, d->method);
	}
	rc = awscred_curl_sign(creds, d->easy, hdrs, err);
	if (rc != PX_OK)
		return rc;
	snprintf(sigv4, sizeof sigv4, "aws:amz:%s:s3", region);
	curl_easy_setopt(d->easy, CURLOPT_AWS_SIGV4, sigv4);
	curl_easy_setopt(d->easy, CURLOPT_HTTPHEADER, *hdrs);
	return PX_OK;
}

/* What one finished attempt means: PX_OK with the data in the file, or
 * an error in err with *retry saying whether another try may do better. */
static enum px_err dl_outcome(struct dl *d, CURLcode cc, bool *retry,
			      struct px_error *err)
{
	const char *shown = d->u->shown;
	char code[160], msg[600];
	long st = 0;

	*retry = false;
	if (d->read_errno)   /* (a read callback's abort) */
		return px_errorf(err, PX_ESYS | d->read_errno, "%s: reading "
				 "what is sent: %s", shown,
				 strerror(d->read_errno));
	if (cc == CURLE_ABORTED_BY_CALLBACK)
		return px_errorf(err, PX_ECANCELED, "%s: stopped", shown);
	if (d->too_big || cc == CURLE_FILESIZE_EXCEEDED)
		return px_errorf(err, PX_ETOOBIG, "%s: larger than %" PRIu64
				 " bytes", shown, d->max);
	if (d->refused[0] && cc != CURLE_OK)
		return px_errorf(err, PX_EINVAL, "%s: %s", shown, d->refused);
	if (d->write_errno)
		return px_errorf(err, PX_ESYS | d->write_errno, "%s: writing "
				 "into the cache: %s", shown,
				 strerror(d->write_errno));
	if (cc != CURLE_OK && !d->body_full) {
		*retry = curl_retryable(cc);
		return px_errorf(err, PX_EHTTP, "%s: %s", shown,
				 d->errbuf[0] ? d->errbuf
					      : curl_easy_strerror(cc));
	}
	curl_easy_getinfo(d->easy, CURLINFO_RESPONSE_CODE, &st);
	if (st == 200 || (st == 204 && d->method))
		return PX_OK;
	s3_error(d->body, d->body_len, code, sizeof code, msg, sizeof msg);
	*retry = ec2_retry_is_retryable(st, code, false);
	return px_errorf(err, st == 404 ? PX_ENOENT : code[0] ? PX_EAWS
			 : PX_EHTTP, "%s: %ld %s%s%s%s%s%s", shown, st,
			 reason_phrase(st), code[0] ? " (" : "", code,
			 msg[0] ? ": " : "", msg, code[0] ? ")" : "");
}

/* Download u into d's file until it is whole or a try fails for good. */
static enum px_err dl_run(struct dl *d, int *ret_attempts,
			  struct px_error *err)
{
	const struct fetch_opts *o = d->o;
	struct awscred_provider *own = NULL, *creds = o->creds;
	int max_attempts = o->max_attempts > 0 ? o->max_attempts : 4;
	uint64_t rng = px_now_mono_us() ^ (uint64_t)px_now_wall_us();
	char region[REGION_MAX + 1];
	bool retry, moved = false;
	enum px_err rc;
	int attempt = 0;

	if (d->u->kind == FETCH_S3) {
		s3_region(o, region, sizeof region);
		if (!creds) {
			rc = awscred_provider_new(NULL, &own, err);
			if (rc != PX_OK) {
				px_error_prefix(err, "%s: ", d->u->shown);
				return rc;
			}
			creds = own;
		}
	}
	for (;;) {
		struct curl_slist *hdrs = NULL;
		CURLcode cc;

		attempt++;
		d->bytes = 0;
		d->body_len = 0;
		d->too_big = d->body_full = false;
		d->write_errno = d->read_errno = 0;
		d->bucket_region[0] = d->errbuf[0] = d->refused[0] = '\0';
		if ((d->fd >= 0 && (ftruncate(d->fd, 0) != 0 ||
				    lseek(d->fd, 0, SEEK_SET) != 0)) ||
		    EVP_DigestInit_ex(d->md, EVP_sha256(), NULL) != 1) {
			rc = px_errorf(err, PX_ESYS | errno, "%s: the cache's "
				       "file: %s", d->u->shown,
				       strerror(errno));
			break;
		}
		rc = dl_request(d, creds, region, &hdrs, err);
		cc = rc == PX_OK ? curl_easy_perform(d->easy) : CURLE_OK;
		curl_easy_setopt(d->easy, CURLOPT_HTTPHEADER, NULL);
		curl_slist_free_all(hdrs);
		if (rc != PX_OK)
			break;
		rc = dl_outcome(d, cc, &retry, err);
		if (rc == PX_OK)
			break;
		/* S3 names the bucket's region when asked in another: ask
		 * there, once, without counting it a failed try. */
		if (d->u->kind == FETCH_S3 && !moved && d->bucket_region[0] &&
		    strcmp(d->bucket_region, region) != 0) {
			snprintf(region, sizeof region, "%s", d->bucket_region);
			moved = true;
			attempt--;
			continue;
		}
		if (!retry || attempt >= max_attempts)
			break;
		if (!dl_wait(o, 1 + ec2_retry_delay_us(attempt,
				o->backoff_base_us ? o->backoff_base_us
						   : PX_USEC_PER_SEC,
				o->backoff_cap_us ? o->backoff_cap_us
						  : 20 * PX_USEC_PER_SEC,
				&rng))) {
			rc = px_errorf(err, PX_ECANCELED, "%s: stopped",
				       d->u->shown);
			break;
		}
	}
	if (rc != PX_OK && rc != PX_ECANCELED && attempt > 1 && err)
		snprintf(err->msg + strlen(err->msg), sizeof err->msg -
			 strlen(err->msg), " (%d attempts)", attempt);
	awscred_provider_free(own);
	*ret_attempts = attempt;
	return rc;
}

/* A remote URL: the cache's copy when it is there and right, else a
 * download into the cache. */
static enum px_err fetch_remote(const struct fetch_opts *o,
				const struct fetch_url *u, const char *hex,
				struct fetch_result *ret,
				struct px_error *err)
{
	char dirbuf[FETCH_PATH_MAX], final[FETCH_PATH_MAX];
	char got[FETCH_SHA256_HEX + 1];
	const char *dir = o->cache_dir;
	struct dl d = { .o = o, .u = u, .fd = -1, .up_fd = -1 };
	struct fetch_result r = { 0 };
	uint64_t max = o->max_bytes ? o->max_bytes : FETCH_MAX_BYTES_DEFAULT;
	enum px_err rc;
	bool plain;
	int n;

	if (u->plain && !u->loopback && !o->allow_http)
		return http_refused(u->shown, err);
	if (!dir || !*dir) {
		rc = fetch_default_cache_dir(dirbuf, sizeof dirbuf, err);
		if (rc != PX_OK)
			return rc;
		dir = dirbuf;
	}
	rc = make_dir(dir, err);
	if (rc != PX_OK)
		return rc;
	n = snprintf(final, sizeof final, "%s/sha256-%s", dir, hex);
	if (n < 0 || (size_t)n >= sizeof final)
		return px_errorf(err, PX_ETOOBIG, "cache directory '%.200s': "
				 "path too long", dir);
	if (access(final, F_OK) == 0) {
		rc = hash_file(final, final, max, got, &r.bytes, err);
		if (rc == PX_OK && strcmp(got, hex) == 0) {
			r.cached = true;
			goto out_done;
		}
		/* a bad copy (a disk fault, a hand edit) goes; one that is
		 * not a file at all is for a person to look at */
		if (rc != PX_OK && rc != PX_ETOOBIG)
			return rc;
		if (unlink(final) != 0)
			return px_errorf(err, PX_ESYS | errno, "'%s': corrupt, "
					 "and cannot be removed: %s", final,
					 strerror(errno));
	}
	d.max = max;
	d.md = EVP_MD_CTX_new();
	d.easy = curl_easy_init();
	d.body = malloc(ERRBODY_MAX);
	if (!d.md || !d.easy || !d.body) {
		rc = px_errorf(err, PX_ENOMEM, "download");
		goto out_free;
	}
	rc = PX_OK;
	plain = u->plain;
	if (u->kind == FETCH_S3)
		rc = s3_endpoint(o, &d.endpoint, &plain, err);
	if (rc == PX_OK)
		rc = dl_open(&d, dir, hex, err);
	if (rc != PX_OK)
		goto out_free;
	dl_setup(&d, plain);
	rc = dl_run(&d, &r.attempts, err);
	if (rc == PX_OK)
		rc = md_hex(d.md, got, err);
	if (rc == PX_OK && strcmp(got, hex) != 0)
		rc = mismatch(u->shown, hex, got, err);
	if (rc == PX_OK)
		rc = dl_place(&d, final, err);
	r.bytes = d.bytes;
out_free:
	dl_close(&d);
	curl_easy_cleanup(d.easy);
	EVP_MD_CTX_free(d.md);
	free(d.body);
	free(d.endpoint);
	if (rc != PX_OK)
		return rc;
out_done:
	if (!realpath(final, r.path))
		snprintf(r.path, sizeof r.path, "%s", final);
	memcpy(r.sha256, hex, sizeof r.sha256);
	*ret = r;
	return PX_OK;
}

enum px_err fetch_file(const struct fetch_opts *o, const char *url,
		       const char *sha256_hex, struct fetch_result *ret,
		       struct px_error *err)
{
	static const struct fetch_opts defaults = { 0 };
	struct fetch_result r = { 0 };
	struct fetch_url u;
	char hex[FETCH_SHA256_HEX + 1];
	enum px_err rc;

	if (!o)
		o = &defaults;
	if (sha256_hex && !fetch_sha256_valid(sha256_hex))
		return px_errorf(err, PX_EINVAL, "sha256 '%.80s': not 64 hex "
				 "digits", sha256_hex);
	for (int i = 0; sha256_hex && i <= FETCH_SHA256_HEX; i++)
		hex[i] = (char)(sha256_hex[i] >= 'A' && sha256_hex[i] <= 'F'
				? sha256_hex[i] - 'A' + 'a' : sha256_hex[i]);
	rc = fetch_url_parse(url, &u, err);
	if (rc != PX_OK)
		return rc;
	if (u.kind == FETCH_LOCAL) {
		rc = hash_file(u.path, u.shown, o->max_bytes ? o->max_bytes
			       : FETCH_MAX_BYTES_DEFAULT, r.sha256, &r.bytes,
			       err);
		if (rc == PX_OK && sha256_hex && strcmp(r.sha256, hex) != 0)
			rc = mismatch(u.shown, hex, r.sha256, err);
		if (rc == PX_OK && !realpath(u.path, r.path))
			rc = px_errorf(err, PX_ESYS | errno, "%s: %s", u.shown,
				       strerror(errno));
		if (rc == PX_OK)
			*ret = r;
		goto out_release;
	}
	if (!sha256_hex) {
		rc = px_errorf(err, PX_EINVAL, "%s: a remote file needs its "
			       "sha256", u.shown);
		goto out_release;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		rc = px_errorf(err, PX_EHTTP, "curl_global_init failed");
		goto out_release;
	}
	xmlInitParser();
	rc = fetch_remote(o, &u, hex, ret, err);
out_release:
	fetch_url_release(&u);
	return rc;
}

/* ------------------------------------------------------------ S3 objects */

/* One S3 call other than a download (d: its method and body), with the
 * retries, the region rule and the addresses of fetch_file. */
static enum px_err s3_call(const struct fetch_opts *o, const char *url,
			   struct dl *d, struct px_error *err)
{
	static const struct fetch_opts defaults = { 0 };
	struct fetch_url u;
	enum px_err rc;
	bool plain = false;
	int attempts = 0;

	if (!o)
		o = &defaults;
	rc = fetch_url_parse(url, &u, err);
	if (rc != PX_OK)
		return rc;
	if (u.kind != FETCH_S3) {
		rc = px_errorf(err, PX_EINVAL, "%s: not an s3:// url", u.shown);
		goto out_release;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		rc = px_errorf(err, PX_EHTTP, "curl_global_init failed");
		goto out_release;
	}
	xmlInitParser();
	d->o = o;
	d->u = &u;
	d->max = o->max_bytes ? o->max_bytes : FETCH_MAX_BYTES_DEFAULT;
	d->md = EVP_MD_CTX_new();
	d->easy = curl_easy_init();
	d->body = malloc(ERRBODY_MAX);
	if (!d->md || !d->easy || !d->body) {
		rc = px_errorf(err, PX_ENOMEM, "%s", u.shown);
		goto out_free;
	}
	rc = s3_endpoint(o, &d->endpoint, &plain, err);
	if (rc != PX_OK)
		goto out_free;
	dl_setup(d, plain);
	rc = dl_run(d, &attempts, err);
out_free:
	curl_easy_cleanup(d->easy);
	EVP_MD_CTX_free(d->md);
	free(d->body);
	free(d->endpoint);
	d->easy = NULL;
	d->md = NULL;
	d->body = NULL;
	d->endpoint = NULL;
out_release:
	fetch_url_release(&u);
	return rc;
}

enum px_err fetch_s3_put(const struct fetch_opts *o, const char *url,
			 int fd, const void *mem, uint64_t size,
			 const char *sha256_hex, struct px_error *err)
{
	char hex[FETCH_SHA256_HEX + 1];
	struct dl d = { .fd = -1, .up_fd = fd, .up_mem = mem,
			.up_size = size, .method = "PUT", .payload = hex };

	if (!fetch_sha256_valid(sha256_hex))
		return px_errorf(err, PX_EINVAL, "sha256 '%.80s': not 64 hex "
				 "digits", sha256_hex ? sha256_hex : "");
	for (int i = 0; i <= FETCH_SHA256_HEX; i++)
		hex[i] = (char)(sha256_hex[i] >= 'A' && sha256_hex[i] <= 'F'
				? sha256_hex[i] - 'A' + 'a' : sha256_hex[i]);
	if (!mem && fd < 0)
		return px_errorf(err, PX_EINVAL, "no body to send");
	return s3_call(o, url, &d, err);
}

enum px_err fetch_s3_delete(const struct fetch_opts *o, const char *url,
			    struct px_error *err)
{
	struct dl d = { .fd = -1, .up_fd = -1, .method = "DELETE" };

	return s3_call(o, url, &d, err);
}

enum px_err fetch_s3_get(const struct fetch_opts *o, const char *url,
			 size_t max, char **ret, size_t *ret_len,
			 struct px_error *err)
{
	struct fetch_opts mo = o ? *o : (struct fetch_opts){ 0 };
	struct dl d = { .up_fd = -1 };
	enum px_err rc;
	struct stat st;
	char *buf;

	mo.max_bytes = max;
	d.fd = memfd_create("fetch-s3-get", MFD_CLOEXEC);
	if (d.fd < 0)
		return px_errorf(err, PX_ESYS | errno, "memfd_create: %s",
				 strerror(errno));
	rc = s3_call(&mo, url, &d, err);
	if (rc == PX_OK && fstat(d.fd, &st) != 0)
		rc = px_errorf(err, PX_ESYS | errno, "fstat: %s",
			       strerror(errno));
	if (rc == PX_OK && (uint64_t)st.st_size > max)
		rc = px_errorf(err, PX_ETOOBIG, "larger than %zu bytes", max);
	buf = rc == PX_OK ? malloc((size_t)st.st_size + 1) : NULL;
	if (rc == PX_OK && !buf)
		rc = px_errorf(err, PX_ENOMEM, "out of memory");
	if (rc == PX_OK && pread(d.fd, buf, (size_t)st.st_size, 0) !=
	    (ssize_t)st.st_size)
		rc = px_errorf(err, PX_ESYS | errno, "reading it back: %s",
			       strerror(errno));
	close(d.fd);
	if (rc != PX_OK) {
		free(buf);
		return rc;
	}
	buf[st.st_size] = '\0';
	*ret = buf;
	*ret_len = (size_t)st.st_size;
	return PX_OK;
}
