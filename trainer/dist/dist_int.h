/* dist_int.h -- private helpers shared by the trainer's roles (dist_*.c):
 * logging through the callback, lazily connected links to peers, a copy
 * of the membership, and small socket/poll helpers.
 */
#ifndef PX_DIST_INT_H
#define PX_DIST_INT_H

#include "dist.h"

/* A worker blocked this long re-sends what it waits on (its last CLOCK);
 * the coordinator warns after a quarter of --stall-timeout without a
 * clock advance and fails the job after all of it. */
#define DIST_WATCHDOG_US 1000000

/* Straggler relief (docs/trainer.md, "Stragglers"): offers a straggler
 * holds and helps a helper queues at once, at most; a training worker
 * reports its progress at most this often (besides its heartbeats). */
#define DIST_RELIEF_MAX 8
#define DIST_PROGRESS_US 20000

void dist_logf(const struct dist_opts *o, enum log_level level,
	       const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* One line with what ctx sent and received and the share of this
 * process's CPU time spent on frame tags ("ROLE N wire: ..."), at the
 * end of a role: the benchmarks add these up. */
void dist_log_wire(const struct dist_opts *o, enum log_level level,
		   const char *role, struct wire_ctx *ctx);

/* Sockets to one peer node, opened on first use. */
struct dist_link {
	struct wire_node node;
	char addr[DIST_ADDR_MAX + 1];  /* its base address */
	struct net_sock *req;          /* to its REP endpoint */
	struct net_sock *push;         /* to its PULL endpoint */
	bool used;
};

struct dist_links {
	struct wire_ctx *ctx;          /* borrowed */
	struct dist_link l[DIST_MAX_NODES];
};

/* The REQ or PUSH socket to node at addr (connected now if need be);
 * NULL with *err set on failure. */
struct net_sock *dist_link_get(struct dist_links *t, struct wire_node node,
			       const char *addr, bool req,
			       struct px_error *err);
/* Close the REQ socket to node (after a timeout, to drop a stale
 * request). */
void dist_link_reset_req(struct dist_links *t, struct wire_node node);
void dist_links_close(struct dist_links *t);

/* A copy of the latest MEMBERSHIP (what the receiver needs of it). */
struct dist_member {
	struct wire_node node;
	uint8_t roles;       /* offered roles; PS_BACKUP marks reliable */
	uint8_t state;       /* enum wire_member_state */
	char addr[DIST_ADDR_MAX + 1];
};

struct dist_members {
	uint64_t epoch;      /* 0: none yet */
	uint32_t n;
	struct dist_member m[DIST_MAX_NODES];
};

/* Copy an accepted MEMBERSHIP message if its epoch is newer; returns
 * whether it was. */
bool dist_members_take(struct dist_members *mb, const struct wire_msg *m);
/* Whether membership m lists this process (node self with its session:
 * not an earlier process of the node's) as leaving: the agent's LEAVE (a
 * release across machines) reaches a role this way, with no signal.
 * *ret_deadline_us (may be NULL): by when, as the list says (0: not
 * said). */
bool dist_told_to_leave(const struct wire_msg *m, struct wire_node self,
			uint64_t session, int64_t *ret_deadline_us);
const struct dist_member *dist_members_find(const struct dist_members *mb,
					    struct wire_node node);
/* Whether member d holds a data partition in stage st: an ACTIVE worker,
 * not a reliable one in stage 3. */
bool dist_member_holds_partition(const struct dist_member *d, uint8_t st);

/* Workers that hold a data partition in stage st, sorted by node id:
 * ACTIVE workers, less reliable ones in stage 3.  Returns the count and
 * sets *ret_index to self's position (or UINT32_MAX). */
uint32_t dist_members_workers(const struct dist_members *mb, uint8_t st,
			      struct wire_node self, uint32_t *ret_index);

/* Open a socket and bind or connect it to base's endpoint ep. */
enum px_err dist_sock(struct wire_ctx *ctx, enum net_pattern p,
		      const char *base, enum dist_ep ep, bool bind,
		      struct net_sock **ret, struct px_error *err);

/* Handshake with the coordinator over req, retrying for up to
 * timeout_ms; *ret_reply is the ASSIGN. */
enum px_err dist_register(const struct dist_opts *o, struct net_sock *req,
			  uint8_t roles, int timeout_ms,
			  struct wire_msg *ret_reply, struct px_error *err);

/* PULL shard s of `to` over the REQ socket q: the range [0, count) of its
 * parameters, at the requester's clock, seeing the requester's own pushes
 * up to min_clock (-1: none); then check the reply is that range: PARAMS,
 * shard s, offset 0, count floats.  PX_OK: *ret holds it (release it);
 * its range.clock is the clock up to which it holds every other worker's
 * updates.  PX_EPROTO: another answer (a PS's ACK "not served here"), the
 * socket is fine.  Anything else: the send or receive failed, and the REQ
 * socket must be reset (dist_link_reset_req) before the next request. */
enum px_err dist_pull(struct net_sock *q, struct wire_node to, int64_t clock,
		      uint32_t s, uint64_t count, int64_t min_clock,
		      int send_ms, int recv_ms, struct wire_msg *ret,
		      struct px_error *err);

/* dist_pull's two halves, for a worker that sends its PULLs for every
 * shard at once and takes the replies later. */
enum px_err dist_pull_send(struct net_sock *q, struct wire_node to,
			   int64_t clock, uint32_t s, uint64_t count,
			   int64_t min_clock, int send_ms,
			   struct px_error *err);
enum px_err dist_pull_recv(struct net_sock *q, struct wire_node to,
			   uint32_t s, uint64_t count, int recv_ms,
			   struct wire_msg *ret, struct px_error *err);

/* Answer the request req on the REP socket rep with an ACK of status and
 * a printf-style detail. */
enum px_err dist_ack(struct net_sock *rep, const struct wire_msg *req,
		     int64_t clock, uint32_t status, struct px_error *err,
		     const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* How long to wait for a range of count floats: base_ms, plus its
 * transfer at DIST_RANGE_FLOOR_BPS (a loaded host, a sanitizer build),
 * at most DIST_RANGE_MAX_MS.  A fixed wait fit the small models and
 * failed a shard of an mf job at the id bound (15M floats, 60 MB), whose
 * every retry then asked again and discarded the answer in flight. */
#define DIST_RANGE_FLOOR_BPS (10u << 20)
#define DIST_RANGE_MAX_MS 60000
int dist_range_ms(int base_ms, uint64_t count);

/* Milliseconds from now to deadline_us (0 if past), capped at cap. */
int dist_ms_until(uint64_t deadline_us, int cap);

/* "test loss L, accuracy A%" for progress lines, or "not evaluated yet"
 * when acc is NaN (no evaluation so far). */
const char *dist_fmt_eval(char *buf, size_t n, double loss, double acc);

#endif
