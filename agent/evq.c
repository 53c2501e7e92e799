/* evq.c -- the event queue of the sim and local worlds (evq.h). */
#include <stdlib.h>

#include "evq.h"

static int less(const struct evq_ev *a, const struct evq_ev *b)
{
	return a->t != b->t ? a->t < b->t : a->seq < b->seq;
}

enum px_err evq_push(struct evq *q, int64_t t, int kind, uint64_t id,
		     struct px_error *err)
{
	size_t i;

	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 256;
		struct evq_ev *v = px_reallocarray(q->h, cap, sizeof *v);

		if (!v)
			return px_errorf(err, PX_ENOMEM, "out of memory");
		q->h = v;
		q->cap = cap;
	}
	i = q->n++;
	q->h[i] = (struct evq_ev){.t = t, .seq = q->seq++, .kind = kind,
				  .id = id};
	while (i > 0) {
		size_t up = (i - 1) / 2;

		if (!less(&q->h[i], &q->h[up]))
			break;
		struct evq_ev tmp = q->h[i];
		q->h[i] = q->h[up];
		q->h[up] = tmp;
		i = up;
	}
	return PX_OK;
}

struct evq_ev evq_pop(struct evq *q)
{
	struct evq_ev top = q->h[0];
	size_t i = 0;

	q->h[0] = q->h[--q->n];
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < q->n && less(&q->h[l], &q->h[m]))
			m = l;
		if (l + 1 < q->n && less(&q->h[l + 1], &q->h[m]))
			m = l + 1;
		if (m == i)
			break;
		struct evq_ev tmp = q->h[i];
		q->h[i] = q->h[m];
		q->h[m] = tmp;
		i = m;
	}
	return top;
}

void evq_release(struct evq *q)
{
	free(q->h);
	q->h = NULL;
	q->n = q->cap = 0;
}
