/* instances.h -- the shipped table of EC2 instance types: vCPUs, memory and
 * GPUs for every type that appears in the shared spot-price traces and the
 * on-demand table.  Source: AWS's published instance-type specifications
 * (EC2 User Guide, "Instance types" and "Previous generation instances");
 * see docs/simulate.md.  A static table; no I/O.
 */
#ifndef PX_INSTANCES_H
#define PX_INSTANCES_H

#include <stddef.h>

struct inst_type {
	const char *name;        /* e.g. "c4.xlarge" */
	int vcpus;               /* virtual CPUs */
	int memory_mib;          /* memory, MiB */
	int gpus;                /* GPUs (0 for none) */
	double interrupt_per_h;  /* default current-era interruption rate,
				  * per instance-hour (an assumption, see
				  * docs/simulate.md) */
};

/* The type called name, or NULL. */
const struct inst_type *inst_find(const char *name);
/* Number of types and the i-th (sorted by name). */
size_t inst_count(void);
const struct inst_type *inst_at(size_t i);

#endif
