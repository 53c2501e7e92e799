/* fuzz_wire.c -- libFuzzer harness for the wire decoder behind the MAC:
 * the input is a frame's type (2 bytes), flags (4) and payload (the rest),
 * put under a real header of an established session with a fresh seq and
 * sealed with the sender's key (wire_retag), so every input reaches the
 * header checks and the payload decoder.  Any input is decoded (and
 * released) or dropped with a reason; never a crash, an overread or a
 * leak.  A sparse frame (ROWS, PULL_ROWS) that decodes holds what its
 * checks promise: ids strictly increasing, ids * width floats. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../trainer/dist/wire.h"

#define MAXP (1u << 20)
#define NOW 1000000000ull

static const uint8_t KEY[32] = { 7, 1, 8, 2, 8, 1, 8, 2, 8, 4, 5, 9 };
static const uint64_t JOB = 42;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Encode m on `from` and open it on `to`; the decoded message in *out. */
static void xfer(struct wire_ctx *from, struct wire_ctx *to,
		 struct wire_msg *m, struct wire_msg *out)
{
	struct wire_stats st = { 0 };
	enum wire_drop d;
	uint8_t *buf;
	size_t len;

	if (wire_encode(from, m, MAXP, &buf, &len, NULL) != PX_OK ||
	    wire_open(to, buf, len, MAXP, NOW, &st, out, &d) != PX_OK)
		abort();
	out->frame = buf;
	out->frame_free = free;
}

static struct wire_ctx *ctx(uint32_t node)
{
	struct wire_config wc = { .self = { node }, .job = JOB,
				  .job_key = KEY, .job_key_len = 32 };
	struct wire_ctx *c;

	if (wire_ctx_new(&wc, &c, NULL) != PX_OK)
		abort();
	return c;
}

/* a registers with b (HELLO, CHALLENGE, REGISTER); then a frame of a's
 * to b as the header template. */
static void setup(struct wire_ctx **a, struct wire_ctx **b, uint8_t *tmpl)
{
	struct wire_msg h, hin, c, cin, g, gin, m;
	uint8_t *buf;
	size_t len;

	*a = ctx(1);
	*b = ctx(2);
	if (wire_hello_begin(*a, wire_ctx_self(*b), NOW, &h, NULL) != PX_OK)
		abort();
	xfer(*a, *b, &h, &hin);
	if (wire_challenge_begin(*b, &hin, NOW, &c, NULL) != PX_OK)
		abort();
	xfer(*b, *a, &c, &cin);
	wire_register_begin(&cin, &g);
	g.u.reg.roles = WIRE_ROLE_WORKER;
	xfer(*a, *b, &g, &gin);
	wire_msg_release(&hin);
	wire_msg_release(&cin);
	wire_msg_release(&gin);
	wire_msg_init(&m, WIRE_HEARTBEAT, wire_ctx_self(*b), 5);
	if (wire_encode(*a, &m, MAXP, &buf, &len, NULL) != PX_OK)
		abort();
	memcpy(tmpl, buf, WIRE_HDR_LEN);
	free(buf);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void ids_promise(const struct wire_u32v *ids, uint32_t width)
{
	if (width < 1 || width > WIRE_ROW_WIDTH_MAX || ids->n > WIRE_ROWS_MAX)
		abort();
	for (uint32_t i = 1; i < ids->n; i++)
		if (wire_u32_at(ids, i) <= wire_u32_at(ids, i - 1))
			abort();
}

static void rows_promise(const struct wire_msg *m)
{
	if (m->hdr.type == WIRE_ROWS) {
		ids_promise(&m->u.rows.ids, m->u.rows.width);
		if ((uint64_t)m->u.rows.ids.n * m->u.rows.width !=
		    m->u.rows.data.n)
			abort();
	} else if (m->hdr.type == WIRE_PULL_ROWS) {
		ids_promise(&m->u.pull_rows.ids, m->u.pull_rows.width);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct wire_ctx *a, *b;
	static uint8_t tmpl[WIRE_HDR_LEN];
	static uint64_t seq = 1000;
	struct wire_stats st = { 0 };
	struct wire_msg out;
	enum wire_drop d;
	size_t plen, flen;
	uint8_t *f;
	enum px_err r;

	if (!a)
		setup(&a, &b, tmpl);
	if (size < 6)
		return 0;
	plen = size - 6;
	if (plen > MAXP)
		return 0;
	flen = WIRE_OVERHEAD + plen;
	f = malloc(flen);
	if (!f)
		abort();
	memcpy(f, tmpl, WIRE_HDR_LEN);
	memcpy(f + 6, data, 2);                 /* type */
	memcpy(f + 8, data + 2, 4);             /* flags */
	put32(f + 20, (uint32_t)plen);          /* payload_len */
	seq++;
	for (int i = 0; i < 8; i++)             /* seq: never a replay */
		f[48 + i] = (uint8_t)(seq >> (8 * i));
	memcpy(f + WIRE_HDR_LEN, data + 6, plen);
	if (wire_retag(a, f, flen) != PX_OK)
		abort();
	r = wire_open(b, f, flen, MAXP, NOW, &st, &out, &d);
	if (r == PX_OK) {
		if (d != WIRE_DROP_NONE)
			abort();
		rows_promise(&out);
		wire_msg_release(&out);
	} else if (r != PX_EPROTO || d == WIRE_DROP_NONE ||
		   d == WIRE_DROP_BAD_MAC) {
		abort(); /* every input is authentic: dropped for a reason */
	}
	free(f);
	return 0;
}
