/* curl_loop.c -- curl's multi hooks (the EC2 client's, the webhooks') on
 * proteusd's loop (curl_loop.h).
 *
 * Fds: the adapter keeps the set it registered, and only fds in that set
 * are ever deleted from the loop: curl may say REMOVE for an fd it has
 * already closed, or one never registered (an add refused), and that
 * number may be another part of the daemon's by then.  A REMOVE for a
 * closed fd costs nothing more (loop_fd_del ignores epoll's EBADF), and
 * an fd curl opens on the number of one closed without a REMOVE is taken
 * by loop_fd_add over the stale entry.
 *
 * Timer: one loop timer at most.  From inside that timer's own callback
 * the client re-arms it by telling timer_fn, which only records the delay
 * the callback then returns (the loop re-arms a timer from its return
 * value); elsewhere timer_fn deletes and adds.
 *
 * Nothing here is EC2's but the two calls of ec2_ops: another user of
 * curl's multi interface (notify.c) drives its own multi handle through
 * the same adapter with ops of its own (curl_loop_new).
 */
#include "curl_loop.h"

#include <stdlib.h>
#include <string.h>

#define REARM_UNSET (-2) /* timer_fn not called during our timer */

struct curl_loop {
	struct loop *l;
	const struct curl_loop_ops *ops;
	void *c;            /* the bound client (ops' first argument) */
	int64_t timer_id;   /* 0: none */
	uint64_t due_us;    /* when timer_id fires (monotonic) */
	bool in_timer;      /* inside on_timer */
	long rearm_ms;      /* in_timer: what the client asked last */
	int *fds;           /* registered by us */
	size_t n_fds, cap_fds;
	uint64_t errors;
};

static bool fd_index(const struct curl_loop *el, int fd, size_t *ret)
{
	for (size_t i = 0; i < el->n_fds; i++)
		if (el->fds[i] == fd) {
			*ret = i;
			return true;
		}
	return false;
}

static bool fd_track(struct curl_loop *el, int fd)
{
	if (el->n_fds == el->cap_fds) {
		size_t cap = el->cap_fds ? 2 * el->cap_fds : 8;
		int *v = px_reallocarray(el->fds, cap, sizeof *v);

		if (!v)
			return false;
		el->fds = v;
		el->cap_fds = cap;
	}
	el->fds[el->n_fds++] = fd;
	return true;
}

static void fd_forget(struct curl_loop *el, int fd)
{
	size_t i;

	if (!fd_index(el, fd, &i))
		return; /* not ours: never touch another's registration */
	loop_fd_del(el->l, fd);
	el->fds[i] = el->fds[--el->n_fds];
}

static void on_fd(struct loop *l, int fd, int mask, void *ctx)
{
	struct curl_loop *el = ctx;
	int what = 0;

	(void)l;
	if (!el->c) {
		fd_forget(el, fd);
		return;
	}
	if (mask & LOOP_READABLE)
		what |= EC2_POLL_IN;
	if (mask & LOOP_WRITABLE)
		what |= EC2_POLL_OUT;
	/* fails only inside curl (out of memory); the call's own timeout
	 * then ends it */
	(void)el->ops->on_socket(el->c, fd, what);
}

void curl_loop_socket_hook(int fd, int what, void *ctx)
{
	struct curl_loop *el = ctx;
	int mask = 0;
	size_t i;
	enum px_err rc;

	if (what & EC2_POLL_REMOVE) {
		fd_forget(el, fd);
		return;
	}
	if (what & EC2_POLL_IN)
		mask |= LOOP_READABLE;
	if (what & EC2_POLL_OUT)
		mask |= LOOP_WRITABLE;
	if (fd_index(el, fd, &i)) {
		/* no system call when curl says again what it said */
		rc = loop_fd_mask(el->l, fd, mask);
	} else if (fd_track(el, fd)) {
		/* a stale entry of the loop's for this number (its fd closed
		 * without a REMOVE) is replaced by loop_fd_add itself */
		rc = loop_fd_add(el->l, fd, mask, on_fd, el);
	} else {
		rc = PX_ENOMEM;
	}
	if (rc != PX_OK) {
		/* curl waits on this fd in vain until the call's timeout */
		el->errors++;
		fd_forget(el, fd);
	}
}

static int64_t on_timer(struct loop *l, int64_t id, void *ctx)
{
	struct curl_loop *el = ctx;
	long ms;

	(void)l;
	(void)id;
	if (!el->c) {
		el->timer_id = 0;
		return LOOP_NOMORE;
	}
	el->in_timer = true;
	el->rearm_ms = REARM_UNSET;
	(void)el->ops->on_timeout(el->c);
	el->in_timer = false;
	ms = el->rearm_ms;
	if (ms < 0) { /* no timer wanted, or nothing said: this one is spent */
		el->timer_id = 0;
		return LOOP_NOMORE;
	}
	el->due_us = px_now_mono_us() + (uint64_t)ms * 1000;
	return ms;
}

void curl_loop_timer_hook(long ms, void *ctx)
{
	struct curl_loop *el = ctx;
	uint64_t due;

	if (el->in_timer) {
		el->rearm_ms = ms < 0 ? -1 : ms;
		return;
	}
	if (ms < 0) {
		if (el->timer_id)
			(void)loop_timer_del(el->l, el->timer_id);
		el->timer_id = 0;
		return;
	}
	due = px_now_mono_us() + (uint64_t)ms * 1000;
	/* The client says again after every event what it said before:
	 * keep a timer due within the same millisecond. */
	if (el->timer_id && due <= el->due_us + 1000 && el->due_us <= due + 1000)
		return;
	if (el->timer_id)
		(void)loop_timer_del(el->l, el->timer_id);
	el->timer_id = loop_timer_add(el->l, ms, on_timer, el);
	if (el->timer_id < 0) {
		el->timer_id = 0;
		el->errors++;
		return;
	}
	el->due_us = due;
}

static enum px_err ec2_on_socket(void *c, int fd, int what)
{
	return ec2_client_on_socket(c, fd, what);
}

static enum px_err ec2_on_timeout(void *c)
{
	return ec2_client_on_timeout(c);
}

static const struct curl_loop_ops ec2_ops = {
	.on_socket = ec2_on_socket,
	.on_timeout = ec2_on_timeout,
};

enum px_err curl_loop_new(struct loop *l, const struct curl_loop_ops *ops,
			  struct curl_loop **ret, struct px_error *err)
{
	struct curl_loop *el;

	if (!l || !ops)
		return px_errorf(err, PX_EINVAL, "curl loop: no loop or "
				 "client ops");
	el = px_calloc(1, sizeof *el);
	if (!el)
		return px_errorf(err, PX_ENOMEM, "curl loop");
	el->l = l;
	el->ops = ops;
	*ret = el;
	return PX_OK;
}

enum px_err curl_loop_new_ec2(struct loop *l, struct ec2_config *cfg,
			      struct curl_loop **ret, struct px_error *err)
{
	if (!cfg)
		return px_errorf(err, PX_EINVAL, "ec2 loop: no loop or "
				 "config");
	if (curl_loop_new(l, &ec2_ops, ret, err) != PX_OK)
		return err->code;
	cfg->socket_fn = curl_loop_socket_hook;
	cfg->timer_fn = curl_loop_timer_hook;
	cfg->hook_ctx = *ret;
	return PX_OK;
}

void curl_loop_bind_ec2(struct curl_loop *el, struct ec2_client *c)
{
	el->c = c;
}

void curl_loop_bind(struct curl_loop *el, void *c)
{
	el->c = c;
}

void curl_loop_free(struct curl_loop *el)
{
	if (!el)
		return;
	while (el->n_fds)
		fd_forget(el, el->fds[el->n_fds - 1]);
	if (el->timer_id)
		(void)loop_timer_del(el->l, el->timer_id);
	free(el->fds);
	free(el);
}

size_t curl_loop_fds(const struct curl_loop *el)
{
	return el->n_fds;
}

uint64_t curl_loop_errors(const struct curl_loop *el)
{
	return el->errors;
}
