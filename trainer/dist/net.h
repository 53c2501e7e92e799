/* net.h -- a thin nanomsg wrapper that sends and receives wire frames.
 *
 * A net_sock is one nanomsg socket of one pattern, bound to a shared
 * struct wire_ctx (identity, key, replay state).  Receiving verifies and
 * decodes every frame and drops (and counts) what is not authentic, fresh
 * and well formed.  Which roles use which pattern is in docs/protocol.md.
 */
#ifndef PX_NET_H
#define PX_NET_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/px.h"
#include "wire.h"

enum net_pattern {
	NET_PAIR = 1, /* one peer, both ways */
	NET_REQ,      /* requests (HELLO/REGISTER, PULL, HEARTBEAT...) */
	NET_REP,      /* answers them, one at a time */
	NET_PUSH,     /* one way, load-balanced (PUSH, FORWARD, CLOCK) */
	NET_PULL,     /* fair-queued receiver of PUSH */
	NET_PUB,      /* one to all (STAGE, CLOCK_MIN, MEMBERSHIP) */
	NET_SUB,      /* subscribes to everything a PUB sends */
	NET_BUS,      /* every peer to every connected peer */
	NET_PATTERN_MAX
};

struct net_opts {
	size_t max_payload;  /* payload bound (NN_RCVMAXSIZE is this plus
				WIRE_OVERHEAD); 0: WIRE_PAYLOAD_DEFAULT */
	int rcvbuf;          /* NN_RCVBUF bytes; 0: nanomsg default */
	int sndbuf;          /* NN_SNDBUF bytes; 0: nanomsg default */
};

/* Opaque handle; free with net_close. */
struct net_sock;

/* Open a socket of pattern p for ctx (borrowed: it must outlive the
 * socket).  o may be NULL for the defaults.  A SUB socket subscribes to
 * everything; a REQ socket never resends on its own (retries are the
 * caller's, with a fresh frame: a resent frame would be a replay). */
enum px_err net_open(struct wire_ctx *ctx, enum net_pattern p,
		     const struct net_opts *o, struct net_sock **ret,
		     struct px_error *err);

/* Close the socket; pending outbound messages may be lost.  NULL ok. */
void net_close(struct net_sock *s);

/* Bind or connect to a nanomsg URL: "tcp://127.0.0.1:7001",
 * "ipc:///run/x.sock", "inproc://name".  tcp needs an explicit port.
 * The endpoints fix what the socket does: on tcp:// (any transport but
 * ipc:// and inproc://) every frame it sends is encrypted (WIRE_F_ENC)
 * and every frame it receives must be (else dropped as
 * WIRE_DROP_PLAINTEXT); on ipc:// and inproc:// it sends GMAC only and
 * accepts both.  A socket's endpoints are all of one kind: PX_EINVAL
 * otherwise (docs/protocol.md, "Encryption"). */
enum px_err net_bind(struct net_sock *s, const char *url,
		     struct px_error *err);
enum px_err net_connect(struct net_sock *s, const char *url,
			struct px_error *err);

/* Seal m (header completed, seq drawn from the ctx; WIRE_F_ENC set or
 * cleared by the socket's transport) and send it.
 * timeout_ms: -1 waits forever, 0 never blocks, else milliseconds.
 * PX_ETIMEDOUT when it could not be queued in time (nothing was sent),
 * PX_ESYS|errno for socket errors (e.g. EFSM: REQ/REP out of turn). */
enum px_err net_send(struct net_sock *s, struct wire_msg *m, int timeout_ms,
		     struct px_error *err);

/* Receive the next accepted message into *ret (release it with
 * wire_msg_release; it owns the frame).  Dropped frames are counted in
 * net_stats and skipped until the timeout runs out (0: take what is
 * queued now, never block).  PX_ETIMEDOUT when nothing was accepted. */
enum px_err net_recv(struct net_sock *s, struct wire_msg *ret,
		     int timeout_ms, struct px_error *err);

/* Send a float range (PUSH, PARAMS or FORWARD) of n values in chunks
 * under the socket's payload bound; every chunk carries flags
 * (WIRE_F_MOMENTUM or 0) and every chunk but the last WIRE_F_MORE.
 * Each chunk is a frame with its own seq. */
enum px_err net_send_range(struct net_sock *s, enum wire_type type,
			   uint32_t flags, struct wire_node dest,
			   int64_t clock, uint32_t shard, uint64_t offset,
			   const float *f, size_t n, int timeout_ms,
			   struct px_error *err);

/* Send rows ids[n] (strictly increasing) of a shard, with their values
 * f[n * width], as ROWS frames of op (enum wire_rows_op) in chunks of
 * wire_rows_chunk rows, WIRE_F_MORE on every chunk but the last; one
 * frame even when n is 0 (an empty PUSH still says its clock).
 * *ret_bytes and *ret_frames (may be NULL) grow by the frames' bytes
 * (header and tag too) and number. */
enum px_err net_send_rows(struct net_sock *s, uint8_t op,
			  struct wire_node dest, int64_t clock,
			  uint32_t shard, uint32_t width, const uint32_t *ids,
			  const float *f, uint32_t n, int timeout_ms,
			  uint64_t *ret_bytes, uint32_t *ret_frames,
			  struct px_error *err);

/* Client side of the handshake on a REQ (or PAIR) socket: HELLO, wait for
 * the CHALLENGE, send REGISTER with *info's fields (its echo is filled
 * here), and wait for the reply (ASSIGN or ACK), returned in *ret_reply.
 * Each wait is timeout_ms. */
enum px_err net_register(struct net_sock *s, struct wire_node coord,
			 const struct wire_register *info, int timeout_ms,
			 struct wire_msg *ret_reply, struct px_error *err);

/* Counters of accepted and dropped frames (live view). */
const struct wire_stats *net_stats(const struct net_sock *s);

/* The largest payload this socket sends or accepts. */
size_t net_max_payload(const struct net_sock *s);

/* File descriptors that become readable when the socket can receive
 * (NN_RCVFD) or send (NN_SNDFD), for poll/epoll event loops; they are
 * not for reading or writing.  PX_EUNSUPP when the pattern cannot.  A REQ
 * that sends again before its answer came gets a new socket (net_send),
 * and so new descriptors: ask again after such a send. */
enum px_err net_fd(const struct net_sock *s, bool for_send, int *ret_fd,
		   struct px_error *err);

/* The nanomsg socket, for nn_poll over several sockets. */
int net_nn_socket(const struct net_sock *s);

#endif
