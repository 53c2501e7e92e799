/* controller.h -- the decision step, written once for every world.
 *
 * The controller keeps the fleet table (every live instance as the policy
 * sees it, with its running bill), builds the policy's input, checks the
 * policy's actions (fleet cap, bids below the market price, unknown
 * markets) and carries them out through the world's ops (world.h),
 * charges what runs under the job's billing model, replaces a reliable
 * instance the world lost, applies the stop rules (work done, deadline,
 * budget) and picks the reliability stage (AgileML tiers).  It does no
 * I/O and keeps no time of its own: every call takes the world's `now`,
 * and the billing-hour timers it needs are asked of the world.  (It reads
 * the monotonic clock only to time each decide() for proteusd's metrics,
 * ctrl_decide_hist; no decision depends on it.)
 *
 * Calls and their contract (docs/controller.md):
 *   ctrl_new            once, before anything else
 *   ctrl_step(START)    the first decision, at the job's start
 *   ctrl_launched ...   what the world reports, as it happens, in order
 *   ctrl_step           after the world's events of one instant: decides
 *                       when `why` wakes the policy, then charges the
 *                       billing hours that ended at that instant
 *   ctrl_stop           whether a stop rule holds
 *   ctrl_finish         releases everything and closes every bill
 * Events (launch, release, eviction, decisions...) go to the sink in the
 * order they happen; agent/journal.c (simulate --db and the daemon) turns
 * them into store rows.
 */
#ifndef PX_CONTROLLER_H
#define PX_CONTROLLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../bidbrain/policy.h"
#include "../cloudapi/market.h"
#include "../common/px.h"
#include "world.h"

enum ctrl_event_kind {
	CTRL_EV_DECIDE_ACQUIRE = 0, /* the policy asked for instances */
	CTRL_EV_DECIDE_RELEASE,     /* the policy asked to release one */
	CTRL_EV_LAUNCH,             /* an instance started (billing starts) */
	CTRL_EV_REJECT,             /* an acquisition could not be served */
	CTRL_EV_READY,              /* startup done: it contributes work */
	CTRL_EV_WARNING,            /* eviction notice */
	CTRL_EV_EVICTION,           /* evicted / interrupted by the provider */
	CTRL_EV_RELEASE,            /* ended by us (policy or job end) */
	CTRL_EV_DONE,               /* the run ended */
	CTRL_EV_STAGE,              /* the reliability stage changed */
	CTRL_EV_ADOPT,              /* an earlier life's instance taken up
				     * again (its bill opened at t_s, the
				     * provider's launch time) */
	CTRL_EV_BILL_END,           /* the provider's end of an instance we
				     * ended: amount_uusd more, end_s */
	CTRL_EV_MAX
};
const char *ctrl_event_name(enum ctrl_event_kind k);

struct ctrl_event {
	int64_t t_s;
	enum ctrl_event_kind kind;
	uint64_t instance;         /* 0 when none */
	const char *zone;          /* NULL for on-demand / none */
	const char *type;          /* NULL when none */
	bool reliable;
	int count;                 /* decide-acquire: instances asked;
				    * stage: the new stage */
	int64_t bid_uusd;
	int64_t price_uusd;        /* market price at t (spot) */
	int64_t amount_uusd;       /* release/eviction: final charge;
				    * bill-end: what the provider's end
				    * added (negative: took off) */
	int64_t end_s;             /* bill-end: the provider's end time
				    * (t_s: when the world learnt it) */
	const char *detail;        /* short reason text, may be NULL */
};

/* Returning non-PX_OK stops the run with that error. */
typedef enum px_err (*ctrl_sink_fn)(const struct ctrl_event *ev, void *ctx);

/* AgileML's reliability tiers: with R reliable and T transient instances
 * ready, stage 1 while T/R < stage2_ratio, stage 2 from there, stage 3 from
 * stage3_ratio (docs/controller.md).  A stage moves down only when the
 * ratio falls below its threshold by `hysteresis` (a fraction), so that one
 * eviction near a threshold does not flap the trainer's roles; it moves up
 * only on transients ready for `up_after_s` market seconds at least, so
 * that an instance evicted soon after it came (as at-price bids are) never
 * holds an ActivePS. */
struct ctrl_tiers {
	double stage2_ratio;       /* e.g. 1.0 */
	double stage3_ratio;       /* e.g. 8.0 */
	double hysteresis;         /* e.g. 0.25 */
	int64_t up_after_s;        /* e.g. 120: an eviction notice's length */
};
#define CTRL_TIERS_DEFAULT {1.0, 8.0, 0.25, 120}

/* Stage for R reliable and T transient ready instances, given the current
 * stage (1-3; 0: none yet). */
int ctrl_stage_for(const struct ctrl_tiers *t, int reliable, int transient,
		   int current);

/* A gate above the policy on what the job rents: the pool that several
 * jobs share (simulate --workload; docs/pool.md).  Every instance the
 * controller asks of the world is asked of the gate first, and the gate
 * hears of every instance the fleet table gains or loses. */
struct ctrl_gate {
	/* Whether one more instance of env type `type` in env market
	 * `market` (-1: on demand) at hour_uusd an hour may be rented at
	 * now: NULL when it may, else why not (the reject's reason). */
	const char *(*admit)(void *ctx, int64_t now, int type, int market,
			     int64_t hour_uusd);
	/* One instance more (sign 1: asked of the world or adopted) or
	 * less (-1: ended, refused or released) in the fleet table. */
	void (*hold)(void *ctx, int type, int market, int sign);
	void *ctx;
};

struct ctrl_setup {
	const struct pol_env *env;        /* borrowed for the run */
	const struct market_set *ms;      /* sealed; prices for bills */
	const struct policy_ops *policy;
	const struct world_ops *world;
	void *world_ctx;
	int64_t start_s;                  /* the job's start */
	int64_t window_end_s;             /* the world's end (sim: the
					   * window's end); INT64_MAX: none */
	struct ctrl_tiers tiers;
	/* On-demand reliable instances the world loses (ctrl_gone) are
	 * replaced by one of the same type. */
	bool replace_reliable;
	ctrl_sink_fn sink;                /* may be NULL */
	void *sink_ctx;
	const struct ctrl_gate *gate;     /* NULL: none */
};

/* What the world knows of the job's progress (sim: its work model; local
 * and ec2: the trainer's reports). */
struct ctrl_progress {
	double work_done_h;       /* reference-instance hours done */
	double rate_h;            /* work per hour of the fleet now */
	/* what the job measured of its scaling, for the policy's decision
	 * (pol_input.scaling); NULL: the spec's */
	const struct pol_scaling *scaling;
};

/* Counters of a run: what simulate prints. */
struct ctrl_stats {
	int64_t evictions;
	int64_t instances_launched;
	double instance_hours;
	double free_hours;
	int64_t decisions;        /* decide() calls */
	int64_t replaced;         /* reliable instances replaced */
};

struct ctrl;

/* Build a controller; runs the policy's init.  The setup's pointers must
 * outlive it.  PX_EINVAL (policy refuses the job), PX_ENOMEM. */
enum px_err ctrl_new(const struct ctrl_setup *s, struct ctrl **ret,
		     struct px_error *err);
/* A world whose provider bills to its own end of an instance (EC2 stops
 * billing when the terminate call arrives, after the decision) asks the
 * controller to keep what it needs to bring those bills there
 * (ctrl_bill_end).  Off by default (sim, local: the bill closes at the
 * decision, and nothing else bills). */
void ctrl_keep_bills(struct ctrl *c);
/* The provider's own end time end_s of instance id, which the controller
 * ended itself (a release, a failed start, the run's end) and whose bill
 * it closed at the decision: the bill is brought to end_s as if it had
 * closed there, ended by the user, or by the provider when provider is
 * true (the provider ended it before our end reached it: a spot
 * interruption racing a release; its first hour is free), and what that
 * adds (or takes off: an end before the close, a provider's end) is
 * charged (CTRL_EV_BILL_END at now, the ledger's line, the run's cost).
 * An id not kept (unknown, ended by the provider as the controller knew,
 * settled already), or an end that changes nothing, does nothing.  Valid
 * after ctrl_finish too, until ctrl_free. */
enum px_err ctrl_bill_end(struct ctrl *c, int64_t now, uint64_t id,
			  int64_t end_s, bool provider);
/* Instance q->id, which the controller does not hold (released before
 * the world heard it launched, or refused as far as it heard) and which
 * the provider launched at launched_s all the same (its answer came
 * after the release, or a listing showed it): the world terminates it
 * now; it is billed from launched_s to now as the user's end
 * (CTRL_EV_LAUNCH at launched_s, CTRL_EV_RELEASE at now: its instance
 * row and ledger line, the run's cost), and kept for the provider's end
 * (ctrl_bill_end).  launched_s < 0: it never launched; its bill, kept at
 * the release, is dropped.  Nothing when it was billed already or is
 * held.  Valid after ctrl_finish too, until ctrl_free. */
enum px_err ctrl_bill_late(struct ctrl *c, int64_t now,
			   const struct world_req *q, int64_t launched_s);
/* Instances whose bill ctrl_bill_end may still bring to their end, or
 * whose launch ctrl_bill_late may still bill (released before the world
 * heard it launched). */
size_t ctrl_bills_open(const struct ctrl *c);
/* Free it; the policy's fini.  Does not release instances (ctrl_finish). */
void ctrl_free(struct ctrl *c);

/* The latest instant of an event the controller emitted (0: none): a run
 * cannot end before it. */
int64_t ctrl_latest(const struct ctrl *c);

/* The instant the run must end by: the window's end or the job's deadline,
 * whichever comes first. */
int64_t ctrl_end(const struct ctrl *c);

/* ---- what the world reports (ids unknown to the controller are ignored:
 * a report may cross a release) ---- */

/* Instance id runs from now: its bill opens. */
enum px_err ctrl_launched(struct ctrl *c, int64_t now, uint64_t id);
/* The world could not serve the request for id. */
enum px_err ctrl_rejected(struct ctrl *c, int64_t now, uint64_t id,
			  const char *why);
/* Startup done: it contributes work from now. */
enum px_err ctrl_ready(struct ctrl *c, int64_t now, uint64_t id);
/* Eviction notice: it will be gone at gone_s.  Wakes the policy with
 * POL_WHY_WARNING. */
enum px_err ctrl_warned(struct ctrl *c, int64_t now, uint64_t id,
			int64_t gone_s);
/* The provider ended it now (evicted, interrupted, lost): its bill closes
 * under the provider's rules.  Wakes the policy with POL_WHY_EVICTION. */
enum px_err ctrl_gone(struct ctrl *c, int64_t now, uint64_t id,
		      const char *why);
/* It failed on its own (its software would not start, or died): ended as
 * the user's end (charged so, not an eviction), a reliable one replaced.
 * Wakes the policy with POL_WHY_EVICTION. */
enum px_err ctrl_failed(struct ctrl *c, int64_t now, uint64_t id,
			const char *why);
/* After a daemon restart, where instances outlive the daemon (ec2):
 * instance req->id, launched by an earlier life of the job at launched_s
 * (the provider's launch time, <= now), is the controller's again.  Its
 * bill opens at launched_s as if launched then (an earlier life closed no
 * bill of it), it is ready from now when ready (else it becomes so with
 * ctrl_ready), and the ids given from now on are past req->id.  An id
 * the controller holds already is PX_EEXIST.  Emits CTRL_EV_ADOPT at
 * launched_s.  The world asks no acquire for it. */
enum px_err ctrl_adopt(struct ctrl *c, int64_t now,
		       const struct world_req *req, int64_t launched_s,
		       bool ready);
/* Release instance id now, outside the policy's decision: the pool took
 * its share back (docs/pool.md).  Ended as the user's end with reason
 * why, given back to the world; the policy sees the fleet without it at
 * its next decision.  An unknown id does nothing. */
enum px_err ctrl_shed(struct ctrl *c, int64_t now, uint64_t id,
		      const char *why);
/* Env market `market` rests until until_s (the world found it out of
 * capacity): the policy does not see it (market_view's hide_until) and
 * an acquire in it is rejected, so that the next decision chooses
 * another. */
enum px_err ctrl_market_rests(struct ctrl *c, int market, int64_t until_s);
/* Ids given from now on are past id (requests an earlier life made that
 * never became instances keep their ids). */
void ctrl_ids_past(struct ctrl *c, uint64_t id);
/* A timer asked of the world fired. */
enum px_err ctrl_timer(struct ctrl *c, int64_t now,
		       enum ctrl_timer_kind kind, uint64_t id);
/* The id of the controller's budget timer (kind CTRL_TIMER_HOUR; no
 * instance has it): a world passes it back like any other. */
#define CTRL_BUDGET_TIMER_ID 0
/* The id of ctrl_wake's timer (kind CTRL_TIMER_HOUR; no instance has
 * it). */
#define CTRL_WAKE_TIMER_ID UINT64_MAX
/* The policy decides at market time at (>= the world's now), a
 * POL_WHY_TICK, besides its own triggers: what it plans with changed
 * outside its view (the jobs layer's exploration limit; the controller
 * itself after a refused request).  The earliest asked wins. */
enum px_err ctrl_wake(struct ctrl *c, int64_t at);

/* ---- the step ---- */

/* After the world's events at now: when (why | what the reports above
 * added) wakes the policy, decide and carry out its actions; then charge
 * the billing hours that ended at now.  POL_WHY_START for the first call. */
enum px_err ctrl_step(struct ctrl *c, int64_t now, unsigned why,
		      const struct ctrl_progress *p);
/* The bills brought up to now; the value the policy sees as cost until
 * the next call. */
int64_t ctrl_cost(struct ctrl *c, int64_t now);
/* The part of ctrl_cost of the on-demand instances running now (market
 * -1): their open bills brought up to now.  Ended bills are the sink's
 * (each release, eviction and bill-end event carries its amount). */
int64_t ctrl_cost_ondemand_open(struct ctrl *c, int64_t now);
/* Whether the fleet changed (launch, end, warning) since the last call. */
bool ctrl_take_changed(struct ctrl *c);

enum ctrl_stop {
	CTRL_RUN = 0,
	CTRL_STOP_DONE,           /* the work is done */
	CTRL_STOP_DEADLINE,       /* ctrl_end() reached */
	CTRL_STOP_BUDGET          /* the budget pays for nothing more */
};
/* Which stop rule holds at now.  The budget is a cap (docs/jobspec.md):
 * the controller starts no instance and no billing hour that would take
 * the committed spend past it, and under per-second billing asks a timer
 * (id CTRL_BUDGET_TIMER_ID) for the last second the fleet can be paid
 * for.  The budget rule holds once nothing more can be paid for: at that
 * second, or when the budget refused an instance or ended one and none
 * is left; also (a safety net) when the cost of the last ctrl_cost call
 * is past the budget. */
enum ctrl_stop ctrl_stop(const struct ctrl *c, int64_t now,
			 const struct ctrl_progress *p);
const char *ctrl_stop_name(enum ctrl_stop s);

/* End the run: release every instance (reason: "job done" when completed,
 * else "run ended"), close every bill, emit DONE.  Returns the final cost
 * in *ret_uusd. */
enum px_err ctrl_finish(struct ctrl *c, int64_t now, bool completed,
			int64_t *ret_uusd);

/* How long decisions took, every controller of this process together
 * since it started: the policy's decide() and carrying out its actions
 * (the world's calls), on the monotonic clock.  le[b]: decisions that
 * took at most ctrl_decide_bounds[b] seconds (cumulative, as a
 * Prometheus histogram's buckets). */
#define CTRL_DECIDE_BUCKETS 12
extern const double ctrl_decide_bounds[CTRL_DECIDE_BUCKETS];
struct ctrl_decide_hist {
	uint64_t le[CTRL_DECIDE_BUCKETS];
	uint64_t count;
	double sum_s;
};
void ctrl_decide_hist(struct ctrl_decide_hist *ret);

/* ---- views ---- */
const struct pol_fleet *ctrl_fleet(const struct ctrl *c);
const struct ctrl_stats *ctrl_stats(const struct ctrl *c);
int ctrl_stage(const struct ctrl *c);
/* Why the last failing call failed (calls return the code; the message is
 * kept here, since world callbacks have no error argument). */
const struct px_error *ctrl_error(const struct ctrl *c);

#endif
