/* fuzz_trace.c -- libFuzzer harness for the trace reader over arbitrary
 * (plain or gzip) bytes: it must return an error or records, never crash,
 * leak or run past its bounds, and its error messages must be one line. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../cloudapi/trace.h"

static enum px_err fuzz_rec(const struct trace_record *rec, void *ctx,
			    struct px_error *err)
{
	uint64_t *n = ctx;
	char region[TRACE_FIELD_MAX + 1];

	/* touch every field; the strings must be terminated and bounded */
	if (strlen(rec->zone) > TRACE_FIELD_MAX ||
	    strlen(rec->type) > TRACE_FIELD_MAX ||
	    strlen(rec->product) > TRACE_FIELD_MAX || rec->price_uusd < 0 ||
	    rec->index != *n)
		abort();
	(void)trace_zone_region(rec->zone, region, sizeof(region));
	if (++*n == 1000)
		return px_errorf(err, PX_ECANCELED, "enough");
	return PX_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace_stats st;
	struct px_error err = {0};
	uint64_t n = 0;
	enum px_err rc = trace_read_buffer(data, size, "fuzz", fuzz_rec, &n,
					   &st, &err);

	if (rc == PX_OK && st.records != n)
		abort();
	if (rc != PX_OK && (err.code != rc || !err.msg[0] ||
			    strchr(err.msg, '\n')))
		abort();
	return 0;
}
