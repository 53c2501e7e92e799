/* jobkey.c -- a job's key in its job directory (see jobkey.h). */
#include "jobkey.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/keyfile.h"

_Static_assert(JOBKEY_LEN == PX_KEYFILE_KEY_LEN, "one key length");

static enum px_err key_path(const char *dir, char *buf, size_t len,
			    struct px_error *err)
{
	if (snprintf(buf, len, "%s/" JOBKEY_FILE, dir) >= (int)len)
		return px_errorf(err, PX_ETOOBIG, "job key: folder '%.64s...' "
				 "too long", dir);
	return PX_OK;
}

enum px_err jobkey_load_or_create(const char *dir, uint8_t key[JOBKEY_LEN],
				  struct px_error *err)
{
	char path[4096];
	uint8_t fresh[JOBKEY_LEN];
	struct stat st;
	enum px_err r;

	if ((r = key_path(dir, path, sizeof path, err)) != PX_OK)
		return r;
	if (stat(dir, &st) != 0) {
		int e = errno;

		return px_errorf(err, e == ENOENT ? PX_ENOENT : PX_ESYS | e,
				 "job key: folder '%s': %s", dir,
				 strerror(e));
	}
	if (!S_ISDIR(st.st_mode))
		return px_errorf(err, PX_EINVAL, "job key: '%s' is not a "
				 "folder", dir);
	r = px_keyfile_read(path, false, key, err);
	if (r != PX_ENOENT)
		return r;
	if (RAND_bytes(fresh, sizeof fresh) != 1)
		return px_errorf(err, PX_EIO, "job key '%s': RAND_bytes "
				 "failed", path);
	r = px_keyfile_write(path, fresh, err);
	if (r == PX_OK)
		memcpy(key, fresh, sizeof fresh);
	else if (r == PX_EEXIST) /* written meanwhile: that one holds */
		r = px_keyfile_read(path, false, key, err);
	OPENSSL_cleanse(fresh, sizeof fresh);
	return r;
}

void jobkey_remove(const char *dir)
{
	char path[4096];

	if (key_path(dir, path, sizeof path, NULL) == PX_OK)
		(void)unlink(path);
}
