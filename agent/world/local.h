/* local.h -- the `local` world: instances are process groups on this
 * host, the market is a trace replayed on an accelerated clock.
 *
 * Market time runs `speedup` times faster than the monotonic clock from
 * t0_s.  Every event (a price change, a node ready, an eviction notice, an
 * eviction, a billing hour, a tick) is kept in market time and reaches the
 * controller with its own scheduled instant as `now`, however late the
 * process handling it runs, so a run is charged exactly as `simulate`
 * charges the same decisions.  Evictions come from the same model as sim
 * (world_notice_at): legacy, the trace's price rising above the bid;
 * per-second, the job's interruption hazard.  A notice reaches the node
 * through the owner's `notice` hook with the real time left; at the
 * eviction the node's process group is SIGKILLed.  A node that dies on its
 * own is reported gone ("lost").  A release (the controller's) is a leave
 * too: the same hook tells the node, it gets release_ms real ms to leave
 * and end by itself, then its group is SIGKILLed; the controller closed its
 * bill at the release and hears nothing more of it.
 *
 * The owner (proteusd's job, or a test) builds each node's command line,
 * drives the world from its event loop (lworld_next_ms, lworld_run_due)
 * and may report readiness itself (a trainer node that registered) instead
 * of the startup delay of the job spec.  No threads; no signal handlers:
 * children are reaped with waitpid(WNOHANG) in lworld_run_due.
 */
#ifndef PX_WORLD_LOCAL_H
#define PX_WORLD_LOCAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../bidbrain/policy.h"
#include "../../cloudapi/market.h"
#include "../controller.h"
#include "world.h"

/* Why a node is told to leave. */
enum lw_leave {
	LW_LEAVE_EVICTION = 0,   /* the market takes it (a notice) */
	LW_LEAVE_RELEASE,        /* the controller gives it back */
};

struct lw_hooks {
	/* The command instance req runs, argv[0] a path; *ret_argv and its
	 * strings are freed by the world with free().  The environment is
	 * the owner's, plus what env_add lists ("K=V", may be NULL; freed
	 * likewise). */
	enum px_err (*command)(void *ctx, const struct world_req *req,
			       char ***ret_argv, char ***ret_env_add,
			       struct px_error *err);
	/* Instance id must leave: an eviction notice or a release; gone in
	 * gone_ms real ms.  May be NULL (then the node learns of it only by
	 * being killed). */
	void (*notice)(void *ctx, uint64_t id, pid_t pgid, int64_t gone_ms,
		       enum lw_leave why);
	void *ctx;
	/* Readiness: false, after the job's startup_seconds of market time;
	 * true, only when the owner calls lworld_ready. */
	bool ready_on_report;
	/* The nodes' standard output and error, appended to (NULL: the
	 * owner's). */
	const char *log_path;
	/* Whether this host may run one more node now (NULL: always); an
	 * acquire without room is rejected with why (the controller's
	 * REJECT), and nothing is started. */
	bool (*room)(void *ctx, char *why, size_t len);
	/* The job's progress mark (the trainer's clock): a node that ends
	 * on its own before the mark moved past what it was at its start
	 * never worked: its start failed (NULL: a node that reported
	 * ready has started). */
	int64_t (*progress)(void *ctx);
	/* A node whose start failed: status as waitpid gave it.  The world
	 * ends the instance as failed (ctrl_failed), not lost.  May be
	 * NULL. */
	void (*start_failed)(void *ctx, uint64_t id, int status);
};

struct lw_setup {
	const struct pol_env *env;
	const struct market_set *ms;      /* sealed */
	int64_t t0_s;                     /* market time at the start */
	int64_t end_s;                    /* no event after this */
	double speedup;                   /* market s per real s, >= 1 */
	int64_t tick_s;                   /* POL_WHY_TICK period, market s */
	unsigned wants;                   /* the policy's wants (price
					   * changes are queued only if
					   * asked) */
	int64_t release_ms;               /* real ms a released node has to
					   * leave (0: killed at once) */
	struct lw_hooks hooks;
};

struct lworld;

/* PX_EINVAL for a speedup < 1 or not finite, an empty window. */
enum px_err lworld_new(const struct lw_setup *s, struct lworld **ret,
		       struct px_error *err);
/* How a node's process ended, from its waitpid status: "exited with
 * status N" or "killed by signal N". */
void lworld_ended_how(int status, char *buf, size_t len);
/* Nodes of this world that are processes now (held and leaving). */
size_t lworld_processes(const struct lworld *w);
/* SIGKILL every process group still running and reap them. */
void lworld_free(struct lworld *w);
/* The controller it reports to (set before the first acquire). */
void lworld_attach(struct lworld *w, struct ctrl *c);
extern const struct world_ops lworld_ops;

/* The first decision (POL_WHY_START) at t0, after queueing the first
 * price changes, the tick and the end of the run. */
enum px_err lworld_start(struct lworld *w, const struct ctrl_progress *p,
			 struct px_error *err);
/* Market time now (t0_s + elapsed * speedup). */
int64_t lworld_now(const struct lworld *w);
/* Real ms until the next event is due, or a released node's time to
 * leave is up (0: now; -1: none). */
int64_t lworld_next_ms(const struct lworld *w);
/* Reap nodes that died (reported gone, "lost"; released ones are only
 * forgotten) and kill released nodes whose time to leave is up, then hand
 * every event due
 * by now to the controller in order, each followed by ctrl_step at its
 * instant.  *ret_t is the market instant of the last event handled (or
 * now when none).  Stops early when a stop rule holds (*ret_stop). */
enum px_err lworld_run_due(struct lworld *w,
			   const struct ctrl_progress *p,
			   int64_t *ret_t, enum ctrl_stop *ret_stop,
			   struct px_error *err);
/* The owner's readiness report for id (with ready_on_report). */
enum px_err lworld_ready(struct lworld *w, uint64_t id,
			 struct px_error *err);
/* The process group of id (the controller holds it), or -1. */
pid_t lworld_pgid(const struct lworld *w, uint64_t id);
/* Start every live instance's command again (SIGKILL of its group, then
 * the command hook anew), as an instance's init would restart its
 * program: after the job's coordinator was restarted, the nodes must
 * register with the new one.  The instances and their bills go on. */
enum px_err lworld_respawn(struct lworld *w, struct px_error *err);
/* From now on a release kills at once, with no leave: the run is ending
 * (ctrl_finish), there is no work to hand over. */
void lworld_end_leaves(struct lworld *w);
/* Nodes the controller holds (a released node no longer counts). */
size_t lworld_nodes(const struct lworld *w);
/* Released nodes still leaving (their processes not yet ended). */
size_t lworld_leaving(const struct lworld *w);

#endif
