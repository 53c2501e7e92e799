/* wire.h -- the trainer's authenticated wire protocol (framing only).
 *
 * Encodes and decodes every message the coordinator, parameter servers,
 * workers and the agent exchange, as flat little-endian frames sealed with
 * AES-256-GCM under a key per job and sender session (the payload
 * encrypted when the frame says so, else GMAC only), with per-sender
 * replay protection.
 * No sockets here (see net.h); the layout is documented in docs/protocol.md.
 */
#ifndef PX_WIRE_H
#define PX_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../common/px.h"

#define WIRE_MAGIC 0x50575850u          /* "PXWP" as little-endian bytes */
#define WIRE_VERSION 7
#define WIRE_HDR_LEN 64                 /* bytes before the payload */
#define WIRE_MAC_LEN 16                 /* AES-256-GCM tag after it */
#define WIRE_OVERHEAD (WIRE_HDR_LEN + WIRE_MAC_LEN)
#define WIRE_NONCE_LEN 16               /* handshake nonces, bytes */
#define WIRE_STR_MAX 127                /* strings: printable ASCII */
#define WIRE_SHARDS_MAX 4096            /* entries in a shard map */
#define WIRE_MEMBERS_MAX 4096           /* entries in a member list */
#define WIRE_PAYLOAD_DEFAULT (64u << 20) /* default payload bound */
#define WIRE_PAYLOAD_MIN 4096           /* smallest bound one may set */
#define WIRE_PAYLOAD_MAX (1u << 30)     /* largest bound one may set */
#define WIRE_RANGE_PREFIX 32            /* payload bytes before floats */
#define WIRE_WINDOW 1024                /* replay window, frames */
#define WIRE_JOB_KEY_MIN 16             /* job key length bounds, bytes */
#define WIRE_JOB_KEY_MAX 1024
#define WIRE_ROWS_MAX (1u << 20)         /* row ids in a ROWS/PULL_ROWS */
#define WIRE_ROW_WIDTH_MAX 4096          /* floats a row */
#define WIRE_ROWS_PREFIX 32              /* ROWS payload before the ids */

/* A node of one job (assigned by the agent at launch, unique per job). */
struct wire_node {
	uint32_t v;
};

/* dest of a frame meant for every receiver (PUB, BUS). */
#define WIRE_NODE_ALL ((struct wire_node){ UINT32_MAX })

static inline bool wire_node_eq(struct wire_node a, struct wire_node b)
{
	return a.v == b.v;
}

/* Message types: X(NAME, number, what it is).  The enum and the names
 * come from this list; each payload's layout is one field list in wire.c,
 * and docs/protocol.md tells it in words. */
#define WIRE_TYPES(X)                                                        \
	X(HELLO, 1, "handshake 1: a fresh client nonce")                     \
	X(CHALLENGE, 2, "handshake 2: echo + server nonce")                  \
	X(REGISTER, 3, "handshake 3: echo + what the node offers")           \
	X(ASSIGN, 4, "role, stage, data partition, shard map")               \
	X(HEARTBEAT, 5, "liveness, with the sender's wall clock")            \
	X(CLOCK, 6, "worker finished clock hdr.clock")                       \
	X(CLOCK_MIN, 7, "slowest worker clock and SSP bound")                \
	X(PUSH, 8, "worker -> ActivePS: a clock's update of a range")        \
	X(PULL, 9, "request a parameter range")                              \
	X(PARAMS, 10, "parameter range (reply, snapshot chunk)")             \
	X(FORWARD, 11, "ActivePS -> BackupPS: a clock's updates")            \
	X(STAGE, 12, "stage change and new shard map")                       \
	X(MEMBERSHIP, 13, "members with sessions and addresses")             \
	X(PROGRESS, 14, "to the agent: clock, rates, loss, members")         \
	X(LEAVE, 15, "leaving (eviction warning) by a deadline")             \
	X(SHUTDOWN, 16, "stop the job")                                      \
	X(ACK, 17, "generic reply: status for a request")                    \
	X(COMMAND, 18, "agent -> coordinator: stage, expect, leave")      \
	X(REASSIGN, 19, "straggler relief: offer, help, done")            \
	X(PULL_ROWS, 20, "request some rows of a shard (sparse)")          \
	X(ROWS, 21, "rows of a shard: params, push or forward (sparse)")

enum wire_type {
#define WIRE_TYPE_ENUM(name, num, what) WIRE_##name = num,
	WIRE_TYPES(WIRE_TYPE_ENUM)
#undef WIRE_TYPE_ENUM
	WIRE_TYPE_MAX
};

/* hdr.flags bits; unknown bits are a malformed header. */
enum wire_flags {
	WIRE_F_MORE = 1 << 0,     /* more chunks of this range/clock follow */
	/* 1 << 1 was MOMENTUM (version 2): the PS keeps no momentum now */
	WIRE_F_RESUME = 1 << 2,   /* ASSIGN: the job resumes from a
				   * checkpoint; a PS takes its first shards'
				   * state from the coordinator */
	WIRE_F_ENC = 1 << 3       /* any type: the payload is encrypted
				   * (AES-256-GCM, the header stays
				   * additional data); without it the tag
				   * is GMAC over header and payload.  The
				   * sender sets it (net_send does, on a
				   * socket whose frames leave the host) */
};
#define WIRE_F_ALL ((uint32_t)(WIRE_F_MORE | WIRE_F_RESUME | WIRE_F_ENC))

/* Roles, a mask (a reliable node may run a worker and a BackupPS). */
enum wire_role {
	WIRE_ROLE_WORKER = 1 << 0,
	WIRE_ROLE_PS_ACTIVE = 1 << 1,
	WIRE_ROLE_PS_BACKUP = 1 << 2,
	WIRE_ROLE_COORD = 1 << 3,
	WIRE_ROLE_AGENT = 1 << 4
};
#define WIRE_ROLE_ALL 0x1fu

enum wire_member_state {
	WIRE_MEMBER_JOINING = 1,
	WIRE_MEMBER_ACTIVE,
	WIRE_MEMBER_LEAVING,
	WIRE_MEMBER_LOST,
	WIRE_MEMBER_STATE_MAX
};

enum wire_leave_reason {
	WIRE_LEAVE_EVICTION = 1, /* spot interruption notice */
	WIRE_LEAVE_REBALANCE,    /* rebalance recommendation */
	WIRE_LEAVE_RELEASE,      /* the controller releases the node */
	WIRE_LEAVE_REASON_MAX
};

/* What the agent (proteusd) asks of a running job's coordinator. */
enum wire_command_op {
	WIRE_CMD_STAGE = 1,      /* run in stage `stage` from now */
	WIRE_CMD_EXPECT,         /* node will register, with at most `roles`;
				  * once any is expected, only expected nodes
				  * may register */
	WIRE_CMD_LEAVE,          /* node is warned: gone by deadline_us */
	WIRE_CMD_GONE,           /* node's process ended without leaving
				  * (the agent, its parent, saw it die):
				  * lost now, not after the heartbeat
				  * timeout */
	WIRE_CMD_OP_MAX
};

enum wire_shutdown_reason {
	WIRE_SHUTDOWN_DONE = 1,  /* training finished */
	WIRE_SHUTDOWN_CANCEL,    /* the user or the agent stopped it */
	WIRE_SHUTDOWN_ERROR,     /* unrecoverable failure */
	WIRE_SHUTDOWN_REASON_MAX
};

/* Why a frame was dropped; each has a counter in struct wire_stats. */
enum wire_drop {
	WIRE_DROP_NONE = 0,
	WIRE_DROP_TOO_SHORT,  /* shorter than header + MAC or its length */
	WIRE_DROP_TOO_BIG,    /* payload length over the bound */
	WIRE_DROP_BAD_MAGIC,
	WIRE_DROP_BAD_VERSION,
	WIRE_DROP_BAD_JOB,    /* another job's frame */
	WIRE_DROP_BAD_MAC,    /* wrong key or altered bytes */
	WIRE_DROP_BAD_HEADER, /* authentic, but bad type, flags or sender */
	WIRE_DROP_NOT_FOR_US, /* addressed to another node */
	WIRE_DROP_MALFORMED,  /* payload does not match its type */
	WIRE_DROP_NO_SESSION, /* sender's session not established */
	WIRE_DROP_REPLAY,     /* seen, too old, or stale handshake */
	WIRE_DROP_PLAINTEXT,  /* authentic, but not encrypted where the
			       * receiver requires it (wire_open_ex) */
	WIRE_DROP_MAX
};

/* Per-socket counters (not atomic: one thread per socket). */
struct wire_stats {
	uint64_t accepted;                 /* frames handed to the caller */
	uint64_t dropped[WIRE_DROP_MAX];   /* by reason; [0] unused */
};

const char *wire_drop_name(enum wire_drop d);
const char *wire_type_name(enum wire_type t);

/* Whether hdr.flags suit the type: RESUME only on ASSIGN, MORE only on
 * the range messages (unknown bits are checked apart). */
static inline bool wire_flags_ok(uint16_t type, uint32_t flags)
{
	if ((flags & WIRE_F_RESUME) && type != WIRE_ASSIGN)
		return false;
	return !(flags & WIRE_F_MORE) || type == WIRE_PUSH ||
	       type == WIRE_PARAMS || type == WIRE_FORWARD ||
	       type == WIRE_ROWS;
}
/* Sum of all drop counters. */
uint64_t wire_stats_dropped(const struct wire_stats *st);

/* The fixed header.  On send the caller sets type, flags, dest and clock
 * (wire_msg_init does); wire_seal fills the rest (dest_session from the
 * peer table when the caller left it 0). */
struct wire_hdr {
	uint16_t version;
	uint16_t type;          /* enum wire_type */
	uint32_t flags;         /* enum wire_flags */
	struct wire_node sender;
	struct wire_node dest;  /* a node or WIRE_NODE_ALL */
	uint32_t payload_len;   /* bytes */
	uint64_t job;           /* job id */
	uint64_t session;       /* sender's random per-process session id */
	uint64_t dest_session;  /* receiver's session as the sender knows it;
				   0 for HELLO and for WIRE_NODE_ALL */
	uint64_t seq;           /* per sender, strictly increasing from 1 */
	int64_t clock;          /* sender's training clock */
};

/* float32 vectors.  To send, set .f (host floats, n of them).  A decoded
 * message sets .raw (n little-endian float32 inside the frame, maybe
 * unaligned; read with wire_f32_copy) and leaves .f NULL. */
struct wire_f32 {
	const float *f;
	const uint8_t *raw;
	uint32_t n;             /* elements */
};

/* Copy a decoded (or to-be-sent) vector into dst[v->n]. */
void wire_f32_copy(const struct wire_f32 *v, float *dst);

/* uint32 vectors (row ids), as wire_f32: .v to send, .raw decoded. */
struct wire_u32v {
	const uint32_t *v;
	const uint8_t *raw;
	uint32_t n;             /* elements */
};

/* Element i (< v->n) of a decoded or to-be-sent vector. */
uint32_t wire_u32_at(const struct wire_u32v *v, uint32_t i);

struct wire_hello {
	uint8_t nonce[WIRE_NONCE_LEN];    /* filled by wire_hello_begin */
};

struct wire_challenge {
	uint8_t echo[WIRE_NONCE_LEN];     /* the HELLO's nonce */
	uint8_t nonce[WIRE_NONCE_LEN];    /* fresh server nonce */
};

struct wire_register {
	uint8_t echo[WIRE_NONCE_LEN];     /* the CHALLENGE's nonce */
	uint8_t roles;                    /* WIRE_ROLE_* the node can take */
	uint16_t ncpu;                    /* cores */
	uint16_t ngpu;                    /* GPUs */
	uint32_t mem_mib;                 /* memory, MiB */
	char instance[WIRE_STR_MAX + 1];  /* e.g. "i-0abc...", may be "" */
	char addr[WIRE_STR_MAX + 1];      /* where it listens, may be "" */
};

/* One shard of the parameter vector and where it lives. */
struct wire_shard {
	uint32_t shard;
	struct wire_node active;          /* ActivePS (or the only PS) */
	struct wire_node backup;          /* BackupPS, WIRE_NODE_ALL if none */
	uint64_t offset;                  /* first parameter index */
	uint64_t count;                   /* parameters */
};

struct wire_assign {
	uint8_t roles;                    /* WIRE_ROLE_* to run */
	uint8_t stage;                    /* 1, 2 or 3 */
	uint16_t staleness;               /* SSP bound, clocks */
	int64_t start_clock;              /* contribute from this clock */
	uint64_t part_first;              /* data partition: first sample */
	uint64_t part_count;              /* samples */
	uint64_t nparams;                 /* model parameters in all */
	uint32_t nshards;
	const struct wire_shard *shards;
	uint16_t clock_batches;           /* minibatches in a clock, >= 1 */
};

struct wire_heartbeat {
	int64_t wall_us;                  /* sender's wall clock */
	uint32_t status;                  /* application-defined bits */
	/* a worker's progress in clock hdr.clock (0 and 0: not training) */
	uint32_t batches_done;            /* minibatches done, <= batches */
	uint32_t batches;                 /* the clock's minibatches */
	float speed;                      /* minibatches per second while
					   * training, finite, >= 0 (0:
					   * unknown) */
};

/* CLOCK: the clock's samples and, for the coordinator's goodput
 * estimate (docs/trainer.md, "Goodput and co-adaptation"), what the
 * worker's gradients measured: over its `batches` minibatches of `batch`
 * examples, the mean squared norm of one minibatch's gradient
 * (grad_sq_small) and the squared norm of their mean (grad_sq_big).
 * batches < 2: nothing measured (both 0). */
struct wire_clock {
	uint64_t samples;                 /* samples processed this clock */
	/* sparse models: what the clock's PULL_ROWS, their replies and
	 * its ROWS pushes took on the wire (frames whole, header and tag
	 * too), and the distinct rows it touched; 0 for the others */
	uint64_t row_bytes;
	uint32_t row_frames;
	uint32_t rows;
	uint32_t batch;                   /* the minibatch size trained */
	uint32_t batches;                 /* minibatches measured */
	float grad_sq_small;              /* finite, >= 0 */
	float grad_sq_big;                /* finite, >= 0 */
};

struct wire_clock_min {
	int64_t min_clock;                /* slowest worker's finished clock */
	int64_t total_clock;              /* the job's last clock as now
					   * foreseen (the lr schedule's end) */
	uint16_t staleness;               /* SSP bound, clocks */
	/* co-adaptation: the minibatch and the lr factor each worker
	 * trains its next clock with (0 and 0: the job's --batch and
	 * lr) */
	uint32_t batch;                   /* <= the job's --batch */
	float lr_scale;                   /* finite, >= 0 */
	/* ... and the minibatches of its clocks (0: the job's
	 * --clock-batches, as ASSIGN said) */
	uint16_t clock_batches;
};

/* PUSH, PARAMS and FORWARD: a chunk of a parameter range of one shard.
 * PUSH: a worker's update of a clock (added to the parameters); PARAMS:
 * parameters; FORWARD: what the parameters changed by since the last. */
struct wire_range {
	uint32_t shard;
	uint64_t offset;                  /* first index within the shard */
	int64_t clock;                    /* PUSH, FORWARD: the clock these
					   * values belong to; PARAMS: every
					   * other worker's updates up to
					   * this clock are in them */
	struct wire_f32 data;
};

struct wire_pull {
	uint32_t shard;
	uint64_t offset;
	uint64_t count;                   /* parameters wanted */
	int64_t min_clock;                /* with updates up to this clock */
};

/* Sparse ranges (matrix factorization, docs/protocol.md "Rows"): a
 * shard seen as rows of `width` floats, row k at floats [k * width,
 * (k + 1) * width) of the shard.  Row ids strictly increase (no
 * duplicates), at most WIRE_ROWS_MAX of them; data holds ids.n * width
 * floats, row by row. */
enum wire_rows_op {
	WIRE_ROWS_PARAMS = 1,             /* reply to PULL_ROWS: the rows */
	WIRE_ROWS_PUSH,                   /* worker -> ActivePS: a clock's
					   * update of those rows (added) */
	WIRE_ROWS_FORWARD,                /* ActivePS -> BackupPS: what the
					   * rows changed by (added) */
	WIRE_ROWS_OP_MAX
};

struct wire_rows {
	uint8_t op;                       /* enum wire_rows_op */
	uint32_t shard;
	uint32_t width;                   /* floats a row, 1..MAX */
	int64_t clock;                    /* as wire_range's */
	struct wire_u32v ids;             /* rows, within the shard */
	struct wire_f32 data;             /* ids.n * width floats */
};

struct wire_pull_rows {
	uint32_t shard;
	uint32_t width;                   /* floats a row, 1..MAX */
	int64_t min_clock;                /* as wire_pull's */
	struct wire_u32v ids;             /* rows wanted, within the shard */
};

struct wire_stage {
	uint8_t stage;                    /* 1, 2 or 3 */
	uint32_t epoch;                   /* stage-change number */
	int64_t at_clock;                 /* takes effect at this clock */
	uint32_t nshards;
	const struct wire_shard *shards;
};

struct wire_member {
	struct wire_node node;
	uint8_t roles;                    /* WIRE_ROLE_* */
	uint8_t state;                    /* enum wire_member_state */
	uint64_t session;                 /* its session (0: unknown) */
	uint64_t floor;                   /* its REGISTER seq */
	uint8_t leave_reason;             /* LEAVING: enum wire_leave_reason
					   * (its LEAVE's or the agent's);
					   * 0 otherwise */
	int64_t leave_deadline_us;        /* LEAVING: wall clock it will be
					   * gone; 0 otherwise */
	float speed;                      /* PROGRESS, workers: minibatches
					   * per second while training
					   * (finite, >= 0); 0 otherwise */
	uint8_t slow;                     /* PROGRESS: 1 when the
					   * coordinator counts the worker
					   * a straggler; else 0 */
	char addr[WIRE_STR_MAX + 1];
};

struct wire_membership {
	uint64_t epoch;                   /* strictly increasing */
	uint32_t n;
	const struct wire_member *members;
};

struct wire_progress {
	int64_t clock;                    /* min finished clock */
	float samples_per_s;
	float loss;
	float accuracy;                   /* 0..1; --model mf: NaN (none) */
	float train_rmse;                 /* --model mf: the training set's
					   * RMSE (loss: the test set's);
					   * NaN: not evaluated; else 0 */
	uint8_t stage;                    /* the stage the trainer runs */
	uint64_t epoch;                   /* membership epoch */
	uint64_t samples;                 /* training samples done */
	uint64_t total_samples;           /* the job's length in samples */
	int64_t total_clock;              /* last clock as now foreseen */
	/* goodput (docs/trainer.md, "Goodput and co-adaptation"): every
	 * float finite, >= 0; 0: not measured yet */
	float goodput;                    /* samples_per_s x efficiency */
	float efficiency;                 /* statistical, of the total
					   * batch, against --batch: 0..1 */
	float noise_scale;                /* gradient noise scale, samples */
	uint32_t batch;                   /* per-worker minibatch now */
	float lr_scale;                   /* lr factor now */
	uint32_t n;
	const struct wire_member *members;
};

struct wire_leave {
	int64_t deadline_us;              /* wall clock it will be gone */
	uint8_t reason;                   /* enum wire_leave_reason */
};

struct wire_shutdown {
	uint8_t reason;                   /* enum wire_shutdown_reason */
};

struct wire_command {
	uint8_t op;                       /* enum wire_command_op */
	uint8_t stage;                    /* STAGE: 1..3; else 0 */
	uint8_t roles;                    /* EXPECT: WIRE_ROLE_* allowed */
	struct wire_node node;            /* EXPECT, LEAVE: the node */
	int64_t deadline_us;              /* LEAVE: wall clock it is gone */
	uint8_t reason;                   /* LEAVE: enum wire_leave_reason
					   * (0: an eviction); else 0.  On
					   * the wire, the byte after roles */
};

/* Straggler relief (docs/trainer.md, "Stragglers"): the coordinator
 * OFFERs a straggler's last `count` minibatches of clock hdr.clock to a
 * helper; the straggler hands them over with its data stream's state
 * (HELP, to the coordinator, which passes it on to the helper); the
 * helper trains and pushes them and says DONE.  The straggler skips
 * them. */
enum wire_reassign_op {
	WIRE_REASSIGN_OFFER = 1,          /* coordinator -> straggler */
	WIRE_REASSIGN_HELP,               /* straggler -> coordinator ->
					   * helper */
	WIRE_REASSIGN_DONE,               /* helper -> coordinator */
	WIRE_REASSIGN_OP_MAX
};
#define WIRE_REASSIGN_BATCHES_MAX 65535u /* a clock's minibatches */

struct wire_reassign {
	uint8_t op;                       /* enum wire_reassign_op */
	struct wire_node straggler;
	struct wire_node helper;
	uint32_t first;                   /* HELP, DONE: the first minibatch
					   * handed over, in the clock */
	uint32_t count;                   /* minibatches, >= 1; first +
					   * count <= ..._BATCHES_MAX */
	/* HELP: the straggler's data stream at minibatch `first`: its
	 * partition [part_lo, part_hi), its rank among the holders, the
	 * pass over the partition and the position in it (pos ==
	 * part_hi - part_lo: a new pass begins) */
	uint32_t part_lo, part_hi, rank, pass, pos;
	uint32_t samples;                 /* DONE: the examples trained */
};

struct wire_ack {
	uint64_t ref_seq;                 /* seq of the frame answered */
	uint32_t status;                  /* enum px_err, 0 = ok */
	char detail[WIRE_STR_MAX + 1];
};

/* A message.  To send: wire_msg_init, fill the union member for the type,
 * then wire_seal/wire_encode (or net_send).  Pointers in the body (shards,
 * members, data.f) are borrowed during the call.  A decoded message owns
 * its shard/member arrays and borrows .raw from the frame buffer; the frame
 * is owned too when frame_free is set (net_recv does that).  Release it
 * with wire_msg_release. */
struct wire_msg {
	struct wire_hdr hdr;
	union {
		struct wire_hello hello;
		struct wire_challenge challenge;
		struct wire_register reg;
		struct wire_assign assign;
		struct wire_heartbeat heartbeat;
		struct wire_clock clock;
		struct wire_clock_min clock_min;
		struct wire_range range;      /* PUSH, PARAMS, FORWARD */
		struct wire_pull pull;
		struct wire_rows rows;
		struct wire_pull_rows pull_rows;
		struct wire_stage stage;
		struct wire_membership membership;
		struct wire_progress progress;
		struct wire_leave leave;
		struct wire_shutdown shutdown;
		struct wire_ack ack;
		struct wire_command command;
		struct wire_reassign reassign;
	} u;
	void *owned;                      /* private: decoded arrays */
	void *frame;                      /* private: frame kept alive */
	void (*frame_free)(void *frame);
};

/* Zero *m and set the header fields a sender chooses. */
void wire_msg_init(struct wire_msg *m, enum wire_type type,
		   struct wire_node dest, int64_t clock);

/* Free what a decoded message owns; *m is zeroed.  NULL is a no-op. */
void wire_msg_release(struct wire_msg *m);

/* The per-process protocol state: identity, derived key, session id,
 * sequence counter, peer table (replay windows, handshakes).  Thread-safe:
 * several sockets and threads may share one. */
struct wire_ctx;

struct wire_config {
	struct wire_node self;
	uint64_t job;                     /* job id */
	const uint8_t *job_key;           /* shared by all roles of the job */
	size_t job_key_len;               /* WIRE_JOB_KEY_MIN..MAX bytes */
	uint32_t max_peers;               /* peer table bound; 0: 1024 */
	uint64_t handshake_ttl_us;        /* nonce lifetime; 0: 30 s */
};

/* Derive the key (HKDF-SHA256), draw a random session id.  *ret is freed
 * with wire_ctx_free. */
enum px_err wire_ctx_new(const struct wire_config *cfg,
			 struct wire_ctx **ret, struct px_error *err);
void wire_ctx_free(struct wire_ctx *ctx);

struct wire_node wire_ctx_self(const struct wire_ctx *ctx);
uint64_t wire_ctx_session(const struct wire_ctx *ctx);
uint64_t wire_ctx_job(const struct wire_ctx *ctx);

/* What a context sealed and opened so far (relaxed atomics: a view for
 * reports, not for decisions). */
struct wire_counters {
	uint64_t sealed_frames;           /* frames sealed (sent) */
	uint64_t sealed_bytes;            /* their bytes, header and tag too */
	uint64_t opened_frames;           /* frames whose tag was checked */
	uint64_t opened_bytes;            /* their bytes */
	uint64_t mac_ns;                  /* time in AES-GCM (tags, and
					   * encryption where asked), both
					   * ways */
};
void wire_ctx_counters(struct wire_ctx *ctx, struct wire_counters *ret);

/* Derive the 32-byte MAC key of a job (exposed for tests and docs). */
enum px_err wire_derive_key(const uint8_t *job_key, size_t len, uint64_t job,
			    uint8_t ret_key[32], struct px_error *err);

/* Handshake helpers (see docs/protocol.md).  Each fills *m for sending and
 * remembers the nonce it drew, so that only the matching answer, once and
 * within the TTL, establishes a session.  now_us is monotonic. */
enum px_err wire_hello_begin(struct wire_ctx *ctx, struct wire_node dest,
			     uint64_t now_us, struct wire_msg *m,
			     struct px_error *err);
enum px_err wire_challenge_begin(struct wire_ctx *ctx,
				 const struct wire_msg *hello,
				 uint64_t now_us, struct wire_msg *m,
				 struct px_error *err);
/* Fills type, dest and echo; the caller fills the rest of m->u.reg. */
void wire_register_begin(const struct wire_msg *challenge,
			 struct wire_msg *m);

/* Trust a session learned from an accepted MEMBERSHIP message: frames of
 * (node, session) with seq > floor are then accepted.  Keeps the current
 * window when the session is unchanged. */
enum px_err wire_peer_install(struct wire_ctx *ctx, struct wire_node node,
			      uint64_t session, uint64_t floor,
			      uint64_t now_us);
/* Apply an accepted MEMBERSHIP message: install each member's session
 * unless its epoch is not newer than the last one applied (then PX_EEXIST,
 * nothing changes).  The receiver's own entry is skipped. */
enum px_err wire_membership_apply(struct wire_ctx *ctx,
				  const struct wire_msg *m, uint64_t now_us);
/* Forget a peer (it left or was declared lost). */
void wire_peer_forget(struct wire_ctx *ctx, struct wire_node node);
/* Whether a session with node is established. */
bool wire_peer_known(struct wire_ctx *ctx, struct wire_node node);

/* Payload bytes m would take, after checking its fields (counts, strings,
 * enums) and the bound; PX_EINVAL or PX_ETOOBIG otherwise. */
enum px_err wire_payload_size(const struct wire_msg *m, size_t max_payload,
			      size_t *ret, struct px_error *err);

/* Seal m into buf[len] (len >= WIRE_OVERHEAD + payload size): fills the
 * header (sender, job, session, next seq; written back into m->hdr),
 * the payload and the MAC.  With WIRE_F_ENC in m->hdr.flags the payload
 * is encrypted (AES-256-GCM), else only authenticated (GMAC); the nonce
 * is the fresh seq either way.  *ret_len is the frame length. */
enum px_err wire_seal(struct wire_ctx *ctx, struct wire_msg *m,
		      size_t max_payload, uint8_t *buf, size_t len,
		      size_t *ret_len, struct px_error *err);

/* Recompute the tag of a frame ctx sealed (its sender and session are
 * ctx's) after its bytes were changed: tests and fuzzing build frames
 * that authenticate whatever they hold.  A frame with WIRE_F_ENC keeps
 * its payload bytes as they are (taken as ciphertext).  It reuses the
 * frame's nonce: never for frames that are sent.  PX_EINVAL when buf is
 * no frame of ctx's. */
enum px_err wire_retag(struct wire_ctx *ctx, uint8_t *buf, size_t len);

/* wire_seal into a malloc'd buffer the caller frees. */
enum px_err wire_encode(struct wire_ctx *ctx, struct wire_msg *m,
			size_t max_payload, uint8_t **ret_buf,
			size_t *ret_len, struct px_error *err);

/* Verify and decode one frame: size, magic, version, job, MAC, header,
 * payload, then session and replay (which it records).  Returns PX_OK with
 * *ret filled (it borrows buf: keep buf alive until wire_msg_release), or
 * PX_EPROTO with *ret_drop set and st->dropped counted (st may be NULL),
 * or PX_ENOMEM.  An encrypted payload (WIRE_F_ENC) is decrypted in place:
 * buf is written, and after a drop its payload bytes may be garbage.
 * Accepts frames with and without WIRE_F_ENC.  Never reads or writes
 * outside buf[len]. */
enum px_err wire_open(struct wire_ctx *ctx, uint8_t *buf, size_t len,
		      size_t max_payload, uint64_t now_us,
		      struct wire_stats *st, struct wire_msg *ret,
		      enum wire_drop *ret_drop);
/* wire_open; with need_enc, an authentic frame without WIRE_F_ENC is
 * dropped as WIRE_DROP_PLAINTEXT (what a socket whose frames cross the
 * network requires: net_recv). */
enum px_err wire_open_ex(struct wire_ctx *ctx, uint8_t *buf, size_t len,
			 size_t max_payload, uint64_t now_us, bool need_enc,
			 struct wire_stats *st, struct wire_msg *ret,
			 enum wire_drop *ret_drop);

/* Most floats one PUSH/PARAMS/FORWARD chunk may carry under a bound. */
uint32_t wire_range_chunk(size_t max_payload);
/* Most rows of `width` floats one ROWS frame may carry under a bound
 * (at most WIRE_ROWS_MAX; 0 when width is out of bounds). */
uint32_t wire_rows_chunk(size_t max_payload, uint32_t width);

#endif
