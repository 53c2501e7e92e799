#!/bin/sh
# bench_wire.sh -- wire protocol throughput: the tag alone over 1 MiB
# (AES-256-GMAC, the protocol's since version 3, against HMAC-SHA256, the
# one before), seal+open of a 1 MiB PUSH in memory, and 4 MiB PUSH/PULL
# over tcp://127.0.0.1 with the protocol vs raw nanomsg (no tag).  Runs
# twice: as the CPU is, and with its SHA extensions masked
# (OPENSSL_ia32cap), which is what a CPU without them gets.  Needs
# build/libproteus.a (make).  Usage:
#   tests/bench/bench_wire.sh [BUILD]     (BUILD defaults to build)
set -eu
cd "$(dirname "$0")/../.."
BUILD=${1:-${BUILD:-build}}
[ -f "$BUILD/libproteus.a" ] || { echo "no $BUILD/libproteus.a: run make" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/bench.c" <<'CEOF'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <nanomsg/nn.h>
#include <nanomsg/pipeline.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include "trainer/net.h"

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
