/* pool.c -- the limits all jobs share, and their use (see pool.h). */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"

static const char *const group_names[POOL_GROUPS] = {
	[POOL_G_STANDARD] = "standard", [POOL_G_F] = "f", [POOL_G_G] = "g",
	[POOL_G_INF] = "inf", [POOL_G_P] = "p", [POOL_G_X] = "x",
	[POOL_G_DL] = "dl", [POOL_G_TRN] = "trn", [POOL_G_OTHER] = "other",
};

const char *pool_group_name(enum pool_group g)
{
	return (unsigned)g < POOL_GROUPS ? group_names[g] : "?";
}

/* Families whose letters are more than the group's one, longest first
 * where one is the other's prefix. */
static const struct {
	const char *prefix;
	enum pool_group g;
} families[] = {
	{"inf", POOL_G_INF}, {"trn", POOL_G_TRN}, {"dl", POOL_G_DL},
	{"vt", POOL_G_G}, {"cg", POOL_G_G}, {"u-", POOL_G_X},
	{"hpc", POOL_G_OTHER}, {"mac", POOL_G_OTHER},
};

enum pool_group pool_group_of(const char *type)
{
	size_t n;

	if (!type || !*type)
		return POOL_G_OTHER;
	for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
		n = strlen(families[i].prefix);
		if (strncmp(type, families[i].prefix, n) == 0 &&
		    (families[i].prefix[n - 1] == '-' ||
		     isdigit((unsigned char)type[n])))
			return families[i].g;
	}
	/* the family's letters, then the generation's digit; the group is
	 * the first letter's (im4gn and is4gen are I's, gr6 is G's, u7i-
	 * is U's as u- is) */
	n = strspn(type, "abcdefghijklmnopqrstuvwxyz");
	if (!n || !isdigit((unsigned char)type[n]))
		return POOL_G_OTHER;
	switch (type[0]) {
	case 'a': case 'c': case 'd': case 'h': case 'i': case 'm':
	case 'r': case 't': case 'z':
		return POOL_G_STANDARD;
	case 'f':
		return POOL_G_F;
	case 'g':
		return POOL_G_G;
	case 'p':
		return POOL_G_P;
	case 'x': case 'u':
		return POOL_G_X;
	default:
		return POOL_G_OTHER;
	}
}

void pool_limit_none(struct pool_limit *l)
{
	l->total = -1;
	for (int g = 0; g < POOL_GROUPS; g++)
		l->group[g] = -1;
}

bool pool_limit_any(const struct pool_limit *l)
{
	if (l->total >= 0)
		return true;
	for (int g = 0; g < POOL_GROUPS; g++)
		if (l->group[g] >= 0)
			return true;
	return false;
}

/* A count of vCPUs: digits only, at most 10^9. */
static bool parse_count(const char *s, size_t n, int64_t *ret)
{
	int64_t v = 0;

	if (n == 0 || n > 10)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		v = v * 10 + (s[i] - '0');
	}
	if (v > 1000000000)
		return false;
	*ret = v;
	return true;
}

enum px_err pool_limit_parse(const char *field, const char *text,
			     struct pool_limit *ret, struct px_error *err)
{
	struct pool_limit l;
	const char *p = text ? text : "";

	pool_limit_none(&l);
	if (!*p || strcmp(p, "none") == 0) {
		*ret = l;
		return PX_OK;
	}
	for (;;) {
		size_t n = strcspn(p, ","), k = strcspn(p, "=");
		int64_t v;

		/* else "64," would be refused as two totals */
		if (n == 0)
			return px_errorf(err, PX_EINVAL, "%s: an empty element "
					 "(a comma at an end, or two in a "
					 "row)", field);
		if (k < n) {
			int g = 0;

			while (g < POOL_GROUPS &&
			       (strlen(group_names[g]) != k ||
				strncmp(p, group_names[g], k) != 0))
				g++;
			if (g == POOL_GROUPS)
				return px_errorf(err, PX_EINVAL, "%s: unknown "
						 "quota group '%.*s' (standard, "
						 "f, g, inf, p, x, dl, trn, "
						 "other)", field, (int)k, p);
			if (l.group[g] >= 0)
				return px_errorf(err, PX_EINVAL, "%s: group "
						 "'%s' given twice", field,
						 group_names[g]);
			if (!parse_count(p + k + 1, n - k - 1, &v))
				return px_errorf(err, PX_EINVAL, "%s: '%.*s' "
						 "is not a count of vCPUs "
						 "(0 to 1000000000)", field,
						 (int)(n - k - 1), p + k + 1);
			l.group[g] = v;
		} else {
			if (l.total >= 0)
				return px_errorf(err, PX_EINVAL, "%s: two "
						 "totals", field);
			if (!parse_count(p, n, &v))
				return px_errorf(err, PX_EINVAL, "%s: '%.*s' "
						 "is not a count of vCPUs "
						 "(0 to 1000000000) nor "
						 "GROUP=COUNT", field, (int)n,
						 p);
			l.total = v;
		}
		if (!p[n])
			break;
		p += n + 1;
	}
	*ret = l;
	return PX_OK;
}

void pool_limit_format(const struct pool_limit *l, char *buf, size_t len)
{
	size_t o = 0;

	if (!len)
		return;
	buf[0] = 0;
	if (!pool_limit_any(l)) {
		snprintf(buf, len, "none");
		return;
	}
	if (l->total >= 0)
		o += (size_t)snprintf(buf, len, "%" PRId64, l->total);
	for (int g = 0; g < POOL_GROUPS && o < len; g++)
		if (l->group[g] >= 0)
			o += (size_t)snprintf(buf + o, len - o, "%s%s=%" PRId64,
					      o ? "," : "", group_names[g],
					      l->group[g]);
}

static int64_t tighter(int64_t a, int64_t b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

void pool_limit_min(struct pool_limit *ret, const struct pool_limit *a,
		    const struct pool_limit *b)
{
	ret->total = tighter(a->total, b->total);
	for (int g = 0; g < POOL_GROUPS; g++)
		ret->group[g] = tighter(a->group[g], b->group[g]);
}

int64_t pool_limit_room(const struct pool_limit *l, enum pool_group g,
			int64_t u_group, int64_t u_total)
{
	int64_t room = INT64_MAX;

	if (l->group[g] >= 0)
		room = l->group[g] - u_group;
	if (l->total >= 0 && l->total - u_total < room)
		room = l->total - u_total;
	return room < 0 ? 0 : room;
}

void pool_limits_none(struct pool_limits *l)
{
	pool_limit_none(&l->spot);
	pool_limit_none(&l->ondemand);
	l->uusd_per_hour = -1;
}

bool pool_limits_any(const struct pool_limits *l)
{
	return pool_limit_any(&l->spot) || pool_limit_any(&l->ondemand) ||
	       l->uusd_per_hour >= 0;
}

/* What pool_fits names when a group's limit is the one in the way. */
#define WHY(key) {                                                      \
	[POOL_G_STANDARD] = key " standard", [POOL_G_F] = key " f",     \
	[POOL_G_G] = key " g", [POOL_G_INF] = key " inf",               \
	[POOL_G_P] = key " p", [POOL_G_X] = key " x",                   \
	[POOL_G_DL] = key " dl", [POOL_G_TRN] = key " trn",             \
	[POOL_G_OTHER] = key " other",                                  \
}
static const char *const spot_why[POOL_GROUPS] = WHY("pool_spot_vcpus");
static const char *const ondemand_why[POOL_GROUPS] =
	WHY("pool_ondemand_vcpus");
#undef WHY

bool pool_fits(const struct pool_limits *l, const struct pool_use *u,
	       enum pool_group g, bool spot, int64_t vcpus,
	       int64_t hour_uusd, const char **why)
{
	const struct pool_limit *lim = spot ? &l->spot : &l->ondemand;
	int64_t used = spot ? u->spot[g] : u->ondemand[g];
	int64_t total = spot ? u->spot_total : u->ondemand_total;
	const char *w = NULL;

	if (lim->group[g] >= 0 && used + vcpus > lim->group[g])
		w = spot ? spot_why[g] : ondemand_why[g];
	else if (lim->total >= 0 && total + vcpus > lim->total)
		w = spot ? "pool_spot_vcpus" : "pool_ondemand_vcpus";
	else if (l->uusd_per_hour >= 0 &&
		 u->uusd_per_hour + hour_uusd > l->uusd_per_hour)
		w = "pool_usd_per_hour";
	if (why)
		*why = w;
	return !w;
}

void pool_use_add(struct pool_use *u, enum pool_group g, bool spot,
		  int64_t vcpus, int64_t hour_uusd, int sign)
{
	if (spot) {
		u->spot[g] += sign * vcpus;
		u->spot_total += sign * vcpus;
	} else {
		u->ondemand[g] += sign * vcpus;
		u->ondemand_total += sign * vcpus;
	}
	u->uusd_per_hour += sign * hour_uusd;
}

static bool limit_within(const struct pool_limit *l, const int64_t *used,
			 int64_t total)
{
	if (l->total >= 0 && total > l->total)
		return false;
	for (int g = 0; g < POOL_GROUPS; g++)
		if (l->group[g] >= 0 && used[g] > l->group[g])
			return false;
	return true;
}

bool pool_within(const struct pool_limits *l, const struct pool_use *u,
		 const char **why)
{
	const char *w = NULL;

	if (!limit_within(&l->spot, u->spot, u->spot_total))
		w = "pool_spot_vcpus";
	else if (!limit_within(&l->ondemand, u->ondemand, u->ondemand_total))
		w = "pool_ondemand_vcpus";
	else if (l->uusd_per_hour >= 0 && u->uusd_per_hour > l->uusd_per_hour)
		w = "pool_usd_per_hour";
	if (why)
		*why = w;
	return !w;
}

bool pool_learn(struct pool_limit *learned, enum pool_group g, int64_t held)
{
	if (held < 0)
		held = 0;
	if (learned->group[g] >= 0 && learned->group[g] <= held)
		return false;
	learned->group[g] = held;
	return true;
}
