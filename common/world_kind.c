/* world_kind.c -- the worlds' names (world_kind.h). */
#include <string.h>

#include "world_kind.h"

static const char *const names[WORLD_KIND_MAX] = {
	[WORLD_SIM] = "sim",
	[WORLD_LOCAL] = "local",
	[WORLD_EC2] = "ec2",
};

const char *world_kind_name(enum world_kind k)
{
	return (unsigned)k < WORLD_KIND_MAX ? names[k] : "unknown";
}

int world_kind_parse(const char *s)
{
	for (int k = 0; s && k < WORLD_KIND_MAX; k++)
		if (!strcmp(s, names[k]))
			return k;
	return -1;
}
