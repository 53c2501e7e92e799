/* net.c -- nanomsg sockets carrying wire frames: open with the protocol's
 * size bound, send sealed frames zero-copy (NN_MSG), receive, verify,
 * decode and count drops.
 */
#include "net.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nanomsg/bus.h>
#include <nanomsg/nn.h>
#include <nanomsg/pair.h>
#include <nanomsg/pipeline.h>
#include <nanomsg/pubsub.h>
#include <nanomsg/reqrep.h>

/* A REQ never resends by itself within this (ms); see net_open. */
#define REQ_RESEND_MS (24 * 3600 * 1000)

struct net_sock {
	int fd;                 /* nanomsg socket */
	enum net_pattern pat;
	struct wire_ctx *ctx;   /* borrowed */
	size_t max_payload;     /* bytes */
	int rcvtimeo;           /* NN_RCVTIMEO now set, ms */
	int sndtimeo;           /* NN_SNDTIMEO now set, ms */
	struct net_opts opts;   /* as opened, for a REQ's new socket */
	/* REQ: a request is out and its answer not received; the URL it is
	 * connected to (one: how this project uses REQ) */
	bool awaiting;
	char url[NN_SOCKADDR_MAX];
	/* Its endpoints: none yet, on this host (ipc://, inproc://), or
	 * across the network (any other transport).  A remote socket seals
	 * every frame encrypted and accepts only encrypted frames; a local
	 * one seals with GMAC only and accepts both.  One socket is one or
	 * the other (net_bind, net_connect). */
	enum net_where { EP_NONE, EP_LOCAL, EP_REMOTE } where;
	struct wire_stats st;
};

static const struct {
	int proto;
	const char *name;
} patterns[NET_PATTERN_MAX] = {
	[NET_PAIR] = { NN_PAIR, "pair" }, [NET_REQ] = { NN_REQ, "req" },
	[NET_REP] = { NN_REP, "rep" },    [NET_PUSH] = { NN_PUSH, "push" },
	[NET_PULL] = { NN_PULL, "pull" }, [NET_PUB] = { NN_PUB, "pub" },
	[NET_SUB] = { NN_SUB, "sub" },    [NET_BUS] = { NN_BUS, "bus" },
};

static enum px_err nn_fail(struct px_error *err, const char *what,
			   const char *subject)
{
	int e = nn_errno();

	return px_errorf(err, PX_ESYS | e, "%s '%s': %s", what, subject,
			 nn_strerror(e));
}

static enum px_err setopt(struct net_sock *s, int level, int opt,
			  const void *v, size_t len, const char *name,
			  struct px_error *err)
{
	if (nn_setsockopt(s->fd, level, opt, v, len) < 0)
		return nn_fail(err, "set socket option", name);
	return PX_OK;
}

static enum px_err setint(struct net_sock *s, int level, int opt, int v,
			  const char *name, struct px_error *err)
{
	return setopt(s, level, opt, &v, sizeof(v), name, err);
}

/* A nanomsg socket of s's pattern with s's options, as s->fd. */
static enum px_err fresh_fd(struct net_sock *s, struct px_error *err)
{
	const struct net_opts *o = &s->opts;
	enum net_pattern p = s->pat;
	enum px_err r;

	s->rcvtimeo = -1;
	s->sndtimeo = -1;
	s->awaiting = false;
	s->fd = nn_socket(AF_SP, patterns[p].proto);
	if (s->fd < 0)
		return nn_fail(err, "open socket", patterns[p].name);
	/* The transport refuses a larger message before allocating it. */
	r = setint(s, NN_SOL_SOCKET, NN_RCVMAXSIZE,
		   (int)(s->max_payload + WIRE_OVERHEAD), "NN_RCVMAXSIZE", err);
	if (r == PX_OK && o->rcvbuf > 0)
		r = setint(s, NN_SOL_SOCKET, NN_RCVBUF, o->rcvbuf, "NN_RCVBUF",
			   err);
	if (r == PX_OK && o->sndbuf > 0)
		r = setint(s, NN_SOL_SOCKET, NN_SNDBUF, o->sndbuf, "NN_SNDBUF",
			   err);
	if (r == PX_OK && p == NET_SUB)
		r = setopt(s, NN_SUB, NN_SUB_SUBSCRIBE, "", 0,
			   "NN_SUB_SUBSCRIBE", err);
	if (r == PX_OK && p == NET_REQ)
		r = setint(s, NN_REQ, NN_REQ_RESEND_IVL, REQ_RESEND_MS,
			   "NN_REQ_RESEND_IVL", err);
	if (r != PX_OK) {
		nn_close(s->fd);
		s->fd = -1;
	}
	return r;
}

/* A REQ whose last request went unanswered gets a new socket before it
 * sends again.  nanomsg 1.1.5's REQ keeps the stale answer that comes
 * later, drops it, and frees it a second time when the socket closes
 * (an abort in nn_req_term: proteusd died so after a 10 ms registration
 * attempt timed out under load).  A socket that never sends twice
 * without an answer between never holds such a reply. */
static enum px_err req_renew(struct net_sock *s, struct px_error *err)
{
	enum px_err r;

	nn_close(s->fd);
	r = fresh_fd(s, err);
	if (r == PX_OK && s->url[0] && nn_connect(s->fd, s->url) < 0)
		r = nn_fail(err, "connect", s->url);
	return r;
}

enum px_err net_open(struct wire_ctx *ctx, enum net_pattern p,
		     const struct net_opts *o, struct net_sock **ret,
		     struct px_error *err)
{
	struct net_opts def = { 0 };
	struct net_sock *s;
	enum px_err r;

	if (!o)
		o = &def;
	if ((unsigned)p >= NET_PATTERN_MAX || !patterns[p].name)
		return px_errorf(err, PX_EINVAL, "unknown socket pattern %d",
				 (int)p);
	if (o->max_payload &&
	    (o->max_payload < WIRE_PAYLOAD_MIN ||
	     o->max_payload > WIRE_PAYLOAD_MAX))
		return px_errorf(err, PX_EINVAL,
				 "'max_payload' %zu outside %u..%u",
				 o->max_payload, WIRE_PAYLOAD_MIN,
				 WIRE_PAYLOAD_MAX);
	s = px_calloc(1, sizeof(*s));
	if (!s)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	s->ctx = ctx;
	s->pat = p;
	s->max_payload = o->max_payload ? o->max_payload
					: WIRE_PAYLOAD_DEFAULT;
	s->opts = *o;
	r = fresh_fd(s, err);
	if (r != PX_OK)
		goto out_free;
	*ret = s;
	return PX_OK;

out_free:
	free(s);
	return r;
}

void net_close(struct net_sock *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		nn_close(s->fd);
	free(s);
}

/* Where a url's transport reaches: this host only, or the network. */
static enum net_where url_where(const char *url)
{
	return strncmp(url, "ipc://", 6) == 0 ||
			       strncmp(url, "inproc://", 9) == 0 ?
		       EP_LOCAL : EP_REMOTE;
}

/* Check url and that its transport is of the socket's kind: a socket
 * that sends in the clear on ipc:// must not also reach tcp://, and a
 * socket that requires encryption would drop its ipc:// peers' frames. */
static enum px_err check_url(struct net_sock *s, const char *url,
			     struct px_error *err)
{
	enum net_where where;

	if (!url || strnlen(url, NN_SOCKADDR_MAX) >= NN_SOCKADDR_MAX)
		return px_errorf(err, PX_EINVAL, "bad endpoint url");
	where = url_where(url);
	if (s->where != EP_NONE && s->where != where)
		return px_errorf(err, PX_EINVAL,
				 "endpoint '%s': this socket already has %s "
				 "endpoints (frames that leave the host are "
				 "encrypted, local ones not: one socket is one "
				 "or the other)", url,
				 s->where == EP_LOCAL ? "local (ipc, inproc)" :
							"network");
	return PX_OK;
}


enum px_err net_bind(struct net_sock *s, const char *url,
		     struct px_error *err)
{
	enum px_err r = check_url(s, url, err);

	if (r != PX_OK)
		return r;
	if (nn_bind(s->fd, url) < 0)
		return nn_fail(err, "bind", url);
	s->where = url_where(url);
	return PX_OK;
}

enum px_err net_connect(struct net_sock *s, const char *url,
			struct px_error *err)
{
	enum px_err r = check_url(s, url, err);

	if (r != PX_OK)
		return r;
	if (nn_connect(s->fd, url) < 0)
		return nn_fail(err, "connect", url);
	s->where = url_where(url);
	if (s->pat == NET_REQ)
		snprintf(s->url, sizeof s->url, "%s", url);
	return PX_OK;
}

/* Set NN_SNDTIMEO/NN_RCVTIMEO when it differs from what is set. */
static enum px_err set_timeout(struct net_sock *s, bool snd, int ms,
			       struct px_error *err)
{
	int *cur = snd ? &s->sndtimeo : &s->rcvtimeo;
	enum px_err r;

	if (*cur == ms)
		return PX_OK;
	r = setint(s, NN_SOL_SOCKET, snd ? NN_SNDTIMEO : NN_RCVTIMEO, ms,
		   snd ? "NN_SNDTIMEO" : "NN_RCVTIMEO", err);
	if (r == PX_OK)
		*cur = ms;
	return r;
}

enum px_err net_send(struct net_sock *s, struct wire_msg *m, int timeout_ms,
		     struct px_error *err)
{
	size_t plen, flen;
	void *buf;
	enum px_err r;
	int e;

	r = wire_payload_size(m, s->max_payload, &plen, err);
	if (r != PX_OK)
		return r;
	if (s->pat == NET_REQ && s->awaiting) {
		r = req_renew(s, err);
		if (r != PX_OK)
			return r;
	}
	if (timeout_ms != 0) {
		r = set_timeout(s, true, timeout_ms < 0 ? -1 : timeout_ms,
				err);
		if (r != PX_OK)
			return r;
	}
	buf = nn_allocmsg(WIRE_OVERHEAD + plen, 0);
	if (!buf)
		return px_errorf(err, PX_ENOMEM, "out of memory for a %s frame",
				 wire_type_name(m->hdr.type));
	/* the socket decides, not the caller: a frame for the network is
	 * encrypted whatever m said */
	if (s->where == EP_REMOTE)
		m->hdr.flags |= WIRE_F_ENC;
	else
		m->hdr.flags &= ~(uint32_t)WIRE_F_ENC;
	r = wire_seal(s->ctx, m, s->max_payload, buf, WIRE_OVERHEAD + plen,
		      &flen, err);
	if (r != PX_OK)
		goto out_free;
	if (nn_send(s->fd, &buf, NN_MSG, timeout_ms == 0 ? NN_DONTWAIT : 0)
	    >= 0) {
		s->awaiting = s->pat == NET_REQ;
		return PX_OK;
	}
	e = nn_errno();
	if (e == EAGAIN || e == ETIMEDOUT)
		r = px_errorf(err, PX_ETIMEDOUT, "send %s: timed out",
			      wire_type_name(m->hdr.type));
	else
		r = px_errorf(err, PX_ESYS | e, "send %s: %s",
			      wire_type_name(m->hdr.type), nn_strerror(e));
out_free:
	nn_freemsg(buf);
	return r;
}

static void free_nn(void *frame)
{
	(void)nn_freemsg(frame);
}

enum px_err net_recv(struct net_sock *s, struct wire_msg *ret,
		     int timeout_ms, struct px_error *err)
{
	uint64_t deadline = 0, now;
	enum wire_drop d;
	struct wire_msg m;
	enum px_err r;
	void *buf;
	int n, e, wait = timeout_ms < 0 ? -1 : timeout_ms;

	if (timeout_ms > 0)
		deadline = px_now_mono_us() + (uint64_t)timeout_ms * 1000;
	for (;;) {
		if (wait != 0) {
			r = set_timeout(s, false, wait, err);
			if (r != PX_OK)
				return r;
		}
		n = nn_recv(s->fd, &buf, NN_MSG, wait == 0 ? NN_DONTWAIT : 0);
		if (n < 0) {
			e = nn_errno();
			if (e == EAGAIN || e == ETIMEDOUT)
				return px_errorf(err, PX_ETIMEDOUT,
						 "receive: timed out");
			return px_errorf(err, PX_ESYS | e, "receive: %s",
					 nn_strerror(e));
		}
		now = px_now_mono_us();
		r = wire_open_ex(s->ctx, buf, (size_t)n, s->max_payload, now,
				 s->where == EP_REMOTE, &s->st, &m, &d);
		if (r == PX_OK) {
			m.frame = buf;
			m.frame_free = free_nn;
			*ret = m;
			s->awaiting = false;
			return PX_OK;
		}
		nn_freemsg(buf);
		if (r != PX_EPROTO)
			return px_errorf(err, r, "receive: out of memory");
		if (timeout_ms > 0) {
			if (now >= deadline)
				return px_errorf(err, PX_ETIMEDOUT,
						 "receive: timed out");
			wait = (int)((deadline - now + 999) / 1000);
		}
	}
}

enum px_err net_send_range(struct net_sock *s, enum wire_type type,
			   uint32_t flags, struct wire_node dest,
			   int64_t clock, uint32_t shard, uint64_t offset,
			   const float *f, size_t n, int timeout_ms,
			   struct px_error *err)
{
	uint32_t chunk = wire_range_chunk(s->max_payload);
	struct wire_msg m;
	size_t done = 0;
	enum px_err r;

	if (type != WIRE_PUSH && type != WIRE_PARAMS && type != WIRE_FORWARD)
		return px_errorf(err, PX_EINVAL, "%s is not a range message",
				 wire_type_name(type));
	if (offset > UINT64_MAX - n)
		return px_errorf(err, PX_EINVAL, "range overflows");
	do {
		size_t k = n - done < chunk ? n - done : chunk;

		wire_msg_init(&m, type, dest, clock);
		m.hdr.flags = flags & ~(uint32_t)WIRE_F_MORE;
		m.u.range.shard = shard;
		m.u.range.offset = offset + done;
		m.u.range.clock = clock;
		m.u.range.data.f = f + done;
		m.u.range.data.n = (uint32_t)k;
		if (done + k < n)
			m.hdr.flags |= WIRE_F_MORE;
		r = net_send(s, &m, timeout_ms, err);
		if (r != PX_OK)
			return r;
		done += k;
	} while (done < n);
	return PX_OK;
}

enum px_err net_send_rows(struct net_sock *s, uint8_t op,
			  struct wire_node dest, int64_t clock,
			  uint32_t shard, uint32_t width, const uint32_t *ids,
			  const float *f, uint32_t n, int timeout_ms,
			  uint64_t *ret_bytes, uint32_t *ret_frames,
			  struct px_error *err)
{
	uint32_t chunk = wire_rows_chunk(s->max_payload, width), done = 0;
	struct wire_msg m;
	enum px_err r;

	if (!chunk)
		return px_errorf(err, PX_EINVAL, "rows of %u floats do not "
				 "fit a frame", width);
	do {
		uint32_t k = n - done < chunk ? n - done : chunk;

		wire_msg_init(&m, WIRE_ROWS, dest, clock);
		m.u.rows.op = op;
		m.u.rows.shard = shard;
		m.u.rows.width = width;
		m.u.rows.clock = clock;
		m.u.rows.ids.v = ids + done;
		m.u.rows.ids.n = k;
		m.u.rows.data.f = f + (size_t)done * width;
		m.u.rows.data.n = k * width;
		if (done + k < n)
			m.hdr.flags |= WIRE_F_MORE;
		r = net_send(s, &m, timeout_ms, err);
		if (r != PX_OK)
			return r;
		if (ret_bytes)
			*ret_bytes += WIRE_OVERHEAD + WIRE_ROWS_PREFIX +
				      4 * (uint64_t)k * (width + 1u);
		if (ret_frames)
			(*ret_frames)++;
		done += k;
	} while (done < n);
	return PX_OK;
}

/* Wait for a message of one of two types, skipping others. */
static enum px_err recv_type(struct net_sock *s, enum wire_type t1,
			     enum wire_type t2, int timeout_ms,
			     struct wire_msg *ret, struct px_error *err)
{
	uint64_t deadline = px_now_mono_us() + (uint64_t)timeout_ms * 1000;
	enum px_err r;

	for (;;) {
		uint64_t now = px_now_mono_us();
		int left = now >= deadline ? 0 :
			   (int)((deadline - now + 999) / 1000);

		if (timeout_ms < 0)
			left = -1;
		r = net_recv(s, ret, left, err);
		if (r != PX_OK)
			return r;
		if (ret->hdr.type == t1 || ret->hdr.type == t2)
			return PX_OK;
		wire_msg_release(ret);
		if (left == 0)
			return px_errorf(err, PX_ETIMEDOUT,
					 "waiting for %s: timed out",
					 wire_type_name(t1));
	}
}

enum px_err net_register(struct net_sock *s, struct wire_node coord,
			 const struct wire_register *info, int timeout_ms,
			 struct wire_msg *ret_reply, struct px_error *err)
{
	struct wire_msg hello, chal, reg;
	enum px_err r;

	r = wire_hello_begin(s->ctx, coord, px_now_mono_us(), &hello, err);
	if (r != PX_OK)
		return r;
	r = net_send(s, &hello, timeout_ms, err);
	if (r != PX_OK)
		return r;
	r = recv_type(s, WIRE_CHALLENGE, WIRE_CHALLENGE, timeout_ms, &chal,
		      err);
	if (r != PX_OK)
		return r;
	wire_register_begin(&chal, &reg);
	wire_msg_release(&chal);
	reg.u.reg.roles = info->roles;
	reg.u.reg.ncpu = info->ncpu;
	reg.u.reg.ngpu = info->ngpu;
	reg.u.reg.mem_mib = info->mem_mib;
	memcpy(reg.u.reg.instance, info->instance, sizeof(info->instance));
	memcpy(reg.u.reg.addr, info->addr, sizeof(info->addr));
	r = net_send(s, &reg, timeout_ms, err);
	if (r != PX_OK)
		return r;
	return recv_type(s, WIRE_ASSIGN, WIRE_ACK, timeout_ms, ret_reply,
			 err);
}

const struct wire_stats *net_stats(const struct net_sock *s)
{
	return &s->st;
}

size_t net_max_payload(const struct net_sock *s)
{
	return s->max_payload;
}

enum px_err net_fd(const struct net_sock *s, bool for_send, int *ret_fd,
		   struct px_error *err)
{
	size_t len = sizeof(int);
	int fd;

	if (nn_getsockopt(s->fd, NN_SOL_SOCKET,
			  for_send ? NN_SNDFD : NN_RCVFD, &fd, &len) < 0) {
		int e = nn_errno();

		if (e == ENOPROTOOPT)
			return px_errorf(err, PX_EUNSUPP,
					 "a %s socket cannot %s",
					 patterns[s->pat].name,
					 for_send ? "send" : "receive");
		return px_errorf(err, PX_ESYS | e, "socket fd: %s",
				 nn_strerror(e));
	}
	*ret_fd = fd;
	return PX_OK;
}

int net_nn_socket(const struct net_sock *s)
{
	return s->fd;
}
