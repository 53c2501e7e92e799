/* workload.c -- the workloads a job may name (workload.h): the built-in
 * trainer and the user's program, and any other registered before the daemon takes jobs. */
#include <stdio.h>
#include <string.h>

#include "workload.h"

#define WORKLOADS_MAX 8

static const struct workload_ops *known[WORKLOADS_MAX] = {
	&workload_trainer,
	&workload_program,
};
static size_t n_known = 2;

const struct workload_ops *workload_of(const char *name)
{
	for (size_t i = 0; name && i < n_known; i++)
		if (!strcmp(known[i]->name, name))
			return known[i];
	return NULL;
}

enum px_err workload_register(const struct workload_ops *o,
			      struct px_error *err)
{
	if (!o || !o->name || !o->prepare || !o->node_ports || !o->hooks ||
	    !o->start || !o->poll || !o->stage || !o->check ||
	    !o->restart_stalled || !o->stop || !o->free || !o->product)
		return px_errorf(err, PX_EINVAL, "a workload needs a name, a "
				 "product and every op");
	if (workload_of(o->name))
		return px_errorf(err, PX_EINVAL, "workload '%s' is known "
				 "already", o->name);
	if (n_known == WORKLOADS_MAX)
		return px_errorf(err, PX_ETOOBIG, "at most %d workloads",
				 WORKLOADS_MAX);
	known[n_known++] = o;
	return PX_OK;
}

void workload_names(char *buf, size_t len)
{
	size_t o = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < n_known && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? ", " : "",
				      known[i]->name);
}
