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
 * per-second, the job's interruption hazard.
 *
 * A node is the owner's command (hooks.command) for a place the world
 * chooses: the coordinator at ipc://JOBDIR/n0, the node's own sockets at
 * ipc://JOBDIR/iID (ID the instance's).  It runs in a process group of
 * its own, with the owner's environment plus what the command adds.
 *
 * A notice is a leave: the node's group gets SIGTERM with the real time
 * left and the reason as the signal's value (dist_leave_sigval, the
 * trainer's warned leave), then the owner's `notice` hook tells the rest;
 * at the eviction the group is SIGKILLed.  A node that dies on its own is
 * reported gone ("lost"), or failed (start_failed) when the job made no
 * progress since it started.  A release (the controller's) is a leave
 * too: the node is told the same way, gets release_ms real ms to leave
 * and end by itself, then its group is SIGKILLed; the controller closed
 * its bill at the release and hears nothing more of it.
 *
 * The owner (proteusd's job, or a test) drives the world through the
 * ops (world.h): next_ms says when to call run_due.  No threads; no signal
 * handlers: children are reaped with waitpid(WNOHANG) in run_due.  Its
 * instances are this host's processes: they end with the daemon
 * (instances_outlive_daemon false; every node watches its parent).
 */
#ifndef PX_WORLD_LOCAL_H
#define PX_WORLD_LOCAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../world.h"

/* Both halves: create from a world_setup (env, ms sealed, t0/end,
 * speedup >= 1, tick, wants, release_ms, hooks with a command, job_id and
 * job_dir for the node's place and cloud ids "local-J-I-pgG"). */
extern const struct world_ops lworld_ops;

/* What the ops do not say, for tests: the process group of instance id
 * (one the controller holds), or -1; and the released nodes still
 * leaving (their processes not yet ended).  w: lworld_ops.create's. */
pid_t lworld_pgid(const void *w, uint64_t id);
size_t lworld_leaving(const void *w);

#endif
