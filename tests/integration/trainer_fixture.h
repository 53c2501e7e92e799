/* trainer_fixture.h -- real proteus-trainer processes for the trainer
 * tests, and the test as their coordinator's agent (trainer_fixture.c). */
#ifndef PX_TRAINER_FIXTURE_H
#define PX_TRAINER_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../trainer/dist/net.h"
#include "../../trainer/dist/wire.h"
#include "pxrun.h"

/* The tests' job key (hex): agent_up's key is these bytes. */
#define TRAINER_KEYHEX "00112233445566778899aabbccddeeff" \
		       "00112233445566778899aabbccddeeff"

/* The waits in here are for events; their limits only end a test that
 * hangs, and are far above what a loaded machine takes. */
#define TRAINER_WAIT_MS 20000

/* The test's temp dir (each process's stderr is tmp/NAME.err), the
 * coordinator's endpoint ipc://tmp/n0 and the agent's PULL endpoint
 * ipc://tmp/agent.pull, the processes started (0: reaped), and the
 * agent's sockets (agent_up). */
struct trainer_fixture {
	char *tmp;
	char coord[600], agent_ep[600];
	pid_t pids[8];
	int n;
	struct wire_ctx *ctx;
	struct net_sock *pull, *req;
};
extern struct trainer_fixture tt;

void trainer_fixture_setup(void);
/* Kills every process group started, closes the agent, removes tmp. */
void trainer_fixture_teardown(void);
/* $PX_BUILD/proteus-trainer ARGV in a process group of its own, stdin
 * /dev/null, stdout and stderr to tmp/NAME.err, with a parent watch on
 * us.  Our environment goes with it less any job key or parent watch;
 * env (NULL-terminated, may be NULL) adds "K=V" entries in place of ours
 * and unsets the variables named alone ("K"). */
pid_t trainer_spawn(const char *name, const char *const *argv,
		    const char *const *env);
/* The same with the job key TRAINER_KEYHEX in PX_JOB_KEY. */
pid_t trainer_start(const char *name, const char *const *argv);
/* tmp/NAME.err as it is now ("" if none); free it. */
char *trainer_log(const char *name);
/* Wait up to ms for text in tmp/NAME.err. */
bool wait_log(const char *name, const char *text, int ms);
/* Exit status of pid (128 + signal if killed) within ms, or -1. */
int wait_exit(pid_t pid, int ms);
/* Register with the coordinator at tt.coord as job's agent, as proteusd
 * does, its PULL socket bound at tt.agent_ep. */
void agent_up(uint32_t job);
/* One COMMAND; the status of the coordinator's ACK. */
uint32_t command(struct wire_command c);
/* EXPECT node with these roles (asserts it is taken). */
void expect(uint32_t node, uint8_t roles);
/* The coordinator's "node N leaving (reason R, gone in G s)": G (waits
 * for the line; asserts it comes). */
double leave_gone(unsigned node, int reason);

#endif
