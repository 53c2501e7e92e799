/* test_prom.c -- the Prometheus text format writer (agent/prom.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "../../agent/prom.h"

Test(prom, families_samples_and_escapes)
{
	struct prom p = {0};
	size_t len;
	char *t;

	prom_family(&p, "proteus_x", "gauge", "A \\ help\nline.");
	prom_sample(&p, "proteus_x", 2, NULL);
	prom_sample(&p, "proteus_x", 0.1, "job", "a\"b\\c\nd", "k", "", NULL);
	prom_sample(&p, "proteus_x", NAN, "job", "nan", NULL);
	prom_sample(&p, "proteus_x", INFINITY, "job", "inf", NULL);
	prom_sample(&p, "proteus_x", -0.0, "job", "zero", NULL);
	prom_sample(&p, "proteus_x", 1e21, "job", "big", NULL);
	t = prom_take(&p, &len);
	cr_assert_not_null(t);
	cr_assert_str_eq(t,
		"# HELP proteus_x A \\\\ help\\nline.\n"
		"# TYPE proteus_x gauge\n"
		"proteus_x 2\n"
		"proteus_x{job=\"a\\\"b\\\\c\\nd\",k=\"\"} 0.1\n"
		"proteus_x{job=\"zero\"} 0\n"
		"proteus_x{job=\"big\"} 1e+21\n");
	cr_assert_eq(len, strlen(t));
	free(t);
	/* nothing written: an empty text, not NULL */
	t = prom_take(&p, &len);
	cr_assert_not_null(t);
	cr_assert_eq(len, 0);
	free(t);
}
