/* test_sdnotify.c -- sd_notify without libsystemd: path and abstract
 * sockets, unset NOTIFY_SOCKET, $WATCHDOG_USEC/$WATCHDOG_PID parsing. */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../../agent/sdnotify.h"

/* Receive one datagram on fd into buf (NUL-terminated), or fail. */
static void recv_one(int fd, char *buf, size_t len)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	ssize_t k;

	cr_assert_eq(poll(&p, 1, 2000), 1, "no datagram");
	k = recv(fd, buf, len - 1, 0);
	cr_assert_gt(k, 0);
	buf[k] = '\0';
}

Test(sdnotify, path_socket, .timeout = 10)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char dir[] = "/tmp/px_sdn_XXXXXX", buf[256];
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

	cr_assert_not_null(mkdtemp(dir));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/n", dir);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setenv("NOTIFY_SOCKET", sa.sun_path, 1);
	cr_assert_eq(sdnotify("READY=1"), PX_OK);
	recv_one(fd, buf, sizeof(buf));
	cr_assert_str_eq(buf, "READY=1");
	cr_assert_eq(sdnotifyf("STATUS=%d clients\nX=%s", 3, "y"), PX_OK);
	recv_one(fd, buf, sizeof(buf));
	cr_assert_str_eq(buf, "STATUS=3 clients\nX=y");
	close(fd);
	unlink(sa.sun_path);
	rmdir(dir);
}

Test(sdnotify, abstract_socket, .timeout = 10)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char name[64], buf[64];
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	socklen_t len;

	snprintf(name, sizeof(name), "@px-sdnotify-test-%ld", (long)getpid());
	memcpy(sa.sun_path, name, strlen(name));
	sa.sun_path[0] = '\0';
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
			  strlen(name));
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, len), 0);
	setenv("NOTIFY_SOCKET", name, 1);
	cr_assert_eq(sdnotify("STOPPING=1"), PX_OK);
	recv_one(fd, buf, sizeof(buf));
	cr_assert_str_eq(buf, "STOPPING=1");
	close(fd);
}

Test(sdnotify, unset_or_bad)
{
	unsetenv("NOTIFY_SOCKET");
	cr_assert_eq(sdnotify("READY=1"), PX_OK);
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	cr_assert_eq(sdnotify("READY=1"), PX_EINVAL);
	setenv("NOTIFY_SOCKET", "/nonexistent/px/notify", 1);
	cr_assert_neq(sdnotify("READY=1"), PX_OK);
}

Test(sdnotify, watchdog_env)
{
	char pid[32];
	uint64_t us = 0;

	unsetenv("WATCHDOG_PID");
	unsetenv("WATCHDOG_USEC");
	cr_assert(!sdnotify_watchdog_usec(&us));
	setenv("WATCHDOG_USEC", "30000000", 1);
	cr_assert(sdnotify_watchdog_usec(&us));
	cr_assert_eq(us, 30000000);
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	cr_assert(sdnotify_watchdog_usec(&us));
	snprintf(pid, sizeof(pid), "%ld", (long)getpid() + 1);
	setenv("WATCHDOG_PID", pid, 1);
	cr_assert(!sdnotify_watchdog_usec(&us), "meant for another pid");
	unsetenv("WATCHDOG_PID");
	setenv("WATCHDOG_USEC", "0", 1);
	cr_assert(!sdnotify_watchdog_usec(&us));
	setenv("WATCHDOG_USEC", "12x", 1);
	cr_assert(!sdnotify_watchdog_usec(&us));
	setenv("WATCHDOG_USEC", "-5", 1);
	cr_assert(!sdnotify_watchdog_usec(&us));
}
