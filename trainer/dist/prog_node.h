/* prog_node.h -- a program job's node agent (`proteus-trainer program-node`,
 * docs/programs.md): on one instance it runs the user's program under the
 * contract (its environment, the progress file, the checkpoint folder),
 * as the user it is told, and speaks for it to proteusd over the program
 * channel (common/pchan.h): the program's progress and end out, the
 * checkpoints it completes copied off the node, the job's latest one
 * restored before every start and mirrored while it runs, a notice's
 * SIGTERM passed on with the grace period, then SIGKILL.
 *
 * Everything the agent runs it learns from the daemon's answer to its
 * hello (the command, the environment, the user, the code), not from its
 * own argv, which any local user may read.
 */
#ifndef PX_PROG_NODE_H
#define PX_PROG_NODE_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/px.h"

struct prog_node_opts {
	const char *hub;          /* the daemon's endpoint (ipc:// or
				   * tcp://host:port) */
	uint64_t inst;            /* the instance (the controller's id) */
	const char *log;          /* the program's output, rotated (NULL:
				   * this process's stderr) */
	const char *work;         /* where its folder is made (NULL:
				   * $TMPDIR or /tmp) */
	const char *listen;       /* tcp://HOST:PORT: the address its
				   * peers reach and its ports (PORT,
				   * PORT+1); NULL or ipc://: loopback */
	/* EC2: interruption notices from the instance metadata (as
	 * dist_node.h's imds fields) */
	bool imds;
	uint32_t imds_poll_ms, imds_margin_ms, clock_speedup;
	uint64_t clock_origin_s;
	uint8_t key[64];          /* the job key */
	size_t key_len;
};

/* Run until the daemon says the job is over, the node is told to leave
 * and its program has gone, or the daemon cannot be reached for
 * PROG_NODE_LOST_MS.  The exit status of `program-node`. */
int prog_node_run(const struct prog_node_opts *o);

#define PROG_NODE_LOST_MS 30000

#endif
