/* market_load.h -- one region's spot prices from trace files into a
 * market set (trace.h reads, market.h keeps), for proteusd's local world.
 */
#ifndef PX_MARKET_LOAD_H
#define PX_MARKET_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "../common/px.h"
#include "market.h"

struct market_load {
	const char *region;      /* e.g. "us-east-1" */
	const char *product;     /* e.g. "Linux/UNIX" */
	int64_t first_s, last_s; /* out: the region's first and last record */
	uint64_t kept;           /* out: records added */
};

/* Read every record of region and product from the n trace files into ms
 * (initialised by the caller) and seal it.  PX_ENOENT with the regions and
 * products seen when none matches; the trace reader's errors (file,
 * record, byte, field) otherwise. */
enum px_err market_load_files(struct market_set *ms, const char *const *paths,
			      size_t n, struct market_load *ld,
			      struct px_error *err);

#endif
