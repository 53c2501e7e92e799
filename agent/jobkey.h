/* jobkey.h -- a job's key, kept in its job directory so that it survives
 * a daemon restart: instances that outlive the daemon (ec2) hold it and
 * must stay members of the job's coordinator when a restarted daemon
 * adopts them.  The key is never in the database, a log, argv or a job
 * spec; only the daemon's user can read the file (docs/jobs.md, "The job
 * key").
 */
#ifndef PX_JOBKEY_H
#define PX_JOBKEY_H

#include <stdint.h>

#include "../common/px.h"

#define JOBKEY_LEN 32          /* bytes */
#define JOBKEY_FILE "key"      /* its name in the job directory */

/* The job's key in DIR/key (mode 0600, owned by us, a regular file,
 * exactly 64 hex digits and a newline): read it when it exists, else make
 * one (RAND_bytes) and write it atomically (O_CREAT|O_EXCL on a temporary
 * name, fsync, then linked in place: a key already there is never
 * replaced).  A key file with other modes, another owner, a symbolic
 * link, a FIFO (refused without blocking) or bad contents is an error
 * naming the path (never the key): PX_EINVAL.  A missing DIR is
 * PX_ENOENT; other failures PX_ESYS|errno or PX_EIO. */
enum px_err jobkey_load_or_create(const char *dir, uint8_t key[JOBKEY_LEN],
				  struct px_error *err);

/* Remove DIR/key (the job ended: its nodes are gone).  Quiet: a missing
 * file is no error. */
void jobkey_remove(const char *dir);

#endif
