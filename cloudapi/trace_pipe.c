/* trace_pipe.c -- the trace reader on a second thread, feeding the
 * caller's callback through a bounded queue of record batches. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

struct pipe_rec {
	char zone[TRACE_FIELD_MAX + 1];
	char type[TRACE_FIELD_MAX + 1];
	char product[TRACE_FIELD_MAX + 1];
	int64_t t_s;
	int64_t price_uusd;
	uint64_t index;
	uint64_t offset;
};

struct pipe_batch {
	size_t n;
	struct pipe_rec v[TRACE_PIPE_BATCH];
};

#define NSLOTS (TRACE_PIPE_DEPTH + 2)

/* Two rings of batch pointers: free ones for the reader to fill, full ones
 * for the consumer.  All fields below mu are guarded by it. */
struct pipe {
	const char *path;
	unsigned flags;
	const char *name;            /* path as error messages show it */
	struct pipe_batch *fill;     /* the reader's current batch */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct pipe_batch *free_q[NSLOTS];
	size_t nfree;
	struct pipe_batch *full_q[NSLOTS];
	size_t full_head, nfull;
	bool done;                   /* the reader has finished */
	bool cancel;                 /* the consumer has stopped */
	enum px_err rc;              /* the reader's result */
	struct px_error err;         /* the reader's error */
	const struct px_guard *guard; /* the caller's file guard, if any */
	struct trace_stats stats;
};

/* Reader side: hand the current batch over and, when take is set, wait
 * for a free one.  Returns false when the consumer has stopped. */
static bool pipe_flush(struct pipe *p, bool take)
{
	bool ok;

	pthread_mutex_lock(&p->mu);
	if (p->fill && p->fill->n) {
		p->full_q[(p->full_head + p->nfull) % NSLOTS] = p->fill;
		p->nfull++;
		p->fill = NULL;
		pthread_cond_broadcast(&p->cv);
	}
	while (take && !p->fill && !p->nfree && !p->cancel)
		pthread_cond_wait(&p->cv, &p->mu);
	if (take && !p->fill && p->nfree && !p->cancel) {
		p->fill = p->free_q[--p->nfree];
		p->fill->n = 0;
	}
	ok = !p->cancel;
	pthread_mutex_unlock(&p->mu);
	return ok;
}

static void copy_str(char *dst, const char *src)
{
	size_t n = strnlen(src, TRACE_FIELD_MAX);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

static enum px_err pipe_collect(const struct trace_record *r, void *arg,
				struct px_error *err)
{
	struct pipe *p = arg;
	struct pipe_rec *d;

	if (p->fill->n == TRACE_PIPE_BATCH && !pipe_flush(p, true))
		return PX_ECANCELED;
	d = &p->fill->v[p->fill->n++];
	copy_str(d->zone, r->zone);
	copy_str(d->type, r->type);
	copy_str(d->product, r->product);
	d->t_s = r->t_s;
	d->price_uusd = r->price_uusd;
	d->index = r->index;
	d->offset = r->offset;
	return PX_OK;
}

static void *pipe_reader(void *arg)
{
	struct pipe *p = arg;
	enum px_err rc;

	/* the file is opened as the caller would open it */
	px_guard_set(p->guard);
	rc = trace_read_file_flags(p->path, p->flags, pipe_collect, p,
				   &p->stats, &p->err);
	/* deliver what was read before an error too, as the plain reader
	 * does; the consumer sees the records, then the error */
	pipe_flush(p, false);
	pthread_mutex_lock(&p->mu);
	p->rc = rc;
	p->done = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Consumer side: the next full batch, or NULL when the reader is done. */
static struct pipe_batch *pipe_next(struct pipe *p, struct pipe_batch *prev)
{
	struct pipe_batch *b = NULL;

	pthread_mutex_lock(&p->mu);
	if (prev) {
		p->free_q[p->nfree++] = prev;
		pthread_cond_broadcast(&p->cv);
	}
	while (!p->nfull && !p->done)
		pthread_cond_wait(&p->cv, &p->mu);
	if (p->nfull) {
		b = p->full_q[p->full_head];
		p->full_head = (p->full_head + 1) % NSLOTS;
		p->nfull--;
	}
	pthread_mutex_unlock(&p->mu);
	return b;
}

static enum px_err pipe_consume(struct pipe *p, trace_record_fn fn,
				void *ctx, struct px_error *err)
{
	struct pipe_batch *b = NULL;
	struct px_error cb = {0};
	enum px_err rc;

	while ((b = pipe_next(p, b))) {
		for (size_t i = 0; i < b->n; i++) {
			const struct pipe_rec *s = &b->v[i];
			struct trace_record r = {
				.zone = s->zone, .type = s->type,
				.product = s->product, .t_s = s->t_s,
				.price_uusd = s->price_uusd, .index = s->index,
				.offset = s->offset,
			};

			rc = fn(&r, ctx, &cb);
			if (rc == PX_OK)
				continue;
			if (!cb.msg[0])
				snprintf(cb.msg, sizeof(cb.msg),
					 "stopped by the callback: %s",
					 px_strerror(rc));
			px_errorf(err, rc, "%s: record %llu (byte %llu): %s",
				  p->name, (unsigned long long)s->index,
				  (unsigned long long)s->offset, cb.msg);
			pthread_mutex_lock(&p->mu);
			p->free_q[p->nfree++] = b;
			p->cancel = true;
			pthread_cond_broadcast(&p->cv);
			pthread_mutex_unlock(&p->mu);
			return rc;
		}
	}
	return PX_OK;
}

enum px_err trace_read_file_pipelined(const char *path, unsigned flags,
				      trace_record_fn fn, void *ctx,
				      struct trace_stats *ret_stats,
				      struct px_error *err)
{
	struct pipe_batch *batches;
	struct pipe p = {
		.path = path, .flags = flags, .name = strcmp(path, "-") ? path : "<stdin>"
	};
	pthread_t th;
	enum px_err rc;

	if (!fn)
		return trace_read_file_flags(path, flags, fn, ctx, ret_stats,
					     err);
	batches = px_calloc(NSLOTS, sizeof(*batches));
	if (!batches)
		return px_errorf(err, PX_ENOMEM, "%s: out of memory", path);
	p.guard = px_guard_get(); /* the caller waits for the reader */
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.cv, NULL);
	p.fill = &batches[0];
	for (size_t i = 1; i < NSLOTS; i++)
		p.free_q[p.nfree++] = &batches[i];
	if (pthread_create(&th, NULL, pipe_reader, &p)) {
		rc = px_errorf(err, PX_ENOMEM, "%s: cannot start the reader "
			       "thread", path);
		goto out;
	}
	rc = pipe_consume(&p, fn, ctx, err);
	pthread_join(th, NULL);
	if (rc == PX_OK && p.rc != PX_OK) {
		rc = p.rc;
		if (err)
			*err = p.err;
	}
	if (rc == PX_OK && ret_stats)
		*ret_stats = p.stats;
out:
	pthread_cond_destroy(&p.cv);
	pthread_mutex_destroy(&p.mu);
	free(batches);
	return rc;
}
