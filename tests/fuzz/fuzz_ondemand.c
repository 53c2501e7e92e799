/* fuzz_ondemand.c -- libFuzzer harness for on-demand table parsing: any
 * bytes give a sorted table (every entry findable) or an error. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../cloudapi/ondemand.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ondemand_table t = {0};
	struct px_error err = {0};
	enum px_err rc = ondemand_table_parse((const char *)data, size,
					      "fuzz", &t, &err);

	if (rc != PX_OK) {
		if (err.code != rc || !err.msg[0])
			abort();
		return 0;
	}
	for (size_t i = 0; i < t.n; i++) {
		const struct ondemand_entry *e = &t.v[i];

		if (e->uusd_per_hour < 0 ||
		    ondemand_table_find(&t, e->region, e->type) != e)
			abort();
	}
	ondemand_table_release(&t);
	return 0;
}
