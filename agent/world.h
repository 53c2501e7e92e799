/* world.h -- what the controller asks of a world.
 *
 * One controller (controller.h) decides what to rent; a world carries it
 * out and reports what happens: `sim` (a virtual clock that jumps event
 * to event over a replayed trace), `local` (process groups on this host,
 * a trace replayed on an accelerated clock) and `ec2` (real instances
 * through the Query API, and the enrollment endpoint that gives their
 * nodes the job's key), each in agent/world/ behind its header (sim.h,
 * local.h, ec2_world.h; ec2's code is one file a concern, ec2_*.c, whose
 * map is in ec2_world_int.h), with what they share in world.c.
 * docs/controller.md has the whole contract; in short:
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

/* A world's name with its NUL ("sim", "local", "ec2"): what the config's
 * `world` key, a spec's world.name and the store's jobs.world hold. */
#define WORLD_NAME_MAX 16

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

struct ctrl;
struct ctrl_progress;
struct loop;
struct store;
struct proteusd_config;
struct config_diag;
struct job_world;
struct world_host;

/* Why a node is told to leave. */
enum world_leave {
	WORLD_LEAVE_EVICTION = 0, /* the market takes it (a notice) */
	WORLD_LEAVE_RELEASE,      /* the controller gives it back */
};

/* The node an instance runs, world-neutral: the owner (a job) says what
 * to run, the world says where.  local: a process group with argv and
 * env added to the daemon's; ec2: the same command started on the
 * instance at boot (user data), its environment made there. */
struct world_node {
	char **argv;             /* argv[0] the trainer's path; NULL-ended,
				  * strings and array malloc'd (the world
				  * frees them) */
	char **env;              /* "K=V" to add, NULL-ended, likewise; may
				  * be NULL */
};

/* Where a node of instance id listens and reaches the coordinator: the
 * world chooses, the owner puts it in the node's command. */
struct world_place {
	char coord[128];         /* the coordinator's address (ipc:// or
				  * tcp://host:port) */
	char listen[160];        /* the node's own base address */
	bool remote;             /* the node runs on another machine,
				  * started from user data: its command
				  * must hold no secret (the job key is
				  * refused) */
};

/* What the owner (proteusd's job) provides to a world. */
struct world_hooks {
	/* The node instance req runs (place: where it listens). */
	enum px_err (*command)(void *ctx, const struct world_req *req,
			       const struct world_place *place,
			       struct world_node *ret, struct px_error *err);
	/* Instance id must leave: an eviction notice or a release; gone in
	 * gone_ms real ms.  The world has told the node itself (local: its
	 * process group got SIGTERM with dist_leave_sigval(gone_ms, why),
	 * the trainer's warned leave); the owner tells the rest (the
	 * coordinator).  May be NULL. */
	void (*notice)(void *ctx, uint64_t id, int64_t gone_ms,
		       enum world_leave why);
	/* Whether one more node may be started now (NULL: always); an
	 * acquire without room is rejected with why. */
	bool (*room)(void *ctx, char *why, size_t len);
	/* The job's progress mark (the trainer's clock): a node that ends
	 * before the mark moved past its value at the node's start never
	 * worked (NULL: a node that reported ready has started). */
	int64_t (*progress)(void *ctx);
	/* Instance id's node failed to start: how it ended ("exited with
	 * status 1"); the world ends it with ctrl_failed.  May be NULL. */
	void (*start_failed)(void *ctx, uint64_t id, const char *how);
	/* Instance id's node, which had worked, ended without being told
	 * to leave (its process gone: killed, or failed): the owner tells
	 * the coordinator at once, before the roles' heartbeats time out.
	 * May be NULL. */
	void (*ended)(void *ctx, uint64_t id);
	/* Instance req was adopted after a restart, or the job's
	 * coordinator was restarted (its node runs and will register with
	 * the new coordinator): the owner expects it as it expects a node
	 * it commands.  May be NULL. */
	void (*adopted)(void *ctx, const struct world_req *req);
	void *ctx;
	/* Readiness: false, after the job's startup_seconds of market time;
	 * true, only when the owner calls ops->ready. */
	bool ready_on_report;
	/* The nodes' output, appended to (local; NULL: the owner's). */
	const char *log_path;
	/* How the nodes' environment is built (local: px_spawn_env's
	 * flags, agent/spawnattr.h), with the command's env added. */
	unsigned spawn_env;
};

/* One job's world. */
struct world_setup {
	struct world_host *host;          /* the daemon's (shared by jobs) */
	int64_t job_id;
	const char *job_dir;              /* the job's directory (local:
					   * the nodes' sockets; NULL: a
					   * world_place left empty);
					   * borrowed, like every pointer
					   * here: it outlives the world */
	const struct pol_env *env;
	/* local: sealed, the trace.  ec2: the prices known at the start;
	 * the world appends what it polls (market_set_append) */
	struct market_set *ms;
	const char *region;
	int64_t t0_s;                     /* market time at the start */
	int64_t end_s;                    /* no event after this (ec2:
					   * INT64_MAX or the deadline) */
	double speedup;                   /* local: market s per real s */
	int64_t tick_s;                   /* POL_WHY_TICK period, market s */
	unsigned wants;                   /* the policy's wants */
	int64_t release_ms;               /* real ms a released node has to
					   * leave (0: killed at once) */
	int node_ports;                   /* tcp ports a node's roles take
					   * (3 each) */
	bool resume;                      /* the job had an earlier life:
					   * recover its instances */
	const uint8_t *job_key;           /* the job's key (32 bytes), from
					   * which ec2 draws its nodes'
					   * enrollment (common/enroll.h) */
	bool rebalance_leave;             /* ec2: a spot node leaves on a
					   * rebalance recommendation (the
					   * job's world.rebalance) */
	struct world_hooks hooks;
};

/* What the daemon has for its worlds (one per daemon). */
struct world_host {
	struct loop *loop;
	struct store *st;
	const struct proteusd_config *cfg;
	const char *daemon_id;            /* tags the daemon's resources */
	void *ec2;                        /* the ec2 world's shared state
					   * (client, sweep); NULL until it
					   * is first used */
};

struct world_ops {
	const char *name;        /* "sim", "local", "ec2": 1 to
				  * WORLD_NAME_MAX-1 bytes of [a-z0-9_] */
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

	/* ---- the daemon's half (NULL in sim, which simulate drives) ---- */

	/* Why a world without create is none for the daemon's jobs, for
	 * the config's `world` key ("is no world for jobs: ...").  NULL:
	 * "is not one of" the worlds that are. */
	const char *no_jobs;

	/* A world for one job; *ret is freed with free_world. */
	enum px_err (*create)(const struct world_setup *s, void **ret,
			      struct px_error *err);
	/* The controller it reports to (before start). */
	void (*attach)(void *w, struct ctrl *c);
	/* Whether instances the store has open for this job (a daemon
	 * killed or stopped) outlive the daemon: true (ec2): the world
	 * adopts or closes them itself at start (setup.resume); false
	 * (local): the owner closes them at the job's last recorded
	 * instant before the world is made, and calls end_orphan for
	 * each. */
	bool instances_outlive_daemon;
	/* An instance of an earlier life that the owner closes (with
	 * instances_outlive_daemon false), by its cloud id: end whatever is
	 * left of it (local: the process group the id names, if it still
	 * runs the trainer; the parent watch should have ended it).  May
	 * be NULL. */
	void (*end_orphan)(const char *cloud_id);
	/* The first decision (POL_WHY_START), after whatever the world
	 * must do first (ec2: reconcile a resumed job's instances). */
	enum px_err (*start)(void *w, const struct ctrl_progress *p,
			     struct px_error *err);
	/* Market time now. */
	int64_t (*now)(const void *w);
	/* Real ms until the world next needs run_due (0: now; -1: none). */
	int64_t (*next_ms)(const void *w);
	/* Hand every event due by now to the controller in order, each
	 * followed by ctrl_step at its instant; *ret_t: the instant of the
	 * last event handled (or now); stops early on a stop rule
	 * (*ret_stop: an enum ctrl_stop). */
	enum px_err (*run_due)(void *w, const struct ctrl_progress *p,
			       int64_t *ret_t, int *ret_stop,
			       struct px_error *err);
	/* The owner saw instance id's node ready (ready_on_report). */
	enum px_err (*ready)(void *w, uint64_t id, struct px_error *err);
	/* The job's coordinator was restarted: every live node must
	 * register with the new one (local: its command started anew). */
	enum px_err (*restart_nodes)(void *w, struct px_error *err);
	/* From now on a release ends a node at once, with no leave. */
	void (*end_leaves)(void *w);
	/* Nodes the controller holds. */
	size_t (*nodes)(const void *w);
	/* Nodes that use this host's resources now (local: processes,
	 * leaving ones included; ec2: 0). */
	size_t (*host_load)(const void *w);
	/* The provider's id of instance id ("i-0abc...", "local-J-I-pgG"),
	 * "" when it has none yet. */
	void (*cloud_id)(const void *w, uint64_t id, char *buf, size_t len);
	/* The node of instance id read its own instance's interruption
	 * notice (the provider's metadata, which only the instance can
	 * read): gone by deadline_us, wall clock.  The world tells the
	 * controller as it would a notice of its own (ctrl_warned).
	 * rebalance: it was a rebalance recommendation the node leaves on
	 * (setup.rebalance_leave), which ends no instance by itself: the
	 * world ends it.  NULL: a world whose notices are its own (sim,
	 * local). */
	void (*node_warned)(void *w, uint64_t id, int64_t deadline_us,
			    bool rebalance);
	/* After ctrl_finish, until the controller keeps no bill open
	 * (ctrl_bills_open): hand it the provider's end times of the
	 * instances it ended that the world learnt since (ctrl_bill_end;
	 * during the run, run_due does).  NULL: bills close at the decision
	 * (sim, local). */
	void (*bill_ends)(void *w);
	/* End everything still running and free. */
	void (*free_world)(void *w);
	/* Nodes that enrolled (got the job key over the network) and
	 * enrollments refused, in this life (ec2; NULL: none). */
	void (*enrollments)(const void *w, int64_t *ret_ok,
			    int64_t *ret_refused);
	/* Where the job's coordinator listens, and proteusd dials it
	 * (local: ipc://JOBDIR/n0; ec2: tcp://ADDRESS:PORT, ADDRESS
	 * head_address or the address its name resolved to: nanomsg binds
	 * no names).  Asked after create. */
	enum px_err (*coordinator)(const void *w, char *buf, size_t len,
				   struct px_error *err);
	/* Whether the nodes run on this host (the GPU check at submit,
	 * this host's capacity). */
	bool on_this_host;
	/* Whether market time is the provider's own clock (ec2): a run
	 * ends, and its bills close, at now, not at its last event. */
	bool real_clock;
	/* The job's markets, when they come from the provider rather than
	 * a trace (ec2: the spot-price history of the last days): added to
	 * *ms (not sealed), *ret_last_s the end of the job's window (the
	 * far future).  NULL: the trace.  Blocking (a load thread). */
	enum px_err (*load_market)(const struct proteusd_config *cfg,
				   const char *region,
				   const char *const *types, size_t n_types,
				   const char *const *zones, size_t n_zones,
				   struct market_set *ms, int64_t *ret_now_s,
				   int64_t *ret_last_s, struct px_error *err);
	/* Whether the daemon's settings let it run jobs on this world
	 * (ec2: config_ec2_check), the error naming the setting.  NULL:
	 * always. */
	enum px_err (*check)(const struct proteusd_config *cfg,
			     struct px_error *err);
	/* The same, each problem added to d (config_diag_add): proteusd's
	 * start when this is the daemon's default world (it exits on
	 * any).  Returns how many.  NULL: none. */
	size_t (*config_problems)(const struct proteusd_config *cfg,
				  struct config_diag *d);
	/* The world's own rules on a spec that names it (jobreq.h), after
	 * every field of its `world` object was read: PX_EINVAL naming
	 * "FILE: world.FIELD: why" (ec2: no trace, speedup or start, its
	 * market is the provider's, now; local: no rebalance).  NULL:
	 * every field is fine. */
	enum px_err (*spec_check)(const struct job_world *w,
				  const char *file, struct px_error *err);
	/* The instances (node processes) this host runs at once on this
	 * world, all jobs together (local: local_max_instances, else from
	 * the CPUs and memory): a job is fitted to it at submit and a node
	 * started only under it.  NULL: the provider's capacity (ec2). */
	int64_t (*capacity)(const struct proteusd_config *cfg);
	/* Whether a job's scaling exploration (its spec's explore) is off
	 * on this world (sim: simulate plans from the spec alone). */
	bool no_explore;
	/* The daemon's start (ec2: the sweep of its tagged instances) and
	 * exit, for the world_host's state of this kind.  May be NULL. */
	enum px_err (*host_start)(struct world_host *wh,
				  struct px_error *err);
	void (*host_free)(struct world_host *wh);
	/* Each instance the provider still counts against the account's
	 * quotas though no job holds it any more (ec2: let go, and EC2
	 * has not yet confirmed its TerminateInstances; or let go while
	 * its RunInstances was on the wire), by its type's name and
	 * market: the pool counts them as used, so that what one job lets
	 * go is not another's until the provider agrees.  NULL: a world
	 * whose releases end at once (local, sim). */
	void (*host_going)(const struct world_host *wh,
			   void (*each)(void *ctx, const char *type,
					bool spot),
			   void *ctx);
};

/* ---- the registry: every world by its name ---- */

/* The world named name (NULL: none, or name NULL).  The built-in ones
 * (agent/world/world.c: sim, local, ec2, in that order), then those
 * world_register added. */
const struct world_ops *world_ops_by_name(const char *name);
/* The i-th world of the registry, NULL past the last: for each world
 * (the daemon's start and exit, messages that list them). */
const struct world_ops *world_ops_at(size_t i);
/* Add a world (a test's, or one built outside agent/world/) before the
 * daemon starts (not thread-safe: at most WORLD_REGISTER_MAX, names
 * unique).  PX_EINVAL: a bad or taken name; PX_ETOOBIG: full. */
#define WORLD_REGISTER_MAX 8
enum px_err world_register(const struct world_ops *o, struct px_error *err);
/* The worlds that run the daemon's jobs (their ops have create), in
 * registry order, each in quote, ", " between and last before the last
 * one: ("\"", " or ") gives "\"local\" or \"ec2\"".  Returns how many. */
size_t world_daemon_names(char *buf, size_t len, const char *quote,
			  const char *last);

/* ---- the event driver the worlds share (agent/world/world.c) ---- */

struct evq;
struct evq_ev;

/* A world's queue of its own events (agent/evq.h) and how it hands them
 * to the controller. */
struct world_drive {
	struct ctrl *c;
	struct evq *q;
	void *w;                 /* the world, the callbacks' first argument */
	/* One event (ev->t the instant's): the controller told, the next
	 * event of its kind queued, its bits (POL_WHY_PRICE, _TICK) set in
	 * *why. */
	enum px_err (*handle)(void *w, const struct evq_ev *ev, unsigned *why,
			      struct px_error *err);
	/* The progress ctrl_step gets, once the instant's events are handled
	 * (sim: its work and rate then).  NULL: the caller's. */
	void (*progress)(void *w, struct ctrl_progress *ret);
	/* The books at t, after ctrl_step, when the fleet changed or a tick
	 * was among the events (sim: its record).  NULL: ctrl_cost(c, t),
	 * the daemon worlds' (local, ec2). */
	enum px_err (*books)(void *w, int64_t t, struct px_error *err);
	int64_t *step_t;         /* set to the instant before ctrl_step (the
				  * world's last step); may be NULL */
	bool retime;             /* every event due by the instant is handled
				  * as at it (ec2: the clock is EC2's, and a
				  * decision is made now, not at the past
				  * instant it was due) */
};

/* One instant t: ctrl_take_changed, then every event at t (retime: due
 * by t) popped in order to handle, *step_t = t, ctrl_step(t, why, *p)
 * (p filled by progress first, when set) and books when the fleet
 * changed or a tick came.  A controller's error is in err with its
 * message (err may be NULL). */
enum px_err world_drive_instant(const struct world_drive *d, int64_t t,
				struct ctrl_progress *p, struct px_error *err);

/* run_due of a daemon world (world_ops): every instant due by now, in
 * order (retime: one instant, now, or the last step if later), each
 * through world_drive_instant, then the stop rules (ctrl_stop) at it;
 * stops at the first that holds.  *ret_t: the last instant (or *ret_t
 * as the caller set it, none due); *ret_stop: CTRL_RUN or the rule. */
enum px_err world_drive_due(const struct world_drive *d, int64_t now,
			    const struct ctrl_progress *p, int64_t *ret_t,
			    int *ret_stop, struct px_error *err);

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
