/* ec2_world_int.h -- what the ec2 world's files share: the host's and a
 * job's state, and the functions one file calls in another (ec2_world.h is the
 * world's interface; docs/ec2-world.md has the file map).
 *
 *   ec2_host.c     the daemon-wide state (struct ec2_host): the client,
 *                  terminations retried until EC2 confirms, port slots,
 *                  the enrollment endpoint, the start's sweep      ec2h_*
 *   ec2_world.c    a job's world: its instances, its event queue, the
 *                  ops the controller and the daemon call          ec2w_*
 *   ec2_launch.c   acquire: RunInstances and its answer
 *   ec2_watch.c    DescribeInstances of the job's tag, every POLL_MS
 *   ec2_adopt.c    adoption, and the reconcile of a resumed job
 *   ec2_prices.c   live spot prices, and the price history at submit
 *   ec2_enroll.c   the enrollment endpoint's owner, and a node's
 *                  enrollment environment
 *   ec2_userdata.c the user data script (ec2_userdata.h)
 */
#ifndef PX_WORLD_EC2_WORLD_INT_H
#define PX_WORLD_EC2_WORLD_INT_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "../../cloudapi/awscred.h"
#include "../../cloudapi/ec2_api.h"
#include "../../common/enroll.h"
#include "../config.h"
#include "../controller.h"
#include "../evq.h"
#include "../loop.h"
#include "ec2_world.h"
#include "enroll_srv.h"
#include "../world.h"

#define POLL_MS 3000            /* DescribeInstances of a job's tag */
#define JOIN_S 900              /* market s a running node has to join */
#define COOL_S 600              /* market s a market rests after a
				 * capacity or price refusal */
#define THROTTLE_COOL_S 60      /* every market, after throttling */
#define LOST_SLOT_S 300         /* real s a lost answer's ports stay
				 * taken (EC2 may list it yet) */
#define TAG_DAEMON "proteus:daemon"
#define TAG_JOB "proteus:job"
#define TAG_ID "proteus:id"
#define TAG_SLOT "proteus:slot"
#define ENROLL_ENV_MAX 4        /* "K=V" a node's enrollment takes */

/* ---------------------------------------------------------------- host */

struct doomed {
	char id[EC2_ID_MAX];
	uint64_t due_us;         /* monotonic */
	bool in_flight;
	/* a job's, let go: its type and market, counted by the pool
	 * until EC2 confirms ("": not a job's instance) */
	char type[EC2_NAME_MAX];
	bool spot;
};

struct ec2_host {
	struct world_host *wh;
	struct awscred_provider *creds;
	struct curl_loop *el;
	struct ec2_client *c;
	char daemon_id[40];
	struct doomed *dv;
	size_t dn, dcap;
	int64_t term_timer;      /* loop timer, -1 */
	uint8_t *slots;          /* trainer port slots in use */
	size_t n_slots;
	int stride;              /* ports per slot (a role's three) */
	int64_t throttled_until; /* market s: every acquire rests */
	struct enroll_srv *es;   /* nodes enroll here (slot 0's port) */
	struct ec2w *worlds;     /* the live ones, for enrollment */
	struct call *detached;   /* in flight, their world gone */
	/* head_address as this host listens on it: the address a name
	 * resolved to when the host was made (nanomsg binds addresses
	 * only); nodes dial head_address itself */
	char bind[INET6_ADDRSTRLEN];
};

/* Market seconds per real second: 1, or the fake's ec2_clock_speedup. */
double ec2h_clock_speedup(const struct proteusd_config *cfg);
/* A client's settings under cfg (the endpoint key, else the client's
 * environment fallback), for creds. */
void ec2h_client_config(const struct proteusd_config *cfg,
			const char *region, struct awscred_provider *creds,
			struct ec2_config *ec);
/* The host's state, made on first use. */
enum px_err ec2h_get(struct world_host *wh, struct ec2_host **ret,
		     struct px_error *err);
/* Terminate instance id delay_ms from now (again and again until EC2
 * confirms).  Asking again for one already doomed brings it forward. */
void ec2h_terminate(struct ec2_host *h, const char *id, int64_t delay_ms);
/* The same, now, of an instance a job let go: of type, spot or not, which
 * the pool counts as used until EC2 confirms (world_ops.host_going; type
 * "": a job's world that is gone, not counted). */
void ec2h_terminate_let_go(struct ec2_host *h, const char *id,
			   const char *type, bool spot);
/* n free port slots in a row (-1: none), taken; an adopted node asks
 * for its own (want) back.  Slot k's first port is lo + k * stride. */
int ec2h_slot_take(struct ec2_host *h, int n, int want);
void ec2h_slot_give(struct ec2_host *h, int slot, int n);
int ec2h_slot_port(const struct ec2_host *h, int slot);

/* ---------------------------------------------------------------- world */

enum ew_kind {
	EW_PRICE = 0,   /* a market's price changed (id: env market) */
	EW_TICK,
	EW_HOUR,        /* the controller's timer (id: instance) */
	EW_END,
	EW_START,       /* the first decision, after a reconcile */
	EW_ANSWER,      /* an instance's state moved (id: instance) */
};

enum ist {
	I_ASKED = 0,    /* RunInstances on the wire */
	I_PENDING,      /* launched, not yet running */
	I_RUNNING,
	I_DONE,         /* ended: nothing more to tell the controller */
};

/* What the next EW_ANSWER of an instance tells the controller. */
enum itell {
	T_NONE = 0,
	T_LAUNCHED,
	T_REJECTED,
	T_READY,
	T_GONE,
	T_FAILED,
	T_WARNED,
};

struct inst {
	uint64_t id;
	int market, type;        /* env's */
	bool reliable;
	int64_t bid_uusd;
	char type_name[EC2_NAME_MAX];
	char zone[EC2_NAME_MAX];
	char token[EC2_TOKEN_MAX + 1];
	char iid[EC2_ID_MAX];
	enum ist st;
	bool released;           /* the controller let it go */
	bool lost_answer;        /* refused by a failure after which EC2
				  * may have launched it all the same */
	bool ready;
	int slot;
	int64_t asked_s;         /* market s of the request */
	int64_t launch_s;        /* EC2's launch time */
	int64_t running_s;       /* first seen running (market s) */
	int64_t end_s;           /* EC2's end time */
	uint64_t refused_us;     /* monotonic, when a lost answer came */
	int64_t warn_s;          /* its node read a notice: gone then */
	bool enrolled;           /* its node has the job's key */
	uint8_t enroll_pub[ENROLL_PUB_LEN]; /* the key it was given under */
	bool bill_end_told;      /* EC2's end time seen once (we ended it) */
	bool bill_end_due;       /* ... and not yet told the controller */
	bool end_by_ec2;         /* ... and EC2 ended it first (its spot
				  * interruption, before our terminate) */
	bool bill_late;          /* let go while asked: the controller
				  * keeps its bill until the answer, or a
				  * listing, says whether EC2 launched it */
	unsigned tell;           /* bits 1 << enum itell, to hand over */
	char why[256];
};

struct call;

#define EARLY_MAX 32

struct ec2w {
	struct world_setup s;
	struct ec2_host *h;
	struct ctrl *c;
	struct evq q;
	struct inst *v;
	size_t n, cap;
	int64_t step_t;
	int64_t *cool_s;         /* per env market: rests until */
	char (*cool_why)[160];
	int64_t poll_timer, price_timer;
	bool describing, pricing, started;
	bool run_over;           /* the job's run ended (end_leaves, just
				  * before its releases): releases end at
				  * once, and nothing is adopted any more */
	int64_t price_from_s;    /* the next poll asks from here */
	struct call *calls;      /* in flight */
	struct ctrl_progress start_p;
	char fatal[512];         /* set: run_due fails the job */
	int coord_slot;
	int node_slots;          /* slots a node's roles take */
	int64_t seen_poll;       /* DescribeInstances answers */
	/* nodes that joined while their instance was none of the world's
	 * (its RunInstances answer lost, the listing not yet seen): the
	 * adoption that follows finds them joined */
	uint64_t early[EARLY_MAX];
	unsigned n_early;
	struct ec2w *next_w;     /* the host's list */
	int64_t n_enrolled, n_refused;
};

struct call {
	struct call *next;       /* in its world's list, or the host's
				  * once the world is gone */
	struct ec2w *w;          /* NULL: the world is gone */
	struct ec2_host *h;
	uint64_t id;             /* the instance, for RunInstances */
	char type[EC2_NAME_MAX]; /* RunInstances: what it asked for */
	bool spot;
	char token[EC2_TOKEN_MAX + 1];
	int kind;                /* 0 run, 1 describe, 2 prices */
	uint64_t sent_us;        /* monotonic, when it was started */
};

/* ec2_world.c: the world's own */
struct call *ec2w_call_new(struct ec2w *w, int kind, uint64_t id);
/* Unlist k from its world (if it still has one) and free it. */
void ec2w_call_end(struct call *k);
/* The world's clock (ec2_world_now). */
int64_t ec2w_clock(const struct ec2w *w);
/* The instant the world tells the controller of something now: its
 * clock, never before the step it last took. */
int64_t ec2w_tell_t(const struct ec2w *w);
struct inst *ec2w_inst_of(struct ec2w *w, uint64_t id);
struct inst *ec2w_inst_by_iid(struct ec2w *w, const char *iid);
struct inst *ec2w_inst_add(struct ec2w *w, uint64_t id,
			   struct px_error *err);
/* Queue what in must tell the controller, at now. */
void ec2w_tell(struct ec2w *w, struct inst *in, enum itell t);
void ec2w_joined_early_add(struct ec2w *w, uint64_t id);
/* Whether id's node joined before its instance was the world's (taken
 * off the list). */
bool ec2w_joined_early(struct ec2w *w, uint64_t id);
/* The request in was for, as the controller asked it. */
struct world_req ec2w_req_of(const struct inst *in);
/* in, which the controller no longer holds, launched by EC2 at launched
 * (< 0: it never launched): billed from there to now (ctrl_bill_late). */
void ec2w_bill_late(struct ec2w *w, struct inst *in, int64_t launched);
/* The same, as EC2 answered or listed it (i). */
void ec2w_bill_late_seen(struct ec2w *w, struct inst *in,
			 const struct ec2_instance *i);
/* The end of in on our side: its port range back, nothing more to say. */
void ec2w_inst_close(struct ec2w *w, struct inst *in);
/* The first decision (POL_WHY_START), now. */
enum px_err ec2w_first_step(struct ec2w *w, struct px_error *err);

/* ec2_launch.c: the world's acquire */
enum px_err ec2w_acquire(void *vw, const struct world_req *q,
			 struct px_error *err);

/* ec2_watch.c: the job's instances as EC2 lists them */
const char *ec2w_tag_of(const struct ec2_instance *i, const char *k);
bool ec2w_alive(const char *state);
/* Whether EC2 ended instance i itself (a spot interruption). */
bool ec2w_ended_by_ec2(const struct ec2_instance *i);
/* DescribeInstances of the job's tag, answered to done. */
enum px_err ec2w_describe(struct ec2w *w, ec2_instances_done_fn done,
			  int kind, struct px_error *err);
/* The loop timer that asks it every POLL_MS. */
int64_t ec2w_poll_timer(struct loop *l, int64_t id, void *ctx);

/* ec2_adopt.c: instances this life did not launch */
/* Instance i (alive, the job's tag, id) becomes the controller's again. */
enum px_err ec2w_adopt(struct ec2w *w, const struct ec2_instance *i,
		       uint64_t id, struct px_error *err);
/* A resumed job's first listing: adopt, close, then the first step. */
void ec2w_reconcile_done(enum px_err rc, struct ec2_instance_list *l,
			 const struct px_error *err,
			 const struct ec2_aws_error *aws, void *ctx);

/* ec2_prices.c: the loop timer that polls the job's live prices */
int64_t ec2w_price_timer(struct loop *l, int64_t id, void *ctx);

/* ec2_enroll.c: the enrollment endpoint's owner (the host's enroll_srv) */
extern const struct enroll_owner ec2w_enroll_owner;
/* Whether instance in (adopted) enrolled in an earlier life. */
void ec2w_enrolled_before(struct ec2w *w, struct inst *in);
void ec2w_enrollments(const void *vw, int64_t *ret_ok, int64_t *ret_refused);
/* What the node of in needs to enroll, as "K=V" into
 * v[ENROLL_ENV_MAX + 1] (NULL-ended; ec2w_enroll_env_free). */
enum px_err ec2w_enroll_env(const struct ec2w *w, const struct inst *in,
			    char **v, struct px_error *err);
void ec2w_enroll_env_free(char **v);

#endif
