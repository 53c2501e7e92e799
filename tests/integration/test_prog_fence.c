/* test_prog_fence.c -- what holds a user's program in on its node
 * (trainer/dist/prog_fence.h): the pids cgroup and the fence off the
 * instance metadata, each against this host's kernel (root needed). */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../trainer/dist/prog_fence.h"
#include "pxrun.h"

#define NOBODY 65534

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (cgroups, iptables, another user)");
}

/* A listener on 127.0.0.1 (its port in *port). */
static int listener(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	cr_assert_eq(listen(fd, 16), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static bool reaches_as(unsigned uid, int port)
{
	int r = px_test_reaches_as(uid, port);

	cr_assert_geq(r, 0, "a probe could not become uid %u", uid);
	return r == 1;
}

static bool have_iptables(void)
{
	return access("/usr/sbin/iptables", X_OK) == 0 ||
	       access("/sbin/iptables", X_OK) == 0;
}

/* The fence keeps nobody off the endpoint and not root; removed, nobody
 * reaches it again. */
Test(prog_fence, the_imds_fence_keeps_the_programs_user_off_and_goes)
{
	struct prog_imds_fence f;
	char url[64], why[400];
	int port, fd;

	need_root();
	if (!have_iptables())
		cr_skip_test("iptables is not installed");
	fd = listener(&port);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/", port);
	cr_assert(reaches_as(NOBODY, port));
	cr_assert(prog_imds_fence(&f, url, NOBODY, NOBODY, why, sizeof why),
		  "%s", why);
	cr_assert(f.applied);
	cr_assert_not(reaches_as(NOBODY, port), "nobody still reaches it");
	cr_assert(reaches_as(0, port), "root is kept off too");
	prog_imds_unfence(&f);
	cr_assert(reaches_as(NOBODY, port), "the rule outlived the fence");
	close(fd);
}

/* No fence that cannot hold: a program as root, an endpoint that is no
 * address. */
Test(prog_fence, a_fence_that_cannot_hold_is_refused_with_its_reason)
{
	struct prog_imds_fence f;
	char why[400];

	cr_assert_not(prog_imds_fence(&f, "http://127.0.0.1:9/", 0, 0, why,
				      sizeof why));
	cr_assert(strstr(why, "root"), "%s", why);
	cr_assert_not(prog_imds_fence(&f, "http://metadata.internal/",
				      NOBODY, NOBODY, why, sizeof why));
	cr_assert(strstr(why, "not an http URL with an address"), "%s", why);
	cr_assert_not(f.applied);
}

/* A rule left by an agent that died (a pid that is not running) is
 * swept; a live one's is not. */
Test(prog_fence, rules_of_dead_agents_are_swept)
{
	struct prog_imds_fence f;
	char url[64], why[400];
	int port, fd;
	pid_t dead = fork();

	need_root();
	if (!have_iptables())
		cr_skip_test("iptables is not installed");
	if (dead == 0)
		_exit(0);
	(void)waitpid(dead, NULL, 0);
	fd = listener(&port);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/", port);
	cr_assert(prog_imds_fence(&f, url, NOBODY, NOBODY, why, sizeof why),
		  "%s", why);
	prog_imds_sweep();
	cr_assert_not(reaches_as(NOBODY, port), "a live agent's rule went");
	/* the same rule, as a dead agent's */
	snprintf(f.tag, sizeof f.tag, "proteus-imds-%ld", (long)dead);
	{
		char cmd[400];

		snprintf(cmd, sizeof cmd, "iptables -w 5 -I OUTPUT -p tcp -d "
			 "127.0.0.1 --dport %d -m owner --uid-owner %d -m "
			 "comment --comment %s -j REJECT --reject-with "
			 "tcp-reset", port, NOBODY, f.tag);
		cr_assert_eq(system(cmd), 0);
	}
	snprintf(f.tag, sizeof f.tag, "proteus-imds-%ld", (long)getpid());
	prog_imds_unfence(&f);
	cr_assert_not(reaches_as(NOBODY, port));
	prog_imds_sweep();
	cr_assert(reaches_as(NOBODY, port), "the dead agent's rule stayed");
	close(fd);
}

/* A child in the cgroup is held to pids.max, is found by a signal to
 * the cgroup after it left its process group, and the cgroup goes. */
Test(prog_fence, the_cgroup_bounds_and_finds_the_programs_tasks)
{
	struct prog_cg cg;
	char why[400], name[64], path[700], buf[64];
	int sync[2], st = -1;
	FILE *f;
	pid_t pid;

	need_root();
	snprintf(name, sizeof name, "proteus-prog-i0-%ld", (long)getpid());
	if (!prog_cg_make(&cg, name, 8, why, sizeof why))
		cr_skip_test("no pids cgroup here: %s", why);
	cr_assert_neq(cg.kind, PROG_CG_NONE);
	snprintf(path, sizeof path, "%s/pids.max", cg.path);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(buf, sizeof buf, f));
	fclose(f);
	cr_assert_eq(atoi(buf), 8);
	cr_assert_eq(pipe(sync), 0);
	pid = fork();
	if (pid == 0) {
		int n = 0;

		if (!prog_cg_enter(&cg))
			_exit(3);
		(void)setsid();
		/* 8 tasks at most: itself and 7 more */
		for (int i = 0; i < 20; i++) {
			pid_t k = fork();

			if (k == 0) {
				pause();
				_exit(0);
			}
			n += k > 0;
		}
		(void)write(sync[1], &n, sizeof n);
		pause();
		_exit(0);
	}
	{
		int n = -1;

		cr_assert_eq(read(sync[0], &n, sizeof n), (ssize_t)sizeof n);
		cr_assert_eq(n, 7, "forked %d under pids.max 8", n);
	}
	cr_assert_eq(prog_cg_signal(&cg, SIGKILL), 8);
	(void)waitpid(pid, &st, 0);
	cr_assert(WIFSIGNALED(st));
	prog_cg_remove(&cg);
	{
		struct stat sb;
		char dir[700];

		snprintf(dir, sizeof dir, "%s", path);
		*strrchr(dir, '/') = 0;
		cr_assert_neq(stat(dir, &sb), 0, "%s is still there", dir);
	}
	close(sync[0]);
	close(sync[1]);
}
