/* agent_chan.h -- the agent's end of a job's trainer: what proteusd's
 * jobs (agent/workload_trainer.c) and `proteus-trainer local` (dist_local.c)
 * both hold to follow and steer a coordinator (docs/protocol.md).
 *
 * Two sockets under the job's key, as the agent (DIST_AGENT_NODE): a PULL
 * the coordinator pushes PROGRESS frames to (bound here before the
 * coordinator starts: its --agent address), and a REQ to the
 * coordinator's REP endpoint for the handshake (the agent registers as
 * WIRE_ROLE_AGENT) and for commands (STAGE, EXPECT, LEAVE), one at a time:
 * a command is sent, and its answer taken later, so that an event loop
 * never waits on the coordinator.
 */
#ifndef PX_AGENT_CHAN_H
#define PX_AGENT_CHAN_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/px.h"
#include "wire.h"

struct agent_chan;

struct agent_chan_setup {
	const char *agent_ep;    /* where the PULL binds: the address the
				  * coordinator is given with --agent
				  * (ipc://DIR/agent.pull) */
	const char *coord;       /* the coordinator's base address */
	uint64_t job;            /* the trainer's job id */
	const uint8_t *key;      /* the job's key (copied into the frames'
				  * derived key; not kept) */
	size_t key_len;
};

/* Open both sockets.  *ret is freed with agent_chan_close (also after a
 * failure: *ret is then NULL). */
enum px_err agent_chan_open(const struct agent_chan_setup *s,
			    struct agent_chan **ret, struct px_error *err);
/* Close both sockets; NULL is fine. */
void agent_chan_close(struct agent_chan *a);

/* One handshake attempt, each wait at most timeout_ms, the agent named
 * `instance` in it.  PX_OK: registered; PX_EPROTO: the coordinator
 * answered but refused; another error: no answer (the coordinator is not
 * up yet, or restarting: the next attempt uses a fresh REQ socket). */
enum px_err agent_chan_register(struct agent_chan *a, const char *instance,
				int timeout_ms, struct px_error *err);

/* Send command c to the coordinator without waiting for the answer,
 * which agent_chan_answer takes before the next command is sent.
 * Non-PX_OK: not sent (try again later). */
enum px_err agent_chan_send(struct agent_chan *a, const struct wire_command *c,
			    struct px_error *err);
/* The answer to the command sent, if one came within ms (0: only one
 * already in): PX_OK with *ret_status the coordinator's (an ACK's status;
 * PX_OK for any other reply) and its detail in detail[len]; non-PX_OK:
 * none yet. */
enum px_err agent_chan_answer(struct agent_chan *a, int ms,
			      uint32_t *ret_status, char *detail, size_t len,
			      struct px_error *err);

/* A descriptor that is readable once the answer to the command sent is
 * in (nanomsg's NN_RCVFD of the REQ socket), for an event loop to wait
 * on.  Valid until the next agent_chan_send, agent_chan_register or
 * agent_chan_close (a REQ that sends again gets a new socket): stop
 * watching it before each. */
enum px_err agent_chan_answer_fd(struct agent_chan *a, int *ret_fd,
				 struct px_error *err);

/* The next PROGRESS frame from the coordinator within ms (0: only those
 * already in; other frames are dropped): PX_OK and *ret (release it with
 * wire_msg_release); non-PX_OK: none. */
enum px_err agent_chan_progress(struct agent_chan *a, int ms,
				struct wire_msg *ret, struct px_error *err);

#endif
