/* keyfile.c -- a 32-byte secret in a file of its own (see keyfile.h). */
#include "keyfile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t m)
{
	return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" :
	       S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" :
	       S_ISDIR(m) ? "a directory" : S_ISLNK(m) ? "a symbolic link" :
	       "not a regular file";
}

enum px_err px_keyfile_read(const char *path, bool allow_0400,
			    uint8_t key[PX_KEYFILE_KEY_LEN],
			    struct px_error *err)
{
	/* one byte more than the longest good file, to see a longer one */
	char buf[PX_KEYFILE_HEX_LEN + 2];
	uint8_t k[PX_KEYFILE_KEY_LEN];
	enum px_err r = PX_OK;
	struct stat st;
	size_t n = 0;
	mode_t mode;
	ssize_t got;
	int fd, e;

	/* O_NOFOLLOW: a symbolic link is refused, not followed (ELOOP);
	 * O_NONBLOCK: a FIFO opens at once, to be refused below */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK |
		  O_NOCTTY);
	if (fd < 0) {
		e = errno;
		if (e == ENOENT)
			return px_errorf(err, PX_ENOENT, "key file '%s': no "
					 "such file", path);
		if (e == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
			return px_errorf(err, PX_EINVAL, "key file '%s': a "
					 "symbolic link, not a regular file",
					 path);
		return px_errorf(err, PX_ESYS | e, "key file '%s': %s", path,
				 strerror(e));
	}
	if (fstat(fd, &st) != 0) {
		e = errno;
		r = px_errorf(err, PX_ESYS | e, "key file '%s': stat: %s",
			      path, strerror(e));
		goto out;
	}
	mode = st.st_mode & 07777;
	if (!S_ISREG(st.st_mode)) {
		r = px_errorf(err, PX_EINVAL, "key file '%s': %s, not a "
			      "regular file", path, kind_of(st.st_mode));
		goto out;
	}
	if (st.st_uid != geteuid()) {
		r = px_errorf(err, PX_EINVAL, "key file '%s': owned by uid "
			      "%u, not by us (uid %u)", path,
			      (unsigned)st.st_uid, (unsigned)geteuid());
		goto out;
	}
	if (mode != 0600 && !(allow_0400 && mode == 0400)) {
		r = px_errorf(err, PX_EINVAL, "key file '%s': mode %04o; it "
			      "must be 0600%s (readable by its owner only)",
			      path, (unsigned)mode, allow_0400 ? " or 0400" :
			      "");
		goto out;
	}
	while (n < sizeof buf) {
		got = read(fd, buf + n, sizeof buf - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			e = errno;
			r = px_errorf(err, PX_ESYS | e, "key file '%s': read: "
				      "%s", path, strerror(e));
			goto out;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	/* 64 hex digits, then nothing or one newline; the message says
	 * how long the file is, never what it holds */
	if (n < PX_KEYFILE_HEX_LEN || n > PX_KEYFILE_HEX_LEN + 1 ||
	    (n == PX_KEYFILE_HEX_LEN + 1 && buf[PX_KEYFILE_HEX_LEN] != '\n')) {
		r = px_errorf(err, PX_EINVAL, "key file '%s': %s%zu bytes; "
			      "it must hold %d hex digits and a newline",
			      path, n == sizeof buf ? "over " : "",
			      n == sizeof buf ? n - 1 : n,
			      PX_KEYFILE_HEX_LEN);
		goto out;
	}
	for (size_t i = 0; i < PX_KEYFILE_KEY_LEN; i++) {
		int hi = px_hexval(buf[2 * i]), lo = px_hexval(buf[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			r = px_errorf(err, PX_EINVAL, "key file '%s': a "
				      "character that is not a hex digit at "
				      "offset %zu", path,
				      2 * i + (hi < 0 ? 0 : 1));
			goto out;
		}
		k[i] = (uint8_t)(hi << 4 | lo);
	}
	memcpy(key, k, sizeof k);
out:
	OPENSSL_cleanse(buf, sizeof buf);
	OPENSSL_cleanse(k, sizeof k);
	close(fd);
	return r;
}

/* fsync the folder holding path, so that a new name in it is durable. */
static int sync_dir_of(const char *path)
{
	char dir[4096];
	int fd, rc;

	if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
		return ENAMETOOLONG;
	fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	rc = fsync(fd) == 0 ? 0 : errno;
	close(fd);
	return rc;
}

enum px_err px_keyfile_write(const char *path,
			     const uint8_t key[PX_KEYFILE_KEY_LEN],
			     struct px_error *err)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[4096 + 32], text[PX_KEYFILE_HEX_LEN + 1];
	uint8_t rnd[8];
	enum px_err r = PX_OK;
	size_t off = 0;
	ssize_t w;
	int fd, e;

	if (RAND_bytes(rnd, sizeof rnd) != 1)
		return px_errorf(err, PX_EIO, "key file '%s': RAND_bytes "
				 "failed", path);
	if (snprintf(tmp, sizeof tmp, "%s.tmp-%02x%02x%02x%02x%02x%02x%02x"
		     "%02x", path, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
		     rnd[5], rnd[6], rnd[7]) >= (int)sizeof tmp)
		return px_errorf(err, PX_ESYS | ENAMETOOLONG, "key file '%s': "
				 "%s", path, strerror(ENAMETOOLONG));
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0) {
		e = errno;
		return px_errorf(err, PX_ESYS | e, "key file '%s': create "
				 "'%s': %s", path, tmp, strerror(e));
	}
	for (size_t i = 0; i < PX_KEYFILE_KEY_LEN; i++) {
		text[2 * i] = hex[key[i] >> 4];
		text[2 * i + 1] = hex[key[i] & 15];
	}
	text[PX_KEYFILE_HEX_LEN] = '\n';
	/* the umask may have taken the owner's bits: exactly 0600 */
	if (fchmod(fd, 0600) != 0) {
		e = errno;
		r = px_errorf(err, PX_ESYS | e, "key file '%s': chmod: %s",
			      path, strerror(e));
		goto out_unlink;
	}
	while (off < sizeof text) {
		w = write(fd, text + off, sizeof text - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			e = errno;
			r = px_errorf(err, PX_ESYS | e, "key file '%s': write: "
				      "%s", path, strerror(e));
			goto out_unlink;
		}
		off += (size_t)w;
	}
	if (fsync(fd) != 0) {
		e = errno;
		r = px_errorf(err, PX_ESYS | e, "key file '%s': fsync: %s",
			      path, strerror(e));
		goto out_unlink;
	}
	/* link, not rename: a key already there is never replaced (one
	 * that nodes may hold) */
	if (link(tmp, path) != 0) {
		e = errno;
		r = e == EEXIST ?
			px_errorf(err, PX_EEXIST, "key file '%s': already "
				  "exists", path) :
			px_errorf(err, PX_ESYS | e, "key file '%s': link: %s",
				  path, strerror(e));
		goto out_unlink;
	}
	if ((e = sync_dir_of(path)) != 0)
		r = px_errorf(err, PX_ESYS | e, "key file '%s': fsync of its "
			      "folder: %s", path, strerror(e));
out_unlink:
	OPENSSL_cleanse(text, sizeof text);
	close(fd);
	unlink(tmp);
	return r;
}
