/* dist_ps.c -- the parameter server: holds the shards the coordinator's
 * map gives it, as ActivePS (serves PULL, adds the workers' PUSHed
 * updates, FORWARDs what a clock changed to the backup) or as BackupPS
 * (adds FORWARDs), and hands shards over on a map change.  The optimizer
 * (momentum, learning rate) runs on the workers.  One thread, one nn_poll
 * loop.
 */
#include "dist_int.h"

#include <inttypes.h>
#include <nanomsg/nn.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compute/mf.h"
#include "../compute/model.h"

struct pshard {
	bool have;           /* state present (else awaiting a snapshot) */
	bool active, backup; /* my role for it in the current map */
	bool from_coord;     /* a resumed job's first map: the state comes
				from the coordinator's checkpoint */
	uint64_t off, cnt;   /* range of the flat vector */
	float *w;            /* parameters [cnt] */
	float *base;         /* w at the last FORWARD [cnt] (active) */
	uint64_t pushes;     /* applied */
	/* --model mf: rows pushed since the last FORWARD (the sparse
	 * FORWARD sends only those) */
	uint8_t *dirty;      /* [cnt / row], allocated on first use */
	uint32_t *dl;        /* their ids */
	uint32_t nd;
};

/* The last clock a worker pushed, per shard (read-my-writes). */
struct pusher {
	struct wire_node node;
	bool used;
	int64_t clock[DIST_MAX_SHARDS];
};

#define PS_EARLY_MAX 64   /* PARAMS frames kept for a map to come */
#define PS_HELD_MAX 64    /* --fault-late-push: pushes held at most */
#define PS_EARLY_US 3000000 /* ... for at most this long (a map that
			       gives the shard here comes within a few
			       heartbeats of its hand-over, or never) */

struct ps {
	const struct dist_opts *o;
	struct pusher pushers[DIST_MAX_NODES];
	struct wire_ctx *ctx;
	struct net_sock *rep, *pull, *sub, *creq, *cpush;
	struct dist_links links;
	struct dist_members mb;
	struct wire_shard map[DIST_MAX_SHARDS];
	uint32_t nshards;
	uint32_t stage_epoch;    /* 0: no map yet */
	/* a moved shard's state that came before the map giving it here
	 * (PARAMS on PULL, STAGE on SUB: two sockets, either first): kept
	 * for the maps to come, not dropped, or the shard waits for it
	 * forever when it has no other copy.  Not for the next map only:
	 * a new PS may take an older map (its ASSIGN's, a broadcast queued
	 * before it registered) after the state and before the map that
	 * gives the shard here (seen under the ec2 storms test). */
	struct wire_msg early[PS_EARLY_MAX];
	uint64_t early_us[PS_EARLY_MAX]; /* when each came */
	uint32_t n_early;
	/* --fault-late-push (a test fault): workers' PUSH frames taken off
	 * the socket but not applied, as if still on their way, oldest
	 * first: they land when a read waits for pushes (wait_reads), or
	 * the fault's ms after the oldest came at the latest */
	struct wire_msg held[PS_HELD_MAX];
	uint64_t held_us;        /* when the oldest came */
	uint32_t n_held;
	struct pshard sh[DIST_MAX_SHARDS];
	uint64_t nparams;        /* the vector's floats */
	uint32_t row;            /* --model mf: floats a row (rows are
				    pulled and pushed sparse); 0: dense */
	float *rbuf;             /* mf: rows gathered for a reply or a
				    FORWARD */
	uint32_t *rids;          /* mf: their ids (FORWARD) */
	size_t rcap;             /* rows rbuf and rids hold */
	uint64_t rows_served, rows_pushed; /* mf: rows read and added */
	float *init;             /* the seeded initial vector (epoch 1) */
	int64_t clock_min, fwd_clock, total;
	uint32_t slack;          /* SSP bound (ASSIGN, then CLOCK_MIN) */
	uint8_t stage;           /* of the current map */
	uint64_t forwards, snapshots;
	uint64_t fwd_rounds;     /* forward_all calls */
	uint64_t reads_waited;   /* PULLs that waited for others' pushes */
	uint64_t reads_late;     /* ... and were served without them */
	uint64_t rejoin_epoch;   /* membership epoch at the last rejoin */
	bool resume;             /* ASSIGN said: the job resumes from a
				    checkpoint (WIRE_F_RESUME) */
	bool leaving, shutdown;
	bool told;               /* the coordinator lists it as leaving */
	int64_t told_by_us;      /* ... to be gone by then (wall clock; 0:
				  * not said) */
	bool fwd_due;            /* a CLOCK_MIN advance wants a FORWARD */
	bool lost_handoff;       /* --fault-lose-handoff was carried out */
};

static void shard_free(struct pshard *s)
{
	free(s->w);
	free(s->base);
	free(s->dirty);
	free(s->dl);
	memset(s, 0, sizeof(*s));
}

static enum px_err shard_alloc(struct pshard *s, uint64_t off, uint64_t cnt,
			       struct px_error *err)
{
	shard_free(s);
	s->off = off;
	s->cnt = cnt;
	s->w = px_calloc(cnt ? cnt : 1, sizeof(float));
	s->base = px_calloc(cnt ? cnt : 1, sizeof(float));
	if (!s->w || !s->base) {
		shard_free(s);
		return px_errorf(err, PX_ENOMEM, "shard of %" PRIu64
				 " parameters", cnt);
	}
	return PX_OK;
}

static const char *addr_of(struct ps *p, struct wire_node n)
{
	const struct dist_member *m = dist_members_find(&p->mb, n);

	return m ? m->addr : NULL;
}

/* Whether the membership this PS took lists it: only then does it know
 * the sessions of the nodes that send to it because it joined (the
 * membership of its join).  Before, a frame from such a node would be
 * dropped unread (no session): a shard's snapshot from its old holder,
 * its only copy in stage 1, was lost so under the ec2 storms test.  The
 * frames wait in the sockets' queues meanwhile. */
static bool listed(const struct ps *p)
{
	return dist_members_find(&p->mb, p->o->node) != NULL;
}

static bool node_alive(struct ps *p, struct wire_node n)
{
	const struct dist_member *m = dist_members_find(&p->mb, n);

	return m && m->state != WIRE_MEMBER_LOST;
}

static void send_range(struct ps *p, enum wire_type t,
		       struct wire_node to, uint32_t s, const float *f)
{
	const char *addr = addr_of(p, to);
	struct px_error err;
	struct net_sock *q;

	if (!addr) {
		dist_logf(p->o, LOG_LVL_WARN, "no address for node %u", to.v);
		return;
	}
	q = dist_link_get(&p->links, to, addr, false, &err);
	if (!q || net_send_range(q, t, 0, to, p->clock_min, s, 0, f,
				 p->sh[s].cnt, 1000, &err) != PX_OK)
		dist_logf(p->o, LOG_LVL_WARN, "%s of shard %u to %u: %s",
			  wire_type_name(t), s, to.v, err.msg);
}

/* A shard's state to a new holder: its parameters. */
static void send_state(struct ps *p, struct wire_node to, uint32_t s)
{
	if (p->o->fault_lose_handoff && !p->lost_handoff) {
		p->lost_handoff = true;
		dist_logf(p->o, LOG_LVL_WARN, "test fault: shard %u's state "
			  "to %u not sent", s, to.v);
		return;
	}
	send_range(p, WIRE_PARAMS, to, s, p->sh[s].w);
}

static void fetch_missing(struct ps *p);
static bool on_range(struct ps *p, const struct wire_msg *m);
static void land_held(struct ps *p);

/* The state frames that came before this map, in the order they came:
 * applied where it gives their shard here and the shard awaited its
 * state; dropped where the shard here has one already (a copy from
 * elsewhere, newer) or after PS_EARLY_US; the others kept for the next
 * map. */
static void replay_early(struct ps *p)
{
	struct wire_msg v[PS_EARLY_MAX];
	uint64_t at[PS_EARLY_MAX], now = px_now_mono_us();
	uint32_t n = p->n_early;
	bool await[DIST_MAX_SHARDS];

	for (uint32_t s = 0; s < DIST_MAX_SHARDS; s++)
		await[s] = s < p->nshards && p->sh[s].w && !p->sh[s].have;
	memcpy(v, p->early, n * sizeof *v);
	memcpy(at, p->early_us, n * sizeof *at);
	p->n_early = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t s = v[i].u.range.shard;
		bool here = s < p->nshards && p->sh[s].w;

		/* every frame for it, in order: the last one wins */
		if (here && await[s]) {
			if (!on_range(p, &v[i]))
				wire_msg_release(&v[i]);
		} else if (here || now - at[i] > PS_EARLY_US) {
			wire_msg_release(&v[i]);
		} else {
			p->early[p->n_early] = v[i];
			p->early_us[p->n_early++] = at[i];
		}
	}
}

/* A new shard map: hand over what moves, take up new roles. */
static void on_stage(struct ps *p, const struct wire_msg *m)
{
	const struct wire_stage *st = &m->u.stage;
	struct wire_node me = p->o->node;
	bool had_map = p->stage_epoch != 0;
	struct px_error err;

	if (st->epoch <= p->stage_epoch || st->nshards > DIST_MAX_SHARDS)
		return;
	for (uint32_t s = 0; s < st->nshards; s++) {
		const struct wire_shard *nw = &st->shards[s];
		const struct wire_shard *old = had_map && s < p->nshards
						       ? &p->map[s] : NULL;
		struct pshard *sh = &p->sh[s];
		bool in_new = wire_node_eq(nw->active, me) ||
			      wire_node_eq(nw->backup, me);
		bool source = false;

		if (old && sh->have) {
			if (wire_node_eq(old->active, me))
				source = true;
			else if (wire_node_eq(old->backup, me) &&
				 !node_alive(p, old->active) &&
				 !wire_node_eq(nw->active, old->active))
				source = true;
		}
		if (source && old && (!wire_node_eq(old->active, nw->active) ||
				      !wire_node_eq(old->backup,
						    nw->backup))) {
			/* Flush: the new holders get the state as it is. */
			if (!wire_node_eq(nw->active, me) &&
			    !wire_node_eq(nw->active, WIRE_NODE_ALL))
				send_state(p, nw->active, s);
			if (!wire_node_eq(nw->backup, me) &&
			    !wire_node_eq(nw->backup, WIRE_NODE_ALL))
				send_state(p, nw->backup, s);
			memcpy(sh->base, sh->w, sh->cnt * sizeof(float));
			p->snapshots++;
		}
		if (!in_new) {
			if (sh->w)
				shard_free(sh);
			continue;
		}
		if (!sh->w || sh->off != nw->offset || sh->cnt != nw->count) {
			if (shard_alloc(sh, nw->offset, nw->count, &err) !=
			    PX_OK) {
				dist_logf(p->o, LOG_LVL_ERR, "%s", err.msg);
				continue;
			}
		}
		if (!sh->have && st->epoch == 1 && p->resume) {
			/* A resumed job's first map: fetch_missing asks the
			 * coordinator for the checkpoint's state. */
			sh->from_coord = true;
		} else if (!sh->have && st->epoch == 1) {
			/* The job's first map: every holder starts from the
			 * same seeded vector. */
			memcpy(sh->w, p->init + sh->off,
			       sh->cnt * sizeof(float));
			memcpy(sh->base, sh->w, sh->cnt * sizeof(float));
			sh->have = true;
		}
		if (wire_node_eq(nw->active, me) && !sh->active)
			dist_logf(p->o, had_map ? LOG_LVL_NOTICE : LOG_LVL_INFO,
				  "shard %u: now active"
				  "%s", s, sh->have ? "" : " (awaiting state)");
		sh->active = wire_node_eq(nw->active, me);
		sh->backup = !sh->active;
	}
	memcpy(p->map, st->shards, st->nshards * sizeof(*p->map));
	p->nshards = st->nshards;
	p->stage = st->stage;
	p->stage_epoch = st->epoch;
	replay_early(p);
	/* what the map leaves without state: now, not at the next
	 * heartbeat */
	fetch_missing(p);
}

/* rbuf and rids for n rows (mf). */
static bool rows_room(struct ps *p, size_t n)
{
	float *f;
	uint32_t *ids;

	if (n <= p->rcap)
		return true;
	f = realloc(p->rbuf, n * p->row * sizeof(float));
	if (f)
		p->rbuf = f;
	ids = realloc(p->rids, n * sizeof(uint32_t));
	if (ids)
		p->rids = ids;
	if (!f || !ids)
		return false;
	p->rcap = n;
	return true;
}

/* --model mf: a row pushed, to FORWARD at the next clock.  Without room
 * for the list the whole shard goes (forward_dense). */
static void mark_dirty(struct ps *p, struct pshard *sh, uint32_t k)
{
	size_t rows = sh->cnt / p->row;

	if (!sh->dirty) {
		sh->dirty = px_calloc(rows ? rows : 1, 1);
		sh->dl = px_calloc(rows ? rows : 1, sizeof(uint32_t));
		sh->nd = 0;
		if (!sh->dirty || !sh->dl) {
			free(sh->dirty);
			free(sh->dl);
			sh->dirty = NULL;
			sh->dl = NULL;
			return;
		}
	}
	if (!sh->dirty[k]) {
		sh->dirty[k] = 1;
		sh->dl[sh->nd++] = k;
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* --model mf: FORWARD to the backup what the rows pushed since the last
 * changed by (ROWS), not the whole shard: false when it could not (no
 * list or no room), and the caller sends the whole shard. */
static bool forward_rows(struct ps *p, uint32_t s)
{
	struct pshard *sh = &p->sh[s];
	const struct wire_node b = p->map[s].backup;
	const char *addr = addr_of(p, b);
	struct px_error err;
	struct net_sock *q;

	if (!sh->dirty || !rows_room(p, sh->nd))
		return false;
	qsort(sh->dl, sh->nd, sizeof(uint32_t), cmp_u32);
	for (uint32_t i = 0; i < sh->nd; i++) {
		size_t o = (size_t)sh->dl[i] * p->row;
		float *d = p->rbuf + (size_t)i * p->row;

		for (uint32_t j = 0; j < p->row; j++) {
			d[j] = sh->w[o + j] - sh->base[o + j];
			sh->base[o + j] = sh->w[o + j];
		}
		p->rids[i] = sh->dl[i];
		sh->dirty[sh->dl[i]] = 0;
	}
	q = addr ? dist_link_get(&p->links, b, addr, false, &err) : NULL;
	if (!addr)
		dist_logf(p->o, LOG_LVL_WARN, "no address for node %u", b.v);
	else if (!q || net_send_rows(q, WIRE_ROWS_FORWARD, b, p->clock_min, s,
				     p->row, p->rids, p->rbuf, sh->nd, 1000,
				     NULL, NULL, &err) != PX_OK)
		dist_logf(p->o, LOG_LVL_WARN, "FORWARD of shard %u's rows to "
			  "%u: %s", s, b.v, err.msg);
	sh->nd = 0;
	return true;
}

/* Each clock: send the backup what changed since the last FORWARD. */
static void forward_all(struct ps *p)
{
	for (uint32_t s = 0; s < p->nshards; s++) {
		struct pshard *sh = &p->sh[s];
		const struct wire_shard *ws = &p->map[s];

		if (!sh->active || !sh->have ||
		    wire_node_eq(ws->backup, WIRE_NODE_ALL))
			continue;
		if (p->row && forward_rows(p, s)) {
			p->forwards++;
			continue;
		}
		/* base becomes the delta, is sent, then becomes w again */
		kern_sub(sh->base, sh->w, sh->base, sh->cnt);
		send_range(p, WIRE_FORWARD, ws->backup, s, sh->base);
		memcpy(sh->base, sh->w, sh->cnt * sizeof(float));
		p->forwards++;
	}
	p->fwd_rounds++;
}

/* The coordinator's broadcasts; whether one was taken.  Frames the wire
 * refused (a restarted coordinator's, at the same address, in a session
 * this PS never registered with) are skipped and count for nothing. */
static bool on_sub(struct ps *p)
{
	struct px_error err;
	struct wire_msg m;
	bool took = false;

	while (net_recv(p->sub, &m, 0, &err) == PX_OK) {
		took = true;
		switch (m.hdr.type) {
		case WIRE_MEMBERSHIP:
			if (!dist_members_take(&p->mb, &m))
				break;
			(void)wire_membership_apply(p->ctx, &m,
						    px_now_mono_us());
			if (dist_told_to_leave(&m, p->o->node,
					       wire_ctx_session(p->ctx),
					       &p->told_by_us))
				p->told = true;
			break;
		case WIRE_STAGE:
			land_held(p);  /* pushes of the old map's */
			on_stage(p, &m);
			break;
		case WIRE_CLOCK_MIN:
			p->clock_min = m.u.clock_min.min_clock;
			p->slack = m.u.clock_min.staleness;
			/* the lr schedule ends where the coordinator now
			 * foresees the job's last clock */
			if (m.u.clock_min.total_clock > 0)
				p->total = m.u.clock_min.total_clock;
			/* forwarded once the PULLs waiting are answered */
			if (p->clock_min > p->fwd_clock) {
				p->fwd_due = true;
				p->fwd_clock = p->clock_min;
			}
			break;
		case WIRE_SHUTDOWN:
			p->shutdown = true;
			break;
		default:
			break;
		}
		wire_msg_release(&m);
	}
	return took;
}

static struct pusher *pusher(struct ps *p, struct wire_node n, bool add)
{
	struct pusher *free_p = NULL;

	for (size_t i = 0; i < DIST_MAX_NODES; i++) {
		if (p->pushers[i].used && wire_node_eq(p->pushers[i].node, n))
			return &p->pushers[i];
		if (!p->pushers[i].used && !free_p)
			free_p = &p->pushers[i];
	}
	if (!add)
		return NULL;
	if (!free_p)
		free_p = &p->pushers[n.v % DIST_MAX_NODES]; /* reuse one */
	free_p->used = true;
	free_p->node = n;
	for (size_t s = 0; s < DIST_MAX_SHARDS; s++)
		free_p->clock[s] = -1;
	return free_p;
}

static void note_push(struct ps *p, struct wire_node n, uint32_t s,
		      int64_t clock)
{
	struct pusher *u = pusher(p, n, true);

	if (clock > u->clock[s])
		u->clock[s] = clock;
}

/* Add a range's floats to dst[n], straight from the frame when they are
 * aligned (they start 96 bytes into it), else through a copy. */
static void add_range(float *dst, const struct wire_f32 *v)
{
	float tmp[1024];

	if (((uintptr_t)v->raw & 3) == 0 &&
	    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) {
		kern_add(dst, (const float *)(const void *)v->raw, v->n);
		return;
	}
	for (uint32_t i = 0; i < v->n; i += 1024) {
		struct wire_f32 part = { NULL, v->raw + (size_t)i * 4,
					 v->n - i < 1024 ? v->n - i : 1024 };

		wire_f32_copy(&part, tmp);
		kern_add(dst + i, tmp, part.n);
	}
}

/* Apply a range (PUSH: a worker's update, FORWARD: what the active's
 * copy changed by, PARAMS: a snapshot). */
/* A PARAMS frame for a shard this PS has no room for yet (no map, or
 * one that does not give it here): kept, whole, for the next map (true:
 * the caller must not release it). */
static bool keep_early(struct ps *p, const struct wire_msg *m)
{
	if (m->hdr.type != WIRE_PARAMS || p->n_early == PS_EARLY_MAX)
		return false;
	p->early_us[p->n_early] = px_now_mono_us();
	p->early[p->n_early++] = *m;
	return true;
}

/* Apply a range frame; true when it was kept for later (keep_early). */
static bool on_range(struct ps *p, const struct wire_msg *m)
{
	const struct wire_range *r = &m->u.range;
	struct pshard *sh;

	if (r->shard >= DIST_MAX_SHARDS)
		return false;
	if (r->shard >= p->nshards || !p->sh[r->shard].w)
		return keep_early(p, m);
	sh = &p->sh[r->shard];
	if (r->offset > sh->cnt || r->data.n > sh->cnt - r->offset)
		return false;
	switch (m->hdr.type) {
	case WIRE_PUSH:
		if (!sh->active || !sh->have)
			return false;
		add_range(sh->w + r->offset, &r->data);
		sh->pushes++;
		if (!(m->hdr.flags & WIRE_F_MORE))
			note_push(p, m->hdr.sender, r->shard, r->clock);
		break;
	case WIRE_FORWARD:
		/* A resumed job's backup whose checkpoint state is still to
		 * come: fetch it before this delta, which applies to it
		 * (dropping the delta would leave the copy behind for good) */
		if (!sh->have && sh->from_coord && !sh->active)
			fetch_missing(p);
		if (!sh->have || sh->active)
			return false;
		add_range(sh->w + r->offset, &r->data);
		break;
	case WIRE_PARAMS:
		wire_f32_copy(&r->data, sh->w + r->offset);
		memcpy(sh->base + r->offset, sh->w + r->offset,
		       r->data.n * sizeof(float));
		if (!(m->hdr.flags & WIRE_F_MORE)) {
			if (!sh->have)
				dist_logf(p->o, LOG_LVL_INFO,
					  "shard %u: state received "
					  "from %u", r->shard,
					  m->hdr.sender.v);
			sh->have = true;
		}
		break;
	default:
		break;
	}
	return false;
}

/* The shard a ROWS or PULL_ROWS frame names, when this PS holds it and
 * every row named is inside it (ids strictly increase: the last is the
 * largest); NULL otherwise. */
static struct pshard *rows_shard(struct ps *p, uint32_t s, uint32_t width,
				 const struct wire_u32v *ids)
{
	struct pshard *sh;

	if (!p->row || width != p->row || s >= p->nshards || !p->sh[s].w)
		return NULL;
	sh = &p->sh[s];
	if (ids->n &&
	    ((uint64_t)wire_u32_at(ids, ids->n - 1) + 1) * width > sh->cnt)
		return NULL;
	return sh;
}

/* --model mf: a worker's ROWS PUSH (added to its rows, FORWARDed at the
 * next clock), or an active's ROWS FORWARD (added, on the backup). */
static void on_rows(struct ps *p, const struct wire_msg *m)
{
	const struct wire_rows *r = &m->u.rows;
	struct pshard *sh = rows_shard(p, r->shard, r->width, &r->ids);
	float tmp[WIRE_ROW_WIDTH_MAX];

	if (!sh || !sh->have)
		return;
	if (r->op == WIRE_ROWS_PUSH ? !sh->active
				    : r->op != WIRE_ROWS_FORWARD || sh->active)
		return;
	for (uint32_t i = 0; i < r->ids.n; i++) {
		uint32_t k = wire_u32_at(&r->ids, i);
		struct wire_f32 v = { NULL, r->data.raw +
				      (size_t)i * r->width * 4, r->width };
		float *w = sh->w + (size_t)k * r->width;

		wire_f32_copy(&v, tmp);
		for (uint32_t j = 0; j < r->width; j++)
			w[j] += tmp[j];
		if (r->op == WIRE_ROWS_PUSH)
			mark_dirty(p, sh, k);
	}
	if (r->op != WIRE_ROWS_PUSH)
		return;
	p->rows_pushed += r->ids.n;
	sh->pushes++;
	if (!(m->hdr.flags & WIRE_F_MORE))
		note_push(p, m->hdr.sender, r->shard, r->clock);
}

/* The pushes held (hold_push) applied, in the order they came. */
static void land_held(struct ps *p)
{
	for (uint32_t i = 0; i < p->n_held; i++)
		if (!on_range(p, &p->held[i]))
			wire_msg_release(&p->held[i]);
	p->n_held = 0;
}

/* The held pushes dropped unapplied (the shards they were for are gone,
 * or the PS is). */
static void drop_held(struct ps *p)
{
	for (uint32_t i = 0; i < p->n_held; i++)
		wire_msg_release(&p->held[i]);
	p->n_held = 0;
}

/* --fault-late-push: a worker's PUSH kept as if still in flight (true:
 * the caller must not release it), so that a read comes while it is:
 * it lands once a read waits (wait_reads), and no push waits for ever
 * (the fault's ms at most).  A full queue lands first. */
static bool hold_push(struct ps *p, const struct wire_msg *m)
{
	if (!p->o->fault_late_push_ms || m->hdr.type != WIRE_PUSH)
		return false;
	if (p->n_held == PS_HELD_MAX)
		land_held(p);
	if (!p->n_held)
		p->held_us = px_now_mono_us();
	p->held[p->n_held++] = *m;
	return true;
}

/* The held pushes whose time is up landed. */
static void land_held_due(struct ps *p, uint64_t now)
{
	if (p->n_held && now - p->held_us >=
			 (uint64_t)p->o->fault_late_push_ms * 1000)
		land_held(p);
}

static void on_pull(struct ps *p)
{
	struct px_error err;
	struct wire_msg m;

	if (!listed(p))
		return;
	while (net_recv(p->pull, &m, 0, &err) == PX_OK) {
		if (m.hdr.type == WIRE_ROWS)
			on_rows(p, &m);
		else if (hold_push(p, &m) || on_range(p, &m))
			continue;  /* kept */
		wire_msg_release(&m);
	}
}

/* Whether shard s holds what a PULL from n at clock c must see: n's own
 * pushes up to `own` (read-my-writes), and under SSP every update up to
 * clock c - slack - 1 from every worker that holds a partition.  The
 * coordinator's CLOCK_MIN says those workers finished that clock, but
 * their pushes travel on other sockets and may still be in flight.  A
 * worker that has not pushed to this shard yet (it joined, or the shard
 * moved here) is not waited for.  A reader that is no worker (the
 * coordinator evaluating) sees every update up to c - 1. */
static bool reads_ready(struct ps *p, struct wire_node n, uint32_t s,
			int64_t own, int64_t c)
{
	const struct dist_member *r = dist_members_find(&p->mb, n);
	bool worker = r && (r->roles & WIRE_ROLE_WORKER);
	int64_t need = c - (worker ? (int64_t)p->slack : 0) - 1;
	struct pusher *u = pusher(p, n, false);

	if (own >= 0 && (!u || u->clock[s] < own))
		return false;
	if (need < 0)
		return true;
	for (uint32_t i = 0; i < p->mb.n; i++) {
		const struct dist_member *d = &p->mb.m[i];

		if (!dist_member_holds_partition(d, p->stage))
			continue;
		u = pusher(p, d->node, false);
		if (u && u->clock[s] >= 0 && u->clock[s] < need)
			return false;
	}
	return true;
}

/* What a reply to a PULL of shard s from n at clock c holds: every
 * update of the other partition holders up to this clock (PARAMS's
 * range.clock), at most c - 1.  A holder counts with the last clock it
 * pushed here; one that has not pushed here yet (it just joined, or the
 * shard just moved) with the clocks the coordinator says every worker
 * has finished, as reads_ready does not wait for it. */
static int64_t fresh_clock(struct ps *p, struct wire_node n, uint32_t s,
			   int64_t c)
{
	int64_t g = c - 1;

	for (uint32_t i = 0; i < p->mb.n; i++) {
		const struct dist_member *d = &p->mb.m[i];
		struct pusher *u;
		int64_t v;

		if (!dist_member_holds_partition(d, p->stage) ||
		    wire_node_eq(d->node, n))
			continue;
		u = pusher(p, d->node, false);
		v = u && u->clock[s] >= 0 ? u->clock[s] : p->clock_min - 1;
		if (v < g)
			g = v;
	}
	return g;
}

/* Before answering a PULL, apply the pushes reads_ready asks for, for at
 * most 100 ms (the worker retries its pull after 250 ms); then serve
 * what there is and count the read as late. */
static void wait_reads(struct ps *p, struct wire_node n, uint32_t s,
		       int64_t own, int64_t c)
{
	uint64_t until = px_now_mono_us() + 100000;
	bool waited = false;

	on_pull(p);
	while (!reads_ready(p, n, s, own, c)) {
		struct nn_pollfd pf = { .fd = net_nn_socket(p->pull),
					.events = NN_POLLIN };

		waited = true;
		/* the test fault's pushes in flight arrive while it waits */
		if (p->n_held) {
			land_held(p);
			continue;
		}
		if (px_now_mono_us() >= until) {
			on_pull(p);  /* what arrived while descheduled */
			if (!reads_ready(p, n, s, own, c))
				p->reads_late++;
			break;
		}
		if (nn_poll(&pf, 1, dist_ms_until(until, 100)) > 0)
			on_pull(p);
	}
	p->reads_waited += waited;
}

/* --model mf: a worker's PULL_ROWS, answered with the rows (ROWS
 * PARAMS, one frame: the worker asks for no more than one holds) as
 * of the same reads a PULL waits for; an ACK when this PS does not
 * serve them. */
static void serve_rows(struct ps *p, const struct wire_msg *m)
{
	const struct wire_pull_rows *q = &m->u.pull_rows;
	struct pshard *sh = rows_shard(p, q->shard, q->width, &q->ids);
	struct px_error err;
	struct wire_msg r;

	if (sh && sh->active && sh->have)
		wait_reads(p, m->hdr.sender, q->shard, q->min_clock,
			   m->hdr.clock);
	if (!sh || !sh->active || !sh->have ||
	    q->ids.n > wire_rows_chunk(net_max_payload(p->rep), q->width) ||
	    !rows_room(p, q->ids.n)) {
		(void)dist_ack(p->rep, m, p->clock_min, PX_ENOENT, &err,
			       "rows not served here");
		return;
	}
	for (uint32_t i = 0; i < q->ids.n; i++)
		memcpy(p->rbuf + (size_t)i * q->width,
		       sh->w + (size_t)wire_u32_at(&q->ids, i) * q->width,
		       q->width * sizeof(float));
	wire_msg_init(&r, WIRE_ROWS, m->hdr.sender,
		      fresh_clock(p, m->hdr.sender, q->shard, m->hdr.clock));
	r.u.rows = (struct wire_rows){
		.op = WIRE_ROWS_PARAMS, .shard = q->shard, .width = q->width,
		.clock = r.hdr.clock, .ids = q->ids,
		.data = { p->rbuf, NULL, q->ids.n * q->width } };
	if (net_send(p->rep, &r, 1000, &err) != PX_OK)
		dist_logf(p->o, LOG_LVL_WARN, "rows to %u: %s",
			  m->hdr.sender.v, err.msg);
	p->rows_served += q->ids.n;
}

static void on_rep(struct ps *p)
{
	/* at most 200 ms of requests a call (each may wait up to 100 ms
	 * for pushes): the loop's heartbeats and broadcasts come between,
	 * or a burst of reads makes this PS look silent */
	uint64_t until = px_now_mono_us() + 200000;
	struct px_error err;
	struct wire_msg m;

	if (!listed(p))
		return;
	while (px_now_mono_us() < until &&
	       net_recv(p->rep, &m, 0, &err) == PX_OK) {
		const struct wire_pull *q = &m.u.pull;

		if (m.hdr.type == WIRE_PULL_ROWS) {
			serve_rows(p, &m);
			wire_msg_release(&m);
			continue;
		}
		struct pshard *sh = q->shard < p->nshards ? &p->sh[q->shard]
							  : NULL;

		/* a shard still without its state is refused at once: no
		 * push is applied to it, so waiting for the reader's own
		 * would hold this loop 100 ms a PULL */
		if (m.hdr.type == WIRE_PULL && sh && sh->active && sh->have)
			wait_reads(p, m.hdr.sender, q->shard, q->min_clock,
				   m.hdr.clock);
		/* Workers and the coordinator read active shards; the new
		 * active of a shard may read its backup's copy. */
		bool serve = sh && sh->have &&
			     (sh->active || wire_node_eq(m.hdr.sender,
						p->map[q->shard].active));

		if (m.hdr.type == WIRE_PULL && serve &&
		    q->offset <= sh->cnt && q->count <= sh->cnt - q->offset) {
			if (net_send_range(p->rep, WIRE_PARAMS, 0,
					   m.hdr.sender,
					   fresh_clock(p, m.hdr.sender,
						       q->shard,
						       m.hdr.clock),
					   q->shard, q->offset,
					   sh->w + q->offset, q->count, 1000,
					   &err) != PX_OK)
				dist_logf(p->o, LOG_LVL_WARN,
					  "params to %u: %s",
					  m.hdr.sender.v, err.msg);
		} else {
			(void)dist_ack(p->rep, &m, p->clock_min, PX_ENOENT,
				       &err, "shard not served here");
		}
		wire_msg_release(&m);
	}
}

/* Pull shard s's parameters from node `from` over the request socket q
 * and apply the reply (see dist_pull for what else it returns). */
static enum px_err fetch_state(struct ps *p, struct net_sock *q,
			       struct wire_node from, uint32_t s)
{
	struct px_error err;
	struct wire_msg r;
	enum px_err e;

	/* no pushes of its own to wait for */
	e = dist_pull(q, from, p->clock_min, s, p->sh[s].cnt, -1, 100,
		      dist_range_ms(200, p->sh[s].cnt), &r, &err);
	if (e == PX_OK && !on_range(p, &r))
		wire_msg_release(&r);
	return e;
}

static bool fetch_from_backup(struct ps *p, uint32_t s)
{
	const struct wire_node b = p->map[s].backup;
	const char *addr = addr_of(p, b);
	struct px_error err;
	struct net_sock *q;
	enum px_err e;

	q = addr ? dist_link_get(&p->links, b, addr, true, &err) : NULL;
	if (!q)
		return false;
	e = fetch_state(p, q, b, s);
	if (e != PX_OK && e != PX_EPROTO)
		dist_link_reset_req(&p->links, b);
	return e == PX_OK;
}

/* A shard without state: in a resumed job's first map, fetch the
 * checkpoint's from the coordinator (every holder); an active shard whose
 * old active died before handing it over fetches the backup's copy, at
 * most one clock behind. */
static void fetch_missing(struct ps *p)
{
	const struct wire_node coord = { DIST_COORD_NODE };

	for (uint32_t s = 0; s < p->nshards; s++) {
		const struct wire_shard *ws = &p->map[s];
		struct pshard *sh = &p->sh[s];

		if (sh->have || !sh->w)
			continue;
		if (sh->from_coord) {
			if (fetch_state(p, p->creq, coord, s) != PX_OK)
				continue;
			sh->from_coord = false;
			dist_logf(p->o, LOG_LVL_NOTICE,
				  "shard %u: state from the "
				  "checkpoint", s);
			continue;
		}
		if (!sh->active)
			continue;
		if (!wire_node_eq(ws->backup, WIRE_NODE_ALL) &&
		    !wire_node_eq(ws->backup, p->o->node) &&
		    fetch_from_backup(p, s)) {
			dist_logf(p->o, LOG_LVL_NOTICE,
				  "shard %u: state fetched from "
				  "backup %u", s, ws->backup.v);
			continue;
		}
		/* no copy of it left anywhere: the coordinator has the
		 * last state it pulled (partial recovery); it refuses
		 * when it reloaded no such shard */
		if (fetch_state(p, p->creq, coord, s) == PX_OK)
			dist_logf(p->o, LOG_LVL_NOTICE,
				  "shard %u: state reloaded from the "
				  "coordinator (every copy was lost)", s);
	}
}

static void heartbeat(struct ps *p)
{
	struct px_error err;
	struct wire_msg m;

	wire_msg_init(&m, WIRE_HEARTBEAT, (struct wire_node){ DIST_COORD_NODE },
		      p->clock_min);
	m.u.heartbeat.wall_us = px_now_wall_us();
	(void)net_send(p->cpush, &m, 0, &err);
}

/* Answer what comes on the sockets for ms, applying pushes and serving
 * reads (a leaving PS drains its sockets this way). */
static void serve_for(struct ps *p, int ms)
{
	uint64_t until = px_now_mono_us() + (uint64_t)ms * 1000;
	int left;

	while ((left = dist_ms_until(until, ms)) > 0) {
		struct nn_pollfd pf[3] = {
			{ .fd = net_nn_socket(p->rep), .events = NN_POLLIN },
			{ .fd = net_nn_socket(p->pull), .events = NN_POLLIN },
			{ .fd = net_nn_socket(p->sub), .events = NN_POLLIN },
		};

		if (nn_poll(pf, 3, left) <= 0)
			continue;
		if (pf[2].revents & NN_POLLIN)
			(void)on_sub(p);
		if (pf[1].revents & NN_POLLIN)
			on_pull(p);
		if (pf[0].revents & NN_POLLIN)
			on_rep(p);
		land_held_due(p, px_now_mono_us());
	}
}

/* What a PS offers when it registers: a reliable one can hold backups. */
static uint8_t ps_roles(const struct dist_opts *o)
{
	return WIRE_ROLE_PS_ACTIVE | (o->reliable ? WIRE_ROLE_PS_BACKUP : 0);
}

/* Whether a membership newer than the last registration lists this PS
 * as lost. */
static bool self_lost(const struct ps *p)
{
	const struct dist_member *me = dist_members_find(&p->mb, p->o->node);

	return me && me->state == WIRE_MEMBER_LOST &&
	       p->mb.epoch > p->rejoin_epoch;
}

/* Declared lost while alive (stalled past the heartbeat timeout): the
 * coordinator has promoted this node's shards to their backups, so what
 * it holds is stale.  Drop it all, register again, and take whatever the
 * next placement gives, from the shards' current holders. */
static enum px_err rejoin(struct ps *p, struct px_error *err)
{
	struct wire_msg a;
	enum px_err e;

	dist_logf(p->o, LOG_LVL_NOTICE, "ps %u: declared lost at clock %" PRId64
		  ", dropping its shards and registering again", p->o->node.v,
		  p->clock_min);
	drop_held(p);
	for (uint32_t s = 0; s < DIST_MAX_SHARDS; s++)
		shard_free(&p->sh[s]);
	memset(p->pushers, 0, sizeof(p->pushers));
	e = dist_register(p->o, p->creq, ps_roles(p->o), 5000,
			  &a, err);
	if (e != PX_OK)
		return e;
	p->resume = a.hdr.flags & WIRE_F_RESUME;
	wire_msg_release(&a);
	p->rejoin_epoch = p->mb.epoch;
	return PX_OK;
}

static bool holds_any(const struct ps *p)
{
	for (uint32_t s = 0; s < p->nshards; s++)
		if (p->sh[s].w)
			return true;
	return false;
}

static enum px_err setup(struct ps *p, struct px_error *err)
{
	const struct dist_opts *o = p->o;
	struct wire_config wc = {
		.self = o->node, .job = o->job,
		.job_key = o->key, .job_key_len = o->key_len,
	};
	struct data_prep prep;
	struct model_desc d;
	struct mf_desc md;
	struct mf_set ratings;
	uint32_t n_train;
	struct wire_msg a;
	enum px_err e;

	e = wire_ctx_new(&wc, &p->ctx, err);
	if (e != PX_OK)
		return e;
	p->links.ctx = p->ctx;
	/* the model's widths and the clocks: the training set's */
	if (o->train.model == MODEL_MF) {
		e = dist_mf_load(o, &ratings, &md, err);
		if (e != PX_OK)
			return e;
		n_train = ratings.n;
		mf_set_release(&ratings);
		p->nparams = md.n_params;
		p->row = md.row;
	} else {
		e = dist_data_shape(o, &n_train, &prep, err);
		if (e == PX_OK)
			e = dist_model_desc(o, &prep, &d, err);
		data_prep_release(&prep);
		if (e != PX_OK)
			return e;
		p->nparams = d.n_params;
	}
	p->total = dist_total_clocks(n_train, o->workers, o->train.epochs,
				     o->train.batch);
	p->init = px_calloc(p->nparams, sizeof(float));
	if (!p->init)
		return px_errorf(err, PX_ENOMEM, "parameters");
	if (p->row)
		mf_init_params(&md, p->init, o->train.seed);
	else
		model_init_params(&d, p->init, o->train.seed);
	e = dist_sock(p->ctx, NET_REP, o->listen, DIST_EP_REP, true, &p->rep,
		      err);
	if (e == PX_OK)
		e = dist_sock(p->ctx, NET_PULL, o->listen, DIST_EP_PULL, true,
			      &p->pull, err);
	if (e == PX_OK)
		e = dist_sock(p->ctx, NET_SUB, o->coord, DIST_EP_PUB, false,
			      &p->sub, err);
	if (e == PX_OK)
		e = dist_sock(p->ctx, NET_PUSH, o->coord, DIST_EP_PULL, false,
			      &p->cpush, err);
	if (e == PX_OK)
		e = dist_sock(p->ctx, NET_REQ, o->coord, DIST_EP_REP, false,
			      &p->creq, err);
	if (e == PX_OK) {
		/* Register once the subscription carries the coordinator's
		 * broadcasts (every heartbeat, before the start too): the
		 * job's first map is broadcast when the last node registers,
		 * and a PS still connecting would miss it and drop the
		 * FORWARDs that come before the rebroadcast.  At most 2 s;
		 * the message stays queued for the loop. */
		struct nn_pollfd pf = { .fd = net_nn_socket(p->sub),
					.events = NN_POLLIN };
		uint64_t until = px_now_mono_us() + 2000000;
		int left;

		while ((left = dist_ms_until(until, 2000)) > 0 &&
		       nn_poll(&pf, 1, left) <= 0)
			;
		e = dist_register(o, p->creq, ps_roles(o), 10000, &a,
				  err);
	}
	if (e != PX_OK)
		return e;
	p->slack = a.u.assign.staleness;
	p->resume = a.hdr.flags & WIRE_F_RESUME;
	wire_msg_release(&a);
	return PX_OK;
}

/* When a PS leaving by deadline_us (wall clock) must be done handing off
 * (monotonic, from now): 0.3 s before the deadline (the sockets drain
 * 0.2 s), and 0.1 s from now at least. */
static uint64_t hand_off_by(int64_t deadline_us, uint64_t now)
{
	int64_t left = deadline_us - px_now_wall_us();

	return left > 400000 ? now + (uint64_t)left - 300000 : now + 100000;
}

enum px_err dist_ps_run(const struct dist_opts *o, struct px_error *err)
{
	struct ps *p = px_calloc(1, sizeof(*p));
	uint64_t next_hb, last_coord, leave_at = 0, leave_by = 0, sub_late;
	bool told_only = false;  /* leaving on the coordinator's word */
	enum px_err e;

	if (!p)
		return px_errorf(err, PX_ENOMEM, "parameter server");
	p->o = o;
	p->fwd_clock = -1;
	e = setup(p, err);
	if (e != PX_OK)
		goto out_free;
	dist_logf(o, LOG_LVL_INFO, "ps %u on %s (%s)", o->node.v, o->listen,
		  o->reliable ? "reliable" : "transient");
	next_hb = last_coord = px_now_mono_us();
	sub_late = o->fault_ps_sub_late_ms ? next_hb +
		   (uint64_t)o->fault_ps_sub_late_ms * 1000 : 0;
	while (!p->shutdown) {
		struct nn_pollfd pf[3] = {
			{ .fd = net_nn_socket(p->rep), .events = NN_POLLIN },
			{ .fd = net_nn_socket(p->pull), .events = NN_POLLIN },
			{ .fd = net_nn_socket(p->sub), .events = NN_POLLIN },
		};
		uint64_t now = px_now_mono_us();
		/* unlisted yet: the subscription alone (what waits on the
		 * others is read once listed); the test fault holds the
		 * subscription for a while after the start */
		bool all = listed(p);
		bool hold = now < sub_late;
		int n = (all ? 2 : 0) + !hold;

		if (!n)
			(void)poll(NULL, 0, dist_ms_until(sub_late, 50));
		else if (nn_poll(all ? pf : pf + 2, n,
				 dist_ms_until(next_hb, 50)) > 0) {
			/* the coordinator heard from, not the socket
			 * readable: a restarted coordinator's broadcasts
			 * (refused) kept an unregistered PS up for good,
			 * its node never registering again */
			if ((pf[2].revents & NN_POLLIN) && on_sub(p))
				last_coord = px_now_mono_us();
			/* Before serving anything from a stale copy. */
			if (!p->leaving && self_lost(p)) {
				e = rejoin(p, err);
				if (e != PX_OK)
					break;
				last_coord = px_now_mono_us();
				continue;
			}
			if (pf[1].revents & NN_POLLIN)
				on_pull(p);
			if (pf[0].revents & NN_POLLIN)
				on_rep(p);
		}
		land_held_due(p, px_now_mono_us());
		/* The backup's copy after the workers' reads: a FORWARD
		 * seals a shard, which a PULL waiting should not wait for. */
		if (p->fwd_due) {
			p->fwd_due = false;
			on_rep(p);
			forward_all(p);
		}
		now = px_now_mono_us();
		if (now >= next_hb) {
			heartbeat(p);
			fetch_missing(p);
			next_hb = now + (uint64_t)o->hb_ms * 1000;
		}
		if (((o->stop && *o->stop) || p->told) && !p->leaving) {
			struct wire_msg m;

			/* told by the coordinator: the member list says by
			 * when (the agent's release, its deadline); a list
			 * that does not, DIST_LEAVE_DEFAULT_MS */
			p->leaving = true;
			told_only = !(o->stop && *o->stop);
			leave_at = now;
			wire_msg_init(&m, WIRE_LEAVE,
				      (struct wire_node){ DIST_COORD_NODE },
				      p->clock_min);
			m.u.leave.deadline_us = told_only && p->told_by_us > 0
						? p->told_by_us
						: dist_leave_deadline_us(o);
			m.u.leave.reason = dist_leave_reason(o);
			leave_by = hand_off_by(m.u.leave.deadline_us, now);
			/* the coordinator moved the shards when it listed
			 * this node as leaving: nothing to tell it */
			if (!told_only)
				(void)net_send(p->cpush, &m, 100, err);
			dist_logf(o, told_only ? LOG_LVL_NOTICE : LOG_LVL_INFO,
				  "ps %u leaving%s, gone in %.1f s",
				  o->node.v, told_only ? " (the coordinator "
				  "says so)" : "", (double)(leave_by - now) / 1e6);
		} else if (told_only && o->stop && *o->stop) {
			/* and then the signal (the local world sends both):
			 * its deadline, when later */
			uint64_t by = hand_off_by(dist_leave_deadline_us(o),
						  now);

			told_only = false;
			if (by > leave_by)
				leave_by = by;
		}
		if (p->leaving && ((!holds_any(p) && now - leave_at > 100000)
				   || now >= leave_by))
			break;
		if (now - last_coord > 5000000) {
			e = px_errorf(err, PX_ETIMEDOUT, "coordinator silent "
				      "for 5 s");
			break;
		}
	}
	/* Let queued hand-offs drain before the sockets close, answering
	 * meanwhile. */
	serve_for(p, 200);
	dist_logf(o, LOG_LVL_NOTICE,
		  "ps %u done: %" PRIu64 " snapshots sent, %" PRIu64
		  " reads waited for pushes in flight, %" PRIu64 " served "
		  "past the SSP bound; %" PRIu64 " rows served, %" PRIu64
		  " rows pushed", o->node.v, p->snapshots,
		  p->reads_waited, p->reads_late, p->rows_served,
		  p->rows_pushed);
	dist_log_wire(o, LOG_LVL_NOTICE, "ps", p->ctx);
out_free:
	for (uint32_t s = 0; s < DIST_MAX_SHARDS; s++)
		shard_free(&p->sh[s]);
	dist_links_close(&p->links);
	net_close(p->rep);
	net_close(p->pull);
	net_close(p->sub);
	net_close(p->creq);
	net_close(p->cpush);
	for (uint32_t i = 0; i < p->n_early; i++)
		wire_msg_release(&p->early[i]);
	drop_held(p);
	free(p->init);
	free(p->rbuf);
	free(p->rids);
	wire_ctx_free(p->ctx);
	free(p);
	return e;
}
