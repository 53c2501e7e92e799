/* world.h -- what the controller asks of a world.
 *
 * One controller (controller.h) decides what to rent; a world carries it
 * out and reports what happens: `sim` (agent/sim.c: a virtual clock that
 * jumps event to event over a replayed trace), `local` (process groups on
 * this host, a trace replayed on an accelerated clock) and `ec2` (real
 * instances through the Query API).  docs/controller.md has the whole
 * contract; in short:
 *
 *   controller -> world   acquire, release, timer (these ops)
 *   world -> controller   ctrl_launched, ctrl_rejected, ctrl_ready,
 *                         ctrl_warned, ctrl_gone, ctrl_timer, ctrl_step
 *
 * Times are market-time seconds (Unix seconds of the trace in sim/local,
 * real Unix seconds in ec2); the world owns the clock and passes `now` to
 * every controller call.  Instance ids are the controller's: assigned
 * before acquire, never reused; a world maps them to its own handles
 * (a pid, an EC2 instance id).
 */
#ifndef PX_WORLD_H
#define PX_WORLD_H

#include <stdbool.h>
#include <stdint.h>

#include "../bidbrain/policy.h"
#include "../cloudapi/market.h"
#include "../common/px.h"

/* One instance the controller wants.  Strings are borrowed for the call. */
struct world_req {
	uint64_t id;             /* the controller's id for it */
	int market;              /* env market; -1: on-demand */
	int type;                /* env type */
	bool reliable;           /* reliable tier (on-demand) */
	int64_t bid_uusd;        /* spot max price; 0 for on-demand */
	const char *type_name;   /* e.g. "m3.large" */
	const char *zone;        /* NULL for on-demand */
};

/* Timers the controller asks for: it has no clock of its own. */
enum ctrl_timer_kind {
	CTRL_TIMER_HOUR = 0,     /* an instance's billing hour ends */
	CTRL_TIMER_MAX
};

struct world_ops {
	const char *name;        /* "sim", "local", "ec2" */
	/* Ask for one instance.  The world answers, now or later, with
	 * ctrl_launched (billing starts then) or ctrl_rejected.  A world may
	 * call back into the controller before it returns (sim does).
	 * Non-PX_OK: the world itself failed (not "no capacity": that is
	 * ctrl_rejected). */
	enum px_err (*acquire)(void *w, const struct world_req *req,
			       struct px_error *err);
	/* End instance id now, at the controller's wish.  The controller has
	 * already closed its bill; the world must not report it again. */
	enum px_err (*release)(void *w, uint64_t id, struct px_error *err);
	/* Call ctrl_timer(kind, id) at t_s (>= now).  Timers at the same
	 * instant fire in the order they were asked for, after the world's
	 * own events of that instant that were scheduled before them. */
	enum px_err (*timer)(void *w, int64_t t_s, enum ctrl_timer_kind kind,
			     uint64_t id, struct px_error *err);
};

/* When a spot instance launched at now with this bid gets its eviction
 * notice (MARKET_NONE: never, in the trace): legacy, the first time the
 * market's price rises above the bid; per-second, also the first capacity
 * event of its pool (the market's zone and type) after now that takes it.
 * A pool's capacity events come at env->pool_rate_per_h(type) =
 * interrupt_per_h / pool_share per hour (a Poisson process drawn from the
 * env seed and the pool's name), and each takes each instance of the pool
 * with chance pool_share (drawn from the seed, the event and the id): an
 * instance's hazard is interrupt_per_h, and instances of one pool are
 * interrupted together.  Every world draws the same times.
 * docs/simulate.md ("Interruptions") has the model and where its numbers
 * come from. */
int64_t world_notice_at(const struct pol_env *env, const struct market *m,
			int type, uint64_t id, int64_t now, int64_t bid_uusd);

/* The capacity events of market m's pool in (from, to], ascending, for a
 * run under env (per-second billing; none under legacy or at a zero
 * rate): *ret (caller frees) and *ret_n.  PX_ENOMEM. */
enum px_err world_pool_events(const struct pol_env *env,
			      const struct market *m, int type, int64_t from,
			      int64_t to, int64_t **ret, size_t *ret_n,
			      struct px_error *err);

#endif
