/* jsonout.h -- JSON as people read it: every real in the fewest digits
 * that read back as the same double (0.05, not jansson's
 * 0.050000000000000003), still a real (100.0, not 100), and NaN or an
 * infinity, which JSON cannot hold, as null.  Used wherever a program
 * prints JSON for a user: proteus-trainer's results, proteusctl history.
 */
#ifndef PX_JSONOUT_H
#define PX_JSONOUT_H

#include <jansson.h>
#include <stdio.h>

/* x in its shortest round-trip form into buf (at least 32 bytes). */
void px_json_real(double x, char *buf, size_t len);

/* v as compact JSON to f (keys in the object's order).  0, or -1 when
 * writing failed. */
int px_json_put(FILE *f, json_t *v);

#endif
