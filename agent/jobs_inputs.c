/* jobs_inputs.c -- the files a job names (docs/security.md, "What a
 * submitter may make the daemon read"): each opened once, at submit, on
 * the submission's thread under the submitter's guard (px.h: the
 * submitter's rights, no /proc magic link, none of the daemon's own
 * files), checked from that descriptor (a pin: px_open_input opens the
 * very same file again, never the path), then copied into the job's own
 * folder, DIR/ID/in/KIND/NAME.  From then on the daemon (after a restart
 * too) and the job's processes on this host read the copies only: no
 * process with more rights than the submitter ever opens a path the
 * submitter named.  A job's copies go when it ends. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../cloudapi/fetch.h"
#include "../common/log.h"
#include "../trainer/io/data_url.h"
#include "../trainer/io/dataset.h"
#include "jobs_int.h"

#define STAGE_PREFIX ".in-"      /* copies of a job not stored yet */
#define COPY_CHUNK (8u << 20)
/* A copy is refused where it would leave less than this share of its
 * file system free (and at least COPY_RESERVE_MIN bytes). */
#define COPY_RESERVE_PCT 2
#define COPY_RESERVE_MIN (UINT64_C(64) << 20)

static const char *const kind_name[JIN_MAX] = {
	[JIN_TRACE] = "trace", [JIN_ONDEMAND] = "ondemand",
	[JIN_ADVISOR] = "advisor", [JIN_TRAIN] = "train",
	[JIN_TRAIN_LABELS] = "train", [JIN_TEST] = "test",
	[JIN_TEST_LABELS] = "test",
};

/* The file a spec's string names on this host: a path as it is, a
 * file:// URL's path (percent-decoded); false for another URL or none. */
static bool named_path(const char *s, char *buf, size_t len)
{
	struct fetch_url u;
	struct px_error err = {0};
	bool ok;

	if (!s || !s[0])
		return false;
	if (!data_is_url(s)) {
		snprintf(buf, len, "%s", s);
		return strlen(s) < len;
	}
	if (strncmp(s, "file://", 7) || fetch_url_parse(s, &u, &err) != PX_OK)
		return false;
	ok = u.kind == FETCH_LOCAL && u.path && strlen(u.path) < len;
	if (ok)
		snprintf(buf, len, "%s", u.path);
	fetch_url_release(&u);
	return ok;
}

/* The spec's string for input k ("" for none): the labels of an IDX set
 * are the images' (their path derived below). */
static const char *spec_of(const struct job *j, enum job_input k)
{
	const struct job_data *d = &j->req.trainer.data;

	switch (k) {
	case JIN_TRACE:
		return j->wops && j->wops->load_market ? "" :
		       j->req.world.trace;
	case JIN_ONDEMAND: return j->req.world.ondemand;
	case JIN_ADVISOR: return j->req.spec.spot_advisor;
	case JIN_TRAIN: case JIN_TRAIN_LABELS: return d->train;
	case JIN_TEST: case JIN_TEST_LABELS: return d->test;
	default: return "";
	}
}

/* The file on this host input k names (buf), as the readers name it; an
 * IDX set's labels file from its images file's name.  False: none. */
bool job_input_path(const struct job *j, enum job_input k, char *buf,
		    size_t len)
{
	const struct job_data *d = &j->req.trainer.data;
	char images[JOBREQ_PATH_MAX];
	enum data_format f = DATA_FMT_AUTO;
	struct px_error err = {0};

	if (k != JIN_TRAIN_LABELS && k != JIN_TEST_LABELS)
		return named_path(spec_of(j, k), buf, len);
	if (!named_path(spec_of(j, k), images, sizeof images))
		return false;
	if (d->format[0] && data_format_parse(d->format, &f, &err) != PX_OK)
		return false;
	if (f == DATA_FMT_AUTO && data_format_of(images, &f, &err) != PX_OK)
		return false;
	return f == DATA_FMT_IDX &&
	       data_idx_labels_path(images, buf, len, &err) == PX_OK;
}

static const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* Whether input k is data (no bound on its size: the check reads a
 * bounded part of it) rather than a market file (the guard's bound). */
static bool is_data(enum job_input k)
{
	return k >= JIN_TRAIN;
}

void job_inputs_pin(struct job *j, struct px_guard *g)
{
	struct job_inputs *in = &j->in;
	struct px_guard data = *g;

	job_inputs_drop(j);
	data.max_bytes = 0;
	for (int k = 0; k < JIN_MAX; k++) {
		struct px_error err = {0};
		int fd;

		if (!job_input_path(j, (enum job_input)k, in->path[k],
				sizeof in->path[k]))
			continue;
		/* a file that cannot be opened is not pinned: its reader
		 * says why, under the same guard */
		px_guard_set(is_data((enum job_input)k) ? &data : g);
		fd = px_open_input(in->path[k], &err);
		px_guard_set(g);
		in->fd[k] = fd;
		if (fd < 0)
			continue;
		in->pins[in->npins].path = in->path[k];
		in->pins[in->npins].fd = fd;
		in->npins++;
	}
	g->pins = in->pins;
	g->npins = in->npins;
}

/* Free space on dir's file system, less the reserve, in bytes. */
static uint64_t room_at(const char *dir)
{
	struct statvfs v;
	uint64_t total, avail, keep;

	if (statvfs(dir, &v) != 0)
		return UINT64_MAX;      /* the copy's own write will say */
	total = (uint64_t)v.f_blocks * v.f_frsize;
	avail = (uint64_t)v.f_bavail * v.f_frsize;
	keep = total / 100 * COPY_RESERVE_PCT;
	if (keep < COPY_RESERVE_MIN)
		keep = COPY_RESERVE_MIN;
	return avail > keep ? avail - keep : 0;
}

/* fd's file (shown: the name the submitter gave) copied to a new file
 * `to`, mode 0600, within the thread's guard's time. */
static enum px_err copy_one(int fd, const char *to, const char *shown,
			    uint64_t *room, struct px_error *err)
{
	struct stat st;
	off_t off = 0;
	int out;
	enum px_err e = PX_OK;
	char *buf = NULL;

	if (fstat(fd, &st) != 0)
		return px_errorf(err, PX_ESYS | errno, "%s: stat: %s", shown,
				 strerror(errno));
	if ((uint64_t)st.st_size > *room)
		return px_errorf(err, PX_ETOOBIG, "%s: %lld bytes, and the job "
				 "folder's file system has room for %" PRIu64
				 " more (the daemon keeps a private copy of "
				 "every file a job names, and leaves %d%% of "
				 "it free)", shown, (long long)st.st_size,
				 *room, COPY_RESERVE_PCT);
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		   0600);
	if (out < 0)
		return px_errorf(err, PX_ESYS | errno, "%s: %s", to,
				 strerror(errno));
	while (off < st.st_size) {
		size_t want = (uint64_t)(st.st_size - off) > COPY_CHUNK ?
			      COPY_CHUNK : (size_t)(st.st_size - off);
		ssize_t n;

		if (px_guard_expired()) {
			e = px_errorf(err, PX_ETIMEDOUT, "%s: copying it took "
				      "longer than a submission may", shown);
			break;
		}
		n = buf ? -1 : copy_file_range(fd, &off, out, NULL, want, 0);
		if (n < 0 && !buf && errno != EINTR) {
			/* no in-kernel copy here (another file system, an
			 * old kernel): by hand, from the same offset */
			buf = malloc(COPY_CHUNK);
			if (!buf) {
				e = px_errorf(err, PX_ENOMEM, "out of memory");
				break;
			}
		}
		if (buf) {
			n = pread(fd, buf, want, off);
			for (ssize_t w = 0, r; n > 0 && w < n; w += r) {
				r = write(out, buf + w, (size_t)(n - w));
				if (r < 0 && errno == EINTR)
					r = 0;
				else if (r < 0)
					n = -1;
			}
			if (n > 0)
				off += n;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = px_errorf(err, PX_ESYS | errno, "%s: copying it: "
				      "%s", shown, strerror(errno));
			break;
		}
		if (n == 0)     /* it shrank: what there is */
			break;
	}
	free(buf);
	if (e == PX_OK && close(out) != 0)
		e = px_errorf(err, PX_ESYS | errno, "%s: %s", to,
			      strerror(errno));
	else if (e != PX_OK)
		close(out);
	if (e == PX_OK)
		*room -= (uint64_t)off;
	return e;
}

/* rm -r of a folder of our own making (two levels: KIND/NAME). */
static void remove_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[JOB_PATH_MAX + 600];

	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (e->d_type == DT_DIR)
			remove_tree(path);
		else
			(void)unlink(path);
	}
	if (d)
		closedir(d);
	(void)rmdir(dir);
}

/* The folder of a job's copies until it is stored (in->stage). */
static enum px_err stage_make(struct job *j, struct px_error *err)
{
	struct job_inputs *in = &j->in;
	const char *dir = j->js->s.dir;

	if (in->stage[0])
		return PX_OK;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return px_errorf(err, PX_ESYS | errno, "mkdir %s: %s", dir,
				 strerror(errno));
	if (snprintf(in->stage, sizeof in->stage, "%s/" STAGE_PREFIX "XXXXXX",
		     dir) >= (int)sizeof in->stage || !mkdtemp(in->stage)) {
		in->stage[0] = '\0';
		return px_errorf(err, PX_ESYS | errno, "%s: a folder for the "
				 "job's files: %s", dir, strerror(errno));
	}
	return PX_OK;
}

enum px_err job_inputs_copy(struct job *j, struct px_error *err)
{
	struct job_inputs *in = &j->in;
	enum px_err e = PX_OK;
	uint64_t room;

	/* a file read that was not pinned was opened by its reader alone
	 * (it could not be a moment before): no copy of it, so no job */
	for (int k = 0; k < JIN_MAX; k++) {
		char p[JOBREQ_PATH_MAX];

		int fd;

		if (in->fd[k] >= 0 || (k == JIN_ADVISOR && !j->mk.have_adv) ||
		    !job_input_path(j, (enum job_input)k, p, sizeof p))
			continue;
		/* why it could not be pinned (no reader said: another of
		 * the data's files is a URL) */
		fd = px_open_input(p, err);
		if (fd >= 0) {
			close(fd);
			px_errorf(err, PX_EINVAL, "%s: it changed while the "
				  "job was read; submit it again", p);
		}
		px_error_prefix(err, "%s: ", j->src);
		return err->code;
	}
	if (!in->npins)
		return PX_OK;
	if ((e = stage_make(j, err)) != PX_OK)
		return e;
	room = room_at(in->stage);
	for (int k = 0; k < JIN_MAX && e == PX_OK; k++) {
		char sub[JOB_PATH_MAX + 16], to[JOB_PATH_MAX + 600];

		if (in->fd[k] < 0)
			continue;
		snprintf(sub, sizeof sub, "%s/%s", in->stage, kind_name[k]);
		snprintf(to, sizeof to, "%s/%s", sub, base_of(in->path[k]));
		if (mkdir(sub, 0700) != 0 && errno != EEXIST)
			e = px_errorf(err, PX_ESYS | errno, "mkdir %s: %s",
				      sub, strerror(errno));
		else
			e = copy_one(in->fd[k], to, in->path[k], &room, err);
	}
	if (e != PX_OK)
		px_error_prefix(err, "%s: ", j->src);
	return e;
}

void job_inputs_drop(struct job *j)
{
	struct job_inputs *in = &j->in;

	for (int k = 0; k < JIN_MAX; k++) {
		if (in->fd[k] >= 0)
			close(in->fd[k]);
		in->fd[k] = -1;
	}
	in->npins = 0;
	if (in->stage[0])
		remove_tree(in->stage);
	in->stage[0] = '\0';
}

/* DIR/ID and DIR/ID/in. */
static void kept_dir(const struct job *j, char *buf, size_t len, bool in)
{
	snprintf(buf, len, "%s/%" PRId64 "%s", j->js->s.dir, j->id,
		 in ? "/in" : "");
}

enum px_err job_inputs_keep(struct job *j, struct px_error *err)
{
	struct job_inputs *in = &j->in;
	char jd[JOB_PATH_MAX], to[JOB_PATH_MAX + 8];
	enum px_err e = PX_OK;

	kept_dir(j, jd, sizeof jd, false);
	kept_dir(j, to, sizeof to, true);
	for (int k = 0; k < JIN_MAX; k++) {
		if (in->fd[k] >= 0)
			close(in->fd[k]);
		in->fd[k] = -1;
	}
	in->npins = 0;
	if (!in->stage[0]) {
		in->kept = true;
		return PX_OK;
	}
	if ((mkdir(jd, 0700) != 0 && errno != EEXIST) ||
	    rename(in->stage, to) != 0)
		e = px_errorf(err, PX_ESYS | errno, "keeping job %" PRId64
			      "'s files in %s: %s", j->id, to,
			      strerror(errno));
	else
		in->stage[0] = '\0';
	if (e != PX_OK)
		job_inputs_drop(j);
	in->kept = e == PX_OK;
	return e;
}

const char *job_input(const struct job *j, enum job_input k, char *buf,
		      size_t len)
{
	char path[JOBREQ_PATH_MAX], in[JOB_PATH_MAX + 8];

	if (!job_input_path(j, k, path, sizeof path))
		return NULL;
	kept_dir(j, in, sizeof in, true);
	if (snprintf(buf, len, "%s/%s/%s", in, kind_name[k], base_of(path)) >=
	    (int)len)
		return NULL;
	return buf;
}

const char *job_file(const struct job *j, enum job_input k,
		     const char *spec, char *buf, size_t len)
{
	const char *p = j->in.kept && spec && spec[0] ?
			job_input(j, k, buf, len) : NULL;

	return p ? p : spec;
}

static enum px_err check_kept(const struct job *j, struct px_error *err)
{
	char buf[JOB_PATH_MAX + 600];

	for (int k = 0; k < JIN_MAX; k++) {
		struct stat st;
		const char *p = job_input(j, (enum job_input)k, buf,
					  sizeof buf);

		/* (a snapshot is read only where the billing needs it: its
		 * reader says so if it does) */
		if (p && k != JIN_ADVISOR &&
		    (lstat(p, &st) != 0 || !S_ISREG(st.st_mode)))
			return px_errorf(err, PX_ENOENT, "%s: the daemon's copy "
					 "of %s (%s) is gone, and the file it "
					 "names is not read again with the "
					 "daemon's rights: submit the job "
					 "again", j->src, spec_of(j, k), p);
	}
	return PX_OK;
}

enum px_err job_inputs_use_kept(struct job *j, bool check,
				struct px_error *err)
{
	j->in.kept = true;
	return check ? check_kept(j, err) : PX_OK;
}

void job_inputs_init(struct job *j)
{
	for (int k = 0; k < JIN_MAX; k++)
		j->in.fd[k] = -1;
}

void job_inputs_remove(struct job *j)
{
	char in[JOB_PATH_MAX + 8];

	j->in.kept = false;
	if (j->id <= 0)
		return;
	kept_dir(j, in, sizeof in, true);
	remove_tree(in);
}

void job_inputs_clean_stale(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[JOB_PATH_MAX + 300];

	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, STAGE_PREFIX, strlen(STAGE_PREFIX)))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		remove_tree(path);
	}
	if (d)
		closedir(d);
}

/* ---- a program's code and owner (docs/programs.md, "Rights") ---- */

#define CODE_MAX_BYTES (UINT64_C(256) << 20)

/* The submitter's identity (the guard's; the daemon's own without one). */
static void owner_of(const struct px_guard *g, uint32_t *uid, uint32_t *gid,
		     uint32_t *groups, int *ngroups)
{
	*ngroups = 0;
	if (!g || !g->as_user) {
		*uid = (uint32_t)getuid();
		*gid = (uint32_t)getgid();
		return;
	}
	*uid = g->uid;
	*gid = g->gid;
	for (int i = 0; i < g->ngroups && i < 64; i++)
		groups[(*ngroups)++] = g->groups[i];
}

/* tar(1), as the submitter, packs folder code into fd out: its exit
 * status, or -1 (the bound or the guard's time passed); its stderr's
 * first line in msg. */
static int tar_code(const char *code, const uint32_t *id, const uint32_t *gr,
		    int ng, int out, char *msg, size_t len)
{
	int o[2], e[2], st = -1;
	uint64_t total = 0;
	bool killed = false;
	pid_t pid;

	msg[0] = 0;
	if (pipe2(o, O_CLOEXEC) || pipe2(e, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		gid_t g[64];

		for (int i = 0; i < ng; i++)
			g[i] = gr[i];
		if (setgroups((size_t)ng, g) != 0 && geteuid() == 0)
			_exit(126);
		if (setresgid(id[1], id[1], id[1]) || setresuid(id[0], id[0],
								 id[0]))
			_exit(126);
		(void)dup2(o[1], 1);
		(void)dup2(e[1], 2);
		(void)close(0);
		execlp("tar", "tar", "-czf", "-", "--one-file-system", "-C",
		       code, ".", (char *)NULL);
		_exit(127);
	}
	close(o[1]);
	close(e[1]);
	for (bool eof = pid < 0; !eof;) {
		char b[65536];
		ssize_t n = read(o[0], b, sizeof b);

		if (n < 0 && errno == EINTR)
			continue;
		eof = n <= 0;
		total += n > 0 ? (uint64_t)n : 0;
		if (n > 0 && (total > CODE_MAX_BYTES || px_guard_expired() ||
			      write(out, b, (size_t)n) != n)) {
			kill(pid, SIGKILL);
			eof = killed = true;
			snprintf(msg, len, "%s", total > CODE_MAX_BYTES ?
				 "larger than 256 MiB packed" :
				 "not read in time");
		}
	}
	if (!killed) {
		ssize_t n = read(e[0], msg, len - 1);

		msg[n > 0 ? n : 0] = 0;
		msg[strcspn(msg, "\n")] = 0;
	}
	close(o[0]);
	close(e[0]);
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return pid > 0 && !killed && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

enum px_err job_inputs_program(struct job *j, const struct px_guard *g,
			       struct px_error *err)
{
	const struct job_program *pg = &j->req.program;
	uint32_t id[2], groups[64];
	int ng, fd, rc;
	char dir[JOB_PATH_MAX + 16], path[JOB_PATH_MAX + 32], msg[512];
	json_t *o, *ga;
	enum px_err e;

	if (!pg->on)
		return PX_OK;
	owner_of(g, &id[0], &id[1], groups, &ng);
	if (geteuid() != 0 && id[0] != (uint32_t)geteuid())
		return px_errorf(err, PX_EINVAL, "%s: program: the daemon runs "
				 "as uid %ld, not as root: it runs the programs "
				 "of its own user only (this one is uid %lu's)",
				 j->src, (long)geteuid(), (unsigned long)id[0]);
	if ((e = stage_make(j, err)) != PX_OK)
		return e;
	snprintf(dir, sizeof dir, "%s/program", j->in.stage);
	if (mkdir(dir, 0700) != 0)
		return px_errorf(err, PX_ESYS | errno, "mkdir %s: %s", dir,
				 strerror(errno));
	ga = json_array();
	for (int i = 0; i < ng; i++)
		json_array_append_new(ga, json_integer(groups[i]));
	o = json_pack("{s:I, s:I, s:o}", "uid", (json_int_t)id[0], "gid",
		      (json_int_t)id[1], "groups", ga);
	snprintf(path, sizeof path, "%s/owner", dir);
	if (!o || json_dump_file(o, path, JSON_COMPACT) != 0) {
		json_decref(o);
		return px_errorf(err, PX_EIO, "%s: cannot be written", path);
	}
	json_decref(o);
	if (!pg->code[0] || pg->code[0] != '/')
		return PX_OK;      /* none, or a URL the nodes fetch */
	snprintf(path, sizeof path, "%s/code.tar.gz", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return px_errorf(err, PX_ESYS | errno, "%s: %s", path,
				 strerror(errno));
	rc = tar_code(pg->code, id, groups, ng, fd, msg, sizeof msg);
	if (close(fd) != 0 && rc == 0)
		rc = -1;
	if (rc != 0) {
		char safe[PX_TERM_SAFE_LEN(512)];

		px_term_safe(msg, safe, sizeof safe);
		return px_errorf(err, PX_EINVAL, "%s: program.code: '%s' could "
				 "not be read as its submitter (uid %lu): %s",
				 j->src, pg->code, (unsigned long)id[0],
				 rc == 1 ? "a file changed while it was read" :
				 safe[0] ? safe : "tar failed");
	}
	return PX_OK;
}
