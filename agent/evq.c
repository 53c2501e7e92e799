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
	/* sift up with a hole: parents move down until the new one fits */
	struct evq_ev ev = {.t = t, .seq = q->seq++, .kind = kind, .id = id};

	i = q->n++;
	while (i > 0) {
		size_t up = (i - 1) / 2;

		if (!less(&ev, &q->h[up]))
			break;
		q->h[i] = q->h[up];
		i = up;
	}
	q->h[i] = ev;
	return PX_OK;
}

struct evq_ev evq_pop(struct evq *q)
{
	struct evq_ev top = q->h[0], last;
	size_t i = 0, n;

	n = --q->n;
	if (n == 0)
		return top;
	/* sift the last one down from the root with a hole: the lesser
	 * child moves up until the last one fits.  (t, seq) orders every
	 * event, so the pops come in one order however the heap is laid
	 * out. */
	last = q->h[n];
	for (;;) {
		size_t l = 2 * i + 1, m;

		if (l >= n)
			break;
		m = l + 1 < n && less(&q->h[l + 1], &q->h[l]) ? l + 1 : l;
		if (!less(&q->h[m], &last))
			break;
		q->h[i] = q->h[m];
		i = m;
	}
	q->h[i] = last;
	return top;
}

void evq_release(struct evq *q)
{
	free(q->h);
	q->h = NULL;
	q->n = q->cap = 0;
}
