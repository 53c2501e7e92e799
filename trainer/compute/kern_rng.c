/* kern_rng.c -- the trainer's seeded PRNG (kern.h).  Apart from the
 * kernels so that what needs only random numbers (mf.c's initial factors,
 * linked into proteusd for its checkpoints) does not link OpenBLAS: its
 * library constructor starts threads that do not block the daemon's
 * signals, and a SIGTERM then killed the daemon instead of stopping it.
 */
#include "kern.h"

#include <math.h>

void kern_rng_seed(struct kern_rng *r, uint64_t seed)
{
	r->s = seed;
}

/* splitmix64 (Steele, Lea, Flood 2014). */
uint64_t kern_rng_u64(struct kern_rng *r)
{
	uint64_t z = (r->s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

float kern_rng_uniform(struct kern_rng *r)
{
	return (float)(kern_rng_u64(r) >> 40) * (1.0f / 16777216.0f);
}

float kern_rng_normal(struct kern_rng *r)
{
	/* u1 in (0, 1] so that log() is finite. */
	const double two53 = 9007199254740992.0;
	double u1 = ((double)(kern_rng_u64(r) >> 11) + 1.0) / two53;
	double u2 = (double)(kern_rng_u64(r) >> 11) / two53;

	return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

uint64_t kern_rng_below(struct kern_rng *r, uint64_t n)
{
	/* Rejection sampling: no modulo bias. */
	uint64_t lim = UINT64_MAX - UINT64_MAX % n, x;

	do
		x = kern_rng_u64(r);
	while (x >= lim);
	return x % n;
}

