/* dist_coord.c -- the coordinator: admits nodes (handshake, ASSIGN),
 * tracks membership and heartbeats, places shards per stage, computes the
 * SSP clock, declares losses, evaluates the model and reports progress.
 * One thread, one nn_poll loop.
 */
#include "dist_int.h"

#include <inttypes.h>
#include <math.h>
#include <jansson.h>
#include <nanomsg/nn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/jsonout.h"
#include "../io/ckpt.h"
#include "../io/export.h"
#include "../io/data.h"
#include "../compute/mf.h"
#include "../io/ratings.h"
#include "../compute/goodput.h"
#include "../compute/model.h"

/* Nodes the agent may name at once (EXPECT), oldest first.  More than the
 * members: a node named is not always a node that comes (its instance was
 * refused, or failed to start, and the agent does not say so), and a
 * fleet's start names every node of every instance before any comes
 * (1002 for 500 instances of a PS and a worker). */
#define COORD_MAX_EXPECT (2 * DIST_MAX_NODES)

struct cmember {
	struct wire_member w;      /* as broadcast */
	uint64_t last_us;          /* last frame from it, monotonic */
	int64_t next_clock;        /* workers: next clock to run */
	bool late;                 /* registered after the start */
	bool hotadd_seen;          /* its hot-add latency was counted */
	bool clocked;              /* a worker's first clock came */
	bool silent;               /* a sole-copy PS past the heartbeat
				      timeout, waited for */
	/* workers: progress and speed, from their heartbeats */
	float speed;               /* minibatches per second training */
	int64_t prog_clock;        /* the clock of the last progress */
	uint32_t prog_done, prog_end; /* minibatches done, and where the
				      clock ends (less those handed over) */
	uint64_t prog_us;          /* when it came */
	uint64_t handed, helped;   /* minibatches handed over (trained by
				      helpers), and trained for others */
	bool was_slow;             /* counted slow at the last report */
};

/* Straggler relief (docs/trainer.md, "Stragglers"): an OFFER sent and
 * not answered yet, or a HELP passed on whose DONE has not come.  The
 * straggler's clock is not done until its helps are. */
#define COORD_RELIEF_MAX 256
#define COORD_OFFER_US 1000000   /* an unanswered offer is void after */

struct relief {
	struct wire_node straggler, helper;
	int64_t clock;
	uint32_t first, count;
	uint64_t since_us;
	bool helping;              /* HELP passed on: DONE awaited */
};

struct coord {
	const struct dist_opts *o;
	struct wire_ctx *ctx;
	struct net_sock *rep, *pull, *pub;
	struct net_sock *agent;    /* PUSH to the agent (PROGRESS), or NULL */
	bool agent_known;          /* the agent registered (its session) */
	uint64_t progress_sent;    /* PROGRESS frames sent */
	bool progress_now;         /* a member leaves: the agent hears it
				    * now, not at the next second's report */
	struct dist_links links;
	uint64_t alive_next_us;    /* keep_alive's next sign of life */
	struct cmember m[DIST_MAX_NODES];
	uint32_t n;
	uint64_t epoch;            /* membership epoch */
	uint8_t stage;
	uint32_t stage_epoch;
	struct wire_shard map[DIST_MAX_SHARDS];
	uint32_t nshards;
	bool started;
	int64_t min_clock, total;  /* total: the job's clocks at the start
				    * (the checkpoint's shape) */
	/* The job's length is epochs passes over the training set; in
	 * clocks that depends on how many workers share a clock, so when
	 * their number changes the last clock is foreseen anew from the
	 * samples left (total_est), and the lr schedule and evaluations
	 * follow it. */
	uint64_t total_samples;
	uint64_t samples_base;     /* done before a resume */
	int64_t total_est;         /* the last clock as now foreseen */
	uint32_t est_workers;      /* workers total_est was foreseen for */
	int64_t clocks_per_epoch;  /* with est_workers */
	/* commands of the agent (proteusd) */
	uint8_t want_stage;        /* 0: none */
	bool expecting;            /* only expected nodes may register */
	uint32_t last_deferred;    /* node last told to wait (logged once) */
	struct { struct wire_node node; uint8_t roles; }
		expect[COORD_MAX_EXPECT];
	uint32_t n_expect;
	uint64_t nparams;
	uint32_t n_train;
	/* measurements */
	uint64_t t0_us, t_start_us, t_end_us, last_adv_us, stall_from_us;
	bool recovering;
	bool stall_warned;         /* the watchdog warned for this stall */
	uint64_t samples;
	uint32_t joins, losses, leaves, promotions, stage_changes;
	int64_t max_staleness;
	double recovery_ms_max, hotadd_ms_max;
	double last_loss, last_acc;
	/* evaluation */
	struct data_set test;
	struct model_desc d;
	struct model_ctx *mc;
	float *params;
	/* checkpoints */
	struct ckpt_meta meta;     /* this job's shape */
	struct data_prep prep;     /* what the training set fixes */
	float *mom;                /* a checkpoint's momentum: zeros (the
				      optimizer's runs on the workers) */
	float *ck_w, *ck_v;        /* --resume: what the PS nodes fetch */
	/* partial recovery: the last whole state pulled (an evaluation's
	 * or a checkpoint's), from which a shard with no copy left is
	 * reloaded on another PS while the others keep theirs */
	float *snap;
	int64_t snap_clock;        /* its clock; -1: none yet */
	bool reload[DIST_MAX_SHARDS]; /* served from snap, not ck_w ... */
	struct wire_node reload_to[DIST_MAX_SHARDS]; /* ... to this PS (a
				      later holder gets its state from it) */
	uint32_t partials;         /* shards reloaded so */
	/* the active PS of a shard asking here for its state (it has none
	 * and its backup, if any, gave none): since when, and when last */
	struct {
		struct wire_node node;
		uint64_t since_us, last_us;
	} orphan[DIST_MAX_SHARDS];
	bool measuring;            /* an --eval-every evaluation: a
				      measurement, neither a checkpoint
				      nor a snapshot */
	int64_t pulled_at;         /* c->params holds every update before
				      this clock ... */
	uint64_t pulled_samples;   /* ... after this many samples */
	int64_t resumed_from;      /* clock resumed at; -1: a fresh job */
	int64_t ckpt_clock;        /* clock of the last checkpoint; -1 */
	uint32_t ckpts;            /* checkpoints written */
	uint32_t ckpts_incr;       /* ... of them incremental records */
	uint64_t ckpt_bytes;       /* bytes they wrote */
	struct ckpt_chain chain;   /* what the files hold (ckpt.h) */
	/* straggler relief */
	struct relief relief[COORD_RELIEF_MAX];
	uint32_t n_relief;
	uint64_t reassigned;       /* minibatches trained by helpers */
	uint64_t relief_lost;      /* handed over, never reported done */
	float median_speed;        /* of the workers, last report */
	struct gp gp;              /* goodput, co-adaptation (goodput.h) */
	uint32_t est_batch;        /* the minibatch total_est is for */
	uint32_t est_kb;           /* ... and the clock's length */
	bool done;
	struct wire_member list[DIST_MAX_NODES]; /* MEMBERSHIP scratch */
	/* --model mf (docs/trainer.md, "Matrix factorization"): the
	 * ratings, the model's shape; last_loss is the test RMSE, last_acc
	 * NaN until evaluated, then 0 (no accuracy) */
	bool mf;
	struct mf_desc md;
	struct mf_set mtrain, mtest;
	uint8_t *seen;             /* rows with a training rating */
	double train_rmse;         /* of the last evaluation; NaN: none */
	uint64_t row_bytes;        /* the workers' sparse traffic (CLOCK) */
	uint64_t row_frames, rows;
};

static void out(struct coord *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void out(struct coord *c, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (c->o->json)
		dist_logf(c->o, LOG_LVL_INFO, "%s", buf);
	else
		dprintf(c->o->out_fd, "%s\n", buf);
}

static struct cmember *find(struct coord *c, struct wire_node n)
{
	for (uint32_t i = 0; i < c->n; i++)
		if (wire_node_eq(c->m[i].w.node, n))
			return &c->m[i];
	return NULL;
}

static void member_leaving(struct coord *c, struct cmember *mb,
			   uint8_t reason, int64_t deadline_us);

static bool alive(const struct cmember *m)
{
	return m->w.state == WIRE_MEMBER_ACTIVE ||
	       m->w.state == WIRE_MEMBER_JOINING;
}

static bool is_ps(const struct cmember *m)
{
	return m->w.roles & (WIRE_ROLE_PS_ACTIVE | WIRE_ROLE_PS_BACKUP) &&
	       !(m->w.roles & WIRE_ROLE_WORKER);
}

static bool is_worker(const struct cmember *m)
{
	return m->w.roles & WIRE_ROLE_WORKER;
}

/* For the log: a member with no role is a stub node (`node --stub`),
 * which only heartbeats. */
static const char *role_name(const struct cmember *m)
{
	return is_ps(m) ? "ps" : is_worker(m) ? "worker" : "stub";
}

/* Whether a worker holds a partition and counts for the SSP clock. */
static bool counts(const struct coord *c, const struct cmember *m)
{
	return is_worker(m) && m->w.state == WIRE_MEMBER_ACTIVE &&
	       !(c->stage == 3 && (m->w.roles & WIRE_ROLE_PS_BACKUP));
}

/* The workers that hold a partition now. */
static uint32_t holders(const struct coord *c)
{
	uint32_t w = 0;

	for (uint32_t i = 0; i < c->n; i++)
		w += counts(c, &c->m[i]);
	return w;
}

static uint64_t samples_done(const struct coord *c)
{
	return c->samples_base + c->samples;
}

/* Co-adaptation (docs/trainer.md, "Goodput and co-adaptation"): the
 * batch and lr factor for w workers, decided anew when w changed or the
 * noise scale became known; the workers take them from CLOCK_MIN at
 * their next clock. */
static void co_adapt(struct coord *c, uint32_t w)
{
	const struct gp_sample *d;
	char phi[32];

	if (!c->started ||
	    !gp_decide(&c->gp, w, c->min_clock,
		       (double)(px_now_mono_us() - c->t_start_us) / 1e6))
		return;
	d = &c->gp.ev[c->gp.n_ev - 1];
	out(c, "co-adapt at clock %" PRId64 ": %u workers, batch %u, lr x%.3f"
	    ", %u minibatches a clock (noise scale %s)", c->min_clock, w,
	    c->gp.batch, c->gp.lr_scale, c->gp.kb,
	    gns_format(d->noise_scale, phi, sizeof phi));
}

/* Foresee the last clock anew when the number of workers sharing a
 * clock (or their minibatch) changed: the samples left, at this many workers' clocks per
 * epoch.  A job whose workers never change keeps the clock count it
 * started with. */
static void reestimate(struct coord *c)
{
	uint32_t w = holders(c), b, kb;
	uint64_t done = samples_done(c), left;
	int64_t bpe, cpe;

	co_adapt(c, w);
	b = c->gp.batch;
	kb = c->gp.kb;
	if (!w || (w == c->est_workers && b == c->est_batch &&
		   kb == c->est_kb) || !c->n_train)
		return;
	/* minibatches per epoch for each worker, and clocks of them */
	bpe = dist_total_clocks(c->n_train, w, 1, b);
	cpe = dist_job_clocks(c->n_train, w, 1, b, kb);
	left = done < c->total_samples ? c->total_samples - done : 0;
	c->est_workers = w;
	c->est_batch = b;
	c->est_kb = kb;
	c->clocks_per_epoch = cpe > 0 ? cpe : 1;
	c->total_est = c->min_clock +
		       (int64_t)ceil((double)left * (double)bpe /
				     ((double)c->n_train * kb));
}

static void broadcast(struct coord *c, struct wire_msg *m)
{
	struct px_error err;

	if (net_send(c->pub, m, 100, &err) != PX_OK)
		dist_logf(c->o, LOG_LVL_WARN, "broadcast %s: %s",
			  wire_type_name(m->hdr.type), err.msg);
}

static void send_membership(struct coord *c)
{
	struct wire_member *list = c->list;
	struct wire_msg m;
	uint32_t k = 0;

	for (uint32_t i = 0; i < c->n; i++) {
		list[k] = c->m[i].w;
		list[k].speed = 0; /* PROGRESS's */
		list[k++].slow = 0;
	}
	wire_msg_init(&m, WIRE_MEMBERSHIP, WIRE_NODE_ALL, c->min_clock);
	m.u.membership.epoch = c->epoch;
	m.u.membership.n = k;
	m.u.membership.members = list;
	broadcast(c, &m);
}

static void send_stage(struct coord *c)
{
	struct wire_msg m;

	if (!c->stage_epoch)
		return;
	wire_msg_init(&m, WIRE_STAGE, WIRE_NODE_ALL, c->min_clock);
	m.u.stage.stage = c->stage;
	m.u.stage.epoch = c->stage_epoch;
	m.u.stage.at_clock = c->min_clock;
	m.u.stage.nshards = c->nshards;
	m.u.stage.shards = c->map;
	broadcast(c, &m);
}

/* goodput.h bounds the clock's length without dist.h */
_Static_assert(GP_CLOCK_BATCHES_MAX == DIST_CLOCK_BATCHES_MAX,
	       "goodput.h's bound on a clock is dist.h's");

static void send_clock_min(struct coord *c)
{
	struct wire_msg m;

	wire_msg_init(&m, WIRE_CLOCK_MIN, WIRE_NODE_ALL, c->min_clock);
	m.u.clock_min.min_clock = c->min_clock;
	m.u.clock_min.total_clock = c->total_est;
	m.u.clock_min.staleness = c->o->slack;
	m.u.clock_min.batch = c->gp.batch;
	m.u.clock_min.lr_scale = (float)c->gp.lr_scale;
	m.u.clock_min.clock_batches = (uint16_t)c->gp.kb;
	broadcast(c, &m);
}

static void announce(struct coord *c)
{
	if (c->started)
		reestimate(c);
	send_membership(c);
	send_stage(c);
	send_clock_min(c);
}

/* Place every shard anew for the current stage over the live PS nodes
 * (a join, a graceful leave, a stage change). */
static void replace_all(struct coord *c)
{
	struct wire_node ps[DIST_MAX_NODES];
	bool rel[DIST_MAX_NODES];
	uint32_t nps = 0;

	for (uint32_t i = 0; i < c->n; i++) {
		if (!is_ps(&c->m[i]) || !alive(&c->m[i]))
			continue;
		ps[nps] = c->m[i].w.node;
		rel[nps++] = c->m[i].w.roles & WIRE_ROLE_PS_BACKUP;
	}
	if (c->mf)
		dist_place_rows(c->stage, ps, rel, nps,
				c->nparams / c->md.row, c->md.row,
				c->nshards, c->map);
	else
		dist_place(c->stage, ps, rel, nps, c->nparams, c->nshards,
			   c->map);
	c->stage_epoch++;
}

/* A live reliable PS other than not, for a new backup. */
static struct wire_node pick_backup(struct coord *c, struct wire_node not,
				    uint32_t s)
{
	struct wire_node r[DIST_MAX_NODES];
	uint32_t nr = 0;

	for (uint32_t i = 0; i < c->n; i++) {
		const struct cmember *m = &c->m[i];

		if (is_ps(m) && alive(m) && (m->w.roles & WIRE_ROLE_PS_BACKUP)
		    && !wire_node_eq(m->w.node, not))
			r[nr++] = m->w.node;
	}
	return nr ? r[s % nr] : WIRE_NODE_ALL;
}

/* A live PS other than not to hold shard s anew (its copies lost),
 * or WIRE_NODE_ALL. */
static struct wire_node pick_holder(struct coord *c, struct wire_node not,
				    uint32_t s)
{
	struct wire_node r[DIST_MAX_NODES];
	uint32_t nr = 0;

	for (uint32_t i = 0; i < c->n; i++) {
		const struct cmember *m = &c->m[i];

		if (is_ps(m) && alive(m) &&
		    m->w.state != WIRE_MEMBER_LEAVING &&
		    !wire_node_eq(m->w.node, not))
			r[nr++] = m->w.node;
	}
	return nr ? r[s % nr] : WIRE_NODE_ALL;
}

/* A PS is gone without handing off: promote backups of its shards.  A
 * shard with no backup is reloaded on another PS from the last state
 * pulled (partial recovery: the other shards keep their values).
 * Returns false when a shard has no copy left and cannot be reloaded
 * (no state pulled yet, or no PS left). */
static bool ps_lost(struct coord *c, struct wire_node n)
{
	bool ok = true;

	for (uint32_t s = 0; s < c->nshards; s++) {
		struct wire_shard *sh = &c->map[s];

		if (wire_node_eq(sh->active, n)) {
			if (wire_node_eq(sh->backup, WIRE_NODE_ALL)) {
				struct wire_node h = pick_holder(c, n, s);

				if (c->o->no_partial || c->snap_clock < 0 ||
				    wire_node_eq(h, WIRE_NODE_ALL)) {
					ok = false;
					continue;
				}
				sh->active = h;
				sh->backup = pick_backup(c, h, s);
				c->reload[s] = true;
				c->reload_to[s] = h;
				c->partials++;
				out(c, "shard %u: no copy left: reloaded on PS "
				    "%u from the state of clock %" PRId64
				    " (partial recovery)", s, h.v,
				    c->snap_clock);
				continue;
			}
			sh->active = sh->backup;
			sh->backup = pick_backup(c, sh->active, s);
			c->promotions++;
			out(c, "shard %u: backup %u promoted to active", s,
			    sh->active.v);
		} else if (wire_node_eq(sh->backup, n)) {
			sh->backup = pick_backup(c, sh->active, s);
		}
	}
	c->stage_epoch++;
	return ok;
}

static void recompute_clock(struct coord *c)
{
	int64_t mn = INT64_MAX;
	uint64_t now = px_now_mono_us();

	for (uint32_t i = 0; i < c->n; i++)
		if (counts(c, &c->m[i]) && c->m[i].next_clock < mn)
			mn = c->m[i].next_clock;
	/* a clock with minibatches handed over is done when they are */
	for (uint32_t i = 0; i < c->n_relief; i++)
		if (c->relief[i].helping && c->relief[i].clock < mn)
			mn = c->relief[i].clock;
	if (mn == INT64_MAX || mn <= c->min_clock)
		return;
	c->min_clock = mn;
	if (c->recovering) {
		double ms = (double)(now - c->stall_from_us) / 1000.0;

		if (ms > c->recovery_ms_max)
			c->recovery_ms_max = ms;
		out(c, "progress again %.0f ms after the last clock before "
		    "the loss", ms);
		c->recovering = false;
	}
	c->last_adv_us = now;
	c->stall_warned = false;
	send_clock_min(c);
}

static void relief_drop(struct coord *c, uint32_t i, const char *why);

static void mark_gone(struct coord *c, struct cmember *m, bool lost)
{
	bool was_leaving = m->w.state == WIRE_MEMBER_LEAVING;

	/* its helps will not come: the straggler's clock goes on (a lost
	 * worker's clock is lost likewise) */
	for (uint32_t i = 0; i < c->n_relief; i++)
		if (wire_node_eq(c->relief[i].helper, m->w.node))
			relief_drop(c, i--, "its helper is gone");

	m->w.state = WIRE_MEMBER_LOST;
	wire_peer_forget(c->ctx, m->w.node);
	c->epoch++;
	if (lost && !was_leaving) {
		c->losses++;
		if (!c->recovering) {
			c->recovering = true;
			c->stall_from_us = c->last_adv_us;
		}
	}
	if (is_ps(m) && c->started) {
		if (!ps_lost(c, m->w.node)) {
			out(c, "PS %u lost with a shard that has no backup",
			    m->w.node.v);
			c->done = true;
		}
	}
	recompute_clock(c);
	announce(c);
}

/* The first shard whose only copy node n holds (active, no backup), or
 * -1. */
static int sole_copy(const struct coord *c, struct wire_node n)
{
	for (uint32_t s = 0; s < c->nshards; s++)
		if (wire_node_eq(c->map[s].active, n) &&
		    wire_node_eq(c->map[s].backup, WIRE_NODE_ALL))
			return (int)s;
	return -1;
}

static enum px_err check_timeouts(struct coord *c, uint64_t now)
{
	uint64_t lim = (uint64_t)c->o->hb_timeout_ms * 1000;

	for (uint32_t i = 0; i < c->n; i++) {
		struct cmember *m = &c->m[i];
		int s;

		if (m->w.state == WIRE_MEMBER_LOST || now - m->last_us <= lim)
			continue;
		/* Declaring this PS lost would lose a shard and end the job;
		 * a reliable node silent this long is far likelier stalled
		 * than gone: wait for it (the watchdog bounds the wait). */
		if (c->started && is_ps(m) &&
		    m->w.state != WIRE_MEMBER_LEAVING &&
		    (s = sole_copy(c, m->w.node)) >= 0) {
			if (!m->silent)
				out(c, "PS %u silent for %" PRIu64 " ms holds "
				    "the only copy of shard %d: waiting for it"
				    " (--stall-timeout bounds the wait)",
				    m->w.node.v, (now - m->last_us) / 1000,
				    s);
			m->silent = true;
			continue;
		}
		out(c, "node %u (%s) %s: no heartbeat for %" PRIu64 " ms",
		    m->w.node.v, role_name(m),
		    m->w.state == WIRE_MEMBER_LEAVING ? "left" : "lost",
		    (now - m->last_us) / 1000);
		mark_gone(c, m, true);
	}
	return PX_OK;
}

/* Partition index of a worker among the holders (sorted by node). */
static void partition_of(struct coord *c, struct wire_node n,
			 uint64_t *ret_first, uint64_t *ret_count)
{
	uint32_t k = 0, idx = 0, lo, hi;

	for (uint32_t i = 0; i < c->n; i++) {
		if (!counts(c, &c->m[i]))
			continue;
		k++;
		if (c->m[i].w.node.v < n.v)
			idx++;
	}
	*ret_first = *ret_count = 0;
	if (k && data_partition(c->n_train, k, idx, &lo, &hi, NULL) ==
			 PX_OK) {
		*ret_first = lo;
		*ret_count = hi - lo;
	}
}

static void maybe_start(struct coord *c)
{
	uint32_t nw = 0, nps = 0, nrel = 0;
	bool rel_expected = false;

	if (c->started)
		return;
	for (uint32_t i = 0; i < c->n; i++) {
		if (!alive(&c->m[i]))
			continue;
		if (is_ps(&c->m[i])) {
			nps++;
			nrel += !!(c->m[i].w.roles & WIRE_ROLE_PS_BACKUP);
		} else if (is_worker(&c->m[i])) {
			nw++;
		}
	}
	/* a reliable node's PS is expected (the agent said so): the
	 * shards start there, not on whichever transient PS registered
	 * first (after a restart the nodes come back in any order, and a
	 * shard placed on a transient PS alone has no backup to go to) */
	for (uint32_t i = 0; c->expecting && i < c->n_expect; i++)
		rel_expected |= (c->expect[i].roles & WIRE_ROLE_PS_BACKUP) &&
				!(c->expect[i].roles & WIRE_ROLE_WORKER);
	if (nps < c->o->ps || nw < c->o->workers || (rel_expected && !nrel))
		return;
	c->started = true;
	replace_all(c);
	c->t_start_us = c->last_adv_us = px_now_mono_us();
	out(c, "job started: %u workers, %u PS, %u shards, stage %u, "
	    "%" PRId64 " clocks", nw, nps, c->nshards, c->stage, c->total);
	c->epoch++;
	announce(c);
	if (c->o->ready_fd >= 0) {
		/* tell the launcher (churn clocks start now) */
		if (write(c->o->ready_fd, "s", 1) != 1)
			dist_logf(c->o, LOG_LVL_WARN, "ready fd: write failed");
		close(c->o->ready_fd);
	}
}

/* The agent registered (handshake done, its session installed): it gets
 * an ACK, not an ASSIGN, and is no member of the job. */
static void on_agent_register(struct coord *c, struct wire_msg *req)
{
	struct px_error err;

	c->agent_known = true;
	out(c, "agent %u registered for progress", req->hdr.sender.v);
	if (dist_ack(c->rep, req, c->min_clock, PX_OK, &err, "%s", "") !=
	    PX_OK)
		dist_logf(c->o, LOG_LVL_WARN, "ack to the agent: %s", err.msg);
}

/* PROGRESS to the agent: clock, throughput, last test loss and accuracy,
 * and the membership. */
static void send_progress(struct coord *c, double rate)
{
	struct wire_msg m;
	struct px_error err;

	if (!c->agent || !c->agent_known)
		return;
	for (uint32_t i = 0; i < c->n; i++)
		c->list[i] = c->m[i].w;
	wire_msg_init(&m, WIRE_PROGRESS,
		      (struct wire_node){ DIST_AGENT_NODE }, c->min_clock);
	m.u.progress.clock = c->min_clock;
	m.u.progress.samples_per_s = (float)rate;
	m.u.progress.loss = (float)c->last_loss;
	m.u.progress.accuracy = c->mf ? NAN : (float)c->last_acc;
	m.u.progress.train_rmse = c->mf ? (float)c->train_rmse : 0.0f;
	m.u.progress.stage = c->stage;
	m.u.progress.epoch = c->epoch;
	m.u.progress.samples = samples_done(c);
	m.u.progress.total_samples = c->total_samples;
	m.u.progress.total_clock = c->total_est;
	m.u.progress.goodput = (float)c->gp.goodput;
	m.u.progress.efficiency = (float)c->gp.efficiency;
	m.u.progress.noise_scale = (float)gns_scale(&c->gp.gns);
	m.u.progress.batch = c->gp.batch;
	m.u.progress.lr_scale = (float)c->gp.lr_scale;
	m.u.progress.n = c->n;
	m.u.progress.members = c->list;
	if (net_send(c->agent, &m, 100, &err) == PX_OK)
		c->progress_sent++;
	else
		dist_logf(c->o, LOG_LVL_WARN,
			  "progress to the agent: %s", err.msg);
}

/* Once the agent named the nodes it starts (EXPECT), only those may
 * register, each with at most the roles it was given (a spot instance's
 * node cannot claim a reliable node's BackupPS).  NULL when n may come
 * in, else why not. */
static const char not_expected[] = "not a node the agent started";

static const char *expected(const struct coord *c, struct wire_node n,
			    uint8_t roles)
{
	if (!c->expecting)
		return NULL;
	for (uint32_t i = 0; i < c->n_expect; i++)
		if (wire_node_eq(c->expect[i].node, n))
			return roles & ~c->expect[i].roles ?
				       "roles beyond what the agent granted" :
				       NULL;
	return not_expected;
}

static void on_register(struct coord *c, struct wire_msg *req)
{
	const struct wire_register *r = &req->u.reg;
	struct cmember *m = find(c, req->hdr.sender);
	struct px_error err;
	struct wire_msg a;

	bool rejoin = m && m->w.state == WIRE_MEMBER_LOST;
	const char *why = expected(c, req->hdr.sender, r->roles);

	if (why == not_expected) {
		/* no answer: the agent's EXPECT may still be on its way;
		 * the node asks again until its registration times out */
		if (c->last_deferred != req->hdr.sender.v)
			dist_logf(c->o, LOG_LVL_INFO,
				  "node %u: %s (yet): waiting",
				  req->hdr.sender.v, why);
		c->last_deferred = req->hdr.sender.v;
		return;
	}
	if (why) {
		out(c, "node %u refused: %s", req->hdr.sender.v, why);
		(void)dist_ack(c->rep, req, c->min_clock, PX_EPROTO, &err,
			       "%s", why);
		return;
	}
	if (!m && c->n < DIST_MAX_NODES)
		m = &c->m[c->n++];
	/* a long job with churn: a lost node's slot takes the new one */
	for (uint32_t i = 0; !m && i < c->n; i++)
		if (c->m[i].w.state == WIRE_MEMBER_LOST)
			m = &c->m[i];
	if (!m) {
		(void)dist_ack(c->rep, req, c->min_clock, PX_ETOOBIG, &err,
			       "full");
		return;
	}
	memset(m, 0, sizeof(*m));
	m->w.node = req->hdr.sender;
	m->w.roles = r->roles;
	m->w.state = WIRE_MEMBER_ACTIVE;
	m->w.session = req->hdr.session;
	m->w.floor = req->hdr.seq;
	snprintf(m->w.addr, sizeof(m->w.addr), "%s", r->addr);
	m->last_us = px_now_mono_us();
	m->next_clock = c->min_clock;
	m->late = c->started;
	c->epoch++;
	if (c->started)
		c->joins++;
	out(c, "node %u registered as %s%s", m->w.node.v,
	    role_name(m), rejoin ? " (rejoin after a loss)" :
	    m->late ? " (join)" : "");
	if (c->started && is_ps(m))
		replace_all(c);
	wire_msg_init(&a, WIRE_ASSIGN, req->hdr.sender, c->min_clock);
	if (c->ck_w && !c->started && is_ps(m))
		a.hdr.flags |= WIRE_F_RESUME; /* state from us, not seeded */
	a.u.assign.roles = r->roles;
	a.u.assign.stage = c->stage;
	a.u.assign.staleness = c->o->slack;
	a.u.assign.clock_batches = (uint16_t)c->o->clock_batches;
	a.u.assign.start_clock = c->min_clock;
	a.u.assign.nparams = c->nparams;
	a.u.assign.nshards = c->stage_epoch ? c->nshards : 0;
	a.u.assign.shards = c->map;
	if (is_worker(m))
		partition_of(c, m->w.node, &a.u.assign.part_first,
			     &a.u.assign.part_count);
	if (net_send(c->rep, &a, 100, &err) != PX_OK)
		dist_logf(c->o, LOG_LVL_WARN,
			  "assign to %u: %s", m->w.node.v, err.msg);
	maybe_start(c);
	if (c->started)
		announce(c);
}

/* Whether shard s's active PS n, asking here for its state, has been
 * without one past the wait: its hand-over was lost (the shard's only
 * copy was in flight when its old holder let it go: a snapshot that
 * never came, or came before a map and was dropped), and nothing else
 * will give it one.  A PS without state asks every heartbeat; a gap
 * of a second (or five heartbeats) starts the wait again.  The wait is
 * the heartbeat timeout, at least 2 s: a hand-over slower than that
 * from a live holder is one the job would have declared lost. */
static bool orphaned(struct coord *c, uint32_t s, struct wire_node n,
		     uint64_t now)
{
	uint64_t gap = (uint64_t)c->o->hb_ms * 5000, wait =
		       (uint64_t)c->o->hb_timeout_ms * 1000;

	if (gap < 1000000)
		gap = 1000000;
	if (wait < 2000000)
		wait = 2000000;
	if (!wire_node_eq(c->orphan[s].node, n) ||
	    now - c->orphan[s].last_us > gap) {
		c->orphan[s].node = n;
		c->orphan[s].since_us = now;
	}
	c->orphan[s].last_us = now;
	return now - c->orphan[s].since_us >= wait;
}

/* A PS of a resumed job fetches the state of its first shards here: the
 * checkpoint's parameters; and a PS given a shard whose every copy was
 * lost, the last state pulled (partial recovery). */
static void serve_resume(struct coord *c, const struct wire_msg *m)
{
	const struct wire_pull *q = &m->u.pull;
	const struct cmember *mb = find(c, m->hdr.sender);
	const struct wire_shard *sh = q->shard < c->nshards
					      ? &c->map[q->shard] : NULL;
	uint64_t now = px_now_mono_us();
	struct px_error err;
	/* a reload made for this PS */
	bool reloaded = sh && c->reload[q->shard] &&
			wire_node_eq(c->reload_to[q->shard], m->hdr.sender);

	/* the shard's active without state past the wait: reloaded as
	 * after the loss of its every copy */
	if (sh && mb && is_ps(mb) && alive(mb) && !reloaded &&
	    c->min_clock != c->resumed_from &&
	    wire_node_eq(sh->active, m->hdr.sender) &&
	    orphaned(c, q->shard, m->hdr.sender, now) && !c->o->no_partial &&
	    c->snap_clock >= 0) {
		c->reload[q->shard] = true;
		c->reload_to[q->shard] = m->hdr.sender;
		reloaded = true;
		c->partials++;
		out(c, "shard %u: PS %u had no state for %.1f s (its "
		    "hand-over was lost): reloaded from the state of clock "
		    "%" PRId64 " (partial recovery)", q->shard,
		    m->hdr.sender.v,
		    (double)(now - c->orphan[q->shard].since_us) / 1e6,
		    c->snap_clock);
	}

	/* a shard reloaded after its every copy was lost: the last state
	 * pulled; a resumed job's first shards, before any clock: the
	 * checkpoint's (not later: the shard's copies have moved on) */
	const float *from = reloaded ? c->snap :
			    c->min_clock == c->resumed_from ? c->ck_w : NULL;

	if (mb && is_ps(mb) && alive(mb) && c->stage_epoch && sh && from &&
	    q->offset <= sh->count && q->count <= sh->count - q->offset) {
		if (net_send_range(c->rep, WIRE_PARAMS, 0, m->hdr.sender,
				   c->min_clock, q->shard, q->offset,
				   from + sh->offset + q->offset,
				   q->count, 1000, &err) != PX_OK)
			dist_logf(c->o, LOG_LVL_WARN,
				  "checkpoint state to %u: %s",
				  m->hdr.sender.v, err.msg);
		return;
	}
	(void)dist_ack(c->rep, m, c->min_clock, PX_ENOENT, &err,
		       "no such shard");
}

/* Room in a full list of expected nodes: those whose node is lost. */
static void forget_lost_expected(struct coord *c)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < c->n_expect; i++) {
		const struct cmember *m = find(c, c->expect[i].node);

		if (!m || m->w.state != WIRE_MEMBER_LOST)
			c->expect[k++] = c->expect[i];
	}
	c->n_expect = k;
}

/* Room in a list still full: the oldest quarter of the names whose node
 * never came (one pass, so that a full list costs one pass every
 * COORD_MAX_EXPECT / 4 names, not one per name).  Such a name is most
 * likely an instance that was refused or never started; a node that
 * comes after its name was dropped waits, as one never named does, and
 * its instance fails to join. */
static void forget_absent_expected(struct coord *c)
{
	uint32_t k = 0, drop = COORD_MAX_EXPECT / 4;

	for (uint32_t i = 0; i < c->n_expect; i++) {
		if (drop && !find(c, c->expect[i].node)) {
			drop--;
			continue;
		}
		c->expect[k++] = c->expect[i];
	}
	if (k < c->n_expect)
		dist_logf(c->o, LOG_LVL_WARN, "%u nodes named to come never "
			  "came: their names are dropped", c->n_expect - k);
	c->n_expect = k;
}

/* Drop entry i, keeping the others in age order. */
static void expect_drop(struct coord *c, uint32_t i)
{
	memmove(&c->expect[i], &c->expect[i + 1],
		(c->n_expect - i - 1) * sizeof c->expect[0]);
	c->n_expect--;
}

/* A command of the agent: the stage to run, a node to expect, a node
 * warned of its end.  Answered with an ACK. */
static void on_command(struct coord *c, const struct wire_msg *m)
{
	const struct wire_command *q = &m->u.command;
	struct cmember *mb;
	struct px_error err;
	enum px_err st = PX_OK;
	const char *why = "";

	if (m->hdr.sender.v != DIST_AGENT_NODE || !c->agent_known) {
		(void)dist_ack(c->rep, m, c->min_clock, PX_EPROTO, &err,
			       "commands come from the registered agent");
		return;
	}
	switch (q->op) {
	case WIRE_CMD_STAGE:
		c->want_stage = q->stage;
		if (!c->started)
			c->stage = q->stage;
		break;
	case WIRE_CMD_EXPECT:
		for (uint32_t i = 0; i < c->n_expect; i++)
			if (wire_node_eq(c->expect[i].node, q->node)) {
				c->expect[i].roles = q->roles;
				goto expected;
			}
		if (c->n_expect == COORD_MAX_EXPECT)
			forget_lost_expected(c);
		if (c->n_expect == COORD_MAX_EXPECT)
			forget_absent_expected(c);
		if (c->n_expect == COORD_MAX_EXPECT) {
			st = PX_ETOOBIG;
			why = "too many nodes";
			break;
		}
		c->expect[c->n_expect].node = q->node;
		c->expect[c->n_expect++].roles = q->roles;
expected:
		c->expecting = true;
		break;
	case WIRE_CMD_LEAVE:
		mb = find(c, q->node);
		if (mb) {
			member_leaving(c, mb, q->reason ? q->reason :
				       WIRE_LEAVE_EVICTION, q->deadline_us);
			break;
		}
		/* not registered yet: it will not be */
		for (uint32_t i = 0; i < c->n_expect; i++)
			if (wire_node_eq(c->expect[i].node, q->node)) {
				expect_drop(c, i);
				break;
			}
		break;
	case WIRE_CMD_GONE:
		/* a process gone on a live host: its parent knows at once,
		 * the heartbeat timeout only later (a PS with the only copy
		 * of a shard: the shard is reloaded elsewhere, ps_lost) */
		mb = find(c, q->node);
		if (!mb || mb->w.state == WIRE_MEMBER_LOST)
			break;
		out(c, "node %u (%s) lost: its process ended", mb->w.node.v,
		    role_name(mb));
		mark_gone(c, mb, true);
		break;
	default:
		st = PX_EINVAL;
		why = "unknown command";
	}
	if (dist_ack(c->rep, m, c->min_clock, st, &err, "%s", why) != PX_OK)
		dist_logf(c->o, LOG_LVL_WARN, "ack to the agent: %s", err.msg);
}

static void on_rep(struct coord *c)
{
	struct px_error err;
	struct wire_msg m, a;

	while (net_recv(c->rep, &m, 0, &err) == PX_OK) {
		if (m.hdr.type == WIRE_HELLO) {
			if (wire_challenge_begin(c->ctx, &m, px_now_mono_us(),
						 &a, &err) == PX_OK)
				(void)net_send(c->rep, &a, 100, &err);
		} else if (m.hdr.type == WIRE_REGISTER &&
			   (m.u.reg.roles & WIRE_ROLE_AGENT)) {
			on_agent_register(c, &m);
		} else if (m.hdr.type == WIRE_REGISTER) {
			on_register(c, &m);
		} else if (m.hdr.type == WIRE_COMMAND) {
			on_command(c, &m);
		} else if (m.hdr.type == WIRE_PULL) {
			serve_resume(c, &m);
		} else {
			(void)dist_ack(c->rep, &m, c->min_clock, PX_EINVAL,
				       &err, "unexpected %s",
				       wire_type_name(m.hdr.type));
		}
		wire_msg_release(&m);
	}
}

static void on_clock(struct coord *c, struct cmember *m,
		     const struct wire_msg *w)
{
	int64_t done = w->hdr.clock;

	if (!is_worker(m) || done + 1 <= m->next_clock)
		return;
	if (counts(c, m) && done - c->min_clock > c->max_staleness)
		c->max_staleness = done - c->min_clock;
	m->next_clock = done + 1;
	if (!m->clocked) {
		/* once a worker: whoever times a node's acquire to its
		 * first update stamps this line (docs/benchmarks.md) */
		m->clocked = true;
		out(c, "node %u: first clock %" PRId64 " done", m->w.node.v,
		    done);
	}
	c->samples += w->u.clock.samples;
	c->row_bytes += w->u.clock.row_bytes;
	c->row_frames += w->u.clock.row_frames;
	c->rows += w->u.clock.rows;
	gp_clock(&c->gp, w->u.clock.batch, w->u.clock.batches,
		 w->u.clock.grad_sq_small, w->u.clock.grad_sq_big);
	/* offers it did not take are void: its HELPs came before */
	for (uint32_t i = 0; i < c->n_relief; i++)
		if (!c->relief[i].helping &&
		    wire_node_eq(c->relief[i].straggler, m->w.node) &&
		    c->relief[i].clock <= done)
			c->relief[i--] = c->relief[--c->n_relief];
	recompute_clock(c);
}

/* ---- straggler relief (docs/trainer.md, "Stragglers") ---- */

static void relief_drop(struct coord *c, uint32_t i, const char *why)
{
	const struct relief *r = &c->relief[i];

	if (r->helping) {
		c->relief_lost += r->count;
		out(c, "minibatches %u..%u of worker %u's clock %" PRId64
		    " handed to worker %u are not trained: %s", r->first,
		    r->first + r->count - 1, r->straggler.v, r->clock,
		    r->helper.v, why);
	}
	c->relief[i] = c->relief[--c->n_relief];
	recompute_clock(c);
}

static void send_reassign(struct coord *c, int64_t clock,
			  const struct wire_reassign *r)
{
	struct wire_msg m;

	wire_msg_init(&m, WIRE_REASSIGN, WIRE_NODE_ALL, clock);
	m.u.reassign = *r;
	broadcast(c, &m);
}

/* Whether worker n is named in a relief as a helper (it is not idle). */
static bool helping(const struct coord *c, struct wire_node n)
{
	for (uint32_t i = 0; i < c->n_relief; i++)
		if (wire_node_eq(c->relief[i].helper, n))
			return true;
	return false;
}

/* A worker that may take a straggler's minibatches: it holds a
 * partition, is heard training, and waits on the SSP bound (or is
 * through with the job). */
static bool idle_worker(const struct coord *c, const struct cmember *m)
{
	return counts(c, m) && m->speed > 0 &&
	       (m->next_clock > c->min_clock + (int64_t)c->o->slack ||
		m->next_clock >= c->total_est) && !helping(c, m->w.node);
}

/* A HELP from a straggler: passed on to its helper, or, when that one is
 * gone, to another worker (the straggler skips them whatever comes). */
static void on_help(struct coord *c, struct cmember *s,
		    const struct wire_msg *m)
{
	struct wire_reassign r = m->u.reassign;
	struct cmember *h = find(c, r.helper);
	struct relief *e = NULL;

	if (!is_worker(s) || !wire_node_eq(r.straggler, s->w.node))
		return;
	/* its HELPs come before its CLOCK: of the clock it is in */
	if (m->hdr.clock != s->next_clock) {
		dist_logf(c->o, LOG_LVL_WARN, "worker %u: help for clock %"
			  PRId64 " while in clock %" PRId64 ": dropped",
			  s->w.node.v, m->hdr.clock, s->next_clock);
		c->relief_lost += r.count;
		return;
	}
	for (uint32_t i = 0; i < c->n_relief; i++)
		if (!c->relief[i].helping &&
		    wire_node_eq(c->relief[i].straggler, r.straggler) &&
		    wire_node_eq(c->relief[i].helper, r.helper) &&
		    c->relief[i].clock == m->hdr.clock)
			e = &c->relief[i];
	if (!h || !counts(c, h)) {
		h = NULL;
		for (uint32_t i = 0; i < c->n && !h; i++)
			if (counts(c, &c->m[i]) &&
			    !wire_node_eq(c->m[i].w.node, r.straggler))
				h = &c->m[i];
		if (!h) {
			c->relief_lost += r.count;
			out(c, "minibatches %u..%u of worker %u's clock %"
			    PRId64 " are not trained: no worker to take "
			    "them", r.first, r.first + r.count - 1,
			    r.straggler.v, m->hdr.clock);
			if (e)
				*e = c->relief[--c->n_relief];
			return;
		}
		r.helper = h->w.node;
	}
	if (!e) {
		if (c->n_relief == COORD_RELIEF_MAX) {
			/* not held open, still passed on */
			dist_logf(c->o, LOG_LVL_WARN, "relief table full");
		} else {
			e = &c->relief[c->n_relief++];
		}
	}
	if (e) {
		*e = (struct relief){ r.straggler, r.helper, m->hdr.clock,
				      r.first, r.count, px_now_mono_us(),
				      true };
	}
	send_reassign(c, m->hdr.clock, &r);
}

/* A DONE from a helper: the help is in, the clock may go on. */
static void on_help_done(struct coord *c, struct cmember *h,
			 const struct wire_msg *m)
{
	const struct wire_reassign *r = &m->u.reassign;
	struct cmember *s = find(c, r->straggler);

	if (!is_worker(h) || !wire_node_eq(r->helper, h->w.node))
		return;
	c->samples += r->samples;
	c->reassigned += r->count;
	h->helped += r->count;
	if (s)
		s->handed += r->count;
	for (uint32_t i = 0; i < c->n_relief; i++) {
		const struct relief *e = &c->relief[i];

		if (e->helping && wire_node_eq(e->helper, r->helper) &&
		    wire_node_eq(e->straggler, r->straggler) &&
		    e->clock == m->hdr.clock && e->first == r->first) {
			c->relief[i] = c->relief[--c->n_relief];
			break;
		}
	}
	recompute_clock(c);
}

/* Minibatches of straggler s's clock still to begin, as far as known:
 * its last progress, the time since at its speed, less what it was
 * offered since (its progress does not say it yet).  -1 while an offer
 * is unanswered. */
static double left_of(const struct coord *c, const struct cmember *s,
		      uint64_t now)
{
	double left = (double)s->prog_end - (double)s->prog_done -
		      (double)(now - s->prog_us) / 1e6 * s->speed;

	for (uint32_t i = 0; i < c->n_relief; i++) {
		const struct relief *e = &c->relief[i];

		if (!wire_node_eq(e->straggler, s->w.node))
			continue;
		if (!e->helping)
			return -1;
		if (e->clock == s->prog_clock && e->since_us > s->prog_us)
			left -= e->count;
	}
	return left;
}

/* When worker m is free to help, in seconds from now: 0 when idle;
 * else, for one in the last clock the SSP bound lets it begin, the time
 * its minibatches left take at its speed; -1 when neither. */
static double free_in(const struct coord *c, const struct cmember *m,
		      uint64_t now)
{
	double left;

	if (idle_worker(c, m))
		return 0;
	if (!counts(c, m) || m->speed <= 0 || helping(c, m->w.node) ||
	    m->next_clock != c->min_clock + (int64_t)c->o->slack ||
	    m->prog_clock != m->next_clock || !m->prog_end)
		return -1;
	left = left_of(c, m, now);
	return left < 0 ? -1 : left / m->speed;
}

/* Of the workers in the slowest clock that reported their progress in
 * it, the one whose clock ends last at its speed (*ret_end: in s from
 * now; *ret_left: its minibatches left, left_of); NULL when none. */
static struct cmember *ends_last(struct coord *c, uint64_t now,
				 double *ret_end, double *ret_left)
{
	struct cmember *last = NULL;

	*ret_end = *ret_left = 0;
	for (uint32_t i = 0; i < c->n; i++) {
		struct cmember *s = &c->m[i];
		double l;

		if (!counts(c, s) || s->next_clock != c->min_clock ||
		    s->prog_clock != c->min_clock || !s->prog_end ||
		    s->speed <= 0)
			continue;
		l = left_of(c, s, now);
		if (l >= 0 && l / s->speed > *ret_end) {
			*ret_end = l / s->speed;
			*ret_left = l;
			last = s;
		}
	}
	return last;
}

/* The FlexRR rule: the worker whose clock ends last (ends_last) hands
 * its minibatches not begun to helpers, split so that all end together
 * as near as whole minibatches allow (dist_relief_split): the workers
 * that wait on the SSP bound, and those that will before it ends, each
 * counted from when it is free (free_in).  A helper qualifies when it
 * would otherwise wait at least two of its own minibatches for the
 * straggler (nearer is noise between equals, not worth the exchange), or
 * when it is free within one of the straggler's minibatches (the time
 * an offer takes to answer); and only when the straggler's time left is
 * over two minibatches of the fastest helper.  So a worker known slow is
 * relieved from its clock's start (its first report), not once the
 * others run dry: FlexRR's helpers ask ahead.  Offers go out one round
 * at a time; helpers that come free later take a share of what is left
 * then. */
static void relieve(struct coord *c, uint64_t now)
{
	struct cmember *helper[DIST_MAX_NODES], *s;
	uint32_t nh = 0, share[DIST_MAX_NODES];
	double vh[DIST_MAX_NODES], t0[DIST_MAX_NODES], vmax = 0, end, left;

	for (uint32_t i = 0; i < c->n_relief; i++)
		if ((!c->relief[i].helping &&
		     now - c->relief[i].since_us > COORD_OFFER_US) ||
		    (c->relief[i].helping && now - c->relief[i].since_us >
		     (uint64_t)c->o->hb_timeout_ms * 4000 + 2000000))
			relief_drop(c, i--, "no answer");
	if (c->o->no_reassign)
		return;
	s = ends_last(c, now, &end, &left);
	if (!s)
		return;
	for (uint32_t k = 0; k < c->n; k++) {
		struct cmember *m = &c->m[k];
		double t = m == s ? -1 : free_in(c, m, now);
		double wait = m->speed > 0 ? end - 2.0 / m->speed : 0;

		if (t < 0 || (t > wait && t > 1.0 / s->speed))
			continue;
		vh[nh] = m->speed;
		t0[nh] = t;
		helper[nh++] = m;
		if (m->speed > vmax)
			vmax = m->speed;
	}
	if (!nh || left < 2 || left / s->speed < 2.0 / vmax)
		return;
	dist_relief_split(left, s->speed, vh, t0, nh, share);
	for (uint32_t k = 0; k < nh; k++) {
		struct cmember *h = helper[k];
		struct wire_reassign r = {
			.op = WIRE_REASSIGN_OFFER,
			.straggler = s->w.node, .helper = h->w.node };

		if (!share[k] || c->n_relief == COORD_RELIEF_MAX)
			continue;
		r.count = share[k];
		c->relief[c->n_relief++] = (struct relief){
			s->w.node, h->w.node, c->min_clock, 0, r.count, now,
			false };
		send_reassign(c, c->min_clock, &r);
	}
}

/* Per-worker speed: the median of the workers heard, and which are slow
 * (below 2/3 of it; with two workers or more). */
static void judge_speeds(struct coord *c)
{
	float v[DIST_MAX_NODES];
	uint32_t n = 0;

	for (uint32_t i = 0; i < c->n; i++)
		if (counts(c, &c->m[i]) && c->m[i].speed > 0)
			v[n++] = c->m[i].speed;
	c->median_speed = px_median_f(v, n);
	for (uint32_t i = 0; i < c->n; i++) {
		struct cmember *m = &c->m[i];

		m->was_slow = n >= 2 && counts(c, m) && m->speed > 0 &&
			      m->speed < c->median_speed * 2.0f / 3.0f;
		m->w.speed = is_worker(m) ? m->speed : 0;
		m->w.slow = m->was_slow;
	}
}

/* Node mb says (or the agent says for it) that it will be gone by
 * deadline_us (wall clock): its partition and shards move now. */
static void member_leaving(struct coord *c, struct cmember *mb,
			   uint8_t reason, int64_t deadline_us)
{
	if (mb->w.state == WIRE_MEMBER_LEAVING || !alive(mb))
		return;
	out(c, "node %u leaving (reason %u, gone in %.1f s)", mb->w.node.v,
	    reason, (double)(deadline_us - px_now_wall_us()) / 1e6);
	mb->w.state = WIRE_MEMBER_LEAVING;
	mb->w.leave_reason = reason;
	mb->w.leave_deadline_us = deadline_us;
	c->progress_now = true;
	c->leaves++;
	c->epoch++;
	if (is_ps(mb) && c->started)
		replace_all(c);
	recompute_clock(c);
	announce(c);
}

static void on_pull(struct coord *c)
{
	struct px_error err;
	struct wire_msg m;

	while (net_recv(c->pull, &m, 0, &err) == PX_OK) {
		struct cmember *mb = find(c, m.hdr.sender);

		if (!mb || mb->w.state == WIRE_MEMBER_LOST) {
			wire_msg_release(&m);
			continue;
		}
		mb->last_us = px_now_mono_us();
		if (mb->silent) {
			mb->silent = false;
			out(c, "PS %u is back", mb->w.node.v);
		}
		switch (m.hdr.type) {
		case WIRE_CLOCK:
			on_clock(c, mb, &m);
			break;
		case WIRE_HEARTBEAT:
			if (is_worker(mb)) {
				const struct wire_heartbeat *h =
					&m.u.heartbeat;

				mb->speed = h->speed;
				mb->prog_clock = m.hdr.clock;
				mb->prog_done = h->batches_done;
				mb->prog_end = h->batches;
				mb->prog_us = mb->last_us;
			}
			if (mb->late && !mb->hotadd_seen &&
			    m.u.heartbeat.status) {
				mb->hotadd_seen = true;
				if (m.u.heartbeat.status > c->hotadd_ms_max)
					c->hotadd_ms_max =
						m.u.heartbeat.status;
				out(c, "node %u: first update %u ms after "
				    "its start", mb->w.node.v,
				    m.u.heartbeat.status);
			}
			break;
		case WIRE_LEAVE:
			member_leaving(c, mb, m.u.leave.reason,
				       m.u.leave.deadline_us);
			break;
		case WIRE_REASSIGN:
			if (m.u.reassign.op == WIRE_REASSIGN_HELP)
				on_help(c, mb, &m);
			else if (m.u.reassign.op == WIRE_REASSIGN_DONE)
				on_help_done(c, mb, &m);
			break;
		default:
			break;
		}
		wire_msg_release(&m);
	}
}

/* Where to resume from, for the message of a failed job. */
static void ckpt_hint(const struct coord *c, char *buf, size_t len)
{
	if (c->ckpt_clock >= 0)
		snprintf(buf, len, "; the checkpoint of clock %" PRId64
			 " is in %s: run the job again with --resume %s",
			 c->ckpt_clock, c->o->checkpoint, c->o->checkpoint);
	else
		snprintf(buf, len, "%s", c->o->checkpoint ? "; no checkpoint "
			 "written yet" : "");
}

/* Watchdog: no clock advance (or no start) for a quarter of
 * --stall-timeout logs who holds the job back; the whole of it fails the
 * job with that as the error, instead of waiting forever.  Returns
 * whether the job failed. */
static bool watchdog(struct coord *c, uint64_t now, struct px_error *err)
{
	uint64_t lim = (uint64_t)c->o->stall_timeout_s * 1000000;
	uint64_t ref = c->started ? c->last_adv_us : c->t0_us;
	uint64_t idle = now > ref ? now - ref : 0; /* ref may be newer */
	uint32_t nw = 0, nps = 0, active = 0;
	const struct cmember *slow = NULL, *silent = NULL;
	char why[200], more[100] = "", hint[PX_ERRMSG_MAX / 2];

	if (!lim || idle < lim / 4 || (idle < lim && c->stall_warned))
		return false;
	for (uint32_t i = 0; i < c->n; i++) {
		const struct cmember *m = &c->m[i];

		if (is_ps(m) && alive(m))
			nps++;
		if (m->silent)
			silent = m;
		if (!is_worker(m))
			continue;
		nw += alive(m);
		if (!counts(c, m))
			continue;
		active++;
		if (!slow || m->next_clock < slow->next_clock)
			slow = m;
	}
	if (!c->started)
		snprintf(why, sizeof(why), "job not started: %u of %u "
			 "workers and %u of %u PS registered", nw,
			 c->o->workers, nps, c->o->ps);
	else if (slow)
		snprintf(why, sizeof(why), "stuck at clock %" PRId64 "/%"
			 PRId64 ": %u workers hold partitions, node %u is "
			 "slowest (next clock %" PRId64 "), %u PS", c->min_clock,
			 c->total_est, active, slow->w.node.v, slow->next_clock,
			 nps);
	else
		snprintf(why, sizeof(why), "stuck at clock %" PRId64 "/%"
			 PRId64 ": no worker holds a partition (%u live), "
			 "%u PS", c->min_clock, c->total_est, nw, nps);
	if (silent)
		snprintf(more, sizeof(more), "; PS %u, the only copy of shard "
			 "%d, silent for %.1f s", silent->w.node.v,
			 sole_copy(c, silent->w.node),
			 (double)(now - silent->last_us) / 1e6);
	if (idle < lim) {
		c->stall_warned = true;
		dist_logf(c->o, LOG_LVL_WARN,
			  "watchdog: no progress for %.1f s, %s%s",
			  (double)idle / 1e6, why, more);
		return false;
	}
	ckpt_hint(c, hint, sizeof(hint));
	px_errorf(err, PX_ETIMEDOUT, "no progress for %u s (--stall-timeout)"
		  ", %s%s%s", c->o->stall_timeout_s, why, more, hint);
	return true;
}

/* A PS holding the only copy of a shard, silent past --sole-copy-timeout
 * while a checkpoint of this run exists: most likely gone.  With a state
 * pulled to reload its shards from, it is declared lost (partial
 * recovery, ps_lost); else the job fails now, naming the checkpoint to
 * resume from (local --max-restarts does), instead of waiting
 * --stall-timeout.  Whether the job failed. */
static bool sole_copy_gone(struct coord *c, uint64_t now,
			   struct px_error *err)
{
	uint64_t lim = (uint64_t)c->o->sole_copy_timeout_s * 1000000;
	char hint[PX_ERRMSG_MAX / 2];

	if (!lim || c->ckpt_clock < 0)
		return false;
	for (uint32_t i = 0; i < c->n; i++) {
		struct cmember *m = &c->m[i];

		if (m->silent && sole_copy(c, m->w.node) < 0)
			m->silent = false; /* its shards moved meanwhile */
		if (!m->silent || now - m->last_us < lim)
			continue;
		if (c->snap_clock >= 0 && !c->o->no_partial) {
			out(c, "PS %u, the only copy of shard %d, silent for "
			    "%.1f s (--sole-copy-timeout): lost", m->w.node.v,
			    sole_copy(c, m->w.node),
			    (double)(now - m->last_us) / 1e6);
			m->silent = false;
			mark_gone(c, m, true);
			if (c->done)
				break;
			continue;
		}
		ckpt_hint(c, hint, sizeof(hint));
		px_errorf(err, PX_ETIMEDOUT, "PS %u, the only copy of shard "
			  "%d, silent for %.1f s (--sole-copy-timeout)%s",
			  m->w.node.v, sole_copy(c, m->w.node),
			  (double)(now - m->last_us) / 1e6, hint);
		return true;
	}
	return false;
}

/* Go on answering the sockets for ms: the coordinator waiting for
 * something (a shard's new holder, a SHUTDOWN to spread, the last
 * PROGRESS to leave) stays the job's clock and membership meanwhile. */
static void serve_for(struct coord *c, int ms)
{
	uint64_t until = px_now_mono_us() + (uint64_t)ms * 1000;
	int left;

	if (!c->rep || !c->pull)
		return;
	while ((left = dist_ms_until(until, ms)) > 0) {
		struct nn_pollfd pf[2] = {
			{ .fd = net_nn_socket(c->rep), .events = NN_POLLIN },
			{ .fd = net_nn_socket(c->pull), .events = NN_POLLIN },
		};

		if (nn_poll(pf, 2, left) <= 0)
			continue;
		if (pf[0].revents & NN_POLLIN)
			on_rep(c);
		if (pf[1].revents & NN_POLLIN)
			on_pull(c);
	}
}

/* While the coordinator waits on one long answer (a pull of a large
 * shard: an mf job's 60 MB on a loaded host takes seconds): its sockets
 * answered, and every heartbeat its sign of life (CLOCK_MIN) sent, so
 * that no node takes the wait for the coordinator's silence (5 s ends a
 * node's role). */
static void keep_alive(struct coord *c)
{
	uint64_t now = px_now_mono_us();

	serve_for(c, 1);
	if (now >= c->alive_next_us) {
		send_clock_min(c);
		c->alive_next_us = now + (uint64_t)c->o->hb_ms * 1000;
	}
}

/* The answer to the pull of shard s sent to `to` over q, waited for up
 * to wait_ms in slices of PULL_SLICE_MS with keep_alive between them. */
#define PULL_SLICE_MS 50

static enum px_err pull_answer(struct coord *c, struct net_sock *q,
			       struct wire_node to, uint32_t s,
			       uint64_t count, int wait_ms,
			       struct wire_msg *ret, struct px_error *err)
{
	uint64_t until = px_now_mono_us() + (uint64_t)wait_ms * 1000;
	enum px_err e;
	int left;

	for (;;) {
		left = dist_ms_until(until, PULL_SLICE_MS);
		e = dist_pull_recv(q, to, s, count, left > 0 ? left : 1, ret,
				   err);
		if (e != PX_ETIMEDOUT || px_now_mono_us() >= until)
			return e;
		keep_alive(c);
	}
}

/* Pull shard s's parameters from its active PS into dst, with every
 * update before clock `at`. */
static enum px_err pull_shard(struct coord *c, uint32_t s, int64_t at,
			      float *dst, struct px_error *err)
{
	enum px_err e = PX_OK;

	for (int tries = 0; tries < 10; tries++) {
		/* the map may change while we wait (a PS leaves) */
		const struct wire_shard *sh = &c->map[s];
		struct cmember *ps = find(c, sh->active);
		struct net_sock *q;
		struct wire_msg r;

		if (!ps)
			return px_errorf(err, PX_ENOENT, "shard %u has no PS",
					 s);
		q = dist_link_get(&c->links, sh->active, ps->w.addr, true,
				  err);
		if (!q)
			return err->code;
		/* no pushes of its own; the clock: every update before
		 * `at` */
		e = dist_pull_send(q, sh->active, at, s, sh->count, -1, 200,
				   err);
		if (e == PX_OK)
			e = pull_answer(c, q, sh->active, s, sh->count,
					dist_range_ms(300, sh->count), &r, err);
		if (e == PX_OK) {
			wire_f32_copy(&r.u.range.data, dst + sh->offset);
			wire_msg_release(&r);
			return PX_OK;
		}
		if (e == PX_EPROTO)
			serve_for(c, 20); /* it has no state yet */
		else
			dist_link_reset_req(&c->links, sh->active);
	}
	return px_errorf(err, PX_ETIMEDOUT, "shard %u: no parameters from PS "
			 "%u", s, c->map[s].active.v);
}

/* The whole parameter vector into c->params, with every update of the
 * clocks before the current minimum, which (with the samples trained by
 * then) is what a checkpoint of it records: clocks may advance while it
 * waits. */
static enum px_err pull_state(struct coord *c, struct px_error *err)
{
	enum px_err e = PX_OK;

	c->pulled_at = c->min_clock;
	c->pulled_samples = samples_done(c);
	for (uint32_t s = 0; e == PX_OK && s < c->nshards; s++)
		e = pull_shard(c, s, c->pulled_at, c->params, err);
	if (e == PX_OK && c->snap && !c->measuring) {
		/* whole: the next loss of a shard's every copy reloads
		 * from here */
		memcpy(c->snap, c->params, c->nparams * sizeof(float));
		c->snap_clock = c->pulled_at;
		memset(c->reload, 0, sizeof c->reload);
	}
	return e;
}

/* Evaluate c->params on the test set. */
static enum px_err test_eval(struct coord *c, double *ret_loss,
			     double *ret_acc, struct px_error *err)
{
	if (c->mf) {
		/* --model mf: the RMSE of both sets, accuracy none */
		c->train_rmse = mf_rmse(&c->md, c->params, c->seen,
					&c->mtrain);
		*ret_loss = mf_rmse(&c->md, c->params, c->seen, &c->mtest);
		*ret_acc = 0.0;
		if (!isfinite(c->train_rmse))
			*ret_loss = c->train_rmse;
		return PX_OK;
	}
	return train_eval_host(c->mc, c->params, &c->test, ret_loss, ret_acc,
			       err);
}

/* The state just pulled (c->params, c->mom; the pull began at t0) to
 * --checkpoint, as of min_clock; acc is the test accuracy of that state
 * (NaN: none).  A full checkpoint where full is set; else, with
 * --checkpoint-budget, the record of the parameters that changed most
 * (ckpt.h), with a full one every --checkpoint-full-every. */
static void write_checkpoint(struct coord *c, double acc, uint64_t t0,
			     bool full)
{
	uint64_t t1 = px_now_mono_us(), wrote = 0, bytes = 0;
	uint32_t every = c->o->checkpoint_full_every
		? c->o->checkpoint_full_every : 10;
	struct ckpt_meta m = c->meta;
	struct px_error err;

	m.clock = c->pulled_at;
	m.samples = c->pulled_samples;
	m.test_accuracy = c->mf && !isnan(acc) ? c->last_loss : acc;
	if (c->mf) /* as one process writes it (mf.h) */
		mf_zero_unseen(&c->md, c->params, c->seen);
	m.written_s = px_now_wall_us() / 1000000;
	full = full || !c->o->checkpoint_budget || !c->chain.have_base ||
	       c->chain.since_full + 1 >= every;
	if (ckpt_chain_write(&c->chain, c->o->checkpoint, &m, c->params,
			     c->mom, full ? 0 : c->o->checkpoint_budget, full,
			     &wrote, &bytes, &err) != PX_OK) {
		dist_logf(c->o, LOG_LVL_WARN, "%s", err.msg);
		return;
	}
	c->ckpt_clock = m.clock;
	c->ckpts++;
	c->ckpts_incr += !full;
	c->ckpt_bytes += bytes;
	dist_logf(c->o, LOG_LVL_INFO,
		  "checkpoint at clock %" PRId64 " written to %s%s "
		  "(%" PRIu64 " of %" PRIu64 " parameters, %.3f MB; pull "
		  "%.0f ms, write %.0f ms)", m.clock, c->o->checkpoint,
		  full ? "" : ".delta", wrote, c->nparams, 1e-6 * (double)bytes,
		  (double)(t1 - t0) / 1e3,
		  (double)(px_now_mono_us() - t1) / 1e3);
}

/* The loop was busy since t (an evaluation, a checkpoint's write):
 * do not count it against the heartbeats of members not heard since,
 * or against the clock's progress. */
static void stalled_since(struct coord *c, uint64_t t)
{
	uint64_t d = px_now_mono_us() - t;

	for (uint32_t i = 0; i < c->n; i++)
		if (c->m[i].last_us < t)
			c->m[i].last_us += d;
	if (c->last_adv_us < t)
		c->last_adv_us += d;
}

/* A checkpoint between evaluations (--checkpoint-every). */
static void snapshot(struct coord *c)
{
	uint64_t t = px_now_mono_us();
	struct px_error err;

	if (pull_state(c, &err) == PX_OK)
		write_checkpoint(c, NAN, t, false);
	else
		dist_logf(c->o, LOG_LVL_WARN, "checkpoint: %s", err.msg);
	stalled_since(c, t);
}

/* "; slow: worker N at S minibatches/s (median M), ..." for the
 * progress line, "" when none is. */
static const char *slow_text(const struct coord *c, char *buf, size_t n)
{
	size_t k = 0;

	buf[0] = 0;
	for (uint32_t i = 0; i < c->n && k + 40 < n; i++) {
		const struct cmember *m = &c->m[i];

		if (!m->was_slow)
			continue;
		k += (size_t)snprintf(buf + k, n - k, "%s worker %u at %.1f",
				      k ? "," : "; slow:", m->w.node.v,
				      (double)m->speed);
	}
	if (k && k + 40 < n)
		snprintf(buf + k, n - k, " minibatches/s (median %.1f)",
			 (double)c->median_speed);
	return buf;
}

/* A progress line or PROGRESS frame; with eval, the test set's figures
 * first (then a checkpoint with --checkpoint).  An error only where the
 * run diverged (the test loss is not finite: no checkpoint is written),
 * or, with final, where the final evaluation failed. */
static enum px_err progress(struct coord *c, bool eval, bool final,
			    struct px_error *ret_err)
{
	uint64_t now = px_now_mono_us();
	double secs = (double)(now - c->t_start_us) / 1e6;
	uint32_t nw = 0, nps = 0;
	struct px_error err;
	char ev[80], slow[200], phi[32];

	for (uint32_t i = 0; i < c->n; i++) {
		if (!alive(&c->m[i]))
			continue;
		if (is_ps(&c->m[i]))
			nps++;
		else
			nw++;
	}
	if (eval) {
		uint64_t t = px_now_mono_us();
		bool ck = c->o->checkpoint != NULL;

		if (pull_state(c, &err) != PX_OK ||
		    test_eval(c, &c->last_loss, &c->last_acc, &err) != PX_OK) {
			/* a failure of the job (exit 1), whatever the
			 * cause's code */
			if (final)
				return px_errorf(ret_err, PX_EIO, "the final "
						 "evaluation: %s", err.msg);
			dist_logf(c->o, LOG_LVL_WARN,
				  "evaluation: %s", err.msg);
		} else if (!isfinite(c->last_loss)) {
			char when[64];

			snprintf(when, sizeof(when), "clock %" PRId64 " of %"
				 PRId64, c->pulled_at, c->total_est);
			return train_diverged(ret_err, when, c->mf ? "RMSE"
					      : "test loss", c->last_loss,
					      c->o->train.lr);
		} else if (ck && !c->measuring) {
			write_checkpoint(c, c->last_acc, t, true);
		}
		stalled_since(c, t);
	}
	judge_speeds(c);
	gp_report(&c->gp, c->samples, now, secs, holders(c), c->min_clock,
		  c->last_acc);
	if (c->agent && c->agent_known) {
		/* the agent reports it */
		send_progress(c, secs > 0 ? c->samples / secs : 0.0);
		return PX_OK;
	}
	if (c->mf && !isnan(c->last_acc))
		snprintf(ev, sizeof(ev), "train RMSE %.4f, test RMSE %.4f",
			 c->train_rmse, c->last_loss);
	else
		dist_fmt_eval(ev, sizeof(ev), c->last_loss, c->last_acc);
	out(c, "clock %" PRId64 "/%" PRId64 ": %.0f samples/s, last %s, %u "
	    "workers, %u PS, stage %u, epoch %" PRIu64 ", goodput %.0f "
	    "(efficiency %.3f, noise scale %s, batch %u, lr x%.3f)%s",
	    c->min_clock, c->total_est, secs > 0 ? c->samples / secs : 0.0,
	    ev, nw, nps, c->stage, c->epoch, c->gp.goodput, c->gp.efficiency,
	    gns_format(gns_scale(&c->gp.gns), phi, sizeof phi), c->gp.batch,
	    c->gp.lr_scale,
	    slow_text(c, slow, sizeof slow));
	return PX_OK;
}

static void shutdown_all(struct coord *c, uint8_t reason)
{
	struct wire_msg m;

	for (int i = 0; i < 3; i++) {
		wire_msg_init(&m, WIRE_SHUTDOWN, WIRE_NODE_ALL, c->min_clock);
		m.u.shutdown.reason = reason;
		broadcast(c, &m);
		serve_for(c, 20); /* late subscribers get the next one */
	}
}

/* Each worker the job had: its last speed, whether it is slow, the
 * minibatches it handed over and those it trained for others. */
static json_t *worker_speeds(const struct coord *c)
{
	json_t *a = json_array();

	for (uint32_t i = 0; a && i < c->n; i++) {
		const struct cmember *m = &c->m[i];

		if (!is_worker(m))
			continue;
		json_array_append_new(a, json_pack(
			"{s:i, s:f, s:b, s:I, s:I}", "node", (int)m->w.node.v,
			"speed", (double)m->speed, "slow", m->was_slow,
			"handed_over", (json_int_t)m->handed,
			"helped", (json_int_t)m->helped));
	}
	return a ? a : json_null();
}

/* --model mf's part of the result: the RMSE of both sets, the model's
 * shape and what the workers' sparse pulls and pushes took on the wire
 * (docs/trainer.md, "Matrix factorization"). */
static void mf_result(struct coord *c, json_t *j)
{
	bool ev = !isnan(c->last_acc);

	json_object_set_new(j, "rank", json_integer(c->md.rank));
	json_object_set_new(j, "users", json_integer(c->md.n_users));
	json_object_set_new(j, "items", json_integer(c->md.n_items));
	json_object_set_new(j, "params", json_integer((json_int_t)
						      c->nparams));
	json_object_set_new(j, "train_rmse", ev ? json_real(c->train_rmse)
						: json_null());
	json_object_set_new(j, "test_rmse", ev ? json_real(c->last_loss)
					       : json_null());
	json_object_set_new(j, "test_accuracy", json_null());
	json_object_set_new(j, "test_loss", json_null());
	json_object_set_new(j, "row_bytes", json_integer((json_int_t)
							 c->row_bytes));
	json_object_set_new(j, "row_frames", json_integer((json_int_t)
							  c->row_frames));
	json_object_set_new(j, "rows_touched", json_integer((json_int_t)
							    c->rows));
	json_object_set_new(j, "row_bytes_per_rating", json_real(
		c->samples ? (double)c->row_bytes / (double)c->samples : 0.0));
}

static int print_result(struct coord *c)
{
	double train_s = (double)(c->t_end_us - c->t_start_us) / 1e6;
	uint64_t dropped = wire_stats_dropped(net_stats(c->rep)) +
			   wire_stats_dropped(net_stats(c->pull));
	json_t *j;
	char *s;

	/* null when the test set was never evaluated (an error) */
	judge_speeds(c);
	j = json_pack("{s:s, s:i, s:i, s:i, s:o, s:o, s:f, s:I, s:I, s:I, s:i, "
		      "s:i, s:i, s:i, s:i, s:i, s:I, s:f, s:f, s:I, s:i, s:f, "
		      "s:f, s:o, s:i}",
		      "model", model_kind_name(c->o->train.model),
		      "workers", (int)c->o->workers, "ps", (int)c->o->ps,
		      "batch", (int)c->o->train.batch,
		      "test_accuracy", isnan(c->last_acc) ? json_null()
				       : json_real(c->last_acc),
		      "test_loss", isnan(c->last_loss) ? json_null()
				   : json_real(c->last_loss),
		      "samples_per_sec", train_s > 0 ? c->samples / train_s
						     : 0.0,
		      "samples", (json_int_t)c->samples,
		      "job_samples", (json_int_t)samples_done(c),
		      "clocks", (json_int_t)c->min_clock,
		      "joins", (int)c->joins, "losses", (int)c->losses,
		      "leaves", (int)c->leaves,
		      "promotions", (int)c->promotions,
		      "partial_recoveries", (int)c->partials,
		      "stage_changes", (int)c->stage_changes,
		      "max_staleness", (json_int_t)c->max_staleness,
		      "recovery_ms_max", c->recovery_ms_max,
		      "hotadd_ms_max", c->hotadd_ms_max,
		      "frames_dropped", (json_int_t)dropped,
		      "stage", (int)c->stage,
		      "train_seconds", train_s,
		      "wall_seconds",
		      (double)(px_now_mono_us() - c->t0_us) / 1e6,
		      "resumed_from", c->resumed_from < 0 ? json_null()
				      : json_integer(c->resumed_from),
		      "checkpoints", (int)c->ckpts);
	if (!j)
		return -1;
	json_object_set_new(j, "checkpoints_incremental",
			    json_integer(c->ckpts_incr));
	json_object_set_new(j, "checkpoint_bytes",
			    json_integer((json_int_t)c->ckpt_bytes));
	json_object_set_new(j, "reassigned", json_integer((json_int_t)
							  c->reassigned));
	json_object_set_new(j, "reassign_lost", json_integer((json_int_t)
							     c->relief_lost));
	json_object_set_new(j, "worker_speeds", worker_speeds(c));
	if (c->mf)
		mf_result(c, j);
	json_object_set_new(j, "goodput", gp_json(&c->gp));
	s = NULL;
	{
		size_t len = 0;
		FILE *m = open_memstream(&s, &len);

		if (!m || px_json_put(m, j) < 0) {
			if (m)
				fclose(m);
			free(s);
			s = NULL;
		} else if (fclose(m) != 0) {
			free(s);
			s = NULL;
		}
	}
	json_decref(j);
	if (!s)
		return -1;
	if (c->o->json)
		dprintf(c->o->out_fd, "%s\n", s);
	else if (c->mf)
		dprintf(c->o->out_fd, "train RMSE %.4f, test RMSE %.4f, %.0f "
			"ratings/s, %" PRId64 " clocks, %.1f wire bytes a "
			"rating, %u joins, %u losses, %.1f s\n",
			c->train_rmse, c->last_loss,
			train_s > 0 ? c->samples / train_s : 0.0,
			c->min_clock, c->samples ? (double)c->row_bytes /
			(double)c->samples : 0.0, c->joins, c->losses,
			(double)(px_now_mono_us() - c->t0_us) / 1e6);
	else
		dprintf(c->o->out_fd, "test accuracy %.2f%%, %.0f samples/s, "
			"%" PRId64 " clocks, %u joins, %u losses, %.1f s\n",
			100.0 * c->last_acc,
			train_s > 0 ? c->samples / train_s : 0.0,
			c->min_clock, c->joins, c->losses,
			(double)(px_now_mono_us() - c->t0_us) / 1e6);
	free(s);
	return 0;
}

static enum px_err setup_clocks(struct coord *c, struct px_error *err);

/* Whether paths a and b name one file. */
static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* --model mf: the ratings (both sets: the training RMSE is the whole
 * training set's), the seeded start as the first snapshot. */
static enum px_err mf_setup(struct coord *c, struct px_error *err)
{
	const struct dist_opts *o = c->o;
	enum px_err e;

	if (!o->data.test)
		return px_errorf(err, PX_EINVAL, "--model mf needs "
				 "--test-data (user,item,rating lines)");
	e = dist_mf_load(o, &c->mtrain, &c->md, err);
	if (e == PX_OK)
		e = mf_load(o->data.test, o->max_test, &c->mtest, err);
	if (e != PX_OK)
		return e;
	c->n_train = c->mtrain.n;
	c->nparams = c->md.n_params;
	c->params = px_calloc(c->nparams, sizeof(float));
	c->snap = px_calloc(c->nparams, sizeof(float));
	c->seen = px_calloc((size_t)c->md.n_users + c->md.n_items, 1);
	if (!c->params || !c->snap || !c->seen)
		return px_errorf(err, PX_ENOMEM, "parameters");
	mf_init_params(&c->md, c->snap, o->train.seed);
	mf_mark_seen(&c->md, &c->mtrain, c->seen);
	c->snap_clock = 0;
	return setup_clocks(c, err);
}

static enum px_err setup(struct coord *c, struct px_error *err)
{
	const struct dist_opts *o = c->o;
	struct wire_config wc = {
		.self = { DIST_COORD_NODE }, .job = o->job,
		.job_key = o->key, .job_key_len = o->key_len,
	};
	enum px_err e;

	e = wire_ctx_new(&wc, &c->ctx, err);
	if (e != PX_OK)
		return e;
	c->links.ctx = c->ctx;
	e = dist_sock(c->ctx, NET_REP, o->listen, DIST_EP_REP, true, &c->rep,
		      err);
	if (e == PX_OK)
		e = dist_sock(c->ctx, NET_PULL, o->listen, DIST_EP_PULL, true,
			      &c->pull, err);
	if (e == PX_OK)
		e = dist_sock(c->ctx, NET_PUB, o->listen, DIST_EP_PUB, true,
			      &c->pub, err);
	if (e == PX_OK && o->agent[0]) {
		e = net_open(c->ctx, NET_PUSH, NULL, &c->agent, err);
		if (e == PX_OK)
			e = net_connect(c->agent, o->agent, err);
	}
	if (e == PX_OK && c->mf)
		return mf_setup(c, err);
	if (e == PX_OK)
		e = dist_data_shape(o, &c->n_train, &c->prep, err);
	if (e == PX_OK)
		e = dist_load_test(o, &c->prep, &c->test, err);
	if (e == PX_OK)
		e = dist_model_desc(o, &c->prep, &c->d, err);
	if (e != PX_OK)
		return e;
	kern_cpu_set_threads(o->train.threads > 0 ? o->train.threads : 1);
	c->nparams = c->d.n_params;
	c->params = px_calloc(c->nparams, sizeof(float));
	c->snap = px_calloc(c->nparams, sizeof(float));
	c->snap_clock = -1;
	if (!c->params || !c->snap)
		return px_errorf(err, PX_ENOMEM, "parameters");
	/* the first state is the PS nodes' seeded one: a shard lost before
	 * any pull reloads from the start, not the whole job */
	model_init_params(&c->d, c->snap, o->train.seed);
	c->snap_clock = 0;
	e = model_ctx_new(&c->d, &kern_cpu_ops, NULL, TRAIN_EVAL_BATCH,
			  &c->mc, err);
	if (e != PX_OK)
		return e;
	return setup_clocks(c, err);
}

/* The most floats a shard holds when the parameters are cut in n (as
 * dist_place and dist_place_rows cut them: whole rows for mf). */
static uint64_t shard_floats_max(const struct coord *c, uint32_t n)
{
	if (c->mf) {
		uint64_t rows = c->nparams / c->md.row;

		return (rows + n - 1) / n * c->md.row;
	}
	return (c->nparams + n - 1) / n;
}

/* The job's clocks, the shards, the stage (after the model's setup). */
static enum px_err setup_clocks(struct coord *c, struct px_error *err)
{
	const struct dist_opts *o = c->o;
	enum px_err e;

	c->total = dist_job_clocks(c->n_train, o->workers, o->train.epochs,
				   o->train.batch, o->clock_batches);
	c->total_est = c->total;
	c->total_samples = (uint64_t)o->train.epochs * c->n_train;
	c->est_workers = o->workers;
	c->est_batch = o->train.batch;
	c->est_kb = o->clock_batches;
	gp_init(&c->gp, o->train.batch, o->clock_batches, o->adapt,
		o->adapt_clock);
	c->clocks_per_epoch = o->train.epochs ? c->total / o->train.epochs
					      : 1;
	if (c->clocks_per_epoch < 1)
		c->clocks_per_epoch = 1;
	c->nshards = o->shards ? o->shards : (o->ps ? o->ps : 1);
	if (c->nshards > DIST_MAX_SHARDS)
		c->nshards = DIST_MAX_SHARDS;
	/* A shard travels whole in one frame (a PARAMS hand-over or
	 * snapshot): --shards is the least count, and a model too big for
	 * it gets more, as many as it needs (MODEL_MAX_PARAMS floats fit
	 * 17 of 64 MiB).  The count follows from the model alone, so a
	 * resumed job gets the same. */
	{
		uint32_t asked = c->nshards;

		while (c->nshards < DIST_MAX_SHARDS &&
		       shard_floats_max(c, c->nshards) >
			       wire_range_chunk(WIRE_PAYLOAD_DEFAULT))
			c->nshards++;
		if (shard_floats_max(c, c->nshards) >
		    wire_range_chunk(WIRE_PAYLOAD_DEFAULT))
			return px_errorf(err, PX_ETOOBIG, "%" PRIu64 " parameters"
					 " do not fit %u shards of a frame "
					 "(%u floats) each", c->nparams,
					 DIST_MAX_SHARDS,
					 wire_range_chunk(WIRE_PAYLOAD_DEFAULT));
		if (c->nshards != asked)
			dist_logf(o, LOG_LVL_NOTICE, "%u shards, not the %u "
				  "asked: a shard of %" PRIu64 " parameters "
				  "must fit one frame", c->nshards, asked,
				  c->nparams);
	}
	c->stage = o->stage;
	c->expecting = o->expect_joins;
	c->meta = (struct ckpt_meta){
		.d = c->d, .total = c->total, .workers = o->workers,
		.batch = o->train.batch, .epochs = o->train.epochs,
		.n_train = c->n_train, .prep = c->prep,
	};
	if (c->mf)
		ckpt_meta_mf(&c->meta, &c->md);
	if (o->checkpoint) {
		c->mom = px_calloc(c->nparams, sizeof(float));
		if (!c->mom)
			return px_errorf(err, PX_ENOMEM, "momentum");
	}
	if (o->checkpoint && o->checkpoint_budget) {
		e = ckpt_chain_init(&c->chain, c->nparams, err);
		if (e != PX_OK)
			return e;
	}
	if (o->resume) {
		struct ckpt_meta have;

		e = ckpt_read(o->resume, &have, &c->ck_w, &c->ck_v, err);
		if (e == PX_OK)
			e = ckpt_check_job(o->resume, &have, &c->meta, err);
		data_prep_release(&have.prep);
		if (e != PX_OK)
			return e;
		c->min_clock = c->resumed_from = have.clock;
		/* the samples of the clocks before (an older file does not
		 * say: epochs' worth at the checkpoint's shape) */
		c->samples_base = have.samples ? have.samples :
			(uint64_t)((double)have.clock /
				   (double)c->clocks_per_epoch *
				   (double)c->n_train);
		memcpy(c->params, c->ck_w, c->nparams * sizeof(float));
		memcpy(c->snap, c->ck_w, c->nparams * sizeof(float));
		c->snap_clock = have.clock;
		/* resumed from the file it writes: its records go on from
		 * there (a restart needs no full checkpoint first) */
		if (o->checkpoint && same_file(o->checkpoint, o->resume))
			ckpt_chain_adopt(&c->chain, &have, c->ck_w);
		e = test_eval(c, &c->last_loss, &c->last_acc, err);
		if (e != PX_OK)
			return e;
		{
			char there[48];

			if (c->mf)
				snprintf(there, sizeof there, "test RMSE %.4f",
					 c->last_loss);
			else
				snprintf(there, sizeof there, "test accuracy "
					 "%.2f%%", 100.0 * c->last_acc);
			out(c, "resuming from %s%s: clock %" PRId64 " of %"
			    PRId64 ", %s there", o->resume,
			    have.deltas ? " and its incremental records" : "",
			    have.clock, have.total, there);
		}
	}
	return PX_OK;
}

enum px_err dist_coord_run(const struct dist_opts *o, struct px_error *err)
{
	struct coord *c = px_calloc(1, sizeof(*c));
	uint64_t next_hb, next_prog;
	int64_t next_eval, next_ckpt, next_every;
	enum px_err e;

	if (!c)
		return px_errorf(err, PX_ENOMEM, "coordinator");
	c->o = o;
	c->mf = o->train.model == MODEL_MF;
	c->last_loss = c->last_acc = NAN; /* not evaluated yet */
	c->train_rmse = NAN;
	c->resumed_from = c->ckpt_clock = -1;
	c->t0_us = px_now_mono_us();
	e = setup(c, err);
	if (e != PX_OK)
		goto out_free;
	/* the first epoch's end after the start (a resumed job's too) */
	next_eval = (c->min_clock / c->clocks_per_epoch + 1) *
		    c->clocks_per_epoch;
	next_ckpt = o->checkpoint_every
		? (c->min_clock / o->checkpoint_every + 1) *
			  (int64_t)o->checkpoint_every : INT64_MAX;
	next_every = o->eval_every
		? (c->min_clock / o->eval_every + 1) * (int64_t)o->eval_every
		: INT64_MAX;
	next_hb = px_now_mono_us();
	next_prog = next_hb + 1000000;
	dist_logf(o, LOG_LVL_INFO, "coordinator on %s: %" PRIu64 " parameters, "
		  "%u training examples", o->listen, c->nparams, c->n_train);
	while (!c->done) {
		struct nn_pollfd pf[2] = {
			{ .fd = net_nn_socket(c->rep), .events = NN_POLLIN },
			{ .fd = net_nn_socket(c->pull), .events = NN_POLLIN },
		};
		uint64_t now;

		if (nn_poll(pf, 2, dist_ms_until(next_hb, 50)) > 0) {
			if (pf[0].revents & NN_POLLIN)
				on_rep(c);
			if (pf[1].revents & NN_POLLIN)
				on_pull(c);
		}
		if (o->stop && *o->stop) {
			out(c, "stopped by a signal");
			shutdown_all(c, WIRE_SHUTDOWN_CANCEL);
			e = px_errorf(err, PX_ECANCELED, "stopped");
			goto out_free;
		}
		now = px_now_mono_us();
		if (now >= next_hb) {
			check_timeouts(c, now);
			/* Before the start this is the nodes' sign of life. */
			if (c->started)
				announce(c);
			else
				send_clock_min(c);
			next_hb = now + (uint64_t)o->hb_ms * 1000;
		}
		if (watchdog(c, now, err) || sole_copy_gone(c, now, err)) {
			/* the caller reports err */
			shutdown_all(c, WIRE_SHUTDOWN_ERROR);
			e = err->code;
			goto out_free;
		}
		if (!c->started)
			continue;
		relieve(c, now);
		if (o->stage_to && c->min_clock >= o->stage_at &&
		    !c->want_stage)
			c->want_stage = o->stage_to;
		if (c->want_stage && c->stage != c->want_stage) {
			out(c, "stage %u -> %u at clock %" PRId64, c->stage,
			    c->want_stage, c->min_clock);
			c->stage = c->want_stage;
			c->stage_changes++;
			c->epoch++;
			replace_all(c);
			announce(c);
		}
		if (c->min_clock >= c->total_est) {
			c->t_end_us = px_now_mono_us();
			break;
		}
		if ((o->eval_epochs && c->min_clock >= next_eval) ||
		    c->min_clock >= next_every) {
			c->measuring = !(o->eval_epochs &&
					 c->min_clock >= next_eval);
			e = progress(c, true, false, err);
			c->measuring = false;
			if (c->min_clock >= next_eval)
				next_eval += c->clocks_per_epoch;
			if (c->min_clock >= next_every)
				next_every = (c->min_clock / o->eval_every +
					      1) * (int64_t)o->eval_every;
			next_prog = now + 1000000;
		} else if (now >= next_prog || (c->progress_now &&
						now + 950000 >= next_prog)) {
			/* a node that read its notice: the daemon's
			 * controller may replace it now (measured: 0.46 s
			 * median, 28 market s at 60x, waiting for the
			 * second's report; docs/benchmarks.md), 50 ms
			 * after the last report at the soonest (a fleet's
			 * release is a burst of leaves) */
			c->progress_now = false;
			e = progress(c, false, false, err);
			next_prog = now + 1000000;
		}
		if (e != PX_OK) {
			shutdown_all(c, WIRE_SHUTDOWN_ERROR);
			goto out_free;
		}
		if (c->min_clock >= next_ckpt) {
			if (c->ckpt_clock != c->min_clock)
				snapshot(c);
			next_ckpt = (c->min_clock / o->checkpoint_every + 1) *
				    (int64_t)o->checkpoint_every;
		}
		if (o->fault_crash_at && c->min_clock >= o->fault_crash_at) {
			dist_logf(o, LOG_LVL_WARN,
				  "test fault: coordinator SIGKILLs "
				  "itself at clock %" PRId64, c->min_clock);
			raise(SIGKILL);
		}
	}
	if (c->done) {
		char hint[PX_ERRMSG_MAX / 2];

		shutdown_all(c, WIRE_SHUTDOWN_ERROR);
		ckpt_hint(c, hint, sizeof(hint));
		e = px_errorf(err, PX_EIO, "job failed: a shard was lost%s",
			      hint);
		goto out_free;
	}
	e = progress(c, true, true, err);
	if (e != PX_OK) {
		shutdown_all(c, WIRE_SHUTDOWN_ERROR);
		goto out_free;
	}
	shutdown_all(c, WIRE_SHUTDOWN_DONE);
	/* the final evaluation pulled the final parameters */
	if (o->export_path) {
		e = c->mf ? export_mf_write(o->export_path, &c->md, c->params,
					    c->seen, c->last_loss, err)
			  : export_write(o->export_path, &c->d, &c->prep,
					 c->params, c->last_acc, err);
		if (e != PX_OK)
			goto out_free;
		out(c, "model exported to %s", o->export_path);
	}
	if (print_result(c) != 0)
		e = px_errorf(err, PX_ENOMEM, "result");
out_free:
	dist_log_wire(o, LOG_LVL_INFO, "coordinator", c->ctx);
	if (c->agent && c->progress_sent)
		serve_for(c, 100); /* let the last PROGRESS go out */
	dist_links_close(&c->links);
	net_close(c->rep);
	net_close(c->pull);
	net_close(c->pub);
	net_close(c->agent);
	model_ctx_free(c->mc);
	gp_free(&c->gp);
	free(c->params);
	free(c->mom);
	free(c->ck_w);
	free(c->ck_v);
	free(c->snap);
	ckpt_chain_release(&c->chain);
	data_release(&c->test);
	data_prep_release(&c->prep);
	mf_set_release(&c->mtrain);
	mf_set_release(&c->mtest);
	free(c->seen);
	wire_ctx_free(c->ctx);
	free(c);
	return e;
}
