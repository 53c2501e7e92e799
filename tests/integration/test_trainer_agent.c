/* test_trainer_agent.c -- a running job steered by its agent, as proteusd
 * steers it: the test is the agent (registers, sends COMMANDs, reads
 * PROGRESS) of a real coordinator, and the instances are real
 * `proteus-trainer node` programs.
 *
 *  - EXPECT: with --expect-joins only the nodes the agent names come in,
 *    each with at most the roles it was granted;
 *  - STAGE: the coordinator moves to the stage the agent says, and its
 *    PROGRESS says so;
 *  - a SIGTERM sent to a node with sigqueue carries the milliseconds left:
 *    every role of the node leaves by that deadline (not the default 2 s)
 *    and the node exits 0;
 *  - a node whose role dies stops the others and exits 1 naming it;
 *  - a stub node (`node --stub`) is admitted as a member with no role,
 *    stays one on its heartbeats alone, and leaves when told;
 *  - a PS whose coordinator was killed takes another one at its address
 *    (a session it never registered with: frames refused) for silence,
 *    and exits 1.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/px.h"
#include "../../trainer/dist/dist.h"
#include "../../trainer/dist/dist_int.h"
#include "trainer_fixture.h"

#define JOB 77

/* the limits of the waits (trainer_fixture.h) */
#define WAIT_MS TRAINER_WAIT_MS

TestSuite(trainer_agent, .init = trainer_fixture_setup,
	  .fini = trainer_fixture_teardown, .timeout = 150);

/* A job that outlasts every test (the most epochs): a job that ended
 * before the test's signals made the leaves never come. */
#define EPOCHS 100000
#define COMMON "--model", "mlr", "--epochs", "100000", "--max-train", "600", \
	"--max-test", "100", "--batch", "32", "--threads", "1", \
	"--job", "77", "--coord", tt.coord

/* The coordinator, with the heartbeat timeout hb_ms (NULL: the
 * trainer's default). */
static void start_coordinator_hb(const char *hb_ms)
{
	const char *argv[] = { "proteus-trainer", "coordinator", COMMON,
			       "--node", "0", "--listen", tt.coord,
			       "--workers", "1", "--ps", "1", "--agent",
			       tt.agent_ep, "--expect-joins",
			       hb_ms ? "--hb-timeout" : NULL, hb_ms, NULL };

	trainer_start("coordinator", argv);
}

static void start_coordinator(void)
{
	start_coordinator_hb(NULL);
}

/* A node: base id, its PS (with_ps), one worker, reliable or not. */
static pid_t start_node(const char *base, bool with_ps, bool reliable)
{
	char listen[700], name[32];
	const char *argv[40] = { "proteus-trainer", "node", COMMON, "--node",
				 base, "--listen", listen, "--node-workers",
				 "1" };
	int n = 24;

	snprintf(listen, sizeof listen, "ipc://%s/n%s", tt.tmp, base);
	snprintf(name, sizeof name, "node%s", base);
	if (with_ps)
		argv[n++] = "--with-ps";
	if (reliable)
		argv[n++] = "--reliable";
	argv[n] = NULL;
	return trainer_start(name, argv);
}

/* The next PROGRESS frame whose stage is stage, within ms. */
static bool progress_stage(int stage, int ms)
{
	struct px_error err;
	struct wire_msg m;

	for (int i = 0; i < ms / 100; i++) {
		if (net_recv(tt.pull, &m, 100, &err) != PX_OK)
			continue;
		if (m.hdr.type == WIRE_PROGRESS && m.u.progress.stage == stage &&
		    m.u.progress.total_samples == EPOCHS * 600ull) {
			wire_msg_release(&m);
			return true;
		}
		wire_msg_release(&m);
	}
	return false;
}

/* The coordinator logs "gone in G s" for node's leave, G being the
 * node's deadline less the time the LEAVE came in.  The node set that
 * deadline to warn_ms after it saw the signal, which was sent at sent_us
 * (wall clock); the LEAVE came in before the test saw the line.  So,
 * however slow the machine: G <= warn, and G + (seen - sent) >= warn
 * (each to the 0.05 s G is rounded to).  A default deadline of 2 s
 * would fail the second unless the leave took warn - 2 s to come. */
static void check_leave(unsigned node, int reason, int warn_ms,
			int64_t sent_us)
{
	double gone = leave_gone(node, reason), warn = warn_ms / 1e3;
	double seen_s = (double)(px_now_wall_us() - sent_us) / 1e6;

	cr_assert(gone <= warn + 0.05, "node %u: gone in %.1f s, warned %.1f",
		  node, gone, warn);
	cr_assert(gone + seen_s >= warn - 0.05, "node %u: gone in %.1f s, "
		  "seen %.2f s after the signal: a deadline under the %.1f s "
		  "warned", node, gone, seen_s, warn);
}

Test(trainer_agent, expect_stage_and_a_warned_node)
{
	const uint8_t rel = WIRE_ROLE_PS_BACKUP;
	union sigval v = { .sival_int = 4000 };
	pid_t reliable, spot, spot2, stranger, greedy;
	int64_t sent_us;
	char *log;

	start_coordinator();
	agent_up(JOB);
	/* the reliable instance: PS 100 (may hold backups), worker 101 */
	expect(100, WIRE_ROLE_PS_ACTIVE | rel);
	expect(101, WIRE_ROLE_WORKER | rel);
	/* spot instances: PS 200, worker 201; PS 500, worker 501 */
	expect(200, WIRE_ROLE_PS_ACTIVE);
	expect(201, WIRE_ROLE_WORKER);
	expect(500, WIRE_ROLE_PS_ACTIVE);
	expect(501, WIRE_ROLE_WORKER);
	/* one whose node 400 the agent grants a worker's roles only, and
	 * that runs a PS there */
	expect(400, WIRE_ROLE_WORKER);
	expect(401, WIRE_ROLE_WORKER);
	reliable = start_node("100", true, true);
	spot = start_node("200", true, false);
	spot2 = start_node("500", true, false);
	stranger = start_node("300", false, false);
	greedy = start_node("400", true, false);
	cr_assert(wait_log("coordinator", "job started", WAIT_MS),
		  "the job did not start");
	cr_assert(wait_log("coordinator", "node 201 registered", WAIT_MS));
	cr_assert(wait_log("coordinator", "node 501 registered", WAIT_MS));
	/* not named: waits, never admitted */
	cr_assert(wait_log("coordinator", "node 301: not a node the agent "
			   "started (yet)", WAIT_MS));
	/* a PS the agent did not grant: refused, its node ends with 1 */
	cr_assert_eq(wait_exit(greedy, WAIT_MS), 1);
	log = trainer_log("node400");
	cr_assert_not_null(strstr(log, "refused"), "%s", log);
	free(log);
	log = trainer_log("coordinator");
	cr_assert_null(strstr(log, "node 301 registered"), "%s", log);
	cr_assert_null(strstr(log, "node 400 registered"), "%s", log);
	free(log);

	/* STAGE: the coordinator moves and reports it */
	cr_assert_eq(command((struct wire_command){ .op = WIRE_CMD_STAGE,
						    .stage = 2 }), PX_OK);
	cr_assert(wait_log("coordinator", "-> 2 at clock", WAIT_MS));
	cr_assert(progress_stage(2, WAIT_MS), "no PROGRESS in stage 2");

	/* an eviction notice with 4 s left: the spot node's roles leave
	 * by then, not by the default 2 s; and at once a release of the
	 * other spot node with 3.5 s, which proteusd's signal value says:
	 * its roles leave as warned ones do, and say why */
	sent_us = px_now_wall_us();
	cr_assert_eq(sigqueue(spot, SIGTERM, v), 0);
	cr_assert_eq(sigqueue(spot2, SIGTERM, (union sigval){
		.sival_int = dist_leave_sigval(3500, WIRE_LEAVE_RELEASE) }),
		0);
	check_leave(201, WIRE_LEAVE_EVICTION, 4000, sent_us);
	cr_assert_eq(wait_exit(spot, WAIT_MS), 0, "the warned node ends "
		     "well");
	check_leave(501, WIRE_LEAVE_RELEASE, 3500, sent_us);
	cr_assert_eq(wait_exit(spot2, WAIT_MS), 0, "the released node ends "
		     "well");
	cr_assert_eq(kill(reliable, 0), 0, "the reliable node runs on");
	/* a LEAVE for a node that never came: nothing to move, no error,
	 * and it is no longer expected */
	cr_assert_eq(command((struct wire_command){ .op = WIRE_CMD_LEAVE,
						    .node = { 401 } }),
		     PX_OK);
	(void)stranger;
}

/* A role of a node dies: the node stops the others and exits 1 saying
 * which. */
Test(trainer_agent, a_dead_role_takes_its_node_down)
{
	pid_t node;
	char *log;
	int st;

	start_coordinator();
	agent_up(JOB);
	expect(7100, WIRE_ROLE_PS_ACTIVE | WIRE_ROLE_PS_BACKUP);
	expect(7101, WIRE_ROLE_WORKER | WIRE_ROLE_PS_BACKUP);
	node = start_node("7100", true, true);
	cr_assert(wait_log("coordinator", "job started", WAIT_MS));
	{
		char cmd[800];

		snprintf(cmd, sizeof cmd, "pkill -KILL -g %d -f 'worker "
			 "--node 7101'", (int)node);
		cr_assert_eq(system(cmd), 0, "no worker 7101 to kill");
	}
	st = wait_exit(node, WAIT_MS);
	cr_assert_eq(st, 1);
	log = trainer_log("node7100");
	cr_assert_not_null(strstr(log, "worker 7101 was killed by signal 9"),
			   "%s", log);
	free(log);
	/* the node reaps its roles before it exits */
	cr_assert_neq(system("pgrep -f '[p]s --node 7100 ' >/dev/null"), 0,
		      "the PS outlived its node");
}

/* The latest PROGRESS within ms that lists node; its state and roles
 * (state 0: none listed it). */
static uint8_t member_in_progress(uint32_t node, int ms, uint8_t *roles)
{
	struct px_error err;
	struct wire_msg m;
	uint8_t state = 0;

	for (int i = 0; i < ms / 100; i++) {
		if (net_recv(tt.pull, &m, 100, &err) != PX_OK)
			continue;
		for (uint32_t k = 0; m.hdr.type == WIRE_PROGRESS &&
				     k < m.u.progress.n; k++)
			if (m.u.progress.members[k].node.v == node) {
				state = m.u.progress.members[k].state;
				*roles = m.u.progress.members[k].roles;
			}
		wire_msg_release(&m);
		if (state)
			return state;
	}
	return 0;
}

/* A stub node registers its base id with no role (within what the agent
 * granted), is in the PROGRESS membership the daemon takes readiness
 * from, takes no part in the job (it starts on the real node alone),
 * stays a member on heartbeats alone past several heartbeat timeouts,
 * and on a release's SIGTERM leaves (not lost) and exits 0.  A stub the
 * agent did not name waits, as any node does. */
Test(trainer_agent, a_stub_node_registers_and_only_heartbeats)
{
	char listen[700];
	const char *argv[] = { "proteus-trainer", "node", COMMON, "--node",
			       "200", "--listen", listen, "--with-ps",
			       "--node-workers", "1", "--stub", NULL };
	const char *stranger[] = { "proteus-trainer", "node", COMMON,
				   "--node", "300", "--listen", listen,
				   "--with-ps", "--stub", NULL };
	uint8_t roles = 0xff;
	uint64_t t0;
	pid_t stub;
	char *log;

	/* the stub beats every second: 3 s without one is a loss */
	start_coordinator_hb("3000");
	agent_up(JOB);
	expect(100, WIRE_ROLE_PS_ACTIVE | WIRE_ROLE_PS_BACKUP);
	expect(101, WIRE_ROLE_WORKER | WIRE_ROLE_PS_BACKUP);
	/* as proteusd names a spot instance's nodes */
	expect(200, WIRE_ROLE_PS_ACTIVE);
	expect(201, WIRE_ROLE_WORKER);
	snprintf(listen, sizeof listen, "ipc://%s/n200", tt.tmp);
	stub = trainer_start("stub200", argv);
	trainer_start("stub300", stranger);
	(void)start_node("100", true, true);
	cr_assert(wait_log("coordinator", "node 200 registered as stub",
			   WAIT_MS));
	cr_assert(wait_log("stub200", "stub 200 registered", WAIT_MS));
	cr_assert(wait_log("coordinator", "job started: 1 workers, 1 PS",
			   WAIT_MS), "the stub counted in the job's start");
	cr_assert_eq(member_in_progress(200, WAIT_MS, &roles),
		     WIRE_MEMBER_ACTIVE);
	cr_assert_eq(roles, 0, "the stub took roles %#x", roles);
	/* twice the heartbeat timeout later, still a member */
	t0 = px_now_mono_us();
	while (px_now_mono_us() - t0 < 6000000)
		(void)member_in_progress(200, 200, &roles);
	cr_assert_eq(member_in_progress(200, WAIT_MS, &roles),
		     WIRE_MEMBER_ACTIVE, "the stub's heartbeats did not keep "
		     "it a member");
	log = trainer_log("coordinator");
	cr_assert_null(strstr(log, "node 200 (stub) lost"), "%s", log);
	cr_assert_null(strstr(log, "node 201 registered"), "%s", log);
	cr_assert_null(strstr(log, "node 300 registered"), "%s", log);
	free(log);
	cr_assert(wait_log("coordinator", "node 300: not a node the agent "
			   "started (yet)", WAIT_MS));
	/* a release: it leaves, and ends well */
	cr_assert_eq(sigqueue(stub, SIGTERM, (union sigval){
		.sival_int = dist_leave_sigval(2000, WIRE_LEAVE_RELEASE) }),
		0);
	cr_assert(wait_log("coordinator", "node 200 leaving (reason 3",
			   WAIT_MS));
	cr_assert_eq(wait_exit(stub, WAIT_MS), 0);
}

/* More names (EXPECT) than the coordinator holds: none is refused; the
 * oldest names whose node never came are dropped to make room (a node
 * named that late comes in, one named first waits as a stranger does).
 * A fleet's start names every node of every instance, and a refused
 * instance's names were never taken back (the coordinator said "too many
 * nodes" past 1024 and the nodes named after that never joined). */
Test(trainer_agent, the_oldest_absent_names_make_room)
{
	char listen[700];
	const char *early[] = { "proteus-trainer", "node", COMMON, "--node",
				"10000", "--listen", listen, "--with-ps",
				"--stub", NULL };
	const char *late[] = { "proteus-trainer", "node", COMMON, "--node",
			       "12099", "--listen", listen, "--with-ps",
			       "--stub", NULL };

	snprintf(listen, sizeof listen, "ipc://%s/nstub", tt.tmp);
	start_coordinator();
	agent_up(JOB);
	for (uint32_t n = 10000; n < 12100; n++)
		expect(n, WIRE_ROLE_PS_ACTIVE);
	cr_assert(wait_log("coordinator", "nodes named to come never came",
			   WAIT_MS));
	trainer_start("stub12099", late);
	cr_assert(wait_log("coordinator", "node 12099 registered as stub",
			   WAIT_MS));
	trainer_start("stub10000", early);
	cr_assert(wait_log("coordinator", "node 10000: not a node the agent "
			   "started (yet)", WAIT_MS));
}

/* A PS whose coordinator was killed, and another coordinator up at the
 * same address before the PS's 5 s were out (as proteusd restarted brings
 * its job's back): the new one's broadcasts are of a session the PS never
 * registered with, refused, and no sign of life.  The PS counts its
 * coordinator silent and exits 1, so that its node ends and is started
 * again, registering with the new one.  A PS kept up by the refused
 * frames stayed unregistered for good, the new coordinator waiting on it
 * and the job's nodes never joining (jobs_ec2 kill_9_...). */
Test(trainer_agent, a_restarted_coordinator_is_not_the_one_a_ps_knew)
{
	const char *coord[] = { "proteus-trainer", "coordinator", COMMON,
				"--node", "0", "--listen", tt.coord,
				"--workers", "1", "--ps", "1", NULL };
	char listen[700];
	const char *ps[] = { "proteus-trainer", "ps", COMMON, "--node", "100",
			     "--listen", listen, NULL };
	pid_t c, p;
	char *log;

	snprintf(listen, sizeof listen, "ipc://%s/n100", tt.tmp);
	c = trainer_start("coordinator", coord);
	p = trainer_start("ps100", ps);
	cr_assert(wait_log("coordinator", "node 100 registered as ps",
			   WAIT_MS));
	cr_assert_eq(kill(c, SIGKILL), 0);
	cr_assert_eq(wait_exit(c, WAIT_MS), 128 + SIGKILL);
	c = trainer_start("coordinator2", coord);
	cr_assert(wait_log("coordinator2", "coordinator on ", WAIT_MS),
		  "the second coordinator did not come up");
	/* 5 s of silence and a little: well before the wait's end */
	cr_assert_eq(wait_exit(p, WAIT_MS), 1, "the PS outlived its "
		     "coordinator (still up, or not as a failure)");
	log = trainer_log("ps100");
	cr_assert_not_null(strstr(log, "coordinator silent for 5 s"), "%s",
			   log);
	free(log);
	(void)c;
}
