/* jobs_notify.c -- a job's events as notifications (notify.h;
 * docs/proteusd.md, "Notifications"): the JSON each one carries.  The
 * hooks are where the other jobs files change a state or hear of an
 * eviction notice, an eviction, a loss, a stop or a recovery. */
#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "jobs_int.h"
#include "notify.h"

/* Wall time as RFC 3339 UTC with milliseconds. */
static void rfc3339(int64_t us, char *buf, size_t len)
{
	time_t s = (time_t)(us / 1000000);
	struct tm tm;
	char day[24];

	if (!gmtime_r(&s, &tm)) {
		snprintf(buf, len, "1970-01-01T00:00:00.000Z");
		return;
	}
	strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03dZ", day, (int)(us / 1000 % 1000));
}

void job_notify(struct job *j, const char *event, const char *reason,
		json_t *extra)
{
	struct notify *n = j->js->notify;
	char when[40];
	json_t *o;

	if (!n) {
		json_decref(extra);
		return;
	}
	rfc3339(px_now_wall_us(), when, sizeof when);
	o = json_pack("{s:I, s:s, s:s, s:s, s:I, s:s, s:s, s:f}",
		      "job", (json_int_t)j->id, "event", event, "state",
		      store_job_state_name(j->run.state), "time", when, "seq",
		      (json_int_t)job_books_notified(j), "name", j->req.spec.name,
		      "world", j->req.world.name, "cost_usd",
		      (double)job_cost_uusd(j) / 1e6);
	if (o && j->run.t > 0)    /* the market instant, once started */
		json_object_set_new(o, "market_time", json_integer(j->run.t));
	if (o && reason && *reason)
		json_object_set_new(o, "reason", json_string(reason));
	if (o && extra)
		json_object_update(o, extra);
	json_decref(extra);
	if (o)
		notify_event(n, j->id, j->req.notify_url, o);
	json_decref(o);
}

void job_notify_instance(struct job *j, const char *event,
			 const struct ctrl_event *ev)
{
	json_t *x = json_pack("{s:I, s:s?, s:s?, s:s, s:s}", "instance",
			      (json_int_t)ev->instance, "type", ev->type,
			      "zone", ev->zone, "market", ev->zone ? "spot" :
			      "on-demand", "tier", ev->reliable ? "reliable" :
			      "transient");

	job_notify(j, event, ev->detail, x);
}
