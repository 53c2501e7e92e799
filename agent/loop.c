/* loop.c -- epoll + timer list + signalfd event loop (see loop.h).
 *
 * Timers sit in an unsorted list, as in redis's ae: proteusd has a handful,
 * so finding the nearest is a short scan.  A deleted timer is marked and
 * reaped after the timer pass, so callbacks may delete any timer.
 */
#include "loop.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define LOOP_EVENTS_MAX 64 /* events fetched per epoll_wait */
#define LOOP_DELETED (-1)

struct loop_fd {
	loop_fd_fn *fn; /* NULL: not registered */
	void *ctx;
	int mask;
};

struct loop_timer {
	int64_t id;      /* LOOP_DELETED once deleted */
	uint64_t due_us; /* monotonic */
	loop_timer_fn *fn;
	void *ctx;
	struct loop_timer *next;
};

struct loop {
	int epfd;
	int sigfd;             /* -1 until the first loop_signal_add */
	sigset_t sigs;         /* signals routed through sigfd */
	struct loop_fd *fds;   /* indexed by fd */
	size_t nfds;           /* entries in fds */
	struct loop_timer *timers;
	int64_t last_timer_id;
	loop_signal_fn *sigfn[NSIG];
	void *sigctx[NSIG];
	bool stop;
};

enum px_err loop_new(struct loop **ret)
{
	struct loop *l = px_calloc(1, sizeof(*l));

	if (!l)
		return PX_ENOMEM;
	l->sigfd = -1;
	sigemptyset(&l->sigs);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		int e = errno;
		free(l);
		return PX_ESYS | e;
	}
	*ret = l;
	return PX_OK;
}

void loop_free(struct loop *l)
{
	struct loop_timer *t, *next;

	if (!l)
		return;
	for (t = l->timers; t; t = next) {
		next = t->next;
		free(t);
	}
	if (l->sigfd >= 0)
		close(l->sigfd);
	close(l->epfd);
	free(l->fds);
	free(l);
}

static uint32_t ep_events(int mask)
{
	return ((mask & LOOP_READABLE) ? EPOLLIN : 0) |
	       ((mask & LOOP_WRITABLE) ? EPOLLOUT : 0);
}

enum px_err loop_fd_add(struct loop *l, int fd, int mask, loop_fd_fn *fn,
			void *ctx)
{
	struct epoll_event ev = {.events = ep_events(mask), .data.fd = fd};
	int op;

	if (fd < 0 || (mask & ~(LOOP_READABLE | LOOP_WRITABLE)) || !fn)
		return PX_EINVAL;
	if ((size_t)fd >= l->nfds) {
		size_t n = (size_t)fd + 16;
		struct loop_fd *nf = px_reallocarray(l->fds, n, sizeof(*nf));

		if (!nf)
			return PX_ENOMEM;
		memset(nf + l->nfds, 0, (n - l->nfds) * sizeof(*nf));
		l->fds = nf;
		l->nfds = n;
	}
	op = l->fds[fd].fn ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	/* ENOENT: the number's last fd was closed without loop_fd_del, and
	 * left epoll with it; this is a new fd that reuses the number. */
	if (epoll_ctl(l->epfd, op, fd, &ev) < 0 &&
	    (op != EPOLL_CTL_MOD || errno != ENOENT ||
	     epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0))
		return PX_ESYS | errno;
	l->fds[fd] = (struct loop_fd){.fn = fn, .ctx = ctx, .mask = mask};
	return PX_OK;
}

enum px_err loop_fd_mask(struct loop *l, int fd, int mask)
{
	if (fd < 0 || (size_t)fd >= l->nfds || !l->fds[fd].fn)
		return PX_ENOENT;
	if (l->fds[fd].mask == mask)
		return PX_OK;
	return loop_fd_add(l, fd, mask, l->fds[fd].fn, l->fds[fd].ctx);
}

void loop_fd_del(struct loop *l, int fd)
{
	if (fd < 0 || (size_t)fd >= l->nfds || !l->fds[fd].fn)
		return;
	(void)epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	l->fds[fd] = (struct loop_fd){0};
}

int64_t loop_timer_add(struct loop *l, int64_t delay_ms, loop_timer_fn *fn,
		       void *ctx)
{
	struct loop_timer *t;

	if (delay_ms < 0 || !fn)
		return -1;
	t = px_calloc(1, sizeof(*t));
	if (!t)
		return -1;
	t->id = ++l->last_timer_id;
	t->due_us = px_now_mono_us() + (uint64_t)delay_ms * 1000;
	t->fn = fn;
	t->ctx = ctx;
	t->next = l->timers;
	l->timers = t;
	return t->id;
}

enum px_err loop_timer_del(struct loop *l, int64_t id)
{
	for (struct loop_timer *t = l->timers; t; t = t->next)
		if (t->id == id && id > 0) {
			t->id = LOOP_DELETED;
			return PX_OK;
		}
	return PX_ENOENT;
}

/* Drain the signalfd and dispatch each signal. */
static void signal_ready(struct loop *l, int fd, int mask, void *ctx)
{
	struct signalfd_siginfo si;

	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		int s = (int)si.ssi_signo;

		if (s > 0 && s < NSIG && l->sigfn[s])
			l->sigfn[s](l, s, l->sigctx[s]);
	}
}

enum px_err loop_signal_add(struct loop *l, int signo, loop_signal_fn *fn,
			    void *ctx)
{
	sigset_t one;
	enum px_err r;
	int fd;

	if (signo <= 0 || signo >= NSIG || signo == SIGKILL ||
	    signo == SIGSTOP || !fn)
		return PX_EINVAL;
	sigemptyset(&one);
	sigaddset(&one, signo);
	if (sigprocmask(SIG_BLOCK, &one, NULL) < 0)
		return PX_ESYS | errno;
	sigaddset(&l->sigs, signo);
	fd = signalfd(l->sigfd, &l->sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		return PX_ESYS | errno;
	if (l->sigfd < 0) {
		r = loop_fd_add(l, fd, LOOP_READABLE, signal_ready, NULL);
		if (r != PX_OK) {
			close(fd);
			return r;
		}
		l->sigfd = fd;
	}
	l->sigfn[signo] = fn;
	l->sigctx[signo] = ctx;
	return PX_OK;
}

void loop_stop(struct loop *l)
{
	l->stop = true;
}

/* Milliseconds until the nearest live timer (rounded up so that we never
 * wake before it is due), or -1 (wait forever) when there is none. */
static int next_timeout_ms(struct loop *l)
{
	uint64_t now = px_now_mono_us(), best = UINT64_MAX, ms;

	for (struct loop_timer *t = l->timers; t; t = t->next)
		if (t->id != LOOP_DELETED && t->due_us < best)
			best = t->due_us;
	if (best == UINT64_MAX)
		return -1;
	if (best <= now)
		return 0;
	ms = (best - now + 999) / 1000;
	return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

/* Run the due timers that existed when the pass began, then reap the
 * deleted ones. */
static void run_timers(struct loop *l)
{
	int64_t max_id = l->last_timer_id, next;
	struct loop_timer **pp, *t;

	for (t = l->timers; t && !l->stop; t = t->next) {
		if (t->id == LOOP_DELETED || t->id > max_id ||
		    t->due_us > px_now_mono_us())
			continue;
		next = t->fn(l, t->id, t->ctx);
		if (t->id == LOOP_DELETED)
			continue; /* deleted itself */
		if (next < 0)
			t->id = LOOP_DELETED;
		else
			t->due_us = px_now_mono_us() + (uint64_t)next * 1000;
	}
	for (pp = &l->timers; (t = *pp);) {
		if (t->id == LOOP_DELETED) {
			*pp = t->next;
			free(t);
		} else {
			pp = &t->next;
		}
	}
}

enum px_err loop_run(struct loop *l)
{
	struct epoll_event evs[LOOP_EVENTS_MAX];
	int n;

	l->stop = false;
	while (!l->stop) {
		n = epoll_wait(l->epfd, evs, LOOP_EVENTS_MAX,
			       next_timeout_ms(l));
		if (n < 0 && errno != EINTR)
			return PX_ESYS | errno;
		for (int i = 0; i < n && !l->stop; i++) {
			int fd = evs[i].data.fd, mask = 0;
			struct loop_fd *f;

			if ((size_t)fd >= l->nfds || !l->fds[fd].fn)
				continue; /* deleted by an earlier callback */
			f = &l->fds[fd];
			if (evs[i].events & (EPOLLHUP | EPOLLERR))
				mask = LOOP_READABLE | LOOP_WRITABLE;
			if (evs[i].events & EPOLLIN)
				mask |= LOOP_READABLE & f->mask;
			if (evs[i].events & EPOLLOUT)
				mask |= LOOP_WRITABLE & f->mask;
			if (mask)
				f->fn(l, fd, mask, f->ctx);
		}
		run_timers(l);
	}
	return PX_OK;
}
