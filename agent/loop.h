/* loop.h -- proteusd's single-threaded event loop, after redis's ae: fd
 * events through epoll, monotonic timers whose callback returns its next
 * delay, and signals through a signalfd.  Nothing here blocks except the
 * one epoll_wait in loop_run; nothing sleep-polls.
 *
 * Callbacks run on the loop's thread, one at a time, and may add or remove
 * fds, timers and signals (their own included) and call loop_stop.  They
 * must not call loop_run or loop_free.
 */
#ifndef PX_LOOP_H
#define PX_LOOP_H

#include <stdint.h>

#include "../common/px.h"

#define LOOP_READABLE (1 << 0)
#define LOOP_WRITABLE (1 << 1)
#define LOOP_NOMORE (-1) /* a timer callback's "do not call me again" */

struct loop;

/* mask: the LOOP_READABLE/LOOP_WRITABLE events that fired, within the
 * fd's mask; a hang-up or error is delivered as both whatever the mask,
 * so that the next read or write sees it. */
typedef void loop_fd_fn(struct loop *l, int fd, int mask, void *ctx);
/* Returns the delay in ms before the next call (0: on the next turn), or
 * LOOP_NOMORE to delete the timer. */
typedef int64_t loop_timer_fn(struct loop *l, int64_t id, void *ctx);
typedef void loop_signal_fn(struct loop *l, int signo, void *ctx);

/* A new loop; *ret is the caller's (loop_free).  PX_ESYS|errno when the
 * epoll instance cannot be made. */
enum px_err loop_new(struct loop **ret);
/* Free the loop and its timers; NULL is a no-op.  Registered fds are not
 * closed (they are the caller's); the signalfd is.  Signals given to
 * loop_signal_add stay blocked, so that one arriving now is not delivered
 * with its default action half-way through the caller's shutdown. */
void loop_free(struct loop *l);

/* Watch fd for mask (LOOP_READABLE|LOOP_WRITABLE); calling it again for
 * the same fd replaces the mask, fn and ctx (and takes a new fd that
 * reuses the number of one closed without loop_fd_del).  A mask of 0 keeps the fd
 * registered but asks for no event.  PX_EINVAL for a negative fd or mask
 * bits outside the two, PX_ENOMEM, PX_ESYS|errno from epoll_ctl. */
enum px_err loop_fd_add(struct loop *l, int fd, int mask, loop_fd_fn *fn,
			void *ctx);
/* Change what a registered fd is watched for; no system call when the
 * mask is unchanged.  PX_ENOENT for an fd not registered. */
enum px_err loop_fd_mask(struct loop *l, int fd, int mask);
/* Stop watching fd (before closing it); unknown fds are ignored.  An event
 * of fd already fetched in this turn is not delivered. */
void loop_fd_del(struct loop *l, int fd);

/* Call fn after delay_ms (>= 0) on the monotonic clock.  Returns the
 * timer's id (> 0, never reused in this loop) or -1 on OOM or a negative
 * delay. */
int64_t loop_timer_add(struct loop *l, int64_t delay_ms, loop_timer_fn *fn,
		       void *ctx);
/* Delete a timer; PX_ENOENT when id is unknown or already gone. */
enum px_err loop_timer_del(struct loop *l, int64_t id);

/* Deliver signo through the loop: blocks it in the calling thread (call
 * before any thread is started, so that they inherit the mask) and adds it
 * to the loop's signalfd; fn replaces an earlier one for the same signal.
 * Children started later inherit the blocked mask: unblock it in them.
 * PX_EINVAL for a bad signal, PX_ESYS|errno from signalfd. */
enum px_err loop_signal_add(struct loop *l, int signo, loop_signal_fn *fn,
			    void *ctx);

/* Run until loop_stop.  Returns PX_OK after loop_stop, PX_ESYS|errno when
 * epoll_wait fails. */
enum px_err loop_run(struct loop *l);
/* Make loop_run return after the current callback. */
void loop_stop(struct loop *l);

#endif
