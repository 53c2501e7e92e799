/* test_jsonout.c -- JSON for people: shortest reals that read back, still
 * reals, null for what JSON cannot hold (common/jsonout.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/jsonout.h"

static void real_is(double x, const char *want)
{
	char buf[40];

	px_json_real(x, buf, sizeof buf);
	cr_assert_str_eq(buf, want, "%.17g", x);
}

Test(jsonout, shortest_reals_that_read_back)
{
	real_is(0.05, "0.05");
	real_is(0.0179, "0.0179");
	real_is(100.0, "100.0");
	real_is(-2.5, "-2.5");
	real_is(0.1 + 0.2, "0.30000000000000004");
	real_is(1e300, "1e+300");
	real_is(0.0, "0.0");
	real_is(NAN, "null");
	real_is(INFINITY, "null");
	real_is(-INFINITY, "null");
	/* every printed form reads back as the very double */
	srand(12345);
	for (int i = 0; i < 20000; i++) {
		double x = ldexp((double)rand() / RAND_MAX - 0.5,
				 rand() % 200 - 100);
		char buf[40];

		px_json_real(x, buf, sizeof buf);
		cr_assert_eq(strtod(buf, NULL), x, "%s for %.17g", buf, x);
	}
}

Test(jsonout, nested_values)
{
	json_t *v = json_pack("{s:f, s:[f, i, s, n], s:{s:f}, s:b}", "a", 0.05,
			      "b", 1.0, 3, "x\"y", "c", "d", 1e-7, "e", 1);
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);

	cr_assert_not_null(v);
	cr_assert_eq(px_json_put(m, v), 0);
	fclose(m);
	cr_assert_str_eq(out, "{\"a\":0.05,\"b\":[1.0,3,\"x\\\"y\",null],"
			      "\"c\":{\"d\":1e-07},\"e\":true}");
	free(out);
	json_decref(v);
}
