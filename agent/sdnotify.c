/* sdnotify.c -- sd_notify(3) as one datagram, after systemd's
 * man/notify-selfcontained-example.c (MIT-0).  Does not log.
 */
#include "sdnotify.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

enum px_err sdnotify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t plen, slen = strlen(state);
	enum px_err r = PX_OK;
	socklen_t alen;
	int fd;

	if (!path || !*path)
		return PX_OK;
	plen = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || plen >= sizeof(sa.sun_path))
		return PX_EINVAL;
	memcpy(sa.sun_path, path, plen);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0'; /* abstract namespace */
	alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen +
			   (path[0] == '/'));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return PX_ESYS | errno;
	if (sendto(fd, state, slen, MSG_NOSIGNAL, (struct sockaddr *)&sa,
		   alen) != (ssize_t)slen)
		r = PX_ESYS | errno;
	close(fd);
	return r;
}

enum px_err sdnotifyf(const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return PX_ETOOBIG;
	return sdnotify(buf);
}

bool sdnotify_watchdog_usec(uint64_t *ret_usec)
{
	const char *us = getenv("WATCHDOG_USEC");
	const char *pid = getenv("WATCHDOG_PID");
	char *end;
	uint64_t v;

	if (!us || !*us)
		return false;
	if (pid && *pid) {
		errno = 0;
		if (strtoimax(pid, &end, 10) != getpid() || *end || errno)
			return false;
	}
	errno = 0;
	v = strtoumax(us, &end, 10);
	if (errno || *end || v == 0 || us[0] == '-')
		return false;
	*ret_usec = v;
	return true;
}
