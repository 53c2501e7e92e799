/* test_net.c -- wire frames over real nanomsg sockets on loopback:
 * registration, every type, drops (wrong key, replay, garbage, oversize),
 * chunked ranges, poll fds and broadcast.  Every test times out. */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nanomsg/nn.h>
#include <nanomsg/pipeline.h>

#include "../../trainer/dist/net.h"

static const uint8_t KEY[32] = "proteus-test-job-key-0123456789";
static const uint8_t KEY2[32] = "another-job-key-abcdefghijklmnop";
#define JOB 5
#define COORD ((struct wire_node){ 0 })
#define WORKER ((struct wire_node){ 7 })
#define WAIT 5000   /* ms: something that must arrive */
#define QUIET 300   /* ms: something that must not */

static struct wire_ctx *ctx_new(struct wire_node self, const uint8_t *key)
{
	struct wire_config c = { .self = self, .job = JOB, .job_key = key,
				 .job_key_len = 32 };
	struct wire_ctx *ctx = NULL;
	struct px_error e;

	cr_assert_eq(wire_ctx_new(&c, &ctx, &e), PX_OK, "%s", e.msg);
	return ctx;
}

static struct net_sock *sock(struct wire_ctx *ctx, enum net_pattern p,
			     size_t max_payload)
{
	struct net_opts o = { .max_payload = max_payload };
	struct net_sock *s = NULL;
	struct px_error e;

	cr_assert_eq(net_open(ctx, p, &o, &s, &e), PX_OK, "%s", e.msg);
	return s;
}

/* Bind s to tcp://127.0.0.1 on a random free high port (nanomsg tcp
 * cannot bind port 0); the url is written to url. */
static void bind_tcp(struct net_sock *s, char *url, size_t len)
{
	struct px_error e;

	srand((unsigned)getpid() ^ (unsigned)px_now_mono_us());
	for (int i = 0; i < 100; i++) {
		snprintf(url, len, "tcp://127.0.0.1:%d",
			 20000 + rand() % 40000);
		if (net_bind(s, url, &e) == PX_OK)
			return;
		cr_assert_eq(e.code, PX_ESYS | EADDRINUSE, "%s", e.msg);
	}
	cr_assert_fail("no free port");
}

/* A unique ipc:// endpoint; its file is removed by unlink_ipc. */
static void ipc_url(char *url, size_t len, const char *name)
{
	snprintf(url, len, "ipc:///tmp/pxnet-%d-%s.sock", (int)getpid(),
		 name);
}

static void unlink_ipc(const char *url)
{
	(void)unlink(url + strlen("ipc://"));
}

/* Establish sessions between two contexts without sockets. */
static void handshake(struct wire_ctx *cli, struct wire_ctx *srv)
{
	struct wire_msg h, c, g, in;
	uint8_t *buf;
	size_t len;
	enum wire_drop d;

	cr_assert_eq(wire_hello_begin(cli, wire_ctx_self(srv),
				      px_now_mono_us(), &h, NULL), PX_OK);
	cr_assert_eq(wire_encode(cli, &h, 4096, &buf, &len, NULL), PX_OK);
	cr_assert_eq(wire_open(srv, buf, len, 4096, px_now_mono_us(), NULL,
			       &in, &d), PX_OK);
	cr_assert_eq(wire_challenge_begin(srv, &in, px_now_mono_us(), &c,
					  NULL), PX_OK);
	free(buf);
	cr_assert_eq(wire_encode(srv, &c, 4096, &buf, &len, NULL), PX_OK);
	cr_assert_eq(wire_open(cli, buf, len, 4096, px_now_mono_us(), NULL,
			       &in, &d), PX_OK);
	wire_register_begin(&in, &g);
	free(buf);
	cr_assert_eq(wire_encode(cli, &g, 4096, &buf, &len, NULL), PX_OK);
	cr_assert_eq(wire_open(srv, buf, len, 4096, px_now_mono_us(), NULL,
			       &in, &d), PX_OK);
	free(buf);
}

static void send_clock(struct net_sock *s, struct wire_node dest,
		       int64_t clock)
{
	struct wire_msg m;
	struct px_error e;

	wire_msg_init(&m, WIRE_CLOCK, dest, clock);
	m.u.clock.samples = 100;
	cr_assert_eq(net_send(s, &m, WAIT, &e), PX_OK, "%s", e.msg);
}

static void expect_clock(struct net_sock *s, int64_t clock)
{
	struct wire_msg m;
	struct px_error e;

	cr_assert_eq(net_recv(s, &m, WAIT, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(m.hdr.type, WIRE_CLOCK);
	cr_assert_eq(m.hdr.clock, clock);
	wire_msg_release(&m);
}

static void expect_nothing(struct net_sock *s)
{
	struct wire_msg m;
	struct px_error e;

	cr_assert_eq(net_recv(s, &m, QUIET, &e), PX_ETIMEDOUT);
}

struct server {
	struct wire_ctx *ctx;
	struct net_sock *s;
	enum px_err r;
	struct wire_register got;
};

/* Coordinator side of a registration on a REP socket. */
static void *serve_register(void *arg)
{
	struct server *sv = arg;
	struct wire_msg in, out;
	static const struct wire_shard shards[1] = {
		{ 0, { 0 }, { UINT32_MAX }, 0, 4096 }
	};

	sv->r = net_recv(sv->s, &in, WAIT, NULL);
	if (sv->r != PX_OK)
		return NULL;
	sv->r = PX_EPROTO;
	if (in.hdr.type != WIRE_HELLO)
		goto out_release;
	sv->r = wire_challenge_begin(sv->ctx, &in, px_now_mono_us(), &out,
				     NULL);
	wire_msg_release(&in);
	if (sv->r == PX_OK)
		sv->r = net_send(sv->s, &out, WAIT, NULL);
	if (sv->r == PX_OK)
		sv->r = net_recv(sv->s, &in, WAIT, NULL);
	if (sv->r != PX_OK)
		return NULL;
	sv->r = PX_EPROTO;
	if (in.hdr.type != WIRE_REGISTER)
		goto out_release;
	sv->got = in.u.reg;
	wire_msg_init(&out, WIRE_ASSIGN, in.hdr.sender, 0);
	out.u.assign = (struct wire_assign){ WIRE_ROLE_WORKER, 1, 2, 5, 0,
					     600, 4096, 1, shards, 4 };
	sv->r = net_send(sv->s, &out, WAIT, NULL);
out_release:
	wire_msg_release(&in);
	return NULL;
}

/* A worker registers with the coordinator over REQ/REP on tcp. */
Test(net, register_over_reqrep, .timeout = 10)
{
	struct wire_ctx *cc = ctx_new(COORD, KEY), *wc = ctx_new(WORKER, KEY);
	struct server sv = { .ctx = cc };
	struct wire_register info = { .roles = WIRE_ROLE_WORKER, .ncpu = 4,
				      .ngpu = 1, .mem_mib = 16384,
				      .instance = "i-0123", .addr = "" };
	struct net_sock *req;
	struct wire_msg reply;
	struct px_error e;
	pthread_t t;
	char url[64];

	sv.s = sock(cc, NET_REP, 0);
	req = sock(wc, NET_REQ, 0);
	bind_tcp(sv.s, url, sizeof(url));
	cr_assert_eq(net_connect(req, url, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(pthread_create(&t, NULL, serve_register, &sv), 0);
	cr_assert_eq(net_register(req, COORD, &info, WAIT, &reply, &e), PX_OK,
		     "%s", e.msg);
	pthread_join(t, NULL);
	cr_assert_eq(sv.r, PX_OK, "server: %s", px_strerror(sv.r));
	cr_assert_eq(reply.hdr.type, WIRE_ASSIGN);
	cr_assert_eq(reply.u.assign.start_clock, 5);
	cr_assert_eq(reply.u.assign.part_count, 600);
	cr_assert_eq(reply.u.assign.nshards, 1);
	cr_assert_eq(reply.u.assign.clock_batches, 4);
	cr_assert_eq(reply.u.assign.shards[0].count, 4096);
	cr_assert_eq(sv.got.ncpu, 4);
	cr_assert_str_eq(sv.got.instance, "i-0123");
	wire_msg_release(&reply);
	cr_assert(wire_peer_known(cc, WORKER));
	cr_assert(wire_peer_known(wc, COORD));
	cr_assert_eq(net_stats(sv.s)->accepted, 2);
	cr_assert_eq(wire_stats_dropped(net_stats(sv.s)), 0);
	net_close(req);
	net_close(sv.s);
	wire_ctx_free(cc);
	wire_ctx_free(wc);
}

/* Every type once over a tcp PAIR, handshake included. */
Test(net, every_type_round_trip, .timeout = 10)
{
	struct wire_ctx *cc = ctx_new(COORD, KEY), *wc = ctx_new(WORKER, KEY);
	struct net_sock *a = sock(cc, NET_PAIR, 0), *b = sock(wc, NET_PAIR, 0);
	static const struct wire_shard sh[1] = { { 0, { 0 }, { 9 }, 0, 8 } };
	static const struct wire_member mb[1] = {
		{ .node = { 7 }, .roles = WIRE_ROLE_WORKER,
		  .state = WIRE_MEMBER_ACTIVE, .session = 1, .floor = 1,
		  .addr = "x" }
	};
	static const uint32_t rows_ids[2] = { 3, 8 };
	static const float rows_v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	float v[3] = { 1, 2, 3 }, got[3];
	struct wire_msg m, in;
	struct px_error e;
	char url[64];
	int n = 0;

	bind_tcp(a, url, sizeof(url));
	cr_assert_eq(net_connect(b, url, &e), PX_OK);
	cr_assert_eq(wire_hello_begin(wc, COORD, px_now_mono_us(), &m, NULL),
		     PX_OK);
	cr_assert_eq(net_send(b, &m, WAIT, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(net_recv(a, &in, WAIT, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(in.hdr.type, WIRE_HELLO);
	cr_assert_eq(wire_challenge_begin(cc, &in, px_now_mono_us(), &m,
					  NULL), PX_OK);
	wire_msg_release(&in);
	cr_assert_eq(net_send(a, &m, WAIT, &e), PX_OK);
	cr_assert_eq(net_recv(b, &in, WAIT, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(in.hdr.type, WIRE_CHALLENGE);
	wire_register_begin(&in, &m);
	wire_msg_release(&in);
	cr_assert_eq(net_send(b, &m, WAIT, &e), PX_OK);
	cr_assert_eq(net_recv(a, &in, WAIT, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(in.hdr.type, WIRE_REGISTER);
	wire_msg_release(&in);
	n = 3;
	for (int t = WIRE_ASSIGN; t < WIRE_TYPE_MAX; t++) {
		wire_msg_init(&m, t, COORD, 40 + t);
		switch (t) {
		case WIRE_ASSIGN:
			m.u.assign = (struct wire_assign){ 1, 1, 0, 0, 0, 0, 8,
							   1, sh, 1 };
			break;
		case WIRE_PUSH: case WIRE_PARAMS: case WIRE_FORWARD:
			m.u.range.data.f = v;
			m.u.range.data.n = 3;
			m.u.range.offset = 5;
			break;
		case WIRE_STAGE:
			m.u.stage = (struct wire_stage){ 2, 1, 3, 1, sh };
			break;
		case WIRE_MEMBERSHIP:
			m.u.membership = (struct wire_membership){ 1, 1, mb };
			break;
		case WIRE_PROGRESS:
			m.u.progress.stage = 1;
			m.u.progress.loss = 0.5f;
			m.u.progress.n = 1;
			m.u.progress.members = mb;
			break;
		case WIRE_LEAVE:
			m.u.leave.reason = WIRE_LEAVE_REBALANCE;
			break;
		case WIRE_SHUTDOWN:
			m.u.shutdown.reason = WIRE_SHUTDOWN_CANCEL;
			break;
		case WIRE_COMMAND:
			m.u.command.op = WIRE_CMD_STAGE;
			m.u.command.stage = 2;
			break;
		case WIRE_REASSIGN:
			m.u.reassign = (struct wire_reassign){
				.op = WIRE_REASSIGN_OFFER,
				.straggler = { 1001 }, .helper = { 1000 },
				.count = 2 };
			break;
		case WIRE_PULL_ROWS:
			m.u.pull_rows = (struct wire_pull_rows){
				.shard = 1, .width = 4, .min_clock = -1,
				.ids = { rows_ids, NULL, 2 } };
			break;
		case WIRE_ROWS:
			m.u.rows = (struct wire_rows){
				.op = WIRE_ROWS_PUSH, .width = 4,
				.ids = { rows_ids, NULL, 2 },
				.data = { rows_v, NULL, 8 } };
			break;
		default:
			break;
		}
		cr_assert_eq(net_send(b, &m, WAIT, &e), PX_OK, "%s: %s",
			     wire_type_name(t), e.msg);
		cr_assert_eq(net_recv(a, &in, WAIT, &e), PX_OK, "%s: %s",
			     wire_type_name(t), e.msg);
		cr_assert_eq(in.hdr.type, t);
		cr_assert_eq(in.hdr.clock, 40 + t);
		cr_assert_eq(in.hdr.seq, m.hdr.seq);
		if (t == WIRE_PUSH || t == WIRE_PARAMS || t == WIRE_FORWARD) {
			cr_assert_eq(in.u.range.offset, 5);
			wire_f32_copy(&in.u.range.data, got);
			cr_assert_arr_eq(got, v, sizeof(v));
		}
		if (t == WIRE_PROGRESS) {
			cr_assert_eq(in.u.progress.loss, 0.5f);
			cr_assert_str_eq(in.u.progress.members[0].addr, "x");
		}
		if (t == WIRE_STAGE)
			cr_assert_eq(in.u.stage.shards[0].backup.v, 9);
		wire_msg_release(&in);
		n++;
	}
	cr_assert_eq(n, WIRE_TYPE_MAX - 1);
	cr_assert_eq(net_stats(a)->accepted, (uint64_t)n - 1);
	net_close(a);
	net_close(b);
	wire_ctx_free(cc);
	wire_ctx_free(wc);
}

/* A frame under another key is dropped and counted; good ones pass. */
Test(net, wrong_key_dropped, .timeout = 10)
{
	struct wire_ctx *cc = ctx_new(COORD, KEY), *wc = ctx_new(WORKER, KEY);
	struct wire_ctx *evil = ctx_new(WORKER, KEY2);
	struct net_sock *pull = sock(cc, NET_PULL, 0);
	struct net_sock *push = sock(wc, NET_PUSH, 0);
	struct net_sock *bad = sock(evil, NET_PUSH, 0);
	char url[96];

	ipc_url(url, sizeof(url), "wrongkey");
	cr_assert_eq(net_bind(pull, url, NULL), PX_OK);
	cr_assert_eq(net_connect(push, url, NULL), PX_OK);
	cr_assert_eq(net_connect(bad, url, NULL), PX_OK);
	handshake(wc, cc);
	send_clock(bad, COORD, 1);
	expect_nothing(pull);
	cr_assert_eq(net_stats(pull)->dropped[WIRE_DROP_BAD_MAC], 1);
	cr_assert_eq(net_stats(pull)->accepted, 0);
	send_clock(push, COORD, 2);
	expect_clock(pull, 2);
	cr_assert_eq(net_stats(pull)->accepted, 1);
	net_close(bad);
	net_close(push);
	net_close(pull);
	unlink_ipc(url);
	wire_ctx_free(cc);
	wire_ctx_free(wc);
	wire_ctx_free(evil);
}

/* Open a raw nanomsg PUSH socket connected to url. */
static int raw_push(const char *url)
{
	int s = nn_socket(AF_SP, NN_PUSH), to = WAIT;

	cr_assert_geq(s, 0);
	cr_assert_eq(nn_setsockopt(s, NN_SOL_SOCKET, NN_SNDTIMEO, &to,
				   sizeof(to)), 0);
	cr_assert_geq(nn_connect(s, url), 0);
	return s;
}

/* The same sealed bytes sent twice: the second copy is a replay. */
Test(net, replay_dropped, .timeout = 10)
{
	struct wire_ctx *cc = ctx_new(COORD, KEY), *wc = ctx_new(WORKER, KEY);
	struct net_sock *pull = sock(cc, NET_PULL, 0);
	struct wire_msg m;
	uint8_t *buf;
	size_t len;
	char url[64];
	int raw;

	bind_tcp(pull, url, sizeof(url));
	raw = raw_push(url);
	handshake(wc, cc);
	wire_msg_init(&m, WIRE_CLOCK, COORD, 3);
	m.hdr.flags = WIRE_F_ENC;       /* a tcp socket requires it */
	cr_assert_eq(wire_encode(wc, &m, 4096, &buf, &len, NULL), PX_OK);
	cr_assert_eq(nn_send(raw, buf, len, 0), (int)len);
	cr_assert_eq(nn_send(raw, buf, len, 0), (int)len);
	expect_clock(pull, 3);
	expect_nothing(pull);
	cr_assert_eq(net_stats(pull)->dropped[WIRE_DROP_REPLAY], 1);
	cr_assert_eq(net_stats(pull)->accepted, 1);
	free(buf);
	nn_close(raw);
	net_close(pull);
	wire_ctx_free(cc);
	wire_ctx_free(wc);
}

/* Garbage from a raw socket is dropped; the receiver keeps working. */
Test(net, garbage_dropped, .timeout = 10)
{
	struct wire_ctx *cc = ctx_new(COORD, KEY), *wc = ctx_new(WORKER, KEY);
	struct net_sock *pull = sock(cc, NET_PULL, 0);
	struct net_sock *push = sock(wc, NET_PUSH, 0);
	uint8_t junk[300];
	char url[64];
	int raw;

	bind_tcp(pull, url, sizeof(url));
	raw = raw_push(url);
	cr_assert_eq(net_connect(push, url, NULL), PX_OK);
	handshake(wc, cc);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 131 + 7);
	cr_assert_eq(nn_send(raw, junk, sizeof(junk), 0), (int)sizeof(junk));
	cr_assert_eq(nn_send(raw, junk, 3, 0), 3);
	memcpy(junk, "PXWP\x01\x00", 6);
	cr_assert_eq(nn_send(raw, junk, sizeof(junk), 0), (int)sizeof(junk));
	cr_assert_eq(nn_send(raw, "", 0, 0), 0);
	expect_nothing(pull);
	cr_assert_eq(net_stats(pull)->dropped[WIRE_DROP_BAD_MAGIC], 1);
	cr_assert_eq(net_stats(pull)->dropped[WIRE_DROP_TOO_SHORT], 2);
	cr_assert_eq(wire_stats_dropped(net_stats(pull)), 4);
	send_clock(push, COORD, 8);
	expect_clock(pull, 8);
	nn_close(raw);
	net_close(push);
	net_close(pull);
	wire_ctx_free(cc);
	wire_ctx_free(wc);
}

/* Over the bound: refused by NN_RCVMAXSIZE in the transport (the pipe is
 * dropped, nothing is allocated or counted), and by net_send locally. */
Test(net, oversize_refused, .timeout = 10)
{
	struct wire_ctx *cc = ctx_new(COORD, KEY), *wc = ctx_new(WORKER, KEY);
	struct net_sock *pull = sock(cc, NET_PULL, 4096);
	struct net_sock *push = sock(wc, NET_PUSH, 4096);
	static float big[2000];
	struct wire_msg m;
	struct px_error e;
	uint8_t *blob;
	char url[64];
	int raw, size = 4096 + WIRE_OVERHEAD + 1;

	bind_tcp(pull, url, sizeof(url));
	raw = raw_push(url);
	handshake(wc, cc);
	blob = calloc(1, (size_t)size);
	memcpy(blob, "PXWP", 4);
	cr_assert_eq(nn_send(raw, blob, (size_t)size, 0), size);
	expect_nothing(pull);
	cr_assert_eq(net_stats(pull)->accepted, 0);
	cr_assert_eq(wire_stats_dropped(net_stats(pull)), 0);
	/* Exactly at the bound goes through (and is dropped as garbage). */
	cr_assert_eq(nn_send(raw, blob, (size_t)size - 1, 0), size - 1);
	expect_nothing(pull);
	cr_assert_eq(wire_stats_dropped(net_stats(pull)), 1);
	free(blob);
	wire_msg_init(&m, WIRE_PUSH, COORD, 0);
	m.u.range.data.f = big;
	m.u.range.data.n = 2000;
	cr_assert_eq(net_send(push, &m, WAIT, &e), PX_ETOOBIG);
	cr_assert_eq(net_connect(push, url, NULL), PX_OK);
	send_clock(push, COORD, 4);
	expect_clock(pull, 4);
	nn_close(raw);
	net_close(push);
	net_close(pull);
	wire_ctx_free(cc);
	wire_ctx_free(wc);
}

/* A long range goes in chunks under the bound and comes back whole. */
Test(net, range_chunks, .timeout = 10)
{
	struct wire_ctx *cc = ctx_new(COORD, KEY), *wc = ctx_new(WORKER, KEY);
	struct net_sock *pull = sock(cc, NET_PULL, 4096);
	struct net_sock *push = sock(wc, NET_PUSH, 4096);
	enum { N = 2500 };
	static float src[N], dst[N];
	uint32_t chunk = wire_range_chunk(4096);
	struct wire_msg m;
	struct px_error e;
	size_t got = 0;
	int chunks = 0;
	char url[96];

	for (int i = 0; i < N; i++)
		src[i] = (float)i * 0.5f - 7;
	ipc_url(url, sizeof(url), "chunks");
	cr_assert_eq(net_bind(pull, url, NULL), PX_OK);
	cr_assert_eq(net_connect(push, url, NULL), PX_OK);
	handshake(wc, cc);
	cr_assert_eq(net_send_range(push, WIRE_PUSH, 0, COORD, 6, 2, 1000, src,
				    N, WAIT, &e), PX_OK, "%s", e.msg);
	for (;;) {
		cr_assert_eq(net_recv(pull, &m, WAIT, &e), PX_OK, "%s", e.msg);
		cr_assert_eq(m.hdr.type, WIRE_PUSH);
		cr_assert_eq(m.u.range.shard, 2);
		cr_assert_eq(m.u.range.clock, 6);
		cr_assert_eq(m.u.range.offset, 1000 + got);
		cr_assert_leq(m.u.range.data.n, chunk);
		wire_f32_copy(&m.u.range.data, dst + got);
		got += m.u.range.data.n;
		chunks++;
		if (!(m.hdr.flags & WIRE_F_MORE)) {
			wire_msg_release(&m);
			break;
		}
		wire_msg_release(&m);
	}
	cr_assert_eq(got, N);
	cr_assert_eq(chunks, (N + chunk - 1) / chunk);
	cr_assert_arr_eq(dst, src, sizeof(src));
	net_close(push);
	net_close(pull);
	unlink_ipc(url);
	wire_ctx_free(cc);
	wire_ctx_free(wc);
}

/* NN_RCVFD works with poll(2): readable once a frame is queued. */
Test(net, poll_fd, .timeout = 10)
{
	struct wire_ctx *cc = ctx_new(COORD, KEY), *wc = ctx_new(WORKER, KEY);
	struct net_sock *pull = sock(cc, NET_PULL, 0);
	struct net_sock *push = sock(wc, NET_PUSH, 0);
	struct pollfd pfd = { .events = POLLIN };
	struct wire_msg m;
	struct px_error e;
	char url[64];
	int fd;

	bind_tcp(pull, url, sizeof(url));
	cr_assert_eq(net_connect(push, url, NULL), PX_OK);
	handshake(wc, cc);
	cr_assert_eq(net_fd(push, false, &fd, &e), PX_EUNSUPP);
	cr_assert_eq(net_fd(push, true, &fd, &e), PX_OK);
	cr_assert_eq(net_fd(pull, false, &fd, &e), PX_OK);
	pfd.fd = fd;
	cr_assert_eq(poll(&pfd, 1, 0), 0);
	cr_assert_eq(net_recv(pull, &m, 0, &e), PX_ETIMEDOUT);
	send_clock(push, COORD, 11);
	cr_assert_eq(poll(&pfd, 1, WAIT), 1);
	cr_assert_eq(net_recv(pull, &m, 0, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(m.hdr.clock, 11);
	wire_msg_release(&m);
	net_close(push);
	net_close(pull);
	wire_ctx_free(cc);
	wire_ctx_free(wc);
}

/* A broadcast (dest all) over PUB/SUB reaches every subscriber. */
Test(net, pubsub_broadcast, .timeout = 10)
{
	struct wire_ctx *cc = ctx_new(COORD, KEY);
	struct wire_ctx *w1 = ctx_new(WORKER, KEY);
	struct wire_ctx *w2 = ctx_new((struct wire_node){ 8 }, KEY);
	struct net_sock *pub = sock(cc, NET_PUB, 0);
	struct net_sock *sub[2] = { sock(w1, NET_SUB, 0),
				    sock(w2, NET_SUB, 0) };
	struct wire_msg m, in;
	struct px_error e;
	char url[96];

	ipc_url(url, sizeof(url), "pub");
	cr_assert_eq(net_bind(pub, url, NULL), PX_OK);
	handshake(w1, cc);
	handshake(w2, cc);
	for (int i = 0; i < 2; i++) {
		bool got = false;

		cr_assert_eq(net_connect(sub[i], url, NULL), PX_OK);
		/* SUB joins late: publish fresh frames until one lands. */
		for (int k = 0; k < 50 && !got; k++) {
			wire_msg_init(&m, WIRE_SHUTDOWN, WIRE_NODE_ALL, k);
			m.u.shutdown.reason = WIRE_SHUTDOWN_DONE;
			cr_assert_eq(net_send(pub, &m, WAIT, &e), PX_OK);
			if (net_recv(sub[i], &in, 100, &e) == PX_OK) {
				cr_assert_eq(in.hdr.type, WIRE_SHUTDOWN);
				cr_assert_eq(in.hdr.dest.v, UINT32_MAX);
				wire_msg_release(&in);
				got = true;
			}
		}
		cr_assert(got, "subscriber %d got nothing", i);
	}
	net_close(sub[0]);
	net_close(sub[1]);
	net_close(pub);
	unlink_ipc(url);
	wire_ctx_free(cc);
	wire_ctx_free(w1);
	wire_ctx_free(w2);
}

Test(net, open_checks, .timeout = 10)
{
	struct wire_ctx *cc = ctx_new(COORD, KEY);
	struct net_opts o = { .max_payload = 100 };
	struct net_sock *s = NULL;
	struct px_error e;

	cr_assert_eq(net_open(cc, NET_PULL, &o, &s, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "max_payload") != NULL, "%s", e.msg);
	cr_assert_eq(net_open(cc, (enum net_pattern)0, NULL, &s, &e),
		     PX_EINVAL);
	cr_assert_eq(net_open(cc, NET_BUS, NULL, &s, &e), PX_OK);
	cr_assert_eq(net_max_payload(s), WIRE_PAYLOAD_DEFAULT);
	cr_assert_eq(net_connect(s, "nonsense", &e) & PX_ESYS, PX_ESYS);
	net_close(s);
	net_close(NULL);
	wire_ctx_free(cc);
}

/* A REQ that gave up on an answer and asks again does so on a new socket:
 * the stale answer that comes later cannot reach it.  (nanomsg 1.1.5 drops
 * a stale answer and frees it again when the socket closes: this test
 * aborted in nn_req_term before net.c renewed the socket.) */
Test(net, req_asks_again_on_a_new_socket, .timeout = 20)
{
	struct wire_ctx *cc = ctx_new(COORD, KEY), *wc = ctx_new(WORKER, KEY);
	struct net_sock *rep = sock(cc, NET_REP, 0), *req = sock(wc, NET_REQ, 0);
	struct wire_msg m;
	struct px_error e;
	char url[64];

	handshake(wc, cc);
	bind_tcp(rep, url, sizeof(url));
	cr_assert_eq(net_connect(req, url, &e), PX_OK, "%s", e.msg);
	send_clock(req, COORD, 1);
	expect_clock(rep, 1);
	/* no answer in time: it asks again */
	cr_assert_eq(net_recv(req, &m, 50, &e), PX_ETIMEDOUT);
	send_clock(req, COORD, 2);
	/* the answer to the first request, late */
	wire_msg_init(&m, WIRE_CLOCK, WORKER, 10);
	(void)net_send(rep, &m, 0, &e);
	expect_nothing(req);
	/* the second request arrives and is answered on the new socket */
	expect_clock(rep, 2);
	send_clock(rep, WORKER, 20);
	expect_clock(req, 20);
	/* a stale answer again, left unreceived, then close: no abort */
	send_clock(req, COORD, 3);
	expect_clock(rep, 3);
	cr_assert_eq(net_recv(req, &m, 50, &e), PX_ETIMEDOUT);
	send_clock(req, COORD, 4);
	send_clock(rep, WORKER, 30);
	expect_nothing(req);
	net_close(req);
	net_close(rep);
	wire_ctx_free(cc);
	wire_ctx_free(wc);
}

/* ---- encryption on the wire ---- */

/* A raw nanomsg PULL connected to url. */
static int raw_pull(const char *url)
{
	int s = nn_socket(AF_SP, NN_PULL), to = WAIT, unlimited = -1;

	cr_assert_geq(s, 0);
	cr_assert_eq(nn_setsockopt(s, NN_SOL_SOCKET, NN_RCVTIMEO, &to,
				   sizeof(to)), 0);
	cr_assert_eq(nn_setsockopt(s, NN_SOL_SOCKET, NN_RCVMAXSIZE,
				   &unlimited, sizeof(unlimited)), 0);
	cr_assert_geq(nn_connect(s, url), 0);
	return s;
}

static bool has_bytes(const uint8_t *hay, size_t len, const void *needle,
		      size_t n)
{
	for (size_t i = 0; i + n <= len; i++)
		if (memcmp(hay + i, needle, n) == 0)
			return true;
	return false;
}

/* What a net PUSH sends, seen by a raw PULL (an observer of the bytes):
 * over tcp:// the floats are nowhere in the frame and the ENC flag is
 * set; over ipc:// the frame is GMAC only, floats in the clear.  Either
 * frame opens at the receiver with the values sent. */
Test(net, frames_that_leave_the_host_encrypted, .timeout = 20)
{
	struct wire_ctx *cc = ctx_new(COORD, KEY), *wc = ctx_new(WORKER, KEY);
	float data[512], got[512];
	struct wire_msg m;
	enum wire_drop d;
	struct px_error e;
	char url[64];

	for (int i = 0; i < 512; i++)
		data[i] = -77.5f - (float)i;
	handshake(wc, cc);
	for (int tcp = 0; tcp < 2; tcp++) {
		struct net_sock *push = sock(wc, NET_PUSH, 0);
		uint8_t *buf;
		int raw, n;

		if (tcp) {
			bind_tcp(push, url, sizeof(url));
		} else {
			ipc_url(url, sizeof(url), "enc");
			cr_assert_eq(net_bind(push, url, &e), PX_OK, "%s",
				     e.msg);
		}
		raw = raw_pull(url);
		cr_assert_eq(net_send_range(push, WIRE_PUSH, 0, COORD, 2, 0,
					    0, data, 512, WAIT, &e), PX_OK,
			     "%s", e.msg);
		n = nn_recv(raw, &buf, NN_MSG, 0);
		cr_assert_eq(n, WIRE_OVERHEAD + WIRE_RANGE_PREFIX + 512 * 4);
		cr_assert_eq(buf[8], tcp ? WIRE_F_ENC : 0);
		for (int i = 0; i + 2 <= 512; i += 1)
			cr_assert_eq(has_bytes(buf, (size_t)n, &data[i], 8),
				     !tcp, "%s: floats %d", url, i);
		cr_assert_eq(wire_open_ex(cc, buf, (size_t)n,
					  WIRE_PAYLOAD_DEFAULT,
					  px_now_mono_us(), tcp, NULL, &m, &d),
			     PX_OK, "%s", wire_drop_name(d));
		wire_f32_copy(&m.u.range.data, got);
		cr_assert_arr_eq(got, data, sizeof(data));
		wire_msg_release(&m);
		nn_freemsg(buf);
		nn_close(raw);
		net_close(push);
		if (!tcp)
			unlink_ipc(url);
	}
	wire_ctx_free(cc);
	wire_ctx_free(wc);
}

/* Send one CLOCK sealed by wc (flags as given) from a raw PUSH. */
static void raw_clock(int raw, struct wire_ctx *wc, uint32_t flags,
		      int64_t clock)
{
	struct wire_msg m;
	uint8_t *buf;
	size_t len;

	wire_msg_init(&m, WIRE_CLOCK, COORD, clock);
	m.hdr.flags = flags;
	cr_assert_eq(wire_encode(wc, &m, 4096, &buf, &len, NULL), PX_OK);
	cr_assert_eq(nn_send(raw, buf, len, 0), (int)len);
	free(buf);
}

/* A tcp:// receiver drops an authentic frame sent in the clear (counted
 * as plaintext) and takes the encrypted one after it; an ipc:// receiver
 * takes both, as before encryption. */
Test(net, tcp_refuses_plaintext, .timeout = 20)
{
	struct wire_ctx *cc = ctx_new(COORD, KEY), *wc = ctx_new(WORKER, KEY);
	struct net_sock *tp = sock(cc, NET_PULL, 0), *ip = sock(cc, NET_PULL, 0);
	struct px_error e;
	char turl[64], iurl[64];
	int rt, ri;

	bind_tcp(tp, turl, sizeof(turl));
	ipc_url(iurl, sizeof(iurl), "plain");
	cr_assert_eq(net_bind(ip, iurl, &e), PX_OK, "%s", e.msg);
	rt = raw_push(turl);
	ri = raw_push(iurl);
	handshake(wc, cc);
	/* one connection keeps the order: when 4 arrives, 3 was judged */
	raw_clock(rt, wc, 0, 3);
	raw_clock(rt, wc, WIRE_F_ENC, 4);
	expect_clock(tp, 4);
	cr_assert_eq(net_stats(tp)->dropped[WIRE_DROP_PLAINTEXT], 1);
	cr_assert_eq(wire_stats_dropped(net_stats(tp)), 1);
	raw_clock(ri, wc, 0, 5);
	raw_clock(ri, wc, WIRE_F_ENC, 6);
	expect_clock(ip, 5);
	expect_clock(ip, 6);
	cr_assert_eq(wire_stats_dropped(net_stats(ip)), 0);
	nn_close(rt);
	nn_close(ri);
	net_close(tp);
	net_close(ip);
	unlink_ipc(iurl);
	wire_ctx_free(cc);
	wire_ctx_free(wc);
}

/* One socket's endpoints are all local or all remote: which frames it
 * encrypts and requires is then never in doubt. */
Test(net, one_kind_of_endpoint, .timeout = 10)
{
	struct wire_ctx *cc = ctx_new(COORD, KEY);
	struct net_sock *a = sock(cc, NET_PULL, 0), *b = sock(cc, NET_PULL, 0);
	struct px_error e;
	char turl[64], iurl[64];

	ipc_url(iurl, sizeof(iurl), "kind");
	cr_assert_eq(net_bind(a, iurl, &e), PX_OK, "%s", e.msg);
	cr_assert_eq(net_connect(a, "tcp://127.0.0.1:9", &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "tcp://127.0.0.1:9") &&
		  strstr(e.msg, "local"), "%s", e.msg);
	bind_tcp(b, turl, sizeof(turl));
	cr_assert_eq(net_connect(b, iurl, &e), PX_EINVAL);
	cr_assert(strstr(e.msg, "network"), "%s", e.msg);
	cr_assert_eq(net_connect(b, "inproc://x", &e), PX_EINVAL);
	net_close(a);
	net_close(b);
	unlink_ipc(iurl);
	wire_ctx_free(cc);
}
