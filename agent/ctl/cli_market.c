/* cli_market.c -- `proteusctl market`: import spot-price traces and
 * on-demand price tables into the store, and summarize markets.
 *
 *   proteusctl market import [--db PATH] [--region R] FILE...
 *   proteusctl market import [--db PATH] --ondemand FILE...
 *   proteusctl market [show] [--db PATH] [--region R] [--type T] [--zone Z]
 *                     [--product P] [--at TIME] [--json]
 *
 * An import is one transaction over all the files named: a bad record in
 * any of them leaves the store as it was.  Records already stored (same
 * market and time) are not stored twice.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cloudapi/ondemand.h"
#include "../../cloudapi/trace.h"
#include "../../common/log.h"
#include "../../db/store.h"
#include "cli.h"

static const char market_usage[] =
	"usage: proteusctl market import [--db PATH] [--region R] [--json]\n"
	"                         [--ondemand-prices FILE]... [FILE...]\n"
	"       proteusctl market fetch --types T1,T2 [--region R] [--zones Z,..]\n"
	"                         [--days N] [--db PATH] [--json]\n"
	"                         (see market fetch --help)\n"
	"       proteusctl market [show] [--db PATH] [--region R] [--types T,..]\n"
	"                         [--zones Z,..] [--product P] [--at TIME] [--json]\n"
	"\n"
	"import: read spot-price histories (the JSON of `aws ec2\n"
	"  describe-spot-price-history`, plain or gzip, any order) and, with\n"
	"  --ondemand-prices, on-demand price tables ({region: {type:\n"
	"  usd_per_hour}}) into the database, all files in one transaction.\n"
	"  --region sets the region instead of deriving it from each zone.\n"
	"  --ondemand (old spelling) makes every FILE an on-demand table.\n"
	"fetch: read the price history from EC2 (DescribeSpotPriceHistory) with\n"
	"  the AWS credential chain, and store it like an import.\n"
	"show (the default): per market, the price in force at TIME (default:\n"
	"  now; ISO-8601 UTC or @unix-seconds), the time-weighted min, median\n"
	"  and max over the stored range, and the share of that time the price\n"
	"  was above the on-demand price (when known).  --types and --zones\n"
	"  take comma-separated lists (--type, --zone: old spellings).\n"
	"\n"
	"  --db PATH   database (default: $PROTEUS_DB, else the running\n"
	"              proteusd's, else as proteusd's; see proteusctl(1))\n"
	"  --json      import: {\"files\": [...]}; show: an array, an object\n"
	"              per market\n"
	"\n"
	"exit: 0 ok, 1 failure, 2 usage, 3 bad input data, 4 no market matched\n";

/* ---- import ---- */

struct import_ctx {
	struct store *st;
	const char *region;     /* --region, or NULL to derive from zone */
	char last_zone[TRACE_FIELD_MAX];
	char last_region[TRACE_FIELD_MAX];
	int64_t inserted;
};

static enum px_err import_record(const struct trace_record *r, void *arg,
				 struct px_error *err)
{
	struct import_ctx *c = arg;
	const char *region = c->region;
	bool ins = false;
	int64_t mid;
	enum px_err e;

	if (!region) {
		if (strcmp(r->zone, c->last_zone)) {
			e = trace_zone_region(r->zone, c->last_region,
					      sizeof(c->last_region));
			if (e != PX_OK)
				return px_errorf(err, e,
						 "record %llu: field "
						 "'AvailabilityZone': no region "
						 "in '%s' (use --region)",
						 (unsigned long long)r->index,
						 r->zone);
			snprintf(c->last_zone, sizeof(c->last_zone), "%s",
				 r->zone);
		}
		region = c->last_region;
	}
	e = store_market_get_or_add(c->st, region, r->zone, r->type,
				    r->product, &mid, err);
	if (e == PX_OK)
		e = store_price_add(c->st, mid, r->t_s, r->price_uusd, &ins,
				    err);
	if (e == PX_EEXIST) /* another price for this market and second */
		px_error_prefix(err, "field 'SpotPrice': market %s %s %s %s: ",
				region, r->zone, r->type, r->product);
	if (e != PX_OK)
		return e;
	c->inserted += ins;
	return PX_OK;
}

static enum px_err import_trace(struct store *st, const char *path,
				const char *region, json_t *out,
				struct px_error *err)
{
	struct import_ctx c = {.st = st, .region = region};
	struct trace_stats ts;
	struct store_import imp;
	char sha[2 * TRACE_SHA256_LEN + 1], a[32], b[32];
	uint64_t t0 = px_now_mono_us();
	double secs;
	enum px_err e;

	/* the reader digests the bytes as it reads them, on its thread */
	e = trace_read_file_pipelined(path, TRACE_SHA256, import_record, &c,
				      &ts, err);
	if (e != PX_OK)
		return e;
	for (size_t i = 0; i < TRACE_SHA256_LEN; i++)
		snprintf(sha + 2 * i, 3, "%02x", ts.sha256[i]);
	imp = (struct store_import){
		.path = path, .sha256 = sha, .records = (int64_t)ts.records,
		.inserted = c.inserted, .first_s = ts.first_s,
		.last_s = ts.last_s, .at_us = px_now_wall_us(),
	};
	e = store_import_add(st, &imp, err);
	if (e != PX_OK)
		return e;
	secs = (double)(px_now_mono_us() - t0) / 1e6;
	if (out) {
		json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:s, s:f}", "path",
				      path, "kind", "spot", "records",
				      (json_int_t)ts.records, "new",
				      (json_int_t)c.inserted, "sha256", sha,
				      "seconds", secs);

		if (o && ts.records) {
			json_object_set_new(o, "first", json_string(
				px_format_time(ts.first_s, a, sizeof(a))));
			json_object_set_new(o, "last", json_string(
				px_format_time(ts.last_s, b, sizeof(b))));
		}
		if (!o || json_array_append_new(out, o))
			return px_errorf(err, PX_ENOMEM, "out of memory");
	} else if (ts.records)
		printf("%s: %llu records, %lld new, %s .. %s (%.2f s, %.0f "
		       "records/s)\n", path, (unsigned long long)ts.records,
		       (long long)c.inserted,
		       px_format_time(ts.first_s, a, sizeof(a)),
		       px_format_time(ts.last_s, b, sizeof(b)), secs,
		       secs > 0 ? (double)ts.records / secs : 0.0);
	else
		printf("%s: no records\n", path);
	return PX_OK;
}

/* Store table t (from path); tabs[0..nprev) are the tables named before
 * it in the same command.  A different price for a (region, type) that
 * one of them has is refused, naming both files; the same price is fine.
 * A price stored by an earlier command is replaced (one era per (region,
 * type): loading a table chooses it), and the replacements are counted
 * out loud. */
static enum px_err import_ondemand(struct store *st, const char *path,
				   const struct ondemand_table *t,
				   const struct ondemand_table *tabs,
				   const char *const *paths, size_t nprev,
				   json_t *out, struct px_error *err)
{
	size_t replaced = 0;
	enum px_err e = PX_OK;

	for (size_t i = 0; i < t->n && e == PX_OK; i++) {
		const struct ondemand_entry *x = &t->v[i];
		int64_t old;
		char a[32], b[32];

		for (size_t k = 0; k < nprev; k++) {
			const struct ondemand_entry *y = ondemand_table_find(
				&tabs[k], x->region, x->type);

			if (y && y->uusd_per_hour != x->uusd_per_hour)
				return px_errorf(
					err, PX_EEXIST,
					"%s: %s.%s: price %s conflicts with "
					"%s in %s (named before it)",
					path, x->region, x->type,
					px_format_usd(x->uusd_per_hour, a,
						      sizeof(a)),
					px_format_usd(y->uusd_per_hour, b,
						      sizeof(b)),
					paths[k]);
		}
		e = store_ondemand_get(st, x->region, x->type, &old, err);
		if (e == PX_OK && old != x->uusd_per_hour)
			replaced++;
		if (e == PX_OK || e == PX_ENOENT)
			e = store_ondemand_set(st, x->region, x->type,
					       x->uusd_per_hour, path, err);
	}
	if (e != PX_OK)
		return e;
	if (out) {
		if (json_array_append_new(out, json_pack(
			    "{s:s, s:s, s:I, s:I}", "path", path, "kind",
			    "ondemand", "prices", (json_int_t)t->n, "replaced",
			    (json_int_t)replaced)))
			return px_errorf(err, PX_ENOMEM, "out of memory");
		return PX_OK;
	}
	printf("%s: %zu on-demand prices", path, t->n);
	if (replaced)
		printf(", %zu replacing a different price stored before",
		       replaced);
	putchar('\n');
	return PX_OK;
}

/* The on-demand tables paths[0..n), each checked against those before it
 * (one rule: the same price twice is fine, a different one is refused). */
static enum px_err import_ondemand_all(struct store *st, int n,
				       const char *const *paths, json_t *out,
				       struct px_error *err)
{
	struct ondemand_table *tabs;
	enum px_err e = PX_OK;
	int i;

	if (n == 0)
		return PX_OK;
	tabs = px_calloc((size_t)n, sizeof(*tabs));
	if (!tabs)
		return px_errorf(err, PX_ENOMEM, "out of memory");
	for (i = 0; i < n && e == PX_OK; i++) {
		e = ondemand_table_load(paths[i], &tabs[i], err);
		if (e == PX_OK)
			e = import_ondemand(st, paths[i], &tabs[i], tabs,
					    paths, (size_t)i, out, err);
	}
	for (int k = 0; k < n; k++)
		ondemand_table_release(&tabs[k]);
	free(tabs);
	return e;
}

/* Open the store; to read only (show), never create, configure or
 * migrate it: a missing or empty file is "nothing stored" (exit 4), and
 * a user who may only read the file can still read it. */
static int open_store(const char *db, bool readonly, struct store **st)
{
	struct px_error err = {0};
	char *path = db ? strdup(db) : cli_default_db();
	enum px_err e;

	if (!path)
		return CLI_EXIT_FAIL;
	e = readonly ? store_open_readonly(path, st, &err) :
		       store_open(path, st, &err);
	free(path);
	if (e == PX_ENOENT && readonly) {
		log_err("%s (import a trace first: proteusctl market import)",
			err.msg);
		return CLI_EXIT_NOTFOUND;
	}
	if (e != PX_OK) {
		log_err("%s", err.msg);
		return CLI_EXIT_FAIL;
	}
	return CLI_EXIT_OK;
}

static int market_import(int argc, char **argv)
{
	static const struct option opts[] = {
		{"db", required_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},
		{"json", no_argument, NULL, 'j'},
		{"ondemand", no_argument, NULL, 'o'},
		{"ondemand-prices", required_argument, NULL, 'O'},
		{"region", required_argument, NULL, 'r'},
		{0},
	};
	const char *db = NULL, *region = NULL;
	bool ondemand = false, json = cli_g.json;
	struct px_error err = {0};
	struct store *st = NULL;
	enum px_err e = PX_OK;
	const char **tables = NULL;
	json_t *out = NULL;
	int c, rc, ntables = 0;

	/* at most one --ondemand-prices per argument */
	tables = calloc((size_t)argc, sizeof(*tables));
	if (!tables) {
		log_err("out of memory");
		return CLI_EXIT_FAIL;
	}
	optind = 1;
	while ((c = getopt_long(argc, argv, ":d:hor:", opts, NULL)) != -1) {
		switch (c) {
		case 'd': db = optarg; break;
		case 'h':
			fputs(market_usage, stdout);
			free(tables);
			return CLI_EXIT_OK;
		case 'j': json = true; break;
		case 'o': ondemand = true; break;
		case 'O': tables[ntables++] = optarg; break;
		case 'r': region = optarg; break;
		default:
			free(tables);
			return cli_bad_option("market import", argv, c);
		}
	}
	if (optind >= argc && ntables == 0) {
		free(tables);
		return cli_usage("market import", "no file named");
	}
	if (json && !(out = json_array())) {
		free(tables);
		log_err("out of memory");
		return CLI_EXIT_FAIL;
	}
	rc = open_store(db, false, &st);
	if (rc) {
		free(tables);
		json_decref(out);
		return rc;
	}
	e = store_begin(st, &err);
	/* --ondemand (the old spelling): the FILEs are on-demand tables,
	 * checked together with the --ondemand-prices ones */
	for (int i = optind; ondemand && i < argc; i++)
		tables[ntables++] = argv[i];
	if (e == PX_OK)
		e = import_ondemand_all(st, ntables, tables, out, &err);
	for (int i = optind; i < argc && e == PX_OK && !ondemand; i++)
		e = import_trace(st, argv[i], region, out, &err);
	if (e == PX_OK)
		e = store_commit(st, &err);
	if (e != PX_OK) {
		store_rollback(st);
		log_err("%s", err.msg);
		log_err("nothing was imported");
	} else if (out) {
		json_t *o = json_pack("{s:O}", "files", out);

		if (!o || json_dumpf(o, stdout, JSON_INDENT(2)))
			e = PX_ENOMEM;
		else
			putchar('\n');
		json_decref(o);
	}
	store_close(st);
	free(tables);
	json_decref(out);
	/* store and memory failures are ours; anything else is the input */
	if (e == PX_EDB || e == PX_ENOMEM)
		return CLI_EXIT_FAIL;
	return e == PX_OK ? CLI_EXIT_OK : CLI_EXIT_DATA;
}

/* ---- show ---- */

struct seg {
	int64_t price_uusd;
	int64_t dur_s;
};

/* A price holds until the market's next record, but at most this long:
 * beyond it the data is missing (two traces years apart, a collector
 * that stopped), a gap excluded from the time-weighted statistics and
 * reported.  A week is longer than any silence within the shipped
 * traces' collection windows, and far shorter than the months between
 * them. */
#define PRICE_HOLD_MAX_S (7 * 86400)

struct stats_ctx {
	struct seg *v;
	size_t n, cap;
	int64_t prev_t, prev_p;
	bool have_prev;
	int64_t gap_s, gaps;    /* time beyond PRICE_HOLD_MAX_S, and count */
	struct px_error *err;
};

static enum px_err stats_price(int64_t t_s, int64_t price_uusd, void *arg)
{
	struct stats_ctx *c = arg;

	if (c->have_prev) {
		if (c->n == c->cap) {
			size_t cap = c->cap ? 2 * c->cap : 1024;
			struct seg *v = px_reallocarray(c->v, cap,
							sizeof(*v));
			if (!v)
				return px_errorf(c->err, PX_ENOMEM,
						 "out of memory");
			c->v = v;
			c->cap = cap;
		}
		int64_t dur = t_s - c->prev_t;

		if (dur > PRICE_HOLD_MAX_S) {
			c->gap_s += dur - PRICE_HOLD_MAX_S;
			c->gaps++;
			dur = PRICE_HOLD_MAX_S;
		}
		c->v[c->n++] = (struct seg){c->prev_p, dur};
	}
	c->prev_t = t_s;
	c->prev_p = price_uusd;
	c->have_prev = true;
	return PX_OK;
}

static int seg_cmp(const void *a, const void *b)
{
	const struct seg *x = a, *y = b;

	return (x->price_uusd > y->price_uusd) -
	       (x->price_uusd < y->price_uusd);
}

struct market_row {
	struct store_market m;
	int64_t count, first_s, last_s;
	bool have_at;
	int64_t at_price, at_since;
	int64_t min, median, max; /* time-weighted over [first, last] */
	bool have_od;
	int64_t od;
	double above_od; /* share of [first, last] with price > od */
	int64_t gap_s, gaps; /* data missing: excluded from the above */
};

/* Time-weighted statistics: each record's price holds until the next
 * record of the market; the last record has no known duration and only
 * counts when it is the sole record. */
static enum px_err row_stats(struct store *st, struct market_row *r,
			     int64_t at_s, struct px_error *err)
{
	struct stats_ctx c = {.err = err};
	int64_t total = 0, half, acc = 0, above = 0;
	enum px_err e;

	e = store_price_range(st, r->m.id, &r->first_s, &r->last_s, &r->count,
			      err);
	if (e != PX_OK)
		return e;
	e = store_price_at(st, r->m.id, at_s, &r->at_price, &r->at_since,
			   err);
	if (e != PX_OK && e != PX_ENOENT)
		return e;
	r->have_at = e == PX_OK;
	e = store_ondemand_get(st, r->m.region, r->m.type, &r->od, err);
	if (e != PX_OK && e != PX_ENOENT)
		return e;
	r->have_od = e == PX_OK;
	e = store_prices_each(st, r->m.id, INT64_MIN, INT64_MAX, stats_price,
			      &c, err);
	if (e != PX_OK)
		goto out;
	/* the last record holds until the end of the range; a lone record
	 * gets a nominal second so that it still has statistics */
	if (c.have_prev && c.n == 0)
		e = stats_price(c.prev_t + 1, c.prev_p, &c);
	if (e != PX_OK)
		goto out;
	if (c.n == 0) {
		e = px_errorf(err, PX_ENOENT, "market %lld has no prices",
			      (long long)r->m.id);
		goto out;
	}
	qsort(c.v, c.n, sizeof(*c.v), seg_cmp);
	for (size_t i = 0; i < c.n; i++) {
		total += c.v[i].dur_s;
		if (r->have_od && c.v[i].price_uusd > r->od)
			above += c.v[i].dur_s;
	}
	r->min = c.v[0].price_uusd;
	r->max = c.v[c.n - 1].price_uusd;
	/* the last record has no duration but is a price that was seen */
	if (c.prev_p < r->min)
		r->min = c.prev_p;
	if (c.prev_p > r->max)
		r->max = c.prev_p;
	r->median = c.v[0].price_uusd;
	half = (total + 1) / 2;
	for (size_t i = 0; i < c.n; i++) {
		acc += c.v[i].dur_s;
		if (acc >= half) {
			r->median = c.v[i].price_uusd;
			break;
		}
	}
	r->above_od = total > 0 ? (double)above / (double)total : 0.0;
	r->gap_s = c.gap_s;
	r->gaps = c.gaps;
out:
	free(c.v);
	return e;
}

struct collect_ctx {
	struct market_row *v;
	size_t n, cap;
};

static enum px_err collect_market(const struct store_market *m, void *arg)
{
	struct collect_ctx *c = arg;

	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct market_row *v = px_reallocarray(c->v, cap, sizeof(*v));
		if (!v)
			return PX_ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	memset(&c->v[c->n], 0, sizeof(c->v[0]));
	c->v[c->n++].m = *m;
	return PX_OK;
}

/* A duration, rounded to its unit: "42 s", "17 min", "5 h", "12 d",
 * "10 y". */
static char *format_age(int64_t s, char *buf, size_t len)
{
	if (s < 0)
		s = 0;
	if (s < 120)
		snprintf(buf, len, "%lld s", (long long)s);
	else if (s < 120 * 60)
		snprintf(buf, len, "%lld min", (long long)((s + 30) / 60));
	else if (s < 48 * 3600)
		snprintf(buf, len, "%lld h", (long long)((s + 1800) / 3600));
	else if (s < 730 * 86400)
		snprintf(buf, len, "%lld d", (long long)((s + 43200) / 86400));
	else /* Julian years, rounded */
		snprintf(buf, len, "%lld y",
			 (long long)((s + 15778800) / 31557600));
	return buf;
}

static const char *gap_note(const struct market_row *r, char *buf,
			    size_t len)
{
	char g[32];

	snprintf(buf, len, " (%lld gap%s, %s without data, excluded)",
		 (long long)r->gaps, r->gaps == 1 ? "" : "s",
		 format_age(r->gap_s, g, sizeof(g)));
	return buf;
}

static void print_table(const struct market_row *v, size_t n, int64_t at_s)
{
	char gn[96];
	char t[32], a[32], b[32], p[5][32];
	char q[3][PX_TERM_SAFE_LEN(STORE_NAME_MAX)];

	printf("price at %s; min/median/max and share above on-demand are "
	       "time-weighted over each market's range (a price holds until "
	       "the next record, at most %d days; longer is a gap)\n\n",
	       px_format_time(at_s, t, sizeof(t)), PRICE_HOLD_MAX_S / 86400);
	printf("%-10s %-12s %-12s %10s %-32s %10s %10s %10s %10s %7s %8s  "
	       "%s\n", "REGION", "ZONE", "TYPE", "PRICE", "SINCE (AGE)", "MIN",
	       "MEDIAN", "MAX", "ONDEMAND", ">OD", "RECORDS", "RANGE");
	for (size_t i = 0; i < n; i++) {
		const struct market_row *r = &v[i];
		char above[16], since[64], age[32];

		if (r->have_od)
			snprintf(above, sizeof(above), "%.1f%%",
				 100.0 * r->above_od);
		else
			snprintf(above, sizeof(above), "-");
		if (r->have_at)
			snprintf(since, sizeof(since), "%s (%s ago)",
				 px_format_time(r->at_since, a, sizeof(a)),
				 format_age(at_s - r->at_since, age,
					    sizeof(age)));
		else
			snprintf(since, sizeof(since), "-");
		printf("%-10s %-12s %-12s %10s %-32s %10s %10s %10s %10s %7s "
		       "%8lld  %s..%s%s\n",
		       px_term_safe(r->m.region, q[0], sizeof(q[0])),
		       px_term_safe(r->m.zone, q[1], sizeof(q[1])),
		       px_term_safe(r->m.type, q[2], sizeof(q[2])),
		       r->have_at ? px_format_usd(r->at_price, p[0], 32) : "-",
		       since,
		       px_format_usd(r->min, p[1], 32),
		       px_format_usd(r->median, p[2], 32),
		       px_format_usd(r->max, p[3], 32),
		       r->have_od ? px_format_usd(r->od, p[4], 32) : "-",
		       above, (long long)r->count,
		       px_format_time(r->first_s, a, sizeof(a)),
		       px_format_time(r->last_s, b, sizeof(b)),
		       r->gaps ? gap_note(r, gn, sizeof(gn)) : "");
	}
}

static json_t *usd_json(int64_t uusd)
{
	return json_real((double)uusd / 1e6);
}

static int print_json(const struct market_row *v, size_t n, int64_t at_s)
{
	json_t *arr = json_array();
	char t[32];
	int rc = CLI_EXIT_OK;

	if (!arr)
		return CLI_EXIT_FAIL;
	for (size_t i = 0; i < n; i++) {
		const struct market_row *r = &v[i];
		char f[32], l[32];
		json_t *o = json_pack(
			"{s:s, s:s, s:s, s:s, s:s, s:I, s:o, s:o, s:o, s:s, "
			"s:s}",
			"region", r->m.region, "zone", r->m.zone, "type",
			r->m.type, "product", r->m.product, "at",
			px_format_time(at_s, t, sizeof(t)), "records",
			(json_int_t)r->count, "min_usd", usd_json(r->min),
			"median_usd", usd_json(r->median), "max_usd",
			usd_json(r->max), "first",
			px_format_time(r->first_s, f, sizeof(f)), "last",
			px_format_time(r->last_s, l, sizeof(l)));

		if (!o) {
			rc = CLI_EXIT_FAIL;
			break;
		}
		json_object_set_new(o, "price_usd", r->have_at ?
				    usd_json(r->at_price) : json_null());
		json_object_set_new(o, "price_since", r->have_at ?
				    json_string(px_format_time(r->at_since, l,
							       sizeof(l))) :
				    json_null());
		/* the time the price in force was set, and its age at "at" */
		json_object_set_new(o, "price_time", r->have_at ?
				    json_string(px_format_time(r->at_since, l,
							       sizeof(l))) :
				    json_null());
		json_object_set_new(o, "price_age_s", r->have_at ?
				    json_integer(at_s - r->at_since) :
				    json_null());
		json_object_set_new(o, "gaps", json_integer(r->gaps));
		json_object_set_new(o, "gap_s", json_integer(r->gap_s));
		json_object_set_new(o, "ondemand_usd", r->have_od ?
				    usd_json(r->od) : json_null());
		json_object_set_new(o, "above_ondemand_share", r->have_od ?
				    json_real(r->above_od) : json_null());
		json_array_append_new(arr, o);
	}
	if (rc == CLI_EXIT_OK &&
	    json_dumpf(arr, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10)))
		rc = CLI_EXIT_FAIL;
	if (rc == CLI_EXIT_OK)
		putchar('\n');
	json_decref(arr);
	return rc;
}

static int market_show(int argc, char **argv)
{
	static const struct option opts[] = {
		{"at", required_argument, NULL, 'a'},
		{"db", required_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},
		{"json", no_argument, NULL, 'j'},
		{"product", required_argument, NULL, 'p'},
		{"region", required_argument, NULL, 'r'},
		{"type", required_argument, NULL, 't'},
		{"types", required_argument, NULL, 't'},
		{"zone", required_argument, NULL, 'z'},
		{"zones", required_argument, NULL, 'z'},
		{0},
	};
	char *types[CLI_LIST_MAX], *zones[CLI_LIST_MAX];
	char *tbuf = NULL, *zbuf = NULL;
	size_t nt = 0, nz = 0;
	const char *type_arg, *zone_arg;
	struct store_market_filter f = {0};
	struct collect_ctx c = {0};
	struct px_error err = {0};
	struct store *st = NULL;
	const char *db = NULL;
	int64_t at_s = px_now_wall_us() / PX_USEC_PER_SEC;
	bool json = cli_g.json;
	enum px_err e = PX_OK;
	int ch, rc;

	optind = 1;
	while ((ch = getopt_long(argc, argv, ":a:d:hjp:r:t:z:", opts, NULL)) !=
	       -1) {
		switch (ch) {
		case 'a':
			if (px_parse_time(optarg, strlen(optarg), &at_s)) {
				log_err("--at: bad time '%s' (want e.g. "
					"2016-03-01T12:00:00Z or @unix-seconds)",
					optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'd': db = optarg; break;
		case 'h': fputs(market_usage, stdout); return CLI_EXIT_OK;
		case 'j': json = true; break;
		case 'p': f.product = optarg; break;
		case 'r': f.region = optarg; break;
		case 't': f.type = optarg; break;
		case 'z': f.zone = optarg; break;
		default: return cli_bad_option("market show", argv, ch);
		}
	}
	if (optind < argc)
		return cli_usage("market show", "unexpected argument '%s'",
				 argv[optind]);
	/* --types/--zones take comma-separated lists: one query per pair */
	type_arg = f.type;
	zone_arg = f.zone;
	rc = cli_split_list("--types", f.type, &tbuf, types, &nt);
	if (rc < 0)
		rc = cli_split_list("--zones", f.zone, &zbuf, zones, &nz);
	if (rc < 0)
		rc = open_store(db, true, &st);
	if (rc) {
		free(tbuf);
		free(zbuf);
		return rc;
	}
	for (size_t i = 0; i < (nt ? nt : 1) && e == PX_OK; i++) {
		f.type = nt ? types[i] : NULL;
		for (size_t j = 0; j < (nz ? nz : 1) && e == PX_OK; j++) {
			f.zone = nz ? zones[j] : NULL;
			e = store_markets_each(st, &f, collect_market, &c,
					       &err);
		}
	}
	f.type = type_arg;
	f.zone = zone_arg;
	for (size_t i = 0; i < c.n && e == PX_OK; i++)
		e = row_stats(st, &c.v[i], at_s, &err);
	if (e != PX_OK) {
		log_err("%s", err.msg[0] ? err.msg : px_strerror(e));
		rc = cli_exit_for(e);
	} else if (c.n == 0) {
		log_err("no market matches%s%s%s%s%s%s (see 'proteusctl market' "
			"for what is stored)",
			f.region ? " region=" : "", f.region ? f.region : "",
			f.zone ? " zone=" : "", f.zone ? f.zone : "",
			f.type ? " type=" : "", f.type ? f.type : "");
		rc = CLI_EXIT_NOTFOUND;
	} else if (json) {
		rc = print_json(c.v, c.n, at_s);
	} else {
		print_table(c.v, c.n, at_s);
	}
	free(c.v);
	free(tbuf);
	free(zbuf);
	store_close(st);
	return rc;
}

int cli_market(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "import"))
		return market_import(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "fetch"))
		return cli_market_fetch(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "show"))
		return market_show(argc - 1, argv + 1);
	return market_show(argc, argv);
}
