#!/bin/sh
# bench_wire.sh -- wire protocol throughput: the tag alone over 1 MiB
# (AES-256-GMAC, the protocol's since version 3, against HMAC-SHA256, the
# one before), seal+open of a 1 MiB PUSH in memory, and 4 MiB PUSH/PULL
# over tcp://127.0.0.1 with the protocol vs raw nanomsg (no tag).  Runs
# twice: as the CPU is, and with its SHA extensions masked
# (OPENSSL_ia32cap), which is what a CPU without them gets.  Then, once,
# GMAC only (frames on ipc://) against AES-256-GCM with the payload
# encrypted (frames on tcp://), side by side: frames/s and MiB/s for a
# control frame and parameter ranges of 4 KiB to 4 MiB, sealed and opened
# in memory and streamed over tcp://127.0.0.1 and ipc:// (raw nanomsg
# PUSH/PULL carrying sealed frames, so that both kinds cross the same
# transport).  Needs build/libproteus.a (make).  Usage:
#   tests/bench/bench_wire.sh [BUILD]     (BUILD defaults to build)
set -eu
cd "$(dirname "$0")/../.."
BUILD=${1:-${BUILD:-build}}
[ -f "$BUILD/libproteus.a" ] || { echo "no $BUILD/libproteus.a: run make" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# what both programs below share: a key, a context, a handshake
cat > "$tmp/benchlib.h" <<'CEOF'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <nanomsg/nn.h>
#include <nanomsg/pipeline.h>
#include "trainer/dist/net.h"

static const uint8_t KEY[32] = "bench-job-key-0123456789abcdefgh";

static struct wire_ctx *mk(uint32_t id)
{
	struct wire_config c = { .self = { id }, .job = 1, .job_key = KEY,
				 .job_key_len = 32 };
	struct wire_ctx *x;
	if (wire_ctx_new(&c, &x, NULL) != PX_OK) exit(1);
	return x;
}

static void pair(struct wire_ctx *cli, struct wire_ctx *srv)
{
	struct wire_msg h, c, g, in; uint8_t *b; size_t n; enum wire_drop d;
	uint64_t t = px_now_mono_us();
	wire_hello_begin(cli, wire_ctx_self(srv), t, &h, NULL);
	wire_encode(cli, &h, 4096, &b, &n, NULL);
	wire_open(srv, b, n, 4096, t, NULL, &in, &d); free(b);
	wire_challenge_begin(srv, &in, t, &c, NULL);
	wire_encode(srv, &c, 4096, &b, &n, NULL);
	wire_open(cli, b, n, 4096, t, NULL, &in, &d); free(b);
	wire_register_begin(&in, &g);
	wire_encode(cli, &g, 4096, &b, &n, NULL);
	if (wire_open(srv, b, n, 4096, t, NULL, &in, &d) != PX_OK) exit(2);
	free(b);
}

CEOF
cat > "$tmp/bench.c" <<'CEOF'
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include "benchlib.h"

struct snd { struct net_sock *s; int raw; const float *f; size_t n; int iters; };

static void *sender(void *arg)
{
	struct snd *a = arg;
	for (int i = 0; i < a->iters; i++) {
		if (a->s) {
			if (net_send_range(a->s, WIRE_PUSH, 0, (struct wire_node){ 0 },
					   i, 0, 0, a->f, a->n, -1, NULL) != PX_OK)
				exit(3);
		} else {
			void *m = nn_allocmsg(a->n * 4, 0);
			memcpy(m, a->f, a->n * 4);
			if (nn_send(a->raw, &m, NN_MSG, 0) < 0) exit(4);
		}
	}
	return NULL;
}

int main(void)
{
	enum { N1 = 262144, N4 = 1048576, IT1 = 400, IT4 = 100 };
	float *f = malloc(N4 * 4), *out = malloc(N4 * 4);
	struct wire_ctx *w = mk(7), *c = mk(0);
	struct wire_msg m, o; enum wire_drop d; size_t len;
	uint8_t *buf = malloc(WIRE_OVERHEAD + WIRE_RANGE_PREFIX + N4 * 4);
	uint64_t t0, ts = 0, to = 0;

	for (int i = 0; i < N4; i++) f[i] = (float)i * 1e-3f;
	{
		/* the tag alone over 1 MiB, each way of computing it */
		unsigned char k[32] = { 1 }, iv[12] = { 0 }, tag[32];
		unsigned int hl; int ol;
		EVP_CIPHER_CTX *g = EVP_CIPHER_CTX_new();
		t0 = px_now_mono_us();
		for (int i = 0; i < IT1; i++)
			HMAC(EVP_sha256(), k, 32, (unsigned char *)f, N1 * 4, tag, &hl);
		ts = px_now_mono_us() - t0;
		t0 = px_now_mono_us();
		for (int i = 0; i < IT1; i++) {
			iv[0] = (unsigned char)i;
			EVP_EncryptInit_ex(g, EVP_aes_256_gcm(), NULL, k, iv);
			EVP_EncryptUpdate(g, NULL, &ol, (unsigned char *)f, N1 * 4);
			EVP_EncryptFinal_ex(g, NULL, &ol);
			EVP_CIPHER_CTX_ctrl(g, EVP_CTRL_GCM_GET_TAG, 16, tag);
		}
		to = px_now_mono_us() - t0;
		EVP_CIPHER_CTX_free(g);
		printf("tag of 1 MiB x %d: HMAC-SHA256 %.0f MiB/s, AES-256-GMAC %.0f MiB/s\n",
		       IT1, IT1 / (ts / 1e6), IT1 / (to / 1e6));
		ts = to = 0;
	}
	pair(w, c);
	for (int i = 0; i < IT1; i++) {
		wire_msg_init(&m, WIRE_PUSH, (struct wire_node){ 0 }, i);
		m.u.range.data.f = f; m.u.range.data.n = N1;
		t0 = px_now_mono_us();
		if (wire_seal(w, &m, WIRE_PAYLOAD_DEFAULT, buf,
			      WIRE_OVERHEAD + WIRE_RANGE_PREFIX + N1 * 4, &len,
			      NULL) != PX_OK) return 5;
		ts += px_now_mono_us() - t0; t0 = px_now_mono_us();
		if (wire_open(c, buf, len, WIRE_PAYLOAD_DEFAULT, t0, NULL, &o,
			      &d) != PX_OK) return 6;
		wire_f32_copy(&o.u.range.data, out);
		wire_msg_release(&o);
		to += px_now_mono_us() - t0;
	}
	double mib = IT1 * (N1 * 4.0) / 1048576.0;
	printf("in memory, 1 MiB PUSH x %d: seal %.0f MiB/s, open+copy %.0f MiB/s, "
	       "seal+open %.0f MiB/s (%.0f us per push)\n", IT1,
	       mib / (ts / 1e6), mib / (to / 1e6), mib / ((ts + to) / 1e6),
	       (double)(ts + to) / IT1);

	for (int mode = 0; mode < 2; mode++) {
		char url[64]; int port = 20000 + (int)(px_now_mono_us() % 40000);
		struct net_sock *pull = NULL, *push = NULL;
		int rpull = -1, rpush = -1;
		struct snd a = { 0 };
		pthread_t th;
		snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
		if (mode == 0) {
			net_open(c, NET_PULL, NULL, &pull, NULL);
			net_open(w, NET_PUSH, NULL, &push, NULL);
			if (net_bind(pull, url, NULL) || net_connect(push, url, NULL)) return 7;
			a.s = push;
		} else {
			int unlimited = -1; /* nanomsg's default bound is 1 MiB */
			rpull = nn_socket(AF_SP, NN_PULL); rpush = nn_socket(AF_SP, NN_PUSH);
			nn_setsockopt(rpull, NN_SOL_SOCKET, NN_RCVMAXSIZE, &unlimited,
				      sizeof unlimited);
			if (nn_bind(rpull, url) < 0 || nn_connect(rpush, url) < 0) return 8;
			a.raw = rpush;
		}
		a.f = f; a.n = N4; a.iters = IT4;
		t0 = px_now_mono_us();
		pthread_create(&th, NULL, sender, &a);
		for (int i = 0; i < IT4; i++) {
			if (mode == 0) {
				if (net_recv(pull, &o, -1, NULL) != PX_OK) return 9;
				wire_f32_copy(&o.u.range.data, out);
				wire_msg_release(&o);
			} else {
				void *b; int n = nn_recv(rpull, &b, NN_MSG, 0);
				if (n < 0) return 10;
				memcpy(out, b, (size_t)n); nn_freemsg(b);
			}
		}
		pthread_join(th, NULL);
		double s = (px_now_mono_us() - t0) / 1e6;
		printf("tcp://127.0.0.1, 4 MiB x %d, %s: %.0f MiB/s\n", IT4,
		       mode == 0 ? "wire (tag, decode, copy out)" : "raw nanomsg (memcpy in/out)",
		       IT4 * 4.0 / s);
		if (mode == 0) {
			if (wire_stats_dropped(net_stats(pull))) return 11;
			net_close(push); net_close(pull);
		} else { nn_close(rpush); nn_close(rpull); }
	}
	return 0;
}
CEOF
${CC:-cc} -std=c11 -O2 -D_GNU_SOURCE -I. -o "$tmp/bench" "$tmp/bench.c" \
	"$BUILD/libproteus.a" $(pkg-config --cflags --libs openssl nanomsg) -lpthread
echo "CPU as it is ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); SHA extensions: $(grep -qw sha_ni /proc/cpuinfo && echo yes || echo no)):"
"$tmp/bench"
echo
echo "SHA extensions masked (OPENSSL_ia32cap=:~0x20000000):"
OPENSSL_ia32cap=":~0x20000000" "$tmp/bench"

cat > "$tmp/gcm.c" <<'CEOF'
#include <unistd.h>
#include "benchlib.h"

#define MAXP WIRE_PAYLOAD_DEFAULT

static struct wire_ctx *W, *C;
static float *F, *OUT;

/* A message of `floats` floats (a PUSH range), or a CLOCK when 0. */
static void msg(struct wire_msg *m, uint32_t floats, uint32_t flags, int i)
{
	if (floats == 0) {
		wire_msg_init(m, WIRE_CLOCK, (struct wire_node){ 0 }, i);
		m->u.clock.samples = 32;
	} else {
		wire_msg_init(m, WIRE_PUSH, (struct wire_node){ 0 }, i);
		m->u.range.data.f = F; m->u.range.data.n = floats;
	}
	m->hdr.flags = flags;
}

static void take(uint8_t *buf, size_t len, int need_enc)
{
	struct wire_msg o; enum wire_drop d;
	if (wire_open_ex(C, buf, len, MAXP, px_now_mono_us(), need_enc, NULL,
			 &o, &d) != PX_OK) { fprintf(stderr, "drop %s\n", wire_drop_name(d)); exit(3); }
	if (o.hdr.type == WIRE_PUSH) wire_f32_copy(&o.u.range.data, OUT);
	wire_msg_release(&o);
}

struct snd { int s; uint32_t floats, flags; int iters; size_t flen; };

static void *sender(void *arg)
{
	struct snd *a = arg; struct wire_msg m; size_t len;
	for (int i = 0; i < a->iters; i++) {
		void *b = nn_allocmsg(a->flen, 0);
		msg(&m, a->floats, a->flags, i);
		if (!b || wire_seal(W, &m, MAXP, b, a->flen, &len, NULL) != PX_OK) exit(4);
		if (nn_send(a->s, &b, NN_MSG, 0) < 0) exit(5);
	}
	return NULL;
}

/* Seconds for iters frames: in memory (transport 0), over tcp (1) or
 * ipc (2). */
static double run(int transport, uint32_t floats, uint32_t flags, int iters,
		  size_t flen)
{
	uint64_t t0 = px_now_mono_us();
	if (transport == 0) {
		uint8_t *buf = malloc(flen); struct wire_msg m; size_t len;
		for (int i = 0; i < iters; i++) {
			msg(&m, floats, flags, i);
			if (wire_seal(W, &m, MAXP, buf, flen, &len, NULL) != PX_OK) exit(6);
			take(buf, len, flags != 0);
		}
		free(buf);
	} else {
		char url[96]; int pull = nn_socket(AF_SP, NN_PULL), push = nn_socket(AF_SP, NN_PUSH);
		int unlimited = -1; pthread_t th;
		struct snd a = { push, floats, flags, iters, flen };
		if (transport == 1)
			snprintf(url, sizeof url, "tcp://127.0.0.1:%d",
				 20000 + (int)(px_now_mono_us() % 40000));
		else
			snprintf(url, sizeof url, "ipc:///tmp/pxbench-%d.sock", (int)getpid());
		nn_setsockopt(pull, NN_SOL_SOCKET, NN_RCVMAXSIZE, &unlimited, sizeof unlimited);
		if (nn_bind(pull, url) < 0 || nn_connect(push, url) < 0) exit(7);
		t0 = px_now_mono_us();
		pthread_create(&th, NULL, sender, &a);
		for (int i = 0; i < iters; i++) {
			void *b; int n = nn_recv(pull, &b, NN_MSG, 0);
			if (n < 0) exit(8);
			take(b, (size_t)n, flags != 0);
			nn_freemsg(b);
		}
		pthread_join(th, NULL);
		nn_close(push); nn_close(pull);
		if (transport == 2) unlink(url + 6);
	}
	return (px_now_mono_us() - t0) / 1e6;
}

int main(void)
{
	static const uint32_t floats[] = { 0, 1024 - 8, 16384 - 8, 262144 - 8, 1048576 - 8 };
	static const char *const tname[] = { "in memory", "tcp://127.0.0.1", "ipc://" };
	F = malloc(1048576 * 4); OUT = malloc(1048576 * 4);
	for (int i = 0; i < 1048576; i++) F[i] = (float)i * 1e-3f;
	W = mk(7); C = mk(0);
	pair(W, C);
	printf("| frame (bytes) | path | GMAC frames/s | GCM frames/s | GMAC MiB/s | GCM MiB/s | GCM / GMAC time |\n");
	printf("|---|---|---:|---:|---:|---:|---:|\n");
	for (size_t k = 0; k < sizeof floats / sizeof *floats; k++) {
		size_t flen = WIRE_OVERHEAD + (floats[k] ? WIRE_RANGE_PREFIX + floats[k] * 4u : 8);
		/* about 256 MiB or 200000 frames a measurement, whichever is fewer */
		int iters = (int)(((size_t)256 << 20) / flen);
		if (iters > 200000) iters = 200000;
		for (int t = 0; t < 3; t++) {
			double best[2] = { 1e9, 1e9 };
			/* 3 rounds, alternating, the best of each */
			for (int r = 0; r < 3; r++)
				for (int e = 0; e < 2; e++) {
					double s = run(t, floats[k], e ? WIRE_F_ENC : 0, iters, flen);
					if (s < best[e]) best[e] = s;
				}
			printf("| %zu (%s) | %s | %.0f | %.0f | %.0f | %.0f | %.2f |\n", flen,
			       floats[k] ? "PUSH" : "CLOCK", tname[t],
			       iters / best[0], iters / best[1],
			       iters * (double)flen / 1048576.0 / best[0],
			       iters * (double)flen / 1048576.0 / best[1], best[1] / best[0]);
			fflush(stdout);
		}
	}
	return 0;
}
CEOF
${CC:-cc} -std=c11 -O2 -D_GNU_SOURCE -I. -o "$tmp/gcm" "$tmp/gcm.c" \
	"$BUILD/libproteus.a" $(pkg-config --cflags --libs openssl nanomsg) -lpthread
echo
cpu_has() { grep -qw "$1" /proc/cpuinfo && echo yes || echo no; }
echo "GMAC (ipc:// frames) against GCM, payload encrypted (tcp:// frames); $(nproc) cores, not pinned;"
echo "AES-NI: $(cpu_has aes), PCLMULQDQ: $(cpu_has pclmulqdq), VAES: $(cpu_has vaes), OPENSSL_ia32cap: ${OPENSSL_ia32cap:-unset}; $(openssl version 2>/dev/null || echo 'openssl ?'):"
"$tmp/gcm"
