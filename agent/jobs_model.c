/* jobs_model.c -- `model`: a job's last checkpoint handed to proteusctl,
 * which exports it (docs/proteusctl.md, "model").
 *
 * The checkpoint is in the job's directory (mode 0700, the daemon's
 * user), out of reach of the operators who may use the control socket
 * (group proteus): so the daemon reads it and sends its bytes, base64
 * in the reply line, MODEL_CHUNK at a time from the offset asked.  Each
 * answer says which file it read ("version": inode, mtime, size), so
 * that a client whose download straddles the job's next checkpoint (a
 * rename over the old one) starts again rather than mixing two.  The
 * daemon does no more than a pread of at most MODEL_CHUNK per request:
 * the loop is never held for long, whatever the model's size; proteusctl
 * checks the checkpoint whole (SHA-256, every field) and writes the
 * safetensors file itself.
 *
 * A program job's (docs/programs.md, "Take the checkpoint away") is the
 * latest complete checkpoint of its store, the tar LATEST names, sent as
 * it is, with LATEST's name, sequence number and SHA-256 in each answer
 * (the client checks the bytes against it and writes them verbatim).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../trainer/io/ckpt.h"
#include "jobs_int.h"
#include "proto.h"

#define MODEL_CHUNK (4u << 20) /* 5.6 MB of base64: within a line */

_Static_assert(MODEL_CHUNK / 3 * 4 + 4096 < PROTO_LINE_MAX,
	       "a chunk's base64 must fit a reply line");

/* Up to MODEL_CHUNK bytes of fd from off, base64; NULL with err set. */
static json_t *chunk(int fd, const char *what, uint64_t off, uint64_t len,
		     struct px_error *err)
{
	unsigned char *raw = malloc(len ? len : 1);
	char *b64 = malloc(len / 3 * 4 + 8);
	size_t got = 0;
	json_t *s = NULL;

	if (!raw || !b64) {
		px_errorf(err, PX_ENOMEM, "%s: out of memory", what);
		goto out;
	}
	while (got < len) {
		ssize_t k = pread(fd, raw + got, len - got,
				  (off_t)(off + got));

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			px_errorf(err, PX_EIO, "%s: read: %s", what,
				  k ? strerror(errno) : "ends early");
			goto out;
		}
		got += (size_t)k;
	}
	EVP_EncodeBlock((unsigned char *)b64, raw, (int)len);
	s = json_string(b64);
	if (!s)
		px_errorf(err, PX_ENOMEM, "%s: out of memory", what);
out:
	free(raw);
	free(b64);
	return s;
}

/* A program job's latest checkpoint: its path from DIR/ID/ckpt/LATEST,
 * and LATEST's fields in *meta (taken); false when there is none yet. */
static bool program_latest(const struct jobs *js, int64_t id, char *path,
			   size_t len, json_t **meta)
{
	char lp[JOB_PATH_MAX + 64];
	json_t *o;
	json_int_t seq;

	snprintf(lp, sizeof lp, "%s/%" PRId64 "/%s", js->s.dir, id,
		 workload_program.product);
	o = json_load_file(lp, JSON_REJECT_DUPLICATES, NULL);
	seq = json_integer_value(json_object_get(o, "seq"));
	if (!json_is_object(o) || seq <= 0 ||
	    !json_is_string(json_object_get(o, "name")) ||
	    !json_is_string(json_object_get(o, "sha256"))) {
		json_decref(o);
		return false;
	}
	snprintf(path, len, "%s/%" PRId64 "/ckpt/%" PRId64 ".tar", js->s.dir,
		 id, (int64_t)seq);
	*meta = json_pack("{s:s, s:s, s:I, s:O, s:O}", "format", "tar",
			  "workload", "program", "seq", seq, "name",
			  json_object_get(o, "name"), "sha256",
			  json_object_get(o, "sha256"));
	json_decref(o);
	return *meta != NULL;
}

json_t *jobs_cmd_model(struct jobs *js, json_t *req, struct px_error *err)
{
	json_t *vo = json_object_get(req, "offset"), *data, *r;
	char path[JOB_PATH_MAX + 64], what[JOB_PATH_MAX + 96];
	char version[96];
	uint64_t off = 0, len;
	struct job *j;
	struct stat st;
	json_t *meta = NULL;
	int64_t id;
	int fd;

	if (!jobs_req_known(js, req, &id, &j, err))
		return NULL;
	if (vo && (!json_is_integer(vo) || json_integer_value(vo) < 0))
		return jobs_reply_err(err, PX_EINVAL, "'offset': a byte offset "
				      "(an integer >= 0) is needed");
	off = vo ? (uint64_t)json_integer_value(vo) : 0;
	/* what the job's workload produces, in its folder (a job this
	 * daemon does not hold: the built-in trainer's) */
	snprintf(path, sizeof path, "%s/%" PRId64 "/%s", js->s.dir, id,
		 j ? j->wlops->product : workload_trainer.product);
	if (j && j->wlops == &workload_program &&
	    !program_latest(js, id, path, sizeof path, &meta))
		return jobs_reply_err(err, PX_ENOENT, "job %" PRId64 " has no "
				      "checkpoint yet (its program has "
				      "written none the store kept)", id);
	snprintf(what, sizeof what, "job %" PRId64 "'s checkpoint", id);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT && meta) {
		/* pruned by a newer one since LATEST was read: the client
		 * asks again from the start */
		json_decref(meta);
		return jobs_reply_err(err, PX_EIO, "job %" PRId64 "'s "
				      "checkpoint was replaced while it was "
				      "read: try again", id);
	}
	if (fd < 0 && errno == ENOENT)
		return jobs_reply_err(err, PX_ENOENT, "job %" PRId64 " has no "
				      "checkpoint yet (the coordinator writes "
				      "one after each evaluation)", id);
	if (fd < 0) {
		json_decref(meta);
		return jobs_reply_err(err, PX_ESYS | errno, "%s: open: %s",
				      what, strerror(errno));
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > CKPT_MAX_BYTES) {
		close(fd);
		json_decref(meta);
		return jobs_reply_err(err, PX_EINVAL, "%s is not a regular "
				      "file of at most %" PRIu64 " bytes", what,
				      (uint64_t)CKPT_MAX_BYTES);
	}
	if (off > (uint64_t)st.st_size) {
		close(fd);
		json_decref(meta);
		return jobs_reply_err(err, PX_EINVAL, "'offset' %" PRIu64 " is "
				      "past the end of %s (%jd bytes)", off,
				      what, (intmax_t)st.st_size);
	}
	len = (uint64_t)st.st_size - off;
	if (len > MODEL_CHUNK)
		len = MODEL_CHUNK;
	data = chunk(fd, what, off, len, err);
	close(fd);
	if (!data) {
		json_decref(meta);
		return NULL;
	}
	snprintf(version, sizeof version, "%ju-%jd.%09ld-%jd",
		 (uintmax_t)st.st_ino, (intmax_t)st.st_mtim.tv_sec,
		 st.st_mtim.tv_nsec, (intmax_t)st.st_size);
	/* the job's total clocks as status gives them: the checkpoint's
	 * own "total" is its shape's (the clocks at the fleet it started
	 * with), which an elastic job's re-estimates leave behind */
	r = json_pack("{s:I, s:I, s:I, s:I, s:s, s:o, s:I}", "job",
		      (json_int_t)id, "bytes", (json_int_t)st.st_size,
		      "offset", (json_int_t)off, "length", (json_int_t)len,
		      "version", version, "data", data, "clocks_total",
		      (json_int_t)jobs_clocks_total(js, id));
	if (r && meta)
		(void)json_object_update(r, meta);
	json_decref(meta);
	if (!r)
		px_errorf(err, PX_ENOMEM, "%s: out of memory", what);
	return r;
}
