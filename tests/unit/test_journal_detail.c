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
	cr_assert_eq(store_job_add(st, "j", "{}", WORLD_SIM, 0, &id,
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
