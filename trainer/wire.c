/* wire.c -- frames of the trainer protocol: encode, seal (HMAC-SHA256),
 * verify, decode, and the per-sender replay windows and handshakes.
 *
 * Integers are written byte by byte (little-endian on any host); floats
 * are IEEE-754 float32, copied as-is on little-endian hosts.
 */
#include "wire.h"

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
#define HKDF_SALT "proteus/wire/v1"
#define HKDF_INFO "proteus job mac key"
#define DEFAULT_PEERS 1024
#define MAX_PEERS 65536
#define DEFAULT_TTL_US (30 * PX_USEC_PER_SEC)

/* Fixed payload sizes (bytes) before variable parts. */
#define SHARD_LEN 32
#define MEMBER_MIN 23
#define REGISTER_MIN 27
#define ASSIGN_FIXED 40
#define STAGE_FIXED 20
#define MEMBERSHIP_FIXED 12
#define PROGRESS_FIXED 60
#define COMMAND_LEN 16
#define ACK_MIN 13

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
};

struct wire_ctx {
	struct wire_node self;
	uint64_t job;
	uint64_t session;
	uint8_t key[KEY_LEN];
	_Atomic uint64_t seq;   /* last seq used */
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
};

static const char *const type_names[WIRE_TYPE_MAX] = {
	[WIRE_HELLO] = "HELLO", [WIRE_CHALLENGE] = "CHALLENGE",
	[WIRE_REGISTER] = "REGISTER", [WIRE_ASSIGN] = "ASSIGN",
	[WIRE_HEARTBEAT] = "HEARTBEAT", [WIRE_CLOCK] = "CLOCK",
	[WIRE_CLOCK_MIN] = "CLOCK_MIN", [WIRE_PUSH] = "PUSH",
	[WIRE_PULL] = "PULL", [WIRE_PARAMS] = "PARAMS",
	[WIRE_FORWARD] = "FORWARD", [WIRE_STAGE] = "STAGE",
	[WIRE_MEMBERSHIP] = "MEMBERSHIP", [WIRE_PROGRESS] = "PROGRESS",
	[WIRE_LEAVE] = "LEAVE", [WIRE_SHUTDOWN] = "SHUTDOWN",
	[WIRE_ACK] = "ACK", [WIRE_COMMAND] = "COMMAND",
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

static void put_f32(struct wr *w, float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	put_u32(w, u);
}

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

static float get_f32(struct rd *r)
{
	uint32_t u = get_u32(r);
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* A zero field (padding); anything else makes the payload malformed. */
static void get_zero(struct rd *r, size_t n)
{
	const uint8_t *b = get_bytes(r, n);

	for (size_t i = 0; b && i < n; i++)
		if (b[i])
			r->bad = true;
}

static void get_nonce(struct rd *r, uint8_t dst[WIRE_NONCE_LEN])
{
	const uint8_t *b = get_bytes(r, WIRE_NONCE_LEN);

	if (b)
		memcpy(dst, b, WIRE_NONCE_LEN);
}

static bool printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
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
	dst[n] = '\0';
	if (!printable(dst, n))
		r->bad = true;
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

static bool str_ok(const char *s)
{
	size_t n = strnlen(s, WIRE_STR_MAX + 1);

	return n <= WIRE_STR_MAX && printable(s, n);
}

static bool range_ok(uint64_t offset, uint64_t count)
{
	return offset <= UINT64_MAX - count;
}

static enum px_err check_shards(const struct wire_shard *s, uint32_t n,
				const char *type, struct px_error *err)
{
	if (n > WIRE_SHARDS_MAX)
		return px_errorf(err, PX_ETOOBIG, "%s: %u shards, over %u",
				 type, n, WIRE_SHARDS_MAX);
	if (n && !s)
		return px_errorf(err, PX_EINVAL, "%s: no shard array", type);
	for (uint32_t i = 0; i < n; i++)
		if (!range_ok(s[i].offset, s[i].count))
			return px_errorf(err, PX_EINVAL,
					 "%s: shard %u range overflows",
					 type, s[i].shard);
	return PX_OK;
}

static enum px_err check_members(const struct wire_member *mb, uint32_t n,
				 const char *type, size_t *ret,
				 struct px_error *err)
{
	size_t sz = 0;

	if (n > WIRE_MEMBERS_MAX)
		return px_errorf(err, PX_ETOOBIG, "%s: %u members, over %u",
				 type, n, WIRE_MEMBERS_MAX);
	if (n && !mb)
		return px_errorf(err, PX_EINVAL, "%s: no member array", type);
	for (uint32_t i = 0; i < n; i++) {
		if (mb[i].roles & ~WIRE_ROLE_ALL ||
		    mb[i].state == 0 || mb[i].state >= WIRE_MEMBER_STATE_MAX)
			return px_errorf(err, PX_EINVAL,
				"%s: member %u: bad 'roles' or 'state'",
				type, mb[i].node.v);
		if (!str_ok(mb[i].addr))
			return px_errorf(err, PX_EINVAL,
					 "%s: member %u: bad 'addr'",
					 type, mb[i].node.v);
		sz += MEMBER_MIN + strlen(mb[i].addr);
	}
	*ret = sz;
	return PX_OK;
}

/* COMMAND fields: a known op; STAGE names a stage 1..3, the others none;
 * roles within the mask, only on EXPECT. */
static bool command_ok(const struct wire_command *c)
{
	if (c->op == 0 || c->op >= WIRE_CMD_OP_MAX ||
	    c->roles & ~WIRE_ROLE_ALL)
		return false;
	if (c->op == WIRE_CMD_STAGE)
		return c->stage >= 1 && c->stage <= 3 && !c->roles;
	return c->stage == 0 && (c->op == WIRE_CMD_EXPECT || !c->roles);
}

enum px_err wire_payload_size(const struct wire_msg *m, size_t max_payload,
			      size_t *ret, struct px_error *err)
{
	const char *tn = wire_type_name(m->hdr.type);
	size_t sz = 0, msz = 0;
	enum px_err r;

	if (max_payload > WIRE_PAYLOAD_MAX)
		return px_errorf(err, PX_EINVAL, "payload bound %zu over %u",
				 max_payload, WIRE_PAYLOAD_MAX);
	if (m->hdr.flags & ~WIRE_F_ALL)
		return px_errorf(err, PX_EINVAL, "%s: unknown flags 0x%x",
				 tn, m->hdr.flags);
	if (!wire_flags_ok(m->hdr.type, m->hdr.flags))
		return px_errorf(err, PX_EINVAL, "%s: flag MOMENTUM on a "
				 "message that carries no range", tn);
	switch (m->hdr.type) {
	case WIRE_HELLO:
		sz = WIRE_NONCE_LEN;
		break;
	case WIRE_CHALLENGE:
		sz = 2 * WIRE_NONCE_LEN;
		break;
	case WIRE_REGISTER:
		if (m->u.reg.roles & ~WIRE_ROLE_ALL)
			return px_errorf(err, PX_EINVAL,
					 "REGISTER: bad 'roles'");
		if (!str_ok(m->u.reg.instance) || !str_ok(m->u.reg.addr))
			return px_errorf(err, PX_EINVAL,
					 "REGISTER: bad 'instance' or 'addr'");
		sz = REGISTER_MIN + strlen(m->u.reg.instance) +
		     strlen(m->u.reg.addr);
		break;
	case WIRE_ASSIGN:
		if (m->u.assign.roles & ~WIRE_ROLE_ALL ||
		    m->u.assign.stage < 1 || m->u.assign.stage > 3 ||
		    !range_ok(m->u.assign.part_first, m->u.assign.part_count))
			return px_errorf(err, PX_EINVAL,
				"ASSIGN: bad 'roles', 'stage' or partition");
		r = check_shards(m->u.assign.shards, m->u.assign.nshards,
				 tn, err);
		if (r != PX_OK)
			return r;
		sz = ASSIGN_FIXED + (size_t)m->u.assign.nshards * SHARD_LEN;
		break;
	case WIRE_HEARTBEAT:
		sz = 12;
		break;
	case WIRE_CLOCK:
		sz = 8;
		break;
	case WIRE_CLOCK_MIN:
		sz = 18;
		break;
	case WIRE_PUSH:
	case WIRE_PARAMS:
	case WIRE_FORWARD:
		if (m->u.range.data.n && !m->u.range.data.f)
			return px_errorf(err, PX_EINVAL, "%s: no data", tn);
		if (!range_ok(m->u.range.offset, m->u.range.data.n))
			return px_errorf(err, PX_EINVAL,
					 "%s: range overflows", tn);
		sz = WIRE_RANGE_PREFIX + (size_t)m->u.range.data.n * 4;
		break;
	case WIRE_PULL:
		if (!range_ok(m->u.pull.offset, m->u.pull.count))
			return px_errorf(err, PX_EINVAL,
					 "PULL: range overflows");
		sz = 32;
		break;
	case WIRE_STAGE:
		if (m->u.stage.stage < 1 || m->u.stage.stage > 3)
			return px_errorf(err, PX_EINVAL, "STAGE: bad 'stage'");
		r = check_shards(m->u.stage.shards, m->u.stage.nshards, tn,
				 err);
		if (r != PX_OK)
			return r;
		sz = STAGE_FIXED + (size_t)m->u.stage.nshards * SHARD_LEN;
		break;
	case WIRE_MEMBERSHIP:
		r = check_members(m->u.membership.members, m->u.membership.n,
				  tn, &msz, err);
		if (r != PX_OK)
			return r;
		sz = MEMBERSHIP_FIXED + msz;
		break;
	case WIRE_PROGRESS:
		if (m->u.progress.stage < 1 || m->u.progress.stage > 3)
			return px_errorf(err, PX_EINVAL,
					 "PROGRESS: bad 'stage'");
		r = check_members(m->u.progress.members, m->u.progress.n,
				  tn, &msz, err);
		if (r != PX_OK)
			return r;
		sz = PROGRESS_FIXED + msz;
		break;
	case WIRE_LEAVE:
		if (m->u.leave.reason == 0 ||
		    m->u.leave.reason >= WIRE_LEAVE_REASON_MAX)
			return px_errorf(err, PX_EINVAL, "LEAVE: bad 'reason'");
		sz = 9;
		break;
	case WIRE_SHUTDOWN:
		if (m->u.shutdown.reason == 0 ||
		    m->u.shutdown.reason >= WIRE_SHUTDOWN_REASON_MAX)
			return px_errorf(err, PX_EINVAL,
					 "SHUTDOWN: bad 'reason'");
		sz = 1;
		break;
	case WIRE_ACK:
		if (!str_ok(m->u.ack.detail))
			return px_errorf(err, PX_EINVAL, "ACK: bad 'detail'");
		sz = ACK_MIN + strlen(m->u.ack.detail);
		break;
	case WIRE_COMMAND:
		if (!command_ok(&m->u.command))
			return px_errorf(err, PX_EINVAL, "COMMAND: bad 'op', "
					 "'stage' or 'roles'");
		sz = COMMAND_LEN;
		break;
	default:
		return px_errorf(err, PX_EINVAL, "unknown message type %u",
				 m->hdr.type);
	}
	if (sz > max_payload)
		return px_errorf(err, PX_ETOOBIG,
				 "%s: payload of %zu bytes over the bound %zu",
				 tn, sz, max_payload);
	*ret = sz;
	return PX_OK;
}

static void put_shards(struct wr *w, const struct wire_shard *s, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		put_u32(w, s[i].shard);
		put_u32(w, s[i].active.v);
		put_u32(w, s[i].backup.v);
		put_u32(w, 0);
		put_u64(w, s[i].offset);
		put_u64(w, s[i].count);
	}
}

static void put_members(struct wr *w, const struct wire_member *mb,
			uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		put_u32(w, mb[i].node.v);
		put_u8(w, mb[i].roles);
		put_u8(w, mb[i].state);
		put_u64(w, mb[i].session);
		put_u64(w, mb[i].floor);
		put_str(w, mb[i].addr);
	}
}

static void put_payload(struct wr *w, const struct wire_msg *m)
{
	const struct wire_range *rg = &m->u.range;

	switch (m->hdr.type) {
	case WIRE_HELLO:
		put_bytes(w, m->u.hello.nonce, WIRE_NONCE_LEN);
		break;
	case WIRE_CHALLENGE:
		put_bytes(w, m->u.challenge.echo, WIRE_NONCE_LEN);
		put_bytes(w, m->u.challenge.nonce, WIRE_NONCE_LEN);
		break;
	case WIRE_REGISTER:
		put_bytes(w, m->u.reg.echo, WIRE_NONCE_LEN);
		put_u32(w, m->u.reg.mem_mib);
		put_u16(w, m->u.reg.ncpu);
		put_u16(w, m->u.reg.ngpu);
		put_u8(w, m->u.reg.roles);
		put_str(w, m->u.reg.instance);
		put_str(w, m->u.reg.addr);
		break;
	case WIRE_ASSIGN:
		put_u8(w, m->u.assign.roles);
		put_u8(w, m->u.assign.stage);
		put_u16(w, m->u.assign.staleness);
		put_u32(w, m->u.assign.nshards);
		put_i64(w, m->u.assign.start_clock);
		put_u64(w, m->u.assign.part_first);
		put_u64(w, m->u.assign.part_count);
		put_u64(w, m->u.assign.nparams);
		put_shards(w, m->u.assign.shards, m->u.assign.nshards);
		break;
	case WIRE_HEARTBEAT:
		put_i64(w, m->u.heartbeat.wall_us);
		put_u32(w, m->u.heartbeat.status);
		break;
	case WIRE_CLOCK:
		put_u64(w, m->u.clock.samples);
		break;
	case WIRE_CLOCK_MIN:
		put_i64(w, m->u.clock_min.min_clock);
		put_i64(w, m->u.clock_min.total_clock);
		put_u16(w, m->u.clock_min.staleness);
		break;
	case WIRE_PUSH:
	case WIRE_PARAMS:
	case WIRE_FORWARD:
		put_u32(w, rg->shard);
		put_u32(w, rg->data.n);
		put_u64(w, rg->offset);
		put_i64(w, rg->clock);
		put_u64(w, 0);
		put_f32v(w, rg->data.f, rg->data.n);
		break;
	case WIRE_PULL:
		put_u32(w, m->u.pull.shard);
		put_u32(w, 0);
		put_u64(w, m->u.pull.offset);
		put_u64(w, m->u.pull.count);
		put_i64(w, m->u.pull.min_clock);
		break;
	case WIRE_STAGE:
		put_u8(w, m->u.stage.stage);
		put_le(w, 0, 3);
		put_u32(w, m->u.stage.epoch);
		put_i64(w, m->u.stage.at_clock);
		put_u32(w, m->u.stage.nshards);
		put_shards(w, m->u.stage.shards, m->u.stage.nshards);
		break;
	case WIRE_MEMBERSHIP:
		put_u64(w, m->u.membership.epoch);
		put_u32(w, m->u.membership.n);
		put_members(w, m->u.membership.members, m->u.membership.n);
		break;
	case WIRE_PROGRESS:
		put_i64(w, m->u.progress.clock);
		put_f32(w, m->u.progress.samples_per_s);
		put_f32(w, m->u.progress.loss);
		put_f32(w, m->u.progress.accuracy);
		put_u8(w, m->u.progress.stage);
		put_le(w, 0, 3);
		put_u64(w, m->u.progress.epoch);
		put_u64(w, m->u.progress.samples);
		put_u64(w, m->u.progress.total_samples);
		put_i64(w, m->u.progress.total_clock);
		put_u32(w, m->u.progress.n);
		put_members(w, m->u.progress.members, m->u.progress.n);
		break;
	case WIRE_LEAVE:
		put_i64(w, m->u.leave.deadline_us);
		put_u8(w, m->u.leave.reason);
		break;
	case WIRE_SHUTDOWN:
		put_u8(w, m->u.shutdown.reason);
		break;
	case WIRE_ACK:
		put_u64(w, m->u.ack.ref_seq);
		put_u32(w, m->u.ack.status);
		put_str(w, m->u.ack.detail);
		break;
	case WIRE_COMMAND:
		put_u8(w, m->u.command.op);
		put_u8(w, m->u.command.stage);
		put_u8(w, m->u.command.roles);
		put_u8(w, 0);
		put_u32(w, m->u.command.node.v);
		put_i64(w, m->u.command.deadline_us);
		break;
	default:
		w->bad = true;
	}
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

static bool mac(struct wire_ctx *ctx, const uint8_t *buf, size_t n,
		uint8_t out[WIRE_MAC_LEN])
{
	uint64_t t0 = now_ns();
	unsigned int len = 0;
	bool ok;

	ok = HMAC(EVP_sha256(), ctx->key, KEY_LEN, buf, n, out, &len) &&
	     len == WIRE_MAC_LEN;
	count(&ctx->mac_ns, now_ns() - t0);
	return ok;
}

enum px_err wire_seal(struct wire_ctx *ctx, struct wire_msg *m,
		      size_t max_payload, uint8_t *buf, size_t len,
		      size_t *ret_len, struct px_error *err)
{
	struct wr w = { buf, len, false };
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
	put_payload(&w, m);
	if (w.bad || (size_t)(w.p - buf) != WIRE_HDR_LEN + plen)
		return px_errorf(err, PX_EINVAL, "%s: encoding failed",
				 wire_type_name(m->hdr.type));
	if (!mac(ctx, buf, WIRE_HDR_LEN + plen, w.p))
		return px_errorf(err, PX_EINVAL, "HMAC-SHA256 failed");
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

/* ---- decoding ---- */

/* Decode a shard array after checking its count against what is left. */
static bool get_shards(struct rd *r, uint32_t n, struct wire_msg *m,
		       const struct wire_shard **ret, bool *oom)
{
	struct wire_shard *s;

	if (n > WIRE_SHARDS_MAX || (size_t)n * SHARD_LEN != r->left)
		return false;
	*ret = NULL;
	if (!n)
		return true;
	s = px_calloc(n, sizeof(*s));
	if (!s) {
		*oom = true;
		return false;
	}
	m->owned = s;
	for (uint32_t i = 0; i < n; i++) {
		s[i].shard = get_u32(r);
		s[i].active.v = get_u32(r);
		s[i].backup.v = get_u32(r);
		get_zero(r, 4);
		s[i].offset = get_u64(r);
		s[i].count = get_u64(r);
		if (!range_ok(s[i].offset, s[i].count))
			return false;
	}
	*ret = s;
	return !r->bad;
}

static bool get_members(struct rd *r, uint32_t n, struct wire_msg *m,
			const struct wire_member **ret, bool *oom)
{
	struct wire_member *mb;

	if (n > WIRE_MEMBERS_MAX || (size_t)n * MEMBER_MIN > r->left)
		return false;
	*ret = NULL;
	if (!n)
		return true;
	mb = px_calloc(n, sizeof(*mb));
	if (!mb) {
		*oom = true;
		return false;
	}
	m->owned = mb;
	for (uint32_t i = 0; i < n && !r->bad; i++) {
		mb[i].node.v = get_u32(r);
		mb[i].roles = get_u8(r);
		mb[i].state = get_u8(r);
		mb[i].session = get_u64(r);
		mb[i].floor = get_u64(r);
		get_str(r, mb[i].addr);
		if (mb[i].roles & ~WIRE_ROLE_ALL || mb[i].state == 0 ||
		    mb[i].state >= WIRE_MEMBER_STATE_MAX)
			return false;
	}
	*ret = mb;
	return !r->bad;
}

/* Decode m's payload from r; false if malformed (or *oom). */
static bool get_payload(struct rd *r, struct wire_msg *m, bool *oom)
{
	struct wire_range *rg = &m->u.range;
	uint32_t n;

	switch (m->hdr.type) {
	case WIRE_HELLO:
		get_nonce(r, m->u.hello.nonce);
		break;
	case WIRE_CHALLENGE:
		get_nonce(r, m->u.challenge.echo);
		get_nonce(r, m->u.challenge.nonce);
		break;
	case WIRE_REGISTER:
		get_nonce(r, m->u.reg.echo);
		m->u.reg.mem_mib = get_u32(r);
		m->u.reg.ncpu = get_u16(r);
		m->u.reg.ngpu = get_u16(r);
		m->u.reg.roles = get_u8(r);
		get_str(r, m->u.reg.instance);
		get_str(r, m->u.reg.addr);
		if (m->u.reg.roles & ~WIRE_ROLE_ALL)
			return false;
		break;
	case WIRE_ASSIGN:
		m->u.assign.roles = get_u8(r);
		m->u.assign.stage = get_u8(r);
		m->u.assign.staleness = get_u16(r);
		n = get_u32(r);
		m->u.assign.start_clock = get_i64(r);
		m->u.assign.part_first = get_u64(r);
		m->u.assign.part_count = get_u64(r);
		m->u.assign.nparams = get_u64(r);
		if (r->bad || m->u.assign.roles & ~WIRE_ROLE_ALL ||
		    m->u.assign.stage < 1 || m->u.assign.stage > 3 ||
		    !range_ok(m->u.assign.part_first, m->u.assign.part_count))
			return false;
		m->u.assign.nshards = n;
		if (!get_shards(r, n, m, &m->u.assign.shards, oom))
			return false;
		break;
	case WIRE_HEARTBEAT:
		m->u.heartbeat.wall_us = get_i64(r);
		m->u.heartbeat.status = get_u32(r);
		break;
	case WIRE_CLOCK:
		m->u.clock.samples = get_u64(r);
		break;
	case WIRE_CLOCK_MIN:
		m->u.clock_min.min_clock = get_i64(r);
		m->u.clock_min.total_clock = get_i64(r);
		m->u.clock_min.staleness = get_u16(r);
		break;
	case WIRE_PUSH:
	case WIRE_PARAMS:
	case WIRE_FORWARD:
		rg->shard = get_u32(r);
		n = get_u32(r);
		rg->offset = get_u64(r);
		rg->clock = get_i64(r);
		get_zero(r, 8);
		if (r->bad || (size_t)n * 4 != r->left ||
		    !range_ok(rg->offset, n))
			return false;
		rg->data.n = n;
		rg->data.f = NULL;
		rg->data.raw = get_bytes(r, (size_t)n * 4);
		break;
	case WIRE_PULL:
		m->u.pull.shard = get_u32(r);
		get_zero(r, 4);
		m->u.pull.offset = get_u64(r);
		m->u.pull.count = get_u64(r);
		m->u.pull.min_clock = get_i64(r);
		if (!range_ok(m->u.pull.offset, m->u.pull.count))
			return false;
		break;
	case WIRE_STAGE:
		m->u.stage.stage = get_u8(r);
		get_zero(r, 3);
		m->u.stage.epoch = get_u32(r);
		m->u.stage.at_clock = get_i64(r);
		n = get_u32(r);
		if (r->bad || m->u.stage.stage < 1 || m->u.stage.stage > 3)
			return false;
		m->u.stage.nshards = n;
		if (!get_shards(r, n, m, &m->u.stage.shards, oom))
			return false;
		break;
	case WIRE_MEMBERSHIP:
		m->u.membership.epoch = get_u64(r);
		n = get_u32(r);
		if (r->bad)
			return false;
		m->u.membership.n = n;
		if (!get_members(r, n, m, &m->u.membership.members, oom))
			return false;
		break;
	case WIRE_PROGRESS:
		m->u.progress.clock = get_i64(r);
		m->u.progress.samples_per_s = get_f32(r);
		m->u.progress.loss = get_f32(r);
		m->u.progress.accuracy = get_f32(r);
		m->u.progress.stage = get_u8(r);
		get_zero(r, 3);
		m->u.progress.epoch = get_u64(r);
		m->u.progress.samples = get_u64(r);
		m->u.progress.total_samples = get_u64(r);
		m->u.progress.total_clock = get_i64(r);
		n = get_u32(r);
		if (r->bad || m->u.progress.stage < 1 ||
		    m->u.progress.stage > 3)
			return false;
		m->u.progress.n = n;
		if (!get_members(r, n, m, &m->u.progress.members, oom))
			return false;
		break;
	case WIRE_LEAVE:
		m->u.leave.deadline_us = get_i64(r);
		m->u.leave.reason = get_u8(r);
		if (m->u.leave.reason == 0 ||
		    m->u.leave.reason >= WIRE_LEAVE_REASON_MAX)
			return false;
		break;
	case WIRE_SHUTDOWN:
		m->u.shutdown.reason = get_u8(r);
		if (m->u.shutdown.reason == 0 ||
		    m->u.shutdown.reason >= WIRE_SHUTDOWN_REASON_MAX)
			return false;
		break;
	case WIRE_ACK:
		m->u.ack.ref_seq = get_u64(r);
		m->u.ack.status = get_u32(r);
		get_str(r, m->u.ack.detail);
		break;
	case WIRE_COMMAND:
		m->u.command.op = get_u8(r);
		m->u.command.stage = get_u8(r);
		m->u.command.roles = get_u8(r);
		get_zero(r, 1);
		m->u.command.node.v = get_u32(r);
		m->u.command.deadline_us = get_i64(r);
		if (!command_ok(&m->u.command))
			return false;
		break;
	default:
		return false;
	}
	return !r->bad && r->left == 0;
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

static enum px_err drop(struct wire_stats *st, enum wire_drop d,
			enum wire_drop *ret_drop)
{
	if (st)
		st->dropped[d]++;
	*ret_drop = d;
	return PX_EPROTO;
}

enum px_err wire_open(struct wire_ctx *ctx, const uint8_t *buf, size_t len,
		      size_t max_payload, uint64_t now_us,
		      struct wire_stats *st, struct wire_msg *ret,
		      enum wire_drop *ret_drop)
{
	struct rd r = { buf, len, false };
	uint8_t tag[WIRE_MAC_LEN];
	struct wire_msg m;
	struct wire_hdr *h = &m.hdr;
	bool oom = false;
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
	if (!mac(ctx, buf, WIRE_HDR_LEN + h->payload_len, tag) ||
	    CRYPTO_memcmp(tag, buf + WIRE_HDR_LEN + h->payload_len,
			  WIRE_MAC_LEN) != 0)
		return drop(st, WIRE_DROP_BAD_MAC, ret_drop);
	/* Authentic from here on: a holder of the job key sent it. */
	if (h->type == 0 || h->type >= WIRE_TYPE_MAX ||
	    h->flags & ~WIRE_F_ALL || !wire_flags_ok(h->type, h->flags) ||
	    h->seq == 0 || h->session == 0 ||
	    wire_node_eq(h->sender, WIRE_NODE_ALL))
		return drop(st, WIRE_DROP_BAD_HEADER, ret_drop);
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
	if (st)
		st->accepted++;
	*ret = m;
	*ret_drop = WIRE_DROP_NONE;
	return PX_OK;
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
	if (pthread_mutex_init(&ctx->lock, NULL) != 0) {
		r = px_errorf(err, PX_ENOMEM, "pthread_mutex_init failed");
		goto out_free_peers;
	}
	*ret = ctx;
	return PX_OK;

out_free_peers:
	free(ctx->peers);
out_free_ctx:
	OPENSSL_cleanse(ctx->key, sizeof(ctx->key));
	free(ctx);
	return r;
}

void wire_ctx_free(struct wire_ctx *ctx)
{
	if (!ctx)
		return;
	pthread_mutex_destroy(&ctx->lock);
	OPENSSL_cleanse(ctx->key, sizeof(ctx->key));
	free(ctx->peers);
	free(ctx);
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
