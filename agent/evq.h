/* evq.h -- a world's event queue: events ordered by time, and at one
 * instant by the order they were added (the simulator's results depend on
 * that order; the local world keeps the same rule).  A binary heap. */
#ifndef PX_EVQ_H
#define PX_EVQ_H

#include <stddef.h>
#include <stdint.h>

#include "../common/px.h"

struct evq_ev {
	int64_t t;
	uint64_t seq;
	int kind;                /* the world's own kinds */
	uint64_t id;
};

struct evq {
	struct evq_ev *h;
	size_t n, cap;
	uint64_t seq;
};

/* Add (t, kind, id); PX_ENOMEM. */
enum px_err evq_push(struct evq *q, int64_t t, int kind, uint64_t id,
		     struct px_error *err);
/* The earliest event (q->n > 0). */
static inline const struct evq_ev *evq_top(const struct evq *q)
{
	return &q->h[0];
}
/* Remove and return the earliest (q->n > 0). */
struct evq_ev evq_pop(struct evq *q);
void evq_release(struct evq *q);

#endif
