/* world_kind.h -- the worlds, one enum for every layer that names one:
 * proteusd's config, job specs (agent/jobreq.h), the store's jobs table
 * (db/store.h: its `world` column holds these names) and the worlds' ops
 * tables (agent/world.h).  Here, below all of them, so that the
 * store needs nothing of the agent.
 */
#ifndef PX_WORLD_KIND_H
#define PX_WORLD_KIND_H

/* Never renumber: stored values and tables follow this order. */
enum world_kind {
	WORLD_SIM = 0,           /* proteusctl simulate: virtual time */
	WORLD_LOCAL,             /* process groups on this host */
	WORLD_EC2,               /* instances through the EC2 Query API */
	WORLD_KIND_MAX
};

/* "sim", "local", "ec2" (as the store, the JSON and the CLI print them);
 * "unknown" for other values. */
const char *world_kind_name(enum world_kind k);
/* The kind named s, or -1 (s NULL or another name). */
int world_kind_parse(const char *s);

#endif
