/* instances.c -- the static instance-type table (see instances.h). */
#include <stdlib.h>
#include <string.h>

#include "instances.h"

/* Default current-era interruption rates, per instance-hour: about 14% of
 * instances a month for general types and 50% for GPU types.  These are
 * assumptions in the spirit of the Spot Instance Advisor's buckets, not
 * measurements; a job overrides them with "interruption_rates". */
#define RATE_STD 0.0002
#define RATE_GPU 0.0007

/* Sorted by name (strcmp order): inst_find uses bsearch. */
static const struct inst_type types[] = {
	{"c1.medium", 2, 1741, 0, RATE_STD},
	{"c1.xlarge", 8, 7168, 0, RATE_STD},
	{"c3.2xlarge", 8, 15360, 0, RATE_STD},
	{"c3.4xlarge", 16, 30720, 0, RATE_STD},
	{"c3.8xlarge", 32, 61440, 0, RATE_STD},
	{"c3.large", 2, 3840, 0, RATE_STD},
	{"c3.xlarge", 4, 7680, 0, RATE_STD},
	{"c4.2xlarge", 8, 15360, 0, RATE_STD},
	{"c4.4xlarge", 16, 30720, 0, RATE_STD},
	{"c4.8xlarge", 36, 61440, 0, RATE_STD},
	{"c4.large", 2, 3840, 0, RATE_STD},
	{"c4.xlarge", 4, 7680, 0, RATE_STD},
	{"c5.xlarge", 4, 8192, 0, RATE_STD},
	{"cg1.4xlarge", 16, 23040, 2, RATE_GPU},
	{"cr1.8xlarge", 32, 249856, 0, RATE_STD},
	{"d2.2xlarge", 8, 62464, 0, RATE_STD},
	{"d2.4xlarge", 16, 124928, 0, RATE_STD},
	{"d2.8xlarge", 36, 249856, 0, RATE_STD},
	{"d2.xlarge", 4, 31232, 0, RATE_STD},
	{"g2.2xlarge", 8, 15360, 1, RATE_GPU},
	{"g2.8xlarge", 32, 61440, 4, RATE_GPU},
	{"g3.4xlarge", 16, 124928, 1, RATE_GPU},
	{"g4dn.xlarge", 4, 16384, 1, RATE_GPU},
	{"hi1.4xlarge", 16, 61952, 0, RATE_STD},
	{"m1.large", 2, 7680, 0, RATE_STD},
	{"m1.small", 1, 1741, 0, RATE_STD},
	{"m1.xlarge", 4, 15360, 0, RATE_STD},
	{"m2.xlarge", 2, 17510, 0, RATE_STD},
	{"m3.2xlarge", 8, 30720, 0, RATE_STD},
	{"m3.large", 2, 7680, 0, RATE_STD},
	{"m3.medium", 1, 3840, 0, RATE_STD},
	{"m3.xlarge", 4, 15360, 0, RATE_STD},
	{"m4.10xlarge", 40, 163840, 0, RATE_STD},
	{"m4.2xlarge", 8, 32768, 0, RATE_STD},
	{"m4.4xlarge", 16, 65536, 0, RATE_STD},
	{"m4.large", 2, 8192, 0, RATE_STD},
	{"m4.xlarge", 4, 16384, 0, RATE_STD},
	{"m5.xlarge", 4, 16384, 0, RATE_STD},
	{"p2.8xlarge", 32, 499712, 8, RATE_GPU},
	{"p2.xlarge", 4, 62464, 1, RATE_GPU},
	{"p3.2xlarge", 8, 62464, 1, RATE_GPU},
	{"p3.8xlarge", 32, 249856, 4, RATE_GPU},
	{"r3.2xlarge", 8, 62464, 0, RATE_STD},
	{"r3.4xlarge", 16, 124928, 0, RATE_STD},
	{"r3.8xlarge", 32, 249856, 0, RATE_STD},
	{"r3.large", 2, 15616, 0, RATE_STD},
	{"r3.xlarge", 4, 31232, 0, RATE_STD},
	{"r4.large", 2, 15616, 0, RATE_STD},
	{"t1.micro", 1, 628, 0, RATE_STD},
};

static int cmp_name(const void *key, const void *elem)
{
	const struct inst_type *t = elem;
	return strcmp(key, t->name);
}

const struct inst_type *inst_find(const char *name)
{
	return bsearch(name, types, sizeof types / sizeof *types,
		       sizeof *types, cmp_name);
}

size_t inst_count(void)
{
	return sizeof types / sizeof *types;
}

const struct inst_type *inst_at(size_t i)
{
	return i < inst_count() ? &types[i] : NULL;
}
