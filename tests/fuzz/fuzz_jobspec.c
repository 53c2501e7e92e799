/* fuzz_jobspec.c -- libFuzzer harness for the job-spec parser: any bytes
 * give a spec whose invariants hold, or an error that names something. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../bidbrain/jobspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jobspec *js = calloc(1, sizeof(*js));
	struct px_error err = {0};
	enum px_err rc;

	if (!js)
		return 0;
	rc = jobspec_parse((const char *)data, size, "fuzz", js, &err);
	if (rc != PX_OK) {
		/* every error says what and where */
		if (err.code != rc || strncmp(err.msg, "fuzz", 4))
			abort();
		free(js);
		return 0;
	}
	if (!js->name[0] || !js->region[0] ||
	    !(js->work_hours >= JOBSPEC_HOURS_MIN && js->work_hours <= 1e7) ||
	    js->instances < 0 || js->reliable.count < 0 ||
	    js->spot.n_types > JOBSPEC_TYPES_MAX ||
	    js->spot.n_zones > JOBSPEC_ZONES_MAX ||
	    js->n_speed > JOBSPEC_TYPES_MAX || js->n_rate > JOBSPEC_TYPES_MAX ||
	    !(js->scaling_efficiency >= JOBSPEC_EFFICIENCY_MIN &&
	      js->scaling_efficiency <= 1) ||
	    js->startup_seconds < 0 || js->clock_seconds < 0 ||
	    (js->budget_uusd != -1 && js->budget_uusd < 1) ||
	    (js->deadline_hours != 0 &&
	     !(js->deadline_hours >= JOBSPEC_HOURS_MIN)))
		abort();
	/* the bounds that keep the simulator's figures finite */
	for (size_t i = 0; i < js->n_speed; i++)
		if (!(js->speed[i].v >= JOBSPEC_SPEED_MIN &&
		      js->speed[i].v <= 1000))
			abort();
	for (size_t i = 0; i < js->spot.n_types; i++)
		if (!memchr(js->spot.types[i], '\0', JOBSPEC_NAME_MAX))
			abort();
	free(js);
	return 0;
}
