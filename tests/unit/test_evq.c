/* test_evq.c -- the worlds' event queue: events come out by time, and
 * those of one instant in the order they were pushed, whatever the mix of
 * pushes and pops. */
#include <criterion/criterion.h>

#include "../../agent/evq.h"

Test(evq, time_order_then_push_order)
{
	struct evq q = {0};
	struct px_error e = {0};
	uint64_t x = 7, pushed = 0;
	int64_t last_t = INT64_MIN;
	uint64_t last_id = 0;
	size_t popped = 0;

	for (int round = 0; round < 20000; round++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		/* mostly pushes early, mostly pops late; times never before
		 * the last one popped (as in a world) */
		if (q.n == 0 || (x >> 60) < (round < 10000 ? 12u : 4u)) {
			int64_t t = (last_t == INT64_MIN ? 0 : last_t) +
				    (int64_t)((x >> 33) % 5);

			cr_assert_eq(evq_push(&q, t, 1, ++pushed, &e), PX_OK);
			continue;
		}
		struct evq_ev ev = evq_pop(&q);

		popped++;
		cr_assert(ev.t > last_t || (ev.t == last_t &&
					    ev.id > last_id),
			  "popped t %lld id %llu after t %lld id %llu",
			  (long long)ev.t, (unsigned long long)ev.id,
			  (long long)last_t, (unsigned long long)last_id);
		last_t = ev.t;
		last_id = ev.id;
	}
	while (q.n) {
		struct evq_ev ev = evq_pop(&q);

		popped++;
		cr_assert(ev.t > last_t || (ev.t == last_t && ev.id > last_id));
		last_t = ev.t;
		last_id = ev.id;
	}
	cr_assert_eq(popped, pushed);
	evq_release(&q);
}
