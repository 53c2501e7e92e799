/* notify.h -- proteusd's notifications (docs/proteusd.md,
 * "Notifications"): each job event, as one JSON object, POSTed to the
 * daemon's notify_url and the job's own, and given on its standard input
 * to notify_command.  Everything runs on the daemon's loop and nothing
 * blocks it: the POSTs go through libcurl's multi interface driven by the
 * loop (curl_loop.h's adapter, as the EC2 client's calls), each command is
 * posix_spawn'ed with its output on a pipe the loop watches and its end
 * seen through a pidfd.
 *
 * Destinations: a URL, or the command for one job.  Each has a queue of
 * its events in the order they came, and one of them in flight at a time:
 * the next is sent once the one before was delivered or given up, so a
 * receiver sees each job's events in order.  A failed try (no connection,
 * a timeout, a 5xx, 408 or 429; a command that fails or is killed at its
 * timeout) is tried again after notify_backoff_ms, doubling each time (64
 * times it at most), up to notify_attempts tries; another 4xx is not
 * retried.  A queue holds notify_queue_max events: past it the oldest
 * waiting is dropped.  What is not delivered is logged and counted
 * (notify_metrics).  Logs name a URL by its origin only
 * (scheme://host:port): a webhook's path often is its secret.
 *
 * The config is read at each event (a reload applies to later events).
 */
#ifndef PX_NOTIFY_H
#define PX_NOTIFY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/px.h"
#include "config.h"
#include "loop.h"

#define NOTIFY_BODY_MAX 8192     /* an event's JSON, bytes */
#define NOTIFY_DESTS_MAX 256     /* destinations with events at once */
#define NOTIFY_OUTPUT_MAX 1024   /* a command's output logged, bytes */
#define NOTIFY_ANSWER_MAX 4096   /* a receiver's answer read, bytes: its
				  * status decides, the rest is not read */

struct notify;
struct prom;

/* cfg is the daemon's live config (it outlives n). */
enum px_err notify_new(struct loop *l, const struct proteusd_config *cfg,
		       struct notify **ret, struct px_error *err);
/* Stops what is in flight (commands killed and reaped) and frees; what
 * was not delivered is logged and counted as failed.  NULL is a no-op. */
void notify_free(struct notify *n);

/* Queue ev (an object; borrowed) for the daemon's notify_url, url (a
 * job's, NULL or "": none; once when it is the daemon's too) and
 * notify_command (run for job's queue).  Returns at once. */
void notify_event(struct notify *n, int64_t job, const char *url,
		  json_t *ev);

enum notify_result {
	NOTIFY_DELIVERED = 0,   /* a 2xx answer, or the command exited 0 */
	NOTIFY_FAILED,          /* given up after its tries, or refused */
	NOTIFY_DROPPED,         /* a full queue dropped it, or too many
				 * destinations */
	NOTIFY_RESULT_MAX
};
const char *notify_result_name(enum notify_result r);

struct notify_counts {
	uint64_t result[NOTIFY_RESULT_MAX];
	uint64_t retries;       /* tries after the first */
	size_t pending;         /* queued or in flight now */
	size_t running;         /* commands running now */
};
void notify_counts(const struct notify *n, struct notify_counts *ret);

/* proteus_notifications_total{result}, proteus_notification_retries_total
 * and proteus_notifications_pending. */
void notify_metrics(const struct notify *n, struct prom *p);

#endif
