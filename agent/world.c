/* world.c -- what the worlds share: when a spot instance gets its eviction
 * notice (world.h). */
#include <math.h>

#include "world.h"

static uint64_t splitmix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

int64_t world_notice_at(const struct pol_env *env, const struct market *m,
			int type, uint64_t id, int64_t now, int64_t bid_uusd)
{
	int64_t at = market_first_above(m, now, bid_uusd);
	double rate = env->types[type].interrupt_per_h;

	if (env->billing == BILLING_PER_SECOND && rate > 0) {
		uint64_t x = splitmix(env->seed ^ splitmix(id));
		double u = ((x >> 11) + 1.0) / 9007199254740993.0;
		double h = -log(u) / rate;

		/* a tiny rate draws a time no int64 holds: never, then */
		if (h < 1e9 && now + (int64_t)ceil(h * 3600) < at)
			at = now + (int64_t)ceil(h * 3600);
	}
	return at;
}
