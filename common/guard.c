/* guard.c -- files opened for someone else (px.h, px_guard): with the
 * submitter's rights, the path resolved once and without /proc magic
 * links, never one of the daemon's own files, regular and bounded. */
#include "px.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- files opened for someone else (px_guard) ---- */

static _Thread_local const struct px_guard *guard;

void px_guard_set(const struct px_guard *g)
{
	guard = g;
}

const struct px_guard *px_guard_get(void)
{
	return guard;
}

bool px_guard_expired(void)
{
	for (const struct px_guard *g = guard; g; g = g->parent) {
		uint64_t d = __atomic_load_n(&g->deadline_us,
					     __ATOMIC_RELAXED);

		if (d && px_now_mono_us() > d)
			return true;
	}
	return false;
}

void px_guard_stop(struct px_guard *g)
{
	__atomic_store_n(&g->deadline_us, 1, __ATOMIC_RELAXED);
}

static const char *file_kind(mode_t m)
{
	return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" :
	       S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" :
	       S_ISDIR(m) ? "a directory" : "not a regular file";
}

/* Whether the guard's user may read a file of st by its mode bits (the
 * check where this process cannot take that user's identity). */
static bool user_may_read(const struct px_guard *g, const struct stat *st)
{
	bool in_group = st->st_gid == g->gid;

	if (g->uid == 0)
		return true;
	if (st->st_uid == g->uid)
		return st->st_mode & S_IRUSR;
	for (int i = 0; i < g->ngroups && !in_group; i++)
		in_group = st->st_gid == g->groups[i];
	return in_group ? st->st_mode & S_IRGRP : st->st_mode & S_IROTH;
}

/* The calling thread's file-system identity becomes g's user (raw
 * syscalls: glibc's setgroups would change every thread).  False when
 * this process may not (not root): nothing changed then. */
static bool become(const struct px_guard *g, gid_t *old_groups, int *n_old)
{
	gid_t gs[PX_GUARD_GROUPS_MAX];
	int n = g->ngroups > 0 ? g->ngroups : 0;

	if (geteuid() != 0)
		return false;
	*n_old = getgroups(PX_GUARD_GROUPS_MAX, old_groups);
	if (*n_old < 0)
		return false;
	for (int i = 0; i < n; i++)
		gs[i] = g->groups[i];
	if (syscall(SYS_setgroups, (size_t)n, gs) != 0)
		return false;
	(void)syscall(SYS_setfsgid, g->gid);
	(void)syscall(SYS_setfsuid, g->uid);
	return true;
}

static void unbecome(const gid_t *old_groups, int n_old)
{
	(void)syscall(SYS_setfsuid, 0);
	(void)syscall(SYS_setfsgid, getegid());
	(void)syscall(SYS_setgroups, (size_t)n_old, old_groups);
}

/* ---- the daemon's own files (px_own_add) ---- */

#define OWN_MAX 32
#define OWN_DEPTH 256            /* folders walked up from a file */

static struct own {
	char path[4096];
	bool dir;
} own[OWN_MAX];
static int n_own;
static pthread_mutex_t own_lock = PTHREAD_MUTEX_INITIALIZER;

void px_own_add(const char *path, bool dir)
{
	pthread_mutex_lock(&own_lock);
	for (int i = 0; i < n_own; i++)
		if (own[i].dir == dir && !strcmp(own[i].path, path))
			goto out;
	if (n_own < OWN_MAX && strlen(path) < sizeof own[0].path) {
		snprintf(own[n_own].path, sizeof own[0].path, "%s", path);
		own[n_own++].dir = dir;
	}
out:
	pthread_mutex_unlock(&own_lock);
}

void px_own_clear(void)
{
	pthread_mutex_lock(&own_lock);
	n_own = 0;
	pthread_mutex_unlock(&own_lock);
}

/* Whether st (of the file behind the O_PATH descriptor fd) is one of the
 * daemon's own files, or lies in one of its own folders: by device and
 * inode, so that a hard link, a bind mount or another name of the same
 * file is known.  The folders are walked up from the file's parent as
 * the kernel names it (/proc/self/fd), with the daemon's own rights. */
static bool is_own(int fd, const struct stat *st)
{
	struct stat ds[OWN_MAX];
	bool dirs[OWN_MAX], any_dir = false, hit = false;
	char link[64], where[4096];
	int n, pfd;
	ssize_t len;

	pthread_mutex_lock(&own_lock);
	n = n_own;
	for (int i = 0; i < n; i++) {
		dirs[i] = own[i].dir;
		if (stat(own[i].path, &ds[i]) != 0) {
			ds[i].st_ino = 0;
			continue;
		}
		any_dir |= dirs[i];
		if (!dirs[i] && ds[i].st_dev == st->st_dev &&
		    ds[i].st_ino == st->st_ino)
			hit = true;
	}
	pthread_mutex_unlock(&own_lock);
	if (hit || !any_dir)
		return hit;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	len = readlink(link, where, sizeof where - 1);
	if (len <= 0 || (size_t)len >= sizeof where - 1)
		return false;
	where[len] = '\0';
	{
		char *slash = strrchr(where, '/');

		if (!slash)
			return false;
		if (slash == where)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	pfd = open(where, O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (int depth = 0; pfd >= 0 && depth < OWN_DEPTH && !hit; depth++) {
		struct stat p;
		int up;

		if (fstat(pfd, &p) != 0)
			break;
		for (int i = 0; i < n && !hit; i++)
			hit = dirs[i] && ds[i].st_ino &&
			      ds[i].st_dev == p.st_dev &&
			      ds[i].st_ino == p.st_ino;
		up = openat(pfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up >= 0) {
			struct stat q;

			if (fstat(up, &q) == 0 && q.st_dev == p.st_dev &&
			    q.st_ino == p.st_ino) {    /* the root */
				close(up);
				up = -1;
			}
		}
		close(pfd);
		pfd = up;
	}
	if (pfd >= 0)
		close(pfd);
	return hit;
}

/* The path resolved once, for the thread's identity now, as an O_PATH
 * descriptor (closing one never drops a POSIX lock the process holds on
 * the file, as closing a descriptor opened for reading would: SQLite's),
 * refusing /proc magic links (/proc/PID/fd/N, .../root, .../cwd: the
 * daemon's own descriptors and folders) anywhere on the way.  -1 with
 * errno; ELOOP for a magic link (*magic set). */
static int resolve(const char *path, bool *magic)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);

	*magic = false;
	if (fd >= 0 || errno != ENOSYS) {
		if (fd < 0 && errno == ELOOP) {
			/* too many links, or a magic one: which? */
			int again = open(path, O_PATH | O_CLOEXEC);

			*magic = again >= 0;
			if (again >= 0)
				close(again);
			errno = ELOOP;
		}
		return fd;
	}
	/* a kernel before 5.6: no openat2; refuse the usual spellings */
	if (!strncmp(path, "/proc/", 6) || !strncmp(path, "/dev/fd/", 8) ||
	    !strncmp(path, "/dev/std", 8)) {
		*magic = true;
		errno = ELOOP;
		return -1;
	}
	return open(path, O_PATH | O_CLOEXEC);
}

/* A pinned file's own descriptor, opened again for reading (its own
 * offset, the very same file); -2 when path is not pinned. */
static int open_pinned(const struct px_guard *g, const char *path)
{
	char link[64];

	for (int i = 0; g && i < g->npins; i++)
		if (g->pins[i].fd >= 0 && !strcmp(g->pins[i].path, path)) {
			snprintf(link, sizeof link, "/proc/self/fd/%d",
				 g->pins[i].fd);
			return open(link, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		}
	return -2;
}

/* The file behind the O_PATH descriptor pfd (st), for g: refused (err
 * set, false) before a byte of it is read when it is not a regular file,
 * is one of the daemon's own, may not be read by g's user (where this
 * process could not take that user's identity) or is too big. */
static bool admit(const struct px_guard *g, bool as, int pfd,
		  const struct stat *st, const char *path,
		  struct px_error *err)
{
	/* what the submitter named wrong is bad input (exit 3 of the CLI) */
	if (!S_ISREG(st->st_mode))
		px_errorf(err, PX_EINVAL, "%s: %s, not a regular file", path,
			  file_kind(st->st_mode));
	else if (!g->own_ok && is_own(pfd, st))
		px_errorf(err, PX_EINVAL, "%s: one of the daemon's own files, "
			  "which no job may name", path);
	else if (g->as_user && !as && g->uid != geteuid() &&
		 !user_may_read(g, st))
		px_errorf(err, PX_EINVAL, "%s: %s (uid %u may not read it)",
			  path, strerror(EACCES), (unsigned)g->uid);
	else if (g->max_bytes && (uint64_t)st->st_size > g->max_bytes)
		px_errorf(err, PX_ETOOBIG, "%s: %lld bytes, over the limit of "
			  "%llu", path, (long long)st->st_size,
			  (unsigned long long)g->max_bytes);
	else
		return true;
	return false;
}

int px_open_input(const char *path, struct px_error *err)
{
	const struct px_guard *g = px_guard_get();
	gid_t old_groups[PX_GUARD_GROUPS_MAX];
	int n_old = 0, fd = -1, pfd, e = 0;
	bool as = false, magic;
	char link[64];
	struct stat st;

	if (!g) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			px_errorf(err, errno == ENOENT ? PX_ENOENT :
				  PX_ESYS | errno, "%s: %s", path,
				  strerror(errno));
		return fd;
	}
	fd = open_pinned(g, path);
	if (fd == -2) {
		if (g->as_user)
			as = become(g, old_groups, &n_old);
		pfd = resolve(path, &magic);
		e = errno;
		if (as)
			unbecome(old_groups, n_old);
		/* what it is, known with the daemon's own rights (its own
		 * files are found in folders the submitter cannot search) */
		if (pfd >= 0 && fstat(pfd, &st) != 0) {
			e = errno;
			close(pfd);
			pfd = -1;
		}
		if (pfd >= 0 && !admit(g, as, pfd, &st, path, err)) {
			close(pfd);
			return -1;
		}
		if (pfd < 0 && magic) {
			px_errorf(err, PX_EINVAL, "%s: a link into a process's "
				  "descriptors or folders (/proc/PID/fd, root, "
				  "cwd), not a file a job may name", path);
			return -1;
		}
		/* that very file opened for reading, with the submitter's
		 * rights: the permission is checked on the inode resolved */
		if (pfd >= 0) {
			snprintf(link, sizeof link, "/proc/self/fd/%d", pfd);
			/* never as the daemon what was resolved as the
			 * submitter */
			if (as && !become(g, old_groups, &n_old)) {
				close(pfd);
				px_errorf(err, PX_ESYS | EPERM, "%s: cannot "
					  "take the submitter's rights", path);
				return -1;
			}
			fd = open(link, O_RDONLY | O_CLOEXEC | O_NOCTTY |
				  O_NONBLOCK);
			e = errno;
			if (as)
				unbecome(old_groups, n_old);
			close(pfd);
		}
	} else if (fd < 0) {
		e = errno;
	}
	if (fd < 0) {
		/* what a submitter may not read is bad input too */
		px_errorf(err, e == ENOENT ? PX_ENOENT : e == EACCES ?
			  PX_EINVAL : PX_ESYS | e, "%s: %s%s", path,
			  strerror(e), as && e == EACCES ? " (for the submitter)"
			  : "");
		return -1;
	}
	/* the file read is the file checked (a pinned one: checked when it
	 * was pinned); its size again, as it is now */
	if (fstat(fd, &st) != 0) {
		e = errno;
		close(fd);
		px_errorf(err, PX_ESYS | e, "%s: stat: %s", path, strerror(e));
		return -1;
	}
	if (g->max_bytes && (uint64_t)st.st_size > g->max_bytes) {
		close(fd);
		px_errorf(err, PX_ETOOBIG, "%s: %lld bytes, over the limit of "
			  "%llu", path, (long long)st.st_size,
			  (unsigned long long)g->max_bytes);
		return -1;
	}
	/* a regular file: reads do not block anyway; plain reads from here */
	(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

enum px_err px_read_file(const char *path, size_t max, char **ret_buf,
			 size_t *ret_len, struct px_error *err)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0, cap;
	enum px_err rc = PX_OK;
	const struct px_guard *g = px_guard_get();
	int fd = px_open_input(path, err);

	if (fd < 0)
		return err ? err->code : PX_EIO;
	if (g && g->max_bytes && g->max_bytes < max)
		max = (size_t)g->max_bytes;
	if (fstat(fd, &st) != 0) {
		rc = px_errorf(err, PX_ESYS | errno, "%s: stat: %s", path,
			       strerror(errno));
		goto out_close;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = px_errorf(err, PX_ESYS | EISDIR, "%s: %s", path,
			       strerror(EISDIR));
		goto out_close;
	}
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max) {
		rc = px_errorf(err, PX_ETOOBIG, "%s: %lld bytes, over the "
			       "limit of %zu", path, (long long)st.st_size, max);
		goto out_close;
	}
	/* Read until EOF or one byte past the bound, whatever fstat said
	 * (the file may grow, or be a pipe). */
	cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 64 * 1024;
	if (cap > max + 1)
		cap = max + 1;
	for (;;) {
		ssize_t r;

		if (!buf || len == cap) {
			size_t ncap = buf ? 2 * cap : cap;
			char *nb;

			if (ncap > max + 1)
				ncap = max + 1;
			if (buf && ncap == cap)
				break; /* read max + 1 bytes: too big */
			nb = realloc(buf, ncap + 1);
			if (!nb) {
				rc = px_errorf(err, PX_ENOMEM, "%s: out of "
					       "memory", path);
				goto out_free;
			}
			buf = nb;
			cap = ncap;
		}
		r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = px_errorf(err, PX_ESYS | errno, "%s: read: %s",
				       path, strerror(errno));
			goto out_free;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (len > max) {
		rc = px_errorf(err, PX_ETOOBIG, "%s: over the limit of %zu "
			       "bytes", path, max);
		goto out_free;
	}
	buf[len] = '\0';
	*ret_buf = buf;
	*ret_len = len;
	buf = NULL;
out_free:
	free(buf);
out_close:
	close(fd);
	return rc;
}

