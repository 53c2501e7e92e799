/* dist_node.h -- the trainer roles of one instance, run together:
 * `proteus-trainer node` (docs/trainer.md, "Nodes").
 *
 * A node runs a parameter server (node id base; a reliable one with
 * --reliable, which may hold BackupPS shards) and/or `workers` workers
 * (node ids base + 1 ...), each a process of its own in the node's
 * process group.  Role k listens on dist_node_addr(listen, k): the PS is
 * role 0, worker i role i + 1.  SIGTERM and SIGINT are forwarded to every
 * role with the sigqueue value they came with (proteusd and the EC2
 * world send an eviction notice as SIGTERM whose value is the
 * milliseconds left); when one role fails the others are stopped.
 */
#ifndef PX_DIST_NODE_H
#define PX_DIST_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/px.h"
#include "dist.h"

#define DIST_NODE_MAX_WORKERS 16

struct dist_node {
	const char *exe;          /* the proteus-trainer program */
	uint32_t base;            /* node id of the PS; workers follow */
	const char *listen;       /* base address of the node's roles */
	bool ps;                  /* run a parameter server */
	bool reliable;            /* an on-demand (reliable) instance */
	uint32_t workers;         /* workers to run, 0..16 */
	bool stub;                /* --stub: dist_node_stub instead */
	char *const *role_args;   /* passed on to every role: --job,
				   * --coord, the training options */
	char **envp;              /* private: the roles' environment */
};

/* Role k's base address: ipc:// and inproc:// get "-k" appended, tcp://
 * gets the port + 3k (each role listens on 3 ports). */
enum px_err dist_node_addr(const char *base, uint32_t k, char *buf,
			   size_t len, struct px_error *err);

/* Run the roles until they end.  Returns the exit code: 0 when every
 * role ended well, 1 when one failed (err says which and how), 2 for a
 * node that would run nothing. */
int dist_node_run(const struct dist_node *n, struct px_error *err);

/* `node --stub`: register with the coordinator as node o->node with no
 * role, then only heartbeat (every second) until o->stop, and leave
 * (dist_stub.c; for benchmarks of hundreds of instances: no data, no
 * model, no training).  PX_OK when stopped. */
enum px_err dist_node_stub(const struct dist_opts *o, struct px_error *err);

#endif
