/* cmd_ckpt_s3.c -- `proteus-trainer ckpt-s3 put|get`: a program job's
 * checkpoint store in S3 (docs/programs.md, "The checkpoint store in
 * S3"), one call of proteusd's off its event loop: put mirrors one
 * checkpoint there (its tar, then LATEST, then the pruned ones deleted);
 * get restores LATEST and its tar from there into the job's folder.
 *
 * Started by proteusd only, with its own AWS credentials (the
 * environment, its profile or the instance role: never argv).  The
 * outcome is one JSON line on stdout, for the daemon to read:
 *   put: {"mirrored": true, "pruned": true} or with "error": "..."
 *   get: {"restored": SEQ}, {"none": true} (no LATEST there: a 404) or
 *        {"error": "..."}
 * Exit 0 when all of it went well, 1 otherwise, 2 usage. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../cloudapi/fetch.h"
#include "../../common/log.h"
#include "../../common/px.h"
#include "tcli.h"

#define LATEST_MAX (64u << 10)  /* a LATEST object read back */
#define PRUNE_MAX 256           /* objects one put deletes at most */

struct ckpt_s3 {
	const char *store;      /* s3://BUCKET[/PREFIX] */
	const char *job;        /* the job's id, digits */
	int64_t seq;            /* put: the checkpoint's */
	const char *sha256;     /* put: its tar's */
	int64_t size;           /* put: its bytes */
	const char *name;       /* put: the program's name for it */
	int64_t del_from, del_to; /* put: the seqs to delete, inclusive */
	const char *dir;        /* get: the job's ckpt folder */
};

static bool digits(const char *s)
{
	return s && *s && strspn(s, "0123456789") == strlen(s) &&
	       strlen(s) < 19;
}

static int64_t num(const char *s)
{
	return digits(s) ? (int64_t)strtoll(s, NULL, 10) : -1;
}

/* The object of the job's under the store: STORE/JOB/LEAF. */
static char *object(const struct ckpt_s3 *c, const char *leaf)
{
	size_t n = strlen(c->store);
	char *u = NULL;

	while (n > 5 && c->store[n - 1] == '/')
		n--;
	if (asprintf(&u, "%.*s/%s/%s", (int)n, c->store, c->job, leaf) < 0)
		return NULL;
	return u;
}

/* The outcome line; the exit status. */
static int say(json_t *o, bool ok)
{
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

	if (s)
		printf("%s\n", s);
	fflush(stdout);
	free(s);
	json_decref(o);
	return ok ? TX_OK : TX_FAIL;
}

static int fail(const char *what, const struct px_error *err)
{
	log_err("%s: %s", what, err->msg);
	return say(json_pack("{s:s++}", "error", what, ": ", err->msg),
		   false);
}

static void sha256_hex(const void *p, size_t n, char out[65])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dl = 0;

	(void)EVP_Digest(p, n, d, &dl, EVP_sha256(), NULL);
	px_hex(d, 32, out);
}

/* The store's LATEST for checkpoint c: what the head node's says. */
static char *latest_text(int64_t seq, const char *name, const char *sha,
			 int64_t size)
{
	json_t *o = json_pack("{s:I, s:s, s:s, s:I}", "seq", (json_int_t)seq,
			      "name", name, "sha256", sha, "size",
			      (json_int_t)size);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return s;
}

/* put: the tar on stdin, LATEST after it, then the pruned deleted. */
static int do_put(const struct ckpt_s3 *c, const struct fetch_opts *fo)
{
	struct px_error err = { 0 };
	char hex[65], leaf[32], *url, *text;
	struct stat st;
	enum px_err e;
	bool pruned = true;

	if (fstat(0, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size != c->size) {
		px_errorf(&err, PX_EINVAL, "the checkpoint on stdin is not a "
			  "file of %" PRId64 " bytes", c->size);
		return fail("put", &err);
	}
	snprintf(leaf, sizeof leaf, "%" PRId64 ".tar", c->seq);
	url = object(c, leaf);
	e = url ? fetch_s3_put(fo, url, 0, NULL, (uint64_t)c->size,
			       c->sha256, &err) :
		  px_errorf(&err, PX_ENOMEM, "out of memory");
	free(url);
	if (e != PX_OK)
		return fail("put", &err);
	text = latest_text(c->seq, c->name, c->sha256, c->size);
	url = object(c, "LATEST");
	if (text)
		sha256_hex(text, strlen(text), hex);
	e = url && text ? fetch_s3_put(fo, url, -1, text, strlen(text), hex,
				       &err) :
		px_errorf(&err, PX_ENOMEM, "out of memory");
	free(url);
	free(text);
	if (e != PX_OK)
		return fail("put LATEST", &err);
	for (int64_t s = c->del_from; s > 0 && s <= c->del_to &&
	     s < c->del_from + PRUNE_MAX; s++) {
		snprintf(leaf, sizeof leaf, "%" PRId64 ".tar", s);
		url = object(c, leaf);
		e = url ? fetch_s3_delete(fo, url, &err) :
			  px_errorf(&err, PX_ENOMEM, "out of memory");
		free(url);
		if (e != PX_OK) {
			log_err("delete: %s", err.msg);
			pruned = false;
			break;
		}
	}
	if (!pruned)
		return say(json_pack("{s:b, s:b, s:s+}", "mirrored", true,
				     "pruned", false, "error", "delete: ",
				     err.msg), false);
	return say(json_pack("{s:b, s:b}", "mirrored", true, "pruned", true),
		   true);
}

/* LATEST as the store holds it: its fields, checked. */
static enum px_err parse_latest(const char *text, int64_t *seq,
				char *name, size_t nl, char sha[65],
				int64_t *size, struct px_error *err)
{
	json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	json_t *s = json_object_get(o, "seq"), *n = json_object_get(o, "name");
	json_t *h = json_object_get(o, "sha256"), *z = json_object_get(o,
								       "size");
	enum px_err e = PX_OK;

	if (!json_is_integer(s) || json_integer_value(s) < 1 ||
	    !json_is_string(n) || json_string_length(n) >= nl ||
	    !json_is_string(h) || !fetch_sha256_valid(json_string_value(h)) ||
	    !json_is_integer(z) || json_integer_value(z) < 0) {
		e = px_errorf(err, PX_EINVAL, "LATEST: not {seq, name, sha256, "
			      "size} of a checkpoint");
	} else {
		*seq = json_integer_value(s);
		*size = json_integer_value(z);
		snprintf(name, nl, "%s", json_string_value(n));
		snprintf(sha, 65, "%s", json_string_value(h));
	}
	json_decref(o);
	return e;
}

/* path written whole: a new file renamed over it. */
static enum px_err write_whole(const char *path, const char *text,
			       struct px_error *err)
{
	char tmp[PATH_MAX + 8];
	size_t n = strlen(text);
	int fd;
	bool ok;

	snprintf(tmp, sizeof tmp, "%s.new", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ok = fd >= 0 && write(fd, text, n) == (ssize_t)n && fsync(fd) == 0;
	if (fd >= 0)
		close(fd);
	if (!ok || rename(tmp, path) != 0)
		return px_errorf(err, PX_ESYS | errno, "'%s': %s", path,
				 strerror(errno));
	return PX_OK;
}

/* get: LATEST, then its tar checked by its SHA-256, into the folder
 * (the tar first, LATEST once it is there). */
static int do_get(const struct ckpt_s3 *c, struct fetch_opts *fo)
{
	struct px_error err = { 0 };
	char name[201], sha[65], leaf[32], cache[PATH_MAX], to[PATH_MAX];
	char *url = object(c, "LATEST"), *text = NULL, *mine;
	struct fetch_result r;
	int64_t seq = 0, size = 0;
	size_t len;
	enum px_err e;

	e = url ? fetch_s3_get(fo, url, LATEST_MAX, &text, &len, &err) :
		  px_errorf(&err, PX_ENOMEM, "out of memory");
	free(url);
	if (e == PX_ENOENT)
		return say(json_pack("{s:b}", "none", true), true);
	if (e == PX_OK)
		e = parse_latest(text, &seq, name, sizeof name, sha, &size,
				 &err);
	free(text);
	if (e != PX_OK)
		return fail("get", &err);
	snprintf(leaf, sizeof leaf, "%" PRId64 ".tar", seq);
	snprintf(cache, sizeof cache, "%s/.s3-restore", c->dir);
	snprintf(to, sizeof to, "%s/%s", c->dir, leaf);
	fo->cache_dir = cache;
	fo->max_bytes = size > 0 ? (uint64_t)size : 1;
	url = object(c, leaf);
	e = url ? fetch_file(fo, url, sha, &r, &err) :
		  px_errorf(&err, PX_ENOMEM, "out of memory");
	free(url);
	if (e == PX_OK && rename(r.path, to) != 0)
		e = px_errorf(&err, PX_ESYS | errno, "'%s': %s", to,
			      strerror(errno));
	(void)rmdir(cache);
	mine = e == PX_OK ? latest_text(seq, name, sha, size) : NULL;
	if (e == PX_OK && !mine)
		e = px_errorf(&err, PX_ENOMEM, "out of memory");
	snprintf(to, sizeof to, "%s/LATEST", c->dir);
	if (e == PX_OK)
		e = write_whole(to, mine, &err);
	free(mine);
	if (e != PX_OK)
		return fail("get", &err);
	return say(json_pack("{s:I}", "restored", (json_int_t)seq), true);
}

static int parse(int argc, char **argv, struct ckpt_s3 *c)
{
	static const struct option lo[] = {
		{ "store", required_argument, NULL, 's' },
		{ "job", required_argument, NULL, 'j' },
		{ "seq", required_argument, NULL, 'q' },
		{ "sha256", required_argument, NULL, 'h' },
		{ "size", required_argument, NULL, 'z' },
		{ "name", required_argument, NULL, 'n' },
		{ "delete-from", required_argument, NULL, 'f' },
		{ "delete-to", required_argument, NULL, 't' },
		{ "dir", required_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	int o;

	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case 's': c->store = optarg; break;
		case 'j': c->job = optarg; break;
		case 'q': c->seq = num(optarg); break;
		case 'h': c->sha256 = optarg; break;
		case 'z': c->size = num(optarg); break;
		case 'n': c->name = optarg; break;
		case 'f': c->del_from = num(optarg); break;
		case 't': c->del_to = num(optarg); break;
		case 'd': c->dir = optarg; break;
		default: return -1;
		}
	}
	return optind;
}

int tx_cmd_ckpt_s3(const struct subcmd *sc, int argc, char **argv)
{
	struct ckpt_s3 c = { .seq = 0 };
	struct fetch_opts fo = { 0 };
	const char *op = argc > 1 ? argv[1] : "";
	int k;

	if (argc > 1 && (!strcmp(op, "--help") || !strcmp(op, "-h"))) {
		tx_help(sc, stdout);
		return TX_OK;
	}
	if (strcmp(op, "put") && strcmp(op, "get"))
		return tx_usage(sc, "put or get expected");
	k = parse(argc - 1, argv + 1, &c);
	if (k < 0 || k != argc - 1)
		return tx_usage(sc, "bad options");
	if (!c.store || strncmp(c.store, "s3://", 5) || !digits(c.job))
		return tx_usage(sc, "--store s3://BUCKET[/PREFIX] and --job ID "
				"are needed");
	tx_take_stop_signals();
	fo.stop = &tx_stop_flag;
	if (!strcmp(op, "get")) {
		if (!c.dir || c.dir[0] != '/')
			return tx_usage(sc, "get: --dir (absolute) is needed");
		return do_get(&c, &fo);
	}
	if (c.seq < 1 || c.size < 0 || !fetch_sha256_valid(c.sha256) ||
	    !c.name || c.del_from < 0 || c.del_to < 0)
		return tx_usage(sc, "put: --seq, --sha256, --size and --name "
				"are needed");
	return do_put(&c, &fo);
}
