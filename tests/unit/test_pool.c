/* test_pool.c -- the pool's limits: quota groups by family, the limit
 * syntax both ways, the room a limit leaves, whether an instance fits,
 * the accounting of use, and limits learned from quota errors. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "../../bidbrain/pool.h"

static struct pool_limit parsed(const char *text)
{
	struct pool_limit l;
	struct px_error e = {0};

	cr_assert_eq(pool_limit_parse("pool_spot_vcpus", text, &l, &e),
		     PX_OK, "'%s': %s", text, e.msg);
	return l;
}

/* Every group but those named is -1 (none). */
static void assert_groups(const struct pool_limit *l, const int64_t *want)
{
	for (int g = 0; g < POOL_GROUPS; g++)
		cr_assert_eq(l->group[g], want[g], "group %s: %lld, not %lld",
			     pool_group_name(g), (long long)l->group[g],
			     (long long)want[g]);
}

Test(pool, group_of_every_family)
{
	static const struct {
		const char *type;
		enum pool_group g;
	} t[] = {
		/* All Standard (A, C, D, H, I, M, R, T, Z) */
		{"c4.xlarge", POOL_G_STANDARD}, {"m5.large", POOL_G_STANDARD},
		{"t3.micro", POOL_G_STANDARD}, {"z1d.large", POOL_G_STANDARD},
		{"a1.large", POOL_G_STANDARD}, {"i3.large", POOL_G_STANDARD},
		{"d2.xlarge", POOL_G_STANDARD},
		{"h1.2xlarge", POOL_G_STANDARD},
		{"r5.large", POOL_G_STANDARD},
		{"c7gn.16xlarge", POOL_G_STANDARD},
		{"m7i-flex.large", POOL_G_STANDARD},
		/* letters before the generation: the first one's group */
		{"im4gn.large", POOL_G_STANDARD},
		{"is4gen.xlarge", POOL_G_STANDARD},
		{"f1.2xlarge", POOL_G_F},
		/* G and VT, and the cluster GPU cg1 */
		{"g4dn.xlarge", POOL_G_G}, {"g5.xlarge", POOL_G_G},
		{"vt1.3xlarge", POOL_G_G}, {"cg1.4xlarge", POOL_G_G},
		{"gr6.4xlarge", POOL_G_G},
		{"inf1.xlarge", POOL_G_INF}, {"inf2.xlarge", POOL_G_INF},
		{"p3.2xlarge", POOL_G_P}, {"p4d.24xlarge", POOL_G_P},
		/* X, and the high-memory U of either naming */
		{"x1e.xlarge", POOL_G_X}, {"u-6tb1.metal", POOL_G_X},
		{"u7i-12tb.224xlarge", POOL_G_X},
		{"dl1.24xlarge", POOL_G_DL}, {"trn1.2xlarge", POOL_G_TRN},
		/* families no group names */
		{"hpc6a.48xlarge", POOL_G_OTHER}, {"mac1.metal", POOL_G_OTHER},
		{"mac2-m2pro.metal", POOL_G_OTHER},
		{"", POOL_G_OTHER}, {"c", POOL_G_OTHER},
		{"q9.large", POOL_G_OTHER}, {"4xlarge", POOL_G_OTHER},
		{"C4.xlarge", POOL_G_OTHER}, {"in.large", POOL_G_OTHER},
	};

	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		cr_expect_eq(pool_group_of(t[i].type), t[i].g,
			     "'%s': %s, not %s", t[i].type,
			     pool_group_name(pool_group_of(t[i].type)),
			     pool_group_name(t[i].g));
	cr_assert_eq(pool_group_of(NULL), POOL_G_OTHER);
}

Test(pool, group_names)
{
	static const char *const want[POOL_GROUPS] = {
		"standard", "f", "g", "inf", "p", "x", "dl", "trn", "other",
	};

	for (int g = 0; g < POOL_GROUPS; g++)
		cr_assert_str_eq(pool_group_name(g), want[g]);
	cr_assert_str_eq(pool_group_name(POOL_GROUPS), "?");
	cr_assert_str_eq(pool_group_name((enum pool_group)-1), "?");
}

Test(pool, parse_total_groups_and_both)
{
	int64_t none[POOL_GROUPS], want[POOL_GROUPS];
	struct pool_limit l;

	for (int g = 0; g < POOL_GROUPS; g++)
		none[g] = -1;
	l = parsed("64");
	cr_assert_eq(l.total, 64);
	assert_groups(&l, none);
	cr_assert(pool_limit_any(&l));

	memcpy(want, none, sizeof want);
	want[POOL_G_STANDARD] = 64;
	want[POOL_G_G] = 16;
	want[POOL_G_P] = 0;
	l = parsed("standard=64,g=16,p=0");
	cr_assert_eq(l.total, -1);
	assert_groups(&l, want);
	cr_assert(pool_limit_any(&l), "p=0 is a limit");

	/* a total and groups in any order */
	memcpy(want, none, sizeof want);
	want[POOL_G_STANDARD] = 64;
	l = parsed("128,standard=64");
	cr_assert_eq(l.total, 128);
	assert_groups(&l, want);
	l = parsed("standard=64,128");
	cr_assert_eq(l.total, 128);
	assert_groups(&l, want);

	/* every group, at the bounds */
	l = parsed("0,standard=1000000000,f=1,g=2,inf=3,p=4,x=5,dl=6,trn=7,"
		   "other=8");
	cr_assert_eq(l.total, 0);
	cr_assert_eq(l.group[POOL_G_STANDARD], 1000000000);
	for (int g = POOL_G_F; g < POOL_GROUPS; g++)
		cr_assert_eq(l.group[g], g);
	l = parsed("0064");
	cr_assert_eq(l.total, 64);
}

Test(pool, parse_none)
{
	struct pool_limit l;
	struct px_error e = {0};
	const char *const nothing[] = {"none", "", NULL};

	for (size_t i = 0; i < sizeof nothing / sizeof nothing[0]; i++) {
		memset(&l, 0x5a, sizeof l);
		cr_assert_eq(pool_limit_parse("f", nothing[i], &l, &e), PX_OK);
		cr_assert_eq(l.total, -1);
		for (int g = 0; g < POOL_GROUPS; g++)
			cr_assert_eq(l.group[g], -1);
		cr_assert_not(pool_limit_any(&l));
	}
	pool_limit_none(&l);
	cr_assert_not(pool_limit_any(&l));
}

/* Each bad limit: refused naming the field and the bad part, and the
 * result left as it was. */
Test(pool, parse_bad)
{
	static const struct {
		const char *text, *says;
	} bad[] = {
		{"gpu=4", "lim: unknown quota group 'gpu' (standard, f, g, "
			  "inf, p, x, dl, trn, other)"},
		{"Standard=4", "lim: unknown quota group 'Standard'"},
		{"=4", "lim: unknown quota group ''"},
		{"g=1,g=2", "lim: group 'g' given twice"},
		{"standard=1,64,standard=2", "lim: group 'standard' given "
					     "twice"},
		{"64,128", "lim: two totals"},
		{"12x", "lim: '12x' is not a count of vCPUs (0 to 1000000000) "
			"nor GROUP=COUNT"},
		{"g=1x", "lim: '1x' is not a count of vCPUs (0 to "
			 "1000000000)"},
		{"-1", "lim: '-1' is not a count of vCPUs"},
		{"g=-1", "lim: '-1' is not a count of vCPUs"},
		{"+5", "lim: '+5' is not a count"},
		{"1000000001", "lim: '1000000001' is not a count"},
		{"g=99999999999", "lim: '99999999999' is not a count"},
		{"standard=", "lim: '' is not a count of vCPUs"},
		{"g=1=2", "lim: '1=2' is not a count"},
		{" 64", "lim: ' 64' is not a count"},
		{"1e3", "lim: '1e3' is not a count"},
		{"NONE", "lim: 'NONE' is not a count"},
		{",,", "lim: an empty element"},
		{",64", "lim: an empty element"},
		{"64,", "lim: an empty element"},
		{"64,,g=1", "lim: an empty element"},
		{"standard=64,", "lim: an empty element"},
		{",", "lim: an empty element"},
	};
	struct pool_limit l, was;
	struct px_error e;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&e, 0, sizeof e);
		memset(&l, 0x5a, sizeof l);
		was = l;
		cr_assert_eq(pool_limit_parse("lim", bad[i].text, &l, &e),
			     PX_EINVAL, "'%s' was taken", bad[i].text);
		cr_assert_eq(e.code, PX_EINVAL);
		cr_expect(strstr(e.msg, bad[i].says), "'%s': %s",
			  bad[i].text, e.msg);
		cr_assert(!memcmp(&l, &was, sizeof l), "'%s' wrote ret",
			  bad[i].text);
	}
}

Test(pool, format_round_trips)
{
	static const struct {
		const char *text, *canon;
	} t[] = {
		{"none", "none"},
		{"", "none"},
		{"64", "64"},
		{"0", "0"},
		{"0064", "64"},
		{"standard=64,g=16,p=0", "standard=64,g=16,p=0"},
		{"p=0,g=16,standard=64", "standard=64,g=16,p=0"},
		{"standard=64,128", "128,standard=64"},
		{"other=1,trn=2,dl=3,x=4,p=5,inf=6,g=7,f=8,standard=9,10",
		 "10,standard=9,f=8,g=7,inf=6,p=5,x=4,dl=3,trn=2,other=1"},
		{"1000000000,standard=1000000000,f=1000000000,g=1000000000,"
		 "inf=1000000000,p=1000000000,x=1000000000,dl=1000000000,"
		 "trn=1000000000,other=1000000000",
		 "1000000000,standard=1000000000,f=1000000000,g=1000000000,"
		 "inf=1000000000,p=1000000000,x=1000000000,dl=1000000000,"
		 "trn=1000000000,other=1000000000"},
	};
	char buf[256];
	struct pool_limit a, b;

	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		a = parsed(t[i].text);
		pool_limit_format(&a, buf, sizeof buf);
		cr_assert_str_eq(buf, t[i].canon, "'%s'", t[i].text);
		b = parsed(buf);
		cr_assert(!memcmp(&a, &b, sizeof a), "'%s' back as '%s'",
			  t[i].text, buf);
	}
	/* a short buffer: cut, still a string */
	a = parsed("128,standard=64,g=16");
	pool_limit_format(&a, buf, 8);
	cr_assert_str_eq(buf, "128,sta");
	pool_limit_format(&a, buf, 3);
	cr_assert_str_eq(buf, "12");
	buf[0] = 'x';
	pool_limit_format(&a, buf, 0);
	cr_assert_eq(buf[0], 'x', "len 0 writes nothing");
}

Test(pool, limit_min_is_the_tighter_everywhere)
{
	struct pool_limit a = parsed("100,standard=64,g=16");
	struct pool_limit b = parsed("standard=32,g=20,p=0");
	struct pool_limit none = parsed("none"), m;
	char buf[128];

	pool_limit_min(&m, &a, &b);
	pool_limit_format(&m, buf, sizeof buf);
	cr_assert_str_eq(buf, "100,standard=32,g=16,p=0");
	pool_limit_min(&m, &b, &a);
	pool_limit_format(&m, buf, sizeof buf);
	cr_assert_str_eq(buf, "100,standard=32,g=16,p=0", "symmetric");
	/* none limits nothing: the other stands */
	pool_limit_min(&m, &a, &none);
	cr_assert(!memcmp(&m, &a, sizeof m));
	pool_limit_min(&m, &none, &none);
	cr_assert_not(pool_limit_any(&m));
	/* in place */
	pool_limit_min(&a, &a, &b);
	pool_limit_format(&a, buf, sizeof buf);
	cr_assert_str_eq(buf, "100,standard=32,g=16,p=0");
}

Test(pool, room_is_the_tighter_of_group_and_total)
{
	struct pool_limit both = parsed("100,standard=64");
	struct pool_limit total = parsed("100");
	struct pool_limit group = parsed("g=16");
	struct pool_limit none = parsed("none");

	/* the group's 64 - 10 against the total's 100 - 20 */
	cr_assert_eq(pool_limit_room(&both, POOL_G_STANDARD, 10, 20), 54);
	/* the total's 100 - 90 is tighter than the group's 64 - 10 */
	cr_assert_eq(pool_limit_room(&both, POOL_G_STANDARD, 10, 90), 10);
	/* a group it does not name: the total alone */
	cr_assert_eq(pool_limit_room(&both, POOL_G_G, 0, 30), 70);
	cr_assert_eq(pool_limit_room(&total, POOL_G_P, 5, 60), 40);
	cr_assert_eq(pool_limit_room(&group, POOL_G_G, 4, 1000), 12);
	cr_assert_eq(pool_limit_room(&group, POOL_G_STANDARD, 4, 1000),
		     INT64_MAX);
	cr_assert_eq(pool_limit_room(&none, POOL_G_STANDARD, 1000, 1000),
		     INT64_MAX);
	/* full, and past the limit (learned lower than held): 0 */
	cr_assert_eq(pool_limit_room(&both, POOL_G_STANDARD, 64, 64), 0);
	cr_assert_eq(pool_limit_room(&both, POOL_G_STANDARD, 80, 80), 0);
	cr_assert_eq(pool_limit_room(&both, POOL_G_G, 0, 150), 0);
	cr_assert_eq(pool_limit_room(&group, POOL_G_G, 17, 17), 0);
	cr_assert_eq(pool_limit_room(&(struct pool_limit){0}, POOL_G_G, 1,
				     1), 0, "a limit of 0 leaves none");
}

static void limits(struct pool_limits *l, const char *spot,
		   const char *ondemand, int64_t uusd)
{
	pool_limits_none(l);
	l->spot = parsed(spot);
	l->ondemand = parsed(ondemand);
	l->uusd_per_hour = uusd;
}

Test(pool, limits_none_and_any)
{
	struct pool_limits l;

	pool_limits_none(&l);
	cr_assert_not(pool_limits_any(&l));
	cr_assert_eq(l.uusd_per_hour, -1);
	l.uusd_per_hour = 0;
	cr_assert(pool_limits_any(&l), "a budget of 0 is a limit");
	limits(&l, "none", "g=0", -1);
	cr_assert(pool_limits_any(&l));
	limits(&l, "8", "none", -1);
	cr_assert(pool_limits_any(&l));
}

Test(pool, fits_spot_ondemand_and_budget)
{
	struct pool_limits l;
	struct pool_use u = {0};
	const char *why = "unset";

	/* nothing limited: anything fits */
	pool_limits_none(&l);
	cr_assert(pool_fits(&l, &u, POOL_G_P, true, 1000000, 1000000000,
			    &why));
	cr_assert_null(why);

	/* spot: standard=16 and 24 in all; on demand: 8 in all; $2/h */
	limits(&l, "24,standard=16", "8", 2000000);
	pool_use_add(&u, POOL_G_STANDARD, true, 12, 500000, 1);
	cr_assert(pool_fits(&l, &u, POOL_G_STANDARD, true, 4, 100000, &why));
	cr_assert_null(why);
	/* 12 + 8 > 16: the group's limit names the group */
	cr_assert_not(pool_fits(&l, &u, POOL_G_STANDARD, true, 8, 0, &why));
	cr_assert_str_eq(why, "pool_spot_vcpus standard");
	/* another group: the total's 24 - 12 */
	cr_assert(pool_fits(&l, &u, POOL_G_G, true, 12, 0, &why));
	cr_assert_not(pool_fits(&l, &u, POOL_G_G, true, 13, 0, &why));
	cr_assert_str_eq(why, "pool_spot_vcpus");
	/* on demand has limits of its own; spot's use is not counted */
	cr_assert(pool_fits(&l, &u, POOL_G_STANDARD, false, 8, 0, &why));
	cr_assert_not(pool_fits(&l, &u, POOL_G_STANDARD, false, 9, 0,
				&why));
	cr_assert_str_eq(why, "pool_ondemand_vcpus");
	/* the budget: $0.50 held, $1.50 more fits exactly, a micro-USD
	 * more does not */
	cr_assert(pool_fits(&l, &u, POOL_G_G, true, 1, 1500000, &why));
	cr_assert_not(pool_fits(&l, &u, POOL_G_G, true, 1, 1500001, &why));
	cr_assert_str_eq(why, "pool_usd_per_hour");
	cr_assert_not(pool_fits(&l, &u, POOL_G_G, false, 1, 1500001, &why));
	cr_assert_str_eq(why, "pool_usd_per_hour");
	/* why may be NULL */
	cr_assert_not(pool_fits(&l, &u, POOL_G_STANDARD, true, 5, 0, NULL));
	/* the group's limit is named before the total's and the budget's */
	cr_assert_not(pool_fits(&l, &u, POOL_G_STANDARD, true, 20, 9000000,
				&why));
	cr_assert_str_eq(why, "pool_spot_vcpus standard");

	/* per-group on demand, every group named as such */
	limits(&l, "p=0", "inf=4,trn=0", -1);
	cr_assert_not(pool_fits(&l, &u, POOL_G_P, true, 1, 0, &why));
	cr_assert_str_eq(why, "pool_spot_vcpus p");
	cr_assert(pool_fits(&l, &u, POOL_G_P, false, 1, 0, &why));
	cr_assert(pool_fits(&l, &u, POOL_G_INF, false, 4, 0, &why));
	cr_assert_not(pool_fits(&l, &u, POOL_G_INF, false, 5, 0, &why));
	cr_assert_str_eq(why, "pool_ondemand_vcpus inf");
	cr_assert_not(pool_fits(&l, &u, POOL_G_TRN, false, 1, 0, &why));
	cr_assert_str_eq(why, "pool_ondemand_vcpus trn");
	cr_assert(pool_fits(&l, &u, POOL_G_TRN, false, 0, 0, &why),
		  "nothing more fits in a full group");
	/* a budget of 0 admits only what is free */
	limits(&l, "none", "none", 0);
	pool_use_add(&u, POOL_G_STANDARD, true, 12, 500000, -1);
	cr_assert(pool_fits(&l, &u, POOL_G_G, true, 4, 0, &why));
	cr_assert_not(pool_fits(&l, &u, POOL_G_G, true, 4, 1, &why));
	cr_assert_str_eq(why, "pool_usd_per_hour");
}

Test(pool, use_add_and_take_off)
{
	struct pool_use u = {0}, zero = {0};

	pool_use_add(&u, POOL_G_STANDARD, true, 4, 100000, 1);
	pool_use_add(&u, POOL_G_STANDARD, true, 8, 200000, 1);
	pool_use_add(&u, POOL_G_G, true, 16, 900000, 1);
	pool_use_add(&u, POOL_G_STANDARD, false, 2, 96000, 1);
	cr_assert_eq(u.spot[POOL_G_STANDARD], 12);
	cr_assert_eq(u.spot[POOL_G_G], 16);
	cr_assert_eq(u.spot_total, 28);
	cr_assert_eq(u.ondemand[POOL_G_STANDARD], 2);
	cr_assert_eq(u.ondemand[POOL_G_G], 0);
	cr_assert_eq(u.ondemand_total, 2);
	cr_assert_eq(u.uusd_per_hour, 1296000);
	pool_use_add(&u, POOL_G_STANDARD, true, 4, 100000, -1);
	cr_assert_eq(u.spot[POOL_G_STANDARD], 8);
	cr_assert_eq(u.spot_total, 24);
	cr_assert_eq(u.uusd_per_hour, 1196000);
	pool_use_add(&u, POOL_G_STANDARD, true, 8, 200000, -1);
	pool_use_add(&u, POOL_G_G, true, 16, 900000, -1);
	pool_use_add(&u, POOL_G_STANDARD, false, 2, 96000, -1);
	cr_assert(!memcmp(&u, &zero, sizeof u), "all taken off: nothing");
}

Test(pool, within_names_the_first_limit_past)
{
	struct pool_limits l;
	struct pool_use u = {0};
	const char *why = "unset";

	limits(&l, "24,standard=16", "g=8", 1000000);
	cr_assert(pool_within(&l, &u, &why));
	cr_assert_null(why);
	pool_use_add(&u, POOL_G_STANDARD, true, 16, 0, 1);
	pool_use_add(&u, POOL_G_G, false, 8, 1000000, 1);
	cr_assert(pool_within(&l, &u, &why), "at every limit is within");
	cr_assert_null(why);
	pool_use_add(&u, POOL_G_STANDARD, true, 1, 0, 1);
	cr_assert_not(pool_within(&l, &u, &why));
	cr_assert_str_eq(why, "pool_spot_vcpus");
	pool_use_add(&u, POOL_G_STANDARD, true, 1, 0, -1);
	pool_use_add(&u, POOL_G_P, true, 9, 0, 1);
	cr_assert_not(pool_within(&l, &u, &why), "the total's 24");
	cr_assert_str_eq(why, "pool_spot_vcpus");
	pool_use_add(&u, POOL_G_P, true, 9, 0, -1);
	pool_use_add(&u, POOL_G_G, false, 1, 0, 1);
	cr_assert_not(pool_within(&l, &u, &why));
	cr_assert_str_eq(why, "pool_ondemand_vcpus");
	cr_assert_not(pool_within(&l, &u, NULL));
	pool_use_add(&u, POOL_G_G, false, 1, 0, -1);
	/* on demand in another group is not limited by g=8 */
	pool_use_add(&u, POOL_G_X, false, 100, 0, 1);
	cr_assert(pool_within(&l, &u, &why));
	/* a price rise past the budget */
	u.uusd_per_hour += 1;
	cr_assert_not(pool_within(&l, &u, &why));
	cr_assert_str_eq(why, "pool_usd_per_hour");
	/* spot is named before on demand and the budget */
	pool_use_add(&u, POOL_G_STANDARD, true, 100, 0, 1);
	pool_use_add(&u, POOL_G_G, false, 100, 0, 1);
	cr_assert_not(pool_within(&l, &u, &why));
	cr_assert_str_eq(why, "pool_spot_vcpus");
	/* nothing limited: anything is within */
	pool_limits_none(&l);
	cr_assert(pool_within(&l, &u, &why));
	cr_assert_null(why);
}

Test(pool, learn_lowers_never_raises)
{
	struct pool_limit l = parsed("none");
	char buf[128];

	/* from none: what was held */
	cr_assert(pool_learn(&l, POOL_G_STANDARD, 64));
	cr_assert_eq(l.group[POOL_G_STANDARD], 64);
	/* lower */
	cr_assert(pool_learn(&l, POOL_G_STANDARD, 48));
	cr_assert_eq(l.group[POOL_G_STANDARD], 48);
	/* never higher, nor the same again */
	cr_assert_not(pool_learn(&l, POOL_G_STANDARD, 96));
	cr_assert_eq(l.group[POOL_G_STANDARD], 48);
	cr_assert_not(pool_learn(&l, POOL_G_STANDARD, 48));
	/* a negative count is 0 */
	cr_assert(pool_learn(&l, POOL_G_G, -5));
	cr_assert_eq(l.group[POOL_G_G], 0);
	cr_assert_not(pool_learn(&l, POOL_G_G, 0));
	/* only that group; the total stays as it was */
	pool_limit_format(&l, buf, sizeof buf);
	cr_assert_str_eq(buf, "standard=48,g=0");
	l = parsed("100,p=32");
	cr_assert(pool_learn(&l, POOL_G_P, 16));
	cr_assert_not(pool_learn(&l, POOL_G_P, 40));
	pool_limit_format(&l, buf, sizeof buf);
	cr_assert_str_eq(buf, "100,p=16");
}

/* What a learned limit is for: held against the configured one, the
 * tighter stands; a configured one is never raised by learning. */
Test(pool, learned_with_configured)
{
	struct pool_limit cfg = parsed("standard=32"), learned = parsed("");
	struct pool_limit eff;

	cr_assert(pool_learn(&learned, POOL_G_STANDARD, 40));
	pool_limit_min(&eff, &cfg, &learned);
	cr_assert_eq(eff.group[POOL_G_STANDARD], 32);
	cr_assert(pool_learn(&learned, POOL_G_STANDARD, 20));
	pool_limit_min(&eff, &cfg, &learned);
	cr_assert_eq(eff.group[POOL_G_STANDARD], 20);
	cr_assert_eq(pool_limit_room(&eff, POOL_G_STANDARD, 20, 20), 0);
}
