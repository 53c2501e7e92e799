/* advisor.h -- the AWS Spot Instance Advisor's interruption buckets, and
 * the per-second-era interruption hazard made of them (docs/simulate.md,
 * "Interruptions").
 *
 * The advisor's data file gives, per region, OS and instance type, `r`:
 * the bucket of "the rate at which Spot has reclaimed capacity during the
 * trailing month" (<5%, 5-10%, 10-15%, 15-20%, >20%; upper bounds in
 * "ranges").  A bucket's share f (its middle; ADVISOR_TOP_SHARE for the
 * open top one) is read as the chance that an instance is interrupted
 * before its user ends it.  With a constant hazard h and a typical life
 * of ADVISOR_LIFE_H hours, f = 1 - exp(-h * life), so
 *
 *     h = -ln(1 - f) / ADVISOR_LIFE_H   interruptions per instance-hour.
 *
 * AWS publishes no life; ADVISOR_LIFE_H is the one value that makes the
 * model predict the 558 interruptions measured over the 2,204.5
 * instance-hours of Bamboo's us-east-1 availability traces
 * (../shared/traces/current-era/, NSDI'23) with the 2021-02 buckets of
 * their types.  tests/unit/test_advisor.c recomputes it from the traces.
 */
#ifndef PX_ADVISOR_H
#define PX_ADVISOR_H

#include <stddef.h>
#include <stdint.h>

#include "../common/px.h"

#define ADVISOR_FILE_MAX (8 * 1024 * 1024)
#define ADVISOR_BUCKETS_MAX 8
#define ADVISOR_TYPE_MAX 32
#define ADVISOR_REGION_MAX 32
/* The typical life of a spot instance over which a bucket's share is
 * taken, hours (fitted to the measured traces; see above). */
#define ADVISOR_LIFE_H 1.2295
/* The share assumed for the open top bucket (">20%"). */
#define ADVISOR_TOP_SHARE 0.30

struct advisor_entry {
	char type[ADVISOR_TYPE_MAX];
	int bucket;              /* index into the buckets */
	int saving_pct;          /* `s`: saving against on-demand, percent */
};

struct advisor {
	char name[256];          /* the file, for messages */
	char region[ADVISOR_REGION_MAX];
	double bucket_max_pct[ADVISOR_BUCKETS_MAX]; /* upper bounds */
	int n_buckets;
	struct advisor_entry *v; /* sorted by type */
	size_t n;
};

/* Parse an advisor data file (AWS's whole file, or the shipped subsets in
 * etc/spot-advisor/) for region's Linux entries.  PX_EINVAL naming the
 * file and field for anything malformed, PX_ENOENT when the region has no
 * Linux entries. */
enum px_err advisor_parse(const char *buf, size_t len, const char *name,
			  const char *region, struct advisor *ret,
			  struct px_error *err);
/* Read the file at path (at most ADVISOR_FILE_MAX bytes) and parse it. */
enum px_err advisor_load(const char *path, const char *region,
			 struct advisor *ret, struct px_error *err);
void advisor_release(struct advisor *a);

/* The entry for type, or NULL. */
const struct advisor_entry *advisor_find(const struct advisor *a,
					 const char *type);
/* The share of instances reclaimed that bucket b stands for (0..1), and
 * the hazard it gives, per instance-hour; 0 for a bucket out of range. */
double advisor_share(const struct advisor *a, int b);
double advisor_hazard(const struct advisor *a, int b);

/* The snapshot in dir for a run that starts at t_s: of the files named
 * linux_YYYY-MM.json, the latest taken in or before t_s's month, else the
 * earliest.  Its path into buf.  PX_ENOENT when dir has none. */
enum px_err advisor_pick(const char *dir, int64_t t_s, char *buf, size_t len,
			 struct px_error *err);
/* The shipped snapshot for a run that starts at t_s (advisor_pick in the
 * folder beside the running program: PREFIX/share/proteus/spot-advisor
 * installed, etc/spot-advisor from build/ or build/asan/ in the source
 * tree).  PX_ENOENT naming where it looked when there is none. */
enum px_err advisor_shipped(int64_t t_s, char *buf, size_t len,
			    struct px_error *err);

#endif
