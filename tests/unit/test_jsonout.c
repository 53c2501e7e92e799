/* test_jsonout.c -- JSON for people: shortest reals that read back, still
 * reals, null for what JSON cannot hold (common/jsonout.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/proto.h"
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

static char *dump(json_t *v, size_t flags, bool ours)
{
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);

	cr_assert_not_null(m);
	if (ours)
		cr_assert_eq(px_json_dumpf(v, m, flags), 0);
	else
		cr_assert_eq(json_dumpf(v, m, flags), 0);
	fclose(m);
	return out;
}

/* Laid out as jansson lays it out (indent, separators, empty containers),
 * for each layout the commands use. */
Test(jsonout, layout_as_jansson)
{
	json_t *v = json_pack("{s:i, s:[i, s, n, {}], s:{s:[]}, s:{s:b, s:i}, "
			      "s:[]}", "a", 1, "b", 2, "x\"y", "c", "d", "e",
			      "f", 1, "g", 3, "h");
	const size_t flags[] = { 0, JSON_COMPACT, JSON_INDENT(2),
				 JSON_INDENT(4), JSON_INDENT(2) |
				 JSON_COMPACT };

	cr_assert_not_null(v);
	for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
		char *a = dump(v, flags[i], true), *b = dump(v, flags[i],
							    false);

		cr_assert_str_eq(a, b, "flags %zx", flags[i]);
		free(a);
		free(b);
	}
	json_decref(v);
}

/* Money: micro-dollars print as their exact decimal, including a figure
 * computed in doubles once rounded (jansson wrote 0.50609999999999999). */
Test(jsonout, money_prints_as_its_decimal)
{
	json_t *v = json_pack("{s:f, s:f, s:f, s:f}", "cost_usd",
			      px_usd(506100), "big", px_usd(123456789012),
			      "sum", px_usd_round(0.1 + 0.2),
			      "product", px_usd_round(0.0253 * 20.0042));
	char *out, *j;

	cr_assert_not_null(v);
	out = dump(v, JSON_INDENT(2), true);
	cr_assert(strstr(out, "\"cost_usd\": 0.5061\n") ||
		  strstr(out, "\"cost_usd\": 0.5061,"), "%s", out);
	cr_assert(strstr(out, "\"big\": 123456.789012,"), "%s", out);
	cr_assert(strstr(out, "\"sum\": 0.3,"), "%s", out);
	cr_assert(strstr(out, "\"product\": 0.506106\n"), "%s", out);
	/* what json_dumpf alone gives: the reason for all this */
	j = dump(v, JSON_INDENT(2), false);
	cr_assert(strstr(j, "0.50609999999999999"), "%s", j);
	free(j);
	free(out);
	json_decref(v);
	cr_assert_eq(px_usd_round(-0.0000001), 0.0);
	cr_assert(!signbit(px_usd_round(-0.0000001)));
	cr_assert(isnan(px_usd_round(NAN)));
}

/* The daemon's replies carry money as its decimal too (a raw socket
 * client, not only proteusctl, reads 0.5061). */
Test(jsonout, replies_on_the_socket_print_money_exactly)
{
	json_t *o = json_pack("{s:b, s:f}", "ok", 1, "cost_usd", 0.5061);
	char *line = NULL;
	size_t n = 0;

	cr_assert_eq(proto_encode(o, &line, &n, NULL), PX_OK);
	cr_assert_str_eq(line, "{\"ok\":true,\"cost_usd\":0.5061}\n");
	cr_assert_eq(n, strlen(line));
	free(line);
	json_decref(o);
}
