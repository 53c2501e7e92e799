/* metrics.h -- proteusd's /metrics endpoint: a small HTTP/1.1 server on
 * its own thread, never on the daemon's loop (docs/proteusd.md,
 * "Metrics").
 *
 * The loop builds the text (prom.h) and publishes it (metrics_publish);
 * the server thread answers every scrape with the latest text it was
 * given, so a slow or hostile scraper costs the loop nothing: the only
 * thing the two threads share is that text, swapped under a mutex and
 * reference-counted so that a connection still sending an old one keeps
 * it.  Bounded: METRICS_MAX_CONNS connections (more wait in the kernel's
 * backlog, not accepted), METRICS_REQ_MAX bytes of request head, and
 * one deadline per connection for its request to arrive and another for
 * its answer to be sent (timeout_ms each); a client that does not read
 * is dropped at the second.  GET and HEAD of /metrics; 404 elsewhere,
 * 405 for other methods, 400 for what is not HTTP/1.x, 431 for a head
 * over the bound.  One request a connection (Connection: close).
 */
#ifndef PX_METRICS_H
#define PX_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "../common/px.h"

#define METRICS_MAX_CONNS 64
#define METRICS_REQ_MAX 8192     /* request line and headers, bytes */
#define METRICS_BACKLOG 128

struct metrics;

/* What the server thread counted (read at any time, from any thread). */
struct metrics_counts {
	uint64_t answered[6];    /* 200, 400, 404, 405, 431, 503 */
	uint64_t timeouts;       /* connections dropped at a deadline */
};
extern const int metrics_codes[6]; /* the codes of answered[] */

/* Listen on host (a numeric IPv4 or IPv6 address, no brackets) and port,
 * and start the server thread; it answers 503 until the first
 * metrics_publish.  The thread blocks every signal (the loop's
 * signalfd gets them).  PX_EINVAL for a host that is not an address,
 * PX_ESYS|errno when the socket cannot be bound or the thread started;
 * err names the address. */
enum px_err metrics_open(const char *host, int port, int64_t timeout_ms,
			 struct metrics **ret, struct px_error *err);
/* The text to serve from now (len bytes; the server owns it, and frees
 * it once no connection sends it).  NULL: keep the one in force. */
void metrics_publish(struct metrics *m, char *text, size_t len);
void metrics_counts(struct metrics *m, struct metrics_counts *ret);
/* Stop the thread, drop every connection, close the listener; NULL is a
 * no-op. */
void metrics_close(struct metrics *m);

#endif
