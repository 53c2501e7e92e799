/* prom.h -- the Prometheus text exposition format, version 0.0.4, written
 * into a growing buffer: what proteusd serves at /metrics (metrics.h;
 * docs/proteusd.md, "Metrics").  Hand-written: no C client library for
 * Prometheus is packaged in Debian (prometheus-client-c is not), and the
 * format is a few lines of text per sample.
 *
 * A family is announced once (HELP and TYPE lines), then its samples
 * follow, each "name{label="value",...} value\n".  Label values are
 * escaped as the format says (backslash, double quote, newline); a value
 * that is not finite is not written (a gauge without a figure yet is
 * absent, never NaN).  Out of memory is sticky: prom_take says so once.
 */
#ifndef PX_PROM_H
#define PX_PROM_H

#include <stdbool.h>
#include <stddef.h>

struct prom {
	char *buf;
	size_t len, cap;
	bool oom;           /* a write failed: the text is incomplete */
};

/* The content type a scraper is answered with. */
#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* HELP and TYPE of the family name; type is "counter", "gauge",
 * "histogram" or "summary". */
void prom_family(struct prom *p, const char *name, const char *type,
		 const char *help);
/* One sample: name (the family's, or with _bucket/_sum/_count), then
 * label name and value pairs ending with NULL, e.g.
 * prom_sample(p, "proteus_jobs", 2, "state", "running", NULL). */
void prom_sample(struct prom *p, const char *name, double v, ...)
	__attribute__((sentinel));
/* The text written, NUL-terminated, now the caller's (free); *ret_len
 * its length.  NULL when out of memory at any point.  p is left empty. */
char *prom_take(struct prom *p, size_t *ret_len);
void prom_release(struct prom *p);

#endif
