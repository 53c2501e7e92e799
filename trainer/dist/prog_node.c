/* prog_node.c -- a program job's node agent (prog_node.h).
 *
 * One thread, one poll loop: the program's stdout and stderr (into the
 * rotated log, stderr's tail kept), a signalfd (a notice's SIGTERM, the
 * program's end), and a beat to the daemon every BEAT_MS carrying the
 * progress lines read since the last one.  The daemon's answer says which
 * start of the program this node runs (a new one: the old stopped, the
 * latest checkpoint restored, the new one started) and which checkpoint
 * is the job's latest (mirrored here so that PROTEUS_CKPT_LATEST stays
 * true for torchrun's own restarts, which get no new environment).
 *
 * Files under the user's rights: the node's folder and everything in it
 * belong to the user the program runs as; the code and the checkpoints
 * are unpacked and packed by tar(1) running as that user, so that the
 * agent (root, on a shared host) never opens a path the program made. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <nanomsg/nn.h>
#include <nanomsg/reqrep.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../cloudapi/fetch.h"
#include "../../cloudapi/imds.h"
#include "../../common/log.h"
#include "../../common/pchan.h"
#include "dist.h"
#include "dist_node.h"
#include "prog_fence.h"
#include "prog_node.h"

#define BEAT_MS 300
#define ASK_MS 3000              /* one request's answer */
#define LOG_ROTATE_BYTES (4u << 20)
#define PROGRESS_TRUNC_BYTES (16u << 20)
#define CKPT_PENDING_MAX 8
#define NAME_MAX_LEN 200
#define ARGS_MAX 300
#define ENVS_MAX 200
#define NOTICE_MS 120000          /* a spot notice's two minutes */
#define FWD_MAX (64u << 10)       /* output held for the next beat (no
				   * --log: the daemon writes the log) */
#define IMDS_TIMEOUT_US 1000000

extern char **environ;

struct ckpt_info {
	int64_t seq;
	char name[NAME_MAX_LEN + 1];
	char sha256[65];
	int64_t size;
};

struct pn {
	const struct prog_node_opts *o;
	struct pchan_key key;
	uint64_t session, counter;
	int sock;
	int64_t job;
	/* what the hello's answer said */
	char **argv, **env;
	uid_t uid;
	gid_t gid;
	gid_t groups[64];
	int ngroups;
	char code[FETCH_PATH_MAX + 8];
	int grace_s;
	int64_t nproc_max;       /* the program's tasks at most (0: ours) */
	struct prog_cg cg;       /* its pids cgroup (kind NONE: RLIMIT_NPROC) */
	struct prog_imds_fence fence;
	char fence_why[400];     /* why the program may not run here ("") */
	int64_t stop_ms;         /* a re-form's or the end's grace, real ms
				  * (grace_s on the world's clock) */
	int64_t ckpt_max;
	/* the node's folder */
	char dir[512], code_dir[600], ckpt_dir[600], tmp_dir[600],
	     latest[600], progress[600], in_tar[600];
	/* the program */
	pid_t pid;
	int64_t start;           /* the start it runs (0: none) */
	json_t *run;             /* the daemon's assignment of it */
	int out_fd, err_fd;
	int log_fd;
	off_t log_size;
	char tail[PCHAN_TAIL_MAX];
	size_t tail_n;
	int prog_fd;
	off_t prog_off;
	char line[PCHAN_LINE_MAX + 1];
	size_t line_n;
	bool line_skip;
	json_t *lines;           /* progress lines for the next beat */
	json_t *exit_info;       /* the program's end, to report */
	char pending[CKPT_PENDING_MAX][NAME_MAX_LEN + 1];
	int n_pending;
	struct ckpt_info have;   /* the latest checkpoint here */
	bool leaving;
	bool rehello;            /* the daemon asks for a hello again */
	int64_t notice_us;       /* a notice the node read itself (wall
				  * clock deadline), to report; 0 */
	struct imds_client *imds;
	uint64_t imds_next_us;
	char addr[64];           /* what peers reach it at */
	int port;                /* its first port (0: this host's pick) */
	char *fwd;               /* output for the daemon's log */
	size_t fwd_n, fwd_lost;
	uint64_t kill_at_us;     /* SIGKILL then (0: none) */
	bool stop_asked;
	uint64_t last_ok_us;
	int sfd;
};

static uint64_t now_us(void)
{
	return px_now_mono_us();
}

/* sig to every process of our group but this one: the program's, which
 * share it (a world's SIGKILL of the group ends them all), and to every
 * task of the program's cgroup (one that made a group of its own). */
static void kill_group(const struct pn *p, int sig)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t me = getpid(), pg = getpgrp();

	while (d && (e = readdir(d))) {
		char path[64], b[512], *r;
		long pid = strtol(e->d_name, &r, 10);
		int fd, grp;
		ssize_t n;

		if (*r || pid <= 0 || pid == me)
			continue;
		snprintf(path, sizeof path, "/proc/%ld/stat", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd < 0 ? -1 : read(fd, b, sizeof b - 1);
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			continue;
		b[n] = 0;
		/* "pid (comm) state ppid pgrp ...": after the last ')' */
		r = strrchr(b, ')');
		if (r && sscanf(r + 1, " %*c %*d %d", &grp) == 1 && grp == pg)
			(void)kill((pid_t)pid, sig);
	}
	if (d)
		closedir(d);
	(void)prog_cg_signal(&p->cg, sig);
}

/* ---- the channel ---- */

static bool sock_open(struct pn *p)
{
	int ms = ASK_MS, max = -1;

	if (p->sock >= 0)
		nn_close(p->sock);
	p->sock = nn_socket(AF_SP, NN_REQ);
	if (p->sock < 0)
		return false;
	(void)nn_setsockopt(p->sock, NN_SOL_SOCKET, NN_RCVTIMEO, &ms,
			    sizeof ms);
	(void)nn_setsockopt(p->sock, NN_SOL_SOCKET, NN_SNDTIMEO, &ms,
			    sizeof ms);
	(void)nn_setsockopt(p->sock, NN_SOL_SOCKET, NN_RCVMAXSIZE, &max,
			    sizeof max);
	return nn_connect(p->sock, p->o->hub) >= 0;
}

/* One request and its answer (req consumed).  NULL: no answer (the
 * socket is made anew), or the daemon's error (logged). */
static json_t *ask(struct pn *p, json_t *req)
{
	struct px_error err = {0};
	uint8_t *msg = NULL;
	size_t len;
	void *buf = NULL;
	int n;
	enum pchan_dir dir;
	uint64_t sess, ctr;
	json_t *rep = NULL;
	char op[16];

	json_object_set_new(req, "inst", json_integer((json_int_t)p->o->inst));
	snprintf(op, sizeof op, "%s",
		 json_string_value(json_object_get(req, "op")) ?
		 json_string_value(json_object_get(req, "op")) : "?");
	p->counter++;
	if (pchan_seal(&p->key, PCHAN_REQUEST, p->session, p->counter, req,
		       &msg, &len, &err) != PX_OK) {
		json_decref(req);
		log_err("program-node: %s", err.msg);
		return NULL;
	}
	json_decref(req);
	if (nn_send(p->sock, msg, len, 0) < 0 ||
	    (n = nn_recv(p->sock, &buf, NN_MSG, 0)) < 0) {
		log_warn("program-node %" PRIu64 ": no answer from the daemon "
			 "(%s): %s", p->o->inst, op, nn_strerror(nn_errno()));
		free(msg);
		(void)sock_open(p);
		return NULL;
	}
	free(msg);
	if (n > (int)PCHAN_MSG_MAX ||
	    pchan_open(&p->key, buf, (size_t)n, &dir, &sess, &ctr, &rep,
		       &err) != PX_OK || dir != PCHAN_REPLY ||
	    sess != p->session || ctr != p->counter) {
		nn_freemsg(buf);
		json_decref(rep);
		log_warn("program-node: an answer that is not the daemon's "
			 "to this request: %s", err.msg[0] ? err.msg :
			 "another request's");
		(void)sock_open(p);
		return NULL;
	}
	nn_freemsg(buf);
	p->last_ok_us = now_us();
	if (json_is_string(json_object_get(rep, "error"))) {
		/* a daemon restarted (ec2: the instance outlived it) knows
		 * no node yet: hello again */
		if (!strcmp(json_string_value(json_object_get(rep, "error")),
			    "hello first"))
			p->rehello = true;
		log_err("program-node: the daemon: %s",
			json_string_value(json_object_get(rep, "error")));
		json_decref(rep);
		return NULL;
	}
	return rep;
}

/* ---- as the user ---- */

/* In a child: become the program's user (groups, then gid, then uid),
 * then die with the agent. */
static void become_user(const struct pn *p)
{
	if (getuid() == 0 || p->uid != getuid()) {
		if (setgroups((size_t)p->ngroups, p->groups) != 0 ||
		    setresgid(p->gid, p->gid, p->gid) != 0 ||
		    setresuid(p->uid, p->uid, p->uid) != 0)
			_exit(126);
	}
	/* set after the credentials change, which clears it */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
}

/* tar(1) as the user, started: its stdin fd in, stdout fd out (-1:
 * /dev/null); args NULL-ended after "tar".  Its pid, or -1. */
static pid_t tar_start(const struct pn *p, int in, int out,
		       const char *const *args)
{
	const char *argv[16] = { "tar" };
	size_t k = 1;
	pid_t pid;

	for (const char *const *a = args; *a && k < 15; a++)
		argv[k++] = *a;
	argv[k] = NULL;
	pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);
		sigset_t none;

		become_user(p);
		(void)dup2(in >= 0 ? in : nul, 0);
		(void)dup2(out >= 0 ? out : nul, 1);
		for (int fd = 3; fd < 1024; fd++)
			(void)close(fd);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execvp("tar", (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* Its exit status, -1. */
static int tar_wait(pid_t pid)
{
	int st = 0;

	if (pid < 0)
		return -1;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int tar_as_user(const struct pn *p, int in, int out,
		       const char *const *args)
{
	return tar_wait(tar_start(p, in, out, args));
}

/* A folder of the node's, made as root and given to the user. */
static bool own_dir(const struct pn *p, const char *path)
{
	if (mkdir(path, 0700) != 0 && errno != EEXIST)
		return false;
	return chown(path, p->uid, p->gid) == 0 || getuid() != 0;
}

/* ---- the hello: what to run ---- */

static char **strv_from(json_t *a, size_t max)
{
	size_t n = json_array_size(a), i;
	char **v;

	if (!json_is_array(a) || n > max)
		return NULL;
	v = calloc(n + 1, sizeof *v);
	for (i = 0; v && i < n; i++) {
		const char *s = json_string_value(json_array_get(a, i));

		if (!s || !(v[i] = strdup(s)))
			break;
	}
	if (v && i < n) {
		for (size_t k = 0; k < i; k++)
			free(v[k]);
		free(v);
		return NULL;
	}
	return v;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* An instance's program runs as a user of its own image (the daemon
 * names it: the head node's uids mean nothing there). */
static bool user_by_name(struct pn *p, const char *name)
{
	struct passwd *pw = getpwnam(name);
	int n = 64;

	if (!pw) {
		log_err("program-node: no user '%s' here to run the program "
			"as", name);
		return false;
	}
	p->uid = pw->pw_uid;
	p->gid = pw->pw_gid;
	if (getgrouplist(name, pw->pw_gid, p->groups, &n) < 0)
		n = 0;
	p->ngroups = n;
	return true;
}

/* The code by URL, fetched into this host's cache and checked by its
 * SHA-256 (cloudapi/fetch.h), as a node fetches data. */
static bool fetch_code(struct pn *p, const char *url, const char *sha)
{
	struct fetch_opts fo = { 0 };
	struct fetch_result r;
	struct px_error err = { 0 };

	if (!sha || fetch_file(&fo, url, sha, &r, &err) != PX_OK) {
		log_err("program-node: the code: %s", err.msg[0] ? err.msg :
			"no SHA-256");
		return false;
	}
	snprintf(p->code, sizeof p->code, "%s", r.path);
	log_info("program-node %" PRIu64 ": code %s fetched and checked",
		 p->o->inst, r.path);
	return true;
}

static bool take_hello(struct pn *p, json_t *r)
{
	json_t *g = json_object_get(r, "groups");
	const char *code = json_string_value(json_object_get(r, "code"));

	p->argv = strv_from(json_object_get(r, "command"), ARGS_MAX);
	p->env = strv_from(json_object_get(r, "env"), ENVS_MAX);
	p->job = json_integer_value(json_object_get(r, "job"));
	p->uid = (uid_t)json_integer_value(json_object_get(r, "uid"));
	p->gid = (gid_t)json_integer_value(json_object_get(r, "gid"));
	p->grace_s = (int)json_integer_value(json_object_get(r, "grace_s"));
	p->ckpt_max = json_integer_value(json_object_get(r, "ckpt_max"));
	p->stop_ms = json_integer_value(json_object_get(r, "stop_ms"));
	p->nproc_max = json_integer_value(json_object_get(r, "nproc_max"));
	if (p->stop_ms <= 0)
		p->stop_ms = (int64_t)p->grace_s * 1000;
	p->ngroups = 0;
	for (size_t i = 0; i < json_array_size(g) && i < 64; i++)
		p->groups[p->ngroups++] = (gid_t)json_integer_value(
			json_array_get(g, i));
	snprintf(p->code, sizeof p->code, "%s", code ? code : "");
	if (json_is_string(json_object_get(r, "user")) &&
	    !user_by_name(p, json_string_value(json_object_get(r, "user"))))
		return false;
	if (json_is_string(json_object_get(r, "code_url")) &&
	    !fetch_code(p, json_string_value(json_object_get(r, "code_url")),
			json_string_value(json_object_get(r, "code_sha256"))))
		return false;
	return p->argv && p->argv[0] && p->env && p->job > 0 &&
	       p->grace_s > 0 && p->ckpt_max > 0;
}

/* The node's folder: DIR/proteus-JOB-iINST-XXXXXX with code/, ckpt/, the
 * progress file and the latest link, the user's; the code unpacked. */
static bool make_dir(struct pn *p)
{
	const char *base = p->o->work ? p->o->work : getenv("TMPDIR");
	int fd;

	char tag[PCHAN_TAG_HEX];

	if (pchan_folder_tag(p->o->key, p->o->key_len, tag, NULL) != PX_OK)
		return false;
	snprintf(p->dir, sizeof p->dir, "%s/proteus-%s-i%" PRIu64 "-XXXXXX",
		 base && base[0] ? base : "/tmp", tag, p->o->inst);
	/* the agent's (0711): the user's folders and files in it, which
	 * the user cannot swap for links (in.tar, latest are the agent's) */
	if (!mkdtemp(p->dir) || chmod(p->dir, 0711) != 0)
		return false;
	snprintf(p->code_dir, sizeof p->code_dir, "%s/code", p->dir);
	snprintf(p->ckpt_dir, sizeof p->ckpt_dir, "%s/ckpt", p->dir);
	snprintf(p->tmp_dir, sizeof p->tmp_dir, "%s/tmp", p->dir);
	snprintf(p->latest, sizeof p->latest, "%s/latest", p->dir);
	snprintf(p->progress, sizeof p->progress, "%s/progress", p->dir);
	snprintf(p->in_tar, sizeof p->in_tar, "%s/.in.tar", p->dir);
	if (!own_dir(p, p->code_dir) || !own_dir(p, p->ckpt_dir) ||
	    !own_dir(p, p->tmp_dir))
		return false;
	fd = open(p->progress, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || (getuid() == 0 && fchown(fd, p->uid, p->gid) != 0))
		return false;
	p->prog_fd = fd;
	if (p->code[0]) {
		int in = open(p->code, O_RDONLY | O_CLOEXEC);
		const char *args[] = { "-xzf", "-", "-C", p->code_dir,
				       "--no-same-owner", NULL };
		int rc = in < 0 ? -1 : tar_as_user(p, in, -1, args);

		if (in >= 0)
			close(in);
		if (rc != 0) {
			log_err("program-node: the code (%s) would not "
				"unpack (tar: %d)", p->code, rc);
			return false;
		}
	}
	return true;
}

static void remove_dir(struct pn *p)
{
	const char *const mine[] = { p->progress, p->latest, p->in_tar, NULL };
	char tmp[700];
	pid_t pid;

	if (!p->dir[0])
		return;
	/* as the user: what the program left in its folders is its own */
	pid = fork();
	if (pid == 0) {
		become_user(p);
		execlp("find", "find", p->code_dir, p->ckpt_dir, p->tmp_dir,
		       "-xdev", "-mindepth", "1", "-delete", (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		(void)waitpid(pid, NULL, 0);
	for (const char *const *f = mine; *f; f++)
		(void)unlink(*f);
	snprintf(tmp, sizeof tmp, "%s.new", p->latest);
	(void)unlink(tmp);
	(void)rmdir(p->code_dir);
	(void)rmdir(p->ckpt_dir);
	(void)rmdir(p->tmp_dir);
	(void)rmdir(p->dir);
	p->dir[0] = 0;
}

/* ---- the log ---- */

/* Output kept for the next beat, as text (a byte that is not printable
 * ASCII, a newline or a tab becomes '?'), the oldest dropped past
 * FWD_MAX. */
static void fwd_add(struct pn *p, const char *b, size_t n)
{
	if (!p->fwd && !(p->fwd = malloc(FWD_MAX)))
		return;
	if (n > FWD_MAX) {
		p->fwd_lost += n - FWD_MAX;
		b += n - FWD_MAX;
		n = FWD_MAX;
	}
	if (p->fwd_n + n > FWD_MAX) {
		size_t drop = p->fwd_n + n - FWD_MAX;

		memmove(p->fwd, p->fwd + drop, p->fwd_n - drop);
		p->fwd_n -= drop;
		p->fwd_lost += drop;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)b[i];

		p->fwd[p->fwd_n++] = c == '\n' || c == '\t' ||
				     (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
}

static void log_write(struct pn *p, const char *b, size_t n)
{
	if (!p->o->log) {
		fwd_add(p, b, n);
		return;
	}
	if (p->log_fd < 0)
		return;
	if (p->log_size + (off_t)n > (off_t)LOG_ROTATE_BYTES && p->o->log) {
		char old[1100];

		snprintf(old, sizeof old, "%s.1", p->o->log);
		(void)rename(p->o->log, old);
		close(p->log_fd);
		p->log_fd = open(p->o->log, O_WRONLY | O_CREAT | O_APPEND |
				 O_CLOEXEC, 0600);
		p->log_size = 0;
		if (p->log_fd < 0)
			return;
	}
	if (write(p->log_fd, b, n) == (ssize_t)n)
		p->log_size += (off_t)n;
}

static void tail_add(struct pn *p, const char *b, size_t n)
{
	if (n >= sizeof p->tail) {
		b += n - sizeof p->tail;
		n = sizeof p->tail;
	}
	if (p->tail_n + n > sizeof p->tail) {
		size_t drop = p->tail_n + n - sizeof p->tail;

		memmove(p->tail, p->tail + drop, p->tail_n - drop);
		p->tail_n -= drop;
	}
	memcpy(p->tail + p->tail_n, b, n);
	p->tail_n += n;
}

/* Output of the program's fd into the log; false at its end. */
static bool drain_out(struct pn *p, int *fd, bool is_err)
{
	char b[8192];
	ssize_t n = read(*fd, b, sizeof b);

	if (n > 0) {
		log_write(p, b, (size_t)n);
		if (is_err)
			tail_add(p, b, (size_t)n);
		return true;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	close(*fd);
	*fd = -1;
	return false;
}

/* ---- progress ---- */

static bool good_name(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= NAME_MAX_LEN && strcmp(s, ".") &&
	       strcmp(s, "..") && !strchr(s, '/') && s[0] != '-';
}

static void take_line(struct pn *p, const char *s, size_t n)
{
	json_t *o = json_loadb(s, n, 0, NULL);
	json_t *c = json_object_get(o, "checkpoint");

	if (!json_is_object(o)) {
		json_decref(o);
		return;          /* not a progress line: ignored */
	}
	if (json_is_string(c)) {
		if (good_name(json_string_value(c)) &&
		    p->n_pending < CKPT_PENDING_MAX)
			snprintf(p->pending[p->n_pending++], NAME_MAX_LEN + 1,
				 "%s", json_string_value(c));
		json_object_del(o, "checkpoint");
	}
	if (json_object_size(o) && json_array_size(p->lines) < PCHAN_LINES_MAX)
		json_array_append(p->lines, o);
	json_decref(o);
}

/* The lines written to the progress file since the last read. */
static void read_progress(struct pn *p)
{
	char b[8192];
	ssize_t n;

	while ((n = pread(p->prog_fd, b, sizeof b, p->prog_off)) > 0) {
		p->prog_off += n;
		for (ssize_t i = 0; i < n; i++) {
			if (b[i] == '\n') {
				if (!p->line_skip)
					take_line(p, p->line, p->line_n);
				p->line_n = 0;
				p->line_skip = false;
			} else if (p->line_n < PCHAN_LINE_MAX) {
				p->line[p->line_n++] = b[i];
			} else {
				p->line_skip = true;  /* too long: dropped */
			}
		}
	}
	/* a writer appends at the end, wherever it is: start it again */
	if (p->prog_off > (off_t)PROGRESS_TRUNC_BYTES && !p->line_n &&
	    ftruncate(p->prog_fd, 0) == 0)
		p->prog_off = 0;
}

/* ---- checkpoints ---- */

/* Point the latest link at ckpt/NAME (a new link renamed over it). */
static void point_latest(struct pn *p, const char *name)
{
	char tmp[700], to[NAME_MAX_LEN + 8];

	snprintf(tmp, sizeof tmp, "%s.new", p->latest);
	snprintf(to, sizeof to, "ckpt/%s", name);
	(void)unlink(tmp);
	if (symlink(to, tmp) == 0) {
		(void)rename(tmp, p->latest);
	}
}

/* Checkpoint NAME, which the program completed, packed by tar as the
 * user and sent in chunks: the daemon's sequence number, or -1. */
static int64_t put_ckpt(struct pn *p, const char *name)
{
	const char *args[] = { "-cf", "-", "-C", p->ckpt_dir, "--", name,
			       NULL };
	int fds[2];
	pid_t pid;
	int64_t off = 0, seq = -1;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	uint8_t *chunk = malloc(PCHAN_CHUNK);
	char *b64 = malloc(4 * (PCHAN_CHUNK / 3) + 8);
	bool ok = md && chunk && b64 && pipe2(fds, O_CLOEXEC) == 0;

	if (!ok)
		goto out;
	pid = tar_start(p, -1, fds[1], args);
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		goto out;
	}
	(void)EVP_DigestInit_ex(md, EVP_sha256(), NULL);
	for (;;) {
		size_t n = 0;
		ssize_t r;
		json_t *req, *rep;
		bool last;

		while (n < PCHAN_CHUNK &&
		       ((r = read(fds[0], chunk + n, PCHAN_CHUNK - n)) > 0 ||
			(r < 0 && errno == EINTR)))
			n += r > 0 ? (size_t)r : 0;
		last = n < PCHAN_CHUNK;
		(void)EVP_DigestUpdate(md, chunk, n);
		EVP_EncodeBlock((unsigned char *)b64, chunk, (int)n);
		req = json_pack("{s:s, s:s, s:I, s:s, s:b}", "op", "ckpt_put",
				"name", name, "off", (json_int_t)off, "data",
				b64, "last", last);
		off += (int64_t)n;
		if (last) {
			uint8_t d[32];
			char hex[65];
			unsigned dl = 0;
			int st;

			(void)EVP_DigestFinal_ex(md, d, &dl);
			px_hex(d, 32, hex);
			st = tar_wait(pid);
			json_object_set_new(req, "sha256", json_string(hex));
			if (st != 0)
				json_object_set_new(req, "abort",
						    json_string("tar failed"));
		}
		if (off > p->ckpt_max)
			json_object_set_new(req, "abort", json_string(
				"larger than checkpoint_max_mb"));
		rep = ask(p, req);
		if (!rep || last || json_object_get(req, "abort")) {
			seq = rep ? json_integer_value(json_object_get(rep,
								       "seq"))
				  : -1;
			json_decref(rep);
			if (!last) {
				(void)kill(pid, SIGKILL);
				(void)waitpid(pid, NULL, 0);
			}
			break;
		}
		json_decref(rep);
	}
	close(fds[0]);
out:
	EVP_MD_CTX_free(md);
	free(chunk);
	free(b64);
	return seq > 0 ? seq : -1;
}

static void put_pending(struct pn *p)
{
	for (int i = 0; i < p->n_pending; i++) {
		int64_t seq = put_ckpt(p, p->pending[i]);

		if (seq > 0) {
			p->have.seq = seq;
			snprintf(p->have.name, sizeof p->have.name, "%s",
				 p->pending[i]);
			point_latest(p, p->pending[i]);
			log_info("program-node %" PRIu64 ": checkpoint %s "
				 "stored as %" PRId64, p->o->inst,
				 p->pending[i], seq);
		} else {
			log_warn("program-node %" PRIu64 ": checkpoint %s not "
				 "stored", p->o->inst, p->pending[i]);
		}
	}
	p->n_pending = 0;
}

/* The job's latest checkpoint c fetched into in_tar, checked, unpacked
 * as the user into ckpt/, and the link pointed at it. */
static bool get_ckpt(struct pn *p, const struct ckpt_info *c)
{
	int fd = open(p->in_tar, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	uint8_t *bin = malloc(PCHAN_CHUNK + 8);
	int64_t off = 0;
	bool ok = fd >= 0 && md && bin &&
		  EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1;

	while (ok) {
		json_t *rep = ask(p, json_pack("{s:s, s:I, s:I}", "op",
					       "ckpt_get", "seq",
					       (json_int_t)c->seq, "off",
					       (json_int_t)off));
		const char *d = json_string_value(json_object_get(rep, "data"));
		size_t dl = d ? strlen(d) : 0;
		int n = dl <= 4 * (PCHAN_CHUNK / 3) + 4 ?
			pchan_b64_decode(d, dl, bin) : 0;
		bool last = json_is_true(json_object_get(rep, "last"));

		if (!rep || n < 0) {
			json_decref(rep);
			ok = false;
			break;
		}
		ok = write(fd, bin, (size_t)n) == n &&
		     EVP_DigestUpdate(md, bin, (size_t)n) == 1;
		off += n;
		json_decref(rep);
		if (last || off > p->ckpt_max)
			break;
	}
	if (ok) {
		uint8_t dg[32];
		char hex[65];
		unsigned dgl = 0;

		(void)EVP_DigestFinal_ex(md, dg, &dgl);
		px_hex(dg, 32, hex);
		ok = off == c->size && !strcmp(hex, c->sha256);
		if (!ok)
			log_warn("program-node %" PRIu64 ": checkpoint %"
				 PRId64 " arrived damaged; not restored",
				 p->o->inst, c->seq);
	}
	if (ok) {
		const char *args[] = { "-xf", "-", "-C", p->ckpt_dir,
				       "--no-same-owner", NULL };

		(void)lseek(fd, 0, SEEK_SET);
		ok = tar_as_user(p, fd, -1, args) == 0;
	}
	if (fd >= 0)
		close(fd);
	(void)unlink(p->in_tar);
	EVP_MD_CTX_free(md);
	free(bin);
	if (ok) {
		p->have = *c;
		point_latest(p, c->name);
	}
	return ok;
}

/* The daemon's latest checkpoint, from an answer. */
static bool ckpt_of(json_t *r, struct ckpt_info *c)
{
	json_t *o = json_object_get(r, "ckpt");
	const char *n = json_string_value(json_object_get(o, "name"));
	const char *h = json_string_value(json_object_get(o, "sha256"));

	if (!json_is_object(o) || !n || !h || !good_name(n) || strlen(h) != 64)
		return false;
	c->seq = json_integer_value(json_object_get(o, "seq"));
	c->size = json_integer_value(json_object_get(o, "size"));
	snprintf(c->name, sizeof c->name, "%s", n);
	snprintf(c->sha256, sizeof c->sha256, "%s", h);
	return c->seq > 0;
}

/* ---- the program ---- */

static void env_put(char **v, size_t *k, size_t max, const char *name,
		    const char *val)
{
	char *s;

	if (*k >= max || !val || asprintf(&s, "%s=%s", name, val) < 0)
		return;
	v[(*k)++] = s;
}

static bool env_ours(const char *e)
{
	static const char *const drop[] = { "PX_", "AWS_", "PROTEUS_",
					    "PET_", "NOTIFY_SOCKET=",
					    "LD_PRELOAD=", NULL };

	for (const char *const *d = drop; *d; d++)
		if (!strncmp(e, *d, strlen(*d)))
			return true;
	return false;
}

/* The program's environment: ours (the agent's own allow-list, less the
 * PX_, AWS_ and contract names), the user's HOME, the contract, the
 * run's, then the spec's env. */
static char **prog_env(struct pn *p, json_t *run)
{
	size_t n = 0, k = 0, max;
	char **v, num[32];
	struct passwd *pw = getpwuid(p->uid);
	json_t *e = json_object_get(run, "env");
	const char *key;
	json_t *val;

	while (environ[n])
		n++;
	max = n + 32 + json_object_size(e) + 64;
	v = calloc(max + 1, sizeof *v);
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!env_ours(environ[i]) && strncmp(environ[i], "HOME=", 5) &&
		    strncmp(environ[i], "USER=", 5) &&
		    strncmp(environ[i], "LOGNAME=", 8) &&
		    strncmp(environ[i], "TMPDIR=", 7))
			v[k++] = strdup(environ[i]);
	env_put(v, &k, max, "HOME", pw ? pw->pw_dir : p->dir);
	env_put(v, &k, max, "USER", pw ? pw->pw_name : "");
	env_put(v, &k, max, "LOGNAME", pw ? pw->pw_name : "");
	/* its temporary files (torchrun's logs) go with the node's folder */
	env_put(v, &k, max, "TMPDIR", p->tmp_dir);
	snprintf(num, sizeof num, "%" PRId64, p->job);
	env_put(v, &k, max, PROG_ENV_JOB_ID, num);
	env_put(v, &k, max, PROG_ENV_CKPT_DIR, p->ckpt_dir);
	env_put(v, &k, max, PROG_ENV_CKPT_LATEST, p->latest);
	env_put(v, &k, max, PROG_ENV_PROGRESS, p->progress);
	/* the run's: ranks, addresses, torchrun's PET_* */
	json_object_foreach(e, key, val)
		if (json_is_string(val))
			env_put(v, &k, max, key, json_string_value(val));
	for (char **u = p->env; u && *u && k < max; u++)
		v[k++] = strdup(*u);
	v[k] = NULL;
	return v;
}

/* A start's pids cgroup (prog_fence.h), made before it and removed
 * with it; the first start says which bound holds the program. */
static void make_cg(struct pn *p)
{
	static bool said;
	char why[400], name[64];

	prog_cg_remove(&p->cg);
	if (p->nproc_max <= 0)
		return;
	snprintf(name, sizeof name, "proteus-prog-i%" PRIu64 "-%ld",
		 p->o->inst, (long)getpid());
	if (prog_cg_make(&p->cg, name, p->nproc_max, why, sizeof why)) {
		if (!said)
			log_info("program-node %" PRIu64 ": the program's tasks "
				 "are bounded at %" PRId64 " by %s %s",
				 p->o->inst, p->nproc_max,
				 prog_cg_kind_name(p->cg.kind), p->cg.path);
	} else if (!said) {
		log_warn("program-node %" PRIu64 ": no pids cgroup (%s); the "
			 "program's tasks are bounded by RLIMIT_NPROC, for its "
			 "user host-wide", p->o->inst, why);
	}
	said = true;
}

static bool start_program(struct pn *p, json_t *run)
{
	int out[2], err[2];
	char **envp = prog_env(p, run);
	pid_t pid;

	if (p->fence_why[0]) {
		strv_free(envp);
		return false;
	}
	if (!envp || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
		strv_free(envp);
		return false;
	}
	make_cg(p);
	pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);
		/* into its cgroup while still the agent (root) */
		bool held = prog_cg_enter(&p->cg);

		become_user(p);
		(void)dup2(nul, 0);
		(void)dup2(out[1], 1);
		(void)dup2(err[1], 2);
		for (int fd = 3; fd < 1024; fd++)
			(void)close(fd);
		if (chdir(p->code_dir) != 0)
			_exit(126);
		{
			sigset_t none;
			/* a fork bomb of the program's stops at its
			 * cgroup's pids.max; without one, at RLIMIT_NPROC
			 * (the user's tasks host-wide, threads too; root's
			 * are not held by it) */
			struct rlimit nproc = { (rlim_t)p->nproc_max,
						(rlim_t)p->nproc_max };

			sigemptyset(&none);
			sigprocmask(SIG_SETMASK, &none, NULL);
			if (p->nproc_max > 0 && !held)
				(void)setrlimit(RLIMIT_NPROC, &nproc);
		}
		execvpe(p->argv[0], p->argv, envp);
		fprintf(stderr, "program-node: cannot run '%s': %s\n",
			p->argv[0], strerror(errno));
		_exit(127);
	}
	strv_free(envp);
	close(out[1]);
	close(err[1]);
	if (pid < 0) {
		close(out[0]);
		close(err[0]);
		return false;
	}
	(void)fcntl(out[0], F_SETFL, O_NONBLOCK);
	(void)fcntl(err[0], F_SETFL, O_NONBLOCK);
	p->out_fd = out[0];
	p->err_fd = err[0];
	p->pid = pid;
	p->tail_n = 0;
	p->start = json_integer_value(json_object_get(run, "start"));
	log_info("program-node %" PRIu64 ": start %" PRId64 " (pid %ld)",
		 p->o->inst, p->start, (long)pid);
	return true;
}

/* SIGTERM to the program's processes (the agent's group, which the
 * program shares: a world's SIGKILL of the group ends them all), SIGKILL
 * after ms. */
static void stop_program(struct pn *p, int64_t ms)
{
	if (p->pid <= 0 || p->kill_at_us)
		return;
	kill_group(p, SIGTERM);
	(void)kill(p->pid, SIGTERM);  /* in case it made a group of its own */
	p->kill_at_us = now_us() + (uint64_t)(ms > 0 ? ms : 1) * 1000;
}

/* The program's end: its output drained, its checkpoints sent, the end
 * kept for the next beat. */
static void reap(struct pn *p, int st)
{
	char tail[PCHAN_TAIL_MAX + 1];

	while (p->out_fd >= 0 && drain_out(p, &p->out_fd, false))
		;
	while (p->err_fd >= 0 && drain_out(p, &p->err_fd, true))
		;
	read_progress(p);
	put_pending(p);
	/* what this start left behind (a daemon of its own, out of its
	 * group) ends with it, and so does its cgroup */
	prog_cg_remove(&p->cg);
	memcpy(tail, p->tail, p->tail_n);
	tail[p->tail_n] = 0;
	json_decref(p->exit_info);
	p->exit_info = json_pack("{s:I, s:i, s:i, s:s, s:b}", "start",
				 (json_int_t)p->start, "code",
				 WIFEXITED(st) ? WEXITSTATUS(st) : -1, "signal",
				 WIFSIGNALED(st) ? WTERMSIG(st) : 0, "tail",
				 tail, "stopped", p->kill_at_us != 0);
	if (!p->exit_info)     /* the tail was not UTF-8 */
		p->exit_info = json_pack("{s:I, s:i, s:i, s:s, s:b}", "start",
					 (json_int_t)p->start, "code",
					 WIFEXITED(st) ? WEXITSTATUS(st) : -1,
					 "signal", WIFSIGNALED(st) ?
					 WTERMSIG(st) : 0, "tail", "",
					 "stopped", p->kill_at_us != 0);
	log_info("program-node %" PRIu64 ": start %" PRId64 " ended (%s %d)",
		 p->o->inst, p->start, WIFEXITED(st) ? "exit" : "signal",
		 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	p->pid = 0;
	p->kill_at_us = 0;
	p->start = 0;
}

/* ---- the beat ---- */

/* What the daemon's answer asks: a checkpoint to mirror, a start to
 * run, a stop. */
static void take_answer(struct pn *p, json_t *r)
{
	struct ckpt_info c;
	json_t *run = json_object_get(r, "run");
	int64_t want = json_integer_value(json_object_get(run, "start"));

	if (json_is_true(json_object_get(r, "stop")) && !p->stop_asked) {
		/* the job is over: the program stops, the node stays until
		 * the world ends it (an agent that ended would be an
		 * instance lost) */
		p->stop_asked = true;
		stop_program(p, p->stop_ms);
	}
	if (ckpt_of(r, &c) && c.seq > p->have.seq && !p->n_pending)
		(void)get_ckpt(p, &c);
	if (p->leaving || p->stop_asked)
		return;
	if (p->pid > 0 && want != p->start) {
		/* superseded: the group re-forms (not a failure); the
		 * grace, on the world's clock */
		stop_program(p, p->stop_ms);
		return;
	}
	if (p->pid <= 0 && want > 0 && !p->exit_info &&
	    want != json_integer_value(json_object_get(p->run, "start"))) {
		json_decref(p->run);
		p->run = json_incref(run);
		if (!start_program(p, run))
			p->exit_info = json_pack("{s:I, s:i, s:i, s:s, s:b}",
						 "start", (json_int_t)want,
						 "code", 127, "signal", 0,
						 "tail", p->fence_why[0] ?
						 p->fence_why : "the agent "
						 "could not start the program",
						 "stopped", false);
	}
}

static void beat(struct pn *p)
{
	json_t *req, *rep;

	read_progress(p);
	if (p->n_pending)
		put_pending(p);
	req = json_pack("{s:s, s:I, s:s, s:O, s:I}", "op", "beat", "start",
			(json_int_t)p->start, "state", p->leaving ? "leaving" :
			p->pid > 0 ? "running" : "idle", "lines", p->lines,
			"ckpt_seq", (json_int_t)p->have.seq);
	if (p->exit_info)
		json_object_set(req, "exit", p->exit_info);
	if (p->fwd_n)
		json_object_set_new(req, "out", json_stringn(p->fwd, p->fwd_n));
	if (p->fwd_lost)
		json_object_set_new(req, "out_lost",
				    json_integer((json_int_t)p->fwd_lost));
	if (p->notice_us)
		json_object_set_new(req, "notice_us",
				    json_integer((json_int_t)p->notice_us));
	rep = ask(p, req);
	if (!rep)
		return;
	p->fwd_n = p->fwd_lost = 0;
	p->notice_us = 0;
	json_array_clear(p->lines);
	json_decref(p->exit_info);
	p->exit_info = NULL;
	take_answer(p, rep);
	json_decref(rep);
}

/* ---- signals ---- */

/* The node must be gone in ms: the program gets SIGTERM and the spec's
 * share of them (grace_seconds of a 2-minute notice), then SIGKILL. */
static void leave(struct pn *p, int64_t ms)
{
	int64_t g = ms * p->grace_s / (NOTICE_MS / 1000);

	p->leaving = true;
	log_info("program-node %" PRIu64 ": told to leave in %" PRId64 " ms: "
		 "the program gets SIGTERM and %" PRId64 " ms", p->o->inst, ms,
		 g);
	stop_program(p, g);
}

/* EC2: the instance's own interruption notice, polled (only the
 * instance can read it); the daemon hears of it with the next beat. */
static void poll_imds(struct pn *p)
{
	struct dist_node dn = {
		.imds_margin_ms = p->o->imds_margin_ms,
		.clock_speedup = p->o->clock_speedup,
		.clock_origin_s = p->o->clock_origin_s,
	};
	struct imds_spot_action a;
	struct px_error err = { 0 };
	bool has = false;
	uint32_t every = p->o->imds_poll_ms ? p->o->imds_poll_ms :
			 (uint32_t)(5000 / (p->o->clock_speedup > 1 ?
					    p->o->clock_speedup : 1));
	int64_t ms;

	if (!p->imds || p->leaving || now_us() < p->imds_next_us)
		return;
	p->imds_next_us = now_us() + (uint64_t)(every < 50 ? 50 : every) *
			  1000;
	if (imds_spot_action(p->imds, &a, &has, &err) != PX_OK || !has)
		return;
	ms = dist_node_notice_ms(&dn, a.time_s, (int64_t)px_now_wall_us());
	log_info("program-node %" PRIu64 ": spot interruption notice: %s at "
		 "%" PRId64, p->o->inst, a.action, a.time_s);
	p->notice_us = (int64_t)px_now_wall_us() + ms * 1000;
	leave(p, ms);
}

static void on_signal(struct pn *p)
{
	struct signalfd_siginfo si;

	while (read(p->sfd, &si, sizeof si) == sizeof si) {
		if (si.ssi_signo == SIGCHLD) {
			int st;

			if (p->pid > 0 && waitpid(p->pid, &st, WNOHANG) ==
					  p->pid)
				reap(p, st);
			continue;
		}
		if (si.ssi_pid == (uint32_t)getpid())
			continue;        /* our own, to the program */
		if (si.ssi_signo == SIGTERM && !p->leaving) {
			/* the world's notice: ms left in the value */
			leave(p, si.ssi_code == SI_QUEUE ?
				 (int64_t)(si.ssi_int & DIST_LEAVE_MS_MASK) :
				 NOTICE_MS);
		} else if (si.ssi_signo != SIGTERM) {
			p->leaving = true;
			stop_program(p, 0);
		}
	}
}

/* ---- the loop ---- */

static json_t *hello_req(const struct pn *p)
{
	return json_pack("{s:s, s:i, s:s, s:i}", "op", "hello", "pid",
			 (int)getpid(), "addr", p->addr, "port", p->port);
}

static bool hello(struct pn *p)
{
	uint64_t give_up = now_us() + PROG_NODE_LOST_MS * 1000ull;

	while (now_us() < give_up) {
		json_t *r = ask(p, hello_req(p));

		if (r) {
			bool ok = take_hello(p, r);

			json_decref(r);
			if (!ok)
				log_err("program-node: the daemon's hello "
					"lacks what a program needs");
			return ok;
		}
		usleep(200 * 1000);
	}
	log_err("program-node: no answer from %s", p->o->hub);
	return false;
}

static void loop(struct pn *p)
{
	uint64_t next_beat = 0;

	for (;;) {
		struct pollfd fds[3] = {
			{ .fd = p->sfd, .events = POLLIN },
			{ .fd = p->out_fd, .events = POLLIN },
			{ .fd = p->err_fd, .events = POLLIN },
		};
		uint64_t t = now_us();

		poll_imds(p);
		if (p->rehello) {
			/* what to run is the job's, as before: only the new
			 * daemon learns of this node */
			p->rehello = false;
			json_decref(ask(p, hello_req(p)));
		}
		if (t >= next_beat) {
			if (next_beat && t - next_beat > 2000000)
				log_warn("program-node %" PRIu64 ": a beat %"
					 PRIu64 " ms late", p->o->inst,
					 (t - next_beat) / 1000);
			beat(p);
			next_beat = now_us() + BEAT_MS * 1000;
			if (next_beat - t > 2000000)
				log_warn("program-node %" PRIu64 ": a beat took "
					 "%" PRIu64 " ms", p->o->inst,
					 (next_beat - t) / 1000 - BEAT_MS);
		}
		if (p->kill_at_us && t >= p->kill_at_us && p->pid > 0) {
			kill_group(p, SIGKILL);
			(void)kill(p->pid, SIGKILL);
			p->kill_at_us = UINT64_MAX;
		}
		if (p->pid <= 0 && !p->exit_info && p->leaving)
			return;
		/* the program is gone and will not start again (the node
		 * leaves, or the job is over): its folder goes now, before
		 * the world ends the node, which may be before the next beat
		 * (a notice at 1200x is 100 ms) */
		if (p->pid <= 0 && (p->leaving || p->stop_asked) &&
		    !p->n_pending && p->dir[0]) {
			if (p->prog_fd >= 0)
				close(p->prog_fd);
			p->prog_fd = -1;
			remove_dir(p);
		}
		if (now_us() - p->last_ok_us > PROG_NODE_LOST_MS * 1000ull) {
			log_err("program-node %" PRIu64 ": the daemon has not "
				"answered for %d s; stopping", p->o->inst,
				PROG_NODE_LOST_MS / 1000);
			return;
		}
		if (poll(fds, 3, 50) > 0) {
			if (fds[0].revents)
				on_signal(p);
			if (p->out_fd >= 0 && fds[1].revents)
				(void)drain_out(p, &p->out_fd, false);
			if (p->err_fd >= 0 && fds[2].revents)
				(void)drain_out(p, &p->err_fd, true);
		}
	}
}

/* Its address and first port, from --listen (tcp://HOST:PORT); this
 * host's loopback and no port of its own for ipc://. */
static void own_address(struct pn *p)
{
	const char *l = p->o->listen, *c;

	snprintf(p->addr, sizeof p->addr, "127.0.0.1");
	if (!l || strncmp(l, "tcp://", 6) || !(c = strrchr(l + 6, ':')))
		return;
	if ((size_t)(c - (l + 6)) < sizeof p->addr) {
		char *end;
		long port = strtol(c + 1, &end, 10);

		snprintf(p->addr, sizeof p->addr, "%.*s", (int)(c - (l + 6)),
			 l + 6);
		p->port = !*end && port > 0 && port < 65535 ? (int)port : 0;
	}
}

/* On an instance, the rule that keeps the program's user off the
 * instance metadata (prog_fence.h); a fence that does not hold keeps the
 * program from running (the reason is its start's failure, in the job's
 * status). */
static void fence(struct pn *p)
{
	char why[sizeof p->fence_why];

	if (!p->o->imds)
		return;
	if (prog_imds_fence(&p->fence, getenv("AWS_EC2_METADATA_SERVICE_"
					       "ENDPOINT"), p->uid, p->gid,
			    why, sizeof why)) {
		log_info("program-node %" PRIu64 ": uid %ld is kept off the "
			 "instance metadata at %s", p->o->inst, (long)p->uid,
			 p->fence.host);
		return;
	}
	snprintf(p->fence_why, sizeof p->fence_why, "program-node: the "
		 "program was not started: %.340s", why);
	log_err("program-node %" PRIu64 ": %s", p->o->inst, p->fence_why);
}

int prog_node_run(const struct prog_node_opts *o)
{
	struct pn p = { .o = o, .sock = -1, .out_fd = -1, .err_fd = -1,
			.log_fd = 2, .prog_fd = -1, .cg = { .procs_fd = -1 } };
	struct px_error err = {0};
	sigset_t set;
	int rc = 1;

	if (pchan_key_from_job(o->key, o->key_len, &p.key, &err) != PX_OK ||
	    RAND_bytes((uint8_t *)&p.session, sizeof p.session) != 1) {
		log_err("program-node: %s", err.msg[0] ? err.msg :
			"no random session");
		return 1;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	p.sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	p.lines = json_array();
	if (o->log)
		p.log_fd = open(o->log, O_WRONLY | O_CREAT | O_APPEND |
				O_CLOEXEC, 0600);
	if (p.sfd < 0 || !p.lines || p.log_fd < 0 || !sock_open(&p)) {
		log_err("program-node: cannot start: %s", strerror(errno));
		return 1;
	}
	p.last_ok_us = now_us();
	own_address(&p);
	if (o->imds && imds_client_new(NULL, IMDS_TIMEOUT_US, &p.imds, &err) !=
	    PX_OK)
		log_warn("program-node: no instance metadata: %s (its notices "
			 "are not read)", err.msg);
	if (hello(&p) && make_dir(&p)) {
		log_info("program-node %" PRIu64 ": job %" PRId64 ", in %s, as "
			 "uid %ld", o->inst, p.job, p.dir, (long)p.uid);
		fence(&p);
		loop(&p);
		rc = 0;
	} else if (p.argv) {
		log_err("program-node %" PRIu64 ": its folder could not be "
			"made: %s", o->inst, strerror(errno));
	}
	if (p.pid > 0) {
		kill_group(&p, SIGKILL);
		(void)waitpid(p.pid, NULL, 0);
	}
	prog_cg_remove(&p.cg);
	prog_imds_unfence(&p.fence);
	remove_dir(&p);
	strv_free(p.argv);
	strv_free(p.env);
	json_decref(p.lines);
	json_decref(p.run);
	json_decref(p.exit_info);
	imds_client_free(p.imds);
	free(p.fwd);
	if (p.sock >= 0)
		nn_close(p.sock);
	return rc;
}
