/* keyfile.h -- a 32-byte secret in a file of its own (a job's key), read
 * and written the one careful way that proteusd (agent/jobkey.c) and the
 * trainer (PX_JOB_KEY_FILE, trainer/dist/dist_common.c) share.
 *
 * The file: a regular file owned by this process's effective uid, mode
 * 0600 (or 0400 where the reader allows it), holding exactly 64 hex
 * digits and an optional newline (written: lower-case, with the
 * newline).  Anything else is refused before the secret is used: a
 * symbolic link (not followed), a FIFO, device or socket (opened without
 * blocking, refused at once), a directory, another owner, other mode
 * bits, other contents.  Error messages name the path and what is wrong
 * with the file, never a byte of its contents.
 */
#ifndef PX_KEYFILE_H
#define PX_KEYFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "px.h"

#define PX_KEYFILE_KEY_LEN 32            /* bytes of key */
#define PX_KEYFILE_HEX_LEN (2 * PX_KEYFILE_KEY_LEN)

/* Read the key at path into key.  allow_0400: mode 0400 is accepted as
 * well as 0600.  PX_ENOENT when path does not exist (err names it);
 * PX_EINVAL for a file that is not a key file as above; PX_ESYS|errno for
 * a failed open or read. */
enum px_err px_keyfile_read(const char *path, bool allow_0400,
			    uint8_t key[PX_KEYFILE_KEY_LEN],
			    struct px_error *err);

/* Write key to path atomically, never replacing a file already there: a
 * temporary file beside it (O_CREAT|O_EXCL, mode 0600, written, fsync'd)
 * is linked to path, then the folder is fsync'd.  PX_EEXIST when path
 * exists (someone else wrote it first: read theirs); PX_ESYS|errno
 * otherwise.  Nothing is left behind on failure. */
enum px_err px_keyfile_write(const char *path,
			     const uint8_t key[PX_KEYFILE_KEY_LEN],
			     struct px_error *err);

#endif
