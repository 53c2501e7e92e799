/* test_loop.c -- the event loop: timers (repeat, stop, order, deletion
 * from a callback, no early firing), fd events and signals. */
#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "../../agent/loop.h"

struct tick {
	int calls;
	int max;             /* stop after this many calls */
	int64_t every_ms;
	uint64_t at_us[16];  /* monotonic time of each call */
	int64_t victim;      /* a timer to delete on the first call */
	int *order;          /* shared call log */
	int *norder;
	int tag;
};

static struct loop *new_loop(void)
{
	struct loop *l = NULL;

	cr_assert_eq(loop_new(&l), PX_OK);
	return l;
}

static int64_t tick_fn(struct loop *l, int64_t id, void *ctx)
{
	struct tick *t = ctx;

	if (t->calls < 16)
		t->at_us[t->calls] = px_now_mono_us();
	t->calls++;
	if (t->order)
		t->order[(*t->norder)++] = t->tag;
	if (t->victim > 0) {
		cr_assert_eq(loop_timer_del(l, t->victim), PX_OK);
		t->victim = 0;
	}
	return t->calls >= t->max ? LOOP_NOMORE : t->every_ms;
}

static int64_t stop_fn(struct loop *l, int64_t id, void *ctx)
{
	loop_stop(l);
	return LOOP_NOMORE;
}

Test(loop, timer_repeats_then_nomore, .timeout = 10)
{
	struct loop *l = new_loop();
	struct tick t = {.max = 5, .every_ms = 20};
	uint64_t t0 = px_now_mono_us();
	int64_t id;

	id = loop_timer_add(l, 10, tick_fn, &t);
	cr_assert_gt(id, 0);
	cr_assert_gt(loop_timer_add(l, 300, stop_fn, NULL), id);
	cr_assert_eq(loop_run(l), PX_OK);
	cr_assert_eq(t.calls, 5, "called %d times", t.calls);
	/* never early: first after 10 ms, then 20 ms apart */
	cr_assert_geq(t.at_us[0] - t0, 10000);
	for (int i = 1; i < 5; i++)
		cr_assert_geq(t.at_us[i] - t.at_us[i - 1], 20000,
			      "call %d came %llu us after the previous", i,
			      (unsigned long long)(t.at_us[i] -
						   t.at_us[i - 1]));
	/* the timer deleted itself: deleting it again finds nothing */
	cr_assert_eq(loop_timer_del(l, id), PX_ENOENT);
	loop_free(l);
}

Test(loop, timers_fire_in_due_order, .timeout = 10)
{
	struct loop *l = new_loop();
	int order[8], n = 0;
	struct tick a = {.max = 1, .order = order, .norder = &n, .tag = 3};
	struct tick b = {.max = 1, .order = order, .norder = &n, .tag = 1};
	struct tick c = {.max = 1, .order = order, .norder = &n, .tag = 2};

	loop_timer_add(l, 60, tick_fn, &a);
	loop_timer_add(l, 5, tick_fn, &b);
	loop_timer_add(l, 30, tick_fn, &c);
	loop_timer_add(l, 120, stop_fn, NULL);
	cr_assert_eq(loop_run(l), PX_OK);
	cr_assert_eq(n, 3);
	cr_assert_eq(order[0], 1);
	cr_assert_eq(order[1], 2);
	cr_assert_eq(order[2], 3);
	loop_free(l);
}

Test(loop, callback_deletes_other_timer, .timeout = 10)
{
	struct loop *l = new_loop();
	struct tick victim = {.max = 100, .every_ms = 1};
	struct tick killer = {.max = 1};

	killer.victim = loop_timer_add(l, 50, tick_fn, &victim);
	loop_timer_add(l, 10, tick_fn, &killer);
	loop_timer_add(l, 100, stop_fn, NULL);
	cr_assert_eq(loop_run(l), PX_OK);
	cr_assert_eq(killer.calls, 1);
	cr_assert_eq(victim.calls, 0);
	cr_assert_eq(loop_timer_del(l, 424242), PX_ENOENT);
	cr_assert_lt(loop_timer_add(l, -1, tick_fn, &victim), 0);
	loop_free(l);
}

struct pipe_ctx {
	int reads;
	char got[16];
};

static void pipe_fn(struct loop *l, int fd, int mask, void *ctx)
{
	struct pipe_ctx *p = ctx;
	ssize_t k;

	cr_assert(mask & LOOP_READABLE);
	k = read(fd, p->got, sizeof(p->got) - 1);
	p->reads++;
	if (k <= 0) {
		loop_fd_del(l, fd);
		loop_stop(l);
	}
}

static int64_t write_fn(struct loop *l, int64_t id, void *ctx)
{
	int *fds = ctx;

	cr_assert_eq(write(fds[1], "hi", 2), 2);
	close(fds[1]);
	return LOOP_NOMORE;
}

Test(loop, fd_events, .timeout = 10)
{
	struct loop *l = new_loop();
	struct pipe_ctx p = {0};
	int fds[2];

	cr_assert_eq(pipe(fds), 0);
	cr_assert_eq(loop_fd_add(l, fds[0], LOOP_READABLE, pipe_fn, &p),
		     PX_OK);
	cr_assert_eq(loop_fd_add(l, -1, LOOP_READABLE, pipe_fn, &p),
		     PX_EINVAL);
	cr_assert_eq(loop_fd_mask(l, 999, LOOP_READABLE), PX_ENOENT);
	loop_timer_add(l, 20, write_fn, fds);
	cr_assert_eq(loop_run(l), PX_OK);
	cr_assert_str_eq(p.got, "hi");
	cr_assert_eq(p.reads, 2); /* the data, then end of file */
	close(fds[0]);
	loop_free(l);
}

/* An fd closed without loop_fd_del leaves epoll but not the loop's
 * table; a new fd that gets its number must still register, and be
 * watched (the EC2 client's sockets come and go like this). */
Test(loop, fd_number_reused_after_close, .timeout = 10)
{
	struct loop *l = new_loop();
	struct pipe_ctx p = {0};
	int a[2], b[2];

	cr_assert_eq(pipe(a), 0);
	cr_assert_eq(loop_fd_add(l, a[0], LOOP_READABLE, pipe_fn, &p),
		     PX_OK);
	close(a[0]);
	cr_assert_eq(pipe(b), 0);
	cr_assert_eq(b[0], a[0], "the kernel reuses the lowest number");
	cr_assert_eq(loop_fd_add(l, b[0], LOOP_READABLE, pipe_fn, &p),
		     PX_OK);
	loop_timer_add(l, 10, write_fn, b);
	cr_assert_eq(loop_run(l), PX_OK);
	cr_assert_str_eq(p.got, "hi");
	close(a[1]);
	close(b[0]);
	loop_free(l);
}

static void sig_fn(struct loop *l, int signo, void *ctx)
{
	*(int *)ctx = signo;
	loop_stop(l);
}

static int64_t raise_fn(struct loop *l, int64_t id, void *ctx)
{
	/* raise: to this thread, as Criterion runs others */
	cr_assert_eq(raise(SIGUSR1), 0);
	return LOOP_NOMORE;
}

Test(loop, signals_arrive_as_events, .timeout = 10)
{
	struct loop *l = new_loop();
	int got = 0;

	cr_assert_eq(loop_signal_add(l, SIGUSR1, sig_fn, &got), PX_OK);
	cr_assert_eq(loop_signal_add(l, SIGKILL, sig_fn, &got), PX_EINVAL);
	loop_timer_add(l, 10, raise_fn, NULL);
	cr_assert_eq(loop_run(l), PX_OK);
	cr_assert_eq(got, SIGUSR1);
	loop_free(l);
}
