/* test_px.c -- money/time parsing, error helpers, bounded file reads. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/px.h"

static int64_t usd(const char *s)
{
	int64_t v = -1;
	cr_assert_eq(px_parse_usd(s, strlen(s), &v), PX_OK, "parse '%s'", s);
	return v;
}

static void usd_bad(const char *s)
{
	int64_t v = 42;
	cr_assert_eq(px_parse_usd(s, strlen(s), &v), PX_EINVAL,
		     "'%s' accepted", s);
	cr_assert_eq(v, 42, "'%s' clobbered the result", s);
}

Test(px, parse_usd)
{
	cr_assert_eq(usd("0.230000"), 230000);
	cr_assert_eq(usd("21.000000"), 21000000);
	cr_assert_eq(usd("1.5"), 1500000);
	cr_assert_eq(usd("7"), 7000000);
	cr_assert_eq(usd(".25"), 250000);
	cr_assert_eq(usd("0.0071000000"), 7100);
	cr_assert_eq(usd("0"), 0);
	usd_bad("");
	usd_bad("-0.1");
	usd_bad("+1");
	usd_bad("1e3");
	usd_bad("abc");
	usd_bad("1.2.3");
	usd_bad(".");
	usd_bad("0.0000001");
	usd_bad("99999999999999");
	/* the bound, 10^9 USD, holds to the last digit */
	cr_assert_eq(usd("1000000000"), INT64_C(1000000000000000));
	cr_assert_eq(usd("1000000000.000000"), INT64_C(1000000000000000));
	cr_assert_eq(usd("999999999.999999"), INT64_C(999999999999999));
	usd_bad("1000000000.000001");
	usd_bad("1000000000.5");
	usd_bad("1000000001");
	usd_bad("1 ");
}

Test(px, term_safe)
{
	char b[64];

	cr_assert_str_eq(px_term_safe("c4.xlarge", b, sizeof b), "c4.xlarge");
	cr_assert_str_eq(px_term_safe("a\tb\nc\rd\\e", b, sizeof b),
			 "a\\tb\\nc\\rd\\\\e");
	cr_assert_str_eq(px_term_safe("x\x1b[31my\x7f", b, sizeof b),
			 "x\\x1b[31my\\x7f");
	/* UTF-8 passes, its C1 controls (U+009B, a CSI) do not */
	cr_assert_str_eq(px_term_safe("\xc3\xa9\xc2\x9b", b, sizeof b),
			 "\xc3\xa9\\x9b");
	/* cut whole: never half an escape */
	cr_assert_str_eq(px_term_safe("ab\x1b", b, 5), "ab");
	cr_assert_eq(px_ctrl_at("abc", 3), -1);
	cr_assert_eq(px_ctrl_at("ab\tc", 4), 2);
	cr_assert_eq(px_ctrl_at("a\xc2\x85", 3), 1);
	cr_assert_eq(px_ctrl_at("\xc3\xa9", 2), -1);
}

Test(px, format_usd)
{
	char b[32];
	cr_assert_str_eq(px_format_usd(230000, b, sizeof b), "0.230000");
	cr_assert_str_eq(px_format_usd(-1500000, b, sizeof b), "-1.500000");
	cr_assert_str_eq(px_format_usd(INT64_MIN, b, sizeof b),
			 "-9223372036854.775808");
}

static int64_t tm(const char *s)
{
	int64_t v = -1;
	cr_assert_eq(px_parse_time(s, strlen(s), &v), PX_OK, "parse '%s'", s);
	return v;
}

static void tm_bad(const char *s)
{
	int64_t v = 42;
	cr_assert_eq(px_parse_time(s, strlen(s), &v), PX_EINVAL,
		     "'%s' accepted", s);
	cr_assert_eq(v, 42);
}

Test(px, parse_time)
{
	/* date -u -d 2016-02-24T21:10:53Z +%s */
	cr_assert_eq(tm("2016-02-24T21:10:53.000Z"), 1456348253);
	cr_assert_eq(tm("2016-02-24T21:10:53Z"), 1456348253);
	cr_assert_eq(tm("2016-02-24T21:10:53"), 1456348253);
	cr_assert_eq(tm("2016-02-24 21:10:53"), 1456348253);
	cr_assert_eq(tm("2016-02-24T23:10:53+02:00"), 1456348253);
	cr_assert_eq(tm("2016-02-24T20:10:53-01:00"), 1456348253);
	cr_assert_eq(tm("2016-02-24"), 1456272000);
	cr_assert_eq(tm("2016-02-29"), 1456704000);
	cr_assert_eq(tm("1970-01-01T00:00:00Z"), 0);
	cr_assert_eq(tm("@1456348253"), 1456348253);
	cr_assert_eq(tm("1456348253"), 1456348253);
	tm_bad("");
	tm_bad("2015-02-29");
	tm_bad("2016-13-01");
	tm_bad("2016-00-10");
	tm_bad("2016-02-24T25:00:00Z");
	tm_bad("2016-02-24T21:10:53.Z");
	tm_bad("2016-02-24T21:10:53.000ZZ");
	tm_bad("2016-02-24T21:10:53+0200");
	tm_bad("yesterday");
	tm_bad("2016/02/24");
	tm_bad("@");
	tm_bad("@12x");
}

Test(px, format_time)
{
	char b[32];
	cr_assert_str_eq(px_format_time(1456348253, b, sizeof b),
			 "2016-02-24T21:10:53Z");
}

Test(px, errors)
{
	struct px_error e;
	px_error_clear(&e);
	cr_assert_eq(px_errorf(&e, PX_EINVAL, "field '%s'", "x"), PX_EINVAL);
	px_error_prefix(&e, "%s: ", "f.json");
	cr_assert_str_eq(e.msg, "f.json: field 'x'");
	cr_assert_eq(e.code, PX_EINVAL);
	cr_assert_eq(px_errorf(NULL, PX_EIO, "x"), PX_EIO);
	cr_assert_str_eq(px_strerror(PX_ENOMEM), "out of memory");
	cr_assert_str_eq(px_strerror(PX_ESYS | 2), "No such file or directory");
}

Test(px, read_file)
{
	char dir[] = "/tmp/pxread.XXXXXX", path[64];
	char *buf = NULL;
	size_t len = 0;
	struct px_error e = {0};
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("0123456789", f);
	fclose(f);
	cr_assert_eq(px_read_file(path, 10, &buf, &len, &e), PX_OK, "%s",
		     e.msg);
	cr_assert_eq(len, 10);
	cr_assert_str_eq(buf, "0123456789");
	free(buf);
	buf = NULL;
	cr_assert_eq(px_read_file(path, 9, &buf, &len, &e), PX_ETOOBIG);
	cr_assert(strstr(e.msg, path) && strstr(e.msg, "limit of 9"), "%s",
		  e.msg);
	cr_assert_null(buf);
	cr_assert_eq(px_read_file(dir, 100, &buf, &len, &e), PX_ESYS | EISDIR);
	snprintf(path, sizeof(path), "%s/none", dir);
	cr_assert_eq(px_read_file(path, 100, &buf, &len, &e), PX_ENOENT);
	cr_assert(strstr(e.msg, "/none"), "%s", e.msg);
	/* a pipe has no size up front: the bound holds while reading */
	cr_assert_eq(px_read_file("/dev/zero", 4096, &buf, &len, &e),
		     PX_ETOOBIG);
	snprintf(path, sizeof(path), "%s/f", dir);
	unlink(path);
	rmdir(dir);
}

/* Files read for someone else (px_guard): regular files only, opened
 * without blocking, bounded, with that user's rights. */
static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
	cr_assert_eq(chmod(path, mode), 0);
}

Test(px, guard_refuses_what_never_opens_and_what_is_not_theirs,
     .timeout = 20)
{
	char dir[] = "/tmp/px_guard_XXXXXX", fifo[300], secret[300],
	     open_file[300], big[300];
	struct px_guard g = { .as_user = true, .uid = 65534, .gid = 65534,
			      .ngroups = 0, .max_bytes = 64 };
	struct px_error e = {0};
	char *buf = NULL;
	size_t len;
	int fd;

	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chmod(dir, 0755), 0);
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	snprintf(secret, sizeof secret, "%s/secret", dir);
	snprintf(open_file, sizeof open_file, "%s/open", dir);
	snprintf(big, sizeof big, "%s/big", dir);
	cr_assert_eq(mkfifo(fifo, 0666), 0);
	write_file(secret, "hunter2 the first word", 0600);
	write_file(open_file, "{\"a\": 1}", 0644);
	write_file(big, "0123456789012345678901234567890123456789"
		   "0123456789012345678901234567890123456789", 0644);
	px_guard_set(&g);
	/* a FIFO nobody writes: refused at once (a plain open blocks) */
	cr_assert_eq(px_read_file(fifo, 100, &buf, &len, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, fifo) && strstr(e.msg, "a FIFO"), "%s",
		  e.msg);
	cr_assert_eq(px_open_input(dir, &e), -1);
	cr_assert(strstr(e.msg, "a directory, not a regular file"), "%s",
		  e.msg);
	cr_assert_eq(px_open_input("/dev/null", &e), -1);
	cr_assert(strstr(e.msg, "character device"), "%s", e.msg);
	/* another user's private file: refused, nothing of it read */
	if (geteuid() == 0) {
		cr_assert_eq(px_read_file(secret, 100, &buf, &len, &e),
			     PX_EINVAL);
		cr_assert(strstr(e.msg, "ermission denied"), "%s", e.msg);
		cr_assert_null(strstr(e.msg, "hunter2"), "%s", e.msg);
	}
	cr_assert_eq(px_read_file(open_file, 100, &buf, &len, &e), PX_OK,
		     "%s", e.msg);
	cr_assert_str_eq(buf, "{\"a\": 1}");
	free(buf);
	buf = NULL;
	/* the guard's bound holds under the caller's */
	cr_assert_eq(px_read_file(big, 1000, &buf, &len, &e), PX_ETOOBIG);
	cr_assert(strstr(e.msg, "limit of 64"), "%s", e.msg);
	/* a stopped guard: reads that check it end */
	cr_assert(!px_guard_expired());
	px_guard_stop(&g);
	cr_assert(px_guard_expired());
	px_guard_set(NULL);
	/* without a guard, files open as before */
	fd = px_open_input(big, &e);
	cr_assert_geq(fd, 0, "%s", e.msg);
	close(fd);
	/* a process that cannot take the user's identity (not root) checks
	 * the mode bits for that user instead */
	if (geteuid() == 0) {
		pid_t pid = fork();
		int st;

		cr_assert_geq(pid, 0);
		if (pid == 0) {
			struct px_guard u = { .as_user = true, .uid = 4242,
					      .gid = 4242, .ngroups = 0 };
			int ok = 1;

			if (chown(secret, 65534, 65534) ||
			    chmod(secret, 0640) || setgid(65534) ||
			    setuid(65534))
				_exit(2);
			px_guard_set(&u);
			/* we may read it; uid 4242 may not */
			ok &= px_open_input(secret, &e) < 0 &&
			      strstr(e.msg, "uid 4242 may not read") != NULL;
			u.gid = 65534; /* in the file's group: may */
			fd = px_open_input(secret, &e);
			ok &= fd >= 0;
			_exit(ok ? 0 : 1);
		}
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			  "mode check as a plain user: status %d", st);
	}
	unlink(fifo);
	unlink(secret);
	unlink(open_file);
	unlink(big);
	rmdir(dir);
}

/* The median the coordinator and proteusd judge worker speeds by. */
Test(px, median_f)
{
	float odd[3] = { 3, 1, 2 }, even[4] = { 4, 1, 3, 2 }, one[1] = { 7 };

	cr_assert_eq(px_median_f(odd, 3), 2.0f);
	cr_assert_eq(px_median_f(even, 4), 2.5f);
	cr_assert_eq(px_median_f(one, 1), 7.0f);
	cr_assert_eq(px_median_f(NULL, 0), 0.0f);
	cr_assert_eq(even[0], 1.0f, "sorted in place");
}

/* px_atomic: a file written whole or not at all.  A symlink at the path
 * is replaced by the rename, never written through; an abort, or a
 * commit that cannot rename, leaves what was there; the temporary file
 * is gone either way. */
Test(px, atomic_replaces_a_symlink_and_an_abort_keeps_the_file)
{
	char dir[] = "/tmp/px-atomic-XXXXXX", victim[64], path[64], sub[64];
	char *buf;
	mode_t um = umask(0);
	struct px_error e = {0};
	struct px_atomic a;
	struct stat st;
	size_t n;
	FILE *f;

	umask(um);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(victim, sizeof victim, "%s/victim", dir);
	snprintf(path, sizeof path, "%s/out", dir);
	f = fopen(victim, "w");
	cr_assert_not_null(f);
	fputs("keep", f);
	fclose(f);
	cr_assert_eq(symlink(victim, path), 0);
	cr_assert_eq(px_atomic_open(&a, path, 0644), 0, "%s", strerror(errno));
	cr_assert_eq(write(a.fd, "new", 3), 3);
	cr_assert_eq(px_atomic_commit(&a, path), 0, "%s", strerror(errno));
	cr_assert_eq(a.fd, -1);
	px_atomic_abort(&a);                     /* a no-op now */
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert(S_ISREG(st.st_mode));
	cr_assert_eq(st.st_mode & 0777, 0644 & ~um);
	cr_assert_eq(px_read_file(path, 64, &buf, &n, &e), PX_OK, "%s", e.msg);
	cr_assert_str_eq(buf, "new");
	free(buf);
	cr_assert_eq(px_read_file(victim, 64, &buf, &n, &e), PX_OK);
	cr_assert_str_eq(buf, "keep");
	free(buf);
	/* an abort: the file there stays, the temporary one goes */
	cr_assert_eq(px_atomic_open(&a, path, 0644), 0);
	cr_assert_eq(write(a.fd, "half", 4), 4);
	px_atomic_abort(&a);
	cr_assert_eq(px_read_file(path, 64, &buf, &n, &e), PX_OK);
	cr_assert_str_eq(buf, "new");
	free(buf);
	/* a commit onto a directory fails, nothing left behind */
	snprintf(sub, sizeof sub, "%s/sub", dir);
	cr_assert_eq(mkdir(sub, 0700), 0);
	cr_assert_eq(px_atomic_open(&a, sub, 0644), 0);
	cr_assert_eq(px_atomic_commit(&a, sub), -1);
	cr_assert_eq(a.fd, -1);
	px_atomic_abort(&a);
	cr_assert_eq(rmdir(sub), 0);
	cr_assert_eq(unlink(victim), 0);
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(rmdir(dir), 0, "something left in %s", dir);
}
