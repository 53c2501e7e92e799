/* dist_worker.c -- a worker: registers, derives its data partition from
 * the membership, and per clock waits for the SSP bound, brings its copy
 * of the parameters up to date if the bound needs it (an SSP client
 * cache: a pull of every shard from its ActivePS, or the one it sent
 * during the clock before), trains --clock-batches minibatches on its
 * copy with its own optimizer (SGD with momentum, the lr schedule of the
 * job's steps), pushes what its copy changed by per shard and reports
 * the clock.  One thread; waits go through nn_poll.
 */
#include "dist_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <nanomsg/nn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../io/data.h"
#include "../compute/kern_cuda.h"
#include "../compute/mf.h"
#include "../compute/model.h"

struct worker {
	const struct dist_opts *o;
	struct wire_ctx *ctx;
	struct net_sock *sub, *creq, *cpush;
	struct dist_links links;
	struct dist_members mb;
	struct wire_shard map[DIST_MAX_SHARDS];
	uint32_t nshards;
	uint32_t stage_epoch;
	uint8_t stage;
	int64_t clock, clock_min, total;
	bool have_min, shutdown, leaving;
	bool told;                 /* the coordinator lists it as leaving */
	/* data and partition */
	struct data_set train;
	struct data_prep prep;     /* what the training set fixes */
	uint64_t part_epoch;       /* membership epoch it was derived from */
	uint32_t lo, hi, pos, pass;
	uint32_t *idx;
	/* compute */
	const struct kern_ops *ops;
	void *kctx;
	struct kern_cuda *cuda;
	struct model_desc d;
	struct model_ctx *mc;
	float *params, *grad;      /* host */
	float *base;               /* host: params as of the last pull or
				      push (the update is params - base) */
	float *upd;                /* host: the update being pushed */
	float *d_params, *d_grad;  /* ops memory (alias host on CPU) */
	float *d_mom;              /* the optimizer's momentum, ops memory */
	uint32_t kb;               /* minibatches in a clock (ASSIGN) */
	/* co-adaptation (CLOCK_MIN): the minibatch and lr factor of this
	 * clock, and those for the next */
	uint32_t batch, want_batch;
	float lr_scale, want_lr;
	uint32_t want_kb;          /* co-adaptation's clock (0: none) */
	/* the goodput estimate's measurement of a clock (goodput.h; the
	 * ops table's sqnorm, on the host or the GPU): the squared norms
	 * of the gradients of a minibatch's first half and of the whole,
	 * at the same parameters; gb: the half's examples (0: none
	 * measured) */
	double gsq_half, gsq_full;
	uint32_t gb;
	/* the copy as an SSP client cache (docs/trainer.md, "Consistency") */
	bool cache_ok;             /* params hold a pull of every shard of
				      the current map and membership, and
				      this worker's updates since */
	uint64_t cache_mb;         /* membership epoch of that pull */
	int64_t fresh;             /* every other worker's updates up to
				      this clock are in params (INT64_MAX:
				      no other worker holds a partition) */
	/* one REQ socket per shard, so that the PULLs of all shards are out
	 * at once; a prefetch's replies wait in pq_reply until the next
	 * clock, which adds this worker's update (upd) to them */
	struct net_sock *pq[DIST_MAX_SHARDS];
	struct wire_node pq_to[DIST_MAX_SHARDS];
	struct wire_msg pq_reply[DIST_MAX_SHARDS];
	bool prefetch_out;         /* a PULL of every shard is out */
	bool prefetched;           /* ... and its replies are in pq_reply */
	uint64_t pulls, prefetches, cached; /* clocks that pulled, that took
				      a prefetch, that pulled nothing */
	float *h_x, *x;
	uint8_t *h_y, *y;
	bool sparse;               /* batches as sparse rows (xs) */
	struct data_csr xs;
	uint64_t t0_us;
	uint32_t hotadd_ms;        /* process start to first push */
	bool pushed;               /* pushed to the current map's shards */
	int64_t last_push;         /* clock of the last push */
	uint64_t next_hb, last_coord;
	uint64_t last_progress;    /* last clock done or watchdog, mono us */
	uint32_t rejoins, reclocks; /* watchdog actions */
	uint32_t last_n;           /* samples of the last clock */
	uint64_t rejoin_epoch;     /* membership epoch seen at the rejoin */
	/* stragglers (docs/trainer.md, "Stragglers") */
	uint32_t rank;             /* the rank the pass was shuffled with */
	bool in_clock;             /* training the minibatches of a clock */
	uint32_t cb_done, cb_end;  /* ... done, and where the clock ends now
				      (less what was handed over) */
	double speed;              /* minibatches per second training: a
				      moving mean over windows of 50 ms
				      (before the first is whole: its
				      minibatches so far) */
	bool speed_windowed;       /* a window was whole */
	uint64_t win_us;           /* the window: training time, us ... */
	uint32_t win_n;            /* ... and minibatches */
	uint64_t first_us;         /* the first clock's start (the slow
				      fault's origin) */
	double slow_debt_us;       /* the slow fault's wait still due */
	uint64_t last_prog_us;     /* last progress heartbeat */
	struct relief {
		struct wire_reassign r;
		int64_t clock;
	} offers[DIST_RELIEF_MAX], helps[DIST_RELIEF_MAX];
	uint32_t n_offers, n_helps;
	uint32_t *hidx;            /* a helped straggler's pass */
	float *hupd;               /* the update of a help */
	uint64_t handed, helped;   /* minibatches handed over, and trained
				      for stragglers */
	uint32_t *visits;          /* --test-visits: trainings per example */
	/* --model mf (docs/trainer.md, "Matrix factorization"): params and
	 * base are the whole vector, but a clock pulls and pushes only the
	 * rows its ratings touch */
	bool mf;
	struct mf_set ratings;     /* the training set (train.n: its size) */
	struct mf_desc md;
	struct mf_grad *mg;
	uint32_t *cidx;            /* the clock's ratings, minibatch by
				      minibatch ... */
	uint32_t *cb;              /* ... the j-th from cidx[cb[j]] */
	uint32_t *rows;            /* the rows they touch, increasing */
	uint32_t *lids;            /* ... within their shards */
	float *rbuf;               /* ... their update */
	uint8_t *mark;             /* [rows of the model] */
	uint32_t ccap;             /* ratings cidx holds */
	uint32_t rcap;             /* rows rows, lids and rbuf hold */
	uint32_t nrows;            /* this clock's rows */
	uint64_t row_bytes;        /* this clock's sparse traffic */
	uint32_t row_frames;
};

static void heartbeat(struct worker *w)
{
	struct px_error err;
	struct wire_msg m;

	wire_msg_init(&m, WIRE_HEARTBEAT, (struct wire_node){ DIST_COORD_NODE },
		      w->clock);
	m.u.heartbeat.wall_us = px_now_wall_us();
	m.u.heartbeat.status = w->hotadd_ms;
	if (w->in_clock) {
		m.u.heartbeat.batches_done = w->cb_done;
		m.u.heartbeat.batches = w->cb_end;
	}
	m.u.heartbeat.speed = (float)w->speed;
	(void)net_send(w->cpush, &m, 0, &err);
}

/* A REASSIGN for this worker: an OFFER to hand over the end of its
 * clock (taken between two minibatches, take_offers), or a HELP to
 * train (at the top of the loop, do_help); at most DIST_RELIEF_MAX of
 * each wait, more are dropped (the coordinator offers a helper one at a
 * time). */
static void take_reassign(struct worker *w, const struct wire_msg *m)
{
	const struct wire_reassign *r = &m->u.reassign;
	struct relief *q;

	if (w->mf) /* no straggler relief for mf (the coordinator offers
		      none) */
		return;
	if (r->op == WIRE_REASSIGN_OFFER &&
	    wire_node_eq(r->straggler, w->o->node)) {
		if (m->hdr.clock != w->clock || w->n_offers == DIST_RELIEF_MAX)
			return;
		q = &w->offers[w->n_offers++];
	} else if (r->op == WIRE_REASSIGN_HELP &&
		   wire_node_eq(r->helper, w->o->node)) {
		/* the frame's checks hold the stream inside its partition;
		 * the partition must be inside our training set */
		if (r->part_hi > w->train.n || (w->train.win &&
		    (r->part_lo < w->train.win->lo ||
		     r->part_hi > w->train.win->hi)) || r->count >
		    DIST_CLOCK_BATCHES_MAX || w->n_helps == DIST_RELIEF_MAX) {
			dist_logf(w->o, LOG_LVL_WARN, "worker %u: help for %u "
				  "at clock %" PRId64 " refused (partition "
				  "[%u, %u) of %u, %u minibatches)",
				  w->o->node.v, r->straggler.v, m->hdr.clock,
				  r->part_lo, r->part_hi, w->train.n,
				  r->count);
			return;
		}
		q = &w->helps[w->n_helps++];
	} else {
		return;
	}
	q->r = *r;
	q->clock = m->hdr.clock;
}

static void pulls_drop(struct worker *w);

static void on_sub(struct worker *w)
{
	struct px_error err;
	struct wire_msg m;

	while (net_recv(w->sub, &m, 0, &err) == PX_OK) {
		switch (m.hdr.type) {
		case WIRE_MEMBERSHIP:
			if (!dist_members_take(&w->mb, &m))
				break;
			(void)wire_membership_apply(w->ctx, &m,
						    px_now_mono_us());
			if (dist_told_to_leave(&m, w->o->node,
					       wire_ctx_session(w->ctx), NULL))
				w->told = true;
			break;
		case WIRE_STAGE:
			if (m.u.stage.epoch > w->stage_epoch &&
			    m.u.stage.nshards <= DIST_MAX_SHARDS) {
				memcpy(w->map, m.u.stage.shards,
				       m.u.stage.nshards * sizeof(*w->map));
				w->nshards = m.u.stage.nshards;
				w->stage_epoch = m.u.stage.epoch;
				w->stage = m.u.stage.stage;
				w->pushed = false; /* new holders */
				w->cache_ok = false;
				pulls_drop(w); /* asked of the old ones */
			}
			break;
		case WIRE_CLOCK_MIN:
			w->clock_min = m.u.clock_min.min_clock;
			w->have_min = true;
			/* the job's end as the coordinator now foresees it
			 * (it moves when the number of workers changes) */
			if (m.u.clock_min.total_clock > 0)
				w->total = m.u.clock_min.total_clock;
			/* within the buffers; 0: unchanged */
			if (m.u.clock_min.batch &&
			    m.u.clock_min.batch <= w->o->train.batch)
				w->want_batch = m.u.clock_min.batch;
			if (m.u.clock_min.lr_scale > 0)
				w->want_lr = m.u.clock_min.lr_scale;
			if (m.u.clock_min.clock_batches <=
			    DIST_CLOCK_BATCHES_MAX)
				w->want_kb = m.u.clock_min.clock_batches;
			break;
		case WIRE_SHUTDOWN:
			w->shutdown = true;
			break;
		case WIRE_REASSIGN:
			take_reassign(w, &m);
			break;
		default:
			break;
		}
		wire_msg_release(&m);
		w->last_coord = px_now_mono_us();
	}
}

/* A heartbeat when one is due. */
static void beat(struct worker *w)
{
	uint64_t now = px_now_mono_us();

	if (now >= w->next_hb) {
		heartbeat(w);
		w->next_hb = now + (uint64_t)w->o->hb_ms * 1000;
	}
}

/* Run the loop's housekeeping and wait up to ms for broadcasts. */
static void pump(struct worker *w, int ms)
{
	struct nn_pollfd pf = { .fd = net_nn_socket(w->sub),
				.events = NN_POLLIN };

	if (nn_poll(&pf, 1, ms) > 0)
		on_sub(w);
	beat(w);
}

/* While a window reads rows: the coordinator's broadcasts and a
 * heartbeat, so that a long read is not a lost worker. */
static void read_tick(void *arg)
{
	pump(arg, 0);
}

/* Recompute the partition when the membership changed.  Returns false
 * while this worker holds none. */
static bool partition(struct worker *w)
{
	uint32_t idx, k, lo, hi;

	if (w->mb.epoch == w->part_epoch)
		return w->hi > w->lo;
	w->part_epoch = w->mb.epoch;
	k = dist_members_workers(&w->mb, w->stage, w->o->node, &idx);
	if (idx == UINT32_MAX ||
	    data_partition(w->train.n, k, idx, &lo, &hi, NULL) != PX_OK) {
		w->lo = w->hi = 0;
		return false;
	}
	if (lo != w->lo || hi != w->hi) {
		w->lo = lo;
		w->hi = hi;
		/* a worker reading its partition only: those rows from now
		 * on (read at the first batch, again at every change) */
		if (w->train.win && hi > lo)
			data_window_range(&w->train, lo, hi,
					  w->o->train.batch);
		w->pos = hi - lo; /* reshuffle before the next batch */
		dist_logf(w->o, LOG_LVL_DEBUG,
			  "worker %u: partition [%u, %u) of %u",
			  w->o->node.v, lo, hi, k);
	}
	return hi > lo;
}

/* The REQ socket for shard s, to its active in the current map (opened
 * now, or again when the active changed); NULL when it has none. */
static struct net_sock *shard_sock(struct worker *w, uint32_t s)
{
	const struct wire_shard *sh = &w->map[s];
	const struct dist_member *ps = dist_members_find(&w->mb, sh->active);
	struct px_error err;

	if (w->pq[s] && wire_node_eq(w->pq_to[s], sh->active))
		return w->pq[s];
	net_close(w->pq[s]);
	w->pq[s] = NULL;
	if (!ps || ps->state == WIRE_MEMBER_LOST)
		return NULL;
	if (dist_sock(w->ctx, NET_REQ, ps->addr, DIST_EP_REP, false, &w->pq[s],
		      &err) != PX_OK) {
		dist_logf(w->o, LOG_LVL_WARN,
			  "worker %u: shard %u: %s", w->o->node.v, s,
			  err.msg);
		return NULL;
	}
	w->pq_to[s] = sh->active;
	return w->pq[s];
}

/* Forget the PULLs out and the replies kept; close the sockets that had
 * a request out (a late reply must not answer the next request). */
static void pulls_drop(struct worker *w)
{
	for (uint32_t s = 0; s < DIST_MAX_SHARDS; s++) {
		if (w->prefetch_out && !w->prefetched && w->pq[s]) {
			net_close(w->pq[s]);
			w->pq[s] = NULL;
		}
		wire_msg_release(&w->pq_reply[s]);
	}
	w->prefetch_out = w->prefetched = false;
}

/* A PULL of every shard at this worker's clock, "with my pushes up to
 * the last" (read-my-writes at the PS). */
static bool pulls_send(struct worker *w)
{
	struct px_error err;

	for (uint32_t s = 0; s < w->nshards; s++) {
		struct net_sock *q = shard_sock(w, s);

		if (!q || dist_pull_send(q, w->map[s].active, w->clock, s,
					 w->map[s].count,
					 w->pushed ? w->last_push : -1, 100,
					 &err) != PX_OK) {
			net_close(w->pq[s]);
			w->pq[s] = NULL;
			return false;
		}
	}
	return true;
}

/* The replies to pulls_send into pq_reply; false (the sockets that
 * failed closed) when one did not come within 250 ms (and its size's
 * transfer, dist_range_ms) or was not the range asked for. */
static bool pulls_recv(struct worker *w)
{
	struct px_error err;

	for (uint32_t s = 0; s < w->nshards; s++) {
		if (!w->pq[s] ||
		    dist_pull_recv(w->pq[s], w->map[s].active, s,
				   w->map[s].count,
				   dist_range_ms(250, w->map[s].count),
				   &w->pq_reply[s], &err) != PX_OK) {
			for (uint32_t t = s; t < w->nshards; t++) {
				net_close(w->pq[t]);
				w->pq[t] = NULL;
			}
			return false;
		}
	}
	return true;
}

/* Make the replies in pq_reply the copy: each shard's parameters, plus
 * upd when they were asked for before upd was pushed (a prefetch);
 * fresh is the oldest clock they all hold. */
static void pulls_install(struct worker *w, bool add_upd)
{
	uint32_t idx, k = dist_members_workers(&w->mb, w->stage, w->o->node,
					       &idx);

	w->fresh = INT64_MAX;
	for (uint32_t s = 0; s < w->nshards; s++) {
		const struct wire_range *r = &w->pq_reply[s].u.range;
		float *p = w->params + w->map[s].offset;

		wire_f32_copy(&r->data, p);
		if (add_upd)
			kern_add(p, w->upd + w->map[s].offset, r->data.n);
		if (r->clock < w->fresh)
			w->fresh = r->clock;
		wire_msg_release(&w->pq_reply[s]);
	}
	if (k <= 1) /* no other worker has updates to wait for */
		w->fresh = INT64_MAX;
	memcpy(w->base, w->params, w->d.n_params * sizeof(float));
	w->cache_ok = true;
	w->cache_mb = w->mb.epoch;
	w->prefetch_out = w->prefetched = false;
}

/* Whether the copy may serve this clock: it holds every other worker's
 * updates up to clock - slack - 1 (SSP), and the membership and the map
 * are those of its last pull. */
static bool cache_fresh(const struct worker *w, int64_t clock)
{
	return w->cache_ok && w->cache_mb == w->mb.epoch &&
	       (w->fresh == INT64_MAX ||
		w->fresh >= clock - (int64_t)w->o->slack - 1);
}

/* Bring the copy up to date for this clock if SSP needs it: from the
 * prefetch's replies when they are fresh enough, else by pulling every
 * shard now.  Returns false to retry later. */
static bool sync_params(struct worker *w)
{
	if (w->prefetched && w->cache_mb == w->mb.epoch) {
		pulls_install(w, true);
		w->prefetches++;
	}
	pulls_drop(w);
	if (cache_fresh(w, w->clock)) {
		w->cached++;
		return true;
	}
	if (!pulls_send(w) || !pulls_recv(w)) {
		pulls_drop(w);
		return false;
	}
	pulls_install(w, false);
	w->pulls++;
	return true;
}

/* Under SSP (slack >= 1) a copy that the next clock will find too old is
 * pulled during this one: the PULLs go out now, the replies are taken
 * before this clock's push (so they do not hold it) and installed at the
 * next clock's start with this clock's update added. */
static void prefetch_start(struct worker *w)
{
	if (!w->o->slack || w->prefetch_out || cache_fresh(w, w->clock + 1))
		return;
	w->prefetch_out = pulls_send(w);
	if (!w->prefetch_out)
		pulls_drop(w);
}

static void prefetch_collect(struct worker *w)
{
	if (!w->prefetch_out || w->prefetched)
		return;
	w->prefetched = pulls_recv(w);
	if (!w->prefetched)
		pulls_drop(w);
}

/* Pass `pass` over the partition [lo, lo + part) of a worker of this
 * rank among the partition holders, into idx[part]: shuffled as `train`
 * shuffles its epoch of the same number, the rank mixed in (a job's only
 * worker sees `train`'s batches in `train`'s order).  A function of its
 * arguments alone, so that a helper draws a straggler's pass as the
 * straggler does. */
static void shuffle_pass(const struct worker *w, uint32_t *idx, uint32_t lo,
			 uint32_t part, uint32_t pass, uint32_t rank)
{
	data_shuffle_chunked(idx, part, lo, w->train.win && lo ==
			     w->train.win->lo ? w->train.win->chunk : 0,
			     w->o->train.seed ^
			     (UINT64_C(0x5851f42d4c957f2d) * pass) ^
			     ((uint64_t)rank << 32));
}

/* The stream of minibatches `count` on from (*pass, *pos) over a
 * partition of part examples: where it is then.  *ret_new: whether a
 * new pass began on the way (its order must be drawn). */
static void stream_advance(uint32_t part, uint32_t batch, uint32_t *pass,
			   uint32_t *pos, uint64_t count, bool *ret_new)
{
	*ret_new = false;
	for (uint64_t i = 0; i < count && part; i++) {
		if (*pos >= part) {
			(*pass)++;
			*pos = 0;
			*ret_new = true;
		}
		*pos += batch < part - *pos ? batch : part - *pos;
	}
}

/* This worker's rank among the partition holders (0 if none). */
static uint32_t my_rank(const struct worker *w)
{
	uint32_t rank;

	(void)dist_members_workers(&w->mb, w->stage, w->o->node, &rank);
	return rank == UINT32_MAX ? 0 : rank;
}

/* Examples idx[n] into the batch buffers (the sparse rows xs, or h_x),
 * counted for --test-visits. */
static enum px_err gather(struct worker *w, const uint32_t *idx, uint32_t n,
			  struct px_error *err)
{
	enum px_err e = PX_OK;

	e = data_batch_gather(&w->train, idx, n, w->h_x,
			      w->sparse ? &w->xs : NULL, w->h_y, err);
	for (uint32_t i = 0; e == PX_OK && w->visits && i < n; i++)
		w->visits[idx[i]]++;
	return e;
}

/* The next minibatch of the partition: its examples' indices (in idx,
 * valid until the next pass begins) and their count. */
static const uint32_t *next_span(struct worker *w, uint32_t *ret_n)
{
	uint32_t part = w->hi - w->lo, n = w->batch;
	const uint32_t *at;

	if (w->pos >= part) {
		w->pass++;
		w->rank = my_rank(w);
		shuffle_pass(w, w->idx, w->lo, part, w->pass, w->rank);
		w->pos = 0;
	}
	if (n > part - w->pos)
		n = part - w->pos;
	at = w->idx + w->pos;
	w->pos += n;
	*ret_n = n;
	return at;
}

/* One minibatch of the partition into the batch buffers; its size in
 * *ret_n. */
static enum px_err next_batch(struct worker *w, uint32_t *ret_n,
			      struct px_error *err)
{
	const uint32_t *at = next_span(w, ret_n);

	return gather(w, at, *ret_n, err);
}

/* The minibatches handed over at the clock's end: the stream moves past
 * them as if they were trained here (their helper trains them). */
static void skip_batches(struct worker *w, uint32_t count)
{
	bool fresh;

	stream_advance(w->hi - w->lo, w->batch, &w->pass, &w->pos,
		       count, &fresh);
	if (fresh) {
		w->rank = my_rank(w);
		shuffle_pass(w, w->idx, w->lo, w->hi - w->lo, w->pass,
			     w->rank);
	}
}

/* The minibatches of this clock: kb, but no more than the worker's
 * epochs over its partition leave, while the job is the one planned for
 * its partition holders (the coordinator's last clock is what k of them
 * take from the start: no worker came or went).  So an epoch is one pass
 * over the samples used, however the batch, the clock's kb and the
 * partition divide: --max-train 300 --batch 300 --epochs 1 is one batch,
 * not a clock of kb of them (8 passes), and a worker whose partition
 * needs fewer batches than another's trains none in the clocks left.
 * After a change of workers the coordinator foresees the end anew from
 * the samples left, and a clock is kb minibatches. */
static uint32_t clock_batches(struct worker *w)
{
	const struct train_opts *t = &w->o->train;
	uint32_t idx, k = dist_members_workers(&w->mb, w->stage, w->o->node,
					       &idx);
	uint64_t part = w->hi - w->lo, mine;
	int64_t done = w->clock * (int64_t)w->kb;

	if (!k || w->total != dist_job_clocks(w->train.n, k, t->epochs,
					      w->batch, w->kb))
		return w->kb;
	mine = (uint64_t)t->epochs * ((part + w->batch - 1) / w->batch);
	if (done >= (int64_t)mine)
		return 0;
	return mine - (uint64_t)done < w->kb ? (uint32_t)(mine - done)
					     : w->kb;
}

/* The slow fault's factor now (1: none). */
static double slow_factor(const struct worker *w, uint64_t now)
{
	double el = (double)(now - w->first_us) / 1e6, f = 1.0;

	for (uint32_t i = 0; i < w->o->n_slow; i++) {
		const struct dist_slow *sl = &w->o->slow[i];

		if (el >= sl->at && (sl->secs <= 0 || el < sl->at + sl->secs) &&
		    sl->factor > f)
			f = sl->factor;
	}
	return f;
}

/* Wait until `until`, answering the coordinator meanwhile. */
static void wait_pumping(struct worker *w, uint64_t until)
{
	while (px_now_mono_us() < until)
		pump(w, dist_ms_until(until, 1000) + 1);
}

/* After a minibatch of n examples that took compute_us: with
 * --fault-batch-ms, wait out the rest of that many ms for a minibatch
 * of --batch examples, in proportion for a smaller one (co-adaptation's,
 * a partition's last: a machine's compute grows with the batch), the
 * minibatch's compute is then that;
 * under the slow fault, wait (factor - 1) times the compute, answering
 * the coordinator meanwhile (so the stretch is in proportion to the work
 * whatever the machine's load, and takes no CPU); then the minibatch,
 * with those waits, into the speed this worker reports (time training
 * only: not its waits on the SSP bound, which would make a fast worker
 * held back by a slow one look slow). */
static void batch_done(struct worker *w, uint64_t t0, uint64_t compute_us,
		       uint32_t n)
{
	uint64_t now = px_now_mono_us(), until;
	uint64_t floor_us = (uint64_t)w->o->fault_batch_ms * 1000 *
			    (n < w->o->train.batch ? n : w->o->train.batch) /
			    (w->o->train.batch ? w->o->train.batch : 1);
	double f = slow_factor(w, now), v;

	if (compute_us < floor_us) {
		wait_pumping(w, t0 + floor_us);
		compute_us = floor_us;
		now = px_now_mono_us();
	}
	if (f > 1.0) {
		/* waits are whole ms: what one overshoots is owed back */
		w->slow_debt_us += (f - 1.0) * (double)compute_us;
		if (w->slow_debt_us >= 1000.0) {
			uint64_t from = now;

			until = now + (uint64_t)w->slow_debt_us;
			wait_pumping(w, until);
			now = px_now_mono_us();
			w->slow_debt_us -= (double)(now - from);
		}
	}
	w->win_us += px_now_mono_us() - t0;
	w->win_n++;
	if (w->win_us >= 50000) {
		v = (double)w->win_n * 1e6 / (double)w->win_us;
		w->speed = w->speed_windowed ? 0.5 * w->speed + 0.5 * v : v;
		w->speed_windowed = true;
		w->win_us = 0;
		w->win_n = 0;
	} else if (!w->speed_windowed && w->win_us > 0) {
		/* until the first window is whole, the minibatches so far:
		 * a straggler is known after its first, not 50 ms in (at
		 * 12 ms a minibatch, most of a clock), so relief can begin
		 * in the job's first clock */
		w->speed = (double)w->win_n * 1e6 / (double)w->win_us;
	}
}

/* One minibatch of n examples in the batch buffers: a gradient and a
 * step of SGD with momentum on the worker's copy (as `train` does) at
 * learning rate lr, then batch_done.  With measure, the gradient of its
 * first half too, before, and both squared norms (the step is the one
 * without). */
static enum px_err train_batch(struct worker *w, uint32_t n, float lr,
			       bool measure, uint64_t t0,
			       struct px_error *err)
{
	enum px_err e = PX_OK;

	if (w->sparse) {
		e = model_grad_csr(w->mc, w->d_params, &w->xs.csr, w->h_y,
				   w->d_grad, NULL, err);
		goto step;
	}
	if (w->x != w->h_x) {
		e = w->ops->upload(w->kctx, w->x, w->h_x, (size_t)n *
				   w->train.dim * sizeof(float), err);
		if (e == PX_OK)
			e = w->ops->upload(w->kctx, w->y, w->h_y, n, err);
	}
	if (e == PX_OK && measure) {
		e = model_grad(w->mc, w->d_params, w->x, w->y, n / 2,
			       w->d_grad, NULL, err);
		if (e == PX_OK)
			e = w->ops->sqnorm(w->kctx, w->d_grad, w->d.n_params,
					   &w->gsq_half, err);
	}
	if (e == PX_OK)
		e = model_grad(w->mc, w->d_params, w->x, w->y, n, w->d_grad,
			       NULL, err);
	if (e == PX_OK && measure) {
		e = w->ops->sqnorm(w->kctx, w->d_grad, w->d.n_params,
				   &w->gsq_full, err);
		if (e == PX_OK)
			w->gb = n / 2;
	}
step:
	if (e == PX_OK)
		e = w->ops->sgd_momentum(w->kctx, w->d_params, w->d_mom,
					 w->d_grad, w->d.n_params, lr,
					 w->o->train.momentum,
					 w->o->train.weight_decay, err);
	if (e == PX_OK)
		batch_done(w, t0, px_now_mono_us() - t0, n);
	return e;
}

/* The end of this clock from minibatch `first` on (count of them) to a
 * helper: HELP to the coordinator with the stream there (from where it
 * is now, minibatch j: the ones between are trained here first). */
static void hand_over(struct worker *w, const struct wire_reassign *offer,
		      uint32_t j, uint32_t first, uint32_t count)
{
	uint32_t pass = w->pass, pos = w->pos;
	struct px_error err;
	struct wire_msg m;
	bool fresh;

	stream_advance(w->hi - w->lo, w->batch, &pass, &pos, first - j,
		       &fresh);
	wire_msg_init(&m, WIRE_REASSIGN, (struct wire_node){ DIST_COORD_NODE },
		      w->clock);
	m.u.reassign = (struct wire_reassign){
		.op = WIRE_REASSIGN_HELP, .straggler = w->o->node,
		.helper = offer->helper, .first = first, .count = count,
		.part_lo = w->lo, .part_hi = w->hi,
		.rank = fresh ? my_rank(w) : w->rank, .pass = pass,
		.pos = pos };
	if (net_send(w->cpush, &m, 100, &err) != PX_OK) {
		/* not handed over: trained here */
		w->cb_end += count;
		dist_logf(w->o, LOG_LVL_WARN, "worker %u: help to %u: %s",
			  w->o->node.v, offer->helper.v, err.msg);
		return;
	}
	w->handed += count;
	dist_logf(w->o, LOG_LVL_DEBUG, "worker %u: minibatches %u..%u of "
		  "clock %" PRId64 " to worker %u", w->o->node.v, first,
		  first + count - 1, w->clock, offer->helper.v);
}

/* Between two minibatches (j done): the coordinator's broadcasts, a
 * heartbeat with the progress when due, and the offers for this clock:
 * each takes up to its count of the minibatches not begun, from the
 * end. */
static void take_offers(struct worker *w, uint32_t j)
{
	uint64_t now;

	pump(w, 0);
	now = px_now_mono_us();
	if (now - w->last_prog_us >= DIST_PROGRESS_US) {
		heartbeat(w);
		w->last_prog_us = now;
	}
	for (uint32_t i = 0; i < w->n_offers; i++) {
		const struct relief *q = &w->offers[i];
		uint32_t left = w->cb_end - j, g;

		if (q->clock != w->clock)
			continue;
		g = q->r.count < left ? q->r.count : left;
		if (!g)
			continue;
		w->cb_end -= g;
		hand_over(w, &q->r, j, w->cb_end, g);
	}
	w->n_offers = 0;
}

/* At a clock's start: the coordinator's minibatch, lr factor and
 * clock's length, if they changed (co-adaptation), and a fresh gradient
 * measurement.  The lr schedule's step, clock x kb + j of total x kb,
 * keeps its place when kb changes (total is foreseen anew for it). */
static void adapt(struct worker *w)
{
	uint32_t kb = w->want_kb && !w->mf ? w->want_kb : w->kb;

	if (w->want_batch != w->batch || w->want_lr != w->lr_scale ||
	    kb != w->kb) {
		w->batch = w->want_batch;
		w->lr_scale = w->want_lr;
		w->kb = kb;
		dist_logf(w->o, LOG_LVL_NOTICE, "worker %u: clock %" PRId64
			  ": batch %u, lr x%.3f, %u minibatches a clock",
			  w->o->node.v, w->clock, w->batch,
			  (double)w->lr_scale, w->kb);
	}
	w->gb = 0;
}

/* Whether this clock's first minibatch, of n examples, is measured for
 * the goodput estimate: a dense one (the sparse path has no half-batch
 * gradient), an even minibatch of the clock's size, and one in every 8
 * minibatches at most (the measurement costs half a minibatch's gradient
 * more; on a GPU also two waits for the norms). */
static bool measured(const struct worker *w, uint32_t n)
{
	int64_t every = w->kb >= 8 ? 1 : 8 / w->kb;

	return !w->sparse && n == w->batch && n >= 2 &&
	       n % 2 == 0 && w->clock % every == 0;
}

/* A clock's training: clock_batches() minibatches (less those handed
 * over to helpers), the lr of the job's step clock * kb + j.  *ret_n:
 * the samples. */
static enum px_err compute(struct worker *w, uint32_t *ret_n,
			   struct px_error *err)
{
	size_t pb = w->d.n_params * sizeof(float);
	int64_t steps = w->total * (int64_t)w->kb;
	uint32_t kb = clock_batches(w);
	enum px_err e = PX_OK;
	uint32_t done = 0;

	if (!w->first_us)
		w->first_us = px_now_mono_us();
	adapt(w);
	for (uint32_t i = 0; i < w->n_offers; i++)
		if (w->offers[i].clock != w->clock)
			w->offers[i--] = w->offers[--w->n_offers];
	w->in_clock = true;
	w->cb_done = 0;
	w->cb_end = kb;
	w->last_prog_us = 0; /* a report at the start */
	if (w->d_params != w->params)
		e = w->ops->upload(w->kctx, w->d_params, w->params, pb, err);
	for (uint32_t j = 0; e == PX_OK; j++) {
		uint64_t t0;
		uint32_t n;

		take_offers(w, j);
		if (j >= w->cb_end)
			break;
		if (j == kb / 2)
			prefetch_start(w);
		t0 = px_now_mono_us();
		e = next_batch(w, &n, err);
		if (e != PX_OK)
			break;
		e = train_batch(w, n, w->lr_scale *
				dist_lr(&w->o->train, w->clock *
					(int64_t)w->kb + j, steps),
				j == 0 && measured(w, n), t0, err);
		done += n;
		w->cb_done = j + 1;
	}
	if (e == PX_OK && w->cb_end < kb)
		skip_batches(w, kb - w->cb_end);
	w->in_clock = false;
	w->n_offers = 0;
	if (e == PX_OK && w->d_params != w->params)
		e = w->ops->download(w->kctx, w->params, w->d_params, pb,
				     err);
	prefetch_collect(w);
	*ret_n = done;
	return e;
}

static enum px_err send_clock(struct worker *w, uint32_t n,
			      struct px_error *err)
{
	struct wire_msg m;

	wire_msg_init(&m, WIRE_CLOCK, (struct wire_node){ DIST_COORD_NODE },
		      w->clock);
	m.u.clock.samples = n;
	m.u.clock.row_bytes = w->row_bytes;
	m.u.clock.row_frames = w->row_frames;
	m.u.clock.rows = w->nrows;
	/* a float's range: a diverging run's norms measure nothing */
	if (w->gb && isfinite((float)w->gsq_half) &&
	    isfinite((float)w->gsq_full)) {
		m.u.clock.batch = w->gb;
		m.u.clock.batches = 2;
		m.u.clock.grad_sq_small = (float)w->gsq_half;
		m.u.clock.grad_sq_big = (float)w->gsq_full;
	}
	return net_send(w->cpush, &m, 1000, err);
}

/* The clock's update: what the copy changed by since the last pull or
 * push, over the number of workers holding a partition (k), as
 * DistributedDataParallel averages its workers' gradients: with k
 * workers in step a clock moves the parameters by the mean of their
 * updates, and one clock of one worker is one clock of `train`.  The
 * copy then keeps only that share of its own update, as the PS does
 * (once the others' come in, it is what a pull would give). */
static void make_update(struct worker *w, float *upd)
{
	uint32_t idx, k = dist_members_workers(&w->mb, w->stage, w->o->node,
					       &idx);
	size_t n = w->d.n_params;

	kern_sub(upd, w->params, w->base, n);
	if (k > 1) {
		kern_scale(upd, 1.0f / (float)k, n);
		memcpy(w->params, w->base, n * sizeof(float));
		kern_add(w->params, upd, n);
	}
	memcpy(w->base, w->params, n * sizeof(float));
}

/* The clock's update (make_update) to each shard's active, then CLOCK
 * (the test fault --fault-late-push is the PS's: it holds the pushes it
 * receives until a read waits for them, dist_ps.c). */
/* How long a push to one PS may block: half the heartbeat timeout (the
 * send comes right after a heartbeat when one is due), at most 1 s. */
static int push_timeout_ms(const struct dist_opts *o)
{
	uint32_t ms = o->hb_timeout_ms / 2;

	return ms > 1000 ? 1000 : ms ? (int)ms : 1;
}

/* Wait until q (shard s's active, was) can take a frame, at most ms,
 * taking the coordinator's broadcasts meanwhile: false when a new map
 * moved the shard elsewhere first (its PS died and the backup was
 * promoted: the coordinator hears of a death at once, and a push to the
 * dead PS would wait out its whole time).  True otherwise, also when the
 * time is up (the send then times out as it would have). */
static bool push_wait(struct worker *w, struct net_sock *q, uint32_t s,
		      struct wire_node was, int ms)
{
	uint64_t until = px_now_mono_us() + (uint64_t)ms * 1000;

	for (;;) {
		struct nn_pollfd pf[2] = {
			{ .fd = net_nn_socket(q), .events = NN_POLLOUT },
			{ .fd = net_nn_socket(w->sub), .events = NN_POLLIN },
		};
		int left = dist_ms_until(until, ms);

		if (left <= 0 || nn_poll(pf, 2, left) <= 0 ||
		    (pf[0].revents & NN_POLLOUT))
			return true;
		if (pf[1].revents & NN_POLLIN) {
			on_sub(w);
			beat(w);
		}
		if (s >= w->nshards || !wire_node_eq(w->map[s].active, was))
			return false;
	}
}

/* One shard's update to its active q (to): a PUSH of clock. */
typedef enum px_err (*push_fn)(struct worker *w, struct net_sock *q,
			       struct wire_node to, uint32_t s, int64_t clock,
			       const void *arg, struct px_error *err);

static enum px_err push_range(struct worker *w, struct net_sock *q,
			      struct wire_node to, uint32_t s, int64_t clock,
			      const void *arg, struct px_error *err)
{
	const struct wire_shard *sh = &w->map[s];

	return net_send_range(q, WIRE_PUSH, 0, to, clock, s, 0,
			      (const float *)arg + sh->offset, sh->count,
			      push_timeout_ms(w->o), err);
}

/* send(shard) to each shard's active, as the map says when it goes. */
static enum px_err push_each(struct worker *w, push_fn send, const void *arg,
			     int64_t clock, struct px_error *err)
{
	enum px_err e;

	for (uint32_t s = 0; s < w->nshards; s++) {
		const struct wire_shard *sh = &w->map[s];
		const struct dist_member *ps = dist_members_find(&w->mb,
								 sh->active);
		struct net_sock *q;

		if (!ps)
			continue;
		q = dist_link_get(&w->links, sh->active, ps->addr, false, err);
		if (!q)
			return err->code;
		/* a PS that just died can stall the send, and a worker
		 * silent for hb_timeout_ms is lost: a heartbeat when due,
		 * then at most half that (a shard's update that times out
		 * is dropped, as a lost clock would be); a new map that
		 * moves the shard meanwhile sends it to the new holder */
		beat(w);
		if (!push_wait(w, q, s, sh->active, push_timeout_ms(w->o))) {
			s--;   /* again, to where the map says now */
			continue;
		}
		e = send(w, q, sh->active, s, clock, arg, err);
		if (e != PX_OK && e != PX_ETIMEDOUT)
			return e;
	}
	return PX_OK;
}

/* upd (make_update's) to each shard's active as a PUSH of clock. */
static enum px_err push_update(struct worker *w, const float *upd,
			       int64_t clock, struct px_error *err)
{
	return push_each(w, push_range, upd, clock, err);
}

static enum px_err push_all(struct worker *w, uint32_t n,
			    struct px_error *err)
{
	enum px_err e;

	make_update(w, w->upd);
	e = push_update(w, w->upd, w->clock, err);
	if (e != PX_OK)
		return e;
	return send_clock(w, n, err);
}

/* A straggler's minibatches handed over (HELP h): trained on this
 * worker's copy from the straggler's stream (its pass drawn as it draws
 * it), at the lr of the straggler's steps, then pushed (a PUSH of this
 * worker's last clock: the PS counts no clock for it) and DONE to the
 * coordinator, which holds the straggler's clock open until then. */
static enum px_err do_help(struct worker *w, const struct relief *h,
			   struct px_error *err)
{
	const struct wire_reassign *r = &h->r;
	size_t pb = w->d.n_params * sizeof(float);
	uint32_t part = r->part_hi - r->part_lo, pass = r->pass, pos = r->pos;
	uint32_t batch = w->batch, samples = 0;
	int64_t steps = w->total * (int64_t)w->kb;
	enum px_err e = PX_OK;
	struct wire_msg m;

	if (pos < part)
		shuffle_pass(w, w->hidx, r->part_lo, part, pass, r->rank);
	if (w->d_params != w->params)
		e = w->ops->upload(w->kctx, w->d_params, w->params, pb, err);
	for (uint32_t i = 0; e == PX_OK && i < r->count; i++) {
		uint64_t t0 = px_now_mono_us();
		uint32_t n;

		if (pos >= part) {
			pass++;
			shuffle_pass(w, w->hidx, r->part_lo, part, pass,
				     r->rank);
			pos = 0;
		}
		n = batch < part - pos ? batch : part - pos;
		e = gather(w, w->hidx + pos, n, err);
		if (e != PX_OK)
			break;
		pos += n;
		e = train_batch(w, n, w->lr_scale *
				dist_lr(&w->o->train, h->clock *
					(int64_t)w->kb + r->first + i, steps),
				false, t0, err);
		samples += n;
		beat(w);
	}
	if (e == PX_OK && w->d_params != w->params)
		e = w->ops->download(w->kctx, w->params, w->d_params, pb,
				     err);
	if (e != PX_OK)
		return e;
	make_update(w, w->hupd);
	/* a prefetch asked for before: install adds this too */
	if (w->prefetch_out)
		kern_add(w->upd, w->hupd, w->d.n_params);
	e = push_update(w, w->hupd, w->clock - 1, err);
	if (e != PX_OK)
		return e;
	w->helped += r->count;
	wire_msg_init(&m, WIRE_REASSIGN, (struct wire_node){ DIST_COORD_NODE },
		      h->clock);
	m.u.reassign = *r;
	m.u.reassign.op = WIRE_REASSIGN_DONE;
	m.u.reassign.samples = samples;
	dist_logf(w->o, LOG_LVL_DEBUG, "worker %u: trained minibatches %u..%u "
		  "of worker %u's clock %" PRId64, w->o->node.v, r->first,
		  r->first + r->count - 1, r->straggler.v, h->clock);
	return net_send(w->cpush, &m, 1000, err);
}

/* The helps queued, oldest first, once there is a map to push to. */
static enum px_err help_all(struct worker *w, struct px_error *err)
{
	while (w->n_helps && w->stage_epoch) {
		struct relief h = w->helps[0];
		enum px_err e;

		memmove(&w->helps[0], &w->helps[1],
			--w->n_helps * sizeof(w->helps[0]));
		e = do_help(w, &h, err);
		if (e != PX_OK)
			return e;
	}
	return PX_OK;
}

/* ---- --model mf: a clock pulls and pushes only the rows it touches
 * (docs/trainer.md, "Matrix factorization") ---- */

/* Ratings in a clock at most: its buffers' bound. */
#define MF_CLOCK_RATINGS_MAX (1u << 24)

/* Buffers for a clock of kb minibatches: its ratings, and the rows they
 * touch (at most two a rating, and no more than the model has). */
static enum px_err mf_room(struct worker *w, uint32_t kb,
			   struct px_error *err)
{
	uint64_t need = (uint64_t)kb * w->o->train.batch;
	uint64_t rows = (uint64_t)w->md.n_users + w->md.n_items, nr;

	if (need <= w->ccap)
		return PX_OK;
	if (need > MF_CLOCK_RATINGS_MAX)
		return px_errorf(err, PX_ETOOBIG, "a clock of %u minibatches "
				 "of %u ratings: over %u ratings", kb,
				 w->o->train.batch, MF_CLOCK_RATINGS_MAX);
	nr = 2 * need < rows ? 2 * need : rows;
	free(w->cidx);
	free(w->cb);
	free(w->rows);
	free(w->lids);
	free(w->rbuf);
	w->cidx = px_calloc(need, sizeof(uint32_t));
	w->cb = px_calloc((size_t)kb + 1, sizeof(uint32_t));
	w->rows = px_calloc(nr, sizeof(uint32_t));
	w->lids = px_calloc(nr, sizeof(uint32_t));
	w->rbuf = px_calloc(nr * w->md.row, sizeof(float));
	w->ccap = w->rcap = 0;
	if (!w->cidx || !w->cb || !w->rows || !w->lids || !w->rbuf)
		return px_errorf(err, PX_ENOMEM, "a clock of %" PRIu64
				 " ratings", need);
	w->ccap = (uint32_t)need;
	w->rcap = (uint32_t)nr;
	return PX_OK;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The clock's kb minibatches from the stream into cidx (the j-th at
 * cb[j] .. cb[j + 1]) and the rows they touch into rows (increasing);
 * the ratings' count. */
static uint32_t mf_collect(struct worker *w, uint32_t kb)
{
	uint32_t n = 0;

	w->cb[0] = 0;
	for (uint32_t j = 0; j < kb; j++) {
		uint32_t k;
		const uint32_t *at = next_span(w, &k);

		memcpy(w->cidx + n, at, k * sizeof(uint32_t));
		n += k;
		w->cb[j + 1] = n;
	}
	w->nrows = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct mf_rating *r = &w->ratings.r[w->cidx[i]];
		uint32_t two[2] = {
			(uint32_t)mf_user_row(&w->md, r->user),
			(uint32_t)mf_item_row(&w->md, r->item) };

		for (int t = 0; t < 2; t++)
			if (!w->mark[two[t]]) {
				w->mark[two[t]] = 1;
				w->rows[w->nrows++] = two[t];
			}
	}
	for (uint32_t i = 0; i < w->nrows; i++)
		w->mark[w->rows[i]] = 0;
	qsort(w->rows, w->nrows, sizeof(uint32_t), cmp_u32);
	return n;
}

/* The first of rows[0..nrows) at or past row r. */
static uint32_t mf_lower(const struct worker *w, uint64_t r)
{
	uint32_t lo = 0, hi = w->nrows;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (w->rows[mid] < r)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Shard s's part of the clock's rows: rows[*a .. *b), their ids within
 * the shard in lids. */
static void mf_segment(struct worker *w, uint32_t s, uint32_t *a,
		       uint32_t *b)
{
	uint64_t first = w->map[s].offset / w->md.row;

	*a = mf_lower(w, first);
	*b = mf_lower(w, (w->map[s].offset + w->map[s].count) / w->md.row);
	for (uint32_t i = *a; i < *b; i++)
		w->lids[i] = w->rows[i] - (uint32_t)first;
}

/* A PULL_ROWS reply for rows[at .. at + k) of shard s: copied into the
 * copy and into base (what the clock's update is measured from).  False
 * when it is not that. */
static bool mf_take(struct worker *w, uint32_t s, uint32_t at, uint32_t k,
		    const struct wire_msg *r)
{
	const struct wire_rows *v = &r->u.rows;
	uint32_t row = w->md.row;

	if (r->hdr.type != WIRE_ROWS || v->op != WIRE_ROWS_PARAMS ||
	    v->shard != s || v->width != row || v->ids.n != k)
		return false;
	for (uint32_t i = 0; i < k; i++)
		if (wire_u32_at(&v->ids, i) != w->lids[at + i])
			return false;
	for (uint32_t i = 0; i < k; i++) {
		struct wire_f32 f = { NULL, v->data.raw + (size_t)i * row * 4,
				      row };
		size_t o = (size_t)w->rows[at + i] * row;

		wire_f32_copy(&f, w->params + o);
		memcpy(w->base + o, w->params + o, row * sizeof(float));
	}
	w->row_bytes += WIRE_OVERHEAD + r->hdr.payload_len;
	w->row_frames++;
	return true;
}

/* Pull the clock's rows from their shards' actives: a PULL_ROWS to
 * every shard with rows at once (a reply is one frame: more rows go in
 * further rounds), then the replies.  False, the sockets with a request
 * out closed, when one failed (retried later). */
static bool mf_pull(struct worker *w)
{
	uint32_t a[DIST_MAX_SHARDS], b[DIST_MAX_SHARDS], k[DIST_MAX_SHARDS];
	int64_t own = w->pushed ? w->last_push : -1;
	struct px_error err;
	bool more = true, ok = true;

	for (uint32_t s = 0; s < w->nshards; s++)
		mf_segment(w, s, &a[s], &b[s]);
	while (ok && more) {
		more = false;
		for (uint32_t s = 0; s < w->nshards; s++) {
			struct net_sock *q;
			struct wire_msg m;
			uint32_t c;
			size_t sz;

			k[s] = 0;
			if (a[s] == b[s] || !ok)
				continue;
			q = shard_sock(w, s);
			c = q ? wire_rows_chunk(net_max_payload(q),
						w->md.row) : 0;
			k[s] = b[s] - a[s] < c ? b[s] - a[s] : c;
			wire_msg_init(&m, WIRE_PULL_ROWS, w->map[s].active,
				      w->clock);
			m.u.pull_rows = (struct wire_pull_rows){
				.shard = s, .width = w->md.row,
				.min_clock = own,
				.ids = { w->lids + a[s], NULL, k[s] } };
			if (!k[s] || wire_payload_size(&m, net_max_payload(q),
						       &sz, &err) != PX_OK ||
			    net_send(q, &m, 100, &err) != PX_OK) {
				k[s] = 0;
				ok = false;
				continue;
			}
			w->row_bytes += WIRE_OVERHEAD + sz;
			w->row_frames++;
		}
		for (uint32_t s = 0; s < w->nshards; s++) {
			struct wire_msg r;

			if (!k[s])
				continue;
			if (!ok || net_recv(w->pq[s], &r, 250, &err) != PX_OK) {
				ok = false;
			} else {
				ok = mf_take(w, s, a[s], k[s], &r);
				wire_msg_release(&r);
			}
			if (!ok) {
				net_close(w->pq[s]);
				w->pq[s] = NULL;
				continue;
			}
			a[s] += k[s];
			more = more || a[s] < b[s];
		}
	}
	return ok;
}

/* A shard's rows' update (rbuf, set by mf_clock) as ROWS PUSHes of
 * clock: one frame at least, none of its rows touched or not, as the
 * PS holds reads for a worker's pushes to every shard. */
static enum px_err push_rows(struct worker *w, struct net_sock *q,
			     struct wire_node to, uint32_t s, int64_t clock,
			     const void *arg, struct px_error *err)
{
	uint32_t a, b;

	mf_segment(w, s, &a, &b);
	return net_send_rows(q, WIRE_ROWS_PUSH, to, clock, s, w->md.row,
			     w->lids + a, w->rbuf + (size_t)a * w->md.row,
			     b - a, push_timeout_ms(w->o), &w->row_bytes,
			     &w->row_frames, err);
}

/* The minibatches of the clock on the copy, plain SGD with L2 (as
 * `train --model mf` does) at the lr of the job's steps. */
static enum px_err mf_train(struct worker *w, uint32_t kb,
			    struct px_error *err)
{
	int64_t steps = w->total * (int64_t)w->kb;

	for (uint32_t j = 0; j < kb; j++) {
		uint64_t t0 = px_now_mono_us();
		int64_t step = w->clock * (int64_t)w->kb + j;
		double loss;
		enum px_err e;

		take_offers(w, j); /* broadcasts and heartbeats (no offers) */
		e = mf_batch_grad(&w->md, w->params, &w->ratings,
				  w->cidx + w->cb[j], w->cb[j + 1] - w->cb[j],
				  w->o->train.weight_decay, w->mg, &loss,
				  err);
		if (e != PX_OK)
			return e;
		if (!isfinite(loss)) {
			char when[64];

			snprintf(when, sizeof(when), "clock %" PRId64
				 ", minibatch %u", w->clock, j + 1);
			return train_diverged(err, when, "training loss",
					      loss, w->o->train.lr);
		}
		mf_grad_apply(&w->md, w->params, w->mg,
			      dist_lr(&w->o->train, step, steps));
		batch_done(w, t0, px_now_mono_us() - t0,
			   w->cb[j + 1] - w->cb[j]);
		w->cb_done = j + 1;
	}
	return PX_OK;
}

/* One clock of --model mf: its ratings, a pull of the rows they touch,
 * the minibatches, a push of what those rows changed by (the sum over
 * workers is what the PS adds: each rating moves its rows as in `train`,
 * and the workers' ratings are apart), CLOCK.  *ret_ok false: the pull
 * failed, the stream is back where it was (the clock is tried again). */
static enum px_err mf_clock(struct worker *w, uint32_t *ret_n, bool *ret_ok,
			    struct px_error *err)
{
	uint32_t pass = w->pass, pos = w->pos, rank = w->rank;
	uint32_t kb = clock_batches(w), n, row = w->md.row;
	enum px_err e;

	*ret_ok = false;
	if (!w->first_us)
		w->first_us = px_now_mono_us();
	e = mf_room(w, kb, err);
	if (e != PX_OK)
		return e;
	w->row_bytes = 0;
	w->row_frames = 0;
	n = mf_collect(w, kb);
	if (!mf_pull(w)) {
		if (w->pass != pass && pos < w->hi - w->lo)
			shuffle_pass(w, w->idx, w->lo, w->hi - w->lo, pass,
				     rank);
		w->pass = pass;
		w->pos = pos;
		w->rank = rank;
		return PX_OK;
	}
	w->pulls++;
	w->in_clock = true;
	w->cb_done = 0;
	w->cb_end = kb;
	w->last_prog_us = 0; /* a report at the start */
	e = mf_train(w, kb, err);
	w->in_clock = false;
	if (e != PX_OK)
		return e;
	for (uint32_t i = 0; i < w->nrows; i++) {
		size_t o = (size_t)w->rows[i] * row;
		float *d = w->rbuf + (size_t)i * row;

		for (uint32_t j = 0; j < row; j++)
			d[j] = w->params[o + j] - w->base[o + j];
	}
	e = push_each(w, push_rows, NULL, w->clock, err);
	if (e == PX_OK)
		e = send_clock(w, n, err);
	*ret_ok = e == PX_OK;
	*ret_n = n;
	return e;
}

/* What ASSIGN says: the clock to start from, the clock's length, and
 * the job's length in clocks as foreseen at the start. */
static void take_assign(struct worker *w, const struct wire_msg *a)
{
	w->clock = a->u.assign.start_clock;
	w->kb = a->u.assign.clock_batches ? a->u.assign.clock_batches : 1;
	if (w->total <= 0)
		w->total = dist_job_clocks(w->train.n, w->o->workers,
					   w->o->train.epochs,
					   w->o->train.batch, w->kb);
}

/* How long a worker waits for its registration's answer: as long as the
 * coordinator waits for its job to start (--stall-timeout), at least
 * REGISTER_WAIT_MIN_MS.  A coordinator setting up a large model (an mf
 * job at the id bound: 90M parameters) answers late on a loaded host;
 * a worker that gave up sooner failed its node's start. */
#define REGISTER_WAIT_MIN_MS 10000

static int register_wait_ms(const struct worker *w)
{
	uint64_t ms = (uint64_t)w->o->stall_timeout_s * 1000;

	return ms > REGISTER_WAIT_MIN_MS ? (ms > INT32_MAX ? INT32_MAX :
					    (int)ms) : REGISTER_WAIT_MIN_MS;
}

/* Register with the coordinator (waiting up to timeout_ms) and take its
 * ASSIGN. */
static enum px_err register_assign(struct worker *w, int timeout_ms,
				   struct px_error *err)
{
	struct wire_msg a;
	enum px_err e;

	e = dist_register(w->o, w->creq, WIRE_ROLE_WORKER |
			  (w->o->reliable ? WIRE_ROLE_PS_BACKUP : 0),
			  timeout_ms, &a, err);
	if (e != PX_OK)
		return e;
	take_assign(w, &a);
	wire_msg_release(&a);
	return PX_OK;
}

/* --model mf: the ratings and the model's buffers (the clock's, sized
 * by its length, come with the ASSIGN: mf_room). */
static enum px_err mf_setup(struct worker *w, struct px_error *err)
{
	size_t rows;
	enum px_err e;

	e = dist_mf_load(w->o, &w->ratings, &w->md, err);
	if (e == PX_OK)
		e = mf_grad_new(&w->md, w->o->train.batch, &w->mg, err);
	if (e != PX_OK)
		return e;
	rows = (size_t)w->md.n_users + w->md.n_items;
	w->train.n = w->ratings.n; /* what the partitions split */
	w->params = px_calloc(w->md.n_params, sizeof(float));
	w->base = px_calloc(w->md.n_params, sizeof(float));
	w->idx = px_calloc(w->ratings.n, sizeof(uint32_t));
	w->mark = px_calloc(rows, 1);
	if (!w->params || !w->base || !w->idx || !w->mark)
		return px_errorf(err, PX_ENOMEM, "worker buffers (%zu "
				 "floats)", w->md.n_params);
	e = register_assign(w, register_wait_ms(w), err);
	if (e == PX_OK)
		e = mf_room(w, w->kb, err);
	return e;
}

static enum px_err setup(struct worker *w, struct px_error *err)
{
	const struct dist_opts *o = w->o;
	struct wire_config wc = {
		.self = o->node, .job = o->job,
		.job_key = o->key, .job_key_len = o->key_len,
	};
	uint32_t batch = o->train.batch;
	size_t pb;
	enum px_err e;

	/* The GPU first: without one (or without the CUDA library) the
	 * role fails at once, before it loads data or registers. */
	if (o->train.device == TRAIN_DEV_CUDA) {
		e = kern_cuda_new(o->train.cuda_device, &w->cuda, err);
		if (e != PX_OK)
			return e;
		w->ops = kern_cuda_ops();
		w->kctx = w->cuda;
	}
	e = wire_ctx_new(&wc, &w->ctx, err);
	if (e != PX_OK)
		return e;
	w->links.ctx = w->ctx;
	e = dist_sock(w->ctx, NET_SUB, o->coord, DIST_EP_PUB, false, &w->sub,
		      err);
	if (e == PX_OK)
		e = dist_sock(w->ctx, NET_PUSH, o->coord, DIST_EP_PULL, false,
			      &w->cpush, err);
	if (e == PX_OK)
		e = dist_sock(w->ctx, NET_REQ, o->coord, DIST_EP_REP, false,
			      &w->creq, err);
	/* Load the data before registering: a registered node must
	 * heartbeat, and a long silent load got workers declared lost
	 * before their first clock (the job then waited forever). */
	w->batch = w->want_batch = o->train.batch;
	w->lr_scale = w->want_lr = 1.0f;
	if (e == PX_OK && w->mf)
		return mf_setup(w, err);
	if (e == PX_OK && dist_partition_only(o)) {
		/* its partition only: a pass that checks the file and
		 * keeps where its rows begin; the rows come with one */
		uint64_t budget = (uint64_t)o->data_memory_mb << 20;

		if (o->data.train)
			e = data_window_open(&o->data, o->max_train, budget,
					     &w->train, &w->prep, err);
		else
			e = data_window_fashion_mnist(o->data_dir,
						      o->max_train, budget,
						      &w->train, err);
		if (e == PX_OK) {
			w->train.win->tick = read_tick;
			w->train.win->tick_arg = w;
		}
	} else if (e == PX_OK && o->data.train)
		e = data_load_train(&o->data, o->max_train, &w->train,
				    &w->prep, err);
	else if (e == PX_OK)
		e = data_load_fashion_mnist(o->data_dir, true, o->max_train,
					    &w->train, err);
	if (e == PX_OK)
		e = dist_model_desc(o, &w->prep, &w->d, err);
	if (e == PX_OK)
		e = train_sparse_pick(&o->train, &w->train, -1, &w->sparse,
				      err);
	if (e != PX_OK)
		return e;
	dist_logf(o, LOG_LVL_INFO, "worker %u: %s batches (density %.3g)",
		  o->node.v, w->sparse ? "sparse" : "dense",
		  data_density(&w->train));
	pb = w->d.n_params * sizeof(float);
	w->params = px_calloc(w->d.n_params, sizeof(float));
	w->grad = px_calloc(w->d.n_params, sizeof(float));
	w->base = px_calloc(w->d.n_params, sizeof(float));
	w->upd = px_calloc(w->d.n_params, sizeof(float));
	w->idx = px_calloc(w->train.n, sizeof(uint32_t));
	w->hidx = px_calloc(w->train.n, sizeof(uint32_t));
	w->hupd = px_calloc(w->d.n_params, sizeof(float));
	w->batch = w->want_batch = batch;
	w->lr_scale = w->want_lr = 1.0f;
	if (o->test_visits) {
		w->visits = px_calloc(w->train.n, sizeof(uint32_t));
		if (!w->visits)
			return px_errorf(err, PX_ENOMEM, "worker buffers");
	}
	w->h_x = px_calloc(w->sparse ? 1 : (size_t)batch * w->train.dim,
			   sizeof(float));
	w->h_y = px_calloc(batch, 1);
	if (!w->params || !w->grad || !w->base || !w->upd || !w->idx ||
	    !w->hidx || !w->hupd || !w->h_x || !w->h_y)
		return px_errorf(err, PX_ENOMEM, "worker buffers");
	if (o->train.device == TRAIN_DEV_CUDA) {
		e = w->ops->alloc(w->kctx, pb, (void **)&w->d_params, err);
		if (e == PX_OK)
			e = w->ops->alloc(w->kctx, pb, (void **)&w->d_grad,
					  err);
		if (e == PX_OK)
			e = w->ops->alloc(w->kctx, pb, (void **)&w->d_mom,
					  err);
		if (e == PX_OK)
			e = w->ops->zero(w->kctx, w->d_mom, pb, err);
		if (e == PX_OK)
			e = w->ops->alloc(w->kctx, (size_t)batch *
					  w->train.dim * sizeof(float),
					  (void **)&w->x, err);
		if (e == PX_OK)
			e = w->ops->alloc(w->kctx, batch, (void **)&w->y, err);
		if (e != PX_OK)
			return e;
	} else {
		w->ops = &kern_cpu_ops;
		kern_cpu_set_threads(o->train.threads > 0 ? o->train.threads
							  : 1);
		w->d_params = w->params;
		w->d_grad = w->grad;

		w->d_mom = px_calloc(w->d.n_params, sizeof(float));
		if (!w->d_mom)
			return px_errorf(err, PX_ENOMEM, "worker buffers");
		w->x = w->h_x;
		w->y = w->h_y;
	}
	e = model_ctx_new(&w->d, w->ops, w->kctx, batch, &w->mc, err);
	if (e != PX_OK)
		return e;
	return register_assign(w, register_wait_ms(w), err);
}

/* The coordinator declared this worker lost (it was stalled past the
 * heartbeat timeout) and forgot its session: register again, as a join
 * at the current minimum clock.  Without this the worker would wait for
 * a partition forever. */
static enum px_err rejoin(struct worker *w, struct px_error *err)
{
	enum px_err e;

	dist_logf(w->o, LOG_LVL_NOTICE,
		  "worker %u: declared lost at clock %" PRId64
		  ", registering again", w->o->node.v, w->clock);
	e = register_assign(w, 5000, err);
	if (e != PX_OK)
		return e;
	w->pushed = false;
	w->cache_ok = false;
	pulls_drop(w);
	w->have_min = false;
	w->n_offers = w->n_helps = 0; /* the coordinator dropped them */
	w->rejoins++;
	w->hotadd_ms = 0; /* report rejoin-to-first-push */
	w->t0_us = px_now_mono_us();
	w->rejoin_epoch = w->mb.epoch; /* that copy still says lost */
	w->last_coord = w->last_progress = px_now_mono_us();
	return PX_OK;
}

/* Whether the latest membership lists this worker as lost. */
static bool declared_lost(const struct worker *w)
{
	const struct dist_member *me = dist_members_find(&w->mb, w->o->node);

	return me && me->state == WIRE_MEMBER_LOST &&
	       w->mb.epoch > w->rejoin_epoch;
}

/* Watchdog: blocked on the SSP bound for a while, send the last CLOCK
 * again (a fresh frame; the coordinator ignores a clock it has), so a
 * lost CLOCK cannot stall the job. */
static void reclock(struct worker *w)
{
	uint64_t now = px_now_mono_us();
	struct px_error err;
	struct wire_msg m;

	if (!w->pushed || now - w->last_progress < DIST_WATCHDOG_US)
		return;
	w->last_progress = now;
	w->reclocks++;
	wire_msg_init(&m, WIRE_CLOCK, (struct wire_node){ DIST_COORD_NODE },
		      w->last_push);
	m.u.clock.samples = w->last_n;
	(void)net_send(w->cpush, &m, 100, &err);
	dist_logf(w->o, LOG_LVL_NOTICE,
		  "worker %u: no progress for %d ms at clock "
		  "%" PRId64 " (min %" PRId64 "), clock %" PRId64 " sent "
		  "again", w->o->node.v, DIST_WATCHDOG_US / 1000, w->clock,
		  w->clock_min, w->last_push);
}

static void release(struct worker *w)
{
	if (w->ops && w->ops != &kern_cpu_ops) {
		w->ops->free(w->kctx, w->d_params);
		w->ops->free(w->kctx, w->d_grad);
		w->ops->free(w->kctx, w->d_mom);
		w->ops->free(w->kctx, w->x);
		w->ops->free(w->kctx, w->y);
	}
	model_ctx_free(w->mc);
	kern_cuda_free(w->cuda);
	if (w->ops == &kern_cpu_ops)
		free(w->d_mom);
	free(w->params);
	free(w->grad);
	free(w->base);
	free(w->upd);
	free(w->idx);
	free(w->hidx);
	free(w->hupd);
	free(w->visits);
	free(w->h_x);
	free(w->h_y);
	data_csr_free(&w->xs);
	data_release(&w->train);
	data_prep_release(&w->prep);
	mf_set_release(&w->ratings);
	mf_grad_free(w->mg);
	free(w->cidx);
	free(w->cb);
	free(w->rows);
	free(w->lids);
	free(w->rbuf);
	free(w->mark);
	pulls_drop(w);
	for (uint32_t s = 0; s < DIST_MAX_SHARDS; s++)
		net_close(w->pq[s]);
	dist_links_close(&w->links);
	net_close(w->sub);
	net_close(w->creq);
	net_close(w->cpush);
	wire_ctx_free(w->ctx);
}

/* Told to leave by a signal (it says so to the coordinator) or by the
 * coordinator (which moved its partition already). */
static void start_leave(struct worker *w, bool told)
{
	struct px_error err;
	struct wire_msg m;

	w->leaving = true;
	if (told) {
		dist_logf(w->o, LOG_LVL_NOTICE, "worker %u leaving at clock "
			  "%" PRId64 " (the coordinator says so)",
			  w->o->node.v, w->clock);
		return;
	}
	wire_msg_init(&m, WIRE_LEAVE, (struct wire_node){ DIST_COORD_NODE },
		      w->clock);
	m.u.leave.deadline_us = dist_leave_deadline_us(w->o);
	m.u.leave.reason = dist_leave_reason(w->o);
	(void)net_send(w->cpush, &m, 100, &err);
	dist_logf(w->o, LOG_LVL_INFO,
		  "worker %u leaving at clock %" PRId64 ", gone in "
		  "%.1f s", w->o->node.v, w->clock,
		  (double)(m.u.leave.deadline_us - px_now_wall_us()) / 1e6);
}

/* --test-visits: how often this worker trained each example, one count
 * a line, to DIR/visits.NODE (written whole, then renamed). */
static enum px_err write_visits(const struct worker *w, struct px_error *err)
{
	char path[4096], tmp[4200];
	FILE *f;
	bool ok;

	if ((size_t)snprintf(path, sizeof path, "%s/visits.%u",
			     w->o->test_visits, w->o->node.v) >= sizeof path)
		return px_errorf(err, PX_EINVAL, "--test-visits: '%s' too "
				 "long", w->o->test_visits);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return px_errorf(err, PX_EIO, "%s: %s", tmp, strerror(errno));
	for (uint32_t i = 0; i < w->train.n; i++)
		fprintf(f, "%u\n", w->visits[i]);
	ok = !ferror(f);
	ok = fclose(f) == 0 && ok;
	if (!ok || rename(tmp, path) != 0)
		return px_errorf(err, PX_EIO, "%s: %s", path, strerror(errno));
	return PX_OK;
}

enum px_err dist_worker_run(const struct dist_opts *o, struct px_error *err)
{
	struct worker *w = px_calloc(1, sizeof(*w));
	enum px_err e;

	if (!w)
		return px_errorf(err, PX_ENOMEM, "worker");
	w->o = o;
	w->mf = o->train.model == MODEL_MF;
	w->t0_us = px_now_mono_us();
	e = setup(w, err);
	if (e != PX_OK)
		goto out_free;
	w->next_hb = w->last_coord = w->last_progress = px_now_mono_us();
	while (!w->shutdown) {
		uint32_t n;

		/* a straggler's minibatches first: its clock waits (a
		 * leaving worker too: they are handed over already) */
		e = help_all(w, err);
		if (e != PX_OK)
			break;
		if (o->stop && *o->stop && !w->leaving)
			start_leave(w, false);
		else if (w->told && !w->leaving)
			start_leave(w, true);
		if (w->leaving) {
			/* Partition handed off once the coordinator
			 * dropped us from the holders. */
			const struct dist_member *me =
				dist_members_find(&w->mb, o->node);

			pump(w, 20);
			if (!me || me->state != WIRE_MEMBER_ACTIVE)
				break;
			continue;
		}
		if (px_now_mono_us() - w->last_coord > 5000000) {
			e = px_errorf(err, PX_ETIMEDOUT, "coordinator silent "
				      "for 5 s");
			break;
		}
		if (declared_lost(w)) {
			e = rejoin(w, err);
			if (e != PX_OK)
				break;
			continue;
		}

		/* Ready: a map, a partition, and within the SSP bound. */
		if (!w->stage_epoch || !w->have_min || !partition(w) ||
		    w->clock >= w->total ||
		    w->clock - w->clock_min > (int64_t)o->slack) {
			if (w->stage_epoch && w->have_min &&
			    w->clock < w->total)
				reclock(w);
			pump(w, 20);
			continue;
		}
		if (w->clock < w->clock_min)
			w->clock = w->clock_min; /* joined behind */
		pump(w, 0);
		if (w->mf) {
			bool ok;

			e = mf_clock(w, &n, &ok, err);
			if (e != PX_OK)
				break;
			if (!ok) {
				pump(w, 10);
				continue;
			}
		} else {
			if (!sync_params(w)) {
				pump(w, 10);
				continue;
			}
			e = compute(w, &n, err);
			if (e == PX_OK)
				e = push_all(w, n, err);
			if (e != PX_OK)
				break;
		}
		w->pushed = true;
		w->last_push = w->clock;
		w->last_progress = px_now_mono_us();
		w->last_n = n;
		if (!w->hotadd_ms) {
			uint64_t ms = (px_now_mono_us() - w->t0_us) / 1000;

			w->hotadd_ms = ms ? (uint32_t)ms : 1;
			heartbeat(w);
		}
		w->clock++;
	}
	dist_logf(o, LOG_LVL_NOTICE,
		  "worker %u done at clock %" PRId64 ": %" PRIu64
		  " clocks pulled, %" PRIu64 " took a prefetch, %" PRIu64
		  " on the copy alone; %u rejoins, %u clocks re-sent; %"
		  PRIu64 " minibatches handed over, %" PRIu64 " trained for "
		  "stragglers", o->node.v, w->clock, w->pulls, w->prefetches,
		  w->cached, w->rejoins, w->reclocks, w->handed, w->helped);
	if (w->train.win) {
		const struct data_window *dw = w->train.win;

		dist_logf(o, LOG_LVL_NOTICE, "worker %u data: %s batches; "
			  "rows [%u, %u) of %u last, at most %u held at once "
			  "(%u a chunk), %" PRIu64 " reads of %" PRIu64
			  " rows", o->node.v, w->sparse ? "sparse" : "dense",
			  dw->lo, dw->hi, w->train.n, dw->max_held,
			  dw->chunk, dw->reads, dw->rows_read);
	}
	if (e == PX_OK && w->visits)
		e = write_visits(w, err);
	dist_log_wire(o, LOG_LVL_NOTICE, "worker", w->ctx);
out_free:
	release(w);
	free(w);
	return e;
}
