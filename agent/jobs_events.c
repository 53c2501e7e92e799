/* jobs_events.c -- a job's event log (docs/jobs.md, "Events"): the rows
 * `proteusctl events` reads, each in its own transaction, at the job's
 * market time.  The lowest of the jobs files: every other one writes
 * events, and this one calls none of them. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "../common/log.h"
#include "jobs_int.h"

/* An event row of the job, in its own transaction (market time). */
void job_event(struct job *j, const char *kind, const char *detail)
{
	struct store *st = j->js->s.st;
	struct px_error err = {0};
	int64_t at = (j->run.t ? j->run.t : j->mk.start_s) * 1000000;

	if (store_event_add(st, j->id, 0, at, kind, detail, &err) != PX_OK)
		log_warn("job %" PRId64 ": event '%s' not stored: %s", j->id,
			 kind, err.msg);
}

void job_eventf(struct job *j, const char *kind, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	job_event(j, kind, buf);
}
