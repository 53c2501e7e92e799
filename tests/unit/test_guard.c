/* test_guard.c -- px_open_input under a guard (px.h): a path resolved
 * once, no /proc magic link, never one of the daemon's own files (by
 * device and inode, so a hard link or a folder's file too), pinned files
 * read as they were pinned, and no POSIX lock of the process dropped by
 * anything a submitter names. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/px.h"

static char dir[] = "/tmp/px_guardtest_XXXXXX";

static void setup(void)
{
	strcpy(dir, "/tmp/px_guardtest_XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	px_own_clear();
}

static void teardown(void)
{
	char cmd[300];

	px_guard_set(NULL);
	px_own_clear();
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(guard, .init = setup, .fini = teardown);

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

/* What px_open_input of path reads under g: its first line, or the error
 * (err). */
static int first(const struct px_guard *g, const char *path, char *buf,
		 size_t len, struct px_error *err)
{
	int fd;
	ssize_t n;

	px_guard_set(g);
	fd = px_open_input(path, err);
	px_guard_set(NULL);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return 0;
}

Test(guard, magic_links_are_refused_under_a_guard_only)
{
	struct px_guard g = { .ngroups = -1 };
	char f[300], p[400], buf[64];
	struct px_error e = {0};
	int fd;

	snprintf(f, sizeof f, "%s/a", dir);
	put(f, "hello\n");
	fd = open(f, O_RDONLY);
	cr_assert_geq(fd, 0);
	{
		const char *const fmt[] = { "/proc/self/fd/%d", "/dev/fd/%d",
					    "/proc/%d/fd/%d" };

		for (int i = 0; i < 3; i++) {
			if (i == 2)
				snprintf(p, sizeof p, fmt[i], (int)getpid(),
					 fd);
			else
				snprintf(p, sizeof p, fmt[i], fd);
			cr_assert_eq(first(&g, p, buf, sizeof buf, &e), -1,
				     "%s opened", p);
			cr_assert_eq(e.code, PX_EINVAL);
			cr_assert(strstr(e.msg, "a link into a process's"),
				  "%s", e.msg);
			/* without a guard: the program's own business */
			cr_assert_eq(first(NULL, p, buf, sizeof buf, &e), 0);
			cr_assert_str_eq(buf, "hello\n");
		}
	}
	snprintf(p, sizeof p, "/proc/self/root%s", f);
	cr_assert_eq(first(&g, p, buf, sizeof buf, &e), -1);
	cr_assert(strstr(e.msg, "a link into a process's"), "%s", e.msg);
	/* a plain symlink is a file's other name, and is followed */
	snprintf(p, sizeof p, "%s/sym", dir);
	cr_assert_eq(symlink(f, p), 0);
	cr_assert_eq(first(&g, p, buf, sizeof buf, &e), 0, "%s", e.msg);
	cr_assert_str_eq(buf, "hello\n");
	close(fd);
}

Test(guard, the_daemons_own_files_by_any_name)
{
	struct px_guard g = { .ngroups = -1 };
	char db[300], wal[300], jobs[300], in[300], hl[300], sym[300],
	     buf[64];
	struct px_error e = {0};

	snprintf(db, sizeof db, "%s/p.db", dir);
	snprintf(wal, sizeof wal, "%s/p.db-wal", dir);
	snprintf(jobs, sizeof jobs, "%s/p.db.jobs", dir);
	snprintf(in, sizeof in, "%s/p.db.jobs/1", dir);
	put(db, "db\n");
	cr_assert_eq(mkdir(jobs, 0700), 0);
	cr_assert_eq(mkdir(in, 0700), 0);
	snprintf(in, sizeof in, "%s/p.db.jobs/1/key", dir);
	put(in, "key\n");
	px_own_add(db, false);
	px_own_add(wal, false);       /* made later: counts once it is */
	px_own_add(jobs, true);
	snprintf(hl, sizeof hl, "%s/hard", dir);
	cr_assert_eq(link(db, hl), 0);
	snprintf(sym, sizeof sym, "%s/sym", dir);
	cr_assert_eq(symlink(wal, sym), 0);
	put(wal, "wal\n");
	{
		const char *const names[] = { db, hl, sym, in };

		for (int i = 0; i < 4; i++) {
			cr_assert_eq(first(&g, names[i], buf, sizeof buf, &e),
				     -1, "%s opened", names[i]);
			cr_assert(strstr(e.msg, "one of the daemon's own"),
				  "%s: %s", names[i], e.msg);
		}
	}
	/* the daemon reading its own copies may */
	g.own_ok = true;
	cr_assert_eq(first(&g, in, buf, sizeof buf, &e), 0, "%s", e.msg);
	cr_assert_str_eq(buf, "key\n");
	/* a file beside them is no daemon's */
	g.own_ok = false;
	snprintf(hl, sizeof hl, "%s/p.db.other", dir);
	put(hl, "mine\n");
	cr_assert_eq(first(&g, hl, buf, sizeof buf, &e), 0, "%s", e.msg);
}

Test(guard, a_pinned_file_is_read_as_it_was_pinned)
{
	struct px_guard g = { .ngroups = -1 };
	struct px_pin pin;
	char f[300], other[300], tmp[300], buf[64];
	struct px_error e = {0};

	snprintf(f, sizeof f, "%s/data", dir);
	snprintf(other, sizeof other, "%s/other", dir);
	snprintf(tmp, sizeof tmp, "%s/swap", dir);
	put(f, "submitted\n");
	put(other, "swapped in\n");
	px_guard_set(&g);
	pin.path = f;
	pin.fd = px_open_input(f, &e);
	px_guard_set(NULL);
	cr_assert_geq(pin.fd, 0, "%s", e.msg);
	/* the name now names another file */
	cr_assert_eq(symlink(other, tmp), 0);
	cr_assert_eq(rename(tmp, f), 0);
	g.pins = &pin;
	g.npins = 1;
	for (int i = 0; i < 2; i++) {   /* each open its own offset */
		cr_assert_eq(first(&g, f, buf, sizeof buf, &e), 0, "%s",
			     e.msg);
		cr_assert_str_eq(buf, "submitted\n");
	}
	g.npins = 0;
	cr_assert_eq(first(&g, f, buf, sizeof buf, &e), 0);
	cr_assert_str_eq(buf, "swapped in\n");
	close(pin.fd);
}

/* Whether another process sees a write lock on fd's file (this one's). */
static bool locked_elsewhere(const char *path)
{
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int fd = open(path, O_RDWR);

		_exit(fd >= 0 && fcntl(fd, F_GETLK, &l) == 0 &&
		      l.l_type != F_UNLCK ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* SQLite's locks are POSIX locks: the close of ANY descriptor of the
 * file drops them.  Nothing a submitter names may make the process open
 * (and so close) its database: the lock holds after every attempt. */
Test(guard, no_posix_lock_is_dropped_by_what_a_submitter_names)
{
	struct px_guard g = { .ngroups = -1 };
	struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char db[300], hl[300], p[300], buf[64];
	struct px_error e = {0};
	int fd;

	snprintf(db, sizeof db, "%s/p.db", dir);
	put(db, "db\n");
	fd = open(db, O_RDWR);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fcntl(fd, F_SETLK, &l), 0);
	cr_assert(locked_elsewhere(db));
	px_own_add(db, false);
	snprintf(hl, sizeof hl, "%s/hard", dir);
	cr_assert_eq(link(db, hl), 0);
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	cr_assert_eq(first(&g, p, buf, sizeof buf, &e), -1);
	cr_assert_eq(first(&g, db, buf, sizeof buf, &e), -1);
	cr_assert_eq(first(&g, hl, buf, sizeof buf, &e), -1);
	cr_assert(locked_elsewhere(db), "a lock was dropped");
	/* (what the guard prevents: a plain open and close drops it) */
	close(open(hl, O_RDONLY));
	cr_assert(!locked_elsewhere(db));
	close(fd);
}

Test(guard, a_submitter_reads_only_what_it_may)
{
	struct px_guard g = { .as_user = true, .uid = 65534, .gid = 65534,
			      .ngroups = 0 };
	char f[300], sym[300], buf[64];
	struct px_error e = {0};

	if (geteuid() != 0)
		cr_skip_test("needs root to act as another user");
	cr_assert_eq(chmod(dir, 0755), 0);
	snprintf(f, sizeof f, "%s/secret", dir);
	put(f, "SECRET\n");
	cr_assert_eq(chmod(f, 0600), 0);
	snprintf(sym, sizeof sym, "%s/mine", dir);
	cr_assert_eq(symlink(f, sym), 0);
	cr_assert_eq(first(&g, sym, buf, sizeof buf, &e), -1);
	cr_assert(strstr(e.msg, "ermission denied") &&
		  !strstr(e.msg, "SECRET\n"), "%s", e.msg);
	cr_assert_eq(chmod(f, 0644), 0);
	cr_assert_eq(first(&g, sym, buf, sizeof buf, &e), 0, "%s", e.msg);
	cr_assert_str_eq(buf, "SECRET\n");
}
