/* jsonout.h -- JSON as people read it: every real in the fewest digits
 * that read back as the same double (0.05, not jansson's
 * 0.050000000000000003), still a real (100.0, not 100), and NaN or an
 * infinity, which JSON cannot hold, as null.  Used wherever a program
 * prints JSON for a user: proteus-trainer's results, proteusctl history,
 * status, jobs and events.
 *
 * Money is micro-USD (int64) everywhere; as a JSON real it is the double
 * nearest to the exact decimal (px_usd: 506100 -> 0.5061), which the
 * shortest form prints as that decimal ("0.5061", never jansson's
 * "0.50609999999999999").  A dollar figure computed in doubles (a product,
 * a sum of dollars) goes through px_usd_round first, or it may print as
 * 0.5061000000000001.
 */
#ifndef PX_JSONOUT_H
#define PX_JSONOUT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

/* x in its shortest round-trip form into buf (at least 32 bytes). */
void px_json_real(double x, char *buf, size_t len);

/* v as compact JSON to f (keys in the object's order).  0, or -1 when
 * writing failed. */
int px_json_put(FILE *f, json_t *v);

/* v to f as json_dumpf(v, f, flags) writes it (JSON_INDENT(n),
 * JSON_COMPACT; keys in the object's order) but every real as above.  0,
 * or -1 when writing failed. */
int px_json_dumpf(json_t *v, FILE *f, size_t flags);

/* The same as a string (the caller frees), or NULL (out of memory). */
char *px_json_dumps(json_t *v, size_t flags);

/* uusd micro-USD as dollars: the double nearest the exact decimal. */
double px_usd(int64_t uusd);
/* A dollar figure rounded to the micro-dollar, as px_usd would give it
 * (NaN and infinities as they are). */
double px_usd_round(double usd);

#endif
