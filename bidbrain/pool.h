/* pool.h -- the limits that all jobs of one head node share (docs/pool.md):
 * spot and on-demand vCPUs, in total or per quota group as AWS counts
 * them, and a team budget per hour; what is in use against them.
 *
 * AWS caps a region's running spot and on-demand vCPUs per group of
 * instance families ("All Standard (A, C, D, H, I, M, R, T, Z) Spot
 * Instance Requests", "All G and VT Spot Instance Requests", ...): a
 * type's group is its family's (pool_group_of).  A limit is a total over
 * every group, or per group ("standard=64,g=16,p=0"), or both; a group a
 * limit does not name is not limited by it.  No I/O, no logging.
 */
#ifndef PX_POOL_H
#define PX_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/px.h"

/* AWS's quota groups, and "other" for a family no group names. */
enum pool_group {
	POOL_G_STANDARD = 0,     /* A, C, D, H, I, M, R, T, Z */
	POOL_G_F,
	POOL_G_G,                /* G and VT */
	POOL_G_INF,
	POOL_G_P,
	POOL_G_X,                /* X, and the high-memory U */
	POOL_G_DL,
	POOL_G_TRN,
	POOL_G_OTHER,
	POOL_GROUPS
};

/* The group of an instance type by its family ("c4.xlarge": standard,
 * "g5.xlarge": g, "inf2.xlarge": inf); POOL_G_OTHER when none. */
enum pool_group pool_group_of(const char *type);
/* "standard", "f", "g", "inf", "p", "x", "dl", "trn", "other". */
const char *pool_group_name(enum pool_group g);

/* A vCPU limit; -1: none. */
struct pool_limit {
	int64_t total;
	int64_t group[POOL_GROUPS];
};
/* No limit at all. */
void pool_limit_none(struct pool_limit *l);
/* Parse a limit: "64" (a total), "standard=64,g=16,p=0" (per group), or
 * both ("128,standard=64"); "none" or "" is no limit.  Errors name field
 * and the bad part.  ret is left as it was on error. */
enum px_err pool_limit_parse(const char *field, const char *text,
			     struct pool_limit *ret, struct px_error *err);
/* Back to text, as parsed ("none" when there is none). */
void pool_limit_format(const struct pool_limit *l, char *buf, size_t len);
/* Whether l limits anything. */
bool pool_limit_any(const struct pool_limit *l);
/* The tighter of a and b, in every group and the total. */
void pool_limit_min(struct pool_limit *ret, const struct pool_limit *a,
		    const struct pool_limit *b);
/* The vCPUs of group g that l leaves for use u_group when the whole
 * pool uses u_total (its group's limit and the total's, whichever is
 * tighter); INT64_MAX: no limit. */
int64_t pool_limit_room(const struct pool_limit *l, enum pool_group g,
			int64_t u_group, int64_t u_total);

struct pool_limits {
	struct pool_limit spot;       /* pool_spot_vcpus */
	struct pool_limit ondemand;   /* pool_ondemand_vcpus */
	int64_t uusd_per_hour;        /* pool_usd_per_hour; -1: none */
};
void pool_limits_none(struct pool_limits *l);
bool pool_limits_any(const struct pool_limits *l);

/* What the jobs hold against the limits. */
struct pool_use {
	int64_t spot[POOL_GROUPS], ondemand[POOL_GROUPS];
	int64_t spot_total, ondemand_total;
	int64_t uusd_per_hour;        /* the held instances' prices now */
};

/* Whether one more instance fits: vcpus of group g, spot or on demand,
 * at hour_uusd an hour.  When it does not, *why (may be NULL) names the
 * limit ("pool_spot_vcpus standard", "pool_usd_per_hour", ...). */
bool pool_fits(const struct pool_limits *l, const struct pool_use *u,
	       enum pool_group g, bool spot, int64_t vcpus,
	       int64_t hour_uusd, const char **why);
/* Add (sign 1) or take off (sign -1) one instance. */
void pool_use_add(struct pool_use *u, enum pool_group g, bool spot,
		  int64_t vcpus, int64_t hour_uusd, int sign);
/* Whether u is within l everywhere; *why names the first limit it is
 * past. */
bool pool_within(const struct pool_limits *l, const struct pool_use *u,
		 const char **why);

/* A quota error from EC2 (MaxSpotInstanceCountExceeded,
 * VcpuLimitExceeded) when the account held `held` vCPUs of group g: the
 * learned limit of that group becomes held, never above what it was (nor
 * the configured one).  Whether it changed. */
bool pool_learn(struct pool_limit *learned, enum pool_group g, int64_t held);

#endif
