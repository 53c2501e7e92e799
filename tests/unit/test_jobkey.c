/* test_jobkey.c -- a job's key in its job directory (agent/jobkey.c over
 * common/keyfile.c): made once with mode 0600 and read back the same
 * after a "restart"; every file that is not exactly such a key file is
 * refused, naming its path and never the key. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../agent/jobkey.h"
#include "../../common/keyfile.h"

static char dir[64], path[128];

static void setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/px_jobkey_XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/key", dir);
}

static void teardown(void)
{
	unlink(path);
	rmdir(dir);
}

TestSuite(jobkey, .init = setup, .fini = teardown, .timeout = 10);

static void hex_of(const uint8_t key[JOBKEY_LEN], char out[65])
{
	for (int i = 0; i < JOBKEY_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", key[i]);
}

static void write_raw(const char *text, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, len), (ssize_t)len);
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
}

#define GOOD_HEX "0123456789abcdef0123456789abcdef" \
		 "fedcba9876543210fedcba9876543210"

/* Refused: PX_EINVAL, the message names the path and what is wrong, and
 * holds no key. */
static void refused(const char *what, const char *key_text)
{
	struct px_error err = {0};
	uint8_t key[JOBKEY_LEN];

	memset(key, 0x5a, sizeof key);
	cr_assert_eq(jobkey_load_or_create(dir, key, &err), PX_EINVAL,
		     "%s: %s", what, err.msg);
	cr_assert(strstr(err.msg, path), "%s: '%s' names no path", what,
		  err.msg);
	if (key_text) {
		cr_assert_null(strstr(err.msg, key_text), "%s", err.msg);
		cr_assert_null(strstr(err.msg, "0123456789"), "%s", err.msg);
	}
	for (int i = 0; i < JOBKEY_LEN; i++)
		cr_assert_eq(key[i], 0x5a, "%s: key written", what);
}

Test(jobkey, made_once_then_read_back)
{
	uint8_t a[JOBKEY_LEN], b[JOBKEY_LEN], zero[JOBKEY_LEN] = {0};
	struct px_error err = {0};
	char text[80], hex[65];
	struct stat st;
	int fd;
	ssize_t n;

	cr_assert_eq(jobkey_load_or_create(dir, a, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_neq(memcmp(a, zero, sizeof a), 0);
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert(S_ISREG(st.st_mode));
	cr_assert_eq(st.st_mode & 07777, 0600);
	cr_assert_eq(st.st_uid, geteuid());
	/* the file: the key in lower-case hex and a newline, nothing else */
	fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0);
	n = read(fd, text, sizeof text);
	close(fd);
	cr_assert_eq(n, 65);
	hex_of(a, hex);
	cr_assert_eq(memcmp(text, hex, 64), 0);
	cr_assert_eq(text[64], '\n');
	/* a restarted daemon reads the same key */
	cr_assert_eq(jobkey_load_or_create(dir, b, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(memcmp(a, b, sizeof a), 0);
	/* no temporary file is left beside it */
	{
		char cmd[200];

		snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) -eq 1",
			 dir);
		cr_assert_eq(system(cmd), 0);
	}
	/* removed at the job's end: the next one is a new key */
	jobkey_remove(dir);
	cr_assert_neq(access(path, F_OK), 0);
	jobkey_remove(dir); /* quiet when gone */
	cr_assert_eq(jobkey_load_or_create(dir, b, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_neq(memcmp(a, b, sizeof a), 0);
}

/* A key file written by hand the same way is read (upper case too). */
Test(jobkey, a_good_file_is_read)
{
	uint8_t key[JOBKEY_LEN];
	struct px_error err = {0};

	write_raw(GOOD_HEX "\n", 65, 0600);
	cr_assert_eq(jobkey_load_or_create(dir, key, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(key[0], 0x01);
	cr_assert_eq(key[31], 0x10);
	write_raw("ABCDEF6789ABCDEF0123456789ABCDEF"
		  "FEDCBA9876543210FEDCBA9876543210", 64, 0600);
	cr_assert_eq(jobkey_load_or_create(dir, key, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(key[0], 0xab);
}

Test(jobkey, a_0644_file_is_refused)
{
	struct px_error err = {0};
	uint8_t key[JOBKEY_LEN];

	write_raw(GOOD_HEX "\n", 65, 0644);
	refused("0644", GOOD_HEX);
	cr_assert_eq(jobkey_load_or_create(dir, key, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "mode 0644"), "%s", err.msg);
	/* 0400 is the trainer's choice, not the daemon's */
	write_raw(GOOD_HEX "\n", 65, 0400);
	refused("0400", GOOD_HEX);
	/* and the refused file is left as it was, never replaced */
	{
		struct stat st;

		cr_assert_eq(stat(path, &st), 0);
		cr_assert_eq(st.st_mode & 07777, 0400);
	}
	chmod(path, 0600);
}

Test(jobkey, a_symlink_is_refused)
{
	char target[160];
	struct px_error err = {0};
	uint8_t key[JOBKEY_LEN];

	/* even to a good key file of ours */
	snprintf(target, sizeof target, "%s/real", dir);
	{
		int fd = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		cr_assert_geq(fd, 0);
		cr_assert_eq(write(fd, GOOD_HEX "\n", 65), 65);
		close(fd);
	}
	cr_assert_eq(symlink(target, path), 0);
	refused("symlink", GOOD_HEX);
	cr_assert_eq(jobkey_load_or_create(dir, key, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "symbolic link"), "%s", err.msg);
	/* a dangling one is refused too, not written through */
	unlink(target);
	refused("dangling symlink", NULL);
	cr_assert_neq(access(target, F_OK), 0, "written through the link");
}

/* A FIFO with no writer: an open for reading would block forever; it is
 * refused at once (the suite's timeout would end a blocked test). */
Test(jobkey, a_fifo_is_refused_without_blocking)
{
	struct px_error err = {0};
	uint8_t key[JOBKEY_LEN];

	cr_assert_eq(mkfifo(path, 0600), 0);
	refused("fifo", NULL);
	cr_assert_eq(jobkey_load_or_create(dir, key, &err), PX_EINVAL);
	cr_assert(strstr(err.msg, "a FIFO"), "%s", err.msg);
}

Test(jobkey, bad_contents_are_refused)
{
	static const struct {
		const char *text;
		const char *says;
	} bad[] = {
		{"", "0 bytes"},
		{GOOD_HEX + 2, "62 bytes"},
		{GOOD_HEX "\n\n", "over 65 bytes"},
		{GOOD_HEX "0", "65 bytes"},
		{GOOD_HEX "00000000000000000000", "over 65 bytes"},
		{"0g23456789abcdef0123456789abcdef"
		 "fedcba9876543210fedcba9876543210",
		 "not a hex digit at offset 1"},
		{" 123456789abcdef0123456789abcdef"
		 "fedcba9876543210fedcba987654321\n",
		 "not a hex digit at offset 0"},
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct px_error err = {0};
		uint8_t key[JOBKEY_LEN];

		write_raw(bad[i].text, strlen(bad[i].text), 0600);
		refused(bad[i].text, GOOD_HEX + 8);
		jobkey_load_or_create(dir, key, &err);
		cr_assert(strstr(err.msg, bad[i].says), "%zu: '%s'", i,
			  err.msg);
	}
}

Test(jobkey, another_owner_is_refused)
{
	struct px_error err = {0};
	uint8_t key[JOBKEY_LEN];

	/* only root can give a file away */
	if (geteuid() != 0)
		cr_skip_test("needs root to chown");
	write_raw(GOOD_HEX "\n", 65, 0600);
	cr_assert_eq(chown(path, 4242, 4242), 0);
	refused("other owner", GOOD_HEX);
	jobkey_load_or_create(dir, key, &err);
	cr_assert(strstr(err.msg, "owned by uid 4242"), "%s", err.msg);
}

Test(jobkey, a_missing_folder_is_an_error)
{
	struct px_error err = {0};
	uint8_t key[JOBKEY_LEN];

	cr_assert_eq(jobkey_load_or_create("/nonexistent/px/7", key, &err),
		     PX_ENOENT);
	cr_assert(strstr(err.msg, "/nonexistent/px/7"), "%s", err.msg);
}

/* The shared reader as the trainer uses it: 0400 allowed there. */
Test(jobkey, keyfile_read_allows_0400_when_asked)
{
	struct px_error err = {0};
	uint8_t key[PX_KEYFILE_KEY_LEN];

	write_raw(GOOD_HEX, 64, 0400);
	cr_assert_eq(px_keyfile_read(path, true, key, &err), PX_OK, "%s",
		     err.msg);
	cr_assert_eq(px_keyfile_read(path, false, key, &err), PX_EINVAL);
	chmod(path, 0600);
	cr_assert_eq(px_keyfile_write(path, key, &err), PX_EEXIST,
		     "never replaced");
}
