/* market_load.c -- one region's spot prices from trace files into a
 * market set (market_load.h): records of other regions or products
 * skipped, the region's first and last time kept. */
#include <stdio.h>
#include <string.h>

#include "market_load.h"
#include "trace.h"

struct load {
	struct market_set *ms;
	struct market_load *ld;
	char zone[TRACE_FIELD_MAX];   /* the last zone seen, and whether */
	int zone_in;                  /* it is in the region (-1: none) */
	char other[TRACE_FIELD_MAX + 16]; /* a region or product not wanted */
};

static enum px_err on_record(const struct trace_record *r, void *arg,
			     struct px_error *err)
{
	struct load *l = arg;
	char reg[TRACE_FIELD_MAX];

	if (strcmp(r->product, l->ld->product)) {
		snprintf(l->other, sizeof l->other, "product '%s'",
			 r->product);
		return PX_OK;
	}
	if (l->zone_in < 0 || strcmp(l->zone, r->zone)) {
		if (trace_zone_region(r->zone, reg, sizeof reg) != PX_OK)
			return px_errorf(err, PX_EINVAL, "field "
					 "'AvailabilityZone': no region in "
					 "'%s'", r->zone);
		snprintf(l->zone, sizeof l->zone, "%s", r->zone);
		l->zone_in = !strcmp(reg, l->ld->region);
		if (!l->zone_in)
			snprintf(l->other, sizeof l->other, "region '%s'",
				 reg);
	}
	if (!l->zone_in)
		return PX_OK;
	if (r->t_s < l->ld->first_s)
		l->ld->first_s = r->t_s;
	if (r->t_s > l->ld->last_s)
		l->ld->last_s = r->t_s;
	l->ld->kept++;
	return market_set_add(l->ms, r->zone, r->type, r->t_s, r->price_uusd,
			      err);
}

enum px_err market_load_files(struct market_set *ms, const char *const *paths,
			      size_t n, struct market_load *ld,
			      struct px_error *err)
{
	struct load l = { .ms = ms, .ld = ld, .zone_in = -1 };
	enum px_err e;

	ld->first_s = INT64_MAX;
	ld->last_s = INT64_MIN;
	ld->kept = 0;
	for (size_t i = 0; i < n; i++) {
		e = trace_read_file(paths[i], on_record, &l, NULL, err);
		if (e != PX_OK)
			return e;
	}
	if (ld->kept == 0)
		return px_errorf(err, PX_ENOENT, "no '%s' record in region "
				 "'%s' in %s (it has %s)", ld->product,
				 ld->region, n == 1 ? paths[0] : "the traces",
				 l.other[0] ? l.other : "no record");
	return market_set_seal(ms, err);
}
