/* dist_node.h -- the trainer roles of one instance, run together:
 * `proteus-trainer node` (docs/trainer.md, "Nodes").
 *
 * A node runs a parameter server (node id base; a reliable one with
 * --reliable, which may hold BackupPS shards) and/or `workers` workers
 * (node ids base + 1 ...), each a process of its own in the node's
 * process group.  Role k listens on dist_node_addr(listen, k): the PS is
 * role 0, worker i role i + 1.  SIGTERM and SIGINT are forwarded to every
 * role with the sigqueue value they came with (proteusd's local world
 * sends an eviction notice or a release as SIGTERM whose value holds the
 * milliseconds left and the reason; on EC2 the node makes that leave
 * itself from its instance metadata, below, and the instance's shutdown
 * sends a plain SIGTERM); when one role fails the others are stopped.
 *
 * On EC2 a spot node learns of its interruption itself: with imds set it
 * polls its instance metadata (IMDSv2: spot/instance-action and
 * events/recommendations/rebalance) every imds_poll_ms, on a thread of
 * its own, and on a notice gives every role the leave a local eviction
 * gives (SIGTERM, dist_leave_sigval(ms to the notice's time less a
 * margin, WIRE_LEAVE_EVICTION)); docs/trainer.md, "Interruption notices".
 */
#ifndef PX_DIST_NODE_H
#define PX_DIST_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/px.h"
#include "dist.h"

#define DIST_NODE_MAX_WORKERS 16
#define DIST_NODE_IMDS_POLL_MS 5000   /* default poll, on the notices'
					 clock */
#define DIST_NODE_IMDS_MARGIN_MS 5000 /* default imds_margin_ms */
#define DIST_NODE_REBALANCE_S 120     /* a rebalance leave's time, in
					 seconds of the notices' clock */

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
	/* interruption notices from the instance metadata */
	bool imds;                /* poll them ($AWS_EC2_METADATA_SERVICE_
				   * ENDPOINT, else 169.254.169.254) */
	uint32_t imds_poll_ms;    /* between polls; 0: DIST_NODE_IMDS_POLL_
				   * MS of the notices' clock (at least
				   * 50 ms) */
	uint32_t imds_margin_ms;  /* the roles are to be gone this long
				   * before the notice's time (at most a
				   * quarter of the time left; 0: none) */
	bool leave_on_rebalance;  /* a rebalance recommendation is a leave
				   * (WIRE_LEAVE_REBALANCE); else logged */
	uint32_t clock_speedup;   /* K: the notices' times are on a clock K
				   * times faster than real time (a fake
				   * EC2's); 0 or 1: real time */
	uint64_t clock_origin_s;  /* T0 of that clock (Unix s): it reads
				   * T0 + (now - T0) * K */
	dist_log_fn log;          /* may be NULL; called from the poller's
				   * thread too */
	void *log_arg;
	char **envp;              /* private: the roles' environment */
};

/* Role k's base address: ipc:// and inproc:// get "-k" appended, tcp://
 * gets the port + 3k (each role listens on 3 ports). */
enum px_err dist_node_addr(const char *base, uint32_t k, char *buf,
			   size_t len, struct px_error *err);

/* The milliseconds a role is given to leave in, at real time now_us
 * (wall clock), for a notice whose time is notice_s on the notices'
 * clock: the real time left until then, less the margin; 1 (at once)
 * when that is past. */
int64_t dist_node_notice_ms(const struct dist_node *n, int64_t notice_s,
			    int64_t now_us);

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
