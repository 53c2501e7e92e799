/* sdnotify.h -- the systemd notification protocol without libsystemd:
 * one AF_UNIX datagram to $NOTIFY_SOCKET per message (sd_notify(3)).
 */
#ifndef PX_SDNOTIFY_H
#define PX_SDNOTIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/px.h"

/* Send state ("READY=1", "STATUS=...", several lines joined by '\n') to
 * $NOTIFY_SOCKET; a leading '@' in the path names an abstract socket.
 * PX_OK when sent or when NOTIFY_SOCKET is unset (not supervised);
 * PX_EINVAL for a bad address, PX_ESYS|errno when sending failed. */
enum px_err sdnotify(const char *state);
enum px_err sdnotifyf(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* The watchdog interval from $WATCHDOG_USEC when it is set, positive and
 * meant for this process ($WATCHDOG_PID unset or our pid): true and
 * *ret_usec set; false otherwise. */
bool sdnotify_watchdog_usec(uint64_t *ret_usec);

#endif
