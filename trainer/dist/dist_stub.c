/* dist_stub.c -- `proteus-trainer node --stub`: a node that registers
 * with its job's coordinator and then only heartbeats (dist_node.h).
 *
 * It exists for the benchmarks: hundreds of instances of the fake EC2
 * (tests/bench/bench_ec2_fleet.sh) cost a real node's data, model and
 * training each, which two cores cannot give.  A stub goes through what
 * proteusd's readiness needs of a node -- the authenticated handshake,
 * the coordinator's admission (--expect-joins: the node must have been
 * expected, with roles), membership in the PROGRESS the daemon reads --
 * and takes no part in the training: it registers with no role (roles 0,
 * within whatever the agent granted), so the coordinator places no
 * shard on it, gives it no partition and counts it in no clock.  It opens
 * no socket of its own (nobody calls a member without a role) and does
 * not subscribe to the coordinator's broadcasts (500 copies of a
 * membership of 1000 nodes at every heartbeat).  So it does not notice a
 * coordinator that restarted: it keeps heartbeating into a session the
 * new one does not know, and would need starting again.
 */
#include "dist_node.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dist_int.h"

/* A stub's heartbeat, whatever --heartbeat says: its coordinator's
 * --hb-timeout must be longer (the ec2 world's is 5 s).  Every 100 ms (the
 * trainer's default) from 500 stubs would be 5000 frames a second. */
#define STUB_HB_MS 1000
#define STUB_REGISTER_MS 10000  /* as a PS or a worker waits */

/* Sleep ms, or less when a signal came (the stop flag). */
static void nap(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	(void)nanosleep(&ts, NULL);
}

enum px_err dist_node_stub(const struct dist_opts *o, struct px_error *err)
{
	struct wire_config wc = {
		.self = o->node, .job = o->job,
		.job_key = o->key, .job_key_len = o->key_len,
	};
	struct wire_ctx *ctx = NULL;
	struct net_sock *push = NULL, *req = NULL;
	uint64_t beats = 0;
	struct wire_msg m;
	enum px_err e;

	e = wire_ctx_new(&wc, &ctx, err);
	if (e != PX_OK)
		return e;
	e = dist_sock(ctx, NET_PUSH, o->coord, DIST_EP_PULL, false, &push,
		      err);
	if (e == PX_OK)
		e = dist_sock(ctx, NET_REQ, o->coord, DIST_EP_REP, false, &req,
			      err);
	if (e == PX_OK)
		e = dist_register(o, req, 0, STUB_REGISTER_MS, &m, err);
	if (e != PX_OK)
		goto out;
	wire_msg_release(&m);
	dist_logf(o, LOG_LVL_NOTICE, "stub %u registered with %s (no role); "
		  "heartbeats every %d ms", o->node.v, o->coord, STUB_HB_MS);
	while (!(o->stop && *o->stop)) {
		wire_msg_init(&m, WIRE_HEARTBEAT,
			      (struct wire_node){ DIST_COORD_NODE }, 0);
		m.u.heartbeat.wall_us = px_now_wall_us();
		if (net_send(push, &m, 100, err) == PX_OK)
			beats++;
		nap(STUB_HB_MS);
	}
	/* told to go (a release, an eviction, the instance's end): say so,
	 * as a real node does, so that it is a leave and not a loss */
	wire_msg_init(&m, WIRE_LEAVE, (struct wire_node){ DIST_COORD_NODE }, 0);
	m.u.leave.deadline_us = dist_leave_deadline_us(o);
	m.u.leave.reason = dist_leave_reason(o);
	(void)net_send(push, &m, 100, err);
	nap(100); /* let it go out before the socket closes */
	dist_logf(o, LOG_LVL_NOTICE, "stub %u leaving after %" PRIu64
		  " heartbeats", o->node.v, beats);
	e = PX_OK;
out:
	net_close(req);
	net_close(push);
	wire_ctx_free(ctx);
	return e;
}
