/* test_journal_detail.c -- the details journal.c writes for controller
 * events hold their dollar figures exactly: micro-dollars as their
 * decimal, at any size (JSON_REAL_PRECISION(10) cut $12345.678901). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "../../agent/journal.h"
#include "../../db/store.h"

static enum px_err take(const struct store_event *ev, void *ctx)
{
	char *buf = ctx;

	snprintf(buf, 512, "%.*s", (int)ev->detail_len, ev->detail);
	return PX_OK;
}

Test(journal_detail, dollars_exact_at_any_size)
{
	struct px_error err = {0};
	struct store *st = NULL;
	struct journal *jn = NULL;
	int64_t id = 0;
	char detail[512] = "";
	struct ctrl_event ev = {
		.t_s = 1456790400, .kind = CTRL_EV_DONE,
		.amount_uusd = 12345678901, .detail = "job done",
	};
	struct journal_setup s = {
		.region = "us-east-1", .product = "Linux/UNIX",
		.world = "sim",
	};

	cr_assert_eq(store_open(":memory:", &st, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(store_job_add(st, "j", "{}", "sim", 0, &id,
				   &err), PX_OK, "%s", err.msg);
	s.st = st;
	s.job_id = id;
	cr_assert_eq(journal_new(&s, &jn, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(journal_event(jn, &ev, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(store_event_last(st, id, "done", take, detail, &err),
		     PX_OK, "%s", err.msg);
	cr_assert(strstr(detail, "\"charge_usd\":12345.678901"), "%s",
		  detail);
	ev.amount_uusd = 506100;
	ev.t_s++;
	cr_assert_eq(journal_event(jn, &ev, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(store_event_last(st, id, "done", take, detail, &err),
		     PX_OK, "%s", err.msg);
	cr_assert(strstr(detail, "\"charge_usd\":0.5061,"), "%s", detail);
	journal_free(jn);
	store_close(st);
}

struct lines {
	int n;
	int64_t instance[4];
	int64_t amount[4];
};

static enum px_err line(const struct store_ledger_line *l, void *ctx)
{
	struct lines *ls = ctx;

	if (ls->n < 4) {
		ls->instance[ls->n] = l->instance_id;
		ls->amount[ls->n] = l->amount_uusd;
	}
	ls->n++;
	return PX_OK;
}

/* An instance let go while it was asked for (the run ended with its
 * RunInstances in flight: a release with nothing charged and no row)
 * writes no ledger line; its late launch (ctrl_bill_late: a launch and
 * a release with the charge) writes the one line of that instance.  A
 * $0 line of no instance read as a second charge of it. */
Test(journal_detail, a_request_let_go_has_one_line_at_its_late_launch)
{
	struct px_error err = {0};
	struct store *st = NULL;
	struct journal *jn = NULL;
	struct lines ls = {0};
	int64_t id = 0;
	struct ctrl_event ev = {
		.t_s = 1456790400, .kind = CTRL_EV_RELEASE, .instance = 4,
		.zone = "us-east-1b", .type = "c4.large", .detail = "run ended",
	};
	struct journal_setup s = {
		.region = "us-east-1", .product = "Linux/UNIX",
		.world = "ec2",
	};

	cr_assert_eq(store_open(":memory:", &st, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(store_job_add(st, "j", "{}", "ec2", 0, &id,
				   &err), PX_OK, "%s", err.msg);
	s.st = st;
	s.job_id = id;
	cr_assert_eq(journal_new(&s, &jn, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(journal_event(jn, &ev, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(store_ledger_each(st, id, line, &ls, &err), PX_OK);
	cr_assert_eq(ls.n, 0, "a line for a request let go, $%g",
		     ls.amount[0] / 1e6);
	ev.kind = CTRL_EV_LAUNCH;
	ev.detail = NULL;
	cr_assert_eq(journal_event(jn, &ev, &err), PX_OK, "%s", err.msg);
	ev.kind = CTRL_EV_RELEASE;
	ev.t_s += 60;
	ev.amount_uusd = 483;
	ev.detail = "launched after it was let go: terminated";
	cr_assert_eq(journal_event(jn, &ev, &err), PX_OK, "%s", err.msg);
	cr_assert_eq(store_ledger_each(st, id, line, &ls, &err), PX_OK);
	cr_assert_eq(ls.n, 1, "%d lines", ls.n);
	cr_assert_eq(ls.instance[0], journal_instance(jn, 4));
	cr_assert_gt(ls.instance[0], 0);
	cr_assert_eq(ls.amount[0], 483);
	journal_free(jn);
	store_close(st);
}
