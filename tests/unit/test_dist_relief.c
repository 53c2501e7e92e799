/* test_dist_relief.c -- straggler relief's split (dist_relief_split,
 * trainer/dist/dist.h): whole minibatches not begun, each to whoever would end
 * it first while that is before the straggler would; the clock's end is
 * then within one helper minibatch of the continuous ideal. */
#include <criterion/criterion.h>
#include <math.h>

#include "../../trainer/dist/dist.h"

/* When the last of them ends: the straggler (what it kept, its minibatch
 * in progress among it) and every helper. */
static double makespan(double left, double vs, const double *vh, uint32_t n,
		       const uint32_t *share)
{
	double moved = 0, end = 0;

	for (uint32_t k = 0; k < n; k++) {
		moved += share[k];
		if (share[k] / vh[k] > end)
			end = share[k] / vh[k];
	}
	return fmax(end, (left - moved) / vs);
}

Test(dist_relief, three_helpers_take_most_of_a_short_clock)
{
	/* worker at a third of its peers' speed, 5 1/3 minibatches left:
	 * shares by the speeds, each rounded down, were 1, 1, 1 and left
	 * it 2 1/3 (7 s at 1/3 a second); now the three take 5 */
	double vh[3] = { 1, 1, 1 };
	uint32_t s[3];
	uint32_t moved = dist_relief_split(5 + 1.0 / 3, 1.0 / 3, vh, NULL, 3, s);

	cr_assert_eq(moved, 5);
	cr_assert_eq(s[0] + s[1] + s[2], 5);
	cr_assert_leq(makespan(5 + 1.0 / 3, 1.0 / 3, vh, 3, s), 2.0 + 1e-9);
}

Test(dist_relief, within_a_minibatch_of_the_ideal)
{
	/* many shapes: the end no later than the continuous split's (all
	 * end together; the straggler's minibatch in progress cannot
	 * move) plus one minibatch of the slowest helper, never
	 * more handed over than the whole minibatches not begun, and
	 * nothing moved that would end after the straggler */
	const double vs_set[] = { 0.1, 0.33, 1, 2.5 };
	const double lefts[] = { 0.5, 1, 2.7, 8, 31.9, 500 };

	for (uint32_t n = 1; n <= 6; n++)
		for (size_t a = 0; a < 4; a++)
			for (size_t b = 0; b < 6; b++) {
				double vh[6], vsum = vs_set[a], vmin = INFINITY;
				uint32_t s[6], moved;
				double ideal, end;

				for (uint32_t k = 0; k < n; k++) {
					vh[k] = 0.5 + k * 0.75;
					vsum += vh[k];
					vmin = fmin(vmin, vh[k]);
				}
				moved = dist_relief_split(lefts[b], vs_set[a],
							  vh, NULL, n, s);
				cr_assert_leq(moved, floor(lefts[b]));
				ideal = fmax(lefts[b] / vsum,
					     (lefts[b] - floor(lefts[b])) /
						     vs_set[a]);
				end = makespan(lefts[b], vs_set[a], vh, n, s);
				cr_assert_leq(end, ideal + 1 / vmin + 1e-9,
					      "n %u vs %g left %g: %g > %g",
					      n, vs_set[a], lefts[b], end,
					      ideal + 1 / vmin);
				/* keeping everything is never better */
				cr_assert_leq(end, lefts[b] / vs_set[a] +
						   1e-9);
			}
}

Test(dist_relief, nothing_to_split)
{
	double vh[2] = { 1, 1 };
	uint32_t s[2] = { 7, 7 };

	cr_assert_eq(dist_relief_split(0.9, 0.5, vh, NULL, 2, s), 0);
	cr_assert_eq(s[0] + s[1], 0, "shares cleared");
	cr_assert_eq(dist_relief_split(5, 0, vh, NULL, 2, s), 0, "no speed");
	cr_assert_eq(dist_relief_split(NAN, 1, vh, NULL, 2, s), 0);
	vh[0] = vh[1] = 0;
	cr_assert_eq(dist_relief_split(5, 1, vh, NULL, 2, s), 0,
		     "helpers of no speed");
	/* helpers slower than the straggler: nothing ends sooner there */
	vh[0] = vh[1] = 0.1;
	cr_assert_eq(dist_relief_split(1.5, 1, vh, NULL, 2, s), 0);
}

/* A helper still busy is counted from when it is free: the one free now
 * takes more; one busy past the straggler's end takes none. */
Test(dist_relief, helpers_free_later_take_less)
{
	double vh[3] = { 1, 1, 1 }, t0[3] = { 0, 1, 100 };
	uint32_t s[3];

	uint32_t moved = dist_relief_split(6, 0.5, vh, t0, 3, s);

	cr_assert_gt(s[0], s[1], "%u %u", s[0], s[1]);
	cr_assert_eq(s[2], 0);
	cr_assert_eq(moved, s[0] + s[1]);
	/* the ends: helper 0 at s0, helper 1 at 1 + s1, the straggler at
	 * 2 a minibatch kept: 3 s, where keeping all took 12 */
	cr_assert_leq(fmax(fmax(s[0], 1.0 + s[1]), (6.0 - moved) / 0.5),
		      3.0 + 1e-9, "%u %u", s[0], s[1]);
}
