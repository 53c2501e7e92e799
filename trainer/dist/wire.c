/* wire.c -- frames of the trainer protocol: encode, seal (AES-256-GCM
 * under a key per sender session: GMAC, or the payload encrypted),
 * verify, decrypt, decode, and the per-sender replay windows and
 * handshakes.
 *
 * Integers are written byte by byte (little-endian on any host); floats
 * are IEEE-754 float32, copied as-is on little-endian hosts.
 */
#include "wire.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

#if !defined(__BYTE_ORDER__) || !defined(__ORDER_LITTLE_ENDIAN__)
#error "wire.c needs __BYTE_ORDER__ to place float32 bytes"
#endif

#define KEY_LEN 32
#define HKDF_SALT "proteus/wire/v3"     /* binds the protocol version */
#define HKDF_INFO "proteus job mac key"
#define FRAME_INFO "proteus frame key"  /* a sender session's key */
#define NONCE_LEN 12                    /* GCM's IV: seq, then zeros */
#define DEFAULT_PEERS 1024
#define MAX_PEERS 65536
#define DEFAULT_TTL_US (30 * PX_USEC_PER_SEC)

/* Fixed payload sizes (bytes) before variable parts. */
#define SHARD_LEN 32   /* bytes of a shard (shard_f) */
#define MEMBER_MIN 37  /* bytes of a member with an empty addr (member_f) */

struct peer {
	bool used;
	bool live;              /* session established */
	bool hello_pending;     /* we sent HELLO, wait for CHALLENGE */
	bool chal_pending;      /* we sent CHALLENGE, wait for REGISTER */
	bool direct;            /* session from a handshake with us (not
				   from MEMBERSHIP): may send to all */
	struct wire_node node;
	uint64_t session;
	uint64_t floor;         /* seqs <= floor are refused */
	uint64_t max;           /* highest seq accepted */
	uint64_t bits[WIRE_WINDOW / 64]; /* seq s in window: bit s % W */
	uint8_t hello_nonce[WIRE_NONCE_LEN];
	uint8_t chal_nonce[WIRE_NONCE_LEN];
	uint64_t hello_deadline_us;
	uint64_t chal_deadline_us;
	uint64_t last_us;       /* last use, monotonic, for eviction */
	uint64_t key_session;   /* fkey is this session's frame key ... */
	bool key_ok;            /* ... when set */
	uint8_t fkey[KEY_LEN];
};

/* What one tag computation needs (an EVP context set to AES-256-GCM and
 * the key last given to it); the context keeps a few for its threads. */
struct tagger {
	EVP_CIPHER_CTX *c;
	uint8_t key[KEY_LEN];
	bool keyed;
	struct tagger *next;    /* in the pool */
};

struct wire_ctx {
	struct wire_node self;
	uint64_t job;
	uint64_t session;
	uint8_t key[KEY_LEN];   /* the job's MAC key (HKDF) */
	uint8_t fkey[KEY_LEN];  /* this session's frame key */
	_Atomic uint64_t seq;   /* last seq used */
	pthread_mutex_t pool_lock; /* guards pool */
	struct tagger *pool;    /* idle taggers */
	/* struct wire_counters, relaxed */
	_Atomic uint64_t n_sealed, b_sealed, n_opened, b_opened, mac_ns;
	uint64_t ttl_us;
	pthread_mutex_t lock;   /* guards everything below */
	bool have_epoch;
	uint64_t member_epoch;
	uint32_t npeers;
	struct peer *peers;
};

static const char *const drop_names[WIRE_DROP_MAX] = {
	[WIRE_DROP_NONE] = "none",
	[WIRE_DROP_TOO_SHORT] = "too_short",
	[WIRE_DROP_TOO_BIG] = "too_big",
	[WIRE_DROP_BAD_MAGIC] = "bad_magic",
	[WIRE_DROP_BAD_VERSION] = "bad_version",
	[WIRE_DROP_BAD_JOB] = "bad_job",
	[WIRE_DROP_BAD_MAC] = "bad_mac",
	[WIRE_DROP_BAD_HEADER] = "bad_header",
	[WIRE_DROP_NOT_FOR_US] = "not_for_us",
	[WIRE_DROP_MALFORMED] = "malformed",
	[WIRE_DROP_NO_SESSION] = "no_session",
	[WIRE_DROP_REPLAY] = "replay",
	[WIRE_DROP_PLAINTEXT] = "plaintext",
};

static const char *const type_names[WIRE_TYPE_MAX] = {
#define TYPE_NAME(name, num, what) [WIRE_##name] = #name,
	WIRE_TYPES(TYPE_NAME)
#undef TYPE_NAME
};

const char *wire_drop_name(enum wire_drop d)
{
	if ((unsigned)d >= WIRE_DROP_MAX)
		return "unknown";
	return drop_names[d];
}

const char *wire_type_name(enum wire_type t)
{
	if ((unsigned)t >= WIRE_TYPE_MAX || !type_names[t])
		return "unknown";
	return type_names[t];
}

uint64_t wire_stats_dropped(const struct wire_stats *st)
{
	uint64_t n = 0;

	for (int i = 1; i < WIRE_DROP_MAX; i++)
		n += st->dropped[i];
	return n;
}

/* ---- little-endian writer and bounded reader ---- */

struct wr {
	uint8_t *p;
	size_t left;
	bool bad;
};

static void put_bytes(struct wr *w, const void *src, size_t n)
{
	if (w->bad || n > w->left) {
		w->bad = true;
		return;
	}
	if (n)
		memcpy(w->p, src, n);
	w->p += n;
	w->left -= n;
}

static void put_le(struct wr *w, uint64_t v, size_t n)
{
	uint8_t b[8];

	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put_bytes(w, b, n);
}

static void put_u8(struct wr *w, uint8_t v) { put_le(w, v, 1); }
static void put_u16(struct wr *w, uint16_t v) { put_le(w, v, 2); }
static void put_u32(struct wr *w, uint32_t v) { put_le(w, v, 4); }
static void put_u64(struct wr *w, uint64_t v) { put_le(w, v, 8); }
static void put_i64(struct wr *w, int64_t v) { put_le(w, (uint64_t)v, 8); }

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
static void put_f32(struct wr *w, float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	put_u32(w, u);
}
#endif

static void put_str(struct wr *w, const char *s)
{
	size_t n = strnlen(s, WIRE_STR_MAX + 1);

	put_u8(w, (uint8_t)n);
	put_bytes(w, s, n);
}

static void put_f32v(struct wr *w, const float *f, uint32_t n)
{
	size_t bytes = (size_t)n * 4;

	if (w->bad || bytes > w->left) {
		w->bad = true;
		return;
	}
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (bytes)
		memcpy(w->p, f, bytes);
	w->p += bytes;
	w->left -= bytes;
#else
	for (uint32_t i = 0; i < n; i++)
		put_f32(w, f[i]);
#endif
}

struct rd {
	const uint8_t *p;
	size_t left;
	bool bad;
};

static const uint8_t *get_bytes(struct rd *r, size_t n)
{
	const uint8_t *p;

	if (r->bad || n > r->left) {
		r->bad = true;
		return NULL;
	}
	p = r->p;
	r->p += n;
	r->left -= n;
	return p;
}

static uint64_t get_le(struct rd *r, size_t n)
{
	const uint8_t *b = get_bytes(r, n);
	uint64_t v = 0;

	if (!b)
		return 0;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

static uint8_t get_u8(struct rd *r) { return (uint8_t)get_le(r, 1); }
static uint16_t get_u16(struct rd *r) { return (uint16_t)get_le(r, 2); }
static uint32_t get_u32(struct rd *r) { return (uint32_t)get_le(r, 4); }
static uint64_t get_u64(struct rd *r) { return get_le(r, 8); }
static int64_t get_i64(struct rd *r) { return (int64_t)get_le(r, 8); }

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
static float get_f32(struct rd *r)
{
	uint32_t u = get_u32(r);
	float f;

	memcpy(&f, &u, 4);
	return f;
}
#endif

/* A zero field (padding); anything else makes the payload malformed. */
static void get_zero(struct rd *r, size_t n)
{
	const uint8_t *b = get_bytes(r, n);

	for (size_t i = 0; b && i < n; i++)
		if (b[i])
			r->bad = true;
}

static void get_str(struct rd *r, char dst[WIRE_STR_MAX + 1])
{
	uint8_t n = get_u8(r);
	const uint8_t *b;

	dst[0] = '\0';
	if (n > WIRE_STR_MAX) {
		r->bad = true;
		return;
	}
	b = get_bytes(r, n);
	if (!b)
		return;
	memcpy(dst, b, n);
	dst[n] = '\0'; /* printable or not: fields_check judges */
}

void wire_f32_copy(const struct wire_f32 *v, float *dst)
{
	if (v->f) {
		memcpy(dst, v->f, (size_t)v->n * 4);
		return;
	}
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (v->n)
		memcpy(dst, v->raw, (size_t)v->n * 4);
#else
	struct rd r = { v->raw, (size_t)v->n * 4, false };

	for (uint32_t i = 0; i < v->n; i++)
		dst[i] = get_f32(&r);
#endif
}

uint32_t wire_u32_at(const struct wire_u32v *v, uint32_t i)
{
	const uint8_t *b;

	if (v->v)
		return v->v[i];
	b = v->raw + (size_t)i * 4;
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

/* ---- messages ---- */

void wire_msg_init(struct wire_msg *m, enum wire_type type,
		   struct wire_node dest, int64_t clock)
{
	memset(m, 0, sizeof(*m));
	m->hdr.version = WIRE_VERSION;
	m->hdr.type = (uint16_t)type;
	m->hdr.dest = dest;
	m->hdr.clock = clock;
}

void wire_msg_release(struct wire_msg *m)
{
	if (!m)
		return;
	free(m->owned);
	if (m->frame && m->frame_free)
		m->frame_free(m->frame);
	memset(m, 0, sizeof(*m));
}

uint32_t wire_range_chunk(size_t max_payload)
{
	size_t n;

	if (max_payload <= WIRE_RANGE_PREFIX)
		return 0;
	n = (max_payload - WIRE_RANGE_PREFIX) / 4;
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

uint32_t wire_rows_chunk(size_t max_payload, uint32_t width)
{
	size_t n;

	if (width < 1 || width > WIRE_ROW_WIDTH_MAX ||
	    max_payload <= WIRE_ROWS_PREFIX)
		return 0;
	n = (max_payload - WIRE_ROWS_PREFIX) / (4 * ((size_t)width + 1));
	return n > WIRE_ROWS_MAX ? WIRE_ROWS_MAX : (uint32_t)n;
}

/* ---- the message table ----
 *
 * Each message type's payload is one list of fields, in wire order
 * (docs/protocol.md, "Message types").  The same list sizes, writes,
 * reads and checks it: field_check is the only judge of a field's value,
 * for a frame being sealed and for one just opened, and a type's `check`
 * adds what involves two fields. */

/* What a field is on the wire. */
enum fkind {
	F_U8, F_U16, F_U32, F_U64, F_I64, F_F32,
	F_PAD,     /* arg bytes that must be zero */
	F_NONCE,   /* WIRE_NONCE_LEN bytes */
	F_STR,     /* length byte (<= WIRE_STR_MAX), printable ASCII */
	F_ROLES,   /* u8, a mask within WIRE_ROLE_ALL */
	F_ENUM,    /* u8 in 1 .. arg - 1 */
	F_COUNT,   /* u32: the length of the array or floats that end it */
	F_SHARDS,  /* count shards (32 bytes each), the payload's end */
	F_MEMBERS, /* count members (32 bytes + addr each), the end */
	F_FLOATS,  /* count float32, the end (struct wire_f32) */
	F_U32S     /* count uint32 (struct wire_u32v), at most
		    * WIRE_ROWS_MAX */
};

struct field {
	const char *name;  /* as in error messages */
	uint8_t kind;      /* enum fkind */
	uint8_t arg;       /* F_PAD: bytes; F_ENUM: its _MAX */
	uint16_t off;      /* offset of the value in the described struct */
	uint16_t cnt;      /* arrays: offset of their uint32_t count */
};

struct layout {
	const struct field *f;
	uint8_t n;
	/* checks between fields; NULL: none.  Returns the bad field's
	 * name, NULL when fine. */
	const char *(*check)(const struct wire_msg *m);
};

#define NF(a) ((uint8_t)(sizeof(a) / sizeof((a)[0])))
#define MOFF(path) ((uint16_t)offsetof(struct wire_msg, u.path))
#define FM(kind, arg, name, member) \
	{ #name, kind, arg, MOFF(member.name), 0 }
#define FA(kind, name, member, count) \
	{ #name, kind, 0, MOFF(member.name), MOFF(member.count) }
#define FE(kind, arg, type, name, field)                                     \
	{ #name, kind, arg, (uint16_t)offsetof(type, field), 0 }
#define PAD(n) { "pad", F_PAD, n, 0, 0 }

static const struct field shard_f[] = {
	FE(F_U32, 0, struct wire_shard, shard, shard),
	FE(F_U32, 0, struct wire_shard, active, active.v),
	FE(F_U32, 0, struct wire_shard, backup, backup.v),
	PAD(4),
	FE(F_U64, 0, struct wire_shard, offset, offset),
	FE(F_U64, 0, struct wire_shard, count, count),
};

static const struct field member_f[] = {
	FE(F_U32, 0, struct wire_member, node, node.v),
	FE(F_ROLES, 0, struct wire_member, roles, roles),
	FE(F_ENUM, WIRE_MEMBER_STATE_MAX, struct wire_member, state, state),
	FE(F_U64, 0, struct wire_member, session, session),
	FE(F_U64, 0, struct wire_member, floor, floor),
	FE(F_U8, 0, struct wire_member, leave_reason, leave_reason),
	FE(F_I64, 0, struct wire_member, leave_deadline, leave_deadline_us),
	FE(F_F32, 0, struct wire_member, speed, speed),
	FE(F_U8, 0, struct wire_member, slow, slow),
	FE(F_STR, 0, struct wire_member, addr, addr),
};

#define STAGE_END 4 /* stages are 1..3 */

static const struct field hello_f[] = { FM(F_NONCE, 0, nonce, hello) };
static const struct field challenge_f[] = {
	FM(F_NONCE, 0, echo, challenge), FM(F_NONCE, 0, nonce, challenge),
};
static const struct field register_f[] = {
	FM(F_NONCE, 0, echo, reg), FM(F_U32, 0, mem_mib, reg),
	FM(F_U16, 0, ncpu, reg), FM(F_U16, 0, ngpu, reg),
	FM(F_ROLES, 0, roles, reg), FM(F_STR, 0, instance, reg),
	FM(F_STR, 0, addr, reg),
};
static const struct field assign_f[] = {
	FM(F_ROLES, 0, roles, assign), FM(F_ENUM, STAGE_END, stage, assign),
	FM(F_U16, 0, staleness, assign), FM(F_COUNT, 0, nshards, assign),
	FM(F_I64, 0, start_clock, assign), FM(F_U64, 0, part_first, assign),
	FM(F_U64, 0, part_count, assign), FM(F_U64, 0, nparams, assign),
	FM(F_U16, 0, clock_batches, assign), PAD(6),
	FA(F_SHARDS, shards, assign, nshards),
};
static const struct field heartbeat_f[] = {
	FM(F_I64, 0, wall_us, heartbeat), FM(F_U32, 0, status, heartbeat),
	FM(F_U32, 0, batches_done, heartbeat),
	FM(F_U32, 0, batches, heartbeat), FM(F_F32, 0, speed, heartbeat),
};
static const struct field clock_f[] = {
	FM(F_U64, 0, samples, clock), FM(F_U64, 0, row_bytes, clock),
	FM(F_U32, 0, row_frames, clock), FM(F_U32, 0, rows, clock),
	FM(F_U32, 0, batch, clock), FM(F_U32, 0, batches, clock),
	FM(F_F32, 0, grad_sq_small, clock), FM(F_F32, 0, grad_sq_big, clock),
};
static const struct field clock_min_f[] = {
	FM(F_I64, 0, min_clock, clock_min),
	FM(F_I64, 0, total_clock, clock_min),
	FM(F_U16, 0, staleness, clock_min),
	FM(F_U16, 0, clock_batches, clock_min),
	FM(F_U32, 0, batch, clock_min), FM(F_F32, 0, lr_scale, clock_min),
};
static const struct field range_f[] = {
	FM(F_U32, 0, shard, range),
	{ "count", F_COUNT, 0, MOFF(range.data.n), 0 },
	FM(F_U64, 0, offset, range), FM(F_I64, 0, clock, range), PAD(8),
	{ "data", F_FLOATS, 0, MOFF(range.data), MOFF(range.data.n) },
};
static const struct field pull_f[] = {
	FM(F_U32, 0, shard, pull), PAD(4), FM(F_U64, 0, offset, pull),
	FM(F_U64, 0, count, pull), FM(F_I64, 0, min_clock, pull),
};
static const struct field stage_f[] = {
	FM(F_ENUM, STAGE_END, stage, stage), PAD(3), FM(F_U32, 0, epoch, stage),
	FM(F_I64, 0, at_clock, stage), FM(F_COUNT, 0, nshards, stage),
	FA(F_SHARDS, shards, stage, nshards),
};
static const struct field membership_f[] = {
	FM(F_U64, 0, epoch, membership), FM(F_COUNT, 0, n, membership),
	FA(F_MEMBERS, members, membership, n),
};
static const struct field progress_f[] = {
	FM(F_I64, 0, clock, progress), FM(F_F32, 0, samples_per_s, progress),
	FM(F_F32, 0, loss, progress), FM(F_F32, 0, accuracy, progress),
	FM(F_F32, 0, train_rmse, progress),
	FM(F_ENUM, STAGE_END, stage, progress), PAD(3),
	FM(F_U64, 0, epoch, progress), FM(F_U64, 0, samples, progress),
	FM(F_U64, 0, total_samples, progress),
	FM(F_I64, 0, total_clock, progress),
	FM(F_F32, 0, goodput, progress), FM(F_F32, 0, efficiency, progress),
	FM(F_F32, 0, noise_scale, progress), FM(F_U32, 0, batch, progress),
	FM(F_F32, 0, lr_scale, progress), FM(F_COUNT, 0, n, progress),
	FA(F_MEMBERS, members, progress, n),
};
static const struct field leave_f[] = {
	FM(F_I64, 0, deadline_us, leave),
	FM(F_ENUM, WIRE_LEAVE_REASON_MAX, reason, leave),
};
static const struct field shutdown_f[] = {
	FM(F_ENUM, WIRE_SHUTDOWN_REASON_MAX, reason, shutdown),
};
static const struct field ack_f[] = {
	FM(F_U64, 0, ref_seq, ack), FM(F_U32, 0, status, ack),
	FM(F_STR, 0, detail, ack),
};
static const struct field command_f[] = {
	FM(F_U8, 0, op, command), FM(F_U8, 0, stage, command),
	FM(F_U8, 0, roles, command), FM(F_U8, 0, reason, command),
	FM(F_U32, 0, node.v, command),
	FM(F_I64, 0, deadline_us, command),
};

static const struct field reassign_f[] = {
	FM(F_ENUM, WIRE_REASSIGN_OP_MAX, op, reassign), PAD(3),
	FM(F_U32, 0, straggler.v, reassign), FM(F_U32, 0, helper.v, reassign),
	FM(F_U32, 0, first, reassign), FM(F_U32, 0, count, reassign),
	FM(F_U32, 0, part_lo, reassign), FM(F_U32, 0, part_hi, reassign),
	FM(F_U32, 0, rank, reassign), FM(F_U32, 0, pass, reassign),
	FM(F_U32, 0, pos, reassign), FM(F_U32, 0, samples, reassign),
};

/* ROWS: op, pad, shard, width, the ids' count, clock, the floats'
 * count, pad, ids, floats (WIRE_ROWS_PREFIX bytes before the ids). */
static const struct field rows_f[] = {
	FM(F_ENUM, WIRE_ROWS_OP_MAX, op, rows), PAD(3), FM(F_U32, 0, shard, rows),
	FM(F_U32, 0, width, rows),
	{ "rows", F_COUNT, 0, MOFF(rows.ids.n), 0 },
	FM(F_I64, 0, clock, rows),
	{ "count", F_COUNT, 0, MOFF(rows.data.n), 0 }, PAD(4),
	{ "ids", F_U32S, 0, MOFF(rows.ids), MOFF(rows.ids.n) },
	{ "data", F_FLOATS, 0, MOFF(rows.data), MOFF(rows.data.n) },
};
static const struct field pull_rows_f[] = {
	FM(F_U32, 0, shard, pull_rows), FM(F_U32, 0, width, pull_rows),
	{ "rows", F_COUNT, 0, MOFF(pull_rows.ids.n), 0 }, PAD(4),
	FM(F_I64, 0, min_clock, pull_rows),
	{ "ids", F_U32S, 0, MOFF(pull_rows.ids), MOFF(pull_rows.ids.n) },
};

static bool range_ok(uint64_t offset, uint64_t count)
{
	return offset <= UINT64_MAX - count;
}

static const char *assign_check(const struct wire_msg *m)
{
	if (m->u.assign.clock_batches == 0)
		return "clock_batches";
	return range_ok(m->u.assign.part_first, m->u.assign.part_count)
		       ? NULL : "part_count";
}

static const char *range_check(const struct wire_msg *m)
{
	return range_ok(m->u.range.offset, m->u.range.data.n) ? NULL
							       : "offset";
}

static const char *pull_check(const struct wire_msg *m)
{
	return range_ok(m->u.pull.offset, m->u.pull.count) ? NULL : "offset";
}

/* Row ids: strictly increasing (so a row is added once), a width in
 * bounds; NULL or the bad field's name. */
static const char *ids_check(const struct wire_u32v *ids, uint32_t width)
{
	if (width < 1 || width > WIRE_ROW_WIDTH_MAX)
		return "width";
	for (uint32_t i = 1; i < ids->n; i++)
		if (wire_u32_at(ids, i) <= wire_u32_at(ids, i - 1))
			return "ids";
	return NULL;
}

/* ROWS: the floats are the rows' (ids.n * width of them). */
static const char *rows_check(const struct wire_msg *m)
{
	const struct wire_rows *r = &m->u.rows;
	const char *bad = ids_check(&r->ids, r->width);

	if (bad)
		return bad;
	return (uint64_t)r->ids.n * r->width == r->data.n ? NULL : "count";
}

static const char *pull_rows_check(const struct wire_msg *m)
{
	return ids_check(&m->u.pull_rows.ids, m->u.pull_rows.width);
}

/* A speed: finite, not negative. */
static bool speed_ok(float v)
{
	return isfinite(v) && v >= 0.0f;
}

/* HEARTBEAT: no more minibatches done than the clock has. */
static const char *heartbeat_check(const struct wire_msg *m)
{
	const struct wire_heartbeat *h = &m->u.heartbeat;

	if (h->batches_done > h->batches)
		return "batches_done";
	return speed_ok(h->speed) ? NULL : "speed";
}

/* MEMBERSHIP, PROGRESS: each member's speed and slow mark. */
static const char *members_check(const struct wire_member *a, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (!speed_ok(a[i].speed))
			return "member speed";
		if (a[i].slow > 1)
			return "member slow";
	}
	return NULL;
}

static const char *membership_check(const struct wire_msg *m)
{
	return members_check(m->u.membership.members, m->u.membership.n);
}

/* PROGRESS: the goodput figures, then the members. */
static const char *progress_check(const struct wire_msg *m)
{
	const struct wire_progress *p = &m->u.progress;

	if (!speed_ok(p->goodput))
		return "goodput";
	if (!speed_ok(p->efficiency) || p->efficiency > 1.0f)
		return "efficiency";
	if (!speed_ok(p->noise_scale))
		return "noise_scale";
	if (!speed_ok(p->lr_scale))
		return "lr_scale";
	return members_check(p->members, p->n);
}

/* CLOCK: squared norms finite, not negative; none without two
 * minibatches measured. */
static const char *clock_check(const struct wire_msg *m)
{
	const struct wire_clock *c = &m->u.clock;

	if (!speed_ok(c->grad_sq_small) ||
	    (c->batches < 2 && c->grad_sq_small != 0.0f))
		return "grad_sq_small";
	if (!speed_ok(c->grad_sq_big) ||
	    (c->batches < 2 && c->grad_sq_big != 0.0f))
		return "grad_sq_big";
	return NULL;
}

static const char *clock_min_check(const struct wire_msg *m)
{
	return speed_ok(m->u.clock_min.lr_scale) ? NULL : "lr_scale";
}

/* REASSIGN: a straggler and a helper, two nodes; 1 ..
 * WIRE_REASSIGN_BATCHES_MAX minibatches from `first` on; HELP's stream
 * inside its partition. */
static const char *reassign_check(const struct wire_msg *m)
{
	const struct wire_reassign *r = &m->u.reassign;

	if (wire_node_eq(r->straggler, r->helper))
		return "helper";
	if (r->count < 1 || r->count > WIRE_REASSIGN_BATCHES_MAX ||
	    r->first > WIRE_REASSIGN_BATCHES_MAX - r->count)
		return "count";
	if (r->part_lo > r->part_hi)
		return "part_hi";
	if (r->pos > r->part_hi - r->part_lo)
		return "pos";
	if (r->op == WIRE_REASSIGN_HELP && r->part_lo == r->part_hi)
		return "part_hi";
	return NULL;
}

/* COMMAND: a known op; STAGE names a stage 1..3, the others none; roles
 * within the mask, only on EXPECT; a leave reason only on LEAVE. */
static const char *command_check(const struct wire_msg *m)
{
	const struct wire_command *c = &m->u.command;

	if (c->op == 0 || c->op >= WIRE_CMD_OP_MAX)
		return "op";
	if (c->roles & ~WIRE_ROLE_ALL ||
	    (c->roles && c->op != WIRE_CMD_EXPECT))
		return "roles";
	if (c->op == WIRE_CMD_STAGE ? c->stage < 1 || c->stage > 3
				    : c->stage != 0)
		return "stage";
	if (c->reason >= WIRE_LEAVE_REASON_MAX ||
	    (c->reason && c->op != WIRE_CMD_LEAVE))
		return "reason";
	return NULL;
}

static const struct layout layouts[WIRE_TYPE_MAX] = {
	[WIRE_HELLO] = { hello_f, NF(hello_f), NULL },
	[WIRE_CHALLENGE] = { challenge_f, NF(challenge_f), NULL },
	[WIRE_REGISTER] = { register_f, NF(register_f), NULL },
	[WIRE_ASSIGN] = { assign_f, NF(assign_f), assign_check },
	[WIRE_HEARTBEAT] = { heartbeat_f, NF(heartbeat_f), heartbeat_check },
	[WIRE_CLOCK] = { clock_f, NF(clock_f), clock_check },
	[WIRE_CLOCK_MIN] = { clock_min_f, NF(clock_min_f), clock_min_check },
	[WIRE_PUSH] = { range_f, NF(range_f), range_check },
	[WIRE_PULL] = { pull_f, NF(pull_f), pull_check },
	[WIRE_PARAMS] = { range_f, NF(range_f), range_check },
	[WIRE_FORWARD] = { range_f, NF(range_f), range_check },
	[WIRE_STAGE] = { stage_f, NF(stage_f), NULL },
	[WIRE_MEMBERSHIP] = { membership_f, NF(membership_f),
			       membership_check },
	[WIRE_PROGRESS] = { progress_f, NF(progress_f), progress_check },
	[WIRE_LEAVE] = { leave_f, NF(leave_f), NULL },
	[WIRE_SHUTDOWN] = { shutdown_f, NF(shutdown_f), NULL },
	[WIRE_ACK] = { ack_f, NF(ack_f), NULL },
	[WIRE_COMMAND] = { command_f, NF(command_f), command_check },
	[WIRE_REASSIGN] = { reassign_f, NF(reassign_f), reassign_check },
	[WIRE_PULL_ROWS] = { pull_rows_f, NF(pull_rows_f), pull_rows_check },
	[WIRE_ROWS] = { rows_f, NF(rows_f), rows_check },
};

static const struct layout *layout_of(uint16_t type)
{
	if (type >= WIRE_TYPE_MAX || !layouts[type].f)
		return NULL;
	return &layouts[type];
}

/* Bytes of a fixed-size field (0 for strings and arrays). */
static size_t fixed_size(const struct field *f)
{
	static const uint8_t sz[] = {
		[F_U8] = 1, [F_U16] = 2, [F_U32] = 4, [F_U64] = 8, [F_I64] = 8,
		[F_F32] = 4, [F_NONCE] = WIRE_NONCE_LEN, [F_ROLES] = 1,
		[F_ENUM] = 1, [F_COUNT] = 4,
	};

	if (f->kind == F_PAD)
		return f->arg;
	return f->kind < sizeof(sz) ? sz[f->kind] : 0;
}

#define AT(base, off, type) ((type *)(void *)((char *)(base) + (off)))
#define CAT(base, off, type) \
	((const type *)(const void *)((const char *)(base) + (off)))

/* A fixed-size field's value as an integer (a float's bits), and back:
 * copied, as the struct member's type may be a float or a struct. */
static uint64_t get_uint(const void *base, const struct field *f)
{
	const char *p = (const char *)base + f->off;
	uint8_t v8;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	switch (fixed_size(f)) {
	case 1:
		memcpy(&v8, p, 1);
		return v8;
	case 2:
		memcpy(&v16, p, 2);
		return v16;
	case 4:
		memcpy(&v32, p, 4);
		return v32;
	default:
		memcpy(&v64, p, 8);
		return v64;
	}
}

static void set_uint(void *base, const struct field *f, uint64_t v)
{
	char *p = (char *)base + f->off;
	uint8_t v8 = (uint8_t)v;
	uint16_t v16 = (uint16_t)v;
	uint32_t v32 = (uint32_t)v;

	switch (fixed_size(f)) {
	case 1:
		memcpy(p, &v8, 1);
		break;
	case 2:
		memcpy(p, &v16, 2);
		break;
	case 4:
		memcpy(p, &v32, 4);
		break;
	default:
		memcpy(p, &v, 8);
	}
}

/* An array field's pointer (a const struct wire_shard * or a const
 * struct wire_member *), read and written as bytes. */
static const void *get_ptr(const void *base, const struct field *f)
{
	const void *a;

	memcpy(&a, (const char *)base + f->off, sizeof(a));
	return a;
}

static void set_ptr(void *base, const struct field *f, const void *a)
{
	memcpy((char *)base + f->off, &a, sizeof(a));
}

static bool printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

static bool str_ok(const char *s)
{
	size_t n = strnlen(s, WIRE_STR_MAX + 1);

	return n <= WIRE_STR_MAX && printable(s, n);
}

static const char *fields_check(const struct field *f, uint8_t n,
				const void *base, size_t *ret_var);

/* Check one array element by element; adds its bytes to *var. */
static const char *array_check(const struct field *f, const void *base,
			       size_t *var)
{
	uint32_t n = *CAT(base, f->cnt, uint32_t);
	const void *a = get_ptr(base, f);
	bool shards = f->kind == F_SHARDS;
	const char *bad;

	*var += (size_t)n * (shards ? SHARD_LEN : MEMBER_MIN - 1);

	if (n > (shards ? WIRE_SHARDS_MAX : WIRE_MEMBERS_MAX))
		return f->name; /* too many: PX_ETOOBIG */
	if (n && !a)
		return "array";
	for (uint32_t i = 0; i < n; i++) {
		if (shards) {
			const struct wire_shard *s =
				(const struct wire_shard *)a + i;

			bad = fields_check(shard_f, NF(shard_f), s, var);
			if (!bad && !range_ok(s->offset, s->count))
				bad = "shard count";
		} else {
			bad = fields_check(member_f, NF(member_f),
					   (const struct wire_member *)a + i,
					   var);
		}
		if (bad)
			return bad;
	}
	return NULL;
}

/* The one judge of field values: a mask, an enum, a string, an array's
 * count and elements; NULL when fine, else the first bad field's name.
 * *ret_var grows by the bytes of strings and arrays. */
static const char *fields_check(const struct field *f, uint8_t n,
				const void *base, size_t *ret_var)
{
	for (uint8_t i = 0; i < n; i++, f++) {
		const char *bad;
		uint64_t v;

		switch (f->kind) {
		case F_ROLES:
			if (get_uint(base, f) & ~(uint64_t)WIRE_ROLE_ALL)
				return f->name;
			break;
		case F_ENUM:
			v = get_uint(base, f);
			if (v == 0 || v >= f->arg)
				return f->name;
			break;
		case F_STR:
			if (!str_ok(CAT(base, f->off, char)))
				return f->name;
			*ret_var += 1 + strlen(CAT(base, f->off, char));
			break;
		case F_SHARDS:
		case F_MEMBERS:
			bad = array_check(f, base, ret_var);
			if (bad)
				return bad;
			break;
		case F_FLOATS: {
			const struct wire_f32 *d = CAT(base, f->off,
						       struct wire_f32);

			if (d->n && !d->f && !d->raw)
				return f->name;
			*ret_var += (size_t)d->n * 4;
			break;
		}
		case F_U32S: {
			const struct wire_u32v *d = CAT(base, f->off,
							struct wire_u32v);

			if (d->n > WIRE_ROWS_MAX)
				return f->name;
			if (d->n && !d->v && !d->raw)
				return f->name;
			*ret_var += (size_t)d->n * 4;
			break;
		}
		default:
			break;
		}
	}
	return NULL;
}

/* Payload bytes of m, after checking every field; NULL, or the name of
 * the bad field. */
static const char *payload_check(const struct wire_msg *m, size_t *ret)
{
	const struct layout *l = layout_of(m->hdr.type);
	size_t sz = 0;
	const char *bad;

	for (uint8_t i = 0; i < l->n; i++)
		sz += fixed_size(&l->f[i]);
	bad = fields_check(l->f, l->n, m, &sz);
	if (!bad && l->check)
		bad = l->check(m);
	*ret = sz;
	return bad;
}

enum px_err wire_payload_size(const struct wire_msg *m, size_t max_payload,
			      size_t *ret, struct px_error *err)
{
	const char *tn = wire_type_name(m->hdr.type), *bad;
	size_t sz;

	if (max_payload > WIRE_PAYLOAD_MAX)
		return px_errorf(err, PX_EINVAL, "payload bound %zu over %u",
				 max_payload, WIRE_PAYLOAD_MAX);
	if (!layout_of(m->hdr.type))
		return px_errorf(err, PX_EINVAL, "unknown message type %u",
				 m->hdr.type);
	if (m->hdr.flags & ~WIRE_F_ALL)
		return px_errorf(err, PX_EINVAL, "%s: unknown flags 0x%x",
				 tn, m->hdr.flags);
	if (!wire_flags_ok(m->hdr.type, m->hdr.flags))
		return px_errorf(err, PX_EINVAL, "%s: flag %s not for this "
				 "message", tn, m->hdr.flags & WIRE_F_RESUME
				 ? "RESUME" : "MORE");
	bad = payload_check(m, &sz);
	if (bad)
		return px_errorf(err, strstr(bad, "shards") ||
				 strstr(bad, "members") ? PX_ETOOBIG
							: PX_EINVAL,
				 "%s: bad '%s'", tn, bad);
	if (sz > max_payload)
		return px_errorf(err, PX_ETOOBIG,
				 "%s: payload of %zu bytes over the bound %zu",
				 tn, sz, max_payload);
	*ret = sz;
	return PX_OK;
}

static void put_fields(struct wr *w, const struct field *f, uint8_t n,
		       const void *base)
{
	for (uint8_t i = 0; i < n; i++, f++) {
		const void *a;
		uint32_t k;

		switch (f->kind) {
		case F_PAD:
			put_le(w, 0, f->arg);
			break;
		case F_NONCE:
			put_bytes(w, CAT(base, f->off, uint8_t),
				  WIRE_NONCE_LEN);
			break;
		case F_STR:
			put_str(w, CAT(base, f->off, char));
			break;
		case F_SHARDS:
		case F_MEMBERS:
			k = *CAT(base, f->cnt, uint32_t);
			a = get_ptr(base, f);
			for (uint32_t j = 0; j < k; j++) {
				if (f->kind == F_SHARDS)
					put_fields(w, shard_f, NF(shard_f),
						   (const struct wire_shard *)
							   a + j);
				else
					put_fields(w, member_f, NF(member_f),
						   (const struct wire_member *)
							   a + j);
			}
			break;
		case F_FLOATS: {
			const struct wire_f32 *d = CAT(base, f->off,
						       struct wire_f32);

			put_f32v(w, d->f, d->n);
			break;
		}
		case F_U32S: {
			const struct wire_u32v *d = CAT(base, f->off,
							struct wire_u32v);

			for (uint32_t j = 0; j < d->n; j++)
				put_u32(w, wire_u32_at(d, j));
			break;
		}
		default:
			put_le(w, get_uint(base, f), fixed_size(f));
		}
	}
}

/* Read fields into base from r; sizes are checked against what is left
 * before anything is allocated (the one array of a message goes to
 * m->owned).  Values are judged later, by fields_check. */
static bool get_fields(struct rd *r, const struct field *f, uint8_t n,
		       void *base, struct wire_msg *m, bool *oom)
{
	for (uint8_t i = 0; i < n && !r->bad; i++, f++) {
		const uint8_t *b;
		uint32_t k;
		size_t esz, emin;
		void *a;

		switch (f->kind) {
		case F_PAD:
			get_zero(r, f->arg);
			break;
		case F_NONCE:
			b = get_bytes(r, WIRE_NONCE_LEN);
			if (b)
				memcpy(AT(base, f->off, uint8_t), b,
				       WIRE_NONCE_LEN);
			break;
		case F_STR:
			get_str(r, AT(base, f->off, char));
			break;
		case F_SHARDS:
		case F_MEMBERS:
			k = *AT(base, f->cnt, uint32_t);
			esz = f->kind == F_SHARDS ? sizeof(struct wire_shard)
						  : sizeof(struct wire_member);
			emin = f->kind == F_SHARDS ? SHARD_LEN : MEMBER_MIN;
			if (k > (f->kind == F_SHARDS ? WIRE_SHARDS_MAX
						     : WIRE_MEMBERS_MAX) ||
			    (size_t)k * emin > r->left)
				return false;
			set_ptr(base, f, NULL);
			if (!k)
				break;
			a = px_calloc(k, esz);
			if (!a) {
				*oom = true;
				return false;
			}
			m->owned = a;
			set_ptr(base, f, a);
			for (uint32_t j = 0; j < k && !r->bad; j++) {
				if (f->kind == F_SHARDS)
					get_fields(r, shard_f, NF(shard_f),
						   (struct wire_shard *)a + j,
						   m, oom);
				else
					get_fields(r, member_f, NF(member_f),
						   (struct wire_member *)a + j,
						   m, oom);
			}
			break;
		case F_FLOATS: {
			struct wire_f32 *d = AT(base, f->off, struct wire_f32);

			if ((size_t)d->n * 4 != r->left)
				return false;
			d->f = NULL;
			d->raw = get_bytes(r, (size_t)d->n * 4);
			break;
		}
		case F_U32S: {
			struct wire_u32v *d = AT(base, f->off,
						 struct wire_u32v);

			/* bounded by what is left: get_bytes refuses more */
			if (d->n > WIRE_ROWS_MAX)
				return false;
			d->v = NULL;
			d->raw = get_bytes(r, (size_t)d->n * 4);
			break;
		}
		default:
			b = get_bytes(r, fixed_size(f));
			if (b) {
				uint64_t v = 0;

				for (size_t j = 0; j < fixed_size(f); j++)
					v |= (uint64_t)b[j] << (8 * j);
				set_uint(base, f, v);
			}
		}
	}
	return !r->bad;
}

/* Decode m's payload from r and judge it as a sender's would be; false
 * if malformed (or *oom). */
static bool get_payload(struct rd *r, struct wire_msg *m, bool *oom)
{
	const struct layout *l = layout_of(m->hdr.type);
	size_t sz;

	if (!l || !get_fields(r, l->f, l->n, m, m, oom) || r->left != 0)
		return false;
	return !payload_check(m, &sz);
}

static void put_hdr(struct wr *w, const struct wire_hdr *h)
{
	put_u32(w, WIRE_MAGIC);
	put_u16(w, h->version);
	put_u16(w, h->type);
	put_u32(w, h->flags);
	put_u32(w, h->sender.v);
	put_u32(w, h->dest.v);
	put_u32(w, h->payload_len);
	put_u64(w, h->job);
	put_u64(w, h->session);
	put_u64(w, h->dest_session);
	put_u64(w, h->seq);
	put_i64(w, h->clock);
}

static uint64_t peer_session(struct wire_ctx *ctx, struct wire_node node);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void count(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* The frame key of a sender session: HKDF-Expand (RFC 5869) of the
 * job's MAC key with info = FRAME_INFO || job || node || session (LE), one
 * block: HMAC-SHA256(key, info || 0x01).  Each session numbers its frames
 * from 1 without repeating, so under its own key seq is a nonce. */
static bool frame_key(const uint8_t mac_key[KEY_LEN], uint64_t job,
		      struct wire_node node, uint64_t session,
		      uint8_t ret[KEY_LEN])
{
	uint8_t info[sizeof(FRAME_INFO) - 1 + 8 + 4 + 8 + 1], *p = info;
	unsigned int len = 0;

	memcpy(p, FRAME_INFO, sizeof(FRAME_INFO) - 1);
	p += sizeof(FRAME_INFO) - 1;
	for (int i = 0; i < 8; i++)
		*p++ = (uint8_t)(job >> (8 * i));
	for (int i = 0; i < 4; i++)
		*p++ = (uint8_t)(node.v >> (8 * i));
	for (int i = 0; i < 8; i++)
		*p++ = (uint8_t)(session >> (8 * i));
	*p = 1;
	return HMAC(EVP_sha256(), mac_key, KEY_LEN, info, sizeof(info), ret,
		    &len) && len == KEY_LEN;
}

static void tagger_free(struct tagger *t)
{
	if (!t)
		return;
	EVP_CIPHER_CTX_free(t->c);
	OPENSSL_cleanse(t->key, sizeof(t->key));
	free(t);
}

/* An idle tagger of ctx's, or a new one (NULL on OOM); give it back with
 * tagger_put.  Steady state: no allocation per frame. */
static struct tagger *tagger_get(struct wire_ctx *ctx)
{
	struct tagger *t;

	pthread_mutex_lock(&ctx->pool_lock);
	t = ctx->pool;
	if (t)
		ctx->pool = t->next;
	pthread_mutex_unlock(&ctx->pool_lock);
	if (t)
		return t;
	t = px_calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->c = EVP_CIPHER_CTX_new();
	if (!t->c || EVP_EncryptInit_ex(t->c, EVP_aes_256_gcm(), NULL, NULL,
					NULL) != 1 ||
	    EVP_CIPHER_CTX_ctrl(t->c, EVP_CTRL_GCM_SET_IVLEN, NONCE_LEN,
				NULL) != 1) {
		tagger_free(t);
		return NULL;
	}
	return t;
}

static void tagger_put(struct wire_ctx *ctx, struct tagger *t)
{
	pthread_mutex_lock(&ctx->pool_lock);
	t->next = ctx->pool;
	ctx->pool = t;
	pthread_mutex_unlock(&ctx->pool_lock);
}

/* What one AES-256-GCM pass over a frame does. */
enum gcm_op {
	GCM_SEAL,   /* encrypt the payload when enc; write the tag */
	GCM_OPEN,   /* decrypt the payload when enc; check the tag */
	GCM_UNSEAL  /* decrypt the payload, no tag (wire_retag) */
};

/* One AES-256-GCM pass over the frame buf (header, plen payload bytes,
 * tag) under key, nonce seq || 0^32.  enc: the header is additional data
 * and the payload is encrypted or decrypted in place; otherwise GMAC:
 * header and payload are all additional data, nothing is encrypted.
 * False with *tag_bad on a tag that does not verify (GCM_OPEN; OpenSSL
 * compares in constant time), false alone when OpenSSL failed. */
static bool gcm(struct wire_ctx *ctx, const uint8_t key[KEY_LEN],
		uint64_t seq, bool enc, enum gcm_op op, uint8_t *buf,
		size_t plen, bool *tag_bad)
{
	uint64_t t0 = now_ns();
	uint8_t iv[NONCE_LEN] = { 0 };
	uint8_t *pay = buf + WIRE_HDR_LEN, *tag = pay + plen;
	size_t aad = enc ? WIRE_HDR_LEN : WIRE_HDR_LEN + plen;
	struct tagger *t = tagger_get(ctx);
	bool same, ok;
	int len;

	*tag_bad = false;
	if (!t)
		return false;
	for (int i = 0; i < 8; i++)
		iv[i] = (uint8_t)(seq >> (8 * i));
	same = t->keyed && CRYPTO_memcmp(t->key, key, KEY_LEN) == 0;
	/* The GCM key schedule is one for both directions, so a context
	 * keyed for sealing opens with the same key given as NULL. */
	ok = WIRE_HDR_LEN + plen <= INT32_MAX &&
	     EVP_CipherInit_ex(t->c, NULL, NULL, same ? NULL : key, iv,
			       op == GCM_SEAL) == 1 &&
	     EVP_CipherUpdate(t->c, NULL, &len, buf, (int)aad) == 1 &&
	     (!enc || plen == 0 ||
	      EVP_CipherUpdate(t->c, pay, &len, pay, (int)plen) == 1);
	if (ok && op == GCM_SEAL)
		ok = EVP_CipherFinal_ex(t->c, NULL, &len) == 1 &&
		     EVP_CIPHER_CTX_ctrl(t->c, EVP_CTRL_GCM_GET_TAG,
					 WIRE_MAC_LEN, tag) == 1;
	else if (ok && op == GCM_OPEN) {
		ok = EVP_CIPHER_CTX_ctrl(t->c, EVP_CTRL_GCM_SET_TAG,
					 WIRE_MAC_LEN, tag) == 1;
		if (ok && EVP_CipherFinal_ex(t->c, NULL, &len) != 1) {
			*tag_bad = true;
			ok = false;
		}
	}
	if ((ok || *tag_bad) && !same) {
		memcpy(t->key, key, KEY_LEN);
		t->keyed = true;
	} else if (!ok && !*tag_bad) {
		t->keyed = false;
	}
	tagger_put(ctx, t);
	count(&ctx->mac_ns, now_ns() - t0);
	return ok;
}

enum px_err wire_seal(struct wire_ctx *ctx, struct wire_msg *m,
		      size_t max_payload, uint8_t *buf, size_t len,
		      size_t *ret_len, struct px_error *err)
{
	struct wr w = { buf, len, false };
	bool tag_bad;
	size_t plen;
	enum px_err r;

	r = wire_payload_size(m, max_payload, &plen, err);
	if (r != PX_OK)
		return r;
	if (len < WIRE_OVERHEAD + plen)
		return px_errorf(err, PX_EINVAL,
				 "%s: buffer of %zu bytes, frame needs %zu",
				 wire_type_name(m->hdr.type), len,
				 WIRE_OVERHEAD + plen);
	m->hdr.version = WIRE_VERSION;
	if (wire_node_eq(m->hdr.dest, WIRE_NODE_ALL))
		m->hdr.dest_session = 0;
	else if (m->hdr.dest_session == 0)
		m->hdr.dest_session = peer_session(ctx, m->hdr.dest);
	m->hdr.sender = ctx->self;
	m->hdr.job = ctx->job;
	m->hdr.session = ctx->session;
	m->hdr.payload_len = (uint32_t)plen;
	m->hdr.seq = atomic_fetch_add(&ctx->seq, 1) + 1;
	put_hdr(&w, &m->hdr);
	put_fields(&w, layout_of(m->hdr.type)->f, layout_of(m->hdr.type)->n,
		   m);
	if (w.bad || (size_t)(w.p - buf) != WIRE_HDR_LEN + plen)
		return px_errorf(err, PX_EINVAL, "%s: encoding failed",
				 wire_type_name(m->hdr.type));
	if (!gcm(ctx, ctx->fkey, m->hdr.seq, m->hdr.flags & WIRE_F_ENC,
		 GCM_SEAL, buf, plen, &tag_bad))
		return px_errorf(err, PX_ENOMEM, "AES-256-GCM failed");
	count(&ctx->n_sealed, 1);
	count(&ctx->b_sealed, WIRE_OVERHEAD + plen);
	*ret_len = WIRE_OVERHEAD + plen;
	return PX_OK;
}

enum px_err wire_encode(struct wire_ctx *ctx, struct wire_msg *m,
			size_t max_payload, uint8_t **ret_buf,
			size_t *ret_len, struct px_error *err)
{
	size_t plen, flen;
	uint8_t *buf;
	enum px_err r;

	r = wire_payload_size(m, max_payload, &plen, err);
	if (r != PX_OK)
		return r;
	buf = malloc(WIRE_OVERHEAD + plen);
	if (!buf)
		return px_errorf(err, PX_ENOMEM, "out of memory for a frame");
	r = wire_seal(ctx, m, max_payload, buf, WIRE_OVERHEAD + plen, &flen,
		      err);
	if (r != PX_OK) {
		free(buf);
		return r;
	}
	*ret_buf = buf;
	*ret_len = flen;
	return PX_OK;
}

/* ---- peer table: sessions, replay windows, handshakes ---- */

static struct peer *peer_find(struct wire_ctx *ctx, struct wire_node node)
{
	for (uint32_t i = 0; i < ctx->npeers; i++)
		if (ctx->peers[i].used && ctx->peers[i].node.v == node.v)
			return &ctx->peers[i];
	return NULL;
}

/* Find or make node's entry; a full table evicts the least recently
 * used entry (which fails closed: its frames need a new handshake). */
static struct peer *peer_get(struct wire_ctx *ctx, struct wire_node node,
			     uint64_t now_us)
{
	struct peer *p = peer_find(ctx, node), *victim = &ctx->peers[0];

	if (p)
		return p;
	for (uint32_t i = 0; i < ctx->npeers; i++) {
		p = &ctx->peers[i];
		if (!p->used) {
			victim = p;
			break;
		}
		if (p->last_us < victim->last_us)
			victim = p;
	}
	memset(victim, 0, sizeof(*victim));
	victim->used = true;
	victim->node = node;
	victim->last_us = now_us;
	return victim;
}

/* The session we know for node, 0 if none (under no lock held). */
static uint64_t peer_session(struct wire_ctx *ctx, struct wire_node node)
{
	struct peer *p;
	uint64_t s = 0;

	pthread_mutex_lock(&ctx->lock);
	p = peer_find(ctx, node);
	if (p && p->live)
		s = p->session;
	pthread_mutex_unlock(&ctx->lock);
	return s;
}

static void peer_set_session(struct peer *p, uint64_t session,
			     uint64_t floor)
{
	p->live = true;
	p->direct = false;
	p->session = session;
	p->floor = floor;
	p->max = floor;
	memset(p->bits, 0, sizeof(p->bits));
}

static bool bit_get(const struct peer *p, uint64_t s)
{
	return p->bits[(s % WIRE_WINDOW) / 64] >> (s % 64) & 1;
}

static void bit_set(struct peer *p, uint64_t s, bool on)
{
	uint64_t m = UINT64_C(1) << (s % 64);

	if (on)
		p->bits[(s % WIRE_WINDOW) / 64] |= m;
	else
		p->bits[(s % WIRE_WINDOW) / 64] &= ~m;
}

/* Accept seq once: above the floor, inside the window, not seen. */
static bool window_accept(struct peer *p, uint64_t seq)
{
	if (seq <= p->floor)
		return false;
	if (seq > p->max) {
		if (seq - p->max >= WIRE_WINDOW)
			memset(p->bits, 0, sizeof(p->bits));
		else
			for (uint64_t s = p->max + 1; s < seq; s++)
				bit_set(p, s, false);
		bit_set(p, seq, true);
		p->max = seq;
		return true;
	}
	if (p->max - seq >= WIRE_WINDOW || bit_get(p, seq))
		return false;
	bit_set(p, seq, true);
	return true;
}

/* A session proven fresh by a handshake with us. */
static void install(struct peer *p, uint64_t session, uint64_t seq)
{
	if (p->live && p->session == session)
		(void)window_accept(p, seq);
	else
		peer_set_session(p, session, seq);
	p->direct = true;
}

/* Session and replay rules of docs/protocol.md, for an authentic frame. */
static enum wire_drop peer_check(struct wire_ctx *ctx, const struct wire_msg *m,
				 uint64_t now_us)
{
	const struct wire_hdr *h = &m->hdr;
	enum wire_drop d = WIRE_DROP_NONE;
	struct peer *p;

	pthread_mutex_lock(&ctx->lock);
	p = peer_find(ctx, h->sender);
	switch (h->type) {
	case WIRE_HELLO:
		break;
	case WIRE_CHALLENGE:
		if (!p || !p->hello_pending || now_us > p->hello_deadline_us ||
		    CRYPTO_memcmp(p->hello_nonce, m->u.challenge.echo,
				  WIRE_NONCE_LEN) != 0) {
			d = WIRE_DROP_REPLAY;
			break;
		}
		p->hello_pending = false;
		install(p, h->session, h->seq);
		break;
	case WIRE_REGISTER:
		if (!p || !p->chal_pending || now_us > p->chal_deadline_us ||
		    CRYPTO_memcmp(p->chal_nonce, m->u.reg.echo,
				  WIRE_NONCE_LEN) != 0) {
			d = WIRE_DROP_REPLAY;
			break;
		}
		p->chal_pending = false;
		install(p, h->session, h->seq);
		break;
	default:
		if (!p || !p->live || p->session != h->session ||
		    (wire_node_eq(h->dest, WIRE_NODE_ALL) && !p->direct))
			d = WIRE_DROP_NO_SESSION;
		else if (!window_accept(p, h->seq))
			d = WIRE_DROP_REPLAY;
	}
	if (p && d == WIRE_DROP_NONE)
		p->last_us = now_us;
	pthread_mutex_unlock(&ctx->lock);
	return d;
}

/* The frame key of (node, session): from the peer table when it holds
 * it, else derived (a new session, a handshake, or a forgery). */
static bool sender_key(struct wire_ctx *ctx, struct wire_node node,
		       uint64_t session, uint8_t ret[KEY_LEN])
{
	uint64_t t0 = now_ns();
	struct peer *p;
	bool have = false, ok;

	pthread_mutex_lock(&ctx->lock);
	p = peer_find(ctx, node);
	if (p && p->key_ok && p->key_session == session) {
		memcpy(ret, p->fkey, KEY_LEN);
		have = true;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (have)
		return true;
	ok = frame_key(ctx->key, ctx->job, node, session, ret);
	count(&ctx->mac_ns, now_ns() - t0);
	return ok;
}

/* Keep the key of a session whose frame was just accepted. */
static void remember_key(struct wire_ctx *ctx, struct wire_node node,
			 uint64_t session, const uint8_t key[KEY_LEN])
{
	struct peer *p;

	pthread_mutex_lock(&ctx->lock);
	p = peer_find(ctx, node);
	if (p && p->live && p->session == session &&
	    !(p->key_ok && p->key_session == session)) {
		memcpy(p->fkey, key, KEY_LEN);
		p->key_session = session;
		p->key_ok = true;
	}
	pthread_mutex_unlock(&ctx->lock);
}

static enum px_err drop(struct wire_stats *st, enum wire_drop d,
			enum wire_drop *ret_drop)
{
	if (st)
		st->dropped[d]++;
	*ret_drop = d;
	return PX_EPROTO;
}

enum px_err wire_open_ex(struct wire_ctx *ctx, uint8_t *buf, size_t len,
			 size_t max_payload, uint64_t now_us, bool need_enc,
			 struct wire_stats *st, struct wire_msg *ret,
			 enum wire_drop *ret_drop)
{
	struct rd r = { buf, len, false };
	uint8_t key[KEY_LEN];
	struct wire_msg m;
	struct wire_hdr *h = &m.hdr;
	bool oom = false, tag_bad;
	enum wire_drop d;

	memset(&m, 0, sizeof(m));
	if (len < WIRE_OVERHEAD)
		return drop(st, WIRE_DROP_TOO_SHORT, ret_drop);
	if (get_u32(&r) != WIRE_MAGIC)
		return drop(st, WIRE_DROP_BAD_MAGIC, ret_drop);
	h->version = get_u16(&r);
	if (h->version != WIRE_VERSION)
		return drop(st, WIRE_DROP_BAD_VERSION, ret_drop);
	h->type = get_u16(&r);
	h->flags = get_u32(&r);
	h->sender.v = get_u32(&r);
	h->dest.v = get_u32(&r);
	h->payload_len = get_u32(&r);
	h->job = get_u64(&r);
	h->session = get_u64(&r);
	h->dest_session = get_u64(&r);
	h->seq = get_u64(&r);
	h->clock = get_i64(&r);
	if (h->payload_len > max_payload || h->payload_len > WIRE_PAYLOAD_MAX)
		return drop(st, WIRE_DROP_TOO_BIG, ret_drop);
	if (len < WIRE_OVERHEAD + (size_t)h->payload_len)
		return drop(st, WIRE_DROP_TOO_SHORT, ret_drop);
	if (len > WIRE_OVERHEAD + (size_t)h->payload_len)
		return drop(st, WIRE_DROP_MALFORMED, ret_drop);
	if (h->job != ctx->job)
		return drop(st, WIRE_DROP_BAD_JOB, ret_drop);
	count(&ctx->n_opened, 1);
	count(&ctx->b_opened, len);
	/* sender, session and seq pick the key and the nonce, the ENC bit
	 * whether the payload is ciphertext (flipped, it changes what the
	 * tag covers and the tag fails); nothing else of the header is
	 * looked at before the tag is checked */
	if (!sender_key(ctx, h->sender, h->session, key)) {
		*ret_drop = WIRE_DROP_NONE;
		return PX_ENOMEM;
	}
	if (!gcm(ctx, key, h->seq, h->flags & WIRE_F_ENC, GCM_OPEN, buf,
		 h->payload_len, &tag_bad)) {
		if (!tag_bad) {
			*ret_drop = WIRE_DROP_NONE;
			return PX_ENOMEM;
		}
		return drop(st, WIRE_DROP_BAD_MAC, ret_drop);
	}
	/* Authentic from here on: a holder of the job key sent it. */
	if (h->type == 0 || h->type >= WIRE_TYPE_MAX ||
	    h->flags & ~WIRE_F_ALL || !wire_flags_ok(h->type, h->flags) ||
	    h->seq == 0 || h->session == 0 ||
	    wire_node_eq(h->sender, WIRE_NODE_ALL))
		return drop(st, WIRE_DROP_BAD_HEADER, ret_drop);
	/* A peer that sends in the clear where we require encryption is
	 * misconfigured (or an old build): refuse rather than downgrade. */
	if (need_enc && !(h->flags & WIRE_F_ENC))
		return drop(st, WIRE_DROP_PLAINTEXT, ret_drop);
	if (!wire_node_eq(h->dest, ctx->self) &&
	    !wire_node_eq(h->dest, WIRE_NODE_ALL))
		return drop(st, WIRE_DROP_NOT_FOR_US, ret_drop);
	if (h->type <= WIRE_REGISTER && !wire_node_eq(h->dest, ctx->self))
		return drop(st, WIRE_DROP_BAD_HEADER, ret_drop);
	if (wire_node_eq(h->dest, WIRE_NODE_ALL) && h->dest_session != 0)
		return drop(st, WIRE_DROP_BAD_HEADER, ret_drop);
	/* Addressed to an earlier (or later) incarnation of this node. */
	if (h->type != WIRE_HELLO && wire_node_eq(h->dest, ctx->self) &&
	    h->dest_session != ctx->session)
		return drop(st, WIRE_DROP_NOT_FOR_US, ret_drop);
	r.left = h->payload_len;
	if (!get_payload(&r, &m, &oom)) {
		free(m.owned);
		if (oom) {
			*ret_drop = WIRE_DROP_NONE;
			return PX_ENOMEM;
		}
		return drop(st, WIRE_DROP_MALFORMED, ret_drop);
	}
	d = peer_check(ctx, &m, now_us);
	if (d != WIRE_DROP_NONE) {
		free(m.owned);
		return drop(st, d, ret_drop);
	}
	remember_key(ctx, h->sender, h->session, key);
	if (st)
		st->accepted++;
	*ret = m;
	*ret_drop = WIRE_DROP_NONE;
	return PX_OK;
}

enum px_err wire_open(struct wire_ctx *ctx, uint8_t *buf, size_t len,
		      size_t max_payload, uint64_t now_us,
		      struct wire_stats *st, struct wire_msg *ret,
		      enum wire_drop *ret_drop)
{
	return wire_open_ex(ctx, buf, len, max_payload, now_us, false, st,
			    ret, ret_drop);
}

/* ---- context ---- */

enum px_err wire_derive_key(const uint8_t *job_key, size_t len, uint64_t job,
			    uint8_t ret_key[32], struct px_error *err)
{
	uint8_t info[sizeof(HKDF_INFO) - 1 + 8];
	OSSL_PARAM params[5], *p = params;
	enum px_err r = PX_OK;
	EVP_KDF_CTX *kctx;
	EVP_KDF *kdf;

	if (len < WIRE_JOB_KEY_MIN || len > WIRE_JOB_KEY_MAX)
		return px_errorf(err, PX_EINVAL,
				 "job key of %zu bytes, want %d..%d", len,
				 WIRE_JOB_KEY_MIN, WIRE_JOB_KEY_MAX);
	memcpy(info, HKDF_INFO, sizeof(HKDF_INFO) - 1);
	for (int i = 0; i < 8; i++)
		info[sizeof(HKDF_INFO) - 1 + i] = (uint8_t)(job >> (8 * i));
	kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	if (!kdf)
		return px_errorf(err, PX_EUNSUPP, "openssl has no HKDF");
	kctx = EVP_KDF_CTX_new(kdf);
	EVP_KDF_free(kdf);
	if (!kctx)
		return px_errorf(err, PX_ENOMEM, "out of memory for HKDF");
	*p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
						"SHA256", 0);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
						 (void *)job_key, len);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
						 HKDF_SALT,
						 sizeof(HKDF_SALT) - 1);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info,
						 sizeof(info));
	*p = OSSL_PARAM_construct_end();
	if (EVP_KDF_derive(kctx, ret_key, KEY_LEN, params) != 1)
		r = px_errorf(err, PX_EINVAL, "HKDF-SHA256 failed");
	EVP_KDF_CTX_free(kctx);
	return r;
}

enum px_err wire_ctx_new(const struct wire_config *cfg,
			 struct wire_ctx **ret, struct px_error *err)
{
	uint32_t npeers = cfg->max_peers ? cfg->max_peers : DEFAULT_PEERS;
	struct wire_ctx *ctx;
	enum px_err r;

	if (wire_node_eq(cfg->self, WIRE_NODE_ALL))
		return px_errorf(err, PX_EINVAL, "node id %u is reserved",
				 cfg->self.v);
	if (npeers > MAX_PEERS)
		return px_errorf(err, PX_EINVAL, "max_peers %u over %u",
				 npeers, MAX_PEERS);
	ctx = px_calloc(1, sizeof(*ctx));
	if (!ctx)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	ctx->peers = px_calloc(npeers, sizeof(*ctx->peers));
	if (!ctx->peers) {
		r = px_errorf(err, PX_ENOMEM, "out of memory");
		goto out_free_ctx;
	}
	ctx->npeers = npeers;
	ctx->self = cfg->self;
	ctx->job = cfg->job;
	ctx->ttl_us = cfg->handshake_ttl_us ? cfg->handshake_ttl_us
					     : (uint64_t)DEFAULT_TTL_US;
	atomic_init(&ctx->seq, 0);
	atomic_init(&ctx->n_sealed, 0);
	atomic_init(&ctx->b_sealed, 0);
	atomic_init(&ctx->n_opened, 0);
	atomic_init(&ctx->b_opened, 0);
	atomic_init(&ctx->mac_ns, 0);
	r = wire_derive_key(cfg->job_key, cfg->job_key_len, cfg->job,
			    ctx->key, err);
	if (r != PX_OK)
		goto out_free_peers;
	do {
		if (RAND_bytes((unsigned char *)&ctx->session,
			       sizeof(ctx->session)) != 1) {
			r = px_errorf(err, PX_EIO, "RAND_bytes failed");
			goto out_free_peers;
		}
	} while (ctx->session == 0);
	if (!frame_key(ctx->key, ctx->job, ctx->self, ctx->session,
		       ctx->fkey)) {
		r = px_errorf(err, PX_EINVAL, "frame key: HMAC-SHA256 failed");
		goto out_free_peers;
	}
	if (pthread_mutex_init(&ctx->lock, NULL) != 0) {
		r = px_errorf(err, PX_ENOMEM, "pthread_mutex_init failed");
		goto out_free_peers;
	}
	if (pthread_mutex_init(&ctx->pool_lock, NULL) != 0) {
		r = px_errorf(err, PX_ENOMEM, "pthread_mutex_init failed");
		goto out_destroy_lock;
	}
	*ret = ctx;
	return PX_OK;

out_destroy_lock:
	pthread_mutex_destroy(&ctx->lock);
out_free_peers:
	free(ctx->peers);
out_free_ctx:
	OPENSSL_cleanse(ctx->key, sizeof(ctx->key));
	OPENSSL_cleanse(ctx->fkey, sizeof(ctx->fkey));
	free(ctx);
	return r;
}

void wire_ctx_free(struct wire_ctx *ctx)
{
	if (!ctx)
		return;
	while (ctx->pool) {
		struct tagger *t = ctx->pool;

		ctx->pool = t->next;
		tagger_free(t);
	}
	pthread_mutex_destroy(&ctx->pool_lock);
	pthread_mutex_destroy(&ctx->lock);
	OPENSSL_cleanse(ctx->key, sizeof(ctx->key));
	OPENSSL_cleanse(ctx->fkey, sizeof(ctx->fkey));
	if (ctx->peers)
		OPENSSL_cleanse(ctx->peers, ctx->npeers * sizeof(*ctx->peers));
	free(ctx->peers);
	free(ctx);
}

enum px_err wire_retag(struct wire_ctx *ctx, uint8_t *buf, size_t len)
{
	struct rd r = { buf, len, false };
	uint64_t session, seq;
	uint32_t flags, sender, plen;
	bool enc, tag_bad;

	if (len < WIRE_OVERHEAD)
		return PX_EINVAL;
	r.p += 8;
	r.left -= 8;
	flags = get_u32(&r);
	sender = get_u32(&r);
	(void)get_u32(&r);      /* dest */
	plen = get_u32(&r);
	(void)get_u64(&r);      /* job */
	session = get_u64(&r);
	(void)get_u64(&r);      /* dest_session */
	seq = get_u64(&r);
	if (sender != ctx->self.v || session != ctx->session ||
	    len != WIRE_OVERHEAD + (size_t)plen)
		return PX_EINVAL;
	/* CTR is its own inverse: decrypting the payload and encrypting it
	 * again gives the same bytes, and the tag over them */
	enc = flags & WIRE_F_ENC;
	if (enc && !gcm(ctx, ctx->fkey, seq, true, GCM_UNSEAL, buf, plen,
			&tag_bad))
		return PX_ENOMEM;
	return gcm(ctx, ctx->fkey, seq, enc, GCM_SEAL, buf, plen, &tag_bad) ?
		       PX_OK : PX_ENOMEM;
}

void wire_ctx_counters(struct wire_ctx *ctx, struct wire_counters *ret)
{
	ret->sealed_frames = atomic_load_explicit(&ctx->n_sealed,
						  memory_order_relaxed);
	ret->sealed_bytes = atomic_load_explicit(&ctx->b_sealed,
						 memory_order_relaxed);
	ret->opened_frames = atomic_load_explicit(&ctx->n_opened,
						  memory_order_relaxed);
	ret->opened_bytes = atomic_load_explicit(&ctx->b_opened,
						 memory_order_relaxed);
	ret->mac_ns = atomic_load_explicit(&ctx->mac_ns,
					   memory_order_relaxed);
}

struct wire_node wire_ctx_self(const struct wire_ctx *ctx)
{
	return ctx->self;
}

uint64_t wire_ctx_session(const struct wire_ctx *ctx)
{
	return ctx->session;
}

uint64_t wire_ctx_job(const struct wire_ctx *ctx)
{
	return ctx->job;
}

enum px_err wire_hello_begin(struct wire_ctx *ctx, struct wire_node dest,
			     uint64_t now_us, struct wire_msg *m,
			     struct px_error *err)
{
	struct peer *p;

	if (wire_node_eq(dest, WIRE_NODE_ALL) || wire_node_eq(dest, ctx->self))
		return px_errorf(err, PX_EINVAL, "HELLO to node %u", dest.v);
	wire_msg_init(m, WIRE_HELLO, dest, 0);
	if (RAND_bytes(m->u.hello.nonce, WIRE_NONCE_LEN) != 1)
		return px_errorf(err, PX_EIO, "RAND_bytes failed");
	pthread_mutex_lock(&ctx->lock);
	p = peer_get(ctx, dest, now_us);
	memcpy(p->hello_nonce, m->u.hello.nonce, WIRE_NONCE_LEN);
	p->hello_pending = true;
	p->hello_deadline_us = now_us + ctx->ttl_us;
	pthread_mutex_unlock(&ctx->lock);
	return PX_OK;
}

enum px_err wire_challenge_begin(struct wire_ctx *ctx,
				 const struct wire_msg *hello,
				 uint64_t now_us, struct wire_msg *m,
				 struct px_error *err)
{
	struct wire_node peer = hello->hdr.sender;
	struct peer *p;

	if (hello->hdr.type != WIRE_HELLO)
		return px_errorf(err, PX_EINVAL, "answering a %s, not a HELLO",
				 wire_type_name(hello->hdr.type));
	wire_msg_init(m, WIRE_CHALLENGE, peer, 0);
	m->hdr.dest_session = hello->hdr.session;
	memcpy(m->u.challenge.echo, hello->u.hello.nonce, WIRE_NONCE_LEN);
	if (RAND_bytes(m->u.challenge.nonce, WIRE_NONCE_LEN) != 1)
		return px_errorf(err, PX_EIO, "RAND_bytes failed");
	pthread_mutex_lock(&ctx->lock);
	p = peer_get(ctx, peer, now_us);
	memcpy(p->chal_nonce, m->u.challenge.nonce, WIRE_NONCE_LEN);
	p->chal_pending = true;
	p->chal_deadline_us = now_us + ctx->ttl_us;
	pthread_mutex_unlock(&ctx->lock);
	return PX_OK;
}

void wire_register_begin(const struct wire_msg *challenge,
			 struct wire_msg *m)
{
	wire_msg_init(m, WIRE_REGISTER, challenge->hdr.sender, 0);
	memcpy(m->u.reg.echo, challenge->u.challenge.nonce, WIRE_NONCE_LEN);
}

enum px_err wire_peer_install(struct wire_ctx *ctx, struct wire_node node,
			      uint64_t session, uint64_t floor,
			      uint64_t now_us)
{
	struct peer *p;

	if (session == 0 || wire_node_eq(node, WIRE_NODE_ALL))
		return PX_EINVAL;
	pthread_mutex_lock(&ctx->lock);
	p = peer_get(ctx, node, now_us);
	if (!p->live || p->session != session)
		peer_set_session(p, session, floor);
	else if (floor > p->floor)
		p->floor = floor;
	pthread_mutex_unlock(&ctx->lock);
	return PX_OK;
}

enum px_err wire_membership_apply(struct wire_ctx *ctx,
				  const struct wire_msg *m, uint64_t now_us)
{
	const struct wire_membership *mb = &m->u.membership;
	bool fresh;

	if (m->hdr.type != WIRE_MEMBERSHIP)
		return PX_EINVAL;
	pthread_mutex_lock(&ctx->lock);
	fresh = !ctx->have_epoch || mb->epoch > ctx->member_epoch;
	if (fresh) {
		ctx->have_epoch = true;
		ctx->member_epoch = mb->epoch;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (!fresh)
		return PX_EEXIST;
	for (uint32_t i = 0; i < mb->n; i++) {
		const struct wire_member *e = &mb->members[i];

		if (wire_node_eq(e->node, ctx->self) || e->session == 0 ||
		    e->state == WIRE_MEMBER_LOST)
			continue;
		(void)wire_peer_install(ctx, e->node, e->session, e->floor,
					now_us);
	}
	return PX_OK;
}

void wire_peer_forget(struct wire_ctx *ctx, struct wire_node node)
{
	struct peer *p;

	pthread_mutex_lock(&ctx->lock);
	p = peer_find(ctx, node);
	if (p)
		memset(p, 0, sizeof(*p));
	pthread_mutex_unlock(&ctx->lock);
}

bool wire_peer_known(struct wire_ctx *ctx, struct wire_node node)
{
	struct peer *p;
	bool live;

	pthread_mutex_lock(&ctx->lock);
	p = peer_find(ctx, node);
	live = p && p->live;
	pthread_mutex_unlock(&ctx->lock);
	return live;
}
