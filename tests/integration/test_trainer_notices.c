/* test_trainer_notices.c -- a node that learns it must leave without a
 * signal from a parent, as on EC2: the test is the agent of a real
 * coordinator (as in test_trainer_agent.c), the instances are real
 * `proteus-trainer node` programs, and the instance metadata is the fake
 * EC2's IMDSv2 (tests/fake_ec2/fake_ec2.py, its clock 60 times faster,
 * which the nodes are told: --clock-speedup, --clock-origin).
 *
 *  - a spot interruption notice in the metadata: every role of the node
 *    leaves with reason eviction, by a deadline before the notice's time
 *    (mapped from the fake's clock), the node exits 0, training goes on
 *    and no loss is counted; a rebalance recommendation is logged and is
 *    no leave;
 *  - with --leave-on-rebalance a recommendation is a leave (reason
 *    rebalance); a notice whose time is past is a leave at once;
 *  - the agent's LEAVE (a release) stops a node: its roles leave and it
 *    exits 0, with no signal from anyone; its polls of an IMDS that is
 *    not there fail, are logged once, and change nothing;
 *  - the time a notice leaves (dist_node_notice_ms): the clock mapping,
 *    the margin and its cap, a time already past.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../../common/px.h"
#include "../../trainer/dist/dist.h"
#include "../../trainer/dist/dist_int.h"
#include "../../trainer/dist/dist_node.h"
#include "../fake_ec2/fake.h"
#include "trainer_fixture.h"

#define JOB 78
#define SPEEDUP 60

/* What this file adds to the trainer fixture's tt: the fake EC2 and the
 * nodes' view of its IMDS and clock. */
static struct {
	char imds_env[128], origin[32];
	int64_t t0;                   /* the fake clock's origin (Unix s) */
	struct fake fake;
} t;

static void teardown(void)
{
	trainer_fixture_teardown();
	fake_stop(&t.fake);
	memset(&t, 0, sizeof t);
}

/* the limits of the waits (trainer_fixture.h) */
#define WAIT_MS TRAINER_WAIT_MS

TestSuite(trainer_notices, .init = trainer_fixture_setup,
	  .fini = teardown, .timeout = 150);

/* The fake EC2 whose legacy IMDS (on its own port) the nodes poll. */
static void imds_up(void)
{
	const char *args[] = { "--no-exec", "--speedup", "60",
			       "--clock-origin", t.origin, "--timeout", "300",
			       NULL };

	t.t0 = (int64_t)time(NULL);
	snprintf(t.origin, sizeof t.origin, "%lld", (long long)t.t0);
	fake_start_args(&t.fake, args);
	snprintf(t.imds_env, sizeof t.imds_env,
		 "AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:%d/",
		 t.fake.port);
}

/* The fake's clock now (its own reading). */
static double fake_now(void)
{
	json_t *j = fake_get_json(&t.fake, "cmd=clock");
	double v = json_number_value(json_object_get(j, "fake_now"));

	json_decref(j);
	cr_assert(v > 0);
	return v;
}

/* The real instant at which the fake's clock reads fake_s. */
static double real_of(int64_t fake_s)
{
	return (double)t.t0 + (double)(fake_s - t.t0) / SPEEDUP;
}

/* Set (or clear: NULL) the IMDS's instance-action and rebalance. */
static void imds_set(const char *action, int64_t at_s, int64_t rebal_s)
{
	char cmd[300], a[32], r[32], act[120];

	if (action)
		snprintf(act, sizeof act, "{\"action\":\"%s\",\"time\":\"%s\"}",
			 action, px_format_time(at_s, a, sizeof a));
	else
		snprintf(act, sizeof act, "null");
	if (rebal_s)
		snprintf(cmd, sizeof cmd, "{\"imds\":{\"instance_action\":%s,"
			 "\"rebalance\":{\"noticeTime\":\"%s\"}}}", act,
			 px_format_time(rebal_s, r, sizeof r));
	else
		snprintf(cmd, sizeof cmd, "{\"imds\":{\"instance_action\":%s,"
			 "\"rebalance\":null}}", act);
	json_decref(fake_ctl(&t.fake, cmd));
}

/* proteus-trainer ARGV with the job key and the IMDS's endpoint (none:
 * not ours either). */
static pid_t start(const char *name, const char *const *argv)
{
	const char *const env[] = { DIST_KEY_ENV "=" TRAINER_KEYHEX,
				    t.imds_env[0] ? t.imds_env :
				    "AWS_EC2_METADATA_SERVICE_ENDPOINT", NULL };

	return trainer_spawn(name, argv, env);
}

/* A job that outlasts every test. */
#define EPOCHS 100000
#define COMMON "--model", "mlr", "--epochs", "100000", "--max-train", "600", \
	"--max-test", "100", "--batch", "32", "--threads", "1", \
	"--hb-timeout", "3000", "--job", "78", "--coord", tt.coord

/* Stage 2: the shards are active on the spot nodes' PS, backed up on the
 * reliable one's, so that a leaving PS has shards to hand over. */
static void start_coordinator(void)
{
	const char *argv[] = { "proteus-trainer", "coordinator", COMMON,
			       "--node", "0", "--listen", tt.coord,
			       "--workers", "1", "--ps", "1", "--stage", "2",
			       "--agent", tt.agent_ep, "--expect-joins", NULL };

	start("coordinator", argv);
}

/* A node: base id, a PS and one worker; reliable, or a spot one with
 * `more` options (NULL-terminated) after its own. */
static pid_t start_node(const char *base, bool reliable,
			const char *const *more)
{
	char listen[700], name[32];
	const char *argv[48] = { "proteus-trainer", "node", COMMON, "--node",
				 base, "--listen", listen, "--node-workers",
				 "1", "--with-ps" };
	int n = 0;

	while (argv[n])
		n++;
	snprintf(listen, sizeof listen, "ipc://%s/n%s", tt.tmp, base);
	snprintf(name, sizeof name, "node%s", base);
	if (reliable)
		argv[n++] = "--reliable";
	for (int i = 0; more && more[i]; i++)
		argv[n++] = more[i];
	argv[n] = NULL;
	return start(name, argv);
}

/* A spot node that polls the IMDS, its clock the fake's: every 5 s of
 * that clock by default, 83 real ms. */
static pid_t start_imds_node(const char *base, bool leave_on_rebalance)
{
	const char *more[] = { "--imds-notices",
			       "--clock-speedup", "60", "--clock-origin",
			       t.origin, leave_on_rebalance ?
			       "--leave-on-rebalance" : NULL, NULL };

	return start_node(base, false, more);
}

static int count(const char *s, const char *text)
{
	int k = 0;

	for (const char *p = s; (p = strstr(p, text)); p += strlen(text))
		k++;
	return k;
}

/* The job: the agent, a reliable node 100 and the spot nodes named
 * (their PS at base, their worker at base + 1), all registered. */
static void job_up(const unsigned *spot, int n_spot)
{
	start_coordinator();
	agent_up(JOB);
	expect(100, WIRE_ROLE_PS_ACTIVE | WIRE_ROLE_PS_BACKUP);
	expect(101, WIRE_ROLE_WORKER | WIRE_ROLE_PS_BACKUP);
	for (int i = 0; i < n_spot; i++) {
		expect(spot[i], WIRE_ROLE_PS_ACTIVE);
		expect(spot[i] + 1, WIRE_ROLE_WORKER);
	}
	start_node("100", true, NULL);
}

/* Both roles of node base registered (a leave before a role registers
 * would be another story: a role told to stop while it registers ends
 * without a word to the coordinator). */
static void wait_registered(unsigned base)
{
	char what[64];

	for (unsigned k = base; k <= base + 1; k++) {
		snprintf(what, sizeof what, "node %u registered", k);
		cr_assert(wait_log("coordinator", what, WAIT_MS), "no '%s'",
			  what);
	}
}

/* The latest clock the coordinator's PROGRESS frames say, read for up
 * to ms (-1: none came). */
static int64_t progress_clock(int ms)
{
	struct px_error err;
	struct wire_msg m;
	int64_t c = -1;

	for (int i = 0; i < ms / 100; i++) {
		if (net_recv(tt.pull, &m, 100, &err) != PX_OK) {
			if (c >= 0)
				break;
			continue;
		}
		if (m.hdr.type == WIRE_PROGRESS &&
		    m.u.progress.total_samples == EPOCHS * 600ull)
			c = m.u.progress.clock;
		wire_msg_release(&m);
	}
	return c;
}

/* Training goes on: the clock moves past where it is now. */
static void clock_moves(void)
{
	int64_t c0 = progress_clock(WAIT_MS), c = c0;

	cr_assert_geq(c0, 0, "no PROGRESS");
	for (int i = 0; i < 100 && c < c0 + 3; i++)
		c = progress_clock(WAIT_MS);
	cr_assert_geq(c, c0 + 3, "training stopped at clock %lld",
		      (long long)c0);
}

/* Node base's roles left (the coordinator noticed them gone as leavers,
 * not as losses) after the node exited 0. */
static void left_not_lost(unsigned base)
{
	char what[64], *log;

	snprintf(what, sizeof what, "node %u (ps) left", base);
	cr_assert(wait_log("coordinator", what, WAIT_MS), "no '%s'", what);
	snprintf(what, sizeof what, "node %u (worker) left", base + 1);
	cr_assert(wait_log("coordinator", what, WAIT_MS), "no '%s'", what);
	log = trainer_log("coordinator");
	snprintf(what, sizeof what, "node %u (ps) lost", base);
	cr_assert_null(strstr(log, what), "%s", log);
	snprintf(what, sizeof what, "node %u (worker) lost", base + 1);
	cr_assert_null(strstr(log, what), "%s", log);
	cr_assert_null(strstr(log, "lost:"), "%s", log);
	free(log);
}

/* NAME logged a rebalance recommendation, and no leave for it. */
static void rebalance_logged(const char *name)
{
	char *log;

	cr_assert(wait_log(name, "imds: rebalance recommendation at ",
			   WAIT_MS));
	log = trainer_log(name);
	cr_assert_not_null(strstr(log, "no leave (no --leave-on-rebalance)"),
			   "%s", log);
	free(log);
}

Test(trainer_notices, an_interruption_notice_is_a_leave)
{
	static const unsigned spot[] = { 200 };
	double f, left, gone, seen;
	int64_t notice, sent_us, rebal;
	pid_t node;
	char *log;

	imds_up();
	job_up(spot, 1);
	node = start_imds_node("200", false);
	cr_assert(wait_log("coordinator", "job started", WAIT_MS));
	wait_registered(200);

	/* a rebalance recommendation: logged, no leave */
	rebal = (int64_t)fake_now();
	imds_set(NULL, 0, rebal);
	rebalance_logged("node200");

	/* the notice: terminated 6 real s from now (360 s of the fake's
	 * clock); the recommendation stays, as on EC2 */
	f = fake_now();
	notice = (int64_t)ceil(f) + 360;
	sent_us = px_now_wall_us();
	imds_set("terminate", notice, rebal);
	left = real_of(notice) - (double)sent_us / 1e6;
	/* Each role's deadline (G: what is left of it when the coordinator
	 * hears of it, rounded to 0.05 s) comes before the notice's time,
	 * whatever the machine's load: G <= left.  And it is the notice's
	 * time less a margin of at most a quarter of what was left when the
	 * node saw it: G + (the time until the test saw the line) >= 3/4 of
	 * left (the default 2 s would be well under that, unless the leave
	 * took long to come). */
	for (unsigned k = 200; k <= 201; k++) {
		gone = leave_gone(k, WIRE_LEAVE_EVICTION);
		seen = (double)(px_now_wall_us() - sent_us) / 1e6;
		cr_assert(gone <= left + 0.051, "node %u: gone in %.2f s, the "
			  "notice's time %.2f s after it was set", k, gone,
			  left);
		cr_assert(gone + seen >= 0.75 * left - 0.051, "node %u: gone "
			  "in %.2f s, seen %.2f s after the notice, %.2f s "
			  "before its time", k, gone, seen, left);
	}
	/* no signal from anyone: the node ends by itself, and well */
	cr_assert_eq(wait_exit(node, WAIT_MS), 0);
	log = trainer_log("node200");
	cr_assert_eq(count(log, "imds: spot interruption notice: terminate "
			   "at "), 1, "one notice, acted on once:\n%s", log);
	cr_assert_eq(count(log, "imds: rebalance recommendation at "), 1,
		     "one recommendation, logged once:\n%s", log);
	free(log);
	left_not_lost(200);
	clock_moves();
}

Test(trainer_notices, a_rebalance_leave_and_a_notice_already_past)
{
	static const unsigned spot[] = { 200, 300 };
	pid_t eager, plain;
	int64_t rebal;
	double gone;
	char *log;

	imds_up();
	job_up(spot, 2);
	eager = start_imds_node("200", true);
	plain = start_imds_node("300", false);
	cr_assert(wait_log("coordinator", "job started", WAIT_MS));
	wait_registered(200);
	wait_registered(300);

	/* a recommendation: the node told to leave on one leaves (2 min of
	 * the fake's clock: 2 real s less the margin), the other logs it */
	rebal = (int64_t)fake_now();
	imds_set(NULL, 0, rebal);
	gone = leave_gone(200, WIRE_LEAVE_REBALANCE);
	cr_assert(gone <= 120.0 / SPEEDUP + 0.051, "gone in %.2f s", gone);
	gone = leave_gone(201, WIRE_LEAVE_REBALANCE);
	cr_assert(gone <= 120.0 / SPEEDUP + 0.051, "gone in %.2f s", gone);
	cr_assert_eq(wait_exit(eager, WAIT_MS), 0);
	left_not_lost(200);
	rebalance_logged("node300");
	log = trainer_log("coordinator");
	cr_assert_null(strstr(log, "node 300 leaving"), "%s", log);
	free(log);

	/* a notice whose time is past (the node saw it late): at once */
	imds_set("terminate", (int64_t)fake_now() - 60, rebal);
	gone = leave_gone(300, WIRE_LEAVE_EVICTION);
	cr_assert(gone <= 0.051, "gone in %.2f s", gone);
	gone = leave_gone(301, WIRE_LEAVE_EVICTION);
	cr_assert(gone <= 0.051, "gone in %.2f s", gone);
	cr_assert_eq(wait_exit(plain, WAIT_MS), 0);
	clock_moves();
}

/* A loopback port where nothing listens (bound, so that nothing will):
 * an IMDS that is not there. */
static int dead_port(int *fd)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof a;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(*fd, 0);
	cr_assert_eq(bind(*fd, (struct sockaddr *)&a, sizeof a), 0);
	cr_assert_eq(getsockname(*fd, (struct sockaddr *)&a, &len), 0);
	return ntohs(a.sin_port);
}

Test(trainer_notices, a_released_node_ends_by_itself)
{
	static const unsigned spot[] = { 200 };
	/* it polls an IMDS that is not there: every poll fails, the first
	 * is logged, and the node runs on */
	const char *more[] = { "--imds-notices", "--imds-poll-ms", "50",
			       NULL };
	int64_t deadline;
	int fd;
	pid_t node;
	char *log;

	snprintf(t.imds_env, sizeof t.imds_env,
		 "AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:%d/",
		 dead_port(&fd));
	job_up(spot, 1);
	node = start_node("200", false, more);
	cr_assert(wait_log("coordinator", "job started", WAIT_MS));
	wait_registered(200);
	/* the agent releases the instance: a LEAVE for each of its roles,
	 * as proteusd sends it (node_notice); nobody signals the node */
	deadline = px_now_wall_us() + 3000000;
	for (uint32_t k = 200; k <= 201; k++)
		cr_assert_eq(command((struct wire_command){
			.op = WIRE_CMD_LEAVE, .node = { k },
			.reason = WIRE_LEAVE_RELEASE,
			.deadline_us = deadline }), PX_OK);
	(void)leave_gone(200, WIRE_LEAVE_RELEASE);
	(void)leave_gone(201, WIRE_LEAVE_RELEASE);
	cr_assert_eq(wait_exit(node, WAIT_MS), 0);
	log = trainer_log("node200");
	cr_assert_not_null(strstr(log, "ps 200 leaving (the coordinator says "
				  "so)"), "%s", log);
	cr_assert_not_null(strstr(log, "worker 201 leaving at clock"), "%s",
			   log);
	cr_assert_not_null(strstr(log, "(the coordinator says so)"), "%s",
			   log);
	cr_assert_eq(count(log, "imds: poll failed: "), 1, "%s", log);
	cr_assert_null(strstr(log, "imds: polls work again"), "%s", log);
	free(log);
	close(fd);
	left_not_lost(200);
	clock_moves();
}

Test(trainer_notices, the_time_a_notice_leaves)
{
	struct dist_node n = { .imds_margin_ms = 5000 };
	const int64_t s = 1000000; /* us */

	/* AWS: real time; 2 minutes less the 5 s margin */
	cr_assert_eq(dist_node_notice_ms(&n, 1120, 1000 * s), 115000);
	/* a short notice: the margin takes a quarter of it at most */
	cr_assert_eq(dist_node_notice_ms(&n, 1008, 1000 * s), 6000);
	/* past, or now: at once */
	cr_assert_eq(dist_node_notice_ms(&n, 999, 1000 * s), 1);
	cr_assert_eq(dist_node_notice_ms(&n, 1000, 1000 * s), 1);
	/* far: what a signal value holds */
	cr_assert_eq(dist_node_notice_ms(&n, INT32_MAX, 1000 * s),
		     DIST_LEAVE_MS_MASK);
	n.imds_margin_ms = 0;
	cr_assert_eq(dist_node_notice_ms(&n, 1120, 1000 * s), 120000);
	/* a fake EC2's clock, 60x from T0 = 1000: 10 real s later it reads
	 * 1600, and a notice at 1720 is 2 real s away, less 0.5 s */
	n.imds_margin_ms = 5000;
	n.clock_speedup = 60;
	n.clock_origin_s = 1000;
	cr_assert_eq(dist_node_notice_ms(&n, 1720, 1010 * s), 1500);
	cr_assert_eq(dist_node_notice_ms(&n, 1599, 1010 * s), 1);
	/* K = 1 ignores the origin */
	n.clock_speedup = 1;
	cr_assert_eq(dist_node_notice_ms(&n, 1130, 1010 * s), 115000);
}
