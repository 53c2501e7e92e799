/* test_fetch.c -- cloudapi/fetch.c and `proteus-trainer fetch` against
 * tests/fake_s3/fake_s3.py on loopback: local files checked in place (a
 * FIFO refused at once), s3:// signed, cached and served from the cache,
 * bad checksums, 403/404, retried 500s and cut bodies, the size bound,
 * http:// to another host refused, the bucket's region followed, a
 * session token, and no credential in the CLI's output. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "../../cloudapi/fetch.h"
#include "../fake_ec2/fake.h"
#include "pxrun.h"

#define TOK_AKID "AKIDTOKENEXAMPLE"
#define TOK_SECRET "tokSecretKeyForTheFakeS3xxxxxxxxxxxxxxxx"
#define TOK_TOKEN "FwoGZXIvYXdzEXAMPLEsessionTOKEN"
#define BIG_LEN (300u * 1024)

static struct fake F;
static char *tmp;
static char root[600], cache[600];
static unsigned char *big;
static char big_hex[65];

static void sha_hex(const void *p, size_t n, char out[65])
{
	static const char hx[] = "0123456789abcdef";
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dl = 0;

	cr_assert_eq(EVP_Digest(p, n, d, &dl, EVP_sha256(), NULL), 1);
	for (unsigned i = 0; i < 32; i++) {
		out[2 * i] = hx[d[i] >> 4];
		out[2 * i + 1] = hx[d[i] & 15];
	}
	out[64] = '\0';
}

/* dir/rel with these bytes, its folders made. */
static void put(const char *dir, const char *rel, const void *data,
		size_t n)
{
	char path[1200];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, rel);
	for (char *s = path + strlen(dir) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(path, 0700);
		*s = '/';
	}
	f = fopen(path, "wb");
	cr_assert_not_null(f, "%s", path);
	cr_assert_eq(fwrite(data, 1, n, f), n);
	fclose(f);
}

static void setup(void)
{
	const char *args[12];
	uint32_t x = 12345;

	tmp = px_tmpdir();
	cr_assert_not_null(tmp);
	snprintf(root, sizeof root, "%s/s3", tmp);
	snprintf(cache, sizeof cache, "%s/cache", tmp);
	big = malloc(BIG_LEN);
	for (size_t i = 0; i < BIG_LEN; i++) {
		x = x * 1103515245u + 12345u;
		big[i] = (unsigned char)(x >> 16);
	}
	sha_hex(big, BIG_LEN, big_hex);
	mkdir(root, 0700);
	put(root, "data/train.bin", big, BIG_LEN);
	put(root, "data/dir/a=b c+d~.bin", "spaces and signs\n", 17);
	put(root, "pub/open.bin", "anyone\n", 7);
	args[0] = "--root";
	args[1] = root;
	args[2] = "--public";
	args[3] = "pub";
	args[4] = "--key";
	args[5] = FAKE_AKID ":" FAKE_SECRET;
	args[6] = "--key";
	args[7] = TOK_AKID ":" TOK_SECRET ":" TOK_TOKEN;
	args[8] = NULL;
	fake_start_script(&F, "tests/fake_s3/fake_s3.py", args);
	/* the chain's first source, and nothing of this machine's own */
	setenv("HOME", tmp, 1);
	setenv("AWS_ACCESS_KEY_ID", FAKE_AKID, 1);
	setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET, 1);
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_SECURITY_TOKEN");
	unsetenv("AWS_PROFILE");
	unsetenv("AWS_DEFAULT_REGION");
	unsetenv("AWS_ENDPOINT_URL");
	unsetenv("STATE_DIRECTORY");
	setenv("AWS_REGION", "us-east-1", 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	setenv("AWS_ENDPOINT_URL_S3", F.url, 1); /* with its trailing '/' */
}

static void teardown(void)
{
	fake_stop(&F);
	px_rmtree(tmp);
	free(tmp);
	free(big);
}

TestSuite(fetch, .init = setup, .fini = teardown, .timeout = 60);

/* Fast retries: the tests wait for events, not for time. */
static struct fetch_opts opts(void)
{
	struct fetch_opts o = { .cache_dir = cache, .backoff_base_us = 1000,
				.backoff_cap_us = 5000 };

	return o;
}

/* Requests the fake has seen with this method (and status, 0: any). */
static int seen(const char *method, long status)
{
	long st = 0;
	char *body = fake_get(&F, "cmd=requests", &st);
	json_error_t je;
	json_t *j = json_loads(body, 0, &je), *r;
	size_t i;
	int n = 0;

	cr_assert_eq(st, 200, "%s", body);
	cr_assert(json_is_array(j), "%s", body);
	json_array_foreach(j, i, r) {
		if (strcmp(json_string_value(json_object_get(r, "method")),
			   method) == 0 &&
		    (!status || json_integer_value(json_object_get(r,
						    "status")) == status))
			n++;
	}
	json_decref(j);
	free(body);
	return n;
}

/* Names in the cache directory (0 when it is not there). */
static int cache_entries(void)
{
	DIR *d = opendir(cache);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/* ------------------------------------------------------------ parsing */

Test(fetch, url_forms)
{
	struct fetch_url u;
	struct px_error err = { 0 };
	char buf[600];

	cr_assert_eq(fetch_url_parse("s3://my.bucket-1/a/b c", &u, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(u.kind, FETCH_S3);
	cr_assert_str_eq(u.bucket, "my.bucket-1");
	cr_assert_str_eq(u.key, "a/b c");
	cr_assert_str_eq(u.shown, "s3://my.bucket-1/a/b c");
	fetch_url_release(&u);
	cr_assert_eq(fetch_url_parse("https://u:pw@h.example:8443/p/f?X-Amz-"
				     "Signature=abc", &u, &err), PX_OK);
	cr_assert_eq(u.kind, FETCH_HTTP);
	cr_assert(!u.plain && !u.loopback);
	cr_assert_str_eq(u.shown, "https://h.example:8443/p/f?...");
	fetch_url_release(&u);
	cr_assert_eq(fetch_url_parse("http://[::1]:9/x", &u, &err), PX_OK);
	cr_assert(u.plain && u.loopback);
	fetch_url_release(&u);
	cr_assert_eq(fetch_url_parse("http://127.3.4.5/x", &u, &err), PX_OK);
	cr_assert(u.loopback);
	fetch_url_release(&u);
	cr_assert_eq(fetch_url_parse("http://128.0.0.1/x", &u, &err), PX_OK);
	cr_assert(!u.loopback);
	fetch_url_release(&u);
	cr_assert_eq(fetch_url_parse("file:///tmp/a%20b", &u, &err), PX_OK);
	cr_assert_eq(u.kind, FETCH_LOCAL);
	cr_assert_str_eq(u.path, "/tmp/a b");
	fetch_url_release(&u);
	cr_assert_eq(fetch_url_parse("rel/x.bin", &u, &err), PX_OK);
	cr_assert_eq(u.kind, FETCH_LOCAL);
	cr_assert_str_eq(u.path, "rel/x.bin");
	fetch_url_release(&u);
	cr_assert_eq(fetch_url_parse("s3://Bad_Bucket/k", &u, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "bad bucket name"), "%s", err.msg);
	cr_assert_eq(fetch_url_parse("s3://bucket", &u, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "no key"), "%s", err.msg);
	cr_assert_eq(fetch_url_parse("s3://bucket/", &u, &err), PX_EINVAL);
	cr_assert_eq(fetch_url_parse("s3://-bucket/k", &u, &err), PX_EINVAL);
	cr_assert_eq(fetch_url_parse("ftp://h/x", &u, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "unsupported scheme"), "%s", err.msg);
	cr_assert_eq(fetch_url_parse("file://otherhost/x", &u, &err),
		     PX_EINVAL);
	cr_assert_eq(fetch_url_parse("", &u, &err), PX_EINVAL);
	cr_assert(fetch_sha256_valid(big_hex));
	cr_assert(!fetch_sha256_valid("abc"));
	setenv("STATE_DIRECTORY", "/var/lib/proteus:/other", 1);
	cr_assert_eq(fetch_default_cache_dir(buf, sizeof buf, &err), PX_OK);
	cr_assert_str_eq(buf, "/var/lib/proteus/data");
	unsetenv("STATE_DIRECTORY");
	cr_assert_eq(fetch_default_cache_dir(buf, sizeof buf, &err), PX_OK);
	snprintf(buf + 300, 300, "%s/.cache/proteus/data", tmp);
	cr_assert_str_eq(buf, buf + 300);
}

/* ------------------------------------------------------------ local */

Test(fetch, local_file_checked_in_place)
{
	struct fetch_opts o = opts();
	struct fetch_result r;
	struct px_error err = { 0 };
	char path[700], url[800], real[PATH_MAX];

	put(tmp, "local/train.bin", big, BIG_LEN);
	snprintf(path, sizeof path, "%s/local/train.bin", tmp);
	cr_assert_not_null(realpath(path, real));
	cr_assert_eq(fetch_file(&o, path, big_hex, &r, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_str_eq(r.path, real); /* the file itself, not a copy */
	cr_assert_eq(r.bytes, BIG_LEN);
	cr_assert_str_eq(r.sha256, big_hex);
	cr_assert(!r.cached);
	cr_assert_eq(r.attempts, 0);
	cr_assert_eq(cache_entries(), 0);
	snprintf(url, sizeof url, "file://%s", path);
	cr_assert_eq(fetch_file(&o, url, NULL, &r, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_str_eq(r.sha256, big_hex); /* reported when not given */
}

Test(fetch, local_checksum_mismatch)
{
	struct fetch_opts o = opts();
	struct fetch_result r = { .bytes = 7 };
	struct px_error err = { 0 };
	char path[700], want[1000], wrong[65];

	put(tmp, "local/train.bin", big, BIG_LEN);
	snprintf(path, sizeof path, "%s/local/train.bin", tmp);
	memset(wrong, '0', 64);
	wrong[64] = '\0';
	cr_assert_eq(fetch_file(&o, path, wrong, &r, &err), PX_EINVAL);
	snprintf(want, sizeof want, "%s: checksum mismatch: expected %s, got "
		 "%s", path, wrong, big_hex);
	cr_assert_str_eq(err.msg, want);
	cr_assert_eq(r.bytes, 7, "*ret written on a failure");
	cr_assert_eq(fetch_file(&o, path, "12ab", &r, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "not 64 hex digits"), "%s", err.msg);
}

/* A FIFO with no writer: an open without O_NONBLOCK would wait forever
 * (the suite's timeout would end the test). */
Test(fetch, fifo_and_directory_refused_at_once)
{
	struct fetch_opts o = opts();
	struct fetch_result r;
	struct px_error err = { 0 };
	char path[700];

	snprintf(path, sizeof path, "%s/fifo", tmp);
	cr_assert_eq(mkfifo(path, 0600), 0);
	cr_assert_eq(fetch_file(&o, path, big_hex, &r, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "a FIFO, not a regular file"), "%s",
		  err.msg);
	cr_assert_eq(fetch_file(&o, tmp, NULL, &r, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "a directory"), "%s", err.msg);
	snprintf(path, sizeof path, "%s/none", tmp);
	cr_assert_eq(fetch_file(&o, path, NULL, &r, &err), PX_ENOENT);
}

/* ------------------------------------------------------------ s3 */

Test(fetch, s3_then_from_the_cache)
{
	struct fetch_opts o = opts();
	struct fetch_result r;
	struct px_error err = { 0 };
	char want[700], *data;
	size_t n;
	struct stat st;

	cr_assert_eq(fetch_file(&o, "s3://data/train.bin", big_hex, &r, &err),
		     PX_OK, "%s", err.msg);
	snprintf(want, sizeof want, "%s/sha256-%s", cache, big_hex);
	cr_assert_str_eq(r.path, want);
	cr_assert(!r.cached);
	cr_assert_eq(r.attempts, 1);
	cr_assert_eq(r.bytes, BIG_LEN);
	data = px_test_read_file(r.path, &n);
	cr_assert_not_null(data, "%s", r.path);
	cr_assert(n == BIG_LEN && !memcmp(data, big, n));
	free(data);
	cr_assert_eq(stat(cache, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0700);
	cr_assert_eq(cache_entries(), 1);
	cr_assert_eq(seen("GET", 200), 1);
	/* again: the cache's copy, hashed again, and no request */
	cr_assert_eq(fetch_file(&o, "s3://data/train.bin", big_hex, &r, &err),
		     PX_OK, "%s", err.msg);
	cr_assert(r.cached);
	cr_assert_eq(r.attempts, 0);
	cr_assert_str_eq(r.path, want);
	cr_assert_eq(seen("GET", 0), 1);
}

/* A key with characters that S3's canonical URI encodes (= space +),
 * signed as S3 checks it (the fake recomputes it with botocore). */
Test(fetch, s3_key_encoded)
{
	struct fetch_opts o = opts();
	struct fetch_result r;
	struct px_error err = { 0 };
	char hex[65];

	sha_hex("spaces and signs\n", 17, hex);
	cr_assert_eq(fetch_file(&o, "s3://data/dir/a=b c+d~.bin", hex, &r,
				&err), PX_OK, "%s", err.msg);
	cr_assert_eq(r.bytes, 17);
	cr_assert_eq(seen("GET", 200), 1);
}

Test(fetch, s3_corrupt_cache_fetched_again)
{
	struct fetch_opts o = opts();
	struct fetch_result r;
	struct px_error err = { 0 };
	char name[80], *data;
	size_t n;

	mkdir(cache, 0700);
	snprintf(name, sizeof name, "sha256-%s", big_hex);
	put(cache, name, "bit rot", 7);
	cr_assert_eq(fetch_file(&o, "s3://data/train.bin", big_hex, &r, &err),
		     PX_OK, "%s", err.msg);
	cr_assert(!r.cached);
	cr_assert_eq(seen("GET", 200), 1);
	data = px_test_read_file(r.path, &n);
	cr_assert_not_null(data, "%s", r.path);
	cr_assert(n == BIG_LEN && !memcmp(data, big, n));
	free(data);
}

Test(fetch, s3_checksum_mismatch_leaves_nothing)
{
	struct fetch_opts o = opts();
	struct fetch_result r;
	struct px_error err = { 0 };
	char wrong[65], want[300];

	memcpy(wrong, big_hex, 65);
	wrong[0] = wrong[0] == 'a' ? 'b' : 'a';
	cr_assert_eq(fetch_file(&o, "s3://data/train.bin", wrong, &r, &err),
		     PX_EINVAL);
	snprintf(want, sizeof want, "s3://data/train.bin: checksum mismatch: "
		 "expected %s, got %s", wrong, big_hex);
	cr_assert_str_eq(err.msg, want);
	cr_assert_eq(seen("GET", 0), 1, "a bad checksum is not retried");
	cr_assert_eq(cache_entries(), 0, "the bad download stayed");
}

Test(fetch, s3_wrong_credentials_403)
{
	static const char pre[] = "s3://data/train.bin: 403 Forbidden "
		"(SignatureDoesNotMatch: The request signature we calculated";
	struct fetch_opts o = opts();
	struct fetch_result r;
	struct px_error err = { 0 };

	setenv("AWS_SECRET_ACCESS_KEY", "notTheSecretxxxxxxxxxxxxxxxxxxxxxxxxxxx", 1);
	cr_assert_eq(fetch_file(&o, "s3://data/train.bin", big_hex, &r, &err),
		     PX_EAWS);
	cr_assert(!strncmp(err.msg, pre, strlen(pre)), "%s", err.msg);
	cr_assert_null(strstr(err.msg, "notTheSecret"));
	cr_assert_eq(seen("GET", 403), 1, "a 403 is not retried");
	setenv("AWS_ACCESS_KEY_ID", "AKIDUNKNOWN", 1);
	cr_assert_eq(fetch_file(&o, "s3://data/train.bin", big_hex, &r, &err),
		     PX_EAWS);
	cr_assert(strstr(err.msg, ": 403 Forbidden (InvalidAccessKeyId: "),
		  "%s", err.msg);
	cr_assert_eq(cache_entries(), 0);
}

Test(fetch, s3_404)
{
	struct fetch_opts o = opts();
	struct fetch_result r;
	struct px_error err = { 0 };

	cr_assert_eq(fetch_file(&o, "s3://data/nothing.bin", big_hex, &r,
				&err), PX_ENOENT);
	cr_assert_str_eq(err.msg, "s3://data/nothing.bin: 404 Not Found "
			 "(NoSuchKey: The specified key does not exist.)");
	cr_assert_eq(seen("GET", 0), 1);
}

Test(fetch, s3_500_retried_then_ok)
{
	struct fetch_opts o = opts();
	struct fetch_result r;
	struct px_error err = { 0 };

	json_decref(fake_ctl(&F, "{\"fail\": 2}"));
	cr_assert_eq(fetch_file(&o, "s3://data/train.bin", big_hex, &r, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(r.attempts, 3);
	cr_assert_eq(seen("GET", 500), 2);
	cr_assert_eq(seen("GET", 200), 1);
	/* more failures than tries: the last one, and how many */
	json_decref(fake_ctl(&F, "{\"fail\": 10, \"status\": 503, "
			     "\"code\": \"SlowDown\"}"));
	o.max_attempts = 3;
	o.cache_dir = tmp; /* not the copy already there */
	cr_assert_eq(fetch_file(&o, "s3://data/train.bin", big_hex, &r, &err),
		     PX_EAWS);
	cr_assert_str_eq(err.msg, "s3://data/train.bin: 503 Service "
			 "Unavailable (SlowDown: injected fault) (3 attempts)");
	cr_assert_eq(seen("GET", 503), 3);
}

Test(fetch, s3_cut_body_retried)
{
	struct fetch_opts o = opts();
	struct fetch_result r;
	struct px_error err = { 0 };

	json_decref(fake_ctl(&F, "{\"truncate\": 1}"));
	cr_assert_eq(fetch_file(&o, "s3://data/train.bin", big_hex, &r, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(r.attempts, 2);
	cr_assert_eq(r.bytes, BIG_LEN);
	cr_assert_eq(seen("GET", 200), 2);
}

/* Over the bound: by Content-Length before a byte is kept, and by count
 * when the answer has no length. */
Test(fetch, too_large)
{
	struct fetch_opts o = opts();
	struct fetch_result r;
	struct px_error err = { 0 };
	char want[200];

	o.max_bytes = BIG_LEN - 1;
	snprintf(want, sizeof want, "s3://data/train.bin: larger than %u "
		 "bytes", BIG_LEN - 1);
	cr_assert_eq(fetch_file(&o, "s3://data/train.bin", big_hex, &r, &err),
		     PX_ETOOBIG);
	cr_assert_str_eq(err.msg, want);
	json_decref(fake_ctl(&F, "{\"nolength\": true}"));
	cr_assert_eq(fetch_file(&o, "s3://data/train.bin", big_hex, &r, &err),
		     PX_ETOOBIG);
	cr_assert_str_eq(err.msg, want);
	cr_assert_eq(seen("GET", 0), 2, "too large is not retried");
	cr_assert_eq(cache_entries(), 0);
	o.max_bytes = BIG_LEN; /* exactly: fine, length or not */
	cr_assert_eq(fetch_file(&o, "s3://data/train.bin", big_hex, &r, &err),
		     PX_OK, "%s", err.msg);
}

Test(fetch, http_only_to_loopback)
{
	struct fetch_opts o = opts();
	struct fetch_result r;
	struct px_error err = { 0 };
	char url[200], hex[65];

	cr_assert_eq(fetch_file(&o, "http://data.example.com/train.bin",
				big_hex, &r, &err), PX_EINVAL);
	cr_assert_str_eq(err.msg, "http://data.example.com/train.bin: http:// "
			 "only to this host (127.0.0.1, ::1, localhost); use "
			 "https://");
	cr_assert_eq(cache_entries(), 0);
	/* an endpoint is held to the same rule */
	setenv("AWS_ENDPOINT_URL_S3", "http://s3.example.com", 1);
	cr_assert_eq(fetch_file(&o, "s3://data/train.bin", big_hex, &r, &err),
		     PX_EINVAL);
	cr_assert(strstr(err.msg, "http:// only to this host"), "%s",
		  err.msg);
	/* remote files need their hash */
	cr_assert_eq(fetch_file(&o, "https://example.com/x", NULL, &r, &err),
		     PX_EINVAL);
	cr_assert(strstr(err.msg, "needs its sha256"), "%s", err.msg);
	/* to loopback: a plain GET (the fake's public bucket) */
	sha_hex("anyone\n", 7, hex);
	snprintf(url, sizeof url, "%spub/open.bin", F.url);
	cr_assert_eq(fetch_file(&o, url, hex, &r, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(r.bytes, 7);
}

/* Asked in the wrong region, S3 names the bucket's own: followed once,
 * not counted as a failed try. */
Test(fetch, s3_bucket_region_followed)
{
	struct fetch_opts o = opts();
	struct fetch_result r;
	struct px_error err = { 0 };

	setenv("AWS_REGION", "eu-west-1", 1);
	cr_assert_eq(fetch_file(&o, "s3://data/train.bin", big_hex, &r, &err),
		     PX_OK, "%s", err.msg);
	cr_assert_eq(r.attempts, 1);
	cr_assert_eq(seen("GET", 400), 1);
	cr_assert_eq(seen("GET", 200), 1);
}

/* Credentials with a session token, given in code. */
Test(fetch, s3_session_token)
{
	struct awscred c = { 0 };
	struct awscred_provider *p = NULL;
	struct fetch_opts o = opts();
	struct fetch_result r;
	struct px_error err = { 0 };

	snprintf(c.access_key_id, sizeof c.access_key_id, TOK_AKID);
	snprintf(c.secret_access_key, sizeof c.secret_access_key, TOK_SECRET);
	snprintf(c.session_token, sizeof c.session_token, "wrong");
	cr_assert_eq(awscred_provider_static(&c, &p, &err), PX_OK);
	o.creds = p;
	cr_assert_eq(fetch_file(&o, "s3://data/train.bin", big_hex, &r, &err),
		     PX_EAWS);
	cr_assert(strstr(err.msg, "400 Bad Request (InvalidToken: "), "%s",
		  err.msg);
	awscred_provider_free(p);
	snprintf(c.session_token, sizeof c.session_token, TOK_TOKEN);
	cr_assert_eq(awscred_provider_static(&c, &p, &err), PX_OK);
	o.creds = p;
	cr_assert_eq(fetch_file(&o, "s3://data/train.bin", big_hex, &r, &err),
		     PX_OK, "%s", err.msg);
	awscred_provider_free(p);
}

/* ------------------------------------------------------------ the CLI */

static void no_secret(const struct pxrun *r)
{
	static const char *const secrets[] = { FAKE_SECRET, TOK_SECRET,
					       TOK_TOKEN, "Signature=",
					       "Credential=" };

	for (size_t i = 0; i < sizeof secrets / sizeof *secrets; i++) {
		cr_assert_null(strstr(r->out, secrets[i]), "stdout: %s",
			       r->out);
		cr_assert_null(strstr(r->err, secrets[i]), "stderr: %s",
			       r->err);
	}
}

Test(fetch, cli)
{
	struct pxrun r;
	json_error_t je;
	json_t *j;
	char want[700], wrong[65];
	const char *argv[12] = { "proteus-trainer", "fetch",
				 "s3://data/train.bin", "--sha256", big_hex,
				 "--cache", cache, "--json", NULL };

	cr_assert_eq(pxrun(&r, 30, "proteus-trainer", argv), 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	no_secret(&r);
	j = json_loads(r.out, 0, &je);
	cr_assert_not_null(j, "%s", r.out);
	snprintf(want, sizeof want, "%s/sha256-%s", cache, big_hex);
	cr_assert_str_eq(json_string_value(json_object_get(j, "path")), want);
	cr_assert_str_eq(json_string_value(json_object_get(j, "url")),
			 "s3://data/train.bin");
	cr_assert_str_eq(json_string_value(json_object_get(j, "sha256")),
			 big_hex);
	cr_assert_eq(json_integer_value(json_object_get(j, "bytes")), BIG_LEN);
	cr_assert(json_is_false(json_object_get(j, "cached")));
	json_decref(j);
	pxrun_free(&r);
	/* plain: the path, a line; from the cache */
	argv[7] = NULL;
	cr_assert_eq(pxrun(&r, 30, "proteus-trainer", argv), 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	snprintf(want, sizeof want, "%s/sha256-%s\n", cache, big_hex);
	cr_assert_str_eq(r.out, want);
	pxrun_free(&r);
	cr_assert_eq(seen("GET", 0), 1);
	/* a checksum mismatch is bad data: 3 */
	memcpy(wrong, big_hex, 65);
	wrong[63] = wrong[63] == '0' ? '1' : '0';
	argv[4] = wrong;
	cr_assert_eq(pxrun(&r, 30, "proteus-trainer", argv), 0);
	cr_assert_eq(r.status, 3, "%s", r.err);
	cr_assert(strstr(r.err, "checksum mismatch"), "%s", r.err);
	pxrun_free(&r);
	/* refused credentials: 1, the answer said, no secret */
	argv[4] = big_hex;
	argv[2] = "s3://data/other.bin";
	argv[6] = tmp; /* not the cache that holds it already */
	put(root, "data/other.bin", big, BIG_LEN);
	setenv("AWS_ACCESS_KEY_ID", TOK_AKID, 1);
	setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET, 1);
	setenv("AWS_SESSION_TOKEN", TOK_TOKEN, 1);
	cr_assert_eq(pxrun(&r, 30, "proteus-trainer", argv), 0);
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_assert(strstr(r.err, "s3://data/other.bin: 403 Forbidden "
			 "(SignatureDoesNotMatch"), "%s", r.err);
	no_secret(&r);
	pxrun_free(&r);
	/* usage: 2 */
	argv[3] = NULL;
	cr_assert_eq(pxrun(&r, 30, "proteus-trainer", argv), 0);
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "--sha256"), "%s", r.err);
	pxrun_free(&r);
	argv[3] = "--sha256";
	argv[4] = "xyz";
	cr_assert_eq(pxrun(&r, 30, "proteus-trainer", argv), 0);
	cr_assert_eq(r.status, 2, "%s", r.err);
	pxrun_free(&r);
	argv[2] = "ftp://x/y";
	argv[4] = big_hex;
	cr_assert_eq(pxrun(&r, 30, "proteus-trainer", argv), 0);
	cr_assert_eq(r.status, 2, "%s", r.err);
	pxrun_free(&r);
}
