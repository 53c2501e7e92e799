/* enroll_node.h -- a node on an EC2 instance gets its job's key by
 * enrollment (common/enroll.h; docs/security.md): its user data gives
 * PX_ENROLL_ADDR, PX_ENROLL_JOB, PX_ENROLL_PUB and PX_ENROLL_TICKET, the
 * instance metadata its signed identity document, and proteusd the key,
 * sealed to a key pair made for the request.
 *
 * The key is kept in a key file on the instance's disk (common/keyfile.h:
 * mode 0600): $STATE_DIRECTORY/job-N.key under the proteus-node unit,
 * else $HOME/.proteus/job-N.key; a node started again on the instance
 * reads it there (the ticket is single-use).  The roles find it through
 * PX_JOB_KEY_FILE; the PX_ENROLL_* variables are taken out of the
 * environment, so that no child inherits the ticket.
 */
#ifndef PX_ENROLL_NODE_H
#define PX_ENROLL_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/px.h"

#define ENROLL_WAIT_MS (10 * 60 * 1000) /* asking again, at most */
#define ENROLL_TRY_MS 10000              /* one request's answer */

struct enroll_node_opts {
	const char *sig_file;   /* the PKCS#7 signature (base64) from a
				 * file; NULL: the instance metadata's */
	const char *key_path;   /* where the key goes; NULL: the cache */
	int64_t wait_ms;        /* 0: ENROLL_WAIT_MS */
	bool once;              /* one request, no second try */
};

/* Whether this process should enroll: PX_ENROLL_ADDR set and no job key
 * (PX_JOB_KEY, PX_JOB_KEY_FILE) given. */
bool enroll_node_wanted(void);

/* Enroll, or find the key an earlier enrollment left: its file's path in
 * ret_path, and PX_JOB_KEY_FILE set to it.  PX_EINVAL with the daemon's
 * reason when it refused; PX_ETIMEDOUT when it did not answer in time. */
enum px_err enroll_node(const struct enroll_node_opts *o, char *ret_path,
			size_t len, struct px_error *err);

#endif
