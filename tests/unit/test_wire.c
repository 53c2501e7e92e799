/* test_wire.c -- wire frames: round trips of every type, handshakes,
 * replay windows, drop reasons, truncations and bit flips. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "../../trainer/dist/wire.h"

static const uint8_t KEY[32] = "proteus-test-job-key-0123456789";
static const uint8_t KEY2[32] = "another-job-key-abcdefghijklmnop";
#define JOB 77
#define NODE_A ((struct wire_node){ 1 })
#define NODE_B ((struct wire_node){ 2 })
#define NODE_C ((struct wire_node){ 3 })
#define MAXP WIRE_PAYLOAD_DEFAULT
#define NOW 1000000u

static struct wire_ctx *ctx_new(struct wire_node self, const uint8_t *key,
				uint64_t job, uint32_t max_peers)
{
	struct wire_config c = { .self = self, .job = job, .job_key = key,
				 .job_key_len = 32, .max_peers = max_peers };
	struct wire_ctx *ctx = NULL;
	struct px_error e;

	cr_assert_eq(wire_ctx_new(&c, &ctx, &e), PX_OK, "%s", e.msg);
	return ctx;
}

/* Seal m at from, open at to; the result keeps the frame alive. */
/* m is refused for the field its error names (ok: taken). */
static void encodes(struct wire_ctx *a, struct wire_msg *m, const char *bad)
{
	struct px_error e = {0};
	uint8_t *buf = NULL;
	size_t len;

	cr_assert_eq(wire_encode(a, m, MAXP, &buf, &len, &e),
		     bad ? PX_EINVAL : PX_OK, "%s", e.msg);
	if (bad)
		cr_assert(strstr(e.msg, bad) != NULL, "%s", e.msg);
	free(buf);
}

static enum wire_drop xfer_at(struct wire_ctx *from, struct wire_ctx *to,
			      struct wire_msg *m, uint64_t now,
			      struct wire_stats *st, struct wire_msg *out)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	enum wire_drop d = WIRE_DROP_MAX;
	struct px_error e;
	enum px_err r;

	cr_assert_eq(wire_encode(from, m, MAXP, &buf, &len, &e), PX_OK,
		     "%s", e.msg);
	r = wire_open(to, buf, len, MAXP, now, st, out, &d);
	if (r == PX_OK) {
		cr_assert_eq(d, WIRE_DROP_NONE);
		out->frame = buf;
		out->frame_free = free;
	} else {
		cr_assert_eq(r, PX_EPROTO);
		cr_assert_neq(d, WIRE_DROP_NONE);
		free(buf);
	}
	return d;
}

static enum wire_drop xfer(struct wire_ctx *from, struct wire_ctx *to,
			   struct wire_msg *m, struct wire_msg *out)
{
	return xfer_at(from, to, m, NOW, NULL, out);
}

/* Client cli registers with server srv through the three frames. */
static void handshake(struct wire_ctx *cli, struct wire_ctx *srv)
{
	struct wire_msg h, hin, c, cin, g, gin;
	struct px_error e;

	cr_assert_eq(wire_hello_begin(cli, wire_ctx_self(srv), NOW, &h, &e),
		     PX_OK);
	cr_assert_eq(xfer(cli, srv, &h, &hin), WIRE_DROP_NONE);
	cr_assert_eq(wire_challenge_begin(srv, &hin, NOW, &c, &e), PX_OK);
	cr_assert_eq(xfer(srv, cli, &c, &cin), WIRE_DROP_NONE);
	wire_register_begin(&cin, &g);
	g.u.reg.roles = WIRE_ROLE_WORKER;
	cr_assert_eq(xfer(cli, srv, &g, &gin), WIRE_DROP_NONE);
	cr_assert(wire_peer_known(srv, wire_ctx_self(cli)));
	cr_assert(wire_peer_known(cli, wire_ctx_self(srv)));
	wire_msg_release(&hin);
	wire_msg_release(&cin);
	wire_msg_release(&gin);
}

static void duo(struct wire_ctx **a, struct wire_ctx **b)
{
	*a = ctx_new(NODE_A, KEY, JOB, 0);
	*b = ctx_new(NODE_B, KEY, JOB, 0);
	handshake(*a, *b);
}

Test(wire, derive_key)
{
	uint8_t k1[32], k2[32], k3[32], k4[32];
	struct px_error e;

	cr_assert_eq(wire_derive_key(KEY, 32, 1, k1, &e), PX_OK);
	cr_assert_eq(wire_derive_key(KEY, 32, 1, k2, &e), PX_OK);
	cr_assert_eq(wire_derive_key(KEY, 32, 2, k3, &e), PX_OK);
	cr_assert_eq(wire_derive_key(KEY2, 32, 1, k4, &e), PX_OK);
	cr_assert_arr_eq(k1, k2, 32);
	cr_assert(memcmp(k1, k3, 32) != 0, "job id not in the key");
	cr_assert(memcmp(k1, k4, 32) != 0, "job key not in the key");
	cr_assert(memcmp(k1, KEY, 32) != 0, "key used as is");
	cr_assert_eq(wire_derive_key(KEY, 15, 1, k1, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "job key") != NULL, "%s", e.msg);
}

Test(wire, header_layout)
{
	struct wire_ctx *a, *b;
	struct wire_msg m;
	uint8_t *buf;
	size_t len;
	float one = 1.0f;
	static const uint8_t one_le[4] = { 0x00, 0x00, 0x80, 0x3f };

	duo(&a, &b);
	wire_msg_init(&m, WIRE_PUSH, NODE_B, -5);
	m.u.range.data.f = &one;
	m.u.range.data.n = 1;
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, NULL), PX_OK);
	cr_assert_eq(len, WIRE_OVERHEAD + WIRE_RANGE_PREFIX + 4);
	cr_assert_arr_eq(buf, "PXWP", 4);
	cr_assert_eq(buf[4], WIRE_VERSION);
	cr_assert_eq(buf[6], WIRE_PUSH);
	cr_assert_eq(buf[12], 1);                   /* sender */
	cr_assert_eq(buf[16], 2);                   /* dest */
	cr_assert_eq(buf[20], WIRE_RANGE_PREFIX + 4); /* payload length */
	cr_assert_eq(buf[24], JOB);
	uint64_t ds = 0;
	for (int i = 7; i >= 0; i--)
		ds = ds << 8 | buf[40 + i];
	cr_assert_eq(ds, wire_ctx_session(b));      /* dest session */
	cr_assert_eq(buf[48], m.hdr.seq);
	cr_assert_eq(buf[56], 0xfb);                /* clock -5 */
	cr_assert_eq(buf[63], 0xff);
	cr_assert_arr_eq(buf + WIRE_HDR_LEN + WIRE_RANGE_PREFIX, one_le, 4);
	/* The tag is AES-256-GMAC over header and payload, under the
	 * sender session's frame key (HKDF-Expand of the job's MAC key),
	 * nonce seq || 0 (docs/protocol.md, "Keys"). */
	uint8_t key[32], fkey[32], tag[16], iv[12] = { 0 };
	uint8_t info[17 + 8 + 4 + 8 + 1] = "proteus frame key";
	unsigned int tlen;
	uint64_t sess = wire_ctx_session(a);
	int outl;
	cr_assert_eq(wire_derive_key(KEY, 32, JOB, key, NULL), PX_OK);
	for (int i = 0; i < 8; i++) {
		info[17 + i] = (uint8_t)((uint64_t)JOB >> (8 * i));
		info[29 + i] = (uint8_t)(sess >> (8 * i));
		iv[i] = (uint8_t)(m.hdr.seq >> (8 * i));
	}
	info[25] = 1;                                /* node 1 */
	info[37] = 1;                                /* HKDF block 1 */
	HMAC(EVP_sha256(), key, 32, info, sizeof(info), fkey, &tlen);
	EVP_CIPHER_CTX *g = EVP_CIPHER_CTX_new();
	cr_assert(EVP_EncryptInit_ex(g, EVP_aes_256_gcm(), NULL, fkey, iv));
	cr_assert(EVP_EncryptUpdate(g, NULL, &outl, buf, (int)len - 16));
	cr_assert(EVP_EncryptFinal_ex(g, NULL, &outl));
	cr_assert(EVP_CIPHER_CTX_ctrl(g, EVP_CTRL_GCM_GET_TAG, 16, tag));
	EVP_CIPHER_CTX_free(g);
	cr_assert_eq(WIRE_MAC_LEN, 16);
	cr_assert_arr_eq(tag, buf + len - 16, 16);
	free(buf);
	wire_ctx_free(a);
	wire_ctx_free(b);
}

static void check_shards(const struct wire_shard *got,
			 const struct wire_shard *want, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		cr_assert_eq(got[i].shard, want[i].shard);
		cr_assert_eq(got[i].active.v, want[i].active.v);
		cr_assert_eq(got[i].backup.v, want[i].backup.v);
		cr_assert_eq(got[i].offset, want[i].offset);
		cr_assert_eq(got[i].count, want[i].count);
	}
}

static void check_members(const struct wire_member *got,
			  const struct wire_member *want, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		cr_assert_eq(got[i].node.v, want[i].node.v);
		cr_assert_eq(got[i].roles, want[i].roles);
		cr_assert_eq(got[i].state, want[i].state);
		cr_assert_eq(got[i].session, want[i].session);
		cr_assert_eq(got[i].floor, want[i].floor);
		cr_assert_eq(got[i].speed, want[i].speed);
		cr_assert_eq(got[i].slow, want[i].slow);
		cr_assert_str_eq(got[i].addr, want[i].addr);
	}
}

static const struct wire_shard SHARDS[3] = {
	{ 0, { 1 }, { 2 }, 0, 1000 },
	{ 1, { 3 }, { UINT32_MAX }, 1000, 2000 },
	{ 7, { 9 }, { 4 }, UINT64_C(1) << 40, 5 },
};

static const struct wire_member MEMBERS[2] = {
	{ { 1 }, WIRE_ROLE_WORKER | WIRE_ROLE_PS_BACKUP, WIRE_MEMBER_ACTIVE,
	  0x1122334455667788u, 42, 0, 0, 12.5f, 1, "tcp://10.0.0.1:7001" },
	{ { 5 }, WIRE_ROLE_PS_ACTIVE, WIRE_MEMBER_LEAVING, 9, 1,
	  WIRE_LEAVE_EVICTION, 1700000000123456, 0, 0, "" },
};

/* Every type: encode at A, decode at B, compare every field. */
Test(wire, round_trip_every_type)
{
	struct wire_ctx *a, *b;
	struct wire_msg m, o;
	float data[5] = { 1.5f, -2.25f, 0.0f, 3e-8f, 1e30f }, got[5];
	int seen = 0;

	duo(&a, &b);

	wire_msg_init(&m, WIRE_ASSIGN, NODE_B, 3);
	m.u.assign = (struct wire_assign){ WIRE_ROLE_WORKER, 2, 3, 17, 100,
					   200, 3000, 3, SHARDS, 8 };
	cr_assert_eq(xfer(a, b, &m, &o), WIRE_DROP_NONE);
	cr_assert_eq(o.hdr.type, WIRE_ASSIGN);
	cr_assert_eq(o.hdr.clock, 3);
	cr_assert_eq(o.hdr.sender.v, 1);
	cr_assert_eq(o.hdr.session, wire_ctx_session(a));
	cr_assert_eq(o.u.assign.roles, WIRE_ROLE_WORKER);
	cr_assert_eq(o.u.assign.stage, 2);
	cr_assert_eq(o.u.assign.staleness, 3);
	cr_assert_eq(o.u.assign.start_clock, 17);
	cr_assert_eq(o.u.assign.part_first, 100);
	cr_assert_eq(o.u.assign.part_count, 200);
	cr_assert_eq(o.u.assign.nparams, 3000);
	cr_assert_eq(o.u.assign.nshards, 3);
	cr_assert_eq(o.u.assign.clock_batches, 8);
	check_shards(o.u.assign.shards, SHARDS, 3);
	wire_msg_release(&o);
	seen++;

	wire_msg_init(&m, WIRE_HEARTBEAT, NODE_B, 4);
	m.u.heartbeat.wall_us = -123456789012345;
	m.u.heartbeat.status = 0xdeadbeef;
	m.u.heartbeat.batches_done = 3;
	m.u.heartbeat.batches = 8;
	m.u.heartbeat.speed = 41.25f;
	cr_assert_eq(xfer(a, b, &m, &o), WIRE_DROP_NONE);
	cr_assert_eq(o.u.heartbeat.wall_us, -123456789012345);
	cr_assert_eq(o.u.heartbeat.status, 0xdeadbeef);
	cr_assert_eq(o.u.heartbeat.batches_done, 3);
	cr_assert_eq(o.u.heartbeat.batches, 8);
	cr_assert_eq(o.u.heartbeat.speed, 41.25f);
	wire_msg_release(&o);
	seen++;

	wire_msg_init(&m, WIRE_CLOCK, NODE_B, 9);
	m.u.clock.samples = UINT64_MAX - 1;
	m.u.clock.batch = 96;
	m.u.clock.batches = 8;
	m.u.clock.grad_sq_small = 2.5f;
	m.u.clock.grad_sq_big = 0.75f;
	cr_assert_eq(xfer(a, b, &m, &o), WIRE_DROP_NONE);
	cr_assert_eq(o.hdr.clock, 9);
	cr_assert_eq(o.u.clock.samples, UINT64_MAX - 1);
	cr_assert_eq(o.u.clock.batch, 96);
	cr_assert_eq(o.u.clock.batches, 8);
	cr_assert_eq(o.u.clock.grad_sq_small, 2.5f);
	cr_assert_eq(o.u.clock.grad_sq_big, 0.75f);
	wire_msg_release(&o);
	seen++;

	wire_msg_init(&m, WIRE_CLOCK_MIN, WIRE_NODE_ALL, 9);
	m.u.clock_min.min_clock = 7;
	m.u.clock_min.total_clock = -3;
	m.u.clock_min.staleness = 65535;
	m.u.clock_min.batch = 32;
	m.u.clock_min.lr_scale = 1.5f;
	cr_assert_eq(xfer(a, b, &m, &o), WIRE_DROP_NONE);
	cr_assert_eq(o.u.clock_min.batch, 32);
	cr_assert_eq(o.u.clock_min.lr_scale, 1.5f);
	cr_assert_eq(o.hdr.dest.v, UINT32_MAX);
	cr_assert_eq(o.u.clock_min.min_clock, 7);
	cr_assert_eq(o.u.clock_min.total_clock, -3);
	cr_assert_eq(o.u.clock_min.staleness, 65535);
	wire_msg_release(&o);
	seen++;

	for (int t = WIRE_PUSH; t <= WIRE_FORWARD; t++) {
		if (t == WIRE_PULL)
			continue;
		wire_msg_init(&m, t, NODE_B, 11);
		m.hdr.flags = WIRE_F_MORE;
		m.u.range.shard = 4;
		m.u.range.offset = 123456789;
		m.u.range.clock = 10;
		m.u.range.data.f = data;
		m.u.range.data.n = 5;
		cr_assert_eq(xfer(a, b, &m, &o), WIRE_DROP_NONE);
		cr_assert_eq(o.hdr.type, t);
		cr_assert_eq(o.hdr.flags, WIRE_F_MORE);
		cr_assert_eq(o.u.range.shard, 4);
		cr_assert_eq(o.u.range.offset, 123456789);
		cr_assert_eq(o.u.range.clock, 10);
		cr_assert_eq(o.u.range.data.n, 5);
		cr_assert_null(o.u.range.data.f);
		wire_f32_copy(&o.u.range.data, got);
		cr_assert_arr_eq(got, data, sizeof(data));
		wire_msg_release(&o);
		seen++;
	}

	wire_msg_init(&m, WIRE_PULL, NODE_B, 0);
	m.u.pull = (struct wire_pull){ 3, 99, 1000, 6 };
	cr_assert_eq(xfer(a, b, &m, &o), WIRE_DROP_NONE);
	cr_assert_eq(o.u.pull.shard, 3);
	cr_assert_eq(o.u.pull.offset, 99);
	cr_assert_eq(o.u.pull.count, 1000);
	cr_assert_eq(o.u.pull.min_clock, 6);
	wire_msg_release(&o);
	seen++;

	wire_msg_init(&m, WIRE_STAGE, WIRE_NODE_ALL, 20);
	m.u.stage = (struct wire_stage){ 3, 12, 21, 2, SHARDS };
	cr_assert_eq(xfer(a, b, &m, &o), WIRE_DROP_NONE);
	cr_assert_eq(o.u.stage.stage, 3);
	cr_assert_eq(o.u.stage.epoch, 12);
	cr_assert_eq(o.u.stage.at_clock, 21);
	cr_assert_eq(o.u.stage.nshards, 2);
	check_shards(o.u.stage.shards, SHARDS, 2);
	wire_msg_release(&o);
	seen++;

	wire_msg_init(&m, WIRE_MEMBERSHIP, WIRE_NODE_ALL, 20);
	m.u.membership = (struct wire_membership){ 5, 2, MEMBERS };
	cr_assert_eq(xfer(a, b, &m, &o), WIRE_DROP_NONE);
	cr_assert_eq(o.u.membership.epoch, 5);
	cr_assert_eq(o.u.membership.n, 2);
	check_members(o.u.membership.members, MEMBERS, 2);
	wire_msg_release(&o);
	seen++;

	wire_msg_init(&m, WIRE_PROGRESS, NODE_B, 20);
	m.u.progress = (struct wire_progress){
		.clock = 19, .samples_per_s = 1234.5f, .loss = 0.25f,
		.accuracy = 0.875f, .stage = 3, .epoch = 5,
		.samples = UINT64_MAX - 2, .total_samples = 600000,
		.total_clock = 4690, .goodput = 900.5f, .efficiency = 0.75f,
		.noise_scale = 412.0f, .batch = 64, .lr_scale = 1.25f, .n = 2,
		.members = MEMBERS };
	cr_assert_eq(xfer(a, b, &m, &o), WIRE_DROP_NONE);
	cr_assert_eq(o.u.progress.goodput, 900.5f);
	cr_assert_eq(o.u.progress.efficiency, 0.75f);
	cr_assert_eq(o.u.progress.noise_scale, 412.0f);
	cr_assert_eq(o.u.progress.batch, 64);
	cr_assert_eq(o.u.progress.lr_scale, 1.25f);
	cr_assert_eq(o.u.progress.stage, 3);
	cr_assert_eq(o.u.progress.samples, UINT64_MAX - 2);
	cr_assert_eq(o.u.progress.total_samples, 600000);
	cr_assert_eq(o.u.progress.total_clock, 4690);
	cr_assert_eq(o.u.progress.clock, 19);
	cr_assert_eq(o.u.progress.samples_per_s, 1234.5f);
	cr_assert_eq(o.u.progress.loss, 0.25f);
	cr_assert_eq(o.u.progress.accuracy, 0.875f);
	cr_assert_eq(o.u.progress.epoch, 5);
	cr_assert_eq(o.u.progress.n, 2);
	check_members(o.u.progress.members, MEMBERS, 2);
	wire_msg_release(&o);
	seen++;

	wire_msg_init(&m, WIRE_LEAVE, NODE_B, 20);
	m.u.leave.deadline_us = 1700000000000000;
	m.u.leave.reason = WIRE_LEAVE_EVICTION;
	cr_assert_eq(xfer(a, b, &m, &o), WIRE_DROP_NONE);
	cr_assert_eq(o.u.leave.deadline_us, 1700000000000000);
	cr_assert_eq(o.u.leave.reason, WIRE_LEAVE_EVICTION);
	wire_msg_release(&o);
	seen++;

	wire_msg_init(&m, WIRE_SHUTDOWN, WIRE_NODE_ALL, 20);
	m.u.shutdown.reason = WIRE_SHUTDOWN_DONE;
	cr_assert_eq(xfer(a, b, &m, &o), WIRE_DROP_NONE);
	cr_assert_eq(o.u.shutdown.reason, WIRE_SHUTDOWN_DONE);
	wire_msg_release(&o);
	seen++;

	wire_msg_init(&m, WIRE_ACK, NODE_B, 20);
	m.u.ack.ref_seq = 77;
	m.u.ack.status = PX_ETIMEDOUT;
	snprintf(m.u.ack.detail, sizeof(m.u.ack.detail), "shard '%d' busy",
		 3);
	cr_assert_eq(xfer(a, b, &m, &o), WIRE_DROP_NONE);
	cr_assert_eq(o.u.ack.ref_seq, 77);
	cr_assert_eq(o.u.ack.status, PX_ETIMEDOUT);
	cr_assert_str_eq(o.u.ack.detail, "shard '3' busy");
	wire_msg_release(&o);
	seen++;

	wire_msg_init(&m, WIRE_COMMAND, NODE_B, 20);
	m.u.command = (struct wire_command){ WIRE_CMD_EXPECT, 0,
					     WIRE_ROLE_WORKER, { 4201 }, 0, 0 };
	cr_assert_eq(xfer(a, b, &m, &o), WIRE_DROP_NONE);
	cr_assert_eq(o.u.command.op, WIRE_CMD_EXPECT);
	cr_assert_eq(o.u.command.roles, WIRE_ROLE_WORKER);
	cr_assert_eq(o.u.command.node.v, 4201);
	wire_msg_release(&o);
	wire_msg_init(&m, WIRE_COMMAND, NODE_B, 20);
	m.u.command = (struct wire_command){ WIRE_CMD_LEAVE, 0, 0, { 7 },
					     -1700000000000001, 0 };
	cr_assert_eq(xfer(a, b, &m, &o), WIRE_DROP_NONE);
	cr_assert_eq(o.u.command.deadline_us, -1700000000000001);
	cr_assert_eq(o.u.command.reason, 0, "0: an eviction");
	wire_msg_release(&o);
	wire_msg_init(&m, WIRE_COMMAND, NODE_B, 20);
	m.u.command = (struct wire_command){ WIRE_CMD_LEAVE, 0, 0, { 7 },
					     1700000000000001,
					     WIRE_LEAVE_RELEASE };
	cr_assert_eq(xfer(a, b, &m, &o), WIRE_DROP_NONE);
	cr_assert_eq(o.u.command.reason, WIRE_LEAVE_RELEASE);
	cr_assert_eq(o.u.command.node.v, 7);
	wire_msg_release(&o);
	seen++;

	wire_msg_init(&m, WIRE_REASSIGN, NODE_B, 33);
	m.u.reassign = (struct wire_reassign){
		.op = WIRE_REASSIGN_HELP, .straggler = { 1001 },
		.helper = { 1000 }, .first = 5, .count = 3, .part_lo = 3000,
		.part_hi = 6000, .rank = 1, .pass = 7, .pos = 2944,
		.samples = 0 };
	cr_assert_eq(xfer(a, b, &m, &o), WIRE_DROP_NONE);
	{
		const struct wire_reassign *r = &o.u.reassign;

		cr_assert_eq(o.hdr.clock, 33);
		cr_assert(r->op == WIRE_REASSIGN_HELP &&
			  r->straggler.v == 1001 && r->helper.v == 1000 &&
			  r->first == 5 && r->count == 3 &&
			  r->part_lo == 3000 && r->part_hi == 6000 &&
			  r->rank == 1 && r->pass == 7 && r->pos == 2944 &&
			  r->samples == 0, "REASSIGN changed on the way");
	}
	wire_msg_release(&o);
	seen++;

	{
		static const uint32_t ids[3] = { 0, 7, 4000000 };
		static const float vals[6] = { 1, -2, 3.5f, 0, -0.25f, 9 };

		wire_msg_init(&m, WIRE_ROWS, NODE_B, 41);
		m.hdr.flags = WIRE_F_MORE;
		m.u.rows = (struct wire_rows){
			.op = WIRE_ROWS_PUSH, .shard = 3, .width = 2,
			.clock = 40, .ids = { ids, NULL, 3 },
			.data = { vals, NULL, 6 } };
		cr_assert_eq(xfer(a, b, &m, &o), WIRE_DROP_NONE);
		{
			const struct wire_rows *r = &o.u.rows;
			float back[6];

			cr_assert(r->op == WIRE_ROWS_PUSH && r->shard == 3 &&
				  r->width == 2 && r->clock == 40 &&
				  r->ids.n == 3 && r->data.n == 6 &&
				  o.hdr.flags == WIRE_F_MORE,
				  "ROWS changed on the way");
			for (uint32_t i = 0; i < 3; i++)
				cr_assert_eq(wire_u32_at(&r->ids, i), ids[i]);
			wire_f32_copy(&r->data, back);
			cr_assert_arr_eq(back, vals, sizeof(vals));
		}
		wire_msg_release(&o);
		seen++;

		wire_msg_init(&m, WIRE_PULL_ROWS, NODE_B, 41);
		m.u.pull_rows = (struct wire_pull_rows){
			.shard = 1, .width = 17, .min_clock = -1,
			.ids = { ids, NULL, 3 } };
		cr_assert_eq(xfer(a, b, &m, &o), WIRE_DROP_NONE);
		cr_assert(o.u.pull_rows.shard == 1 &&
			  o.u.pull_rows.width == 17 &&
			  o.u.pull_rows.min_clock == -1 &&
			  o.u.pull_rows.ids.n == 3 &&
			  wire_u32_at(&o.u.pull_rows.ids, 2) == 4000000,
			  "PULL_ROWS changed on the way");
		wire_msg_release(&o);
		seen++;
	}

	/* HELLO, CHALLENGE and REGISTER ran in the handshake. */
	cr_assert_eq(seen + 3, WIRE_TYPE_MAX - 1);
	wire_ctx_free(a);
	wire_ctx_free(b);
}

Test(wire, register_fields)
{
	struct wire_ctx *a = ctx_new(NODE_A, KEY, JOB, 0);
	struct wire_ctx *b = ctx_new(NODE_B, KEY, JOB, 0);
	struct wire_msg h, hin, c, cin, g, gin;

	cr_assert_eq(wire_hello_begin(a, NODE_B, NOW, &h, NULL), PX_OK);
	cr_assert_eq(xfer(a, b, &h, &hin), WIRE_DROP_NONE);
	cr_assert_arr_eq(hin.u.hello.nonce, h.u.hello.nonce, WIRE_NONCE_LEN);
	cr_assert_eq(wire_challenge_begin(b, &hin, NOW, &c, NULL), PX_OK);
	cr_assert_eq(xfer(b, a, &c, &cin), WIRE_DROP_NONE);
	cr_assert_arr_eq(cin.u.challenge.echo, h.u.hello.nonce,
			 WIRE_NONCE_LEN);
	wire_register_begin(&cin, &g);
	g.u.reg.roles = WIRE_ROLE_WORKER | WIRE_ROLE_PS_ACTIVE;
	g.u.reg.ncpu = 64;
	g.u.reg.ngpu = 8;
	g.u.reg.mem_mib = 491520;
	snprintf(g.u.reg.instance, sizeof(g.u.reg.instance), "i-0abc");
	snprintf(g.u.reg.addr, sizeof(g.u.reg.addr), "tcp://10.1.2.3:7000");
	cr_assert_eq(xfer(a, b, &g, &gin), WIRE_DROP_NONE);
	cr_assert_eq(gin.hdr.type, WIRE_REGISTER);
	cr_assert_arr_eq(gin.u.reg.echo, c.u.challenge.nonce, WIRE_NONCE_LEN);
	cr_assert_eq(gin.u.reg.roles, WIRE_ROLE_WORKER | WIRE_ROLE_PS_ACTIVE);
	cr_assert_eq(gin.u.reg.ncpu, 64);
	cr_assert_eq(gin.u.reg.ngpu, 8);
	cr_assert_eq(gin.u.reg.mem_mib, 491520);
	cr_assert_str_eq(gin.u.reg.instance, "i-0abc");
	cr_assert_str_eq(gin.u.reg.addr, "tcp://10.1.2.3:7000");
	wire_msg_release(&hin);
	wire_msg_release(&cin);
	wire_msg_release(&gin);
	wire_ctx_free(a);
	wire_ctx_free(b);
}

/* Frames need an established session; handshake frames need fresh
 * nonces: replays of each handshake step and stale answers are dropped. */
Test(wire, handshake_rules)
{
	struct wire_ctx *a = ctx_new(NODE_A, KEY, JOB, 0);
	struct wire_ctx *b = ctx_new(NODE_B, KEY, JOB, 0);
	struct wire_msg m, o, h, hin, c, cin, g;
	struct wire_stats st = { 0 };
	uint8_t *cbuf, *gbuf;
	size_t clen, glen;
	enum wire_drop d;

	/* A does not know B's session yet: its frame is not for this B. */
	wire_msg_init(&m, WIRE_HEARTBEAT, NODE_B, 0);
	cr_assert_eq(xfer_at(a, b, &m, NOW, &st, &o), WIRE_DROP_NOT_FOR_US);
	/* Told B's session, A is still unknown to B. */
	wire_msg_init(&m, WIRE_HEARTBEAT, NODE_B, 0);
	m.hdr.dest_session = wire_ctx_session(b);
	cr_assert_eq(xfer_at(a, b, &m, NOW, &st, &o), WIRE_DROP_NO_SESSION);
	cr_assert_eq(st.dropped[WIRE_DROP_NO_SESSION], 1);
	cr_assert_eq(st.dropped[WIRE_DROP_NOT_FOR_US], 1);

	/* An unsolicited CHALLENGE (no HELLO outstanding) is refused. */
	wire_msg_init(&c, WIRE_CHALLENGE, NODE_A, 0);
	c.hdr.dest_session = wire_ctx_session(a);
	cr_assert_eq(xfer(b, a, &c, &o), WIRE_DROP_REPLAY);
	/* So is a REGISTER answering no challenge. */
	wire_msg_init(&g, WIRE_REGISTER, NODE_B, 0);
	g.hdr.dest_session = wire_ctx_session(b);
	cr_assert_eq(xfer(a, b, &g, &o), WIRE_DROP_REPLAY);

	cr_assert_eq(wire_hello_begin(a, NODE_B, NOW, &h, NULL), PX_OK);
	cr_assert_eq(xfer(a, b, &h, &hin), WIRE_DROP_NONE);
	cr_assert_eq(wire_challenge_begin(b, &hin, NOW, &c, NULL), PX_OK);
	cr_assert_eq(wire_encode(b, &c, MAXP, &cbuf, &clen, NULL), PX_OK);
	cr_assert_eq(wire_open(a, cbuf, clen, MAXP, NOW, NULL, &cin, &d),
		     PX_OK);
	/* The same CHALLENGE again: its nonce was used. */
	cr_assert_eq(wire_open(a, cbuf, clen, MAXP, NOW, &st, &o, &d),
		     PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_REPLAY);
	wire_register_begin(&cin, &g);
	cr_assert_eq(wire_encode(a, &g, MAXP, &gbuf, &glen, NULL), PX_OK);
	/* The REGISTER arrives after the nonce's lifetime: refused. */
	cr_assert_eq(wire_open(b, gbuf, glen, MAXP, NOW + 31000000, &st, &o,
			       &d), PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_REPLAY);
	cr_assert(!wire_peer_known(b, NODE_A));
	/* A new challenge; the old REGISTER does not answer it. */
	cr_assert_eq(wire_challenge_begin(b, &hin, NOW, &c, NULL), PX_OK);
	cr_assert_eq(wire_open(b, gbuf, glen, MAXP, NOW, &st, &o, &d),
		     PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_REPLAY);
	free(gbuf);
	free(cbuf);
	wire_msg_release(&cin);
	wire_msg_release(&hin);
	wire_ctx_free(a);
	wire_ctx_free(b);
}

Test(wire, replay_window)
{
	struct wire_ctx *a, *b;
	struct wire_msg m, o;
	uint8_t *f[WIRE_WINDOW + 3];
	size_t len[WIRE_WINDOW + 3];
	struct wire_stats st = { 0 };
	enum wire_drop d;
	int n = WIRE_WINDOW + 3;

	duo(&a, &b);
	for (int i = 0; i < n; i++) {
		wire_msg_init(&m, WIRE_CLOCK, NODE_B, i);
		cr_assert_eq(wire_encode(a, &m, MAXP, &f[i], &len[i], NULL),
			     PX_OK);
	}
	/* Frame 1 first, then the same bytes again. */
	cr_assert_eq(wire_open(b, f[1], len[1], MAXP, NOW, &st, &o, &d), PX_OK);
	cr_assert_eq(wire_open(b, f[1], len[1], MAXP, NOW, &st, &o, &d),
		     PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_REPLAY);
	/* Mild reordering: 0 after 1 is fine, once. */
	cr_assert_eq(wire_open(b, f[0], len[0], MAXP, NOW, &st, &o, &d), PX_OK);
	cr_assert_eq(wire_open(b, f[0], len[0], MAXP, NOW, &st, &o, &d),
		     PX_EPROTO);
	/* Jump to the last: frame 2 is now more than a window behind. */
	cr_assert_eq(wire_open(b, f[n - 1], len[n - 1], MAXP, NOW, &st, &o,
			       &d), PX_OK);
	cr_assert_eq(wire_open(b, f[2], len[2], MAXP, NOW, &st, &o, &d),
		     PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_REPLAY);
	/* But frame 3 is exactly inside the window. */
	cr_assert_eq(wire_open(b, f[3], len[3], MAXP, NOW, &st, &o, &d), PX_OK);
	cr_assert_eq(st.accepted, 4);
	cr_assert_eq(st.dropped[WIRE_DROP_REPLAY], 3);
	for (int i = 0; i < n; i++)
		free(f[i]);
	wire_ctx_free(a);
	wire_ctx_free(b);
}

/* A restarted node (same id, new session, seq from 1 again) is refused
 * until it registers again; afterwards its old frames stay refused. */
Test(wire, restart_needs_new_handshake)
{
	struct wire_ctx *a, *b, *a2;
	struct wire_msg m, o;
	uint8_t *old;
	size_t oldlen;
	enum wire_drop d;

	duo(&a, &b);
	wire_msg_init(&m, WIRE_CLOCK, NODE_B, 1);
	cr_assert_eq(wire_encode(a, &m, MAXP, &old, &oldlen, NULL), PX_OK);
	a2 = ctx_new(NODE_A, KEY, JOB, 0);
	cr_assert_neq(wire_ctx_session(a2), wire_ctx_session(a));
	wire_msg_init(&m, WIRE_CLOCK, NODE_B, 1);
	m.hdr.dest_session = wire_ctx_session(b);
	cr_assert_eq(xfer(a2, b, &m, &o), WIRE_DROP_NO_SESSION);
	handshake(a2, b);
	cr_assert_eq(xfer(a2, b, &m, &o), WIRE_DROP_NONE);
	wire_msg_release(&o);
	cr_assert_eq(wire_open(b, old, oldlen, MAXP, NOW, NULL, &o, &d),
		     PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_NO_SESSION);
	free(old);
	wire_ctx_free(a);
	wire_ctx_free(a2);
	wire_ctx_free(b);
}

Test(wire, drop_reasons)
{
	struct wire_ctx *a, *b, *wrongkey, *otherjob, *c;
	struct wire_msg m, o;
	struct wire_stats st = { 0 };
	uint8_t *buf;
	size_t len;
	enum wire_drop d;

	duo(&a, &b);
	wrongkey = ctx_new(NODE_A, KEY2, JOB, 0);
	otherjob = ctx_new(NODE_A, KEY, JOB + 1, 0);
	c = ctx_new(NODE_C, KEY, JOB, 0);
	handshake(a, c);

	wire_msg_init(&m, WIRE_CLOCK, NODE_B, 1);
	cr_assert_eq(xfer_at(wrongkey, b, &m, NOW, &st, &o),
		     WIRE_DROP_BAD_MAC);
	cr_assert_eq(xfer_at(otherjob, b, &m, NOW, &st, &o),
		     WIRE_DROP_BAD_JOB);
	/* Addressed to B, replayed at C (which knows A): not for C. */
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, NULL), PX_OK);
	cr_assert_eq(wire_open(c, buf, len, MAXP, NOW, &st, &o, &d),
		     PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_NOT_FOR_US);
	cr_assert_eq(wire_open(b, buf, len, 4, NOW, &st, &o, &d), PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_TOO_BIG);
	buf[0] ^= 1;
	cr_assert_eq(wire_open(b, buf, len, MAXP, NOW, &st, &o, &d),
		     PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_BAD_MAGIC);
	buf[0] ^= 1;
	buf[4] = WIRE_VERSION + 1;
	cr_assert_eq(wire_open(b, buf, len, MAXP, NOW, &st, &o, &d),
		     PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_BAD_VERSION);
	buf[4] = WIRE_VERSION;
	cr_assert_eq(wire_open(b, buf, len - 1, MAXP, NOW, &st, &o, &d),
		     PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_TOO_SHORT);
	cr_assert_eq(wire_open(b, buf, 10, MAXP, NOW, &st, &o, &d),
		     PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_TOO_SHORT);
	/* Intact, it still passes after all that. */
	cr_assert_eq(wire_open(b, buf, len, MAXP, NOW, &st, &o, &d), PX_OK);
	cr_assert_eq(st.dropped[WIRE_DROP_BAD_MAC], 1);
	cr_assert_eq(st.dropped[WIRE_DROP_BAD_JOB], 1);
	cr_assert_eq(st.dropped[WIRE_DROP_NOT_FOR_US], 1);
	cr_assert_eq(st.dropped[WIRE_DROP_TOO_BIG], 1);
	cr_assert_eq(st.dropped[WIRE_DROP_BAD_MAGIC], 1);
	cr_assert_eq(st.dropped[WIRE_DROP_BAD_VERSION], 1);
	cr_assert_eq(st.dropped[WIRE_DROP_TOO_SHORT], 2);
	cr_assert_eq(wire_stats_dropped(&st), 8);
	cr_assert_eq(st.accepted, 1);
	cr_assert_str_eq(wire_drop_name(WIRE_DROP_BAD_MAC), "bad_mac");
	free(buf);
	wire_ctx_free(a);
	wire_ctx_free(b);
	wire_ctx_free(c);
	wire_ctx_free(wrongkey);
	wire_ctx_free(otherjob);
}

/* Frames of several shapes (fixed, arrays, strings, floats). */
static void sample_frames(struct wire_ctx *a, uint8_t *f[4], size_t len[4])
{
	static const float data[6] = { 1, 2, 3, 4, 5, 6 };
	struct wire_msg m;

	wire_msg_init(&m, WIRE_ASSIGN, NODE_B, 1);
	m.u.assign = (struct wire_assign){ 1, 1, 2, 0, 0, 10, 100, 3, SHARDS,
					   1 };
	cr_assert_eq(wire_encode(a, &m, MAXP, &f[0], &len[0], NULL), PX_OK);
	wire_msg_init(&m, WIRE_MEMBERSHIP, NODE_B, 1);
	m.u.membership = (struct wire_membership){ 1, 2, MEMBERS };
	cr_assert_eq(wire_encode(a, &m, MAXP, &f[1], &len[1], NULL), PX_OK);
	wire_msg_init(&m, WIRE_PARAMS, NODE_B, 1);
	m.u.range.data.f = data;
	m.u.range.data.n = 6;
	cr_assert_eq(wire_encode(a, &m, MAXP, &f[2], &len[2], NULL), PX_OK);
	wire_msg_init(&m, WIRE_ACK, NODE_B, 1);
	snprintf(m.u.ack.detail, sizeof(m.u.ack.detail), "ok");
	cr_assert_eq(wire_encode(a, &m, MAXP, &f[3], &len[3], NULL), PX_OK);
}

/* Every truncation of a valid frame is dropped, and the decoder never
 * reads past the end (the copy has exactly the truncated size, so ASan
 * in make check catches an overread). */
Test(wire, every_truncation_dropped)
{
	struct wire_ctx *a, *b;
	struct wire_stats st = { 0 };
	struct wire_msg o;
	uint8_t *f[4];
	size_t len[4];
	enum wire_drop d;

	duo(&a, &b);
	sample_frames(a, f, len);
	for (int k = 0; k < 4; k++) {
		for (size_t n = 0; n < len[k]; n++) {
			uint8_t *t = malloc(n ? n : 1);

			memcpy(t, f[k], n);
			cr_assert_eq(wire_open(b, t, n, MAXP, NOW, &st, &o,
					       &d), PX_EPROTO,
				     "frame %d cut to %zu accepted", k, n);
			cr_assert(d == WIRE_DROP_TOO_SHORT ||
				  d == WIRE_DROP_BAD_MAGIC, "%s",
				  wire_drop_name(d));
			free(t);
		}
		/* The whole frame is still good (nothing was recorded). */
		cr_assert_eq(wire_open(b, f[k], len[k], MAXP, NOW, &st, &o,
				       &d), PX_OK);
		wire_msg_release(&o);
		free(f[k]);
	}
	wire_ctx_free(a);
	wire_ctx_free(b);
}

Test(wire, random_bit_flips_dropped)
{
	struct wire_ctx *a, *b;
	struct wire_stats st = { 0 };
	struct wire_msg o;
	uint8_t *f[4];
	size_t len[4];
	enum wire_drop d;

	srand(12345);
	duo(&a, &b);
	sample_frames(a, f, len);
	for (int k = 0; k < 4; k++) {
		uint8_t *t = malloc(len[k]);

		for (int i = 0; i < 2000; i++) {
			int flips = 1 + rand() % 3;

			memcpy(t, f[k], len[k]);
			for (int j = 0; j < flips; j++) {
				size_t bit = (size_t)rand() % (len[k] * 8);

				t[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			}
			if (memcmp(t, f[k], len[k]) == 0)
				continue;
			cr_assert_eq(wire_open(b, t, len[k], MAXP, NOW, &st,
					       &o, &d), PX_EPROTO);
		}
		free(t);
		free(f[k]);
	}
	cr_assert_eq(st.accepted, 0);
	cr_assert_gt(st.dropped[WIRE_DROP_BAD_MAC], 4000);
	wire_ctx_free(a);
	wire_ctx_free(b);
}

/* Re-seal a (mutated) frame of a's with the real key so that it reaches
 * the payload decoder: an insider's malformed frames must not crash it. */
static void reseal(struct wire_ctx *a, uint8_t *buf, size_t len)
{
	uint32_t plen = (uint32_t)(len - WIRE_OVERHEAD);

	for (int i = 0; i < 4; i++)
		buf[20 + i] = (uint8_t)(plen >> (8 * i));
	cr_assert_eq(wire_retag(a, buf, len), PX_OK);
}

Test(wire, authentic_malformed_payloads)
{
	struct wire_ctx *a, *b;
	struct wire_stats st = { 0 };
	struct wire_msg o;
	uint8_t *f[4];
	size_t len[4];
	enum wire_drop d;

	srand(777);
	duo(&a, &b);
	sample_frames(a, f, len);
	for (int k = 0; k < 4; k++) {
		size_t plen = len[k] - WIRE_OVERHEAD;

		/* Every shorter payload, properly sealed: malformed. */
		for (size_t n = 0; n < plen; n++) {
			size_t fl = WIRE_OVERHEAD + n;
			uint8_t *t = malloc(fl);

			memcpy(t, f[k], WIRE_HDR_LEN + n);
			reseal(a, t, fl);
			cr_assert_eq(wire_open(b, t, fl, MAXP, NOW, &st, &o,
					       &d), PX_EPROTO,
				     "frame %d payload cut to %zu", k, n);
			cr_assert_eq(d, WIRE_DROP_MALFORMED);
			free(t);
		}
		/* Random payload bytes, sealed: dropped or decoded sanely. */
		for (int i = 0; i < 3000; i++) {
			uint8_t *t = malloc(len[k]);

			memcpy(t, f[k], len[k]);
			for (int j = 0; j < 1 + rand() % 4; j++)
				t[WIRE_HDR_LEN + (size_t)rand() % plen] =
					(uint8_t)rand();
			reseal(a, t, len[k]);
			if (wire_open(b, t, len[k], MAXP, NOW, &st, &o, &d) ==
			    PX_OK)
				wire_msg_release(&o);
			else
				cr_assert(d == WIRE_DROP_MALFORMED ||
					  d == WIRE_DROP_REPLAY, "%s",
					  wire_drop_name(d));
			free(t);
		}
		free(f[k]);
	}
	cr_assert_gt(st.dropped[WIRE_DROP_MALFORMED], 1000);
	wire_ctx_free(a);
	wire_ctx_free(b);
}

/* An authentic frame with MORE on a type that carries no range, RESUME
 * on another than ASSIGN, or bit 1 (version 2's MOMENTUM) is a bad
 * header; on their types the flags come through. */
Test(wire, flags_only_on_their_types)
{
	struct wire_ctx *a, *b;
	struct wire_stats st = { 0 };
	struct wire_msg o;
	uint8_t *f[4];
	size_t len[4];
	enum wire_drop d;

	duo(&a, &b);
	sample_frames(a, f, len);
	f[3][8] |= WIRE_F_MORE;         /* ACK; flags are bytes 8-11 (LE) */
	reseal(a, f[3], len[3]);
	cr_assert_eq(wire_open(b, f[3], len[3], MAXP, NOW, &st, &o, &d),
		     PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_BAD_HEADER);
	f[2][8] = 1 << 1;               /* PARAMS: MOMENTUM is gone */
	reseal(a, f[2], len[2]);
	cr_assert_eq(wire_open(b, f[2], len[2], MAXP, NOW, &st, &o, &d),
		     PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_BAD_HEADER);
	f[2][8] = WIRE_F_RESUME;        /* PARAMS: RESUME is ASSIGN's */
	reseal(a, f[2], len[2]);
	cr_assert_eq(wire_open(b, f[2], len[2], MAXP, NOW, &st, &o, &d),
		     PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_BAD_HEADER);
	f[2][8] = WIRE_F_MORE;          /* PARAMS */
	reseal(a, f[2], len[2]);
	cr_assert_eq(wire_open(b, f[2], len[2], MAXP, NOW, &st, &o, &d),
		     PX_OK);
	cr_assert_eq(o.hdr.flags, WIRE_F_MORE);
	wire_msg_release(&o);
	f[0][8] |= WIRE_F_RESUME;       /* ASSIGN */
	reseal(a, f[0], len[0]);
	cr_assert_eq(wire_open(b, f[0], len[0], MAXP, NOW, &st, &o, &d),
		     PX_OK);
	cr_assert_eq(o.hdr.flags, WIRE_F_RESUME);
	wire_msg_release(&o);
	for (int k = 0; k < 4; k++)
		free(f[k]);
	wire_ctx_free(a);
	wire_ctx_free(b);
}

/* A count that the payload cannot hold is refused before allocating. */
Test(wire, huge_counts_refused)
{
	struct wire_ctx *a, *b;
	struct wire_msg m, o;
	uint8_t *buf;
	size_t len;
	enum wire_drop d;

	duo(&a, &b);
	wire_msg_init(&m, WIRE_MEMBERSHIP, NODE_B, 1);
	m.u.membership = (struct wire_membership){ 1, 1, MEMBERS };
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, NULL), PX_OK);
	/* n sits at payload offset 8. */
	memset(buf + WIRE_HDR_LEN + 8, 0xff, 4);
	reseal(a, buf, len);
	cr_assert_eq(wire_open(b, buf, len, MAXP, NOW, NULL, &o, &d),
		     PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_MALFORMED);
	free(buf);

	wire_msg_init(&m, WIRE_STAGE, NODE_B, 1);
	m.u.stage = (struct wire_stage){ 1, 1, 1, 1, SHARDS };
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, NULL), PX_OK);
	memset(buf + WIRE_HDR_LEN + 16, 0xff, 4); /* nshards */
	reseal(a, buf, len);
	cr_assert_eq(wire_open(b, buf, len, MAXP, NOW, NULL, &o, &d),
		     PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_MALFORMED);
	free(buf);

	float x = 1;
	wire_msg_init(&m, WIRE_PUSH, NODE_B, 1);
	m.u.range.data.f = &x;
	m.u.range.data.n = 1;
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, NULL), PX_OK);
	memset(buf + WIRE_HDR_LEN + 4, 0xff, 4); /* count */
	reseal(a, buf, len);
	cr_assert_eq(wire_open(b, buf, len, MAXP, NOW, NULL, &o, &d),
		     PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_MALFORMED);
	free(buf);
	wire_ctx_free(a);
	wire_ctx_free(b);
}

/* The sparse frames (--model mf): a bad width, ids out of order or
 * repeated, floats that are not ids * width, too many ids: refused when
 * sealed, and dropped as malformed when an insider seals them anyway. */
Test(wire, rows_frames_refused)
{
	static const uint32_t up[3] = { 1, 5, 9 }, dup[3] = { 1, 5, 5 },
			      down[3] = { 9, 5, 1 };
	static const float v[6] = { 0 };
	struct {
		uint8_t op;
		uint32_t width;
		const uint32_t *ids;
		uint32_t n, floats;
		const char *field;
	} bad[] = {
		{ WIRE_ROWS_PUSH, 0, up, 3, 0, "width" },
		{ WIRE_ROWS_PUSH, WIRE_ROW_WIDTH_MAX + 1, up, 1, 0, "width" },
		{ WIRE_ROWS_PUSH, 2, dup, 3, 6, "ids" },
		{ WIRE_ROWS_PUSH, 2, down, 3, 6, "ids" },
		{ WIRE_ROWS_PUSH, 2, up, 3, 5, "count" },
		{ WIRE_ROWS_PUSH, 1, up, 3, 6, "count" },
		{ 0, 2, up, 3, 6, "op" },
		{ WIRE_ROWS_OP_MAX, 2, up, 3, 6, "op" },
	};
	struct wire_ctx *a, *b;
	struct wire_msg m, o;
	struct px_error e;
	enum wire_drop d;
	uint8_t *buf;
	size_t len, sz;

	duo(&a, &b);
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		char want[64];

		wire_msg_init(&m, WIRE_ROWS, NODE_B, 1);
		m.u.rows = (struct wire_rows){
			.op = bad[k].op, .width = bad[k].width,
			.ids = { bad[k].ids, NULL, bad[k].n },
			.data = { v, NULL, bad[k].floats } };
		cr_assert_eq(wire_payload_size(&m, MAXP, &sz, &e), PX_EINVAL,
			     "case %zu", k);
		snprintf(want, sizeof want, "'%s'", bad[k].field);
		cr_assert_not_null(strstr(e.msg, want), "case %zu: %s", k,
				   e.msg);
	}
	wire_msg_init(&m, WIRE_PULL_ROWS, NODE_B, 1);
	m.u.pull_rows = (struct wire_pull_rows){ .width = 3,
						 .ids = { dup, NULL, 3 } };
	cr_assert_eq(wire_payload_size(&m, MAXP, &sz, &e), PX_EINVAL);
	cr_assert_not_null(strstr(e.msg, "'ids'"), "%s", e.msg);
	m.u.pull_rows.ids.n = WIRE_ROWS_MAX + 1;
	cr_assert_eq(wire_payload_size(&m, MAXP, &sz, &e), PX_EINVAL);
	/* ROWS carries MORE; PULL_ROWS does not */
	m.u.pull_rows.ids = (struct wire_u32v){ up, NULL, 3 };
	m.hdr.flags = WIRE_F_MORE;
	cr_assert_eq(wire_payload_size(&m, MAXP, &sz, &e), PX_EINVAL);
	m.hdr.flags = 0;
	cr_assert_eq(wire_payload_size(&m, MAXP, &sz, &e), PX_OK);
	cr_assert_eq(sz, 24 + 3 * 4);

	/* sealed good, then altered by an insider and tagged again: ids
	 * at payload offset WIRE_ROWS_PREFIX, the count of floats at 24,
	 * the ids' count at 12 */
	wire_msg_init(&m, WIRE_ROWS, NODE_B, 1);
	m.u.rows = (struct wire_rows){ .op = WIRE_ROWS_FORWARD, .width = 2,
				       .ids = { up, NULL, 3 },
				       .data = { v, NULL, 6 } };
	for (int k = 0; k < 4; k++) {
		cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, NULL),
			     PX_OK);
		cr_assert_eq(len, WIRE_OVERHEAD + WIRE_ROWS_PREFIX + 3 * 4 +
			     6 * 4);
		if (k == 0)      /* ids 1, 1, 9 */
			buf[WIRE_HDR_LEN + WIRE_ROWS_PREFIX + 4] = 1;
		else if (k == 1) /* 7 floats said, 6 there */
			buf[WIRE_HDR_LEN + 24] = 7;
		else if (k == 2) /* 2^20 + 1 ids said */
			memcpy(buf + WIRE_HDR_LEN + 12,
			       (uint8_t[4]){ 1, 0, 0x10, 0 }, 4);
		else             /* width 3: 9 floats, not 6 */
			buf[WIRE_HDR_LEN + 8] = 3;
		reseal(a, buf, len);
		cr_assert_eq(wire_open(b, buf, len, MAXP, NOW, NULL, &o, &d),
			     PX_EPROTO, "case %d", k);
		cr_assert_eq(d, WIRE_DROP_MALFORMED, "case %d: %s", k,
			     wire_drop_name(d));
		free(buf);
	}
	cr_assert_eq(wire_rows_chunk(WIRE_PAYLOAD_MIN, 0), 0);
	cr_assert_eq(wire_rows_chunk(WIRE_PAYLOAD_MIN, 17),
		     (WIRE_PAYLOAD_MIN - WIRE_ROWS_PREFIX) / (4 * 18));
	cr_assert_eq(wire_rows_chunk(WIRE_PAYLOAD_MAX, 1), WIRE_ROWS_MAX);
	wire_ctx_free(a);
	wire_ctx_free(b);
}

Test(wire, seal_checks_fields)
{
	struct wire_ctx *a = ctx_new(NODE_A, KEY, JOB, 0);
	struct wire_msg m;
	struct px_error e;
	uint8_t *buf;
	size_t len, sz;
	static float big[2000];

	wire_msg_init(&m, WIRE_ACK, NODE_B, 0);
	memset(m.u.ack.detail, 'x', WIRE_STR_MAX + 1);
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "detail") != NULL, "%s", e.msg);
	m.u.ack.detail[0] = '\n';
	m.u.ack.detail[1] = '\0';
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	wire_msg_init(&m, WIRE_LEAVE, NODE_B, 0);
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	/* COMMAND: a known op, STAGE with a stage 1..3, roles on EXPECT
	 * only; a PROGRESS names the stage it runs */
	wire_msg_init(&m, WIRE_COMMAND, NODE_B, 0);
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	m.u.command = (struct wire_command){ WIRE_CMD_STAGE, 0, 0, {1}, 0, 0 };
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	m.u.command = (struct wire_command){ WIRE_CMD_STAGE, 4, 0, {1}, 0, 0 };
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	m.u.command = (struct wire_command){ WIRE_CMD_LEAVE, 0,
					     WIRE_ROLE_WORKER, {1}, 0, 0 };
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	m.u.command = (struct wire_command){ WIRE_CMD_EXPECT, 0, 0x20, {1},
					     0, 0 };
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	m.u.command = (struct wire_command){ WIRE_CMD_OP_MAX, 0, 0, {1}, 0, 0 };
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	/* a leave reason on LEAVE only, and a known one */
	m.u.command = (struct wire_command){ WIRE_CMD_STAGE, 2, 0, {1}, 0,
					     WIRE_LEAVE_RELEASE };
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	m.u.command = (struct wire_command){ WIRE_CMD_LEAVE, 0, 0, {1}, 0,
					     WIRE_LEAVE_REASON_MAX };
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	m.u.command = (struct wire_command){ WIRE_CMD_STAGE, 2, 0, {1}, 0, 0 };
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_OK);
	free(buf);
	wire_msg_init(&m, WIRE_PROGRESS, NODE_B, 0);
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	/* a member's speed is a finite rate, its slow mark 0 or 1 */
	{
		struct wire_member mb[2] = { MEMBERS[0], MEMBERS[1] };

		m.u.progress = (struct wire_progress){ .stage = 1, .n = 2,
						       .members = mb };
		mb[1].speed = NAN;
		cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e),
			     PX_EINVAL);
		cr_assert(strstr(e.msg, "speed") != NULL, "%s", e.msg);
		mb[1].speed = -1.0f;
		cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e),
			     PX_EINVAL);
		mb[1].speed = 2.0f;
		mb[1].slow = 2;
		cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e),
			     PX_EINVAL);
		mb[1].slow = 1;
		cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_OK);
		free(buf);
		/* the goodput figures: finite, not negative, an efficiency
		 * at most 1 */
		m.u.progress.goodput = NAN;
		encodes(a, &m, "goodput");
		m.u.progress.goodput = 10.0f;
		m.u.progress.efficiency = 1.5f;
		encodes(a, &m, "efficiency");
		m.u.progress.efficiency = 0.5f;
		m.u.progress.noise_scale = -1.0f;
		encodes(a, &m, "noise_scale");
		m.u.progress.noise_scale = 0.0f;
		m.u.progress.lr_scale = INFINITY;
		encodes(a, &m, "lr_scale");
		m.u.progress.lr_scale = 1.0f;
		encodes(a, &m, NULL);
	}
	/* CLOCK: gradient norms finite, not negative, and none measured
	 * over fewer than two minibatches; CLOCK_MIN: a finite lr factor */
	wire_msg_init(&m, WIRE_CLOCK, NODE_B, 0);
	m.u.clock.batches = 1;
	m.u.clock.grad_sq_small = 1.0f;
	encodes(a, &m, "grad_sq_small");
	m.u.clock.batches = 2;
	m.u.clock.grad_sq_big = NAN;
	encodes(a, &m, "grad_sq_big");
	m.u.clock.grad_sq_big = 0.5f;
	encodes(a, &m, NULL);
	wire_msg_init(&m, WIRE_CLOCK_MIN, NODE_B, 0);
	m.u.clock_min.lr_scale = -0.5f;
	encodes(a, &m, "lr_scale");
	m.u.clock_min.lr_scale = 0.5f;
	encodes(a, &m, NULL);
	/* HEARTBEAT: no more minibatches done than the clock holds, a
	 * finite speed */
	wire_msg_init(&m, WIRE_HEARTBEAT, NODE_B, 0);
	m.u.heartbeat.batches_done = 9;
	m.u.heartbeat.batches = 8;
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	m.u.heartbeat.batches_done = 8;
	m.u.heartbeat.speed = INFINITY;
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	m.u.heartbeat.speed = 3.0f;
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_OK);
	free(buf);
	/* REASSIGN: a known op, two nodes, 1.. minibatches within a clock's
	 * bound, a HELP's stream inside its partition */
	wire_msg_init(&m, WIRE_REASSIGN, NODE_B, 0);
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	m.u.reassign = (struct wire_reassign){
		.op = WIRE_REASSIGN_OFFER, .straggler = { 1001 },
		.helper = { 1001 }, .count = 2 };
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "helper") != NULL, "%s", e.msg);
	m.u.reassign.helper.v = 1000;
	m.u.reassign.count = 0;
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	m.u.reassign.count = 2;
	m.u.reassign.first = WIRE_REASSIGN_BATCHES_MAX - 1;
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	m.u.reassign.first = 0;
	m.u.reassign.op = WIRE_REASSIGN_OP_MAX;
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	m.u.reassign.op = WIRE_REASSIGN_HELP;
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL,
		     "a HELP names a partition");
	m.u.reassign.part_lo = 10;
	m.u.reassign.part_hi = 20;
	m.u.reassign.pos = 11;
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "pos") != NULL, "%s", e.msg);
	m.u.reassign.pos = 10;
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_OK);
	free(buf);
	wire_msg_init(&m, WIRE_STAGE, NODE_B, 0);
	m.u.stage = (struct wire_stage){ 4, 0, 0, 0, NULL };
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	m.u.stage = (struct wire_stage){ 1, 0, 0, WIRE_SHARDS_MAX + 1,
					 SHARDS };
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_ETOOBIG);
	wire_msg_init(&m, WIRE_PUSH, NODE_B, 0);
	m.u.range.data.f = big;
	m.u.range.data.n = 2000;
	cr_assert_eq(wire_encode(a, &m, 4096, &buf, &len, &e), PX_ETOOBIG);
	m.u.range.data.n = wire_range_chunk(4096);
	cr_assert_eq(m.u.range.data.n, (4096 - WIRE_RANGE_PREFIX) / 4);
	cr_assert_eq(wire_payload_size(&m, 4096, &sz, &e), PX_OK);
	cr_assert_leq(sz, 4096);
	m.hdr.flags = 0x80;
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	/* version 2's MOMENTUM bit is unknown now */
	m.hdr.flags = 1 << 1;
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	/* RESUME is ASSIGN's */
	m.hdr.flags = WIRE_F_RESUME;
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "RESUME") != NULL, "%s", e.msg);
	m.hdr.type = WIRE_FORWARD;
	m.hdr.flags = WIRE_F_MORE;
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_OK);
	free(buf);
	/* ASSIGN: a clock holds one minibatch at least */
	wire_msg_init(&m, WIRE_ASSIGN, NODE_B, 0);
	m.u.assign = (struct wire_assign){ 1, 1, 0, 0, 0, 0, 8, 0, NULL, 0 };
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "clock_batches") != NULL, "%s", e.msg);
	wire_msg_init(&m, (enum wire_type)99, NODE_B, 0);
	cr_assert_eq(wire_encode(a, &m, MAXP, &buf, &len, &e), PX_EINVAL);
	wire_ctx_free(a);
}

/* Sessions learned from a MEMBERSHIP message; stale epochs ignored. */
Test(wire, membership_installs_sessions)
{
	struct wire_ctx *coord = ctx_new((struct wire_node){ 0 }, KEY, JOB, 0);
	struct wire_ctx *w = ctx_new(NODE_A, KEY, JOB, 0);
	struct wire_ctx *ps = ctx_new(NODE_B, KEY, JOB, 0);
	struct wire_member mem[2] = {
		{ NODE_A, WIRE_ROLE_WORKER, WIRE_MEMBER_ACTIVE,
		  wire_ctx_session(w), 0, 0, 0, 0, 0, "" },
		{ NODE_B, WIRE_ROLE_PS_ACTIVE, WIRE_MEMBER_ACTIVE,
		  wire_ctx_session(ps), 0, 0, 0, 0, 0, "" },
	};
	struct wire_msg m, o, mb;

	handshake(w, coord);
	handshake(ps, coord);
	/* The worker has never talked to the PS: it does not know the PS's
	 * session (not for the PS) nor the PS the worker's. */
	wire_msg_init(&m, WIRE_PUSH, NODE_B, 0);
	cr_assert_eq(xfer(w, ps, &m, &o), WIRE_DROP_NOT_FOR_US);
	wire_msg_init(&m, WIRE_MEMBERSHIP, WIRE_NODE_ALL, 0);
	m.u.membership = (struct wire_membership){ 2, 2, mem };
	cr_assert_eq(xfer(coord, w, &m, &mb), WIRE_DROP_NONE);
	cr_assert_eq(wire_membership_apply(w, &mb, NOW), PX_OK);
	wire_msg_release(&mb);
	wire_msg_init(&m, WIRE_PUSH, NODE_B, 0);
	cr_assert_eq(xfer(w, ps, &m, &o), WIRE_DROP_NO_SESSION);
	wire_msg_init(&m, WIRE_MEMBERSHIP, WIRE_NODE_ALL, 0);
	m.u.membership = (struct wire_membership){ 2, 2, mem };
	cr_assert_eq(xfer(coord, ps, &m, &mb), WIRE_DROP_NONE);
	cr_assert_eq(wire_membership_apply(ps, &mb, NOW), PX_OK);
	cr_assert_eq(wire_membership_apply(ps, &mb, NOW), PX_EEXIST);
	wire_msg_release(&mb);
	wire_msg_init(&m, WIRE_PUSH, NODE_B, 0);
	cr_assert_eq(xfer(w, ps, &m, &o), WIRE_DROP_NONE);
	wire_msg_release(&o);
	/* Broadcasts need a handshake with the receiver itself. */
	wire_msg_init(&m, WIRE_CLOCK_MIN, WIRE_NODE_ALL, 0);
	cr_assert_eq(xfer(w, ps, &m, &o), WIRE_DROP_NO_SESSION);
	cr_assert(!wire_peer_known(ps, NODE_B), "installed itself");
	wire_peer_forget(ps, NODE_A);
	cr_assert(!wire_peer_known(ps, NODE_A));
	wire_ctx_free(coord);
	wire_ctx_free(w);
	wire_ctx_free(ps);
}

/* A bounded table: an evicted peer fails closed and can come back. */
Test(wire, peer_table_bounded)
{
	struct wire_ctx *srv = ctx_new(NODE_B, KEY, JOB, 2);
	struct wire_ctx *c[3];
	struct wire_msg m, o;

	for (int i = 0; i < 3; i++) {
		c[i] = ctx_new((struct wire_node){ 10 + (uint32_t)i }, KEY,
			       JOB, 0);
		handshake(c[i], srv);
	}
	cr_assert(!wire_peer_known(srv, (struct wire_node){ 10 }));
	wire_msg_init(&m, WIRE_CLOCK, NODE_B, 0);
	cr_assert_eq(xfer(c[0], srv, &m, &o), WIRE_DROP_NO_SESSION);
	cr_assert_eq(xfer(c[2], srv, &m, &o), WIRE_DROP_NONE);
	wire_msg_release(&o);
	for (int i = 0; i < 3; i++)
		wire_ctx_free(c[i]);
	wire_ctx_free(srv);
}

/* Frames addressed to a node's earlier incarnation are refused by the
 * restarted node even once it trusts the sender again. */
Test(wire, restarted_receiver_refuses_old_frames)
{
	struct wire_ctx *coord = ctx_new((struct wire_node){ 0 }, KEY, JOB, 0);
	struct wire_ctx *w = ctx_new(NODE_A, KEY, JOB, 0);
	struct wire_ctx *ps = ctx_new(NODE_B, KEY, JOB, 0), *ps2;
	struct wire_member mem[1] = {
		{ NODE_A, WIRE_ROLE_WORKER, WIRE_MEMBER_ACTIVE,
		  wire_ctx_session(w), 0, 0, 0, 0, 0, "" },
	};
	struct wire_msg m, o;
	uint8_t *old;
	size_t oldlen;
	enum wire_drop d;

	handshake(w, ps);
	wire_msg_init(&m, WIRE_PUSH, NODE_B, 0);
	cr_assert_eq(wire_encode(w, &m, MAXP, &old, &oldlen, NULL), PX_OK);
	/* The PS restarts and learns the worker's session from MEMBERSHIP
	 * (floor 0: below the old frame's seq). */
	ps2 = ctx_new(NODE_B, KEY, JOB, 0);
	handshake(ps2, coord);
	wire_msg_init(&m, WIRE_MEMBERSHIP, WIRE_NODE_ALL, 0);
	m.u.membership = (struct wire_membership){ 1, 1, mem };
	cr_assert_eq(xfer(coord, ps2, &m, &o), WIRE_DROP_NONE);
	cr_assert_eq(wire_membership_apply(ps2, &o, NOW), PX_OK);
	wire_msg_release(&o);
	cr_assert(wire_peer_known(ps2, NODE_A));
	cr_assert_eq(wire_open(ps2, old, oldlen, MAXP, NOW, NULL, &o, &d),
		     PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_NOT_FOR_US);
	free(old);
	wire_ctx_free(coord);
	wire_ctx_free(w);
	wire_ctx_free(ps);
	wire_ctx_free(ps2);
}

/* ---- encryption (WIRE_F_ENC) ---- */

/* Whether needle[n] occurs in hay[len]. */
static bool contains(const uint8_t *hay, size_t len, const void *needle,
		     size_t n)
{
	for (size_t i = 0; i + n <= len; i++)
		if (memcmp(hay + i, needle, n) == 0)
			return true;
	return false;
}

/* A PUSH of 256 recognizable floats from a to B, sealed with flags. */
static void seal_pattern(struct wire_ctx *a, uint32_t flags, float *data,
			 uint8_t **buf, size_t *len)
{
	struct wire_msg m;
	struct px_error e;

	for (int i = 0; i < 256; i++)
		data[i] = 1000.25f + (float)i;
	wire_msg_init(&m, WIRE_PUSH, NODE_B, 5);
	m.hdr.flags = flags;
	m.u.range.shard = 1;
	m.u.range.data.f = data;
	m.u.range.data.n = 256;
	cr_assert_eq(wire_encode(a, &m, MAXP, buf, len, &e), PX_OK, "%s",
		     e.msg);
	cr_assert_eq(*len, WIRE_OVERHEAD + WIRE_RANGE_PREFIX + 256 * 4);
}

/* An encrypted frame shows none of its floats (not even 8 bytes of
 * them), yet round-trips; the same payload under GMAC only is in the
 * clear, as it was before encryption. */
Test(wire, encrypted_payload_unreadable)
{
	struct wire_ctx *a, *b;
	float data[256], got[256];
	struct wire_msg o;
	enum wire_drop d;
	uint8_t *f;
	size_t len;

	duo(&a, &b);
	seal_pattern(a, 0, data, &f, &len);
	cr_assert(contains(f, len, data, 8));
	cr_assert(contains(f, len, &data[200], 8));
	free(f);

	seal_pattern(a, WIRE_F_ENC, data, &f, &len);
	for (int i = 0; i + 2 <= 256; i++)
		cr_assert(!contains(f + WIRE_HDR_LEN, len - WIRE_HDR_LEN,
				    &data[i], 8), "floats %d.. in the clear", i);
	/* the header stays readable: flags, sender, payload_len */
	cr_assert_eq(f[8], WIRE_F_ENC);
	cr_assert_eq(f[12], NODE_A.v);
	cr_assert_eq(f[20] | f[21] << 8, WIRE_RANGE_PREFIX + 256 * 4);
	cr_assert_eq(wire_open_ex(b, f, len, MAXP, NOW, true, NULL, &o, &d),
		     PX_OK, "%s", wire_drop_name(d));
	cr_assert_eq(o.hdr.flags, WIRE_F_ENC);
	cr_assert_eq(o.u.range.shard, 1);
	cr_assert_eq(o.u.range.data.n, 256);
	wire_f32_copy(&o.u.range.data, got);
	cr_assert_arr_eq(got, data, sizeof(data));
	wire_msg_release(&o);
	free(f);
	wire_ctx_free(a);
	wire_ctx_free(b);
}

/* The same payload twice encrypts to different bytes: each frame has its
 * own seq, so its own nonce (a repeated nonce would give equal bytes). */
Test(wire, encrypted_nonce_fresh)
{
	struct wire_ctx *a, *b;
	float data[256];
	uint8_t *f1, *f2;
	size_t l1, l2;

	duo(&a, &b);
	seal_pattern(a, WIRE_F_ENC, data, &f1, &l1);
	seal_pattern(a, WIRE_F_ENC, data, &f2, &l2);
	cr_assert_eq(l1, l2);
	cr_assert_neq(memcmp(f1 + 48, f2 + 48, 8), 0);  /* seq */
	for (size_t i = WIRE_HDR_LEN; i + 8 <= l1; i += 8)
		cr_assert_neq(memcmp(f1 + i, f2 + i, 8), 0, "offset %zu", i);
	free(f1);
	free(f2);
	wire_ctx_free(a);
	wire_ctx_free(b);
}

/* Any flipped bit of an encrypted frame, in the ciphertext, the header
 * (the ENC flag itself too) or the tag, is refused; the intact frame is
 * then still accepted (nothing was recorded). */
Test(wire, encrypted_bit_flips_refused)
{
	struct wire_ctx *a, *b;
	struct wire_stats st = { 0 };
	float data[256];
	struct wire_msg o;
	enum wire_drop d;
	uint8_t *f, *t;
	size_t len;

	duo(&a, &b);
	seal_pattern(a, WIRE_F_ENC, data, &f, &len);
	t = malloc(len);
	cr_assert_not_null(t);
	for (size_t i = 0; i < len; i++) {
		/* magic, version, length and job are judged before the tag
		 * (their own drop reasons); the rest only by the tag */
		if (i < 8 || (i >= 20 && i < 32))
			continue;
		for (int bit = 0; bit < 8; bit += 3) {
			memcpy(t, f, len);
			t[i] ^= (uint8_t)(1u << bit);
			cr_assert_eq(wire_open_ex(b, t, len, MAXP, NOW, true,
						  &st, &o, &d), PX_EPROTO,
				     "byte %zu bit %d accepted", i, bit);
			cr_assert_eq(d, WIRE_DROP_BAD_MAC, "byte %zu: %s", i,
				     wire_drop_name(d));
		}
	}
	cr_assert_eq(st.accepted, 0);
	cr_assert_eq(wire_open_ex(b, f, len, MAXP, NOW, true, &st, &o, &d),
		     PX_OK);
	wire_msg_release(&o);
	/* the ENC bit cleared on a GMAC frame's twin: also the tag's */
	free(f);
	seal_pattern(a, 0, data, &f, &len);
	f[8] |= WIRE_F_ENC;
	cr_assert_eq(wire_open(b, f, len, MAXP, NOW, &st, &o, &d), PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_BAD_MAC);
	free(t);
	free(f);
	wire_ctx_free(a);
	wire_ctx_free(b);
}

/* A receiver that requires encryption (a tcp socket's) drops an
 * authentic frame sealed without it, so that nobody can downgrade a
 * network peer to the clear; wire_open (an ipc socket's) accepts both
 * kinds, as before. */
Test(wire, plaintext_refused_where_encryption_required)
{
	struct wire_ctx *a, *b;
	struct wire_stats st = { 0 };
	float data[256], got[256];
	struct wire_msg o;
	enum wire_drop d;
	uint8_t *f, *g;
	size_t len, glen;

	duo(&a, &b);
	cr_assert_str_eq(wire_drop_name(WIRE_DROP_PLAINTEXT), "plaintext");
	seal_pattern(a, 0, data, &f, &len);
	seal_pattern(a, 0, data, &g, &glen);
	cr_assert_eq(wire_open_ex(b, f, len, MAXP, NOW, true, &st, &o, &d),
		     PX_EPROTO);
	cr_assert_eq(d, WIRE_DROP_PLAINTEXT);
	cr_assert_eq(st.dropped[WIRE_DROP_PLAINTEXT], 1);
	cr_assert_eq(wire_open(b, g, glen, MAXP, NOW, &st, &o, &d), PX_OK);
	cr_assert_eq(o.hdr.flags, 0);
	wire_f32_copy(&o.u.range.data, got);
	cr_assert_arr_eq(got, data, sizeof(data));
	wire_msg_release(&o);
	free(f);
	free(g);
	seal_pattern(a, WIRE_F_ENC, data, &f, &len);
	cr_assert_eq(wire_open(b, f, len, MAXP, NOW, &st, &o, &d), PX_OK);
	wire_f32_copy(&o.u.range.data, got);
	cr_assert_arr_eq(got, data, sizeof(data));
	wire_msg_release(&o);
	cr_assert_eq(st.accepted, 2);
	free(f);
	wire_ctx_free(a);
	wire_ctx_free(b);
}

/* wire_retag takes an encrypted frame's payload as ciphertext: a flipped
 * ciphertext bit, retagged, opens and flips the same plaintext bit (what
 * the fuzzer relies on to reach the decoder with ENC set). */
Test(wire, retag_encrypted)
{
	struct wire_ctx *a, *b;
	float data[256], got[256];
	struct wire_msg o;
	enum wire_drop d;
	uint8_t *f;
	size_t len, at = WIRE_HDR_LEN + WIRE_RANGE_PREFIX + 4 * 10;

	duo(&a, &b);
	seal_pattern(a, WIRE_F_ENC, data, &f, &len);
	f[at] ^= 1;
	cr_assert_eq(wire_retag(a, f, len), PX_OK);
	cr_assert_eq(wire_open(b, f, len, MAXP, NOW, NULL, &o, &d), PX_OK,
		     "%s", wire_drop_name(d));
	wire_f32_copy(&o.u.range.data, got);
	((uint8_t *)&data[10])[0] ^= 1;
	cr_assert_arr_eq(got, data, sizeof(data));
	wire_msg_release(&o);
	free(f);
	wire_ctx_free(a);
	wire_ctx_free(b);
}
