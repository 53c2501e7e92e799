/* jobs_logs.c -- `logs`: the bounded tail of each node's program output,
 * for `proteusctl logs` (docs/proteusctl.md, "logs").
 *
 * A program job's node agents write each node's output to
 * <job_dir>/ID/logs/i<INSTANCE>.log, renamed to i<INSTANCE>.log.1 at
 * 4 MiB (one older file kept: trainer/dist/prog_node.c).  The folder is
 * the daemon user's (mode 0700), so the daemon reads the files and sends
 * their text in the reply line.  Without "offset" it sends the last "max"
 * bytes of each node's log (the tail of its .1 first when the current
 * file is shorter), cut to start at a line; with "offset" ({file: byte})
 * what came after each offset, from 0 for a file that shrank since (it
 * rotated: the rest of its .1 comes first).
 *
 * Only names i<digits>.log and i<digits>.log.1 in the logs folder are
 * read, each opened without following a symlink and only when it is a
 * regular file; a reply holds at most LOGS_REPLY_MAX bytes of text, of
 * at most LOGS_NODES_MAX nodes, so that the loop is never held for long
 * and the line stays within PROTO_LINE_MAX.  The text is sent as it is,
 * but for the bytes that are not UTF-8 and NUL, each sent as '?' (a byte
 * for a byte: a chunk's "length" is its text's); proteusctl escapes it
 * for the terminal.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jobs_int.h"
#include "proto.h"

#define LOGS_MAX_DEFAULT (64u << 10) /* a node's bytes when "max" is not said */
#define LOGS_MAX_MAX (256u << 10)    /* the most "max" may ask */
#define LOGS_REPLY_MAX (1u << 20)    /* text in one reply, all nodes */
#define LOGS_NODES_MAX 256           /* nodes one reply covers */
#define LOGS_SCAN_MAX 8192           /* folder entries looked at */
#define LOGS_NAME_MAX 32             /* "i" 20 digits ".log.1" */

/* each byte escaped as \u00XX at worst, and each entry's fields */
_Static_assert((uint64_t)LOGS_REPLY_MAX * 6 + 2 * LOGS_NODES_MAX * 256 <
		       PROTO_LINE_MAX,
	       "a reply of logs must fit a line");

struct logs {
	int dfd;            /* the logs folder */
	json_t *offsets;    /* the request's; NULL: the tails */
	uint64_t share;     /* each node's bytes, at most */
	json_t *files;      /* the reply's */
	struct px_error *err;
};

/* Whether name is i<digits>.log or i<digits>.log.1 (no leading zero),
 * its instance in *ret. */
static bool log_name(const char *name, uint64_t *ret)
{
	const char *p = name + 1;
	uint64_t v = 0;

	if (name[0] != 'i' || *p < '0' || *p > '9' || (p[0] == '0' &&
						     p[1] >= '0' && p[1] <= '9'))
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (strcmp(p, ".log") && strcmp(p, ".log.1"))
		return false;
	*ret = v;
	return true;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The instances that have a log in the folder, ascending and each once,
 * only want's (UINT64_MAX: all), into *ret (malloc'd); their count (the
 * caller takes the first LOGS_NODES_MAX), -1 with errno. */
static long list_nodes(int dfd, uint64_t want, uint64_t **ret)
{
	int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	uint64_t *v = malloc(LOGS_SCAN_MAX * sizeof *v), id;
	size_t n = 0, k = 0, seen = 0;
	struct dirent *de;

	if (!d || !v) {
		int saved = v ? errno : ENOMEM;

		if (d)
			closedir(d);
		else if (fd >= 0)
			close(fd);
		free(v);
		errno = saved;
		return -1;
	}
	while (seen++ < LOGS_SCAN_MAX && (de = readdir(d)))
		if (log_name(de->d_name, &id) && (want == UINT64_MAX ||
						  id == want))
			v[n++] = id;
	closedir(d);
	qsort(v, n, sizeof *v, cmp_u64);
	for (size_t i = 0; i < n; i++)
		if (!k || v[k - 1] != v[i])
			v[k++] = v[i];
	*ret = v;
	return (long)k;
}

/* name in the folder, opened for reading when it is a regular file (a
 * symlink is not followed); its size in *ret_size.  -1 when it cannot
 * be read or is something else. */
static int open_log(int dfd, const char *name, uint64_t *ret_size)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
			O_NONBLOCK | O_NOCTTY);
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	*ret_size = (uint64_t)st.st_size;
	return fd;
}

/* Up to len bytes of fd from off into buf; how many came (fewer when
 * the file is shorter now). */
static size_t read_at(int fd, char *buf, uint64_t off, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t k = pread(fd, buf + got, len - got,
				  (off_t)(off + got));

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	return got;
}

/* The length of the UTF-8 character at s[0..n) (RFC 3629: no overlong
 * form, no surrogate, at most U+10FFFF); 0 when it is not one, -1 when
 * s ends inside what may still become one. */
static int utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	int len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	for (int i = 1; i < len; i++) {
		if ((size_t)i >= n)
			return -1;
		if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xbf))
			return 0;
	}
	return len;
}

/* s[0..n) made valid UTF-8 without NUL, in place: '?' for each byte that
 * starts no character. */
static void utf8_clean(char *s, size_t n)
{
	unsigned char *u = (unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		int k = utf8_len(u + i, n - i);

		if (k <= 0 || !u[i]) {
			u[i++] = '?';
			continue;
		}
		i += (size_t)k;
	}
}

/* How much of buf[0..n) to keep so that it does not end inside a
 * character that the next bytes may complete. */
static size_t whole_chars(const char *buf, size_t n)
{
	const unsigned char *u = (const unsigned char *)buf;

	for (size_t back = 1; back <= 3 && back <= n; back++) {
		unsigned char c = u[n - back];

		if (c < 0x80)
			return n;
		if (c >= 0xc0)
			return utf8_len(u + n - back, back) < 0 ? n - back : n;
	}
	return n;
}

/* Where a tail that starts inside the file begins: after its first
 * newline, else after the bytes that continue a character. */
static size_t line_start(const char *buf, size_t n)
{
	const char *nl = memchr(buf, '\n', n);
	size_t k = 0;

	if (nl)
		return (size_t)(nl - buf) + 1;
	while (k < n && k < 3 && ((unsigned char)buf[k] & 0xc0) == 0x80)
		k++;
	return k;
}

enum {
	CHUNK_TAIL = 1 << 0,    /* starts inside the file: at a line */
	CHUNK_ROTATED = 1 << 1, /* the file shrank since the offset asked */
};

/* An entry of the reply: len bytes of fd (name, size bytes) from off. */
static enum px_err add_chunk(struct logs *c, uint64_t node, const char *name,
			     int fd, uint64_t size, uint64_t off, size_t len,
			     unsigned flags)
{
	char *buf = malloc(len ? len : 1);
	size_t got, skip = 0;
	json_t *o = NULL, *data;

	if (!buf)
		return px_errorf(c->err, PX_ENOMEM, "%s: out of memory", name);
	got = read_at(fd, buf, off, len);
	if ((flags & CHUNK_TAIL) && off > 0)
		skip = line_start(buf, got);
	if (off + got < size)  /* more to come: not inside a character */
		got = skip + whole_chars(buf + skip, got - skip);
	utf8_clean(buf + skip, got - skip);
	data = json_stringn(buf + skip, got - skip);
	free(buf);
	if (data)
		o = json_pack("{s:I, s:s, s:I, s:I, s:I, s:o}", "node",
			      (json_int_t)node, "file", name, "size",
			      (json_int_t)size, "offset",
			      (json_int_t)(off + skip), "length",
			      (json_int_t)(got - skip), "data", data);
	if (o && (flags & CHUNK_ROTATED))
		json_object_set_new(o, "rotated", json_true());
	if (!o || json_array_append_new(c->files, o))
		return px_errorf(c->err, PX_ENOMEM, "%s: out of memory", name);
	return PX_OK;
}

/* The last bytes of the node's current log, its .1's before them when
 * the current one is shorter than the node's share. */
static enum px_err node_tail(struct logs *c, uint64_t node)
{
	char cur[LOGS_NAME_MAX], old[LOGS_NAME_MAX + 2];
	uint64_t size = 0, osize = 0, len;
	int fd, ofd = -1;
	enum px_err e = PX_OK;

	snprintf(cur, sizeof cur, "i%" PRIu64 ".log", node);
	snprintf(old, sizeof old, "%s.1", cur);
	fd = open_log(c->dfd, cur, &size);
	if (fd < 0)
		size = 0;
	if (size < c->share)
		ofd = open_log(c->dfd, old, &osize);
	if (ofd >= 0) {
		len = osize < c->share - size ? osize : c->share - size;
		e = add_chunk(c, node, old, ofd, osize, osize - len,
			      (size_t)len, CHUNK_TAIL);
		close(ofd);
	}
	if (fd >= 0) {
		len = size < c->share ? size : c->share;
		if (e == PX_OK)
			e = add_chunk(c, node, cur, fd, size, size - len,
				      (size_t)len, CHUNK_TAIL);
		close(fd);
	}
	return e;
}

/* What came after the offset asked for the node's current log (from 0:
 * a log not asked about, one that shrank, after the rest of its .1). */
static enum px_err node_follow(struct logs *c, uint64_t node)
{
	char cur[LOGS_NAME_MAX], old[LOGS_NAME_MAX + 2];
	json_t *v;
	uint64_t size = 0, osize = 0, off = 0, len, used = 0;
	unsigned flags = 0;
	int fd, ofd;
	enum px_err e = PX_OK;

	snprintf(cur, sizeof cur, "i%" PRIu64 ".log", node);
	snprintf(old, sizeof old, "%s.1", cur);
	fd = open_log(c->dfd, cur, &size);
	if (fd < 0)
		return PX_OK;
	v = json_object_get(c->offsets, cur);
	if (json_is_integer(v))
		off = (uint64_t)json_integer_value(v);
	if (off > size) {
		/* it rotated: the rest of the old file, then the new one */
		ofd = open_log(c->dfd, old, &osize);
		if (ofd >= 0 && osize >= off) {
			used = osize - off < c->share ? osize - off : c->share;
			e = add_chunk(c, node, old, ofd, osize, off,
				      (size_t)used, 0);
		}
		if (ofd >= 0)
			close(ofd);
		off = 0;
		flags = CHUNK_ROTATED;
	}
	len = size - off < c->share - used ? size - off : c->share - used;
	if (e == PX_OK)
		e = add_chunk(c, node, cur, fd, size, off, (size_t)len, flags);
	close(fd);
	return e;
}

/* The request's "node" (UINT64_MAX: every node), "max" and "offset"
 * into c; false with err set when one is wrong. */
static bool logs_args(json_t *req, struct logs *c, uint64_t *ret_node)
{
	json_t *vn = json_object_get(req, "node");
	json_t *vm = json_object_get(req, "max");
	json_t *vo = json_object_get(req, "offset"), *v;
	const char *k;

	if (vn && (!json_is_integer(vn) || json_integer_value(vn) < 0)) {
		jobs_reply_err(c->err, PX_EINVAL, "'node': an instance "
			       "number (an integer >= 0) is needed");
		return false;
	}
	if (vm && (!json_is_integer(vm) || json_integer_value(vm) <= 0)) {
		jobs_reply_err(c->err, PX_EINVAL, "'max': a count of bytes "
			       "(an integer > 0) is needed");
		return false;
	}
	if (vo && !json_is_null(vo) && !json_is_object(vo)) {
		jobs_reply_err(c->err, PX_EINVAL, "'offset': an object "
			       "{\"iN.log\": byte offset, ...} is needed");
		return false;
	}
	if (json_is_object(vo) && json_object_size(vo) > 2 * LOGS_NODES_MAX) {
		jobs_reply_err(c->err, PX_EINVAL, "'offset': more than %d "
			       "files", 2 * LOGS_NODES_MAX);
		return false;
	}
	json_object_foreach(json_is_object(vo) ? vo : NULL, k, v)
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			jobs_reply_err(c->err, PX_EINVAL, "'offset': '%.64s' "
				       "needs a byte offset (an integer >= "
				       "0)", k);
			return false;
		}
	*ret_node = vn ? (uint64_t)json_integer_value(vn) : UINT64_MAX;
	c->share = vm ? (uint64_t)json_integer_value(vm) : LOGS_MAX_DEFAULT;
	if (c->share > LOGS_MAX_MAX)
		c->share = LOGS_MAX_MAX;
	c->offsets = json_is_object(vo) ? vo : NULL;
	return true;
}

/* The reply when the job's folder has no logs folder: none, and why
 * when the job is a trainer's (its processes write trainer.log). */
static json_t *no_logs(const char *dir, int64_t id, struct px_error *err)
{
	char path[JOB_PATH_MAX + 16];
	struct stat st;
	json_t *r;

	snprintf(path, sizeof path, "%s/trainer.log", dir);
	r = json_pack("{s:I, s:[]}", "job", (json_int_t)id, "files");
	if (r && lstat(path, &st) == 0 && S_ISREG(st.st_mode))
		json_object_set_new(r, "note", json_string(
			"a trainer job: its processes write trainer.log, not "
			"per-node logs"));
	if (!r)
		px_errorf(err, PX_ENOMEM, "out of memory");
	return r;
}

/* Every node's chunks from the logs folder c->dfd into r's "files" (the
 * first LOGS_NODES_MAX nodes; "nodes_left_out": how many more). */
static json_t *read_nodes(struct logs *c, uint64_t want, int64_t id)
{
	uint64_t *nodes = NULL;
	long n = list_nodes(c->dfd, want, &nodes), more = 0;
	json_t *r = NULL;

	if (n < 0)
		return jobs_reply_err(c->err, PX_ESYS | errno, "job %" PRId64
				      "'s logs folder: %s", id,
				      strerror(errno));
	if (n > LOGS_NODES_MAX) {
		more = n - LOGS_NODES_MAX;
		n = LOGS_NODES_MAX;
	}
	if (n > 0 && c->share > LOGS_REPLY_MAX / (uint64_t)n)
		c->share = LOGS_REPLY_MAX / (uint64_t)n;
	c->files = json_array();
	if (!c->files) {
		jobs_reply_err(c->err, PX_ENOMEM, "out of memory");
		goto out;
	}
	for (long i = 0; i < n; i++)
		if ((c->offsets ? node_follow(c, nodes[i]) :
		     node_tail(c, nodes[i])) != PX_OK) {
			json_decref(c->files);
			goto out;
		}
	r = json_pack("{s:I, s:o}", "job", (json_int_t)id, "files", c->files);
	if (r && more)
		json_object_set_new(r, "nodes_left_out", json_integer(more));
	if (!r)
		px_errorf(c->err, PX_ENOMEM, "out of memory");
out:
	free(nodes);
	return r;
}

json_t *jobs_cmd_logs(struct jobs *js, json_t *req, struct px_error *err)
{
	struct logs c = { .dfd = -1, .err = err };
	char dir[JOB_PATH_MAX], path[JOB_PATH_MAX + 8];
	uint64_t want;
	struct job *j;
	json_t *r;
	int64_t id;

	if (!jobs_req_known(js, req, &id, &j, err) ||
	    !logs_args(req, &c, &want))
		return NULL;
	/* the folder of a job this daemon runs, else where it was */
	if (j && j->run.dir[0])
		snprintf(dir, sizeof dir, "%s", j->run.dir);
	else
		snprintf(dir, sizeof dir, "%s/%" PRId64, js->s.dir, id);
	snprintf(path, sizeof path, "%s/logs", dir);
	c.dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c.dfd < 0 && errno == ENOENT)
		return no_logs(dir, id, err);
	if (c.dfd < 0)
		return jobs_reply_err(err, PX_ESYS | errno, "job %" PRId64
				      "'s logs folder: %s: not read", id,
				      strerror(errno));
	r = read_nodes(&c, want, id);
	close(c.dfd);
	return r;
}
