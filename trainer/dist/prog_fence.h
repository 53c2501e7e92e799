/* prog_fence.h -- what holds a user's program in on its node (docs/
 * programs.md, "Rights"): a pids cgroup of its own, which bounds its tasks
 * to what procs_per_node needs and finds every one of them at a stop (a
 * process that left the agent's group too), and, on an instance, a
 * firewall rule that keeps the program's user off the instance metadata
 * service (the node's role credentials live there).
 *
 * Both are the node agent's, which runs as root on an instance and as the
 * daemon's user in the local world: a cgroup it cannot make leaves the
 * bound to RLIMIT_NPROC (the caller's fallback); a fence it cannot make
 * is reported, and the caller refuses to run the program (fail closed).
 */
#ifndef PX_PROG_FENCE_H
#define PX_PROG_FENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum prog_cg_kind { PROG_CG_NONE, PROG_CG_V1, PROG_CG_V2 };

struct prog_cg {
	enum prog_cg_kind kind;
	char path[512];          /* its folder, "" when none */
	int procs_fd;            /* its cgroup.procs, open for the child */
};

/* A pids cgroup named name below the agent's own (cgroup v2 where the
 * pids controller is enabled for the agent's subtree, else v1's pids
 * hierarchy), its pids.max = max.  False (cg->kind PROG_CG_NONE, the
 * reason in why) where none can be made. */
bool prog_cg_make(struct prog_cg *cg, const char *name, int64_t max,
		  char *why, size_t len);
/* In a forked child, before exec: move the child into cg (async-signal
 * safe).  False if it could not. */
bool prog_cg_enter(const struct prog_cg *cg);
/* sig to every task in cg; how many there were. */
int prog_cg_signal(const struct prog_cg *cg, int sig);
/* The cgroup's folder removed (after its tasks ended); the fd closed. */
void prog_cg_remove(struct prog_cg *cg);
const char *prog_cg_kind_name(enum prog_cg_kind k);

struct prog_imds_fence {
	char host[64];           /* the endpoint's address, "" when none */
	int port;
	bool v6;                 /* host is an IPv6 address */
	uid_t uid;
	char tag[48];            /* the rule's comment */
	bool applied, applied_v6;
};

/* Rules (iptables, ip6tables) that refuse TCP connections from uid to
 * the instance metadata endpoint (endpoint: an http URL; the default
 * endpoint's IPv6 twin too), then a check as uid that it is refused.
 * Rules left by agents that died are removed first.  False with the
 * reason in why when the program's user could still reach it. */
bool prog_imds_fence(struct prog_imds_fence *f, const char *endpoint,
		     uid_t uid, gid_t gid, char *why, size_t len);
/* The rules removed (at the agent's end). */
void prog_imds_unfence(struct prog_imds_fence *f);
/* Rules of agents that died, removed (an agent SIGKILLed cannot). */
void prog_imds_sweep(void);

#endif
