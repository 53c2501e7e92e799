/* dist_common.c -- what the trainer's roles share: the job key from the
 * environment or a key file, endpoints, the clock count, the learning rate,
 * shard placement per stage, peer links and the membership copy.
 */
#include "dist_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "../../common/keyfile.h"

void dist_logf(const struct dist_opts *o, enum log_level level,
	       const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!o->log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	o->log(o->log_arg, level, buf);
}

void dist_log_wire(const struct dist_opts *o, enum log_level level,
		   const char *role, struct wire_ctx *ctx)
{
	struct wire_counters wc;
	struct rusage ru;
	double cpu_ms = 0;

	if (!ctx)
		return;
	wire_ctx_counters(ctx, &wc);
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		cpu_ms = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) *
			 1e3 + (double)(ru.ru_utime.tv_usec +
					ru.ru_stime.tv_usec) / 1e3;
	dist_logf(o, level, "%s %u wire: sent %" PRIu64 " frames, %" PRIu64
		  " bytes; received %" PRIu64 " frames, %" PRIu64 " bytes; "
		  "authentication %.1f ms of %.1f ms CPU", role, o->node.v,
		  wc.sealed_frames, wc.sealed_bytes, wc.opened_frames,
		  wc.opened_bytes, (double)wc.mac_ns / 1e6, cpu_ms);
}

/* The key in hex from DIST_KEY_ENV's value s. */
static enum px_err key_from_hex(struct dist_opts *o, const char *s,
				struct px_error *err)
{
	size_t len = strlen(s), n = len / 2;

	if (len % 2 || n < WIRE_JOB_KEY_MIN || n > WIRE_JOB_KEY_MAX)
		return px_errorf(err, PX_EINVAL, "job key in '%s': need %d "
				 "to %d bytes in hex", DIST_KEY_ENV,
				 WIRE_JOB_KEY_MIN, WIRE_JOB_KEY_MAX);
	for (size_t i = 0; i < n; i++) {
		int hi = px_hexval(s[2 * i]), lo = px_hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return px_errorf(err, PX_EINVAL, "job key in '%s': "
					 "not hex at %zu", DIST_KEY_ENV,
					 2 * i);
		o->key[i] = (uint8_t)(hi << 4 | lo);
	}
	o->key_len = n;
	return PX_OK;
}

enum px_err dist_key_from_env(struct dist_opts *o, struct px_error *err)
{
	const char *s = getenv(DIST_KEY_ENV), *f = getenv(DIST_KEY_FILE_ENV);
	enum px_err r;

	_Static_assert(PX_KEYFILE_KEY_LEN >= WIRE_JOB_KEY_MIN &&
		       PX_KEYFILE_KEY_LEN <= WIRE_JOB_KEY_MAX,
		       "a key file's key is a job key");
	if (s) {
		r = key_from_hex(o, s, err);
	} else if (f) {
		r = px_keyfile_read(f, true, o->key, err);
		if (r == PX_OK)
			o->key_len = PX_KEYFILE_KEY_LEN;
		else
			px_error_prefix(err, "job key from '%s': ",
					DIST_KEY_FILE_ENV);
	} else {
		r = px_errorf(err, PX_EINVAL, "no job key: set '%s' (hex) "
			      "or '%s' (a file holding it)", DIST_KEY_ENV,
			      DIST_KEY_FILE_ENV);
	}
	/* what this process's children inherit holds no key, nor where
	 * it lies */
	unsetenv(DIST_KEY_ENV);
	unsetenv(DIST_KEY_FILE_ENV);
	return r;
}

enum px_err dist_tcp_port(const char *base, unsigned long more,
			  size_t *ret_host_len, unsigned long *ret_port,
			  struct px_error *err)
{
	const char *colon = strrchr(base, ':');
	char *end;
	unsigned long port;

	if (!colon || colon < base + 6)
		return px_errorf(err, PX_EINVAL, "address '%s' has no port",
				 base);
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || colon[1] < '0' || colon[1] > '9' || port == 0 ||
	    port > 65535 || more > 65535 - port)
		return px_errorf(err, PX_EINVAL, "address '%s': bad port, or "
				 "its next %lu ports are past 65535", base,
				 more);
	*ret_host_len = (size_t)(colon - base);
	*ret_port = port;
	return PX_OK;
}

enum px_err dist_endpoint(const char *base, enum dist_ep ep, char *buf,
			  size_t len, struct px_error *err)
{
	static const char *const suffix[DIST_EP_MAX] = { "rep", "pull",
							 "pub" };
	int n;

	if (ep >= DIST_EP_MAX)
		return px_errorf(err, PX_EINVAL, "bad endpoint %d", (int)ep);
	if (!strncmp(base, "tcp://", 6)) {
		size_t host;
		unsigned long port;
		enum px_err e = dist_tcp_port(base, ep, &host, &port, err);

		if (e != PX_OK)
			return e;
		n = snprintf(buf, len, "%.*s:%lu", (int)host, base, port + ep);
	} else if (!strncmp(base, "ipc://", 6) ||
		   !strncmp(base, "inproc://", 9)) {
		n = snprintf(buf, len, "%s.%s", base, suffix[ep]);
	} else {
		return px_errorf(err, PX_EINVAL, "address '%s': need tcp://, "
				 "ipc:// or inproc://", base);
	}
	if (n < 0 || (size_t)n >= len)
		return px_errorf(err, PX_ETOOBIG, "address '%s' too long",
				 base);
	return PX_OK;
}

int64_t dist_total_clocks(uint32_t n_train, uint32_t workers,
			  uint32_t epochs, uint32_t batch)
{
	uint64_t part;

	if (workers == 0 || batch == 0)
		return 0;
	part = (n_train + (uint64_t)workers - 1) / workers;
	return (int64_t)epochs * (int64_t)((part + batch - 1) / batch);
}

int64_t dist_job_clocks(uint32_t n_train, uint32_t workers, uint32_t epochs,
			uint32_t batch, uint32_t clock_batches)
{
	int64_t b = dist_total_clocks(n_train, workers, epochs, batch);

	if (clock_batches == 0)
		return b;
	return (b + clock_batches - 1) / clock_batches;
}

uint32_t dist_relief_split(double left, double vs, const double *vh,
			   const double *t0, uint32_t n, uint32_t *ret)
{
	/* the straggler's minibatch in progress stays its own: whole
	 * minibatches not begun are what can move */
	double whole = left > 0 ? floor(left) : 0, base;
	uint32_t kept, moved = 0;

	for (uint32_t k = 0; k < n; k++)
		ret[k] = 0;
	if (!(vs > 0) || !(whole >= 1))
		return 0;
	if (whole > DIST_CLOCK_BATCHES_MAX)
		whole = DIST_CLOCK_BATCHES_MAX;
	kept = (uint32_t)whole;
	base = left - whole > 0 ? left - whole : 0;
	while (kept > 0) {
		double best = INFINITY;
		uint32_t bk = n;

		for (uint32_t k = 0; k < n; k++) {
			double t = vh[k] > 0 ? (t0 ? t0[k] : 0) +
						       (ret[k] + 1) / vh[k]
					     : INFINITY;

			if (t < best) {
				best = t;
				bk = k;
			}
		}
		/* moving one more must end it before the straggler
		 * would, keeping it */
		if (bk == n || best >= (base + kept) / vs)
			break;
		ret[bk]++;
		kept--;
		moved++;
	}
	return moved;
}

int64_t dist_leave_deadline_us(const struct dist_opts *o)
{
	int64_t ms = o->leave_ms && *o->leave_ms > 0
			     ? *o->leave_ms & DIST_LEAVE_MS_MASK : 0;

	return px_now_wall_us() + (ms ? ms : DIST_LEAVE_DEFAULT_MS) * 1000;
}

uint8_t dist_leave_reason(const struct dist_opts *o)
{
	int r = o->leave_ms && *o->leave_ms > 0 ? *o->leave_ms >> 24 : 0;

	return r > 0 && r < WIRE_LEAVE_REASON_MAX ? (uint8_t)r
						  : WIRE_LEAVE_EVICTION;
}

float dist_lr(const struct train_opts *t, int64_t step, int64_t steps)
{
	if (t->schedule != TRAIN_LR_COSINE || steps <= 0)
		return t->lr;
	if (step >= steps)
		step = steps - 1;
	if (step < 0)
		step = 0;
	return t->lr * 0.5f *
	       (1.0f + (float)cos(3.141592653589793 * (double)step / steps));
}

void dist_place(uint8_t stage, const struct wire_node *ps, const bool *rel,
		uint32_t nps, uint64_t nparams, uint32_t nshards,
		struct wire_shard *map)
{
	struct wire_node r[DIST_MAX_NODES], t[DIST_MAX_NODES];
	uint32_t nr = 0, nt = 0;

	for (uint32_t i = 0; i < nps && i < DIST_MAX_NODES; i++) {
		if (rel[i])
			r[nr++] = ps[i];
		else
			t[nt++] = ps[i];
	}
	for (uint32_t s = 0; s < nshards; s++) {
		uint64_t lo = nparams * s / nshards;
		uint64_t hi = nparams * (s + 1) / nshards;

		map[s].shard = s;
		map[s].offset = lo;
		map[s].count = hi - lo;
		map[s].backup = WIRE_NODE_ALL;
		if (nps == 0) {
			map[s].active = WIRE_NODE_ALL;
		} else if (stage == 1 || nt == 0) {
			/* Stage 1: shards on reliable nodes only. */
			map[s].active = nr ? r[s % nr] : t[s % nt];
		} else {
			/* Stages 2 and 3: ActivePS on transient nodes, each
			 * backed up on a reliable one. */
			map[s].active = t[s % nt];
			if (nr)
				map[s].backup = r[s % nr];
		}
	}
}

void dist_place_rows(uint8_t stage, const struct wire_node *ps,
		     const bool *rel, uint32_t nps, uint64_t nrows,
		     uint32_t width, uint32_t nshards, struct wire_shard *map)
{
	dist_place(stage, ps, rel, nps, nrows, nshards, map);
	for (uint32_t s = 0; s < nshards; s++) {
		map[s].offset *= width;
		map[s].count *= width;
	}
}

struct net_sock *dist_link_get(struct dist_links *t, struct wire_node node,
			       const char *addr, bool req,
			       struct px_error *err)
{
	struct dist_link *free_l = NULL, *l = NULL;
	struct net_sock **s;
	enum px_err e;

	for (size_t i = 0; i < DIST_MAX_NODES; i++) {
		if (t->l[i].used && wire_node_eq(t->l[i].node, node)) {
			l = &t->l[i];
			break;
		}
		if (!t->l[i].used && !free_l)
			free_l = &t->l[i];
	}
	if (!l) {
		if (!free_l) {
			px_errorf(err, PX_ETOOBIG, "too many peers");
			return NULL;
		}
		l = free_l;
		memset(l, 0, sizeof(*l));
		l->used = true;
		l->node = node;
		snprintf(l->addr, sizeof(l->addr), "%s", addr);
	}
	s = req ? &l->req : &l->push;
	if (!*s) {
		e = dist_sock(t->ctx, req ? NET_REQ : NET_PUSH, l->addr,
			      req ? DIST_EP_REP : DIST_EP_PULL, false, s, err);
		if (e != PX_OK)
			return NULL;
	}
	return *s;
}

void dist_link_reset_req(struct dist_links *t, struct wire_node node)
{
	for (size_t i = 0; i < DIST_MAX_NODES; i++) {
		if (t->l[i].used && wire_node_eq(t->l[i].node, node)) {
			net_close(t->l[i].req);
			t->l[i].req = NULL;
		}
	}
}

void dist_links_close(struct dist_links *t)
{
	for (size_t i = 0; i < DIST_MAX_NODES; i++) {
		if (!t->l[i].used)
			continue;
		net_close(t->l[i].req);
		net_close(t->l[i].push);
		t->l[i].used = false;
	}
}

bool dist_told_to_leave(const struct wire_msg *m, struct wire_node self,
			uint64_t session, int64_t *ret_deadline_us)
{
	const struct wire_membership *mb = &m->u.membership;

	for (uint32_t i = 0; i < mb->n; i++)
		if (wire_node_eq(mb->members[i].node, self)) {
			if (ret_deadline_us)
				*ret_deadline_us =
					mb->members[i].leave_deadline_us;
			return mb->members[i].state == WIRE_MEMBER_LEAVING &&
			       mb->members[i].session == session;
		}
	return false;
}

bool dist_members_take(struct dist_members *mb, const struct wire_msg *m)
{
	const struct wire_membership *w = &m->u.membership;

	if (m->hdr.type != WIRE_MEMBERSHIP || w->epoch <= mb->epoch)
		return false;
	mb->epoch = w->epoch;
	mb->n = 0;
	for (uint32_t i = 0; i < w->n && mb->n < DIST_MAX_NODES; i++) {
		struct dist_member *d = &mb->m[mb->n++];

		d->node = w->members[i].node;
		d->roles = w->members[i].roles;
		d->state = w->members[i].state;
		snprintf(d->addr, sizeof(d->addr), "%.*s", DIST_ADDR_MAX,
			 w->members[i].addr);
	}
	return true;
}

const struct dist_member *dist_members_find(const struct dist_members *mb,
					    struct wire_node node)
{
	for (uint32_t i = 0; i < mb->n; i++)
		if (wire_node_eq(mb->m[i].node, node))
			return &mb->m[i];
	return NULL;
}

bool dist_member_holds_partition(const struct dist_member *d, uint8_t st)
{
	return (d->roles & WIRE_ROLE_WORKER) &&
	       d->state == WIRE_MEMBER_ACTIVE &&
	       !(st == 3 && (d->roles & WIRE_ROLE_PS_BACKUP));
}

uint32_t dist_members_workers(const struct dist_members *mb, uint8_t st,
			      struct wire_node self, uint32_t *ret_index)
{
	uint32_t n = 0, below = 0;
	bool self_in = false;

	/* The index of self is the number of partition holders with a
	 * smaller node id. */
	for (uint32_t i = 0; i < mb->n; i++) {
		const struct dist_member *d = &mb->m[i];

		if (!dist_member_holds_partition(d, st))
			continue;
		n++;
		if (wire_node_eq(d->node, self))
			self_in = true;
		else if (d->node.v < self.v)
			below++;
	}
	*ret_index = self_in ? below : UINT32_MAX;
	return n;
}

enum px_err dist_sock(struct wire_ctx *ctx, enum net_pattern p,
		      const char *base, enum dist_ep ep, bool bind,
		      struct net_sock **ret, struct px_error *err)
{
	char url[256];
	struct net_sock *s;
	enum px_err e;

	e = dist_endpoint(base, ep, url, sizeof(url), err);
	if (e != PX_OK)
		return e;
	e = net_open(ctx, p, NULL, &s, err);
	if (e != PX_OK)
		return e;
	e = bind ? net_bind(s, url, err) : net_connect(s, url, err);
	if (e != PX_OK) {
		net_close(s);
		return e;
	}
	*ret = s;
	return PX_OK;
}

enum px_err dist_register(const struct dist_opts *o, struct net_sock *req,
			  uint8_t roles, int timeout_ms,
			  struct wire_msg *ret_reply, struct px_error *err)
{
	uint64_t deadline = px_now_mono_us() + (uint64_t)timeout_ms * 1000;
	struct wire_register info;
	struct wire_msg reply;
	enum px_err e;

	memset(&info, 0, sizeof(info));
	info.roles = roles;
	info.ncpu = 1;
	snprintf(info.instance, sizeof(info.instance), "%s",
		 o->reliable ? "reliable" : "transient");
	snprintf(info.addr, sizeof(info.addr), "%s", o->listen);
	for (;;) {
		/* stopped (SIGTERM) before the coordinator answered: not a
		 * failure, whatever call the signal cut short */
		if (o->stop && *o->stop)
			return px_errorf(err, PX_ECANCELED, "stopped while "
					 "registering");
		e = net_register(req, (struct wire_node){ DIST_COORD_NODE },
				 &info, 300, &reply, err);
		if (e == PX_OK && reply.hdr.type == WIRE_ASSIGN) {
			*ret_reply = reply;
			return PX_OK;
		}
		if (e == PX_OK) {
			e = px_errorf(err, PX_EPROTO, "coordinator refused: "
				      "%s", reply.u.ack.detail);
			wire_msg_release(&reply);
			return e;
		}
		if (o->stop && *o->stop)
			continue; /* the check above */
		if (e != PX_ETIMEDOUT || px_now_mono_us() >= deadline)
			return e;
	}
}

enum px_err dist_pull_send(struct net_sock *q, struct wire_node to,
			   int64_t clock, uint32_t s, uint64_t count,
			   int64_t min_clock, int send_ms, struct px_error *err)
{
	struct wire_msg m;

	wire_msg_init(&m, WIRE_PULL, to, clock);
	m.u.pull.shard = s;
	m.u.pull.count = count;
	m.u.pull.min_clock = min_clock;
	return net_send(q, &m, send_ms, err);
}

enum px_err dist_pull_recv(struct net_sock *q, struct wire_node to,
			   uint32_t s, uint64_t count, int recv_ms,
			   struct wire_msg *ret, struct px_error *err)
{
	struct wire_msg r;
	enum px_err e;

	e = net_recv(q, &r, recv_ms, err);
	if (e != PX_OK)
		return e;
	if (r.hdr.type != WIRE_PARAMS || r.u.range.shard != s ||
	    r.u.range.offset != 0 || r.u.range.data.n != count) {
		e = px_errorf(err, PX_EPROTO, "shard %u: %s from %u, not the "
			      "range asked for", s, wire_type_name(r.hdr.type),
			      to.v);
		wire_msg_release(&r);
		return e;
	}
	*ret = r;
	return PX_OK;
}

enum px_err dist_pull(struct net_sock *q, struct wire_node to, int64_t clock,
		      uint32_t s, uint64_t count, int64_t min_clock,
		      int send_ms, int recv_ms, struct wire_msg *ret,
		      struct px_error *err)
{
	enum px_err e;

	e = dist_pull_send(q, to, clock, s, count, min_clock, send_ms, err);
	if (e == PX_OK)
		e = dist_pull_recv(q, to, s, count, recv_ms, ret, err);
	return e;
}

enum px_err dist_ack(struct net_sock *rep, const struct wire_msg *req,
		     int64_t clock, uint32_t status, struct px_error *err,
		     const char *fmt, ...)
{
	struct wire_msg a;
	va_list ap;

	wire_msg_init(&a, WIRE_ACK, req->hdr.sender, clock);
	a.u.ack.ref_seq = req->hdr.seq;
	a.u.ack.status = status;
	va_start(ap, fmt);
	vsnprintf(a.u.ack.detail, sizeof(a.u.ack.detail), fmt, ap);
	va_end(ap);
	return net_send(rep, &a, 100, err);
}

int dist_range_ms(int base_ms, uint64_t count)
{
	uint64_t ms = (uint64_t)base_ms +
		      count * sizeof(float) * 1000 / DIST_RANGE_FLOOR_BPS;

	return ms > DIST_RANGE_MAX_MS ? DIST_RANGE_MAX_MS : (int)ms;
}

int dist_ms_until(uint64_t deadline_us, int cap)
{
	uint64_t now = px_now_mono_us();
	uint64_t ms;

	if (deadline_us <= now)
		return 0;
	ms = (deadline_us - now + 999) / 1000;
	return ms > (uint64_t)cap ? cap : (int)ms;
}

const char *dist_fmt_eval(char *buf, size_t n, double loss, double acc)
{
	if (isnan(acc))
		snprintf(buf, n, "test: not evaluated yet");
	else
		snprintf(buf, n, "test loss %.4f, accuracy %.2f%%", loss,
			 100.0 * acc);
	return buf;
}
